//! A Sylva forest rebuilt as rapier multibodies: the same trees, masses, inertias, springs,
//! dampers, gravity and wind drag, stepped by rapier's reduced-coordinate articulated solver.
//!
//! Correspondence (each line is Sylva's model on the left, its rapier counterpart on the right):
//! - segment i: a rod of mass m_i (wood and leaves, `Forest::seg.mass`) along its axis →
//!   one dynamic rigid body, origin at the segment's base, oriented like the segment (local +y
//!   along the axis), centre of mass at (0, l/2, 0), principal inertia about the centre
//!   m·l²/12 across the axis (a thin rod: with the parallel-axis term m·(l/2)² this is Sylva's
//!   m·l²/3 about the base) and m·r̄²/2 about it (r̄ the mean radius; Sylva has no twist, so this
//!   only gives the twist coordinate a mass).
//! - the joint at segment i's base, an angular spring k_i and damper c_i on the bend relative
//!   to the parent in each of Weber's two planes → a multibody joint anchored at the parent's
//!   tip with its linear axes locked, whose frame is the parent's frame turned by the segment's
//!   generated bend (`mapping::relative_rotation(shape)`), so every joint coordinate is zero in
//!   the generated shape. Weber's relative rotation for angles (x, z) has the rotation vector
//!   (z, 0, −x), so the springs are k_i on the coordinates about the joint's x and z axes with
//!   rest positions (rest_z − shape_z) and −(rest_x − shape_x) (non-zero where the material
//!   pre-stresses the springs against gravity), and the dampers c_i on the same coordinates.
//!   They are rapier's passive joint springs and joint damping, both implicit in its
//!   generalized dynamics like Sylva's Eq. 1, so the two integrate the same forces the same way.
//!   (Joint motors, MotorModel::ForceBased, would be velocity constraints of rapier's iterative
//!   solver, a softer and iteration-dependent spring.)
//! - no twist → rapier's multibody joints support one or three free angular axes, not two
//!   (`MultibodyJoint::integrate` leaves the two-axis case unimplemented), so the joint is
//!   spherical and the twist about the segment's axis carries a spring [`TWIST_STIFFNESS`]
//!   times the bending one, critically damped on the segment's own twist inertia: twist stays
//!   orders of magnitude below the bend.
//! - the tree's root joint → the same joint to a fixed ground body at the tree's root.
//! - gravity m_i·g at the segment's centre → rapier's gravity on the body's mass at its centre.
//! - wind drag at the segment's centre, the bark's on the wind across the segment's axis a and
//!   the leaves' on the whole wind, (drag_i − leaf_drag_i)·(w − (w·a)·a) + leaf_drag_i·w
//!   (Sylva's `kernels::populate` in a uniform wind) → the same force at the body's centre of
//!   mass, with a from rapier's pose at the start of every step, like Sylva's populate.
//!
//! Invariant: one rapier world per group of trees (trees are independent, so groups can be
//! stepped on separate threads); bodies never sleep and there are no colliders, so a step is
//! the articulated dynamics alone.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use rapier3d::prelude::*;
use sylva_sim::dynamics::Pose as SylvaPose;
use sylva_sim::forest::NO_PARENT;
use sylva_sim::Forest;

/// Twist spring per bending spring: the stand-in for Weber's missing twist degree of freedom.
pub const TWIST_STIFFNESS: f32 = 100.0;

type GVec3 = glam::Vec3;
type GQuat = glam::Quat;

fn v3(v: GVec3) -> Vector {
    Vector::new(v.x, v.y, v.z)
}
fn quat(q: GQuat) -> Rotation {
    Rotation::from_xyzw(q.x, q.y, q.z, q.w)
}
fn back(v: Vector) -> GVec3 {
    GVec3::new(v.x, v.y, v.z)
}

/// One segment's body and what its wind force needs.
struct Link {
    body: RigidBodyHandle,
    /// The bark's linear drag (Sylva's `drag - leaf_drag`) and the leaves' \[N·s/m\].
    bark_drag: f32,
    leaf_drag: f32,
    /// The segment's length \[m\].
    length: f32,
}

/// Trees `trees` of a forest as rapier multibodies in one world.
pub struct RapierTrees {
    world: PhysicsWorld,
    links: Vec<Link>,
    /// Per tree of the group: the joint at its root, the handle of its multibody.
    #[cfg(test)]
    roots: Vec<MultibodyJointHandle>,
    /// Per tree of the group: the link index of its tracked tip segment.
    tips: Vec<usize>,
    /// Work time of the parts of a step: the wind forces set from outside, and rapier's whole
    /// step, split by rapier's own counters (its `profiler` feature) into the velocity
    /// assembly (for multibodies: the dense mass matrix, its LU factors and the free
    /// accelerations, `init_solver_buffers_and_multibodies`), the velocity resolution (the
    /// solver's workers: constraint solve, position integration, forward kinematics and
    /// write-back) and the rest (collision detection, islands, user changes).
    pub forces_time: Duration,
    pub step_time: Duration,
    pub assembly_time: Duration,
    pub resolution_time: Duration,
    pub other_time: Duration,
}

/// The segment a tree's tip trajectory follows: the one whose tip is farthest from the root
/// along the tree (the end of its longest chain), first of equals. Global index.
pub fn tip_segment(forest: &Forest, tree: usize) -> usize {
    let r = &forest.trees[tree].segments;
    let (start, end) = (r.start as usize, r.end as usize);
    let mut chain = vec![0.0f32; end - start];
    let mut best = start;
    for i in start..end {
        let p = forest.seg.parent[i];
        let base = if p == NO_PARENT { 0.0 } else { chain[p as usize - start] };
        chain[i - start] = base + forest.seg.length[i];
        if chain[i - start] > chain[best - start] {
            best = i;
        }
    }
    best
}

/// The rest positions of each joint's springs, as rotations about the joint's axes (the
/// segment's own x, y (twist) and z axes in the generated shape) \[rad\].
///
/// Where the material pre-stresses the springs against gravity (trees grow under their own
/// weight), the generated shape is made rapier's equilibrium the way Sylva makes it its own:
/// each spring holds the gravity torque of its subtree about its joint, taken at the shape,
/// τ = Σ (c_j − b_i) × m_j·g over the subtree (c_j the centres, b_i the joint), so its rest
/// position is −τ/k in the segment's frame; the twist spring takes the torque about the axis.
/// Otherwise the springs rest where Sylva's do: the rotation from the generated bend to the
/// rest bend, `bend(shape)⁻¹·bend(rest)`, as a rotation vector in the segment's frame.
fn spring_rest(forest: &Forest, pose: &SylvaPose, r: std::ops::Range<usize>, gravity: f32) -> Vec<GVec3> {
    let s = &forest.seg;
    let n = r.end - r.start;
    if forest.material.compensate_gravity {
        // Subtree mass and first moment of mass, tip to root.
        let mut mass = vec![0.0f64; n];
        let mut moment = vec![glam::DVec3::ZERO; n];
        for k in (0..n).rev() {
            let i = r.start + k;
            let centre = pose.base[i] + pose.orient[i] * GVec3::new(0.0, 0.5 * s.length[i], 0.0);
            mass[k] += s.mass[i] as f64;
            moment[k] += centre.as_dvec3() * s.mass[i] as f64;
            if s.parent[i] != NO_PARENT {
                let p = s.parent[i] as usize - r.start;
                let (m, mo) = (mass[k], moment[k]);
                mass[p] += m;
                moment[p] += mo;
            }
        }
        (0..n)
            .map(|k| {
                let i = r.start + k;
                let arm = moment[k] - pose.base[i].as_dvec3() * mass[k];
                let torque = arm.cross(glam::DVec3::new(0.0, -(gravity as f64), 0.0));
                let local = pose.orient[i].inverse() * torque.as_vec3();
                let k = s.stiffness[i];
                -local / GVec3::new(k, TWIST_STIFFNESS * k, k)
            })
            .collect()
    } else {
        r.map(|i| {
            let shape = sylva_sim::dynamics::weber::mapping::relative_rotation(s.shape[0][i], s.shape[1][i]);
            let rest = sylva_sim::dynamics::weber::mapping::relative_rotation(s.rest[0][i], s.rest[1][i]);
            (shape.inverse() * rest).normalize().to_scaled_axis()
        })
        .collect()
    }
}

impl RapierTrees {
    /// Builds trees `trees` of `forest` at the pose `pose` (Sylva's pose of the same forest at
    /// rest: its generated shape), with time step `dt` and gravity `gravity` along −y.
    pub fn new(
        forest: &Forest,
        pose: &SylvaPose,
        trees: std::ops::Range<usize>,
        dt: f32,
        gravity: f32,
    ) -> Result<RapierTrees> {
        let mut world = PhysicsWorld::new();
        world.physics_pipeline.counters.enable();
        world.gravity = Vector::new(0.0, -gravity, 0.0);
        world.integration_parameters.dt = dt;
        // One solve per step, like Sylva's Eq. 1 (rapier's default takes four substeps, each
        // re-assembling and re-factoring the mass matrix).
        world.integration_parameters.num_solver_iterations = 1;
        let s = &forest.seg;
        let mut links: Vec<Link> = Vec::new();
        let mut tips = Vec::new();
        #[cfg(test)]
        let mut roots = Vec::new();
        for t in trees {
            let r = forest.trees[t].segments.clone();
            let (start, end) = (r.start as usize, r.end as usize);
            let ground = world
                .bodies
                .insert(RigidBodyBuilder::fixed().translation(v3(forest.trees[t].root)).build());
            let first = links.len();
            // Per segment: its joint handle, to set springs and damping once the tree is whole.
            let mut joints = Vec::with_capacity(end - start);
            for i in start..end {
                let (l, m) = (s.length[i], s.mass[i]);
                let r_mean = 0.5 * (s.radius_base[i] + s.radius_tip[i]);
                let across = m * l * l / 12.0;
                let along = (0.5 * m * r_mean * r_mean).max(1e-6 * across);
                let body = RigidBodyBuilder::dynamic()
                    .pose(Pose::from_parts(v3(pose.base[i]), quat(pose.orient[i])))
                    .additional_mass_properties(MassProperties::new(
                        Vector::new(0.0, 0.5 * l, 0.0),
                        m,
                        Vector::new(across, along, across),
                    ))
                    .can_sleep(false)
                    .build();
                let h = world.bodies.insert(body);
                let (parent_body, frame1) = match s.parent[i] {
                    NO_PARENT => (ground, Pose::from_parts(Vector::ZERO, Rotation::IDENTITY)),
                    p => {
                        let p = p as usize;
                        (
                            links[first + p - start].body,
                            Pose::from_parts(Vector::new(0.0, s.length[p], 0.0), Rotation::IDENTITY),
                        )
                    }
                };
                // The joint frame on the parent side is the parent's frame turned by the
                // generated bend, so it coincides with the child's frame in the generated shape.
                let bend = sylva_sim::dynamics::weber::mapping::relative_rotation(s.shape[0][i], s.shape[1][i]);
                let frame1 = Pose::from_parts(frame1.translation, quat(bend));
                let joint = GenericJointBuilder::new(JointAxesMask::LIN_AXES)
                    .local_frame1(frame1)
                    .local_frame2(Pose::IDENTITY)
                    .build();
                let Some(jh) = world.multibody_joints.insert(parent_body, h, joint, true) else {
                    bail!("rapier refused the joint of segment {i}");
                };
                joints.push(jh);
                links.push(Link {
                    body: h,
                    bark_drag: s.drag[i] - s.leaf_drag[i],
                    leaf_drag: s.leaf_drag[i],
                    length: s.length[i],
                });
            }
            let rest_coords = spring_rest(forest, pose, start..end, gravity);
            for (k, jh) in joints.iter().enumerate() {
                let i = start + k;
                let Some((mb, link_id)) = world.multibody_joints.get_mut(*jh) else {
                    bail!("rapier lost the joint of segment {i}");
                };
                let (kb, c) = (s.stiffness[i], s.damping[i]);
                let l = s.length[i];
                let r_mean = 0.5 * (s.radius_base[i] + s.radius_tip[i]);
                let twist_inertia = (0.5 * s.mass[i] * r_mean * r_mean).max(1e-6 * s.mass[i] * l * l / 12.0);
                let kt = TWIST_STIFFNESS * kb;
                let ct = 2.0 * (kt * twist_inertia).sqrt();
                let rest = rest_coords[k].to_array();
                let link = mb.link_mut(link_id).expect("the link of a joint just inserted");
                let assembly = link.assembly_id();
                link.joint.set_spring(3, kb, rest[0]);
                link.joint.set_spring(4, kt, rest[1]);
                link.joint.set_spring(5, kb, rest[2]);
                let damping = mb.damping_mut();
                damping[assembly] = c;
                damping[assembly + 1] = ct;
                damping[assembly + 2] = c;
            }
            let tip = tip_segment(forest, t);
            tips.push(first + tip - start);
            #[cfg(test)]
            roots.extend(joints.first().copied());
        }
        Ok(RapierTrees {
            world,
            links,
            #[cfg(test)]
            roots,
            tips,
            forces_time: Duration::ZERO,
            step_time: Duration::ZERO,
            assembly_time: Duration::ZERO,
            resolution_time: Duration::ZERO,
            other_time: Duration::ZERO,
        })
    }

    /// One step in the uniform wind `wind` (m/s): the drag force at every segment's centre
    /// from the current pose, then rapier's step.
    pub fn step(&mut self, wind: GVec3) {
        let t0 = Instant::now();
        let w = v3(wind);
        for link in &self.links {
            let rb = &mut self.world.bodies[link.body];
            let axis = rb.rotation() * Vector::Y;
            let across = w - axis * w.dot(axis);
            rb.reset_forces(false);
            rb.add_force(across * link.bark_drag + w * link.leaf_drag, false);
        }
        let t1 = Instant::now();
        self.world.step();
        let t2 = Instant::now();
        self.forces_time += t1 - t0;
        self.step_time += t2 - t1;
        let c = &self.world.physics_pipeline.counters;
        let (assembly, resolution) = (
            c.solver.velocity_assembly_time.time(),
            c.solver.velocity_resolution_time.time(),
        );
        self.assembly_time += assembly;
        self.resolution_time += resolution;
        self.other_time += (t2 - t1).saturating_sub(assembly + resolution);
    }

    /// Finds rapier's static equilibrium of the trees in the steady uniform wind `wind` (m/s),
    /// from their current pose, without integrating the motion there; returns every
    /// evaluation of the static map (see [`StaticSettle`]) and leaves the trees in the pose of
    /// the last one. Stops once the bound on the distance left to the fixed point
    /// ([`StaticSettle::bound`]) is below `tolerance` (m), or after `max_iterations`
    /// evaluations; refuses a pose that stops being finite. `observe` sees every segment's tip
    /// (in link order) after each evaluation. The time step is restored.
    ///
    /// The static map g. One rapier step from rest with a time step T far longer than the
    /// trees' periods and damping times: rapier's multibody step is implicit in the joint
    /// springs and dampers, so from generalized velocity zero it solves
    /// (M + T·D + T²·K)·a = f(q) − K·(q − q_rest) and moves q by T²·a, where f is the
    /// generalized gravity and wind force at the pose q (no Coriolis term at rest). With
    /// T²·K dominating T·D and M (by c/(k·T) and 1/(ω·T)², both below 10⁻⁴ here), the move is
    /// K⁻¹·(f(q) − K·(q − q_rest)): g(q) = q_rest + K⁻¹·f(q), whose fixed points are exactly
    /// the poses where the springs hold the loads, f(q) = K·(q − q_rest), rapier's settled
    /// pose (at rest there, rapier's own step keeps it there whatever its time step).
    ///
    /// Plain iteration q ← g(q) converges while the loads' change with the pose stays below
    /// the springs' stiffness, but on a tree bent far by the wind it contracts slowly: the
    /// bark's drag on the wind across a branch falls as the branch turns into the wind, so
    /// g overshoots and the iterates swing about the fixed point (eigenvalues of g's Jacobian
    /// near −0.8 on Weber's dense tree in 10 m/s). The iterates are therefore mixed by
    /// Anderson acceleration (Anderson 1965; Walker & Ni 2011, "Anderson acceleration for
    /// fixed-point iterations", Eq. 2.1 with β = 1): from the last m evaluations
    /// (x_i, g(x_i)) with residuals r_i = g(x_i) − x_i, the next point is
    /// x = g(x_k) − Σ γ_j·(g(x_{j+1}) − g(x_j)), with γ minimising
    /// |r_k − Σ γ_j·(r_{j+1} − r_j)|₂ (a secant model of g that cancels the swinging
    /// directions, like GMRES on the linearised problem). The first evaluation is from the
    /// starting pose; a residual that grows restarts the memory. The mixing only chooses where
    /// g is evaluated next: every pose the iteration ends in is a rapier step's own result,
    /// and the convergence figures are those of g itself. Rapier's spherical joints accumulate
    /// their coordinates from the angular velocity (`MultibodyJoint::integrate`), and the
    /// mixing moves them by `Multibody::apply_displacements`, the same integration, so the
    /// springs see the coordinates the step would have produced.
    #[cfg(test)]
    pub fn settle_static(
        &mut self,
        wind: GVec3,
        tolerance: f32,
        max_iterations: usize,
        observe: &mut dyn FnMut(&[GVec3]),
    ) -> Result<StaticSettle> {
        /// The long step \[s\].
        const LONG_STEP: f32 = 1.0e3;
        /// Evaluations Anderson's secant model remembers.
        const MEMORY: usize = 5;
        let dt = self.world.integration_parameters.dt;
        self.world.integration_parameters.dt = LONG_STEP;
        let mut settle = StaticSettle::default();
        // Per evaluation in the memory: its point x_i and g(x_i) (generalized coordinates).
        let mut xs: Vec<Vec<f64>> = Vec::new();
        let mut gs: Vec<Vec<f64>> = Vec::new();
        let mut x = Vec::new();
        let mut gx = Vec::new();
        let mut before = Vec::new();
        let mut after = Vec::new();
        let result = loop {
            let k = settle.moves.len();
            self.stop();
            self.coordinates(&mut x);
            self.tips_all(&mut before);
            self.step(wind);
            self.coordinates(&mut gx);
            self.tips_all(&mut after);
            let moved = max_distance(&after, &before);
            if !moved.is_finite() {
                break Err(anyhow::anyhow!(
                    "rapier's static iteration stopped being finite at evaluation {}",
                    k + 1
                ));
            }
            if let (Some(last), Some(xl), Some(gl)) = (settle.moves.last(), xs.last(), gs.last()) {
                let r_now: Vec<f64> = gx.iter().zip(&x).map(|(g, x)| g - x).collect();
                let r_last: Vec<f64> = gl.iter().zip(xl).map(|(g, x)| g - x).collect();
                let cos = dot(&r_now, &r_last) / (dot(&r_now, &r_now) * dot(&r_last, &r_last)).sqrt();
                eprintln!(
                    "rapier static evaluation {}: the tips moved at most {moved:.3e} m ({:.3} of the last; \
                     residual's cosine with the last {cos:+.3})",
                    k + 1,
                    moved / last
                );
                if moved > *last {
                    // The secant model no longer describes g here: start it again.
                    xs.clear();
                    gs.clear();
                }
            } else {
                eprintln!(
                    "rapier static evaluation {}: the tips moved at most {moved:.3e} m",
                    k + 1
                );
            }
            observe(&after);
            settle.push(before.clone(), after.clone(), moved);
            eprintln!(
                "  contraction estimate {:.3}, left at most {:.3e} m",
                settle.contraction, settle.bound
            );
            xs.push(x.clone());
            gs.push(gx.clone());
            if xs.len() > MEMORY + 1 {
                xs.remove(0);
                gs.remove(0);
            }
            if settle.bound < tolerance || k + 1 >= max_iterations {
                break Ok(());
            }
            // Anderson's next point, then the displacement from where the step left the trees.
            let next = anderson(&xs, &gs);
            let disp: Vec<f32> = next.iter().zip(&gx).map(|(n, g)| (n - g) as f32).collect();
            self.stop();
            self.displace(&disp);
        };
        self.stop();
        self.world.integration_parameters.dt = dt;
        result.map(|()| settle)
    }

    /// The group's generalized coordinates, tree after tree in rapier's assembly order: each
    /// joint's rotation coordinates about its x, y (twist) and z axes \[rad\].
    #[cfg(test)]
    fn coordinates(&self, out: &mut Vec<f64>) {
        out.clear();
        for &jh in &self.roots {
            let (mb, _) = self.world.multibody_joints.get(jh).expect("the tree's multibody");
            let base = out.len();
            out.resize(base + mb.ndofs(), 0.0);
            for link in mb.links() {
                let j = link.joint();
                let free = (0..6).filter(|a| j.data.locked_axes.bits() & (1 << a) == 0);
                for (d, axis) in free.enumerate() {
                    out[base + link.assembly_id() + d] = j.coords()[axis] as f64;
                }
            }
        }
    }

    /// Moves the group's generalized coordinates by `disp` (in the order of
    /// [`Self::coordinates`]) with rapier's own position integration, and the bodies with them.
    #[cfg(test)]
    fn displace(&mut self, disp: &[f32]) {
        let mut base = 0;
        for &jh in &self.roots {
            let (mb, _) = self.world.multibody_joints.get_mut(jh).expect("the tree's multibody");
            let n = mb.ndofs();
            mb.apply_displacements(&disp[base..base + n]);
            mb.forward_kinematics(&self.world.bodies, false);
            mb.update_rigid_bodies(&mut self.world.bodies, true);
            base += n;
        }
    }

    /// Sets every generalized and body velocity of the group to zero.
    #[cfg(test)]
    fn stop(&mut self) {
        for &jh in &self.roots {
            if let Some((mb, _)) = self.world.multibody_joints.get_mut(jh) {
                mb.generalized_velocity_mut().fill(0.0);
            }
        }
        for link in &self.links {
            let rb = &mut self.world.bodies[link.body];
            rb.set_linvel(Vector::ZERO, false);
            rb.set_angvel(AngVector::ZERO, false);
        }
    }

    /// Every segment's tip \[m\], in link order.
    #[cfg(test)]
    fn tips_all(&self, out: &mut Vec<GVec3>) {
        out.clear();
        out.extend((0..self.links.len()).map(|k| self.link_tip(k)));
    }

    /// Each tree's tracked tip position \[m\], in tree order.
    pub fn tips(&self, out: &mut Vec<GVec3>) {
        out.clear();
        out.extend(self.tips.iter().map(|&k| self.link_tip(k)));
    }

    /// The tip of link `k`'s segment \[m\].
    fn link_tip(&self, k: usize) -> GVec3 {
        let link = &self.links[k];
        let p = self.world.bodies[link.body].position();
        back(p * Vector::new(0.0, link.length, 0.0))
    }

    /// World position of segment `k`'s (index within this group) base and its unit axis.
    #[cfg(test)]
    pub fn segment(&self, k: usize) -> (GVec3, GVec3) {
        let p = self.world.bodies[self.links[k].body].position();
        (back(p.translation), back(p.rotation * Vector::Y))
    }

    /// Segments in the group.
    pub fn len(&self) -> usize {
        self.links.len()
    }
}

/// What rapier's static iteration ([`RapierTrees::settle_static`]) measured, and the bound it
/// gives on the distance from its last pose to its fixed point.
///
/// Every evaluation i of the static map g starts at a pose x_i with (every segment's) tips
/// P_i and ends at g(x_i) with tips Q_i. Measuring poses by their tips (the largest tip
/// distance d), g's contraction factor ρ — the least number with d(g(x), g(y)) ≤ ρ·d(x, y)
/// over the poses visited — is estimated from every pair of evaluations i < j as
/// d(Q_i, Q_j)/d(P_i, P_j), the largest of them (pairs whose points lie closer than
/// [`MIN_SEPARATION`] are left out: float rounding dominates their ratio). With the fixed
/// point x* = g(x*) and the last evaluation's move e = d(Q_k, P_k),
/// d(x_k, x*) ≤ e + d(g(x_k), g(x*)) ≤ e + ρ·d(x_k, x*), so d(x_k, x*) ≤ e/(1 − ρ), and the
/// last pose g(x_k) lies within ρ·e/(1 − ρ) of the fixed point: the bound, infinite while
/// fewer than [`MIN_PAIRS`] pairs measure ρ or ρ ≥ 1.
#[cfg(test)]
#[derive(Default)]
pub struct StaticSettle {
    /// Each evaluation's largest tip move e_i = d(Q_i, P_i) \[m\].
    pub moves: Vec<f32>,
    /// Each evaluation's tips (P_i, Q_i) \[m\].
    tips: Vec<(Vec<GVec3>, Vec<GVec3>)>,
    /// The estimate of g's contraction factor ρ, and the pairs it was taken over.
    pub contraction: f32,
    pub pairs: usize,
    /// The bound on the last pose's distance from the fixed point, ρ·e/(1 − ρ) \[m\].
    pub bound: f32,
}

/// Pairs of evaluations closer than this (largest tip distance \[m\]) do not measure the
/// contraction: a thousandth of a metre is a thousand times the rounding of an f32 tip
/// position on a 10 m tree.
#[cfg(test)]
pub const MIN_SEPARATION: f32 = 1.0e-3;

/// Pairs of evaluations the contraction must be measured over before the bound is finite.
#[cfg(test)]
pub const MIN_PAIRS: usize = 3;

#[cfg(test)]
impl StaticSettle {
    /// Records an evaluation and updates the contraction estimate and the bound.
    fn push(&mut self, before: Vec<GVec3>, after: Vec<GVec3>, moved: f32) {
        for (p, q) in &self.tips {
            let apart = max_distance(p, &before);
            if apart >= MIN_SEPARATION {
                self.contraction = self.contraction.max(max_distance(q, &after) / apart);
                self.pairs += 1;
            }
        }
        self.tips.push((before, after));
        self.moves.push(moved);
        let rho = self.contraction;
        self.bound = if self.pairs >= MIN_PAIRS && rho < 1.0 {
            moved * rho / (1.0 - rho)
        } else {
            f32::INFINITY
        };
    }
}

/// The largest distance between corresponding points \[m\].
#[cfg(test)]
fn max_distance(a: &[GVec3], b: &[GVec3]) -> f32 {
    a.iter().zip(b).map(|(a, b)| (*a - *b).length()).fold(0.0, f32::max)
}

#[cfg(test)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

/// Anderson acceleration's next point from evaluations (x_i, g(x_i)), oldest first (Walker &
/// Ni 2011, Eq. 2.1 with β = 1): g(x_k) − Σ_j γ_j·(g(x_{j+1}) − g(x_j)), γ the least-squares
/// solution of Σ_j γ_j·(r_{j+1} − r_j) ≈ r_k for the residuals r_i = g(x_i) − x_i (normal
/// equations in f64, a few columns, lightly regularised so that a repeated direction cannot
/// make them singular). With one evaluation, g(x_0): the plain step.
#[cfg(test)]
fn anderson(xs: &[Vec<f64>], gs: &[Vec<f64>]) -> Vec<f64> {
    let k = xs.len() - 1;
    let r: Vec<Vec<f64>> = xs
        .iter()
        .zip(gs)
        .map(|(x, g)| g.iter().zip(x).map(|(g, x)| g - x).collect())
        .collect();
    let m = k;
    if m == 0 {
        return gs[k].clone();
    }
    let df: Vec<Vec<f64>> = (0..m)
        .map(|j| r[j + 1].iter().zip(&r[j]).map(|(a, b)| a - b).collect())
        .collect();
    // Normal equations A·γ = b, A = ΔFᵀ·ΔF, b = ΔFᵀ·r_k.
    let mut a: Vec<Vec<f64>> = (0..m).map(|i| (0..m).map(|j| dot(&df[i], &df[j])).collect()).collect();
    let mut b: Vec<f64> = (0..m).map(|i| dot(&df[i], &r[k])).collect();
    let trace: f64 = (0..m).map(|i| a[i][i]).sum();
    for (i, row) in a.iter_mut().enumerate() {
        row[i] += 1e-10 * trace;
    }
    // Gaussian elimination with partial pivoting.
    for c in 0..m {
        let p = (c..m)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap_or(c);
        a.swap(c, p);
        b.swap(c, p);
        if a[c][c] == 0.0 {
            return gs[k].clone();
        }
        let pivot = a[c].clone();
        for i in c + 1..m {
            let f = a[i][c] / pivot[c];
            for (x, p) in a[i][c..].iter_mut().zip(&pivot[c..]) {
                *x -= f * p;
            }
            b[i] -= f * b[c];
        }
    }
    let mut gamma = vec![0.0; m];
    for i in (0..m).rev() {
        let s: f64 = (i + 1..m).map(|j| a[i][j] * gamma[j]).sum();
        gamma[i] = (b[i] - s) / a[i][i];
    }
    let mut next = gs[k].clone();
    for (j, g) in gamma.iter().enumerate() {
        for (n, (g1, g0)) in next.iter_mut().zip(gs[j + 1].iter().zip(&gs[j])) {
            *n -= g * (g1 - g0);
        }
    }
    next
}
