//! `sylva view` and `sylva render` end to end, on the machine's Vulkan device (lavapipe without
//! a GPU) with the validation layer on. The viewer runs under Xvfb (X11) and under weston's
//! headless backend (Wayland); its screenshot must show the overlay's text and the trees.

mod common;

use std::path::Path;
use std::process::Command;

use common::{differing, read_png, run, TempDir};
use sylva_render::Rgba;
use sylva_tests::pixels::count;

/// Pixels in a rectangle that are near white (text) and near black (the text's backing box).
fn text_and_box(image: &Rgba, x1: u32, y1: u32) -> (usize, usize) {
    let (mut white, mut dark) = (0, 0);
    for y in 0..y1 {
        for x in 0..x1 {
            let p = image.pixel(x, y);
            let (lo, hi) = (p[0].min(p[1]).min(p[2]), p[0].max(p[1]).max(p[2]));
            if lo > 225 {
                white += 1;
            } else if hi < 100 {
                dark += 1;
            }
        }
    }
    (white, dark)
}

#[test]
fn viewer_runs_120_frames_under_xvfb_and_its_screenshot_shows_overlay_and_trees() {
    let dir = TempDir::new("sylva-viewer", "xvfb");
    let shot = dir.path("shot.png");
    let r = run(Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x800x24"])
        .arg(env!("CARGO_BIN_EXE_sylva"))
        .args(["view", "--frames", "120", "--no-vsync", "--validation", "--screenshot"])
        .arg(&shot));
    assert_eq!(
        r.code, 0,
        "sylva view under Xvfb failed (xvfb-run comes with scripts/setup.sh):\n{}",
        r.stderr
    );
    assert!(r.stderr.contains("120 frames"), "{}", r.stderr);
    let image = read_png(&shot);
    assert_eq!((image.width, image.height), (1280, 720));
    // The overlay's lines of text fill the top left: white glyphs on dark boxes.
    let (white, dark) = text_and_box(&image, 700, 90);
    assert!(
        white > 1500 && dark > 10_000,
        "overlay text not visible: {white} white, {dark} dark pixels"
    );
    // A frame of the overlay without the text would be all box: the glyphs are a real share.
    assert!(
        white * 20 > dark,
        "overlay boxes without text: {white} white, {dark} dark pixels"
    );
    // The default forest fills the middle of the picture.
    let (bark, leaf) = count(&image, 0, 100, 1280, 660);
    assert!(
        leaf > 20_000 && bark > 1_000,
        "trees not visible: {leaf} leaf and {bark} bark pixels"
    );
}

/// A Wayland compositor for one test: weston with its headless backend and software renderer,
/// on a socket of its own in `runtime` (an `XDG_RUNTIME_DIR`), killed when dropped.
struct Weston(std::process::Child);

impl Weston {
    fn start(runtime: &Path) -> Weston {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        let child = Command::new("weston")
            .args([
                "--backend=headless-backend.so",
                "--use-pixman",
                "--socket=sylva-test",
                "--idle-time=0",
            ])
            .env("XDG_RUNTIME_DIR", runtime)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start weston (scripts/setup.sh installs it): {e}"));
        let socket = runtime.join("sylva-test");
        let start = std::time::Instant::now();
        while !socket.exists() {
            assert!(start.elapsed().as_secs() < 20, "weston opened no socket in 20 s");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Weston(child)
    }
}

impl Drop for Weston {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn viewer_opens_its_window_on_wayland() {
    let dir = TempDir::new("sylva-viewer", "wayland");
    let runtime = dir.path("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let _weston = Weston::start(&runtime);
    let shot = dir.path("shot.png");
    // No X11 display: the window can only open on Wayland.
    let r = run(common::command()
        .env_remove("DISPLAY")
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("WAYLAND_DISPLAY", "sylva-test")
        .args([
            "view",
            "--species",
            "quaking_aspen",
            "--frames",
            "20",
            "--validation",
            "--screenshot",
        ])
        .arg(&shot));
    assert_eq!(r.code, 0, "sylva view on Wayland failed:\n{}", r.stderr);
    assert!(r.stderr.contains("20 frames"), "{}", r.stderr);
    assert!(!r.stderr.contains("headless"), "it fell back to headless: {}", r.stderr);
    let image = read_png(&shot);
    let (bark, leaf) = count(&image, 0, 0, image.width, image.height);
    assert!(
        leaf > 5_000 && bark > 200,
        "the tree is not visible: {leaf} leaf and {bark} bark pixels"
    );
}

#[test]
fn view_without_a_display_renders_headless_and_says_so() {
    let dir = TempDir::new("sylva-viewer", "nodisplay");
    let shot = dir.path("fallback.png");
    let r = run(common::command()
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .args([
            "view",
            "--species",
            "lombardy_poplar",
            "--frames",
            "3",
            "--size",
            "320x200",
            "--screenshot",
        ])
        .arg(&shot));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("no display") && r.stderr.contains("headless"),
        "{}",
        r.stderr
    );
    let image = read_png(&shot);
    assert_eq!((image.width, image.height), (320, 200));
    let (_, leaf) = count(&image, 0, 0, 320, 200);
    assert!(leaf > 500, "{leaf} leaf pixels");
}

#[test]
fn render_writes_the_last_frame_as_png() {
    let dir = TempDir::new("sylva-viewer", "render");
    let out = dir.path("tree.png");
    let r = run(common::command()
        .args([
            "render",
            "--species",
            "quaking_aspen",
            "--frames",
            "10",
            "--size",
            "400x300",
            "--validation",
            "--out",
        ])
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let image = read_png(&out);
    assert_eq!((image.width, image.height), (400, 300));
    let (bark, leaf) = count(&image, 0, 0, 400, 300);
    assert!(leaf > 3000 && bark > 100, "{leaf} leaf and {bark} bark pixels");
    // The file is not replaced without --force, and stays whole.
    let again = run(common::command()
        .args(["render", "--species", "quaking_aspen", "--frames", "1", "--out"])
        .arg(&out));
    assert_ne!(again.code, 0);
    assert!(again.stderr.contains("--force"), "{}", again.stderr);
    assert_eq!(read_png(&out), image);
}

#[test]
fn render_refuses_bad_input_clearly() {
    let dir = TempDir::new("sylva-viewer", "bad");
    let out = dir.path("x.png");
    let out = out.to_str().unwrap();
    let missing = dir.path("missing.xml");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["render", "--size", "0x100", "--out", out], "--size"),
        (vec!["render", "--size", "1280", "--out", out], "WIDTHxHEIGHT"),
        (vec!["render", "--size", "99999x10", "--out", out], "--size"),
        (vec!["render", "--frames", "0", "--out", out], "--frames"),
        (vec!["render", "--trees", "0", "--out", out], "--trees"),
        (vec!["render", "--species", "baobab", "--out", out], "quaking_aspen"),
        (vec!["render", missing.to_str().unwrap(), "--out", out], "missing.xml"),
        (
            vec!["render", "--wind-field", "--wind-model", "uniform", "--out", out],
            "only the fluid wind has a field",
        ),
        (
            vec!["render", "--vorticity", "0.3", "--wind-model", "uniform", "--out", out],
            "vorticity confinement needs the fluid wind",
        ),
        (vec!["render", "--vorticity", "-1", "--out", out], "--vorticity"),
        (
            vec!["render", "--wind-gpu", "--wind-model", "uniform", "--out", out],
            "only the fluid wind runs on the GPU",
        ),
        (vec!["view", "--size", "10x10"], "--size"),
        (vec!["view", "--frames", "0"], "--frames"),
    ];
    for (args, expect) in cases {
        let r = run(common::command().args(&args));
        // 2: refused by the argument parser; 1: refused when checked.
        assert!(r.code == 1 || r.code == 2, "{args:?}: exit {}: {}", r.code, r.stderr);
        assert!(
            r.stderr.contains(expect),
            "{args:?}: expected '{expect}' in: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    }
    assert!(!Path::new(out).exists(), "nothing is written on bad input");
}

/// The viewer with the fluid wind on the GPU: the simulation thread submits the wind's compute
/// work while the main thread draws, under the validation layer (which fails the run on any
/// error).
#[test]
fn viewer_steps_the_wind_on_the_gpu_beside_the_frames() {
    let dir = TempDir::new("sylva-viewer", "xvfb-wind-gpu");
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
            "--wind-gpu",
            "--wind-field",
            "--screenshot",
        ])
        .arg(&shot));
    assert_eq!(r.code, 0, "sylva view --wind-gpu under Xvfb failed:\n{}", r.stderr);
    assert!(r.stderr.contains("60 frames"), "{}", r.stderr);
    let image = read_png(&shot);
    let (bark, leaf) = count(&image, 0, 100, 1280, 660);
    assert!(
        leaf > 20_000 && bark > 1_000,
        "trees not drawn: {bark} bark, {leaf} leaf pixels"
    );
}

/// `--wind-gpu` steps the fluid wind as compute shaders on the Vulkan device and reads it back
/// for the trees: the picture (trees and field arrows) is the CPU wind's, while a stronger wind
/// visibly changes it. Both step the grid every frame (`--sim-lod off`: under the simulation's
/// level of detail a grid on the CPU steps every 2nd frame, one on the GPU every frame).
#[test]
fn render_with_the_wind_on_the_gpu_matches_the_cpu_wind() {
    let dir = TempDir::new("sylva-viewer", "wind-gpu");
    let render = |name: &str, extra: &[&str]| {
        let out = dir.path(name);
        let mut args = vec![
            "render",
            "--species",
            "lombardy_poplar",
            "--frames",
            "60",
            "--size",
            "480x300",
            "--wind-field",
            "--sim-lod",
            "off",
        ];
        args.extend_from_slice(extra);
        let r = run(common::command().args(&args).arg("--out").arg(&out));
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        read_png(&out)
    };
    let cpu = render("cpu.png", &[]);
    let gpu = render("gpu.png", &["--wind-gpu"]);
    let stronger = render("stronger.png", &["--wind", "9"]);
    let (same, changed) = (differing(&cpu, &gpu), differing(&cpu, &stronger));
    eprintln!("pixels differing by more than 8 levels: GPU vs CPU wind {same}, 9 vs 6 m/s wind {changed}");
    assert!(
        changed > 1000,
        "a stronger wind should move the trees: {changed} pixels"
    );
    assert!(
        same <= 20,
        "the GPU wind's picture differs from the CPU wind's in {same} pixels"
    );
}

/// `--wind-field` draws the fluid wind as arrows (orange to red in a steady wind) over the
/// scene; without it there are none.
#[test]
fn render_draws_the_wind_field_when_asked() {
    let dir = TempDir::new("sylva-viewer", "field");
    let arrows = |extra: &[&str]| {
        let out = dir.path("field.png");
        let mut args = vec![
            "render",
            "--species",
            "lombardy_poplar",
            "--frames",
            "30",
            "--size",
            "480x300",
            "--force",
        ];
        args.extend_from_slice(extra);
        let r = run(common::command().args(&args).arg("--out").arg(&out));
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        let image = read_png(&out);
        let mut n = 0;
        for y in 0..image.height {
            for x in 0..image.width {
                let p = image.pixel(x, y);
                if p[0] > 200 && p[1] < 200 && p[2] < 110 && p[0] as u32 > p[1] as u32 + 60 {
                    n += 1;
                }
            }
        }
        n
    };
    let plain = arrows(&[]);
    let shown = arrows(&["--wind-field"]);
    assert!(plain < 20, "{plain} arrow-coloured pixels without the field");
    assert!(shown > 2000, "only {shown} arrow-coloured pixels with --wind-field");
}

#[test]
fn no_vulkan_driver_is_a_clear_error() {
    let dir = TempDir::new("sylva-viewer", "novk");
    let out = dir.path("x.png");
    // Point the Vulkan loader at a driver list with nothing in it.
    let r = run(common::command()
        .env("VK_ICD_FILENAMES", dir.path("none.json"))
        .env("VK_DRIVER_FILES", dir.path("none.json"))
        .args(["render", "--species", "lombardy_poplar", "--frames", "1", "--out"])
        .arg(&out));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("Vulkan"), "{}", r.stderr);
    assert!(
        r.stderr.contains("mesa-vulkan-drivers"),
        "the message says what to install: {}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(!out.exists());
}

/// Drives the viewer with real X input (xdotool under Xvfb): keys for pause, step, overlay,
/// wind, solver, model and reset, and a right-button drag that pulls the sphere into the tree.
#[test]
fn viewer_answers_keys_and_the_sphere_follows_a_drag() {
    let dir = TempDir::new("sylva-viewer", "input");
    let shot = dir.path("input.png");
    let log = dir.path("view.log");
    let script = r#"
        set -u
        "$SYLVA" view --species lombardy_poplar --size 640x400 --no-vsync --screenshot "$SHOT" 2> "$LOG" &
        pid=$!
        wid=$(xdotool search --sync --name '^Sylva$' | head -1)
        # Until the viewer says it is drawing (up to a minute on a loaded machine), then a
        # little more so the first frames are out.
        for _ in $(seq 300); do grep -q presentation "$LOG" && break; sleep 0.2; done
        sleep 2
        xdotool windowfocus --sync "$wid" 2>/dev/null || true
        xdotool mousemove --window "$wid" 320 200
        for k in space n o Right Up s m r w Prior Prior Next w; do xdotool key "$k"; sleep 0.3; done
        xdotool mousemove --window "$wid" 600 200 mousedown 3
        sleep 0.3
        xdotool mousemove --window "$wid" 400 220
        sleep 0.3
        xdotool mousemove --window "$wid" 330 230
        sleep 0.5
        xdotool mouseup 3
        sleep 0.5
        xdotool key Escape
        wait $pid
    "#;
    let r = run(Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x800x24", "bash", "-c", script])
        .env("SYLVA", env!("CARGO_BIN_EXE_sylva"))
        .env("SHOT", &shot)
        .env("LOG", &log));
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        r.code, 0,
        "xvfb-run/xdotool (from scripts/setup.sh) or the viewer failed:\n{}\n{said}",
        r.stderr
    );
    let expected = [
        "paused",
        "one step",
        "overlay off",
        "wind 6.0 m/s towards 135°",
        "wind 7.0 m/s towards 135°",
        "solver cg",
        "model oliapuram: rebuilt at rest, wind kept",
        "reset",
        "wind field on layer 6 of 16",
        "wind field on layer 7 of 16",
        "wind field on layer 8 of 16",
        "wind field on layer 7 of 16",
        "wind field hidden",
        "sphere moved to",
    ];
    let mut rest = said.as_str();
    for line in expected {
        let at = rest
            .find(line)
            .unwrap_or_else(|| panic!("'{line}' missing or out of order in:\n{said}"));
        rest = &rest[at + line.len()..];
    }
    let image = read_png(&shot);
    // Overlay off: no text.
    assert_eq!(text_and_box(&image, 400, 90).0, 0, "the overlay is still drawn");
    // The violet sphere now sits where it was dragged, over the tree in the middle.
    let mut violet = 0;
    for y in 180..280 {
        for x in 280..380 {
            let p = image.pixel(x, y).map(|c| c as f32);
            if p[2] > 1.2 * p[1] && p[0] > 1.2 * p[1] {
                violet += 1;
            }
        }
    }
    assert!(
        violet > 2000,
        "only {violet} violet pixels where the sphere was dragged"
    );
}
