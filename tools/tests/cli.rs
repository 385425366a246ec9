//! The `sylva` command: bad input is refused with a clear message and never a panic; the
//! benchmark prints the fields it promises.

mod common;

use common::{assert_refused, sylva};

#[test]
fn bad_arguments_are_refused_clearly() {
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "sim", "--segments", "0"], "--segments"),
        (&["bench", "sim", "--segments", "-5"], "--segments"),
        (&["bench", "sim", "--segments", "abc"], "--segments"),
        (&["bench", "sim", "--leaves", "-1"], "--leaves"),
        (&["bench", "sim", "--segments", "0", "--leaves", "10"], "--segments"),
        (&["bench", "sim", "--trees", "0"], "--trees"),
        (&["bench", "sim", "--threads", "0"], "--threads"),
        (&["bench", "sim", "--steps", "0"], "--steps"),
        (&["bench", "sim", "--dt", "0"], "--dt"),
        (&["bench", "sim", "--dt", "NaN"], "--dt"),
        (&["bench", "sim", "--dt", "-0.01"], "--dt"),
        (&["bench", "sim", "--wind", "inf"], "--wind"),
        (&["bench", "sim", "--solver", "gauss"], "--solver"),
        (&["bench", "sim", "--inertia", "lumped"], "--inertia"),
        (&["bench", "sim", "--integrator", "rk4"], "--integrator"),
        (&["render", "--inertia", "lumped"], "--inertia"),
        (&["bench", "frame", "--integrator", "euler"], "--integrator"),
        (&["bench", "sim", "--collider", "cube"], "--collider"),
        (&["bench", "sim", "--model", "cloth"], "--model"),
        (&["bench", "frame", "--model", "chen2"], "--model"),
        (&["render", "--model", ""], "--model"),
        (&["view", "--model", "Weber"], "--model"),
        (&["bench", "sim", "--model", "weber,weber"], "--model"),
        (&["bench", "sim", "--drag", "nonsense"], "--drag"),
        (&["bench", "sim", "--drag", "linear,linear"], "--drag"),
        (&["bench", "frame", "--drag", "cubic"], "--drag"),
        (&["render", "--drag", ""], "--drag"),
        (&["view", "--drag", "Quadratic"], "--drag"),
        (&["bench", "sim", "--model", "weber,"], "--model"),
        (
            &["bench", "sim", "--model", "oliapuram", "--inertia", "both"],
            "--inertia",
        ),
        (&["bench", "wind", "--vorticity", "5"], "--vorticity"),
        (&["bench", "wind", "--vorticity", "NaN"], "--vorticity"),
        (&["bench", "wind", "--vorticity", "-0.5"], "--vorticity"),
        (
            &["bench", "sim", "--segments", "4000000", "--trees", "1000"],
            "segments",
        ),
    ];
    for (args, name) in cases {
        assert_refused(args, name);
    }
    // An unknown drag law's refusal lists the laws there are.
    let (_, _, err) = sylva(&["bench", "sim", "--drag", "nonsense"]);
    assert!(
        err.contains("nonsense") && err.contains("linear") && err.contains("quadratic"),
        "{err}"
    );
    // An unknown model's refusal lists the models there are.
    let (_, _, err) = sylva(&["bench", "sim", "--model", "cloth"]);
    assert!(
        err.contains("cloth") && err.contains("weber") && err.contains("oliapuram") && err.contains("verlet"),
        "{err}"
    );
}

/// A small forest with colliders, as JSON, on `threads` threads.
fn small_bench(threads: &str) -> serde_json::Value {
    let args = [
        "bench",
        "sim",
        "--segments",
        "300",
        "--leaves",
        "500",
        "--trees",
        "3",
        "--steps",
        "20",
        "--collider",
        "orbit",
        "--json",
        "--threads",
        threads,
    ];
    let (code, out, err) = sylva(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(out.trim()).expect("one JSON object")
}

#[test]
fn bench_sim_json_has_the_promised_fields() {
    let v = small_bench("2");
    for key in [
        "segments",
        "leaves",
        "trees",
        "steps",
        "threads",
        "solver",
        "bytes_per_segment",
        "state_hash",
        "max_abs_angle",
        "finite",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    for key in ["populate", "solve", "kinematics", "total"] {
        assert!(
            v["ns_per_segment_step"][key].as_f64().is_some_and(|x| x >= 0.0),
            "missing ns_per_segment_step.{key}"
        );
    }
    assert_eq!(v["segments"], 900);
    assert_eq!(v["leaves"], 1500);
    assert_eq!(v["solver"], "direct");
    assert_eq!(v["model"], "weber", "the default model is named");
    assert_eq!(v["finite"], true);
    let hash = v["state_hash"].as_str().unwrap();
    assert!(
        hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    // The same run on one thread gives the same state.
    assert_eq!(small_bench("1")["state_hash"], v["state_hash"]);
}

/// `--inertia both` runs the two mass matrices on identical forests in one run and reports
/// both; each alone reports the same state as in the pair.
#[test]
fn bench_sim_reports_both_mass_matrices_side_by_side() {
    let args = |inertia: &'static str| {
        [
            "bench",
            "sim",
            "--segments",
            "300",
            "--leaves",
            "200",
            "--steps",
            "15",
            "--inertia",
            inertia,
            "--json",
        ]
    };
    let (code, out, err) = sylva(&args("both"));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let models = v["models"].as_array().expect("a list of models");
    assert_eq!(models.len(), 2);
    assert_eq!(models[0]["inertia"], "articulated");
    assert_eq!(models[1]["inertia"], "diagonal");
    for m in models {
        assert_eq!(m["finite"], true);
        assert!(m["ns_per_segment_step"]["total"].as_f64().is_some_and(|x| x > 0.0));
    }
    assert_ne!(models[0]["state_hash"], models[1]["state_hash"]);
    for (k, name) in ["articulated", "diagonal"].iter().enumerate() {
        let (code, out, err) = sylva(&args(name));
        assert_eq!(code, 0, "{err}");
        let one: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(one["inertia"], *name);
        assert_eq!(one["state_hash"], models[k]["state_hash"]);
    }
}

/// Several models side by side on one forest: one report each, in the order asked, each with
/// its own phases, and each run's state the same as when it runs alone.
#[test]
fn bench_sim_runs_models_side_by_side() {
    let args = |model: &'static str| {
        [
            "bench",
            "sim",
            "--model",
            model,
            "--segments",
            "300",
            "--leaves",
            "200",
            "--trees",
            "2",
            "--steps",
            "12",
            "--json",
        ]
    };
    let (code, out, err) = sylva(&args("weber,oliapuram"));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let models = v["models"].as_array().expect("a list of models");
    assert_eq!(models.len(), 2);
    for (m, (name, phase)) in models.iter().zip([("weber", "solve"), ("oliapuram", "integration")]) {
        assert_eq!(m["model"], name);
        assert_eq!(m["finite"], true);
        assert!(m["ns_per_segment_step"][phase].as_f64().is_some_and(|x| x > 0.0), "{m}");
        assert!(m["ns_per_component_step"].as_f64().is_some_and(|x| x > 0.0), "{m}");
        let (code, out, err) = sylva(&args(name));
        assert_eq!(code, 0, "{err}");
        let one: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(one["state_hash"], m["state_hash"], "{name}");
    }
}

#[test]
fn bench_sim_table_is_readable() {
    let (code, out, err) = sylva(&[
        "bench",
        "sim",
        "--segments",
        "200",
        "--leaves",
        "100",
        "--steps",
        "10",
        "--solver",
        "cg",
    ]);
    assert_eq!(code, 0, "{err}");
    for word in [
        "populate",
        "solve",
        "kinematics",
        "total",
        "bytes per segment",
        "state hash",
        "CG iterations",
    ] {
        assert!(out.contains(word), "table lacks {word}:\n{out}");
    }
}

/// A file of the third-party spec corpus (only the ignored `corpus_*` tests use it; see
/// `sylva_tests::tree_specs_dir`).
fn corpus(rel: &str) -> String {
    sylva_tests::tree_specs_dir().join(rel).display().to_string()
}

/// A spec fixture of the repository (`tests/fixtures/specs`).
fn fixture(rel: &str) -> String {
    sylva_tests::fixture(rel).display().to_string()
}

/// A test's scratch folder, removed with everything in it when the test ends, passed or failed
/// (the guard is dropped while a failing test unwinds).
struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("sylva-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// `spec stats --json` on an Arbaro file: its species, levels, trunk children and height.
fn check_spec_stats(file: &str, species: &str, levels: u64, first_branches: u64, min_height: f64) {
    let (code, out, err) = sylva(&["spec", "stats", file, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["species"], species);
    assert_eq!(v["levels"], levels);
    assert_eq!(v["stems_per_level"].as_array().unwrap().len() as u64, levels);
    assert_eq!(v["stems_per_level"][1], first_branches);
    for key in ["clones_per_level", "leaves", "segments", "height", "width"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert!(v["height"].as_f64().unwrap() > min_height, "{v}");
}

#[test]
fn spec_stats_prints_the_promised_fields() {
    // Arbaro grows exactly 1Branches children on the trunk (14 here).
    check_spec_stats(&fixture("arbaro/small_palm"), "fixture_palm", 2, 14, 3.0);
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_spec_stats_prints_the_promised_fields() {
    check_spec_stats(
        &corpus("arbaro-xml/wdiestel-arbaro/black_tupelo.xml"),
        "black_tupelo",
        4,
        50,
        15.0,
    );
}

/// A library of several species needs `--species`; both errors list the species allowed
/// (`first` and `last` among them); `pick` is one of them.
fn check_library_needs_a_species(lib: &str, first: &str, last: &str, pick: &str) {
    let (code, _, err) = sylva(&["spec", "stats", lib]);
    assert_ne!(code, 0);
    assert!(err.contains(first) && err.contains("allowed"), "{err}");
    let (code, _, err) = sylva(&["spec", "stats", lib, "--species", "Baobab"]);
    assert_ne!(code, 0);
    assert!(err.contains("Baobab") && err.contains(last), "{err}");
    let (code, out, err) = sylva(&["spec", "stats", lib, "--species", pick, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("\"species\":\"{pick}\"")), "{out}");
}

/// A truncated Arbaro file, one with 1e9 branches (`branches` is the file's `1Branches`
/// element) and a missing file are refused, naming the file or parameter.
fn check_bad_arbaro_files(name: &str, text: &str, branches: &str) {
    let dir = scratch(name);
    let truncated = dir.join("truncated.xml");
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let (code, _, err) = sylva(&["spec", "stats", truncated.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("truncated.xml") && !err.contains("panicked"), "{err}");
    let absurd = dir.join("absurd.xml");
    assert!(text.contains(branches), "{branches}");
    std::fs::write(&absurd, text.replace(branches, "name='1Branches' value='1000000000'")).unwrap();
    let (code, _, err) = sylva(&["spec", "stats", absurd.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("1Branches") && err.contains("allowed"), "{err}");
    let (code, _, err) = sylva(&["spec", "stats", dir.join("missing.xml").to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("missing.xml"), "{err}");
}

#[test]
fn spec_libraries_need_a_species_and_bad_files_are_refused() {
    check_library_needs_a_species(&fixture("helios/fixture_library.xml"), "Quince", "Fig", "Fig");
    let text = std::fs::read_to_string(fixture("arbaro/small_birch.xml")).unwrap();
    check_bad_arbaro_files("bad", &text, "name='1Branches' value='12'");
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_spec_libraries_need_a_species_and_bad_files_are_refused() {
    check_library_needs_a_species(
        &corpus("helios-xml/WeberPennTreeLibrary.xml"),
        "Almond",
        "Walnut",
        "Olive",
    );
    let text = std::fs::read_to_string(corpus("arbaro-xml/wdiestel-arbaro/quaking_aspen.xml")).unwrap();
    check_bad_arbaro_files("corpus-bad", &text, "name='1Branches' value='50'");
}

/// `spec convert` writes a Sylva spec that grows the same tree, and refuses to replace it with
/// another spec without `--force`.
fn check_convert(name: &str, src: &str, other: &str) {
    let dir = scratch(name);
    let out = dir.join("converted.sylva");
    let (code, _, err) = sylva(&["spec", "convert", src, "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let stats = |file: &str| {
        let (code, out, err) = sylva(&["spec", "stats", file, "--json"]);
        assert_eq!(code, 0, "{err}");
        let mut v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        v["generation_ms"] = serde_json::Value::Null;
        v
    };
    assert_eq!(
        stats(src),
        stats(out.to_str().unwrap()),
        "the converted spec grows the same tree"
    );
    let before = std::fs::read(&out).unwrap();
    let (code, _, err) = sylva(&["spec", "convert", other, "--out", out.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), before, "an existing file is not touched");
}

#[test]
fn spec_convert_round_trips_and_keeps_existing_files() {
    check_convert(
        "convert",
        &fixture("sapling-0.2/small_aspen.py"),
        &fixture("tree-gen/little_oak.py"),
    );
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_spec_convert_round_trips_and_keeps_existing_files() {
    check_convert(
        "corpus-convert",
        &corpus("sapling-py/blender-addons-v0.2-legacy/black_tupelo.py"),
        &corpus("treegen-py/acer.py"),
    );
}

/// `export` writes glTF and OBJ meshes of a spec (at least `min_bytes` each) and refuses
/// another extension.
fn check_export(name: &str, spec: &str, min_bytes: u64) {
    let dir = scratch(name);
    for ext in ["glb", "obj"] {
        let out = dir.join(format!("tree.{ext}"));
        let (code, _, err) = sylva(&["export", spec, "--out", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        let len = std::fs::metadata(&out).unwrap().len();
        assert!(len > min_bytes, "{ext}: {len} bytes");
    }
    let (code, _, err) = sylva(&["export", spec, "--out", dir.join("tree.fbx").to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains(".glb"), "{err}");
}

#[test]
fn export_writes_meshes() {
    check_export("export", &fixture("arbaro/small_birch.xml"), 10_000);
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_export_writes_meshes() {
    check_export(
        "corpus-export",
        &corpus("arbaro-xml/wdiestel-arbaro/quaking_aspen.xml"),
        10_000,
    );
}

#[test]
fn grow_writes_grown_trees() {
    let dir = scratch("grow");
    let out = dir.join("abop.glb");
    let (code, stdout, err) = sylva(&[
        "grow",
        "lsystem",
        "--preset",
        "abop-1.24d",
        "--iterations",
        "5",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(v["segments"].as_u64().unwrap() > 100);
    let (code, _, err) = sylva(&[
        "grow",
        "lsystem",
        "--preset",
        "fern",
        "--out",
        dir.join("x.glb").to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("oliapuram"), "{err}");

    let out = dir.join("crown.glb");
    let (code, stdout, err) = sylva(&[
        "grow",
        "colonize",
        "--envelope",
        "sphere:0,5,0,2.5",
        "--points",
        "3000",
        "--roots",
        "500",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(v["height"].as_f64().unwrap() > 5.0, "{v}");
    let (code, _, err) = sylva(&[
        "grow",
        "colonize",
        "--envelope",
        "blob:1,2",
        "--out",
        dir.join("y.glb").to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("sphere") && !err.contains("panicked"), "{err}");
    let (code, _, err) = sylva(&[
        "grow",
        "colonize",
        "--kill",
        "2",
        "--influence",
        "1",
        "--out",
        dir.join("z.glb").to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("kill") && !err.contains("panicked"), "{err}");
}

/// `bench gen` times the generation of a spec's tree.
fn check_bench_gen(spec: &str, species: &str) {
    let (code, out, err) = sylva(&["bench", "gen", spec, "--repeat", "2", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["species"], species);
    assert!(v["ms_min"].as_f64().unwrap() > 0.0);
}

#[test]
fn bench_gen_reports_time() {
    check_bench_gen(&fixture("arbaro/small_birch.xml"), "fixture_birch");
}

#[test]
#[ignore = "needs the tree-spec corpus: set SYLVA_TREE_SPECS or put shared/data/tree-specs beside the checkout"]
fn corpus_bench_gen_reports_time() {
    check_bench_gen(&corpus("arbaro-xml/wdiestel-arbaro/black_tupelo.xml"), "black_tupelo");
}

/// `--drag` picks the trees' drag law, quadratic by default, and `bench sim` reports it; two
/// laws side by side run on forests that differ only in it, and differ.
#[test]
fn bench_sim_reports_the_drag_law() {
    let run = |drag: Option<&str>| {
        let mut args = vec![
            "bench",
            "sim",
            "--segments",
            "120",
            "--leaves",
            "80",
            "--steps",
            "30",
            "--wind",
            "30",
            "--json",
        ];
        if let Some(d) = drag {
            args.extend(["--drag", d]);
        }
        let (code, out, err) = sylva(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    assert_eq!(run(None)["drag"], "quadratic");
    assert_eq!(run(Some("linear"))["drag"], "linear");
    let both = run(Some("linear,quadratic"));
    let models = both["models"].as_array().expect("two runs");
    assert_eq!(models.len(), 2);
    assert_eq!(
        (models[0]["drag"].as_str(), models[1]["drag"].as_str()),
        (Some("linear"), Some("quadratic"))
    );
    assert_ne!(models[0]["state_hash"], models[1]["state_hash"]);
    for m in models {
        assert!(m["tip_deflection_mean"].as_f64().unwrap() > 0.0, "{m}");
        assert!(m["base_moment_peak"].as_f64().unwrap() > 0.0, "{m}");
    }
}

/// `render --record DIR` and `view --record DIR` (here without a display, rendered headless)
/// write every frame as a numbered PNG, the last one the picture `--out` gets, the tree moving
/// from frame to frame in the wind; a folder that holds recorded frames is refused without
/// --force, a missing one always, before any work.
#[test]
fn every_frame_is_recorded_as_a_numbered_png() {
    let dir = common::TempDir::new("sylva-cli", "record");
    let rec = dir.path("frames");
    std::fs::create_dir(&rec).unwrap();
    let (rec_s, out) = (rec.display().to_string(), dir.path("last.png").display().to_string());
    let args = [
        "render",
        "--species",
        "sassafras",
        "--wind",
        "20",
        "--wind-model",
        "uniform",
        "--sim-lod",
        "off",
        "--frames",
        "4",
        "--size",
        "96x64",
        "--record",
        &rec_s,
        "--out",
        &out,
    ];
    let (code, _, err) = sylva(&args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("recorded 4 frames"), "{err}");
    let frames: Vec<_> = (1..=4)
        .map(|n| common::read_png(&rec.join(format!("frame-{n:06}.png"))))
        .collect();
    assert!(!rec.join("frame-000005.png").exists());
    let last = common::read_png(std::path::Path::new(&out));
    assert!(frames[3] == last, "the last frame is the picture");
    assert!(frames[0] != frames[3], "the tree moves in the wind from frame to frame");
    // Again: the recorded frames are not replaced without --force.
    let again = dir.path("again.png").display().to_string();
    let mut refused = args.to_vec();
    *refused.last_mut().unwrap() = &again;
    let (code, _, err) = sylva(&refused);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("frame-000001.png") && err.contains("--force"), "{err}");
    assert!(!dir.path("again.png").exists());
    let missing = dir.path("missing").display().to_string();
    let (code, _, err) = sylva(&["render", "--frames", "1", "--record", &missing, "--out", &again]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    // The viewer records too (with --force, over the frames above; without the overlay, whose
    // timings change from draw to draw).
    let shot = dir.path("view.png").display().to_string();
    let out = common::command()
        .args([
            "view",
            "--no-overlay",
            "--species",
            "sassafras",
            "--frames",
            "2",
            "--size",
            "96x64",
            "--record",
            &rec_s,
            "--force",
            "--screenshot",
            &shot,
        ])
        .env_remove("DISPLAY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("recorded 2 frames"), "{err}");
    let shown = common::read_png(std::path::Path::new(&shot));
    assert!(
        common::read_png(&rec.join("frame-000002.png")) == shown,
        "the last frame recorded is the screenshot"
    );
}
