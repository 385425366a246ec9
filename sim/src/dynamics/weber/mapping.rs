//! Weber 2008's mapping from the two separable solver angles to a 3D rotation (Eqs. 3 and 4),
//! applied to the angles of a segment *relative to its parent* ("The spatial model").
//!
//! For relative angles (x, z) = (Θx, Θz) the rotation has angle w = sqrt(x² + z²) (Eq. 3) about
//! the axis (z, 0, -x) (Eq. 4). It maps the parent's +y axis to the child's axis
//!
//! ```text
//! u(x, z) = (x·S(w), cos w, z·S(w)),   S(w) = sin(w)/w
//! ```
//!
//! so a positive Θx alone tilts the child into +x (the x-y plane) and a positive Θz alone into +z
//! (the y-z plane), as the paper's Figure 3 describes. The paper obtains the two correction
//! direction vectors by evaluating the mapping three times (finite differences); here they are
//! the closed-form partial derivatives
//!
//! ```text
//! ∂u/∂x = (S + x²G, -x·S, x·z·G),   ∂u/∂z = (x·z·G, -z·S, S + z²G),   G(w) = (cos w - S(w)) / w²
//! ```
//!
//! Everything is evaluated from sin and cos of the half angle, with polynomials that are exact
//! to f32 precision for w ≤ π (relative angles between a segment and its parent beyond π are
//! outside the model's range; they still evaluate correctly through the standard library).

use glam::{Quat, Vec3};

/// The relative rotation of a segment and its unit axis and axis derivatives, all expressed in
/// the parent's frame.
#[derive(Clone, Copy, Debug)]
pub struct Bend {
    /// Rotation from the parent's frame to the child's.
    pub rotation: Quat,
    /// The child's unit axis u = rotation · (0, 1, 0).
    pub axis: Vec3,
    /// ∂u/∂Θx.
    pub d_dx: Vec3,
    /// ∂u/∂Θz.
    pub d_dz: Vec3,
}

/// sin(w/2)/w and cos(w/2), by Taylor polynomials in a = w/2 (truncation error below 4e-8 for
/// w ≤ π, i.e. a ≤ π/2).
#[inline(always)]
fn half_angle(w: f32) -> (f32, f32) {
    if w > std::f32::consts::PI {
        let (s, c) = (0.5 * w).sin_cos();
        return (s / w, c);
    }
    half_angle_poly(w)
}

/// [`half_angle`]'s polynomials alone (no branch, so many lanes evaluate together).
#[inline(always)]
fn half_angle_poly(w: f32) -> (f32, f32) {
    let a2 = 0.25 * w * w;
    // sin(a)/a = 1 - a²/3! + a⁴/5! - ... ; sin(a)/w = 0.5 · sin(a)/a.
    let sinc = 1.0
        + a2 * (-1.0 / 6.0
            + a2 * (1.0 / 120.0
                + a2 * (-1.0 / 5040.0
                    + a2 * (1.0 / 362_880.0 + a2 * (-1.0 / 39_916_800.0 + a2 * (1.0 / 6_227_020_800.0))))));
    let cos = 1.0
        + a2 * (-0.5
            + a2 * (1.0 / 24.0
                + a2 * (-1.0 / 720.0
                    + a2 * (1.0 / 40_320.0
                        + a2 * (-1.0 / 3_628_800.0 + a2 * (1.0 / 479_001_600.0 + a2 * (-1.0 / 87_178_291_200.0)))))));
    (0.5 * sinc, cos)
}

/// The costly scalars of a bend: sin(w/2)/w, cos(w/2), sin(w)/w, cos(w) and G(w). Everything
/// else in [`Bend`] is a few products of these with the angles.
#[derive(Clone, Copy, Debug, Default)]
pub struct BendScalars {
    hs: f32,
    c: f32,
    s: f32,
    cos_w: f32,
    g: f32,
}

/// G(w) = (cos w - S)/w²; its series near zero avoids cancellation.
#[inline(always)]
fn g_of(w: f32, w2: f32, cos_w: f32, s: f32) -> f32 {
    if w < 0.5 {
        -1.0 / 3.0 + w2 * (1.0 / 30.0 + w2 * (-1.0 / 840.0 + w2 * (1.0 / 45_360.0 + w2 * (-1.0 / 3_991_680.0))))
    } else {
        (cos_w - s) / w2
    }
}

/// The scalars from the half angle's sine-over-w `hs` and cosine `c`.
#[inline(always)]
fn scalars_from(w: f32, w2: f32, hs: f32, c: f32) -> BendScalars {
    // sin w / w = 2 sin(w/2) cos(w/2) / w, cos w = 1 - 2 sin²(w/2).
    let s = 2.0 * hs * c;
    let sin_half = hs * w;
    let cos_w = 1.0 - 2.0 * sin_half * sin_half;
    BendScalars {
        hs,
        c,
        s,
        cos_w,
        g: g_of(w, w2, cos_w, s),
    }
}

#[inline(always)]
fn scalars(x: f32, z: f32) -> BendScalars {
    let w2 = x * x + z * z;
    let w = w2.sqrt();
    let (hs, c) = half_angle(w);
    scalars_from(w, w2, hs, c)
}

/// The bend from its scalars.
#[inline(always)]
fn assemble(x: f32, z: f32, k: BendScalars) -> Bend {
    let BendScalars { hs, c, s, cos_w, g } = k;
    let xz_g = x * z * g;
    Bend {
        rotation: Quat::from_xyzw(z * hs, 0.0, -x * hs, c),
        axis: Vec3::new(x * s, cos_w, z * s),
        d_dx: Vec3::new(s + x * x * g, -x * s, xz_g),
        d_dz: Vec3::new(xz_g, -z * s, s + z * z * g),
    }
}

/// A bend in the form the pose consumes: the rotation, the angles and the scalars S = sin(w)/w,
/// cos w and G(w). The axis and its derivatives of the module header regroup as
///
/// ```text
/// u = (x·S, cos w, z·S),   ∂u/∂x = S·e_x + x·v,   ∂u/∂z = S·e_z + z·v,   v = (x·G, -S, z·G)
/// ```
///
/// so that rotated into the parent's frame they cost a few vector products of its axes (see
/// `kernels::pose_one`) instead of three full rotations of the assembled [`Bend`].
#[derive(Clone, Copy, Debug)]
pub struct BendParts {
    /// Rotation from the parent's frame to the child's.
    pub rotation: Quat,
    pub x: f32,
    pub z: f32,
    /// S = sin(w)/w.
    pub s: f32,
    pub cos_w: f32,
    /// G(w) = (cos w - S)/w².
    pub g: f32,
}

#[inline(always)]
fn parts(x: f32, z: f32, k: BendScalars) -> BendParts {
    let BendScalars { hs, c, s, cos_w, g } = k;
    BendParts {
        rotation: Quat::from_xyzw(z * hs, 0.0, -x * hs, c),
        x,
        z,
        s,
        cos_w,
        g,
    }
}

/// [`bend`] in the form of [`BendParts`].
#[inline(always)]
pub fn bend_parts(x: f32, z: f32) -> BendParts {
    parts(x, z, scalars(x, z))
}

/// Evaluates the mapping for relative angles `x` = Θx and `z` = Θz (radians).
#[inline(always)]
pub fn bend(x: f32, z: f32) -> Bend {
    assemble(x, z, scalars(x, z))
}

/// How many bends [`BendBatch`] evaluates at once (128 costs kinematics about 6 % less than
/// 32: fewer batch set-ups per tree; 256 measures the same as 128).
pub const BATCH: usize = 128;

/// Up to [`BATCH`] bends evaluated together, a structure of arrays so that the compiler runs
/// several lanes per instruction. Invariant: lane k holds exactly the bits of
/// `bend(x[k], z[k])` (the same operations in the same order; the branches of the scalar path
/// become selects, and lanes beyond π take the scalar path itself).
pub struct BendBatch {
    x: [f32; BATCH],
    z: [f32; BATCH],
    k: [BendScalars; BATCH],
}

impl Default for BendBatch {
    fn default() -> Self {
        BendBatch {
            x: [0.0; BATCH],
            z: [0.0; BATCH],
            k: [BendScalars::default(); BATCH],
        }
    }
}

impl BendBatch {
    /// Evaluates the first `n` lanes (n ≤ [`BATCH`]) for the angles in `x` and `z`.
    #[inline]
    pub fn eval(&mut self, x: &[f32; BATCH], z: &[f32; BATCH], n: usize) {
        self.x = *x;
        self.z = *z;
        let (mut w2, mut w, mut hs, mut c) = ([0f32; BATCH], [0f32; BATCH], [0f32; BATCH], [0f32; BATCH]);
        for l in 0..BATCH {
            w2[l] = x[l] * x[l] + z[l] * z[l];
            w[l] = w2[l].sqrt();
            (hs[l], c[l]) = half_angle_poly(w[l]);
        }
        for l in 0..BATCH {
            self.k[l] = scalars_from(w[l], w2[l], hs[l], c[l]);
        }
        for l in 0..n.min(BATCH) {
            if w[l] > std::f32::consts::PI {
                self.k[l] = scalars(x[l], z[l]);
            }
        }
    }

    /// Lane `l`'s bend.
    #[inline(always)]
    pub fn get(&self, l: usize) -> Bend {
        assemble(self.x[l], self.z[l], self.k[l])
    }

    /// Lane `l`'s bend as [`BendParts`] (the bits of [`bend_parts`]).
    #[inline(always)]
    pub fn parts(&self, l: usize) -> BendParts {
        parts(self.x[l], self.z[l], self.k[l])
    }
}

/// The rotation alone (Eqs. 3 and 4).
#[inline]
pub fn relative_rotation(x: f32, z: f32) -> Quat {
    bend(x, z).rotation
}

/// Inverse of the mapping: the relative angles (Θx, Θz) whose rotation takes the parent's +y
/// axis to the unit direction `dir` (given in the parent's frame). Exact for every direction
/// except straight down, where the axis is undefined and Θx = π is chosen.
pub fn angles_for_direction(dir: Vec3) -> (f32, f32) {
    let dir = dir.normalize_or(Vec3::Y);
    let horizontal = (dir.x * dir.x + dir.z * dir.z).sqrt();
    if horizontal < 1e-12 {
        return if dir.y >= 0.0 {
            (0.0, 0.0)
        } else {
            (std::f32::consts::PI, 0.0)
        };
    }
    let w = horizontal.atan2(dir.y);
    // u = (x S, cos w, z S) with S = sin w / w and sin w = horizontal.
    let scale = w / horizontal;
    (dir.x * scale, dir.z * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Vec3, b: Vec3, tol: f32) -> bool {
        (a - b).length() <= tol
    }

    #[test]
    fn degenerate_planes_follow_the_paper() {
        // Positive Θx alone: a vector in the x-y plane leaning to +x.
        let b = bend(0.3, 0.0);
        assert!(close(b.axis, Vec3::new(0.3f32.sin(), 0.3f32.cos(), 0.0), 1e-6));
        // Positive Θz alone: a vector in the y-z plane leaning to +z.
        let b = bend(0.0, 0.3);
        assert!(close(b.axis, Vec3::new(0.0, 0.3f32.cos(), 0.3f32.sin()), 1e-6));
        // Equal angles: rotation about the line x = -z.
        let b = bend(0.4, 0.4);
        let axis = Vec3::new(b.rotation.x, b.rotation.y, b.rotation.z).normalize();
        assert!(close(axis, Vec3::new(1.0, 0.0, -1.0).normalize(), 1e-6));
        assert!((b.rotation.to_axis_angle().1 - (0.32f32).sqrt()).abs() < 1e-6);
    }

    #[test]
    fn rotation_axis_and_derivatives_are_consistent() {
        let samples = [
            (0.0, 0.0),
            (1e-4, -2e-4),
            (0.2, 0.1),
            (-0.7, 0.45),
            (1.3, -1.1),
            (2.0, 2.0),
            (-0.01, 3.0),
        ];
        for &(x, z) in &samples {
            let b = bend(x, z);
            assert!((b.rotation.length() - 1.0).abs() < 1e-6, "unit quaternion at {x},{z}");
            assert!(
                close(b.rotation * Vec3::Y, b.axis, 2e-6),
                "axis matches rotation at {x},{z}"
            );
            assert!((b.axis.length() - 1.0).abs() < 2e-6);
            // Central differences in f64 of the closed-form axis.
            let u = |x: f64, z: f64| {
                let w = (x * x + z * z).sqrt();
                let s = if w == 0.0 { 1.0 } else { w.sin() / w };
                [x * s, w.cos(), z * s]
            };
            let e = 1e-6;
            let (x64, z64) = (x as f64, z as f64);
            let (p, m) = (u(x64 + e, z64), u(x64 - e, z64));
            let fd_x = Vec3::new(
                ((p[0] - m[0]) / (2.0 * e)) as f32,
                ((p[1] - m[1]) / (2.0 * e)) as f32,
                ((p[2] - m[2]) / (2.0 * e)) as f32,
            );
            let (p, m) = (u(x64, z64 + e), u(x64, z64 - e));
            let fd_z = Vec3::new(
                ((p[0] - m[0]) / (2.0 * e)) as f32,
                ((p[1] - m[1]) / (2.0 * e)) as f32,
                ((p[2] - m[2]) / (2.0 * e)) as f32,
            );
            assert!(close(b.d_dx, fd_x, 2e-5), "d/dx at {x},{z}: {:?} vs {:?}", b.d_dx, fd_x);
            assert!(close(b.d_dz, fd_z, 2e-5), "d/dz at {x},{z}: {:?} vs {:?}", b.d_dz, fd_z);
        }
    }

    #[test]
    fn batches_give_the_bits_of_one_at_a_time() {
        let mut rng = crate::rng::Rng::new(5);
        // Small and large angles, both branches of G, beyond π (the scalar path), zero, NaN,
        // and a short last batch.
        let mut angles: Vec<(f32, f32)> = (0..70).map(|_| (rng.sym(0.6), rng.sym(0.6))).collect();
        angles.extend((0..20).map(|_| (rng.sym(4.0), rng.sym(4.0))));
        angles.extend([(0.0, 0.0), (3.2, 0.1), (-0.3, 0.35), (f32::NAN, 0.2), (1e-20, -1e-20)]);
        let bits = |b: Bend| {
            let q = b.rotation.to_array();
            [
                q[0], q[1], q[2], q[3], b.axis.x, b.axis.y, b.axis.z, b.d_dx.x, b.d_dx.y, b.d_dx.z, b.d_dz.x, b.d_dz.y,
                b.d_dz.z,
            ]
            .map(f32::to_bits)
        };
        in_batches(&angles, |batch, l, a, b| {
            assert_eq!(bits(batch.get(l)), bits(bend(a, b)), "lane {l} at ({a}, {b})");
        });
    }

    /// Evaluates `angles` (x, z) in batches of [`BATCH`], the last one short, and calls `check`
    /// with the batch, the lane and the lane's angles.
    fn in_batches(angles: &[(f32, f32)], mut check: impl FnMut(&BendBatch, usize, f32, f32)) {
        let mut batch = BendBatch::default();
        for chunk in angles.chunks(BATCH) {
            let (mut x, mut z) = ([0f32; BATCH], [0f32; BATCH]);
            for (l, &(a, b)) in chunk.iter().enumerate() {
                x[l] = a;
                z[l] = b;
            }
            batch.eval(&x, &z, chunk.len());
            for (l, &(a, b)) in chunk.iter().enumerate() {
                check(&batch, l, a, b);
            }
        }
    }

    /// The regrouped axis and derivatives of [`BendParts`] are those of [`Bend`], and the
    /// batch's parts have the bits of the one-at-a-time parts.
    #[test]
    fn parts_regroup_the_axis_and_its_derivatives() {
        let mut rng = crate::rng::Rng::new(8);
        let mut angles: Vec<(f32, f32)> = (0..40).map(|_| (rng.sym(0.6), rng.sym(0.6))).collect();
        angles.extend((0..20).map(|_| (rng.sym(4.0), rng.sym(4.0))));
        angles.extend([(0.0, 0.0), (0.3, 0.0), (0.0, -0.3), (3.2, 0.1)]);
        in_batches(&angles, |batch, l, a, b| {
            let (p, q) = (bend_parts(a, b), batch.parts(l));
            assert_eq!(
                [p.rotation.to_array(), [p.x, p.z, p.s, p.cos_w]].concat(),
                [q.rotation.to_array(), [q.x, q.z, q.s, q.cos_w]].concat(),
                "lane {l}"
            );
            assert_eq!(p.g.to_bits(), q.g.to_bits());
            let full = bend(a, b);
            let v = Vec3::new(p.x * p.g, -p.s, p.z * p.g);
            let axis = Vec3::new(p.x * p.s, p.cos_w, p.z * p.s);
            let (dx, dz) = (Vec3::X * p.s + v * p.x, Vec3::Z * p.s + v * p.z);
            assert_eq!(p.rotation.to_array(), full.rotation.to_array());
            assert!(close(axis, full.axis, 1e-6), "axis at {a},{b}");
            assert!(close(dx, full.d_dx, 2e-6), "d/dx at {a},{b}: {dx:?} vs {:?}", full.d_dx);
            assert!(close(dz, full.d_dz, 2e-6), "d/dz at {a},{b}: {dz:?} vs {:?}", full.d_dz);
        });
    }

    #[test]
    fn inverse_round_trips() {
        for &(x, z) in &[(0.0f32, 0.0f32), (0.1, -0.2), (1.0, 0.5), (-2.5, 1.0), (0.0, 3.0)] {
            let u = bend(x, z).axis;
            let (x2, z2) = angles_for_direction(u);
            assert!(
                (x - x2).abs() < 1e-5 && (z - z2).abs() < 1e-5,
                "({x},{z}) -> ({x2},{z2})"
            );
        }
        let (x, z) = angles_for_direction(-Vec3::Y);
        assert!(close(bend(x, z).axis, -Vec3::Y, 1e-6));
    }
}
