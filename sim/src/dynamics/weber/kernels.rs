//! The per-tree passes of Weber's model. Each works on one tree's slices (indices local to the
//! tree: segment 0 is the root, `parent[i] - offset < i`) so trees, planes and subtree blocks
//! can run as independent jobs. Nothing here allocates.

use glam::{DVec3, Mat3A, Quat, Vec3, Vec3A, Vec4};

use super::articulated::{self, MassView};

use super::mapping::{self, BendBatch, BendParts, BATCH};
use super::touch;
use crate::collider::{Contact, SphereCollider};
use crate::dynamics::pose::segment_axis;
use crate::material::{
    quadratic_drag_scale, DragLaw, Material, DRAG_MATCH_SPEED, LEAF_RECONFIGURATION_SPEED, LEAF_VOGEL_EXPONENT,
};

/// One tree's static data.
pub(crate) struct TreeStatic<'a> {
    /// Global index of the tree's first segment (parents are stored as global indices).
    pub offset: u32,
    /// Global index of the tree's first leaf.
    pub leaf_offset: u32,
    pub root: Vec3,
    /// Upper bound of the distance from the root to any point of the tree [m].
    pub reach: f32,
    pub parent: &'a [u32],
    pub length: &'a [f32],
    pub radius_base: &'a [f32],
    pub radius_tip: &'a [f32],
    pub mass: &'a [f32],
    /// Weber's diagonal inertia of each segment (`SegmentData::inertia`).
    pub inertia: &'a [f32],
    pub rest: [&'a [f32]; 2],
    pub stiffness: &'a [f32],
    pub damping: &'a [f32],
    pub drag: &'a [f32],
    /// The leaves' part of `drag`.
    pub leaf_drag: &'a [f32],
    /// The forest's material (its drag law).
    pub material: &'a Material,
    /// Global leaf index ranges: segment i owns `leaf_start[i]..leaf_start[i + 1]`.
    pub leaf_start: &'a [u32],
    pub leaf_along: &'a [u16],
    /// 1 / pivot of the tip-to-root elimination (see `factor`); diagonal inertia only.
    pub inv_pivot: &'a [f64],
    /// Articulated inertia: u = ∂tip/∂Θ at the rest pose, per plane (empty with the diagonal).
    pub rest_dir: [&'a [Vec3]; 2],
    /// Articulated inertia: W = c·m + M_out and Q = q·m + M_out (see `articulated`).
    pub first: &'a [f64],
    pub second: &'a [f64],
    /// Articulated inertia: (β/D, e/D, 1/D) of the factorisation, per plane.
    pub fac: [&'a [articulated::Pivot]; 2],
    /// Forces on the segments' centres from outside the model this step \[N\] (self-collision's
    /// response, Chen 2011 Eq. 5.1); empty for none.
    pub external: &'a [Vec3],
    /// Self-collision's contacts held as springs (`touch::hold_apart`): per segment, the
    /// turn of each plane its angles are pulled by this step \[rad\] (zero for none); empty
    /// for no pulls.
    pub pull: &'a [[f32; 2]],
}

impl TreeStatic<'_> {
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.parent.len()
    }
    /// Tree-local parent of a non-root segment.
    #[inline(always)]
    pub fn parent_of(&self, i: usize) -> usize {
        (self.parent[i] - self.offset) as usize
    }
    /// Local range of the leaves of segment `i`.
    #[inline(always)]
    fn leaves_of(&self, i: usize) -> std::ops::Range<usize> {
        (self.leaf_start[i] - self.leaf_offset) as usize..(self.leaf_start[i + 1] - self.leaf_offset) as usize
    }
    /// Off-diagonal magnitude of row i of A = M + hC + h²K: e_i = h·c_i + h²·k_i, the coupling
    /// of segment i to its parent (A[i][parent] = -e_i).
    #[inline(always)]
    pub fn coupling(&self, i: usize, h: f32) -> f32 {
        h * (self.damping[i] + h * self.stiffness[i])
    }
    /// The articulated mass data of plane `k`, if the tree uses it.
    #[inline(always)]
    pub fn mass_view(&self, k: usize) -> Option<MassView<'_>> {
        if self.rest_dir[k].is_empty() {
            return None;
        }
        Some(MassView {
            u: self.rest_dir[k],
            first: self.first,
            second: self.second,
        })
    }
}

/// One plane's dynamic state for one tree.
pub(crate) struct PlaneMut<'a> {
    /// Absolute angle in the plane [rad] (Θx in the x-y plane, Θz in the z-y plane).
    pub theta: &'a mut [f32],
    /// Angular velocity [rad/s].
    pub vel: &'a mut [f32],
    /// Collision displacement to impose in the next solve (Eq. 1's y); already in the pose.
    pub y: &'a mut [f32],
    /// Right-hand side of Eq. 1, overwritten by Δv in the solve.
    pub rhs: &'a mut [f32],
    /// Newmark: the step's load stiffness S of each segment's own angle (see `populate`).
    pub stiff: &'a mut [f32],
}

/// Read-only pose of one tree, as populate reads it.
#[derive(Clone, Copy)]
pub(crate) struct PoseRef<'a> {
    pub base: &'a [Vec3],
    pub orient: &'a [Quat],
    pub dir: [&'a [Vec3]; 2],
    /// The tree's leaf positions (the last pose).
    pub leaf_pos: &'a [Vec3],
}

/// The run of segments a kinematics job poses, with their leaves, and the collision
/// displacement and velocity its contacts may change.
pub(crate) struct Part<'a> {
    pub base: &'a mut [Vec3],
    pub orient: &'a mut [Quat],
    pub dir: [&'a mut [Vec3]; 2],
    pub leaf_pos: &'a mut [Vec3],
    pub y: [&'a mut [f32]; 2],
    pub vel: [&'a mut [f32]; 2],
}

/// A finished part (the top of a tree), read by the jobs posing its subtrees.
#[derive(Clone, Copy)]
pub(crate) struct Done<'a> {
    pub base: &'a [Vec3],
    pub orient: &'a [Quat],
    pub y: [&'a [f32]; 2],
}

impl<'a> Part<'a> {
    /// Splits after `segs` segments and `leaves` leaves.
    pub fn split_at(self, segs: usize, leaves: usize) -> (Part<'a>, Part<'a>) {
        let [d0, d1] = self.dir;
        let [y0, y1] = self.y;
        let [v0, v1] = self.vel;
        let (b0, b1) = self.base.split_at_mut(segs);
        let (o0, o1) = self.orient.split_at_mut(segs);
        let (x0, x1) = d0.split_at_mut(segs);
        let (z0, z1) = d1.split_at_mut(segs);
        let (l0, l1) = self.leaf_pos.split_at_mut(leaves);
        let (ya0, ya1) = y0.split_at_mut(segs);
        let (yb0, yb1) = y1.split_at_mut(segs);
        let (va0, va1) = v0.split_at_mut(segs);
        let (vb0, vb1) = v1.split_at_mut(segs);
        (
            Part {
                base: b0,
                orient: o0,
                dir: [x0, z0],
                leaf_pos: l0,
                y: [ya0, yb0],
                vel: [va0, vb0],
            },
            Part {
                base: b1,
                orient: o1,
                dir: [x1, z1],
                leaf_pos: l1,
                y: [ya1, yb1],
                vel: [va1, vb1],
            },
        )
    }

    pub fn into_done(self) -> Done<'a> {
        let [y0, y1] = self.y;
        Done {
            base: self.base,
            orient: self.orient,
            y: [y0, y1],
        }
    }
}

/// The colliders that can touch one tree, and how contacts respond.
pub(crate) struct Contacts<'a> {
    pub colliders: Vec<&'a SphereCollider>,
    pub params: ContactParams,
}

impl<'a> Contacts<'a> {
    /// Keeps the colliders within reach of the tree: no point of a tree is farther from its
    /// root than its longest chain of segments.
    pub fn near(t: &TreeStatic<'_>, colliders: &'a [SphereCollider], params: ContactParams) -> Self {
        let colliders = colliders
            .iter()
            .filter(|c| (c.center - t.root).length() < c.radius + t.reach)
            .collect();
        Contacts { colliders, params }
    }
    pub fn none() -> Self {
        Contacts {
            colliders: Vec::new(),
            params: ContactParams {
                passes: 0,
                stiffness: 0.0,
            },
        }
    }
}

/// What a child needs from its parent: its base, length, orientation and angles (the ground
/// for a root: a zero-length parent at the tree's root position).
#[derive(Clone, Copy)]
struct Joint {
    base: Vec3,
    length: f32,
    orient: Quat,
    angle: [f32; 2],
}

/// Poses segment `i` (slot `k` of `own`) with `bend`, the mapping of its angles (Θ + y, both
/// planes) relative to its parent's (see [`relative_angles`]), from its parent:
/// Weber's relative mapping (Eqs. 3 and 4) composed onto the parent's orientation,
/// Q_ca = Q_pa·Q_cr; the base is the parent's tip; the two correction direction vectors are
/// the tip's derivatives with respect to the segment's own two angles. Leaves follow (their
/// attachment points; orientations derive from the segment's, see
/// `Pose::leaf_orientation`).
#[inline(always)]
fn pose_one(
    t: &TreeStatic<'_>,
    i: usize,
    bend: BendParts,
    parent: Joint,
    own: &mut Part<'_>,
    k: usize,
    leaf_lo: usize,
) {
    let frame = Mat3A::from_quat(parent.orient);
    let base = Vec3A::from(parent.base) + frame.y_axis * parent.length;
    let l = t.length[i];
    let q = renormalize(parent.orient * bend.rotation);
    // The mapping's axis and its derivatives (`mapping::BendParts`) in the parent's axes
    // X, Y, Z: u = xS·X + cos w·Y + zS·Z, ∂u/∂x = S·X + x·V and ∂u/∂z = S·Z + z·V with
    // V = xG·X - S·Y + zG·Z; the direction vectors are those derivatives times the length.
    let BendParts { x, z, s, cos_w, g, .. } = bend;
    let (ax, ay, az) = (frame.x_axis, frame.y_axis, frame.z_axis);
    let axis = ax * (x * s) + ay * cos_w + az * (z * s);
    let v = ax * (x * g) - ay * s + az * (z * g);
    let sl = s * l;
    own.base[k] = base.into();
    own.orient[k] = q;
    own.dir[0][k] = (ax * sl + v * (x * l)).into();
    own.dir[1][k] = (az * sl + v * (z * l)).into();
    let step = axis * (l * (1.0 / 65535.0));
    let leaves = t.leaves_of(i);
    let out = &mut own.leaf_pos[leaves.start - leaf_lo..leaves.end - leaf_lo];
    for (p, &along) in out.iter_mut().zip(&t.leaf_along[leaves]) {
        *p = (base + step * along as f32).into();
    }
}

/// One Newton step towards unit length: the product of two unit quaternions is unit up to
/// rounding, and this keeps rounding from growing with depth without a square root.
#[inline(always)]
fn renormalize(q: Quat) -> Quat {
    q * (1.5 - 0.5 * q.length_squared())
}

/// Kinematics over the local segments `lo..hi`, root outward, with Weber's spatial collision
/// response folded in. `own` holds exactly those segments (and their leaves); parents below
/// `lo` are read from `top`, which holds `0..lo`. `theta` is the whole tree's.
///
/// Contacts (Weber, "The spatial model"): for a penetrating segment the desired correction,
/// scaled from full at the tip to nothing at the base and by a tweak factor, is approximated
/// by the two correction direction vectors with four alternating projections (Figure 4) and
/// added to the angles at once through y: the segment is re-posed with Θ + y and the next
/// solve sees y in Eq. 1. Weber re-poses the corrected segment's dirty subtree; here every
/// descendant is posed after its ancestors' corrections because contacts run inside this
/// root-outward pass, which is that re-pose without posing anything twice. Velocity driving
/// back into the contact is removed. Returns the number of corrections.
pub(crate) fn kinematics(
    t: &TreeStatic<'_>,
    theta: [&[f32]; 2],
    lo: usize,
    hi: usize,
    top: Option<Done<'_>>,
    own: &mut Part<'_>,
    contacts: &Contacts<'_>,
) -> u32 {
    let leaf_lo = (t.leaf_start[lo] - t.leaf_offset) as usize;
    if contacts.colliders.is_empty() {
        pose_batched(t, theta, lo, hi, top, own, leaf_lo);
        return 0;
    }
    let mut corrections = 0;
    for i in lo..hi {
        let parent = joint(t, theta, lo, top.as_ref(), own, i);
        let k = i - lo;
        let [x, z] = relative_angles(theta, lo, own, i, &parent);
        pose_one(t, i, mapping::bend_parts(x, z), parent, own, k, leaf_lo);
        let (l, r0, r1) = (t.length[i], t.radius_base[i], t.radius_tip[i]);
        for _ in 0..contacts.params.passes {
            let base = own.base[k];
            let mut deepest: Option<Contact> = None;
            for c in &contacts.colliders {
                // Cheap rejection from the base alone before building the capsule.
                let reach = c.radius + r0.max(r1) + l;
                if (c.center - base).length_squared() >= reach * reach {
                    continue;
                }
                let tip = base + own.orient[k] * Vec3::new(0.0, l, 0.0);
                if let Some(contact) = c.contact(base, tip, r0, r1) {
                    if deepest.is_none_or(|d| contact.depth() > d.depth()) {
                        deepest = Some(contact);
                    }
                }
            }
            let Some(contact) = deepest else { break };
            let target = contact.correction * (contact.along * contacts.params.stiffness);
            if target.length_squared() <= 1e-14 {
                break;
            }
            let (s1, s2) = split_correction(target, own.dir[0][k], own.dir[1][k]);
            own.y[0][k] += s1;
            own.y[1][k] += s2;
            if own.vel[0][k] * s1 < 0.0 {
                own.vel[0][k] = 0.0;
            }
            if own.vel[1][k] * s2 < 0.0 {
                own.vel[1][k] = 0.0;
            }
            let [x, z] = relative_angles(theta, lo, own, i, &parent);
            pose_one(t, i, mapping::bend_parts(x, z), parent, own, k, leaf_lo);
            corrections += 1;
        }
    }
    corrections
}

/// Θ + y of local segment `s`: from `top` below `lo`, else from `own` (slot `s - lo`).
#[inline(always)]
fn angle(theta: [&[f32]; 2], lo: usize, top: Option<&Done<'_>>, own: &Part<'_>, s: usize) -> [f32; 2] {
    let y = if s < lo {
        let top = top.expect("a parent outside the range needs the top block's pose");
        [top.y[0][s], top.y[1][s]]
    } else {
        [own.y[0][s - lo], own.y[1][s - lo]]
    };
    [theta[0][s] + y[0], theta[1][s] + y[1]]
}

/// Segment `i`'s parent as its pose reads it (the ground for the root). Parents below `lo`
/// are read from `top`, the others from `own` (slot `p - lo`), which must be posed already.
#[inline(always)]
fn joint(t: &TreeStatic<'_>, theta: [&[f32]; 2], lo: usize, top: Option<&Done<'_>>, own: &Part<'_>, i: usize) -> Joint {
    if i == 0 {
        return Joint {
            base: t.root,
            length: 0.0,
            orient: Quat::IDENTITY,
            angle: [0.0; 2],
        };
    }
    let p = t.parent_of(i);
    let (base, orient) = if p < lo {
        let top = top.expect("a parent outside the range needs the top block's pose");
        (top.base[p], top.orient[p])
    } else {
        (own.base[p - lo], own.orient[p - lo])
    };
    Joint {
        base,
        length: t.length[p],
        orient,
        angle: angle(theta, lo, top, own, p),
    }
}

/// Segment `i`'s angles (Θ + y) relative to its parent's.
#[inline(always)]
fn relative_angles(theta: [&[f32]; 2], lo: usize, own: &Part<'_>, i: usize, parent: &Joint) -> [f32; 2] {
    let a = angle(theta, lo, None, own, i);
    [a[0] - parent.angle[0], a[1] - parent.angle[1]]
}

/// Kinematics without contacts: the same poses, bit for bit, with the mapping of [`BATCH`]
/// segments evaluated together before they are posed in order. Without contacts no angle
/// changes during the pass, so every relative angle is known before any pose.
fn pose_batched(
    t: &TreeStatic<'_>,
    theta: [&[f32]; 2],
    lo: usize,
    hi: usize,
    top: Option<Done<'_>>,
    own: &mut Part<'_>,
    leaf_lo: usize,
) {
    let mut batch = BendBatch::default();
    let mut start = lo;
    while start < hi {
        let n = (hi - start).min(BATCH);
        let (mut x, mut z) = ([0f32; BATCH], [0f32; BATCH]);
        if top.is_none() {
            relative_batch(t, theta, lo, hi, own, start, n, [&mut x, &mut z]);
        } else {
            for l in 0..n {
                let i = start + l;
                let parent = if i == 0 {
                    [0.0; 2]
                } else {
                    angle(theta, lo, top.as_ref(), own, t.parent_of(i))
                };
                let a = angle(theta, lo, None, own, i);
                x[l] = a[0] - parent[0];
                z[l] = a[1] - parent[1];
            }
        }
        batch.eval(&x, &z, n);
        for l in 0..n {
            let i = start + l;
            let parent = joint(t, theta, lo, top.as_ref(), own, i);
            pose_one(t, i, batch.parts(l), parent, own, i - lo, leaf_lo);
        }
        start += n;
    }
}

/// The relative angles (Θ + y of `i` less its parent's, both planes) of the local segments
/// `start..start + n` into `out`, when every parent lies in `own` (no top block): the same
/// sums as [`angle`] in the same order, with the segments' own angles in lanes and only the
/// parents' gathered.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn relative_batch(
    t: &TreeStatic<'_>,
    theta: [&[f32]; 2],
    lo: usize,
    hi: usize,
    own: &Part<'_>,
    start: usize,
    n: usize,
    out: [&mut [f32; BATCH]; 2],
) {
    let m = hi - lo;
    let (s0, s1) = (start - lo, start - lo + n);
    let parent = &t.parent[start..start + n];
    for (k, out) in out.into_iter().enumerate() {
        let (th, y) = (&theta[k][lo..hi], &own.y[k][..m]);
        let out = &mut out[..n];
        for ((o, &a), &b) in out.iter_mut().zip(&th[s0..s1]).zip(&y[s0..s1]) {
            *o = a + b;
        }
        let mut up = [0f32; BATCH];
        for (l, (u, &p)) in up[..n].iter_mut().zip(parent).enumerate() {
            // The root (local 0, only ever the first lane) has the ground as parent: 0.
            if start + l != 0 {
                let p = (p - t.offset) as usize - lo;
                *u = th[p] + y[p];
            }
        }
        for (o, &u) in out.iter_mut().zip(&up[..n]) {
            *o -= u;
        }
    }
}

/// Populate's scratch for one segment (see [`populate`]).
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct SegLoad {
    /// The sum of the external forces on the segment's strict descendants \[N\].
    pub carried: Vec3A,
    /// Quadratic law: the velocity of the segment's tip \[m/s\].
    pub tip_v: Vec3A,
    /// Quadratic law: the tip's path length L, Σ (|D_x| + |D_z|) from the root \[m\].
    pub path: f32,
    /// Quadratic law: the damping's row sums carried up from the subtree.
    pub below: f32,
    /// Quadratic law: |D_x| and |D_z| of the segment \[m\].
    pub dir_len: [f32; 2],
    /// Quadratic law: the segment's own load, its weight and the drag on it and its leaves \[N\].
    pub force: Vec3A,
    /// Quadratic law: the segment's own term of the damping's row sums.
    pub own: f32,
}

/// Forms Eq. 1's right-hand side for both planes, tip to root:
///
/// ```text
/// b = h·(f0 + γ·∂f/∂Θ·(h·v0 + y)),   ∂f/∂Θ = -K
/// ```
///
/// γ = 1 is Weber's Eq. 1 (semi-implicit); γ = 1/2 is Newmark's average acceleration, whose
/// step averages the spring force over the step (see `IntegratorKind`).
///
/// The spring and damper of the joint at segment i's base act between i and its parent with
/// k_i, c_i and rest angle R_i (Weber's f_N); gravity and wind enter as generalized forces:
/// a force F on a point that moves by ∂x/∂Θ per radian contributes F·∂x/∂Θ. Segment i's own
/// load acts at its centre, which moves by D/2 (D its correction direction vector); in absolute
/// angles every descendant translates with i's tip, so their loads contribute (ΣF)·D. In the
/// planar case this is Weber's f_g = m·g·sin Θ and f_w = l·r·(d·w) times the lever arm, plus the
/// loads the branch carries. `centre_wind(i)` is the wind velocity at segment i's centre (see
/// [`segment_centres`]). With `leaf_wind` (the wind at each of the tree's leaves, in a varying
/// field), the leaves' share of the drag takes the mean wind at the segment's leaves (a leaf
/// feels the air where it is), the bark's the wind at the segment's centre.
///
/// The bark is a cylinder: its drag acts on the wind's component across its axis a (in the
/// current pose), w - (w·a)a, as in Weber's f = l·r·(d·w), where the lever direction d is
/// across the segment and l·r is the side the segment shows the flow; wind along a branch
/// meets only its end and pushes neither it nor its parents (see [`across_axis`]). The leaves'
/// share takes the whole wind vector: Weber scales the wind force by "the surface area facing
/// the wind source", and a leaf's facing area depends on its blade's orientation, not on the
/// segment's axis. The blades of a segment face every way around it (each hangs at its own
/// angle), so their summed frontal area, and with it the drag of the linear model, does not
/// depend on where the wind comes from relative to the segment.
///
/// Under [`DragLaw::Quadratic`] the drag acts on the air's velocity relative to the surface,
/// u = w - v (see [`quadratic_drag`]): a first pass, root outward, gives every segment's tip
/// velocity (in absolute angles turning segment j moves its tip by its correction direction
/// vector D_j per radian and carries everything outboard along, so v_tip(i) = Σ_{j on the path
/// to i} D_j·Θ'_j), kept in `load[i].tip_v`; `load[i].carried` is the load carried.
///
/// Stability of the relative-velocity drag: it damps the motion, ∂f/∂Θ' = -Jᵀ·B·J with B the
/// drag's ∂F/∂u (b·scale·(I + û·ûᵀ) ≤ 2·b·scale for the quadratic law) at each point. Explicit,
/// a light leafy twig is damped at rates beyond 2/h and the step overshoots and grows (the
/// articulated mass matrix is the rest pose's, so even a drag capped per segment at m/h can
/// outrun it once a chain bends). So Eq. 1 takes it implicitly on A's diagonal, as Baraff and
/// Witkin's step takes ∂f/∂v: A gains γh·D with D_ii the row sum of |Jᵀ·B·J| bounded by
/// Σ_p 2·b_p·|J_p,i|·Σ_j |J_p,j| (Gershgorin: D - Jᵀ·B·J is then positive semi-definite, and
/// (M + γh·D)⁻¹·γh·Jᵀ·B·J has no eigenvalue beyond 1, whatever the pose). |J_p,j| is |D_j| for
/// a point beyond segment j, |D_j|/2 at j's centre, so Σ_j |J_p,j| is the path length L_p of
/// `load[i].path` and the subtree sums ride along with the loads (`load[i].below`). The force
/// itself stays the explicit f(v0); the diagonal only slows the drag's own mode, which the
/// drag overdamps on twigs anyway (they follow the air). It goes in `stiff` as D/(γh), beside
/// Newmark's load stiffness, and `solve_plane` refactors A with it each step.
#[allow(clippy::too_many_arguments)]
pub(crate) fn populate<W: Fn(usize) -> Vec3>(
    t: &TreeStatic<'_>,
    planes: [&mut PlaneMut<'_>; 2],
    pose: PoseRef<'_>,
    load: &mut [SegLoad],
    h: f32,
    gamma: f32,
    gravity: f32,
    leaf_wind: Option<&[Vec3]>,
    centre_wind: W,
) {
    let n = t.len();
    let [px, pz] = planes;
    let load = &mut load[..n];
    let dir = [&pose.dir[0][..n], &pose.dir[1][..n]];
    let orient = &pose.orient[..n];
    let quadratic = t.material.drag_law == DragLaw::Quadratic;
    if quadratic {
        quadratic_loads(t, pose, [&*px.vel, &*pz.vel], gravity, load, leaf_wind, &centre_wind);
    } else {
        for l in load.iter_mut() {
            l.carried = Vec3A::ZERO;
        }
    }
    // Every per-segment slice cut to n once, so the loop below checks only parent indices.
    let (mass, length, stiffness, damping) = (&t.mass[..n], &t.length[..n], &t.stiffness[..n], &t.damping[..n]);
    let rest = [&t.rest[0][..n], &t.rest[1][..n]];
    let theta = [&px.theta[..n], &pz.theta[..n]];
    let vel = [&px.vel[..n], &pz.vel[..n]];
    let y = [&px.y[..n], &pz.y[..n]];
    let [rhs_x, rhs_z] = [&mut px.rhs[..n], &mut pz.rhs[..n]];
    let mut rhs = [rhs_x, rhs_z];
    let stiff = [&mut px.stiff[..n], &mut pz.stiff[..n]];
    for r in rhs.iter_mut() {
        r.fill(0.0);
    }
    let newmark = gamma < 1.0;
    // The aerodynamic damping goes into `stiff` as D/(γh).
    let per_gamma_h = 1.0 / (gamma * h);
    for i in (0..n).rev() {
        let parent = if i > 0 { Some(t.parent_of(i)) } else { None };
        let axis = Vec3A::from(segment_axis(orient[i]));
        let d = [Vec3A::from(dir[0][i]), Vec3A::from(dir[1][i])];
        // The quadratic law's damping row over γh (see above).
        let mut aero = None;
        let f = if quadratic {
            let SegLoad { below, own, force, .. } = load[i];
            if let Some(p) = parent {
                load[p].below += below + own;
            }
            aero = Some((0.5 * own + below) * per_gamma_h);
            force
        } else {
            let leaves = t.leaves_of(i);
            let leaf = t.leaf_drag[i];
            let bark = across_axis(centre_wind(i), axis.into()) * (t.drag[i] - leaf);
            let wind_force = Vec3A::from(match leaf_wind {
                Some(at_leaves) if !leaves.is_empty() => {
                    let mut sum = Vec3::ZERO;
                    for &w in &at_leaves[leaves.clone()] {
                        sum += w;
                    }
                    bark + sum * (leaf / leaves.len() as f32)
                }
                _ => bark + centre_wind(i) * leaf,
            });
            Vec3A::new(0.0, -mass[i] * gravity, 0.0) + wind_force + external(t, i)
        };
        let carried = load[i].carried;
        let lever = 0.5 * f + carried;
        if let Some(p) = parent {
            load[p].carried += f + carried;
        }
        // Newmark's load stiffness per unit |D|² (see `load_stiffness_rhs`).
        let tension = if newmark {
            load_tension(axis, lever, length[i])
        } else {
            0.0
        };
        let (k, c) = (stiffness[i], damping[i]);
        for plane in 0..2 {
            let tau = d[plane].dot(lever);
            let mut b = 0.0;
            if newmark {
                let s = tension * d[plane].length_squared();
                stiff[plane][i] = s;
                b = load_stiffness_rhs(s, h, gamma, vel[plane][i], y[plane][i]);
            }
            if let Some(row) = aero {
                let aero_d = load[i].dir_len[plane] * row;
                stiff[plane][i] = if newmark { stiff[plane][i] + aero_d } else { aero_d };
            }
            // The joint's spring and damper against the parent (the ground for the root, whose
            // parent terms are zeros).
            let (theta_p, vel_p, y_p) = match parent {
                Some(p) => (theta[plane][p], vel[plane][p], y[plane][p]),
                None => (0.0, 0.0, 0.0),
            };
            let dv = vel[plane][i] - vel_p;
            let g = k * (theta[plane][i] - theta_p - rest[plane][i] + gamma * (h * dv + y[plane][i] - y_p)) + c * dv;
            rhs[plane][i] = rhs[plane][i] - b + h * (tau - g);
            // A contact's pull (`touch`): a spring of PULL times the joint's stiffness from the
            // segment's angle to the angle turned by `turn`, taken implicitly as the load
            // stiffness is (b gains −h·k_c·(γ(h·v0 + y) − turn), A gains (γh)²·k_c through
            // `stiff`). Only where A is factored each step (`stiff` written above every step).
            if let Some(&[t0, t1]) = t.pull.get(i) {
                let turn = if plane == 0 { t0 } else { t1 };
                if turn != 0.0 {
                    let kc = touch::PULL * k;
                    rhs[plane][i] -= h * kc * (gamma * (h * vel[plane][i] + y[plane][i]) - turn);
                    stiff[plane][i] += kc;
                }
            }
            if let Some(p) = parent {
                rhs[plane][p] += h * g;
            }
        }
    }
}

/// The quadratic law's first pass, root outward: every segment's tip velocity
/// v_tip(i) = v_tip(parent) + D_x·Θ'_x + D_z·Θ'_z, its tip's path length L and its |D| per
/// plane, then its own load (its weight and [`quadratic_drag`], which needs its parent's and
/// its own tip velocity) and its own term of the damping's row sums (see [`populate`]): the
/// bark at the centre, the leaves (their force at the centre, their velocity up to the tip) at
/// the tip's path length. The carried load and the subtree sums are zeroed for the second pass,
/// which only sums these. Apart from the tip velocities no segment's load depends on another's,
/// so the loop's iterations overlap.
#[inline(always)]
fn quadratic_loads<W: Fn(usize) -> Vec3>(
    t: &TreeStatic<'_>,
    pose: PoseRef<'_>,
    vel: [&[f32]; 2],
    gravity: f32,
    load: &mut [SegLoad],
    leaf_wind: Option<&[Vec3]>,
    centre_wind: &W,
) {
    let n = load.len();
    let (orient, mass) = (&pose.orient[..n], &t.mass[..n]);
    let (dir, vel) = ([&pose.dir[0][..n], &pose.dir[1][..n]], [&vel[0][..n], &vel[1][..n]]);
    for i in 0..n {
        // The tip's velocity v_tip(i) = v_tip(parent) + D_x·Θ'_x + D_z·Θ'_z and path length.
        let (d0, d1) = (dir[0][i], dir[1][i]);
        let (base, path) = if i == 0 {
            (Vec3A::ZERO, 0.0)
        } else {
            let p = &load[t.parent_of(i)];
            (p.tip_v, p.path)
        };
        let len = [d0.length(), d1.length()];
        let l = &mut load[i];
        l.carried = Vec3A::ZERO;
        l.tip_v = base + Vec3A::from(d0) * vel[0][i] + Vec3A::from(d1) * vel[1][i];
        l.path = path + len[0] + len[1];
        l.below = 0.0;
        l.dir_len = len;
        let axis = Vec3A::from(segment_axis(orient[i]));
        let (f, bark_b, leaves_b) = quadratic_drag(t, i, axis, load, leaf_wind, centre_wind);
        let l = &mut load[i];
        let path = l.path;
        l.own = 2.0 * (bark_b * (path - 0.5 * (l.dir_len[0] + l.dir_len[1])) + leaves_b * path);
        l.force = Vec3A::new(0.0, -mass[i] * gravity, 0.0) + f + external(t, i);
    }
}

/// Segment i's external force this step (zero without any): it enters Eq. 1's right-hand side
/// as the weight and the wind do, a force at the segment's centre whose generalized forces
/// are those of every joint between it and the root.
#[inline(always)]
fn external(t: &TreeStatic<'_>, i: usize) -> Vec3A {
    t.external.get(i).map_or(Vec3A::ZERO, |&f| Vec3A::from(f))
}

/// Segment i's wind force under [`DragLaw::Quadratic`]: ½·ρ_air·C_d·A·|u|·u on the velocity of
/// the air relative to the surface, as the linear coefficient times
/// [`Material::drag_scale`](crate::Material::drag_scale)(|u|) times u. The bark takes u at the
/// segment's centre, across its axis `axis` (a cylinder's drag follows the normal component of
/// the relative flow, |u_n|·u_n); each leaf takes the whole u at its own attachment point (the
/// segment's base velocity plus `along` of the segment's own swing). `load[j].tip_v` holds the
/// tips' velocities (see [`populate`]). Returns the force and the bark's and the leaves'
/// coefficient·scale (their damping, for the implicit diagonal).
#[inline(always)]
fn quadratic_drag<W: Fn(usize) -> Vec3>(
    t: &TreeStatic<'_>,
    i: usize,
    axis: Vec3A,
    load: &[SegLoad],
    leaf_wind: Option<&[Vec3]>,
    centre_wind: &W,
) -> (Vec3A, f32, f32) {
    let base_v = if i == 0 {
        Vec3A::ZERO
    } else {
        load[t.parent_of(i)].tip_v
    };
    let swing = load[i].tip_v - base_v;
    let leaves = t.leaves_of(i);
    let leaf = t.leaf_drag[i];
    let centre3 = centre_wind(i);
    let centre = Vec3A::from(centre3);
    // Across the axis, as `across_axis` (the same operations in SIMD lanes).
    let w = centre - (base_v + 0.5 * swing);
    let u = w - axis * w.dot(axis);
    let bark_b = (t.drag[i] - leaf) * quadratic_drag_scale(u.length(), false);
    let bark = u * bark_b;
    let (mut leaves_f, mut leaves_b) = (Vec3A::ZERO, 0.0);
    if !leaves.is_empty() && leaf > 0.0 {
        let per_leaf = leaf / leaves.len() as f32;
        let along = &t.leaf_along[leaves.clone()];
        let (f, sum) = match leaf_wind {
            Some(at_leaves) => {
                let at_leaves = &at_leaves[leaves];
                leaf_drag(|k| at_leaves[k], along, base_v, swing)
            }
            None => leaf_drag(|_| centre3, along, base_v, swing),
        };
        (leaves_f, leaves_b) = (f * per_leaf, sum * per_leaf);
    } else if leaf > 0.0 {
        // Leaf drag without leaves (a forest built from bare arrays): on the centre.
        let u = centre - (base_v + 0.5 * swing);
        leaves_b = leaf * leaf_drag_scale(u.length());
        leaves_f = u * leaves_b;
    }
    (bark + leaves_f, bark_b, leaves_b)
}

/// Leaves the leaf loop takes at once (one SSE register of f32).
const LEAF_LANES: usize = 4;

/// The drag of one segment's `along.len()` (≥ 1) leaves under [`DragLaw::Quadratic`], each in
/// the wind `wind(k)` at its attachment point `along[k]` (1/65535 of the segment's length):
/// Σ s·u and Σ s over the leaves, s = [`leaf_drag_scale`] of |u|, u = w - (base_v + swing·along)
/// (the caller multiplies both by the coefficient per leaf). The leaves go [`LEAF_LANES`] at a
/// time, each lane summing its own leaves, the lanes summed at the end: the same sums as one
/// leaf after another up to the order of the additions (see `tests::leaf_drag_lanes_match_scalar`).
/// The last group repeats the last leaf in its spare lanes and counts them with s = 0.
#[inline(always)]
fn leaf_drag<F: Fn(usize) -> Vec3>(wind: F, along: &[u16], base_v: Vec3A, swing: Vec3A) -> (Vec3A, f32) {
    let n = along.len();
    let last = n - 1;
    let (bx, by, bz) = (Vec4::splat(base_v.x), Vec4::splat(base_v.y), Vec4::splat(base_v.z));
    let (sx, sy, sz) = (Vec4::splat(swing.x), Vec4::splat(swing.y), Vec4::splat(swing.z));
    let (mut fx, mut fy, mut fz, mut sum) = (Vec4::ZERO, Vec4::ZERO, Vec4::ZERO, Vec4::ZERO);
    let lane = Vec4::new(0.0, 1.0, 2.0, 3.0);
    let mut k = 0;
    while k < n {
        let (k1, k2, k3) = ((k + 1).min(last), (k + 2).min(last), (k + 3).min(last));
        let (w0, w1, w2, w3) = (wind(k), wind(k1), wind(k2), wind(k3));
        let a = Vec4::new(along[k] as f32, along[k1] as f32, along[k2] as f32, along[k3] as f32) * (1.0 / 65535.0);
        let ux = Vec4::new(w0.x, w1.x, w2.x, w3.x) - (bx + sx * a);
        let uy = Vec4::new(w0.y, w1.y, w2.y, w3.y) - (by + sy * a);
        let uz = Vec4::new(w0.z, w1.z, w2.z, w3.z) - (bz + sz * a);
        let speed = (ux * ux + uy * uy + uz * uz).sqrt();
        let live = lane.cmplt(Vec4::splat((n - k) as u32 as f32));
        let scale = Vec4::select(live, leaf_drag_scale4(speed), Vec4::ZERO);
        fx += ux * scale;
        fy += uy * scale;
        fz += uz * scale;
        sum += scale;
        k += LEAF_LANES;
    }
    (
        Vec3A::new(fx.element_sum(), fy.element_sum(), fz.element_sum()),
        sum.element_sum(),
    )
}

/// [`leaf_drag_scale`] of four speeds.
#[inline(always)]
fn leaf_drag_scale4(speed: Vec4) -> Vec4 {
    if 1.0 + LEAF_VOGEL_EXPONENT == 0.0 {
        (speed * (1.0 / DRAG_MATCH_SPEED)).min(Vec4::splat(LEAF_RECONFIGURATION_SPEED * (1.0 / DRAG_MATCH_SPEED)))
    } else {
        Vec4::from_array(speed.to_array().map(|s| quadratic_drag_scale(s, true)))
    }
}

/// [`quadratic_drag_scale`]`(speed, true)`, the leaves' scale, bit for bit. With the Vogel
/// exponent β = -1 the scale is constant above the reconfiguration speed U_r, so it is
/// min(|u|/U, U_r/U) without a branch: rounding is monotonic, so |u| ≤ U_r gives
/// |u|·(1/U) ≤ U_r·(1/U) and |u| > U_r the reverse (and `min` keeps U_r/U for a NaN, as the
/// law's comparison does).
#[inline(always)]
fn leaf_drag_scale(speed: f32) -> f32 {
    if 1.0 + LEAF_VOGEL_EXPONENT == 0.0 {
        (speed * (1.0 / DRAG_MATCH_SPEED)).min(LEAF_RECONFIGURATION_SPEED * (1.0 / DRAG_MATCH_SPEED))
    } else {
        quadratic_drag_scale(speed, true)
    }
}

/// The tension of segment i's loads per unit length, max(a·lever, 0)/l, of which Newmark's
/// load stiffness S_i takes |D|² per plane (see [`load_stiffness_rhs`]).
#[inline(always)]
fn load_tension(axis: Vec3A, lever: Vec3A, length: f32) -> f32 {
    axis.dot(lever).max(0.0) / length
}

/// Newmark's load stiffness of segment i's own angle, S_i = (|u|²/l)·(a·lever) when the
/// loads pull the segment outward along its axis a (tension), else 0, for one plane (`s`, from
/// [`load_tension`]·|D|²), and its term in Eq. 1's right-hand side, returned as what b loses.
///
/// The generalized force of the loads is u·lever (see [`populate`]); turning the segment by
/// its own angle turns u towards -a at the rate |u|²/l (the tip's second derivative of a
/// rod swinging at |u|/l rad per radian), so ∂(u·lever)/∂Θ = -S. The loads' Jacobian is the
/// restoring -S in tension and a softening term in compression. Eq. 1 with γ = 1 leaves the
/// whole term explicit and its numerical damping keeps that stable; the energy-keeping
/// Newmark step does not damp it, and where the load stiffness of a thin branch carrying a
/// leafy subtree rivals its spring at ω·h near 1 (strong wind), the explicit term grows the
/// motion every step. So Newmark takes the restoring part implicitly, as part of ∂f/∂Θ:
/// b gains -h·γ·S·(h·v0 + y) and A gains (γh)²·S (`solve_plane` refactors A with it each
/// step). The softening part stays explicit, which keeps A positive definite.
#[inline(always)]
fn load_stiffness_rhs(s: f32, h: f32, gamma: f32, vel: f32, y: f32) -> f32 {
    h * gamma * s * (h * vel + y)
}

/// The part of the wind `w` across a segment of unit axis `a`: w - (w·a)a. A cylinder's
/// pressure drag comes from the flow across it; the flow along it only rubs its bark, a skin
/// friction about a hundredth of the drag across (friction coefficient of the order of 0.005
/// on the wetted area π·d·l, against C_d ≈ 1.2 on the frontal area d·l), neglected as Weber
/// neglects it. Its size is |w|·sin φ, φ the angle between the wind and the axis.
#[inline(always)]
pub(crate) fn across_axis(w: Vec3, a: Vec3) -> Vec3 {
    w - a * w.dot(a)
}

/// The centre of each of the tree's segments, where its bark's drag takes the wind: the base
/// plus half the length along the axis (q·(0, l/2, 0) = (l/2)·q·(0, 1, 0), see [`segment_axis`]).
pub(crate) fn segment_centres(t: &TreeStatic<'_>, pose: PoseRef<'_>, out: &mut [Vec3]) {
    let n = t.len();
    let (base, orient, length) = (&pose.base[..n], &pose.orient[..n], &t.length[..n]);
    for (i, c) in out[..n].iter_mut().enumerate() {
        *c = base[i] + segment_axis(orient[i]) * (0.5 * length[i]);
    }
}

/// Diagonal of A = M + hC + h²K for one tree: A_ii = I_i + e_i + Σ_children e_j.
pub(crate) fn diagonal(t: &TreeStatic<'_>, h: f32, inertia: impl Fn(usize) -> f64, out: &mut [f64]) {
    for i in 0..t.len() {
        out[i] = inertia(i) + t.coupling(i, h) as f64;
    }
    for i in 1..t.len() {
        out[t.parent_of(i)] += t.coupling(i, h) as f64;
    }
}

/// Factors A for the direct solver. A's graph is the tree, so eliminating rows tip to root
/// (descending index, children before parents) creates no fill-in: folding child j into its
/// parent p only changes p's pivot, d_p -= e_j²/d_j. `diag` holds A's diagonal and becomes
/// 1/pivot per segment, in place.
pub(crate) fn factor(t: &TreeStatic<'_>, h: f32, diag: &mut [f64]) {
    for i in (0..t.len()).rev() {
        let d = diag[i];
        diag[i] = 1.0 / d;
        if i > 0 {
            let e = t.coupling(i, h) as f64;
            diag[t.parent_of(i)] -= e * e / d;
        }
    }
}

/// Solves A·Δv = b in place with the factorisation (`inv_pivot`, 1/pivot from [`factor`]): one
/// descending pass folds each row into its parent's right-hand side, one ascending pass
/// substitutes back. Arithmetic in f64.
pub(crate) fn solve_direct(t: &TreeStatic<'_>, inv_pivot: &[f64], rhs: &mut [f32], h: f32) {
    let n = t.len();
    for i in (1..n).rev() {
        let p = t.parent_of(i);
        let e = t.coupling(i, h) as f64;
        rhs[p] = (rhs[p] as f64 + e * inv_pivot[i] * rhs[i] as f64) as f32;
    }
    rhs[0] = (rhs[0] as f64 * inv_pivot[0]) as f32;
    for i in 1..n {
        let p = t.parent_of(i);
        let e = t.coupling(i, h) as f64;
        rhs[i] = ((rhs[i] as f64 + e * rhs[p] as f64) * inv_pivot[i]) as f32;
    }
}

/// Scratch vectors of the conjugate gradient for one tree.
pub(crate) struct CgWork<'a> {
    pub x: &'a mut [f64],
    pub r: &'a mut [f64],
    pub p: &'a mut [f64],
    pub ap: &'a mut [f64],
    /// Scratch of the articulated mass product (empty with the diagonal inertia).
    pub tmp: &'a mut [DVec3],
    pub mp: &'a mut [f64],
}

/// Weber's conjugate gradient with the preconditioner C = sqrt(A_D): it solves
/// (C⁻¹AC⁻¹)(Cx) = C⁻¹b, whose matrix has a unit diagonal, then recovers x = C⁻¹(Cx).
/// `scale` holds C⁻¹ = 1/sqrt(A_ii) of the constant part of A (a preconditioner need not be
/// exact). With `mass` (the articulated inertia) A = M + E and M·v is the O(n) product of
/// [`articulated::apply_mass`]; without, M is the diagonal inertia and A is E plus the
/// diagonal. `extra = (s, c)` adds c·diag(s) to A (empty: nothing). Returns the number of
/// iterations.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_cg(
    t: &TreeStatic<'_>,
    rhs: &mut [f32],
    h: f32,
    scale: &[f64],
    tolerance: f64,
    max_iterations: u32,
    mass: Option<MassView<'_>>,
    extra: (&[f32], f64),
    w: CgWork<'_>,
) -> u32 {
    let n = t.len();
    // Off-diagonal of the scaled matrix for the edge (i, parent): -e_i / sqrt(A_ii A_pp).
    let off = |i: usize| -(t.coupling(i, h) as f64) * scale[i] * scale[t.parent_of(i)];
    let (tmp, mp) = (w.tmp, w.mp);
    let mut apply = |v: &[f64], out: &mut [f64]| {
        match mass {
            None => out.copy_from_slice(v),
            Some(m) => {
                // C⁻¹(M + E)C⁻¹v: the mass part through the O(n) product, E's diagonal here
                // and its off-diagonal below.
                for i in 0..n {
                    mp[i] = v[i] * scale[i];
                }
                articulated::apply_mass(t, m, mp, out, tmp);
                for i in 0..n {
                    out[i] *= scale[i];
                    out[i] += t.coupling(i, h) as f64 * scale[i] * scale[i] * v[i];
                }
                for i in 1..n {
                    let p = t.parent_of(i);
                    out[p] += t.coupling(i, h) as f64 * scale[p] * scale[p] * v[p];
                }
            }
        }
        for i in 1..n {
            let p = t.parent_of(i);
            let a = off(i);
            out[i] += a * v[p];
            out[p] += a * v[i];
        }
        for (i, s) in extra.0.iter().enumerate() {
            out[i] += extra.1 * *s as f64 * scale[i] * scale[i] * v[i];
        }
    };
    let mut rr = 0.0;
    for i in 0..n {
        w.x[i] = 0.0;
        w.r[i] = rhs[i] as f64 * scale[i];
        w.p[i] = w.r[i];
        rr += w.r[i] * w.r[i];
    }
    let limit = tolerance * tolerance * rr;
    let mut iterations = 0;
    while rr > limit && rr > 0.0 && iterations < max_iterations {
        apply(w.p, w.ap);
        let pap: f64 = w.p.iter().zip(w.ap.iter()).map(|(a, b)| a * b).sum();
        if pap <= 0.0 {
            break;
        }
        let alpha = rr / pap;
        let mut rr_new = 0.0;
        for i in 0..n {
            w.x[i] += alpha * w.p[i];
            w.r[i] -= alpha * w.ap[i];
            rr_new += w.r[i] * w.r[i];
        }
        let beta = rr_new / rr;
        for i in 0..n {
            w.p[i] = w.r[i] + beta * w.p[i];
        }
        rr = rr_new;
        iterations += 1;
    }
    for i in 0..n {
        rhs[i] = (w.x[i] * scale[i]) as f32;
    }
    iterations
}

/// Update after the solve: v += Δv, Θ += y + h·(v0 + γ·Δv) (γ = 1: Weber's Δx = h(v0 + Δv);
/// γ = 1/2: Newmark's average velocity), plus the imposed displacement, then y = 0. Returns
/// false if any value stopped being finite.
pub(crate) fn integrate(plane: &mut PlaneMut<'_>, h: f32, gamma: f32) -> bool {
    let mut finite = true;
    for i in 0..plane.theta.len() {
        let dv = plane.rhs[i];
        let v = plane.vel[i] + dv;
        let th = plane.theta[i] + plane.y[i] + h * (plane.vel[i] + gamma * dv);
        plane.vel[i] = v;
        plane.theta[i] = th;
        plane.y[i] = 0.0;
        finite &= v.is_finite() & th.is_finite();
    }
    finite
}

/// Tuning of the collision response.
#[derive(Clone, Copy)]
pub(crate) struct ContactParams {
    pub passes: u32,
    pub stiffness: f32,
}

/// Weber's Figure 4: scales of the two direction vectors whose sum best approximates `target`,
/// by alternately projecting what the other vector leaves over onto each (four iterations).
#[inline]
pub(crate) fn split_correction(target: Vec3, d1: Vec3, d2: Vec3) -> (f32, f32) {
    let (n1, n2) = (d1.length_squared(), d2.length_squared());
    if n1 <= 0.0 || n2 <= 0.0 {
        return (0.0, 0.0);
    }
    let (mut s1, mut s2) = (0.0, 0.0);
    for _ in 0..4 {
        s1 = (target - d2 * s2).dot(d1) / n1;
        s2 = (target - d1 * s1).dot(d2) / n2;
    }
    (s1, s2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn axis_is_the_rotated_y_axis() {
        for q in [
            Quat::IDENTITY,
            Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.2, 2.0),
            Quat::from_axis_angle(Vec3::new(1.0, 0.0, 1.0).normalize(), 2.5),
        ] {
            assert!((segment_axis(q) - q * Vec3::Y).length() < 1e-6, "{q:?}");
        }
        // Across the axis: perpendicular to it, of size |w|·sin φ.
        let a = Vec3::new(0.6, 0.8, 0.0);
        let w = Vec3::new(10.0, 0.0, 0.0);
        let c = across_axis(w, a);
        assert!(c.dot(a).abs() < 1e-5);
        assert!((c.length() - 10.0 * 0.8).abs() < 1e-5, "{c}");
    }

    /// A random vector with components uniform in [-scale, scale].
    fn random_vec(rng: &mut Rng, scale: f32) -> Vec3 {
        Vec3::new(rng.sym(scale), rng.sym(scale), rng.sym(scale))
    }

    #[test]
    fn leaf_scale_without_branch_is_the_drag_law() {
        // Bit for bit on both sides of the reconfiguration speed, at it, and off the ends.
        let mut rng = Rng::new(0x9e3779b97f4a7c15);
        let mut speeds = vec![0.0, 1e-30, 9.999999, 10.0, 10.000001, 1e30, f32::INFINITY, f32::NAN];
        speeds.extend((0..10_000).map(|_| 40.0 * rng.unit()));
        for s in speeds {
            let want = quadratic_drag_scale(s, true);
            assert_eq!(leaf_drag_scale(s).to_bits(), want.to_bits(), "speed {s}");
            let four = leaf_drag_scale4(Vec4::splat(s));
            assert_eq!(four.x.to_bits(), want.to_bits(), "speed {s}");
        }
    }

    #[test]
    fn leaf_drag_lanes_match_scalar() {
        // The four-lane leaf loop against the drag law written leaf by leaf, on random winds
        // (relative speeds from 0 to about 35 m/s, across the reconfiguration speed), base
        // velocities, swings and attachment points, for every count up to three groups.
        let mut rng = Rng::new(0x2545f4914f6cdd1d);
        for trial in 0..2_000 {
            let n = 1 + trial % 13;
            let wind: Vec<Vec3> = (0..n).map(|_| random_vec(&mut rng, 20.0)).collect();
            let along: Vec<u16> = (0..n).map(|_| (rng.unit() * 65535.0) as u16).collect();
            let (base_v, swing) = (random_vec(&mut rng, 3.0), random_vec(&mut rng, 5.0));
            let scalar = |wind_at: &dyn Fn(usize) -> Vec3| {
                let (mut f, mut sum) = (Vec3::ZERO, 0.0f32);
                for (k, &a) in along.iter().enumerate() {
                    let u = wind_at(k) - (base_v + swing * (a as f32 / 65535.0));
                    let b = quadratic_drag_scale(u.length(), true);
                    f += u * b;
                    sum += b;
                }
                (f, sum)
            };
            // A varying wind (one per leaf) and a uniform one.
            let (b3, s3) = (base_v.into(), swing.into());
            let (want, got) = (scalar(&|k| wind[k]), leaf_drag(|k| wind[k], &along, b3, s3));
            let uniform = (scalar(&|_| wind[0]), leaf_drag(|_| wind[0], &along, b3, s3));
            for ((want_f, want_b), (f, b)) in [(want, got), uniform] {
                let tol = 1e-5 * want_b.max(1.0) * 40.0;
                assert!((Vec3::from(f) - want_f).length() <= tol, "n {n}: {f} against {want_f}");
                assert!(
                    (b - want_b).abs() <= 1e-5 * want_b.max(1.0),
                    "n {n}: {b} against {want_b}"
                );
            }
        }
    }

    #[test]
    fn correction_split_recovers_reachable_targets() {
        // Orthogonal directions: exact after one iteration.
        let (a, b) = split_correction(Vec3::new(2.0, 0.0, 3.0), Vec3::X, Vec3::Z);
        assert!((a - 2.0).abs() < 1e-6 && (b - 3.0).abs() < 1e-6);
        // Skewed directions (x axis and the line x = z, the paper's example): four iterations
        // get close to the exact combination.
        let d2 = Vec3::new(1.0, 0.0, 1.0).normalize();
        let target = Vec3::X * 0.5 + d2 * 0.8;
        let (a, b) = split_correction(target, Vec3::X, d2);
        let err = (Vec3::X * a + d2 * b - target).length();
        assert!(err < 0.1 * target.length(), "error {err}");
    }
}
