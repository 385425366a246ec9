//! Self-collision's contacts (`SelfCollision::contacts`) held in Weber's own way, as his
//! spatial collision response holds a segment out of a collider (`kernels::kinematics`,
//! Weber 2008 "The spatial model", Figure 4): each pair closer than its rest length is pushed
//! apart by turning its two segments. Where A is factored each step (the quadratic drag law,
//! the default, or Newmark) each turned segment is pulled by its turn with a spring [`PULL`]
//! times as stiff as its joint, which the solve takes implicitly (`kernels::populate`), for
//! that step; otherwise the turns are added to y (Eq. 1's pending displacement), which the
//! step's solve imposes (Δx = h(v0 + Δv) + y) and its kinematics poses. A displacement is
//! undone within the step on a stiff twig: the implicit solve takes the joint spring whole,
//! and it turns the twig back (a twig turned 0.05 rad a step kept a bend of 0.004 rad while a
//! pair of leaves on it and its neighbour closed 1 cm a step through each other); a spring
//! pulling against the joint keeps about half the turn, or more where the branch bends with it.
//!
//! Which contacts: a pair that holds a leaf by its strips' contact alone (its centrelines'
//! contact keeps the blades' largest half-widths apart, far outside most of a blade's edge:
//! held too, it asks a leafy twig pressed among its neighbours' leaves to turn far from where
//! the blades meet), a pair of stems by its centrelines'. Two pieces of one segment (two of its
//! leaves) move as one and are left alone.
//!
//! How: a contact's two points are held `rest` apart (along the line between them, or along
//! its direction). The gap still missing is shared between the two segments in inverse
//! proportion to their effective masses (`SegmentData::end_mass`: a segment's inertia over
//! its length squared, the mass a push at its end moves), and each share becomes a turn of
//! the segment about its base that moves the contact point by it, to first order: the point moves by ω_k × (x − base) per unit
//! angle of plane k, ω_k the turn Weber's mapping makes per unit angle (`turn_rates`), the
//! share split between the two planes by alternating projections (`split_correction`, as
//! Weber's Figure 4). The contacts are swept [`PASSES`] times (Gauss–Seidel: each reads its
//! gap with the turns the contacts before it asked for), so that a twig pressed by several
//! neighbours is turned once for all of them. Each segment's turn is then capped at
//! [`MOST_TURN`] and at the turn that bends its joint to [`BEND_SHARE`] of the bend that
//! breaks it (`rupture`; or no further than it is bent already: a displacement is no force,
//! and turning a short stiff segment by a few hundredths of a radian breaks it, which turned
//! 99 broken branches into 600 on a treeE-sized tree in a 10 m/s wind), carried to the
//! segment's subtree (Weber's angles are absolute: a child keeps its angle when its parent
//! turns, so a turn of the parent alone would bend every joint below it by the opposite), and
//! the segment's velocity driving back into its contacts removed, as Weber does at a collider.
//!
//! The springs of Eq. 5.1 still act, with their held forces (`SelfCollision::with_holding`,
//! capped at a share of what the joints below them carry: `rupture::hold_caps`): they hold
//! the gale's steady push from step to step, and the turns catch the pairs the springs let
//! through.
//!
//! Invariant: the contacts are taken in their order and each segment's sum in that order, so
//! the result does not depend on the workers.

use glam::{Quat, Vec3};

use super::kernels::split_correction;
use super::mapping::relative_rotation;
use crate::collision::runtime::Contact;
use crate::dynamics::pose::Pose;
use crate::forest::{Forest, NO_PARENT};

/// Largest turn a segment takes from the contacts in one step \[rad\] (a contact point near a
/// segment's base would otherwise ask for a large turn to move it a little).
pub const MOST_TURN: f32 = 0.05;

/// A joint turned by the contacts is bent at most this share of the bend that breaks it
/// (`rupture`), or no further than it is.
pub const BEND_SHARE: f32 = 0.5;

/// A turned segment is pulled towards its turn by a spring this many times its joint's
/// stiffness, which the solve takes implicitly (`kernels::populate`): a stiff twig held by a
/// spring as stiff as its joint keeps about half its turn by the step's end, where a
/// displacement through y is undone within the step. Gale test seeds 5–8
/// (`tests/tests/self_collision.rs`), interpenetrating pair-steps, and a treeE-sized tree at
/// 10 m/s over 120 steps, interpenetrating pairs a step and branches broken: 1.0 gives
/// 0/0/3/0, 224 and 92; 2.0 gives 0/0/0, 215 and 109; 10.0 gives 0/0/0/0, 171 and 757;
/// displacements through y gave 1/16/0/3, 320 and 93.
pub const PULL: f32 = 1.0;

/// Passes of Gauss–Seidel over the contacts (each contact's gap read with the turns the
/// earlier contacts asked for, to first order).
pub const PASSES: usize = 4;

/// What [`hold_apart`] reuses from step to step.
#[derive(Default)]
pub(super) struct Scratch {
    lin: Vec<Linear>,
    /// Per segment: its turn rates (`turn_rates`) once a contact needed them this step.
    rates: Vec<Option<[Vec3; 2]>>,
    /// Per segment: the turn asked of it (both planes).
    turns: Vec<[f32; 2]>,
}

/// One contact, linearised: how each of its points moves per unit turn of its segment in
/// each plane, the line it holds along, and the gap that line misses at no turn.
#[derive(Clone, Copy)]
struct Linear {
    seg: [usize; 2],
    moves: [[Vec3; 2]; 2],
    normal: Vec3,
    /// The share of the missing gap each point takes (its inverse mass over the pair's).
    share: [f32; 2],
    need: f32,
}

/// The turn of segment `s`'s orientation per unit change of its angle in each plane (world
/// axes, rad/rad), from Weber's mapping (Eqs. 3 and 4) by central differences: the mapping
/// turns the segment about an axis that is not always across it (it twists it a little, which
/// moves a blade's edge though not the tip), so ω is not u × axis / l. `angle(i)` gives
/// segment i's angles Θ + y.
pub(super) fn turn_rates(forest: &Forest, pose: &Pose, angle: impl Fn(usize) -> [f32; 2], s: usize) -> [Vec3; 2] {
    const H: f32 = 1.0e-3;
    let parent = forest.seg.parent[s];
    let (own, from, frame) = if parent == NO_PARENT {
        (angle(s), [0.0; 2], Quat::IDENTITY)
    } else {
        let p = parent as usize;
        (angle(s), angle(p), pose.orient[p])
    };
    let (x, z) = (own[0] - from[0], own[1] - from[1]);
    let rate = |a: Quat, b: Quat| {
        let (axis, turn) = (a * b.inverse()).to_axis_angle();
        frame * (axis * (turn / (2.0 * H)))
    };
    [
        rate(relative_rotation(x + H, z), relative_rotation(x - H, z)),
        rate(relative_rotation(x, z + H), relative_rotation(x, z - H)),
    ]
}

/// The turns that push every contact of `contacts` apart, read in `pose` (posed from `theta` +
/// `y`; `limit`: each joint's squared breaking bend): written to `pull` per segment, for the
/// solve to pull the segments by them as springs ([`PULL`]), or, with no `pull`, added to `y`
/// (both planes) as displacements; and each turned segment's velocity that drives back into
/// them zeroed. Returns the number of segments turned.
pub(super) fn hold_apart(
    forest: &Forest,
    contacts: &[Contact],
    pose: &Pose,
    (theta, limit): ([&[f32]; 2], &[f32]),
    (y, vel): ([&mut [f32]; 2], [&mut [f32]; 2]),
    pull: Option<&mut Vec<[f32; 2]>>,
    scratch: &mut Scratch,
) -> usize {
    let Scratch { lin, rates, turns } = scratch;
    rates.clear();
    rates.resize(forest.segment_count(), None);
    let angle = |i: usize| [theta[0][i] + y[0][i], theta[1][i] + y[1][i]];
    lin.clear();
    // A leaf's pair by its strips' contact, a pair of stems by its centrelines' (see above).
    for c in contacts.iter().filter(|c| c.strips || !c.leaf) {
        let [a, b] = c.at;
        let (normal, gap) = if c.dir == Vec3::ZERO {
            let d = a - b;
            match d.try_normalize() {
                Some(n) => (n, d.length()),
                None => continue,
            }
        } else {
            (c.dir, (a - b).dot(c.dir))
        };
        let (s0, s1) = (c.seg[0] as usize, c.seg[1] as usize);
        // Two pieces of one segment (two of its leaves) move as one: nothing parts them.
        if s0 == s1 {
            continue;
        }
        let need = c.rest - gap;
        let (w0, w1) = (1.0 / forest.seg.end_mass(s0), 1.0 / forest.seg.end_mass(s1));
        // A contact not closed where the step starts asks for nothing, even once the turns of
        // the contacts before it close it (a pair of stems gets its centrelines' contact
        // anywhere within its safe distance, buffers included); a NaN (a non-finite pose)
        // asks for nothing either.
        if !(need > 0.0 && need.is_finite() && (w0 + w1).is_finite() && w0 + w1 > 0.0) {
            continue;
        }
        let mut moves = |s: usize, at: Vec3| {
            let [w0, w1] = *rates[s].get_or_insert_with(|| turn_rates(forest, pose, angle, s));
            let lever = at - pose.base[s];
            [w0.cross(lever), w1.cross(lever)]
        };
        lin.push(Linear {
            seg: [s0, s1],
            moves: [moves(s0, a), moves(s1, b)],
            normal,
            share: [w0 / (w0 + w1), w1 / (w0 + w1)],
            need,
        });
    }
    turns.clear();
    turns.resize(forest.segment_count(), [0.0; 2]);
    for _ in 0..PASSES {
        for c in lin.iter() {
            let moved = |k: usize, t: [f32; 2]| c.moves[k][0] * t[0] + c.moves[k][1] * t[1];
            let [s0, s1] = c.seg;
            let opened = c.normal.dot(moved(0, turns[s0]) - moved(1, turns[s1]));
            let need = c.need - opened;
            if need <= 0.0 {
                continue;
            }
            for (k, sign) in [(0, 1.0), (1, -1.0)] {
                let s = c.seg[k];
                let target = c.normal * (sign * need * c.share[k]);
                let (t0, t1) = split_correction(target, c.moves[k][0], c.moves[k][1]);
                if t0.is_finite() && t1.is_finite() {
                    turns[s][0] += t0;
                    turns[s][1] += t1;
                }
            }
        }
    }
    // Each segment's own turn, capped; then carried to its subtree (Weber's angles are
    // absolute: a child keeps its angle when its parent turns, so a turn of the parent alone
    // would bend every joint below it by the opposite; parents come before their children).
    let [y0, y1] = y;
    let [v0, v1] = vel;
    let mut turned = 0;
    for s in 0..turns.len() {
        if turns[s] != [0.0; 2] {
            let t = &mut turns[s];
            let size = (t[0] * t[0] + t[1] * t[1]).sqrt();
            if size > MOST_TURN {
                *t = [t[0] * MOST_TURN / size, t[1] * MOST_TURN / size];
            }
            // The joint's bend after the turn kept within BEND_SHARE of what breaks it (or
            // no worse than it is).
            let parent = forest.seg.parent[s];
            let bend = |k: usize| {
                let y = if k == 0 { &*y0 } else { &*y1 };
                let from = if parent == NO_PARENT {
                    0.0
                } else {
                    theta[k][parent as usize] + y[parent as usize]
                };
                theta[k][s] + y[s] - from - forest.seg.rest[k][s]
            };
            let b = [bend(0), bend(1)];
            let bt = b[0] * t[0] + b[1] * t[1];
            let tt = t[0] * t[0] + t[1] * t[1];
            let bb = b[0] * b[0] + b[1] * b[1];
            let most = (BEND_SHARE * BEND_SHARE * limit[s]).max(bb);
            if bb + 2.0 * bt + tt > most && tt > 0.0 {
                let root = (bt * bt - tt * (bb - most)).max(0.0).sqrt();
                let scale = ((root - bt) / tt).clamp(0.0, 1.0);
                *t = [t[0] * scale, t[1] * scale];
            }
            if v0[s] * t[0] < 0.0 {
                v0[s] = 0.0;
            }
            if v1[s] * t[1] < 0.0 {
                v1[s] = 0.0;
            }
            turned += 1;
        }
        let parent = forest.seg.parent[s];
        if parent != NO_PARENT {
            let [a, b] = turns[parent as usize];
            let t = &mut turns[s];
            t[0] += a;
            t[1] += b;
        }
    }
    match pull {
        Some(pull) => {
            pull.clear();
            pull.extend_from_slice(turns);
        }
        None => {
            for (s, t) in turns.iter().enumerate() {
                y0[s] += t[0];
                y1[s] += t[1];
            }
        }
    }
    turned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamics::weber::{PlaneState, WeberModel, WeberParams};
    use crate::material::Material;
    use crate::testtree::test_tree;

    /// A contact's turn held by a spring the solve takes implicitly ([`PULL`],
    /// `kernels::populate`) stays: a short twig at rest whose joint is stiff against its own
    /// inertia (h²·k/I in the tens of thousands), pulled by a turn, has turned by most of it at
    /// the step's end (the branch bending with it at its softer joints), where the same turn
    /// as a displacement through y is undone within the step (the joint spring, taken whole
    /// by the implicit solve, turns it back). The pull lasts one step.
    #[test]
    fn a_pulled_segment_keeps_its_turn_where_a_displacement_is_undone() {
        use sylva_engine::{FrameTimings, JobSystem};
        let skel = test_tree(3, 200, 300).unwrap();
        let forest = crate::forest::at_origin(&skel, &Material::default());
        let n = forest.segment_count();
        let h = WeberParams::default().dt;
        // The segment whose joint is stiffest against its own inertia, with no children.
        let seg = &forest.seg;
        let stiff = |i: usize| h * h * seg.stiffness[i] / seg.inertia[i];
        let s = (1..n)
            .filter(|&i| !seg.parent.contains(&(i as u32)))
            .max_by(|&a, &b| stiff(a).total_cmp(&stiff(b)))
            .unwrap();
        assert!(stiff(s) > 1000.0, "{}", stiff(s));
        let jobs = JobSystem::new(1).unwrap();
        let turn = 0.01;
        let after = |pulled: bool| {
            let mut sim = WeberModel::new(forest.clone(), WeberParams::default()).unwrap();
            let timings = FrameTimings::new(&super::super::PHASES);
            let before = sim.plane(0).theta[s];
            if pulled {
                sim.sh.pull = vec![[0.0; 2]; n];
                sim.sh.pull[s] = [turn, 0.0];
            } else {
                super::super::lock(&sim.sh.planes[0]).y[s] = turn;
            }
            sim.step(&jobs, &timings);
            assert!(sim.sh.pull.is_empty());
            let now = sim.plane(0).theta[s];
            now - before
        };
        let (pulled, displaced) = (after(true), after(false));
        assert!(pulled > 0.5 * turn && pulled <= turn, "pulled: {pulled} of {turn}");
        assert!(displaced.abs() < 0.05 * turn, "displaced: {displaced} of {turn}");
    }

    /// A point rigid on a segment moves, when the segment's angle in a plane turns a little,
    /// as `point_moves` says, for points off the segment's axis, on bent segments.
    #[test]
    fn a_point_moves_with_its_segments_turn_as_linearised() {
        let skel = test_tree(3, 200, 300).unwrap();
        let forest = crate::forest::at_origin(&skel, &Material::default());
        let mut sim = WeberModel::new(forest, WeberParams::default()).unwrap();
        // Bent away from the rest shape, so the direction vectors are not the rest pose's.
        sim.edit_state(|_, [x, z]| {
            for (i, t) in x.theta.iter_mut().enumerate() {
                *t += 0.1 * ((i % 7) as f32 - 3.0) / 3.0;
            }
            for (i, t) in z.theta.iter_mut().enumerate() {
                *t -= 0.08 * ((i % 5) as f32 - 2.0) / 2.0;
            }
        });
        let n = sim.forest().segment_count();
        let mut checked = 0;
        for s in (1..n).step_by(7) {
            let (base, orient, l) = {
                let pose = sim.pose();
                (pose.base[s], pose.orient[s], sim.forest().seg.length[s])
            };
            // A point beyond the tip and off the axis, as a leaf's blade is.
            let at = base + orient * Vec3::new(0.4 * l, 1.3 * l, -0.2 * l);
            let local = orient.inverse() * (at - base);
            let moves = {
                let (pose, x, z) = (sim.pose(), sim.plane(0), sim.plane(1));
                let angle = |i: usize| [x.theta[i] + x.y[i], z.theta[i] + z.y[i]];
                turn_rates(sim.forest(), &pose, angle, s).map(|w| w.cross(at - base))
            };
            for k in 0..2 {
                let eps = 1e-3;
                sim.edit_state(|_, planes| planes[k].theta[s] += eps);
                let moved = {
                    let pose = sim.pose();
                    (pose.base[s] + pose.orient[s] * local - at) / eps
                };
                sim.edit_state(|_, planes| planes[k].theta[s] -= eps);
                let err = (moved - moves[k]).length();
                assert!(
                    err < 0.03 * moved.length().max(0.1 * l),
                    "segment {s}, plane {k}: moved {moved:?}, linearised {:?}",
                    moves[k]
                );
                checked += 1;
            }
        }
        assert!(checked > 20);
    }

    /// A contact short of its rest length turns its two segments apart: once posed, its two
    /// points (rigid on their segments) are as far apart along its direction as asked, to
    /// first order; the lighter segment moves more; a segment's subtree turns with it; the
    /// joints stay within their share of the breaking bend; a contact already at its rest
    /// length asks nothing.
    #[test]
    fn a_contact_short_of_its_rest_length_is_turned_apart() {
        let skel = test_tree(3, 200, 300).unwrap();
        let forest = crate::forest::at_origin(&skel, &Material::default());
        let mut sim = WeberModel::new(forest, WeberParams::default()).unwrap();
        let n = sim.forest().segment_count();
        let parents = sim.forest().seg.parent.clone();
        let parent = |i: usize| parents[i];
        // Two segments on different branches, the second's tip near the first's.
        let (s0, s1) = {
            let pose = sim.pose();
            let tip = |i: usize| pose.tip(i, sim.forest().seg.length[i]);
            let ancestors = |mut i: usize| {
                let mut out = vec![i];
                while parent(i) != NO_PARENT {
                    i = parent(i) as usize;
                    out.push(i);
                }
                out
            };
            let mut best = (f32::INFINITY, 0, 0);
            for a in n / 2..n {
                for b in a + 1..n {
                    let unrelated = !ancestors(b).contains(&a) && !ancestors(a).contains(&b);
                    let d = tip(a).distance(tip(b));
                    if unrelated && d > 0.02 && d < best.0 {
                        best = (d, a, b);
                    }
                }
            }
            (best.1, best.2)
        };
        let (pose0, rigid) = {
            let pose = sim.pose();
            let l = |i: usize| sim.forest().seg.length[i];
            let at = [pose.tip(s0, l(s0)), pose.tip(s1, l(s1))];
            // Each point in its segment's frame, to follow it once posed again.
            let local = [0, 1].map(|k| {
                let s = [s0, s1][k];
                pose.orient[s].inverse() * (at[k] - pose.base[s])
            });
            (Pose::clone(&pose), (at, local))
        };
        let (at, local) = rigid;
        let dir = (at[0] - at[1]).normalize();
        let gap = (at[0] - at[1]).dot(dir);
        let need = 0.004;
        let contact = |rest: f32| Contact {
            seg: [s0 as u32, s1 as u32],
            at,
            rest,
            dir,
            leaf: true,
            strips: true,
        };
        let mut scratch = Scratch::default();
        let hold = |sim: &mut WeberModel, c: Contact, scratch: &mut Scratch| {
            let sh = &sim.sh;
            let (mut a, mut b) = (super::super::lock(&sh.planes[0]), super::super::lock(&sh.planes[1]));
            let (a, b) = (&mut *a, &mut *b);
            hold_apart(
                &sh.forest,
                &[c],
                &pose0,
                ([&a.theta, &b.theta], &sh.limit),
                ([&mut a.y, &mut b.y], [&mut a.vel, &mut b.vel]),
                None,
                scratch,
            )
        };
        // At its rest length: nothing asked.
        assert_eq!(hold(&mut sim, contact(gap), &mut scratch), 0);
        assert!(sim.plane(0).y.iter().chain(&sim.plane(1).y).all(|&y| y == 0.0));
        let turned = hold(&mut sim, contact(gap + need), &mut scratch);
        assert!(turned >= 2, "{turned}");
        // y is what the next solve imposes; posed with it now:
        sim.refresh_pose();
        let (moved, tips) = {
            let pose = sim.pose();
            let now = [0, 1].map(|k| {
                let s = [s0, s1][k];
                pose.base[s] + pose.orient[s] * local[k]
            });
            (now, [0, 1].map(|k| (now[k] - at[k]).length()))
        };
        let opened = (moved[0] - moved[1]).dot(dir) - gap;
        assert!((opened - need).abs() < 0.1 * need, "opened {opened}, asked {need}");
        let seg = &sim.forest().seg;
        let lighter = if seg.end_mass(s0) < seg.end_mass(s1) { 0 } else { 1 };
        assert!(tips[lighter] >= tips[1 - lighter], "{tips:?}");
        // Every child of a turned segment turned with it.
        let (x, z) = (sim.plane(0), sim.plane(1));
        for i in 0..n {
            if parent(i) == s0 as u32 || parent(i) == s1 as u32 {
                let p = parent(i) as usize;
                assert_eq!((x.y[i], z.y[i]), (x.y[p], z.y[p]), "child {i} of {p}");
            }
        }
        // Within BEND_SHARE of the breaking bend.
        for s in [s0, s1] {
            let p = parent(s) as usize;
            let bend =
                |pl: &PlaneState, k: usize| pl.theta[s] + pl.y[s] - pl.theta[p] - pl.y[p] - sim.forest().seg.rest[k][s];
            let (bx, bz) = (bend(&x, 0), bend(&z, 1));
            assert!(bx * bx + bz * bz <= BEND_SHARE * BEND_SHARE * sim.sh.limit[s] * 1.0001);
        }
    }
}
