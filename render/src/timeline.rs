//! [`Timeline`]: a timeline semaphore held through `Arc` by the queue work it orders and by
//! the submissions that wait for it on another queue (the renderer's frames waiting for a step
//! of the GPU dynamics), destroyed when the last holder lets it go.
//!
//! Invariant: every holder keeps its `Arc` until no submission of its own waits for or
//! signals the semaphore any more (a renderer's frame slot until its fence signals; the
//! dynamics until they have waited for their last value), so the last drop destroys a
//! semaphore nothing uses.

use std::sync::Arc;

use ash::vk;

use crate::error::{vk_err, Result};
use crate::gpu::Gpu;

/// A timeline semaphore shared through `Arc`. See the module docs.
pub struct Timeline {
    gpu: Arc<Gpu>,
    raw: vk::Semaphore,
}

impl Timeline {
    /// A timeline semaphore at value 0 on `gpu`.
    pub fn new(gpu: &Arc<Gpu>) -> Result<Arc<Timeline>> {
        let mut timeline = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut timeline);
        // SAFETY: valid device and create info; timeline semaphores are enabled on every Gpu.
        let raw = unsafe { gpu.device.create_semaphore(&info, None) }.map_err(vk_err("vkCreateSemaphore"))?;
        Ok(Arc::new(Timeline { gpu: gpu.clone(), raw }))
    }

    /// The Vulkan handle.
    pub fn raw(&self) -> vk::Semaphore {
        self.raw
    }

    /// The device the semaphore belongs to.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Blocks until the semaphore reaches `value` (at once for 0).
    pub fn wait(&self, value: u64) -> Result<()> {
        if value == 0 {
            return Ok(());
        }
        let semaphores = [self.raw];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
        // SAFETY: a timeline semaphore of this device; the caller submitted `value` to be
        // signalled.
        unsafe { self.gpu.device.wait_semaphores(&info, u64::MAX) }.map_err(vk_err("vkWaitSemaphores"))
    }
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Timeline({:?})", self.raw)
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        // SAFETY: the last holder is gone: by the module's invariant, no pending submission
        // waits for or signals the semaphore.
        unsafe { self.gpu.device.destroy_semaphore(self.raw, None) };
    }
}
