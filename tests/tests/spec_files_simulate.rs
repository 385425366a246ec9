//! Every spec file, every species of each library: it loads, grows (every stem level present,
//! leaves where the spec asks for them), builds solver data and simulates 100 steps in wind
//! without a NaN. Always on the repository's fixtures and built-in species; on the third-party
//! corpus in the ignored `corpus_*` test, which `scripts/test.sh` runs when it finds the corpus.

use glam::Vec3;
use std::path::{Path, PathBuf};
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::dynamics::weber::{WeberModel, WeberParams, PHASES};
use sylva_sim::spec::load::load_file;
use sylva_sim::weberpenn::{generate, GenOptions};
use sylva_sim::{Forest, GustingWind, Material, TreePlacement};

/// Loads, grows and simulates every species of every file; returns the number of species.
fn grow_and_simulate(files: &[PathBuf]) -> usize {
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(&PHASES);
    let mut species = 0;
    for path in files {
        let lib = load_file(path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!lib.species.is_empty(), "{}: no species", path.display());
        for spec in &lib.species {
            let name = format!("{} / {}", path.display(), spec.species);
            let grown = generate(spec, &GenOptions::default(), &mut |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
            let stats = &grown.stats;
            assert_eq!(stats.stems_per_level.len(), spec.levels as usize, "{name}");
            assert!(stats.height > 0.0 && stats.segments > 0, "{name}: {stats:?}");
            let forest = Forest::build(
                &[TreePlacement {
                    skeleton: &grown.skeleton,
                    position: Vec3::ZERO,
                }],
                &Material::default(),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut sim = WeberModel::new(forest, WeberParams::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
            sim.set_wind(Box::new(GustingWind::new(8.0, 0.3, 0.5, 1).unwrap()));
            for _ in 0..100 {
                sim.step(&jobs, &timings);
            }
            assert!(sim.finite(), "{name}: NaN or infinity");
            species += 1;
        }
    }
    species
}

/// The repository's fixtures grow complete trees: every stem level and the leaves they ask for.
#[test]
fn fixtures_and_builtin_species_load_grow_and_simulate() {
    let fixtures = sylva_tests::fixture_spec_files();
    assert_eq!(grow_and_simulate(&fixtures), 9, "species in the fixtures");
    for path in &fixtures {
        for spec in &load_file(path).unwrap().species {
            let g = generate(spec, &GenOptions::default(), &mut |_| {}).unwrap();
            let name = format!("{} / {}", path.display(), spec.species);
            assert!(
                g.stats.stems_per_level.iter().all(|&n| n > 0),
                "{name}: a stem level is empty: {:?}",
                g.stats.stems_per_level
            );
            assert!(g.stats.leaves > 0, "{name}: no leaves");
        }
    }
    let species_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/species");
    let mut builtin: Vec<PathBuf> = std::fs::read_dir(&species_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sylva"))
        .collect();
    builtin.sort();
    assert_eq!(
        grow_and_simulate(&builtin),
        sylva_sim::species::names().count(),
        "built-in species"
    );
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_every_shared_spec_loads_grows_and_simulates() {
    let files = sylva_tests::tree_spec_files();
    assert!(files.len() >= 60, "found {} spec files", files.len());
    let species = grow_and_simulate(&files);
    assert!(species >= 80, "{species} species");
}
