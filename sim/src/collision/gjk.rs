//! The nearest points of two convex hulls of a few points each, by the algorithm of Gilbert,
//! Johnson and Keerthi 1988 ("A fast procedure for computing the distance between complex
//! objects in three-dimensional space", IEEE J. Robotics and Automation 4(2)): the point of
//! the Minkowski difference A − B nearest the origin, approached through simplices of its
//! support points, each step adding the support point in the direction of the origin and
//! keeping the face of the simplex nearest it (the closest-point regions of Ericson 2005,
//! Real-Time Collision Detection §5.1).
//!
//! Invariant: the result is a point of each hull (a convex combination of its points), never
//! farther apart than the hulls' distance plus the stopping tolerance; hulls that meet give two
//! points of the one place (the distance 0 to rounding).

use std::cmp::Ordering;

use glam::Vec3;

/// Most iterations (a hull of n points is done in at most about n of them).
const MOST: usize = 48;
/// Stop once a new support point brings the distance no closer than this fraction of its
/// square.
const TOLERANCE: f32 = 1.0e-5;

/// A vertex of the simplex: the support point of A − B and the points of A and B it is.
#[derive(Clone, Copy, Debug)]
struct Vertex {
    w: Vec3,
    a: Vec3,
    b: Vec3,
}

/// The nearest points of the convex hulls of `a` and `b` (each not empty), and whether the
/// hulls meet; `toward`, a guess of the way from the second to the first (zero for none),
/// where the search starts.
pub fn hulls_closest(a: &[Vec3], b: &[Vec3], toward: Vec3) -> (Vec3, Vec3, bool) {
    let support = |d: Vec3| {
        let most = |p: &[Vec3], d: Vec3| {
            let mut best = (p[0], p[0].dot(d));
            for &x in &p[1..] {
                let s = x.dot(d);
                if s > best.1 {
                    best = (x, s);
                }
            }
            best.0
        };
        let (pa, pb) = (most(a, d), most(b, -d));
        Vertex {
            w: pa - pb,
            a: pa,
            b: pb,
        }
    };
    // Started from the support point of A − B against `toward` (the point of A − B farthest
    // toward the origin along the guess), near the answer when the guess is good.
    let first = if toward.length_squared() > 0.0 {
        support(-toward)
    } else {
        Vertex {
            w: a[0] - b[0],
            a: a[0],
            b: b[0],
        }
    };
    let mut simplex = [first; 4];
    let mut lambda = [1.0f32, 0.0, 0.0, 0.0];
    let mut n = 1;
    let mut v = first.w;
    for _ in 0..MOST {
        let vv = v.length_squared();
        if vv.partial_cmp(&1.0e-14) != Some(Ordering::Greater) {
            return finish(&simplex[..n], &lambda[..n], true);
        }
        let s = support(-v);
        // No support point nearer the origin than the present one: v is the nearest.
        if vv - v.dot(s.w) <= TOLERANCE * vv || simplex[..n].iter().any(|x| x.w == s.w) {
            break;
        }
        simplex[n] = s;
        n += 1;
        let (kept, weights, inside) = nearest_on_simplex(&simplex[..n]);
        if inside {
            return finish(&simplex[..n], &weights[..n], true);
        }
        // Keep only the vertices the nearest point needs.
        let mut m = 0;
        let mut next = [first; 4];
        let mut w = [0.0; 4];
        for k in 0..n {
            if kept[k] {
                next[m] = simplex[k];
                w[m] = weights[k];
                m += 1;
            }
        }
        let nearer: Vec3 = (0..m).map(|k| next[k].w * w[k]).sum();
        // No nearer than before (rounding in a flat simplex): the last is as near as it gets.
        if nearer.length_squared().partial_cmp(&vv) != Some(Ordering::Less) {
            n -= 1;
            break;
        }
        simplex = next;
        lambda = w;
        n = m;
        v = nearer;
    }
    finish(&simplex[..n], &lambda[..n], false)
}

fn finish(simplex: &[Vertex], lambda: &[f32], meet: bool) -> (Vec3, Vec3, bool) {
    let pa = simplex.iter().zip(lambda).map(|(x, &l)| x.a * l).sum();
    let pb = simplex.iter().zip(lambda).map(|(x, &l)| x.b * l).sum();
    (pa, pb, meet)
}

/// The point of a simplex of 1 to 4 vertices nearest the origin, as its vertices' weights:
/// which vertices it needs, their weights (0 for the others) and whether the origin is inside
/// a tetrahedron.
fn nearest_on_simplex(s: &[Vertex]) -> ([bool; 4], [f32; 4], bool) {
    match s.len() {
        1 => ([true, false, false, false], [1.0, 0.0, 0.0, 0.0], false),
        2 => {
            let (l, keep) = segment(s[0].w, s[1].w);
            ([keep[0], keep[1], false, false], [l[0], l[1], 0.0, 0.0], false)
        }
        3 => {
            let (l, keep) = triangle(s[0].w, s[1].w, s[2].w);
            ([keep[0], keep[1], keep[2], false], [l[0], l[1], l[2], 0.0], false)
        }
        _ => tetrahedron([s[0].w, s[1].w, s[2].w, s[3].w]),
    }
}

/// The point of segment a–b nearest the origin: weights and the vertices needed.
fn segment(a: Vec3, b: Vec3) -> ([f32; 2], [bool; 2]) {
    let ab = b - a;
    let len2 = ab.length_squared();
    let t = if len2 > 0.0 {
        (-a.dot(ab) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    if t <= 0.0 {
        ([1.0, 0.0], [true, false])
    } else if t >= 1.0 {
        ([0.0, 1.0], [false, true])
    } else {
        ([1.0 - t, t], [true, true])
    }
}

/// The point of triangle a, b, c nearest the origin (Ericson 2005, §5.1.5, the query point at
/// the origin): weights and the vertices needed.
fn triangle(a: Vec3, b: Vec3, c: Vec3) -> ([f32; 3], [bool; 3]) {
    let (ab, ac) = (b - a, c - a);
    let (d1, d2) = (ab.dot(-a), ac.dot(-a));
    if d1 <= 0.0 && d2 <= 0.0 {
        return ([1.0, 0.0, 0.0], [true, false, false]);
    }
    let (d3, d4) = (ab.dot(-b), ac.dot(-b));
    if d3 >= 0.0 && d4 <= d3 {
        return ([0.0, 1.0, 0.0], [false, true, false]);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return ([1.0 - v, v, 0.0], [true, true, false]);
    }
    let (d5, d6) = (ab.dot(-c), ac.dot(-c));
    if d6 >= 0.0 && d5 <= d6 {
        return ([0.0, 0.0, 1.0], [false, false, true]);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return ([1.0 - w, 0.0, w], [true, false, true]);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return ([0.0, 1.0 - w, w], [false, true, true]);
    }
    let sum = va + vb + vc;
    if sum.abs().partial_cmp(&0.0) != Some(Ordering::Greater) {
        // A degenerate triangle: its longest edge.
        let (l, k) = segment(a, b);
        return ([l[0], l[1], 0.0], [k[0], k[1], false]);
    }
    let (v, w) = (vb / sum, vc / sum);
    ([1.0 - v - w, v, w], [true, true, true])
}

/// The point of tetrahedron `t` nearest the origin: the nearest of its faces the origin lies
/// outside of, or the origin itself if inside.
fn tetrahedron(t: [Vec3; 4]) -> ([bool; 4], [f32; 4], bool) {
    const FACES: [[usize; 4]; 4] = [[0, 1, 2, 3], [0, 1, 3, 2], [0, 2, 3, 1], [1, 2, 3, 0]];
    let mut best: Option<(f32, [bool; 4], [f32; 4])> = None;
    let mut outside_any = false;
    // A flat tetrahedron (four points in a plane, as two segments' differences are) has no
    // inside: the nearest of all its faces.
    let scale = (1..4).map(|k| (t[k] - t[0]).length()).fold(0.0f32, f32::max);
    let volume = (t[1] - t[0]).dot((t[2] - t[0]).cross(t[3] - t[0]));
    let flat = volume.abs().partial_cmp(&(1.0e-6 * scale * scale * scale)) != Some(Ordering::Greater);
    for [i, j, k, opposite] in FACES {
        let n = (t[j] - t[i]).cross(t[k] - t[i]);
        let (origin, other) = ((-t[i]).dot(n), (t[opposite] - t[i]).dot(n));
        // The origin on the face's far side from the fourth vertex.
        if !flat && origin * other >= 0.0 {
            continue;
        }
        outside_any = true;
        let (l, keep) = triangle(t[i], t[j], t[k]);
        let p = t[i] * l[0] + t[j] * l[1] + t[k] * l[2];
        let d = p.length_squared();
        if best.is_none_or(|b| d < b.0) {
            let (mut kept, mut w) = ([false; 4], [0.0; 4]);
            for (m, &v) in [i, j, k].iter().enumerate() {
                kept[v] = keep[m];
                w[v] = l[m];
            }
            best = Some((d, kept, w));
        }
    }
    match best {
        Some((_, kept, w)) if outside_any => (kept, w, false),
        _ => {
            // The origin inside: its barycentric coordinates, so that both hulls' points are
            // the one place.
            let det = |a: Vec3, b: Vec3, c: Vec3| a.dot(b.cross(c));
            let (e1, e2, e3, o) = (t[1] - t[0], t[2] - t[0], t[3] - t[0], -t[0]);
            let l1 = det(o, e2, e3) / volume;
            let l2 = det(e1, o, e3) / volume;
            let l3 = det(e1, e2, o) / volume;
            ([true; 4], [1.0 - l1 - l2 - l3, l1, l2, l3], true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::tritri::segment_segment_closest;
    use crate::rng::Rng;

    fn random_point(rng: &mut Rng, r: f32) -> Vec3 {
        Vec3::new(rng.sym(r), rng.sym(r), rng.sym(r))
    }

    /// Two segments: the distance of `segment_segment_closest`.
    #[test]
    fn two_segments_as_the_segment_test() {
        let mut rng = Rng::new(3);
        for n in 0..2000 {
            let (a0, a1) = (random_point(&mut rng, 1.0), random_point(&mut rng, 1.0));
            let (b0, b1) = (random_point(&mut rng, 1.0), random_point(&mut rng, 1.0));
            let (pa, pb, _) = hulls_closest(&[a0, a1], &[b0, b1], Vec3::ZERO);
            let (d2, _, _) = segment_segment_closest(a0, a1, b0, b1);
            assert!(
                (pa.distance(pb) - d2.sqrt()).abs() < 1e-4,
                "{n}: {} vs {}",
                pa.distance(pb),
                d2.sqrt()
            );
        }
    }

    /// Random hulls of a few points: the distance found is the least over a dense sampling of
    /// both hulls (to the sampling's step), its points inside the hulls; hulls that share a
    /// point are found to meet.
    #[test]
    fn random_hulls_as_a_dense_search() {
        let mut rng = Rng::new(11);
        let mut met = 0;
        for n in 0..120 {
            let (ca, cb) = (random_point(&mut rng, 0.6), random_point(&mut rng, 0.6));
            let a: Vec<Vec3> = (0..3 + n % 4).map(|_| ca + random_point(&mut rng, 0.4)).collect();
            let b: Vec<Vec3> = (0..2 + n % 5).map(|_| cb + random_point(&mut rng, 0.4)).collect();
            let (pa, pb, meet) = hulls_closest(&a, &b, ca - cb);
            // Dense convex combinations of each hull's points (triangles of its points).
            let sample = |p: &[Vec3]| {
                let mut out = Vec::new();
                for i in 0..p.len() {
                    for j in 0..p.len() {
                        for k in 0..p.len() {
                            for u in 0..=6 {
                                for v in 0..=(6 - u) {
                                    let (u, v) = (u as f32 / 6.0, v as f32 / 6.0);
                                    out.push(p[i] * (1.0 - u - v) + p[j] * u + p[k] * v);
                                }
                            }
                        }
                    }
                }
                out
            };
            let (sa, sb) = (sample(&a), sample(&b));
            let dense = sa
                .iter()
                .flat_map(|x| sb.iter().map(move |y| x.distance(*y)))
                .fold(f32::INFINITY, f32::min);
            let d = pa.distance(pb);
            assert!(d <= dense + 1e-4, "{n}: {d} vs {dense}");
            assert!(meet || d >= dense - 0.12, "{n}: {d} vs {dense}");
            met += meet as usize;
        }
        assert!(met > 8 && met < 112, "{met} of 120 met");
    }
}
