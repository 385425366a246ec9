//! The two solvers of Eq. 1 agree, and the result does not depend on the number of workers.

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::scene::{orbit_collider, TestForest};
use sylva_sim::{GustingWind, Material, SimParams, Simulation, SolverKind, TreeSize};
use sylva_tests::{run, tree_sim};

/// `direct` and `cg` solve the same right-hand side to the same Δv (relative 1e-5 in the
/// 2-norm, per plane) on the three benchmark trees, in a windy, moving state.
#[test]
fn direct_and_cg_agree_on_benchmark_trees() {
    for size in [TreeSize::Simple, TreeSize::Dense, TreeSize::Oliapuram] {
        let mut sim = tree_sim(size, 7, Material::default(), SimParams::default());
        sim.set_wind(Box::new(GustingWind::new(15.0, 1.0, 0.5, 3).unwrap()));
        let jobs = JobSystem::new(1).unwrap();
        run(&mut sim, &jobs, 30, |_, _| {});
        let direct = sim.trial_delta_v(SolverKind::Direct);
        let cg = sim.trial_delta_v(SolverKind::Cg);
        for plane in 0..2 {
            let norm: f64 = direct[plane].iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
            let diff: f64 = direct[plane]
                .iter()
                .zip(&cg[plane])
                .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(norm > 1e-6, "{size:?}: the state should be moving (|Δv| = {norm})");
            assert!(
                diff <= 1e-5 * norm,
                "{size:?} plane {plane}: |Δv_cg - Δv_direct| / |Δv_direct| = {:e}",
                diff / norm
            );
        }
        // The trial solves leave the state untouched: stepping still works and stays finite.
        run(&mut sim, &jobs, 5, |_, _| {});
        assert!(sim.finite());
    }
}

/// Direct elimination solves Eq. 1 exactly: the residual A·Δv - b, with A assembled
/// independently from the tree's springs, dampers and inertias, is at rounding level.
#[test]
fn direct_solution_satisfies_the_assembled_system() {
    let mut sim = tree_sim(TreeSize::Simple, 11, Material::default(), SimParams::default());
    sim.set_wind(Box::new(GustingWind::new(12.0, 0.2, 0.5, 5).unwrap()));
    let jobs = JobSystem::new(1).unwrap();
    run(&mut sim, &jobs, 20, |_, _| {});
    let dv = sim.trial_delta_v(SolverKind::Direct);
    let b = sim.trial_rhs();
    let s = &sim.forest().seg;
    let h = sim.params().dt as f64;
    for plane in 0..2 {
        // A = M + hC + h²K: diagonal I_i + e_i + Σ_children e_j, off-diagonal -e_i to the parent.
        let e: Vec<f64> = (0..s.parent.len())
            .map(|i| h * s.damping[i] as f64 + h * h * s.stiffness[i] as f64)
            .collect();
        let x: Vec<f64> = dv[plane].iter().map(|v| *v as f64).collect();
        let mut ax: Vec<f64> = (0..x.len()).map(|i| (s.inertia[i] as f64 + e[i]) * x[i]).collect();
        for i in 0..x.len() {
            if s.parent[i] != sylva_sim::forest::NO_PARENT {
                let p = s.parent[i] as usize;
                ax[p] += e[i] * x[p] - e[i] * x[i];
                ax[i] -= e[i] * x[p];
            }
        }
        let bn: f64 = b[plane].iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
        let rn: f64 = ax
            .iter()
            .zip(&b[plane])
            .map(|(a, b)| (a - *b as f64).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(rn <= 1e-5 * bn, "plane {plane}: residual {rn:e} for |b| = {bn:e}");
    }
}

fn forest_sim(trees: usize, solver: SolverKind) -> Simulation {
    let scene = TestForest::new(21, 400, 900, trees, &Material::default()).unwrap();
    let mut sim = Simulation::new(
        scene.forest,
        SimParams {
            solver,
            ..SimParams::default()
        },
    )
    .unwrap();
    sim.set_wind(Box::new(GustingWind::new(20.0, 0.4, 0.5, 8).unwrap()));
    for (s, p) in scene.skeletons.iter().zip(&scene.positions) {
        sim.add_collider(orbit_collider(s, *p).unwrap());
    }
    sim
}

/// The final state hash is identical with 1, 2 and 4 worker threads: for a forest (whole trees
/// as jobs) and for a single tree (phases, planes and subtrees as jobs), with wind, colliders,
/// and both solvers.
#[test]
fn state_hash_is_identical_for_any_thread_count() {
    for solver in [SolverKind::Direct, SolverKind::Cg] {
        for trees in [1usize, 9] {
            let hashes: Vec<u64> = [1usize, 2, 4]
                .iter()
                .map(|&threads| {
                    let mut sim = forest_sim(trees, solver);
                    let jobs = JobSystem::new(threads).unwrap();
                    run(&mut sim, &jobs, 120, |_, _| {});
                    assert!(sim.stats().corrections > 0, "the colliders should touch the trees");
                    sim.state_hash()
                })
                .collect();
            assert!(
                hashes.iter().all(|h| *h == hashes[0]),
                "{solver:?}, {trees} trees: hashes {hashes:x?}"
            );
        }
    }
    // And the hash does see the state: a different wind gives a different hash.
    let mut a = forest_sim(1, SolverKind::Direct);
    let mut b = forest_sim(1, SolverKind::Direct);
    b.set_wind(Box::new(GustingWind::new(21.0, 0.4, 0.5, 8).unwrap()));
    let jobs = JobSystem::new(1).unwrap();
    run(&mut a, &jobs, 10, |_, _| {});
    run(&mut b, &jobs, 10, |_, _| {});
    assert_ne!(a.state_hash(), b.state_hash());
    let _ = Vec3::ZERO;
}
