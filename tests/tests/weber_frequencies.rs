//! Natural frequencies and numerical dissipation of Weber's model, measured from the simulated
//! motion and checked against results computed outside the solver: the eigenvalues of the
//! chain's own mass and stiffness matrices (assembled here, in f64, from the masses, lengths
//! and springs of the built forest) and Euler–Bernoulli beam theory.
//!
//! The cantilever: horizontal, 2 m, radius 1 cm, E = 30 GPa, wood density 800 kg/m³, no
//! gravity, damping ratio 0. Beam theory: f_k = λ_k²·sqrt(EI/(ρAL⁴))/2π with λ_1 = 1.8751
//! and λ_2 = 4.6941 (4.28 Hz and 26.85 Hz).

#![allow(clippy::needless_range_loop)]

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::dynamics::weber::{InertiaKind, IntegratorKind, WeberModel, WeberParams};
use sylva_sim::{Damping, DragLaw, Material, Stiffness};
use sylva_tests::{chain, run, sim_of};

const LENGTH: f64 = 2.0;
const RADIUS: f64 = 0.01;
const MODULUS: f64 = 3.0e10;
const DENSITY: f64 = 800.0;

fn beam_frequency(lambda: f64) -> f64 {
    let ei = MODULUS * std::f64::consts::PI * RADIUS.powi(4) / 4.0;
    let rho_a = DENSITY * std::f64::consts::PI * RADIUS * RADIUS;
    lambda * lambda * (ei / (rho_a * LENGTH.powi(4))).sqrt() / std::f64::consts::TAU
}

fn cantilever(n: usize, params: WeberParams) -> WeberModel {
    let material = Material {
        wood_density: DENSITY as f32,
        stiffness: Stiffness::Beam {
            youngs_modulus: MODULUS as f32,
        },
        damping: Damping::Ratio(0.0),
        compensate_gravity: false,
        // The undamped beam of beam theory: no air damping either (the quadratic law's drag on
        // the beam's own motion in still air; the linear law has none there).
        drag_law: DragLaw::Linear,
        ..Material::default()
    };
    let params = WeberParams { gravity: 0.0, ..params };
    sim_of(
        &[chain(n, (LENGTH / n as f64) as f32, RADIUS as f32, Vec3::X)],
        material,
        params,
    )
}

/// The chain's matrices in the vertical plane (plane 0: the chain lies along +x, so its
/// angles Θx turn it in the x-y plane, every lever arm u_a = l_a·(0, -1, 0), all parallel), in
/// absolute angles, from the forest's own masses, lengths and springs:
/// - M: each segment a rod of mass m spread evenly; a rod's point at fraction s moves with
///   Σ_{a < j} l_a·Θ̇_a + s·l_j·Θ̇_j, so M_ab = l_a·l_b·(m_b/2 + M_out(b)) for a < b and
///   M_aa = l_a²·(m_a/3 + M_out(a)); or, for the diagonal option, Weber's diagonal inertias
///   (the forest's `inertia`).
/// - K: the joint springs, ½·Σ k_j·(Θ_j - Θ_{j-1})² (Θ_{-1} = 0, the wall).
fn chain_matrices(sim: &WeberModel, inertia: InertiaKind) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let s = &sim.forest().seg;
    let n = s.parent.len();
    let m: Vec<f64> = s.mass.iter().map(|v| *v as f64).collect();
    let l: Vec<f64> = s.length.iter().map(|v| *v as f64).collect();
    let mut out = vec![0.0; n];
    for j in (0..n - 1).rev() {
        out[j] = out[j + 1] + m[j + 1];
    }
    let mut mm = vec![vec![0.0; n]; n];
    for a in 0..n {
        match inertia {
            InertiaKind::Articulated => {
                mm[a][a] = l[a] * l[a] * (m[a] / 3.0 + out[a]);
                for b in a + 1..n {
                    mm[a][b] = l[a] * l[b] * (m[b] / 2.0 + out[b]);
                    mm[b][a] = mm[a][b];
                }
            }
            InertiaKind::Diagonal => mm[a][a] = s.inertia[a] as f64,
        }
    }
    let mut k = vec![vec![0.0; n]; n];
    for j in 0..n {
        assert!(j == 0 || s.parent[j] as usize == j - 1, "a chain");
        let kj = s.stiffness[j] as f64;
        k[j][j] += kj;
        if j > 0 {
            k[j - 1][j - 1] += kj;
            k[j][j - 1] -= kj;
            k[j - 1][j] -= kj;
        }
    }
    (mm, k)
}

/// Cholesky factor L (lower) of a symmetric positive definite matrix.
fn cholesky(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = a.len();
    let mut l = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i][j];
            for k in 0..j {
                s -= l[i][k] * l[j][k];
            }
            if i == j {
                assert!(s > 0.0, "not positive definite");
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    l
}

/// Generalized eigenproblem K·φ = ω²·M·φ, dense, in f64: C = L⁻¹·K·L⁻ᵀ (M = L·Lᵀ) by cyclic
/// Jacobi rotations, φ = L⁻ᵀ·y. Returns (ω², φ) sorted by ω².
fn modes(m: &[Vec<f64>], k: &[Vec<f64>]) -> Vec<(f64, Vec<f64>)> {
    let n = m.len();
    let l = cholesky(m);
    // X = L⁻¹·K (forward substitution per column), then C = X·L⁻ᵀ = (L⁻¹·Xᵀ)ᵀ.
    let lower_solve = |b: &mut [f64]| {
        for i in 0..n {
            let mut s = b[i];
            for k in 0..i {
                s -= l[i][k] * b[k];
            }
            b[i] = s / l[i][i];
        }
    };
    let mut x = vec![vec![0.0; n]; n];
    for c in 0..n {
        let mut col: Vec<f64> = (0..n).map(|r| k[r][c]).collect();
        lower_solve(&mut col);
        for r in 0..n {
            x[r][c] = col[r];
        }
    }
    let mut a = vec![vec![0.0; n]; n];
    for r in 0..n {
        let mut row = x[r].clone();
        lower_solve(&mut row);
        for c in 0..n {
            a[c][r] = row[c];
        }
    }
    for r in 0..n {
        for c in 0..r {
            let v = 0.5 * (a[r][c] + a[c][r]);
            a[r][c] = v;
            a[c][r] = v;
        }
    }
    let mut v = vec![vec![0.0; n]; n];
    for i in 0..n {
        v[i][i] = 1.0;
    }
    for _sweep in 0..100 {
        let mut off = 0.0;
        let mut diag = 0.0;
        for p in 0..n {
            diag += a[p][p] * a[p][p];
            for q in p + 1..n {
                off += a[p][q] * a[p][q];
            }
        }
        if off <= 1e-30 * diag {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k][p], a[k][q]);
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p][k], a[q][k]);
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k][p], v[k][q]);
                    v[k][p] = c * vkp - s * vkq;
                    v[k][q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut out: Vec<(f64, Vec<f64>)> = (0..n)
        .map(|i| {
            // φ = L⁻ᵀ·y: back substitution with Lᵀ.
            let mut y: Vec<f64> = (0..n).map(|r| v[r][i]).collect();
            for r in (0..n).rev() {
                let mut s = y[r];
                for k in r + 1..n {
                    s -= l[k][r] * y[k];
                }
                y[r] = s / l[r][r];
            }
            (a[i][i], y)
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// Frequency [Hz] of mode `k` (0 = first) of the chain's own matrices.
fn chain_frequency(sim: &WeberModel, inertia: InertiaKind, k: usize) -> (f64, Vec<f64>) {
    let (m, kk) = chain_matrices(sim, inertia);
    let mut modes = modes(&m, &kk);
    let (w2, shape) = modes.swap_remove(k);
    (w2.sqrt() / std::f64::consts::TAU, shape)
}

/// Bends the chain's vertical plane by the absolute angles `shape` (added to the straight
/// pose), at rest, scaled so the tip moves `tip` metres.
fn bend(sim: &mut WeberModel, shape: &[f64], tip: f64) {
    let l: Vec<f64> = sim.forest().seg.length.iter().map(|v| *v as f64).collect();
    let moved: f64 = shape.iter().zip(&l).map(|(a, l)| a * l).sum();
    let scale = tip / moved;
    sim.edit_state(|_, [x, z]| {
        for i in 0..x.theta.len() {
            x.theta[i] += (shape[i] * scale) as f32;
            x.vel[i] = 0.0;
            z.vel[i] = 0.0;
        }
    });
}

/// The static shape under a tip load, in absolute angles, from the forest's springs: a
/// vertical force P at the tip loads every joint j with P·(distance to the tip), so the
/// joint bends by that torque over k_j and the absolute angles add the bends up.
fn tip_load_shape(sim: &WeberModel) -> Vec<f64> {
    let s = &sim.forest().seg;
    let n = s.parent.len();
    let mut shape = vec![0.0; n];
    let mut arm: f64 = s.length.iter().map(|v| *v as f64).sum();
    let mut abs = 0.0;
    for j in 0..n {
        abs += arm / s.stiffness[j] as f64;
        shape[j] = abs;
        arm -= s.length[j] as f64;
    }
    shape
}

/// Period of the tip's vertical motion: upward zero crossings of the tip's height, interpolated
/// within the step, fitted by least squares to t_k = t_0 + k·T over `periods` periods.
fn measured_frequency(sim: &mut WeberModel, expected_hz: f64, periods: usize) -> f64 {
    let n = sim.forest().segment_count();
    let dt = sim.params().dt as f64;
    let steps = ((periods as f64 + 0.7) / expected_hz / dt) as usize;
    let jobs = JobSystem::new(1).unwrap();
    let mut crossings = Vec::new();
    let mut prev = sylva_tests::tip(sim, n - 1).y as f64;
    run(sim, &jobs, steps, |k, sim| {
        let y = sylva_tests::tip(sim, n - 1).y as f64;
        if prev < 0.0 && y >= 0.0 {
            crossings.push((k as f64 + prev / (prev - y)) * dt);
        }
        prev = y;
    });
    assert!(sim.finite());
    assert!(
        crossings.len() >= periods,
        "only {} upward crossings in {steps} steps (expected about {periods})",
        crossings.len()
    );
    let c = &crossings[..periods];
    let m = c.len() as f64;
    let mean_k = (m - 1.0) / 2.0;
    let mean_t = c.iter().sum::<f64>() / m;
    let (mut num, mut den) = (0.0, 0.0);
    for (k, t) in c.iter().enumerate() {
        num += (k as f64 - mean_k) * (t - mean_t);
        den += (k as f64 - mean_k).powi(2);
    }
    den / num
}

fn params(inertia: InertiaKind, integrator: IntegratorKind, dt: f32) -> WeberParams {
    WeberParams {
        dt,
        inertia,
        integrator,
        ..WeberParams::default()
    }
}

/// The first natural frequency, measured from the simulated tip motion after release from the
/// static tip-load shape, with 10, 50 and 200 segments: within 2 % of the chain's exact first
/// eigenvalue (articulated and diagonal mass matrices), and with the articulated matrix within
/// 2 % of Euler–Bernoulli at 200 segments. h = 1/2000 s keeps the integrators' own frequency
/// error below 0.2 %. Both integrators.
#[test]
fn cantilever_first_frequency_matches_the_chain_and_the_beam() {
    let beam = beam_frequency(1.875_104_07);
    for integrator in [IntegratorKind::SemiImplicit, IntegratorKind::Newmark] {
        for n in [10usize, 50, 200] {
            for inertia in [InertiaKind::Articulated, InertiaKind::Diagonal] {
                let mut sim = cantilever(n, params(inertia, integrator, 1.0 / 2000.0));
                let (exact, _) = chain_frequency(&sim, inertia, 0);
                let shape = tip_load_shape(&sim);
                bend(&mut sim, &shape, 0.01);
                let measured = measured_frequency(&mut sim, exact, 6);
                let err = (measured - exact).abs() / exact;
                println!(
                    "{integrator:?} {inertia:?} n = {n}: measured {measured:.3} Hz, chain {exact:.3} Hz ({:+.2} %), beam {beam:.3} Hz ({:+.2} %)",
                    100.0 * (measured - exact) / exact,
                    100.0 * (measured - beam) / beam
                );
                assert!(
                    err < 0.02,
                    "{integrator:?} {inertia:?} n = {n}: measured {measured:.3} Hz, chain eigenvalue {exact:.3} Hz"
                );
                if inertia == InertiaKind::Articulated && n == 200 {
                    let err = (measured - beam).abs() / beam;
                    assert!(err < 0.02, "n = 200: {measured:.3} Hz, beam theory {beam:.3} Hz");
                }
            }
        }
    }
}

/// The second mode at 200 segments: the chain is started in its second mode shape (the
/// eigenvector of the chain's own M and K, computed here) and released; the simulated tip
/// swings at the second frequency only if the simulation's matrices are those, so the
/// measured frequency is a check of the simulation: within 2 % of the chain's second
/// eigenvalue and within 5 % of Euler–Bernoulli's λ₂ = 4.694.
#[test]
fn cantilever_second_mode_matches_the_beam() {
    let beam = beam_frequency(4.694_091_13);
    let mut sim = cantilever(
        200,
        params(InertiaKind::Articulated, IntegratorKind::Newmark, 1.0 / 4000.0),
    );
    let (exact, shape) = chain_frequency(&sim, InertiaKind::Articulated, 1);
    bend(&mut sim, &shape, 0.005);
    let measured = measured_frequency(&mut sim, exact, 8);
    println!("second mode: measured {measured:.3} Hz, chain {exact:.3} Hz, beam {beam:.3} Hz");
    assert!(
        (measured - exact).abs() < 0.02 * exact,
        "measured {measured:.3} Hz, chain's second eigenvalue {exact:.3} Hz"
    );
    assert!(
        (measured - beam).abs() < 0.05 * beam,
        "measured {measured:.3} Hz, beam theory {beam:.3} Hz"
    );
}

/// Energy kept per period with damping zero: E = ½·vᵀ·M·v plus the springs' energy, measured
/// after `steps` steps from a start at rest, as a per-period figure (E_N/E_0)^(T/(N·h)).
fn kept_per_period(sim: &mut WeberModel, period: f64, steps: usize) -> f64 {
    let e0 = sim.kinetic_energy() + sim.spring_energy();
    assert!(e0 > 0.0);
    let jobs = JobSystem::new(1).unwrap();
    run(sim, &jobs, steps, |_, _| {});
    assert!(sim.finite());
    let e = sim.kinetic_energy() + sim.spring_energy();
    let h = sim.params().dt as f64;
    (e / e0).powf(period / (steps as f64 * h))
}

/// The first-order step is backward Euler on the linear system: every mode of frequency ω
/// keeps (1 + ω²h²)^(-T/h) of its energy per period T = 2π/ω; Newmark's average acceleration
/// keeps all of it. Measured with damping zero, at h = 1/60 s and 1/600 s, on one segment on a
/// spring (1.16 Hz) and on the 200-segment cantilever started in its first mode shape (so
/// that one mode carries the energy), over three periods; the figures must match those
/// predictions (1 % for the semi-implicit step, 1e-3 for Newmark), and the single spring's
/// match the figures recorded here: 0.469 per period at h = 1/60, 0.927 at 1/600.
#[test]
fn energy_kept_per_period_without_damping() {
    let spring = || {
        let material = Material {
            stiffness: Stiffness::Power {
                coefficient: 40.0,
                exponent: 0.0,
            },
            damping: Damping::Ratio(0.0),
            // No damping of any kind: not the air's either (the quadratic law's drag on the
            // beam's own motion in still air); the linear law has none in still air.
            drag_law: DragLaw::Linear,
            compensate_gravity: false,
            ..Material::default()
        };
        move |p: WeberParams| {
            let mut sim = sim_of(
                &[chain(1, 1.0, 0.03, Vec3::Y)],
                material,
                WeberParams { gravity: 0.0, ..p },
            );
            sim.edit_state(|_, [x, _]| x.theta[0] = 0.05);
            sim
        }
    };
    for dt in [1.0f32 / 60.0, 1.0 / 600.0] {
        for integrator in [IntegratorKind::SemiImplicit, IntegratorKind::Newmark] {
            let p = params(InertiaKind::Articulated, integrator, dt);
            let h = dt as f64;
            // One segment on a spring.
            let mut sim = spring()(p);
            let s = &sim.forest().seg;
            let w = (s.stiffness[0] as f64 / s.inertia[0] as f64).sqrt();
            let period = std::f64::consts::TAU / w;
            let kept = kept_per_period(&mut sim, period, (3.0 * period / h).round() as usize);
            let backward_euler = (1.0 + w * w * h * h).powf(-period / h);
            // The 200-segment cantilever in its first mode.
            let mut beam = cantilever(200, p);
            let (f1, shape) = chain_frequency(&beam, InertiaKind::Articulated, 0);
            let w1 = std::f64::consts::TAU * f1;
            bend(&mut beam, &shape, 0.01);
            let kept_beam = kept_per_period(&mut beam, 1.0 / f1, (3.0 / f1 / h).round() as usize);
            let beam_euler = (1.0 + w1 * w1 * h * h).powf(-1.0 / (f1 * h));
            println!(
                "h = 1/{:.0} s, {integrator:?}: spring {:.3} Hz keeps {kept:.4} per period (backward Euler {backward_euler:.4}); cantilever {f1:.3} Hz keeps {kept_beam:.4} (backward Euler {beam_euler:.4})",
                1.0 / h,
                w / std::f64::consts::TAU
            );
            match integrator {
                IntegratorKind::SemiImplicit => {
                    assert!(
                        (kept / backward_euler - 1.0).abs() < 0.01,
                        "spring: {kept} vs {backward_euler}"
                    );
                    assert!(
                        (kept_beam / beam_euler - 1.0).abs() < 0.01,
                        "cantilever: {kept_beam} vs {beam_euler}"
                    );
                    let recorded = if dt > 0.01 { 0.469 } else { 0.927 };
                    assert!(
                        (kept - recorded).abs() < 0.005,
                        "spring: {kept} per period, recorded {recorded}"
                    );
                }
                IntegratorKind::Newmark => {
                    assert!((kept - 1.0).abs() < 1e-3, "spring: {kept} per period");
                    assert!((kept_beam - 1.0).abs() < 1e-3, "cantilever: {kept_beam} per period");
                }
            }
        }
    }
}
