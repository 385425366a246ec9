//! Landing: a leaf that reaches the ground lies flat on it and stays.
//!
//! The ground is the plane y = 0, as for the debris (`dynamics::debris`, Sylva has no other
//! terrain in the simulation). A leaf lands when the lowest point of its elliptical blade
//! reaches it: it is laid flat (turned the least way that makes its normal vertical, keeping
//! its heading), [`LIFT`] above the plane so the renderer draws it over the ground, and
//! stops. A landed leaf stays where it fell whatever the wind (no sliding, no waking): leaves
//! lying in litter are held by the litter's friction and by each other, which this does not
//! model; a gust lifting them again is left out on purpose.

use glam::{Quat, Vec3};

use super::Leaf;

/// Height of a landed leaf's plane above the ground \[m\] (against z-fighting with it).
pub const LIFT: f32 = 0.002;

/// Height of the lowest point of the leaf's blade above the ground \[m\].
pub(super) fn lowest(leaf: &Leaf) -> f32 {
    let ex = leaf.q * Vec3::X;
    let ey = leaf.q * Vec3::Y;
    let reach = ((leaf.half_length * ey.y).powi(2) + (leaf.half_width * ex.y).powi(2)).sqrt();
    leaf.x.y - reach
}

/// Lays the leaf flat on the ground when its blade reaches it; returns whether it landed.
pub(super) fn land(leaf: &mut Leaf) -> bool {
    if lowest(leaf) > 0.0 {
        return false;
    }
    let n = leaf.q * Vec3::Z;
    let up = if n.y >= 0.0 { Vec3::Y } else { Vec3::NEG_Y };
    leaf.q = (Quat::from_rotation_arc(n, up) * leaf.q).normalize();
    leaf.x.y = LIFT;
    leaf.v = Vec3::ZERO;
    leaf.w = Vec3::ZERO;
    leaf.landed = true;
    true
}
