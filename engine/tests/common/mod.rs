//! Helpers shared by the engine's integration tests.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` on a helper thread and returns its result, or fails the test if it takes longer than
/// `secs` seconds (a hang in the pool becomes a failure instead of a stuck test run). A panic in
/// `f` is propagated.
///
/// Under Miri, which reports deadlocks itself and runs far slower, `f` simply runs.
#[allow(dead_code)]
pub fn with_timeout<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    if cfg!(miri) {
        return f();
    }
    let (sender, receiver) = mpsc::channel();
    let handle = thread::spawn(move || {
        let result = f();
        let _ = sender.send(());
        result
    });
    match receiver.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => handle.join().expect("test body panicked"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(_) => unreachable!("the body finished without reporting"),
            Err(payload) => std::panic::resume_unwind(payload),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("test body did not finish within {secs} s (hang in the job system?)")
        }
    }
}

/// `n` normally; a much smaller count under Miri, which is thousands of times slower.
#[allow(dead_code)]
pub fn scaled(n: usize) -> usize {
    if cfg!(miri) {
        n.div_ceil(100).max(2)
    } else {
        n
    }
}
