//! [`SharedBuffer`]: a device buffer held through `Arc` by the one that writes it and by the
//! ones that read it on the device (the GPU dynamics' pose, read by the renderer's frames),
//! destroyed when the last holder lets it go.
//!
//! Invariant: every holder keeps its `Arc` until no GPU work it submitted or recorded uses the
//! buffer any more (a renderer's frame slot until its fence signals; the dynamics until their
//! timeline has passed their last submission), so the last drop destroys a buffer nothing
//! uses. Whether anyone besides the writer holds it ([`SharedBuffer::is_shared`]) is how the
//! writer knows it may overwrite it.

use std::sync::Arc;

use ash::vk;

use crate::gpu::{Buffer, Gpu};

/// A device buffer shared through `Arc`. See the module docs.
pub struct SharedBuffer {
    gpu: Arc<Gpu>,
    buffer: Option<Buffer>,
}

impl SharedBuffer {
    /// Takes `buffer` (made on `gpu`) into shared ownership.
    pub fn new(gpu: &Arc<Gpu>, buffer: Buffer) -> Arc<SharedBuffer> {
        Arc::new(SharedBuffer {
            gpu: gpu.clone(),
            buffer: Some(buffer),
        })
    }

    fn buffer(&self) -> &Buffer {
        self.buffer.as_ref().expect("the buffer lives until the drop")
    }

    /// The Vulkan handle.
    pub fn raw(&self) -> vk::Buffer {
        self.buffer().raw
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.buffer().size
    }

    /// The device the buffer lives on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Whether some holder besides the caller's `Arc` holds it (a reader that may still use
    /// it on the device).
    pub fn is_shared(this: &Arc<SharedBuffer>) -> bool {
        Arc::strong_count(this) > 1
    }
}

impl std::fmt::Debug for SharedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedBuffer({:?}, {} bytes)", self.raw(), self.size())
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            // The last holder is gone: by the module's invariant, no GPU work uses it.
            self.gpu.destroy_buffer(b);
        }
    }
}
