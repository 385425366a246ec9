//! The pose buffers of [`GpuOliapuram`](super::GpuOliapuram): the one the kernels write now
//! ([`PoseRing::current`]) and those the renderer's frames still read.
//!
//! A frame that draws the pose on the device holds the current buffer
//! ([`DevicePose`](crate::DevicePose), through its `Arc`) until the frame is done. The kernels
//! must not overwrite a pose a frame has not drawn yet (the frame would show a pose half of
//! one step and half of the next), so before a step writes the pose,
//! [`PoseRing::make_writable`] makes current a buffer no frame holds: the current one when no
//! frame took it, else one whose frames are done, else a new one. The buffers in use are
//! bounded by the frames alive (a renderer's frames in flight and the render command cache's
//! frames) plus one.
//!
//! Invariant: only the current buffer is written or read by the model's own submissions; a
//! buffer becomes current only while no submission of the model is pending (the driver waits
//! for its last submission before recording the next), so the others are idle on the
//! model's queue.

use std::sync::Arc;

use ash::vk;
use gpu_allocator::MemoryLocation;

use crate::error::Result;
use crate::gpu::Gpu;
use crate::shared_buffer::SharedBuffer;

/// The pose buffers. See the module docs.
pub(super) struct PoseRing {
    current: Arc<SharedBuffer>,
    /// Buffers that were current before, some still held by frames.
    others: Vec<Arc<SharedBuffer>>,
    bytes: u64,
}

impl PoseRing {
    /// One buffer of `bytes` bytes, shared between the graphics and compute families.
    pub fn new(gpu: &Arc<Gpu>, bytes: u64) -> Result<PoseRing> {
        Ok(PoseRing {
            current: PoseRing::make(gpu, bytes)?,
            others: Vec::new(),
            bytes,
        })
    }

    fn make(gpu: &Arc<Gpu>, bytes: u64) -> Result<Arc<SharedBuffer>> {
        let families = [gpu.queues.graphics, gpu.queues.compute_family()];
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::TRANSFER_SRC;
        let b = gpu.create_buffer_shared("oliapuram pose", bytes, usage, MemoryLocation::GpuOnly, &families)?;
        Ok(SharedBuffer::new(gpu, b))
    }

    /// The buffer the kernels write and read-backs copy.
    pub fn current(&self) -> &Arc<SharedBuffer> {
        &self.current
    }

    /// Buffers made so far (the current one included).
    pub fn len(&self) -> usize {
        1 + self.others.len()
    }

    /// Makes the current buffer one no frame holds, for the next write of the pose (see the
    /// module docs); true when the current buffer changed (the descriptor sets must be pointed
    /// at it). No submission of the model may be pending.
    pub fn make_writable(&mut self, gpu: &Arc<Gpu>) -> Result<bool> {
        if !SharedBuffer::is_shared(&self.current) {
            return Ok(false);
        }
        let next = match self.others.iter().position(|b| !SharedBuffer::is_shared(b)) {
            Some(k) => self.others.swap_remove(k),
            None => PoseRing::make(gpu, self.bytes)?,
        };
        let held = std::mem::replace(&mut self.current, next);
        self.others.push(held);
        Ok(true)
    }
}
