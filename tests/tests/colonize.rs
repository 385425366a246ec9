//! Space-colonized trees go through the whole pipeline: several trunks competing for one crown
//! become one skeleton each, which build into a forest and sway in wind without blowing up;
//! the roots come back separately and stay below ground.

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::colonize::{colonize, parse_points, ColonizeParams, Envelope, RootParams, StopReason};
use sylva_sim::dynamics::weber::{WeberModel, WeberParams};
use sylva_sim::{Forest, GustingWind, Material, SimError, TreePlacement};
use sylva_tests::run;

fn grove() -> ColonizeParams {
    ColonizeParams {
        crown: Envelope::Union(vec![
            Envelope::Ellipsoid {
                center: Vec3::new(-1.5, 5.0, 0.0),
                radii: Vec3::new(2.5, 2.0, 2.5),
            },
            Envelope::Cone {
                base: Vec3::new(2.0, 3.0, 0.0),
                radius: 2.0,
                height: 5.0,
            },
        ]),
        points: 6000,
        trunks: vec![Vec3::new(-1.5, 0.0, 0.0), Vec3::new(2.0, 0.0, 0.0)],
        roots: Some(RootParams {
            envelope: Envelope::Ellipsoid {
                center: Vec3::new(0.0, -1.2, 0.0),
                radii: Vec3::new(3.5, 1.0, 3.0),
            },
            points: 3000,
        }),
        growth_distance: 0.15,
        influence_distance: 1.2,
        kill_distance: 0.3,
        seed: 4,
        ..ColonizeParams::default()
    }
}

#[test]
fn colonized_grove_builds_a_forest_and_sways() {
    let g = colonize(&grove(), &mut |_| {}).unwrap();
    assert_eq!((g.trees.len(), g.roots.len()), (2, 2));
    assert!(
        g.crown.points_killed as f32 > 0.9 * g.crown.points as f32,
        "{:?}",
        g.crown
    );
    assert_ne!(g.crown.stop, StopReason::IterationLimit);
    for root in &g.roots {
        root.validate().unwrap();
        assert!(root.segments.iter().all(|s| s.tip.y < 0.0 && s.base.y <= 0.0));
    }
    // The skeletons are in world space: place them all at the origin.
    let placements: Vec<_> = g
        .trees
        .iter()
        .map(|skeleton| TreePlacement {
            skeleton,
            position: Vec3::ZERO,
        })
        .collect();
    let forest = Forest::build(&placements, &Material::default()).unwrap();
    assert_eq!(forest.tree_count(), 2);
    let mut sim = WeberModel::new(forest, WeberParams::default()).unwrap();
    sim.set_wind(Box::new(GustingWind::new(12.0, 0.3, 0.5, 2).unwrap()));
    let jobs = JobSystem::new(2).unwrap();
    run(&mut sim, &jobs, 120, |k, sim| assert!(sim.finite(), "step {k}"));
    assert!(sim.max_deflection() > 0.0);
}

#[test]
fn a_crown_read_from_a_points_file() {
    // A small hand-written cloud: a ring of points 3 m up, read as text.
    let mut text = String::from("# ring crown\n");
    for i in 0..400 {
        let a = i as f32 * 0.157;
        let r = 0.4 + (i % 7) as f32 * 0.1;
        text += &format!("{}, {}, {}\n", r * a.cos(), 3.0 + (i % 5) as f32 * 0.2, r * a.sin());
    }
    let points = parse_points(&text, "ring.csv").unwrap();
    assert_eq!(points.len(), 400);
    let params = ColonizeParams {
        crown: Envelope::Points(points),
        points: 400,
        growth_distance: 0.1,
        influence_distance: 0.8,
        kill_distance: 0.2,
        ..ColonizeParams::default()
    };
    let g = colonize(&params, &mut |_| {}).unwrap();
    g.trees[0].validate().unwrap();
    assert!(g.crown.points_killed > 300, "{:?}", g.crown);

    let e = parse_points("1 2 3\n4 5\n", "ring.csv").unwrap_err();
    assert!(matches!(
        e,
        SimError::Parameter {
            name: "points file",
            ..
        }
    ));
    assert!(e.to_string().contains("ring.csv:2:"), "{e}");
}
