//! Helios' Weber-Penn tree library (`<helios><WeberPennTree label=...>`), read as Helios'
//! `WeberPennTree::loadXML` reads it: one species per `WeberPennTree` child of `<helios>`, each
//! parameter the text of a child element (padded with spaces), per-level parameters as one
//! whitespace-separated list of which Helios reads `Levels + 1` values (4 when `Levels` is 4, as
//! Helios does), missing required elements are errors.
//!
//! The library's XML declaration is malformed (`<?xml version=1.0?>`, accepted by pugixml but by
//! no strict parser): the declaration is blanked out before the text goes to roxmltree.

use super::load::{decimal, xml_error};
use super::{SpecError, SpecTool, WeberPennSpec};
use std::borrow::Cow;

/// Most XML nodes one library may have (the 2018 one has about 2000).
const NODES_LIMIT: u32 = 500_000;

/// The scalar elements Helios requires for every tree.
const REQUIRED_SCALARS: [&str; 18] = [
    "Shape",
    "BaseSize",
    "BaseSplits",
    "BaseSplitSize",
    "Scale",
    "ScaleV",
    "ZScale",
    "ZScaleV",
    "Ratio",
    "RatioPower",
    "Lobes",
    "LobeDepth",
    "Flare",
    "Levels",
    "Leaves",
    "LeafFile",
    "LeafScale",
    "LeafScaleX",
];

/// The per-level list elements, in Helios' reading order.
const LISTS: [&str; 15] = [
    "nSegSplits",
    "nSplitAngle",
    "nSplitAngleV",
    "nCurveRes",
    "nCurve",
    "nCurveV",
    "nCurveBack",
    "nLength",
    "nLengthV",
    "nTaper",
    "nDownAngle",
    "nDownAngleV",
    "nRotate",
    "nRotateV",
    "nBranches",
];

/// Optional elements Helios reads (or that current Helios documents), kept in extras.
const OPTIONAL: [&str; 6] = [
    "WoodFile",
    "WoodColor",
    "LeafAngleDist",
    "BaseSizeV",
    "BaseSplitsV",
    "BaseSplitSizeV",
];

/// Blanks out a leading XML declaration (keeping line breaks, so positions stay); returns the
/// text and whether the declaration was not well-formed.
fn strip_declaration(text: &str) -> (Cow<'_, str>, bool) {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    let is_decl = rest.starts_with("<?xml") && rest[5..].starts_with(|c: char| c.is_whitespace() || c == '?');
    if !is_decl {
        return (Cow::Borrowed(text), false);
    }
    let Some(end) = rest.find("?>") else {
        // Unterminated: leave it to the XML parser to report.
        return (Cow::Borrowed(text), false);
    };
    let decl = &rest[..end + 2];
    let well_formed = decl.contains("version=\"") || decl.contains("version='");
    let blank: String = decl.chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..start]);
    out.push_str(&blank);
    out.push_str(&rest[end + 2..]);
    (Cow::Owned(out), !well_formed)
}

/// The text of an element as pugixml's `child_value()` gives it: its first text child.
fn element_text<'a>(node: roxmltree::Node<'a, '_>) -> &'a str {
    node.children()
        .find(|c| c.is_text())
        .and_then(|c| c.text())
        .unwrap_or("")
}

/// Reads a Helios library: every species, each validated.
pub fn parse(text: &str, file: &str) -> Result<Vec<WeberPennSpec>, SpecError> {
    let (repaired, malformed_decl) = strip_declaration(text);
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: NODES_LIMIT,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(&repaired, opts).map_err(|e| {
        xml_error(
            file,
            &e,
            "well-formed XML (a Helios library has a <helios> root holding <WeberPennTree label='...'> elements)",
        )
    })?;
    let root = doc.root_element();
    if root.tag_name().name() != "helios" {
        return Err(SpecError::new(
            file,
            "helios",
            format!(
                "the root element is <{}>; allowed: a Helios library has the root <helios>",
                root.tag_name().name()
            ),
        ));
    }

    let mut species: Vec<WeberPennSpec> = Vec::new();
    for tree in root.children().filter(|n| n.has_tag_name("WeberPennTree")) {
        let line = || doc.text_pos_at(tree.range().start).row;
        let Some(label) = tree.attribute("label").filter(|l| !l.is_empty()) else {
            return Err(SpecError::new(
                file,
                "WeberPennTree",
                format!(
                    "line {}: <WeberPennTree> has no label; allowed: <WeberPennTree label=\"Almond\">",
                    line()
                ),
            ));
        };
        let mut spec = read_tree(&doc, tree, label, file)?;
        if malformed_decl {
            spec.notes.push(
                "the XML declaration is malformed (unquoted version, as Helios writes it; pugixml accepts it) and was \
                 ignored"
                    .to_string(),
            );
        }
        spec.validate(file)?;
        match species.iter_mut().find(|s| s.species == label) {
            Some(earlier) => {
                spec.notes.push(format!(
                    "'{label}' is defined more than once; the last definition is used, as Helios does"
                ));
                *earlier = spec;
            }
            None => species.push(spec),
        }
    }
    if species.is_empty() {
        return Err(SpecError::new(
            file,
            "WeberPennTree",
            "no <WeberPennTree> elements in <helios> (commented-out ones do not count); allowed: one or more \
             <WeberPennTree label='...'> elements",
        ));
    }
    Ok(species)
}

/// One `<WeberPennTree>`.
fn read_tree(
    doc: &roxmltree::Document<'_>,
    tree: roxmltree::Node<'_, '_>,
    label: &str,
    file: &str,
) -> Result<WeberPennSpec, SpecError> {
    let tree_line = || doc.text_pos_at(tree.range().start).row;
    let child = |name: &str| tree.children().find(|n| n.has_tag_name(name));
    let line_of = |node: roxmltree::Node<'_, '_>| doc.text_pos_at(node.range().start).row;
    let err = |param: &str, line: u32, msg: String| {
        SpecError::new(file, param, format!("tree '{label}', line {line}: {msg}"))
    };
    // The trimmed text of a required element.
    let required = |name: &str| -> Result<(&str, roxmltree::Node<'_, '_>), SpecError> {
        match child(name) {
            Some(node) => {
                let t = element_text(node).trim();
                if t.is_empty() {
                    Err(err(
                        name,
                        line_of(node),
                        format!("<{name}> is empty; allowed: a value (Helios requires one)"),
                    ))
                } else {
                    Ok((t, node))
                }
            }
            None => Err(err(
                name,
                tree_line(),
                format!("<{name}> is missing; allowed: Helios requires <{name}> in every tree"),
            )),
        }
    };
    let real = |name: &str| -> Result<f64, SpecError> {
        let (t, node) = required(name)?;
        decimal(t).ok_or_else(|| {
            err(
                name,
                line_of(node),
                format!("'{t}' is not a number; allowed: a decimal such as 0.35 or 1."),
            )
        })
    };
    let int = |name: &str| -> Result<i64, SpecError> {
        let (t, node) = required(name)?;
        helios_int(t).ok_or_else(|| {
            err(
                name,
                line_of(node),
                format!("'{t}' is not a whole number; allowed: an integer such as 3 (Helios reads it with atoi)"),
            )
        })
    };

    let mut spec = WeberPennSpec::arbaro_default(label, SpecTool::Helios);
    spec.shape = int("Shape")?;
    spec.base_size = real("BaseSize")?;
    spec.base_splits = int("BaseSplits")?;
    spec.base_split_size = Some(real("BaseSplitSize")?);
    spec.scale = real("Scale")?;
    spec.scale_v = real("ScaleV")?;
    spec.z_scale = real("ZScale")?;
    spec.z_scale_v = real("ZScaleV")?;
    if spec.z_scale == 0.0 {
        spec.notes.push(
            "ZScale 0: Helios multiplies the trunk radius by it (a trunk and branches of radius 0, no wood drawn); \
             Sylva grows the wood as with ZScale 1"
                .to_string(),
        );
    }
    spec.ratio = real("Ratio")?;
    spec.ratio_power = real("RatioPower")?;
    spec.lobes = int("Lobes")?;
    spec.lobe_depth = real("LobeDepth")?;
    spec.flare = real("Flare")?;
    spec.levels = int("Levels")?;
    spec.leaves = int("Leaves")?;
    spec.extras
        .insert("LeafFile".to_string(), required("LeafFile")?.0.to_string());
    spec.leaf_scale = real("LeafScale")?;
    spec.leaf_scale_x = real("LeafScaleX")?;

    // Helios reads Levels + 1 values of each list, and 4 when Levels is 4 (levels 0..3).
    let count = (spec.levels.clamp(0, 3) + 1) as usize;
    let mut extra_values: Vec<String> = Vec::new();
    for name in LISTS {
        let (t, node) = required(name)?;
        let tokens: Vec<&str> = t.split_whitespace().take(count + 1).collect();
        let total = t.split_whitespace().count();
        if tokens.len() < count {
            return Err(err(
                name,
                line_of(node),
                format!(
                    "{} value(s) given; allowed: at least Levels + 1 = {count} (Helios reads one per level 0..{})",
                    tokens.len(),
                    count - 1
                ),
            ));
        }
        if total > count {
            extra_values.push(format!("{name} ({total} values)"));
        }
        for (n, tok) in tokens.iter().take(count).enumerate() {
            let bad = || {
                err(
                    name,
                    line_of(node),
                    format!(
                        "value {} ('{tok}') is not a number; allowed: numbers separated by spaces",
                        n + 1
                    ),
                )
            };
            let level = &mut spec.level[n];
            match name {
                "nCurveRes" => level.curve_res = helios_int(tok).ok_or_else(bad)?,
                "nBranches" => level.branches = helios_int(tok).ok_or_else(bad)?,
                _ => {
                    let v = decimal(tok).ok_or_else(bad)?;
                    let slot = match name {
                        "nSegSplits" => &mut level.seg_splits,
                        "nSplitAngle" => &mut level.split_angle,
                        "nSplitAngleV" => &mut level.split_angle_v,
                        "nCurve" => &mut level.curve,
                        "nCurveV" => &mut level.curve_v,
                        "nCurveBack" => &mut level.curve_back,
                        "nLength" => &mut level.length,
                        "nLengthV" => &mut level.length_v,
                        "nTaper" => &mut level.taper,
                        "nDownAngle" => &mut level.down_angle,
                        "nDownAngleV" => &mut level.down_angle_v,
                        "nRotate" => &mut level.rotate,
                        _ => &mut level.rotate_v,
                    };
                    *slot = v;
                }
            }
        }
    }
    if !extra_values.is_empty() {
        spec.notes.push(format!(
            "Helios reads {count} value(s) per list (Levels + 1, at most 4); extra values ignored in: {}",
            extra_values.join(", ")
        ));
    }
    if spec.level[0].branches != 1 {
        spec.notes.push(format!(
            "nBranches[0] = {} is not used by Helios (one trunk; the trunk's children come from nBranches[1]); level \
             0 branches set to 1",
            spec.level[0].branches
        ));
    }
    spec.level[0].branches = 1;
    // Helios grows the trunk straight up (`WeberPennTree::buildTree` starts it at theta = 1e-5,
    // never reading nDownAngle[0] or nDownAngleV[0]), where Arbaro's semantics would tilt it.
    if spec.level[0].down_angle != 0.0 || spec.level[0].down_angle_v != 0.0 {
        spec.extras.insert(
            "nDownAngle[0]".into(),
            format!("{} {}", spec.level[0].down_angle, spec.level[0].down_angle_v),
        );
        spec.notes.push(format!(
            "nDownAngle[0] = {}, nDownAngleV[0] = {} are not used by Helios (the trunk starts vertical): level 0 \
             down angle set to 0",
            spec.level[0].down_angle, spec.level[0].down_angle_v
        ));
        spec.level[0].down_angle = 0.0;
        spec.level[0].down_angle_v = 0.0;
    }
    if spec.levels == 4 {
        spec.notes.push(
            "Levels 4: written for the 2018 Helios, which read 4 values per list; current Helios accepts only Levels \
             1..3"
                .to_string(),
        );
    }
    if spec.shape == 8 {
        spec.notes.push(
            "Shape 8: Helios documents shapes 0..7; its code returns a ratio of 0 for 8 (no first-level branches), \
             Sylva reads it as Arbaro's envelope"
                .to_string(),
        );
    }

    for name in OPTIONAL {
        if let Some(node) = child(name) {
            let t = element_text(node).split_whitespace().collect::<Vec<_>>().join(" ");
            if name == "LeafAngleDist" && !t.is_empty() {
                check_leaf_angle_dist(&t, &mut spec, |msg| err(name, line_of(node), msg))?;
            }
            spec.extras.insert(name.to_string(), t);
        }
    }
    let mut unknown: Vec<&str> = Vec::new();
    let mut unknown_seen = std::collections::BTreeSet::new();
    for node in tree.children().filter(|n| n.is_element()) {
        let name = node.tag_name().name();
        if REQUIRED_SCALARS.contains(&name) || LISTS.contains(&name) || OPTIONAL.contains(&name) {
            continue;
        }
        if unknown_seen.insert(name) {
            unknown.push(name);
            let t = element_text(node).split_whitespace().collect::<Vec<_>>().join(" ");
            spec.extras.insert(name.to_string(), t);
        }
    }
    if !unknown.is_empty() {
        spec.notes.push(format!(
            "elements Helios does not read, kept in extras: {}",
            unknown.join(", ")
        ));
    }
    spec.notes.push(
        "Helios library: LeafFile/WoodFile/WoodColor kept in extras; parameters Helios lacks (0Scale, AttractionUp, \
         Prune*, LeafBend, LeafStemLen, LeafDistrib, nBranchDist) take Arbaro's defaults"
            .to_string(),
    );
    Ok(spec)
}

/// `atoi` on a whole number; a decimal with no fraction ("3." or "3.0") is accepted as well.
fn helios_int(t: &str) -> Option<i64> {
    if let Ok(v) = t.parse::<i64>() {
        return Some(v);
    }
    let v = decimal(t)?;
    (v.fract() == 0.0 && v.abs() < 9.0e15).then_some(v as i64)
}

/// A leaf angle density must be numbers; Helios ignores one that does not integrate to 1.
fn check_leaf_angle_dist(
    t: &str,
    spec: &mut WeberPennSpec,
    err: impl Fn(String) -> SpecError,
) -> Result<(), SpecError> {
    let mut values = Vec::new();
    for tok in t.split_whitespace() {
        match decimal(tok) {
            Some(v) if v.is_finite() => values.push(v),
            _ => {
                return Err(err(format!(
                    "'{tok}' is not a number; allowed: a density per bin, numbers separated by spaces"
                )))
            }
        }
    }
    let integral: f64 = values.iter().sum::<f64>() * std::f64::consts::PI / values.len() as f64;
    if (integral - 1.0).abs() > 0.001 {
        spec.notes.push(format!(
            "LeafAngleDist integrates to {integral:.4}, not 1: Helios ignores it and assumes isotropic leaves"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(label: &str, levels: &str, extra: &str) -> String {
        format!(
            "<WeberPennTree label=\"{label}\">\n<Shape> 6 </Shape><BaseSize> 0.35 </BaseSize><BaseSplits> 3 </BaseSplits>\
             <BaseSplitSize> 0.2 </BaseSplitSize><Scale> 6 </Scale><ScaleV> 0 </ScaleV><ZScale> 1 </ZScale>\
             <ZScaleV> 0 </ZScaleV><Ratio> 0.0225 </Ratio><RatioPower> 1. </RatioPower><Lobes> 5 </Lobes>\
             <LobeDepth> 0.1 </LobeDepth><Flare> 0.75 </Flare><Levels> {levels} </Levels>\
             <nSegSplits>0 0 0 0</nSegSplits><nSplitAngle>50 0 0 0</nSplitAngle><nSplitAngleV>5 0 0 0</nSplitAngleV>\
             <nCurveRes>8 6 6 5</nCurveRes><nCurve> -85 45 -60 0</nCurve><nCurveV>5 5 5 0</nCurveV>\
             <nCurveBack>0 -0 -0 0</nCurveBack><nLength>1 0.65 0.55 0.3</nLength><nLengthV>0 0 0.1 0</nLengthV>\
             <nTaper>1 1 1 1</nTaper><nDownAngle>0 -60 55 130</nDownAngle><nDownAngleV>0 5 5 5</nDownAngleV>\
             <nRotate>80 80 80 140 7</nRotate><nRotateV>0 20 20 10</nRotateV><nBranches>40 34 25 20</nBranches>\
             <Leaves> 20 </Leaves><LeafFile> a.png </LeafFile><LeafScale> 0.1 </LeafScale>\
             <LeafScaleX> 0.25 </LeafScaleX><WoodFile> w.jpg </WoodFile>{extra}\n</WeberPennTree>\n"
        )
    }

    fn library(trees: &str) -> String {
        format!("<?xml version=1.0?>\n\n<helios>\n{trees}<!-- <WeberPennTree label=\"\"> -->\n</helios>\n")
    }

    #[test]
    fn reads_a_library_with_the_malformed_declaration() {
        let text = library(&(tree("A", "3", "") + &tree("B", "2", "")));
        let specs = parse(&text, "lib.xml").unwrap();
        assert_eq!(specs.len(), 2);
        let a = &specs[0];
        assert_eq!(a.species, "A");
        assert_eq!(a.ratio_power, 1.0);
        assert_eq!(a.level[1].down_angle, -60.0);
        assert_eq!(a.level[0].branches, 1);
        assert_eq!(a.base_split_size, Some(0.2));
        assert_eq!(a.extras["LeafFile"], "a.png");
        assert!(a.notes.iter().any(|n| n.contains("declaration")));
        assert!(a.notes.iter().any(|n| n.contains("nRotate (5 values)")));
        // Levels 2: three values read, level 3 keeps the defaults.
        assert_eq!(specs[1].level[3].rotate, 120.0);
        assert_eq!(specs[1].level[2].rotate, 80.0);
    }

    #[test]
    fn errors_name_tree_and_element() {
        let text =
            library(&tree("A", "3", "").replace("<nLength>1 0.65 0.55 0.3</nLength>", "<nLength>1 0.65</nLength>"));
        let e = parse(&text, "lib.xml").unwrap_err();
        assert_eq!(e.parameter, "nLength");
        assert!(
            e.message.contains("'A'") && e.message.contains("Levels + 1 = 4"),
            "{}",
            e.message
        );
        let text = library(&tree("A", "3", "").replace("<Scale> 6 </Scale>", ""));
        assert_eq!(parse(&text, "lib.xml").unwrap_err().parameter, "Scale");
        let text = library(&tree("A", "3.5", ""));
        assert_eq!(parse(&text, "lib.xml").unwrap_err().parameter, "Levels");
        assert!(parse("<?xml version=1.0?><helios></helios>", "e.xml").is_err());
        assert!(parse("<?xml version=1.0?><other/>", "e.xml").is_err());
    }

    #[test]
    fn levels_four_reads_four_values() {
        let specs = parse(&library(&tree("Q", "4", "")), "lib.xml").unwrap();
        assert_eq!(specs[0].levels, 4);
        assert_eq!(specs[0].level[3].rotate, 140.0);
        assert!(specs[0].notes.iter().any(|n| n.contains("Levels 4")));
    }

    #[test]
    fn leaf_angle_dist_and_unknown_elements() {
        let extra = "<LeafAngleDist>0.2 0.3 x</LeafAngleDist>";
        let e = parse(&library(&tree("A", "3", extra)), "lib.xml").unwrap_err();
        assert_eq!(e.parameter, "LeafAngleDist");
        let specs = parse(&library(&tree("A", "3", "<Foo> 1 </Foo>")), "lib.xml").unwrap();
        assert_eq!(specs[0].extras["Foo"], "1");
    }
}
