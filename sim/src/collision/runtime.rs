//! Self-collision while a tree moves (Chen 2011 §5): each tree's pieces (its segments' root
//! parts and rests, its leaves' roots and blades, as `primitives` cuts them) bounded by
//! k-DOPs refitted to the pose every step, the tree's own hierarchy over them (`bvh`) refitted
//! bottom up, the unconnected pairs whose k-DOPs overlap collected, and a response spring
//! (Eq. 5.1) on every pair closer than the sum of their safe distances.
//!
//! Safe distance (§5.1): a stem piece's radius, a leaf piece's longest parallel venation (its
//! largest half-width), plus its buffer distance, the most it can move in a step. The buffer
//! is taken from the step just made: [`BUFFER_SCALE`] times the larger displacement of the
//! piece's two centreline ends since the last refit. Each piece's k-DOP is enlarged by its
//! buffer (§5.1, so that a pair about to collide is found a step early).
//!
//! Response (Eq. 5.1): F = Dir·K_s·(d − d_safe) on the first piece of a pair and −F on the
//! second, d the shortest distance between their centrelines, d_safe the sum of their safe
//! distances, Dir the unit vector from the second's k-DOP centre to the first's (Fig. 5.2; so
//! that d < d_safe pushes them apart). Each force acts on the piece's segment (a leaf's on the
//! segment it hangs from); a model passes it on towards the root as its own mechanics does
//! (Fig. 5.3: in an articulated model the forces of a pair cancel below their common
//! ancestor).
//!
//! Invariant: the candidate pairs, the forces and every count depend only on the forest, the
//! poses and the parameters, never on the number of worker threads.

use std::time::{Duration, Instant};

use glam::{Quat, Vec3};
use sylva_engine::JobSystem;

use super::bvh::Bvh;
use super::connect::Topology;
use super::kdop::{DopK, Kdop};
use super::modelling::LEAF_JOINTS;
use super::primitives::{blade, leaf_half_width, Owner};
use super::tritri::segment_distance;
use crate::dynamics::pose::{segment_axis, Pose};
use crate::error::SimError;
use crate::forest::{Forest, NO_PARENT};
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment};

/// The buffer distance is this many times a piece's last step's displacement.
pub const BUFFER_SCALE: f32 = 1.5;
/// Largest response spring constant accepted \[N/m\].
pub const MAX_STIFFNESS: f32 = 1.0e6;
/// Largest extra safe distance accepted \[m\].
pub const MAX_EXTRA_SAFE: f32 = 1.0;

/// How self-collision is detected and answered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelfCollisionParams {
    /// The k-DOP bounding the pieces and nodes.
    pub k: DopK,
    /// K_s of Eq. 5.1 \[N/m\].
    pub stiffness: f32,
    /// Added to every piece's safe distance \[m\] (0: Chen's radius plus buffer).
    pub extra_safe: f32,
}

impl Default for SelfCollisionParams {
    fn default() -> Self {
        SelfCollisionParams {
            k: DopK::K14,
            stiffness: 20.0,
            extra_safe: 0.0,
        }
    }
}

impl SelfCollisionParams {
    /// Checks every parameter, naming the one out of range.
    pub fn validate(&self) -> Result<(), SimError> {
        if !(self.stiffness.is_finite() && (0.0..=MAX_STIFFNESS).contains(&self.stiffness)) {
            return Err(SimError::param(
                "self-collision spring constant",
                self.stiffness,
                format!("allowed: 0 to {MAX_STIFFNESS} N/m"),
            ));
        }
        if !(self.extra_safe.is_finite() && (0.0..=MAX_EXTRA_SAFE).contains(&self.extra_safe)) {
            return Err(SimError::param(
                "self-collision safe distance",
                self.extra_safe,
                format!("allowed: 0 to {MAX_EXTRA_SAFE} m"),
            ));
        }
        Ok(())
    }
}

/// What the last step found and what it cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SelfCollisionStats {
    /// Unconnected pairs whose k-DOPs overlap (the traversal's output).
    pub candidates: usize,
    /// Candidate pairs closer than the sum of their safe distances (given a response force).
    pub responding: usize,
    /// Candidate pairs closer than the sum of their radii (without buffers): touching or
    /// interpenetrating now.
    pub close_pairs: usize,
    /// k-DOP pairs the traversal compared.
    pub kdop_tests: u64,
    /// Wall time of the refit of pieces and nodes, the traversal and the response.
    pub refit: Duration,
    pub traverse: Duration,
    pub respond: Duration,
}

/// One piece as the runtime bounds it: its owner (tree-local indices) and its stretch (a
/// stem's: metres from its segment's base; a leaf's: fractions of its blade) and radius.
#[derive(Clone, Copy, Debug)]
struct RtPiece {
    owner: Owner,
    t0: f32,
    t1: f32,
    ra: f32,
    rb: f32,
}

/// One tree's pieces, hierarchy and per-step state.
struct TreeSet {
    seg0: u32,
    leaf0: u32,
    topo: Topology,
    bvh: Bvh,
    pieces: Vec<RtPiece>,
    /// Per piece: k-DOP (enlarged by the buffer), centreline ends at the last refit, safe
    /// distance, radius.
    kdop: Vec<Kdop>,
    ends: Vec<[Vec3; 2]>,
    safe: Vec<f32>,
    radius: Vec<f32>,
    nodes: Vec<Kdop>,
    pairs: Vec<(u32, u32)>,
    kdop_tests: u64,
    fresh: bool,
}

/// Self-collision of every tree of a forest.
pub struct SelfCollision {
    params: SelfCollisionParams,
    trees: Vec<TreeSet>,
    last: SelfCollisionStats,
}

/// Tree `t` of `forest` in `pose` as a skeleton with tree-local indices.
fn skeleton_of(forest: &Forest, pose: &Pose, t: usize) -> Skeleton {
    let tree = &forest.trees[t];
    let (s0, l0) = (tree.segments.start, tree.leaves.start);
    let seg = &forest.seg;
    let mut out = Skeleton::default();
    for g in tree.segments.clone() {
        let i = g as usize;
        let parent = (seg.parent[i] != NO_PARENT).then(|| seg.parent[i] - s0);
        out.segments.push(SkeletonSegment {
            parent,
            base: pose.base[i],
            tip: pose.tip(i, seg.length[i]),
            radius_base: seg.radius_base[i],
            radius_tip: seg.radius_tip[i],
        });
        for j in forest.leaves_of(i) {
            let length = forest.leaf.length_m(j);
            out.leaves.push(SkeletonLeaf {
                segment: g - s0,
                along: forest.leaf.along_f32(j),
                orientation: pose.leaf_orientation(forest, i, j),
                length,
                width: tree.leaf_aspect * length,
            });
        }
    }
    debug_assert_eq!(out.leaves.len(), tree.leaves.len());
    debug_assert!(out.leaves.len() as u32 + l0 == tree.leaves.end);
    out
}

impl SelfCollision {
    /// Self-collision of `forest`'s trees, their structure read in `pose` (the rest pose: a
    /// leaf's root part is where its blade is inside its twig there).
    pub fn new(forest: &Forest, pose: &Pose, params: SelfCollisionParams) -> Result<SelfCollision, SimError> {
        params.validate()?;
        let mut trees = Vec::with_capacity(forest.trees.len());
        for t in 0..forest.trees.len() {
            let skel = skeleton_of(forest, pose, t);
            let topo = Topology::new(&skel);
            let mut pieces = Vec::new();
            let mut of_segment: Vec<Vec<u32>> = vec![Vec::new(); skel.segments.len()];
            for (i, s) in skel.segments.iter().enumerate() {
                let (d, len) = (topo.root_length(i as u32), s.length());
                let r = |x: f32| s.radius_base + (s.radius_tip - s.radius_base) * (x / len);
                for (root, t0, t1) in [(true, 0.0, d), (false, d, len)] {
                    if t1 > t0 {
                        of_segment[i].push(pieces.len() as u32);
                        pieces.push(RtPiece {
                            owner: Owner::Stem {
                                segment: i as u32,
                                root,
                            },
                            t0,
                            t1,
                            ra: r(t0),
                            rb: r(t1),
                        });
                    }
                }
            }
            for (j, leaf) in skel.leaves.iter().enumerate() {
                let v = topo.leaf_root(j as u32);
                for (root, t0, t1) in [(true, 0.0, v), (false, v, 1.0)] {
                    if t1 > t0 {
                        let half = (0..=8)
                            .map(|k| leaf_half_width(t0 + (t1 - t0) * k as f32 / 8.0))
                            .fold(0.0, f32::max)
                            * leaf.width;
                        of_segment[leaf.segment as usize].push(pieces.len() as u32);
                        pieces.push(RtPiece {
                            owner: Owner::Leaf {
                                leaf: j as u32,
                                segment: leaf.segment,
                                root,
                            },
                            t0,
                            t1,
                            ra: half,
                            rb: half,
                        });
                    }
                }
            }
            let radius: Vec<f32> = skel.segments.iter().map(|s| s.radius_base.max(s.radius_tip)).collect();
            let bvh = Bvh::build(&topo, &radius, |s| of_segment[s as usize].clone());
            let n = pieces.len();
            let tree = &forest.trees[t];
            trees.push(TreeSet {
                seg0: tree.segments.start,
                leaf0: tree.leaves.start,
                topo,
                nodes: vec![Kdop::empty(params.k); bvh.nodes.len()],
                bvh,
                pieces,
                kdop: vec![Kdop::empty(params.k); n],
                ends: vec![[Vec3::ZERO; 2]; n],
                safe: vec![0.0; n],
                radius: vec![0.0; n],
                pairs: Vec::new(),
                kdop_tests: 0,
                fresh: true,
            });
        }
        Ok(SelfCollision {
            params,
            trees,
            last: SelfCollisionStats::default(),
        })
    }

    /// The parameters.
    pub fn params(&self) -> &SelfCollisionParams {
        &self.params
    }

    /// What the last step found and cost.
    pub fn stats(&self) -> SelfCollisionStats {
        self.last
    }

    /// Forgets the last refit's positions (after a reset: the next buffers start from 0).
    pub fn restart(&mut self) {
        for t in &mut self.trees {
            t.fresh = true;
        }
    }

    /// Refits every piece and node to `pose`, collects the candidate pairs and adds each
    /// response force to `forces` (one per segment of the forest, \[N\] at its centre).
    pub fn step(&mut self, jobs: &JobSystem, forest: &Forest, pose: &Pose, forces: &mut [Vec3]) {
        let k = self.params.k;
        let extra = self.params.extra_safe;
        let t0 = Instant::now();
        for tree in &mut self.trees {
            refit_pieces(jobs, tree, forest, pose, k, extra);
        }
        let mut trees: Vec<&mut TreeSet> = self.trees.iter_mut().collect();
        jobs.for_each_mut(&mut trees, |_, t| t.bvh.refit(&t.kdop, &mut t.nodes));
        let t1 = Instant::now();
        jobs.for_each_mut(&mut trees, |_, t| {
            let mut pairs = std::mem::take(&mut t.pairs);
            pairs.clear();
            let TreeSet {
                topo,
                pieces,
                bvh,
                kdop,
                nodes,
                ..
            } = &**t;
            t.kdop_tests = bvh.self_pairs(
                kdop,
                nodes,
                |p, q| topo.connected(pieces[p as usize].owner, pieces[q as usize].owner),
                &mut pairs,
            );
            t.pairs = pairs;
        });
        let t2 = Instant::now();
        let mut stats = SelfCollisionStats::default();
        for t in &self.trees {
            stats.candidates += t.pairs.len();
            stats.kdop_tests += t.kdop_tests;
            for &(p, q) in &t.pairs {
                let (p, q) = (p as usize, q as usize);
                let [a0, a1] = t.ends[p];
                let [b0, b1] = t.ends[q];
                let d = segment_distance(a0, a1, b0, b1);
                if d < t.radius[p] + t.radius[q] {
                    stats.close_pairs += 1;
                }
                let d_safe = t.safe[p] + t.safe[q];
                // A NaN distance (a non-finite pose) answers nothing.
                if d.partial_cmp(&d_safe) != Some(std::cmp::Ordering::Less) {
                    continue;
                }
                stats.responding += 1;
                // Eq. 5.1, along the line between the k-DOPs' centres (Fig. 5.2).
                let dir = (t.kdop[p].centre() - t.kdop[q].centre()).normalize_or_zero();
                let f = dir * (self.params.stiffness * (d_safe - d));
                forces[(t.seg0 + t.pieces[p].owner.segment()) as usize] += f;
                forces[(t.seg0 + t.pieces[q].owner.segment()) as usize] -= f;
            }
        }
        let t3 = Instant::now();
        stats.refit = t1 - t0;
        stats.traverse = t2 - t1;
        stats.respond = t3 - t2;
        self.last = stats;
    }

    /// Every candidate pair of the last step as (tree, piece, piece), for tests.
    pub fn candidates(&self) -> Vec<(usize, u32, u32)> {
        let mut out = Vec::new();
        for (t, tree) in self.trees.iter().enumerate() {
            out.extend(tree.pairs.iter().map(|&(p, q)| (t, p, q)));
        }
        out
    }

    /// Every unconnected pair of pieces whose k-DOPs overlap after the last step, found by
    /// comparing every pair, as (tree, piece, piece): what the hierarchy must find.
    pub fn brute_force_candidates(&self) -> Vec<(usize, u32, u32)> {
        let mut out = Vec::new();
        for (t, tree) in self.trees.iter().enumerate() {
            let n = tree.pieces.len() as u32;
            for p in 0..n {
                for q in p + 1..n {
                    let (a, b) = (tree.pieces[p as usize].owner, tree.pieces[q as usize].owner);
                    if tree.kdop[p as usize].overlaps(&tree.kdop[q as usize]) && !tree.topo.connected(a, b) {
                        out.push((t, p, q));
                    }
                }
            }
        }
        out
    }

    /// Pieces of every tree (two per segment and leaf, fewer where a part is empty).
    pub fn piece_count(&self) -> usize {
        self.trees.iter().map(|t| t.pieces.len()).sum()
    }
}

/// Refits tree `t`'s pieces to `pose` on `jobs` (each piece on its own, so the split into
/// jobs changes nothing).
fn refit_pieces(jobs: &JobSystem, t: &mut TreeSet, forest: &Forest, pose: &Pose, k: DopK, extra: f32) {
    const CHUNK: usize = 1024;
    let fresh = std::mem::replace(&mut t.fresh, false);
    let (seg0, leaf0) = (t.seg0 as usize, t.leaf0 as usize);
    let pieces = &t.pieces;
    let mut chunks: Vec<_> = t
        .kdop
        .chunks_mut(CHUNK)
        .zip(t.ends.chunks_mut(CHUNK))
        .zip(t.safe.chunks_mut(CHUNK))
        .zip(t.radius.chunks_mut(CHUNK))
        .enumerate()
        .collect();
    jobs.for_each_mut(&mut chunks, |_, (c, (((kdop, ends), safe), radius))| {
        let start = *c * CHUNK;
        for i in 0..kdop.len() {
            let p = &pieces[start + i];
            let (box_, e, r) = match p.owner {
                Owner::Stem { segment, .. } => {
                    let g = seg0 + segment as usize;
                    let axis = segment_axis(pose.orient[g]);
                    let (a, b) = (pose.base[g] + axis * p.t0, pose.base[g] + axis * p.t1);
                    (Kdop::of_frustum(k, a, b, p.ra, p.rb), [a, b], p.ra.max(p.rb))
                }
                Owner::Leaf { leaf, segment, .. } => {
                    let (gj, gs) = (leaf0 + leaf as usize, seg0 + segment as usize);
                    let q: Quat = pose.leaf_orientation(forest, gs, gj);
                    let attach = pose.leaf_pos[gj];
                    let length = forest.leaf.length_m(gj);
                    let width = forest.trees[forest.tree_of(gs)].leaf_aspect * length;
                    let mut kd = Kdop::empty(k);
                    for tri in blade(attach, q, length, width, p.t0, p.t1, LEAF_JOINTS) {
                        tri.iter().for_each(|&v| kd.add_point(v));
                    }
                    let along = q * Vec3::Y * length;
                    (kd, [attach + along * p.t0, attach + along * p.t1], p.ra)
                }
            };
            let moved = if fresh {
                0.0
            } else {
                (e[0] - ends[i][0]).length().max((e[1] - ends[i][1]).length())
            };
            let buffer = BUFFER_SCALE * moved;
            kdop[i] = box_.enlarged(buffer + extra);
            ends[i] = e;
            safe[i] = r + buffer + extra;
            radius[i] = r;
        }
    });
}

impl std::fmt::Debug for SelfCollision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfCollision")
            .field("params", &self.params)
            .field("trees", &self.trees.len())
            .field("last", &self.last)
            .finish()
    }
}
