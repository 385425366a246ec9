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
//! In place. A group's dynamics step its chunks root to tips: a segment reads its children's
//! deflections (the next chunk) and its leaves' angles before they are stepped, and only then
//! are its leaves stepped, so every body still reads the state of the step's start, with no
//! second copy of the state to stream through the cache.
//!
//! Invariants:
//! - Groups tile the trees in tree order: group g holds trees `trees[g]..trees[g + 1]`, so its
//!   segments and leaves are the contiguous ranges `segments[g]..segments[g + 1]` and
//!   `leaves[g]..leaves[g + 1]` of the forest's (and the pose's) arrays.
//! - Inside a depth level the level order sorts segments by tree (level 0 is the roots in tree
//!   order, and each level is grouped by its parents' order; see `levels`), so group g's
//!   segments in level d are one contiguous range of level indices, its chunk d. A tree has a
//!   segment at every depth up to its deepest, so group g's chunks are levels `0..depth(g)`,
//!   none empty.
//! - A group holds whole trees of at most [`GROUP_BYTES`] of data, or one tree when a tree is
//!   larger than that.
//! - The model's arrays keep the level order of the whole forest (the per-level view of §3.2);
//!   groups only choose which slices a job takes.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use glam::{Quat, Vec3};
use sylva_engine::JobSystem;

use super::kernels;
use super::leaves::{self, LeafWind, Leaves};
use super::levels::Levels;
use super::{timed, OliapuramModel, State, DYNAMICS, INTEGRATION, POSE};
use crate::dynamics::Pose;
use crate::forest::Forest;
use crate::wind::WindField;

/// Bytes of a group's data a core should keep in its cache: the L2 of current desktop and
/// server cores (1–2 MiB), less room for what else runs.
pub(super) const GROUP_BYTES: usize = 768 * 1024;

/// Bytes a step touches per segment: its state (24), its pose (28), its static data
/// (`SegmentBody`, rest orientation, length, parent, order and leaf and child ranges: 84), the
/// wind sample (12) and the working room of its turn (16), rounded up.
const SEGMENT_BYTES: usize = 192;
/// Bytes a step touches per leaf: angle and rate (8), pose (28), static data (`Leaves`: 52), the
/// wind sample (12) and the working room of its turn (16), rounded up.
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

/// The state of a run of segments of one level (level indices `first..`), stepped in place.
#[derive(Default)]
struct Chunk<'a> {
    first: usize,
    phi: &'a mut [Vec3],
    omega: &'a mut [Vec3],
    /// The drag each segment feels this step (`rupture::Drag`).
    drag: &'a mut [Vec3],
}

impl<'a> Chunk<'a> {
    /// Splits off the first `segments` segments.
    fn take_front(&mut self, segments: usize) -> Chunk<'a> {
        let (phi, phi1) = std::mem::take(&mut self.phi).split_at_mut(segments);
        let (omega, omega1) = std::mem::take(&mut self.omega).split_at_mut(segments);
        let (drag, drag1) = std::mem::take(&mut self.drag).split_at_mut(segments);
        let front = Chunk {
            first: self.first,
            phi,
            omega,
            drag,
        };
        *self = Chunk {
            first: self.first + segments,
            phi: phi1,
            omega: omega1,
            drag: drag1,
        };
        front
    }
}

/// One group's share of the leaves' state, of the pose and of the wind samples (the forest's
/// orders, from its first segment and leaf on; no wind samples in a uniform wind).
#[derive(Default)]
struct GroupPose<'a> {
    seg_offset: usize,
    leaf_offset: usize,
    psi: &'a mut [f32],
    psi_dot: &'a mut [f32],
    base: &'a mut [Vec3],
    orient: &'a mut [Quat],
    leaf_pos: &'a mut [Vec3],
    leaf_orient: &'a mut [Quat],
    seg_wind: &'a mut [Vec3],
    leaf_wind: &'a mut [Vec3],
    leaf_drag: &'a mut [Vec3],
}

impl OliapuramModel {
    /// One step by groups of trees (see the module documentation), in place: every group's
    /// dynamics phase, then its integration and its leaves' pose, group after group in
    /// data-split jobs of whole groups. Returns false if a result is not finite.
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
            psi,
            psi_dot,
            seg_wind,
            leaf_wind,
            seg_drag,
            leaf_drag,
            ..
        } = state;
        // What is left of each level's state once the groups before are handed out.
        let mut left: Vec<Chunk<'_>> = Vec::with_capacity(levels.count());
        {
            let mut rest = Chunk {
                first: 0,
                phi,
                omega,
                drag: seg_drag,
            };
            for d in 0..levels.count() {
                left.push(rest.take_front(levels.level(d).len()));
            }
        }
        let mut rest_pose = GroupPose {
            seg_offset: 0,
            leaf_offset: 0,
            psi,
            psi_dot,
            base: &mut pose.base,
            orient: &mut pose.orient,
            leaf_pos: &mut pose.leaf_pos,
            leaf_orient: &mut pose.leaf_orient,
            seg_wind,
            leaf_wind,
            leaf_drag,
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
                            left[d].take_front(r.len())
                        })
                        .collect();
                    let segments = (groups.segments[g + 1] - groups.segments[g]) as usize;
                    let leaves = (groups.leaves[g + 1] - groups.leaves[g]) as usize;
                    work.push((chunks, split_pose(&mut rest_pose, segments, leaves, uniform.is_none())));
                }
                sc.spawn(move |_| {
                    let mut scratch = (Vec::new(), Vec::new());
                    for (mut chunks, mut gp) in work {
                        if !step_group(self, uniform, wind, &mut chunks, &mut gp, &mut scratch) {
                            finite.store(false, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        finite.load(Ordering::Relaxed)
    }
}

/// Splits off the leaves' state, the pose (and wind samples, when the wind varies) of the next
/// `segments` segments and `leaves` leaves.
fn split_pose<'a>(rest: &mut GroupPose<'a>, segments: usize, leaves: usize, varying: bool) -> GroupPose<'a> {
    let r = std::mem::take(rest);
    let (psi, psi1) = r.psi.split_at_mut(leaves);
    let (psi_dot, psi_dot1) = r.psi_dot.split_at_mut(leaves);
    let (base, base1) = r.base.split_at_mut(segments);
    let (orient, orient1) = r.orient.split_at_mut(segments);
    let (leaf_pos, leaf_pos1) = r.leaf_pos.split_at_mut(leaves);
    let (leaf_orient, leaf_orient1) = r.leaf_orient.split_at_mut(leaves);
    let (seg_wind, seg_wind1) = r.seg_wind.split_at_mut(if varying { segments } else { 0 });
    let (leaf_wind, leaf_wind1) = r.leaf_wind.split_at_mut(if varying { leaves } else { 0 });
    let (leaf_drag, leaf_drag1) = r.leaf_drag.split_at_mut(leaves);
    *rest = GroupPose {
        seg_offset: r.seg_offset + segments,
        leaf_offset: r.leaf_offset + leaves,
        psi: psi1,
        psi_dot: psi_dot1,
        base: base1,
        orient: orient1,
        leaf_pos: leaf_pos1,
        leaf_orient: leaf_orient1,
        seg_wind: seg_wind1,
        leaf_wind: leaf_wind1,
        leaf_drag: leaf_drag1,
    };
    GroupPose {
        seg_offset: r.seg_offset,
        leaf_offset: r.leaf_offset,
        psi,
        psi_dot,
        base,
        orient,
        leaf_pos,
        leaf_orient,
        seg_wind,
        leaf_wind,
        leaf_drag,
    }
}

/// One group's step, in place: its dynamics phase chunk by chunk, root to tips (sampling the
/// wind at the group's pose first when it varies in space), each segment reading its children's
/// deflections before their chunk is stepped and its leaves' angles before they are, then its
/// leaves'; then its integration root to tips and its leaves' pose, into `gp`. `turns` and
/// `angles` are working room. Returns false if a result is not finite.
fn step_group(
    m: &OliapuramModel,
    uniform: Option<Vec3>,
    wind: &dyn WindField,
    chunks: &mut [Chunk<'_>],
    gp: &mut GroupPose<'_>,
    (turns, angles): &mut (Vec<[f32; 4]>, Vec<f32>),
) -> bool {
    let (levels, leaves): (&Levels, &Leaves) = (&m.levels, &m.leaves);
    let (so, lo) = (gp.seg_offset, gp.leaf_offset);
    let h = m.params.dt;
    let mut finite = true;
    timed(&m.phase_ns[DYNAMICS], || {
        // The segments' pose is read (and written) in the level order, which jumps between the
        // trees' blocks: stream it in first.
        touch(gp.orient);
        touch(gp.base);
        // So are the leaves' angles and reactions, which the segments read in that order too.
        touch(gp.psi);
        touch(&leaves.reaction[lo..lo + gp.psi.len()]);
        if uniform.is_none() {
            // Where the wind is sampled (Eq. 14, §4), in the forest's order.
            for (k, w) in gp.seg_wind.iter_mut().enumerate() {
                let v = levels.level_of[so + k] as usize;
                *w = kernels::centroid(levels, v, gp.orient[k], gp.base[k]);
            }
            leaves::centres(leaves, (gp.leaf_pos, gp.leaf_orient), lo, gp.leaf_wind);
            wind.sample_in_place(gp.seg_wind);
            wind.sample_in_place(gp.leaf_wind);
        }
        // Root to tips: a chunk's children lie in the next chunk, not stepped yet.
        for d in 0..chunks.len() {
            let (done, next) = chunks.split_at_mut(d + 1);
            let c = &mut done[d];
            let (child_first, child_phi): (usize, &[Vec3]) = match next.first() {
                Some(n) => (n.first, n.phi),
                None => (0, &[]),
            };
            for k in 0..c.phi.len() {
                let v = c.first + k;
                let f = levels.order[v] as usize - so;
                let l = levels.forest_leaf[v] as usize;
                let l = l..l + (levels.leaf_start[v + 1] - levels.leaf_start[v]) as usize;
                let w = match uniform {
                    Some(u) => u,
                    None => gp.seg_wind[f],
                };
                let (phi1, omega1, drag) = kernels::step_segment(
                    levels,
                    v,
                    (gp.orient[f], w, m.external.get(levels.order[v] as usize)),
                    (c.phi[k], c.omega[k]),
                    |ci| child_phi[ci - child_first],
                    (&leaves.reaction[l.clone()], &gp.psi[l.start - lo..l.end - lo]),
                    h,
                );
                c.phi[k] = phi1;
                c.omega[k] = omega1;
                c.drag[k] = drag;
            }
            // Checked once per chunk, in a loop of its own (the same answer, out of the
            // segments' loop).
            finite &= all_finite(c.phi) & all_finite(c.omega);
        }
        let wind = match uniform {
            Some(u) => LeafWind::Uniform(u),
            None => LeafWind::Samples(gp.leaf_wind),
        };
        finite &= leaves::step_leaves(leaves, lo, (gp.psi, gp.psi_dot), gp.leaf_orient, wind, h, gp.leaf_drag);
    });
    timed(&m.phase_ns[INTEGRATION], || {
        for c in chunks.iter() {
            turns.resize(c.phi.len().max(turns.len()), [0.0; 4]);
            let turns = &mut turns[..c.phi.len()];
            kernels::rotations(c.phi, turns);
            kernels::integrate_into_pose(levels, turns, c.first, (gp.orient, gp.base), so);
        }
    });
    timed(&m.phase_ns[POSE], || {
        leaves::pose(
            &m.forest.seg.leaf_start,
            leaves,
            so,
            (gp.orient, gp.base),
            gp.psi,
            (gp.leaf_pos, gp.leaf_orient),
            angles,
        );
    });
    finite
}

/// Whether every number of `v` is finite.
fn all_finite(v: &[Vec3]) -> bool {
    v.iter()
        .fold(true, |ok, v| ok & v.x.is_finite() & v.y.is_finite() & v.z.is_finite())
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
