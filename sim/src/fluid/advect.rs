//! Semi-Lagrangian advection (paper 004, Eq. 4), one row of faces `(j, k)` at a time.
//!
//! Every face of a row is computed by the portable [`Advect::face`]; on CPUs with AVX2 all faces
//! of a row but its two ends are taken eight at a time by the AVX2 kernel instead, which does
//! the same float operations in the same order (no fused multiply-adds), so both give
//! bit-identical results. A row on a closed or inflow side along its own axis has no active
//! face and is filled with its prescribed value at once.
//!
//! The AVX2 kernel is `unsafe` (`std::arch` intrinsics behind `#[target_feature]`), which this
//! module alone of `sim` besides [`super::jacobi`] allows; it is called only when
//! [`Isa::Avx2`] was chosen, which requires the CPU to report AVX2 at run time.

#![allow(unsafe_code)]

use super::{Dims, Isa, StepInputs};

/// One advection pass: reads the face velocities, writes each component's new values.
pub(super) struct Advect<'a> {
    d: Dims,
    vel: &'a [Vec<f32>; 3],
    /// Padded cell activity (see `FluidGrid::act`).
    act: &'a [f32],
    inputs: &'a StepInputs,
    /// `dt / h` per axis: the back-trace in grid units per m/s.
    k_dt: [f32; 3],
    /// Per component, per axis: a back-traced coordinate below `lo` or above `hi` lies beyond
    /// an inflow side (±∞ where that side is not inflow, so the test never holds).
    lo: [[f32; 3]; 3],
    hi: [[f32; 3]; 3],
    isa: Isa,
}

/// What the faces of row `(j, k)` of one component read.
struct Row<'a> {
    j: usize,
    k: usize,
    /// This component's faces of the row.
    own: &'a [f32],
    /// Activity of the cells below and above each face of the row along the component's axis.
    act_lo: &'a [f32],
    act_hi: &'a [f32],
    /// For each other component `b`: index of the lower `b`-face at x = 0 of the cell row below
    /// the faces (along the component's axis) and of the cell row above, and `b`'s stride.
    others: [(usize, usize, usize); 3],
}

impl<'a> Advect<'a> {
    pub fn new(d: Dims, vel: &'a [Vec<f32>; 3], act: &'a [f32], dt: f32, inputs: &'a StepInputs, isa: Isa) -> Self {
        let mut lo = [[f32::NEG_INFINITY; 3]; 3];
        let mut hi = [[f32::INFINITY; 3]; 3];
        for a in 0..3 {
            for b in 0..3 {
                // Domain edges in component a's grid coordinates: −off and n − off.
                let off = if b == a { 0.0 } else { 0.5 };
                if inputs.inflow[2 * b] {
                    lo[a][b] = -off;
                }
                if inputs.inflow[2 * b + 1] {
                    hi[a][b] = d.n[b] as f32 - off;
                }
            }
        }
        Advect {
            d,
            vel,
            act,
            inputs,
            k_dt: [dt / d.h[0], dt / d.h[1], dt / d.h[2]],
            lo,
            hi,
            isa,
        }
    }

    /// New values of component `A` on the face rows of `chunk`, whose first slab is `k0`.
    pub fn rows<const A: usize>(&self, k0: usize, chunk: &mut [f32]) {
        let fd = self.d.face_dims(A);
        for (r, out) in chunk.chunks_mut(fd[0]).enumerate() {
            let (j, k) = (r % fd[1], k0 + r / fd[1]);
            let row = self.row::<A>(j, k);
            let f_a = [0, j, k][A];
            if A != 0 && ((f_a == 0 && row.act_lo[0] == 0.0) || (f_a == self.d.n[A] && row.act_hi[0] == 0.0)) {
                // Beyond a closed or inflow side every cell is inactive.
                out.fill(self.prescribed::<A>(f_a));
                continue;
            }
            // The faces but the first and last of the row have a face each side along x (and
            // for u a cell each side).
            let vector = match self.isa {
                Isa::Portable => false,
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `Isa::Avx2` is only chosen when the CPU has AVX2.
                Isa::Avx2 => unsafe { avx2::run::<A>(self, &row, out) },
            };
            if vector {
                out[0] = self.face::<A>(&row, 0);
                out[fd[0] - 1] = self.face::<A>(&row, fd[0] - 1);
            } else {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = self.face::<A>(&row, i);
                }
            }
        }
    }

    fn row<const A: usize>(&self, j: usize, k: usize) -> Row<'a> {
        let d = &self.d;
        let n = d.n;
        let fd = d.face_dims(A);
        let pad_row = d.pad(0, j as isize, k as isize);
        let below = pad_row - d.pad_strides()[A];
        // Rows of the cells beside this face row (lower and upper along A, x = 0), and for each
        // other component b: the index of those cells' lower b-face and b's stride.
        let mut lo = [0, j, k];
        let mut hi = [0, j, k];
        if A != 0 {
            if lo[A] > 0 {
                lo[A] -= 1;
            }
            if hi[A] == n[A] {
                hi[A] -= 1;
            }
        }
        let mut others = [(0usize, 0usize, 0usize); 3];
        for (b, o) in others.iter_mut().enumerate() {
            if b != A {
                let fb = d.face_dims(b);
                let sb = [1, fb[0], fb[0] * fb[1]][b];
                *o = (fb[0] * (lo[1] + fb[1] * lo[2]), fb[0] * (hi[1] + fb[1] * hi[2]), sb);
            }
        }
        Row {
            j,
            k,
            own: &self.vel[A][fd[0] * (j + fd[1] * k)..][..fd[0]],
            act_lo: &self.act[below..below + fd[0]],
            act_hi: &self.act[pad_row..pad_row + fd[0]],
            others,
        }
    }

    /// Value of an inactive face of component `A` at coordinate `f_a` along `A`: the border
    /// wind on an inflow side, zero on walls and beside solids.
    fn prescribed<const A: usize>(&self, f_a: usize) -> f32 {
        let side = if f_a == 0 {
            2 * A
        } else if f_a == self.d.n[A] {
            2 * A + 1
        } else {
            return 0.0;
        };
        if self.inputs.inflow[side] {
            self.inputs.border[A]
        } else {
            0.0
        }
    }

    /// New value of face `i` of row `row` of component `A`.
    #[inline(always)]
    fn face<const A: usize>(&self, row: &Row<'_>, i: usize) -> f32 {
        let n = self.d.n;
        if row.act_lo[i] * row.act_hi[i] == 0.0 {
            return self.prescribed::<A>([i, row.j, row.k][A]);
        }
        // Velocity at the face: its own component; each other component the mean of the
        // cell-centred values of the cells beside the face.
        let (xl, xh) = if A == 0 {
            (i.saturating_sub(1), i.min(n[0] - 1))
        } else {
            (i, i)
        };
        let mut v = [0.0f32; 3];
        v[A] = row.own[i];
        for (b, &(lb, hb, sb)) in row.others.iter().enumerate() {
            if b == A {
                continue;
            }
            let vb = &self.vel[b];
            let (l, h) = (lb + xl, hb + xh);
            v[b] = 0.5 * (0.5 * (vb[l] + vb[l + sb]) + 0.5 * (vb[h] + vb[h + sb]));
        }
        // Back-traced point in this component's grid coordinates.
        let f = [i as f32, row.j as f32, row.k as f32];
        let g = [
            f[0] - v[0] * self.k_dt[0],
            f[1] - v[1] * self.k_dt[1],
            f[2] - v[2] * self.k_dt[2],
        ];
        // Beyond an inflow side the air is the border wind.
        let (lo, hi) = (&self.lo[A], &self.hi[A]);
        if (0..3).any(|b| g[b] < lo[b] || g[b] > hi[b]) {
            return self.inputs.border[A];
        }
        trilinear(&self.vel[A], self.d.face_dims(A), g)
    }
}

/// Trilinear interpolation of a grid of `fd` values at grid coordinates `g`, clamped into it.
#[inline(always)]
pub(super) fn trilinear(f: &[f32], fd: [usize; 3], g: [f32; 3]) -> f32 {
    let mut i0 = [0usize; 3];
    let mut t = [0f32; 3];
    for b in 0..3 {
        let max = (fd[b] - 1) as f32;
        let x = g[b].max(0.0).min(max);
        // 0 ≤ x < 2³¹, so truncation is floor and the conversion exact.
        let fl = (x as i32 as usize).min(fd[b] - 2);
        i0[b] = fl;
        t[b] = x - fl as f32;
    }
    let (sy, sz) = (fd[0], fd[0] * fd[1]);
    let base = i0[0] + fd[0] * (i0[1] + fd[1] * i0[2]);
    let c = &f[base..=base + sz + sy + 1];
    let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
    let c00 = lerp(c[0], c[1], t[0]);
    let c10 = lerp(c[sy], c[sy + 1], t[0]);
    let c01 = lerp(c[sz], c[sz + 1], t[0]);
    let c11 = lerp(c[sz + sy], c[sz + sy + 1], t[0]);
    lerp(lerp(c00, c10, t[1]), lerp(c01, c11, t[1]), t[2])
}

/// The AVX2 kernel: [`Advect::face`] on eight faces at a time.
///
/// The trilinear sample (Eq. 4) reads the 2×2×2 faces around the back-traced point. Where, as
/// usual, that point lies within one cell of the face along every axis, those faces are among
/// the 3×3×3 around it: the kernel loads the nine rows of three, interpolates each along x and
/// picks per lane, which gives the same values as gathering the eight corners and needs no
/// gather; otherwise it gathers.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Advect, Row};

    /// Eight floats of `s` from `i`.
    /// (Safe to call only from code compiled for AVX2, such as [`run`].)
    #[inline]
    #[target_feature(enable = "avx2")]
    fn load(s: &[f32], i: usize) -> __m256 {
        let s = &s[i..i + 8];
        // SAFETY: `s` holds the eight floats read.
        unsafe { _mm256_loadu_ps(s.as_ptr()) }
    }

    /// `a + (b − a) t`, as the portable `lerp`.
    /// (Safe to call only from code compiled for AVX2, such as [`run`].)
    #[inline]
    #[target_feature(enable = "avx2")]
    fn lerp(a: __m256, b: __m256, t: __m256) -> __m256 {
        _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(b, a), t))
    }

    /// Per lane, `b` where `pick` is set, else `a`.
    /// (Safe to call only from code compiled for AVX2, such as [`run`].)
    #[inline]
    #[target_feature(enable = "avx2")]
    fn pick(a: __m256, b: __m256, pick: __m256i) -> __m256 {
        _mm256_blendv_ps(a, b, _mm256_castsi256_ps(pick))
    }

    /// The faces `1..fd[0] − 1` of `row` of component `A`, eight at a time (the last eight
    /// overlapping the others); returns false, having done nothing, when the row is too short.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn run<const A: usize>(ctx: &Advect<'_>, row: &Row<'_>, out: &mut [f32]) -> bool {
        let d = &ctx.d;
        let fd = d.face_dims(A);
        let (first, end) = (1, fd[0] - 1);
        if end < first + 8 {
            return false;
        }
        let own = &ctx.vel[A][..];
        // Every gathered index is below the component's face count; it must fit an i32.
        assert!(own.len() == fd[0] * fd[1] * fd[2] && own.len() <= i32::MAX as usize);
        let zero = _mm256_setzero_ps();
        let half = _mm256_set1_ps(0.5);
        let k_dt = ctx.k_dt.map(|k| _mm256_set1_ps(k));
        let lo = ctx.lo[A].map(|x| _mm256_set1_ps(x));
        let hi = ctx.hi[A].map(|x| _mm256_set1_ps(x));
        let max_f = fd.map(|n| _mm256_set1_ps((n - 1) as f32));
        let max_i = fd.map(|n| _mm256_set1_epi32((n - 2) as i32));
        let (sy, sz) = (fd[0], fd[0] * fd[1]);
        let (v_sy, v_sz) = (_mm256_set1_epi32(sy as i32), _mm256_set1_epi32(sz as i32));
        let one = _mm256_set1_epi32(1);
        let (j, k) = (row.j, row.k);
        let fy = _mm256_set1_ps(j as f32);
        let fz = _mm256_set1_ps(k as f32);
        let (vj, vk) = (_mm256_set1_epi32(j as i32), _mm256_set1_epi32(k as i32));
        let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let border = _mm256_set1_ps(ctx.inputs.border[A]);
        // Faces inside along x lie on a side only along y or z: one value per row.
        let prescribed = _mm256_set1_ps(ctx.prescribed::<A>([1, j, k][A]));
        // Index of face (0, y, z) of the rows around this one (clamped into the grid: a row
        // beyond it is never picked).
        let ys = [j.saturating_sub(1), j, (j + 1).min(fd[1] - 1)];
        let zs = [k.saturating_sub(1), k, (k + 1).min(fd[2] - 1)];
        let near_rows: [[usize; 3]; 3] = zs.map(|z| ys.map(|y| sy * y + sz * z));
        // The lower cell along x of u-face i is cell i − 1.
        let shift = (A == 0) as usize;
        let mut next = first;
        while next < end {
            let i = next.min(end - 8);
            next = i + 8;
            let mut v = [zero; 3];
            v[A] = load(row.own, i);
            for (b, &(lb, hb, sb)) in row.others.iter().enumerate() {
                if b == A {
                    continue;
                }
                let vb = &ctx.vel[b][..];
                let (l, h) = (lb + i - shift, hb + i);
                let cl = _mm256_mul_ps(half, _mm256_add_ps(load(vb, l), load(vb, l + sb)));
                let ch = _mm256_mul_ps(half, _mm256_add_ps(load(vb, h), load(vb, h + sb)));
                v[b] = _mm256_mul_ps(half, _mm256_add_ps(cl, ch));
            }
            let vi = _mm256_add_epi32(_mm256_set1_epi32(i as i32), iota);
            let g = [
                _mm256_sub_ps(_mm256_cvtepi32_ps(vi), _mm256_mul_ps(v[0], k_dt[0])),
                _mm256_sub_ps(fy, _mm256_mul_ps(v[1], k_dt[1])),
                _mm256_sub_ps(fz, _mm256_mul_ps(v[2], k_dt[2])),
            ];
            let mut beyond = _mm256_setzero_ps();
            let mut fl = [_mm256_setzero_si256(); 3];
            let mut t = [zero; 3];
            for b in 0..3 {
                beyond = _mm256_or_ps(
                    beyond,
                    _mm256_or_ps(
                        _mm256_cmp_ps::<_CMP_LT_OQ>(g[b], lo[b]),
                        _mm256_cmp_ps::<_CMP_GT_OQ>(g[b], hi[b]),
                    ),
                );
                // max(g, 0) returns 0 for NaN, as f32::max; then 0 ≤ x ≤ fd − 1.
                let x = _mm256_min_ps(_mm256_max_ps(g[b], zero), max_f[b]);
                fl[b] = _mm256_min_epi32(_mm256_cvttps_epi32(x), max_i[b]);
                t[b] = _mm256_sub_ps(x, _mm256_cvtepi32_ps(fl[b]));
            }
            // Per axis: whether the lower corner is the face's own coordinate (else the one
            // below), and whether every lane's is one of those two.
            let up = [
                _mm256_cmpeq_epi32(fl[0], vi),
                _mm256_cmpeq_epi32(fl[1], vj),
                _mm256_cmpeq_epi32(fl[2], vk),
            ];
            let near = _mm256_and_si256(
                _mm256_and_si256(
                    _mm256_or_si256(up[0], _mm256_cmpeq_epi32(fl[0], _mm256_sub_epi32(vi, one))),
                    _mm256_or_si256(up[1], _mm256_cmpeq_epi32(fl[1], _mm256_sub_epi32(vj, one))),
                ),
                _mm256_or_si256(up[2], _mm256_cmpeq_epi32(fl[2], _mm256_sub_epi32(vk, one))),
            );
            let [c00, c10, c01, c11] = if _mm256_movemask_ps(_mm256_castsi256_ps(near)) == 0xff {
                // The rows around, each interpolated along x between the lanes' own two faces;
                // then per lane the rows y0, y0 + 1 of slabs z0, z0 + 1. Along each axis, where
                // every lane has the same lower corner only its two rows are needed and nothing
                // is picked.
                let mask = |m: __m256i| _mm256_movemask_ps(_mm256_castsi256_ps(m));
                let (xm, ym, zm) = (mask(up[0]), mask(up[1]), mask(up[2]));
                let (y_first, y_rows) = if ym == 0xff {
                    (1, 2)
                } else {
                    (0, 2 + (ym != 0) as usize)
                };
                let (z_first, z_rows) = if zm == 0xff {
                    (1, 2)
                } else {
                    (0, 2 + (zm != 0) as usize)
                };
                let mut xl = [[zero; 3]; 3];
                for (xz, rz) in xl.iter_mut().zip(&near_rows[z_first..z_first + z_rows]) {
                    for (x, &r) in xz.iter_mut().zip(&rz[y_first..y_first + y_rows]) {
                        let (a, b) = match xm {
                            0xff => (load(own, r + i), load(own, r + i + 1)),
                            0 => (load(own, r + i - 1), load(own, r + i)),
                            _ => {
                                let (a, b, c) = (load(own, r + i - 1), load(own, r + i), load(own, r + i + 1));
                                (pick(a, b, up[0]), pick(b, c, up[0]))
                            }
                        };
                        *x = lerp(a, b, t[0]);
                    }
                }
                let mut y0 = [zero; 3];
                let mut y1 = [zero; 3];
                for z in 0..z_rows {
                    (y0[z], y1[z]) = if y_rows == 2 {
                        (xl[z][0], xl[z][1])
                    } else {
                        (pick(xl[z][0], xl[z][1], up[1]), pick(xl[z][1], xl[z][2], up[1]))
                    };
                }
                if z_rows == 2 {
                    [y0[0], y1[0], y0[1], y1[1]]
                } else {
                    [
                        pick(y0[0], y0[1], up[2]),
                        pick(y1[0], y1[1], up[2]),
                        pick(y0[1], y0[2], up[2]),
                        pick(y1[1], y1[2], up[2]),
                    ]
                }
            } else {
                let base = _mm256_add_epi32(
                    fl[0],
                    _mm256_add_epi32(_mm256_mullo_epi32(v_sy, fl[1]), _mm256_mullo_epi32(v_sz, fl[2])),
                );
                let p = own.as_ptr();
                let row_y = _mm256_add_epi32(base, v_sy);
                let row_z = _mm256_add_epi32(base, v_sz);
                let row_zy = _mm256_add_epi32(row_z, v_sy);
                let mut c = [zero; 4];
                for (c, idx) in c.iter_mut().zip([base, row_y, row_z, row_zy]) {
                    // SAFETY: 0 ≤ fl[b] ≤ fd[b] − 2, so every index, at most base + sz + sy + 1
                    // ≤ fd[0]·fd[1]·fd[2] − 1, lies in `own` (asserted to have that length).
                    let (a, b) = unsafe {
                        (
                            _mm256_i32gather_ps::<4>(p, idx),
                            _mm256_i32gather_ps::<4>(p, _mm256_add_epi32(idx, one)),
                        )
                    };
                    *c = lerp(a, b, t[0]);
                }
                c
            };
            let sampled = lerp(lerp(c00, c10, t[1]), lerp(c01, c11, t[1]), t[2]);
            // Active where act_lo · act_hi ≠ 0, as the portable test.
            let live = _mm256_cmp_ps::<_CMP_NEQ_UQ>(_mm256_mul_ps(load(row.act_lo, i), load(row.act_hi, i)), zero);
            let value = _mm256_blendv_ps(sampled, border, beyond);
            let value = _mm256_blendv_ps(prescribed, value, live);
            let o = &mut out[i..i + 8];
            // SAFETY: `o` holds the eight floats written.
            unsafe { _mm256_storeu_ps(o.as_mut_ptr(), value) };
        }
        true
    }
}
