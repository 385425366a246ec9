//! Ctrl-C: long work stops cleanly at its next step, anything else at once.
//!
//! A loop that can stop between steps holds a [`Steps`] guard and calls [`check`] each step; the
//! first Ctrl-C then only sets a flag, and the loop returns [`Interrupted`], which `main` reports
//! and turns into exit code 130. Without such a loop (growing a tree, loading a file), or on a
//! second Ctrl-C, the handler removes the temporary files being written (see `output`) and
//! exits with 130 at once. Either way no partial output file is left behind.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Exit code after Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_CODE: u8 = 130;

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// Loops now able to stop between steps.
static STEPPING: AtomicUsize = AtomicUsize::new(0);

/// The error long work returns when the user pressed Ctrl-C.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted (Ctrl-C); no output file was written")
    }
}

impl std::error::Error for Interrupted {}

/// Installs the Ctrl-C handler (once, at start).
pub fn install() {
    let installed = ctrlc::set_handler(|| {
        if STEPPING.load(Ordering::SeqCst) > 0 && !REQUESTED.swap(true, Ordering::SeqCst) {
            eprintln!("\nsylva: stopping after this step (Ctrl-C again stops at once)");
            return;
        }
        let _held = crate::output::remove_temp_files_for_exit();
        eprintln!("\nsylva: interrupted (Ctrl-C); no output file was written");
        std::process::exit(EXIT_CODE as i32);
    });
    if let Err(e) = installed {
        // Without the handler Ctrl-C still ends the process, with the system's default action.
        eprintln!("sylva: warning: cannot handle Ctrl-C ({e}); it will end the command at once");
    }
}

/// `Err(Interrupted)` once the user pressed Ctrl-C.
pub fn check() -> Result<(), Interrupted> {
    if REQUESTED.load(Ordering::SeqCst) {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

/// While alive, Ctrl-C asks the running loop to stop instead of ending the process.
pub struct Steps(());

impl Steps {
    pub fn begin() -> Steps {
        STEPPING.fetch_add(1, Ordering::SeqCst);
        Steps(())
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        STEPPING.fetch_sub(1, Ordering::SeqCst);
    }
}
