//! Every entry point of the `sylva` command against hostile and careless arguments and files:
//! negative, absurd and non-finite numbers; outputs that are links, devices, folders, existing
//! files, the command's own input or in a missing folder; devices, FIFOs and folders as
//! inputs; a forest too large; Ctrl-C during long work. Each run must end by itself within
//! a time limit (it is killed after it), never panic (exit code 101 or "panicked"), name the
//! parameter or path in its message, and leave the user's files as they were.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// What one run did.
struct Run {
    /// The exit code; `None` when it was killed for running past the time limit.
    code: Option<i32>,
    stderr: String,
    elapsed: Duration,
}

fn sylva() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sylva"));
    // The viewer renders headless instead of opening a window.
    c.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Collects a child's output and exit code, killing it after `limit`.
fn finish(mut child: Child, start: Instant, limit: Duration) -> Run {
    let mut err_pipe = child.stderr.take().unwrap();
    let mut out_pipe = child.stdout.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out_pipe.read_to_end(&mut s);
    });
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status.code().unwrap_or(-1));
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = start.elapsed();
    let stderr = err_reader.join().unwrap();
    out_reader.join().unwrap();
    Run { code, stderr, elapsed }
}

/// Runs `sylva args`, killing it after `limit`.
fn run_for(args: &[&str], limit: Duration) -> Run {
    let start = Instant::now();
    let child = sylva().args(args).spawn().expect("start sylva");
    finish(child, start, limit)
}

/// The limit of a run that should be refused at once (generous for a loaded machine).
const QUICK: Duration = Duration::from_secs(15);

fn run(args: &[&str]) -> Run {
    run_for(args, QUICK)
}

/// Asserts the run ended by itself, without a panic, failing, with all of `expect` in its
/// message.
fn refused(args: &[&str], expect: &[&str]) -> Run {
    let r = run(args);
    let code = r
        .code
        .unwrap_or_else(|| panic!("{args:?} ran past {QUICK:?} and was killed: {}", r.stderr));
    assert!(
        code != 101 && !r.stderr.contains("panicked"),
        "{args:?} panicked: {}",
        r.stderr
    );
    assert!(
        code == 1 || code == 2,
        "{args:?} should be refused (exit {code}): {}",
        r.stderr
    );
    for e in expect {
        assert!(
            r.stderr.contains(e),
            "{args:?}: expected `{e}` in the message: {}",
            r.stderr
        );
    }
    r
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("sylva-hostile-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    fn s(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
    /// No temporary file is left in the folder.
    fn assert_no_temp_files(&self) {
        let temp: Vec<String> = fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(temp.is_empty(), "temporary files left behind: {temp:?}");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A file's contents and modification time, to show it was not touched.
fn snapshot(path: &Path) -> (Vec<u8>, SystemTime) {
    let meta = fs::symlink_metadata(path).unwrap();
    let bytes = if meta.file_type().is_symlink() {
        fs::read_link(path).unwrap().display().to_string().into_bytes()
    } else {
        fs::read(path).unwrap()
    };
    (bytes, meta.modified().unwrap())
}

/// A small spec in Sylva's own format (a built-in species, written by the library).
fn write_spec(path: &Path) {
    let spec = sylva_sim::species::builtin("sassafras").unwrap();
    fs::write(path, sylva_sim::spec::text::write(&spec)).unwrap();
}

const LSYSTEM: &str = "name = hostile\naxiom = F\niterations = 2\nF -> F[+F]F[-F]F\n";

#[test]
fn numbers_out_of_range_name_the_parameter_and_what_is_allowed() {
    let d = Scratch::new("numbers");
    let spec = d.s("tree.sylva");
    write_spec(Path::new(&spec));
    let ls = d.s("plant.ls");
    fs::write(&ls, LSYSTEM).unwrap();
    let out_png = d.s("x.png");
    let out_glb = d.s("x.glb");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["render", "--wind", "-1", "--out", &out_png], "--wind"),
        (vec!["render", "--wind", "NaN", "--out", &out_png], "--wind"),
        (vec!["render", "--wind", "inf", "--out", &out_png], "--wind"),
        (vec!["render", "--wind", "61", "--out", &out_png], "--wind"),
        (vec!["render", "--seed", "-1", "--out", &out_png], "--seed"),
        (vec!["render", "--seed", "1e3", "--out", &out_png], "--seed"),
        (vec!["render", "--trees", "-1", "--out", &out_png], "--trees"),
        (
            vec!["render", "--trees", "99999999999999999999999", "--out", &out_png],
            "--trees",
        ),
        (vec!["render", "--frames", "-1", "--out", &out_png], "--frames"),
        (vec!["render", "--frames", "1000000", "--out", &out_png], "--frames"),
        (vec!["render", "--size", "-2x2", "--out", &out_png], "--size"),
        (
            vec!["render", "--wind-grid", "-2x2x2", "--out", &out_png],
            "--wind-grid",
        ),
        (vec!["render", "--vorticity", "NaN", "--out", &out_png], "--vorticity"),
        (vec!["render", "--camera", "400,0,0", "--out", &out_png], "azimuth"),
        (vec!["render", "--camera", "10,90,0", "--out", &out_png], "elevation"),
        (vec!["render", "--camera", "10,0,-1", "--out", &out_png], "distance"),
        (vec!["render", "--camera", "NaN,0,0", "--out", &out_png], "azimuth"),
        (
            vec!["render", "--camera", "10,0", "--out", &out_png],
            "AZIMUTH,ELEVATION,DISTANCE",
        ),
        (
            vec!["render", "--wind-heading", "-1", "--out", &out_png],
            "--wind-heading",
        ),
        (vec!["view", "--camera", "10,0,1e9"], "distance"),
        (vec!["view", "--wind-heading", "inf"], "--wind-heading"),
        (vec!["view", "--wind", "-1"], "--wind"),
        (vec!["view", "--seed", "-1"], "--seed"),
        (vec!["view", "--frames", "-5"], "--frames"),
        (vec!["view", "--size", "-640x480"], "--size"),
        (vec!["export", &spec, "--sides", "-1", "--out", &out_glb], "--sides"),
        (vec!["export", &spec, "--sides", "1000", "--out", &out_glb], "--sides"),
        (vec!["export", &spec, "--seed", "-1", "--out", &out_glb], "--seed"),
        (vec!["export", &spec, "--animate", "-1", "--out", &out_glb], "--animate"),
        (
            vec!["export", &spec, "--animate", "1e9", "--out", &out_glb],
            "--animate",
        ),
        (
            vec!["export", &spec, "--animate", "nan", "--out", &out_glb],
            "--animate",
        ),
        (
            vec!["export", &spec, "--animate", "2", "--fps", "0", "--out", &out_glb],
            "--fps",
        ),
        (
            vec![
                "export",
                &spec,
                "--animate",
                "2",
                "--max-joints",
                "0",
                "--out",
                &out_glb,
            ],
            "--max-joints",
        ),
        (
            vec![
                "export",
                &spec,
                "--animate",
                "2",
                "--max-joints",
                "70000",
                "--out",
                &out_glb,
            ],
            "--max-joints",
        ),
        (
            vec!["export", &spec, "--animate", "2", "--wind", "inf", "--out", &out_glb],
            "--wind",
        ),
        (
            vec!["export", &spec, "--max-triangles", "5", "--out", &out_glb],
            "--max-triangles",
        ),
        (vec!["export", &spec, "--lods", "9", "--out", &out_glb], "--lods"),
        (vec!["spec", "stats", &spec, "--seed", "-1"], "--seed"),
        (vec!["grow", "colonize", "--seed", "-1", "--out", &out_glb], "--seed"),
        (
            vec!["grow", "colonize", "--points", "-1", "--out", &out_glb],
            "--points",
        ),
        (
            vec!["grow", "colonize", "--growth", "NaN", "--out", &out_glb],
            "--growth",
        ),
        (vec!["grow", "colonize", "--kill", "-inf", "--out", &out_glb], "--kill"),
        (
            vec!["grow", "colonize", "--trunk", "NaN,0", "--out", &out_glb],
            "--trunk",
        ),
        (
            vec!["grow", "colonize", "--envelope", "sphere:0,5,0,inf", "--out", &out_glb],
            "--envelope",
        ),
        (
            vec!["grow", "lsystem", &ls, "--iterations", "-1", "--out", &out_glb],
            "--iterations",
        ),
        (
            vec!["grow", "lsystem", &ls, "--iterations", "1000", "--out", &out_glb],
            "--iterations",
        ),
        (vec!["bench", "sim", "--steps", "100000000"], "--steps"),
        (vec!["bench", "sim", "--seed", "-1"], "--seed"),
        (vec!["bench", "sim", "--wind", "-1"], "--wind"),
        (vec!["bench", "gen", &spec, "--repeat", "-1"], "--repeat"),
        (vec!["bench", "gen", &spec, "--seed", "-1"], "--seed"),
        (vec!["bench", "wind", "--size", "-2x2x2"], "--size"),
        (vec!["bench", "wind", "--steps", "-1"], "--steps"),
        (vec!["bench", "wind", "--steps", "100000000"], "--steps"),
        (vec!["bench", "render", "--frames", "-1"], "--frames"),
        (vec!["bench", "render", "--size", "-2x2"], "--size"),
    ];
    for (args, flag) in &cases {
        let r = refused(args, &[flag, "allowed"]);
        assert!(!r.stderr.contains("unexpected argument"), "{args:?}: {}", r.stderr);
    }
    // The range is stated, not only that the value is wrong.
    let r = refused(&["render", "--wind", "-1", "--out", &out_png], &["0..=60"]);
    assert_eq!(r.code, Some(2));
    refused(&["export", &spec, "--sides", "-1", "--out", &out_glb], &["3..=64"]);
    assert!(!Path::new(&out_png).exists() && !Path::new(&out_glb).exists());
}

#[test]
fn outputs_are_replaced_only_when_allowed_and_never_an_input_link_or_device() {
    let d = Scratch::new("outputs");
    let spec = d.path("tree.sylva");
    write_spec(&spec);
    let spec_s = spec.display().to_string();
    let before_spec = snapshot(&spec);

    // The input itself, with and without --force, through every command that writes.
    for force in [&[][..], &["--force"][..]] {
        let with = |mut v: Vec<String>| {
            v.extend(force.iter().map(|s| s.to_string()));
            v
        };
        let cases: Vec<Vec<String>> = vec![
            with(vec![
                "spec".into(),
                "convert".into(),
                spec_s.clone(),
                "--out".into(),
                spec_s.clone(),
            ]),
            with(vec![
                "view".into(),
                spec_s.clone(),
                "--screenshot".into(),
                spec_s.clone(),
            ]),
            with(vec!["render".into(), spec_s.clone(), "--out".into(), spec_s.clone()]),
        ];
        for args in &cases {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            // The stronger reason is given, --force or not.
            refused(&args, &[&spec_s, "input file"]);
        }
    }
    // The same file by a hard link, and through a path with `.` in it.
    let hard = d.path("hard.sylva");
    fs::hard_link(&spec, &hard).unwrap();
    let dotted = d.0.join(".").join("tree.sylva").display().to_string();
    refused(
        &[
            "spec",
            "convert",
            &spec_s,
            "--out",
            &hard.display().to_string(),
            "--force",
        ],
        &["input file"],
    );
    refused(
        &["spec", "convert", &spec_s, "--out", &dotted, "--force"],
        &["input file"],
    );

    // Writing tree.obj writes tree.mtl too: an existing .mtl needs --force, and is never the
    // input.
    let mtl = d.path("tree.mtl");
    fs::write(&mtl, "newmtl mine\n").unwrap();
    let before_mtl = snapshot(&mtl);
    let obj = d.s("tree.obj");
    refused(&["export", &spec_s, "--out", &obj], &["tree.mtl", "--force"]);
    let mtl_spec = d.path("tree.mtl");
    refused(
        &["export", &mtl_spec.display().to_string(), "--out", &obj, "--force"],
        &["tree.mtl", "input file"],
    );
    assert_eq!(snapshot(&mtl), before_mtl);
    assert!(!d.path("tree.obj").exists());
    // Its leaf texture, tree_leaf.png, likewise.
    fs::remove_file(&mtl).unwrap();
    let png = d.path("tree_leaf.png");
    fs::write(&png, b"my picture").unwrap();
    let before_png = snapshot(&png);
    refused(&["export", &spec_s, "--out", &obj], &["tree_leaf.png", "--force"]);
    assert_eq!(snapshot(&png), before_png);
    assert!(!d.path("tree.obj").exists() && !mtl.exists());

    // Links and devices are not replaced, --force or not.
    #[cfg(unix)]
    {
        let target = d.path("target.png");
        fs::write(&target, b"precious").unwrap();
        let link = d.path("link.png");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let before_link = snapshot(&link);
        let before_target = snapshot(&target);
        let link_s = link.display().to_string();
        refused(&["render", "--out", &link_s, "--force"], &[&link_s, "symbolic link"]);
        refused(
            &["view", "--screenshot", &link_s, "--force", "--frames", "1"],
            &[&link_s, "symbolic link"],
        );
        let link_glb = d.path("link.glb");
        std::os::unix::fs::symlink(&target, &link_glb).unwrap();
        let link_glb_s = link_glb.display().to_string();
        refused(
            &["export", &spec_s, "--out", &link_glb_s, "--force"],
            &[&link_glb_s, "symbolic link"],
        );
        refused(
            &[
                "grow",
                "lsystem",
                "--preset",
                "abop-1.24a",
                "--out",
                &link_glb_s,
                "--force",
            ],
            &["symbolic link"],
        );
        assert_eq!(snapshot(&link), before_link);
        assert_eq!(snapshot(&target), before_target);
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());

        refused(&["render", "--out", "/dev/null", "--force"], &["/dev/null", "a device"]);
        refused(
            &["spec", "convert", &spec_s, "--out", "/dev/null", "--force"],
            &["/dev/null", "a device"],
        );
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device_like());
    }

    // A folder, an existing file without --force.
    refused(
        &["spec", "convert", &spec_s, "--out", &d.s(""), "--force"],
        &["a folder"],
    );
    fs::create_dir(d.path("dir.glb")).unwrap();
    refused(
        &["export", &spec_s, "--out", &d.s("dir.glb"), "--force"],
        &["dir.glb", "a folder"],
    );
    let existing = d.path("existing.sylva");
    fs::write(&existing, "keep me").unwrap();
    let before_existing = snapshot(&existing);
    refused(
        &["spec", "convert", &spec_s, "--out", &existing.display().to_string()],
        &["existing.sylva", "--force"],
    );
    assert_eq!(snapshot(&existing), before_existing);
    assert_eq!(snapshot(&spec), before_spec);
    d.assert_no_temp_files();

    // With --force a regular file is replaced, completely.
    let r = run(&[
        "spec",
        "convert",
        &spec_s,
        "--out",
        &existing.display().to_string(),
        "--force",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(fs::read(&existing).unwrap(), fs::read(&spec).unwrap());
    d.assert_no_temp_files();
}

/// `is_char_device` under a name that reads well in the assertion above.
trait CharDevice {
    fn is_char_device_like(&self) -> bool;
}

impl CharDevice for fs::FileType {
    fn is_char_device_like(&self) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            self.is_char_device()
        }
        #[cfg(not(unix))]
        {
            false
        }
    }
}

#[test]
fn unwritable_outputs_are_refused_before_any_work() {
    let d = Scratch::new("unwritable");
    let spec = d.s("tree.sylva");
    write_spec(Path::new(&spec));
    let missing = d.path("missing").join("dir").join("x.png");
    let missing_s = missing.display().to_string();
    // A forest that takes a while to simulate: refused before it is grown.
    let r = refused(
        &["render", "--trees", "50", "--frames", "100000", "--out", &missing_s],
        &[&missing_s, "does not exist"],
    );
    assert!(r.elapsed < Duration::from_secs(5), "refused after {:?}", r.elapsed);
    assert!(
        !r.stderr.contains("rendered") && !r.stderr.contains(".tmp"),
        "{}",
        r.stderr
    );
    let glb = d.path("missing").join("x.glb").display().to_string();
    refused(&["export", &spec, "--out", &glb], &[&glb, "does not exist"]);
    refused(&["grow", "colonize", "--out", &glb], &[&glb, "does not exist"]);
    refused(
        &["grow", "lsystem", "--preset", "oliapuram", "--out", &glb],
        &[&glb, "does not exist"],
    );
    refused(
        &["view", "--screenshot", &missing_s, "--frames", "1"],
        &[&missing_s, "does not exist"],
    );
    let under_file = Path::new(&spec).join("x.png").display().to_string();
    refused(&["render", "--out", &under_file], &[&under_file, "not a folder"]);
    refused(&["export", &spec, "--out", &d.s("tree.fbx")], &["tree.fbx", ".glb"]);
    // An animation goes only into a .glb; its settings only with --animate.
    refused(
        &["export", &spec, "--animate", "2", "--out", &d.s("tree.obj")],
        &["tree.obj", "only a .glb"],
    );
    refused(
        &["export", &spec, "--fps", "24", "--out", &d.s("tree.glb")],
        &["--animate"],
    );
    refused(
        &["export", &spec, "--lods", "2", "--out", &d.s("tree.obj")],
        &["tree.obj", "only a .glb"],
    );
    refused(
        &[
            "export",
            &spec,
            "--lods",
            "2",
            "--animate",
            "2",
            "--out",
            &d.s("tree.glb"),
        ],
        &["--lods", "--animate"],
    );
    assert!(!d.path("tree.obj").exists() && !d.path("tree.glb").exists());
    // Pictures are PNG only: a name that promises another format is refused, not filled
    // with a PNG.
    for name in ["x.jpg", "x.JPEG", "x", "x.png.bmp"] {
        let path = d.s(name);
        let r = refused(
            &["render", "--trees", "50", "--frames", "100000", "--out", &path],
            &[&path, ".png"],
        );
        assert!(r.elapsed < Duration::from_secs(5), "refused after {:?}", r.elapsed);
        refused(&["view", "--screenshot", &path, "--frames", "1"], &[&path, ".png"]);
        assert!(!d.path(name).exists(), "{name} was written");
    }
    assert!(!d.path("missing").exists());
    d.assert_no_temp_files();
}

#[cfg(unix)]
#[test]
fn devices_fifos_and_folders_are_not_read() {
    let d = Scratch::new("inputs");
    let fifo = d.path("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let fifo_s = fifo.display().to_string();
    let folder = d.s("");
    let out = d.s("out.glb");
    let png = d.s("out.png");
    for input in ["/dev/zero", "/dev/urandom", fifo_s.as_str(), folder.as_str()] {
        let cases: Vec<Vec<&str>> = vec![
            vec!["spec", "stats", input],
            vec!["spec", "convert", input, "--out", &out],
            vec!["export", input, "--out", &out],
            vec!["grow", "lsystem", input, "--out", &out],
            vec!["grow", "colonize", "--points-file", input, "--out", &out],
            vec!["render", input, "--out", &png],
            vec!["view", input, "--screenshot", &png, "--frames", "1"],
            vec!["bench", "gen", input],
        ];
        for args in &cases {
            refused(args, &[input.trim_end_matches('/'), "not a regular file"]);
        }
    }
    assert!(!d.path("out.glb").exists() && !d.path("out.png").exists());
}

#[test]
fn a_forest_too_large_is_refused_before_it_is_grown() {
    let d = Scratch::new("forest");
    let out = d.s("x.png");
    let start = Instant::now();
    let r = run_for(
        &["render", "--species", "black_tupelo", "--trees", "10000", "--out", &out],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("--trees 10000") && r.stderr.contains("at most"),
        "{}",
        r.stderr
    );
    assert!(start.elapsed() < Duration::from_secs(60));
    assert!(!Path::new(&out).exists());
}

/// Sends SIGINT to a running child after `after`, and collects it.
#[cfg(unix)]
fn interrupt_after(args: &[&str], after: Duration, limit: Duration) -> Run {
    let start = Instant::now();
    let child = sylva().args(args).spawn().expect("start sylva");
    std::thread::sleep(after);
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    finish(child, start, limit)
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_long_work_with_progress_and_no_output() {
    // Hours of steps, asked for honestly: progress shows, and Ctrl-C stops it at once.
    let r = interrupt_after(
        &[
            "bench",
            "sim",
            "--segments",
            "200",
            "--leaves",
            "0",
            "--steps",
            "1000000",
        ],
        Duration::from_millis(2500),
        Duration::from_secs(20),
    );
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert!(
        r.stderr.contains("steps: ") && r.stderr.contains(" of 1000000 (") && r.stderr.contains("left"),
        "no progress: {}",
        r.stderr
    );
    assert!(r.stderr.contains("interrupted"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"));

    // Rendering: no picture and no temporary file are left behind.
    let d = Scratch::new("ctrlc");
    let out = d.path("long.png");
    let r = interrupt_after(
        &[
            "render",
            "--species",
            "sassafras",
            "--wind-model",
            "uniform",
            "--frames",
            "200000",
            "--size",
            "64x64",
            "--out",
            &out.display().to_string(),
        ],
        Duration::from_millis(3000),
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert!(r.stderr.contains("interrupted"), "{}", r.stderr);
    assert!(!out.exists());
    d.assert_no_temp_files();
}

/// The viewer under Xvfb: Ctrl-C closes it without writing the screenshot it was asked for.
#[cfg(unix)]
#[test]
fn ctrl_c_closes_the_viewer_without_a_screenshot() {
    let d = Scratch::new("view-ctrlc");
    let shot = d.path("shot.png");
    let pid_file = d.path("pid");
    // `exec` keeps the shell's process id, so the signal reaches sylva itself.
    let script = format!(
        "echo $$ > '{}'; exec '{}' view --species sassafras --wind-model uniform --no-vsync --size 320x240 --screenshot '{}'",
        pid_file.display(),
        env!("CARGO_BIN_EXE_sylva"),
        shot.display()
    );
    let start = Instant::now();
    let child = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 640x480x24", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xvfb-run (scripts/setup.sh installs it)");
    std::thread::sleep(Duration::from_secs(8));
    let pid = fs::read_to_string(&pid_file).expect("the viewer started");
    let sent = Command::new("kill").args(["-INT", pid.trim()]).status().unwrap();
    assert!(sent.success());
    let r = finish(child, start, Duration::from_secs(40));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert!(
        r.stderr.contains("interrupted") && !r.stderr.contains("panicked"),
        "{}",
        r.stderr
    );
    assert!(!shot.exists(), "no screenshot after Ctrl-C");
    d.assert_no_temp_files();
}
