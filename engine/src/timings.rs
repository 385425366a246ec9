//! Per-frame timings of named phases: what the benchmarks print and the viewer's overlay draws.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How many closed frames [`FrameTimings`] keeps for [`history`](FrameTimings::history).
pub const HISTORY: usize = 512;

/// Identifies a phase of a [`FrameTimings`]; obtained from
/// [`FrameTimings::phase_id`] or [`FrameTimings::phase_ids`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PhaseId(u32);

impl PhaseId {
    /// The phase's position in the list given to [`FrameTimings::new`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Accumulated timings of named phases, frame by frame.
///
/// Two kinds of time are recorded:
///
/// * A phase's value is **work time**: the sum of every duration [`add`](Self::add)ed to it
///   during the frame. When several jobs of one phase run at once on different threads, their
///   times add up, so a phase can exceed the frame's wall time, and the phases' sum can exceed it
///   too.
/// * The **wall time** is the frame's elapsed real time, given to
///   [`end_frame`](Self::end_frame).
///
/// [`add`](Self::add) takes `&self` and is safe to call from many threads at once (atomic
/// accumulators); closing a frame and the readers of closed frames are single-threaded.
#[derive(Debug)]
pub struct FrameTimings {
    names: Box<[String]>,
    /// The open frame's accumulators, in nanoseconds.
    current: Box<[AtomicU64]>,
    /// Sums over all closed frames, in nanoseconds.
    totals: Box<[u64]>,
    total_wall: u64,
    frames: u64,
    /// Ring of the last [`HISTORY`] closed frames, in nanoseconds: row `p` (of `HISTORY` values)
    /// holds phase `p`, the last row the wall time.
    ring: Box<[u64]>,
    /// The ring slot the next closed frame goes to.
    next_slot: usize,
    /// How many ring slots hold a frame (at most [`HISTORY`]).
    filled: usize,
}

fn to_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl FrameTimings {
    /// Timings for the given phases, in that order.
    ///
    /// # Panics
    ///
    /// If two phases have the same name, or there are more than `u32::MAX` of them.
    pub fn new(phases: &[&str]) -> Self {
        assert!(u32::try_from(phases.len()).is_ok(), "FrameTimings: too many phases");
        for (i, name) in phases.iter().enumerate() {
            assert!(
                !phases[..i].contains(name),
                "FrameTimings: phase name {name:?} is given twice"
            );
        }
        let count = phases.len();
        FrameTimings {
            names: phases.iter().map(|&name| name.to_owned()).collect(),
            current: (0..count).map(|_| AtomicU64::new(0)).collect(),
            totals: vec![0; count].into(),
            total_wall: 0,
            frames: 0,
            ring: vec![0; (count + 1) * HISTORY].into(),
            next_slot: 0,
            filled: 0,
        }
    }

    /// The id of the phase called `name`.
    pub fn phase_id(&self, name: &str) -> Option<PhaseId> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|index| PhaseId(index as u32))
    }

    /// Every phase's id, in order.
    pub fn phase_ids(&self) -> impl ExactSizeIterator<Item = PhaseId> {
        (0..self.names.len() as u32).map(PhaseId)
    }

    /// Every phase's name, in order.
    pub fn phase_names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// The name of phase `id`.
    pub fn phase_name(&self, id: PhaseId) -> &str {
        &self.names[id.index()]
    }

    /// The number of phases.
    pub fn phase_count(&self) -> usize {
        self.names.len()
    }

    /// Adds `d` to phase `id` in the open frame. Callable from many threads at once.
    pub fn add(&self, id: PhaseId, d: Duration) {
        self.current[id.index()].fetch_add(to_nanos(d), Ordering::Relaxed);
    }

    /// Runs `f` and adds its elapsed time to phase `id`; returns `f`'s result.
    pub fn time<R>(&self, id: PhaseId, f: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        let result = f();
        self.add(id, start.elapsed());
        result
    }

    /// What phase `id` has accumulated so far in the open frame.
    pub fn current(&self, id: PhaseId) -> Duration {
        Duration::from_nanos(self.current[id.index()].load(Ordering::Relaxed))
    }

    /// Closes the open frame, whose elapsed real time was `wall`: adds its phase values to the
    /// totals, records them and `wall` in the history, and starts a new frame at zero.
    pub fn end_frame(&mut self, wall: Duration) {
        let slot = self.next_slot;
        for (phase, value) in self.current.iter_mut().enumerate() {
            let nanos = std::mem::take(value.get_mut());
            self.totals[phase] = self.totals[phase].saturating_add(nanos);
            self.ring[phase * HISTORY + slot] = nanos;
        }
        let wall = to_nanos(wall);
        self.total_wall = self.total_wall.saturating_add(wall);
        self.ring[self.names.len() * HISTORY + slot] = wall;
        self.frames += 1;
        self.next_slot = (slot + 1) % HISTORY;
        self.filled = (self.filled + 1).min(HISTORY);
    }

    /// How many frames were closed since creation or the last [`reset`](Self::reset).
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Phase `id`'s work time summed over all closed frames.
    pub fn total(&self, id: PhaseId) -> Duration {
        Duration::from_nanos(self.totals[id.index()])
    }

    /// The wall time summed over all closed frames.
    pub fn total_wall(&self) -> Duration {
        Duration::from_nanos(self.total_wall)
    }

    fn mean_of(&self, total: u64) -> Duration {
        match self.frames {
            0 => Duration::ZERO,
            frames => Duration::from_nanos(total / frames),
        }
    }

    /// Phase `id`'s mean work time per closed frame (zero before the first frame).
    pub fn mean(&self, id: PhaseId) -> Duration {
        self.mean_of(self.totals[id.index()])
    }

    /// The mean wall time per closed frame (zero before the first frame).
    pub fn mean_wall(&self) -> Duration {
        self.mean_of(self.total_wall)
    }

    fn last_of(&self, row: usize) -> Duration {
        match self.filled {
            0 => Duration::ZERO,
            _ => {
                let slot = (self.next_slot + HISTORY - 1) % HISTORY;
                Duration::from_nanos(self.ring[row * HISTORY + slot])
            }
        }
    }

    /// Phase `id`'s work time in the last closed frame (zero before the first frame).
    pub fn last(&self, id: PhaseId) -> Duration {
        self.last_of(id.index())
    }

    /// The wall time of the last closed frame (zero before the first frame).
    pub fn last_wall(&self) -> Duration {
        self.last_of(self.names.len())
    }

    fn history_of(&self, row: usize) -> impl ExactSizeIterator<Item = Duration> + DoubleEndedIterator + '_ {
        let values = &self.ring[row * HISTORY..(row + 1) * HISTORY];
        let oldest = (self.next_slot + HISTORY - self.filled) % HISTORY;
        (0..self.filled).map(move |k| Duration::from_nanos(values[(oldest + k) % HISTORY]))
    }

    /// Phase `id`'s work time in each of the last (up to [`HISTORY`]) closed frames, oldest
    /// first.
    pub fn history(&self, id: PhaseId) -> impl ExactSizeIterator<Item = Duration> + DoubleEndedIterator + '_ {
        self.history_of(id.index())
    }

    /// The wall time of each of the last (up to [`HISTORY`]) closed frames, oldest first.
    pub fn wall_history(&self) -> impl ExactSizeIterator<Item = Duration> + DoubleEndedIterator + '_ {
        self.history_of(self.names.len())
    }

    /// Forgets everything: the open frame, the totals and the history. The phases stay.
    pub fn reset(&mut self) {
        for value in self.current.iter_mut() {
            *value.get_mut() = 0;
        }
        self.totals.fill(0);
        self.total_wall = 0;
        self.frames = 0;
        self.ring.fill(0);
        self.next_slot = 0;
        self.filled = 0;
    }
}

/// A table of the phases' mean work time per frame and its share of the mean wall time, then the
/// mean wall time itself.
impl fmt::Display for FrameTimings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .names
            .iter()
            .map(|name| name.chars().count())
            .max()
            .unwrap_or(0)
            .max("phase".len())
            .max("wall (frame)".len());
        let wall = self.mean_wall();
        let row = |f: &mut fmt::Formatter<'_>, name: &str, mean: Duration| {
            let ms = mean.as_secs_f64() * 1e3;
            if wall.is_zero() {
                writeln!(f, "{name:<width$}  {ms:>10.3} ms  {:>7}", "-")
            } else {
                let share = 100.0 * mean.as_secs_f64() / wall.as_secs_f64();
                writeln!(f, "{name:<width$}  {ms:>10.3} ms  {share:>6.1}%")
            }
        };
        writeln!(f, "{:<width$}  {:>13}  {:>7}", "phase", "mean/frame", "of wall")?;
        for (index, name) in self.names.iter().enumerate() {
            row(f, name, self.mean_of(self.totals[index]))?;
        }
        row(f, "wall (frame)", wall)?;
        write!(
            f,
            "{} frame(s); phase times are work time summed over threads, so shares can add up to \
             more than 100%",
            self.frames
        )
    }
}
