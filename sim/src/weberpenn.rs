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

use glam::{DMat3, DQuat, DVec3, Quat, Vec3};

use crate::error::SimError;
use crate::rng::JavaRandom;
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment};
use crate::spec::{Conical, DownAngleV, NegativeRotate, SpecTool, WeberPennSpec};
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
    /// The first skeleton segment of each trunk, in the order the trunks grew.
    pub trunk_segments: Vec<u32>,
}

/// Grows `spec`. `progress` receives the fraction done (by trunk segments and first-level
/// branches).
pub fn generate(spec: &WeberPennSpec, opts: &GenOptions, progress: &mut dyn FnMut(f32)) -> Result<Generated, SimError> {
    check_spec(spec)?;
    check_estimate(spec, &opts.limits)?;
    let mut g = Gen::new(spec, opts, progress);
    g.grow_trunks()?;
    let (skeleton, mut stats, trunk_segments) = g.assemble()?;
    (g.progress)(1.0);
    stats.species = spec.species.clone();
    stats.levels = spec.levels.max(0) as u32;
    Ok(Generated {
        skeleton,
        stats,
        scale_tree: g.scale_tree,
        trunk_segments,
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

/// A rotation and a position: Arbaro's `Transformation`. The columns of `m` are the local axes;
/// stems grow along the local z axis.
#[derive(Clone, Copy, Debug)]
struct Frame {
    m: DMat3,
    t: DVec3,
}

/// A matrix from its rows.
fn rows(r: [f64; 9]) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(r[0], r[3], r[6]),
        DVec3::new(r[1], r[4], r[7]),
        DVec3::new(r[2], r[5], r[8]),
    )
}

impl Frame {
    fn identity() -> Frame {
        Frame {
            m: DMat3::IDENTITY,
            t: DVec3::ZERO,
        }
    }
    fn z(&self) -> DVec3 {
        self.m.z_axis
    }
    fn y(&self) -> DVec3 {
        self.m.y_axis
    }
    /// A rotation in the local frame.
    fn local(&self, r: DMat3) -> Frame {
        Frame {
            m: self.m * r,
            t: self.t,
        }
    }
    fn rotx(&self, deg: f64) -> Frame {
        let (s, c) = deg.to_radians().sin_cos();
        self.local(rows([1.0, 0.0, 0.0, 0.0, c, -s, 0.0, s, c]))
    }
    /// Arbaro's `roty` (which turns by -angle about the local y axis).
    fn roty(&self, deg: f64) -> Frame {
        let (s, c) = deg.to_radians().sin_cos();
        self.local(rows([c, 0.0, -s, 0.0, 1.0, 0.0, s, 0.0, c]))
    }
    /// Down angle `delta` away from the local z axis, then rotation `rho` about it.
    fn rotxz(&self, delta: f64, rho: f64) -> Frame {
        let (sd, cd) = delta.to_radians().sin_cos();
        let (sr, cr) = rho.to_radians().sin_cos();
        self.local(rows([cr, -sr * cd, sr * sd, sr, cr * cd, -cr * sd, 0.0, sd, cd]))
    }
    /// Turn by `delta` away from the local z axis about the local axis at angle `rho` in the
    /// x-y plane.
    fn rotaxisz(&self, delta: f64, rho: f64) -> Frame {
        let (si, co) = delta.to_radians().sin_cos();
        let (b, a) = rho.to_radians().sin_cos();
        self.local(rows([
            co + a * a * (1.0 - co),
            b * a * (1.0 - co),
            b * si,
            a * b * (1.0 - co),
            co + b * b * (1.0 - co),
            -a * si,
            -b * si,
            a * si,
            co,
        ]))
    }
    /// A rotation about a world axis.
    fn rotaxis(&self, deg: f64, axis: DVec3) -> Frame {
        let r = DMat3::from_axis_angle(axis.normalize(), deg.to_radians());
        Frame {
            m: r * self.m,
            t: self.t,
        }
    }
    fn translate(&self, v: DVec3) -> Frame {
        Frame {
            m: self.m,
            t: self.t + v,
        }
    }
}

/// A stem's radius along its length (Arbaro's `stemRadius`, without lobes).
#[derive(Clone, Copy, Debug)]
struct Profile {
    length: f64,
    base_radius: f64,
    taper: f64,
    /// Trunk: flare and 0Scale apply.
    trunk: bool,
    flare: f64,
    scale0: f64,
}

impl Profile {
    fn radius(&self, h: f64) -> f64 {
        let z = if self.length > 0.0 {
            (h / self.length).min(1.0)
        } else {
            1.0
        };
        let taper = self.taper;
        let unit_taper = if taper <= 1.0 {
            taper
        } else if taper <= 2.0 {
            2.0 - taper
        } else {
            0.0
        };
        let mut radius = self.base_radius * (1.0 - unit_taper * z);
        if taper > 1.0 {
            // Spherical end (1..2) or periodic tapering (2..3).
            let z2 = (1.0 - z) * self.length;
            let depth = if taper < 2.0 || z2 < radius { 1.0 } else { taper - 2.0 };
            let z3 = if taper < 2.0 {
                z2
            } else if radius > 0.0 {
                (z2 - 2.0 * radius * ((z2 / 2.0 / radius + 0.5) as i64) as f64).abs()
            } else {
                z2
            };
            if taper > 2.0 || z3 < radius {
                let inner = (radius * radius - (z3 - radius) * (z3 - radius)).max(0.0);
                radius = (1.0 - depth) * radius + depth * inner.sqrt();
            }
        }
        if self.trunk {
            if self.flare != 0.0 {
                let y = (1.0 - 8.0 * z).max(0.0);
                radius *= 1.0 + self.flare * (100f64.powf(y) - 1.0) / 100.0;
            }
            radius *= self.scale0;
        }
        radius.max(0.0)
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

impl<'a> Gen<'a> {
    fn new(spec: &'a WeberPennSpec, opts: &GenOptions, progress: &'a mut dyn FnMut(f32)) -> Gen<'a> {
        // One random stream per level, seeded in a chain, so levels do not disturb each other:
        // Arbaro's `Params.prepare` (java.util.Random, level 0 seeded with the tree's seed, each
        // next level with the previous one's first nextLong).
        let mut seed = opts.seed as i64;
        let mut levels = Vec::with_capacity(4);
        for _ in 0..4 {
            let mut rng = JavaRandom::new(seed);
            seed = rng.next_long();
            levels.push(LevelState {
                rng,
                split_error: 0.0,
                substem_error: 0.0,
            });
        }
        // Scale ± ScaleV; files with ScaleV ≥ Scale exist (ca_black_oak, shave-grass), where
        // Arbaro would grow nothing at all for some seeds: the size is kept above 5 % of Scale.
        let scale_tree = (spec.scale + levels[0].rng.var(spec.scale_v)).max(0.05 * spec.scale);
        let l0 = spec.level(0);
        let l1 = spec.level(1);
        // Progress counts trunk segments and first-level branches.
        let progress_total = (l0.branches.max(1) as f64) * (l0.curve_res.max(1) as f64 + l1.branches.max(0) as f64);
        Gen {
            spec,
            opts: *opts,
            levels,
            leaves_error: 0.0,
            scale_tree,
            trunk_rotangle: 0.0,
            out: Vec::new(),
            segments: 0,
            leaves: 0,
            work: 0,
            progress,
            progress_total,
            progress_done: 0.0,
        }
    }

    fn lpar(&self, level: usize) -> &'a crate::spec::LevelSpec {
        self.spec.level(level)
    }

    fn var(&mut self, level: usize, v: f64) -> f64 {
        self.levels[level.min(3)].rng.var(v)
    }

    /// Counts `n` units of work, refusing the tree once the limit is passed.
    fn spend(&mut self, n: usize) -> Result<(), SimError> {
        self.work = self.work.saturating_add(n);
        if self.work > self.opts.limits.max_work() {
            return Err(SimError::param(
                "tree size",
                format!("more than {} generation steps", self.opts.limits.max_work()),
                "the generator stops at this limit; lower Levels, nBranches, nCurveRes or nSegSplits",
            ));
        }
        Ok(())
    }

    /// A child, clone or leaf count computed from the spec, refused before its loop starts
    /// when it alone would pass the work limit (a count that overflowed saturates to
    /// `i64::MAX` and would otherwise loop to it).
    fn check_count(&self, count: i64, what: &str) -> Result<(), SimError> {
        let left = self.opts.limits.max_work().saturating_sub(self.work);
        if count > 0 && count as u64 > left as u64 {
            return Err(SimError::param(
                "tree size",
                format!("{count} {what} on one stem segment"),
                format!(
                    "the generator stops at {} generation steps; lower nBranches, nSegSplits or Leaves",
                    self.opts.limits.max_work()
                ),
            ));
        }
        Ok(())
    }

    fn tick(&mut self) {
        self.progress_done += 1.0;
        if self.progress_total > 0.0 {
            (self.progress)((self.progress_done / self.progress_total).min(1.0) as f32);
        }
    }

    /// The shape ratio of `shape` at `ratio` (see [`shape_ratio`]).
    fn shape_ratio(&self, ratio: f64, shape: i64) -> f64 {
        shape_ratio(self.spec, ratio, shape)
    }

    /// The pruning envelope (see [`envelope`]).
    fn envelope(&self, ratio: f64) -> f64 {
        envelope(self.spec, ratio)
    }

    fn grow_trunks(&mut self) -> Result<(), SimError> {
        let l0 = self.lpar(0);
        let trunks = l0.branches.max(1) as usize;
        if self.spec.origin == SpecTool::TreeGen && trunks > 1 {
            // tree-gen: vertical trunks standing on points spread over a disc.
            for (pos, theta) in self.treegen_floor_points(trunks)? {
                let frame = Frame::identity().rotxz(0.0, theta.to_degrees() - 90.0).translate(pos);
                let mut trunk = Stem::new(0, frame, 0.0, None);
                self.make_stem(&mut trunk)?;
            }
            return Ok(());
        }
        for _ in 0..trunks {
            let frame = self.trunk_direction(Frame::identity());
            let angle = self.var(0, 360.0);
            let dist = self.var(0, l0.branch_dist);
            let frame = frame.translate(DVec3::new(dist * angle.sin(), dist * angle.cos(), 0.0));
            let mut trunk = Stem::new(0, frame, 0.0, None);
            self.make_stem(&mut trunk)?;
        }
        Ok(())
    }

    /// Where tree-gen stands `n` trunks (`Tree.points_for_floor_split` in tree-gen's
    /// `parametric/gen.py`): each at distance sqrt(u·n/2.5·g_scale·ratio) from the centre (u
    /// uniform in [0, 1)) at a uniform angle θ, redrawn while it is closer than 2.5 trunk radii
    /// (of a trunk of the largest size, (g_scale + g_scale_v)·length[0]·ratio) to one already
    /// placed; the trunk then turns by θ - 90° about its axis to face outwards. tree-gen draws
    /// forever when the trunks cannot fit; Sylva stops after `MAX_FLOOR_DRAWS` draws per trunk
    /// with an error naming the parameters.
    fn treegen_floor_points(&mut self, n: usize) -> Result<Vec<(DVec3, f64)>, SimError> {
        const MAX_FLOOR_DRAWS: usize = 10_000;
        let s = self.spec;
        let trunk_len = (s.scale + s.scale_v) * s.level[0].length;
        let spacing = 2.5 * trunk_len * s.ratio;
        let reach = n as f64 / 2.5 * s.scale * s.ratio;
        let mut points: Vec<(DVec3, f64)> = Vec::with_capacity(n);
        for _ in 0..n {
            let mut placed = false;
            for _ in 0..MAX_FLOOR_DRAWS {
                let rng = &mut self.levels[0].rng;
                let dis = (rng.next_double() * reach).sqrt();
                let theta = rng.next_double() * std::f64::consts::TAU;
                let pos = DVec3::new(dis * theta.cos(), dis * theta.sin(), 0.0);
                if points.iter().all(|(p, _)| (*p - pos).length() >= spacing) {
                    points.push((pos, theta));
                    placed = true;
                    break;
                }
            }
            if !placed {
                return Err(SimError::param(
                    "branches[0]",
                    n,
                    format!(
                        "{n} trunks do not fit {spacing:.3} m apart on a disc of radius {:.3} m (tree-gen would search \
                         forever); fewer trunks, or a smaller ratio or length[0]",
                        reach.sqrt()
                    ),
                ));
            }
        }
        Ok(points)
    }

    /// Arbaro's `trunkDirection`: the rotation angle first, then the down angle.
    fn trunk_direction(&mut self, frame: Frame) -> Frame {
        let l0 = self.lpar(0);
        let rot = self.rotation_angle(0, &mut 0.0, true);
        let down = l0.down_angle + self.var(0, l0.down_angle_v);
        frame.rotxz(down, rot)
    }

    /// Next rotation angle about the parent for a child at `level`, advancing `state`
    /// (Arbaro's `substemRotangle`; for trunks the tree's `trunk_rotangle`).
    fn rotation_angle(&mut self, level: usize, state: &mut f64, trunk: bool) -> f64 {
        let l = self.lpar(level);
        let mut local = if trunk { self.trunk_rotangle } else { *state };
        let angle = if l.rotate >= 0.0 || self.spec.semantics.negative_rotate == NegativeRotate::Plain {
            local = (local + l.rotate + self.var(level, l.rotate_v) + 360.0) % 360.0;
            local
        } else {
            if local.abs() != 1.0 {
                local = 1.0;
            }
            local = -local;
            match self.spec.semantics.negative_rotate {
                // Arbaro and tree-gen: alternate sides at ±(180 + nRotate).
                NegativeRotate::Alternate180 => local * (180.0 + l.rotate + self.var(level, l.rotate_v)),
                // Sapling: alternate sides at ±|nRotate|.
                _ => local * (l.rotate.abs() + self.var(level, l.rotate_v)),
            }
        };
        if trunk {
            self.trunk_rotangle = local;
        } else {
            *state = local;
        }
        angle
    }

    /// Arbaro's `Stem.make`: length, radius, pruning, then the segments. Returns whether the
    /// stem was kept.
    fn make_stem(&mut self, stem: &mut Stem) -> Result<bool, SimError> {
        self.spend(1)?;
        let lpar = self.lpar(stem.level);
        stem.segment_count = lpar.curve_res.max(1) as usize;
        stem.length = self.stem_length(stem);
        stem.segment_length = stem.length / stem.segment_count as f64;
        stem.base_radius = self.stem_base_radius(stem);
        if stem.level > 0 && self.spec.prune_ratio > 0.0 {
            self.prune(stem)?;
        }
        if !(stem.length > MIN_STEM_LEN && stem.base_radius > MIN_STEM_RADIUS) {
            return Ok(false);
        }
        self.prepare_substem_params(stem);
        self.record(stem, None);
        self.make_segments(stem, 0, stem.segment_count)?;
        Ok(true)
    }

    fn profile(&self, stem: &Stem) -> Profile {
        // Sapling 0.3 multiplies the trunk's first point by rootFlare (the importer's Flare is
        // rootFlare - 1); Arbaro's flare gives 1 + 0.99·Flare there, so the factor is rescaled to
        // give rootFlare exactly at the base (and Arbaro's decay over the lowest eighth above).
        let flare = match self.spec.origin {
            SpecTool::SaplingV03 | SpecTool::Sapling4 => self.spec.flare / 0.99,
            _ => self.spec.flare,
        };
        Profile {
            length: stem.length,
            base_radius: stem.base_radius,
            taper: self.lpar(stem.level).taper,
            trunk: stem.level == 0,
            flare,
            scale0: self.spec.scale0,
        }
    }

    /// Starts the output record of a kept stem.
    fn record(&mut self, stem: &mut Stem, attach: Option<Attach>) {
        if stem.prune_test {
            return;
        }
        let attach = attach.or(stem.attach_hint);
        self.out.push(OutStem {
            level: stem.level,
            is_clone: stem.is_clone,
            attach,
            segment_length: stem.segment_length,
            profile: self.profile(stem),
            // A clone only gets the segments after its split; a stem is cut short by pruning
            // or the limits, so capacity is only reserved up to a modest size.
            segments: Vec::with_capacity(stem.segment_count.min(64)),
            leaves: Vec::new(),
        });
        stem.out = Some(self.out.len() - 1);
    }

    fn stem_length(&mut self, stem: &Stem) -> f64 {
        let lpar = self.lpar(stem.level);
        match (stem.level, stem.parent) {
            (0, _) | (_, None) => (lpar.length + self.var(0, lpar.length_v)) * self.scale_tree,
            (1, Some(p)) => {
                let base_len = self.spec.base_size * self.scale_tree;
                let ratio = (p.length - stem.offset) / (p.length - base_len);
                p.length * p.length_child_max * self.shape_ratio(ratio, self.spec.shape)
            }
            (_, Some(p)) => p.length_child_max * (p.length - 0.6 * stem.offset),
        }
    }

    fn stem_base_radius(&self, stem: &Stem) -> f64 {
        match stem.parent {
            None => match self.spec.origin {
                // Helios uses ZScale as a trunk radius factor (`buildTree`: radius = length0 ·
                // Ratio · ZScale · flare).
                SpecTool::Helios if self.spec.z_scale > 0.0 => stem.length * self.spec.ratio * self.spec.z_scale,
                // Sapling 0.3 and sapling_4 (`kickstart_trunk`): startRad = scaleVal · ratio ·
                // scale0, the tree's size, not the trunk's length.
                SpecTool::SaplingV03 | SpecTool::Sapling4 => self.scale_tree * self.spec.ratio,
                // Arbaro (`stemBaseRadius`), tree-gen (`calc_stem_radius`), Sapling 0.2:
                // length · Ratio.
                _ => stem.length * self.spec.ratio,
            },
            Some(p) => {
                let max_radius = p.profile.radius(stem.offset);
                let radius = p.base_radius * (stem.length / p.length).powf(self.spec.ratio_power);
                radius.min(max_radius)
            }
        }
    }

    /// Arbaro's pruning: shorten the stem until it fits the envelope, then undo `PruneRatio`
    /// of the shortening. The random state and split error are saved and restored around the
    /// test runs, so the kept stem draws what the test drew.
    fn prune(&mut self, stem: &mut Stem) -> Result<(), SimError> {
        let level = stem.level.min(3);
        // Arbaro's `LevelParams.saveState` (which reseeds the stream) and `restoreState`.
        let saved = (self.levels[level].rng.save_state(), self.levels[level].split_error);
        let split_correction = stem.split_correction;
        let original = stem.length;
        stem.prune_test = true;
        let mut segm = self.make_segments(stem, 0, stem.segment_count)?;
        while let Some(s) = segm {
            if stem.length <= 0.001 * self.scale_tree {
                break;
            }
            self.levels[level].rng = saved.0.clone();
            self.levels[level].split_error = saved.1;
            stem.split_correction = split_correction;
            let min_len = stem.length / 2.0;
            let max_len = stem.length - original / 15.0;
            stem.length = (stem.segment_length * s as f64).max(min_len).min(max_len);
            stem.segment_length = stem.length / stem.segment_count as f64;
            stem.base_radius = self.stem_base_radius(stem);
            segm = if stem.length > MIN_STEM_LEN {
                self.make_segments(stem, 0, stem.segment_count)?
            } else {
                None
            };
        }
        stem.length = original - (original - stem.length) * self.spec.prune_ratio;
        self.levels[level].rng = saved.0;
        self.levels[level].split_error = saved.1;
        stem.split_correction = split_correction;
        stem.prune_test = false;
        Ok(())
    }

    fn inside_envelope(&self, p: DVec3) -> bool {
        let r = (p.x * p.x + p.y * p.y).sqrt();
        let ratio = (self.scale_tree - p.z) / (self.scale_tree * (1.0 - self.spec.base_size));
        r / self.scale_tree < self.spec.prune_width * self.envelope(ratio)
    }

    fn prepare_substem_params(&mut self, stem: &mut Stem) {
        let next = stem.level + 1;
        let l1 = self.lpar(next);
        stem.length_child_max = l1.length + self.var(next, l1.length_v);
        let stems_max = l1.branches.max(0) as f64;
        let count = if stem.level == 0 {
            stems_max
        } else if stem.level == 1 {
            let p = stem.parent.expect("a level-1 stem has a parent");
            ((stems_max * (0.2 + 0.8 * stem.length / p.length / p.length_child_max)) as i64) as f64
        } else {
            let p = stem.parent.expect("a stem above level 0 has a parent");
            ((stems_max * (1.0 - 0.5 * stem.offset / p.length)) as i64) as f64
        };
        stem.substems_per_segment = if stem.level == 0 && self.spec.base_size >= 1.0 {
            // The whole trunk is bare (1 / (1 - BaseSize) would be infinite).
            0.0
        } else if stem.level == 0 {
            count / stem.segment_count as f64 / (1.0 - self.spec.base_size)
        } else {
            count / stem.segment_count as f64
        };
        stem.substem_rotangle = 0.0;
        if stem.level + 1 == self.spec.levels as usize {
            stem.leaves_per_segment = self.leaves_per_branch(stem) / stem.segment_count as f64;
        }
    }

    fn leaves_per_branch(&self, stem: &Stem) -> f64 {
        if self.spec.leaves == 0 {
            return 0.0;
        }
        match stem.parent {
            None => 0.0,
            Some(p) => {
                self.spec.leaves.unsigned_abs() as f64
                    * self.shape_ratio(stem.offset / p.length, self.spec.leaf_distrib)
                    * self.spec.leaf_quality
            }
        }
    }

    /// Arbaro's `makeSegments`: returns the segment that left the envelope in a prune test.
    fn make_segments(&mut self, stem: &mut Stem, start: usize, end: usize) -> Result<Option<usize>, SimError> {
        let mut frame = stem.frame;
        let levels = self.spec.levels as usize;
        for s in start..end {
            if stem.level == 0 && !stem.prune_test {
                self.tick();
            }
            self.spend(1)?;
            frame = self.new_direction(stem, frame, s);
            if let Some(o) = stem.out.filter(|_| !stem.prune_test) {
                // A helical segment becomes its chords in the skeleton.
                self.segments += if self.lpar(stem.level).curve_v < 0.0 {
                    HELIX_CHORDS
                } else {
                    1
                };
                if self.segments > self.opts.limits.max_segments {
                    return Err(SimError::param(
                        "tree size",
                        format!("more than {} segments", self.opts.limits.max_segments),
                        "the generator stops at this limit; lower Levels, nBranches or nCurveRes",
                    ));
                }
                let helix = (self.lpar(stem.level).curve_v < 0.0).then(|| self.helix_points(stem, frame));
                self.out[o].segments.push(OutSegment { index: s, frame, helix });
                if stem.level + 1 < levels {
                    self.make_substems(stem, s, frame)?;
                }
                if stem.level + 1 == levels && self.spec.leaves != 0 {
                    self.make_leaves(stem, s, frame)?;
                }
            }
            frame = frame.translate(frame.z() * stem.segment_length);
            if stem.prune_test && !self.inside_envelope(frame.t) {
                return Ok(Some(s));
            }
            if s + 1 < end {
                if let Some(segm) = self.make_clones(stem, frame, s)? {
                    return Ok(Some(segm));
                }
            }
        }
        Ok(None)
    }

    /// Points of a helical segment (Arbaro's `makeHelix(10)`), in world space.
    fn helix_points(&self, stem: &Stem, frame: Frame) -> Vec<DVec3> {
        let angle = self.lpar(stem.level).curve_v.abs().to_radians();
        let len = stem.segment_length;
        let rad = ((1.0 / (angle.cos() * angle.cos()) - 1.0).max(0.0)).sqrt() * len / std::f64::consts::PI / 2.0;
        (1..=HELIX_CHORDS)
            .map(|i| {
                let a = std::f64::consts::TAU * i as f64 / HELIX_CHORDS as f64;
                let local = DVec3::new(rad * a.cos() - rad, rad * a.sin(), i as f64 * len / HELIX_CHORDS as f64);
                frame.t + frame.m * local
            })
            .collect()
    }

    fn new_direction(&mut self, stem: &Stem, frame: Frame, segment: usize) -> Frame {
        if segment == 0 {
            return frame;
        }
        let l = self.lpar(stem.level);
        let res = l.curve_res.max(1) as f64;
        let mut delta = if l.curve_back == 0.0 {
            l.curve / res
        } else if (segment as i64) < (l.curve_res.max(1) + 1) / 2 {
            l.curve * 2.0 / res
        } else {
            l.curve_back * 2.0 / res
        };
        delta += stem.split_correction;
        let mut frame = frame.rotx(delta);
        if l.curve_v > 0.0 {
            let delta = self.var(stem.level, l.curve_v) / res;
            let rho = 180.0 + self.var(stem.level, 180.0);
            frame = frame.rotaxisz(delta, rho);
        }
        let attraction = l.attraction_up;
        if attraction != 0.0 && stem.level >= 2 {
            let z = frame.z();
            let declination = z.z.clamp(-1.0, 1.0).acos();
            let curve_up = attraction * (declination * declination.sin()).abs() / res;
            let axis = DVec3::new(-z.y, z.x, 0.0);
            if curve_up != 0.0 && axis.length_squared() > 1e-24 {
                frame = frame.rotaxis(-curve_up.to_degrees(), axis);
            }
        }
        frame
    }

    fn make_substems(&mut self, stem: &mut Stem, segment: usize, seg_frame: Frame) -> Result<(), SimError> {
        let next = stem.level + 1;
        let l1 = self.lpar(next);
        let (per_segment, offs) = if stem.level > 0 {
            let offs = if segment == 0 {
                stem.parent.map_or(0.0, |p| p.profile.radius(stem.offset)) / stem.segment_length
            } else {
                0.0
            };
            (stem.substems_per_segment, offs)
        } else {
            let base = self.spec.base_size * stem.length;
            let seg_len = stem.segment_length;
            if segment as f64 * seg_len > base {
                (stem.substems_per_segment, 0.0)
            } else if (segment + 1) as f64 * seg_len <= base {
                return Ok(());
            } else {
                let offs = (base - segment as f64 * seg_len) / seg_len;
                (stem.substems_per_segment * (1.0 - offs), offs)
            }
        };
        let level = stem.level.min(3);
        let eff = (per_segment + self.levels[level].substem_error + 0.5) as i64;
        self.levels[level].substem_error -= eff as f64 - per_segment;
        if eff <= 0 {
            return Ok(());
        }
        self.check_count(eff, "substems")?;
        let dist = (1.0 - offs) / eff as f64 * l1.branch_dist;
        let distv = dist * 0.25;
        for s in 0..eff {
            let along = offs + dist / 2.0 + s as f64 * dist + self.var(next, distv);
            let offset = (segment as f64 + along) * stem.segment_length;
            let frame = self.substem_direction(stem, seg_frame, offset);
            let frame = frame.translate(seg_frame.z() * (along * stem.segment_length));
            let info = ParentInfo {
                length: stem.length,
                base_radius: stem.base_radius,
                length_child_max: stem.length_child_max,
                profile: self.profile(stem),
            };
            let mut child = Stem::new(next, frame, offset, Some(info));
            child.attach_hint = stem.out.map(|o| Attach {
                stem: o,
                segment,
                along,
            });
            self.make_stem(&mut child)?;
            if stem.level == 0 {
                self.tick();
            }
        }
        Ok(())
    }

    fn substem_direction(&mut self, stem: &mut Stem, frame: Frame, offset: f64) -> Frame {
        let next = stem.level + 1;
        let l1 = self.lpar(next);
        let mut state = stem.substem_rotangle;
        let rotangle = self.rotation_angle(next, &mut state, false);
        stem.substem_rotangle = state;
        let down = match (self.spec.semantics.down_angle_v, l1.down_angle_v >= 0.0) {
            (DownAngleV::Paper, true) | (DownAngleV::SaplingReversed, false) | (DownAngleV::Random, _) => {
                l1.down_angle + self.var(next, l1.down_angle_v.abs())
            }
            (DownAngleV::Paper, false) => {
                // Negative: the angle varies with the position along the parent.
                let len = if stem.level == 0 {
                    stem.length * (1.0 - self.spec.base_size)
                } else {
                    stem.length
                };
                l1.down_angle + l1.down_angle_v * (1.0 - 2.0 * self.shape_ratio((stem.length - offset) / len, 0))
            }
            (DownAngleV::SaplingReversed, true) => {
                // Sapling 0.3: positive decreases the angle towards the parent's tip.
                let base = if stem.level == 0 { self.spec.base_size } else { 0.0 };
                let o = (offset / stem.length).clamp(0.0, 1.0);
                let f = 1.0 - (1.0 - o) / (1.0 - base).max(1e-6);
                l1.down_angle - l1.down_angle_v * f * f
            }
        };
        frame.rotxz(down, rotangle)
    }

    fn make_leaves(&mut self, stem: &mut Stem, segment: usize, seg_frame: Frame) -> Result<(), SimError> {
        let o = match stem.out {
            Some(o) => o,
            None => return Ok(()),
        };
        let add = |g: &mut Gen<'_>, along: f64, frame: Frame| -> Result<(), SimError> {
            g.leaves += 1;
            if g.leaves > g.opts.limits.max_leaves {
                return Err(SimError::param(
                    "tree size",
                    format!("more than {} leaves", g.opts.limits.max_leaves),
                    "the generator stops at this limit; lower Leaves or nBranches",
                ));
            }
            let frame = g.bend_leaf(frame);
            g.out[o].leaves.push(OutLeaf { segment, along, frame });
            Ok(())
        };
        if self.spec.leaves > 0 {
            let eff = (stem.leaves_per_segment + self.leaves_error + 0.5) as i64;
            self.leaves_error -= eff as f64 - stem.leaves_per_segment;
            if eff <= 0 {
                return Ok(());
            }
            self.check_leaves(eff)?;
            let offs = if segment == 0 {
                stem.parent.map_or(0.0, |p| p.profile.radius(stem.offset)) / stem.segment_length
            } else {
                0.0
            };
            let dist = (1.0 - offs) / eff as f64;
            for s in 0..eff {
                let along = offs + dist / 2.0 + s as f64 * dist + self.var(stem.level, dist / 2.0);
                let loffs = (segment as f64 + along) * stem.segment_length;
                let frame = self.substem_direction(stem, seg_frame, loffs);
                let frame = frame.translate(seg_frame.z() * (along * stem.segment_length));
                add(self, along.clamp(0.0, 1.0), frame)?;
            }
        } else if segment + 1 == stem.segment_count {
            // A fan at the stem's tip.
            let next = stem.level + 1;
            let l1 = self.lpar(next);
            let count = (self.leaves_per_branch(stem) + 0.5) as i64;
            if count <= 0 {
                return Ok(());
            }
            self.check_leaves(count)?;
            let tip = seg_frame.translate(seg_frame.z() * stem.segment_length);
            let dist_angle = l1.rotate / count as f64;
            let var_angle = l1.rotate_v / count as f64;
            let offset_angle = if count % 2 == 1 {
                add(self, 1.0, tip)?;
                dist_angle
            } else {
                dist_angle / 2.0
            };
            for s in 0..count / 2 {
                for side in [1.0, -1.0] {
                    let turn = side * (offset_angle + s as f64 * dist_angle + self.var(next, var_angle));
                    let down = l1.down_angle + self.var(next, l1.down_angle_v);
                    let frame = tip.roty(turn).rotx(down);
                    add(self, 1.0, frame)?;
                }
            }
        }
        Ok(())
    }

    /// Refuses `count` more leaves before they are made when they would pass the leaf limit.
    fn check_leaves(&mut self, count: i64) -> Result<(), SimError> {
        if self.leaves as u64 + count as u64 > self.opts.limits.max_leaves as u64 {
            return Err(SimError::param(
                "tree size",
                format!("more than {} leaves", self.opts.limits.max_leaves),
                "the generator stops at this limit; lower Leaves or nBranches",
            ));
        }
        self.spend(count as usize)
    }

    /// Arbaro's leaf orientation towards the light (`LeafBend`): turn the leaf's normal
    /// outwards about the world z axis, then up about its own x axis.
    fn bend_leaf(&self, frame: Frame) -> Frame {
        let bend = self.spec.leaf_bend;
        if bend == 0.0 {
            return frame;
        }
        let pos = frame.t;
        let norm = frame.y();
        let tpos = pos.y.atan2(pos.x).to_degrees();
        let tbend = tpos - norm.y.atan2(norm.x).to_degrees();
        let frame = frame.rotaxis(bend * tbend, DVec3::Z);
        let norm = frame.y();
        let fbend = (norm.x * norm.x + norm.y * norm.y).sqrt().atan2(norm.z).to_degrees();
        frame.rotx(bend * fbend)
    }

    fn make_clones(&mut self, stem: &mut Stem, frame: Frame, segment: usize) -> Result<Option<usize>, SimError> {
        let level = stem.level.min(3);
        let l = self.lpar(stem.level);
        let eff = if stem.level == 0 && segment == 0 && self.spec.base_splits != 0 {
            if self.spec.base_splits > 0 {
                self.spec.base_splits
            } else {
                // tree-gen: a negative value is a random number of splits up to |n|.
                self.levels[0].rng.below(self.spec.base_splits.unsigned_abs() + 1) as i64
            }
        } else {
            let eff = (l.seg_splits + self.levels[level].split_error + 0.5) as i64;
            self.levels[level].split_error -= eff as f64 - l.seg_splits;
            eff
        };
        if eff < 1 {
            return Ok(None);
        }
        self.check_count(eff, "clones")?;
        let s_angle = (360 / (eff + 1)) as f64;
        for i in 0..eff {
            let mut clone = stem.clone_for_split();
            clone.frame = self.split(&mut clone, frame, s_angle * (1 + i) as f64, segment, eff);
            if !clone.prune_test {
                let attach = stem.out.map(|o| Attach {
                    stem: o,
                    segment,
                    along: 1.0,
                });
                self.record(&mut clone, attach);
            }
            let count = clone.segment_count;
            if let Some(segm) = self.make_segments(&mut clone, segment + 1, count)? {
                return Ok(Some(segm));
            }
        }
        // Arbaro computes a new direction for the original stem too but discards it; only the
        // side effects (split correction, random draws, fewer substems) take effect.
        let _ = self.split(stem, frame, 0.0, segment, eff);
        Ok(None)
    }

    fn split(&mut self, stem: &mut Stem, frame: Frame, s_angle: f64, segment: usize, splits: i64) -> Frame {
        let l = self.lpar(stem.level);
        let remaining = (stem.segment_count - segment - 1).max(1) as f64;
        let declination = frame.z().z.clamp(-1.0, 1.0).acos().to_degrees();
        let split_angle = (l.split_angle + self.var(stem.level, l.split_angle_v) - declination).max(0.0);
        let mut frame = frame.rotx(split_angle);
        stem.split_correction -= split_angle / remaining;
        if s_angle > 0.0 {
            let diverge = if self.spec.base_splits > 0 && stem.level == 0 && segment == 0 {
                s_angle + self.var(stem.level, l.split_angle_v)
            } else {
                let r = self.var(stem.level, 1.0);
                let d = 20.0 + 0.75 * (30.0 + (declination - 90.0).abs()) * ((r + 1.0) / 2.0).powi(2);
                if self.var(stem.level, 1.0) >= 0.0 {
                    -d
                } else {
                    d
                }
            };
            frame = frame.rotaxis(diverge, DVec3::Z);
        }
        if !stem.prune_test {
            stem.substems_per_segment /= (splits + 1) as f64;
        }
        frame
    }
}

impl Stem {
    fn new(level: usize, frame: Frame, offset: f64, parent: Option<ParentInfo>) -> Stem {
        Stem {
            level,
            frame,
            offset,
            parent,
            is_clone: false,
            length: 0.0,
            segment_length: 0.0,
            segment_count: 1,
            base_radius: 0.0,
            length_child_max: 0.0,
            substems_per_segment: 0.0,
            substem_rotangle: 0.0,
            leaves_per_segment: 0.0,
            split_correction: 0.0,
            prune_test: false,
            out: None,
            attach_hint: None,
        }
    }

    /// Arbaro's `Stem.clone`: a stem with the same attributes, growing from the split.
    fn clone_for_split(&self) -> Stem {
        let mut c = self.clone();
        c.is_clone = true;
        c.out = None;
        c.attach_hint = None;
        if !self.prune_test {
            c.substem_rotangle = self.substem_rotangle + 180.0;
        }
        c
    }
}

/// One solver segment while the skeleton is assembled (Arbaro coordinates).
#[derive(Clone, Copy, Debug)]
struct Piece {
    parent: Option<usize>,
    stem: usize,
    level: usize,
    base: DVec3,
    tip: DVec3,
    r_base: f64,
    r_tip: f64,
    /// A joint of several trunks (root collar or connector): its tip area is the sum of what
    /// grows from it, whatever the fork rules say.
    junction: bool,
}

/// Arbaro's z-up to Sylva's y-up.
fn to_sylva(v: DVec3) -> Vec3 {
    Vec3::new(v.x as f32, v.z as f32, -v.y as f32)
}

/// Smallest radius written to the skeleton (cones taper to exactly zero) [m].
const MIN_RADIUS: f64 = 5.0e-6;

impl Gen<'_> {
    /// Cuts every stem at its children, applies the fork rules and builds the skeleton.
    fn assemble(&mut self) -> Result<(Skeleton, TreeStats, Vec<u32>), SimError> {
        let out = std::mem::take(&mut self.out);
        let trunks: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].attach.is_none() && !out[i].segments.is_empty())
            .collect();
        if trunks.is_empty() {
            return Err(SimError::param(
                "tree",
                &self.spec.species,
                "grows no stem longer than 0.5 mm and thicker than 0.05 mm; check Scale, 0Length and Ratio",
            ));
        }

        // Children of every segment: (stem, segment position in the stem) -> (along, child).
        let mut children: Vec<Vec<Vec<(f64, usize)>>> =
            out.iter().map(|s| vec![Vec::new(); s.segments.len()]).collect();
        for (c, stem) in out.iter().enumerate() {
            if let Some(a) = stem.attach {
                let parent = &out[a.stem];
                if let Some(k) = parent.segments.iter().position(|s| s.index == a.segment) {
                    children[a.stem][k].push((a.along, c));
                }
            }
        }

        let mut pieces: Vec<Piece> = Vec::with_capacity(self.segments * 2);
        // Several trunks share a root collar just below the ground, with a connector to each
        // trunk base that is spread out by 0BranchDist, so the skeleton has one root.
        let mut trunk_attach: Vec<Option<usize>> = vec![None; out.len()];
        if trunks.len() > 1 {
            let area: f64 = trunks.iter().map(|&t| out[t].profile.radius(0.0).powi(2)).sum();
            let r = area.sqrt().max(MIN_RADIUS);
            let depth = (0.5 * r).max(1e-4);
            pieces.push(Piece {
                parent: None,
                stem: usize::MAX,
                level: 0,
                base: DVec3::new(0.0, 0.0, -depth),
                tip: DVec3::ZERO,
                r_base: r,
                r_tip: r,
                junction: true,
            });
            for &t in &trunks {
                let base = out[t].segments[0].frame.t;
                if base.length() > 1e-5 {
                    let rt = out[t].profile.radius(0.0).max(MIN_RADIUS);
                    pieces.push(Piece {
                        parent: Some(0),
                        stem: usize::MAX,
                        level: 0,
                        base: DVec3::ZERO,
                        tip: base,
                        r_base: rt,
                        r_tip: rt,
                        junction: true,
                    });
                    trunk_attach[t] = Some(pieces.len() - 1);
                } else {
                    trunk_attach[t] = Some(0);
                }
            }
        }

        // Resolved cuts: for each stem and segment, (along at the piece's end, piece index).
        let mut ends: Vec<Vec<Vec<(f64, usize)>>> = Vec::with_capacity(out.len());
        let mut stem_attach: Vec<Option<usize>> = vec![None; out.len()];
        let mut resolved_along: Vec<f64> = vec![0.0; out.len()];
        let mut leaf_list: Vec<(usize, f64, Frame)> = Vec::with_capacity(self.leaves);
        for (si, stem) in out.iter().enumerate() {
            let mut stem_ends = Vec::with_capacity(stem.segments.len());
            // Where this stem hangs from.
            let attach = match stem.attach {
                None => trunk_attach[si],
                Some(a) => {
                    let k = out[a.stem].segments.iter().position(|s| s.index == a.segment);
                    k.and_then(|k| piece_ending_at(&ends, &stem_attach, a.stem, k, resolved_along[si]))
                }
            };
            stem_attach[si] = attach;
            if stem.attach.is_some() && attach.is_none() {
                // The parent was not kept (cannot happen for Arbaro's order); skip the stem.
                ends.push(vec![Vec::new(); stem.segments.len()]);
                continue;
            }
            let seg_len = stem.segment_length;
            let min_frac = MIN_PIECE.max(1e-5 / seg_len.max(1e-12));
            for (k, seg) in stem.segments.iter().enumerate() {
                // Cut positions: helix chords, then children snapped to their neighbours.
                let mut cuts: Vec<f64> = Vec::new();
                if seg.helix.is_some() {
                    cuts.extend((1..HELIX_CHORDS).map(|i| i as f64 / HELIX_CHORDS as f64));
                }
                let mut kids = children[si][k].clone();
                kids.sort_by(|a, b| a.0.total_cmp(&b.0));
                let can_start = k > 0 || attach.is_some();
                for (along, child) in kids {
                    let mut a = along.clamp(0.0, 1.0);
                    if a < min_frac {
                        a = if can_start { 0.0 } else { min_frac.min(0.5) };
                    } else if a > 1.0 - min_frac {
                        a = 1.0;
                    }
                    if a > 0.0 && a < 1.0 {
                        match cuts.iter().copied().find(|c| (c - a).abs() < min_frac) {
                            Some(c) => a = c,
                            None => cuts.push(a),
                        }
                    }
                    resolved_along[child] = a;
                }
                cuts.sort_by(|a, b| a.total_cmp(b));
                cuts.dedup();
                cuts.push(1.0);
                let point = |u: f64| -> DVec3 {
                    match &seg.helix {
                        None => seg.frame.t + seg.frame.z() * (u * seg_len),
                        Some(pts) => {
                            let x = u * HELIX_CHORDS as f64;
                            let i = (x.floor() as usize).min(HELIX_CHORDS - 1);
                            let p0 = if i == 0 { seg.frame.t } else { pts[i - 1] };
                            p0.lerp(pts[i], x - i as f64)
                        }
                    }
                };
                let mut seg_ends = Vec::with_capacity(cuts.len());
                let mut prev_u = 0.0;
                for &u in &cuts {
                    let parent = if !seg_ends.is_empty() {
                        seg_ends.last().map(|e: &(f64, usize)| e.1)
                    } else if k > 0 {
                        stem_ends.last().and_then(|e: &Vec<(f64, usize)>| e.last()).map(|e| e.1)
                    } else {
                        attach
                    };
                    let h0 = (seg.index as f64 + prev_u) * seg_len;
                    let h1 = (seg.index as f64 + u) * seg_len;
                    pieces.push(Piece {
                        parent,
                        stem: si,
                        level: stem.level,
                        base: point(prev_u),
                        tip: point(u),
                        r_base: stem.profile.radius(h0).max(MIN_RADIUS),
                        r_tip: stem.profile.radius(h1).max(MIN_RADIUS),
                        junction: false,
                    });
                    seg_ends.push((u, pieces.len() - 1));
                    prev_u = u;
                }
                stem_ends.push(seg_ends);
            }
            // Leaves onto the piece that contains them.
            for leaf in &stem.leaves {
                if let Some(k) = stem.segments.iter().position(|s| s.index == leaf.segment) {
                    let seg_ends = &stem_ends[k];
                    let j = seg_ends
                        .iter()
                        .position(|e| leaf.along <= e.0 + 1e-12)
                        .unwrap_or(seg_ends.len() - 1);
                    let u0 = if j == 0 { 0.0 } else { seg_ends[j - 1].0 };
                    let u1 = seg_ends[j].0;
                    let local = if u1 > u0 {
                        ((leaf.along - u0) / (u1 - u0)).clamp(0.0, 1.0)
                    } else {
                        1.0
                    };
                    leaf_list.push((seg_ends[j].1, local, leaf.frame));
                }
            }
            ends.push(stem_ends);
        }

        let fork_rules = self.opts.fork_rules && self.spec.has_fork_rules();
        if fork_rules {
            self.fork_areas(&mut pieces);
        }
        let rotation = if fork_rules {
            self.fork_push(&mut pieces)
        } else {
            connect(&mut pieces);
            vec![DQuat::IDENTITY; pieces.len()]
        };

        // The skeleton, in Sylva's axes.
        let mut skeleton = Skeleton::default();
        skeleton.segments.reserve_exact(pieces.len());
        for p in &pieces {
            skeleton.segments.push(SkeletonSegment {
                parent: p.parent.map(|q| q as u32),
                base: to_sylva(p.base),
                tip: to_sylva(p.tip),
                radius_base: p.r_base as f32,
                radius_tip: p.r_tip as f32,
            });
        }
        let leaf_len = self.spec.leaf_scale / self.spec.leaf_quality.max(1e-6).sqrt();
        let leaf_width = leaf_len * self.spec.leaf_scale_x;
        skeleton.leaves.reserve_exact(leaf_list.len());
        for (piece, along, frame) in leaf_list {
            let m = DMat3::from_quat(rotation[piece]) * frame.m;
            // Arbaro's leaf: z along the blade, y the upper normal. Sylva's card: +y along the
            // blade, +z the normal.
            let blade = to_sylva(m.z_axis).normalize_or(Vec3::Y);
            let normal = to_sylva(m.y_axis).normalize_or(Vec3::Z);
            let x = blade.cross(normal).normalize_or(Vec3::X);
            let normal = x.cross(blade);
            let orientation = Quat::from_mat3(&glam::Mat3::from_cols(x, blade, normal)).normalize();
            skeleton.leaves.push(SkeletonLeaf {
                segment: piece as u32,
                along: along as f32,
                orientation,
                length: leaf_len as f32,
                width: leaf_width as f32,
            });
        }

        let levels = self.spec.levels.max(1) as usize;
        let mut stats = TreeStats {
            stems_per_level: vec![0; levels],
            clones_per_level: vec![0; levels],
            leaves: skeleton.leaves.len() as u64,
            segments: skeleton.segments.len() as u64,
            ..TreeStats::default()
        };
        for (si, stem) in out.iter().enumerate() {
            if stem.segments.is_empty() || (stem.attach.is_some() && stem_attach[si].is_none()) {
                continue;
            }
            let slot = stem.level.min(levels - 1);
            if stem.is_clone {
                stats.clones_per_level[slot] += 1;
            } else {
                stats.stems_per_level[slot] += 1;
            }
        }
        stats.fill_extent(&skeleton);
        // Arbaro also tests (w, w, 0) for each trunk, w its base radius with flare
        // (`StemImpl.make`).
        for &t in &trunks {
            let p = &out[t].profile;
            let w = p.base_radius.max(p.radius(0.0));
            stats.include_arbaro_point([w, w, 0.0]);
        }
        let trunk_segments = trunks
            .iter()
            .filter_map(|&t| ends[t].first()?.first().map(|e| e.1 as u32))
            .collect();
        Ok((skeleton, stats, trunk_segments))
    }

    /// Weber 2008's first rule, scaled per level: tip area = continuation's base area + s·(the
    /// branches' base areas); between forks the stem keeps its own taper (the difference of
    /// its profile's areas).
    fn fork_areas(&self, pieces: &mut [Piece]) {
        let n = pieces.len();
        let mut cont: Vec<Option<usize>> = vec![None; n];
        let mut side_area = vec![0.0f64; n];
        let mut area_base = vec![0.0f64; n];
        for i in (0..n).rev() {
            let p = pieces[i];
            let own_tip = p.r_tip * p.r_tip;
            if !p.junction && self.spec.level(p.level).fork_area == 0.0 {
                // The rule is off on this level: the stem keeps its own radii (a periodic or
                // spherical taper included).
                area_base[i] = p.r_base * p.r_base;
                if let Some(q) = p.parent {
                    if !pieces[q].junction && pieces[q].stem == p.stem {
                        cont[q] = Some(i);
                    } else {
                        side_area[q] += area_base[i];
                    }
                }
                continue;
            }
            let tip = if p.junction {
                side_area[i] + cont.get(i).copied().flatten().map_or(0.0, |c| area_base[c])
            } else {
                let s = self.spec.level(p.level).fork_area;
                match cont[i] {
                    Some(c) => area_base[c] + s * side_area[i],
                    // A stem ending where branches go on: with the rule, what goes on is all.
                    None if side_area[i] > 0.0 => (1.0 - s) * own_tip + s * side_area[i],
                    None => own_tip,
                }
            };
            let base = (tip + (p.r_base * p.r_base - own_tip)).max(tip);
            area_base[i] = base;
            pieces[i].r_tip = tip.sqrt().max(MIN_RADIUS);
            pieces[i].r_base = base.sqrt().max(MIN_RADIUS);
            if let Some(q) = p.parent {
                if !pieces[q].junction && pieces[q].stem == p.stem {
                    cont[q] = Some(i);
                } else {
                    side_area[q] += base;
                }
            }
        }
    }

    /// Weber 2008's second rule, scaled per level: at every fork the continuing stem (and
    /// everything on it) turns so the area-weighted direction sum is conserved. Root outward,
    /// composing each piece's rotation from its parent's. Returns each piece's rotation.
    fn fork_push(&self, pieces: &mut [Piece]) -> Vec<DQuat> {
        let n = pieces.len();
        let dir: Vec<DVec3> = pieces.iter().map(|p| (p.tip - p.base).normalize_or(DVec3::Z)).collect();
        let len: Vec<f64> = pieces.iter().map(|p| (p.tip - p.base).length()).collect();
        // Direction sums of the branches leaving each piece's tip, weighted by area.
        let mut side = vec![DVec3::ZERO; n];
        for i in 0..n {
            if let Some(q) = pieces[i].parent {
                if pieces[q].stem != pieces[i].stem && !pieces[q].junction {
                    side[q] += dir[i] * (pieces[i].r_base * pieces[i].r_base);
                }
            }
        }
        let mut push = vec![DQuat::IDENTITY; n];
        for i in 0..n {
            let s = self.spec.level(pieces[i].level).fork_push;
            if s <= 0.0 || side[i] == DVec3::ZERO || pieces[i].junction {
                continue;
            }
            let before = pieces[i].r_tip * pieces[i].r_tip;
            let target = dir[i] * before - side[i];
            if target.length_squared() < 1e-30 {
                continue;
            }
            let target = target.normalize();
            let axis = dir[i].cross(target);
            if axis.length_squared() < 1e-24 {
                continue;
            }
            let angle = dir[i].angle_between(target) * s;
            push[i] = DQuat::from_axis_angle(axis.normalize(), angle);
        }
        let mut rot = vec![DQuat::IDENTITY; n];
        for i in 0..n {
            let (parent_rot, base) = match pieces[i].parent {
                None => (DQuat::IDENTITY, pieces[i].base),
                Some(q) => {
                    let r = if pieces[q].stem == pieces[i].stem {
                        rot[q] * push[q]
                    } else {
                        rot[q]
                    };
                    (r, pieces[q].tip)
                }
            };
            rot[i] = parent_rot;
            pieces[i].base = base;
            pieces[i].tip = base + (parent_rot * dir[i]) * len[i];
        }
        rot
    }
}

/// Moves every piece (with all that grows from it) so that it starts at its parent's tip: a
/// child snapped to a neighbouring cut (at most `MIN_PIECE` of a segment away) or hanging from
/// a helix chord moves with its subtree by that much. Parents come before their children.
fn connect(pieces: &mut [Piece]) {
    for i in 0..pieces.len() {
        if let Some(q) = pieces[i].parent {
            let shift = pieces[q].tip - pieces[i].base;
            pieces[i].base += shift;
            pieces[i].tip += shift;
        }
    }
}

/// The piece of stem `s`, segment position `k`, that ends at `along` (0 = the segment's start:
/// the previous segment's last piece, or where the stem hangs from).
fn piece_ending_at(
    ends: &[Vec<Vec<(f64, usize)>>],
    stem_attach: &[Option<usize>],
    s: usize,
    k: usize,
    along: f64,
) -> Option<usize> {
    if along <= 0.0 {
        return if k > 0 {
            ends[s].get(k - 1)?.last().map(|e| e.1)
        } else {
            stem_attach[s]
        };
    }
    let seg = ends.get(s)?.get(k)?;
    seg.iter()
        .find(|e| (e.0 - along).abs() < 1e-12)
        .or(seg.last())
        .map(|e| e.1)
}

#[cfg(test)]
mod tests;
