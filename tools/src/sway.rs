//! What the wind does to the trees, for `sylva bench sim`, in any model: how far the branch
//! tips move from where they grew, and the bending moment at each tree's base. Sampled between
//! the timed blocks of steps (reading the pose, never inside a timed step).
//!
//! The base moment is the root joint's: the angle the root segment's axis has turned from its
//! rest axis times the forest's root stiffness k = 2·E·I/l (`Material::stiffness_of`), the
//! moment a beam of the material carries at the ground for that turn. It is Weber's root spring
//! exactly; in the other models (Oliapuram's own power-law k, Verlet's constraints) it is the
//! same measure of the trunk's bending, comparable between runs of one model (drag laws, wind
//! speeds), not a moment the model itself computes.

use glam::Vec3;
use sylva_sim::dynamics::pose::segment_axis;
use sylva_sim::dynamics::DynamicsModel;
use sylva_sim::forest::NO_PARENT;

/// Running figures of one run.
pub struct Sway {
    /// The branch tips (segments without children) and where they are at rest.
    tips: Vec<(usize, Vec3)>,
    /// Each tree's root segment, its rest axis and its stiffness.
    roots: Vec<(usize, Vec3, f32)>,
    samples: u64,
    tip_sum: f64,
    tip_peak: f32,
    moment_sum: f64,
    moment_peak: f32,
}

/// The figures of a run: tip deflections \[m\] and base moments \[N·m\], the means over tips (or
/// trees) and samples, the peaks over both.
#[derive(Clone, Copy, Debug, Default)]
pub struct SwayReport {
    pub tip_mean: f64,
    pub tip_peak: f64,
    pub moment_mean: f64,
    pub moment_peak: f64,
}

impl Sway {
    /// The rest shape of `sim` (at rest, before its first step).
    pub fn new(sim: &dyn DynamicsModel) -> Sway {
        let forest = sim.forest();
        let seg = &forest.seg;
        let n = forest.segment_count();
        let mut has_child = vec![false; n];
        for &p in &seg.parent {
            if (p as usize) < n {
                has_child[p as usize] = true;
            }
        }
        let pose = sim.pose();
        let tips = (0..n)
            .filter(|&i| !has_child[i])
            .map(|i| (i, pose.tip(i, seg.length[i])))
            .collect();
        let roots = forest
            .trees
            .iter()
            .map(|t| {
                let r = t.segments.start as usize;
                (r, segment_axis(pose.orient[r]), seg.stiffness[r])
            })
            .collect();
        Sway {
            tips,
            roots,
            samples: 0,
            tip_sum: 0.0,
            tip_peak: 0.0,
            moment_sum: 0.0,
            moment_peak: 0.0,
        }
    }

    /// Reads the current pose: tips still attached to their trees, roots of standing trees.
    pub fn sample(&mut self, sim: &dyn DynamicsModel) {
        let seg = &sim.forest().seg;
        let pose = sim.pose();
        let (mut sum, mut count) = (0.0f64, 0usize);
        for &(i, rest) in &self.tips {
            if !on_tree(sim, i) {
                continue;
            }
            let d = (pose.tip(i, seg.length[i]) - rest).length();
            sum += d as f64;
            count += 1;
            self.tip_peak = self.tip_peak.max(d);
        }
        let (mut msum, mut mcount) = (0.0f64, 0usize);
        for &(r, rest, k) in &self.roots {
            if !sim.attached(r) {
                continue;
            }
            let axis = segment_axis(pose.orient[r]);
            let angle = axis.cross(rest).length().atan2(axis.dot(rest));
            let m = k * angle;
            msum += m as f64;
            mcount += 1;
            self.moment_peak = self.moment_peak.max(m);
        }
        if count > 0 && mcount > 0 {
            self.tip_sum += sum / count as f64;
            self.moment_sum += msum / mcount as f64;
            self.samples += 1;
        }
    }

    /// The figures so far.
    pub fn report(&self) -> SwayReport {
        let n = self.samples.max(1) as f64;
        SwayReport {
            tip_mean: self.tip_sum / n,
            tip_peak: self.tip_peak as f64,
            moment_mean: self.moment_sum / n,
            moment_peak: self.moment_peak as f64,
        }
    }
}

/// Whether segment `i` still hangs on its tree: neither it nor an ancestor broke off.
fn on_tree(sim: &dyn DynamicsModel, mut i: usize) -> bool {
    let parent = &sim.forest().seg.parent;
    loop {
        if !sim.attached(i) {
            return false;
        }
        match parent[i] {
            NO_PARENT => return true,
            p => i = p as usize,
        }
    }
}
