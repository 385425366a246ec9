//! Progress for long runs, on standard error: a percentage redrawn in place on a terminal, a
//! line every few seconds otherwise; nothing for runs that finish quickly.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

pub struct Progress {
    label: String,
    start: Instant,
    last: Instant,
    terminal: bool,
    shown: bool,
}

/// Runs shorter than this show nothing.
const QUIET: Duration = Duration::from_millis(500);

impl Progress {
    pub fn new(label: impl Into<String>) -> Progress {
        let now = Instant::now();
        Progress {
            label: label.into(),
            start: now,
            last: now,
            terminal: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    /// Reports the fraction done (0..=1).
    pub fn update(&mut self, fraction: f32) {
        let now = Instant::now();
        if now - self.start < QUIET {
            return;
        }
        let every = if self.terminal {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(5)
        };
        if self.shown && now - self.last < every {
            return;
        }
        self.last = now;
        self.shown = true;
        let pct = (fraction.clamp(0.0, 1.0) * 100.0).round();
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r{}: {pct:>3}%", self.label);
        } else {
            let _ = writeln!(
                err,
                "{}: {pct}% ({:.0} s)",
                self.label,
                (now - self.start).as_secs_f32()
            );
        }
        let _ = err.flush();
    }

    /// Ends the progress line, if one was shown.
    pub fn finish(&mut self) {
        if self.shown && self.terminal {
            let _ = writeln!(
                std::io::stderr(),
                "\r{}: done in {:.1} s",
                self.label,
                self.start.elapsed().as_secs_f32()
            );
        }
    }
}
