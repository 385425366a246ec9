//! Branches breaking and trees uprooting in Oliapuram & Kumar's model.
//!
//! The moment a joint carries. A segment's restoration is K = -k·θ' (Eq. 15), a moment about
//! its fixed end, with θ' its deflection from the generated shape (a 3-vector in the world's
//! axes); k·θ' is what the joint's wood carries beyond the generated shape. The generated shape
//! is the tree under its own weight (the paper neglects gravity for that reason), so when the
//! material pre-stresses the springs (`Material::compensate_gravity`) the joint also carries,
//! at rest, the weight moment G of everything it holds up, G = Σ_subtree (c_j - b) × m_j·g
//! (c_j the centres of mass at rest, b the joint, m_j wood and leaves): the spring's moment is
//! -(G + k·θ'), and the bending moment the section carries is |G + k·θ'|. (G is taken at the
//! rest pose: the change of the subtree's weight moment as it swings is second order, and the
//! model itself carries only each segment's own, see `kernels::step_segment`.) Without the
//! pre-stress the segments sag onto their springs and the moment is |k·θ'| alone.
//!
//! The rule is Weber's (see `dynamics::weber`): a joint breaks when that moment exceeds
//! σ_rupture·π·r³/4 (`Material::rupture_moment`, r the segment's thickness Th of Eqs. 19 and
//! 22, the one its restoration constant is made of: its mean radius, at least `min_radius` and
//! the pipe-model radius of what it carries, `Levels::thickness`); a root uproots
//! its tree when its moment exceeds `Material::anchorage` × the tree's generated mass. The
//! step checks every joint cheaply inside its dynamics loops, against a slack |θ'| ≤
//! (M_limit - |G|)/k that implies |G + k·θ'| ≤ M_limit; only a step where some deflection
//! passes its slack checks the exact rule, joint by joint, afterwards.
//!
//! What breaks leaves the model (`mask`): the piece's first segment stops pulling on its parent
//! (its back-propagation factor, Eqs. 18–19, is zeroed), and every segment and leaf of the piece
//! is frozen at rest (no wind, weight or leaf reaction; deflections, rates and leaf angles
//! zeroed, so each stays exactly at rest). The weight moments G of the tree are recomputed
//! without the piece. The piece goes to the debris as a free rigid body.

use glam::{Quat, Vec3};

use super::kernels::{renormalize, rotation};
use super::leaves::Leaves;
use super::levels::Levels;
use crate::dynamics::pose::segment_axis;
use crate::dynamics::weber::{grown_moments, GROWN_MARGIN};
use crate::dynamics::Pose;
use crate::forest::{Forest, NO_PARENT};

/// Per segment (level order): the weight moment G it holds up at rest, its restoration
/// constant k, its limit moment and the slack its deflection may reach unchecked.
#[derive(Clone, Debug, Default)]
pub(super) struct Strength {
    pub weight: Vec<Vec3>,
    pub k: Vec<f32>,
    pub limit: Vec<f32>,
    /// ((limit - |G|)/k)², the squared deflection below which the joint surely holds
    /// (infinite for segments of broken pieces, negative when it cannot hold at rest).
    pub slack: Vec<f32>,
}

impl Strength {
    /// The strength of every joint, from the material and the rest pose (θ' = 0), leaving out
    /// the segments `gone`.
    pub fn new(forest: &Forest, levels: &Levels, gravity: f32, gone: &[bool]) -> Strength {
        let n = forest.segment_count();
        let s = &forest.seg;
        let m = &forest.material;
        let mass = |i: usize| if gone[i] { 0.0 } else { s.mass[i] };
        // The rest pose, in the forest's order (parents first).
        let mut rest = Pose {
            base: vec![Vec3::ZERO; n],
            orient: vec![Quat::IDENTITY; n],
            ..Pose::default()
        };
        for i in 0..n {
            let v = levels.level_of[i] as usize;
            rest.orient[i] = levels.rest_world[v];
            rest.base[i] = match s.parent[i] {
                NO_PARENT => levels.root_base[v],
                p => {
                    let p = p as usize;
                    rest.base[p] + segment_axis(rest.orient[p]) * s.length[p]
                }
            };
        }
        // The moment the wind the trees grew in puts on each joint in the rest pose: the
        // floor of its rupture moment (`weber::grown_moments`).
        let grown = grown_moments(forest, &rest.base, &rest.orient);
        // Mass and first moment Σ m·c of every subtree, tips first (forest order: parents
        // before children).
        let (mut sub_mass, mut sub_first) = (vec![0.0f32; n], vec![Vec3::ZERO; n]);
        for i in (0..n).rev() {
            let v = levels.level_of[i] as usize;
            let c = rest.base[i] + segment_axis(rest.orient[i]) * levels.body[v].centroid;
            sub_mass[i] += mass(i);
            sub_first[i] += c * mass(i);
            if s.parent[i] != NO_PARENT {
                let p = s.parent[i] as usize;
                let (a, b) = (sub_mass[i], sub_first[i]);
                sub_mass[p] += a;
                sub_first[p] += b;
            }
        }
        let mut out = Strength {
            weight: vec![Vec3::ZERO; n],
            k: vec![0.0; n],
            limit: vec![0.0; n],
            slack: vec![0.0; n],
        };
        for tree in &forest.trees {
            let r = tree.segments.start as usize..tree.segments.end as usize;
            let tree_mass: f32 = s.mass[r.clone()].iter().sum();
            for i in r {
                let v = levels.level_of[i] as usize;
                let g = if m.compensate_gravity {
                    (sub_first[i] - rest.base[i] * sub_mass[i]).cross(Vec3::new(0.0, -gravity, 0.0))
                } else {
                    Vec3::ZERO
                };
                let k = levels.body[v].w2 * levels.inertia[v];
                // At least what the wind it grew in asks of it, and twice what it holds at rest
                // (`weber::rupture::GROWN_MARGIN`).
                let limit = if s.parent[i] == NO_PARENT {
                    m.anchorage_moment(tree_mass)
                } else {
                    m.rupture_moment(levels.thickness[v]).max(grown[i])
                }
                .max(GROWN_MARGIN * g.length());
                let room = (limit - g.length()) / k;
                out.weight[v] = g;
                out.k[v] = k;
                out.limit[v] = limit;
                out.slack[v] = if gone[i] {
                    f32::INFINITY
                } else if room >= 0.0 {
                    room * room
                } else {
                    -1.0
                };
            }
        }
        out
    }

    /// The bending moment joint `v` (level order) carries at deflection `phi` \[N·m\].
    #[inline]
    pub fn moment(&self, v: usize, phi: Vec3) -> f32 {
        (self.weight[v] + phi * self.k[v]).length()
    }

    pub fn heap_bytes(&self) -> usize {
        use crate::dynamics::vec_bytes as b;
        b(&self.weight) + b(&self.k) + b(&self.limit) + b(&self.slack)
    }
}

/// Whether a deflection of `phi` (a run of level indices) passes its slack: the cheap check
/// the dynamics loops make.
#[inline]
pub(super) fn past_slack(phi: &[Vec3], slack: &[f32]) -> bool {
    let mut over = false;
    for (p, &s) in phi.iter().zip(slack) {
        over |= p.length_squared() > s;
    }
    over
}

/// The segments (forest order) of the piece that breaks off at segment `first`: it and every
/// descendant not already gone, parents first, within the tree `tree` (forest range).
pub(super) fn piece(forest: &Forest, tree: std::ops::Range<usize>, first: usize, gone: &[bool]) -> Vec<u32> {
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
    tree: std::ops::Range<usize>,
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
