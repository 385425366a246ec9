//! The renderer's errors: each names what went wrong and what would make it work.

use ash::vk;

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No Vulkan loader or driver on this machine.
    #[error(
        "no Vulkan: {0}. Install a Vulkan loader and driver (on Debian: apt-get install libvulkan1 \
         mesa-vulkan-drivers, which provides the lavapipe software device)"
    )]
    NoVulkan(String),
    /// Vulkan works but no device can run Sylva.
    #[error("no suitable Vulkan device: {0}")]
    NoDevice(String),
    /// The Khronos validation layer was asked for and is not installed.
    #[error(
        "the Khronos validation layer (VK_LAYER_KHRONOS_validation) is not installed; on Debian: \
         apt-get install vulkan-validationlayers"
    )]
    NoValidationLayer,
    /// Device or host memory ran out.
    #[error("out of {kind} memory while {during}")]
    OutOfMemory { kind: &'static str, during: String },
    /// The device was lost (driver crash, GPU reset or hang).
    #[error("the Vulkan device was lost while {0}; the frame could not be finished")]
    DeviceLost(String),
    /// The window surface changed (resize) and the swapchain must be rebuilt.
    #[error("the window surface is out of date (it was resized); the swapchain must be recreated")]
    SurfaceOutOfDate,
    /// The window system refused a surface.
    #[error("the window surface is unusable: {0}")]
    Surface(String),
    /// A parameter outside what the renderer allows.
    #[error("{what} is {value}; allowed: {allowed}")]
    Invalid {
        what: &'static str,
        value: String,
        allowed: String,
    },
    /// The memory allocator refused a request for a reason other than running out.
    #[error("memory allocation failed while {during}: {message}")]
    Allocation { during: String, message: String },
    /// A simulation setting or forest the model refused.
    #[error(transparent)]
    Simulation(#[from] sylva_sim::error::SimError),
    /// Any other Vulkan failure, with the call that failed.
    #[error("Vulkan call {call} failed: {result}")]
    Vulkan { call: &'static str, result: vk::Result },
}

pub type Result<T, E = RenderError> = std::result::Result<T, E>;

impl RenderError {
    /// Maps a failed Vulkan call to the matching error.
    pub fn from_vk(call: &'static str, result: vk::Result) -> RenderError {
        match result {
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => RenderError::OutOfMemory {
                kind: "device",
                during: call.to_owned(),
            },
            vk::Result::ERROR_OUT_OF_HOST_MEMORY => RenderError::OutOfMemory {
                kind: "host",
                during: call.to_owned(),
            },
            vk::Result::ERROR_DEVICE_LOST => RenderError::DeviceLost(call.to_owned()),
            vk::Result::ERROR_OUT_OF_DATE_KHR | vk::Result::SUBOPTIMAL_KHR => RenderError::SurfaceOutOfDate,
            vk::Result::ERROR_SURFACE_LOST_KHR => RenderError::Surface(format!("{call}: the surface was lost")),
            result => RenderError::Vulkan { call, result },
        }
    }

    /// Maps a gpu-allocator failure.
    pub fn from_alloc(during: &str, e: gpu_allocator::AllocationError) -> RenderError {
        match e {
            gpu_allocator::AllocationError::OutOfMemory => RenderError::OutOfMemory {
                kind: "device",
                during: during.to_owned(),
            },
            other => RenderError::Allocation {
                during: during.to_owned(),
                message: other.to_string(),
            },
        }
    }
}

/// `result.map_err(vk_err("vkCall"))`.
pub(crate) fn vk_err(call: &'static str) -> impl Fn(vk::Result) -> RenderError {
    move |r| RenderError::from_vk(call, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem_and_the_remedy() {
        let e = RenderError::from_vk("vkAllocateMemory", vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        assert_eq!(e.to_string(), "out of device memory while vkAllocateMemory");
        assert!(matches!(
            RenderError::from_vk("vkQueueSubmit", vk::Result::ERROR_DEVICE_LOST),
            RenderError::DeviceLost(_)
        ));
        assert!(matches!(
            RenderError::from_vk("vkAcquireNextImageKHR", vk::Result::ERROR_OUT_OF_DATE_KHR),
            RenderError::SurfaceOutOfDate
        ));
        assert!(RenderError::NoVulkan("libvulkan.so.1 not found".into())
            .to_string()
            .contains("mesa-vulkan-drivers"));
    }
}
