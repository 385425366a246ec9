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
//! Steps spread over frames ([`FluidWind::set_parts`]): a fluid step of `parts` tree steps'
//! time is spread over those `parts` tree steps, its stages ([`FluidGrid::step_stage`]) in
//! order, about the same work beside each (the viewer's level of detail for a grid on the CPU):
//! two parts take the advection and the forces beside the first, the pressure solve and the
//! projection beside the second; four parts take half the advection, the other half and the
//! forces, the pressure solve, the projection. The trees sample the field the step starts from
//! all the while; the new one is in place after the last part. Between parts the grid's field
//! is the one the step started from, and the half-done step waits in the grid's own buffers.

use std::sync::Arc;

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};

use super::{add_timings, FluidGrid, FluidStepStats, FrozenField, StepInputs, StepStage};
use crate::error::SimError;
use crate::wind::WindField;

/// A [`FluidGrid`] the simulation steps before each of its own steps, as many fluid steps as
/// keep the fluid's time caught up with the trees'.
pub struct FluidWind {
    grid: FluidGrid,
    /// At most this many fluid steps per tree step (a long tree step does not stall the frame).
    pub max_substeps: u32,
    /// Tree steps each fluid step is spread over (see the module docs): 1, 2 or 4.
    parts: u8,
    /// The parts [`set_parts`](FluidWind::set_parts) asked for, from the next step on.
    want: u8,
    /// The field frozen by `detach`, until `attach`.
    ahead: Option<Arc<FrozenField>>,
    /// A step under way: what it uses, its figures so far and the parts done.
    pending: Option<Pending>,
}

struct Pending {
    inputs: StepInputs,
    stats: FluidStepStats,
    done: usize,
}

/// The stages beside each tree step, for a step spread over 1, 2 or 4 of them.
fn plan(parts: u8) -> &'static [&'static [StepStage]] {
    use StepStage::*;
    const ONE: &[&[StepStage]] = &[&[Advect { part: 0, of: 1 }, Forces, Pressure, Project]];
    const TWO: &[&[StepStage]] = &[&[Advect { part: 0, of: 1 }, Forces], &[Pressure, Project]];
    const FOUR: &[&[StepStage]] = &[
        &[Advect { part: 0, of: 2 }],
        &[Advect { part: 1, of: 2 }, Forces],
        &[Pressure],
        &[Project],
    ];
    match parts {
        4 => FOUR,
        2 => TWO,
        _ => ONE,
    }
}

impl FluidWind {
    /// Steps `grid` as the simulation's wind, at most 4 fluid steps per tree step, each in one
    /// tree step.
    pub fn new(grid: FluidGrid) -> FluidWind {
        FluidWind {
            grid,
            max_substeps: 4,
            parts: 1,
            want: 1,
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
    /// Spreads each fluid step over `parts` tree steps (1, 2 or 4; see the module docs), from
    /// the next step on, whose time step becomes `parts` times the one of a single part
    /// ([`FluidGrid::set_dt`]: the grid's step now over the parts it is spread over now). The
    /// step starts when the grid's time is half a step behind the trees'.
    pub fn set_parts(&mut self, parts: u8) -> Result<(), SimError> {
        if ![1, 2, 4].contains(&parts) {
            return Err(SimError::param("fluid step parts", parts, "must be 1, 2 or 4"));
        }
        let single = self.grid.params().dt / self.parts as f32;
        crate::error::check_positive("wind time step", single * parts as f32, 1.0)?;
        self.want = parts;
        if self.pending.is_none() && self.ahead.is_none() {
            self.switch_parts()?;
        }
        Ok(())
    }
    /// The tree steps each fluid step is spread over (the last [`set_parts`](Self::set_parts)
    /// once the step under way, if any, is done).
    pub fn parts(&self) -> u8 {
        self.parts
    }
    /// Takes the parts asked for (between steps only).
    fn switch_parts(&mut self) -> Result<(), SimError> {
        if self.want != self.parts {
            let single = self.grid.params().dt / self.parts as f32;
            self.grid.set_dt(single * self.want as f32)?;
            self.parts = self.want;
        }
        Ok(())
    }
}

impl WindField for FluidWind {
    fn advance(&mut self, _time: f64) {}

    fn prepare(&mut self, time: f64, jobs: &JobSystem, timings: &FrameTimings) {
        if self.pending.is_some() {
            // The rest of a step spread over tree steps comes beside the next ones (`detach`).
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
        if self.pending.is_none() {
            // Between steps: the parts asked for take effect. `set_parts` checked the time
            // step they give; should one set since through `grid_mut` make it too long, the
            // parts stay as they are.
            if self.switch_parts().is_err() {
                self.want = self.parts;
            }
            let dt = self.grid.params().dt as f64;
            if self.grid.time() + 0.5 * dt > next {
                return None;
            }
            self.pending = Some(Pending {
                inputs: self.grid.next_inputs(),
                stats: FluidStepStats::default(),
                done: 0,
            });
        }
        let field = Arc::new(self.grid.freeze());
        self.ahead = Some(Arc::clone(&field));
        Some(Box::new(Detached(field)))
    }

    fn step_detached(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        let (Some(field), Some(p)) = (&self.ahead, &mut self.pending) else {
            return;
        };
        let Some(stages) = plan(self.parts).get(p.done) else {
            return;
        };
        let before = p.stats;
        for &stage in *stages {
            self.grid.step_stage(jobs, stage, &p.inputs, Some(field), &mut p.stats);
        }
        p.done += 1;
        // This tree step's share of the step's passes.
        let own = FluidStepStats {
            advect: p.stats.advect - before.advect,
            forces: p.stats.forces - before.forces,
            pressure: p.stats.pressure - before.pressure,
            project: p.stats.project - before.project,
            ..p.stats
        };
        add_timings(timings, &own);
    }

    fn attach(&mut self, detached: Box<dyn WindField>) {
        drop(detached);
        let field = self.ahead.take().expect("attach after detach");
        let field = Arc::into_inner(field).expect("the detached field has no other holder once it is attached");
        let done = self.pending.as_ref().is_some_and(|p| p.done == plan(self.parts).len());
        if done {
            self.pending = None;
            self.grid.thaw(field);
        } else {
            self.grid.unfreeze(field);
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

    fn fluid_wind_mut(&mut self) -> Option<&mut FluidWind> {
        Some(self)
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
