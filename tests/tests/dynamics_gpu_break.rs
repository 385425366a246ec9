//! Breakage and uprooting in Oliapuram & Kumar's model on the GPU (`sylva_render::GpuOliapuram`),
//! on a real Vulkan device (lavapipe on a machine without a GPU) with the Khronos validation
//! layer on; every test fails on a validation error and when no device can be opened.
//!
//! The rule (`sylva_sim::dynamics::oliapuram::device`): every live segment carries its bark
//! drag plus its wood's weight at its centre of mass, every live leaf the wind's force on its
//! blade plus its weight at the blade's centre; the moment at a joint is that of everything
//! beyond it about the joint, M_i = S_T(i) − p_i × S_F(i), and its bending part, across the
//! segment's axis, breaks the joint past the joint's limit (a root's: the tree's anchorage).
//!
//! Reference: this file's own evaluation of the rule in f64, from the forest's geometry and
//! material alone (the paper's linear drag, Eq. 14: σ·S_f·w on a segment, σ_leaf·area·(w·n)·n
//! on a blade of normal n), on the pose the device read back. The device sums in f32 about
//! each tree's root; the two agree within `MOMENT_TOLERANCE` of the joint's moment plus
//! `MOMENT_FLOOR` of the largest root moment (measured: see the test's output). Joints whose
//! moment lies within `AMBIGUOUS` of their limit may go either way in f32 and are not held
//! against the device.

use std::collections::HashSet;

use glam::{DVec3, Quat, Vec3};
use sylva_engine::{FrameTimings, JobSystem};
use sylva_render::GpuOliapuram;
use sylva_sim::dynamics::{DynamicsModel, ModelParts, OliapuramModel, OliapuramParams};
use sylva_sim::forest::NO_PARENT;
use sylva_sim::scene::TestForest;
use sylva_sim::{Calm, DragLaw, Forest, GustingWind, Material};
use sylva_tests::device::{assert_no_validation_errors, gpu};

/// Relative agreement of the device's bending moments with this file's.
const MOMENT_TOLERANCE: f64 = 1e-3;
/// Absolute agreement, as a fraction of the largest root moment of the forest.
const MOMENT_FLOOR: f64 = 1e-5;
/// Agreement of the device's loads with this file's, relative to the size of their terms (a
/// blade's normal drag cancels to nothing when the wind lies in its plane).
const LOAD_TOLERANCE: f64 = 1e-5;
/// Steps of the storm in which the rule is checked (8 s; weak wood first breaks after 5 s).
const STORM_STEPS: usize = 480;
/// Relative distance from the limit within which f32 may decide either way.
const AMBIGUOUS: f64 = 1e-3;

/// Four small trees (300 segments, 500 leaves each) of `material`.
fn forest(material: &Material) -> Forest {
    TestForest::new(7, 300, 500, 4, material).unwrap().forest
}

/// Green wood a tenth as strong as the default, with no floor from the wind the trees grew in,
/// and the paper's linear drag (so this file's loads need no state).
fn weak_wood() -> Material {
    Material {
        modulus_of_rupture: 5.0e6,
        grown_wind: 0.0,
        drag_law: DragLaw::Linear,
        ..Material::default()
    }
}

fn storm() -> Box<GustingWind> {
    Box::new(GustingWind::new(36.0, 0.4, 0.5, 1).unwrap())
}

fn model(gpu: &std::sync::Arc<sylva_render::Gpu>, material: &Material) -> GpuOliapuram {
    let f = forest(material);
    let mut parts = ModelParts::new(f.clone());
    parts.wind = storm();
    GpuOliapuram::from_parts(gpu, parts, OliapuramParams::for_material(&f.material)).unwrap()
}

fn axis(q: Quat) -> DVec3 {
    (q * Vec3::Y).as_dvec3()
}

/// The rule's bending moment of every joint (forest order) from the forest, the wind `w`, the
/// leaves' orientations at the step's start `start` and the pose after it (`base`, `orient`,
/// `leaf_pos`, `leaf_orient` of `after`), leaving out the segments `gone`. Also every load
/// (segments in forest order, then leaves in the forest's order).
fn rule(
    f: &Forest,
    p: &OliapuramParams,
    w: Vec3,
    start: &[Quat],
    after: &sylva_sim::dynamics::Pose,
    gone: &[bool],
) -> (Vec<f64>, Vec<DVec3>, Vec<f64>) {
    let (s, mat) = (&f.seg, &f.material);
    let (n, m) = (f.segment_count(), f.leaf_count());
    let w = w.as_dvec3();
    let g = DVec3::new(0.0, -p.gravity as f64, 0.0);
    let mut loads = vec![DVec3::ZERO; n + m];
    // The size of each load's terms, whatever their directions (what f32 rounds against).
    let mut size = vec![0.0f64; n + m];
    let (mut sf, mut st) = (vec![DVec3::ZERO; n], vec![DVec3::ZERO; n]);
    for i in 0..n {
        if gone[i] {
            continue;
        }
        let (l, r0, r1) = (s.length[i] as f64, s.radius_base[i] as f64, s.radius_tip[i] as f64);
        let aspect = f.trees[f.tree_of(i)].leaf_aspect as f64;
        let leaf_area = |j: usize| std::f64::consts::FRAC_PI_4 * (f.leaf.length_m(j) as f64).powi(2) * aspect;
        // Eq. 14 with S_f = (r0 + r1)·l, and the weight of the wood (the segment's mass less
        // its leaves', which act at their blades) at the frustum's centre of mass.
        let leaves_mass: f64 = f
            .leaves_of(i)
            .map(|j| mat.leaf_mass_per_area as f64 * leaf_area(j))
            .sum();
        let wood = (s.mass[i] as f64 - leaves_mass).max(0.0);
        let f_seg = w * (p.sigma as f64 * (r0 + r1) * l) + g * wood;
        let centroid = l * (r0 * r0 + 2.0 * r0 * r1 + 3.0 * r1 * r1) / (4.0 * (r0 * r0 + r0 * r1 + r1 * r1));
        let c = after.base[i].as_dvec3() + axis(after.orient[i]) * centroid;
        loads[i] = f_seg;
        size[i] = (w * (p.sigma as f64 * (r0 + r1) * l)).length() + (g * wood).length();
        sf[i] += f_seg;
        st[i] += c.cross(f_seg);
        for j in f.leaves_of(i) {
            let length = f.leaf.length_m(j) as f64;
            let area = leaf_area(j);
            let normal = (start[j] * Vec3::Z).as_dvec3();
            let f_leaf =
                normal * (p.leaf_sigma as f64 * area * w.dot(normal)) + g * (mat.leaf_mass_per_area as f64 * area);
            let c = after.leaf_pos[j].as_dvec3() + axis(after.leaf_orient[j]) * (0.5 * length);
            loads[n + j] = f_leaf;
            size[n + j] =
                p.leaf_sigma as f64 * area * w.length() + (g * (mat.leaf_mass_per_area as f64 * area)).length();
            sf[i] += f_leaf;
            st[i] += c.cross(f_leaf);
        }
    }
    // Tips to roots: the forest lists parents before children.
    for i in (0..n).rev() {
        if s.parent[i] != NO_PARENT {
            let q = s.parent[i] as usize;
            let (a, b) = (sf[i], st[i]);
            sf[q] += a;
            st[q] += b;
        }
    }
    let bending = (0..n)
        .map(|i| {
            let m = st[i] - after.base[i].as_dvec3().cross(sf[i]);
            let a = axis(after.orient[i]);
            (m - a * m.dot(a)).length()
        })
        .collect();
    (bending, loads, size)
}

/// Every proper ancestor of segment `i`.
fn ancestors(f: &Forest, mut i: usize) -> impl Iterator<Item = usize> + '_ {
    std::iter::from_fn(move || match f.seg.parent[i] {
        NO_PARENT => None,
        p => {
            i = p as usize;
            Some(i)
        }
    })
}

/// In a storm, weak wood breaks; after every step the device's loads and bending moments
/// equal this file's evaluation of the rule, and the next step breaks off exactly the joints
/// the rule puts over their limits (the outermost of each chain: what lies beyond a broken
/// joint goes with it), nothing else.
#[test]
fn the_device_breaks_the_joints_the_rule_puts_over_their_limits() {
    let gpu = gpu();
    let mut on_gpu = model(&gpu, &weak_wood());
    let f = on_gpu.forest().clone();
    let p = *on_gpu.cpu().params();
    let n = f.segment_count();
    let e = on_gpu.cpu().export();
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(on_gpu.phases());
    let (mut worst, mut worst_load, mut checked) = (0.0f64, 0.0f64, 0usize);
    let (mut predicted, mut ambiguous_total) = (0usize, 0usize);
    let mut expect: Option<(HashSet<usize>, HashSet<usize>)> = None;
    for step in 0..STORM_STEPS {
        let start: Vec<Quat> = on_gpu.pose().leaf_orient.clone();
        let gone: Vec<bool> = (0..n).map(|i| on_gpu.cpu().in_piece(i)).collect();
        let cut_before: Vec<bool> = (0..n).map(|i| !on_gpu.attached(i)).collect();
        on_gpu.step(&jobs, &timings);
        // The wind the step took (moved to the step's start).
        let w = on_gpu.wind().uniform().unwrap();
        assert!(on_gpu.finite(), "{:?}", on_gpu.failure());
        // What this step broke off: the joints the last step's rule put over their limits.
        let newly: HashSet<usize> = (0..n).filter(|&i| !on_gpu.attached(i) && !cut_before[i]).collect();
        if let Some((over, ambiguous)) = expect.take() {
            for &i in &newly {
                assert!(
                    over.contains(&i) || ambiguous.contains(&i),
                    "step {step}: joint {i} broke, under its limit by the rule"
                );
            }
            for &i in &over {
                let beyond = ancestors(&f, i).any(|a| over.contains(&a) || ambiguous.contains(&a) || gone[a]);
                if !beyond {
                    assert!(newly.contains(&i), "step {step}: joint {i} is over its limit and held");
                }
            }
        } else {
            assert!(
                newly.is_empty(),
                "step {step}: {newly:?} broke with nothing over its limit"
            );
        }
        // This step's moments, by the device and by the rule.
        let gone: Vec<bool> = (0..n).map(|i| on_gpu.cpu().in_piece(i)).collect();
        let after = on_gpu.pose().clone();
        let (bending, loads, size) = rule(&f, &p, w, &start, &after, &gone);
        let (gpu_loads, gpu_moments) = on_gpu.breakage_probe().unwrap();
        let limits = on_gpu.cpu().breakage_constants().limit;
        let scale = (0..n)
            .filter(|&i| f.seg.parent[i] == NO_PARENT)
            .map(|i| bending[i])
            .fold(0.0, f64::max);
        let (mut over, mut ambiguous) = (HashSet::new(), HashSet::new());
        for v in 0..n {
            let i = e.order[v] as usize;
            if gone[i] {
                continue;
            }
            let (mine, theirs) = (bending[i], gpu_moments[v] as f64);
            let err = (mine - theirs).abs();
            worst = worst.max(err / (mine + scale * 1e-3));
            assert!(
                err <= MOMENT_TOLERANCE * mine + MOMENT_FLOOR * scale,
                "step {step}, joint {i}: the device's bending moment {theirs} N·m, the rule's {mine} N·m"
            );
            let load = loads[i];
            let load_err = (gpu_loads[v].as_dvec3() - load).length();
            worst_load = worst_load.max(load_err / size[i]);
            assert!(
                load_err <= LOAD_TOLERANCE * size[i],
                "step {step}, segment {i}: the device's load {} N, the rule's {load} N",
                gpu_loads[v]
            );
            let limit = limits[v] as f64;
            if (mine - limit).abs() <= AMBIGUOUS * limit {
                ambiguous.insert(i);
            } else if mine > limit {
                over.insert(i);
            }
            checked += 1;
        }
        for v in 0..n {
            let i = e.order[v] as usize;
            for (k, j) in (e.leaf_start[v]..e.leaf_start[v + 1]).enumerate() {
                let fj = e.forest_leaf[v] as usize + k;
                if gone[i] {
                    continue;
                }
                let load = loads[n + fj];
                let err = (gpu_loads[n + j as usize].as_dvec3() - load).length();
                worst_load = worst_load.max(err / size[n + fj]);
                assert!(
                    err <= LOAD_TOLERANCE * size[n + fj],
                    "step {step}, leaf {fj}: the device's load {}, the rule's {load}",
                    gpu_loads[n + j as usize]
                );
            }
        }
        predicted += over.len();
        ambiguous_total += ambiguous.len();
        expect = Some((over, ambiguous));
    }
    let b = on_gpu.breakage().unwrap();
    eprintln!(
        "{STORM_STEPS} steps at 36 m/s: {} broken, {} uprooted, {} debris; {checked} joint moments checked, \
         largest error {worst:.2e} of the moment; loads within {worst_load:.2e}; {predicted} joints over \
         their limits by the rule, {ambiguous_total} within {AMBIGUOUS} of it",
        b.broken, b.uprooted, b.debris
    );
    assert!(b.broken >= 3, "weak wood in a 36 m/s storm: only {} broken", b.broken);
    assert_no_validation_errors(&gpu);
}

/// The same forest in the same storm on weak wood, stepped by the CPU model and on the device,
/// breaks the same joints: the device finds a step's breaks when the next step starts (it
/// waits for the step anyway) and breaks them off before recording it, where the CPU model
/// breaks them off at the end of the step, so the device's broken joints after step k + 1 are
/// the CPU's after step k. The two models' poses agree to rounding (micrometres,
/// `dynamics_gpu.rs`); a joint whose moment crosses its limit within that rounding could break
/// one step apart on the two, which would show here as a difference (none in this storm).
#[test]
fn the_cpu_model_and_the_device_break_the_same_joints() {
    let gpu = gpu();
    let mut on_gpu = model(&gpu, &weak_wood());
    let f = on_gpu.forest().clone();
    let mut cpu = OliapuramModel::new(f.clone(), OliapuramParams::for_material(&f.material)).unwrap();
    cpu.set_wind(storm());
    let n = f.segment_count();
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(on_gpu.phases());
    let cut = |m: &dyn DynamicsModel| -> Vec<usize> { (0..n).filter(|&i| !m.attached(i)).collect() };
    let mut cpu_before = cut(&cpu);
    let mut first = None;
    for step in 0..STORM_STEPS {
        DynamicsModel::step(&mut cpu, &jobs, &timings);
        on_gpu.step(&jobs, &timings);
        assert_eq!(
            cut(&on_gpu),
            cpu_before,
            "step {step}: the device broke other joints than the CPU model"
        );
        cpu_before = cut(&cpu);
        if first.is_none() && !cpu_before.is_empty() {
            first = Some(step);
        }
    }
    let (a, b) = (DynamicsModel::breakage(&cpu).unwrap(), on_gpu.breakage().unwrap());
    eprintln!(
        "{STORM_STEPS} steps at 36 m/s on 5 MPa wood: CPU {} broken, {} uprooted; device {} broken, {} uprooted \
         (one step behind); first break at step {first:?}",
        a.broken, a.uprooted, b.broken, b.uprooted
    );
    assert!(a.broken >= 3, "the CPU model broke only {}", a.broken);
    assert_no_validation_errors(&gpu);
}

/// A broken piece falls, lands and comes to rest on the ground as debris, and the pose the
/// renderer reads (the device's pose buffer) has its segments and leaves where the debris is.
#[test]
fn a_broken_piece_falls_lands_and_is_drawn_where_it_lies() {
    let gpu = gpu();
    let mut on_gpu = model(&gpu, &weak_wood());
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(on_gpu.phases());
    let mut steps = 0;
    while on_gpu.breakage().unwrap().broken == 0 {
        on_gpu.step(&jobs, &timings);
        steps += 1;
        assert!(steps < 600, "nothing broke in 600 steps of a 36 m/s storm on weak wood");
    }
    // The storm stops: the pieces fall in still air.
    on_gpu.set_wind(Box::new(Calm));
    let debris = on_gpu.cpu().debris();
    let first: Vec<u32> = debris.segments(0).to_vec();
    let spawned = debris.center_of_mass(0);
    let f = on_gpu.forest().clone();
    let rest: Vec<Vec3> = first.iter().map(|&i| on_gpu.pose().base[i as usize]).collect();
    for _ in 0..480 {
        on_gpu.step(&jobs, &timings);
        let d = on_gpu.cpu().debris();
        for k in 0..d.len() {
            let low = d.lowest_point(&f, k);
            assert!(low > -0.02, "a piece lies {low} m below the ground");
        }
    }
    assert!(on_gpu.finite(), "{:?}", on_gpu.failure());
    let d = on_gpu.cpu().debris();
    let piece = (0..d.len())
        .find(|&k| d.segments(k) == first)
        .expect("the first piece is still simulated");
    let now = d.center_of_mass(piece);
    eprintln!(
        "first break after {steps} steps; the piece's centre of mass fell from {:.2} m to {:.2} m in 8 s, \
         lowest point {:.3} m, asleep {}",
        spawned.y,
        now.y,
        d.lowest_point(&f, piece),
        d.asleep(piece)
    );
    assert!(spawned.y - now.y > 0.5, "the piece fell only {} m", spawned.y - now.y);
    assert!(d.lowest_point(&f, piece) < 0.1, "the piece does not lie on the ground");
    assert!(
        d.asleep(piece) || d.velocity(piece).length() < 0.2,
        "the piece still moves at {} m/s",
        d.velocity(piece).length()
    );
    // Drawn where the debris is: the device's pose has the piece's segments and leaves where
    // the debris put them, far from where they hung.
    let drawn = on_gpu.pose().clone();
    let host = on_gpu.cpu().pose();
    let mut moved = 0.0f32;
    for (k, &i) in first.iter().enumerate() {
        let i = i as usize;
        let off = drawn.base[i].distance(host.base[i]);
        assert!(off < 1e-5, "segment {i} drawn {off} m from its debris");
        let turn = (drawn.orient[i].dot(host.orient[i]).abs() - 1.0).abs();
        assert!(turn < 1e-5, "segment {i} drawn turned from its debris");
        moved = moved.max(drawn.base[i].distance(rest[k]));
        for j in f.leaves_of(i) {
            let off = drawn.leaf_pos[j].distance(host.leaf_pos[j]);
            assert!(off < 1e-5, "leaf {j} drawn {off} m from its debris");
        }
    }
    assert!(moved > 0.5, "the piece is drawn within {moved} m of where it hung");
    assert_no_validation_errors(&gpu);
}

/// A weakly anchored tree in a storm is torn from its roots on the device, and falls.
#[test]
fn a_weakly_anchored_tree_uproots_in_a_storm() {
    let material = Material {
        anchorage: 60.0,
        ..Material::default()
    };
    let gpu = gpu();
    let mut on_gpu = model(&gpu, &material);
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(on_gpu.phases());
    let mut steps = 0;
    while on_gpu.breakage().unwrap().uprooted == 0 {
        on_gpu.step(&jobs, &timings);
        steps += 1;
        assert!(
            steps < 600,
            "no tree uprooted in 600 steps of a 36 m/s storm at anchorage 60 N·m/kg"
        );
    }
    let d = on_gpu.cpu().debris();
    let k = (0..d.len()).find(|&k| d.is_uprooted(k)).unwrap();
    let root = d.segments(k)[0] as usize;
    assert_eq!(
        on_gpu.forest().seg.parent[root],
        NO_PARENT,
        "the uprooted piece starts at a root"
    );
    assert!(!on_gpu.attached(root));
    let spawned = d.center_of_mass(k);
    for _ in 0..300 {
        on_gpu.step(&jobs, &timings);
    }
    let d = on_gpu.cpu().debris();
    let k = (0..d.len()).find(|&k| d.is_uprooted(k)).unwrap();
    let now = d.center_of_mass(k);
    eprintln!(
        "uprooted after {steps} steps ({} trees); its centre of mass from {:.2} m to {:.2} m in 5 s",
        on_gpu.breakage().unwrap().uprooted,
        spawned.y,
        now.y
    );
    assert!(
        now.y < 0.7 * spawned.y,
        "the uprooted tree did not fall: {} m → {} m",
        spawned.y,
        now.y
    );
    assert!(on_gpu.finite(), "{:?}", on_gpu.failure());
    assert_no_validation_errors(&gpu);
}

/// In a 5 m/s breeze nothing breaks on the device with the default material.
#[test]
fn a_breeze_breaks_nothing_on_the_device() {
    let gpu = gpu();
    let f = forest(&Material::default());
    let mut parts = ModelParts::new(f.clone());
    parts.wind = Box::new(GustingWind::new(5.0, 0.4, 0.3, 1).unwrap());
    let mut on_gpu = GpuOliapuram::from_parts(&gpu, parts, OliapuramParams::for_material(&f.material)).unwrap();
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(on_gpu.phases());
    for _ in 0..300 {
        on_gpu.step(&jobs, &timings);
    }
    let (_, moments) = on_gpu.breakage_probe().unwrap();
    assert!(moments.iter().any(|&m| m > 0.0), "the device computed no moments");
    let b = on_gpu.breakage().unwrap();
    assert_eq!((b.broken, b.uprooted, b.debris), (0, 0, 0));
    assert_no_validation_errors(&gpu);
}

/// The sums over the subtrees in one dispatch (a workgroup per tree, its levels in turn) and
/// in one dispatch per level do the same arithmetic in the same order: the same moments, bit
/// for bit, and the same joints break.
#[test]
fn a_workgroup_per_tree_and_a_dispatch_per_level_sum_alike() {
    let gpu = gpu();
    let mut per_tree = model(&gpu, &weak_wood());
    let mut per_level = model(&gpu, &weak_wood());
    per_level.set_breakage_per_level(true);
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(per_tree.phases());
    for step in 0..200 {
        per_tree.step(&jobs, &timings);
        per_level.step(&jobs, &timings);
        let (a, b) = (
            per_tree.breakage_probe().unwrap().1,
            per_level.breakage_probe().unwrap().1,
        );
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "step {step}: the moments differ"
        );
        assert_eq!(per_tree.breakage(), per_level.breakage(), "step {step}");
    }
    assert!(per_tree.breakage().unwrap().broken > 0, "nothing broke in 200 steps");
    assert_no_validation_errors(&gpu);
}

/// What the breakage rule costs per step on `bench sim`'s tree (1,597 segments, 3,603 leaves,
/// a 5 m/s gusting wind, nothing breaks): the same model stepped with the rule on and off in
/// alternating blocks of 100 steps, wall time per step and the device time of its dispatches;
/// and with the rule on and the step waited for at once (what reading its result synchronously
/// would cost, instead of at the next step's start). Prints; run with `--ignored`.
#[test]
#[ignore]
fn what_the_breakage_rule_costs_per_step() {
    let gpu = gpu();
    let f = TestForest::new(1, 1597, 3603, 1, &Material::default()).unwrap().forest;
    let mut parts = ModelParts::new(f.clone());
    parts.wind = Box::new(GustingWind::new(5.0, 0.0, 0.5, 1).unwrap());
    let mut m = GpuOliapuram::from_parts(&gpu, parts, OliapuramParams::for_material(&f.material)).unwrap();
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(m.phases());
    let mut wall = [std::time::Duration::ZERO; 3];
    let mut device = std::time::Duration::ZERO;
    let mut timed = 0u32;
    for round in 0..30 {
        let variant = round % 3;
        m.set_breakage_check(variant != 1);
        m.finish().unwrap();
        let t0 = std::time::Instant::now();
        for _ in 0..100 {
            m.step(&jobs, &timings);
            if variant == 2 {
                m.finish().unwrap();
            }
            if variant == 0 {
                if let Some(d) = m.breakage_time() {
                    device += d;
                    timed += 1;
                }
            }
        }
        m.finish().unwrap();
        wall[variant] += t0.elapsed();
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3 / 1000.0;
    eprintln!(
        "ms per step: rule on {:.3}, off {:.3}, on and waited for at once {:.3}; device time of the rule's \
         dispatches {:.3} ms per step ({timed} steps timed)",
        ms(wall[0]),
        ms(wall[1]),
        ms(wall[2]),
        if timed > 0 {
            device.as_secs_f64() * 1e3 / timed as f64
        } else {
            f64::NAN
        }
    );
    assert_eq!(m.breakage().unwrap().broken, 0);
    assert_no_validation_errors(&gpu);
}
