//! [`VerletModel`] behind the interface every dynamics model implements
//! ([`DynamicsModel`]): each method forwards to the inherent one of the same name;
//! [`DynamicsModel::into_parts`] hands back the forest, the wind, the colliders and the clock.

use sylva_engine::{FrameTimings, JobSystem};

use super::{VerletModel, PHASES};
use crate::collider::SphereCollider;
use crate::collision::runtime::{SelfCollisionParams, SelfCollisionStats};
use crate::dynamics::falling::FallingStats;
use crate::dynamics::{Breakage, DynamicsModel, ModelKind, ModelParts, PoseView};
use crate::error::SimError;
use crate::forest::Forest;
use crate::wind::WindField;

impl DynamicsModel for VerletModel {
    fn kind(&self) -> ModelKind {
        ModelKind::Verlet
    }
    fn phases(&self) -> &'static [&'static str] {
        PHASES
    }
    fn settings(&self) -> String {
        let p = self.params();
        let (particles, constraints, _) = self.counts();
        format!(
            "{particles} particles, {constraints} constraints, {}..{} passes",
            p.min_iterations, p.iterations
        )
    }
    fn forest(&self) -> &Forest {
        VerletModel::forest(self)
    }
    fn dt(&self) -> f32 {
        self.params().dt
    }
    fn set_time_step(&mut self, dt: f32) -> Result<(), SimError> {
        VerletModel::set_time_step(self, dt)
    }
    fn time(&self) -> f64 {
        VerletModel::time(self)
    }
    fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        VerletModel::step(self, jobs, timings)
    }
    fn set_self_collision(&mut self, params: Option<SelfCollisionParams>) -> Result<(), SimError> {
        VerletModel::set_self_collision(self, params)
    }
    fn self_collision(&self) -> Option<SelfCollisionStats> {
        self.self_collision_stats()
    }
    fn pose(&self) -> PoseView<'_> {
        PoseView::Borrowed(VerletModel::pose(self))
    }
    fn reset(&mut self) {
        VerletModel::reset(self)
    }
    fn state_hash(&self) -> u64 {
        VerletModel::state_hash(self)
    }
    /// The particles' and the falling leaves'.
    fn kinetic_energy(&self) -> f64 {
        VerletModel::kinetic_energy(self) + self.falling().kinetic_energy()
    }
    fn finite(&self) -> bool {
        VerletModel::finite(self)
    }
    fn breakage(&self) -> Option<Breakage> {
        Some(Breakage {
            broken: self.branches_broken(),
            uprooted: self.uprooted(),
            debris: self.branches_broken(),
        })
    }
    fn attached(&self, i: usize) -> bool {
        VerletModel::attached(self, i)
    }
    fn heap_bytes(&self) -> usize {
        VerletModel::heap_bytes(self)
    }
    fn drop_leaves(&mut self, count: usize) -> Result<usize, SimError> {
        VerletModel::drop_leaves(self, count)
    }
    fn falling_leaves(&self) -> Option<FallingStats> {
        Some(self.falling().stats())
    }
    fn leaf_attached(&self, j: usize) -> bool {
        self.falling().is_attached(j)
    }
    fn wind(&self) -> &dyn WindField {
        &*self.wind
    }
    fn wind_mut(&mut self) -> &mut dyn WindField {
        &mut *self.wind
    }
    fn replace_wind(&mut self, wind: Box<dyn WindField>) -> Box<dyn WindField> {
        VerletModel::replace_wind(self, wind)
    }
    fn colliders(&self) -> &[SphereCollider] {
        &self.colliders
    }
    fn colliders_mut(&mut self) -> &mut Vec<SphereCollider> {
        &mut self.colliders
    }
    fn into_parts(self: Box<Self>) -> ModelParts {
        let VerletModel {
            forest,
            wind,
            colliders,
            time,
            ..
        } = *self;
        ModelParts {
            forest,
            wind,
            colliders,
            time,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}
