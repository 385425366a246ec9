//! `sylva render`: simulates a scene for some frames and writes the last one as a PNG, without a
//! window, on any Vulkan device (lavapipe included).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use sylva_render::frame::RenderFrame;
use sylva_render::renderer::Output;
use sylva_render::{DrawOptions, Gpu, Renderer, Rgba};

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
    /// Also write every frame simulated, as it is drawn, into this folder as numbered PNGs
    /// (frame-000001.png, ...: the frames of a video); with --force, replacing earlier ones.
    #[arg(long, value_name = "DIR")]
    pub record: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub output: OutArgs,
    #[command(flatten)]
    pub gpu: GpuArgs,
}

pub fn run(a: &RenderArgs) -> Result<()> {
    a.output
        .check(&a.scene.spec.iter().map(|p| p.as_path()).collect::<Vec<_>>())?;
    output::check_png_name(&a.output.out)?;
    let image = render_scene(a)?;
    write_png(&a.output.out, &image)?;
    Ok(())
}

/// Builds the scene, simulates it and renders the last frame.
pub fn render_scene(a: &RenderArgs) -> Result<Rgba> {
    // The recording's folder is checked before any work.
    let mut recorder = a
        .record
        .as_deref()
        .map(|dir| output::Recorder::new(dir, a.output.force))
        .transpose()?;
    let (w, h) = a.size;
    let scene = Scene::from_args(&a.scene)?;
    let camera = scene.camera_at(a.scene.camera, w as f32 / h as f32, h as f32).camera();
    let gpu = Arc::new(Gpu::new(&a.gpu.options(), None).context("cannot open a Vulkan device")?);
    let mut renderer = Renderer::new(gpu.clone(), &a.scene.renderer_options())?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut driver = Driver::new(scene, a.scene.wind as f32, a.scene.seed, a.scene.trees, camera, threads)?;
    driver.apply_args(&a.scene)?;
    if a.scene.wind_gpu {
        driver.use_gpu_wind(gpu.clone())?;
    }
    if a.scene.dynamics_gpu {
        driver.use_gpu_dynamics(gpu.clone())?;
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
    let start = Instant::now();
    {
        let _stoppable = interrupt::Steps::begin();
        let mut progress = Progress::new("frames simulated");
        for k in 0..a.frames {
            interrupt::check()?;
            driver.step(1);
            if let Some(rec) = &mut recorder {
                let mut frame = RenderFrame::default();
                driver.fill(&mut frame, Instant::now(), Duration::ZERO);
                let image = renderer
                    .draw(&frame, &options, &output)?
                    .expect("readback was asked for");
                rec.write(&image.to_png())?;
            }
            progress.update_count(k + 1, a.frames);
        }
        progress.finish();
    }
    if let (Some(rec), Some(dir)) = (&recorder, &a.record) {
        eprintln!("recorded {} frames into {}", rec.frames(), dir.display());
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

#[cfg(test)]
mod tests {
    use clap::Parser;
    use glam::Vec3;
    use sylva_tests::pixels::{classify, Class};

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        render: RenderArgs,
    }

    /// The pixel box of every segment end (with its radius) and leaf (its attachment and a
    /// blade's length around it) of `scene` at rest, seen by `camera` on an image `width` wide.
    fn projected_box(scene: &Scene, camera: &sylva_render::frame::Camera, width: f32) -> [f32; 4] {
        let forest = scene.sim.forest();
        tree_box(
            scene,
            camera,
            width,
            (0..forest.segment_count(), 0..forest.leaf_count()),
        )
    }

    /// [`projected_box`] of the segments and leaves in the given ranges only (one tree's).
    fn tree_box(
        scene: &Scene,
        camera: &sylva_render::frame::Camera,
        width: f32,
        (segments, leaves): (std::ops::Range<usize>, std::ops::Range<usize>),
    ) -> [f32; 4] {
        let (pose, forest) = (scene.sim.pose(), scene.sim.forest());
        let mut points = Vec::new();
        let dirs = [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z];
        for i in segments {
            let r = forest.seg.radius_base[i];
            for p in [pose.base[i], pose.tip(i, forest.seg.length[i])] {
                points.extend(dirs.map(|d| p + d * r));
            }
        }
        for j in leaves {
            let (p, l) = (pose.leaf_pos[j], forest.leaf.length_m(j) * 1.01);
            points.extend(dirs.map(|d| p + d * l));
        }
        let mut b = [f32::MAX, f32::MAX, f32::MIN, f32::MIN];
        for p in points {
            let (x, y, _) = camera.project(p, width).expect("the tree is in front of the camera");
            b = [b[0].min(x), b[1].min(y), b[2].max(x), b[3].max(y)];
        }
        b
    }

    /// `--camera AZIMUTH,ELEVATION,DISTANCE` puts the camera on that bearing, at that
    /// elevation and distance from the scene's centre, and the rendered tree lies where the
    /// projection with that camera puts it, filling its projected box (a camera left at the
    /// framing default, or placed on another bearing or distance, puts it elsewhere).
    #[test]
    fn the_camera_option_puts_a_known_tree_where_the_projection_says() {
        let (w, h) = (320u32, 240u32);
        for (camera, bearing) in [
            ("90,10,0", Vec3::X),
            ("0,30,45", Vec3::NEG_Z),
            ("225,-5,70", Vec3::new(-1.0, 0.0, 1.0)),
        ] {
            let args = [
                "render",
                "--species",
                "sassafras",
                "--wind",
                "0",
                "--wind-model",
                "uniform",
                "--frames",
                "1",
                "--size",
                "320x240",
                "--camera",
                camera,
                "--out",
                "unused.png",
            ];
            let a = Cli::try_parse_from(args).unwrap().render;
            let place = a.scene.camera.unwrap();
            let scene = Scene::from_args(&a.scene).unwrap();
            let cam = scene.camera_at(a.scene.camera, w as f32 / h as f32, h as f32).camera();
            // The eye: on the bearing (north is −z, east +x), at the elevation and distance.
            let offset = cam.eye - cam.target;
            let flat = Vec3::new(offset.x, 0.0, offset.z).normalize();
            assert!(flat.dot(bearing.normalize()) > 0.9999, "{camera}: eye offset {offset}");
            let elevation = offset.y.atan2(Vec3::new(offset.x, 0.0, offset.z).length()).to_degrees();
            assert!(
                (elevation - place.elevation).abs() < 0.01,
                "{camera}: elevation {elevation}"
            );
            if place.distance > 0.0 {
                assert!(
                    (offset.length() - place.distance).abs() < 1e-3,
                    "{camera}: {}",
                    offset.length()
                );
            }
            let b = projected_box(&scene, &cam, w as f32);
            let image = render_scene(&a).unwrap();
            let (mut inside, mut outside) = (0usize, 0usize);
            let mut seen = [f32::MAX, f32::MAX, f32::MIN, f32::MIN];
            for y in 0..h {
                for x in 0..w {
                    if classify(image.pixel(x, y)) == Class::Other {
                        continue;
                    }
                    let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
                    if fx >= b[0] - 2.0 && fx <= b[2] + 2.0 && fy >= b[1] - 2.0 && fy <= b[3] + 2.0 {
                        inside += 1;
                        seen = [seen[0].min(fx), seen[1].min(fy), seen[2].max(fx), seen[3].max(fy)];
                    } else {
                        outside += 1;
                    }
                }
            }
            eprintln!("{camera}: box {b:?}, tree pixels inside {inside} spanning {seen:?}, outside {outside}");
            assert!(inside > 200, "{camera}: {inside} tree pixels");
            assert!(
                outside * 100 <= inside,
                "{camera}: {outside} tree pixels outside the box, {inside} inside"
            );
            // The tree fills its box: its pixels reach most of the way across and down it.
            let (bw, bh) = (b[2].min(w as f32) - b[0].max(0.0), b[3].min(h as f32) - b[1].max(0.0));
            assert!(
                seen[2] - seen[0] > 0.7 * bw,
                "{camera}: pixels span {seen:?} of the box {b:?}"
            );
            assert!(
                seen[3] - seen[1] > 0.7 * bh,
                "{camera}: pixels span {seen:?} of the box {b:?}"
            );
        }
    }

    /// A scene file with three species from three formats (an Arbaro XML file by an absolute
    /// path, a tree-gen file beside the scene file by a relative one, a built-in Sylva species)
    /// renders each tree where the file puts it: tree pixels lie inside the boxes the trees'
    /// rest poses project to with the file's camera, each box holds many of them, and moving
    /// a tree in the file moves its pixels.
    #[test]
    fn a_scene_file_renders_each_tree_where_it_stands() {
        let dir = std::env::temp_dir().join(format!("sylva-scene-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/specs");
        std::fs::copy(fixtures.join("tree-gen/little_oak.py"), dir.join("oak.py")).unwrap();
        let birch = fixtures.join("arbaro/small_birch.xml").canonicalize().unwrap();
        let scene_text = |sassafras_x: f32| {
            format!(
                "[[tree]]\nspec = {birch:?}\nposition = [-6.0, 0.0, 0.0]\n\n\
                 [[tree]]\nspec = \"oak.py\"\nposition = [0.0, 0.0, 1.0]\nseed = 3\n\n\
                 [[tree]]\nspecies = \"sassafras\"\nposition = [{sassafras_x}, 0.0, 0.0]\n\n\
                 [wind]\nspeed = 0.0\nmodel = \"uniform\"\n\n\
                 [camera]\nazimuth = 180.0\nelevation = 5.0\ndistance = 0.0\n"
            )
        };
        let (w, h) = (480u32, 240u32);
        let mut sassafras_centres = Vec::new();
        for sassafras_x in [8.0f32, 14.0] {
            let file = dir.join("forest.toml");
            std::fs::write(&file, scene_text(sassafras_x)).unwrap();
            let file_s = file.display().to_string();
            let args = [
                "render",
                &file_s,
                "--frames",
                "1",
                "--size",
                "480x240",
                "--no-collider",
                "--out",
                "unused.png",
            ];
            let a = Cli::try_parse_from(args).unwrap().render;
            let scene = Scene::from_args(&a.scene).unwrap();
            let forest = scene.sim.forest();
            assert_eq!(forest.trees.len(), 3);
            let cam = scene.camera_at(None, w as f32 / h as f32, h as f32).camera();
            let boxes: Vec<[f32; 4]> = forest
                .trees
                .iter()
                .map(|t| {
                    let (s, l) = (t.segments.clone(), t.leaves.clone());
                    tree_box(
                        &scene,
                        &cam,
                        w as f32,
                        (s.start as usize..s.end as usize, l.start as usize..l.end as usize),
                    )
                })
                .collect();
            // From the south, east is to the right: the birch (west) left of the oak, the
            // sassafras (east) right of it.
            let centre = |b: &[f32; 4]| 0.5 * (b[0] + b[2]);
            assert!(
                centre(&boxes[0]) < centre(&boxes[1]) && centre(&boxes[1]) < centre(&boxes[2]),
                "{boxes:?}"
            );
            let image = render_scene(&a).unwrap();
            let (mut per_tree, mut outside) = ([0usize; 3], 0usize);
            let mut x_sum = 0.0f64;
            for y in 0..h {
                for x in 0..w {
                    if classify(image.pixel(x, y)) == Class::Other {
                        continue;
                    }
                    let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
                    let inside =
                        |b: &[f32; 4]| fx >= b[0] - 2.0 && fx <= b[2] + 2.0 && fy >= b[1] - 2.0 && fy <= b[3] + 2.0;
                    match boxes.iter().position(inside) {
                        Some(k) => {
                            per_tree[k] += 1;
                            if k == 2 {
                                x_sum += fx as f64;
                            }
                        }
                        None => outside += 1,
                    }
                }
            }
            eprintln!(
                "sassafras at x = {sassafras_x}: boxes {boxes:?}, pixels per tree {per_tree:?}, outside {outside}"
            );
            let inside: usize = per_tree.iter().sum();
            assert!(
                per_tree.iter().all(|&n| n > 30),
                "every tree is drawn in its box: {per_tree:?}"
            );
            assert!(
                outside * 100 <= inside,
                "{outside} tree pixels outside the boxes, {inside} inside"
            );
            sassafras_centres.push(x_sum / per_tree[2] as f64);
        }
        assert!(
            sassafras_centres[1] > sassafras_centres[0] + 10.0,
            "moving the sassafras east in the file moves it right on the picture: {sassafras_centres:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
