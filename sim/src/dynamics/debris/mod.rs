//! Debris: the pieces a storm breaks off the trees (and whole trees torn from their roots) as
//! free rigid bodies, for the models whose trees break (Weber's and Oliapuram's).
//!
//! A model hands [`Debris::spawn`] the segments beyond a broken joint, with their pose and
//! velocities; from then on the piece is one rigid body (mass, centre of mass and inertia from
//! its segments' frusta of wood and its leaves, `body`), which falls under gravity, feels the
//! wind's drag on the velocity relative to the air (`drag`), collides with the ground y = 0 and
//! the sphere colliders by its segments' capsules, with Coulomb friction and restitution
//! (`contact`), tumbles and comes to rest. The model writes the pieces' segments and leaves
//! into its pose with [`Debris::write_pose`] and stops moving them itself.
//!
//! One step of a piece: gravity and drag change its velocity and angular momentum (linearly
//! implicit in the drag); the contacts, found at the current pose, change them by impulses;
//! then the drift: the centre of mass moves by dt·v (semi-implicit Euler; in free flight,
//! touching nothing, exactly as gravity alone would move it, see [`Debris::step`]), the orientation turns by the
//! angular momentum (second-order midpoint rule); last, a projection lifts the piece out of
//! the spheres and above the ground.
//!
//! Invariants:
//! - At most `params.cap` pieces live; spawning one more removes the oldest first, and the
//!   segments of a removed piece are marked in `removed` (one flag per forest segment, empty
//!   while nothing was ever removed) until [`Debris::clear`]. A segment is in at most one
//!   piece, live or removed (`live` flags the live pieces' segments); spawning one again is
//!   refused.
//! - Pieces never interact with each other (debris lying on debris is beyond this module), so
//!   each piece's step depends on its own state, the wind and the colliders only: pieces step
//!   in parallel jobs (groups of whole pieces) and the state is bit-identical for any number of
//!   workers.
//! - A sleeping piece costs a wind sample and a test per collider a step, nothing else.
//! - After every step no capsule of a live piece lies below the ground.

mod body;
mod contact;
mod drag;
#[cfg(test)]
mod tests;

use glam::Vec3;
use sylva_engine::JobSystem;

use crate::collider::SphereCollider;
use crate::dynamics::{vec_bytes, Pose};
use crate::error::{check_positive, check_range, SimError};
use crate::forest::{Forest, NO_PARENT};
use crate::hash::StateHash;
use crate::wind::WindField;

use body::Piece;
use contact::Contact;
use drag::DragScratch;

/// Settings of the debris.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DebrisParams {
    /// Most pieces alive at once; spawning one more removes the oldest (1..=100,000).
    pub cap: usize,
    /// Coulomb friction coefficient μ on the ground and the spheres (0..=10).
    pub friction: f32,
    /// Coefficient of restitution of an impact faster than 1 m/s (0..=1).
    pub restitution: f32,
    /// Gravity \[m/s²\], down −y (0..=1000).
    pub gravity: f32,
    /// Sequential-impulse passes over a piece's contacts each step (1..=100).
    pub iterations: u32,
    /// A piece in contact whose every point moves slower than this \[m/s\] (measured as
    /// |v| + |ω|·radius) is still (greater than 0, at most 10).
    pub sleep_speed: f32,
    /// A piece still for this long sleeps: it stops moving until woken \[s\] (0..=60).
    pub sleep_time: f32,
    /// A sleeping piece wakes when the wind at its centre of mass differs from the wind it fell
    /// asleep in by more than this \[m/s\] (greater than 0, at most 100), or when a moving
    /// sphere collider reaches it.
    pub wake_wind: f32,
}

impl Default for DebrisParams {
    fn default() -> Self {
        DebrisParams {
            cap: 64,
            friction: 0.6,
            restitution: 0.1,
            gravity: 9.81,
            iterations: 8,
            sleep_speed: 0.02,
            sleep_time: 0.5,
            wake_wind: 1.0,
        }
    }
}

impl DebrisParams {
    /// Checks every field against its range, naming the first one out of it.
    pub fn validate(&self) -> Result<(), SimError> {
        if !(1..=100_000).contains(&self.cap) {
            return Err(SimError::param("debris cap", self.cap, "allowed 1..=100000 pieces"));
        }
        check_range("debris friction", self.friction, 0.0, 10.0)?;
        check_range("debris restitution", self.restitution, 0.0, 1.0)?;
        check_range("debris gravity", self.gravity, 0.0, 1000.0)?;
        if !(1..=100).contains(&self.iterations) {
            return Err(SimError::param("debris iterations", self.iterations, "allowed 1..=100"));
        }
        check_positive("debris sleep speed", self.sleep_speed, 10.0)?;
        check_range("debris sleep time", self.sleep_time, 0.0, 60.0)?;
        check_positive("debris wake wind", self.wake_wind, 100.0)?;
        Ok(())
    }
}

/// A piece with the scratch its step uses.
#[derive(Clone, Debug)]
struct Slot {
    piece: Piece,
    contacts: Vec<Contact>,
    drag: DragScratch,
}

/// Every broken piece and fallen tree of one forest, as rigid bodies.
#[derive(Clone, Debug)]
pub struct Debris {
    params: DebrisParams,
    /// Live pieces, oldest first.
    slots: Vec<Slot>,
    /// One flag per forest segment once anything was removed, else empty.
    removed: Vec<bool>,
    /// One flag per forest segment once anything was spawned: part of a live piece.
    live: Vec<bool>,
    removed_count: usize,
    /// Pieces spawned since the last clear, and how many of them were whole trees.
    spawned: u64,
    uprooted: usize,
}

/// Segments a job steps at least (whole pieces), so that a job is worth its overhead.
const JOB_SEGMENTS: usize = 256;

impl Debris {
    /// No debris yet; refuses bad settings, naming them.
    pub fn new(params: DebrisParams) -> Result<Debris, SimError> {
        params.validate()?;
        Ok(Debris {
            params,
            slots: Vec::new(),
            removed: Vec::new(),
            live: Vec::new(),
            removed_count: 0,
            spawned: 0,
            uprooted: 0,
        })
    }

    /// The settings.
    pub fn params(&self) -> &DebrisParams {
        &self.params
    }

    /// Makes one free rigid body of `segments` (all of one tree; `segments[0]` is the piece's
    /// first segment, parents before children) and their leaves, from their current world pose
    /// in `pose` and the world velocity of each segment's centre, `velocity[k]` for
    /// `segments[k]`. `uprooted`: a whole tree torn from its roots (counted apart). Returns the
    /// segments of the pieces the cap removed (oldest first), which are no longer simulated
    /// nor drawn. An empty `segments` makes nothing.
    ///
    /// # Panics
    ///
    /// When the arguments break the rules above (lengths differ, a segment out of range, of
    /// another tree, before its parent, or already debris): a model's bug, not input. See
    /// [`try_spawn`](Self::try_spawn) for the checked form.
    pub fn spawn(
        &mut self,
        forest: &Forest,
        segments: &[u32],
        pose: &Pose,
        velocity: &[Vec3],
        uprooted: bool,
    ) -> Vec<u32> {
        match self.try_spawn(forest, segments, pose, velocity, uprooted) {
            Ok(removed) => removed,
            Err(e) => panic!("Debris::spawn: {e}"),
        }
    }

    /// [`spawn`](Self::spawn), refusing arguments that break its rules with the reason.
    pub fn try_spawn(
        &mut self,
        forest: &Forest,
        segments: &[u32],
        pose: &Pose,
        velocity: &[Vec3],
        uprooted: bool,
    ) -> Result<Vec<u32>, SimError> {
        self.check_spawn(forest, segments, pose, velocity)?;
        if segments.is_empty() {
            return Ok(Vec::new());
        }
        let piece = Piece::new(forest, segments, pose, velocity, self.spawned, uprooted);
        if self.live.is_empty() {
            self.live = vec![false; forest.segment_count()];
        }
        for &s in segments {
            self.live[s as usize] = true;
        }
        self.spawned += 1;
        if uprooted {
            self.uprooted += 1;
        }
        let mut gone = Vec::new();
        while self.slots.len() >= self.params.cap {
            let old = self.slots.remove(0);
            if self.removed.is_empty() {
                self.removed = vec![false; forest.segment_count()];
            }
            for &s in &old.piece.segs {
                self.removed[s as usize] = true;
                self.live[s as usize] = false;
            }
            self.removed_count += 1;
            gone.extend_from_slice(&old.piece.segs);
        }
        self.slots.push(Slot {
            piece,
            contacts: Vec::new(),
            drag: DragScratch::default(),
        });
        Ok(gone)
    }

    fn check_spawn(&self, forest: &Forest, segments: &[u32], pose: &Pose, velocity: &[Vec3]) -> Result<(), SimError> {
        let n = forest.segment_count();
        if velocity.len() != segments.len() {
            return Err(SimError::param(
                "debris velocities",
                velocity.len(),
                format!("one per segment of the piece ({})", segments.len()),
            ));
        }
        if pose.base.len() != n || pose.orient.len() != n || pose.leaf_pos.len() != forest.leaf_count() {
            return Err(SimError::Invariant(format!(
                "debris: a pose of {} bases, {} orientations and {} leaves for a forest of {n} segments and {} leaves",
                pose.base.len(),
                pose.orient.len(),
                pose.leaf_pos.len(),
                forest.leaf_count()
            )));
        }
        let Some(&first) = segments.first() else {
            return Ok(());
        };
        if first as usize >= n {
            return Err(SimError::param(
                "debris segment",
                first,
                format!("the forest has {n} segments"),
            ));
        }
        let tree = forest.tree_of(first as usize);
        let range = &forest.trees[tree].segments;
        let mut seen = std::collections::HashSet::with_capacity(segments.len());
        for (k, &s) in segments.iter().enumerate() {
            if !range.contains(&s) {
                return Err(SimError::param(
                    "debris segment",
                    s,
                    format!("every segment of a piece belongs to tree {tree} (segments {range:?})"),
                ));
            }
            let p = forest.seg.parent[s as usize];
            if k > 0 && (p == NO_PARENT || !seen.contains(&p)) {
                return Err(SimError::param(
                    "debris segment",
                    s,
                    "after the first, each segment of a piece follows its parent in the piece",
                ));
            }
            if !seen.insert(s) {
                return Err(SimError::param("debris segment", s, "listed twice"));
            }
            if self.removed.get(s as usize).copied().unwrap_or(false)
                || self.live.get(s as usize).copied().unwrap_or(false)
            {
                return Err(SimError::param("debris segment", s, "already debris"));
            }
            if !velocity[k].is_finite() {
                return Err(SimError::param(
                    "debris velocity",
                    format!("{:?}", velocity[k]),
                    "must be finite",
                ));
            }
        }
        Ok(())
    }

    /// Advances every piece by `dt` \[s\]: gravity, the wind's drag (the wind sampled at segment
    /// centres and leaves, on the velocity relative to the wind), contacts with the ground
    /// plane y = 0 and the sphere colliders by each segment's capsule, Coulomb friction,
    /// resting. Deterministic, independent of the number of workers.
    ///
    /// The drift: the contact solve constrains the velocity v, and the centre of mass moves by
    /// dt·v (semi-implicit Euler). A piece that touched nothing this step moves by dt·v +
    /// ½·g·dt² instead (the constant-acceleration drift, exact for gravity): semi-implicit
    /// Euler alone lags the free fall by ½·g·t·dt, 1.7 % of ½·g·t² after 1 s at 1/60 s.
    ///
    /// A `dt` that is not a finite positive number (a model validates its own) steps nothing.
    pub fn step(
        &mut self,
        forest: &Forest,
        wind: &dyn WindField,
        colliders: &[SphereCollider],
        dt: f32,
        jobs: &JobSystem,
    ) {
        if self.slots.is_empty() || !(dt.is_finite() && dt > 0.0) {
            return;
        }
        let params = self.params;
        let step_one = |slot: &mut Slot| step_piece(slot, forest, wind, colliders, dt, &params);
        if jobs.threads() == 1 || self.slots.len() == 1 {
            self.slots.iter_mut().for_each(step_one);
            return;
        }
        // Groups of whole pieces, each at least JOB_SEGMENTS awake segments (or the rest).
        let mut groups: Vec<&mut [Slot]> = Vec::new();
        let mut rest: &mut [Slot] = &mut self.slots;
        while !rest.is_empty() {
            let mut count = 0;
            let mut k = 0;
            while k < rest.len() && count < JOB_SEGMENTS {
                if !rest[k].piece.asleep {
                    count += rest[k].piece.segs.len();
                }
                k += 1;
            }
            let (group, tail) = std::mem::take(&mut rest).split_at_mut(k);
            groups.push(group);
            rest = tail;
        }
        let step_one = &step_one;
        jobs.scope(|s| {
            for group in groups {
                s.spawn(move |_| group.iter_mut().for_each(step_one));
            }
        });
    }

    /// Writes base and orientation of every live piece's segments and the position of their
    /// leaves (and the leaves' orientation when the pose has per-leaf orientations) into
    /// `pose`, and marks removed segments in `pose.removed` (which it empties when nothing was
    /// removed).
    pub fn write_pose(&self, forest: &Forest, pose: &mut Pose) {
        for slot in &self.slots {
            slot.piece.write_pose(forest, pose);
        }
        if self.removed_count == 0 {
            pose.removed.clear();
        } else {
            pose.removed.clear();
            pose.removed.extend_from_slice(&self.removed);
        }
    }

    /// Live pieces.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// No live piece.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Pieces the cap removed since the last [`clear`](Self::clear).
    pub fn removed_count(&self) -> usize {
        self.removed_count
    }

    /// Whether segment `i` belongs to a piece the cap removed.
    pub fn is_removed(&self, i: usize) -> bool {
        self.removed.get(i).copied().unwrap_or(false)
    }

    /// Pieces spawned since the last [`clear`](Self::clear) (live or removed).
    pub fn spawned_count(&self) -> usize {
        self.spawned as usize
    }

    /// Whole trees spawned since the last [`clear`](Self::clear).
    pub fn uprooted_count(&self) -> usize {
        self.uprooted
    }

    /// Mass of live piece `piece` (oldest is 0) \[kg\].
    pub fn mass(&self, piece: usize) -> f32 {
        self.slots[piece].piece.mass
    }

    /// Centre of mass of live piece `piece` \[m\].
    pub fn center_of_mass(&self, piece: usize) -> Vec3 {
        self.slots[piece].piece.x
    }

    /// Velocity of the centre of mass of live piece `piece` [m/s].
    pub fn velocity(&self, piece: usize) -> Vec3 {
        self.slots[piece].piece.v
    }

    /// Angular velocity of live piece `piece` [rad/s].
    pub fn angular_velocity(&self, piece: usize) -> Vec3 {
        self.slots[piece].piece.omega()
    }

    /// Angular momentum of live piece `piece` about its centre of mass [kg·m²/s].
    pub fn angular_momentum(&self, piece: usize) -> Vec3 {
        self.slots[piece].piece.l
    }

    /// Whether live piece `piece` is a whole tree torn from its roots.
    pub fn is_uprooted(&self, piece: usize) -> bool {
        self.slots[piece].piece.uprooted
    }

    /// Orientation of live piece `piece`'s principal frame.
    pub fn orientation(&self, piece: usize) -> glam::Quat {
        self.slots[piece].piece.q
    }

    /// Principal moments of inertia of live piece `piece` [kg·m²].
    pub fn principal_inertia(&self, piece: usize) -> Vec3 {
        self.slots[piece].piece.inertia
    }

    /// The forest segments of live piece `piece`, as spawned.
    pub fn segments(&self, piece: usize) -> &[u32] {
        &self.slots[piece].piece.segs
    }

    /// Whether live piece `piece` is asleep.
    pub fn asleep(&self, piece: usize) -> bool {
        self.slots[piece].piece.asleep
    }

    /// Height of the lowest point of live piece `piece`'s capsules above the ground \[m\].
    pub fn lowest_point(&self, forest: &Forest, piece: usize) -> f32 {
        contact::lowest(&self.slots[piece].piece, forest)
    }

    /// Kinetic energy of every live piece \[J\].
    pub fn kinetic_energy(&self) -> f64 {
        self.slots.iter().map(|s| s.piece.kinetic_energy()).sum()
    }

    /// Forgets everything: no piece, nothing removed, the counts back to zero.
    pub fn clear(&mut self) {
        self.slots = Vec::new();
        self.removed = Vec::new();
        self.live = Vec::new();
        self.removed_count = 0;
        self.spawned = 0;
        self.uprooted = 0;
    }

    /// False once any piece's state stopped being finite.
    pub fn finite(&self) -> bool {
        self.slots.iter().all(|s| s.piece.finite())
    }

    /// Feeds the bit patterns of the state (every piece's position, orientation, velocity,
    /// angular momentum, sleep; the removed flags' count) into `h`.
    pub fn hash_into(&self, h: &mut impl std::hash::Hasher) {
        h.write_usize(self.slots.len());
        h.write_usize(self.removed_count);
        for s in &self.slots {
            let p = &s.piece;
            h.write_u64(p.serial);
            for x in piece_values(p) {
                h.write_u32(x.to_bits());
            }
        }
    }

    /// Adds the bit patterns of the state to a model's [`StateHash`] (the same values as
    /// [`hash_into`](Self::hash_into)).
    pub fn hash_state(&self, h: &mut StateHash) {
        h.add([
            f32::from_bits(self.slots.len() as u32),
            f32::from_bits(self.removed_count as u32),
        ]);
        for s in &self.slots {
            h.add([f32::from_bits(s.piece.serial as u32)]);
            h.add(piece_values(&s.piece));
        }
    }

    /// Heap bytes held (pieces, their scratch, the removed flags).
    pub fn heap_bytes(&self) -> usize {
        vec_bytes(&self.slots)
            + vec_bytes(&self.removed)
            + vec_bytes(&self.live)
            + self
                .slots
                .iter()
                .map(|s| s.piece.heap_bytes() + s.contacts.capacity() * contact::CONTACT_BYTES + s.drag.heap_bytes())
                .sum::<usize>()
    }
}

/// The dynamic state of a piece, as numbers.
fn piece_values(p: &Piece) -> impl Iterator<Item = f32> {
    [
        p.x.x,
        p.x.y,
        p.x.z,
        p.q.x,
        p.q.y,
        p.q.z,
        p.q.w,
        p.v.x,
        p.v.y,
        p.v.z,
        p.l.x,
        p.l.y,
        p.l.z,
        p.still,
        if p.asleep { 1.0 } else { 0.0 },
    ]
    .into_iter()
}

/// One piece's step (see [`Debris::step`]).
fn step_piece(
    slot: &mut Slot,
    forest: &Forest,
    wind: &dyn WindField,
    colliders: &[SphereCollider],
    dt: f32,
    params: &DebrisParams,
) {
    let p = &mut slot.piece;
    if p.asleep {
        // Woken by a change of wind or a moving sphere reaching it; otherwise nothing to do.
        let gust = (wind.sample(p.x) - p.sleep_wind).length() > params.wake_wind;
        // A moving sphere within a step's travel of the piece's bounding sphere.
        let pushed = colliders.iter().any(|c| {
            let speed = contact::sphere_velocity(c).length();
            speed > 0.0 && (c.center - p.x).length() < p.radius + c.radius + speed * dt
        });
        if !(gust || pushed) {
            return;
        }
        p.asleep = false;
        p.still = 0.0;
    }
    drag::apply_forces(p, forest, wind, params.gravity, dt, &mut slot.drag);
    // Contacts within the distance a point of the piece can travel this step.
    let reach = (p.v.length() + p.omega().length() * p.radius) * dt + params.gravity * dt * dt + 0.01;
    contact::detect(p, forest, colliders, reach, dt, &mut slot.contacts);
    let settings = contact::Settings {
        friction: params.friction,
        restitution: params.restitution,
        iterations: params.iterations,
        dt,
        gravity: params.gravity,
    };
    let outcome = contact::solve(p, &mut slot.contacts, &settings);
    let mut drift = p.v * dt;
    if !outcome.touching {
        drift.y += 0.5 * params.gravity * dt * dt;
    }
    p.x += drift + outcome.bounce_shift;
    p.rotate(dt);
    contact::project(p, forest, colliders);
    // Rest: in contact and slow for sleep_time.
    let speed = p.v.length() + p.omega().length() * p.radius;
    if outcome.touching && speed < params.sleep_speed {
        p.still += dt;
        if p.still >= params.sleep_time {
            p.asleep = true;
            p.v = Vec3::ZERO;
            p.l = Vec3::ZERO;
            p.sleep_wind = wind.sample(p.x);
        }
    } else {
        p.still = 0.0;
    }
}
