//! `sylva export SPEC --animate SECONDS`: Sylva's simulation of the tree in a gusting wind,
//! baked into a glTF skin animation that plays in any glTF viewer.
//!
//! Joints: the tree gets at most `max_joints` joints, each a segment of the skeleton. They are
//! the segments carrying the largest subtrees (ties to the earlier segment), so they form a
//! connected top of the tree containing the root: the trunk and the big limbs bend joint by
//! joint, and every other segment (a twig, a small branch) moves rigidly with its nearest
//! jointed ancestor. Every vertex belongs to one segment (`Mesh::segments`) and is bound, with
//! weight 1, to that segment's joint.
//!
//! Breakage: where the wind breaks a branch off (every model can), the piece's first segment
//! must move on its own, so it becomes a joint too (counted in the budget) and the simulation
//! runs a second time to record it; the piece's other segments move rigidly with it.
//!
//! Nodes: node 0 holds the skinned mesh; node 1 is the skeleton's root (identity), whose
//! children are the joints, each carrying its segment's world pose (translation: the segment's
//! base; rotation: its orientation, local +y along its axis). A joint's inverse bind matrix is
//! the inverse of its segment's pose in the tree's generated shape (`Pose::of_shape`), the shape
//! the mesh is built in; the nodes' own TRS is that shape too, so the file shows the still tree
//! where animation is not played.
//!
//! Animation: one sampler per joint and path (translation, rotation), linear, on keyframes at
//! exactly k / fps seconds: the simulation's step is set to divide the frame interval, and each
//! keyframe is the simulation's pose at that time. Rotations keep the sign nearest the previous
//! keyframe's, so interpolation takes the short way.

use std::cmp::Reverse;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use glam::{Mat4, Quat, Vec3};
use serde_json::json;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::dynamics::pose::Pose;
use sylva_sim::dynamics::{DynamicsModel, ModelKind};
use sylva_sim::forest::{forest_indices, Forest, TreePlacement};
use sylva_sim::wind::GustingWind;
use sylva_sim::{Material, Skeleton};

use super::glb;
use super::{build_mesh, check_export, require_glb, ExportOptions, ExportStats};
use crate::interrupt;
use crate::progress::Progress;

/// Keyframes per second when none are given.
pub const DEFAULT_FPS: u32 = 30;
/// Most keyframes per second allowed.
pub const MAX_FPS: u32 = 240;
/// Longest animation allowed \[s\].
pub const MAX_SECONDS: f64 = 600.0;
/// Joints when no budget is given: what common real-time skinning paths take in one draw.
pub const DEFAULT_MAX_JOINTS: u32 = 256;
/// Largest joint budget allowed (joint indices are 16-bit in the file).
pub const MAX_JOINTS: u32 = 4096;
/// Most bytes of keyframes (translations and rotations) an animation may hold.
pub const MAX_KEYFRAME_BYTES: u64 = 1 << 30;
/// The gusts' relative strength: the speed varies within ±50 % of the mean, as in the viewer.
const GUST: f32 = 0.5;

/// What to simulate and how to sample it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnimateOptions {
    /// Length of the animation \[s\], in `(0, MAX_SECONDS]`.
    pub seconds: f64,
    /// Keyframes per second, `1..=MAX_FPS`.
    pub fps: u32,
    /// Mean wind speed \[m/s\], gusting ±50 %.
    pub wind: f32,
    /// Direction the wind blows towards, as an angle around +y from +x \[degrees\].
    pub heading: f32,
    /// Seed of the gusts' phases.
    pub seed: u64,
    /// Joint budget, `1..=MAX_JOINTS`.
    pub max_joints: u32,
    /// The dynamics model that moves the tree.
    pub model: ModelKind,
}

impl AnimateOptions {
    /// Checks every value, naming what is allowed.
    pub fn validate(&self) -> Result<()> {
        ensure!(
            self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= MAX_SECONDS,
            "an animation of {} s is not allowed; allowed: more than 0 and at most {MAX_SECONDS} s",
            self.seconds
        );
        ensure!(
            (1..=MAX_FPS).contains(&self.fps),
            "{} keyframes per second is out of range; allowed 1..={MAX_FPS}",
            self.fps
        );
        ensure!(
            (1..=MAX_JOINTS).contains(&self.max_joints),
            "a budget of {} joints is out of range; allowed 1..={MAX_JOINTS}",
            self.max_joints
        );
        ensure!(
            self.wind.is_finite() && self.heading.is_finite(),
            "the wind's speed and heading must be finite numbers"
        );
        Ok(())
    }

    /// Keyframes in the animation: one at 0 s and one per frame interval after it.
    pub fn frames(&self) -> usize {
        (self.seconds * self.fps as f64).round().max(1.0) as usize + 1
    }
}

/// The tree's joints.
#[derive(Clone, Debug, PartialEq)]
pub struct Joints {
    /// The skeleton segment of each joint, in skeleton order (parents before children).
    pub segments: Vec<usize>,
    /// The joint each skeleton segment moves with: its own, or its nearest jointed ancestor's.
    pub of_segment: Vec<u16>,
    /// How many joints are the first segments of broken-off pieces.
    pub pieces: usize,
}

/// Chooses at most `max_joints` joints (see the module documentation): every segment of
/// `pieces` (the first segments of branches that broke off, which must move on their own), then
/// the segments carrying the largest subtrees up to the budget, the root always among them.
/// Expects a skeleton that passes `Skeleton::validate` (parents before children) and pieces
/// that are its segments, fewer than `max_joints`.
pub fn choose_joints(skeleton: &Skeleton, max_joints: u32, pieces: &[usize]) -> Joints {
    let segs = &skeleton.segments;
    let n = segs.len();
    let parent = |i: usize| segs[i].parent.map(|p| p as usize).filter(|&p| p < i);
    let mut size = vec![1usize; n];
    for i in (0..n).rev() {
        if let Some(p) = parent(i) {
            size[p] += size[i];
        }
    }
    let budget = (max_joints.clamp(1, MAX_JOINTS) as usize).min(n);
    let mut is_piece = vec![false; n];
    for &p in pieces.iter().filter(|&&p| p < n) {
        is_piece[p] = true;
    }
    let piece_count = is_piece.iter().filter(|&&b| b).count();
    // A parent's subtree is larger than each child's, so it sorts first: the top chosen holds
    // the parent of every one of its segments but the root.
    let mut top: Vec<usize> = (0..n).filter(|&i| !is_piece[i]).collect();
    top.sort_by_key(|&i| (Reverse(size[i]), i));
    top.truncate(budget.saturating_sub(piece_count).max(1));
    let mut chosen: Vec<usize> = top.into_iter().chain((0..n).filter(|&i| is_piece[i])).collect();
    chosen.sort_unstable();
    let mut of_segment = vec![u16::MAX; n];
    for (j, &s) in chosen.iter().enumerate() {
        of_segment[s] = j as u16;
    }
    for i in 0..n {
        if of_segment[i] == u16::MAX {
            of_segment[i] = parent(i).map_or(0, |p| of_segment[p]);
        }
    }
    Joints {
        segments: chosen,
        of_segment,
        pieces: piece_count,
    }
}

/// The simulated motion of the joints.
#[derive(Clone, Debug)]
pub struct Motion {
    /// Keyframe times \[s\]: k / fps.
    pub times: Vec<f32>,
    /// Each joint's pose in the generated shape (the bind pose): its segment's base and
    /// orientation.
    pub bind: Vec<(Vec3, Quat)>,
    /// Per keyframe, each joint's pose.
    pub frames: Vec<Vec<(Vec3, Quat)>>,
    /// The simulation's step \[s\] (a whole fraction of the frame interval).
    pub dt: f32,
}

/// The forest of `skeleton` alone at the origin, as the animation simulates it: the default
/// material, whose leaves the wind does not tear off (they are bound to their segments).
pub fn animation_forest(skeleton: &Skeleton) -> Result<Forest> {
    let material = Material {
        petiole_strength: f32::INFINITY,
        ..Material::default()
    };
    let placement = TreePlacement {
        skeleton,
        position: Vec3::ZERO,
    };
    Forest::build(&[placement], &material).context("cannot simulate the tree")
}

/// The simulation `bake` runs: `opts.model` on `forest`, its step the largest that divides the
/// frame interval and is no longer than the model's own, in `opts`' gusting wind.
pub fn animation_model(forest: Forest, opts: &AnimateOptions) -> Result<Box<dyn DynamicsModel>> {
    let model = opts.model;
    let mut sim = model
        .build(forest)
        .with_context(|| format!("cannot set up the {model} model"))?;
    let frame = 1.0 / opts.fps as f64;
    let substeps = (frame / sim.dt() as f64 - 1e-9).ceil().max(1.0);
    sim.set_time_step((frame / substeps) as f32)
        .with_context(|| format!("cannot step the {model} model at {} keyframes per second", opts.fps))?;
    let wind = GustingWind::new(opts.wind, opts.heading.to_radians(), GUST, opts.seed).context("--wind")?;
    sim.set_wind(Box::new(wind));
    Ok(sim)
}

/// Chooses the joints (at most `opts.max_joints`), simulates the tree for `opts.seconds` and
/// samples the joints at every keyframe. When branches break off, their first segments become
/// joints of their own (within the budget) and the simulation runs again, so the pieces fall as
/// the simulation has them; a second run that breaks other segments than the first (it cannot,
/// the models being deterministic) is an error. Stops at Ctrl-C.
pub fn bake(skeleton: &Skeleton, opts: &AnimateOptions, jobs: &JobSystem) -> Result<(Joints, Motion)> {
    opts.validate()?;
    let joints = choose_joints(skeleton, opts.max_joints, &[]);
    let (motion, pieces) = simulate(skeleton, &joints, opts, jobs, "simulating")?;
    if pieces.is_empty() {
        return Ok((joints, motion));
    }
    ensure!(
        pieces.len() < opts.max_joints as usize,
        "{} branches broke off in the wind, and each needs a joint of its own to fall, but the budget is {} joints: raise --max-joints or lower --wind",
        pieces.len(),
        opts.max_joints
    );
    let joints = choose_joints(skeleton, opts.max_joints, &pieces);
    let label = format!("simulating again with the {} broken branches as joints", pieces.len());
    let (motion, again) = simulate(skeleton, &joints, opts, jobs, &label)?;
    ensure!(
        again == pieces,
        "the simulation did not repeat itself: {} branches broke off the first time, {} the second",
        pieces.len(),
        again.len()
    );
    Ok((joints, motion))
}

/// One run of the simulation, sampling `joints`; also returns the skeleton segments whose joint
/// to their parent broke (each the first segment of a piece), in the order they broke.
fn simulate(
    skeleton: &Skeleton,
    joints: &Joints,
    opts: &AnimateOptions,
    jobs: &JobSystem,
    label: &str,
) -> Result<(Motion, Vec<usize>)> {
    let frames = opts.frames();
    let bytes = frames as u64 * joints.segments.len() as u64 * 28;
    ensure!(
        bytes <= MAX_KEYFRAME_BYTES,
        "{frames} keyframes of {} joints need {bytes} bytes; at most {MAX_KEYFRAME_BYTES} are allowed (fewer seconds, keyframes per second or joints)",
        joints.segments.len()
    );
    let index = forest_indices(skeleton);
    let mut skeleton_of = vec![0usize; index.len()];
    for (s, &f) in index.iter().enumerate() {
        skeleton_of[f as usize] = s;
    }
    let forest = animation_forest(skeleton)?;
    let shape = Pose::of_shape(&forest);
    let at = |pose: &Pose, s: usize| {
        let f = index[s] as usize;
        (pose.base[f], pose.orient[f].normalize())
    };
    let bind: Vec<(Vec3, Quat)> = joints.segments.iter().map(|&s| at(&shape, s)).collect();
    let mut sim = animation_model(forest, opts)?;
    let timings = FrameTimings::new(sim.phases());
    let frame = 1.0 / opts.fps as f64;
    let _stoppable = interrupt::Steps::begin();
    let mut progress = Progress::new(label);
    let mut motion = Motion {
        times: Vec::with_capacity(frames),
        bind,
        frames: Vec::with_capacity(frames),
        dt: sim.dt(),
    };
    let n = sim.forest().segment_count();
    let mut broken = vec![false; n];
    let mut pieces = Vec::new();
    let mut breaks_seen = 0;
    for k in 0..frames {
        let t = k as f64 * frame;
        while sim.time() < t - 0.5 * sim.dt() as f64 {
            interrupt::check()?;
            sim.step(jobs, &timings);
            if let Some(e) = sim.failure() {
                bail!("the {} model failed at {:.3} s: {e}", opts.model, sim.time());
            }
            if !sim.finite() {
                bail!(
                    "the {} model's state became non-finite at {:.3} s",
                    opts.model,
                    sim.time()
                );
            }
            // The segments are scanned only when the model reports a new break.
            let breaks = sim.breakage().map_or(0, |b| b.broken + b.uprooted);
            if breaks != breaks_seen {
                breaks_seen = breaks;
                for f in 0..n {
                    if !broken[f] && !sim.attached(f) {
                        broken[f] = true;
                        pieces.push(skeleton_of[f]);
                    }
                }
            }
        }
        let pose = sim.pose();
        let mut keys: Vec<(Vec3, Quat)> = joints.segments.iter().map(|&s| at(&pose, s)).collect();
        if let Some(prev) = motion.frames.last() {
            for (key, &(_, before)) in keys.iter_mut().zip(prev) {
                if key.1.dot(before) < 0.0 {
                    key.1 = -key.1;
                }
            }
        }
        motion.times.push(t as f32);
        motion.frames.push(keys);
        progress.update_count(k as u64 + 1, frames as u64);
    }
    progress.finish();
    Ok((motion, pieces))
}

/// What an animated export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AnimationStats {
    pub mesh: ExportStats,
    pub joints: usize,
    pub keyframes: usize,
    /// Branches that broke off (each with a joint of its own).
    pub broken: usize,
    /// The simulation's step \[s\].
    pub dt: f32,
}

/// Meshes `skeleton`, simulates it (`bake`) and writes both to `path` (.glb only) as a skinned
/// mesh with one animation, "wind".
pub fn export_animated(
    skeleton: &Skeleton,
    path: &Path,
    opts: &ExportOptions,
    anim: &AnimateOptions,
    jobs: &JobSystem,
) -> Result<AnimationStats> {
    require_glb(path, "an animation")?;
    anim.validate()
        .with_context(|| format!("cannot export to {}", path.display()))?;
    check_export(&[skeleton], path, opts)?;
    let (joints, motion) = bake(skeleton, anim, jobs)?;
    let mesh = build_mesh(skeleton, opts);
    let bytes = write_animated_glb(&mesh, &joints, &motion, path)?;
    Ok(AnimationStats {
        mesh: mesh.stats(bytes),
        joints: joints.segments.len(),
        keyframes: motion.times.len(),
        broken: joints.pieces,
        dt: motion.dt,
    })
}

/// Writes the skinned mesh, its skin and the animation (see the module documentation).
fn write_animated_glb(mesh: &super::TreeMesh, joints: &Joints, motion: &Motion, path: &Path) -> Result<u64> {
    let mut glb = glb::Glb::default();
    let tree = glb.tree(mesh, Some(&joints.of_segment), path)?;
    let count = joints.segments.len();
    let inverse_bind: Vec<f32> = motion
        .bind
        .iter()
        // The inverse of T(t)·R(q) is R(q⁻¹)·T(−t), built so its last row is exactly 0, 0, 0, 1.
        .flat_map(|&(t, q)| Mat4::from_rotation_translation(q.conjugate(), -(q.conjugate() * t)).to_cols_array())
        .collect();
    let inverse_bind = glb.floats(&inverse_bind, 16, "MAT4", None, false);
    let times = glb.floats(&motion.times, 1, "SCALAR", None, true);
    let mut nodes = vec![
        json!({ "name": "tree", "mesh": 0, "skin": 0 }),
        json!({ "name": "skeleton", "children": (2..2 + count).collect::<Vec<_>>() }),
    ];
    let mut samplers = Vec::with_capacity(2 * count);
    let mut channels = Vec::with_capacity(2 * count);
    for (j, (&segment, &(t, q))) in joints.segments.iter().zip(&motion.bind).enumerate() {
        nodes.push(json!({
            "name": format!("segment {segment}"),
            "translation": t.to_array(),
            "rotation": q.to_array(),
        }));
        let translations: Vec<f32> = motion.frames.iter().flat_map(|f| f[j].0.to_array()).collect();
        let rotations: Vec<f32> = motion.frames.iter().flat_map(|f| f[j].1.to_array()).collect();
        let node = 2 + j;
        for (path, data, components, ty) in [
            ("translation", translations, 3, "VEC3"),
            ("rotation", rotations, 4, "VEC4"),
        ] {
            let output = glb.floats(&data, components, ty, None, false);
            channels.push(json!({ "sampler": samplers.len(), "target": { "node": node, "path": path } }));
            samplers.push(json!({ "input": times, "output": output, "interpolation": "LINEAR" }));
        }
    }
    let mut document = glb::document(&[0, 1]);
    document.insert("nodes".into(), nodes.into());
    document.insert("meshes".into(), json!([tree]));
    document.insert(
        "skins".into(),
        json!([{ "name": "tree", "inverseBindMatrices": inverse_bind, "skeleton": 1,
                 "joints": (2..2 + count).collect::<Vec<_>>() }]),
    );
    document.insert(
        "animations".into(),
        json!([{ "name": "wind", "samplers": samplers, "channels": channels }]),
    );
    glb.write(document, path)
}

#[cfg(test)]
#[path = "animate_tests.rs"]
mod tests;
