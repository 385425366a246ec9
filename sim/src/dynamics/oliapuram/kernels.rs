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

use super::levels::Levels;
use crate::dynamics::pose::segment_axis;
use crate::forest::NO_PARENT;
use crate::material::{quadratic_drag_scale, DragLaw};

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

/// q · (0, 0, 1), a blade's normal, for q = (x, y, z, w).
#[inline(always)]
pub(super) fn axis_z([x, y, z, w]: [f32; 4]) -> Vec3 {
    Vec3::new(
        2.0 * (x * z + w * y),
        2.0 * (y * z - w * x),
        1.0 - 2.0 * (x * x + y * y),
    )
}

/// θ² up to which [`half_turn`] takes its Taylor polynomials ([`half_turn_poly`]): π².
pub(super) const HALF_TURN_POLY_MAX: f32 = std::f32::consts::PI * std::f32::consts::PI;

/// sin(a)/a·½ and cos(a) for a = θ/2 from θ² (a rotation by θ is (axis · sin a, cos a)), by
/// Taylor polynomials in a² (truncation error below 1e-7 for θ ≤ π); beyond π, by the library.
#[inline(always)]
pub(super) fn half_turn(theta2: f32) -> (f32, f32) {
    if theta2 > HALF_TURN_POLY_MAX {
        let theta = theta2.sqrt();
        let (s, c) = (0.5 * theta).sin_cos();
        return (s / theta, c);
    }
    half_turn_poly(theta2)
}

/// [`half_turn`]'s Taylor polynomials alone, for θ² up to [`HALF_TURN_POLY_MAX`]: no branch, so
/// that loops over many bodies vectorise (and take [`half_turn`] again for the rare body beyond).
#[inline(always)]
pub(super) fn half_turn_poly(theta2: f32) -> (f32, f32) {
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
    Quat::from_array(rotation_by(v, half_turn(v.length_squared())))
}

/// The rotation by |v| about v/|v| from `half_turn(|v|²)`, as (x, y, z, w).
#[inline(always)]
fn rotation_by(v: Vec3, (s, c): (f32, f32)) -> [f32; 4] {
    [v.x * s, v.y * s, v.z * s, c]
}

/// [`rotation`] of every deflection in `phi`, into `out` (x, y, z, w), in a loop the compiler
/// vectorises.
pub(super) fn rotations(phi: &[Vec3], out: &mut [[f32; 4]]) {
    let out = &mut out[..phi.len()];
    let mut beyond = false;
    for (o, &v) in out.iter_mut().zip(phi) {
        let t2 = v.length_squared();
        beyond |= t2 > HALF_TURN_POLY_MAX;
        *o = rotation_by(v, half_turn_poly(t2));
    }
    // A segment turned beyond π: the library's sine and cosine, as `rotation` takes them.
    if beyond {
        for (o, &v) in out.iter_mut().zip(phi) {
            if v.length_squared() > HALF_TURN_POLY_MAX {
                *o = rotation(v).to_array();
            }
        }
    }
}

/// `q` brought back to unit length when it is within a few ulps of it (products of unit
/// quaternions): one Newton step for 1/|q|, no square root or division.
#[inline(always)]
pub(super) fn renormalize(q: Quat) -> Quat {
    q * (1.5 - 0.5 * q.length_squared())
}

/// Dynamics phase for segment `v` (level index): the moment of every force of Eq. 13 about its
/// fixed end over its inertia, and Eqs. 20–21. `orient` is its world orientation at the step's
/// start, `wind` the wind at its centroid (Eq. 14), `external` a force on it there \[N\] (or
/// none), `phi` and `omega` its deflection and rate,
/// `child_phi(c)` the deflection of its child c (level index) and `psi` the angles of its leaves
/// (forest order) with `reaction` theirs (`Leaves::reaction`), all of the step's start. Returns
/// the deflection and rate at the step's end, and the wind's drag over the inertia, F/I, that
/// the step applied (`rupture::Drag`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn step_segment(
    lv: &Levels,
    v: usize,
    (orient, wind, external): (Quat, Vec3, Option<&Vec3>),
    (phi, omega): (Vec3, Vec3),
    child_phi: impl Fn(usize) -> Vec3,
    (reaction, psi): (&[Vec3], &[f32]),
    h: f32,
) -> (Vec3, Vec3, Vec3) {
    // Eq. 12: N = F × c; the moment about the fixed end O of a force F at c is c × F.
    let body = &lv.body[v];
    let c = segment_axis(orient) * body.centroid;
    // Eq. 14: F_wind = S_f·σ·v at the centroid (or its quadratic form); and the segment's
    // weight.
    let drag = segment_drag(lv.drag_law, wind, omega, c, body.wind_gain, h);
    let f = drag - Vec3::new(0.0, body.weight_gain, 0.0);
    let mut acc = c.cross(f) - body.weight_rest;
    // Self-collision's response (Chen 2011 Eq. 5.1), a force at the segment's centre.
    if let Some(&e) = external {
        acc += c.cross(e) / lv.inertia[v];
    }
    // Eqs. 18–19: T = -Σ k_i·K_i over the children and leaves, with K_i = k_i·(θ - θ'_i)
    // (Eq. 15) of the step's start (the previous step's restoration forces, §3.2).
    for c in lv.child_start[v] as usize..lv.child_start[v + 1] as usize {
        acc += child_phi(c) * lv.body[c].propagation;
    }
    for (&r, &psi) in reaction.iter().zip(psi) {
        acc += r * psi;
    }
    // Eqs. 16–17.
    acc += axial_damping(omega, body.damping_gain, h);
    // Eqs. 11, 15, 20, 21: the restoration K = -k·θ' is the spring of `step_body`.
    let (phi1, omega1) = step_body(phi, omega, acc, body.w2, body.den, h);
    (phi1, omega1, drag)
}

/// The wind force on a segment over its inertia, with `gain` = σ·S_f/I (Eq. 14), `wind` the
/// wind at its centroid, `c` the centroid from the fixed end and `omega` the segment's rate.
///
/// [`DragLaw::Linear`]: Eq. 14 as the paper has it, gain·w. [`DragLaw::Quadratic`]: the same
/// coefficient times `Material::drag_scale(|u|)` on the air's velocity relative to the centroid,
/// u = w - ω × c: a segment turns about its fixed end at ω in the model's equations of motion
/// (Eqs. 11–12; its base's own motion enters none of them), so ω × c is its centroid's
/// velocity as the model knows it. The relative velocity makes the drag damp the segment at
/// about gain·scale·|c|² per second; explicit in Eq. 20 that overshoots beyond 2/Δt (a leafy
/// twig in a storm), so the scale is capped at 1/(gain·|c|²·Δt): over one step the drag can
/// stop the centroid's motion relative to the air, never reverse it (as Eqs. 16–17's damping
/// is clamped, [`axial_damping`]).
#[inline(always)]
pub(super) fn segment_drag(law: DragLaw, wind: Vec3, omega: Vec3, c: Vec3, gain: f32, h: f32) -> Vec3 {
    match law {
        DragLaw::Linear => wind * gain,
        DragLaw::Quadratic => {
            let u = wind - omega.cross(c);
            let scale = quadratic_drag_scale(u.length(), false).min(1.0 / (gain * c.length_squared() * h));
            u * (gain * scale)
        }
    }
}

/// A leaf's wind acceleration about its hinge, with `gain` = (L/2)·σ·area/I, `wind` the wind at
/// the blade's centre, `normal` the blade's normal, `rate` its angular rate and `half` = L/2.
///
/// [`DragLaw::Linear`]: §4 as the paper has it, gain·(w·n). [`DragLaw::Quadratic`]: on the air's
/// velocity relative to the blade's centre, which the leaf's one degree of freedom moves along
/// its normal at rate·L/2 (u = w - rate·(L/2)·n), gain·scale(|u|)·(u·n), the scale with the
/// leaves' reconfiguration (`Material::drag_scale`); capped at 1/(gain·(L/2)·Δt) like the
/// segments' ([`segment_drag`]).
#[inline(always)]
pub(super) fn leaf_drag(law: DragLaw, wind: Vec3, normal: Vec3, rate: f32, half: f32, gain: f32, h: f32) -> f32 {
    match law {
        DragLaw::Linear => gain * wind.dot(normal),
        DragLaw::Quadratic => {
            let u = wind - normal * (rate * half);
            let scale = quadratic_drag_scale(u.length(), true).min(1.0 / (gain * half * h));
            gain * scale * u.dot(normal)
        }
    }
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

/// Integration phase for the segments `first..first + turns.len()` of one level (their turns
/// by their new deflections, [`rotations`]), written straight into the pose (`orient`, `base`:
/// the forest's order, from forest segment `offset` on, parents included): the same arithmetic
/// as [`integrate`].
pub(super) fn integrate_into_pose(
    levels: &Levels,
    turns: &[[f32; 4]],
    first: usize,
    (orient, base): (&mut [Quat], &mut [Vec3]),
    offset: usize,
) {
    let r = first..first + turns.len();
    let (order, parent, rest) = (
        &levels.order[r.clone()],
        &levels.parent[r.clone()],
        &levels.rest[r.clone()],
    );
    for k in 0..turns.len() {
        let f = order[k] as usize - offset;
        let turn = Quat::from_array(turns[k]);
        match parent[k] {
            NO_PARENT => {
                orient[f] = renormalize(turn * rest[k]);
                base[f] = levels.root_base[first + k];
            }
            p => {
                let p = p as usize;
                let pf = levels.order[p] as usize - offset;
                let qp = orient[pf];
                orient[f] = renormalize(turn * (qp * rest[k]));
                base[f] = base[pf] + segment_axis(qp) * levels.length[p];
            }
        }
    }
}
