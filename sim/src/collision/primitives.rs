//! The primitives a tree is made of for collision tests, after Chen 2011 §3.1: a stem (a
//! skeleton segment) is a prism of `sides` faces between two regular polygons, its base and
//! tip cross-sections (Fig. 3.2); a leaf is a blade of triangles spanned by the tips of its
//! venations (Fig. 3.3). Each is split in two pieces, its root part and the rest, so that the
//! part joined to its parent can be left out of the tests against that parent (§3.2): a stem's
//! root part is the stretch of it still inside the junction it grows from, a leaf's root part
//! the stretch of the blade still inside its twig (see `connect` for how long each is).
//!
//! Invariants: a piece's vertices lie on the surface it stands for; its k-DOP bounds them;
//! `solid` pieces (prisms) are closed convex bodies, so a piece lies inside one exactly when
//! one of its vertices does or their surfaces cross ([`intersect`] tests both); blades are
//! open surfaces. Every shape comes from the skeleton alone, so the same skeleton gives the
//! same pieces bit for bit.

use glam::{Quat, Vec3};

use super::kdop::{DopK, Kdop};
use super::tritri::triangles_intersect;

/// Fewest and most faces of a stem's prism.
pub const MIN_SIDES: u32 = 3;
/// See [`MIN_SIDES`].
pub const MAX_SIDES: u32 = 32;

/// The half-width of the drawn leaf at `v` along its blade (0 at the stalk, 1 at the tip) as a
/// fraction of its card's width: the outline the leaf shader cuts (`shaders/glsl/leafshape.glsl`),
/// √(v(1 − v))·(1 − 0.3v).
pub fn leaf_half_width(v: f32) -> f32 {
    let v = v.clamp(0.0, 1.0);
    (v * (1.0 - v)).sqrt() * (1.0 - 0.3 * v)
}

/// What a piece belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    /// Skeleton segment `i`; `root`: its root part, else the rest.
    Stem { segment: u32, root: bool },
    /// Skeleton leaf `i` (on segment `segment`); `root`: its root part, else the blade beyond.
    Leaf { leaf: u32, segment: u32, root: bool },
}

impl Owner {
    /// The segment the piece is (a stem) or hangs from (a leaf).
    pub fn segment(self) -> u32 {
        match self {
            Owner::Stem { segment, .. } | Owner::Leaf { segment, .. } => segment,
        }
    }

    /// Whether the piece is a root part.
    pub fn is_root(self) -> bool {
        match self {
            Owner::Stem { root, .. } | Owner::Leaf { root, .. } => root,
        }
    }
}

/// A stretch of a stem as a prism: the axis from `a` to `b`, regular `sides`-gons of
/// circumradius `ra` at `a` and `rb` at `b`, their corners at the same angles about the axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prism {
    pub a: Vec3,
    pub b: Vec3,
    pub ra: f32,
    pub rb: f32,
    pub sides: u32,
    /// Unit vectors across the axis: corner k lies along cos(2πk/n)·u + sin(2πk/n)·w.
    pub u: Vec3,
    pub w: Vec3,
}

impl Prism {
    /// The prism of the stretch from `a` to `b` of a stem whose axis is `axis` (unit), its frame
    /// fixed by the axis alone (so two stretches of one segment share their corners' angles).
    pub fn new(a: Vec3, b: Vec3, ra: f32, rb: f32, sides: u32, axis: Vec3) -> Prism {
        let (u, w) = axis.any_orthonormal_pair();
        Prism {
            a,
            b,
            ra,
            rb,
            sides,
            u,
            w,
        }
    }

    /// Corner `k` of the ring at `a` (`top` false) or `b`.
    fn corner(&self, k: u32, top: bool) -> Vec3 {
        let phi = std::f32::consts::TAU * (k % self.sides) as f32 / self.sides as f32;
        let dir = self.u * phi.cos() + self.w * phi.sin();
        if top {
            self.b + dir * self.rb
        } else {
            self.a + dir * self.ra
        }
    }

    /// Whether `p` lies in the closed prism (its cross-section at p's height a regular polygon
    /// of circumradius r(t): inside when p's distance across the axis along every face's
    /// normal is at most r(t)·cos(π/n), the polygon's inradius).
    pub fn contains(&self, p: Vec3) -> bool {
        let axis = self.b - self.a;
        let len2 = axis.length_squared();
        if len2 <= 0.0 {
            return false;
        }
        let t = (p - self.a).dot(axis) / len2;
        if !(0.0..=1.0).contains(&t) {
            return false;
        }
        let across = p - (self.a + axis * t);
        let (x, y) = (across.dot(self.u), across.dot(self.w));
        let n = self.sides as f32;
        let inradius = (self.ra + (self.rb - self.ra) * t) * (std::f32::consts::PI / n).cos();
        (0..self.sides).all(|k| {
            let phi = std::f32::consts::TAU * (k as f32 + 0.5) / n;
            x * phi.cos() + y * phi.sin() <= inradius
        })
    }
}

/// A piece's surface.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A stretch of stem: a closed prism.
    Prism(Prism),
    /// A stretch of leaf blade: its triangles.
    Blade(Vec<[Vec3; 3]>),
}

/// One piece of a primitive: its owner, its surface, its k-DOP and the point it is filed
/// under in the modelling pass's voxel grid (§3.3: a stem's centreline centre, a leaf's
/// mid-venation centre) with the radius about it that holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    pub owner: Owner,
    pub shape: Shape,
    pub kdop: Kdop,
    pub centre: Vec3,
    pub reach: f32,
}

impl Piece {
    /// A piece of `shape`, its k-DOP and centre computed; `centreline` is the centreline it
    /// is filed by (for a prism its axis, for a blade its mid-venation stretch).
    pub fn new(owner: Owner, shape: Shape, k: DopK, centreline: [Vec3; 2]) -> Piece {
        let mut kdop = Kdop::empty(k);
        let centre = 0.5 * (centreline[0] + centreline[1]);
        let mut reach: f32 = 0.0;
        for_each_vertex(&shape, |p| {
            kdop.add_point(p);
            reach = reach.max((p - centre).length());
        });
        Piece {
            owner,
            shape,
            kdop,
            centre,
            reach,
        }
    }

    /// The piece's triangles, each as its three corners.
    pub fn for_each_triangle(&self, f: impl FnMut([Vec3; 3]) -> bool) -> bool {
        triangles(&self.shape, f)
    }
}

/// Calls `f` on every vertex of `shape`.
fn for_each_vertex(shape: &Shape, mut f: impl FnMut(Vec3)) {
    match shape {
        Shape::Prism(p) => {
            for k in 0..p.sides {
                f(p.corner(k, false));
                f(p.corner(k, true));
            }
        }
        Shape::Blade(tris) => {
            for t in tris {
                t.iter().for_each(|&p| f(p));
            }
        }
    }
}

/// Calls `f` on every triangle of `shape` until it returns true; returns whether it did. A
/// prism's are its 2n side triangles and the two caps' n − 2 triangles each.
fn triangles(shape: &Shape, mut f: impl FnMut([Vec3; 3]) -> bool) -> bool {
    match shape {
        Shape::Prism(p) => {
            let n = p.sides;
            let ring: Vec<(Vec3, Vec3)> = (0..n).map(|k| (p.corner(k, false), p.corner(k, true))).collect();
            for k in 0..n as usize {
                let (b0, t0) = ring[k];
                let (b1, t1) = ring[(k + 1) % n as usize];
                if f([b0, b1, t1]) || f([b0, t1, t0]) {
                    return true;
                }
            }
            for k in 1..n as usize - 1 {
                if f([ring[0].0, ring[k].0, ring[k + 1].0]) || f([ring[0].1, ring[k + 1].1, ring[k].1]) {
                    return true;
                }
            }
            false
        }
        Shape::Blade(tris) => tris.iter().any(|&t| f(t)),
    }
}

/// Whether two pieces share a point, exactly: some triangle of one crosses some triangle of
/// the other (Chen §3.2's triangle test), or a vertex of one lies inside the other where that
/// one is a solid prism (a twig or blade wholly inside a thicker stem touches no face).
pub fn intersect(a: &Piece, b: &Piece) -> bool {
    let inside = |solid: &Piece, other: &Piece| match &solid.shape {
        Shape::Prism(p) => {
            let mut any = false;
            for_each_vertex(&other.shape, |v| any |= p.contains(v));
            any
        }
        Shape::Blade(_) => false,
    };
    if inside(a, b) || inside(b, a) {
        return true;
    }
    // Only triangles inside the other piece's box can meet it, and only pairs whose own boxes
    // overlap (a filter: the exact test decides).
    let (abox, bbox) = (box_of(&a.kdop), box_of(&b.kdop));
    let near = |shape: &Shape, other: &([f32; 3], [f32; 3])| {
        let mut v = Vec::new();
        triangles(shape, |t| {
            let tb = tri_box(&t);
            if boxes_overlap(&tb, other) {
                v.push((t, tb));
            }
            false
        });
        v
    };
    let (ta, tb) = (near(&a.shape, &bbox), near(&b.shape, &abox));
    ta.iter().any(|(x, xb)| {
        tb.iter()
            .any(|(y, yb)| boxes_overlap(xb, yb) && triangles_intersect(x, y))
    })
}

/// The box of a k-DOP: its first three slabs (the coordinate axes).
fn box_of(k: &Kdop) -> ([f32; 3], [f32; 3]) {
    let (x, y, z) = (k.slab(0), k.slab(1), k.slab(2));
    ([x.0, y.0, z.0], [x.1, y.1, z.1])
}

fn tri_box(t: &[Vec3; 3]) -> ([f32; 3], [f32; 3]) {
    let (lo, hi) = (t[0].min(t[1]).min(t[2]), t[0].max(t[1]).max(t[2]));
    (lo.to_array(), hi.to_array())
}

fn boxes_overlap(a: &([f32; 3], [f32; 3]), b: &([f32; 3], [f32; 3])) -> bool {
    (0..3).all(|k| a.0[k] <= b.1[k] && b.0[k] <= a.1[k])
}

/// A leaf's blade from `v0` to `v1` (fractions of its length) as triangles spanned by its
/// venations (Chen Fig. 3.3): the mid-venation from the stalk to the tip along the card's +y,
/// parallel venations across it (the card's ±x) to the outline of [`leaf_half_width`] at
/// `joints` + 1 evenly spaced points; each stretch of mid-venation and the tips of its
/// parallel venations make two triangles a side (one at a pointed end).
pub fn blade(
    attach: Vec3,
    orientation: Quat,
    length: f32,
    width: f32,
    v0: f32,
    v1: f32,
    joints: u32,
) -> Vec<[Vec3; 3]> {
    let along = orientation * Vec3::Y * length;
    let across = orientation * Vec3::X * width;
    let mid = |v: f32| attach + along * v;
    let edge = |v: f32, side: f32| mid(v) + across * (side * leaf_half_width(v));
    let steps = joints.max(1);
    let mut tris = Vec::with_capacity(4 * steps as usize);
    for k in 0..steps {
        let va = v0 + (v1 - v0) * k as f32 / steps as f32;
        let vb = v0 + (v1 - v0) * (k + 1) as f32 / steps as f32;
        for side in [-1.0, 1.0] {
            let (ma, mb, ea, eb) = (mid(va), mid(vb), edge(va, side), edge(vb, side));
            if leaf_half_width(va) > 0.0 {
                tris.push([ma, mb, ea]);
            }
            if leaf_half_width(vb) > 0.0 {
                tris.push([ea, mb, eb]);
            }
        }
    }
    tris
}

/// The k-DOP of [`blade`]'s triangles for the same arguments: of the points where its
/// venations meet the mid-venation and the outline, without building the triangles
/// ([`Kdop::of_blade`]; equal to the triangles' own k-DOP up to rounding). A blade with no
/// width anywhere gives its mid-venation's, where `blade` gives no triangle. `joints` is at
/// most 15 (the outline is kept on the stack; the pieces have at most
/// [`LEAF_JOINTS`](super::modelling::LEAF_JOINTS)); more are taken as 15.
pub fn blade_kdop(
    k: DopK,
    attach: Vec3,
    orientation: Quat,
    (length, width): (f32, f32),
    (v0, v1): (f32, f32),
    joints: u32,
) -> Kdop {
    const MOST: usize = 16;
    debug_assert!(joints < MOST as u32, "{joints} joints in a blade's k-DOP");
    let steps = joints.clamp(1, MOST as u32 - 1);
    let mut outline = [(0.0, 0.0); MOST];
    for (i, o) in outline.iter_mut().enumerate().take(steps as usize + 1) {
        let v = v0 + (v1 - v0) * i as f32 / steps as f32;
        *o = (v, leaf_half_width(v));
    }
    let along = orientation * Vec3::Y * length;
    let across = orientation * Vec3::X * width;
    Kdop::of_blade(k, attach, along, across, &outline[..=steps as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prism(a: Vec3, b: Vec3, r: f32, sides: u32) -> Piece {
        let axis = (b - a).normalize();
        Piece::new(
            Owner::Stem {
                segment: 0,
                root: false,
            },
            Shape::Prism(Prism::new(a, b, r, r, sides, axis)),
            DopK::K14,
            [a, b],
        )
    }

    fn leaf(attach: Vec3, q: Quat) -> Piece {
        Piece::new(
            Owner::Leaf {
                leaf: 0,
                segment: 0,
                root: false,
            },
            Shape::Blade(blade(attach, q, 0.1, 0.05, 0.0, 1.0, 4)),
            DopK::K14,
            [attach, attach + q * Vec3::Y * 0.1],
        )
    }

    /// The prism's inside test agrees with its faces: points just inside the inradius along a
    /// face's normal are in, just beyond it are out, and so are points past either cap.
    /// The blade's k-DOP is its triangles', up to rounding, for root and outer parts.
    #[test]
    fn blade_kdop_bounds_the_blade_as_its_triangles_do() {
        let q = Quat::from_rotation_z(0.7) * Quat::from_rotation_x(-0.4);
        for (v0, v1, joints) in [(0.0, 0.2, 1), (0.2, 1.0, 3), (0.0, 1.0, 4), (0.5, 1.0, 2)] {
            for k in DopK::ALL {
                let mut from_tris = Kdop::empty(k);
                for t in blade(Vec3::new(1.0, 2.0, 3.0), q, 0.12, 0.05, v0, v1, joints) {
                    t.iter().for_each(|&v| from_tris.add_point(v));
                }
                let from_outline = blade_kdop(k, Vec3::new(1.0, 2.0, 3.0), q, (0.12, 0.05), (v0, v1), joints);
                for i in 0..k.k() / 2 {
                    let ((a, b), (c, d)) = (from_tris.slab(i), from_outline.slab(i));
                    assert!(
                        (a - c).abs() < 1e-6 && (b - d).abs() < 1e-6,
                        "{k} {v0}..{v1} x{joints} slab {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn prism_contains_its_inside_and_not_its_outside() {
        for sides in [3, 6, 11] {
            let p = Prism::new(Vec3::ZERO, Vec3::Y, 0.2, 0.1, sides, Vec3::Y);
            let n = sides as f32;
            for k in 0..sides {
                let phi = std::f32::consts::TAU * (k as f32 + 0.5) / n;
                let dir = p.u * phi.cos() + p.w * phi.sin();
                for t in [0.1f32, 0.5, 0.9] {
                    let inr = (0.2 - 0.1 * t) * (std::f32::consts::PI / n).cos();
                    assert!(p.contains(Vec3::Y * t + dir * inr * 0.99), "{sides} {k} {t}");
                    assert!(!p.contains(Vec3::Y * t + dir * inr * 1.01), "{sides} {k} {t}");
                }
            }
            assert!(!p.contains(Vec3::Y * 1.001));
            assert!(!p.contains(Vec3::Y * -0.001));
        }
    }

    /// Crossing stems intersect, parallel stems further apart than their radii do not, a thin
    /// twig wholly inside a thick stem does (by containment), and a leaf through a stem does.
    #[test]
    fn pieces_intersect_as_their_shapes_do() {
        let trunk = prism(Vec3::ZERO, Vec3::Y * 2.0, 0.2, 6);
        let across = prism(Vec3::new(-1.0, 1.0, 0.05), Vec3::new(1.0, 1.0, 0.05), 0.02, 6);
        assert!(intersect(&trunk, &across) && intersect(&across, &trunk));
        let beside = prism(Vec3::new(0.5, 0.0, 0.0), Vec3::new(0.5, 2.0, 0.0), 0.2, 6);
        assert!(!intersect(&trunk, &beside));
        let touching_not = prism(Vec3::new(0.41, 0.0, 0.0), Vec3::new(0.41, 2.0, 0.0), 0.2, 6);
        assert!(!intersect(&trunk, &touching_not), "0.41 m apart, radii 0.2 each");
        let inner = prism(Vec3::new(0.0, 0.5, 0.0), Vec3::new(0.05, 0.8, 0.0), 0.01, 6);
        assert!(intersect(&trunk, &inner) && intersect(&inner, &trunk));
        let through = leaf(
            Vec3::new(-0.05, 1.0, 0.0),
            Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2),
        );
        assert!(intersect(&trunk, &through));
        let away = leaf(
            Vec3::new(0.5, 1.0, 0.0),
            Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2),
        );
        assert!(!intersect(&trunk, &away));
        // Two leaves on one point, one turned about its mid-venation, cross.
        let a = leaf(Vec3::new(0.5, 1.0, 0.0), Quat::IDENTITY);
        let b = leaf(Vec3::new(0.5, 1.0, 0.0), Quat::from_rotation_y(1.0));
        assert!(intersect(&a, &b));
        let c = leaf(Vec3::new(0.5, 1.0, 0.2), Quat::IDENTITY);
        assert!(!intersect(&a, &c));
    }

    /// The blade's triangles cover the outline: its area approaches the outline's (∫ 2·hw),
    /// from below, as its venations multiply.
    #[test]
    fn blade_area_converges_to_the_outline() {
        let area = |joints| -> f32 {
            blade(Vec3::ZERO, Quat::IDENTITY, 1.0, 1.0, 0.0, 1.0, joints)
                .iter()
                .map(|t| 0.5 * (t[1] - t[0]).cross(t[2] - t[0]).length())
                .sum()
        };
        let exact: f32 = (0..100_000)
            .map(|k| 2.0 * leaf_half_width((k as f32 + 0.5) / 100_000.0) / 100_000.0)
            .sum();
        let (a4, a32) = (area(4), area(32));
        assert!(a4 < a32 && a32 <= exact * 1.0001, "{a4} {a32} {exact}");
        assert!((a32 - exact).abs() < 0.01 * exact, "{a32} {exact}");
    }
}
