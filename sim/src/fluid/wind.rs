//! The fluid grid as the trees' wind: stepped with the trees on the same job system, sampled
//! at each segment's centre and each leaf.
//!
//! Stepping beside the trees: the trees of step n sample the field at t_n, and the grid's
//! step from t_n to t_n+1 reads only that field, so both run at once. [`WindField::detach`]
//! freezes the field at t_n ([`FluidGrid::freeze`]) and hands it to the trees as a field of its
//! own (shared with the grid through an `Arc`, read by both); [`WindField::step_detached`]
//! steps the grid from it into the grid's other buffers; [`WindField::attach`] drops the trees'
//! handle and swaps the new field in. Every field the trees sample is the one the sequential
//! order gives them, bit for bit; the grid is one step ahead between steps.
//!
//! Split steps ([`FluidWind::split`]): a fluid step of two tree steps' time is spread over those
//! two tree steps, advection and forces beside the first, the pressure solve and the projection
//! beside the second (the viewer's level of detail for a grid on the CPU, so every frame does
//! half a fluid step's work). The trees sample the field the step starts from during both; the new
//! one is in place after the second. Between the two halves the grid's field is the one the
//! step started from, and the half-done step waits in the grid's own buffers.

use std::sync::Arc;
use std::time::Duration;

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};

use super::{add_timings, FluidGrid, FluidStepStats, FrozenField, StepInputs};
use crate::wind::WindField;

/// A [`FluidGrid`] the simulation steps before each of its own steps, as many fluid steps as
/// keep the fluid's time caught up with the trees'.
pub struct FluidWind {
    grid: FluidGrid,
    /// At most this many fluid steps per tree step (a long tree step does not stall the frame).
    pub max_substeps: u32,
    /// Spread each fluid step over two tree steps (see the module docs).
    pub split: bool,
    /// The field frozen by `detach` and the part of a step that runs beside the trees, until
    /// `attach`.
    ahead: Option<(Arc<FrozenField>, Part)>,
    /// The figures of a step whose first half is done (its second half needs no inputs).
    pending: Option<FluidStepStats>,
}

/// The part of a fluid step that runs beside a tree step, with the inputs it needs.
enum Part {
    Whole(StepInputs),
    First(StepInputs),
    Second,
}

impl FluidWind {
    /// Steps `grid` as the simulation's wind, at most 4 fluid steps per tree step.
    pub fn new(grid: FluidGrid) -> FluidWind {
        FluidWind {
            grid,
            max_substeps: 4,
            split: false,
            ahead: None,
            pending: None,
        }
    }
    /// The grid.
    pub fn grid(&self) -> &FluidGrid {
        &self.grid
    }
    /// The grid, to change its balls, border wind or solver.
    pub fn grid_mut(&mut self) -> &mut FluidGrid {
        &mut self.grid
    }
}

impl WindField for FluidWind {
    fn advance(&mut self, _time: f64) {}

    fn prepare(&mut self, time: f64, jobs: &JobSystem, timings: &FrameTimings) {
        if self.pending.is_some() {
            // The second half of a split step comes beside the next tree step (`detach`).
            return;
        }
        let dt = self.grid.params().dt as f64;
        let mut n = 0;
        while self.grid.time() + 0.5 * dt <= time && n < self.max_substeps {
            let stats = self.grid.step(jobs);
            add_timings(timings, &stats);
            n += 1;
        }
        if n == self.max_substeps && self.grid.time() + 0.5 * dt <= time {
            // Too far behind: the fluid runs slow rather than replaying a backlog.
            let steps = ((time - self.grid.time()) / dt).floor();
            self.grid.skip_time(steps * dt);
        }
    }

    fn detach(&mut self, next: f64) -> Option<Box<dyn WindField>> {
        assert!(self.ahead.is_none(), "detach twice without attach");
        let part = if self.pending.is_some() {
            Part::Second
        } else {
            let dt = self.grid.params().dt as f64;
            if self.grid.time() + 0.5 * dt > next {
                return None;
            }
            let inputs = self.grid.next_inputs();
            if self.split {
                Part::First(inputs)
            } else {
                Part::Whole(inputs)
            }
        };
        let field = Arc::new(self.grid.freeze());
        self.ahead = Some((Arc::clone(&field), part));
        Some(Box::new(Detached(field)))
    }

    fn step_detached(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        let Some((field, part)) = &self.ahead else {
            return;
        };
        match part {
            Part::Whole(inputs) => {
                let stats = self.grid.step_from(jobs, inputs, field);
                add_timings(timings, &stats);
            }
            Part::First(inputs) => {
                let first = self.grid.step_from_first(jobs, inputs, field);
                add_timings(timings, &first);
                self.pending = Some(first);
            }
            Part::Second => {
                let first = self.pending.take().expect("a second half after a first");
                let whole = self.grid.step_second(jobs, first);
                // This tree step's share: the second half's passes.
                let own = FluidStepStats {
                    advect: Duration::ZERO,
                    forces: Duration::ZERO,
                    ..whole
                };
                add_timings(timings, &own);
            }
        }
    }

    fn attach(&mut self, detached: Box<dyn WindField>) {
        drop(detached);
        let (field, part) = self.ahead.take().expect("attach after detach");
        let field = Arc::into_inner(field).expect("the detached field has no other holder once it is attached");
        match part {
            Part::First(_) => self.grid.unfreeze(field),
            Part::Whole(_) | Part::Second => self.grid.thaw(field),
        }
    }

    fn sample(&self, position: Vec3) -> Vec3 {
        self.grid.sample(position)
    }

    fn sample_in_place(&self, points: &mut [Vec3]) {
        self.grid.sample_in_place(points)
    }

    fn sample_into(&self, points: &[Vec3], out: &mut [Vec3]) {
        self.grid.sample_into(points, out)
    }

    fn speed_bound(&self) -> Option<f32> {
        Some(self.grid.speed_bound())
    }

    fn fluid(&self) -> Option<&FluidGrid> {
        Some(&self.grid)
    }

    fn fluid_mut(&mut self) -> Option<&mut FluidGrid> {
        Some(&mut self.grid)
    }
}

/// The field a [`FluidWind`] froze, as the trees' wind while the grid steps from it.
struct Detached(Arc<FrozenField>);

impl WindField for Detached {
    fn advance(&mut self, _time: f64) {}

    fn sample(&self, position: Vec3) -> Vec3 {
        self.0.sample(position)
    }

    fn sample_in_place(&self, points: &mut [Vec3]) {
        self.0.sample_in_place(points)
    }

    fn sample_into(&self, points: &[Vec3], out: &mut [Vec3]) {
        self.0.sample_into(points, out)
    }

    fn speed_bound(&self) -> Option<f32> {
        Some(self.0.speed_bound())
    }
}

/// A frozen field as a wind of its own (a [`FluidGrid::snapshot`] the trees sample while the
/// grid it came from steps on).
impl WindField for FrozenField {
    fn advance(&mut self, _time: f64) {}

    fn sample(&self, position: Vec3) -> Vec3 {
        FrozenField::sample(self, position)
    }

    fn sample_in_place(&self, points: &mut [Vec3]) {
        FrozenField::sample_in_place(self, points)
    }

    fn sample_into(&self, points: &[Vec3], out: &mut [Vec3]) {
        FrozenField::sample_into(self, points, out)
    }

    fn speed_bound(&self) -> Option<f32> {
        Some(FrozenField::speed_bound(self))
    }
}
