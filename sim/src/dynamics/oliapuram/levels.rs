//! The per-level view of the whole forest, built once: every segment of every tree renumbered
//! in increasing depth, root first (§3.2, "Integration of movements": "we store the branches and
//! leaves in the increasing order of depth, root first. We also maintain the starting index of
//! the branches/leaves in each level"), with the static data the two phases read, in that
//! order.
//!
//! Invariants:
//! - `order[v]` is the forest index of level index `v`, `level_of[order[v]] == v`.
//! - Level d holds `starts[d]..starts[d + 1]`; level 0 holds the trees' roots in tree order.
//! - A segment's parent lies in the previous level (`parent[v] < starts[d]` for v in level d),
//!   so a level reads only what earlier levels wrote.
//! - Inside a level, segments are grouped by parent in the parent's order, so the children of
//!   `v` are `child_start[v]..child_start[v + 1]` (one more entry than segments).
//! - Leaves follow their segments: the leaves of `v` are `leaf_start[v]..leaf_start[v + 1]` of
//!   the model's leaf arrays, and `forest_leaf[v]..` of the forest's (and the pose's).
//! - The level order is built from the forest's blocks (`Forest::block_levels`, whose depths
//!   are `Block::depth0 + k`), so it does not depend on anything but the forest.

use glam::{Quat, Vec3};

use super::kernels;
use super::params::OliapuramParams;
use crate::dynamics::pose::segment_axis;
use crate::dynamics::weber::mapping;
use crate::forest::{Forest, NO_PARENT};
use crate::material::DragLaw;

/// What the dynamics phase reads of one segment, every moment divided by its inertia I.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SegmentBody {
    /// The moment of the segment's own weight about its fixed end at rest over I, when the
    /// springs are pre-stressed to hold the generated shape under gravity (zero otherwise)
    /// [1/s²].
    pub weight_rest: Vec3,
    /// Distance from the fixed end to the centre of mass of the tapered cylinder \[m\].
    pub centroid: f32,
    /// σ·S_f/I of Eq. 14 with the frontal area S_f = (r_base + r_tip)·l: the angular
    /// acceleration per m/s of wind and m of lever [1/(m·s)].
    pub wind_gain: f32,
    /// m·g/I [1/(m·s²)].
    pub weight_gain: f32,
    /// μ/I, with μ the axial damping constant of Eq. 23 [1/rad].
    pub damping_gain: f32,
    /// ω₀² = k/I, with k the restoration constant of Eq. 22 [1/s²].
    pub w2: f32,
    /// 1/(1 + ½·Δt²·ω₀²) (`kernels::step_body`).
    pub den: f32,
    /// The factor the parent multiplies this segment's deflection by to get its back-propagated
    /// angular acceleration (Eqs. 15, 18, 19): k_c · (Th_i / Th_parent) · k_i / I_parent (0 for
    /// roots) [1/s²].
    pub propagation: f32,
}

/// Static data of every segment in level order.
#[derive(Clone, Debug, Default)]
pub(super) struct Levels {
    /// Forest index of each level index.
    pub order: Vec<u32>,
    /// Level index of each forest index.
    pub level_of: Vec<u32>,
    /// Where each depth level starts; one more entry than levels.
    pub starts: Vec<u32>,
    /// Level index of the parent, [`NO_PARENT`] for a root.
    pub parent: Vec<u32>,
    /// Children of `v`: `child_start[v]..child_start[v + 1]`.
    pub child_start: Vec<u32>,
    /// World position of the base of each root (level 0 only; the trees' `root`).
    pub root_base: Vec<Vec3>,
    /// Leaves of `v` in the model's leaf order (segment by segment in level order):
    /// `leaf_start[v]..leaf_start[v + 1]` (one more entry than segments).
    pub leaf_start: Vec<u32>,
    /// Where the leaves of `v` start in the forest's leaf order (the pose's).
    pub forest_leaf: Vec<u32>,
    /// Length l \[m\].
    pub length: Vec<f32>,
    /// Inertia about the fixed end, I = m·l²/3 (Eq. 11) with m the segment's mass and the
    /// leaves it carries (`Forest::seg.mass`) [kg·m²].
    pub inertia: Vec<f32>,
    /// Thickness Th of Eqs. 19, 22 and 23 \[m\]: the segment's average radius, at least
    /// `OliapuramParams::min_radius`, and at least the pipe-model radius of what it carries,
    /// sqrt(Σ Th_child²). (Generated stems taper to a point at their ends even where side
    /// branches still hang from them; as thin as that, the power laws would give such a segment
    /// less stiffness than the branches it carries together, and every level would pass on
    /// more deflection than it receives.)
    pub thickness: Vec<f32>,
    /// What the dynamics phase reads of each segment, in one record.
    pub body: Vec<SegmentBody>,
    /// Rest orientation relative to the parent's frame (the generated shape).
    pub rest: Vec<Quat>,
    /// World orientation at rest.
    pub rest_world: Vec<Quat>,
    /// How the wind's drag grows with the relative speed (the forest's material).
    pub drag_law: DragLaw,
}

/// Distance from the wide end to the centre of mass of a frustum of length `l` and end radii
/// `r0` (at the base) and `r1`.
pub(super) fn frustum_centroid(l: f32, r0: f32, r1: f32) -> f32 {
    let den = r0 * r0 + r0 * r1 + r1 * r1;
    if den <= 0.0 {
        return 0.5 * l;
    }
    l * (r0 * r0 + 2.0 * r0 * r1 + 3.0 * r1 * r1) / (4.0 * den)
}

impl Levels {
    /// Builds the view from the forest's blocks and the model's parameters.
    pub fn new(forest: &Forest, params: &OliapuramParams) -> Levels {
        let n = forest.segment_count();
        let s = &forest.seg;
        // The segments of each depth, from the blocks' level tables (block b's level k has
        // depth `depth0 + k`); level 0 is every tree's root, in tree order.
        let mut by_depth: Vec<Vec<u32>> = Vec::new();
        for (b, block) in forest.blocks.iter().enumerate() {
            for (k, range) in forest.block_levels(b).enumerate() {
                let d = (block.depth0 + k as u32) as usize;
                if by_depth.len() <= d {
                    by_depth.resize_with(d + 1, Vec::new);
                }
                by_depth[d].extend(range.map(|i| i as u32));
            }
        }
        // Each level grouped by parent, in the parent's level order (then forest order), so
        // every segment's children are contiguous.
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut level_of = vec![0u32; n];
        let mut starts = vec![0u32];
        for mut level in by_depth {
            level.sort_by_key(|&i| match s.parent[i as usize] {
                NO_PARENT => (0, i),
                p => (level_of[p as usize], i),
            });
            for &i in &level {
                level_of[i as usize] = order.len() as u32;
                order.push(i);
            }
            starts.push(order.len() as u32);
        }
        debug_assert_eq!(order.len(), n);
        let mut children_count = vec![0u32; n];
        for i in 0..n {
            if s.parent[i] != NO_PARENT {
                children_count[s.parent[i] as usize] += 1;
            }
        }
        let parent: Vec<u32> = order
            .iter()
            .map(|&i| match s.parent[i as usize] {
                NO_PARENT => NO_PARENT,
                p => level_of[p as usize],
            })
            .collect();
        // Children of v are contiguous in the next level, in v's order.
        let mut child_start = vec![0u32; n + 1];
        for v in 0..n {
            child_start[v + 1] = child_start[v] + children_count[order[v] as usize];
        }
        // Level 0 has no parents: children of v start after the roots.
        let roots = forest.tree_count() as u32;
        for c in &mut child_start {
            *c += roots;
        }

        let at = |a: &Vec<f32>| -> Vec<f32> { order.iter().map(|&i| a[i as usize]).collect() };
        let length = at(&s.length);
        let mass = at(&s.mass);
        // Tips first (level order reversed), so every child's thickness is known before its
        // parent's.
        let mut thickness: Vec<f32> = order
            .iter()
            .map(|&i| params.thickness(s.radius_base[i as usize], s.radius_tip[i as usize]))
            .collect();
        for v in (0..n).rev() {
            let carried: f32 = (child_start[v]..child_start[v + 1])
                .map(|c| thickness[c as usize] * thickness[c as usize])
                .sum();
            thickness[v] = thickness[v].max(carried.sqrt());
        }
        let centroid: Vec<f32> = order
            .iter()
            .map(|&i| {
                let i = i as usize;
                frustum_centroid(s.length[i], s.radius_base[i], s.radius_tip[i])
            })
            .collect();
        let inertia: Vec<f32> = (0..n).map(|v| mass[v] * length[v] * length[v] / 3.0).collect();
        let stiffness: Vec<f32> = thickness.iter().map(|&r| params.stiffness(r)).collect();
        let (w2, den): (Vec<f32>, Vec<f32>) = (0..n)
            .map(|v| kernels::spring_constants(stiffness[v], inertia[v], params.dt))
            .unzip();
        let damping_gain: Vec<f32> = (0..n).map(|v| params.damping(thickness[v]) / inertia[v]).collect();
        let wind_gain: Vec<f32> = order
            .iter()
            .enumerate()
            .map(|(v, &i)| {
                let i = i as usize;
                params.sigma * (s.radius_base[i] + s.radius_tip[i]) * s.length[i] / inertia[v]
            })
            .collect();
        let weight_gain: Vec<f32> = (0..n).map(|v| mass[v] * params.gravity / inertia[v]).collect();
        let propagation: Vec<f32> = (0..n)
            .map(|v| match parent[v] {
                NO_PARENT => 0.0,
                p => {
                    let p = p as usize;
                    params.propagation * thickness[v] / thickness[p] * stiffness[v] / inertia[p]
                }
            })
            .collect();
        let rest: Vec<Quat> = order
            .iter()
            .map(|&i| mapping::relative_rotation(s.shape[0][i as usize], s.shape[1][i as usize]))
            .collect();
        let mut rest_world = vec![Quat::IDENTITY; n];
        for v in 0..n {
            let pq = match parent[v] {
                NO_PARENT => Quat::IDENTITY,
                p => rest_world[p as usize],
            };
            rest_world[v] = (pq * rest[v]).normalize();
        }
        let compensate = forest.material.compensate_gravity;
        let weight_rest: Vec<Vec3> = (0..n)
            .map(|v| {
                if !compensate {
                    return Vec3::ZERO;
                }
                let c = segment_axis(rest_world[v]) * centroid[v];
                c.cross(Vec3::new(0.0, -weight_gain[v], 0.0))
            })
            .collect();
        let root_base = forest.trees.iter().map(|t| t.root).collect();
        let mut leaf_start = Vec::with_capacity(n + 1);
        leaf_start.push(0u32);
        for &i in &order {
            let count = forest.leaves_of(i as usize).len() as u32;
            leaf_start.push(leaf_start[leaf_start.len() - 1] + count);
        }
        let forest_leaf = order.iter().map(|&i| s.leaf_start[i as usize]).collect();
        let body = (0..n)
            .map(|v| SegmentBody {
                weight_rest: weight_rest[v],
                centroid: centroid[v],
                wind_gain: wind_gain[v],
                weight_gain: weight_gain[v],
                damping_gain: damping_gain[v],
                w2: w2[v],
                den: den[v],
                propagation: propagation[v],
            })
            .collect();
        Levels {
            order,
            level_of,
            starts,
            parent,
            child_start,
            root_base,
            leaf_start,
            forest_leaf,
            length,
            inertia,
            thickness,
            body,
            rest,
            rest_world,
            drag_law: forest.material.drag_law,
        }
    }

    /// Number of depth levels.
    pub fn count(&self) -> usize {
        self.starts.len() - 1
    }

    /// Segments (level indices) of level `d`.
    pub fn level(&self, d: usize) -> std::ops::Range<usize> {
        self.starts[d] as usize..self.starts[d + 1] as usize
    }

    /// Bytes held (capacities).
    pub fn heap_bytes(&self) -> usize {
        fn b<T>(v: &Vec<T>) -> usize {
            v.capacity() * size_of::<T>()
        }
        b(&self.order)
            + b(&self.level_of)
            + b(&self.starts)
            + b(&self.parent)
            + b(&self.child_start)
            + b(&self.root_base)
            + b(&self.leaf_start)
            + b(&self.forest_leaf)
            + b(&self.length)
            + b(&self.inertia)
            + b(&self.thickness)
            + b(&self.body)
            + b(&self.rest)
            + b(&self.rest_world)
    }
}
