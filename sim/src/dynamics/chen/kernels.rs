//! One stem's and one leaf's arithmetic of a step (Chen 2011 §4.1–4.2): the forces and the
//! angular acceleration of a stem from the step's start (`stem_forces`), its motion and new
//! orientation (`stem_motion`), and a leaf's whole step (`leaf_step`). Each works on one
//! element alone, so the bits do not depend on which job runs it.

use crate::collision::runtime::LeafTurn;
use glam::{Quat, Vec3};

use super::statics::{Blade, Stem};
use crate::collider::SphereCollider;
use crate::dynamics::pose::segment_axis;
use crate::material::{quadratic_drag_scale, DragLaw};

/// What the force pass leaves for the motion pass and for the parent.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Load {
    /// F_W + F_G + F_T, what the parent's transfer force sums (Eq. 4.3) \[N\].
    pub load: Vec3,
    /// The explicit part of the angular acceleration, the restoration's from the step's start
    /// included (Eqs. 4.2, 4.5–4.7) [1/s²].
    pub acc: Vec3,
}

/// A stem's rates, carried from step to step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Spin {
    /// ω of Eq. 4.8, in world axes [rad/s].
    pub omega: Vec3,
    /// Velocity of the stem's centre over the last step [m/s] (the wind's relative velocity).
    pub vel: Vec3,
}

/// The wind force F_W on a stem: the forest's drag coefficients on the wind at its centre,
/// as Sylva's other models take it. [`DragLaw::Linear`]: Weber's (c_bark + c_leaf)·w.
/// [`DragLaw::Quadratic`]: c·scale(|u|)·u on the air's velocity relative to the centre,
/// u = w − v, bark and leaves each with their scale (`Material::drag_scale`); the coefficient
/// c·scale is at most `Stem::drag_cap` = m/Δt, so that over one step the drag can stop the
/// stem's motion relative to the air, never reverse it (explicit drag on a light, leafy twig
/// in a storm would otherwise overshoot and grow).
#[inline(always)]
pub(super) fn wind_force(law: DragLaw, s: &Stem, wind: Vec3, vel: Vec3) -> Vec3 {
    match law {
        DragLaw::Linear => wind * (s.bark_drag + s.leaf_drag),
        DragLaw::Quadratic => {
            let u = wind - vel;
            let speed = u.length();
            let c = s.bark_drag * quadratic_drag_scale(speed, false) + s.leaf_drag * quadratic_drag_scale(speed, true);
            u * c.min(s.drag_cap)
        }
    }
}

/// The forces on stem `s` and its explicit angular acceleration, from the step's start:
/// `ori` its unit axis, `rest` its rest axis as its parent now carries it, `wind` F_W,
/// `transfer` Σ of its children's loads, `k_t` = K_t·K_r, `response` the self-collision force
/// and `p1` Eq. 5.2's weight on the stem's own forces, `compensate` whether the generated shape
/// is the equilibrium under gravity. The load passed to the parent (Eq. 4.3) is unweighted.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn stem_forces(
    s: &Stem,
    ori: Vec3,
    rest: Vec3,
    wind: Vec3,
    transfer: Vec3,
    k_t: f32,
    (response, p1): (Vec3, f32),
    compensate: bool,
) -> Load {
    // Chen 2011 Eq. 4.1: F_G = m·g.
    let gravity = s.weight;
    // Chen 2011 Eq. 4.3: F_T = K_t·K_r·Σ_i (F_W^i + F_G^i + F_T^i).
    let f_t = transfer * k_t;
    let load = wind + gravity + f_t;
    // Chen 2011 Eq. 4.5 (without the restoration, taken implicitly below) plus the response.
    let lever = ori * s.len;
    // Chen 2011 Eq. 4.6: τ = (ori·len) × F^stem.
    let mut torque = lever.cross(load);
    if compensate {
        // The weight the stem carries in the generated shape is held by that shape (see the
        // module's deviations): only its change of moment acts.
        torque -= (rest * s.len).cross(s.rest_weight);
    }
    // Chen 2011 Eq. 4.2 (as a linear spring, see the module's deviations):
    // F_Restore = −k_r·(P − P_rest), whose moment (Eq. 4.6) is k_r·len²·(ori × ori_rest).
    let restore = ori.cross(rest) * s.w2;
    // Chen 2011 Eq. 5.2: F^stem = (F_W + F_G + F_T + F_Restore)·P1 + F_Response·P2 (P2 is in
    // `response`, weighted by the self-collision).
    let (torque, restore) = (torque * p1, restore * p1);
    // The response's share of Eq. 4.6's torque, its angular acceleration at most
    // `Stem::response_cap` (see the module's deviations).
    let mut pushed = lever.cross(response) * s.inv_inertia;
    let push2 = pushed.length_squared();
    if push2 > s.response_cap * s.response_cap {
        pushed *= s.response_cap / push2.sqrt();
    }
    // Chen 2011 Eq. 4.7: α = τ/(m·len²).
    Load {
        load,
        acc: torque * s.inv_inertia + pushed + restore,
    }
}

/// The new angular velocity of a stem or leaf of axis `ori` from its rate `omega` (Eq. 4.9's
/// damping `keep` applied), its explicit acceleration `acc` and its restoration's `w2`:
/// Eq. 4.8 with the restoration taken at the step's end (semi-implicit, see the module's
/// deviations), without the turn about its own axis (Eq. 4.6 has none).
#[inline(always)]
pub(super) fn angular_velocity(omega: Vec3, acc: Vec3, w2: f32, keep: f32, dt: f32, ori: Vec3) -> Vec3 {
    // Chen 2011 Eq. 4.9: ω_t = ω_t·(1 − K_d); Eq. 4.8: ω_{t+Δt} = ω_t + α·Δt, the spring's
    // part of α at the step's end: (1 + ω₀²·Δt²)·ω_{t+Δt} = ω_t + α_t·Δt.
    let w = (omega * keep + acc * dt) / (1.0 + w2 * dt * dt);
    w - ori * ori.dot(w)
}

/// A rotation by the rotation vector `v` (angle |v| about v/|v|).
#[inline(always)]
pub(super) fn turn(v: Vec3) -> Quat {
    let a2 = v.length_squared();
    if a2 < 1e-24 {
        // sin(a/2)/a ≈ 1/2 (the next term, a²/48, is below f32's precision).
        Quat::from_xyzw(0.5 * v.x, 0.5 * v.y, 0.5 * v.z, 1.0).normalize()
    } else {
        Quat::from_scaled_axis(v)
    }
}

/// A stem's new orientation and base from its orientation `q` at the step's start, its new
/// rate `omega` (world axes, the step's start frame), the parent's rotation over the step
/// `parent_turn` and the new base `base`; pushes it out of the colliders. Returns the new
/// orientation and the rate carried into the new frame.
///
/// Chen 2011 Eq. 4.10: ΔR = ω·Δt (+ α·Δt², see the module's deviations) + ΔR_parent, the two
/// rotations composed (the parent's last, so that the stem turns with it).
#[inline(always)]
pub(super) fn stem_motion(
    q: Quat,
    omega: Vec3,
    parent_turn: Quat,
    dt: f32,
    (base, len, r0, r1): (Vec3, f32, f32, f32),
    colliders: &[SphereCollider],
) -> (Quat, Vec3) {
    let mut q1 = (parent_turn * turn(omega * dt) * q).normalize();
    let mut w = parent_turn * omega;
    for c in colliders {
        let tip = base + segment_axis(q1) * len;
        if let Some(contact) = c.contact(base, tip, r0, r1) {
            // Turn the stem about its base so that the contact point leaves the sphere, and
            // take away the rate that drives it in.
            let d = segment_axis(q1);
            let at = d * (len * contact.along.max(1e-3));
            let to = (at + contact.correction).normalize_or_zero();
            if to == Vec3::ZERO {
                continue;
            }
            let fix = Quat::from_rotation_arc(d, to);
            q1 = (fix * q1).normalize();
            let axis = d.cross(to).normalize_or_zero();
            let into = w.dot(axis);
            if into < 0.0 {
                w -= axis * into;
            }
        }
    }
    (q1, w)
}

/// One leaf's step (Chen 2011 §4.1 for venations): `q` its world orientation at the step's
/// start already carried by its segment's turn, `omega` its rate likewise, `rigid` the
/// orientation it has at rest on its segment in the segment's new pose, `wind` at the blade,
/// `collision` the self-collision springs on it (their torque explicit, their stiffness taken
/// at the step's end with the restoration's). Returns its new orientation and rate.
#[inline(always)]
pub(super) fn leaf_step(
    b: &Blade,
    (q, omega, rigid): (Quat, Vec3, Quat),
    (wind, collision): (Vec3, LeafTurn),
    (keep, dt): (f32, f32),
    compensate: bool,
) -> (Quat, Vec3) {
    let blade = segment_axis(q);
    let rest = segment_axis(rigid);
    let normal = q * Vec3::Z;
    // Chen 2011 Eq. 4.4: F_W^venation = C_W·n·(w·n); Eq. 4.1 for its weight; no transfer
    // force in a leaf (§4.1).
    let f = normal * (b.wind * wind.dot(normal)) + b.weight;
    // Chen 2011 Eq. 4.6 about the attachment, the lever the mid-venation.
    let mut torque = (blade * b.len).cross(f);
    if compensate {
        torque -= (rest * b.len).cross(b.weight);
    }
    // Chen 2011 Eq. 5.1's springs on the blade (`SelfCollision::with_leaves_turning`).
    torque += collision.torque;
    // Chen 2011 Eqs. 4.2 and 4.7, as for a stem; the springs' stiffness beside the
    // restoration's at the step's end, so that they hold a leaf as light as it is.
    let acc = torque * b.inv_inertia + blade.cross(rest) * b.w2;
    let w2 = b.w2 + collision.stiffness * b.inv_inertia;
    let w = angular_velocity(omega, acc, w2, keep, dt, blade);
    ((turn(w * dt) * q).normalize(), w)
}
