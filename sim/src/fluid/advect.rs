//! Semi-Lagrangian advection (paper 004, Eq. 4), one row of faces `(j, k)` at a time.
//!
//! The velocity at a face needs, for each of the two components other than the face's own, the
//! mean of the cell-centred values of the two cells beside the face. Each job of the pass first
//! computes the cell-centred values of the cell slabs its faces touch into scratch of its own
//! thread ([`Advect::with_centres`]: each cell's `0.5 (v⁻ + v⁺)` per component, the same
//! operations as [`super::centre_velocity`]), so a face reads two of them per component instead
//! of four faces. A slab beside two jobs is computed by both, from the same faces by the same
//! operations, so the grouping changes no bit.
//!
//! Every face of a row is computed by the portable [`Advect::face`]; on CPUs with AVX2 all faces
//! of a row but its two ends are taken eight at a time by the AVX2 kernel instead, which does
//! the same float operations in the same order (no fused multiply-adds), so both give
//! bit-identical results. A row on a closed or inflow side along its own axis has no active
//! face and is filled with its prescribed value at once.
//!
//! The AVX2 kernels are `unsafe` (`std::arch` intrinsics behind `#[target_feature]`), which this
//! module alone of `sim` besides [`super::jacobi`] and [`super::sample`] allows; they are called
//! only when [`Isa::Avx2`] was chosen, which requires the CPU to report AVX2 at run time.

#![allow(unsafe_code)]

use std::cell::RefCell;

use super::{Dims, Isa, StepInputs};

/// Index in cell-centred scratch holding slabs `k0..` of cell `(0, j, k)`'s value of component
/// `b`: per cell slab, one plane of `nx × ny` cells for each component (u, v, w in turn).
#[inline(always)]
fn centre_row(d: &Dims, k0: usize, b: usize, j: usize, k: usize) -> usize {
    let plane = d.n[0] * d.n[1];
    (3 * (k - k0) + b) * plane + d.n[0] * j
}

thread_local! {
    /// Each thread's cell-centred scratch for the jobs it runs.
    static CENTRES: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// The cell-centred velocity of cell slabs `k0..k0 + out.len() / (3 nx ny)` into `out`, laid
/// out as [`centre_row`] says: per component the mean of the cell's two faces along its axis,
/// `0.5 (v⁻ + v⁺)`, as [`super::centre_velocity`] computes it.
#[inline(always)]
fn centre_slabs(d: &Dims, vel: &[Vec<f32>; 3], k0: usize, out: &mut [f32]) {
    let [nx, ny, _] = d.n;
    let plane = nx * ny;
    for (s, slab) in out.chunks_mut(3 * plane).enumerate() {
        let k = k0 + s;
        let (cu, rest) = slab.split_at_mut(plane);
        let (cv, cw) = rest.split_at_mut(plane);
        for j in 0..ny {
            let u = &vel[0][(nx + 1) * (j + ny * k)..][..nx + 1];
            let out = &mut cu[nx * j..][..nx];
            for i in 0..nx {
                out[i] = 0.5 * (u[i] + u[i + 1]);
            }
            let v = &vel[1][nx * (j + (ny + 1) * k)..][..2 * nx];
            let out = &mut cv[nx * j..][..nx];
            for i in 0..nx {
                out[i] = 0.5 * (v[i] + v[nx + i]);
            }
        }
        let w0 = &vel[2][plane * k..][..plane];
        let w1 = &vel[2][plane * (k + 1)..][..plane];
        for i in 0..plane {
            cw[i] = 0.5 * (w0[i] + w1[i]);
        }
    }
}

/// [`centre_slabs`] vectorised for AVX2 (the same operations, eight lanes wide).
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn centre_slabs_avx2(d: &Dims, vel: &[Vec<f32>; 3], k0: usize, out: &mut [f32]) {
    centre_slabs(d, vel, k0, out)
}

/// One advection pass: reads the face velocities, writes each component's new values.
#[derive(Clone, Copy)]
pub(super) struct Advect<'a> {
    d: Dims,
    vel: &'a [Vec<f32>; 3],
    /// The cell-centred velocities of `vel` on cell slabs `centre_k0..` ([`centre_row`]);
    /// empty outside [`Advect::with_centres`].
    centre: &'a [f32],
    centre_k0: usize,
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
    /// For each other component `b`: its cell-centred values on the cell row below the faces
    /// along the component's axis and on the row above (for u-faces both are the faces' own
    /// row: face `i` lies between cells `i − 1` and `i`). Empty for the component itself.
    cells: [(&'a [f32], &'a [f32]); 3],
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
            centre: &[],
            centre_k0: 0,
            act,
            inputs,
            k_dt: [dt / d.h[0], dt / d.h[1], dt / d.h[2]],
            lo,
            hi,
            isa,
        }
    }

    /// Runs `f` with this pass given the cell-centred velocities of cell slabs `k0..k1` (the
    /// slabs that the face slabs `k0..k1` of u and v and `k0..=k1` of w touch, but for a cell
    /// slab below `k0`, which a w-face slab `k0` touches too and which is included), computed
    /// into this thread's scratch.
    pub fn with_centres<R>(&self, k0: usize, k1: usize, f: impl FnOnce(&Advect<'_>) -> R) -> R {
        let nz = self.d.n[2];
        let (lo, hi) = (k0.saturating_sub(1), k1.min(nz));
        assert!(lo < hi, "at least one cell slab");
        let plane = self.d.n[0] * self.d.n[1];
        CENTRES.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            scratch.resize(3 * plane * (hi - lo), 0.0);
            match self.isa {
                Isa::Portable => centre_slabs(&self.d, self.vel, lo, &mut scratch),
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `Isa::Avx2` is only chosen when the CPU has AVX2.
                Isa::Avx2 => unsafe { centre_slabs_avx2(&self.d, self.vel, lo, &mut scratch) },
            }
            let with = Advect {
                centre: &scratch,
                centre_k0: lo,
                ..*self
            };
            f(&with)
        })
    }

    /// New values of component `A` on the face rows of `chunk`, whose first slab is `k0`
    /// (within [`with_centres`](Self::with_centres) for those slabs).
    pub fn rows<const A: usize>(&self, k0: usize, chunk: &mut [f32]) {
        match self.isa {
            Isa::Portable => {
                let fd = self.d.face_dims(A);
                for (r, out) in chunk.chunks_mut(fd[0]).enumerate() {
                    let (j, k) = (r % fd[1], k0 + r / fd[1]);
                    let row = self.row::<A>(j, k);
                    if let Some(value) = self.side_value::<A>(&row) {
                        out.fill(value);
                        continue;
                    }
                    for (i, o) in out.iter_mut().enumerate() {
                        *o = self.face::<A>(&row, i);
                    }
                }
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx2` is only chosen when the CPU has AVX2.
            Isa::Avx2 => unsafe { avx2::rows::<A>(self, k0, chunk) },
        }
    }

    fn row<const A: usize>(&self, j: usize, k: usize) -> Row<'a> {
        let d = &self.d;
        let n = d.n;
        let fd = d.face_dims(A);
        let pad_row = d.pad(0, j as isize, k as isize);
        let below = pad_row - d.pad_strides()[A];
        // The cell rows beside this face row (lower and upper along A, x = 0; clamped into the
        // grid on a domain side).
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
        let mut cells: [(&'a [f32], &'a [f32]); 3] = [(&[], &[]); 3];
        for (b, c) in cells.iter_mut().enumerate() {
            if b != A {
                let (l, h) = (
                    centre_row(d, self.centre_k0, b, lo[1], lo[2]),
                    centre_row(d, self.centre_k0, b, hi[1], hi[2]),
                );
                *c = (&self.centre[l..l + n[0]], &self.centre[h..h + n[0]]);
            }
        }
        Row {
            j,
            k,
            own: &self.vel[A][fd[0] * (j + fd[1] * k)..][..fd[0]],
            act_lo: &self.act[below..below + fd[0]],
            act_hi: &self.act[pad_row..pad_row + fd[0]],
            cells,
        }
    }

    /// The value of every face of a row on a closed or inflow side along its own axis (beyond
    /// which every cell is inactive), or `None` for a row with active faces.
    fn side_value<const A: usize>(&self, row: &Row<'_>) -> Option<f32> {
        let f_a = [0, row.j, row.k][A];
        if A != 0 && ((f_a == 0 && row.act_lo[0] == 0.0) || (f_a == self.d.n[A] && row.act_hi[0] == 0.0)) {
            Some(self.prescribed::<A>(f_a))
        } else {
            None
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
        for (b, (l, h)) in row.cells.iter().enumerate() {
            if b != A {
                v[b] = 0.5 * (l[xl] + h[xh]);
            }
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
/// usual, that point lies within one cell of the face along every axis (its lower corner is
/// the face's own coordinate or the one below), those faces are among the 3×3×3 around it: the
/// kernel loads the rows it needs of those nine, interpolates each along x and picks per lane,
/// which gives the same values as gathering the eight corners and needs no gather; otherwise
/// it gathers. Along y and z, where every lane has the same lower corner (the usual case), only
/// its two rows are read and nothing is picked.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Advect, Row};

    /// `a + (b − a) t`, as the portable `lerp`.
    /// (Safe to call only from code compiled for AVX2, such as [`rows`].)
    #[inline]
    #[target_feature(enable = "avx2")]
    fn lerp(a: __m256, b: __m256, t: __m256) -> __m256 {
        _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(b, a), t))
    }

    /// Per lane, `b` where the sign bit of `pick` is set, else `a`.
    /// (Safe to call only from code compiled for AVX2, such as [`rows`].)
    #[inline]
    #[target_feature(enable = "avx2")]
    fn pick(a: __m256, b: __m256, pick: __m256) -> __m256 {
        _mm256_blendv_ps(a, b, pick)
    }

    /// Eight floats from `p`.
    ///
    /// # Safety
    /// `p` must point to eight readable floats, and the CPU must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn ld(p: *const f32) -> __m256 {
        // SAFETY: the caller's bound; the read is unaligned.
        unsafe { _mm256_loadu_ps(p) }
    }

    /// What every row of component `A` shares.
    struct Consts {
        fd: [usize; 3],
        half: __m256,
        k_dt: [__m256; 3],
        lo: [__m256; 3],
        hi: [__m256; 3],
        /// Whether an axis has an inflow side to test the back-traced point against.
        inflow: [bool; 3],
        max_f: [__m256; 3],
        max_i: [__m256i; 3],
        border: __m256,
    }

    /// New values of component `A` on the face rows of `chunk`, whose first slab is `k0`
    /// ([`Advect::rows`]).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn rows<const A: usize>(ctx: &Advect<'_>, k0: usize, chunk: &mut [f32]) {
        let fd = ctx.d.face_dims(A);
        let own = &ctx.vel[A][..];
        // Every index the kernel reads is below the component's face count; it must fit an
        // i32 for the gathers.
        assert!(own.len() == fd[0] * fd[1] * fd[2] && own.len() <= i32::MAX as usize);
        let c = Consts {
            fd,
            half: _mm256_set1_ps(0.5),
            k_dt: ctx.k_dt.map(|k| _mm256_set1_ps(k)),
            lo: ctx.lo[A].map(|x| _mm256_set1_ps(x)),
            hi: ctx.hi[A].map(|x| _mm256_set1_ps(x)),
            inflow: std::array::from_fn(|b| ctx.lo[A][b] > f32::NEG_INFINITY || ctx.hi[A][b] < f32::INFINITY),
            max_f: fd.map(|n| _mm256_set1_ps((n - 1) as f32)),
            max_i: fd.map(|n| _mm256_set1_epi32((n - 2) as i32)),
            border: _mm256_set1_ps(ctx.inputs.border[A]),
        };
        for (r, out) in chunk.chunks_mut(fd[0]).enumerate() {
            let (j, k) = (r % fd[1], k0 + r / fd[1]);
            let row = ctx.row::<A>(j, k);
            if let Some(value) = ctx.side_value::<A>(&row) {
                out.fill(value);
                continue;
            }
            // The faces but the first and last of the row have a face each side along x (and
            // for u a cell each side).
            if fd[0] >= 10 {
                row_inside::<A>(ctx, &c, &row, out);
                out[0] = ctx.face::<A>(&row, 0);
                out[fd[0] - 1] = ctx.face::<A>(&row, fd[0] - 1);
            } else {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = ctx.face::<A>(&row, i);
                }
            }
        }
    }

    /// The faces `1..fd[0] − 1` of `row` of component `A` (at least eight), eight at a time, the
    /// last eight overlapping the others.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn row_inside<const A: usize>(ctx: &Advect<'_>, c: &Consts, row: &Row<'_>, out: &mut [f32]) {
        let fd = c.fd;
        let (first, end) = (1, fd[0] - 1);
        let own = &ctx.vel[A][..];
        // The loads below read, for the chunk of faces i..i + 8 (1 ≤ i ≤ fd[0] − 9), floats
        // i − 1 ..= i + 8 of rows of fd[0] floats (the own faces, the activities, the own
        // component's rows around) and i − 1 ..= i + 7 (u) or i ..= i + 7 (v, w) of the
        // cell-centred rows (nx = fd[0] − 1 floats for u, fd[0] for v and w): all inside.
        assert!(end >= first + 8 && out.len() == fd[0] && row.own.len() == fd[0]);
        assert!(row.act_lo.len() == fd[0] && row.act_hi.len() == fd[0]);
        assert!((0..3).all(|b| b == A || (row.cells[b].0.len() == ctx.d.n[0] && row.cells[b].1.len() == ctx.d.n[0])));
        assert!(own.len() == fd[0] * fd[1] * fd[2] && row.j < fd[1] && row.k < fd[2]);
        let (own_p, own_row) = (own.as_ptr(), row.own.as_ptr());
        let (act_lo, act_hi) = (row.act_lo.as_ptr(), row.act_hi.as_ptr());
        let cells = row.cells.map(|(l, h)| (l.as_ptr(), h.as_ptr()));
        let zero = _mm256_setzero_ps();
        let (sy, sz) = (fd[0], fd[0] * fd[1]);
        let (v_sy, v_sz) = (_mm256_set1_epi32(sy as i32), _mm256_set1_epi32(sz as i32));
        let one = _mm256_set1_epi32(1);
        let (j, k) = (row.j, row.k);
        let fy = _mm256_set1_ps(j as f32);
        let fz = _mm256_set1_ps(k as f32);
        // The coordinate below the faces' own, per axis (−1 on the first row or slab).
        let (jm1, km1) = (_mm256_set1_epi32(j as i32 - 1), _mm256_set1_epi32(k as i32 - 1));
        let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let not_one = _mm256_set1_epi32(!1);
        // Faces inside along x lie on a side only along y or z: one value per row.
        let prescribed = _mm256_set1_ps(ctx.prescribed::<A>([1, j, k][A]));
        // Index of face (0, j, k) of this row: the rows around are ± sy, ± sz from it.
        let here = sy * j + sz * k;
        // The lower cell along x of u-face i is cell i − 1.
        let shift = (A == 0) as usize;
        let mut next = first;
        while next < end {
            let i = next.min(end - 8);
            next = i + 8;
            let mut v = [zero; 3];
            // SAFETY: within the row (see the asserts above).
            v[A] = unsafe { ld(own_row.add(i)) };
            for (b, &(l, h)) in cells.iter().enumerate() {
                if b != A {
                    // SAFETY: within the cell rows (see the asserts above).
                    let (l, h) = unsafe { (ld(l.add(i - shift)), ld(h.add(i))) };
                    v[b] = _mm256_mul_ps(c.half, _mm256_add_ps(l, h));
                }
            }
            let vi = _mm256_add_epi32(_mm256_set1_epi32(i as i32), iota);
            let g = [
                _mm256_sub_ps(_mm256_cvtepi32_ps(vi), _mm256_mul_ps(v[0], c.k_dt[0])),
                _mm256_sub_ps(fy, _mm256_mul_ps(v[1], c.k_dt[1])),
                _mm256_sub_ps(fz, _mm256_mul_ps(v[2], c.k_dt[2])),
            ];
            let mut beyond = zero;
            let mut fl = [_mm256_setzero_si256(); 3];
            let mut t = [zero; 3];
            for b in 0..3 {
                if c.inflow[b] {
                    beyond = _mm256_or_ps(
                        beyond,
                        _mm256_or_ps(
                            _mm256_cmp_ps::<_CMP_LT_OQ>(g[b], c.lo[b]),
                            _mm256_cmp_ps::<_CMP_GT_OQ>(g[b], c.hi[b]),
                        ),
                    );
                }
                // max(g, 0) returns 0 for NaN, as f32::max; then 0 ≤ x ≤ fd − 1.
                let x = _mm256_min_ps(_mm256_max_ps(g[b], zero), c.max_f[b]);
                fl[b] = _mm256_min_epi32(_mm256_cvttps_epi32(x), c.max_i[b]);
                t[b] = _mm256_sub_ps(x, _mm256_cvtepi32_ps(fl[b]));
            }
            // Per axis, the lower corner less the coordinate below the face's: 1 where the
            // corner is the face's own coordinate, 0 where it is the one below, anything else
            // when the point lies farther.
            let e = [
                _mm256_sub_epi32(fl[0], _mm256_sub_epi32(vi, one)),
                _mm256_sub_epi32(fl[1], jm1),
                _mm256_sub_epi32(fl[2], km1),
            ];
            let any = _mm256_or_si256(_mm256_or_si256(e[0], e[1]), e[2]);
            let sampled = if _mm256_testz_si256(any, not_one) == 1 {
                // Every lane's corners are among the 3×3×3 faces around its own. `up[b]`: the
                // sign bit set where the lower corner is the face's own coordinate.
                let up = e.map(|e| _mm256_castsi256_ps(_mm256_slli_epi32::<31>(e)));
                let (xm, ym, zm) = (
                    _mm256_movemask_ps(up[0]),
                    _mm256_movemask_ps(up[1]),
                    _mm256_movemask_ps(up[2]),
                );
                // The row of faces starting at index `r` (face (0, y, z)), interpolated along x
                // between each lane's two corners (macros rather than closures, which the
                // compiler leaves uninlined).
                macro_rules! along_x {
                    ($r:expr) => {{
                        // SAFETY: row `$r` lies in the grid (below) and floats i − 1 ..= i + 8
                        // of it are read.
                        let s = unsafe { own_p.add($r + i) };
                        // SAFETY: as above.
                        let (a, b, m) = unsafe { (ld(s.sub(1)), ld(s), ld(s.add(1))) };
                        match xm {
                            0xff => lerp(b, m, t[0]),
                            0 => lerp(a, b, t[0]),
                            _ => lerp(pick(a, b, up[0]), pick(b, m, up[0]), t[0]),
                        }
                    }};
                }
                // The rows at the lower and upper y corner of slab `s` (index of face (0, j, z)),
                // interpolated along x. A row beyond the grid is never read: the corners lie in
                // it (0 ≤ corner ≤ fd − 2), and a mixed axis has both rows beside this one.
                macro_rules! along_y {
                    ($s:expr) => {{
                        let s = $s;
                        match ym {
                            0xff => (along_x!(s), along_x!(s + sy)),
                            0 => (along_x!(s - sy), along_x!(s)),
                            _ => {
                                let (a, b, m) = (along_x!(s - sy), along_x!(s), along_x!(s + sy));
                                (pick(a, b, up[1]), pick(b, m, up[1]))
                            }
                        }
                    }};
                }
                let [c00, c10, c01, c11] = match zm {
                    0xff => {
                        let (c00, c10) = along_y!(here);
                        let (c01, c11) = along_y!(here + sz);
                        [c00, c10, c01, c11]
                    }
                    0 => {
                        let (c00, c10) = along_y!(here - sz);
                        let (c01, c11) = along_y!(here);
                        [c00, c10, c01, c11]
                    }
                    _ => {
                        let (a0, a1) = along_y!(here - sz);
                        let (b0, b1) = along_y!(here);
                        let (m0, m1) = along_y!(here + sz);
                        [
                            pick(a0, b0, up[2]),
                            pick(a1, b1, up[2]),
                            pick(b0, m0, up[2]),
                            pick(b1, m1, up[2]),
                        ]
                    }
                };
                lerp(lerp(c00, c10, t[1]), lerp(c01, c11, t[1]), t[2])
            } else {
                let base = _mm256_add_epi32(
                    fl[0],
                    _mm256_add_epi32(_mm256_mullo_epi32(v_sy, fl[1]), _mm256_mullo_epi32(v_sz, fl[2])),
                );
                let p = own.as_ptr();
                let row_y = _mm256_add_epi32(base, v_sy);
                let row_z = _mm256_add_epi32(base, v_sz);
                let row_zy = _mm256_add_epi32(row_z, v_sy);
                let mut cs = [zero; 4];
                for (cs, idx) in cs.iter_mut().zip([base, row_y, row_z, row_zy]) {
                    // SAFETY: 0 ≤ fl[b] ≤ fd[b] − 2, so every index, at most base + sz + sy + 1
                    // ≤ fd[0]·fd[1]·fd[2] − 1, lies in `own` (asserted to have that length).
                    let (a, b) = unsafe {
                        (
                            _mm256_i32gather_ps::<4>(p, idx),
                            _mm256_i32gather_ps::<4>(p, _mm256_add_epi32(idx, one)),
                        )
                    };
                    *cs = lerp(a, b, t[0]);
                }
                let [c00, c10, c01, c11] = cs;
                lerp(lerp(c00, c10, t[1]), lerp(c01, c11, t[1]), t[2])
            };
            // Active where act_lo · act_hi ≠ 0, as the portable test.
            // SAFETY: within the activity rows (see the asserts above).
            let (al, ah) = unsafe { (ld(act_lo.add(i)), ld(act_hi.add(i))) };
            let live = _mm256_cmp_ps::<_CMP_NEQ_UQ>(_mm256_mul_ps(al, ah), zero);
            let value = _mm256_blendv_ps(sampled, c.border, beyond);
            let value = _mm256_blendv_ps(prescribed, value, live);
            // SAFETY: within the row (see the asserts above).
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(i), value) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{centre_velocity, Dims, Isa};
    use super::{centre_row, centre_slabs};
    use crate::rng::Rng;

    /// The cell-centred pass on slabs 2..5 of a 13×7×6 grid of random faces gives, on every
    /// instruction set, the bits of `centre_velocity` cell by cell.
    #[test]
    fn cell_centres_are_those_of_each_cell() {
        let d = Dims {
            n: [13, 7, 6],
            h: [0.5, 0.25, 1.0],
        };
        let mut rng = Rng::new(11);
        let vel: [Vec<f32>; 3] = std::array::from_fn(|a| {
            (0..d.face_dims(a).iter().product::<usize>())
                .map(|_| rng.sym(7.0))
                .collect()
        });
        let mut isas = vec![Isa::Portable];
        if Isa::detect() != Isa::Portable {
            isas.push(Isa::detect());
        }
        for isa in isas {
            let (k0, k1) = (2, 5);
            let mut out = vec![f32::NAN; 3 * d.n[0] * d.n[1] * (k1 - k0)];
            match isa {
                Isa::Portable => centre_slabs(&d, &vel, k0, &mut out),
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `Isa::Avx2` is only detected on CPUs with AVX2.
                Isa::Avx2 => unsafe { super::centre_slabs_avx2(&d, &vel, k0, &mut out) },
            }
            for k in k0..k1 {
                for j in 0..d.n[1] {
                    for i in 0..d.n[0] {
                        let want = centre_velocity(&d, &vel, i, j, k);
                        for (b, w) in want.iter().enumerate() {
                            let got = out[centre_row(&d, k0, b, j, k) + i];
                            assert_eq!(
                                got.to_bits(),
                                w.to_bits(),
                                "{isa:?}: cell ({i}, {j}, {k}) component {b}"
                            );
                        }
                    }
                }
            }
        }
    }
}
