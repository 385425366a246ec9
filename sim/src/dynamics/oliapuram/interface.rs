//! [`OliapuramModel`] behind the interface every dynamics model implements
//! ([`DynamicsModel`]): each method forwards to the inherent one of the same name;
//! [`DynamicsModel::into_parts`] hands back the forest, the wind, the colliders (held, not
//! acted on: the paper's trees meet nothing but the wind) and the clock.

use sylva_engine::{FrameTimings, JobSystem};

use super::{OliapuramModel, PHASES};
use crate::collider::SphereCollider;
use crate::collision::runtime::{SelfCollisionParams, SelfCollisionStats};
use crate::dynamics::falling::FallingStats;
use crate::dynamics::{Breakage, DynamicsModel, ModelKind, ModelParts, PoseView};
use crate::error::SimError;
use crate::forest::Forest;
use crate::wind::WindField;

impl DynamicsModel for OliapuramModel {
    fn kind(&self) -> ModelKind {
        ModelKind::Oliapuram
    }
    fn phases(&self) -> &'static [&'static str] {
        PHASES
    }
    fn settings(&self) -> String {
        let p = self.params();
        format!("k_c {}, no contact", p.propagation)
    }
    fn forest(&self) -> &Forest {
        OliapuramModel::forest(self)
    }
    fn dt(&self) -> f32 {
        self.params().dt
    }
    fn set_time_step(&mut self, dt: f32) -> Result<(), SimError> {
        OliapuramModel::set_time_step(self, dt)
    }
    fn time(&self) -> f64 {
        OliapuramModel::time(self)
    }
    fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        OliapuramModel::step(self, jobs, timings)
    }
    fn set_self_collision(&mut self, params: Option<SelfCollisionParams>) -> Result<(), SimError> {
        OliapuramModel::set_self_collision(self, params)
    }
    fn self_collision(&self) -> Option<SelfCollisionStats> {
        self.self_collision_stats()
    }
    fn pose(&self) -> PoseView<'_> {
        PoseView::Borrowed(OliapuramModel::pose(self))
    }
    fn reset(&mut self) {
        OliapuramModel::reset(self)
    }
    fn state_hash(&self) -> u64 {
        OliapuramModel::state_hash(self)
    }
    /// The trees', the debris's and the falling leaves'.
    fn kinetic_energy(&self) -> f64 {
        OliapuramModel::kinetic_energy(self) + self.debris().kinetic_energy() + self.falling().kinetic_energy()
    }
    fn breakage(&self) -> Option<Breakage> {
        Some(self.breakage_state().report())
    }
    fn attached(&self, i: usize) -> bool {
        OliapuramModel::attached(self, i)
    }
    fn finite(&self) -> bool {
        OliapuramModel::finite(self)
    }
    fn heap_bytes(&self) -> usize {
        OliapuramModel::heap_bytes(self)
    }
    fn drop_leaves(&mut self, count: usize) -> Result<usize, SimError> {
        OliapuramModel::drop_leaves(self, count)
    }
    fn falling_leaves(&self) -> Option<FallingStats> {
        Some(self.falling().stats())
    }
    fn leaf_attached(&self, j: usize) -> bool {
        self.falling().is_attached(j)
    }
    fn wind(&self) -> &dyn WindField {
        OliapuramModel::wind(self)
    }
    fn wind_mut(&mut self) -> &mut dyn WindField {
        OliapuramModel::wind_mut(self)
    }
    fn replace_wind(&mut self, wind: Box<dyn WindField>) -> Box<dyn WindField> {
        OliapuramModel::replace_wind(self, wind)
    }
    fn colliders(&self) -> &[SphereCollider] {
        &self.colliders
    }
    fn colliders_mut(&mut self) -> &mut Vec<SphereCollider> {
        &mut self.colliders
    }
    fn into_parts(self: Box<Self>) -> ModelParts {
        let OliapuramModel {
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
