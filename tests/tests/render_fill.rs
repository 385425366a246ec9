//! Filling the render command cache from the simulation's arrays (CPU only): instances carry
//! the simulated pose exactly, levels of detail thin distant trees while keeping their foliage
//! area, and trees outside the view are culled.

use glam::{Quat, Vec3};
use sylva_engine::{FrameTimings, JobSystem};
use sylva_render::frame::{tree_levels, Camera, FillIndex, LodSettings, RenderFrame, MAX_LEAF_GROW};
use sylva_sim::dynamics::weber::{WeberModel, WeberParams, PHASES};
use sylva_sim::scene::SpeciesForest;
use sylva_sim::{species, Material};

fn forest_sim(trees: usize) -> WeberModel {
    let specs = [species::builtin("lombardy_poplar").unwrap()];
    let forest = SpeciesForest::new(&specs, trees, 3, &Material::default(), 2).unwrap();
    let mut sim = WeberModel::new(forest.forest, WeberParams::default()).unwrap();
    sim.set_wind(Box::new(sylva_sim::GustingWind::new(10.0, 0.0, 0.5, 1).unwrap()));
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(&PHASES);
    for _ in 0..30 {
        sim.step(&jobs, &timings);
    }
    sim
}

fn quat(q: [i16; 4]) -> Quat {
    Quat::from_xyzw(q[0] as f32, q[1] as f32, q[2] as f32, q[3] as f32).normalize()
}

#[test]
fn near_trees_carry_every_segment_and_leaf_of_the_pose() {
    let sim = forest_sim(1);
    let tree = &sim.forest().trees[0];
    let camera = Camera::orbit(tree.root + Vec3::Y * 10.0, 0.0, 0.1, 1.5 * tree.reach, 1.5, 1080.0);
    let mut frame = RenderFrame::default();
    frame.fill(
        sim.forest(),
        &FillIndex::new(sim.forest()),
        &sim.pose(),
        [(Vec3::ONE, 0.5)],
        &camera,
        &LodSettings::default(),
    );
    assert_eq!(frame.trees_drawn, [1, 0, 0]);
    let forest = sim.forest();
    let pose = sim.pose();
    let mut segments: Vec<_> = frame.segments.iter().flatten().copied().collect();
    assert_eq!(
        segments.len(),
        forest.segment_count(),
        "full detail draws every segment"
    );
    // Each instance is one segment: match them by base position and length.
    segments.sort_by(|a, b| a.base_radius.partial_cmp(&b.base_radius).unwrap());
    for i in 0..forest.segment_count() {
        let b = pose.base[i];
        let inst = segments
            .iter()
            .find(|s| {
                s.base_radius[..3] == [b.x, b.y, b.z]
                    && s.length_tip[0] == forest.seg.length[i]
                    && s.base_radius[3] == forest.seg.radius_base[i]
            })
            .unwrap_or_else(|| panic!("segment {i} has no instance"));
        assert_eq!(inst.length_tip[1], forest.seg.radius_tip[i]);
        let q = quat(inst.orient);
        assert!(
            q.dot(pose.orient[i]).abs() > 0.99999,
            "segment {i}: {q:?} vs {:?}",
            pose.orient[i]
        );
    }
    let leaves = &frame.leaves[0];
    assert_eq!(leaves.len(), forest.leaf_count());
    for (j, l) in leaves.iter().enumerate() {
        let p = pose.leaf_pos[j];
        assert_eq!(l.pos_length[..3], [p.x, p.y, p.z]);
        assert!((l.pos_length[3] - forest.leaf.length_m(j)).abs() < 1e-6);
        let seg = (0..forest.segment_count())
            .find(|&i| forest.leaves_of(i).contains(&j))
            .unwrap();
        let expected = pose.leaf_orientation(forest, seg, j);
        assert!(quat(l.orient).dot(expected).abs() > 0.9999, "leaf {j}");
    }
    assert_eq!(frame.spheres.len(), 1);
    assert_eq!(frame.instance_count(), forest.segment_count() + forest.leaf_count() + 1);
    assert_eq!(
        frame.instance_bytes(),
        32 * (forest.segment_count() + forest.leaf_count()) + 16
    );
}

#[test]
fn distant_trees_lose_twigs_and_leaves_but_keep_their_foliage_area() {
    let sim = forest_sim(1);
    let tree = sim.forest().trees[0].clone();
    let area = |frame: &RenderFrame| -> f64 {
        frame
            .leaves
            .iter()
            .flatten()
            .map(|l| (l.pos_length[3] * l.width_shade[0]) as f64)
            .sum()
    };
    let fill = |distance: f32| {
        let camera = Camera::orbit(tree.root + Vec3::Y * 10.0, 0.0, 0.1, distance, 1.5, 720.0);
        let mut frame = RenderFrame::default();
        frame.fill(
            sim.forest(),
            &FillIndex::new(sim.forest()),
            &sim.pose(),
            [],
            &camera,
            &LodSettings::default(),
        );
        frame
    };
    let near = fill(1.5 * tree.reach);
    let mid = fill(6.0 * tree.reach);
    let far = fill(30.0 * tree.reach);
    assert_eq!(
        (near.trees_drawn, mid.trees_drawn, far.trees_drawn),
        ([1, 0, 0], [0, 1, 0], [0, 0, 1])
    );
    let count = |f: &RenderFrame| f.segments.iter().map(Vec::len).sum::<usize>();
    let leaves = |f: &RenderFrame| f.leaves.iter().map(Vec::len).sum::<usize>();
    assert!(
        count(&mid) < count(&near) && count(&far) < count(&mid),
        "twigs are dropped with distance"
    );
    assert!(
        far.segments[0].is_empty() && far.segments[1].is_empty(),
        "a far tree's branches are all 3-sided"
    );
    let n = sim.forest().leaf_count();
    assert!(
        leaves(&mid).abs_diff(n / 2) <= 1 + n / 100,
        "level 1 keeps half the leaves: {} of {n}",
        leaves(&mid)
    );
    // The kept leaves are the tree's even leaves, where the simulation put them.
    {
        let pose = sim.pose();
        let first = tree.leaves.start as usize;
        let expected: Vec<Vec3> = (first..tree.leaves.end as usize)
            .step_by(2)
            .map(|j| pose.leaf_pos[j])
            .collect();
        for l in mid.leaves.iter().flatten() {
            let p = Vec3::new(l.pos_length[0], l.pos_length[1], l.pos_length[2]);
            let nearest = expected.iter().map(|e| e.distance(p)).fold(f32::INFINITY, f32::min);
            assert!(
                nearest < 1e-4,
                "a level-1 leaf at {p} is {nearest} m from every kept leaf"
            );
        }
    }
    // Level 2 keeps a quarter or fewer, down to 1 in 32 for a tree a few pixels tall.
    let tiniest = fill(300.0 * tree.reach);
    let (kept_far, tiny) = (leaves(&far), leaves(&tiniest));
    assert!(
        kept_far <= n / 4 + 1 + n / 100,
        "level 2 keeps at most a quarter: {kept_far} of {n}"
    );
    assert!(
        tiny.abs_diff(n / 32) <= 1 + n / 100,
        "the farthest keep 1 in 32: {tiny} of {n}"
    );
    for (f, tolerance) in [(&mid, 0.1), (&far, 0.15)] {
        let ratio = area(f) / area(&near);
        assert!(
            (ratio - 1.0).abs() < tolerance,
            "foliage area changed by the level of detail: ratio {ratio}"
        );
    }
    // A near tree whose detail the viewer coarsened (bias 8, as while frames are slow) keeps
    // few leaves, but its leaves, seen several pixels long, grow no more than MAX_LEAF_GROW
    // times: its crown thins rather than turning into giant cards.
    let camera = Camera::orbit(tree.root + Vec3::Y * 10.0, 0.0, 0.1, 1.5 * tree.reach, 1.5, 720.0);
    let mut biased = RenderFrame::default();
    let lod = LodSettings {
        bias: 8.0,
        ..LodSettings::default()
    };
    biased.fill(
        sim.forest(),
        &FillIndex::new(sim.forest()),
        &sim.pose(),
        [],
        &camera,
        &lod,
    );
    let longest = (0..n).map(|j| sim.forest().leaf.length_m(j)).fold(0.0f32, f32::max);
    assert!(
        leaves(&biased) * 4 < n,
        "the coarsened tree keeps few leaves: {} of {n}",
        leaves(&biased)
    );
    for l in biased.leaves.iter().flatten() {
        assert!(
            l.pos_length[3] <= MAX_LEAF_GROW * longest * 1.0001,
            "a thinned leaf {} m long (the longest leaf is {longest} m)",
            l.pos_length[3]
        );
    }
    assert!(area(&biased) < 0.6 * area(&near), "the coarsened crown thins");
}

#[test]
fn trees_out_of_view_are_culled() {
    let sim = forest_sim(4);
    let forest = sim.forest();
    let index = FillIndex::new(forest);
    let c = forest.trees.iter().map(|t| t.root).sum::<Vec3>() / 4.0;
    // Looking away from the forest, from beside it.
    let eye = c + Vec3::new(200.0, 5.0, 0.0);
    let away = Camera {
        eye,
        target: eye + Vec3::X,
        fov_y: 0.8,
        aspect: 1.5,
        height_px: 720.0,
        near: 0.1,
    };
    let mut frame = RenderFrame::default();
    frame.fill(forest, &index, &sim.pose(), [], &away, &LodSettings::default());
    assert_eq!(frame.trees_drawn, [0, 0, 0]);
    let mut levels = Vec::new();
    tree_levels(forest, &away, &LodSettings::default(), &mut levels);
    assert!(
        levels.iter().all(Option::is_none),
        "culled trees have no level: {levels:?}"
    );
    assert_eq!(frame.instance_count(), 0);
    // Turned around, all four are drawn.
    let toward = Camera { target: c, ..away };
    frame.fill(forest, &index, &sim.pose(), [], &toward, &LodSettings::default());
    assert_eq!(frame.trees_drawn.iter().sum::<usize>(), 4);
    let capacity: usize = frame.leaves.iter().map(Vec::capacity).sum();
    frame.fill(forest, &index, &sim.pose(), [], &toward, &LodSettings::default());
    assert_eq!(
        frame.leaves.iter().map(Vec::capacity).sum::<usize>(),
        capacity,
        "a steady scene refills without allocating"
    );
}

/// The segments a tree draws, thickest first, by the rule itself: every segment whose base
/// radius covers at least `min_px` pixels, each in the list of the cylinder its size picks.
fn segments_by_rule(
    forest: &sylva_sim::forest::Forest,
    t: usize,
    scale_px: f32,
    min_px: f32,
    lod: &LodSettings,
) -> [usize; 3] {
    let tree = &forest.trees[t];
    let mut counts = [0; 3];
    for i in tree.segments.start as usize..tree.segments.end as usize {
        let r_px = forest.seg.radius_base[i] * scale_px;
        if r_px < min_px {
            continue;
        }
        counts[if r_px >= lod.sides_px[0] {
            0
        } else if r_px >= lod.sides_px[1] {
            1
        } else {
            2
        }] += 1;
    }
    counts
}

#[test]
fn the_fill_in_jobs_writes_the_same_instances_as_in_order() {
    // Nine poplars in a row seen along it: near ones at full detail, far ones thinned.
    let sim = forest_sim(9);
    let forest = sim.forest();
    let index = FillIndex::new(forest);
    let (first, last) = (forest.trees[0].root, forest.trees[8].root);
    let reach = forest.trees[0].reach;
    let along = (last - first).normalize();
    let eye = first - along * 1.2 * reach + Vec3::Y * 0.5 * reach;
    let camera = Camera {
        eye,
        target: last + Vec3::Y * 0.5 * reach,
        fov_y: 1.0,
        aspect: 1.5,
        height_px: 1080.0,
        near: 0.1,
    };
    // Thresholds between the trees' sizes on screen: three trees at each level.
    let mut sizes: Vec<f32> = forest
        .trees
        .iter()
        .map(|t| t.reach * camera.pixels_per_radian() / (t.root + Vec3::Y * 0.5 * t.reach - camera.eye).length())
        .collect();
    sizes.sort_by(|a, b| b.total_cmp(a));
    let lod = LodSettings {
        radius_px: [0.5 * (sizes[2] + sizes[3]), 0.5 * (sizes[5] + sizes[6])],
        ..LodSettings::default()
    };
    let mut reference = RenderFrame::default();
    reference.fill(forest, &index, &sim.pose(), [(Vec3::ONE, 0.5)], &camera, &lod);
    assert_eq!(reference.trees_drawn, [3, 3, 3], "sizes on screen {sizes:?}");
    // The levels the simulation follows are the fill's, tree by tree.
    let mut levels = Vec::new();
    tree_levels(forest, &camera, &lod, &mut levels);
    let expected: Vec<Option<u8>> = forest
        .trees
        .iter()
        .map(|t| {
            let size = t.reach * camera.pixels_per_radian() / (t.root + Vec3::Y * 0.5 * t.reach - camera.eye).length();
            Some((size < lod.radius_px[0]) as u8 + (size < lod.radius_px[1]) as u8)
        })
        .collect();
    assert_eq!(levels, expected, "sizes on screen {sizes:?}");
    assert_eq!(levels.iter().filter(|l| **l == Some(2)).count(), 3);
    assert!(
        reference.leaves[0].len() > 2 * sylva_render::frame::FILL_PIECE,
        "the lists span several pieces: {}",
        reference.leaves[0].len()
    );
    // The planned runs match the rule applied segment by segment. Instances are traced back to
    // their trees by their segments' bases and radii.
    let owner: std::collections::HashMap<[u32; 4], usize> = {
        let pose = sim.pose();
        (0..forest.tree_count())
            .flat_map(|t| {
                let r = forest.trees[t].segments.clone();
                (r.start as usize..r.end as usize).map(move |i| (i, t))
            })
            .map(|(i, t)| {
                let b = pose.base[i];
                ([b.x, b.y, b.z, forest.seg.radius_base[i]].map(f32::to_bits), t)
            })
            .collect()
    };
    let mut got = vec![[0usize; 3]; forest.tree_count()];
    for (m, list) in reference.segments.iter().enumerate() {
        for s in list {
            got[owner[&s.base_radius.map(f32::to_bits)]][m] += 1;
        }
    }
    for (t, (tree, got)) in forest.trees.iter().zip(&got).enumerate() {
        let centre = tree.root + Vec3::new(0.0, 0.5 * tree.reach, 0.0);
        let scale_px = camera.pixels_per_radian() / (centre - camera.eye).length().max(1e-3);
        let radius_px = tree.reach * scale_px;
        let min_px = if radius_px >= lod.radius_px[0] {
            0.0
        } else {
            lod.min_branch_px
        };
        let seen = sylva_render::frame::Frustum::new(camera.view_proj()).sees(centre, tree.reach);
        let want = if seen {
            segments_by_rule(forest, t, scale_px, min_px, &lod)
        } else {
            [0; 3]
        };
        assert_eq!(*got, want, "tree {t}");
    }
    for threads in [1, 2, 3] {
        let jobs = JobSystem::new(threads).unwrap();
        let mut frame = RenderFrame::default();
        // Twice: the second fill reuses the lists' capacity.
        for _ in 0..2 {
            frame.fill_with_jobs(&jobs, forest, &index, &sim.pose(), [(Vec3::ONE, 0.5)], &camera, &lod);
            assert_eq!(frame.segments, reference.segments, "{threads} threads");
            assert_eq!(frame.leaves, reference.leaves, "{threads} threads");
            assert_eq!(frame.spheres, reference.spheres);
            assert_eq!(frame.trees_drawn, reference.trees_drawn);
            assert_eq!(frame.bounds, reference.bounds);
        }
    }
}

/// A model that turns its leaves (`Pose::leaf_orient` non-empty) is drawn with each leaf's own
/// orientation, at full detail and when distant trees keep only some leaves; the rigid
/// composition (segment times rest) would give other orientations.
#[test]
fn leaves_turned_by_the_model_are_drawn_turned() {
    let sim = forest_sim(1);
    let forest = sim.forest();
    let tree = &forest.trees[0];
    let mut pose = sim.pose().clone();
    assert!(
        pose.leaf_orient.is_empty(),
        "Weber's leaves are rigid on their segments"
    );
    let segment_of: Vec<usize> = (0..forest.leaf_count())
        .map(|j| {
            (0..forest.segment_count())
                .find(|&i| forest.leaves_of(i).contains(&j))
                .unwrap()
        })
        .collect();
    // Each leaf turned about its own normal by an angle of its own (0.3 to 1.3 rad).
    pose.leaf_orient = (0..forest.leaf_count())
        .map(|j| {
            let rigid = pose.leaf_orientation(forest, segment_of[j], j);
            (rigid * Quat::from_rotation_z(0.3 + (j % 11) as f32 * 0.1)).normalize()
        })
        .collect();
    let index = FillIndex::new(forest);
    for distance in [1.5, 6.0] {
        let camera = Camera::orbit(tree.root + Vec3::Y * 10.0, 0.0, 0.1, distance * tree.reach, 1.5, 1080.0);
        let mut frame = RenderFrame::default();
        frame.fill(forest, &index, &pose, [], &camera, &LodSettings::default());
        let drawn: Vec<_> = frame.leaves.iter().flatten().collect();
        assert!(drawn.len() * 3 > forest.leaf_count(), "{} leaves drawn", drawn.len());
        for l in drawn {
            let p = Vec3::new(l.pos_length[0], l.pos_length[1], l.pos_length[2]);
            // Leaves may share an attachment point: the instance is one of those there.
            let here: Vec<usize> = (0..forest.leaf_count())
                .filter(|&j| pose.leaf_pos[j].distance(p) < 1e-3)
                .collect();
            assert!(!here.is_empty(), "a leaf drawn at {p} where none hangs");
            let q = quat(l.orient);
            let matches = |r: Quat| r.dot(q).abs() > 0.9999;
            assert!(
                here.iter().any(|&j| matches(pose.leaf_orient[j])),
                "the leaf at {p} ({distance} reaches) is not drawn with its own orientation"
            );
            assert!(
                !here
                    .iter()
                    .any(|&j| matches(pose.leaf_orientation_rigid(forest, segment_of[j], j))),
                "the leaf at {p} is drawn rigid on its segment"
            );
        }
    }
    // A pose that turns a different number of leaves than the forest has is refused.
    pose.leaf_orient.pop();
    let camera = Camera::orbit(tree.root, 0.0, 0.1, 2.0 * tree.reach, 1.5, 720.0);
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        RenderFrame::default().fill(forest, &index, &pose, [], &camera, &LodSettings::default())
    }));
    assert!(refused.is_err(), "a mismatched leaf_orient must not be drawn");
}

/// The segments of the subtree of segment `s` (parents first).
fn subtree(forest: &sylva_sim::Forest, s: u32) -> Vec<u32> {
    let mut inside = vec![false; forest.segment_count()];
    let mut out = Vec::new();
    for i in s..forest.trees[forest.tree_of(s as usize)].segments.end {
        let p = forest.seg.parent[i as usize];
        if i == s || (p != sylva_sim::forest::NO_PARENT && inside[p as usize]) {
            inside[i as usize] = true;
            out.push(i);
        }
    }
    out
}

/// Pieces of debris beyond the cap are removed: the fill draws neither their segments nor
/// their leaves, at every level of detail and with jobs, and draws everything else.
#[test]
fn segments_the_debris_cap_removed_are_not_drawn() {
    use sylva_sim::dynamics::debris::{Debris, DebrisParams};
    let sim = forest_sim(1);
    let forest = sim.forest();
    let mut pose = sim.pose().clone();
    // Two branches with leaves; a cap of one removes the first when the second comes.
    let branches: Vec<Vec<u32>> = (1..forest.segment_count() as u32)
        .map(|s| subtree(forest, s))
        .filter(|b| b.len() >= 3 && b.iter().any(|&i| !forest.leaves_of(i as usize).is_empty()))
        .take(1)
        .collect();
    let first = branches[0].clone();
    let second: Vec<u32> = (1..forest.segment_count() as u32)
        .filter(|s| !first.contains(s))
        .map(|s| subtree(forest, s))
        .find(|b| b.iter().all(|i| !first.contains(i)))
        .unwrap();
    let mut debris = Debris::new(DebrisParams {
        cap: 1,
        ..DebrisParams::default()
    })
    .unwrap();
    assert!(debris
        .spawn(forest, &first, &pose, &vec![Vec3::ZERO; first.len()], false)
        .is_empty());
    let gone = debris.spawn(forest, &second, &pose, &vec![Vec3::ZERO; second.len()], false);
    assert_eq!(gone, first);
    debris.write_pose(forest, &mut pose);
    let removed_leaves: Vec<usize> = first.iter().flat_map(|&i| forest.leaves_of(i as usize)).collect();
    assert!(!removed_leaves.is_empty());

    let tree = &forest.trees[0];
    let index = FillIndex::new(forest);
    let jobs = JobSystem::new(4).unwrap();
    // A segment instance is one segment: its base, length and base radius (siblings share a
    // base).
    let is_removed_segment = |s: &sylva_render::frame::SegmentInstance| {
        first.iter().any(|&i| {
            let i = i as usize;
            let p = pose.base[i];
            s.base_radius == [p.x, p.y, p.z, forest.seg.radius_base[i]] && s.length_tip[0] == forest.seg.length[i]
        })
    };
    let is_removed_leaf = |p: [f32; 3]| {
        removed_leaves.iter().any(|&j| {
            let q = pose.leaf_pos[j];
            p == [q.x, q.y, q.z]
        })
    };
    // Near (every segment and leaf), then far (thinned leaves, found by segment position).
    for distance in [1.5, 40.0] {
        let camera = Camera::orbit(tree.root + Vec3::Y * 10.0, 0.0, 0.1, distance * tree.reach, 1.5, 1080.0);
        let mut serial = RenderFrame::default();
        serial.fill(forest, &index, &pose, [], &camera, &LodSettings::default());
        let mut parallel = RenderFrame::default();
        parallel.fill_with_jobs(&jobs, forest, &index, &pose, [], &camera, &LodSettings::default());
        assert_eq!(serial.segments, parallel.segments, "jobs write the same instances");
        assert_eq!(serial.leaves, parallel.leaves);
        let segments: Vec<_> = serial.segments.iter().flatten().collect();
        assert!(!segments.is_empty());
        for s in &segments {
            assert!(!is_removed_segment(s), "a removed segment is drawn: {s:?}");
        }
        for l in serial.leaves.iter().flatten() {
            let p = [l.pos_length[0], l.pos_length[1], l.pos_length[2]];
            assert!(!is_removed_leaf(p), "a removed leaf is drawn at {p:?}");
            // A thinned leaf sits on its segment's axis; none inside a removed segment (the
            // ends are shared with the parent and the siblings).
            assert!(
                !first.iter().any(|&i| {
                    let i = i as usize;
                    let a = pose.base[i];
                    let t = pose.tip(i, forest.seg.length[i]);
                    let d = Vec3::from(p) - a;
                    let axis = (t - a).normalize();
                    (d - axis * d.dot(axis)).length() < 1e-5
                        && d.dot(axis) > 1e-4
                        && d.dot(axis) < forest.seg.length[i] - 1e-4
                }),
                "a leaf of a removed segment is drawn at {p:?}"
            );
        }
        if distance < 2.0 {
            assert_eq!(
                segments.len(),
                forest.segment_count() - first.len(),
                "everything else is drawn"
            );
            assert_eq!(
                serial.leaves.iter().map(Vec::len).sum::<usize>(),
                forest.leaf_count() - removed_leaves.len()
            );
        }
    }
}
