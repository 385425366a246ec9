//! Two pieces of a tree as flat strips, and their nearest points: a stem's centreline, or a
//! leaf's blade as its mid-venation and its outline (`leaf_half_width`), the convex polygon
//! `primitives::blade`'s triangles cover. Where a leaf meets another piece, the gap between
//! the two as strips, and the line between their nearest points (on a blade's face, its
//! normal), are what turn it away or hold it off (`runtime`).
//!
//! The nearest points are those of the two convex hulls (`gjk`): exact for the polygons, at
//! any angle between them. (Alternating projections between the two, which this replaced,
//! close in on two nearly parallel strips too slowly and stop on an approximate projection
//! across a tapering outline: a leaf's blade 0.2 mm from a branch's axis was measured 18 mm
//! off. In the gale of `tests/tests/self_collision.rs` Manavi's model kept 130
//! interpenetrating pair-steps with them against 45 with the hulls', Chen's 156 against 151;
//! over four gusts' seeds 478 against 210 and 693 against 585. They cost less: on a
//! treeE-sized tree in a 10 m/s wind the response took 16.5 ms a step in Manavi's model and
//! 17.5 in Chen's, against 32 and 44 to 47 with the hulls.)

use glam::Vec3;

use super::gjk::hulls_closest;
use super::modelling::LEAF_JOINTS;
use super::primitives::leaf_half_width;

/// A piece as a flat strip: a stem's centreline (`across` zero), or a leaf's blade, its
/// mid-venation from `base` (the fraction `t0` of its length) along `along` (to the fraction
/// `t0 + dt`) and `across` the vector from the mid-venation to the outline at half-width 1.
/// `inv_across` is the reciprocal of `across`'s squared length (0 for a stem).
#[derive(Clone, Copy, Debug)]
pub struct Strip {
    base: Vec3,
    along: Vec3,
    across: Vec3,
    inv_across: f32,
    t0: f32,
    dt: f32,
    /// The venation joints of its outline ([`Strip::outline`]).
    joints: u32,
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
            inv_across: inv(across),
            t0,
            dt: t1 - t0,
            joints: LEAF_JOINTS,
        }
    }

    /// The strip with its outline at `joints` venation joints (`LEAF_JOINTS` unless set).
    pub fn with_joints(mut self, joints: u32) -> Strip {
        self.joints = joints;
        self
    }
}

/// The nearest points of two strips (the first's, the second's): of the convex hulls of their
/// outlines (a stem's: its centreline's ends), by GJK. Two strips that cross give two points of
/// the crossing.
pub fn strips_closest(a: &Strip, b: &Strip) -> (Vec3, Vec3) {
    // Started along the line between the centrelines' middles.
    let toward = (a.base + a.along * 0.5) - (b.base + b.along * 0.5);
    strips_closest_from(a, b, toward)
}

/// [`strips_closest`], the search started along `toward` (a guess of the way from the second
/// to the first: the line between their centrelines' nearest points is a good one).
pub fn strips_closest_from(a: &Strip, b: &Strip, toward: Vec3) -> (Vec3, Vec3) {
    let ((pa, na), (pb, nb)) = (a.points(), b.points());
    let (x, y, _) = hulls_closest(&pa[..na], &pb[..nb], toward);
    (x, y)
}

/// Most venation joints of a blade's outline ([`Strip::with_joints`]; more are taken as this).
const MOST_JOINTS: usize = 7;

impl Strip {
    /// The points whose convex hull the strip is: its outline ([`outline`](Self::outline)),
    /// or a stem's centreline's two ends.
    fn points(&self) -> ([Vec3; 2 * (MOST_JOINTS + 1)], usize) {
        if self.inv_across > 0.0 {
            self.outline(self.joints)
        } else {
            let mut out = [Vec3::ZERO; 2 * (MOST_JOINTS + 1)];
            out[0] = self.base;
            out[1] = self.base + self.along;
            (out, 2)
        }
    }

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

#[cfg(test)]
mod tests {
    use glam::Quat;

    use super::*;
    use crate::collision::primitives::blade;
    use crate::collision::tritri::triangles_intersect;
    use crate::rng::Rng;

    /// A blade of `primitives::blade` as a strip.
    fn strip(attach: Vec3, q: Quat, (length, width): (f32, f32), (v0, v1): (f32, f32), joints: u32) -> Strip {
        let along = q * Vec3::Y * length;
        Strip::new(
            [attach + along * v0, attach + along * v1],
            q * Vec3::X * width,
            (v0, v1),
        )
        .with_joints(joints)
    }

    /// Over random pairs of blades near one another, many of them nearly parallel (stacked
    /// leaves), the strips' nearest points coincide exactly when a test of every pair of their
    /// triangles finds them through each other; apart, the gap is no more than the least
    /// distance between points sampled on both blades.
    #[test]
    fn strips_meet_as_their_triangles_do() {
        let mut rng = Rng::new(17);
        let (mut crossing, mut shallow, mut touching) = (0, 0, 0);
        for n in 0..3000 {
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
            let (x, y) = strips_closest(&strip(a0, qa, size, pa, ja), &strip(b0, qb, other, pb, jb));
            let gap = x.distance(y);
            if exact != (gap < 1e-5) {
                // Blades that only touch, to rounding.
                assert!(gap < 1e-4, "pair {n}: {gap}, triangles {exact}");
                touching += 1;
            }
            if !exact {
                let sampled = ta
                    .iter()
                    .flat_map(|t| t.iter())
                    .flat_map(|p| tb.iter().flat_map(|t| t.iter()).map(move |q| p.distance(*q)))
                    .fold(f32::INFINITY, f32::min);
                assert!(gap <= sampled + 1e-5, "pair {n}: {gap} against {sampled}");
            }
            crossing += exact as usize;
            shallow += (exact && n % 2 == 0) as usize;
        }
        assert!(touching <= 3, "{touching}");
        assert!(
            crossing > 150 && shallow > 50,
            "{crossing} crossing, {shallow} nearly parallel"
        );
    }

    /// Two nearly parallel blades through each other meet; moved apart along the first's
    /// normal they are that far apart, the line between their nearest points along it; a
    /// stem's axis above a blade's face is its height above it, and through the blade it meets.
    #[test]
    fn nearly_parallel_blades_and_a_stem_over_a_blade() {
        let size = (0.15, 0.08);
        let (qa, qb) = (Quat::IDENTITY, Quat::from_rotation_y(0.1));
        let a = strip(Vec3::ZERO, qa, size, (0.1, 1.0), 3);
        let b = strip(Vec3::new(0.004, 0.01, 0.001), qb, size, (0.1, 1.0), 3);
        let (x, y) = strips_closest(&a, &b);
        assert!(x.distance(y) < 1e-5, "{}", x.distance(y));
        let c = strip(Vec3::new(0.0, 0.0, 0.03), qa, size, (0.1, 1.0), 3);
        let (x, y) = strips_closest(&a, &c);
        assert!((x.distance(y) - 0.03).abs() < 1e-5 && (y - x).normalize().z > 0.9999);
        // A stem along x, 1 cm above the blade's face (the blade lies in z = 0 along +y).
        let stem = Strip::new(
            [Vec3::new(-0.1, 0.08, 0.01), Vec3::new(0.1, 0.08, 0.01)],
            Vec3::ZERO,
            (0.0, 1.0),
        );
        let (x, y) = strips_closest(&a, &stem);
        assert!((x.distance(y) - 0.01).abs() < 1e-5, "{}", x.distance(y));
        let through = Strip::new(
            [Vec3::new(0.0, 0.08, -0.1), Vec3::new(0.0, 0.08, 0.1)],
            Vec3::ZERO,
            (0.0, 1.0),
        );
        let (x, y) = strips_closest(&a, &through);
        assert!(x.distance(y) < 1e-5);
    }
}
