//! [`ChenModel`] behind the interface every dynamics model implements ([`DynamicsModel`]):
//! each method forwards to the inherent one of the same name; [`DynamicsModel::into_parts`]
//! hands back the forest, the wind, the colliders and the clock.

use sylva_engine::{FrameTimings, JobSystem};

use super::{ChenModel, PHASES};
use crate::collider::SphereCollider;
use crate::collision::runtime::{SelfCollisionParams, SelfCollisionStats};
use crate::dynamics::falling::FallingStats;
use crate::dynamics::{DynamicsModel, ModelKind, ModelParts, PoseView};
use crate::error::SimError;
use crate::forest::Forest;
use crate::wind::WindField;

impl DynamicsModel for ChenModel {
    fn kind(&self) -> ModelKind {
        ModelKind::Chen
    }
    fn phases(&self) -> &'static [&'static str] {
        PHASES
    }
    fn settings(&self) -> String {
        let p = self.params();
        format!(
            "k_r ×{}, K_t·K_r {}, K_d {}, C_W {}, leaves {} Hz{}",
            p.stiffness_scale,
            p.transfer(),
            p.damping,
            p.leaf_wind,
            p.leaf_frequency,
            match self.self_collision_stats() {
                Some(_) => ", self-collision",
                None => "",
            }
        )
    }
    fn forest(&self) -> &Forest {
        ChenModel::forest(self)
    }
    fn dt(&self) -> f32 {
        self.params().dt
    }
    fn set_time_step(&mut self, dt: f32) -> Result<(), SimError> {
        ChenModel::set_time_step(self, dt)
    }
    fn time(&self) -> f64 {
        ChenModel::time(self)
    }
    fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        ChenModel::step(self, jobs, timings)
    }
    fn pose(&self) -> PoseView<'_> {
        PoseView::Borrowed(ChenModel::pose(self))
    }
    fn reset(&mut self) {
        ChenModel::reset(self)
    }
    fn state_hash(&self) -> u64 {
        ChenModel::state_hash(self)
    }
    fn kinetic_energy(&self) -> f64 {
        ChenModel::kinetic_energy(self) + self.falling().kinetic_energy()
    }
    fn finite(&self) -> bool {
        ChenModel::finite(self)
    }
    fn heap_bytes(&self) -> usize {
        ChenModel::heap_bytes(self)
    }
    fn set_self_collision(&mut self, params: Option<SelfCollisionParams>) -> Result<(), SimError> {
        ChenModel::set_self_collision(self, params)
    }
    fn self_collision(&self) -> Option<SelfCollisionStats> {
        self.self_collision_stats()
    }
    fn drop_leaves(&mut self, count: usize) -> Result<usize, SimError> {
        ChenModel::drop_leaves(self, count)
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
        ChenModel::replace_wind(self, wind)
    }
    fn colliders(&self) -> &[SphereCollider] {
        &self.colliders
    }
    fn colliders_mut(&mut self) -> &mut Vec<SphereCollider> {
        &mut self.colliders
    }
    fn into_parts(self: Box<Self>) -> ModelParts {
        let ChenModel {
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
