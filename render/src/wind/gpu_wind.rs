//! The GPU wind solver as the trees' wind: [`GpuWind`].

use std::sync::Arc;

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::fluid::{add_timings, FluidGrid, FluidStepStats, Pressure};
use sylva_sim::wind::WindField;

use super::GpuFluid;
use crate::error::Result;
use crate::gpu::Gpu;

/// A wind grid stepped by [`GpuFluid`] and read back for the trees, as
/// `sylva_sim::fluid::FluidWind` steps one on the CPU: as many fluid steps as keep the fluid's
/// time caught up with the trees' (at most `max_substeps`), then one download of the field,
/// which the trees sample. As on the CPU, the steps run beside the trees' step
/// ([`WindField::detach`]): the trees sample a copy of the field at their time while the device
/// steps the grid to the next step's time, so the device works while the trees do.
///
/// The CPU grid it is made from stays the field's front: its wind balls, border wind,
/// vorticity confinement and pressure solver drive the GPU steps (through
/// [`FluidGrid::next_inputs`]), and it holds the field as last read back. Its solid cells are
/// uploaded once, when the `GpuWind` is made.
///
/// A device error stops the field (it keeps its last state) and is reported by
/// [`WindField::failure`]; nothing is retried.
pub struct GpuWind {
    fluid: GpuFluid,
    grid: FluidGrid,
    /// The pressure solver the GPU runs (follows the grid's).
    pressure: Pressure,
    /// At most this many fluid steps per tree step.
    pub max_substeps: u32,
    failure: Option<String>,
    /// The time the steps beside the trees catch up to, between `detach` and `attach`.
    ahead: Option<f64>,
}

impl GpuWind {
    pub fn new(gpu: &Arc<Gpu>, grid: FluidGrid) -> Result<GpuWind> {
        let fluid = GpuFluid::new(gpu, &grid)?;
        Ok(GpuWind {
            fluid,
            pressure: grid.params().pressure,
            grid,
            max_substeps: 4,
            failure: None,
            ahead: None,
        })
    }

    /// The GPU solver.
    pub fn solver(&self) -> &GpuFluid {
        &self.fluid
    }

    fn catch_up(&mut self, time: f64, timings: &FrameTimings) -> Result<()> {
        let pressure = self.grid.params().pressure;
        if pressure != self.pressure {
            self.fluid.set_pressure_solver(pressure)?;
            self.pressure = pressure;
        }
        let dt = self.grid.params().dt as f64;
        let mut n = 0;
        while self.grid.time() + 0.5 * dt <= time && n < self.max_substeps {
            let inputs = self.grid.next_inputs();
            self.fluid.step(&inputs)?;
            // One step at a time, so each step's passes are timed.
            self.fluid.wait()?;
            if let Some([advect, forces, pressure, project]) = self.fluid.timings() {
                let mut stats = FluidStepStats {
                    advect,
                    forces,
                    pressure,
                    project,
                    ..Default::default()
                };
                if let Some(solve) = self.fluid.last_solve() {
                    stats.solve = solve;
                }
                add_timings(timings, &stats);
            }
            self.grid.count_step();
            n += 1;
        }
        if n > 0 {
            self.fluid.download(&mut self.grid)?;
        }
        if n == self.max_substeps && self.grid.time() + 0.5 * dt <= time {
            // Too far behind: the fluid runs slow rather than replaying a backlog.
            let steps = ((time - self.grid.time()) / dt).floor();
            self.grid.skip_time(steps * dt);
        }
        Ok(())
    }
}

impl WindField for GpuWind {
    fn advance(&mut self, _time: f64) {}

    fn prepare(&mut self, time: f64, _jobs: &JobSystem, timings: &FrameTimings) {
        if self.failure.is_some() {
            return;
        }
        if let Err(e) = self.catch_up(time, timings) {
            self.failure = Some(format!("the GPU wind solver failed: {e}"));
        }
    }

    fn detach(&mut self, next: f64) -> Option<Box<dyn WindField>> {
        assert!(self.ahead.is_none(), "detach twice without attach");
        let dt = self.grid.params().dt as f64;
        if self.failure.is_some() || self.grid.time() + 0.5 * dt > next {
            return None;
        }
        self.ahead = Some(next);
        Some(Box::new(self.grid.snapshot()))
    }

    fn step_detached(&mut self, jobs: &JobSystem, timings: &FrameTimings) {
        if let Some(next) = self.ahead {
            self.prepare(next, jobs, timings);
        }
    }

    fn attach(&mut self, detached: Box<dyn WindField>) {
        drop(detached);
        self.ahead.take().expect("attach after detach");
    }

    fn failure(&self) -> Option<String> {
        self.failure.clone()
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

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn fluid(&self) -> Option<&FluidGrid> {
        Some(&self.grid)
    }

    fn fluid_mut(&mut self) -> Option<&mut FluidGrid> {
        Some(&mut self.grid)
    }
}
