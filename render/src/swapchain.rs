//! Presenting to a window: the swapchain, its images and the semaphores that order
//! acquisition, drawing and presentation.

use ash::vk;

use crate::error::{vk_err, RenderError, Result};
use crate::gpu::Gpu;
use crate::renderer::{PresentTarget, FRAMES_IN_FLIGHT};

/// A window's swapchain.
pub struct Swapchain {
    raw: vk::SwapchainKHR,
    images: Vec<vk::Image>,
    pub extent: vk::Extent2D,
    pub format: vk::SurfaceFormatKHR,
    pub present_mode: vk::PresentModeKHR,
    /// Signalled when an acquired image is ready, one per frame in flight.
    acquired: Vec<vk::Semaphore>,
    /// Signalled when drawing into image i is done, one per image (presentation of an image
    /// may still wait on it when the next frame in flight is acquired).
    rendered: Vec<vk::Semaphore>,
}

/// Picks the surface format: 8-bit sRGB (the renderer's colour image is sRGB, and a blit to an
/// sRGB image keeps the colours).
fn choose_format(formats: &[vk::SurfaceFormatKHR]) -> Option<vk::SurfaceFormatKHR> {
    let srgb = [vk::Format::B8G8R8A8_SRGB, vk::Format::R8G8B8A8_SRGB];
    formats
        .iter()
        .find(|f| srgb.contains(&f.format) && f.color_space == vk::ColorSpaceKHR::SRGB_NONLINEAR)
        .copied()
}

impl Swapchain {
    /// Creates a swapchain of `size` (clamped to what the surface allows). With `vsync`, FIFO
    /// presentation; without, the lowest-latency mode the surface offers.
    pub fn new(gpu: &Gpu, size: vk::Extent2D, vsync: bool) -> Result<Swapchain> {
        let mut s = Swapchain {
            raw: vk::SwapchainKHR::null(),
            images: Vec::new(),
            extent: size,
            format: vk::SurfaceFormatKHR::default(),
            present_mode: vk::PresentModeKHR::FIFO,
            acquired: Vec::new(),
            rendered: Vec::new(),
        };
        match s.build(gpu, size, vsync) {
            Ok(()) => Ok(s),
            Err(e) => {
                s.destroy(gpu);
                Err(e)
            }
        }
    }

    fn build(&mut self, gpu: &Gpu, size: vk::Extent2D, vsync: bool) -> Result<()> {
        let swapchain_fn = gpu.swapchain_fn.as_ref().ok_or_else(|| {
            RenderError::Surface("the device was opened without a window; a swapchain needs one".into())
        })?;
        let surface = gpu.surface;
        // SAFETY: the surface and physical device belong to the Gpu's instance.
        let (caps, formats, modes) = unsafe {
            (
                gpu.surface_fn
                    .get_physical_device_surface_capabilities(gpu.physical, surface)
                    .map_err(vk_err("vkGetPhysicalDeviceSurfaceCapabilitiesKHR"))?,
                gpu.surface_fn
                    .get_physical_device_surface_formats(gpu.physical, surface)
                    .map_err(vk_err("vkGetPhysicalDeviceSurfaceFormatsKHR"))?,
                gpu.surface_fn
                    .get_physical_device_surface_present_modes(gpu.physical, surface)
                    .map_err(vk_err("vkGetPhysicalDeviceSurfacePresentModesKHR"))?,
            )
        };
        if !caps.supported_usage_flags.contains(vk::ImageUsageFlags::TRANSFER_DST) {
            return Err(RenderError::Surface(
                "the window's images cannot be written by a blit (TRANSFER_DST)".into(),
            ));
        }
        self.format = choose_format(&formats).ok_or_else(|| {
            RenderError::Surface(format!(
                "the window offers no 8-bit sRGB format; offered: {:?}",
                formats.iter().map(|f| f.format).collect::<Vec<_>>()
            ))
        })?;
        self.present_mode = if vsync {
            vk::PresentModeKHR::FIFO
        } else {
            [vk::PresentModeKHR::MAILBOX, vk::PresentModeKHR::IMMEDIATE]
                .into_iter()
                .find(|m| modes.contains(m))
                .unwrap_or(vk::PresentModeKHR::FIFO)
        };
        self.extent = if caps.current_extent.width != u32::MAX {
            caps.current_extent
        } else {
            vk::Extent2D {
                width: size
                    .width
                    .clamp(caps.min_image_extent.width, caps.max_image_extent.width),
                height: size
                    .height
                    .clamp(caps.min_image_extent.height, caps.max_image_extent.height),
            }
        };
        if self.extent.width == 0 || self.extent.height == 0 {
            // A minimised window: nothing to present until it is restored.
            return Err(RenderError::SurfaceOutOfDate);
        }
        let mut count = caps.min_image_count + 1;
        if caps.max_image_count > 0 {
            count = count.min(caps.max_image_count);
        }
        let info = vk::SwapchainCreateInfoKHR::default()
            .surface(surface)
            .min_image_count(count)
            .image_format(self.format.format)
            .image_color_space(self.format.color_space)
            .image_extent(self.extent)
            .image_array_layers(1)
            .image_usage(vk::ImageUsageFlags::TRANSFER_DST)
            .image_sharing_mode(vk::SharingMode::EXCLUSIVE)
            .pre_transform(caps.current_transform)
            .composite_alpha(vk::CompositeAlphaFlagsKHR::OPAQUE)
            .present_mode(self.present_mode)
            .clipped(true)
            .old_swapchain(self.raw);
        // SAFETY: the create info is valid for this surface (checked above); the old swapchain,
        // if any, is retired by this call and destroyed by `recreate` after the device is idle.
        self.raw = unsafe { swapchain_fn.create_swapchain(&info, None) }.map_err(vk_err("vkCreateSwapchainKHR"))?;
        // SAFETY: the swapchain was just created.
        self.images =
            unsafe { swapchain_fn.get_swapchain_images(self.raw) }.map_err(vk_err("vkGetSwapchainImagesKHR"))?;
        let semaphore = || {
            // SAFETY: valid device.
            unsafe { gpu.device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) }
                .map_err(vk_err("vkCreateSemaphore"))
        };
        while self.acquired.len() < FRAMES_IN_FLIGHT {
            self.acquired.push(semaphore()?);
        }
        while self.rendered.len() < self.images.len() {
            self.rendered.push(semaphore()?);
        }
        Ok(())
    }

    /// Rebuilds the swapchain for a new window size (after a resize or an out-of-date error).
    pub fn recreate(&mut self, gpu: &Gpu, size: vk::Extent2D, vsync: bool) -> Result<()> {
        gpu.wait_idle()?;
        let old = self.raw;
        // Semaphores may hold a pending signal from a failed acquire; start afresh.
        self.destroy_semaphores(gpu);
        let built = self.build(gpu, size, vsync);
        if let Some(f) = &gpu.swapchain_fn {
            // SAFETY: the device is idle, so the old swapchain's images are not in use.
            unsafe { f.destroy_swapchain(old, None) };
        }
        if built.is_err() {
            self.raw = vk::SwapchainKHR::null();
        }
        built
    }

    /// Acquires the next image for the renderer's frame slot `slot`
    /// ([`Renderer::begin_frame`](crate::Renderer::begin_frame) returns it, after waiting for
    /// the slot's previous frame). `Ok(None)` when the swapchain is out of date and must be
    /// recreated.
    pub fn acquire(&mut self, gpu: &Gpu, slot: usize) -> Result<Option<(u32, PresentTarget)>> {
        let f = gpu.swapchain_fn.as_ref().expect("a swapchain exists only for a window");
        let acquired = self.acquired[slot % FRAMES_IN_FLIGHT];
        // SAFETY: the semaphore has no pending operation: its last signal was waited on by the
        // slot's previous frame, which `begin_frame` waited for.
        let result = unsafe { f.acquire_next_image(self.raw, u64::MAX, acquired, vk::Fence::null()) };
        match result {
            Ok((index, _suboptimal)) => Ok(Some((
                index,
                PresentTarget {
                    image: self.images[index as usize],
                    extent: self.extent,
                    acquired,
                    rendered: self.rendered[index as usize],
                },
            ))),
            Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => Ok(None),
            Err(e) => Err(RenderError::from_vk("vkAcquireNextImageKHR", e)),
        }
    }

    /// Presents image `index` once its drawing is done. `Ok(false)` when the swapchain is out
    /// of date or suboptimal and should be recreated.
    pub fn present(&self, gpu: &Gpu, index: u32) -> Result<bool> {
        let waits = [self.rendered[index as usize]];
        let swapchains = [self.raw];
        let indices = [index];
        let info = vk::PresentInfoKHR::default()
            .wait_semaphores(&waits)
            .swapchains(&swapchains)
            .image_indices(&indices);
        match gpu.present(&info) {
            Ok(false) => Ok(true),
            Ok(true) | Err(RenderError::SurfaceOutOfDate) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn destroy_semaphores(&mut self, gpu: &Gpu) {
        // SAFETY: called with the device idle; the semaphores are not in use.
        unsafe {
            for s in self.acquired.drain(..).chain(self.rendered.drain(..)) {
                gpu.device.destroy_semaphore(s, None);
            }
        }
    }

    /// Destroys the swapchain (the device must be idle or about to be).
    pub fn destroy(&mut self, gpu: &Gpu) {
        let _ = gpu.wait_idle();
        self.destroy_semaphores(gpu);
        if let Some(f) = &gpu.swapchain_fn {
            // SAFETY: the device is idle; null handles are ignored.
            unsafe { f.destroy_swapchain(std::mem::take(&mut self.raw), None) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_choice_wants_8_bit_srgb() {
        let f = |format| vk::SurfaceFormatKHR {
            format,
            color_space: vk::ColorSpaceKHR::SRGB_NONLINEAR,
        };
        assert_eq!(
            choose_format(&[f(vk::Format::B8G8R8A8_UNORM), f(vk::Format::B8G8R8A8_SRGB)]),
            Some(f(vk::Format::B8G8R8A8_SRGB))
        );
        assert_eq!(choose_format(&[f(vk::Format::A2B10G10R10_UNORM_PACK32)]), None);
    }
}
