//! [`DevicePose`]: a forest's pose that lives in a device buffer (the GPU dynamics' output),
//! handed to the renderer in a [`RenderFrame`](crate::frame::RenderFrame) instead of a pose on
//! the CPU, so that frames are drawn without reading the pose back or uploading it.
//!
//! The buffer holds vec4s: segment bases `[0, n)` (w unused) and orientations `[n, 2n)`
//! (quaternions xyzw) in the forest's segment order, then leaf positions `[2n, 2n + m)` and
//! orientations `[2n + m, 2n + 2m)` in the forest's leaf order: the fields of
//! `sylva_sim::dynamics::Pose`, every leaf with its own orientation.
//!
//! Invariants: the pose is complete once the [`Timeline`] reaches `value`, and the writer does
//! not write this buffer again while a `DevicePose` holding it exists (it writes a buffer no
//! reader holds, [`SharedBuffer::is_shared`]); a reader on the device waits for `value`, and
//! keeps the `DevicePose` (so the buffer and the semaphore) until its work is done.

use std::sync::Arc;

use crate::error::{RenderError, Result};
use crate::gpu::Gpu;
use crate::shared_buffer::SharedBuffer;
use crate::timeline::Timeline;

/// Bytes of one vec4 of the pose.
const VEC4: u64 = 16;

/// A pose on the device. See the module docs.
#[derive(Clone, Debug)]
pub struct DevicePose {
    pub buffer: Arc<SharedBuffer>,
    /// The timeline the writer signals, and the value at which this pose is complete.
    pub timeline: Arc<Timeline>,
    pub value: u64,
    /// Segments n and leaves m of the forest.
    pub segments: u32,
    pub leaves: u32,
}

impl DevicePose {
    /// Bytes of a pose of `segments` segments and `leaves` leaves.
    pub fn bytes(segments: u32, leaves: u32) -> u64 {
        2 * (segments as u64 + leaves as u64) * VEC4
    }

    /// Refuses a pose a reader on `gpu` cannot use: one on another device, or one whose buffer
    /// is smaller than its counts say. (That the counts are the forest's is the fill's check,
    /// [`RenderFrame::fill_device_with_jobs`](crate::frame::RenderFrame::fill_device_with_jobs).)
    pub fn check(&self, gpu: &Arc<Gpu>) -> Result<()> {
        if !Arc::ptr_eq(self.buffer.gpu(), gpu) || !Arc::ptr_eq(self.timeline.gpu(), gpu) {
            return Err(RenderError::Invalid {
                what: "pose on the device",
                value: format!("a pose on {}", self.buffer.gpu().name()),
                allowed: format!("a pose on the device that draws it ({})", gpu.name()),
            });
        }
        let need = DevicePose::bytes(self.segments, self.leaves);
        if self.buffer.size() < need {
            return Err(RenderError::Invalid {
                what: "pose on the device",
                value: format!(
                    "{} segments and {} leaves in {} bytes",
                    self.segments,
                    self.leaves,
                    self.buffer.size()
                ),
                allowed: format!("at least {need} bytes for them"),
            });
        }
        Ok(())
    }
}
