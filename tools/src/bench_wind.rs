//! `sylva bench wind`: the stable-fluids wind grid (paper 004, §2; its Table 1) on this machine.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use glam::Vec3;
use serde::Serialize;
use sylva_engine::JobSystem;
use sylva_sim::fluid::{FluidGrid, FluidParams, Pressure, WindBall};

use crate::args::{count_in, parse_cells};
use crate::interrupt;
use crate::progress::Progress;

/// Most steps `bench wind` times.
pub const MAX_STEPS: u64 = 100_000;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum PressureArg {
    /// The paper's 4 Jacobi iterations.
    Jacobi4,
    /// Multigrid-preconditioned conjugate gradients to a relative residual of 1e-5.
    Converged,
}

#[derive(Args, Debug)]
pub struct WindBenchArgs {
    /// Cells east × north × up, e.g. 256x256x16 (the paper's grid).
    #[arg(long, default_value = "256x256x16", allow_hyphen_values = true, value_parser = parse_cells)]
    size: [usize; 3],
    /// Steps to time (after one untimed step).
    #[arg(long, default_value = "100", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, MAX_STEPS))]
    steps: u64,
    /// Threads running jobs, the calling thread included.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, sylva_engine::MAX_THREADS as u64))]
    threads: u64,
    #[arg(long, value_enum, default_value = "jacobi4")]
    pressure: PressureArg,
    /// Vorticity confinement strength (0: none).
    #[arg(long, default_value = "0", allow_hyphen_values = true, value_parser = |s: &str| crate::args::number_in(s, 0.0, FluidGrid::MAX_VORTICITY as f64))]
    vorticity: f64,
    /// Run the steps as Vulkan compute shaders (on the dedicated compute queue when the device
    /// has one) instead of on the CPU; timings are GPU timestamps per pass.
    #[arg(long)]
    gpu: bool,
    #[command(flatten)]
    device: crate::args::GpuArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct PassFigures {
    advect: f64,
    forces: f64,
    pressure: f64,
    project: f64,
    total: f64,
}

#[derive(Serialize)]
struct WindReport {
    /// East × north × up.
    size: String,
    cells: usize,
    steps: u64,
    threads: u64,
    pressure: &'static str,
    /// Vorticity confinement strength.
    vorticity: f64,
    /// The device that ran the steps (`cpu` or the Vulkan device's name).
    device: String,
    ms_per_step: PassFigures,
    /// RMS divergence after projection over RMS divergence before, last step.
    divergence_rel: f64,
    /// The same, averaged over the timed steps (CPU only: the GPU's is measured on its last step).
    divergence_rel_mean: Option<f64>,
    pressure_iterations_per_step: f64,
    /// Largest relative residual of the converged solver over the steps (null for Jacobi).
    residual_rel_max: Option<f64>,
    state_hash: String,
    wall_ms_per_step: f64,
    setup_ms: f64,
}

/// The benchmark's scene: a 128 m × 128 m × 32 m domain over a forest, an 8 m/s west wind
/// entering at the border, a jittered wind ball and a row of solid blocks standing in for a
/// wall and trunks.
pub fn bench_scene(cells: [usize; 3], pressure: Pressure) -> Result<FluidGrid> {
    let mut p = FluidParams::over(Vec3::new(-64.0, 0.0, -64.0), Vec3::new(64.0, 32.0, 64.0));
    p.cells = cells;
    p.pressure = pressure;
    p.border = Vec3::new(8.0, 0.0, 1.5);
    let mut g = FluidGrid::new(p).context("cannot set up the wind grid")?;
    for a in 0..3 {
        let w = g.params().border[a];
        g.velocity_mut(a).iter_mut().for_each(|v| *v = w);
    }
    g.add_solid_box(Vec3::new(-20.0, 0.0, -30.0), Vec3::new(-18.0, 6.0, 10.0))?;
    for k in 0..5 {
        let x = 10.0 + 8.0 * k as f32;
        g.add_solid_box(Vec3::new(x, 0.0, -2.0), Vec3::new(x + 1.0, 14.0, 0.0))?;
    }
    g.add_ball(WindBall {
        centre: Vec3::new(-40.0, 8.0, 20.0),
        radius: 6.0,
        accel: Vec3::new(30.0, 0.0, -10.0),
        jitter: 0.4,
    })?;
    Ok(g)
}

pub fn run(a: &WindBenchArgs) -> Result<()> {
    let setup = Instant::now();
    let pressure = match a.pressure {
        PressureArg::Jacobi4 => Pressure::JACOBI4,
        PressureArg::Converged => Pressure::CONVERGED,
    };
    let jobs = JobSystem::new(a.threads as usize).context("cannot start the job system")?;
    let mut g = bench_scene(a.size, pressure)?;
    g.set_vorticity(a.vorticity as f32)?;
    if a.gpu {
        return run_gpu(a, g, &jobs, setup);
    }
    g.step(&jobs);
    let setup_ms = setup.elapsed().as_secs_f64() * 1e3;
    let mut sum = [Duration::ZERO; 4];
    let mut wall = Duration::ZERO;
    let (mut rel_sum, mut rel_last, mut iters) = (0.0, 0.0, 0u64);
    let mut residual_max: Option<f64> = None;
    let stoppable = interrupt::Steps::begin();
    let mut progress = Progress::new("wind steps");
    for k in 0..a.steps {
        interrupt::check()?;
        progress.update_count(k, a.steps);
        let t = Instant::now();
        let s = g.step(&jobs);
        wall += t.elapsed();
        for (acc, d) in sum.iter_mut().zip(s.phases()) {
            *acc += d;
        }
        iters += s.solve.iterations as u64;
        if matches!(pressure, Pressure::Converged { .. }) {
            residual_max = Some(residual_max.unwrap_or(0.0).max(s.solve.residual_rel));
        }
        // Measured outside the timed step.
        let after = g.divergence_rms(&jobs);
        rel_last = if s.divergence_before > 0.0 {
            after / s.divergence_before
        } else {
            0.0
        };
        rel_sum += rel_last;
        if !rel_last.is_finite() {
            bail!("the wind field became non-finite");
        }
    }
    progress.finish();
    drop(stoppable);
    let n = a.steps as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3 / n;
    let [ad, fo, pr, pj] = sum;
    let c = g.cells();
    let report = WindReport {
        size: format!("{}x{}x{}", c[0], c[2], c[1]),
        cells: c.iter().product(),
        steps: a.steps,
        threads: a.threads,
        pressure: pressure_name(a.pressure),
        vorticity: a.vorticity,
        ms_per_step: PassFigures {
            advect: ms(ad),
            forces: ms(fo),
            pressure: ms(pr),
            project: ms(pj),
            total: ms(ad + fo + pr + pj),
        },
        divergence_rel: rel_last,
        divergence_rel_mean: Some(rel_sum / n),
        pressure_iterations_per_step: iters as f64 / n,
        residual_rel_max: residual_max,
        state_hash: format!("{:016x}", g.state_hash()),
        wall_ms_per_step: ms(wall),
        setup_ms,
        device: "cpu".to_string(),
    };
    print_report(a, &report)
}

fn pressure_name(p: PressureArg) -> &'static str {
    match p {
        PressureArg::Jacobi4 => "jacobi4",
        PressureArg::Converged => "converged",
    }
}

fn print_report(a: &WindBenchArgs, report: &WindReport) -> Result<()> {
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let r = report;
        println!(
            "wind grid {} ({} cells), {} steps, {} thread(s), pressure {}, vorticity confinement {}",
            r.size, r.cells, r.steps, r.threads, r.pressure, r.vorticity
        );
        println!(
            "  ms/step   advect {:.3}  forces {:.3}  pressure {:.3}  project {:.3}  total {:.3}  (wall {:.3})",
            r.ms_per_step.advect,
            r.ms_per_step.forces,
            r.ms_per_step.pressure,
            r.ms_per_step.project,
            r.ms_per_step.total,
            r.wall_ms_per_step
        );
        let mean = r
            .divergence_rel_mean
            .map_or(String::new(), |m| format!(" (mean {m:.3e})"));
        let residual = r
            .residual_rel_max
            .map_or(String::new(), |m| format!(" (largest relative residual {m:.2e})"));
        println!(
            "  divergence after/before {:.3e}{mean}, {:.1} pressure iterations/step{residual}",
            r.divergence_rel, r.pressure_iterations_per_step
        );
        println!("  state hash {}", r.state_hash);
    }
    Ok(())
}

/// The same steps as Vulkan compute: GPU timestamps per pass, one step in flight at a time (so
/// each step's passes are timed alone; with the converged solver the pressure time adds up the
/// GPU time of its submissions, without the host's reads of the residual between them). The divergence ratio of the last step compares the
/// GPU's field after it with the CPU's divergence before projection on the GPU's previous
/// field (the CPU replays the step's advection and forces from it).
fn run_gpu(a: &WindBenchArgs, mut g: FluidGrid, jobs: &JobSystem, setup: Instant) -> Result<()> {
    let gpu =
        std::sync::Arc::new(sylva_render::Gpu::new(&a.device.options(), None).context("cannot open a Vulkan device")?);
    let mut fluid = sylva_render::wind::GpuFluid::new(&gpu, &g).context("cannot set up the wind grid on the GPU")?;
    if !fluid.has_timestamps() {
        bail!(
            "{}'s compute queue records no timestamps, so its passes cannot be timed",
            gpu.name()
        );
    }
    let warm = g.next_inputs();
    fluid.step(&warm)?;
    fluid.wait()?;
    let setup_ms = setup.elapsed().as_secs_f64() * 1e3;
    let mut sum = [Duration::ZERO; 4];
    let mut wall = Duration::ZERO;
    let mut last_inputs = None;
    let (mut iters, mut residual_max) = (0u64, None::<f64>);
    let stoppable = interrupt::Steps::begin();
    let mut progress = Progress::new("wind steps on the GPU");
    for s in 0..a.steps {
        interrupt::check()?;
        progress.update_count(s, a.steps);
        let inputs = g.next_inputs();
        if s + 1 == a.steps {
            fluid.download(&mut g)?;
            last_inputs = Some(inputs.clone());
        }
        let t = Instant::now();
        fluid.step(&inputs)?;
        fluid.wait()?;
        wall += t.elapsed();
        if let Some(solve) = fluid.last_solve() {
            iters += solve.iterations as u64;
            residual_max = Some(residual_max.unwrap_or(0.0).max(solve.residual_rel));
        }
        let passes = fluid.timings().context("the GPU returned no timestamps")?;
        for (acc, d) in sum.iter_mut().zip(passes) {
            *acc += d;
        }
    }
    progress.finish();
    drop(stoppable);
    let replay = g.step_with(jobs, &last_inputs.expect("at least one step"));
    fluid.download(&mut g)?;
    crate::args::check_validation(&gpu)?;
    let after = g.divergence_rms(jobs);
    let rel = if replay.divergence_before > 0.0 {
        after / replay.divergence_before
    } else {
        0.0
    };
    let n = a.steps as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3 / n;
    let [ad, fo, pr, pj] = sum;
    let c = g.cells();
    let iterations = match g.params().pressure {
        Pressure::Jacobi { iterations } => iterations as f64,
        Pressure::Converged { .. } => iters as f64 / n,
    };
    let report = WindReport {
        size: format!("{}x{}x{}", c[0], c[2], c[1]),
        cells: c.iter().product(),
        steps: a.steps,
        threads: a.threads,
        pressure: pressure_name(a.pressure),
        vorticity: a.vorticity,
        device: gpu.name(),
        ms_per_step: PassFigures {
            advect: ms(ad),
            forces: ms(fo),
            pressure: ms(pr),
            project: ms(pj),
            total: ms(ad + fo + pr + pj),
        },
        divergence_rel: rel,
        divergence_rel_mean: None,
        pressure_iterations_per_step: iterations,
        residual_rel_max: residual_max,
        state_hash: format!("{:016x}", g.state_hash()),
        wall_ms_per_step: ms(wall),
        setup_ms,
    };
    print_report(a, &report)
}
