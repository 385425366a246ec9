//! `--dynamics-gpu` end to end: Oliapuram & Kumar's model stepped as compute shaders on the
//! machine's Vulkan device (lavapipe without a GPU) with the validation layer on, in
//! `sylva render` and `sylva bench sim`, and refused clearly where it cannot run.

mod common;

use std::process::Command;

use common::{differing, read_png, run, TempDir};
use sylva_tests::pixels::count;

/// With the wind on the GPU, the picture of Oliapuram's model stepped on the GPU is the CPU
/// model's (at most 20 of 144,000 pixels differ by more than 8 levels: the two poses agree to
/// micrometres), while a stronger wind visibly changes it (over 1,000 pixels). The GPU model's
/// picture is drawn from the pose on the device: over the 60 frames nothing of the pose nor of
/// the wind grid was read back (the log's count), where the CPU model had the wind grid
/// downloaded after every step; at 20 m/s, where branches break, the pose once per step after
/// a break (the pieces are spawned from it) and the grid while the pieces fall through it.
#[test]
fn render_with_the_dynamics_on_the_gpu_matches_the_cpu_model() {
    let dir = TempDir::new("sylva-dyngpu", "render");
    let render = |name: &str, extra: &[&str]| {
        let out = dir.path(name);
        let mut args = vec![
            "render",
            "--species",
            "lombardy_poplar",
            "--model",
            "oliapuram",
            "--wind-gpu",
            "--validation",
            "--frames",
            "60",
            "--size",
            "480x300",
        ];
        args.extend_from_slice(extra);
        let r = run(common::command().args(&args).arg("--out").arg(&out));
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        // The log says where the trees were stepped and how the wind reached them: the GPU
        // model read the GPU wind on the device (a render that ignored --dynamics-gpu, or fell
        // back to sampling the wind on the CPU, fails here).
        let on_gpu = r.stderr.lines().any(|l| {
            l.strip_prefix("dynamics on ")
                .and_then(|l| l.strip_suffix(", wind read on the device"))
                .is_some_and(|device| !device.trim().is_empty())
        });
        assert_eq!(on_gpu, extra.contains(&"--dynamics-gpu"), "{args:?}: {}", r.stderr);
        let downloads = r
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("read back from the device: "))
            .unwrap_or_else(|| panic!("{args:?}: no read-back count: {}", r.stderr));
        if on_gpu && extra.contains(&"--wind") {
            // A 20 m/s wind breaks branches: the state and pose are read back once in each
            // step after one broke (to spawn the pieces), and the wind grid once per step while
            // pieces fall (the debris, stepped on the CPU, samples it), at most once per frame.
            let count = |what: &str| -> u32 {
                downloads
                    .split(what)
                    .nth(1)
                    .and_then(|d| d.split(' ').next())
                    .and_then(|t| t.parse().ok())
                    .unwrap_or_else(|| panic!("{args:?}: {downloads}"))
            };
            let (pose, grid) = (count("the pose "), count("the wind grid "));
            assert!((1..=60).contains(&pose), "{args:?}: {downloads}");
            assert!(grid <= 60, "{args:?}: {downloads}");
        } else if on_gpu {
            assert_eq!(
                downloads, "the pose 0 times (0 bytes), the wind grid 0 times (0 bytes)",
                "{args:?}"
            );
        } else {
            // The CPU model samples the wind grid, downloaded once per step.
            assert!(
                downloads.starts_with("the wind grid 60 times ("),
                "{args:?}: {downloads}"
            );
        }
        read_png(&out)
    };
    let cpu = render("cpu.png", &[]);
    let gpu = render("gpu.png", &["--dynamics-gpu"]);
    let stronger = render("stronger.png", &["--dynamics-gpu", "--wind", "20"]);
    let (same, changed) = (differing(&cpu, &gpu), differing(&gpu, &stronger));
    eprintln!("pixels differing by more than 8 levels: GPU vs CPU dynamics {same}, 20 vs 6 m/s wind {changed}");
    assert!(
        changed > 1000,
        "a stronger wind should move the trees: {changed} pixels"
    );
    assert!(
        same <= 20,
        "the GPU model's picture differs from the CPU model's in {same} pixels"
    );
}

/// The viewer with Oliapuram's model and the fluid wind on the GPU: the simulation thread
/// submits the wind's and the trees' compute work while the main thread draws, under the
/// validation layer (which fails the run on any error).
#[test]
fn viewer_steps_the_trees_on_the_gpu_beside_the_frames() {
    let dir = TempDir::new("sylva-dyngpu", "xvfb");
    let shot = dir.path("shot.png");
    let r = run(Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x800x24"])
        .arg(env!("CARGO_BIN_EXE_sylva"))
        .args([
            "view",
            "--frames",
            "60",
            "--no-vsync",
            "--validation",
            "--model",
            "oliapuram",
            "--wind-gpu",
            "--dynamics-gpu",
            "--screenshot",
        ])
        .arg(&shot));
    assert_eq!(r.code, 0, "sylva view --dynamics-gpu under Xvfb failed:\n{}", r.stderr);
    assert!(r.stderr.contains("60 frames"), "{}", r.stderr);
    assert!(!r.stderr.contains("GPU dynamics failed"), "{}", r.stderr);
    // The frames were drawn from the pose on the device: nothing read back.
    assert!(
        r.stderr
            .contains("read back from the device: the pose 0 times (0 bytes), the wind grid 0 times (0 bytes)"),
        "{}",
        r.stderr
    );
    let image = read_png(&shot);
    let (bark, leaf) = count(&image, 0, 100, 1280, 660);
    assert!(
        leaf > 20_000 && bark > 1_000,
        "trees not drawn: {bark} bark, {leaf} leaf pixels"
    );
}

/// `bench sim --dynamics-gpu` reports the same fields as on the CPU, names the device, stays
/// finite, and its time per step is the run's wall time over the steps.
#[test]
fn bench_sim_on_the_gpu_reports_the_promised_fields() {
    let args = [
        "bench",
        "sim",
        "--model",
        "oliapuram",
        "--segments",
        "400",
        "--leaves",
        "600",
        "--trees",
        "2",
        "--steps",
        "30",
        "--json",
    ];
    let cpu = run(common::command().args(args));
    let gpu = run(common::command().args(args).args(["--dynamics-gpu", "--validation"]));
    assert_eq!(cpu.code, 0, "{}", cpu.stderr);
    assert_eq!(gpu.code, 0, "{}", gpu.stderr);
    let cpu: serde_json::Value = serde_json::from_str(cpu.stdout.trim()).unwrap();
    let gpu: serde_json::Value = serde_json::from_str(gpu.stdout.trim()).unwrap();
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| *k != "device")
            .cloned()
            .collect();
        k.sort();
        k
    };
    assert_eq!(keys(&cpu), keys(&gpu));
    assert!(cpu.get("device").is_none());
    assert!(!gpu["device"].as_str().unwrap().is_empty());
    assert_eq!(gpu["model"], "oliapuram");
    // Both count what broke.
    for key in ["broken", "uprooted", "debris"] {
        assert!(gpu[key].is_u64(), "{key}: {gpu}");
        assert!(cpu[key].is_u64(), "{key}: {cpu}");
    }
    assert_eq!(gpu["finite"], true);
    assert_eq!(gpu["segments"], cpu["segments"]);
    let wall = gpu["wall_ms_per_step"].as_f64().unwrap();
    let total = gpu["ns_per_segment_step"]["total"].as_f64().unwrap();
    let segments = gpu["segments"].as_f64().unwrap();
    assert!(wall > 0.0);
    assert!(
        (total * segments * 1e-6 - wall).abs() <= 1e-6 * wall.max(1.0),
        "{total} ns × {segments} vs {wall} ms"
    );
}

#[test]
fn dynamics_gpu_is_refused_for_other_models_and_where_it_cannot_run() {
    for args in [
        &["bench", "sim", "--model", "weber", "--dynamics-gpu", "--steps", "1"][..],
        &[
            "bench",
            "sim",
            "--model",
            "weber,oliapuram",
            "--dynamics-gpu",
            "--steps",
            "1",
        ][..],
        &[
            "render",
            "--species",
            "lombardy_poplar",
            "--model",
            "weber",
            "--dynamics-gpu",
            "--frames",
            "1",
        ][..],
        &["bench", "frame", "--model", "oliapuram", "--dynamics-gpu"][..],
    ] {
        let dir = TempDir::new("sylva-dyngpu", "refused");
        let r = run(common::command().args(args).arg("--out").arg(dir.path("x.png")));
        let r = if r.stderr.contains("unexpected argument '--out'") {
            run(common::command().args(args))
        } else {
            r
        };
        assert_ne!(r.code, 0, "{args:?} should fail");
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("--dynamics-gpu"), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("allowed"), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn dynamics_gpu_without_a_vulkan_driver_is_a_clear_error() {
    let dir = TempDir::new("sylva-dyngpu", "novk");
    let out = dir.path("x.png");
    let hide = |cmd: &mut Command| {
        // Point the Vulkan loader at a driver list with nothing in it.
        cmd.env("VK_ICD_FILENAMES", dir.path("none.json"))
            .env("VK_DRIVER_FILES", dir.path("none.json"));
    };
    let mut bench = common::command();
    hide(&mut bench);
    let r = run(bench.args(["bench", "sim", "--model", "oliapuram", "--dynamics-gpu", "--steps", "1"]));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("--dynamics-gpu") && r.stderr.contains("Vulkan"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("mesa-vulkan-drivers"),
        "the message says what to install: {}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let mut render = common::command();
    hide(&mut render);
    let r = run(render
        .args([
            "render",
            "--species",
            "lombardy_poplar",
            "--model",
            "oliapuram",
            "--dynamics-gpu",
            "--frames",
            "1",
            "--out",
        ])
        .arg(&out));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("Vulkan"), "{}", r.stderr);
    assert!(r.stderr.contains("mesa-vulkan-drivers"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(!out.exists());
}

/// The wind arrows are drawn from the CPU copy of the grid: shown over the GPU dynamics, they
/// have the GPU wind download its grid after every fluid step (30 frames: the wind is brought
/// to each tree step's start, 0 s first, so 29 fluid steps and 29 downloads) while the
/// trees still read the wind and are drawn on the device (no pose read back), and the arrows
/// are there (the arrow-coloured pixels of the viewer's test).
#[test]
fn wind_arrows_over_the_gpu_dynamics_have_the_grid_downloaded_for_them() {
    let dir = TempDir::new("sylva-dyngpu", "arrows");
    let out = dir.path("arrows.png");
    let r = run(common::command()
        .args([
            "render",
            "--species",
            "lombardy_poplar",
            "--model",
            "oliapuram",
            "--wind-gpu",
            "--dynamics-gpu",
            "--wind-field",
            "--validation",
            "--frames",
            "30",
            "--size",
            "480x300",
            "--out",
        ])
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let downloads = r
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("read back from the device: "))
        .unwrap_or_else(|| panic!("no read-back count: {}", r.stderr));
    assert!(
        downloads.starts_with("the pose 0 times (0 bytes), the wind grid 29 times ("),
        "{downloads}"
    );
    let image = read_png(&out);
    let arrows = (0..image.height)
        .flat_map(|y| (0..image.width).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let p = image.pixel(x, y);
            p[0] > 200 && p[1] < 200 && p[2] < 110 && p[0] as u32 > p[1] as u32 + 60
        })
        .count();
    assert!(arrows > 2000, "only {arrows} arrow-coloured pixels with --wind-field");
}

/// `bench sim --wind-model fluid` with the wind and the dynamics each on the CPU or the GPU:
/// `wind_source` says how the wind reached the model, and the counts say what the device
/// copied back during the steps: the GPU wind's grid once per step for a model on the CPU,
/// nothing at all when both run on the GPU (the dynamics read the grid on the device). The
/// GPU wind without the fluid wind is refused.
#[test]
fn bench_sim_in_the_fluid_wind_says_how_the_wind_reaches_the_model() {
    let base = [
        "bench",
        "sim",
        "--model",
        "oliapuram",
        "--segments",
        "200",
        "--leaves",
        "300",
        "--trees",
        "2",
        "--steps",
        "10",
        "--wind-model",
        "fluid",
        "--wind-grid",
        "32x32x8",
        "--json",
    ];
    let cases: [(&[&str], &str, u64); 4] = [
        (&[], "fluid grid on the CPU", 0),
        (
            &["--wind-gpu", "--validation"],
            "fluid grid on the GPU, downloaded for the CPU",
            10,
        ),
        (
            &["--dynamics-gpu", "--validation"],
            "wind sampled on the CPU and uploaded",
            0,
        ),
        (
            &["--dynamics-gpu", "--wind-gpu", "--validation"],
            "wind read on the device",
            0,
        ),
    ];
    for (extra, source, grid_downloads) in cases {
        let r = run(common::command().args(base).args(extra));
        assert_eq!(r.code, 0, "{extra:?}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
        assert_eq!(v["wind_model"], "fluid", "{extra:?}");
        assert_eq!(v["wind_source"], source, "{extra:?}");
        assert_eq!(v["wind_grid_downloads"], grid_downloads, "{extra:?}");
        assert_eq!(v["pose_downloads"], 0, "{extra:?}");
        assert_eq!(v["finite"], true, "{extra:?}");
    }
    let r = run(common::command().args(["bench", "sim", "--model", "oliapuram", "--wind-gpu", "--steps", "1"]));
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("--wind-model fluid"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

/// `bench sim --dynamics-gpu` on the storm benchmark's tree counts what the device's model
/// breaks: in a 36 m/s storm something breaks or uproots, in a 5 m/s wind nothing does.
#[test]
fn bench_sim_on_the_gpu_counts_what_a_storm_breaks() {
    let counts = |wind: &str| {
        let args = [
            "bench",
            "sim",
            "--model",
            "oliapuram",
            "--dynamics-gpu",
            "--validation",
            "--segments",
            "1597",
            "--leaves",
            "3603",
            "--steps",
            "1200",
            "--wind",
            wind,
            "--json",
        ];
        let out = run(common::command().args(args));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
        assert_eq!(v["finite"], true);
        ["broken", "uprooted", "debris"].map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}")))
    };
    let storm = counts("36");
    assert!(storm[0] + storm[1] > 0, "nothing broke at 36 m/s: {storm:?}");
    assert_eq!(storm[2], storm[0] + storm[1], "every piece is debris: {storm:?}");
    assert_eq!(counts("5"), [0, 0, 0], "a 5 m/s wind breaks nothing");
}
