//! The GPU wind solver (`sylva_render::wind`, compute shaders) against the CPU reference
//! (`sylva_sim::fluid`), on a real Vulkan device (lavapipe on a machine without a GPU) with the
//! Khronos validation layer on: every test fails on a validation error, and fails (rather than
//! passing) when no device can be opened.

use std::time::Instant;

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_render::wind::WIND_GPU_PASSES;
use sylva_render::{GpuFluid, RenderError};
use sylva_sim::fluid::{FluidGrid, FluidParams, Pressure, Side, StepInputs, WindBall};
use sylva_tests::device::{assert_no_validation_errors, gpu};

/// A 48×12×40 grid over 48 m × 9 m × 40 m: a west-south-west border wind entering through
/// x− and z−, leaving through x+ and z+, a solid block in the flow and a jittered wind ball.
fn obstacle_scene() -> FluidGrid {
    let mut g = FluidGrid::new(FluidParams {
        cells: [48, 12, 40],
        origin: Vec3::new(-24.0, 0.0, -20.0),
        extent: Vec3::new(48.0, 9.0, 40.0),
        dt: 1.0 / 30.0,
        pressure: Pressure::JACOBI4,
        sides: [
            Side::Border,
            Side::Border,
            Side::Closed,
            Side::Closed,
            Side::Border,
            Side::Border,
        ],
        border: Vec3::new(6.0, 0.0, 2.0),
        seed: 11,
    })
    .unwrap();
    let solid = g
        .add_solid_box(Vec3::new(-6.0, 0.0, -5.0), Vec3::new(-2.0, 5.0, 6.0))
        .unwrap();
    assert!(solid > 100, "{solid} solid cells");
    g.add_ball(WindBall {
        centre: Vec3::new(-12.0, 4.0, 4.0),
        radius: 4.0,
        accel: Vec3::new(20.0, 6.0, -12.0),
        jitter: 0.4,
    })
    .unwrap();
    g
}

/// Largest absolute value over the three velocity components.
fn max_abs(g: &FluidGrid) -> f32 {
    (0..3)
        .flat_map(|a| g.velocity(a).iter())
        .fold(0.0f32, |m, v| m.max(v.abs()))
}

/// Largest absolute difference of the velocities, and where (component, face index).
fn max_diff(a: &FluidGrid, b: &FluidGrid) -> (f32, usize, usize) {
    let mut worst = (0.0f32, 0, 0);
    for c in 0..3 {
        for (i, (x, y)) in a.velocity(c).iter().zip(b.velocity(c)).enumerate() {
            let d = (x - y).abs();
            assert!(d.is_finite(), "component {c} face {i}: CPU {x}, GPU {y}");
            if d > worst.0 {
                worst = (d, c, i);
            }
        }
    }
    worst
}

#[test]
fn gpu_solver_matches_the_cpu_solver_over_100_steps() {
    let gpu = gpu();
    let mut cpu = obstacle_scene();
    let mut gpu_grid = obstacle_scene();
    let jobs = JobSystem::new(2).unwrap();
    let mut fluid = GpuFluid::new(&gpu, &gpu_grid).expect("GPU wind solver");
    let mut inputs: Vec<StepInputs> = Vec::new();
    let t = Instant::now();
    for _ in 0..100 {
        let step = cpu.next_inputs();
        cpu.step_with(&jobs, &step);
        inputs.push(step);
    }
    let cpu_time = t.elapsed();
    let t = Instant::now();
    for step in &inputs {
        fluid.step(step).expect("GPU step");
    }
    fluid.wait().unwrap();
    let gpu_time = t.elapsed();
    fluid.download(&mut gpu_grid).expect("download");

    let scale = max_abs(&cpu);
    let (worst, comp, face) = max_diff(&cpu, &gpu_grid);
    let rel = worst / scale;
    let p_cpu = cpu.pressure();
    let p_gpu = gpu_grid.pressure();
    let p_scale = p_cpu.iter().fold(0.0f32, |m, p| m.max(p.abs()));
    let p_worst = p_cpu.iter().zip(&p_gpu).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    eprintln!(
        "100 steps of 48×12×40: CPU {cpu_time:.2?}, GPU {gpu_time:.2?} ({}); max |v| {scale:.3} m/s, \
         max |Δv| {worst:.3e} (relative {rel:.2e}, component {comp} face {face}); max |p| {p_scale:.3e}, \
         max |Δp| {p_worst:.3e}; last step's GPU passes {:?}",
        gpu.name(),
        fluid
            .timings()
            .map(|t| WIND_GPU_PASSES.iter().zip(t).collect::<Vec<_>>())
    );
    assert!(scale > 3.0, "the wind never developed: max |v| = {scale}");
    assert!(
        rel <= 1e-4,
        "GPU and CPU disagree: max |Δv| = {worst:e} = {rel:.2e} × max |v| (allowed 1e-4), component {comp} \
         face {face}: CPU {}, GPU {}",
        cpu.velocity(comp)[face],
        gpu_grid.velocity(comp)[face]
    );
    assert!(
        p_worst <= 1e-4 * p_scale.max(1e-6),
        "pressures disagree: max |Δp| = {p_worst:e}, max |p| = {p_scale:e}"
    );
    if fluid.has_timestamps() {
        let t = fluid.timings().expect("timestamps read after wait");
        assert!(t.iter().any(|d| !d.is_zero()), "{t:?}");
    }
    drop(fluid);
    assert_no_validation_errors(&gpu);
    assert_eq!(gpu.live_allocations(), 0, "the GPU solver leaked buffers");
}

/// Vorticity confinement (Fedkiw, Stam & Jensen 2001) on both solvers: the same field after
/// 100 steps of the obstacle scene.
#[test]
fn gpu_vorticity_confinement_matches_the_cpu() {
    let gpu = gpu();
    let jobs = JobSystem::new(2).unwrap();
    let mut cpu = obstacle_scene();
    cpu.set_vorticity(0.3).unwrap();
    let mut gpu_grid = obstacle_scene();
    let mut fluid = GpuFluid::new(&gpu, &gpu_grid).expect("GPU wind solver");
    let mut plain = obstacle_scene();
    for _ in 0..100 {
        let step = cpu.next_inputs();
        assert_eq!(step.vorticity, 0.3);
        cpu.step_with(&jobs, &step);
        fluid.step(&step).expect("GPU step");
        plain.step(&jobs);
    }
    fluid.download(&mut gpu_grid).expect("download");
    let scale = max_abs(&cpu);
    let (worst, comp, face) = max_diff(&cpu, &gpu_grid);
    let rel = worst / scale;
    let (effect, ..) = max_diff(&cpu, &plain);
    eprintln!(
        "100 steps with vorticity confinement 0.3 on {}: max |v| {scale:.3} m/s, max |Δv| GPU vs CPU {worst:.3e} \
         (relative {rel:.2e}, component {comp} face {face}); confinement changed the field by up to {effect:.3} m/s",
        gpu.name()
    );
    assert!(effect > 0.05 * scale, "confinement made no difference: {effect}");
    assert!(
        rel <= 1e-4,
        "GPU and CPU disagree with confinement: max |Δv| = {worst:e} = {rel:.2e} × max |v| (allowed 1e-4)"
    );
    let mut bad = cpu.next_inputs();
    bad.vorticity = f32::NAN;
    assert!(matches!(fluid.step(&bad), Err(RenderError::Invalid { .. })));
    drop(fluid);
    assert_no_validation_errors(&gpu);
}

/// `GpuWind` as the trees' wind: it keeps the grid's clock and field caught up with the trees'
/// time (the same field as `FluidWind` on the CPU), and a step the GPU refuses stops it with the
/// reason, instead of a panic or a silently frozen field.
#[test]
fn gpu_wind_follows_the_clock_and_reports_a_failure() {
    use sylva_engine::FrameTimings;
    use sylva_render::GpuWind;
    use sylva_sim::fluid::{FluidWind, FLUID_PHASES};
    use sylva_sim::wind::WindField;
    let gpu = gpu();
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(&FLUID_PHASES);
    let mut on_gpu = GpuWind::new(&gpu, obstacle_scene()).expect("GPU wind");
    let mut on_cpu = FluidWind::new(obstacle_scene());
    let dt = obstacle_scene().params().dt as f64;
    for frame in 1..=12 {
        // Two fluid steps per frame.
        let time = frame as f64 * 2.0 * dt;
        on_gpu.prepare(time, &jobs, &timings);
        on_cpu.prepare(time, &jobs, &timings);
    }
    assert!(on_gpu.failure().is_none(), "{:?}", on_gpu.failure());
    let (g, c) = (on_gpu.fluid().unwrap(), on_cpu.fluid().unwrap());
    assert_eq!((g.steps(), g.time()), (c.steps(), c.time()));
    // By the inflow side, where the border wind has come in.
    let p = Vec3::new(-22.0, 4.0, 2.0);
    let (wg, wc) = (on_gpu.sample(p), on_cpu.sample(p));
    assert!(
        wc.length() > 1.0 && (wg - wc).length() <= 1e-4 * wc.length(),
        "{wg} vs {wc}"
    );

    let grid = on_gpu.fluid_mut().unwrap();
    for _ in 0..300 {
        grid.add_ball(WindBall {
            centre: Vec3::new(0.0, 4.0, 0.0),
            radius: 2.0,
            accel: Vec3::X,
            jitter: 0.0,
        })
        .unwrap();
    }
    on_gpu.prepare(100.0, &jobs, &timings);
    let failure = on_gpu.failure().expect("300 balls are more than the GPU takes");
    assert!(failure.contains("wind balls") && failure.contains("256"), "{failure}");
    drop(on_gpu);
    assert_no_validation_errors(&gpu);
}

#[test]
fn gpu_solver_lets_no_flow_into_solids() {
    let gpu = gpu();
    let mut g = obstacle_scene();
    let mut fluid = GpuFluid::new(&gpu, &g).expect("GPU wind solver");
    for _ in 0..40 {
        let step = g.next_inputs();
        fluid.step(&step).unwrap();
    }
    fluid.download(&mut g).unwrap();
    let n = g.cells();
    let solid = g.solid().to_vec();
    let mut checked = 0;
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                if !solid[i + n[0] * (j + n[1] * k)] {
                    continue;
                }
                let c = [i, j, k];
                for a in 0..3 {
                    let mut d = n;
                    d[a] += 1;
                    for side in 0..2 {
                        let mut f = c;
                        f[a] += side;
                        let v = g.velocity(a)[f[0] + d[0] * (f[1] + d[1] * f[2])];
                        assert_eq!(
                            v, 0.0,
                            "flow {v} through face {f:?} of solid cell {c:?} (component {a})"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 600, "{checked} faces checked");
    assert!(max_abs(&g) > 3.0, "no wind developed around the block");
    drop(fluid);
    assert_no_validation_errors(&gpu);
}

#[test]
fn uniform_inflow_through_an_empty_domain_stays_uniform() {
    let gpu = gpu();
    let wind = Vec3::new(4.0, 0.0, 0.0);
    let mut g = FluidGrid::new(FluidParams {
        cells: [32, 8, 24],
        origin: Vec3::ZERO,
        extent: Vec3::new(32.0, 8.0, 24.0),
        dt: 1.0 / 30.0,
        pressure: Pressure::JACOBI4,
        sides: [
            Side::Border,
            Side::Border,
            Side::Closed,
            Side::Closed,
            Side::Border,
            Side::Border,
        ],
        border: wind,
        seed: 3,
    })
    .unwrap();
    g.velocity_mut(0).iter_mut().for_each(|u| *u = wind.x);
    let mut fluid = GpuFluid::new(&gpu, &g).expect("GPU wind solver");
    for _ in 0..30 {
        let step = g.next_inputs();
        assert!(step.inflow[0] && step.open[1], "x− inflow, x+ open: {step:?}");
        fluid.step(&step).unwrap();
    }
    fluid.download(&mut g).unwrap();
    let du = g.velocity(0).iter().fold(0.0f32, |m, u| m.max((u - wind.x).abs()));
    let dvw = g
        .velocity(1)
        .iter()
        .chain(g.velocity(2))
        .fold(0.0f32, |m, v| m.max(v.abs()));
    let p = g.pressure().iter().fold(0.0f32, |m, p| m.max(p.abs()));
    eprintln!("uniform inflow after 30 GPU steps: max |u − 4| {du:e}, max |v|,|w| {dvw:e}, max |p| {p:e}");
    assert!(du <= 1e-5 && dvw <= 1e-5 && p <= 1e-5, "{du:e} {dvw:e} {p:e}");
    drop(fluid);
    assert_no_validation_errors(&gpu);
}

#[test]
fn bad_solver_settings_and_inputs_are_refused() {
    let gpu = gpu();
    let mut g = obstacle_scene();
    let mut fluid = GpuFluid::new(&gpu, &g).unwrap();
    for bad in [
        Pressure::Jacobi { iterations: 0 },
        Pressure::Converged {
            tolerance: 0.0,
            max_iterations: 50,
        },
        Pressure::Converged {
            tolerance: f32::NAN,
            max_iterations: 50,
        },
        Pressure::Converged {
            tolerance: 1e-5,
            max_iterations: 0,
        },
    ] {
        match fluid.set_pressure_solver(bad) {
            Err(e @ RenderError::Invalid { .. }) => {
                let text = e.to_string();
                assert!(text.contains("to"), "the allowed range is named: {text}");
            }
            other => panic!("{bad:?} accepted: {other:?}"),
        }
    }
    let mut step = g.next_inputs();
    step.balls.push((Vec3::new(f32::NAN, 0.0, 0.0), 1.0, Vec3::X));
    assert!(matches!(fluid.step(&step), Err(RenderError::Invalid { .. })));
    let mut other = FluidGrid::new(FluidParams::over(Vec3::ZERO, Vec3::splat(10.0))).unwrap();
    assert!(fluid.download(&mut other).is_err());
    drop(fluid);
    assert_no_validation_errors(&gpu);
}

/// The converged solver (multigrid-preconditioned CG) on the GPU against the same solver on the
/// CPU, over 100 steps of the obstacle scene: every GPU solve reaches the tolerance, the field
/// it leaves is divergence-free to the bound, and the two fields agree.
#[test]
fn converged_gpu_solver_matches_the_cpu_solver_over_100_steps() {
    let gpu = gpu();
    let jobs = JobSystem::new(2).unwrap();
    let mut cpu = obstacle_scene();
    cpu.set_pressure_solver(Pressure::CONVERGED).unwrap();
    let mut gpu_grid = obstacle_scene();
    gpu_grid.set_pressure_solver(Pressure::CONVERGED).unwrap();
    let mut fluid = GpuFluid::new(&gpu, &gpu_grid).expect("GPU wind solver");
    let (mut cpu_iters, mut gpu_iters, mut worst_residual) = (0u32, 0u32, 0.0f64);
    let mut before = 0.0;
    let t = Instant::now();
    for s in 0..100 {
        let step = cpu.next_inputs();
        if s == 99 {
            // The divergence the GPU's last step starts from: the CPU replays that step's
            // advection and forces on the GPU's field.
            fluid.download(&mut gpu_grid).expect("download");
            before = gpu_grid.step_with(&jobs, &step).divergence_before;
        }
        let stats = cpu.step_with(&jobs, &step);
        cpu_iters += stats.solve.iterations;
        fluid.step(&step).expect("GPU step");
        let solve = fluid.last_solve().expect("a converged solve");
        assert!(
            solve.converged && solve.residual_rel <= 1e-5,
            "step {s}: the GPU solve stopped at {solve:?}"
        );
        gpu_iters += solve.iterations;
        worst_residual = worst_residual.max(solve.residual_rel);
    }
    let elapsed = t.elapsed();
    fluid.download(&mut gpu_grid).expect("download");
    let scale = max_abs(&cpu);
    let (worst, comp, face) = max_diff(&cpu, &gpu_grid);
    let rel = worst / scale;
    let after = gpu_grid.divergence_rms(&jobs);
    let divergence_rel = after / before;
    eprintln!(
        "100 converged steps of 48×12×40 ({} and the CPU, {elapsed:.2?}): iterations CPU {cpu_iters}, GPU \
         {gpu_iters}; worst GPU residual {worst_residual:.2e}; GPU divergence after/before {divergence_rel:.2e}; \
         max |v| {scale:.3} m/s, max |Δv| {worst:.3e} (relative {rel:.2e}, component {comp} face {face})",
        gpu.name()
    );
    assert!(scale > 3.0, "the wind never developed: max |v| = {scale}");
    assert!(divergence_rel <= 1e-4, "GPU divergence after/before {divergence_rel:e}");
    assert!(
        gpu_iters.abs_diff(cpu_iters) * 10 <= cpu_iters,
        "iteration counts differ by more than 10%: CPU {cpu_iters}, GPU {gpu_iters}"
    );
    assert!(
        rel <= 1e-4,
        "GPU and CPU disagree: max |Δv| = {worst:e} = {rel:.2e} × max |v| (allowed 1e-4)"
    );
    drop(fluid);
    assert_no_validation_errors(&gpu);
    assert_eq!(gpu.live_allocations(), 0, "the GPU solver leaked buffers");
}

/// Switching from Jacobi to the converged solver mid-run, and turning the border wind so other
/// sides become inflow and open (the multigrid hierarchy is rebuilt on the GPU): the GPU still
/// follows the CPU.
#[test]
fn converged_gpu_solver_follows_a_change_of_solver_and_of_sides() {
    let gpu = gpu();
    let jobs = JobSystem::new(2).unwrap();
    let mut cpu = obstacle_scene();
    let mut gpu_grid = obstacle_scene();
    let mut fluid = GpuFluid::new(&gpu, &gpu_grid).expect("GPU wind solver");
    let run = |cpu: &mut FluidGrid, fluid: &mut GpuFluid, steps: usize| {
        let mut sides = Vec::new();
        for _ in 0..steps {
            let step = cpu.next_inputs();
            cpu.step_with(&jobs, &step);
            fluid.step(&step).expect("GPU step");
            sides.push(step.open);
        }
        sides
    };
    let before = run(&mut cpu, &mut fluid, 10);
    cpu.set_pressure_solver(Pressure::CONVERGED).unwrap();
    fluid.set_pressure_solver(Pressure::CONVERGED).unwrap();
    run(&mut cpu, &mut fluid, 10);
    assert!(fluid.last_solve().expect("converged").converged);
    cpu.set_border(Vec3::new(-5.0, 0.0, -3.0)).unwrap();
    let after = run(&mut cpu, &mut fluid, 30);
    assert_ne!(before[0], after[0], "the open sides changed");
    let solve = fluid.last_solve().expect("converged");
    assert!(solve.converged, "{solve:?}");
    fluid.download(&mut gpu_grid).expect("download");
    let scale = max_abs(&cpu);
    let (worst, comp, face) = max_diff(&cpu, &gpu_grid);
    let rel = worst / scale;
    eprintln!(
        "Jacobi, then converged, then the wind turned ({:?} to {:?} open): max |v| {scale:.3}, max |Δv| {worst:.3e} \
         (relative {rel:.2e}, component {comp} face {face})",
        before[0], after[0]
    );
    assert!(rel <= 1e-4, "GPU and CPU disagree after the changes: {rel:.2e}");
    drop(fluid);
    assert_no_validation_errors(&gpu);
}

/// A uniform wind in a closed box (the singular case: the mean is removed from the right-hand
/// side and from every preconditioned residual) projects to rest with the GPU's converged solver.
#[test]
fn converged_gpu_solver_brings_a_closed_box_to_rest() {
    let gpu = gpu();
    let mut g = FluidGrid::new(FluidParams {
        cells: [24, 10, 20],
        origin: Vec3::ZERO,
        extent: Vec3::new(24.0, 10.0, 20.0),
        dt: 1.0 / 30.0,
        pressure: Pressure::CONVERGED,
        sides: [Side::Closed; 6],
        border: Vec3::ZERO,
        seed: 5,
    })
    .unwrap();
    for (a, w) in [3.0f32, 1.0, -2.0].into_iter().enumerate() {
        g.velocity_mut(a).iter_mut().for_each(|v| *v = w);
    }
    let mut fluid = GpuFluid::new(&gpu, &g).expect("GPU wind solver");
    let step = g.next_inputs();
    assert!(step.open.iter().all(|o| !o), "{step:?}");
    fluid.step(&step).unwrap();
    let solve = fluid.last_solve().expect("a converged solve");
    fluid.download(&mut g).unwrap();
    let left = max_abs(&g);
    eprintln!("closed box on the GPU, converged: {solve:?}, largest velocity left {left:e} m/s");
    assert!(solve.converged, "{solve:?}");
    assert!(left <= 1e-3, "a closed box must come to rest, {left} m/s left");
    drop(fluid);
    assert_no_validation_errors(&gpu);
}

/// The paper's grid size (256×16×256 cells, 4 Jacobi iterations): GPU time per step.
/// `cargo test --release -p sylva-tests --test wind_gpu -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, not a check (a few seconds on lavapipe)"]
fn gpu_step_time_at_the_papers_grid_size() {
    let gpu = gpu();
    let mut p = FluidParams::over(Vec3::new(-128.0, 0.0, -128.0), Vec3::new(128.0, 32.0, 128.0));
    p.border = Vec3::new(8.0, 0.0, 1.5);
    let mut g = FluidGrid::new(p).unwrap();
    g.add_ball(WindBall {
        centre: Vec3::new(-40.0, 8.0, 20.0),
        radius: 6.0,
        accel: Vec3::new(30.0, 0.0, -10.0),
        jitter: 0.4,
    })
    .unwrap();
    let mut fluid = GpuFluid::new(&gpu, &g).unwrap();
    let steps = 20;
    // The first step also builds the activity and diagonal.
    fluid.step(&g.next_inputs()).unwrap();
    fluid.wait().unwrap();
    let t = Instant::now();
    let mut passes = [std::time::Duration::ZERO; 4];
    for _ in 0..steps {
        fluid.step(&g.next_inputs()).unwrap();
        fluid.wait().unwrap();
        if let Some(t) = fluid.timings() {
            for (s, d) in passes.iter_mut().zip(t) {
                *s += d;
            }
        }
    }
    let wall = t.elapsed() / steps;
    // The CPU solver on the same grid, for comparison.
    let jobs = JobSystem::new(std::thread::available_parallelism().map_or(1, |n| n.get())).unwrap();
    g.step(&jobs);
    let t = Instant::now();
    for _ in 0..5 {
        g.step(&jobs);
    }
    let cpu = t.elapsed() / 5;
    eprintln!(
        "256×16×256, Jacobi 4, on {}: {wall:.2?} per step (submit to wait; CPU solver with {} threads: \
         {cpu:.2?}); GPU passes per step: {}",
        gpu.name(),
        jobs.threads(),
        WIND_GPU_PASSES
            .iter()
            .zip(passes)
            .map(|(n, d)| format!("{n} {:.2?}", d / steps))
            .collect::<Vec<_>>()
            .join(", ")
    );
    drop(fluid);
    assert_no_validation_errors(&gpu);
}

/// The renderer draws wind arrows straight from the GPU solver's buffers, its frame waiting on
/// the solver's timeline semaphore (the CPU does not wait for the steps), and they match the
/// arrows built on the CPU from the downloaded field.
#[test]
fn the_renderer_draws_the_gpu_field_behind_its_semaphore() {
    use sylva_render::field::slice_arrows;
    use sylva_render::frame::{Camera, RenderFrame};
    use sylva_render::renderer::{GpuFieldArrows, Output};
    use sylva_render::{vk, DrawOptions, Renderer, RendererOptions};
    let (w, h) = (480u32, 320u32);
    let gpu = gpu();
    let mut grid = obstacle_scene();
    let mut fluid = GpuFluid::new(&gpu, &grid).expect("GPU wind solver");
    let mut renderer = Renderer::new(gpu.clone(), &RendererOptions::default()).expect("renderer");
    for _ in 0..30 {
        let step = grid.next_inputs();
        fluid.step(&step).expect("GPU step");
    }
    let frame = RenderFrame {
        camera: Some(Camera::orbit(
            Vec3::new(0.0, 3.0, 0.0),
            0.3,
            1.0,
            55.0,
            w as f32 / h as f32,
            h as f32,
        )),
        bounds: (Vec3::ZERO, 30.0),
        sun: Vec3::new(0.45, 0.8, 0.35).normalize(),
        ..RenderFrame::default()
    };
    let output = Output {
        extent: vk::Extent2D { width: w, height: h },
        present: None,
        readback: true,
    };
    let layer = 3;
    let mut draw = |frame: &RenderFrame, field: Option<GpuFieldArrows>| {
        let options = DrawOptions {
            overlay: false,
            shadows: false,
            help: String::new(),
            gpu_field: field,
        };
        renderer
            .draw(frame, &options, &output)
            .expect("draw")
            .expect("readback")
    };
    // Straight after submitting the steps: the frame waits for them on the GPU.
    let early = draw(&frame, Some(GpuFieldArrows::of(&fluid, layer, 10.0)));
    let plain = draw(&frame, None);
    fluid.download(&mut grid).expect("download");
    let mut cpu_frame = frame.clone();
    let slice = slice_arrows(&grid, layer, &mut cpu_frame.wind_arrows).unwrap();
    assert!(slice.arrows > 400 && slice.max_speed > 3.0, "{slice:?}");
    let from_cpu = draw(&cpu_frame, None);
    let from_gpu = draw(&frame, Some(GpuFieldArrows::of(&fluid, layer, slice.max_speed)));
    let differ = |a: &sylva_render::Rgba, b: &sylva_render::Rgba| {
        let mut n = 0;
        for y in 0..h {
            for x in 0..w {
                let (p, q) = (a.pixel(x, y), b.pixel(x, y));
                if (0..3).any(|c| (p[c] as i32 - q[c] as i32).abs() > 40) {
                    n += 1;
                }
            }
        }
        n
    };
    let arrows = differ(&plain, &from_cpu);
    let early_arrows = differ(&plain, &early);
    let mismatch = differ(&from_cpu, &from_gpu);
    eprintln!("arrow pixels: CPU-built {arrows}, GPU-built early {early_arrows}; CPU vs GPU mismatch {mismatch}");
    assert!(arrows > 1000, "only {arrows} arrow pixels");
    assert!(
        early_arrows > 1000,
        "only {early_arrows} arrow pixels from the GPU field"
    );
    assert!(
        mismatch * 50 <= arrows,
        "GPU-field arrows differ from the CPU-built ones at {mismatch} of {arrows} pixels"
    );
    // A layer the grid does not have is refused before anything is drawn.
    let options = DrawOptions {
        gpu_field: Some(GpuFieldArrows::of(&fluid, 12, 10.0)),
        ..DrawOptions::default()
    };
    match renderer.draw(&frame, &options, &output) {
        Err(RenderError::Invalid { what, allowed, .. }) => {
            assert_eq!(what, "wind field layer");
            assert!(allowed.contains("0 to 11"), "{allowed}");
        }
        other => panic!("expected a refusal, got {:?}", other.map(|i| i.is_some())),
    }
    drop(renderer);
    drop(fluid);
    assert_no_validation_errors(&gpu);
}
