//! One piece of debris as a rigid body: its mass properties, built once from the segments and
//! leaves it was made of, and its state (position, orientation, velocity, angular momentum).
//!
//! Invariants:
//! - The body frame has its origin at the centre of mass and its axes along the principal
//!   axes of inertia, so the inertia tensor in it is the diagonal `inertia`; every segment's
//!   base and orientation, and every leaf's position (and orientation, when the pose turns
//!   leaves) are stored in that frame and never change.
//! - `mass` is the sum of the forest's masses (`forest.seg.mass`, wood plus leaves) of the
//!   piece's segments: the mass the tree lost.
//! - `q` is a unit quaternion (renormalised after every update); `l` is the angular momentum
//!   about the centre of mass in the world frame, ω = R·I⁻¹·Rᵀ·L.
//! - `segs` lists forest segment indices in the order spawned (parents before children);
//!   `chain_start[k]` is true where segment k's parent is not in the piece, so that its base is
//!   not another segment's tip (where a ground contact must be looked for at the base too).

use glam::{DMat3, DVec3, Mat3, Quat, Vec3};

use crate::dynamics::Pose;
use crate::forest::Forest;

/// Wood mass of segment `i` as [`Forest::build`] computes it: a frustum of green wood, ρ·π·l·(r0² +
/// r0·r1 + r1²)/3 (the same expression in the same order, so that mass − wood is the leaves').
pub(super) fn wood_mass(forest: &Forest, i: usize) -> f32 {
    let (l, r0, r1) = (
        forest.seg.length[i],
        forest.seg.radius_base[i],
        forest.seg.radius_tip[i],
    );
    forest.material.wood_density * std::f32::consts::PI * l * (r0 * r0 + r0 * r1 + r1 * r1) / 3.0
}

/// Mass properties of a solid frustum (truncated cone) of mass `m`, length `h`, base radius
/// `r0` and tip radius `r1`, its axis along local +y from the base: (centroid height above the
/// base, moment about the axis, moment about a transverse axis through the centroid).
///
/// By summing thin discs (radius r(z) = r0 + (r1 − r0)·z/h, mass ρ·π·r²·dz, moments ½·r²·dm
/// about the axis and (¼·r² + z²)·dm about a transverse axis through the base):
/// - V = π·h·(r0² + r0·r1 + r1²)/3,
/// - z_c = h·(r0² + 2·r0·r1 + 3·r1²) / (4·(r0² + r0·r1 + r1²)),
/// - I_axis = ρ·π·h·(r0⁴ + r0³·r1 + r0²·r1² + r0·r1³ + r1⁴)/10,
/// - I_base = ρ·π·(h·(r0⁴ + r0³·r1 + r0²·r1² + r0·r1³ + r1⁴)/20 + h³·(r0² + 3·r0·r1 + 6·r1²)/30),
///
/// and the parallel-axis theorem moves I_base to the centroid: I_c = I_base − m·z_c². For a
/// cylinder (r0 = r1 = r) these are h/2, m·r²/2 and m·(3·r² + h²)/12.
pub(super) fn frustum(m: f64, h: f64, r0: f64, r1: f64) -> (f64, f64, f64) {
    let s2 = r0 * r0 + r0 * r1 + r1 * r1;
    if s2 <= 0.0 || h <= 0.0 {
        return (0.5 * h, 0.0, m * h * h / 12.0);
    }
    let s4 = r0.powi(4) + r0.powi(3) * r1 + r0 * r0 * r1 * r1 + r0 * r1.powi(3) + r1.powi(4);
    let volume = std::f64::consts::PI * h * s2 / 3.0;
    let rho = m / volume;
    let zc = h * (r0 * r0 + 2.0 * r0 * r1 + 3.0 * r1 * r1) / (4.0 * s2);
    let axis = rho * std::f64::consts::PI * h * s4 / 10.0;
    let base =
        rho * std::f64::consts::PI * (h * s4 / 20.0 + h.powi(3) * (r0 * r0 + 3.0 * r0 * r1 + 6.0 * r1 * r1) / 30.0);
    (zc, axis, base - m * zc * zc)
}

/// Adds a point mass `m` at offset `d` from the reference point to the inertia tensor `t`
/// (parallel-axis theorem: m·(|d|²·1 − d·dᵀ)).
fn add_point(t: &mut DMat3, m: f64, d: DVec3) {
    *t += (DMat3::from_diagonal(DVec3::splat(d.length_squared())) - outer(d, d)) * m;
}

fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// Eigen-decomposition of a symmetric 3×3 matrix by cyclic Jacobi rotations (Golub & Van Loan,
/// "Matrix Computations", §8.5): returns (eigenvalues, eigenvectors as the columns of a proper
/// rotation).
pub(super) fn symmetric_eigen(m: DMat3) -> (DVec3, DMat3) {
    let mut a = m.to_cols_array_2d(); // a[col][row]; symmetric, so a[i][j] = a[j][i]
    let mut v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0f64]];
    let scale = a[0][0].abs() + a[1][1].abs() + a[2][2].abs();
    for _ in 0..50 {
        let off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
        if off <= (1e-15 * scale) * (1e-15 * scale) || off == 0.0 {
            break;
        }
        for (p, q) in [(0, 1), (0, 2), (1, 2)] {
            if a[p][q] == 0.0 {
                continue;
            }
            // The rotation in the (p, q) plane that zeroes a_pq: t = tan φ, the smaller root of
            // t² + 2θ·t − 1 = 0, θ = (a_qq − a_pp)/(2·a_pq).
            let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
            let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
            let c = 1.0 / (t * t + 1.0).sqrt();
            let s = t * c;
            for row in &mut a {
                let (kp, kq) = (row[p], row[q]);
                row[p] = c * kp - s * kq;
                row[q] = s * kp + c * kq;
            }
            for k in 0..3 {
                let (pk, qk) = (a[p][k], a[q][k]);
                a[p][k] = c * pk - s * qk;
                a[q][k] = s * pk + c * qk;
            }
            for row in &mut v {
                let (kp, kq) = (row[p], row[q]);
                row[p] = c * kp - s * kq;
                row[q] = s * kp + c * kq;
            }
        }
    }
    // v[k][j] is row k of column j (the same update as a's columns, applied from the right).
    let col = |j: usize| DVec3::new(v[0][j], v[1][j], v[2][j]);
    let (c0, c1, mut c2) = (col(0), col(1), col(2));
    if c0.cross(c1).dot(c2) < 0.0 {
        c2 = -c2;
    }
    (DVec3::new(a[0][0], a[1][1], a[2][2]), DMat3::from_cols(c0, c1, c2))
}

/// A piece of debris: a rigid body made of segments and their leaves.
#[derive(Clone, Debug)]
pub(super) struct Piece {
    /// Order of spawning, over the life of the [`Debris`](super::Debris) (oldest lowest).
    pub serial: u64,
    /// A whole tree torn from its roots.
    pub uprooted: bool,
    /// Forest indices of the piece's segments, parents before children.
    pub segs: Vec<u32>,
    /// Where segment k's base is looked at for ground contacts (its parent is not in the piece).
    pub chain_start: Vec<bool>,
    /// Each segment's base in the body frame \[m\].
    pub base: Vec<Vec3>,
    /// Each segment's orientation in the body frame.
    pub orient: Vec<Quat>,
    /// Each leaf's attachment point in the body frame, the piece's segments' leaves in order.
    pub leaf_pos: Vec<Vec3>,
    /// Each leaf's orientation in the body frame, or empty when leaves are rigid on their
    /// segment (the pose they were taken from had no per-leaf orientations).
    pub leaf_orient: Vec<Quat>,
    /// Total mass \[kg\].
    pub mass: f32,
    /// Principal moments of inertia about the centre of mass [kg·m²].
    pub inertia: Vec3,
    /// Largest distance of any point of the piece (capsules included) from its centre of
    /// mass \[m\].
    pub radius: f32,
    /// Centre of mass in the world \[m\].
    pub x: Vec3,
    /// Orientation of the body frame in the world.
    pub q: Quat,
    /// Velocity of the centre of mass [m/s].
    pub v: Vec3,
    /// Angular momentum about the centre of mass, world frame [kg·m²/s].
    pub l: Vec3,
    /// Resting: not integrated until woken.
    pub asleep: bool,
    /// How long the piece has been in contact and slower than the sleep speed \[s\].
    pub still: f32,
    /// The wind at the centre of mass when it fell asleep [m/s].
    pub sleep_wind: Vec3,
}

impl Piece {
    /// Builds the body of `segs` from their world pose in `pose` and their centres' velocities.
    /// The caller has checked `segs` (non-empty, in range, one tree, parents first) and that
    /// `velocity` is as long.
    pub fn new(forest: &Forest, segs: &[u32], pose: &Pose, velocity: &[Vec3], serial: u64, uprooted: bool) -> Piece {
        let n = segs.len();
        // Total mass and centre of mass: wood at each frustum's centroid, leaves at their
        // attachment points (each leaf of a segment takes an equal share of the segment's leaf
        // mass, mass − wood).
        let mut mass = 0.0f64;
        let mut moment = DVec3::ZERO;
        // (mass, world point) of every wood centroid and leaf; frusta kept apart for their own
        // inertia.
        let mut wood: Vec<(f64, DVec3, DVec3, f64, f64)> = Vec::with_capacity(n);
        let mut leaves: Vec<(f64, DVec3)> = Vec::new();
        for &s in segs {
            let i = s as usize;
            let (l, r0, r1) = (
                forest.seg.length[i] as f64,
                forest.seg.radius_base[i] as f64,
                forest.seg.radius_tip[i] as f64,
            );
            let total = forest.seg.mass[i];
            let w = wood_mass(forest, i).min(total);
            let leaf_mass = (total - w) as f64;
            let axis = (pose.orient[i] * Vec3::Y).as_dvec3();
            let base = pose.base[i].as_dvec3();
            let (zc, ia, it) = frustum(w as f64, l, r0, r1);
            let c = base + axis * zc;
            wood.push((w as f64, c, axis, ia, it));
            mass += total as f64;
            moment += c * w as f64;
            let range = forest.leaves_of(i);
            if range.is_empty() {
                // Leaf mass without leaves to hang it on: at the segment's middle.
                let c = base + axis * (0.5 * l);
                leaves.push((leaf_mass, c));
                moment += c * leaf_mass;
            } else {
                let share = leaf_mass / range.len() as f64;
                for j in range {
                    let p = pose.leaf_pos[j].as_dvec3();
                    leaves.push((share, p));
                    moment += p * share;
                }
            }
        }
        let com = if mass > 0.0 {
            moment / mass
        } else {
            pose.base[segs[0] as usize].as_dvec3()
        };

        // Inertia tensor about the centre of mass in the world frame: each frustum's own
        // (axial and transverse moments turned to its axis: I = I_t·1 + (I_a − I_t)·a·aᵀ),
        // moved to the centre of mass by the parallel-axis theorem; leaves as point masses
        // (a blade's own moment, m·L²/12, is below a thousandth of its moment about the
        // piece's centre for any piece longer than a few leaf lengths).
        let mut tensor = DMat3::ZERO;
        for &(m, c, a, ia, it) in &wood {
            tensor += DMat3::from_diagonal(DVec3::splat(it)) + outer(a, a) * (ia - it);
            add_point(&mut tensor, m, c - com);
        }
        for &(m, p) in &leaves {
            add_point(&mut tensor, m, p - com);
        }
        let (moments, axes) = symmetric_eigen(tensor);
        // A single thin rod has almost no moment about its axis; keep the smallest moment a
        // millionth of the largest so that ω = I⁻¹·L stays finite (it changes nothing
        // visible: the rod's spin about its own axis).
        let floor = moments.max_element().max(1e-12) * 1e-6;
        let inertia = moments.max(DVec3::splat(floor)).as_vec3();
        let q = Quat::from_mat3(&Mat3::from_cols(
            axes.x_axis.as_vec3(),
            axes.y_axis.as_vec3(),
            axes.z_axis.as_vec3(),
        ))
        .normalize();
        let inv = q.inverse();
        let x = com.as_vec3();

        // Body-frame geometry.
        let mut base = Vec::with_capacity(n);
        let mut orient = Vec::with_capacity(n);
        let mut chain_start = Vec::with_capacity(n);
        let mut leaf_pos = Vec::new();
        let mut leaf_orient = Vec::new();
        let turned = !pose.leaf_orient.is_empty();
        let mut radius = 0.0f32;
        let mut in_piece = std::collections::HashSet::with_capacity(n);
        for &s in segs {
            let i = s as usize;
            let b = inv * (pose.base[i] - x);
            let o = (inv * pose.orient[i]).normalize();
            let tip = b + o * Vec3::new(0.0, forest.seg.length[i], 0.0);
            radius = radius
                .max(b.length() + forest.seg.radius_base[i])
                .max(tip.length() + forest.seg.radius_tip[i]);
            base.push(b);
            orient.push(o);
            let p = forest.seg.parent[i];
            chain_start.push(!in_piece.contains(&p));
            in_piece.insert(s);
            for j in forest.leaves_of(i) {
                let lp = inv * (pose.leaf_pos[j] - x);
                radius = radius.max(lp.length());
                leaf_pos.push(lp);
                if turned {
                    leaf_orient.push((inv * pose.leaf_orient[j]).normalize());
                }
            }
        }

        // Velocity: the linear momentum of the segments moving with their centres' velocities
        // over the total mass, and their angular momentum about the centre of mass (each
        // segment as a point mass at its centre moving with it: the segments' spins about
        // their own centres are not known from one velocity each).
        let mut p = DVec3::ZERO;
        let mut ang = DVec3::ZERO;
        for (k, &s) in segs.iter().enumerate() {
            let i = s as usize;
            let m = forest.seg.mass[i] as f64;
            let c = (pose.base[i] + pose.orient[i] * Vec3::new(0.0, 0.5 * forest.seg.length[i], 0.0)).as_dvec3();
            let u = velocity[k].as_dvec3();
            p += u * m;
            ang += (c - com).cross(u) * m;
        }
        let v = if mass > 0.0 { (p / mass).as_vec3() } else { Vec3::ZERO };
        Piece {
            serial,
            uprooted,
            segs: segs.to_vec(),
            chain_start,
            base,
            orient,
            leaf_pos,
            leaf_orient,
            mass: mass as f32,
            inertia,
            radius,
            x,
            q,
            v,
            l: ang.as_vec3(),
            asleep: false,
            still: 0.0,
            sleep_wind: Vec3::ZERO,
        }
    }

    /// Angular velocity for the current orientation: ω = R·I⁻¹·Rᵀ·L.
    #[inline]
    pub fn omega(&self) -> Vec3 {
        omega_at(self.q, self.inertia, self.l)
    }

    /// The world inverse inertia R·I⁻¹·Rᵀ at the current orientation.
    pub fn inv_inertia_world(&self) -> Mat3 {
        let r = Mat3::from_quat(self.q);
        r * Mat3::from_diagonal(self.inertia.recip()) * r.transpose()
    }

    /// The world inertia R·I·Rᵀ at the current orientation.
    pub fn inertia_world(&self) -> Mat3 {
        let r = Mat3::from_quat(self.q);
        r * Mat3::from_diagonal(self.inertia) * r.transpose()
    }

    /// Kinetic energy ½·m·v² + ½·L·ω \[J\].
    pub fn kinetic_energy(&self) -> f64 {
        0.5 * self.mass as f64 * self.v.as_dvec3().length_squared()
            + 0.5 * self.l.as_dvec3().dot(self.omega().as_dvec3())
    }

    /// Turns the body by its angular momentum over `dt`, L held (no torque acts during the
    /// drift): the explicit midpoint rule on the rotation group, q_½ = exp(½·dt·ω(q))·q,
    /// q' = exp(dt·ω(q_½))·q, second order (Buss 2000, "Accurate and efficient simulation of
    /// rigid-body rotations", J. Comp. Phys. 164, the "augmented second-order" family).
    /// The first-order update q' = exp(dt·ω(q))·q lets a tumbling body's energy grow.
    pub fn rotate(&mut self, dt: f32) {
        let w0 = omega_at(self.q, self.inertia, self.l);
        let half = (exp_map(w0 * (0.5 * dt)) * self.q).normalize();
        let w1 = omega_at(half, self.inertia, self.l);
        self.q = (exp_map(w1 * dt) * self.q).normalize();
    }

    /// World base, orientation and tip of segment k.
    #[inline]
    pub fn segment_world(&self, forest: &Forest, k: usize) -> (Vec3, Quat, Vec3) {
        let o = self.q * self.orient[k];
        let b = self.x + self.q * self.base[k];
        let tip = b + o * Vec3::new(0.0, forest.seg.length[self.segs[k] as usize], 0.0);
        (b, o, tip)
    }

    /// Writes the piece's segments and leaves into `pose`.
    pub fn write_pose(&self, forest: &Forest, pose: &mut Pose) {
        let turned = !pose.leaf_orient.is_empty();
        let mut lk = 0;
        for (k, &s) in self.segs.iter().enumerate() {
            let i = s as usize;
            let o = (self.q * self.orient[k]).normalize();
            pose.base[i] = self.x + self.q * self.base[k];
            pose.orient[i] = o;
            for j in forest.leaves_of(i) {
                pose.leaf_pos[j] = self.x + self.q * self.leaf_pos[lk];
                if turned {
                    pose.leaf_orient[j] = match self.leaf_orient.get(lk) {
                        Some(&lo) => (self.q * lo).normalize(),
                        None => pose.leaf_orientation_rigid(forest, i, j),
                    };
                }
                lk += 1;
            }
        }
    }

    /// True when every part of the state is finite.
    pub fn finite(&self) -> bool {
        self.x.is_finite() && self.q.is_finite() && self.v.is_finite() && self.l.is_finite() && self.still.is_finite()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        use crate::dynamics::vec_bytes;
        vec_bytes(&self.segs)
            + vec_bytes(&self.chain_start)
            + vec_bytes(&self.base)
            + vec_bytes(&self.orient)
            + vec_bytes(&self.leaf_pos)
            + vec_bytes(&self.leaf_orient)
    }
}

/// ω = R·I⁻¹·Rᵀ·L for orientation `q`, principal moments `inertia`.
#[inline]
pub(super) fn omega_at(q: Quat, inertia: Vec3, l: Vec3) -> Vec3 {
    q * ((q.inverse() * l) / inertia)
}

/// The rotation by the vector `phi` (axis phi/|phi|, angle |phi|).
#[inline]
pub(super) fn exp_map(phi: Vec3) -> Quat {
    let angle = phi.length();
    if angle < 1e-12 {
        // exp(φ) ≈ (φ/2, 1) to second order, normalised by the caller.
        Quat::from_xyzw(0.5 * phi.x, 0.5 * phi.y, 0.5 * phi.z, 1.0)
    } else {
        Quat::from_axis_angle(phi / angle, angle)
    }
}
