//! Weber-Penn tree specs: one canonical parameter set that every importer fills and the
//! Weber-Penn generator reads.
//!
//! Parameter names and defaults are Arbaro's (Arbaro 1.9.9 `Params.registerParams`), the tool
//! most files come from. The same numbers mean different trees in different tools, so a spec
//! keeps the [`SpecTool`] that wrote it, and the generator follows that tool where the tools
//! disagree (see [`Semantics`]). Per-level parameters are indexed 0..=3; stems deeper than
//! level 3 use level 3's, and leaves use the down and rotation angles of level `Levels` (capped
//! at 3), as in Arbaro.

pub mod arbaro;
pub mod estimate;
pub mod helios;
pub mod load;
mod python;
pub mod sapling;
pub mod text;
pub mod treegen;
pub mod validate;

use std::collections::BTreeMap;
use std::fmt;

/// The tool whose semantics a spec's numbers follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecTool {
    /// Arbaro 1.9.9 (and the modified Arbaro of ProceduralTerrain).
    Arbaro,
    /// Blender Sapling 0.2 (Andrew Hale).
    SaplingV02,
    /// Blender Sapling Tree Gen 0.3 (Aaron Buchler).
    SaplingV03,
    /// The abpy "sapling_4" fork.
    Sapling4,
    /// friggog/tree-gen.
    TreeGen,
    /// Helios' weberpenntree plugin.
    Helios,
    /// Written by Sylva itself, with Arbaro's semantics.
    Sylva,
}

impl SpecTool {
    /// The name used in Sylva's spec files.
    pub fn name(self) -> &'static str {
        match self {
            SpecTool::Arbaro => "arbaro",
            SpecTool::SaplingV02 => "sapling-0.2",
            SpecTool::SaplingV03 => "sapling-0.3",
            SpecTool::Sapling4 => "sapling-4",
            SpecTool::TreeGen => "tree-gen",
            SpecTool::Helios => "helios",
            SpecTool::Sylva => "sylva",
        }
    }

    /// Every tool.
    pub const ALL: [SpecTool; 7] = [
        SpecTool::Arbaro,
        SpecTool::SaplingV02,
        SpecTool::SaplingV03,
        SpecTool::Sapling4,
        SpecTool::TreeGen,
        SpecTool::Helios,
        SpecTool::Sylva,
    ];

    pub fn from_name(name: &str) -> Option<SpecTool> {
        SpecTool::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl fmt::Display for SpecTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The shape-ratio formula for shape 0 ("conical"): the tools disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conical {
    /// Arbaro: ratio ("need real conical shape for larch, fir").
    Pure,
    /// The paper, tree-gen and Sapling 0.2: 0.2 + 0.8·ratio.
    Paper,
    /// Sapling 0.3: 0.05 + 0.95·ratio.
    Sapling,
}

/// What a negative `nRotate` means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NegativeRotate {
    /// Arbaro and tree-gen: alternate sides, angle ±(180 + nRotate + variation).
    Alternate180,
    /// Sapling: alternate sides, angle ±|nRotate|.
    AlternateAbs,
    /// Helios: no special meaning, the value is simply added.
    Plain,
}

/// What the sign of `nDownAngleV` means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DownAngleV {
    /// Arbaro, the paper, tree-gen and Sapling 0.2 (and 0.3 with `useOldDownAngle`): positive is
    /// random ±V; negative varies the angle with the position along the parent.
    Paper,
    /// Sapling 0.3 default: negative is random ±|V|; positive decreases the angle towards the
    /// parent's tip by V·(1 - (1 - offset)/(1 - BaseSize))².
    SaplingReversed,
    /// Helios: always random ±|V|.
    Random,
}

/// Where a tool's semantics differ from Arbaro's, how this spec's numbers are to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Semantics {
    pub conical: Conical,
    pub negative_rotate: NegativeRotate,
    pub down_angle_v: DownAngleV,
}

impl Semantics {
    /// The semantics of the tool that wrote a file. `sapling_old_down_angle` is Sapling 0.3's
    /// `useOldDownAngle` switch (ignored for other tools).
    pub fn of(tool: SpecTool, sapling_old_down_angle: bool) -> Semantics {
        match tool {
            SpecTool::Arbaro | SpecTool::Sylva => Semantics {
                conical: Conical::Pure,
                negative_rotate: NegativeRotate::Alternate180,
                down_angle_v: DownAngleV::Paper,
            },
            SpecTool::TreeGen => Semantics {
                conical: Conical::Paper,
                negative_rotate: NegativeRotate::Alternate180,
                down_angle_v: DownAngleV::Paper,
            },
            SpecTool::SaplingV02 => Semantics {
                conical: Conical::Paper,
                negative_rotate: NegativeRotate::AlternateAbs,
                down_angle_v: DownAngleV::Paper,
            },
            SpecTool::SaplingV03 | SpecTool::Sapling4 => Semantics {
                conical: Conical::Sapling,
                negative_rotate: NegativeRotate::AlternateAbs,
                down_angle_v: if sapling_old_down_angle {
                    DownAngleV::Paper
                } else {
                    DownAngleV::SaplingReversed
                },
            },
            SpecTool::Helios => Semantics {
                conical: Conical::Paper,
                negative_rotate: NegativeRotate::Plain,
                down_angle_v: DownAngleV::Random,
            },
        }
    }
}

/// Parameters of one stem level (Arbaro's `nXxx`, with n the level).
#[derive(Clone, Debug, PartialEq)]
pub struct LevelSpec {
    pub down_angle: f64,
    pub down_angle_v: f64,
    pub rotate: f64,
    pub rotate_v: f64,
    pub branches: i64,
    pub branch_dist: f64,
    pub length: f64,
    pub length_v: f64,
    pub taper: f64,
    pub seg_splits: f64,
    pub split_angle: f64,
    pub split_angle_v: f64,
    pub curve_res: i64,
    pub curve: f64,
    pub curve_back: f64,
    pub curve_v: f64,
    /// Bare base of this level's stems as a fraction of their length (tree-gen's per-level
    /// `base_size`; Arbaro has it only for the trunk, `BaseSize`). Levels ≥ 1 only.
    pub base_size: f64,
    /// Upward attraction of this level's stems (Arbaro applies `AttractionUp` to levels ≥ 2;
    /// Sapling 0.3 gives one per level).
    pub attraction_up: f64,
    /// Weber 2008, "Structure", first rule: how much of the cross-section continuity across a
    /// fork on a stem of this level is enforced (0 = the tool's own radii, 1 = area just
    /// before a fork equals the sum just after). No tool that writes Weber-Penn files has it:
    /// imports get 0 (they grow as their tool grows them); a Sylva spec sets it explicitly
    /// (`nForkArea`), or `--fork-rules` switches both rules on.
    pub fork_area: f64,
    /// Weber 2008, "Structure", second rule: how far a parent is pushed away from a branch
    /// forking off a stem of this level (0 = not at all, 1 = the paper's rule).
    pub fork_push: f64,
}

impl LevelSpec {
    /// Arbaro's defaults for level `n`.
    pub fn arbaro_default(n: usize) -> LevelSpec {
        let pick = |v: [f64; 4]| v[n.min(3)];
        LevelSpec {
            down_angle: pick([0.0, 30.0, 30.0, 30.0]),
            down_angle_v: 0.0,
            rotate: pick([0.0, 120.0, 120.0, 120.0]),
            rotate_v: 0.0,
            branches: pick([1.0, 10.0, 5.0, 5.0]) as i64,
            branch_dist: pick([0.0, 1.0, 1.0, 1.0]),
            length: pick([1.0, 0.5, 0.5, 0.5]),
            length_v: 0.0,
            taper: 1.0,
            seg_splits: 0.0,
            split_angle: 0.0,
            split_angle_v: 0.0,
            curve_res: pick([3.0, 3.0, 1.0, 1.0]) as i64,
            curve: 0.0,
            curve_back: 0.0,
            curve_v: 0.0,
            base_size: 0.0,
            attraction_up: 0.0,
            // Weber 2008's rules are Sylva's addition: off unless a spec asks for them.
            fork_area: 0.0,
            fork_push: 0.0,
        }
    }
}

/// The leaf outlines Sylva draws (the renderer's `leafshape.glsl` ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafShape {
    Oval = 0,
    Needle = 1,
    Heart = 2,
    Lobed = 3,
    Rectangle = 4,
    Triangle = 5,
    Disc = 6,
    Frond = 7,
}

impl LeafShape {
    /// Every shape and its name in a Sylva spec's `LeafShape`.
    pub const NAMED: [(&'static str, LeafShape); 8] = [
        ("oval", LeafShape::Oval),
        ("needle", LeafShape::Needle),
        ("heart", LeafShape::Heart),
        ("lobed", LeafShape::Lobed),
        ("rectangle", LeafShape::Rectangle),
        ("triangle", LeafShape::Triangle),
        ("disc", LeafShape::Disc),
        ("frond", LeafShape::Frond),
    ];
}

/// A Weber-Penn species.
#[derive(Clone, Debug, PartialEq)]
pub struct WeberPennSpec {
    pub species: String,
    pub origin: SpecTool,
    pub semantics: Semantics,
    pub shape: i64,
    /// Shape used for stems of level ≥ 2 (Sapling 0.3's `shapeS`); `None` = `shape`.
    pub shape_deep: Option<i64>,
    /// Sapling's custom shape 8: (base, middle, middle position, top).
    pub custom_shape: Option<[f64; 4]>,
    pub levels: i64,
    pub scale: f64,
    pub scale_v: f64,
    pub z_scale: f64,
    pub z_scale_v: f64,
    pub base_size: f64,
    pub ratio: f64,
    pub ratio_power: f64,
    pub lobes: i64,
    pub lobe_depth: f64,
    pub flare: f64,
    pub scale0: f64,
    pub scale0_v: f64,
    pub base_splits: i64,
    /// Helios: height of the base split as a fraction of the tree height.
    pub base_split_size: Option<f64>,
    pub leaves: i64,
    pub leaf_shape: String,
    /// The leaves' linear RGB colour (Sylva's `LeafColor`); `None`: by the leaf shape
    /// ([`WeberPennSpec::leaf_colour`]).
    pub leaf_color: Option<[f64; 3]>,
    /// The bark's linear RGB colour (Sylva's `BarkColor`); `None`: by the leaf shape.
    pub bark_color: Option<[f64; 3]>,
    pub leaf_scale: f64,
    pub leaf_scale_x: f64,
    pub leaf_quality: f64,
    pub leaf_stem_len: f64,
    pub leaf_bend: f64,
    pub leaf_distrib: i64,
    pub prune_ratio: f64,
    pub prune_width: f64,
    pub prune_width_peak: f64,
    pub prune_power_low: f64,
    pub prune_power_high: f64,
    pub smooth: f64,
    pub level: [LevelSpec; 4],
    /// Sylva's `CollisionFree`: grow the tree through the collision-free modelling pass
    /// (`crate::collision::modelling`, Chen 2011 §3.2) with stems as prisms of this many
    /// sides; `None`: as grown.
    pub collision_free: Option<i64>,
    /// Parameters of the source file that Sylva reads but does not use for geometry (kept so
    /// nothing is lost, listed by `sylva spec stats`).
    pub extras: BTreeMap<String, String>,
    /// What the importer had to say: defaulted or ignored keys, tool fix-ups applied.
    pub notes: Vec<String>,
}

impl WeberPennSpec {
    /// The outline its leaves are drawn with, from `LeafShape` as its format means it:
    /// tree-gen's numbers (1 ovate, 2 linear, 3 cordate, 4 maple, 5 palmate, 6 spiky oak,
    /// 7 rounded oak, 8 elliptic, 9 rectangle, 10 triangle; others elliptic), Arbaro's names
    /// (`disc`, `disc1`..`disc9` and `sphere` as discs, `square`, `palm` as fronds, `0` and any
    /// other the default oval), Sapling's geometry (`rect` a rectangle, others oval), and
    /// Sylva's own names ([`LeafShape::NAMED`]), which every format may use.
    pub fn leaf_shape_kind(&self) -> LeafShape {
        let s = self.leaf_shape.trim().to_ascii_lowercase();
        if let Some(&(_, shape)) = LeafShape::NAMED.iter().find(|(n, _)| *n == s) {
            return shape;
        }
        match self.origin {
            SpecTool::TreeGen => match s.parse::<i64>() {
                Ok(2) => LeafShape::Needle,
                Ok(3) => LeafShape::Heart,
                Ok(4..=7) => LeafShape::Lobed,
                Ok(9) => LeafShape::Rectangle,
                Ok(10) => LeafShape::Triangle,
                _ => LeafShape::Oval,
            },
            SpecTool::SaplingV02 | SpecTool::SaplingV03 | SpecTool::Sapling4 => match s.as_str() {
                "rect" => LeafShape::Rectangle,
                _ => LeafShape::Oval,
            },
            _ => match s.as_str() {
                "square" => LeafShape::Rectangle,
                "palm" => LeafShape::Frond,
                _ if s == "sphere" || s.starts_with("disc") => LeafShape::Disc,
                _ => LeafShape::Oval,
            },
        }
    }

    /// The leaves' linear RGB colour: `LeafColor`, else by the leaf shape (needles a dark
    /// blue-green, fronds a yellower green, broad leaves a mid green).
    pub fn leaf_colour(&self) -> [f64; 3] {
        self.leaf_color.unwrap_or(match self.leaf_shape_kind() {
            LeafShape::Needle => [0.05, 0.17, 0.07],
            LeafShape::Frond => [0.16, 0.36, 0.08],
            _ => [0.16, 0.40, 0.09],
        })
    }

    /// The bark's linear RGB colour: `BarkColor`, else by the leaf shape (conifers a red-brown,
    /// palms a grey-tan, broadleaves a mid brown).
    pub fn bark_colour(&self) -> [f64; 3] {
        self.bark_color.unwrap_or(match self.leaf_shape_kind() {
            LeafShape::Needle => [0.26, 0.14, 0.09],
            LeafShape::Frond => [0.36, 0.30, 0.22],
            _ => [0.30, 0.20, 0.12],
        })
    }
}

impl WeberPennSpec {
    /// Arbaro's defaults (the values a missing parameter takes).
    pub fn arbaro_default(species: &str, origin: SpecTool) -> WeberPennSpec {
        WeberPennSpec {
            species: species.to_string(),
            origin,
            semantics: Semantics::of(origin, false),
            shape: 0,
            shape_deep: None,
            custom_shape: None,
            levels: 3,
            scale: 10.0,
            scale_v: 0.0,
            z_scale: 1.0,
            z_scale_v: 0.0,
            base_size: 0.25,
            ratio: 0.05,
            ratio_power: 1.0,
            lobes: 0,
            lobe_depth: 0.0,
            flare: 0.5,
            scale0: 1.0,
            scale0_v: 0.0,
            base_splits: 0,
            base_split_size: None,
            collision_free: None,
            leaves: 0,
            leaf_shape: "0".to_string(),
            leaf_color: None,
            bark_color: None,
            leaf_scale: 0.2,
            leaf_scale_x: 0.5,
            leaf_quality: 1.0,
            leaf_stem_len: 0.5,
            leaf_bend: 0.3,
            leaf_distrib: 4,
            prune_ratio: 0.0,
            prune_width: 0.5,
            prune_width_peak: 0.5,
            prune_power_low: 0.5,
            prune_power_high: 0.5,
            smooth: 0.5,
            level: std::array::from_fn(LevelSpec::arbaro_default),
            extras: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// Parameters of stem level `n` (levels beyond 3 use level 3's).
    pub fn level(&self, n: usize) -> &LevelSpec {
        &self.level[n.min(3)]
    }

    /// Sets Weber 2008's two fork rules (`nForkArea`, `nForkPush`) on every level: `true` at
    /// full strength (1), `false` off (0, the tools' own radii and directions).
    pub fn set_fork_rules(&mut self, on: bool) {
        let s = if on { 1.0 } else { 0.0 };
        for l in &mut self.level {
            l.fork_area = s;
            l.fork_push = s;
        }
    }

    /// Whether any level applies a fork rule.
    pub fn has_fork_rules(&self) -> bool {
        self.level.iter().any(|l| l.fork_area != 0.0 || l.fork_push != 0.0)
    }
}

/// A spec refused: which file, which parameter, and what is allowed.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecError {
    /// The file (or `<input>` for text that did not come from a file).
    pub file: String,
    /// The parameter, element or line at fault ("" when the whole file is at fault).
    pub parameter: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl SpecError {
    pub fn new(file: impl Into<String>, parameter: impl Into<String>, message: impl Into<String>) -> SpecError {
        SpecError {
            file: file.into(),
            parameter: parameter.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.parameter.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: parameter {}: {}", self.file, self.parameter, self.message)
        }
    }
}

impl std::error::Error for SpecError {}
