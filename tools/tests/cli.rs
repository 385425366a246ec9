//! The `sylva` command: bad input is refused with a clear message and never a panic; the
//! benchmark prints the fields it promises.

use std::process::Command;

fn sylva(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sylva"))
        .args(args)
        .output()
        .expect("run sylva");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

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
        (&["bench", "sim", "--collider", "cube"], "--collider"),
        (
            &["bench", "sim", "--segments", "4000000", "--trees", "1000"],
            "segments",
        ),
    ];
    for (args, name) in cases {
        let (code, _, err) = sylva(args);
        assert_ne!(code, 0, "{args:?} should fail");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert!(err.contains(name), "{args:?}: the message should name {name}: {err}");
        assert!(
            err.contains("allowed") || err.contains("possible values"),
            "{args:?}: the message should say what is allowed: {err}"
        );
    }
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
    assert_eq!(v["finite"], true);
    let hash = v["state_hash"].as_str().unwrap();
    assert!(
        hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    // The same run on one thread gives the same state.
    assert_eq!(small_bench("1")["state_hash"], v["state_hash"]);
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
