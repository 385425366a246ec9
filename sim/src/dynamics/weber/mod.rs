//! Weber 2008, "Fast Simulation of Realistic Trees": every segment a rigid rod on an angular
//! spring to its parent, with one degree of freedom per plane (its absolute angle from vertical
//! in the x-y and z-y planes), solved as two separable 1D semi-implicit systems per tree (Eq. 1)
//! and recombined into 3D by the relative angle-axis mapping (Eqs. 3 and 4).
//!
//! Eq. 1's mass matrix is, by default, the exact one of the articulated tree in each plane
//! (`WeberParams::inertia`; the module `articulated` derives it and its O(n) solve); Weber's diagonal one
//! is the other option. Eq. 1 advances the state with Weber's first-order semi-implicit step or
//! Newmark's second-order average acceleration (`WeberParams::integrator`); both solve the same
//! matrix form, A = M + γh·C + γ²h²·K.
//!
//! One step, as jobs (see `docs/ARCHITECTURE.md` for what each reads and writes):
//!
//! | job        | waits for          | does |
//! |------------|--------------------|------|
//! | populate   | the previous step  | generalized forces (gravity, wind, loads carried) and Eq. 1's right-hand side for both planes |
//! | solve_x    | populate           | Δv for the x plane (direct elimination or CG), then v += Δv, Θ += y + h·(v0 + γ·Δv) |
//! | solve_z    | populate           | the same for the z plane |
//! | kinematics | solve_x, solve_z   | root outward: orientations, bases, direction vectors, leaves, and Weber's spatial collision response (into y and the pose) segment by segment; subtrees as jobs |
//!
//! With many trees each tree runs all four as one job instead (whole trees are the natural
//! jobs of a forest). The work is split by data (trees, planes, subtree blocks) and never
//! by thread count, and no floating-point sum crosses a job boundary, so the state is
//! bit-identical for any number of workers.
//!
//! [`WeberModel`] implements [`DynamicsModel`](crate::dynamics::DynamicsModel): it writes the shared [`Pose`] (leaves rigid on
//! their segments, so `Pose::leaf_orient` stays empty) and keeps its own state beside it: the
//! two planes' angles, velocities and pending displacements ([`PlaneState`]) and the
//! correction direction vectors ([`Directions`]), which the kinematics writes with the pose.
//!
//! Contacts are resolved inside the kinematics pass, each segment after its ancestors'
//! corrections, so that the published pose is free of penetration; their displacement y
//! reaches the solver in the next step exactly as Eq. 1 prescribes (Δx = h(v0 + Δv) + y),
//! which Weber's populate stage does at the start of his step.

mod articulated;
mod interface;
mod kernels;
pub mod mapping;
mod params;
mod rupture;
mod step;
mod touch;

pub use params::{InertiaKind, IntegratorKind, SolverKind, WeberParams};
pub use rupture::{grown_moments, section_radii, GROWN_MARGIN};

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

use glam::{DVec3, Quat, Vec3};
use sylva_engine::{FrameTimings, JobGraph, JobGraphBuilder, JobSystem};

use crate::collider::SphereCollider;
use crate::collision::runtime::{SelfCollision, SelfCollisionParams, SelfCollisionStats};
use crate::dynamics::breakage::BreakageState;
use crate::dynamics::debris::Debris;
use crate::dynamics::falling::{FallingLeaves, FallingParams};
use crate::dynamics::schedule::StepSchedule;
use crate::dynamics::{check_forest, split_lengths, ModelParts, Pose, PoseView, Refused};
use crate::error::SimError;
use crate::forest::Forest;
use crate::hash::StateHash;
use crate::material::DragLaw;
use crate::wind::{Calm, WindField};
use kernels::{CgWork, ContactParams, Contacts, Part, PlaneMut, PoseRef, SegLoad, TreeStatic};
use step::*;

/// Names of the timed phases, as recorded in [`FrameTimings`].
/// `kinematics` includes the contact response, which runs inside its root-outward pass.
pub const PHASES: [&str; 3] = ["populate", "solve", "kinematics"];
const POPULATE: usize = 0;
const SOLVE: usize = 1;
const KINEMATICS: usize = 2;

/// Subtree blocks are grouped into kinematics jobs of at least this many segments.
const KINEMATICS_JOB_SEGMENTS: usize = 256;

/// One plane's state over all segments.
#[derive(Clone, Debug, Default)]
pub struct PlaneState {
    /// Absolute angle in the plane \[rad\].
    pub theta: Vec<f32>,
    /// Angular velocity [rad/s].
    pub vel: Vec<f32>,
    /// Collision displacement applied to the pose and imposed in the next solve (Eq. 1's y).
    pub y: Vec<f32>,
    /// Eq. 1's right-hand side, then Δv.
    pub rhs: Vec<f32>,
    /// Newmark only: the load stiffness S of each segment's own angle this step, the
    /// stabilizing part of the loads' Jacobian that Eq. 1 takes implicitly (zero otherwise;
    /// see `IntegratorKind::Newmark`) [N·m/rad].
    pub stiff: Vec<f32>,
}

/// Writable angles and velocities of one plane, for [`WeberModel::edit_state`].
pub struct PlaneEdit<'a> {
    /// Absolute angle in the plane \[rad\].
    pub theta: &'a mut [f32],
    /// Angular velocity [rad/s].
    pub vel: &'a mut [f32],
}

/// Weber's two correction direction vectors of every segment (x plane, z plane): the tip's
/// displacement per radian of the segment's own Θx and Θz, written by the kinematics with the
/// pose. Weber's own state: the renderer reads only the [`Pose`].
pub type Directions = [Vec<Vec3>; 2];

#[derive(Default)]
struct Scratch {
    /// Per segment: the sum of the external forces on its strict descendants, the velocity of
    /// its tip, and the quadratic drag's path length and subtree sum (see `kernels::populate`).
    load: Vec<SegLoad>,
    /// A varying wind at each segment's centre and at each leaf (empty in a uniform wind).
    centre_wind: Vec<Vec3>,
    leaf_wind: Vec<Vec3>,
}

/// One tree's share of the wind samples (empty slices in a uniform wind).
struct WindScratch<'a> {
    centre: &'a mut [Vec3],
    leaf: &'a mut [Vec3],
}

/// One plane's solver scratch: the conjugate gradient's vectors (CG only; `tmp` and `mp` with
/// the articulated inertia) and the articulated elimination's (direct only).
#[derive(Default)]
struct CgBuffers {
    x: Vec<f64>,
    r: Vec<f64>,
    p: Vec<f64>,
    ap: Vec<f64>,
    tmp: Vec<DVec3>,
    mp: Vec<f64>,
    acc: Vec<[f64; 4]>,
    rho: Vec<f64>,
    /// Newmark with the direct solver: the factorisation of the step's matrix (articulated:
    /// `fac` and `blocks`; diagonal: `pivot`).
    fac: Vec<articulated::Pivot>,
    blocks: Vec<articulated::Block>,
    pivot: Vec<f64>,
}

/// One tree's share of a plane's solver scratch.
struct SolveWork<'a> {
    cg: Option<CgWork<'a>>,
    acc: &'a mut [[f64; 4]],
    rho: &'a mut [f64],
    fac: &'a mut [articulated::Pivot],
    blocks: &'a mut [articulated::Block],
    pivot: &'a mut [f64],
}

/// Everything a step reads or writes, shared by its jobs. Each piece a job writes sits behind
/// its own lock, taken once per job; the job graph orders the jobs so no lock is contended.
struct Shared {
    forest: Forest,
    params: WeberParams,
    inv_pivot: Vec<f64>,
    /// The conjugate gradient's preconditioner 1/sqrt(A_ii), per plane.
    cg_scale: [Vec<f64>; 2],
    /// u = ∂tip/∂Θ of every segment at the rest pose (the generated shape), per plane.
    rest_dir: [Vec<Vec3>; 2],
    /// W = c·m + M_out and Q = q·m + M_out of every segment (see `articulated`).
    first: Vec<f64>,
    second: Vec<f64>,
    /// The articulated factorisation (β/D, e/D, 1/D) per plane (empty with the diagonal
    /// inertia).
    fac: [Vec<articulated::Pivot>; 2],
    planes: [RwLock<PlaneState>; 2],
    pose: RwLock<Pose>,
    /// The correction direction vectors, written with the pose.
    dir: RwLock<Directions>,
    scratch: RwLock<Scratch>,
    cg: [RwLock<CgBuffers>; 2],
    /// Scratch of `articulated::factor_solve_pair` (the per-tree step with the direct solver
    /// and a matrix refactored every step), one per tree job running at a time.
    pair_pool: Mutex<Vec<articulated::PairScratch>>,
    wind: Box<dyn WindField>,
    colliders: Vec<SphereCollider>,
    phase_ns: [AtomicU64; 3],
    corrections: AtomicU64,
    cg_iterations: AtomicU64,
    cg_solves: AtomicU64,
    nonfinite: AtomicBool,
    /// Per joint, the squared bend beyond which it breaks or uproots its tree (`rupture`);
    /// infinite for the segments of broken pieces.
    limit: Vec<f32>,
    /// Per tree: a joint was over its limit at the end of the step (set by the step's jobs).
    over: Vec<AtomicBool>,
    /// The segment arrays with the broken pieces masked out, once anything broke (`rupture`);
    /// the step reads the forest's own until then.
    live: Option<rupture::Live>,
    /// Which trees step this step, and by how many steps of `params.dt` (temporal level of
    /// detail; every tree every step unless the caller set periods).
    schedule: StepSchedule,
    /// Forces on the segments' centres from outside the model this step (self-collision's
    /// response), one per segment; empty for none.
    external: Vec<Vec3>,
    /// Self-collision's contacts held as springs this step (`kernels::TreeStatic::pull`):
    /// written before the trees step, emptied after.
    pull: Vec<[f32; 2]>,
}

/// Write access for a step's job. The job graph orders the jobs, so this never waits.
fn lock<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write()
        .expect("simulation state poisoned by a panic in an earlier step")
}

/// Read access between steps (a step needs `&mut WeberModel`, so nothing writes meanwhile).
fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.try_read().expect("simulation state is readable between steps")
}

/// Running counters of a simulation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepStats {
    /// Steps taken.
    pub steps: u64,
    /// Collision corrections applied (segment passes that moved a segment out of a collider).
    pub corrections: u64,
    /// Conjugate-gradient iterations and solves (zero with the direct solver).
    pub cg_iterations: u64,
    /// Conjugate-gradient solves.
    pub cg_solves: u64,
}

/// A forest simulated with Weber's model.
pub struct WeberModel {
    sh: Shared,
    per_tree: JobGraph<Shared>,
    per_phase: JobGraph<Shared>,
    time: f64,
    stats: StepStats,
    /// What broke: the pieces gone, the counts and the debris.
    breakage: BreakageState,
    /// Each joint's wind-grown moment \[N·m\] (`rupture::grown_moments`), from the generated
    /// shape: the floor of its rupture moment.
    grown: Vec<f32>,
    /// Self-collision (Chen 2011 §5), when on: its response forces (with their held forces,
    /// `SelfCollision::with_holding`) enter Eq. 1's right-hand side as generalized forces,
    /// through `Shared::external`, and its contacts turn the segments apart (`touch`: pulled
    /// by springs through `Shared::pull`, or displaced through y).
    self_collision: Option<SelfCollision>,
    /// Scratch of `touch::hold_apart`.
    touch: touch::Scratch,
    /// The leaves that came off (`dynamics::falling`), written into the pose after the trees
    /// and the debris.
    falling: FallingLeaves,
}

impl WeberModel {
    /// Sets up the state at the forest's generated shape, at rest. Refuses invalid parameters.
    pub fn new(forest: Forest, params: WeberParams) -> Result<WeberModel, SimError> {
        WeberModel::from_parts(ModelParts::new(forest), params).map_err(|r| r.error)
    }

    /// Sets up the state at the forest's generated shape, at rest, at the parts' time, with
    /// their wind and colliders. Refuses invalid parameters, handing the parts back.
    pub fn from_parts(parts: ModelParts, params: WeberParams) -> Result<WeberModel, Box<Refused>> {
        if let Err(error) = WeberModel::check(&parts.forest, &params) {
            return Err(Box::new(Refused { error, parts }));
        }
        let ModelParts {
            forest,
            wind,
            colliders,
            time,
        } = parts;
        let mut sim = WeberModel::checked(forest, params);
        sim.time = time;
        sim.set_wind(wind);
        for c in colliders {
            sim.add_collider(c);
        }
        Ok(sim)
    }

    /// What [`new`](Self::new) refuses.
    fn check(forest: &Forest, params: &WeberParams) -> Result<(), SimError> {
        params.validate()?;
        check_forest(forest)?;
        if let Some(i) = forest
            .seg
            .stiffness
            .iter()
            .position(|k| k.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater))
        {
            return Err(SimError::param(
                "stiffness",
                forest.seg.stiffness[i],
                format!("segment {i}: springs must be stiffer than 0 N·m/rad"),
            ));
        }
        Ok(())
    }

    /// [`new`](Self::new) once [`check`](Self::check) passed.
    fn checked(forest: Forest, params: WeberParams) -> WeberModel {
        let n = forest.segment_count();
        let m = forest.leaf_count();
        let plane = || PlaneState {
            theta: vec![0.0; n],
            vel: vec![0.0; n],
            y: vec![0.0; n],
            rhs: vec![0.0; n],
            stiff: vec![0.0; n],
        };
        let mut planes = [plane(), plane()];
        shape_angles(&forest, &mut planes);
        let pose = Pose {
            base: vec![Vec3::ZERO; n],
            orient: vec![Quat::IDENTITY; n],
            leaf_pos: vec![Vec3::ZERO; m],
            leaf_orient: Vec::new(),
            removed: Vec::new(),
        };
        let dir = [vec![Vec3::ZERO; n], vec![Vec3::ZERO; n]];
        let [px, pz] = planes;
        let sh = Shared {
            forest,
            params,
            inv_pivot: Vec::new(),
            cg_scale: [Vec::new(), Vec::new()],
            rest_dir: [Vec::new(), Vec::new()],
            first: Vec::new(),
            second: Vec::new(),
            fac: [Vec::new(), Vec::new()],
            planes: [RwLock::new(px), RwLock::new(pz)],
            pose: RwLock::new(pose),
            dir: RwLock::new(dir),
            scratch: RwLock::new(Scratch {
                load: vec![SegLoad::default(); n],
                centre_wind: Vec::new(),
                leaf_wind: Vec::new(),
            }),
            cg: [RwLock::new(CgBuffers::default()), RwLock::new(CgBuffers::default())],
            pair_pool: Mutex::new(Vec::new()),
            wind: Box::new(Calm),
            colliders: Vec::new(),
            phase_ns: Default::default(),
            corrections: AtomicU64::new(0),
            cg_iterations: AtomicU64::new(0),
            cg_solves: AtomicU64::new(0),
            nonfinite: AtomicBool::new(false),
            limit: Vec::new(),
            over: Vec::new(),
            live: None,
            schedule: StepSchedule::default(),
            external: Vec::new(),
            pull: Vec::new(),
        };
        let falling = FallingLeaves::new(FallingParams::default(), &sh.forest, true)
            .expect("the default falling-leaf settings are valid");
        let mut sim = WeberModel {
            falling,
            sh,
            per_tree: per_tree_graph(),
            per_phase: per_phase_graph(),
            time: 0.0,
            stats: StepStats::default(),
            breakage: BreakageState::new(n),
            grown: Vec::new(),
            self_collision: None,
            touch: touch::Scratch::default(),
        };
        sim.sh.over = (0..sim.sh.forest.tree_count())
            .map(|_| AtomicBool::new(false))
            .collect();
        sim.sh.schedule = StepSchedule::new(sim.sh.forest.tree_count());
        sim.refresh_pose();
        sim.prepare_inertia();
        sim.prepare_solver();
        if sim.sh.forest.material.compensate_gravity {
            sim.compensate_gravity();
        }
        // After the pre-stress: a joint's limit depends on what it holds at rest, and on the
        // wind it grew in, in the generated shape (the pose now).
        {
            let pose = sim.sh.pose.read().expect("unpoisoned pose");
            sim.grown = grown_moments(&sim.sh.forest, &pose.base, &pose.orient);
        }
        sim.sh.limit = rupture::limits(&sim.sh.forest, &sim.grown);
        sim
    }

    /// Replaces the wind field (moved to the simulation's time).
    pub fn set_wind(&mut self, wind: Box<dyn WindField>) {
        drop(self.replace_wind(wind));
    }

    /// Replaces the wind field (moved to the simulation's time) and returns the one it had.
    pub fn replace_wind(&mut self, mut wind: Box<dyn WindField>) -> Box<dyn WindField> {
        wind.advance(self.time);
        std::mem::replace(&mut self.sh.wind, wind)
    }

    /// The wind field.
    pub fn wind(&self) -> &dyn WindField {
        &*self.sh.wind
    }
    /// The wind field, to change it.
    pub fn wind_mut(&mut self) -> &mut dyn WindField {
        &mut *self.sh.wind
    }

    /// Adds a collider; returns its index.
    pub fn add_collider(&mut self, mut collider: SphereCollider) -> usize {
        collider.move_to(self.time);
        self.sh.colliders.push(collider);
        self.sh.colliders.len() - 1
    }

    /// The sphere colliders.
    pub fn colliders(&self) -> &[SphereCollider] {
        &self.sh.colliders
    }

    /// The sphere colliders, to add, move or remove them.
    pub fn colliders_mut(&mut self) -> &mut Vec<SphereCollider> {
        &mut self.sh.colliders
    }

    /// Switches the linear solver.
    pub fn set_solver(&mut self, solver: SolverKind) {
        self.sh.params.solver = solver;
        self.prepare_solver();
    }

    /// Switches the mass matrix (refactors the system matrix).
    pub fn set_inertia(&mut self, inertia: InertiaKind) {
        self.sh.params.inertia = inertia;
        self.prepare_solver();
    }

    /// Switches the integrator (refactors the system matrix).
    pub fn set_integrator(&mut self, integrator: IntegratorKind) {
        self.sh.params.integrator = integrator;
        self.prepare_solver();
    }

    /// Temporal level of detail (see [`StepSchedule`]): tree `t` steps once in `periods[t]`
    /// steps, by `periods[t]·dt` (Eq. 1 with that h; its matrix is factored for that step).
    /// Refuses a list of the wrong length or a period outside 1 to
    /// [`MAX_STEP_PERIOD`](crate::dynamics::schedule::MAX_STEP_PERIOD), keeping the old.
    pub fn set_step_periods(&mut self, periods: &[u8]) -> Result<(), SimError> {
        let was = self.sh.schedule.full_rate();
        self.sh.schedule.set_periods(periods)?;
        if was != self.sh.schedule.full_rate() && !refactors_every_step(&self.sh) {
            // The scratch of a matrix factored per step is kept only while some tree needs it
            // (with Newmark or the quadratic drag law every tree needs it every step: nothing
            // to change, and no pause while the viewer's trees change level).
            self.prepare_solver();
        }
        Ok(())
    }

    /// Changes the time step (refactors the system matrix).
    pub fn set_time_step(&mut self, dt: f32) -> Result<(), SimError> {
        let params = WeberParams { dt, ..self.sh.params };
        params.validate()?;
        self.sh.params = params;
        self.prepare_solver();
        Ok(())
    }

    /// The simulation's parameters.
    pub fn params(&self) -> &WeberParams {
        &self.sh.params
    }
    /// The static data of the trees.
    pub fn forest(&self) -> &Forest {
        &self.sh.forest
    }
    /// Simulated time \[s\].
    pub fn time(&self) -> f64 {
        self.time
    }
    /// Running counters since the simulation was made.
    pub fn stats(&self) -> StepStats {
        self.stats
    }
    /// False once any angle or velocity stopped being finite.
    pub fn finite(&self) -> bool {
        !self.sh.nonfinite.load(Ordering::Relaxed) && self.breakage.debris().finite() && self.falling.finite()
    }

    /// The pose of every segment and leaf after the last step.
    pub fn pose(&self) -> PoseView<'_> {
        PoseView::Locked(read(&self.sh.pose))
    }
    /// The correction direction vectors of every segment after the last step (x plane, z plane).
    pub fn directions(&self) -> impl Deref<Target = Directions> + '_ {
        read(&self.sh.dir)
    }
    /// One plane's state (0 = x, 1 = z).
    pub fn plane(&self, k: usize) -> impl Deref<Target = PlaneState> + '_ {
        read(&self.sh.planes[k])
    }

    /// Edits the absolute angles and velocities (to bend a tree or push it), then rebuilds the
    /// pose from them.
    pub fn edit_state(&mut self, f: impl FnOnce(&Forest, [PlaneEdit<'_>; 2])) {
        let [a, b] = &mut self.sh.planes;
        let (a, b) = (
            a.get_mut().expect("unpoisoned state"),
            b.get_mut().expect("unpoisoned state"),
        );
        f(&self.sh.forest, [plane_edit(a), plane_edit(b)]);
        self.refresh_pose();
    }

    /// Turns self-collision on with `params` (its structure and rest distances read in the
    /// generated shape, `Pose::of_shape`, wherever the tree is now), or off.
    pub fn set_self_collision(&mut self, params: Option<SelfCollisionParams>) -> Result<(), SimError> {
        self.self_collision = match params {
            None => None,
            Some(p) => {
                let rest = Pose::of_shape(&self.sh.forest);
                // The held forces capped at a share of what the joints below each pair can
                // carry (`rupture::hold_caps`).
                let caps = rupture::hold_caps(&self.sh.forest, &rest, &self.sh.limit, rupture::HOLD_SHARE);
                Some(
                    SelfCollision::new(&self.sh.forest, &rest, p)?
                        .with_contacts()
                        .with_holding()
                        .with_hold_caps(&self.sh.forest, caps)?,
                )
            }
        };
        self.sh.external.clear();
        Ok(())
    }

    /// What self-collision found and cost in the last step (`None` while off).
    pub fn self_collision_stats(&self) -> Option<SelfCollisionStats> {
        self.self_collision.as_ref().map(SelfCollision::stats)
    }

    /// Puts every tree back in its generated shape, at rest, with no pending contact.
    pub fn reset(&mut self) {
        if let Some(sc) = &mut self.self_collision {
            sc.restart();
        }
        self.sh.external.clear();
        let [a, b] = &mut self.sh.planes;
        let mut planes = [
            std::mem::take(a.get_mut().expect("unpoisoned state")),
            std::mem::take(b.get_mut().expect("unpoisoned state")),
        ];
        shape_angles(&self.sh.forest, &mut planes);
        for p in &mut planes {
            p.vel.fill(0.0);
            p.y.fill(0.0);
            p.rhs.fill(0.0);
            p.stiff.fill(0.0);
        }
        let [x, z] = planes;
        *a.get_mut().expect("unpoisoned state") = x;
        *b.get_mut().expect("unpoisoned state") = z;
        if self.sh.live.take().is_some() {
            // Every joint back: the forest's arrays, their moments and factorisation.
            self.sh.limit = rupture::limits(&self.sh.forest, &self.grown);
            self.refresh_moments();
            self.prepare_solver();
        }
        for o in &self.sh.over {
            o.store(false, Ordering::Relaxed);
        }
        self.sh.schedule.catch_up();
        self.breakage.clear();
        self.falling.reset(&mut lock(&self.sh.pose));
        self.refresh_pose();
        let sh = &self.sh;
        self.breakage.debris().write_pose(&sh.forest, &mut lock(&sh.pose));
    }

    /// The leaves that came off their twigs (`dynamics::falling`).
    pub fn falling(&self) -> &FallingLeaves {
        &self.falling
    }

    /// Detaches `count` attached leaves, falling from the next step on; returns how many
    /// (`DynamicsModel::drop_leaves`).
    pub fn drop_leaves(&mut self, count: usize) -> Result<usize, SimError> {
        let pose = read(&self.sh.pose);
        self.falling.drop_leaves(count, &self.sh.forest, &pose)
    }

    /// The broken pieces and uprooted trees, falling and lying as free rigid bodies.
    pub fn debris(&self) -> &Debris {
        self.breakage.debris()
    }

    /// Branches broken off since the last reset.
    pub fn branches_broken(&self) -> usize {
        self.breakage.branches_broken()
    }

    /// Trees uprooted since the last reset.
    pub fn trees_uprooted(&self) -> usize {
        self.breakage.trees_uprooted()
    }

    /// Whether segment `i` belongs to a piece broken off or to an uprooted tree (it left the
    /// model for the debris).
    pub fn in_piece(&self, i: usize) -> bool {
        self.breakage.in_piece(i)
    }

    /// Whether segment `i` still hangs from its parent (a root: stands on its roots): false
    /// for the first segment of a piece broken off and for an uprooted tree's root.
    pub fn attached(&self, i: usize) -> bool {
        self.breakage.attached(i)
    }

    /// What broke: the pieces gone, the counts and the debris.
    pub fn breakage_state(&self) -> &BreakageState {
        &self.breakage
    }

    /// The bending moment joint `i` carries after the last step \[N·m\]: its spring's torque,
    /// the beam's bending moment (see `rupture`), pre-stress included.
    pub fn joint_moment(&self, i: usize) -> f32 {
        let (px, pz) = (self.plane(0), self.plane(1));
        rupture::moment(&self.sh.forest, [&px.theta, &pz.theta], [&px.y, &pz.y], i)
    }

    /// Kinetic energy in the model's generalized coordinates with the mass matrix the
    /// simulation uses, ½·(vxᵀ·M^x·vx + vzᵀ·M^z·vz) \[J\]: the articulated matrix (every rod's
    /// energy with its velocity built from its ancestors', see `articulated`) or Weber's
    /// diagonal one, ½·Σ I·(vx² + vz²).
    pub fn kinetic_energy(&self) -> f64 {
        let (px, pz) = (self.plane(0), self.plane(1));
        let s = &self.sh.forest.seg;
        match self.sh.params.inertia {
            InertiaKind::Diagonal => (0..s.length.len())
                .map(|i| {
                    let inertia = self.sh.live.as_ref().map_or(s.inertia[i], |l| l.inertia[i]) as f64;
                    0.5 * inertia * ((px.vel[i] as f64).powi(2) + (pz.vel[i] as f64).powi(2))
                })
                .sum(),
            InertiaKind::Articulated => {
                let mut tmp = vec![DVec3::ZERO; s.length.len()];
                let mut total = 0.0;
                for t in 0..self.sh.forest.tree_count() {
                    let ts = tree_static(&self.sh, t);
                    let r = seg_range(&self.sh, t);
                    for (k, pl) in [&px, &pz].into_iter().enumerate() {
                        total += articulated::kinetic_energy(
                            &ts,
                            &self.sh.rest_dir[k][r.clone()],
                            &pl.vel[r.clone()],
                            &mut tmp,
                        );
                    }
                }
                total
            }
        }
    }

    /// Energy stored in the joint springs, ½·Σ k·(Θ_i + y_i - Θ_p - y_p - R_i)² over both planes \[J\].
    pub fn spring_energy(&self) -> f64 {
        let (px, pz) = (self.plane(0), self.plane(1));
        let s = &self.sh.forest.seg;
        let mut total = 0.0;
        for i in 0..s.length.len() {
            for (k, pl) in [&px, &pz].into_iter().enumerate() {
                let parent = match s.parent[i] {
                    crate::forest::NO_PARENT => 0.0,
                    p => (pl.theta[p as usize] + pl.y[p as usize]) as f64,
                };
                let bend = (pl.theta[i] + pl.y[i]) as f64 - parent - s.rest[k][i] as f64;
                total += 0.5 * s.stiffness[i] as f64 * bend * bend;
            }
        }
        total
    }

    /// Largest |Θ + y| over all segments and both planes \[rad\].
    pub fn max_abs_angle(&self) -> f32 {
        let (px, pz) = (self.plane(0), self.plane(1));
        (0..px.theta.len())
            .map(|i| (px.theta[i] + px.y[i]).abs().max((pz.theta[i] + pz.y[i]).abs()))
            .fold(0.0, f32::max)
    }

    /// Largest bend of a joint away from the generated shape, |relative angle - shape| \[rad\].
    pub fn max_deflection(&self) -> f32 {
        let (px, pz) = (self.plane(0), self.plane(1));
        let s = &self.sh.forest.seg;
        let mut worst = 0.0f32;
        for i in 0..px.theta.len() {
            for (k, pl) in [&px, &pz].into_iter().enumerate() {
                let parent = match s.parent[i] {
                    crate::forest::NO_PARENT => 0.0,
                    p => pl.theta[p as usize] + pl.y[p as usize],
                };
                worst = worst.max((pl.theta[i] + pl.y[i] - parent - s.shape[k][i]).abs());
            }
        }
        worst
    }

    /// FNV-1a hash of the bit patterns of every angle, velocity and pending displacement.
    pub fn state_hash(&self) -> u64 {
        let mut h = StateHash::new();
        for k in 0..2 {
            let pl = self.plane(k);
            h.add(pl.theta.iter().chain(&pl.vel).chain(&pl.y).copied());
        }
        self.breakage.hash_state(&mut h);
        self.falling.hash_state(&mut h);
        h.finish()
    }

    /// Bytes of simulation state in memory: the forest's static arrays, the solver's
    /// factorisation and scratch, the dynamic state and the pose (capacities, not lengths).
    pub fn heap_bytes(&self) -> usize {
        use crate::dynamics::vec_bytes as b;
        let sh = &self.sh;
        let mut total = sh.forest.heap_bytes() + b(&sh.inv_pivot) + b(&sh.first) + b(&sh.second);
        for k in 0..2 {
            let pl = self.plane(k);
            total += b(&pl.theta) + b(&pl.vel) + b(&pl.y) + b(&pl.rhs) + b(&pl.stiff);
            total += b(&sh.cg_scale[k]) + b(&sh.rest_dir[k]) + b(&sh.fac[k]);
            let cg = read(&sh.cg[k]);
            total += b(&cg.x) + b(&cg.r) + b(&cg.p) + b(&cg.ap) + b(&cg.tmp) + b(&cg.mp) + b(&cg.acc) + b(&cg.rho);
            total += b(&cg.fac) + b(&cg.blocks) + b(&cg.pivot);
        }
        if let Ok(pool) = sh.pair_pool.lock() {
            total += pool.iter().map(articulated::PairScratch::bytes).sum::<usize>();
        }
        total += self.pose().heap_bytes();
        let dir = self.directions();
        total += b(&dir[0]) + b(&dir[1]);
        let scratch = read(&self.sh.scratch);
        total += b(&sh.limit)
            + b(&sh.over)
            + sh.schedule.heap_bytes()
            + self.breakage.heap_bytes()
            + self.falling.heap_bytes()
            + sh.live.as_ref().map_or(0, |l| l.heap_bytes());
        total + b(&scratch.load) + b(&scratch.centre_wind) + b(&scratch.leaf_wind)
    }

    /// Advances one time step. Phase times (work time, summed over threads) are added to the
    /// phases of `timings` named in [`PHASES`], where it has them.
    pub fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        let h = self.sh.params.dt as f64;
        // The trees step from their own pose, the falling leaves' taken out.
        self.falling.unwrite(&mut lock(&self.sh.pose));
        // Forces are taken at the start of the step; contacts against the colliders where they
        // are at its end, where the new pose is.
        self.sh.wind.prepare(self.time, jobs, timings);
        for c in &mut self.sh.colliders {
            c.move_to(self.time + h);
        }
        for ns in &self.sh.phase_ns {
            ns.store(0, Ordering::Relaxed);
        }
        self.sh.schedule.plan(self.stats.steps);
        if let Some(sc) = &mut self.self_collision {
            // The response to the pose the step starts from (Chen Fig. 1.1: collisions are
            // handled before the forces are summed).
            let mut ext = std::mem::take(&mut self.sh.external);
            ext.clear();
            ext.resize(self.sh.forest.segment_count(), Vec3::ZERO);
            let pose = self.sh.pose.read().expect("unpoisoned pose");
            // The pieces broken off take no part.
            sc.set_attached(&self.sh.forest, |i| self.breakage.attached(i));
            sc.step(jobs, &self.sh.forest, &pose, self.sh.params.dt, &mut ext);
            // The pairs still closer than their rest length, turned apart (`touch`): pulled by
            // springs the solve takes implicitly where A is factored each step, else through y
            // as Weber holds a segment out of a collider.
            let springs = refactors_every_step(&self.sh);
            if !sc.contacts().is_empty() {
                let [a, b] = &self.sh.planes;
                let (mut a, mut b) = (lock(a), lock(b));
                let (a, b) = (&mut *a, &mut *b);
                touch::hold_apart(
                    &self.sh.forest,
                    sc.contacts(),
                    &pose,
                    ([&a.theta, &b.theta], &self.sh.limit),
                    ([&mut a.y, &mut b.y], [&mut a.vel, &mut b.vel]),
                    springs.then_some(&mut self.sh.pull),
                    &mut self.touch,
                );
            }
            drop(pose);
            self.sh.external = ext;
        }
        // Whole trees are the jobs when there are enough of them to keep every thread busy;
        // otherwise phases, planes and subtrees are. Both run the same arithmetic per tree.
        let graph = if jobs.threads() == 1 || self.sh.forest.tree_count() >= 2 * jobs.threads() {
            &self.per_tree
        } else {
            &self.per_phase
        };
        // A field that steps on the CPU takes its next step beside the trees, from the field
        // they sample (see `WindField::detach`).
        match self.sh.wind.detach(self.time + h) {
            Some(frozen) => {
                let mut wind = std::mem::replace(&mut self.sh.wind, frozen);
                let sh = &self.sh;
                jobs.scope(|s| {
                    s.spawn(|_| wind.step_detached(jobs, timings));
                    graph.run(jobs, sh, None);
                });
                let frozen = std::mem::replace(&mut self.sh.wind, wind);
                self.sh.wind.attach(frozen);
            }
            None => graph.run(jobs, &self.sh, None),
        }
        self.sh.pull.clear();
        if !std::ptr::eq(graph, &self.per_tree) {
            // The per-phase graph (a few trees) leaves the check to here.
            for t in (0..self.sh.forest.tree_count()).filter(|&t| self.sh.schedule.steps_of(t) > 0) {
                let over = self.tree_over(t);
                self.sh.over[t].store(over, Ordering::Relaxed);
            }
        }
        for t in 0..self.sh.forest.tree_count() {
            if self.sh.over[t].swap(false, Ordering::Relaxed) {
                self.break_tree(t);
            }
        }
        if self.breakage.any() {
            let sh = &self.sh;
            let debris = self.breakage.debris_mut();
            debris.step(&sh.forest, &*sh.wind, &sh.colliders, sh.params.dt, jobs);
            debris.write_pose(&sh.forest, &mut lock(&sh.pose));
        }
        let sh = &self.sh;
        self.falling
            .step(&sh.forest, &*sh.wind, sh.params.dt, jobs, &mut lock(&sh.pose));
        for (k, name) in PHASES.iter().enumerate() {
            if let Some(id) = timings.phase_id(name) {
                timings.add(
                    id,
                    std::time::Duration::from_nanos(self.sh.phase_ns[k].load(Ordering::Relaxed)),
                );
            }
        }
        self.time += h;
        self.stats.steps += 1;
        self.stats.corrections += self.sh.corrections.swap(0, Ordering::Relaxed);
        self.stats.cg_iterations += self.sh.cg_iterations.swap(0, Ordering::Relaxed);
        self.stats.cg_solves += self.sh.cg_solves.swap(0, Ordering::Relaxed);
    }

    /// Δv that `solver` gives for the current state, both planes, without advancing: the same
    /// right-hand side for every solver, so solvers can be compared.
    pub fn trial_delta_v(&mut self, solver: SolverKind) -> [Vec<f32>; 2] {
        self.trial(Some(solver))
    }

    /// The right-hand side of Eq. 1 for the current state, both planes, without advancing.
    pub fn trial_rhs(&mut self) -> [Vec<f32>; 2] {
        self.trial(None)
    }

    fn trial(&mut self, solver: Option<SolverKind>) -> [Vec<f32>; 2] {
        let saved = self.sh.params.solver;
        if let Some(solver) = solver {
            self.set_solver(solver);
        }
        let sh = &self.sh;
        let [a, b] = &sh.planes;
        let (mut pa, mut pb) = (lock(a), lock(b));
        let pose = lock(&sh.pose);
        let dir = lock(&sh.dir);
        let mut scratch = lock(&sh.scratch);
        let [ca, cb] = &sh.cg;
        let (mut ca, mut cb) = (lock(ca), lock(cb));
        let Scratch {
            load,
            centre_wind,
            leaf_wind,
        } = &mut *scratch;
        let mut winds = wind_per_tree(centre_wind, leaf_wind, sh);
        for (t, wind) in winds.iter_mut().enumerate() {
            let ts = tree_static(sh, t);
            let r = seg_range(sh, t);
            let (mut px, mut pz) = (plane_mut(&mut pa, r.clone()), plane_mut(&mut pb, r.clone()));
            populate_tree(
                sh,
                &ts,
                [&mut px, &mut pz],
                pose_ref(&pose, &dir, r.clone(), leaf_range(sh, t)),
                &mut load[r.clone()],
                wind,
                sh.params.dt,
                true,
            );
            if solver.is_some() {
                solve_plane(sh, &ts, 0, &mut px, solve_work(&mut ca, r.clone()), sh.params.dt);
                solve_plane(sh, &ts, 1, &mut pz, solve_work(&mut cb, r.clone()), sh.params.dt);
            }
        }
        // The right-hand side is scratch: the next step recomputes it.
        let out = [pa.rhs.clone(), pb.rhs.clone()];
        drop(winds);
        drop((pa, pb, pose, dir, scratch, ca, cb));
        if solver.is_some() {
            self.set_solver(saved);
        }
        out
    }

    /// Whether any joint of tree `t` carries more than it can, from the state after a step.
    fn tree_over(&self, t: usize) -> bool {
        let sh = &self.sh;
        let r = seg_range(sh, t);
        let (pa, pz) = (read(&sh.planes[0]), read(&sh.planes[1]));
        rupture::over_limit(
            &tree_static(sh, t),
            [&pa.theta[r.clone()], &pz.theta[r.clone()]],
            [&pa.y[r.clone()], &pz.y[r.clone()]],
            &sh.limit[r],
        )
    }

    /// Breaks off, at the end of a step, every piece of tree `t` whose joint carries more than
    /// its rupture moment, or uproots the tree (see `rupture`): each piece goes to the debris
    /// with its segments' velocities, and leaves the tree's equations.
    fn break_tree(&mut self, t: usize) {
        // The tree's own step (longer than dt under a temporal level of detail).
        let h = self.sh.params.dt * self.sh.schedule.steps_of(t).max(1) as f32;
        let r = seg_range(&self.sh, t);
        let (offset, len) = (r.start, r.len());
        let mut pieces: Vec<(Vec<u32>, bool)> = Vec::new();
        {
            let sh = &self.sh;
            let ts = tree_static(sh, t);
            let (pa, pz) = (read(&sh.planes[0]), read(&sh.planes[1]));
            let theta = [&pa.theta[r.clone()], &pz.theta[r.clone()]];
            let y = [&pa.y[r.clone()], &pz.y[r.clone()]];
            let over = rupture::joints_over(&ts, theta, y, &sh.limit[r.clone()]);
            if over.is_empty() {
                return;
            }
            let pose = read(&sh.pose);
            let velocity = rupture::centre_velocities(
                &ts,
                theta,
                y,
                [&pa.vel[r.clone()], &pz.vel[r.clone()]],
                (&pose.base[r.clone()], &pose.orient[r.clone()]),
                h,
            );
            for i in over {
                if self.breakage.in_piece(offset + i) {
                    continue;
                }
                let segments = rupture::piece(&sh.forest, offset, len, i, self.breakage.gone());
                let uprooted = i == 0;
                self.breakage.detach(offset + i, &segments, uprooted);
                rupture::spawn(
                    self.breakage.debris_mut(),
                    &sh.forest,
                    &segments,
                    offset,
                    &pose,
                    &velocity,
                    uprooted,
                );
                pieces.push((segments, uprooted));
            }
        }
        let forest = &self.sh.forest;
        let live = self.sh.live.get_or_insert_with(|| rupture::Live::of(forest));
        for (segments, _) in &pieces {
            rupture::mask(live, segments, h);
            for &g in segments {
                self.sh.limit[g as usize] = f32::INFINITY;
            }
            // The ghosts follow their parent's rate (absolute angles: the same rate) and carry
            // no pending displacement.
            let first = segments[0] as usize;
            let parent = forest.seg.parent[first];
            for pl in &mut self.sh.planes {
                let pl = pl.get_mut().expect("unpoisoned state");
                let v = if parent == crate::forest::NO_PARENT {
                    0.0
                } else {
                    pl.vel[parent as usize]
                };
                for &g in segments {
                    pl.vel[g as usize] = v;
                    pl.y[g as usize] = 0.0;
                }
            }
        }
        rupture::tree_inertia(forest, live, offset, len);
        self.refresh_moments();
        self.prepare_solver();
    }

    /// Recomputes the articulated moments W and Q of every segment from the (live) masses.
    fn refresh_moments(&mut self) {
        let (mut first, mut second) = (std::mem::take(&mut self.sh.first), std::mem::take(&mut self.sh.second));
        let n = self.sh.forest.segment_count();
        first.resize(n, 0.0);
        second.resize(n, 0.0);
        for t in 0..self.sh.forest.tree_count() {
            let r = seg_range(&self.sh, t);
            let ts = tree_static(&self.sh, t);
            articulated::moments(&ts, &mut first[r.clone()], &mut second[r]);
        }
        self.sh.first = first;
        self.sh.second = second;
    }

    /// Keeps what the articulated mass matrix needs from the rest pose (the generated shape,
    /// which the pose holds when this runs): the direction vectors u of both planes and each
    /// segment's W and Q.
    fn prepare_inertia(&mut self) {
        let n = self.sh.forest.segment_count();
        self.sh.rest_dir = self.sh.dir.get_mut().expect("unpoisoned state").clone();
        let (mut first, mut second) = (vec![0.0; n], vec![0.0; n]);
        for t in 0..self.sh.forest.tree_count() {
            let r = seg_range(&self.sh, t);
            let ts = tree_static(&self.sh, t);
            articulated::moments(&ts, &mut first[r.clone()], &mut second[r]);
        }
        self.sh.first = first;
        self.sh.second = second;
    }

    /// Factors A = M + γh·C + γ²h²·K for the chosen inertia, integrator and solver, and sizes the
    /// solver's scratch. Allocates; the steps do not.
    fn prepare_solver(&mut self) {
        let sh = &mut self.sh;
        let n = sh.forest.segment_count();
        let h = sh.params.integrator.gamma() * sh.params.dt;
        let articulated = sh.params.inertia == InertiaKind::Articulated;
        let cg = sh.params.solver == SolverKind::Cg;
        sh.inv_pivot = Vec::new();
        sh.fac = [Vec::new(), Vec::new()];
        sh.cg_scale = [Vec::new(), Vec::new()];
        // A's diagonal per plane: the inertia (the articulated matrix's diagonal, or Weber's
        // diagonal inertia, which equals it when |u| = l) plus the springs' and dampers' terms.
        let mut diag = [vec![0.0f64; n], vec![0.0f64; n]];
        for t in 0..sh.forest.tree_count() {
            let r = seg_range(sh, t);
            let ts = tree_static(sh, t);
            for (k, d) in diag.iter_mut().enumerate() {
                let inertia = |i: usize| {
                    if articulated {
                        sh.second[r.start + i] * (sh.rest_dir[k][r.start + i].length_squared() as f64)
                    } else {
                        ts.inertia[i] as f64
                    }
                };
                kernels::diagonal(&ts, h, inertia, &mut d[r.clone()]);
            }
        }
        // Newmark and the quadratic drag law add a diagonal to A each step (`solve_plane`); a
        // tree stepping by more than dt (temporal level of detail) factors A for its step.
        let newmark = refactors_every_step(sh) || !sh.schedule.full_rate();
        let fresh = || {
            let mut c = CgBuffers::default();
            if cg {
                for v in [&mut c.x, &mut c.r, &mut c.p, &mut c.ap] {
                    *v = vec![0.0; n];
                }
                if articulated {
                    c.tmp = vec![DVec3::ZERO; n];
                    c.mp = vec![0.0; n];
                }
            } else if articulated {
                c.acc = vec![[0.0; 4]; n];
                c.rho = vec![0.0; n];
                if newmark {
                    c.fac = vec![[0.0; 5]; n];
                    c.blocks = vec![articulated::Block::default(); n];
                }
            } else if newmark {
                c.pivot = vec![0.0; n];
            }
            c
        };
        for c in &mut sh.cg {
            *c.get_mut().unwrap() = fresh();
        }
        // The per-tree step's scratch for both planes at once: one per job running at a time,
        // each sized to the largest tree, taken from the pool by each tree's job and given back
        // (see `PairScratch`).
        let pool = sh.pair_pool.get_mut().unwrap();
        pool.clear();
        if articulated && newmark && !cg {
            let longest = sh.forest.trees.iter().map(|t| t.segments.len()).max().unwrap_or(0);
            let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
            pool.extend((0..jobs).map(|_| articulated::PairScratch::new(longest)));
        }
        if cg {
            sh.cg_scale = diag.map(|d| d.iter().map(|d| 1.0 / d.sqrt()).collect());
        } else if articulated {
            let mut blocks = vec![articulated::Block::default(); n];
            let mut fac = [vec![[0.0; 5]; n], vec![[0.0; 5]; n]];
            for t in 0..sh.forest.tree_count() {
                let r = seg_range(sh, t);
                let ts = tree_static(sh, t);
                for (k, f) in fac.iter_mut().enumerate() {
                    let m = articulated::MassView {
                        u: &sh.rest_dir[k][r.clone()],
                        first: &sh.first[r.clone()],
                        second: &sh.second[r.clone()],
                    };
                    articulated::factor(&ts, m, h, (&[], 0.0), &mut blocks[r.clone()], &mut f[r.clone()]);
                }
            }
            sh.fac = fac;
        } else {
            let [mut d, _] = diag;
            for t in 0..sh.forest.tree_count() {
                let r = seg_range(sh, t);
                let ts = tree_static(sh, t);
                kernels::factor(&ts, h, &mut d[r]);
            }
            sh.inv_pivot = d;
        }
    }

    /// Rebuilds the whole pose from the angles, sequentially, without contacts.
    fn refresh_pose(&mut self) {
        let sh = &self.sh;
        let (mut pa, mut pz) = (lock(&sh.planes[0]), lock(&sh.planes[1]));
        let (mut pose, mut dir) = (lock(&sh.pose), lock(&sh.dir));
        let (theta, parts) = parts_per_tree(&mut pose, &mut dir, &mut pa, &mut pz, sh);
        for (t, mut part) in parts.into_iter().enumerate() {
            let ts = tree_static(sh, t);
            let r = seg_range(sh, t);
            let th = [&theta[0][r.clone()], &theta[1][r]];
            kernels::kinematics(&ts, th, 0, ts.len(), None, &mut part, &Contacts::none());
        }
    }

    /// Pre-stresses the springs so the current shape is the equilibrium under gravity: at rest
    /// each joint's spring torque equals the generalized gravity force of its whole subtree,
    /// s_i = Σ_subtree τ_j, so the rest angle becomes shape - s/k.
    fn compensate_gravity(&mut self) {
        let sh = &mut self.sh;
        let g = sh.params.gravity;
        let dir = sh.dir.get_mut().unwrap();
        let s = &mut sh.forest.seg;
        let n = s.parent.len();
        let mut load = vec![Vec3::ZERO; n];
        let mut torque = vec![[0.0f32; 2]; n];
        for i in (0..n).rev() {
            let f = Vec3::new(0.0, -s.mass[i] * g, 0.0);
            let lever = 0.5 * f + load[i];
            let tau = [dir[0][i].dot(lever), dir[1][i].dot(lever)];
            torque[i][0] += tau[0];
            torque[i][1] += tau[1];
            if s.parent[i] != crate::forest::NO_PARENT {
                let p = s.parent[i] as usize;
                let below = load[i];
                load[p] += f + below;
                torque[p][0] += torque[i][0];
                torque[p][1] += torque[i][1];
            }
            for k in 0..2 {
                s.rest[k][i] = s.shape[k][i] - torque[i][k] / s.stiffness[i];
            }
        }
    }
}

fn plane_edit(p: &mut PlaneState) -> PlaneEdit<'_> {
    PlaneEdit {
        theta: &mut p.theta,
        vel: &mut p.vel,
    }
}

/// Absolute angles of the generated shape: sums of the relative ones down from the root.
fn shape_angles(forest: &Forest, planes: &mut [PlaneState; 2]) {
    for i in 0..forest.segment_count() {
        let p = forest.seg.parent[i];
        for (k, pl) in planes.iter_mut().enumerate() {
            let parent = if p == crate::forest::NO_PARENT {
                0.0
            } else {
                pl.theta[p as usize]
            };
            pl.theta[i] = parent + forest.seg.shape[k][i];
        }
    }
}
