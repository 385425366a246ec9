//! A read-only copy of what [`OliapuramModel`]'s step reads and writes, for another
//! implementation of the same model (the GPU's compute shaders in `sylva_render::dynamics`):
//! the per-level view of the forest (§3.2), every body's constants as the CPU kernels use them
//! (every moment already divided by the body's inertia), and the dynamic state.
//!
//! Invariants: the arrays are the model's own, copied, in the model's orders: segments in level
//! order (`order[v]` is the forest index of level index `v`), leaves segment by segment in that
//! order (`leaf_start`); the pose the model hands out is in the forest's orders
//! (`forest_leaf[v]` is where the leaves of `v` start there; the model keeps its leaves in that
//! order and copies them out in its leaf order). Nothing here changes the model.

use glam::{Quat, Vec3};

use super::{leaves, OliapuramModel};
use crate::material::DragLaw;

/// One segment's constants, as the dynamics phase reads them (see `levels::SegmentBody`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SegmentConstants {
    /// The rest weight moment over I [1/s²] (zero unless the material pre-stresses the springs).
    pub weight_rest: Vec3,
    /// Fixed end to centre of mass \[m\].
    pub centroid: f32,
    /// σ·S_f/I of Eq. 14 [1/(m·s)].
    pub wind_gain: f32,
    /// m·g/I [1/(m·s²)].
    pub weight_gain: f32,
    /// μ/I of Eq. 23 [1/rad].
    pub damping_gain: f32,
    /// ω₀² = k/I [1/s²].
    pub w2: f32,
    /// 1/(1 + ½·Δt²·ω₀²).
    pub den: f32,
    /// The parent's angular acceleration per radian of this segment's deflection (Eqs. 15, 18,
    /// 19) [1/s²].
    pub propagation: f32,
}

/// One leaf's constants, as the dynamics phase reads them (see `leaves::LeafBody`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LeafConstants {
    /// The segment's angular acceleration per radian of the leaf's angle, world axes [1/s²].
    pub reaction: Vec3,
    /// (L/2)·σ·area/I [1/(m·s)].
    pub wind_gain: f32,
    /// ω₀² = k/I [1/s²].
    pub w2: f32,
    /// 1/(1 + ½·Δt²·ω₀²).
    pub den: f32,
    /// Orientation in the segment's frame at rest.
    pub rest: Quat,
    /// Hinge distance from the segment's base along its axis \[m\].
    pub along: f32,
    /// Half the blade length \[m\].
    pub half_length: f32,
    /// Moment of inertia about the hinge [kg·m²].
    pub inertia: f32,
}

/// The model's static data and state, copied out (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct OliapuramExport {
    /// The time step the constants were made for \[s\].
    pub dt: f32,
    /// Where each depth level starts (level indices); one more entry than levels.
    pub starts: Vec<u32>,
    /// Forest index of each level index.
    pub order: Vec<u32>,
    /// Level index of each forest index.
    pub level_of: Vec<u32>,
    /// Level index of each parent, `NO_PARENT` for roots.
    pub parent: Vec<u32>,
    /// Children of `v`: `child_start[v]..child_start[v + 1]`.
    pub child_start: Vec<u32>,
    /// Leaves of `v` in the model's leaf order: `leaf_start[v]..leaf_start[v + 1]`.
    pub leaf_start: Vec<u32>,
    /// Where the leaves of `v` start in the forest's leaf order.
    pub forest_leaf: Vec<u32>,
    /// Root bases (level 0) \[m\].
    pub root_base: Vec<Vec3>,
    /// Length l \[m\].
    pub length: Vec<f32>,
    /// Inertia m·l²/3 about the fixed end (Eq. 11) [kg·m²].
    pub inertia: Vec<f32>,
    /// Rest orientation relative to the parent.
    pub rest: Vec<Quat>,
    /// Every segment's constants.
    pub segments: Vec<SegmentConstants>,
    /// Every leaf's constants, in the model's leaf order.
    pub leaves: Vec<LeafConstants>,
    /// μ/I of every leaf [1/rad].
    pub leaf_damping_gain: f32,
    /// How the wind's drag grows with the relative speed (`kernels::segment_drag`,
    /// `kernels::leaf_drag`).
    pub drag_law: DragLaw,
    /// Deflection θ' and rate ω of every segment (level order).
    pub phi: Vec<Vec3>,
    pub omega: Vec<Vec3>,
    /// Angle ψ and rate of every leaf (model leaf order).
    pub psi: Vec<f32>,
    pub psi_dot: Vec<f32>,
}

impl OliapuramModel {
    /// A copy of the model's static data and state in its own orders (see [`OliapuramExport`]).
    pub fn export(&self) -> OliapuramExport {
        let (lv, lf, s) = (&self.levels, &self.leaves, &self.state);
        OliapuramExport {
            dt: self.params.dt,
            starts: lv.starts.clone(),
            order: lv.order.clone(),
            level_of: lv.level_of.clone(),
            parent: lv.parent.clone(),
            child_start: lv.child_start.clone(),
            leaf_start: lv.leaf_start.clone(),
            forest_leaf: lv.forest_leaf.clone(),
            root_base: lv.root_base.clone(),
            length: lv.length.clone(),
            inertia: lv.inertia.clone(),
            rest: lv.rest.clone(),
            segments: lv
                .body
                .iter()
                .map(|b| SegmentConstants {
                    weight_rest: b.weight_rest,
                    centroid: b.centroid,
                    wind_gain: b.wind_gain,
                    weight_gain: b.weight_gain,
                    damping_gain: b.damping_gain,
                    w2: b.w2,
                    den: b.den,
                    propagation: b.propagation,
                })
                .collect(),
            leaves: leaves::model_order(lv)
                .map(|j| LeafConstants {
                    reaction: lf.reaction[j],
                    wind_gain: lf.wind_gain[j],
                    w2: lf.w2[j],
                    den: lf.den[j],
                    rest: lf.rest[j],
                    along: lf.along[j],
                    half_length: lf.half_length[j],
                    inertia: lf.inertia[j],
                })
                .collect(),
            leaf_damping_gain: lf.damping_gain,
            drag_law: lv.drag_law,
            phi: s.phi.clone(),
            omega: s.omega.clone(),
            psi: leaves::model_order(lv).map(|j| s.psi[j]).collect(),
            psi_dot: leaves::model_order(lv).map(|j| s.psi_dot[j]).collect(),
        }
    }
}
