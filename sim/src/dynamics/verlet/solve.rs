//! One tree's step (Manavi 2007, "Solving the Forces" and the update logic after it): forces
//! and position Verlet for every particle, the branch and plane constraints relaxed pass after
//! pass with every particle kept out of the ground and the colliders after each pass, then the
//! root constraints, then the pose the renderer draws.
//!
//! Trees share nothing, so a tree's step reads and writes only its own slices: the result does
//! not depend on which job runs it.

use glam::{Quat, Vec3, Vec3A};

use super::params::VerletParams;
use super::structure::{Structure, TreeLayout, NO_BRANCH};
use crate::collider::SphereCollider;
use crate::collision::runtime::Contact;
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
    /// Per tree, self-collision's contacts this step (Chen 2011 §5; [`touch`]), or empty.
    pub touches: &'a [Vec<Touch>],
}

/// A self-collision contact on a tree's particles: each piece's point as a blend of its
/// segment's base and tip particles (tree-local), `s` of the way from base to tip, plus an
/// offset (a leaf's blade from the point of its segment it hangs beside; about zero for a
/// stem's centreline), and the distance the two points are kept apart \[m\].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Touch {
    pub ends: [[u32; 2]; 2],
    pub s: [f32; 2],
    pub off: [Vec3A; 2],
    pub rest: f32,
    /// Zero, or the fixed way the first point is held `rest` beyond the second
    /// (`Contact::dir`).
    pub dir: Vec3A,
}

/// Per tree, the contacts (`SelfCollision::contacts`) on its particles as they are where the
/// step starts (`pos`): each contact point taken to the nearest point of its piece's segment
/// between the segment's base and tip particles, the rest as an offset. A contact whose
/// segment has no particles of its own here is dropped.
pub(super) fn touches_of(
    st: &Structure,
    forest: &Forest,
    pos: &[Vec3A],
    contacts: &[Contact],
    out: &mut Vec<Vec<Touch>>,
) {
    out.resize_with(st.trees.len(), Vec::new);
    out.iter_mut().for_each(Vec::clear);
    for c in contacts {
        let t = forest.tree_of(c.seg[0] as usize);
        let (Some(tree), Some(layout)) = (forest.trees.get(t), st.trees.get(t)) else {
            continue;
        };
        let s0 = tree.segments.start as usize;
        let p = &pos[layout.particles.clone()];
        let mut touch = Touch {
            ends: [[0; 2]; 2],
            s: [0.0; 2],
            off: [Vec3A::ZERO; 2],
            rest: c.rest,
            dir: Vec3A::from(c.dir),
        };
        for k in 0..2 {
            let i = c.seg[k] as usize;
            let parent = forest.seg.parent[i];
            let base = if parent == crate::forest::NO_PARENT {
                0
            } else {
                1 + parent as usize - s0
            };
            let tip = 1 + i - s0;
            let (a, b) = (p[base], p[tip]);
            let at = Vec3A::from(c.at[k] - layout.origin);
            let ab = b - a;
            let len2 = ab.length_squared();
            let f = if len2 > 0.0 {
                ((at - a).dot(ab) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            touch.ends[k] = [base as u32, tip as u32];
            touch.s[k] = f;
            touch.off[k] = at - (a + ab * f);
        }
        out[t].push(touch);
    }
}

/// The most a contact closes its gap by in one pass \[m\] ([`touch`]): a pair found deep
/// inside its rest length is eased apart over the passes instead of kicked apart in one (a
/// move is a velocity in position Verlet, and kicks bent twigs past their cones). On the
/// treeE-sized test tree in a 10 m/s wind, 18 branches broke with it and 55 without (none
/// without self-collision), while the gale test keeps 196 pair-steps of 3,875 against 188.
pub(super) const TOUCH_MOST: f32 = 0.005;

/// Self-collision's contacts held at their rest lengths by moving the particles, as Manavi's
/// model keeps its particles out of the ground and the colliders (after every pass): for a pair
/// nearer than its rest length, the two points move apart along the line between them to that
/// length (for blades that crossed, along the contact's fixed direction until the first is
/// that far beyond the second), the move shared among the four particles by their blend weights and inverse masses
/// (the correction of a distance constraint on two blended points: particle j moves by
/// λ·b_j·w_j with λ = (rest − d)/Σ b_j²·w_j), the gap closed by at most [`TOUCH_MOST`] a
/// pass. A massless particle and, while the tree stands on all its roots, its held base
/// (particle 0) do not move.
pub(super) fn touch(touches: &[Touch], pos: &mut [Vec3A], inv_mass: impl Fn(usize) -> f32) {
    for c in touches {
        let point = |pos: &[Vec3A], k: usize| {
            let [a, b] = c.ends[k];
            pos[a as usize] * (1.0 - c.s[k]) + pos[b as usize] * c.s[k] + c.off[k]
        };
        let d = point(pos, 0) - point(pos, 1);
        let (len, n) = if c.dir == Vec3A::ZERO {
            let len2 = d.length_squared();
            if len2.partial_cmp(&(c.rest * c.rest)) != Some(std::cmp::Ordering::Less) || len2 == 0.0 {
                continue;
            }
            let len = len2.sqrt();
            (len, d / len)
        } else {
            // Blades that crossed: the first point held beyond the second along the way the
            // pair lay (a negative gap while they still cross).
            let gap = d.dot(c.dir);
            if gap.partial_cmp(&c.rest) != Some(std::cmp::Ordering::Less) {
                continue;
            }
            (gap, c.dir)
        };
        let moves = [
            (c.ends[0][0], 1.0 - c.s[0], 1.0),
            (c.ends[0][1], c.s[0], 1.0),
            (c.ends[1][0], 1.0 - c.s[1], -1.0),
            (c.ends[1][1], c.s[1], -1.0),
        ];
        let total: f32 = moves.iter().map(|&(j, b, _)| b * b * inv_mass(j as usize)).sum();
        if total <= 0.0 {
            continue;
        }
        let lambda = (c.rest - len).min(TOUCH_MOST) / total;
        for (j, b, sign) in moves {
            pos[j as usize] += n * (sign * lambda * b * inv_mass(j as usize));
        }
    }
}

/// One constraint as the relaxation reads it, packed so that a pass streams one array: its
/// ends (tree-local particles), the square of its rest length \[m²\] and the share of the
/// correction end `a` takes (`b` takes the rest). Breaking a branch off rewires the ends and
/// shares; a dropped constraint has both ends on one particle and does nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(16))]
pub(super) struct Link {
    pub a: u32,
    pub b: u32,
    pub l2: f32,
    pub share: f32,
}

/// One tree's share of the state and the pose.
pub(super) struct TreeState<'a> {
    pub pos: &'a mut [Vec3A],
    pub prev: &'a mut [Vec3A],
    /// One flag per root constraint: cut.
    pub root_cut: &'a mut [bool],
    /// Its constraints as they are now.
    pub links: &'a mut [Link],
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

/// Room a job's trees reuse from step to step.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// A tree's wind samples, one per skeletal particle.
    pub wind: Vec<Vec3>,
    /// A tree's segments' shortest arcs (see `pose`).
    pub arcs: Vec<Quat>,
    /// A tree's branches' rotations from rest and their planes' axes (see `turns_into`).
    pub turn: Vec<Quat>,
    pub xs: Vec<Vec3>,
    pub zs: Vec<Vec3>,
}

/// Steps tree `t`, in room kept in `scratch` between calls.
pub(super) fn step_tree(sh: &Shared<'_>, t: usize, s: TreeState<'_>, scratch: &mut Scratch) -> TreeReport {
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
        links,
        broken,
        base,
        orient,
        leaf_pos,
    } = s;
    sample_wind(sh, tree, pos, &mut scratch.wind);
    // Branches only break at the step's end, so what hangs free is the same every substep.
    let free = hanging_free(sh, tree, broken);
    let touches = sh.touches.get(t).map_or(&[][..], Vec::as_slice);
    lap(0, &mut report);
    for _ in 0..sh.params.substeps {
        let anchored = anchored(root_cut);
        let intact = !root_cut.iter().any(|&c| c);
        forces_and_verlet(sh, tree, pos, prev, &scratch.wind, intact, broken, &free);
        lap(0, &mut report);
        report.roots_cut += relax(sh, tree, pos, links, (anchored, intact), root_cut, touches);
        lap(1, &mut report);
        report.roots_cut += roots(sh, tree, pos, root_cut);
        ground_friction(sh, tree, pos, prev, self::anchored(root_cut));
        lap(2, &mut report);
    }
    let Scratch { arcs, turn, xs, zs, .. } = scratch;
    turns_into(sh, tree, pos, (xs, zs), turn);
    pose(sh, t, pos, turn, broken, (base, orient, leaf_pos), arcs);
    report.broken = super::breakage::break_off(sh, t, pos, prev, turn, links, broken);
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
fn sample_wind(sh: &Shared<'_>, tree: &TreeLayout, pos: &[Vec3A], scratch: &mut Vec<Vec3>) {
    if sh.uniform.is_none() {
        scratch.clear();
        scratch.extend(pos[..tree.skeletal].iter().map(|&p| Vec3::from(p) + tree.origin));
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
    pos: &mut [Vec3A],
    prev: &mut [Vec3A],
    scratch: &[Vec3],
    intact: bool,
    broken: &[bool],
    free: &[bool],
) {
    let p = sh.params;
    let dt = p.substep();
    let inv_dt = 1.0 / dt;
    let step = (1.0 - p.damping * dt) * dt;
    let fall = Vec3A::new(0.0, -p.gravity * dt * dt, 0.0);
    // Gravity and the generated shape (see the module's documentation): where the material
    // takes the shape as grown under its weight, only what hangs free (broken pieces) falls,
    // and a whole tree once any of its roots is cut (it grew on all of them: on fewer, its
    // weight leans it over on the rest, the thesis's weight shift).
    let b0 = tree.branches.start;
    let p0 = tree.particles.start;
    let pb = &sh.st.particle_branch[p0..p0 + pos.len()];
    let weighed = !sh.forest.material.compensate_gravity || !intact;
    let any_free = free.iter().any(|&f| f);
    let gravity = |j: usize| {
        if weighed || (any_free && free[pb[j] as usize - b0]) {
            fall
        } else {
            Vec3A::ZERO
        }
    };
    let moving = pos.len() - tree.roots.len();
    let k = tree.skeletal;
    // The base of a tree on all its roots is held where it grew (see `relax`).
    let first = usize::from(intact);
    // One particle: v the Verlet velocity, `wind` the drag's part of it. (Gravity is added
    // even where it is zero, as r + v·Δt + 0, so the bits do not depend on how it is skipped.)
    #[inline(always)]
    fn one(pos: &mut [Vec3A], prev: &mut [Vec3A], j: usize, h: (f32, f32), g: Vec3A, wind: impl Fn(Vec3A) -> Vec3A) {
        let r = pos[j];
        let v = wind((r - prev[j]) * h.0);
        prev[j] = r;
        pos[j] = r + v * h.1 + g;
    }
    let h = (inv_dt, step);
    // Skeletal particles feel the wind: Weber's linear law as a constant share kept per
    // substep, the quadratic law's share from the relative speed (`quadratic_keep`).
    let keep_wind = &sh.keep_wind[p0..p0 + k];
    match (sh.forest.material.drag_law, sh.uniform) {
        (DragLaw::Linear, Some(w)) => {
            let w = Vec3A::from(w);
            for j in first..k {
                one(pos, prev, j, h, gravity(j), |v| w + (v - w) * keep_wind[j]);
            }
        }
        (DragLaw::Linear, None) => {
            for j in first..k {
                let w = Vec3A::from(scratch[j]);
                one(pos, prev, j, h, gravity(j), |v| w + (v - w) * keep_wind[j]);
            }
        }
        (DragLaw::Quadratic, uniform) => {
            for j in first..k {
                let w = Vec3A::from(match uniform {
                    Some(w) => w,
                    None => scratch[j],
                });
                one(pos, prev, j, h, gravity(j), |v| {
                    w + (v - w) * quadratic_keep(sh.st, p0 + j, (v - w).length(), dt)
                });
            }
        }
    }
    // Twins step only once their branch has broken off (branch k's twin is particle
    // skeletal + k − 1); the structural particles always.
    for j in k..k + tree.twins {
        if broken[j + 1 - k] {
            one(pos, prev, j, h, gravity(j), |v| v);
        }
    }
    for j in k + tree.twins..moving {
        one(pos, prev, j, h, gravity(j), |v| v);
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
/// particle. While all of its root constraints hold, a tree's base (its first skeletal
/// particle) is the pivot the root plate turns about: it is put back after every pass, and
/// the root constraints alone hold the plate's turn. Once one is cut, the base is free, and
/// the plate turns about what the remaining roots hold (`anchored`: any holds, so the plate
/// still meets the ground; `intact`: all hold). One constraint (the thesis's seven steps, with Jakobsen's normalised error):
/// Δ = (|AB| − L)/|AB| · AB · elasticity, shared between the ends by their inverse masses
/// (the thesis moves each end half; Jakobsen's weighting, which the thesis cites, lets the
/// heavy wood near the root carry the light twigs instead of being pulled as far as they
/// are, so a tall tree stands under its weight with few passes).
pub(super) fn relax(
    sh: &Shared<'_>,
    tree: &TreeLayout,
    pos: &mut [Vec3A],
    links: &[Link],
    (anchored, intact): (bool, bool),
    root_cut: &mut [bool],
    touches: &[Touch],
) -> u32 {
    let e = sh.params.elasticity;
    let base = Vec3A::from(sh.st.rest[tree.particles.start]);
    let mut cut = 0;
    for &count in &tree.passes {
        // Root to tips: a pass carries the tips' load down to the heavy root plate.
        for c in &links[..count as usize] {
            let (a, b) = (c.a as usize, c.b as usize);
            let (pa, pb) = (pos[a], pos[b]);
            let d = pb - pa;
            let len2 = d.length_squared();
            // Jakobsen's square-root-free form of (|d| − L)/|d|: (|d|² − L²)/(|d|² + L²),
            // equal to first order in the error and converging to the same lengths. Every L
            // is positive, so it is finite; a dropped constraint (both ends on one particle)
            // has d = 0 and moves nothing.
            let corr = d * ((len2 - c.l2) / (len2 + c.l2) * e);
            pos[a] = pa + corr * c.share;
            // (pb is still pos[b]: the ends differ, or, for a dropped constraint, the first
            // line moved nothing: corr is −0.)
            pos[b] = pb - corr * (1.0 - c.share);
        }
        // The roots hold the plate in every pass, so the tree cannot lean its plate over
        // between the roots' own passes.
        cut += root_pass(sh, tree, pos, root_cut);
        if !touches.is_empty() {
            let p0 = tree.particles.start;
            touch(touches, pos, |j| {
                let m = sh.st.mass[p0 + j];
                if (j == 0 && intact) || m <= 0.0 {
                    0.0
                } else {
                    1.0 / m
                }
            });
        }
        collide(sh, tree, &mut pos[..contacts(tree, anchored)]);
        if intact {
            pos[0] = base;
        }
    }
    cut
}

/// Friction on the ground: every particle that meets the ground and lies on it keeps only
/// 1 − `ground_friction` of its velocity along the ground each substep (the previous position
/// moves towards the current one), so broken pieces and fallen trees come to rest instead of
/// sliding downwind forever; and what is left stops altogether when it is slower than the
/// ground's grip, μ·g·Δt with μ = `ground_friction` (Coulomb's static friction: the speed a
/// deceleration of μ·g removes within the substep), so that a lying tree that the
/// relaxation keeps pushing by a little each substep stays put instead of creeping.
pub(super) fn ground_friction(sh: &Shared<'_>, tree: &TreeLayout, pos: &[Vec3A], prev: &mut [Vec3A], anchored: bool) {
    let mu = sh.params.ground_friction;
    if mu == 0.0 {
        return;
    }
    let dt = sh.params.substep();
    let grip = mu * sh.params.gravity * dt * dt;
    let touching = tree.ground + 1e-4;
    let wood = contacts(tree, false);
    let n = contacts(tree, anchored);
    for (j, (p, q)) in pos[..n].iter().zip(&mut prev[..n]).enumerate() {
        if p.y <= touching {
            q.x += (p.x - q.x) * mu;
            q.z += (p.z - q.z) * mu;
            // (The wood only: the roots hold the root plate while they hold.)
            let (sx, sz) = (p.x - q.x, p.z - q.z);
            if j < wood && sx * sx + sz * sz <= grip * grip {
                (q.x, q.z) = (p.x, p.z);
            }
        }
    }
}

/// Keeps the particles it is given (see `contacts`: every skeletal particle of a tree, its
/// twins, and its trunk's plane, the root plate, while a root holds) above its ground and
/// outside every sphere (with the wood's radius there): each is moved to the
/// nearest point outside (the half-space test of the thesis, made after every pass for every
/// skeletal particle; the thesis tests every third particle of a branch). The other
/// structural particles are the planes' geometric helpers and pass through.
fn collide(sh: &Shared<'_>, tree: &TreeLayout, pos: &mut [Vec3A]) {
    let ground = tree.ground;
    let p0 = tree.particles.start;
    for p in pos.iter_mut() {
        if p.y < ground {
            p.y = ground;
        }
    }
    for c in sh.colliders {
        let centre = Vec3A::from(c.center - tree.origin);
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
pub(super) fn roots(sh: &Shared<'_>, tree: &TreeLayout, pos: &mut [Vec3A], cut: &mut [bool]) -> u32 {
    let mut newly = 0;
    for _ in 0..sh.params.root_iterations {
        newly += root_pass(sh, tree, pos, cut);
    }
    collide(sh, tree, &mut pos[..contacts(tree, anchored(cut))]);
    newly
}

/// How many of a tree's particles (the first) meet the ground and the colliders: its wood
/// (skeletal particles and twins) and, while it stands on its roots, its trunk's plane (the
/// root plate, which the roots hold at the ground). Torn from its roots, a tree has nothing
/// wider than its trunk to stand on: the plane's particles are the thesis's structural
/// helpers, set out for bending stiffness (`plane_scale`, `plane_min`), not a footprint, so
/// they would prop an uprooted tree up like the legs of a stool.
fn contacts(tree: &TreeLayout, anchored: bool) -> usize {
    if anchored {
        tree.contact
    } else {
        tree.skeletal + tree.twins
    }
}

/// One pass over a tree's root constraints, the whole correction to the plate's particle. A
/// constraint found stretched past its maximum length is cut instead (the thesis: the longest
/// it "will still be able to solve"); returns how many were cut.
fn root_pass(sh: &Shared<'_>, tree: &TreeLayout, pos: &mut [Vec3A], cut: &mut [bool]) -> u32 {
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
pub(super) fn turns(sh: &Shared<'_>, layout: &TreeLayout, pos: &[Vec3A]) -> Vec<Quat> {
    let mut out = Vec::new();
    turns_into(sh, layout, pos, (&mut Vec::new(), &mut Vec::new()), &mut out);
    out
}

/// As [`turns`], into `out`, with `room` for the planes' axes: sweeps over all the branches,
/// each a short chain of work per branch (an axis, the other axis, the rotation), so that
/// many branches' divisions and square roots are under way at once.
pub(super) fn turns_into(
    sh: &Shared<'_>,
    layout: &TreeLayout,
    pos: &[Vec3A],
    (xs, zs): (&mut Vec<Vec3>, &mut Vec<Vec3>),
    out: &mut Vec<Quat>,
) {
    let st = sh.st;
    let branches = &st.branches[layout.branches.clone()];
    let at = |k: u32| Vec3::from(pos[k as usize]);
    xs.clear();
    xs.extend(
        branches
            .iter()
            .map(|b| (at(b.plane[0]) - at(b.plane[2])).normalize_or_zero()),
    );
    zs.clear();
    zs.extend(branches.iter().zip(&*xs).map(|(b, &x)| {
        let z0 = at(b.plane[1]) - at(b.plane[3]);
        (z0 - x * z0.dot(x)).normalize_or_zero()
    }));
    out.clear();
    out.extend(branches.iter().zip(xs.iter().zip(&*zs)).map(|(b, (&x, &z))| {
        let rest = st.rest_orient[b.first as usize];
        let frame = if x == Vec3::ZERO || z == Vec3::ZERO {
            rest
        } else {
            Quat::from_mat3(&glam::Mat3::from_cols(x, z.cross(x), z))
        };
        (frame * rest.conjugate()).normalize()
    }));
}

/// The pose of tree `t`'s segments and leaves. A segment's axis points from its base particle
/// at its tip particle, its base is its parent's drawn tip (the root's, the tree's base
/// particle), so segments stay joined and keep their lengths however the constraints
/// stretch, and its twist follows its branch's plane: the plane's rotation
/// from rest (from its four structural particles) carries the segment's rest orientation, and
/// the shortest arc turns that onto the particles' axis. Leaves sit on the axis where they were
/// grown, rigid on their segment.
pub(super) fn pose(
    sh: &Shared<'_>,
    t: usize,
    pos: &[Vec3A],
    turn: &[Quat],
    broken: &[bool],
    (base, orient, leaf_pos): (&mut [Vec3], &mut [Quat], &mut [Vec3]),
    arcs: &mut Vec<Quat>,
) {
    let st = sh.st;
    let f = sh.forest;
    let tree = &f.trees[t];
    let layout = &st.trees[t];
    let s0 = tree.segments.start as usize;
    let l0 = tree.leaves.start as usize;
    let b0 = layout.branches.start;
    let segs = tree.segments.start as usize..tree.segments.end as usize;
    // Sweeps over all the segments, each a short chain of work per segment, so that many
    // segments' divisions and square roots are under way at once: every carried orientation
    // (parked in `orient`) and axis (parked in `base`), every shortest arc, every
    // orientation, then the chain of bases from the root to the tips, and the leaves.
    let start = |i: usize| -> Option<usize> {
        let bi = st.branch_of[i] as usize - b0;
        let own = &st.branches[b0 + bi];
        if f.seg.parent[i] == crate::forest::NO_PARENT {
            Some(0)
        } else if broken[bi] && own.first as usize == i {
            // A broken branch's first segment starts at its twin.
            Some(own.twin as usize)
        } else {
            None
        }
    };
    for i in segs.clone() {
        let k = i - s0;
        let bi = st.branch_of[i] as usize - b0;
        let nb = start(i).unwrap_or_else(|| 1 + f.seg.parent[i] as usize - s0);
        let (b, e) = (Vec3::from(pos[nb]), Vec3::from(pos[1 + k]));
        let carried = turn[bi] * st.rest_orient[i];
        orient[k] = carried;
        base[k] = (e - b).try_normalize().unwrap_or_else(|| segment_axis(carried));
    }
    arcs.clear();
    arcs.extend(
        orient
            .iter()
            .zip(&*base)
            .map(|(&carried, &axis)| arc(segment_axis(carried), axis)),
    );
    for (q, &a) in orient.iter_mut().zip(&*arcs) {
        *q = (a * *q).normalize();
    }
    for i in segs {
        let k = i - s0;
        let world = match start(i) {
            Some(nb) => Vec3::from(pos[nb]) + layout.origin,
            None => {
                let p = f.seg.parent[i] as usize;
                base[p - s0] + segment_axis(orient[p - s0]) * f.seg.length[p]
            }
        };
        let step = base[k] * (f.seg.length[i] * (1.0 / 65535.0));
        base[k] = world;
        for j in f.leaves_of(i) {
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
