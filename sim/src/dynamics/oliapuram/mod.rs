//! Oliapuram & Kumar 2010, "Realtime Forest Animation in Wind" (§3 and §4): every segment a
//! rigid tapered cylinder fixed at its parent's tip and rotating about that end, and every leaf
//! a flat pseudo-branch with one degree of freedom, all stepped by one set of equations.
//!
//! The model (equation numbers are the paper's):
//! - Motion about the fixed end: N = (m·l²/3)·dω/dt with N the moment of F about the end
//!   (Eqs. 11–12), m the segment's mass with the leaves it carries.
//! - F = F_wind + K + R + T (Eq. 13): the wind S_f·σ·v at the centroid (Eq. 14), the
//!   restoration K = k·(θ - θ') towards the generated shape (Eq. 15), the axial damping
//!   R = -μ·ω·|ω| clamped so it never reverses the motion within a step (Eqs. 16–17), and the
//!   back-propagation T = -Σ k_i·K_i of the children's restorations with
//!   k_i = k_c·Th_i/Th_parent (Eqs. 18–19); k ∝ r^2.5, μ ∝ r^3.5 (Eqs. 22–23, see
//!   [`OliapuramParams`]). K, R and T are moments (k in N·m/rad, as Sylva's materials give it).
//! - θ' and ω are 3-vectors in the world's axes (§3.1.2, see `kernels` for why not the
//!   parent's); Eqs. 20–21 step them (with the angular acceleration taken at the step's end,
//!   see `kernels::step_body`), and the segment's orientation is its rest orientation, carried
//!   by its parent, rotated about the fixed end by |θ'| about θ'/|θ'|.
//! - Leaves (§4, `leaves`): the wind's component along the blade's normal turns the blade
//!   about its hinge, its one degree of freedom; small inertia (the blade's own), low μ, k a
//!   little above the thinnest branches'.
//! - No contact: the paper's trees meet no obstacle but the wind (a wall shelters them through
//!   the fluid wind field).
//!
//! Gravity. The paper neglects it: the generated shape already is the tree under its own
//! weight. Sylva keeps that shape as the rest shape and adds only what the paper drops: the
//! change of each segment's own weight moment as it swings, (c - c_rest) × m·g (a segment
//! leaning further out is pulled further down, the pendulum term m·g·|c|, which for the
//! built-in species with the default settings is at most 3 % of a segment's k, 0.3 % for the
//! median segment). When the material does not pre-stress the springs
//! (`Material::compensate_gravity` off, as in Weber's model), the whole weight moment acts and
//! each segment sags under its own weight. The weight of what a segment carries
//! reaches it only through its children's restorations (Eq. 18), as the wind does: the model
//! transmits moments between segments, not forces (which is why a joint's breakage measures
//! the moment it carries by statics, `rupture`).
//!
//! One step, as two phases (§3.2), plus the renderer's pose and the joints' breakage:
//!
//! | phase       | does |
//! |-------------|------|
//! | dynamics    | every segment and leaf: forces (children's restorations from the step's start, so every body is independent) and Eqs. 20–21 |
//! | integration | root to tips, one depth level after the other: world orientations and bases |
//! | pose        | every leaf's position and orientation (and, level by level, the segments' pose in forest order) |
//! | breakage    | every joint's bending moment by statics from the step's drag and the weights, in jobs of whole trees (skipped for a tree whose drag stays below its caps), and what breaks (`rupture`) |
//!
//! Two schedules run these phases, with the same arithmetic on the same inputs, so the same
//! bits:
//! - by groups of whole trees (`groups`, when there are at least as many groups as threads):
//!   each job takes whole groups of about an L2 cache of data and runs a group's dynamics, then
//!   its integration level by level, then its leaves' pose, while its data is in the cache; one
//!   fork and join per step. Trees do not interact, so inside every tree the order is the
//!   paper's. The dynamics update the state in place (root to tips, so that every segment reads
//!   its children's deflections and its leaves' angles before they are stepped), and the
//!   integration writes the pose directly.
//! - level by level over the whole forest (fewer groups than threads, e.g. one tree on two
//!   threads): the dynamics phase into the next state in data-split jobs over all segments and
//!   over all leaves, the integration one depth level of the whole forest at a time (jobs per
//!   level slice) into a level-ordered copy of the pose, then the pose phase.
//!
//! The model keeps the segments' state in the level order of `levels` (the whole forest's) and
//! the leaves' in the forest's leaf order (the pose's, so a group's or a run's leaves are one
//! contiguous range the leaf kernels sweep in vectorised loops); the state hash and the export
//! read the leaves in the model's leaf order, segment by segment in level order. The pose is in
//! the forest's order, and it is what the next step reads of the segments' and leaves'
//! orientations and positions. Every job reads the state of the step's start or of earlier
//! levels and writes its own slices; no floating-point sum crosses a job boundary. The state is
//! bit-identical for any number of workers and either schedule. A step allocates its jobs and,
//! by groups, each job's table of its level slices and its working room (and, once, the wind
//! sample buffers the first time the wind varies in space, and the next state and the
//! level-ordered pose the first time the level schedule runs).

pub mod device;
mod export;
mod groups;
mod interface;
mod kernels;
mod leaves;
mod levels;
mod params;
mod rupture;
#[cfg(test)]
mod tests;

pub use export::{LeafConstants, OliapuramExport, SegmentConstants};
pub use params::OliapuramParams;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use glam::{Quat, Vec3};
use sylva_engine::{FrameTimings, JobSystem};

use crate::collider::SphereCollider;
use crate::collision::runtime::{SelfCollision, SelfCollisionParams, SelfCollisionStats};
use crate::dynamics::breakage::BreakageState;
use crate::dynamics::debris::Debris;
use crate::dynamics::falling::{FallingLeaves, FallingParams};
use crate::dynamics::{check_forest, ModelParts, Pose, Refused};
use crate::error::SimError;
use crate::forest::Forest;
use crate::hash::StateHash;
use crate::wind::{Calm, WindField};
use groups::Groups;
use leaves::{LeafWind, Leaves};
use levels::Levels;

/// Names of the timed phases, as recorded in [`FrameTimings`].
pub const PHASES: &[&str] = &["dynamics", "integration", "pose", "breakage"];
const DYNAMICS: usize = 0;
const INTEGRATION: usize = 1;
const POSE: usize = 2;
const BREAKAGE: usize = 3;

/// Fewest segments or leaves worth a job of their own.
const MIN_JOB: usize = 1024;

/// The dynamic state: deflections and rates (level order) and the leaves' angles and rates (the
/// forest's leaf order), and scratch: the next state, the wind samples and the level-ordered
/// pose of the level-by-level schedule. Steps by groups update the state in place.
#[derive(Default)]
struct State {
    phi: Vec<Vec3>,
    omega: Vec<Vec3>,
    psi: Vec<f32>,
    psi_dot: Vec<f32>,
    /// The next state of the level schedule (empty until that schedule runs).
    phi_next: Vec<Vec3>,
    omega_next: Vec<Vec3>,
    psi_next: Vec<f32>,
    psi_dot_next: Vec<f32>,
    /// The wind at each segment's centroid and each blade's centre (empty in a uniform wind;
    /// segments in level order in the level schedule and in the forest's order in the grouped
    /// one, leaves in the forest's order).
    seg_wind: Vec<Vec3>,
    leaf_wind: Vec<Vec3>,
    /// Every segment's world orientation and base in level order, written by the level
    /// schedule's integration and copied into the pose (empty until that schedule runs). The
    /// pose is what the next step reads.
    orient: Vec<Quat>,
    base: Vec<Vec3>,
    /// The drag every segment (level order) and leaf (the forest's order) felt in the last
    /// step, as `rupture::Drag` has it: the loads of the joints' statics.
    seg_drag: Vec<Vec3>,
    leaf_drag: Vec<Vec3>,
}

/// How a step is laid out over the threads; every schedule gives the same bits. Steps choose
/// by themselves (`Auto`); the tests force each of the others to compare their bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
enum Schedule {
    /// Groups of whole trees when there are at least as many as threads, otherwise levels.
    Auto,
    /// Each phase over the whole forest, the integration one level at a time (`levels`).
    Levels,
    /// Groups of whole trees, every phase of a group while its data is in the cache (`groups`).
    Groups,
}

/// A forest moved by Oliapuram & Kumar's rigid-segment model.
pub struct OliapuramModel {
    forest: Forest,
    params: OliapuramParams,
    levels: Levels,
    leaves: Leaves,
    groups: Groups,
    schedule: Schedule,
    state: State,
    pose: Pose,
    wind: Box<dyn WindField>,
    /// Sphere colliders, held for the next model (this one has no contact) and moved with the
    /// clock.
    colliders: Vec<SphereCollider>,
    time: f64,
    phase_ns: [AtomicU64; 4],
    nonfinite: bool,
    /// What each joint can carry and the loads of its statics (`rupture`).
    strength: rupture::Strength,
    /// Working room of the joints' statics: a subtree sum of forces and moments per segment
    /// (the forest's order).
    sums: Vec<(Vec3, Vec3)>,
    /// What broke: the pieces gone, the counts and the debris.
    breakage: BreakageState,
    /// Chen 2011 §5, when on: its response forces (one per segment, the forest's order, at
    /// the segment's centre) enter Eq. 13's F as one more force at the centroid
    /// (`kernels::step_segment`), so they turn the segment about its fixed end and reach its
    /// parent through the restorations (Eq. 18), as the wind does.
    self_collision: Option<SelfCollision>,
    external: Vec<Vec3>,
    /// The leaves that came off (`dynamics::falling`), written into the pose after the trees
    /// and the debris; the model goes on turning their leaf angles, which no longer show.
    falling: FallingLeaves,
}

/// Runs `f` and adds its duration to `ns`.
#[inline]
fn timed<R>(ns: &AtomicU64, f: impl FnOnce() -> R) -> R {
    let t0 = Instant::now();
    let r = f();
    ns.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    r
}

/// Runs of segments (`first..last`) of about equal work, segments and leaves counted alike,
/// for the jobs of a phase: `leaf_start` holds each segment's first leaf and, last, the leaf
/// count (the level order's, or the forest's).
fn runs(leaf_start: &[u32], threads: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let n = leaf_start.len() - 1;
    let work = move |v: usize| v + leaf_start[v] as usize;
    let size = job_size(work(n), threads);
    let mut first = 0;
    std::iter::from_fn(move || {
        if first >= n {
            return None;
        }
        let target = work(first) + size;
        let last = first + (first..n).map(work).take_while(|&w| w < target).count().max(1);
        let run = (first, last);
        first = last;
        Some(run)
    })
}

/// Items per job for `len` items on `threads` threads: about two jobs per thread, none
/// smaller than [`MIN_JOB`]. Every item is computed alone, so the split never changes a bit.
fn job_size(len: usize, threads: usize) -> usize {
    len.div_ceil(2 * threads).max(MIN_JOB)
}

impl OliapuramModel {
    /// The model's name on the command line and in reports.
    pub const NAME: &'static str = "oliapuram";
    /// Names of the timed phases ([`PHASES`]).
    pub const PHASES: &'static [&'static str] = PHASES;

    /// Sets up the model at the forest's generated shape, at rest. Refuses invalid parameters
    /// and a forest without segments, naming what is wrong.
    pub fn new(forest: Forest, params: OliapuramParams) -> Result<OliapuramModel, SimError> {
        OliapuramModel::from_parts(ModelParts::new(forest), params).map_err(|r| r.error)
    }

    /// Sets up the model at the forest's generated shape, at rest, at the parts' time, with
    /// their wind and colliders (held and handed back; this model has no contact). Refuses
    /// what [`new`](Self::new) refuses, handing the parts back.
    pub fn from_parts(parts: ModelParts, params: OliapuramParams) -> Result<OliapuramModel, Box<Refused>> {
        let (levels, leaves, groups) = match OliapuramModel::prepare(&parts.forest, &params) {
            Ok(built) => built,
            Err(error) => return Err(Box::new(Refused { error, parts })),
        };
        let ModelParts {
            forest,
            wind,
            colliders,
            time,
        } = parts;
        let (n, m) = (forest.segment_count(), forest.leaf_count());
        let state = State {
            phi: vec![Vec3::ZERO; n],
            omega: vec![Vec3::ZERO; n],
            psi: vec![0.0; m],
            psi_dot: vec![0.0; m],
            phi_next: Vec::new(),
            omega_next: Vec::new(),
            psi_next: Vec::new(),
            psi_dot_next: Vec::new(),
            seg_wind: Vec::new(),
            leaf_wind: Vec::new(),
            orient: Vec::new(),
            base: Vec::new(),
            seg_drag: vec![Vec3::ZERO; n],
            leaf_drag: vec![Vec3::ZERO; m],
        };
        let pose = Pose {
            base: vec![Vec3::ZERO; n],
            orient: vec![Quat::IDENTITY; n],
            leaf_pos: vec![Vec3::ZERO; m],
            leaf_orient: vec![Quat::IDENTITY; m],
            removed: Vec::new(),
        };
        let breakage = BreakageState::new(n);
        let strength = rupture::Strength::new(&forest, &levels, &leaves, params.gravity, breakage.gone());
        let falling = FallingLeaves::new(FallingParams::default(), &forest, false)
            .expect("the default falling-leaf settings are valid");
        let mut model = OliapuramModel {
            falling,
            strength,
            sums: vec![(Vec3::ZERO, Vec3::ZERO); n],
            breakage,
            forest,
            params,
            levels,
            leaves,
            groups,
            schedule: Schedule::Auto,
            state,
            pose,
            wind: Box::new(Calm),
            colliders: Vec::new(),
            time,
            phase_ns: Default::default(),
            nonfinite: false,
            self_collision: None,
            external: Vec::new(),
        };
        model.set_wind(wind);
        for mut c in colliders {
            c.move_to(time);
            model.colliders.push(c);
        }
        model.refresh_pose();
        Ok(model)
    }

    /// Checks the settings and the forest and builds the static data the step reads.
    fn prepare(forest: &Forest, params: &OliapuramParams) -> Result<(Levels, Leaves, Groups), SimError> {
        params.validate()?;
        check_forest(forest)?;
        let levels = Levels::new(forest, params);
        let leaves = Leaves::new(forest, &levels, params)?;
        let groups = Groups::new(forest, &levels);
        Ok((levels, leaves, groups))
    }

    /// Changes the time step \[s\] (folded into the static data, which is rebuilt; the state
    /// stays). Refuses an invalid one, keeping the old.
    pub fn set_time_step(&mut self, dt: f32) -> Result<(), SimError> {
        let params = OliapuramParams { dt, ..self.params };
        let (levels, leaves, groups) = OliapuramModel::prepare(&self.forest, &params)?;
        (self.params, self.levels, self.leaves, self.groups) = (params, levels, leaves, groups);
        // The broken pieces stay out of the rebuilt data.
        rupture::mask(&self.forest, &mut self.levels, &mut self.leaves, self.breakage.gone());
        self.renew_strength();
        Ok(())
    }

    /// Every joint's strength again, from the static data and the pieces broken off.
    fn renew_strength(&mut self) {
        self.strength = rupture::Strength::new(
            &self.forest,
            &self.levels,
            &self.leaves,
            self.params.gravity,
            self.breakage.gone(),
        );
    }

    /// The model's name (`"oliapuram"`).
    pub fn name(&self) -> &'static str {
        Self::NAME
    }
    /// Names of the timed phases, as [`step`](Self::step) records them.
    pub fn phases(&self) -> &'static [&'static str] {
        PHASES
    }

    /// Replaces the wind field (moved to the model's time).
    pub fn set_wind(&mut self, wind: Box<dyn WindField>) {
        drop(self.replace_wind(wind));
    }

    /// Replaces the wind field (moved to the model's time) and returns the one it had.
    pub fn replace_wind(&mut self, mut wind: Box<dyn WindField>) -> Box<dyn WindField> {
        wind.advance(self.time);
        std::mem::replace(&mut self.wind, wind)
    }
    /// The wind field.
    pub fn wind(&self) -> &dyn WindField {
        &*self.wind
    }
    /// The wind field, to change it.
    pub fn wind_mut(&mut self) -> &mut dyn WindField {
        &mut *self.wind
    }
    /// The static data of the trees.
    pub fn forest(&self) -> &Forest {
        &self.forest
    }
    /// The model's parameters.
    pub fn params(&self) -> &OliapuramParams {
        &self.params
    }
    /// Simulated time \[s\].
    pub fn time(&self) -> f64 {
        self.time
    }
    /// The pose of every segment and leaf after the last step (leaves turn on their own, so
    /// `leaf_orient` holds one orientation per leaf).
    pub fn pose(&self) -> &Pose {
        &self.pose
    }
    /// False once any deflection, rate or leaf angle stopped being finite.
    pub fn finite(&self) -> bool {
        !self.nonfinite && self.breakage.debris().finite() && self.falling.finite()
    }

    /// The leaves that came off their twigs (`dynamics::falling`).
    pub fn falling(&self) -> &FallingLeaves {
        &self.falling
    }

    /// Detaches `count` attached leaves, falling from the next step on; returns how many
    /// (`DynamicsModel::drop_leaves`).
    pub fn drop_leaves(&mut self, count: usize) -> Result<usize, SimError> {
        self.falling.drop_leaves(count, &self.forest, &self.pose)
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

    /// The bending moment joint `i` (forest order) carries after the last step \[N·m\]: the
    /// statics of its tree in the pose, under the weights and the step's drag (see `rupture`);
    /// 0 for a segment gone with the debris.
    pub fn joint_moment(&self, i: usize) -> f32 {
        let t = self.forest.tree_of(i);
        let r = self.forest.trees[t].segments.start as usize..self.forest.trees[t].segments.end as usize;
        let mut sums = vec![(Vec3::ZERO, Vec3::ZERO); r.len()];
        let mut moment = 0.0;
        // The tree's leaves as the model posed them (a falling leaf's pose taken out).
        let lr = self.forest.trees[t].leaves.start as usize..self.forest.trees[t].leaves.end as usize;
        let (mut leaf_pos, mut leaf_orient) = (
            self.pose.leaf_pos[lr.clone()].to_vec(),
            self.pose.leaf_orient[lr.clone()].to_vec(),
        );
        self.falling.unwrite_range(lr.clone(), &mut leaf_pos, &mut leaf_orient);
        let at = rupture::At {
            leaf_pos: &leaf_pos,
            leaf_orient: &leaf_orient,
            leaf0: lr.start,
            ..rupture::At::of(&self.pose)
        };
        self.statics().bending(r, at, Some(self.drag()), &mut sums, |j, b| {
            if j == i {
                moment = b;
            }
        });
        moment
    }

    /// The bending moment at which joint `i` (forest order) breaks, a root uproots \[N·m\]:
    /// its rupture moment with its floors (see `rupture`), a root's anchorage.
    pub fn joint_limit(&self, i: usize) -> f32 {
        self.strength.limit[i]
    }

    /// What the joints' statics read.
    fn statics(&self) -> rupture::Statics<'_> {
        rupture::Statics {
            forest: &self.forest,
            levels: &self.levels,
            leaves: &self.leaves,
            loads: &self.strength.loads,
            gone: self.breakage.gone(),
        }
    }

    /// The drag of the last step.
    fn drag(&self) -> rupture::Drag<'_> {
        rupture::Drag {
            segments: &self.state.seg_drag,
            leaves: &self.state.leaf_drag,
        }
    }

    /// Per tree with a joint over its limit after the step: the tree and those joints (see
    /// `rupture`). Trees are checked in data-split jobs of whole trees; a tree whose bodies
    /// all felt less drag than their caps is not summed.
    fn joints_over(&mut self, jobs: &JobSystem) -> Vec<(usize, Vec<u32>)> {
        let trees = &self.forest.trees;
        let mut sums = std::mem::take(&mut self.sums);
        let (statics, strength, drag, pose) = (self.statics(), &self.strength, self.drag(), &self.pose);
        let check = |t: usize, sums: &mut [(Vec3, Vec3)]| -> Option<Vec<u32>> {
            let r = trees[t].segments.start as usize..trees[t].segments.end as usize;
            if !statics.past_caps(strength, r.clone(), drag) {
                return None;
            }
            let over = statics.over(strength, r, pose, drag, sums);
            (!over.is_empty()).then_some(over)
        };
        // Runs of whole trees of about equal work (segments and leaves).
        let work = |t: usize| trees[t].segments.len() + trees[t].leaves.len();
        let total: usize = (0..trees.len()).map(work).sum();
        let size = job_size(total, jobs.threads());
        let mut runs = Vec::new();
        let mut first = 0;
        while first < trees.len() {
            let (mut last, mut w) = (first, 0);
            while last < trees.len() && (last == first || w + work(last) <= size) {
                w += work(last);
                last += 1;
            }
            runs.push(first..last);
            first = last;
        }
        let mut found: Vec<Vec<(usize, Vec<u32>)>> = vec![Vec::new(); runs.len()];
        if runs.len() == 1 {
            found[0] = (0..trees.len())
                .filter_map(|t| check(t, &mut sums[..]).map(|o| (t, o)))
                .collect();
        } else {
            let check = &check;
            jobs.scope(|sc| {
                let mut rest = &mut sums[..];
                for (run, out) in runs.iter().zip(found.iter_mut()) {
                    let end = trees[run.end - 1].segments.end as usize;
                    let start = trees[run.start].segments.start as usize;
                    let (mine, more) = std::mem::take(&mut rest).split_at_mut(end - start);
                    rest = more;
                    let run = run.clone();
                    sc.spawn(move |_| {
                        for t in run {
                            let s0 = trees[t].segments.start as usize - start;
                            let s1 = trees[t].segments.end as usize - start;
                            if let Some(o) = check(t, &mut mine[s0..s1]) {
                                out.push((t, o));
                            }
                        }
                    });
                }
            });
        }
        self.sums = sums;
        found.into_iter().flatten().collect()
    }

    /// Breaks off every piece whose joint carries more than its limit and uproots every tree
    /// whose root does, tips first (`over`, from [`joints_over`](Self::joints_over); see `rupture`): each
    /// piece goes to the debris with its segments' velocities and leaves the model.
    fn break_off(&mut self, over: Vec<(usize, Vec<u32>)>) {
        let h = self.params.dt;
        let trees: Vec<usize> = over.iter().map(|(t, _)| *t).collect();
        for (t, joints) in over {
            // In the order the statics found them, tips first: every joint over its limit
            // breaks (a piece beyond another's joint leaves first, on its own), and a root
            // uproots what is left of its tree.
            let tree = &self.forest.trees[t].segments;
            let r = tree.start as usize..tree.end as usize;
            let velocity = rupture::centre_velocities(
                &self.levels,
                &self.forest,
                r.clone(),
                (&self.state.phi, &self.state.omega),
                &self.pose,
                h,
            );
            for i in joints {
                let i = i as usize;
                if self.breakage.in_piece(i) {
                    continue;
                }
                let segments = rupture::piece(&self.forest, r.clone(), i, self.breakage.gone());
                let v: Vec<Vec3> = segments.iter().map(|&g| velocity[g as usize - r.start]).collect();
                let uprooted = self.forest.seg.parent[i] == crate::forest::NO_PARENT;
                self.breakage.detach(i, &segments, uprooted);
                self.breakage
                    .debris_mut()
                    .spawn(&self.forest, &segments, &self.pose, &v, uprooted);
            }
        }
        let gone = self.breakage.gone();
        rupture::mask(&self.forest, &mut self.levels, &mut self.leaves, gone);
        let s = &mut self.state;
        for (i, _) in gone.iter().enumerate().filter(|(_, &g)| g) {
            let v = self.levels.level_of[i] as usize;
            (s.phi[v], s.omega[v]) = (Vec3::ZERO, Vec3::ZERO);
            for j in self.forest.leaves_of(i) {
                (s.psi[j], s.psi_dot[j]) = (0.0, 0.0);
            }
        }
        // The limits and caps of the trees that lost a piece, without it.
        for t in trees {
            self.strength
                .update_tree(&self.forest, &self.levels, &self.leaves, self.params.gravity, gone, t);
        }
    }

    /// Turns self-collision (Chen 2011 §5) on with `params`, its structure and rest distances
    /// read in the generated shape (`Pose::of_shape`, wherever the tree is now), or off.
    pub fn set_self_collision(&mut self, params: Option<SelfCollisionParams>) -> Result<(), SimError> {
        self.self_collision = match params {
            None => None,
            Some(p) => Some(SelfCollision::new(&self.forest, &Pose::of_shape(&self.forest), p)?),
        };
        self.external.clear();
        Ok(())
    }

    /// What self-collision found and cost in the last step (`None` while off).
    pub fn self_collision_stats(&self) -> Option<SelfCollisionStats> {
        self.self_collision.as_ref().map(SelfCollision::stats)
    }

    /// Puts every tree back in its generated shape, at rest.
    pub fn reset(&mut self) {
        if let Some(sc) = &mut self.self_collision {
            sc.restart();
        }
        self.external.clear();
        let s = &mut self.state;
        for v in [&mut s.phi, &mut s.omega, &mut s.phi_next, &mut s.omega_next] {
            v.fill(Vec3::ZERO);
        }
        for v in [&mut s.psi, &mut s.psi_dot, &mut s.psi_next, &mut s.psi_dot_next] {
            v.fill(0.0);
        }
        self.nonfinite = false;
        if self.breakage.gone().iter().any(|&g| g) {
            // Every joint back: the static data rebuilt whole.
            let (levels, leaves, groups) = OliapuramModel::prepare(&self.forest, &self.params)
                .expect("the model's own forest and settings were accepted before");
            (self.levels, self.leaves, self.groups) = (levels, leaves, groups);
            self.breakage.clear();
            self.renew_strength();
        }
        self.state.seg_drag.fill(Vec3::ZERO);
        self.state.leaf_drag.fill(Vec3::ZERO);
        self.breakage.clear();
        self.falling.reset(&mut self.pose);
        self.refresh_pose();
        self.breakage.debris().write_pose(&self.forest, &mut self.pose);
    }

    /// Kinetic energy of the model's bodies, ½·Σ I·|ω|² over segments (I = m·l²/3 about the
    /// fixed end, Eq. 11) and leaves \[J\].
    pub fn kinetic_energy(&self) -> f64 {
        let lv = &self.levels;
        let s = &self.state;
        let segments: f64 = (0..s.omega.len())
            .map(|v| 0.5 * lv.inertia[v] as f64 * s.omega[v].length_squared() as f64)
            .sum();
        // In the model's leaf order, as the sum has always been taken.
        let leaves: f64 = leaves::model_order(lv)
            .map(|j| 0.5 * self.leaves.inertia[j] as f64 * (s.psi_dot[j] as f64).powi(2))
            .sum();
        segments + leaves
    }

    /// FNV-1a hash of the bit patterns of every deflection, rate and leaf angle (segments in
    /// level order, leaves in the model's leaf order, as the export has them).
    pub fn state_hash(&self) -> u64 {
        let s = &self.state;
        let mut h = StateHash::new();
        h.add(s.phi.iter().chain(&s.omega).flat_map(|v| v.to_array()));
        h.add(leaves::model_order(&self.levels).map(|j| s.psi[j]));
        h.add(leaves::model_order(&self.levels).map(|j| s.psi_dot[j]));
        self.breakage.hash_state(&mut h);
        self.falling.hash_state(&mut h);
        h.finish()
    }

    /// Bytes held: the forest's static arrays, the level view, the leaves' data, the state and
    /// the pose (capacities, not lengths).
    pub fn heap_bytes(&self) -> usize {
        use crate::dynamics::vec_bytes as b;
        let s = &self.state;
        self.forest.heap_bytes()
            + self.levels.heap_bytes()
            + self.leaves.heap_bytes()
            + self.groups.heap_bytes()
            + self.pose.heap_bytes()
            + b(&s.phi)
            + b(&s.omega)
            + b(&s.phi_next)
            + b(&s.omega_next)
            + b(&s.orient)
            + b(&s.base)
            + b(&s.psi)
            + b(&s.psi_dot)
            + b(&s.psi_next)
            + b(&s.psi_dot_next)
            + b(&s.seg_wind)
            + b(&s.leaf_wind)
            + b(&s.seg_drag)
            + b(&s.leaf_drag)
            + b(&self.sums)
            + self.strength.heap_bytes()
            + self.breakage.heap_bytes()
            + self.falling.heap_bytes()
    }

    /// Advances one time step. Phase times (work time, summed over threads) are added to the
    /// phases of `timings` named in [`PHASES`], where it has them.
    pub fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        let h = self.params.dt as f64;
        // The trees step from their own pose, the falling leaves' taken out.
        self.falling.unwrite(&mut self.pose);
        self.wind.prepare(self.time, jobs, timings);
        for ns in &self.phase_ns {
            ns.store(0, Ordering::Relaxed);
        }
        if let Some(sc) = &mut self.self_collision {
            // The response to the pose the step starts from (Chen Fig. 1.1); the pieces
            // broken off take no part.
            sc.set_attached(&self.forest, |i| self.breakage.attached(i));
            self.external.clear();
            self.external.resize(self.forest.segment_count(), Vec3::ZERO);
            sc.step(jobs, &self.forest, &self.pose, self.params.dt, &mut self.external);
        }
        // A field that steps on the CPU takes its next step beside the trees, from the field
        // they sample (see `WindField::detach`).
        match self.wind.detach(self.time + h) {
            Some(frozen) => {
                let mut wind = std::mem::replace(&mut self.wind, frozen);
                jobs.scope(|s| {
                    s.spawn(|_| wind.step_detached(jobs, timings));
                    self.run_phases(jobs);
                });
                let frozen = std::mem::replace(&mut self.wind, wind);
                self.wind.attach(frozen);
            }
            None => self.run_phases(jobs),
        }
        let t0 = Instant::now();
        let over = self.joints_over(jobs);
        if !over.is_empty() {
            self.break_off(over);
        }
        self.phase_ns[BREAKAGE].fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if self.breakage.any() {
            let debris = self.breakage.debris_mut();
            debris.step(&self.forest, &*self.wind, &self.colliders, self.params.dt, jobs);
            debris.write_pose(&self.forest, &mut self.pose);
        }
        self.falling
            .step(&self.forest, &*self.wind, self.params.dt, jobs, &mut self.pose);
        for (k, name) in PHASES.iter().enumerate() {
            if let Some(id) = timings.phase_id(name) {
                timings.add(id, Duration::from_nanos(self.phase_ns[k].load(Ordering::Relaxed)));
            }
        }
        self.time += h;
        for c in &mut self.colliders {
            c.move_to(self.time);
        }
    }

    fn run_phases(&mut self, jobs: &JobSystem) {
        let grouped = match self.schedule {
            Schedule::Auto => self.groups.count() >= jobs.threads(),
            Schedule::Levels => false,
            Schedule::Groups => true,
        };
        if grouped {
            let (mut state, mut pose) = (std::mem::take(&mut self.state), std::mem::take(&mut self.pose));
            if !self.grouped_step(&mut state, &mut pose, &*self.wind, jobs) {
                self.nonfinite = true;
            }
            (self.state, self.pose) = (state, pose);
            return;
        }
        if !self.dynamics_phase(jobs) {
            self.nonfinite = true;
        }
        self.swap_next();
        self.integration_phase(jobs);
        self.pose_phase(jobs);
    }

    /// Makes the next state the current one.
    fn swap_next(&mut self) {
        let s = &mut self.state;
        std::mem::swap(&mut s.phi, &mut s.phi_next);
        std::mem::swap(&mut s.omega, &mut s.omega_next);
        std::mem::swap(&mut s.psi, &mut s.psi_next);
        std::mem::swap(&mut s.psi_dot, &mut s.psi_dot_next);
    }

    /// Every segment and every leaf at once (§3.2, "Dynamics calculation"), into the next
    /// state: data-split jobs of runs of segments (level order) and of runs of leaves (the
    /// forest's order).
    fn dynamics_phase(&mut self, jobs: &JobSystem) -> bool {
        let uniform = self.wind.uniform();
        let (n, m) = (self.forest.segment_count(), self.forest.leaf_count());
        let s = &mut self.state;
        // Sized once, the first time this schedule runs (and the first time the wind varies);
        // later steps reuse them.
        s.phi_next.resize(n, Vec3::ZERO);
        s.omega_next.resize(n, Vec3::ZERO);
        s.psi_next.resize(m, 0.0);
        s.psi_dot_next.resize(m, 0.0);
        if uniform.is_none() {
            s.seg_wind.resize(n, Vec3::ZERO);
            s.leaf_wind.resize(m, Vec3::ZERO);
        }
        let State {
            phi,
            omega,
            phi_next,
            omega_next,
            psi,
            psi_dot,
            psi_next,
            psi_dot_next,
            seg_wind,
            leaf_wind,
            seg_drag,
            leaf_drag,
            ..
        } = s;
        let (phi, omega, psi, psi_dot) = (&**phi, &**omega, &**psi, &**psi_dot);
        let (levels, leaves, wind) = (&self.levels, &self.leaves, &*self.wind);
        let external = &*self.external;
        let leaf_pose = (&*self.pose.leaf_pos, &*self.pose.leaf_orient);
        let seg_pose = (&*self.pose.orient, &*self.pose.base);
        let ns = &self.phase_ns[DYNAMICS];
        let h = self.params.dt;
        let finite = AtomicBool::new(true);
        let finite = &finite;
        let varying = uniform.is_none();
        jobs.scope(|sc| {
            let mut rest = (
                &mut phi_next[..],
                &mut omega_next[..],
                &mut seg_wind[..],
                &mut seg_drag[..],
            );
            for (first, last) in runs(&levels.leaf_start, jobs.threads()) {
                let (p, o, sw, sd) = std::mem::take(&mut rest);
                let (p, p1) = p.split_at_mut(last - first);
                let (o, o1) = o.split_at_mut(last - first);
                let (sw, sw1) = sw.split_at_mut(if varying { last - first } else { 0 });
                let (sd, sd1) = sd.split_at_mut(last - first);
                rest = (p1, o1, sw1, sd1);
                sc.spawn(move |_| {
                    let ok = timed(ns, || {
                        if varying {
                            kernels::centroids(levels, seg_pose, first, sw);
                            wind.sample_in_place(sw);
                        }
                        let mut ok = true;
                        for (k, ((p, o), d)) in p.iter_mut().zip(o.iter_mut()).zip(sd.iter_mut()).enumerate() {
                            let v = first + k;
                            let l = levels.forest_leaf[v] as usize;
                            let l = l..l + (levels.leaf_start[v + 1] - levels.leaf_start[v]) as usize;
                            let w = match uniform {
                                Some(u) => u,
                                None => sw[k],
                            };
                            (*p, *o, *d) = kernels::step_segment(
                                levels,
                                v,
                                (
                                    seg_pose.0[levels.order[v] as usize],
                                    w,
                                    external.get(levels.order[v] as usize),
                                ),
                                (phi[v], omega[v]),
                                |c| phi[c],
                                (&leaves.reaction[l.clone()], &psi[l]),
                                h,
                            );
                            ok &= p.is_finite() && o.is_finite();
                        }
                        ok
                    });
                    if !ok {
                        finite.store(false, Ordering::Relaxed);
                    }
                });
            }
            let size = job_size(m, jobs.threads());
            let mut rest = (
                &mut psi_next[..],
                &mut psi_dot_next[..],
                &mut leaf_wind[..],
                &mut leaf_drag[..],
            );
            let mut first = 0;
            while first < m {
                let len = size.min(m - first);
                let (q, d, lw, ld) = std::mem::take(&mut rest);
                let (q, q1) = q.split_at_mut(len);
                let (d, d1) = d.split_at_mut(len);
                let (lw, lw1) = lw.split_at_mut(if varying { len } else { 0 });
                let (ld, ld1) = ld.split_at_mut(len);
                rest = (q1, d1, lw1, ld1);
                let r = first..first + len;
                sc.spawn(move |_| {
                    let ok = timed(ns, || {
                        let wind = match uniform {
                            Some(u) => LeafWind::Uniform(u),
                            None => {
                                let at = (&leaf_pose.0[r.clone()], &leaf_pose.1[r.clone()]);
                                leaves::centres(leaves, at, r.start, lw);
                                wind.sample_in_place(lw);
                                LeafWind::Samples(lw)
                            }
                        };
                        q.copy_from_slice(&psi[r.clone()]);
                        d.copy_from_slice(&psi_dot[r.clone()]);
                        leaves::step_leaves(leaves, r.start, (q, d), &leaf_pose.1[r.clone()], wind, h, ld)
                    });
                    if !ok {
                        finite.store(false, Ordering::Relaxed);
                    }
                });
                first += len;
            }
        });
        finite.load(Ordering::Relaxed)
    }

    /// Root to tips, one depth level of the whole forest at a time (§3.2, "Integration of
    /// movements"); a level large enough is split into jobs.
    fn integration_phase(&mut self, jobs: &JobSystem) {
        let levels = &self.levels;
        let State { phi, orient, base, .. } = &mut self.state;
        // Sized once, the first time this schedule runs.
        orient.resize(phi.len(), Quat::IDENTITY);
        base.resize(phi.len(), Vec3::ZERO);
        let phi = &**phi;
        let ns = &self.phase_ns[INTEGRATION];
        for d in 0..levels.count() {
            let r = levels.level(d);
            let (done_o, rest_o) = orient.split_at_mut(r.start);
            let (done_b, rest_b) = base.split_at_mut(r.start);
            let (cur_o, cur_b) = (&mut rest_o[..r.len()], &mut rest_b[..r.len()]);
            let (done_o, done_b) = (&*done_o, &*done_b);
            let size = job_size(r.len(), jobs.threads());
            if size >= r.len() {
                timed(ns, || {
                    kernels::integrate(levels, phi, done_o, done_b, r.start, cur_o, cur_b)
                });
                continue;
            }
            jobs.scope(|sc| {
                for (c, (o, b)) in cur_o.chunks_mut(size).zip(cur_b.chunks_mut(size)).enumerate() {
                    let first = r.start + c * size;
                    sc.spawn(move |_| timed(ns, || kernels::integrate(levels, phi, done_o, done_b, first, o, b)));
                }
            });
        }
    }

    /// The segments' pose in forest order and the leaves' pose, in data-split jobs of whole
    /// segments with their leaves.
    fn pose_phase(&mut self, jobs: &JobSystem) {
        let (levels, leaves) = (&self.levels, &self.leaves);
        let leaf_start = &*self.forest.seg.leaf_start;
        let s = &self.state;
        let (level_orient, level_base) = (&*s.orient, &*s.base);
        let psi = &*s.psi;
        let Pose {
            base: mut seg_base,
            orient: mut seg_orient,
            leaf_pos: mut pos,
            leaf_orient: mut ori,
            removed,
        } = std::mem::take(&mut self.pose);
        let ns = &self.phase_ns[POSE];
        jobs.scope(|sc| {
            let (mut sb, mut so) = (&mut seg_base[..], &mut seg_orient[..]);
            let (mut lp, mut lo) = (&mut pos[..], &mut ori[..]);
            for (first, last) in runs(leaf_start, jobs.threads()) {
                let l = leaf_start[first] as usize..leaf_start[last] as usize;
                let (sb0, sb1) = std::mem::take(&mut sb).split_at_mut(last - first);
                let (so0, so1) = std::mem::take(&mut so).split_at_mut(last - first);
                let (lp0, lp1) = std::mem::take(&mut lp).split_at_mut(l.len());
                let (lo0, lo1) = std::mem::take(&mut lo).split_at_mut(l.len());
                (sb, so, lp, lo) = (sb1, so1, lp1, lo1);
                sc.spawn(move |_| {
                    timed(ns, || {
                        for (k, (b, o)) in sb0.iter_mut().zip(so0.iter_mut()).enumerate() {
                            let v = levels.level_of[first + k] as usize;
                            (*b, *o) = (level_base[v], level_orient[v]);
                        }
                        let mut scratch = Vec::new();
                        let seg_pose = (&*so0, &*sb0);
                        leaves::pose(leaf_start, leaves, first, seg_pose, &psi[l], (lp0, lo0), &mut scratch);
                    })
                });
            }
        });
        self.pose = Pose {
            base: seg_base,
            orient: seg_orient,
            leaf_pos: pos,
            leaf_orient: ori,
            removed,
        };
    }

    /// Rebuilds the whole pose from the state on the calling thread, group by group.
    fn refresh_pose(&mut self) {
        let (levels, leaves, groups) = (&self.levels, &self.leaves, &self.groups);
        let (phi, psi) = (&self.state.phi, &self.state.psi);
        let pose = &mut self.pose;
        let mut scratch = Vec::new();
        for g in 0..groups.count() {
            for d in 0..groups.depth(g) {
                let r = groups.chunk(g, d);
                scratch.resize(r.len().max(scratch.len()), [0.0; 4]);
                kernels::rotations(&phi[r.clone()], &mut scratch);
                let turns = &scratch[..r.len()];
                kernels::integrate_into_pose(levels, turns, r.start, (&mut pose.orient, &mut pose.base), 0);
            }
        }
        leaves::pose(
            &self.forest.seg.leaf_start,
            leaves,
            0,
            (&pose.orient, &pose.base),
            psi,
            (&mut pose.leaf_pos, &mut pose.leaf_orient),
            &mut Vec::new(),
        );
    }
}
