//! Branches breaking and trees uprooting in Oliapuram & Kumar's model.
//!
//! The moment a joint carries, by statics. The model passes moments, not forces, from a child to
//! its parent (Eqs. 18–19): what reaches a joint's spring is well below the bending moment the
//! real beam carries there (a 1,597-segment tree in a 36 m/s storm: at most 0.46× its rupture
//! moment over 20 s). So the moment a joint carries is measured outside the model's load path,
//! from the external loads on everything the joint holds up, in the current pose:
//! - every live segment j (not broken off): the bark drag the model applies to it this step
//!   (Eq. 14, `kernels::segment_drag`, the force the dynamics phase computed from the step's
//!   start) plus the weight of its wood, m_wood·g, both at its centroid c_j (the frustum's
//!   centre of mass, where the model applies its wind: `SegmentBody::centroid`);
//! - every live leaf l: the wind force the model applies to its blade this step (§4, the
//!   normal component, `kernels::leaf_drag`, force = moment about the hinge / (L/2) along the
//!   blade's normal at the step's start) plus its weight m_l·g, at the blade's centre (the
//!   hinge plus L/2 along the blade), counted in its segment's subtree.
//!
//! Quasi-static: external loads only, no inertial (d'Alembert) terms. Subtree sums from the
//! tips to the root (the forest's parents-first order reversed): S_F(i) = Σ F and
//! S_T(i) = Σ c × F over segment i and everything it holds up; the moment at joint i (its base
//! p_i) is M_i = S_T(i) - p_i × S_F(i), and its bending moment is the part perpendicular to the
//! segment's current axis a_i, |M_i - (M_i·a_i)·a_i| (the axial part twists the section).
//! Positions are taken relative to the tree's root base (the same M_i, with less rounding far
//! from the origin). For a static horizontal cantilever this is beam theory's M(x) = ∫ w·(s-x)
//! ds of the load w beyond x.
//!
//! Masses. `Forest::seg.mass` holds a segment's wood and its leaves; the leaves' weight acts
//! here at their own blades, so the segment's own load is its wood only, m_wood = m - Σ m_l
//! (at least 0), with m_l = the leaf mass the model's leaves have
//! (`Material::leaf_mass_per_area` × π/4·L²·aspect, `Leaves::mass`): every kilogram counted
//! once, the tree's total as generated.
//!
//! The rule (Weber's, see `dynamics::weber`): a joint breaks when its bending moment exceeds
//! σ_rupture·π·r³/4 (`Material::rupture_moment`, r the segment's thickness Th of Eqs. 19 and 22:
//! its mean radius, at least `min_radius` and the pipe-model radius of what it carries,
//! `Levels::thickness`), at least the moment the wind the trees grew in puts on it
//! (`weber::grown_moments`), and, when the material pre-stresses the springs to hold the
//! generated shape (`Material::compensate_gravity`), at least [`GROWN_MARGIN`] × the bending
//! moment it carries at rest (the same statics, weights only, in the generated shape: the tree
//! grew so). A root uproots its tree when its bending moment exceeds `Material::anchorage` ×
//! the tree's generated mass (at least the same margin over its rest moment).
//!
//! Skipping the exact check. Segments are rigid, so |c_j - p_i| is at most the path length r_ij
//! from p_i to c_j along the wood (static). Every drag force is a_j·p_j with a_j static (σ·S_f
//! for a segment, σ_leaf·area for a leaf) and p_j = |F_drag,j|/a_j the "pressure" it felt
//! (scale(|u|)·|u|, or |u·n|·scale for a leaf). Hence |M_i| ≤ q·B_i + G_i with
//! B_i = Σ a_j·r_ij, G_i = Σ W_j·r_ij over the subtree and q the largest p_j in the tree; a
//! tree whose q stays below min_i (limit_i - G_i)/B_i (`Strength::safe`) cannot break, and its
//! exact statics are skipped. Each body's test is a squared comparison per segment and leaf
//! (`Strength::seg_cap`, `leaf_cap`).
//!
//! What breaks leaves the model (`mask`): the piece's first segment stops pulling on its parent
//! (its back-propagation factor, Eqs. 18–19, is zeroed), and every segment and leaf of the piece
//! is frozen at rest (no wind, weight or leaf reaction; deflections, rates and leaf angles
//! zeroed, so each stays exactly at rest). Its loads leave the statics of the tree, and the
//! limits are recomputed without it. The piece goes to the debris as a free rigid body.
//!
//! Invariants: the check of a tree reads only that tree's loads and pose and sums in a fixed
//! order (the forest's, reversed), so its answer does not depend on the jobs or the schedule.

use std::ops::Range;

use glam::{Quat, Vec3};

use super::kernels::{renormalize, rotation};
use super::leaves::{self, Leaves};
use super::levels::Levels;
use crate::dynamics::pose::segment_axis;
use crate::dynamics::weber::{grown_moments, GROWN_MARGIN};
use crate::dynamics::Pose;
use crate::forest::{Forest, NO_PARENT};

/// The drag of one step as the dynamics phase leaves it: per segment (level order) the drag
/// over the segment's inertia, F/I (`kernels::segment_drag`); per leaf (the forest's leaf
/// order) the blade's normal times its wind's angular acceleration about the hinge
/// (`kernels::leaf_drag`), so that F = that × I/(L/2) ([`Loads::leaf_force`]).
#[derive(Clone, Copy)]
pub(super) struct Drag<'a> {
    pub segments: &'a [Vec3],
    pub leaves: &'a [Vec3],
}

/// The static part of the loads: weights and the factors that turn the stored drag into forces.
#[derive(Clone, Debug, Default)]
pub(super) struct Loads {
    /// Per segment (forest order): the weight of its wood, m_wood·g, 0 once gone \[N\].
    pub wood: Vec<f32>,
    /// Per leaf (forest order): its weight m_l·g, 0 once its segment is gone \[N\].
    pub leaf: Vec<f32>,
    /// Per leaf: I/(L/2), from its stored drag to its force \[kg·m\].
    pub leaf_force: Vec<f32>,
}

/// Per segment (forest order): its limit and the caps of the cheap check; per tree: the
/// pressure below which it cannot break.
#[derive(Clone, Debug, Default)]
pub(super) struct Strength {
    pub loads: Loads,
    /// The bending moment at which the joint breaks (a root: uproots) \[N·m\].
    pub limit: Vec<f32>,
    /// Per segment (forest order): (safe·σS_f/I)², the squared stored drag up to which its tree
    /// surely holds (infinite once gone, negative when the tree is checked every step).
    pub seg_cap: Vec<f32>,
    /// Per leaf (forest order): the same for its stored drag.
    pub leaf_cap: Vec<f32>,
    /// Per tree: the largest pressure (drag force per unit of a_j) that cannot break it \[N/m²\].
    pub safe: Vec<f32>,
    /// Per segment: the moment the wind the trees grew in puts on its joint in the rest pose
    /// (`weber::grown_moments`), the floor of its rupture moment \[N·m\].
    grown: Vec<f32>,
}

/// A pose, or a part of one: segments from forest index `seg0` on, leaves from forest leaf
/// `leaf0` on.
#[derive(Clone, Copy)]
pub(super) struct At<'a> {
    pub base: &'a [Vec3],
    pub orient: &'a [Quat],
    pub leaf_pos: &'a [Vec3],
    pub leaf_orient: &'a [Quat],
    pub seg0: usize,
    pub leaf0: usize,
}

impl<'a> At<'a> {
    /// The whole of `pose`.
    pub fn of(pose: &'a Pose) -> At<'a> {
        At {
            base: &pose.base,
            orient: &pose.orient,
            leaf_pos: &pose.leaf_pos,
            leaf_orient: &pose.leaf_orient,
            seg0: 0,
            leaf0: 0,
        }
    }
}

/// The segments' bases and orientations at rest (θ' = 0) of the forest range `r`, from
/// `r.start` on; `r` holds whole trees (parents inside it).
fn rest_segments(forest: &Forest, levels: &Levels, r: Range<usize>) -> (Vec<Vec3>, Vec<Quat>) {
    let s = &forest.seg;
    let (mut base, mut orient) = (vec![Vec3::ZERO; r.len()], vec![Quat::IDENTITY; r.len()]);
    for i in r.clone() {
        let (k, v) = (i - r.start, levels.level_of[i] as usize);
        orient[k] = levels.rest_world[v];
        base[k] = match s.parent[i] {
            NO_PARENT => levels.root_base[v],
            p => {
                let p = p as usize - r.start;
                base[p] + segment_axis(orient[p]) * s.length[p + r.start]
            }
        };
    }
    (base, orient)
}

impl Strength {
    /// The strength of every joint, from the material and the rest pose (θ' = 0), leaving out
    /// the segments `gone`.
    pub fn new(forest: &Forest, levels: &Levels, leaves: &Leaves, gravity: f32, gone: &[bool]) -> Strength {
        let (n, m) = (forest.segment_count(), forest.leaf_count());
        let (base, orient) = rest_segments(forest, levels, 0..n);
        let mut out = Strength {
            loads: Loads {
                wood: vec![0.0; n],
                leaf: vec![0.0; m],
                leaf_force: (0..m).map(|l| leaves.inertia[l] / leaves.half_length[l]).collect(),
            },
            limit: vec![0.0; n],
            seg_cap: vec![f32::INFINITY; n],
            leaf_cap: vec![f32::INFINITY; m],
            safe: vec![f32::INFINITY; forest.tree_count()],
            grown: grown_moments(forest, &base, &orient),
        };
        for t in 0..forest.tree_count() {
            out.update_tree(forest, levels, leaves, gravity, gone, t);
        }
        out
    }

    /// Recomputes the loads, limits and caps of tree `t`, leaving out the segments `gone` (after
    /// a piece of it broke off).
    pub fn update_tree(
        &mut self,
        forest: &Forest,
        levels: &Levels,
        leaves: &Leaves,
        gravity: f32,
        gone: &[bool],
        t: usize,
    ) {
        let s = &forest.seg;
        let m = &forest.material;
        let tree = &forest.trees[t];
        let r = tree.segments.start as usize..tree.segments.end as usize;
        let lr = s.leaf_start[r.start] as usize..s.leaf_start[r.end] as usize;
        // Weights: the wood at the segment, each leaf at its blade.
        let loads = &mut self.loads;
        for i in r.clone() {
            let own = forest.leaves_of(i);
            let leaf_mass: f32 = leaves.mass[own.clone()].iter().sum();
            loads.wood[i] = if gone[i] {
                0.0
            } else {
                (s.mass[i] - leaf_mass).max(0.0) * gravity
            };
            for l in own {
                loads.leaf[l] = if gone[i] { 0.0 } else { leaves.mass[l] * gravity };
            }
        }
        // What each joint carries at rest, weights only, when the springs hold it.
        let mut at_rest = vec![0.0f32; r.len()];
        if m.compensate_gravity {
            let (base, orient) = rest_segments(forest, levels, r.clone());
            let (mut leaf_pos, mut leaf_orient) = (vec![Vec3::ZERO; lr.len()], vec![Quat::IDENTITY; lr.len()]);
            leaves::pose(
                &s.leaf_start,
                leaves,
                r.start,
                (&orient, &base),
                &vec![0.0; lr.len()],
                (&mut leaf_pos, &mut leaf_orient),
                &mut Vec::new(),
            );
            let at = At {
                base: &base,
                orient: &orient,
                leaf_pos: &leaf_pos,
                leaf_orient: &leaf_orient,
                seg0: r.start,
                leaf0: lr.start,
            };
            let statics = Statics {
                forest,
                levels,
                leaves,
                loads: &self.loads,
                gone,
            };
            let mut sums = vec![(Vec3::ZERO, Vec3::ZERO); r.len()];
            statics.bending(r.clone(), at, None, &mut sums, |i, b| at_rest[i - r.start] = b);
        }
        let tree_mass: f32 = s.mass[r.clone()].iter().sum();
        for i in r.clone() {
            let v = levels.level_of[i] as usize;
            self.limit[i] = if s.parent[i] == NO_PARENT {
                m.anchorage_moment(tree_mass)
            } else {
                m.rupture_moment(levels.thickness[v]).max(self.grown[i])
            }
            .max(GROWN_MARGIN * at_rest[i - r.start]);
        }
        // The bound of the cheap check: per joint, A = Σ a_j, W = Σ W_j, B = Σ a_j·r_ij and
        // G = Σ W_j·r_ij over its subtree, r_ij the path length from its base to the load,
        // gathered tips first (a child's sums reach its parent over the parent's length).
        let loads = &self.loads;
        let mut acc = vec![[0.0f32; 4]; r.len()];
        let mut safe = f32::INFINITY;
        for i in r.clone().rev() {
            if gone[i] {
                continue;
            }
            let v = levels.level_of[i] as usize;
            let [mut a, mut w, mut b, mut g] = acc[i - r.start];
            let (area, at) = (levels.body[v].wind_gain * levels.inertia[v], levels.body[v].centroid);
            a += area;
            b += area * at;
            w += loads.wood[i];
            g += loads.wood[i] * at;
            for l in forest.leaves_of(i) {
                let (area, at) = (
                    leaves.wind_gain[l] * loads.leaf_force[l],
                    leaves.along[l] + leaves.half_length[l],
                );
                a += area;
                b += area * at;
                w += loads.leaf[l];
                g += loads.leaf[l] * at;
            }
            let room = self.limit[i] - g;
            let q = if room < 0.0 {
                -1.0
            } else if b > 0.0 {
                room / b
            } else {
                f32::INFINITY
            };
            safe = safe.min(q);
            if s.parent[i] != NO_PARENT {
                let p = s.parent[i] as usize;
                let l = s.length[p];
                let e = &mut acc[p - r.start];
                e[0] += a;
                e[1] += w;
                e[2] += b + l * a;
                e[3] += g + l * w;
            }
        }
        self.safe[t] = safe;
        let cap = |gain: f32| {
            if safe < 0.0 {
                -1.0
            } else {
                (safe * gain) * (safe * gain)
            }
        };
        for i in r {
            let gone = gone[i];
            let v = levels.level_of[i] as usize;
            self.seg_cap[i] = if gone {
                f32::INFINITY
            } else {
                cap(levels.body[v].wind_gain)
            };
            for l in forest.leaves_of(i) {
                self.leaf_cap[l] = if gone { f32::INFINITY } else { cap(leaves.wind_gain[l]) };
            }
        }
    }

    pub fn heap_bytes(&self) -> usize {
        use crate::dynamics::vec_bytes as b;
        b(&self.loads.wood)
            + b(&self.loads.leaf)
            + b(&self.loads.leaf_force)
            + b(&self.limit)
            + b(&self.seg_cap)
            + b(&self.leaf_cap)
            + b(&self.safe)
            + b(&self.grown)
    }
}

/// What the statics of a tree read.
#[derive(Clone, Copy)]
pub(super) struct Statics<'a> {
    pub forest: &'a Forest,
    pub levels: &'a Levels,
    pub leaves: &'a Leaves,
    pub loads: &'a Loads,
    pub gone: &'a [bool],
}

impl Statics<'_> {
    /// Whether some body of the tree `tree` (forest range) felt more drag than its cap (the
    /// cheap check: below every cap no joint of the tree can reach its limit).
    pub fn past_caps(&self, strength: &Strength, tree: Range<usize>, drag: Drag<'_>) -> bool {
        let mut over = false;
        for i in tree.clone() {
            let v = self.levels.level_of[i] as usize;
            over |= drag.segments[v].length_squared() > strength.seg_cap[i];
        }
        let s = &self.forest.seg;
        let l = s.leaf_start[tree.start] as usize..s.leaf_start[tree.end] as usize;
        for (d, &c) in drag.leaves[l.clone()].iter().zip(&strength.leaf_cap[l]) {
            over |= d.length_squared() > c;
        }
        over
    }

    /// The bending moment every live joint of the tree `tree` (forest range) carries in `at`
    /// under the weights and, when given, the step's drag (see the module documentation),
    /// handed to `out(joint, moment)` from the tips to the root. `sums` (the tree's length) is
    /// working room.
    pub fn bending(
        &self,
        tree: Range<usize>,
        at: At<'_>,
        drag: Option<Drag<'_>>,
        sums: &mut [(Vec3, Vec3)],
        mut out: impl FnMut(usize, f32),
    ) {
        let (s, lv, lf, loads) = (&self.forest.seg, self.levels, self.leaves, self.loads);
        sums.fill((Vec3::ZERO, Vec3::ZERO));
        let (s0, l0) = (at.seg0, at.leaf0);
        let origin = at.base[tree.start - s0];
        for i in tree.clone().rev() {
            if self.gone[i] {
                continue;
            }
            let v = lv.level_of[i] as usize;
            let (mut sf, mut st) = sums[i - tree.start];
            let (base, axis) = (at.base[i - s0] - origin, segment_axis(at.orient[i - s0]));
            let c = base + axis * lv.body[v].centroid;
            let mut f = Vec3::new(0.0, -loads.wood[i], 0.0);
            if let Some(d) = drag {
                f += d.segments[v] * lv.inertia[v];
            }
            sf += f;
            st += c.cross(f);
            for l in self.forest.leaves_of(i) {
                let c = at.leaf_pos[l - l0] - origin + segment_axis(at.leaf_orient[l - l0]) * lf.half_length[l];
                let mut f = Vec3::new(0.0, -loads.leaf[l], 0.0);
                if let Some(d) = drag {
                    f += d.leaves[l] * loads.leaf_force[l];
                }
                sf += f;
                st += c.cross(f);
            }
            let m = st - base.cross(sf);
            out(i, (m - axis * m.dot(axis)).length());
            if s.parent[i] != NO_PARENT {
                let p = s.parent[i] as usize - tree.start;
                sums[p].0 += sf;
                sums[p].1 += st;
            }
        }
    }

    /// The joints of tree `tree` whose bending moment exceeds their limit, tips first.
    pub fn over(
        &self,
        strength: &Strength,
        tree: Range<usize>,
        pose: &Pose,
        drag: Drag<'_>,
        sums: &mut [(Vec3, Vec3)],
    ) -> Vec<u32> {
        let mut over = Vec::new();
        self.bending(tree, At::of(pose), Some(drag), sums, |i, b| {
            if b > strength.limit[i] {
                over.push(i as u32);
            }
        });
        over
    }
}

/// The segments (forest order) of the piece that breaks off at segment `first`: it and every
/// descendant not already gone, parents first, within the tree `tree` (forest range).
pub(super) fn piece(forest: &Forest, tree: Range<usize>, first: usize, gone: &[bool]) -> Vec<u32> {
    let s = &forest.seg;
    let mut inside = vec![false; tree.len()];
    inside[first - tree.start] = true;
    let mut out = vec![first as u32];
    for j in first + 1..tree.end {
        let p = s.parent[j];
        if p != NO_PARENT && inside[p as usize - tree.start] && !gone[j] {
            inside[j - tree.start] = true;
            out.push(j as u32);
        }
    }
    out
}

/// World velocity of every segment's centre of tree `tree` (forest range) \[m/s\]: the finite
/// difference of the centres between the pose and the pose of the deflections one step back
/// along their rates, θ' - h·ω (the integration of `kernels::integrate`, tree alone).
pub(super) fn centre_velocities(
    levels: &Levels,
    forest: &Forest,
    tree: Range<usize>,
    (phi, omega): (&[Vec3], &[Vec3]),
    pose: &Pose,
    h: f32,
) -> Vec<Vec3> {
    let s = &forest.seg;
    let n = tree.len();
    let (mut orient, mut base) = (vec![Quat::IDENTITY; n], vec![Vec3::ZERO; n]);
    let centre = |b: Vec3, q: Quat, l: f32| b + segment_axis(q) * (0.5 * l);
    let mut out = Vec::with_capacity(n);
    for i in tree.clone() {
        let (k, v) = (i - tree.start, levels.level_of[i] as usize);
        let turn = rotation(phi[v] - omega[v] * h);
        match s.parent[i] {
            NO_PARENT => {
                orient[k] = renormalize(turn * levels.rest[v]);
                base[k] = levels.root_base[v];
            }
            p => {
                let pk = p as usize - tree.start;
                let qp = orient[pk];
                orient[k] = renormalize(turn * (qp * levels.rest[v]));
                base[k] = base[pk] + segment_axis(qp) * s.length[p as usize];
            }
        }
        let l = s.length[i];
        out.push((centre(pose.base[i], pose.orient[i], l) - centre(base[k], orient[k], l)) / h);
    }
    out
}

/// Freezes the segments `gone` (forest order) and their leaves in the model's static data: no
/// wind, weight or leaf reaction on them, and none of them pulls on its parent.
pub(super) fn mask(forest: &Forest, levels: &mut Levels, leaves: &mut Leaves, gone: &[bool]) {
    for (i, _) in gone.iter().enumerate().filter(|(_, &g)| g) {
        let v = levels.level_of[i] as usize;
        let b = &mut levels.body[v];
        b.wind_gain = 0.0;
        b.weight_gain = 0.0;
        b.weight_rest = Vec3::ZERO;
        b.propagation = 0.0;
        for j in forest.leaves_of(i) {
            leaves.reaction[j] = Vec3::ZERO;
            leaves.wind_gain[j] = 0.0;
        }
    }
}
