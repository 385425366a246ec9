//! Weber & Penn's parametric trees ("Creation and Rendering of Realistic Trees", 1995), grown
//! the way Arbaro 1.9.9 grows them, plus Weber 2008's two structural rules.
//!
//! The stem recursion follows Arbaro's algorithm (its `StemImpl`): stem lengths from the shape
//! ratio and the parent, radii from `Ratio`/`RatioPower` and the taper, substems spread over the
//! segments with an error-diffusion count, clones from `nSegSplits`/`0BaseSplits`, curving with
//! `nCurve`/`nCurveBack`/`nCurveV` (negative: helix), `AttractionUp`, pruning against the
//! envelope, leaves along the last level's stems (negative `Leaves`: a fan at the tip). Each
//! stem level draws from its own random stream, as in Arbaro, so counts barely depend on the
//! seed; the streams are Arbaro's (java.util.Random) and are drawn in Arbaro's order, so a spec
//! grows as Arbaro 1.9.9 grows it with the same seed (even a file with every variation 0 draws:
//! branches spread within a segment by a quarter of their spacing). Where the tools disagree
//! the spec's [`Semantics`](crate::spec::Semantics) decide (shape 0, negative `nRotate`, the
//! sign of `nDownAngleV`); trunk radii follow the writing tool's formula, and tree-gen's several
//! trunks stand apart on a disc as tree-gen places them.
//!
//! For the solver every stem is cut into segments: its `nCurveRes` segments, each cut again
//! wherever a substem or a clone grows out (the pieces of one segment are collinear, so the
//! geometry is unchanged; a child then hangs from the tip of the piece below it, as Sylva's
//! skeleton requires). Helical segments are cut into their ten chords.
//!
//! Weber 2008 ("Structure") adds two rules, each scaled per level by the spec (0 in every
//! imported spec, which grows as its tool grows it; Sylva's own specs may set them):
//! 1. `nForkArea`: the cross-section area just before a fork equals the sum of the areas just
//!    after it (the continuing stem plus every branch or clone leaving there), the stem still
//!    tapering as its own profile says between forks.
//! 2. `nForkPush`: the parent is pushed away from a branch. The continuing stem turns to the
//!    direction that conserves the area-weighted direction sum across the fork,
//!    A_before·d_before = A_after·d_after + Σ A_branch·d_branch, which for a branch at angle θ
//!    turns it by θ·A_branch/A_after: a magnitude inversely proportional to the ratio of the
//!    cross section after the fork to the one before (less one, so a vanishing branch pushes
//!    nothing).
//!
//! Arbaro works z-up; the skeleton is y-up: (x, y, z) becomes (x, z, -y).

use glam::DVec3;

mod assemble;
mod frame;
mod stem;

use frame::{Frame, Profile};

use crate::collision::modelling::{collision_free, CollisionFreeOptions, CollisionFreeReport, NONE};
use crate::error::SimError;
use crate::rng::JavaRandom;
use crate::skeleton::Skeleton;
use crate::spec::{Conical, SpecTool, WeberPennSpec};
pub use crate::stats::TreeStats;

/// Arbaro: stems shorter than 0.5 mm or thinner than 0.05 mm are not created.
const MIN_STEM_LEN: f64 = 0.0005;
const MIN_STEM_RADIUS: f64 = MIN_STEM_LEN / 10.0;
/// Children closer than this fraction of a segment to a cut (or an end) share it.
const MIN_PIECE: f64 = 0.02;
/// Chords per helical segment (Arbaro's `makeHelix(10)`).
const HELIX_CHORDS: usize = 10;

/// Largest trees the generator builds; beyond, it stops with an error instead of exhausting
/// memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenLimits {
    pub max_segments: usize,
    pub max_leaves: usize,
}

impl Default for GenLimits {
    fn default() -> Self {
        GenLimits {
            max_segments: 2_000_000,
            max_leaves: 8_000_000,
        }
    }
}

/// How to grow a spec.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenOptions {
    pub seed: u64,
    pub limits: GenLimits,
    /// Apply the spec's Weber 2008 fork rules (`nForkArea`, `nForkPush`); off gives Arbaro's
    /// own radii and directions.
    pub fork_rules: bool,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            seed: 13,
            limits: GenLimits::default(),
            fork_rules: true,
        }
    }
}

/// A grown Weber-Penn tree.
#[derive(Clone, Debug)]
pub struct Generated {
    pub skeleton: Skeleton,
    pub stats: TreeStats,
    /// `scale_tree`: Scale ± ScaleV as drawn for this seed \[m\].
    pub scale_tree: f64,
    /// The first skeleton segment of each trunk, in the order the trunks grew (those the
    /// collision-free pass kept).
    pub trunk_segments: Vec<u32>,
    /// What the collision-free modelling pass removed, when the spec asks for it
    /// (`CollisionFree`).
    pub collision_free: Option<CollisionFreeReport>,
}

/// Grows `spec`. `progress` receives the fraction done (by trunk segments and first-level
/// branches).
pub fn generate(spec: &WeberPennSpec, opts: &GenOptions, progress: &mut dyn FnMut(f32)) -> Result<Generated, SimError> {
    check_spec(spec)?;
    check_estimate(spec, &opts.limits)?;
    let mut g = Gen::new(spec, opts, progress);
    g.grow_trunks()?;
    let (mut skeleton, mut stats, mut trunk_segments) = g.assemble()?;
    let mut report = None;
    if let Some(sides) = spec.collision_free {
        let opts = CollisionFreeOptions {
            sides: sides as u32,
            ..CollisionFreeOptions::default()
        };
        let done = collision_free(&skeleton, &opts)?;
        trunk_segments = trunk_segments
            .iter()
            .map(|&t| done.segment_map[t as usize])
            .filter(|&t| t != NONE)
            .collect();
        skeleton = done.skeleton;
        stats.fill_extent(&skeleton);
        report = Some(done.report);
    }
    (g.progress)(1.0);
    stats.species = spec.species.clone();
    stats.levels = spec.levels.max(0) as u32;
    Ok(Generated {
        skeleton,
        stats,
        scale_tree: g.scale_tree,
        trunk_segments,
        collision_free: report,
    })
}

impl GenLimits {
    /// Segment visits (pruning test runs included), stems and leaves the generator may make
    /// before it stops: a pruned tree grows each stem up to 16 times while testing it.
    pub fn max_work(&self) -> usize {
        self.max_segments
            .saturating_mul(16)
            .saturating_add(self.max_leaves.saturating_mul(2))
    }
}

/// Refuses a spec whose estimated size ([`WeberPennSpec::estimate_size`]) is beyond `limits`,
/// before anything is grown, naming the level parameters that make it so.
fn check_estimate(spec: &WeberPennSpec, limits: &GenLimits) -> Result<(), SimError> {
    // NaN (no estimate) counts as beyond.
    let beyond = |estimate: f64, limit: usize| estimate.is_nan() || estimate > limit as f64;
    let est = spec.estimate_size();
    let n = est.largest_level();
    let l = spec.level(n);
    let m = n.min(3);
    let culprits = format!(
        "level {n} has about {:.3e} segments ({m}Branches = {}, {m}CurveRes = {}, {m}SegSplits = {}{})",
        est.segments[n],
        l.branches,
        l.curve_res,
        l.seg_splits,
        if n == 0 {
            format!(", 0BaseSplits = {}", spec.base_splits)
        } else {
            String::new()
        }
    );
    if beyond(est.skeleton_segments, limits.max_segments) {
        return Err(SimError::param(
            "tree size",
            format!("about {:.3e} segments estimated from the spec", est.skeleton_segments),
            format!(
                "allowed at most {} segments; {culprits}: lower Levels, nBranches, nCurveRes or nSegSplits",
                limits.max_segments
            ),
        ));
    }
    if beyond(est.leaves, limits.max_leaves) {
        return Err(SimError::param(
            "tree size",
            format!("about {:.3e} leaves estimated from the spec", est.leaves),
            format!(
                "allowed at most {} leaves; Leaves = {} on {:.3e} stems of the last level: lower Leaves or nBranches",
                limits.max_leaves,
                spec.leaves,
                est.stems.last().copied().unwrap_or(0.0)
            ),
        ));
    }
    if beyond(est.work, limits.max_work()) {
        return Err(SimError::param(
            "tree size",
            format!("about {:.3e} generation steps estimated from the spec", est.work),
            format!(
                "allowed at most {}; {culprits}{}: lower nBranches, nCurveRes or nSegSplits",
                limits.max_work(),
                if spec.prune_ratio > 0.0 {
                    format!(", and PruneRatio = {} grows each stem up to 16 times", spec.prune_ratio)
                } else {
                    String::new()
                }
            ),
        ));
    }
    Ok(())
}

/// What the generator needs beyond the importers' validation: finite values and sizes that
/// keep the recursion and the allocations bounded.
fn check_spec(spec: &WeberPennSpec) -> Result<(), SimError> {
    let bad = |name: &'static str, v: f64, allowed: &str| Err(SimError::param(name, v, allowed.to_string()));
    if !(1..=9).contains(&spec.levels) {
        return bad("Levels", spec.levels as f64, "allowed 1..=9");
    }
    if !(spec.scale.is_finite() && spec.scale > 0.0 && spec.scale <= 1000.0) {
        return bad("Scale", spec.scale, "allowed a finite number in (0, 1000] metres");
    }
    let general = [
        ("ScaleV", spec.scale_v),
        ("BaseSize", spec.base_size),
        ("Ratio", spec.ratio),
        ("RatioPower", spec.ratio_power),
        ("Flare", spec.flare),
        ("0Scale", spec.scale0),
        ("LeafScale", spec.leaf_scale),
        ("LeafScaleX", spec.leaf_scale_x),
        ("LeafQuality", spec.leaf_quality),
        ("LeafBend", spec.leaf_bend),
        ("PruneRatio", spec.prune_ratio),
        ("PruneWidth", spec.prune_width),
        ("PruneWidthPeak", spec.prune_width_peak),
        ("PrunePowerLow", spec.prune_power_low),
        ("PrunePowerHigh", spec.prune_power_high),
        ("ZScale", spec.z_scale),
    ];
    for (name, v) in general {
        if !v.is_finite() {
            return bad(name, v, "must be a finite number");
        }
    }
    if spec.leaves.unsigned_abs() > 100_000 {
        return bad("Leaves", spec.leaves as f64, "allowed -100000..=100000 leaves per stem");
    }
    if spec.base_splits.unsigned_abs() > 1000 {
        return bad("0BaseSplits", spec.base_splits as f64, "allowed -1000..=1000");
    }
    if let Some(sides) = spec.collision_free {
        use crate::collision::primitives::{MAX_SIDES, MIN_SIDES};
        if !(MIN_SIDES as i64..=MAX_SIDES as i64).contains(&sides) {
            let allowed = format!("allowed {MIN_SIDES}..={MAX_SIDES} prism sides");
            return bad("CollisionFree", sides as f64, &allowed);
        }
    }
    for (n, l) in spec.level.iter().enumerate() {
        let fields = [
            (l.down_angle, "DownAngle"),
            (l.down_angle_v, "DownAngleV"),
            (l.rotate, "Rotate"),
            (l.rotate_v, "RotateV"),
            (l.branch_dist, "BranchDist"),
            (l.length, "Length"),
            (l.length_v, "LengthV"),
            (l.taper, "Taper"),
            (l.seg_splits, "SegSplits"),
            (l.split_angle, "SplitAngle"),
            (l.split_angle_v, "SplitAngleV"),
            (l.curve, "Curve"),
            (l.curve_back, "CurveBack"),
            (l.curve_v, "CurveV"),
            (l.base_size, "BaseSize"),
            (l.attraction_up, "AttractionUp"),
            (l.fork_area, "ForkArea"),
            (l.fork_push, "ForkPush"),
        ];
        for (v, name) in fields {
            if !v.is_finite() {
                return Err(SimError::param(
                    "level parameter",
                    format!("{n}{name} = {v}"),
                    "must be a finite number",
                ));
            }
        }
        if n < spec.levels as usize {
            if !(1..=1000).contains(&l.curve_res) {
                return Err(SimError::param(
                    "level parameter",
                    format!("{n}CurveRes = {}", l.curve_res),
                    "allowed 1..=1000",
                ));
            }
            if l.branches.unsigned_abs() > 10_000 {
                return Err(SimError::param(
                    "level parameter",
                    format!("{n}Branches = {}", l.branches),
                    "allowed -10000..=10000",
                ));
            }
            if l.seg_splits < 0.0 || l.seg_splits > 100.0 {
                return Err(SimError::param(
                    "level parameter",
                    format!("{n}SegSplits = {}", l.seg_splits),
                    "allowed 0..=100",
                ));
            }
            if l.length <= 0.0 {
                return Err(SimError::param(
                    "level parameter",
                    format!("{n}Length = {}", l.length),
                    "must be greater than 0",
                ));
            }
        }
        if !(0.0..=1.0).contains(&l.fork_area) || !(0.0..=1.0).contains(&l.fork_push) {
            return Err(SimError::param(
                "level parameter",
                format!("{n}ForkArea = {}, {n}ForkPush = {}", l.fork_area, l.fork_push),
                "allowed 0..=1",
            ));
        }
    }
    Ok(())
}

/// The shape ratio of `shape` at `ratio` (Weber-Penn's table, with the spec's semantics for
/// the shapes the tools define differently); also used by the size estimate.
pub(crate) fn shape_ratio(s: &WeberPennSpec, ratio: f64, shape: i64) -> f64 {
    let sapling = s.semantics.conical == Conical::Sapling;
    match shape {
        0 => match s.semantics.conical {
            Conical::Pure => ratio,
            Conical::Paper => 0.2 + 0.8 * ratio,
            Conical::Sapling => 0.05 + 0.95 * ratio,
        },
        1 => 0.2 + 0.8 * (std::f64::consts::PI * ratio).sin(),
        2 => 0.2 + 0.8 * (0.5 * std::f64::consts::PI * ratio).sin(),
        3 => 1.0,
        4 => 0.5 + 0.5 * ratio,
        5 => {
            let flame = if ratio <= 0.7 { ratio / 0.7 } else { (1.0 - ratio) / 0.3 };
            if sapling {
                0.05 + 0.95 * flame
            } else {
                flame
            }
        }
        6 => 1.0 - 0.8 * ratio,
        7 => {
            if ratio <= 0.7 {
                0.5 + 0.5 * ratio / 0.7
            } else {
                0.5 + 0.5 * (1.0 - ratio) / 0.3
            }
        }
        // Sapling's shape 8 is its custom shape: (base, middle, middle position, top),
        // linear in between.
        8 if matches!(s.origin, SpecTool::SaplingV03 | SpecTool::Sapling4) && s.custom_shape.is_some() => {
            let [base, middle, at, top] = s.custom_shape.unwrap_or([1.0, 1.0, 0.5, 1.0]);
            let at = at.clamp(1e-6, 1.0 - 1e-6);
            if ratio <= at {
                base + (middle - base) * ratio / at
            } else {
                middle + (top - middle) * (ratio - at) / (1.0 - at)
            }
        }
        8 | 9 => envelope(s, ratio),
        10 => 0.5 + 0.5 * (1.0 - ratio),
        _ => 1.0,
    }
}

/// The pruning envelope (Arbaro's shape 8).
pub(crate) fn envelope(s: &WeberPennSpec, ratio: f64) -> f64 {
    if !(0.0..=1.0).contains(&ratio) {
        0.0
    } else if ratio < 1.0 - s.prune_width_peak {
        (ratio / (1.0 - s.prune_width_peak)).powf(s.prune_power_high)
    } else {
        ((1.0 - ratio) / (1.0 - s.prune_width_peak)).powf(s.prune_power_low)
    }
}

/// Per-level random stream and error accumulators (Arbaro's `LevelParams` state).
#[derive(Clone)]
struct LevelState {
    rng: JavaRandom,
    split_error: f64,
    substem_error: f64,
}

/// A parent's values a child needs.
#[derive(Clone, Copy, Debug)]
struct ParentInfo {
    length: f64,
    base_radius: f64,
    length_child_max: f64,
    profile: Profile,
}

/// A stem while it is made (Arbaro's `StemImpl` fields).
#[derive(Clone)]
struct Stem {
    level: usize,
    frame: Frame,
    offset: f64,
    parent: Option<ParentInfo>,
    is_clone: bool,
    length: f64,
    segment_length: f64,
    segment_count: usize,
    base_radius: f64,
    length_child_max: f64,
    substems_per_segment: f64,
    substem_rotangle: f64,
    leaves_per_segment: f64,
    split_correction: f64,
    prune_test: bool,
    /// Output record, once the stem is kept.
    out: Option<usize>,
    /// Where a substem hangs from its parent's output record.
    attach_hint: Option<Attach>,
}

/// Where a stem hangs from: a segment of another stem and the fraction along it.
#[derive(Clone, Copy, Debug)]
struct Attach {
    stem: usize,
    segment: usize,
    along: f64,
}

/// A segment as Arbaro makes it.
#[derive(Clone, Debug)]
struct OutSegment {
    /// Index of the segment in its stem (clones start past 0).
    index: usize,
    frame: Frame,
    /// Points of a helical segment (start excluded, end included).
    helix: Option<Vec<DVec3>>,
}

#[derive(Clone, Debug)]
struct OutLeaf {
    segment: usize,
    along: f64,
    frame: Frame,
}

#[derive(Clone, Debug)]
struct OutStem {
    level: usize,
    is_clone: bool,
    attach: Option<Attach>,
    segment_length: f64,
    profile: Profile,
    segments: Vec<OutSegment>,
    leaves: Vec<OutLeaf>,
}

struct Gen<'a> {
    spec: &'a WeberPennSpec,
    opts: GenOptions,
    levels: Vec<LevelState>,
    leaves_error: f64,
    scale_tree: f64,
    trunk_rotangle: f64,
    out: Vec<OutStem>,
    segments: usize,
    leaves: usize,
    /// Segments visited (test runs included), stems and leaves made: bounded by
    /// `GenLimits::max_work`, so no estimate error can make the generator run away.
    work: usize,
    progress: &'a mut dyn FnMut(f32),
    progress_total: f64,
    progress_done: f64,
}

#[cfg(test)]
mod tests;
