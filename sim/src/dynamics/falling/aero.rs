//! The quasi-steady aerodynamics of a falling leaf: a thin flat elliptical plate in air.
//!
//! After Andersen, Pesavento & Wang (2005), "Unsteady aerodynamics of fluttering and tumbling
//! plates", J. Fluid Mech. 541:65-90, §2 (their Eqs. 2.1-2.3 and the force and circulation
//! model of Eqs. 2.10-2.13), carried from their 2-D plate to a 3-D plate with a normal `n`.
//! `u` is the velocity of the plate's centre relative to the air (plate velocity minus wind),
//! split into its normal part `u_n = (u·n)·n` and its in-plane part `u_t = u - u_n`; α is the
//! angle of attack, sin α = |u·n|/|u|.
//!
//! - Pressure and skin drag: F = -½·ρ·A·|u|·(C_N·u_n + C_T·u_t). Its part along -u is
//!   ½·ρ·A·|u|²·(C_N·sin²α + C_T·cos²α) = ½·ρ·A·|u|²·(A' - B'·cos 2α) with A' = (C_N + C_T)/2
//!   and B' = (C_N - C_T)/2, Andersen et al.'s orientation-dependent drag (their Eq. 2.12,
//!   A = 1.4, B = 1.0 in 2-D); its part across u is a lift ½·ρ·A·|u|²·B'·sin 2α towards the
//!   side the plate deflects the air from, their translational circulation term (Eq. 2.10,
//!   C_T sin 2α): the plate glides "toward the wind" it meets edge first.
//! - Rotational lift (their Γ_rot = ½·C_R·l²·ω): a plate spinning at ω about an in-plane axis
//!   while moving at u through the air feels ½·C_R·ρ·A·c·(ω_t × u) (the Kutta-Joukowski
//!   force of that circulation, c the mean chord), which makes tumbling plates drift sideways.
//! - Centre of pressure: at a grazing angle the pressure acts ahead of the centre, at a
//!   quarter chord for small α (thin-airfoil theory) and at the centre face on; here at
//!   `pressure_offset` × the half extent towards the leading edge, times cos α. Its torque
//!   turns the plate broadside to its motion, the destabilising moment that, with the lift,
//!   makes a plate oscillate (flutter) or turn over (tumble) instead of sinking flat.
//! - Added mass (their m₂₂, Eq. 2.3): the air moved with the plate along its normal, for a
//!   disk of the same area (8/3)·ρ·R³ (Lamb, Hydrodynamics §108); and added inertia about the
//!   in-plane axes, (16/45)·ρ·R⁵ (Lamb's disk), taken per axis of the ellipse.
//! - Rotational damping (their τ_ν): the normal drag of the plate's own rotation, integrated
//!   over a disk turning about a diameter, (4/(15·π))·ρ·C_N·A·R³·|ω|·ω per in-plane axis;
//!   about the normal, the same with C_T.
//!
//! Gravity acts on the leaf's mass only (the added mass has no weight; buoyancy, ρ_air over a
//! leaf's ~500 kg/m³, is left out). Dropped from Andersen et al.: the rotating-frame coupling
//! terms (m + m₁₁)·ω·v of their Eqs. 2.1-2.2 beyond the added mass along the normal.

use glam::{Mat3, Quat, Vec3};

use super::{FallingParams, Leaf};

/// Per-leaf constants of the aerodynamics, from its size and mass.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plate {
    /// Mass \[kg\].
    pub mass: f32,
    /// Added mass along the normal \[kg\].
    pub added: f32,
    /// Blade area \[m²\].
    pub area: f32,
    /// Mean chord \[m\] (√area).
    pub chord: f32,
    /// Body-frame inertia, x (across the blade), y (along it), z (normal) \[kg·m²\], added
    /// inertia included.
    pub inertia: Vec3,
    /// Body-frame quadratic rotational damping coefficients \[kg·m²\].
    pub spin_drag: Vec3,
}

impl Plate {
    /// An elliptical plate of semi-axes `a` (along the blade, local y) and `b` (across it,
    /// local x) and mass per area `mass_per_area`.
    pub fn new(a: f32, b: f32, mass_per_area: f32, p: &FallingParams) -> Plate {
        let rho = p.air_density;
        let area = std::f32::consts::PI * a * b;
        let mass = mass_per_area * area;
        // The disk of the same area.
        let r = (a * b).sqrt();
        let added = 8.0 / 3.0 * rho * r * r * r;
        let k = 16.0 / 45.0 * rho;
        let inertia = Vec3::new(
            mass * a * a / 4.0 + k * a.powi(4) * b,
            mass * b * b / 4.0 + k * b.powi(4) * a,
            mass * (a * a + b * b) / 4.0,
        );
        let d = 4.0 / (15.0 * std::f32::consts::PI) * rho * area * p.spin_damping;
        let spin_drag = Vec3::new(
            d * p.normal_drag * a * a * a,
            d * p.normal_drag * b * b * b,
            d * p.tangential_drag * a * a * a,
        );
        Plate {
            mass,
            added,
            area,
            chord: area.sqrt(),
            inertia,
            spin_drag,
        }
    }
}

/// Fastest spin of a leaf \[rad/s\] (32 turns a second): a guard for the explicit torques.
pub(super) const MAX_SPIN: f32 = 200.0;

/// One time step `dt` of a leaf in the air that moves at `air` \[m/s\] at its centre: the
/// forces and torques above, the drags linearly implicit (stable for any leaf however light),
/// the rest explicit; then the drift (semi-implicit Euler) and the turn.
pub(super) fn fly(leaf: &mut Leaf, air: Vec3, dt: f32, p: &FallingParams) {
    let plate = &leaf.plate;
    let q = leaf.q;
    // The leaf's axes in the world: across the blade, along it, its normal (one rotation
    // matrix for every rotation below; its transpose takes world vectors to the leaf's frame).
    let frame = Mat3::from_quat(q);
    let (ex, ey, n) = (frame.x_axis, frame.y_axis, frame.z_axis);
    let u = leaf.v - air;
    let speed = u.length();
    let un = u.dot(n);
    let ut = u - n * un;
    let k = 0.5 * p.air_density * plate.area * speed;
    // Explicit forces: gravity and rotational lift.
    let w_t = leaf.w - n * leaf.w.dot(n);
    let mut f = Vec3::new(0.0, -plate.mass * p.gravity, 0.0);
    f += (0.5 * p.rotation_lift * p.air_density * plate.area * plate.chord) * w_t.cross(u);
    // Drag, linearly implicit along the normal (inertia m + added mass) and in the plane
    // (inertia m), on the velocity relative to the air.
    let (mn, mt) = (plate.mass + plate.added, plate.mass);
    let (cn, ct) = (k * p.normal_drag, k * p.tangential_drag);
    let (vn, an) = (leaf.v.dot(n), air.dot(n));
    let vt = leaf.v - n * vn;
    let at = air - n * an;
    let fn_ = f.dot(n);
    let ft = f - n * fn_;
    let vn_new = (mn * vn + dt * fn_ + dt * cn * an) / (mn + dt * cn);
    let vt_new = (vt * mt + ft * dt + at * (dt * ct)) / (mt + dt * ct);
    leaf.v = n * vn_new + vt_new;

    // Torques: the centre of pressure ahead of the centre, towards the leading edge (the way
    // the plate moves through the air in its plane).
    let mut torque = Vec3::ZERO;
    let ut_len = ut.length();
    if ut_len > 1e-6 && speed > 1e-6 {
        let lead = ut / ut_len;
        // Half extent of the ellipse along `lead`.
        let (cx, cy) = (lead.dot(ex), lead.dot(ey));
        let (a, b) = (leaf.half_length, leaf.half_width);
        let reach = 1.0 / ((cx / b).powi(2) + (cy / a).powi(2)).sqrt().max(1e-12);
        let arm = lead * (p.pressure_offset * reach * ut_len / speed);
        let normal_force = -n * (cn * un);
        torque += arm.cross(normal_force);
    }
    // The angular momentum L = R·I·Rᵀ·ω takes the torque in the world frame (the gyroscopic
    // term comes from the body frame turning under it, as the debris does); then the
    // rotational damping, implicit per body axis.
    let to_body = frame.transpose();
    let i = plate.inertia;
    let l = frame * (i * (to_body * leaf.w)) + torque * dt;
    let wb = (to_body * l) / i;
    let damp = plate.spin_drag * wb.abs() * dt / i;
    let mut w = frame * (wb / (Vec3::ONE + damp));
    // A guard, never reached in the tests: no leaf spins faster than MAX_SPIN.
    let spin = w.length_squared();
    if spin > MAX_SPIN * MAX_SPIN {
        w *= MAX_SPIN / spin.sqrt();
    }
    leaf.w = w;

    // Drift, and the turn by dq = ½·(ω, 0)·q·dt (renormalised: second order in the angle
    // turned per substep, a few hundredths of a radian).
    leaf.x += leaf.v * dt;
    let h = 0.5 * dt;
    let dq = Quat::from_xyzw(w.x * h, w.y * h, w.z * h, 0.0) * q;
    leaf.q = (q + dq).normalize();
}
