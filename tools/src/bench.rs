//! `sylva bench sim`: Weber's Tables 1 and 2 on this machine, for any dynamics model
//! (`--model`), through the common interface (`DynamicsModel`); Weber's own figures (solver,
//! mass matrix, angles, contact corrections, CG iterations) where the model is Weber's.

use std::time::{Duration, Instant};
use sylva_sim::collision::kdop::DopK;
use sylva_sim::collision::modelling::CollisionFreeOptions;
use sylva_sim::collision::runtime::{SelfCollisionParams, SelfCollisionStats};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::dynamics::weber::{InertiaKind, IntegratorKind, SolverKind, WeberModel};
use sylva_sim::dynamics::{DynamicsModel, ModelKind, VerletModel};
use sylva_sim::scene::{orbit_collider, TestForest, MAX_TEST_FOREST_SEGMENTS};
use sylva_sim::skeleton::MAX_LEAVES_PER_TREE;
use sylva_sim::{GustingWind, Material};

use std::sync::Arc;

use glam::Vec3;
use sylva_render::{Gpu, GpuOliapuram, GpuWind};
use sylva_sim::dynamics::ModelParts;
use sylva_sim::fluid::{FluidGrid, FluidParams, FluidWind};
use sylva_sim::wind::WindField;

use crate::scene::WindModel;

use crate::args::{check_validation, count_in, number_in, seed, IntegratorArg, SolverArg};
use crate::interrupt;
use crate::progress::Progress;
use crate::sway::Sway;

/// Most steps `bench sim` runs (over 4 hours of simulated time at 60 steps per second).
pub const MAX_STEPS: u64 = 1_000_000;

/// The mass matrices `bench sim` runs.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum InertiaChoice {
    /// The articulated tree's exact mass matrix.
    Articulated,
    /// Weber's diagonal mass matrix.
    Diagonal,
    /// Both, on identical forests, stepped in alternating blocks so that they share the
    /// machine's load, reported side by side.
    Both,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum ColliderArg {
    None,
    Orbit,
}

#[derive(Args, Debug)]
pub struct SimArgs {
    /// The dynamics model: `weber` (Weber 2008's separable semi-implicit angular springs),
    /// `oliapuram` (Oliapuram & Kumar 2010's rigid segments, stepped level by level),
    /// `verlet` (Manavi 2007's particles and constraints, whose branches break) or `chen`
    /// (Chen 2011's stems turned root to tips, leaves as venation stems); several,
    /// comma-separated (`weber,oliapuram,verlet,chen`), run side by side on the same forest.
    #[arg(long, default_value = "weber", value_delimiter = ',', value_parser = crate::args::model)]
    model: Vec<ModelKind>,
    /// Segments per tree (Weber's dense tree: 2246; simple: 907; Oliapuram's: 1597).
    #[arg(long, default_value = "2246", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, MAX_TEST_FOREST_SEGMENTS as u64))]
    segments: u64,
    /// Leaves per tree (dense: 6840; simple: 1530; Oliapuram's: 3603).
    #[arg(long, default_value = "6840", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 0, MAX_LEAVES_PER_TREE as u64))]
    leaves: u64,
    /// Trees in the forest.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, 100_000))]
    trees: u64,
    /// Time steps to simulate.
    #[arg(long, default_value = "600", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, MAX_STEPS))]
    steps: u64,
    /// Threads running jobs, the calling thread included.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, sylva_engine::MAX_THREADS as u64))]
    threads: u64,
    /// Linear solver for Weber's Eq. 1 (`--model weber`).
    #[arg(long, value_enum, default_value = "direct")]
    solver: SolverArg,
    /// Mass matrix of Weber's Eq. 1 (`both`: the two side by side in one run; `--model weber`).
    #[arg(long, value_enum, default_value = "articulated")]
    inertia: InertiaChoice,
    /// Time integrator of Weber's Eq. 1 (`--model weber`).
    #[arg(long, value_enum, default_value = "semi-implicit")]
    integrator: IntegratorArg,
    /// `orbit`: a sphere orbiting closely around each trunk (Weber's Table 2).
    #[arg(long, value_enum, default_value = "none")]
    collider: ColliderArg,
    /// Mean wind speed [m/s]: gusting ±50 % (`--wind-model uniform`), or the fluid grid's
    /// border wind (`--wind-model fluid`).
    #[arg(long, default_value = "10", allow_hyphen_values = true, value_parser = |s: &str| number_in(s, 0.0, 200.0))]
    wind: f64,
    /// The wind: `uniform`, gusting and the same everywhere; `fluid`, a stable-fluids grid over
    /// the forest (paper 004 §2) entering at its border, the trunks solid, as in the viewer.
    #[arg(long, value_enum, default_value = "uniform")]
    wind_model: WindModel,
    /// Cells of the fluid wind grid, east × north × up (`--wind-model fluid`).
    #[arg(long, default_value = "96x96x16", allow_hyphen_values = true, value_parser = crate::args::parse_cells)]
    wind_grid: [usize; 3],
    /// Step the fluid wind as Vulkan compute shaders on the device (`--wind-model fluid`).
    /// With `--dynamics-gpu`, the dynamics read it there and nothing is downloaded; a model on
    /// the CPU samples it downloaded after each step.
    #[arg(long)]
    wind_gpu: bool,
    /// Time step (s).
    #[arg(long, default_value = "0.0166666667", allow_hyphen_values = true, value_parser = |s: &str| number_in(s, 1e-6, 1.0))]
    dt: f64,
    /// Seed of the test trees (tree k uses seed + k) and of the gusts.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = seed)]
    seed: u64,
    /// How the wind's drag grows with speed: `quadratic` (on the air's velocity relative to
    /// bark and leaves) or `linear` (Weber's); both, comma-separated (`linear,quadratic`), run
    /// side by side on forests that differ only in it.
    #[arg(long, value_enum, default_value = "quadratic", value_delimiter = ',')]
    drag: Vec<crate::args::DragArg>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Step the model as Vulkan compute shaders on the device (`--model oliapuram` only: the
    /// GPU path exists for Oliapuram & Kumar's model), on its dedicated compute queue when it
    /// has one. A uniform wind is passed to the kernels each step; the fluid wind is read on
    /// the device with `--wind-gpu`, else sampled on the CPU and uploaded (`wind_source`).
    #[arg(long)]
    dynamics_gpu: bool,
    #[command(flatten)]
    gpu: crate::args::GpuArgs,
    /// Self-collision (Chen 2011 §5) with a hierarchy of K-DOPs (6, 14, 18 or 26; 14 when
    /// K is left out): the report adds `collision_ms` (refit, traverse, respond, total per
    /// step, and the exact interpenetration count's time, outside the total) and `close_pairs`
    /// (interpenetrating pairs per step).
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "14",
          value_parser = |s: &str| s.parse::<DopK>().map_err(|e| e.to_string()))]
    self_collision: Option<DopK>,
    /// How much farther than its k-DOP a piece is watched for pairs with `--self-collision`,
    /// in metres, beyond where its last move carries it a few steps on: the pairs within it
    /// are kept from step to step and the hierarchy is queried only for pieces that move out
    /// of it; 0 watches the k-DOPs alone, so a moving tree is traversed whole every step, as
    /// Chen does. The candidate pairs are the same for every margin.
    #[arg(long, value_name = "M", default_value_t = sylva_sim::collision::runtime::DEFAULT_PAIR_MARGIN)]
    pair_margin: f32,
    /// The skin added to every piece's safe distance with `--self-collision`, in metres
    /// (`SelfCollisionParams::extra_safe`): the response springs reach this much beyond the
    /// pieces' radii.
    #[arg(long, value_name = "M", default_value_t = sylva_sim::collision::runtime::DEFAULT_SKIN)]
    collision_skin: f32,
    /// Make each test tree collision-free before it is simulated (Chen 2011 §3.2, as Chen's
    /// trees are): the counts reported are what is left.
    #[arg(long)]
    collision_free: bool,
    /// Drop this many leaves at the start (Chen 2011 Fig. 6.4, `DynamicsModel::drop_leaves`),
    /// to time them falling: the report adds `falling_leaves` (counts at the end, ms per step).
    #[arg(long, value_name = "N", default_value = "0", value_parser = |s: &str| count_in(s, 0, 10_000_000))]
    drop_leaves: u64,
    /// Petiole strength of the leaves per unit leaf area [N/m²] (`Material::petiole_strength`;
    /// `inf`: the wind tears none off).
    #[arg(long, default_value = "90", value_name = "N_PER_M2")]
    petiole_strength: f32,
}

/// The falling leaves at the end of the run and their cost (`--drop-leaves`, or leaves the
/// wind tore off).
#[derive(Serialize)]
struct FallingReport {
    /// Leaves in the air, on the ground, and detached in all, at the end.
    falling: u64,
    landed: u64,
    detached: u64,
    /// Wall time of the falling leaves' part of a step, mean over the steps \[ms\].
    ms_per_step: f64,
}

/// Self-collision's figures summed over a run's steps.
#[derive(Clone, Copy, Debug, Default)]
struct CollisionSums {
    refit: Duration,
    traverse: Duration,
    respond: Duration,
    count: Duration,
    candidates: u64,
    tracked: u64,
    requeried: u64,
    traversed: u64,
    close: u64,
    responding: u64,
    kdop_tests: u64,
    overflow_steps: u64,
    steps: u64,
}

impl CollisionSums {
    fn add(&mut self, s: &SelfCollisionStats) {
        self.refit += s.refit;
        self.traverse += s.traverse;
        self.respond += s.respond;
        self.count += s.count;
        self.candidates += s.candidates as u64;
        self.tracked += s.tracked as u64;
        self.requeried += s.requeried as u64;
        self.traversed += s.traversed as u64;
        self.close += s.close_pairs as u64;
        self.responding += s.responding as u64;
        self.kdop_tests += s.kdop_tests;
        self.overflow_steps += s.overflow as u64;
        self.steps += 1;
    }
}

/// Self-collision per step (`--self-collision`).
#[derive(Serialize)]
struct CollisionMs {
    refit: f64,
    traverse: f64,
    respond: f64,
    /// refit + traverse + respond: the method's cost (Chen's Table 6.3).
    total: f64,
    /// The exact interpenetration count behind `close_pairs`, a measurement outside `total`.
    count: f64,
}

#[derive(Serialize)]
struct SimReport {
    /// The dynamics model (`--model`).
    model: &'static str,
    /// The drag law of the trees' material (`--drag`).
    drag: &'static str,
    segments: u64,
    leaves: u64,
    trees: u64,
    steps: u64,
    threads: u64,
    /// Weber's solver, mass matrix and integrator (absent for other models).
    #[serde(skip_serializing_if = "Option::is_none")]
    solver: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inertia: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    integrator: Option<&'static str>,
    collider: &'static str,
    wind: f64,
    dt: f64,
    seed: u64,
    /// `uniform` or `fluid` (`--wind-model`).
    wind_model: &'static str,
    /// How the wind reached the model's last step, in words.
    wind_source: String,
    /// Read-backs of the GPU model's pose and state during the steps (0 on the CPU).
    pose_downloads: u64,
    /// Downloads of the GPU wind's grid during the steps (0 without `--wind-gpu`).
    wind_grid_downloads: u64,
    /// Work time per phase of the model (summed over threads; Weber's: populate, solve, and
    /// kinematics including the contact response; with `--dynamics-gpu`, the device's time of
    /// each phase from its timestamps) and wall time per step (`total`), per segment \[ns\].
    ns_per_segment_step: serde_json::Map<String, serde_json::Value>,
    wall_ms_per_step: f64,
    /// Wall time per step over segments and leaves together (Oliapuram's "components") \[ns\].
    ns_per_component_step: f64,
    bytes_per_segment: f64,
    state_hash: String,
    /// Weber's largest |angle| and joint deflection \[rad\] (absent for other models).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_abs_angle: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_deflection: Option<f32>,
    finite: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    corrections_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cg_iterations_per_solve: Option<f64>,
    setup_ms: f64,
    /// Self-collision's wall time per step by part \[ms\] (`--self-collision`).
    #[serde(skip_serializing_if = "Option::is_none")]
    collision_ms: Option<CollisionMs>,
    /// Interpenetrating unconnected pairs per step, pairs whose k-DOPs overlap per step, and
    /// pairs given a response per step (`--self-collision`).
    #[serde(skip_serializing_if = "Option::is_none")]
    close_pairs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    candidate_pairs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    responding_pairs: Option<f64>,
    /// Pairs kept from step to step per step (within the pair margin), pieces whose pairs were
    /// looked for anew per step, and steps that traversed a whole tree (`--self-collision`).
    #[serde(skip_serializing_if = "Option::is_none")]
    tracked_pairs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    requeried_pieces: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    full_traversals: Option<u64>,
    /// k-DOP pairs compared per step, by the traversals and among the kept pairs
    /// (`--self-collision`).
    #[serde(skip_serializing_if = "Option::is_none")]
    kdop_tests: Option<f64>,
    /// Steps whose candidate pairs passed the pair limit and were not answered
    /// (`SelfCollisionStats::overflow`; `--self-collision`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pair_overflow_steps: Option<u64>,
    /// Manavi's particles, constraints (branch and plane, then root) and the most relaxation
    /// passes a constraint gets per step, substeps included (absent for other models).
    #[serde(skip_serializing_if = "Option::is_none")]
    particles: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    constraints: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    root_constraints: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations: Option<u64>,
    /// Branches broken off, trees uprooted and broken pieces still simulated. Every CPU model's
    /// trees break; null for Oliapuram's model on the device (`--dynamics-gpu`), whose trees do
    /// not.
    broken: Option<u64>,
    uprooted: Option<u64>,
    debris: Option<u64>,
    /// The device the model steps on (`--dynamics-gpu`; absent on the CPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<String>,
    /// The falling leaves, when any came off.
    #[serde(skip_serializing_if = "Option::is_none")]
    falling_leaves: Option<FallingReport>,
    /// Branch tips' distance from where they grew \[m\]: the mean over tips and the samples
    /// (every 10 steps), and the largest (`sway`; null on the GPU, whose pose is not read back
    /// during the run).
    tip_deflection_mean: Option<f64>,
    tip_deflection_peak: Option<f64>,
    /// The trees' base bending moment \[N·m\] from the root joint's turn (`sway`): mean, peak
    /// (null on the GPU).
    base_moment_mean: Option<f64>,
    base_moment_peak: Option<f64>,
}

impl SimReport {
    /// ns per segment and step of phase `name` (or `total`), 0 when the model has no such phase.
    fn ns(&self, name: &str) -> f64 {
        self.ns_per_segment_step
            .get(name)
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0)
    }
}

/// One simulation being timed.
struct Run {
    sim: Box<dyn DynamicsModel>,
    timings: FrameTimings,
    wall: Duration,
    /// Self-collision's figures summed over the steps.
    collision: CollisionSums,
    /// The falling leaves' step time summed over the steps \[ms\].
    falling_ms: f64,
    /// Tip deflections and base moments, sampled between blocks (CPU models: reading a GPU
    /// model's pose would download it).
    sway: Option<Sway>,
    /// Read-backs of the GPU model's pose and of the GPU wind's grid before the steps (the
    /// setup's).
    pose_downloads_before: (u64, u64),
}

/// Steps every run `steps` times, in alternating blocks of steps so that runs share the
/// machine's load alike.
fn step_runs(runs: &mut [Run], steps: u64, jobs: &JobSystem) -> Result<()> {
    const BLOCK: u64 = 10;
    let stoppable = interrupt::Steps::begin();
    let mut progress = Progress::new("steps");
    let mut done = 0;
    while done < steps {
        let block = BLOCK.min(steps - done);
        for r in runs.iter_mut() {
            for _ in 0..block {
                interrupt::check()?;
                let t0 = Instant::now();
                r.sim.step(jobs, &r.timings);
                let dt = t0.elapsed();
                r.wall += dt;
                r.timings.end_frame(dt);
                if let Some(s) = r.sim.self_collision() {
                    r.collision.add(&s);
                }
                if let Some(f) = r.sim.falling_leaves() {
                    r.falling_ms += f.step_ms;
                }
            }
        }
        for r in runs.iter_mut() {
            if let Some(s) = &mut r.sway {
                s.sample(&*r.sim);
            }
        }
        done += block;
        progress.update_count(done, steps);
    }
    // A model on a device works on after its last step returns: its time counts.
    for r in runs.iter_mut() {
        if let Some(g) = r.sim.as_any().downcast_ref::<GpuOliapuram>() {
            let t0 = Instant::now();
            g.finish().map_err(anyhow::Error::msg)?;
            r.wall += t0.elapsed();
        }
    }
    progress.finish();
    drop(stoppable);
    Ok(())
}

pub fn run_sim(a: &SimArgs) -> Result<()> {
    let setup = Instant::now();
    if let Some(d) = a
        .drag
        .iter()
        .enumerate()
        .find_map(|(k, d)| a.drag[..k].contains(d).then_some(d))
    {
        anyhow::bail!("--drag names {d:?} twice (allowed: linear, quadratic, each at most once)");
    }
    if !a.model.contains(&ModelKind::Weber) && a.inertia == InertiaChoice::Both {
        anyhow::bail!(
            "--inertia both compares Weber's mass matrices and needs weber among --model (got {}; allowed with other models alone: --inertia articulated or diagonal, which only Weber reads)",
            a.model.iter().map(|m| m.name()).collect::<Vec<_>>().join(",")
        );
    }
    if let Some(m) = a
        .model
        .iter()
        .enumerate()
        .find_map(|(k, m)| a.model[..k].contains(m).then_some(m))
    {
        anyhow::bail!(
            "--model names {m} twice (allowed: each of {} at most once)",
            ModelKind::names()
        );
    }
    if a.dynamics_gpu {
        if let Some(&m) = a.model.iter().find(|&&m| m != ModelKind::Oliapuram) {
            return Err(crate::scene::dynamics_gpu_model_error(m));
        }
    } else if !a.wind_gpu && (a.gpu.validation || a.gpu.device.is_some()) {
        anyhow::bail!(
            "--validation and --device choose the device of --dynamics-gpu or --wind-gpu, neither of which is given"
        );
    }
    if a.wind_gpu && a.wind_model != WindModel::Fluid {
        anyhow::bail!("only the fluid wind runs on the GPU (--wind-gpu needs --wind-model fluid)");
    }
    let device = if a.dynamics_gpu || a.wind_gpu {
        let flag = if a.dynamics_gpu { "--dynamics-gpu" } else { "--wind-gpu" };
        Some(Arc::new(
            Gpu::new(&a.gpu.options(), None).with_context(|| format!("cannot open a Vulkan device for {flag}"))?,
        ))
    } else {
        None
    };
    let gpu = device.as_ref().filter(|_| a.dynamics_gpu);
    // One forest per drag law: the same trees, of materials that differ only in it.
    let mut scenes = Vec::new();
    for &drag in &a.drag {
        let material = Material {
            drag_law: drag.into(),
            petiole_strength: a.petiole_strength,
            ..Material::default()
        };
        let collision_free = CollisionFreeOptions::default();
        let scene = TestForest::new_with(
            a.seed,
            a.segments as usize,
            a.leaves as usize,
            a.trees as usize,
            &material,
            a.collision_free.then_some(&collision_free),
        )
        .context("cannot build the test forest")?;
        scenes.push(scene);
    }
    let solver: SolverKind = a.solver.into();
    let integrator: IntegratorKind = a.integrator.into();
    let inertias: &[InertiaKind] = match a.inertia {
        InertiaChoice::Articulated => &[InertiaKind::Articulated],
        InertiaChoice::Diagonal => &[InertiaKind::Diagonal],
        InertiaChoice::Both => &[InertiaKind::Articulated, InertiaKind::Diagonal],
    };
    // Weber once per mass matrix asked for; every other model once.
    let models = a.model.iter().flat_map(|&m| {
        let n = if m == ModelKind::Weber { inertias.len() } else { 1 };
        inertias[..n].iter().map(move |&inertia| (m, inertia))
    });
    let mut runs = Vec::new();
    for (scene, (model, inertia)) in models.flat_map(|m| scenes.iter().map(move |s| (s, m))) {
        let mut sim = match gpu {
            Some(gpu) => {
                // Δt is set below, as for every model.
                let parts = ModelParts::new(scene.forest.clone());
                let m = GpuOliapuram::with_default_params(gpu, parts)
                    .map_err(|r| r.error)
                    .with_context(|| format!("cannot set up the {model} model on {}", gpu.name()))?;
                Box::new(m) as Box<dyn DynamicsModel>
            }
            None => model
                .build(scene.forest.clone())
                .with_context(|| format!("cannot set up the {model} model"))?,
        };
        sim.set_time_step(a.dt as f32).context("--dt")?;
        if let Some(w) = sim.as_any_mut().downcast_mut::<WeberModel>() {
            w.set_solver(solver);
            w.set_inertia(inertia);
            w.set_integrator(integrator);
        }
        let wind: Box<dyn WindField> = match (a.wind_model, &device) {
            (WindModel::Uniform, _) => Box::new(GustingWind::new(a.wind as f32, 0.0, 0.5, a.seed)?),
            (WindModel::Fluid, Some(d)) if a.wind_gpu => {
                Box::new(GpuWind::new(d, fluid_grid(a, &*sim)?).context("cannot set up the wind grid on the GPU")?)
            }
            (WindModel::Fluid, _) => Box::new(FluidWind::new(fluid_grid(a, &*sim)?)),
        };
        sim.set_wind(wind);
        if a.collider == ColliderArg::Orbit {
            for (skel, pos) in scene.skeletons.iter().zip(&scene.positions) {
                sim.add_collider(orbit_collider(skel, *pos)?);
            }
        }
        let before = (
            sim.as_any()
                .downcast_ref::<GpuOliapuram>()
                .map_or(0, |g| g.downloads().count),
            sim.wind()
                .as_any()
                .and_then(|w| w.downcast_ref::<GpuWind>())
                .map_or(0, |w| w.downloads().count),
        );
        if let Some(k) = a.self_collision {
            let params = SelfCollisionParams {
                k,
                pair_margin: a.pair_margin,
                extra_safe: a.collision_skin,
                count_interpenetrating: true,
                ..SelfCollisionParams::default()
            };
            sim.set_self_collision(Some(params)).context("--self-collision")?;
        }
        if a.drop_leaves > 0 {
            sim.drop_leaves(a.drop_leaves as usize).context("--drop-leaves")?;
        }
        runs.push(Run {
            falling_ms: 0.0,
            collision: CollisionSums::default(),
            timings: FrameTimings::new(sim.phases()),
            sway: (!a.dynamics_gpu).then(|| Sway::new(&*sim)),
            sim,
            wall: Duration::ZERO,
            pose_downloads_before: before,
        });
    }
    drop(scenes);
    let jobs = JobSystem::new(a.threads as usize)?;
    let setup_ms = setup.elapsed().as_secs_f64() * 1e3 / runs.len() as f64;
    step_runs(&mut runs, a.steps, &jobs)?;
    let reports: Vec<SimReport> = runs.iter().map(|r| report(a, r, setup_ms)).collect();

    if a.json {
        if let [one] = &reports[..] {
            println!("{}", serde_json::to_string(one)?);
        } else {
            println!("{}", serde_json::json!({ "models": reports }));
        }
    } else if let ([one], [run]) = (&reports[..], &runs[..]) {
        print_table(one, run.sim.phases(), &run.timings);
    } else {
        // Every phase of every model, in the order the models name them.
        let mut phases: Vec<&str> = Vec::new();
        for r in &runs {
            for &p in r.sim.phases() {
                if !phases.contains(&p) {
                    phases.push(p);
                }
            }
        }
        print_side_by_side(&reports, &phases);
    }
    if let Some(device) = &device {
        drop(runs);
        check_validation(device)?;
    }
    Ok(())
}

/// The fluid wind of `--wind-model fluid` over `sim`'s forest, as the viewer makes it: a grid
/// 1.3 reaches plus 4 m around the trees and 1.6 times their height, filled with the border
/// wind (`--wind` along +x, the gusting wind's heading), the trunks and branches at rest solid.
fn fluid_grid(a: &SimArgs, sim: &dyn DynamicsModel) -> Result<FluidGrid> {
    let forest = sim.forest();
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for t in &forest.trees {
        lo = lo.min(t.root - Vec3::new(1.3 * t.reach + 4.0, 0.0, 1.3 * t.reach + 4.0));
        hi = hi.max(t.root + Vec3::new(1.3 * t.reach + 4.0, 1.6 * 1.5 * t.reach, 1.3 * t.reach + 4.0));
    }
    let mut p = FluidParams::over(Vec3::new(lo.x, 0.0, lo.z), Vec3::new(hi.x, hi.y.max(8.0), hi.z));
    p.cells = a.wind_grid;
    p.border = Vec3::new(a.wind as f32, 0.0, 0.0);
    p.seed = a.seed;
    let mut grid = FluidGrid::new(p).context("--wind-grid")?;
    for k in 0..3 {
        let w = grid.params().border[k];
        grid.velocity_mut(k).iter_mut().for_each(|v| *v = w);
    }
    // The rest pose (a model on the GPU reads it back once, before the steps are counted).
    let pose = sim.pose();
    let seg = &forest.seg;
    grid.voxelize_segments(
        (0..seg.parent.len()).map(|i| (pose.base[i], pose.tip(i, seg.length[i]), seg.radius_base[i])),
    );
    Ok(grid)
}

/// How the wind reaches `sim`'s steps, in words (the report's `wind_source`).
fn wind_source(sim: &dyn DynamicsModel) -> String {
    if let Some(g) = sim.as_any().downcast_ref::<GpuOliapuram>() {
        let source = g.wind_source().unwrap_or_else(|| g.next_wind_source());
        return source.describe().to_string();
    }
    let wind = sim.wind();
    if wind.uniform().is_some() {
        "uniform wind on the CPU".to_string()
    } else if wind.as_any().is_some_and(|w| w.is::<GpuWind>()) {
        "fluid grid on the GPU, downloaded for the CPU".to_string()
    } else if wind.fluid().is_some() {
        "fluid grid on the CPU".to_string()
    } else {
        "wind field on the CPU".to_string()
    }
}

fn report(a: &SimArgs, run: &Run, setup_ms: f64) -> SimReport {
    let sim = &run.sim;
    let timings = &run.timings;
    let segments = sim.forest().segment_count() as f64;
    let per = |d: Duration| d.as_nanos() as f64 / (segments * a.steps as f64);
    let components = segments + sim.forest().leaf_count() as f64;
    let mut ns_per_segment_step = serde_json::Map::new();
    for &name in sim.phases() {
        let ns = timings.phase_id(name).map_or(0.0, |id| per(timings.total(id)));
        ns_per_segment_step.insert(name.to_string(), ns.into());
    }
    ns_per_segment_step.insert("total".to_string(), per(run.wall).into());
    let weber = sim.as_any().downcast_ref::<WeberModel>();
    let (stats, params) = (weber.map(|w| w.stats()), weber.map(|w| *w.params()));
    // Counted before the state hash below reads the GPU model's state back.
    let downloads = run.pose_downloads_before;
    let pose_downloads = sim
        .as_any()
        .downcast_ref::<GpuOliapuram>()
        .map_or(0, |g| g.downloads().count - downloads.0);
    let wind_grid_downloads = sim
        .wind()
        .as_any()
        .and_then(|w| w.downcast_ref::<GpuWind>())
        .map_or(0, |w| w.downloads().count - downloads.1);
    let verlet = sim.as_any().downcast_ref::<VerletModel>();
    let counts = verlet.map(|v| v.counts());
    let breakage = sim.breakage();
    let sway = run.sway.as_ref().map(|s| s.report());
    // Self-collision's sums as means per step (`--self-collision`).
    let collided = run.collision.steps > 0;
    let per_step = |sum: u64| collided.then(|| sum as f64 / run.collision.steps as f64);
    SimReport {
        model: sim.name(),
        drag: sim.forest().material.drag_law.name(),
        segments: sim.forest().segment_count() as u64,
        leaves: sim.forest().leaf_count() as u64,
        trees: a.trees,
        steps: a.steps,
        threads: a.threads,
        solver: params.map(|p| p.solver.name()),
        inertia: params.map(|p| p.inertia.name()),
        integrator: params.map(|p| p.integrator.name()),
        collider: if a.collider == ColliderArg::Orbit {
            "orbit"
        } else {
            "none"
        },
        wind: a.wind,
        dt: a.dt,
        seed: a.seed,
        wind_model: match a.wind_model {
            WindModel::Uniform => "uniform",
            WindModel::Fluid => "fluid",
        },
        wind_source: wind_source(&**sim),
        pose_downloads,
        wind_grid_downloads,
        ns_per_segment_step,
        wall_ms_per_step: run.wall.as_secs_f64() * 1e3 / a.steps as f64,
        ns_per_component_step: run.wall.as_nanos() as f64 / (components * a.steps as f64),
        bytes_per_segment: sim.heap_bytes() as f64 / segments,
        state_hash: format!("{:016x}", sim.state_hash()),
        max_abs_angle: weber.map(|w| w.max_abs_angle()),
        max_deflection: weber.map(|w| w.max_deflection()),
        finite: sim.finite(),
        corrections_per_step: stats.map(|s| s.corrections as f64 / a.steps as f64),
        cg_iterations_per_solve: stats.map(|s| {
            if s.cg_solves > 0 {
                s.cg_iterations as f64 / s.cg_solves as f64
            } else {
                0.0
            }
        }),
        setup_ms,
        collision_ms: collided.then(|| {
            let per = |d: Duration| d.as_secs_f64() * 1e3 / run.collision.steps as f64;
            let c = &run.collision;
            CollisionMs {
                refit: per(c.refit),
                traverse: per(c.traverse),
                respond: per(c.respond),
                total: per(c.refit + c.traverse + c.respond),
                count: per(c.count),
            }
        }),
        close_pairs: per_step(run.collision.close),
        candidate_pairs: per_step(run.collision.candidates),
        responding_pairs: per_step(run.collision.responding),
        pair_overflow_steps: collided.then_some(run.collision.overflow_steps),
        tracked_pairs: per_step(run.collision.tracked),
        requeried_pieces: per_step(run.collision.requeried),
        full_traversals: collided.then_some(run.collision.traversed),
        kdop_tests: per_step(run.collision.kdop_tests),
        particles: counts.map(|c| c.0 as u64),
        constraints: counts.map(|c| c.1 as u64),
        root_constraints: counts.map(|c| c.2 as u64),
        iterations: verlet.map(|v| (v.most_passes() * v.params().substeps as usize) as u64),
        broken: breakage.map(|b| b.broken as u64),
        uprooted: breakage.map(|b| b.uprooted as u64),
        debris: breakage.map(|b| b.debris as u64),
        device: sim.as_any().downcast_ref::<GpuOliapuram>().map(|g| g.gpu().name()),
        falling_leaves: sim.falling_leaves().filter(|f| f.detached > 0).map(|f| FallingReport {
            falling: f.falling as u64,
            landed: f.landed as u64,
            detached: f.detached as u64,
            ms_per_step: run.falling_ms / a.steps as f64,
        }),
        tip_deflection_mean: sway.map(|s| s.tip_mean),
        tip_deflection_peak: sway.map(|s| s.tip_peak),
        base_moment_mean: sway.map(|s| s.moment_mean),
        base_moment_peak: sway.map(|s| s.moment_peak),
    }
}

/// A row of the side-by-side table: its label and how to read it from a report.
type Row<T> = (&'static str, fn(&SimReport) -> T);

/// Weber's settings in a report, or `-` for another model.
fn or_dash(v: Option<&'static str>) -> &'static str {
    v.unwrap_or("-")
}

/// A Weber-only figure in a report, or `-` for another model.
fn fmt_opt<T: std::fmt::Display>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

/// The reports of several runs (models, Weber's mass matrices) in columns; `-` where a model
/// has no such phase or figure.
fn print_side_by_side(reports: &[SimReport], phases: &[&str]) {
    let r = &reports[0];
    let names: Vec<&str> = reports.iter().map(|r| r.model).collect();
    // Weber's solver and integrator, wherever Weber's run is.
    let w = reports.iter().find(|r| r.solver.is_some()).unwrap_or(r);
    println!("sylva bench sim: models side by side ({})", names.join(", "));
    println!(
        "  {} tree(s), {} segments, {} leaves, {} steps of {:.4} s, {} thread(s), solver {}, integrator {}, collider {}, wind {} m/s",
        r.trees,
        r.segments,
        r.leaves,
        r.steps,
        r.dt,
        r.threads,
        or_dash(w.solver),
        or_dash(w.integrator),
        r.collider,
        r.wind
    );
    println!("  (the runs alternate in blocks of 10 steps, so they share the machine's load alike)");
    println!();
    print!("  {:<22}", "ns/segment/step");
    let drags = reports.iter().any(|x| x.drag != r.drag);
    for r in reports {
        let mut column = match r.inertia {
            Some(inertia) => format!("{} {inertia}", r.model),
            None => r.model.to_string(),
        };
        if drags {
            column = format!("{column} {}", r.drag);
        }
        print!(" {column:>20}");
    }
    println!();
    for &name in phases.iter().chain(&["total"]) {
        let label = if name == "total" { "total (wall)" } else { name };
        print!("  {label:<22}");
        for r in reports {
            match r.ns_per_segment_step.get(name).and_then(|v| v.as_f64()) {
                Some(v) => print!(" {v:>20.2}"),
                None => print!(" {:>20}", "-"),
            }
        }
        println!();
    }
    println!();
    let rows: [Row<String>; 11] = [
        ("ms/step (wall)", |r| format!("{:.4}", r.wall_ms_per_step)),
        ("ns/component/step", |r| format!("{:.2}", r.ns_per_component_step)),
        ("bytes per segment", |r| format!("{:.1}", r.bytes_per_segment)),
        ("max |angle| [rad]", |r| fmt_opt(r.max_abs_angle, |v| format!("{v:.4}"))),
        ("max deflection [rad]", |r| {
            fmt_opt(r.max_deflection, |v| format!("{v:.4}"))
        }),
        ("tip deflection [m]", |r| {
            fmt_opt(r.tip_deflection_mean, |v| format!("{v:.4}"))
        }),
        ("peak tip defl. [m]", |r| {
            fmt_opt(r.tip_deflection_peak, |v| format!("{v:.4}"))
        }),
        ("base moment [N·m]", |r| {
            fmt_opt(r.base_moment_mean, |v| format!("{v:.1}"))
        }),
        ("peak base mom. [N·m]", |r| {
            fmt_opt(r.base_moment_peak, |v| format!("{v:.1}"))
        }),
        ("broken", |r| fmt_opt(r.broken, |v| v.to_string())),
        ("finite", |r| r.finite.to_string()),
    ];
    for (name, f) in rows {
        print!("  {name:<22}");
        for r in reports {
            print!(" {:>20}", f(r));
        }
        println!();
    }
}

fn print_table(r: &SimReport, phases: &[&str], timings: &FrameTimings) {
    println!("sylva bench sim: model {}", r.model);
    println!(
        "  {} tree(s), {} segments, {} leaves, {} steps of {:.4} s, {} thread(s), solver {}, inertia {}, integrator {}, collider {}, wind {} m/s",
        r.trees,
        r.segments,
        r.leaves,
        r.steps,
        r.dt,
        r.threads,
        or_dash(r.solver),
        or_dash(r.inertia),
        or_dash(r.integrator),
        r.collider,
        r.wind
    );
    println!();
    println!("  {:<12} {:>14} {:>14}", "phase", "ns/seg/step", "ms/step");
    let ms = |ns: f64| ns * r.segments as f64 / 1e6;
    for &name in phases {
        let v = r.ns(name);
        println!("  {:<12} {:>14.2} {:>14.4}", name, v, ms(v));
    }
    let note = match &r.device {
        Some(d) => format!("wall clock; phases are the device's time on {d}, from its timestamps"),
        None => "wall clock; phases are work time summed over threads".to_string(),
    };
    println!(
        "  {:<12} {:>14.2} {:>14.4}   ({note})",
        "total",
        r.ns("total"),
        r.wall_ms_per_step
    );
    println!();
    println!("  bytes per segment      {:.1}", r.bytes_per_segment);
    println!("  state hash             {}", r.state_hash);
    if let Some(c) = &r.collision_ms {
        println!(
            "  self-collision         {:.3} ms per step (refit {:.3}, traverse {:.3}, respond {:.3}; the exact interpenetration count {:.3} besides)",
            c.total, c.refit, c.traverse, c.respond, c.count
        );
        println!(
            "  pairs per step         {:.1} overlapping, {:.1} responding, {:.1} interpenetrating",
            r.candidate_pairs.unwrap_or(0.0),
            r.responding_pairs.unwrap_or(0.0),
            r.close_pairs.unwrap_or(0.0)
        );
        println!(
            "  pairs kept             {:.1} per step within the pair margin; {:.1} pieces requeried per step, {} whole traversals",
            r.tracked_pairs.unwrap_or(0.0),
            r.requeried_pieces.unwrap_or(0.0),
            r.full_traversals.unwrap_or(0)
        );
        println!("  k-DOP tests            {:.1} per step", r.kdop_tests.unwrap_or(0.0));
        if let Some(n) = r.pair_overflow_steps.filter(|&n| n > 0) {
            println!("  over the pair limit    {n} steps (no pair answered in them)");
        }
    }
    if let Some(v) = r.max_abs_angle {
        println!("  max |angle|            {v:.4} rad");
    }
    if let Some(v) = r.max_deflection {
        println!("  max joint deflection   {v:.4} rad");
    }
    if let (Some(m), Some(p)) = (r.tip_deflection_mean, r.tip_deflection_peak) {
        println!("  tip deflection         {m:.4} m mean, {p:.4} m peak");
    }
    if let (Some(m), Some(p)) = (r.base_moment_mean, r.base_moment_peak) {
        println!("  base moment            {m:.1} N·m mean, {p:.1} N·m peak");
    }
    if let Some(f) = &r.falling_leaves {
        println!(
            "  falling leaves         {:.3} ms per step; at the end {} falling, {} on the ground, {} detached",
            f.ms_per_step, f.falling, f.landed, f.detached
        );
    }
    println!("  drag                   {}", r.drag);
    println!("  finite                 {}", r.finite);
    if let (true, Some(v)) = (r.collider != "none", r.corrections_per_step) {
        println!("  corrections per step   {v:.1}");
    }
    if let (Some("cg"), Some(v)) = (r.solver, r.cg_iterations_per_solve) {
        println!("  CG iterations / solve  {v:.1}");
    }
    println!("  setup                  {:.1} ms", r.setup_ms);
    println!();
    println!("frame timings (per step):");
    for line in timings.to_string().lines() {
        println!("  {line}");
    }
}

#[derive(Args, Debug)]
pub struct GenArgs {
    /// A spec file (any supported format).
    file: std::path::PathBuf,
    #[arg(long)]
    species: Option<String>,
    /// Seed of the tree's random streams.
    #[arg(long, default_value = "13", allow_hyphen_values = true, value_parser = seed)]
    seed: u64,
    /// Generations to time; the report gives the fastest and the mean.
    #[arg(long, default_value = "10", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, 1000))]
    repeat: u64,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    grow: crate::trees::GrowArgs,
}

#[derive(Serialize)]
struct GenReport {
    species: String,
    stems: u64,
    leaves: u64,
    segments: u64,
    repeat: u64,
    ms_min: f64,
    ms_mean: f64,
}

/// `sylva bench gen`: time to grow a spec on one thread.
pub fn run_gen(a: &GenArgs) -> Result<()> {
    let mut spec = crate::trees::load_spec(&a.file, a.species.as_deref())?;
    a.grow.apply(&mut spec);
    let opts = sylva_sim::weberpenn::GenOptions {
        seed: a.seed,
        ..Default::default()
    };
    let mut times = Vec::with_capacity(a.repeat as usize);
    let mut stats = None;
    let stoppable = interrupt::Steps::begin();
    let mut progress = Progress::new(format!("growing {}", spec.species));
    for k in 0..a.repeat {
        interrupt::check()?;
        let t0 = Instant::now();
        let grown = sylva_sim::weberpenn::generate(&spec, &opts, &mut |_| {})?;
        times.push(t0.elapsed().as_secs_f64() * 1e3);
        stats = Some(grown.stats);
        progress.update_count(k + 1, a.repeat);
    }
    progress.finish();
    drop(stoppable);
    let stats = stats.expect("at least one run");
    let report = GenReport {
        species: spec.species.clone(),
        stems: stats.stems_per_level.iter().chain(&stats.clones_per_level).sum(),
        leaves: stats.leaves,
        segments: stats.segments,
        repeat: a.repeat,
        ms_min: times.iter().copied().fold(f64::MAX, f64::min),
        ms_mean: times.iter().sum::<f64>() / times.len() as f64,
    };
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "sylva bench gen: {} ({} stems, {} leaves, {} segments): fastest {:.1} ms, mean {:.1} ms over {} runs",
            report.species, report.stems, report.leaves, report.segments, report.ms_min, report.ms_mean, report.repeat
        );
    }
    Ok(())
}
