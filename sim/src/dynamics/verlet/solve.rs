//! One tree's step (Manavi 2007, "Solving the Forces" and the update logic after it): forces
//! and position Verlet for every particle, the branch and plane constraints relaxed pass after
//! pass with every particle kept out of the ground and the colliders after each pass, then the
//! root constraints, then the pose the renderer draws.
//!
//! Trees share nothing, so a tree's step reads and writes only its own slices: the result does
//! not depend on which job runs it.

use glam::{Quat, Vec3};

use super::params::VerletParams;
use super::structure::{Structure, TreeLayout, NO_BRANCH};
use crate::collider::SphereCollider;
use crate::dynamics::pose::segment_axis;
use crate::forest::Forest;
use crate::material::{quadratic_drag_scale, DragLaw};
use crate::wind::WindField;

/// What a step reads that every tree shares.
pub(super) struct Shared<'a> {
    pub st: &'a Structure,
    pub forest: &'a Forest,
    pub params: &'a VerletParams,
    /// Per particle: how much of its velocity relative to the wind survives a step's drag,
    /// exp(−drag/mass·dt) (1 for particles without drag).
    pub keep_wind: &'a [f32],
    pub wind: &'a dyn WindField,
    pub uniform: Option<Vec3>,
    pub colliders: &'a [SphereCollider],
}

/// One tree's constraints as they are now: ends (tree-local particles) and the share of the
/// correction end `a` takes. Breaking a branch off rewires them; a dropped constraint has both
/// ends on one particle and does nothing.
pub(super) struct Links<'a> {
    pub ca: &'a mut [u32],
    pub cb: &'a mut [u32],
    pub share: &'a mut [f32],
}

/// One tree's share of the state and the pose.
pub(super) struct TreeState<'a> {
    pub pos: &'a mut [Vec3],
    pub prev: &'a mut [Vec3],
    /// One flag per root constraint: cut.
    pub root_cut: &'a mut [bool],
    pub links: Links<'a>,
    /// One flag per branch: broken off.
    pub broken: &'a mut [bool],
    pub base: &'a mut [Vec3],
    pub orient: &'a mut [Quat],
    pub leaf_pos: &'a mut [Vec3],
}

/// Nanoseconds a tree's step spent in each phase, and what happened.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TreeReport {
    pub ns: [u64; 4],
    pub finite: bool,
    pub roots_cut: u32,
    pub broken: u32,
}

/// Steps tree `t`; `scratch` holds its wind samples between calls.
pub(super) fn step_tree(sh: &Shared<'_>, t: usize, s: TreeState<'_>, scratch: &mut Vec<Vec3>) -> TreeReport {
    let tree = &sh.st.trees[t];
    let mut report = TreeReport::default();
    let mut clock = std::time::Instant::now();
    let mut lap = |k: usize, report: &mut TreeReport| {
        let now = std::time::Instant::now();
        report.ns[k] += (now - clock).as_nanos() as u64;
        clock = now;
    };

    let TreeState {
        pos,
        prev,
        root_cut,
        mut links,
        broken,
        base,
        orient,
        leaf_pos,
    } = s;
    sample_wind(sh, tree, pos, scratch);
    // Branches only break at the step's end, so what hangs free is the same every substep.
    let free = hanging_free(sh, tree, broken);
    lap(0, &mut report);
    for _ in 0..sh.params.substeps {
        let anchored = anchored(root_cut);
        forces_and_verlet(sh, tree, pos, prev, scratch, anchored, broken, &free);
        lap(0, &mut report);
        report.roots_cut += relax(sh, tree, pos, &links, anchored, root_cut);
        lap(1, &mut report);
        report.roots_cut += roots(sh, tree, pos, root_cut);
        ground_friction(sh, tree, pos, prev);
        lap(2, &mut report);
    }
    let turn = turns(sh, tree, pos);
    pose(sh, t, pos, &turn, broken, base, orient, leaf_pos);
    report.broken = super::breakage::break_off(sh, t, pos, prev, &turn, &mut links, broken);
    lap(3, &mut report);
    report.finite = pos.iter().all(|p| p.is_finite());
    report
}

/// Per branch of a tree (tree-local): whether it hangs free, broken off itself or beyond a
/// branch that is (parents come before their children).
pub(super) fn hanging_free(sh: &Shared<'_>, tree: &TreeLayout, broken: &[bool]) -> Vec<bool> {
    let b0 = tree.branches.start;
    let mut free = vec![false; tree.branches.len()];
    for (k, b) in sh.st.branches[tree.branches.clone()].iter().enumerate() {
        free[k] = broken.get(k).copied().unwrap_or(false) || (b.parent != NO_BRANCH && free[b.parent as usize - b0]);
    }
    free
}

/// A tree stands on its roots while any of its root constraints holds.
pub(super) fn anchored(root_cut: &[bool]) -> bool {
    root_cut.iter().any(|&c| !c)
}

/// The wind at every skeletal particle where the step starts (the others feel none), for
/// every substep of the step; nothing in a uniform wind.
fn sample_wind(sh: &Shared<'_>, tree: &TreeLayout, pos: &[Vec3], scratch: &mut Vec<Vec3>) {
    if sh.uniform.is_none() {
        scratch.clear();
        scratch.extend(pos[..tree.skeletal].iter().map(|&p| p + tree.origin));
        sh.wind.sample_in_place(scratch);
    }
}

/// Forces and position Verlet over one substep (Eq. 5, r(t+Δt) = 2r(t) − r(t−Δt) + a(t)·Δt²), written as
/// r + v·Δt + a·Δt² with v = (r(t) − r(t−Δt))/Δt. Gravity is a constant acceleration. The
/// wind's linear drag, f = c·(w − v), would make explicit Verlet unstable for light, draggy
/// twigs at large steps, so its part of the velocity change is integrated exactly over the
/// step: v ← w + (v − w)·exp(−c/m·Δt), which is v + (c/m)(w − v)·Δt to first order. The
/// velocity then loses the fraction `damping`·Δt. Anchors do not move.
///
/// Under [`DragLaw::Quadratic`] the drag is c·scale(|u|)·u on the relative velocity u = w − v
/// (`Material::drag_scale`, bark and leaves apart), a damping of the relative velocity at the
/// rate λ = (c_bark·scale_bark + c_leaf·scale_leaf)/m that grows with |u|. It is integrated
/// implicitly with λ at the substep's start: v ← w + (v − w)/(1 + λ·Δt). For bark, λ = k·|u|, and
/// this is the exact solution of du/dt = −k·|u|·u over the substep (|u(Δt)| = |u|/(1 + k·|u|·Δt)),
/// so it never reverses the relative velocity, whatever the storm or the step.
#[allow(clippy::too_many_arguments)]
pub(super) fn forces_and_verlet(
    sh: &Shared<'_>,
    tree: &TreeLayout,
    pos: &mut [Vec3],
    prev: &mut [Vec3],
    scratch: &[Vec3],
    anchored: bool,
    broken: &[bool],
    free: &[bool],
) {
    let p = sh.params;
    let dt = p.substep();
    let keep = 1.0 - p.damping * dt;
    let fall = Vec3::new(0.0, -p.gravity * dt * dt, 0.0);
    // Gravity and the generated shape (see the module's documentation): where the material
    // takes the shape as grown under its weight, only what hangs free (broken pieces, a tree
    // off its roots) falls.
    let b0 = tree.branches.start;
    let p0 = tree.particles.start;
    let pb = &sh.st.particle_branch[p0..p0 + pos.len()];
    let weighed = !sh.forest.material.compensate_gravity || !anchored;
    let moving = pos.len() - tree.roots.len();
    let k = tree.skeletal;
    // An anchored tree's base is held where it grew (see `relax`).
    let first = usize::from(anchored);
    // Twins step only once their branch has broken off (branch k's twin is particle
    // skeletal + k − 1).
    let twins = k..k + tree.twins;
    let law = sh.forest.material.drag_law;
    for j in first..moving {
        if twins.contains(&j) && !broken[j + 1 - k] {
            continue;
        }
        let r = pos[j];
        let mut v = (r - prev[j]) * (1.0 / dt);
        if j < k {
            let w = match sh.uniform {
                Some(w) => w,
                None => scratch[j],
            };
            v = match law {
                DragLaw::Linear => w + (v - w) * sh.keep_wind[p0 + j],
                DragLaw::Quadratic => w + (v - w) * quadratic_keep(sh.st, p0 + j, (v - w).length(), dt),
            };
        }
        prev[j] = r;
        let g = if weighed || free[pb[j] as usize - b0] {
            fall
        } else {
            Vec3::ZERO
        };
        pos[j] = r + v * (keep * dt) + g;
    }
}

/// 1/(1 + λ·Δt): how much of particle `i`'s velocity relative to the air survives a substep of
/// quadratic drag at relative speed `speed` (see [`forces_and_verlet`]).
#[inline]
fn quadratic_keep(st: &Structure, i: usize, speed: f32, dt: f32) -> f32 {
    let m = st.mass[i];
    if m <= 0.0 {
        return 1.0;
    }
    let (c, leaf) = (st.drag[i], st.leaf_drag[i]);
    let drag = (c - leaf) * quadratic_drag_scale(speed, false) + leaf * quadratic_drag_scale(speed, true);
    1.0 / (1.0 + drag / m * dt)
}

/// The branch and plane constraints, pass after pass (a constraint takes part in as many
/// passes as its segment's iterations), each pass followed by the contacts of every moving
/// particle. While any of its root constraints holds, a tree's base (its first skeletal
/// particle) is the pivot the root plate turns about: it is put back after every pass, and
/// the root constraints alone hold the plate's turn. One constraint (the thesis's seven steps, with Jakobsen's normalised error):
/// Δ = (|AB| − L)/|AB| · AB · elasticity, shared between the ends by their inverse masses
/// (the thesis moves each end half; Jakobsen's weighting, which the thesis cites, lets the
/// heavy wood near the root carry the light twigs instead of being pulled as far as they
/// are, so a tall tree stands under its weight with few passes).
pub(super) fn relax(
    sh: &Shared<'_>,
    tree: &TreeLayout,
    pos: &mut [Vec3],
    links: &Links<'_>,
    anchored: bool,
    root_cut: &mut [bool],
) -> u32 {
    let st = sh.st;
    let e = sh.params.elasticity;
    let base = st.rest[tree.particles.start];
    let mut cut = 0;
    let one = |pos: &mut [Vec3], a: u32, b: u32, l: f32, share: f32| {
        let (a, b) = (a as usize, b as usize);
        let d = pos[b] - pos[a];
        let len2 = d.length_squared();
        // Jakobsen's square-root-free form of (|d| − L)/|d|: (|d|² − L²)/(|d|² + L²), equal
        // to first order in the error and converging to the same lengths. Every L is
        // positive, so it is finite; a dropped constraint (both ends on one particle) has
        // d = 0 and moves nothing.
        let l2 = l * l;
        let corr = d * ((len2 - l2) / (len2 + l2) * e);
        pos[a] += corr * share;
        pos[b] -= corr * (1.0 - share);
    };
    for &count in &tree.passes {
        let n = count as usize;
        let lengths = &st.length[tree.constraints.start..tree.constraints.start + n];
        let it = links.ca[..n]
            .iter()
            .zip(&links.cb[..n])
            .zip(lengths)
            .zip(&links.share[..n]);
        // Root to tips: a pass carries the tips' load down to the heavy root plate.
        it.for_each(|(((&a, &b), &l), &w)| one(pos, a, b, l, w));
        // The roots hold the plate in every pass, so the tree cannot lean its plate over
        // between the roots' own passes.
        cut += root_pass(sh, tree, pos, root_cut);
        collide(sh, tree, &mut pos[..tree.contact]);
        if anchored {
            pos[0] = base;
        }
    }
    cut
}

/// Friction on the ground: every particle that meets the ground and lies on it keeps only
/// 1 − `ground_friction` of its velocity along the ground each substep (the previous position
/// moves towards the current one), so broken pieces and fallen trees come to rest instead of
/// sliding downwind forever.
fn ground_friction(sh: &Shared<'_>, tree: &TreeLayout, pos: &[Vec3], prev: &mut [Vec3]) {
    let mu = sh.params.ground_friction;
    if mu == 0.0 {
        return;
    }
    let touching = tree.ground + 1e-4;
    for (p, q) in pos[..tree.contact].iter().zip(&mut prev[..tree.contact]) {
        if p.y <= touching {
            q.x += (p.x - q.x) * mu;
            q.z += (p.z - q.z) * mu;
        }
    }
}

/// Keeps every skeletal particle of a tree and its trunk's plane (the root plate) above its
/// ground and outside every sphere (with the wood's radius there): each is moved to the
/// nearest point outside (the half-space test of the thesis, made after every pass for every
/// skeletal particle; the thesis tests every third particle of a branch). The other
/// structural particles are the planes' geometric helpers and pass through.
fn collide(sh: &Shared<'_>, tree: &TreeLayout, pos: &mut [Vec3]) {
    let ground = tree.ground;
    let p0 = tree.particles.start;
    for p in pos.iter_mut() {
        if p.y < ground {
            p.y = ground;
        }
    }
    for c in sh.colliders {
        let centre = c.center - tree.origin;
        for (j, p) in pos.iter_mut().enumerate() {
            let reach = c.radius + sh.st.radius[p0 + j];
            let d = *p - centre;
            let d2 = d.length_squared();
            if d2 < reach * reach && d2 > 0.0 {
                *p = centre + d * (reach / d2.sqrt());
            }
        }
    }
}

/// The root constraints ("Tree structure updates", step 2): a constraint stretched past its
/// maximum is cut (and stays cut until reset); the others are relaxed `root_iterations` times,
/// the whole correction going to the plane's particle (the anchor is static). Returns how many
/// were cut now.
pub(super) fn roots(sh: &Shared<'_>, tree: &TreeLayout, pos: &mut [Vec3], cut: &mut [bool]) -> u32 {
    let mut newly = 0;
    for _ in 0..sh.params.root_iterations {
        newly += root_pass(sh, tree, pos, cut);
    }
    collide(sh, tree, &mut pos[..tree.contact]);
    newly
}

/// One pass over a tree's root constraints, the whole correction to the plate's particle. A
/// constraint found stretched past its maximum length is cut instead (the thesis: the longest
/// it "will still be able to solve"); returns how many were cut.
fn root_pass(sh: &Shared<'_>, tree: &TreeLayout, pos: &mut [Vec3], cut: &mut [bool]) -> u32 {
    let st = sh.st;
    let r0 = tree.roots.start;
    let e = sh.params.elasticity;
    let mut newly = 0;
    for (k, c) in cut.iter_mut().enumerate() {
        if *c {
            continue;
        }
        let (a, b) = (st.root_anchor[r0 + k] as usize, st.root_plane[r0 + k] as usize);
        let d = pos[b] - pos[a];
        let len = d.length();
        if len > st.root_max[r0 + k] {
            *c = true;
            newly += 1;
        } else if len > 0.0 {
            pos[b] -= d * ((len - st.root_length[r0 + k]) / len * e);
        }
    }
    newly
}

/// Each branch's rotation from rest, from its plane's four structural particles.
pub(super) fn turns(sh: &Shared<'_>, layout: &TreeLayout, pos: &[Vec3]) -> Vec<Quat> {
    let st = sh.st;
    st.branches[layout.branches.clone()]
        .iter()
        .map(|b| {
            let [a, c, e, g] = b.plane.map(|k| pos[k as usize]);
            let x = (a - e).normalize_or_zero();
            let z0 = c - g;
            let z = (z0 - x * z0.dot(x)).normalize_or_zero();
            let frame = if x == Vec3::ZERO || z == Vec3::ZERO {
                st.rest_orient[b.first as usize]
            } else {
                Quat::from_mat3(&glam::Mat3::from_cols(x, z.cross(x), z))
            };
            (frame * st.rest_orient[b.first as usize].conjugate()).normalize()
        })
        .collect()
}

/// The pose of tree `t`'s segments and leaves. A segment's axis points from its base particle
/// at its tip particle, its base is its parent's drawn tip (the root's, the tree's base
/// particle), so segments stay joined and keep their lengths however the constraints
/// stretch, and its twist follows its branch's plane: the plane's rotation
/// from rest (from its four structural particles) carries the segment's rest orientation, and
/// the shortest arc turns that onto the particles' axis. Leaves sit on the axis where they were
/// grown, rigid on their segment.
#[allow(clippy::too_many_arguments)]
pub(super) fn pose(
    sh: &Shared<'_>,
    t: usize,
    pos: &[Vec3],
    turn: &[Quat],
    broken: &[bool],
    base: &mut [Vec3],
    orient: &mut [Quat],
    leaf_pos: &mut [Vec3],
) {
    let st = sh.st;
    let f = sh.forest;
    let tree = &f.trees[t];
    let layout = &st.trees[t];
    let s0 = tree.segments.start as usize;
    let l0 = tree.leaves.start as usize;
    let b0 = layout.branches.start;
    for i in tree.segments.start as usize..tree.segments.end as usize {
        let k = i - s0;
        let parent = f.seg.parent[i];
        let bi = st.branch_of[i] as usize - b0;
        let own = &st.branches[b0 + bi];
        let (nb, world) = if parent == crate::forest::NO_PARENT {
            (0, pos[0] + layout.origin)
        } else if broken[bi] && own.first as usize == i {
            // A broken branch's first segment starts at its twin.
            (own.twin as usize, pos[own.twin as usize] + layout.origin)
        } else {
            let p = parent as usize - s0;
            (1 + p, base[p] + segment_axis(orient[p]) * f.seg.length[parent as usize])
        };
        let (b, e) = (pos[nb], pos[1 + k]);
        let carried = turn[bi] * st.rest_orient[i];
        let along = segment_axis(carried);
        let axis = (e - b).try_normalize().unwrap_or(along);
        let q = (arc(along, axis) * carried).normalize();
        base[k] = world;
        orient[k] = q;
        let step = axis * (f.seg.length[i] * (1.0 / 65535.0));
        let leaves = f.leaves_of(i);
        for j in leaves {
            leaf_pos[j - l0] = world + step * f.leaf.along[j] as f32;
        }
    }
}

/// The shortest rotation taking unit vector `from` to unit vector `to`: the half-way
/// quaternion (from × to, 1 + from·to), normalised; the library's general form where the two
/// are nearly opposite.
#[inline(always)]
fn arc(from: Vec3, to: Vec3) -> Quat {
    let d = from.dot(to);
    if d < -0.999 {
        return Quat::from_rotation_arc(from, to);
    }
    let c = from.cross(to);
    Quat::from_xyzw(c.x, c.y, c.z, 1.0 + d).normalize()
}
