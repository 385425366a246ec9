//! Every L-system preset grows a skeleton that becomes solver data (masses, springs and dampers
//! from radius and length) and takes 100 steps in wind without a NaN.

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::dynamics::weber::{WeberModel, WeberParams, PHASES};
use sylva_sim::lsystem::{grow, preset, preset_names};
use sylva_sim::{Forest, GustingWind, Material, TreePlacement};

#[test]
fn lsystem_presets_become_solver_data_and_simulate() {
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(&PHASES);
    for name in preset_names() {
        let ls = preset(name).unwrap();
        let grown = grow(&ls, ls.iterations, 3, &mut |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
        let forest = Forest::build(
            &[TreePlacement {
                skeleton: &grown.skeleton,
                position: Vec3::ZERO,
            }],
            &Material::default(),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let s = &forest.seg;
        // Thicker segments are stiffer: springs follow the radius.
        let thickest = (0..s.stiffness.len())
            .max_by(|&a, &b| s.radius_base[a].total_cmp(&s.radius_base[b]))
            .unwrap();
        let thinnest = (0..s.stiffness.len())
            .min_by(|&a, &b| s.radius_base[a].total_cmp(&s.radius_base[b]))
            .unwrap();
        assert!(s.stiffness[thickest] > s.stiffness[thinnest], "{name}");
        let mut sim = WeberModel::new(forest, WeberParams::default()).unwrap();
        sim.set_wind(Box::new(GustingWind::new(10.0, 0.0, 0.5, 2).unwrap()));
        for _ in 0..100 {
            sim.step(&jobs, &timings);
        }
        assert!(sim.finite(), "{name}: NaN");
        assert!(sim.max_deflection() > 0.0, "{name}: the wind should move it");
    }
}
