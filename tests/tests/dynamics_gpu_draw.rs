//! The GPU dynamics drawn where they leave the pose: frames of `sylva_render::GpuOliapuram`
//! with the wind on the GPU are filled with segment and leaf indices and patched on the device
//! from the model's pose buffer (`RenderFrame::fill_device_with_jobs`, the renderer's pose
//! patch), with nothing read back, on a real Vulkan device (lavapipe without a GPU) with the
//! validation layer on; and the GPU wind downloads its grid only for readers on the CPU.
//!
//! Reference: the CPU fill (`RenderFrame::fill`) from the same pose read back. The patch does
//! the fill's arithmetic in f32 (a strided leaf's position is its segment's base moved along
//! the axis, which a shader compiler may fuse differently), so positions agree within
//! `POSITION_TOLERANCE` (20 µm, ~2 ulp of a 10 m coordinate, far below a pixel) and packed
//! orientations within one snorm16 step; radii, lengths, widths and shades are copied, so they
//! agree exactly.

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_render::frame::{Camera, FillIndex, LodSettings, RenderFrame};
use sylva_render::renderer::{Output, FRAMES_IN_FLIGHT};
use sylva_render::{vk, DrawOptions, GpuOliapuram, GpuWind, Renderer, RendererOptions};
use sylva_sim::dynamics::{DynamicsModel, ModelParts, OliapuramParams, Pose};
use sylva_sim::fluid::{FluidGrid, FluidParams, WindBall};
use sylva_sim::scene::TestForest;
use sylva_sim::wind::WindField;
use sylva_sim::{Forest, Material};
use sylva_tests::device::{assert_no_validation_errors, gpu, instance_difference as difference};

/// Largest distance between a patched position and the CPU fill's \[m\].
const POSITION_TOLERANCE: f32 = 2e-5;

/// Four small trees (300 segments, 500 leaves each) in a row.
fn forest() -> Forest {
    TestForest::new(7, 300, 500, 4, &Material::default()).unwrap().forest
}

/// A 14 m/s fluid wind over the forest with a wind ball gusting across the crowns.
fn grid(forest: &Forest) -> FluidGrid {
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for t in &forest.trees {
        lo = lo.min(t.root - Vec3::splat(t.reach));
        hi = hi.max(t.root + Vec3::splat(t.reach));
    }
    let mut p = FluidParams::over(
        Vec3::new(lo.x - 4.0, 0.0, lo.z - 4.0),
        Vec3::new(hi.x + 4.0, 1.6 * hi.y + 2.0, hi.z + 4.0),
    );
    p.cells = [24, 10, 20];
    p.border = Vec3::new(13.0, 0.0, 5.0);
    p.seed = 5;
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

/// A camera on the whole forest from `distance` times its size: near, every leaf drawn; far,
/// one leaf in a stride (each moved along its segment by the patch) and twigs dropped.
fn camera(forest: &Forest, distance: f32, height_px: f32) -> Camera {
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for t in &forest.trees {
        lo = lo.min(t.root - Vec3::splat(t.reach));
        hi = hi.max(t.root + Vec3::new(t.reach, 2.0 * t.reach, t.reach));
    }
    let size = (hi - lo).length();
    Camera::orbit(0.5 * (lo + hi), 0.4, 0.25, distance * size, 1.5, height_px)
}

/// The CPU fill of `pose` for `camera`.
fn cpu_fill(forest: &Forest, index: &FillIndex, pose: &Pose, camera: &Camera) -> RenderFrame {
    let mut f = RenderFrame::default();
    f.fill(forest, index, pose, [], camera, &LodSettings::default());
    f
}

/// Frames of the GPU model in the GPU wind are drawn from the pose on the device: over
/// several frames (near and far cameras, so leaves drawn at their own position and strided
/// leaves moved along their segments) nothing of the pose or the wind grid is read back,
/// nothing of the segments and leaves is uploaded while the camera stays still, the
/// instances the GPU drew are the CPU fill's from the pose read back afterwards, and they are
/// the last step's pose, not the one before; the frame's own instances (indices, before the
/// patch) are far from it, so the agreement comes from the patch reading the pose buffer.
#[test]
fn frames_are_drawn_from_the_pose_on_the_device_without_read_backs() {
    let gpu = gpu();
    let f = forest();
    let mut parts = ModelParts::new(f.clone());
    parts.wind = Box::new(GpuWind::new(&gpu, grid(&f)).unwrap());
    let mut m = GpuOliapuram::from_parts(&gpu, parts, OliapuramParams::for_material(&f.material)).unwrap();
    let mut renderer = Renderer::new(gpu.clone(), &RendererOptions::default()).unwrap();
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(m.phases());
    let index = FillIndex::new(&f);
    let lod = LodSettings::default();
    let cameras = [camera(&f, 0.8, 1500.0), camera(&f, 3.0, 200.0)];
    let output = Output {
        extent: vk::Extent2D {
            width: 300,
            height: 200,
        },
        present: None,
        readback: false,
    };
    let options = DrawOptions::default();
    let mut frame = RenderFrame::default();
    let draw = |renderer: &mut Renderer, m: &GpuOliapuram, frame: &mut RenderFrame, camera: &Camera| {
        frame.fill_device_with_jobs(&jobs, m.forest(), &index, m.device_pose(), [], camera, &lod);
        renderer.draw(frame, &options, &output).unwrap();
        renderer.stats().patched
    };
    let (mut all, mut strided) = (false, false);
    for k in 0..8 {
        m.step(&jobs, &timings);
        // Four frames from each camera: the first uploads the instances to patch, the others
        // (a still camera, a moving forest) upload no segment or leaf data.
        let camera = &cameras[k / 4];
        let patched = draw(&mut renderer, &m, &mut frame, camera);
        let drawn =
            frame.segments.iter().map(Vec::len).sum::<usize>() + frame.leaves.iter().map(Vec::len).sum::<usize>();
        assert_eq!(patched, drawn, "frame {k}: every segment and leaf instance is patched");
        let uploaded = renderer.stats().tree_upload_bytes;
        let expected = if k % 4 == 0 { 32 * drawn } else { 0 };
        assert_eq!(uploaded, expected, "frame {k}: segment and leaf bytes uploaded");
        all |= !frame.leaves[0].is_empty();
        strided |= frame.leaves[1..].iter().any(|l| !l.is_empty());
    }
    assert!(
        all && strided,
        "leaves drawn at their own positions ({all}) and strided ({strided})"
    );
    assert!(m.finite(), "{:?}", m.failure());
    let wind = m.wind().as_any().and_then(|a| a.downcast_ref::<GpuWind>()).unwrap();
    assert_eq!(m.downloads().count, 0, "the pose was read back while drawing");
    assert_eq!(
        wind.downloads().count,
        0,
        "the wind grid was downloaded for the GPU dynamics"
    );
    assert!(
        !wind.host_copy_current(),
        "the wind stepped on the device without a download"
    );
    // A frame holds its pose until drawn: the steps wrote other buffers meanwhile, a bounded
    // few (the frame being filled, the frames in flight, the one being written).
    assert!(
        (2..=FRAMES_IN_FLIGHT + 2).contains(&m.pose_buffers()),
        "{} pose buffers",
        m.pose_buffers()
    );

    for camera in &cameras {
        let before = m.pose().clone();
        m.step(&jobs, &timings);
        draw(&mut renderer, &m, &mut frame, camera);
        let (segs, leaves) = renderer.drawn_instances().unwrap();
        let (segs, leaves) = (segs.concat(), leaves.concat());
        let now = m.pose().clone();
        let (n, l) = (segs.len(), leaves.len());
        let flat = |r: &RenderFrame| (r.segments.concat(), r.leaves.concat());
        let (cs, cl) = flat(&cpu_fill(&f, &index, &now, camera));
        let (pos, turn) = difference((&segs, &leaves), (&cs, &cl));
        eprintln!("patched vs CPU fill: {pos:e} m, {turn} snorm steps ({n} segments, {l} leaves)");
        assert!(
            pos <= POSITION_TOLERANCE && turn <= 1,
            "patched instances differ from the CPU fill: {pos} m, {turn} steps"
        );
        // The last step's pose, not the one before it.
        let (bs, bl) = flat(&cpu_fill(&f, &index, &before, camera));
        let (stale, _) = difference((&segs, &leaves), (&bs, &bl));
        assert!(
            stale > 10.0 * POSITION_TOLERANCE,
            "the step before lies only {stale} m away"
        );
        // Unpatched (the frame's own instances) they are nowhere near.
        let (fs, fl) = flat(&frame);
        let (unpatched, _) = difference((&fs, &fl), (&cs, &cl));
        assert!(
            unpatched > 1.0,
            "the instances before the patch lie only {unpatched} m away"
        );
    }
    // Read back only when asked, once per step: the steps before the two comparisons and
    // after each (the second's "before" is the first's "after").
    assert_eq!(m.downloads().count, 3, "read back only when asked, once per step");
    drop(renderer);
    drop(m);
    assert_no_validation_errors(&gpu);
}

/// The GPU wind downloads its grid for readers on the CPU only: steps for a reader on the
/// device leave the CPU copy behind; a CPU reader's `prepare` or `detach`, or the arrows'
/// `set_host_copy`, download it first, and then it is the field the device has (the same as
/// a wind that downloaded after every step).
#[test]
fn the_gpu_wind_downloads_its_grid_only_for_readers_on_the_cpu() {
    let gpu = gpu();
    let f = forest();
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(&sylva_sim::fluid::FLUID_PHASES);
    let mut on_device = GpuWind::new(&gpu, grid(&f)).unwrap();
    let mut on_cpu = GpuWind::new(&gpu, grid(&f)).unwrap();
    let dt = on_device.fluid().unwrap().params().dt as f64;
    let same =
        |a: &GpuWind, b: &GpuWind| (0..3).all(|k| a.fluid().unwrap().velocity(k) == b.fluid().unwrap().velocity(k));
    for k in 1..=5 {
        on_device.prepare_on_device(k as f64 * dt, &timings);
        on_cpu.prepare(k as f64 * dt, &jobs, &timings);
    }
    assert_eq!(on_device.downloads().count, 0);
    assert_eq!(on_cpu.downloads().count, 5);
    assert!(!on_device.host_copy_current() && on_cpu.host_copy_current());
    assert!(!same(&on_device, &on_cpu), "the copy left behind is the initial field");
    // A reader on the CPU: downloaded first, even with no step due.
    on_device.prepare(5.0 * dt, &jobs, &timings);
    assert_eq!(on_device.downloads().count, 1);
    assert!(on_device.host_copy_current() && same(&on_device, &on_cpu));
    assert_eq!(
        on_device.sample(Vec3::new(1.0, 2.0, 1.0)),
        on_cpu.sample(Vec3::new(1.0, 2.0, 1.0))
    );
    // Steps for the device again, then the trees detach the field: downloaded first.
    for k in 6..=7 {
        on_device.prepare_on_device(k as f64 * dt, &timings);
        on_cpu.prepare(k as f64 * dt, &jobs, &timings);
    }
    assert_eq!(on_device.downloads().count, 1);
    let detached = on_device.detach(8.0 * dt).expect("a step is due");
    assert_eq!(on_device.downloads().count, 2);
    let p = Vec3::new(2.0, 3.0, 0.5);
    assert_eq!(detached.sample(p), on_cpu.sample(p));
    on_device.step_detached(&jobs, &timings);
    on_device.attach(detached);
    on_cpu.prepare(8.0 * dt, &jobs, &timings);
    assert!(same(&on_device, &on_cpu));
    // The arrows keep the copy: every step for the device downloads.
    on_device.set_host_copy(true);
    let before = on_device.downloads().count;
    for k in 9..=11 {
        on_device.prepare_on_device(k as f64 * dt, &timings);
        on_cpu.prepare(k as f64 * dt, &jobs, &timings);
    }
    assert_eq!(on_device.downloads().count, before + 3);
    assert!(same(&on_device, &on_cpu));
    assert!(on_device.downloads().bytes >= on_device.downloads().count * 4 * 24 * 10 * 20);
    assert!(on_device.failure().is_none() && on_cpu.failure().is_none());
    drop((on_device, on_cpu));
    assert_no_validation_errors(&gpu);
}

/// A frame holds the pose it was filled with: the model steps on (writing other pose buffers)
/// before the frame is drawn, and the frame still shows the pose of its own step, not the
/// newest one (which lies well away from it).
#[test]
fn a_frame_draws_the_pose_it_was_filled_with_while_the_model_steps_on() {
    let gpu = gpu();
    let f = forest();
    let mut parts = ModelParts::new(f.clone());
    parts.wind = Box::new(GpuWind::new(&gpu, grid(&f)).unwrap());
    let mut m = GpuOliapuram::from_parts(&gpu, parts, OliapuramParams::for_material(&f.material)).unwrap();
    let mut renderer = Renderer::new(gpu.clone(), &RendererOptions::default()).unwrap();
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(m.phases());
    let index = FillIndex::new(&f);
    let camera = camera(&f, 0.8, 1500.0);
    for _ in 0..3 {
        m.step(&jobs, &timings);
    }
    let mut frame = RenderFrame::default();
    frame.fill_device_with_jobs(
        &jobs,
        m.forest(),
        &index,
        m.device_pose(),
        [],
        &camera,
        &LodSettings::default(),
    );
    let then = m.pose().clone();
    for _ in 0..5 {
        m.step(&jobs, &timings);
    }
    let now = m.pose().clone();
    let output = Output {
        extent: vk::Extent2D {
            width: 300,
            height: 200,
        },
        present: None,
        readback: false,
    };
    renderer.draw(&frame, &DrawOptions::default(), &output).unwrap();
    let (segs, leaves) = renderer.drawn_instances().unwrap();
    let (segs, leaves) = (segs.concat(), leaves.concat());
    let flat = |r: &RenderFrame| (r.segments.concat(), r.leaves.concat());
    let (ts, tl) = flat(&cpu_fill(&f, &index, &then, &camera));
    let (pos, turn) = difference((&segs, &leaves), (&ts, &tl));
    assert!(
        pos <= POSITION_TOLERANCE && turn <= 1,
        "the frame's own pose: {pos} m, {turn} steps"
    );
    let (ns, nl) = flat(&cpu_fill(&f, &index, &now, &camera));
    let (newest, _) = difference((&segs, &leaves), (&ns, &nl));
    assert!(
        newest > 10.0 * POSITION_TOLERANCE,
        "the newest pose lies only {newest} m away"
    );
    assert!(m.pose_buffers() >= 2, "the steps wrote another buffer than the frame's");
    drop((renderer, frame, m));
    assert_no_validation_errors(&gpu);
}
