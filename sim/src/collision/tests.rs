//! The collision-free pass on hand-built trees whose intersections are known, and on grown
//! trees against the brute-force search.

use glam::{Quat, Vec3};

use super::kdop::DopK;
use super::modelling::{collision_free, intersecting_pairs, CollisionFreeOptions};
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment};

/// A skeleton built segment by segment: each new segment starts at its parent's tip.
struct Builder(Skeleton);

impl Builder {
    fn new(tip: Vec3, r: f32) -> Builder {
        Builder(Skeleton {
            segments: vec![SkeletonSegment::cylinder(None, Vec3::ZERO, tip, r)],
            leaves: Vec::new(),
        })
    }

    /// A segment from parent `p`'s tip to `tip`; returns its index.
    fn seg(&mut self, p: u32, tip: Vec3, r: f32) -> u32 {
        let base = self.0.segments[p as usize].tip;
        self.0.segments.push(SkeletonSegment::cylinder(Some(p), base, tip, r));
        self.0.segments.len() as u32 - 1
    }

    /// A leaf at the tip of segment `s`, its blade along `dir` (its normal across).
    fn leaf(&mut self, s: u32, dir: Vec3, len: f32) {
        self.0.leaves.push(SkeletonLeaf {
            segment: s,
            along: 1.0,
            orientation: Quat::from_rotation_arc(Vec3::Y, dir.normalize()),
            length: len,
            width: 0.4 * len,
        });
    }
}

fn pass(s: &Skeleton) -> super::modelling::CollisionFree {
    collision_free(s, &CollisionFreeOptions::default()).unwrap()
}

/// Two branches that cross: the one of the deeper branching level (built later) is removed,
/// the brute-force search finds the crossing before and nothing after.
#[test]
fn of_two_crossing_branches_the_later_is_removed() {
    let mut b = Builder::new(Vec3::Y * 2.0, 0.1);
    let up = b.seg(0, Vec3::Y * 4.0, 0.08);
    // A branch from the first stem's tip reaching over to +x at height 3 ...
    let a1 = b.seg(0, Vec3::new(1.0, 2.5, 0.0), 0.01);
    let a2 = b.seg(a1, Vec3::new(1.0, 3.5, 0.0), 0.01);
    // ... and one from the second stem's tip reaching down across it.
    let c1 = b.seg(up, Vec3::new(0.6, 3.8, 0.0), 0.01);
    let c2 = b.seg(c1, Vec3::new(1.4, 3.0, 0.0), 0.01);
    let skel = b.0;
    assert!(intersecting_pairs(&skel, 6).unwrap() > 0, "the branches cross");
    let done = pass(&skel);
    assert_eq!(intersecting_pairs(&done.skeleton, 6).unwrap(), 0);
    // c1 and c2 carry the upper stem on (each its parent's only child): they are level 0,
    // built with the trunk; a1 and a2 are a branch, level 1. a2 is the one that goes, and
    // only it (its radius is under the cut-back radius).
    assert_eq!(done.report.intersecting_stems, 1);
    assert_eq!(done.report.removed_stems, 1);
    assert_eq!(done.segment_map[a2 as usize], u32::MAX);
    assert_ne!(done.segment_map[c2 as usize], u32::MAX);
    assert_eq!(done.skeleton.segments.len(), 5);
}

/// A thick branch that intersects takes its branch back to the branching stem with it; a thin
/// one leaves the stems before it (Fig. 3.5).
#[test]
fn a_thick_stem_that_intersects_is_cut_back_to_its_branching_stem() {
    for (r, removed) in [(0.05, 3), (0.01, 1)] {
        let mut b = Builder::new(Vec3::Y * 2.0, 0.2);
        let up = b.seg(0, Vec3::Y * 4.0, 0.15);
        // A branch of three segments from the first stem's tip, the last curling back into the
        // upper stem.
        let s1 = b.seg(0, Vec3::new(0.8, 2.6, 0.0), r);
        let s2 = b.seg(s1, Vec3::new(1.0, 3.3, 0.0), r);
        let _s3 = b.seg(s2, Vec3::new(0.0, 3.4, 0.0), r);
        let _ = up;
        let done = pass(&b.0);
        assert_eq!(done.report.intersecting_stems, 1, "r {r}");
        assert_eq!(done.report.removed_stems, removed, "r {r}");
        assert_eq!(intersecting_pairs(&done.skeleton, 6).unwrap(), 0);
    }
}

/// Branches leave a thick stem through its bark: their first segments, shorter than the
/// stem is thick, are inside it, and so is the start of the next ones. The root parts keep
/// them: nothing is removed, and the brute-force search (same connection rules) finds nothing.
#[test]
fn branches_emerging_from_a_thick_stem_are_kept() {
    let mut b = Builder::new(Vec3::Y * 2.0, 0.3);
    let mut top = 0;
    for k in 0..4 {
        top = b.seg(top, Vec3::Y * (2.0 + 0.5 * (k + 1) as f32), 0.3);
    }
    for (k, angle) in [0.3f32, 0.8, 1.2, 1.5].into_iter().enumerate() {
        let at = 1 + k as u32;
        let base = b.0.segments[at as usize].tip;
        let dir = Vec3::new(
            angle.sin() * (k as f32).cos(),
            angle.cos(),
            angle.sin() * (k as f32).sin(),
        );
        let mut p = b.seg(at, base + dir * 0.1, 0.04);
        for step in 2..8 {
            p = b.seg(p, base + dir * (0.1 * step as f32), 0.04);
        }
    }
    let skel = b.0;
    let found = super::modelling::intersecting_owners(&skel, 6).unwrap();
    assert!(found.is_empty(), "{found:?}");
    let done = pass(&skel);
    assert_eq!(done.report.removed_stems, 0, "{:?}", done.report);
}

/// A leaf through a stem is dropped, one beside it kept; a twig whose only leaf was dropped
/// goes too, back to its branching stem (§3.2's follow-up).
#[test]
fn leaves_that_intersect_are_dropped_and_bare_twigs_removed() {
    let mut b = Builder::new(Vec3::Y * 2.0, 0.1);
    let up = b.seg(0, Vec3::Y * 4.0, 0.08);
    // A twig of two segments beside the upper stem, its leaf pointing into the stem.
    let t1 = b.seg(0, Vec3::new(0.3, 2.3, 0.0), 0.005);
    let t2 = b.seg(t1, Vec3::new(0.3, 2.6, 0.0), 0.005);
    b.leaf(t2, Vec3::new(-1.0, 0.0, 0.0), 0.4);
    // Another twig with a leaf pointing away.
    let u1 = b.seg(0, Vec3::new(-0.3, 2.3, 0.0), 0.005);
    b.leaf(u1, Vec3::new(-1.0, 0.2, 0.0), 0.2);
    let _ = up;
    let skel = b.0;
    assert!(intersecting_pairs(&skel, 6).unwrap() > 0);
    let done = pass(&skel);
    assert_eq!(done.report.intersecting_leaves, 1);
    assert_eq!(done.report.removed_leaves, 1);
    assert_eq!(done.report.bare_stems, 2, "t2 and, back to the branching stem, t1");
    assert_eq!(done.skeleton.segments.len(), 3);
    assert_eq!(done.skeleton.leaves.len(), 1);
    assert_eq!(done.skeleton.leaves[0].segment, done.segment_map[u1 as usize]);
    assert_eq!(intersecting_pairs(&done.skeleton, 6).unwrap(), 0);
}

/// A grown tree: the voxel grid changes nothing but the number of tests (§3.3), for every k;
/// the result has no intersecting pair where the tree had many.
#[test]
fn the_voxel_grid_gives_the_same_tree_with_fewer_tests() {
    let skel = crate::testtree::test_tree(4, 600, 500).unwrap();
    let before = intersecting_pairs(&skel, 6).unwrap();
    let mut first: Option<Skeleton> = None;
    for k in DopK::ALL {
        let opts = |voxels| CollisionFreeOptions {
            k,
            voxels,
            ..CollisionFreeOptions::default()
        };
        let grid = collision_free(&skel, &opts(true)).unwrap();
        let flat = collision_free(&skel, &opts(false)).unwrap();
        assert_eq!(grid.skeleton, flat.skeleton, "{k}");
        assert!(
            grid.report.kdop_tests < flat.report.kdop_tests / 2,
            "{k}: {:?} {:?}",
            grid.report,
            flat.report
        );
        // The k-DOP only decides which pairs are tested exactly, not the result.
        match &first {
            None => first = Some(grid.skeleton.clone()),
            Some(f) => assert_eq!(f, &grid.skeleton, "{k}"),
        }
        assert_eq!(intersecting_pairs(&grid.skeleton, 6).unwrap(), 0, "{k}");
    }
    assert!(before > 0, "the test tree has intersections to remove");
}

#[test]
fn bad_options_are_refused_naming_the_option() {
    let skel = Builder::new(Vec3::Y, 0.1).0;
    for (opts, name) in [
        (
            CollisionFreeOptions {
                sides: 2,
                ..CollisionFreeOptions::default()
            },
            "sides",
        ),
        (
            CollisionFreeOptions {
                sides: 33,
                ..CollisionFreeOptions::default()
            },
            "sides",
        ),
        (
            CollisionFreeOptions {
                cut_radius: -1.0,
                ..CollisionFreeOptions::default()
            },
            "cut radius",
        ),
        (
            CollisionFreeOptions {
                cut_radius: f32::NAN,
                ..CollisionFreeOptions::default()
            },
            "cut radius",
        ),
    ] {
        let e = collision_free(&skel, &opts).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains("allowed"), "{e}");
    }
}
