//! Every spec file in the shared data, every species of each library: it loads, grows, builds
//! solver data and simulates 100 steps in wind without a NaN.

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::spec::load::load_file;
use sylva_sim::weberpenn::{generate, GenOptions};
use sylva_sim::{Forest, GustingWind, Material, SimParams, Simulation, TreePlacement, PHASES};

#[test]
fn every_shared_spec_loads_grows_and_simulates() {
    let files = sylva_tests::tree_spec_files();
    assert!(files.len() >= 60, "found {} spec files", files.len());
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(&PHASES);
    let mut species = 0;
    for path in files {
        let lib = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!lib.species.is_empty(), "{}: no species", path.display());
        for spec in &lib.species {
            let grown = generate(spec, &GenOptions::default(), &mut |_| {})
                .unwrap_or_else(|e| panic!("{} / {}: {e}", path.display(), spec.species));
            let forest = Forest::build(
                &[TreePlacement {
                    skeleton: &grown.skeleton,
                    position: Vec3::ZERO,
                }],
                &Material::default(),
            )
            .unwrap_or_else(|e| panic!("{} / {}: {e}", path.display(), spec.species));
            let mut sim = Simulation::new(forest, SimParams::default())
                .unwrap_or_else(|e| panic!("{} / {}: {e}", path.display(), spec.species));
            sim.set_wind(Box::new(GustingWind::new(8.0, 0.3, 0.5, 1).unwrap()));
            for _ in 0..100 {
                sim.step(&jobs, &timings);
            }
            assert!(sim.finite(), "{} / {}: NaN or infinity", path.display(), spec.species);
            species += 1;
        }
    }
    assert!(species >= 80, "{species} species");
}
