//! Vorticity confinement (Fedkiw, Stam & Jensen 2001, "Visual Simulation of Smoke", §3): the
//! semi-Lagrangian advection's numerical dissipation smears small eddies out; this force puts
//! back the spin where it concentrates, for gustier wind.
//!
//! At cell centres, with `c` the cell-centred velocity (mean of each cell's two faces per axis)
//! and derivatives central differences (one-sided at the domain's sides):
//!
//! * `ω = ∇ × c`, zero at solid cells;
//! * `η = ∇|ω|`, `N = η / (|η| + (10⁻³ / h) |ω|)` (the usual `η / |η|`, softened so a field whose
//!   vorticity barely varies, where `η` is rounding noise, gets no force);
//! * `f = ε h (N × ω)`, `h` the smallest cell side, `ε` the confinement strength.
//!
//! Each active face gets `dt` times the mean of its two cells' `f` component along its axis
//! (the interior cell's alone on an open side of the domain). The GPU twin is
//! `shaders/glsl/wind_vort_*.comp`, in the same arithmetic order.

use sylva_engine::JobSystem;

use super::{par_slabs, Dims};

/// Softening of `N`'s normalisation, relative to `|ω| / h`.
const SOFTEN: f32 = 1e-3;

/// Scratch arrays of the pass (unpadded cells).
#[derive(Default)]
pub(crate) struct Confinement {
    /// `(ω, |ω|)` per cell.
    omega: Vec<[f32; 4]>,
    /// `f` per cell (w unused).
    force: Vec<[f32; 4]>,
}

/// The neighbours of `c` along an axis with `n` cells and `1 / (their distance · h)`.
#[inline]
fn around(c: usize, n: usize, h: f32) -> (usize, usize, f32) {
    let lo = c.saturating_sub(1);
    let hi = (c + 1).min(n - 1);
    (lo, hi, 1.0 / ((hi - lo) as f32 * h))
}

impl Confinement {
    /// Adds `dt · f` to the active faces of `vel`.
    pub fn apply(&mut self, jobs: &JobSystem, d: &Dims, act: &[f32], eps: f32, dt: f32, vel: &mut [Vec<f32>; 3]) {
        let cells = d.cells();
        if self.omega.len() != cells {
            self.omega = vec![[0.0; 4]; cells];
            self.force = vec![[0.0; 4]; cells];
        }
        let [nx, ny, nz] = d.n;
        let plane = nx * ny;
        let h = d.h;
        let hmin = h[0].min(h[1]).min(h[2]);
        // The cell-centred velocity first, in `force`'s place (free until the second pass).
        {
            let v = &*vel;
            par_slabs(jobs, &mut self.force, plane, |k0, chunk| {
                for (r, row) in chunk.chunks_mut(nx).enumerate() {
                    let (j, k) = (r % ny, k0 + r / ny);
                    let u = (nx + 1) * (j + ny * k);
                    let vv = nx * (j + (ny + 1) * k);
                    let w = nx * (j + ny * k);
                    for (i, out) in row.iter_mut().enumerate() {
                        *out = [
                            0.5 * (v[0][u + i] + v[0][u + i + 1]),
                            0.5 * (v[1][vv + i] + v[1][vv + i + nx]),
                            0.5 * (v[2][w + i] + v[2][w + i + plane]),
                            0.0,
                        ];
                    }
                }
            });
        }
        {
            let centre = &self.force;
            par_slabs(jobs, &mut self.omega, plane, |k0, chunk| {
                for (r, row) in chunk.chunks_mut(nx).enumerate() {
                    let (j, k) = (r % ny, k0 + r / ny);
                    let (jl, jh, rj) = around(j, ny, h[1]);
                    let (kl, kh, rk) = around(k, nz, h[2]);
                    let row_at = |j: usize, k: usize| &centre[nx * (j + ny * k)..nx * (j + ny * k + 1)];
                    let (c_jl, c_jh, c_kl, c_kh, c) =
                        (row_at(jl, k), row_at(jh, k), row_at(j, kl), row_at(j, kh), row_at(j, k));
                    let act_row = d.pad(0, j as isize, k as isize);
                    for (i, out) in row.iter_mut().enumerate() {
                        if act[act_row + i] == 0.0 {
                            *out = [0.0; 4];
                            continue;
                        }
                        let (il, ih, ri) = around(i, nx, h[0]);
                        // ∂c_a/∂x_b.
                        let dwdy = (c_jh[i][2] - c_jl[i][2]) * rj;
                        let dvdz = (c_kh[i][1] - c_kl[i][1]) * rk;
                        let dudz = (c_kh[i][0] - c_kl[i][0]) * rk;
                        let dwdx = (c[ih][2] - c[il][2]) * ri;
                        let dvdx = (c[ih][1] - c[il][1]) * ri;
                        let dudy = (c_jh[i][0] - c_jl[i][0]) * rj;
                        let w = [dwdy - dvdz, dudz - dwdx, dvdx - dudy];
                        let len = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
                        *out = [w[0], w[1], w[2], len];
                    }
                }
            });
        }
        {
            let omega = &self.omega;
            let soften = SOFTEN / hmin;
            par_slabs(jobs, &mut self.force, plane, |k0, chunk| {
                for (r, row) in chunk.chunks_mut(nx).enumerate() {
                    let (j, k) = (r % ny, k0 + r / ny);
                    let (jl, jh, rj) = around(j, ny, h[1]);
                    let (kl, kh, rk) = around(k, nz, h[2]);
                    let row_at = |j: usize, k: usize| &omega[nx * (j + ny * k)..nx * (j + ny * k + 1)];
                    let (o_jl, o_jh, o_kl, o_kh, o) =
                        (row_at(jl, k), row_at(jh, k), row_at(j, kl), row_at(j, kh), row_at(j, k));
                    for (i, out) in row.iter_mut().enumerate() {
                        let w = o[i];
                        let (il, ih, ri) = around(i, nx, h[0]);
                        let eta = [
                            (o[ih][3] - o[il][3]) * ri,
                            (o_jh[i][3] - o_jl[i][3]) * rj,
                            (o_kh[i][3] - o_kl[i][3]) * rk,
                        ];
                        let len = (eta[0] * eta[0] + eta[1] * eta[1] + eta[2] * eta[2]).sqrt();
                        let denom = len + soften * w[3];
                        if denom.is_nan() || denom <= 0.0 {
                            *out = [0.0; 4];
                            continue;
                        }
                        let s = eps * hmin / denom;
                        let nv = [eta[0] * s, eta[1] * s, eta[2] * s];
                        *out = [
                            nv[1] * w[2] - nv[2] * w[1],
                            nv[2] * w[0] - nv[0] * w[2],
                            nv[0] * w[1] - nv[1] * w[0],
                            0.0,
                        ];
                    }
                }
            });
        }
        let force = &self.force;
        for (a, comp) in vel.iter_mut().enumerate() {
            let fd = d.face_dims(a);
            let s = d.pad_strides()[a];
            par_slabs(jobs, comp, fd[0] * fd[1], |k0, chunk| {
                for (r, row) in chunk.chunks_mut(fd[0]).enumerate() {
                    let (j, k) = (r % fd[1], k0 + r / fd[1]);
                    let act_row = d.pad(0, j as isize, k as isize);
                    // Cells below and above face i along `a` (flat indices base + i − stride and
                    // base + i), where they lie in the domain.
                    let base = nx * (j + ny * k);
                    let stride = [1, nx, plane][a];
                    for (i, value) in row.iter_mut().enumerate() {
                        let cr = act_row + i;
                        let live = act[cr - s] * act[cr];
                        if live == 0.0 {
                            continue;
                        }
                        let f = [i, j, k];
                        let b = (f[a] > 0).then(|| force[base + i - stride][a]);
                        let t = (f[a] < d.n[a]).then(|| force[base + i][a]);
                        let fa = match (b, t) {
                            (Some(b), Some(t)) => 0.5 * (b + t),
                            (Some(x), None) | (None, Some(x)) => x,
                            (None, None) => 0.0,
                        };
                        *value += dt * fa;
                    }
                }
            });
        }
    }
}
