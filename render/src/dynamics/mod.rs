//! Oliapuram & Kumar's forest (paper 004 §3–4) stepped on the GPU: [`GpuOliapuram`], the same
//! model as `sylva_sim::dynamics::OliapuramModel` as compute shaders
//! (`shaders/glsl/oliapuram_*.comp`), behind the same interface
//! (`sylva_sim::dynamics::DynamicsModel`).
//!
//! | file          | holds |
//! |---------------|-------|
//! | `buffers.rs`  | the device buffers and how the CPU model's arrays are packed into them |
//! | `pose_ring.rs`| the pose buffers: the one written now, and those frames still draw |
//! | `pipelines.rs`| the set layout, the pipelines (the step's and the breakage rule's), the two descriptor sets |
//! | `driver.rs`   | recording, submission on the compute queue, timeline, read-back |
//! | `model.rs`    | [`GpuOliapuram`]: the wind, the clock, the trait |
//!
//! Invariants: the model's static data (levels, constants) are the CPU model's, exported once
//! ([`OliapuramModel::export`](sylva_sim::dynamics::OliapuramModel::export)) and uploaded; the
//! kernels do the CPU kernels' arithmetic in f32 in the same order (a GPU may fuse or reorder
//! multiply-adds, so the two agree to rounding, not bit for bit); a step is one submission on
//! the compute queue, ordered after the previous one by a timeline semaphore. The renderer draws
//! the pose where the kernels leave it ([`GpuOliapuram::device_pose`]), waiting for the step's
//! timeline value; nothing is read back unless the CPU asks for the pose or the state, or a
//! joint broke (the model then reads the state and pose once, to break the piece off on the CPU
//! and spawn it as debris, see `model.rs`). The breakage rule runs on the device after the pose
//! (`oliapuram_loads.comp`, `oliapuram_subtree*.comp`), the broken pieces are drawn from the
//! same pose buffer (`oliapuram_patch.comp`).

mod buffers;
mod driver;
mod model;
mod pipelines;
mod pose_ring;

pub use model::{GpuOliapuram, GpuRefused, WindSource};
