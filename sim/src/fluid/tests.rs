//! The optimised passes against a plain reference (the solver as first written: one face or
//! cell at a time, every pass separate), bit for bit, on both instruction sets and for several
//! worker counts.

use glam::Vec3;
use sylva_engine::JobSystem;

use super::*;

/// A grid with solids, a wind ball, inflow through x− and z−, outflow through x+ and z+, a
/// random initial field and pressure. 128 × 64 cells a slab make the fused pass run several
/// slab groups, the last one short.
fn scene(pressure: Pressure, speed: f32) -> FluidGrid {
    let mut g = FluidGrid::new(FluidParams {
        cells: [128, 64, 21],
        origin: Vec3::new(-32.0, 0.0, -5.0),
        extent: Vec3::new(64.0, 24.0, 10.5),
        dt: 1.0 / 30.0,
        pressure,
        sides: [
            Side::Border,
            Side::Border,
            Side::Closed,
            Side::Open,
            Side::Border,
            Side::Border,
        ],
        border: Vec3::new(6.0, 0.0, 2.0),
        seed: 3,
    })
    .unwrap();
    g.add_solid_box(Vec3::new(-6.0, 0.0, -2.0), Vec3::new(-2.0, 9.0, 3.0))
        .unwrap();
    g.add_solid_box(Vec3::new(10.0, 3.0, -5.0), Vec3::new(11.0, 5.0, 5.5))
        .unwrap();
    g.add_ball(WindBall {
        centre: Vec3::new(-12.0, 4.0, 1.0),
        radius: 3.0,
        accel: Vec3::new(20.0, 6.0, -12.0),
        jitter: 0.4,
    })
    .unwrap();
    let mut rng = Rng::new(7);
    for a in 0..3 {
        let w = g.params.border[a];
        g.velocity_mut(a).iter_mut().for_each(|v| *v = w + rng.sym(speed));
    }
    let p: Vec<f32> = (0..g.dims.cells()).map(|_| rng.sym(0.1)).collect();
    g.set_pressure(&p);
    g
}

/// The reference step: advect, forces, divergence, pressure, project, as first written.
fn reference_step(g: &mut FluidGrid, inputs: &StepInputs) {
    g.ensure_built(inputs.open);
    let d = g.dims;
    let mut next = g.next.clone();
    for (a, out) in next.iter_mut().enumerate() {
        let fd = d.face_dims(a);
        for k in 0..fd[2] {
            for j in 0..fd[1] {
                for i in 0..fd[0] {
                    out[i + fd[0] * (j + fd[1] * k)] = reference_face(g, inputs, a, [i, j, k]);
                }
            }
        }
    }
    // The forces act on the advected field, which the step keeps in `next` until it is done.
    g.next = next;
    g.apply_forces(&JobSystem::new(1).unwrap(), inputs);
    std::mem::swap(&mut g.vel, &mut g.next);
    let s = d.pad_strides();
    let ih2 = d.inv_h2();
    let mut div = vec![0.0; d.padded()];
    let mut inv_diag = vec![0.0; d.padded()];
    for k in 0..d.n[2] {
        for j in 0..d.n[1] {
            for i in 0..d.n[0] {
                let c = d.pad(i as isize, j as isize, k as isize);
                let (nx, ny) = (d.n[0], d.n[1]);
                let (u, v, w) = (
                    i + (nx + 1) * (j + ny * k),
                    i + nx * (j + (ny + 1) * k),
                    i + nx * (j + ny * k),
                );
                let dv = (g.vel[0][u + 1] - g.vel[0][u]) * (1.0 / d.h[0])
                    + (g.vel[1][v + nx] - g.vel[1][v]) * (1.0 / d.h[1])
                    + (g.vel[2][w + nx * ny] - g.vel[2][w]) * (1.0 / d.h[2]);
                div[c] = dv * g.act[c];
                if g.act[c] != 0.0 {
                    let mut sum = 0.0;
                    for a in 0..3 {
                        sum += ih2[a] * (g.act[c - s[a]] + g.act[c + s[a]]);
                    }
                    inv_diag[c] = if sum > 0.0 { 1.0 / sum } else { 0.0 };
                }
            }
        }
    }
    match g.params.pressure {
        Pressure::Jacobi { iterations } => {
            for _ in 0..iterations {
                let p = &g.pressure.p;
                let mut out = p.clone();
                for k in 0..d.n[2] {
                    for j in 0..d.n[1] {
                        for i in 0..d.n[0] {
                            let c = d.pad(i as isize, j as isize, k as isize);
                            let nb = ih2[0] * (p[c - 1] + p[c + 1])
                                + ih2[1] * (p[c - s[1]] + p[c + s[1]])
                                + ih2[2] * (p[c - s[2]] + p[c + s[2]]);
                            out[c] = (nb - div[c]) * inv_diag[c];
                        }
                    }
                }
                g.pressure.p = out;
            }
        }
        Pressure::Converged {
            tolerance,
            max_iterations,
        } => {
            g.pressure.rhs = div;
            g.pressure
                .pcg(&JobSystem::new(1).unwrap(), tolerance as f64, max_iterations);
        }
    }
    let p = &g.pressure.p;
    for a in 0..3 {
        let fd = d.face_dims(a);
        for k in 0..fd[2] {
            for j in 0..fd[1] {
                for i in 0..fd[0] {
                    let cr = d.pad(i as isize, j as isize, k as isize);
                    let cl = cr - s[a];
                    g.vel[a][i + fd[0] * (j + fd[1] * k)] -= g.act[cl] * g.act[cr] * (p[cr] - p[cl]) * (1.0 / d.h[a]);
                }
            }
        }
    }
}

/// The new value of face `f` of component `a` (Eq. 4), as first written.
fn reference_face(g: &FluidGrid, inputs: &StepInputs, a: usize, f: [usize; 3]) -> f32 {
    let d = g.dims;
    let n = d.n;
    let cr = d.pad(f[0] as isize, f[1] as isize, f[2] as isize);
    let cl = cr - d.pad_strides()[a];
    if g.act[cl] * g.act[cr] == 0.0 {
        let side = if f[a] == 0 {
            Some(2 * a)
        } else if f[a] == n[a] {
            Some(2 * a + 1)
        } else {
            None
        };
        return match side {
            Some(s) if inputs.inflow[s] => inputs.border[a],
            _ => 0.0,
        };
    }
    let mut lo = f;
    let mut hi = f;
    if lo[a] > 0 {
        lo[a] -= 1;
    }
    if hi[a] == n[a] {
        hi[a] -= 1;
    }
    let cl = centre_velocity(&d, &g.vel, lo[0], lo[1], lo[2]);
    let ch = centre_velocity(&d, &g.vel, hi[0], hi[1], hi[2]);
    let mut v = [0.0f32; 3];
    for b in 0..3 {
        v[b] = 0.5 * (cl[b] + ch[b]);
    }
    let fd = d.face_dims(a);
    v[a] = g.vel[a][f[0] + fd[0] * (f[1] + fd[1] * f[2])];
    let dt = g.params.dt;
    let gc = [
        f[0] as f32 - v[0] * (dt / d.h[0]),
        f[1] as f32 - v[1] * (dt / d.h[1]),
        f[2] as f32 - v[2] * (dt / d.h[2]),
    ];
    for b in 0..3 {
        let off = if b == a { 0.0 } else { 0.5 };
        if (gc[b] < -off && inputs.inflow[2 * b]) || (gc[b] > n[b] as f32 - off && inputs.inflow[2 * b + 1]) {
            return inputs.border[a];
        }
    }
    trilinear(&g.vel[a], fd, gc)
}

fn assert_same(a: &FluidGrid, b: &FluidGrid, what: &str) {
    for c in 0..3 {
        if let Some(i) = (0..a.vel[c].len()).find(|&i| a.vel[c][i].to_bits() != b.vel[c][i].to_bits()) {
            panic!("{what}: component {c} face {i}: {} vs {}", a.vel[c][i], b.vel[c][i]);
        }
    }
    if let Some(i) = (0..a.pressure.p.len()).find(|&i| a.pressure.p[i].to_bits() != b.pressure.p[i].to_bits()) {
        panic!("{what}: pressure {i}: {} vs {}", a.pressure.p[i], b.pressure.p[i]);
    }
}

/// Every instruction set the CPU has.
fn isas() -> Vec<Isa> {
    let mut v = vec![Isa::Portable];
    if Isa::detect() != Isa::Portable {
        v.push(Isa::detect());
    }
    v
}

#[test]
fn passes_match_the_reference_bit_for_bit() {
    let cases = [
        (Pressure::JACOBI4, 2.0),
        (Pressure::Jacobi { iterations: 1 }, 2.0),
        // Three rounds: 4, 4 and 1 iterations.
        (Pressure::Jacobi { iterations: 9 }, 2.0),
        // Fast enough to trace back beyond the inflow sides and the clamped grid.
        (Pressure::Jacobi { iterations: 6 }, 400.0),
        (Pressure::CONVERGED, 2.0),
    ];
    for (pressure, speed) in cases {
        let mut reference = scene(pressure, speed);
        let mut inputs = Vec::new();
        for _ in 0..3 {
            let step = reference.next_inputs();
            reference_step(&mut reference, &step);
            inputs.push(step);
        }
        for isa in isas() {
            for threads in [1, 3] {
                let jobs = JobSystem::new(threads).unwrap();
                let mut g = scene(pressure, speed);
                g.isa = isa;
                for step in &inputs {
                    g.step_with(&jobs, step);
                }
                assert_same(
                    &g,
                    &reference,
                    &format!("{pressure:?}, speed {speed}, {isa:?}, {threads} workers"),
                );
            }
        }
    }
}

/// The advection alone against [`reference_face`], on a smooth field whose components change
/// sign across the grid: runs of eight faces trace back above their own coordinate, runs below,
/// and runs mix both, within one cell (the AVX2 kernel's loads of the rows around a face, with
/// and without picking per lane) and, with the faster field, beyond it (its gather).
#[test]
fn advection_of_every_back_trace_matches_the_reference_bit_for_bit() {
    for amplitude in [6.0f32, 40.0] {
        let mut g = scene(Pressure::JACOBI4, 0.0);
        let d = g.dims;
        for a in 0..3 {
            let fd = d.face_dims(a);
            for k in 0..fd[2] {
                for j in 0..fd[1] {
                    for i in 0..fd[0] {
                        let (x, y, z) = (
                            i as f32 / fd[0] as f32,
                            j as f32 / fd[1] as f32,
                            k as f32 / fd[2] as f32,
                        );
                        let phase = [0.3, 1.1, 2.0][a];
                        g.vel[a][i + fd[0] * (j + fd[1] * k)] = amplitude
                            * (std::f32::consts::TAU * (1.5 * x + phase)).sin()
                            * (std::f32::consts::TAU * (y + 0.5 * z)).cos();
                    }
                }
            }
        }
        let inputs = g.next_inputs();
        g.ensure_built(inputs.open);
        // What the field makes the back-traces do along each component's own axis: whether
        // some runs of eight faces along x all trace back to their own coordinate or above
        // (velocity ≤ 0), some all below, and some mix both. The other components' back-traces
        // follow the same pattern of signs.
        let k_dt = [g.params.dt / d.h[0], g.params.dt / d.h[1], g.params.dt / d.h[2]];
        let mut seen = [[false; 3]; 3];
        for (a, vel) in g.vel.iter().enumerate() {
            let fd = d.face_dims(a);
            for row in vel.chunks(fd[0]) {
                for run in row[1..fd[0] - 1].chunks_exact(8) {
                    let up = run.iter().filter(|&&v| v * k_dt[a] <= 0.0).count();
                    let s = &mut seen[a];
                    s[0] |= up == 8;
                    s[1] |= up == 0;
                    s[2] |= up > 0 && up < 8;
                }
            }
        }
        assert_eq!(seen, [[true; 3]; 3], "amplitude {amplitude}: every kind of back-trace");
        let mut want = g.vel.clone();
        for (a, out) in want.iter_mut().enumerate() {
            let fd = d.face_dims(a);
            for k in 0..fd[2] {
                for j in 0..fd[1] {
                    for i in 0..fd[0] {
                        out[i + fd[0] * (j + fd[1] * k)] = reference_face(&g, &inputs, a, [i, j, k]);
                    }
                }
            }
        }
        let from = g.vel.clone();
        for isa in isas() {
            for threads in [1, 3] {
                g.isa = isa;
                g.advect(&JobSystem::new(threads).unwrap(), &inputs, &from, (0, 1));
                for a in 0..3 {
                    if let Some(i) = (0..want[a].len()).find(|&i| want[a][i].to_bits() != g.next[a][i].to_bits()) {
                        panic!(
                            "amplitude {amplitude}, {isa:?}, {threads} workers: component {a} face {i}: {} vs {}",
                            g.next[a][i], want[a][i]
                        );
                    }
                }
            }
        }
    }
}

/// A fluid step of 2 or 4 tree steps spread over them ([`FluidWind::set_parts`]) gives the
/// field of the whole step, bit for bit, once its last part is done; in between, the grid and
/// the trees both have the field the step started from, and every tree step has a part.
#[test]
fn steps_spread_over_tree_steps_give_the_whole_steps_field_and_the_start_field_between() {
    use crate::wind::WindField;
    let jobs = JobSystem::new(2).unwrap();
    let timings = sylva_engine::FrameTimings::new(&FLUID_PHASES);
    for parts in [2usize, 4] {
        let mut whole = FluidWind::new(scene(Pressure::JACOBI4, 2.0));
        let mut spread = FluidWind::new(scene(Pressure::JACOBI4, 2.0));
        // Both grids step 1/30 s: one fluid step every `parts` tree steps.
        let big = whole.grid().params().dt;
        spread.grid_mut().set_dt(big / parts as f32).unwrap();
        spread.set_parts(parts as u8).unwrap();
        assert_eq!((spread.parts(), spread.grid().params().dt), (parts as u8, big));
        let h = big as f64 / parts as f64;
        // The first step is due once the trees are half a step ahead of the grid.
        let first = parts / 2 - 1;
        let probes = [Vec3::new(-12.0, 4.0, 1.0), Vec3::new(20.0, 12.0, -3.0)];
        let mut start = probes.map(|p| spread.sample(p));
        for n in 0..4 * parts + 1 {
            let t = n as f64 * h;
            let mut seen = Vec::new();
            for (k, w) in [&mut whole, &mut spread].into_iter().enumerate() {
                w.prepare(t, &jobs, &timings);
                let due = n >= first && (k == 1 || (n - first) % parts == 0);
                let Some(detached) = w.detach(t + h) else {
                    assert!(!due, "{parts} parts, tree step {n}: grid {k} did not step");
                    continue;
                };
                assert!(due, "{parts} parts, tree step {n}: grid {k} stepped");
                if k == 1 {
                    seen = probes.map(|p| detached.sample(p)).to_vec();
                }
                w.step_detached(&jobs, &timings);
                w.attach(detached);
            }
            if n < first {
                continue;
            }
            assert_eq!(
                seen, start,
                "{parts} parts, tree step {n}: the trees sample the field the fluid step started from"
            );
            if (n - first) % parts != parts - 1 {
                assert_eq!(probes.map(|p| spread.sample(p)), start, "{parts} parts, tree step {n}");
            } else {
                assert_same(
                    whole.grid(),
                    spread.grid(),
                    &format!("{parts} parts, after tree step {n}"),
                );
                assert_eq!(whole.grid().time(), spread.grid().time());
                start = probes.map(|p| spread.sample(p));
            }
        }
        assert_eq!(spread.grid().steps(), 4, "{parts} parts");
    }
}

/// Parts other than 1, 2 or 4, or parts whose step would exceed a second, are refused, naming
/// the parameter; the parts in use stay.
#[test]
fn fluid_step_parts_out_of_range_are_refused() {
    let mut w = FluidWind::new(scene(Pressure::JACOBI4, 2.0));
    for bad in [0u8, 3, 5, 8] {
        let e = w.set_parts(bad).unwrap_err().to_string();
        assert!(e.contains("fluid step parts") && e.contains("1, 2 or 4"), "{e}");
    }
    w.grid_mut().set_dt(0.4).unwrap();
    let e = w.set_parts(4).unwrap_err().to_string();
    assert!(e.contains("wind time step"), "{e}");
    assert_eq!((w.parts(), w.grid().params().dt), (1, 0.4));
}

/// The viewer's level of detail steps the grid every 2nd (or 4th) frame by two (four) frames'
/// time: after 1 and 2 s of a wind through trunks and a gust ball, the flow at 2h is the flow
/// at h to within 15 % of its structure (the rms of its departure from the border wind;
/// measured 13 % and 9 %, the ball's jitter drawn per step makes the two gusts differ a
/// little), and half the pressure iterations a second leave it as good as divergence-free (rms
/// under 0.03/s; 0.017 measured, against 0.009 at h). At 4h (the air crossing 0.8 of a cell
/// per step) the longer step and a quarter of the iterations a second leave more: within 35 %
/// (29 % and 19 % measured; another seed of the ball's jitter at h differs by 5 %), rms
/// divergence under 0.06/s (0.043 and 0.033 measured). A grid whose clock ran at 2h but whose
/// flow moved by h would be half as developed and fail the first.
#[test]
fn a_grid_stepped_by_two_frames_time_keeps_the_flow_of_one_stepped_every_frame() {
    let jobs = JobSystem::new(2).unwrap();
    let border = Vec3::new(6.0, 0.0, 0.0);
    let make = |dt: f32| {
        let mut p = FluidParams::over(Vec3::new(-24.0, 0.0, -24.0), Vec3::new(24.0, 20.0, 24.0));
        p.cells = [96, 16, 96];
        p.dt = dt;
        p.border = border;
        let mut g = FluidGrid::new(p).unwrap();
        g.set_vorticity(0.3).unwrap();
        for a in 0..3 {
            let w = border[a];
            g.velocity_mut(a).iter_mut().for_each(|v| *v = w);
        }
        for (x, z) in [(-10.0f32, -8.0f32), (0.0, 3.0), (8.0, -2.0), (12.0, 10.0), (-5.0, 12.0)] {
            g.add_solid_box(Vec3::new(x - 0.4, 0.0, z - 0.4), Vec3::new(x + 0.4, 10.0, z + 0.4))
                .unwrap();
        }
        g.add_ball(WindBall {
            centre: Vec3::new(-15.0, 4.0, 0.0),
            radius: 4.0,
            accel: Vec3::new(10.0, 2.0, 8.0),
            jitter: 0.4,
        })
        .unwrap();
        g
    };
    for (factor, tolerance, most_div) in [(2u64, 0.15, 0.03), (4, 0.35, 0.06)] {
        let (mut every, mut second) = (make(1.0 / 60.0), make(factor as f32 / 60.0));
        for secs in [1.0, 2.0] {
            while every.time() < secs - 1e-6 {
                every.step(&jobs);
            }
            while second.time() < secs - 1e-6 {
                second.step(&jobs);
            }
            assert_eq!(second.steps() * factor, every.steps());
            let mut rng = Rng::new(3);
            let (mut diff, mut structure) = (0.0f64, 0.0f64);
            let n = 20_000;
            for _ in 0..n {
                let p = Vec3::new(rng.sym(22.0), 6.5 + rng.sym(6.0), rng.sym(22.0));
                let (a, b) = (every.sample(p), second.sample(p));
                diff += (a - b).length_squared() as f64;
                structure += (a - border).length_squared() as f64;
            }
            let (diff, structure) = ((diff / n as f64).sqrt(), (structure / n as f64).sqrt());
            assert!(
                structure > 0.5,
                "{secs} s: the gust and the trunks shape the flow ({structure} m/s)"
            );
            println!("{factor}h, {secs} s: rms difference {diff} m/s, structure {structure} m/s");
            assert!(
                diff < tolerance * structure,
                "{factor}h, {secs} s: rms difference {diff} m/s against a structure of {structure} m/s"
            );
            let div = second.divergence_rms(&jobs);
            println!("{factor}h, {secs} s: rms divergence {div}/s");
            assert!(div < most_div, "{secs} s: rms divergence {div}/s at {factor}h");
        }
    }
}

/// No sample is faster than the grid's speed bound, whether the step measured it or it was
/// measured when asked (after the field was written), on a random field with a wind ball,
/// inside the grid and beyond it (clamped); the bound is the norm of the largest component
/// magnitudes, no looser; a NaN makes it infinite.
#[test]
fn no_sample_is_faster_than_the_speed_bound() {
    let jobs = JobSystem::new(2).unwrap();
    let mut g = scene(Pressure::JACOBI4, 9.0);
    let mut rng = Rng::new(5);
    let lo = g.origin() - Vec3::splat(3.0);
    let hi = g.origin() + g.params().extent + Vec3::splat(3.0);
    let check = |g: &FluidGrid, rng: &mut Rng| {
        let bound = g.speed_bound();
        let mut fastest = 0.0f32;
        for _ in 0..20_000 {
            let p = Vec3::new(rng.range(lo.x, hi.x), rng.range(lo.y, hi.y), rng.range(lo.z, hi.z));
            fastest = fastest.max(g.sample(p).length());
        }
        assert!(fastest <= bound, "a sample at {fastest} m/s over the bound {bound}");
        bound
    };
    let written = check(&g, &mut rng);
    // The largest component magnitudes: a bound that ignored one would be below this.
    let peak = |a: usize| g.velocity(a).iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let norm = (peak(0).powi(2) + peak(1).powi(2) + peak(2).powi(2)).sqrt();
    assert!((written - norm).abs() <= 1e-4 * norm, "{written} against {norm}");
    for _ in 0..3 {
        g.step(&jobs);
        let stepped = check(&g, &mut rng);
        let mut fresh = g.snapshot();
        fresh.peak = Peak::default();
        assert_eq!(
            stepped,
            fresh.speed_bound(),
            "the step's bound is the one measured when asked"
        );
    }
    let frozen = g.freeze();
    assert_eq!(
        g.speed_bound(),
        f32::INFINITY,
        "a grid whose field is out bounds nothing"
    );
    g.unfreeze(frozen);
    g.velocity_mut(1)[17] = f32::NAN;
    assert_eq!(g.speed_bound(), f32::INFINITY);
}
