//! Leaves as pseudo-branches (§4): each leaf a flat blade hinged where it hangs on its segment,
//! with one degree of freedom, stepped by the same equations as a branch (Eqs. 16–17, 20–21)
//! with its own, small inertia, a low μ and a k slightly above the thinnest branch's.
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
//! Invariants: every array is in the model's leaf order (segment by segment in level order,
//! `Levels::leaf_start`) and as long as the forest's leaves; a leaf's world orientation is
//! `q_segment · rest · rot_x(ψ)`.

use glam::{Quat, Vec3};

use super::kernels::{self, axial_damping_1d, axis_z, half_turn, step_body};
use super::levels::Levels;
use super::params::OliapuramParams;
use crate::dynamics::pose::segment_axis;
use crate::error::SimError;
use crate::forest::{unpack_quat, Forest};

/// What the dynamics phase reads of one leaf.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LeafBody {
    /// k_c · (Th_leaf / Th_segment) · k / I_segment along the hinge at rest, in world axes: the
    /// segment's back-propagated angular acceleration per radian of the leaf's angle (Eqs. 15,
    /// 18, 19).
    pub reaction: Vec3,
    /// (L/2)·σ·area/I (Eq. 14 and the lever): the angular acceleration per m/s of wind along
    /// the normal [1/(m·s)].
    pub wind_gain: f32,
    /// ω₀² = k/I [1/s²].
    pub w2: f32,
    /// 1/(1 + ½·Δt²·ω₀²) (`kernels::step_body`).
    pub den: f32,
}

/// Static data of every leaf.
#[derive(Clone, Debug, Default)]
pub(super) struct Leaves {
    /// Orientation in the segment's frame at rest.
    pub rest: Vec<Quat>,
    /// Distance of the hinge from the segment's base, along its axis \[m\].
    pub along: Vec<f32>,
    /// Half the blade length, the lever of the wind force \[m\].
    pub half_length: Vec<f32>,
    /// Moment of inertia about the hinge, I = m·L²/3 [kg·m²].
    pub inertia: Vec<f32>,
    /// What the dynamics phase reads of each leaf, in one record.
    pub body: Vec<LeafBody>,
    /// μ/I, the same for every leaf ([`OliapuramParams::leaf_damping`]) [1/rad].
    pub damping_gain: f32,
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
        // §4: k slightly above the thinnest branches'. A simulated branch is never thinner than
        // `min_radius` for Eq. 22, so the thinnest branch's k is taken at the larger of the two.
        let thinnest = params.thickness(params.thinnest_radius, params.thinnest_radius);
        let k = params.leaf_stiffness_ratio * params.stiffness(thinnest);
        let mut out = Leaves {
            damping_gain: params.leaf_damping,
            ..Leaves::default()
        };
        for (v, &i) in levels.order.iter().enumerate() {
            let tree = &forest.trees[forest.tree_of(i as usize)];
            {
                for j in forest.leaves_of(i as usize) {
                    let length = forest.leaf.length_m(j);
                    let area = std::f32::consts::FRAC_PI_4 * length * length * tree.leaf_aspect;
                    let inertia = material.leaf_mass_per_area * area * length * length / 3.0;
                    let rest = unpack_quat(forest.leaf.rest[j]);
                    let (w2, den) = kernels::spring_constants(k, inertia, params.dt);
                    out.rest.push(rest);
                    out.along.push(forest.leaf.along_f32(j) * levels.length[v]);
                    out.half_length.push(0.5 * length);
                    out.inertia.push(inertia);
                    let hinge = levels.rest_world[v] * (rest * Vec3::X);
                    let pull = params.propagation * params.leaf_thickness / levels.thickness[v] * k;
                    out.body.push(LeafBody {
                        reaction: hinge * (pull / levels.inertia[v]),
                        wind_gain: 0.5 * length * params.leaf_sigma * area / inertia,
                        w2,
                        den,
                    });
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
        b(&self.rest) + b(&self.along) + b(&self.half_length) + b(&self.inertia) + b(&self.body)
    }
}

/// Where the wind is sampled for the leaves of segment `v`: each blade's centre at the
/// pose `leaf_pos`, `leaf_orient` (the forest's leaf order, from forest leaf `offset` on), into
/// `out`.
pub(super) fn centres(
    levels: &Levels,
    leaves: &Leaves,
    (leaf_pos, leaf_orient): (&[Vec3], &[Quat]),
    v: usize,
    offset: usize,
    out: &mut [Vec3],
) {
    let (first, forest_first) = (levels.leaf_start[v] as usize, levels.forest_leaf[v] as usize - offset);
    for (k, o) in out.iter_mut().enumerate() {
        let f = forest_first + k;
        *o = leaf_pos[f] + segment_axis(leaf_orient[f]) * leaves.half_length[first + k];
    }
}

/// Dynamics phase for leaf `j`: the wind's normal component's moment about the hinge (§4,
/// Eq. 14), Eqs. 16–17 and 20–21 for the angle ψ; `orient` is the leaf's world orientation at
/// the step's start and `wind` the wind at its blade's centre.
#[inline(always)]
pub(super) fn step_leaf(
    leaves: &Leaves,
    j: usize,
    psi: f32,
    rate: f32,
    orient: Quat,
    wind: Vec3,
    dt: f32,
) -> (f32, f32) {
    let body = &leaves.body[j];
    let acc = body.wind_gain * wind.dot(axis_z(orient)) + axial_damping_1d(rate, leaves.damping_gain, dt);
    step_body(psi, rate, acc, body.w2, body.den, dt)
}

/// The pose the renderer reads for the forest's segments `seg_first..seg_first +
/// base.len()` (copied from the level-ordered pose) and for their leaves, which start at
/// `leaf_first` and fill `leaf_pos` and `leaf_orient` ([`pose_of_leaves`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn pose(
    levels: &Levels,
    leaves: &Leaves,
    psi: &[f32],
    (orient, base): (&[Quat], &[Vec3]),
    seg_first: usize,
    (seg_base, seg_orient): (&mut [Vec3], &mut [Quat]),
    (leaf_pos, leaf_orient): (&mut [Vec3], &mut [Quat]),
) {
    let mut out = 0;
    for (k, (sb, so)) in seg_base.iter_mut().zip(seg_orient.iter_mut()).enumerate() {
        let v = levels.level_of[seg_first + k] as usize;
        let (q, b) = (orient[v], base[v]);
        *sb = b;
        *so = q;
        let count = (levels.leaf_start[v + 1] - levels.leaf_start[v]) as usize;
        let end = out + count;
        pose_of_leaves(
            levels,
            leaves,
            v,
            (q, b),
            (psi, 0),
            (&mut leaf_pos[out..end], &mut leaf_orient[out..end]),
        );
        out = end;
    }
}

/// The pose of the leaves of segment `v` (level index) on their segment at orientation `q` and
/// base `b`, into `leaf_pos` and `leaf_orient` (as many as it has leaves): each leaf's hinge on
/// its segment and its rest orientation carried by the segment and turned by ψ about the
/// blade's x axis. `psi` holds the angles from model leaf `psi_first` on.
#[inline(always)]
pub(super) fn pose_of_leaves(
    levels: &Levels,
    leaves: &Leaves,
    v: usize,
    (q, b): (Quat, Vec3),
    (psi, psi_first): (&[f32], usize),
    (leaf_pos, leaf_orient): (&mut [Vec3], &mut [Quat]),
) {
    let axis = segment_axis(q);
    let first = levels.leaf_start[v] as usize;
    for (k, (pos, ori)) in leaf_pos.iter_mut().zip(leaf_orient.iter_mut()).enumerate() {
        let j = first + k;
        let psi = psi[j - psi_first];
        // rest · (sin(ψ/2)·i + cos(ψ/2)) = cos(ψ/2)·rest + sin(ψ/2)·(rest · i), where
        // (x, y, z, w) · i = (w, z, -y, -x).
        let (s, c) = half_turn(psi * psi);
        let s = s * psi;
        let r = leaves.rest[j];
        let local = Quat::from_xyzw(
            c * r.x + s * r.w,
            c * r.y + s * r.z,
            c * r.z - s * r.y,
            c * r.w - s * r.x,
        );
        *pos = b + axis * leaves.along[j];
        *ori = q * local;
    }
}
