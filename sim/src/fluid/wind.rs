//! The fluid grid as the trees' wind: stepped with the trees on the same job system, sampled
//! at each segment's centre and each leaf.

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};

use super::{add_timings, FluidGrid};
use crate::wind::WindField;

/// A [`FluidGrid`] the simulation steps before each of its own steps, as many fluid steps as
/// keep the fluid's time caught up with the trees'.
pub struct FluidWind {
    grid: FluidGrid,
    /// At most this many fluid steps per tree step (a long tree step does not stall the frame).
    pub max_substeps: u32,
}

impl FluidWind {
    /// Steps `grid` as the simulation's wind, at most 4 fluid steps per tree step.
    pub fn new(grid: FluidGrid) -> FluidWind {
        FluidWind { grid, max_substeps: 4 }
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

    fn sample(&self, position: Vec3) -> Vec3 {
        self.grid.sample(position)
    }

    fn sample_in_place(&self, points: &mut [Vec3]) {
        self.grid.sample_in_place(points)
    }

    fn fluid(&self) -> Option<&FluidGrid> {
        Some(&self.grid)
    }

    fn fluid_mut(&mut self) -> Option<&mut FluidGrid> {
        Some(&mut self.grid)
    }
}
