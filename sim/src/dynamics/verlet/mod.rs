//! Manavi 2007, "Real-Time Tree Simulation Using Verlet Integration": a tree as particles and
//! distance constraints, like cloth, moved by position Verlet and kept in shape by relaxing the
//! constraints pass after pass.
//!
//! The model (the thesis's sections):
//! - "Verlet Integration": every particle by r(t+Δt) = 2r(t) − r(t−Δt) + a(t)·Δt² (Eq. 5);
//!   the forces are gravity and the wind's drag at the particle (see `solve`).
//! - "Iterative Constraints": each constraint moves its two ends half of its error each, one
//!   constraint after the other (Gauss–Seidel); more passes make the wood stiffer, so each
//!   segment's constraints get passes by its radius (`VerletParams::iterations_for`), the
//!   thesis's iterations per skeletal particle.
//! - "Tree Structure and Algorithms" (Figure 1): branches of skeletal particles with a
//!   branching plane of five particles at their base, children tied to their parents by three
//!   shared particles, and a root structure of static anchors (`structure`).
//! - "Breaking Branches": a branch breaks off when its first constraint leaves its cone
//!   (`breakage`); each cone is the thesis's strain cone, at least the turn the branch grew to
//!   carry under `Material::grown_wind`, measured on the model itself when it is built
//!   (`grown`).
//! - Contacts: every moving particle is kept above the ground and outside the sphere colliders
//!   after every pass; with self-collision on (Chen 2011 §5), the pairs of pieces within their
//!   safe distance where the step starts are held at their rest lengths after every pass too,
//!   each moved apart by its segments' particles, at most `solve::TOUCH_MOST` a pass
//!   (`solve::touch`): a position model keeps its pieces apart as it keeps them out of the
//!   ground, where a force capped for the lightest particle held too little (about 30 % of the
//!   interpenetration of no response remained in a gale, 1.2 % held as contacts; a pair
//!   that holds a leaf is held apart as strips too, `SelfCollision`'s `blade_contact`, and
//!   from as far as it may close in the step, `SelfCollision::with_contacts_ahead`: 0.46 %).
//!   A contact on a blade beyond its twig's tip moves the tip as if the blade's point were
//!   on it, which overcorrects (the twig's swing moves the blade by its lever): a contact
//!   that turned the twig by the blade's lever, the correction exact to first order, held
//!   the gale test's pairs far worse (about 200 pair-steps a seed, 5 to 18 with this one:
//!   stacked leaves a millimetre apart, held exactly at that, crossed on what the contact
//!   does not see, the twist of the twig and the later passes' pull).
//!
//! One step, per tree (trees share nothing, so whole trees are jobs):
//!
//! | phase       | does |
//! |-------------|------|
//! | verlet      | the wind at every skeletal particle, forces, Eq. 5 |
//! | constraints | the branch and plane constraints, pass after pass, contacts after each |
//! | roots       | the root constraints: cut when stretched past their maximum, else relaxed |
//! | pose        | segments' bases and orientations, leaves' positions |
//!
//! Gravity. The generated shape gives every constraint its rest length, so the shape the
//! constraints hold is the grown one; with enough passes they hold it rigidly, and gravity
//! then moves nothing of a tree on its roots: whatever a tree sags under its weight here is
//! the relaxation's shortfall, which keeps creeping with time. Where the material takes the
//! generated shape as grown under the tree's weight (`Material::compensate_gravity`, on by
//! default, as Weber's and Oliapuram's models do), Sylva applies gravity only to what hangs
//! free, a branch broken off and everything beyond it, and to a whole tree once any of its
//! root constraints is cut: the shape grew on all of its roots, so on fewer its weight leans
//! it over on the rest (the thesis's "weight shift on the remaining root constraints ...
//! simulating a tree collapsing under its own shifted center of mass"). Without it, gravity
//! acts on every particle, as in the thesis, and the tree sags as far as its passes let it.
//!
//! Invariants: the state is each particle's position and previous position, and a flag per
//! root constraint; anchors never move; a step reads and writes only its own tree's slices, so
//! the state is bit-identical for any number of workers.

mod breakage;
mod grown;
mod interface;
mod params;
mod solve;
mod structure;
#[cfg(test)]
mod tests;

pub use params::{VerletParams, MAX_ITERATIONS};
pub use structure::MAX_PARTICLES;

use std::time::Duration;

use glam::{Quat, Vec3, Vec3A};
use sylva_engine::{FrameTimings, JobSystem};

use crate::collider::SphereCollider;
use crate::collision::runtime::{SelfCollision, SelfCollisionParams, SelfCollisionStats, PARTICLE_STABLE};
use crate::dynamics::falling::{FallingLeaves, FallingParams};
use crate::dynamics::{check_forest, split_lengths, ModelParts, Pose, Refused};
use crate::error::SimError;
use crate::forest::Forest;
use crate::hash::StateHash;
use crate::wind::{Calm, WindField};
use solve::{Link, Scratch, Shared, Touch, TreeReport, TreeState};
use structure::Structure;

/// Names of the timed phases, as recorded in [`FrameTimings`].
pub const PHASES: &[&str] = &["verlet", "constraints", "roots", "pose"];

/// Particles worth a job of their own.
const MIN_JOB: usize = 4096;

/// Whether segment `i` still hangs from its parent: false for the first segment of a branch
/// broken off (`broken`: per branch of `st`).
fn hangs(st: &Structure, broken: &[bool], i: usize) -> bool {
    let b = st.branch_of[i] as usize;
    !(broken[b] && st.branches[b].first as usize == i)
}

/// Per particle, exp(−drag/mass·dt): the share of its velocity relative to the wind a
/// particle keeps over a substep `dt` of linear drag (see `solve`).
fn drag_decay(st: &Structure, dt: f32) -> Vec<f32> {
    st.mass
        .iter()
        .zip(&st.drag)
        .map(|(&m, &c)| if m > 0.0 && c > 0.0 { (-c / m * dt).exp() } else { 1.0 })
        .collect()
}

/// Most threads the branches' cones are measured on when a model is built.
const GROWN_THREADS: usize = 8;

/// Sets every branch's cone: the thesis's strain cone, at least the turn the branch grew to
/// carry (`grown`), at most π.
fn grow_cones(st: &mut Structure, forest: &Forest, params: &VerletParams, keep_wind: &[f32]) {
    for b in &mut st.branches {
        // (No breaking while the cones are measured.)
        b.cone = std::f32::consts::PI;
    }
    let grown = if params.break_strain > 0.0 {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(GROWN_THREADS);
        grown::grown_turns(st, forest, params, keep_wind, threads)
    } else {
        vec![0.0; st.branches.len()]
    };
    for (b, g) in st.branches.iter_mut().zip(grown) {
        b.cone = b.strain_cone.max(g).min(std::f32::consts::PI);
    }
}

/// Manavi's Verlet model over a forest.
pub struct VerletModel {
    forest: Forest,
    params: VerletParams,
    st: Structure,
    /// Per particle, exp(−drag/mass·dt) (see `solve`).
    keep_wind: Vec<f32>,
    /// Every particle's position and previous position (16-byte vectors, so a constraint
    /// reads and writes each end in one move).
    pos: Vec<Vec3A>,
    prev: Vec<Vec3A>,
    root_cut: Vec<bool>,
    /// The constraints as they are now (breaking rewires them; see `breakage`).
    links: Vec<Link>,
    /// One flag per branch: broken off.
    broken: Vec<bool>,
    pose: Pose,
    wind: Box<dyn WindField>,
    colliders: Vec<SphereCollider>,
    time: f64,
    nonfinite: bool,
    /// Root constraints cut and branches broken off since the last reset.
    roots_cut: usize,
    branches_broken: usize,
    /// Per job, room for its trees' wind samples and pose (kept between steps).
    scratch: Vec<Scratch>,
    /// Chen 2011 §5, when on: its pairs within their safe distance, as contacts
    /// (`SelfCollision::with_contacts`), are held at their rest lengths by moving the particles
    /// after every relaxation pass, as the ground and the colliders are (see `solve::touch`).
    self_collision: Option<SelfCollision>,
    /// Self-collision's response forces: found, but unused (the contacts move the particles).
    spring_scratch: Vec<Vec3>,
    /// This step's contacts per tree, on the tree's particles.
    touches: Vec<Vec<Touch>>,
    /// The leaves that came off (`dynamics::falling`), written into the pose after the trees.
    falling: FallingLeaves,
}

impl VerletModel {
    /// The model's name on the command line and in reports.
    pub const NAME: &'static str = "verlet";

    /// Sets up the model at the forest's generated shape, at rest. Refuses invalid settings and
    /// a forest without segments, naming what is wrong.
    pub fn new(forest: Forest, params: VerletParams) -> Result<VerletModel, SimError> {
        VerletModel::from_parts(ModelParts::new(forest), params).map_err(|r| r.error)
    }

    /// As [`new`](Self::new), at the parts' time, with their wind and colliders; on refusal
    /// the parts come back.
    pub fn from_parts(parts: ModelParts, params: VerletParams) -> Result<VerletModel, Box<Refused>> {
        let built = params
            .validate()
            .and_then(|()| check_forest(&parts.forest))
            .and_then(|()| Structure::build(&parts.forest, &params));
        let mut st = match built {
            Ok(st) => st,
            Err(error) => return Err(Box::new(Refused { error, parts })),
        };
        let ModelParts {
            forest,
            wind,
            colliders,
            time,
        } = parts;
        let keep_wind = drag_decay(&st, params.substep());
        grow_cones(&mut st, &forest, &params, &keep_wind);
        let (n, m) = (forest.segment_count(), forest.leaf_count());
        let falling = FallingLeaves::new(FallingParams::default(), &forest, true)
            .expect("the default falling-leaf settings are valid");
        let mut model = VerletModel {
            pos: st.rest.iter().map(|&p| Vec3A::from(p)).collect(),
            prev: st.rest.iter().map(|&p| Vec3A::from(p)).collect(),
            root_cut: vec![false; st.root_anchor.len()],
            links: st.links.clone(),
            broken: vec![false; st.branches.len()],
            keep_wind,
            pose: Pose {
                base: vec![Vec3::ZERO; n],
                orient: vec![Quat::IDENTITY; n],
                leaf_pos: vec![Vec3::ZERO; m],
                leaf_orient: Vec::new(),
                removed: Vec::new(),
            },
            st,
            forest,
            params,
            wind: Box::new(Calm),
            colliders: Vec::new(),
            time,
            nonfinite: false,
            roots_cut: 0,
            branches_broken: 0,
            scratch: Vec::new(),
            self_collision: None,
            spring_scratch: Vec::new(),
            touches: Vec::new(),
            falling,
        };
        model.set_wind(wind);
        for mut c in colliders {
            c.move_to(time);
            model.colliders.push(c);
        }
        model.refresh_pose();
        Ok(model)
    }

    /// Changes the time step \[s\], keeping every particle's velocity (the previous positions
    /// are rescaled). The relaxation's stiffness depends on the step, so the branches' grown
    /// cones are measured again (`grown`). Refuses an invalid one, keeping the old.
    pub fn set_time_step(&mut self, dt: f32) -> Result<(), SimError> {
        let params = VerletParams { dt, ..self.params };
        params.validate()?;
        let ratio = params.substep() / self.params.substep();
        for (p, q) in self.pos.iter().zip(&mut self.prev) {
            *q = *p - (*p - *q) * ratio;
        }
        self.params = params;
        self.keep_wind = drag_decay(&self.st, params.substep());
        grow_cones(&mut self.st, &self.forest, &self.params, &self.keep_wind);
        Ok(())
    }

    /// The model's settings.
    pub fn params(&self) -> &VerletParams {
        &self.params
    }
    /// The trees.
    pub fn forest(&self) -> &Forest {
        &self.forest
    }
    /// Simulated time \[s\].
    pub fn time(&self) -> f64 {
        self.time
    }
    /// The pose after the last step (leaves rigid on their segments).
    pub fn pose(&self) -> &Pose {
        &self.pose
    }
    /// False once any particle stopped being finite.
    pub fn finite(&self) -> bool {
        !self.nonfinite && self.falling.finite()
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
    /// How many particles, constraints (branch and plane) and root constraints the trees
    /// have.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.pos.len(), self.st.links.len(), self.st.root_anchor.len())
    }
    /// The most relaxation passes any constraint gets per step.
    pub fn most_passes(&self) -> usize {
        self.st.trees.iter().map(|t| t.passes.len()).max().unwrap_or(0)
    }
    /// Root constraints cut since the last reset.
    pub fn roots_cut(&self) -> usize {
        self.roots_cut
    }
    /// Branches broken off since the last reset.
    pub fn branches_broken(&self) -> usize {
        self.branches_broken
    }
    /// Whether segment `i` still hangs from its parent: false for the first segment of a
    /// branch broken off.
    pub fn attached(&self, i: usize) -> bool {
        hangs(&self.st, &self.broken, i)
    }
    /// Trees whose every root constraint is cut.
    pub fn uprooted(&self) -> usize {
        self.st
            .trees
            .iter()
            .filter(|t| !solve::anchored(&self.root_cut[t.roots.clone()]))
            .count()
    }
    /// Every particle's position \[m\], relative to its tree's root (each tree's: skeletal,
    /// structural, anchors).
    pub fn positions(&self) -> &[Vec3A] {
        &self.pos
    }
    /// Every particle's rest position \[m\], relative to its tree's root.
    pub fn rest_positions(&self) -> &[Vec3] {
        &self.st.rest
    }
    /// The particles of tree `t`, how many of them (the first) are skeletal, and the world
    /// position their coordinates are relative to (the tree's root).
    pub fn tree_particles(&self, t: usize) -> (std::ops::Range<usize>, usize) {
        let l = &self.st.trees[t];
        (l.particles.clone(), l.skeletal)
    }
    /// Each tree's anchors (global particle indices).
    pub fn anchors(&self) -> impl Iterator<Item = usize> + '_ {
        self.st.trees.iter().flat_map(move |t| {
            t.roots
                .clone()
                .map(move |r| t.particles.start + self.st.root_anchor[r] as usize)
        })
    }

    /// Replaces the wind field (moved to the model's time) and returns the one it had.
    pub fn replace_wind(&mut self, mut wind: Box<dyn WindField>) -> Box<dyn WindField> {
        wind.advance(self.time);
        std::mem::replace(&mut self.wind, wind)
    }
    /// Replaces the wind field (moved to the model's time).
    pub fn set_wind(&mut self, wind: Box<dyn WindField>) {
        drop(self.replace_wind(wind));
    }

    /// Turns self-collision (Chen 2011 §5) on with `params`, its structure read in the
    /// generated shape, or off.
    pub fn set_self_collision(&mut self, params: Option<SelfCollisionParams>) -> Result<(), SimError> {
        self.self_collision = match params {
            None => None,
            Some(p) => {
                let rest = Pose::of_shape(&self.forest);
                // The response moves free particles, not an articulated tree: the single-mass
                // cap (Weber's articulated segments carry their subtrees and take more) for
                // the forces, which go unused: the contacts move the particles apart.
                Some(
                    SelfCollision::new(&self.forest, &rest, p)?
                        .with_cap(PARTICLE_STABLE)?
                        .with_contacts_ahead(),
                )
            }
        };
        self.touches.clear();
        Ok(())
    }

    /// What self-collision found and cost in the last step (`None` while off).
    pub fn self_collision_stats(&self) -> Option<SelfCollisionStats> {
        self.self_collision.as_ref().map(SelfCollision::stats)
    }

    /// Every particle back at rest in the generated shape, every root constraint whole.
    pub fn reset(&mut self) {
        if let Some(sc) = &mut self.self_collision {
            sc.restart();
        }
        self.touches.clear();
        for ((p, q), &r) in self.pos.iter_mut().zip(&mut self.prev).zip(&self.st.rest) {
            (*p, *q) = (Vec3A::from(r), Vec3A::from(r));
        }
        self.root_cut.fill(false);
        self.links.copy_from_slice(&self.st.links);
        self.broken.fill(false);
        self.roots_cut = 0;
        self.branches_broken = 0;
        self.nonfinite = false;
        self.falling.reset(&mut self.pose);
        self.refresh_pose();
    }

    /// Kinetic energy of the particles that carry mass, ½·Σ m·|v|² with v the Verlet velocity
    /// (r(t) − r(t−Δt))/Δt \[J\].
    pub fn kinetic_energy(&self) -> f64 {
        let dt = self.params.substep() as f64;
        (0..self.pos.len())
            .map(|j| {
                let v = (self.pos[j] - self.prev[j]).as_dvec3() / dt;
                0.5 * self.st.mass[j] as f64 * v.length_squared()
            })
            .sum()
    }

    /// FNV-1a hash of the bit patterns of every position, previous position, root and branch
    /// flag and constraint end.
    pub fn state_hash(&self) -> u64 {
        let mut h = StateHash::new();
        h.add(self.pos.iter().chain(&self.prev).flat_map(|v| v.to_array()));
        let flag = |&c: &bool| if c { 1.0 } else { 0.0 };
        h.add(self.root_cut.iter().chain(&self.broken).map(flag));
        let ends = self.links.iter().map(|c| c.a).chain(self.links.iter().map(|c| c.b));
        h.add(ends.map(f32::from_bits));
        self.falling.hash_state(&mut h);
        h.finish()
    }

    /// Bytes held: the forest, the structure, the state and the pose (capacities).
    pub fn heap_bytes(&self) -> usize {
        use crate::dynamics::vec_bytes as b;
        let st = &self.st;
        self.forest.heap_bytes()
            + self.pose.heap_bytes()
            + self.falling.heap_bytes()
            + b(&self.pos)
            + b(&self.prev)
            + b(&self.root_cut)
            + b(&self.links)
            + b(&self.broken)
            + b(&st.owner)
            + b(&st.particle_branch)
            + b(&self.keep_wind)
            + b(&st.rest)
            + b(&st.mass)
            + b(&st.drag)
            + b(&st.leaf_drag)
            + b(&st.weight)
            + b(&st.radius)
            + b(&st.links)
            + b(&st.length)
            + b(&st.iterations)
            + b(&st.root_anchor)
            + b(&st.root_plane)
            + b(&st.root_length)
            + b(&st.root_max)
            + b(&st.branches)
            + b(&st.branch_of)
            + b(&st.rest_orient)
            + st.trees.iter().map(|t| b(&t.passes)).sum::<usize>()
            + b(&st.trees)
            + self
                .scratch
                .iter()
                .map(|s| b(&s.wind) + b(&s.arcs) + b(&s.turn) + b(&s.xs) + b(&s.zs))
                .sum::<usize>()
    }

    /// Advances one time step: the wind and colliders to the step's time, then every tree as
    /// jobs of whole trees. Phase times (summed over threads) go to the phases of `timings`
    /// named in [`PHASES`].
    pub fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        let h = self.params.dt as f64;
        // The trees step from their own pose, the falling leaves' taken out.
        self.falling.unwrite(&mut self.pose);
        self.wind.prepare(self.time, jobs, timings);
        if let Some(sc) = &mut self.self_collision {
            // The pairs near one another in the pose the step starts from, held apart through
            // its substeps; the branches broken off take no part.
            let (st, broken) = (&self.st, &self.broken);
            sc.set_attached(&self.forest, |i| hangs(st, broken, i));
            self.spring_scratch.clear();
            self.spring_scratch.resize(self.forest.segment_count(), Vec3::ZERO);
            sc.step(jobs, &self.forest, &self.pose, self.params.dt, &mut self.spring_scratch);
            solve::touches_of(&self.st, &self.forest, &self.pos, sc.contacts(), &mut self.touches);
        }
        let reports = match self.wind.detach(self.time + h) {
            Some(frozen) => {
                let mut wind = std::mem::replace(&mut self.wind, frozen);
                let reports = jobs.scope(|s| {
                    s.spawn(|_| wind.step_detached(jobs, timings));
                    self.step_trees(jobs)
                });
                let frozen = std::mem::replace(&mut self.wind, wind);
                self.wind.attach(frozen);
                reports
            }
            None => self.step_trees(jobs),
        };
        let mut ns = [0u64; 4];
        for r in &reports {
            for k in 0..4 {
                ns[k] += r.ns[k];
            }
            self.nonfinite |= !r.finite;
            self.roots_cut += r.roots_cut as usize;
            self.branches_broken += r.broken as usize;
        }
        self.falling
            .step(&self.forest, &*self.wind, self.params.dt, jobs, &mut self.pose);
        for (k, name) in PHASES.iter().enumerate() {
            if let Some(id) = timings.phase_id(name) {
                timings.add(id, Duration::from_nanos(ns[k]));
            }
        }
        self.time += h;
        for c in &mut self.colliders {
            c.move_to(self.time);
        }
    }

    /// Every tree's step, in jobs of whole trees of at least [`MIN_JOB`] particles; one report
    /// per tree.
    fn step_trees(&mut self, jobs: &JobSystem) -> Vec<TreeReport> {
        let sh = Shared {
            st: &self.st,
            forest: &self.forest,
            params: &self.params,
            keep_wind: &self.keep_wind,
            wind: &*self.wind,
            uniform: self.wind.uniform(),
            colliders: &self.colliders,
            touches: &self.touches,
        };
        let f = &self.forest;
        let trees = f.trees.len();
        // Each tree's slices.
        let mut pos = split_lengths(&mut self.pos, self.st.trees.iter().map(|t| t.particles.len()));
        let mut prev = split_lengths(&mut self.prev, self.st.trees.iter().map(|t| t.particles.len()));
        let mut cut = split_lengths(&mut self.root_cut, self.st.trees.iter().map(|t| t.roots.len()));
        let sizes = || self.st.trees.iter().map(|t| t.constraints.len());
        let mut links = split_lengths(&mut self.links, sizes());
        let mut broken = split_lengths(&mut self.broken, self.st.trees.iter().map(|t| t.branches.len()));
        let mut base = split_lengths(&mut self.pose.base, f.trees.iter().map(|t| t.segments.len()));
        let mut orient = split_lengths(&mut self.pose.orient, f.trees.iter().map(|t| t.segments.len()));
        let mut leaf = split_lengths(&mut self.pose.leaf_pos, f.trees.iter().map(|t| t.leaves.len()));
        let mut states: Vec<(usize, TreeState<'_>)> = Vec::with_capacity(trees);
        for t in (0..trees).rev() {
            states.push((
                t,
                TreeState {
                    pos: pos.pop().expect("one slice per tree"),
                    prev: prev.pop().expect("one slice per tree"),
                    root_cut: cut.pop().expect("one slice per tree"),
                    links: links.pop().expect("one slice per tree"),
                    broken: broken.pop().expect("one slice per tree"),
                    base: base.pop().expect("one slice per tree"),
                    orient: orient.pop().expect("one slice per tree"),
                    leaf_pos: leaf.pop().expect("one slice per tree"),
                },
            ));
        }
        states.reverse();
        // Jobs of whole trees.
        let mut groups: Vec<Vec<(usize, TreeState<'_>)>> = Vec::new();
        let mut size = usize::MAX;
        for (t, s) in states {
            if size >= MIN_JOB {
                groups.push(Vec::new());
                size = 0;
            }
            size += s.pos.len();
            groups.last_mut().expect("a group was opened").push((t, s));
        }
        self.scratch.resize_with(groups.len(), Scratch::default);
        let mut out: Vec<Vec<TreeReport>> = vec![Vec::new(); groups.len()];
        let sh = &sh;
        jobs.scope(|s| {
            for ((group, scratch), out) in groups.into_iter().zip(self.scratch.iter_mut()).zip(out.iter_mut()) {
                s.spawn(move |_| {
                    for (t, state) in group {
                        out.push(solve::step_tree(sh, t, state, scratch));
                    }
                });
            }
        });
        out.into_iter().flatten().collect()
    }

    /// The pose of the state as it is (after a reset or a build).
    fn refresh_pose(&mut self) {
        let sh = Shared {
            st: &self.st,
            forest: &self.forest,
            params: &self.params,
            keep_wind: &self.keep_wind,
            wind: &Calm,
            uniform: Some(Vec3::ZERO),
            colliders: &[],
            touches: &[],
        };
        let mut arcs = Vec::new();
        for t in 0..self.forest.trees.len() {
            let tree = &self.forest.trees[t];
            let layout = &self.st.trees[t];
            let p = layout.particles.clone();
            let s = tree.segments.start as usize..tree.segments.end as usize;
            let l = tree.leaves.start as usize..tree.leaves.end as usize;
            let turn = solve::turns(&sh, layout, &self.pos[p.clone()]);
            solve::pose(
                &sh,
                t,
                &self.pos[p],
                &turn,
                &self.broken[layout.branches.clone()],
                (
                    &mut self.pose.base[s.clone()],
                    &mut self.pose.orient[s],
                    &mut self.pose.leaf_pos[l],
                ),
                &mut arcs,
            );
        }
    }
}
