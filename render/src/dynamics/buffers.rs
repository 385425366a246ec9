//! The device buffers of [`GpuOliapuram`](super::GpuOliapuram): the model's static data packed
//! as the kernels read it (`OliapuramSeg`, `OliapuramLeaf` in `sylva_shaders`), the state in two
//! copies (the dynamics phase reads one and writes the other), the level-ordered pose, the
//! renderer's pose (several buffers, `pose_ring.rs`), and the host-visible buffers the CPU writes (wind samples) or reads (sample
//! points, status, the read-back copy), and those of the breakage rule: each body's load, each
//! joint's limit and subtree sums, the joints found over their limits (host-visible) and the
//! broken pieces' pose (host-visible).
//!
//! Invariants: every buffer holds at least one element (a forest may have no leaves); the
//! layouts are those listed in `shaders/glsl/oliapuram_common.glsl`; device-local buffers are
//! shared between the graphics and compute families when they differ.

use ash::vk;
use glam::{Quat, Vec3};
use gpu_allocator::MemoryLocation;
use sylva_shaders::{OliapuramLeaf, OliapuramPatch, OliapuramSeg};
use sylva_sim::dynamics::oliapuram::device::BreakageConstants;
use sylva_sim::dynamics::oliapuram::OliapuramExport;

use super::pose_ring::PoseRing;
use crate::error::{RenderError, Result};
use crate::gpu::{Buffer, Gpu};

/// Bytes of one vec4.
const VEC4: u64 = 16;
/// Bytes of one vec2.
const VEC2: u64 = 8;

/// Every buffer the kernels bind, and the read-back copy.
pub(super) struct DeviceBuffers {
    pub segs: Buffer,
    pub leaves: Buffer,
    /// (θ', ω) of every segment, two copies.
    pub seg_state: [Buffer; 2],
    /// (ψ, dψ/dt) of every leaf, two copies.
    pub leaf_state: [Buffer; 2],
    /// Orientation and base in level order.
    pub level: Buffer,
    /// The renderer's pose (forest orders): the buffer written now, and those frames still read.
    pub poses: PoseRing,
    /// Host-visible: the wind sampled on the CPU.
    pub samples: Buffer,
    /// Host-visible: where the CPU samples the wind.
    pub points: Buffer,
    /// Bound in place of the GPU wind's velocities when the wind is not on the GPU.
    pub no_fluid: Buffer,
    /// Host-visible: the kernels' status word.
    pub status: Buffer,
    /// Host-visible: the pose and the state, copied back on demand.
    pub readback: Buffer,
    /// Every segment's and leaf's load this step (wind force and weight).
    pub loads: Buffer,
    /// The breakage constants (`pack_breakage`).
    pub brk: Buffer,
    /// Every segment's subtree sums and bending moment.
    pub sums: Buffer,
    /// Host-visible: the count of joints over their limits, then their level indices.
    pub over: Buffer,
    /// Host-visible: the broken pieces' pose (`OliapuramPatch` entries), grown on demand.
    pub patch: Buffer,
    /// Entries `patch` holds.
    pub patch_capacity: usize,
}

/// Byte sizes of the per-body buffers for `n` segments and `m` leaves.
pub(super) struct Sizes {
    pub n: u64,
    pub m: u64,
}

impl Sizes {
    pub fn seg_state(&self) -> u64 {
        2 * self.n * VEC4
    }
    pub fn leaf_state(&self) -> u64 {
        self.m.max(1) * VEC2
    }
    pub fn level(&self) -> u64 {
        2 * self.n * VEC4
    }
    pub fn pose(&self) -> u64 {
        (2 * self.n + 2 * self.m) * VEC4
    }
    pub fn samples(&self) -> u64 {
        (self.n + self.m) * VEC4
    }
    /// The read-back copy: the pose, then the segments' state, then the leaves'.
    pub fn readback(&self) -> u64 {
        self.pose() + self.seg_state() + self.leaf_state()
    }
}

/// Packs the breakage constants as `glsl/oliapuram_subtree.comp` reads them: per segment (limit,
/// wood weight, inertia, its root's level index as float bits), then per leaf (I/(L/2), blade
/// weight, 0, 0). An infinite limit (a broken piece) is packed as the largest float, which no
/// finite moment exceeds.
pub(super) fn pack_breakage(b: &BreakageConstants) -> Vec<[f32; 4]> {
    let mut out: Vec<[f32; 4]> = (0..b.limit.len())
        .map(|v| {
            [
                b.limit[v].min(f32::MAX),
                b.weight[v],
                b.inertia[v],
                f32::from_bits(b.root[v]),
            ]
        })
        .collect();
    out.extend(b.leaf_force.iter().zip(&b.leaf_weight).map(|(&f, &w)| [f, w, 0.0, 0.0]));
    out
}

/// Packs the segments' static data as the kernels read it. Every root (a segment without a
/// parent, all at level 0) must have its base in `root_base`; an export that breaks this is
/// refused (the kernels would place that tree at the origin).
pub(super) fn pack_segments(e: &OliapuramExport) -> Result<Vec<OliapuramSeg>> {
    let q = |q: Quat| q.to_array();
    (0..e.order.len())
        .map(|v| {
            let s = &e.segments[v];
            let root = if e.parent[v] == sylva_sim::forest::NO_PARENT {
                *e.root_base.get(v).ok_or_else(|| RenderError::Invalid {
                    what: "export of the GPU dynamics",
                    value: format!("root at level index {v} with {} root bases", e.root_base.len()),
                    allowed: "every root at level 0, with its base in root_base".to_string(),
                })?
            } else {
                Vec3::ZERO
            };
            Ok(OliapuramSeg {
                a: s.weight_rest.extend(s.centroid).to_array(),
                b: [s.wind_gain, s.weight_gain, s.damping_gain, s.w2],
                c: [s.den, s.propagation, e.length[v], 0.0],
                rest: q(e.rest[v]),
                root: root.extend(0.0).to_array(),
                topo: [e.parent[v], e.child_start[v], e.child_start[v + 1], e.order[v]],
                leaves: [e.leaf_start[v], e.leaf_start[v + 1], 0, 0],
            })
        })
        .collect()
}

/// Packs the leaves' static data as the kernels read it (one zeroed record when there are no
/// leaves, which no invocation reads).
pub(super) fn pack_leaves(e: &OliapuramExport) -> Vec<OliapuramLeaf> {
    let mut out = Vec::with_capacity(e.leaves.len().max(1));
    for v in 0..e.order.len() {
        for (k, j) in (e.leaf_start[v]..e.leaf_start[v + 1]).enumerate() {
            let l = &e.leaves[j as usize];
            out.push(OliapuramLeaf {
                a: l.reaction.extend(l.wind_gain).to_array(),
                b: [l.w2, l.den, l.along, l.half_length],
                rest: l.rest.to_array(),
                idx: [v as u32, e.forest_leaf[v] + k as u32, 0, 0],
            });
        }
    }
    if out.is_empty() {
        out.push(OliapuramLeaf::default());
    }
    out
}

/// The state as the kernels read it: segments' (θ', ω) and leaves' (ψ, dψ/dt).
pub(super) fn pack_state(e: &OliapuramExport) -> (Vec<[f32; 4]>, Vec<[f32; 2]>) {
    let mut seg: Vec<[f32; 4]> = e.phi.iter().map(|p| p.extend(0.0).to_array()).collect();
    seg.extend(e.omega.iter().map(|w| w.extend(0.0).to_array()));
    let mut leaf: Vec<[f32; 2]> = e.psi.iter().zip(&e.psi_dot).map(|(&p, &d)| [p, d]).collect();
    if leaf.is_empty() {
        leaf.push([0.0; 2]);
    }
    (seg, leaf)
}

impl DeviceBuffers {
    /// Makes every buffer for `n` segments and `m` leaves (contents undefined). Refuses a
    /// forest whose buffers exceed the device's storage buffer range.
    pub fn new(gpu: &std::sync::Arc<Gpu>, n: usize, m: usize) -> Result<DeviceBuffers> {
        let s = Sizes {
            n: n as u64,
            m: m as u64,
        };
        let limit = gpu.properties.limits.max_storage_buffer_range as u64;
        let biggest = [
            ("segment", n as u64 * size_of::<OliapuramSeg>() as u64),
            ("pose", s.pose()),
        ];
        for (what, bytes) in biggest {
            if bytes > limit {
                return Err(RenderError::Invalid {
                    what: "forest for the GPU dynamics",
                    value: format!("{n} segments and {m} leaves ({what} buffer of {bytes} bytes)"),
                    allowed: format!(
                        "buffers of at most {limit} bytes on {} (maxStorageBufferRange): fewer trees",
                        gpu.name()
                    ),
                });
            }
        }
        let families = [gpu.queues.graphics, gpu.queues.compute_family()];
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::TRANSFER_SRC;
        let device =
            |name: &str, size: u64| gpu.create_buffer_shared(name, size, storage, MemoryLocation::GpuOnly, &families);
        let host = |name: &str, size: u64, location| gpu.create_buffer_shared(name, size, storage, location, &families);
        let m1 = m.max(1) as u64;
        Ok(DeviceBuffers {
            segs: device("oliapuram segments", n as u64 * size_of::<OliapuramSeg>() as u64)?,
            leaves: device("oliapuram leaves", m1 * size_of::<OliapuramLeaf>() as u64)?,
            seg_state: [
                device("oliapuram segment state A", s.seg_state())?,
                device("oliapuram segment state B", s.seg_state())?,
            ],
            leaf_state: [
                device("oliapuram leaf state A", s.leaf_state())?,
                device("oliapuram leaf state B", s.leaf_state())?,
            ],
            level: device("oliapuram level pose", s.level())?,
            poses: PoseRing::new(gpu, s.pose())?,
            samples: host("oliapuram wind samples", s.samples(), MemoryLocation::CpuToGpu)?,
            points: host("oliapuram wind points", s.samples(), MemoryLocation::GpuToCpu)?,
            no_fluid: device("oliapuram no fluid", VEC4)?,
            status: host("oliapuram status", VEC4, MemoryLocation::GpuToCpu)?,
            readback: host("oliapuram readback", s.readback(), MemoryLocation::GpuToCpu)?,
            loads: device("oliapuram loads", (s.n + s.m) * VEC4)?,
            brk: device("oliapuram breakage constants", (s.n + s.m) * VEC4)?,
            sums: device("oliapuram subtree sums", 2 * s.n * VEC4)?,
            over: host("oliapuram joints over", 4 * (s.n + 1).max(4), MemoryLocation::GpuToCpu)?,
            patch: host(
                "oliapuram debris pose",
                size_of::<OliapuramPatch>() as u64,
                MemoryLocation::CpuToGpu,
            )?,
            patch_capacity: 1,
        })
    }

    /// Hands every buffer back to the device's allocator (nothing of the model may use them
    /// any more; a pose buffer a frame still holds goes when the frame lets it go).
    pub fn destroy(self, gpu: &Gpu) {
        drop(self.poses);
        let all = [
            self.segs,
            self.leaves,
            self.level,
            self.samples,
            self.points,
            self.no_fluid,
            self.status,
            self.readback,
            self.loads,
            self.brk,
            self.sums,
            self.over,
            self.patch,
        ];
        for b in all.into_iter().chain(self.seg_state).chain(self.leaf_state) {
            gpu.destroy_buffer(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use sylva_sim::dynamics::{OliapuramModel, OliapuramParams};
    use sylva_sim::scene::TestForest;
    use sylva_sim::Material;

    use super::pack_segments;

    /// An export whose roots lack their bases is refused, not packed with trees at the origin.
    #[test]
    fn a_root_without_its_base_is_refused() {
        let forest = TestForest::new(7, 30, 10, 2, &Material::default()).unwrap().forest;
        let model = OliapuramModel::new(forest, OliapuramParams::default()).unwrap();
        let mut e = model.export();
        assert_eq!(pack_segments(&e).unwrap().len(), e.order.len());
        e.root_base.pop();
        let err = pack_segments(&e).unwrap_err().to_string();
        assert!(err.contains("root_base"), "{err}");
    }
}
