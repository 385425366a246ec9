//! Two pieces of a tree as flat strips, and their nearest points: a stem's centreline, or a
//! leaf's blade as its mid-venation and its outline (`leaf_half_width`). Where a leaf that
//! turns on its own meets another piece, the gap between the two as strips, and the line
//! between their nearest points (on a blade's face, its normal), are what turn it away
//! (`runtime`).

use glam::Vec3;

use super::primitives::leaf_half_width;

/// Rounds of alternating projections that find the nearest points of two pieces as strips
/// (`strips_closest`; Chen's model in the gale of `tests/tests/self_collision.rs`, 300 steps,
/// interpenetrating pair-steps 65,264 without the response: with it 2,215 starting from the
/// centrelines' closest points alone, 1,547 after 1 round, 1,277 after 3, 1,110 after 6,
/// without the early stop of [`SETTLED`]; over 600 steps 1,948 at 4 rounds, 2,169 with the
/// stop at 0.1 mm, 2,223 at 0.01 mm: the gale's own scatter).
pub const STRIP_ROUNDS: usize = 4;
/// The rounds stop once a round moves the nearest point by less than this \[m\].
pub const SETTLED: f32 = 1.0e-4;

/// A piece as a flat strip: a stem's centreline (`across` zero), or a leaf's blade, its
/// mid-venation from `base` (the fraction `t0` of its length) along `along` (to the fraction
/// `t0 + dt`) and `across` the vector from the mid-venation to the outline at half-width 1.
/// `inv_along` and `inv_across` are the reciprocals of the two vectors' squared lengths (0 for
/// a zero vector), so that a projection multiplies.
#[derive(Clone, Copy, Debug)]
pub struct Strip {
    base: Vec3,
    along: Vec3,
    across: Vec3,
    inv_along: f32,
    inv_across: f32,
    t0: f32,
    dt: f32,
}

impl Strip {
    /// The strip whose centreline runs between `ends` and whose across vector is `across`,
    /// the stretch `(t0, t1)` of its blade (fractions of its length; any for a stem).
    pub fn new(ends: [Vec3; 2], across: Vec3, (t0, t1): (f32, f32)) -> Strip {
        let [e0, e1] = ends;
        let inv = |v: Vec3| {
            let l = v.length_squared();
            if l > 0.0 {
                1.0 / l
            } else {
                0.0
            }
        };
        Strip {
            base: e0,
            along: e1 - e0,
            across,
            inv_along: inv(e1 - e0),
            inv_across: inv(across),
            t0,
            dt: t1 - t0,
        }
    }

    /// The point of the strip at the fraction `s` of its centreline moved across the blade
    /// toward `x`, no farther than the outline there.
    fn toward(&self, s: f32, x: Vec3) -> Vec3 {
        let c = self.base + self.along * s;
        if self.inv_across <= 0.0 {
            return c;
        }
        let h = leaf_half_width(self.t0 + self.dt * s);
        // max/min rather than clamp: a NaN pose must not panic.
        let l = ((x - c).dot(self.across) * self.inv_across).max(-h).min(h);
        c + self.across * l
    }

    /// The point of the strip nearest `x`, nearly: at the fraction of its centreline nearest
    /// `x`, moved across toward it ([`toward`](Self::toward); exact where the outline there
    /// is the nearest).
    fn project(&self, x: Vec3) -> Vec3 {
        let s = ((x - self.base).dot(self.along) * self.inv_along).clamp(0.0, 1.0);
        self.toward(s, x)
    }
}

/// The nearest points of two strips, approximately: from the closest points of their
/// centrelines (at the fractions `s`, `t`), the second moved across its blade toward the
/// first and the first toward that, then [`STRIP_ROUNDS`] rounds of alternating projections
/// (each strip is convex, so they close in on the nearest points). Exact for two stems; for a
/// blade, the point where another piece nears its surface, so that a spring there turns the
/// leaf away rather than pushing along it.
pub fn strips_closest(a: &Strip, b: &Strip, (s, t): (f32, f32)) -> (Vec3, Vec3) {
    let mut pb = b.toward(t, a.base + a.along * s);
    let mut pa = a.toward(s, pb);
    for _ in 0..STRIP_ROUNDS {
        let next = b.project(pa);
        // Settled (always at once for two stems): the rounds left would change nothing.
        if next.distance_squared(pb) <= SETTLED * SETTLED {
            return (pa, next);
        }
        pb = next;
        pa = a.project(pb);
    }
    (pa, b.project(pa))
}

/// Most venation joints of a blade's outline in [`blades_cross`] (more are taken as this).
const MOST_JOINTS: usize = 15;

impl Strip {
    /// The blade's outline as a convex polygon, in order round it: the tips of its parallel
    /// venations at `joints` + 1 evenly spaced points along its stretch on one side, then
    /// back on the other (the polygon `primitives::blade`'s triangles cover); the count.
    fn outline(&self, joints: u32) -> ([Vec3; 2 * (MOST_JOINTS + 1)], usize) {
        let steps = (joints as usize).clamp(1, MOST_JOINTS);
        let mut out = [Vec3::ZERO; 2 * (MOST_JOINTS + 1)];
        for k in 0..=steps {
            let s = k as f32 / steps as f32;
            let c = self.base + self.along * s;
            let h = leaf_half_width(self.t0 + self.dt * s);
            out[k] = c + self.across * h;
            out[2 * steps + 1 - k] = c - self.across * h;
        }
        (out, 2 * (steps + 1))
    }
}

/// Whether two blades (strips with an across vector) pass through each other, exactly for
/// their outlines as convex polygons of `joints` venation joints each (as `primitives::blade`
/// builds them): each polygon must reach both sides of the other's plane, and the stretches
/// in which the two cut the line where their planes meet must overlap (the interval test of
/// Möller 1997 for triangles, over a polygon's edges). Where alternating projections
/// (`strips_closest`) close in on two nearly parallel blades too slowly to find that they
/// cross, this tells it. False for a stem's strip and for parallel or degenerate blades.
pub fn blades_cross(a: &Strip, b: &Strip, (ja, jb): (u32, u32)) -> bool {
    let (na, nb) = (a.along.cross(a.across), b.along.cross(b.across));
    let line = na.cross(nb);
    let least = 1e-12 * na.length_squared() * nb.length_squared();
    if line.length_squared().partial_cmp(&least) != Some(std::cmp::Ordering::Greater) {
        return false;
    }
    let (pa, ca) = a.outline(ja);
    let (pb, cb) = b.outline(jb);
    // The stretch of the line (as its parameter along `line`) in which polygon `p` cuts the
    // plane through `origin` with normal `n`; None if it lies on one side.
    let cut = |p: &[Vec3], origin: Vec3, n: Vec3| -> Option<(f32, f32)> {
        let d = |v: Vec3| (v - origin).dot(n);
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for i in 0..p.len() {
            let (u, v) = (p[i], p[(i + 1) % p.len()]);
            let (du, dv) = (d(u), d(v));
            if (du <= 0.0) != (dv <= 0.0) || du == 0.0 {
                let x = if du == dv { u } else { u + (v - u) * (du / (du - dv)) };
                let t = x.dot(line);
                lo = lo.min(t);
                hi = hi.max(t);
            }
        }
        (lo <= hi).then_some((lo, hi))
    };
    let Some((a0, a1)) = cut(&pa[..ca], pb[0], nb) else {
        return false;
    };
    let Some((b0, b1)) = cut(&pb[..cb], pa[0], na) else {
        return false;
    };
    a0.max(b0) <= a1.min(b1)
}

#[cfg(test)]
mod tests {
    use glam::Quat;

    use super::*;
    use crate::collision::primitives::blade;
    use crate::collision::tritri::triangles_intersect;
    use crate::rng::Rng;

    /// A blade of `primitives::blade` as a strip.
    fn strip(attach: Vec3, q: Quat, (length, width): (f32, f32), (v0, v1): (f32, f32)) -> Strip {
        let along = q * Vec3::Y * length;
        Strip::new(
            [attach + along * v0, attach + along * v1],
            q * Vec3::X * width,
            (v0, v1),
        )
    }

    /// Over random pairs of blades near one another, many of them nearly parallel (stacked
    /// leaves), `blades_cross` says exactly what a test of every pair of their triangles says.
    #[test]
    fn blades_cross_as_their_triangles_do() {
        let mut rng = Rng::new(17);
        let (mut crossing, mut shallow) = (0, 0);
        for n in 0..4000 {
            let size = (rng.range(0.08, 0.2), rng.range(0.03, 0.1));
            let other = (rng.range(0.08, 0.2), rng.range(0.03, 0.1));
            let qa = Quat::from_euler(glam::EulerRot::XYZ, rng.sym(3.0), rng.sym(3.0), rng.sym(3.0));
            // Every other pair a blade turned a few degrees from the first.
            let qb = if n % 2 == 0 {
                let axis = Vec3::new(rng.sym(1.0), rng.sym(1.0), rng.sym(1.0)).normalize_or(Vec3::X);
                Quat::from_axis_angle(axis, rng.sym(0.2)) * qa
            } else {
                Quat::from_euler(glam::EulerRot::XYZ, rng.sym(3.0), rng.sym(3.0), rng.sym(3.0))
            };
            let (a0, b0) = (Vec3::ZERO, Vec3::new(rng.sym(0.05), rng.sym(0.05), rng.sym(0.05)));
            let (pa, pb) = ((rng.range(0.0, 0.3), 1.0), (rng.range(0.0, 0.3), 1.0));
            let (ja, jb) = (3, 1 + (n % 3) as u32);
            let ta = blade(a0, qa, size.0, size.1, pa.0, pa.1, ja);
            let tb = blade(b0, qb, other.0, other.1, pb.0, pb.1, jb);
            let exact = ta.iter().any(|x| tb.iter().any(|y| triangles_intersect(x, y)));
            let found = blades_cross(&strip(a0, qa, size, pa), &strip(b0, qb, other, pb), (ja, jb));
            assert_eq!(found, exact, "pair {n}");
            crossing += exact as usize;
            shallow += (exact && n % 2 == 0) as usize;
        }
        assert!(
            crossing > 200 && shallow > 60,
            "{crossing} crossing, {shallow} nearly parallel"
        );
    }

    /// Alternating projections alone do not find two nearly parallel blades crossing within
    /// their rounds; the outlines do.
    #[test]
    fn nearly_parallel_blades_that_cross_are_found() {
        let size = (0.15, 0.08);
        let qa = Quat::IDENTITY;
        let qb = Quat::from_rotation_y(0.1);
        let (a, b) = (
            strip(Vec3::ZERO, qa, size, (0.1, 1.0)),
            strip(Vec3::new(0.004, 0.01, 0.001), qb, size, (0.1, 1.0)),
        );
        assert!(blades_cross(&a, &b, (3, 3)));
        // Moved apart along the first's normal, they do not.
        let c = strip(Vec3::new(0.004, 0.01, 0.03), qb, size, (0.1, 1.0));
        assert!(!blades_cross(&a, &c, (3, 3)));
        // Parallel blades never cross (they may touch in a plane; the gap tells that).
        assert!(!blades_cross(&a, &strip(Vec3::Z * 0.01, qa, size, (0.1, 1.0)), (3, 3)));
    }
}
