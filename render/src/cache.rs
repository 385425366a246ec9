//! The double-buffered render command cache (Weber 2008, "Threading"): the simulation fills
//! the write side while the renderer draws the read side; a synchronisation point swaps them.
//!
//! The simulation's [`CacheWriter`] owns the write side outright, so nothing can read it while
//! it is being filled. [`CacheWriter::publish`] is the synchronisation point: it waits only if
//! the renderer still holds the read side (a [`ReadGuard`] is alive), then swaps the two, and
//! both threads go on. The renderer's [`CacheReader::acquire`] takes the read side out of the
//! cache for as long as its guard lives; while it is out, the writer cannot swap, so the
//! renderer never sees a frame change under it, and never a half-written one.
//!
//! A renderer faster than the simulation draws the same complete frame again (its
//! [`generation`](ReadGuard::generation) tells it nothing new arrived); a simulation faster
//! than the renderer replaces a frame the renderer never drew, after waiting out any draw in
//! progress.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

struct State<T> {
    /// The read side; `None` while the renderer holds it.
    read: Option<Box<T>>,
    /// How many frames have been published (the read side's frame number).
    generation: u64,
    /// The writer is gone: no new frame will come.
    writer_closed: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    changed: Condvar,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic while the lock is held leaves only plain data behind (no invariant spans the
        // lock), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Creates a cache whose two sides start as `first` (read) and `second` (write).
pub fn command_cache<T>(first: T, second: T) -> (CacheWriter<T>, CacheReader<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            read: Some(Box::new(first)),
            generation: 0,
            writer_closed: false,
        }),
        changed: Condvar::new(),
    });
    (
        CacheWriter {
            shared: shared.clone(),
            write: Some(Box::new(second)),
            waited: Duration::ZERO,
        },
        CacheReader { shared },
    )
}

/// The simulation's end: owns the write side.
pub struct CacheWriter<T> {
    shared: Arc<Shared<T>>,
    /// Always `Some` outside `publish`.
    write: Option<Box<T>>,
    waited: Duration,
}

impl<T> CacheWriter<T> {
    /// The write side, to fill.
    pub fn frame(&mut self) -> &mut T {
        self.write.as_mut().expect("the write side is present outside publish")
    }

    /// Marks the write side complete and swaps it with the read side, first waiting for the
    /// renderer to put the read side back if it holds it. Afterwards [`frame`](Self::frame) is
    /// the previous read side (holding an older frame, to be overwritten). Returns the new
    /// frame's generation.
    pub fn publish(&mut self) -> u64 {
        let start = Instant::now();
        let mut state = self.shared.lock();
        while state.read.is_none() {
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        self.waited += start.elapsed();
        let old_read = state.read.take();
        state.read = self.write.take();
        self.write = old_read;
        state.generation += 1;
        let generation = state.generation;
        drop(state);
        self.shared.changed.notify_all();
        generation
    }

    /// Time spent waiting for the renderer in [`publish`](Self::publish) since the last call.
    pub fn take_wait_time(&mut self) -> Duration {
        std::mem::take(&mut self.waited)
    }
}

impl<T> Drop for CacheWriter<T> {
    fn drop(&mut self) {
        self.shared.lock().writer_closed = true;
        self.shared.changed.notify_all();
    }
}

/// The renderer's end.
pub struct CacheReader<T> {
    shared: Arc<Shared<T>>,
}

/// What [`CacheReader::acquire_newer`] found.
pub enum Acquired<'a, T> {
    /// A frame newer than the one asked about.
    Frame(ReadGuard<'a, T>),
    /// Nothing newer within the timeout.
    TimedOut,
    /// The writer is gone and nothing newer will come.
    Closed,
}

impl<T> CacheReader<T> {
    /// Takes the read side (the last published frame) until the guard is dropped.
    pub fn acquire(&self) -> ReadGuard<'_, T> {
        let mut state = self.shared.lock();
        // The read side is only ever out with a guard of this reader, and `&self` guards are
        // not handed out twice at once by a single renderer; still, wait rather than assume.
        while state.read.is_none() {
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        let frame = state.read.take();
        ReadGuard {
            reader: self,
            frame,
            generation: state.generation,
        }
    }

    /// Takes the read side once its generation exceeds `seen`, waiting at most `timeout`.
    pub fn acquire_newer(&self, seen: u64, timeout: Duration) -> Acquired<'_, T> {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.lock();
        loop {
            if state.generation > seen && state.read.is_some() {
                let frame = state.read.take();
                return Acquired::Frame(ReadGuard {
                    reader: self,
                    frame,
                    generation: state.generation,
                });
            }
            if state.writer_closed && state.generation <= seen {
                return Acquired::Closed;
            }
            let now = Instant::now();
            if now >= deadline {
                return Acquired::TimedOut;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The generation of the last published frame.
    pub fn generation(&self) -> u64 {
        self.shared.lock().generation
    }
}

/// The read side, held by the renderer; returned to the cache when dropped.
pub struct ReadGuard<'a, T> {
    reader: &'a CacheReader<T>,
    frame: Option<Box<T>>,
    generation: u64,
}

impl<T> ReadGuard<'_, T> {
    /// Which published frame this is (1 for the first; 0 for the initial read side).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.frame.as_ref().expect("the guard holds its frame until dropped")
    }
}

impl<T> DerefMut for ReadGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.frame.as_mut().expect("the guard holds its frame until dropped")
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    fn drop(&mut self) {
        let mut state = self.reader.shared.lock();
        state.read = self.frame.take();
        drop(state);
        self.reader.shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    /// A frame whose every element must hold the frame's number; a torn frame would mix two.
    struct Frame {
        number: u64,
        values: Vec<u64>,
    }

    fn frame() -> Frame {
        Frame {
            number: 0,
            values: vec![0; 4096],
        }
    }

    /// Fills the frame element by element, yielding in between so the other thread runs while
    /// the frame is half written.
    fn fill(f: &mut Frame, number: u64, slow: bool) {
        f.number = number;
        for (i, v) in f.values.iter_mut().enumerate() {
            *v = number;
            if i % 512 == 0 {
                if slow {
                    thread::sleep(Duration::from_micros(200));
                } else {
                    thread::yield_now();
                }
            }
        }
    }

    /// Reads the frame slowly or quickly and checks it is whole and not older than before.
    fn check(f: &ReadGuard<'_, Frame>, last: &mut u64, slow: bool) {
        assert_eq!(f.number, f.generation(), "frame content and generation disagree");
        assert!(f.number >= *last, "frame went back from {} to {}", *last, f.number);
        *last = f.number;
        for (i, &v) in f.values.iter().enumerate() {
            assert_eq!(
                v, f.number,
                "element {i} of frame {} holds {v}: a half-written frame",
                f.number
            );
            if i % 512 == 0 {
                if slow {
                    thread::sleep(Duration::from_micros(200));
                } else {
                    thread::yield_now();
                }
            }
        }
    }

    fn run(frames: u64, slow_writer: bool, slow_reader: bool) -> (u64, u64) {
        let (mut writer, reader) = command_cache(frame(), frame());
        let producer = thread::spawn(move || {
            for n in 1..=frames {
                fill(writer.frame(), n, slow_writer);
                assert_eq!(writer.publish(), n);
            }
        });
        let mut last = 0;
        let mut draws = 0;
        let mut distinct = 0;
        loop {
            match reader.acquire_newer(last, Duration::from_secs(10)) {
                Acquired::Frame(f) => {
                    distinct += 1;
                    check(&f, &mut last, slow_reader);
                    // Draw it again, as a fast renderer does when nothing new arrived.
                    drop(f);
                    let again = reader.acquire();
                    check(&again, &mut last, false);
                    drop(again);
                    draws += 2;
                    if slow_reader {
                        // Work that holds no frame (presenting, say): the simulation publishes
                        // meanwhile, replacing frames the renderer never sees.
                        thread::sleep(Duration::from_millis(1));
                    }
                }
                Acquired::Closed => break,
                Acquired::TimedOut => panic!("no frame within 10 s: the cache is stuck"),
            }
        }
        producer.join().unwrap();
        assert_eq!(last, frames, "the renderer must end on the last frame");
        (distinct, draws)
    }

    #[test]
    fn slow_renderer_fast_simulation_never_sees_a_torn_frame() {
        let (distinct, _) = run(200, false, true);
        // The simulation outruns the renderer: frames are replaced before they are drawn.
        assert!(
            distinct < 200,
            "expected skipped frames with a slow renderer, drew {distinct} of 200"
        );
    }

    #[test]
    fn fast_renderer_slow_simulation_never_sees_a_torn_frame() {
        let (distinct, draws) = run(60, true, false);
        // A fast renderer sees (nearly) every frame the slow simulation publishes: a frame takes
        // over 1.6 ms to fill; only a renderer thread starved by the scheduler for that long
        // misses one.
        assert!(distinct >= 45, "drew only {distinct} of 60 frames");
        assert!(draws >= 2 * distinct);
    }

    #[test]
    fn publish_waits_while_the_renderer_holds_the_read_side() {
        let (mut writer, reader) = command_cache(1u32, 2u32);
        let held = reader.acquire();
        assert_eq!(*held, 1);
        let t = thread::spawn(move || {
            *writer.frame() = 3;
            let g = writer.publish();
            (g, writer.take_wait_time())
        });
        thread::sleep(Duration::from_millis(100));
        assert_eq!(
            reader.generation(),
            0,
            "publish swapped while the renderer held the read side"
        );
        drop(held);
        let (generation, waited) = t.join().unwrap();
        assert_eq!(generation, 1);
        assert!(waited >= Duration::from_millis(50), "publish waited only {waited:?}");
        let f = reader.acquire();
        assert_eq!((*f, f.generation()), (3, 1));
    }

    #[test]
    fn the_write_side_comes_back_after_a_swap() {
        let (mut writer, reader) = command_cache(String::from("a"), String::from("b"));
        writer.frame().push('!');
        writer.publish();
        assert_eq!(*writer.frame(), "a", "the writer reuses the old read side");
        assert_eq!(*reader.acquire(), "b!");
        drop(writer);
        assert!(matches!(
            reader.acquire_newer(1, Duration::from_secs(1)),
            Acquired::Closed
        ));
    }
}
