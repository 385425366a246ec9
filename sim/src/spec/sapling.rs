//! Blender Sapling presets: one line holding a Python dict (`repr` of the add-on's properties),
//! after optional `#` and blank lines. Three schema generations exist (Sapling 0.2, Sapling Tree
//! Gen 0.3, abpy's sapling_4); they are told apart by their keys, and the import fix-ups of the
//! Blender add-on are applied as it applies them (scalar `attractUp` → `[0, 0, a, a]`, missing
//! leaf angles copied from level `min(levels, 3)`, leaf bend forced to 0 in 0.3).
//!
//! Sapling stores float32 properties and writes them as float64 (`0.20000000298023224`); mapped
//! floats are rounded to the shortest decimal of their float32 value (0.2).

use super::load::{denoise_f32, file_stem};
use super::python::{parse_literal, Value};
use super::{Semantics, SpecError, SpecTool, WeberPennSpec};

/// Keys that only drive Blender's UI, armature or animation: dropped with one note.
const UI_KEYS: [&str; 19] = [
    "useArm",
    "armAnim",
    "previewArm",
    "armLevels",
    "boneStep",
    "makeMesh",
    "leafAnim",
    "frameRate",
    "loopFrames",
    "wind",
    "gust",
    "gustF",
    "af1",
    "af2",
    "af3",
    "windSpeed",
    "windGust",
    "showLeaves",
    "chooseSet",
];

/// Sapling keys with no Weber-Penn meaning that change the geometry: kept in extras.
const EXTRA_KEYS: [&str; 35] = [
    "seed",
    "bevel",
    "bevelRes",
    "resU",
    "handleType",
    "branchDist",
    "nrings",
    "rMode",
    "taperCrown",
    "radiusTweak",
    "minRadius",
    "closeTip",
    "useParentAngle",
    "startCurv",
    "splitHeight",
    "splitBias",
    "splitByLen",
    "autoTaper",
    "attractOut",
    "pruneBase",
    "leafScaleT",
    "leafScaleV",
    "leafangle",
    "horzLeaves",
    "baseSize_s",
    "leafType",
    "attachment",
    "leafBaseSize",
    "leafObjY",
    "leafObjZ",
    "matIndex",
    "noTip",
    "splitLength",
    "splitRadiusRatio",
    "splitStraight",
];

/// Keys mapped to the canonical spec.
const MAPPED_KEYS: [&str; 46] = [
    "levels",
    "shape",
    "shapeS",
    "customShape",
    "scale",
    "scaleV",
    "baseSize",
    "ratio",
    "ratioPower",
    "scale0",
    "scaleV0",
    "rootFlare",
    "baseSplits",
    "length",
    "lengthV",
    "taper",
    "segSplits",
    "splitAngle",
    "splitAngleV",
    "curveRes",
    "curve",
    "curveV",
    "curveBack",
    "downAngle",
    "downAngleV",
    "rotate",
    "rotateV",
    "branches",
    "leaves",
    "leafScale",
    "leafScaleX",
    "leafDist",
    "leafShape",
    "bend",
    "leafDownAngle",
    "leafDownAngleV",
    "leafRotate",
    "leafRotateV",
    "attractUp",
    "prune",
    "pruneRatio",
    "pruneWidth",
    "pruneWidthPeak",
    "prunePowerLow",
    "prunePowerHigh",
    "useOldDownAngle",
];

const PRUNE_KEYS: [&str; 6] = [
    "prune",
    "pruneRatio",
    "pruneWidth",
    "pruneWidthPeak",
    "prunePowerLow",
    "prunePowerHigh",
];

/// The preset dict with typed, defaulting accessors.
struct Preset<'a> {
    dict: &'a Value,
    file: &'a str,
    generation: SpecTool,
    /// Keys the generation has that the file lacks (defaults used).
    defaulted: Vec<&'static str>,
    notes: Vec<String>,
}

impl<'a> Preset<'a> {
    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        let v = self.dict.dict_get(key);
        if v.is_none() && self.has_key(key) {
            self.defaulted.push(key);
        }
        v
    }

    /// Whether the file's schema generation has the key.
    fn has_key(&self, key: &str) -> bool {
        match self.generation {
            SpecTool::SaplingV02 => !matches!(
                key,
                "shapeS"
                    | "customShape"
                    | "rootFlare"
                    | "leafShape"
                    | "leafDownAngle"
                    | "leafDownAngleV"
                    | "leafRotate"
                    | "leafRotateV"
                    | "useOldDownAngle"
            ),
            SpecTool::SaplingV03 => key != "bend",
            _ => key != "bend" && !PRUNE_KEYS.contains(&key),
        }
    }

    fn err(&self, key: &str, msg: String) -> SpecError {
        SpecError::new(self.file, key, msg)
    }

    fn num(&mut self, key: &'static str, default: f64) -> Result<f64, SpecError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.as_f64() {
                Some(x) => Ok(denoise_f32(x)),
                None => Err(self.err(key, format!("{key} = {v}; allowed: a number ({})", v.type_name()))),
            },
        }
    }

    fn int(&mut self, key: &'static str, default: i64) -> Result<i64, SpecError> {
        match self.get(key) {
            None => Ok(default),
            Some(&Value::Int(i)) => Ok(i),
            Some(&Value::Float(x)) if x.fract() == 0.0 && x.abs() < 9.0e15 => {
                self.notes.push(format!(
                    "{key} given as a float ({x:?}), read as the integer {} (an old Sapling bug, Blender T101985)",
                    x as i64
                ));
                Ok(x as i64)
            }
            Some(v) => Err(self.err(key, format!("{key} = {v}; allowed: an integer ({})", v.type_name()))),
        }
    }

    fn boolean(&mut self, key: &'static str, default: bool) -> Result<bool, SpecError> {
        match self.get(key) {
            None => Ok(default),
            Some(&Value::Bool(b)) => Ok(b),
            Some(v) => Err(self.err(key, format!("{key} = {v}; allowed: True or False"))),
        }
    }

    fn string(&mut self, key: &'static str, default: &str) -> Result<String, SpecError> {
        match self.get(key) {
            None => Ok(default.to_string()),
            Some(Value::Str(s)) => Ok(s.clone()),
            Some(v) => Err(self.err(key, format!("{key} = {v}; allowed: a string such as 'hex'"))),
        }
    }

    /// An enum id: Sapling writes them as strings ('7').
    fn enum_id(&mut self, key: &'static str, default: i64) -> Result<i64, SpecError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Str(s)) => s
                .trim()
                .parse::<i64>()
                .map_err(|_| self.err(key, format!("{key} = '{s}'; allowed: a numeric id string such as '4'"))),
            Some(v) => Err(self.err(
                key,
                format!("{key} = {v}; allowed: an id as a string such as '4' (Sapling enum values are strings)"),
            )),
        }
    }

    fn seq4(&mut self, key: &'static str) -> Result<Option<&'a [Value]>, SpecError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_seq() {
                Some(items) if items.len() == 4 => Ok(Some(items)),
                Some(items) => Err(self.err(
                    key,
                    format!(
                        "{key} has {} values; allowed: a tuple of 4 (one per level 0..3)",
                        items.len()
                    ),
                )),
                None => Err(self.err(key, format!("{key} = {v}; allowed: a tuple of 4 numbers"))),
            },
        }
    }

    fn vec4(&mut self, key: &'static str, default: [f64; 4]) -> Result<[f64; 4], SpecError> {
        let Some(items) = self.seq4(key)? else {
            return Ok(default);
        };
        let mut out = [0.0; 4];
        for (i, v) in items.iter().enumerate() {
            out[i] = match v.as_f64() {
                Some(x) => denoise_f32(x),
                None => return Err(self.err(key, format!("{key}[{i}] = {v}; allowed: a number"))),
            };
        }
        Ok(out)
    }

    fn ivec4(&mut self, key: &'static str, default: [i64; 4]) -> Result<[i64; 4], SpecError> {
        let Some(items) = self.seq4(key)? else {
            return Ok(default);
        };
        let mut out = [0; 4];
        for (i, v) in items.iter().enumerate() {
            out[i] = match v {
                Value::Int(x) => *x,
                _ => return Err(self.err(key, format!("{key}[{i}] = {v}; allowed: an integer"))),
            };
        }
        Ok(out)
    }
}

/// Rounds float32 noise inside a value kept in extras.
fn denoise_value(v: &Value) -> Value {
    match v {
        Value::Float(x) => Value::Float(denoise_f32(*x)),
        Value::Tuple(items) => Value::Tuple(items.iter().map(denoise_value).collect()),
        Value::List(items) => Value::List(items.iter().map(denoise_value).collect()),
        other => other.clone(),
    }
}

/// Finds the preset line: the first line that is neither blank nor a `#` comment.
fn preset_line(text: &str) -> Option<(usize, &str, usize)> {
    let mut lines = text.lines().enumerate();
    for (i, line) in lines.by_ref() {
        let t = line.trim();
        if !t.is_empty() && !t.starts_with('#') {
            let after = text.lines().skip(i + 1).filter(|l| !l.trim().is_empty()).count();
            return Some((i + 1, t, after));
        }
    }
    None
}

/// Reads a Sapling preset (the species is named after the file).
pub fn parse(text: &str, file: &str) -> Result<WeberPennSpec, SpecError> {
    let Some((line_no, line, after)) = preset_line(text) else {
        return Err(SpecError::new(
            file,
            "line 1",
            "no preset line: only comments or blank lines; allowed: a Sapling preset is one line holding a dict such as \
             {'levels': 3, ...}",
        ));
    };
    let dict = parse_literal(line).map_err(|e| {
        SpecError::new(
            file,
            format!("line {line_no}"),
            format!(
                "line {line_no}, column {}: {}; allowed: a Sapling preset is one line holding a Python dict such as \
                 {{'levels': 3, 'shape': '7', ...}} (Sapling reads only that line)",
                e.column, e.message
            ),
        )
    })?;
    let Value::Dict(pairs) = &dict else {
        return Err(SpecError::new(
            file,
            format!("line {line_no}"),
            format!(
                "line {line_no} holds a {}, not a dict; allowed: a Python dict {{'key': value, ...}}",
                dict.type_name()
            ),
        ));
    };
    for (k, _) in pairs {
        if !matches!(k, Value::Str(_)) {
            return Err(SpecError::new(
                file,
                format!("line {line_no}"),
                format!("dict key {k} is not a string; allowed: Sapling property names such as 'levels'"),
            ));
        }
    }

    let generation =
        match dict.dict_get("attractUp") {
            _ if dict.dict_get("attachment").is_some() || dict.dict_get("leafType").is_some() => SpecTool::Sapling4,
            Some(Value::Tuple(_) | Value::List(_)) => SpecTool::SaplingV03,
            Some(Value::Int(_) | Value::Float(_)) => SpecTool::SaplingV02,
            Some(v) => {
                return Err(SpecError::new(
                    file,
                    "attractUp",
                    format!("attractUp = {v}; allowed: a number (Sapling 0.2) or a tuple of 4 numbers (Sapling 0.3)"),
                ))
            }
            None => return Err(SpecError::new(
                file,
                "attractUp",
                "attractUp is missing, so the Sapling schema cannot be told; every Sapling preset has it (a number in \
                 0.2, a tuple of 4 in 0.3 and sapling_4)",
            )),
        };
    let v02 = generation == SpecTool::SaplingV02;
    let mut p = Preset {
        dict: &dict,
        file,
        generation,
        defaulted: Vec::new(),
        notes: Vec::new(),
    };
    if after > 0 {
        p.notes.push(format!(
            "{after} non-blank line(s) after the preset line ignored (Sapling reads one line)"
        ));
    }

    let mut spec = WeberPennSpec::arbaro_default(&file_stem(file), generation);
    // Missing keys take the add-on's defaults (Sapling 0.3's; 0.2's where they differ).
    spec.levels = p.int("levels", 3)?;
    spec.shape = p.enum_id("shape", 7)?;
    if !v02 {
        spec.shape_deep = Some(p.enum_id("shapeS", 4)?);
        spec.custom_shape = Some(p.vec4("customShape", [0.5, 1.0, 0.3, 0.5])?);
    }
    spec.scale = p.num("scale", 13.0)?;
    spec.scale_v = p.num("scaleV", 3.0)?;
    spec.base_size = p.num("baseSize", 0.4)?;
    spec.ratio = p.num("ratio", 0.015)?;
    spec.ratio_power = p.num("ratioPower", 1.2)?;
    spec.scale0 = p.num("scale0", 1.0)?;
    spec.scale0_v = p.num("scaleV0", 0.2)?;
    spec.base_splits = p.int("baseSplits", 0)?;
    if v02 {
        spec.flare = 0.0;
        p.notes.push("Sapling 0.2 has no trunk flare: Flare 0".to_string());
    } else {
        spec.flare = denoise_f32(p.num("rootFlare", 1.0)? - 1.0);
    }

    let length = p.vec4("length", [1.0, 0.3, 0.6, 0.45])?;
    let length_v = p.vec4("lengthV", [0.0; 4])?;
    let taper = p.vec4("taper", [1.0; 4])?;
    let seg_splits = p.vec4("segSplits", [0.0; 4])?;
    let split_angle = p.vec4("splitAngle", [0.0; 4])?;
    let split_angle_v = p.vec4("splitAngleV", [0.0; 4])?;
    let curve_res = p.ivec4("curveRes", [3, 5, 3, 1])?;
    let curve = p.vec4("curve", [0.0, -40.0, -40.0, 0.0])?;
    let curve_v = p.vec4("curveV", [20.0, 50.0, 75.0, 0.0])?;
    let curve_back = p.vec4("curveBack", [0.0; 4])?;
    let down_angle = p.vec4("downAngle", [90.0, 60.0, 45.0, 45.0])?;
    let down_angle_v = p.vec4("downAngleV", [0.0, -50.0, 10.0, 10.0])?;
    let rotate_default = if v02 { [140.0, 140.0, 140.0, 77.0] } else { [137.5; 4] };
    let rotate = p.vec4("rotate", rotate_default)?;
    let rotate_v = p.vec4("rotateV", [0.0; 4])?;
    let branches = p.ivec4("branches", [50, 30, 10, 10])?;
    for n in 0..4 {
        let l = &mut spec.level[n];
        l.length = length[n];
        l.length_v = length_v[n];
        l.taper = taper[n];
        l.seg_splits = seg_splits[n];
        l.split_angle = split_angle[n];
        l.split_angle_v = split_angle_v[n];
        l.curve_res = curve_res[n];
        l.curve = curve[n];
        l.curve_v = curve_v[n];
        l.curve_back = curve_back[n];
        l.down_angle = down_angle[n];
        l.down_angle_v = down_angle_v[n];
        l.rotate = rotate[n];
        l.rotate_v = rotate_v[n];
        l.branches = branches[n];
    }
    if !matches!(branches[0], 0 | 1) {
        p.notes.push(format!(
            "branches[0] = {} is not used by Sapling (always one trunk): level 0 branches = 1",
            branches[0]
        ));
    }
    spec.level[0].branches = 1;
    // Sapling always grows the trunk straight up: downAngle[0] (often 90 in its presets) and
    // downAngleV[0] are unused there, while Arbaro's semantics would tilt the trunk by them.
    if spec.level[0].down_angle != 0.0 || spec.level[0].down_angle_v != 0.0 {
        spec.extras.insert(
            "downAngle[0]".into(),
            format!("{} {}", spec.level[0].down_angle, spec.level[0].down_angle_v),
        );
        spec.level[0].down_angle = 0.0;
        spec.level[0].down_angle_v = 0.0;
    }

    // attractUp: one value per level, or (0.2) one for levels >= 2.
    match dict.dict_get("attractUp") {
        Some(Value::Tuple(_) | Value::List(_)) => {
            let a = p.vec4("attractUp", [0.0; 4])?;
            for (n, l) in spec.level.iter_mut().enumerate() {
                l.attraction_up = a[n];
            }
        }
        _ => {
            let a = p.num("attractUp", 0.0)?;
            spec.level[2].attraction_up = a;
            spec.level[3].attraction_up = a;
            p.notes.push(format!(
                "attractUp given as one number ({a}): read as [0, 0, {a}, {a}], as the Sapling 0.3 importer does"
            ));
        }
    }

    spec.leaves = p.int("leaves", 25)?;
    spec.leaf_scale = p.num("leafScale", 0.17)?;
    spec.leaf_scale_x = p.num("leafScaleX", 1.0)?;
    spec.leaf_distrib = p.enum_id("leafDist", if v02 { 4 } else { 6 })?;
    spec.leaf_shape = p.string("leafShape", "hex")?;
    if v02 {
        spec.leaf_bend = p.num("bend", 0.0)?;
    } else {
        spec.leaf_bend = 0.0;
        if let Some(b) = dict.dict_get("bend") {
            spec.extras.insert("bend".to_string(), denoise_value(b).to_string());
        }
        p.notes
            .push("leaf bend set to 0, as the Sapling 0.3 importer does".to_string());
    }

    // The leaf level's angles: Sapling 0.3 has separate keys; when they are missing (0.2), the
    // importer copies them from level min(levels, 3).
    let leaf_level = spec.levels.clamp(0, 3) as usize;
    let leaf_keys = ["leafDownAngle", "leafDownAngleV", "leafRotate", "leafRotateV"];
    if dict.dict_get("leafDownAngle").is_none() {
        p.notes.push(format!(
            "no leafDownAngle: the leaf angles are those of level {leaf_level}, as the Sapling 0.3 importer does"
        ));
    } else {
        let leaf = [
            p.num("leafDownAngle", 45.0)?,
            p.num("leafDownAngleV", 10.0)?,
            p.num("leafRotate", 137.5)?,
            p.num("leafRotateV", 0.0)?,
        ];
        let slots = {
            let l = &spec.level[leaf_level];
            [l.down_angle, l.down_angle_v, l.rotate, l.rotate_v]
        };
        if spec.levels >= 4 {
            // Level 3 holds both the deepest stems and the leaves: keep the stems' angles and
            // the leaves' where they differ in extras.
            let mut kept = Vec::new();
            for (i, key) in leaf_keys.iter().enumerate() {
                if leaf[i] != slots[i] {
                    spec.extras.insert(key.to_string(), leaf[i].to_string());
                    kept.push(*key);
                }
            }
            if !kept.is_empty() {
                p.notes.push(format!(
                    "Levels >= 4: level 3 holds both the deepest stems and the leaves; its angles are the stems', \
                     the differing leaf angles are kept in extras: {}",
                    kept.join(", ")
                ));
            }
        } else {
            let l = &mut spec.level[leaf_level];
            l.down_angle = leaf[0];
            l.down_angle_v = leaf[1];
            l.rotate = leaf[2];
            l.rotate_v = leaf[3];
        }
    }

    if generation == SpecTool::Sapling4 {
        spec.prune_ratio = 0.0;
        p.notes.push(
            "sapling_4 has no pruning and changed several meanings (split angle, curvature sign); the numbers are \
             read with Sapling 0.3's semantics"
                .to_string(),
        );
    } else {
        let prune = p.boolean("prune", false)?;
        let ratio = p.num("pruneRatio", 1.0)?;
        spec.prune_ratio = if prune { ratio } else { 0.0 };
        if !prune && ratio != 0.0 {
            spec.extras.insert("pruneRatio".to_string(), ratio.to_string());
            p.notes.push(format!(
                "prune is off: PruneRatio 0 (the preset's pruneRatio {ratio} is kept in extras)"
            ));
        }
        spec.prune_width = p.num("pruneWidth", 0.4)?;
        spec.prune_width_peak = p.num("pruneWidthPeak", 0.6)?;
        spec.prune_power_low = p.num("prunePowerLow", 0.001)?;
        spec.prune_power_high = p.num("prunePowerHigh", 0.5)?;
    }
    let old_down_angle = if v02 {
        false
    } else {
        p.boolean("useOldDownAngle", false)?
    };
    spec.semantics = Semantics::of(generation, old_down_angle);

    // Everything else: extras, UI keys dropped.
    let mut dropped = Vec::new();
    let mut unknown = Vec::new();
    let mut unknown_seen = std::collections::BTreeSet::new();
    for (k, v) in pairs {
        let Value::Str(key) = k else { continue };
        if MAPPED_KEYS.contains(&key.as_str()) {
            continue;
        }
        if UI_KEYS.contains(&key.as_str()) {
            if !dropped.contains(&key.as_str()) {
                dropped.push(key.as_str());
            }
            continue;
        }
        if !EXTRA_KEYS.contains(&key.as_str()) && unknown_seen.insert(key.as_str()) {
            unknown.push(key.as_str());
        }
        spec.extras.insert(key.clone(), denoise_value(v).to_string());
    }
    if !dropped.is_empty() {
        p.notes.push(format!(
            "UI, armature and animation keys dropped: {}",
            dropped.join(", ")
        ));
    }
    if !unknown.is_empty() {
        p.notes.push(format!(
            "keys of no known Sapling generation, kept in extras: {}",
            unknown.join(", ")
        ));
    }
    if !p.defaulted.is_empty() {
        p.defaulted.dedup();
        p.notes.push(format!(
            "not given, the Sapling add-on's defaults used: {}",
            p.defaulted.join(", ")
        ));
    }
    p.notes.insert(
        0,
        format!(
            "Sapling preset, {} schema (told by its keys)",
            match generation {
                SpecTool::SaplingV02 => "0.2",
                SpecTool::SaplingV03 => "0.3",
                _ => "sapling_4",
            }
        ),
    );
    spec.notes = p.notes;
    spec.validate(file)?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::DownAngleV;

    const V03: &str = "# SPDX-License-Identifier: GPL-2.0-or-later\n\n{'levels': 2, 'shape': '7', 'shapeS': '4', \
        'attractUp': (0.0, -0.3499999940395355, 0.5, 0.5), 'rootFlare': 1.149999976158142, 'branches': (0, 50, 30, 10), \
        'leafDownAngle': 30.0, 'leafDownAngleV': -10.0, 'leafRotate': 137.5, 'leafRotateV': 15.0, 'prune': False, \
        'pruneRatio': 0.75, 'useOldDownAngle': True, 'seed': 7, 'rMode': 'rotate', 'gust': 1.0, 'leaves': -5}";

    #[test]
    fn v03_preset() {
        let s = parse(V03, "presets/my tree.py").unwrap();
        assert_eq!(s.species, "my tree");
        assert_eq!(s.origin, SpecTool::SaplingV03);
        assert_eq!(s.semantics.down_angle_v, DownAngleV::Paper);
        assert_eq!(s.level[1].attraction_up, -0.35);
        assert_eq!(s.flare, 0.15);
        assert_eq!(s.level[2].down_angle, 30.0);
        assert_eq!(s.level[2].rotate_v, 15.0);
        assert_eq!(s.prune_ratio, 0.0);
        assert_eq!(s.extras["pruneRatio"], "0.75");
        assert_eq!(s.extras["rMode"], "'rotate'");
        assert_eq!(s.extras["seed"], "7");
        assert!(!s.extras.contains_key("gust"));
        assert_eq!(s.leaves, -5);
        assert!(s
            .notes
            .iter()
            .any(|n| n.contains("defaults used") && n.contains("scale")));
    }

    #[test]
    fn v02_preset_with_float_leaves() {
        let text = "{'levels': 2, 'shape': '3', 'attractUp': -3.0, 'leaves': 15.0, 'bend': 0.5, \
            'downAngle': (0.0, 20.0, 30.0, 20.0), 'rotate': (0.0, -120.0, -120.0, 140.0)}";
        let s = parse(text, "willow.py").unwrap();
        assert_eq!(s.origin, SpecTool::SaplingV02);
        assert_eq!(s.leaves, 15);
        assert_eq!(s.leaf_bend, 0.5);
        assert_eq!(s.level[2].attraction_up, -3.0);
        assert_eq!(s.level[1].attraction_up, 0.0);
        assert_eq!(s.level[2].down_angle, 30.0);
        assert_eq!(s.flare, 0.0);
        assert!(s.notes.iter().any(|n| n.contains("T101985")));
    }

    #[test]
    fn errors() {
        let e = parse("# c\n{'levels': 3, 'attractUp': 0.5", "p.py").unwrap_err();
        assert_eq!(e.parameter, "line 2");
        let e = parse("{'levels': 3.5, 'attractUp': 0.5}", "p.py").unwrap_err();
        assert_eq!(e.parameter, "levels");
        let e = parse("{'shape': 7, 'attractUp': 0.5}", "p.py").unwrap_err();
        assert_eq!(e.parameter, "shape");
        let e = parse("{'length': (1, 2), 'attractUp': 0.5}", "p.py").unwrap_err();
        assert_eq!(e.parameter, "length");
        let e = parse("{'levels': 3}", "p.py").unwrap_err();
        assert_eq!(e.parameter, "attractUp");
        let e = parse("{'taper': (1.0, 2.0, 1.0, 1.0), 'attractUp': 0.5}", "p.py").unwrap_err();
        assert_eq!(e.parameter, "1Taper");
        assert!(parse("# only comments\n", "p.py").is_err());
        assert!(parse("[1, 2]", "p.py").is_err());
    }
}
