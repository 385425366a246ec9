//! Temporal level of detail in Weber's model (`sylva_sim::dynamics::schedule`): a tree with
//! period p steps once in p model steps, by p·h. Checked against a model whose time step is p·h
//! (the same equations, so the same motion), against the tree at full rate (the same sway
//! frequency, within backward Euler's own error at the longer step), and for the properties the
//! viewer relies on: a holding tree keeps its pose, periods of 1 change nothing, and the state is
//! the same for any number of threads.

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::dynamics::weber::{WeberModel, WeberParams};
use sylva_sim::testtree::{test_tree, TreeSize};
use sylva_sim::weberpenn::{generate, GenOptions};
use sylva_sim::{species, DragLaw, Material, Skeleton, WindField};
use sylva_tests::{chain, run, sim_of, Steady};

fn aspen() -> Skeleton {
    let spec = species::builtin("quaking_aspen").unwrap();
    generate(&spec, &GenOptions::default(), &mut |_| {}).unwrap().skeleton
}

/// Weber's linear drag: the structure's own sway (as `tree_sway.rs`).
fn linear() -> Material {
    Material {
        drag_law: DragLaw::Linear,
        ..Material::default()
    }
}

/// The largest difference between two models' angles and velocities over tree `t`'s segments,
/// relative to the largest magnitude.
fn state_gap(a: &WeberModel, b: &WeberModel, t: usize) -> f32 {
    let r = a.forest().trees[t].segments.start as usize..a.forest().trees[t].segments.end as usize;
    let mut gap = 0.0f32;
    let mut size = 1e-6f32;
    for k in 0..2 {
        let (pa, pb) = (a.plane(k), b.plane(k));
        for i in r.clone() {
            for (x, y) in [(pa.theta[i], pb.theta[i]), (pa.vel[i], pb.vel[i])] {
                gap = gap.max((x - y).abs());
                size = size.max(x.abs());
            }
        }
    }
    gap / size
}

/// A tree at period 4 in a model stepping h moves as the same tree in a model stepping 4h:
/// its four-step turn comes at the fourth step (tree 1, staggered), so after 4N steps it has
/// taken N steps of 4h. Under a steady 10 m/s wind, through the bending and the sway.
#[test]
fn a_tree_at_period_four_steps_as_a_model_of_four_times_the_step() {
    let skeletons = [chain(3, 1.0, 0.05, Vec3::Y), aspen()];
    let h = 1.0 / 240.0;
    let mut slow = sim_of(
        &skeletons,
        linear(),
        WeberParams {
            dt: h,
            ..WeberParams::default()
        },
    );
    slow.set_step_periods(&[1, 4]).unwrap();
    let mut coarse = sim_of(
        &skeletons,
        linear(),
        WeberParams {
            dt: 4.0 * h,
            ..WeberParams::default()
        },
    );
    for sim in [&mut slow, &mut coarse] {
        sim.set_wind(Box::new(Steady(Vec3::new(10.0, 0.0, 2.0))));
    }
    let jobs = JobSystem::new(2).unwrap();
    for n in 1..=60 {
        run(&mut slow, &jobs, 4, |_, _| {});
        run(&mut coarse, &jobs, 1, |_, _| {});
        let gap = state_gap(&slow, &coarse, 1);
        assert!(gap < 1e-4, "after {n} steps of 4h: relative gap {gap}");
    }
    assert!(slow.max_deflection() > 0.05, "the wind bends the aspen");
}

/// The sway a far tree shows: two slender trunks (10 m chains of 20 segments, radius 5 cm:
/// beam theory's first frequency about 0.5 Hz, the sway a distant tree shows) bent into the
/// same smooth curve and released in calm air, one stepping every step (h = 1/60 s) and one at
/// period 4. Their first frequencies agree within 3 %: backward Euler's own frequency error
/// at the longer step, atan(ωh)/(ωh), is 1.4 % at 0.5 Hz and h = 1/15 s. (A mode near 4 Hz,
/// as a stout trunk's, is another matter: at h = 1/15 s the step damps it within a period and
/// slows it by 40 %, which is why only trees small on screen get long periods.)
#[test]
fn a_tree_at_period_four_sways_at_the_full_rate_frequency() {
    let trunk = chain(20, 0.5, 0.05, Vec3::Y);
    let mut sim = sim_of(&[trunk.clone(), trunk], linear(), WeberParams::default());
    sim.set_step_periods(&[1, 4]).unwrap();
    let jobs = JobSystem::new(2).unwrap();
    let top = [19, 39];
    let rest = top.map(|i| sylva_tests::tip(&sim, i));
    let moved = |s: &WeberModel, t: usize| (sylva_tests::tip(s, top[t]) - rest[t]).x as f64;
    // A smooth bend: each joint turned by the same small angle.
    sim.edit_state(|_, [x, _]| {
        for (i, a) in x.theta.iter_mut().enumerate() {
            *a += 0.002 * ((i % 20) + 1) as f32;
        }
    });
    let bent = [0, 1].map(|t| moved(&sim, t));
    assert!(bent[0] > 0.1 && (bent[1] - bent[0]).abs() < 1e-4, "{bent:?}");
    let dt = sim.params().dt as f64;
    let mut prev = bent;
    let mut crossings: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    run(&mut sim, &jobs, (15.0 / dt) as usize, |step, s| {
        for t in 0..2 {
            let x = moved(s, t);
            if crossings[t].len() < 8 && (x < 0.0) != (prev[t] < 0.0) {
                crossings[t].push((step as f64 + prev[t] / (prev[t] - x)) * dt);
            }
            prev[t] = x;
        }
    });
    let frequency = |c: &[f64]| (c.len() - 1) as f64 / (2.0 * (c[c.len() - 1] - c[0]));
    assert!(
        crossings.iter().all(|c| c.len() >= 6),
        "crossings of the rest position in 15 s: {} at full rate, {} at period 4",
        crossings[0].len(),
        crossings[1].len()
    );
    let (full, far) = (frequency(&crossings[0]), frequency(&crossings[1]));
    eprintln!(
        "tip bent {:.3} m; first frequency {full:.4} Hz at full rate, {far:.4} Hz at period 4 ({} / {} crossings)",
        bent[0],
        crossings[0].len(),
        crossings[1].len()
    );
    assert!(
        (far - full).abs() < 0.03 * full,
        "{far:.4} Hz at period 4, {full:.4} Hz at full rate"
    );
}

/// Six test trees with periods 1 to 8 in a steady wind: the state after 40 steps is the same on
/// 1, 2 and 4 threads; a tree keeps its pose on the steps it holds; and periods of 1 given
/// explicitly leave the model bit for bit as one never given periods.
#[test]
fn periods_keep_the_state_thread_independent_and_ones_change_nothing() {
    let skeletons: Vec<Skeleton> = (0..6)
        .map(|s| {
            let (n, m) = TreeSize::Simple.counts();
            test_tree(s, n / 4, m / 4).unwrap()
        })
        .collect();
    let wind = || Box::new(Steady(Vec3::new(12.0, 0.0, -3.0)));
    let periods = [1u8, 2, 4, 8, 3, 1];
    let mut hashes = Vec::new();
    for threads in [1, 2, 4] {
        let mut sim = sim_of(&skeletons, Material::default(), WeberParams::default());
        sim.set_wind(wind());
        sim.set_step_periods(&periods).unwrap();
        let jobs = JobSystem::new(threads).unwrap();
        let mut last: Vec<Vec<Vec3>> = (0..6).map(|t| tree_bases(&sim, t)).collect();
        let mut held = 0;
        run(&mut sim, &jobs, 40, |n, s| {
            for (t, before) in last.iter_mut().enumerate() {
                let now = tree_bases(s, t);
                let turn = (n + t) % periods[t] as usize == 0 || periods[t] == 1;
                if !turn && n >= 8 {
                    assert_eq!(&now, before, "tree {t} (period {}) moved at step {n}", periods[t]);
                    held += 1;
                }
                *before = now;
            }
        });
        assert!(held > 50 && sim.finite());
        assert!(sim.max_deflection() > 1e-3, "the wind bends the trees");
        hashes.push(sim.state_hash());
    }
    assert!(hashes.iter().all(|&h| h == hashes[0]), "{hashes:x?}");

    let jobs = JobSystem::new(2).unwrap();
    let mut plain = sim_of(&skeletons, Material::default(), WeberParams::default());
    let mut ones = sim_of(&skeletons, Material::default(), WeberParams::default());
    ones.set_step_periods(&[4; 6]).unwrap();
    ones.set_step_periods(&[1; 6]).unwrap();
    for sim in [&mut plain, &mut ones] {
        sim.set_wind(wind());
        run(sim, &jobs, 20, |_, _| {});
    }
    assert_eq!(plain.state_hash(), ones.state_hash());
}

fn tree_bases(sim: &WeberModel, t: usize) -> Vec<Vec3> {
    let r = &sim.forest().trees[t].segments;
    sim.pose().base[r.start as usize..r.end as usize].to_vec()
}

/// Out-of-range periods are refused, naming what is allowed, and the model steps on as before.
#[test]
fn periods_out_of_range_are_refused() {
    let mut sim = sim_of(
        &[chain(2, 1.0, 0.05, Vec3::Y)],
        Material::default(),
        WeberParams::default(),
    );
    let e = sim.set_step_periods(&[0]).unwrap_err().to_string();
    assert!(e.contains("from 1 to 8"), "{e}");
    let e = sim.set_step_periods(&[1, 1]).unwrap_err().to_string();
    assert!(e.contains("one per tree"), "{e}");
    run(&mut sim, &JobSystem::new(1).unwrap(), 3, |_, _| {});
    assert!(sim.finite());
}

/// A wind that varies in space (it strengthens with height and turns across the forest), as a
/// fluid grid's does, but smooth and steady.
struct Sheared;

impl WindField for Sheared {
    fn advance(&mut self, _time: f64) {}
    fn sample(&self, p: Vec3) -> Vec3 {
        Vec3::new(4.0 + 0.6 * p.y, 0.0, 0.5 * p.x)
    }
}

/// The leaves of a tree at a period above 1 take the wind at their segment's centre, not where
/// they hang: in a wind that varies over the crown, a quaking aspen at period 2 under the
/// default (quadratic) drag takes, after 4 s, a shape whose displacement from rest differs from
/// the same aspen's in a model stepping 2h whose leaves sample the wind where they are by under
/// 3 % (root mean square over the segments' bases, relative to the displacement itself); the
/// aspen in a wind without the variation (the wind at its base everywhere) is at least five
/// times as far off, so the test resolves the wind's variation over the tree.
#[test]
fn a_far_trees_leaves_take_their_segments_wind_and_the_tree_moves_as_with_every_leaf_sampled() {
    let skeletons = [aspen()];
    let h = 1.0 / 60.0;
    let model = |dt: f32| {
        sim_of(
            &skeletons,
            Material::default(),
            WeberParams {
                dt,
                ..WeberParams::default()
            },
        )
    };
    let mut far = model(h);
    far.set_step_periods(&[2]).unwrap();
    let mut sampled = model(2.0 * h);
    let mut unvaried = model(2.0 * h);
    let rest = tree_bases(&sampled, 0);
    far.set_wind(Box::new(Sheared));
    sampled.set_wind(Box::new(Sheared));
    unvaried.set_wind(Box::new(Steady(Sheared.sample(Vec3::ZERO))));
    let jobs = JobSystem::new(2).unwrap();
    run(&mut far, &jobs, 240, |_, _| {});
    run(&mut sampled, &jobs, 120, |_, _| {});
    run(&mut unvaried, &jobs, 120, |_, _| {});
    let reference = tree_bases(&sampled, 0);
    let rms = |a: &[Vec3], b: &[Vec3]| {
        (a.iter().zip(b).map(|(x, y)| (*x - *y).length_squared()).sum::<f32>() / a.len() as f32).sqrt()
    };
    let moved = rms(&reference, &rest);
    let gap = rms(&tree_bases(&far, 0), &reference) / moved;
    let control = rms(&tree_bases(&unvaried, 0), &reference) / moved;
    eprintln!(
        "aspen moved {moved:.3} m (rms over segment bases); relative gap {gap:.5} with the segments' wind, {control:.5} without the variation"
    );
    assert!(far.finite() && moved > 0.05, "the wind bends the aspen");
    assert!(gap < 0.03, "far tree against every leaf sampled: relative gap {gap}");
    assert!(
        control > 5.0 * gap,
        "the wind's variation over the tree shows: {control} against {gap}"
    );
}
