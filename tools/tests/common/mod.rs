//! What the command-line tests share: running the `sylva` binary built with them.

use std::process::Command;

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
#[allow(dead_code)] // each test binary compiles this module; not all of them refuse things
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
