//! `sylva bench peer`: without the feature `peer` it names the feature and the command that
//! builds it; with it, it refuses bad input clearly and prints the report it promises.

mod common;

use common::sylva;

#[cfg(not(feature = "peer"))]
#[test]
fn without_the_feature_it_says_how_to_build_it() {
    let (code, out, err) = sylva(&["bench", "peer", "--segments", "20", "--steps", "1"]);
    assert_eq!(code, 1, "stdout: {out}\nstderr: {err}");
    assert!(out.is_empty(), "nothing on stdout: {out}");
    assert!(err.contains("feature `peer`"), "names the feature: {err}");
    assert!(
        err.contains("cargo build --release -p sylva-tools --features peer"),
        "gives the command that builds it: {err}"
    );
    assert!(err.contains("scripts/peer.sh"), "names the script: {err}");
}

#[test]
fn bad_arguments_are_refused_clearly() {
    for (args, what) in [
        (&["bench", "peer", "--steps", "0"][..], "--steps"),
        (&["bench", "peer", "--segments", "-3"], "--segments"),
        (&["bench", "peer", "--wind", "NaN"], "--wind"),
        (&["bench", "peer", "--gust", "2"], "--gust"),
        (&["bench", "peer", "--threads", "0"], "--threads"),
        (&["bench", "peer", "--rapier-trees", "0"], "--rapier-trees"),
        (&["bench", "peer", "--dt", "0"], "--dt"),
        (&["bench", "peer", "--sylva-steps", "0"], "--sylva-steps"),
    ] {
        let (code, _, err) = sylva(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(what) && err.contains("allowed"), "{args:?}: {err}");
    }
}

#[cfg(feature = "peer")]
#[test]
fn forests_too_big_for_rapier_are_refused_with_the_way_out() {
    let (code, _, err) = sylva(&["bench", "peer", "--segments", "1597", "--leaves", "0", "--trees", "100"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--rapier-trees") && err.contains("GiB"), "{err}");
    let (code, _, err) = sylva(&[
        "bench",
        "peer",
        "--segments",
        "20",
        "--trees",
        "2",
        "--rapier-trees",
        "3",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("--rapier-trees 3") && err.contains("allowed 1..=2"),
        "{err}"
    );
}

#[cfg(feature = "peer")]
#[test]
fn the_report_has_every_model_and_figure() {
    let (code, out, err) = sylva(&[
        "bench",
        "peer",
        "--segments",
        "40",
        "--leaves",
        "80",
        "--trees",
        "2",
        "--steps",
        "30",
        "--threads",
        "2",
        "--sylva-steps",
        "50",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["segments"], 80);
    assert_eq!(v["steps"], 30);
    assert_eq!(v["models"][0]["steps_timed"], 50);
    let models = v["models"].as_array().expect("models");
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names.first(), Some(&"weber"));
    assert_eq!(names.last(), Some(&"rapier"));
    for m in models {
        for key in ["ns_per_segment_step", "bytes_per_segment", "tip_rms_m", "tip_max_m"] {
            let x = m[key].as_f64().unwrap_or_else(|| panic!("{key} in {m}"));
            assert!(x.is_finite() && x >= 0.0, "{key} = {x}");
        }
        assert!(m["ns_per_segment_step"].as_f64().unwrap() > 0.0);
        assert!(m["bytes_per_segment"].as_f64().unwrap() > 0.0);
        assert!(m["breakdown_ns_per_segment_step"]
            .as_object()
            .is_some_and(|b| !b.is_empty()));
    }
    // Sylva's trees follow rapier's: the gusts swing the 40-segment trees by centimetres,
    // the two stay within a few of them.
    let weber = &models[0];
    assert!(
        weber["tip_rms_m"].as_f64().unwrap() > 0.0,
        "the models are not the same code"
    );
    assert!(weber["tip_max_m"].as_f64().unwrap() < 0.05, "{weber}");
}
