//! Every parser against generated hostile inputs (see `sylva_tests::hostile`): no panic, a
//! bounded time per case, bounded size (every grown tree is checked against the generator's
//! limits and its own size estimate; the worst cases run in a child process whose
//! peak memory is measured), and a refusal that names the parameter that was changed.
//!
//! The bulk of the cases grow trees with small generator limits (100,000 segments), so each
//! case stays in milliseconds; the cases with the default limits are the named examples.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sylva_sim::colonize::{self, ColonizeParams, Envelope};
use sylva_sim::lsystem::{self, LSystem};
use sylva_sim::spec::load::{load_file, load_str};
use sylva_sim::spec::{SpecError, WeberPennSpec};
use sylva_sim::weberpenn::{generate, GenLimits, GenOptions};
use sylva_sim::{Material, SimError};
use sylva_tests::forest_of;
use sylva_tests::hostile::{
    arbaro_base_name, bases, flips, mutations, noise, peak_rss_bytes, truncations, Base, Case, Format, Mutation,
    Parser, Rand,
};

/// Most time one case may take (parse, grow with the small limits, build the forest).
const CASE_LIMIT: Duration = Duration::from_secs(2);
/// Generator limits for the bulk of the cases.
const SMALL: GenLimits = GenLimits {
    max_segments: 100_000,
    max_leaves: 400_000,
};
/// Largest coordinate a grown tree may have: the longest stem allowed on each of 9 levels.
const MAX_EXTENT: f32 = 9.0 * sylva_sim::spec::validate::MAX_STEM_LENGTH as f32;

/// What one case came to.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    cases: usize,
    refused: usize,
    grown: usize,
    segments: usize,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.cases += o.cases;
        self.refused += o.refused;
        self.grown += o.grown;
        self.segments += o.segments;
    }
}

/// Whether a refusal names the parameter `m` changed (by the format's name or Arbaro's, with
/// or without the level digit), or the line it is on when the value is not even a number in
/// that format.
fn names_parameter(format: Format, e: &SpecError, m: &Mutation) -> bool {
    if m.key.is_empty() {
        return true;
    }
    let base = arbaro_base_name(format, &m.key);
    let param = e.parameter.trim_start_matches(|c: char| c.is_ascii_digit());
    param == base
        || e.parameter == m.key
        || e.message.contains(&m.key)
        || e.message.contains(&base)
        || e.parameter == format!("line {}", m.line)
        || e.message.contains(&format!("line {}", m.line))
}

/// Grows a loaded spec and checks the tree: a refusal is a parameter error (never a broken
/// skeleton or forest invariant), a tree is within the limits and its estimate, finite and
/// of bounded extent, and makes a forest.
fn grow_and_check(spec: &WeberPennSpec, limits: GenLimits, name: &str) -> Tally {
    let mut t = Tally::default();
    let opts = GenOptions {
        limits,
        ..GenOptions::default()
    };
    match generate(spec, &opts, &mut |_| {}) {
        Err(SimError::Parameter { .. }) => t.refused += 1,
        Err(e) => panic!("{name}: the spec loaded but the generator failed on an internal check: {e}"),
        Ok(g) => {
            let skel = &g.skeleton;
            skel.validate()
                .unwrap_or_else(|e| panic!("{name}: the generated skeleton is invalid: {e}"));
            let estimate = spec.estimate_size();
            let n = skel.segments.len();
            assert!(
                n <= 2 * limits.max_segments && skel.leaves.len() <= limits.max_leaves,
                "{name}: {n} segments, {} leaves beyond the limits",
                skel.leaves.len()
            );
            assert!(
                n as f64 <= 2.0 * estimate.skeleton_segments + 64.0,
                "{name}: {n} segments, estimated {}",
                estimate.skeleton_segments
            );
            assert!(
                skel.leaves.len() as f64 <= 2.0 * estimate.leaves + 64.0,
                "{name}: {} leaves, estimated {}",
                skel.leaves.len(),
                estimate.leaves
            );
            for s in &skel.segments {
                assert!(
                    s.tip.abs().max_element() <= MAX_EXTENT,
                    "{name}: a segment ends at {} (beyond {MAX_EXTENT} m)",
                    s.tip
                );
            }
            assert!(
                g.stats.height.is_finite() && g.stats.width.is_finite(),
                "{name}: {:?}",
                g.stats
            );
            match forest_of(skel, &Material::default()) {
                Ok(_) | Err(SimError::Parameter { .. }) => {}
                Err(e) => panic!("{name}: the tree grew but the forest refused it on an internal check: {e}"),
            }
            t.grown += 1;
            t.segments += n;
        }
    }
    t
}

/// Runs one case, checking everything but the time (see [`run`]).
fn check(case: &Case, limits: GenLimits) -> Tally {
    let mut t = Tally {
        cases: 1,
        ..Tally::default()
    };
    let name = &case.name;
    match case.parser {
        Parser::Spec => {
            let loaded = match std::str::from_utf8(&case.bytes) {
                Ok(text) => load_str(text, "hostile"),
                Err(_) => {
                    // Not text: through the file reader, which must say so.
                    let path = temp_file(&format!("{}.bin", t.cases), &case.bytes);
                    let r = load_file(&path);
                    let _ = std::fs::remove_file(&path);
                    if let Err(e) = &r {
                        assert_eq!(e.parameter, "encoding", "{name}: {e}");
                    }
                    r
                }
            };
            match loaded {
                Err(e) => {
                    t.refused += 1;
                    assert!(!e.message.is_empty() && !e.parameter.is_empty(), "{name}: {e:?}");
                    if let Some(m) = &case.mutation {
                        assert!(
                            names_parameter(case.format, &e, m),
                            "{name}: the refusal does not name {} ({}): {e}",
                            m.key,
                            arbaro_base_name(case.format, &m.key)
                        );
                    }
                }
                Ok(lib) => {
                    for spec in lib.species.iter().take(3) {
                        t += grow_and_check(spec, limits, name);
                    }
                }
            }
        }
        Parser::LSystem => {
            let text = String::from_utf8_lossy(&case.bytes);
            match LSystem::parse(&text, "hostile.lsys") {
                Err(e) => {
                    t.refused += 1;
                    let SimError::Parameter {
                        name: p,
                        value,
                        allowed,
                    } = &e
                    else {
                        panic!("{name}: not a parameter error: {e}");
                    };
                    assert!(!allowed.is_empty(), "{name}: {e}");
                    if let Some(m) = case.mutation.as_ref().filter(|m| !m.key.is_empty()) {
                        let text = format!("{p} {value} {allowed}");
                        assert!(
                            text.contains(&m.key) || text.contains(&format!("line {}", m.line)),
                            "{name}: the refusal does not name {}: {e}",
                            m.key
                        );
                    }
                }
                Ok(_) => {
                    // The same text through the bounded expansion and turtle.
                    match lsystem::parse_and_expand_limited(&text) {
                        Ok(_) => t.grown += 1,
                        Err(SimError::Invariant(e)) => panic!("{name}: internal invariant: {e}"),
                        Err(_) => t.refused += 1,
                    }
                }
            }
        }
        Parser::Points => {
            let text = String::from_utf8_lossy(&case.bytes);
            match colonize::parse_points(&text, "crown.xyz") {
                Err(e) => {
                    t.refused += 1;
                    let msg = e.to_string();
                    if let Some(m) = &case.mutation {
                        assert!(
                            msg.contains(&format!("crown.xyz:{}", m.line)),
                            "{name}: the refusal does not name line {}: {msg}",
                            m.line
                        );
                    }
                }
                Ok(points) => {
                    let params = ColonizeParams {
                        crown: Envelope::Points(points),
                        points: 1000,
                        ..ColonizeParams::default()
                    };
                    match colonize::colonize(&params, &mut |_| {}) {
                        Ok(g) => {
                            t.grown += 1;
                            for tree in &g.trees {
                                tree.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
                            }
                        }
                        Err(SimError::Parameter { .. }) => t.refused += 1,
                        Err(e) => panic!("{name}: internal check failed: {e}"),
                    }
                }
            }
        }
    }
    t
}

/// Runs every case: no panic, each within [`CASE_LIMIT`]. Failures are collected and reported
/// together (the first 20).
fn run(label: &str, cases: &[Case], limits: GenLimits) -> Tally {
    let start = Instant::now();
    let mut total = Tally::default();
    let mut failures = Vec::new();
    let mut slowest = (Duration::ZERO, String::new());
    for case in cases {
        let t0 = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| check(case, limits)));
        let dt = t0.elapsed();
        if dt > slowest.0 {
            slowest = (dt, case.name.clone());
        }
        match r {
            Ok(t) => total += t,
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("{}: {msg}", case.name));
            }
        }
        if dt > CASE_LIMIT {
            failures.push(format!("{}: took {dt:?} (limit {CASE_LIMIT:?})", case.name));
        }
    }
    eprintln!(
        "{label}: {} cases ({} refused, {} grown, {} segments) in {:.2?}; slowest {:.2?}: {}",
        total.cases + failures.len(),
        total.refused,
        total.grown,
        total.segments,
        start.elapsed(),
        slowest.0,
        slowest.1
    );
    for f in &failures {
        eprintln!("FAILED {f}");
    }
    // The whole test process, every case so far included (the limits keep each tree small).
    if let Some(peak) = peak_rss_bytes() {
        assert!(peak < 1 << 30, "{label}: peak resident memory {} MiB", peak >> 20);
    }
    assert!(
        failures.is_empty(),
        "{label}: {} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
    total
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sylva-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn bases_of(parser: Parser) -> Vec<Base> {
    bases().into_iter().filter(|b| b.parser == parser).collect()
}

#[test]
fn spec_files_with_extreme_numbers() {
    let mut cases = Vec::new();
    for base in bases_of(Parser::Spec) {
        // The built-in species grows a full tree: a quarter of the extremes per number.
        let per = if base.format == Format::Sylva { 4 } else { 16 };
        cases.extend(mutations(&base, per));
    }
    let t = run("spec numbers", &cases, SMALL);
    assert!(t.refused > 0 && t.grown > 0);
}

#[test]
fn spec_files_cut_short_flipped_and_noise() {
    let mut rng = Rand::new(11);
    let mut cases = Vec::new();
    for base in bases_of(Parser::Spec) {
        cases.extend(truncations(&base, 23));
        cases.extend(flips(&base, 60, &mut rng));
    }
    cases.extend(
        noise(300, 4096, &mut rng)
            .into_iter()
            .filter(|c| c.parser == Parser::Spec),
    );
    run("spec bytes", &cases, SMALL);
}

#[test]
fn lsystems_and_points_files() {
    let mut rng = Rand::new(12);
    let mut cases = Vec::new();
    for base in bases_of(Parser::LSystem).into_iter().chain(bases_of(Parser::Points)) {
        cases.extend(mutations(&base, 16));
        cases.extend(truncations(&base, 7));
        cases.extend(flips(&base, 40, &mut rng));
    }
    cases.extend(
        noise(300, 4096, &mut rng)
            .into_iter()
            .filter(|c| c.parser != Parser::Spec),
    );
    let t = run("l-system and points", &cases, SMALL);
    assert!(t.refused > 0 && t.grown > 0);
}

/// The generator's own limits with default settings: the examples are refused at once,
/// naming the parameter, and well within memory. Run in a child process so its peak resident
/// memory is its own.
#[test]
fn worst_cases_refused_early_and_small() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "worst_cases_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("SYLVA_HOSTILE_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(out.status.success(), "the child failed:\n{text}");
    assert!(text.contains("peak resident memory"), "{text}");
}

/// Peak resident memory allowed for the child's worst cases.
const CHILD_MEMORY: u64 = 400 << 20;

#[test]
#[ignore = "run by worst_cases_refused_early_and_small in a child process"]
fn worst_cases_child() {
    if std::env::var_os("SYLVA_HOSTILE_CHILD").is_none() {
        return;
    }
    let arbaro = bases().into_iter().find(|b| b.format == Format::Arbaro).unwrap().text;
    let set = |text: &str, param: &str, value: &str| -> String {
        let needle = format!("name='{param}' value='");
        let i = text.find(&needle).unwrap_or_else(|| panic!("{param}")) + needle.len();
        let j = i + text[i..].find('\'').unwrap();
        format!("{}{value}{}", &text[..i], &text[j..])
    };
    let timed = |label: &str, f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        let dt = t.elapsed();
        eprintln!("{label}: {dt:.2?}");
        assert!(dt < CASE_LIMIT, "{label}: {dt:?}");
    };
    let refused_at_load = |text: &str, param: &str| {
        let e = load_str(text, "x.xml").unwrap_err();
        assert_eq!(e.parameter, param, "{e}");
        assert!(e.message.contains("allowed"), "{e}");
    };
    // 0Length 1e300 and 1e30 were accepted (height 0 / a 1e31 m tree).
    timed("0Length = 1e300", &mut || {
        refused_at_load(&set(&arbaro, "0Length", "1e300"), "0Length")
    });
    timed("0Length = 1e30", &mut || {
        refused_at_load(&set(&arbaro, "0Length", "1e30"), "0Length")
    });
    // Huge nLength on the branches: the children's count saturated and the loop ran to it.
    timed("1Length = 1e12", &mut || {
        refused_at_load(&set(&arbaro, "1Length", "1e12"), "1Length")
    });

    let grow = |text: &str| -> Result<usize, SimError> {
        let lib = load_str(text, "x").unwrap_or_else(|e| panic!("{e}"));
        generate(&lib.species[0], &GenOptions::default(), &mut |_| {}).map(|g| g.skeleton.segments.len())
    };
    let refused_at_growth = |text: &str, what: &str| {
        let e = grow(text).unwrap_err();
        let SimError::Parameter { name, allowed, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(*name, "tree size", "{e}");
        assert!(allowed.contains(what), "{e}");
    };
    // Every count at its cap: refused from the estimate, before growing.
    let mut big = arbaro.clone();
    for (p, v) in [
        ("1Branches", "10000"),
        ("1CurveRes", "1000"),
        ("0CurveRes", "1000"),
        ("Leaves", "100000"),
    ] {
        big = set(&big, p, v);
    }
    timed("branches, resolution and leaves at their caps", &mut || {
        refused_at_growth(&big, "CurveRes = 1000")
    });
    // The largest nSegSplits allowed on the built-in quaking aspen (grew to 8 GB).
    let aspen =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/species/quaking_aspen.sylva"))
            .unwrap();
    for level in 0..3 {
        let max = sylva_sim::spec::validate::MAX_SEG_SPLITS;
        let text = aspen
            .replace(&format!("{level}SegSplits = "), &format!("{level}SegSplits = {max}\n#"))
            .replace(
                &format!("{level}SplitAngle = 0\n"),
                &format!("{level}SplitAngle = 30\n"),
            );
        timed(&format!("aspen {level}SegSplits = {max}"), &mut || {
            if level == 0 {
                // Three trunk segments: 1 + 101 + 101² pieces, a tree within the limits.
                let n = grow(&text).unwrap();
                assert!(n > 10_000, "{n}");
            } else {
                refused_at_growth(&text, "SegSplits")
            }
        });
    }
    // BaseSize 1 (a trunk bare to the top): 1 / (1 - BaseSize) was infinite.
    timed("BaseSize = 1", &mut || {
        let n = grow(&set(&arbaro, "BaseSize", "1")).unwrap();
        assert!(n > 0);
    });
    // Devices and FIFOs are refused by the reader, without reading.
    for dev in ["/dev/zero", "/dev/urandom"] {
        if Path::new(dev).exists() {
            timed(dev, &mut || {
                let e = load_file(Path::new(dev)).unwrap_err();
                assert!(e.message.contains("device"), "{e}");
                let e = sylva_sim::io::read_text(Path::new(dev), colonize::MAX_POINTS_FILE_BYTES, "points file")
                    .unwrap_err();
                assert!(e.message.contains("device"), "{e}");
            });
        }
    }
    // A sparse file far beyond the limit: refused from its size.
    let huge = std::env::temp_dir().join(format!("sylva-hostile-huge-{}", std::process::id()));
    std::fs::File::create(&huge).unwrap().set_len(8 << 30).unwrap();
    timed("an 8 GiB file", &mut || {
        let e = load_file(&huge).unwrap_err();
        assert_eq!(e.parameter, "file size", "{e}");
        let e = sylva_sim::io::read_text(&huge, lsystem::MAX_TEXT_BYTES as u64, "L-system file").unwrap_err();
        assert!(e.message.contains("at most 262144 bytes (256 KiB)"), "{e}");
    });
    std::fs::remove_file(&huge).unwrap();

    let peak = peak_rss_bytes();
    eprintln!("peak resident memory: {:?} MiB", peak.map(|b| b >> 20));
    if let Some(peak) = peak {
        assert!(peak < CHILD_MEMORY, "peak {} MiB", peak >> 20);
    }
}

/// A tree-gen file with fans of stems is refused, naming the level's count; a colonization
/// crown out of reach of the trunk is an error, not a bare pole.
#[test]
fn silently_wrong_results_are_refused() {
    let treegen = bases().into_iter().find(|b| b.format == Format::TreeGen).unwrap().text;
    let text = treegen.replace("'branches': [1, 12, 4, 0]", "'branches': [1, -12, 4, 0]");
    let e = load_str(&text, "fan.py").unwrap_err();
    assert_eq!(e.parameter, "1Branches", "{e}");
    assert!(e.message.contains("fan of 12 stems"), "{e}");

    // Three points 4 m up, the trunk 30 m to the side: refused, naming the trunk.
    let mut far = ColonizeParams {
        crown: Envelope::Points(vec![
            glam::Vec3::new(30.0, 4.0, 0.0),
            glam::Vec3::new(30.3, 4.2, 0.0),
            glam::Vec3::new(29.7, 4.1, 0.2),
        ]),
        ..ColonizeParams::default()
    };
    let e = colonize::colonize(&far, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("trunks"), "{e}");
    // Within reach of one point only, the other 5 m to the side: a bare pole, with a warning
    // that says so and why.
    far.crown = Envelope::Points(vec![glam::Vec3::new(0.0, 4.0, 0.0), glam::Vec3::new(5.0, 4.0, 0.0)]);
    far.kill_distance = 1.0;
    let g = colonize::colonize(&far, &mut |_| {}).unwrap();
    assert_eq!(g.warnings.len(), 1, "{:?}", g.warnings);
    let w = &g.warnings[0];
    assert!(
        w.contains("bare pole") && w.contains("1 of 2 crown points") && w.contains("influence_distance"),
        "{w}"
    );
}

/// The real third-party files, each number of each file replaced by a few extremes.
#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_files_with_extreme_numbers() {
    let mut cases = Vec::new();
    for (k, path) in sylva_tests::tree_spec_files().into_iter().enumerate() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let format = match sylva_sim::spec::load::detect(&text, "f") {
            Ok(sylva_sim::spec::SpecTool::Arbaro) => Format::Arbaro,
            Ok(sylva_sim::spec::SpecTool::Helios) => Format::Helios,
            Ok(sylva_sim::spec::SpecTool::TreeGen) => Format::TreeGen,
            Ok(sylva_sim::spec::SpecTool::Sylva) => Format::Sylva,
            Ok(_) => Format::Sapling,
            Err(_) => continue,
        };
        let base = Base {
            name: path.display().to_string(),
            parser: Parser::Spec,
            format,
            text,
        };
        // Every fourth number of each file, one extreme each, rotating through the list (about
        // 1,600 cases, half a minute).
        let m: Vec<Case> = mutations(&base, 1).into_iter().skip(k % 4).step_by(4).collect();
        cases.extend(m);
    }
    run("corpus numbers", &cases, SMALL);
}
