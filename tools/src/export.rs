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
//! leaf's orientation, with texture coordinates covering the card so an alpha-cut leaf texture
//! would work. The glTF leaf material is double-sided; OBJ has no such flag, so the OBJ writer
//! writes each card twice, once with each winding.
//!
//! Files are written with `output::AtomicFile`: to a temporary file in the destination's folder,
//! renamed into place only once complete, so a failed export leaves no partial file behind.

use std::f32::consts::TAU;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use glam::{Quat, Vec2, Vec3};
use serde_json::{json, Value};
use sylva_sim::Skeleton;

use crate::output::AtomicFile;

/// Tube sides when none are given.
pub const DEFAULT_SIDES: u32 = 8;
/// Fewest tube sides allowed.
pub const MIN_SIDES: u32 = 3;
/// Most tube sides allowed.
pub const MAX_SIDES: u32 = 64;
/// A child continues its parent's stem, sharing the ring at their joint, only when it turns by at
/// most this angle [degrees] (and turns least among its siblings); otherwise it starts a new tube.
pub const MAX_CONTINUATION_ANGLE_DEG: f32 = 60.0;

/// Base colour of the bark material (linear RGB).
const BARK_COLOUR: [f64; 3] = [0.30, 0.20, 0.12];
/// Base colour of the leaf material (linear RGB).
const LEAF_COLOUR: [f64; 3] = [0.16, 0.40, 0.09];

/// How to mesh a tree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExportOptions {
    /// Vertices around each tube ring, `MIN_SIDES..=MAX_SIDES`.
    pub sides: u32,
    /// Whether to include the leaf cards.
    pub leaves: bool,
    /// Fewer sides for thin stems, to save triangles on twigs.
    pub twig_sides: Option<TwigSides>,
}

/// Stems whose first ring is thinner than `below_radius` get `sides` sides instead of
/// `ExportOptions::sides`. One stem always has one side count, so its rings can be shared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwigSides {
    /// Radius [m] under which a stem counts as a twig.
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
    pub indices: Vec<u32>,
}

impl Mesh {
    /// Appends another mesh, renumbering its indices.
    pub fn append(&mut self, other: Mesh) {
        let offset = self.positions.len() as u32;
        self.positions.extend(other.positions);
        self.normals.extend(other.normals);
        self.uvs.extend(other.uvs);
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
            self.normals.len() == n && self.uvs.len() == n,
            "the {what} mesh has {n} positions but {} normals and {} texture coordinates",
            self.normals.len(),
            self.uvs.len()
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
    fn push(&mut self, position: Vec3, normal: Vec3, uv: Vec2) -> u32 {
        let index = self.positions.len() as u32;
        self.positions.push(position);
        self.normals.push(normal);
        self.uvs.push(uv);
        index
    }
}

/// A tree's mesh: bark tubes and leaf cards, kept apart for their two materials.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreeMesh {
    pub bark: Mesh,
    pub leaves: Mesh,
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
        if continues[start] {
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
        };
        stem.add_to(&mut bark, &mut tip_frames);
    }

    let mut leaves = Mesh::default();
    if opts.leaves {
        for leaf in &skeleton.leaves {
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
            let half_across = (q * Vec3::X) * (0.5 * leaf.width);
            let blade = (q * Vec3::Y) * leaf.length;
            let normal = q * Vec3::Z;
            // Stalk end at the bottom of the texture (v = 1), blade tip at the top (v = 0).
            let a = leaves.push(attach - half_across, normal, Vec2::new(0.0, 1.0));
            let b = leaves.push(attach + half_across, normal, Vec2::new(1.0, 1.0));
            let c = leaves.push(attach + half_across + blade, normal, Vec2::new(1.0, 0.0));
            let d = leaves.push(attach - half_across + blade, normal, Vec2::new(0.0, 0.0));
            leaves.indices.extend_from_slice(&[a, b, c, a, c, d]);
        }
    }
    TreeMesh { bark, leaves }
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
    for start in (0..segments.len()).filter(|&i| !continues[i]) {
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
        vertices += (k + 1 + caps) * (sides + 1);
        triangles += 2 * k * sides + caps * sides;
    }
    if opts.leaves {
        vertices += 4 * skeleton.leaves.len() as u64;
        triangles += 2 * skeleton.leaves.len() as u64;
    }
    (vertices, triangles)
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
    fn rings(&self) -> Vec<Ring> {
        let segs = &self.skeleton.segments;
        let first = self.chain[0];
        let last = *self.chain.last().expect("a stem has a segment");
        let mut rings = Vec::with_capacity(self.chain.len() + 1);
        rings.push(Ring {
            centre: segs[first].base,
            tangent: self.dirs[first],
            radius: segs[first].radius_base,
            miter: None,
        });
        for pair in self.chain.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let (da, db) = (self.dirs[a], self.dirs[b]);
            // The bisecting plane: continuation children turn by at most 60°, so da + db ≠ 0.
            let tangent = (da + db).normalize_or(db);
            let cos_half = da.dot(tangent);
            let miter = (db - da)
                .try_normalize()
                .filter(|_| cos_half > 1e-3)
                .map(|bend| (bend, 1.0 / cos_half));
            rings.push(Ring {
                centre: segs[a].tip,
                tangent,
                // Under the pipe model the parent's tip is the wider of the two (its area is
                // shared with the side branches); take the wider so no branch pokes out.
                radius: segs[a].radius_tip.max(segs[b].radius_base),
                miter,
            });
        }
        rings.push(Ring {
            centre: segs[last].tip,
            tangent: self.dirs[last],
            radius: segs[last].radius_tip,
            miter: None,
        });
        rings
    }

    fn add_to(&self, bark: &mut Mesh, tip_frames: &mut [(Vec3, Vec3)]) {
        let rings = self.rings();
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
                tip_frames[self.chain[k - 1]] = (ring.tangent, normal);
            }
            let binormal = ring.tangent.cross(normal);
            frames.push((normal, binormal));
            for j in 0..=sides {
                let radial = ring_direction(normal, binormal, j, sides);
                let mut offset = radial * ring.radius;
                if let Some((bend, stretch)) = ring.miter {
                    offset += bend * (offset.dot(bend) * (stretch - 1.0));
                }
                let u = j as f32 / sides as f32;
                bark.push(ring.centre + offset, radial, Vec2::new(u, along * v_scale));
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
        self.add_cap(bark, &rings[last], frames[last], true);
        if self.cap_base {
            self.add_cap(bark, &rings[0], frames[0], false);
        }
    }

    /// A flat fan closing the tube at `ring`, facing along the tube at its tip (`outward`) or
    /// against it at its base.
    fn add_cap(&self, bark: &mut Mesh, ring: &Ring, (normal, binormal): (Vec3, Vec3), outward: bool) {
        let sides = self.sides;
        let facing = if outward { ring.tangent } else { -ring.tangent };
        let rim = bark.positions.len() as u32;
        for j in 0..sides {
            let radial = ring_direction(normal, binormal, j, sides);
            let uv = Vec2::new(0.5, 0.5) + 0.5 * Vec2::new(radial.dot(normal), radial.dot(binormal));
            bark.push(ring.centre + radial * ring.radius, facing, uv);
        }
        let centre = bark.push(ring.centre, facing, Vec2::new(0.5, 0.5));
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

/// The files an export to `path` writes: the file itself and, for OBJ, its .mtl. Fails for an
/// extension that names no format, and for an OBJ whose name ends in .mtl.
pub fn files_written(path: &Path) -> Result<Vec<PathBuf>> {
    match Format::from_path(path)? {
        Format::Glb => Ok(vec![path.to_path_buf()]),
        Format::Obj => Ok(vec![path.to_path_buf(), path.with_extension("mtl")]),
    }
}

/// Meshes `skeleton` and writes it to `path`, as OBJ or GLB by the path's extension.
pub fn export(skeleton: &Skeleton, path: &Path, opts: &ExportOptions) -> Result<ExportStats> {
    export_all(&[skeleton], path, opts)
}

/// Exports several skeletons (a grove, or a tree and its roots) as one mesh.
pub fn export_all(skeletons: &[&Skeleton], path: &Path, opts: &ExportOptions) -> Result<ExportStats> {
    let format = Format::from_path(path)?;
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
    let mut mesh = TreeMesh::default();
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

/// Writes `mesh` as Wavefront OBJ to `obj_path` and its materials (`bark`, `leaf`: plain diffuse
/// colours, no textures) to the same name with extension .mtl. OBJ has no double-sided flag, so
/// every leaf card is written twice, the back copy with reversed winding and negated normals:
/// 4 triangles per leaf. Texture v is flipped to OBJ's convention (v = 0 at an image's bottom).
/// Both files are complete under temporary names, and both destinations checked, before either
/// is renamed into place; should the .obj's rename still fail, the new .mtl stays (complete).
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

    let materials_of = || format!("writing the materials of {}", obj_path.display());
    let mut mtl = AtomicFile::create(&mtl_path).with_context(materials_of)?;
    write_mtl(mtl.writer())
        .with_context(|| format!("writing {} failed", mtl_path.display()))
        .with_context(materials_of)?;
    let mtl_bytes = mtl.finish().with_context(materials_of)?;

    let mut obj = AtomicFile::create(obj_path)?;
    let stats = write_obj_body(obj.writer(), mesh, &mtl_name)
        .with_context(|| format!("writing {} failed", obj_path.display()))?;
    let obj_bytes = obj.finish()?;

    mtl.check_destination()?;
    obj.check_destination()?;
    mtl.persist()?;
    obj.persist()?;
    Ok(ExportStats {
        bytes: obj_bytes + mtl_bytes,
        ..stats
    })
}

fn write_mtl(w: &mut impl Write) -> std::io::Result<()> {
    writeln!(w, "# Sylva tree materials")?;
    for (name, [r, g, b], shininess) in [("bark", BARK_COLOUR, 4), ("leaf", LEAF_COLOUR, 16)] {
        writeln!(w, "\nnewmtl {name}")?;
        writeln!(w, "Ka 0 0 0")?;
        writeln!(w, "Kd {r} {g} {b}")?;
        writeln!(w, "Ks 0.04 0.04 0.04")?;
        writeln!(w, "Ns {shininess}")?;
        writeln!(w, "d 1")?;
        writeln!(w, "illum 2")?;
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

const GLB_MAGIC: u32 = 0x4654_6C67; // "glTF"
const GLB_VERSION: u32 = 2;
const CHUNK_JSON: u32 = 0x4E4F_534A; // "JSON"
const CHUNK_BIN: u32 = 0x004E_4942; // "BIN\0"
const FLOAT: u32 = 5126;
const UNSIGNED_INT: u32 = 5125;
const ARRAY_BUFFER: u32 = 34962;
const ELEMENT_ARRAY_BUFFER: u32 = 34963;
const TRIANGLES: u32 = 4;

fn align4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

/// Writes `mesh` as binary glTF 2.0: one scene with one node holding one mesh, whose primitives
/// are the bark and (when there are any) the leaves, each with POSITION, NORMAL, TEXCOORD_0 and
/// 32-bit indices in a bufferView of its own. Materials: `bark` (rough, brown) and `leaf` (green,
/// alpha mask at 0.5 for a cut-out texture, double-sided).
pub fn write_glb(mesh: &TreeMesh, path: &Path) -> Result<ExportStats> {
    mesh.bark.check("bark")?;
    mesh.leaves.check("leaf")?;
    let mut parts: Vec<(&Mesh, Value)> = Vec::new();
    if !mesh.bark.is_empty() {
        parts.push((
            &mesh.bark,
            json!({
                "name": "bark",
                "pbrMetallicRoughness": {
                    "baseColorFactor": [BARK_COLOUR[0], BARK_COLOUR[1], BARK_COLOUR[2], 1.0],
                    "metallicFactor": 0.0,
                    "roughnessFactor": 0.9
                }
            }),
        ));
    }
    if !mesh.leaves.is_empty() {
        parts.push((
            &mesh.leaves,
            json!({
                "name": "leaf",
                "pbrMetallicRoughness": {
                    "baseColorFactor": [LEAF_COLOUR[0], LEAF_COLOUR[1], LEAF_COLOUR[2], 1.0],
                    "metallicFactor": 0.0,
                    "roughnessFactor": 0.7
                },
                "alphaMode": "MASK",
                "alphaCutoff": 0.5,
                "doubleSided": true
            }),
        ));
    }
    ensure!(
        !parts.is_empty(),
        "cannot write {}: the mesh has no triangles",
        path.display()
    );

    // Lay out the binary chunk: per primitive positions, normals, texture coordinates, indices.
    let mut views = Vec::new();
    let mut accessors = Vec::new();
    let mut primitives = Vec::new();
    let mut materials = Vec::new();
    let mut offset = 0u64;
    let mut add_view = |bytes: u64, target: u32, views: &mut Vec<Value>| {
        offset = align4(offset);
        views.push(json!({ "buffer": 0, "byteOffset": offset, "byteLength": bytes, "target": target }));
        offset += bytes;
        views.len() - 1
    };
    for (m, material) in &parts {
        let count = m.vertex_count() as u64;
        let (lo, hi) = m.bounds().expect("a mesh with triangles has vertices");
        let first = accessors.len();
        let view = add_view(count * 12, ARRAY_BUFFER, &mut views);
        accessors.push(json!({
            "bufferView": view, "componentType": FLOAT, "count": count, "type": "VEC3",
            "min": [lo.x, lo.y, lo.z], "max": [hi.x, hi.y, hi.z]
        }));
        let view = add_view(count * 12, ARRAY_BUFFER, &mut views);
        accessors.push(json!({ "bufferView": view, "componentType": FLOAT, "count": count, "type": "VEC3" }));
        let view = add_view(count * 8, ARRAY_BUFFER, &mut views);
        accessors.push(json!({ "bufferView": view, "componentType": FLOAT, "count": count, "type": "VEC2" }));
        let index_count = m.indices.len() as u64;
        let view = add_view(index_count * 4, ELEMENT_ARRAY_BUFFER, &mut views);
        accessors.push(json!({
            "bufferView": view, "componentType": UNSIGNED_INT, "count": index_count, "type": "SCALAR"
        }));
        primitives.push(json!({
            "attributes": { "POSITION": first, "NORMAL": first + 1, "TEXCOORD_0": first + 2 },
            "indices": first + 3,
            "material": materials.len(),
            "mode": TRIANGLES
        }));
        materials.push(material.clone());
    }
    let bin_len = align4(offset);
    let document = json!({
        "asset": { "version": "2.0", "generator": "Sylva" },
        "scene": 0,
        "scenes": [{ "name": "tree", "nodes": [0] }],
        "nodes": [{ "name": "tree", "mesh": 0 }],
        "meshes": [{ "name": "tree", "primitives": primitives }],
        "materials": materials,
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{ "byteLength": bin_len }]
    });
    let json_text = serde_json::to_vec(&document).context("encoding the glTF JSON failed")?;
    let json_len = align4(json_text.len() as u64);
    let total = 12 + 8 + json_len + 8 + bin_len;
    ensure!(
        total <= u32::MAX as u64,
        "cannot write {}: the tree needs {total} bytes but a .glb holds at most {} (use fewer sides, no leaves or .obj)",
        path.display(),
        u32::MAX
    );

    let mut file = AtomicFile::create(path)?;
    write_glb_body(file.writer(), &json_text, json_len, bin_len, &parts, total)
        .with_context(|| format!("writing {} failed", path.display()))?;
    let bytes = file.finish()?;
    ensure!(
        bytes == total,
        "writing {} failed: wrote {bytes} bytes instead of {total}",
        path.display()
    );
    file.persist()?;

    let vertices = mesh.bark.vertex_count() + mesh.leaves.vertex_count();
    Ok(ExportStats {
        vertices,
        triangles: mesh.bark.triangle_count() + mesh.leaves.triangle_count(),
        bark_triangles: mesh.bark.triangle_count(),
        leaf_triangles: mesh.leaves.triangle_count(),
        bytes,
    })
}

fn write_glb_body(
    w: &mut impl Write,
    json_text: &[u8],
    json_len: u64,
    bin_len: u64,
    parts: &[(&Mesh, Value)],
    total: u64,
) -> std::io::Result<()> {
    let u32le = |v: u64| (v as u32).to_le_bytes();
    w.write_all(&GLB_MAGIC.to_le_bytes())?;
    w.write_all(&GLB_VERSION.to_le_bytes())?;
    w.write_all(&u32le(total))?;

    w.write_all(&u32le(json_len))?;
    w.write_all(&CHUNK_JSON.to_le_bytes())?;
    w.write_all(json_text)?;
    for _ in json_text.len() as u64..json_len {
        w.write_all(b" ")?;
    }

    w.write_all(&u32le(bin_len))?;
    w.write_all(&CHUNK_BIN.to_le_bytes())?;
    // Every element is 4 bytes wide, so the views follow one another with no gaps.
    let mut written = 0u64;
    for (m, _) in parts {
        for v in m.positions.iter().chain(&m.normals) {
            for c in v.to_array() {
                w.write_all(&c.to_le_bytes())?;
            }
        }
        for t in &m.uvs {
            w.write_all(&t.x.to_le_bytes())?;
            w.write_all(&t.y.to_le_bytes())?;
        }
        for i in &m.indices {
            w.write_all(&i.to_le_bytes())?;
        }
        written += (m.positions.len() * 32 + m.indices.len() * 4) as u64;
    }
    for _ in written..bin_len {
        w.write_all(&[0])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::sync::atomic::{AtomicU64, Ordering};

    use sylva_sim::skeleton::{SkeletonLeaf, SkeletonSegment};
    use sylva_sim::test_tree;

    /// A fresh directory under the system's temporary directory, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(label: &str) -> TempDir {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let dir = std::env::temp_dir().join(format!(
                "sylva-export-{label}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn path(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }

        /// The names in the directory, sorted.
        fn names(&self) -> Vec<String> {
            let mut names: Vec<String> = fs::read_dir(&self.0)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn segment(parent: Option<u32>, base: Vec3, tip: Vec3, radius_base: f32, radius_tip: f32) -> SkeletonSegment {
        SkeletonSegment {
            parent,
            base,
            tip,
            radius_base,
            radius_tip,
        }
    }

    /// A small tree whose stems are known by hand: trunk 0-1-2 straight up, then segment 5
    /// turning 45° (still the trunk's stem: its only child); branch 3-4 leaving segment 0 at 90°
    /// (a new stem) and bending 11° (continuing); segment 6 leaving 4 at about 80° (a new stem).
    /// Stems: {0, 1, 2, 5}, {3, 4}, {6}.
    fn hand_tree() -> Skeleton {
        let y = |v: f32| Vec3::new(0.0, v, 0.0);
        let p5 = Vec3::new(0.5, 3.5, 0.0);
        let p4 = Vec3::new(2.0, 1.2, 0.0);
        let segments = vec![
            segment(None, y(0.0), y(1.0), 0.10, 0.09),
            segment(Some(0), y(1.0), y(2.0), 0.08, 0.07),
            segment(Some(1), y(2.0), y(3.0), 0.06, 0.05),
            segment(Some(0), y(1.0), Vec3::new(1.0, 1.0, 0.0), 0.03, 0.02),
            segment(Some(3), Vec3::new(1.0, 1.0, 0.0), p4, 0.02, 0.015),
            segment(Some(2), y(3.0), p5, 0.05, 0.04),
            segment(Some(4), p4, p4 + Vec3::new(0.1, 0.4, 0.2), 0.01, 0.005),
        ];
        let leaves = vec![
            SkeletonLeaf {
                segment: 6,
                along: 0.5,
                orientation: Quat::from_rotation_x(0.3) * Quat::from_rotation_z(-0.7),
                length: 0.1,
                width: 0.05,
            },
            SkeletonLeaf {
                segment: 5,
                along: 1.0,
                orientation: Quat::IDENTITY,
                length: 0.2,
                width: 0.1,
            },
        ];
        let skeleton = Skeleton { segments, leaves };
        skeleton.validate().unwrap();
        skeleton
    }

    /// Stems and trunk-like roots, derived from the rule "a child continues its parent when it
    /// turns least among its siblings and by at most 60°".
    fn count_stems(skeleton: &Skeleton) -> (usize, usize) {
        let segs = &skeleton.segments;
        let dir = |i: usize| (segs[i].tip - segs[i].base).normalize();
        let mut continuations = 0;
        for (p, _) in segs.iter().enumerate() {
            let best = segs
                .iter()
                .enumerate()
                .filter(|(_, s)| s.parent == Some(p as u32))
                .map(|(i, _)| dir(p).dot(dir(i)))
                .fold(f32::NEG_INFINITY, f32::max);
            if best >= 0.5 {
                continuations += 1;
            }
        }
        let roots = segs.iter().filter(|s| s.parent.is_none()).count();
        (segs.len() - continuations, roots)
    }

    /// Bark vertices and triangles with `sides` on every tube: one ring per segment plus one per
    /// stem, `sides + 1` vertices a ring; a cap (`sides + 1` vertices, `sides` triangles) per
    /// stem tip and per root base; two triangles per side per segment.
    fn expected_bark(skeleton: &Skeleton, sides: usize) -> (usize, usize) {
        let n = skeleton.segments.len();
        let (stems, roots) = count_stems(skeleton);
        let rings = n + stems;
        let caps = stems + roots;
        ((rings + caps) * (sides + 1), 2 * sides * n + sides * caps)
    }

    fn assert_unit_normals(mesh: &Mesh) {
        for (i, n) in mesh.normals.iter().enumerate() {
            assert!((n.length() - 1.0).abs() < 1e-5, "normal {i} is {n}");
        }
    }

    /// Every triangle with some area turns its front to the side its vertex normals point to.
    fn assert_outward_winding(mesh: &Mesh) {
        for t in mesh.indices.chunks_exact(3) {
            let [a, b, c] = [t[0] as usize, t[1] as usize, t[2] as usize];
            let p = &mesh.positions;
            let face = (p[b] - p[a]).cross(p[c] - p[a]);
            if face.length() < 1e-9 {
                continue;
            }
            let smooth = mesh.normals[a] + mesh.normals[b] + mesh.normals[c];
            assert!(face.dot(smooth) > 0.0, "triangle {t:?} faces inward");
        }
    }

    #[test]
    fn hand_tree_counts_and_shared_rings() {
        let skeleton = hand_tree();
        assert_eq!(count_stems(&skeleton), (3, 1));
        let mesh = build_mesh(&skeleton, &ExportOptions::default());
        // 7 segments + 3 stems = 10 rings, 3 tip caps + 1 base cap, 9 vertices each.
        assert_eq!(mesh.bark.vertex_count(), (10 + 4) * 9);
        assert_eq!(mesh.bark.triangle_count(), 2 * 8 * 7 + 8 * 4);
        assert_eq!(expected_bark(&skeleton, 8), (126, 144));
        assert_eq!(mesh.leaves.vertex_count(), 8);
        assert_eq!(mesh.leaves.triangle_count(), 4);

        // The trunk's stem comes first: rings 0..=2 on the straight part are translations of
        // one another (no twist), with the segments' radii; a joint ring takes the wider.
        let ring = |k: usize, j: usize| mesh.bark.positions[k * 9 + j];
        for (k, radius) in [0.10, 0.09, 0.07].into_iter().enumerate() {
            let centre = Vec3::new(0.0, k as f32, 0.0);
            for j in 0..9 {
                let offset = ring(k, j) - centre;
                assert!(offset.y.abs() < 1e-6, "ring {k} is not level");
                assert!((offset.length() - radius).abs() < 1e-6, "ring {k} radius");
                let first = (ring(0, j) - Vec3::ZERO).normalize();
                assert!(offset.normalize().distance(first) < 1e-5, "ring {k} twisted");
            }
            assert_eq!(ring(k, 0), ring(k, 8), "seam vertex");
            assert_eq!(mesh.bark.uvs[k * 9].x, 0.0);
            assert_eq!(mesh.bark.uvs[k * 9 + 8].x, 1.0);
        }
        // v grows with length, one unit per base circumference.
        let v = mesh.bark.uvs[2 * 9].y;
        assert!((v - 2.0 / (TAU * 0.10)).abs() < 1e-5, "v = {v}");

        // The 45° joint ring (ring 3, at y = 3) is stretched along the bend by 1 / cos 22.5°.
        let widest = (0..8)
            .map(|j| (ring(3, j) - Vec3::new(0.0, 3.0, 0.0)).length())
            .fold(0.0, f32::max);
        assert!((widest - 0.05 / 22.5f32.to_radians().cos()).abs() < 1e-5, "{widest}");

        assert_unit_normals(&mesh.bark);
        assert_unit_normals(&mesh.leaves);
        assert_outward_winding(&mesh.bark);
        assert_outward_winding(&mesh.leaves);
    }

    #[test]
    fn a_bending_stem_does_not_twist() {
        // Ten segments bending 10° each within the xy plane: one stem (each child continues),
        // and with a parallel-transported frame the ring vertex facing -z keeps facing -z.
        let mut segments = Vec::new();
        let mut base = Vec3::ZERO;
        for k in 0..10u32 {
            let angle = (10.0 * k as f32).to_radians();
            let tip = base + Vec3::new(angle.sin(), angle.cos(), 0.0) * 0.5;
            segments.push(segment(k.checked_sub(1), base, tip, 0.1, 0.1));
            base = tip;
        }
        let skeleton = Skeleton {
            segments,
            leaves: Vec::new(),
        };
        skeleton.validate().unwrap();
        let mesh = build_mesh(&skeleton, &ExportOptions::default());
        assert_eq!(count_stems(&skeleton), (1, 1));
        assert_eq!(mesh.bark.vertex_count(), (11 + 2) * 9);
        let centres: Vec<Vec3> = std::iter::once(Vec3::ZERO)
            .chain(skeleton.segments.iter().map(|s| s.tip))
            .collect();
        for (k, centre) in centres.iter().enumerate() {
            // Vertex 2 of 8 is a quarter turn from the first: the ring's binormal, t × n = -z.
            let side = mesh.bark.positions[k * 9 + 2] - *centre;
            assert!(side.distance(Vec3::new(0.0, 0.0, -0.1)) < 1e-5, "ring {k}: {side}");
            assert!(mesh.bark.normals[k * 9 + 2].distance(-Vec3::Z) < 1e-5);
        }
    }

    #[test]
    fn leaf_cards_follow_their_orientation() {
        let skeleton = hand_tree();
        let mesh = build_mesh(&skeleton, &ExportOptions::default());
        for (j, leaf) in skeleton.leaves.iter().enumerate() {
            let s = skeleton.segments[leaf.segment as usize];
            let attach = s.base + leaf.along * (s.tip - s.base);
            let v = &mesh.leaves.positions[4 * j..4 * j + 4];
            let uv = &mesh.leaves.uvs[4 * j..4 * j + 4];
            let (x, y, z) = (
                leaf.orientation * Vec3::X,
                leaf.orientation * Vec3::Y,
                leaf.orientation * Vec3::Z,
            );
            // The stalk end is centred on the attachment point, the blade runs along +y.
            assert!(((v[0] + v[1]) * 0.5).distance(attach) < 1e-6);
            assert!((v[1] - v[0]).distance(x * leaf.width) < 1e-6);
            assert!((v[3] - v[0]).distance(y * leaf.length) < 1e-6);
            assert!((v[2] - v[1]).distance(y * leaf.length) < 1e-6);
            let face = (v[1] - v[0]).cross(v[2] - v[0]).normalize();
            assert!(face.distance(z) < 1e-5, "card faces {face}, leaf normal {z}");
            for n in &mesh.leaves.normals[4 * j..4 * j + 4] {
                assert!(n.distance(z) < 1e-6);
            }
            // The texture covers the card once, its top (v = 0) at the blade's tip.
            let expected = [
                Vec2::new(0.0, 1.0),
                Vec2::new(1.0, 1.0),
                Vec2::new(1.0, 0.0),
                Vec2::ZERO,
            ];
            assert_eq!(uv, &expected[..]);
        }
        let none = build_mesh(
            &skeleton,
            &ExportOptions {
                leaves: false,
                ..ExportOptions::default()
            },
        );
        assert!(none.leaves.is_empty() && none.leaves.vertex_count() == 0);
        assert_eq!(none.bark, mesh.bark);
    }

    #[test]
    fn test_tree_counts_bounds_and_normals() {
        for (seed, n, m, sides) in [(1, 2246, 6840, 8), (2, 907, 1530, 3), (3, 1, 4, 64), (4, 17, 0, 5)] {
            let skeleton = test_tree(seed, n, m).unwrap();
            let opts = ExportOptions {
                sides,
                ..ExportOptions::default()
            };
            let mesh = build_mesh(&skeleton, &opts);
            let (verts, tris) = expected_bark(&skeleton, sides as usize);
            assert_eq!(mesh.bark.vertex_count(), verts, "tree {n}");
            assert_eq!(mesh.bark.triangle_count(), tris, "tree {n}");
            assert_eq!(mesh.leaves.vertex_count(), 4 * m);
            assert_eq!(mesh.leaves.triangle_count(), 2 * m);
            assert!(mesh.bark.indices.iter().all(|&i| (i as usize) < verts));
            assert!(mesh.leaves.indices.iter().all(|&i| (i as usize) < 4 * m));
            assert_unit_normals(&mesh.bark);
            assert_unit_normals(&mesh.leaves);
            assert_outward_winding(&mesh.bark);
            assert_outward_winding(&mesh.leaves);

            // The bark's box holds every skeleton point and reaches no further beyond them than
            // the widest ring, stretched at most 1 / cos 30° at a bend.
            let points: Vec<Vec3> = skeleton.segments.iter().flat_map(|s| [s.base, s.tip]).collect();
            let (plo, phi) = points
                .iter()
                .fold((points[0], points[0]), |(lo, hi), &p| (lo.min(p), hi.max(p)));
            let max_radius = skeleton
                .segments
                .iter()
                .map(|s| s.radius_base.max(s.radius_tip))
                .fold(0.0, f32::max);
            let reach = max_radius / 30f32.to_radians().cos() + 1e-5;
            let (lo, hi) = mesh.bark.bounds().unwrap();
            assert!(
                lo.cmple(plo).all() && hi.cmpge(phi).all(),
                "bark box misses a skeleton point"
            );
            assert!(
                lo.cmpge(plo - reach).all() && hi.cmple(phi + reach).all(),
                "bark box too big"
            );
            if m > 0 {
                let card = skeleton
                    .leaves
                    .iter()
                    .map(|l| l.length + 0.5 * l.width)
                    .fold(0.0, f32::max)
                    + 1e-5;
                let (llo, lhi) = mesh.leaves.bounds().unwrap();
                assert!(
                    llo.cmpge(plo - card).all() && lhi.cmple(phi + card).all(),
                    "leaf box too big"
                );
            }
        }
    }

    #[test]
    fn the_mesh_size_is_counted_exactly_before_building() {
        let trees = [
            hand_tree(),
            test_tree(3, 907, 1530).unwrap(),
            test_tree(1, 2246, 6840).unwrap(),
        ];
        let twig = Some(TwigSides {
            below_radius: 0.02,
            sides: 4,
        });
        for skeleton in &trees {
            for (sides, leaves, twig_sides) in [(8, true, None), (3, false, None), (12, true, twig)] {
                let opts = ExportOptions {
                    sides,
                    leaves,
                    twig_sides,
                };
                let mesh = build_mesh(skeleton, &opts);
                let built = (
                    (mesh.bark.vertex_count() + mesh.leaves.vertex_count()) as u64,
                    (mesh.bark.triangle_count() + mesh.leaves.triangle_count()) as u64,
                );
                assert_eq!(mesh_size(skeleton, &opts), built, "{opts:?}");
            }
        }
        // Over the limit: refused, naming the file, the sizes and what helps.
        let path = Path::new("big.glb");
        let e = format!("{:#}", check_mesh_size(path, 1 << 20, 1 << 21, 16 << 20).unwrap_err());
        assert!(
            e.contains("big.glb") && e.contains("1048576 vertices") && e.contains("--sides"),
            "{e}"
        );
        check_mesh_size(path, 1 << 10, 1 << 11, 16 << 20).unwrap();
    }

    #[test]
    fn twig_sides_thin_the_twigs() {
        let skeleton = test_tree(7, 907, 100).unwrap();
        let below_radius = 0.01;
        let opts = ExportOptions {
            sides: 12,
            leaves: false,
            twig_sides: Some(TwigSides { below_radius, sides: 4 }),
        };
        let mesh = build_mesh(&skeleton, &opts);
        let full = build_mesh(
            &skeleton,
            &ExportOptions {
                twig_sides: None,
                ..opts
            },
        );
        assert!(mesh.bark.triangle_count() < full.bark.triangle_count());
        // Count what the rule implies: a stem with k segments and s sides has (k + 2)(s + 1)
        // vertices (+ s + 1 for a root's base cap) and 2ks + s triangles (+ s).
        let segs = &skeleton.segments;
        let dir = |i: usize| (segs[i].tip - segs[i].base).normalize();
        let mut best: Vec<Option<(usize, f32)>> = vec![None; segs.len()];
        for (i, s) in segs.iter().enumerate() {
            if let Some(p) = s.parent {
                let c = dir(p as usize).dot(dir(i));
                if c >= 0.5 && best[p as usize].is_none_or(|(_, b)| c > b) {
                    best[p as usize] = Some((i, c));
                }
            }
        }
        let mut continues = vec![false; segs.len()];
        for &(c, _) in best.iter().flatten() {
            continues[c] = true;
        }
        let (mut verts, mut tris) = (0, 0);
        for start in (0..segs.len()).filter(|&i| !continues[i]) {
            let mut k = 1;
            let mut i = start;
            while let Some((c, _)) = best[i] {
                k += 1;
                i = c;
            }
            let s = if segs[start].radius_base < below_radius { 4 } else { 12 };
            let root = usize::from(segs[start].parent.is_none());
            verts += (k + 2 + root) * (s + 1);
            tris += 2 * k * s + s * (1 + root);
        }
        assert_eq!(mesh.bark.vertex_count(), verts);
        assert_eq!(mesh.bark.triangle_count(), tris);
        assert_outward_winding(&mesh.bark);
    }

    /// The GLB's chunks as the container format lays them out: (JSON text, BIN bytes).
    fn glb_chunks(bytes: &[u8]) -> (&[u8], &[u8]) {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!(&bytes[0..4], b"glTF");
        assert_eq!(word(4), 2);
        assert_eq!(word(8) as usize, bytes.len());
        let json_len = word(12) as usize;
        assert_eq!(word(16), 0x4E4F_534A);
        assert_eq!(json_len % 4, 0);
        let json = &bytes[20..20 + json_len];
        let bin_at = 20 + json_len;
        let bin_len = word(bin_at) as usize;
        assert_eq!(word(bin_at + 4), 0x004E_4942);
        assert_eq!(bin_len % 4, 0);
        assert_eq!(bin_at + 8 + bin_len, bytes.len());
        (json, &bytes[bin_at + 8..])
    }

    fn check_glb(path: &Path, mesh: &TreeMesh, stats: &ExportStats) {
        let bytes = fs::read(path).unwrap();
        assert_eq!(stats.bytes, bytes.len() as u64);
        let (json_text, _) = glb_chunks(&bytes);
        assert!(serde_json::from_slice::<Value>(json_text).is_ok());

        let gltf = gltf::Gltf::from_slice(&bytes).expect("the .glb loads and validates");
        assert_eq!(gltf.document.as_json().asset.version, "2.0");
        assert_eq!(gltf.document.as_json().asset.generator.as_deref(), Some("Sylva"));
        assert_eq!(gltf.scenes().count(), 1);
        assert_eq!(gltf.nodes().count(), 1);
        let gmesh = gltf.meshes().next().unwrap();
        let parts: Vec<&Mesh> = [&mesh.bark, &mesh.leaves]
            .into_iter()
            .filter(|m| !m.is_empty())
            .collect();
        assert_eq!(gmesh.primitives().count(), parts.len());
        for (prim, m) in gmesh.primitives().zip(parts) {
            assert_eq!(prim.mode(), gltf::mesh::Mode::Triangles);
            let material = prim.material();
            match material.name() {
                Some("bark") => {
                    assert_eq!(material.alpha_mode(), gltf::material::AlphaMode::Opaque);
                    let pbr = material.pbr_metallic_roughness();
                    assert_eq!(pbr.metallic_factor(), 0.0);
                    assert!((pbr.roughness_factor() - 0.9).abs() < 1e-6);
                }
                Some("leaf") => {
                    assert_eq!(material.alpha_mode(), gltf::material::AlphaMode::Mask);
                    assert_eq!(material.alpha_cutoff(), Some(0.5));
                    assert!(material.double_sided());
                }
                other => panic!("unexpected material {other:?}"),
            }
            let positions = prim.get(&gltf::Semantic::Positions).unwrap();
            assert_eq!(positions.count(), m.vertex_count());
            let (lo, hi) = m.bounds().unwrap();
            let bb = prim.bounding_box();
            assert_eq!((Vec3::from(bb.min), Vec3::from(bb.max)), (lo, hi));
            assert_eq!(prim.get(&gltf::Semantic::Normals).unwrap().count(), m.vertex_count());
            assert_eq!(
                prim.get(&gltf::Semantic::TexCoords(0)).unwrap().count(),
                m.vertex_count()
            );
            let indices = prim.indices().unwrap();
            assert_eq!(indices.count(), m.indices.len());
            assert_eq!(indices.data_type(), gltf::accessor::DataType::U32);
            for accessor in [&positions, &indices] {
                let view = accessor.view().unwrap();
                assert_eq!(view.offset() % 4, 0);
            }
            assert_eq!(
                positions.view().unwrap().target(),
                Some(gltf::buffer::Target::ArrayBuffer)
            );
            assert_eq!(
                indices.view().unwrap().target(),
                Some(gltf::buffer::Target::ElementArrayBuffer)
            );

            let reader = prim.reader(|_| gltf.blob.as_deref());
            let read: Vec<Vec3> = reader.read_positions().unwrap().map(Vec3::from).collect();
            assert_eq!(read, m.positions);
            let read: Vec<Vec3> = reader.read_normals().unwrap().map(Vec3::from).collect();
            assert_eq!(read, m.normals);
            for n in &read {
                assert!((n.length() - 1.0).abs() < 1e-5);
            }
            let read: Vec<Vec2> = reader.read_tex_coords(0).unwrap().into_f32().map(Vec2::from).collect();
            assert_eq!(read, m.uvs);
            let read: Vec<u32> = reader.read_indices().unwrap().into_u32().collect();
            assert!(read.iter().all(|&i| (i as usize) < m.vertex_count()));
            assert_eq!(read, m.indices);
        }
    }

    #[test]
    fn glb_loads_with_the_gltf_crate() {
        let dir = TempDir::new("glb");
        let skeleton = test_tree(3, 907, 1530).unwrap();
        let opts = ExportOptions::default();
        let path = dir.path("tree.glb");
        let stats = export(&skeleton, &path, &opts).unwrap();
        let mesh = build_mesh(&skeleton, &opts);
        assert_eq!(stats.bark_triangles, mesh.bark.triangle_count());
        assert_eq!(stats.leaf_triangles, 2 * 1530);
        assert_eq!(stats.triangles, stats.bark_triangles + stats.leaf_triangles);
        assert_eq!(stats.vertices, mesh.bark.vertex_count() + 4 * 1530);
        check_glb(&path, &mesh, &stats);
        assert_eq!(dir.names(), ["tree.glb"], "no temporary file is left");

        // Without leaves: one primitive, one material.
        let opts = ExportOptions {
            leaves: false,
            ..ExportOptions::default()
        };
        let path = dir.path("bare.GLB");
        let stats = export(&skeleton, &path, &opts).unwrap();
        let mesh = build_mesh(&skeleton, &opts);
        assert_eq!(stats.leaf_triangles, 0);
        check_glb(&path, &mesh, &stats);
        let gltf = gltf::Gltf::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(gltf.materials().count(), 1);
        assert_eq!(dir.names(), ["bare.GLB", "tree.glb"]);
    }

    /// What a tiny OBJ reader finds: positions, texture coordinates, normals and, per material,
    /// the triangles as (position, uv, normal) 1-based index triples.
    #[derive(Default)]
    struct ObjFile {
        mtllib: Option<String>,
        v: Vec<Vec3>,
        vt: Vec<Vec2>,
        vn: Vec<Vec3>,
        faces: Vec<(String, [[usize; 3]; 3])>,
    }

    fn read_obj(text: &str) -> ObjFile {
        let mut obj = ObjFile::default();
        let mut material = String::new();
        let floats = |rest: &[&str]| -> Vec<f32> { rest.iter().map(|s| s.parse().unwrap()).collect() };
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                [w, ..] if w.starts_with('#') => {}
                ["mtllib", name] => obj.mtllib = Some(name.to_string()),
                ["o" | "g", _] => {}
                ["usemtl", name] => material = name.to_string(),
                ["v", rest @ ..] => obj.v.push(Vec3::from_slice(&floats(rest))),
                ["vt", rest @ ..] => obj.vt.push(Vec2::from_slice(&floats(rest))),
                ["vn", rest @ ..] => obj.vn.push(Vec3::from_slice(&floats(rest))),
                ["f", a, b, c] => {
                    let corner = |s: &str| -> [usize; 3] {
                        let parts: Vec<usize> = s.split('/').map(|p| p.parse().unwrap()).collect();
                        [parts[0], parts[1], parts[2]]
                    };
                    obj.faces.push((material.clone(), [corner(a), corner(b), corner(c)]));
                }
                other => panic!("unexpected OBJ line {other:?}"),
            }
        }
        obj
    }

    #[test]
    fn obj_reads_back() {
        let dir = TempDir::new("obj");
        let skeleton = test_tree(5, 907, 1530).unwrap();
        let opts = ExportOptions {
            sides: 6,
            ..ExportOptions::default()
        };
        let path = dir.path("tree.obj");
        let stats = export(&skeleton, &path, &opts).unwrap();
        let mesh = build_mesh(&skeleton, &opts);
        assert_eq!(dir.names(), ["tree.mtl", "tree.obj"], "no temporary file is left");
        let text = fs::read_to_string(&path).unwrap();
        let mtl = fs::read_to_string(dir.path("tree.mtl")).unwrap();
        assert_eq!(stats.bytes, (text.len() + mtl.len()) as u64);
        assert!(mtl.contains("newmtl bark") && mtl.contains("newmtl leaf"));
        assert!(!mtl.contains("map_"), "no textures");

        let obj = read_obj(&text);
        assert_eq!(obj.mtllib.as_deref(), Some("tree.mtl"));
        let nb = mesh.bark.vertex_count();
        let nl = mesh.leaves.vertex_count();
        assert_eq!(obj.v.len(), nb + nl);
        assert_eq!(obj.vt.len(), nb + nl);
        assert_eq!(obj.vn.len(), nb + 2 * nl, "leaf back faces have their own normals");
        assert_eq!(stats.vertices, obj.v.len());
        assert_eq!(&obj.v[..nb], &mesh.bark.positions[..]);
        assert_eq!(&obj.v[nb..], &mesh.leaves.positions[..]);
        for (t, uv) in obj.vt.iter().zip(mesh.bark.uvs.iter().chain(&mesh.leaves.uvs)) {
            assert!((t.y - (1.0 - uv.y)).abs() < 1e-6 && t.x == uv.x, "v is flipped for OBJ");
        }
        for n in &obj.vn {
            assert!((n.length() - 1.0).abs() < 1e-5, "normal {n}");
        }

        let bark_faces = obj.faces.iter().filter(|(m, _)| m == "bark").count();
        let leaf_faces = obj.faces.iter().filter(|(m, _)| m == "leaf").count();
        assert_eq!(bark_faces, mesh.bark.triangle_count());
        assert_eq!(leaf_faces, 4 * skeleton.leaves.len(), "each card front and back");
        assert_eq!(obj.faces.len(), stats.triangles);
        assert_eq!((stats.bark_triangles, stats.leaf_triangles), (bark_faces, leaf_faces));
        for (_, corners) in &obj.faces {
            for [v, t, n] in corners {
                assert!((1..=obj.v.len()).contains(v));
                assert!((1..=obj.vt.len()).contains(t));
                assert!((1..=obj.vn.len()).contains(n));
            }
        }
        // Every face, back faces included, turns its front towards its normals.
        for (_, c) in &obj.faces {
            let p = |k: usize| obj.v[c[k][0] - 1];
            let face = (p(1) - p(0)).cross(p(2) - p(0));
            if face.length() > 1e-9 {
                let smooth: Vec3 = c.iter().map(|k| obj.vn[k[2] - 1]).sum();
                assert!(face.dot(smooth) > 0.0);
            }
        }

        // Exporting again replaces both files.
        let again = export(&skeleton, &path, &opts).unwrap();
        assert_eq!(again, stats);
        assert_eq!(dir.names(), ["tree.mtl", "tree.obj"]);
    }

    fn message(e: anyhow::Error) -> String {
        format!("{e:#}")
    }

    #[test]
    fn unsupported_extensions_are_refused() {
        let dir = TempDir::new("ext");
        let skeleton = hand_tree();
        for name in ["tree.gltf", "tree.fbx", "tree", "tree.obj.txt"] {
            let path = dir.path(name);
            let e = message(export(&skeleton, &path, &ExportOptions::default()).unwrap_err());
            assert!(e.contains(".obj") && e.contains(".glb"), "{e}");
            assert!(e.contains(name), "{e}");
        }
        assert!(dir.names().is_empty(), "{:?}", dir.names());
        let e = message(write_obj(&build_mesh(&skeleton, &ExportOptions::default()), &dir.path("x.mtl")).unwrap_err());
        assert!(e.contains(".mtl"), "{e}");
        assert!(dir.names().is_empty());
    }

    #[test]
    fn bad_options_and_skeletons_are_refused() {
        let dir = TempDir::new("opts");
        let skeleton = hand_tree();
        for sides in [0, 2, 65] {
            let opts = ExportOptions {
                sides,
                ..ExportOptions::default()
            };
            let e = message(export(&skeleton, &dir.path("t.glb"), &opts).unwrap_err());
            assert!(e.contains("3..=64"), "{e}");
        }
        let opts = ExportOptions {
            twig_sides: Some(TwigSides {
                below_radius: 0.01,
                sides: 1,
            }),
            ..ExportOptions::default()
        };
        assert!(message(export(&skeleton, &dir.path("t.obj"), &opts).unwrap_err()).contains("3..=64"));
        let mut broken = skeleton.clone();
        broken.segments[2].parent = Some(5);
        let e = message(export(&broken, &dir.path("t.obj"), &ExportOptions::default()).unwrap_err());
        assert!(e.contains("segment 2"), "{e}");
        // Meshing it anyway does not panic.
        let _ = build_mesh(&broken, &ExportOptions::default());
        assert!(
            message(export(&Skeleton::default(), &dir.path("t.glb"), &ExportOptions::default()).unwrap_err())
                .contains("at least one segment")
        );
        assert!(dir.names().is_empty());
    }

    #[test]
    fn unwritable_destinations_fail_cleanly() {
        let dir = TempDir::new("io");
        let skeleton = hand_tree();
        let opts = ExportOptions::default();

        // A directory that does not exist.
        for name in ["tree.glb", "tree.obj"] {
            let path = dir.path("missing").join(name);
            let e = message(export(&skeleton, &path, &opts).unwrap_err());
            assert!(e.contains(&path.display().to_string()), "{e}");
        }
        // A "directory" that is a file.
        fs::write(dir.path("file"), b"x").unwrap();
        for name in ["tree.glb", "tree.obj"] {
            let path = dir.path("file").join(name);
            let e = message(export(&skeleton, &path, &opts).unwrap_err());
            assert!(e.contains(&path.display().to_string()), "{e}");
        }
        assert_eq!(dir.names(), ["file"]);

        // The destination is a directory: the file is written in full under a temporary name,
        // the destination is refused before any rename, and the temporary files go away (for
        // OBJ the .mtl too, though its own destination was free).
        for name in ["tree.glb", "tree.obj"] {
            fs::create_dir(dir.path(name)).unwrap();
            let e = message(export(&skeleton, &dir.path(name), &opts).unwrap_err());
            assert!(e.contains(name) && e.contains("a folder") && !e.contains(".tmp"), "{e}");
        }
        assert_eq!(dir.names(), ["file", "tree.glb", "tree.obj"]);

        // A read-only directory (meaningless for root, who may write anyway).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let locked = dir.path("locked");
            fs::create_dir(&locked).unwrap();
            fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
            let probe = locked.join("probe");
            let root_like = fs::write(&probe, b"").is_ok();
            let _ = fs::remove_file(&probe);
            if !root_like {
                let path = locked.join("tree.glb");
                let e = message(export(&skeleton, &path, &opts).unwrap_err());
                assert!(e.contains(&path.display().to_string()), "{e}");
                assert_eq!(fs::read_dir(&locked).unwrap().count(), 0);
            }
            fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    /// Sizes of the dense test tree's files (shown with `--nocapture`).
    #[test]
    fn dense_tree_exports() {
        let dir = TempDir::new("dense");
        let skeleton = test_tree(1, 2246, 6840).unwrap();
        let opts = ExportOptions::default();
        for name in ["tree.glb", "tree.obj"] {
            let stats = export(&skeleton, &dir.path(name), &opts).unwrap();
            println!("{name}: {stats:?}");
            assert!(stats.bytes > 0);
        }
        let mtl = fs::metadata(dir.path("tree.mtl")).unwrap().len();
        let obj = fs::metadata(dir.path("tree.obj")).unwrap().len();
        let glb = fs::metadata(dir.path("tree.glb")).unwrap().len();
        println!("tree.glb {glb} B, tree.obj {obj} B, tree.mtl {mtl} B");
    }
}
