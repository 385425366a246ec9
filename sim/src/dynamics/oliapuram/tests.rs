//! Checks of Oliapuram & Kumar's model against what the equations give outside the code: the
//! period of a segment on its spring, the clamp of Eq. 17, the leaves' single degree of
//! freedom, the back-propagation of Eqs. 18–19, the kinematic chain, determinism, a ridiculous
//! wind, and the refusal of bad settings.

use glam::{Quat, Vec3};
use sylva_engine::{FrameTimings, JobSystem};

use super::{kernels, OliapuramModel, OliapuramParams, Schedule};
use crate::error::SimError;
use crate::forest::{Forest, NO_PARENT};
use crate::material::{DragLaw, Material};
use crate::scene::TestForest;
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment};
use crate::wind::{GustingWind, WindField};

use crate::dynamics::test_winds::Swirl;
use crate::forest::at_origin;

fn jobs(threads: usize) -> JobSystem {
    JobSystem::new(threads).unwrap()
}

fn timings() -> FrameTimings {
    FrameTimings::new(super::PHASES)
}

/// One straight segment of length `l` and radius `r` along `axis` from the origin, with the
/// given leaves.
fn one_segment(l: f32, r: f32, axis: Vec3, leaves: Vec<SkeletonLeaf>, material: &Material) -> Forest {
    let skel = Skeleton {
        segments: vec![SkeletonSegment {
            parent: None,
            base: Vec3::ZERO,
            tip: axis.normalize() * l,
            radius_base: r,
            radius_tip: r,
        }],
        leaves,
    };
    at_origin(&skel, material)
}

/// Zero crossings of `x` (linear interpolation) after `t0`, as times.
fn crossings(xs: &[(f64, f32)]) -> Vec<f64> {
    xs.windows(2)
        .filter(|w| (w[0].1 > 0.0) != (w[1].1 > 0.0))
        .map(|w| {
            let (t0, x0) = w[0];
            let (t1, x1) = w[1];
            t0 + (t1 - t0) * (x0 / (x0 - x1)) as f64
        })
        .collect()
}

/// Mean period of a released single segment, from its zero crossings.
fn measured_period(model: &mut OliapuramModel, steps: usize) -> f64 {
    let (j, t) = (jobs(1), timings());
    let mut xs = Vec::new();
    for _ in 0..steps {
        model.step(&j, &t);
        xs.push((model.time(), model.state.phi[0].x));
    }
    let c = crossings(&xs);
    assert!(c.len() >= 6, "only {} zero crossings", c.len());
    2.0 * (c[c.len() - 1] - c[0]) / (c.len() - 1) as f64
}

#[test]
fn one_segment_swings_with_the_papers_period() {
    // A 1 m rod of radius 1 cm: m = ρ·π·r²·l, I = m·l²/3 about its fixed end (Eq. 11); k from
    // Eq. 22 with a coefficient giving about a 1 s period.
    let material = Material::default();
    let (l, r) = (1.0f32, 0.01f32);
    let params = OliapuramParams {
        stiffness_coefficient: 3.0e5,
        gravity: 0.0,
        damping_coefficient: 0.0,
        ..OliapuramParams::default()
    };
    let mut model = OliapuramModel::new(one_segment(l, r, Vec3::Y, vec![], &material), params).unwrap();
    let m = material.wood_density * std::f32::consts::PI * r * r * l;
    let inertia = (m * l * l / 3.0) as f64;
    let k = params.stiffness_coefficient as f64 * (r as f64).powf(2.5);
    let expected = 2.0 * std::f64::consts::PI * (inertia / k).sqrt();
    model.state.phi[0] = Vec3::new(0.1, 0.0, 0.0);
    model.refresh_pose();
    let period = measured_period(&mut model, 600);
    assert!(
        (period / expected - 1.0).abs() < 0.02,
        "period {period:.4} s, expected 2π·sqrt((m·l²/3)/k) = {expected:.4} s"
    );

    // With gravity (the generated shape pre-stressed as the rest shape), a leaning segment's
    // own weight pulls it further: an upright rod is an inverted pendulum on its spring,
    // k_eff = k - m·g·l/2.
    let params = OliapuramParams {
        gravity: 9.81,
        ..params
    };
    let mut model = OliapuramModel::new(one_segment(l, r, Vec3::Y, vec![], &material), params).unwrap();
    model.state.phi[0] = Vec3::new(0.05, 0.0, 0.0);
    model.refresh_pose();
    let k_eff = k - (m * 9.81 * l / 2.0) as f64;
    assert!(k_eff < 0.8 * k, "the test needs gravity to matter");
    let expected = 2.0 * std::f64::consts::PI * (inertia / k_eff).sqrt();
    let period = measured_period(&mut model, 600);
    assert!(
        (period / expected - 1.0).abs() < 0.02,
        "with gravity: period {period:.4} s, expected {expected:.4} s"
    );
}

#[test]
fn axial_damping_stops_but_never_reverses_a_swing() {
    // A segment with a huge μ and a spring too weak to matter, thrown at 5 rad/s: the
    // unclamped R = -μ·ω·|ω| (Eq. 16) would reverse it many times over in one step. Under the
    // linear drag law, which in still air adds no force: the quadratic law's drag on the
    // segment's own motion is a second damping with its own clamp (checked in
    // `quadratic_drag_never_reverses_a_swing`), and two clamped dampings together may
    // overshoot by up to the motion's own size.
    let material = Material {
        drag_law: DragLaw::Linear,
        ..Material::default()
    };
    let params = OliapuramParams {
        stiffness_coefficient: 1.0e-6,
        damping_coefficient: 1.0e12,
        gravity: 0.0,
        ..OliapuramParams::default()
    };
    let mut model = OliapuramModel::new(one_segment(1.0, 0.01, Vec3::Y, vec![], &material), params).unwrap();
    let w0 = Vec3::new(5.0, 0.0, -2.0);
    model.state.omega[0] = w0;
    let lv = &model.levels;
    let unclamped = lv.body[0].damping_gain * w0.length() * w0.length() * params.dt;
    assert!(
        unclamped > 100.0 * w0.length(),
        "the test needs a damping that would reverse"
    );
    let (j, t) = (jobs(1), timings());
    model.step(&j, &t);
    let w1 = model.state.omega[0];
    // Stopped within the step (the spring's own pull is negligible), never reversed.
    assert!(w1.dot(w0) >= 0.0, "reversed: {w0} -> {w1}");
    assert!(w1.length() < 1e-3 * w0.length(), "not stopped: {w0} -> {w1}");

    // The same for a leaf's one degree of freedom.
    let leaf = SkeletonLeaf {
        segment: 0,
        along: 1.0,
        orientation: Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2),
        length: 0.1,
        width: 0.05,
    };
    let params = OliapuramParams {
        leaf_damping: 1.0e5,
        ..params
    };
    let mut model = OliapuramModel::new(one_segment(1.0, 0.01, Vec3::Y, vec![leaf], &material), params).unwrap();
    model.state.psi_dot[0] = -8.0;
    model.step(&j, &t);
    let d = model.state.psi_dot[0];
    // The damping alone would stop the rate (0); the nearly massless spring adds at most a
    // rounding-sized push back the other way.
    assert!(d <= 1.0e-6 && d > -8.0e-3, "leaf rate -8 -> {d}");
}

#[test]
fn a_released_tree_settles() {
    let tf = TestForest::new(5, 400, 600, 1, &Material::default()).unwrap();
    let mut model = OliapuramModel::new(tf.forest, OliapuramParams::default()).unwrap();
    let (j, t) = (jobs(2), timings());
    // Bent by a strong wind, then the wind stops.
    model.set_wind(Box::new(GustingWind::new(25.0, 0.3, 0.0, 1).unwrap()));
    for _ in 0..300 {
        model.step(&j, &t);
    }
    let bent = model.state.phi.iter().map(|p| p.length()).fold(0.0f32, f32::max);
    assert!(bent > 1e-3, "the wind did not bend the tree: {bent}");
    model.set_wind(Box::new(crate::wind::Calm));
    let mut energy = Vec::new();
    for _ in 0..1200 {
        model.step(&j, &t);
        energy.push(model.kinetic_energy());
    }
    let peak = energy.iter().copied().fold(0.0, f64::max);
    let last = *energy.last().unwrap();
    let left = model.state.phi.iter().map(|p| p.length()).fold(0.0f32, f32::max);
    assert!(
        peak > 0.0 && last < 1e-6 * peak,
        "kinetic energy {last:e} J of a peak {peak:e} J after 20 s"
    );
    assert!(left < 1e-3 * bent, "still bent by {left} rad (was {bent})");
}

/// A segment along +y with one leaf at its tip: blade along +x, normal +z, hinge along -y.
fn leaf_forest(material: &Material) -> Forest {
    let leaf = SkeletonLeaf {
        segment: 0,
        along: 1.0,
        orientation: Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2),
        length: 0.12,
        width: 0.06,
    };
    one_segment(0.5, 0.005, Vec3::Y, vec![leaf], material)
}

#[test]
fn a_leaf_turns_only_about_its_hinge_and_only_for_wind_across_its_blade() {
    let material = Material::default();
    // The bark feels no wind (σ = 0), so the segment moves only by its leaf's pull.
    let params = OliapuramParams {
        sigma: 0.0,
        ..OliapuramParams::default()
    };
    let (j, t) = (jobs(1), timings());
    let blade_normal = Vec3::Z;
    // Winds in the blade's plane: along the blade (+x) and across it in-plane (y).
    for wind in [
        Vec3::new(15.0, 0.0, 0.0),
        Vec3::new(0.0, 15.0, 0.0),
        Vec3::new(-9.0, 9.0, 0.0),
    ] {
        let mut model = OliapuramModel::new(leaf_forest(&material), params).unwrap();
        let rest = model.pose().leaf_orient[0];
        assert!((rest * Vec3::Z - blade_normal).length() < 1e-4);
        model.set_wind(Box::new(Uniform(wind)));
        for _ in 0..120 {
            model.step(&j, &t);
        }
        // Zero up to the rounding of the blade's normal (the across-blade case below turns it
        // by more than 0.02 rad).
        let psi = model.state.psi[0];
        assert!(
            psi.abs() < 1e-5,
            "wind {wind} in the blade's plane turned the leaf by {psi}"
        );
        let now = model.pose().leaf_orient[0];
        for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
            assert!(
                (now * axis - rest * axis).length() < 1e-5,
                "the blade moved in wind {wind}"
            );
        }
    }
    // Across the blade: it turns, and only about its hinge (the blade's own x axis).
    let mut model = OliapuramModel::new(leaf_forest(&material), params).unwrap();
    model.set_wind(Box::new(Uniform(Vec3::new(0.0, 0.0, 10.0))));
    let mut turned = 0.0f32;
    for _ in 0..120 {
        model.step(&j, &t);
        let pose = model.pose();
        let carried = pose.orient[0] * model.leaves.rest[0];
        let relative = carried.conjugate() * pose.leaf_orient[0];
        let (axis, angle) = relative.to_axis_angle();
        if angle > 1e-4 {
            assert!(
                axis.cross(Vec3::X).length() < 1e-3,
                "turned about {axis}, not the hinge"
            );
        }
        turned = turned.max(angle);
    }
    // Against the static turn of the blade's spring under the wind's moment about the hinge,
    // (L/2)·σ·A·v / k (§4: the force along the normal, on the blade's area, at its centre;
    // k a little above the thinnest branch's, Eq. 22): a step of wind, lightly damped, swings
    // the blade to between once and twice that.
    let f = model.forest();
    let length = f.leaf.length_m(0);
    let area = std::f32::consts::FRAC_PI_4 * length * length * f.trees[0].leaf_aspect;
    let k = params.leaf_stiffness_ratio * params.stiffness(params.thinnest_radius.max(params.min_radius));
    let static_turn = 0.5 * length * params.leaf_sigma * area * 10.0 / k;
    assert!(
        turned > 0.8 * static_turn && turned < 2.2 * static_turn,
        "a 10 m/s wind across the blade turned it by {turned} rad; the spring's static turn is {static_turn} rad"
    );
    // The blade's tip went downwind (+z).
    let pose = model.pose();
    assert!((pose.leaf_orient[0] * Vec3::Y).z > 0.0);
}

/// The same wind everywhere, any direction.
struct Uniform(Vec3);

impl WindField for Uniform {
    fn advance(&mut self, _time: f64) {}
    fn sample(&self, _p: Vec3) -> Vec3 {
        self.0
    }
    fn uniform(&self) -> Option<Vec3> {
        Some(self.0)
    }
}

/// A vertical two-segment chain, parent (level 0) and child (level 1).
fn chain(material: &Material) -> Forest {
    let skel = Skeleton {
        segments: vec![
            SkeletonSegment {
                parent: None,
                base: Vec3::ZERO,
                tip: Vec3::Y,
                radius_base: 0.02,
                radius_tip: 0.02,
            },
            SkeletonSegment {
                parent: Some(0),
                base: Vec3::Y,
                tip: Vec3::new(0.0, 1.8, 0.0),
                radius_base: 0.015,
                radius_tip: 0.015,
            },
        ],
        leaves: vec![],
    };
    at_origin(&skel, material)
}

/// The parent's deflection after `steps` steps, its child bent by `child` at the start.
fn parent_after(kc: f32, child: Vec3, steps: usize) -> Vec3 {
    let material = Material::default();
    let params = OliapuramParams {
        propagation: kc,
        gravity: 0.0,
        ..OliapuramParams::default()
    };
    let mut model = OliapuramModel::new(chain(&material), params).unwrap();
    assert_eq!(model.levels.parent[1], 0);
    model.state.phi[1] = child;
    model.refresh_pose();
    let (j, t) = (jobs(1), timings());
    for _ in 0..steps {
        model.step(&j, &t);
    }
    model.state.phi[0]
}

#[test]
fn children_pull_their_parent_only_with_a_propagation_coefficient() {
    let bend = Vec3::new(0.3, 0.0, 0.0);
    // k_c = 0: bit for bit the same parent, whatever the child does.
    let still = parent_after(0.0, Vec3::ZERO, 60);
    let pulled = parent_after(0.0, bend, 60);
    assert_eq!(still, Vec3::ZERO);
    assert_eq!(pulled, still, "k_c = 0, yet the child moved its parent");
    // k_c > 0: the child's spring, resisting the child's turn, turns the parent the same way
    // (Eq. 18: T = -k_i·K_i, K_i = -k·θ'_i), and more with a larger k_c.
    let weak = parent_after(0.5, bend, 1);
    let strong = parent_after(1.0, bend, 1);
    assert!(weak.x > 0.0, "parent turned {weak} by a child bent {bend}");
    assert!(strong.x > 1.5 * weak.x, "k_c 1: {strong}, k_c 0.5: {weak}");
    assert!(weak.y.abs() < 1e-6 * weak.x && weak.z.abs() < 1e-6 * weak.x);
}

#[test]
fn every_base_stays_on_its_parents_tip() {
    let tf = TestForest::new(11, 500, 900, 2, &Material::default()).unwrap();
    let mut model = OliapuramModel::new(tf.forest, OliapuramParams::default()).unwrap();
    model.set_wind(Box::new(Swirl { time: 0.0, speed: 30.0 }));
    let (j, t) = (jobs(2), timings());
    let mut moved = 0.0f32;
    let rest = model.pose().clone();
    for _ in 0..200 {
        model.step(&j, &t);
        let f = model.forest();
        let pose = model.pose();
        for i in 0..f.segment_count() {
            let l = f.seg.length[i];
            let expected = match f.seg.parent[i] {
                NO_PARENT => f.trees[f.tree_of(i)].root,
                p => pose.tip(p as usize, f.seg.length[p as usize]),
            };
            assert!(
                (pose.base[i] - expected).length() < 1e-5 * (1.0 + expected.length()),
                "segment {i} base {} off its parent's tip {expected}",
                pose.base[i]
            );
            // The drawn segment runs from its base along its orientation (`Pose::tip`): its
            // length is l·|q|².
            let length = (pose.orient[i] * Vec3::new(0.0, l, 0.0)).length();
            assert!((length - l).abs() < 1e-6 * l, "segment {i} length {length}, built {l}");
            // The leaves the 30 m/s wind tore off fall on their own (`dynamics::falling`).
            for leaf in f.leaves_of(i).filter(|&j| model.falling().is_attached(j)) {
                let along = pose.leaf_pos[leaf] - pose.base[i];
                let axis = pose.orient[i] * Vec3::Y;
                assert!(
                    along.cross(axis).length() < 1e-5 * (1.0 + l),
                    "leaf {leaf} off its segment"
                );
            }
            moved = moved.max((pose.tip(i, l) - rest.tip(i, l)).length());
        }
    }
    assert!(moved > 0.02, "the wind moved no tip by more than {moved} m");
}

fn hash_after(threads: usize, wind: Box<dyn WindField>) -> u64 {
    let tf = TestForest::new(3, 1597, 3603, 3, &Material::default()).unwrap();
    let mut model = OliapuramModel::new(tf.forest, OliapuramParams::default()).unwrap();
    model.set_wind(wind);
    let (j, t) = (jobs(threads), timings());
    for _ in 0..60 {
        model.step(&j, &t);
    }
    assert!(model.finite());
    model.state_hash()
}

#[test]
fn identical_for_any_number_of_workers() {
    for make in [
        || Box::new(Swirl { time: 0.0, speed: 12.0 }) as Box<dyn WindField>,
        || Box::new(GustingWind::new(12.0, 0.4, 0.5, 3).unwrap()) as Box<dyn WindField>,
    ] {
        let one = hash_after(1, make());
        assert_eq!(hash_after(2, make()), one);
        assert_eq!(hash_after(4, make()), one);
    }
    // The hash sees the state: another wind, another hash.
    assert_ne!(
        hash_after(1, Box::new(Swirl { time: 0.0, speed: 6.0 })),
        hash_after(1, Box::new(Swirl { time: 0.0, speed: 12.0 }))
    );
}

/// The state hash after 40 steps in a swirling wind of `trees` trees of `segments` segments,
/// stepped by `schedule` on `threads` threads.
fn hash_by(schedule: Schedule, threads: usize, trees: usize, segments: usize) -> u64 {
    let tf = TestForest::new(5, segments, segments * 2, trees, &Material::default()).unwrap();
    let mut model = OliapuramModel::new(tf.forest, OliapuramParams::default()).unwrap();
    model.schedule = schedule;
    model.set_wind(Box::new(Swirl { time: 0.0, speed: 15.0 }));
    let (j, t) = (jobs(threads), timings());
    for _ in 0..40 {
        model.step(&j, &t);
    }
    assert!(model.finite());
    model.state_hash()
}

#[test]
fn vectorised_turns_give_the_bits_of_the_scalar_ones_beyond_a_half_turn_too() {
    use super::leaves;
    // Deflections from 0 to about 1.9π and leaf angles from -2.7π to 2.7π, so that some take
    // the Taylor polynomials and some (beyond π) the library's sine and cosine.
    let phi: Vec<Vec3> = (0..48)
        .map(|k| Vec3::new(0.09, -0.07, 0.05) * k as f32 + Vec3::new(0.0, 0.0, 1e-3))
        .collect();
    let psi: Vec<f32> = (0..67).map(|k| -8.5 + 0.25 * k as f32).collect();
    let pi = std::f32::consts::PI;
    assert!(phi.iter().any(|v| v.length() > pi) && phi.iter().any(|v| v.length() < pi));
    assert!(psi.iter().any(|p| p.abs() > pi) && psi.iter().any(|p| p.abs() < pi));
    let mut turns = vec![[0.0; 4]; phi.len()];
    kernels::rotations(&phi, &mut turns);
    for (v, t) in phi.iter().zip(&turns) {
        assert_eq!(
            kernels::rotation(*v).to_array().map(f32::to_bits),
            t.map(f32::to_bits),
            "{v:?}"
        );
        // A rotation by |v| about v: a unit quaternion whose angle is |v| (the polynomials alone
        // drift far from both beyond π).
        let q = Quat::from_array(*t);
        assert!((q.length() - 1.0).abs() < 1e-5, "{v:?}: |q| = {}", q.length());
        assert!((2.0 * q.w.clamp(-1.0, 1.0).acos() - v.length()).abs() < 1e-3, "{v:?}");
    }
    let (mut sin, mut cos) = (vec![0.0; psi.len()], vec![0.0; psi.len()]);
    leaves::half_angles(&psi, (&mut sin, &mut cos));
    for k in 0..psi.len() {
        let (s, c) = kernels::half_turn(psi[k] * psi[k]);
        assert_eq!(
            ((s * psi[k]).to_bits(), c.to_bits()),
            (sin[k].to_bits(), cos[k].to_bits()),
            "{}",
            psi[k]
        );
        assert!((sin[k] - (0.5 * psi[k]).sin()).abs() < 1e-5 && (cos[k] - (0.5 * psi[k]).cos()).abs() < 1e-5);
    }
}

#[test]
fn groups_of_trees_give_the_bits_of_the_level_by_level_sweep() {
    // Trees of about an L2 cache each (one per group), and small trees several to a group.
    for (trees, segments) in [(3, 1597), (30, 150)] {
        let tf = TestForest::new(5, segments, segments * 2, trees, &Material::default()).unwrap();
        let model = OliapuramModel::new(tf.forest, OliapuramParams::default()).unwrap();
        let g = &model.groups;
        if segments > 1000 {
            assert_eq!(g.count(), trees, "a tree of {segments} segments is a group of its own");
        } else {
            assert!(
                1 < g.count() && g.count() < trees,
                "{} groups of {trees} small trees",
                g.count()
            );
        }
        let levels = hash_by(Schedule::Levels, 1, trees, segments);
        assert_eq!(hash_by(Schedule::Levels, 2, trees, segments), levels);
        for threads in [1, 2, 4] {
            assert_eq!(
                hash_by(Schedule::Groups, threads, trees, segments),
                levels,
                "{trees} trees, {threads} threads"
            );
        }
    }
}

#[test]
fn ridiculous_wind_stays_finite_and_bounded() {
    let tf = TestForest::new(7, 1597, 3603, 1, &Material::default()).unwrap();
    let mut model = OliapuramModel::new(tf.forest, OliapuramParams::default()).unwrap();
    model.set_wind(Box::new(GustingWind::new(60.0, 0.0, 0.5, 9).unwrap()));
    let (j, t) = (jobs(2), timings());
    let (mut worst_segment, mut worst_leaf, mut worst_energy) = (0.0f32, 0.0f32, 0.0f64);
    for step in 0..10_000 {
        model.step(&j, &t);
        assert!(model.finite(), "not finite after {step} steps");
        if step % 10 == 0 {
            let s = &model.state;
            worst_segment = s.phi.iter().map(|p| p.length()).fold(worst_segment, f32::max);
            worst_leaf = s.psi.iter().map(|p| p.abs()).fold(worst_leaf, f32::max);
            worst_energy = worst_energy.max(model.kinetic_energy());
        }
    }
    // No joint turned over, no leaf flipped round, and the motion's energy stays that of a
    // swaying tree (a few joules for a 1,597-segment tree).
    assert!(worst_segment < 1.0, "a segment bent by {worst_segment} rad");
    assert!(
        worst_leaf < std::f32::consts::FRAC_PI_2,
        "a leaf turned by {worst_leaf} rad"
    );
    assert!(worst_energy < 100.0, "kinetic energy reached {worst_energy} J");
}

fn refused(params: OliapuramParams) -> String {
    let forest = TestForest::new(1, 30, 20, 1, &Material::default()).unwrap().forest;
    match OliapuramModel::new(forest, params) {
        Err(e @ SimError::Parameter { .. }) => e.to_string(),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("accepted {params:?}"),
    }
}

#[test]
fn bad_settings_are_refused_naming_what_is_allowed() {
    let d = OliapuramParams::default();
    let cases: [(OliapuramParams, &str); 9] = [
        (OliapuramParams { propagation: -0.5, ..d }, "k_c"),
        (
            OliapuramParams {
                damping_coefficient: -1.0,
                ..d
            },
            "μ",
        ),
        (OliapuramParams { sigma: -7.4, ..d }, "σ"),
        (
            OliapuramParams {
                leaf_sigma: f32::NAN,
                ..d
            },
            "σ",
        ),
        (OliapuramParams { dt: 0.0, ..d }, "dt"),
        (OliapuramParams { dt: f32::NAN, ..d }, "dt"),
        (
            OliapuramParams {
                stiffness_coefficient: f32::INFINITY,
                ..d
            },
            "stiffness",
        ),
        (OliapuramParams { gravity: -9.81, ..d }, "gravity"),
        (
            OliapuramParams {
                leaf_damping: -0.1,
                ..d
            },
            "leaf_damping",
        ),
    ];
    for (params, name) in cases {
        let message = refused(params);
        assert!(message.contains(name), "{message} does not name {name}");
        assert!(message.contains("must be"), "{message} does not say what is allowed");
    }
    // Leaves without mass would have no inertia to step.
    let material = Material {
        leaf_mass_per_area: 0.0,
        ..Material::default()
    };
    let forest = TestForest::new(1, 30, 20, 1, &material).unwrap().forest;
    let e = OliapuramModel::new(forest, d)
        .err()
        .expect("massless leaves accepted")
        .to_string();
    assert!(e.contains("leaf_mass_per_area") && e.contains("greater than 0"), "{e}");
}

#[test]
fn reset_returns_to_the_generated_shape_at_rest() {
    let tf = TestForest::new(2, 300, 400, 1, &Material::default()).unwrap();
    let mut model = OliapuramModel::new(tf.forest, OliapuramParams::default()).unwrap();
    let rest = model.pose().clone();
    let hash = model.state_hash();
    model.set_wind(Box::new(GustingWind::new(20.0, 1.0, 0.3, 2).unwrap()));
    let (j, t) = (jobs(1), timings());
    for _ in 0..60 {
        model.step(&j, &t);
    }
    assert!(model.kinetic_energy() > 0.0);
    assert_ne!(model.state_hash(), hash);
    model.reset();
    assert_eq!(model.state_hash(), hash);
    assert_eq!(model.kinetic_energy(), 0.0);
    let pose = model.pose();
    for i in 0..pose.base.len() {
        assert_eq!(pose.base[i], rest.base[i]);
        assert_eq!(pose.orient[i], rest.orient[i]);
    }
    // The rest pose is the generated skeleton's.
    let f = model.forest();
    for (i, s) in tf.skeletons[0].segments.iter().enumerate().take(50) {
        let axis = (s.tip - s.base).normalize();
        let found = (0..f.segment_count())
            .any(|k| (pose.base[k] - s.base).length() < 1e-4 && (pose.orient[k] * Vec3::Y - axis).length() < 1e-4);
        assert!(found, "skeleton segment {i} not found in the rest pose");
    }
    assert_eq!(model.name(), "oliapuram");
    assert!(model.heap_bytes() > model.forest().heap_bytes());
}

/// Eq. 14's wind force on one segment under the quadratic law is ½·ρ_air·C_d·S_f·U² (C_d = 1.2,
/// ρ_air = 1.225 kg/m³, S_f = 2·r·l) at 5, 10 and 36 m/s, within the rounding of the default
/// coefficient (7.35 → 7.4), equals the linear law's at 10 m/s, and acts on the velocity
/// relative to the centroid: none when the centroid moves with the wind. A leaf's normal force
/// likewise (C_d = 0.5 on its area, reconfiguring above 10 m/s).
#[test]
fn quadratic_drag_is_half_rho_cd_a_u_squared() {
    use crate::material::{AIR_DENSITY, LEAF_VOGEL_EXPONENT};
    let (l, r) = (1.0f32, 0.02f32);
    let leaf = SkeletonLeaf {
        segment: 0,
        along: 1.0,
        // Blade normal along +x, the wind's direction.
        orientation: Quat::from_rotation_y(std::f32::consts::FRAC_PI_2),
        length: 0.1,
        width: 0.05,
    };
    let forest = |law| {
        let material = Material {
            drag_law: law,
            ..Material::default()
        };
        one_segment(l, r, Vec3::Y, vec![leaf], &material)
    };
    let quadratic = OliapuramModel::new(forest(DragLaw::Quadratic), OliapuramParams::default()).unwrap();
    let linear = OliapuramModel::new(forest(DragLaw::Linear), OliapuramParams::default()).unwrap();
    let h = quadratic.params.dt;
    let (lv, lf) = (&quadratic.levels, &quadratic.leaves);
    let (body, inertia) = (lv.body[0], lv.inertia[0]);
    let c = Vec3::Y * body.centroid;
    let normal = Vec3::X;
    let half = lf.half_length[0];
    // The leaf's area from its gain, (L/2)·σ·area/I.
    let area = lf.wind_gain[0] * lf.inertia[0] / (half * quadratic.params.leaf_sigma);
    assert!(
        (area - std::f32::consts::FRAC_PI_4 * 0.1 * 0.1 * 0.5).abs() < 0.2 * area,
        "leaf area {area}"
    );
    for u in [5.0f32, 10.0, 36.0] {
        let w = Vec3::X * u;
        let force = kernels::segment_drag(DragLaw::Quadratic, w, Vec3::ZERO, c, body.wind_gain, h) * inertia;
        let want = 0.5 * AIR_DENSITY * 1.2 * (2.0 * r * l) * u * u;
        assert!(
            (force.x / want - 1.0).abs() < 0.01 && force.y == 0.0,
            "bark at {u} m/s: {force}, want {want} N"
        );
        let leaf_force =
            kernels::leaf_drag(DragLaw::Quadratic, w, normal, 0.0, half, lf.wind_gain[0], h) * lf.inertia[0] / half;
        let q = |u: f32| 0.5 * AIR_DENSITY * 0.5 * area * u * u;
        let want = if u > 10.0 {
            q(10.0) * (u / 10.0).powf(2.0 + LEAF_VOGEL_EXPONENT)
        } else {
            q(u)
        };
        assert!(
            (leaf_force / want - 1.0).abs() < 0.016,
            "leaf at {u} m/s: {leaf_force} N, want {want} N"
        );
        if u == 10.0 {
            let lin = kernels::segment_drag(DragLaw::Linear, w, Vec3::ZERO, c, linear.levels.body[0].wind_gain, h);
            assert!((lin * inertia - force).length() < 1e-5 * force.length());
            let lin_leaf = kernels::leaf_drag(DragLaw::Linear, w, normal, 0.0, half, linear.leaves.wind_gain[0], h);
            assert!((lin_leaf * lf.inertia[0] / half / leaf_force - 1.0).abs() < 1e-5);
        }
        // The centroid moving with the wind (ω × c = w): no drag; the blade's centre moving
        // with it (rate·L/2 = w·n): none.
        let omega = Vec3::new(0.0, 0.0, -u / body.centroid);
        assert!((omega.cross(c) - w).length() < 1e-4 * u);
        let moving = kernels::segment_drag(DragLaw::Quadratic, w, omega, c, body.wind_gain, h);
        assert!(
            moving.length() * inertia < 1e-4 * want,
            "moving with the wind: {moving}"
        );
        let still = kernels::leaf_drag(DragLaw::Quadratic, w, normal, u / half, half, lf.wind_gain[0], h);
        assert!(
            still.abs() < 1e-4 * lf.wind_gain[0] * u,
            "leaf moving with the wind: {still}"
        );
    }
}

/// In still air a segment and a leaf thrown fast, with a drag so large that the unclamped
/// quadratic drag would reverse them many times over in one step, are stopped, never reversed.
#[test]
fn quadratic_drag_never_reverses_a_swing() {
    let leaf = SkeletonLeaf {
        segment: 0,
        along: 1.0,
        orientation: Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2),
        length: 0.1,
        width: 0.05,
    };
    let params = OliapuramParams {
        stiffness_coefficient: 1.0e-6,
        damping_coefficient: 0.0,
        leaf_damping: 0.0,
        sigma: 1.0e4,
        leaf_sigma: 1.0e4,
        gravity: 0.0,
        ..OliapuramParams::default()
    };
    let forest = one_segment(1.0, 0.01, Vec3::Y, vec![leaf], &Material::default());
    let mut model = OliapuramModel::new(forest, params).unwrap();
    let w0 = Vec3::new(5.0, 0.0, -2.0);
    model.state.omega[0] = w0;
    model.state.psi_dot[0] = -8.0;
    let body = model.levels.body[0];
    let rate = body.wind_gain * body.centroid * body.centroid * (w0.length() * body.centroid / 10.0);
    assert!(
        rate * params.dt > 2.0,
        "the test needs a drag that would reverse: {rate}"
    );
    let (j, t) = (jobs(1), timings());
    model.step(&j, &t);
    let w1 = model.state.omega[0];
    assert!(w1.dot(w0) >= 0.0, "reversed: {w0} -> {w1}");
    assert!(w1.length() < 1e-3 * w0.length(), "not stopped: {w0} -> {w1}");
    let d = model.state.psi_dot[0];
    assert!(d <= 1.0e-6 && d > -8.0e-3, "leaf rate -8 -> {d}");
}

/// A thick two-segment trunk (y = 0..2 m) with a horizontal branch of `n` untapered segments of
/// radius `r` along +x from its top, `length` long in all (segments 2..2 + n), no leaves.
fn cantilever(n: usize, length: f32, r: f32, material: &Material) -> Forest {
    let l = length / n as f32;
    let seg = |parent: Option<u32>, base: Vec3, tip: Vec3, r: f32| SkeletonSegment {
        parent,
        base,
        tip,
        radius_base: r,
        radius_tip: r,
    };
    let mut segments = vec![
        seg(None, Vec3::ZERO, Vec3::Y, 0.15),
        seg(Some(0), Vec3::Y, Vec3::Y * 2.0, 0.15),
    ];
    for j in 0..n {
        let at = |k: usize| Vec3::new(l * k as f32, 2.0, 0.0);
        segments.push(seg(Some(1 + j as u32), at(j), at(j + 1), r));
    }
    at_origin(
        &Skeleton {
            segments,
            leaves: Vec::new(),
        },
        material,
    )
}

/// The statics of a joint against beam theory. A horizontal cantilever of length L under its
/// weight w per metre and a horizontal load q per metre across it carries, at x from its base,
/// the bending moment (L - x)²/2·sqrt(w² + q²) (the resultant of each uniform load, (L - x)·w,
/// at the middle of what lies beyond). The trunk's top joint, 1 m below the branch, carries the
/// branch's weight moment w·L²/2 and the drag's q·L·1 m, and not the drag's twist about the
/// trunk's axis, q·L²/2.
#[test]
fn joint_statics_match_a_cantilevers_moments() {
    let (n, length, r) = (8, 2.0f32, 0.03);
    let f = cantilever(n, length, r, &Material::default());
    let model = OliapuramModel::new(f, OliapuramParams::default()).unwrap();
    let s = &model.forest.seg;
    let g = model.params.gravity;
    let l = length / n as f32;
    let w = s.mass[2] * g / l;
    let q = 37.0f32;
    // The drag, as the dynamics phase stores it: F/I per segment, in level order.
    let mut seg_drag = vec![Vec3::ZERO; s.parent.len()];
    for i in 2..2 + n {
        let v = model.levels.level_of[i] as usize;
        seg_drag[v] = Vec3::new(0.0, 0.0, q * l) / model.levels.inertia[v];
    }
    let drag = super::rupture::Drag {
        segments: &seg_drag,
        leaves: &[],
    };
    let mut sums = vec![(Vec3::ZERO, Vec3::ZERO); s.parent.len()];
    let mut moment = vec![0.0f32; s.parent.len()];
    let r0 = 0..s.parent.len();
    model.statics().bending(
        r0,
        super::rupture::At::of(&model.pose),
        Some(drag),
        &mut sums,
        |i, b| moment[i] = b,
    );
    for k in 0..n {
        let beyond = length - k as f32 * l;
        let beam = 0.5 * beyond * beyond * (w * w + q * q).sqrt();
        println!("branch joint {k}: statics {} N·m, beam {beam} N·m", moment[2 + k]);
        assert!(
            (moment[2 + k] / beam - 1.0).abs() < 1e-4,
            "joint {k}: {} vs {beam}",
            moment[2 + k]
        );
    }
    let top = (0.5 * w * length * length).hypot(q * length * 1.0);
    println!("trunk top joint: statics {} N·m, expected {top} N·m", moment[1]);
    assert!((moment[1] / top - 1.0).abs() < 1e-4, "{} vs {top}", moment[1]);
    // Without the drag: the weight alone.
    let mut rest = vec![0.0f32; s.parent.len()];
    model.statics().bending(
        0..s.parent.len(),
        super::rupture::At::of(&model.pose),
        None,
        &mut sums,
        |i, b| rest[i] = b,
    );
    assert!((rest[2] / (0.5 * w * length * length) - 1.0).abs() < 1e-4);
}

/// The drag the model applies, read by the statics: the branch of the cantilever in a steady
/// 10 m/s wind across it, with the paper's linear drag (Eq. 14, σ·S_f·v with S_f = 2r·l per
/// segment, q = σ·2r·v per metre), after one step (the branch has barely moved): its base joint
/// carries the beam's L²/2·sqrt(w² + q²) within 1 %.
#[test]
fn the_steps_drag_reaches_the_joint_statics() {
    let (n, length, r) = (8, 2.0f32, 0.03);
    let material = Material {
        drag_law: DragLaw::Linear,
        ..Material::default()
    };
    let f = cantilever(n, length, r, &material);
    let mut model = OliapuramModel::new(f, OliapuramParams::for_material(&material)).unwrap();
    // Towards ±z, across the branch.
    model.set_wind(Box::new(
        GustingWind::new(10.0, std::f32::consts::FRAC_PI_2, 0.0, 1).unwrap(),
    ));
    let (j, t) = (jobs(1), timings());
    model.step(&j, &t);
    let l = length / n as f32;
    let w = model.forest.seg.mass[2] * model.params.gravity / l;
    let q = model.params.sigma * 2.0 * r * 10.0;
    let beam = 0.5 * length * length * (w * w + q * q).sqrt();
    let m = model.joint_moment(2);
    println!("after one step: statics {m} N·m, beam {beam} N·m (w {w} N/m, q {q} N/m)");
    assert!((m / beam - 1.0).abs() < 0.01, "{m} vs {beam}");
}

/// The breaks of the bench's storm on its test tree (`sylva bench sim --model oliapuram
/// --segments 1597 --leaves 3603`): a 36 m/s wind breaks it (a branch, and the root at its
/// anchorage, within 5 s), identically on 1, 2 and 4 workers; a 5 m/s wind breaks nothing in
/// 20 s.
#[test]
fn a_storm_breaks_the_tree_and_a_breeze_does_not() {
    let run = |speed: f32, steps: usize, threads: usize| {
        let tf = TestForest::new(1, 1597, 3603, 1, &Material::default()).unwrap();
        let mut model = OliapuramModel::new(tf.forest, OliapuramParams::default()).unwrap();
        model.set_wind(Box::new(GustingWind::new(speed, 0.0, 0.5, 1).unwrap()));
        let (j, t) = (jobs(threads), timings());
        for _ in 0..steps {
            model.step(&j, &t);
        }
        assert!(model.finite());
        (model.branches_broken(), model.trees_uprooted(), model.state_hash())
    };
    let storm = run(36.0, 300, 1);
    println!("36 m/s, 5 s: broken {}, uprooted {}", storm.0, storm.1);
    assert!(storm.0 > 0, "no branch broke in a 36 m/s storm");
    assert_eq!(run(36.0, 300, 2), storm);
    assert_eq!(run(36.0, 300, 4), storm);
    let breeze = run(5.0, 1200, 2);
    println!("5 m/s, 20 s: broken {}, uprooted {}", breeze.0, breeze.1);
    assert_eq!((breeze.0, breeze.1), (0, 0), "a 5 m/s breeze broke the tree");
}
