//! Sylva's own spec format: readable `key = value` lines modelled on Arbaro's plain-text form.
//!
//! ```text
//! # Sylva tree spec
//! format = 1
//! species = black_tupelo
//! origin = arbaro
//! conical = pure
//! negative_rotate = alternate-180
//! down_angle_v = paper
//! # note: not given, Arbaro defaults used: Smooth
//! Shape = 4
//! Levels = 4
//! ...
//! 0Length = 1
//! ...
//! extra.BarkTexture = bark0007.jpg
//! ```
//!
//! Lines starting with `#` are comments (`# note: ...` lines become the spec's notes); blank lines
//! are ignored. Parameters use Arbaro's names; per-level ones are `nName` for n = 0..3, including
//! Sylva's `nBaseSize`, `nAttractionUp`, `nForkArea`, `nForkPush`. Floats are written in Rust's
//! shortest round-trip form, so `parse(write(s))` gives `s` back exactly (notes aside). Strings
//! that would not survive unquoted (empty, padded, with control characters or a leading `"`)
//! are written in double quotes with `\\`, `\"`, `\n`, `\r`, `\t`, `\u{...}` escapes.

use super::load::decimal;
use super::{Conical, DownAngleV, NegativeRotate, Semantics, SpecError, SpecTool, WeberPennSpec};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The first line of a Sylva spec file.
pub const HEADER: &str = "# Sylva tree spec";
/// The format version this module writes and reads.
pub const FORMAT: i64 = 1;

/// A typed place in a spec.
enum Slot<'a> {
    F(&'a mut f64),
    I(&'a mut i64),
    S(&'a mut String),
    OptI(&'a mut Option<i64>),
    OptF(&'a mut Option<f64>),
    OptF4(&'a mut Option<[f64; 4]>),
    /// A colour: three numbers in 0..=1 (linear RGB).
    OptColour(&'a mut Option<[f64; 3]>),
}

/// Every parameter of a spec with its Sylva name, in the order they are written.
fn slots(s: &mut WeberPennSpec) -> Vec<(String, Slot<'_>)> {
    use Slot::*;
    let mut v: Vec<(String, Slot<'_>)> = vec![
        ("Shape".into(), I(&mut s.shape)),
        ("ShapeDeep".into(), OptI(&mut s.shape_deep)),
        ("CustomShape".into(), OptF4(&mut s.custom_shape)),
        ("Levels".into(), I(&mut s.levels)),
        ("Scale".into(), F(&mut s.scale)),
        ("ScaleV".into(), F(&mut s.scale_v)),
        ("ZScale".into(), F(&mut s.z_scale)),
        ("ZScaleV".into(), F(&mut s.z_scale_v)),
        ("BaseSize".into(), F(&mut s.base_size)),
        ("Ratio".into(), F(&mut s.ratio)),
        ("RatioPower".into(), F(&mut s.ratio_power)),
        ("Flare".into(), F(&mut s.flare)),
        ("Lobes".into(), I(&mut s.lobes)),
        ("LobeDepth".into(), F(&mut s.lobe_depth)),
        ("Smooth".into(), F(&mut s.smooth)),
        ("Leaves".into(), I(&mut s.leaves)),
        ("LeafShape".into(), S(&mut s.leaf_shape)),
        ("LeafColor".into(), OptColour(&mut s.leaf_color)),
        ("BarkColor".into(), OptColour(&mut s.bark_color)),
        ("LeafScale".into(), F(&mut s.leaf_scale)),
        ("LeafScaleX".into(), F(&mut s.leaf_scale_x)),
        ("LeafQuality".into(), F(&mut s.leaf_quality)),
        ("LeafStemLen".into(), F(&mut s.leaf_stem_len)),
        ("LeafDistrib".into(), I(&mut s.leaf_distrib)),
        ("LeafBend".into(), F(&mut s.leaf_bend)),
        ("PruneRatio".into(), F(&mut s.prune_ratio)),
        ("PrunePowerLow".into(), F(&mut s.prune_power_low)),
        ("PrunePowerHigh".into(), F(&mut s.prune_power_high)),
        ("PruneWidth".into(), F(&mut s.prune_width)),
        ("PruneWidthPeak".into(), F(&mut s.prune_width_peak)),
        ("0Scale".into(), F(&mut s.scale0)),
        ("0ScaleV".into(), F(&mut s.scale0_v)),
        ("0BaseSplits".into(), I(&mut s.base_splits)),
        ("BaseSplitSize".into(), OptF(&mut s.base_split_size)),
        ("CollisionFree".into(), OptI(&mut s.collision_free)),
    ];
    for (n, l) in s.level.iter_mut().enumerate() {
        let level: Vec<(&str, Slot<'_>)> = vec![
            ("DownAngle", F(&mut l.down_angle)),
            ("DownAngleV", F(&mut l.down_angle_v)),
            ("Rotate", F(&mut l.rotate)),
            ("RotateV", F(&mut l.rotate_v)),
            ("Branches", I(&mut l.branches)),
            ("BranchDist", F(&mut l.branch_dist)),
            ("Length", F(&mut l.length)),
            ("LengthV", F(&mut l.length_v)),
            ("Taper", F(&mut l.taper)),
            ("SegSplits", F(&mut l.seg_splits)),
            ("SplitAngle", F(&mut l.split_angle)),
            ("SplitAngleV", F(&mut l.split_angle_v)),
            ("CurveRes", I(&mut l.curve_res)),
            ("Curve", F(&mut l.curve)),
            ("CurveBack", F(&mut l.curve_back)),
            ("CurveV", F(&mut l.curve_v)),
            ("BaseSize", F(&mut l.base_size)),
            ("AttractionUp", F(&mut l.attraction_up)),
            ("ForkArea", F(&mut l.fork_area)),
            ("ForkPush", F(&mut l.fork_push)),
        ];
        v.extend(level.into_iter().map(|(name, slot)| (format!("{n}{name}"), slot)));
    }
    v
}

fn conical_name(c: Conical) -> &'static str {
    match c {
        Conical::Pure => "pure",
        Conical::Paper => "paper",
        Conical::Sapling => "sapling",
    }
}

fn rotate_name(r: NegativeRotate) -> &'static str {
    match r {
        NegativeRotate::Alternate180 => "alternate-180",
        NegativeRotate::AlternateAbs => "alternate-abs",
        NegativeRotate::Plain => "plain",
    }
}

fn down_angle_v_name(d: DownAngleV) -> &'static str {
    match d {
        DownAngleV::Paper => "paper",
        DownAngleV::SaplingReversed => "sapling-reversed",
        DownAngleV::Random => "random",
    }
}

/// Whether a string needs quotes to survive a round trip (`is_key`: also `=` and spaces).
fn needs_quotes(s: &str, is_key: bool) -> bool {
    s.is_empty()
        || s.trim() != s
        || s.starts_with('"')
        || s.chars().any(char::is_control)
        || (is_key && s.chars().any(|c| c == '=' || c.is_whitespace()))
}

fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn string_value(s: &str) -> String {
    if needs_quotes(s, false) {
        quoted(s)
    } else {
        s.to_string()
    }
}

/// Writes a spec in Sylva's format.
pub fn write(spec: &WeberPennSpec) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(HEADER.to_string());
    line(format!("format = {FORMAT}"));
    line(format!("species = {}", string_value(&spec.species)));
    line(format!("origin = {}", spec.origin.name()));
    line(format!("conical = {}", conical_name(spec.semantics.conical)));
    line(format!(
        "negative_rotate = {}",
        rotate_name(spec.semantics.negative_rotate)
    ));
    line(format!(
        "down_angle_v = {}",
        down_angle_v_name(spec.semantics.down_angle_v)
    ));
    for note in &spec.notes {
        let one_line: String = note.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        line(format!("# note: {one_line}"));
    }
    line(String::new());
    line("# general parameters".to_string());
    let mut copy = spec.clone();
    for (name, slot) in slots(&mut copy) {
        if name.starts_with(|c: char| c.is_ascii_digit()) && name[1..] == *"DownAngle" {
            line(String::new());
            line(format!("# level {}", &name[..1]));
        }
        let value = match slot {
            Slot::F(v) => v.to_string(),
            Slot::I(v) => v.to_string(),
            Slot::S(v) => string_value(v),
            Slot::OptI(v) => match v {
                Some(i) => i.to_string(),
                None => continue,
            },
            Slot::OptF(v) => match v {
                Some(f) => f.to_string(),
                None => continue,
            },
            Slot::OptF4(v) => match v {
                Some(a) => a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" "),
                None => continue,
            },
            Slot::OptColour(v) => match v {
                Some(a) => a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" "),
                None => continue,
            },
        };
        line(format!("{name} = {value}"));
    }
    if !spec.extras.is_empty() {
        line(String::new());
        line("# kept from the source file, not used for geometry".to_string());
        for (k, v) in &spec.extras {
            let key = if needs_quotes(k, true) { quoted(k) } else { k.clone() };
            line(format!("extra.{key} = {}", string_value(v)));
        }
    }
    out
}

/// Reads a double-quoted string at the start of `s`; returns it and the rest after the quote.
fn unquote(s: &str) -> Result<(String, &str), String> {
    let mut chars = s.char_indices();
    if chars.next().map(|(_, c)| c) != Some('"') {
        return Err("expected '\"'".to_string());
    }
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &s[i + 1..])),
            '\\' => match chars.next().map(|(_, e)| e) {
                Some('\\') => out.push('\\'),
                Some('"') => out.push('"'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('t') => out.push('\t'),
                Some('u') => {
                    let rest = &s[i + 2..];
                    let body = rest
                        .strip_prefix('{')
                        .and_then(|r| r.find('}').map(|end| &r[..end]))
                        .filter(|h| !h.is_empty() && h.len() <= 6)
                        .ok_or("a \\u escape is written \\u{hex}")?;
                    let ch = u32::from_str_radix(body, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| format!("\\u{{{body}}} is not a character"))?;
                    out.push(ch);
                    // Skip '{', the digits and '}'.
                    for _ in 0..body.len() + 2 {
                        chars.next();
                    }
                }
                Some(e) => {
                    return Err(format!(
                        "unknown escape '\\{}'; allowed: \\\\ \\\" \\n \\r \\t \\u{{hex}}",
                        e.escape_debug()
                    ))
                }
                None => return Err("the string ends with a lone '\\'".to_string()),
            },
            c => out.push(c),
        }
    }
    Err("unterminated string: no closing '\"'; allowed: a string in double quotes".to_string())
}

/// A string value: quoted, or the text as it is.
fn parse_string(v: &str) -> Result<String, String> {
    if v.starts_with('"') {
        let (s, rest) = unquote(v)?;
        if !rest.trim().is_empty() {
            return Err(format!(
                "unexpected text after the closing quote: '{}'; allowed: nothing after a quoted string",
                rest.trim()
            ));
        }
        Ok(s)
    } else {
        Ok(v.to_string())
    }
}

fn parse_int(v: &str) -> Result<i64, String> {
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{v}' is not an integer; allowed: a whole number such as 3"));
    }
    v.parse::<i64>().map_err(|_| {
        format!(
            "'{v}' is out of range; allowed: a whole number from {} to {}",
            i64::MIN,
            i64::MAX
        )
    })
}

fn parse_float(v: &str) -> Result<f64, String> {
    decimal(v).ok_or_else(|| format!("'{v}' is not a number; allowed: a decimal number such as 0.5, -40 or 1e-4"))
}

/// Reads a Sylva spec (validated).
pub fn parse(text: &str, file: &str) -> Result<WeberPennSpec, SpecError> {
    let mut spec = WeberPennSpec::arbaro_default("default", SpecTool::Sylva);
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut notes: Vec<String> = Vec::new();
    let mut format: Option<i64> = None;
    let mut semantics: [Option<String>; 3] = [None, None, None];
    // Parameters are collected first and applied once the origin is known.
    let mut params: Vec<(usize, String, String)> = Vec::new();

    for (i, raw) in text.split('\n').enumerate() {
        let line_no = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(note) = comment.strip_prefix(" note: ") {
                notes.push(note.to_string());
            }
            continue;
        }
        let err = |param: &str, msg: String| SpecError::new(file, param, format!("line {line_no}: {msg}"));
        // The key: `extra."quoted key"` or the text before the first '='.
        let (key, rest) = if line.starts_with("extra.\"") {
            let (k, rest) = unquote(&line["extra.".len()..])
                .map_err(|m| err(&format!("line {line_no}"), format!("extra key: {m}")))?;
            (format!("extra.{k}"), rest.trim_start())
        } else {
            match line.find('=') {
                Some(eq) => (line[..eq].trim().to_string(), &line[eq..]),
                None => {
                    return Err(err(
                        &format!("line {line_no}"),
                        format!("'{line}' is not a 'key = value' line; allowed: key = value, # comments, blank lines"),
                    ))
                }
            }
        };
        let Some(value) = rest.strip_prefix('=') else {
            return Err(err(&key, format!("no '=' after the key '{key}'; allowed: key = value")));
        };
        let value = value.trim();
        if !seen.insert(key.clone()) {
            return Err(err(&key, format!("'{key}' is given twice; allowed: each key once")));
        }
        match key.as_str() {
            "format" => format = Some(parse_int(value).map_err(|m| err("format", m))?),
            "species" => spec.species = parse_string(value).map_err(|m| err("species", m))?,
            "origin" => {
                spec.origin = SpecTool::from_name(value).ok_or_else(|| {
                    err(
                        "origin",
                        format!(
                            "unknown tool '{value}'; allowed: arbaro, sapling-0.2, sapling-0.3, sapling-4, tree-gen, \
                             helios, sylva"
                        ),
                    )
                })?
            }
            "conical" => semantics[0] = Some(value.to_string()),
            "negative_rotate" => semantics[1] = Some(value.to_string()),
            "down_angle_v" => semantics[2] = Some(value.to_string()),
            k if k.starts_with("extra.") => {
                let name = k["extra.".len()..].to_string();
                let v = parse_string(value).map_err(|m| err(k, m))?;
                spec.extras.insert(name, v);
            }
            _ => params.push((line_no, key, value.to_string())),
        }
    }

    match format {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(SpecError::new(
                file,
                "format",
                format!("format {other} is not known to this Sylva; allowed: format = {FORMAT}"),
            ))
        }
        None => {
            return Err(SpecError::new(
                file,
                "format",
                format!("no 'format' line; allowed: a Sylva spec has 'format = {FORMAT}' after its header"),
            ))
        }
    }

    let default_semantics = Semantics::of(spec.origin, false);
    spec.semantics = Semantics {
        conical: match semantics[0].as_deref() {
            None => default_semantics.conical,
            Some("pure") => Conical::Pure,
            Some("paper") => Conical::Paper,
            Some("sapling") => Conical::Sapling,
            Some(v) => return Err(bad_choice(file, "conical", v, "pure, paper, sapling")),
        },
        negative_rotate: match semantics[1].as_deref() {
            None => default_semantics.negative_rotate,
            Some("alternate-180") => NegativeRotate::Alternate180,
            Some("alternate-abs") => NegativeRotate::AlternateAbs,
            Some("plain") => NegativeRotate::Plain,
            Some(v) => {
                return Err(bad_choice(
                    file,
                    "negative_rotate",
                    v,
                    "alternate-180, alternate-abs, plain",
                ))
            }
        },
        down_angle_v: match semantics[2].as_deref() {
            None => default_semantics.down_angle_v,
            Some("paper") => DownAngleV::Paper,
            Some("sapling-reversed") => DownAngleV::SaplingReversed,
            Some("random") => DownAngleV::Random,
            Some(v) => return Err(bad_choice(file, "down_angle_v", v, "paper, sapling-reversed, random")),
        },
    };

    let mut missing = Vec::new();
    {
        let mut slots = slots(&mut spec);
        for (line_no, key, value) in &params {
            let err = |msg: String| SpecError::new(file, key.as_str(), format!("line {line_no}: {key}: {msg}"));
            let Some((_, slot)) = slots.iter_mut().find(|(name, _)| name == key) else {
                return Err(SpecError::new(
                    file,
                    key.as_str(),
                    format!(
                        "line {line_no}: unknown key '{key}'; allowed: format, species, origin, conical, \
                         negative_rotate, down_angle_v, Arbaro's parameter names (Shape, Levels, Scale, ..., \
                         0Length, 1Branches, ...), ShapeDeep, CustomShape, BaseSplitSize, nBaseSize, nAttractionUp, \
                         nForkArea, nForkPush and extra.<name>"
                    ),
                ));
            };
            match slot {
                Slot::F(v) => **v = parse_float(value).map_err(err)?,
                Slot::I(v) => **v = parse_int(value).map_err(err)?,
                Slot::S(v) => **v = parse_string(value).map_err(err)?,
                Slot::OptI(v) => **v = Some(parse_int(value).map_err(err)?),
                Slot::OptF(v) => **v = Some(parse_float(value).map_err(err)?),
                Slot::OptF4(v) => {
                    let parts: Vec<&str> = value.split_whitespace().collect();
                    if parts.len() != 4 {
                        return Err(err(format!(
                            "{} values; allowed: 4 numbers (base, middle, middle position, top)",
                            parts.len()
                        )));
                    }
                    let mut a = [0.0; 4];
                    for (i, p) in parts.iter().enumerate() {
                        a[i] = parse_float(p).map_err(err)?;
                    }
                    **v = Some(a);
                }
                Slot::OptColour(v) => {
                    let parts: Vec<&str> = value.split_whitespace().collect();
                    if parts.len() != 3 {
                        return Err(err(format!(
                            "{} values; allowed: 3 numbers in 0..=1 (linear red, green, blue)",
                            parts.len()
                        )));
                    }
                    let mut a = [0.0; 3];
                    for (i, p) in parts.iter().enumerate() {
                        a[i] = parse_float(p).map_err(err)?;
                        if !(0.0..=1.0).contains(&a[i]) {
                            return Err(err(format!("{} is out of range; allowed 0..=1", a[i])));
                        }
                    }
                    **v = Some(a);
                }
            }
        }
        for (name, slot) in &slots {
            let optional = matches!(
                slot,
                Slot::OptI(_) | Slot::OptF(_) | Slot::OptF4(_) | Slot::OptColour(_)
            );
            if !optional && !seen.contains(name) {
                missing.push(name.clone());
            }
        }
    }
    if !seen.contains("species") {
        missing.insert(0, "species".to_string());
    }
    if !seen.contains("origin") {
        missing.insert(0, "origin".to_string());
    }
    if !missing.is_empty() {
        notes.push(format!("not given, Arbaro defaults used: {}", missing.join(", ")));
    }
    spec.notes = notes;
    spec.validate(file)?;
    Ok(spec)
}

fn bad_choice(file: &str, key: &str, value: &str, allowed: &str) -> SpecError {
    SpecError::new(file, key, format!("{key} = '{value}' is not known; allowed: {allowed}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn without_notes(mut s: WeberPennSpec) -> WeberPennSpec {
        s.notes.clear();
        s
    }

    #[test]
    fn round_trip_default_and_odd_values() {
        let mut s = WeberPennSpec::arbaro_default("Small Pine", SpecTool::SaplingV03);
        s.semantics = Semantics::of(SpecTool::SaplingV03, true);
        s.shape = 10;
        s.shape_deep = Some(4);
        s.custom_shape = Some([0.5, 1.0, 0.30000001192092896, 0.5]);
        s.base_split_size = Some(0.2);
        s.scale = 0.1 + 0.2;
        s.level[1].curve = -0.0;
        s.level[2].down_angle_v = 1e-7;
        s.leaf_shape = " padded \"x\"\n".to_string();
        s.extras.insert("rMode".into(), "'rotate'".into());
        s.extras.insert("odd key=\t".into(), "".into());
        s.notes.push("a note\nover two lines".into());
        let text = write(&s);
        assert!(text.starts_with(HEADER));
        let back = parse(&text, "x.sylva").unwrap();
        assert_eq!(back.notes, vec!["a note over two lines".to_string()]);
        assert_eq!(without_notes(back), without_notes(s));
    }

    #[test]
    fn errors_name_key_and_line() {
        let text = write(&WeberPennSpec::arbaro_default("t", SpecTool::Sylva));
        let bad = text.replace("Levels = 3", "Levles = 3");
        let e = parse(&bad, "t.sylva").unwrap_err();
        assert_eq!(e.parameter, "Levles");
        assert!(
            e.message.contains("unknown key") && e.message.contains("line "),
            "{}",
            e.message
        );
        let e = parse(&text.replace("Levels = 3", "Levels = 3.0"), "t").unwrap_err();
        assert_eq!(e.parameter, "Levels");
        let e = parse(&text.replace("0Length = 1", "0Length = -1"), "t").unwrap_err();
        assert_eq!(e.parameter, "0Length");
        let e = parse(&text.replace("format = 1", "format = 2"), "t").unwrap_err();
        assert_eq!(e.parameter, "format");
        let e = parse(&(text.clone() + "Scale = 3\n"), "t").unwrap_err();
        assert!(e.message.contains("twice"));
        let e = parse(&text.replace("origin = sylva", "origin = blender"), "t").unwrap_err();
        assert_eq!(e.parameter, "origin");
        let e = parse(&text.replace("Scale = 10", "Scale = NaN"), "t").unwrap_err();
        assert_eq!(e.parameter, "Scale");
        assert!(parse("format = 1\nspecies = \"open\n", "t").is_err());
        assert!(parse("format = 1\nno equals sign\n", "t").is_err());
    }

    #[test]
    fn missing_keys_default() {
        let s = parse("# Sylva tree spec\nformat = 1\nLevels = 2\n", "t").unwrap();
        assert_eq!(s.levels, 2);
        assert_eq!(s.origin, SpecTool::Sylva);
        assert!(s.notes.iter().any(|n| n.contains("defaults used")));
    }

    /// `LeafColor` and `BarkColor` round-trip, are refused out of 0..=1, and a spec without
    /// them takes its look from its leaf shape, read as its format means it.
    #[test]
    fn colours_and_leaf_shapes_are_read_as_each_format_means_them() {
        use crate::spec::{LeafShape, SpecTool};
        let mut s = WeberPennSpec::arbaro_default("look", SpecTool::Sylva);
        s.leaf_color = Some([0.2, 0.5, 0.1]);
        s.bark_color = Some([0.6, 0.55, 0.5]);
        s.leaf_shape = "frond".into();
        let text = write(&s);
        assert!(
            text.contains("LeafColor = 0.2 0.5 0.1") && text.contains("BarkColor = 0.6 0.55 0.5"),
            "{text}"
        );
        let back = parse(&text, "look.sylva").unwrap();
        assert_eq!((back.leaf_color, back.bark_color), (s.leaf_color, s.bark_color));
        assert_eq!(back.leaf_shape_kind(), LeafShape::Frond);
        assert_eq!(back.leaf_colour(), [0.2, 0.5, 0.1]);
        let bad = text.replace("LeafColor = 0.2 0.5 0.1", "LeafColor = 0.2 1.5 0.1");
        let e = parse(&bad, "bad.sylva").unwrap_err().to_string();
        assert!(e.contains("LeafColor") && e.contains("0..=1"), "{e}");
        let bad = text.replace("LeafColor = 0.2 0.5 0.1", "LeafColor = 0.2 0.5");
        assert!(parse(&bad, "bad.sylva").unwrap_err().to_string().contains("3 numbers"));

        let shape = |origin, name: &str| {
            let mut s = WeberPennSpec::arbaro_default("x", origin);
            s.leaf_shape = name.into();
            s.leaf_shape_kind()
        };
        assert_eq!(shape(SpecTool::TreeGen, "2"), LeafShape::Needle);
        assert_eq!(shape(SpecTool::TreeGen, "3"), LeafShape::Heart);
        assert_eq!(shape(SpecTool::TreeGen, "4"), LeafShape::Lobed);
        assert_eq!(shape(SpecTool::TreeGen, "10"), LeafShape::Triangle);
        assert_eq!(shape(SpecTool::TreeGen, "0"), LeafShape::Oval);
        assert_eq!(shape(SpecTool::Arbaro, "palm"), LeafShape::Frond);
        assert_eq!(shape(SpecTool::Arbaro, "disc2"), LeafShape::Disc);
        assert_eq!(shape(SpecTool::Arbaro, "sphere"), LeafShape::Disc);
        assert_eq!(shape(SpecTool::Arbaro, "square"), LeafShape::Rectangle);
        assert_eq!(shape(SpecTool::Arbaro, "0"), LeafShape::Oval);
        assert_eq!(shape(SpecTool::SaplingV03, "rect"), LeafShape::Rectangle);
        assert_eq!(shape(SpecTool::SaplingV03, "hex"), LeafShape::Oval);
        // Without colours, needles are darker than broad leaves.
        let fir = {
            let mut s = WeberPennSpec::arbaro_default("fir", SpecTool::TreeGen);
            s.leaf_shape = "2".into();
            s
        };
        assert!(fir.leaf_colour()[1] < WeberPennSpec::arbaro_default("oak", SpecTool::Arbaro).leaf_colour()[1]);
    }
}
