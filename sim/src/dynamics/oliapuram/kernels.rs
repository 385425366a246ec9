//! The two phases of §3.2 for branch segments, each over a slice of segments in level order:
//! the dynamics phase (forces, Eqs. 13–19, and the angular step, Eqs. 11–12 and 20–21) and the
//! integration phase (world orientation and base, root to tips), and the small pieces of
//! arithmetic the leaves share with them.
//!
//! Frames: as §3.1.2 has it, a segment's deflection θ' (here `phi`), its rate ω and every
//! moment are 3-vectors in the world's (x, y, z) axes. At rest θ' = 0; the segment's world
//! orientation is its rest orientation carried by its parent, `q_parent · rest`, then rotated
//! about the fixed end by |θ'| about θ'/|θ'| (§3.1.2). Because no moment is ever turned into a
//! moving frame, a child's restoration reaches its parent as it is (Eq. 18): the parent's own
//! rotation does not turn the child's pull on it. (Deflections expressed in the parent's
//! frame would: the pull would follow the parent, a follower moment, which with the quadratic
//! damping's vanishing effect at small speeds lets the whole tree flutter without bound.)
//!
//! Every moment is divided by the body's inertia once, when the forest is set up (`Levels`,
//! `Leaves`): the kernels add angular accelerations.
//!
//! Both phases read only what the previous phase or the previous level wrote and write only
//! their own slice, so any split into jobs gives the same bits.

use glam::{Quat, Vec3};

use super::leaves::{step_leaf, Leaves};
use super::levels::Levels;
use crate::dynamics::pose::segment_axis;
use crate::forest::NO_PARENT;

/// Per body, the constants of [`step_body`] for a time step `h`: ω₀² = k/I and the factor
/// 1/(1 + ½·h²·ω₀²).
#[inline]
pub(super) fn spring_constants(k: f32, inertia: f32, h: f32) -> (f32, f32) {
    let w2 = k / inertia;
    (w2, 1.0 / (1.0 + 0.5 * h * h * w2))
}

/// One step of Eqs. 20–21 for a body on a spring of ω₀² = k/I, every other moment held over the
/// step as the angular acceleration `acc` (moment / I): θ' = θ + ω·Δt + ½·α·Δt²,
/// ω' = ω + α·Δt, with the angular acceleration α (Eq. 12) taken at the step's end, the
/// spring's at θ'. Solved in closed form per body: θ'·(1 + ½·Δt²·ω₀²) = θ + ω·Δt + ½·Δt²·acc,
/// `den` being 1/(1 + ½·Δt²·ω₀²) ([`spring_constants`]).
///
/// Why at the step's end. The bodies' natural frequencies ω₀ span from a second to far beyond
/// the step rate (a thin segment's inertia m·l²/3 is tiny next to its k), and each parent is
/// driven by its children's restorations (Eq. 18) through dozens of levels. With α at the
/// step's start, Eq. 20 gains energy every step (its amplification has determinant
/// 1 + (ω₀Δt)²/2). With α the step's mean (the trapezoidal rule), each stiff body rings at the
/// step rate and passes its children's pull on amplified, level after level, until the forest
/// explodes within a second. With α at the step's end, a stiff body settles on its spring's
/// equilibrium within the step and passes a pull on at most as strong as it came; a soft one
/// keeps its period (error about (ω₀Δt)²/9) and loses about ω₀Δt/4 of damping ratio to the
/// scheme.
#[inline(always)]
pub(super) fn step_body<T>(phi: T, omega: T, acc: T, w2: f32, den: f32, h: f32) -> (T, T)
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<f32, Output = T>,
{
    let phi1 = (phi + omega * h + acc * (0.5 * h * h)) * den;
    (phi1, omega + (acc - phi1 * w2) * h)
}

/// Eqs. 16–17 as an angular acceleration: R/I = -(μ/I)·ω·|ω|, its magnitude clamped to |ω|/Δt
/// so that over one step it can stop the motion but never reverse it (`mu_i` = μ/I).
#[inline(always)]
pub(super) fn axial_damping(omega: Vec3, mu_i: f32, h: f32) -> Vec3 {
    omega * -(mu_i * omega.length()).min(1.0 / h)
}

/// The scalar form of [`axial_damping`] (a leaf's one degree of freedom).
#[inline(always)]
pub(super) fn axial_damping_1d(omega: f32, mu_i: f32, h: f32) -> f32 {
    omega * -(mu_i * omega.abs()).min(1.0 / h)
}

/// q · (0, 0, 1), a blade's normal.
#[inline(always)]
pub(super) fn axis_z(q: Quat) -> Vec3 {
    let (x, y, z, w) = (q.x, q.y, q.z, q.w);
    Vec3::new(
        2.0 * (x * z + w * y),
        2.0 * (y * z - w * x),
        1.0 - 2.0 * (x * x + y * y),
    )
}

/// sin(a)/a·½ and cos(a) for a = θ/2 from θ² (a rotation by θ is (axis · sin a, cos a)), by
/// Taylor polynomials in a² (truncation error below 1e-7 for θ ≤ π); beyond π, by the library.
#[inline(always)]
pub(super) fn half_turn(theta2: f32) -> (f32, f32) {
    if theta2 > std::f32::consts::PI * std::f32::consts::PI {
        let theta = theta2.sqrt();
        let (s, c) = (0.5 * theta).sin_cos();
        return (s / theta, c);
    }
    let a2 = 0.25 * theta2;
    let sinc = 1.0
        + a2 * (-1.0 / 6.0
            + a2 * (1.0 / 120.0 + a2 * (-1.0 / 5040.0 + a2 * (1.0 / 362_880.0 + a2 * (-1.0 / 39_916_800.0)))));
    let cos = 1.0
        + a2 * (-0.5
            + a2 * (1.0 / 24.0
                + a2 * (-1.0 / 720.0
                    + a2 * (1.0 / 40_320.0 + a2 * (-1.0 / 3_628_800.0 + a2 * (1.0 / 479_001_600.0))))));
    (0.5 * sinc, cos)
}

/// The rotation by |v| about v/|v| (`Quat::from_scaled_axis` without a square root).
#[inline(always)]
pub(super) fn rotation(v: Vec3) -> Quat {
    let (s, c) = half_turn(v.length_squared());
    Quat::from_xyzw(v.x * s, v.y * s, v.z * s, c)
}

/// `q` brought back to unit length when it is within a few ulps of it (products of unit
/// quaternions): one Newton step for 1/|q|, no square root or division.
#[inline(always)]
pub(super) fn renormalize(q: Quat) -> Quat {
    q * (1.5 - 0.5 * q.length_squared())
}

/// What the dynamics phase reads: whole-forest arrays in level order (segments) and in the
/// model's leaf order (leaves), and the pose of the step's start (a part of it: the pose from
/// forest segment `seg_offset` and forest leaf `leaf_offset` on).
pub(super) struct DynamicsIn<'a> {
    pub levels: &'a Levels,
    pub leaves: &'a Leaves,
    /// Deflection and its rate at the step's start.
    pub phi: &'a [Vec3],
    pub omega: &'a [Vec3],
    /// Every leaf's angle about its hinge and its rate at the step's start.
    pub psi: &'a [f32],
    pub psi_dot: &'a [f32],
    /// World orientation of the segments at the step's start (the pose's, in the forest's
    /// order, from forest segment `seg_offset` on).
    pub orient: &'a [Quat],
    pub seg_offset: usize,
    /// Every leaf's world orientation at the step's start (the pose's, in the forest's leaf
    /// order, from forest leaf `leaf_offset` on).
    pub leaf_orient: &'a [Quat],
    pub leaf_offset: usize,
    pub dt: f32,
}

/// What the dynamics phase writes for a run of segments and their leaves.
pub(super) struct DynamicsOut<'a> {
    /// The first segment (level index) and the first leaf (model leaf index) of the run.
    pub first: usize,
    pub leaf_first: usize,
    pub phi: &'a mut [Vec3],
    pub omega: &'a mut [Vec3],
    pub psi: &'a mut [f32],
    pub psi_dot: &'a mut [f32],
}

/// Dynamics phase for a run of segments (level indices) and their leaves: for each segment,
/// its leaves' steps (`leaves::step_leaf`), then the moment of every force of Eq. 13 about its
/// fixed end and Eqs. 20–21. `wind(v)` is the wind at segment v's centroid (Eq. 14),
/// `leaf_wind(j, f)` at the blade centre of leaf j (model order), f in the forest's leaf order
/// less `leaf_offset`. Returns false if a result is not finite.
pub(super) fn dynamics(
    inp: &DynamicsIn<'_>,
    wind: impl Fn(usize) -> Vec3,
    leaf_wind: impl Fn(usize, usize) -> Vec3,
    out: DynamicsOut<'_>,
) -> bool {
    let (lv, leaves) = (inp.levels, inp.leaves);
    let h = inp.dt;
    let mut finite = true;
    let DynamicsOut {
        first,
        leaf_first,
        phi: out_phi,
        omega: out_omega,
        psi: out_psi,
        psi_dot: out_psi_dot,
    } = out;
    for (k, (phi_out, omega_out)) in out_phi.iter_mut().zip(out_omega.iter_mut()).enumerate() {
        let v = first + k;
        // Eq. 12: N = F × c; the moment about the fixed end O of a force F at c is c × F.
        let body = &lv.body[v];
        let c = segment_axis(inp.orient[lv.order[v] as usize - inp.seg_offset]) * body.centroid;
        // Eq. 14: F_wind = S_f·σ·v at the centroid; and the segment's weight.
        let f = wind(v) * body.wind_gain - Vec3::new(0.0, body.weight_gain, 0.0);
        let mut acc = c.cross(f) - body.weight_rest;
        // Eqs. 18–19: T = -Σ k_i·K_i over the children and leaves, with K_i = k_i·(θ - θ'_i)
        // (Eq. 15) of the step's start (the previous step's restoration forces, §3.2).
        for c in lv.child_start[v] as usize..lv.child_start[v + 1] as usize {
            acc += inp.phi[c] * lv.body[c].propagation;
        }
        let (l0, l1) = (lv.leaf_start[v] as usize, lv.leaf_start[v + 1] as usize);
        let f0 = lv.forest_leaf[v] as usize - inp.leaf_offset;
        for j in l0..l1 {
            let psi = inp.psi[j];
            acc += leaves.body[j].reaction * psi;
            let f = f0 + j - l0;
            let (p, d) = step_leaf(leaves, j, psi, inp.psi_dot[j], inp.leaf_orient[f], leaf_wind(j, f), h);
            finite &= p.is_finite() && d.is_finite();
            out_psi[j - leaf_first] = p;
            out_psi_dot[j - leaf_first] = d;
        }
        let omega = inp.omega[v];
        // Eqs. 16–17.
        acc += axial_damping(omega, body.damping_gain, h);
        // Eqs. 11, 15, 20, 21: the restoration K = -k·θ' is the spring of `step_body`.
        let (phi1, omega1) = step_body(inp.phi[v], omega, acc, body.w2, body.den, h);
        finite &= phi1.is_finite() && omega1.is_finite();
        *phi_out = phi1;
        *omega_out = omega1;
    }
    finite
}

/// The centroid of segment `v` (level index) at its pose `orient`, `base` (where the wind is
/// sampled, Eq. 14).
#[inline(always)]
pub(super) fn centroid(levels: &Levels, v: usize, orient: Quat, base: Vec3) -> Vec3 {
    base + segment_axis(orient) * levels.body[v].centroid
}

/// The centroid of every segment in `first..first + out.len()` (level indices) at the pose
/// `orient`, `base` (the forest's order), into `out`.
pub(super) fn centroids(levels: &Levels, (orient, base): (&[Quat], &[Vec3]), first: usize, out: &mut [Vec3]) {
    for (k, o) in out.iter_mut().enumerate() {
        let v = first + k;
        let f = levels.order[v] as usize;
        *o = centroid(levels, v, orient[f], base[f]);
    }
}

/// Integration phase for the segments `first..first + orient.len()` of one level: each one's
/// world orientation, its rest orientation carried by its parent then turned by θ' about its
/// fixed end (§3.1.2), and its base, its parent's tip. `done_orient` and `done_base` hold every
/// earlier level (parents included).
pub(super) fn integrate(
    levels: &Levels,
    phi: &[Vec3],
    done_orient: &[Quat],
    done_base: &[Vec3],
    first: usize,
    orient: &mut [Quat],
    base: &mut [Vec3],
) {
    for (k, (o, b)) in orient.iter_mut().zip(base.iter_mut()).enumerate() {
        let v = first + k;
        let p = levels.parent[v];
        let turn = rotation(phi[v]);
        if p == NO_PARENT {
            *o = renormalize(turn * levels.rest[v]);
            *b = levels.root_base[v];
        } else {
            let p = p as usize;
            let qp = done_orient[p];
            *o = renormalize(turn * (qp * levels.rest[v]));
            *b = done_base[p] + segment_axis(qp) * levels.length[p];
        }
    }
}

/// Integration phase for the segments `first..first + phi.len()` of one level (their new
/// deflections `phi`), written straight into the pose (`orient`, `base`: the forest's order,
/// from forest segment `offset` on, parents included): the same arithmetic as [`integrate`].
pub(super) fn integrate_into_pose(
    levels: &Levels,
    phi: &[Vec3],
    first: usize,
    (orient, base): (&mut [Quat], &mut [Vec3]),
    offset: usize,
) {
    for (k, &phi) in phi.iter().enumerate() {
        let v = first + k;
        let f = levels.order[v] as usize - offset;
        let p = levels.parent[v];
        let turn = rotation(phi);
        if p == NO_PARENT {
            orient[f] = renormalize(turn * levels.rest[v]);
            base[f] = levels.root_base[v];
        } else {
            let p = p as usize;
            let pf = levels.order[p] as usize - offset;
            let qp = orient[pf];
            orient[f] = renormalize(turn * (qp * levels.rest[v]));
            base[f] = base[pf] + segment_axis(qp) * levels.length[p];
        }
    }
}
