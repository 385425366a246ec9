//! A pose on the CPU drawn by the renderer's pose patch (`RenderFrame::fill_patched_with_jobs`):
//! the fill writes templates (segment and leaf indices and static data) only when its plan
//! changes and copies the pose into the frame (`HostPose`), and the renderer uploads the pose
//! and fills in the instances on the device (`shaders/glsl/pose_patch.comp`).
//!
//! Reference: the CPU fill (`RenderFrame::fill`) of the same pose. Two patches are held to it:
//! [`patch_on_cpu`], the templates' format as `pose_patch.comp` reads it, written out here on
//! the CPU (so the fill's side is checked without a device), and the renderer's patch on a real
//! Vulkan device (lavapipe without a GPU) with the validation layer on, read back. A patched
//! leaf is placed along its segment's axis by the segment's orientation where the simulation
//! placed it by its bend mapping, and turned by the segment's orientation times its rest in
//! f32: positions agree within `POSITION_TOLERANCE` (20 µm, far below a pixel) and packed
//! orientations within one snorm16 step; radii, lengths, widths and shades are copied, so they
//! agree exactly.

use glam::{Quat, Vec3, Vec4};
use sylva_engine::{FrameTimings, JobSystem};
use sylva_render::frame::{Camera, FillIndex, HostPose, LeafInstance, LodSettings, RenderFrame, SegmentInstance};
use sylva_render::renderer::Output;
use sylva_render::{vk, DrawOptions, Renderer, RendererOptions};
use sylva_sim::dynamics::weber::{WeberModel, WeberParams, PHASES};
use sylva_sim::dynamics::Pose;
use sylva_sim::scene::SpeciesForest;
use sylva_sim::{species, Material};
use sylva_tests::device::{assert_no_validation_errors, gpu, instance_difference as difference};

/// Largest distance between a patched position and the CPU fill's \[m\].
const POSITION_TOLERANCE: f32 = 2e-5;

/// Three quaking aspens in a gusting wind, stepped `steps` times.
fn aspens(steps: usize) -> WeberModel {
    let specs = [species::builtin("quaking_aspen").unwrap()];
    let forest = SpeciesForest::new(&specs, 3, 11, &Material::default(), 1).unwrap();
    let mut sim = WeberModel::new(forest.forest, WeberParams::default()).unwrap();
    sim.set_wind(Box::new(sylva_sim::GustingWind::new(9.0, 0.3, 0.5, 2).unwrap()));
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(&PHASES);
    for _ in 0..steps {
        sim.step(&jobs, &timings);
    }
    sim
}

/// A camera on the whole forest from `distance` times its size: near, every leaf drawn; far,
/// one leaf in a stride (placed along its segment) and twigs dropped.
fn camera(sim: &WeberModel, distance: f32) -> Camera {
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for t in &sim.forest().trees {
        lo = lo.min(t.root - Vec3::splat(0.5 * t.reach));
        hi = hi.max(t.root + Vec3::new(0.5 * t.reach, t.reach, 0.5 * t.reach));
    }
    Camera::orbit(0.5 * (lo + hi), 0.5, 0.2, distance * (hi - lo).length(), 1.5, 900.0)
}

fn cpu_fill(sim: &WeberModel, index: &FillIndex, pose: &Pose, camera: &Camera) -> RenderFrame {
    let mut f = RenderFrame::default();
    f.fill(sim.forest(), index, pose, [], camera, &LodSettings::default());
    f
}

fn rotate(q: Vec4, v: Vec3) -> Vec3 {
    Quat::from_vec4(q) * v
}

/// `shaders/glsl/pose_patch.comp` on the CPU: the instances drawn from `frame`'s templates and
/// its `HostPose` (see the shader's header for the format).
fn patch_on_cpu(frame: &RenderFrame) -> (Vec<SegmentInstance>, Vec<LeafInstance>) {
    let HostPose {
        vec4s: pose,
        segments: n,
        leaves: m,
    } = frame
        .host_pose
        .as_ref()
        .expect("a frame filled for the patch carries its pose");
    let (n, m) = (*n as usize, *m as usize);
    let v = |k: usize| Vec4::from_array(pose[k]);
    // Times 32767, truncated towards zero, saturated (`as` saturates), as the shader packs.
    let pack = |q: Vec4| (q * 32767.0).to_array().map(|x| x as i16);
    let segments = frame
        .segments
        .concat()
        .into_iter()
        .map(|mut s| {
            let i = s.base_radius[0].to_bits() as usize;
            let b = v(i);
            s.base_radius = [b.x, b.y, b.z, s.base_radius[3]];
            s.orient = pack(v(n + i));
            s
        })
        .collect();
    let leaves = frame
        .leaves
        .concat()
        .into_iter()
        .map(|mut l| {
            let (j, i, along) = (
                l.pos_length[0].to_bits() as usize,
                l.pos_length[1].to_bits(),
                l.pos_length[2],
            );
            let (p, q) = if m == 0 {
                let rest = Vec4::from_array(l.orient.map(|r| r as f32)) * (1.0 / 32767.0);
                let q = v(n + i as usize);
                let p = v(i as usize).truncate() + rotate(q, Vec3::new(0.0, along, 0.0));
                (p, (Quat::from_vec4(q) * Quat::from_vec4(rest)).into())
            } else if i == u32::MAX {
                (v(2 * n + j).truncate(), v(2 * n + m + j))
            } else {
                let q = v(n + i as usize);
                (
                    v(i as usize).truncate() + rotate(q, Vec3::new(0.0, along, 0.0)),
                    v(2 * n + m + j),
                )
            };
            l.pos_length = [p.x, p.y, p.z, l.pos_length[3]];
            l.orient = pack(q);
            l
        })
        .collect();
    (segments, leaves)
}

fn flat(f: &RenderFrame) -> (Vec<SegmentInstance>, Vec<LeafInstance>) {
    (f.segments.concat(), f.leaves.concat())
}

/// A pose turned leaf by leaf (as a model that turns its leaves gives it), each leaf by an
/// angle of its own about its blade's normal and moved 5 cm up.
fn turned(sim: &WeberModel) -> Pose {
    let forest = sim.forest();
    let mut pose = sim.pose().clone();
    let mut segment_of = vec![0; forest.leaf_count()];
    for i in 0..forest.segment_count() {
        for j in forest.leaves_of(i) {
            segment_of[j] = i;
        }
    }
    pose.leaf_orient = (0..forest.leaf_count())
        .map(|j| {
            (pose.leaf_orientation(forest, segment_of[j], j) * Quat::from_rotation_z(0.2 + (j % 7) as f32 * 0.1))
                .normalize()
        })
        .collect();
    pose.leaf_pos.iter_mut().for_each(|p| *p += Vec3::new(0.0, 0.05, 0.0));
    pose
}

/// The templates and the pose copy, patched as the shader patches them, give the CPU fill's
/// instances: rigid leaves (every leaf near, a stride far) and leaves with their own pose, on
/// 1, 2 and 3 workers. The templates are written only when the plan changes: a still camera
/// copies the pose alone (and a new pose is drawn), a moved one rewrites them; a pose with
/// removed segments is filled on the CPU.
#[test]
fn the_patch_of_a_pose_on_the_cpu_gives_the_cpu_fill() {
    let mut sim = aspens(40);
    let index = FillIndex::new(sim.forest());
    let lod = LodSettings::default();
    let (near, far) = (camera(&sim, 0.7), camera(&sim, 4.0));
    for threads in [1, 2, 3] {
        let jobs = JobSystem::new(threads).unwrap();
        let mut frame = RenderFrame::default();
        for (k, cam) in [near, near, far, far].iter().enumerate() {
            let pose = sim.pose().clone();
            frame.fill_patched_with_jobs(&jobs, sim.forest(), &index, &pose, [], cam, &lod);
            assert_eq!(
                frame.wrote_instances(),
                k % 2 == 0,
                "{threads} threads, frame {k}: templates written for a new plan only"
            );
            let host = frame.host_pose.as_ref().unwrap();
            assert_eq!((host.segments as usize, host.leaves), (sim.forest().segment_count(), 0));
            assert_eq!(
                host.vec4s.len(),
                2 * sim.forest().segment_count(),
                "rigid leaves: segments only"
            );
            let reference = cpu_fill(&sim, &index, &pose, cam);
            assert_eq!(frame.trees_drawn, reference.trees_drawn);
            let (segs, leaves) = patch_on_cpu(&frame);
            let (rs, rl) = flat(&reference);
            let (pos, turn) = difference((&segs, &leaves), (&rs, &rl));
            assert!(
                pos <= POSITION_TOLERANCE && turn <= 1,
                "{threads} threads, frame {k}: {pos} m, {turn} steps"
            );
            if k == 0 {
                assert!(!leaves.is_empty() && !segs.is_empty());
            }
            if k == 2 {
                assert!(
                    frame.leaves[0].is_empty() && leaves.len() < sim.forest().leaf_count(),
                    "far away, a stride of the leaves: {} of {}",
                    leaves.len(),
                    sim.forest().leaf_count()
                );
            }
            sim.step(&jobs, &FrameTimings::new(&PHASES));
        }
        // Leaves with their own pose: positions and orientations copied and drawn.
        let pose = turned(&sim);
        for cam in [&near, &far] {
            frame.fill_patched_with_jobs(&jobs, sim.forest(), &index, &pose, [], cam, &lod);
            let host = frame.host_pose.as_ref().unwrap();
            assert_eq!(host.leaves as usize, sim.forest().leaf_count());
            let (segs, leaves) = patch_on_cpu(&frame);
            let (rs, rl) = flat(&cpu_fill(&sim, &index, &pose, cam));
            let (pos, turn) = difference((&segs, &leaves), (&rs, &rl));
            assert!(
                pos <= POSITION_TOLERANCE && turn <= 1,
                "turned leaves: {pos} m, {turn} steps"
            );
        }
        // A plain fill in between: the next patched fill writes its templates again.
        frame.fill_with_jobs(&jobs, sim.forest(), &index, &pose, [], &near, &lod);
        assert!(frame.host_pose.is_none() && frame.wrote_instances());
        frame.fill_patched_with_jobs(&jobs, sim.forest(), &index, &pose, [], &near, &lod);
        assert!(frame.wrote_instances());
        // Removed segments: filled on the CPU, without them.
        let mut pose = sim.pose().clone();
        pose.removed = vec![false; sim.forest().segment_count()];
        let last = sim.forest().trees[2].segments.clone();
        for i in last.start as usize..last.end as usize {
            pose.removed[i] = true;
        }
        frame.fill_patched_with_jobs(&jobs, sim.forest(), &index, &pose, [], &near, &lod);
        assert!(
            frame.host_pose.is_none(),
            "a pose with removed segments is filled on the CPU"
        );
        let reference = cpu_fill(&sim, &index, &pose, &near);
        assert_eq!(
            (&frame.segments, &frame.leaves),
            (&reference.segments, &reference.leaves)
        );
    }
}

/// The renderer patches a frame filled for the patch from the pose uploaded with it, on a real
/// device with validation: the instances drawn are the CPU fill's of the frame's pose (near and
/// far), and while the camera stays still no segment or leaf data is uploaded, only the pose;
/// unpatched, the frame's own instances (indices) are nowhere near.
#[test]
fn the_renderer_draws_a_pose_on_the_cpu_through_the_patch() {
    let gpu = gpu();
    let mut sim = aspens(20);
    let mut renderer = Renderer::new(gpu.clone(), &RendererOptions::default()).unwrap();
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(&PHASES);
    let index = FillIndex::new(sim.forest());
    let lod = LodSettings::default();
    let output = Output {
        extent: vk::Extent2D {
            width: 300,
            height: 200,
        },
        present: None,
        readback: false,
    };
    let mut frame = RenderFrame::default();
    let segments = sim.forest().segment_count();
    for (k, cam) in [camera(&sim, 0.7), camera(&sim, 4.0)].iter().enumerate() {
        for still in 0..3 {
            sim.step(&jobs, &timings);
            let pose = sim.pose().clone();
            frame.fill_patched_with_jobs(&jobs, sim.forest(), &index, &pose, [], cam, &lod);
            renderer.draw(&frame, &DrawOptions::default(), &output).unwrap();
            let stats = renderer.stats();
            let instances =
                frame.segments.iter().map(Vec::len).sum::<usize>() + frame.leaves.iter().map(Vec::len).sum::<usize>();
            assert_eq!(
                stats.patched, instances,
                "camera {k}: every segment and leaf instance patched"
            );
            let templates = if still == 0 { 32 * instances } else { 0 };
            assert_eq!(
                stats.tree_upload_bytes, templates,
                "camera {k}, frame {still}: templates uploaded"
            );
            assert!(
                stats.upload_bytes >= 32 * segments,
                "the pose is uploaded: {} bytes",
                stats.upload_bytes
            );
            let (segs, leaves) = renderer.drawn_instances().unwrap();
            let (segs, leaves) = (segs.concat(), leaves.concat());
            let (rs, rl) = flat(&cpu_fill(&sim, &index, &pose, cam));
            let (pos, turn) = difference((&segs, &leaves), (&rs, &rl));
            eprintln!(
                "camera {k}, frame {still}: patched vs CPU fill {pos:e} m, {turn} snorm steps ({} segments, {} leaves)",
                segs.len(),
                leaves.len()
            );
            assert!(
                pos <= POSITION_TOLERANCE && turn <= 1,
                "patched instances differ from the CPU fill: {pos} m, {turn} steps"
            );
            let (fs, fl) = flat(&frame);
            let (unpatched, _) = difference((&fs, &fl), (&rs, &rl));
            assert!(
                unpatched > 1.0,
                "the instances before the patch lie only {unpatched} m away"
            );
        }
    }
    // Leaves with their own pose.
    let pose = turned(&sim);
    let cam = camera(&sim, 0.7);
    frame.fill_patched_with_jobs(&jobs, sim.forest(), &index, &pose, [], &cam, &lod);
    renderer.draw(&frame, &DrawOptions::default(), &output).unwrap();
    let (segs, leaves) = renderer.drawn_instances().unwrap();
    let (rs, rl) = flat(&cpu_fill(&sim, &index, &pose, &cam));
    let (pos, turn) = difference((&segs.concat(), &leaves.concat()), (&rs, &rl));
    assert!(
        pos <= POSITION_TOLERANCE && turn <= 1,
        "turned leaves: {pos} m, {turn} steps"
    );
    drop(renderer);
    assert_no_validation_errors(&gpu);
}
