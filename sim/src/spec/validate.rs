//! Range checks for a [`WeberPennSpec`]: what the tool that wrote the spec refuses, plus
//! Sylva's caps where no tool states a bound, so that every parameter has a finite allowed range.
//!
//! The ranges are the writing tool's own where it has them (Arbaro's `Params.registerParams`,
//! the Sapling add-on's property limits, Helios' reader), and Arbaro's where a tool states none.
//! Where Arbaro's range is open-ended (`nLength > 0`, `Ratio > 0`, `AttractionUp` any, ...) the
//! tighter bound is what Sylva can grow and simulate (the `MAX_*` constants below, each with its
//! reason): counts that keep generation bounded, and lengths, radius factors and angles that keep
//! positions, masses and stiffnesses finite in the simulation's f32 arrays. Lengths compound over
//! the levels, so the longest stem the parameters allow on each level is checked as well
//! ([`MAX_STEM_LENGTH`], naming that level's `nLength`). tree-gen's fans of stems (negative
//! `nBranches`) are refused, as the generator does not grow them.
//! Parameters of levels that a spec does not use (stem parameters of levels ≥ `Levels`, angles of
//! levels above the leaf level) are only checked to be finite: tree-gen and Helios files leave
//! zeros there.

use super::{SpecError, SpecTool, WeberPennSpec};
use std::fmt;

/// Sanity cap: leaves per stem, |Leaves|.
pub const MAX_LEAVES: i64 = 100_000;
/// Sanity cap: children per parent stem, |nBranches|.
pub const MAX_BRANCHES: i64 = 10_000;
/// Sanity cap: segments per stem, nCurveRes.
pub const MAX_CURVE_RES: i64 = 1_000;
/// Sanity cap: recursion depth, Levels (Arbaro's own maximum).
pub const MAX_LEVELS: i64 = 9;
/// Sanity cap: tree size in metres, Scale and ScaleV.
pub const MAX_SCALE: f64 = 1_000.0;
/// Sanity cap: trunk clones at the base, |0BaseSplits|.
pub const MAX_BASE_SPLITS: i64 = 1_000;
/// Sanity cap: clones per segment, nSegSplits.
pub const MAX_SEG_SPLITS: f64 = 100.0;
/// Sanity cap: trunk lobes.
pub const MAX_LOBES: i64 = 1_000;
/// Sanity cap: |nLength| and |nLengthV| (a trunk of 100 × Scale, or a child 100 × as long as
/// its parent, is already far beyond any real file; lengths compound over the levels).
pub const MAX_LENGTH_FACTOR: f64 = 100.0;
/// Sanity cap: the longest stem the parameters can give at any level, in metres (twice the
/// largest Scale): beyond it positions and masses leave the range the simulation's f32 keeps.
pub const MAX_STEM_LENGTH: f64 = 2.0 * MAX_SCALE;
/// Sanity cap: |angle| of the per-stem curvature parameters (nCurve, nCurveBack, nCurveV), in
/// degrees: ten full turns over a stem (the real files stay under 400).
pub const MAX_CURVE_DEGREES: f64 = 3600.0;
/// Sanity cap: |AttractionUp| and |nAttractionUp| (real files: -3 to 10).
pub const MAX_ATTRACTION: f64 = 100.0;
/// Sanity cap: Ratio, the trunk's base radius as a fraction of its length.
pub const MAX_RATIO: f64 = 1.0;
/// Sanity cap: |RatioPower| (real files: 0 to 3).
pub const MAX_RATIO_POWER: f64 = 10.0;
/// Sanity cap: the trunk-radius factors (0Scale, 0ScaleV, Flare, ZScale, ZScaleV, LobeDepth):
/// a trunk 100 times as thick as its Ratio says.
pub const MAX_RADIUS_FACTOR: f64 = 100.0;
/// Sanity cap: LeafScale in metres, LeafScaleX and |LeafStemLen| as fractions.
pub const MAX_LEAF_FACTOR: f64 = 100.0;
/// Smallest leaf length (LeafScale, m) and width (LeafScale · LeafScaleX, m) of a spec that
/// has leaves: the skeleton's f32 leaf cards need a positive size (1e-300 is 0 in f32).
pub const MIN_LEAF_SIZE: f64 = 1e-4;
/// Sanity cap: the pruning envelope's exponents and Sapling's unbounded envelope widths.
pub const MAX_PRUNE_FACTOR: f64 = 1_000.0;

/// A closed, open or half-open interval (bounds optional).
#[derive(Clone, Copy, Debug)]
struct Range {
    lo: Option<(f64, bool)>,
    hi: Option<(f64, bool)>,
}

impl Range {
    const ANY: Range = Range { lo: None, hi: None };
    fn ge(a: f64) -> Range {
        Range {
            lo: Some((a, true)),
            hi: None,
        }
    }
    fn gt(a: f64) -> Range {
        Range {
            lo: Some((a, false)),
            hi: None,
        }
    }
    /// [a, b]
    fn closed(a: f64, b: f64) -> Range {
        Range {
            lo: Some((a, true)),
            hi: Some((b, true)),
        }
    }
    /// (a, b)
    fn open(a: f64, b: f64) -> Range {
        Range {
            lo: Some((a, false)),
            hi: Some((b, false)),
        }
    }
    /// [a, b)
    fn closed_open(a: f64, b: f64) -> Range {
        Range {
            lo: Some((a, true)),
            hi: Some((b, false)),
        }
    }
    /// (a, b]
    fn open_closed(a: f64, b: f64) -> Range {
        Range {
            lo: Some((a, false)),
            hi: Some((b, true)),
        }
    }

    fn contains(&self, v: f64) -> bool {
        let lo_ok = match self.lo {
            None => true,
            Some((a, true)) => v >= a,
            Some((a, false)) => v > a,
        };
        let hi_ok = match self.hi {
            None => true,
            Some((b, true)) => v <= b,
            Some((b, false)) => v < b,
        };
        v.is_finite() && lo_ok && hi_ok
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.lo, self.hi) {
            (None, None) => f.write_str("any finite number"),
            (Some((a, true)), None) => write!(f, ">= {a}"),
            (Some((a, false)), None) => write!(f, "> {a}"),
            (None, Some((b, true))) => write!(f, "<= {b}"),
            (None, Some((b, false))) => write!(f, "< {b}"),
            (Some((a, ai)), Some((b, bi))) => {
                write!(
                    f,
                    "{}{a}, {b}{}",
                    if ai { "[" } else { "(" },
                    if bi { "]" } else { ")" }
                )
            }
        }
    }
}

/// How a tool is named in messages.
fn tool_label(tool: SpecTool) -> &'static str {
    match tool {
        SpecTool::Arbaro => "Arbaro",
        SpecTool::SaplingV02 => "Sapling 0.2",
        SpecTool::SaplingV03 => "Sapling 0.3",
        SpecTool::Sapling4 => "sapling_4",
        SpecTool::TreeGen => "tree-gen",
        SpecTool::Helios => "Helios",
        SpecTool::Sylva => "Sylva",
    }
}

struct Checker<'a> {
    file: &'a str,
    spec: &'a WeberPennSpec,
    tool: &'static str,
}

impl Checker<'_> {
    fn err(&self, parameter: &str, message: String) -> SpecError {
        SpecError::new(
            self.file,
            parameter,
            format!("species '{}' ({} spec): {message}", self.spec.species, self.tool),
        )
    }

    /// A float must be finite and inside `range`.
    fn real(&self, name: &str, v: f64, range: Range) -> Result<(), SpecError> {
        if v.is_nan() {
            return Err(self.err(name, format!("{name} is NaN; allowed: {range}")));
        }
        if v.is_infinite() {
            return Err(self.err(name, format!("{name} = {} is not finite; allowed: {range}", show(v))));
        }
        if !range.contains(v) {
            return Err(self.err(name, format!("{name} = {} is out of range; allowed: {range}", show(v))));
        }
        Ok(())
    }

    /// A float only has to be finite (parameters of unused levels).
    fn finite(&self, name: &str, v: f64) -> Result<(), SpecError> {
        self.real(name, v, Range::ANY)
    }

    /// An integer inside [lo, hi].
    fn int(&self, name: &str, v: i64, lo: i64, hi: Option<i64>) -> Result<(), SpecError> {
        let ok = v >= lo && hi.is_none_or(|h| v <= h);
        if ok {
            return Ok(());
        }
        let allowed = match hi {
            Some(h) => format!("an integer in [{lo}, {h}]"),
            None => format!("an integer >= {lo}"),
        };
        Err(self.err(name, format!("{name} = {v} is out of range; allowed: {allowed}")))
    }

    /// An integer from a set of ids.
    fn int_in(&self, name: &str, v: i64, allowed: &[i64]) -> Result<(), SpecError> {
        if allowed.contains(&v) {
            return Ok(());
        }
        let list: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
        Err(self.err(
            name,
            format!("{name} = {v} is not a valid id; allowed: {}", list.join(", ")),
        ))
    }

    /// A sanity cap on an integer's magnitude.
    fn int_cap(&self, name: &str, v: i64, cap: i64, what: &str) -> Result<(), SpecError> {
        if v.unsigned_abs() <= cap as u64 {
            return Ok(());
        }
        Err(self.err(
            name,
            format!(
                "{name} = {v} exceeds Sylva's sanity cap of {cap} {what} (no tool states a limit; the cap keeps \
                 generation bounded); allowed: |{name}| <= {cap}"
            ),
        ))
    }

    /// A sanity cap on a float.
    fn real_cap(&self, name: &str, v: f64, cap: f64, what: &str) -> Result<(), SpecError> {
        if v.abs() <= cap {
            return Ok(());
        }
        Err(self.err(
            name,
            format!(
                "{name} = {} exceeds Sylva's cap of {cap} {what} (the tool states no limit; beyond it Sylva cannot \
                 grow or simulate the tree); allowed: |{name}| <= {cap}",
                show(v)
            ),
        ))
    }
}

/// A value for a message: plain decimals, exponent form for very large or small magnitudes
/// (1e300 rather than three hundred digits).
fn show(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e9 || v.abs() < 1e-6) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

const SHAPES_0_7: [i64; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
const SHAPES_0_8: [i64; 9] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
const SHAPES_SAPLING3: [i64; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10];
const SHAPES_SAPLING3_DEEP: [i64; 9] = [0, 1, 2, 3, 4, 5, 6, 7, 10];

impl WeberPennSpec {
    /// Checks every parameter against what the tool of origin accepts (see the module docs);
    /// the error names the parameter (Arbaro's name) and the allowed range.
    pub fn validate(&self, file: &str) -> Result<(), SpecError> {
        use SpecTool::*;
        let tool = self.origin;
        let c = Checker {
            file,
            spec: self,
            tool: tool_label(tool),
        };
        let sapling = matches!(tool, SaplingV02 | SaplingV03 | Sapling4);
        let sapling3 = matches!(tool, SaplingV03 | Sapling4);
        let arbaro_like = matches!(tool, Arbaro | Sylva);

        // Structure first: Levels decides which level parameters are checked.
        c.int_cap("Levels", self.levels, MAX_LEVELS, "levels")?;
        match tool {
            Arbaro | Sylva => c.int("Levels", self.levels, 0, Some(9))?,
            SaplingV02 | SaplingV03 | Sapling4 => c.int("Levels", self.levels, 1, Some(6))?,
            TreeGen => c.int("Levels", self.levels, 1, Some(9))?,
            Helios => c.int("Levels", self.levels, 1, Some(4))?,
        }

        let shapes: &[i64] = match tool {
            SaplingV02 => &SHAPES_0_7,
            SaplingV03 | Sapling4 => &SHAPES_SAPLING3,
            _ => &SHAPES_0_8,
        };
        c.int_in("Shape", self.shape, shapes)?;
        if let Some(deep) = self.shape_deep {
            let deep_shapes: &[i64] = if sapling3 { &SHAPES_SAPLING3_DEEP } else { shapes };
            c.int_in("ShapeDeep", deep, deep_shapes)?;
        }
        if let Some(cs) = self.custom_shape {
            for v in cs {
                c.real("CustomShape", v, Range::closed(0.01, 1.0))?;
            }
        }

        c.real("Scale", self.scale, Range::gt(0.0))?;
        c.real_cap("Scale", self.scale, MAX_SCALE, "m")?;
        c.real("ScaleV", self.scale_v, Range::ge(0.0))?;
        c.real_cap("ScaleV", self.scale_v, MAX_SCALE, "m")?;
        c.real("ZScale", self.z_scale, Range::ge(0.0))?;
        c.real("ZScaleV", self.z_scale_v, Range::ge(0.0))?;
        c.real("BaseSize", self.base_size, Range::closed(0.0, 1.0))?;
        c.real(
            "Ratio",
            self.ratio,
            if sapling { Range::ge(0.0) } else { Range::gt(0.0) },
        )?;
        c.real(
            "RatioPower",
            self.ratio_power,
            if sapling { Range::ge(0.0) } else { Range::ANY },
        )?;
        c.int("Lobes", self.lobes, 0, None)?;
        c.int_cap("Lobes", self.lobes, MAX_LOBES, "lobes")?;
        c.real("LobeDepth", self.lobe_depth, Range::ge(0.0))?;
        // Sapling's rootFlare is >= 1, i.e. Flare >= 0.
        c.real(
            "Flare",
            self.flare,
            if sapling { Range::ge(0.0) } else { Range::ge(-1.0) },
        )?;
        c.real(
            "0Scale",
            self.scale0,
            if sapling { Range::ge(0.0) } else { Range::gt(0.0) },
        )?;
        c.real(
            "0ScaleV",
            self.scale0_v,
            if sapling3 {
                Range::closed(0.0, 1.0)
            } else {
                Range::ge(0.0)
            },
        )?;
        if tool == TreeGen {
            // tree-gen: negative = a random number of splits up to |n|.
            c.int_cap("0BaseSplits", self.base_splits, MAX_BASE_SPLITS, "splits")?;
        } else {
            c.int("0BaseSplits", self.base_splits, 0, None)?;
            c.int_cap("0BaseSplits", self.base_splits, MAX_BASE_SPLITS, "splits")?;
        }
        if let Some(s) = self.base_split_size {
            c.real("BaseSplitSize", s, Range::closed(0.0, 1.0))?;
        }
        if let Some(sides) = self.collision_free {
            use crate::collision::primitives::{MAX_SIDES, MIN_SIDES};
            c.int("CollisionFree", sides, MIN_SIDES as i64, Some(MAX_SIDES as i64))?;
        }

        if tool == Helios {
            // Helios has no fan rule: a negative count wraps to a huge unsigned one there.
            c.int("Leaves", self.leaves, 0, None)?;
        }
        c.int_cap("Leaves", self.leaves, MAX_LEAVES, "leaves per stem")?;
        let leaf_size = if sapling { Range::ge(0.0) } else { Range::gt(0.0) };
        c.real("LeafScale", self.leaf_scale, leaf_size)?;
        c.real("LeafScaleX", self.leaf_scale_x, leaf_size)?;
        c.real("LeafQuality", self.leaf_quality, Range::open_closed(0.0, 1.0))?;
        c.real("LeafStemLen", self.leaf_stem_len, Range::ANY)?;
        c.real("LeafBend", self.leaf_bend, Range::closed(0.0, 1.0))?;
        let leaf_distribs: &[i64] = match tool {
            SaplingV02 => &SHAPES_0_7,
            SaplingV03 | Sapling4 => &SHAPES_SAPLING3_DEEP,
            _ => &SHAPES_0_8,
        };
        c.int_in("LeafDistrib", self.leaf_distrib, leaf_distribs)?;

        c.real("PruneRatio", self.prune_ratio, Range::closed(0.0, 1.0))?;
        let unit_or_more = if sapling {
            Range::ge(0.0)
        } else {
            Range::closed(0.0, 1.0)
        };
        c.real("PruneWidth", self.prune_width, unit_or_more)?;
        c.real("PruneWidthPeak", self.prune_width_peak, unit_or_more)?;
        let power = if sapling { Range::ANY } else { Range::ge(0.0) };
        c.real("PrunePowerLow", self.prune_power_low, power)?;
        c.real("PrunePowerHigh", self.prune_power_high, power)?;
        c.real("Smooth", self.smooth, Range::closed(0.0, 1.0))?;

        // Sylva's caps on what no tool bounds (see the constants): each keeps the geometry and
        // the simulation's f32 arrays finite and meaningful.
        c.real_cap("ZScale", self.z_scale, MAX_RADIUS_FACTOR, "(trunk radius factor)")?;
        c.real_cap("ZScaleV", self.z_scale_v, MAX_RADIUS_FACTOR, "(trunk radius factor)")?;
        c.real_cap("Ratio", self.ratio, MAX_RATIO, "(radius per length)")?;
        c.real_cap("RatioPower", self.ratio_power, MAX_RATIO_POWER, "(exponent)")?;
        c.real_cap("LobeDepth", self.lobe_depth, MAX_RADIUS_FACTOR, "(trunk radius factor)")?;
        c.real_cap("Flare", self.flare, MAX_RADIUS_FACTOR, "(trunk radius factor)")?;
        c.real_cap("0Scale", self.scale0, MAX_RADIUS_FACTOR, "(trunk radius factor)")?;
        c.real_cap("0ScaleV", self.scale0_v, MAX_RADIUS_FACTOR, "(trunk radius factor)")?;
        c.real_cap("LeafScale", self.leaf_scale, MAX_LEAF_FACTOR, "m")?;
        if self.leaves != 0 {
            // The tools accept leaves of zero size (Sapling) or any positive size; a leaf card
            // needs a size the simulation can hold.
            let leaf = |p: &str, what: &str, v: f64| {
                c.err(
                    p,
                    format!(
                        "{p} = {v} gives leaves {what} {:e} m; allowed: leaves at least {MIN_LEAF_SIZE} m long and \
                         wide (LeafScale >= {MIN_LEAF_SIZE}, LeafScale × LeafScaleX >= {MIN_LEAF_SIZE}), or \
                         Leaves = 0",
                        if what == "long" {
                            self.leaf_scale
                        } else {
                            self.leaf_scale * self.leaf_scale_x
                        }
                    ),
                )
            };
            if self.leaf_scale.is_nan() || self.leaf_scale < MIN_LEAF_SIZE {
                return Err(leaf("LeafScale", "long", self.leaf_scale));
            }
            let width = self.leaf_scale * self.leaf_scale_x;
            if width.is_nan() || width < MIN_LEAF_SIZE {
                return Err(leaf("LeafScaleX", "wide", self.leaf_scale_x));
            }
        }
        c.real_cap(
            "LeafScaleX",
            self.leaf_scale_x,
            MAX_LEAF_FACTOR,
            "(fraction of the leaf length)",
        )?;
        c.real_cap(
            "LeafStemLen",
            self.leaf_stem_len,
            MAX_LEAF_FACTOR,
            "(fraction of the leaf length)",
        )?;
        c.real_cap("PruneWidth", self.prune_width, MAX_PRUNE_FACTOR, "(fraction)")?;
        c.real_cap("PruneWidthPeak", self.prune_width_peak, MAX_PRUNE_FACTOR, "(fraction)")?;
        c.real_cap("PrunePowerLow", self.prune_power_low, MAX_PRUNE_FACTOR, "(exponent)")?;
        c.real_cap("PrunePowerHigh", self.prune_power_high, MAX_PRUNE_FACTOR, "(exponent)")?;

        // Stem levels are 0..min(Levels, 4); the leaf level min(Levels, 3) uses the angles.
        let stem_levels = self.levels.clamp(0, 4) as usize;
        let angle_levels = self.levels.clamp(0, 3) as usize + 1;
        for (n, l) in self.level.iter().enumerate() {
            let name = |p: &str| format!("{n}{p}");
            let stem = n < stem_levels;
            let angles = n < angle_levels;

            // Caps and finiteness hold on every level.
            c.int_cap(&name("Branches"), l.branches, MAX_BRANCHES, "branches per parent")?;
            c.int_cap(&name("CurveRes"), l.curve_res, MAX_CURVE_RES, "segments per stem")?;
            for (p, v) in [
                ("DownAngle", l.down_angle),
                ("DownAngleV", l.down_angle_v),
                ("Rotate", l.rotate),
                ("RotateV", l.rotate_v),
                ("BranchDist", l.branch_dist),
                ("Length", l.length),
                ("LengthV", l.length_v),
                ("Taper", l.taper),
                ("SegSplits", l.seg_splits),
                ("SplitAngle", l.split_angle),
                ("SplitAngleV", l.split_angle_v),
                ("Curve", l.curve),
                ("CurveBack", l.curve_back),
                ("CurveV", l.curve_v),
                ("BaseSize", l.base_size),
                ("AttractionUp", l.attraction_up),
                ("ForkArea", l.fork_area),
                ("ForkPush", l.fork_push),
            ] {
                c.finite(&name(p), v)?;
            }
            c.real(&name("ForkArea"), l.fork_area, Range::closed(0.0, 1.0))?;
            c.real(&name("ForkPush"), l.fork_push, Range::closed(0.0, 1.0))?;
            c.real(&name("BaseSize"), l.base_size, Range::closed(0.0, 1.0))?;
            c.real(&name("BranchDist"), l.branch_dist, Range::closed(0.0, 1.0))?;

            if angles {
                c.real(&name("DownAngle"), l.down_angle, Range::open(-180.0, 180.0))?;
                c.real(&name("DownAngleV"), l.down_angle_v, Range::open(-180.0, 180.0))?;
                c.real(&name("Rotate"), l.rotate, Range::closed(-360.0, 360.0))?;
                c.real(&name("RotateV"), l.rotate_v, Range::closed(-360.0, 360.0))?;
            }
            if !stem {
                continue;
            }
            c.real(&name("Length"), l.length, Range::gt(0.0))?;
            c.real(&name("LengthV"), l.length_v, Range::ge(0.0))?;
            c.real_cap(&name("Length"), l.length, MAX_LENGTH_FACTOR, "(length factor)")?;
            c.real_cap(&name("LengthV"), l.length_v, MAX_LENGTH_FACTOR, "(length factor)")?;
            for (p, v) in [("Curve", l.curve), ("CurveBack", l.curve_back), ("CurveV", l.curve_v)] {
                c.real_cap(&name(p), v, MAX_CURVE_DEGREES, "degrees")?;
            }
            c.real_cap(&name("AttractionUp"), l.attraction_up, MAX_ATTRACTION, "(attraction)")?;
            let taper = if sapling {
                Range::closed(0.0, 1.0)
            } else {
                Range::closed_open(0.0, 3.0)
            };
            c.real(&name("Taper"), l.taper, taper)?;
            c.real(&name("SegSplits"), l.seg_splits, Range::ge(0.0))?;
            c.real_cap(&name("SegSplits"), l.seg_splits, MAX_SEG_SPLITS, "clones per segment")?;
            // tree-gen: a negative split angle selects its "direct split" mode, and its real
            // files pair it with a negative variation (small_pine: -80 and -30).
            let split = if tool == TreeGen {
                Range::closed(-180.0, 180.0)
            } else {
                Range::closed(0.0, 180.0)
            };
            c.real(&name("SplitAngle"), l.split_angle, split)?;
            c.real(&name("SplitAngleV"), l.split_angle_v, split)?;
            c.int(&name("CurveRes"), l.curve_res, 1, None)?;
            // Arbaro and tree-gen read a negative nCurveV as a helix (>= -90); Sapling and
            // Helios have no helix, a negative value is just a variation.
            let curve_v = if sapling || tool == Helios {
                Range::ANY
            } else {
                Range::ge(-90.0)
            };
            c.real(&name("CurveV"), l.curve_v, curve_v)?;
            if tool == TreeGen && l.branches < 0 {
                // tree-gen grows |n| stems in a fan at each parent's tip; the generator has no
                // such fan for stems (only for leaves), so the file is refused rather than
                // grown without those stems.
                return Err(c.err(
                    &name("Branches"),
                    format!(
                        "{n}Branches = {} asks tree-gen for a fan of {} stems at the tip of each parent, which \
                         Sylva does not grow; allowed: an integer in [0, {MAX_BRANCHES}]",
                        l.branches,
                        l.branches.unsigned_abs()
                    ),
                ));
            }
            c.int(&name("Branches"), l.branches, 0, Some(MAX_BRANCHES))?;
            if arbaro_like && l.seg_splits > 0.0 && l.split_angle == 0.0 {
                return Err(c.err(
                    &name("SplitAngle"),
                    format!(
                        "{n}SegSplits = {} needs a split angle: Arbaro refuses nSegSplits > 0 with nSplitAngle = 0; \
                         allowed: {n}SplitAngle in (0, 180] or {n}SegSplits = 0",
                        l.seg_splits
                    ),
                ));
            }
        }
        self.check_stem_lengths(&c)?;
        Ok(())
    }

    /// The longest stem each level can have, from the largest tree size and the length
    /// factors (a child is at most `nLength + nLengthV` times its parent's length: every shape
    /// ratio is at most 1), must stay within [`MAX_STEM_LENGTH`]; the error names the level's
    /// `nLength`.
    fn check_stem_lengths(&self, c: &Checker<'_>) -> Result<(), SpecError> {
        let levels = self.levels.clamp(0, MAX_LEVELS) as usize;
        let mut longest = self.scale + self.scale_v;
        let mut formula = String::from("(Scale + ScaleV)");
        for n in 0..levels {
            let l = self.level(n);
            let m = n.min(3);
            longest *= l.length + l.length_v;
            formula.push_str(&format!(" × ({m}Length + {m}LengthV)"));
            if longest.is_nan() || longest > MAX_STEM_LENGTH {
                return Err(c.err(
                    &format!("{m}Length"),
                    format!(
                        "stems of level {n} can grow {longest:.3e} m long ({formula}); allowed: at most \
                         {MAX_STEM_LENGTH} m: lower Scale or the nLength values"
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arbaro() -> WeberPennSpec {
        WeberPennSpec::arbaro_default("t", SpecTool::Arbaro)
    }

    #[test]
    fn defaults_are_valid() {
        for tool in SpecTool::ALL {
            WeberPennSpec::arbaro_default("t", tool).validate("f").unwrap();
        }
    }

    #[test]
    fn names_parameter_and_range() {
        let mut s = arbaro();
        s.shape = 9;
        let e = s.validate("a.xml").unwrap_err();
        assert_eq!(e.file, "a.xml");
        assert_eq!(e.parameter, "Shape");
        assert!(e.message.contains("0, 1, 2, 3, 4, 5, 6, 7, 8"), "{}", e.message);

        let mut s = arbaro();
        s.level[1].length = -0.5;
        let e = s.validate("a.xml").unwrap_err();
        assert_eq!(e.parameter, "1Length");
        assert!(e.message.contains("> 0"), "{}", e.message);

        let mut s = arbaro();
        s.ratio = f64::NAN;
        let e = s.validate("a.xml").unwrap_err();
        assert_eq!(e.parameter, "Ratio");
        assert!(e.message.contains("NaN"));
    }

    #[test]
    fn caps() {
        let mut s = arbaro();
        s.level[1].branches = 1_000_000_000;
        let e = s.validate("f").unwrap_err();
        assert_eq!(e.parameter, "1Branches");
        assert!(e.message.contains("10000"));
        let mut s = arbaro();
        s.leaves = -200_000;
        assert_eq!(s.validate("f").unwrap_err().parameter, "Leaves");
        let mut s = arbaro();
        s.scale = 5000.0;
        assert!(s.validate("f").unwrap_err().message.contains("1000"));
    }

    #[test]
    fn tool_specific_ranges() {
        let mut s = WeberPennSpec::arbaro_default("t", SpecTool::TreeGen);
        s.base_splits = -2;
        s.level[0].split_angle = -30.0;
        s.validate("f").unwrap();
        // tree-gen's fans of stems are not grown: refused, not silently dropped.
        s.level[1].branches = -5;
        let e = s.validate("f").unwrap_err();
        assert_eq!(e.parameter, "1Branches");
        assert!(e.message.contains("fan of 5 stems"), "{}", e.message);
        s.level[1].branches = 5;
        s.origin = SpecTool::Arbaro;
        assert_eq!(s.validate("f").unwrap_err().parameter, "0BaseSplits");

        let mut s = WeberPennSpec::arbaro_default("t", SpecTool::SaplingV03);
        s.shape = 10;
        s.level[0].taper = 1.5;
        assert_eq!(s.validate("f").unwrap_err().parameter, "0Taper");
        s.level[0].taper = 1.0;
        s.validate("f").unwrap();

        let mut s = WeberPennSpec::arbaro_default("t", SpecTool::Helios);
        s.levels = 4;
        s.validate("f").unwrap();
        s.levels = 5;
        assert_eq!(s.validate("f").unwrap_err().parameter, "Levels");
    }

    #[test]
    fn sylva_caps_name_the_parameter() {
        type Edit = fn(&mut WeberPennSpec);
        let cases: [(&str, Edit); 8] = [
            ("0Length", |s| s.level[0].length = 1e300),
            ("0Length", |s| s.level[0].length = 1e30),
            ("1LengthV", |s| s.level[1].length_v = 1e9),
            ("2Curve", |s| s.level[2].curve = -1e6),
            ("Ratio", |s| s.ratio = 3.0),
            ("Flare", |s| s.flare = 1e300),
            ("LeafScale", |s| s.leaf_scale = 1e20),
            ("2AttractionUp", |s| s.level[2].attraction_up = 1e9),
        ];
        for (parameter, edit) in cases {
            let mut s = arbaro();
            edit(&mut s);
            let e = s.validate("f").unwrap_err();
            assert_eq!(e.parameter, parameter, "{e}");
            assert!(e.message.contains("allowed"), "{e}");
        }
        // Lengths compound: each factor is allowed, the product is not.
        let mut s = arbaro();
        s.scale = 500.0;
        s.level[0].length = 2.0;
        s.level[1].length = 3.0;
        let e = s.validate("f").unwrap_err();
        assert_eq!(e.parameter, "1Length");
        assert!(e.message.contains("2000"), "{}", e.message);
    }

    #[test]
    fn arbaro_split_rule_and_unused_levels() {
        let mut s = arbaro();
        s.level[1].seg_splits = 0.5;
        assert_eq!(s.validate("f").unwrap_err().parameter, "1SplitAngle");
        s.level[1].split_angle = 20.0;
        s.validate("f").unwrap();
        // Level 3 is the leaf level of a 3-level tree: its stem parameters are not used.
        s.level[3].curve_res = 0;
        s.level[3].length = 0.0;
        s.validate("f").unwrap();
        s.level[3].length = f64::INFINITY;
        assert_eq!(s.validate("f").unwrap_err().parameter, "3Length");
    }
}
