//! What the command-line tests share: running the `sylva` binary built with them, a scratch
//! folder removed when dropped, and reading the PNGs it writes.
//!
//! Each test binary compiles this module and uses part of it, hence `dead_code` allowed here.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use sylva_render::Rgba;

/// How a finished command ended.
pub struct Run {
    /// Exit code, or -1 when killed by a signal.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` to the end.
pub fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A command for the `sylva` binary built with the tests.
pub fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sylva"))
}

/// A scratch folder under the system's temporary folder, unique to `prefix`, `name` and this
/// process, removed with everything in it when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(prefix: &str, name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Reads a PNG the binary wrote.
pub fn read_png(path: &Path) -> Rgba {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Rgba::from_png(&bytes).unwrap()
}

/// Runs `sylva ARGS` to the end: (exit code, or -1 when killed by a signal; stdout; stderr).
pub fn sylva(args: &[&str]) -> (i32, String, String) {
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

/// Runs `sylva ARGS` and checks that it is refused without a panic, with a message that names
/// `name` and says what is allowed.
pub fn assert_refused(args: &[&str], name: &str) {
    let (code, _, err) = sylva(args);
    assert_ne!(code, 0, "{args:?} should fail");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(err.contains(name), "{args:?}: the message should name {name}: {err}");
    assert!(
        err.contains("allowed") || err.contains("possible values"),
        "{args:?}: the message should say what is allowed: {err}"
    );
}

/// Pixels whose colour differs by more than 8 levels in any channel between two pictures of
/// the same size.
pub fn differing(a: &Rgba, b: &Rgba) -> usize {
    assert_eq!((a.width, a.height), (b.width, b.height));
    let mut n = 0;
    for y in 0..a.height {
        for x in 0..a.width {
            let (p, q) = (a.pixel(x, y), b.pixel(x, y));
            if (0..3).any(|c| p[c].abs_diff(q[c]) > 8) {
                n += 1;
            }
        }
    }
    n
}
