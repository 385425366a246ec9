//! Branches breaking off (Manavi 2007, "Breaking Branches").
//!
//! The rule: a branch is broken when the direction of its first skeletal constraint leaves a
//! cone around its rest direction, measured in its parent's frame (the parent plane's rotation
//! from rest) so that a tree leaning as a whole breaks nothing. The check runs once per step,
//! after every constraint has been relaxed, as the thesis asks: within the passes a branch may
//! leave and re-enter its cone.
//!
//! Detaching, in the thesis's three steps:
//! 1. the branch's shared particle is duplicated: its twin takes the shared centre's position
//!    and previous position (so the piece keeps its velocity) and its place in every
//!    constraint of the branch and of the branches beyond it;
//! 2. the constraints that tie the branch to its parent (its plane's ties to the parent's
//!    particles) are dropped;
//! 3. constraints of the branches beyond it that reached past it to its parent's particles are
//!    redirected to the twin, which belongs to the broken piece.
//!
//! What is left is a particle system of its own in the same arrays: it falls under gravity,
//! feels the wind and lands on the ground; it has no root (the thesis's "false root"). A
//! dropped constraint keeps its slot with both ends on one particle, so it does nothing, and
//! every constraint still in use joins two particles of one piece: nothing dangles.

use glam::{Quat, Vec3, Vec3A};

use super::solve::{Link, Shared};
use super::structure::NO_BRANCH;
use crate::dynamics::pose::segment_axis;

/// Breaks off every branch of tree `t` that left its cone this step (by the branch rotations
/// `turn` of the step's end); returns how many broke.
pub(super) fn break_off(
    sh: &Shared<'_>,
    t: usize,
    pos: &mut [Vec3A],
    prev: &mut [Vec3A],
    turn: &[Quat],
    links: &mut [Link],
    broken: &mut [bool],
) -> u32 {
    let st = sh.st;
    let layout = &st.trees[t];
    let branches = &st.branches[layout.branches.clone()];
    let b0 = layout.branches.start;
    let s0 = sh.forest.trees[t].segments.start as usize;
    let mut count = 0;
    for k in 0..branches.len() {
        let b = &branches[k];
        if broken[k] || b.parent == NO_BRANCH || b.cone >= std::f32::consts::PI {
            continue;
        }
        let first = b.first as usize;
        let expected = turn[b.parent as usize - b0] * segment_axis(st.rest_orient[first]);
        let axis = Vec3::from(pos[1 + first - s0] - pos[b.centre as usize]).normalize_or_zero();
        if axis.dot(expected) < b.cone.cos() {
            detach(sh, t, k, pos, prev, links, broken);
            count += 1;
        }
    }
    count
}

/// Detaches branch `k` (tree-local) of tree `t` and everything beyond it from the rest of the
/// tree.
pub(super) fn detach(
    sh: &Shared<'_>,
    t: usize,
    k: usize,
    pos: &mut [Vec3A],
    prev: &mut [Vec3A],
    links: &mut [Link],
    broken: &mut [bool],
) {
    let st = sh.st;
    let layout = &st.trees[t];
    let branches = &st.branches[layout.branches.clone()];
    let (b0, p0, c0) = (layout.branches.start, layout.particles.start, layout.constraints.start);
    let (centre, twin) = (branches[k].centre, branches[k].twin);
    broken[k] = true;
    pos[twin as usize] = pos[centre as usize];
    prev[twin as usize] = prev[centre as usize];
    // The broken piece: branch k and every branch beyond it (parents come first).
    let mut inside = vec![false; branches.len()];
    inside[k] = true;
    for j in k + 1..branches.len() {
        let p = branches[j].parent;
        inside[j] = p != NO_BRANCH && inside[p as usize - b0];
    }
    let in_piece = |p: u32| inside[st.particle_branch[p0 + p as usize] as usize - b0];
    for (n, link) in links.iter_mut().enumerate() {
        let (a, b) = (link.a, link.b);
        if a == b {
            continue;
        }
        if inside[st.owner[c0 + n] as usize - b0] {
            let a = if a == centre { twin } else { a };
            let b = if b == centre { twin } else { b };
            if in_piece(a) && in_piece(b) {
                let (wa, wb) = (st.weight[p0 + a as usize], st.weight[p0 + b as usize]);
                (link.a, link.b, link.share) = (a, b, wb / (wa + wb));
            } else {
                (link.a, link.b) = (twin, twin);
            }
        } else if in_piece(a) || in_piece(b) {
            (link.a, link.b) = (twin, twin);
        }
    }
}
