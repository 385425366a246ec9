//! Tests of `export --animate`: the joint budget, the Khronos validator's verdict on the file,
//! and the animation read back by a third-party reader (the `gltf` crate) against a simulation
//! run alongside.

use std::path::PathBuf;

use glam::{Mat4, Quat, Vec3};
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::dynamics::pose::segment_axis;
use sylva_sim::dynamics::ModelKind;
use sylva_sim::forest::forest_indices;
use sylva_sim::weberpenn::{generate, GenOptions};
use sylva_sim::{test_tree, Skeleton};

use super::*;
use crate::export::tests::{khronos_validate, TempDir};

/// How far a joint read back from the file may lie from the simulation's segment base at the
/// same time \[m\]: the keyframes are the simulation's own poses, stored as `f32`.
const JOINT_TOLERANCE_M: f32 = 1e-5;

/// The small birch of the test fixtures (Arbaro), grown with seed 13.
fn birch() -> Skeleton {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/specs/arbaro/small_birch.xml");
    let spec = crate::trees::load_spec(&path, None).expect("the fixture loads");
    let grown = generate(
        &spec,
        &GenOptions {
            seed: 13,
            ..GenOptions::default()
        },
        &mut |_| {},
    )
    .expect("the fixture grows");
    grown.skeleton
}

fn options(seconds: f64, fps: u32, wind: f32, max_joints: u32) -> AnimateOptions {
    AnimateOptions {
        seconds,
        fps,
        wind,
        heading: 30.0,
        seed: 7,
        max_joints,
        model: ModelKind::Weber,
    }
}

#[test]
fn joints_are_a_connected_top_of_the_tree_within_the_budget() {
    let skel = test_tree(4, 500, 0).unwrap();
    for budget in [1, 2, 40, 499, 500, 4096] {
        let joints = choose_joints(&skel, budget, &[]);
        assert_eq!(joints.segments.len(), (budget as usize).min(500));
        assert_eq!(joints.segments[0], 0, "the root is a joint");
        let is_joint = |i: usize| joints.segments.binary_search(&i).is_ok();
        for (j, &s) in joints.segments.iter().enumerate() {
            assert_eq!(joints.of_segment[s] as usize, j);
            if let Some(p) = skel.segments[s].parent {
                assert!(
                    is_joint(p as usize),
                    "budget {budget}: joint {s}'s parent {p} is one too"
                );
            }
        }
        // Every other segment moves with its nearest jointed ancestor.
        for i in 0..500 {
            let mut a = i;
            while !is_joint(a) {
                a = skel.segments[a].parent.unwrap() as usize;
            }
            assert_eq!(joints.segments[joints.of_segment[i] as usize], a, "segment {i}");
        }
    }
    // With a budget, the joints carry the largest subtrees: the trunk's first segments.
    let joints = choose_joints(&skel, 3, &[]);
    assert_eq!(&joints.segments[..1], &[0]);
    // Broken pieces' first segments are joints within the budget, and their twigs move with
    // them.
    let joints = choose_joints(&skel, 10, &[300, 120]);
    assert_eq!((joints.segments.len(), joints.pieces), (10, 2));
    assert_eq!(joints.segments[0], 0);
    for piece in [120, 300] {
        let j = joints.of_segment[piece];
        assert_eq!(joints.segments[j as usize], piece);
        for i in piece + 1..500 {
            if skel.segments[i].parent == Some(piece as u32) && joints.segments.binary_search(&i).is_err() {
                assert_eq!(joints.of_segment[i], j, "segment {i} hangs on piece {piece}");
            }
        }
    }
}

#[test]
fn options_out_of_range_are_refused_naming_the_range() {
    let ok = options(2.0, 30, 8.0, 64);
    ok.validate().unwrap();
    assert_eq!(ok.frames(), 61);
    for (bad, expect) in [
        (AnimateOptions { seconds: 0.0, ..ok }, "more than 0"),
        (
            AnimateOptions {
                seconds: f64::NAN,
                ..ok
            },
            "at most 600",
        ),
        (AnimateOptions { fps: 0, ..ok }, "1..=240"),
        (AnimateOptions { max_joints: 5000, ..ok }, "1..=4096"),
        (
            AnimateOptions {
                wind: f32::INFINITY,
                ..ok
            },
            "finite",
        ),
    ] {
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains(expect), "{e}");
    }
}

#[test]
fn an_animated_glb_passes_the_khronos_validator() {
    let dir = TempDir::new("animate-valid");
    let path = dir.path("tree.glb");
    let jobs = JobSystem::new(2).unwrap();
    let stats = export_animated(
        &birch(),
        &path,
        &ExportOptions::default(),
        &options(1.0, 24, 10.0, 64),
        &jobs,
    )
    .unwrap();
    assert_eq!((stats.joints, stats.keyframes), (64, 25));
    let report = khronos_validate(&path);
    assert_eq!(report["numErrors"], 0, "{report}");
    assert_eq!(report["numWarnings"], 0, "{report}");
    // The validator does find faults: the same file cut short fails it.
    let bytes = std::fs::read(&path).unwrap();
    let cut = dir.path("cut.glb");
    std::fs::write(&cut, &bytes[..bytes.len() - 1000]).unwrap();
    let report = khronos_validate(&cut);
    assert!(report["numErrors"].as_u64().unwrap() > 0, "{report}");
}

/// A joint's world matrix as the file's animation gives it at keyframe `k`.
fn keyframe(translations: &[[f32; 3]], rotations: &[[f32; 4]], k: usize) -> (Vec3, Quat) {
    (Vec3::from(translations[k]), Quat::from_array(rotations[k]))
}

/// What `follows` found: the export's figures, the joints' segments and, per joint and
/// keyframe, its position.
struct ReadBack {
    written: AnimationStats,
    segment_of: Vec<usize>,
    translations: Vec<Vec<[f32; 3]>>,
}

/// Exports `skel` animated with `opts` (3 s at 20 keyframes per second), reads the file back
/// with the gltf crate and checks it against the same simulation run alongside: each joint on
/// its segment's base within `JOINT_TOLERANCE_M` at every keyframe, turned as the segment is,
/// and the skinned mesh at 0 s the still mesh.
fn follows(skel: &Skeleton, opts: &AnimateOptions) -> ReadBack {
    let dir = TempDir::new("animate-follow");
    let path = dir.path("tree.glb");
    let jobs = JobSystem::new(2).unwrap();
    let written = export_animated(skel, &path, &ExportOptions::default(), opts, &jobs).unwrap();
    assert_eq!(written.keyframes, 61);
    let budget = opts.max_joints as usize;

    // Read back by the gltf crate.
    let bytes = std::fs::read(&path).unwrap();
    let gltf = gltf::Gltf::from_slice(&bytes).expect("the .glb loads and validates");
    let blob = gltf.blob.as_deref();
    let skin = gltf.skins().next().expect("a skin");
    let joint_nodes: Vec<usize> = skin.joints().map(|n| n.index()).collect();
    assert_eq!(joint_nodes.len(), budget.min(skel.segments.len()));
    let ibms: Vec<Mat4> = skin
        .reader(|_| blob)
        .read_inverse_bind_matrices()
        .unwrap()
        .map(|m| Mat4::from_cols_array_2d(&m))
        .collect();
    let segment_of: Vec<usize> = skin
        .joints()
        .map(|n| n.name().unwrap().strip_prefix("segment ").unwrap().parse().unwrap())
        .collect();
    let animation = gltf.animations().next().expect("an animation");
    assert_eq!(animation.name(), Some("wind"));
    let mut times = Vec::new();
    let mut translations = vec![Vec::new(); joint_nodes.len()];
    let mut rotations = vec![Vec::new(); joint_nodes.len()];
    for channel in animation.channels() {
        let reader = channel.reader(|_| blob);
        times = reader.read_inputs().unwrap().collect();
        let j = joint_nodes
            .iter()
            .position(|&n| n == channel.target().node().index())
            .unwrap();
        match reader.read_outputs().unwrap() {
            gltf::animation::util::ReadOutputs::Translations(t) => translations[j] = t.collect(),
            gltf::animation::util::ReadOutputs::Rotations(r) => rotations[j] = r.into_f32().collect(),
            _ => panic!("only translations and rotations are animated"),
        }
    }
    assert_eq!(times.len(), 61);
    for (k, &t) in times.iter().enumerate() {
        assert!((t - k as f32 / 20.0).abs() < 1e-6, "keyframe {k} at {t} s");
    }

    // At keyframe 0 the skinned mesh is the still mesh: the inverse bind matrices undo the
    // joints' first poses.
    let mesh = build_mesh(skel, &ExportOptions::default());
    for (v, &s) in mesh.bark.positions.iter().zip(&mesh.bark.segments) {
        // The vertex's joint, as the file binds it: its segment's or the nearest ancestor's.
        let mut a = s as usize;
        while !segment_of.contains(&a) {
            a = skel.segments[a].parent.unwrap() as usize;
        }
        let j = segment_of.iter().position(|&x| x == a).unwrap();
        let (t, q) = keyframe(&translations[j], &rotations[j], 0);
        let skinned = Mat4::from_rotation_translation(q, t) * ibms[j] * v.extend(1.0);
        assert!(
            skinned.truncate().distance(*v) < 1e-4,
            "vertex of segment {s} moved at 0 s"
        );
    }

    // The same simulation, run alongside: each joint sits on its segment's base at every
    // keyframe, turned as the segment is.
    let index = forest_indices(skel);
    let mut sim = animation_model(animation_forest(skel).unwrap(), opts).unwrap();
    let timings = FrameTimings::new(sim.phases());
    for (k, &t) in times.iter().enumerate() {
        while sim.time() < t as f64 - 0.5 * sim.dt() as f64 {
            sim.step(&jobs, &timings);
        }
        let pose = sim.pose();
        for (j, &s) in segment_of.iter().enumerate() {
            let f = index[s] as usize;
            let (tk, qk) = keyframe(&translations[j], &rotations[j], k);
            let gap = tk.distance(pose.base[f]);
            assert!(
                gap <= JOINT_TOLERANCE_M,
                "joint {j} (segment {s}) at {t} s is {gap} m off"
            );
            let turn = segment_axis(qk).angle_between(segment_axis(pose.orient[f]));
            assert!(turn < 1e-3, "joint {j} (segment {s}) at {t} s is turned {turn} rad off");
        }
    }
    ReadBack {
        written,
        segment_of,
        translations,
    }
}

/// The farthest any joint gets from where it starts \[m\].
fn farthest(r: &ReadBack) -> f32 {
    r.translations
        .iter()
        .flat_map(|t| t.iter().map(|p| Vec3::from(*p).distance(Vec3::from(t[0]))))
        .fold(0.0, f32::max)
}

#[test]
fn the_animation_read_back_follows_the_simulation() {
    let r = follows(&birch(), &options(3.0, 20, 12.0, 48));
    assert_eq!(r.written.broken, 0);
    // The wind moves the tree: the joints are not still.
    let moved = farthest(&r);
    assert!(moved > 0.02, "the joints moved at most {moved} m in a 12 m/s wind");
}

#[test]
fn broken_branches_fall_on_joints_of_their_own() {
    let skel = birch();
    let r = follows(&skel, &options(3.0, 20, 40.0, 32));
    assert!(r.written.broken > 0, "a 40 m/s wind breaks the small birch");
    assert_eq!(r.segment_of.len(), 32, "the pieces count in the budget");
    // A piece falls: its first segment ends far below where it grew.
    let (j, drop) = r
        .translations
        .iter()
        .enumerate()
        .map(|(j, t)| (j, t[0][1] - t.last().unwrap()[1]))
        .fold((0, f32::MIN), |a, b| if b.1 > a.1 { b } else { a });
    assert!(
        drop > 1.0,
        "joint {j} (segment {}) dropped only {drop} m",
        r.segment_of[j]
    );
}
