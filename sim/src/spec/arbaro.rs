//! Arbaro XML (`<arbaro><species name=...><param name=... value=.../>...`), as Arbaro 1.9.9
//! reads it: only `species` and `param` elements matter, order and root name do not, the last of
//! duplicate params wins, missing params take Arbaro's defaults, integers must be plain integers
//! (`Integer.parseInt`). Unlike Arbaro, unknown params (ProceduralTerrain's `BarkTexture`, ...)
//! are kept in `extras` with a note instead of failing the load.

use super::load::{decimal, xml_error};
use super::{LevelSpec, SpecError, SpecTool, WeberPennSpec};
use std::collections::BTreeSet;

/// Most XML nodes one file may have (an Arbaro file has about 200).
const NODES_LIMIT: u32 = 200_000;

/// Arbaro's general parameters, in the order Arbaro writes them.
pub const GENERAL_PARAMS: [&str; 28] = [
    "Shape",
    "Levels",
    "Scale",
    "ScaleV",
    "BaseSize",
    "Ratio",
    "RatioPower",
    "Flare",
    "Lobes",
    "LobeDepth",
    "Smooth",
    "Leaves",
    "LeafShape",
    "LeafScale",
    "LeafScaleX",
    "LeafQuality",
    "LeafStemLen",
    "LeafDistrib",
    "LeafBend",
    "AttractionUp",
    "PruneRatio",
    "PrunePowerLow",
    "PrunePowerHigh",
    "PruneWidth",
    "PruneWidthPeak",
    "0Scale",
    "0ScaleV",
    "0BaseSplits",
];

/// Arbaro's per-level parameters (without the level digit): the four angles every level up to
/// the leaf level has, then the twelve of stem levels.
pub const LEVEL_ANGLE_PARAMS: [&str; 4] = ["DownAngle", "DownAngleV", "Rotate", "RotateV"];
pub const LEVEL_STEM_PARAMS: [&str; 12] = [
    "Branches",
    "BranchDist",
    "Length",
    "LengthV",
    "Taper",
    "SegSplits",
    "SplitAngle",
    "SplitAngleV",
    "CurveRes",
    "Curve",
    "CurveBack",
    "CurveV",
];

/// One `<param>` as read.
struct RawParam<'a> {
    name: &'a str,
    value: &'a str,
    /// Line of the element (computed only for errors: it costs a scan of the text).
    line: LazyLine<'a>,
}

/// A line number computed on demand.
#[derive(Clone, Copy)]
struct LazyLine<'a> {
    text: &'a str,
    pos: usize,
}

impl std::fmt::Display for LazyLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let before = &self.text.as_bytes()[..self.pos.min(self.text.len())];
        write!(f, "{}", before.iter().filter(|&&b| b == b'\n').count() + 1)
    }
}

/// Reads an Arbaro XML file into one spec (validated).
pub fn parse(text: &str, file: &str) -> Result<WeberPennSpec, SpecError> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: NODES_LIMIT,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opts).map_err(|e| {
        xml_error(
            file,
            &e,
            "well-formed XML (an Arbaro file has one <species name='...'> holding <param name='...' value='...'/> elements)",
        )
    })?;

    let mut species_names: Vec<&str> = Vec::new();
    let mut params: Vec<RawParam<'_>> = Vec::new();
    for node in doc.descendants().filter(|n| n.is_element()) {
        let line = LazyLine {
            text,
            pos: node.range().start,
        };
        match node.tag_name().name() {
            "species" => match node.attribute("name") {
                Some(name) => species_names.push(name),
                None => {
                    return Err(SpecError::new(
                        file,
                        "species",
                        format!("line {line}: <species> has no name attribute; allowed: <species name='...'>"),
                    ))
                }
            },
            "param" => {
                let Some(name) = node.attribute("name") else {
                    return Err(SpecError::new(
                        file,
                        format!("line {line}"),
                        format!("line {line}: <param> has no name attribute; allowed: <param name='Shape' value='4'/>"),
                    ));
                };
                let Some(value) = node.attribute("value") else {
                    return Err(SpecError::new(
                        file,
                        name,
                        format!("line {line}: <param name='{name}'> has no value attribute; allowed: value='...'"),
                    ));
                };
                params.push(RawParam { name, value, line });
            }
            _ => {}
        }
    }
    if species_names.is_empty() && params.is_empty() {
        return Err(SpecError::new(
            file,
            "species",
            "no <species> or <param> elements: not an Arbaro tree file; allowed: <arbaro><species name='...'><param \
             name='...' value='...'/>...",
        ));
    }

    let mut spec = WeberPennSpec::arbaro_default("default", SpecTool::Arbaro);
    if let Some(name) = species_names.last() {
        spec.species = name.to_string();
    }
    if species_names.len() > 1 {
        spec.notes.push(format!(
            "{} <species> elements; Arbaro keeps the name of the last one ('{}') and reads all params",
            species_names.len(),
            spec.species
        ));
    }

    let mut given: BTreeSet<&str> = BTreeSet::new();
    let mut duplicates: BTreeSet<&str> = BTreeSet::new();
    let mut unknown: Vec<&str> = Vec::new();
    let mut unknown_seen: BTreeSet<&str> = BTreeSet::new();
    let mut attraction_up = 0.0;
    for p in &params {
        if !given.insert(p.name) {
            duplicates.insert(p.name);
        }
        if !apply(&mut spec, &mut attraction_up, p, file)? {
            if unknown_seen.insert(p.name) {
                unknown.push(p.name);
            }
            spec.extras.insert(p.name.to_string(), p.value.to_string());
        }
    }
    spec.level[2].attraction_up = attraction_up;
    spec.level[3].attraction_up = attraction_up;

    if !duplicates.is_empty() {
        let list: Vec<&str> = duplicates.into_iter().collect();
        spec.notes.push(format!(
            "given more than once, the last value is used (as Arbaro does): {}",
            list.join(", ")
        ));
    }
    if !unknown.is_empty() {
        spec.notes.push(format!(
            "not Arbaro parameters (stock Arbaro refuses them), kept in extras: {}",
            unknown.join(", ")
        ));
    }
    let missing = missing_params(&spec, &given);
    if !missing.is_empty() {
        spec.notes
            .push(format!("not given, Arbaro defaults used: {}", missing.join(", ")));
    }
    spec.validate(file)?;
    Ok(spec)
}

/// The params that the spec's Levels uses and the file does not give.
fn missing_params(spec: &WeberPennSpec, given: &BTreeSet<&str>) -> Vec<String> {
    let mut missing: Vec<String> = GENERAL_PARAMS
        .iter()
        .filter(|p| !given.contains(*p))
        .map(|p| p.to_string())
        .collect();
    let stem_levels = spec.levels.clamp(0, 4) as usize;
    let leaf_level = spec.levels.clamp(0, 3) as usize;
    for n in 0..=leaf_level.max(stem_levels.saturating_sub(1)) {
        let mut names: Vec<&str> = LEVEL_ANGLE_PARAMS.to_vec();
        if n < stem_levels {
            names.extend(LEVEL_STEM_PARAMS);
        }
        for p in names {
            let full = format!("{n}{p}");
            if !given.contains(full.as_str()) {
                missing.push(full);
            }
        }
    }
    missing
}

/// Java's `Integer.parseInt`: an optional sign and decimal digits, within 32 bits.
fn java_int(file: &str, p: &RawParam<'_>) -> Result<i64, SpecError> {
    let s = p.value;
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    let ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    match s.parse::<i32>() {
        Ok(v) if ok => Ok(v as i64),
        _ => Err(SpecError::new(
            file,
            p.name,
            format!(
                "line {}: value '{}' is not a plain integer (Arbaro reads {} with Integer.parseInt); allowed: a whole \
                 number such as 3, from {} to {}",
                p.line,
                s,
                p.name,
                i32::MIN,
                i32::MAX
            ),
        )),
    }
}

/// Java's `Double.parseDouble` for the forms Arbaro files use: decimals with an optional
/// exponent (`1.0E-4`), surrounding whitespace, a trailing `d`/`f`, `NaN` and `Infinity` (those
/// two are refused by validation, with the parameter's range).
fn java_double(file: &str, p: &RawParam<'_>) -> Result<f64, SpecError> {
    let t = p.value.trim_matches(|c: char| c <= ' ');
    let t = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    let negative = t.starts_with('-');
    let v = match unsigned {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(if negative { f64::NEG_INFINITY } else { f64::INFINITY }),
        _ => decimal(t),
    };
    v.ok_or_else(|| {
        SpecError::new(
            file,
            p.name,
            format!(
                "line {}: value '{}' is not a number; allowed: a decimal number such as 0.5, -40, 1.0E-4",
                p.line, p.value
            ),
        )
    })
}

/// Sets one parameter; returns false when the name is not an Arbaro parameter.
fn apply(spec: &mut WeberPennSpec, attraction_up: &mut f64, p: &RawParam<'_>, file: &str) -> Result<bool, SpecError> {
    let f = |spec_field: &mut f64| -> Result<(), SpecError> {
        *spec_field = java_double(file, p)?;
        Ok(())
    };
    match p.name {
        "Species" => spec.species = p.value.to_string(),
        "Shape" => spec.shape = java_int(file, p)?,
        "Levels" => spec.levels = java_int(file, p)?,
        "Scale" => f(&mut spec.scale)?,
        "ScaleV" => f(&mut spec.scale_v)?,
        "BaseSize" => f(&mut spec.base_size)?,
        "Ratio" => f(&mut spec.ratio)?,
        "RatioPower" => f(&mut spec.ratio_power)?,
        "Flare" => f(&mut spec.flare)?,
        "Lobes" => spec.lobes = java_int(file, p)?,
        "LobeDepth" => f(&mut spec.lobe_depth)?,
        "Smooth" => f(&mut spec.smooth)?,
        "Leaves" => spec.leaves = java_int(file, p)?,
        "LeafShape" => spec.leaf_shape = p.value.to_string(),
        "LeafScale" => f(&mut spec.leaf_scale)?,
        "LeafScaleX" => f(&mut spec.leaf_scale_x)?,
        "LeafQuality" => f(&mut spec.leaf_quality)?,
        "LeafStemLen" => f(&mut spec.leaf_stem_len)?,
        "LeafDistrib" => spec.leaf_distrib = java_int(file, p)?,
        "LeafBend" => f(&mut spec.leaf_bend)?,
        "AttractionUp" => f(attraction_up)?,
        "PruneRatio" => f(&mut spec.prune_ratio)?,
        "PrunePowerLow" => f(&mut spec.prune_power_low)?,
        "PrunePowerHigh" => f(&mut spec.prune_power_high)?,
        "PruneWidth" => f(&mut spec.prune_width)?,
        "PruneWidthPeak" => f(&mut spec.prune_width_peak)?,
        "0Scale" => f(&mut spec.scale0)?,
        "0ScaleV" => f(&mut spec.scale0_v)?,
        "0BaseSplits" => spec.base_splits = java_int(file, p)?,
        name => {
            let mut chars = name.chars();
            let Some(n) = chars.next().and_then(|c| c.to_digit(10)).filter(|&n| n <= 3) else {
                return Ok(false);
            };
            let level: &mut LevelSpec = &mut spec.level[n as usize];
            match chars.as_str() {
                "DownAngle" => f(&mut level.down_angle)?,
                "DownAngleV" => f(&mut level.down_angle_v)?,
                "Rotate" => f(&mut level.rotate)?,
                "RotateV" => f(&mut level.rotate_v)?,
                "Branches" => level.branches = java_int(file, p)?,
                "BranchDist" => f(&mut level.branch_dist)?,
                "Length" => f(&mut level.length)?,
                "LengthV" => f(&mut level.length_v)?,
                "Taper" => f(&mut level.taper)?,
                "SegSplits" => f(&mut level.seg_splits)?,
                "SplitAngle" => f(&mut level.split_angle)?,
                "SplitAngleV" => f(&mut level.split_angle_v)?,
                "CurveRes" => level.curve_res = java_int(file, p)?,
                "Curve" => f(&mut level.curve)?,
                "CurveBack" => f(&mut level.curve_back)?,
                "CurveV" => f(&mut level.curve_v)?,
                _ => return Ok(false),
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "<?xml version='1.0' ?>\r\n<arbaro>\r\n  <species name=\"t\">\r\n    <!-- c -->\r\n    \
        <param name='Levels' value='2'/>\r\n    <param name=\"1Branches\" value=\"7\"/>\r\n    \
        <param name='AttractionUp' value='-2'/>\r\n    <param name='BarkTexture' value='b.jpg'/>\r\n  \
        </species>\r\n</arbaro>\r\n";

    #[test]
    fn reads_both_quote_styles_crlf_and_unknown_params() {
        let s = parse(SMALL, "small.xml").unwrap();
        assert_eq!(s.species, "t");
        assert_eq!(s.levels, 2);
        assert_eq!(s.level[1].branches, 7);
        assert_eq!(s.level[2].attraction_up, -2.0);
        assert_eq!(s.level[1].attraction_up, 0.0);
        assert_eq!(s.extras.get("BarkTexture").map(String::as_str), Some("b.jpg"));
        assert!(s.notes.iter().any(|n| n.contains("BarkTexture")));
        assert!(s
            .notes
            .iter()
            .any(|n| n.contains("defaults used") && n.contains("Shape")));
        // Defaults for what is missing.
        assert_eq!(s.scale, 10.0);
    }

    #[test]
    fn integer_params_must_be_plain_integers() {
        let xml = SMALL.replace("value='2'", "value='3.0'");
        let e = parse(&xml, "f.xml").unwrap_err();
        assert_eq!(e.parameter, "Levels");
        assert!(
            e.message.contains("integer") && e.message.contains("line 5"),
            "{}",
            e.message
        );
    }

    #[test]
    fn floats_like_java() {
        let xml = SMALL.replace("value='-2'", "value=' 1.0E-4 '");
        assert_eq!(parse(&xml, "f").unwrap().level[3].attraction_up, 1.0e-4);
        let xml = SMALL.replace("value='-2'", "value='1,5'");
        assert_eq!(parse(&xml, "f").unwrap_err().parameter, "AttractionUp");
        let xml = SMALL.replace("value='-2'", "value='NaN'");
        let e = parse(&xml, "f").unwrap_err();
        assert_eq!(e.parameter, "2AttractionUp");
        assert!(e.message.contains("NaN"));
    }

    #[test]
    fn malformed_and_empty() {
        let e = parse(&SMALL[..SMALL.len() / 2], "cut.xml").unwrap_err();
        assert_eq!(e.file, "cut.xml");
        assert!(e.parameter.starts_with("line"), "{e}");
        assert!(parse("<arbaro/>", "e.xml").is_err());
        assert!(parse("<!DOCTYPE x [<!ENTITY a 'b'>]><arbaro/>", "d.xml").is_err());
    }

    #[test]
    fn last_duplicate_wins() {
        let xml = SMALL.replace("<!-- c -->", "<param name='1Branches' value='3'/>");
        let s = parse(&xml, "f").unwrap();
        assert_eq!(s.level[1].branches, 7);
        assert!(s.notes.iter().any(|n| n.contains("more than once")));
    }
}
