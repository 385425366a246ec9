//! Whole trees against real ones: the first sway frequency of the built-in species.
//!
//! Each species is grown as the viewer grows it (default seed and material), bent by a steady
//! wind until it settles, and released in calm air. The horizontal motion of its centre of mass
//! after the release is dominated by the first mode (the higher modes are damped harder, their
//! damping growing with stiffness), and the crossings of its rest position give the period.
//!
//! Weber's diagonal mass matrix with the first-order step does not swing at all: released, the
//! tree creeps back to rest without crossing it (one crossing in 20 s, measured), because
//! the diagonal model's frequencies are several times too high and the semi-implicit step
//! damps such frequencies away within a period. With the articulated mass matrix the trees
//! swing through their rest position again and again, as trees do.
//!
//! For comparison with measured trees (printed, not asserted: the built-in species' trunks are
//! stouter than the trees they are named after, a diameter at breast height of about 1.1 m):
//! field measurements put the first sway frequency of trees 10 to 25 m tall mostly between
//! about 0.2 and 1 Hz; Moore & Maguire, "Natural sway frequencies and damping ratios of trees:
//! concepts, review and synthesis of previous studies", Trees 18 (2004) 195–203, and Jackson et
//! al., "An architectural understanding of natural sway frequencies in trees", J. R. Soc.
//! Interface 16 (2019) 20190116.

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::dynamics::weber::{WeberModel, WeberParams};
use sylva_sim::weberpenn::{generate, GenOptions};
use sylva_sim::{species, Calm, DragLaw, Material};
use sylva_tests::Steady;

/// The tree's centre of mass.
fn mass_centre(sim: &WeberModel) -> Vec3 {
    let f = sim.forest();
    let pose = sim.pose();
    let mut sum = Vec3::ZERO;
    let mut mass = 0.0;
    for i in 0..f.segment_count() {
        let m = f.seg.mass[i];
        let centre = pose.base[i] + pose.orient[i] * Vec3::new(0.0, 0.5 * f.seg.length[i], 0.0);
        sum += centre * m;
        mass += m;
    }
    sum / mass
}

/// What one release shows.
struct Sway {
    height: f32,
    /// The first sway frequency [Hz].
    frequency: f64,
    /// Crossings of the rest position the frequency was measured over.
    crossings: usize,
}

fn sway(name: &str, params: WeberParams) -> Sway {
    let spec = species::builtin(name).unwrap();
    let grown = generate(&spec, &GenOptions::default(), &mut |_| {}).unwrap();
    // Weber's linear drag: the structure's own sway, which the measured frequencies are about.
    // Under the quadratic law the drag on the crown's own motion (relative velocity), which
    // Weber's step takes implicitly with a conservative diagonal, damps the released swing: the
    // aspen then crosses its rest position 3 times in 20 s instead of 6 or more.
    let material = Material {
        drag_law: DragLaw::Linear,
        ..Material::default()
    };
    let forest = sylva_tests::forest_of(&grown.skeleton, &material).unwrap();
    let mut sim = WeberModel::new(forest, params).unwrap();
    let jobs = JobSystem::new(1).unwrap();
    let height = (0..sim.forest().segment_count())
        .map(|i| sylva_tests::tip(&sim, i).y)
        .fold(f32::MIN, f32::max);
    let rest = mass_centre(&sim);
    let dt = sim.params().dt as f64;
    // Bend: a steady 8 m/s wind along +x until the tree has settled.
    sim.set_wind(Box::new(Steady(Vec3::new(8.0, 0.0, 0.0))));
    sylva_tests::run(&mut sim, &jobs, (12.0 / dt) as usize, |_, _| {});
    let bent = mass_centre(&sim).x - rest.x;
    assert!(bent > 1e-3, "{name}: the wind bends the tree ({bent} m)");
    // Release, and time the crossings of the rest position.
    sim.set_wind(Box::new(Calm));
    let mut prev = bent as f64;
    let mut crossings = Vec::new();
    sylva_tests::run(&mut sim, &jobs, (20.0 / dt) as usize, |step, s| {
        let x = (mass_centre(s).x - rest.x) as f64;
        if crossings.len() < 8 && (x < 0.0) != (prev < 0.0) {
            // Linear interpolation between the two steps around the crossing.
            let t = (step as f64 + prev / (prev - x)) * dt;
            crossings.push(t);
        }
        prev = x;
    });
    let frequency = match crossings.len() {
        0 | 1 => f64::NAN,
        n => (n - 1) as f64 / (2.0 * (crossings[n - 1] - crossings[0])),
    };
    Sway {
        height,
        frequency,
        crossings: crossings.len(),
    }
}

#[test]
fn released_trees_swing_through_their_rest_position() {
    for name in species::names() {
        let s = sway(name, WeberParams::default());
        eprintln!(
            "{name}: height {:.1} m, first sway frequency {:.3} Hz over {} crossings",
            s.height, s.frequency, s.crossings
        );
        assert!(
            s.crossings >= 6,
            "{name} ({:.1} m) crossed its rest position {} times in 20 s after the release",
            s.height,
            s.crossings
        );
    }
}
