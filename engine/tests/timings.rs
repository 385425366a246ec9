//! Tests of FrameTimings.

use std::thread;
use std::time::Duration;

use sylva_engine::{FrameTimings, PhaseId, HISTORY};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn phases_are_named_and_identified() {
    let timings = FrameTimings::new(&["physics", "growth", "render"]);
    assert_eq!(
        timings.phase_names().collect::<Vec<_>>(),
        ["physics", "growth", "render"]
    );
    let growth = timings.phase_id("growth").unwrap();
    assert_eq!(growth.index(), 1);
    assert_eq!(timings.phase_name(growth), "growth");
    assert_eq!(timings.phase_id("missing"), None);
    assert_eq!(timings.phase_count(), 3);
    assert_eq!(
        timings.phase_ids().collect::<Vec<PhaseId>>(),
        ["physics", "growth", "render"].map(|n| timings.phase_id(n).unwrap())
    );
}

#[test]
#[should_panic(expected = "given twice")]
fn duplicate_phase_names_panic() {
    let _ = FrameTimings::new(&["a", "b", "a"]);
}

#[test]
fn add_end_frame_totals_and_means() {
    let mut t = FrameTimings::new(&["a", "b"]);
    let (a, b) = (t.phase_id("a").unwrap(), t.phase_id("b").unwrap());
    assert_eq!(t.mean(a), Duration::ZERO);
    assert_eq!(t.last_wall(), Duration::ZERO);
    assert_eq!(t.wall_history().len(), 0);

    t.add(a, ms(2));
    t.add(a, ms(3));
    assert_eq!(t.current(a), ms(5));
    let value = t.time(b, || {
        thread::sleep(ms(1));
        7
    });
    assert_eq!(value, 7);
    assert!(t.current(b) >= ms(1));
    t.end_frame(ms(10));
    assert_eq!(t.current(a), Duration::ZERO);
    assert_eq!(t.current(b), Duration::ZERO);
    assert_eq!(t.last(a), ms(5));
    assert_eq!(t.last_wall(), ms(10));

    t.add(b, ms(4));
    t.end_frame(ms(20));
    assert_eq!(t.frames(), 2);
    assert_eq!(t.total(a), ms(5));
    assert_eq!(t.mean(a), Duration::from_micros(2500));
    assert_eq!(t.last(a), Duration::ZERO);
    assert_eq!(t.last(b), ms(4));
    assert_eq!(t.total_wall(), ms(30));
    assert_eq!(t.mean_wall(), ms(15));
    assert_eq!(t.history(a).collect::<Vec<_>>(), [ms(5), Duration::ZERO]);
    assert_eq!(t.wall_history().collect::<Vec<_>>(), [ms(10), ms(20)]);

    t.reset();
    assert_eq!(t.frames(), 0);
    assert_eq!(t.total(a), Duration::ZERO);
    assert_eq!(t.history(a).len(), 0);
    assert_eq!(t.phase_count(), 2);
}

#[test]
fn add_from_many_threads() {
    let mut t = FrameTimings::new(&["work"]);
    let work = t.phase_id("work").unwrap();
    thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..1000 {
                    t.add(work, Duration::from_nanos(3));
                }
            });
        }
    });
    t.end_frame(Duration::from_nanos(1));
    // Work time summed over threads may exceed the wall time.
    assert_eq!(t.last(work), Duration::from_nanos(24_000));
}

#[test]
fn history_ring_wraps_around() {
    let mut t = FrameTimings::new(&["p"]);
    let p = t.phase_id("p").unwrap();
    let frames = HISTORY as u64 + 88;
    for i in 0..frames {
        t.add(p, Duration::from_micros(i));
        t.end_frame(ms(i));
    }
    assert_eq!(t.frames(), frames);
    let history: Vec<Duration> = t.history(p).collect();
    assert_eq!(history.len(), HISTORY);
    assert_eq!(history[0], Duration::from_micros(88));
    assert_eq!(history[HISTORY - 1], Duration::from_micros(frames - 1));
    assert!(history.windows(2).all(|w| w[1] - w[0] == Duration::from_micros(1)));
    let wall: Vec<Duration> = t.wall_history().collect();
    assert_eq!(wall.first(), Some(&ms(88)));
    assert_eq!(wall.last(), Some(&ms(frames - 1)));
    assert_eq!(t.history(p).next_back(), Some(Duration::from_micros(frames - 1)));
    assert_eq!(t.total(p), Duration::from_micros((0..frames).sum()));
    assert_eq!(t.last(p), Duration::from_micros(frames - 1));
}

#[test]
fn display_prints_a_table() {
    let mut t = FrameTimings::new(&["physics", "render"]);
    let physics = t.phase_id("physics").unwrap();
    let render = t.phase_id("render").unwrap();
    for _ in 0..4 {
        t.add(physics, ms(6));
        t.add(render, ms(2));
        t.end_frame(ms(8));
    }
    let text = t.to_string();
    println!("{text}");
    let physics_line = text.lines().find(|l| l.starts_with("physics")).unwrap();
    assert!(physics_line.contains("6.000 ms"), "{text}");
    assert!(physics_line.contains("75.0%"), "{text}");
    let render_line = text.lines().find(|l| l.starts_with("render")).unwrap();
    assert!(render_line.contains("25.0%"), "{text}");
    assert!(text.contains("wall"), "{text}");
    assert!(text.contains("4 frame(s)"), "{text}");
    // Empty timings print too.
    assert!(FrameTimings::new(&[]).to_string().contains("0 frame(s)"));
}
