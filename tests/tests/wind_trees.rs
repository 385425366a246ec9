//! Trees in the fluid wind (paper 004): they sample the field where their segments and leaves
//! are, so an obstacle that shelters them from the flow calms them.

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::dynamics::weber::{WeberModel, WeberParams};
use sylva_sim::dynamics::{DynamicsModel, ModelKind};
use sylva_sim::fluid::{FluidGrid, FluidParams, FluidWind, Pressure, Side, FLUID_PHASES};
use sylva_sim::{test_tree, Forest, Material, TreePlacement, TreeSize, WindField};
use sylva_tests::run;

const WIND: f32 = 12.0;
const TREE_X: f32 = 17.0;

/// A tree at x = `TREE_X` in a 60 m × 24 m × 30 m domain with a west wind of 12 m/s coming in at
/// the border, optionally behind a wall 12 m high and 20 m wide at x = 14..15.
fn scene(kind: ModelKind, wall: bool) -> (Box<dyn DynamicsModel>, f32) {
    scene_with(kind, wall, |w| Box::new(w))
}

/// [`scene`] with the fluid wind wrapped by `wrap`.
fn scene_with(
    kind: ModelKind,
    wall: bool,
    wrap: impl FnOnce(FluidWind) -> Box<dyn WindField>,
) -> (Box<dyn DynamicsModel>, f32) {
    let (n, m) = TreeSize::Simple.counts();
    let skel = test_tree(11, n, m).unwrap();
    let height = skel.height();
    let forest = Forest::build(
        &[TreePlacement {
            skeleton: &skel,
            position: Vec3::new(TREE_X, 0.0, 15.0),
        }],
        &Material::default(),
    )
    .unwrap();
    let mut sim = kind.build(forest).unwrap();
    let mut p = FluidParams::over(Vec3::ZERO, Vec3::new(60.0, 24.0, 30.0));
    p.cells = [60, 24, 30];
    p.pressure = Pressure::CONVERGED;
    p.sides[3] = Side::Open;
    p.border = Vec3::new(WIND, 0.0, 0.0);
    let mut grid = FluidGrid::new(p).unwrap();
    for v in grid.velocity_mut(0) {
        *v = WIND;
    }
    if wall {
        let cells = grid
            .add_solid_box(Vec3::new(14.0, 0.0, 5.0), Vec3::new(15.0, 12.0, 25.0))
            .unwrap();
        assert!(cells > 200, "{cells}");
    }
    sim.set_wind(wrap(FluidWind::new(grid)));
    (sim, height)
}

/// Mean displacement of the segment tips from their rest position over the last 6 s of 8 s,
/// and the mean wind speed at `probe` over the same time.
fn sway(sim: &mut dyn DynamicsModel, probe: Vec3) -> (f32, f32) {
    let jobs = JobSystem::new(2).unwrap();
    let timings = FrameTimings::new(sim.phases());
    let tips = |sim: &dyn DynamicsModel| -> Vec<Vec3> {
        let (pose, l) = (sim.pose(), &sim.forest().seg.length);
        (0..l.len()).map(|i| pose.tip(i, l[i])).collect()
    };
    let rest = tips(sim);
    let (mut sum, mut count, mut speed) = (0.0f64, 0usize, 0.0f64);
    for k in 0..480 {
        sim.step(&jobs, &timings);
        assert!(sim.finite(), "{}", sim.name());
        if k >= 120 {
            for (t, r) in tips(sim).iter().zip(&rest) {
                sum += (*t - *r).length() as f64;
            }
            count += rest.len();
            speed += sim.wind().sample(probe).length() as f64 / 360.0;
        }
    }
    ((sum / count as f64) as f32, speed as f32)
}

/// Every dynamics model: the tree samples the fluid wind where it is, so behind the wall it
/// sways less.
#[test]
fn a_tree_behind_a_wall_sways_less_than_in_the_open() {
    for kind in ModelKind::ALL {
        let (mut open, height) = scene(kind, false);
        let (mut sheltered, _) = scene(kind, true);
        // The wind the trees feel: at two thirds of the tree's height, where the crown is.
        let probe = Vec3::new(TREE_X, 0.66 * height, 15.0);
        let (open_sway, w_open) = sway(&mut *open, probe);
        let (sheltered_sway, w_sheltered) = sway(&mut *sheltered, probe);
        eprintln!(
            "{kind}: tree {height:.1} m: mean wind speed at the crown {w_open:.2} m/s in the open, \
             {w_sheltered:.2} m/s behind the wall; mean tip displacement {open_sway:.4} m vs {sheltered_sway:.4} m"
        );
        // The fluid steps beside each tree step, from the field at the tree's time to the next
        // step's: after 480 tree steps it has made 480 steps, one ahead of the trees.
        assert_eq!(open.wind().fluid().unwrap().steps(), 480, "{kind}");
        assert!(
            (w_open - WIND).abs() < 1.0,
            "{kind}: open field should stay near the inflow: {w_open}"
        );
        assert!(
            w_sheltered < 0.7 * WIND,
            "{kind}: the wall should shelter the tree: {w_sheltered}"
        );
        assert!(
            open_sway > 1e-3,
            "{kind}: the open wind must move the tree ({open_sway} m)"
        );
        assert!(
            sheltered_sway < 0.7 * open_sway,
            "{kind}: sheltered {sheltered_sway} vs open {open_sway}"
        );
    }
}

/// Leaves sample the field at their own position: a field that blows only exactly where the
/// leaves are moves the tree, and does nothing when the leaves' drag is counted at the segment
/// centres instead.
#[test]
fn leaves_feel_the_wind_where_they_are() {
    let (n, m) = TreeSize::Simple.counts();
    let skel = test_tree(11, n, m).unwrap();
    let forest = sylva_tests::forest_of(&skel, &Material::default()).unwrap();
    let seg = &forest.seg;
    let total: f32 = seg.drag.iter().sum();
    let leaves: f32 = seg.leaf_drag.iter().sum();
    assert!(leaves > 0.0 && leaves < total, "leaf drag {leaves} of {total}");
    struct AtLeaves(Vec<Vec3>);
    impl WindField for AtLeaves {
        fn advance(&mut self, _t: f64) {}
        fn sample(&self, p: Vec3) -> Vec3 {
            if self.0.iter().any(|l| (*l - p).length() < 1e-6) {
                Vec3::new(10.0, 0.0, 0.0)
            } else {
                Vec3::ZERO
            }
        }
    }
    let moved = |forest: Forest| {
        let mut sim = WeberModel::new(forest, WeberParams::default()).unwrap();
        let rest: Vec<Vec3> = (0..sim.forest().segment_count())
            .map(|i| sylva_tests::tip(&sim, i))
            .collect();
        let leaves = sim.pose().leaf_pos.clone();
        sim.set_wind(Box::new(AtLeaves(leaves)));
        let jobs = JobSystem::new(1).unwrap();
        run(&mut sim, &jobs, 1, |_, _| {});
        rest.iter()
            .enumerate()
            .map(|(i, r)| (sylva_tests::tip(&sim, i) - *r).length())
            .fold(0.0f32, f32::max)
    };
    let per_leaf = moved(forest.clone());
    let mut at_centres = forest;
    at_centres.seg.leaf_drag.iter_mut().for_each(|d| *d = 0.0);
    let at_centres = moved(at_centres);
    eprintln!("largest tip motion in one step: {per_leaf:e} m (leaves sampled where they are), {at_centres:e} m (at segment centres)");
    // Without wind the pose only drifts at float rounding (gravity equilibrium).
    assert!(per_leaf > 1e-3, "{per_leaf}");
    assert!(at_centres < 1e-5, "{at_centres}");
}

/// The fluid grid takes its next step beside the trees (`WindField::detach`), from the field
/// they sample: the trees see exactly what they see when the grid steps first and the trees
/// after, bit for bit, on 1 and 2 threads (with the same state for both), and the grid is one
/// step ahead between steps. Every dynamics model.
#[test]
fn stepping_the_wind_beside_the_trees_changes_nothing_they_see() {
    /// The fluid wind without stepping beside the trees (the trait's default `detach`).
    struct Sequential(FluidWind);
    impl WindField for Sequential {
        fn advance(&mut self, time: f64) {
            self.0.advance(time)
        }
        fn prepare(&mut self, time: f64, jobs: &JobSystem, timings: &FrameTimings) {
            self.0.prepare(time, jobs, timings)
        }
        fn sample(&self, p: Vec3) -> Vec3 {
            self.0.sample(p)
        }
        fn sample_in_place(&self, points: &mut [Vec3]) {
            self.0.sample_in_place(points)
        }
        fn fluid(&self) -> Option<&FluidGrid> {
            self.0.fluid()
        }
    }
    for kind in ModelKind::ALL {
        let phases: Vec<&str> = kind.phases().iter().chain(FLUID_PHASES.iter()).copied().collect();
        let timings = FrameTimings::new(&phases);
        let mut last = Vec::new();
        for threads in [1, 2] {
            let jobs = JobSystem::new(threads).unwrap();
            let (mut beside, _) = scene(kind, true);
            let (mut after, _) = scene_with(kind, true, |w| Box::new(Sequential(w)));
            for step in 0..90 {
                beside.step(&jobs, &timings);
                after.step(&jobs, &timings);
                assert_eq!(
                    beside.state_hash(),
                    after.state_hash(),
                    "{kind}, {threads} threads, step {step}"
                );
            }
            let (a, b) = (beside.wind().fluid().unwrap(), after.wind().fluid().unwrap());
            assert_eq!(b.steps() + 1, a.steps(), "{kind}, {threads} threads");
            assert!(
                (a.time() - b.time() - a.params().dt as f64).abs() < 1e-9,
                "{} vs {}",
                a.time(),
                b.time()
            );
            // The trees moved: the comparison is not of two trees at rest.
            assert!(beside.kinetic_energy() > 0.0, "{kind}");
            last.push(beside.state_hash());
        }
        // And the same state in the fluid wind for any number of workers.
        assert_eq!(last[0], last[1], "{kind}: 1 and 2 threads");
    }
}
