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
//! Invariants: every array is in the forest's leaf order (the pose's: segment by segment in the
//! forest's order, `Forest::leaves_of`) and as long as the forest's leaves, so the leaves of a
//! run of segments are one contiguous range; a leaf's world orientation is
//! `q_segment · rest · rot_x(ψ)`. (The model's leaf order of the export, segment by segment in
//! level order, is `Levels::leaf_start`; `Levels::forest_leaf` maps it here.)
//!
//! The kernels run over contiguous ranges of leaves, each leaf alone, element by element in
//! loops the compiler vectorises; a leaf's arithmetic is the same whichever range, job or lane
//! it falls in, so the bits do not depend on the split.

use glam::{Quat, Vec3, Vec4};

use super::kernels::{self, axial_damping_1d, axis_z, half_turn, half_turn_poly, step_body, HALF_TURN_POLY_MAX};
use super::levels::Levels;
use super::params::OliapuramParams;
use crate::dynamics::pose::segment_axis;
use crate::error::SimError;
use crate::forest::{unpack_quat, Forest};
use crate::material::DragLaw;

/// Static data of every leaf, in the forest's leaf order; what the dynamics phase reads of a
/// leaf in arrays of their own (a leaf's constants side by side in lanes).
#[derive(Clone, Debug, Default)]
pub(super) struct Leaves {
    /// Orientation in the segment's frame at rest.
    pub rest: Vec<Quat>,
    /// Distance of the hinge from the segment's base, along its axis \[m\].
    pub along: Vec<f32>,
    /// Half the blade length, the lever of the wind force \[m\].
    pub half_length: Vec<f32>,
    /// Mass m = `Material::leaf_mass_per_area` × area \[kg\] (its weight is a load of the
    /// statics, `rupture`).
    pub mass: Vec<f32>,
    /// Moment of inertia about the hinge, I = m·L²/3 [kg·m²].
    pub inertia: Vec<f32>,
    /// k_c · (Th_leaf / Th_segment) · k / I_segment along the hinge at rest, in world axes: the
    /// segment's back-propagated angular acceleration per radian of the leaf's angle (Eqs. 15,
    /// 18, 19).
    pub reaction: Vec<Vec3>,
    /// (L/2)·σ·area/I (Eq. 14 and the lever): the angular acceleration per m/s of wind along
    /// the normal [1/(m·s)].
    pub wind_gain: Vec<f32>,
    /// ω₀² = k/I [1/s²].
    pub w2: Vec<f32>,
    /// 1/(1 + ½·Δt²·ω₀²) (`kernels::step_body`).
    pub den: Vec<f32>,
    /// μ/I, the same for every leaf ([`OliapuramParams::leaf_damping`]) [1/rad].
    pub damping_gain: f32,
    /// How the wind's drag grows with the relative speed (the forest's material).
    pub drag_law: DragLaw,
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
            drag_law: material.drag_law,
            ..Leaves::default()
        };
        for i in 0..forest.segment_count() {
            let v = levels.level_of[i] as usize;
            let tree = &forest.trees[forest.tree_of(i)];
            for j in forest.leaves_of(i) {
                let length = forest.leaf.length_m(j);
                let area = std::f32::consts::FRAC_PI_4 * length * length * tree.leaf_aspect;
                let mass = material.leaf_mass_per_area * area;
                let inertia = mass * length * length / 3.0;
                let rest = unpack_quat(forest.leaf.rest[j]);
                let (w2, den) = kernels::spring_constants(k, inertia, params.dt);
                out.rest.push(rest);
                out.along.push(forest.leaf.along_f32(j) * levels.length[v]);
                out.half_length.push(0.5 * length);
                out.mass.push(mass);
                out.inertia.push(inertia);
                let hinge = levels.rest_world[v] * (rest * Vec3::X);
                let pull = params.propagation * params.leaf_thickness / levels.thickness[v] * k;
                out.reaction.push(hinge * (pull / levels.inertia[v]));
                out.wind_gain.push(0.5 * length * params.leaf_sigma * area / inertia);
                out.w2.push(w2);
                out.den.push(den);
            }
        }
        debug_assert_eq!(out.rest.len(), m);
        Ok(out)
    }

    /// Bytes held (capacities).
    pub fn heap_bytes(&self) -> usize {
        fn b<T>(v: &Vec<T>) -> usize {
            v.capacity() * size_of::<T>()
        }
        b(&self.rest)
            + b(&self.along)
            + b(&self.half_length)
            + b(&self.mass)
            + b(&self.inertia)
            + b(&self.reaction)
            + b(&self.wind_gain)
            + b(&self.w2)
            + b(&self.den)
    }
}

/// The forest's leaf indices in the model's leaf order (segment by segment in level order, the
/// export's and the state hash's order).
pub(super) fn model_order(levels: &Levels) -> impl Iterator<Item = usize> + '_ {
    (0..levels.order.len()).flat_map(move |v| {
        let f = levels.forest_leaf[v] as usize;
        f..f + (levels.leaf_start[v + 1] - levels.leaf_start[v]) as usize
    })
}

/// Where the wind is sampled for the leaves `first..first + out.len()` (forest order): each
/// blade's centre at the pose `leaf_pos`, `leaf_orient` (the same leaves), into `out`.
pub(super) fn centres(leaves: &Leaves, (leaf_pos, leaf_orient): (&[Vec3], &[Quat]), first: usize, out: &mut [Vec3]) {
    let half = &leaves.half_length[first..first + out.len()];
    for (((o, &p), &q), &h) in out.iter_mut().zip(leaf_pos).zip(leaf_orient).zip(half) {
        *o = p + segment_axis(q) * h;
    }
}

/// The wind the leaves of a step feel: one for all (uniform in space), or one sample per leaf.
#[derive(Clone, Copy)]
pub(super) enum LeafWind<'a> {
    Uniform(Vec3),
    Samples(&'a [Vec3]),
}

/// Dynamics phase for the leaves `first..first + psi.len()` (forest order), in place: the wind's
/// normal component's moment about the hinge (§4, Eq. 14), Eqs. 16–17 and 20–21 for each angle
/// ψ and its rate; `orient` holds the leaves' world orientations at the step's start and `wind`
/// the wind at their blades' centres. Writes each blade's wind into `drag`, as its normal
/// times the wind's angular acceleration about the hinge (`rupture::Drag`). Returns false if a
/// result is not finite.
pub(super) fn step_leaves(
    leaves: &Leaves,
    first: usize,
    (psi, rate): (&mut [f32], &mut [f32]),
    orient: &[Quat],
    wind: LeafWind<'_>,
    dt: f32,
    drag: &mut [Vec3],
) -> bool {
    // One loop per drag law, so that each vectorises without the law's test inside.
    let quadratic = leaves.drag_law == DragLaw::Quadratic;
    match (wind, quadratic) {
        (LeafWind::Uniform(u), false) => step_leaves_in::<false>(leaves, first, psi, rate, orient, |_| u, dt, drag),
        (LeafWind::Uniform(u), true) => step_leaves_in::<true>(leaves, first, psi, rate, orient, |_| u, dt, drag),
        (LeafWind::Samples(w), q) => {
            let w = &w[..psi.len()];
            if q {
                step_leaves_in::<true>(leaves, first, psi, rate, orient, |k| w[k], dt, drag)
            } else {
                step_leaves_in::<false>(leaves, first, psi, rate, orient, |k| w[k], dt, drag)
            }
        }
    }
}

/// [`step_leaves`] with the wind of the k-th leaf `wind(k)`: one loop over the leaves, each
/// alone, that the compiler vectorises.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn step_leaves_in<const QUADRATIC: bool>(
    leaves: &Leaves,
    first: usize,
    psi: &mut [f32],
    rate: &mut [f32],
    orient: &[Quat],
    wind: impl Fn(usize) -> Vec3,
    dt: f32,
    drag: &mut [Vec3],
) -> bool {
    let n = psi.len();
    let (rate, orient, drag) = (&mut rate[..n], &orient[..n], &mut drag[..n]);
    let r = first..first + n;
    let (gain, w2, den) = (
        &leaves.wind_gain[r.clone()],
        &leaves.w2[r.clone()],
        &leaves.den[r.clone()],
    );
    let half = &leaves.half_length[r];
    let mu = leaves.damping_gain;
    let law = if QUADRATIC { DragLaw::Quadratic } else { DragLaw::Linear };
    let mut finite = true;
    for k in 0..n {
        // The orientation's four numbers read one by one (`to_array`), so the loop takes four
        // leaves at a time.
        let normal = axis_z(orient[k].to_array());
        let blown = kernels::leaf_drag(law, wind(k), normal, rate[k], half[k], gain[k], dt);
        drag[k] = normal * blown;
        let acc = blown + axial_damping_1d(rate[k], mu, dt);
        let (p, d) = step_body(psi[k], rate[k], acc, w2[k], den[k], dt);
        finite &= p.is_finite() & d.is_finite();
        psi[k] = p;
        rate[k] = d;
    }
    finite
}

/// sin(ψ/2) and cos(ψ/2) of the leaves' angles `psi` (from `half_turn(ψ²)`), into `sin` and
/// `cos`, in a loop the compiler vectorises.
pub(super) fn half_angles(psi: &[f32], (sin, cos): (&mut [f32], &mut [f32])) {
    let n = psi.len();
    let (sin, cos) = (&mut sin[..n], &mut cos[..n]);
    let mut beyond = false;
    for k in 0..n {
        let t2 = psi[k] * psi[k];
        beyond |= t2 > HALF_TURN_POLY_MAX;
        let (s, c) = half_turn_poly(t2);
        (sin[k], cos[k]) = (s * psi[k], c);
    }
    // A leaf turned beyond π (a ridiculous wind): the library's sine and cosine, as
    // `half_turn` takes them.
    if beyond {
        for k in 0..n {
            let t2 = psi[k] * psi[k];
            if t2 > HALF_TURN_POLY_MAX {
                let (s, c) = half_turn(t2);
                (sin[k], cos[k]) = (s * psi[k], c);
            }
        }
    }
}

/// The pose of the leaves `first..first + leaf_pos.len()` (forest order) of one segment at
/// orientation `q` and base `b`, into `leaf_pos` and `leaf_orient`: each leaf's hinge on its
/// segment and its rest orientation turned by ψ about the blade's x axis (`sin` and `cos` of
/// ψ/2, from [`half_angles`]) carried by the segment.
#[inline(always)]
pub(super) fn place(
    leaves: &Leaves,
    first: usize,
    (q, b): (Quat, Vec3),
    (sin, cos): (&[f32], &[f32]),
    (leaf_pos, leaf_orient): (&mut [Vec3], &mut [Quat]),
) {
    let axis = segment_axis(q);
    let n = leaf_pos.len();
    let (leaf_orient, sin, cos) = (&mut leaf_orient[..n], &sin[..n], &cos[..n]);
    let (along, rest) = (&leaves.along[first..first + n], &leaves.rest[first..first + n]);
    for k in 0..n {
        leaf_pos[k] = b + axis * along[k];
        // rest · (sin(ψ/2)·i + cos(ψ/2)) = cos(ψ/2)·rest + sin(ψ/2)·(rest · i), where
        // (x, y, z, w) · i = (w, z, -y, -x): four lanes at once.
        let r = Vec4::from(rest[k]);
        let local = r * cos[k] + Vec4::new(r.w, r.z, -r.y, -r.x) * sin[k];
        leaf_orient[k] = q * Quat::from_vec4(local);
    }
}

/// Leaves a block of [`pose`] takes at once: their orientations relative to their segments
/// fit beside the rest in the first-level cache.
const POSE_BLOCK: usize = 256;

/// The pose the renderer reads of the leaves of the forest's segments `seg_first..`, one
/// segment at orientation `orient[k]` and base `base[k]` for each k, from their angles `psi`
/// (forest order, the leaves of these segments, which start at forest leaf `leaf_first`), into
/// `leaf_pos` and `leaf_orient` (the same leaves). `scratch` is working room (any length).
#[allow(clippy::too_many_arguments)]
pub(super) fn pose(
    forest_leaf_start: &[u32],
    leaves: &Leaves,
    seg_first: usize,
    (orient, base): (&[Quat], &[Vec3]),
    psi: &[f32],
    (leaf_pos, leaf_orient): (&mut [Vec3], &mut [Quat]),
    scratch: &mut Vec<f32>,
) {
    let n = orient.len();
    let leaf_first = forest_leaf_start[seg_first] as usize;
    let at = |k: usize| forest_leaf_start[seg_first + k] as usize - leaf_first;
    let mut k0 = 0;
    while k0 < n {
        // Whole segments, up to a block of leaves (or one segment with more).
        let mut k1 = k0 + 1;
        while k1 < n && at(k1 + 1) - at(k0) <= POSE_BLOCK {
            k1 += 1;
        }
        let (a, b) = (at(k0), at(k1));
        scratch.resize((2 * (b - a)).max(scratch.len()), 0.0);
        let (sin, cos) = scratch[..2 * (b - a)].split_at_mut(b - a);
        half_angles(&psi[a..b], (sin, cos));
        for k in k0..k1 {
            let r = at(k)..at(k + 1);
            let rs = r.start - a..r.end - a;
            place(
                leaves,
                leaf_first + r.start,
                (orient[k], base[k]),
                (&sin[rs.clone()], &cos[rs]),
                (&mut leaf_pos[r.clone()], &mut leaf_orient[r]),
            );
        }
        k0 = k1;
    }
}
