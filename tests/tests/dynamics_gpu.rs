//! Oliapuram & Kumar's model on the GPU (`sylva_render::GpuOliapuram`, compute shaders) against
//! the CPU model (`sylva_sim::dynamics::OliapuramModel`), on a real Vulkan device (lavapipe on a
//! machine without a GPU) with the Khronos validation layer on: every test fails on a
//! validation error, and fails (rather than passing) when no device can be opened.
//!
//! Tolerance. The kernels do the CPU kernels' f32 arithmetic in the same order, but a shader
//! compiler may fuse multiply-adds and the library's sin/cos differ, so the two drift apart by
//! rounding. After 100 steps of a small forest in a fluid wind, every segment tip and leaf of
//! the GPU forest lies within `TIP_TOLERANCE` (10 µm) of the CPU's and within 0.1 % of the
//! largest tip displacement from rest (which the tests require to be at least 1 cm, so that the
//! wind did move the trees and the comparison means something), and every leaf's orientation
//! within `TURN_TOLERANCE` (10⁻⁵ rad) of the CPU's. Measured on lavapipe: tips 1.5 µm, leaves
//! 1.9 µm (6·10⁻⁵ of a 3.1 cm displacement), leaf turns 6·10⁻⁷ rad, with the wind sampled on
//! the CPU, on the GPU and uniform alike. The tolerances reject a slightly wrong model: the CPU
//! model with the propagation coefficient k_c 10 % low lies 7.5 mm from the right one, with the
//! leaves' σ 10 % low its leaves turn 1.6·10⁻³ rad from the right ones (the test requires ten
//! times the tolerance).

use glam::{Quat, Vec3};
use sylva_engine::{FrameTimings, JobSystem};
use sylva_render::{DynamicsWindSource, GpuOliapuram, GpuWind};
use sylva_sim::dynamics::{DynamicsModel, ModelKind, ModelParts, OliapuramModel, OliapuramParams};
use sylva_sim::fluid::{FluidGrid, FluidParams, FluidWind, Pressure, Side, WindBall};
use sylva_sim::forest::NO_PARENT;
use sylva_sim::scene::TestForest;
use sylva_sim::{Forest, Material};
use sylva_tests::device::{assert_no_validation_errors, gpu};

/// Largest distance between a GPU tip and the CPU's after 100 steps \[m\].
const TIP_TOLERANCE: f32 = 1e-5;
/// Largest angle between a GPU leaf orientation and the CPU's after 100 steps \[rad\].
const TURN_TOLERANCE: f32 = 1e-5;
/// Largest distance between a GPU tip and the CPU's over the largest tip displacement.
const RELATIVE_TOLERANCE: f32 = 1e-3;
const STEPS: usize = 100;

/// The default material but leaves the wind never tears off: the device has no falling
/// leaves (`sylva_sim::dynamics::falling`), so the CPU model must keep its leaves too for the
/// poses to compare.
fn kept_leaves() -> Material {
    Material {
        petiole_strength: f32::INFINITY,
        ..Material::default()
    }
}

/// Four small trees (300 segments, 500 leaves each).
fn forest() -> Forest {
    TestForest::new(7, 300, 500, 4, &kept_leaves()).unwrap().forest
}

/// A fluid grid over the forest: a 14 m/s border wind from the west-south-west and a wind ball
/// gusting across the crowns, so the wind varies in space and time.
fn grid(forest: &Forest) -> FluidGrid {
    let model = OliapuramModel::new(forest.clone(), OliapuramParams::default()).unwrap();
    let pose = model.pose();
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for &b in &pose.base {
        lo = lo.min(b);
        hi = hi.max(b);
    }
    let min = Vec3::new(lo.x - 6.0, 0.0, lo.z - 6.0);
    let max = Vec3::new(hi.x + 6.0, hi.y * 1.6 + 2.0, hi.z + 6.0);
    let mut p = FluidParams::over(min, max);
    p.cells = [32, 12, 24];
    p.pressure = Pressure::JACOBI4;
    p.sides = [
        Side::Border,
        Side::Border,
        Side::Closed,
        Side::Open,
        Side::Border,
        Side::Border,
    ];
    p.border = Vec3::new(13.0, 0.0, 5.0);
    p.seed = 3;
    let mut g = FluidGrid::new(p).unwrap();
    for a in 0..3 {
        let w = g.params().border[a];
        g.velocity_mut(a).iter_mut().for_each(|v| *v = w);
    }
    let c = 0.5 * (lo + hi);
    g.add_ball(WindBall {
        centre: Vec3::new(c.x, 0.6 * hi.y, c.z),
        radius: 0.3 * (hi.x - lo.x).max(4.0),
        accel: Vec3::new(10.0, 3.0, -8.0),
        jitter: 0.3,
    })
    .unwrap();
    g
}

/// Every segment's tip.
fn tips(m: &dyn DynamicsModel) -> Vec<Vec3> {
    let pose = m.pose();
    let len = &m.forest().seg.length;
    (0..len.len()).map(|i| pose.tip(i, len[i])).collect()
}

/// How far two poses of the same forest lie apart.
#[derive(Clone, Copy, Debug)]
struct Diff {
    /// Largest distance between segment tips \[m\].
    tips: f32,
    /// Largest distance between leaf attachment points \[m\].
    leaves: f32,
    /// Largest angle between leaf orientations \[rad\].
    turn: f32,
}

/// The angle of the rotation from `a` to `b` \[rad\]: 2·asin |vector part of a⁻¹b|, well
/// conditioned for small angles (1 − |a·b| is not: it loses everything below ~10⁻⁷).
fn turn_between(a: Quat, b: Quat) -> f32 {
    let d = a.conjugate() * b;
    2.0 * Vec3::new(d.x, d.y, d.z).length().min(1.0).asin()
}

fn difference(a: &dyn DynamicsModel, b: &dyn DynamicsModel) -> Diff {
    let tips = tips(a)
        .iter()
        .zip(&tips(b))
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    let (pa, pb) = (a.pose(), b.pose());
    assert_eq!(pa.leaf_orient.len(), pb.leaf_orient.len());
    assert!(!pa.leaf_orient.is_empty(), "the leaves turn on their own in this model");
    let leaves = pa
        .leaf_pos
        .iter()
        .zip(&pb.leaf_pos)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    let turn = pa
        .leaf_orient
        .iter()
        .zip(&pb.leaf_orient)
        .map(|(a, b)| turn_between(*a, *b))
        .fold(0.0, f32::max);
    Diff { tips, leaves, turn }
}

/// Steps the models `STEPS` times side by side (the first is the reference CPU model); returns
/// how far each of the others lies from the first, and the largest tip displacement from rest
/// (of the first).
fn compare(models: &mut [&mut dyn DynamicsModel]) -> (Vec<Diff>, f32) {
    let jobs = JobSystem::new(2).unwrap();
    let rest = tips(models[0]);
    for m in &models[1..] {
        let at_rest = difference(models[0], *m).tips;
        assert!(at_rest < 1e-5, "the rest poses differ by {at_rest} m");
    }
    let timings = FrameTimings::new(models[0].phases());
    for _ in 0..STEPS {
        for m in models.iter_mut() {
            m.step(&jobs, &timings);
        }
    }
    for m in models.iter() {
        assert!(m.finite(), "{:?}", m.failure());
        assert_eq!(m.time(), models[0].time());
    }
    let moved = tips(models[0])
        .iter()
        .zip(&rest)
        .map(|(a, r)| a.distance(*r))
        .fold(0.0, f32::max);
    let diffs: Vec<Diff> = models[1..].iter().map(|m| difference(models[0], *m)).collect();
    for d in &diffs {
        eprintln!(
            "after {STEPS} steps: tips differ by at most {:.3e} m ({:.3e} of the largest displacement, \
             {moved:.3} m); leaves by {:.3e} m and turned by {:.3e} rad",
            d.tips,
            d.tips / moved,
            d.leaves,
            d.turn
        );
    }
    (diffs, moved)
}

fn check_agreement(d: Diff, moved: f32) {
    assert!(moved > 0.01, "the wind moved the tips by only {moved} m");
    let diff = d.tips.max(d.leaves);
    assert!(diff <= TIP_TOLERANCE, "GPU and CPU tips or leaves differ by {diff} m");
    assert!(
        diff <= RELATIVE_TOLERANCE * moved,
        "GPU and CPU tips differ by {diff} m, {} of the largest displacement {moved} m",
        diff / moved
    );
    assert!(
        d.turn <= TURN_TOLERANCE,
        "GPU and CPU leaf orientations differ by {} rad",
        d.turn
    );
}

/// Whether `d` (a CPU model with a parameter off by 10 % against the right one) lies outside
/// the tolerances: the tolerances reject a model that is slightly wrong.
fn check_rejected(what: &str, d: Diff, tips: bool) {
    if tips {
        assert!(
            d.tips.max(d.leaves) > 10.0 * TIP_TOLERANCE,
            "{what}: tips within {} m of the right model, not ten times the tolerance",
            d.tips.max(d.leaves)
        );
    } else {
        assert!(
            d.turn > 10.0 * TURN_TOLERANCE,
            "{what}: leaves within {} rad of the right model's, not ten times the tolerance",
            d.turn
        );
    }
}

#[test]
fn gpu_and_cpu_agree_in_a_fluid_wind_sampled_on_the_cpu() {
    let gpu = gpu();
    let f = forest();
    let mut cpu = ModelKind::Oliapuram.build(f.clone()).unwrap();
    cpu.set_wind(Box::new(FluidWind::new(grid(&f))));
    let mut parts = ModelParts::new(f.clone());
    parts.wind = Box::new(FluidWind::new(grid(&f)));
    let mut on_gpu = GpuOliapuram::from_parts(&gpu, parts, OliapuramParams::for_material(&f.material)).unwrap();
    // The same CPU model with the propagation coefficient k_c, then the leaves' σ, 10 % low:
    // each must lie outside the tolerances, far.
    let wrong = |change: fn(&mut OliapuramParams)| {
        let mut p = OliapuramParams::for_material(&f.material);
        change(&mut p);
        let mut m = OliapuramModel::new(f.clone(), p).unwrap();
        m.set_wind(Box::new(FluidWind::new(grid(&f))));
        m
    };
    let mut low_kc = wrong(|p| p.propagation *= 0.9);
    let mut low_leaf_sigma = wrong(|p| p.leaf_sigma *= 0.9);
    let (d, moved) = compare(&mut [&mut *cpu, &mut on_gpu, &mut low_kc, &mut low_leaf_sigma]);
    check_agreement(d[0], moved);
    assert_eq!(on_gpu.wind_source(), Some(DynamicsWindSource::HostSamples));
    check_rejected("k_c × 0.9", d[1], true);
    check_rejected("leaf σ × 0.9", d[2], false);
    assert_no_validation_errors(&gpu);
}

#[test]
fn gpu_and_cpu_agree_with_the_wind_on_the_gpu() {
    let gpu = gpu();
    let f = forest();
    // The CPU model samples the GPU wind's read-back grid; the GPU model reads the other
    // GPU wind's velocity buffer on the device. Both winds step the same grid identically.
    let mut cpu = ModelKind::Oliapuram.build(f.clone()).unwrap();
    cpu.set_wind(Box::new(GpuWind::new(&gpu, grid(&f)).unwrap()));
    let mut parts = ModelParts::new(f.clone());
    parts.wind = Box::new(GpuWind::new(&gpu, grid(&f)).unwrap());
    let mut on_gpu = GpuOliapuram::from_parts(&gpu, parts, OliapuramParams::for_material(&f.material)).unwrap();
    let (d, moved) = compare(&mut [&mut *cpu, &mut on_gpu]);
    check_agreement(d[0], moved);
    assert!(on_gpu.wind().failure().is_none());
    // The kernels read the wind's velocity buffer on the device: nothing sampled on the CPU.
    assert_eq!(on_gpu.wind_source(), Some(DynamicsWindSource::Device));
    assert_no_validation_errors(&gpu);
}

/// The wind uniform in space (the gusting wind `bench sim` uses) is passed to the kernels as a
/// constant: the same agreement.
#[test]
fn gpu_and_cpu_agree_in_a_gusting_uniform_wind() {
    let gpu = gpu();
    let f = forest();
    let wind = || Box::new(sylva_sim::GustingWind::new(14.0, 0.3, 0.5, 9).unwrap());
    let mut cpu = ModelKind::Oliapuram.build(f.clone()).unwrap();
    cpu.set_wind(wind());
    let mut on_gpu = GpuOliapuram::new(&gpu, f).unwrap();
    on_gpu.set_wind(wind());
    let (d, moved) = compare(&mut [&mut *cpu, &mut on_gpu]);
    check_agreement(d[0], moved);
    assert_eq!(on_gpu.wind_source(), Some(DynamicsWindSource::Uniform));
    assert_no_validation_errors(&gpu);
}

/// Both drag laws of `Material::drag_law` on the device as on the CPU, in a 36 m/s storm
/// (gusting, uniform): the linear law and the quadratic one (the default, which every other
/// test here runs) agree within the same tolerances, and the two laws differ by far more than
/// the tolerance (so the device does take the law it is given).
#[test]
fn gpu_and_cpu_agree_under_both_drag_laws_in_a_storm() {
    let gpu = gpu();
    let wind = || Box::new(sylva_sim::GustingWind::new(36.0, 0.3, 0.3, 5).unwrap());
    let mut gpus = Vec::new();
    for law in [sylva_sim::DragLaw::Linear, sylva_sim::DragLaw::Quadratic] {
        let material = Material {
            drag_law: law,
            ..kept_leaves()
        };
        let f = TestForest::new(7, 300, 500, 4, &material).unwrap().forest;
        let mut cpu = ModelKind::Oliapuram.build(f.clone()).unwrap();
        cpu.set_wind(wind());
        let mut on_gpu = GpuOliapuram::new(&gpu, f).unwrap();
        on_gpu.set_wind(wind());
        eprintln!("{law:?}:");
        let (d, moved) = compare(&mut [&mut *cpu, &mut on_gpu]);
        check_agreement(d[0], moved);
        gpus.push(on_gpu);
    }
    let apart = difference(&gpus[0], &gpus[1]);
    eprintln!("linear against quadratic on the device: tips {} m", apart.tips);
    assert!(apart.tips > 10.0 * TIP_TOLERANCE, "the two laws gave the same storm");
    assert_no_validation_errors(&gpu);
}

/// After every step of the GPU model in a strong gusting wind, each segment's base lies on its
/// parent's tip and each segment keeps its length (the distance from its base to its
/// children's bases), and orientations stay unit quaternions.
#[test]
fn gpu_segments_stay_on_their_parents_tips_with_their_lengths() {
    let gpu = gpu();
    let f = forest();
    let mut m = GpuOliapuram::new(&gpu, f.clone()).unwrap();
    m.set_wind(Box::new(sylva_sim::GustingWind::new(30.0, 0.4, 0.5, 5).unwrap()));
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(m.phases());
    let seg = &f.seg;
    let rest = tips(&m);
    let mut moved = 0.0f32;
    for _ in 0..60 {
        m.step(&jobs, &timings);
        let pose = m.pose();
        for i in 0..seg.parent.len() {
            let q = pose.orient[i];
            assert!((q.length() - 1.0).abs() < 1e-5, "segment {i}: |q| = {}", q.length());
            let p = seg.parent[i];
            if p == NO_PARENT {
                continue;
            }
            let p = p as usize;
            let gap = pose.base[i].distance(pose.tip(p, seg.length[p]));
            assert!(gap < 1e-4, "segment {i} is {gap} m off its parent's tip");
            // The parent's length, from its base to this child's base.
            let l = pose.base[i].distance(pose.base[p]);
            assert!(
                (l - seg.length[p]).abs() < 1e-4 * seg.length[p].max(1.0),
                "segment {p}: length {l} m, was {} m",
                seg.length[p]
            );
        }
        drop(pose);
        let now = tips(&m);
        moved = moved.max(now.iter().zip(&rest).map(|(a, b)| a.distance(*b)).fold(0.0, f32::max));
    }
    assert!(moved > 0.05, "the wind moved the tips by only {moved} m");
    assert!(m.finite());
    assert_no_validation_errors(&gpu);
}

/// A model rebuilt from the GPU model's parts keeps the wind and the clock; the GPU model's
/// reset puts the trees back at rest (its state hash equals a fresh model's).
#[test]
fn gpu_model_resets_and_hands_back_its_parts() {
    let gpu = gpu();
    let f = forest();
    let mut m = GpuOliapuram::new(&gpu, f.clone()).unwrap();
    let fresh = m.state_hash();
    assert_eq!(fresh, ModelKind::Oliapuram.build(f.clone()).unwrap().state_hash());
    m.set_wind(Box::new(sylva_sim::GustingWind::new(12.0, 0.0, 0.5, 1).unwrap()));
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(m.phases());
    for _ in 0..10 {
        m.step(&jobs, &timings);
    }
    assert_ne!(m.state_hash(), fresh, "the wind moved the trees");
    assert!(m.kinetic_energy() > 0.0);
    m.reset();
    assert_eq!(m.state_hash(), fresh);
    assert_eq!(m.kinetic_energy(), 0.0);
    let time = m.time();
    let parts = Box::new(m).into_parts();
    assert_eq!(parts.time, time);
    assert!(parts.wind.sample(Vec3::Y).length() > 1.0, "the gusting wind came back");
    assert_no_validation_errors(&gpu);
}

/// A wind whose value is not a number: it makes the state non-finite on the first step.
struct NanWind;

impl sylva_sim::wind::WindField for NanWind {
    fn advance(&mut self, _time: f64) {}
    fn sample(&self, _position: Vec3) -> Vec3 {
        Vec3::NAN
    }
    fn uniform(&self) -> Option<Vec3> {
        Some(Vec3::NAN)
    }
}

/// A state that went non-finite stays reported as such when a new time step re-uploads it
/// (the constants are rebuilt, the state carried over); a reset clears it.
#[test]
fn a_non_finite_state_stays_reported_across_a_time_step_change() {
    let gpu = gpu();
    let f = forest();
    let mut m = GpuOliapuram::new(&gpu, f).unwrap();
    assert!(m.finite());
    m.set_wind(Box::new(NanWind));
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(m.phases());
    m.step(&jobs, &timings);
    assert!(!m.finite(), "a NaN wind must make the state non-finite");
    let dt = m.dt();
    m.set_time_step(0.5 * dt).unwrap();
    assert!(
        !m.finite(),
        "the non-finite state was re-uploaded and must stay reported"
    );
    m.reset();
    assert!(m.finite(), "a reset state is finite");
    assert!(m.failure().is_none(), "{:?}", m.failure());
    assert_no_validation_errors(&gpu);
}

/// Replacing the GPU wind right after a step was submitted, and dropping the old wind at once:
/// the new wind is read on the device from the next step, the trees keep moving, and the
/// validation layer (which tracks buffers in use by pending work) sees no use of a freed
/// buffer, here nor when the model goes with a step in flight. On lavapipe the step is usually
/// done before the old wind goes even without the model's wait, so this guards the sequence
/// rather than reproducing the race a GPU running ahead would show.
#[test]
fn the_gpu_wind_can_be_replaced_and_dropped_between_steps() {
    let gpu = gpu();
    let f = forest();
    let mut parts = ModelParts::new(f.clone());
    parts.wind = Box::new(GpuWind::new(&gpu, grid(&f)).unwrap());
    let mut m = GpuOliapuram::from_parts(&gpu, parts, OliapuramParams::for_material(&f.material)).unwrap();
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(m.phases());
    for round in 0..3 {
        for _ in 0..3 {
            m.step(&jobs, &timings);
        }
        assert_eq!(m.wind_source(), Some(DynamicsWindSource::Device), "round {round}");
        // The step just submitted reads the old wind's buffer; the old wind goes at once.
        drop(m.replace_wind(Box::new(GpuWind::new(&gpu, grid(&f)).unwrap())));
    }
    m.step(&jobs, &timings);
    assert_eq!(m.wind_source(), Some(DynamicsWindSource::Device));
    assert!(m.finite(), "{:?}", m.failure());
    let moved = tips(&m)
        .iter()
        .zip(&tips(&*ModelKind::Oliapuram.build(f.clone()).unwrap()))
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    assert!(moved > 1e-4, "the wind moved the tips by only {moved} m");
    // A step in flight when the model goes (with its wind).
    m.step(&jobs, &timings);
    drop(m);
    assert_no_validation_errors(&gpu);
}
