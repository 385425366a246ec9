//! Hostile and careless inputs for every parser Sylva has: small files written in each format
//! (Arbaro XML, Helios XML, Sapling 0.2 / 0.3 / sapling_4 presets, tree-gen modules, Sylva
//! text, L-systems, colonization points), the built-in species and L-system presets, and from
//! each of them generated variants: every number replaced by extreme values (±1e300, ±1e30,
//! NaN, ±inf, -0, 0, -1, huge integers, 1e-300), the text cut short every few bytes, bytes
//! flipped, and binary noise.
//!
//! Each variant knows which parameter it changed, as the format names it, so a test can check
//! that a refusal names it. Everything is deterministic (a fixed-seed generator).

use std::ops::Range;

/// Which parser reads an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parser {
    /// `spec::load::load_str` (any Weber-Penn format).
    Spec,
    /// `lsystem::LSystem::parse`.
    LSystem,
    /// `colonize::parse_points`.
    Points,
}

/// The format of a spec input (tells how its parameters are named).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Arbaro,
    Helios,
    Sapling,
    TreeGen,
    Sylva,
    LSystem,
    Points,
}

/// A well-formed input that the generated variants start from.
#[derive(Clone, Debug)]
pub struct Base {
    pub name: String,
    pub parser: Parser,
    pub format: Format,
    pub text: String,
}

/// A number replaced in a base input.
#[derive(Clone, Debug)]
pub struct Mutation {
    /// The parameter, as the format names it (`0Length`, `nLength`, `length`, a points line
    /// `line 3`), and the list index when the number is in a per-level list.
    pub key: String,
    pub index: Option<usize>,
    /// 1-based line of the number.
    pub line: usize,
    pub value: &'static str,
}

/// One generated input.
#[derive(Clone, Debug)]
pub struct Case {
    /// Base name and what was done to it.
    pub name: String,
    pub parser: Parser,
    pub format: Format,
    pub bytes: Vec<u8>,
    pub mutation: Option<Mutation>,
}

/// The extreme values every number is replaced by.
pub const EXTREMES: [&str; 16] = [
    "1e300",
    "1e400",
    "-1e300",
    "1e30",
    "-1e30",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "-0",
    "0",
    "-1",
    "99999999999999999999",
    "9223372036854775807",
    "-9223372036854775808",
    "1e-300",
];

/// Arbaro parameters of a small two-level tree (a few hundred segments), general then per
/// level, with the values Arbaro itself would write.
const ARBARO_GENERAL: [(&str, &str); 28] = [
    ("Shape", "7"),
    ("Levels", "2"),
    ("Scale", "6"),
    ("ScaleV", "1"),
    ("BaseSize", "0.3"),
    ("Ratio", "0.02"),
    ("RatioPower", "1.2"),
    ("Flare", "0.6"),
    ("Lobes", "5"),
    ("LobeDepth", "0.07"),
    ("Smooth", "0.5"),
    ("Leaves", "6"),
    ("LeafShape", "0"),
    ("LeafScale", "0.17"),
    ("LeafScaleX", "1.0"),
    ("LeafQuality", "1.0"),
    ("LeafStemLen", "0.5"),
    ("LeafDistrib", "4"),
    ("LeafBend", "0.3"),
    ("AttractionUp", "0.5"),
    ("PruneRatio", "0.0"),
    ("PrunePowerLow", "0.5"),
    ("PrunePowerHigh", "0.5"),
    ("PruneWidth", "0.5"),
    ("PruneWidthPeak", "0.5"),
    ("0Scale", "1.0"),
    ("0ScaleV", "0.2"),
    ("0BaseSplits", "0"),
];

/// Per-level values: (name, level 0, level 1, level 2 angles only).
const ARBARO_LEVELS: [(&str, &str, &str, &str); 16] = [
    ("DownAngle", "0", "60", "45"),
    ("DownAngleV", "0", "-50", "10"),
    ("Rotate", "0", "140", "140"),
    ("RotateV", "0", "0", "0"),
    ("Branches", "1", "12", ""),
    ("BranchDist", "0", "1", ""),
    ("Length", "1", "0.3", ""),
    ("LengthV", "0", "0", ""),
    ("Taper", "1", "1", ""),
    ("SegSplits", "0.2", "0", ""),
    ("SplitAngle", "20", "0", ""),
    ("SplitAngleV", "5", "0", ""),
    ("CurveRes", "5", "3", ""),
    ("Curve", "0", "-20", ""),
    ("CurveBack", "0", "0", ""),
    ("CurveV", "20", "50", ""),
];

fn arbaro_xml() -> String {
    let mut s = String::from("<?xml version='1.0' ?>\n\n<arbaro>\n  <species name='hostile'>\n");
    for (name, value) in ARBARO_GENERAL {
        s.push_str(&format!("    <param name='{name}' value='{value}'/>\n"));
    }
    for level in 0..3 {
        for (name, v0, v1, v2) in ARBARO_LEVELS {
            let v = [v0, v1, v2][level];
            if !v.is_empty() {
                s.push_str(&format!("    <param name='{level}{name}' value='{v}'/>\n"));
            }
        }
    }
    s.push_str("  </species>\n</arbaro>\n");
    s
}

fn helios_xml() -> String {
    let scalars = [
        ("Shape", "4"),
        ("BaseSize", "0.2"),
        ("BaseSplits", "0"),
        ("BaseSplitSize", "0.5"),
        ("Scale", "5"),
        ("ScaleV", "0.5"),
        ("ZScale", "1"),
        ("ZScaleV", "0"),
        ("Ratio", "0.015"),
        ("RatioPower", "1.3"),
        ("Lobes", "0"),
        ("LobeDepth", "0"),
        ("Flare", "0.6"),
        ("Levels", "2"),
        ("Leaves", "8"),
        ("LeafScale", "0.1"),
        ("LeafScaleX", "0.5"),
    ];
    let lists = [
        ("nSegSplits", "0 0 0"),
        ("nSplitAngle", "0 0 0"),
        ("nSplitAngleV", "0 0 0"),
        ("nCurveRes", "4 3 1"),
        ("nCurve", "0 -30 0"),
        ("nCurveV", "20 40 0"),
        ("nCurveBack", "0 0 0"),
        ("nLength", "1 0.3 0.4"),
        ("nLengthV", "0 0.05 0"),
        ("nTaper", "1 1 1"),
        ("nDownAngle", "0 50 40"),
        ("nDownAngleV", "0 10 10"),
        ("nRotate", "0 140 140"),
        ("nRotateV", "0 10 10"),
        ("nBranches", "1 10 4"),
    ];
    let mut s = String::from("<?xml version=1.0?>\n<helios>\n  <WeberPennTree label=\"Hostile\">\n");
    for (name, v) in scalars {
        s.push_str(&format!("    <{name}> {v} </{name}>\n"));
    }
    s.push_str("    <LeafFile>plugins/weberpenntree/leaves/HostileLeaf.png</LeafFile>\n");
    s.push_str("    <WoodFile>plugins/weberpenntree/textures/HostileBark.jpg</WoodFile>\n");
    for (name, v) in lists {
        s.push_str(&format!("    <{name}>{v}</{name}>\n"));
    }
    s.push_str("  </WeberPennTree>\n</helios>\n");
    s
}

/// Sapling presets: 0.2 (scalar attractUp), 0.3 (tuple attractUp), sapling_4 (leafType).
fn sapling(generation: &str) -> String {
    let common = "'levels': 2, 'shape': '7', 'scale': 6.0, 'scaleV': 1.0, 'baseSize': 0.30000001192092896, \
                  'ratio': 0.019999999552965164, 'ratioPower': 1.2, 'baseSplits': 0, 'scale0': 1.0, 'scaleV0': 0.1, \
                  'branches': (0, 12, 4, 2), 'length': (1.0, 0.3, 0.5, 0.4), 'lengthV': (0.0, 0.05, 0.0, 0.0), \
                  'taper': (1.0, 1.0, 1.0, 1.0), 'segSplits': (0.1, 0.0, 0.0, 0.0), 'splitAngle': (10.0, 0.0, 0.0, 0.0), \
                  'splitAngleV': (2.0, 0.0, 0.0, 0.0), 'curveRes': (5, 3, 2, 1), 'curve': (0.0, -20.0, 0.0, 0.0), \
                  'curveBack': (0.0, 0.0, 0.0, 0.0), 'curveV': (20.0, 50.0, 30.0, 0.0), \
                  'downAngle': (90.0, 60.0, 45.0, 45.0), 'downAngleV': (0.0, -40.0, 10.0, 10.0), \
                  'rotate': (140.0, 140.0, 140.0, 140.0), 'rotateV': (0.0, 0.0, 0.0, 0.0), 'leaves': 6, \
                  'leafScale': 0.17, 'leafScaleX': 1.0, 'leafDist': '4', 'pruneRatio': 1.0, 'pruneWidth': 0.4, \
                  'pruneWidthPeak': 0.6, 'prunePowerLow': 0.001, 'prunePowerHigh': 0.5, 'prune': False, 'seed': 0";
    match generation {
        "0.2" => format!("{{{common}, 'attractUp': 0.5, 'bend': 0.0}}\n"),
        "0.3" => format!(
            "# SPDX-License-Identifier: GPL-2.0-or-later\n\n{{{common}, 'attractUp': (0.0, 0.0, 0.5, 0.5), \
             'rootFlare': 1.2, 'branchDist': 1.0, 'customShape': (0.5, 1.0, 0.3, 0.5), 'leafDownAngle': 45.0, \
             'leafDownAngleV': 10.0, 'leafRotate': 137.5, 'leafRotateV': 0.0, 'useOldDownAngle': False}}\n"
        ),
        _ => format!(
            "{{{common}, 'attractUp': (0.0, 0.0, 0.5, 0.5), 'rootFlare': 1.0, 'branchDist': 1.0, \
             'leafType': '0', 'attachment': '0', 'leafDownAngle': 45.0, 'leafRotate': 137.5}}\n"
        ),
    }
}

fn treegen() -> String {
    "\"\"\" Hostile: a small two-level tree \"\"\"\nparams = {\n    'shape': 4,\n    'g_scale': 6,\n    'g_scale_v': 1,\n    \
     'levels': 2,\n    'ratio': 0.02,\n    'ratio_power': 1.3,\n    'flare': 0.6,\n    'base_splits': -2,\n    \
     'base_size': [0.3, 0.02, 0.02, 0.02],\n    'down_angle': [-0, 60, 45, 45],\n    'down_angle_v': [-0, -50, 10, 10],\n    \
     'rotate': [-0, 140, 140, 77],\n    'rotate_v': [-0, 0, 0, 0],\n    'branches': [1, 12, 4, 0],\n    \
     'length': [1, 0.3, 0.6, 0],\n    'length_v': [0, 0, 0, 0],\n    'taper': [1, 1, 1, 1],\n    \
     'seg_splits': [0.2, 0, 0, 0],\n    'split_angle': [20, 0, 0, 0],\n    'split_angle_v': [5, 0, 0, 0],\n    \
     'curve_res': [5, 3, 3, 0],\n    'curve': [0, -20, -20, 0],\n    'curve_back': [0, 0, 0, 0],\n    \
     'curve_v': [20, 50, 75, 0],\n    'bend_v': [-0, 50, 0, 0],\n    'branch_dist': [-0, 0, 0, 0],\n    \
     'radius_mod': [1, 1, 1, 1],\n    'leaf_blos_num': 6,\n    'leaf_shape': 1,\n    'leaf_scale': 0.17,\n    \
     'leaf_scale_x': 1,\n    'leaf_bend': 0.6,\n    'blossom_shape': 1,\n    'blossom_scale': 0,\n    \
     'blossom_rate': 0,\n    'tropism': [0, 0, 0.5],\n    'prune_ratio': 0,\n    'prune_width': 0.5,\n    \
     'prune_width_peak': 0.5,\n    'prune_power_low': 0.5,\n    'prune_power_high': 0.5\n}\n"
        .to_string()
}

const POINTS: &str = "# crown points, x y z in metres\n0 3 0\n0.5, 3.4, 0.2\n-0.4 3.2 0.3\n0.2\t3.8\t-0.4\n\
                      -0.3 4.1 -0.2\n0.1 4.5 0.1\n0.6 3.9 -0.1\n-0.6 3.6 -0.3\n";

/// Every base input: one small file per format, the built-in Sylva species (one of them: each
/// grows a full tree), and the built-in L-system presets.
pub fn bases() -> Vec<Base> {
    let spec = |name: &str, format: Format, text: String| Base {
        name: name.to_string(),
        parser: Parser::Spec,
        format,
        text,
    };
    let mut out = vec![
        spec("hostile.xml", Format::Arbaro, arbaro_xml()),
        spec("hostile-helios.xml", Format::Helios, helios_xml()),
        spec("hostile-sapling-0.2.py", Format::Sapling, sapling("0.2")),
        spec("hostile-sapling-0.3.py", Format::Sapling, sapling("0.3")),
        spec("hostile-sapling-4.py", Format::Sapling, sapling("4")),
        spec("hostile-treegen.py", Format::TreeGen, treegen()),
    ];
    let species_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/species");
    // The largest of the built-in species in the examples.
    let aspen = species_dir.join("quaking_aspen.sylva");
    let text = std::fs::read_to_string(&aspen).unwrap_or_else(|e| panic!("{}: {e}", aspen.display()));
    out.push(spec("quaking_aspen.sylva", Format::Sylva, text));
    for &name in sylva_sim::lsystem::preset_names() {
        out.push(Base {
            name: format!("{name}.lsys"),
            parser: Parser::LSystem,
            format: Format::LSystem,
            text: sylva_sim::lsystem::preset_text(name).expect("preset").to_string(),
        });
    }
    out.push(Base {
        name: "crown.xyz".into(),
        parser: Parser::Points,
        format: Format::Points,
        text: POINTS.into(),
    });
    out
}

/// The byte ranges of the numbers in `text`: an optional sign, digits with at most one point,
/// an optional exponent, not touching a letter, digit or `_` on either side (so `0Length` and
/// `x1` are names, not numbers).
pub fn numbers(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let mut j = i;
        if matches!(b[j], b'-' | b'+') {
            j += 1;
        }
        let digits_from = j;
        while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
            j += 1;
        }
        let mantissa = &b[digits_from..j];
        let is_number = mantissa.iter().any(|c| c.is_ascii_digit())
            && mantissa.iter().filter(|&&c| c == b'.').count() <= 1
            && (start == 0 || !word(b[start - 1]) && b[start - 1] != b'.');
        if !is_number {
            i = start + 1;
            continue;
        }
        if j < b.len() && matches!(b[j], b'e' | b'E') {
            let mut k = j + 1;
            if k < b.len() && matches!(b[k], b'-' | b'+') {
                k += 1;
            }
            if k < b.len() && b[k].is_ascii_digit() {
                while k < b.len() && b[k].is_ascii_digit() {
                    k += 1;
                }
                j = k;
            }
        }
        if j < b.len() && (word(b[j]) || b[j] == b'.') {
            // Part of a name ("0Length") or of something else.
            while j < b.len() && word(b[j]) {
                j += 1;
            }
            i = j;
            continue;
        }
        out.push(start..j);
        i = j;
    }
    out
}

/// The parameter a number at `at` belongs to, as the format names it, and its list index.
pub fn key_at(format: Format, text: &str, at: usize) -> (String, Option<usize>) {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = &text[line_start..line_end];
    let line_no = text[..at].matches('\n').count() + 1;
    match format {
        Format::Arbaro => {
            let key = line
                .split("name='")
                .nth(1)
                .and_then(|r| r.split('\'').next())
                .unwrap_or("")
                .to_string();
            (key, None)
        }
        Format::Helios => {
            let before = &text[..at];
            let open = before.rfind('<').unwrap_or(0);
            let tag = before[open + 1..].split(['>', ' ']).next().unwrap_or("").to_string();
            let gt = before[open..].find('>').map_or(at, |g| open + g + 1);
            let index = before[gt.min(at)..].split_whitespace().count();
            (tag, Some(index))
        }
        Format::Sylva | Format::LSystem => {
            let key = line.split('=').next().unwrap_or("").trim().to_string();
            (key, None)
        }
        Format::Sapling | Format::TreeGen => {
            let before = &text[..at];
            let Some(colon) = before.rfind("':") else {
                return (String::new(), None);
            };
            let quote = before[..colon].rfind('\'').unwrap_or(0);
            let key = before[quote + 1..colon].to_string();
            let tail = &before[colon..];
            let index = tail.contains(['(', '[']).then(|| tail.matches(',').count());
            (key, index)
        }
        Format::Points => (format!("line {line_no}"), None),
    }
}

/// A small deterministic generator (splitmix64).
pub struct Rand(u64);

impl Rand {
    pub fn new(seed: u64) -> Rand {
        Rand(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Every number of `base` replaced by every one of [`EXTREMES`] (`per_number` of them, in
/// turn, when fewer are asked for), one change per case.
pub fn mutations(base: &Base, per_number: usize) -> Vec<Case> {
    let mut out = Vec::new();
    for (n, r) in numbers(&base.text).into_iter().enumerate() {
        let (key, index) = key_at(base.format, &base.text, r.start);
        let line = base.text[..r.start].matches('\n').count() + 1;
        for k in 0..per_number.min(EXTREMES.len()) {
            let value = EXTREMES[(n * per_number + k) % EXTREMES.len()];
            let mut text = String::with_capacity(base.text.len() + 24);
            text.push_str(&base.text[..r.start]);
            text.push_str(value);
            text.push_str(&base.text[r.end..]);
            out.push(Case {
                name: format!(
                    "{} line {line}: {key}{} = {value}",
                    base.name,
                    index.map_or(String::new(), |i| format!("[{i}]"))
                ),
                parser: base.parser,
                format: base.format,
                bytes: text.into_bytes(),
                mutation: Some(Mutation {
                    key: key.clone(),
                    index,
                    line,
                    value,
                }),
            });
        }
    }
    out
}

/// `base` cut short after every `step` bytes.
pub fn truncations(base: &Base, step: usize) -> Vec<Case> {
    let bytes = base.text.as_bytes();
    (0..bytes.len())
        .step_by(step.max(1))
        .map(|len| Case {
            name: format!("{} cut to {len} bytes", base.name),
            parser: base.parser,
            format: base.format,
            bytes: bytes[..len].to_vec(),
            mutation: None,
        })
        .collect()
}

/// `base` with `count` variants of a few random bytes replaced by random bytes.
pub fn flips(base: &Base, count: usize, rng: &mut Rand) -> Vec<Case> {
    (0..count)
        .map(|k| {
            let mut bytes = base.text.as_bytes().to_vec();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(bytes.len());
                bytes[i] = rng.next_u64() as u8;
            }
            Case {
                name: format!("{} with bytes flipped ({k})", base.name),
                parser: base.parser,
                format: base.format,
                bytes,
                mutation: None,
            }
        })
        .collect()
}

/// Binary noise of random lengths up to `max_len`, for each parser; some start with a
/// format's first line so they reach past format detection.
pub fn noise(count: usize, max_len: usize, rng: &mut Rand) -> Vec<Case> {
    let heads: [&[u8]; 6] = [
        b"",
        b"<arbaro>",
        b"<helios>",
        b"{'levels': ",
        b"params = {",
        b"# Sylva tree spec\n",
    ];
    let mut out = Vec::new();
    for k in 0..count {
        let (parser, format) = match k % 3 {
            0 => (Parser::Spec, Format::Arbaro),
            1 => (Parser::LSystem, Format::LSystem),
            _ => (Parser::Points, Format::Points),
        };
        let mut bytes = heads[rng.below(heads.len())].to_vec();
        let len = rng.below(max_len + 1);
        bytes.extend((0..len).map(|_| rng.next_u64() as u8));
        out.push(Case {
            name: format!("noise {k} ({len} bytes)"),
            parser,
            format,
            bytes,
            mutation: None,
        });
    }
    out
}

/// The name a spec error should carry for a change to `key` (index `index`) of `format`:
/// Arbaro's parameter name without its level digit (`Length` for `nLength`, `length[1]` and
/// `1Length`).
pub fn arbaro_base_name(format: Format, key: &str) -> String {
    let special = |k: &str| -> Option<&'static str> {
        Some(match k {
            "scaleV0" => "ScaleV",
            "scale0" => "Scale",
            "rootFlare" => "Flare",
            "attractUp" | "tropism" => "AttractionUp",
            "leafDist" => "LeafDistrib",
            "baseSplits" | "base_splits" | "BaseSplits" => "BaseSplits",
            "leaf_blos_num" | "leaves" => "Leaves",
            "g_scale" => "Scale",
            "g_scale_v" => "ScaleV",
            "bend" | "leaf_bend" => "LeafBend",
            // Sapling's leaf angles are the leaf level's angles.
            "shapeS" => "ShapeDeep",
            "leafRotate" => "Rotate",
            "leafRotateV" => "RotateV",
            "leafDownAngle" => "DownAngle",
            "leafDownAngleV" => "DownAngleV",
            _ => return None,
        })
    };
    if let Some(s) = special(key) {
        return s.to_string();
    }
    let stripped = key.trim_start_matches(|c: char| c.is_ascii_digit());
    match format {
        Format::Helios => stripped.strip_prefix('n').unwrap_or(stripped).to_string(),
        Format::Sapling => {
            let mut c = stripped.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        }
        Format::TreeGen => stripped
            .split('_')
            .map(|part| {
                let mut c = part.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            })
            .collect(),
        _ => stripped.to_string(),
    }
}

/// Peak resident memory of this process (`VmHWM`), in bytes, where `/proc` has it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_found_and_names_are_not() {
        let t = "<param name='0Length' value='1.5e-3'/> x1 -2 (3, .5) a_4 v=1.0.2 'k': -0";
        let found: Vec<&str> = numbers(t).into_iter().map(|r| &t[r]).collect();
        assert_eq!(found, ["1.5e-3", "-2", "3", ".5", "-0"]);
    }

    #[test]
    fn keys_are_found_per_format() {
        let x = arbaro_xml();
        let at = x.find("value='0.3'/>").unwrap() + 7;
        assert_eq!(key_at(Format::Arbaro, &x, at).0, "BaseSize");
        let h = helios_xml();
        let at = h.find("<nLength>").unwrap() + "<nLength>1 ".len();
        assert_eq!(key_at(Format::Helios, &h, at), ("nLength".to_string(), Some(1)));
        let s = sapling("0.3");
        let at = s.find("'length': (1.0, ").unwrap() + "'length': (1.0, ".len();
        assert_eq!(key_at(Format::Sapling, &s, at), ("length".to_string(), Some(1)));
        assert_eq!(arbaro_base_name(Format::TreeGen, "down_angle_v"), "DownAngleV");
        assert_eq!(arbaro_base_name(Format::Sapling, "segSplits"), "SegSplits");
        assert_eq!(arbaro_base_name(Format::Helios, "nLengthV"), "LengthV");
        assert_eq!(arbaro_base_name(Format::Arbaro, "2CurveRes"), "CurveRes");
    }
}
