//! Exact triangle–triangle intersection and segment–segment distance, the narrow phase of the
//! collision tests (Chen 2011 tests leaf triangles against each other and stem centrelines
//! against each other).
//!
//! - `triangles_intersect` is Möller's interval-overlap test (Tomas Möller 1997, "A Fast
//!   Triangle-Triangle Intersection Test", Journal of Graphics Tools 2(2)), computed in f64.
//!   Coplanar triangles are tested in 2D on the plane's dominant axis (edge–edge crossings and
//!   point-in-triangle, as in Möller's paper); segment crossings use the orientation test of
//!   Cormen, Leiserson, Rivest and Stein, "Introduction to Algorithms", §33.1.
//! - `segment_segment_closest` follows Ericson 2005, "Real-Time Collision Detection", §5.1.9,
//!   also in f64.
//!
//! Invariants and conventions:
//! - triangles are closed: touching (a shared vertex, a vertex on an edge or a face) counts as
//!   intersecting. Signed distances within a relative 1e-9 of a plane count as on it, and
//!   intervals and point-in-triangle tests accept a relative 1e-12 slack, so exactly touching
//!   f32 input is reported as touching despite rounding;
//! - a triangle is degenerate when twice its area is at most 1e-7 times its longest edge
//!   squared (its height is under 1e-7 of its length, below f32 resolution). A degenerate
//!   triangle is tested as the union of its three edges, a zero-size one as a point; two
//!   degenerate ones touch when their edges come within 1e-9 of their lengths of each other;
//! - every function returns a definite result and never loops or panics: triangles with a
//!   non-finite coordinate intersect nothing, and segment distances with a NaN coordinate are
//!   NaN. Finite f32 input cannot overflow the f64 arithmetic (at most cubic products).

use glam::{DVec2, DVec3, Vec3};

/// Signed distances to a plane within this fraction of `|n| · |p - origin|` are snapped to 0.
const PLANE_EPS: f64 = 1e-9;
/// Relative slack of interval overlaps and 2D point-in-triangle tests.
const SLACK: f64 = 1e-12;
/// A triangle with `|n| <= DEGENERATE · longest_edge²` (n the unnormalised normal) is degenerate.
const DEGENERATE: f64 = 1e-7;
/// Degenerate triangles touch when their edges are within this fraction of their sizes.
const TOUCH: f64 = 1e-9;

/// Whether triangles `a` and `b` share at least one point (closed triangles; touching counts).
///
/// Möller 1997 for proper triangles; degenerate ones (zero area: a segment or a point) are
/// tested as their edges (see the module documentation). False if any coordinate is NaN or
/// infinite.
pub fn triangles_intersect(a: &[Vec3; 3], b: &[Vec3; 3]) -> bool {
    if !a.iter().chain(b).all(|p| p.is_finite()) {
        return false;
    }
    let a = a.map(|p| p.as_dvec3());
    let b = b.map(|p| p.as_dvec3());
    let (na, la) = normal_and_longest(&a);
    let (nb, lb) = normal_and_longest(&b);
    let a_flat = na.length() <= DEGENERATE * la * la;
    let b_flat = nb.length() <= DEGENERATE * lb * lb;
    match (a_flat, b_flat) {
        (false, false) => moller(&a, na, &b, nb),
        (true, false) => edges(&a, la).any(|(p, q)| segment_hits_triangle(p, q, &b, nb)),
        (false, true) => edges(&b, lb).any(|(p, q)| segment_hits_triangle(p, q, &a, na)),
        (true, true) => {
            let tol = TOUCH * (la + lb);
            edges(&a, la).any(|(p0, p1)| {
                edges(&b, lb).any(|(q0, q1)| {
                    let (s, t) = closest_params(p0, p1, q0, q1);
                    (p0 + (p1 - p0) * s).distance_squared(q0 + (q1 - q0) * t) <= tol * tol
                })
            })
        }
    }
}

/// Squared distance between segments `[p0, p1]` and `[q0, q1]` and the parameters
/// `(s, t) ∈ [0,1]²` of the closest points `p0 + s (p1 - p0)` and `q0 + t (q1 - q0)`:
/// returns `(distance², s, t)`. Ericson 2005, §5.1.9, computed in f64; a segment of zero length
/// is a point, and for parallel segments one of the closest pairs is returned. NaN input gives
/// a NaN distance.
pub fn segment_segment_closest(p0: Vec3, p1: Vec3, q0: Vec3, q1: Vec3) -> (f32, f32, f32) {
    let [p0, p1, q0, q1] = [p0, p1, q0, q1].map(|v| v.as_dvec3());
    let (s, t) = closest_params(p0, p1, q0, q1);
    let d2 = (p0 + (p1 - p0) * s).distance_squared(q0 + (q1 - q0) * t);
    (d2 as f32, s as f32, t as f32)
}

/// Distance between segments `[p0, p1]` and `[q0, q1]` (see `segment_segment_closest`).
pub fn segment_distance(p0: Vec3, p1: Vec3, q0: Vec3, q1: Vec3) -> f32 {
    segment_segment_closest(p0, p1, q0, q1).0.sqrt()
}

/// The closest-point parameters of two segments, Ericson 2005 §5.1.9 (`ClosestPtSegmentSegment`).
fn closest_params(p0: DVec3, p1: DVec3, q0: DVec3, q1: DVec3) -> (f64, f64) {
    let d1 = p1 - p0;
    let d2 = q1 - q0;
    let r = p0 - q0;
    let a = d1.length_squared();
    let e = d2.length_squared();
    let f = d2.dot(r);
    // `clamp` cannot panic with constant bounds; a NaN argument stays NaN.
    let unit = |x: f64| x.clamp(0.0, 1.0);
    if a <= 0.0 && e <= 0.0 {
        return (0.0, 0.0);
    }
    if a <= 0.0 {
        return (0.0, unit(f / e));
    }
    let c = d1.dot(r);
    if e <= 0.0 {
        return (unit(-c / a), 0.0);
    }
    let b = d1.dot(d2);
    let denom = a * e - b * b;
    // Parallel (up to rounding): any s works; take 0 and let t's clamp fix it below.
    let mut s = if denom > 1e-14 * a * e {
        unit((b * f - c * e) / denom)
    } else {
        0.0
    };
    let mut t = (b * s + f) / e;
    if t < 0.0 {
        t = 0.0;
        s = unit(-c / a);
    } else if t > 1.0 {
        t = 1.0;
        s = unit((b - c) / a);
    }
    (s, t)
}

/// The unnormalised normal `(v1 - v0) × (v2 - v0)` and the longest edge's length.
fn normal_and_longest(t: &[DVec3; 3]) -> (DVec3, f64) {
    let n = (t[1] - t[0]).cross(t[2] - t[0]);
    let l2 = t[0]
        .distance_squared(t[1])
        .max(t[1].distance_squared(t[2]))
        .max(t[2].distance_squared(t[0]));
    (n, l2.sqrt())
}

/// The edges of a degenerate triangle: its three edges, or its single point once if it has no
/// length.
fn edges(t: &[DVec3; 3], longest: f64) -> impl Iterator<Item = (DVec3, DVec3)> + '_ {
    let count = if longest > 0.0 { 3 } else { 1 };
    (0..count).map(move |i| (t[i], t[(i + 1) % 3]))
}

/// Signed distances (times `|n|`) of `pts` to the plane through `origin` with normal `n`,
/// snapped to 0 within `PLANE_EPS` relative.
fn plane_distances(origin: DVec3, n: DVec3, pts: &[DVec3; 3]) -> [f64; 3] {
    let nl = n.length();
    pts.map(|p| {
        let d = n.dot(p - origin);
        if d.abs() <= PLANE_EPS * nl * (p - origin).length() {
            0.0
        } else {
            d
        }
    })
}

/// Whether all three distances are strictly on one side.
fn one_side(d: &[f64; 3]) -> bool {
    (d[0] > 0.0 && d[1] > 0.0 && d[2] > 0.0) || (d[0] < 0.0 && d[1] < 0.0 && d[2] < 0.0)
}

/// Möller's test for two non-degenerate triangles with normals `na`, `nb`.
fn moller(a: &[DVec3; 3], na: DVec3, b: &[DVec3; 3], nb: DVec3) -> bool {
    // B against A's plane, then A against B's plane: all on one side rejects.
    let db = plane_distances(a[0], na, b);
    if one_side(&db) {
        return false;
    }
    let da = plane_distances(b[0], nb, a);
    if one_side(&da) {
        return false;
    }
    // B lies in A's plane (or A in B's): coplanar, tested in 2D on that plane.
    if db == [0.0; 3] {
        return coplanar(a, b, na);
    }
    if da == [0.0; 3] {
        return coplanar(a, b, nb);
    }
    // Both triangles cross the line where the planes meet; compare their intervals on it,
    // projected on the line direction's dominant axis (Möller's simplification).
    let dir = na.cross(nb);
    if dir == DVec3::ZERO {
        // Parallel to working precision yet not separated: the planes coincide up to rounding.
        return coplanar(a, b, na);
    }
    let axis = dominant_axis(dir);
    let (a0, a1) = interval(a.map(|p| p[axis]), da);
    let (b0, b1) = interval(b.map(|p| p[axis]), db);
    let lo = a0.max(b0);
    let hi = a1.min(b1);
    let scale = a0.abs().max(a1.abs()).max(b0.abs()).max(b1.abs());
    lo <= hi + SLACK * scale
}

/// The interval `(lo, hi)` a triangle covers on the planes' common line, from the projections
/// `p` of its vertices and their signed distances `d` to the other plane (Möller's
/// `COMPUTE_INTERVALS`): the vertex alone on its side is joined to the other two where the
/// edges cross the plane. The caller guarantees `d` is not all zero or all of one sign; every
/// denominator below is then nonzero.
fn interval(p: [f64; 3], d: [f64; 3]) -> (f64, f64) {
    let alone = if d[0] * d[1] > 0.0 {
        2
    } else if d[0] * d[2] > 0.0 {
        1
    } else if d[1] * d[2] > 0.0 || d[0] != 0.0 {
        0
    } else if d[1] != 0.0 {
        1
    } else if d[2] != 0.0 {
        2
    } else {
        // All on the plane: cannot happen for the callers, but stay definite.
        return (p[0].min(p[1]).min(p[2]), p[0].max(p[1]).max(p[2]));
    };
    let (u, w) = ((alone + 1) % 3, (alone + 2) % 3);
    let cross = |o: usize| p[alone] + (p[o] - p[alone]) * (d[alone] / (d[alone] - d[o]));
    let (t0, t1) = (cross(u), cross(w));
    (t0.min(t1), t0.max(t1))
}

/// The index (0, 1 or 2) of the largest absolute component.
fn dominant_axis(v: DVec3) -> usize {
    let a = v.abs();
    if a.x >= a.y && a.x >= a.z {
        0
    } else if a.y >= a.z {
        1
    } else {
        2
    }
}

/// Drops coordinate `axis`, projecting onto the other two.
fn project(p: DVec3, axis: usize) -> DVec2 {
    match axis {
        0 => DVec2::new(p.y, p.z),
        1 => DVec2::new(p.x, p.z),
        _ => DVec2::new(p.x, p.y),
    }
}

/// Two coplanar triangles, projected along the dominant axis of their plane's normal `n`:
/// they meet iff an edge of one crosses an edge of the other or one contains a vertex of the
/// other (Möller 1997, `coplanar_tri_tri`).
fn coplanar(a: &[DVec3; 3], b: &[DVec3; 3], n: DVec3) -> bool {
    let axis = dominant_axis(n);
    let a = a.map(|p| project(p, axis));
    let b = b.map(|p| project(p, axis));
    let edge_cross = (0..3).any(|i| (0..3).any(|j| segments_cross_2d(a[i], a[(i + 1) % 3], b[j], b[(j + 1) % 3])));
    edge_cross || point_in_triangle_2d(a[0], &b, 0.0) || point_in_triangle_2d(b[0], &a, 0.0)
}

/// Twice the signed area of `(a, b, c)`: positive when counter-clockwise.
fn orient(a: DVec2, b: DVec2, c: DVec2) -> f64 {
    (b - a).perp_dot(c - a)
}

/// Whether closed 2D segments `[p1, p2]` and `[p3, p4]` share a point (CLRS §33.1,
/// `SEGMENTS-INTERSECT`; zero-length segments work as points).
fn segments_cross_2d(p1: DVec2, p2: DVec2, p3: DVec2, p4: DVec2) -> bool {
    let d1 = orient(p3, p4, p1);
    let d2 = orient(p3, p4, p2);
    let d3 = orient(p1, p2, p3);
    let d4 = orient(p1, p2, p4);
    let straddles = |x: f64, y: f64| (x > 0.0 && y < 0.0) || (x < 0.0 && y > 0.0);
    // With the orientation zero, `q` is on the line through `a`, `b`: on the segment iff in its box.
    let on = |a: DVec2, b: DVec2, q: DVec2| q.cmpge(a.min(b)).all() && q.cmple(a.max(b)).all();
    (straddles(d1, d2) && straddles(d3, d4))
        || (d1 == 0.0 && on(p3, p4, p1))
        || (d2 == 0.0 && on(p3, p4, p2))
        || (d3 == 0.0 && on(p1, p2, p3))
        || (d4 == 0.0 && on(p1, p2, p4))
}

/// Whether `p` lies in the closed 2D triangle `t` (either orientation), each edge function
/// allowed a slack of `slack`.
fn point_in_triangle_2d(p: DVec2, t: &[DVec2; 3], slack: f64) -> bool {
    let w = [orient(t[0], t[1], p), orient(t[1], t[2], p), orient(t[2], t[0], p)];
    w.iter().all(|&x| x >= -slack) || w.iter().all(|&x| x <= slack)
}

/// Whether the closed segment `[p, q]` (possibly a point) meets the non-degenerate triangle `t`
/// with unnormalised normal `n`.
fn segment_hits_triangle(p: DVec3, q: DVec3, t: &[DVec3; 3], n: DVec3) -> bool {
    let [dp, dq, _] = plane_distances(t[0], n, &[p, q, t[0]]);
    if (dp > 0.0 && dq > 0.0) || (dp < 0.0 && dq < 0.0) {
        return false;
    }
    let axis = dominant_axis(n);
    let t2 = t.map(|v| project(v, axis));
    if dp == 0.0 && dq == 0.0 {
        // In the plane: an endpoint inside, or a crossing with an edge.
        let (p2, q2) = (project(p, axis), project(q, axis));
        return point_in_triangle_2d(p2, &t2, 0.0) || (0..3).any(|i| segments_cross_2d(p2, q2, t2[i], t2[(i + 1) % 3]));
    }
    // One crossing point (dp != dq here, as they differ in sign or one is zero).
    let x = p + (q - p) * (dp / (dp - dq));
    let longest = t[0].distance(t[1]).max(t[1].distance(t[2])).max(t[2].distance(t[0]));
    let slack = SLACK * longest * (longest + (x - t[0]).length());
    point_in_triangle_2d(project(x, axis), &t2, slack)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn v(x: f32, y: f32, z: f32) -> Vec3 {
        Vec3::new(x, y, z)
    }

    /// `triangles_intersect` both ways round and with the vertices permuted; all must agree.
    fn hit(a: [Vec3; 3], b: [Vec3; 3]) -> bool {
        let r = triangles_intersect(&a, &b);
        for (x, y) in [(a, b), (b, a)] {
            for rot in 0..3 {
                let x2 = [x[rot], x[(rot + 1) % 3], x[(rot + 2) % 3]];
                let y2 = [y[(rot + 1) % 3], y[rot], y[(rot + 2) % 3]];
                assert_eq!(
                    triangles_intersect(&x2, &y2),
                    r,
                    "order changes the answer: {a:?} {b:?}"
                );
            }
        }
        r
    }

    /// Reference segment–triangle test by a barycentric solve (Cramer's rule for
    /// `p + s (q - p) = t0 + u (t1 - t0) + v (t2 - t0)`): the smallest of s, 1 - s, u, v and
    /// 1 - u - v, which is >= 0 iff they meet; None when the segment is parallel to the plane.
    fn reference_slack(p: DVec3, q: DVec3, t: &[DVec3; 3]) -> Option<f64> {
        let (e1, e2, d) = (t[1] - t[0], t[2] - t[0], q - p);
        let det = DVec3::dot(-d, e1.cross(e2));
        if det.abs() < 1e-9 * d.length() * e1.length() * e2.length() {
            return None;
        }
        let r = p - t[0];
        let s = r.dot(e1.cross(e2)) / det;
        let u = (-d).dot(r.cross(e2)) / det;
        let v = (-d).dot(e1.cross(r)) / det;
        Some(s.min(1.0 - s).min(u).min(v).min(1.0 - u - v))
    }

    #[test]
    fn random_pairs_match_the_edge_crossing_reference() {
        let mut rng = Rng::new(0x7217);
        let (mut hits, mut misses, mut skipped) = (0, 0, 0);
        for _ in 0..100_000 {
            let mut tri = || [(); 3].map(|_| v(rng.unit(), rng.unit(), rng.unit()));
            let (a, b) = (tri(), tri());
            let (da, db) = (a.map(|p| p.as_dvec3()), b.map(|p| p.as_dvec3()));
            let (na, nb) = (normal_and_longest(&da).0, normal_and_longest(&db).0);
            // Near-coplanar or sliver pairs are left out of the comparison.
            if na.cross(nb).length() < 1e-2 * na.length() * nb.length() || na.length() < 1e-3 || nb.length() < 1e-3 {
                skipped += 1;
                continue;
            }
            let mut best = f64::NEG_INFINITY;
            let mut parallel = false;
            for (x, y) in [(&da, &db), (&db, &da)] {
                for i in 0..3 {
                    match reference_slack(x[i], x[(i + 1) % 3], y) {
                        Some(s) => best = best.max(s),
                        None => parallel = true,
                    }
                }
            }
            if parallel || best.abs() < 1e-7 {
                skipped += 1;
                continue;
            }
            let expected = best >= 0.0;
            assert_eq!(triangles_intersect(&a, &b), expected, "{a:?} {b:?} (slack {best})");
            assert_eq!(triangles_intersect(&b, &a), expected, "{b:?} {a:?} (slack {best})");
            if expected {
                hits += 1;
            } else {
                misses += 1;
            }
        }
        let msg = format!("{hits} intersecting, {misses} disjoint, {skipped} skipped");
        assert!(hits > 5_000 && misses > 5_000, "{msg}");
        assert!(skipped < 5_000, "{msg}");
    }

    #[test]
    fn hand_made_cases() {
        let t = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)];
        let shift = |t: [Vec3; 3], d: Vec3| t.map(|p| p + d);
        // Identical.
        assert!(hit(t, t));
        // Sharing one vertex, not coplanar (and a triangle leaning away from it).
        assert!(hit(t, [v(0.0, 0.0, 0.0), v(-1.0, 0.0, 1.0), v(0.0, -1.0, 1.0)]));
        assert!(hit(t, [v(1.0, 0.0, 0.0), v(2.0, 0.0, 1.0), v(2.0, 1.0, -1.0)]));
        // Sharing an edge, not coplanar.
        assert!(hit(t, [v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0), v(1.0, 1.0, 1.0)]));
        // A vertex touching the interior of the face, the rest above it.
        assert!(hit(t, [v(0.25, 0.25, 0.0), v(0.5, 0.5, 1.0), v(0.0, 0.5, 1.0)]));
        // Coplanar: overlapping, disjoint, one inside the other, touching at a vertex.
        assert!(hit(t, [v(0.5, 0.5, 0.0), v(-0.5, 0.5, 0.0), v(0.5, -0.5, 0.0)]));
        assert!(!hit(t, [v(0.6, 0.6, 0.0), v(1.6, 0.6, 0.0), v(0.6, 1.6, 0.0)]));
        assert!(hit(t, [v(0.1, 0.1, 0.0), v(0.3, 0.1, 0.0), v(0.1, 0.3, 0.0)]));
        assert!(hit(t, [v(1.0, 0.0, 0.0), v(2.0, 0.0, 0.0), v(2.0, 1.0, 0.0)]));
        assert!(!hit(t, [v(1.0, 0.1, 0.0), v(2.0, 0.0, 0.0), v(2.0, 1.0, 0.0)]));
        // Piercing through the interior; crossing the plane beside the triangle.
        assert!(hit(t, [v(0.2, 0.2, -1.0), v(0.3, 0.2, 1.0), v(0.2, 0.3, 1.0)]));
        assert!(!hit(t, [v(0.8, 0.8, -1.0), v(0.9, 0.8, 1.0), v(0.8, 0.9, 1.0)]));
        // Both cross each other's planes but miss (the intervals do not overlap).
        assert!(!hit(t, [v(2.0, 0.5, -1.0), v(2.0, 0.5, 1.0), v(3.0, 0.5, 0.0)]));
        // An edge lying in the other's plane beside it, the apex above: the intervals on the
        // common line are that edge and the triangle's chord, which do not meet.
        assert!(!hit(t, [v(2.0, 0.5, 0.0), v(3.0, 0.5, 0.0), v(0.2, 1.5, 1.0)]));
        assert!(hit(t, [v(0.5, 0.5, 0.0), v(3.0, 0.5, 0.0), v(0.2, 1.5, 1.0)]));
        // Parallel planes 1e-3 apart; far away.
        assert!(!hit(t, shift(t, v(0.0, 0.0, 1e-3))));
        assert!(!hit(t, shift(t, v(0.1, 0.1, -1e-3))));
        assert!(!hit(t, shift(t, v(100.0, -50.0, 3.0))));
        assert!(!hit(t, shift(t, v(1e6, 0.0, 0.0))));
        // Degenerate: a point on / off the triangle, on its edge.
        let point = |p: Vec3| [p, p, p];
        assert!(hit(point(v(0.25, 0.25, 0.0)), t));
        assert!(hit(point(v(0.5, 0.0, 0.0)), t));
        assert!(!hit(point(v(0.25, 0.25, 0.01)), t));
        assert!(!hit(point(v(0.6, 0.6, 0.0)), t));
        // Degenerate: a segment piercing, missing, lying across in the plane, lying outside.
        let seg = |p: Vec3, q: Vec3| [p, q, (p + q) * 0.5];
        assert!(hit(seg(v(0.2, 0.2, -1.0), v(0.2, 0.2, 1.0)), t));
        assert!(hit(seg(v(0.2, 0.2, 0.0), v(0.2, 0.2, 1.0)), t));
        assert!(!hit(seg(v(0.7, 0.7, -1.0), v(0.7, 0.7, 1.0)), t));
        assert!(!hit(seg(v(0.2, 0.2, 0.5), v(0.2, 0.2, 1.0)), t));
        assert!(hit(seg(v(-1.0, 0.3, 0.0), v(2.0, 0.3, 0.0)), t));
        assert!(!hit(seg(v(-1.0, 1.3, 0.0), v(2.0, 1.3, 0.0)), t));
        // Degenerate against degenerate: crossing segments, a point on a segment, two points.
        let s1 = seg(v(-1.0, 0.0, 0.0), v(1.0, 0.0, 0.0));
        assert!(hit(s1, seg(v(0.0, -1.0, 0.0), v(0.0, 1.0, 0.0))));
        assert!(!hit(s1, seg(v(0.0, -1.0, 0.1), v(0.0, 1.0, 0.1))));
        assert!(hit(s1, point(v(0.5, 0.0, 0.0))));
        assert!(!hit(s1, point(v(0.5, 0.01, 0.0))));
        assert!(hit(point(v(1.0, 2.0, 3.0)), point(v(1.0, 2.0, 3.0))));
        assert!(!hit(point(v(1.0, 2.0, 3.0)), point(v(1.0, 2.0, 3.5))));
        // Non-finite input: a definite false.
        assert!(!hit([v(f32::NAN, 0.0, 0.0), t[1], t[2]], t));
        assert!(!hit([v(f32::INFINITY, 0.0, 0.0), t[1], t[2]], t));
    }

    #[test]
    fn touching_cases_survive_rounding() {
        // Random triangles sharing a vertex or an edge with another, at awkward coordinates.
        let mut rng = Rng::new(5);
        for _ in 0..2_000 {
            let mut p = || v(rng.sym(10.0), rng.sym(10.0), rng.sym(10.0));
            let a = [p(), p(), p()];
            let (q, r) = (p(), p());
            assert!(triangles_intersect(&a, &[a[1], q, r]), "shared vertex {a:?} {q} {r}");
            assert!(triangles_intersect(&[q, a[2], a[0]], &a), "shared edge {a:?} {q}");
        }
    }

    #[test]
    fn segment_distance_matches_brute_force() {
        let mut rng = Rng::new(0x5E6);
        const N: usize = 200;
        for case in 0..200 {
            let mut p = || v(rng.sym(1.0), rng.sym(1.0), rng.sym(1.0));
            let (p0, p1, mut q0, mut q1) = (p(), p(), p(), p());
            match case % 5 {
                // Parallel, overlapping or not, and collinear.
                1 => q1 = q0 + (p1 - p0) * 0.7,
                2 => (q0, q1) = (p0 + v(0.0, 0.0, 0.3), p1 + v(0.0, 0.0, 0.3) + (p1 - p0)),
                3 => (q0, q1) = (p0 + (p1 - p0) * 1.5, p0 - (p1 - p0) * 0.25),
                // A point against a segment, or two points.
                4 => q1 = q0,
                _ => {}
            }
            let (p0, p1) = if case % 7 == 6 { (p1, p1) } else { (p0, p1) };
            let (d2, s, t) = segment_segment_closest(p0, p1, q0, q1);
            let d = segment_distance(p0, p1, q0, q1);
            assert!((d * d - d2).abs() <= 1e-6, "{d} {d2}");
            assert!((0.0..=1.0).contains(&s) && (0.0..=1.0).contains(&t), "{s} {t}");
            let at = (p0 + (p1 - p0) * s).distance(q0 + (q1 - q0) * t);
            assert!((at - d).abs() <= 1e-5, "case {case}: params give {at}, distance {d}");
            let mut grid = f32::INFINITY;
            for i in 0..N {
                let x = p0 + (p1 - p0) * (i as f32 / (N - 1) as f32);
                for j in 0..N {
                    let y = q0 + (q1 - q0) * (j as f32 / (N - 1) as f32);
                    grid = grid.min(x.distance(y));
                }
            }
            // The grid's best is at least the true minimum and at most half a step from it.
            let step = (p0.distance(p1) + q0.distance(q1)) / (N - 1) as f32;
            assert!(d <= grid + 1e-5, "case {case}: {d} > grid {grid}");
            assert!(d >= grid - 0.5 * step - 1e-5, "case {case}: {d} < grid {grid}");
            // Symmetric in the segments, with the parameters swapped.
            let (d2b, sb, tb) = segment_segment_closest(q0, q1, p0, p1);
            assert!((d2b - d2).abs() <= 1e-6, "case {case}: {d2b} vs {d2}");
            let atb = (q0 + (q1 - q0) * sb).distance(p0 + (p1 - p0) * tb);
            assert!((atb - d).abs() <= 1e-5);
        }
        // Exact cases: crossing, parallel apart, points.
        assert_eq!(
            segment_distance(v(-1.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, -1.0, 1.0), v(0.0, 1.0, 1.0)),
            1.0
        );
        assert_eq!(
            segment_distance(v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 2.0, 0.0), v(1.0, 2.0, 0.0)),
            2.0
        );
        assert_eq!(
            segment_distance(v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(3.0, 0.0, 0.0), v(4.0, 0.0, 0.0)),
            2.0
        );
        assert_eq!(
            segment_distance(Vec3::ZERO, Vec3::ZERO, v(0.0, 3.0, 4.0), v(0.0, 3.0, 4.0)),
            5.0
        );
        assert!(segment_distance(Vec3::NAN, Vec3::ZERO, Vec3::ONE, Vec3::ONE).is_nan());
    }
}
