//! `sylva render`: simulates a scene for some frames and writes the last one as a PNG, without a
//! window, on any Vulkan device (lavapipe included).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use sylva_render::frame::RenderFrame;
use sylva_render::renderer::Output;
use sylva_render::{DrawOptions, Gpu, Renderer, RendererOptions, Rgba};

use crate::args::{check_validation, parse_size, GpuArgs};
use crate::progress::Progress;
use crate::scene::{Driver, Scene, SceneArgs};
use crate::trees::Output as OutArgs;
use crate::{interrupt, output};

/// Most frames `render` (and `view --frames`) simulates: an hour at 60 frames per second.
pub const MAX_FRAMES: u64 = 216_000;

#[derive(Args, Clone, Debug)]
pub struct RenderArgs {
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Frames to simulate (1/60 s each) before the picture is taken.
    #[arg(long, default_value = "60", allow_hyphen_values = true,
          value_parser = |s: &str| crate::args::count_in(s, 1, MAX_FRAMES))]
    pub frames: u64,
    /// Image size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", allow_hyphen_values = true, value_parser = parse_size)]
    pub size: (u32, u32),
    /// Draw the timing overlay on the picture.
    #[arg(long)]
    pub overlay: bool,
    #[command(flatten)]
    pub output: OutArgs,
    #[command(flatten)]
    pub gpu: GpuArgs,
}

pub fn run(a: &RenderArgs) -> Result<()> {
    output::check_png_name(&a.output.out)?;
    a.output
        .check(&a.scene.spec.iter().map(|p| p.as_path()).collect::<Vec<_>>())?;
    let image = render_scene(a)?;
    write_png(&a.output.out, &image)?;
    Ok(())
}

/// Builds the scene, simulates it and renders the last frame.
pub fn render_scene(a: &RenderArgs) -> Result<Rgba> {
    let (w, h) = a.size;
    let scene = Scene::build_with(
        a.scene.spec.as_deref(),
        a.scene.species.as_deref(),
        a.scene.trees,
        a.scene.seed,
        a.scene.grow,
        a.scene.model.model,
        &a.scene.model.material(),
    )?;
    let camera = scene.default_camera(w as f32 / h as f32, h as f32).camera();
    let gpu = Arc::new(Gpu::new(&a.gpu.options(), None).context("cannot open a Vulkan device")?);
    let mut renderer = Renderer::new(gpu.clone(), &RendererOptions::default())?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut driver = Driver::new(scene, a.scene.wind as f32, a.scene.seed, a.scene.trees, camera, threads)?;
    driver.apply_args(&a.scene)?;
    if a.scene.wind_gpu {
        driver.use_gpu_wind(gpu.clone())?;
    }
    if a.scene.dynamics_gpu {
        driver.use_gpu_dynamics(gpu.clone())?;
    }
    let start = Instant::now();
    {
        let _stoppable = interrupt::Steps::begin();
        let mut progress = Progress::new("frames simulated");
        for k in 0..a.frames {
            interrupt::check()?;
            driver.step(1);
            progress.update_count(k + 1, a.frames);
        }
        progress.finish();
    }
    let sim_s = start.elapsed().as_secs_f64();
    if let Some(line) = driver.dynamics_device() {
        eprintln!("{line}");
    }
    if let Some(failure) = driver.wind_failure().or_else(|| driver.dynamics_failure()) {
        bail!("{failure}");
    }
    let mut frame = RenderFrame::default();
    driver.fill(&mut frame, Instant::now(), Duration::ZERO);
    // A fill that read the pose back may have met a device error: it is reported too.
    if let Some(failure) = driver.dynamics_failure() {
        bail!("{failure}");
    }
    let options = DrawOptions {
        overlay: a.overlay,
        ..DrawOptions::default()
    };
    let output = Output {
        extent: ash_extent(w, h),
        present: None,
        readback: true,
    };
    let t0 = Instant::now();
    let image = renderer
        .draw(&frame, &options, &output)?
        .expect("readback was asked for");
    eprintln!(
        "rendered {} at {w}x{h} on {}: {} frames simulated in {:.2} s, {} instances, {} draws, drawn in {:.1} ms",
        frame.info.title,
        gpu.name(),
        a.frames,
        sim_s,
        frame.instance_count(),
        renderer.stats().draws,
        t0.elapsed().as_secs_f64() * 1e3
    );
    if let Some(line) = downloads_line(&driver) {
        eprintln!("{line}");
    }
    drop(renderer);
    check_validation(&gpu)?;
    Ok(image)
}

/// "read back from the device: the pose 0 times (0 bytes), the wind grid 0 times (0 bytes)":
/// what the GPU dynamics and the GPU wind copied back to the CPU, for whichever of the two
/// runs on the GPU; `None` when neither does.
pub fn downloads_line(driver: &Driver) -> Option<String> {
    let (pose, wind) = driver.downloads();
    let part = |what: &str, d: Option<sylva_render::Downloads>| {
        d.map(|d| format!("the {what} {} times ({} bytes)", d.count, d.bytes))
    };
    let parts: Vec<String> = [part("pose", pose), part("wind grid", wind)]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| format!("read back from the device: {}", parts.join(", ")))
}

pub fn ash_extent(w: u32, h: u32) -> sylva_render::vk::Extent2D {
    sylva_render::vk::Extent2D { width: w, height: h }
}

pub fn write_png(path: &Path, image: &Rgba) -> Result<()> {
    output::write_file(path, &image.to_png())?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
