//! Which primitives of a tree are connected, and so never tested against each other (Chen
//! 2011 §3.2: "collision detection is not performed between the parent and siblings of
//! stem_new ... because they are connected"; a leaf's root and its stem likewise).
//!
//! Chen's own stems are long beside their width, so parent and siblings are all that touch.
//! Generated skeletons are not: Weber-Penn branches leave trunks thicker than their first
//! segments are long, and an L-system's internodes can be a fifth of the stem's radius, so a
//! branch runs inside the stem it leaves for several of its own segments and past several of
//! the stem's joints. Where two pieces meet through the tree matters, not whose parent is
//! whose: two pieces are connected when the path between them through the tree's centrelines
//! is no longer than [`JOIN`] times the sum of their radii. A branch leaving a stem of radius
//! r at an angle θ is inside it for about r/sin θ of its length and the path from there back
//! along the stem is at most twice that, so the rule covers branches down to about 20° from
//! their stem; two branches that cross out in the crown are many radii apart through the tree.
//!
//! Each segment is two pieces, as Chen splits a leaf: its root part, the stretch within its
//! parent's radius plus its own from its base, and the rest; the path starts from where a
//! piece lies along its segment, so the rest is measured from the root part's end.
//!
//! Connected pairs (each rule symmetric):
//! - two pieces of stems that are the same segment, parent and child, or siblings (Chen);
//! - two pieces of stems whose tree path is at most [`JOIN`] times their radii summed;
//! - a leaf's root part (the stretch of its blade inside its twig, the twig's parent or the
//!   twig's children) and a stem piece within that path of its attachment point, or another
//!   leaf's root part likewise;
//! - a leaf's two pieces.
//!
//! Everything else is tested, a blade against its own stem included (Chen).

use glam::Vec3;

use super::primitives::{leaf_half_width, Owner};
use super::tritri::segment_distance;
use crate::skeleton::{Skeleton, SkeletonLeaf};

/// No parent.
pub const NONE: u32 = u32::MAX;
/// Two pieces whose path through the tree is at most this many times their radii summed are
/// connected (see the module's header).
pub const JOIN: f32 = 6.0;
/// How much wider than its radius a twig reaches, for a leaf's root part.
pub const MARGIN: f32 = 1.2;
/// Points sampled along a blade to find where it leaves its twig.
const SAMPLES: u32 = 16;

/// The tree's structure as the connection rules read it.
#[derive(Clone, Debug)]
pub struct Topology {
    parent: Vec<u32>,
    child_start: Vec<u32>,
    child_list: Vec<u32>,
    depth: Vec<u32>,
    level: Vec<u32>,
    length: Vec<f32>,
    radius: Vec<f32>,
    root_length: Vec<f32>,
    /// Per leaf: its segment's radius where it hangs, its distance from the segment's base
    /// \[m\], and how far along its blade its root part reaches (0 to 1).
    leaf_radius: Vec<f32>,
    leaf_at: Vec<f32>,
    leaf_root: Vec<f32>,
}

impl Topology {
    /// The structure of `skel` (valid: every parent before its children) and every root part.
    pub fn new(skel: &Skeleton) -> Topology {
        let n = skel.segments.len();
        let parent: Vec<u32> = skel.segments.iter().map(|s| s.parent.unwrap_or(NONE)).collect();
        let mut count = vec![0u32; n + 1];
        for &p in &parent {
            if p != NONE {
                count[p as usize + 1] += 1;
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let child_start = count.clone();
        let mut fill = count;
        let mut child_list = vec![0u32; child_start[n] as usize];
        let mut depth = vec![0u32; n];
        for (i, &p) in parent.iter().enumerate() {
            if p != NONE {
                child_list[fill[p as usize] as usize] = i as u32;
                fill[p as usize] += 1;
                depth[i] = depth[p as usize] + 1;
            }
        }
        let length: Vec<f32> = skel.segments.iter().map(|s| s.length()).collect();
        // Branching levels by the rule of continuation (`TreeStats::of_skeleton`'s): each
        // segment's best-aligned child carries its stem on, any other starts a stem a level
        // deeper.
        let dir: Vec<Vec3> = skel
            .segments
            .iter()
            .map(|s| (s.tip - s.base).normalize_or_zero())
            .collect();
        let mut best = vec![(NONE, f32::NEG_INFINITY); n];
        for (i, &p) in parent.iter().enumerate() {
            if p != NONE {
                let align = dir[i].dot(dir[p as usize]);
                if align > best[p as usize].1 {
                    best[p as usize] = (i as u32, align);
                }
            }
        }
        let mut level = vec![0u32; n];
        for (i, &p) in parent.iter().enumerate() {
            if p != NONE {
                level[i] = level[p as usize] + (best[p as usize].0 != i as u32) as u32;
            }
        }
        let radius: Vec<f32> = skel.segments.iter().map(|s| s.radius_base.max(s.radius_tip)).collect();
        let root_length = skel
            .segments
            .iter()
            .zip(&length)
            .map(|(s, &len)| match s.parent {
                None => 0.0,
                Some(p) => (skel.segments[p as usize].radius_tip + s.radius_base).min(len),
            })
            .collect();
        let mut t = Topology {
            parent,
            child_start,
            child_list,
            depth,
            level,
            length,
            radius,
            root_length,
            leaf_radius: Vec::with_capacity(skel.leaves.len()),
            leaf_at: Vec::with_capacity(skel.leaves.len()),
            leaf_root: Vec::with_capacity(skel.leaves.len()),
        };
        for leaf in &skel.leaves {
            let s = &skel.segments[leaf.segment as usize];
            let v = t.find_leaf_root(skel, leaf);
            t.leaf_root.push(v);
            t.leaf_at.push(leaf.along * t.length[leaf.segment as usize]);
            t.leaf_radius
                .push(s.radius_base + (s.radius_tip - s.radius_base) * leaf.along);
        }
        t
    }

    /// Segment i's parent ([`NONE`] for the root).
    pub fn parent(&self, i: u32) -> u32 {
        self.parent[i as usize]
    }

    /// Segment i's children.
    pub fn children(&self, i: u32) -> &[u32] {
        let i = i as usize;
        &self.child_list[self.child_start[i] as usize..self.child_start[i + 1] as usize]
    }

    /// Segment i's depth (its number of ancestors).
    pub fn depth(&self, i: u32) -> u32 {
        self.depth[i as usize]
    }

    /// Segment i's branching level: 0 on the trunk, one more on each branch off a stem.
    pub fn level(&self, i: u32) -> u32 {
        self.level[i as usize]
    }

    /// The length of segment i's root part \[m\]: its parent's tip radius plus its own base
    /// radius, at most the segment (0 for the root, which has no parent).
    pub fn root_length(&self, i: u32) -> f32 {
        self.root_length[i as usize]
    }

    /// The number of leaves.
    pub fn leaf_count(&self) -> usize {
        self.leaf_root.len()
    }

    /// How far along leaf j's blade its root part reaches (0 to 1).
    pub fn leaf_root(&self, j: u32) -> f32 {
        self.leaf_root[j as usize]
    }

    /// Segment i's two pieces as (root part?, from, to) \[m from its base\]; either may be
    /// empty (from = to).
    pub fn stem_parts(&self, i: u32) -> [(bool, f32, f32); 2] {
        let (d, len) = (self.root_length[i as usize], self.length[i as usize]);
        [(true, 0.0, d), (false, d, len)]
    }

    /// Leaf j's two pieces as (root part?, from, to) \[fractions of its blade\]; either may be
    /// empty.
    pub fn leaf_parts(&self, j: u32) -> [(bool, f32, f32); 2] {
        let v = self.leaf_root[j as usize];
        [(true, 0.0, v), (false, v, 1.0)]
    }

    /// Where a piece lies: its segment, the stretch of it \[m from the base\], and its radius.
    fn place(&self, o: Owner) -> (u32, f32, f32, f32) {
        match o {
            Owner::Stem { segment, root } => {
                let (_, a, b) = self.stem_parts(segment)[!root as usize];
                (segment, a, b, self.radius[segment as usize])
            }
            Owner::Leaf { leaf, segment, .. } => {
                let at = self.leaf_at[leaf as usize];
                (segment, at, at, self.leaf_radius[leaf as usize])
            }
        }
    }

    /// Whether the path through the tree from the stretch [a0, a1] of segment a to the
    /// stretch [b0, b1] of segment b is at most `bound` \[m\]. Up from a stretch to its
    /// segment's base costs its start; a segment crossed whole costs its length; down into an
    /// ancestor's stretch from its tip costs the distance from the stretch's end to the tip;
    /// two branches meet at their common ancestor's tip.
    fn path_within(&self, (a, a0, a1): (u32, f32, f32), (b, b0, b1): (u32, f32, f32), bound: f32) -> bool {
        if a == b {
            return (a0.max(b0) - a1.min(b1)).max(0.0) <= bound;
        }
        let (mut x, mut y) = (a, b);
        let (mut cx, mut cy) = (0.0f32, 0.0f32);
        while x != y {
            let step_x = self.depth[x as usize] >= self.depth[y as usize];
            let step_y = self.depth[y as usize] >= self.depth[x as usize];
            if step_x {
                cx += if x == a { a0 } else { self.length[x as usize] };
                x = self.parent[x as usize];
            }
            if step_y {
                cy += if y == b { b0 } else { self.length[y as usize] };
                y = self.parent[y as usize];
            }
            if cx + cy > bound || x == NONE || y == NONE {
                return cx + cy <= bound && x == y;
            }
        }
        // x is the common ancestor: an end itself (coming down into it from its tip), or the
        // fork both branches leave at its tip.
        let extra = if x == b {
            self.length[b as usize] - b1
        } else if x == a {
            self.length[a as usize] - a1
        } else {
            0.0
        };
        cx + cy + extra <= bound
    }

    /// Whether two pieces are connected (never tested; see the module's rules).
    pub fn connected(&self, a: Owner, b: Owner) -> bool {
        let (sa, a0, a1, ra) = self.place(a);
        let (sb, b0, b1, rb) = self.place(b);
        let near = || self.path_within((sa, a0, a1), (sb, b0, b1), JOIN * (ra + rb));
        match (a, b) {
            (Owner::Stem { .. }, Owner::Stem { .. }) => {
                let siblings = self.parent(sa) == self.parent(sb) && self.parent(sa) != NONE;
                sa == sb || self.parent(sa) == sb || self.parent(sb) == sa || siblings || near()
            }
            (Owner::Leaf { root, .. }, Owner::Stem { .. }) | (Owner::Stem { .. }, Owner::Leaf { root, .. }) => {
                root && near()
            }
            (Owner::Leaf { leaf: la, root: ra, .. }, Owner::Leaf { leaf: lb, root: rb, .. }) => {
                la == lb || (ra && rb && near())
            }
        }
    }

    /// How far along a leaf's blade (0 to 1) its cross-sections are inside its twig, the
    /// twig's parent or the twig's children (each a cylinder of its largest radius widened by
    /// [`MARGIN`]).
    fn find_leaf_root(&self, skel: &Skeleton, leaf: &SkeletonLeaf) -> f32 {
        let s = leaf.segment;
        let body_of = |i: u32| {
            let g = &skel.segments[i as usize];
            (g.base, g.tip, g.radius_base.max(g.radius_tip))
        };
        let mut body = vec![body_of(s)];
        body.extend(self.children(s).iter().map(|&c| body_of(c)));
        if self.parent(s) != NONE {
            body.push(body_of(self.parent(s)));
        }
        let seg = &skel.segments[s as usize];
        let attach = seg.base + (seg.tip - seg.base) * leaf.along;
        let along = leaf.orientation * Vec3::Y * leaf.length;
        let across = leaf.orientation * Vec3::X * leaf.width;
        let mut last_inside = None;
        for k in 0..=SAMPLES {
            let v = k as f32 / SAMPLES as f32;
            let c = attach + along * v;
            let half = across * leaf_half_width(v);
            let inside = body
                .iter()
                .any(|&(a, b, r)| segment_distance(c - half, c + half, a, b) < MARGIN * r);
            if inside {
                last_inside = Some(k);
            }
        }
        match last_inside {
            None => 0.0,
            Some(k) => ((k + 1) as f32 / SAMPLES as f32).min(1.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skeleton::SkeletonSegment;

    /// A chain of segments of length 1 up the y axis (radius 0.01) with a side branch of
    /// three segments from segment 1's tip.
    fn tree() -> Skeleton {
        let seg = |parent: Option<u32>, base: Vec3, tip: Vec3| SkeletonSegment::cylinder(parent, base, tip, 0.01);
        let mut s = Skeleton::default();
        for k in 0..5 {
            let p = (k > 0).then(|| k as u32 - 1);
            s.segments.push(seg(p, Vec3::Y * k as f32, Vec3::Y * (k + 1) as f32));
        }
        let mut p = 1;
        for k in 0..3 {
            let base = Vec3::new(k as f32, 2.0, 0.0);
            s.segments.push(seg(Some(p), base, base + Vec3::X));
            p = s.segments.len() as u32 - 1;
        }
        s
    }

    /// The path lengths the rule reads: along a chain, into an ancestor from its tip, across a
    /// fork at the common ancestor's tip.
    #[test]
    fn paths_run_through_the_tree() {
        let t = Topology::new(&tree());
        let d = |a: (u32, f32, f32), b: (u32, f32, f32)| {
            // The smallest bound that holds, to 1 mm.
            (0..10_000)
                .map(|k| k as f32 * 1e-3)
                .find(|&m| t.path_within(a, b, m))
                .unwrap()
        };
        // Segment 4's base is 2 m above segment 1's tip.
        assert!((d((4, 0.0, 0.5), (1, 0.2, 0.7)) - 2.3).abs() < 2e-3);
        assert!((d((1, 0.2, 0.7), (4, 0.0, 0.5)) - 2.3).abs() < 2e-3);
        // The branch's third segment (7) starts 2 m out from segment 1's tip; segment 2 leaves
        // that tip too: they meet there.
        assert!((d((7, 0.25, 1.0), (2, 0.5, 1.0)) - 2.75).abs() < 2e-3);
        // The same segment: the gap between the stretches.
        assert!((d((3, 0.0, 0.2), (3, 0.7, 1.0)) - 0.5).abs() < 2e-3);
        assert!(t.path_within((3, 0.0, 0.5), (3, 0.4, 1.0), 0.0));
    }
}
