//! The step scheduled by groups of whole trees, each group's data about the size of a core's
//! L2 cache: one job runs a group's dynamics phase, then its integration level by level, then
//! its leaves' pose, while the group's state, static data and pose are still in the cache,
//! instead of sweeping the whole forest once per phase (and once per level). One fork and join
//! per step, however many levels.
//!
//! Why it gives the bits of the phase-by-phase sweep (§3.2): trees do not interact (a segment
//! reads its own tree's state only: its children's deflections, its leaves, its parent's pose),
//! so running the two phases tree group by tree group keeps, inside every tree, the order the
//! paper asks for: every body's dynamics from the step's start, then the integration root to
//! tips, one level after the other. Every body is computed by the same arithmetic
//! (`kernels`, `leaves`) from the same inputs, whichever group, job or thread it falls in.
//!
//! Invariants:
//! - Groups tile the trees in tree order: group g holds trees `trees[g]..trees[g + 1]`, so its
//!   segments and leaves are the contiguous ranges `segments[g]..segments[g + 1]` and
//!   `leaves[g]..leaves[g + 1]` of the forest's (and the pose's) arrays.
//! - Inside a depth level the level order sorts segments by tree (level 0 is the roots in tree
//!   order, and each level is grouped by its parents' order; see `levels`), so group g's
//!   segments in level d are one contiguous range of level indices, its chunk d, and their
//!   leaves one contiguous range of the model's leaf order. A tree has a segment at every depth
//!   up to its deepest, so group g's chunks are levels `0..depth(g)`, none empty.
//! - A group holds whole trees of at most [`GROUP_BYTES`] of data, or one tree when a tree is
//!   larger than that.
//! - The model's arrays keep the level order of the whole forest (the per-level view of §3.2);
//!   groups only choose which slices a job takes.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use glam::{Quat, Vec3};
use sylva_engine::JobSystem;

use super::kernels::{self, DynamicsIn, DynamicsOut};
use super::leaves::{self, Leaves};
use super::levels::Levels;
use super::{timed, OliapuramModel, State, DYNAMICS, INTEGRATION, POSE};
use crate::dynamics::Pose;
use crate::forest::Forest;
use crate::wind::WindField;

/// Bytes of a group's data a core should keep in its cache: the L2 of current desktop and
/// server cores (1–2 MiB), less room for what else runs.
pub(super) const GROUP_BYTES: usize = 768 * 1024;

/// Bytes a step touches per segment: its state and next state (48), its pose (28), its static
/// data (`SegmentBody`, rest orientation, length, parent, order and leaf and child ranges: 84)
/// and the wind sample (12), rounded up.
const SEGMENT_BYTES: usize = 192;
/// Bytes a step touches per leaf: angle and rate, now and next (16), pose (28), static data
/// (`LeafBody`, rest orientation, hinge distance, half length: 48) and the wind sample (12),
/// rounded up.
const LEAF_BYTES: usize = 112;

/// Jobs a step's groups are split into, per thread: enough that the threads end together.
const JOBS_PER_THREAD: usize = 8;

/// Groups of whole trees and, for each, its chunk of every level.
#[derive(Clone, Debug, Default)]
pub(super) struct Groups {
    /// First tree of each group; one more entry than groups.
    pub trees: Vec<u32>,
    /// First forest segment of each group; one more entry than groups.
    pub segments: Vec<u32>,
    /// First forest leaf of each group; one more entry than groups.
    pub leaves: Vec<u32>,
    /// Group g's chunks are `chunk[chunk_start[g]..chunk_start[g + 1]]`, chunk k in level k.
    pub chunk_start: Vec<u32>,
    /// Level indices of each chunk (start, end).
    pub chunk: Vec<(u32, u32)>,
}

impl Groups {
    /// Groups the forest's trees, in tree order, into groups of at most [`GROUP_BYTES`].
    pub fn new(forest: &Forest, levels: &Levels) -> Groups {
        let mut g = Groups {
            trees: vec![0],
            segments: vec![0],
            leaves: vec![0],
            ..Groups::default()
        };
        let mut bytes = 0;
        for (t, tree) in forest.trees.iter().enumerate() {
            let own = tree.segments.len() * SEGMENT_BYTES + tree.leaves.len() * LEAF_BYTES;
            if t > 0 && bytes + own > GROUP_BYTES {
                g.trees.push(t as u32);
                g.segments.push(tree.segments.start);
                g.leaves.push(tree.leaves.start);
                bytes = 0;
            }
            bytes += own;
        }
        g.trees.push(forest.tree_count() as u32);
        g.segments.push(forest.segment_count() as u32);
        g.leaves.push(forest.leaf_count() as u32);
        // Each level's runs of one group, level by level: every group's chunks come out in
        // level order.
        let group_of_tree: Vec<u32> = (0..g.count())
            .flat_map(|k| (g.trees[k]..g.trees[k + 1]).map(move |_| k as u32))
            .collect();
        let group_of = |v: usize| group_of_tree[forest.tree_of(levels.order[v] as usize)];
        let mut runs: Vec<(u32, u32, u32)> = Vec::new();
        for d in 0..levels.count() {
            let r = levels.level(d);
            let mut start = r.start;
            for v in r.clone() {
                if v + 1 == r.end || group_of(v + 1) != group_of(v) {
                    runs.push((group_of(v), start as u32, v as u32 + 1));
                    start = v + 1;
                }
            }
        }
        let mut count = vec![0u32; g.count() + 1];
        for &(k, ..) in &runs {
            count[k as usize + 1] += 1;
        }
        for k in 0..g.count() {
            count[k + 1] += count[k];
        }
        g.chunk_start = count.clone();
        g.chunk = vec![(0, 0); runs.len()];
        for (k, a, b) in runs {
            let slot = &mut count[k as usize];
            g.chunk[*slot as usize] = (a, b);
            *slot += 1;
        }
        debug_assert!((0..g.count()).all(|k| g.depth(k) > 0));
        debug_assert!(g.chunk.iter().all(|&(a, b)| a < b));
        g
    }

    /// Number of groups.
    pub fn count(&self) -> usize {
        self.trees.len() - 1
    }

    /// Number of levels group `g` has a chunk in.
    pub fn depth(&self, g: usize) -> usize {
        (self.chunk_start[g + 1] - self.chunk_start[g]) as usize
    }

    /// Level indices of group `g`'s chunk in level `d` (below [`depth`](Self::depth)).
    pub fn chunk(&self, g: usize, d: usize) -> Range<usize> {
        let (a, b) = self.chunk[self.chunk_start[g] as usize + d];
        a as usize..b as usize
    }

    /// Segments and leaves of group `g`, the work it stands for.
    fn work(&self, g: usize) -> usize {
        (self.segments[g + 1] - self.segments[g] + self.leaves[g + 1] - self.leaves[g]) as usize
    }

    /// Runs of groups of about equal work, at most [`JOBS_PER_THREAD`] per thread.
    pub fn jobs(&self, threads: usize) -> impl Iterator<Item = Range<usize>> + '_ {
        let total: usize = (0..self.count()).map(|g| self.work(g)).sum();
        let size = total.div_ceil(JOBS_PER_THREAD * threads).max(1);
        let mut first = 0;
        std::iter::from_fn(move || {
            if first >= self.count() {
                return None;
            }
            let (mut last, mut work) = (first, 0);
            while last < self.count() && (last == first || work + self.work(last) <= size) {
                work += self.work(last);
                last += 1;
            }
            let run = first..last;
            first = last;
            Some(run)
        })
    }

    /// Bytes held (capacities).
    pub fn heap_bytes(&self) -> usize {
        fn b<T>(v: &Vec<T>) -> usize {
            v.capacity() * size_of::<T>()
        }
        b(&self.trees) + b(&self.segments) + b(&self.leaves) + b(&self.chunk_start) + b(&self.chunk)
    }
}

/// The next state of a run of segments of one level (level indices `first..`) and of their
/// leaves (model leaf indices `leaf_first..`).
#[derive(Default)]
struct Chunk<'a> {
    first: usize,
    leaf_first: usize,
    phi: &'a mut [Vec3],
    omega: &'a mut [Vec3],
    psi: &'a mut [f32],
    psi_dot: &'a mut [f32],
}

impl<'a> Chunk<'a> {
    /// Splits off the first `segments` segments and `leaves` leaves.
    fn take_front(&mut self, segments: usize, leaves: usize) -> Chunk<'a> {
        let (phi, phi1) = std::mem::take(&mut self.phi).split_at_mut(segments);
        let (omega, omega1) = std::mem::take(&mut self.omega).split_at_mut(segments);
        let (psi, psi1) = std::mem::take(&mut self.psi).split_at_mut(leaves);
        let (psi_dot, psi_dot1) = std::mem::take(&mut self.psi_dot).split_at_mut(leaves);
        let front = Chunk {
            first: self.first,
            leaf_first: self.leaf_first,
            phi,
            omega,
            psi,
            psi_dot,
        };
        *self = Chunk {
            first: self.first + segments,
            leaf_first: self.leaf_first + leaves,
            phi: phi1,
            omega: omega1,
            psi: psi1,
            psi_dot: psi_dot1,
        };
        front
    }
}

/// One group's share of the pose (the forest's order, from its first segment and leaf on) and
/// of the wind samples (the same order; empty in a uniform wind).
struct GroupPose<'a> {
    seg_offset: usize,
    leaf_offset: usize,
    base: &'a mut [Vec3],
    orient: &'a mut [Quat],
    leaf_pos: &'a mut [Vec3],
    leaf_orient: &'a mut [Quat],
    seg_wind: &'a mut [Vec3],
    leaf_wind: &'a mut [Vec3],
}

/// What every group reads: the static data and the state of the step's start.
struct Shared<'a> {
    model: &'a OliapuramModel,
    phi: &'a [Vec3],
    omega: &'a [Vec3],
    psi: &'a [f32],
    psi_dot: &'a [f32],
    uniform: Option<Vec3>,
}

impl OliapuramModel {
    /// One step by groups of trees (see the module documentation): the dynamics phase into the
    /// next state, then the integration and the leaves' pose from it, group after group in
    /// data-split jobs of whole groups. Returns false if a result is not finite. The caller
    /// swaps the next state in.
    pub(super) fn grouped_step(
        &self,
        state: &mut State,
        pose: &mut Pose,
        wind: &dyn WindField,
        jobs: &JobSystem,
    ) -> bool {
        let (levels, groups) = (&self.levels, &self.groups);
        let uniform = wind.uniform();
        if uniform.is_none() {
            // Sized once, the first time the wind varies; later steps reuse them.
            state.seg_wind.resize(self.forest.segment_count(), Vec3::ZERO);
            state.leaf_wind.resize(self.forest.leaf_count(), Vec3::ZERO);
        }
        let State {
            phi,
            omega,
            phi_next,
            omega_next,
            psi,
            psi_dot,
            psi_next,
            psi_dot_next,
            seg_wind,
            leaf_wind,
            ..
        } = state;
        let shared = Shared {
            model: self,
            phi,
            omega,
            psi,
            psi_dot,
            uniform,
        };
        let shared = &shared;
        // What is left of each level's next state once the groups before are handed out.
        let mut left: Vec<Chunk<'_>> = Vec::with_capacity(levels.count());
        {
            let mut rest = Chunk {
                first: 0,
                leaf_first: 0,
                phi: phi_next,
                omega: omega_next,
                psi: psi_next,
                psi_dot: psi_dot_next,
            };
            for d in 0..levels.count() {
                let r = levels.level(d);
                let leaves = (levels.leaf_start[r.end] - levels.leaf_start[r.start]) as usize;
                left.push(rest.take_front(r.len(), leaves));
            }
        }
        let mut rest_pose = GroupPose {
            seg_offset: 0,
            leaf_offset: 0,
            base: &mut pose.base,
            orient: &mut pose.orient,
            leaf_pos: &mut pose.leaf_pos,
            leaf_orient: &mut pose.leaf_orient,
            seg_wind,
            leaf_wind,
        };
        let finite = AtomicBool::new(true);
        let finite = &finite;
        jobs.scope(|sc| {
            for run in groups.jobs(jobs.threads()) {
                let mut work: Vec<(Vec<Chunk<'_>>, GroupPose<'_>)> = Vec::with_capacity(run.len());
                for g in run {
                    let chunks: Vec<Chunk<'_>> = (0..groups.depth(g))
                        .map(|d| {
                            let r = groups.chunk(g, d);
                            debug_assert_eq!(left[d].first, r.start);
                            let leaves = (levels.leaf_start[r.end] - levels.leaf_start[r.start]) as usize;
                            left[d].take_front(r.len(), leaves)
                        })
                        .collect();
                    let segments = (groups.segments[g + 1] - groups.segments[g]) as usize;
                    let leaves = (groups.leaves[g + 1] - groups.leaves[g]) as usize;
                    work.push((chunks, split_pose(&mut rest_pose, segments, leaves, uniform.is_none())));
                }
                sc.spawn(move |_| {
                    for (mut chunks, mut gp) in work {
                        if !step_group(shared, wind, &mut chunks, &mut gp) {
                            finite.store(false, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        finite.load(Ordering::Relaxed)
    }
}

/// Splits off the pose (and wind samples, when the wind varies) of the next `segments`
/// segments and `leaves` leaves.
fn split_pose<'a>(rest: &mut GroupPose<'a>, segments: usize, leaves: usize, varying: bool) -> GroupPose<'a> {
    let (base, base1) = std::mem::take(&mut rest.base).split_at_mut(segments);
    let (orient, orient1) = std::mem::take(&mut rest.orient).split_at_mut(segments);
    let (leaf_pos, leaf_pos1) = std::mem::take(&mut rest.leaf_pos).split_at_mut(leaves);
    let (leaf_orient, leaf_orient1) = std::mem::take(&mut rest.leaf_orient).split_at_mut(leaves);
    let (seg_wind, seg_wind1) = std::mem::take(&mut rest.seg_wind).split_at_mut(if varying { segments } else { 0 });
    let (leaf_wind, leaf_wind1) = std::mem::take(&mut rest.leaf_wind).split_at_mut(if varying { leaves } else { 0 });
    let front = GroupPose {
        seg_offset: rest.seg_offset,
        leaf_offset: rest.leaf_offset,
        base,
        orient,
        leaf_pos,
        leaf_orient,
        seg_wind,
        leaf_wind,
    };
    *rest = GroupPose {
        seg_offset: rest.seg_offset + segments,
        leaf_offset: rest.leaf_offset + leaves,
        base: base1,
        orient: orient1,
        leaf_pos: leaf_pos1,
        leaf_orient: leaf_orient1,
        seg_wind: seg_wind1,
        leaf_wind: leaf_wind1,
    };
    front
}

/// One group's step: its dynamics phase, chunk by chunk, from the step's start into `chunks`
/// (sampling the wind at the group's pose first when it varies in space), then its integration
/// root to tips and its leaves' pose, into `gp`. Returns false if a result is not finite.
fn step_group(sh: &Shared<'_>, wind: &dyn WindField, chunks: &mut [Chunk<'_>], gp: &mut GroupPose<'_>) -> bool {
    let m = sh.model;
    let (levels, leaves): (&Levels, &Leaves) = (&m.levels, &m.leaves);
    let (so, lo) = (gp.seg_offset, gp.leaf_offset);
    let mut finite = true;
    timed(&m.phase_ns[DYNAMICS], || {
        // The pose is read (and written) in the level order, which jumps between the trees'
        // blocks: stream it in first.
        touch(gp.orient);
        touch(gp.base);
        touch(gp.leaf_orient);
        touch(gp.leaf_pos);
        if sh.uniform.is_none() {
            // Where the wind is sampled (Eq. 14, §4), in the forest's order.
            for (k, w) in gp.seg_wind.iter_mut().enumerate() {
                let v = levels.level_of[so + k] as usize;
                *w = kernels::centroid(levels, v, gp.orient[k], gp.base[k]);
            }
            for c in chunks.iter() {
                for v in c.first..c.first + c.phi.len() {
                    let a = levels.forest_leaf[v] as usize - lo;
                    let n = (levels.leaf_start[v + 1] - levels.leaf_start[v]) as usize;
                    leaves::centres(
                        levels,
                        leaves,
                        (gp.leaf_pos, gp.leaf_orient),
                        v,
                        lo,
                        &mut gp.leaf_wind[a..a + n],
                    );
                }
            }
            wind.sample_in_place(gp.seg_wind);
            wind.sample_in_place(gp.leaf_wind);
        }
        let inp = DynamicsIn {
            levels,
            leaves,
            phi: sh.phi,
            omega: sh.omega,
            psi: sh.psi,
            psi_dot: sh.psi_dot,
            orient: gp.orient,
            seg_offset: so,
            leaf_orient: gp.leaf_orient,
            leaf_offset: lo,
            dt: m.params.dt,
        };
        for c in chunks.iter_mut() {
            let out = DynamicsOut {
                first: c.first,
                leaf_first: c.leaf_first,
                phi: c.phi,
                omega: c.omega,
                psi: c.psi,
                psi_dot: c.psi_dot,
            };
            finite &= match sh.uniform {
                Some(u) => kernels::dynamics(&inp, |_| u, |_, _| u, out),
                None => {
                    let (sw, lw) = (&*gp.seg_wind, &*gp.leaf_wind);
                    kernels::dynamics(&inp, |v| sw[levels.order[v] as usize - so], |_, f| lw[f], out)
                }
            };
        }
    });
    timed(&m.phase_ns[INTEGRATION], || {
        for c in chunks.iter() {
            kernels::integrate_into_pose(levels, c.phi, c.first, (gp.orient, gp.base), so);
        }
    });
    timed(&m.phase_ns[POSE], || {
        for c in chunks.iter() {
            for v in c.first..c.first + c.phi.len() {
                let f = levels.order[v] as usize - so;
                let a = levels.forest_leaf[v] as usize - lo;
                let n = (levels.leaf_start[v + 1] - levels.leaf_start[v]) as usize;
                leaves::pose_of_leaves(
                    levels,
                    leaves,
                    v,
                    (gp.orient[f], gp.base[f]),
                    (c.psi, c.leaf_first),
                    (&mut gp.leaf_pos[a..a + n], &mut gp.leaf_orient[a..a + n]),
                );
            }
        }
    });
    finite
}

/// Reads one value per cache line of `data`, in order: the lines stream into the cache at the
/// memory's bandwidth (the hardware prefetcher follows a sequential sweep) before the group's
/// loops read them in the level order, which jumps between the trees' blocks.
#[inline(never)]
fn touch<T: Copy>(data: &[T]) {
    let step = (64 / size_of::<T>()).max(1);
    for x in data.iter().step_by(step) {
        std::hint::black_box(*x);
    }
}
