//! `sylva bench frame`: the viewer's frame without drawing. Its JSON has the promised fields,
//! its figures add up, and its state hash does not depend on the number of threads.

mod common;

use common::{assert_refused, sylva};

fn bench(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["bench", "frame", "--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = sylva(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{args:?}: not one JSON object ({e}): {out}"))
}

/// Three poplars in a fluid grid wide enough that its passes split into several jobs: with
/// one thread the trees step as whole-tree jobs, with two as phase, plane and subtree jobs.
const POPLARS: [&str; 8] = [
    "--species",
    "lombardy_poplar",
    "--trees",
    "3",
    "--wind-grid",
    "64x64x8",
    "--frames",
    "6",
];

#[test]
fn json_has_the_promised_fields_and_the_hash_ignores_the_thread_count() {
    let one = bench(&[&POPLARS[..], &["--threads", "1"]].concat());
    let two = bench(&[&POPLARS[..], &["--threads", "2"]].concat());
    assert_eq!(two["trees"], 3);
    assert_eq!(two["threads"], 2);
    assert_eq!(one["threads"], 1);
    assert_eq!(two["frames"], 6);
    assert_eq!(two["wind_model"], "fluid");
    assert_eq!(two["wind_grid"], "64x64x8");
    assert_eq!(two["finite"], true);
    assert!(two["segments"].as_u64().unwrap() > 300, "{two}");
    assert!(two["leaves"].as_u64().unwrap() > 1000, "{two}");
    // Every segment and leaf of three trees in view is drawn at least at some detail.
    assert!(two["instances"].as_u64().unwrap() > 100, "{two}");
    assert_eq!(two["model"], "weber", "{two}");
    let phases = [
        "wind_advect",
        "wind_forces",
        "wind_pressure",
        "wind_project",
        "populate",
        "solve",
        "kinematics",
        "fill",
        "total",
    ];
    for v in [&one, &two] {
        let ms = &v["ms_per_frame"];
        for key in phases {
            let x = ms[key]
                .as_f64()
                .unwrap_or_else(|| panic!("missing ms_per_frame.{key}: {v}"));
            assert!(x.is_finite() && x >= 0.0, "{key} = {x}");
        }
        // Each phase ran (the wind stepped, the trees were populated, posed, filled).
        for key in ["wind_pressure", "populate", "kinematics", "fill"] {
            assert!(ms[key].as_f64().unwrap() > 0.0, "{key} took no time: {v}");
        }
        let wall = &v["wall_ms"];
        let mut last = 0.0;
        for key in ["min", "median", "p95", "max"] {
            let x = wall[key]
                .as_f64()
                .unwrap_or_else(|| panic!("missing wall_ms.{key}: {v}"));
            assert!(x > 0.0, "a frame takes time: wall_ms.{key} = {x}");
            assert!(x >= last, "wall_ms in order min ≤ median ≤ p95 ≤ max: {wall}");
            last = x;
        }
    }
    // On one thread work time is wall time: the phases fit in the frame.
    let ms = &one["ms_per_frame"];
    let sum: f64 = phases[..8].iter().map(|k| ms[*k].as_f64().unwrap()).sum();
    assert!(sum <= ms["total"].as_f64().unwrap() * 1.001, "{ms}");
    let hash = two["state_hash"].as_str().unwrap();
    assert!(
        hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    assert_eq!(one["state_hash"], two["state_hash"], "one and two threads");
    for key in ["segments", "leaves", "instances", "instance_bytes"] {
        assert_eq!(one[key], two[key], "{key}");
    }
    // A different run gives a different hash (the hash sees the state).
    let longer = bench(&[&POPLARS[..6], &["--frames", "7", "--threads", "2"]].concat());
    assert_ne!(longer["state_hash"], two["state_hash"]);
}

#[test]
fn uniform_wind_has_no_grid_and_the_table_names_the_phases() {
    let v = bench(&[
        "--species",
        "sassafras",
        "--wind-model",
        "uniform",
        "--frames",
        "3",
        "--threads",
        "2",
    ]);
    assert_eq!(v["wind_model"], "uniform");
    assert!(v["wind_grid"].is_null(), "{v}");
    assert_eq!(v["trees"], 1);
    assert_eq!(v["ms_per_frame"]["wind_pressure"], 0.0, "no fluid, no pressure pass");
    let (code, out, err) = sylva(&[
        "bench",
        "frame",
        "--species",
        "sassafras",
        "--wind-grid",
        "16x16x8",
        "--frames",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    for word in [
        "populate",
        "kinematics",
        "fill",
        "wind pressure",
        "total",
        "95th percentile",
        "state hash",
        "16x16x8",
    ] {
        assert!(out.contains(word), "the table lacks {word}: {out}");
    }
}

#[test]
fn bad_arguments_are_refused_naming_what_is_allowed() {
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "frame", "--threads", "0"], "--threads"),
        (&["bench", "frame", "--frames", "0"], "--frames"),
        (&["bench", "frame", "--frames", "-3"], "--frames"),
        (&["bench", "frame", "--wind-grid", "1x8x8"], "--wind-grid"),
        (&["bench", "frame", "--wind-model", "storm"], "--wind-model"),
        (&["bench", "frame", "--trees", "0"], "--trees"),
        (&["bench", "frame", "--wind-gpu"], "--wind-gpu"),
    ];
    for (args, name) in cases {
        assert_refused(args, name);
    }
    let (code, _, err) = sylva(&["bench", "frame", "--species", "no_such_tree", "--frames", "1"]);
    assert_ne!(code, 0);
    assert!(err.contains("no_such_tree"), "{err}");
}

/// A model whose trees break says what broke: the counts are in the JSON, and calm breaks
/// nothing.
#[test]
fn json_counts_what_broke_for_a_model_that_breaks() {
    let v = bench(&[
        "--model",
        "verlet",
        "--species",
        "lombardy_poplar",
        "--trees",
        "1",
        "--wind-model",
        "uniform",
        "--wind",
        "0",
        "--frames",
        "3",
    ]);
    assert_eq!(v["model"], "verlet", "{v}");
    let b = &v["breakage"];
    for key in ["broken", "uprooted", "debris"] {
        assert_eq!(b[key].as_u64(), Some(0), "calm air breaks nothing: {key} in {v}");
    }
}
