//! Chen 2011, "Modeling and animation of trees in wind with collisions" (thesis), Chapter 4:
//! every stem rotated by the forces on it, root to tips, each child carried by its parent's
//! rotation; leaves as venation stems turning about their attachment.
//!
//! The model (equation numbers are the thesis's; `kernels` cites each where it is computed):
//! - Forces on a stem (§4.1): the wind F_W (the forest's drag coefficients on the wind at the
//!   stem's centre, as Sylva's other models take it, `kernels::wind_force`), gravity
//!   F_G = m·g (Eq. 4.1), the restoration towards the rest position of the stem's end, which
//!   follows the parent's current orientation (Eq. 4.2), the transfer force
//!   F_T = K_t·K_r·Σ children's (F_W + F_G + F_T) (Eq. 4.3) and, with self-collision on
//!   (`set_self_collision`, `crate::collision::runtime`, Chen §5), the response force (Eq. 5.1)
//!   of each pair of the stem's pieces and leaves, added to F^stem (Eq. 4.5).
//! - Motion (§4.2): τ = (ori·len) × F^stem (Eq. 4.6), α = τ/(m·len²) (Eq. 4.7),
//!   ω_{t+Δt} = ω_t + α·Δt (Eq. 4.8) after the damping ω_t·(1 − K_d) (Eq. 4.9), and the
//!   angular displacement ΔR = ω·Δt + ΔR_parent (Eq. 4.10): every stem turns with its parent
//!   and by its own ΔR, root to tips, its base put on its parent's new tip.
//! - Leaves (§4.1): each leaf a venation stem hinged at its attachment on its segment, the
//!   wind along its blade's normal, F = C_W·n·(w·n) (Eq. 4.4), its weight, its restoration,
//!   no transfer force; the same Eqs. 4.6–4.10 about the attachment, carried by its segment.
//!   Their forces reach no stem (the segments' F_W already holds their leaves' drag, the
//!   forest's `leaf_drag`, as in Sylva's other models).
//! - Sphere colliders: a stem that the motion pass leaves inside a sphere is turned about its
//!   base until it is out (the contact of `SphereCollider::contact`), and its rate into the
//!   sphere is taken away; what hangs beyond it follows by Eq. 4.10.
//!
//! Where the thesis's equations as printed cannot be stepped as they stand, Sylva keeps the
//! model and changes the least it can; each change and why:
//! 1. Eq. 4.2 prints F_Restore = −k_r·(P − P_rest)/‖P − P_rest‖, a force of constant magnitude
//!    k_r whatever the displacement: it is not defined at rest and flips direction as a stem
//!    passes its rest position, so a stem chatters about it instead of settling. Sylva takes
//!    the spring the text describes ("we use the spring force"), −k_r·(P − P_rest), with
//!    k_r = `stiffness_scale`·k/len² from the forest's joint stiffness k, so that its moment
//!    about the base is the joint's k for a small turn.
//! 2. Eqs. 4.7–4.8 step the spring explicitly; its ω₀ = √(k_r·len²/(m·len²)) reaches hundreds
//!    of rad/s on thin twigs, and explicit Euler is unstable beyond ω₀·Δt = 2 (at 60 Hz every
//!    stem of the default forest). The restoration's part of α is taken at the step's end,
//!    linearised ((1 + ω₀²·Δt²)·ω_{t+Δt} = ω_t + α_t·Δt, `kernels::angular_velocity`), which
//!    is stable for any k_r and Δt and equal to Eq. 4.8 to first order. Stiff twigs then
//!    follow the wind almost statically.
//! 3. Eq. 4.10 adds α·Δt² to ω·Δt, counting the step's acceleration again after Eq. 4.8 has put
//!    it into ω_{t+Δt} (and bringing back the explicit instability of 2.): the own turn is
//!    ω_{t+Δt}·Δt. The two rotations ΔR and ΔR_parent are composed as rotations, not added as
//!    vectors (equal to first order; composing keeps every child's base on its parent's tip
//!    and its rest angle to its parent exact).
//! 4. The m of Eq. 4.7: by default the mass the stem's turn swings (`ChenParams::
//!    carried_inertia`): Eq. 4.10 carries everything beyond its tip along, turned rigidly
//!    about the stem's base, so m·len² is the moment of the stem and all it carries about
//!    its base, Σ m_j·(|c_j − b|² + l_j²/12) in the rest shape. With the stem's own mass alone
//!    as printed, a trunk segment swings its whole crown as if it weighed nothing; with the
//!    outboard mass at the stem's tip only (Weber's absolute-angle inertia), a joint of a long
//!    branch turned the metres of branch beyond it as if they sat at its tip: on a
//!    14,183-stem test tree, whose branches run 50 joints deep, tips moved 1.3 m in the first
//!    step of a 10 m/s wind and 10 m in five.
//! 5. Gravity: Sylva's generated shapes are trees grown under their own weight
//!    (`Material::compensate_gravity`, on by default, as Weber's and Oliapuram's models take
//!    it). Eqs. 4.1 and 4.3 then act in full on the load a stem passes on, but the moment of
//!    the weight a stem carries in its rest shape is held by that shape: only its change as
//!    the stem turns, (ori − ori_rest)·len × W_rest, moves it. With the compensation off, the
//!    whole weight acts, as printed, and the tree sags.
//! 6. Eq. 4.9's K_d is a fraction per step; Sylva gives it per step of 1/60 s and applies
//!    (1 − K_d)^(Δt·60) at other steps, so that the damping per second does not depend on Δt.
//!    Under the quadratic drag law the wind's drag acts on the air's velocity relative to the
//!    stem (a damping), its coefficient capped at m/Δt (`kernels::wind_force`).
//! 7. Eq. 4.6's torque is always across the stem, so a stem never twists about its own axis:
//!    the part of ω along the stem is dropped each step (it could only come from rounding and
//!    from the parent's turn).
//! 8. The response force of self-collision (Eq. 5.1) enters the stem's F^stem (Eq. 4.5) but
//!    not the transfer force of Eq. 4.3, which lists wind, gravity and transfer only: it
//!    reaches the stem's ancestors as Chen passes it on (§5.2, Fig. 5.3), each pair's force
//!    on every stem from the one it acts on to the pair's common ancestor, weighted by Eq.
//!    5.2 (`ChenParams::response_weights`, `SelfCollision::with_transfer`), P1 scaling the
//!    stem's own forces' torque and restoration.
//! 9. The response is an explicit spring per pair, each capped for stability by the runtime;
//!    but every leaf's pairs act on the segment it hangs from, and Chen's leaves turn on their
//!    own, so a leafy segment sums dozens of capped springs and the explicit step diverged
//!    (a 2,721-stem, 3,320-leaf test tree in a 10 m/s gust: 78,000 candidate pairs after 4
//!    steps, 10 million after 6, tips metres off). The response's angular acceleration on a
//!    stem is therefore at most r/(len·Δt²), the turn that moves its tip by its own radius in
//!    one step (`Stem::response_cap`); the same tree then runs 120 steps at about 9,400
//!    candidate pairs per step, as Weber's model does on it. This bounds the push, never the
//!    state: a non-finite force still makes the state non-finite.
//! 10. Chen's leaves turn on their own (§4.1), so the springs on a leaf's pieces also turn the
//!     leaf about its attachment (`SelfCollision::with_leaves_turning`): their torque joins the
//!     wind's in Eq. 4.6, and their stiffness joins the restoration's at the step's end
//!     (`kernels::leaf_step`), so that the springs need no cap there. Without it a leaf pressed
//!     against its own twig or a leaf beside it felt nothing (the pair's two forces on the one
//!     segment cancel): in the gale test of `tests/tests/self_collision.rs` 99.5 % of the
//!     interpenetrating pair-steps remained, with it 41 %.
//! 11. A leaf's blade beyond its root part leaves its twig at the twig's surface, so a blade
//!     the wind turns about its mid-venation swings its edge into its own twig, and a spring
//!     there holds the wind's load only by letting it in (1,278 of the 2,157 pair-steps left
//!     in the gale test). While self-collision answers, each leaf's step therefore ends with
//!     its blade held off its own twig as a contact (`collision::clearance`, as the ground
//!     holds a stem): turned out about its attachment, its turn back in dropped.
//!
//! Parallel processing (§4.3), in each step:
//!
//! | phase          | does |
//! |----------------|------|
//! | self-collision | the response forces for the pose at the step's start (Chen Fig. 1.1: collisions before the forces) |
//! | branches       | the forces, tips to root, then the motion, root to tips |
//! | leaves         | every leaf, in parallel chunks |
//!
//! The branches follow §4.3: the stems near the root (each tree's top block, `Forest::blocks`:
//! the root and every stem whose subtree is larger than the block size) are stepped by one
//! thread, and the subtrees hanging from them, independent of each other, as parallel jobs
//! (the forces: the subtrees first, then the tops; the motion: the tops first, then the
//! subtrees). The thesis starts the parallel jobs at one branching level with enough stems;
//! the forest's blocks start them where a subtree is small enough, which gives at least 16
//! roughly even jobs per tree whatever its shape. Where there are at least twice as many trees
//! as worker threads, whole trees are the jobs instead. A stem's arithmetic is the same in
//! every schedule and every job reads only values of the step's start or of stems an earlier
//! phase finished (a transfer force sums its children in ascending order), so the state is
//! bit-identical for any number of workers. Phase times are wall times.

mod interface;
mod kernels;
mod params;
mod statics;
mod sweep;
#[cfg(test)]
mod tests;

pub use params::{ChenParams, DAMPING_STEP, MAX_DT};

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use glam::{Quat, Vec3};
use sylva_engine::{FrameTimings, JobSystem};

use crate::collider::SphereCollider;
use crate::collision::clearance::{twig_clearances, TwigClearance};
use crate::collision::runtime::{SelfCollision, SelfCollisionParams, SelfCollisionStats};
use crate::dynamics::falling::{FallingLeaves, FallingParams};
use crate::dynamics::pose::segment_axis;
use crate::dynamics::{check_forest, split_lengths, ModelParts, Pose, Refused};
use crate::error::SimError;
use crate::forest::Forest;
use crate::hash::StateHash;
use crate::wind::{Calm, WindField};
use kernels::{Load, Spin};
use statics::Statics;
use sweep::{Ctx, View};

/// Names of the timed phases, as recorded in [`FrameTimings`].
pub const PHASES: &[&str] = &["self-collision", "branches", "leaves"];
const SELF_COLLISION: usize = 0;
const BRANCHES: usize = 1;
const LEAVES: usize = 2;

/// Fewest segments of a job of whole trees.
const MIN_JOB: usize = 1024;
/// Fewest leaves of a job.
const MIN_LEAF_JOB: usize = 2048;

/// Chen's animation over a forest.
pub struct ChenModel {
    forest: Forest,
    params: ChenParams,
    statics: Statics,
    /// The subtree blocks' lengths of every tree (its blocks after the top).
    block_lens: Vec<Vec<usize>>,
    /// The pose: every segment's base and orientation, every leaf's attachment and
    /// orientation (with `spin` and `leaf_omega`, the state).
    pose: Pose,
    spin: Vec<Spin>,
    leaf_omega: Vec<Vec3>,
    /// Scratch of a step: each stem's load and acceleration, its rotation over the step, the
    /// self-collision's forces.
    load: Vec<Load>,
    turned: Vec<Quat>,
    response: Vec<Vec3>,
    self_collision: Option<SelfCollision>,
    /// Per leaf, while self-collision answers (on, with a spring constant above 0): its
    /// blade's clearance from its own twig (`collision::clearance`); empty otherwise.
    twig: Vec<TwigClearance>,
    /// The leaves that came off (`dynamics::falling`), written into the pose after the trees;
    /// the model goes on turning their leaf angles, which no longer show.
    falling: FallingLeaves,
    wind: Box<dyn WindField>,
    colliders: Vec<SphereCollider>,
    time: f64,
    nonfinite: bool,
}

impl ChenModel {
    /// The model's name on the command line and in reports.
    pub const NAME: &'static str = "chen";

    /// Sets up the model at the forest's generated shape, at rest. Refuses invalid settings
    /// and a forest without segments, naming what is wrong.
    pub fn new(forest: Forest, params: ChenParams) -> Result<ChenModel, SimError> {
        ChenModel::from_parts(ModelParts::new(forest), params).map_err(|r| r.error)
    }

    /// As [`new`](Self::new), at the parts' time, with their wind and colliders; on refusal
    /// the parts come back.
    pub fn from_parts(parts: ModelParts, params: ChenParams) -> Result<ChenModel, Box<Refused>> {
        let built = params
            .validate()
            .and_then(|()| check_forest(&parts.forest))
            .and_then(|()| Statics::new(&parts.forest, &params));
        let statics = match built {
            Ok(s) => s,
            Err(error) => return Err(Box::new(Refused { error, parts })),
        };
        let ModelParts {
            forest,
            wind,
            colliders,
            time,
        } = parts;
        let (n, m) = (forest.segment_count(), forest.leaf_count());
        let block_lens = forest
            .trees
            .iter()
            .map(|t| {
                forest.blocks[t.blocks.start as usize + 1..t.blocks.end as usize]
                    .iter()
                    .map(|b| (b.segments.end - b.segments.start) as usize)
                    .collect()
            })
            .collect();
        let falling = match FallingLeaves::new(FallingParams::default(), &forest, false) {
            Ok(f) => f,
            Err(error) => {
                return Err(Box::new(Refused {
                    error,
                    parts: ModelParts {
                        forest,
                        wind,
                        colliders,
                        time,
                    },
                }))
            }
        };
        let mut model = ChenModel {
            falling,
            pose: Pose {
                base: vec![Vec3::ZERO; n],
                orient: vec![Quat::IDENTITY; n],
                leaf_pos: vec![Vec3::ZERO; m],
                leaf_orient: vec![Quat::IDENTITY; m],
                removed: Vec::new(),
            },
            spin: vec![Spin::default(); n],
            leaf_omega: vec![Vec3::ZERO; m],
            load: vec![Load::default(); n],
            turned: vec![Quat::IDENTITY; n],
            response: Vec::new(),
            self_collision: None,
            twig: Vec::new(),
            block_lens,
            statics,
            forest,
            params,
            wind: Box::new(Calm),
            colliders: Vec::new(),
            time,
            nonfinite: false,
        };
        model.set_wind(wind);
        for mut c in colliders {
            c.move_to(time);
            model.colliders.push(c);
        }
        model.reset();
        Ok(model)
    }

    /// The model's settings.
    pub fn params(&self) -> &ChenParams {
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
    /// The pose after the last step.
    pub fn pose(&self) -> &Pose {
        &self.pose
    }
    /// False once any part of the state stopped being finite.
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

    /// Changes the time step \[s\], keeping every rate. Refuses an invalid one, keeping the old.
    pub fn set_time_step(&mut self, dt: f32) -> Result<(), SimError> {
        let params = ChenParams { dt, ..self.params };
        params.validate()?;
        self.statics = Statics::new(&self.forest, &params)?;
        self.params = params;
        Ok(())
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

    /// Turns self-collision on with `params` (its structure and rest distances read in the
    /// generated shape, `Pose::of_shape`, wherever the tree is now), or off.
    pub fn set_self_collision(&mut self, params: Option<SelfCollisionParams>) -> Result<(), SimError> {
        self.self_collision = match params {
            None => None,
            Some(p) => {
                let rest = Pose::of_shape(&self.forest);
                Some(
                    SelfCollision::new(&self.forest, &rest, p)?
                        .with_leaves_turning()
                        .with_transfer(&self.forest, self.params.response_weights)?,
                )
            }
        };
        self.twig = match &self.self_collision {
            Some(sc) if sc.params().stiffness > 0.0 => twig_clearances(&self.forest, &sc.leaf_roots()),
            _ => Vec::new(),
        };
        self.response.clear();
        Ok(())
    }

    /// What self-collision found and cost in the last step (`None` while off).
    pub fn self_collision_stats(&self) -> Option<SelfCollisionStats> {
        self.self_collision.as_ref().map(SelfCollision::stats)
    }

    /// Every stem and leaf back at rest in the generated shape.
    pub fn reset(&mut self) {
        self.falling.reset(&mut self.pose);
        let st = &self.statics;
        self.pose.base.copy_from_slice(&st.rest_base);
        self.pose.orient.copy_from_slice(&st.rest_orient);
        for (j, b) in st.blade.iter().enumerate() {
            let i = st.leaf_seg[j] as usize;
            let q = st.rest_orient[i];
            self.pose.leaf_orient[j] = (q * b.rest).normalize();
            self.pose.leaf_pos[j] = st.rest_base[i] + segment_axis(q) * b.along;
        }
        self.spin.fill(Spin::default());
        self.leaf_omega.fill(Vec3::ZERO);
        self.response.clear();
        if let Some(sc) = &mut self.self_collision {
            sc.restart();
        }
        self.nonfinite = false;
    }

    /// Kinetic energy \[J\]: ½·m·|v|² of every stem's centre (its own mass) and ½·m·L²·|ω|² of
    /// every leaf about its attachment.
    pub fn kinetic_energy(&self) -> f64 {
        let s = &self.forest.seg;
        let stems: f64 = self
            .spin
            .iter()
            .zip(&s.mass)
            .map(|(sp, &m)| 0.5 * m as f64 * sp.vel.as_dvec3().length_squared())
            .sum();
        let leaves: f64 = self
            .leaf_omega
            .iter()
            .zip(&self.statics.blade)
            .map(|(w, b)| 0.5 / b.inv_inertia as f64 * w.as_dvec3().length_squared())
            .sum();
        stems + leaves
    }

    /// FNV-1a hash of the bit patterns of every base, orientation, rate and velocity of the
    /// stems and every leaf's position, orientation and rate.
    pub fn state_hash(&self) -> u64 {
        let mut h = StateHash::new();
        h.add(self.pose.base.iter().flat_map(|v| v.to_array()));
        h.add(self.pose.orient.iter().flat_map(|q| q.to_array()));
        h.add(
            self.spin
                .iter()
                .flat_map(|s| s.omega.to_array().into_iter().chain(s.vel.to_array())),
        );
        h.add(self.pose.leaf_pos.iter().flat_map(|v| v.to_array()));
        h.add(self.pose.leaf_orient.iter().flat_map(|q| q.to_array()));
        h.add(self.leaf_omega.iter().flat_map(|v| v.to_array()));
        self.falling.hash_state(&mut h);
        h.finish()
    }

    /// Bytes held: the forest, the constants, the state, the pose and the scratch
    /// (capacities).
    pub fn heap_bytes(&self) -> usize {
        use crate::dynamics::vec_bytes as b;
        self.forest.heap_bytes()
            + self.statics.heap_bytes()
            + self.pose.heap_bytes()
            + self.falling.heap_bytes()
            + b(&self.spin)
            + b(&self.leaf_omega)
            + b(&self.load)
            + b(&self.turned)
            + b(&self.response)
            + self.block_lens.iter().map(b).sum::<usize>()
            + b(&self.block_lens)
    }

    /// Advances one time step: the colliders to the step's end, the self-collision's response
    /// to the pose at the step's start, then the branches and the leaves as jobs of `jobs`.
    /// Phase wall times go to the phases of `timings` named in [`PHASES`].
    pub fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        let h = self.params.dt as f64;
        // The trees step from their own pose, the falling leaves' taken out.
        self.falling.unwrite(&mut self.pose);
        self.wind.prepare(self.time, jobs, timings);
        for c in &mut self.colliders {
            c.move_to(self.time + h);
        }
        let mut ns = [Duration::ZERO; 3];
        if let Some(sc) = &mut self.self_collision {
            let t0 = Instant::now();
            self.response.clear();
            self.response.resize(self.forest.segment_count(), Vec3::ZERO);
            sc.step(jobs, &self.forest, &self.pose, self.params.dt, &mut self.response);
            ns[SELF_COLLISION] = t0.elapsed();
        }
        let times = match self.wind.detach(self.time + h) {
            Some(frozen) => {
                let mut wind = std::mem::replace(&mut self.wind, frozen);
                let times = jobs.scope(|s| {
                    s.spawn(|_| wind.step_detached(jobs, timings));
                    self.step_trees(jobs)
                });
                let frozen = std::mem::replace(&mut self.wind, wind);
                self.wind.attach(frozen);
                times
            }
            None => self.step_trees(jobs),
        };
        (ns[BRANCHES], ns[LEAVES]) = times;

        self.falling
            .step(&self.forest, &*self.wind, self.params.dt, jobs, &mut self.pose);
        for (k, name) in PHASES.iter().enumerate() {
            if let Some(id) = timings.phase_id(name) {
                timings.add(id, ns[k]);
            }
        }
        self.time += h;
    }

    /// The branches and the leaves of one step; their wall times.
    fn step_trees(&mut self, jobs: &JobSystem) -> (Duration, Duration) {
        let ChenModel {
            forest,
            params,
            statics,
            block_lens,
            pose,
            spin,
            leaf_omega,
            load,
            turned,
            response,
            wind,
            colliders,
            nonfinite,
            self_collision,
            twig,
            ..
        } = self;
        let c = Ctx {
            forest,
            statics,
            params,
            keep: params.keep(),
            wind: &**wind,
            uniform: wind.uniform(),
            colliders,
            response,
            original: self_collision.as_ref().map_or(&[], |sc| sc.original_weights()),
            leaf_turns: self_collision.as_ref().map_or(&[], |sc| sc.leaf_turns()),
            twig,
        };
        let c = &c;
        let finite = AtomicBool::new(true);
        let finite = &finite;
        let t0 = Instant::now();
        let tree_lens = || forest.trees.iter().map(|t| t.segments.len());
        let threads = jobs.threads();
        if threads == 1 || forest.tree_count() >= 2 * threads {
            // Whole trees as jobs, grouped to at least MIN_JOB segments.
            let mut groups = Vec::new();
            let (mut start, mut size) = (0, 0);
            for (t, n) in tree_lens().enumerate() {
                size += n;
                if size >= MIN_JOB || t + 1 == forest.tree_count() {
                    groups.push(size);
                    start += size;
                    size = 0;
                }
            }
            debug_assert_eq!(start, forest.segment_count());
            let mut loads = split_lengths(load, groups.iter().copied());
            let mut orients = split_lengths(&mut pose.orient, groups.iter().copied());
            let mut bases = split_lengths(&mut pose.base, groups.iter().copied());
            let mut spins = split_lengths(spin, groups.iter().copied());
            let mut turns = split_lengths(turned, groups.iter().copied());
            jobs.scope(|s| {
                let mut at = 0;
                for g in 0..groups.len() {
                    let (l, o, b, sp, tu) = (
                        std::mem::take(&mut loads[g]),
                        std::mem::take(&mut orients[g]),
                        std::mem::take(&mut bases[g]),
                        std::mem::take(&mut spins[g]),
                        std::mem::take(&mut turns[g]),
                    );
                    let first = at;
                    at += groups[g];
                    s.spawn(move |_| {
                        let mut lv = View::alone(first, l);
                        sweep::forces(c, (o, b, sp, first), &mut lv);
                        let ok = sweep::motion(
                            c,
                            (&lv.own[..], first),
                            (
                                &mut View::alone(first, o),
                                &mut View::alone(first, b),
                                &mut View::alone(first, tu),
                            ),
                            sp,
                        );
                        if !ok {
                            finite.store(false, Ordering::Relaxed);
                        }
                    });
                }
            });
        } else {
            per_block(c, jobs, block_lens, (load, pose, spin, turned), finite);
        }
        let t1 = Instant::now();
        // Leaves in parallel chunks (§4.3).
        let m = forest.leaf_count();
        let chunk = m.div_ceil(4 * threads).max(MIN_LEAF_JOB);
        let (orient, base, turned) = (&pose.orient[..], &pose.base[..], &turned[..]);
        jobs.scope(|s| {
            let parts = pose
                .leaf_pos
                .chunks_mut(chunk)
                .zip(pose.leaf_orient.chunks_mut(chunk))
                .zip(leaf_omega.chunks_mut(chunk));
            for (k, ((p, q), w)) in parts.enumerate() {
                s.spawn(move |_| {
                    if !sweep::leaves(c, (orient, base, turned), k * chunk, (p, q, w)) {
                        finite.store(false, Ordering::Relaxed);
                    }
                });
            }
        });
        let t2 = Instant::now();
        *nonfinite |= !finite.load(Ordering::Relaxed);
        (t1 - t0, t2 - t1)
    }
}

/// One forest-order array cut as each tree's top and its subtree blocks (with the segment
/// each starts at).
struct Runs<'a, T> {
    start: usize,
    top: &'a mut [T],
    blocks: Vec<(usize, &'a mut [T])>,
}

fn runs<'a, T>(s: &'a mut [T], forest: &Forest, block_lens: &[Vec<usize>], top_len: &[usize]) -> Vec<Runs<'a, T>> {
    let trees = split_lengths(s, forest.trees.iter().map(|t| t.segments.len()));
    trees
        .into_iter()
        .enumerate()
        .map(|(t, slice)| {
            let start = forest.trees[t].segments.start as usize;
            let (top, rest) = slice.split_at_mut(top_len[t]);
            let mut at = start + top_len[t];
            let blocks = split_lengths(rest, block_lens[t].iter().copied())
                .into_iter()
                .map(|b| {
                    let s = at;
                    at += b.len();
                    (s, b)
                })
                .collect();
            Runs { start, top, blocks }
        })
        .collect()
}

/// The branches' passes by §4.3 (fewer trees than twice the threads): in every tree, the
/// forces of the subtree blocks in parallel, then of the tops; the motion of the tops, then of
/// the subtree blocks in parallel.
fn per_block(
    c: &Ctx<'_>,
    jobs: &JobSystem,
    block_lens: &[Vec<usize>],
    (load, pose, spin, turned): (&mut [Load], &mut Pose, &mut [Spin], &mut [Quat]),
    finite: &AtomicBool,
) {
    let forest = c.forest;
    let top_len = &c.statics.top_len[..];
    {
        let (orient, base, spin) = (&pose.orient[..], &pose.base[..], &spin[..]);
        // Forces, subtrees first.
        let mut trees = runs(load, forest, block_lens, top_len);
        jobs.scope(|s| {
            for tr in &mut trees {
                for (b0, blk) in &mut tr.blocks {
                    let (b0, blk) = (*b0, &mut **blk);
                    s.spawn(move |_| sweep::forces(c, (orient, base, spin, 0), &mut View::alone(b0, blk)));
                }
            }
        });
        drop(trees);
        // Then each tree's top, reading its subtrees' loads.
        let mut tops: Vec<(usize, &mut [Load], &[Load])> =
            split_lengths(load, forest.trees.iter().map(|t| t.segments.len()))
                .into_iter()
                .enumerate()
                .map(|(t, slice)| {
                    let (top, rest) = slice.split_at_mut(top_len[t]);
                    (forest.trees[t].segments.start as usize, top, &*rest)
                })
                .collect();
        jobs.scope(|s| {
            for (start, top, rest) in &mut tops {
                let (start, top, rest) = (*start, &mut **top, &**rest);
                s.spawn(move |_| {
                    let mut v = View {
                        own0: start,
                        other0: start + top.len(),
                        own: top,
                        other: rest,
                    };
                    sweep::forces(c, (orient, base, spin, 0), &mut v);
                });
            }
        });
    }
    let load = &load[..];
    let mut orients = runs(&mut pose.orient, forest, block_lens, top_len);
    let mut bases = runs(&mut pose.base, forest, block_lens, top_len);
    let mut turns = runs(turned, forest, block_lens, top_len);
    let mut spins = runs(spin, forest, block_lens, top_len);
    let report = |ok: bool| {
        if !ok {
            finite.store(false, Ordering::Relaxed);
        }
    };
    let report = &report;
    // Motion: the tops first.
    jobs.scope(|s| {
        let all = orients.iter_mut().zip(&mut bases).zip(&mut turns).zip(&mut spins);
        for (((o, b), tu), sp) in all {
            let start = o.start;
            let (o, b, tu, sp) = (&mut *o.top, &mut *b.top, &mut *tu.top, &mut *sp.top);
            s.spawn(move |_| {
                report(sweep::motion(
                    c,
                    (load, 0),
                    (
                        &mut View::alone(start, o),
                        &mut View::alone(start, b),
                        &mut View::alone(start, tu),
                    ),
                    sp,
                ))
            });
        }
    });
    // Then the subtrees, in parallel.
    jobs.scope(|s| {
        let all = orients.iter_mut().zip(&mut bases).zip(&mut turns).zip(&mut spins);
        for (((o, b), tu), sp) in all {
            let start = o.start;
            let (ot, bt, tt) = (&*o.top, &*b.top, &*tu.top);
            let blocks = o
                .blocks
                .iter_mut()
                .zip(&mut b.blocks)
                .zip(&mut tu.blocks)
                .zip(&mut sp.blocks);
            for (((ob, bb), tb), sb) in blocks {
                let b0 = ob.0;
                let (ob, bb, tb, sb) = (&mut *ob.1, &mut *bb.1, &mut *tb.1, &mut *sb.1);
                s.spawn(move |_| {
                    report(sweep::motion(
                        c,
                        (load, 0),
                        (
                            &mut View {
                                own0: b0,
                                own: ob,
                                other0: start,
                                other: ot,
                            },
                            &mut View {
                                own0: b0,
                                own: bb,
                                other0: start,
                                other: bt,
                            },
                            &mut View {
                                own0: b0,
                                own: tb,
                                other0: start,
                                other: tt,
                            },
                        ),
                        sb,
                    ))
                });
            }
        }
    });
}
