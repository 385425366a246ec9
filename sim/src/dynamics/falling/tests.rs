//! Falling leaves on their own: a falling plate against the physics outside the code (free
//! fall, a face-on plate's terminal speed), landing, drift in a wind, flutter, determinism.
//! The models' use of them: `dynamics::falling_models` tests.

use glam::{Quat, Vec3};
use sylva_engine::JobSystem;

use super::*;
use crate::dynamics::test_winds::Swirl;
use crate::forest::TreePlacement;
use crate::material::{Material, AIR_DENSITY};
use crate::rng::Rng;
use crate::testtree::test_tree;
use crate::wind::{Calm, GustingWind};

const DT: f32 = 1.0 / 60.0;

fn forest(leaves: usize) -> Forest {
    let skel = test_tree(7, 80, leaves).unwrap();
    crate::forest::at_origin(&skel, &Material::default())
}

fn pose_for(forest: &Forest) -> Pose {
    Pose {
        base: vec![Vec3::ZERO; forest.segment_count()],
        orient: vec![Quat::IDENTITY; forest.segment_count()],
        leaf_pos: vec![Vec3::ZERO; forest.leaf_count()],
        leaf_orient: vec![Quat::IDENTITY; forest.leaf_count()],
        removed: Vec::new(),
    }
}

/// A leaf orientation tilted by up to `tilt` radians from face-up, any heading.
fn tilted(rng: &mut Rng, tilt: f32) -> Quat {
    let heading = Quat::from_rotation_y(rng.range(0.0, std::f32::consts::TAU));
    // Face up: the leaf's +z normal to world +y.
    let flat = Quat::from_rotation_x(-std::f32::consts::FRAC_PI_2);
    let tip = Quat::from_rotation_x(rng.sym(tilt)) * Quat::from_rotation_z(rng.sym(tilt));
    heading * tip * flat
}

/// Every leaf of `forest` launched from height `h` at rest, tilted up to `tilt`, spread on a
/// grid 1 m apart.
fn launched(forest: &Forest, h: f32, tilt: f32, seed: u64) -> FallingLeaves {
    let mut f = FallingLeaves::new(FallingParams::default(), forest, false).unwrap();
    let mut rng = Rng::new(seed);
    let m = forest.leaf_count();
    let side = (m as f32).sqrt().ceil() as usize;
    for j in 0..m {
        let pos = Vec3::new((j % side) as f32, h, (j / side) as f32);
        assert!(f.launch(j, forest, pos, tilted(&mut rng, tilt), Vec3::ZERO, Vec3::ZERO));
    }
    f
}

/// The face-on plate's terminal speed sqrt(2·m·g/(ρ·C_N·A)) = sqrt(2·(m/A)·g/(ρ·C_N)),
/// the same for every leaf of one mass per area.
fn face_on_terminal(material: &Material, p: &FallingParams) -> f32 {
    (2.0 * material.leaf_mass_per_area * p.gravity / (AIR_DENSITY * p.normal_drag)).sqrt()
}

/// Steps until every leaf has landed (at most `limit` s); per leaf, the time it landed.
fn fall(f: &mut FallingLeaves, forest: &Forest, wind: &mut dyn WindField, jobs: &JobSystem, limit: f32) -> Vec<f32> {
    let mut pose = pose_for(forest);
    let mut landed_at = vec![f32::NAN; f.leaves().len()];
    let mut t = 0.0f32;
    while t < limit && f.stats().falling > 0 {
        wind.advance(t as f64);
        f.step(forest, wind, DT, jobs, &mut pose);
        t += DT;
        for (k, leaf) in f.leaves().iter().enumerate() {
            assert!(leaf.lowest() >= 0.0, "leaf {k} below the ground: {}", leaf.lowest());
            assert!(pose.leaf_pos[leaf.leaf as usize].y >= 0.0);
            if leaf.landed && landed_at[k].is_nan() {
                landed_at[k] = t;
            }
        }
    }
    landed_at
}

/// Leaves dropped from 10 m in calm air reach the ground, never dip below it, and lie still
/// there afterwards (bit for bit), flat.
#[test]
fn leaves_in_calm_air_land_and_stay() {
    let forest = forest(60);
    let jobs = JobSystem::new(1).unwrap();
    let mut f = launched(&forest, 10.0, 0.6, 1);
    let landed_at = fall(&mut f, &forest, &mut Calm, &jobs, 60.0);
    assert!(landed_at.iter().all(|t| t.is_finite()), "every leaf landed within 60 s");
    assert_eq!(f.stats().landed, forest.leaf_count());
    let lying: Vec<[f32; 15]> = f.leaves().iter().map(Leaf::values).collect();
    for leaf in f.leaves() {
        assert!((leaf.x.y - ground::LIFT).abs() < 1e-6, "lies on the ground");
        assert!((leaf.q * Vec3::Z).y.abs() > 0.9999, "lies flat");
    }
    let mut pose = pose_for(&forest);
    for _ in 0..180 {
        f.step(
            &forest,
            &GustingWind::new(6.0, 0.0, 0.5, 3).unwrap(),
            DT,
            &jobs,
            &mut pose,
        );
    }
    let after: Vec<[f32; 15]> = f.leaves().iter().map(Leaf::values).collect();
    assert_eq!(
        lying.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>(),
        after.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>(),
        "landed leaves stay where they fell, even in a wind"
    );
}

/// The mean fall speed, height over fall time, lies between half a face-on plate's terminal
/// speed v_t = sqrt(2·m·g/(ρ·C_N·A)) and 0.8 times the free fall's mean speed over the same
/// height, sqrt(g·h/2) (from h = ½·g·t²).
///
/// The upper end: the air slows a leaf well below free fall. The lower end is not v_t: a
/// fluttering plate glides, and the lift of its glides lets it sink slower than the same plate
/// held face on (fluttering paper does). A plate whose air force acts along its normal glides
/// steadily at slope γ with speed U where ½·ρ·A·C_N·sin γ·U² = m·g, so it sinks at
/// U·sin γ = v_t·√(sin γ); half of v_t is a glide of sin γ = 1/4 (14°) sustained through the
/// whole fall, flatter than the 25° to 60° swings of fluttering plates (Andersen et al. 2005,
/// Fig. 2), while tumbling, edge first part of the time, sinks faster than v_t.
#[test]
fn mean_fall_speed_lies_between_half_the_face_on_terminal_speed_and_free_fall() {
    let forest = forest(60);
    let jobs = JobSystem::new(1).unwrap();
    let h = 10.0;
    let mut f = launched(&forest, h, 0.6, 2);
    let start: Vec<f32> = f.leaves().iter().map(Leaf::lowest).collect();
    let landed_at = fall(&mut f, &forest, &mut Calm, &jobs, 60.0);
    let p = FallingParams::default();
    let vt = face_on_terminal(&forest.material, &p);
    let mut speeds: Vec<f32> = start.iter().zip(&landed_at).map(|(h, t)| h / t).collect();
    speeds.sort_by(f32::total_cmp);
    let free = (p.gravity * h / 2.0).sqrt();
    println!(
        "face-on terminal {vt:.2} m/s, free fall mean {free:.2} m/s; leaves' mean fall speeds {:.2} .. {:.2} m/s (median {:.2})",
        speeds[0],
        speeds[speeds.len() - 1],
        speeds[speeds.len() / 2]
    );
    for &s in &speeds {
        assert!(
            s > 0.5 * vt && s < 0.8 * free,
            "{s} m/s not in ({}, {})",
            0.5 * vt,
            0.8 * free
        );
    }
}

/// In a steady 4 m/s wind towards +x every leaf lands downwind of where it started, and on
/// average beyond where the same leaves land in calm air by at least half the wind's travel
/// over the mean fall time (a leaf starting at rest takes a while to catch the wind). Tumbling
/// leaves also glide across the wind (the rotational lift, ω × u), each its own way: on
/// average across the wind they go much less far than down it.
#[test]
fn leaves_drift_downwind() {
    let forest = forest(60);
    let jobs = JobSystem::new(1).unwrap();
    let mut calm = launched(&forest, 10.0, 0.6, 3);
    let start: Vec<Vec3> = calm.leaves().iter().map(|l| l.x).collect();
    let mut windy = launched(&forest, 10.0, 0.6, 3);
    fall(&mut calm, &forest, &mut Calm, &jobs, 60.0);
    let mut wind = GustingWind::new(4.0, 0.0, 0.0, 1).unwrap();
    let landed_at = fall(&mut windy, &forest, &mut wind, &jobs, 60.0);
    let n = start.len() as f32;
    let (mut down, mut across, mut time) = (0.0, 0.0, 0.0);
    for (((a, b), t), x0) in calm.leaves().iter().zip(windy.leaves()).zip(&landed_at).zip(&start) {
        assert!(
            b.x.x > x0.x + 1.0,
            "leaf {} landed {} m downwind of its start",
            a.leaf,
            b.x.x - x0.x
        );
        down += (b.x.x - a.x.x) / n;
        across += (b.x.z - a.x.z) / n;
        time += t / n;
    }
    println!("mean drift beyond the calm landing: downwind {down:.2} m, across {across:.2} m; mean fall {time:.2} s");
    assert!(down > 0.5 * 4.0 * time);
    assert!(across.abs() < 0.3 * down);
}

/// In calm air the leaves do not drop straight and flat: they glide off sideways and turn
/// (flutter and tumble), each differently.
#[test]
fn leaves_flutter_and_tumble_in_calm_air() {
    let forest = forest(60);
    let jobs = JobSystem::new(1).unwrap();
    let mut f = launched(&forest, 10.0, 0.6, 4);
    let start: Vec<(Vec3, Vec3)> = f.leaves().iter().map(|l| (l.x, l.q * Vec3::Z)).collect();
    let mut pose = pose_for(&forest);
    let mut most_turn = vec![0.0f32; start.len()];
    for _ in 0..60 * 60 {
        f.step(&forest, &Calm, DT, &jobs, &mut pose);
        for (k, l) in f.leaves().iter().enumerate().filter(|(_, l)| !l.landed) {
            let turn = (l.q * Vec3::Z).dot(start[k].1).clamp(-1.0, 1.0).acos();
            most_turn[k] = most_turn[k].max(turn);
        }
    }
    let lateral: Vec<f32> = f
        .leaves()
        .iter()
        .zip(&start)
        .map(|(l, (x0, _))| Vec3::new(l.x.x - x0.x, 0.0, l.x.z - x0.z).length())
        .collect();
    let turned = most_turn.iter().filter(|&&a| a > 0.5).count();
    let moved = lateral.iter().filter(|&&d| d > 0.3).count();
    let spread = lateral.iter().fold(0.0f32, |a, &b| a.max(b)) - lateral.iter().fold(f32::MAX, |a, &b| a.min(b));
    println!(
        "turned over 0.5 rad: {turned}/{}, moved over 0.3 m sideways: {moved}, spread {spread:.2} m",
        start.len()
    );
    assert!(turned * 10 >= 9 * start.len(), "most leaves turn by over 0.5 rad");
    assert!(moved * 10 >= 9 * start.len(), "most leaves glide sideways");
    assert!(spread > 0.5, "not all alike");
}

/// Thousands of leaves in a wind that varies in space and time step to bit-identical states
/// on 1, 2 and 4 workers.
#[test]
fn thousands_of_leaves_are_deterministic_for_any_worker_count() {
    let forest = forest(3000);
    let hash = |threads: usize| {
        let jobs = JobSystem::new(threads).unwrap();
        let mut f = launched(&forest, 12.0, 1.2, 5);
        let mut pose = pose_for(&forest);
        let mut wind = Swirl { time: 0.0, speed: 6.0 };
        for s in 0..90 {
            wind.advance(s as f64 * DT as f64);
            f.step(&forest, &wind, DT, &jobs, &mut pose);
        }
        assert!(f.stats().falling > 1000 && f.finite(), "{:?}", f.stats());
        let fastest = f.leaves().iter().map(|l| l.w.length()).fold(0.0, f32::max);
        assert!(
            fastest < 0.9 * aero::MAX_SPIN,
            "the spin guard stays out of the way: {fastest} rad/s"
        );
        let mut h = StateHash::new();
        f.hash_state(&mut h);
        h.add(pose.leaf_pos.iter().flat_map(|p| p.to_array()));
        h.finish()
    };
    let one = hash(1);
    assert_eq!(hash(2), one);
    assert_eq!(hash(4), one);
}

/// Settings out of range are refused, naming them.
#[test]
fn bad_settings_are_refused_by_name() {
    FallingParams::default().validate().unwrap();
    let cases: [(FallingParams, &str); 5] = [
        (
            FallingParams {
                normal_drag: -1.0,
                ..Default::default()
            },
            "falling normal drag",
        ),
        (
            FallingParams {
                air_density: f32::NAN,
                ..Default::default()
            },
            "falling air density",
        ),
        (
            FallingParams {
                gravity: f32::INFINITY,
                ..Default::default()
            },
            "falling gravity",
        ),
        (
            FallingParams {
                cap: 0,
                ..Default::default()
            },
            "falling cap",
        ),
        (
            FallingParams {
                substeps: 0,
                ..Default::default()
            },
            "falling substeps",
        ),
    ];
    for (p, name) in cases {
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains(name), "{e}");
        assert!(FallingLeaves::new(p, &forest(10), true).is_err());
    }
    for v in [-1.0, 0.0, f32::NAN, f32::NEG_INFINITY] {
        let m = Material {
            petiole_strength: v,
            ..Material::default()
        };
        let e = m.validate().unwrap_err().to_string();
        assert!(e.contains("petiole_strength"), "{e}");
    }
    Material {
        petiole_strength: f32::INFINITY,
        ..Material::default()
    }
    .validate()
    .unwrap();
}

// The models' falling leaves.

use crate::dynamics::{DynamicsModel, ModelKind};
use sylva_engine::FrameTimings;

fn trees(count: usize, leaves: usize) -> Forest {
    let skels: Vec<_> = (0..count)
        .map(|k| test_tree(11 + k as u64, 80, leaves).unwrap())
        .collect();
    let placements: Vec<_> = skels
        .iter()
        .enumerate()
        .map(|(k, s)| TreePlacement {
            skeleton: s,
            position: Vec3::new(8.0 * k as f32, 0.0, 0.0),
        })
        .collect();
    Forest::build(&placements, &Material::default()).unwrap()
}

fn run(m: &mut dyn DynamicsModel, jobs: &JobSystem, seconds: f32) {
    let timings = FrameTimings::new(m.phases());
    let steps = (seconds / m.dt()).round() as usize;
    for _ in 0..steps {
        m.step(jobs, &timings);
    }
}

/// In every model: dropped leaves fall to the ground, their pose with them (the attachment end
/// lying on the ground, the blade flat), while the rest stay on their swaying segments, at
/// their place along the segment and, in the models whose leaves are rigid, with their rigid
/// orientation; a reset puts them all back.
#[test]
fn every_model_drops_leaves_to_the_ground_and_keeps_the_rest_on_their_segments() {
    let jobs = JobSystem::new(2).unwrap();
    for kind in ModelKind::ALL {
        let forest = trees(1, 300);
        let mut m = kind.build(forest).unwrap();
        let fresh = m.state_hash();
        m.set_wind(Box::new(GustingWind::new(7.0, 0.3, 0.3, 2).unwrap()));
        run(&mut *m, &jobs, 0.5);
        assert_eq!(m.drop_leaves(100).unwrap(), 100, "{kind}");
        run(&mut *m, &jobs, 30.0);
        let stats = m.falling_leaves().unwrap();
        assert_eq!(
            (stats.landed, stats.falling, stats.detached),
            (100, 0, 100),
            "{kind}: {stats:?}"
        );
        let forest = m.forest();
        let pose = m.pose();
        assert_eq!(pose.leaf_orient.len(), forest.leaf_count(), "{kind}");
        let mut attached = 0;
        for i in 0..forest.segment_count() {
            for j in forest.leaves_of(i) {
                if !m.leaf_attached(j) {
                    let p = pose.leaf_pos[j];
                    assert!(p.y >= 0.0 && p.y <= ground::LIFT + 1e-4, "{kind}: leaf {j} at {p}");
                    assert!((pose.leaf_orient[j] * Vec3::Z).y.abs() > 0.9999, "{kind}: lies flat");
                    continue;
                }
                attached += 1;
                let on_axis = pose.base[i]
                    + pose.orient[i] * Vec3::new(0.0, forest.leaf.along_f32(j) * forest.seg.length[i], 0.0);
                assert!(
                    (pose.leaf_pos[j] - on_axis).length() < 1e-3,
                    "{kind}: leaf {j} off its segment"
                );
                // Weber's and Manavi's leaves are rigid on their segments; Oliapuram's and
                // Chen's turn on their own.
                if matches!(kind, ModelKind::Weber | ModelKind::Verlet) {
                    let rigid = pose.leaf_orientation_rigid(forest, i, j);
                    assert!(
                        pose.leaf_orient[j].dot(rigid).abs() > 1.0 - 1e-5,
                        "{kind}: leaf {j} turned"
                    );
                }
            }
        }
        assert_eq!(attached, forest.leaf_count() - 100, "{kind}");
        drop(pose);
        // All the rest come off; none twice.
        assert_eq!(m.drop_leaves(10_000).unwrap(), attached, "{kind}");
        assert_eq!(m.drop_leaves(10).unwrap(), 0, "{kind}");
        m.reset();
        assert_eq!(m.falling_leaves().unwrap().detached, 0);
        assert_eq!(m.state_hash(), fresh, "{kind}: reset re-attaches every leaf");
        if matches!(kind, ModelKind::Weber | ModelKind::Verlet) {
            assert!(m.pose().leaf_orient.is_empty(), "{kind}: rigid leaves again");
        }
    }
}

/// In every model, thousands of leaves falling in a wind that varies in space and time give
/// the same state hash on 1, 2 and 4 workers.
#[test]
fn every_model_is_deterministic_with_thousands_of_leaves_falling() {
    for kind in ModelKind::ALL {
        let hash = |threads: usize| {
            let jobs = JobSystem::new(threads).unwrap();
            let mut m = kind.build(trees(3, 1500)).unwrap();
            m.set_wind(Box::new(Swirl { time: 0.0, speed: 6.0 }));
            run(&mut *m, &jobs, 0.2);
            assert_eq!(m.drop_leaves(4000).unwrap(), 4000);
            run(&mut *m, &jobs, 1.0);
            let s = m.falling_leaves().unwrap();
            assert!(s.falling > 2000 && m.finite(), "{kind}: {s:?}");
            m.state_hash()
        };
        let one = hash(1);
        assert_eq!(hash(2), one, "{kind}");
        assert_eq!(hash(4), one, "{kind}");
    }
}

/// A steady 25 m/s storm tears off a fraction of the leaves (those whose petiole strength,
/// 90 N/m² times a factor of 0.5 to 1.5, is below the drag pressure 3.1·25 = 77.5 N/m²: about
/// (0.86 - 0.5) = 36 %), in every model; calm air and a 10 m/s breeze none.
#[test]
fn every_model_loses_leaves_in_a_storm_and_none_in_calm_air() {
    let jobs = JobSystem::new(2).unwrap();
    for kind in ModelKind::ALL {
        for (speed, lo, hi) in [(0.0, 0.0, 0.0), (10.0, 0.0, 0.0), (25.0, 0.3, 0.42)] {
            let mut m = kind.build(trees(1, 1000)).unwrap();
            m.set_wind(Box::new(GustingWind::new(speed, 0.0, 0.0, 1).unwrap()));
            run(&mut *m, &jobs, 1.0);
            let s = m.falling_leaves().unwrap();
            let frac = s.detached as f32 / m.forest().leaf_count() as f32;
            println!(
                "{kind} at {speed} m/s: {} of {} leaves torn off",
                s.detached,
                m.forest().leaf_count()
            );
            assert!(frac >= lo && frac <= hi, "{kind} at {speed} m/s: {frac}");
        }
    }
}

/// The same in the fluid wind, whose speed bound lets calm air skip the petiole check's
/// sampling: a steady 25 m/s wind through the grid tears off the same fraction as the uniform
/// storm above, a 10 m/s one none (the bound, 10 m/s, is below every leaf's strength).
#[test]
fn the_fluid_wind_tears_leaves_in_a_storm_and_none_in_a_breeze() {
    use crate::fluid::{FluidGrid, FluidParams, FluidWind};
    let jobs = JobSystem::new(2).unwrap();
    for (speed, lo, hi) in [(10.0, 0.0, 0.0), (25.0, 0.3, 0.42)] {
        let mut m = ModelKind::Weber.build(trees(1, 1000)).unwrap();
        let border = Vec3::new(speed, 0.0, 0.0);
        let mut params = FluidParams::over(Vec3::new(-20.0, 0.0, -20.0), Vec3::new(20.0, 30.0, 20.0));
        params.cells = [24, 16, 24];
        params.border = border;
        let mut grid = FluidGrid::new(params).unwrap();
        for a in 0..3 {
            grid.velocity_mut(a).iter_mut().for_each(|v| *v = border[a]);
        }
        assert!(
            (grid.speed_bound() - speed).abs() < 1e-3 * speed,
            "{}",
            grid.speed_bound()
        );
        m.set_wind(Box::new(FluidWind::new(grid)));
        run(&mut *m, &jobs, 1.0);
        let s = m.falling_leaves().unwrap();
        let frac = s.detached as f32 / m.forest().leaf_count() as f32;
        assert!(frac >= lo && frac <= hi, "fluid wind at {speed} m/s: {frac}");
    }
}

/// In every model the trees move bit for bit the same with and without leaves falling off
/// them (a detached leaf's drag and mass stay lumped in its segment, and the model steps from
/// its own pose, the falling leaves' taken out), in a wind that varies in space, which would
/// differ at a fallen leaf's place.
#[test]
fn every_model_moves_its_trees_the_same_with_leaves_falling() {
    let jobs = JobSystem::new(2).unwrap();
    for kind in ModelKind::ALL {
        let trees_of = |drop: usize| {
            let mut m = kind.build(trees(2, 800)).unwrap();
            m.set_wind(Box::new(Swirl { time: 0.0, speed: 8.0 }));
            run(&mut *m, &jobs, 0.2);
            assert_eq!(m.drop_leaves(drop).unwrap(), drop);
            run(&mut *m, &jobs, 2.0);
            let p = m.pose();
            let bits: Vec<u32> = p
                .base
                .iter()
                .flat_map(|v| v.to_array())
                .chain(p.orient.iter().flat_map(|q| q.to_array()))
                .map(f32::to_bits)
                .collect();
            (bits, m.falling_leaves().unwrap())
        };
        let (still, _) = trees_of(0);
        let (shedding, s) = trees_of(1000);
        assert!(s.detached == 1000 && s.landed > 0 && s.falling > 0, "{kind}: {s:?}");
        assert!(still == shedding, "{kind}: the falling leaves moved the trees");
    }
}
