//! Breakage and uprooting for another implementation of the model's step (the GPU's compute
//! shaders in `sylva_render::dynamics`), which finds the joints over their limits itself and
//! hands them here: what it needs of each joint and body to find them
//! ([`OliapuramModel::breakage_constants`]), and what the model does when they break
//! ([`OliapuramModel::break_joints`]), as [`OliapuramModel`]'s own step does it (`rupture`).
//!
//! The rule the device evaluates is the model's own (`rupture`, quasi-static, external loads
//! only): every live segment j carries the load F_j = its bark drag this step + its wood's
//! weight at its centre of mass c_j, every live leaf the wind force on its blade this step +
//! its weight at its blade's centre; from the tips to the root, S_F(i) = Σ F and
//! S_T(i) = Σ c × F over the subtree of segment i; the moment at joint i (its base p_i) is
//! M_i = S_T(i) - p_i × S_F(i), its bending part |M_i - (M_i·a_i)·a_i| (a_i the segment's
//! axis), and the joint breaks when that exceeds its limit (the rupture moment with its floors;
//! for a root, the tree's anchorage). The weights, force factors and limits handed out are the
//! model's (`rupture::Strength`).
//!
//! Invariants: segments in level order, leaves in the model's leaf order (the export's);
//! broken pieces carry no load (weights zero here, wind gains zero in the masked constants) and
//! an infinite limit, so they neither break again nor load what they hung from.

use glam::{Quat, Vec3};

use super::{leaves, OliapuramModel};
use crate::dynamics::Pose;
use crate::forest::NO_PARENT;

/// Per joint and body, what the device needs to evaluate the breakage rule (see the module
/// docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BreakageConstants {
    /// Per segment (level order): the limit of its joint's bending moment \[N·m\] (infinite
    /// for a segment of a broken piece).
    pub limit: Vec<f32>,
    /// Per segment: the weight of its wood, m·g \[N\] (zero for a broken piece).
    pub weight: Vec<f32>,
    /// Per segment: its inertia about the fixed end, I = m·l²/3 (Eq. 11) [kg·m²]: the bark
    /// drag force is I times the drag the kernels compute (an acceleration per lever).
    pub inertia: Vec<f32>,
    /// Per segment: the level index of its tree's root (whose base the moments are taken
    /// from, for precision far from the origin).
    pub root: Vec<u32>,
    /// Per leaf (model order): I/(L/2), the force along the blade's normal per unit of the
    /// angular acceleration the wind gives it about its hinge \[kg·m\].
    pub leaf_force: Vec<f32>,
    /// Per leaf: the weight of its blade \[N\] (zero for a leaf of a broken piece).
    pub leaf_weight: Vec<f32>,
}

/// The device's state and pose at a break, to carry into the model (see
/// [`OliapuramModel::break_joints`]).
pub struct DeviceState {
    /// Deflection and rate of every segment (level order).
    pub phi: Vec<Vec3>,
    pub omega: Vec<Vec3>,
    /// Angle and rate of every leaf (model order).
    pub psi: Vec<f32>,
    pub psi_dot: Vec<f32>,
    /// The pose (the forest's orders).
    pub pose: Pose,
}

/// The pose of the broken pieces' segments and leaves, to be drawn where the debris is.
#[derive(Clone, Debug, Default)]
pub struct DebrisPose {
    /// (forest segment index, base, orientation).
    pub segments: Vec<(u32, Vec3, Quat)>,
    /// (forest leaf index, position, orientation).
    pub leaves: Vec<(u32, Vec3, Quat)>,
}

impl OliapuramModel {
    /// What the device needs to find the joints that break (see [`BreakageConstants`]),
    /// for the pieces broken off so far: the model's own weights, force factors and limits
    /// (`rupture::Strength`), in the export's orders.
    pub fn breakage_constants(&self) -> BreakageConstants {
        let lv = &self.levels;
        let loads = &self.strength.loads;
        let n = lv.order.len();
        let mut root = vec![0u32; n];
        for v in 0..n {
            root[v] = match lv.parent[v] {
                NO_PARENT => v as u32,
                p => root[p as usize],
            };
        }
        let live = |i: usize| !self.breakage.in_piece(i);
        let weight = lv.order.iter().map(|&i| loads.wood[i as usize]).collect();
        let limit = lv
            .order
            .iter()
            .map(|&i| {
                let i = i as usize;
                if live(i) {
                    self.strength.limit[i]
                } else {
                    f32::INFINITY
                }
            })
            .collect();
        let model_order = || leaves::model_order(lv);
        let leaf_force = model_order().map(|l| loads.leaf_force[l]).collect();
        let leaf_weight = model_order().map(|l| loads.leaf[l]).collect();
        BreakageConstants {
            limit,
            weight,
            inertia: lv.inertia.clone(),
            root,
            leaf_force,
            leaf_weight,
        }
    }

    /// Breaks the joints `over` (level indices) the device found over their limits after its
    /// last step, from the device's state and pose: the model's state and pose become the
    /// device's, and the model's own step breaks them off (`break_off`: tree by tree, tips
    /// first, each piece to the debris with its segments' velocities, a root uprooting what is
    /// left of its tree; then masked, zeroed, the tree's limits updated). The caller uploads
    /// the model again ([`export`](Self::export),
    /// [`breakage_constants`](Self::breakage_constants)). Returns whether anything broke.
    pub fn break_joints(&mut self, over: &[u32], device: DeviceState) -> bool {
        let lv = &self.levels;
        let DeviceState {
            phi,
            omega,
            psi,
            psi_dot,
            pose,
        } = device;
        let s = &mut self.state;
        (s.phi, s.omega) = (phi, omega);
        for (k, j) in leaves::model_order(lv).enumerate() {
            (s.psi[j], s.psi_dot[j]) = (psi[k], psi_dot[k]);
        }
        self.pose = pose;
        let mut joints: Vec<usize> = over
            .iter()
            .map(|&v| lv.order[v as usize] as usize)
            .filter(|&i| !self.breakage.in_piece(i))
            .collect();
        // Tips first within each tree, as the model's statics find them (the forest's order
        // reversed); trees in order.
        joints.sort_unstable_by(|a, b| b.cmp(a));
        joints.dedup();
        let mut by_tree: Vec<(usize, Vec<u32>)> = Vec::new();
        for i in joints {
            let t = self.forest.tree_of(i);
            match by_tree.iter_mut().find(|(u, _)| *u == t) {
                Some((_, js)) => js.push(i as u32),
                None => by_tree.push((t, vec![i as u32])),
            }
        }
        by_tree.sort_by_key(|(t, _)| *t);
        if by_tree.is_empty() {
            return false;
        }
        self.break_off(by_tree);
        true
    }

    /// Steps the debris one time step (as [`step`](Self::step) does after the trees) in the
    /// model's wind, and returns where its pieces' segments and leaves are now (a segment the
    /// debris cap removed is put far below the ground, out of sight). Nothing when nothing
    /// broke.
    pub fn step_debris(&mut self, jobs: &sylva_engine::JobSystem) -> DebrisPose {
        let mut out = DebrisPose::default();
        if !self.breakage.any() {
            return out;
        }
        let debris = self.breakage.debris_mut();
        debris.step(&self.forest, &*self.wind, &self.colliders, self.params.dt, jobs);
        debris.write_pose(&self.forest, &mut self.pose);
        let far = Vec3::new(0.0, -1.0e6, 0.0);
        for i in (0..self.forest.segment_count()).filter(|&i| self.breakage.in_piece(i)) {
            let removed = self.pose.is_removed(i);
            let at = |p: Vec3| if removed { far } else { p };
            out.segments
                .push((i as u32, at(self.pose.base[i]), self.pose.orient[i]));
            for j in self.forest.leaves_of(i) {
                out.leaves
                    .push((j as u32, at(self.pose.leaf_pos[j]), self.pose.leaf_orient[j]));
            }
        }
        out
    }
}
