//! Weber's spatial collision response: segments bend out of a sphere, the pose stays connected.

#![allow(clippy::needless_range_loop)]

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::dynamics::weber::WeberParams;
use sylva_sim::dynamics::DynamicsModel;
use sylva_sim::scene::orbit_collider;
use sylva_sim::{test_tree, GustingWind, Material, Motion, SphereCollider, TreeSize};
use sylva_tests::{run, sim_of};

/// A sphere driven through the crown: three steps after a segment first touches it, no segment
/// tip is inside the sphere by more than 1 % of its radius.
#[test]
fn sphere_through_the_crown_leaves_no_tip_inside() {
    let (n, m) = TreeSize::Dense.counts();
    let skel = test_tree(4, n, m).unwrap();
    let height = skel.height();
    let mut sim = sim_of(&[skel], Material::default(), WeberParams::default());
    let radius = 0.1 * height;
    let start = Vec3::new(-0.6 * height, 0.6 * height, 0.3);
    let speed = 1.5;
    sim.add_collider(
        SphereCollider::new(
            start,
            radius,
            Motion::Linear {
                start,
                velocity: Vec3::new(speed, 0.0, 0.0),
            },
        )
        .unwrap(),
    );
    let steps = (1.2 * height / speed * 60.0) as usize;
    let n = sim.forest().segment_count();
    let mut first_contact = vec![usize::MAX; n];
    let mut checked = 0usize;
    let mut worst = 0.0f32;
    let jobs = JobSystem::new(1).unwrap();
    run(&mut sim, &jobs, steps, |k, sim| {
        let c = sim.colliders()[0];
        let seg = &sim.forest().seg;
        let pose = sim.pose();
        for i in 0..n {
            let t = pose.tip(i, seg.length[i]);
            let base = pose.base[i];
            if first_contact[i] == usize::MAX && c.contact(base, t, seg.radius_base[i], seg.radius_tip[i]).is_some() {
                first_contact[i] = k;
            }
            if first_contact[i] != usize::MAX && k >= first_contact[i] + 3 {
                let inside = c.radius - (t - c.center).length();
                worst = worst.max(inside);
                checked += 1;
            }
        }
    });
    let touched = first_contact.iter().filter(|k| **k != usize::MAX).count();
    assert!(
        touched > 50,
        "the sphere should sweep through many segments, touched {touched}"
    );
    assert!(checked > 1000, "too few checks ({checked})");
    assert!(
        worst <= 0.01 * radius,
        "a tip stayed {worst} m inside a sphere of radius {radius} m"
    );
    assert!(sim.stats().corrections > 0);
}

/// After every step, with wind and an orbiting collider bending segments around, each
/// segment's base is its parent's tip (but the first of a piece the gusts broke off) and its
/// length is unchanged.
#[test]
fn joints_stay_connected_and_lengths_fixed() {
    let (n, m) = TreeSize::Simple.counts();
    let skel = test_tree(2, n, m).unwrap();
    let collider = orbit_collider(&skel, Vec3::ZERO).unwrap();
    let mut sim = sim_of(&[skel], Material::default(), WeberParams::default());
    sim.set_wind(Box::new(GustingWind::new(25.0, 0.3, 0.5, 2).unwrap()));
    sim.add_collider(collider);
    let jobs = JobSystem::new(2).unwrap();
    let mut worst_gap = 0.0f32;
    let mut worst_len = 0.0f32;
    run(&mut sim, &jobs, 600, |_, sim| {
        let seg = &sim.forest().seg;
        let pose = sim.pose();
        for i in 0..seg.parent.len() {
            let len = (pose.tip(i, seg.length[i]) - pose.base[i]).length();
            worst_len = worst_len.max((len - seg.length[i]).abs());
            // A piece the wind broke off (debris) hangs from nothing: its first segment has no
            // parent's tip to keep to, the rest of it keeps to its own.
            if seg.parent[i] != sylva_sim::forest::NO_PARENT && DynamicsModel::attached(sim, i) {
                let p = seg.parent[i] as usize;
                let parent_tip = pose.base[p] + pose.orient[p] * Vec3::new(0.0, seg.length[p], 0.0);
                let gap = (pose.base[i] - parent_tip).length();
                // A piece of debris is posed as a rigid body from its centre of mass, which the
                // gusts carry a long way: there the gap is f32 rounding of positions far from
                // the origin (about 1e-7 of the distance), not a loose joint.
                let rounding = if sim.in_piece(i) {
                    1e-7 * pose.base[i].length()
                } else {
                    0.0
                };
                worst_gap = worst_gap.max(gap - rounding);
            }
        }
    });
    assert!(
        sim.stats().corrections > 100,
        "the orbiting sphere should push segments"
    );
    assert!(worst_gap <= 1e-5, "a base drifted {worst_gap} m from its parent's tip");
    assert!(worst_len <= 1e-5, "a length changed by {worst_len} m");
}
