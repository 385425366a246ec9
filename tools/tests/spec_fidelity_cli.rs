//! `sylva spec stats --json` reports the tree's box in Arbaro's axes, and the commands that grow
//! specs switch Weber 2008's fork rules on or off when asked.

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/specs")
        .join(name)
        .display()
        .to_string()
}

fn stats(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_sylva"))
        .args(["spec", "stats", "--json"])
        .args(args)
        .output()
        .expect("run sylva");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn corner(v: &serde_json::Value, key: &str) -> [f64; 3] {
    let a = v[key].as_array().unwrap_or_else(|| panic!("{key} missing: {v}"));
    assert_eq!(a.len(), 3, "{key}: {v}");
    [0, 1, 2].map(|k| a[k].as_f64().unwrap())
}

/// Arbaro's height is the box's top; the box holds the trunk's foot.
#[test]
fn stats_report_arbaros_box() {
    let v = stats(&[&fixture("fidelity_attraction_up.xml")]);
    let (lo, hi) = (corner(&v, "bbox_min"), corner(&v, "bbox_max"));
    assert!((hi[2] - 12.72).abs() <= 0.006, "{v}");
    assert!((v["height"].as_f64().unwrap() - hi[2]).abs() < 1e-4, "{v}");
    assert!(lo[2] <= 0.0 && hi[0] > 0.0 && lo[0] < hi[0] && lo[1] < hi[1], "{v}");
}

/// `--fork-rules` thickens and pushes (the box changes, the counts do not); `--no-fork-rules`
/// is the import as written; both at once are refused.
#[test]
fn fork_rules_switch() {
    let file = fixture("fidelity_helios_tilted.xml");
    let plain = stats(&[&file]);
    let off = stats(&[&file, "--no-fork-rules"]);
    let on = stats(&[&file, "--fork-rules"]);
    for key in ["segments", "height", "width", "bbox_min", "bbox_max"] {
        assert_eq!(plain[key], off[key], "{key}");
    }
    assert_ne!(corner(&on, "bbox_max"), corner(&plain, "bbox_max"));
    for key in ["stems_per_level", "clones_per_level", "leaves"] {
        assert_eq!(on[key], plain[key], "{key}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_sylva"))
        .args(["spec", "stats", &file, "--fork-rules", "--no-fork-rules"])
        .output()
        .expect("run sylva");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--fork-rules") && err.contains("--no-fork-rules"), "{err}");
}
