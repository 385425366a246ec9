//! Branches breaking and trees uprooting in Weber's model.
//!
//! The moment a joint carries. Each joint is an angular spring per plane, torque
//! τ = k·(Θ_i + y_i - Θ_p - y_p - R_i) (Eq. 1's spring term), with k = E·I/l (2·E·I/l at the
//! root, `Material::stiffness_of`): the bend of the joint is the beam's curvature M/(E·I)
//! integrated over the stretch of beam the joint stands for, so k·bend is the bending moment
//! M = E·I·κ of Euler-Bernoulli beam theory (Gere and Goodno, "Mechanics of Materials",
//! §9.2, M = E·I·d²v/dx²). When the material pre-stresses the springs
//! (`Material::compensate_gravity`), the rest angle R is the generated shape less the
//! subtree's gravity torque over k (`WeberModel::compensate_gravity`), so at rest the bend is
//! s/k and the spring carries the whole weight moment s of what it holds up: the pre-stress is
//! part of the moment. The two planes' torques are the moment's two components about the
//! axes their angles turn about, so the moment's magnitude is k·sqrt(bend_x² + bend_z²).
//!
//! The rule (Weber's and Oliapuram's models): a joint breaks when that moment exceeds the
//! section's rupture moment σ_rupture·π·r³/4 (`Material::rupture_moment`, r the segment's base
//! radius, at least the pipe-model radius of what it carries: [`section_radii`], and at least as strong as the
//! wind the tree grew in asks: [`grown_moments`]); a tree's root joint does not break but uproots when its moment exceeds the
//! anchorage moment, `Material::anchorage` × the tree's mass (wood and leaves, as generated:
//! the root plate does not weaken when a branch falls). Either limit is at least
//! [`GROWN_MARGIN`] times the moment the joint holds at rest (the tree grew into its shape). Both compare squared bends with a
//! squared limit per joint, (M_limit/k)², so the check is a few multiplications per joint,
//! run once per step after the solve and the kinematics (in each tree's own job where whole
//! trees are the jobs).
//!
//! What breaks leaves the model: the broken segment and all its descendants become ghosts that
//! carry no mass, inertia, drag or spring (their copies in [`Live`], which the step reads in
//! place of the forest's arrays once anything broke), so they exert no force on what is left;
//! their dampers are kept (raised by h·k, so each ghost's row of Eq. 1 keeps the diagonal it
//! had) so that the matrix stays positive definite: a massless ghost then follows its parent's
//! rate and passes on no force. The articulated moments and Weber's diagonal inertia of the
//! tree are recomputed from the live masses and the system matrix refactored, once per break.
//! The piece itself is handed to the debris as a free rigid body.

use glam::{Quat, Vec3};

use super::kernels::{self, Contacts, Part, TreeStatic};
use crate::dynamics::debris::Debris;
use crate::dynamics::pose::segment_axis;
use crate::dynamics::Pose;
use crate::forest::{Forest, NO_PARENT};

/// The masked copies of the segment arrays the step reads, once anything broke.
#[derive(Clone, Debug, Default)]
pub(super) struct Live {
    pub mass: Vec<f32>,
    pub inertia: Vec<f32>,
    pub drag: Vec<f32>,
    pub leaf_drag: Vec<f32>,
    pub stiffness: Vec<f32>,
    pub damping: Vec<f32>,
}

impl Live {
    pub fn of(forest: &Forest) -> Live {
        let s = &forest.seg;
        Live {
            mass: s.mass.clone(),
            inertia: s.inertia.clone(),
            drag: s.drag.clone(),
            leaf_drag: s.leaf_drag.clone(),
            stiffness: s.stiffness.clone(),
            damping: s.damping.clone(),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        use crate::dynamics::vec_bytes as b;
        b(&self.mass) + b(&self.inertia) + b(&self.drag) + b(&self.leaf_drag) + b(&self.stiffness) + b(&self.damping)
    }
}

/// A joint carries at least this many times the moment it holds at rest in the generated
/// shape before it breaks or uproots: a tree grew into that shape, so a section the generator
/// made too thin for its own rest load (stems taper towards their tips whatever they carry:
/// the built-in species' 1 mm twigs hold leaves weighing more than σ_rupture·π·r³/4 allows)
/// is not one that stood. Sylva's assumption, a safety factor of 2 against the tree's own
/// weight; it changes nothing for a joint that holds less than half its rupture moment at rest.
pub const GROWN_MARGIN: f32 = 2.0;

/// The radius of the section that breaks at each joint: the segment's base radius, at least
/// the pipe-model radius of what it carries, sqrt(Σ r_child²) over its children's base radii
/// (the pipe model: Shinozaki, Yoda, Hozumi and Kira 1964, "A quantitative analysis of plant
/// form - the pipe model theory", Jpn. J. Ecol. 14:97-105; da Vinci's rule). Generated stems
/// taper towards their tips whatever side branches they still carry, thinner there than the
/// wood that holds those branches.
pub fn section_radii(forest: &Forest) -> Vec<f32> {
    let s = &forest.seg;
    let n = forest.segment_count();
    let mut carried = vec![0.0f32; n];
    for i in 0..n {
        if s.parent[i] != NO_PARENT {
            carried[s.parent[i] as usize] += s.radius_base[i] * s.radius_base[i];
        }
    }
    (0..n).map(|i| s.radius_base[i].max(carried[i].sqrt())).collect()
}

/// Per joint, the moment \[N·m\] a steady horizontal wind of `Material::grown_wind` puts on it
/// in the rest pose (`base`, `orient`: the generated shape): the drag of every segment and leaf
/// it carries, at the drag law's strength for that speed, acting at the segments' centres
/// (leaves at their segment's). For a wind of unit horizontal direction d, the segments beyond
/// joint i with drag forces F_j·d at centres c_j turn it by Σ F_j·(c_j − p_i) × d = R_i × d,
/// R_i = Σ F_j·c_j − p_i·Σ F_j; over every horizontal d the largest is |R_i| (a d across R_i's
/// horizontal part). Both sums gather from the tips down in one pass (parents come first).
/// The wind-grown floor of a section: it is at least as strong as this (see
/// `Material::grown_wind`).
pub fn grown_moments(forest: &Forest, base: &[Vec3], orient: &[Quat]) -> Vec<f32> {
    let s = &forest.seg;
    let m = &forest.material;
    let n = forest.segment_count();
    let w = m.grown_wind;
    if w <= 0.0 {
        return vec![0.0; n];
    }
    let (bark_scale, leaf_scale) = (m.drag_scale(w, false), m.drag_scale(w, true));
    let (mut sum, mut first) = (vec![0.0f32; n], vec![Vec3::ZERO; n]);
    for i in (0..n).rev() {
        let leaf = s.leaf_drag[i];
        let f = ((s.drag[i] - leaf) * bark_scale + leaf * leaf_scale) * w;
        let centre = base[i] + segment_axis(orient[i]) * (0.5 * s.length[i]);
        sum[i] += f;
        first[i] += centre * f;
        if s.parent[i] != NO_PARENT {
            let p = s.parent[i] as usize;
            let (a, b) = (sum[i], first[i]);
            sum[p] += a;
            first[p] += b;
        }
    }
    (0..n).map(|i| (first[i] - base[i] * sum[i]).length()).collect()
}

/// The moment joint `i` holds at rest \[N·m\]: its spring's pre-stress, k·|shape − R|.
fn rest_moment(forest: &Forest, i: usize) -> f32 {
    let s = &forest.seg;
    s.stiffness[i]
        * (0..2)
            .map(|k| (s.shape[k][i] - s.rest[k][i]).powi(2))
            .sum::<f32>()
            .sqrt()
}

/// Per joint, the squared bend (M_limit/k)² beyond which it breaks (a root: uproots), from the
/// material's modulus of rupture and anchorage; a joint's rupture moment is at least its
/// wind-grown moment `grown[i]` ([`grown_moments`]).
pub(super) fn limits(forest: &Forest, grown: &[f32]) -> Vec<f32> {
    let s = &forest.seg;
    let m = &forest.material;
    let mut out = vec![0.0; forest.segment_count()];
    let section = section_radii(forest);
    for tree in &forest.trees {
        let r = tree.segments.start as usize..tree.segments.end as usize;
        let tree_mass: f32 = s.mass[r.clone()].iter().sum();
        for i in r {
            let held = rest_moment(forest, i);
            let moment = if s.parent[i] == NO_PARENT {
                m.anchorage_moment(tree_mass)
            } else {
                m.rupture_moment(section[i]).max(grown[i])
            }
            .max(GROWN_MARGIN * held);
            let bend = moment / s.stiffness[i];
            out[i] = bend * bend;
        }
    }
    out
}

/// The share of what a joint can carry beyond its pre-stress that self-collision's held
/// forces may take (`hold_caps`). A treeE-sized tree (`sylva bench sim --model weber
/// --segments 14615 --leaves 16607 --steps 120 --threads 2 --wind 10 --self-collision 14
/// --collision-free`), interpenetrating pairs a step and branches broken: uncapped 230 and 96
/// (0 broken without self-collision); 0.5 gives 246 and 59, 0.25 gives 252 and 45, 0.1 gives
/// 243 and 44 (what is left breaks under the contacts' turns and the springs themselves). The
/// gale test's seeds 5–8 keep 0 interpenetrating pair-steps at 0.5 and 0.25 (3 on seed 7
/// uncapped). Capping the whole of each pair's force, spring and damper included, at 0.5
/// broke 25 but left 707 pairs a step, and 32 pair-steps on seed 7.
pub const HOLD_SHARE: f32 = 0.25;

/// Per segment: the most force \[N\] at its centre, in `pose`, that leaves every joint from it
/// to its tree's root within `share` of what the joint can carry beyond its pre-stress (the
/// limit moment of `limit`, k·√limit, less k·|shape − R|), the lever of each the distance
/// from the joint to the centre: self-collision's cap on the held forces of the pairs
/// pressing on it (`SelfCollision::with_hold_caps`).
pub(super) fn hold_caps(forest: &Forest, pose: &Pose, limit: &[f32], share: f32) -> Vec<f32> {
    let s = &forest.seg;
    let spare: Vec<f32> = (0..forest.segment_count())
        .map(|i| (share * (s.stiffness[i] * limit[i].sqrt() - rest_moment(forest, i))).max(0.0))
        .collect();
    (0..forest.segment_count())
        .map(|i| {
            let centre = pose.base[i] + segment_axis(pose.orient[i]) * (0.5 * s.length[i]);
            let mut cap = f32::INFINITY;
            let mut j = i;
            loop {
                let lever = centre.distance(pose.base[j]).max(1.0e-3);
                cap = cap.min(spare[j] / lever);
                if s.parent[j] == NO_PARENT {
                    break;
                }
                j = s.parent[j] as usize;
            }
            cap
        })
        .collect()
}

/// The bend (x, z) of local joint `i` of a tree: Θ + y of the segment less its parent's, less
/// the spring's rest angle.
#[inline(always)]
fn bend(ts: &TreeStatic<'_>, theta: [&[f32]; 2], y: [&[f32]; 2], i: usize) -> [f32; 2] {
    let mut b = [0.0; 2];
    for k in 0..2 {
        let parent = if i == 0 {
            0.0
        } else {
            let p = ts.parent_of(i);
            theta[k][p] + y[k][p]
        };
        b[k] = theta[k][i] + y[k][i] - parent - ts.rest[k][i];
    }
    b
}

/// Whether any joint of a tree carries more than it can (`limit`: the tree's slice of
/// [`limits`], infinite for ghosts). The same arithmetic as [`bend`], in one tight pass: the
/// absolute angles Θ + y of both planes are gathered by parent without a branch per joint.
pub(super) fn over_limit(ts: &TreeStatic<'_>, theta: [&[f32]; 2], y: [&[f32]; 2], limit: &[f32]) -> bool {
    let n = ts.len();
    let (tx, tz, yx, yz) = (&theta[0][..n], &theta[1][..n], &y[0][..n], &y[1][..n]);
    let (rx, rz, parent, limit) = (&ts.rest[0][..n], &ts.rest[1][..n], &ts.parent[..n], &limit[..n]);
    let [bx, bz] = bend(ts, theta, y, 0);
    let mut over = bx * bx + bz * bz > limit[0];
    let offset = ts.offset;
    for i in 1..n {
        let p = parent[i].wrapping_sub(offset) as usize;
        let bx = tx[i] + yx[i] - (tx[p] + yx[p]) - rx[i];
        let bz = tz[i] + yz[i] - (tz[p] + yz[p]) - rz[i];
        over |= bx * bx + bz * bz > limit[i];
    }
    over
}

/// The joints of a tree over their limit, in the tree's order (local indices).
pub(super) fn joints_over(ts: &TreeStatic<'_>, theta: [&[f32]; 2], y: [&[f32]; 2], limit: &[f32]) -> Vec<usize> {
    (0..ts.len())
        .filter(|&i| {
            let [bx, bz] = bend(ts, theta, y, i);
            bx * bx + bz * bz > limit[i]
        })
        .collect()
}

/// The moment joint `i` (global) carries \[N·m\], k·|bend|, from the model's angles.
pub(super) fn moment(forest: &Forest, theta: [&[f32]; 2], y: [&[f32]; 2], i: usize) -> f32 {
    let s = &forest.seg;
    let mut sq = 0.0;
    for k in 0..2 {
        let parent = match s.parent[i] {
            NO_PARENT => 0.0,
            p => theta[k][p as usize] + y[k][p as usize],
        };
        let b = theta[k][i] + y[k][i] - parent - s.rest[k][i];
        sq += b * b;
    }
    s.stiffness[i] * sq.sqrt()
}

/// The segments (global indices) of the piece that breaks off at local joint `first` of a
/// tree whose first segment is `offset`: `first` and every descendant not already gone, in the
/// forest's order (parents first).
pub(super) fn piece(forest: &Forest, offset: usize, len: usize, first: usize, gone: &[bool]) -> Vec<u32> {
    let s = &forest.seg;
    let mut inside = vec![false; len];
    inside[first] = true;
    let mut out = vec![(offset + first) as u32];
    for j in first + 1..len {
        let g = offset + j;
        let p = s.parent[g];
        if p != NO_PARENT && inside[p as usize - offset] && !gone[g] {
            inside[j] = true;
            out.push(g as u32);
        }
    }
    out
}

/// World velocity of every segment's centre of a tree \[m/s\] (local order): the finite
/// difference of the centres between the current pose and the pose of the angles one step
/// back along the rates, Θ + y - h·v (the same kinematics, no contacts).
pub(super) fn centre_velocities(
    ts: &TreeStatic<'_>,
    theta: [&[f32]; 2],
    y: [&[f32]; 2],
    vel: [&[f32]; 2],
    now: (&[Vec3], &[Quat]),
    h: f32,
) -> Vec<Vec3> {
    let n = ts.len();
    let leaves = (ts.leaf_start[n] - ts.leaf_start[0]) as usize;
    let back: [Vec<f32>; 2] = [0, 1].map(|k| (0..n).map(|i| theta[k][i] - h * vel[k][i]).collect());
    let (mut base, mut orient) = (vec![Vec3::ZERO; n], vec![Quat::IDENTITY; n]);
    let (mut d0, mut d1) = (vec![Vec3::ZERO; n], vec![Vec3::ZERO; n]);
    let mut leaf_pos = vec![Vec3::ZERO; leaves];
    let (mut y0, mut y1) = (y[0][..n].to_vec(), y[1][..n].to_vec());
    let (mut v0, mut v1) = (vel[0][..n].to_vec(), vel[1][..n].to_vec());
    let mut part = Part {
        base: &mut base,
        orient: &mut orient,
        dir: [&mut d0, &mut d1],
        leaf_pos: &mut leaf_pos,
        y: [&mut y0, &mut y1],
        vel: [&mut v0, &mut v1],
    };
    kernels::kinematics(ts, [&back[0], &back[1]], 0, n, None, &mut part, &Contacts::none());
    let centre = |b: Vec3, q: Quat, l: f32| b + q * Vec3::new(0.0, 0.5 * l, 0.0);
    (0..n)
        .map(|i| {
            let l = ts.length[i];
            (centre(now.0[i], now.1[i], l) - centre(base[i], orient[i], l)) / h
        })
        .collect()
}

/// Turns the segments of a piece into ghosts in `live` (see the module's header); `h` the
/// time step.
pub(super) fn mask(live: &mut Live, segments: &[u32], h: f32) {
    for &g in segments {
        let g = g as usize;
        live.mass[g] = 0.0;
        live.inertia[g] = 0.0;
        live.drag[g] = 0.0;
        live.leaf_drag[g] = 0.0;
        live.damping[g] += h * live.stiffness[g];
        live.stiffness[g] = 0.0;
    }
}

/// Weber's diagonal inertia of every segment of a tree from the live masses,
/// I = m·l²/3 + M_out·l² (`SegmentData::inertia`), for the tree `offset..offset + len`.
pub(super) fn tree_inertia(forest: &Forest, live: &mut Live, offset: usize, len: usize) {
    let s = &forest.seg;
    let mut out = vec![0.0f32; len];
    for j in (1..len).rev() {
        let p = s.parent[offset + j] as usize - offset;
        out[p] += out[j] + live.mass[offset + j];
    }
    for (j, &m_out) in out.iter().enumerate() {
        let (m, l) = (live.mass[offset + j], s.length[offset + j]);
        live.inertia[offset + j] = m * l * l / 3.0 + m_out * l * l;
    }
}

/// Hands a piece to the debris with its centres' velocities (`velocity`: the tree's, local).
pub(super) fn spawn(
    debris: &mut Debris,
    forest: &Forest,
    segments: &[u32],
    offset: usize,
    pose: &Pose,
    velocity: &[Vec3],
    uprooted: bool,
) {
    let v: Vec<Vec3> = segments.iter().map(|&g| velocity[g as usize - offset]).collect();
    debris.spawn(forest, segments, pose, &v, uprooted);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamics::weber::{WeberModel, WeberParams};
    use crate::material::Material;
    use crate::testtree::test_tree;

    /// A held force of its segment's cap, at the segment's centre, bends no joint from it to
    /// the root past `HOLD_SHARE` of what the joint can carry beyond its pre-stress (the
    /// moment about each joint at most the force times its lever), and one of them exactly to
    /// it: the cap is the largest such force. Every cap of a tree at rest is positive and
    /// finite.
    #[test]
    fn a_capped_held_force_leaves_every_joint_below_it_within_its_share() {
        let skel = test_tree(3, 200, 300).unwrap();
        let forest = crate::forest::at_origin(&skel, &Material::default());
        let sim = WeberModel::new(forest.clone(), WeberParams::default()).unwrap();
        let limit = &sim.sh.limit;
        let pose = Pose::of_shape(&forest);
        let caps = hold_caps(&forest, &pose, limit, HOLD_SHARE);
        let s = &forest.seg;
        // What joint j carries beyond its pre-stress, taken here from the moments
        // themselves: the limit moment k·√limit less the spring's rest moment.
        let spare = |j: usize| {
            let rest = (0..2)
                .map(|k| (s.shape[k][j] - s.rest[k][j]).powi(2))
                .sum::<f32>()
                .sqrt();
            s.stiffness[j] * (limit[j].sqrt() - rest)
        };
        for i in 0..forest.segment_count() {
            assert!(caps[i].is_finite() && caps[i] > 0.0, "segment {i}: {}", caps[i]);
            let centre = pose.tip(i, 0.5 * s.length[i]);
            let mut tight = false;
            let mut j = i;
            loop {
                let moment = caps[i] * centre.distance(pose.base[j]).max(1.0e-3);
                let share = HOLD_SHARE * spare(j);
                assert!(
                    moment <= share * 1.0001,
                    "segment {i}, joint {j}: {moment} over {share}"
                );
                tight |= moment >= share * 0.9999;
                if s.parent[j] == NO_PARENT {
                    break;
                }
                j = s.parent[j] as usize;
            }
            assert!(tight, "segment {i}: no joint at its share");
        }
    }
}
