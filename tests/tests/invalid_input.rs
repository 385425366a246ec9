//! Invalid input is refused with an error naming the parameter and what is allowed; nothing
//! panics.

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::dynamics::weber::{WeberModel, WeberParams};
use sylva_sim::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment};
use sylva_sim::{test_tree, Damping, GustingWind, Material, Motion, SimError, SphereCollider, Stiffness};
use sylva_tests::{chain, forest_of};

fn message(e: impl std::fmt::Display) -> String {
    e.to_string()
}

#[test]
fn zero_segments_and_leaves_without_segments() {
    for (n, m) in [(0usize, 0usize), (0, 12)] {
        let e = test_tree(1, n, m).unwrap_err();
        assert!(matches!(e, SimError::Parameter { name: "segments", .. }), "{e}");
        assert!(message(&e).contains("at least 1"), "{e}");
    }
    // A skeleton with leaves but no segments.
    let skel = Skeleton {
        segments: vec![],
        leaves: vec![SkeletonLeaf {
            segment: 0,
            along: 0.5,
            orientation: glam::Quat::IDENTITY,
            length: 0.1,
            width: 0.05,
        }],
    };
    let e = forest_of(&skel, &Material::default()).unwrap_err();
    assert!(message(&e).contains("at least one segment"), "{e}");
}

#[test]
fn bad_time_steps_are_refused() {
    let forest = || forest_of(&chain(3, 0.5, 0.02, Vec3::Y), &Material::default()).unwrap();
    for dt in [0.0f32, -0.01, f32::NAN, f32::INFINITY, 5.0] {
        let e = WeberModel::new(
            forest(),
            WeberParams {
                dt,
                ..WeberParams::default()
            },
        )
        .err()
        .expect("refused");
        assert!(
            matches!(e, SimError::Parameter { name: "time step", .. }),
            "dt {dt}: {e}"
        );
        assert!(message(&e).contains("greater than 0"), "{e}");
    }
    let mut sim = WeberModel::new(forest(), WeberParams::default()).unwrap();
    assert!(sim.set_time_step(f32::NAN).is_err());
    assert!(sim.set_time_step(0.0).is_err());
    assert_eq!(
        sim.params().dt,
        WeberParams::default().dt,
        "a refused time step leaves the old one"
    );
}

#[test]
fn negative_or_absurd_material_is_refused() {
    let skel = chain(3, 0.5, 0.02, Vec3::Y);
    let bad = [
        Material {
            stiffness: Stiffness::Beam { youngs_modulus: -1.0e9 },
            ..Material::default()
        },
        Material {
            stiffness: Stiffness::Power {
                coefficient: -3.0,
                exponent: 2.5,
            },
            ..Material::default()
        },
        Material {
            stiffness: Stiffness::Beam {
                youngs_modulus: f32::NAN,
            },
            ..Material::default()
        },
        Material {
            damping: Damping::Ratio(-0.1),
            ..Material::default()
        },
        Material {
            wood_density: 0.0,
            ..Material::default()
        },
        Material {
            leaf_drag: -1.0,
            ..Material::default()
        },
    ];
    for m in bad {
        let e = forest_of(&skel, &m).unwrap_err();
        assert!(matches!(e, SimError::Parameter { .. }), "{e}");
        assert!(message(&e).contains("must be"), "{e}");
    }
}

#[test]
fn malformed_skeletons_are_refused() {
    let good = chain(3, 0.5, 0.02, Vec3::Y);
    let mut cases: Vec<(Skeleton, &str)> = Vec::new();
    let mut s = good.clone();
    s.segments[2].parent = Some(2);
    cases.push((s, "parent must come before"));
    let mut s = good.clone();
    s.segments[1].base += Vec3::X;
    cases.push((s, "base must be its parent's tip"));
    let mut s = good.clone();
    s.segments[1].radius_tip = -0.01;
    cases.push((s, "radii must be positive"));
    let mut s = good.clone();
    s.segments[2].tip = Vec3::new(f32::NAN, 0.0, 0.0);
    cases.push((s, "non-finite"));
    let mut s = good.clone();
    s.segments[0].parent = Some(0);
    cases.push((s, "root"));
    let mut s = good.clone();
    s.segments.push(SkeletonSegment {
        parent: None,
        base: Vec3::ZERO,
        tip: Vec3::Y,
        radius_base: 0.01,
        radius_tip: 0.01,
    });
    cases.push((s, "only segment 0 may be a root"));
    let leaf = |segment: u32, along: f32| SkeletonLeaf {
        segment,
        along,
        orientation: glam::Quat::IDENTITY,
        length: 0.1,
        width: 0.05,
    };
    let mut s = good.clone();
    s.leaves.push(leaf(7, 0.5));
    cases.push((s, "hangs on segment 7"));
    let mut s = good.clone();
    s.leaves.push(leaf(1, 1.5));
    cases.push((s, "allowed is 0 to 1"));
    let mut s = good;
    s.segments[1].tip = s.segments[1].base;
    cases.push((s, "must be longer"));
    for (skel, want) in cases {
        let e = forest_of(&skel, &Material::default()).unwrap_err();
        assert!(message(&e).contains(want), "expected '{want}' in: {e}");
    }
}

#[test]
fn bad_wind_colliders_and_thread_counts_are_refused() {
    assert!(GustingWind::new(f32::NAN, 0.0, 0.5, 1).is_err());
    assert!(GustingWind::new(-3.0, 0.0, 0.5, 1).is_err());
    assert!(SphereCollider::new(Vec3::ZERO, 0.0, Motion::Static).is_err());
    assert!(SphereCollider::new(Vec3::ZERO, f32::NAN, Motion::Static).is_err());
    assert!(SphereCollider::new(
        Vec3::ZERO,
        1.0,
        Motion::Orbit {
            center: Vec3::ZERO,
            radius: 1.0,
            period: 0.0
        }
    )
    .is_err());
    assert!(SphereCollider::new(Vec3::NAN, 1.0, Motion::Static).is_err());
    let e = JobSystem::new(0).expect_err("zero threads refused");
    assert!(e.to_string().contains('0'), "{e}");
}
