//! Exports a tree's skeleton as a mesh: Wavefront OBJ (with a .mtl beside it) or binary glTF 2.0
//! (.glb). Both are y-up and in metres, as Sylva is.
//!
//! Bark: every stem (a chain of segments, each continuing its parent's direction best) is one
//! tapered tube. A ring of vertices sits at each end of each segment; consecutive segments of a
//! stem share the ring at their joint, so the bark is continuous and smoothly shaded. Rings are
//! oriented by a parallel-transported frame, so a tube never twists. A side branch starts its own
//! tube with a ring at its parent's tip, inside the parent's tube. The tip of every tube is closed
//! by a flat fan, and so is the bottom of the trunk.
//!
//! Leaves: one card (a quad, two triangles) per leaf, hanging from its segment and turned by the
//! leaf's orientation, with texture coordinates covering the card and the leaf texture
//! (`texture`): the blade's outline as an alpha cut-out, embedded in a .glb, a PNG beside an
//! OBJ. The glTF leaf material is double-sided; OBJ has no such flag, so the OBJ writer
//! writes each card twice, once with each winding.
//!
//! Files are written with `output::AtomicFile`: to a temporary file in the destination's folder,
//! renamed into place only once complete, so a failed export leaves no partial file behind.

use std::f32::consts::TAU;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use glam::{Quat, Vec2, Vec3};
use serde_json::json;
use sylva_sim::spec::LeafShape;
use sylva_sim::Skeleton;

use crate::output::AtomicFile;

/// Tube sides when none are given.
pub const DEFAULT_SIDES: u32 = 8;
/// Fewest tube sides allowed.
pub const MIN_SIDES: u32 = 3;
/// Most tube sides allowed.
pub const MAX_SIDES: u32 = 64;
/// A child continues its parent's stem, sharing the ring at their joint, only when it turns by at
/// most this angle \[degrees\] (and turns least among its siblings); otherwise it starts a new tube.
pub const MAX_CONTINUATION_ANGLE_DEG: f32 = 60.0;

/// How the exported tree looks: its materials' colours (linear RGB) and its leaves' outline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExportLook {
    pub leaf: [f64; 3],
    pub bark: [f64; 3],
    pub shape: LeafShape,
}

impl Default for ExportLook {
    /// A mid-green oval leaf on mid-brown bark.
    fn default() -> ExportLook {
        ExportLook {
            leaf: [0.16, 0.40, 0.09],
            bark: [0.30, 0.20, 0.12],
            shape: LeafShape::Oval,
        }
    }
}

impl ExportLook {
    /// The look `spec` gives its trees (`LeafColor`, `BarkColor`, `LeafShape`).
    pub fn of(spec: &sylva_sim::spec::WeberPennSpec) -> ExportLook {
        ExportLook {
            leaf: spec.leaf_colour(),
            bark: spec.bark_colour(),
            shape: spec.leaf_shape_kind(),
        }
    }
}

/// How to mesh a tree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExportOptions {
    /// Vertices around each tube ring, `MIN_SIDES..=MAX_SIDES`.
    pub sides: u32,
    /// Whether to include the leaf cards.
    pub leaves: bool,
    /// Fewer sides for thin stems, to save triangles on twigs.
    pub twig_sides: Option<TwigSides>,
    /// One leaf card in `leaf_keep` (those whose index is a multiple of it), each enlarged by
    /// √leaf_keep both ways so the foliage keeps its area; 1: every leaf.
    pub leaf_keep: u32,
    /// Stems whose first segment is thinner than this \[m\] are left out (their leaves are
    /// kept where they hang); 0: none.
    pub min_radius: f32,
    /// A tube ring at every `ring_step`-th joint of a stem (and at its ends), the tube straight
    /// between them; 1: at every joint.
    pub ring_step: u32,
    /// The materials' colours and the leaf texture's outline.
    pub look: ExportLook,
}

/// Stems whose first ring is thinner than `below_radius` get `sides` sides instead of
/// `ExportOptions::sides`. One stem always has one side count, so its rings can be shared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwigSides {
    /// Radius \[m\] under which a stem counts as a twig.
    pub below_radius: f32,
    /// Sides of a twig's tube, `MIN_SIDES..=MAX_SIDES`.
    pub sides: u32,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            sides: DEFAULT_SIDES,
            leaves: true,
            twig_sides: None,
            leaf_keep: 1,
            min_radius: 0.0,
            ring_step: 1,
            look: ExportLook::default(),
        }
    }
}

impl ExportOptions {
    /// Checks the side counts and the twig radius, naming what is allowed.
    pub fn validate(&self) -> Result<()> {
        ensure!(
            (MIN_SIDES..=MAX_SIDES).contains(&self.sides),
            "{} tube sides is out of range; allowed {MIN_SIDES}..={MAX_SIDES}",
            self.sides
        );
        ensure!(
            self.leaf_keep >= 1,
            "keeping one leaf in 0 is not allowed; allowed 1 or more"
        );
        ensure!(
            self.ring_step >= 1,
            "a ring every 0 joints is not allowed; allowed 1 or more"
        );
        ensure!(
            self.min_radius.is_finite() && self.min_radius >= 0.0,
            "a smallest stem radius of {} m is not allowed; it must be a finite number ≥ 0",
            self.min_radius
        );
        if let Some(t) = self.twig_sides {
            ensure!(
                (MIN_SIDES..=MAX_SIDES).contains(&t.sides),
                "{} twig sides is out of range; allowed {MIN_SIDES}..={MAX_SIDES}",
                t.sides
            );
            ensure!(
                t.below_radius.is_finite() && t.below_radius >= 0.0,
                "twig radius {} m is not allowed; it must be a finite number ≥ 0",
                t.below_radius
            );
        }
        Ok(())
    }
}

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Vertices in the file (OBJ: `v` lines).
    pub vertices: usize,
    /// Triangles in the file, bark and leaves.
    pub triangles: usize,
    pub bark_triangles: usize,
    /// Leaf triangles: 2 per leaf in glTF (a double-sided material), 4 in OBJ (both windings).
    pub leaf_triangles: usize,
    /// Bytes written, the .mtl included for OBJ.
    pub bytes: u64,
}

/// An indexed triangle mesh: one normal and one texture coordinate per vertex, counter-clockwise
/// triangles seen from the side the normals point to. Texture coordinates follow glTF: v = 0 is
/// the top row of an image.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    pub positions: Vec<Vec3>,
    pub normals: Vec<Vec3>,
    pub uvs: Vec<Vec2>,
    /// The skeleton segment each vertex moves with (an index into the skeleton the mesh was
    /// built from): what an animated export binds the vertex to.
    pub segments: Vec<u32>,
    pub indices: Vec<u32>,
}

impl Mesh {
    /// Appends another mesh, renumbering its indices.
    pub fn append(&mut self, other: Mesh) {
        let offset = self.positions.len() as u32;
        self.positions.extend(other.positions);
        self.normals.extend(other.normals);
        self.uvs.extend(other.uvs);
        self.segments.extend(other.segments);
        self.indices.extend(other.indices.into_iter().map(|i| i + offset));
    }

    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }

    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// Smallest and largest corner of the positions, `None` for no vertices.
    #[cfg(test)]
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        let first = *self.positions.first()?;
        Some(
            self.positions
                .iter()
                .fold((first, first), |(lo, hi), &p| (lo.min(p), hi.max(p))),
        )
    }

    /// Checks what a writer relies on: matching attribute counts, whole triangles, indices in
    /// range and finite positions.
    fn check(&self, what: &str) -> Result<()> {
        let n = self.positions.len();
        ensure!(
            self.normals.len() == n && self.uvs.len() == n && self.segments.len() == n,
            "the {what} mesh has {n} positions but {} normals, {} texture coordinates and {} segment indices",
            self.normals.len(),
            self.uvs.len(),
            self.segments.len()
        );
        ensure!(
            self.indices.len() % 3 == 0,
            "the {what} mesh has {} indices, not a whole number of triangles",
            self.indices.len()
        );
        ensure!(
            u32::try_from(n).is_ok(),
            "the {what} mesh has {n} vertices; 32-bit indices reach {}",
            u32::MAX
        );
        if let Some(&i) = self.indices.iter().find(|&&i| i as usize >= n) {
            bail!("the {what} mesh has index {i} but only {n} vertices");
        }
        ensure!(
            self.positions.iter().all(|p| p.is_finite()),
            "the {what} mesh has a non-finite vertex position"
        );
        Ok(())
    }

    /// Appends one vertex and returns its index.
    fn push(&mut self, position: Vec3, normal: Vec3, uv: Vec2, segment: usize) -> u32 {
        let index = self.positions.len() as u32;
        self.positions.push(position);
        self.normals.push(normal);
        self.uvs.push(uv);
        self.segments.push(segment as u32);
        index
    }
}

/// A tree's mesh: bark tubes and leaf cards, kept apart for their two materials.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreeMesh {
    pub bark: Mesh,
    pub leaves: Mesh,
    /// Its materials' look.
    pub look: ExportLook,
}

/// Meshes a skeleton (see the module documentation for the construction).
///
/// Bark vertex layout, stem by stem in the order of each stem's first segment: the stem's rings
/// from base to tip, `sides + 1` vertices each (the first vertex repeated at the end with u = 1,
/// for a seamless texture), then the tip cap (`sides` rim vertices and the centre), and for the
/// trunk (and any other segment without a parent) the base cap after that. A stem of `k` segments
/// thus has `(k + 2)·(sides + 1)` vertices and `2·k·sides + sides` triangles, plus `sides + 1` and
/// `sides` for a base cap. Leaf layout: 4 vertices and 2 triangles per leaf, in skeleton order.
///
/// Bark normals point straight out from the tube's axis (the slight taper does not tilt them);
/// at a joint the shared ring lies in the plane bisecting the bend, stretched across the bend so
/// it meets both segments' tubes.
///
/// Expects a skeleton that passes `Skeleton::validate` and options that pass
/// `ExportOptions::validate`; anything else still gives a mesh without panicking: side counts
/// are clamped to `MIN_SIDES..=MAX_SIDES`, a segment whose parent does not come before it starts
/// a tube of its own, and leaves on missing segments or with non-finite data are left out.
pub fn build_mesh(skeleton: &Skeleton, opts: &ExportOptions) -> TreeMesh {
    let segments = &skeleton.segments;
    let n = segments.len();
    let parent_of = |i: usize| segments[i].parent.map(|p| p as usize).filter(|&p| p < i);
    let Stems { dirs, next, continues } = Stems::of(skeleton);

    let main_sides = opts.sides.clamp(MIN_SIDES, MAX_SIDES);
    // The ring frame (tangent, normal) at each segment's tip, for the branches starting there.
    let mut tip_frames = vec![(Vec3::Y, Vec3::X); n];
    let mut bark = Mesh::default();
    let mut chain = Vec::new();
    for start in 0..n {
        if continues[start] || segments[start].radius_base < opts.min_radius {
            continue;
        }
        chain.clear();
        let mut i = start;
        loop {
            chain.push(i);
            match next[i] {
                Some((c, _)) => i = c,
                None => break,
            }
        }
        let t0 = dirs[start];
        let parent = parent_of(start);
        let n0 = match parent {
            Some(p) => {
                let (tp, np) = tip_frames[p];
                let moved = Quat::from_rotation_arc(tp, t0) * np;
                perpendicular_part(moved, t0).unwrap_or_else(|| reference_normal(t0))
            }
            None => reference_normal(t0),
        };
        let sides = match opts.twig_sides {
            Some(t) if segments[start].radius_base < t.below_radius => t.sides.clamp(MIN_SIDES, MAX_SIDES),
            _ => main_sides,
        };
        let stem = Stem {
            skeleton,
            dirs: &dirs,
            chain: &chain,
            sides,
            first_normal: n0,
            cap_base: parent.is_none(),
            ring_step: opts.ring_step,
        };
        stem.add_to(&mut bark, &mut tip_frames);
    }

    let mut leaves = Mesh::default();
    if opts.leaves {
        let keep = opts.leaf_keep.max(1) as usize;
        let enlarge = (keep as f32).sqrt();
        for leaf in skeleton.leaves.iter().step_by(keep) {
            let Some(seg) = segments.get(leaf.segment as usize) else {
                continue;
            };
            let usable = leaf.orientation.is_finite()
                && leaf.orientation.length_squared() > 1e-12
                && leaf.along.is_finite()
                && leaf.length.is_finite()
                && leaf.width.is_finite();
            if !usable {
                continue;
            }
            let q = leaf.orientation.normalize();
            let attach = seg.base + leaf.along.clamp(0.0, 1.0) * (seg.tip - seg.base);
            let half_across = (q * Vec3::X) * (0.5 * leaf.width * enlarge);
            let blade = (q * Vec3::Y) * (leaf.length * enlarge);
            let normal = q * Vec3::Z;
            // Stalk end at the bottom of the texture (v = 1), blade tip at the top (v = 0).
            let s = leaf.segment as usize;
            let a = leaves.push(attach - half_across, normal, Vec2::new(0.0, 1.0), s);
            let b = leaves.push(attach + half_across, normal, Vec2::new(1.0, 1.0), s);
            let c = leaves.push(attach + half_across + blade, normal, Vec2::new(1.0, 0.0), s);
            let d = leaves.push(attach - half_across + blade, normal, Vec2::new(0.0, 0.0), s);
            leaves.indices.extend_from_slice(&[a, b, c, a, c, d]);
        }
    }
    TreeMesh {
        bark,
        leaves,
        look: opts.look,
    }
}

/// How a skeleton's segments join into tubes (see [`build_mesh`]).
struct Stems {
    /// Each segment's unit direction.
    dirs: Vec<Vec3>,
    /// Each segment's continuation: the child turning least, if it turns little enough, and
    /// the cosine of its turn.
    next: Vec<Option<(usize, f32)>>,
    /// Whether a segment continues its parent's tube (otherwise it starts one).
    continues: Vec<bool>,
}

impl Stems {
    fn of(skeleton: &Skeleton) -> Stems {
        let segments = &skeleton.segments;
        let n = segments.len();
        let dirs: Vec<Vec3> = segments
            .iter()
            .map(|s| (s.tip - s.base).normalize_or(Vec3::Y))
            .collect();
        let min_cos = MAX_CONTINUATION_ANGLE_DEG.to_radians().cos();
        let mut next: Vec<Option<(usize, f32)>> = vec![None; n];
        for i in 0..n {
            if let Some(p) = segments[i].parent.map(|p| p as usize).filter(|&p| p < i) {
                let c = dirs[p].dot(dirs[i]);
                if c >= min_cos && next[p].is_none_or(|(_, best)| c > best) {
                    next[p] = Some((i, c));
                }
            }
        }
        let mut continues = vec![false; n];
        for &(c, _) in next.iter().flatten() {
            continues[c] = true;
        }
        Stems { dirs, next, continues }
    }
}

/// Vertices and triangles [`build_mesh`] makes of `skeleton`, counted without building it
/// (the layout its documentation gives; every leaf counted, though unusable ones are left out).
pub fn mesh_size(skeleton: &Skeleton, opts: &ExportOptions) -> (u64, u64) {
    let segments = &skeleton.segments;
    let Stems { next, continues, .. } = Stems::of(skeleton);
    let main_sides = opts.sides.clamp(MIN_SIDES, MAX_SIDES) as u64;
    let (mut vertices, mut triangles) = (0u64, 0u64);
    for start in (0..segments.len()).filter(|&i| !continues[i] && segments[i].radius_base >= opts.min_radius) {
        let mut k = 1u64;
        let mut i = start;
        while let Some((c, _)) = next[i] {
            (i, k) = (c, k + 1);
        }
        let sides = match opts.twig_sides {
            Some(t) if segments[start].radius_base < t.below_radius => t.sides.clamp(MIN_SIDES, MAX_SIDES) as u64,
            _ => main_sides,
        };
        let has_parent = segments[start].parent.is_some_and(|p| (p as usize) < start);
        let caps = if has_parent { 1 } else { 2 };
        // Pieces of tube between rings: one per `ring_step` segments.
        let pieces = k.div_ceil(opts.ring_step.max(1) as u64);
        vertices += (pieces + 1 + caps) * (sides + 1);
        triangles += 2 * pieces * sides + caps * sides;
    }
    if opts.leaves {
        let kept = skeleton.leaves.len().div_ceil(opts.leaf_keep.max(1) as usize) as u64;
        vertices += 4 * kept;
        triangles += 2 * kept;
    }
    (vertices, triangles)
}

/// Fewest triangles `--max-triangles` allows.
pub const MIN_TRIANGLE_BUDGET: u64 = 100;

/// `opts` made to fit `max` triangles ([`mesh_size`] counts them), keeping as much of the tree
/// as it can, in this order: fewer tube sides (down to `MIN_SIDES`); then fewer rings along the
/// stems (every 2nd to 4th joint); then, with those, the thinnest stems left out (a tenth of them at a time, then finer shares, down to the trunk)
/// until the bark takes at most half the budget or the leaves fit beside it; then one leaf in
/// k, enlarged, for the smallest k that fits. Returns the options and what was given up, in words; fails,
/// naming the budget and what the tree needs at the least, when nothing fits.
pub fn fit_triangles(skeleton: &Skeleton, opts: &ExportOptions, max: u64) -> Result<(ExportOptions, String)> {
    let fits = |o: &ExportOptions| mesh_size(skeleton, o).1 <= max;
    if fits(opts) {
        return Ok((*opts, "nothing left out".into()));
    }
    for sides in (MIN_SIDES..opts.sides).rev() {
        let o = ExportOptions {
            sides,
            twig_sides: None,
            ..*opts
        };
        if fits(&o) {
            return Ok((o, format!("{sides} tube sides")));
        }
    }
    ensure!(!skeleton.segments.is_empty(), "the tree has no segments");
    // Then fewer rings along the stems (a ring every 2nd, 3rd or 4th joint).
    for ring_step in 2..=4 {
        let o = ExportOptions {
            sides: MIN_SIDES,
            twig_sides: None,
            ring_step,
            ..*opts
        };
        if fits(&o) {
            return Ok((o, format!("{MIN_SIDES} tube sides, a ring every {ring_step} joints")));
        }
    }
    // Stem radii, thinnest first, for pruning by tenths.
    let stems = Stems::of(skeleton);
    let mut radii: Vec<f32> = (0..skeleton.segments.len())
        .filter(|&i| !stems.continues[i])
        .map(|i| skeleton.segments[i].radius_base)
        .collect();
    radii.sort_by(f32::total_cmp);
    let leaves = if opts.leaves { skeleton.leaves.len() as u64 } else { 0 };
    let base = ExportOptions {
        sides: MIN_SIDES,
        twig_sides: None,
        ring_step: 4,
        ..*opts
    };
    // Shares of the stems left out, thinnest first: tenths, then finer towards the trunk.
    const PRUNED: [f64; 16] = [
        0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0,
    ];
    for (step, &share) in PRUNED.iter().enumerate() {
        let last = step + 1 == PRUNED.len();
        let min_radius = if share == 0.0 {
            0.0
        } else {
            // The stems up to this share go (the thickest, the trunk's, always stays).
            let k = ((radii.len() as f64 * share) as usize).min(radii.len() - 1);
            if k + 1 == radii.len() {
                radii[k]
            } else {
                radii[k].next_up()
            }
        };
        let bare = ExportOptions {
            min_radius,
            leaves: false,
            ..base
        };
        let bark = mesh_size(skeleton, &bare).1;
        if bark > max || (bark > max / 2 && !last && leaves > 0 && 2 * leaves > max - bark) {
            continue;
        }
        let room = (max - bark) / 2;
        let keep = if leaves == 0 {
            1
        } else if room == 0 {
            continue;
        } else {
            leaves.div_ceil(room).max(1)
        };
        let o = ExportOptions {
            min_radius,
            leaf_keep: keep.min(u32::MAX as u64) as u32,
            ..base
        };
        if fits(&o) {
            let mut given_up = vec![format!("{MIN_SIDES} tube sides, a ring every 4 joints")];
            if share > 0.0 {
                given_up.push(format!(
                    "the thinnest {:.1} % of the stems left out (under {:.1} mm)",
                    100.0 * share,
                    min_radius * 1e3
                ));
            }
            if keep > 1 {
                given_up.push(format!(
                    "one leaf in {keep}, each enlarged ×{:.2}",
                    (keep as f64).sqrt()
                ));
            }
            return Ok((o, given_up.join(", ")));
        }
    }
    let least = mesh_size(
        skeleton,
        &ExportOptions {
            min_radius: radii[radii.len() - 1],
            leaf_keep: u32::MAX,
            ..base
        },
    )
    .1;
    bail!(
        "the tree cannot be drawn in {max} triangles: at {MIN_SIDES} sides, its trunk alone and a single leaf, it still needs {least}; raise --max-triangles"
    )
}

/// Most memory an export's mesh may take; a mesh this large also makes the largest .glb.
pub const MAX_MESH_BYTES: u64 = 2 << 30;

/// Bytes a mesh of this size takes: position, normal and texture coordinate per vertex, three
/// 32-bit indices per triangle.
fn mesh_bytes(vertices: u64, triangles: u64) -> u64 {
    vertices * 32 + triangles * 12
}

/// Refuses a mesh over `limit` bytes, naming the sizes and what makes it smaller.
fn check_mesh_size(path: &Path, vertices: u64, triangles: u64, limit: u64) -> Result<()> {
    let bytes = mesh_bytes(vertices, triangles);
    ensure!(
        bytes <= limit,
        "cannot export to {}: the mesh would have {vertices} vertices and {triangles} triangles, {} MiB; \
         allowed at most {} MiB (use fewer --sides or --no-leaves)",
        path.display(),
        bytes >> 20,
        limit >> 20
    );
    Ok(())
}

/// The unit part of `v` perpendicular to the unit vector `t`, if there is one.
fn perpendicular_part(v: Vec3, t: Vec3) -> Option<Vec3> {
    (v - t * v.dot(t)).try_normalize()
}

/// A fixed ring normal for a tube that starts on nothing: world x (or z for a tube along x)
/// made perpendicular to the tube.
fn reference_normal(t: Vec3) -> Vec3 {
    let world = if t.x.abs() < 0.9 { Vec3::X } else { Vec3::Z };
    perpendicular_part(world, t).unwrap_or_else(|| t.any_orthonormal_vector())
}

/// One tube to lay down: a chain of segments, each continuing the one before.
struct Stem<'a> {
    skeleton: &'a Skeleton,
    dirs: &'a [Vec3],
    chain: &'a [usize],
    sides: u32,
    /// Ring normal at the base, perpendicular to the first segment.
    first_normal: Vec3,
    /// Close the bottom too (a tube that starts on no parent).
    cap_base: bool,
    /// A ring at every `ring_step`-th joint (1: at every joint).
    ring_step: u32,
}

/// Where one ring sits.
struct Ring {
    centre: Vec3,
    /// Unit normal of the ring's plane.
    tangent: Vec3,
    radius: f32,
    /// At a bend: the unit direction of the bend within the ring's plane and how much the ring is
    /// stretched along it (1 / cos of half the bend angle), so that it meets both segments'
    /// tubes instead of pinching the joint.
    miter: Option<(Vec3, f32)>,
}

impl Stem<'_> {
    /// The tube's rings and, for each, its position in the chain (the segment it is the base
    /// of; the chain's length for the tip ring): at the chain's base, at every `ring_step`-th
    /// joint and at its tip. Between two rings the tube is straight, so the bend at a ring is
    /// measured between the straight pieces on either side of it.
    fn rings(&self) -> Vec<(Ring, usize)> {
        let segs = &self.skeleton.segments;
        let n = self.chain.len();
        let step = self.ring_step.max(1) as usize;
        let kept: Vec<usize> = (0..n).step_by(step).chain(std::iter::once(n)).collect();
        let centre = |j: usize| {
            if j < n {
                segs[self.chain[j]].base
            } else {
                segs[self.chain[n - 1]].tip
            }
        };
        // The direction of the piece from kept ring i to kept ring i + 1.
        let piece = |i: usize| {
            let (j0, j1) = (kept[i], kept[i + 1]);
            (centre(j1) - centre(j0))
                .try_normalize()
                .unwrap_or(self.dirs[self.chain[j0.min(n - 1)]])
        };
        let mut rings = Vec::with_capacity(kept.len());
        for (i, &j) in kept.iter().enumerate() {
            let ring = if j == 0 {
                Ring {
                    centre: centre(0),
                    tangent: piece(0),
                    radius: segs[self.chain[0]].radius_base,
                    miter: None,
                }
            } else if j == n {
                Ring {
                    centre: centre(n),
                    tangent: piece(i - 1),
                    radius: segs[self.chain[n - 1]].radius_tip,
                    miter: None,
                }
            } else {
                let (da, db) = (piece(i - 1), piece(i));
                // The bisecting plane: continuation children turn by at most 60°, so da + db ≠ 0.
                let tangent = (da + db).normalize_or(db);
                let cos_half = da.dot(tangent);
                let miter = (db - da)
                    .try_normalize()
                    .filter(|_| cos_half > 1e-3)
                    .map(|bend| (bend, 1.0 / cos_half));
                let (a, b) = (self.chain[j - 1], self.chain[j]);
                Ring {
                    centre: centre(j),
                    tangent,
                    // Under the pipe model the parent's tip is the wider of the two (its area is
                    // shared with the side branches); take the wider so no branch pokes out.
                    radius: segs[a].radius_tip.max(segs[b].radius_base),
                    miter,
                }
            };
            rings.push((ring, j));
        }
        rings
    }

    fn add_to(&self, bark: &mut Mesh, tip_frames: &mut [(Vec3, Vec3)]) {
        let (rings, at): (Vec<Ring>, Vec<usize>) = self.rings().into_iter().unzip();
        let sides = self.sides;
        let per_ring = sides + 1;
        // v runs one texture repeat per circumference of the stem's base, so bark texels stay
        // about square.
        let v_scale = 1.0 / (TAU * rings[0].radius.max(1e-6));
        let first_vertex = bark.positions.len() as u32;

        let mut normal = self.first_normal;
        let mut along = 0.0f32;
        let mut frames = Vec::with_capacity(rings.len());
        for (k, ring) in rings.iter().enumerate() {
            if k > 0 {
                let prev = &rings[k - 1];
                // Parallel transport: turn the frame by the least rotation taking one ring's
                // plane to the next, so the tube does not twist.
                let moved = Quat::from_rotation_arc(prev.tangent, ring.tangent) * normal;
                normal = perpendicular_part(moved, ring.tangent).unwrap_or_else(|| reference_normal(ring.tangent));
                along += ring.centre.distance(prev.centre);
                // The segments this piece of tube covers end in this ring's frame.
                for &c in &self.chain[at[k - 1]..at[k]] {
                    tip_frames[c] = (ring.tangent, normal);
                }
            }
            let binormal = ring.tangent.cross(normal);
            frames.push((normal, binormal));
            // A ring moves with the segment it is the base of (the last, the tip ring).
            let segment = self.chain[at[k].min(self.chain.len() - 1)];
            for j in 0..=sides {
                let radial = ring_direction(normal, binormal, j, sides);
                let mut offset = radial * ring.radius;
                if let Some((bend, stretch)) = ring.miter {
                    offset += bend * (offset.dot(bend) * (stretch - 1.0));
                }
                let u = j as f32 / sides as f32;
                bark.push(ring.centre + offset, radial, Vec2::new(u, along * v_scale), segment);
            }
        }
        for k in 0..rings.len() as u32 - 1 {
            for j in 0..sides {
                let a = first_vertex + k * per_ring + j;
                let b = a + 1;
                let c = b + per_ring;
                let d = a + per_ring;
                bark.indices.extend_from_slice(&[a, b, c, a, c, d]);
            }
        }

        let last = rings.len() - 1;
        let last_segment = *self.chain.last().expect("a stem has a segment");
        self.add_cap(bark, &rings[last], frames[last], true, last_segment);
        if self.cap_base {
            self.add_cap(bark, &rings[0], frames[0], false, self.chain[0]);
        }
    }

    /// A flat fan closing the tube at `ring`, facing along the tube at its tip (`outward`) or
    /// against it at its base.
    fn add_cap(&self, bark: &mut Mesh, ring: &Ring, (normal, binormal): (Vec3, Vec3), outward: bool, segment: usize) {
        let sides = self.sides;
        let facing = if outward { ring.tangent } else { -ring.tangent };
        let rim = bark.positions.len() as u32;
        for j in 0..sides {
            let radial = ring_direction(normal, binormal, j, sides);
            let uv = Vec2::new(0.5, 0.5) + 0.5 * Vec2::new(radial.dot(normal), radial.dot(binormal));
            bark.push(ring.centre + radial * ring.radius, facing, uv, segment);
        }
        let centre = bark.push(ring.centre, facing, Vec2::new(0.5, 0.5), segment);
        for j in 0..sides {
            let (a, b) = (rim + j, rim + (j + 1) % sides);
            if outward {
                bark.indices.extend_from_slice(&[centre, a, b]);
            } else {
                bark.indices.extend_from_slice(&[centre, b, a]);
            }
        }
    }
}

/// The unit direction of vertex `j` of a ring with `sides` sides; vertex `sides` is vertex 0.
fn ring_direction(normal: Vec3, binormal: Vec3, j: u32, sides: u32) -> Vec3 {
    let angle = TAU * (j % sides) as f32 / sides as f32;
    let (sin, cos) = angle.sin_cos();
    (normal * cos + binormal * sin).normalize()
}

/// The file formats `export` writes, by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Obj,
    Glb,
}

impl Format {
    /// The format a path's extension names (case-insensitive), or an error naming the allowed
    /// extensions.
    pub fn from_path(path: &Path) -> Result<Format> {
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("obj") => Ok(Format::Obj),
            Some("glb") => Ok(Format::Glb),
            Some(other) => bail!(
                "cannot export to {}: unsupported file extension `.{other}`; allowed: .obj (Wavefront OBJ) or .glb (binary glTF 2.0)",
                path.display()
            ),
            None => bail!(
                "cannot export to {}: the file name has no extension; allowed: .obj (Wavefront OBJ) or .glb (binary glTF 2.0)",
                path.display()
            ),
        }
    }
}

/// The files an export to `path` writes: the file itself and, for OBJ, its .mtl and its leaf
/// and bark textures ([`texture_path`]; a .glb embeds them). Fails for an extension that names
/// no format.
pub fn files_written(path: &Path) -> Result<Vec<PathBuf>> {
    match Format::from_path(path)? {
        Format::Glb => Ok(vec![path.to_path_buf()]),
        Format::Obj => Ok(vec![
            path.to_path_buf(),
            path.with_extension("mtl"),
            texture_path(path, "leaf"),
            texture_path(path, "bark"),
        ]),
    }
}

/// An OBJ's texture `what` (`leaf` or `bark`): beside it, its name with `_leaf.png` or
/// `_bark.png` for the extension.
pub fn texture_path(obj_path: &Path, what: &str) -> PathBuf {
    let stem = obj_path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    obj_path.with_file_name(format!("{stem}_{what}.png"))
}

/// Meshes `skeleton` and writes it to `path`, as OBJ or GLB by the path's extension.
pub fn export(skeleton: &Skeleton, path: &Path, opts: &ExportOptions) -> Result<ExportStats> {
    export_all(&[skeleton], path, opts)
}

/// Exports several skeletons (a grove, or a tree and its roots) as one mesh.
pub fn export_all(skeletons: &[&Skeleton], path: &Path, opts: &ExportOptions) -> Result<ExportStats> {
    let format = Format::from_path(path)?;
    check_export(skeletons, path, opts)?;
    let mut mesh = TreeMesh {
        look: opts.look,
        ..TreeMesh::default()
    };
    for skeleton in skeletons {
        let part = build_mesh(skeleton, opts);
        mesh.bark.append(part.bark);
        mesh.leaves.append(part.leaves);
    }
    match format {
        Format::Obj => write_obj(&mesh, path),
        Format::Glb => write_glb(&mesh, path),
    }
}

/// Checks, before anything is built, what every export relies on: the options, the skeletons,
/// and the mesh's size against [`MAX_MESH_BYTES`]; returns the triangles the mesh will have.
fn check_export(skeletons: &[&Skeleton], path: &Path, opts: &ExportOptions) -> Result<u64> {
    opts.validate()
        .with_context(|| format!("cannot export to {}", path.display()))?;
    let (mut vertices, mut triangles) = (0u64, 0u64);
    for skeleton in skeletons {
        skeleton
            .validate()
            .with_context(|| format!("cannot export to {}", path.display()))?;
        let (v, t) = mesh_size(skeleton, opts);
        (vertices, triangles) = (vertices + v, triangles + t);
    }
    check_mesh_size(path, vertices, triangles, MAX_MESH_BYTES)?;
    Ok(triangles)
}

/// Refuses to write `what` (levels of detail, an animation) to `path` unless it names a .glb,
/// the one format that holds it.
pub fn require_glb(path: &Path, what: &str) -> Result<()> {
    ensure!(
        Format::from_path(path)? == Format::Glb,
        "cannot write {what} to {}: only a .glb (binary glTF 2.0) holds {what}",
        path.display()
    );
    Ok(())
}

/// Most levels of detail an export writes.
pub const MAX_LODS: u32 = 4;

/// Exports `skeleton` to the .glb `path` with `lods` levels of detail: level 0 with `opts`,
/// level k fitted ([`fit_triangles`]) to a quarter of the triangles of level k − 1. Returns each
/// level's figures and what it gave up.
pub fn export_lods(
    skeleton: &Skeleton,
    path: &Path,
    opts: &ExportOptions,
    lods: u32,
) -> Result<Vec<(ExportStats, String)>> {
    require_glb(path, "levels of detail")?;
    ensure!(
        (1..=MAX_LODS).contains(&lods),
        "{lods} levels of detail is out of range; allowed 1..={MAX_LODS}"
    );
    let triangles = check_export(&[skeleton], path, opts)?;
    let mut levels = vec![(*opts, "the full tree".to_string())];
    let mut budget = triangles;
    for _ in 1..lods {
        budget = (budget / 4).max(MIN_TRIANGLE_BUDGET);
        let level = fit_triangles(skeleton, &levels[0].0, budget)?;
        budget = mesh_size(skeleton, &level.0).1;
        levels.push(level);
    }
    let meshes: Vec<TreeMesh> = levels.iter().map(|(o, _)| build_mesh(skeleton, o)).collect();
    let stats = write_glb_lods(&meshes, path)?;
    Ok(stats.into_iter().zip(levels.into_iter().map(|(_, why)| why)).collect())
}

/// Writes `mesh` as Wavefront OBJ to `obj_path`, its materials (`bark`: the bark texture;
/// `leaf`: the leaf texture, colour and cut-out alpha) to the same name with extension .mtl and
/// the two textures beside it ([`texture_path`]). OBJ has no double-sided flag, so
/// every leaf card is written twice, the back copy with reversed winding and negated normals:
/// 4 triangles per leaf. Texture v is flipped to OBJ's convention (v = 0 at an image's bottom).
/// The four files are complete under temporary names, and every destination checked, before
/// any is renamed into place; should the .obj's rename still fail, the new .mtl and textures
/// stay (complete).
pub fn write_obj(mesh: &TreeMesh, obj_path: &Path) -> Result<ExportStats> {
    mesh.bark.check("bark")?;
    mesh.leaves.check("leaf")?;
    let is_mtl = obj_path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mtl"));
    ensure!(
        !is_mtl,
        "cannot write an OBJ to {}: its materials go to the .mtl of the same name",
        obj_path.display()
    );
    let mtl_path = obj_path.with_extension("mtl");
    let mtl_name = mtl_path
        .file_name()
        .with_context(|| format!("cannot write {}: it does not name a file", obj_path.display()))?
        .to_string_lossy()
        .into_owned();

    let png_path = texture_path(obj_path, "leaf");
    let png_name = png_path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let bark_path = texture_path(obj_path, "bark");
    let bark_name = bark_path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());

    let materials_of = || format!("writing the materials of {}", obj_path.display());
    let mut png = AtomicFile::create(&png_path).with_context(materials_of)?;
    png.writer()
        .write_all(&texture::leaf_texture(&mesh.look, texture::LEAF_TEXTURE_SIZE).to_png())
        .with_context(|| format!("writing {} failed", png_path.display()))
        .with_context(materials_of)?;
    let png_bytes = png.finish().with_context(materials_of)?;
    let mut bark_png = AtomicFile::create(&bark_path).with_context(materials_of)?;
    bark_png
        .writer()
        .write_all(&texture::bark_texture(&mesh.look, texture::BARK_TEXTURE_SIZE).to_png())
        .with_context(|| format!("writing {} failed", bark_path.display()))
        .with_context(materials_of)?;
    let bark_bytes = bark_png.finish().with_context(materials_of)?;
    let mut mtl = AtomicFile::create(&mtl_path).with_context(materials_of)?;
    write_mtl(mtl.writer(), &png_name, &bark_name)
        .with_context(|| format!("writing {} failed", mtl_path.display()))
        .with_context(materials_of)?;
    let mtl_bytes = mtl.finish().with_context(materials_of)?;

    let mut obj = AtomicFile::create(obj_path)?;
    let stats = write_obj_body(obj.writer(), mesh, &mtl_name)
        .with_context(|| format!("writing {} failed", obj_path.display()))?;
    let obj_bytes = obj.finish()?;

    png.check_destination()?;
    bark_png.check_destination()?;
    mtl.check_destination()?;
    obj.check_destination()?;
    png.persist()?;
    bark_png.persist()?;
    mtl.persist()?;
    obj.persist()?;
    Ok(ExportStats {
        bytes: obj_bytes + mtl_bytes + png_bytes + bark_bytes,
        ..stats
    })
}

/// The materials: `bark` the bark texture `bark_png`, `leaf` the leaf texture `leaf_png` (its
/// colour, and its alpha as the cut-out).
fn write_mtl(w: &mut impl Write, leaf_png: &str, bark_png: &str) -> std::io::Result<()> {
    writeln!(w, "# Sylva tree materials")?;
    for (name, [r, g, b], shininess) in [("bark", [1.0; 3], 4), ("leaf", [1.0; 3], 16)] {
        writeln!(w, "\nnewmtl {name}")?;
        writeln!(w, "Ka 0 0 0")?;
        writeln!(w, "Kd {r} {g} {b}")?;
        writeln!(w, "Ks 0.04 0.04 0.04")?;
        writeln!(w, "Ns {shininess}")?;
        writeln!(w, "d 1")?;
        writeln!(w, "illum 2")?;
        if name == "leaf" {
            writeln!(w, "map_Kd {leaf_png}")?;
            writeln!(w, "map_d {leaf_png}")?;
        } else {
            writeln!(w, "map_Kd {bark_png}")?;
        }
    }
    Ok(())
}

fn write_obj_body(w: &mut impl Write, mesh: &TreeMesh, mtl_name: &str) -> std::io::Result<ExportStats> {
    let (bark, leaves) = (&mesh.bark, &mesh.leaves);
    let vertices = bark.vertex_count() + leaves.vertex_count();
    let bark_triangles = bark.triangle_count();
    let leaf_triangles = 2 * leaves.triangle_count();
    writeln!(w, "# Sylva tree: y up, metres")?;
    writeln!(
        w,
        "# {vertices} vertices, {} triangles: {bark_triangles} bark, {leaf_triangles} leaf (each card front and back)",
        bark_triangles + leaf_triangles
    )?;
    writeln!(w, "mtllib {mtl_name}")?;
    writeln!(w, "o tree")?;
    for p in bark.positions.iter().chain(&leaves.positions) {
        writeln!(w, "v {} {} {}", p.x, p.y, p.z)?;
    }
    for t in bark.uvs.iter().chain(&leaves.uvs) {
        writeln!(w, "vt {} {}", t.x, 1.0 - t.y)?;
    }
    for n in bark.normals.iter().chain(&leaves.normals) {
        writeln!(w, "vn {} {} {}", n.x, n.y, n.z)?;
    }
    // The leaves' back faces use negated normals, after all the others.
    for n in &leaves.normals {
        writeln!(w, "vn {} {} {}", -n.x, -n.y, -n.z)?;
    }

    writeln!(w, "g bark")?;
    writeln!(w, "usemtl bark")?;
    for t in bark.indices.chunks_exact(3) {
        let [a, b, c] = [t[0] as usize + 1, t[1] as usize + 1, t[2] as usize + 1];
        writeln!(w, "f {a}/{a}/{a} {b}/{b}/{b} {c}/{c}/{c}")?;
    }
    if !leaves.is_empty() {
        let first = bark.vertex_count() + 1;
        let back = leaves.vertex_count();
        writeln!(w, "g leaves")?;
        writeln!(w, "usemtl leaf")?;
        for t in leaves.indices.chunks_exact(3) {
            let [a, b, c] = [t[0] as usize + first, t[1] as usize + first, t[2] as usize + first];
            writeln!(w, "f {a}/{a}/{a} {b}/{b}/{b} {c}/{c}/{c}")?;
            let [na, nb, nc] = [a + back, b + back, c + back];
            writeln!(w, "f {a}/{a}/{na} {c}/{c}/{nc} {b}/{b}/{nb}")?;
        }
    }
    Ok(ExportStats {
        vertices,
        triangles: bark_triangles + leaf_triangles,
        bark_triangles,
        leaf_triangles,
        bytes: 0,
    })
}

/// Writes `mesh` as binary glTF 2.0: one scene with one node holding one mesh, whose primitives
/// are the bark and (when there are any) the leaves, each with POSITION, NORMAL, TEXCOORD_0 and
/// 32-bit indices in buffer views of their own. Materials: `bark` (rough, the tiling bark
/// texture) and `leaf`
/// (the leaf texture, alpha mask at 0.5, double-sided).
pub fn write_glb(mesh: &TreeMesh, path: &Path) -> Result<ExportStats> {
    Ok(write_glb_lods(std::slice::from_ref(mesh), path)?.remove(0))
}

/// Writes the levels of detail `lods` (finest first) as binary glTF 2.0: one mesh and node each,
/// named `tree_LOD0`, `tree_LOD1`, ... (the names engines such as Unity group into a LOD group);
/// the scene holds the finest, which lists the others in the `MSFT_lod` extension, so a viewer
/// without it shows the finest alone. The bark and leaf materials are shared. Returns each
/// level's figures, the file's bytes in each.
pub fn write_glb_lods(lods: &[TreeMesh], path: &Path) -> Result<Vec<ExportStats>> {
    ensure!(!lods.is_empty(), "cannot write {}: no mesh", path.display());
    let mut glb = glb::Glb::default();
    let mut meshes = Vec::with_capacity(lods.len());
    for (k, mesh) in lods.iter().enumerate() {
        let mut tree = glb.tree(mesh, None, path)?;
        if lods.len() > 1 {
            tree["name"] = format!("tree_LOD{k}").into();
        }
        meshes.push(tree);
    }
    let mut document = glb::document(&[0]);
    let nodes: Vec<serde_json::Value> = if lods.len() == 1 {
        vec![json!({ "name": "tree", "mesh": 0 })]
    } else {
        (0..lods.len())
            .map(|k| {
                let mut node = json!({ "name": format!("tree_LOD{k}"), "mesh": k });
                if k == 0 {
                    node["extensions"] = json!({ "MSFT_lod": { "ids": (1..lods.len()).collect::<Vec<_>>() } });
                }
                node
            })
            .collect()
    };
    if lods.len() > 1 {
        document.insert("extensionsUsed".into(), json!(["MSFT_lod"]));
    }
    document.insert("nodes".into(), nodes.into());
    document.insert("meshes".into(), meshes.into());
    let bytes = glb.write(document, path)?;
    Ok(lods.iter().map(|m| m.stats(bytes)).collect())
}

impl TreeMesh {
    /// What a .glb of this mesh holds, in `bytes`.
    fn stats(&self, bytes: u64) -> ExportStats {
        ExportStats {
            vertices: self.bark.vertex_count() + self.leaves.vertex_count(),
            triangles: self.bark.triangle_count() + self.leaves.triangle_count(),
            bark_triangles: self.bark.triangle_count(),
            leaf_triangles: self.leaves.triangle_count(),
            bytes,
        }
    }
}

pub mod animate;
mod glb;
pub mod texture;

#[cfg(test)]
mod tests;
