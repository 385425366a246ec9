//! The stable-fluids wind grid (paper 004, §2) against exact results: projection, boundaries,
//! transport, determinism.

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::fluid::{FluidGrid, FluidParams, Pressure, Side, WindBall};

fn params(cells: [usize; 3], extent: Vec3, sides: [Side; 6], pressure: Pressure) -> FluidParams {
    FluidParams {
        cells,
        origin: Vec3::ZERO,
        extent,
        dt: 1.0 / 60.0,
        pressure,
        sides,
        border: Vec3::ZERO,
        seed: 7,
    }
}

const CLOSED: [Side; 6] = [Side::Closed; 6];

/// Sets every active-looking face to a smooth, strongly divergent pattern.
fn swirl(g: &mut FluidGrid, phase: f32) {
    let n = g.cells();
    for a in 0..3 {
        let mut dims = n;
        dims[a] += 1;
        let v = g.velocity_mut(a);
        for k in 0..dims[2] {
            for j in 0..dims[1] {
                for i in 0..dims[0] {
                    let (x, y, z) = (i as f32 * 0.37 + phase, j as f32 * 0.53, k as f32 * 0.29 - phase);
                    v[i + dims[0] * (j + dims[1] * k)] = match a {
                        0 => 3.0 * (x + y).sin() + z.cos(),
                        1 => 2.0 * (z - x).cos(),
                        _ => (y * 1.7).sin() * 4.0 + x.cos(),
                    };
                }
            }
        }
    }
}

#[test]
fn converged_projection_is_divergence_free() {
    let jobs = JobSystem::new(2).unwrap();
    let mut sides = [Side::Open; 6];
    sides[2] = Side::Closed;
    let mut g = FluidGrid::new(params(
        [40, 12, 36],
        Vec3::new(40.0, 10.0, 36.0),
        sides,
        Pressure::CONVERGED,
    ))
    .unwrap();
    g.add_solid_box(Vec3::new(10.0, 0.0, 10.0), Vec3::new(14.0, 6.0, 20.0))
        .unwrap();
    for s in 0..3 {
        swirl(&mut g, s as f32);
        let before = g.divergence_rms(&jobs);
        let stats = g.step(&jobs);
        let after = g.divergence_rms(&jobs);
        let rel = after / stats.divergence_before;
        eprintln!(
            "step {s}: divergence {before:.3e} -> {after:.3e} (rel {rel:.2e}), {} PCG iterations",
            stats.solve.iterations
        );
        assert!(stats.solve.converged, "{:?}", stats.solve);
        assert!(rel <= 1e-4, "divergence_rel {rel:e} > 1e-4");
        assert!(
            stats.solve.iterations <= 60,
            "multigrid preconditioning too weak: {:?}",
            stats.solve
        );
    }
    // Jacobi with 4 iterations reduces it, but far less.
    g.set_pressure_solver(Pressure::JACOBI4).unwrap();
    swirl(&mut g, 5.0);
    g.set_pressure(&vec![0.0; 40 * 12 * 36]);
    let stats = g.step(&jobs);
    let rel = g.divergence_rms(&jobs) / stats.divergence_before;
    eprintln!("jacobi4 divergence_rel {rel:.3}");
    assert!(rel < 1.0 && rel > 1e-3, "{rel}");
}

#[test]
fn uniform_field_in_a_closed_box_projects_to_rest() {
    let jobs = JobSystem::new(2).unwrap();
    let mut g = FluidGrid::new(params(
        [16, 8, 12],
        Vec3::new(16.0, 8.0, 12.0),
        CLOSED,
        Pressure::CONVERGED,
    ))
    .unwrap();
    // Interior faces carry a uniform wind; the walls' faces are 0 (free slip).
    for (a, value) in [(0usize, 3.0f32), (1, -1.0), (2, 2.0)] {
        let mut dims = g.cells();
        dims[a] += 1;
        let v = g.velocity_mut(a);
        for k in 0..dims[2] {
            for j in 0..dims[1] {
                for i in 0..dims[0] {
                    let f = [i, j, k];
                    let wall = f[a] == 0 || f[a] == dims[a] - 1;
                    v[i + dims[0] * (j + dims[1] * k)] = if wall { 0.0 } else { value };
                }
            }
        }
    }
    let stats = g.step(&jobs);
    assert!(stats.solve.converged);
    let max = (0..3)
        .flat_map(|a| g.velocity(a).iter())
        .fold(0.0f32, |m, v| m.max(v.abs()));
    eprintln!("largest velocity left: {max:e} m/s of 3.7");
    assert!(
        max < 1e-3,
        "a uniform field in a closed box must project to rest, {max} left"
    );
}

#[test]
fn uniform_inflow_through_an_open_domain_stays_uniform() {
    let jobs = JobSystem::new(2).unwrap();
    let wind = Vec3::new(6.0, 0.0, -2.5);
    // Vorticity confinement has no vorticity to act on in a uniform flow.
    for (pressure, eps) in [
        (Pressure::JACOBI4, 0.0),
        (Pressure::CONVERGED, 0.0),
        (Pressure::JACOBI4, 1.0),
    ] {
        let mut p = params(
            [24, 8, 20],
            Vec3::new(48.0, 16.0, 40.0),
            [
                Side::Border,
                Side::Border,
                Side::Closed,
                Side::Closed,
                Side::Border,
                Side::Border,
            ],
            pressure,
        );
        p.border = wind;
        let mut g = FluidGrid::new(p).unwrap();
        g.set_vorticity(eps).unwrap();
        for a in [0, 2] {
            g.velocity_mut(a).iter_mut().for_each(|v| *v = wind[a]);
        }
        for _ in 0..100 {
            g.step(&jobs);
        }
        let mut worst = 0.0f32;
        for a in 0..3 {
            for v in g.velocity(a) {
                worst = worst.max((v - wind[a]).abs());
            }
        }
        eprintln!("{pressure:?}, vorticity {eps}: largest deviation from the inflow after 100 steps {worst:e} m/s");
        assert!(worst < 1e-4, "{pressure:?}, vorticity {eps}: {worst}");
    }
}

/// Faces of solid cells never carry flow: checked after every step of a stormy scene.
#[test]
fn no_flow_enters_a_solid_cell() {
    let jobs = JobSystem::new(2).unwrap();
    for pressure in [Pressure::JACOBI4, Pressure::CONVERGED] {
        let mut p = params(
            [32, 10, 24],
            Vec3::new(32.0, 10.0, 24.0),
            [
                Side::Border,
                Side::Border,
                Side::Closed,
                Side::Open,
                Side::Border,
                Side::Border,
            ],
            pressure,
        );
        p.border = Vec3::new(5.0, 0.0, 1.0);
        let mut g = FluidGrid::new(p).unwrap();
        let marked = g
            .add_solid_box(Vec3::new(12.0, 0.0, 8.0), Vec3::new(16.0, 7.0, 16.0))
            .unwrap();
        assert!(marked > 0);
        g.add_ball(WindBall {
            centre: Vec3::new(8.0, 4.0, 12.0),
            radius: 3.0,
            accel: Vec3::new(40.0, 5.0, 0.0),
            jitter: 0.3,
        })
        .unwrap();
        let n = g.cells();
        for _ in 0..60 {
            g.step(&jobs);
            let mut worst = 0.0f32;
            for k in 0..n[2] {
                for j in 0..n[1] {
                    for i in 0..n[0] {
                        if !g.solid()[i + n[0] * (j + n[1] * k)] {
                            continue;
                        }
                        for a in 0..3 {
                            let mut dims = n;
                            dims[a] += 1;
                            for side in 0..2 {
                                let mut f = [i, j, k];
                                f[a] += side;
                                worst = worst.max(g.velocity(a)[f[0] + dims[0] * (f[1] + dims[1] * f[2])].abs());
                            }
                        }
                    }
                }
            }
            assert_eq!(worst, 0.0, "{pressure:?}: flow through a solid cell's face");
        }
    }
}

/// A puff of momentum added by a wind ball rides the mean flow downstream at its speed.
#[test]
fn wind_ball_momentum_travels_downstream_at_the_flow_speed() {
    let jobs = JobSystem::new(2).unwrap();
    let speed = 4.0;
    let mut p = params(
        [96, 8, 16],
        Vec3::new(96.0, 8.0, 16.0),
        [
            Side::Border,
            Side::Border,
            Side::Closed,
            Side::Closed,
            Side::Border,
            Side::Border,
        ],
        Pressure::CONVERGED,
    );
    p.border = Vec3::new(speed, 0.0, 0.0);
    let mut g = FluidGrid::new(p).unwrap();
    g.velocity_mut(0).iter_mut().for_each(|v| *v = speed);
    // A short cross-wind kick: its momentum should then move with the mean wind.
    let x0 = 20.0;
    g.add_ball(WindBall {
        centre: Vec3::new(x0, 4.0, 8.0),
        radius: 2.0,
        accel: Vec3::new(0.0, 0.0, 30.0),
        jitter: 0.0,
    })
    .unwrap();
    for _ in 0..6 {
        g.step(&jobs);
    }
    g.clear_balls();
    // Centroid of the puff's core: cells with at least half the largest cross-wind speed.
    let centroid = |g: &FluidGrid| {
        let n = g.cells();
        let cells = || (0..n[2]).flat_map(move |k| (0..n[1]).flat_map(move |j| (0..n[0]).map(move |i| (i, j, k))));
        let peak = cells()
            .map(|(i, j, k)| g.cell_velocity(i, j, k).z.abs())
            .fold(0.0f32, f32::max);
        let (mut m, mut mx) = (0.0f64, 0.0f64);
        for (i, j, k) in cells() {
            let w = g.cell_velocity(i, j, k).z.abs();
            if w >= 0.5 * peak {
                m += w as f64;
                mx += w as f64 * (i as f64 + 0.5);
            }
        }
        mx / m
    };
    let c0 = centroid(&g);
    let steps = 180;
    for _ in 0..steps {
        g.step(&jobs);
    }
    let c1 = centroid(&g);
    let measured = (c1 - c0) / (steps as f64 / 60.0);
    eprintln!("puff moved from x = {c0:.2} to {c1:.2} m: {measured:.3} m/s in a {speed} m/s wind");
    assert!((measured - speed as f64).abs() < 0.1 * speed as f64, "{measured}");
}

#[test]
fn result_is_identical_for_1_2_and_4_workers() {
    for (pressure, eps) in [
        (Pressure::JACOBI4, 0.0),
        (Pressure::CONVERGED, 0.0),
        (Pressure::JACOBI4, 0.5),
    ] {
        let mut hashes = Vec::new();
        for threads in [1, 2, 4] {
            let jobs = JobSystem::new(threads).unwrap();
            let mut p = params(
                [64, 12, 48],
                Vec3::new(64.0, 12.0, 48.0),
                [
                    Side::Border,
                    Side::Border,
                    Side::Closed,
                    Side::Closed,
                    Side::Border,
                    Side::Border,
                ],
                pressure,
            );
            p.border = Vec3::new(3.0, 0.0, 2.0);
            let mut g = FluidGrid::new(p).unwrap();
            g.add_solid_box(Vec3::new(20.0, 0.0, 20.0), Vec3::new(30.0, 5.0, 24.0))
                .unwrap();
            g.set_vorticity(eps).unwrap();
            g.add_ball(WindBall {
                centre: Vec3::new(10.0, 6.0, 10.0),
                radius: 4.0,
                accel: Vec3::new(10.0, 0.0, 10.0),
                jitter: 0.5,
            })
            .unwrap();
            for _ in 0..30 {
                g.step(&jobs);
            }
            hashes.push(g.state_hash());
        }
        assert!(
            hashes.iter().all(|&h| h == hashes[0]),
            "{pressure:?}, vorticity {eps}: {hashes:x?}"
        );
    }
}

/// A vertical Lamb-Oseen vortex in a closed box: semi-Lagrangian advection smears it out;
/// vorticity confinement (Fedkiw, Stam & Jensen 2001) keeps more of its spin and energy, and
/// stays bounded.
#[test]
fn vorticity_confinement_keeps_a_vortex_spinning() {
    let jobs = JobSystem::new(2).unwrap();
    let (n, rc, gamma) = (40usize, 4.0f32, 60.0f32);
    let vortex = |eps: f32| {
        let mut g = FluidGrid::new(params(
            [n, 6, n],
            Vec3::new(n as f32, 6.0, n as f32),
            CLOSED,
            Pressure::CONVERGED,
        ))
        .unwrap();
        g.set_vorticity(eps).unwrap();
        let c = n as f32 / 2.0;
        // v_θ(r) = Γ / (2π r) (1 − exp(−r² / rc²)), around the vertical axis through the centre.
        let swirl = |x: f32, z: f32| -> (f32, f32) {
            let (dx, dz) = (x - c, z - c);
            let r2 = dx * dx + dz * dz;
            if r2 < 1e-12 {
                return (0.0, 0.0);
            }
            let s = gamma / (2.0 * std::f32::consts::PI * r2) * (1.0 - (-r2 / (rc * rc)).exp());
            (-dz * s, dx * s)
        };
        for a in [0, 2] {
            let mut d = [n, 6, n];
            d[a] += 1;
            let v = g.velocity_mut(a);
            for k in 0..d[2] {
                for j in 0..d[1] {
                    for i in 0..d[0] {
                        let (x, z) = if a == 0 {
                            (i as f32, k as f32 + 0.5)
                        } else {
                            (i as f32 + 0.5, k as f32)
                        };
                        let (u, w) = swirl(x, z);
                        v[i + d[0] * (j + d[1] * k)] = if a == 0 { u } else { w };
                    }
                }
            }
        }
        g
    };
    // Kinetic energy per unit density [m⁵/s²] and the largest vertical vorticity [1/s].
    let measure = |g: &FluidGrid| {
        let e: f64 = (0..3)
            .flat_map(|a| g.velocity(a).iter())
            .map(|&v| 0.5 * (v as f64) * (v as f64))
            .sum();
        let mut peak = 0.0f32;
        for k in 1..n - 1 {
            for i in 1..n - 1 {
                let dw = g.cell_velocity(i + 1, 3, k).z - g.cell_velocity(i - 1, 3, k).z;
                let du = g.cell_velocity(i, 3, k + 1).x - g.cell_velocity(i, 3, k - 1).x;
                peak = peak.max(((dw - du) / 2.0).abs());
            }
        }
        (e, peak)
    };
    let mut plain = vortex(0.0);
    let mut confined = vortex(0.4);
    plain.step(&jobs);
    confined.step(&jobs);
    let (e0, w0) = measure(&plain);
    for _ in 0..180 {
        plain.step(&jobs);
        confined.step(&jobs);
    }
    let (ep, wp) = measure(&plain);
    let (ec, wc) = measure(&confined);
    eprintln!(
        "vortex after 3 s: energy {:.1}% of the start without confinement, {:.1}% with ε = 0.4; peak \
         vorticity {wp:.3} and {wc:.3} 1/s (start {w0:.3})",
        100.0 * ep / e0,
        100.0 * ec / e0
    );
    assert!(ep < 0.97 * e0, "advection should dissipate some energy: {ep} of {e0}");
    assert!(
        ec > ep * 1.02 && wc > wp * 1.05,
        "confinement kept no more spin: {ec} vs {ep}, {wc} vs {wp}"
    );
    assert!(
        ec < 1.2 * e0 && wc.is_finite(),
        "confinement blew the vortex up: {ec} of {e0}"
    );
}

#[test]
fn bad_parameters_are_refused_with_their_names() {
    let ok = params([8, 8, 8], Vec3::splat(8.0), CLOSED, Pressure::JACOBI4);
    let cases: Vec<(FluidParams, &str)> = vec![
        (
            FluidParams {
                cells: [1, 8, 8],
                ..ok.clone()
            },
            "cells along x",
        ),
        (
            FluidParams {
                cells: [4096, 4096, 4096],
                ..ok.clone()
            },
            "wind grid cells",
        ),
        (FluidParams { dt: 0.0, ..ok.clone() }, "time step"),
        (
            FluidParams {
                dt: f32::NAN,
                ..ok.clone()
            },
            "time step",
        ),
        (
            FluidParams {
                extent: Vec3::new(8.0, -1.0, 8.0),
                ..ok.clone()
            },
            "extent",
        ),
        (
            FluidParams {
                border: Vec3::new(1e9, 0.0, 0.0),
                ..ok.clone()
            },
            "border wind",
        ),
        (
            FluidParams {
                pressure: Pressure::Jacobi { iterations: 0 },
                ..ok.clone()
            },
            "Jacobi",
        ),
        (
            FluidParams {
                pressure: Pressure::Converged {
                    tolerance: 0.0,
                    max_iterations: 10,
                },
                ..ok.clone()
            },
            "tolerance",
        ),
    ];
    for (p, name) in cases {
        let e = FluidGrid::new(p).err().expect("bad parameters accepted").to_string();
        assert!(e.contains(name), "{e}");
    }
    let mut g = FluidGrid::new(ok).unwrap();
    let e = g
        .add_ball(WindBall {
            centre: Vec3::ZERO,
            radius: -1.0,
            accel: Vec3::X,
            jitter: 0.0,
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("radius"), "{e}");
    for eps in [-0.1, f32::NAN, 1e9] {
        let e = g.set_vorticity(eps).unwrap_err().to_string();
        assert!(e.contains("vorticity confinement") && e.contains("[0, 4]"), "{e}");
    }
    assert_eq!(g.vorticity(), 0.0, "a refused strength must leave the old one");
}
