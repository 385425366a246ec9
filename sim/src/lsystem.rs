//! Bracketed L-systems: a small text format, parallel rewriting (deterministic and stochastic),
//! a 3D turtle that builds a [`Skeleton`], pipe-model radii, and built-in presets.
//!
//! Sources:
//! - Prusinkiewicz & Lindenmayer, *The Algorithmic Beauty of Plants* (ABOP), Springer 1990:
//!   §1.2-1.3 (parallel rewriting, edge and node rewriting), §1.5 (3D turtle: `+ - & ^ \ / |`),
//!   §1.6 (bracketed OL-systems, Figure 1.24 on p. 25), §1.7 (stochastic OL-systems, one
//!   production chosen per occurrence with the stated probabilities).
//! - Oliapuram & Kumar 2010, *Realtime Forest Animation in Wind*, §1.4 "Tree generation"
//!   (paper 004 in `shared/papers/`), for the `oliapuram` preset.
//!
//! Invariants this module keeps:
//! - Symbols are single printable ASCII characters other than `#`, `(` and `)` (comment and
//!   weight syntax). The axiom and every successor have balanced brackets, so every expanded
//!   string does too.
//! - Expansion never allocates more than its cap: a lower bound of every iteration's length is
//!   computed from symbol counts before anything is expanded (exact for deterministic systems,
//!   so a hopeless request is refused at once), and the exact length of each next iteration is
//!   computed (replaying the same random draws) before its buffer is allocated.
//! - The skeleton is connected: segment 0 is the only root, every segment's parent precedes it and
//!   its base is exactly its parent's tip. `f` (move without drawing) therefore cannot leave a
//!   gap: a drawn segment always starts at the tip of the segment the turtle is on, so a move
//!   made by `f` is merged into the next segment drawn from there (which then spans the move and
//!   its own step). An `F` too short to be a segment (under 10 µm) is treated the same way.
//! - Radii follow the pipe model (Weber 2008 "Structure"; Runions et al. 2007): a terminal
//!   segment ends at the twig radius, the tip cross-section of a segment with children is exactly
//!   the sum of its children's base cross-sections, and a segment's base adds a little area per
//!   metre of its own length (`taper`), so stems taper between forks.
//!
//! Turtle (ABOP §1.5, y-up): the turtle starts at the origin with heading H = +y, left L = -x and
//! up U = +z (H × L = U). Rotations are right-handed about the turtle's own axes:
//!
//! | symbol | action |
//! |---|---|
//! | `F` | draw one segment forward (length `length · length_scale^depth`) |
//! | `f` | move forward without drawing (merged into the next segment drawn, see above) |
//! | `+` / `-` | turn left / right: rotate about U by +δ / -δ (H turns towards L / away from L) |
//! | `&` / `^` | pitch down / up: rotate about L by +δ / -δ (H turns towards -U / +U) |
//! | `\` / `/` | roll left / right: rotate about H by +δ / -δ |
//! | `\|` | turn around: rotate about U by 180° |
//! | `[` / `]` | push / pop the turtle state; a `[` starts a child stem of the segment the turtle is on |
//! | `L` | a leaf card at the turtle: on the segment it is on, at that segment's tip |
//! | `!` | multiply the width hint by `width_decrement`: twigs drawn afterwards in this branch end thinner |
//! | anything else | no drawing (e.g. `X`, `A`: placeholders for rewriting) |
//!
//! δ at bracket depth d is `angle · angle_scale^d` (capped at 180°), plus a uniform random
//! `±angle_jitter`; each step can also be lengthened by `±length_jitter` (relative) and preceded
//! by a random roll of `±roll_jitter` about H. All randomness comes from [`Rng`] seeded by the
//! caller: the same seed gives the same tree.
//!
//! Text format ([`LSystem::parse`], [`LSystem::to_text`]): one `key = value` setting or one rule
//! per line, `#` to the end of a line is a comment. Rules: `S -> symbols` (deterministic) or
//! `S -> (w1) symbols | (w2) symbols ...` (stochastic; weights positive and finite, normalised;
//! a `|` right before a `(` separates alternatives, anywhere else it is the turn-around symbol).
//! Settings (default, allowed):
//!
//! | key | default | allowed |
//! |---|---|---|
//! | `name` | the file name | 1 to 128 printable ASCII characters |
//! | `axiom` | required | 1 to 4096 symbols, balanced brackets |
//! | `iterations` | 4 | 0 to [`MAX_ITERATIONS`] |
//! | `angle` | 25 | 0 to 360 degrees |
//! | `length` | 0.5 | (0, 100] m |
//! | `length_scale`, `angle_scale` | 1 | (0, 1] and (0, 2] per bracket depth |
//! | `width` | none | 0.0001 to 10 m: root base radius, all radii scaled to it |
//! | `twig_radius` | 0.004 | 0.00001 to 1 m |
//! | `width_decrement` | 0.7 | (0, 1] per `!` |
//! | `taper` | 1 | 0 to 10 twig cross-sections per metre |
//! | `leaves_at_tips` | 0 | 0 to 64 (used when no successor or axiom has `L`) |
//! | `leaf_length`, `leaf_width` | 0.08, 0.04 | (0, 5] m |
//! | `angle_jitter`, `roll_jitter` | 0 | 0 to 180 degrees |
//! | `length_jitter` | 0 | 0 to 0.9 (relative) |
//!
//! Limits: [`MAX_TEXT_BYTES`] per file, [`MAX_LINE_BYTES`] per line, [`MAX_SUCCESSOR_SYMBOLS`]
//! per successor, [`MAX_ALTERNATIVES`] per rule, [`MAX_SYMBOLS`] per expanded string,
//! [`MAX_BRACKET_DEPTH`] nested brackets, and the skeleton's own segment and leaf limits.

use glam::{Quat, Vec3};

use crate::error::SimError;
use crate::rng::Rng;
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment, MAX_LEAVES_PER_TREE, MAX_SEGMENTS_PER_TREE};

/// Longest expanded string [`LSystem::expand`] and [`grow`] build (symbols = bytes).
pub const MAX_SYMBOLS: usize = 20_000_000;
/// Most rewriting iterations accepted, in a file or as an argument.
pub const MAX_ITERATIONS: u32 = 32;
/// Largest L-system text accepted by [`LSystem::parse`].
pub const MAX_TEXT_BYTES: usize = 256 * 1024;
/// Longest line accepted by [`LSystem::parse`].
pub const MAX_LINE_BYTES: usize = 16 * 1024;
/// Most symbols in the axiom or in one successor.
pub const MAX_SUCCESSOR_SYMBOLS: usize = 4096;
/// Most alternatives in one stochastic rule set.
pub const MAX_ALTERNATIVES: usize = 64;
/// Deepest bracket nesting the turtle follows (each level keeps one saved turtle state).
pub const MAX_BRACKET_DEPTH: usize = 10_000;
/// Most leaves put on each terminal segment by `leaves_at_tips`.
pub const MAX_LEAVES_AT_TIPS: u32 = 64;
/// Longest L-system name.
pub const MAX_NAME_BYTES: usize = 128;
/// Symbol cap of [`parse_and_expand_limited`].
pub const FUZZ_MAX_SYMBOLS: usize = 200_000;
/// Segment cap of [`parse_and_expand_limited`].
pub const FUZZ_MAX_SEGMENTS: usize = 50_000;

/// A step shorter than this draws no segment (the skeleton needs segments longer than 1 µm).
const MIN_SEGMENT_LENGTH: f32 = 1e-5;
/// The width hint never falls below this fraction of the twig radius, however many `!`.
const MIN_WIDTH_FACTOR: f32 = 1e-3;
/// Random-stream keys: expansion and turtle draw from independent streams of one seed.
const EXPAND_STREAM: u64 = 1;
const TURTLE_STREAM: u64 = 2;

/// One alternative of a rule: its successor string and its weight.
#[derive(Clone, Debug, PartialEq)]
pub struct Successor {
    /// Probability weight; [`LSystem::parse`] normalises a rule's weights to sum to 1, and
    /// expansion divides by the sum anyway, so any positive finite weights work.
    pub weight: f64,
    /// The successor's symbols (ASCII, no whitespace).
    pub symbols: String,
}

/// The production(s) of one predecessor symbol: one successor (deterministic) or a weighted set
/// of alternatives (stochastic, ABOP §1.7).
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub predecessor: char,
    pub successors: Vec<Successor>,
}

impl Rule {
    /// Deterministic rule `predecessor -> symbols`.
    pub fn deterministic(predecessor: char, symbols: &str) -> Rule {
        Rule {
            predecessor,
            successors: vec![Successor {
                weight: 1.0,
                symbols: symbols.to_string(),
            }],
        }
    }

    /// Whether expansion draws a random number for this rule.
    pub fn is_stochastic(&self) -> bool {
        self.successors.len() > 1
    }
}

/// A bracketed L-system with the turtle's drawing parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct LSystem {
    pub name: String,
    pub axiom: String,
    /// At most one rule per predecessor, in the order of the file.
    pub rules: Vec<Rule>,
    /// Turn angle δ in degrees.
    pub angle_deg: f32,
    /// Default number of rewriting iterations (callers may pass another).
    pub iterations: u32,
    /// Length of one `F` step at bracket depth 0 \[m\].
    pub length: f32,
    /// Step length multiplied by this per bracket depth.
    pub length_scale: f32,
    /// Turn angle multiplied by this per bracket depth.
    pub angle_scale: f32,
    /// Optional radius of the root's base \[m\]: all radii are scaled by one factor to meet it
    /// (which keeps the pipe model exact); `None` keeps the twig radius as given.
    pub width: Option<f32>,
    /// Radius at the tip of every terminal segment, before `!` and the `width` scaling \[m\].
    pub twig_radius: f32,
    /// Factor applied to the width hint by each `!`.
    pub width_decrement: f32,
    /// Cross-section added at a segment's base per metre of its length, in twig cross-sections.
    pub taper: f32,
    /// Leaves put on every terminal segment when the grammar has no `L`.
    pub leaves_at_tips: u32,
    /// Leaf blade length \[m\].
    pub leaf_length: f32,
    /// Leaf blade width \[m\].
    pub leaf_width: f32,
    /// Uniform random change of every turn, ± degrees.
    pub angle_jitter_deg: f32,
    /// Uniform random relative change of every step length, ±.
    pub length_jitter: f32,
    /// Uniform random roll about the heading before every `F`, ± degrees.
    pub roll_jitter_deg: f32,
}

/// What [`grow`] built.
#[derive(Clone, Debug, PartialEq)]
pub struct Grown {
    /// The tree; it passes [`Skeleton::validate`].
    pub skeleton: Skeleton,
    /// Length of the expanded string the turtle read.
    pub symbols: usize,
    /// Steps that drew no segment: `f` moves and `F` steps shorter than 10 µm, each merged into
    /// the next segment drawn from the same point.
    pub invisible_steps: usize,
    /// Deepest bracket nesting reached.
    pub max_depth: usize,
}

/// Numeric settings of the text format: (key, lowest, whether the lowest is allowed, highest, unit).
const NUMERIC_SETTINGS: &[(&str, f32, bool, f32, &str)] = &[
    ("angle", 0.0, true, 360.0, "degrees"),
    ("length", 0.0, false, 100.0, "metres"),
    ("length_scale", 0.0, false, 1.0, "factor per bracket depth"),
    ("angle_scale", 0.0, false, 2.0, "factor per bracket depth"),
    ("width", 1e-4, true, 10.0, "metres, root base radius"),
    ("twig_radius", 1e-5, true, 1.0, "metres"),
    ("width_decrement", 0.0, false, 1.0, "factor per `!`"),
    ("taper", 0.0, true, 10.0, "twig cross-sections per metre"),
    ("leaf_length", 0.0, false, 5.0, "metres"),
    ("leaf_width", 0.0, false, 5.0, "metres"),
    ("angle_jitter", 0.0, true, 180.0, "degrees"),
    ("length_jitter", 0.0, true, 0.9, "relative"),
    ("roll_jitter", 0.0, true, 180.0, "degrees"),
];

/// Every key the text format knows, for error messages.
const ALL_KEYS: &str = "name, axiom, iterations, leaves_at_tips, angle, length, length_scale, angle_scale, width, \
                        twig_radius, width_decrement, taper, leaf_length, leaf_width, angle_jitter, length_jitter, \
                        roll_jitter";

fn numeric_allowed(key: &str) -> Option<String> {
    NUMERIC_SETTINGS
        .iter()
        .find(|s| s.0 == key)
        .map(|&(_, lo, lo_ok, hi, unit)| {
            let open = if lo_ok { "[" } else { "(" };
            format!("must be a finite number in {open}{lo}, {hi}] ({unit})")
        })
}

fn numeric_ok(key: &str, v: f32) -> bool {
    NUMERIC_SETTINGS
        .iter()
        .find(|s| s.0 == key)
        .is_some_and(|&(_, lo, lo_ok, hi, _)| v.is_finite() && v <= hi && (v > lo || (lo_ok && v == lo)))
}

/// Whether `b` may be a symbol.
fn is_symbol(b: u8) -> bool {
    b.is_ascii_graphic() && !matches!(b, b'#' | b'(' | b')')
}

/// Checks a symbol string (whitespace already removed): characters, length, brackets.
fn check_symbols(s: &str, what: &str) -> Result<(), String> {
    if s.len() > MAX_SUCCESSOR_SYMBOLS {
        return Err(format!(
            "{what} has {} symbols; at most {MAX_SUCCESSOR_SYMBOLS} are allowed",
            s.len()
        ));
    }
    let mut depth = 0usize;
    for &b in s.as_bytes() {
        if !is_symbol(b) {
            return Err(format!(
                "{what} contains {:?}; symbols are printable ASCII characters other than `#`, `(` and `)`",
                b as char
            ));
        }
        match b {
            b'[' => depth += 1,
            b']' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("{what} has a `]` without a matching `[`"))?
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("{what} leaves {depth} `[` unclosed; brackets must balance"));
    }
    Ok(())
}

/// Removes whitespace from a symbol string and checks it.
fn symbols_from_text(text: &str, what: &str) -> Result<String, String> {
    let s: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    check_symbols(&s, what)?;
    Ok(s)
}

/// Parses the right-hand side of a rule: `symbols` or `(w) symbols | (w) symbols ...`.
fn parse_successors(body: &str, pred: char) -> Result<Vec<Successor>, String> {
    let body = body.trim();
    let what = format!("the successor of `{pred}`");
    if !body.starts_with('(') {
        if body.contains(['(', ')']) {
            return Err(
                "`(` and `)` only enclose weights: a stochastic rule gives every alternative a weight, \
                 e.g. `X -> (0.5) F[+X] | (0.5) F[-X]`"
                    .into(),
            );
        }
        return Ok(vec![Successor {
            weight: 1.0,
            symbols: symbols_from_text(body, &what)?,
        }]);
    }
    let mut alternatives = Vec::new();
    let mut rest = body;
    loop {
        if alternatives.len() == MAX_ALTERNATIVES {
            return Err(format!("more than {MAX_ALTERNATIVES} alternatives in one rule"));
        }
        let inner = rest
            .strip_prefix('(')
            .ok_or("every alternative must start with `(weight)`")?;
        let close = inner.find(')').ok_or("a `(` without its `)` around a weight")?;
        let weight_text = inner[..close].trim();
        let weight: f64 = weight_text
            .parse()
            .map_err(|_| format!("weight `{weight_text}` is not a number; weights must be positive finite numbers"))?;
        if !(weight.is_finite() && weight > 0.0) {
            return Err(format!(
                "weight {weight_text} is not allowed; weights must be positive finite numbers"
            ));
        }
        let after = &inner[close + 1..];
        let (text, tail) = match after.find('(') {
            Some(k) => (&after[..k], &after[k..]),
            None => (after, ""),
        };
        let text = if tail.is_empty() {
            text
        } else {
            text.trim_end()
                .strip_suffix('|')
                .ok_or("alternatives must be separated by `|`, e.g. `(0.5) F[+X] | (0.5) F[-X]`")?
        };
        if text.contains(')') {
            return Err("a `)` outside a weight".into());
        }
        alternatives.push(Successor {
            weight,
            symbols: symbols_from_text(text, &format!("alternative {} of `{pred}`", alternatives.len() + 1))?,
        });
        if tail.is_empty() {
            break;
        }
        rest = tail;
    }
    let sum: f64 = alternatives.iter().map(|a| a.weight).sum();
    if !sum.is_finite() {
        return Err("the weights' sum is not finite; use smaller weights".into());
    }
    for a in &mut alternatives {
        a.weight /= sum;
    }
    Ok(alternatives)
}

/// A parse error naming the file, the line and what is allowed.
fn syntax_error(file: &str, line: usize, text: &str, allowed: impl Into<String>) -> SimError {
    let mut shown: String = text.trim().chars().take(60).collect();
    if text.trim().chars().count() > 60 {
        shown.push('…');
    }
    SimError::param("l-system", format!("{file} line {line} `{shown}`"), allowed)
}

impl LSystem {
    /// An L-system with the given name and axiom, no rules, and default turtle settings.
    pub fn new(name: &str, axiom: &str) -> LSystem {
        LSystem {
            name: name.to_string(),
            axiom: axiom.to_string(),
            rules: Vec::new(),
            angle_deg: 25.0,
            iterations: 4,
            length: 0.5,
            length_scale: 1.0,
            angle_scale: 1.0,
            width: None,
            twig_radius: 0.004,
            width_decrement: 0.7,
            taper: 1.0,
            leaves_at_tips: 0,
            leaf_length: 0.08,
            leaf_width: 0.04,
            angle_jitter_deg: 0.0,
            length_jitter: 0.0,
            roll_jitter_deg: 0.0,
        }
    }

    fn numeric(&self, key: &str) -> Option<f32> {
        Some(match key {
            "angle" => self.angle_deg,
            "length" => self.length,
            "length_scale" => self.length_scale,
            "angle_scale" => self.angle_scale,
            "width" => self.width?,
            "twig_radius" => self.twig_radius,
            "width_decrement" => self.width_decrement,
            "taper" => self.taper,
            "leaf_length" => self.leaf_length,
            "leaf_width" => self.leaf_width,
            "angle_jitter" => self.angle_jitter_deg,
            "length_jitter" => self.length_jitter,
            "roll_jitter" => self.roll_jitter_deg,
            _ => return None,
        })
    }

    fn set_numeric(&mut self, key: &str, v: f32) {
        match key {
            "angle" => self.angle_deg = v,
            "length" => self.length = v,
            "length_scale" => self.length_scale = v,
            "angle_scale" => self.angle_scale = v,
            "width" => self.width = Some(v),
            "twig_radius" => self.twig_radius = v,
            "width_decrement" => self.width_decrement = v,
            "taper" => self.taper = v,
            "leaf_length" => self.leaf_length = v,
            "leaf_width" => self.leaf_width = v,
            "angle_jitter" => self.angle_jitter_deg = v,
            "length_jitter" => self.length_jitter = v,
            "roll_jitter" => self.roll_jitter_deg = v,
            _ => {}
        }
    }

    /// Parses the text format (see the module documentation and `to_text`):
    ///
    /// ```text
    /// # comment
    /// name = abop-1.24a
    /// axiom = F
    /// angle = 25.7
    /// iterations = 5
    /// F -> F[+F]F[-F]F
    /// X -> (0.33) F[+X]F[-X]+X | (0.33) F[-X]F[+X]-X | (0.34) F[&X]F[^X]X
    /// ```
    ///
    /// A line is a rule when the text before its first `->` is one symbol, else a `key = value`
    /// setting. `#` starts a comment. Whitespace inside symbol strings is ignored. Symbols without
    /// a rule are copied unchanged. Errors name `file`, the line and what is allowed.
    pub fn parse(text: &str, file: &str) -> Result<LSystem, SimError> {
        if text.len() > MAX_TEXT_BYTES {
            return Err(SimError::param(
                "l-system",
                format!("{file} ({} bytes)", text.len()),
                format!("an L-system file may have at most {MAX_TEXT_BYTES} bytes"),
            ));
        }
        // Named after the file unless it sets a name.
        let mut default_name: String = file
            .chars()
            .filter(|c| (c.is_ascii_graphic() || *c == ' ') && *c != '#')
            .take(MAX_NAME_BYTES)
            .collect();
        default_name = default_name.trim().to_string();
        if default_name.is_empty() {
            default_name = "l-system".into();
        }
        let mut ls = LSystem::new(&default_name, "");
        let mut seen: Vec<(&str, usize)> = Vec::new();
        let mut rule_line = [0usize; 128];
        let mut has_axiom = false;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |allowed: String| syntax_error(file, line, raw, allowed);
            if raw.len() > MAX_LINE_BYTES {
                return Err(err(format!("a line may have at most {MAX_LINE_BYTES} bytes")));
            }
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            if let Some(c) = content.chars().find(|c| !c.is_ascii()) {
                return Err(err(format!(
                    "{c:?} is not ASCII; L-system files are ASCII outside comments"
                )));
            }
            // A rule: exactly one symbol before the first `->`.
            if let Some(arrow) = content.find("->") {
                let pred = content[..arrow].trim();
                if pred.len() == 1 {
                    let p = pred.as_bytes()[0];
                    if !is_symbol(p) {
                        return Err(err(format!(
                            "{pred:?} cannot be a predecessor; symbols are printable ASCII other than `#`, `(`, `)`"
                        )));
                    }
                    if p == b'[' || p == b']' {
                        return Err(err("brackets cannot be rewritten; they delimit branches".into()));
                    }
                    if rule_line[p as usize] != 0 {
                        return Err(err(format!(
                            "`{pred}` already has a rule on line {}; a symbol may have one deterministic rule or \
                             one stochastic rule set (`{pred} -> (w) ... | (w) ...`)",
                            rule_line[p as usize]
                        )));
                    }
                    let successors = parse_successors(&content[arrow + 2..], p as char).map_err(err)?;
                    rule_line[p as usize] = line;
                    ls.rules.push(Rule {
                        predecessor: p as char,
                        successors,
                    });
                    continue;
                }
            }
            let Some((key, value)) = content.split_once('=') else {
                return Err(err(
                    "expected `key = value` or a rule `S -> successor` (S one symbol)".into()
                ));
            };
            let (key, value) = (key.trim(), value.trim());
            if let Some(&(_, first)) = seen.iter().find(|(k, _)| *k == key) {
                return Err(err(format!("`{key}` was already set on line {first}")));
            }
            match key {
                "name" => {
                    if value.is_empty() || value.len() > MAX_NAME_BYTES {
                        return Err(err(format!("a name has 1 to {MAX_NAME_BYTES} characters")));
                    }
                    ls.name = value.to_string();
                }
                "axiom" => {
                    ls.axiom = symbols_from_text(value, "the axiom").map_err(err)?;
                    if ls.axiom.is_empty() {
                        return Err(err("the axiom needs at least one symbol".into()));
                    }
                    has_axiom = true;
                }
                "iterations" | "leaves_at_tips" => {
                    let max = if key == "iterations" {
                        MAX_ITERATIONS
                    } else {
                        MAX_LEAVES_AT_TIPS
                    };
                    let n: u32 = value
                        .parse()
                        .ok()
                        .filter(|n| *n <= max)
                        .ok_or_else(|| err(format!("`{key}` must be a whole number from 0 to {max}")))?;
                    if key == "iterations" {
                        ls.iterations = n;
                    } else {
                        ls.leaves_at_tips = n;
                    }
                }
                _ => {
                    let Some(allowed) = numeric_allowed(key) else {
                        return Err(err(format!("unknown setting `{key}`; known settings: {ALL_KEYS}")));
                    };
                    let v: f32 = value.parse().map_err(|_| err(format!("`{key}` {allowed}")))?;
                    if !numeric_ok(key, v) {
                        return Err(err(format!("`{key}` {allowed}")));
                    }
                    ls.set_numeric(key, v);
                }
            }
            seen.push((key, line));
        }
        if !has_axiom {
            return Err(SimError::param(
                "l-system",
                file,
                "the file sets no axiom; add a line such as `axiom = F`",
            ));
        }
        ls.validate()?;
        Ok(ls)
    }

    /// Checks everything `parse` checks, for an L-system built or edited in code.
    pub fn validate(&self) -> Result<(), SimError> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= MAX_NAME_BYTES
            && self.name == self.name.trim()
            && self
                .name
                .bytes()
                .all(|b| (b.is_ascii_graphic() || b == b' ') && b != b'#');
        if !name_ok {
            return Err(SimError::param(
                "name",
                &self.name,
                format!("1 to {MAX_NAME_BYTES} printable ASCII characters, no `#`, no leading or trailing space"),
            ));
        }
        check_symbols(&self.axiom, "the axiom").map_err(|m| SimError::param("axiom", &self.axiom, m))?;
        if self.axiom.is_empty() {
            return Err(SimError::param("axiom", "", "the axiom needs at least one symbol"));
        }
        if self.iterations > MAX_ITERATIONS {
            return Err(SimError::param(
                "iterations",
                self.iterations,
                format!("allowed 0..={MAX_ITERATIONS}"),
            ));
        }
        if self.leaves_at_tips > MAX_LEAVES_AT_TIPS {
            return Err(SimError::param(
                "leaves_at_tips",
                self.leaves_at_tips,
                format!("allowed 0..={MAX_LEAVES_AT_TIPS}"),
            ));
        }
        for &(key, ..) in NUMERIC_SETTINGS {
            if let Some(v) = self.numeric(key) {
                if !numeric_ok(key, v) {
                    return Err(SimError::param(key, v, numeric_allowed(key).unwrap_or_default()));
                }
            }
        }
        let mut seen = [false; 128];
        for rule in &self.rules {
            let p = rule.predecessor;
            let pb = if p.is_ascii() { p as u8 } else { 0 };
            if !is_symbol(pb) || pb == b'[' || pb == b']' {
                return Err(SimError::param(
                    "rule predecessor",
                    format!("{p:?}"),
                    "a printable ASCII symbol other than `#`, `(`, `)`, `[`, `]`",
                ));
            }
            if std::mem::replace(&mut seen[pb as usize], true) {
                return Err(SimError::param(
                    "rule predecessor",
                    p,
                    "a symbol may have one deterministic rule or one stochastic rule set",
                ));
            }
            if rule.successors.is_empty() || rule.successors.len() > MAX_ALTERNATIVES {
                return Err(SimError::param(
                    "rule alternatives",
                    rule.successors.len(),
                    format!("a rule has 1 to {MAX_ALTERNATIVES} successors"),
                ));
            }
            let mut sum = 0.0f64;
            for s in &rule.successors {
                if !(s.weight.is_finite() && s.weight > 0.0) {
                    return Err(SimError::param(
                        "rule weight",
                        s.weight,
                        "weights must be positive finite numbers",
                    ));
                }
                sum += s.weight;
                check_symbols(&s.symbols, &format!("the successor of `{p}`"))
                    .map_err(|m| SimError::param("rule successor", &s.symbols, m))?;
            }
            if !sum.is_finite() {
                return Err(SimError::param("rule weight", sum, "the weights' sum must be finite"));
            }
        }
        Ok(())
    }

    /// Whether the axiom or a successor contains `L` (then `leaves_at_tips` is not used).
    pub fn has_leaf_symbol(&self) -> bool {
        self.axiom.contains('L')
            || self
                .rules
                .iter()
                .flat_map(|r| &r.successors)
                .any(|s| s.symbols.contains('L'))
    }

    /// The text format, which [`LSystem::parse`] reads back to an equal L-system (weights up to
    /// rounding, as they are normalised again).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("name = {}\n", self.name));
        out.push_str(&format!("axiom = {}\n", self.axiom));
        out.push_str(&format!("iterations = {}\n", self.iterations));
        for &(key, ..) in NUMERIC_SETTINGS {
            if let Some(v) = self.numeric(key) {
                out.push_str(&format!("{key} = {v}\n"));
            }
        }
        out.push_str(&format!("leaves_at_tips = {}\n", self.leaves_at_tips));
        for rule in &self.rules {
            out.push_str(&format!("{} -> ", rule.predecessor));
            if rule.is_stochastic() {
                let alternatives: Vec<String> = rule
                    .successors
                    .iter()
                    .map(|s| format!("({}) {}", s.weight, s.symbols))
                    .collect();
                out.push_str(&alternatives.join(" | "));
            } else if let Some(s) = rule.successors.first() {
                out.push_str(&s.symbols);
            }
            out.push('\n');
        }
        out
    }

    /// The string after `iterations` parallel rewritings, stochastic choices drawn from `seed`,
    /// refused if any iteration would exceed [`MAX_SYMBOLS`].
    pub fn expand(&self, iterations: u32, seed: u64) -> Result<String, SimError> {
        self.expand_capped(iterations, seed, MAX_SYMBOLS)
    }

    /// [`LSystem::expand`] with a caller's cap on the string length (at most [`MAX_SYMBOLS`]).
    pub fn expand_capped(&self, iterations: u32, seed: u64, max_symbols: usize) -> Result<String, SimError> {
        self.expand_with(iterations, seed, max_symbols, &mut |_| {})
    }

    /// A lower bound on the length of the string after each of `1..=iterations` rewritings,
    /// from symbol counts alone (nothing is expanded); exact for deterministic rules. Saturates
    /// at `u64::MAX`. Meaningful for a validated L-system.
    pub fn min_lengths(&self, iterations: u32) -> Vec<u64> {
        let table = Table::new(self);
        let mut counts = [0u64; 128];
        for &b in self.axiom.as_bytes() {
            counts[(b & 0x7f) as usize] += 1;
        }
        let mut out = Vec::with_capacity(iterations.min(MAX_ITERATIONS) as usize);
        for _ in 0..iterations.min(MAX_ITERATIONS) {
            let mut next = [0u64; 128];
            for (t, &c) in counts.iter().enumerate() {
                if c == 0 {
                    continue;
                }
                match table.rule_of[t] {
                    None => next[t] = next[t].saturating_add(c),
                    Some(r) => {
                        for (s, &m) in table.rules[r].min_counts.iter().enumerate() {
                            next[s] = next[s].saturating_add(c.saturating_mul(m as u64));
                        }
                    }
                }
            }
            counts = next;
            out.push(counts.iter().fold(0u64, |a, &c| a.saturating_add(c)));
        }
        out
    }

    fn expand_with(
        &self,
        iterations: u32,
        seed: u64,
        max_symbols: usize,
        progress: &mut dyn FnMut(f32),
    ) -> Result<String, SimError> {
        self.validate()?;
        if iterations > MAX_ITERATIONS {
            return Err(SimError::param(
                "iterations",
                iterations,
                format!("allowed 0..={MAX_ITERATIONS}"),
            ));
        }
        let cap = max_symbols.min(MAX_SYMBOLS);
        // For deterministic rules the count bound is exact, so the advice can be exact too.
        let deterministic = self.rules.iter().all(|r| !r.is_stochastic());
        let too_long = |iteration: usize, symbols: String| {
            let advice = if deterministic {
                format!("use at most {} iterations", iteration.saturating_sub(1))
            } else {
                "use fewer iterations".to_string()
            };
            SimError::param(
                "iterations",
                iterations,
                format!(
                    "`{}` would have {symbols} symbols after {iteration} iteration(s); the limit is {cap} symbols, \
                     so {advice}",
                    self.name
                ),
            )
        };
        if self.axiom.len() > cap {
            return Err(SimError::param(
                "max_symbols",
                cap,
                format!("the axiom of `{}` alone has {} symbols", self.name, self.axiom.len()),
            ));
        }
        // Instant refusal: a lower bound from symbol counts, no expansion and no large allocation.
        for (k, &lo) in self.min_lengths(iterations).iter().enumerate() {
            if lo > cap as u64 {
                let shown = if lo == u64::MAX {
                    format!("more than {}", u64::MAX)
                } else {
                    format!("at least {lo}")
                };
                return Err(too_long(k + 1, shown));
            }
        }

        let table = Table::new(self);
        let mut rng = Rng::new(seed).fork(EXPAND_STREAM);
        let mut current: Vec<u8> = self.axiom.as_bytes().to_vec();
        for k in 0..iterations as usize {
            progress(k as f32 / iterations as f32);
            // Exact length of the next string: replay this iteration's draws on a copy of the stream.
            let mut replay = rng.clone();
            let mut next_len = 0usize;
            for &b in &current {
                next_len += match table.rule_of[b as usize] {
                    None => 1,
                    Some(r) => table.rules[r].bodies[table.rules[r].choose(&mut replay)].len(),
                };
                if next_len > cap {
                    return Err(too_long(k + 1, format!("more than {cap}")));
                }
            }
            let mut next = Vec::with_capacity(next_len);
            for &b in &current {
                match table.rule_of[b as usize] {
                    None => next.push(b),
                    Some(r) => {
                        let rule = &table.rules[r];
                        next.extend_from_slice(&rule.bodies[rule.choose(&mut rng)]);
                    }
                }
            }
            debug_assert_eq!(next.len(), next_len);
            current = next;
        }
        progress(1.0);
        // Every symbol is ASCII (checked by `validate`), so this cannot fail.
        String::from_utf8(current).map_err(|_| SimError::Invariant("an expanded L-system string is not ASCII".into()))
    }
}

/// Rules compiled for expansion: a lookup by symbol, cumulative weights, successor bytes.
struct Table {
    rule_of: [Option<usize>; 128],
    rules: Vec<CompiledRule>,
}

struct CompiledRule {
    /// Cumulative normalised weights; the last is 1.
    cumulative: Vec<f64>,
    bodies: Vec<Vec<u8>>,
    /// For each symbol, the fewest times any alternative produces it.
    min_counts: Vec<u32>,
}

impl CompiledRule {
    /// Picks an alternative; deterministic rules draw nothing, so they never shift the stream.
    fn choose(&self, rng: &mut Rng) -> usize {
        if self.bodies.len() == 1 {
            return 0;
        }
        let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        self.cumulative
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.bodies.len() - 1)
    }
}

impl Table {
    /// Assumes a validated L-system (ASCII symbols, positive weights).
    fn new(ls: &LSystem) -> Table {
        let mut rule_of = [None; 128];
        let mut rules = Vec::with_capacity(ls.rules.len());
        for rule in &ls.rules {
            let total: f64 = rule.successors.iter().map(|s| s.weight).sum();
            let mut acc = 0.0;
            let mut cumulative: Vec<f64> = rule
                .successors
                .iter()
                .map(|s| {
                    acc += s.weight / total;
                    acc
                })
                .collect();
            if let Some(last) = cumulative.last_mut() {
                *last = 1.0;
            }
            let mut min_counts = vec![u32::MAX; 128];
            for s in &rule.successors {
                let mut c = [0u32; 128];
                for &b in s.symbols.as_bytes() {
                    c[(b & 0x7f) as usize] += 1;
                }
                for (m, &x) in min_counts.iter_mut().zip(c.iter()) {
                    *m = (*m).min(x);
                }
            }
            rule_of[(rule.predecessor as u32 & 0x7f) as usize] = Some(rules.len());
            rules.push(CompiledRule {
                cumulative,
                bodies: rule.successors.iter().map(|s| s.symbols.as_bytes().to_vec()).collect(),
                min_counts,
            });
        }
        Table { rule_of, rules }
    }
}

/// Turtle state saved by `[` and restored by `]`.
#[derive(Clone, Copy)]
struct Turtle {
    pos: Vec3,
    /// Turtle frame: H = q·Y, L = q·(-X), U = q·Z.
    q: Quat,
    /// The segment the turtle is on (its tip is where the next segment starts).
    attach: Option<u32>,
    depth: u32,
    /// Width hint, lowered by `!`.
    width: f32,
}

/// Expands `ls` for `iterations` with `seed` and interprets the string with the turtle.
/// `progress` receives non-decreasing fractions from 0 to 1.
pub fn grow(ls: &LSystem, iterations: u32, seed: u64, progress: &mut dyn FnMut(f32)) -> Result<Grown, SimError> {
    progress(0.0);
    let symbols = ls.expand_with(iterations, seed, MAX_SYMBOLS, &mut |f| progress(0.5 * f))?;
    let grown = interpret_with(ls, symbols.as_bytes(), seed, MAX_SEGMENTS_PER_TREE, &mut |f| {
        progress(0.5 + 0.5 * f)
    })?;
    progress(1.0);
    Ok(grown)
}

/// Interprets an already expanded string (or any symbol string) with the turtle of `ls`
/// (angle, lengths, radii, leaves); `seed` drives the jitters and leaf scatter.
pub fn interpret(ls: &LSystem, symbols: &str, seed: u64) -> Result<Grown, SimError> {
    interpret_with(ls, symbols.as_bytes(), seed, MAX_SEGMENTS_PER_TREE, &mut |_| {})
}

fn interpret_with(
    ls: &LSystem,
    symbols: &[u8],
    seed: u64,
    max_segments: usize,
    progress: &mut dyn FnMut(f32),
) -> Result<Grown, SimError> {
    ls.validate()?;
    let max_segments = max_segments.min(MAX_SEGMENTS_PER_TREE);
    // Every `L` makes one leaf: a string with too many is refused before any is made.
    let leaf_count = symbols.iter().filter(|&&c| c == b'L').count();
    if leaf_count > MAX_LEAVES_PER_TREE {
        return Err(SimError::param(
            "l-system",
            format!("`{}`", ls.name),
            format!(
                "the string has {leaf_count} `L` symbols, each a leaf; a tree may have at most {MAX_LEAVES_PER_TREE}"
            ),
        ));
    }
    let mut rng = Rng::new(seed).fork(TURTLE_STREAM);
    let mut t = Turtle {
        pos: Vec3::ZERO,
        q: Quat::IDENTITY,
        attach: None,
        depth: 0,
        width: 1.0,
    };
    let mut stack: Vec<Turtle> = Vec::new();
    let mut segments: Vec<SkeletonSegment> = Vec::new();
    let mut width_of: Vec<f32> = Vec::new();
    let mut leaves: Vec<SkeletonLeaf> = Vec::new();
    let mut invisible_steps = 0usize;
    let mut max_depth = 0usize;
    let leaf_symbols = ls.has_leaf_symbol();

    let step_length = |depth: u32, rng: &mut Rng| {
        let mut len = ls.length * ls.length_scale.powi(depth.min(i32::MAX as u32) as i32);
        if ls.length_jitter > 0.0 {
            len *= 1.0 + rng.sym(ls.length_jitter);
        }
        len
    };
    let turn = |depth: u32, rng: &mut Rng| {
        let mut deg = (ls.angle_deg * ls.angle_scale.powi(depth.min(i32::MAX as u32) as i32)).min(180.0);
        if ls.angle_jitter_deg > 0.0 {
            deg += rng.sym(ls.angle_jitter_deg);
        }
        deg.to_radians()
    };

    for (i, &c) in symbols.iter().enumerate() {
        if i % (1 << 20) == 0 {
            progress(0.9 * i as f32 / symbols.len() as f32);
        }
        match c {
            b'F' | b'f' => {
                if c == b'F' && ls.roll_jitter_deg > 0.0 {
                    t.q = (t.q * Quat::from_rotation_y(rng.sym(ls.roll_jitter_deg).to_radians())).normalize();
                }
                let len = step_length(t.depth, &mut rng);
                let target = t.pos + (t.q * Vec3::Y) * len;
                if c == b'f' {
                    t.pos = target;
                    invisible_steps += 1;
                    continue;
                }
                let base = match t.attach {
                    Some(p) => segments[p as usize].tip,
                    None if segments.is_empty() => Vec3::ZERO,
                    None => {
                        return Err(SimError::param(
                            "l-system",
                            format!("`{}` (symbol {i} of the expanded string)", ls.name),
                            "the string starts a second stem from the ground; a tree has one root, so every `F` \
                             after the first must be drawn from the tip of a segment (e.g. start the axiom with F)",
                        ))
                    }
                };
                let d = target - base;
                if !(d.length() >= MIN_SEGMENT_LENGTH && target.is_finite()) {
                    // Too short to be a segment: a move, merged into the next segment drawn.
                    t.pos = target;
                    invisible_steps += 1;
                    continue;
                }
                if segments.len() >= max_segments {
                    return Err(SimError::param(
                        "l-system",
                        format!("`{}`", ls.name),
                        format!(
                            "the string draws more than {max_segments} segments, the most one tree may have; \
                             use fewer iterations"
                        ),
                    ));
                }
                segments.push(SkeletonSegment {
                    parent: t.attach,
                    base,
                    tip: target,
                    radius_base: 1.0,
                    radius_tip: 1.0,
                });
                width_of.push(t.width);
                t.attach = Some(segments.len() as u32 - 1);
                t.pos = target;
            }
            b'+' => t.q = (t.q * Quat::from_rotation_z(turn(t.depth, &mut rng))).normalize(),
            b'-' => t.q = (t.q * Quat::from_rotation_z(-turn(t.depth, &mut rng))).normalize(),
            // Rotation about L = -X by +δ is rotation about X by -δ.
            b'&' => t.q = (t.q * Quat::from_rotation_x(-turn(t.depth, &mut rng))).normalize(),
            b'^' => t.q = (t.q * Quat::from_rotation_x(turn(t.depth, &mut rng))).normalize(),
            b'\\' => t.q = (t.q * Quat::from_rotation_y(turn(t.depth, &mut rng))).normalize(),
            b'/' => t.q = (t.q * Quat::from_rotation_y(-turn(t.depth, &mut rng))).normalize(),
            b'|' => t.q = (t.q * Quat::from_rotation_z(std::f32::consts::PI)).normalize(),
            b'[' => {
                if stack.len() >= MAX_BRACKET_DEPTH {
                    return Err(SimError::param(
                        "l-system",
                        format!("`{}`", ls.name),
                        format!("brackets nest deeper than {MAX_BRACKET_DEPTH} levels"),
                    ));
                }
                stack.push(t);
                t.depth += 1;
                max_depth = max_depth.max(stack.len());
            }
            b']' => {
                t = stack.pop().ok_or_else(|| {
                    SimError::param(
                        "l-system",
                        format!("symbol {i}"),
                        "a `]` without a matching `[`; brackets must balance",
                    )
                })?;
            }
            b'L' => {
                if leaves.len() >= MAX_LEAVES_PER_TREE {
                    return Err(SimError::param(
                        "l-system",
                        format!("`{}`", ls.name),
                        format!("the string makes more than {MAX_LEAVES_PER_TREE} leaves, the most one tree may have"),
                    ));
                }
                // On the segment the turtle is on, at its tip; before any segment (or back at the
                // ground) at the root's base. The card's axes are the turtle's: blade along H,
                // normal along U.
                let (segment, along) = match t.attach {
                    Some(p) => (p, 1.0),
                    None => (0, 0.0),
                };
                leaves.push(SkeletonLeaf {
                    segment,
                    along,
                    orientation: t.q,
                    length: ls.leaf_length,
                    width: ls.leaf_width,
                });
            }
            b'!' => t.width = (t.width * ls.width_decrement).max(MIN_WIDTH_FACTOR),
            _ => {}
        }
    }
    if segments.is_empty() {
        return Err(SimError::param(
            "l-system",
            format!("`{}` ({} symbols)", ls.name, symbols.len()),
            "the string draws no segment (no `F` at least 10 µm long); a tree needs at least one",
        ));
    }
    progress(0.9);

    let n = segments.len();
    let mut children = vec![0u32; n];
    for s in &segments {
        if let Some(p) = s.parent {
            children[p as usize] += 1;
        }
    }
    if !leaf_symbols && ls.leaves_at_tips > 0 {
        let tips = children.iter().filter(|&&c| c == 0).count();
        let total = tips.saturating_mul(ls.leaves_at_tips as usize);
        if total > MAX_LEAVES_PER_TREE {
            return Err(SimError::param(
                "leaves_at_tips",
                ls.leaves_at_tips,
                format!("{tips} terminal segments would carry {total} leaves; at most {MAX_LEAVES_PER_TREE}"),
            ));
        }
        leaves.reserve_exact(total);
        let mut leaf_rng = Rng::new(seed).fork(TURTLE_STREAM + 1);
        for (i, s) in segments.iter().enumerate().filter(|(i, _)| children[*i] == 0) {
            tip_leaves(i as u32, s, ls, &mut leaf_rng, &mut leaves);
        }
    }
    pipe_radii(&mut segments, &children, &width_of, ls);

    let skeleton = Skeleton { segments, leaves };
    skeleton
        .validate()
        .map_err(|e| SimError::Invariant(format!("the L-system turtle built an invalid skeleton (a bug): {e}")))?;
    progress(1.0);
    Ok(Grown {
        skeleton,
        symbols: symbols.len(),
        invisible_steps,
        max_depth,
    })
}

/// `ls.leaves_at_tips` leaves on a terminal segment, from its tip down to 40 % of its length,
/// turned around it by the golden angle and tilted 35° to 65° off its axis.
fn tip_leaves(index: u32, s: &SkeletonSegment, ls: &LSystem, rng: &mut Rng, out: &mut Vec<SkeletonLeaf>) {
    let axis = (s.tip - s.base).normalize();
    let side = axis.any_orthonormal_vector();
    let golden = std::f32::consts::PI * (3.0 - 5.0f32.sqrt());
    let k = ls.leaves_at_tips;
    let start = rng.range(0.0, std::f32::consts::TAU);
    for j in 0..k {
        let azimuth = start + golden * j as f32;
        let tilt = rng.range(35.0, 65.0).to_radians();
        let out_dir = Quat::from_axis_angle(axis, azimuth) * side;
        let blade = (axis * tilt.cos() + out_dir * tilt.sin()).normalize();
        // Face the card's normal away from the stem, perpendicular to the blade.
        let normal = (axis - blade * axis.dot(blade)).normalize_or(blade.any_orthonormal_vector());
        let x = blade.cross(normal);
        let orientation = Quat::from_mat3(&glam::Mat3::from_cols(x, blade, normal)).normalize();
        out.push(SkeletonLeaf {
            segment: index,
            along: 1.0 - 0.6 * j as f32 / k as f32,
            orientation,
            length: ls.leaf_length,
            width: ls.leaf_width,
        });
    }
}

/// Pipe-model radii, computed tip to root in f64 as squared radii (area / π): a terminal
/// segment's tip carries one twig pipe (`twig_radius`, lowered by `!`), the tip of a segment with
/// children is exactly the sum of their bases, and a base adds `taper` twig pipes per metre of the
/// segment. A `width` hint then scales every area by one factor, which keeps each sum exact.
fn pipe_radii(segments: &mut [SkeletonSegment], children: &[u32], width_of: &[f32], ls: &LSystem) {
    let n = segments.len();
    let mut tip = vec![0.0f64; n];
    let mut base = vec![0.0f64; n];
    for i in (0..n).rev() {
        let twig = (ls.twig_radius as f64 * width_of[i] as f64).powi(2);
        if children[i] == 0 {
            tip[i] = twig;
        }
        base[i] = tip[i] + ls.taper as f64 * twig * segments[i].length() as f64;
        if let Some(p) = segments[i].parent {
            tip[p as usize] += base[i];
        }
    }
    let scale = ls.width.map_or(1.0, |w| (w as f64).powi(2) / base[0]);
    for (i, s) in segments.iter_mut().enumerate() {
        s.radius_base = (base[i] * scale).sqrt() as f32;
        s.radius_tip = (tip[i] * scale).sqrt() as f32;
    }
}

/// Built-in L-systems, each cited in its text. ABOP's Figure 1.24 systems are drawn in the plane
/// (they only use `+` and `-`), as published; their `length` is chosen for trees of a few metres.
const PRESETS: &[(&str, &str)] = &[
    (
        "abop-1.24a",
        "# ABOP (Prusinkiewicz & Lindenmayer 1990), p. 25, Figure 1.24a: edge rewriting,
# n = 5, delta = 25.7 deg, axiom F, F -> F[+F]F[-F]F.
name = abop-1.24a
axiom = F
angle = 25.7
iterations = 5
length = 0.033
leaves_at_tips = 2
F -> F[+F]F[-F]F
",
    ),
    (
        "abop-1.24b",
        "# ABOP p. 25, Figure 1.24b: edge rewriting, n = 5, delta = 20 deg, axiom F, F -> F[+F]F[-F][F].
name = abop-1.24b
axiom = F
angle = 20
iterations = 5
length = 0.13
leaves_at_tips = 2
F -> F[+F]F[-F][F]
",
    ),
    (
        "abop-1.24c",
        "# ABOP p. 25, Figure 1.24c: edge rewriting, n = 4, delta = 22.5 deg, axiom F,
# F -> FF-[-F+F+F]+[+F-F-F].
name = abop-1.24c
axiom = F
angle = 22.5
iterations = 4
length = 0.14
leaves_at_tips = 2
F -> FF-[-F+F+F]+[+F-F-F]
",
    ),
    (
        "abop-1.24d",
        "# ABOP p. 25, Figure 1.24d: node rewriting, n = 7, delta = 20 deg, axiom X,
# X -> F[+X]F[-X]+X, F -> FF.
name = abop-1.24d
axiom = X
angle = 20
iterations = 7
length = 0.032
leaves_at_tips = 2
X -> F[+X]F[-X]+X
F -> FF
",
    ),
    (
        "abop-1.24e",
        "# ABOP p. 25, Figure 1.24e: node rewriting, n = 7, delta = 25.7 deg, axiom X,
# X -> F[+X][-X]FX, F -> FF.
name = abop-1.24e
axiom = X
angle = 25.7
iterations = 7
length = 0.031
leaves_at_tips = 2
X -> F[+X][-X]FX
F -> FF
",
    ),
    (
        "abop-1.24f",
        "# ABOP p. 25, Figure 1.24f: node rewriting, n = 5, delta = 22.5 deg, axiom X,
# X -> F-[[X]+X]+F[+FX]-X, F -> FF.
name = abop-1.24f
axiom = X
angle = 22.5
iterations = 5
length = 0.1
leaves_at_tips = 2
X -> F-[[X]+X]+F[+FX]-X
F -> FF
",
    ),
    (
        "oliapuram",
        "# Oliapuram & Kumar 2010, section 1.4 'Tree generation' (paper 004): a bracketed L-system with
# a randomized recursive grammar in which 'each branch has 5 children, of which one is a
# continuation of itself': F = G[R1 F][R2 F][R3 F][R4 F][F], G the stem, R1..R4 rotations.
# Here A is their recursive symbol F and our F is their stem G; R1..R4 are the four turtle
# rotations + - & ^ (left, right, down, up), so the four side children leave in four directions.
# 'Everytime a recursion terminates (based on a random variable), leaves are generated': the
# alternative `F` ends a branch, and every terminal segment gets leaves (leaves_at_tips).
# 'We gradually reduce the branch thickness and height at increasing recursion depths':
# length_scale per bracket depth, thickness from the pipe model. 'We also add a random small
# rotation along the axis of the branch at each step': roll_jitter. 'Randomly choosing from a
# family of generation rules': the two five-child alternatives below; random angles and lengths:
# angle_jitter and length_jitter. The weights are ours (the paper gives none): 5 x 0.83 = 4.15
# children expected per node, which with 6 iterations gives about 1,600 segments, close to the
# paper's 1,597-segment tree (Sylva's TreeSize::Oliapuram).
name = oliapuram
axiom = A
angle = 32
iterations = 6
length = 1.6
length_scale = 0.78
angle_jitter = 10
length_jitter = 0.2
roll_jitter = 20
leaves_at_tips = 3
leaf_length = 0.09
leaf_width = 0.05
A -> (0.53) F/[+A][-A][&A][^A][A] | (0.30) F//[++A][-A][&&A][^A][A] | (0.17) F
",
    ),
];

/// Names of the built-in L-systems, for [`preset`].
pub fn preset_names() -> &'static [&'static str] {
    &[
        "abop-1.24a",
        "abop-1.24b",
        "abop-1.24c",
        "abop-1.24d",
        "abop-1.24e",
        "abop-1.24f",
        "oliapuram",
    ]
}

/// The built-in L-system `name` (see [`preset_names`]).
pub fn preset(name: &str) -> Option<LSystem> {
    let (_, text) = PRESETS.iter().find(|(n, _)| *n == name)?;
    LSystem::parse(text, &format!("<preset {name}>")).ok()
}

/// The built-in text of preset `name`, as [`LSystem::parse`] reads it.
pub fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Fuzzing entry point: parses `text`, expands it for its own `iterations` with seed 0 under
/// [`FUZZ_MAX_SYMBOLS`], interprets it with the turtle under [`FUZZ_MAX_SEGMENTS`] and checks that
/// `to_text` parses back. Returns the expanded length. Refusals are ordinary errors; a
/// [`SimError::Invariant`] means a bug in this module (a fuzz target should panic on it).
pub fn parse_and_expand_limited(text: &str) -> Result<usize, SimError> {
    let ls = LSystem::parse(text, "<fuzz>")?;
    let symbols = ls.expand_capped(ls.iterations, 0, FUZZ_MAX_SYMBOLS)?;
    if let Err(e @ SimError::Invariant(_)) = interpret_with(&ls, symbols.as_bytes(), 0, FUZZ_MAX_SEGMENTS, &mut |_| {})
    {
        return Err(e);
    }
    match LSystem::parse(&ls.to_text(), "<fuzz round trip>") {
        Ok(again) if again.rules.len() == ls.rules.len() && again.axiom == ls.axiom => Ok(symbols.len()),
        Ok(_) => Err(SimError::Invariant(
            "to_text did not read back to the same rules".into(),
        )),
        Err(e) => Err(SimError::Invariant(format!("to_text did not parse back: {e}"))),
    }
}

#[cfg(test)]
mod tests;
