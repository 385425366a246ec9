//! The pressure equation (paper 004, Eq. 9): `Σ_active faces (p_n − p) / h² = d` at every fluid
//! cell. Solved either with the paper's fixed number of Jacobi iterations, or with conjugate
//! gradients preconditioned by a multigrid V-cycle (semi-coarsened where cells are flat, damped
//! Jacobi smoothing, averaging restriction and constant prolongation) until the residual, which
//! is the divergence left after projection, is small against the divergence before.
//!
//! Cell arrays carry one ghost layer all round (see `Dims::pad`); pressure is 0 at ghosts and
//! at solid cells, so a stencil adds all six neighbours and the diagonal alone says which faces
//! are active.

use sylva_engine::JobSystem;

use super::jacobi::{jacobi, FusedArrays};
use super::{slab_group, Dims, Isa};

/// Damping of the multigrid smoother.
pub const MG_OMEGA: f32 = 0.8;
/// Smoothing sweeps before and after each coarse correction.
pub const MG_SWEEPS: usize = 2;
/// Jacobi sweeps that stand for a solve on the coarsest level.
pub const MG_COARSEST_SWEEPS: usize = 40;
/// Coarsening stops at this many cells.
const COARSEST_CELLS: usize = 4096;
const OMEGA: f32 = MG_OMEGA;
const SWEEPS: usize = MG_SWEEPS;
const COARSEST_SWEEPS: usize = MG_COARSEST_SWEEPS;

/// One level of the multigrid hierarchy the converged solver builds for a grid (the GPU solver
/// builds the same).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultigridLevel {
    /// Cells along x, y, z.
    pub cells: [usize; 3],
    /// Cell size \[m\].
    pub h: [f32; 3],
    /// Axes halved to get the next level (all false on the coarsest).
    pub coarsen: [bool; 3],
}

/// The levels of the multigrid preconditioner for a grid of `cells` cells of size `h`, finest
/// first.
pub fn multigrid_levels(cells: [usize; 3], h: [f32; 3]) -> Vec<MultigridLevel> {
    let mut d = Dims { n: cells, h };
    let mut out = Vec::new();
    while let Some((coarse, coarsen)) = coarser_shape(&d) {
        out.push(MultigridLevel {
            cells: d.n,
            h: d.h,
            coarsen,
        });
        d = coarse;
    }
    out.push(MultigridLevel {
        cells: d.n,
        h: d.h,
        coarsen: [false; 3],
    });
    out
}

/// The shape of the level below `d`: axes halved where the cells are not already much longer
/// along them than along the shortest axis (semi-coarsening keeps the smoother effective on
/// flat cells). `None` when `d` is small enough to be the coarsest.
fn coarser_shape(d: &Dims) -> Option<(Dims, [bool; 3])> {
    if d.cells() <= COARSEST_CELLS {
        return None;
    }
    let hmin = d.h.iter().cloned().fold(f32::MAX, f32::min);
    let mut coarsen = [false; 3];
    let mut n = d.n;
    let mut h = d.h;
    for a in 0..3 {
        if d.n[a] >= 4 && d.h[a] <= 1.5 * hmin {
            coarsen[a] = true;
            n[a] = d.n[a].div_ceil(2);
            h[a] = d.h[a] * 2.0;
        }
    }
    coarsen.iter().any(|&c| c).then_some((Dims { n, h }, coarsen))
}

/// What a pressure solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PressureStats {
    /// Iterations run (Jacobi: the fixed count; converged: until the tolerance or the cap).
    pub iterations: u32,
    /// Relative residual reached (converged solver only; NaN for Jacobi, which does not measure
    /// it).
    pub residual_rel: f64,
    /// Whether the converged solver met its tolerance.
    pub converged: bool,
}

/// One multigrid level: its shape and operator.
struct Level {
    d: Dims,
    /// Padded: 1 at fluid cells, else 0.
    fluid: Vec<f32>,
    /// Padded: Σ over active faces of 1/h² (0 at solids).
    diag: Vec<f32>,
    /// Padded: 1 / diag, 0 at solids.
    inv_diag: Vec<f32>,
    /// Which axes were halved to get the next level.
    coarsen: [bool; 3],
    /// Padded work vectors: right-hand side, solution, scratch.
    r: Vec<f32>,
    x: Vec<f32>,
    t: Vec<f32>,
    /// Padded ghost/solid activity, 1 for fluid cells and open ghosts (for the next level).
    act: Vec<f32>,
}

pub(crate) struct PressureState {
    d: Dims,
    /// Pressure (padded).
    pub p: Vec<f32>,
    /// Divergence (padded), the equation's right-hand side.
    pub rhs: Vec<f32>,
    scratch: Vec<f32>,
    levels: Vec<Level>,
    /// CG vectors (padded).
    cg_r: Vec<f32>,
    cg_d: Vec<f32>,
    cg_q: Vec<f32>,
    /// Whether some side is open (the equation is then nonsingular).
    any_open: bool,
    fluid_cells: usize,
}

impl PressureState {
    pub fn new(d: Dims) -> PressureState {
        PressureState {
            d,
            p: vec![0.0; d.padded()],
            rhs: vec![0.0; d.padded()],
            scratch: vec![0.0; d.padded()],
            levels: Vec::new(),
            cg_r: Vec::new(),
            cg_d: Vec::new(),
            cg_q: Vec::new(),
            any_open: false,
            fluid_cells: 0,
        }
    }

    /// Rebuilds the operators after the solids or the open sides changed.
    pub fn rebuild(&mut self, act: &[f32], d: &Dims, open: &[bool; 6]) {
        self.levels.clear();
        self.any_open = open.iter().any(|&o| o);
        let mut level = Level::new(*d, act.to_vec());
        self.fluid_cells = level.fluid.iter().filter(|&&f| f > 0.0).count();
        while let Some((coarse, coarsen)) = level.coarser() {
            level.coarsen = coarsen;
            self.levels.push(std::mem::replace(&mut level, coarse));
        }
        self.levels.push(level);
        // Pressure stays 0 at solids.
        let fine = &self.levels[0];
        for (p, f) in self.p.iter_mut().zip(&fine.fluid) {
            *p *= f;
        }
    }

    /// Fluid cells of the finest level.
    pub fn fluid_cells(&self) -> usize {
        self.fluid_cells
    }

    /// The paper's solver, fused with the divergence before it (see `jacobi`): `iterations`
    /// Jacobi iterations from the current pressure on the divergence of `vel`. Returns the
    /// divergence's sum of squares.
    pub fn jacobi(&mut self, jobs: &JobSystem, isa: Isa, iterations: usize, act: &[f32], vel: &[Vec<f32>; 3]) -> f64 {
        let arrays = FusedArrays {
            act,
            inv_diag: &self.levels[0].inv_diag,
            vel,
            p: &mut self.p,
            scratch: &mut self.scratch,
            rhs: &mut self.rhs,
        };
        jacobi(jobs, isa, &self.d, iterations, arrays)
    }

    /// Preconditioned conjugate gradients on `A p = −d` with `A = −L` (symmetric, positive
    /// (semi-)definite), starting from the previous pressure.
    pub fn pcg(&mut self, jobs: &JobSystem, tol: f64, max_iterations: u32) -> PressureStats {
        let d = self.d;
        let len = d.padded();
        for v in [&mut self.cg_r, &mut self.cg_d, &mut self.cg_q] {
            if v.len() != len {
                *v = vec![0.0; len];
            }
        }
        // b = −div, kept in rhs's place as −rhs.
        if !self.any_open {
            remove_mean(&self.levels[0].fluid, &mut self.rhs, self.fluid_cells);
        }
        let b_norm = {
            let rhs = &self.rhs;
            slab_sum(jobs, &d, |c| (rhs[c] as f64) * (rhs[c] as f64)).sqrt()
        };
        if b_norm == 0.0 {
            self.p.iter_mut().for_each(|x| *x = 0.0);
            return PressureStats {
                iterations: 0,
                residual_rel: 0.0,
                converged: true,
            };
        }
        // r = b − A p
        {
            let lv = &self.levels[0];
            apply(jobs, &lv.d, &lv.fluid, &lv.diag, &self.p, &mut self.cg_q);
            let (rhs, q) = (&self.rhs, &self.cg_q);
            map(jobs, &d, &mut self.cg_r, |c, _| -rhs[c] - q[c]);
        }
        let mut r_norm = norm(jobs, &d, &self.cg_r);
        let mut it = 0;
        let mut rz = 0.0f64;
        while r_norm / b_norm > tol && it < max_iterations {
            // z = M r (into levels[0].x)
            self.vcycle(jobs);
            if !self.any_open {
                let fine = &mut self.levels[0];
                remove_mean(&fine.fluid, &mut fine.x, self.fluid_cells);
            }
            let z = &self.levels[0].x;
            let r = &self.cg_r;
            let rz_new = slab_sum(jobs, &d, |c| r[c] as f64 * z[c] as f64);
            if it == 0 {
                map(jobs, &d, &mut self.cg_d, |c, _| z[c]);
            } else {
                let beta = (rz_new / rz) as f32;
                map(jobs, &d, &mut self.cg_d, |c, old| z[c] + beta * old);
            }
            rz = rz_new;
            let lv = &self.levels[0];
            apply(jobs, &lv.d, &lv.fluid, &lv.diag, &self.cg_d, &mut self.cg_q);
            let (dv, q) = (&self.cg_d, &self.cg_q);
            let dq = slab_sum(jobs, &d, |c| dv[c] as f64 * q[c] as f64);
            if dq.is_nan() || dq <= 0.0 {
                break;
            }
            let alpha = (rz / dq) as f32;
            map(jobs, &d, &mut self.p, |c, x| x + alpha * dv[c]);
            map(jobs, &d, &mut self.cg_r, |c, r| r - alpha * q[c]);
            r_norm = norm(jobs, &d, &self.cg_r);
            it += 1;
        }
        let rel = r_norm / b_norm;
        PressureStats {
            iterations: it,
            residual_rel: rel,
            converged: rel <= tol,
        }
    }

    /// One V-cycle on the residual `cg_r`, result in `levels[0].x`.
    fn vcycle(&mut self, jobs: &JobSystem) {
        let d = self.d;
        {
            let r = &self.cg_r;
            let lv0 = &mut self.levels[0];
            map(jobs, &d, &mut lv0.r, |c, _| r[c]);
        }
        let n = self.levels.len();
        for l in 0..n {
            let coarsest = l + 1 == n;
            let lv = &mut self.levels[l];
            let sweeps = if coarsest { COARSEST_SWEEPS } else { SWEEPS };
            lv.smooth_from_zero(jobs, sweeps);
            if coarsest {
                break;
            }
            // Residual into t, then average it onto the next level.
            let ld = lv.d;
            apply(jobs, &ld, &lv.fluid, &lv.diag, &lv.x, &mut lv.t);
            let r = &lv.r;
            map(jobs, &ld, &mut lv.t, |c, ax| r[c] - ax);
            let (fine, rest) = self.levels.split_at_mut(l + 1);
            restrict(&fine[l], &mut rest[0]);
        }
        for l in (0..n - 1).rev() {
            let (fine, rest) = self.levels.split_at_mut(l + 1);
            prolong_add(&rest[0], &mut fine[l]);
            fine[l].smooth(jobs, SWEEPS);
        }
    }
}

impl Level {
    fn new(d: Dims, act: Vec<f32>) -> Level {
        let len = d.padded();
        let mut fluid = vec![0.0; len];
        let mut diag = vec![0.0; len];
        let mut inv_diag = vec![0.0; len];
        let ih2 = d.inv_h2();
        let s = d.pad_strides();
        for k in 0..d.n[2] as isize {
            for j in 0..d.n[1] as isize {
                for i in 0..d.n[0] as isize {
                    let c = d.pad(i, j, k);
                    if act[c] == 0.0 {
                        continue;
                    }
                    fluid[c] = 1.0;
                    let mut sum = 0.0;
                    for a in 0..3 {
                        sum += ih2[a] * (act[c - s[a]] + act[c + s[a]]);
                    }
                    diag[c] = sum;
                    inv_diag[c] = if sum > 0.0 { 1.0 / sum } else { 0.0 };
                }
            }
        }
        Level {
            d,
            fluid,
            diag,
            inv_diag,
            coarsen: [false; 3],
            r: vec![0.0; len],
            x: vec![0.0; len],
            t: vec![0.0; len],
            act,
        }
    }

    /// The next coarser level (see `coarser_shape`), its activity the largest of the fine
    /// cells' it covers. `None` when this level is the coarsest.
    fn coarser(&self) -> Option<(Level, [bool; 3])> {
        let d = self.d;
        let (cd, coarsen) = coarser_shape(&d)?;
        let n = cd.n;
        let mut act = vec![0.0; cd.padded()];
        let ni = [n[0] as isize, n[1] as isize, n[2] as isize];
        for k in -1..=ni[2] {
            for j in -1..=ni[1] {
                for i in -1..=ni[0] {
                    let c = [i, j, k];
                    // Fine cells this coarse cell covers (ghosts map to the fine ghost layer).
                    let range = |a: usize| -> (isize, isize) {
                        let fa = d.n[a] as isize;
                        if c[a] < 0 {
                            (-1, -1)
                        } else if c[a] >= ni[a] {
                            (fa, fa)
                        } else if coarsen[a] {
                            (2 * c[a], (2 * c[a] + 1).min(fa - 1))
                        } else {
                            (c[a], c[a])
                        }
                    };
                    let (rx, ry, rz) = (range(0), range(1), range(2));
                    let mut any = 0.0f32;
                    for fk in rz.0..=rz.1 {
                        for fj in ry.0..=ry.1 {
                            for fi in rx.0..=rx.1 {
                                any = any.max(self.act[d.pad(fi, fj, fk)]);
                            }
                        }
                    }
                    act[cd.pad(i, j, k)] = any;
                }
            }
        }
        Some((Level::new(cd, act), coarsen))
    }

    /// `x = S^sweeps(0)`: damped Jacobi sweeps on `A x = r` from zero.
    fn smooth_from_zero(&mut self, jobs: &JobSystem, sweeps: usize) {
        let d = self.d;
        let (r, inv) = (&self.r, &self.inv_diag);
        map(jobs, &d, &mut self.x, |c, _| OMEGA * inv[c] * r[c]);
        self.smooth(jobs, sweeps - 1);
    }

    /// Damped Jacobi sweeps `x += ω D⁻¹ (r − A x)`.
    fn smooth(&mut self, jobs: &JobSystem, sweeps: usize) {
        let d = self.d;
        for _ in 0..sweeps {
            apply(jobs, &d, &self.fluid, &self.diag, &self.x, &mut self.t);
            let (r, inv, t) = (&self.r, &self.inv_diag, &self.t);
            map(jobs, &d, &mut self.x, |c, x| x + OMEGA * inv[c] * (r[c] - t[c]));
        }
    }
}

/// Average of the fine residual (`fine.t`) over each coarse cell's children into `coarse.r`.
fn restrict(fine: &Level, coarse: &mut Level) {
    let (fd, cd) = (fine.d, coarse.d);
    let cz = fine.coarsen;
    for k in 0..cd.n[2] as isize {
        for j in 0..cd.n[1] as isize {
            for i in 0..cd.n[0] as isize {
                let c = [i, j, k];
                let mut sum = 0.0;
                let mut count = 0;
                let r = |a: usize| -> (isize, isize) {
                    if cz[a] {
                        (2 * c[a], (2 * c[a] + 1).min(fd.n[a] as isize - 1))
                    } else {
                        (c[a], c[a])
                    }
                };
                let (rx, ry, rz) = (r(0), r(1), r(2));
                for fk in rz.0..=rz.1 {
                    for fj in ry.0..=ry.1 {
                        for fi in rx.0..=rx.1 {
                            sum += fine.t[fd.pad(fi, fj, fk)];
                            count += 1;
                        }
                    }
                }
                let cc = cd.pad(i, j, k);
                coarse.r[cc] = coarse.fluid[cc] * sum / count as f32;
            }
        }
    }
}

/// `fine.x += P coarse.x`, constant over each coarse cell's children, at fluid cells.
fn prolong_add(coarse: &Level, fine: &mut Level) {
    let (fd, cd) = (fine.d, coarse.d);
    let cz = fine.coarsen;
    for k in 0..fd.n[2] as isize {
        let ck = if cz[2] { k / 2 } else { k };
        for j in 0..fd.n[1] as isize {
            let cj = if cz[1] { j / 2 } else { j };
            for i in 0..fd.n[0] as isize {
                let ci = if cz[0] { i / 2 } else { i };
                let f = fd.pad(i, j, k);
                fine.x[f] += fine.fluid[f] * coarse.x[cd.pad(ci, cj, ck)];
            }
        }
    }
}

/// Subtracts the mean over the fluid cells (the constant null space of a closed domain).
fn remove_mean(fluid: &[f32], v: &mut [f32], count: usize) {
    let sum: f64 = v.iter().zip(fluid).map(|(x, f)| (*x * *f) as f64).sum();
    let mean = (sum / count.max(1) as f64) as f32;
    for (x, f) in v.iter_mut().zip(fluid) {
        *x -= mean * *f;
    }
}

/// Interior cells of slab k, as (first padded index of each row).
#[inline]
fn rows(d: &Dims, k: usize) -> impl Iterator<Item = usize> + '_ {
    (0..d.n[1]).map(move |j| d.pad(0, j as isize, k as isize))
}

/// `out[c] = f(c, out[c])` at every interior cell, slab-parallel.
fn map(jobs: &JobSystem, d: &Dims, out: &mut [f32], f: impl Fn(usize, f32) -> f32 + Sync) {
    let plane = (d.n[0] + 2) * (d.n[1] + 2);
    let nz = d.n[2];
    let interior = &mut out[plane..plane * (nz + 1)];
    super::par_slabs(jobs, interior, plane, |k0, chunk| {
        for (kk, slab) in chunk.chunks_mut(plane).enumerate() {
            let k = k0 + kk;
            for row in rows(d, k) {
                let local = row - (k + 1) * plane;
                for i in 0..d.n[0] {
                    slab[local + i] = f(row + i, slab[local + i]);
                }
            }
        }
    });
}

/// Σ f(c) over the interior cells, added slab group by slab group in order.
fn slab_sum(jobs: &JobSystem, d: &Dims, f: impl Fn(usize) -> f64 + Sync) -> f64 {
    let plane = (d.n[0] + 2) * (d.n[1] + 2);
    let group = slab_group(plane);
    let nz = d.n[2];
    let mut parts: Vec<(usize, f64)> = (0..nz.div_ceil(group)).map(|g| (g * group, 0.0)).collect();
    let body = |k0: usize| {
        let mut s = 0.0;
        for k in k0..(k0 + group).min(nz) {
            for row in rows(d, k) {
                for i in 0..d.n[0] {
                    s += f(row + i);
                }
            }
        }
        s
    };
    if jobs.threads() == 1 || parts.len() == 1 {
        for p in &mut parts {
            p.1 = body(p.0);
        }
    } else {
        jobs.for_each_mut(&mut parts, |_, p| p.1 = body(p.0));
    }
    parts.iter().map(|p| p.1).sum()
}

fn norm(jobs: &JobSystem, d: &Dims, v: &[f32]) -> f64 {
    slab_sum(jobs, d, |c| (v[c] as f64) * (v[c] as f64)).sqrt()
}

/// Runs `f(row_start, out_row)` for every interior row (nx cells from padded index
/// `row_start`), slab-parallel.
fn map_rows(jobs: &JobSystem, d: &Dims, out: &mut [f32], f: impl Fn(usize, &mut [f32]) + Sync) {
    let plane = (d.n[0] + 2) * (d.n[1] + 2);
    let nz = d.n[2];
    let nx = d.n[0];
    let interior = &mut out[plane..plane * (nz + 1)];
    super::par_slabs(jobs, interior, plane, |k0, chunk| {
        for (kk, slab) in chunk.chunks_mut(plane).enumerate() {
            let k = k0 + kk;
            for row in rows(d, k) {
                let local = row - (k + 1) * plane;
                f(row, &mut slab[local..local + nx]);
            }
        }
    });
}

/// The six neighbour rows of the interior row starting at padded index `c` (length `len`):
/// x− (length len + 2, starting one before), y−, y+, z−, z+.
#[inline(always)]
fn neighbours(x: &[f32], c: usize, len: usize, s: [usize; 3]) -> (&[f32], [&[f32]; 4]) {
    (
        &x[c - 1..c + len + 1],
        [
            &x[c - s[1]..c - s[1] + len],
            &x[c + s[1]..c + s[1] + len],
            &x[c - s[2]..c - s[2] + len],
            &x[c + s[2]..c + s[2] + len],
        ],
    )
}

/// `out = A x = fluid · (diag x − Σ_axes (x⁺ + x⁻) / h²)`; x must be 0 at solids and ghosts.
fn apply(jobs: &JobSystem, d: &Dims, fluid: &[f32], diag: &[f32], x: &[f32], out: &mut [f32]) {
    let ih2 = d.inv_h2();
    let s = d.pad_strides();
    map_rows(jobs, d, out, |c, row| {
        let len = row.len();
        let (xs, [ym, yp, zm, zp]) = neighbours(x, c, len, s);
        let (fl, dg) = (&fluid[c..c + len], &diag[c..c + len]);
        for i in 0..len {
            let nb = ih2[0] * (xs[i] + xs[i + 2]) + ih2[1] * (ym[i] + yp[i]) + ih2[2] * (zm[i] + zp[i]);
            row[i] = fl[i] * (dg[i] * xs[i + 1] - nb);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flat cells are not halved along their long axis until the others have caught up, and
    /// the solver's own hierarchy is the published one (which the GPU solver builds).
    #[test]
    fn levels_semi_coarsen_and_match_the_solver() {
        let (n, h) = ([128, 16, 96], [0.5, 2.0, 0.5]);
        let levels = multigrid_levels(n, h);
        let shapes: Vec<_> = levels.iter().map(|l| (l.cells, l.coarsen)).collect();
        let (t, f) = (true, false);
        assert_eq!(
            shapes,
            [
                ([128, 16, 96], [t, f, t]),
                ([64, 16, 48], [t, f, t]),
                ([32, 16, 24], [t, t, t]),
                ([16, 8, 12], [f, f, f]),
            ]
        );
        assert_eq!(levels[2].h, [2.0, 2.0, 2.0]);
        let d = Dims { n, h };
        let act = vec![1.0; d.padded()];
        let mut state = PressureState::new(d);
        state.rebuild(&act, &d, &[true; 6]);
        let built: Vec<_> = state.levels.iter().map(|l| (l.d.n, l.coarsen)).collect();
        assert_eq!(built, shapes);
    }
}
