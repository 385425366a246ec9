//! The exact mass matrix of the articulated tree in each of Weber's planes, and the O(n)
//! solution of Eq. 1 with it.
//!
//! # The mass matrix
//!
//! Weber's state is, per plane, the absolute angle Θ_a of every segment a. The pose
//! (`kernels::kinematics`) composes the relative mapping of Eqs. 3 and 4 down the tree, and
//! its direction vectors are u_a = ∂tip_a/∂Θ_a (a 3D vector, `Directions[plane][a]`). In
//! absolute angles a descendant keeps its own angles when an ancestor turns, so it translates
//! rigidly with the ancestor's tip (the same assumption `kernels::populate` makes when it
//! passes the loads of a subtree to its ancestors as (ΣF)·u). A point at fraction s ∈ \[0, 1\]
//! along segment j therefore moves with
//!
//! ```text
//! ẋ = V_j + s·u_j·Θ̇_j,        V_j = Σ_{a ≺ j} u_a·Θ̇_a        (a ≺ j: a a strict ancestor of j)
//! ```
//!
//! V_j being the velocity of j's base. The segment is a rigid rod, its mass m_j (wood and the
//! leaves it carries, as in `SegmentData::mass`) spread evenly along it, as gravity in
//! `populate` (acting at the centre) and Weber's rod model assume: first moment ∫s dm = c·m_j
//! and second moment ∫s² dm = q·m_j with c = 1/2, q = 1/3. (Equivalently: the centre moves with
//! V_j + u_j·Θ̇_j/2 and the rod's own rotational inertia about its centre is m_j·|u_j|²/12.)
//! The kinetic energy of segment j is then
//!
//! ```text
//! T_j = ½·m_j·|V_j|² + c·m_j·(V_j·u_j)·Θ̇_j + ½·q·m_j·|u_j|²·Θ̇_j²,
//! ```
//!
//! and T = Σ_j T_j = ½·Θ̇ᵀ·M·Θ̇ with M = Jᵀ·m·J plus the rods' own inertia:
//!
//! ```text
//! M_aa = |u_a|²·Q_a,                 Q_a = q·m_a + M_out(a)
//! M_ab = (u_a·u_b)·W_b   for a ≺ b,  W_b = c·m_b + M_out(b)
//! M_ab = 0               when neither is an ancestor of the other,
//! ```
//!
//! M_out(a) being the mass strictly outboard of a. The diagonal is exactly the inertia of
//! Weber's diagonal model (`SegmentData::inertia`, m·l²/3 + M_out·l² when |u| = l), which
//! `InertiaKind::Diagonal` keeps; this matrix adds the coupling of every segment to all its
//! ancestors.
//!
//! **Planes.** The kinetic energy of both planes' 2n angles has the blocks M^xx, M^zz and the
//! cross block M^xz_ab = (u^x_a·u^z_b)·W_b. Weber's separation keeps the two diagonal blocks,
//! each the exact kinetic energy of motion in its own plane (built from that plane's u, the
//! plane's projection of the 3D motion onto its own degrees of freedom), and drops the cross
//! block, which vanishes where u^x ⟂ u^z ("at small angles, these vectors are nearly
//! orthogonal").
//!
//! **When M is evaluated.** M depends on the pose through u. It is evaluated once, at the
//! generated shape (the rest pose, `WeberModel::new`), and factored there (and again when the
//! time step, the solver or the integrator changes, from the same stored u; with Newmark's
//! integrator A also carries the step's load stiffness and is refactored every step, in the
//! same O(n), into preallocated scratch). Reasons: (1) Eq. 1
//! is Weber's linearisation about the current state with constant ∂f/∂Θ = -K; the linearised
//! equations of motion about the rest shape have exactly M(rest) (the terms ∂M/∂Θ·Θ̇ are of
//! second order), so small oscillations, the natural frequencies this matrix exists to get
//! right, are exact; (2) a pose-dependent M without its velocity-product (Coriolis and
//! centrifugal) terms would be no more consistent for large motion, and it would cost a
//! refactorisation per plane per step; (3) with constant M and K the Newmark integrator keeps
//! the energy of the undamped linear system exactly, a property tests measure. The generalized
//! forces (`populate`) still use the current pose, as in Weber's model. M stays symmetric
//! positive definite in every pose, so stability does not depend on the pose.
//!
//! # The O(n) solve
//!
//! Eq. 1 reads A·x = b with A = M + E, x = Δv, where E = γh·C + γ²h²·K has the tree's sparsity:
//! ½·xᵀE·x = Σ_j ½·e_j·(x_j - x_{p(j)})², e_j = γh·c_j + γ²h²·k_j (x_{p(root)} = 0, the ground).
//! x minimises Φ(x) = ½·xᵀA·x - bᵀx. Write the velocities V_j of Jx as above. Everything in Φ
//! that involves the subtree of j depends on the outside only through V_j (the base "velocity")
//! and x_{p(j)} (through the spring e_j), so minimising over the subtree's variables leaves a
//! quadratic in y = (V_j, x_{p(j)}), a 4×4 block per segment (articulated-body style: the
//! subtree's apparent translational mass P_j, its coupling r_j to the parent's angle, s_j):
//!
//! ```text
//! Ψ_j(V, x_p) = ½·Vᵀ·P_j·V + Vᵀ·r_j·x_p + ½·s_j·x_p² - Vᵀ·f_j - g_j·x_p.
//! ```
//!
//! Tip to root, with P̄, r̄, s̄, f̄, ḡ the sums over j's children (all children share
//! V = V_j + u_j·x_j and x_p = x_j), j's own terms and its children give
//!
//! ```text
//! Φ_j = ½·D_j·x_j² + x_j·(β_jᵀ·V_j - e_j·x_p) - ρ_j·x_j + ½·Vᵀ(m_j·I + P̄)·V + ½·e_j·x_p² - f̄ᵀV
//! D_j = q·m_j·|u_j|² + e_j + u_jᵀ·P̄·u_j + 2·u_j·r̄ + s̄
//! β_j = c·m_j·u_j + P̄·u_j + r̄
//! ρ_j = b_j + u_j·f̄ + ḡ
//! ```
//!
//! whose minimum over x_j is x_j = (ρ_j - β_j·V_j + e_j·x_p) / D_j, leaving
//!
//! ```text
//! P_j = m_j·I + P̄ - β_j·β_jᵀ/D_j,   r_j = e_j·β_j/D_j,   s_j = e_j - e_j²/D_j,
//! f_j = f̄ - ρ_j·β_j/D_j,            g_j = ρ_j·e_j/D_j.
//! ```
//!
//! D_j is a pivot of the symmetric positive definite A (a Schur complement), so it is
//! positive. [`factor`] runs the (P, r, s) recursion and keeps (β_j/D_j, e_j/D_j, 1/D_j) per segment;
//! [`solve`] runs the (f, g, ρ) recursion tip to root and then substitutes root to tip:
//! x_0 = ρ_0/D_0 (V_0 = 0, the root's base is fixed), and for each child
//! V_j = V_p + u_p·x_p, x_j = (ρ_j - β_j·V_j + e_j·x_p)/D_j. Both passes touch each segment
//! once: O(n) per tree and plane, no allocation, arithmetic in f64.
//!
//! When A changes every step (Newmark's load stiffness, the quadratic drag's damping), it is
//! factored once and solved once, and both tip-to-root recursions walk the same segments in
//! the same order: [`factor_solve`] runs them in one pass (one plane), [`factor_solve_pair`]
//! runs both planes' in the two lanes of packed f64 operations. Either performs the same
//! operations in the same order as [`factor`] then [`solve`], so gives the same bits.
//!
//! The conjugate gradient (Weber's cross-check) uses the same matrix through [`apply_mass`],
//! M·v in O(n): with V_a = Σ_{b ≺ a} u_b·v_b (root to tip) and S_a = Σ_{b ≻ a} W_b·u_b·v_b
//! (tip to root), (M·v)_a = Q_a·|u_a|²·v_a + u_a·S_a + W_a·(u_a·V_a).

use glam::{DVec3, Vec3};

use super::kernels::TreeStatic;

/// What the solve keeps per segment from the factorisation: (β_j/D_j, e_j/D_j, 1/D_j).
pub(crate) type Pivot = [f64; 5];

/// First moment of a segment's mass along it, as a fraction of m·length (uniform rod).
pub(crate) const FIRST: f64 = 0.5;
/// Second moment of a segment's mass along it, as a fraction of m·length² (uniform rod).
pub(crate) const SECOND: f64 = 1.0 / 3.0;

/// The mass data of one tree and plane that the articulated matrix needs.
#[derive(Clone, Copy)]
pub(crate) struct MassView<'a> {
    /// u_a = ∂tip_a/∂Θ_a at the rest pose, for the plane.
    pub u: &'a [Vec3],
    /// W_a = c·m_a + M_out(a) \[kg\].
    pub first: &'a [f64],
    /// Q_a = q·m_a + M_out(a) \[kg\].
    pub second: &'a [f64],
}

#[inline(always)]
fn d3(v: Vec3) -> DVec3 {
    DVec3::new(v.x as f64, v.y as f64, v.z as f64)
}

/// W and Q of every segment of a tree from the segment masses (tip to root sums of the mass
/// outboard of each segment).
pub(crate) fn moments(t: &TreeStatic<'_>, first: &mut [f64], second: &mut [f64]) {
    let n = t.len();
    // `second` holds M_out while accumulating.
    second[..n].fill(0.0);
    for j in (1..n).rev() {
        let p = t.parent_of(j);
        second[p] += second[j] + t.mass[j] as f64;
    }
    for j in 0..n {
        let (m, out) = (t.mass[j] as f64, second[j]);
        first[j] = FIRST * m + out;
        second[j] = SECOND * m + out;
    }
}

/// The children sums of one segment: (P̄, r̄, s̄) of the factorisation, P̄ symmetric, stored
/// xx, yy, zz, xy, xz, yz, and (f̄, ḡ) of the right-hand side (gathered by [`factor_solve`]
/// only; [`factor`] leaves them zero).
#[derive(Clone, Copy, Default)]
pub(crate) struct Block {
    p: [f64; 6],
    r: DVec3,
    s: f64,
    f: DVec3,
    g: f64,
}

impl Block {
    fn is_zero(&self) -> bool {
        self.p == [0.0; 6] && self.r == DVec3::ZERO && self.s == 0.0 && self.f == DVec3::ZERO && self.g == 0.0
    }
}

/// Factors A = M + E + c·diag(extra) for one tree and plane (E with couplings
/// `t.coupling(j, h)`; `extra = (s, c)` an optional diagonal, empty for none): stores
/// (β_j/D_j, e_j/D_j, 1/D_j) per segment in `fac`. `blocks` is scratch of the tree's length.
pub(crate) fn factor(
    t: &TreeStatic<'_>,
    m: MassView<'_>,
    h: f32,
    extra: (&[f32], f64),
    blocks: &mut [Block],
    fac: &mut [Pivot],
) {
    let n = t.len();
    blocks[..n].fill(Block::default());
    for j in (0..n).rev() {
        let u = d3(m.u[j]);
        let mass = t.mass[j] as f64;
        let e = t.coupling(j, h) as f64;
        let Block { p, r, s, .. } = blocks[j];
        let own = extra.0.get(j).map_or(0.0, |s| extra.1 * *s as f64);
        let (beta, inv) = pivot(u, mass, e, own, &p, r, s);
        fac[j] = [beta.x * inv, beta.y * inv, beta.z * inv, e * inv, inv];
        if j > 0 {
            fold(&mut blocks[t.parent_of(j)], mass, &p, beta, beta * inv, e, inv);
        }
    }
}

/// Segment j's pivot from its children's sums (P̄, r̄, s̄) and its own extra diagonal `own`:
/// returns (β_j, 1/D_j) with D_j = q·m_j·|u_j|² + e_j + own + u_jᵀ·P̄·u_j + 2·u_j·r̄ + s̄ and
/// β_j = c·m_j·u_j + P̄·u_j + r̄ (the module header). P̄ is symmetric, stored
/// (xx, yy, zz, xy, xz, yz).
#[inline(always)]
fn pivot(u: DVec3, mass: f64, e: f64, own: f64, pm: &[f64; 6], r: DVec3, s: f64) -> (DVec3, f64) {
    let pu = DVec3::new(
        pm[0] * u.x + pm[3] * u.y + pm[4] * u.z,
        pm[3] * u.x + pm[1] * u.y + pm[5] * u.z,
        pm[4] * u.x + pm[5] * u.y + pm[2] * u.z,
    );
    let d = SECOND * mass * u.length_squared() + e + own + u.dot(pu) + 2.0 * u.dot(r) + s;
    let beta = FIRST * mass * u + pu + r;
    (beta, 1.0 / d)
}

/// Folds segment j into its parent's sums `b`: P_j = m_j·I + P̄ - β_j·β_jᵀ/D_j,
/// r_j = e_j·β_j/D_j, s_j = e_j - e_j²/D_j (the module header), with `bd` = β_j/D_j.
#[inline(always)]
fn fold(b: &mut Block, mass: f64, pm: &[f64; 6], beta: DVec3, bd: DVec3, e: f64, inv: f64) {
    b.p[0] += mass + pm[0] - beta.x * bd.x;
    b.p[1] += mass + pm[1] - beta.y * bd.y;
    b.p[2] += mass + pm[2] - beta.z * bd.z;
    b.p[3] += pm[3] - beta.x * bd.y;
    b.p[4] += pm[4] - beta.x * bd.z;
    b.p[5] += pm[5] - beta.y * bd.z;
    b.r += e * bd;
    b.s += e - e * e * inv;
}

/// Solves A·x = b for one tree and plane with the factorisation, in place in `rhs` (b in, x
/// out). `acc` and `rho` are scratch of the tree's length. With b' = β/D and e' = e/D from
/// [`factor`], the passes read f_j = f̄ - ρ_j·b'_j, g_j = ρ_j·e'_j, and
/// x_j = ρ_j/D_j - b'_j·V_j + e'_j·x_p.
pub(crate) fn solve(
    t: &TreeStatic<'_>,
    u: &[Vec3],
    fac: &[Pivot],
    rhs: &mut [f32],
    acc: &mut [[f64; 4]],
    rho: &mut [f64],
) {
    let n = t.len();
    acc[..n].fill([0.0; 4]);
    for j in (1..n).rev() {
        forward(j, t.parent_of(j), u, fac, rhs, acc, rho);
    }
    root(u, fac, rhs, acc);
    for j in 1..n {
        back(j, t.parent_of(j), u, fac, rhs, acc, rho);
    }
}

/// [`solve`] for both planes in one pair of passes (the per-tree step, where one job solves
/// both): the same passes per plane, in the same order, so the same bits, with the tree
/// walked once.
pub(crate) fn solve_both(
    t: &TreeStatic<'_>,
    u: [&[Vec3]; 2],
    fac: [&[Pivot]; 2],
    rhs: [&mut [f32]; 2],
    acc: [&mut [[f64; 4]]; 2],
    rho: [&mut [f64]; 2],
) {
    let n = t.len();
    let [rx, rz] = rhs;
    let [ax, az] = acc;
    let [px, pz] = rho;
    ax[..n].fill([0.0; 4]);
    az[..n].fill([0.0; 4]);
    for j in (1..n).rev() {
        let p = t.parent_of(j);
        forward(j, p, u[0], fac[0], rx, ax, px);
        forward(j, p, u[1], fac[1], rz, az, pz);
    }
    root(u[0], fac[0], rx, ax);
    root(u[1], fac[1], rz, az);
    for j in 1..n {
        let p = t.parent_of(j);
        back(j, p, u[0], fac[0], rx, ax, px);
        back(j, p, u[1], fac[1], rz, az, pz);
    }
}

/// One plane's arrays for [`factor_solve`]: u and the extra
/// diagonal `extra` (read), b in `rhs` (x out), and scratch of the tree's length: `blocks`
/// (the children sums; all zero on entry, as allocated, and left all zero: each segment's sums
/// are taken as it is eliminated, which spares clearing them in a pass of their own), `out` ((β_j/D_j, e_j/D_j, ρ_j/D_j) per segment) and `acc` ((V_j + u_j·x_j,
/// x_j) per segment, the root-to-tip pass).
pub(crate) struct Elimination<'a> {
    pub u: &'a [Vec3],
    pub extra: &'a [f32],
    pub rhs: &'a mut [f32],
    pub blocks: &'a mut [Block],
    pub out: &'a mut [Pivot],
    pub acc: &'a mut [[f64; 4]],
}

/// [`factor`] then [`solve`] of A = M + E + c·diag(extra) for one tree and plane, for a matrix
/// factored once and solved once (Newmark or the quadratic drag law refactor A every step):
/// both recursions go tip to root over the same segments, so one pass gathers (P, r, s) and
/// (f, g) together and keeps (β_j/D_j, e_j/D_j, ρ_j/D_j), then the root-to-tip pass
/// substitutes. The same operations in the same order as [`factor`] then [`solve`], so the
/// same bits, with one traversal and one scratch array fewer.
pub(crate) fn factor_solve(t: &TreeStatic<'_>, h: f32, c: f64, mut pl: Elimination<'_>) {
    let n = t.len();
    debug_assert!(pl.blocks[..n].iter().all(Block::is_zero), "blocks must enter zero");
    for j in (0..n).rev() {
        let p = if j > 0 { t.parent_of(j) } else { 0 };
        eliminate(j, p, t.mass[j] as f64, t.coupling(j, h) as f64, c, &mut pl);
    }
    for j in 1..n {
        substitute(j, t.parent_of(j), &mut pl);
    }
}

/// Tip to root, segment j (parent p, ignored for the root): the pivot D_j, β_j and ρ_j from the
/// children sums, the parent gathers (P_j, r_j, s_j) and (f_j, g_j); the root's x_0 = ρ_0/D_0
/// starts the root-to-tip pass. The expressions are [`factor`]'s and [`forward`]'s.
#[inline(always)]
fn eliminate(j: usize, p: usize, mass: f64, e: f64, c: f64, pl: &mut Elimination<'_>) {
    let u = d3(pl.u[j]);
    // Taken, leaving zero: nothing reads segment j's sums after this, and the pass returns
    // `blocks` all zero, as the next pass needs it.
    let Block { p: pm, r, s, f, g } = std::mem::take(&mut pl.blocks[j]);
    let own = pl.extra.get(j).map_or(0.0, |s| c * *s as f64);
    let (beta, inv) = pivot(u, mass, e, own, &pm, r, s);
    let rho = pl.rhs[j] as f64 + u.x * f.x + u.y * f.y + u.z * f.z + g;
    let bd = beta * inv;
    let ed = e * inv;
    let x = rho * inv;
    pl.out[j] = [bd.x, bd.y, bd.z, ed, x];
    if j == 0 {
        pl.acc[0] = [u.x * x, u.y * x, u.z * x, x];
        pl.rhs[0] = x as f32;
        return;
    }
    let b = &mut pl.blocks[p];
    fold(b, mass, &pm, beta, bd, e, inv);
    b.f.x += f.x - rho * bd.x;
    b.f.y += f.y - rho * bd.y;
    b.f.z += f.z - rho * bd.z;
    b.g += rho * ed;
}

/// Root to tip, segment j (parent p): x_j = ρ_j/D_j - (β_j/D_j)·V_j + (e_j/D_j)·x_p, as [`back`].
#[inline(always)]
fn substitute(j: usize, p: usize, pl: &mut Elimination<'_>) {
    let [vx, vy, vz, xp] = pl.acc[p];
    let [bx, by, bz, e, rd] = pl.out[j];
    let x = rd - (bx * vx + by * vy + bz * vz) + e * xp;
    let uj = m3(pl.u[j]);
    pl.acc[j] = [vx + uj[0] * x, vy + uj[1] * x, vz + uj[2] * x, x];
    pl.rhs[j] = x as f32;
}

/// Two f64 lanes, one per plane (x, z). The planes' recursions are the same operations on
/// different numbers, so one packed operation carries both planes, each lane with exactly the
/// bits of the one-plane arithmetic (IEEE operations are lane by lane).
#[derive(Clone, Copy, Default, PartialEq, Debug)]
#[repr(C, align(16))]
pub(crate) struct F2(pub [f64; 2]);

impl F2 {
    #[inline(always)]
    fn splat(v: f64) -> F2 {
        F2([v, v])
    }
    #[inline(always)]
    fn of(u: [Vec3; 2]) -> [F2; 3] {
        [
            F2([u[0].x as f64, u[1].x as f64]),
            F2([u[0].y as f64, u[1].y as f64]),
            F2([u[0].z as f64, u[1].z as f64]),
        ]
    }
}

macro_rules! lanes {
    ($tr:ident, $f:ident, $op:tt) => {
        impl std::ops::$tr for F2 {
            type Output = F2;
            #[inline(always)]
            fn $f(self, o: F2) -> F2 {
                F2([self.0[0] $op o.0[0], self.0[1] $op o.0[1]])
            }
        }
    };
}
lanes!(Add, add, +);
lanes!(Sub, sub, -);
lanes!(Mul, mul, *);
lanes!(Div, div, /);

impl std::ops::AddAssign for F2 {
    #[inline(always)]
    fn add_assign(&mut self, o: F2) {
        *self = *self + o;
    }
}

/// One segment's scratch in [`factor_solve_pair`], both planes (lane k holding plane k). Tip
/// to root it first holds the children sums of [`Block`] (P̄ at [`P`], r̄ at [`R`], s̄ at [`S`],
/// f̄ at [`F`], ḡ at [`G`]); once the segment is eliminated nothing reads those, and the slot
/// holds (β_j/D_j, e_j/D_j, ρ_j/D_j) at [`OUT`] and, root to tip, (V_j + u_j·x_j, x_j) at
/// [`ACC`]. One slot of 14 lanes pairs per segment is all the scratch the passes stream.
pub(crate) type PairSlot = [F2; 14];
const P: usize = 0;
const R: usize = 6;
const S: usize = 9;
const F: usize = 10;
const G: usize = 13;
const OUT: usize = 0;
const ACC: usize = 5;

/// The scratch of [`factor_solve_pair`] for trees of up to its length. The per-tree step keeps
/// a few and reuses them tree after tree rather than one per segment of the forest: the passes
/// are bound by the latency of their scratch's memory, and a scratch used by the tree before
/// is still in the caches, where the forest's (9 MB for the default forest) is not.
pub(crate) struct PairScratch {
    pub slots: Vec<PairSlot>,
    /// All false between passes.
    pub held: Vec<bool>,
}

impl PairScratch {
    pub fn new(n: usize) -> PairScratch {
        PairScratch {
            slots: vec![[F2::default(); 14]; n],
            held: vec![false; n],
        }
    }
    /// Grows to `n` segments if shorter (only when the forest has grown since it was made).
    pub fn fit(&mut self, n: usize) {
        if self.slots.len() < n {
            *self = PairScratch::new(n);
        }
    }
    /// Heap bytes.
    pub fn bytes(&self) -> usize {
        self.slots.capacity() * size_of::<PairSlot>() + self.held.capacity()
    }
}

/// Both planes' arrays for [`factor_solve_pair`]: u, the extra diagonals and b (x out) per
/// plane, and the scratch of the tree's length: `slots` (any content on entry) and `held`
/// (whether slot j holds children sums of this pass: all false on entry, as allocated, and
/// left all false).
pub(crate) struct Pair<'a> {
    pub u: [&'a [Vec3]; 2],
    pub extra: [&'a [f32]; 2],
    pub rhs: [&'a mut [f32]; 2],
    pub slots: &'a mut [PairSlot],
    pub held: &'a mut [bool],
}

/// [`factor_solve`] for both planes at once, the planes in the two lanes of packed f64
/// operations ([`F2`]): the same operations per plane in the same order, so the same bits as
/// [`factor_solve`] per plane (and as [`factor`] then [`solve`]), with half the arithmetic
/// instructions, one walk of the tree and its data (parents, masses, couplings) read once.
///
/// Memory (the passes are bound by it in a forest, whose scratch leaves the caches between
/// steps): one [`PairSlot`] per segment; the sums of a segment's first child (in the pass's
/// order) are stored, not added to zeroed memory, and a segment without children reads none
/// (`held`), so the scratch is never cleared and no load waits on a line of it that this pass
/// has not written.
pub(crate) fn factor_solve_pair(t: &TreeStatic<'_>, h: f32, c: f64, pl: Pair<'_>) {
    let n = t.len();
    let Pair {
        u: [ux, uz],
        extra: [ex, ez],
        rhs: [rx, rz],
        slots,
        held,
    } = pl;
    let (ux, uz, rx, rz) = (&ux[..n], &uz[..n], &mut rx[..n], &mut rz[..n]);
    let (slots, held) = (&mut slots[..n], &mut held[..n]);
    debug_assert!(held.iter().all(|h| !h), "`held` must enter all false");
    let extra = |e: &[f32], j: usize| e.get(j).map_or(0.0, |s| c * *s as f64);
    for j in (0..n).rev() {
        let mass = t.mass[j] as f64;
        let e = t.coupling(j, h) as f64;
        let u = F2::of([ux[j], uz[j]]);
        // Nothing reads segment j's sums after this: `held` goes back to false.
        let b = if std::mem::replace(&mut held[j], false) {
            slots[j]
        } else {
            [F2::default(); 14]
        };
        let (pm, r, s, f, g) = (&b[P..P + 6], &b[R..R + 3], b[S], &b[F..F + 3], b[G]);
        let pu = [
            pm[0] * u[0] + pm[3] * u[1] + pm[4] * u[2],
            pm[3] * u[0] + pm[1] * u[1] + pm[5] * u[2],
            pm[4] * u[0] + pm[5] * u[1] + pm[2] * u[2],
        ];
        let own = F2([extra(ex, j), extra(ez, j)]);
        let (es, ms) = (F2::splat(e), F2::splat(mass));
        let lsq = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
        let upu = u[0] * pu[0] + u[1] * pu[1] + u[2] * pu[2];
        let ur = u[0] * r[0] + u[1] * r[1] + u[2] * r[2];
        let d = F2::splat(SECOND * mass) * lsq + es + own + upu + F2::splat(2.0) * ur + s;
        let fm = F2::splat(FIRST * mass);
        let beta = [
            fm * u[0] + pu[0] + r[0],
            fm * u[1] + pu[1] + r[1],
            fm * u[2] + pu[2] + r[2],
        ];
        let inv = F2::splat(1.0) / d;
        let rho = F2([rx[j] as f64, rz[j] as f64]) + u[0] * f[0] + u[1] * f[1] + u[2] * f[2] + g;
        let bd = [beta[0] * inv, beta[1] * inv, beta[2] * inv];
        let ed = es * inv;
        let x = rho * inv;
        let add = [
            ms + pm[0] - beta[0] * bd[0],
            ms + pm[1] - beta[1] * bd[1],
            ms + pm[2] - beta[2] * bd[2],
            pm[3] - beta[0] * bd[1],
            pm[4] - beta[0] * bd[2],
            pm[5] - beta[1] * bd[2],
            es * bd[0],
            es * bd[1],
            es * bd[2],
            es - F2::splat(e * e) * inv,
            f[0] - rho * bd[0],
            f[1] - rho * bd[1],
            f[2] - rho * bd[2],
            rho * ed,
        ];
        slots[j][OUT..OUT + 5].copy_from_slice(&[bd[0], bd[1], bd[2], ed, x]);
        if j == 0 {
            slots[0][ACC..ACC + 4].copy_from_slice(&[u[0] * x, u[1] * x, u[2] * x, x]);
            rx[0] = x.0[0] as f32;
            rz[0] = x.0[1] as f32;
            continue;
        }
        let p = t.parent_of(j);
        if std::mem::replace(&mut held[p], true) {
            for (a, b) in slots[p].iter_mut().zip(&add) {
                *a += *b;
            }
        } else {
            // 0 + x, not x: the bits of adding to zeroed sums, -0 included.
            slots[p] = add.map(|a| F2::default() + a);
        }
    }
    for j in 1..n {
        let [v0, v1, v2, xp]: [F2; 4] = slots[t.parent_of(j)][ACC..ACC + 4].try_into().unwrap();
        let [b0, b1, b2, e, rd]: [F2; 5] = slots[j][OUT..OUT + 5].try_into().unwrap();
        let x = rd - (b0 * v0 + b1 * v1 + b2 * v2) + e * xp;
        let u = F2::of([ux[j], uz[j]]);
        slots[j][ACC..ACC + 4].copy_from_slice(&[v0 + u[0] * x, v1 + u[1] * x, v2 + u[2] * x, x]);
        rx[j] = x.0[0] as f32;
        rz[j] = x.0[1] as f32;
    }
}

/// Tip to root, segment j (parent p): ρ_j = b_j + u_j·f̄ + ḡ; the parent gathers f_j and g_j;
/// keeps ρ_j/D_j.
#[inline(always)]
fn forward(j: usize, p: usize, u: &[Vec3], fac: &[Pivot], rhs: &[f32], acc: &mut [[f64; 4]], rho: &mut [f64]) {
    let [fx, fy, fz, g] = acc[j];
    let uj = m3(u[j]);
    let r = rhs[j] as f64 + uj[0] * fx + uj[1] * fy + uj[2] * fz + g;
    let [bx, by, bz, e, inv] = fac[j];
    rho[j] = r * inv;
    let a = &mut acc[p];
    a[0] += fx - r * bx;
    a[1] += fy - r * by;
    a[2] += fz - r * bz;
    a[3] += r * e;
}
/// The root's x, and acc[0] = (its tip velocity u_0·x_0, x_0).
#[inline(always)]
fn root(u: &[Vec3], fac: &[Pivot], rhs: &mut [f32], acc: &mut [[f64; 4]]) {
    let [fx, fy, fz, g] = acc[0];
    let u0 = m3(u[0]);
    let x0 = (rhs[0] as f64 + u0[0] * fx + u0[1] * fy + u0[2] * fz + g) * fac[0][4];
    acc[0] = [u0[0] * x0, u0[1] * x0, u0[2] * x0, x0];
    rhs[0] = x0 as f32;
}
/// Root to tip, segment j (parent p): acc[j] becomes (tip velocity V_j + u_j·x_j, x_j).
#[inline(always)]
fn back(j: usize, p: usize, u: &[Vec3], fac: &[Pivot], rhs: &mut [f32], acc: &mut [[f64; 4]], rho: &[f64]) {
    let [vx, vy, vz, xp] = acc[p];
    let [bx, by, bz, e, _] = fac[j];
    let x = rho[j] - (bx * vx + by * vy + bz * vz) + e * xp;
    let uj = m3(u[j]);
    acc[j] = [vx + uj[0] * x, vy + uj[1] * x, vz + uj[2] * x, x];
    rhs[j] = x as f32;
}
#[inline(always)]
fn m3(v: Vec3) -> [f64; 3] {
    [v.x as f64, v.y as f64, v.z as f64]
}

/// out = M·v for one tree and plane, in O(n). `tmp` is scratch of the tree's length.
pub(crate) fn apply_mass(t: &TreeStatic<'_>, m: MassView<'_>, v: &[f64], out: &mut [f64], tmp: &mut [DVec3]) {
    let n = t.len();
    // Root to tip: V_a, the base velocity; out_a = Q_a|u_a|²v_a + W_a (u_a·V_a).
    for a in 0..n {
        let u = d3(m.u[a]);
        let base = if a == 0 {
            DVec3::ZERO
        } else {
            let p = t.parent_of(a);
            tmp[p] + d3(m.u[p]) * v[p]
        };
        out[a] = m.second[a] * u.length_squared() * v[a] + m.first[a] * u.dot(base);
        // Read by a's children, all after a.
        tmp[a] = base;
    }
    // Tip to root: tmp[a] becomes S_a.
    tmp[..n].fill(DVec3::ZERO);
    for b in (1..n).rev() {
        let p = t.parent_of(b);
        let s = tmp[b];
        out[b] += d3(m.u[b]).dot(s);
        tmp[p] += s + m.first[b] * v[b] * d3(m.u[b]);
    }
    out[0] += d3(m.u[0]).dot(tmp[0]);
}

/// Kinetic energy ½·vᵀ·M·v of one tree and plane, from the segments' rod energies directly
/// (the definition of M above, independent of [`apply_mass`]). `tmp` is scratch.
pub(crate) fn kinetic_energy(t: &TreeStatic<'_>, u: &[Vec3], v: &[f32], tmp: &mut [DVec3]) -> f64 {
    let n = t.len();
    let mut total = 0.0;
    for j in 0..n {
        let base = if j == 0 {
            DVec3::ZERO
        } else {
            let p = t.parent_of(j);
            tmp[p] + d3(u[p]) * v[p] as f64
        };
        tmp[j] = base;
        let (m, uj, w) = (t.mass[j] as f64, d3(u[j]), v[j] as f64);
        total +=
            0.5 * m * (base.length_squared() + 2.0 * FIRST * base.dot(uj) * w + SECOND * uj.length_squared() * w * w);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamics::weber::{tree_static, InertiaKind, WeberModel, WeberParams};
    use crate::material::Material;
    use crate::testtree::test_tree;

    fn sim(seed: u64, n: usize, m: usize) -> WeberModel {
        let skel = test_tree(seed, n, m).unwrap();
        let forest = crate::forest::at_origin(&skel, &Material::default());
        WeberModel::new(forest, WeberParams::default()).unwrap()
    }

    /// M of one plane from its definition, independently of the recursions: every rod as two
    /// Gauss–Legendre points of mass m/2 at s = 1/2 ± 1/(2√3) (exact for the rod's kinetic
    /// energy, quadratic in s), each moving with Σ_{a ≺ j} u_a·Θ̇_a + s·u_j·Θ̇_j.
    fn dense_mass(sim: &WeberModel, k: usize) -> Vec<Vec<f64>> {
        let s = &sim.forest().seg;
        let u = &sim.sh.rest_dir[k];
        let n = s.parent.len();
        let mut m = vec![vec![0.0; n]; n];
        for j in 0..n {
            let mut chain = vec![];
            let mut a = j;
            while s.parent[a] != crate::forest::NO_PARENT {
                a = s.parent[a] as usize;
                chain.push(a);
            }
            for sp in [0.5 - 0.5 / 3f64.sqrt(), 0.5 + 0.5 / 3f64.sqrt()] {
                let w = 0.5 * s.mass[j] as f64;
                let mut jac: Vec<(usize, DVec3)> = chain.iter().map(|&a| (a, d3(u[a]))).collect();
                jac.push((j, sp * d3(u[j])));
                for &(a, ja) in &jac {
                    for &(b, jb) in &jac {
                        m[a][b] += w * ja.dot(jb);
                    }
                }
            }
        }
        m
    }

    fn dense_a(sim: &WeberModel, k: usize, h: f32) -> Vec<Vec<f64>> {
        let mut a = dense_mass(sim, k);
        let ts = tree_static(&sim.sh, 0);
        for i in 0..ts.len() {
            let e = ts.coupling(i, h) as f64;
            a[i][i] += e;
            if i > 0 {
                let p = ts.parent_of(i);
                a[p][p] += e;
                a[i][p] -= e;
                a[p][i] -= e;
            }
        }
        a
    }

    fn random(n: usize, seed: u64) -> Vec<f64> {
        let mut r = crate::rng::Rng::new(seed);
        (0..n).map(|_| r.unit_f64() * 2.0 - 1.0).collect()
    }

    #[test]
    fn mass_product_and_energy_match_the_definition() {
        let sim = sim(3, 120, 200);
        let ts = tree_static(&sim.sh, 0);
        let n = ts.len();
        let mut tmp = vec![DVec3::ZERO; n];
        for k in 0..2 {
            let m = dense_mass(&sim, k);
            let v = random(n, 7 + k as u64);
            let view = ts.mass_view(k).unwrap();
            let mut out = vec![0.0; n];
            apply_mass(&ts, view, &v, &mut out, &mut tmp);
            let mut err = 0.0f64;
            let mut norm = 0.0f64;
            for a in 0..n {
                let want: f64 = (0..n).map(|b| m[a][b] * v[b]).sum();
                err = err.max((out[a] - want).abs());
                norm = norm.max(want.abs());
            }
            assert!(err <= 1e-10 * norm, "plane {k}: M·v off by {err:e} (max {norm:e})");
            // The diagonal is Q|u|², and the kinetic energy is ½vᵀMv.
            for a in 0..n {
                let q = view.second[a] * d3(view.u[a]).length_squared();
                assert!((m[a][a] - q).abs() <= 1e-9 * q, "diagonal {a}");
            }
            let vf: Vec<f32> = v.iter().map(|x| *x as f32).collect();
            let vv: Vec<f64> = vf.iter().map(|x| *x as f64).collect();
            let want: f64 = 0.5
                * (0..n)
                    .map(|a| vv[a] * (0..n).map(|b| m[a][b] * vv[b]).sum::<f64>())
                    .sum::<f64>();
            let got = kinetic_energy(&ts, view.u, &vf, &mut tmp);
            assert!((got - want).abs() <= 1e-9 * want, "energy {got} vs {want}");
        }
    }

    #[test]
    fn both_planes_at_once_give_the_same_bits() {
        let sim = sim(6, 200, 100);
        let ts = tree_static(&sim.sh, 0);
        let n = ts.len();
        let b: Vec<Vec<f32>> = (0..2)
            .map(|k| random(n, 3 + k).iter().map(|x| *x as f32).collect())
            .collect();
        let mut one = b.clone();
        for k in 0..2 {
            let (mut acc, mut rho) = (vec![[0.0; 4]; n], vec![0.0; n]);
            solve(&ts, ts.rest_dir[k], ts.fac[k], &mut one[k], &mut acc, &mut rho);
        }
        let mut both = b.clone();
        let (mut a0, mut a1) = (vec![[0.0; 4]; n], vec![[0.0; 4]; n]);
        let (mut r0, mut r1) = (vec![0.0; n], vec![0.0; n]);
        let [x, z] = &mut both[..] else { unreachable!() };
        solve_both(&ts, ts.rest_dir, ts.fac, [x, z], [&mut a0, &mut a1], [&mut r0, &mut r1]);
        for k in 0..2 {
            assert!(
                one[k].iter().zip(&both[k]).all(|(a, b)| a.to_bits() == b.to_bits()),
                "plane {k}"
            );
        }
    }

    /// Random right-hand sides and extra diagonals (as Newmark's load stiffness and the drag's
    /// damping give) for both planes of a tree.
    fn random_system(ts: &TreeStatic<'_>, seed: u64) -> ([Vec<f32>; 2], [Vec<f32>; 2]) {
        let n = ts.len();
        let b = [0, 1].map(|k| random(n, seed + k).iter().map(|x| *x as f32).collect());
        // Up to about the joints' own stiffness, as large as the loads make it.
        let extra = [0, 1].map(|k| {
            random(n, seed + 7 + k)
                .iter()
                .zip(ts.stiffness)
                .map(|(x, k)| ((x + 1.0) as f32) * k)
                .collect()
        });
        (b, extra)
    }

    /// The fused passes (one plane, and both planes in packed lanes) against the separate
    /// [`factor`] then [`solve`] on random trees and systems: equal within 1e-12 relative in
    /// f64 (the same operations in the same order, so in fact the same bits).
    #[test]
    fn fused_factor_and_solve_match_the_separate_passes() {
        for (seed, segs, leaves) in [(1, 1, 0), (2, 2, 1), (3, 60, 40), (4, 400, 300), (9, 1500, 900)] {
            let sim = sim(seed, segs, leaves);
            let ts = tree_static(&sim.sh, 0);
            let n = ts.len();
            let h = sim.params().dt * sim.params().integrator.gamma();
            let c = (h as f64) * (h as f64);
            let (b, extra) = random_system(&ts, 40 + seed);
            let mut want = [vec![0f64; n], vec![0f64; n]];
            let mut want32 = b.clone();
            for k in 0..2 {
                let m = ts.mass_view(k).unwrap();
                let (mut blocks, mut fac) = (vec![Block::default(); n], vec![[0.0; 5]; n]);
                factor(&ts, m, h, (&extra[k], c), &mut blocks, &mut fac);
                let (mut acc, mut rho) = (vec![[0.0; 4]; n], vec![0.0; n]);
                solve(&ts, m.u, &fac, &mut want32[k], &mut acc, &mut rho);
                want[k] = acc.iter().map(|a| a[3]).collect();
            }
            let close = |got: &[f64], want: &[f64], what: &str| {
                let scale = want.iter().fold(0f64, |m, x| m.max(x.abs()));
                for (j, (g, w)) in got.iter().zip(want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-12 * scale,
                        "{what}, tree {seed}, segment {j}: {g:e} vs {w:e}"
                    );
                }
            };
            // One plane at a time, twice over the same scratch (it must come back zero).
            let mut blocks = vec![Block::default(); n];
            for round in 0..2 {
                for k in 0..2 {
                    let mut rhs = b[k].clone();
                    let (mut out, mut acc) = (vec![[0.0; 5]; n], vec![[0.0; 4]; n]);
                    let e = Elimination {
                        u: ts.rest_dir[k],
                        extra: &extra[k],
                        rhs: &mut rhs,
                        blocks: &mut blocks,
                        out: &mut out,
                        acc: &mut acc,
                    };
                    factor_solve(&ts, h, c, e);
                    let x: Vec<f64> = acc.iter().map(|a| a[3]).collect();
                    close(&x, &want[k], &format!("one plane {k}, round {round}"));
                    assert_eq!(rhs, want32[k], "one plane {k}: the f32 result");
                }
            }
            let mut slots = vec![[F2::default(); 14]; n];
            let mut held = vec![false; n];
            for round in 0..2 {
                let [mut rx, mut rz] = b.clone();
                let pair = Pair {
                    u: ts.rest_dir,
                    extra: [&extra[0], &extra[1]],
                    rhs: [&mut rx, &mut rz],
                    slots: &mut slots,
                    held: &mut held,
                };
                factor_solve_pair(&ts, h, c, pair);
                for (k, r) in [rx, rz].iter().enumerate() {
                    let x: Vec<f64> = slots.iter().map(|s| s[ACC + 3].0[k]).collect();
                    close(&x, &want[k], &format!("pair, plane {k}, round {round}"));
                    assert_eq!(*r, want32[k], "pair, plane {k}: the f32 result");
                }
            }
        }
    }

    #[test]
    fn elimination_solves_the_dense_system() {
        let sim = sim(5, 150, 300);
        let h = sim.params().dt * sim.params().integrator.gamma();
        let ts = tree_static(&sim.sh, 0);
        let n = ts.len();
        for k in 0..2 {
            let a = dense_a(&sim, k, h);
            let b = random(n, 11 + k as u64);
            let mut rhs: Vec<f32> = b.iter().map(|x| *x as f32).collect();
            let bf: Vec<f64> = rhs.iter().map(|x| *x as f64).collect();
            let (mut acc, mut rho) = (vec![[0.0; 4]; n], vec![0.0; n]);
            solve(&ts, ts.rest_dir[k], ts.fac[k], &mut rhs, &mut acc, &mut rho);
            let mut res = 0.0f64;
            let mut bn = 0.0f64;
            for i in 0..n {
                let ax: f64 = (0..n).map(|j| a[i][j] * rhs[j] as f64).sum();
                res += (ax - bf[i]).powi(2);
                bn += bf[i].powi(2);
            }
            assert!(
                res.sqrt() <= 1e-5 * bn.sqrt(),
                "plane {k}: residual {:e}",
                res.sqrt() / bn.sqrt()
            );
        }
    }

    /// Where every lever is the segment's length (a branching tree bent in the x-y plane
    /// only, so |u^x| = l), Weber's diagonal inertia is exactly the articulated matrix's
    /// diagonal. (Elsewhere the mapping of Eqs. 3 and 4 shortens the lever of one plane by
    /// sin(w)/w for a segment tilted in the other, and the two differ.)
    #[test]
    fn the_diagonal_option_keeps_the_diagonal_of_the_articulated_matrix() {
        use crate::skeleton::{Skeleton, SkeletonSegment};
        let mut segments: Vec<SkeletonSegment> = Vec::new();
        for i in 0..40u32 {
            let (parent, base): (Option<u32>, Vec3) = match i {
                0 => (None, Vec3::ZERO),
                _ => {
                    let p = if i % 3 == 0 { i / 2 } else { i - 1 };
                    (Some(p), segments[p as usize].tip)
                }
            };
            let a = 0.3 * (i as f32 * 0.7).sin();
            segments.push(SkeletonSegment {
                parent,
                base,
                tip: base + 0.2 * Vec3::new(a.sin(), a.cos(), 0.0),
                radius_base: 0.03 - 0.0005 * i as f32,
                radius_tip: 0.029 - 0.0005 * i as f32,
            });
        }
        let skel = Skeleton {
            segments,
            leaves: Vec::new(),
        };
        let forest = crate::forest::at_origin(&skel, &Material::default());
        let mut s = WeberModel::new(forest, WeberParams::default()).unwrap();
        let ts = tree_static(&s.sh, 0);
        let view = ts.mass_view(0).unwrap();
        for a in 0..ts.len() {
            let l = ts.length[a] as f64;
            let u2 = d3(view.u[a]).length_squared();
            assert!(
                (u2 - l * l).abs() < 1e-5 * l * l,
                "segment {a}: |u|² = {u2}, l² = {}",
                l * l
            );
            let q = view.second[a] * u2;
            let inertia = s.forest().seg.inertia[a] as f64;
            assert!((q - inertia).abs() <= 1e-4 * inertia, "segment {a}: {q} vs {inertia}");
        }
        s.set_inertia(InertiaKind::Diagonal);
        assert!(tree_static(&s.sh, 0).mass_view(0).is_none());
    }
}
