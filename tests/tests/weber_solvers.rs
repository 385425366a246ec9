//! The two solvers of Eq. 1 agree, and the result does not depend on the number of workers.

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::dynamics::weber::{InertiaKind, IntegratorKind, SolverKind, WeberModel, WeberParams};
use sylva_sim::scene::{orbit_collider, TestForest};
use sylva_sim::{GustingWind, Material, TreeSize};
use sylva_tests::{run, tree_sim};

/// `direct` and `cg` solve the same right-hand side to the same Δv (relative 1e-5 in the
/// 2-norm, per plane) on the three benchmark trees, in a windy, moving state: with the
/// articulated mass matrix (the default), and with the diagonal one and Newmark's step.
#[test]
fn direct_and_cg_agree_on_benchmark_trees() {
    let cases = [
        (TreeSize::Simple, InertiaKind::Articulated, IntegratorKind::SemiImplicit),
        (TreeSize::Dense, InertiaKind::Articulated, IntegratorKind::SemiImplicit),
        (
            TreeSize::Oliapuram,
            InertiaKind::Articulated,
            IntegratorKind::SemiImplicit,
        ),
        (TreeSize::Simple, InertiaKind::Articulated, IntegratorKind::Newmark),
        (TreeSize::Dense, InertiaKind::Diagonal, IntegratorKind::SemiImplicit),
    ];
    for (size, inertia, integrator) in cases {
        let params = WeberParams {
            inertia,
            integrator,
            ..WeberParams::default()
        };
        let mut sim = tree_sim(size, 7, Material::default(), params);
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
                "{size:?} {inertia:?} {integrator:?} plane {plane}: |Δv_cg - Δv_direct| / |Δv_direct| = {:e}",
                diff / norm
            );
        }
        // The trial solves leave the state untouched: stepping still works and stays finite.
        run(&mut sim, &jobs, 5, |_, _| {});
        assert!(sim.finite());
    }
}

/// The mass matrix of one plane from its definition, assembled densely: every segment a rod of
/// mass m spread evenly along it, as two Gauss–Legendre points of mass m/2 at
/// s = 1/2 ± 1/(2√3) (exact for the rod's kinetic energy), each moving with
/// Σ_{a ancestor} u_a·Θ̇_a + s·u_j·Θ̇_j, u being the direction vectors of the rest pose.
fn dense_articulated_mass(sim: &WeberModel, u: &[Vec3]) -> Vec<Vec<f64>> {
    let s = &sim.forest().seg;
    let n = s.parent.len();
    let mut m = vec![vec![0.0; n]; n];
    let d = |v: Vec3| [v.x as f64, v.y as f64, v.z as f64];
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    for j in 0..n {
        let mut jac = vec![];
        let mut a = j;
        while s.parent[a] != sylva_sim::forest::NO_PARENT {
            a = s.parent[a] as usize;
            jac.push((a, d(u[a])));
        }
        for sp in [0.5 - 0.5 / 3f64.sqrt(), 0.5 + 0.5 / 3f64.sqrt()] {
            let w = 0.5 * s.mass[j] as f64;
            let mut all = jac.clone();
            let uj = d(u[j]);
            all.push((j, [sp * uj[0], sp * uj[1], sp * uj[2]]));
            for &(a, ja) in &all {
                for &(b, jb) in &all {
                    m[a][b] += w * dot(ja, jb);
                }
            }
        }
    }
    m
}

/// Direct elimination solves Eq. 1 exactly: the residual A·Δv - b, with A = M + γh·C + γ²h²·K
/// assembled independently from the tree's springs, dampers and masses, is at rounding level,
/// for the diagonal M (Weber's inertias) and for the dense articulated M, with both
/// integrators.
#[test]
fn direct_solution_satisfies_the_assembled_system() {
    for (inertia, integrator) in [
        (InertiaKind::Diagonal, IntegratorKind::SemiImplicit),
        (InertiaKind::Articulated, IntegratorKind::SemiImplicit),
        (InertiaKind::Articulated, IntegratorKind::Newmark),
    ] {
        let params = WeberParams {
            inertia,
            integrator,
            ..WeberParams::default()
        };
        let mut sim = tree_sim(TreeSize::Simple, 11, Material::default(), params);
        // The rest pose's direction vectors, which the articulated matrix is built from.
        let rest = sim.directions().clone();
        sim.set_wind(Box::new(GustingWind::new(12.0, 0.2, 0.5, 5).unwrap()));
        let jobs = JobSystem::new(1).unwrap();
        run(&mut sim, &jobs, 20, |_, _| {});
        let dv = sim.trial_delta_v(SolverKind::Direct);
        let b = sim.trial_rhs();
        let s = &sim.forest().seg;
        let h = (integrator.gamma() * sim.params().dt) as f64;
        for plane in 0..2 {
            let n = s.parent.len();
            let mut a = match inertia {
                InertiaKind::Diagonal => {
                    let mut a = vec![vec![0.0; n]; n];
                    for (i, row) in a.iter_mut().enumerate() {
                        row[i] = s.inertia[i] as f64;
                    }
                    a
                }
                InertiaKind::Articulated => dense_articulated_mass(&sim, &rest[plane]),
            };
            // Newmark's load stiffness of the step and the quadratic drag's aerodynamic
            // damping (as D/(γh); both zero with the semi-implicit step under the linear law),
            // on the diagonal with (γh)².
            let stiff = sim.plane(plane).stiff.clone();
            assert!(stiff.iter().any(|s| *s > 0.0), "the wind should pull some branches");
            for (i, row) in a.iter_mut().enumerate() {
                row[i] += h * h * stiff[i] as f64;
            }
            // The springs and dampers: e_i on the diagonal of i and its parent, -e_i between.
            for i in 0..n {
                let e = h * s.damping[i] as f64 + h * h * s.stiffness[i] as f64;
                a[i][i] += e;
                if s.parent[i] != sylva_sim::forest::NO_PARENT {
                    let p = s.parent[i] as usize;
                    a[p][p] += e;
                    a[i][p] -= e;
                    a[p][i] -= e;
                }
            }
            let x: Vec<f64> = dv[plane].iter().map(|v| *v as f64).collect();
            let bn: f64 = b[plane].iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
            let rn: f64 = (0..n)
                .map(|i| {
                    let ax: f64 = (0..n).map(|j| a[i][j] * x[j]).sum();
                    (ax - b[plane][i] as f64).powi(2)
                })
                .sum::<f64>()
                .sqrt();
            assert!(
                rn <= 1e-5 * bn,
                "{inertia:?} {integrator:?} plane {plane}: residual {rn:e} for |b| = {bn:e}"
            );
        }
    }
}

fn forest_sim(trees: usize, solver: SolverKind, integrator: IntegratorKind) -> WeberModel {
    let scene = TestForest::new(21, 400, 900, trees, &Material::default()).unwrap();
    let mut sim = WeberModel::new(
        scene.forest,
        WeberParams {
            solver,
            integrator,
            ..WeberParams::default()
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
/// and both solvers (and Newmark's step, whose matrix is refactored every step).
#[test]
fn state_hash_is_identical_for_any_thread_count() {
    for (solver, integrator) in [
        (SolverKind::Direct, IntegratorKind::SemiImplicit),
        (SolverKind::Cg, IntegratorKind::SemiImplicit),
        (SolverKind::Direct, IntegratorKind::Newmark),
    ] {
        for trees in [1usize, 9] {
            let hashes: Vec<u64> = [1usize, 2, 4]
                .iter()
                .map(|&threads| {
                    let mut sim = forest_sim(trees, solver, integrator);
                    let jobs = JobSystem::new(threads).unwrap();
                    run(&mut sim, &jobs, 120, |_, _| {});
                    assert!(sim.stats().corrections > 0, "the colliders should touch the trees");
                    sim.state_hash()
                })
                .collect();
            assert!(
                hashes.iter().all(|h| *h == hashes[0]),
                "{solver:?} {integrator:?}, {trees} trees: hashes {hashes:x?}"
            );
        }
    }
    // And the hash does see the state: a different wind gives a different hash.
    let mut a = forest_sim(1, SolverKind::Direct, IntegratorKind::SemiImplicit);
    let mut b = forest_sim(1, SolverKind::Direct, IntegratorKind::SemiImplicit);
    b.set_wind(Box::new(GustingWind::new(21.0, 0.4, 0.5, 8).unwrap()));
    let jobs = JobSystem::new(1).unwrap();
    run(&mut a, &jobs, 10, |_, _| {});
    run(&mut b, &jobs, 10, |_, _| {});
    assert_ne!(a.state_hash(), b.state_hash());
}
