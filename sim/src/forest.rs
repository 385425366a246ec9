//! The forest: parallel arrays (SoA) over all segments of all trees and over all leaves.
//!
//! Invariants (checked by [`Forest::validate`]):
//! - Trees are contiguous: tree t owns segments `trees[t].segments` and leaves `trees[t].leaves`,
//!   in tree order, tiling both arrays.
//! - `parent[i] < i` inside the same tree; each tree's first segment is its only root
//!   (`parent == NO_PARENT`). A root-to-tip pass is an ascending loop, tip-to-root descending.
//! - Each tree's segments are split into blocks that tile it in order. The first block is the
//!   *top* of the tree (the root and every segment whose subtree is larger than the block size);
//!   every other block is one whole subtree whose root's parent lies in the top block. Inside a
//!   block segments are sorted by depth, and `level_starts` records where each depth begins, so a
//!   block is both a contiguous job (Weber's subtree queue) and a set of level-by-level sweeps.
//! - Leaves are sorted by segment: segment i owns leaves `leaf_start[i]..leaf_start[i + 1]`.
//!
//! Static data only: the simulation owns the dynamic state (angles, velocities, poses).

use std::ops::Range;

use glam::{Quat, Vec3};

use crate::dynamics::weber::mapping;
use crate::error::SimError;
use crate::material::Material;
use crate::skeleton::Skeleton;

/// `parent` of a tree's root.
pub const NO_PARENT: u32 = u32::MAX;

/// Quantisation of a leaf's position along its segment.
const ALONG_SCALE: f32 = 65535.0;
/// Quantisation of leaf length: units of 0.1 mm, so at most 6.5535 m.
const LEAF_LENGTH_UNIT: f32 = 1.0e-4;
/// Quantisation of unit quaternions stored as four i16.
const QUAT_SCALE: f32 = 32767.0;

/// Packs a unit quaternion into four signed 16-bit integers.
#[inline(always)]
pub fn pack_quat(q: Quat) -> [i16; 4] {
    // Round half away from zero with a truncating cast: `f32::round` is a library call on
    // baseline x86-64, and this runs for every leaf every step.
    let quantise = |x: f32| (x * QUAT_SCALE + 0.5f32.copysign(x)) as i16;
    let v = q.to_array();
    [quantise(v[0]), quantise(v[1]), quantise(v[2]), quantise(v[3])]
}

/// Unpacks [`pack_quat`] (renormalised).
#[inline(always)]
pub fn unpack_quat(p: [i16; 4]) -> Quat {
    Quat::from_xyzw(p[0] as f32, p[1] as f32, p[2] as f32, p[3] as f32).normalize()
}

/// One tree's ranges in the forest arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeInfo {
    /// The tree's segments, a range of the segment arrays.
    pub segments: Range<u32>,
    /// The tree's leaves, a range of the leaf arrays.
    pub leaves: Range<u32>,
    /// The tree's blocks, a range of [`Forest::blocks`]: its top first, then one per subtree.
    pub blocks: Range<u32>,
    /// World position of the root segment's base.
    pub root: Vec3,
    /// Mean width/length ratio of the tree's leaves (leaf width is stored per tree).
    pub leaf_aspect: f32,
    /// Upper bound of the distance from the root to any point of the tree, in any pose: the
    /// longest chain of segments plus the largest radius \[m\].
    pub reach: f32,
}

/// A contiguous, depth-sorted run of segments: a tree's top or one subtree.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// The block's segments, a range of the segment arrays.
    pub segments: Range<u32>,
    /// Indices into `Forest::level_starts`: one entry per depth level in the block.
    pub levels: Range<u32>,
    /// Depth (segments from the tree's root) of the block's first level.
    pub depth0: u32,
}

/// Static per-segment arrays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SegmentData {
    /// Index of the parent segment, [`NO_PARENT`] for a tree's root.
    pub parent: Vec<u32>,
    /// Length \[m\].
    pub length: Vec<f32>,
    /// Radius at the base \[m\].
    pub radius_base: Vec<f32>,
    /// Radius at the tip \[m\].
    pub radius_tip: Vec<f32>,
    /// Wood plus leaves \[kg\].
    pub mass: Vec<f32>,
    /// Inertia of the segment's angle [kg·m²]: the diagonal of the mass matrix in absolute
    /// angles, I = m·l²/3 + M_out·l². Turning a segment's absolute angle swings the segment
    /// about its base (a rod, m·l²/3) and carries everything outboard of it along with its tip
    /// (mass M_out at distance l), since outboard segments keep their absolute angles.
    pub inertia: Vec<f32>,
    /// Relative angles (Θx, Θz) of the generated shape, in Weber's mapping (the inverse of
    /// Eqs. 3 and 4 applied to the segment's direction in its parent's frame).
    pub shape: [Vec<f32>; 2],
    /// Rest angles of the springs relative to the parent. Equal to `shape`, or pre-stressed so
    /// the shape is the equilibrium under gravity (see `Material::compensate_gravity`).
    pub rest: [Vec<f32>; 2],
    /// Angular spring constant k of the joint at the segment's base [N·m/rad]
    /// ([`Material::stiffness_of`]).
    pub stiffness: Vec<f32>,
    /// Structural damping c of that joint [N·m·s/rad].
    pub damping: Vec<f32>,
    /// Linear drag of bark and leaves [N·s/m]: wind force = drag · wind velocity.
    pub drag: Vec<f32>,
    /// The leaves' part of `drag` [N·s/m]: in a wind field it acts with the wind at the leaves'
    /// own positions, the rest with the wind at the segment's centre.
    pub leaf_drag: Vec<f32>,
    /// Segment i owns leaves `leaf_start[i]..leaf_start[i + 1]`; one more entry than segments.
    pub leaf_start: Vec<u32>,
}

impl SegmentData {
    /// Segment `i`'s effective mass at its tip \[kg\]: its inertia over its length squared,
    /// the mass a push at its end moves.
    pub fn end_mass(&self, i: usize) -> f32 {
        self.inertia[i] / (self.length[i] * self.length[i])
    }
}

/// Static per-leaf arrays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeafData {
    /// Position along the segment, 0..=65535 for base..tip.
    pub along: Vec<u16>,
    /// Blade length in units of 0.1 mm.
    pub length: Vec<u16>,
    /// Orientation relative to the segment's frame, packed.
    pub rest: Vec<[i16; 4]>,
}

impl LeafData {
    /// Leaf `i`'s position along its segment, 0 at the base and 1 at the tip.
    #[inline(always)]
    pub fn along_f32(&self, i: usize) -> f32 {
        self.along[i] as f32 / ALONG_SCALE
    }
    /// Leaf `i`'s blade length \[m\].
    #[inline(always)]
    pub fn length_m(&self, i: usize) -> f32 {
        self.length[i] as f32 * LEAF_LENGTH_UNIT
    }
}

/// Static data of every tree in a scene.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Forest {
    /// Each tree's ranges, in order.
    pub trees: Vec<TreeInfo>,
    /// Every tree's blocks, tree by tree.
    pub blocks: Vec<Block>,
    /// Where each depth level of each block starts (segment indices), indexed by [`Block::levels`].
    pub level_starts: Vec<u32>,
    /// Static per-segment data.
    pub seg: SegmentData,
    /// Static per-leaf data.
    pub leaf: LeafData,
    /// The material the masses, springs and drag were derived from.
    pub material: Material,
}

/// A tree to place in a forest.
pub struct TreePlacement<'a> {
    /// The tree to place.
    pub skeleton: &'a Skeleton,
    /// Where the skeleton's origin goes in the world.
    pub position: Vec3,
}

/// Largest number of segments in a whole forest (indices are 32-bit).
pub const MAX_FOREST_SEGMENTS: usize = 1 << 30;

/// Test-only: the forest of the one tree `skel` standing at the origin, in `material`.
#[cfg(test)]
pub(crate) fn at_origin(skel: &Skeleton, material: &Material) -> Forest {
    Forest::build(
        &[TreePlacement {
            skeleton: skel,
            position: Vec3::ZERO,
        }],
        material,
    )
    .expect("a valid test tree")
}

/// The order a tree's segments take in a forest (see the module documentation): by block, then
/// depth, then the skeleton's own index.
struct TreeOrder {
    /// Each skeleton segment's depth (the root 0).
    depth: Vec<u32>,
    /// Each skeleton segment's block within its tree (0: the top).
    block_of: Vec<u32>,
    /// The skeleton's segment indices in forest order.
    order: Vec<usize>,
}

impl TreeOrder {
    fn of(skel: &Skeleton) -> TreeOrder {
        let n = skel.segments.len();
        // Subtree sizes and depths in the skeleton's own order (parents first).
        let mut depth = vec![0u32; n];
        for i in 1..n {
            depth[i] = depth[skel.segments[i].parent.unwrap() as usize] + 1;
        }
        let mut size = vec![1usize; n];
        for i in (1..n).rev() {
            size[skel.segments[i].parent.unwrap() as usize] += size[i];
        }
        // Top of the tree: every segment whose subtree exceeds the block size (a connected set
        // containing the root, since subtrees shrink going out). Subtree jobs then carry at most
        // `block_size` segments: coarse enough to be worth a job, fine enough to balance.
        let block_size = (n / 16).max(64);
        let in_top: Vec<bool> = (0..n).map(|i| i == 0 || size[i] > block_size).collect();

        // Block membership: the top, or the subtree rooted at a non-top child of a top segment.
        let mut block_of = vec![0u32; n];
        let mut block_roots: Vec<usize> = Vec::new();
        for i in 1..n {
            let p = skel.segments[i].parent.unwrap() as usize;
            if in_top[i] {
                block_of[i] = 0;
            } else if in_top[p] {
                block_roots.push(i);
                block_of[i] = block_roots.len() as u32;
            } else {
                block_of[i] = block_of[p];
            }
        }
        // New order: by block, then depth, then original index.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| (block_of[i], depth[i], i));
        TreeOrder { depth, block_of, order }
    }
}

/// Where each of a tree's segments goes in a forest built of it: entry `i` is skeleton segment
/// `i`'s index within its tree's range (`TreeInfo::segments`; add the range's start for the
/// forest index). Expects a skeleton that passes `Skeleton::validate`.
pub fn forest_indices(skel: &Skeleton) -> Vec<u32> {
    let order = TreeOrder::of(skel).order;
    let mut index = vec![0u32; order.len()];
    for (k, &i) in order.iter().enumerate() {
        index[i] = k as u32;
    }
    index
}

impl Forest {
    /// Segments of all trees.
    pub fn segment_count(&self) -> usize {
        self.seg.parent.len()
    }
    /// Leaves of all trees.
    pub fn leaf_count(&self) -> usize {
        self.leaf.along.len()
    }
    /// Trees.
    pub fn tree_count(&self) -> usize {
        self.trees.len()
    }

    /// The tree a segment belongs to.
    pub fn tree_of(&self, segment: usize) -> usize {
        self.trees.partition_point(|t| t.segments.end as usize <= segment)
    }

    /// Leaves of segment `i`.
    #[inline(always)]
    pub fn leaves_of(&self, i: usize) -> Range<usize> {
        self.seg.leaf_start[i] as usize..self.seg.leaf_start[i + 1] as usize
    }

    /// Segment ranges of the depth levels of block `b`.
    pub fn block_levels(&self, b: usize) -> impl Iterator<Item = Range<usize>> + '_ {
        let block = &self.blocks[b];
        let starts = &self.level_starts[block.levels.start as usize..block.levels.end as usize];
        let end = block.segments.end as usize;
        (0..starts.len()).map(move |k| starts[k] as usize..starts.get(k + 1).map_or(end, |s| *s as usize))
    }

    /// Depth of every segment (0 for roots), from the block level tables.
    pub fn depths(&self) -> Vec<u32> {
        let mut depth = vec![0u32; self.segment_count()];
        for (b, block) in self.blocks.iter().enumerate() {
            for (k, range) in self.block_levels(b).enumerate() {
                for d in &mut depth[range] {
                    *d = block.depth0 + k as u32;
                }
            }
        }
        depth
    }

    /// Builds a forest from tree skeletons. Masses, springs, dampers and drag follow from the
    /// geometry through `material`.
    pub fn build(trees: &[TreePlacement<'_>], material: &Material) -> Result<Forest, SimError> {
        material.validate()?;
        let total: usize = trees.iter().map(|t| t.skeleton.segments.len()).sum();
        if total > MAX_FOREST_SEGMENTS {
            return Err(SimError::param(
                "segments",
                total,
                format!("a forest holds at most {MAX_FOREST_SEGMENTS} segments"),
            ));
        }
        let total_leaves: usize = trees.iter().map(|t| t.skeleton.leaves.len()).sum();
        if total_leaves > u32::MAX as usize - 1 {
            return Err(SimError::param(
                "leaves",
                total_leaves,
                format!("a forest holds at most {} leaves", u32::MAX - 1),
            ));
        }
        let mut f = Forest {
            material: *material,
            ..Default::default()
        };
        let s = &mut f.seg;
        for v in [
            &mut s.length,
            &mut s.radius_base,
            &mut s.radius_tip,
            &mut s.mass,
            &mut s.inertia,
            &mut s.stiffness,
            &mut s.damping,
            &mut s.drag,
            &mut s.leaf_drag,
        ] {
            v.reserve_exact(total);
        }
        for v in s.shape.iter_mut().chain(s.rest.iter_mut()) {
            v.reserve_exact(total);
        }
        s.parent.reserve_exact(total);
        s.leaf_start.reserve_exact(total + 1);
        f.leaf.along.reserve_exact(total_leaves);
        f.leaf.length.reserve_exact(total_leaves);
        f.leaf.rest.reserve_exact(total_leaves);
        for (t, placement) in trees.iter().enumerate() {
            placement.skeleton.validate().map_err(|e| match e {
                SimError::Skeleton(msg) => SimError::Skeleton(format!("tree {t}: {msg}")),
                other => other,
            })?;
            if !placement.position.is_finite() {
                return Err(SimError::param(
                    "tree position",
                    format!("{:?}", placement.position),
                    "must be finite",
                ));
            }
            f.append_tree(placement, material)?;
        }
        f.seg.leaf_start.push(f.leaf.along.len() as u32);
        f.validate()?;
        Ok(f)
    }

    fn append_tree(&mut self, placement: &TreePlacement<'_>, material: &Material) -> Result<(), SimError> {
        let skel = placement.skeleton;
        let n = skel.segments.len();
        let offset = self.seg.parent.len();

        let TreeOrder { depth, block_of, order } = TreeOrder::of(skel);
        let mut new_index = vec![0u32; n];
        for (k, &i) in order.iter().enumerate() {
            new_index[i] = (offset + k) as u32;
        }

        // Blocks and their depth levels.
        let first_block = self.blocks.len() as u32;
        let mut k = 0;
        while k < n {
            let b = block_of[order[k]];
            let start = k;
            let level_start = self.level_starts.len() as u32;
            let depth0 = depth[order[k]];
            let mut last_depth = None;
            while k < n && block_of[order[k]] == b {
                if last_depth != Some(depth[order[k]]) {
                    self.level_starts.push((offset + k) as u32);
                    last_depth = Some(depth[order[k]]);
                }
                k += 1;
            }
            self.blocks.push(Block {
                segments: (offset + start) as u32..(offset + k) as u32,
                levels: level_start..self.level_starts.len() as u32,
                depth0,
            });
        }

        // Shape angles and orientations in the skeleton's order (parents first): the inverse of
        // Weber's mapping turns each segment's direction, seen from its parent's frame, into
        // relative angles; composing the mapped rotations reproduces every direction.
        let mut orient = vec![Quat::IDENTITY; n];
        let mut rel = vec![(0.0f32, 0.0f32); n];
        for i in 0..n {
            let s = &skel.segments[i];
            let parent_q = s.parent.map_or(Quat::IDENTITY, |p| orient[p as usize]);
            let local = parent_q.inverse() * (s.tip - s.base).normalize();
            let (x, z) = mapping::angles_for_direction(local);
            rel[i] = (x, z);
            orient[i] = (parent_q * mapping::relative_rotation(x, z)).normalize();
        }

        let mut chain = vec![0.0f32; n];
        let mut reach = 0.0f32;
        for i in 0..n {
            let s = &skel.segments[i];
            chain[i] = s.parent.map_or(0.0, |p| chain[p as usize]) + s.length();
            reach = reach.max(chain[i] + s.radius_base.max(s.radius_tip));
        }

        // Leaves per segment and their area and mass.
        let mut leaf_area = vec![0.0f32; n];
        let mut leaf_count = vec![0u32; n];
        let mut aspect_sum = 0.0f64;
        for leaf in &skel.leaves {
            leaf_area[leaf.segment as usize] += leaf.area();
            leaf_count[leaf.segment as usize] += 1;
            aspect_sum += (leaf.width / leaf.length) as f64;
            if leaf.length > 65535.0 * LEAF_LENGTH_UNIT {
                return Err(SimError::param("leaf length", leaf.length, "must be at most 6.5535 m"));
            }
        }

        let mut leaf_first = vec![0u32; n];
        let mut running = self.leaf.along.len() as u32;
        for &i in &order {
            leaf_first[i] = running;
            running += leaf_count[i];
        }
        let leaf_begin = self.leaf.along.len();
        let leaves_total = skel.leaves.len();
        self.leaf.along.resize(leaf_begin + leaves_total, 0);
        self.leaf.length.resize(leaf_begin + leaves_total, 0);
        self.leaf.rest.resize(leaf_begin + leaves_total, [0; 4]);
        let mut fill = leaf_first.clone();
        for leaf in &skel.leaves {
            let seg = leaf.segment as usize;
            let slot = fill[seg] as usize;
            fill[seg] += 1;
            self.leaf.along[slot] = (leaf.along * ALONG_SCALE).round() as u16;
            self.leaf.length[slot] = (leaf.length / LEAF_LENGTH_UNIT).round().clamp(1.0, 65535.0) as u16;
            self.leaf.rest[slot] = pack_quat((orient[seg].inverse() * leaf.orientation).normalize());
        }

        // Masses: a frustum of wood plus the leaves; and the mass outboard of each segment.
        let mass: Vec<f32> = (0..n)
            .map(|i| {
                let g = &skel.segments[i];
                let (l, r0, r1) = (g.length(), g.radius_base, g.radius_tip);
                let wood = material.wood_density * std::f32::consts::PI * l * (r0 * r0 + r0 * r1 + r1 * r1) / 3.0;
                wood + material.leaf_mass_per_area * leaf_area[i]
            })
            .collect();
        let mut outboard = vec![0.0f64; n];
        for i in (1..n).rev() {
            let p = skel.segments[i].parent.unwrap() as usize;
            outboard[p] += outboard[i] + mass[i] as f64;
        }

        // Per-segment physical data, in the new order.
        let s = &mut self.seg;
        for &i in &order {
            let g = &skel.segments[i];
            let l = g.length();
            let (r0, r1) = (g.radius_base, g.radius_tip);
            let mass = mass[i];
            let inertia = mass * l * l / 3.0 + outboard[i] as f32 * l * l;
            let k = material.stiffness_of(r0, l, g.parent.is_none());
            s.parent.push(g.parent.map_or(NO_PARENT, |p| new_index[p as usize]));
            s.length.push(l);
            s.radius_base.push(r0);
            s.radius_tip.push(r1);
            s.mass.push(mass);
            s.inertia.push(inertia);
            s.shape[0].push(rel[i].0);
            s.shape[1].push(rel[i].1);
            s.rest[0].push(rel[i].0);
            s.rest[1].push(rel[i].1);
            s.stiffness.push(k);
            s.damping.push(material.damping_of(r0, k, inertia));
            s.drag
                .push(material.wood_drag * (r0 + r1) * l + material.leaf_drag * leaf_area[i]);
            s.leaf_drag.push(material.leaf_drag * leaf_area[i]);
            s.leaf_start.push(leaf_first[i]);
        }

        self.trees.push(TreeInfo {
            segments: offset as u32..(offset + n) as u32,
            leaves: leaf_begin as u32..(leaf_begin + leaves_total) as u32,
            blocks: first_block..self.blocks.len() as u32,
            root: placement.position + skel.segments[0].base,
            leaf_aspect: if leaves_total > 0 {
                (aspect_sum / leaves_total as f64) as f32
            } else {
                0.5
            },
            reach,
        });
        Ok(())
    }

    /// Checks every layout invariant listed in the module documentation, and that the physical
    /// data is finite and in range.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |msg: String| Err(SimError::Invariant(msg));
        let n = self.segment_count();
        let s = &self.seg;
        let lens = [
            s.length.len(),
            s.radius_base.len(),
            s.radius_tip.len(),
            s.mass.len(),
            s.inertia.len(),
            s.shape[0].len(),
            s.shape[1].len(),
            s.rest[0].len(),
            s.rest[1].len(),
            s.stiffness.len(),
            s.damping.len(),
            s.drag.len(),
            s.leaf_drag.len(),
        ];
        if lens.iter().any(|&l| l != n) || s.leaf_start.len() != n + 1 {
            return bad(format!(
                "segment arrays have different lengths: {lens:?}, leaf_start {}",
                s.leaf_start.len()
            ));
        }
        let m = self.leaf_count();
        if self.leaf.length.len() != m || self.leaf.rest.len() != m {
            return bad("leaf arrays have different lengths".into());
        }
        let mut seg_cursor = 0u32;
        let mut leaf_cursor = 0u32;
        let mut block_cursor = 0u32;
        for (t, tree) in self.trees.iter().enumerate() {
            if tree.segments.start != seg_cursor || tree.segments.is_empty() {
                return bad(format!(
                    "tree {t}: segments {:?} do not continue at {seg_cursor}",
                    tree.segments
                ));
            }
            if tree.leaves.start != leaf_cursor || s.leaf_start[tree.segments.start as usize] != tree.leaves.start {
                return bad(format!(
                    "tree {t}: leaves {:?} do not continue at {leaf_cursor}",
                    tree.leaves
                ));
            }
            if tree.blocks.start != block_cursor || tree.blocks.is_empty() {
                return bad(format!(
                    "tree {t}: blocks {:?} do not continue at {block_cursor}",
                    tree.blocks
                ));
            }
            seg_cursor = tree.segments.end;
            leaf_cursor = tree.leaves.end;
            block_cursor = tree.blocks.end;
            let root = tree.segments.start as usize;
            if s.parent[root] != NO_PARENT {
                return bad(format!("tree {t}: its first segment {root} is not a root"));
            }
            for i in root + 1..tree.segments.end as usize {
                let p = s.parent[i];
                if p == NO_PARENT || p as usize >= i || (p as usize) < root {
                    return bad(format!("segment {i}: parent {p} must lie in its tree before it"));
                }
            }
            let top = &self.blocks[tree.blocks.start as usize];
            if top.segments.start as usize != root || top.depth0 != 0 {
                return bad(format!("tree {t}: its first block does not start at its root"));
            }
            let mut block_start = tree.segments.start;
            for b in tree.blocks.start as usize..tree.blocks.end as usize {
                let block = &self.blocks[b];
                if block.segments.start != block_start || block.segments.is_empty() || block.levels.is_empty() {
                    return bad(format!(
                        "block {b}: segments {:?} do not continue at {block_start}",
                        block.segments
                    ));
                }
                block_start = block.segments.end;
                if self.level_starts[block.levels.start as usize] != block.segments.start {
                    return bad(format!("block {b}: first level does not start at the block start"));
                }
                for (k, range) in self.block_levels(b).enumerate() {
                    if range.is_empty() {
                        return bad(format!("block {b}: level {k} is empty"));
                    }
                    for i in range {
                        let p = s.parent[i];
                        let ok = if k > 0 {
                            // Parent in the previous level of the same block.
                            let prev = self.level_starts[block.levels.start as usize + k - 1] as usize;
                            let cur = self.level_starts[block.levels.start as usize + k] as usize;
                            (prev..cur).contains(&(p as usize))
                        } else if b == tree.blocks.start as usize {
                            i == root
                        } else {
                            // A subtree block's root hangs from the top block.
                            top.segments.contains(&p)
                        };
                        if !ok {
                            return bad(format!(
                                "segment {i} (block {b}, level {k}): parent {p} breaks the depth order"
                            ));
                        }
                    }
                }
                if b > tree.blocks.start as usize {
                    let parent_of_root = s.parent[block.segments.start as usize] as usize;
                    let depth_parent = self.depth_in_top(tree, parent_of_root);
                    if depth_parent.map(|d| d + 1) != Some(block.depth0) {
                        return bad(format!(
                            "block {b}: depth0 {} does not follow its parent's depth",
                            block.depth0
                        ));
                    }
                }
            }
            if block_start != tree.segments.end {
                return bad(format!(
                    "tree {t}: blocks end at {block_start}, segments at {}",
                    tree.segments.end
                ));
            }
        }
        if seg_cursor as usize != n || leaf_cursor as usize != m || block_cursor as usize != self.blocks.len() {
            return bad("trees do not cover the arrays".into());
        }
        for i in 0..n {
            if s.leaf_start[i + 1] < s.leaf_start[i] {
                return bad(format!("segment {i}: leaf_start decreases"));
            }
            let finite_pos = s.length[i] > 0.0
                && s.length[i].is_finite()
                && s.radius_base[i] > 0.0
                && s.radius_tip[i] > 0.0
                && s.mass[i] > 0.0
                && s.mass[i].is_finite()
                && s.inertia[i] > 0.0
                && s.inertia[i].is_finite();
            let finite_phys = s.stiffness[i] >= 0.0
                && s.stiffness[i].is_finite()
                && s.damping[i] >= 0.0
                && s.damping[i].is_finite()
                && s.drag[i] >= 0.0
                && s.drag[i].is_finite()
                && s.leaf_drag[i] >= 0.0
                && s.leaf_drag[i] <= s.drag[i]
                && (0..2).all(|p| s.rest[p][i].is_finite() && s.shape[p][i].is_finite());
            if !(finite_pos && finite_phys) {
                return bad(format!("segment {i}: non-finite or out-of-range physical data"));
            }
        }
        if s.leaf_start[n] as usize != m {
            return bad("the last leaf_start must equal the leaf count".into());
        }
        Ok(())
    }

    fn depth_in_top(&self, tree: &TreeInfo, seg: usize) -> Option<u32> {
        let top = tree.blocks.start as usize;
        self.block_levels(top).position(|r| r.contains(&seg)).map(|k| k as u32)
    }

    /// Bytes held by the static arrays (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        fn b<T>(v: &Vec<T>) -> usize {
            v.capacity() * size_of::<T>()
        }
        let s = &self.seg;
        b(&s.parent)
            + b(&s.length)
            + b(&s.radius_base)
            + b(&s.radius_tip)
            + b(&s.mass)
            + b(&s.inertia)
            + b(&s.shape[0])
            + b(&s.shape[1])
            + b(&s.rest[0])
            + b(&s.rest[1])
            + b(&s.stiffness)
            + b(&s.damping)
            + b(&s.drag)
            + b(&s.leaf_drag)
            + b(&s.leaf_start)
            + b(&self.leaf.along)
            + b(&self.leaf.length)
            + b(&self.leaf.rest)
            + b(&self.trees)
            + b(&self.blocks)
            + b(&self.level_starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testtree::test_tree;

    fn forest_of(sizes: &[(usize, usize)]) -> Forest {
        let skels: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(k, &(n, m))| test_tree(k as u64, n, m).unwrap())
            .collect();
        let placements: Vec<_> = skels
            .iter()
            .enumerate()
            .map(|(k, s)| TreePlacement {
                skeleton: s,
                position: Vec3::new(10.0 * k as f32, 0.0, 0.0),
            })
            .collect();
        Forest::build(&placements, &Material::default()).unwrap()
    }

    #[test]
    fn layout_invariants_hold() {
        let f = forest_of(&[(2246, 6840), (1, 3), (907, 1530), (64, 0), (300, 20)]);
        f.validate().unwrap();
        assert_eq!(f.segment_count(), 2246 + 1 + 907 + 64 + 300);
        assert_eq!(f.leaf_count(), 6840 + 3 + 1530 + 20);
        assert!(f.blocks.len() > 10);
        assert_eq!(f.tree_of(0), 0);
        assert_eq!(f.tree_of(2246), 1);
        assert_eq!(f.tree_of(2247), 2);
        // Subtree blocks respect the size bound.
        let t = &f.trees[0];
        for b in t.blocks.start as usize + 1..t.blocks.end as usize {
            assert!(f.blocks[b].segments.len() <= 2246 / 16);
        }
    }

    #[test]
    fn forest_indices_say_where_each_skeleton_segment_went() {
        let skel = test_tree(5, 700, 50).unwrap();
        let f = at_origin(&skel, &Material::default());
        let index = forest_indices(&skel);
        let pose = crate::dynamics::pose::Pose::of_shape(&f);
        let mut seen = vec![false; index.len()];
        for (i, s) in skel.segments.iter().enumerate() {
            let k = index[i] as usize;
            assert!(!std::mem::replace(&mut seen[k], true), "segment {i} shares index {k}");
            assert!((f.seg.length[k] - s.length()).abs() < 1e-6);
            let parent = s.parent.map_or(NO_PARENT, |p| index[p as usize]);
            assert_eq!(f.seg.parent[k], parent, "segment {i}");
            // Its base, in the forest's rest pose, is where the skeleton has it.
            assert!(pose.base[k].distance(s.base) < 1e-3, "segment {i}");
        }
    }

    #[test]
    fn validate_catches_broken_order() {
        let mut f = forest_of(&[(300, 10)]);
        f.seg.parent[10] = 20;
        assert!(matches!(f.validate(), Err(SimError::Invariant(_))));
        let mut f = forest_of(&[(300, 10)]);
        f.seg.leaf_start[5] = 1000;
        assert!(f.validate().is_err());
        let mut f = forest_of(&[(300, 10)]);
        f.seg.length[3] = f32::NAN;
        assert!(f.validate().is_err());
    }

    #[test]
    fn shape_angles_reproduce_directions() {
        let skel = test_tree(3, 500, 100).unwrap();
        let f = at_origin(&skel, &Material::default());
        // Rebuild world directions from the stored angles and compare with the skeleton's,
        // matched through the segment lengths and parent structure by walking both orders.
        let n = f.segment_count();
        let mut q = vec![Quat::IDENTITY; n];
        let mut dirs = Vec::with_capacity(n);
        for i in 0..n {
            let p = f.seg.parent[i];
            let pq = if p == NO_PARENT { Quat::IDENTITY } else { q[p as usize] };
            q[i] = pq * mapping::relative_rotation(f.seg.shape[0][i], f.seg.shape[1][i]);
            dirs.push(q[i] * Vec3::Y);
        }
        let mut want: Vec<Vec3> = skel.segments.iter().map(|s| (s.tip - s.base).normalize()).collect();
        let mut got = dirs.clone();
        let key = |v: &Vec3| {
            (v.x * 1e4).round() as i64 * 1_000_000_000
                + (v.y * 1e4).round() as i64 * 100_000
                + (v.z * 1e4).round() as i64
        };
        want.sort_by_key(key);
        got.sort_by_key(key);
        let matched = want
            .iter()
            .zip(&got)
            .filter(|(a, b)| (**a - **b).length() < 1e-3)
            .count();
        assert!(matched as f32 > 0.99 * n as f32, "{matched} of {n}");
    }

    #[test]
    fn quaternion_packing_round_trips() {
        let q = Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.2, 2.0);
        let r = unpack_quat(pack_quat(q));
        assert!(q.angle_between(r) < 1e-4, "{}", q.angle_between(r));
    }
}
