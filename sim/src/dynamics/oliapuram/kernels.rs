//! The two phases of §3.2 for branch segments, each over a slice of segments in level order:
//! the dynamics phase (forces, Eqs. 13–19, and the angular step, Eqs. 11–12 and 20–21) and the
//! integration phase (world orientation and base, root to tips).
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
//! Both kernels read only what the previous phase or the previous level wrote and write only
//! their own slice, so any split into jobs gives the same bits.

use glam::{Quat, Vec3};

use super::levels::Levels;
use crate::forest::NO_PARENT;

/// One step of Eqs. 20–21 for a body of inertia `inertia` on a spring `k`, with every other
/// moment (`torque`) held over the step: θ' = θ + ω·Δt + ½·α·Δt², ω' = ω + α·Δt, with the
/// angular acceleration α (Eq. 12) taken at the step's end, the spring's at θ'. Solved in
/// closed form per body: θ'·(1 + k·Δt²/(2I)) = θ + ω·Δt + ½·Δt²·torque/I.
///
/// Why at the step's end. The bodies' natural frequencies ω₀ = sqrt(k/I) span from a second
/// to far beyond the step rate (a thin segment's inertia m·l²/3 is tiny next to its k), and each
/// parent is driven by its children's restorations (Eq. 18) through dozens of levels. With α
/// at the step's start, Eq. 20 gains energy every step (its amplification has determinant
/// 1 + (ω₀Δt)²/2). With α the step's mean (the trapezoidal rule), each stiff body rings at the
/// step rate and passes its children's pull on amplified, level after level, until the forest
/// explodes within a second. With α at the step's end, a stiff body settles on its spring's
/// equilibrium within the step and passes a pull on at most as strong as it came; a soft one
/// keeps its period (error about (ω₀Δt)²/9) and loses about ω₀Δt/4 of damping ratio to the
/// scheme.
#[inline(always)]
pub(super) fn step_body<T>(phi: T, omega: T, torque: T, k: f32, inertia: f32, h: f32) -> (T, T)
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<f32, Output = T>,
{
    let inv_i = 1.0 / inertia;
    let half_h2 = 0.5 * h * h;
    let phi1 = (phi + omega * h + torque * (half_h2 * inv_i)) * (1.0 / (1.0 + k * half_h2 * inv_i));
    let alpha = (torque - phi1 * k) * inv_i;
    (phi1, omega + alpha * h)
}

/// Eqs. 16–17: R = -μ·ω·|ω|, its magnitude clamped to I·|ω|/Δt so that over one step it can
/// stop the motion but never reverse it.
#[inline(always)]
pub(super) fn axial_damping(omega: Vec3, mu: f32, inertia: f32, h: f32) -> Vec3 {
    let speed = omega.length();
    omega * -(mu * speed).min(inertia / h)
}

/// The scalar form of [`axial_damping`] (a leaf's one degree of freedom).
#[inline(always)]
pub(super) fn axial_damping_1d(omega: f32, mu: f32, inertia: f32, h: f32) -> f32 {
    omega * -(mu * omega.abs()).min(inertia / h)
}

/// What the dynamics phase reads, whole-forest arrays in level order.
pub(super) struct DynamicsIn<'a> {
    pub levels: &'a Levels,
    /// Deflection and its rate at the step's start.
    pub phi: &'a [Vec3],
    pub omega: &'a [Vec3],
    /// World pose at the step's start.
    pub orient: &'a [Quat],
    /// Every leaf's angle about its hinge (forest leaf order).
    pub leaf_psi: &'a [f32],
    /// Every leaf's back-propagation weight: its k_c-scaled restoration per radian, along its
    /// hinge at rest.
    pub leaf_reaction: &'a [Vec3],
    pub dt: f32,
    pub gravity: f32,
}

/// Dynamics phase for segments `first..first + out_phi.len()` (level indices): the moment of
/// every force of Eq. 13 about the fixed end, then Eqs. 20–21. `wind(v)` is the wind at
/// segment v's centroid (Eq. 14). Returns false if a result is not finite.
pub(super) fn dynamics(
    inp: &DynamicsIn<'_>,
    first: usize,
    wind: impl Fn(usize) -> Vec3,
    out_phi: &mut [Vec3],
    out_omega: &mut [Vec3],
) -> bool {
    let lv = inp.levels;
    let h = inp.dt;
    let mut finite = true;
    for (k, (phi_out, omega_out)) in out_phi.iter_mut().zip(out_omega.iter_mut()).enumerate() {
        let v = first + k;
        let q = inp.orient[v];
        // Eq. 12: N = F × c; the moment about the fixed end O of a force F at c is c × F.
        let c = q * Vec3::new(0.0, lv.centroid[v], 0.0);
        // Eq. 14: F_wind = S_f·σ·v at the centroid.
        let f = wind(v) * lv.drag[v] + Vec3::new(0.0, -lv.mass[v] * inp.gravity, 0.0);
        let mut torque = c.cross(f) - lv.weight_rest[v];
        // Eqs. 18–19: T = -Σ k_i·K_i over the children, with K_i = k_i·(θ - θ'_i) (Eq. 15) of
        // the step's start (the previous step's restoration forces, §3.2).
        let mut back = Vec3::ZERO;
        for c in lv.child_start[v] as usize..lv.child_start[v + 1] as usize {
            back += inp.phi[c] * lv.propagation[c];
        }
        let (l0, l1) = lv.leaf_range[v];
        for j in l0 as usize..l1 as usize {
            back += inp.leaf_reaction[j] * inp.leaf_psi[j];
        }
        torque += back;
        let (k, inertia) = (lv.stiffness[v], lv.inertia[v]);
        let omega = inp.omega[v];
        // Eqs. 16–17.
        torque += axial_damping(omega, lv.damping[v], inertia, h);
        // Eqs. 11, 15, 20, 21: the restoration K = -k·θ' is the spring of `step_body`.
        let (phi1, omega1) = step_body(inp.phi[v], omega, torque, k, inertia, h);
        finite &= phi1.is_finite() && omega1.is_finite();
        *phi_out = phi1;
        *omega_out = omega1;
    }
    finite
}

/// The centroid of every segment in `first..first + out.len()` at the pose `orient`, `base`,
/// into `out` (where the wind is sampled, Eq. 14).
pub(super) fn centroids(levels: &Levels, orient: &[Quat], base: &[Vec3], first: usize, out: &mut [Vec3]) {
    for (k, o) in out.iter_mut().enumerate() {
        let v = first + k;
        *o = base[v] + orient[v] * Vec3::new(0.0, levels.centroid[v], 0.0);
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
        let turn = Quat::from_scaled_axis(phi[v]);
        if p == NO_PARENT {
            *o = (turn * levels.rest[v]).normalize();
            *b = levels.root_base[v];
        } else {
            let p = p as usize;
            let qp = done_orient[p];
            *o = (turn * (qp * levels.rest[v])).normalize();
            *b = done_base[p] + qp * Vec3::new(0.0, levels.length[p], 0.0);
        }
    }
}
