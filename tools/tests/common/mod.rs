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
