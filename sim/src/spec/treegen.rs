//! friggog/tree-gen parameter modules: a docstring, then `params = {...}` (a Python dict over
//! many lines). tree-gen merges the file into its own defaults (`TreeParam`), not Arbaro's, warns
//! about and ignores unknown keys (three real files use `leaves`, which tree-gen ignores), and
//! coerces `shape`, `levels`, `leaf_shape`, `blossom_shape` with `abs(int(v))`, `base_splits` and
//! `branches` with `int(v)`.

use super::load::file_stem;
use super::python::{Parser, PyError, Value};
use super::{Semantics, SpecError, SpecTool, WeberPennSpec};

/// tree-gen's defaults (`tree_param.py`), as Python values.
fn defaults() -> Vec<(&'static str, Value)> {
    let i = Value::Int;
    let f = Value::Float;
    let list = |v: [f64; 4]| Value::List(v.iter().map(|&x| Value::Float(x)).collect());
    vec![
        ("shape", i(7)),
        ("g_scale", f(13.0)),
        ("g_scale_v", f(3.0)),
        ("levels", i(3)),
        ("ratio", f(0.015)),
        ("ratio_power", f(1.2)),
        ("flare", f(0.6)),
        ("base_splits", i(0)),
        ("base_size", list([0.3, 0.02, 0.02, 0.02])),
        ("down_angle", list([0.0, 60.0, 45.0, 45.0])),
        ("down_angle_v", list([0.0, -50.0, 10.0, 10.0])),
        ("rotate", list([0.0, 140.0, 140.0, 77.0])),
        ("rotate_v", list([0.0; 4])),
        ("branches", list([1.0, 50.0, 30.0, 10.0])),
        ("length", list([1.0, 0.3, 0.6, 0.0])),
        ("length_v", list([0.0; 4])),
        ("taper", list([1.0; 4])),
        ("seg_splits", list([0.0; 4])),
        ("split_angle", list([40.0, 0.0, 0.0, 0.0])),
        ("split_angle_v", list([5.0, 0.0, 0.0, 0.0])),
        ("bevel_res", list([10.0; 4])),
        ("curve_res", list([5.0, 5.0, 3.0, 1.0])),
        ("curve", list([0.0, -40.0, -40.0, 0.0])),
        ("curve_back", list([0.0; 4])),
        ("curve_v", list([20.0, 50.0, 75.0, 0.0])),
        ("bend_v", list([0.0, 50.0, 0.0, 0.0])),
        ("branch_dist", list([0.0; 4])),
        ("radius_mod", list([1.0; 4])),
        ("leaf_blos_num", i(40)),
        ("leaf_shape", i(0)),
        ("leaf_scale", f(0.17)),
        ("leaf_scale_x", f(1.0)),
        ("leaf_bend", f(0.6)),
        ("blossom_shape", i(1)),
        ("blossom_scale", f(0.0)),
        ("blossom_rate", f(0.0)),
        ("tropism", Value::List(vec![f(0.0), f(0.0), f(0.5)])),
        ("prune_ratio", f(0.0)),
        ("prune_width", f(0.5)),
        ("prune_width_peak", f(0.5)),
        ("prune_power_low", f(0.5)),
        ("prune_power_high", f(0.5)),
    ]
}

/// tree-gen keys with no Weber-Penn meaning, kept in extras (merged values).
const EXTRA_KEYS: [&str; 7] = [
    "branch_dist",
    "bend_v",
    "radius_mod",
    "bevel_res",
    "blossom_shape",
    "blossom_scale",
    "blossom_rate",
];

/// Reads the module structure: docstrings, comments and one `params = {...}`.
fn module_params(text: &str, file: &str) -> Result<(Value, Vec<String>), SpecError> {
    let mut p = Parser::new(text);
    let mut docstrings = Vec::new();
    let syntax = |e: PyError| {
        SpecError::new(
            file,
            format!("line {}", e.line),
            format!(
                "line {}, column {}: {}; allowed: a tree-gen module is a docstring and params = {{'key': value, ...}}",
                e.line, e.column, e.message
            ),
        )
    };
    loop {
        p.skip_ws();
        let rest = p.rest();
        if rest.is_empty() {
            return Err(SpecError::new(
                file,
                "params",
                "no 'params = {...}' assignment; allowed: a tree-gen module assigns its parameters to params",
            ));
        }
        let string_start = rest.starts_with(['\'', '"'])
            || (rest.starts_with(['u', 'U', 'r', 'R']) && rest[1..].starts_with(['\'', '"']));
        if string_start {
            let doc = p.string().map_err(&syntax)?;
            docstrings.push(doc.trim().to_string());
            continue;
        }
        let at = p.pos();
        match p.ident() {
            Some("params") => {
                p.skip_line_ws();
                if !p.eat('=') {
                    return Err(syntax(p.error("expected '=' after params")));
                }
                let value = p.value().map_err(&syntax)?;
                if !p.at_end() {
                    return Err(syntax(p.error(
                        "unexpected text after the params dict (Sylva reads only a docstring and params)",
                    )));
                }
                return Ok((value, docstrings));
            }
            other => {
                let what = other.map_or_else(
                    || {
                        rest.chars()
                            .next()
                            .map(|c| format!("'{}'", c.escape_debug()))
                            .unwrap_or_default()
                    },
                    |w| format!("'{w}'"),
                );
                return Err(syntax(p.error_at(
                    at,
                    format!("found {what}; only a docstring and 'params = {{...}}' are supported"),
                )));
            }
        }
    }
}

/// The merged parameters with typed accessors.
struct Merged<'a> {
    values: Vec<(&'static str, Value)>,
    file: &'a str,
}

impl Merged<'_> {
    fn get(&self, key: &str) -> &Value {
        self.values
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .unwrap_or(&Value::None)
    }

    fn err(&self, key: &str, msg: String) -> SpecError {
        SpecError::new(self.file, key, msg)
    }

    fn number(&self, key: &str, v: &Value) -> Result<f64, SpecError> {
        v.as_f64()
            .ok_or_else(|| self.err(key, format!("{key} = {v}; allowed: a number ({})", v.type_name())))
    }

    fn num(&self, key: &str) -> Result<f64, SpecError> {
        self.number(key, self.get(key))
    }

    /// Python's `int(v)`: truncation toward zero.
    fn int_of(&self, key: &str, v: &Value) -> Result<i64, SpecError> {
        match *v {
            Value::Int(i) => Ok(i),
            Value::Float(x) if x.is_finite() && x.abs() < 9.0e15 => Ok(x.trunc() as i64),
            _ => Err(self.err(key, format!("{key} = {v}; allowed: a number that int() takes"))),
        }
    }

    /// `abs(int(v))`.
    fn abs_int(&self, key: &str) -> Result<i64, SpecError> {
        let i = self.int_of(key, self.get(key))?;
        i.checked_abs()
            .ok_or_else(|| self.err(key, format!("{key} = {i}: out of range")))
    }

    /// A whole number (tree-gen uses these as counts without coercing).
    fn whole(&self, key: &str, v: &Value) -> Result<i64, SpecError> {
        match *v {
            Value::Int(i) => Ok(i),
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Ok(x as i64),
            _ => Err(self.err(key, format!("{key} = {v}; allowed: a whole number"))),
        }
    }

    /// The first `n` items of a list (more are ignored, with a note).
    fn seq(&self, key: &str, n: usize, notes: &mut Vec<String>) -> Result<&[Value], SpecError> {
        let v = self.get(key);
        let Some(items) = v.as_seq() else {
            return Err(self.err(key, format!("{key} = {v}; allowed: a list of {n} numbers")));
        };
        if items.len() < n {
            return Err(self.err(
                key,
                format!(
                    "{key} has {} values; allowed: at least {n} (tree-gen reads one per level 0..{})",
                    items.len(),
                    n - 1
                ),
            ));
        }
        if items.len() > n {
            notes.push(format!("{key} has {} values; tree-gen uses the first {n}", items.len()));
        }
        Ok(&items[..n])
    }

    fn vec4(&self, key: &str, notes: &mut Vec<String>) -> Result<[f64; 4], SpecError> {
        let items = self.seq(key, 4, notes)?;
        let mut out = [0.0; 4];
        for (i, v) in items.iter().enumerate() {
            out[i] = self
                .number(key, v)
                .map_err(|_| self.err(key, format!("{key}[{i}] = {v}; allowed: a number")))?;
        }
        Ok(out)
    }
}

/// Reads a tree-gen parameter module (the species is named after the file).
pub fn parse(text: &str, file: &str) -> Result<WeberPennSpec, SpecError> {
    let (params, docstrings) = module_params(text, file)?;
    let Value::Dict(pairs) = &params else {
        return Err(SpecError::new(
            file,
            "params",
            format!(
                "params is a {}; allowed: a dict {{'key': value, ...}}",
                params.type_name()
            ),
        ));
    };

    let mut notes = Vec::new();
    for d in docstrings.iter().filter(|d| !d.is_empty()) {
        notes.push(format!("docstring: {d}"));
    }
    let mut merged = Merged {
        values: defaults(),
        file,
    };
    let mut given: Vec<&str> = Vec::new();
    let mut ignored: Vec<String> = Vec::new();
    for (k, v) in pairs {
        let Value::Str(key) = k else {
            return Err(SpecError::new(
                file,
                "params",
                format!("params key {k} is not a string; allowed: tree-gen parameter names such as 'shape'"),
            ));
        };
        match merged.values.iter_mut().find(|(name, _)| name == key) {
            Some(slot) => {
                slot.1 = v.clone();
                given.push(slot.0);
            }
            None => ignored.push(format!("{key} = {v}")),
        }
    }
    let defaulted: Vec<&str> = merged
        .values
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| !given.contains(k))
        .collect();

    let mut spec = WeberPennSpec::arbaro_default(&file_stem(file), SpecTool::TreeGen);
    spec.semantics = Semantics::of(SpecTool::TreeGen, false);
    spec.shape = merged.abs_int("shape")?;
    spec.levels = merged.abs_int("levels")?;
    spec.scale = merged.num("g_scale")?;
    spec.scale_v = merged.num("g_scale_v")?;
    spec.ratio = merged.num("ratio")?;
    spec.ratio_power = merged.num("ratio_power")?;
    spec.flare = merged.num("flare")?;
    spec.base_splits = merged.int_of("base_splits", merged.get("base_splits"))?;

    let base_size = merged.vec4("base_size", &mut notes)?;
    spec.base_size = base_size[0];
    let down_angle = merged.vec4("down_angle", &mut notes)?;
    let down_angle_v = merged.vec4("down_angle_v", &mut notes)?;
    let rotate = merged.vec4("rotate", &mut notes)?;
    let rotate_v = merged.vec4("rotate_v", &mut notes)?;
    let length = merged.vec4("length", &mut notes)?;
    let length_v = merged.vec4("length_v", &mut notes)?;
    let taper = merged.vec4("taper", &mut notes)?;
    let seg_splits = merged.vec4("seg_splits", &mut notes)?;
    let split_angle = merged.vec4("split_angle", &mut notes)?;
    let split_angle_v = merged.vec4("split_angle_v", &mut notes)?;
    let curve = merged.vec4("curve", &mut notes)?;
    let curve_back = merged.vec4("curve_back", &mut notes)?;
    let curve_v = merged.vec4("curve_v", &mut notes)?;
    let branches = merged.seq("branches", 4, &mut notes)?;
    let curve_res = merged.seq("curve_res", 4, &mut notes)?;
    for n in 0..4 {
        let l = &mut spec.level[n];
        l.down_angle = down_angle[n];
        l.down_angle_v = down_angle_v[n];
        l.rotate = rotate[n];
        l.rotate_v = rotate_v[n];
        l.length = length[n];
        l.length_v = length_v[n];
        l.taper = taper[n];
        l.seg_splits = seg_splits[n];
        l.split_angle = split_angle[n];
        l.split_angle_v = split_angle_v[n];
        l.curve = curve[n];
        l.curve_back = curve_back[n];
        l.curve_v = curve_v[n];
        l.branches = merged.int_of("branches", &branches[n])?;
        l.curve_res = merged.whole("curve_res", &curve_res[n])?;
        if n > 0 {
            l.base_size = base_size[n];
        }
    }

    // tree-gen starts every trunk straight up (`create_branches`: turtle.dir = (0, 0, 1)) and
    // reads down_angle only for children (`calc_down_angle` uses depth + 1).
    if spec.level[0].down_angle != 0.0 || spec.level[0].down_angle_v != 0.0 {
        spec.extras.insert(
            "down_angle[0]".into(),
            format!("{} {}", spec.level[0].down_angle, spec.level[0].down_angle_v),
        );
        notes.push(format!(
            "down_angle[0] = {}, down_angle_v[0] = {} are not used by tree-gen (trunks start vertical): level 0 \
             down angle set to 0",
            spec.level[0].down_angle, spec.level[0].down_angle_v
        ));
        spec.level[0].down_angle = 0.0;
        spec.level[0].down_angle_v = 0.0;
    }

    let tropism = merged.seq("tropism", 3, &mut notes)?;
    let tropism: Vec<f64> = tropism
        .iter()
        .map(|v| merged.number("tropism", v))
        .collect::<Result<_, _>>()?;
    spec.level[2].attraction_up = tropism[2];
    spec.level[3].attraction_up = tropism[2];
    spec.extras.insert("tropism_x".to_string(), tropism[0].to_string());
    spec.extras.insert("tropism_y".to_string(), tropism[1].to_string());

    spec.leaves = merged.whole("leaf_blos_num", merged.get("leaf_blos_num"))?;
    spec.leaf_shape = merged.abs_int("leaf_shape")?.to_string();
    spec.leaf_scale = merged.num("leaf_scale")?;
    spec.leaf_scale_x = merged.num("leaf_scale_x")?;
    spec.leaf_bend = merged.num("leaf_bend")?;
    spec.prune_ratio = merged.num("prune_ratio")?;
    spec.prune_width = merged.num("prune_width")?;
    spec.prune_width_peak = merged.num("prune_width_peak")?;
    spec.prune_power_low = merged.num("prune_power_low")?;
    spec.prune_power_high = merged.num("prune_power_high")?;

    for key in EXTRA_KEYS {
        let v = merged.get(key);
        let text = match key {
            "blossom_shape" => merged.abs_int(key)?.to_string(),
            "blossom_scale" | "blossom_rate" => merged.num(key)?.to_string(),
            _ => {
                merged.vec4(key, &mut notes)?;
                v.to_string()
            }
        };
        spec.extras.insert(key.to_string(), text);
    }
    notes.push(
        "tree-gen parameters with no Weber-Penn meaning kept in extras (merged with tree-gen's defaults): \
         branch_dist, bend_v, radius_mod, bevel_res, blossom_*, tropism_x, tropism_y"
            .to_string(),
    );
    if !ignored.is_empty() {
        notes.push(format!(
            "not tree-gen parameters, ignored as tree-gen does (leaf_blos_num stays {}): {}",
            spec.leaves,
            ignored.join(", ")
        ));
    }
    if !defaulted.is_empty() {
        notes.push(format!("not given, tree-gen's defaults used: {}", defaulted.join(", ")));
    }
    spec.notes = notes;
    spec.validate(file)?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACER: &str = "\"\"\" ACER \"\"\"\nparams = {\n    'shape': 4,\n    'levels': 3,\n    'base_splits': -2,\n    \
        'base_size': [0.1, 0.4, 0.02, 0.02],\n    'down_angle': [-0, 50, 50, 45],\n    'branches': [1, 6, 20, 5],\n    \
        'tropism': [0, 0, -1],   # droop\n    'leaves': 20,\n    'leaf_shape': -5.7,\n    'curve_res': [6, 5, 3, 0]\n}\n";

    #[test]
    fn merges_over_treegen_defaults() {
        let s = parse(ACER, "treegen/acer.py").unwrap();
        assert_eq!(s.species, "acer");
        assert_eq!(s.origin, SpecTool::TreeGen);
        assert_eq!(s.shape, 4);
        assert_eq!(s.base_splits, -2);
        assert_eq!(s.base_size, 0.1);
        assert_eq!(s.level[1].base_size, 0.4);
        assert_eq!(s.level[1].down_angle, 50.0);
        assert_eq!(s.level[2].attraction_up, -1.0);
        assert_eq!(s.level[1].attraction_up, 0.0);
        assert_eq!(s.leaf_shape, "5");
        // Defaults are tree-gen's, not Arbaro's.
        assert_eq!(s.scale, 13.0);
        assert_eq!(s.flare, 0.6);
        assert_eq!(s.leaves, 40);
        assert_eq!(s.extras["bend_v"], "[0.0, 50.0, 0.0, 0.0]");
        assert!(s
            .notes
            .iter()
            .any(|n| n.contains("leaves = 20") && n.contains("ignored")));
        assert!(s.notes.iter().any(|n| n == "docstring: ACER"));
    }

    #[test]
    fn errors() {
        let e = parse("params = {'shape': 'x'}", "t.py").unwrap_err();
        assert_eq!(e.parameter, "shape");
        let e = parse("params = {'length': [1, 2]}", "t.py").unwrap_err();
        assert_eq!(e.parameter, "length");
        let e = parse("\"\"\" A \"\"\"\nparams = {\n 'shape': 4,\n", "t.py").unwrap_err();
        assert!(e.parameter.starts_with("line"), "{e}");
        let e = parse("import os\nparams = {}", "t.py").unwrap_err();
        assert_eq!(e.parameter, "line 1");
        assert!(parse("\"\"\" only a docstring \"\"\"", "t.py").is_err());
        let e = parse("params = {'branches': [1, 1e9, 3, 4]}", "t.py").unwrap_err();
        assert_eq!(e.parameter, "1Branches");
    }
}
