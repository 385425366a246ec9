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
        self.show(fraction, None);
    }

    /// Reports `done` of `total` steps, with the time left at the pace so far.
    pub fn update_count(&mut self, done: u64, total: u64) {
        self.show(done as f32 / total.max(1) as f32, Some((done, total)));
    }

    fn show(&mut self, fraction: f32, count: Option<(u64, u64)>) {
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
        if let Some((done, total)) = count {
            let elapsed = (now - self.start).as_secs_f64();
            let left = if done > 0 {
                format!(
                    ", about {} left",
                    duration_text(elapsed * (total - done.min(total)) as f64 / done as f64)
                )
            } else {
                String::new()
            };
            let pct = 100.0 * fraction.clamp(0.0, 1.0);
            let line = format!("{}: {done} of {total} ({pct:.1}%){left}", self.label);
            let _ = if self.terminal {
                write!(err, "\r{line}\x1b[K")
            } else {
                writeln!(err, "{line} ({elapsed:.0} s)")
            };
        } else if self.terminal {
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

/// A duration in the unit that reads best: seconds, minutes or hours.
fn duration_text(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 90.0 * 60.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::duration_text;

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(duration_text(42.4), "42 s");
        assert_eq!(duration_text(600.0), "10 min");
        assert_eq!(duration_text(4.0 * 3600.0), "4.0 h");
    }
}
