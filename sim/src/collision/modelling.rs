//! Collision-free modelling (Chen 2011 §3.2–3.3): a pass any skeleton can go through, after
//! which no two unconnected primitives of the tree intersect.
//!
//! The stems are built as Algorithm 1 grows them, breadth first, but by branching level: the
//! trunk first, then the branches off it, then theirs (a segment continues its parent's stem
//! when it is the best-aligned child, else starts a stem one level deeper), each level
//! generation by generation from its base. A skeleton that is already grown is built in that
//! order so that where two stems meet the thinner, later branch goes, never a trunk's top
//! for a twig. Each new stem's two pieces (root part and rest, see `connect`) are tested
//! against the pieces already built that are not connected to them, first by k-DOP overlap, then exactly, triangle against triangle (and
//! a vertex inside a prism). A stem that intersects is removed with everything that would
//! have grown from it; when its base radius exceeds [`CollisionFreeOptions::cut_radius`] the
//! branch is cut back to its branching stem, the visited stems removed too (Fig. 3.5). Then
//! the leaves, in order (Algorithm 2): a leaf that intersects an existing primitive is
//! dropped. Then the follow-up: a stem that had leaves and kept none, and has no children
//! left, is removed, with the chain back to its branching stem (§3.2, last paragraph).
//!
//! The voxel grid of §3.3 limits the tests: every piece is filed by its centreline's centre
//! in a cube of edge 2·SR, SR being the radius about that centre that holds it, so a piece
//! can only touch pieces filed in cubes next to its own (`voxel`, which keeps a level of
//! cubes per size of piece). Without the grid (`voxels: false`, for the benchmark Chen's
//! Table 6.1 makes) every built piece is a candidate.
//!
//! The result depends only on the skeleton and the options.

use std::time::Instant;

use glam::Vec3;

use super::connect::Topology;
pub use super::connect::NONE;
use super::kdop::DopK;
use super::primitives::{blade, intersect, Owner, Piece, Prism, Shape, MAX_SIDES, MIN_SIDES};
use super::voxel::VoxelGrid;
use crate::error::SimError;
use crate::skeleton::{Skeleton, SkeletonLeaf};

/// Most pieces (two per segment and two per leaf) a pass builds: about 1 GB of pieces.
pub const MAX_PIECES: usize = 4_000_000;
/// Segments of mid-venation a leaf's blade beyond its root part is built from.
pub const LEAF_JOINTS: u32 = 3;

/// Joints of a leaf part's blade: the root part is short, one stretch of mid-venation; the
/// rest has [`LEAF_JOINTS`]. The modelling pass and the run time build the same shapes.
pub fn leaf_joints(root: bool) -> u32 {
    if root {
        1
    } else {
        LEAF_JOINTS
    }
}

/// How the pass builds and tests the primitives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollisionFreeOptions {
    /// Faces of a stem's prism (3 to 32).
    pub sides: u32,
    /// The k-DOP the pieces are bounded by for the first test.
    pub k: DopK,
    /// A removed stem wider than this at its base \[m\] takes its branch back to the branching
    /// stem with it (Fig. 3.5), so that no thick stump is left.
    pub cut_radius: f32,
    /// File the pieces in the voxel grid of §3.3 (false: test every built piece).
    pub voxels: bool,
}

impl Default for CollisionFreeOptions {
    fn default() -> Self {
        CollisionFreeOptions {
            sides: 6,
            k: DopK::K14,
            cut_radius: 0.02,
            voxels: true,
        }
    }
}

impl CollisionFreeOptions {
    /// Checks every option, naming the one out of range.
    pub fn validate(&self) -> Result<(), SimError> {
        if !(MIN_SIDES..=MAX_SIDES).contains(&self.sides) {
            return Err(SimError::param(
                "collision-free prism sides",
                self.sides,
                format!("allowed: {MIN_SIDES} to {MAX_SIDES}"),
            ));
        }
        if !(self.cut_radius.is_finite() && self.cut_radius >= 0.0) {
            return Err(SimError::param(
                "collision-free cut radius",
                self.cut_radius,
                "allowed: a finite radius of 0 m or more",
            ));
        }
        Ok(())
    }
}

/// What the pass removed and what it cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CollisionFreeReport {
    /// Segments removed, for any reason (a removed stem's subtree included).
    pub removed_stems: usize,
    /// Leaves removed, for any reason (those on removed stems included).
    pub removed_leaves: usize,
    /// Stems that intersected a primitive built before them.
    pub intersecting_stems: usize,
    /// Leaves that intersected a primitive built before them.
    pub intersecting_leaves: usize,
    /// Stems removed for having lost all their leaves (with their chains).
    pub bare_stems: usize,
    /// Pairs of pieces whose k-DOPs were compared.
    pub kdop_tests: u64,
    /// Pairs of pieces tested exactly (their k-DOPs overlapped).
    pub exact_tests: u64,
    /// Wall time of the pass \[ms\].
    pub ms: f64,
}

impl std::ops::AddAssign for CollisionFreeReport {
    /// Adds another tree's figures (a grove's total).
    fn add_assign(&mut self, r: CollisionFreeReport) {
        self.removed_stems += r.removed_stems;
        self.removed_leaves += r.removed_leaves;
        self.intersecting_stems += r.intersecting_stems;
        self.intersecting_leaves += r.intersecting_leaves;
        self.bare_stems += r.bare_stems;
        self.kdop_tests += r.kdop_tests;
        self.exact_tests += r.exact_tests;
        self.ms += r.ms;
    }
}

/// The pieces built so far, filed in the voxel grid (when the pass uses it).
struct Built {
    pieces: Vec<Piece>,
    alive: Vec<bool>,
    grid: Option<VoxelGrid>,
}

impl Built {
    fn add(&mut self, piece: Piece) -> u32 {
        let id = self.pieces.len() as u32;
        if let Some(grid) = &mut self.grid {
            grid.insert(id, piece.centre, piece.reach);
        }
        self.pieces.push(piece);
        self.alive.push(true);
        id
    }

    /// Whether `piece` intersects a living built piece not connected to it.
    fn hits(&self, piece: &Piece, topo: &Topology, report: &mut CollisionFreeReport) -> bool {
        let test = |id: u32| -> bool {
            let other = &self.pieces[id as usize];
            if !self.alive[id as usize] {
                return false;
            }
            report.kdop_tests += 1;
            if !piece.kdop.overlaps(&other.kdop) || topo.connected(piece.owner, other.owner) {
                return false;
            }
            report.exact_tests += 1;
            intersect(piece, other)
        };
        match &self.grid {
            None => (0..self.pieces.len() as u32).any(test),
            Some(grid) => grid.any_near(piece.centre, piece.reach, test),
        }
    }
}

/// Segment i's two pieces (root part and rest; either may be empty).
fn stem_pieces(skel: &Skeleton, topo: &Topology, i: u32, opts: &CollisionFreeOptions) -> Vec<Piece> {
    let s = &skel.segments[i as usize];
    let len = s.length();
    let axis = (s.tip - s.base) / len;
    let at = |d: f32| {
        (
            s.base + axis * d,
            s.radius_base + (s.radius_tip - s.radius_base) * (d / len),
        )
    };
    let mut out = Vec::with_capacity(2);
    for (root, d0, d1) in topo.stem_parts(i) {
        if d1 <= d0 {
            continue;
        }
        let ((a, ra), (b, rb)) = (at(d0), at(d1));
        out.push(Piece::new(
            Owner::Stem { segment: i, root },
            Shape::Prism(Prism::new(a, b, ra, rb, opts.sides, axis)),
            opts.k,
            [a, b],
        ));
    }
    out
}

/// Leaf j's two pieces (root part and blade; either may be empty).
pub(crate) fn leaf_pieces(skel: &Skeleton, topo: &Topology, j: u32, k: DopK) -> Vec<Piece> {
    let leaf: &SkeletonLeaf = &skel.leaves[j as usize];
    let seg = &skel.segments[leaf.segment as usize];
    let attach = seg.base + (seg.tip - seg.base) * leaf.along;
    let along = leaf.orientation * Vec3::Y * leaf.length;
    let mut out = Vec::with_capacity(2);
    for (root, v0, v1) in topo.leaf_parts(j) {
        let joints = leaf_joints(root);
        if v1 <= v0 {
            continue;
        }
        let tris = blade(attach, leaf.orientation, leaf.length, leaf.width, v0, v1, joints);
        if tris.is_empty() {
            continue;
        }
        out.push(Piece::new(
            Owner::Leaf {
                leaf: j,
                segment: leaf.segment,
                root,
            },
            Shape::Blade(tris),
            k,
            [attach + along * v0, attach + along * v1],
        ));
    }
    out
}

/// The radius SR of §3.3 of `skel`'s primitives, about its centreline's centre a piece fits
/// in a sphere of SR (a stem: half its length and its largest radius; a leaf: half its length
/// and half its width): the smallest level's (the 5th percentile of the primitives', so that
/// a few tiny pieces do not make the grid's finest level finer than most pieces need) and the
/// largest, both at least 1 µm.
fn reach_range(skel: &Skeleton) -> (f32, f32) {
    let stems = skel.segments.iter().map(|s| {
        let r = s.radius_base.max(s.radius_tip);
        (0.25 * s.length() * s.length() + r * r).sqrt()
    });
    let leaves = skel
        .leaves
        .iter()
        .map(|l| (0.25 * l.length * l.length + 0.25 * l.width * l.width).sqrt());
    let mut all: Vec<f32> = stems.chain(leaves).filter(|r| r.is_finite()).collect();
    all.sort_by(f32::total_cmp);
    let lo = all.get(all.len() / 20).copied().unwrap_or(1e-6);
    let hi = all.last().copied().unwrap_or(1e-6);
    (lo.max(1e-6), hi.max(1e-6))
}

/// Refuses a skeleton whose pieces would be more than [`MAX_PIECES`], before building any.
pub fn check_size(skel: &Skeleton) -> Result<(), SimError> {
    let pieces = 2 * (skel.segments.len() + skel.leaves.len());
    if pieces > MAX_PIECES {
        return Err(SimError::param(
            "collision-free modelling",
            format!("{} segments and {} leaves", skel.segments.len(), skel.leaves.len()),
            format!(
                "at most {} segments and leaves together (two pieces each)",
                MAX_PIECES / 2
            ),
        ));
    }
    Ok(())
}

/// A tree after the pass.
#[derive(Clone, Debug)]
pub struct CollisionFree {
    /// The collision-free tree.
    pub skeleton: Skeleton,
    /// What was removed.
    pub report: CollisionFreeReport,
    /// Each segment's index in the new skeleton ([`NONE`] where removed).
    pub segment_map: Vec<u32>,
}

/// Runs the pass over `skel`: the collision-free tree and what was removed.
pub fn collision_free(skel: &Skeleton, opts: &CollisionFreeOptions) -> Result<CollisionFree, SimError> {
    let start = Instant::now();
    opts.validate()?;
    skel.validate()?;
    check_size(skel)?;
    let n = skel.segments.len();
    let topo = Topology::new(skel);
    let mut report = CollisionFreeReport::default();
    let (lo, hi) = reach_range(skel);
    let mut built = Built {
        pieces: Vec::new(),
        alive: Vec::new(),
        grid: opts.voxels.then(|| VoxelGrid::new(lo, hi)),
    };
    let mut removed = vec![false; n];
    let mut stem_ids: Vec<Vec<u32>> = vec![Vec::new(); n];
    let remove = |i: u32, removed: &mut [bool], built: &mut Built, stem_ids: &[Vec<u32>]| {
        removed[i as usize] = true;
        for &id in &stem_ids[i as usize] {
            built.alive[id as usize] = false;
        }
    };

    // Stems, generation by generation (Algorithm 1).
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| (topo.level(i), topo.depth(i), i));
    for &i in &order {
        let p = topo.parent(i);
        if p != NONE && removed[p as usize] {
            removed[i as usize] = true;
            continue;
        }
        let pieces = stem_pieces(skel, &topo, i, opts);
        if pieces.iter().any(|pc| built.hits(pc, &topo, &mut report)) {
            report.intersecting_stems += 1;
            remove(i, &mut removed, &mut built, &stem_ids);
            if skel.segments[i as usize].radius_base > opts.cut_radius {
                // Back to the branching stem (Fig. 3.5).
                let mut q = p;
                while q != NONE && q != 0 && topo.children(q).len() == 1 && !removed[q as usize] {
                    remove(q, &mut removed, &mut built, &stem_ids);
                    q = topo.parent(q);
                }
            }
            continue;
        }
        stem_ids[i as usize] = pieces.into_iter().map(|pc| built.add(pc)).collect();
    }
    // Whatever hangs below a stem removed later (a cut-back chain) goes with it.
    for i in 1..n {
        if removed[topo.parent(i as u32) as usize] {
            removed[i] = true;
        }
    }

    // Leaves (Algorithm 2).
    let mut kept_leaf = vec![false; skel.leaves.len()];
    let mut leaves_left = vec![0u32; n];
    let mut had_leaves = vec![false; n];
    for (j, leaf) in skel.leaves.iter().enumerate() {
        let s = leaf.segment as usize;
        had_leaves[s] = true;
        if removed[s] {
            continue;
        }
        let pieces = leaf_pieces(skel, &topo, j as u32, opts.k);
        if pieces.iter().any(|pc| built.hits(pc, &topo, &mut report)) {
            report.intersecting_leaves += 1;
            continue;
        }
        for pc in pieces {
            built.add(pc);
        }
        kept_leaf[j] = true;
        leaves_left[s] += 1;
    }

    // Stems marked for leaves that got none, back to their branching stems.
    let mut live_children = vec![0u32; n];
    for i in 1..n {
        if !removed[i] {
            live_children[topo.parent(i as u32) as usize] += 1;
        }
    }
    for i in (1..n).rev() {
        if removed[i] || !had_leaves[i] || leaves_left[i] > 0 || live_children[i] > 0 {
            continue;
        }
        let mut q = i as u32;
        loop {
            removed[q as usize] = true;
            report.bare_stems += 1;
            let p = topo.parent(q);
            live_children[p as usize] -= 1;
            let chain = p != 0 && topo.children(p).len() == 1 && leaves_left[p as usize] == 0;
            if !chain {
                break;
            }
            q = p;
        }
    }

    // The tree that is left, renumbered.
    let mut new_index = vec![NONE; n];
    let mut out = Skeleton::default();
    for i in 0..n {
        if removed[i] {
            continue;
        }
        let mut s = skel.segments[i];
        s.parent = s.parent.map(|p| new_index[p as usize]);
        new_index[i] = out.segments.len() as u32;
        out.segments.push(s);
    }
    for (j, leaf) in skel.leaves.iter().enumerate() {
        if kept_leaf[j] && !removed[leaf.segment as usize] {
            let mut l = *leaf;
            l.segment = new_index[leaf.segment as usize];
            out.leaves.push(l);
        }
    }
    report.removed_stems = n - out.segments.len();
    report.removed_leaves = skel.leaves.len() - out.leaves.len();
    report.ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(CollisionFree {
        skeleton: out,
        report,
        segment_map: new_index,
    })
}

/// Every pair of unconnected pieces of `skel` that intersect, found without the voxel grid or
/// the k-DOPs: the pieces' boxes swept along x, every pair whose boxes overlap tested exactly.
/// For tests and `spec stats`: the pass leaves none.
pub fn intersecting_pairs(skel: &Skeleton, sides: u32) -> Result<u64, SimError> {
    Ok(intersecting_owners(skel, sides)?.len() as u64)
}

/// The pairs [`intersecting_pairs`] counts, as the pieces' owners.
pub fn intersecting_owners(skel: &Skeleton, sides: u32) -> Result<Vec<(Owner, Owner)>, SimError> {
    skel.validate()?;
    check_size(skel)?;
    let topo = Topology::new(skel);
    let opts = CollisionFreeOptions {
        sides,
        ..CollisionFreeOptions::default()
    };
    opts.validate()?;
    let mut pieces: Vec<Piece> = Vec::new();
    for i in 0..skel.segments.len() as u32 {
        pieces.extend(stem_pieces(skel, &topo, i, &opts));
    }
    for j in 0..skel.leaves.len() as u32 {
        pieces.extend(leaf_pieces(skel, &topo, j, opts.k));
    }
    // The 6-DOP is the box: its first three slabs.
    let boxes: Vec<([f32; 3], [f32; 3])> = pieces
        .iter()
        .map(|p| {
            let s = |a| p.kdop.slab(a);
            let (x, y, z) = (s(0), s(1), s(2));
            ([x.0, y.0, z.0], [x.1, y.1, z.1])
        })
        .collect();
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by(|&a, &b| boxes[a].0[0].total_cmp(&boxes[b].0[0]));
    let mut found = Vec::new();
    for (k, &a) in order.iter().enumerate() {
        for &b in &order[k + 1..] {
            if boxes[b].0[0] > boxes[a].1[0] {
                break;
            }
            let overlap = (1..3).all(|d| boxes[a].0[d] <= boxes[b].1[d] && boxes[b].0[d] <= boxes[a].1[d]);
            if overlap && intersect(&pieces[a], &pieces[b]) && !topo.connected(pieces[a].owner, pieces[b].owner) {
                found.push((pieces[a].owner, pieces[b].owner));
            }
        }
    }
    Ok(found)
}
