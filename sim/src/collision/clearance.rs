//! A leaf's blade against the twig it hangs from, for a model whose leaves turn on their own
//! about their attachments (Chen 2011 §4.1). A leaf's root part (`Topology::leaf_root`) is the
//! stretch of its blade inside its twig in the shape it grew in, so the blade beyond it
//! leaves the twig at the twig's surface, with no clearance: a blade turned about its
//! mid-venation by the wind (its face to the wind, Eq. 4.4) swings its edge into the twig,
//! and a response spring (Eq. 5.1) holds the wind's load only by letting the blade press in.
//! The contact of a blade with its own twig is therefore held as the models hold their
//! contacts with the ground: a leaf whose blade, beyond its root part, has come nearer its
//! twig's axis than its clearance is turned about its attachment until it is out, and its
//! turn into the twig stopped.
//!
//! The twig is a cylinder about its axis through the attachment (a leaf hangs from its twig's
//! axis), of the twig's larger end radius widened by `connect::MARGIN` (as the root part is
//! found), or less where the leaf grew nearer than that: the clearance never moves a leaf in
//! the shape it grew in. The blade is its mid-venation and its outline (`leaf_half_width`),
//! sampled along its length beyond the root part; at each sample the nearest point to the
//! axis across the blade is found exactly (a point on a line segment nearest a line).
//!
//! Invariant: a leaf in the shape it grew in is within its clearance and is never moved.

use std::cmp::Ordering;

use glam::{Quat, Vec3};

use super::connect::MARGIN;
use super::primitives::leaf_half_width;
use crate::dynamics::pose::segment_axis;
use crate::forest::{unpack_quat, Forest};

/// Points along the blade beyond its root part at which it is held off its twig.
const SAMPLES: u32 = 12;
/// Rounds of the contact per step: each turns the blade out at its deepest point.
pub const ROUNDS: usize = 3;

/// One leaf's blade and twig as the contact reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TwigClearance {
    /// The fraction of the blade, from the attachment, inside the twig (its root part).
    pub root: f32,
    /// The blade's length and width \[m\].
    pub length: f32,
    pub width: f32,
    /// How near the twig's axis the blade beyond its root part may come \[m\].
    pub radius: f32,
}

impl TwigClearance {
    /// The point of the blade beyond its root part nearest the axis `axis` (a unit vector
    /// through the attachment) when the blade's mid-venation is `along` and its width `across`
    /// (unit vectors): its offset from the attachment and its distance from the axis.
    fn nearest(&self, axis: Vec3, along: Vec3, across: Vec3) -> (Vec3, f32) {
        let perp = |v: Vec3| v - axis * v.dot(axis);
        let (b, c) = (perp(along * self.length), perp(across * self.width));
        let mut best = (Vec3::ZERO, f32::INFINITY);
        for k in 0..=SAMPLES {
            let s = self.root + (1.0 - self.root) * k as f32 / SAMPLES as f32;
            let h = leaf_half_width(s);
            // The point at s·b + σ·h·c (σ in [-1, 1]) nearest the axis.
            let (u, v) = (b * s, c * h);
            let vv = v.length_squared();
            let sigma = if vv > 0.0 {
                (-u.dot(v) / vv).clamp(-1.0, 1.0)
            } else {
                0.0
            };
            let d = (u + v * sigma).length();
            if d < best.1 {
                best = (along * (self.length * s) + across * (self.width * h * sigma), d);
            }
        }
        best
    }

    /// Turns leaf orientation `q` (mid-venation `segment_axis(q)`, width along `q·x`) about its
    /// attachment until its blade beyond the root part is at least `radius` from the twig's
    /// axis `axis` (a unit vector), in [`ROUNDS`] rounds, each turning the deepest point
    /// straight out by the least turn; drops from the angular velocity `omega` each turn back
    /// in. A leaf out of its twig is returned as it is.
    pub fn hold(&self, q: Quat, omega: Vec3, axis: Vec3) -> (Quat, Vec3) {
        let (mut q, mut omega) = (q, omega);
        for _ in 0..ROUNDS {
            let (p, d) = self.nearest(axis, segment_axis(q), q * Vec3::X);
            // A NaN distance (a non-finite leaf) is no contact: left as it is.
            if d.partial_cmp(&self.radius) != Some(Ordering::Less) {
                break;
            }
            let radial = p - axis * p.dot(axis);
            let out = radial.try_normalize().unwrap_or_else(|| axis.any_orthonormal_vector());
            // The least turn ω moving p out by the depth: (ω × p)·out = depth.
            let lever = p.cross(out);
            let ll = lever.length_squared();
            if ll.partial_cmp(&1e-12) != Some(Ordering::Greater) {
                break;
            }
            let turn = lever * ((self.radius - d) / ll);
            q = (Quat::from_scaled_axis(turn) * q).normalize();
            let unit = lever / ll.sqrt();
            let w = omega.dot(unit);
            if w < 0.0 {
                omega -= unit * w;
            }
        }
        (q, omega)
    }
}

/// Per leaf of `forest`: its clearance from its own twig (see the module header); `roots`:
/// each leaf's root part as a fraction of its blade (`SelfCollision::leaf_roots`).
pub fn twig_clearances(forest: &Forest, roots: &[f32]) -> Vec<TwigClearance> {
    let mut out = vec![TwigClearance::default(); forest.leaf_count()];
    for tree in &forest.trees {
        for i in tree.segments.clone() {
            let i = i as usize;
            let r = forest.seg.radius_base[i].max(forest.seg.radius_tip[i]) * MARGIN;
            for j in forest.leaves_of(i) {
                let length = forest.leaf.length_m(j);
                let mut c = TwigClearance {
                    root: roots.get(j).copied().unwrap_or(0.0).clamp(0.0, 1.0),
                    length,
                    width: tree.leaf_aspect * length,
                    radius: 0.0,
                };
                // In the twig's frame its axis is y; the leaf as it grew.
                let rest = unpack_quat(forest.leaf.rest[j]);
                let grew = c.nearest(Vec3::Y, segment_axis(rest), rest * Vec3::X).1;
                c.radius = if grew.is_finite() { r.min(grew) } else { 0.0 };
                out[j] = c;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leaf on a twig along y, 10 cm long and 5 cm wide, its first fifth inside the twig.
    fn leaf() -> TwigClearance {
        TwigClearance {
            root: 0.2,
            length: 0.1,
            width: 0.05,
            radius: 0.008,
        }
    }

    /// The blade's nearest point to the axis, measured by sampling the blade densely.
    fn dense_nearest(c: &TwigClearance, q: Quat) -> f32 {
        let (b, x) = (segment_axis(q), q * Vec3::X);
        let mut best = f32::INFINITY;
        for k in 0..=400 {
            let s = c.root + (1.0 - c.root) * k as f32 / 400.0;
            let h = leaf_half_width(s) * c.width;
            for m in 0..=40 {
                let sigma = -1.0 + 2.0 * m as f32 / 40.0;
                let p = b * (s * c.length) + x * (h * sigma);
                best = best.min((p - Vec3::Y * p.y).length());
            }
        }
        best
    }

    /// A blade turned about its mid-venation until its edge is inside the twig is turned out
    /// to the clearance, by a small turn; one clear of it is untouched; the turn back in is
    /// dropped from the angular velocity and the rest of it kept.
    #[test]
    fn a_blade_in_its_twig_is_turned_out_to_its_clearance() {
        let c = leaf();
        // Mid-venation 0.5 rad off the twig's axis, the blade's width in the plane of the axis
        // and the mid-venation (its edge toward the axis): inside.
        let tilt = Quat::from_rotation_z(-0.5);
        let q = tilt;
        let before = dense_nearest(&c, q);
        assert!(before < c.radius, "{before}");
        let omega = Vec3::new(0.3, -2.0, 1.0);
        let (q1, w1) = c.hold(q, omega, Vec3::Y);
        let after = dense_nearest(&c, q1);
        assert!(after > c.radius * 0.97, "{before} -> {after}");
        assert!(q.angle_between(q1) < 0.5, "a small turn");
        assert!(w1.length() <= omega.length() + 1e-6 && w1 != omega);
        // The same leaf turned a quarter about its mid-venation, its width across that plane,
        // is clear: untouched.
        let clear = tilt * Quat::from_rotation_y(std::f32::consts::FRAC_PI_2);
        assert!(dense_nearest(&c, clear) > c.radius);
        assert_eq!(c.hold(clear, omega, Vec3::Y), (clear, omega));
        // A non-finite leaf is left as it is.
        let nan = Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0);
        assert!(c.hold(nan, omega, Vec3::Y).0.x.is_nan());
    }

    /// The sampled nearest point is the blade's, to within the sampling's step.
    #[test]
    fn the_nearest_point_matches_a_dense_search() {
        let c = leaf();
        for (tilt, twist) in [(0.3f32, 0.0f32), (0.5, 1.0), (1.2, 1.5), (2.5, 0.7), (0.8, -1.2)] {
            let q = Quat::from_rotation_z(-tilt) * Quat::from_rotation_y(twist);
            let (p, d) = c.nearest(Vec3::Y, segment_axis(q), q * Vec3::X);
            let dense = dense_nearest(&c, q);
            assert!(
                d >= dense - 1e-5 && d <= dense + 0.004,
                "{tilt} {twist}: {d} vs {dense}"
            );
            assert!(((p - Vec3::Y * p.y).length() - d).abs() < 1e-5);
        }
    }
}
