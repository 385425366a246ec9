//! [`WeberModel`] behind the interface every dynamics model implements ([`DynamicsModel`]):
//! each method forwards to the inherent one of the same name, and [`DynamicsModel::into_parts`]
//! hands back the forest (its rest angles pre-stressed for gravity, which a new Weber model
//! recomputes from the shape), the wind, the colliders and the clock.

use sylva_engine::{FrameTimings, JobSystem};

use super::{WeberModel, PHASES};
use crate::collider::SphereCollider;
use crate::collision::runtime::{SelfCollisionParams, SelfCollisionStats};
use crate::dynamics::falling::FallingStats;
use crate::dynamics::{Breakage, DynamicsModel, ModelKind, ModelParts, PoseView};
use crate::error::SimError;
use crate::forest::Forest;
use crate::wind::WindField;

/// Weber's model behind the common interface; its own extras (plane state, `edit_state`, the
/// solver, inertia and integrator switches, energies and angles) stay inherent methods.
impl DynamicsModel for WeberModel {
    fn kind(&self) -> ModelKind {
        ModelKind::Weber
    }
    fn phases(&self) -> &'static [&'static str] {
        &PHASES
    }
    fn settings(&self) -> String {
        let p = &self.sh.params;
        format!(
            "solver {}, {} inertia, {}",
            p.solver.name(),
            p.inertia.name(),
            p.integrator.name()
        )
    }
    fn forest(&self) -> &Forest {
        WeberModel::forest(self)
    }
    fn dt(&self) -> f32 {
        self.sh.params.dt
    }
    fn set_time_step(&mut self, dt: f32) -> Result<(), SimError> {
        WeberModel::set_time_step(self, dt)
    }
    fn time(&self) -> f64 {
        WeberModel::time(self)
    }
    fn step(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        WeberModel::step(self, jobs, timings)
    }
    fn pose(&self) -> PoseView<'_> {
        WeberModel::pose(self)
    }
    fn set_step_periods(&mut self, periods: &[u8]) -> Result<(), SimError> {
        WeberModel::set_step_periods(self, periods)
    }
    fn step_periods(&self) -> Option<&[u8]> {
        Some(self.sh.schedule.periods())
    }
    fn reset(&mut self) {
        WeberModel::reset(self)
    }
    fn state_hash(&self) -> u64 {
        WeberModel::state_hash(self)
    }
    /// The trees' (in the model's coordinates), the debris's and the falling leaves'.
    fn kinetic_energy(&self) -> f64 {
        WeberModel::kinetic_energy(self) + self.debris().kinetic_energy() + self.falling().kinetic_energy()
    }
    fn breakage(&self) -> Option<Breakage> {
        Some(self.breakage_state().report())
    }
    fn attached(&self, i: usize) -> bool {
        WeberModel::attached(self, i)
    }
    fn finite(&self) -> bool {
        WeberModel::finite(self)
    }
    fn heap_bytes(&self) -> usize {
        WeberModel::heap_bytes(self)
    }
    fn set_self_collision(&mut self, params: Option<SelfCollisionParams>) -> Result<(), SimError> {
        WeberModel::set_self_collision(self, params)
    }
    fn self_collision(&self) -> Option<SelfCollisionStats> {
        self.self_collision_stats()
    }
    fn drop_leaves(&mut self, count: usize) -> Result<usize, SimError> {
        WeberModel::drop_leaves(self, count)
    }
    fn falling_leaves(&self) -> Option<FallingStats> {
        Some(self.falling().stats())
    }
    fn leaf_attached(&self, j: usize) -> bool {
        self.falling().is_attached(j)
    }
    fn wind(&self) -> &dyn WindField {
        WeberModel::wind(self)
    }
    fn wind_mut(&mut self) -> &mut dyn WindField {
        WeberModel::wind_mut(self)
    }
    fn replace_wind(&mut self, wind: Box<dyn WindField>) -> Box<dyn WindField> {
        WeberModel::replace_wind(self, wind)
    }
    fn colliders(&self) -> &[SphereCollider] {
        WeberModel::colliders(self)
    }
    fn colliders_mut(&mut self) -> &mut Vec<SphereCollider> {
        WeberModel::colliders_mut(self)
    }
    fn add_collider(&mut self, collider: SphereCollider) -> usize {
        WeberModel::add_collider(self, collider)
    }
    fn into_parts(self: Box<Self>) -> ModelParts {
        let WeberModel { sh, time, .. } = *self;
        ModelParts {
            forest: sh.forest,
            wind: sh.wind,
            colliders: sh.colliders,
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
