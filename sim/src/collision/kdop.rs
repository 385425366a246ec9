//! Discrete orientation polytopes (k-DOPs) for k = 6, 14, 18 and 26, after Klosowski, Held,
//! Mitchell, Sowizral and Zikan 1998, "Efficient Collision Detection Using Bounding Volume
//! Hierarchies of k-DOPs" (IEEE TVCG 4(1)), the bounding volumes Chen 2011 uses.
//!
//! A k-DOP is the intersection of k/2 slabs, one per fixed axis: the slab of axis `a` is the
//! interval `[min, max]` of the dot products `a · p` of the points it bounds. The axes have
//! integer components as in Klosowski et al. and are NOT normalised, so a slab's width is in
//! units of `|a|` times distance (`enlarged` accounts for that).
//!
//! Invariants:
//! - the first three axes of every kind are x, y and z, so slabs 0..3 are the bounding box;
//! - only the first k/2 entries of the slab arrays are used; the rest stay at 0.0 forever, so
//!   the derived `PartialEq` compares exactly the used slabs;
//! - the empty k-DOP has `min = +inf` and `max = -inf` on every used slab: it contains and
//!   overlaps nothing, and merging into it gives the other operand;
//! - a k-DOP built from points contains each of them exactly (`contains_point` computes the same
//!   dot products as `add_point`); points with a NaN coordinate are ignored by every slab (an
//!   infinite coordinate can leave some slabs empty), so nothing here loops or panics on them.

use std::f32::consts::SQRT_2;
use std::fmt;
use std::str::FromStr;

use glam::Vec3;

use crate::error::SimError;

/// The most axes any supported kind has (the 26-DOP's 13).
const MAX_AXES: usize = 13;

/// What `from_k` and `from_str` accept, for their error messages.
const ALLOWED: &str = "allowed: 6, 14, 18 or 26";

const X: Vec3 = Vec3::new(1.0, 0.0, 0.0);
const Y: Vec3 = Vec3::new(0.0, 1.0, 0.0);
const Z: Vec3 = Vec3::new(0.0, 0.0, 1.0);
// The four cube diagonals (corners of the cube, one of each opposite pair).
const D0: Vec3 = Vec3::new(1.0, 1.0, 1.0);
const D1: Vec3 = Vec3::new(1.0, 1.0, -1.0);
const D2: Vec3 = Vec3::new(1.0, -1.0, 1.0);
const D3: Vec3 = Vec3::new(-1.0, 1.0, 1.0);
// The six edge diagonals (midpoints of the cube's edges, one of each opposite pair).
const E0: Vec3 = Vec3::new(1.0, 1.0, 0.0);
const E1: Vec3 = Vec3::new(1.0, 0.0, 1.0);
const E2: Vec3 = Vec3::new(0.0, 1.0, 1.0);
const E3: Vec3 = Vec3::new(1.0, -1.0, 0.0);
const E4: Vec3 = Vec3::new(1.0, 0.0, -1.0);
const E5: Vec3 = Vec3::new(0.0, 1.0, -1.0);

static AXES_6: [Vec3; 3] = [X, Y, Z];
static AXES_14: [Vec3; 7] = [X, Y, Z, D0, D1, D2, D3];
static AXES_18: [Vec3; 9] = [X, Y, Z, E0, E1, E2, E3, E4, E5];
static AXES_26: [Vec3; 13] = [X, Y, Z, D0, D1, D2, D3, E0, E1, E2, E3, E4, E5];

/// The axes' lengths: 1 for x, y, z, √3 for a cube diagonal, √2 for an edge diagonal.
const SQRT_3: f32 = 1.732_050_8;
static LENGTHS_6: [f32; 3] = [1.0; 3];
static LENGTHS_14: [f32; 7] = [1.0, 1.0, 1.0, SQRT_3, SQRT_3, SQRT_3, SQRT_3];
static LENGTHS_18: [f32; 9] = [1.0, 1.0, 1.0, SQRT_2, SQRT_2, SQRT_2, SQRT_2, SQRT_2, SQRT_2];
static LENGTHS_26: [f32; 13] = [
    1.0, 1.0, 1.0, SQRT_3, SQRT_3, SQRT_3, SQRT_3, SQRT_2, SQRT_2, SQRT_2, SQRT_2, SQRT_2, SQRT_2,
];

/// Which k-DOP: its k, the number of bounding planes (two per axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DopK {
    /// The axis-aligned box: axes x, y, z.
    K6,
    /// The box and the 4 cube diagonals.
    K14,
    /// The box and the 6 edge diagonals.
    K18,
    /// The box, the 4 cube diagonals and the 6 edge diagonals.
    K26,
}

impl DopK {
    /// Every kind, smallest k first.
    pub const ALL: [DopK; 4] = [DopK::K6, DopK::K14, DopK::K18, DopK::K26];

    /// The number of bounding planes: 6, 14, 18 or 26.
    #[inline]
    pub fn k(self) -> usize {
        match self {
            DopK::K6 => 6,
            DopK::K14 => 14,
            DopK::K18 => 18,
            DopK::K26 => 26,
        }
    }

    /// The k/2 slab axes, with integer components and not normalised (Klosowski et al. 1998):
    /// x, y, z first, then for 14 and 26 the cube diagonals (1,1,1), (1,1,-1), (1,-1,1),
    /// (-1,1,1), then for 18 and 26 the edge diagonals (1,1,0), (1,0,1), (0,1,1), (1,-1,0),
    /// (1,0,-1), (0,1,-1).
    #[inline]
    pub fn axes(self) -> &'static [Vec3] {
        match self {
            DopK::K6 => &AXES_6,
            DopK::K14 => &AXES_14,
            DopK::K18 => &AXES_18,
            DopK::K26 => &AXES_26,
        }
    }

    /// The kind with `k` planes; an error naming `k` unless it is 6, 14, 18 or 26.
    pub fn from_k(k: u32) -> Result<DopK, SimError> {
        match k {
            6 => Ok(DopK::K6),
            14 => Ok(DopK::K14),
            18 => Ok(DopK::K18),
            26 => Ok(DopK::K26),
            other => Err(SimError::param("k-DOP k", other, ALLOWED)),
        }
    }

    /// The lengths of [`axes`](Self::axes), in the same order.
    #[inline]
    fn lengths(self) -> &'static [f32] {
        match self {
            DopK::K6 => &LENGTHS_6,
            DopK::K14 => &LENGTHS_14,
            DopK::K18 => &LENGTHS_18,
            DopK::K26 => &LENGTHS_26,
        }
    }

    /// The number of axes, k/2.
    #[inline]
    fn half(self) -> usize {
        self.k() / 2
    }
}

impl fmt::Display for DopK {
    /// Writes e.g. "14-DOP".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-DOP", self.k())
    }
}

impl FromStr for DopK {
    type Err = SimError;

    /// Parses "14" or "14-DOP" (any case, surrounding blanks ignored); errors as `from_k`.
    fn from_str(s: &str) -> Result<Self, SimError> {
        let t = s.trim();
        let digits = match t.len().checked_sub(4) {
            Some(cut) if t.is_char_boundary(cut) && t[cut..].eq_ignore_ascii_case("-dop") => &t[..cut],
            _ => t,
        };
        match digits.parse::<u32>() {
            Ok(k) => DopK::from_k(k),
            Err(_) => Err(SimError::param("k-DOP k", s, ALLOWED)),
        }
    }
}

/// A k-DOP: per axis of its kind, the slab `[min, max]` of the dot products of the bounded
/// points with that (unnormalised) axis. Only the first k/2 entries are used; the others stay
/// at 0.0 (see the module invariants).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kdop {
    k: DopK,
    min: [f32; MAX_AXES],
    max: [f32; MAX_AXES],
}

impl Kdop {
    /// The empty k-DOP of kind `k`: every used slab is `[+inf, -inf]`. It overlaps and contains
    /// nothing, and merging it into another leaves that one unchanged.
    #[inline]
    pub fn empty(k: DopK) -> Kdop {
        let mut d = Kdop {
            k,
            min: [0.0; MAX_AXES],
            max: [0.0; MAX_AXES],
        };
        let n = k.half();
        d.min[..n].fill(f32::INFINITY);
        d.max[..n].fill(f32::NEG_INFINITY);
        d
    }

    /// The smallest k-DOP of kind `k` containing every point (empty for no points).
    pub fn of_points(k: DopK, points: &[Vec3]) -> Kdop {
        let mut d = Kdop::empty(k);
        for &p in points {
            d.add_point(p);
        }
        d
    }

    /// The k-DOP of the frustum with axis `a`–`b` and radii `ra` at `a`, `rb` at `b` (a stem
    /// or a stretch of one; it holds the prism inscribed in it), each slab from the support of
    /// its end discs: along axis u, a disc of radius r across the unit direction d reaches
    /// r·√(|u|² − (u·d)²) either side of its centre.
    pub fn of_frustum(k: DopK, a: Vec3, b: Vec3, ra: f32, rb: f32) -> Kdop {
        let mut out = Kdop::empty(k);
        let d = (b - a).normalize_or_zero();
        for (i, u) in k.axes().iter().enumerate() {
            let ud = u.dot(d);
            let s = (u.length_squared() - ud * ud).max(0.0).sqrt();
            let (pa, pb) = (u.dot(a), u.dot(b));
            out.min[i] = (pa - ra * s).min(pb - rb * s);
            out.max[i] = (pa + ra * s).max(pb + rb * s);
        }
        out
    }

    /// The k-DOP of a flat blade: the points `attach + along·v ± across·h` for each `(v, h)` of
    /// `outline` (h ≥ 0; its mid-venation and outline), i.e. of the polygon they span. Per
    /// slab of axis a the extremes are `a·attach + v·(a·along) ± h·|a·across|` over the
    /// outline, so each slab costs three dot products and a pass over the (v, h) pairs instead
    /// of a dot product per point. It contains each point up to rounding (the dot products
    /// are grouped differently from `add_point`'s).
    pub fn of_blade(k: DopK, attach: Vec3, along: Vec3, across: Vec3, outline: &[(f32, f32)]) -> Kdop {
        let mut out = Kdop::empty(k);
        for (i, u) in k.axes().iter().enumerate() {
            let (c, a, b) = (u.dot(attach), u.dot(along), u.dot(across).abs());
            let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
            for &(v, h) in outline {
                lo = lo.min(a * v - b * h);
                hi = hi.max(a * v + b * h);
            }
            // A NaN extreme (a non-finite pose) leaves its slab empty, as `add_point` ignores
            // a NaN point.
            out.min[i] = (c + lo).min(f32::INFINITY);
            out.max[i] = (c + hi).max(f32::NEG_INFINITY);
        }
        out
    }

    /// Grows the slabs to contain `p`. A point with a NaN coordinate changes nothing.
    #[inline]
    pub fn add_point(&mut self, p: Vec3) {
        let n = self.k.half();
        let axes = self.k.axes();
        for ((lo, hi), a) in self.min[..n].iter_mut().zip(&mut self.max[..n]).zip(axes) {
            let s = a.dot(p);
            // `f32::min`/`max` return the other operand when `s` is NaN.
            *lo = lo.min(s);
            *hi = hi.max(s);
        }
    }

    /// Grows this k-DOP to contain `other` as well. Both should be of the same kind (checked
    /// in debug builds); in release builds a k-DOP of another kind is merged through the eight
    /// corners of its bounding box, which still contains it.
    #[inline]
    pub fn merge(&mut self, other: &Kdop) {
        debug_assert_eq!(self.k, other.k, "merging k-DOPs of different kinds");
        if self.k != other.k {
            self.merge_box_of(other);
            return;
        }
        let n = self.k.half();
        for (lo, &o) in self.min[..n].iter_mut().zip(&other.min[..n]) {
            *lo = lo.min(o);
        }
        for (hi, &o) in self.max[..n].iter_mut().zip(&other.max[..n]) {
            *hi = hi.max(o);
        }
    }

    /// Merges the bounding box of a k-DOP of another kind, corner by corner.
    #[cold]
    fn merge_box_of(&mut self, other: &Kdop) {
        if other.is_empty() {
            return;
        }
        for c in 0..8 {
            let pick = |axis: usize| {
                if c & (1 << axis) == 0 {
                    other.min[axis]
                } else {
                    other.max[axis]
                }
            };
            self.add_point(Vec3::new(pick(0), pick(1), pick(2)));
        }
    }

    /// The smallest k-DOP containing both (see `merge` for different kinds).
    #[inline]
    pub fn union(a: &Kdop, b: &Kdop) -> Kdop {
        let mut u = *a;
        u.merge(b);
        u
    }

    /// Whether every pair of slabs overlaps (touching counts as overlap), the separating-axis
    /// test of Klosowski et al. restricted to the k/2 axes. Conservative: if the bounded sets
    /// share a point, this is true. An empty k-DOP overlaps nothing. For k-DOPs of different
    /// kinds only the x, y, z slabs (the bounding boxes) are compared.
    #[inline]
    pub fn overlaps(&self, other: &Kdop) -> bool {
        // The box first: most pairs that miss are told apart by it.
        for i in 0..3 {
            if self.min[i].max(other.min[i]) > self.max[i].min(other.max[i]) {
                return false;
            }
        }
        let n = if self.k == other.k { self.k.half() } else { 3 };
        let mins = self.min[..n].iter().zip(&other.min[..n]);
        let maxs = self.max[..n].iter().zip(&other.max[..n]);
        let mut all = true;
        for ((a_lo, b_lo), (a_hi, b_hi)) in mins.zip(maxs) {
            // The two slabs meet iff their intersection [lo, hi] is not empty; an empty slab
            // has lo = +inf or hi = -inf, so it never meets anything.
            all &= a_lo.max(*b_lo) <= a_hi.min(*b_hi);
        }
        all
    }

    /// This k-DOP grown by distance `d` in every direction: each slab of axis `a` becomes
    /// `[min - d|a|, max + d|a|]`, so the result contains every point within distance `d` of
    /// this polytope (since `|a · (q - p)| <= |a| |q - p|`). A negative or NaN `d` counts as 0;
    /// an empty k-DOP stays empty.
    pub fn enlarged(&self, d: f32) -> Kdop {
        let d = d.max(0.0);
        let mut out = *self;
        let n = self.k.half();
        for (i, length) in self.k.lengths().iter().enumerate().take(n) {
            let grow = d * length;
            out.min[i] = self.min[i] - grow;
            out.max[i] = self.max[i] + grow;
        }
        out
    }

    /// This k-DOP swept along `moves`: each slab of axis `a` reaches out by the most of
    /// `a · m` over the moves on its side (`[min + min(0, a·m0, a·m1), max + max(0, a·m0,
    /// a·m1)]`), so the result contains every point of this polytope moved by any convex
    /// combination of zero and the two moves (a segment moved by `m0` at one end and `m1` at
    /// the other, at any time along the way). NaN components count as no move; an empty
    /// k-DOP stays empty.
    pub fn swept(&self, moves: [Vec3; 2]) -> Kdop {
        let mut out = *self;
        let n = self.k.half();
        for (i, a) in self.k.axes().iter().enumerate().take(n) {
            let (u, v) = (a.dot(moves[0]), a.dot(moves[1]));
            // min/max drop a NaN operand.
            out.min[i] += u.min(v).min(0.0);
            out.max[i] += u.max(v).max(0.0);
        }
        out
    }

    /// Whether `other` lies inside this k-DOP, slab by slab (closed): then whatever `other`
    /// overlaps, this overlaps too. An empty `other` lies inside anything; a NaN slab or
    /// another kind is never inside.
    #[inline]
    pub fn contains(&self, other: &Kdop) -> bool {
        if other.is_empty() {
            return true;
        }
        if self.k != other.k {
            return false;
        }
        let n = self.k.half();
        let mut all = true;
        for i in 0..n {
            all &= self.min[i] <= other.min[i] && other.max[i] <= self.max[i];
        }
        all
    }

    /// Whether `p` lies in every slab (closed). False for an empty k-DOP and for NaN points.
    pub fn contains_point(&self, p: Vec3) -> bool {
        let n = self.k.half();
        let mut all = true;
        for ((&lo, &hi), a) in self.min[..n].iter().zip(&self.max[..n]).zip(self.k.axes()) {
            let s = a.dot(p);
            all &= lo <= s && s <= hi;
        }
        all
    }

    /// The sum of the x, y and z slabs' widths (a measure of size: the larger of two nodes is
    /// the one a traversal descends). NaN or negative for an empty k-DOP.
    pub fn span(&self) -> f32 {
        (self.max[0] - self.min[0]) + (self.max[1] - self.min[1]) + (self.max[2] - self.min[2])
    }

    /// The centre of the x, y, z slabs (the bounding box's centre). NaN components for an
    /// empty k-DOP.
    pub fn centre(&self) -> Vec3 {
        Vec3::new(
            0.5 * (self.min[0] + self.max[0]),
            0.5 * (self.min[1] + self.max[1]),
            0.5 * (self.min[2] + self.max[2]),
        )
    }

    /// Whether some slab is empty (true for `Kdop::empty`, false once a finite point is added).
    pub fn is_empty(&self) -> bool {
        let n = self.k.half();
        self.min[..n].iter().zip(&self.max[..n]).any(|(lo, hi)| lo > hi)
    }

    /// The kind of this k-DOP.
    #[inline]
    pub fn kind(&self) -> DopK {
        self.k
    }

    /// The slab `(min, max)` of axis number `axis` (an index into `kind().axes()`). An index
    /// of k/2 or more has no slab and gives the empty one, `(+inf, -inf)`.
    #[inline]
    pub fn slab(&self, axis: usize) -> (f32, f32) {
        if axis < self.k.half() {
            (self.min[axis], self.max[axis])
        } else {
            (f32::INFINITY, f32::NEG_INFINITY)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Between 1 and `max_n` points uniform in the cube of half-size `radius` around `centre`.
    fn cloud(rng: &mut Rng, centre: Vec3, radius: f32, max_n: u64) -> Vec<Vec3> {
        let n = 1 + rng.below(max_n);
        (0..n)
            .map(|_| centre + Vec3::new(rng.sym(radius), rng.sym(radius), rng.sym(radius)))
            .collect()
    }

    fn unit_vector(rng: &mut Rng) -> Vec3 {
        loop {
            let v = Vec3::new(rng.sym(1.0), rng.sym(1.0), rng.sym(1.0));
            let l = v.length();
            if l > 0.1 && l <= 1.0 {
                return v / l;
            }
        }
    }

    #[test]
    fn axis_counts_and_coordinate_axes_first() {
        let counts: Vec<usize> = DopK::ALL.iter().map(|k| k.axes().len()).collect();
        assert_eq!(counts, [3, 7, 9, 13]);
        for k in DopK::ALL {
            assert_eq!(k.axes().len() * 2, k.k());
            assert_eq!(&k.axes()[..3], &[Vec3::X, Vec3::Y, Vec3::Z], "{k}");
            // No axis repeats up to sign, and every component is -1, 0 or 1.
            for (i, a) in k.axes().iter().enumerate() {
                assert!(a.to_array().iter().all(|c| [-1.0, 0.0, 1.0].contains(c)), "{k}: {a}");
                for b in &k.axes()[..i] {
                    assert!(a.cross(*b).length() > 0.5, "{k}: {a} parallel to {b}");
                }
            }
        }
        // The 26-DOP's axes are the 14's and the 18's together.
        for a in DopK::K14.axes().iter().chain(DopK::K18.axes()) {
            assert!(DopK::K26.axes().contains(a), "{a}");
        }
    }

    #[test]
    fn from_k_accepts_exactly_the_four_kinds() {
        for k in 0..=40u32 {
            match DopK::from_k(k) {
                Ok(kind) => {
                    assert!([6, 14, 18, 26].contains(&k), "accepted {k}");
                    assert_eq!(kind.k(), k as usize);
                }
                Err(e) => assert!(![6, 14, 18, 26].contains(&k), "rejected {k}: {e}"),
            }
        }
        for bad in [8u32, 0] {
            let e = DopK::from_k(bad).unwrap_err();
            assert_eq!(e, SimError::param("k-DOP k", bad, "allowed: 6, 14, 18 or 26"));
            let msg = e.to_string();
            assert!(msg.contains(&format!("= {bad}:")), "{msg}");
            assert!(msg.contains("allowed: 6, 14, 18 or 26"), "{msg}");
        }
        for k in DopK::ALL {
            assert_eq!(k.to_string().parse::<DopK>().unwrap(), k);
            assert_eq!(k.k().to_string().parse::<DopK>().unwrap(), k);
        }
        assert_eq!(DopK::K14.to_string(), "14-DOP");
        assert_eq!(" 18-dop ".parse::<DopK>().unwrap(), DopK::K18);
        for bad in ["8", "", "-DOP", "dop", "14-DOPS", "2é"] {
            let msg = bad.parse::<DopK>().unwrap_err().to_string();
            assert!(msg.contains("allowed: 6, 14, 18 or 26"), "{bad}: {msg}");
        }
    }

    #[test]
    fn of_points_contains_its_points_and_higher_k_is_tighter() {
        let mut rng = Rng::new(0x6B_D0B5);
        let mut strictly_tighter = 0;
        for _ in 0..2_000 {
            let ca = Vec3::new(rng.sym(1.0), rng.sym(1.0), rng.sym(1.0));
            let cb = Vec3::new(rng.sym(1.0), rng.sym(1.0), rng.sym(1.0));
            let a = cloud(&mut rng, ca, 0.6, 12);
            let b = cloud(&mut rng, cb, 0.6, 12);
            let dops = |pts: &[Vec3]| DopK::ALL.map(|k| Kdop::of_points(k, pts));
            let (da, db) = (dops(&a), dops(&b));
            for d in &da {
                assert!(!d.is_empty());
                for p in &a {
                    assert!(d.contains_point(*p), "{} misses {p}", d.kind());
                }
                // The coordinate slabs of every kind are the bounding box.
                for axis in 0..3 {
                    assert_eq!(d.slab(axis), da[0].slab(axis));
                }
            }
            let o = [0, 1, 2, 3].map(|i| da[i].overlaps(&db[i]));
            let [o6, o14, o18, o26] = o;
            assert!(!o26 || o18, "26 overlaps but 18 does not");
            assert!(!o18 || o6, "18 overlaps but 6 does not");
            assert!(!o26 || o14, "26 overlaps but 14 does not");
            assert!(!o14 || o6, "14 overlaps but 6 does not");
            // Overlap is symmetric.
            assert_eq!(o, [0, 1, 2, 3].map(|i| db[i].overlaps(&da[i])));
            if o6 && !o26 {
                strictly_tighter += 1;
            }
        }
        assert!(
            strictly_tighter > 50,
            "the 26-DOP separated only {strictly_tighter} pairs the box did not"
        );
    }

    #[test]
    fn overlap_is_conservative_for_clouds_sharing_a_point() {
        let mut rng = Rng::new(77);
        for _ in 0..500 {
            let shared = Vec3::new(rng.sym(2.0), rng.sym(2.0), rng.sym(2.0));
            let (ua, ub) = (unit_vector(&mut rng), unit_vector(&mut rng));
            let mut a = cloud(&mut rng, shared + ua, 0.8, 8);
            let mut b = cloud(&mut rng, shared - ub, 0.8, 8);
            a.insert(rng.below(a.len() as u64 + 1) as usize, shared);
            b.insert(rng.below(b.len() as u64 + 1) as usize, shared);
            for k in DopK::ALL {
                let (da, db) = (Kdop::of_points(k, &a), Kdop::of_points(k, &b));
                assert!(
                    da.overlaps(&db) && db.overlaps(&da),
                    "{k} misses the shared point {shared}"
                );
            }
        }
    }

    #[test]
    fn diagonal_separation_needs_the_diagonal_axes() {
        // Two clusters on either side of the plane x + y + z = 1.5 in the unit cube: around the
        // corners (1,0,0), (0,1,0), (0,0,1) (projections near 1 on (1,1,1)) and around
        // (1,1,0), (1,0,1), (0,1,1) (projections near 2). Both bounding boxes are [0,1]³.
        let mut rng = Rng::new(3);
        let jitter = |rng: &mut Rng, c: Vec3| {
            let j = Vec3::new(rng.range(0.0, 0.02), rng.range(0.0, 0.02), rng.range(0.0, 0.02));
            // Pull inwards so the clusters stay inside the cube.
            c + j - 2.0 * j * c
        };
        let mut a = Vec::new();
        let mut b = Vec::new();
        for _ in 0..10 {
            for c in [Vec3::X, Vec3::Y, Vec3::Z] {
                a.push(jitter(&mut rng, c));
            }
            for c in [
                Vec3::new(1.0, 1.0, 0.0),
                Vec3::new(1.0, 0.0, 1.0),
                Vec3::new(0.0, 1.0, 1.0),
            ] {
                b.push(jitter(&mut rng, c));
            }
        }
        a.extend([Vec3::X, Vec3::Y, Vec3::Z]);
        b.extend([
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(1.0, 0.0, 1.0),
            Vec3::new(0.0, 1.0, 1.0),
        ]);
        let overlap = |k| Kdop::of_points(k, &a).overlaps(&Kdop::of_points(k, &b));
        assert!(overlap(DopK::K6), "the boxes coincide");
        assert!(!overlap(DopK::K14), "the (1,1,1) slab separates");
        assert!(!overlap(DopK::K26), "the (1,1,1) slab separates");
        let (lo, hi) = Kdop::of_points(DopK::K14, &a).slab(3);
        assert!(lo >= 0.9 && hi <= 1.1, "({lo}, {hi})");
    }

    #[test]
    fn enlarged_contains_every_point_within_the_distance() {
        let mut rng = Rng::new(0xE1A);
        for _ in 0..200 {
            let pts = cloud(&mut rng, Vec3::ZERO, 1.0, 10);
            let d = rng.range(0.01, 0.5);
            for k in DopK::ALL {
                let dop = Kdop::of_points(k, &pts);
                let grown = dop.enlarged(d);
                for _ in 0..20 {
                    let p = pts[rng.below(pts.len() as u64) as usize];
                    let q = p + unit_vector(&mut rng) * (d * rng.range(0.0, 0.999));
                    assert!(grown.contains_point(q), "{k}: {q} within {d} of {p}");
                }
                // It grows by exactly d along each slab: a point just beyond is outside.
                for (i, a) in k.axes().iter().enumerate() {
                    let u = *a / a.length();
                    let (_, hi) = dop.slab(i);
                    let extreme = pts.iter().copied().find(|p| a.dot(*p) == hi).unwrap();
                    assert!(grown.contains_point(extreme + u * (0.99 * d)), "{k} axis {a}");
                    assert!(!grown.contains_point(extreme + u * (1.01 * d)), "{k} axis {a}");
                }
                assert_eq!(dop.enlarged(-1.0), dop);
                assert_eq!(dop.enlarged(f32::NAN), dop);
                assert!(Kdop::empty(k).enlarged(d).is_empty());
            }
        }
    }

    #[test]
    fn swept_contains_every_point_moved_along_the_way() {
        let mut rng = Rng::new(0x5EE7);
        for _ in 0..200 {
            let pts = cloud(&mut rng, Vec3::ZERO, 1.0, 10);
            let moves = [
                unit_vector(&mut rng) * rng.range(0.0, 0.5),
                unit_vector(&mut rng) * rng.range(0.0, 0.5),
            ];
            for k in DopK::ALL {
                let dop = Kdop::of_points(k, &pts);
                let swept = dop.swept(moves);
                assert!(swept.contains(&dop));
                for &p in &pts {
                    let (t, s) = (rng.range(0.0, 1.0), rng.range(0.0, 1.0));
                    let q = p + (moves[0] * (1.0 - s) + moves[1] * s) * t;
                    assert!(swept.contains_point(q), "{k}: {p} moved to {q}");
                }
                // It reaches no farther than the moves: every slab's ends are met by a
                // point moved by 0 or by one of the moves.
                let mut moved = pts.clone();
                moved.extend(pts.iter().map(|&p| p + moves[0]));
                moved.extend(pts.iter().map(|&p| p + moves[1]));
                let hull = Kdop::of_points(k, &moved);
                for i in 0..k.axes().len() {
                    let ((a, b), (c, d)) = (swept.slab(i), hull.slab(i));
                    assert!((a - c).abs() < 1e-5 && (b - d).abs() < 1e-5, "{k} slab {i}");
                }
                assert_eq!(dop.swept([Vec3::ZERO; 2]), dop);
                assert_eq!(dop.swept([Vec3::NAN; 2]), dop);
                assert!(Kdop::empty(k).swept(moves).is_empty());
            }
        }
    }

    #[test]
    fn contains_is_slab_containment_and_implies_overlap() {
        let mut rng = Rng::new(0xC0_47A1);
        let mut inside = 0;
        for _ in 0..2_000 {
            let around = |rng: &mut Rng| {
                let centre = Vec3::new(rng.sym(1.0), rng.sym(1.0), rng.sym(1.0));
                cloud(rng, centre, 0.5, 8)
            };
            let (a, b, c) = (around(&mut rng), around(&mut rng), around(&mut rng));
            for k in DopK::ALL {
                let (da, db, dc) = (Kdop::of_points(k, &a), Kdop::of_points(k, &b), Kdop::of_points(k, &c));
                let fat = da.enlarged(0.3);
                // A k-DOP holds itself and is held by its enlargement, not the other way round.
                assert!(da.contains(&da) && fat.contains(&da) && !da.contains(&fat), "{k}");
                // Containment is exactly: every point of b inside.
                let every = b.iter().all(|&p| fat.contains_point(p));
                assert_eq!(fat.contains(&db), every, "{k}");
                inside += every as usize;
                // What the inner one overlaps, the outer one overlaps.
                if fat.contains(&db) && db.overlaps(&dc) {
                    assert!(fat.overlaps(&dc), "{k}");
                }
            }
            assert!(Kdop::empty(DopK::K14).contains(&Kdop::empty(DopK::K14)));
            assert!(!Kdop::empty(DopK::K14).contains(&Kdop::of_points(DopK::K14, &a)));
            assert!(!Kdop::of_points(DopK::K6, &a)
                .enlarged(9.0)
                .contains(&Kdop::of_points(DopK::K14, &a)));
        }
        assert!(inside > 100 && inside < 7_000, "{inside}");
    }

    #[test]
    fn merge_union_and_empty() {
        let mut rng = Rng::new(11);
        for _ in 0..100 {
            let a = cloud(&mut rng, Vec3::ZERO, 1.0, 10);
            let b = cloud(&mut rng, Vec3::ONE, 1.0, 10);
            let both: Vec<Vec3> = a.iter().chain(&b).copied().collect();
            for k in DopK::ALL {
                let (da, db) = (Kdop::of_points(k, &a), Kdop::of_points(k, &b));
                let mut m = da;
                m.merge(&db);
                assert_eq!(m, Kdop::of_points(k, &both), "{k}");
                assert_eq!(Kdop::union(&db, &da), m, "{k}");
                let mut e = Kdop::empty(k);
                e.merge(&da);
                assert_eq!(e, da, "{k}");
                let mut d2 = da;
                d2.merge(&Kdop::empty(k));
                assert_eq!(d2, da, "{k}");
                let c = da.centre();
                let (x0, x1) = da.slab(0);
                assert_eq!(c.x, 0.5 * (x0 + x1));
                assert!(da.contains_point(c) || k != DopK::K6, "the box contains its centre");
            }
        }
        for k in DopK::ALL {
            let e = Kdop::empty(k);
            assert!(e.is_empty());
            assert_eq!(e.kind(), k);
            assert_eq!(Kdop::of_points(k, &[]), e);
            assert!(!e.overlaps(&e));
            assert!(!e.contains_point(Vec3::ZERO));
            assert_eq!(e.slab(k.k() / 2), (f32::INFINITY, f32::NEG_INFINITY));
            let big = Kdop::of_points(k, &[Vec3::splat(-1e30), Vec3::splat(1e30), Vec3::ZERO]);
            let dot = Kdop::of_points(k, &[Vec3::ZERO]);
            for other in [big, dot] {
                assert!(!e.overlaps(&other) && !other.overlaps(&e), "{k}");
            }
            assert!(dot.overlaps(&dot) && dot.overlaps(&big));
            // NaN points are ignored: the k-DOP stays what it was.
            let mut n = dot;
            n.add_point(Vec3::new(f32::NAN, 0.0, 5.0));
            assert_eq!(n, dot);
            assert!(!dot.contains_point(Vec3::NAN));
        }
    }
}
