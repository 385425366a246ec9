//! Dynamics models: the ways Sylva moves trees, behind one interface, and what they all hand
//! the renderer.
//!
//! Every model reads the same forest (skeletons, materials, leaves: `crate::forest`, built
//! through a [`crate::Material`]) and writes the same [`Pose`], the one thing the renderer and
//! the model-independent tests read of a model's state. Quantities of one model (Weber's plane
//! angles and correction directions, another model's angular velocities) stay in that model's
//! own module folder (`weber/`, ...).
//!
//! The viewer, `sylva render`, the benchmarks and the tests drive a model as a
//! `Box<dyn` [`DynamicsModel`]`>`, built by [`ModelKind::build`]. A model owns the wind field
//! and the colliders while it steps (its step's jobs borrow them), and hands them back with
//! the forest and its clock ([`DynamicsModel::into_parts`], [`ModelParts`]) so that another
//! model can be built over the same trees with the same wind ([`ModelKind::build_from`]).
//!
//! Invariants every model keeps: the pose holds one base and orientation per segment of its
//! forest and one position per leaf (and one orientation per leaf, or none when its leaves are
//! rigid on their segments); a step advances [`DynamicsModel::time`] by exactly
//! [`DynamicsModel::dt`]; the state after a step depends only on the state before it, the wind
//! and the colliders, never on the number of worker threads.
//!
//! # Adding a model
//!
//! Put it in a folder of its own beside `weber/`, implement [`DynamicsModel`] for it, add a
//! variant to [`ModelKind`] (its name in [`ModelKind::name`], [`ModelKind::ALL`] and
//! [`ModelKind::phases`], its constructor in [`ModelKind::build_from`]). `--model` on the
//! command line, the viewer's model key and `bench sim` pick it up from [`ModelKind::ALL`].

pub mod breakage;
pub mod chen;
pub mod debris;
pub mod falling;
pub mod oliapuram;
pub mod pose;
pub mod schedule;
#[cfg(test)]
mod test_winds;
pub mod verlet;
pub mod weber;

use std::any::Any;
use std::ops::Deref;
use std::sync::RwLockReadGuard;

use sylva_engine::{FrameTimings, JobSystem};

use crate::collider::SphereCollider;
use crate::collision::runtime::{SelfCollisionParams, SelfCollisionStats};
use crate::dynamics::falling::FallingStats;
use crate::error::SimError;
use crate::forest::Forest;
use crate::wind::{Calm, WindField};

pub use chen::{ChenModel, ChenParams};
pub use oliapuram::{OliapuramModel, OliapuramParams};
pub use pose::Pose;
pub use verlet::{VerletModel, VerletParams};

/// A model's pose, as [`DynamicsModel::pose`] lends it: borrowed, or read through the lock its
/// step writes it behind (released when this is dropped).
pub enum PoseView<'a> {
    /// A pose the model holds plainly.
    Borrowed(&'a Pose),
    /// A pose the model's step jobs write behind a lock.
    Locked(RwLockReadGuard<'a, Pose>),
}

impl Deref for PoseView<'_> {
    type Target = Pose;
    fn deref(&self) -> &Pose {
        match self {
            PoseView::Borrowed(p) => p,
            PoseView::Locked(g) => g,
        }
    }
}

/// Splits `s` into consecutive slices of the given lengths (one per tree, for a step's jobs).
pub(crate) fn split_lengths<T>(mut s: &mut [T], lengths: impl Iterator<Item = usize>) -> Vec<&mut [T]> {
    let mut out = Vec::new();
    for n in lengths {
        let (a, rest) = std::mem::take(&mut s).split_at_mut(n);
        out.push(a);
        s = rest;
    }
    out
}

/// Bytes a vector holds (its capacity), for `heap_bytes`.
pub(crate) fn vec_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * size_of::<T>()
}

/// What every model asks of a forest before it builds over it: consistent arrays
/// ([`Forest::validate`]) and at least one segment.
pub(crate) fn check_forest(forest: &Forest) -> Result<(), SimError> {
    forest.validate()?;
    if forest.segment_count() == 0 {
        return Err(SimError::param(
            "segments",
            0,
            "a simulation needs at least one tree with one segment",
        ));
    }
    Ok(())
}

/// What a model is built over and hands back: the forest, the wind field, the colliders and
/// the clock.
pub struct ModelParts {
    /// The trees.
    pub forest: Forest,
    /// The wind field the trees sample.
    pub wind: Box<dyn WindField>,
    /// The sphere colliders.
    pub colliders: Vec<SphereCollider>,
    /// Simulated time \[s\] the model starts at.
    pub time: f64,
}

impl ModelParts {
    /// A forest at time 0 in calm air, without colliders.
    pub fn new(forest: Forest) -> ModelParts {
        ModelParts {
            forest,
            wind: Box::new(Calm),
            colliders: Vec::new(),
            time: 0.0,
        }
    }
}

/// One way of moving the trees (object safe: the callers hold a `Box<dyn DynamicsModel>`).
pub trait DynamicsModel: Send {
    /// Which model this is.
    fn kind(&self) -> ModelKind;
    /// The model's name on the command line and in reports ([`ModelKind::name`]).
    fn name(&self) -> &'static str {
        self.kind().name()
    }
    /// Names of the timed phases a step adds to the [`FrameTimings`] it is given (where the
    /// timings have them): what the overlay and `bench sim` print.
    fn phases(&self) -> &'static [&'static str];
    /// The model's own settings in a few words, for the overlay and reports (e.g. Weber's
    /// solver).
    fn settings(&self) -> String;
    /// The trees.
    fn forest(&self) -> &Forest;
    /// The time step \[s\].
    fn dt(&self) -> f32;
    /// Changes the time step \[s\]; refuses one out of the model's range, keeping the old one.
    fn set_time_step(&mut self, dt: f32) -> Result<(), SimError>;
    /// Simulated time \[s\].
    fn time(&self) -> f64;
    /// Advances one time step of [`dt`](Self::dt): moves the wind field and the colliders to the
    /// step's time, then the trees, as jobs of `jobs`; phase times go to `timings`.
    fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings);
    /// The pose of every segment and leaf after the last step: all the renderer reads.
    fn pose(&self) -> PoseView<'_>;
    /// Temporal level of detail ([`schedule`]): tree `t` steps once in `periods[t]` steps, by
    /// the steps it missed. A model that steps every tree at every step refuses, naming
    /// itself; so does a list of the wrong length or with a period out of range (the old
    /// periods stay).
    fn set_step_periods(&mut self, periods: &[u8]) -> Result<(), SimError> {
        let _ = periods;
        Err(SimError::param(
            "step periods",
            format!("{} values", periods.len()),
            format!("the {} model steps every tree at every step", self.name()),
        ))
    }
    /// Each tree's period, for a model that keeps a schedule (`None`: every tree steps at
    /// every step).
    fn step_periods(&self) -> Option<&[u8]> {
        None
    }
    /// Puts every tree back in its generated shape, at rest (the clock, wind and colliders
    /// stay).
    fn reset(&mut self);
    /// A hash of the bit patterns of the model's whole dynamic state: equal hashes for equal
    /// runs (determinism tests, `bench sim`).
    fn state_hash(&self) -> u64;
    /// Kinetic energy of the trees \[J\], as the model measures it.
    fn kinetic_energy(&self) -> f64;
    /// False once any part of the state stopped being finite (or the model's device failed,
    /// see [`failure`](Self::failure)).
    fn finite(&self) -> bool;
    /// Why the model stopped stepping, when it failed (a model stepped on a device that
    /// reported an error): the caller shows this. By default, `None`.
    fn failure(&self) -> Option<String> {
        None
    }
    /// Bytes of simulation state in memory (forest, model state, scratch; capacities).
    fn heap_bytes(&self) -> usize;
    /// What the wind has broken, for a model whose trees can break (`None` for one whose
    /// trees cannot).
    fn breakage(&self) -> Option<Breakage> {
        None
    }
    /// Whether segment `i` still hangs from its parent (a tree's root: stands on its roots).
    /// False for the first segment of a piece broken off; by default, true.
    fn attached(&self, _i: usize) -> bool {
        true
    }
    /// Turns self-collision (Chen 2011 §5: the tree's k-DOP hierarchy, the response spring of
    /// Eq. 5.1) on with `params`, or off with `None`. A model that has none refuses, naming
    /// itself; bad parameters are refused by name (the old setting stays).
    fn set_self_collision(&mut self, params: Option<SelfCollisionParams>) -> Result<(), SimError> {
        match params {
            None => Ok(()),
            Some(_) => Err(SimError::param(
                "self-collision",
                "on",
                format!("the {} model has no self-collision yet", self.name()),
            )),
        }
    }
    /// What self-collision found and cost in the last step (`None` while it is off).
    fn self_collision(&self) -> Option<SelfCollisionStats> {
        None
    }
    /// Detaches `count` of the leaves still on their twigs (a seeded pick, the same in every
    /// run), which fall from the next step on (Chen 2011 Fig. 6.4, [`falling`]); returns how
    /// many (fewer when fewer are attached or the falling leaves' cap is reached). A model
    /// without falling leaves refuses, naming itself.
    fn drop_leaves(&mut self, count: usize) -> Result<usize, SimError> {
        Err(SimError::param(
            "drop leaves",
            count,
            format!("the {} model has no falling leaves", self.name()),
        ))
    }
    /// The falling leaves' counts and cost (`None` for a model without them).
    fn falling_leaves(&self) -> Option<FallingStats> {
        None
    }
    /// Whether leaf `j` still hangs on its twig (false once it came off and falls or lies on
    /// the ground); by default, true.
    fn leaf_attached(&self, _j: usize) -> bool {
        true
    }
    /// The wind field.
    fn wind(&self) -> &dyn WindField;
    /// The wind field, to change it.
    fn wind_mut(&mut self) -> &mut dyn WindField;
    /// Replaces the wind field (moved to the model's time) and returns the one it had.
    fn replace_wind(&mut self, wind: Box<dyn WindField>) -> Box<dyn WindField>;
    /// Replaces the wind field (moved to the model's time).
    fn set_wind(&mut self, wind: Box<dyn WindField>) {
        drop(self.replace_wind(wind));
    }
    /// The sphere colliders.
    fn colliders(&self) -> &[SphereCollider];
    /// The sphere colliders, to add, move or remove them.
    fn colliders_mut(&mut self) -> &mut Vec<SphereCollider>;
    /// Adds a collider (moved to the model's time); returns its index.
    fn add_collider(&mut self, mut collider: SphereCollider) -> usize {
        collider.move_to(self.time());
        let colliders = self.colliders_mut();
        colliders.push(collider);
        colliders.len() - 1
    }
    /// Ends the model and hands back its forest, wind, colliders and clock, to build another
    /// model over them ([`ModelKind::build_from`]).
    fn into_parts(self: Box<Self>) -> ModelParts;
    /// The model as `Any`, to reach one model's own extras (`downcast_ref::<WeberModel>()`).
    fn as_any(&self) -> &dyn Any;
    /// The model as `Any`, to change one model's own extras.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// What the wind has broken since the last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Breakage {
    /// Branches broken off.
    pub broken: usize,
    /// Trees torn from their roots.
    pub uprooted: usize,
    /// Broken pieces still simulated.
    pub debris: usize,
}

/// The dynamics models Sylva has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ModelKind {
    /// Weber 2008: separable semi-implicit angular springs (`weber`).
    #[default]
    Weber,
    /// Oliapuram & Kumar 2010: rigid segments about their parents' tips, stepped as a whole
    /// forest, level by level, leaves as one-degree-of-freedom pseudo-branches (`oliapuram`).
    Oliapuram,
    /// Manavi 2007: particles and distance constraints moved by position Verlet, the
    /// constraints relaxed pass after pass (`verlet`).
    Verlet,
    /// Chen 2011: every stem rotated by its wind, gravity, restoration, transfer and collision
    /// response forces, root to tips, leaves as venation stems (`chen`).
    Chen,
}

impl ModelKind {
    /// Every model, in the order the viewer's model key cycles them.
    pub const ALL: [ModelKind; 4] = [
        ModelKind::Weber,
        ModelKind::Oliapuram,
        ModelKind::Verlet,
        ModelKind::Chen,
    ];

    /// The model's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Weber => "weber",
            ModelKind::Oliapuram => "oliapuram",
            ModelKind::Verlet => "verlet",
            ModelKind::Chen => "chen",
        }
    }

    /// The names of every model, as a list for messages (`weber, ...`).
    pub fn names() -> String {
        ModelKind::ALL.map(ModelKind::name).join(", ")
    }

    /// The timed phases of this model's step (what [`DynamicsModel::phases`] gives once
    /// built), to size [`FrameTimings`] before building.
    pub fn phases(self) -> &'static [&'static str] {
        match self {
            ModelKind::Weber => &weber::PHASES,
            ModelKind::Oliapuram => oliapuram::PHASES,
            ModelKind::Verlet => verlet::PHASES,
            ModelKind::Chen => chen::PHASES,
        }
    }

    /// The model after this one in [`ALL`](Self::ALL), wrapping around.
    pub fn next(self) -> ModelKind {
        let k = ModelKind::ALL.iter().position(|&m| m == self).unwrap_or(0);
        ModelKind::ALL[(k + 1) % ModelKind::ALL.len()]
    }

    /// This model with its default settings over `forest`, at time 0 in calm air.
    pub fn build(self, forest: Forest) -> Result<Box<dyn DynamicsModel>, SimError> {
        self.build_from(ModelParts::new(forest)).map_err(|r| r.error)
    }

    /// This model with its default settings over `parts`: its forest, with its wind and
    /// colliders, starting at its time. On refusal the parts come back with the reason.
    pub fn build_from(self, parts: ModelParts) -> Result<Box<dyn DynamicsModel>, Box<Refused>> {
        match self {
            ModelKind::Weber => Ok(Box::new(weber::WeberModel::from_parts(
                parts,
                weber::WeberParams::default(),
            )?)),
            ModelKind::Oliapuram => {
                let params = OliapuramParams::for_material(&parts.forest.material);
                Ok(Box::new(OliapuramModel::from_parts(parts, params)?))
            }
            ModelKind::Verlet => {
                let params = VerletParams::for_material(&parts.forest.material);
                Ok(Box::new(VerletModel::from_parts(parts, params)?))
            }
            ModelKind::Chen => {
                let params = ChenParams::for_material(&parts.forest.material);
                Ok(Box::new(ChenModel::from_parts(parts, params)?))
            }
        }
    }
}

/// A model that could not be built over some parts: why, and the parts, untouched.
pub struct Refused {
    /// Why the model refused.
    pub error: SimError,
    /// The parts it was given.
    pub parts: ModelParts,
}

impl std::fmt::Debug for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Refused({})", self.error)
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ModelKind {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        ModelKind::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            SimError::param(
                "model",
                s,
                format!("no such dynamics model (allowed: {})", ModelKind::names()),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::material::Material;
    use crate::testtree::test_tree;
    use glam::Vec3;

    fn forest() -> Forest {
        let skel = test_tree(3, 60, 40).unwrap();
        crate::forest::at_origin(&skel, &Material::default())
    }

    #[test]
    fn model_names_parse_and_unknown_ones_are_refused_naming_the_allowed() {
        for m in ModelKind::ALL {
            assert_eq!(m.name().parse::<ModelKind>().unwrap(), m);
            // The cycle visits every model once and comes back.
            let cycle: Vec<ModelKind> = std::iter::successors(Some(m), |k| Some(k.next()))
                .take(ModelKind::ALL.len() + 1)
                .collect();
            assert_eq!(cycle[ModelKind::ALL.len()], m);
            for k in ModelKind::ALL {
                assert_eq!(cycle[..ModelKind::ALL.len()].iter().filter(|&&c| c == k).count(), 1);
            }
        }
        let e = "cloth".parse::<ModelKind>().unwrap_err().to_string();
        assert!(
            e.contains("cloth") && e.contains("weber") && e.contains("verlet"),
            "{e}"
        );
    }

    /// A model handed back and rebuilt keeps its forest, wind, colliders and clock, and the
    /// rebuilt model steps on from the generated shape at that time.
    #[test]
    fn parts_handed_back_build_the_next_model_with_the_wind_and_clock_kept() {
        let jobs = JobSystem::new(1).unwrap();
        let mut m = ModelKind::Weber.build(forest()).unwrap();
        let timings = FrameTimings::new(m.phases());
        m.set_wind(Box::new(crate::GustingWind::new(12.0, 0.0, 0.5, 1).unwrap()));
        m.add_collider(SphereCollider::new(Vec3::new(5.0, 1.0, 0.0), 0.5, crate::Motion::Static).unwrap());
        let rest = m.state_hash();
        for _ in 0..20 {
            m.step(&jobs, &timings);
        }
        assert_ne!(m.state_hash(), rest, "the wind moved the tree");
        let (time, segments) = (m.time(), m.forest().segment_count());
        let parts = m.into_parts();
        assert_eq!(parts.time, time);
        assert_eq!(parts.colliders.len(), 1);
        assert!(parts.wind.sample(Vec3::Y).length() > 1.0, "the gusting wind came back");
        for kind in ModelKind::ALL {
            let parts = ModelParts {
                forest: parts.forest.clone(),
                wind: Box::new(crate::GustingWind::new(12.0, 0.0, 0.5, 1).unwrap()),
                colliders: parts.colliders.clone(),
                time: parts.time,
            };
            let at_rest = kind.build(forest()).unwrap().state_hash();
            let mut next = kind.build_from(parts).unwrap();
            assert_eq!(
                (next.time(), next.forest().segment_count(), next.colliders().len()),
                (time, segments, 1),
                "{kind}"
            );
            assert_eq!(
                next.state_hash(),
                at_rest,
                "{kind}: built at rest in the generated shape"
            );
            let timings = FrameTimings::new(next.phases());
            next.step(&jobs, &timings);
            assert!((next.time() - time - next.dt() as f64).abs() < 1e-12, "{kind}");
            assert_ne!(
                next.state_hash(),
                at_rest,
                "{kind}: the kept wind moves the rebuilt tree"
            );
        }
    }

    #[test]
    fn a_refused_build_hands_the_parts_back() {
        let mut f = forest();
        f.seg.stiffness[3] = 0.0;
        let mut parts = ModelParts::new(f);
        parts.time = 2.5;
        let Err(r) = ModelKind::Weber.build_from(parts) else {
            panic!("a spring of stiffness 0 must be refused")
        };
        assert!(r.error.to_string().contains("stiffness"), "{}", r.error);
        assert_eq!((r.parts.time, r.parts.forest.segment_count()), (2.5, 60));
    }
}
