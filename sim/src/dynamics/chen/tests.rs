//! Chen's model against statics, against its own invariants and across worker counts.

use glam::{Quat, Vec3};
use sylva_engine::{FrameTimings, JobSystem};

use super::{ChenModel, ChenParams};
use crate::collider::{Motion, SphereCollider};
use crate::collision::runtime::SelfCollisionParams;
use crate::dynamics::pose::segment_axis;
use crate::dynamics::test_winds::Swirl;
use crate::dynamics::DynamicsModel;
use crate::forest::at_origin as forest_of;
use crate::forest::{Forest, NO_PARENT};
use crate::material::{DragLaw, Material, Stiffness};
use crate::scene::TestForest;
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment};
use crate::testtree::test_tree;
use crate::wind::{Calm, GustingWind, WindField};

fn jobs(threads: usize) -> JobSystem {
    JobSystem::new(threads).unwrap()
}

fn timings() -> FrameTimings {
    FrameTimings::new(super::PHASES)
}

/// A steady, uniform wind.
struct Steady(Vec3);

impl WindField for Steady {
    fn advance(&mut self, _time: f64) {}
    fn sample(&self, _p: Vec3) -> Vec3 {
        self.0
    }
    fn uniform(&self) -> Option<Vec3> {
        Some(self.0)
    }
}

fn tree(seed: u64, segments: usize, leaves: usize) -> Forest {
    forest_of(&test_tree(seed, segments, leaves).unwrap(), &Material::default())
}

/// Every segment's tip.
fn tips(m: &ChenModel) -> Vec<Vec3> {
    let f = m.forest();
    (0..f.segment_count())
        .map(|i| m.pose().tip(i, f.seg.length[i]))
        .collect()
}

/// A single upright stem of radius 1 cm and length 1 m, of soft wood (E = 1 GPa) under
/// Weber's linear drag (a wind force that does not depend on the motion), in a steady
/// horizontal wind, settles where its spring, its weight and the wind's moment balance. The
/// rigid rod on a torsion spring k (the forest's root joint, `Material::stiffness_of`) with
/// the drag force F = c·w at its tip (Eq. 4.6) and its weight m·g pre-stressed away at rest
/// (the moment of the weight grows as m·g·L·sin θ) is in equilibrium where
/// k·sin θ − m·g·L·sin θ = F·L·cos θ: tan θ = F·L/(k − m·g·L).
#[test]
fn a_stem_in_a_steady_wind_settles_downwind_at_the_static_deflection() {
    let (r, l) = (0.01f32, 1.0f32);
    let material = Material {
        stiffness: Stiffness::Beam { youngs_modulus: 1.0e9 },
        drag_law: DragLaw::Linear,
        ..Material::default()
    };
    let skel = Skeleton {
        segments: vec![SkeletonSegment::cylinder(None, Vec3::ZERO, Vec3::Y * l, r)],
        leaves: Vec::new(),
    };
    let f = forest_of(&skel, &material);
    let wind = 10.0f32;
    let force = material.wood_drag * 2.0 * r * l * wind;
    let k = material.stiffness_of(r, l, true);
    let mass = material.wood_density * std::f32::consts::PI * r * r * l;
    let params = ChenParams::for_material(&material);
    let want = (force * l / (k - mass * params.gravity * l)).atan();
    assert!(want > 0.05, "a deflection worth measuring: {want}");

    let mut m = ChenModel::new(f, params).unwrap();
    m.set_wind(Box::new(Steady(Vec3::X * wind)));
    let (jobs, timings) = (jobs(1), timings());
    let steps_per_window = 120;
    let mut windows = Vec::new();
    let mut last_speed = f32::MAX;
    for _ in 0..10 {
        let mut sum = 0.0f32;
        for _ in 0..steps_per_window {
            let before = tips(&m)[0];
            m.step(&jobs, &timings);
            let tip = tips(&m)[0];
            last_speed = (tip - before).length() / m.dt();
            sum += tip.x.atan2(tip.y);
        }
        windows.push(sum / steps_per_window as f32);
    }
    assert!(m.finite());
    let tip = tips(&m)[0];
    assert!(
        tip.x > 0.0 && tip.z.abs() < 1e-6,
        "downwind, in the wind's plane: {tip}"
    );
    assert!(last_speed < 1e-4, "the tip has stopped: {last_speed} m/s");
    let (a, b) = (windows[8], windows[9]);
    assert!((a - b).abs() < 1e-4 * b, "converged: {a} then {b}");
    assert!(
        (b - want).abs() < 0.01 * want,
        "steady deflection {b} rad, statics {want} rad"
    );
}

/// A tree bent by a strong wind and released in calm air settles back to its generated shape:
/// its kinetic energy falls to a millionth of what the wind gave it and every tip comes back
/// to within 1 mm of where it grew.
#[test]
fn a_tree_bent_and_released_settles_back_to_its_rest_shape() {
    let f = tree(5, 300, 200);
    let mut m = ChenModel::new(f, ChenParams::default()).unwrap();
    let rest = tips(&m);
    let (jobs, timings) = (jobs(2), timings());
    m.set_wind(Box::new(Steady(Vec3::new(15.0, 0.0, 5.0))));
    for _ in 0..120 {
        m.step(&jobs, &timings);
    }
    let bent = tips(&m)
        .iter()
        .zip(&rest)
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0f32, f32::max);
    assert!(bent > 0.02, "the wind bent the tree: {bent} m");
    // Let go while it moves.
    m.set_wind(Box::new(Calm));
    let mut peak = 0.0f64;
    for _ in 0..60 {
        m.step(&jobs, &timings);
        peak = peak.max(m.kinetic_energy());
    }
    assert!(peak > 0.0);
    for _ in 0..1800 {
        m.step(&jobs, &timings);
    }
    assert!(m.finite());
    let ke = m.kinetic_energy();
    assert!(ke < 1e-6 * peak, "kinetic energy {ke} J after a peak of {peak} J");
    let off = tips(&m)
        .iter()
        .zip(&rest)
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0f32, f32::max);
    assert!(off < 1e-3, "tips {off} m from where they grew");
}

/// After every step of a gusting wind (varying in space too), every segment's base is on its
/// parent's tip and every root on the ground where it grew.
#[test]
fn every_base_stays_on_its_parents_tip() {
    let f = TestForest::new(8, 500, 300, 3, &Material::default()).unwrap().forest;
    let mut m = ChenModel::new(f, ChenParams::default()).unwrap();
    let roots: Vec<Vec3> = m.forest().trees.iter().map(|t| t.root).collect();
    let (jobs, timings) = (jobs(2), timings());
    m.set_wind(Box::new(Swirl { time: 0.0, speed: 20.0 }));
    let mut moved = 0.0f32;
    for _ in 0..240 {
        let before = tips(&m);
        m.step(&jobs, &timings);
        let f = m.forest();
        let pose = m.pose();
        let now = tips(&m);
        for i in 0..f.segment_count() {
            let p = f.seg.parent[i];
            if p == NO_PARENT {
                assert_eq!(pose.base[i], roots[f.tree_of(i)], "root {i}");
            } else {
                let gap = (pose.base[i] - now[p as usize]).length();
                assert!(gap < 1e-5, "segment {i} is {gap} m off its parent's tip");
            }
            moved = moved.max((now[i] - before[i]).length());
        }
        // And every leaf still attached on its segment (the 20 m/s swirl tears some off, which
        // fall: `dynamics::falling`).
        for i in 0..f.segment_count() {
            for j in f.leaves_of(i).filter(|&j| m.falling().is_attached(j)) {
                let on = pose.base[i] + segment_axis(pose.orient[i]) * (f.leaf.along_f32(j) * f.seg.length[i]);
                assert!((pose.leaf_pos[j] - on).length() < 1e-5, "leaf {j}");
            }
        }
    }
    assert!(m.finite());
    assert!(moved > 1e-3, "the wind moved the trees: {moved} m per step");
}

/// The state after 90 steps of a gusting wind that varies in space, self-collision on, is the
/// same to the bit for 1, 2 and 4 workers: on six trees (whole trees as jobs for 1 and 2
/// workers, §4.3's tops and subtrees for 4) and on one tree (tops and subtrees for 2 and 4).
#[test]
fn identical_for_any_number_of_workers() {
    for (trees, segments) in [(6, 400), (1, 1500)] {
        let f = TestForest::new(21, segments, 300, trees, &Material::default())
            .unwrap()
            .forest;
        let run = |threads: usize, wind: Box<dyn WindField>| {
            let mut m = ChenModel::new(f.clone(), ChenParams::default()).unwrap();
            m.set_wind(wind);
            m.set_self_collision(Some(SelfCollisionParams::default())).unwrap();
            let (jobs, timings) = (jobs(threads), timings());
            for _ in 0..90 {
                m.step(&jobs, &timings);
            }
            assert!(m.finite());
            m.state_hash()
        };
        for wind in [
            || -> Box<dyn WindField> { Box::new(Swirl { time: 0.0, speed: 15.0 }) },
            || -> Box<dyn WindField> { Box::new(GustingWind::new(14.0, 0.3, 0.6, 7).unwrap()) },
        ] {
            let hashes: Vec<u64> = [1, 2, 4].into_iter().map(|t| run(t, wind())).collect();
            assert_eq!(hashes[0], hashes[1], "{trees} trees, 1 and 2 workers");
            assert_eq!(hashes[0], hashes[2], "{trees} trees, 1 and 4 workers");
            let rest = ChenModel::new(f.clone(), ChenParams::default()).unwrap().state_hash();
            assert_ne!(hashes[0], rest, "the wind moved the trees");
        }
    }
}

#[test]
fn bad_settings_are_refused_naming_the_setting() {
    let f = tree(3, 60, 40);
    let good = ChenParams::default();
    let cases: Vec<(ChenParams, &str)> = vec![
        (ChenParams { dt: 0.0, ..good }, "dt"),
        (ChenParams { dt: f32::NAN, ..good }, "dt"),
        (ChenParams { dt: 1.0, ..good }, "dt"),
        (
            ChenParams {
                stiffness_scale: 0.0,
                ..good
            },
            "stiffness scale",
        ),
        (
            ChenParams {
                stiffness_scale: f32::INFINITY,
                ..good
            },
            "stiffness scale",
        ),
        (
            ChenParams {
                transitivity: -0.1,
                ..good
            },
            "transitivity",
        ),
        (
            ChenParams {
                transitivity: 1.5,
                ..good
            },
            "transitivity",
        ),
        (
            ChenParams {
                transfer_rigidity: f32::NAN,
                ..good
            },
            "transfer rigidity",
        ),
        (ChenParams { damping: 1.0, ..good }, "damping"),
        (ChenParams { damping: -0.5, ..good }, "damping"),
        (
            ChenParams {
                leaf_wind: -1.0,
                ..good
            },
            "leaf wind",
        ),
        (
            ChenParams {
                leaf_frequency: 0.0,
                ..good
            },
            "leaf frequency",
        ),
        (ChenParams { gravity: -9.81, ..good }, "gravity"),
        (
            ChenParams {
                response_weights: (1.5, 1.0),
                ..good
            },
            "response weight P1",
        ),
        (
            ChenParams {
                response_weights: (1.0, f32::NAN),
                ..good
            },
            "response weight P2",
        ),
    ];
    for (p, name) in cases {
        let e = ChenModel::new(f.clone(), p).err().expect(name).to_string();
        assert!(e.contains(name) && e.contains("must be"), "{name}: {e}");
    }
    // A time step out of range is refused and the old one kept.
    let mut m = ChenModel::new(f.clone(), good).unwrap();
    let e = m.set_time_step(-0.01).unwrap_err().to_string();
    assert!(e.contains("dt"), "{e}");
    assert_eq!(DynamicsModel::dt(&m), good.dt);
    m.set_time_step(0.01).unwrap();
    assert_eq!(DynamicsModel::dt(&m), 0.01);
    // Leaves without mass cannot turn by Eq. 4.7.
    let light = Material {
        leaf_mass_per_area: 0.0,
        ..Material::default()
    };
    let e = ChenModel::new(forest_of(&test_tree(3, 60, 40).unwrap(), &light), good)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("leaf_mass_per_area"), "{e}");
}

/// A stiff stem carrying two leaves at its tip, both upright (blade along +y): one facing the
/// wind (normal +z, wind +z), one with the wind in its blade's plane (normal +x). The first
/// turns downwind (Eq. 4.4, F = C_W·n·(w·n)); the second feels no force and stays where its
/// segment carries it.
#[test]
fn a_leaf_facing_the_wind_turns_and_one_edge_on_does_not() {
    let material = Material::default();
    let leaf = |orientation: Quat| SkeletonLeaf {
        segment: 0,
        along: 1.0,
        orientation,
        length: 0.1,
        width: 0.05,
    };
    let skel = Skeleton {
        segments: vec![SkeletonSegment::cylinder(None, Vec3::ZERO, Vec3::Y, 0.05)],
        leaves: vec![
            leaf(Quat::IDENTITY),
            leaf(Quat::from_rotation_y(std::f32::consts::FRAC_PI_2)),
        ],
    };
    let f = forest_of(&skel, &material);
    let params = ChenParams {
        gravity: 0.0,
        ..ChenParams::for_material(&material)
    };
    let mut m = ChenModel::new(f, params).unwrap();
    // Which leaf is which in the forest's order: by its normal at rest.
    let normals: Vec<Vec3> = m.pose().leaf_orient.iter().map(|q| *q * Vec3::Z).collect();
    let facing = normals.iter().position(|n| n.z > 0.99).unwrap();
    let edge_on = normals.iter().position(|n| n.x.abs() > 0.99).unwrap();
    m.set_wind(Box::new(Steady(Vec3::Z * 5.0)));
    let (jobs, timings) = (jobs(1), timings());
    for _ in 0..120 {
        m.step(&jobs, &timings);
    }
    assert!(m.finite());
    let pose = m.pose();
    let rigid = |j: usize| pose.orient[0] * crate::forest::unpack_quat(m.forest().leaf.rest[j]);
    let blade = |j: usize| segment_axis(pose.leaf_orient[j]);
    // The facing leaf: its blade leans downwind, well away from where its segment holds it.
    let turned = blade(facing).angle_between(segment_axis(rigid(facing)));
    assert!(turned > 0.1, "the facing leaf turned {turned} rad");
    assert!(blade(facing).z > 0.1, "downwind: {}", blade(facing));
    // The edge-on leaf: as its segment holds it.
    let off = pose.leaf_orient[edge_on].angle_between(rigid(edge_on));
    assert!(off < 1e-3, "the edge-on leaf turned {off} rad");
}

/// A stem blown against a sphere stays out of it (its axis at least its radius plus the
/// sphere's from the centre, within a millimetre).
#[test]
fn stems_stay_out_of_spheres() {
    let f = tree(9, 200, 0);
    let mut m = ChenModel::new(f, ChenParams::default()).unwrap();
    let rest = tips(&m);
    // A sphere just downwind of the highest tip.
    let top = rest
        .iter()
        .copied()
        .fold(Vec3::ZERO, |a, b| if b.y > a.y { b } else { a });
    let sphere = SphereCollider::new(top + Vec3::new(0.25, 0.0, 0.0), 0.2, Motion::Static).unwrap();
    m.add_collider(sphere);
    m.set_wind(Box::new(Steady(Vec3::X * 30.0)));
    let (jobs, timings) = (jobs(1), timings());
    for _ in 0..180 {
        m.step(&jobs, &timings);
    }
    assert!(m.finite());
    let f = m.forest();
    let pose = m.pose();
    for i in 0..f.segment_count() {
        let tip = pose.tip(i, f.seg.length[i]);
        if let Some(c) = sphere.contact(pose.base[i], tip, f.seg.radius_base[i], f.seg.radius_tip[i]) {
            assert!(c.depth() < 1e-3, "segment {i} is {} m inside", c.depth());
        }
    }
}

/// The self-collision's response reaches the branches: the same gusts with it on move the
/// trees otherwise than with it off, and the step reports what it found.
#[test]
fn self_collision_answers_with_forces_on_the_stems() {
    let f = TestForest::new(4, 800, 600, 1, &Material::default()).unwrap().forest;
    let run = |on: bool| {
        let mut m = ChenModel::new(f.clone(), ChenParams::default()).unwrap();
        m.set_wind(Box::new(GustingWind::new(25.0, 0.0, 0.5, 3).unwrap()));
        let params = SelfCollisionParams {
            stiffness: 200.0,
            ..SelfCollisionParams::default()
        };
        m.set_self_collision(on.then_some(params)).unwrap();
        let (jobs, timings) = (jobs(2), timings());
        let mut responding = 0;
        for _ in 0..120 {
            m.step(&jobs, &timings);
            responding += m.self_collision_stats().map_or(0, |s| s.responding);
        }
        assert!(m.finite());
        (m.state_hash(), responding, m.self_collision_stats().is_some())
    };
    let (off, none, stats_off) = run(false);
    let (on, responding, stats_on) = run(true);
    assert!(!stats_off && stats_on);
    assert_eq!(none, 0);
    assert!(responding > 0, "pairs came closer than their safe distance");
    assert_ne!(on, off, "the responses moved the stems");
}

/// In calm air a tree grown under its own weight (`Material::compensate_gravity`) stands in
/// its generated shape; without the compensation the whole of Eqs. 4.1 and 4.3 acts and it
/// sags.
#[test]
fn a_tree_in_calm_air_stands_in_its_shape_and_sags_without_compensation() {
    let skel = test_tree(6, 300, 200).unwrap();
    let sag = |compensate: bool| {
        let material = Material {
            compensate_gravity: compensate,
            ..Material::default()
        };
        let mut m = ChenModel::new(forest_of(&skel, &material), ChenParams::for_material(&material)).unwrap();
        let rest = tips(&m);
        let (jobs, timings) = (jobs(1), timings());
        for _ in 0..600 {
            m.step(&jobs, &timings);
        }
        assert!(m.finite());
        tips(&m)
            .iter()
            .zip(&rest)
            .map(|(a, b)| b.y - a.y)
            .fold(0.0f32, f32::max)
    };
    let held = sag(true);
    assert!(held.abs() < 1e-5, "the grown tree moved {held} m");
    let fell = sag(false);
    assert!(fell > 1e-3, "without the compensation the tips sag: {fell} m");
}

/// A leafy tree with self-collision on stays bounded in a gust: every leaf's response pushes
/// the segment it hangs from, and without the cap on the response's push (the module's
/// deviation 9) this tree's candidate pairs passed 78,000 within 4 steps and millions after
/// 6, its tips metres off; with it they fall below 40,000 within 8 steps.
#[test]
fn a_leafy_tree_with_self_collision_stays_bounded() {
    let f = TestForest::new(1, 2721, 3320, 1, &Material::default()).unwrap().forest;
    let mut m = ChenModel::new(f, ChenParams::default()).unwrap();
    let rest = tips(&m);
    m.set_wind(Box::new(GustingWind::new(10.0, 0.0, 0.5, 1).unwrap()));
    m.set_self_collision(Some(SelfCollisionParams::default())).unwrap();
    let (jobs, timings) = (jobs(2), timings());
    for step in 0..20 {
        m.step(&jobs, &timings);
        let s = m.self_collision_stats().unwrap();
        // The first steps' buffers are large (the stiff twigs take their deflection at once);
        // then the pairs fall to what the bent tree has.
        let most = if step < 8 { 200_000 } else { 40_000 };
        assert!(s.candidates < most, "step {step}: {} candidate pairs", s.candidates);
    }
    assert!(m.finite());
    let off = tips(&m)
        .iter()
        .zip(&rest)
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0f32, f32::max);
    assert!(off < 2.0, "tips {off} m from rest");
}
