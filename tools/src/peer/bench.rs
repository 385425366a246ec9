//! The comparison itself: builds the test forest once, steps it with each of Sylva's models and
//! with rapier at the same `dt` in the same gusting wind, and reports time, memory and how far
//! each Sylva model's tip trajectories stray from rapier's. All models run in one process, one
//! after the other, so they see the same machine load as nearly as a shared machine allows.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use glam::Vec3;
use serde::Serialize;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::dynamics::weber::{InertiaKind, WeberModel, WeberParams, PHASES};
use sylva_sim::scene::TestForest;
use sylva_sim::{DragLaw, GustingWind, Material};

use super::alloc::live_bytes;
use super::rapier::{tip_segment, RapierTrees};
use super::PeerArgs;
use crate::interrupt;
use crate::progress::Progress;

/// Most memory rapier's model may be estimated to need before the command refuses to build it.
pub const MAX_RAPIER_BYTES: f64 = 8.0 * (1u64 << 30) as f64;

/// Sylva's models, each a name and its parameters at time step `dt`: every entry is stepped,
/// timed and compared with rapier, and the tests check the one named `weber` (the default
/// parameters: the articulated mass matrix). A new solver option becomes a new entry.
pub fn sylva_models(dt: f32) -> Vec<(&'static str, WeberParams)> {
    vec![
        (
            "weber",
            WeberParams {
                dt,
                ..WeberParams::default()
            },
        ),
        (
            "weber-diagonal",
            WeberParams {
                dt,
                inertia: InertiaKind::Diagonal,
                ..WeberParams::default()
            },
        ),
    ]
}

/// Rapier's memory for one tree of `n` segments (3 angular degrees of freedom per segment),
/// from the sizes of what its multibody allocates: a 6 × d Jacobian and two 3 × d Coriolis
/// blocks per link, and four dense d × d matrices (the mass matrix with and without the
/// Coriolis term, and their LU factors), in 4-byte floats.
pub fn rapier_bytes_estimate(n: usize) -> f64 {
    let d = 3.0 * n as f64;
    4.0 * (12.0 * n as f64 * d + 4.0 * d * d)
}

#[derive(Serialize, Default)]
struct Breakdown {
    /// Per segment and step \[ns\], work time summed over threads.
    #[serde(flatten)]
    parts: std::collections::BTreeMap<String, f64>,
}

#[derive(Serialize)]
struct ModelReport {
    name: String,
    ns_per_segment_step: f64,
    bytes_per_segment: f64,
    tip_rms_m: f64,
    tip_max_m: f64,
    /// How the bytes were measured.
    bytes_source: &'static str,
    /// Segments this model stepped (rapier may run a subset of the trees).
    segments: usize,
    /// Steps this model took and was timed over (Sylva's may be more than those compared).
    steps_timed: u64,
    breakdown_ns_per_segment_step: Breakdown,
    setup_ms: f64,
}

#[derive(Serialize)]
struct PeerReport {
    segments: usize,
    leaves: usize,
    trees: u64,
    rapier_trees: usize,
    steps: u64,
    threads: u64,
    dt: f64,
    wind: f64,
    gust: f64,
    seed: u64,
    models: Vec<ModelReport>,
    /// rapier's ns per segment and step over each Sylva model's.
    speedup: std::collections::BTreeMap<String, f64>,
}

/// Tip trajectories: per step, one position per compared tree.
type Trajectory = Vec<Vec<Vec3>>;

fn compare(a: &Trajectory, b: &Trajectory) -> (f64, f64) {
    let (mut sum, mut max, mut count) = (0.0f64, 0.0f64, 0usize);
    for (sa, sb) in a.iter().zip(b) {
        for (pa, pb) in sa.iter().zip(sb) {
            let d = (*pa - *pb).length() as f64;
            sum += d * d;
            max = max.max(d);
            count += 1;
        }
    }
    ((sum / count.max(1) as f64).sqrt(), max)
}

pub fn run(a: &PeerArgs) -> Result<()> {
    let setup = Instant::now();
    let rapier_trees = a.rapier_trees.unwrap_or(a.trees);
    if rapier_trees > a.trees {
        bail!(
            "--rapier-trees {rapier_trees} is more than the forest's {} trees; allowed 1..={}",
            a.trees,
            a.trees
        );
    }
    let rapier_trees = rapier_trees as usize;
    let sylva_steps = a.sylva_steps.unwrap_or(a.steps);
    if sylva_steps < a.steps {
        bail!(
            "--sylva-steps {sylva_steps} is fewer than --steps {}; allowed {}..={}",
            a.steps,
            a.steps,
            super::MAX_STEPS
        );
    }
    let per_tree = rapier_bytes_estimate(a.segments as usize);
    let estimate = per_tree * rapier_trees as f64;
    if estimate > MAX_RAPIER_BYTES {
        let fit = (MAX_RAPIER_BYTES / per_tree).floor() as u64;
        bail!(
            "rapier would need about {:.1} GiB for {rapier_trees} tree(s) of {} segments (a dense \
             mass matrix of 3 degrees of freedom per segment for each tree); at most {:.0} GiB is \
             allowed: pass --rapier-trees N with N at most {fit} (or fewer segments)",
            estimate / (1u64 << 30) as f64,
            a.segments,
            MAX_RAPIER_BYTES / (1u64 << 30) as f64
        );
    }
    // The arguments are checked before the forest is grown.
    // Weber's linear drag, which the rapier peer applies (`peer::rapier`): both sides load the
    // trees alike.
    let material = Material {
        drag_law: DragLaw::Linear,
        ..Material::default()
    };
    let scene = TestForest::new(
        a.seed,
        a.segments as usize,
        a.leaves as usize,
        a.trees as usize,
        &material,
    )
    .context("cannot build the test forest")?;
    let forest_setup_ms = setup.elapsed().as_secs_f64() * 1e3;
    let dt = a.dt as f32;
    let gusts = GustingWind::new(a.wind as f32, 0.0, a.gust as f32, a.seed)?;
    let jobs = JobSystem::new(a.threads as usize)?;
    let tips: Vec<usize> = (0..rapier_trees).map(|t| tip_segment(&scene.forest, t)).collect();
    let stoppable = interrupt::Steps::begin();

    let mut models = Vec::new();
    let mut trajectories = Vec::new();
    for (name, params) in sylva_models(dt) {
        let t0 = Instant::now();
        let mut sim = WeberModel::new(scene.forest.clone(), params)
            .with_context(|| format!("cannot set up Sylva's model `{name}`"))?;
        sim.set_wind(Box::new(gusts.clone()));
        let setup_ms = forest_setup_ms + t0.elapsed().as_secs_f64() * 1e3;
        let mut timings = FrameTimings::new(&PHASES);
        let mut wall = Duration::ZERO;
        let mut traj: Trajectory = Vec::with_capacity(a.steps as usize);
        let mut progress = Progress::new(format!("{name}: steps"));
        for k in 0..sylva_steps {
            interrupt::check()?;
            let t = Instant::now();
            sim.step(&jobs, &timings);
            let d = t.elapsed();
            wall += d;
            timings.end_frame(d);
            if k < a.steps {
                let pose = sim.pose();
                traj.push(tips.iter().map(|&i| pose.tip(i, sim.forest().seg.length[i])).collect());
            }
            progress.update_count(k + 1, sylva_steps);
        }
        progress.finish();
        if !sim.finite() {
            bail!("Sylva's model `{name}` stopped being finite");
        }
        let n = sim.forest().segment_count() as f64;
        let per = |d: Duration| d.as_nanos() as f64 / (n * sylva_steps as f64);
        let mut breakdown = Breakdown::default();
        for phase in PHASES {
            if let Some(id) = timings.phase_id(phase) {
                breakdown.parts.insert(phase.to_string(), per(timings.total(id)));
            }
        }
        models.push(ModelReport {
            name: name.to_string(),
            ns_per_segment_step: per(wall),
            bytes_per_segment: sim.heap_bytes() as f64 / n,
            tip_rms_m: 0.0,
            tip_max_m: 0.0,
            bytes_source: "WeberModel::heap_bytes (capacities of every array it holds)",
            segments: n as usize,
            steps_timed: sylva_steps,
            breakdown_ns_per_segment_step: breakdown,
            setup_ms,
        });
        trajectories.push(traj);
    }

    // Rapier: the compared trees in `threads` worlds, built from the rest pose of a fresh
    // Sylva simulation (the generated shape), each world stepped on its own thread.
    let t0 = Instant::now();
    let rest = WeberModel::new(scene.forest.clone(), sylva_models(dt)[0].1)?;
    let groups = (a.threads as usize).min(rapier_trees);
    let bounds: Vec<std::ops::Range<usize>> = (0..groups)
        .map(|g| g * rapier_trees / groups..(g + 1) * rapier_trees / groups)
        .collect();
    let before = live_bytes();
    let mut worlds = bounds
        .iter()
        .map(|r| RapierTrees::new(&scene.forest, &rest.pose(), r.clone(), dt, params_gravity()))
        .collect::<Result<Vec<_>>>()?;
    drop(rest);
    let setup_ms = forest_setup_ms + t0.elapsed().as_secs_f64() * 1e3;
    let segments: usize = worlds.iter().map(RapierTrees::len).sum();
    let steps = a.steps as usize;
    let mut per_world: Vec<Trajectory> = vec![Vec::with_capacity(steps); groups];
    let mut bytes_after_first = 0usize;
    let wall = Instant::now();
    let mut progress = Progress::new("rapier: steps");
    // The first step allocates rapier's matrices; its memory is measured after it.
    for k in 0..steps {
        interrupt::check()?;
        let wind = gusts.at(k as f64 * a.dt);
        std::thread::scope(|s| {
            for (world, traj) in worlds.iter_mut().zip(per_world.iter_mut()) {
                s.spawn(move || {
                    world.step(wind);
                    let mut tips = Vec::new();
                    world.tips(&mut tips);
                    traj.push(tips);
                });
            }
        });
        if k == 0 {
            bytes_after_first = live_bytes().saturating_sub(before);
        }
        progress.update_count(k as u64 + 1, a.steps);
    }
    progress.finish();
    let rapier_wall = wall.elapsed();
    drop(stoppable);
    let rapier_traj: Trajectory = (0..steps)
        .map(|k| per_world.iter().flat_map(|w| w[k].iter().copied()).collect())
        .collect();
    let n = segments as f64;
    let per = |d: Duration| d.as_nanos() as f64 / (n * a.steps as f64);
    let mut breakdown = Breakdown::default();
    let sum = |f: &dyn Fn(&RapierTrees) -> Duration| worlds.iter().map(f).sum::<Duration>();
    for (name, d) in [
        ("forces", sum(&|w| w.forces_time)),
        ("mass_matrix_lu_accelerations", sum(&|w| w.assembly_time)),
        ("solve_integrate_kinematics", sum(&|w| w.resolution_time)),
        ("collisions_islands_other", sum(&|w| w.other_time)),
        ("rapier_step", sum(&|w| w.step_time)),
    ] {
        breakdown.parts.insert(name.to_string(), per(d));
    }
    models.push(ModelReport {
        name: "rapier".to_string(),
        ns_per_segment_step: per(rapier_wall),
        bytes_per_segment: bytes_after_first as f64 / n,
        tip_rms_m: 0.0,
        tip_max_m: 0.0,
        bytes_source: "live heap bytes (counting global allocator) held by the rapier worlds after their first step, minus those before building them",
        segments,
        steps_timed: a.steps,
        breakdown_ns_per_segment_step: breakdown,
        setup_ms,
    });
    for (m, traj) in models.iter_mut().zip(&trajectories) {
        let (rms, max) = compare(traj, &rapier_traj);
        m.tip_rms_m = rms;
        m.tip_max_m = max;
    }
    let rapier_ns = models.last().map_or(0.0, |m| m.ns_per_segment_step);
    let speedup = models
        .iter()
        .filter(|m| m.name != "rapier")
        .map(|m| (m.name.clone(), rapier_ns / m.ns_per_segment_step))
        .collect();
    let report = PeerReport {
        segments: scene.forest.segment_count(),
        leaves: scene.forest.leaf_count(),
        trees: a.trees,
        rapier_trees,
        steps: a.steps,
        threads: a.threads,
        dt: a.dt,
        wind: a.wind,
        gust: a.gust,
        seed: a.seed,
        models,
        speedup,
    };
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

fn params_gravity() -> f32 {
    WeberParams::default().gravity
}

fn print_table(r: &PeerReport) {
    println!("sylva bench peer: Sylva's models against rapier's multibodies");
    println!(
        "  {} tree(s) ({} in rapier), {} segments, {} leaves, {} steps of {:.4} s, {} thread(s), wind {} m/s ±{:.0} %",
        r.trees,
        r.rapier_trees,
        r.segments,
        r.leaves,
        r.steps,
        r.dt,
        r.threads,
        r.wind,
        r.gust * 100.0
    );
    println!("  (all models run one after the other in this process; timings on a shared machine are noisy)");
    for m in &r.models {
        println!(
            "  {}: {} segments, timed over {} steps",
            m.name, m.segments, m.steps_timed
        );
    }
    println!();
    println!(
        "  {:<16} {:>14} {:>14} {:>12} {:>12}",
        "model", "ns/seg/step", "bytes/seg", "tip rms m", "tip max m"
    );
    for m in &r.models {
        println!(
            "  {:<16} {:>14.1} {:>14.1} {:>12.5} {:>12.5}",
            m.name, m.ns_per_segment_step, m.bytes_per_segment, m.tip_rms_m, m.tip_max_m
        );
    }
    println!();
    for (name, s) in &r.speedup {
        println!("  rapier / {name}: {s:.1}x the time per segment and step");
    }
    println!();
    println!("  where the time goes (ns per segment and step, work time summed over threads):");
    for m in &r.models {
        let parts: Vec<String> = m
            .breakdown_ns_per_segment_step
            .parts
            .iter()
            .map(|(k, v)| format!("{k} {v:.1}"))
            .collect();
        println!("    {:<14} {}", m.name, parts.join(", "));
    }
    println!();
    for m in &r.models {
        println!("  {}: bytes from {}", m.name, m.bytes_source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trajectories_compare_by_distance() {
        let a = vec![vec![Vec3::ZERO, Vec3::X], vec![Vec3::ZERO, Vec3::X]];
        let b = vec![vec![Vec3::new(0.0, 3.0, 4.0), Vec3::X], vec![Vec3::ZERO, Vec3::X]];
        let (rms, max) = compare(&a, &b);
        assert!((max - 5.0).abs() < 1e-9);
        assert!((rms - (25.0f64 / 4.0).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn sylva_models_are_named_and_valid() {
        let models = sylva_models(1.0 / 60.0);
        let names: Vec<&str> = models.iter().map(|m| m.0).collect();
        assert_eq!(names, ["weber", "weber-diagonal"]);
        assert_eq!(models[0].1.inertia, InertiaKind::Articulated);
        for (_, p) in models {
            p.validate().unwrap();
        }
    }
}
