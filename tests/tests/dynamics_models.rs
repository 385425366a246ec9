//! What every dynamics model must keep, checked through the common interface
//! (`DynamicsModel`) for each model `ModelKind::ALL` lists: segments stay attached to their
//! parents' tips with their lengths, the pose has the shape the renderer reads, the state is
//! the same for any number of worker threads, reset restores the generated shape at rest, and
//! a tree released from the wind settles.

use glam::{Quat, Vec3};
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::dynamics::{DynamicsModel, ModelKind};
use sylva_sim::forest::NO_PARENT;
use sylva_sim::skeleton::Skeleton;
use sylva_sim::{test_tree, Calm, GustingWind, Material};
use sylva_tests::model_of;

fn trees(count: usize, segments: usize, leaves: usize) -> Vec<Skeleton> {
    (0..count)
        .map(|k| test_tree(11 + k as u64, segments, leaves).expect("test tree"))
        .collect()
}

fn steps(m: &mut dyn DynamicsModel, jobs: &JobSystem, n: usize, mut check: impl FnMut(&dyn DynamicsModel)) {
    let timings = FrameTimings::new(m.phases());
    for _ in 0..n {
        m.step(jobs, &timings);
        check(m);
    }
}

/// The pose's shape and the joints: every segment's base on its parent's tip (the root's on
/// its rest position), unit orientations, every leaf on its segment's axis.
fn check_pose(m: &dyn DynamicsModel, roots: &[Vec3]) {
    let f = m.forest();
    let p = m.pose();
    let (n, leaves) = (f.segment_count(), f.leaf_count());
    assert_eq!(
        (p.base.len(), p.orient.len(), p.leaf_pos.len()),
        (n, n, leaves),
        "{}",
        m.name()
    );
    assert!(
        p.leaf_orient.is_empty() || p.leaf_orient.len() == leaves,
        "{}: leaf_orient holds one orientation per leaf or none",
        m.name()
    );
    for i in 0..n {
        assert!((p.orient[i].length() - 1.0).abs() < 1e-4, "{}: segment {i}", m.name());
        if !m.attached(i) {
            // Broken off: it hangs from nothing.
            continue;
        }
        let expected = match f.seg.parent[i] {
            NO_PARENT => roots[f.trees.iter().position(|t| t.segments.contains(&(i as u32))).unwrap()],
            q => p.tip(q as usize, f.seg.length[q as usize]),
        };
        assert!(
            p.base[i].distance(expected) < 1e-4 * (1.0 + expected.length()),
            "{}: segment {i} came off its parent: {} vs {expected}",
            m.name(),
            p.base[i]
        );
        // A leaf the wind tore off falls on its own (`sylva_sim::dynamics::falling`).
        for j in f.leaves_of(i).filter(|&j| m.leaf_attached(j)) {
            let along = p.leaf_pos[j] - p.base[i];
            let axis = p.orient[i] * Vec3::Y;
            assert!(
                along.cross(axis).length() < 1e-3 && along.dot(axis) <= f.seg.length[i] + 1e-3,
                "{}: leaf {j} left segment {i}",
                m.name()
            );
            let q: Quat = p.leaf_orientation(f, i, j);
            assert!((q.length() - 1.0).abs() < 1e-3, "{}: leaf {j}", m.name());
        }
    }
}

#[test]
fn every_model_keeps_its_segments_attached_in_a_strong_gusting_wind() {
    let skeletons = trees(2, 300, 400);
    let jobs = JobSystem::new(2).unwrap();
    for kind in ModelKind::ALL {
        let mut m = model_of(kind, &skeletons, Material::default());
        let roots: Vec<Vec3> = m.forest().trees.iter().map(|t| t.root).collect();
        check_pose(&*m, &roots);
        let rest: Vec<Vec3> = m.pose().base.clone();
        m.set_wind(Box::new(GustingWind::new(25.0, 0.3, 0.5, 4).unwrap()));
        steps(&mut *m, &jobs, 120, |m| {
            assert!(m.finite(), "{}", m.name());
            check_pose(m, &roots);
        });
        let moved = m
            .pose()
            .base
            .iter()
            .zip(&rest)
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, f32::max);
        assert!(moved > 0.01, "{kind}: a 25 m/s wind must move the trees ({moved} m)");
        assert!(
            m.kinetic_energy() > 0.0 && m.heap_bytes() > m.forest().heap_bytes(),
            "{kind}"
        );
    }
}

#[test]
fn every_model_gives_the_same_state_for_1_2_and_4_workers() {
    // Two trees (fewer than the threads: phases and subtrees as jobs) and nine (whole trees).
    for count in [2, 9] {
        let skeletons = trees(count, 260, 300);
        for kind in ModelKind::ALL {
            let hashes: Vec<u64> = [1, 2, 4]
                .map(|threads| {
                    let jobs = JobSystem::new(threads).unwrap();
                    let mut m = model_of(kind, &skeletons, Material::default());
                    m.set_wind(Box::new(GustingWind::new(15.0, 1.0, 0.5, 7).unwrap()));
                    steps(&mut *m, &jobs, 40, |_| {});
                    m.state_hash()
                })
                .to_vec();
            assert!(
                hashes.windows(2).all(|w| w[0] == w[1]),
                "{kind}, {count} trees: {hashes:x?}"
            );
        }
    }
}

#[test]
fn every_model_resets_to_its_generated_shape_and_settles_when_the_wind_stops() {
    let skeletons = trees(1, 200, 150);
    let jobs = JobSystem::new(1).unwrap();
    for kind in ModelKind::ALL {
        let mut m = model_of(kind, &skeletons, Material::default());
        let (rest_hash, rest_pose) = (m.state_hash(), m.pose().base.clone());
        m.set_wind(Box::new(GustingWind::new(20.0, 0.0, 0.3, 2).unwrap()));
        let mut peak = 0.0f64;
        steps(&mut *m, &jobs, 90, |m| peak = peak.max(m.kinetic_energy()));
        assert!(peak > 0.0, "{kind}");
        // Released: the wind stops and the tree swings out.
        m.set_wind(Box::new(Calm));
        let t0 = m.time();
        steps(&mut *m, &jobs, 900, |_| {});
        assert!(
            (m.time() - t0 - 900.0 * m.dt() as f64).abs() < 1e-6,
            "{kind}: the clock"
        );
        let left = m.kinetic_energy();
        assert!(
            left < 1e-2 * peak,
            "{kind}: kinetic energy {left} J of a peak {peak} J after 15 s of calm"
        );
        m.reset();
        assert_eq!(
            m.state_hash(),
            rest_hash,
            "{kind}: reset restores the generated shape at rest"
        );
        assert_eq!(m.kinetic_energy(), 0.0, "{kind}");
        let back = m
            .pose()
            .base
            .iter()
            .zip(&rest_pose)
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, f32::max);
        assert!(back < 1e-5, "{kind}: the reset pose is {back} m from the generated one");
    }
}

/// The generated shape's pose built from the forest alone (`Pose::of_shape`, what
/// self-collision reads its rest distances in) is every model's pose at rest, up to rounding.
#[test]
fn the_shape_pose_is_every_models_pose_at_rest() {
    let skels = trees(2, 300, 400);
    for kind in ModelKind::ALL {
        let m = model_of(kind, &skels, Material::default());
        let (f, p) = (m.forest(), m.pose());
        let shape = sylva_sim::dynamics::Pose::of_shape(f);
        for i in 0..f.segment_count() {
            assert!((shape.base[i] - p.base[i]).length() < 1e-4, "{kind}: segment {i} base");
            assert!(
                shape.orient[i].dot(p.orient[i]).abs() > 1.0 - 1e-6,
                "{kind}: segment {i} turn"
            );
        }
        for j in 0..f.leaf_count() {
            assert!((shape.leaf_pos[j] - p.leaf_pos[j]).length() < 1e-4, "{kind}: leaf {j}");
            let seg = (0..f.segment_count()).find(|&i| f.leaves_of(i).contains(&j)).unwrap();
            let (a, b) = (shape.leaf_orientation(f, seg, j), p.leaf_orientation(f, seg, j));
            assert!(a.dot(b).abs() > 1.0 - 1e-6, "{kind}: leaf {j} turn");
        }
    }
}
