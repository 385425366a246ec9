//! The cell passes around the pressure solve: divergence (step 3 of the module docs), the
//! paper's Jacobi iterations on the pressure equation (Eq. 9) and the projection (Eq. 7), as
//! row kernels over slices. For the Jacobi solver the divergence and the iterations are fused
//! into one pass; the projection, in place, follows as its own pass (fused, it would have to
//! write a second copy of the velocities, as the margins of the neighbouring groups still read
//! them).
//!
//! # The fused pass
//!
//! The cells are cut into groups of whole k-slabs, fixed by the grid. A round of `m` Jacobi
//! iterations computes, for group `[k0, k1)`, iteration `t` on slabs `[k0 − (m − t),
//! k1 + (m − t))` (clipped to the grid) into per-thread scratch, reading the iterate before the
//! round from the shared array: the intermediate iterates stay in the cache instead of crossing
//! memory once per iteration. The first round computes the divergence it needs itself. A margin
//! slab is computed by both groups beside it, from the same inputs by the same operations, so
//! every value is the plain Jacobi iterate, whatever the grouping or the number of workers.
//! Rounds hold at most [`ROUND`] iterations, which bounds the margins; between rounds the
//! iterate and the divergence go through the shared arrays.
//!
//! Every kernel is compiled twice: portable, and with AVX2 enabled where the CPU has it (the
//! same code vectorised wider; Rust does not fuse multiplies and adds, so both give identical
//! bits).
//!
//! The AVX2 copies are `unsafe fn`s (`#[target_feature]`), which this module alone of `sim`
//! besides [`super::advect`] allows; they are called only when [`Isa::Avx2`] was chosen, which
//! requires the CPU to report AVX2 at run time.

#![allow(unsafe_code)]

use std::cell::RefCell;

use sylva_engine::JobSystem;

use super::{par_slabs_max, par_slabs_sum, peak_of, Dims, Isa};

/// Most Jacobi iterations per round of the fused pass.
const ROUND: usize = 4;
/// Interior cells per group of the fused pass (whole slabs, at least one).
const GROUP_CELLS: usize = 65_536;

/// Divergence of one cell row into `out` (`nx` cells): `u` is the row's `nx + 1` x-faces, `v0`,
/// `v1` its lower and upper y-faces, `w0`, `w1` its z-faces; `fluid` zeroes solid cells.
/// Returns the sum of squares (added in eight lanes, then in lane order).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn div_row(
    u: &[f32],
    v0: &[f32],
    v1: &[f32],
    w0: &[f32],
    w1: &[f32],
    fluid: &[f32],
    inv_h: [f32; 3],
    out: &mut [f32],
) -> f64 {
    let n = out.len();
    let (u, v0, v1, w0, w1, fluid) = (&u[..n + 1], &v0[..n], &v1[..n], &w0[..n], &w1[..n], &fluid[..n]);
    for i in 0..n {
        let dv = (u[i + 1] - u[i]) * inv_h[0] + (v1[i] - v0[i]) * inv_h[1] + (w1[i] - w0[i]) * inv_h[2];
        out[i] = dv * fluid[i];
    }
    let mut lanes = [0.0f64; 8];
    let mut chunks = out.chunks_exact(8);
    for c in &mut chunks {
        for (acc, &x) in lanes.iter_mut().zip(c) {
            *acc += x as f64 * x as f64;
        }
    }
    let mut sum = lanes.iter().sum::<f64>();
    for &x in chunks.remainder() {
        sum += x as f64 * x as f64;
    }
    sum
}

/// One Jacobi iteration on a cell row (`out.len()` cells): `out = (Σ neighbours / h² − rhs) /
/// diag`. `xs` is the row with one cell more each side; `ym`, `yp`, `zm`, `zp` the neighbour
/// rows.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn jacobi_row(
    xs: &[f32],
    ym: &[f32],
    yp: &[f32],
    zm: &[f32],
    zp: &[f32],
    rhs: &[f32],
    inv_diag: &[f32],
    ih2: [f32; 3],
    out: &mut [f32],
) {
    let n = out.len();
    let (xs, ym, yp, zm, zp, rhs, inv) = (
        &xs[..n + 2],
        &ym[..n],
        &yp[..n],
        &zm[..n],
        &zp[..n],
        &rhs[..n],
        &inv_diag[..n],
    );
    for i in 0..n {
        let nb = ih2[0] * (xs[i] + xs[i + 2]) + ih2[1] * (ym[i] + yp[i]) + ih2[2] * (zm[i] + zp[i]);
        out[i] = (nb - rhs[i]) * inv[i];
    }
}

/// Projection of one face row (Eq. 7): `v −= act_lo act_hi (p_hi − p_lo) / h`, where `lo`/`hi`
/// are the cells below and above each face; nothing changes where either cell is inactive.
#[inline(always)]
fn project_row(v: &mut [f32], act_lo: &[f32], act_hi: &[f32], p_lo: &[f32], p_hi: &[f32], inv_h: f32) {
    let n = v.len();
    let (al, ah, pl, ph) = (&act_lo[..n], &act_hi[..n], &p_lo[..n], &p_hi[..n]);
    for i in 0..n {
        v[i] -= al[i] * ah[i] * (ph[i] - pl[i]) * inv_h;
    }
}

/// Padded-array geometry of one grid.
#[derive(Clone, Copy)]
struct Geom {
    d: Dims,
    nx: usize,
    ny: usize,
    nz: usize,
    /// Padded row length and slab size.
    row: usize,
    plane: usize,
}

impl Geom {
    fn new(d: &Dims) -> Geom {
        let [nx, ny, nz] = d.n;
        Geom {
            d: *d,
            nx,
            ny,
            nz,
            row: nx + 2,
            plane: (nx + 2) * (ny + 2),
        }
    }
    /// Offset of cell (0, j) in a padded slab.
    #[inline(always)]
    fn cell(&self, j: usize) -> usize {
        (j + 1) * self.row + 1
    }
    /// Padded slab `s` (−1 and nz are the ghosts) of a padded array.
    #[inline(always)]
    fn slab<'x>(&self, a: &'x [f32], s: isize) -> &'x [f32] {
        &a[(s + 1) as usize * self.plane..][..self.plane]
    }

    /// Divergence of cell slab `k` into the padded slab `out`; returns its sum of squares.
    #[inline(always)]
    fn div_slab(&self, vel: &[Vec<f32>; 3], act: &[f32], k: usize, out: &mut [f32]) -> f64 {
        let (nx, ny) = (self.nx, self.ny);
        let inv_h = [1.0 / self.d.h[0], 1.0 / self.d.h[1], 1.0 / self.d.h[2]];
        let act = self.slab(act, k as isize);
        let mut sum = 0.0;
        for j in 0..ny {
            let u = &vel[0][(nx + 1) * (j + ny * k)..][..nx + 1];
            let v = &vel[1][nx * (j + (ny + 1) * k)..][..2 * nx];
            let w = &vel[2][nx * (j + ny * k)..][..nx * ny + nx];
            let c = self.cell(j);
            sum += div_row(
                u,
                &v[..nx],
                &v[nx..],
                &w[..nx],
                &w[nx * ny..],
                &act[c..c + nx],
                inv_h,
                &mut out[c..c + nx],
            );
        }
        sum
    }

    /// One Jacobi iteration on cell slab `k`: `below`, `at`, `above` are the iterate's padded
    /// slabs k − 1, k, k + 1; `rhs` and `inv_diag` slab k's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn jacobi_slab(&self, below: &[f32], at: &[f32], above: &[f32], rhs: &[f32], inv_diag: &[f32], out: &mut [f32]) {
        let (nx, row) = (self.nx, self.row);
        let ih2 = self.d.inv_h2();
        for j in 0..self.ny {
            let c = self.cell(j);
            jacobi_row(
                &at[c - 1..c + nx + 1],
                &at[c - row..c - row + nx],
                &at[c + row..c + row + nx],
                &below[c..c + nx],
                &above[c..c + nx],
                &rhs[c..c + nx],
                &inv_diag[c..c + nx],
                ih2,
                &mut out[c..c + nx],
            );
        }
    }

    /// Projection of face slab `v` of component `a`: `p_lo`/`act_lo` are the padded slabs of
    /// the cells below the faces along `a`, `p_hi`/`act_hi` of those above (the same slab
    /// unless `a` = 2).
    #[inline(always)]
    fn project_slab(&self, a: usize, v: &mut [f32], act_lo: &[f32], act_hi: &[f32], p_lo: &[f32], p_hi: &[f32]) {
        let fd = self.d.face_dims(a);
        let inv_h = 1.0 / self.d.h[a];
        // Offset of the lower cell of face (0, j) from that of the upper one, within the slabs.
        let back = [1, self.row, 0][a];
        for (j, v) in v.chunks_mut(fd[0]).enumerate() {
            // Face (0, j)'s upper cell is cell (0, j): for y-faces j = ny is the ghost row.
            let hi = (j + 1) * self.row + 1;
            let lo = hi - back;
            project_row(v, &act_lo[lo..], &act_hi[hi..], &p_lo[lo..], &p_hi[hi..], inv_h);
        }
    }
}

/// Divergence of the face velocities at every fluid cell into `div` (padded); returns the sum
/// of squares, added slab group by slab group in order.
pub(super) fn divergence(
    jobs: &JobSystem,
    isa: Isa,
    d: &Dims,
    vel: &[Vec<f32>; 3],
    act: &[f32],
    div: &mut [f32],
) -> f64 {
    let g = Geom::new(d);
    let interior = &mut div[g.plane..g.plane * (g.nz + 1)];
    par_slabs_sum(jobs, interior, g.plane, |k0, chunk| match isa {
        Isa::Portable => div_chunk(&g, vel, act, k0, chunk),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx2` is only chosen when the CPU has AVX2.
        Isa::Avx2 => unsafe { div_chunk_avx2(&g, vel, act, k0, chunk) },
    })
}

/// Divergence of the padded cell slabs `chunk`, the first being slab `k0`.
#[inline(always)]
fn div_chunk(g: &Geom, vel: &[Vec<f32>; 3], act: &[f32], k0: usize, chunk: &mut [f32]) -> f64 {
    let mut sum = 0.0;
    for (kk, slab) in chunk.chunks_mut(g.plane).enumerate() {
        sum += g.div_slab(vel, act, k0 + kk, slab);
    }
    sum
}

/// [`div_chunk`] vectorised for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn div_chunk_avx2(g: &Geom, vel: &[Vec<f32>; 3], act: &[f32], k0: usize, chunk: &mut [f32]) -> f64 {
    div_chunk(g, vel, act, k0, chunk)
}

/// Subtracts the pressure gradient on active faces (Eq. 7), in place.
pub(super) fn project(
    jobs: &JobSystem,
    isa: Isa,
    d: &Dims,
    p: &[f32],
    act: &[f32],
    vel: &mut [Vec<f32>; 3],
) -> [f32; 3] {
    let g = Geom::new(d);
    let mut peak = [0.0; 3];
    for (a, v) in vel.iter_mut().enumerate() {
        let fd = d.face_dims(a);
        peak[a] = par_slabs_max(jobs, v, fd[0] * fd[1], |k0, chunk| match isa {
            Isa::Portable => project_chunk(&g, a, p, act, k0, chunk),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx2` is only chosen when the CPU has AVX2.
            Isa::Avx2 => unsafe { project_chunk_avx2(&g, a, p, act, k0, chunk) },
        });
    }
    peak
}

/// Projection of component `a`'s face slabs `chunk`, the first being slab `k0` (the pressure
/// is 0 beyond the grid, in the ghost slabs); returns the largest |value| of the chunk as
/// projected ([`peak_of`]), read while the chunk is still in cache.
#[inline(always)]
fn project_chunk(g: &Geom, a: usize, p: &[f32], act: &[f32], k0: usize, chunk: &mut [f32]) -> f32 {
    let fd = g.d.face_dims(a);
    for (kk, v) in chunk.chunks_mut(fd[0] * fd[1]).enumerate() {
        let k = (k0 + kk) as isize;
        let lo = if a == 2 { k - 1 } else { k };
        g.project_slab(a, v, g.slab(act, lo), g.slab(act, k), g.slab(p, lo), g.slab(p, k));
    }
    peak_of(chunk)
}

/// [`project_chunk`] vectorised for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn project_chunk_avx2(g: &Geom, a: usize, p: &[f32], act: &[f32], k0: usize, chunk: &mut [f32]) -> f32 {
    project_chunk(g, a, p, act, k0, chunk)
}

/// The arrays the fused pass reads and writes.
pub(super) struct FusedArrays<'a> {
    pub act: &'a [f32],
    /// 1 / diagonal of the pressure equation (padded, 0 at solids).
    pub inv_diag: &'a [f32],
    pub vel: &'a [Vec<f32>; 3],
    /// Pressure in and out, its ping-pong partner, and the divergence (padded).
    pub p: &'a mut Vec<f32>,
    pub scratch: &'a mut Vec<f32>,
    pub rhs: &'a mut [f32],
}

/// What one round of the fused pass reads.
struct Round<'a> {
    g: Geom,
    vel: &'a [Vec<f32>; 3],
    act: &'a [f32],
    inv_diag: &'a [f32],
    p_in: &'a [f32],
    /// The divergence from an earlier round; `None` on the first, which computes it.
    rhs_in: Option<&'a [f32]>,
    m: usize,
    /// A padded slab of zeros: the pressure beyond the z-sides.
    zeros: &'a [f32],
}

/// One group's share of a round: its slabs `[k0, k1)` and the parts of the outputs it writes.
struct Group<'a> {
    k0: usize,
    k1: usize,
    p_out: &'a mut [f32],
    /// The divergence for the next rounds (first round of several).
    rhs_out: Option<&'a mut [f32]>,
    sum_sq: f64,
}

/// Per-thread scratch of the fused pass: divergence and two iterates over a group and its
/// margins, as padded slabs. Only interior cells are ever written, so the ghost rows and columns
/// stay zero for as long as the grid shape does.
#[derive(Default)]
struct Scratch {
    shape: [usize; 2],
    rhs: Vec<f32>,
    x: [Vec<f32>; 2],
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// `iterations` Jacobi iterations (warm-started from `p`) on the pressure equation whose
/// right-hand side is the divergence of `vel`; returns the sum of squares of the divergence,
/// added group by group in order.
pub(super) fn jacobi(jobs: &JobSystem, isa: Isa, d: &Dims, iterations: usize, arrays: FusedArrays<'_>) -> f64 {
    let g = Geom::new(d);
    let FusedArrays {
        act,
        inv_diag,
        vel,
        p,
        scratch,
        rhs,
    } = arrays;
    let group = (GROUP_CELLS / (g.nx * g.ny)).max(1);
    let zeros = vec![0.0; g.plane];
    let rounds = iterations.div_ceil(ROUND);
    let mut sum_sq = 0.0;
    for r in 0..rounds {
        let (first, last) = (r == 0, r + 1 == rounds);
        let (rhs_in, mut rhs_rest) = if first {
            (None, (!last).then_some(&mut rhs[g.plane..g.plane * (g.nz + 1)]))
        } else {
            (Some(&*rhs), None)
        };
        let round = Round {
            g,
            vel,
            act,
            inv_diag,
            p_in: p,
            rhs_in,
            m: (iterations - r * ROUND).min(ROUND),
            zeros: &zeros,
        };
        let mut p_rest = &mut scratch[g.plane..g.plane * (g.nz + 1)];
        let mut groups = Vec::with_capacity(g.nz.div_ceil(group));
        for k0 in (0..g.nz).step_by(group) {
            let k1 = (k0 + group).min(g.nz);
            let cells = (k1 - k0) * g.plane;
            let (p_out, rest) = std::mem::take(&mut p_rest).split_at_mut(cells);
            p_rest = rest;
            let rhs_out = rhs_rest.take().map(|s| {
                let (head, rest) = s.split_at_mut(cells);
                rhs_rest = Some(rest);
                head
            });
            groups.push(Group {
                k0,
                k1,
                p_out,
                rhs_out,
                sum_sq: 0.0,
            });
        }
        let run = |grp: &mut Group<'_>| SCRATCH.with(|s| run_group(isa, &round, grp, &mut s.borrow_mut()));
        if jobs.threads() == 1 || groups.len() == 1 {
            groups.iter_mut().for_each(run);
        } else {
            jobs.for_each_mut(&mut groups, |_, grp| run(grp));
        }
        if first {
            sum_sq = groups.iter().map(|grp| grp.sum_sq).sum();
        }
        std::mem::swap(p, scratch);
    }
    sum_sq
}

fn run_group(isa: Isa, round: &Round<'_>, grp: &mut Group<'_>, s: &mut Scratch) {
    match isa {
        Isa::Portable => group_body(round, grp, s),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx2` is only chosen when the CPU has AVX2.
        Isa::Avx2 => unsafe { group_body_avx2(round, grp, s) },
    }
}

/// [`group_body`] vectorised for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn group_body_avx2(round: &Round<'_>, grp: &mut Group<'_>, s: &mut Scratch) {
    group_body(round, grp, s)
}

/// One group's round, as the module docs describe.
#[inline(always)]
fn group_body(round: &Round<'_>, grp: &mut Group<'_>, s: &mut Scratch) {
    let g = &round.g;
    let (nz, plane) = (g.nz as isize, g.plane);
    let m = round.m as isize;
    let (k0, k1) = (grp.k0 as isize, grp.k1 as isize);
    // Iteration t is computed on slabs range(t); the scratch's slab 0 is slab `base`.
    let range = |t: isize| ((k0 - (m - t)).max(0), (k1 + (m - t)).min(nz));
    let base = k0 - m;
    let len = (k1 + m - base) as usize * plane;
    if s.shape != [g.nx, g.ny] {
        *s = Scratch {
            shape: [g.nx, g.ny],
            ..Scratch::default()
        };
    }
    let Scratch { rhs, x, .. } = s;
    let [xa, xb] = x;
    for v in [&mut *rhs, &mut *xa, &mut *xb] {
        if v.len() < len {
            v.resize(len, 0.0);
        }
    }
    let local = |k: isize| (k - base) as usize * plane..(k - base + 1) as usize * plane;
    // The divergence over range(1) (the first round computes it), and its sum of squares over
    // the group's own slabs.
    let (r0, r1) = range(1);
    if round.rhs_in.is_none() {
        for k in r0..r1 {
            let sq = g.div_slab(round.vel, round.act, k as usize, &mut rhs[local(k)]);
            if (k0..k1).contains(&k) {
                grp.sum_sq += sq;
            }
        }
        if let Some(out) = grp.rhs_out.as_deref_mut() {
            out.copy_from_slice(&rhs[local(k0).start..local(k1 - 1).end]);
        }
    }
    let rhs_slab = |k: isize| match round.rhs_in {
        Some(r) => g.slab(r, k),
        None => &rhs[local(k)],
    };
    // Iterations 1..=m, ping-ponging between the two scratch iterates.
    for t in 1..=m {
        let (src, dst): (&[f32], &mut [f32]) = if t % 2 == 1 { (xb, xa) } else { (xa, xb) };
        let at = |k: isize| -> &[f32] {
            if t == 1 {
                g.slab(round.p_in, k)
            } else if k < 0 || k >= nz {
                round.zeros
            } else {
                &src[local(k)]
            }
        };
        let (a0, a1) = range(t);
        for k in a0..a1 {
            g.jacobi_slab(
                at(k - 1),
                at(k),
                at(k + 1),
                rhs_slab(k),
                g.slab(round.inv_diag, k),
                &mut dst[local(k)],
            );
        }
    }
    let fin: &[f32] = if m % 2 == 1 { xa } else { xb };
    grp.p_out.copy_from_slice(&fin[local(k0).start..local(k1 - 1).end]);
}
