//! The passes of a step over runs of segments and leaves (Chen 2011 §4.1–4.3): the forces,
//! tips to root (`forces`), the motion, root to tips (`motion`), and the leaves (`leaves`).
//! A pass writes the run it owns and reads the rest of the forest's arrays; `View` is one
//! forest-order array seen as the run a job owns (mutable) and the part it may read.

use crate::collision::clearance::TwigClearance;
use crate::collision::runtime::LeafTurn;
use glam::{Quat, Vec3};

use super::kernels::{self, Load, Spin};
use super::params::ChenParams;
use super::statics::Statics;
use crate::collider::SphereCollider;
use crate::dynamics::pose::segment_axis;
use crate::forest::{Forest, NO_PARENT};
use crate::wind::WindField;

/// A forest-order array as a job sees it: the run `own` starting at segment `own0`, which it
/// writes, and the run `other` starting at `other0`, which it only reads.
pub(super) struct View<'a, T> {
    pub own0: usize,
    pub own: &'a mut [T],
    pub other0: usize,
    pub other: &'a [T],
}

impl<'a, T: Copy> View<'a, T> {
    /// A job that owns `own` (starting at `own0`) and reads nothing else.
    pub fn alone(own0: usize, own: &'a mut [T]) -> View<'a, T> {
        View {
            own0,
            own,
            other0: 0,
            other: &[],
        }
    }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        let k = i.wrapping_sub(self.own0);
        if k < self.own.len() {
            self.own[k]
        } else {
            self.other[i - self.other0]
        }
    }
    #[inline(always)]
    pub fn set(&mut self, i: usize, v: T) {
        self.own[i - self.own0] = v;
    }
}

/// What every pass reads.
pub(super) struct Ctx<'a> {
    pub forest: &'a Forest,
    pub statics: &'a Statics,
    pub params: &'a ChenParams,
    /// K_d's factor over one step (Eq. 4.9).
    pub keep: f32,
    pub wind: &'a dyn WindField,
    pub uniform: Option<Vec3>,
    pub colliders: &'a [SphereCollider],
    /// The self-collision's response force per segment (empty while it is off).
    pub response: &'a [Vec3],
    /// Per segment: P1 of Eq. 5.2, the weight of its own forces (empty while self-collision
    /// is off: 1 everywhere).
    pub original: &'a [f32],
    /// The self-collision's springs on each leaf, about its attachment (empty while it is off).
    pub leaf_turns: &'a [LeafTurn],
    /// Per leaf, its blade's clearance from its own twig (empty while self-collision does not
    /// answer; `collision::clearance`).
    pub twig: &'a [TwigClearance],
}

impl Ctx<'_> {
    #[inline(always)]
    fn wind_at(&self, p: Vec3) -> Vec3 {
        match self.uniform {
            Some(w) => w,
            None => self.wind.sample(p),
        }
    }
}

/// The force pass over the run `load.own` (tips to root; `orient`, `base` and `spin` start at
/// segment `off`): each stem's F_W, F_G and F_T (from
/// its children's loads, which are in the run or in `load.other`), and its explicit angular
/// acceleration, from the pose at the step's start.
pub(super) fn forces(
    c: &Ctx<'_>,
    (orient, base, spin, off): (&[Quat], &[Vec3], &[Spin], usize),
    load: &mut View<'_, Load>,
) {
    let s = &c.forest.seg;
    let law = c.forest.material.drag_law;
    let compensate = c.forest.material.compensate_gravity;
    let k_t = c.params.transfer();
    let start = load.own0;
    for i in (start..start + load.own.len()).rev() {
        let st = &c.statics.stem[i];
        let q = orient[i - off];
        let d = segment_axis(q);
        let p = s.parent[i];
        // Chen 2011 Eq. 4.2: P_rest follows the parent's current orientation.
        let rest = if p == NO_PARENT {
            segment_axis(c.statics.rel_rest[i])
        } else {
            segment_axis(orient[p as usize - off] * c.statics.rel_rest[i])
        };
        let centre = base[i - off] + d * (0.5 * st.len);
        let f_w = kernels::wind_force(law, st, c.wind_at(centre), spin[i - off].vel);
        let mut transfer = Vec3::ZERO;
        for &ch in c.statics.children(i) {
            transfer += load.get(ch as usize).load;
        }
        let response = c.response.get(i).copied().unwrap_or(Vec3::ZERO);
        let p1 = c.original.get(i).copied().unwrap_or(1.0);
        load.set(
            i,
            kernels::stem_forces(st, d, rest, f_w, transfer, k_t, (response, p1), compensate),
        );
    }
}

/// The motion pass over the run `spin` (root to tips) starting at segment `own0`, the same
/// run `orient.own`, `base.own`, `turned.own`: each stem's Eqs. 4.8–4.10, its base put on its
/// parent's new tip. Writes each stem's rotation over the step into `turned`. Returns false if
/// a result is not finite.
pub(super) fn motion(
    c: &Ctx<'_>,
    (load, load0): (&[Load], usize),
    (orient, base, turned): (&mut View<'_, Quat>, &mut View<'_, Vec3>, &mut View<'_, Quat>),
    spin: &mut [Spin],
) -> bool {
    let s = &c.forest.seg;
    let dt = c.params.dt;
    let start = orient.own0;
    let mut finite = true;
    for (k, sp) in spin.iter_mut().enumerate() {
        let i = start + k;
        let st = &c.statics.stem[i];
        let q = orient.get(i);
        let d = segment_axis(q);
        // Eq. 5.2's P1 on the restoration's implicit part too.
        let p1 = c.original.get(i).copied().unwrap_or(1.0);
        let w = kernels::angular_velocity(sp.omega, load[i - load0].acc, st.w2 * p1, c.keep, dt, d);
        let p = s.parent[i];
        let (parent_turn, b) = if p == NO_PARENT {
            (Quat::IDENTITY, c.statics.rest_base[i])
        } else {
            let p = p as usize;
            (turned.get(p), base.get(p) + segment_axis(orient.get(p)) * s.length[p])
        };
        let geometry = (b, st.len, s.radius_base[i], s.radius_tip[i]);
        let (q1, w1) = kernels::stem_motion(q, w, parent_turn, dt, geometry, c.colliders);
        let half = 0.5 * st.len;
        let moved = (b + segment_axis(q1) * half) - (base.get(i) + d * half);
        *sp = Spin {
            omega: w1,
            vel: moved / dt,
        };
        finite &= q1.is_finite() & w1.is_finite() & b.is_finite();
        turned.set(i, (q1 * q.conjugate()).normalize());
        orient.set(i, q1);
        base.set(i, b);
    }
    finite
}

/// The leaves `first..first + leaf_orient.len()`: each carried by its segment's rotation over
/// the step, then its own step (`kernels::leaf_step`), and placed at its attachment. Returns
/// false if a result is not finite.
pub(super) fn leaves(
    c: &Ctx<'_>,
    (orient, base, turned): (&[Quat], &[Vec3], &[Quat]),
    first: usize,
    (leaf_pos, leaf_orient, leaf_omega): (&mut [Vec3], &mut [Quat], &mut [Vec3]),
) -> bool {
    let dt = c.params.dt;
    let compensate = c.forest.material.compensate_gravity;
    let mut finite = true;
    for (k, ((pos, q), w)) in leaf_pos
        .iter_mut()
        .zip(leaf_orient.iter_mut())
        .zip(leaf_omega.iter_mut())
        .enumerate()
    {
        let j = first + k;
        let b = &c.statics.blade[j];
        let i = c.statics.leaf_seg[j] as usize;
        let seg_q = orient[i];
        let rigid = seg_q * b.rest;
        let r = turned[i];
        let carried = (r * *q).normalize();
        let attach = base[i] + segment_axis(seg_q) * b.along;
        let centre = attach + segment_axis(carried) * (0.5 * b.len);
        let turn = c.leaf_turns.get(j).copied().unwrap_or_default();
        let (q1, w1) = kernels::leaf_step(
            b,
            (carried, r * *w, rigid),
            (c.wind_at(centre), turn),
            (c.keep, dt),
            compensate,
        );
        // Its blade's contact with its own twig (`collision::clearance`).
        let (q1, w1) = match c.twig.get(j) {
            Some(twig) => twig.hold(q1, w1, segment_axis(seg_q)),
            None => (q1, w1),
        };
        finite &= q1.is_finite() & w1.is_finite();
        *pos = attach;
        *q = q1;
        *w = w1;
    }
    finite
}
