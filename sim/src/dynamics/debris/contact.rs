//! Contacts of a piece of debris with the ground (the plane y = 0) and the sphere colliders,
//! resolved by sequential impulses (Catto 2005, "Iterative Dynamics with Temporal Coherence",
//! GDC; Catto 2006, "Fast and Simple Physics using Sequential Impulses"), with Coulomb
//! friction and restitution, then a position projection.
//!
//! Geometry: every segment is a tapered capsule, the convex hull of a sphere of radius
//! `radius_base` at its base and one of `radius_tip` at its tip, except where the piece was cut:
//! the base of a segment whose parent is not in the piece (the break, or a tree's root) is a
//! flat disc of radius `radius_base` across the axis, so that a tree torn from its roots
//! starts with its root's end on the ground rather than half a trunk's width in it. The
//! lowest point is at one of the two ends, so the ground's contacts are looked for at every
//! segment's tip and at a cut base (elsewhere the base is the parent's tip, whose sphere, the
//! pipe model's parent tip radius, is at least as large).
//! A sphere collider meets the axis point nearest its centre, where the capsule's radius is
//! interpolated along the axis. Leaves do not collide: blades are paper-thin and bend; they
//! pass through the ground and the spheres, as they do in the standing trees' models.
//!
//! Invariants: the impulses only ever push (accumulated normal impulse ≥ 0); the friction
//! impulse lies in the Coulomb cone (|λ_t| ≤ μ·λ_n, the cone, not a box); after
//! [`project`] no capsule's lowest point lies below the ground (the projection lifts the whole
//! piece by the deepest penetration, which changes no velocity and so adds no energy).
//!
//! Contacts ahead of time ("speculative", Catto's later talks): a capsule end within the
//! margin the piece can travel in a step is a contact whose normal velocity may approach up
//! to the gap over the step, −gap/dt, so a fast piece stops at the ground instead of passing
//! through it between two steps. Restitution: a contact approaching faster than
//! [`RESTITUTION_THRESHOLD`] (Box2D's `b2_velocityThreshold`) that would reach the surface within
//! the step leaves it at e times its approach speed; slower contacts do not bounce, which
//! keeps resting contacts from jittering. A bounce found ahead of time (the surface within
//! the step's reach, up to |v|·dt away) moves the piece back by (1 + e) times the gap, so it
//! leaves from the surface rather than from where the step found it; and the bounce takes
//! the approach speed before the step's gravity, which then acts on the way up again. A rod
//! dropped flat from 1 m with e = 0.5 bounces to 0.243 m, e²·h = 0.25 m (0.312 m without
//! these two).

use glam::{Mat3, Vec3};

use crate::collider::{Motion, SphereCollider};
use crate::forest::Forest;

use super::body::Piece;

/// Approach speed below which a contact does not bounce \[m/s\] (Box2D's 1 m/s).
pub(super) const RESTITUTION_THRESHOLD: f32 = 1.0;

/// One contact point of a piece.
#[derive(Clone, Copy, Debug)]
pub(super) struct Contact {
    /// Contact point relative to the centre of mass \[m\].
    r: Vec3,
    /// Normal out of the surface into the piece.
    n: Vec3,
    /// Tangents (n, t1, t2 orthonormal).
    t1: Vec3,
    t2: Vec3,
    /// Velocity of the surface at the contact [m/s] (a moving sphere's).
    surface: Vec3,
    /// Gap (negative: penetration) \[m\].
    gap: f32,
    /// r × n, r × t1, r × t2 pre-multiplied by the world inverse inertia.
    wn: Vec3,
    wt1: Vec3,
    wt2: Vec3,
    /// Effective masses along n, t1, t2.
    kn: f32,
    kt1: f32,
    kt2: f32,
    /// Normal velocity the solve aims for.
    target: f32,
    /// Accumulated impulses.
    jn: f32,
    jt1: f32,
    jt2: f32,
}

/// What the contacts did in a step.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Outcome {
    /// Some contact pushed (a positive normal impulse).
    pub touching: bool,
    /// Where a bounce that began short of the surface puts the piece back (see [`solve`]).
    pub bounce_shift: Vec3,
}

/// The settings the solve needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Settings {
    pub friction: f32,
    pub restitution: f32,
    pub iterations: u32,
    pub dt: f32,
    /// Gravity \[m/s²\] (down −y), which the step's velocity already took.
    pub gravity: f32,
}

/// Velocity of a sphere collider's centre at its current place [m/s].
pub(super) fn sphere_velocity(c: &SphereCollider) -> Vec3 {
    match c.motion {
        Motion::Static => Vec3::ZERO,
        Motion::Linear { velocity, .. } => velocity,
        Motion::Orbit { center, period, .. } => {
            // center + R·(cos a, 0, sin a), a = 2π·t/T: its derivative is 2π/T·(−dz, 0, dx).
            let d = c.center - center;
            Vec3::new(-d.z, 0.0, d.x) * (std::f32::consts::TAU / period)
        }
    }
}

/// The capsule radius of segment `i` at `t` along its axis (0 base, 1 tip).
#[inline]
fn radius_at(forest: &Forest, i: usize, t: f32) -> f32 {
    forest.seg.radius_base[i] + (forest.seg.radius_tip[i] - forest.seg.radius_base[i]) * t
}

/// Finds the piece's contacts within `margin` of touching, into `out` (for a moving sphere,
/// within `margin` plus the distance the sphere moves in `dt`).
pub(super) fn detect(
    p: &Piece,
    forest: &Forest,
    colliders: &[SphereCollider],
    margin: f32,
    dt: f32,
    out: &mut Vec<Contact>,
) {
    out.clear();
    let blank = |point: Vec3, n: Vec3, gap: f32, surface: Vec3| Contact {
        r: point - p.x,
        n,
        t1: Vec3::ZERO,
        t2: Vec3::ZERO,
        surface,
        gap,
        wn: Vec3::ZERO,
        wt1: Vec3::ZERO,
        wt2: Vec3::ZERO,
        kn: 0.0,
        kt1: 0.0,
        kt2: 0.0,
        target: 0.0,
        jn: 0.0,
        jt1: 0.0,
        jt2: 0.0,
    };
    let ground = p.x.y - p.radius < margin;
    let reach = |c: &SphereCollider| margin + sphere_velocity(c).length() * dt;
    let near = |c: &SphereCollider| (c.center - p.x).length() < p.radius + c.radius + reach(c);
    if !ground && !colliders.iter().any(near) {
        return;
    }
    for k in 0..p.segs.len() {
        let i = p.segs[k] as usize;
        let (base, _, tip) = p.segment_world(forest, k);
        if ground {
            let r1 = forest.seg.radius_tip[i];
            if tip.y - r1 < margin {
                out.push(blank(tip - Vec3::Y * r1, Vec3::Y, tip.y - r1, Vec3::ZERO));
            }
            if p.chain_start[k] {
                let low = cut_lowest(base, tip, forest.seg.radius_base[i]);
                if low.y < margin {
                    out.push(blank(low, Vec3::Y, low.y, Vec3::ZERO));
                }
            }
        }
        for s in colliders.iter().filter(|c| near(c)) {
            let (point, n, gap) = sphere_gap(s, base, tip, forest, i);
            if gap < reach(s) {
                out.push(blank(point, n, gap, sphere_velocity(s)));
            }
        }
    }
}

/// The lowest point of the flat disc of radius `r` across the axis base → tip at `base`.
#[inline]
fn cut_lowest(base: Vec3, tip: Vec3, r: f32) -> Vec3 {
    let a = (tip - base).normalize_or(Vec3::Y);
    // Straight down, less its part along the axis: the disc's steepest way down.
    let down = Vec3::NEG_Y + a * a.y;
    let len = down.length();
    if len > 1e-6 {
        base + down * (r / len)
    } else {
        base
    }
}

/// The nearest point of segment `i`'s capsule (base..tip) to sphere `s`: (that point on the
/// capsule's surface, the normal from the sphere towards it, the gap). The sphere meets the
/// capsule nearest its centre; the capsule's radius there is interpolated along the axis.
/// (`SphereCollider::contact` answers a different question for the standing trees: where a
/// tip inside a sphere should turn to about its base.)
#[inline]
fn sphere_gap(s: &SphereCollider, base: Vec3, tip: Vec3, forest: &Forest, i: usize) -> (Vec3, Vec3, f32) {
    let axis = tip - base;
    let len2 = axis.length_squared();
    let t = if len2 > 0.0 {
        ((s.center - base).dot(axis) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let closest = base + axis * t;
    let r = radius_at(forest, i, t);
    let offset = closest - s.center;
    let d = offset.length();
    let n = if d > 1e-9 {
        offset / d
    } else {
        // The centre on the axis: out across the segment.
        axis.any_orthonormal_vector()
    };
    (closest - n * r, n, d - s.radius - r)
}

/// Resolves the contacts in `cs` by sequential impulses, changing the piece's velocity and
/// angular momentum.
pub(super) fn solve(p: &mut Piece, cs: &mut [Contact], set: &Settings) -> Outcome {
    if cs.is_empty() {
        return Outcome::default();
    }
    let inv_m = 1.0 / p.mass;
    let iw: Mat3 = p.inv_inertia_world();
    let mut v = p.v;
    let mut w = p.omega();
    let mut shift = Vec3::ZERO;
    let mut shift_gap = 0.0f32;
    for c in cs.iter_mut() {
        let (t1, t2) = c.n.any_orthonormal_pair();
        c.t1 = t1;
        c.t2 = t2;
        let an = c.r.cross(c.n);
        let a1 = c.r.cross(t1);
        let a2 = c.r.cross(t2);
        c.wn = iw * an;
        c.wt1 = iw * a1;
        c.wt2 = iw * a2;
        c.kn = 1.0 / (inv_m + an.dot(c.wn));
        c.kt1 = 1.0 / (inv_m + a1.dot(c.wt1));
        c.kt2 = 1.0 / (inv_m + a2.dot(c.wt2));
        let vn0 = (v + w.cross(c.r) - c.surface).dot(c.n);
        let reaches = vn0 * set.dt + c.gap < 0.0;
        c.target = if vn0 < -RESTITUTION_THRESHOLD && reaches {
            if c.gap > shift_gap {
                // A point a gap short of the surface moving at vn0 meets it after gap/|vn0|
                // and leaves at e·|vn0|: it ends the step at e·(|vn0|·dt − gap), where the
                // drift with the bounce velocity puts it at gap + e·|vn0|·dt. The piece moves
                // back by the difference, (1 + e)·gap, so that it bounces from the surface.
                shift_gap = c.gap;
                shift = -c.n * ((1.0 + set.restitution) * c.gap);
            }
            // The approach at the impact is the step's start's (this step's gravity came after
            // it), vn0 + g_n·dt; after the bounce gravity takes g_n·dt off again.
            let g_n = set.gravity * c.n.y * set.dt;
            (-set.restitution * (vn0 + g_n) - g_n).max(0.0)
        } else if c.gap > 0.0 {
            -c.gap / set.dt
        } else {
            0.0
        };
    }
    for _ in 0..set.iterations {
        for c in cs.iter_mut() {
            // Normal: push until the normal velocity reaches the target, never pull.
            let vrel = v + w.cross(c.r) - c.surface;
            let dj = (c.target - vrel.dot(c.n)) * c.kn;
            let jn = (c.jn + dj).max(0.0);
            let dj = jn - c.jn;
            c.jn = jn;
            v += c.n * (dj * inv_m);
            w += c.wn * dj;
            // Friction: stop the sliding, within the cone |λ_t| ≤ μ·λ_n.
            let vrel = v + w.cross(c.r) - c.surface;
            let mut j1 = c.jt1 - vrel.dot(c.t1) * c.kt1;
            let mut j2 = c.jt2 - vrel.dot(c.t2) * c.kt2;
            let limit = set.friction * c.jn;
            let mag = (j1 * j1 + j2 * j2).sqrt();
            if mag > limit {
                let s = if mag > 0.0 { limit / mag } else { 0.0 };
                j1 *= s;
                j2 *= s;
            }
            let (d1, d2) = (j1 - c.jt1, j2 - c.jt2);
            c.jt1 = j1;
            c.jt2 = j2;
            v += (c.t1 * d1 + c.t2 * d2) * inv_m;
            w += c.wt1 * d1 + c.wt2 * d2;
        }
    }
    p.v = v;
    p.l = p.inertia_world() * w;
    Outcome {
        touching: cs.iter().any(|c| c.jn > 0.0),
        bounce_shift: shift,
    }
}

/// Moves the piece out of the spheres and then above the ground, by translation only. Returns
/// the lowest point of its capsules after it, relative to the ground \[m\] (≥ 0 unless the piece
/// was not finite).
pub(super) fn project(p: &mut Piece, forest: &Forest, colliders: &[SphereCollider]) -> f32 {
    for s in colliders {
        if (s.center - p.x).length() >= p.radius + s.radius {
            continue;
        }
        // Push out along the deepest contact's normal, a few passes (a push can reveal another).
        for _ in 0..4 {
            let mut deepest: Option<(f32, Vec3)> = None;
            for k in 0..p.segs.len() {
                let (base, _, tip) = p.segment_world(forest, k);
                let (_, n, gap) = sphere_gap(s, base, tip, forest, p.segs[k] as usize);
                if gap < deepest.map_or(0.0, |d| d.0) {
                    deepest = Some((gap, n));
                }
            }
            match deepest {
                Some((gap, n)) => p.x -= n * gap,
                None => break,
            }
        }
    }
    let low = lowest(p, forest);
    if low < 0.0 {
        p.x.y -= low;
        return 0.0;
    }
    low
}

/// The height of the lowest point of the piece's capsules (cut bases flat) above the ground
/// \[m\].
pub(super) fn lowest(p: &Piece, forest: &Forest) -> f32 {
    let mut low = f32::INFINITY;
    for k in 0..p.segs.len() {
        let i = p.segs[k] as usize;
        let (base, _, tip) = p.segment_world(forest, k);
        let r0 = forest.seg.radius_base[i];
        let base_low = if p.chain_start[k] {
            cut_lowest(base, tip, r0).y
        } else {
            base.y - r0
        };
        low = low.min(tip.y - forest.seg.radius_tip[i]).min(base_low);
    }
    low
}

/// Bytes of a contact, for `heap_bytes`.
pub(super) const CONTACT_BYTES: usize = size_of::<Contact>();
