//! The wind at many points at once, as the trees read it: every leaf and every segment centre
//! of a forest, once per step.
//!
//! Invariant: [`FluidGrid::sample_in_place`](super::FluidGrid::sample_in_place) gives each
//! point exactly the bits of [`FluidGrid::sample`](super::FluidGrid::sample) at it (the same operations in the same order, without fused
//! multiply-adds), on every instruction set. The AVX2 kernel does eight points at a time: the
//! grid coordinates `(p − origin) / h`, per component the clamped corner and weights, the 2×2×2
//! corners as four pairs of adjacent floats per point (one 8-byte load each: no gather) and the
//! seven lerps of `trilinear`.
//!
//! The AVX2 kernel is `unsafe` (`std::arch` intrinsics behind `#[target_feature]`), which this
//! module allows like [`super::advect`] and [`super::jacobi`]; it is called only when
//! [`Isa::Avx2`] was chosen, which requires the CPU to report AVX2 at run time.

#![allow(unsafe_code)]

use glam::Vec3;

use super::{FieldRef, Isa};

impl FieldRef<'_> {
    /// Replaces each point by the wind there ([`sample`](Self::sample) at it, bit for bit).
    pub(crate) fn sample_in_place(&self, points: &mut [Vec3]) {
        let done = match self.isa {
            Isa::Portable => 0,
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx2` is only chosen when the CPU has AVX2.
            Isa::Avx2 => unsafe { avx2::sample_in_place(self, points) },
        };
        for p in &mut points[done..] {
            *p = self.sample(*p);
        }
    }

    /// The wind at each of `points`, into `out` (as long as `points`): [`sample`](Self::sample)
    /// at each, bit for bit.
    pub(crate) fn sample_into(&self, points: &[Vec3], out: &mut [Vec3]) {
        assert_eq!(points.len(), out.len(), "one wind sample per point");
        let done = match self.isa {
            Isa::Portable => 0,
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx2` is only chosen when the CPU has AVX2.
            Isa::Avx2 => unsafe { avx2::sample_into(self, points, out) },
        };
        for (o, p) in out[done..].iter_mut().zip(&points[done..]) {
            *o = self.sample(*p);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use glam::Vec3;

    use super::FieldRef;

    /// `a + (b − a) t`, as the portable `lerp`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn lerp(a: __m256, b: __m256, t: __m256) -> __m256 {
        _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(b, a), t))
    }

    /// What every chunk of eight points needs: the grid's origin and spacing, and per
    /// component its face values, clamps and strides.
    struct Consts<'a> {
        org: [__m256; 3],
        h: [__m256; 3],
        comp: [Component<'a>; 3],
    }

    /// One velocity component's faces: values, the largest coordinate, the largest corner
    /// index per axis, and the y and z strides.
    struct Component<'a> {
        f: &'a [f32],
        max_f: [__m256; 3],
        max_i: [__m256i; 3],
        sy: __m256i,
        sz: __m256i,
        /// The y and z strides as offsets.
        row_y: usize,
        row_z: usize,
    }

    #[target_feature(enable = "avx2")]
    fn consts<'a>(grid: &FieldRef<'a>) -> Consts<'a> {
        let d = &grid.dims;
        let o = grid.origin;
        // Every gathered index lies below its face count, which fits an i32 (MAX_CELLS keeps
        // it far below).
        let comp = std::array::from_fn(|a| {
            let fd = d.face_dims(a);
            let f = &grid.vel[a][..];
            assert!(f.len() == fd[0] * fd[1] * fd[2] && f.len() <= i32::MAX as usize);
            Component {
                f,
                max_f: fd.map(|n| _mm256_set1_ps((n - 1) as f32)),
                max_i: fd.map(|n| _mm256_set1_epi32((n - 2) as i32)),
                sy: _mm256_set1_epi32(fd[0] as i32),
                sz: _mm256_set1_epi32((fd[0] * fd[1]) as i32),
                row_y: fd[0],
                row_z: fd[0] * fd[1],
            }
        });
        Consts {
            org: [o.x, o.y, o.z].map(|v| _mm256_set1_ps(v)),
            h: d.h.map(|h| _mm256_set1_ps(h)),
            comp,
        }
    }

    /// Per lane `l`, the floats at `lane[l] + off` (lower) and the one after it (upper).
    ///
    /// # Safety
    /// `p + lane[l] + off + 1` must be in the same allocation as `p` for every lane, and the CPU
    /// must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn pairs(p: *const f32, lane: &[i32; 8], off: usize) -> (__m256, __m256) {
        // SAFETY: the caller's bound; the reads are unaligned.
        let at = |l: usize| unsafe { p.add(lane[l] as usize + off).cast::<i64>().read_unaligned() };
        let two = |l: usize| _mm_insert_epi64::<1>(_mm_cvtsi64_si128(at(l)), at(l + 1));
        // [0 1 | 4 5] and [2 3 | 6 7], each lane's (lower, upper) adjacent.
        let a = _mm256_castsi256_ps(_mm256_set_m128i(two(4), two(0)));
        let b = _mm256_castsi256_ps(_mm256_set_m128i(two(6), two(2)));
        (
            _mm256_shuffle_ps::<0b10_00_10_00>(a, b),
            _mm256_shuffle_ps::<0b11_01_11_01>(a, b),
        )
    }

    /// Points per block: the corners and weights of a block's points are all found before
    /// any is read, so the loads of many points are in flight at once instead of each chunk
    /// of eight waiting on its own chain of arithmetic, loads and lerps.
    const BLOCK: usize = 64;
    const CHUNKS: usize = BLOCK / 8;

    /// A block's corners and weights: per chunk of eight and velocity component, each lane's
    /// first corner (flat index) and its three weights.
    struct Prepared {
        chunks: usize,
        lane: [[[i32; 8]; 3]; CHUNKS],
        t: [[[__m256; 3]; 3]; CHUNKS],
    }

    impl Prepared {
        /// Scratch for one call's blocks (written by `prepare` block after block).
        #[inline]
        #[target_feature(enable = "avx2")]
        fn new() -> Prepared {
            Prepared {
                chunks: 0,
                lane: [[[0; 8]; 3]; CHUNKS],
                t: [[[_mm256_setzero_ps(); 3]; 3]; CHUNKS],
            }
        }
    }

    /// Eight `Vec3` (24 packed floats at `p`) as their x, y and z lanes.
    ///
    /// # Safety
    /// `p` must point to 24 readable floats, and the CPU must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load_soa(p: *const f32) -> [__m256; 3] {
        // SAFETY: the caller's bound; the reads are unaligned.
        let m = unsafe {
            [
                _mm256_loadu_ps(p),
                _mm256_loadu_ps(p.add(8)),
                _mm256_loadu_ps(p.add(16)),
            ]
        };
        // Lane l of coordinate c is float 3l + c: in register (3l + c) / 8, at (3l + c) % 8.
        let at = |c: [i32; 8]| {
            m.map(|r| _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])))
        };
        let [x0, x1, x2] = at([0, 3, 6, 1, 4, 7, 2, 5]);
        let [y0, y1, y2] = at([1, 4, 7, 2, 5, 0, 3, 6]);
        let [z0, z1, z2] = at([2, 5, 0, 3, 6, 1, 4, 7]);
        [
            _mm256_blend_ps::<0b1100_0000>(_mm256_blend_ps::<0b0011_1000>(x0, x1), x2),
            _mm256_blend_ps::<0b1110_0000>(_mm256_blend_ps::<0b0001_1000>(y0, y1), y2),
            _mm256_blend_ps::<0b1110_0000>(_mm256_blend_ps::<0b0001_1100>(z0, z1), z2),
        ]
    }

    /// The x, y and z lanes of eight points as 24 packed floats at `p` (the inverse of
    /// [`load_soa`]).
    ///
    /// # Safety
    /// `p` must point to 24 writable floats, and the CPU must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn store_aos(v: [__m256; 3], p: *mut f32) {
        // Float f = 8m + k of the output (register m, lane k) is lane f / 3 of coordinate f % 3.
        let at = |l: [i32; 8]| {
            v.map(|r| _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7])))
        };
        let [x, y, z] = at([0, 0, 0, 1, 1, 1, 2, 2]);
        let m0 = _mm256_blend_ps::<0b0010_0100>(_mm256_blend_ps::<0b1001_0010>(x, y), z);
        let [x, y, z] = at([2, 3, 3, 3, 4, 4, 4, 5]);
        let m1 = _mm256_blend_ps::<0b0100_1001>(_mm256_blend_ps::<0b0010_0100>(x, y), z);
        let [x, y, z] = at([5, 5, 6, 6, 6, 7, 7, 7]);
        let m2 = _mm256_blend_ps::<0b1001_0010>(_mm256_blend_ps::<0b0100_1001>(x, y), z);
        // SAFETY: the caller's bound; the writes are unaligned.
        unsafe {
            _mm256_storeu_ps(p, m0);
            _mm256_storeu_ps(p.add(8), m1);
            _mm256_storeu_ps(p.add(16), m2);
        }
    }

    /// The corners and weights of the points of `src` (a multiple of eight, at most
    /// [`BLOCK`]).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn prepare(k: &Consts<'_>, src: &[Vec3], out: &mut Prepared) {
        let zero = _mm256_setzero_ps();
        let half = _mm256_set1_ps(0.5);
        let chunks = src.len() / 8;
        assert!(src.len() % 8 == 0 && chunks <= CHUNKS, "a block of whole chunks");
        out.chunks = chunks;
        for ch in 0..chunks {
            let pts = &src[8 * ch..8 * ch + 8];
            // SAFETY: eight `Vec3` are 24 packed floats.
            let p = unsafe { load_soa(pts.as_ptr().cast()) };
            // g = (p − origin) / h, as `sample`.
            let g: [__m256; 3] = std::array::from_fn(|b| _mm256_div_ps(_mm256_sub_ps(p[b], k.org[b]), k.h[b]));
            // `sample_component`: c = g − ½ along the other components' axes, then + ½ along
            // the component's own. Along axis b the two components other than b have the same
            // coordinate and the same face count (n_b + 1 cells' faces are only b's), so they
            // share the corner and weight found here; b's own are found apart.
            // `trilinear`: x = c.max(0).min(max) (a NaN becomes 0 as with f32::max, which
            // `max_ps` gives by returning its second operand), truncated to the corner, at most
            // fd − 2, and the remainder.
            let corner = |c: __m256, comp: &Component<'_>, b: usize| {
                let x = _mm256_min_ps(_mm256_max_ps(c, zero), comp.max_f[b]);
                let fl = _mm256_min_epi32(_mm256_cvttps_epi32(x), comp.max_i[b]);
                (fl, _mm256_sub_ps(x, _mm256_cvtepi32_ps(fl)))
            };
            let across: [(__m256i, __m256); 3] = std::array::from_fn(|b| {
                let c = _mm256_sub_ps(g[b], half);
                corner(c, &k.comp[(b + 1) % 3], b)
            });
            let along: [(__m256i, __m256); 3] = std::array::from_fn(|b| {
                let c = _mm256_add_ps(_mm256_sub_ps(g[b], half), half);
                corner(c, &k.comp[b], b)
            });
            for (a, c) in k.comp.iter().enumerate() {
                let mut fl = [_mm256_setzero_si256(); 3];
                for b in 0..3 {
                    let (f, t) = if a == b { along[b] } else { across[b] };
                    fl[b] = f;
                    out.t[ch][a][b] = t;
                }
                // i0 + fd0·(i1 + fd1·i2) = i0 + sy·i1 + sz·i2.
                let base = _mm256_add_epi32(
                    fl[0],
                    _mm256_add_epi32(_mm256_mullo_epi32(fl[1], c.sy), _mm256_mullo_epi32(fl[2], c.sz)),
                );
                // SAFETY: `lane` holds eight i32.
                unsafe { _mm256_storeu_si256(out.lane[ch][a].as_mut_ptr().cast(), base) };
            }
        }
    }

    /// The wind at the points `prepare` was given, into `dst` (as many).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn finish(k: &Consts<'_>, pre: &Prepared, dst: &mut [Vec3]) {
        assert_eq!(dst.len(), 8 * pre.chunks, "one sample per prepared point");
        for ch in 0..pre.chunks {
            // One component's trilinear sample (a macro, so that the three are laid out one
            // after the other rather than as a loop).
            macro_rules! component {
                ($a:expr) => {{
                    let c = &k.comp[$a];
                    let t = &pre.t[ch][$a];
                    let lane = &pre.lane[ch][$a];
                    // The two corners along x of each of the four rows are adjacent floats: one
                    // 8-byte load per lane and row, then split into the lower and upper corners
                    // (scalar loads run several per cycle where a gather takes about one element
                    // per cycle).
                    let mut cx = [_mm256_setzero_ps(); 4];
                    for (cx, off) in cx.iter_mut().zip([0, c.row_y, c.row_z, c.row_y + c.row_z]) {
                        // SAFETY: 0 ≤ fl[b] ≤ fd[b] − 2, so for every lane base + off + 1 ≤ base +
                        // sz + sy + 1 ≤ fd[0]·fd[1]·fd[2] − 1 lies in `f` (asserted to have that
                        // length).
                        let (lo, hi) = unsafe { pairs(c.f.as_ptr(), lane, off) };
                        *cx = lerp(lo, hi, t[0]);
                    }
                    let [c00, c10, c01, c11] = cx;
                    lerp(lerp(c00, c10, t[1]), lerp(c01, c11, t[1]), t[2])
                }};
            }
            let v = [component!(0), component!(1), component!(2)];
            let out = &mut dst[8 * ch..8 * ch + 8];
            // SAFETY: eight `Vec3` are 24 packed floats.
            unsafe { store_aos(v, out.as_mut_ptr().cast()) };
        }
    }

    /// The wind at the first multiple of eight of `points`, in place; returns how many points
    /// it did (the rest are left to the portable path).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sample_in_place(grid: &FieldRef<'_>, points: &mut [Vec3]) -> usize {
        let k = consts(grid);
        let n = points.len() / 8 * 8;
        let mut pre = Prepared::new();
        for block in points[..n].chunks_mut(BLOCK) {
            prepare(&k, block, &mut pre);
            finish(&k, &pre, block);
        }
        n
    }

    /// The wind at the first multiple of eight of `points`, into `out` (as long as `points`);
    /// returns how many points it did.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sample_into(grid: &FieldRef<'_>, points: &[Vec3], out: &mut [Vec3]) -> usize {
        let k = consts(grid);
        let n = points.len() / 8 * 8;
        let mut pre = Prepared::new();
        for (src, dst) in points[..n].chunks(BLOCK).zip(out[..n].chunks_mut(BLOCK)) {
            prepare(&k, src, &mut pre);
            finish(&k, &pre, dst);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::super::{FluidGrid, FluidParams, Isa};
    use crate::rng::Rng;

    /// A 13×7×11 grid of seeded random velocities.
    fn grid() -> FluidGrid {
        let mut p = FluidParams::over(Vec3::new(-3.0, 0.0, -2.0), Vec3::new(5.0, 4.0, 6.0));
        p.cells = [13, 7, 11];
        let mut g = FluidGrid::new(p).unwrap();
        let mut rng = Rng::new(7);
        for a in 0..3 {
            g.velocity_mut(a).iter_mut().for_each(|v| *v = rng.sym(9.0));
        }
        g
    }

    #[test]
    fn many_points_at_once_give_the_bits_of_one_at_a_time() {
        let mut g = grid();
        let mut rng = Rng::new(3);
        // Inside, outside on every side (clamped), on faces and corners, and a ragged tail.
        let mut points: Vec<Vec3> = (0..203)
            .map(|_| Vec3::new(rng.range(-5.0, 7.0), rng.range(-1.0, 5.0), rng.range(-4.0, 8.0)))
            .collect();
        points.extend([
            Vec3::new(-3.0, 0.0, -2.0),
            Vec3::new(5.0, 4.0, 6.0),
            Vec3::new(1.0, 2.0, 2.0),
            Vec3::new(f32::NAN, 1.0, 1.0),
            Vec3::new(1e30, -1e30, 0.5),
        ]);
        let want: Vec<[u32; 3]> = points
            .iter()
            .map(|&p| g.sample(p).to_array().map(f32::to_bits))
            .collect();
        let mut isas = vec![Isa::Portable];
        if Isa::detect() != Isa::Portable {
            isas.push(Isa::detect());
        }
        for isa in isas {
            g.isa = isa;
            let mut into = vec![Vec3::ZERO; points.len()];
            g.sample_into(&points, &mut into);
            let mut got = points.clone();
            g.sample_in_place(&mut got);
            assert_eq!(
                got.iter().map(|v| v.to_array().map(f32::to_bits)).collect::<Vec<_>>(),
                into.iter().map(|v| v.to_array().map(f32::to_bits)).collect::<Vec<_>>(),
                "{isa:?}: in place and into another buffer"
            );
            for (k, (w, p)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    &w.to_array().map(f32::to_bits),
                    p,
                    "{isa:?}: point {k} at {}",
                    points[k]
                );
            }
        }
        // The field varies: the samples are not all alike.
        assert!(want.iter().any(|w| w != &want[0]));
    }
}
