//! Gravity and the wind's drag on a piece of debris: the velocity update before contacts.
//!
//! Drag is the trees' own (the forest's linear coefficients, Weber's f = l·r·(d·w)), on the
//! velocity of the air relative to the wood, u = w − (v + ω×r), at every segment's centre
//! (bark: `forest.seg.drag − forest.seg.leaf_drag`, on u's part across the segment's axis, see
//! `weber::kernels::across_axis`) and at every leaf (the segment's `leaf_drag` shared equally
//! by its leaves, on the whole u). Each force acts where it is taken, so it turns the piece too.
//!
//! Invariant: the update is linearly implicit in the drag (Baraff & Witkin 1998, "Large steps
//! in cloth simulation", §4.1, applied to the six velocities of a rigid body): with D = −∂F/∂V
//! (symmetric, positive semi-definite, 6×6), (M + dt·D)·ΔV = dt·(F(V) + m·g). A light leafy
//! twig's drag rate c/m can exceed 2/dt, where an explicit step would reverse the relative
//! velocity and grow; the implicit step shrinks every mode of the relative velocity by
//! 1/(1 + dt·λ), so it can never reverse it in one step, however light the piece.

use glam::{DMat3, DVec3, Vec3};

use crate::forest::Forest;
use crate::material::Material;
use crate::wind::WindField;

use super::body::Piece;

/// Factor on the linear drag coefficient at relative speed `speed` \[m/s\] (across the axis for
/// bark, `leaf` false; the whole speed for leaves): 1 for the linear law the forest's
/// coefficients express. The one place a speed-dependent law (quadratic drag, leaves that
/// streamline) enters the debris's drag.
#[inline(always)]
fn drag_scale(_material: &Material, _speed: f32, _leaf: bool) -> f32 {
    1.0
}

/// Scratch for one piece's drag: the points where the wind is sampled and the wind there.
#[derive(Default, Debug, Clone)]
pub(super) struct DragScratch {
    points: Vec<Vec3>,
    wind: Vec<Vec3>,
}

impl DragScratch {
    pub fn heap_bytes(&self) -> usize {
        crate::dynamics::vec_bytes(&self.points) + crate::dynamics::vec_bytes(&self.wind)
    }
}

/// The part of the relative wind `w` across a segment of unit axis `a`: w − (w·a)·a, as
/// Weber's model takes it (`weber::kernels::across_axis`): a cylinder's pressure drag comes from
/// the flow across it; the flow along it only rubs the bark, about a hundredth as much.
#[inline(always)]
fn across_axis(w: Vec3, a: Vec3) -> Vec3 {
    w - a * w.dot(a)
}

/// Symmetric 6×6 accumulator in f64 (row-major, full).
pub(super) type M6 = [[f64; 6]; 6];

/// Adds c·g·gᵀ to `d`.
#[inline(always)]
fn add_outer(d: &mut M6, c: f64, g: &[f64; 6]) {
    for r in 0..6 {
        let cg = c * g[r];
        for k in 0..6 {
            d[r][k] += cg * g[k];
        }
    }
}

/// Solves the symmetric positive-definite system a·x = b by Cholesky.
fn cholesky_solve(mut a: M6, b: [f64; 6]) -> Option<[f64; 6]> {
    for j in 0..6 {
        let mut s = a[j][j];
        for k in 0..j {
            s -= a[j][k] * a[j][k];
        }
        if s.is_nan() || s <= 0.0 {
            return None;
        }
        let d = s.sqrt();
        a[j][j] = d;
        for i in j + 1..6 {
            let mut s = a[i][j];
            for k in 0..j {
                s -= a[i][k] * a[j][k];
            }
            a[i][j] = s / d;
        }
    }
    let mut y = [0.0; 6];
    for i in 0..6 {
        let mut s = b[i];
        for k in 0..i {
            s -= a[i][k] * y[k];
        }
        y[i] = s / a[i][i];
    }
    let mut x = [0.0; 6];
    for i in (0..6).rev() {
        let mut s = y[i];
        for k in i + 1..6 {
            s -= a[k][i] * x[k];
        }
        x[i] = s / a[i][i];
    }
    Some(x)
}

/// Cross-product matrix: skew(r)·x = r × x.
fn skew(r: DVec3) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(0.0, r.z, -r.y),
        DVec3::new(-r.z, 0.0, r.x),
        DVec3::new(r.y, -r.x, 0.0),
    )
}

/// The wind's drag on the piece at its current velocity: (force, torque about the centre of
/// mass, D = −∂(force, torque)/∂(v, ω), 6×6 symmetric with the drag scales held).
pub(super) fn drag(p: &Piece, forest: &Forest, wind: &dyn WindField, s: &mut DragScratch) -> (DVec3, DVec3, M6) {
    let omega = p.omega();
    let n = p.segs.len();
    let nl = p.leaf_pos.len();
    // Sample points: segment centres, then leaves.
    s.points.clear();
    s.points.reserve(n + nl);
    for (k, &i) in p.segs.iter().enumerate() {
        let half = Vec3::new(0.0, 0.5 * forest.seg.length[i as usize], 0.0);
        s.points.push(p.x + p.q * (p.base[k] + p.orient[k] * half));
    }
    for &lp in &p.leaf_pos {
        s.points.push(p.x + p.q * lp);
    }
    s.wind.resize(s.points.len(), Vec3::ZERO);
    wind.sample_into(&s.points, &mut s.wind);

    // Force and torque about the centre of mass at the current velocity, and D = Σ c·JᵀP·J
    // with J = [1, −skew(r)] (the point's velocity v − r×ω... = v + ω×r) and P the projector
    // the drag acts through (1 for leaves, 1 − a·aᵀ for bark). Σ c·JᵀJ needs only Σc, Σc·r and
    // Σc·r·rᵀ; the bark's −c·(Ja)(Ja)ᵀ terms, Jᵀa = (a, r×a), are added one by one.
    let material = &forest.material;
    let mut force = DVec3::ZERO;
    let mut torque = DVec3::ZERO;
    let mut c0 = 0.0f64;
    let mut c1 = DVec3::ZERO;
    let mut c2 = DMat3::ZERO;
    let mut d = [[0.0f64; 6]; 6];
    let mut lk = 0;
    for (k, &i) in p.segs.iter().enumerate() {
        let i = i as usize;
        let r = s.points[k] - p.x;
        let u = s.wind[k] - (p.v + omega.cross(r));
        let a = p.q * (p.orient[k] * Vec3::Y);
        let leaf_c = forest.seg.leaf_drag[i];
        let bark_c = (forest.seg.drag[i] - leaf_c).max(0.0);
        if bark_c > 0.0 {
            let across = across_axis(u, a);
            let c = (bark_c * drag_scale(material, across.length(), false)) as f64;
            let f = across.as_dvec3() * c;
            let rd = r.as_dvec3();
            force += f;
            torque += rd.cross(f);
            c0 += c;
            c1 += rd * c;
            c2 += DMat3::from_cols(rd * rd.x, rd * rd.y, rd * rd.z) * c;
            let ad = a.as_dvec3();
            let ra = rd.cross(ad);
            add_outer(&mut d, -c, &[ad.x, ad.y, ad.z, ra.x, ra.y, ra.z]);
        }
        let leaves = forest.leaves_of(i);
        if leaf_c > 0.0 && !leaves.is_empty() {
            let share = leaf_c / leaves.len() as f32;
            for _ in leaves {
                let r = s.points[n + lk] - p.x;
                let u = s.wind[n + lk] - (p.v + omega.cross(r));
                let c = (share * drag_scale(material, u.length(), true)) as f64;
                let f = u.as_dvec3() * c;
                let rd = r.as_dvec3();
                force += f;
                torque += rd.cross(f);
                c0 += c;
                c1 += rd * c;
                c2 += DMat3::from_cols(rd * rd.x, rd * rd.y, rd * rd.z) * c;
                lk += 1;
            }
        } else {
            lk += leaves.len();
        }
    }
    // Σ c·JᵀJ = [[Σc·1, −skew(Σc·r)], [skew(Σc·r), Σc·(|r|²·1 − r·rᵀ)]].
    let sk = skew(c1);
    let rr = DMat3::from_diagonal(DVec3::splat(c2.x_axis.x + c2.y_axis.y + c2.z_axis.z)) - c2;
    for r in 0..3 {
        for k in 0..3 {
            // DMat3 is column-major: col(k)[r] is row r.
            d[r][k] += if r == k { c0 } else { 0.0 };
            d[r][3 + k] -= sk.col(k)[r];
            d[3 + r][k] += sk.col(k)[r];
            d[3 + r][3 + k] += rr.col(k)[r];
        }
    }
    (force, torque, d)
}

/// Advances the piece's velocity and angular momentum by gravity (`gravity` \[m/s²\], down
/// −y) and the wind's drag over `dt` (see the module header).
pub(super) fn apply_forces(
    p: &mut Piece,
    forest: &Forest,
    wind: &dyn WindField,
    gravity: f32,
    dt: f32,
    s: &mut DragScratch,
) {
    let (mut force, torque, d) = drag(p, forest, wind, s);
    let iw = p.inertia_world().as_dmat3();
    let m = p.mass as f64;
    let h = dt as f64;
    let mut a = [[0.0f64; 6]; 6];
    for r in 0..6 {
        for k in 0..6 {
            a[r][k] = h * d[r][k];
        }
    }
    for r in 0..3 {
        a[r][r] += m;
        for k in 0..3 {
            a[3 + r][3 + k] += iw.col(k)[r];
        }
    }
    force.y -= m * gravity as f64;
    let b = [
        h * force.x,
        h * force.y,
        h * force.z,
        h * torque.x,
        h * torque.y,
        h * torque.z,
    ];
    // M + dt·D is positive definite for a body of positive mass and inertia: only a state
    // that is no longer finite makes the factorisation fail, and the NaN it then leaves shows
    // in `Debris::finite`.
    let dv = cholesky_solve(a, b).unwrap_or([f64::NAN; 6]);
    p.v += Vec3::new(dv[0] as f32, dv[1] as f32, dv[2] as f32);
    let dw = DVec3::new(dv[3], dv[4], dv[5]);
    p.l += (iw * dw).as_vec3();
}
