//! The GPU wind solver as the trees' wind: [`GpuWind`].

use std::sync::Arc;

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::fluid::{add_timings, FluidGrid, FluidStepStats, Pressure};
use sylva_sim::wind::WindField;

use super::GpuFluid;
use crate::error::Result;
use crate::gpu::{DownloadCounter, Downloads, Gpu};

/// A wind grid stepped by [`GpuFluid`] and read back for the trees, as
/// `sylva_sim::fluid::FluidWind` steps one on the CPU: as many fluid steps as keep the fluid's
/// time caught up with the trees' (at most `max_substeps`), then one download of the field,
/// which the trees sample. As on the CPU, the steps run beside the trees' step
/// ([`WindField::detach`]): the trees sample a copy of the field at their time while the device
/// steps the grid to the next step's time, so the device works while the trees do.
///
/// The download is for a reader on the CPU. A model that reads the field on the device
/// (`GpuOliapuram` on the same device) steps it with [`prepare_on_device`], which leaves the
/// CPU copy behind: nothing is downloaded unless [`set_host_copy`] asked for it (the viewer's
/// wind arrows, drawn from the CPU copy, ask while they are shown). Whatever samples it on the
/// CPU after that goes through [`prepare`](WindField::prepare) or
/// [`detach`](WindField::detach), which download first when the copy is behind; the copy
/// behind is never sampled by the trees. [`downloads`] counts the downloads.
///
/// [`prepare_on_device`]: GpuWind::prepare_on_device
/// [`set_host_copy`]: GpuWind::set_host_copy
/// [`downloads`]: GpuWind::downloads
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
    /// Download after every step even for a reader on the device.
    host_copy: bool,
    /// The device has stepped the field since the CPU copy was downloaded.
    behind: bool,
    downloads: DownloadCounter,
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
            host_copy: false,
            behind: false,
            downloads: DownloadCounter::default(),
        })
    }

    /// Downloads after every step even when the steps are for a reader on the device
    /// ([`prepare_on_device`](Self::prepare_on_device)): something on the CPU reads the grid
    /// besides the trees (the viewer's wind arrows). Turned on, it downloads now when the CPU
    /// copy is behind.
    pub fn set_host_copy(&mut self, keep: bool) {
        self.host_copy = keep;
        if keep {
            self.catch_up_copy();
        }
    }

    /// Whether the CPU copy of the grid ([`WindField::fluid`]) is the device's field.
    pub fn host_copy_current(&self) -> bool {
        !self.behind
    }

    /// The downloads of the grid so far.
    pub fn downloads(&self) -> Downloads {
        self.downloads.get()
    }

    /// Steps the field to `time` for a reader on the device (the GPU dynamics on the same
    /// device): as [`prepare`](WindField::prepare), but the CPU copy is downloaded only when
    /// [`set_host_copy`](Self::set_host_copy) asked for it.
    pub fn prepare_on_device(&mut self, time: f64, timings: &FrameTimings) {
        let copy = self.host_copy;
        self.prepare_for(time, timings, copy);
    }

    fn prepare_for(&mut self, time: f64, timings: &FrameTimings, copy: bool) {
        if self.failure.is_some() {
            return;
        }
        if let Err(e) = self.catch_up(time, timings, copy) {
            self.failure = Some(format!("the GPU wind solver failed: {e}"));
        }
    }

    /// Downloads the field when the CPU copy is behind (a failure stops the field).
    fn catch_up_copy(&mut self) {
        if self.failure.is_some() || !self.behind {
            return;
        }
        if let Err(e) = self.download() {
            self.failure = Some(format!("the GPU wind solver failed: {e}"));
        }
    }

    fn download(&mut self) -> Result<()> {
        self.fluid.download(&mut self.grid)?;
        self.downloads.add(self.fluid.download_bytes());
        self.behind = false;
        Ok(())
    }

    /// The GPU solver.
    pub fn solver(&self) -> &GpuFluid {
        &self.fluid
    }

    /// Steps the device's field to `time`; downloads it when `copy` and the CPU copy is behind.
    fn catch_up(&mut self, time: f64, timings: &FrameTimings, copy: bool) -> Result<()> {
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
            self.behind = true;
            n += 1;
        }
        if copy && self.behind {
            self.download()?;
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
        // A reader on the CPU: the copy it samples is downloaded.
        self.prepare_for(time, timings, true);
    }

    fn detach(&mut self, next: f64) -> Option<Box<dyn WindField>> {
        assert!(self.ahead.is_none(), "detach twice without attach");
        // The trees sample the copy detached here: it must be the device's field.
        self.catch_up_copy();
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

    fn speed_bound(&self) -> Option<f32> {
        Some(self.grid.speed_bound())
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }

    fn fluid(&self) -> Option<&FluidGrid> {
        Some(&self.grid)
    }

    fn fluid_mut(&mut self) -> Option<&mut FluidGrid> {
        Some(&mut self.grid)
    }
}
