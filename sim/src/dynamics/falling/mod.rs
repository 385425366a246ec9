//! Falling leaves (Chen 2011 §6, Fig. 6.4, "the defoliation phenomena"): leaves that come off
//! their twigs, on the viewer's key or when the wind tears their petioles, and fall as free
//! flat plates, in every dynamics model.
//!
//! A model holds one [`FallingLeaves`] and, after writing its own pose each step, calls
//! [`FallingLeaves::step`], which
//! 1. starts the leaves detached since the last step from where the model put them this step,
//!    with the velocity and spin of their attachment over that step;
//! 2. moves every falling leaf one step as a thin elliptical plate in the wind (`aero`:
//!    gravity, drag that depends on the blade's angle to the air, lift, the centre of pressure
//!    that makes it flutter and tumble, added mass, rotational damping), laying it flat on the
//!    ground y = 0 when it reaches it, where it stays (`ground`);
//! 3. checks the petioles of the attached leaves against the wind (`detach`,
//!    `Material::petiole_strength`), marking those torn for the next step;
//! 4. writes the falling and landed leaves into the pose (`leaf_pos`, the blade's attachment
//!    end, and `leaf_orient`), so that the renderer draws them as it draws attached leaves. A
//!    model whose leaves are rigid on their segments leaves `leaf_orient` empty; once a leaf
//!    has come off, this fills it for every leaf (the attached ones with their rigid
//!    orientation, segment orientation times rest orientation) until the model's reset.
//!
//! [`FallingLeaves::drop_leaves`] marks leaves to drop (the viewer's key,
//! `DynamicsModel::drop_leaves`): a seeded pick among the attached ones.
//!
//! Invariants:
//! - A leaf is attached, pending (detached, starting at the next step) or detached (falling or
//!   landed); at most `params.cap` are pending or detached. Only a reset re-attaches them.
//! - Leaves never interact with each other or with the trees, so each leaf's step depends on
//!   its own state and the wind only: they step in parallel jobs of [`JOB_LEAVES`] leaves and
//!   the state is bit-identical for any number of workers. Detaching goes in increasing leaf
//!   order (torn) or the pick's order (dropped), whatever the jobs.
//! - No falling leaf's blade is below the ground after a step; a landed leaf never moves.
//!
//! What the trees feel: a detached leaf's mass and drag stay lumped in its segment's
//! (`SegmentData::mass`, `leaf_drag`), as the forest was built, in every model: the tree does
//! not lighten as it sheds leaves. The models still move the leaf's attachment point (Oliapuram
//! still turns its leaf angle); the pose shows the falling leaf instead. A model puts its own
//! values back ([`FallingLeaves::unwrite`]) before its step, which therefore reads (wind at
//! the leaves, statics, self-collision) exactly the pose it would hold without falling
//! leaves: the trees move bit for bit the same with or without them.
//!
//! Beyond this module: leaves falling through colliders or branches (they pass through),
//! landed leaves blown along the ground, leaves of a piece the debris cap removed (drawn with
//! nothing, as the renderer skips the piece's segments and their leaves).

mod aero;
mod detach;
pub mod ground;
mod params;
#[cfg(test)]
mod tests;

use std::time::Instant;

use glam::{Quat, Vec3};
use sylva_engine::JobSystem;

use crate::dynamics::{vec_bytes, Pose};
use crate::error::SimError;
use crate::forest::{unpack_quat, Forest};
use crate::hash::StateHash;
use crate::wind::WindField;

use aero::Plate;
pub use params::FallingParams;

/// Leaves one job steps.
pub const JOB_LEAVES: usize = 512;

/// What the falling leaves are and cost (`DynamicsModel::falling_leaves`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FallingStats {
    /// Leaves in the air.
    pub falling: usize,
    /// Leaves lying on the ground.
    pub landed: usize,
    /// Leaves detached since the last reset (falling, landed, or starting at the next step).
    pub detached: usize,
    /// Wall time of the last step of the falling leaves \[ms\] (detaching, flight, pose).
    pub step_ms: f64,
}

/// One detached leaf: a flat elliptical plate.
#[derive(Clone, Copy, Debug)]
pub struct Leaf {
    /// The forest's index of the leaf.
    pub leaf: u32,
    /// Lying on the ground.
    pub landed: bool,
    /// Centre of the blade \[m\].
    pub x: Vec3,
    /// Velocity of the centre \[m/s\].
    pub v: Vec3,
    /// World orientation (the leaf's frame: blade along +y from the attachment, across +x,
    /// normal +z, as `Pose::leaf_orient`).
    pub q: Quat,
    /// Angular velocity \[rad/s\], world.
    pub w: Vec3,
    /// Half the blade's length \[m\].
    pub half_length: f32,
    /// Half the blade's width \[m\].
    pub half_width: f32,
    plate: Plate,
}

impl Leaf {
    /// The blade's attachment end (what `Pose::leaf_pos` holds for an attached leaf).
    pub fn attachment(&self) -> Vec3 {
        self.x - self.q * Vec3::new(0.0, self.half_length, 0.0)
    }

    /// Height of the lowest point of the blade above the ground \[m\].
    pub fn lowest(&self) -> f32 {
        ground::lowest(self)
    }

    fn finite(&self) -> bool {
        self.x.is_finite() && self.v.is_finite() && self.q.is_finite() && self.w.is_finite()
    }

    fn values(&self) -> [f32; 15] {
        let (x, v, q, w) = (self.x, self.v, self.q, self.w);
        [
            f32::from_bits(self.leaf),
            if self.landed { 1.0 } else { 0.0 },
            x.x,
            x.y,
            x.z,
            v.x,
            v.y,
            v.z,
            q.x,
            q.y,
            q.z,
            q.w,
            w.x,
            w.y,
            w.z,
        ]
    }
}

/// A leaf detached since the last step: where it was then.
#[derive(Clone, Copy, Debug)]
struct Pending {
    leaf: u32,
    pos: Vec3,
    orient: Quat,
}

/// The leaves of one forest that came off their twigs.
#[derive(Clone, Debug)]
pub struct FallingLeaves {
    params: FallingParams,
    /// The model leaves `Pose::leaf_orient` empty (leaves rigid on their segments).
    rigid: bool,
    /// Per forest leaf: still on its twig.
    attached: Vec<bool>,
    /// Per forest leaf: its segment.
    segment: Vec<u32>,
    pending: Vec<Pending>,
    leaves: Vec<Leaf>,
    /// Per detached leaf (as `leaves`), what the model had put in the pose where the last
    /// [`write_pose`](Self::write_pose) wrote the leaf: its position and orientation.
    under: Vec<(Vec3, Quat)>,
    landed: usize,
    /// Steps since the last reset (the petiole check's phase).
    steps: u64,
    /// Drops since the last reset (each drop's pick has a seed of its own).
    drops: u64,
    last_ns: u64,
}

impl FallingLeaves {
    /// Every leaf of `forest` attached. `rigid`: the model leaves `Pose::leaf_orient` empty.
    /// Refuses bad settings, naming them.
    pub fn new(params: FallingParams, forest: &Forest, rigid: bool) -> Result<FallingLeaves, SimError> {
        params.validate()?;
        let m = forest.leaf_count();
        let mut segment = vec![0u32; m];
        for i in 0..forest.segment_count() {
            for j in forest.leaves_of(i) {
                segment[j] = i as u32;
            }
        }
        Ok(FallingLeaves {
            params,
            rigid,
            attached: vec![true; m],
            segment,
            pending: Vec::new(),
            leaves: Vec::new(),
            under: Vec::new(),
            landed: 0,
            steps: 0,
            drops: 0,
            last_ns: 0,
        })
    }

    /// The settings.
    pub fn params(&self) -> &FallingParams {
        &self.params
    }

    /// Replaces the settings (the leaves in the air keep their sizes and masses); refuses bad
    /// ones, naming them, keeping the old.
    pub fn set_params(&mut self, params: FallingParams) -> Result<(), SimError> {
        params.validate()?;
        self.params = params;
        Ok(())
    }

    /// The detached leaves (falling or landed), in the order they came off.
    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }

    /// Whether forest leaf `j` is still on its twig.
    pub fn is_attached(&self, j: usize) -> bool {
        self.attached.get(j).copied().unwrap_or(true)
    }

    /// Leaves detached, pending included.
    pub fn detached(&self) -> usize {
        self.leaves.len() + self.pending.len()
    }

    /// Counts and the last step's cost.
    pub fn stats(&self) -> FallingStats {
        FallingStats {
            falling: self.leaves.len() - self.landed,
            landed: self.landed,
            detached: self.detached(),
            step_ms: self.last_ns as f64 * 1e-6,
        }
    }

    fn room(&self) -> usize {
        self.params.cap.saturating_sub(self.detached())
    }

    fn check_mass(forest: &Forest) -> Result<(), SimError> {
        let m = forest.material.leaf_mass_per_area;
        if m > 0.0 {
            Ok(())
        } else {
            Err(SimError::param(
                "leaf_mass_per_area",
                m,
                "leaves without mass cannot fall (must be greater than 0)",
            ))
        }
    }

    /// Marks `count` attached leaves (a seeded pick, a new seed at every drop) to come off at
    /// the next step, from where `pose` has them now; fewer when fewer are attached or the cap
    /// is near. Returns how many. Refuses leaves without mass (`leaf_mass_per_area` 0),
    /// naming the field.
    pub fn drop_leaves(&mut self, count: usize, forest: &Forest, pose: &Pose) -> Result<usize, SimError> {
        Self::check_mass(forest)?;
        let n = count.min(self.room());
        let seed = crate::rng::Rng::new(self.params.seed).fork(self.drops).next_u64();
        let chosen = detach::pick(&self.attached, n, seed);
        self.drops += 1;
        for &j in &chosen {
            self.detach(j as usize, forest, pose);
        }
        Ok(chosen.len())
    }

    /// Leaf `j` off its twig at the next step, from where `pose` has it.
    fn detach(&mut self, j: usize, forest: &Forest, pose: &Pose) {
        if !self.attached[j] {
            return;
        }
        self.attached[j] = false;
        let i = self.segment[j] as usize;
        self.pending.push(Pending {
            leaf: j as u32,
            pos: pose.leaf_pos[j],
            orient: pose.leaf_orientation(forest, i, j).normalize(),
        });
    }

    /// Starts leaf `j` of `forest` falling from attachment point `pos` with orientation
    /// `orient` (the leaf's frame, as `Pose::leaf_orient`), the attachment point moving at
    /// `velocity` and the leaf turning at `spin`. Does nothing to a leaf already detached.
    /// Returns whether it started (not when the cap is reached or the leaf has no mass).
    pub fn launch(&mut self, j: usize, forest: &Forest, pos: Vec3, orient: Quat, velocity: Vec3, spin: Vec3) -> bool {
        if j >= self.attached.len() || !self.attached[j] || self.room() == 0 || Self::check_mass(forest).is_err() {
            return false;
        }
        self.attached[j] = false;
        self.start(j, forest, pos, orient, velocity, spin);
        true
    }

    fn start(&mut self, j: usize, forest: &Forest, pos: Vec3, orient: Quat, velocity: Vec3, spin: Vec3) {
        let half_length = 0.5 * forest.leaf.length_m(j).max(1e-3);
        let tree = forest.tree_of(self.segment[j] as usize);
        let aspect = forest.trees.get(tree).map_or(0.5, |t| t.leaf_aspect);
        let half_width = half_length * if aspect > 0.0 { aspect } else { 0.5 };
        let plate = Plate::new(
            half_length,
            half_width,
            forest.material.leaf_mass_per_area,
            &self.params,
        );
        let q = orient.normalize();
        let arm = q * Vec3::new(0.0, half_length, 0.0);
        let mut leaf = Leaf {
            leaf: j as u32,
            landed: false,
            x: pos + arm,
            v: velocity + spin.cross(arm),
            q,
            w: spin,
            half_length,
            half_width,
            plate,
        };
        if ground::land(&mut leaf) {
            self.landed += 1;
        }
        self.leaves.push(leaf);
    }

    /// One step of `dt` \[s\] after the model wrote `pose` for it (see the module's
    /// description): the pending leaves start, every falling leaf moves in `wind`, the wind
    /// tears petioles, and the detached leaves go into `pose`. Nothing at all until a leaf
    /// could come off (calm air, no key) but the cheap check of the wind.
    pub fn step(&mut self, forest: &Forest, wind: &dyn WindField, dt: f32, jobs: &JobSystem, pose: &mut Pose) {
        let t0 = Instant::now();
        if !(dt.is_finite() && dt > 0.0) {
            return;
        }
        // 1. The leaves detached since the last step start from this step's pose.
        for p in std::mem::take(&mut self.pending) {
            let j = p.leaf as usize;
            let (pos, orient) = (
                pose.leaf_pos[j],
                pose.leaf_orientation(forest, self.segment[j] as usize, j),
            );
            let velocity = (pos - p.pos) / dt;
            let mut turn = orient.normalize() * p.orient.conjugate();
            if turn.w < 0.0 {
                turn = -turn;
            }
            let spin = turn.to_scaled_axis() / dt;
            self.start(j, forest, pos, orient, velocity, spin);
        }
        // 2. Flight.
        self.fly(wind, dt, jobs);
        // 3. Petioles.
        if forest.material.leaf_mass_per_area > 0.0 && self.room() > 0 {
            let period = self.params.check_period as usize;
            let phase = (self.steps % period as u64) as usize;
            let torn = detach::torn(forest, &self.attached, &pose.leaf_pos, wind, (phase, period), jobs);
            for j in torn.into_iter().take(self.room()) {
                self.detach(j as usize, forest, pose);
            }
        }
        self.steps += 1;
        // 4. The pose.
        self.write_pose(forest, pose, jobs);
        self.last_ns = t0.elapsed().as_nanos() as u64;
    }

    fn fly(&mut self, wind: &dyn WindField, dt: f32, jobs: &JobSystem) {
        let params = self.params;
        let h = dt / params.substeps as f32;
        let step_all = |leaves: &mut [Leaf]| -> usize {
            let mut landed = 0;
            for leaf in leaves.iter_mut().filter(|l| !l.landed) {
                let air = wind.sample(leaf.x);
                for _ in 0..params.substeps {
                    aero::fly(leaf, air, h, &params);
                    if ground::land(leaf) {
                        landed += 1;
                        break;
                    }
                }
            }
            landed
        };
        if self.leaves.len() == self.landed {
            return;
        }
        let landed: usize = if jobs.threads() == 1 || self.leaves.len() <= JOB_LEAVES {
            step_all(&mut self.leaves)
        } else {
            let chunks: Vec<&mut [Leaf]> = self.leaves.chunks_mut(JOB_LEAVES).collect();
            let mut counts = vec![0usize; chunks.len()];
            let step_all = &step_all;
            jobs.scope(|s| {
                for (chunk, count) in chunks.into_iter().zip(counts.iter_mut()) {
                    s.spawn(move |_| *count = step_all(chunk));
                }
            });
            counts.iter().sum()
        };
        self.landed += landed;
    }

    /// Writes every detached leaf into `pose` (`leaf_pos`: its attachment end; `leaf_orient`:
    /// its orientation), and, for a model whose leaves are rigid, the rigid orientation of
    /// every attached leaf into `leaf_orient` (filled once a leaf came off). Nothing while no
    /// leaf came off.
    pub fn write_pose(&mut self, forest: &Forest, pose: &mut Pose, jobs: &JobSystem) {
        if self.leaves.is_empty() && self.pending.is_empty() {
            return;
        }
        let m = forest.leaf_count();
        if self.rigid {
            pose.leaf_orient.resize(m, Quat::IDENTITY);
            let orient = &pose.orient;
            let fill = |range: std::ops::Range<usize>, out: &mut [Quat]| {
                for (j, o) in range.zip(out) {
                    *o = orient[self.segment[j] as usize] * unpack_quat(forest.leaf.rest[j]);
                }
            };
            const FILL: usize = 16 * 1024;
            if jobs.threads() == 1 || m <= FILL {
                fill(0..m, &mut pose.leaf_orient);
            } else {
                let fill = &fill;
                jobs.scope(|s| {
                    for (c, out) in pose.leaf_orient.chunks_mut(FILL).enumerate() {
                        s.spawn(move |_| fill(c * FILL..c * FILL + out.len(), out));
                    }
                });
            }
        }
        self.under.resize(self.leaves.len(), (Vec3::ZERO, Quat::IDENTITY));
        for (leaf, under) in self.leaves.iter().zip(&mut self.under) {
            let j = leaf.leaf as usize;
            under.0 = std::mem::replace(&mut pose.leaf_pos[j], leaf.attachment());
            if let Some(o) = pose.leaf_orient.get_mut(j) {
                under.1 = std::mem::replace(o, leaf.q);
            }
        }
    }

    /// Puts back into `pose` what the model had put where the last
    /// [`write_pose`](Self::write_pose) wrote the detached leaves: a model calls this before
    /// its step, so that it steps from exactly the pose it would hold without falling leaves
    /// (the trees move the same with or without them).
    pub fn unwrite(&self, pose: &mut Pose) {
        for (leaf, &(p, q)) in self.leaves.iter().zip(&self.under) {
            let j = leaf.leaf as usize;
            pose.leaf_pos[j] = p;
            if let Some(o) = pose.leaf_orient.get_mut(j) {
                *o = q;
            }
        }
    }

    /// The model's own position and orientation of the detached leaves among `leaves` (a
    /// range of forest leaves) at the last [`write_pose`](Self::write_pose), into `leaf_pos`
    /// and `leaf_orient` (the pose's values of that range, copied).
    pub fn unwrite_range(&self, leaves: std::ops::Range<usize>, leaf_pos: &mut [Vec3], leaf_orient: &mut [Quat]) {
        for (leaf, &(p, q)) in self.leaves.iter().zip(&self.under) {
            let j = leaf.leaf as usize;
            if leaves.contains(&j) {
                leaf_pos[j - leaves.start] = p;
                if let Some(o) = leaf_orient.get_mut(j - leaves.start) {
                    *o = q;
                }
            }
        }
    }

    /// Every leaf back on its twig. A model with rigid leaves gets its `leaf_orient` emptied
    /// (its own pose refresh then puts the leaves back).
    pub fn reset(&mut self, pose: &mut Pose) {
        self.attached.fill(true);
        self.pending = Vec::new();
        self.leaves = Vec::new();
        self.under = Vec::new();
        self.landed = 0;
        self.steps = 0;
        self.drops = 0;
        self.last_ns = 0;
        if self.rigid {
            pose.leaf_orient = Vec::new();
        }
    }

    /// False once any leaf's state stopped being finite.
    pub fn finite(&self) -> bool {
        self.leaves.iter().all(Leaf::finite)
    }

    /// Adds the bit patterns of the state to a model's hash: the counts, every detached leaf's
    /// index, landing, position, velocity, orientation and spin, every pending leaf's start.
    pub fn hash_state(&self, h: &mut StateHash) {
        // With every leaf on its twig there is no state of its own: the model's hash is what
        // it was without falling leaves (and what another implementation of the model, e.g.
        // the GPU's, gives).
        if self.leaves.is_empty() && self.pending.is_empty() {
            return;
        }
        h.add([
            f32::from_bits(self.leaves.len() as u32),
            f32::from_bits(self.pending.len() as u32),
            f32::from_bits(self.landed as u32),
        ]);
        for leaf in &self.leaves {
            h.add(leaf.values());
        }
        for p in &self.pending {
            h.add([f32::from_bits(p.leaf), p.pos.x, p.pos.y, p.pos.z]);
            h.add(p.orient.to_array());
        }
    }

    /// Kinetic energy of the leaves in the air (translation; the added mass left out) \[J\].
    pub fn kinetic_energy(&self) -> f64 {
        self.leaves
            .iter()
            .map(|l| 0.5 * l.plate.mass as f64 * l.v.length_squared() as f64)
            .sum()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        vec_bytes(&self.attached)
            + vec_bytes(&self.segment)
            + vec_bytes(&self.pending)
            + vec_bytes(&self.leaves)
            + vec_bytes(&self.under)
    }
}
