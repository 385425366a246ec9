//! Leaves as pseudo-branches (§4): each leaf a flat blade hinged where it hangs on its segment,
//! with one degree of freedom, stepped by the same equations as a branch (Eqs. 16–17, 20–21)
//! with its own, small inertia, a low μ and a k slightly above its segment's.
//!
//! Only the wind's component along the blade's normal n acts (§4), at the blade's centre, a
//! half blade length L/2 along the blade b from the hinge. Its moment about the hinge is
//! (L/2)·b × (F·n) = (L/2)·F·(b × n): always along the blade's own x axis (b × n with b = +y,
//! n = +z of the leaf's frame), whatever the wind. That axis is the leaf's one degree of
//! freedom: the leaf turns by its angle ψ about it, and nothing else moves it relative to its
//! segment. A wind in the blade's plane has no normal component and no moment.
//!
//! A leaf's restoration pushes back on its segment (Eq. 18, the leaf as a child) along the
//! hinge, from the step's start like a branch's children (§3.2). Like every moment of the
//! model it is in world axes (see `kernels`), along the hinge as it lies at rest.
//!
//! Invariants: every array is in the forest's leaf order and as long as the forest's leaves;
//! a leaf's world orientation is `q_segment · rest · rot_x(ψ)`.

use glam::{Quat, Vec3};

use super::kernels::{axial_damping_1d, step_body};
use super::levels::Levels;
use super::params::OliapuramParams;
use crate::error::SimError;
use crate::forest::{unpack_quat, Forest};

/// Static data of every leaf.
#[derive(Clone, Debug, Default)]
pub(super) struct Leaves {
    /// Level index of the segment the leaf hangs on.
    pub segment: Vec<u32>,
    /// Orientation in the segment's frame at rest.
    pub rest: Vec<Quat>,
    /// Distance of the hinge from the segment's base, along its axis \[m\].
    pub along: Vec<f32>,
    /// Half the blade length, the lever of the wind force \[m\].
    pub half_length: Vec<f32>,
    /// σ·area of Eq. 14 [N·s/m].
    pub drag: Vec<f32>,
    /// Moment of inertia about the hinge, m·L²/3 [kg·m²].
    pub inertia: Vec<f32>,
    /// Restoration constant k [N·m/rad].
    pub stiffness: Vec<f32>,
    /// Axial damping constant μ.
    pub damping: Vec<f32>,
    /// k_c · (Th_leaf / Th_segment) · k along the hinge at rest, in world axes: the segment's
    /// back-propagated moment per radian of the leaf's angle (Eqs. 15, 18, 19).
    pub reaction: Vec<Vec3>,
}

impl Leaves {
    /// Builds the leaves' data; refuses leaves without mass (a material with no
    /// `leaf_mass_per_area`), which would have no inertia to step.
    pub fn new(forest: &Forest, levels: &Levels, params: &OliapuramParams) -> Result<Leaves, SimError> {
        let m = forest.leaf_count();
        let material = &forest.material;
        if m > 0 && material.leaf_mass_per_area <= 0.0 {
            return Err(SimError::param(
                "leaf_mass_per_area",
                material.leaf_mass_per_area,
                "must be greater than 0 kg/m² when the trees have leaves: Oliapuram & Kumar's leaves are bodies \
                 with their own inertia",
            ));
        }
        // §4: k slightly above the thinnest branches'.
        let thinnest = params.leaf_stiffness_ratio * params.stiffness(params.thinnest_radius);
        let mut out = Leaves::default();
        for v in [&mut out.along, &mut out.half_length, &mut out.drag, &mut out.inertia] {
            v.reserve_exact(m);
        }
        for tree in &forest.trees {
            for i in tree.segments.start as usize..tree.segments.end as usize {
                let v = levels.level_of[i] as usize;
                for j in forest.leaves_of(i) {
                    let length = forest.leaf.length_m(j);
                    let area = std::f32::consts::FRAC_PI_4 * length * length * tree.leaf_aspect;
                    let inertia = material.leaf_mass_per_area * area * length * length / 3.0;
                    let stiffness = thinnest;
                    let thickness = levels.thickness[v];
                    let rest = unpack_quat(forest.leaf.rest[j]);
                    out.segment.push(v as u32);
                    out.rest.push(rest);
                    out.along.push(forest.leaf.along_f32(j) * levels.length[v]);
                    out.half_length.push(0.5 * length);
                    out.drag.push(params.leaf_sigma * area);
                    out.inertia.push(inertia);
                    out.stiffness.push(stiffness);
                    out.damping.push(params.leaf_damping * inertia);
                    out.reaction.push(
                        levels.rest_world[v]
                            * (rest * Vec3::X)
                            * (params.propagation * params.leaf_thickness / thickness * stiffness),
                    );
                }
            }
        }
        Ok(out)
    }

    /// Bytes held (capacities).
    pub fn heap_bytes(&self) -> usize {
        fn b<T>(v: &Vec<T>) -> usize {
            v.capacity() * size_of::<T>()
        }
        b(&self.segment)
            + b(&self.rest)
            + b(&self.along)
            + b(&self.half_length)
            + b(&self.drag)
            + b(&self.inertia)
            + b(&self.stiffness)
            + b(&self.damping)
            + b(&self.reaction)
    }
}

/// Where the wind is sampled for leaves `first..first + out.len()`: each blade's centre at the
/// pose `leaf_pos`, `leaf_orient`.
pub(super) fn centres(leaves: &Leaves, leaf_pos: &[Vec3], leaf_orient: &[Quat], first: usize, out: &mut [Vec3]) {
    for (k, o) in out.iter_mut().enumerate() {
        let j = first + k;
        *o = leaf_pos[j] + leaf_orient[j] * Vec3::new(0.0, leaves.half_length[j], 0.0);
    }
}

/// Dynamics phase for leaves `first..first + psi_out.len()`: the wind's normal component's
/// moment about the hinge (§4, Eq. 14), Eqs. 16–17 and 20–21 for the angle ψ. `wind(j)` is the
/// wind at leaf j's blade centre. Returns false if a result is not finite.
#[allow(clippy::too_many_arguments)]
pub(super) fn dynamics(
    leaves: &Leaves,
    psi: &[f32],
    psi_dot: &[f32],
    leaf_orient: &[Quat],
    dt: f32,
    first: usize,
    wind: impl Fn(usize) -> Vec3,
    psi_out: &mut [f32],
    psi_dot_out: &mut [f32],
) -> bool {
    let mut finite = true;
    for (k, (p_out, d_out)) in psi_out.iter_mut().zip(psi_dot_out.iter_mut()).enumerate() {
        let j = first + k;
        let normal = leaf_orient[j] * Vec3::Z;
        let inertia = leaves.inertia[j];
        let mut torque = leaves.half_length[j] * leaves.drag[j] * wind(j).dot(normal);
        torque += axial_damping_1d(psi_dot[j], leaves.damping[j], inertia, dt);
        let (p, d) = step_body(psi[j], psi_dot[j], torque, leaves.stiffness[j], inertia, dt);
        finite &= p.is_finite() && d.is_finite();
        *p_out = p;
        *d_out = d;
    }
    finite
}

/// Pose of leaves `first..first + leaf_pos.len()` from their segments' world pose (level
/// order) and their angles.
#[allow(clippy::too_many_arguments)]
pub(super) fn pose(
    leaves: &Leaves,
    psi: &[f32],
    orient: &[Quat],
    base: &[Vec3],
    first: usize,
    leaf_pos: &mut [Vec3],
    leaf_orient: &mut [Quat],
) {
    for (k, (pos, ori)) in leaf_pos.iter_mut().zip(leaf_orient.iter_mut()).enumerate() {
        let j = first + k;
        let v = leaves.segment[j] as usize;
        let q = orient[v];
        *pos = base[v] + q * Vec3::new(0.0, leaves.along[j], 0.0);
        *ori = (q * leaves.rest[j] * Quat::from_rotation_x(psi[j])).normalize();
    }
}
