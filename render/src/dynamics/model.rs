//! [`GpuOliapuram`]: Oliapuram & Kumar's model stepped by the GPU kernels, as a
//! [`DynamicsModel`] the viewer, `sylva render`, the benchmarks and the tests drive like the CPU
//! model.
//!
//! It holds a CPU [`OliapuramModel`] for what does not step: the forest, the settings and the
//! static data it exports to the device, the wind field and the colliders (held, as the CPU
//! model holds them: this model has no contact). The CPU model's own clock and state are not
//! used; the clock is this model's and the state lives on the device.
//!
//! The wind, each step, after the field is moved to the step's time:
//! - uniform: passed to the kernels as a constant;
//! - the GPU wind ([`GpuWind`]) on this model's device: the kernels sample its velocity buffer
//!   where the CPU model samples the field (each segment's centroid, each blade's centre), with
//!   the fluid grid's trilinear sampling; the step waits for the wind's timeline value on the
//!   device. Nothing of the grid is read back for the dynamics;
//! - any other field: the CPU samples it at the points the last step's pose kernel wrote (the
//!   CPU model's points) and uploads the samples.
//!
//! Which of the three a step used is never silent: [`GpuOliapuram::wind_source`] tells, and the
//! model's settings line (the overlay, the command line's log) says it in words.
//!
//! The pose and the state are read back when asked for ([`DynamicsModel::pose`],
//! [`DynamicsModel::state_hash`], [`DynamicsModel::kinetic_energy`]), once per step at most,
//! and counted ([`GpuOliapuram::downloads`]). The renderer needs none of it: it draws the
//! pose from the device buffer ([`GpuOliapuram::device_pose`]). With the GPU wind on this
//! model's device, the wind's steps skip their download of the grid too
//! ([`GpuWind::prepare_on_device`]): nothing on the CPU samples it for the trees.
//! A device error stops the model (the clock goes on, the trees keep their last pose); it is
//! reported by [`DynamicsModel::failure`] and [`DynamicsModel::finite`] turns false.
//!
//! Breakage and uprooting (the rule of `sylva_sim::dynamics::oliapuram::device`): each step's
//! kernels, after the pose, sum every subtree's loads level by level from the tips and list
//! the joints whose bending moment exceeds their limit in a small host-visible buffer. The next
//! step, which waits for this one before it records anyway, reads the count there (four bytes,
//! no copy) and, only when some joint broke, reads the state and pose back once, lets the CPU
//! model break the pieces off as its own step does (masking them, spawning them as debris from
//! the device's pose and velocities) and uploads the changed constants and state, all before
//! recording: the trees lose the piece before the step after the one that broke it, as in the
//! CPU model. The debris steps on the CPU, before each step is recorded, and its pieces'
//! segments and leaves are written into the device's pose after the pose kernel, so the
//! renderer draws them where the debris is.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use glam::{Quat, Vec3, Vec4};
use sylva_engine::{FrameTimings, JobSystem};
use sylva_shaders::{OliapuramPatch, OliapuramPush};
use sylva_sim::collider::SphereCollider;
use sylva_sim::dynamics::oliapuram::device::DeviceState;
use sylva_sim::dynamics::{
    Breakage, DynamicsModel, ModelKind, ModelParts, OliapuramModel, OliapuramParams, Pose, PoseView,
};
use sylva_sim::error::SimError;
use sylva_sim::forest::Forest;
use sylva_sim::hash::StateHash;
use sylva_sim::material::{DragLaw, DRAG_MATCH_SPEED, LEAF_RECONFIGURATION_SPEED, LEAF_VOGEL_EXPONENT};
use sylva_sim::wind::WindField;

use super::buffers::pack_breakage;
use super::driver::{Device, ReadBack};
use crate::device_pose::DevicePose;
use crate::error::{RenderError, Result};
use crate::gpu::{DownloadCounter, Downloads, Gpu};
use crate::wind::GpuWind;

/// Points the CPU samples per job.
const SAMPLE_JOB: usize = 8192;

/// A model the GPU could not be set up for: why, and the parts it was given.
pub struct GpuRefused {
    /// Why.
    pub error: RenderError,
    /// The forest, wind, colliders and clock, untouched.
    pub parts: ModelParts,
}

impl std::fmt::Debug for GpuRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuRefused({})", self.error)
    }
}

/// Where the GPU model's kernels take the wind from (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindSource {
    /// A wind uniform in space, passed to the kernels as a constant.
    Uniform,
    /// A field the CPU samples at the points the device wrote, uploaded each step (any wind
    /// other than the GPU wind on this model's device).
    HostSamples,
    /// The GPU wind's velocity buffer, read by the kernels on the device.
    Device,
}

impl WindSource {
    /// How the wind reaches the kernels, in words (the overlay and the command line's log).
    pub fn describe(self) -> &'static str {
        match self {
            WindSource::Uniform => "uniform wind passed to the device",
            WindSource::HostSamples => "wind sampled on the CPU and uploaded",
            WindSource::Device => "wind read on the device",
        }
    }
}

/// Oliapuram & Kumar's forest on the GPU. See the module docs.
pub struct GpuOliapuram {
    // Invariant: `dev` is declared (so dropped) before `cpu`. `Device`'s Drop waits for every
    // submission, and the last step may still read the GPU wind's velocity buffer, which `cpu`
    // owns (its wind field): the wind must outlive that wait.
    dev: Device,
    cpu: OliapuramModel,
    time: f64,
    /// Inertia of every segment (level order) and leaf (model order), for the kinetic energy.
    inertia: Vec<f32>,
    leaf_inertia: Vec<f32>,
    /// μ/I of every leaf.
    leaf_damping: f32,
    failure: Mutex<Option<String>>,
    /// The last read-back (`None` until read after the last step).
    cache: Mutex<Option<ReadBack>>,
    pose: RwLock<Pose>,
    /// Scratch of the CPU-sampled wind.
    points: Vec<Vec3>,
    samples: Vec<[f32; 4]>,
    /// Whether the pose in `pose` is the last step's.
    pose_fresh: AtomicBool,
    /// Where the last step's kernels took the wind from (`None` before the first step).
    last_wind: Option<WindSource>,
    /// Read-backs of the pose and state.
    downloads: DownloadCounter,
    /// Whether the steps evaluate the breakage rule (on unless switched off to measure its
    /// cost, [`set_breakage_check`](Self::set_breakage_check)).
    check_breakage: bool,
    /// Scratch of the broken pieces' pose.
    patches: Vec<OliapuramPatch>,
}

impl GpuOliapuram {
    /// The model with its default settings for the forest's material on `gpu`.
    pub fn new(gpu: &Arc<Gpu>, forest: Forest) -> Result<GpuOliapuram> {
        GpuOliapuram::with_default_params(gpu, ModelParts::new(forest)).map_err(|r| r.error)
    }

    /// [`from_parts`](Self::from_parts) with the default settings for the forest's material
    /// ([`OliapuramParams::for_material`]), as the CPU model's `ModelKind::build_from`.
    pub fn with_default_params(
        gpu: &Arc<Gpu>,
        parts: ModelParts,
    ) -> std::result::Result<GpuOliapuram, Box<GpuRefused>> {
        let params = OliapuramParams::for_material(&parts.forest.material);
        GpuOliapuram::from_parts(gpu, parts, params)
    }

    /// Sets up the model over `parts` (forest, wind, colliders, clock) with `params`, at rest in
    /// the generated shape. Refuses what the CPU model refuses, and a device that cannot hold
    /// it, handing the parts back.
    pub fn from_parts(
        gpu: &Arc<Gpu>,
        parts: ModelParts,
        params: OliapuramParams,
    ) -> std::result::Result<GpuOliapuram, Box<GpuRefused>> {
        let time = parts.time;
        let cpu = match OliapuramModel::from_parts(parts, params) {
            Ok(m) => m,
            Err(r) => {
                return Err(Box::new(GpuRefused {
                    error: RenderError::Simulation(r.error),
                    parts: r.parts,
                }))
            }
        };
        let e = cpu.export();
        let brk = pack_breakage(&cpu.breakage_constants());
        match Device::new(gpu, &e, &brk) {
            Ok(dev) => {
                let leaf_inertia = e.leaves.iter().map(|l| l.inertia).collect();
                // The CPU model's pose is the rest pose the device starts from: the pose shown
                // until the first read-back, and kept if a read-back fails (the renderer
                // indexes it by segment and leaf, so it is never empty).
                let rest = cpu.pose().clone();
                let model = GpuOliapuram {
                    dev,
                    cpu,
                    time,
                    inertia: e.inertia,
                    leaf_inertia,
                    leaf_damping: e.leaf_damping_gain,
                    failure: Mutex::new(None),
                    cache: Mutex::new(None),
                    pose: RwLock::new(rest),
                    points: Vec::new(),
                    samples: Vec::new(),
                    pose_fresh: AtomicBool::new(false),
                    last_wind: None,
                    downloads: DownloadCounter::default(),
                    check_breakage: true,
                    patches: Vec::new(),
                };
                Ok(model)
            }
            Err(error) => {
                let mut parts = Box::new(cpu).into_parts();
                parts.time = time;
                Err(Box::new(GpuRefused { error, parts }))
            }
        }
    }

    /// Blocks until every submitted step has finished; why the model failed, if it did.
    pub fn finish(&self) -> std::result::Result<(), String> {
        if let Err(e) = self.dev.wait() {
            self.fail(e);
        }
        self.failure().map_or(Ok(()), Err)
    }

    /// The device the model steps on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.dev.gpu
    }

    /// The buffer holding the pose after the last submitted step, in vec4s: segment bases
    /// `[0, n)` and orientations `[n, 2n)` in the forest's order, leaf positions
    /// `[2n, 2n + m)` and orientations `[2n + m, 2n + 2m)` in the forest's leaf order; and the
    /// timeline semaphore value a reader on the device waits for.
    pub fn pose_buffer(&self) -> (ash::vk::Buffer, (ash::vk::Semaphore, u64)) {
        (self.dev.bufs().poses.current().raw(), self.dev.timeline())
    }

    /// The pose after the last submitted step where the kernels left it, for the renderer to
    /// draw without reading it back ([`RenderFrame::fill_device_with_jobs`]): the buffer (in
    /// [`pose_buffer`](Self::pose_buffer)'s layout), not overwritten while the returned value
    /// or a clone of it exists, and the timeline value that completes it.
    ///
    /// [`RenderFrame::fill_device_with_jobs`]: crate::frame::RenderFrame::fill_device_with_jobs
    pub fn device_pose(&self) -> DevicePose {
        self.dev.device_pose()
    }

    /// Pose buffers made so far: one, plus one for each frame that held the pose while a step
    /// was due (see `pose_ring.rs`).
    pub fn pose_buffers(&self) -> usize {
        self.dev.pose_buffers()
    }

    /// The read-backs of the pose and the state so far (each copies both).
    pub fn downloads(&self) -> Downloads {
        self.downloads.get()
    }

    fn fail(&self, e: RenderError) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(format!("the GPU dynamics failed: {e}"));
        }
    }

    fn failed(&self) -> bool {
        self.failure.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Where the last step's kernels took the wind from; `None` before the first step and
    /// after a step whose wind could not be prepared (a device error, reported by
    /// [`DynamicsModel::failure`]).
    pub fn wind_source(&self) -> Option<WindSource> {
        self.last_wind
    }

    /// Where the next step's kernels will take the current wind from.
    pub fn next_wind_source(&self) -> WindSource {
        let wind = self.cpu.wind();
        if wind.uniform().is_some() {
            WindSource::Uniform
        } else if self.device_wind().is_some() {
            WindSource::Device
        } else {
            WindSource::HostSamples
        }
    }

    /// The wind as the GPU wind on this model's device, when it is one that has not failed.
    fn device_wind(&self) -> Option<&GpuWind> {
        self.cpu
            .wind()
            .as_any()
            .and_then(|a| a.downcast_ref::<GpuWind>())
            .filter(|w| w.failure().is_none() && Arc::ptr_eq(w.solver().device(), &self.dev.gpu))
    }

    /// The wind's push fields and, for the GPU wind, its timeline value; samples the wind on
    /// the CPU when it is neither uniform nor on this device (the model's settings and
    /// [`wind_source`](Self::wind_source) say so).
    fn wind_push(&mut self, jobs: &JobSystem, push: &mut OliapuramPush) -> Result<Option<(ash::vk::Semaphore, u64)>> {
        self.last_wind = None;
        let wind = self.cpu.wind();
        if let Some(u) = wind.uniform() {
            push.wind = u.extend(push.wind[3]).to_array();
            push.mode[0] = 0;
            let no_fluid = self.dev.bufs().no_fluid.raw;
            self.dev.bind_fluid(no_fluid)?;
            self.last_wind = Some(WindSource::Uniform);
            return Ok(None);
        }
        if let Some(w) = self.device_wind() {
            let fluid = w.solver();
            let field = fluid.field_buffers();
            let (origin, h) = fluid.placement();
            push.mode = [2, (field.offsets[1] / 4) as u32, (field.offsets[2] / 4) as u32, 0];
            push.cells = [field.cells[0], field.cells[1], field.cells[2], 0];
            push.origin = origin.extend(0.0).to_array();
            push.h = h.extend(0.0).to_array();
            let timeline = fluid.timeline();
            let velocity = field.velocity;
            self.dev.bind_fluid(velocity)?;
            self.last_wind = Some(WindSource::Device);
            return Ok(Some(timeline));
        }
        push.mode[0] = 1;
        let no_fluid = self.dev.bufs().no_fluid.raw;
        self.dev.bind_fluid(no_fluid)?;
        let points = self.dev.points()?;
        self.points.clear();
        self.points.extend(points.iter().map(|p| Vec3::new(p[0], p[1], p[2])));
        self.samples.resize(self.points.len(), [0.0; 4]);
        let wind = self.cpu.wind();
        jobs.scope(|s| {
            for (pts, out) in self
                .points
                .chunks_mut(SAMPLE_JOB)
                .zip(self.samples.chunks_mut(SAMPLE_JOB))
            {
                s.spawn(move |_| {
                    // The CPU model's sampling (`WindField::sample_in_place`), bit for bit.
                    wind.sample_in_place(pts);
                    for (o, p) in out.iter_mut().zip(pts.iter()) {
                        *o = p.extend(0.0).to_array();
                    }
                });
            }
        });
        self.dev.write_samples(&self.samples)?;
        self.last_wind = Some(WindSource::HostSamples);
        Ok(None)
    }

    /// Switches the breakage rule on (the default) or off. Off, nothing breaks and the steps
    /// skip its dispatches: for measuring what it costs.
    pub fn set_breakage_check(&mut self, on: bool) {
        self.check_breakage = on;
    }

    /// Makes the breakage rule's sums take one dispatch per depth level (`true`) rather than one
    /// workgroup per tree in a single dispatch (the default for forests of at most
    /// `OLIAPURAM_SUBTREE_LEVELS` levels): the same arithmetic, for the tests to compare.
    pub fn set_breakage_per_level(&mut self, on: bool) {
        self.dev.per_level = on;
    }

    /// Device time of the breakage rule's dispatches in the newest step whose timestamps were
    /// read (`None` without timestamps).
    pub fn breakage_time(&self) -> Option<Duration> {
        self.dev.breakage_time()
    }

    /// The breakage rule as the last step evaluated it, read back: every segment's and leaf's
    /// load \[N\] (segments in level order, then leaves in the model's order, as the export
    /// has them) and every joint's bending moment \[N·m\] (level order). Waits for the step.
    pub fn breakage_probe(&self) -> Result<(Vec<Vec3>, Vec<f32>)> {
        let loads = self.dev.read_breakage(true)?;
        let sums = self.dev.read_breakage(false)?;
        let n = self.dev.n as usize;
        let v3 = |c: &[f32]| Vec3::new(c[0], c[1], c[2]);
        Ok((
            loads.chunks_exact(4).map(v3).collect(),
            sums.chunks_exact(4).take(n).map(|c| c[3]).collect(),
        ))
    }

    /// The CPU model the device mirrors (its breakage counts, pieces and debris).
    pub fn cpu(&self) -> &OliapuramModel {
        &self.cpu
    }

    /// Reads the joints the last step found over their limits and, when there are any, breaks
    /// them off on the CPU from the device's state and pose and uploads what changed.
    fn apply_breakage(&mut self) -> Result<()> {
        let over = self.dev.over()?;
        if over.is_empty() {
            return Ok(());
        }
        let state = {
            let Some(cache) = self.read_back() else {
                return Ok(());
            };
            let r = cache.as_ref().expect("read back above");
            let n = self.dev.n as usize;
            let v = |k: usize| Vec3::new(r.seg_state[4 * k], r.seg_state[4 * k + 1], r.seg_state[4 * k + 2]);
            DeviceState {
                phi: (0..n).map(v).collect(),
                omega: (n..2 * n).map(v).collect(),
                psi: r.leaf_state.iter().step_by(2).copied().collect(),
                psi_dot: r.leaf_state.iter().skip(1).step_by(2).copied().collect(),
                pose: self.pose_of(r),
            }
        };
        if self.cpu.break_joints(&over, state) {
            let e = self.cpu.export();
            let brk = pack_breakage(&self.cpu.breakage_constants());
            self.dev.upload(&e, &brk, false)?;
        }
        self.stale();
        Ok(())
    }

    /// Steps the debris on the CPU and writes its pieces' pose for the next step's patch;
    /// returns the entries written.
    fn debris_patches(&mut self, jobs: &JobSystem) -> Result<u32> {
        let d = self.cpu.step_debris(jobs);
        let (n, m) = (self.dev.n, self.dev.m);
        self.patches.clear();
        let entry = |slot: [u32; 2], p: Vec3, q: Quat| OliapuramPatch {
            slot: [slot[0], slot[1], 0, 0],
            p: p.extend(0.0).to_array(),
            q: q.to_array(),
        };
        for &(i, b, q) in &d.segments {
            self.patches.push(entry([i, n + i], b, q));
        }
        for &(j, p, q) in &d.leaves {
            self.patches.push(entry([2 * n + j, 2 * n + m + j], p, q));
        }
        self.dev.write_patches(&self.patches)?;
        Ok(self.patches.len() as u32)
    }

    /// The pose in a read-back, as the CPU models hand it out.
    fn pose_of(&self, r: &ReadBack) -> Pose {
        let (n, m) = (self.dev.n as usize, self.dev.m as usize);
        let v4: &[[f32; 4]] = bytemuck::cast_slice(&r.pose);
        let v3 = |p: &[f32; 4]| Vec3::new(p[0], p[1], p[2]);
        let q = |p: &[f32; 4]| Quat::from_vec4(Vec4::from_array(*p));
        Pose {
            base: v4[..n].iter().map(v3).collect(),
            orient: v4[n..2 * n].iter().map(q).collect(),
            leaf_pos: v4[2 * n..2 * n + m].iter().map(v3).collect(),
            leaf_orient: v4[2 * n + m..2 * n + 2 * m].iter().map(q).collect(),
            removed: self.cpu.pose().removed.clone(),
        }
    }

    fn try_step(&mut self, jobs: &JobSystem) -> Result<()> {
        let mut push = OliapuramPush {
            wind: [0.0, 0.0, 0.0, self.cpu.params().dt],
            leaf: [
                self.leaf_damping,
                1.0 / DRAG_MATCH_SPEED,
                LEAF_RECONFIGURATION_SPEED,
                1.0 + LEAF_VOGEL_EXPONENT,
            ],
            ..Default::default()
        };
        let wind = self.wind_push(jobs, &mut push)?;
        // After the wind, which sets the fluid's cells.
        push.cells[3] = match self.cpu.forest().material.drag_law {
            DragLaw::Linear => 0,
            DragLaw::Quadratic => 1,
        };
        let breakage = if self.check_breakage {
            Some(self.debris_patches(jobs)?)
        } else {
            None
        };
        self.dev.step(&push, wind, breakage)
    }

    /// The last step's read-back, reading it when needed; `None` after a device error.
    fn read_back(&self) -> Option<std::sync::MutexGuard<'_, Option<ReadBack>>> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.is_none() {
            match self.dev.read_back() {
                Ok(r) => {
                    let floats = r.pose.len() + r.seg_state.len() + r.leaf_state.len();
                    self.downloads.add(4 * floats as u64);
                    *cache = Some(r);
                }
                Err(e) => {
                    self.fail(e);
                    return None;
                }
            }
        }
        Some(cache)
    }

    /// Fills the pose from the last read-back when it is stale.
    fn refresh_pose(&self) {
        if self.pose_fresh.load(Ordering::Acquire) {
            return;
        }
        let Some(cache) = self.read_back() else {
            return;
        };
        let r = cache.as_ref().expect("read back above");
        let fresh = self.pose_of(r);
        *self.pose.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        self.pose_fresh.store(true, Ordering::Release);
    }

    /// Waits until no submitted step reads the wind's buffers, and forgets the fluid buffer
    /// the descriptors point at, so the next step binds its wind's again.
    fn wait_for_wind(&mut self) {
        if let Err(e) = self.dev.wait() {
            self.fail(e);
            // Whatever is pending must not outlive the buffers it reads.
            let _ = self.dev.gpu.wait_idle();
        }
        self.dev.forget_fluid();
    }

    fn stale(&mut self) {
        *self.cache.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
        self.pose_fresh.store(false, Ordering::Release);
    }
}

impl DynamicsModel for GpuOliapuram {
    fn kind(&self) -> ModelKind {
        ModelKind::Oliapuram
    }
    fn phases(&self) -> &'static [&'static str] {
        OliapuramModel::PHASES
    }
    fn settings(&self) -> String {
        format!(
            "k_c {}, no contact, on the GPU ({}), {}",
            self.cpu.params().propagation,
            self.dev.gpu.name(),
            self.next_wind_source().describe()
        )
    }
    fn forest(&self) -> &Forest {
        self.cpu.forest()
    }
    fn dt(&self) -> f32 {
        self.cpu.params().dt
    }
    fn set_time_step(&mut self, dt: f32) -> std::result::Result<(), SimError> {
        // The constants depend on Δt: rebuilt on the CPU, then uploaded with the state.
        let old = self.cache_state();
        self.cpu.set_time_step(dt)?;
        let mut e = self.cpu.export();
        self.leaf_damping = e.leaf_damping_gain;
        if let Some((phi, omega, psi, psi_dot)) = old {
            (e.phi, e.omega, e.psi, e.psi_dot) = (phi, omega, psi, psi_dot);
        }
        let brk = pack_breakage(&self.cpu.breakage_constants());
        // The state carried over keeps its status: a non-finite one stays reported.
        if let Err(err) = self.dev.upload(&e, &brk, false) {
            self.fail(err);
        }
        self.stale();
        Ok(())
    }
    fn time(&self) -> f64 {
        self.time
    }
    fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        let h = self.dt() as f64;
        let t0 = Instant::now();
        // The last step must be done with the wind's buffers before the wind steps on (the GPU
        // wind overwrites a field two of its steps later).
        if let Err(e) = self.dev.wait() {
            self.fail(e);
        }
        // What the last step broke leaves the trees before this one.
        if self.check_breakage && !self.failed() {
            if let Err(e) = self.apply_breakage() {
                self.fail(e);
            }
        }
        // The GPU wind on this device is read there: its steps need not download the grid,
        // unless broken pieces fall through it (the debris, stepped on the CPU, samples it).
        let gpu = &self.dev.gpu;
        let debris = !self.cpu.debris().is_empty();
        match self
            .cpu
            .wind_mut()
            .as_any_mut()
            .and_then(|a| a.downcast_mut::<GpuWind>())
            .filter(|w| Arc::ptr_eq(w.solver().device(), gpu))
        {
            Some(w) if !debris => w.prepare_on_device(self.time, timings),
            Some(w) => w.prepare(self.time, jobs, timings),
            None => self.cpu.wind_mut().prepare(self.time, jobs, timings),
        }
        if !self.failed() {
            if let Err(e) = self.try_step(jobs) {
                self.fail(e);
            }
        }
        // The phases' device times of the step before this one (read when this one was
        // recorded: the device works on after `step` returns); without timestamps, the host's
        // share of the step (waiting for the previous step, sampling a CPU wind, recording and
        // submitting) as the dynamics'.
        let host = t0.elapsed();
        let times = self.dev.phase_times().unwrap_or([host, Duration::ZERO, Duration::ZERO]);
        for (name, d) in OliapuramModel::PHASES.iter().zip(times) {
            if let Some(id) = timings.phase_id(name) {
                timings.add(id, d);
            }
        }
        // The breakage rule's dispatches, as the CPU model's breakage phase.
        if let (Some(id), Some(d)) = (timings.phase_id("breakage"), self.dev.breakage_time()) {
            timings.add(id, d);
        }
        self.stale();
        self.time += h;
        for c in self.cpu.colliders_mut() {
            c.move_to(self.time);
        }
    }
    fn pose(&self) -> PoseView<'_> {
        self.refresh_pose();
        PoseView::Locked(self.pose.read().unwrap_or_else(|e| e.into_inner()))
    }
    fn reset(&mut self) {
        // Every joint back, the debris gone (the CPU model's reset), then the device's copy.
        self.cpu.reset();
        let brk = pack_breakage(&self.cpu.breakage_constants());
        let mut e = self.cpu.export();
        e.phi.fill(Vec3::ZERO);
        e.omega.fill(Vec3::ZERO);
        e.psi.fill(0.0);
        e.psi_dot.fill(0.0);
        if let Err(err) = self.dev.upload(&e, &brk, true) {
            self.fail(err);
        }
        self.stale();
    }
    fn state_hash(&self) -> u64 {
        let mut h = StateHash::new();
        if let Some(cache) = self.read_back() {
            let r = cache.as_ref().expect("read back above");
            let n = self.dev.n as usize;
            // θ' of every segment, then ω (x, y, z each), then ψ and dψ/dt: the CPU model's
            // order.
            let xyz = |range: std::ops::Range<usize>| {
                r.seg_state[4 * range.start..4 * range.end]
                    .chunks_exact(4)
                    .flat_map(|c| [c[0], c[1], c[2]])
                    .collect::<Vec<f32>>()
            };
            h.add(xyz(0..n));
            h.add(xyz(n..2 * n));
            h.add(r.leaf_state.iter().step_by(2).copied());
            h.add(r.leaf_state.iter().skip(1).step_by(2).copied());
            // What broke, as the CPU model hashes it.
            if self.cpu.branches_broken() + self.cpu.trees_uprooted() > 0 {
                h.add((0..n).map(|i| if self.cpu.in_piece(i) { 1.0 } else { 0.0 }));
                self.cpu.debris().hash_state(&mut h);
            }
        } else {
            // No state to hash (a device error): a marker, so a failed model's hash is neither
            // the hash of an empty state nor a real state's.
            h.add("the GPU dynamics failed".bytes().map(f32::from));
        }
        h.finish()
    }
    fn kinetic_energy(&self) -> f64 {
        let Some(cache) = self.read_back() else {
            return f64::NAN;
        };
        let r = cache.as_ref().expect("read back above");
        let n = self.dev.n as usize;
        let segments: f64 = (0..n)
            .map(|v| {
                let w = &r.seg_state[4 * (n + v)..4 * (n + v) + 3];
                let w2 = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) as f64;
                0.5 * self.inertia[v] as f64 * w2
            })
            .sum();
        let leaves: f64 = (0..self.leaf_inertia.len())
            .map(|j| 0.5 * self.leaf_inertia[j] as f64 * (r.leaf_state[2 * j + 1] as f64).powi(2))
            .sum();
        // The trees' and the debris's, as the CPU model's.
        segments + leaves + self.cpu.debris().kinetic_energy()
    }
    fn finite(&self) -> bool {
        if self.failed() {
            return false;
        }
        match self.dev.status() {
            Ok(s) => s == 0,
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }
    fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    /// Refused by name: the device step has no falling leaves (`sylva_sim::dynamics::falling`
    /// runs beside the CPU models only).
    fn drop_leaves(&mut self, count: usize) -> std::result::Result<usize, SimError> {
        Err(SimError::Parameter {
            name: "drop leaves",
            value: count.to_string(),
            allowed: "the oliapuram model on the GPU (--dynamics-gpu) has no falling leaves yet; on the CPU it has"
                .to_string(),
        })
    }
    fn breakage(&self) -> Option<Breakage> {
        Some(Breakage {
            broken: self.cpu.branches_broken(),
            uprooted: self.cpu.trees_uprooted(),
            debris: self.cpu.debris().len(),
        })
    }
    fn attached(&self, i: usize) -> bool {
        self.cpu.attached(i)
    }
    fn heap_bytes(&self) -> usize {
        DynamicsModel::heap_bytes(&self.cpu)
            + self.pose.read().map_or(0, |p| p.heap_bytes())
            + self.points.capacity() * size_of::<Vec3>()
            + self.samples.capacity() * size_of::<[f32; 4]>()
    }
    fn wind(&self) -> &dyn WindField {
        self.cpu.wind()
    }
    fn wind_mut(&mut self) -> &mut dyn WindField {
        // The caller may step or rebuild the wind (the GPU wind's buffers): the last step must
        // be done reading them.
        self.wait_for_wind();
        self.cpu.wind_mut()
    }
    fn replace_wind(&mut self, wind: Box<dyn WindField>) -> Box<dyn WindField> {
        // The last step may still read the old wind's velocity buffer on the device: it must be
        // done before the old wind is handed back (and perhaps dropped), and the descriptors
        // must not keep pointing at that buffer (a new one may get the same handle).
        self.wait_for_wind();
        let old = self.cpu.replace_wind(wind);
        self.cpu.wind_mut().advance(self.time);
        old
    }
    fn colliders(&self) -> &[SphereCollider] {
        self.cpu.colliders()
    }
    fn colliders_mut(&mut self) -> &mut Vec<SphereCollider> {
        self.cpu.colliders_mut()
    }
    fn into_parts(self: Box<Self>) -> ModelParts {
        let GpuOliapuram { cpu, dev, time, .. } = *self;
        drop(dev);
        let mut parts = Box::new(cpu).into_parts();
        parts.time = time;
        parts
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

impl GpuOliapuram {
    /// The state read back, to carry over a rebuild of the constants.
    #[allow(clippy::type_complexity)]
    fn cache_state(&self) -> Option<(Vec<Vec3>, Vec<Vec3>, Vec<f32>, Vec<f32>)> {
        let cache = self.read_back()?;
        let r = cache.as_ref()?;
        let n = self.dev.n as usize;
        let v = |k: usize| Vec3::new(r.seg_state[4 * k], r.seg_state[4 * k + 1], r.seg_state[4 * k + 2]);
        Some((
            (0..n).map(v).collect(),
            (n..2 * n).map(v).collect(),
            r.leaf_state.iter().step_by(2).copied().collect(),
            r.leaf_state.iter().skip(1).step_by(2).copied().collect(),
        ))
    }
}
