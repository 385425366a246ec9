//! Wind as a fluid: Stam's stable fluids on a staggered 3D grid, as Oliapuram & Kumar 2010
//! (paper 004, §2) use it to drive a forest.
//!
//! # Discretisation (the contract the GPU solver follows too)
//!
//! * Axes are the world's: x east, y up, z south. The grid has `n = [nx, ny, nz]` cells of
//!   size `h = [hx, hy, hz]` from `origin` (its minimum corner). Cell `(i, j, k)` is
//!   `i + nx * (j + ny * k)`.
//! * Velocity lives on the faces (a MAC grid): `u` on the x-faces, `(nx+1) × ny × nz`, face
//!   `(i, j, k)` at `origin + (i hx, (j+½) hy, (k+½) hz)`, index `i + (nx+1) * (j + ny * k)`;
//!   `v` on the y-faces `nx × (ny+1) × nz`; `w` on the z-faces `nx × ny × (nz+1)`, alike.
//!   Pressure and divergence live at the cell centres.
//! * A face is *active* when both cells beside it are fluid (a cell beyond the domain counts as
//!   fluid only on an open side). Inactive faces carry the solid's or the border's velocity:
//!   0 beside a solid cell or on a closed side (free slip, Eq. 10: only the normal component is
//!   prescribed), the border wind's component on an inflow side.
//! * Sides: bottom and top are closed (ground and lid); each lateral side is `Border` by
//!   default: an inflow of the border wind `W` where `W` enters the domain through it (`W·n_in >
//!   0`), open (pressure 0 beyond it) where it leaves or is parallel (§2.3, second method).
//! * One step of length `dt` (§2.2: advect → add force → project):
//!   1. Advect (Eq. 4), semi-Lagrangian: each active face's component is sampled at
//!      `x − dt·v(x)`, where `v(x)` is the face's own component and, for the two others, the
//!      mean of the cell-centred velocities of the two cells beside the face (of the one cell
//!      on a domain side). Sampling is trilinear on that component's own staggered grid, with
//!      coordinates clamped into it; a point beyond an inflow side takes the border wind
//!      (sides tested in the order x−, x+, y−, y+, z−, z+). Inactive faces take their
//!      prescribed value.
//!   2. Forces (Eq. 5): `v += dt · f` on active faces. Each wind ball adds
//!      `f = a · exp(−|x − c|² / r²)` within `3r` of its centre `c`, where `c` moves each step
//!      by `jitter · r · (uniform in [−1, 1]³)` for turbulence (§2.3, first method). With a
//!      confinement strength `ε > 0`, vorticity confinement follows (module `vorticity`).
//!   3. Divergence `d = Σ_axes (v⁺ − v⁻) / h` at each fluid cell.
//!   4. Pressure (Eq. 9) on the fluid cells: `Σ_active faces (p_n − p) / h² = d`, with `p = 0`
//!      beyond open sides and no term for inactive faces. Either a fixed number of Jacobi
//!      iterations (the paper's 4) started from the previous step's pressure, or
//!      multigrid-preconditioned conjugate gradients to a relative residual.
//!   5. Project (Eq. 7): `v −= (p⁺ − p⁻) / h` on active faces. The divergence left is exactly
//!      the pressure equation's residual.
//!
//! The CPU solver splits every pass into slabs of constant `k` run as jobs of the engine's job
//! system; the slabs do not depend on the worker count and sums are added slab by slab in
//! order, so the result is bit-identical for any number of workers.

mod advect;
mod jacobi;
mod pressure;
mod sample;
#[cfg(test)]
mod tests;
mod vorticity;
mod wind;

use std::time::{Duration, Instant};

use glam::Vec3;
use sylva_engine::JobSystem;

use crate::error::{check_positive, check_range, SimError};
use crate::rng::Rng;
use advect::{trilinear, Advect};

pub use pressure::{multigrid_levels, MultigridLevel, PressureStats, MG_COARSEST_SWEEPS, MG_OMEGA, MG_SWEEPS};
pub use wind::FluidWind;

/// The largest grid Sylva accepts (cells), about 1.3 GB of solver state.
pub const MAX_CELLS: usize = 1 << 25;
/// Names of the solver's passes, for timings tables.
pub const FLUID_PHASES: [&str; 4] = ["wind advect", "wind forces", "wind pressure", "wind project"];

/// How the pressure equation is solved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pressure {
    /// A fixed number of Jacobi iterations started from the previous step's pressure (the
    /// paper uses 4).
    Jacobi {
        /// Iterations per step.
        iterations: u32,
    },
    /// Conjugate gradients preconditioned with one multigrid V-cycle, until the residual (the
    /// divergence left after projection) is at most `tolerance` times the divergence before.
    Converged {
        /// The relative residual to reach.
        tolerance: f32,
        /// Most iterations per step, whether or not the tolerance was reached.
        max_iterations: u32,
    },
}

impl Pressure {
    /// The paper's solver: 4 Jacobi iterations.
    pub const JACOBI4: Pressure = Pressure::Jacobi { iterations: 4 };
    /// The converged solver at its default tolerance.
    pub const CONVERGED: Pressure = Pressure::Converged {
        tolerance: 1e-5,
        max_iterations: 200,
    };
}

/// What lies beyond one side of the domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A free-slip wall.
    Closed,
    /// Open air at pressure 0.
    Open,
    /// Inflow of the border wind where it enters through this side, open elsewhere.
    Border,
}

/// A Gaussian ball of force (§2.3, first method).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindBall {
    /// Centre of the ball \[m\].
    pub centre: Vec3,
    /// Gaussian radius `r` \[m\]: the force falls to 1/e at `r` and is cut at `3r`.
    pub radius: f32,
    /// Acceleration at the centre [m/s²], in the direction the wind should blow.
    pub accel: Vec3,
    /// Random displacement of the centre each step, as a fraction of the radius (0 = steady).
    pub jitter: f32,
}

/// Everything that defines a wind grid.
#[derive(Clone, Debug, PartialEq)]
pub struct FluidParams {
    /// Cells along x, y (up) and z.
    pub cells: [usize; 3],
    /// Minimum corner of the domain \[m\].
    pub origin: Vec3,
    /// Extent of the domain \[m\].
    pub extent: Vec3,
    /// Time step \[s\].
    pub dt: f32,
    /// How the pressure equation is solved each step.
    pub pressure: Pressure,
    /// Sides x−, x+, y−, y+, z−, z+.
    pub sides: [Side; 6],
    /// The wind entering through `Border` sides [m/s].
    pub border: Vec3,
    /// Seed of the wind balls' jitter.
    pub seed: u64,
}

impl FluidParams {
    /// The paper's 256×256×16 horizontal-by-vertical grid over a box, border sides all round,
    /// ground and lid closed, 4 Jacobi iterations, 60 steps a second.
    pub fn over(min: Vec3, max: Vec3) -> FluidParams {
        FluidParams {
            cells: [256, 16, 256],
            origin: min,
            extent: max - min,
            dt: 1.0 / 60.0,
            pressure: Pressure::JACOBI4,
            sides: [
                Side::Border,
                Side::Border,
                Side::Closed,
                Side::Closed,
                Side::Border,
                Side::Border,
            ],
            border: Vec3::ZERO,
            seed: 1,
        }
    }

    /// Cell size per axis \[m\].
    pub fn cell(&self) -> Vec3 {
        self.extent / Vec3::new(self.cells[0] as f32, self.cells[1] as f32, self.cells[2] as f32)
    }

    /// Checks every field against its allowed range, naming the first one out of it.
    pub fn validate(&self) -> Result<(), SimError> {
        for (a, &n) in self.cells.iter().enumerate() {
            if !(2..=1 << 16).contains(&n) {
                return Err(SimError::param(
                    [
                        "wind grid cells along x",
                        "wind grid cells along y",
                        "wind grid cells along z",
                    ][a],
                    n,
                    "must be between 2 and 65536",
                ));
            }
        }
        let total = self.cells.iter().product::<usize>();
        if total > MAX_CELLS {
            return Err(SimError::param(
                "wind grid cells",
                total,
                format!("must be at most {MAX_CELLS} in all"),
            ));
        }
        for a in 0..3 {
            check_range("wind grid origin", self.origin[a], -1e6, 1e6)?;
            check_positive("wind grid extent", self.extent[a], 1e6)?;
        }
        check_positive("wind time step", self.dt, 1.0)?;
        for a in 0..3 {
            check_range("border wind", self.border[a], -200.0, 200.0)?;
        }
        match self.pressure {
            Pressure::Jacobi { iterations } if !(1..=10_000).contains(&iterations) => {
                return Err(SimError::param(
                    "Jacobi iterations",
                    iterations,
                    "must be between 1 and 10000",
                ))
            }
            Pressure::Converged {
                tolerance,
                max_iterations,
            } => {
                check_range("pressure tolerance", tolerance, 1e-7, 0.5)?;
                if !(1..=10_000).contains(&max_iterations) {
                    return Err(SimError::param(
                        "pressure iterations",
                        max_iterations,
                        "must be between 1 and 10000",
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Checks a wind ball.
pub fn validate_ball(b: &WindBall) -> Result<(), SimError> {
    for a in 0..3 {
        check_range("wind ball centre", b.centre[a], -1e6, 1e6)?;
        check_range("wind ball acceleration", b.accel[a], -1e4, 1e4)?;
    }
    check_positive("wind ball radius", b.radius, 1e5)?;
    check_range("wind ball jitter", b.jitter, 0.0, 10.0)
}

/// What one step used, beyond the grid's own state: the GPU solver replays steps from these.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepInputs {
    /// Each ball as it acts this step: (jittered centre, radius, acceleration).
    pub balls: Vec<(Vec3, f32, Vec3)>,
    /// The border wind this step [m/s]: the velocity of the faces on inflow sides and of the air beyond them.
    pub border: Vec3,
    /// Which sides are inflow this step (their faces take the border wind).
    pub inflow: [bool; 6],
    /// Which sides are open this step (pressure 0 beyond them).
    pub open: [bool; 6],
    /// Vorticity confinement strength ε (0: none).
    pub vorticity: f32,
}

/// A stage of a step ([`FluidGrid::step_stage`]), in the order a step runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepStage {
    /// Part `part` (0-based) of `of` equal shares of the advection's slabs.
    Advect { part: usize, of: usize },
    /// The wind balls' forces and the vorticity confinement.
    Forces,
    /// The divergence and the pressure solve.
    Pressure,
    /// The projection; the clock moves on.
    Project,
}

/// Timings and figures of one step.
#[derive(Clone, Copy, Debug, Default)]
pub struct FluidStepStats {
    /// Time spent advecting the velocity.
    pub advect: Duration,
    /// Time spent adding the wind balls' forces (and vorticity confinement).
    pub forces: Duration,
    /// Time spent on the divergence and the pressure solve.
    pub pressure: Duration,
    /// Time spent on the projection.
    pub project: Duration,
    /// RMS divergence over the fluid cells before projection [1/s].
    pub divergence_before: f64,
    /// What the pressure solve did.
    pub solve: PressureStats,
}

impl FluidStepStats {
    /// Wall time of the whole step: the sum of its four phases.
    pub fn total(&self) -> Duration {
        self.advect + self.forces + self.pressure + self.project
    }
    /// The passes' times in [`FLUID_PHASES`] order.
    pub fn phases(&self) -> [Duration; 4] {
        [self.advect, self.forces, self.pressure, self.project]
    }
}

/// Grid shape shared by the passes: cell counts, spacing, padded cell indexing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Dims {
    pub n: [usize; 3],
    pub h: [f32; 3],
}

impl Dims {
    pub fn cells(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }
    /// Size of an array of cells with one ghost layer all round.
    pub fn padded(&self) -> usize {
        (self.n[0] + 2) * (self.n[1] + 2) * (self.n[2] + 2)
    }
    /// Index of cell (i, j, k) in a padded array (−1 and n are the ghosts).
    #[inline]
    pub fn pad(&self, i: isize, j: isize, k: isize) -> usize {
        let (px, py) = (self.n[0] + 2, self.n[1] + 2);
        (i + 1) as usize + px * ((j + 1) as usize + py * (k + 1) as usize)
    }
    /// Strides of a padded array along x, y, z.
    pub fn pad_strides(&self) -> [usize; 3] {
        [1, self.n[0] + 2, (self.n[0] + 2) * (self.n[1] + 2)]
    }
    /// Face-array dimensions of component `a`.
    pub fn face_dims(&self, a: usize) -> [usize; 3] {
        let mut d = self.n;
        d[a] += 1;
        d
    }
    pub fn inv_h2(&self) -> [f32; 3] {
        [
            1.0 / (self.h[0] * self.h[0]),
            1.0 / (self.h[1] * self.h[1]),
            1.0 / (self.h[2] * self.h[2]),
        ]
    }
}

/// Rows of `k`-slabs per job: enough work per job to be worth queueing, fixed by the grid
/// alone so results never depend on the worker count.
pub(crate) fn slab_group(plane: usize) -> usize {
    (32_768 / plane.max(1)).max(1)
}

/// Runs `f(k0, chunk)` over `data` cut into chunks of whole `plane`-sized slabs, `k0` being the
/// first slab of the chunk; one job per chunk.
pub(crate) fn par_slabs<T: Send>(jobs: &JobSystem, data: &mut [T], plane: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let group = slab_group(plane);
    let mut chunks: Vec<(usize, &mut [T])> = data
        .chunks_mut(plane * group)
        .enumerate()
        .map(|(c, s)| (c * group, s))
        .collect();
    if chunks.len() == 1 || jobs.threads() == 1 {
        for (k0, s) in chunks {
            f(k0, s);
        }
        return;
    }
    jobs.for_each_mut(&mut chunks, |_, (k0, s)| f(*k0, s));
}

/// Runs `f(k0, chunk)` like [`par_slabs`] and returns what each chunk returns, in chunk order.
pub(crate) fn par_slabs_map<T: Send, R: Send + Copy + Default>(
    jobs: &JobSystem,
    data: &mut [T],
    plane: usize,
    f: impl Fn(usize, &mut [T]) -> R + Sync,
) -> Vec<R> {
    let group = slab_group(plane);
    let mut chunks: Vec<(usize, &mut [T], R)> = data
        .chunks_mut(plane * group)
        .enumerate()
        .map(|(c, s)| (c * group, s, R::default()))
        .collect();
    if jobs.threads() == 1 || chunks.len() == 1 {
        for (k0, s, r) in &mut chunks {
            *r = f(*k0, s);
        }
    } else {
        jobs.for_each_mut(&mut chunks, |_, (k0, s, r)| *r = f(*k0, s));
    }
    chunks.into_iter().map(|c| c.2).collect()
}

/// Runs `f(k0, chunk)` like [`par_slabs`] and adds up what each chunk returns, in chunk order.
pub(crate) fn par_slabs_sum<T: Send>(
    jobs: &JobSystem,
    data: &mut [T],
    plane: usize,
    f: impl Fn(usize, &mut [T]) -> f64 + Sync,
) -> f64 {
    par_slabs_map(jobs, data, plane, f).into_iter().sum()
}

/// Runs `f(k0, chunk)` like [`par_slabs`] and returns the largest of what the chunks return.
pub(crate) fn par_slabs_max<T: Send>(
    jobs: &JobSystem,
    data: &mut [T],
    plane: usize,
    f: impl Fn(usize, &mut [T]) -> f32 + Sync,
) -> f32 {
    par_slabs_map(jobs, data, plane, f).into_iter().fold(0.0, f32::max)
}

/// The largest |value| in `f`; infinite if it holds a NaN or an infinity. Written to
/// vectorise: eight lanes of a running maximum (a compare and select, which is `maxps`) and of
/// a running sum of x·0, which turns NaN for a NaN or an infinity and stays 0 otherwise.
#[inline(always)]
pub(crate) fn peak_of(f: &[f32]) -> f32 {
    let (mut m, mut z) = ([0.0f32; 8], [0.0f32; 8]);
    let mut lanes = f.chunks_exact(8);
    for c in &mut lanes {
        for i in 0..8 {
            let a = c[i].abs();
            m[i] = if a > m[i] { a } else { m[i] };
            z[i] += c[i] * 0.0;
        }
    }
    for (i, &x) in lanes.remainder().iter().enumerate() {
        let a = x.abs();
        m[i] = if a > m[i] { a } else { m[i] };
        z[i] += x * 0.0;
    }
    if z.iter().any(|v| v.is_nan()) {
        f32::INFINITY
    } else {
        m.iter().fold(0.0, |p, &v| p.max(v))
    }
}

/// The instruction sets the solver's passes may use, chosen once per grid from what the CPU
/// has. Every pass gives bit-identical results with either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// Plain Rust, any target.
    Portable,
    /// x86-64 with AVX2.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    /// The fastest set this CPU runs.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Isa::Avx2;
        }
        Isa::Portable
    }
}

/// A wind grid and its solver state.
pub struct FluidGrid {
    params: FluidParams,
    dims: Dims,
    /// Face velocities (MAC), see the module docs.
    vel: [Vec<f32>; 3],
    /// The step's output: advected, forced and projected here, then swapped with `vel`.
    next: [Vec<f32>; 3],
    /// The largest |value| of each component of `vel` (see [`Peak`]), once known.
    peak: Peak,
    /// The same for `next` once a step finished in it; it moves to `peak` with the field.
    next_peak: Peak,
    /// Padded: 1 for fluid cells, 0 for solid; ghosts 1 beyond open sides, 0 otherwise.
    act: Vec<f32>,
    /// Unpadded: solid cells.
    solid: Vec<bool>,
    pressure: pressure::PressureState,
    balls: Vec<WindBall>,
    rng: Rng,
    time: f64,
    steps: u64,
    /// Side states `act` was built for (`None` after the solids changed).
    built_for: Option<[bool; 6]>,
    last: FluidStepStats,
    isa: Isa,
    /// Vorticity confinement strength (0: off) and its scratch arrays.
    vorticity: f32,
    confinement: vorticity::Confinement,
}

impl FluidGrid {
    /// A grid at rest for `params`, refused with the parameter named when `params` is out of range.
    pub fn new(params: FluidParams) -> Result<FluidGrid, SimError> {
        params.validate()?;
        let c = params.cell();
        let dims = Dims {
            n: params.cells,
            h: [c.x, c.y, c.z],
        };
        let faces = |a: usize| dims.face_dims(a).iter().product::<usize>();
        let vel = [vec![0.0; faces(0)], vec![0.0; faces(1)], vec![0.0; faces(2)]];
        Ok(FluidGrid {
            next: vel.clone(),
            peak: Peak::known([0.0; 3]),
            next_peak: Peak::default(),
            vel,
            act: vec![0.0; dims.padded()],
            solid: vec![false; dims.cells()],
            pressure: pressure::PressureState::new(dims),
            balls: Vec::new(),
            rng: Rng::new(params.seed ^ 0x5749_4E44_4641_4C4C),
            time: 0.0,
            steps: 0,
            built_for: None,
            last: FluidStepStats::default(),
            isa: Isa::detect(),
            vorticity: 0.0,
            confinement: vorticity::Confinement::default(),
            dims,
            params,
        })
    }

    /// The grid's parameters.
    pub fn params(&self) -> &FluidParams {
        &self.params
    }
    /// Cells along x, y (up), z.
    pub fn cells(&self) -> [usize; 3] {
        self.dims.n
    }
    /// Cell size along x, y, z \[m\].
    pub fn cell_size(&self) -> Vec3 {
        Vec3::from(self.dims.h)
    }
    /// The domain's minimum corner \[m\].
    pub fn origin(&self) -> Vec3 {
        self.params.origin
    }
    /// Simulated time \[s\].
    pub fn time(&self) -> f64 {
        self.time
    }
    /// Steps taken since the grid was made.
    pub fn steps(&self) -> u64 {
        self.steps
    }
    /// Face velocities of component `a` (0 = x, 1 = y, 2 = z), laid out as the module docs say.
    pub fn velocity(&self, a: usize) -> &[f32] {
        &self.vel[a]
    }
    /// Mutable face velocities of component `a`, e.g. to set an initial field.
    pub fn velocity_mut(&mut self, a: usize) -> &mut [f32] {
        self.peak = Peak::default();
        &mut self.vel[a]
    }
    /// Pressure at the cell centres (unpadded, cell order), times `dt / ρ`.
    pub fn pressure(&self) -> Vec<f32> {
        let d = self.dims;
        let mut out = Vec::with_capacity(d.cells());
        for k in 0..d.n[2] as isize {
            for j in 0..d.n[1] as isize {
                for i in 0..d.n[0] as isize {
                    out.push(self.pressure.p[d.pad(i, j, k)]);
                }
            }
        }
        out
    }
    /// Sets the pressure the next Jacobi solve starts from (cell order, as [`pressure`](Self::pressure)).
    pub fn set_pressure(&mut self, p: &[f32]) {
        let d = self.dims;
        assert_eq!(p.len(), d.cells(), "pressure: one value per cell");
        let mut c = 0;
        for k in 0..d.n[2] as isize {
            for j in 0..d.n[1] as isize {
                for i in 0..d.n[0] as isize {
                    self.pressure.p[d.pad(i, j, k)] = if self.solid[c] { 0.0 } else { p[c] };
                    c += 1;
                }
            }
        }
    }
    /// Solid cells (cell order).
    pub fn solid(&self) -> &[bool] {
        &self.solid
    }
    /// Statistics of the last step.
    pub fn last_step(&self) -> &FluidStepStats {
        &self.last
    }

    /// Changes the border wind.
    pub fn set_border(&mut self, border: Vec3) -> Result<(), SimError> {
        for a in 0..3 {
            check_range("border wind", border[a], -200.0, 200.0)?;
        }
        self.params.border = border;
        Ok(())
    }
    /// The largest vorticity confinement strength accepted.
    pub const MAX_VORTICITY: f32 = 4.0;

    /// Changes the time step \[s\] from the next step on (as [`FluidParams::dt`] allows:
    /// over 0, at most 1 s), refused while the field is frozen (a step spread over several
    /// calls, as [`FluidWind`] spreads one, changes it only between steps). The pressure the next solve
    /// starts from is kept as the pressure itself: stored times `dt / ρ`, it is scaled by the
    /// ratio of the steps.
    pub fn set_dt(&mut self, dt: f32) -> Result<(), SimError> {
        check_positive("wind time step", dt, 1.0)?;
        if self.vel.iter().any(Vec::is_empty) {
            return Err(SimError::param(
                "wind time step",
                dt,
                "cannot change while the grid's field is out for a step",
            ));
        }
        let ratio = dt / self.params.dt;
        if ratio != 1.0 {
            self.pressure.p.iter_mut().for_each(|p| *p *= ratio);
            self.params.dt = dt;
        }
        Ok(())
    }

    /// Sets the vorticity confinement strength ε (0 turns it off; see module `vorticity`):
    /// 0 to [`MAX_VORTICITY`](Self::MAX_VORTICITY); around 0.1 to 0.5 gives gusty detail.
    pub fn set_vorticity(&mut self, eps: f32) -> Result<(), SimError> {
        check_range("vorticity confinement", eps, 0.0, Self::MAX_VORTICITY)?;
        self.vorticity = eps;
        Ok(())
    }

    /// The vorticity confinement strength.
    pub fn vorticity(&self) -> f32 {
        self.vorticity
    }

    /// Changes the pressure solver, checked against the same ranges as [`FluidParams::validate`].
    pub fn set_pressure_solver(&mut self, p: Pressure) -> Result<(), SimError> {
        let mut params = self.params.clone();
        params.pressure = p;
        params.validate()?;
        self.params = params;
        Ok(())
    }
    /// The wind balls, in the order they were added.
    pub fn balls(&self) -> &[WindBall] {
        &self.balls
    }
    /// Adds a wind ball (checked) and returns its index.
    pub fn add_ball(&mut self, ball: WindBall) -> Result<usize, SimError> {
        validate_ball(&ball)?;
        self.balls.push(ball);
        Ok(self.balls.len() - 1)
    }
    /// Replaces the wind ball at `index` (checked); an index past the end is refused.
    pub fn set_ball(&mut self, index: usize, ball: WindBall) -> Result<(), SimError> {
        validate_ball(&ball)?;
        match self.balls.get_mut(index) {
            Some(b) => *b = ball,
            None => {
                return Err(SimError::param(
                    "wind ball",
                    index,
                    format!("there are {} balls", self.balls.len()),
                ))
            }
        }
        Ok(())
    }
    /// Removes every wind ball.
    pub fn clear_balls(&mut self) {
        self.balls.clear();
    }

    /// The cell containing a point, if it is inside the domain.
    pub fn cell_at(&self, p: Vec3) -> Option<[usize; 3]> {
        let g = (p - self.params.origin) / Vec3::from(self.dims.h);
        let mut c = [0; 3];
        for a in 0..3 {
            if !(g[a] >= 0.0 && g[a] < self.dims.n[a] as f32) {
                return None;
            }
            c[a] = g[a] as usize;
        }
        Some(c)
    }

    /// Marks a cell solid (or fluid again). Faces beside solid cells are set to zero at once.
    pub fn set_solid(&mut self, cell: [usize; 3], solid: bool) {
        let n = self.dims.n;
        assert!(
            cell[0] < n[0] && cell[1] < n[1] && cell[2] < n[2],
            "set_solid: cell outside the grid"
        );
        let c = cell[0] + n[0] * (cell[1] + n[1] * cell[2]);
        if self.solid[c] != solid {
            self.solid[c] = solid;
            self.built_for = None;
            if solid {
                let d = self.dims;
                for a in 0..3 {
                    let fd = d.face_dims(a);
                    let mut lo = cell;
                    for side in 0..2 {
                        lo[a] = cell[a] + side;
                        self.vel[a][lo[0] + fd[0] * (lo[1] + fd[1] * lo[2])] = 0.0;
                    }
                }
                self.pressure.p[d.pad(cell[0] as isize, cell[1] as isize, cell[2] as isize)] = 0.0;
            }
        }
    }

    /// Marks every cell whose centre is inside the box solid; returns how many were marked.
    pub fn add_solid_box(&mut self, min: Vec3, max: Vec3) -> Result<usize, SimError> {
        for a in 0..3 {
            check_range("solid box corner", min[a], -1e6, 1e6)?;
            check_range("solid box corner", max[a], -1e6, 1e6)?;
        }
        let mut count = 0;
        self.for_cells_in(min, max, |g, c, centre| {
            if centre.cmpge(min).all() && centre.cmple(max).all() {
                g.set_solid(c, true);
                count += 1;
            }
        });
        Ok(count)
    }

    /// Marks solid every cell whose centre lies inside a segment thick enough to block the
    /// flow (radius at least a quarter of the smallest horizontal cell size): the trunks and
    /// main limbs of a forest, in the pose given. Returns the number of cells marked.
    pub fn voxelize_segments(&mut self, segments: impl Iterator<Item = (Vec3, Vec3, f32)>) -> usize {
        let min_r = 0.25 * self.dims.h[0].min(self.dims.h[2]);
        let mut count = 0;
        for (a, b, r) in segments {
            if r.is_nan() || r < min_r || !a.is_finite() || !b.is_finite() {
                continue;
            }
            // A cell's centre within r + half a cell diagonal's horizontal extent of the axis:
            // thin trunks still block the cell they stand in.
            let reach = r.max(0.5 * self.dims.h[0].hypot(self.dims.h[2]));
            let lo = a.min(b) - Vec3::splat(reach);
            let hi = a.max(b) + Vec3::splat(reach);
            self.for_cells_in(lo, hi, |g, c, centre| {
                let ab = b - a;
                let t = ((centre - a).dot(ab) / ab.length_squared().max(1e-12)).clamp(0.0, 1.0);
                if (a + ab * t - centre).length() <= reach && !g.solid[c[0] + g.dims.n[0] * (c[1] + g.dims.n[1] * c[2])]
                {
                    g.set_solid(c, true);
                    count += 1;
                }
            });
        }
        count
    }

    fn for_cells_in(&mut self, lo: Vec3, hi: Vec3, mut f: impl FnMut(&mut FluidGrid, [usize; 3], Vec3)) {
        let h = Vec3::from(self.dims.h);
        let g0 = ((lo - self.params.origin) / h - Vec3::splat(0.5)).ceil();
        let g1 = ((hi - self.params.origin) / h - Vec3::splat(0.5)).floor();
        let mut r = [(0usize, 0usize); 3];
        for a in 0..3 {
            let n = self.dims.n[a] as f32;
            let (l, u) = (g0[a].max(0.0), g1[a].min(n - 1.0));
            if l.is_nan() || u.is_nan() || l > u {
                return;
            }
            r[a] = (l as usize, u as usize);
        }
        for k in r[2].0..=r[2].1 {
            for j in r[1].0..=r[1].1 {
                for i in r[0].0..=r[0].1 {
                    let centre = self.params.origin + (Vec3::new(i as f32, j as f32, k as f32) + 0.5) * h;
                    f(self, [i, j, k], centre);
                }
            }
        }
    }

    /// Which sides are inflow and which open for the current border wind.
    pub fn side_states(&self) -> ([bool; 6], [bool; 6]) {
        let mut inflow = [false; 6];
        let mut open = [false; 6];
        for s in 0..6 {
            let a = s / 2;
            // Inward normal: +axis on the low side, −axis on the high side.
            let inward = if s % 2 == 0 {
                self.params.border[a]
            } else {
                -self.params.border[a]
            };
            match self.params.sides[s] {
                Side::Closed => {}
                Side::Open => open[s] = true,
                Side::Border => {
                    if inward > 1e-6 {
                        inflow[s] = true
                    } else {
                        open[s] = true
                    }
                }
            }
        }
        (inflow, open)
    }

    /// Draws this step's jitter and returns what the step will use. [`step`](Self::step) calls
    /// it; the GPU solver calls it to replay the same step.
    pub fn next_inputs(&mut self) -> StepInputs {
        let mut balls = Vec::with_capacity(self.balls.len());
        for b in &self.balls {
            let j = Vec3::new(self.rng.sym(1.0), self.rng.sym(1.0), self.rng.sym(1.0));
            balls.push((b.centre + j * b.jitter * b.radius, b.radius, b.accel));
        }
        let (inflow, open) = self.side_states();
        StepInputs {
            balls,
            border: self.params.border,
            inflow,
            open,
            vorticity: self.vorticity,
        }
    }

    /// Advances one step of `dt`.
    pub fn step(&mut self, jobs: &JobSystem) -> FluidStepStats {
        let inputs = self.next_inputs();
        self.step_with(jobs, &inputs)
    }

    /// Advances one step with inputs from [`next_inputs`](Self::next_inputs).
    pub fn step_with(&mut self, jobs: &JobSystem, inputs: &StepInputs) -> FluidStepStats {
        let from = self.freeze();
        let stats = self.step_from(jobs, inputs, &from);
        self.thaw(from);
        stats
    }

    /// Takes the current field out of the grid, which has none until [`thaw`](Self::thaw):
    /// [`step_from`](Self::step_from) steps from it while others sample it.
    pub fn freeze(&mut self) -> FrozenField {
        FrozenField {
            origin: self.params.origin,
            dims: self.dims,
            isa: self.isa,
            time: self.time,
            vel: std::mem::take(&mut self.vel),
            peak: std::mem::take(&mut self.peak),
        }
    }

    /// A copy of the current field, frozen at the grid's time (for a field stepped elsewhere,
    /// as on the GPU, whose grid must keep its own).
    pub fn snapshot(&self) -> FrozenField {
        FrozenField {
            origin: self.params.origin,
            dims: self.dims,
            isa: self.isa,
            time: self.time,
            vel: self.vel.clone(),
            peak: self.peak.clone(),
        }
    }

    /// One step from `from`, the field [`freeze`](Self::freeze) took out, into the grid's
    /// own buffers; `from` is only read. The grid's clock moves on; its field is the new one
    /// once [`thaw`](Self::thaw) puts it in place.
    pub fn step_from(&mut self, jobs: &JobSystem, inputs: &StepInputs, from: &FrozenField) -> FluidStepStats {
        let first = self.step_from_first(jobs, inputs, from);
        self.step_second(jobs, first)
    }

    /// The first half of [`step_from`](Self::step_from): advection and forces, into the grid's
    /// own buffers (the clock stays). [`step_second`](Self::step_second) finishes the step,
    /// now or after the field is back in place ([`unfreeze`](Self::unfreeze)); nothing that
    /// changes the grid's buffers may come between. Returns the two passes' figures.
    pub fn step_from_first(&mut self, jobs: &JobSystem, inputs: &StepInputs, from: &FrozenField) -> FluidStepStats {
        let mut stats = FluidStepStats::default();
        self.step_stage(
            jobs,
            StepStage::Advect { part: 0, of: 1 },
            inputs,
            Some(from),
            &mut stats,
        );
        self.step_stage(jobs, StepStage::Forces, inputs, Some(from), &mut stats);
        stats
    }

    /// The second half of a step whose first half ([`step_from_first`](Self::step_from_first),
    /// figures `first`) is in the grid's buffers: the pressure solve and the projection; the
    /// clock moves on, and [`thaw`](Self::thaw) puts the new field in place. Returns the whole
    /// step's figures.
    pub fn step_second(&mut self, jobs: &JobSystem, first: FluidStepStats) -> FluidStepStats {
        let mut stats = first;
        let none = StepInputs::default();
        self.step_stage(jobs, StepStage::Pressure, &none, None, &mut stats);
        self.step_stage(jobs, StepStage::Project, &none, None, &mut stats);
        stats
    }

    /// One stage of a step from `from`, the field [`freeze`](Self::freeze) took out, into the
    /// grid's own buffers, its time added to `stats` (the pressure solve's figures too). A
    /// step is its stages in order, each once: the advection's parts 0 to `of` − 1, the forces,
    /// the pressure solve, the projection (which moves the clock on); [`thaw`](Self::thaw) then
    /// puts the new field in place. Between stages the field may be put back
    /// ([`unfreeze`](Self::unfreeze)) and frozen again, and nothing else that changes the
    /// grid's buffers may come between. The advection and the forces read `inputs` and `from`
    /// (the pressure solve and the projection neither); every stage gives the bits of the
    /// whole step ([`step_from`](Self::step_from)), however the advection is cut.
    ///
    /// # Panics
    ///
    /// If the advection or the forces are not given the field frozen at the grid's time.
    pub fn step_stage(
        &mut self,
        jobs: &JobSystem,
        stage: StepStage,
        inputs: &StepInputs,
        from: Option<&FrozenField>,
        stats: &mut FluidStepStats,
    ) {
        let t = Instant::now();
        match stage {
            StepStage::Advect { part, of } => {
                let from = from.expect("the advection reads the frozen field");
                assert!(
                    self.vel.iter().all(Vec::is_empty) && from.time == self.time,
                    "a grid steps from the field it froze at its own time"
                );
                self.ensure_built(inputs.open);
                self.advect(jobs, inputs, &from.vel, (part, of.max(1)));
                stats.advect += t.elapsed();
            }
            StepStage::Forces => {
                self.apply_forces(jobs, inputs);
                if inputs.vorticity > 0.0 {
                    let (d, dt) = (self.dims, self.params.dt);
                    self.confinement
                        .apply(jobs, &d, &self.act, inputs.vorticity, dt, &mut self.next);
                }
                stats.forces += t.elapsed();
            }
            StepStage::Pressure => {
                let sum_sq = match self.params.pressure {
                    Pressure::Jacobi { iterations } => {
                        // The divergence is computed in the same pass as the iterations (see `jacobi`).
                        let sum_sq = self
                            .pressure
                            .jacobi(jobs, self.isa, iterations as usize, &self.act, &self.next);
                        stats.solve = PressureStats {
                            iterations,
                            residual_rel: f64::NAN,
                            converged: false,
                        };
                        sum_sq
                    }
                    Pressure::Converged {
                        tolerance,
                        max_iterations,
                    } => {
                        let div = &mut self.pressure.rhs;
                        let sum_sq = jacobi::divergence(jobs, self.isa, &self.dims, &self.next, &self.act, div);
                        stats.solve = self.pressure.pcg(jobs, tolerance as f64, max_iterations);
                        sum_sq
                    }
                };
                stats.divergence_before = (sum_sq / self.pressure.fluid_cells().max(1) as f64).sqrt();
                stats.pressure += t.elapsed();
            }
            StepStage::Project => {
                let peak = jacobi::project(jobs, self.isa, &self.dims, &self.pressure.p, &self.act, &mut self.next);
                self.next_peak = Peak::known(peak);
                stats.project += t.elapsed();
                self.time += self.params.dt as f64;
                self.steps += 1;
                self.last = *stats;
            }
        }
    }

    /// Puts the field [`freeze`](Self::freeze) took out back in place, unchanged, keeping what
    /// [`step_from_first`](Self::step_from_first) left in the grid's buffers for
    /// [`step_second`](Self::step_second).
    pub fn unfreeze(&mut self, from: FrozenField) {
        assert!(self.vel.iter().all(Vec::is_empty), "only a frozen grid unfreezes");
        self.vel = from.vel;
        self.peak = from.peak;
    }

    /// Puts the field [`step_from`](Self::step_from) computed in place, keeping `from`'s
    /// buffers for the next step.
    pub fn thaw(&mut self, from: FrozenField) {
        assert!(self.vel.iter().all(Vec::is_empty), "only a frozen grid thaws");
        self.vel = std::mem::replace(&mut self.next, from.vel);
        self.peak = std::mem::take(&mut self.next_peak);
    }

    /// RMS divergence over the fluid cells of the current field [1/s].
    pub fn divergence_rms(&mut self, jobs: &JobSystem) -> f64 {
        let (_, sum_sq) = self.current_divergence(jobs);
        (sum_sq / self.pressure.fluid_cells().max(1) as f64).sqrt()
    }

    /// Divergence of the current field (padded) and its sum of squares, for the current sides.
    fn current_divergence(&mut self, jobs: &JobSystem) -> (Vec<f32>, f64) {
        let (_, open) = self.side_states();
        self.ensure_built(open);
        let mut div = vec![0.0; self.dims.padded()];
        let sum_sq = jacobi::divergence(jobs, self.isa, &self.dims, &self.vel, &self.act, &mut div);
        (div, sum_sq)
    }

    /// Rebuilds the activity flags and pressure operators when the solids or open sides changed.
    fn ensure_built(&mut self, open: [bool; 6]) {
        if self.built_for != Some(open) {
            self.build_act(&open);
            self.pressure.rebuild(&self.act, &self.dims, &open);
            self.built_for = Some(open);
        }
    }

    /// Moves the clock one step without computing it: for a step computed elsewhere (the GPU
    /// solver replaying [`next_inputs`](Self::next_inputs)) whose field is copied in.
    pub fn count_step(&mut self) {
        self.time += self.params.dt as f64;
        self.steps += 1;
    }

    /// Moves the clock without stepping (when the fluid cannot keep up with the trees).
    pub fn skip_time(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            self.time += seconds;
        }
    }

    /// Divergence of each cell (unpadded cell order), for tests and tools.
    pub fn divergence_field(&mut self, jobs: &JobSystem) -> Vec<f32> {
        let (div, _) = self.current_divergence(jobs);
        let d = self.dims;
        let mut out = Vec::with_capacity(d.cells());
        for k in 0..d.n[2] as isize {
            for j in 0..d.n[1] as isize {
                for i in 0..d.n[0] as isize {
                    out.push(div[d.pad(i, j, k)]);
                }
            }
        }
        out
    }

    /// Hash of the velocity and pressure bits, for determinism checks.
    pub fn state_hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |x: f32| {
            h ^= x.to_bits() as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        };
        for a in 0..3 {
            self.vel[a].iter().for_each(|&x| eat(x));
        }
        self.pressure.p.iter().for_each(|&x| eat(x));
        h
    }

    fn build_act(&mut self, open: &[bool; 6]) {
        let d = self.dims;
        let n = [d.n[0] as isize, d.n[1] as isize, d.n[2] as isize];
        self.act.iter_mut().for_each(|a| *a = 0.0);
        for k in -1..=n[2] {
            for j in -1..=n[1] {
                for i in -1..=n[0] {
                    let c = [i, j, k];
                    let mut outside = None;
                    for a in 0..3 {
                        if c[a] < 0 {
                            outside = Some(2 * a);
                        } else if c[a] >= n[a] {
                            outside = Some(2 * a + 1);
                        }
                    }
                    let v = match outside {
                        // Ghost cells beyond two sides at once (edges, corners) touch no face.
                        Some(s) => open[s] as u8 as f32,
                        None => !self.solid[(i + n[0] * (j + n[1] * k)) as usize] as u8 as f32,
                    };
                    self.act[d.pad(i, j, k)] = v;
                }
            }
        }
    }

    /// Semi-Lagrangian advection of every face of `from` (Eq. 4), into `next`.
    /// Part `part.0` of `part.1` of the advection: that share of the jobs below, in order (each
    /// face is computed on its own from `from`, so the parts together give the whole's bits).
    fn advect(&mut self, jobs: &JobSystem, inputs: &StepInputs, from: &[Vec<f32>; 3], part: (usize, usize)) {
        let d = self.dims;
        let ctx = Advect::new(d, from, &self.act, self.params.dt, inputs, self.isa);
        let ctx = &ctx;
        let [nu, nv, nw] = &mut self.next;
        let fd = [d.face_dims(0), d.face_dims(1), d.face_dims(2)];
        let plane = [fd[0][0] * fd[0][1], fd[1][0] * fd[1][1], fd[2][0] * fd[2][1]];
        // One job advects the three components over the same slabs, so the faces around them,
        // which all three read, come from memory once per job rather than once per component
        // (the grid is far larger than a core's cache). Every face is computed on its own, so
        // the grouping changes no bit. w has one slab more than u and v (its faces on the z+
        // side), which the last job takes too.
        // About as many faces per job as the other passes have.
        let group = slab_group(plane[0] + plane[1] + plane[2]);
        let nz = d.n[2];
        let (nw, w_last) = nw.split_at_mut(nz * plane[2]);
        let mut w_last = Some(w_last);
        let mut chunks: Vec<Job<'_>> = nu
            .chunks_mut(plane[0] * group)
            .zip(nv.chunks_mut(plane[1] * group))
            .zip(nw.chunks_mut(plane[2] * group))
            .enumerate()
            .map(|(c, ((u, v), w))| (c * group, u, v, w, None))
            .collect();
        if let Some(last) = chunks.last_mut() {
            last.4 = w_last.take();
        }
        /// First slab, the three components' faces from it, and w's extra slab for the last job.
        type Job<'s> = (
            usize,
            &'s mut [f32],
            &'s mut [f32],
            &'s mut [f32],
            Option<&'s mut [f32]>,
        );
        let run = |(k0, u, v, w, last): &mut Job<'_>| {
            // The cell-centred velocities of the cell slabs these face slabs touch.
            let k1 = *k0 + u.len() / plane[0];
            ctx.with_centres(*k0, k1, |ctx| {
                ctx.rows::<0>(*k0, u);
                ctx.rows::<1>(*k0, v);
                ctx.rows::<2>(*k0, w);
                if let Some(last) = last {
                    ctx.rows::<2>(nz, last);
                }
            });
        };
        let (c0, c1) = (chunks.len() * part.0 / part.1, chunks.len() * (part.0 + 1) / part.1);
        let chunks = &mut chunks[c0..c1];
        if chunks.len() == 1 || jobs.threads() == 1 {
            chunks.iter_mut().for_each(run);
        } else {
            jobs.for_each_mut(chunks, |_, c| run(c));
        }
    }

    /// Wind balls (Eq. 5, §2.3), on the advected field in `next`.
    fn apply_forces(&mut self, jobs: &JobSystem, inputs: &StepInputs) {
        if inputs.balls.is_empty() {
            return;
        }
        let d = self.dims;
        let (origin, dt) = (self.params.origin, self.params.dt);
        let act = &self.act;
        for a in 0..3 {
            let fd = d.face_dims(a);
            let mut off = [0.5f32; 3];
            off[a] = 0.0;
            // The faces any ball reaches, by k.
            let mut klo = usize::MAX;
            let mut khi = 0;
            for &(c, r, _) in &inputs.balls {
                let g0 = ((c.z - 3.0 * r - origin.z) / d.h[2] - off[2]).ceil().max(0.0);
                let g1 = ((c.z + 3.0 * r - origin.z) / d.h[2] - off[2])
                    .floor()
                    .min(fd[2] as f32 - 1.0);
                if g0 <= g1 {
                    klo = klo.min(g0 as usize);
                    khi = khi.max(g1 as usize);
                }
            }
            if klo > khi {
                continue;
            }
            let plane = fd[0] * fd[1];
            let balls = &inputs.balls;
            let slice = &mut self.next[a][klo * plane..(khi + 1) * plane];
            par_slabs(jobs, slice, plane, |k0, chunk| {
                for (r, row) in chunk.chunks_mut(fd[0]).enumerate() {
                    let (j, k) = (r % fd[1], klo + k0 + r / fd[1]);
                    let (l, rr) = face_cells(&d, a, j, k);
                    for &(c, radius, accel) in balls {
                        let y = origin.y + (j as f32 + off[1]) * d.h[1];
                        let z = origin.z + (k as f32 + off[2]) * d.h[2];
                        let dyz = (y - c.y) * (y - c.y) + (z - c.z) * (z - c.z);
                        let reach2 = 9.0 * radius * radius;
                        if dyz > reach2 {
                            continue;
                        }
                        let half = (reach2 - dyz).sqrt();
                        let i0 = ((c.x - half - origin.x) / d.h[0] - off[0]).ceil().max(0.0) as usize;
                        let i1 = ((c.x + half - origin.x) / d.h[0] - off[0]).floor();
                        if i1 < 0.0 {
                            continue;
                        }
                        let i1 = (i1 as usize).min(fd[0] - 1);
                        let inv_r2 = 1.0 / (radius * radius);
                        for i in i0..=i1 {
                            let (cl, cr) = (l(i), rr(i));
                            let live = act[cl] * act[cr];
                            let x = origin.x + (i as f32 + off[0]) * d.h[0];
                            let d2 = (x - c.x) * (x - c.x) + dyz;
                            row[i] += live * dt * accel[a] * (-d2 * inv_r2).exp();
                        }
                    }
                }
            });
        }
    }

    /// The wind at a point: each component trilinear on its own staggered grid, clamped to the
    /// domain.
    pub fn sample(&self, p: Vec3) -> Vec3 {
        self.field().sample(p)
    }

    /// No sample of the field is faster than this \[m/s\] (the norm of the largest magnitudes of
    /// its three components: a sample is a convex blend of faces); infinite when the
    /// field holds a NaN.
    pub fn speed_bound(&self) -> f32 {
        self.peak.speed_bound(&self.vel)
    }

    /// Replaces each point by the wind there ([`sample`](Self::sample) at it, bit for bit).
    pub fn sample_in_place(&self, points: &mut [Vec3]) {
        self.field().sample_in_place(points)
    }

    /// The wind at each of `points`, into `out` (as long as `points`), bit for bit as
    /// [`sample`](Self::sample).
    pub fn sample_into(&self, points: &[Vec3], out: &mut [Vec3]) {
        self.field().sample_into(points, out)
    }

    fn field(&self) -> FieldRef<'_> {
        FieldRef {
            origin: self.params.origin,
            dims: self.dims,
            isa: self.isa,
            vel: &self.vel,
        }
    }

    /// The cell-centred velocity of cell (i, j, k) (mean of its two faces per axis).
    pub fn cell_velocity(&self, i: usize, j: usize, k: usize) -> Vec3 {
        Vec3::from(centre_velocity(&self.dims, &self.vel, i, j, k))
    }
}

/// A grid's wind field taken out of it at one time ([`FluidGrid::freeze`]), so that the trees
/// can sample it while the grid steps from it to the next time. It samples exactly as the grid
/// did at that time.
#[derive(Debug)]
pub struct FrozenField {
    origin: Vec3,
    dims: Dims,
    isa: Isa,
    time: f64,
    vel: [Vec<f32>; 3],
    peak: Peak,
}

/// The largest |value| of each velocity component over all its faces, so that no sample of
/// the field is faster than their Euclidean norm: each component of a sample is a convex
/// combination of that component's face values (trilinear weights in [0, 1], the point
/// clamped to the grid), so it is no larger than their largest magnitude. The step's projection
/// measures it as it writes the field ([`FluidGrid::step_second`]); anything that writes the field
/// otherwise forgets it, and it is measured again when asked. A NaN makes it infinite.
#[derive(Clone, Debug, Default)]
struct Peak(std::sync::OnceLock<[f32; 3]>);

impl Peak {
    fn known(peak: [f32; 3]) -> Peak {
        Peak(std::sync::OnceLock::from(peak))
    }

    /// The bound on the speed of a sample of `vel`, measured now unless known.
    fn speed_bound(&self, vel: &[Vec<f32>; 3]) -> f32 {
        if vel.iter().any(Vec::is_empty) {
            // A grid whose field is out (frozen): nothing to bound.
            return f32::INFINITY;
        }
        let [x, y, z] = *self.0.get_or_init(|| vel.each_ref().map(|f| peak_of(f)));
        // The trilinear blend rounds: a few ulps of headroom.
        (x * x + y * y + z * z).sqrt() * (1.0 + 1e-5)
    }
}

impl FrozenField {
    /// The wind at a point ([`FluidGrid::sample`] at the time the field was frozen).
    pub fn sample(&self, p: Vec3) -> Vec3 {
        self.field().sample(p)
    }

    /// No sample of the field is faster than this \[m/s\] (the norm of the largest magnitudes of
    /// its three components: a sample is a convex blend of faces); infinite when the
    /// field holds a NaN.
    pub fn speed_bound(&self) -> f32 {
        self.peak.speed_bound(&self.vel)
    }

    /// Replaces each point by the wind there, bit for bit as [`sample`](Self::sample).
    pub fn sample_in_place(&self, points: &mut [Vec3]) {
        self.field().sample_in_place(points)
    }

    /// The wind at each of `points`, into `out` (as long as `points`), bit for bit as
    /// [`sample`](Self::sample).
    pub fn sample_into(&self, points: &[Vec3], out: &mut [Vec3]) {
        self.field().sample_into(points, out)
    }

    /// The grid's time when the field was frozen \[s\].
    pub fn time(&self) -> f64 {
        self.time
    }

    fn field(&self) -> FieldRef<'_> {
        FieldRef {
            origin: self.origin,
            dims: self.dims,
            isa: self.isa,
            vel: &self.vel,
        }
    }
}

/// What sampling reads: the face velocities and where the grid lies.
#[derive(Clone, Copy)]
pub(crate) struct FieldRef<'a> {
    pub origin: Vec3,
    pub dims: Dims,
    pub isa: Isa,
    pub vel: &'a [Vec<f32>; 3],
}

impl FieldRef<'_> {
    /// Each component trilinear on its own staggered grid, clamped to the domain.
    pub fn sample(&self, p: Vec3) -> Vec3 {
        let g = (p - self.origin) / Vec3::from(self.dims.h);
        Vec3::new(
            sample_component(&self.dims, &self.vel[0], 0, g),
            sample_component(&self.dims, &self.vel[1], 1, g),
            sample_component(&self.dims, &self.vel[2], 2, g),
        )
    }
}

/// For face row (j, k) of component `a`: closures giving the padded indices of the cells below
/// (`l`) and above (`r`) face `i` along `a`.
#[inline]
fn face_cells(d: &Dims, a: usize, j: usize, k: usize) -> (impl Fn(usize) -> usize + '_, impl Fn(usize) -> usize + '_) {
    let s = d.pad_strides();
    let base = move |i: usize| d.pad(i as isize, j as isize, k as isize);
    let l = move |i: usize| base(i) - s[a];
    let r = move |i: usize| base(i);
    (l, r)
}

#[inline]
fn centre_velocity(d: &Dims, vel: &[Vec<f32>; 3], i: usize, j: usize, k: usize) -> [f32; 3] {
    let (nx, ny) = (d.n[0], d.n[1]);
    let u = i + (nx + 1) * (j + ny * k);
    let v = i + nx * (j + (ny + 1) * k);
    let w = i + nx * (j + ny * k);
    [
        0.5 * (vel[0][u] + vel[0][u + 1]),
        0.5 * (vel[1][v] + vel[1][v + nx]),
        0.5 * (vel[2][w] + vel[2][w + nx * ny]),
    ]
}

/// Trilinear sample of component `a` at grid coordinates `g` (position / h), clamped to the
/// component's staggered grid.
#[inline]
fn sample_component(d: &Dims, f: &[f32], a: usize, g: Vec3) -> f32 {
    let mut c = [g.x - 0.5, g.y - 0.5, g.z - 0.5];
    c[a] += 0.5;
    trilinear(f, d.face_dims(a), c)
}

/// The fluid step's phase timings as a frame-timings table.
pub fn add_timings(timings: &sylva_engine::FrameTimings, stats: &FluidStepStats) {
    for (name, d) in FLUID_PHASES.iter().zip(stats.phases()) {
        if let Some(id) = timings.phase_id(name) {
            timings.add(id, d);
        }
    }
}
