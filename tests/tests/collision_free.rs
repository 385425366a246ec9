//! Chen 2011 §3.2–3.3: collision-free modelling of trees from every generator. After the pass
//! a brute-force search of every unconnected pair of primitives (every pair whose boxes
//! overlap, tested exactly, triangle against triangle, with no voxel grid and no k-DOP) finds
//! no intersection; before it the same search finds them. Both counts are printed.

use sylva_sim::collision::modelling::{collision_free, intersecting_pairs, CollisionFreeOptions};
use sylva_sim::colonize::{colonize, ColonizeParams};
use sylva_sim::lsystem::{grow, preset};
use sylva_sim::spec::load::load_file;
use sylva_sim::weberpenn::{generate, GenOptions};
use sylva_sim::{species, testtree, Skeleton};
use sylva_tests::fixture;

/// Trees from every generator: Weber-Penn from built-in species and from fixtures of three
/// tools' formats, L-system presets, space colonization and the test-tree generator.
fn trees() -> Vec<(String, Skeleton)> {
    let mut out = Vec::new();
    let wp = |spec: &sylva_sim::spec::WeberPennSpec| {
        generate(spec, &GenOptions::default(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", spec.species))
            .skeleton
    };
    for name in ["sassafras", "quaking_aspen"] {
        out.push((name.to_string(), wp(&species::builtin(name).unwrap())));
    }
    for rel in [
        "arbaro/small_birch.xml",
        "sapling-0.2/small_aspen.py",
        "tree-gen/little_oak.py",
    ] {
        let lib = load_file(&fixture(rel)).unwrap();
        out.push((rel.to_string(), wp(lib.pick(None).unwrap())));
    }
    for name in ["abop-1.24a", "abop-1.24d", "oliapuram"] {
        let ls = preset(name).unwrap();
        out.push((
            name.to_string(),
            grow(&ls, ls.iterations, 3, &mut |_| {}).unwrap().skeleton,
        ));
    }
    let grown = colonize(&ColonizeParams::default(), &mut |_| {}).unwrap();
    out.push(("colonized".into(), grown.trees[0].clone()));
    out.push(("test tree".into(), testtree::test_tree(7, 3000, 2500).unwrap()));
    out
}

#[test]
fn collision_free_trees_have_no_intersecting_pair_left() {
    let opts = CollisionFreeOptions::default();
    let mut total_before = 0;
    for (name, skel) in trees() {
        let before = intersecting_pairs(&skel, opts.sides).unwrap();
        let done = collision_free(&skel, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        let after = intersecting_pairs(&done.skeleton, opts.sides).unwrap();
        let r = &done.report;
        eprintln!(
            "{name}: {} segments, {} leaves; intersecting pairs before {before}, after {after}; removed {} segments ({} intersecting, {} bare) and {} leaves ({} intersecting) in {:.0} ms",
            skel.segments.len(),
            skel.leaves.len(),
            r.removed_stems,
            r.intersecting_stems,
            r.bare_stems,
            r.removed_leaves,
            r.intersecting_leaves,
            r.ms
        );
        assert_eq!(after, 0, "{name}: intersections left after the pass");
        done.skeleton.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            done.skeleton.segments.len() + r.removed_stems,
            skel.segments.len(),
            "{name}"
        );
        assert_eq!(
            done.skeleton.leaves.len() + r.removed_leaves,
            skel.leaves.len(),
            "{name}"
        );
        // The pass removes what it must, not the tree: most of it stays.
        assert!(
            done.skeleton.segments.len() * 2 > skel.segments.len(),
            "{name}: {} of {} segments left",
            done.skeleton.segments.len(),
            skel.segments.len()
        );
        if before > 0 {
            assert!(r.removed_stems + r.removed_leaves > 0, "{name}");
        }
        total_before += before;
    }
    assert!(
        total_before > 1000,
        "the trees as grown intersect in many places: {total_before}"
    );
}

/// The pass through a spec (Sylva's `CollisionFree`) gives the same tree as the pass after
/// growing, and the generator reports what it removed.
#[test]
fn the_spec_option_runs_the_pass_as_the_tree_grows() {
    let mut spec = species::builtin("sassafras").unwrap();
    let plain = generate(&spec, &GenOptions::default(), &mut |_| {}).unwrap();
    assert!(plain.collision_free.is_none());
    spec.collision_free = Some(8);
    let grown = generate(&spec, &GenOptions::default(), &mut |_| {}).unwrap();
    let opts = CollisionFreeOptions {
        sides: 8,
        ..CollisionFreeOptions::default()
    };
    let after = collision_free(&plain.skeleton, &opts).unwrap();
    assert_eq!(grown.skeleton, after.skeleton);
    let r = grown.collision_free.unwrap();
    assert_eq!(r.removed_stems, after.report.removed_stems);
    assert_eq!(grown.stats.segments as usize, grown.skeleton.segments.len());
    assert_eq!(grown.stats.leaves as usize, grown.skeleton.leaves.len());
    assert!(!grown.trunk_segments.is_empty());
    // The option survives Sylva's own format and is range-checked.
    let text = sylva_sim::spec::text::write(&spec);
    assert!(text.contains("CollisionFree = 8"), "{text}");
    spec.collision_free = Some(2);
    let e = generate(&spec, &GenOptions::default(), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("CollisionFree") && e.contains("3"), "{e}");
}
