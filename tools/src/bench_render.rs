//! `sylva bench render`: the renderer's figures on this machine: CPU time to fill the render
//! command cache per instance, bytes uploaded per frame and instance, and frames per second of
//! the viewer's pipeline (simulation thread filling the cache, render thread drawing it) into
//! an offscreen image of the window's size.

use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use sylva_render::cache::{command_cache, Acquired};
use sylva_render::frame::RenderFrame;
use sylva_render::renderer::{Output, GPU_PHASES};
use sylva_render::{DrawOptions, Gpu, Renderer};

use crate::args::{check_validation, parse_size, GpuArgs};
use crate::headless::ash_extent;
use crate::interrupt;
use crate::progress::Progress;

/// Most frames `bench render` draws.
pub const MAX_FRAMES: u64 = 100_000;
use crate::scene::{simulate, viewer_threads, Driver, Scene, SceneArgs, SimCommand};

#[derive(Args, Debug)]
pub struct RenderBenchArgs {
    #[command(flatten)]
    scene: SceneArgs,
    /// Frames to draw (after 10 warm-up frames).
    #[arg(long, default_value = "200", allow_hyphen_values = true,
          value_parser = |s: &str| crate::args::count_in(s, 1, MAX_FRAMES))]
    frames: u64,
    /// Image size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", allow_hyphen_values = true, value_parser = parse_size)]
    size: (u32, u32),
    /// Draw without the overlay.
    #[arg(long)]
    no_overlay: bool,
    /// Draw without shadows.
    #[arg(long)]
    no_shadows: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    gpu: GpuArgs,
}

#[derive(Serialize)]
struct GpuPass {
    name: &'static str,
    ms: f64,
}

#[derive(Serialize)]
struct RenderReport {
    scene: String,
    device: String,
    width: u32,
    height: u32,
    /// Samples per pixel (`--msaa`).
    samples: u32,
    trees: usize,
    segments: usize,
    leaves: usize,
    /// Instances drawn per frame (segments, leaves and spheres after culling and LOD).
    instances_per_frame: f64,
    /// Segments drawn with the 8-, 5- and 3-sided cylinders.
    segments_by_sides: [usize; 3],
    /// Leaves drawn from trees at each level of detail.
    leaves_by_level: [usize; 3],
    /// Trees drawn at each level of detail.
    trees_by_level: [usize; 3],
    /// CPU time of `RenderFrame::fill` per instance, filling alone on one thread \[ns\].
    fill_ns_per_instance: f64,
    /// The same, measured inside the threaded run (competing with rendering for the cores).
    fill_ns_per_instance_threaded: f64,
    /// Bytes written to GPU-visible memory per frame (instances, uniforms, overlay).
    upload_bytes_per_frame: f64,
    /// Of those, instance data per instance drawn (`RenderFrame::upload_instance_bytes`): for a
    /// pose on the CPU patched on the device, the pose's (and the spheres' and arrows'), the
    /// segment and leaf instances being uploaded only when they change.
    upload_bytes_per_instance: f64,
    frames: u64,
    fps: f64,
    /// Render-thread CPU time to upload and record a frame \[ms\].
    record_ms: f64,
    /// Render-thread CPU time in the queue submission \[ms\] (lavapipe draws inside it).
    submit_ms: f64,
    /// Mean GPU time per pass (timestamps) \[ms\].
    gpu_ms: Vec<GpuPass>,
    gpu_total_ms: f64,
    draws_per_frame: u32,
    /// Simulated frames published while the renderer drew `frames`.
    sim_frames: u64,
}

pub fn run(a: &RenderBenchArgs) -> Result<()> {
    let (w, h) = a.size;
    let scene = Scene::from_args(&a.scene)?;
    let title = scene.title.clone();
    let camera = scene.default_camera(w as f32 / h as f32, h as f32).camera();
    let threads = viewer_threads();
    let mut driver = Driver::new(scene, a.scene.wind as f32, a.scene.seed, a.scene.trees, camera, threads)?;
    driver.apply_args(&a.scene)?;
    let gpu = Arc::new(Gpu::new(&a.gpu.options(), None).context("cannot open a Vulkan device")?);
    if a.scene.wind_gpu {
        driver.use_gpu_wind(gpu.clone())?;
    }
    if a.scene.dynamics_gpu {
        driver.use_gpu_dynamics(gpu.clone())?;
    }
    driver.step(30);
    if let Some(failure) = driver.wind_failure().or_else(|| driver.dynamics_failure()) {
        anyhow::bail!("{failure}");
    }

    // Fill alone: the figure the ≤ 10 ns per instance target is about.
    let mut frame = RenderFrame::default();
    driver.fill(&mut frame, Instant::now(), Duration::ZERO);
    // A fill that read a GPU model's pose back may have met a device error: reported too.
    if let Some(failure) = driver.dynamics_failure() {
        anyhow::bail!("{failure}");
    }
    let instances = frame.instance_count();
    let reps = (20_000_000 / instances.max(1)).clamp(20, 500);
    let mut best = u64::MAX;
    let mut total = 0u64;
    for _ in 0..reps {
        driver.fill(&mut frame, Instant::now(), Duration::ZERO);
        best = best.min(frame.fill_ns);
        total += frame.fill_ns;
    }
    let fill_ns = total as f64 / reps as f64 / instances.max(1) as f64;
    eprintln!(
        "fill: best {:.2} ns per instance over {reps} fills",
        best as f64 / instances.max(1) as f64
    );

    let mut renderer = Renderer::new(gpu.clone(), &a.scene.renderer_options())?;
    let info = frame.info.clone();
    let segments_by_sides = frame.segments.each_ref().map(Vec::len);
    let leaves_by_level = frame.leaves.each_ref().map(Vec::len);
    let trees_by_level = frame.trees_drawn;
    let (writer, reader) = command_cache(frame.clone(), frame);
    let (tx, rx) = channel();
    let sim = std::thread::Builder::new()
        .name("simulation".into())
        .spawn(move || simulate(driver, writer, rx))?;
    let options = DrawOptions {
        overlay: !a.no_overlay,
        shadows: !a.no_shadows,
        help: crate::view::HELP.to_string(),
        gpu_field: None,
    };
    let output = Output {
        extent: ash_extent(w, h),
        present: None,
        readback: false,
    };
    let warmup = 10;
    let mut start = Instant::now();
    let mut first_generation = 0;
    let mut seen = 0;
    let (mut record_ms, mut submit_ms, mut upload, mut fill_threaded, mut fill_count) =
        (0.0f64, 0.0f64, 0usize, 0.0f64, 0usize);
    let mut draws = 0;
    let stoppable = interrupt::Steps::begin();
    let mut progress = Progress::new("frames drawn");
    let mut interrupted = false;
    for k in 0..warmup + a.frames {
        if interrupt::check().is_err() {
            interrupted = true;
            break;
        }
        progress.update_count(k, warmup + a.frames);
        if k == warmup {
            renderer.finish()?;
            start = Instant::now();
            first_generation = seen;
        }
        // Wait for a free frame slot before taking the read side, so the simulation is only
        // held up while the frame is copied and recorded, not while the GPU catches up.
        renderer.begin_frame()?;
        // Draw the newest frame; when the simulation is behind, draw the last one again (as the
        // viewer does).
        let guard = match reader.acquire_newer(seen, Duration::ZERO) {
            Acquired::Frame(f) => f,
            Acquired::TimedOut => reader.acquire(),
            Acquired::Closed => anyhow::bail!("the simulation thread stopped"),
        };
        seen = guard.generation();
        renderer.draw(&guard, &options, &output)?;
        if k >= warmup {
            let n = guard.instance_count();
            if n > 0 && guard.fill_ns > 0 {
                fill_threaded += guard.fill_ns as f64 / n as f64;
                fill_count += 1;
            }
            record_ms += renderer.stats().record_ms as f64;
            submit_ms += renderer.stats().submit_ms as f64;
            upload += renderer.stats().upload_bytes;
            draws = renderer.stats().draws;
        }
    }
    renderer.finish()?;
    let wall = start.elapsed().as_secs_f64();
    let sim_frames = seen - first_generation;
    let _ = tx.send(SimCommand::Quit);
    sim.join()
        .map_err(|_| anyhow::anyhow!("the simulation thread panicked"))?;
    progress.finish();
    drop(stoppable);
    if interrupted {
        return Err(interrupt::Interrupted.into());
    }

    let t = renderer.gpu_timings();
    let mean = |d: Duration| d.as_secs_f64() * 1e3;
    let gpu_ms: Vec<GpuPass> = t
        .phase_ids()
        .zip(GPU_PHASES)
        .map(|(id, name)| GpuPass {
            name,
            ms: mean(t.mean(id)),
        })
        .collect();
    let frames = a.frames as f64;
    let instance_bytes = reader.acquire().upload_instance_bytes();
    let report = RenderReport {
        scene: title,
        device: gpu.name(),
        width: w,
        height: h,
        samples: renderer.samples(),
        trees: info.trees,
        segments: info.segments,
        leaves: info.leaves,
        instances_per_frame: instances as f64,
        segments_by_sides,
        leaves_by_level,
        trees_by_level,
        fill_ns_per_instance: fill_ns,
        fill_ns_per_instance_threaded: if fill_count > 0 {
            fill_threaded / fill_count as f64
        } else {
            0.0
        },
        upload_bytes_per_frame: upload as f64 / frames,
        upload_bytes_per_instance: instance_bytes as f64 / instances.max(1) as f64,
        frames: a.frames,
        fps: frames / wall,
        record_ms: record_ms / frames,
        submit_ms: submit_ms / frames,
        gpu_total_ms: if t.frames() > 0 { mean(t.mean_wall()) } else { 0.0 },
        gpu_ms,
        draws_per_frame: draws,
        sim_frames,
    };
    drop(renderer);
    check_validation(&gpu)?;
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

fn print_table(r: &RenderReport) {
    println!(
        "render benchmark: {} on {}, {}x{}, {} sample(s) per pixel",
        r.scene, r.device, r.width, r.height, r.samples
    );
    println!(
        "  scene: {} trees, {} segments, {} leaves; {:.0} instances drawn per frame in {} draws",
        r.trees, r.segments, r.leaves, r.instances_per_frame, r.draws_per_frame
    );
    println!(
        "  LOD: trees {:?} by level, segments {:?} by cylinder (8/5/3 sides), leaves {:?} by level",
        r.trees_by_level, r.segments_by_sides, r.leaves_by_level
    );
    println!(
        "  fill:  {:.2} ns per instance alone (target <= 10), {:.2} ns beside the renderer",
        r.fill_ns_per_instance, r.fill_ns_per_instance_threaded
    );
    println!(
        "  upload: {:.0} bytes per frame, {:.1} bytes of instance data per instance",
        r.upload_bytes_per_frame, r.upload_bytes_per_instance
    );
    println!(
        "  frames: {} drawn, {:.2} fps; render thread: {:.2} ms to upload and record, {:.2} ms in the queue submission",
        r.frames, r.fps, r.record_ms, r.submit_ms
    );
    let passes: Vec<String> = r.gpu_ms.iter().map(|p| format!("{} {:.2}", p.name, p.ms)).collect();
    println!("  gpu ms: {}  total {:.2}", passes.join("  "), r.gpu_total_ms);
    println!("  simulation frames published meanwhile: {}", r.sim_frames);
}
