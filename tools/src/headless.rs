//! `sylva render`: simulates a scene for some frames and writes the last one as a PNG, without a
//! window, on any Vulkan device (lavapipe included).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use sylva_render::frame::RenderFrame;
use sylva_render::renderer::Output;
use sylva_render::{DrawOptions, Gpu, GpuOptions, Renderer, RendererOptions, Rgba};

use crate::scene::{parse_size, Driver, Scene, SceneArgs};
use crate::trees::{check_output, write_atomically, Output as OutArgs};

#[derive(Args, Clone, Debug)]
pub struct RenderArgs {
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Frames to simulate (1/60 s each) before the picture is taken.
    #[arg(long, default_value = "60", value_parser = |s: &str| crate::args::count_in(s, 1, 1_000_000))]
    pub frames: u64,
    /// Image size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", value_parser = parse_size)]
    pub size: (u32, u32),
    /// Draw the timing overlay on the picture.
    #[arg(long)]
    pub overlay: bool,
    #[command(flatten)]
    pub output: OutArgs,
    #[command(flatten)]
    pub gpu: GpuArgs,
}

/// Device choices shared by the commands that draw.
#[derive(Args, Clone, Debug, Default)]
pub struct GpuArgs {
    /// Enable the Khronos validation layer and fail on any error it reports.
    #[arg(long)]
    pub validation: bool,
    /// Use the first device whose name contains this text.
    #[arg(long)]
    pub device: Option<String>,
}

impl GpuArgs {
    pub fn options(&self) -> GpuOptions {
        GpuOptions {
            validation: self.validation,
            device_name: self.device.clone(),
        }
    }
}

/// Fails when validation is on and reported errors.
pub fn check_validation(gpu: &Gpu) -> Result<()> {
    let errors = gpu.validation_errors();
    if errors > 0 {
        anyhow::bail!(
            "the Vulkan validation layer reported {errors} error(s); first: {}",
            gpu.validation_messages().first().map(String::as_str).unwrap_or("?")
        );
    }
    Ok(())
}

pub fn run(a: &RenderArgs) -> Result<()> {
    check_output(&a.output, &a.scene.spec.iter().map(|p| p.as_path()).collect::<Vec<_>>())?;
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
        a.scene.fork_rules,
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
    let start = Instant::now();
    driver.step(a.frames as u32);
    let sim_s = start.elapsed().as_secs_f64();
    if let Some(failure) = driver.wind_failure() {
        bail!("{failure}");
    }
    let mut frame = RenderFrame::default();
    driver.fill(&mut frame, Instant::now(), Duration::ZERO);
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
    drop(renderer);
    check_validation(&gpu)?;
    Ok(image)
}

pub fn ash_extent(w: u32, h: u32) -> sylva_render::vk::Extent2D {
    sylva_render::vk::Extent2D { width: w, height: h }
}

pub fn write_png(path: &Path, image: &Rgba) -> Result<()> {
    write_atomically(path, &image.to_png())?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
