//! Unit tests of `export`, beside it so that `export.rs` holds the code alone.

use super::*;
use std::fs;

use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

use sylva_sim::skeleton::{SkeletonLeaf, SkeletonSegment};
use sylva_sim::test_tree;

/// A fresh directory under the system's temporary directory, removed when dropped.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new(label: &str) -> TempDir {
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

    pub(super) fn path(&self, name: &str) -> PathBuf {
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
                ..ExportOptions::default()
            };
            let mesh = build_mesh(skeleton, &opts);
            let built = (
                (mesh.bark.vertex_count() + mesh.leaves.vertex_count()) as u64,
                (mesh.bark.triangle_count() + mesh.leaves.triangle_count()) as u64,
            );
            assert_eq!(mesh_size(skeleton, &opts), built, "{opts:?}");
        }
        // Fewer rings, thinned leaves and pruned stems are counted as exactly.
        for (ring_step, leaf_keep, min_radius) in [(2, 3, 0.0), (4, 1, 0.01), (3, 7, 0.05), (1, 2, 1.0)] {
            let opts = ExportOptions {
                sides: 5,
                ring_step,
                leaf_keep,
                min_radius,
                ..ExportOptions::default()
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
        ..ExportOptions::default()
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
                // The leaf texture, embedded as a PNG the reader decodes to the same pixels.
                let info = material
                    .pbr_metallic_roughness()
                    .base_color_texture()
                    .expect("a leaf texture");
                let image = info.texture().source();
                match image.source() {
                    gltf::image::Source::View { view, mime_type } => {
                        assert_eq!(mime_type, "image/png");
                        let blob = gltf.blob.as_deref().unwrap();
                        let png = &blob[view.offset()..view.offset() + view.length()];
                        let decoded = sylva_render::Rgba::from_png(png).unwrap();
                        assert_eq!(
                            decoded,
                            texture::leaf_texture(&ExportLook::default(), texture::LEAF_TEXTURE_SIZE)
                        );
                    }
                    other => panic!("the leaf texture is not embedded: {other:?}"),
                }
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

/// Where the Khronos glTF validator's npm package is: `SYLVA_GLTF_VALIDATOR`, else where
/// `scripts/test.sh` installs it.
fn khronos_validator() -> PathBuf {
    if let Some(dir) = std::env::var_os("SYLVA_GLTF_VALIDATOR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache/sylva/gltf-validator-2.0.0-dev.3.10/node_modules/gltf-validator")
}

/// The Khronos glTF validator's report on `path` (its `issues` object: `numErrors`,
/// `numWarnings`, `messages`). Panics, saying how to install it, when it is missing.
pub(super) fn khronos_validate(path: &Path) -> Value {
    let validator = khronos_validator();
    assert!(
        validator.join("package.json").is_file(),
        "the Khronos glTF validator is not at {} (scripts/test.sh installs it; or set SYLVA_GLTF_VALIDATOR to the folder of its npm package gltf-validator)",
        validator.display()
    );
    let script = "const v = require(process.argv[1]); const fs = require('fs');\n\
        v.validateBytes(new Uint8Array(fs.readFileSync(process.argv[2])))\n\
        .then(r => console.log(JSON.stringify(r.issues)))\n\
        .catch(e => { console.error(String(e)); process.exit(2); });";
    let out = std::process::Command::new("node")
        .arg("-e")
        .arg(script)
        .arg(&validator)
        .arg(path)
        .output()
        .expect("node runs (scripts/test.sh installs Node.js with the validator)");
    assert!(
        out.status.success(),
        "the validator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the validator prints its report as JSON")
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
    let report = khronos_validate(&path);
    assert_eq!(
        (&report["numErrors"], &report["numWarnings"]),
        (&0.into(), &0.into()),
        "{report}"
    );

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
    assert_eq!(
        dir.names(),
        ["tree.mtl", "tree.obj", "tree_bark.png", "tree_leaf.png"],
        "no temporary file is left"
    );
    let text = fs::read_to_string(&path).unwrap();
    let mtl = fs::read_to_string(dir.path("tree.mtl")).unwrap();
    let png = fs::read(dir.path("tree_leaf.png")).unwrap();
    let bark_png = fs::read(dir.path("tree_bark.png")).unwrap();
    assert_eq!(
        stats.bytes,
        (text.len() + mtl.len() + png.len() + bark_png.len()) as u64
    );
    assert!(mtl.contains("map_Kd tree_bark.png"), "{mtl}");
    assert_eq!(
        sylva_render::Rgba::from_png(&bark_png).unwrap(),
        texture::bark_texture(&ExportLook::default(), texture::BARK_TEXTURE_SIZE)
    );
    assert!(mtl.contains("newmtl bark") && mtl.contains("newmtl leaf"));
    assert!(
        mtl.contains("map_Kd tree_leaf.png") && mtl.contains("map_d tree_leaf.png"),
        "{mtl}"
    );
    // The texture is the leaf texture, alpha and all.
    let image = sylva_render::Rgba::from_png(&png).unwrap();
    assert_eq!(
        image,
        texture::leaf_texture(&ExportLook::default(), texture::LEAF_TEXTURE_SIZE)
    );

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

    // Exporting again replaces the three files.
    let again = export(&skeleton, &path, &opts).unwrap();
    assert_eq!(again, stats);
    assert_eq!(dir.names(), ["tree.mtl", "tree.obj", "tree_bark.png", "tree_leaf.png"]);
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

/// `--max-triangles`: the fitted mesh has at most the budget, as much of the tree as the ladder
/// allows (tube sides first), and the thinned leaves keep the foliage's area.
#[test]
fn a_triangle_budget_is_met_keeping_the_foliage() {
    let skeleton = test_tree(1, 2246, 6840).unwrap();
    let full = ExportOptions::default();
    let (_, all) = mesh_size(&skeleton, &full);
    let leaf_area = |m: &Mesh| -> f32 {
        m.indices
            .chunks_exact(3)
            .map(|t| {
                let [a, b, c] = [0, 1, 2].map(|k| m.positions[t[k] as usize]);
                0.5 * (b - a).cross(c - a).length()
            })
            .sum()
    };
    let full_area = leaf_area(&build_mesh(&skeleton, &full).leaves);
    let (same, why) = fit_triangles(&skeleton, &full, all).unwrap();
    assert_eq!((same, why.as_str()), (full, "nothing left out"));
    for budget in [all * 3 / 4, all / 2, all / 4, all / 10, all / 40] {
        let (fitted, why) = fit_triangles(&skeleton, &full, budget).unwrap();
        let mesh = build_mesh(&skeleton, &fitted);
        let triangles = (mesh.bark.triangle_count() + mesh.leaves.triangle_count()) as u64;
        assert!(triangles <= budget, "{budget}: {triangles} triangles ({why})");
        assert!(
            triangles * 3 >= budget,
            "{budget}: only {triangles} triangles used ({why})"
        );
        if fitted.leaf_keep > 1 {
            let area = leaf_area(&mesh.leaves);
            assert!(
                (area / full_area - 1.0).abs() < 0.1,
                "{budget}: the thinned leaves cover {area} m² of {full_area} ({why})"
            );
        }
        // The first step is fewer sides alone.
        if budget == all * 3 / 4 {
            assert!(
                fitted.sides < full.sides && fitted.leaf_keep == 1 && fitted.min_radius == 0.0,
                "{why}"
            );
        }
    }
    let e = format!("{:#}", fit_triangles(&skeleton, &full, 10).unwrap_err());
    assert!(e.contains("10 triangles") && e.contains("--max-triangles"), "{e}");
}

/// Levels of detail: one .glb, one mesh per level named tree_LODk, each within a quarter of the
/// one before, the finest listing the others in MSFT_lod; the Khronos validator passes it.
#[test]
fn levels_of_detail_go_into_one_glb() {
    let dir = TempDir::new("lods");
    let skeleton = test_tree(2, 907, 1530).unwrap();
    let path = dir.path("tree.glb");
    let levels = export_lods(&skeleton, &path, &ExportOptions::default(), 3).unwrap();
    assert_eq!(levels.len(), 3);
    for pair in levels.windows(2) {
        assert!(pair[1].0.triangles * 4 <= pair[0].0.triangles, "{levels:?}");
    }
    let bytes = fs::read(&path).unwrap();
    let gltf = gltf::Gltf::from_slice(&bytes).unwrap();
    let names: Vec<_> = gltf.nodes().map(|n| n.name().unwrap().to_string()).collect();
    assert_eq!(names, ["tree_LOD0", "tree_LOD1", "tree_LOD2"]);
    assert_eq!(
        gltf.scenes().next().unwrap().nodes().count(),
        1,
        "the scene shows the finest"
    );
    // The extension, read from the file's JSON (the gltf crate does not know it).
    let (json_text, _) = glb_chunks(&bytes);
    let document: Value = serde_json::from_slice(json_text).unwrap();
    assert_eq!(
        document["nodes"][0]["extensions"]["MSFT_lod"],
        serde_json::json!({ "ids": [1, 2] })
    );
    assert_eq!(document["extensionsUsed"], serde_json::json!(["MSFT_lod"]));
    for (mesh, (stats, _)) in gltf.meshes().zip(&levels) {
        let triangles: usize = mesh.primitives().map(|p| p.indices().unwrap().count() / 3).sum();
        assert_eq!(triangles, stats.triangles);
    }
    let report = khronos_validate(&path);
    assert_eq!(
        (&report["numErrors"], &report["numWarnings"]),
        (&0.into(), &0.into()),
        "{report}"
    );
    let e = format!(
        "{:#}",
        export_lods(&skeleton, &dir.path("tree.obj"), &ExportOptions::default(), 2).unwrap_err()
    );
    assert!(e.contains("only a .glb"), "{e}");
}

/// The species' look reaches the file: the bark's colour, and the leaf texture in the leaf
/// colour with the leaf shape's outline.
#[test]
fn the_species_look_is_exported() {
    let dir = TempDir::new("look");
    let mut spec = sylva_sim::spec::WeberPennSpec::arbaro_default("look", sylva_sim::spec::SpecTool::Sylva);
    spec.leaf_color = Some([0.5, 0.1, 0.05]);
    spec.bark_color = Some([0.6, 0.6, 0.55]);
    spec.leaf_shape = "needle".into();
    let look = ExportLook::of(&spec);
    let opts = ExportOptions {
        look,
        ..ExportOptions::default()
    };
    let skeleton = test_tree(3, 200, 300).unwrap();
    let path = dir.path("tree.glb");
    export(&skeleton, &path, &opts).unwrap();
    let bytes = fs::read(&path).unwrap();
    let gltf = gltf::Gltf::from_slice(&bytes).unwrap();
    let bark = gltf.materials().find(|m| m.name() == Some("bark")).unwrap();
    let image = bark.pbr_metallic_roughness().base_color_texture().unwrap().texture();
    assert_eq!(
        image.sampler().wrap_s(),
        gltf::texture::WrappingMode::Repeat,
        "bark tiles"
    );
    let gltf::image::Source::View { view, .. } = image.source().source() else {
        panic!("not embedded")
    };
    let blob = gltf.blob.as_deref().unwrap();
    let bark_png = sylva_render::Rgba::from_png(&blob[view.offset()..view.offset() + view.length()]).unwrap();
    assert_eq!(bark_png, texture::bark_texture(&look, texture::BARK_TEXTURE_SIZE));
    let leaf = gltf.materials().find(|m| m.name() == Some("leaf")).unwrap();
    let image = leaf
        .pbr_metallic_roughness()
        .base_color_texture()
        .unwrap()
        .texture()
        .source();
    let gltf::image::Source::View { view, .. } = image.source() else {
        panic!("not embedded")
    };
    let blob = gltf.blob.as_deref().unwrap();
    let png = sylva_render::Rgba::from_png(&blob[view.offset()..view.offset() + view.length()]).unwrap();
    assert_eq!(png, texture::leaf_texture(&look, texture::LEAF_TEXTURE_SIZE));
    // A needle: reddish here, and narrow (the card's edge columns are clear all the way up).
    let p = png.pixel(png.width / 2, png.height / 2);
    assert!(p[0] > p[1] && p[3] == 255, "{p:?}");
    assert!((0..png.height).all(|y| png.pixel(png.width / 4, y)[3] == 0));
}
