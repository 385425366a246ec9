//! Tests of the job graph.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{scaled, with_timeout};
use sylva_engine::{FrameTimings, GraphError, JobGraph, JobGraphBuilder, JobSystem};

/// Per-run state: a global sequence counter and the sequence number each job drew.
struct Record {
    sequence: AtomicUsize,
    at: Vec<AtomicUsize>,
    runs: Vec<AtomicUsize>,
}

impl Record {
    fn new(jobs: usize) -> Self {
        Record {
            sequence: AtomicUsize::new(0),
            at: (0..jobs).map(|_| AtomicUsize::new(usize::MAX)).collect(),
            runs: (0..jobs).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    fn mark(&self, job: usize) {
        let n = self.sequence.fetch_add(1, Ordering::SeqCst);
        self.at[job].store(n, Ordering::SeqCst);
        self.runs[job].fetch_add(1, Ordering::SeqCst);
    }

    fn reset(&self) {
        self.sequence.store(0, Ordering::SeqCst);
        for slot in &self.at {
            slot.store(usize::MAX, Ordering::SeqCst);
        }
    }
}

/// A pseudo-random DAG of `count` jobs named "job{i}", each running after up to 4 others.
/// Returns the graph and its edges as (dependency, job). Jobs are added in an order unrelated
/// to the dependency order, so dependencies often name jobs added later.
fn random_graph(count: usize, seed: u64) -> (JobGraph<Record>, Vec<(usize, usize)>) {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    // Job i may depend only on jobs with a higher "rank", which makes the graph acyclic.
    let mut rank: Vec<usize> = (0..count).collect();
    for i in (1..count).rev() {
        rank.swap(i, next() % (i + 1));
    }
    let mut edges = Vec::new();
    let mut builder = JobGraphBuilder::<Record>::new();
    for job in 0..count {
        let mut after = Vec::new();
        for _ in 0..next() % 5 {
            let dep = next() % count;
            if rank[dep] > rank[job] && !after.contains(&dep) {
                after.push(dep);
                edges.push((dep, job));
            }
        }
        let names: Vec<String> = after.iter().map(|d| format!("job{d}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        builder.add(&format!("job{job}"), &names, move |record: &Record, _| {
            thread::yield_now();
            record.mark(job)
        });
    }
    (builder.build().expect("acyclic graph"), edges)
}

#[test]
fn dependency_order_respected_with_four_threads() {
    with_timeout(120, || {
        let jobs = JobSystem::new(4).unwrap();
        for seed in 1..=scaled(5) as u64 {
            let (graph, edges) = random_graph(60, seed);
            assert!(!edges.is_empty());
            let record = Record::new(graph.len());
            let runs = scaled(200);
            for _ in 0..runs {
                record.reset();
                graph.run(&jobs, &record, None);
                for &(dep, job) in &edges {
                    let (before, after) = (
                        record.at[dep].load(Ordering::SeqCst),
                        record.at[job].load(Ordering::SeqCst),
                    );
                    assert!(
                        before < after,
                        "job{job} ran (#{after}) before its dependency job{dep} (#{before})"
                    );
                }
            }
            assert!(record.runs.iter().all(|r| r.load(Ordering::SeqCst) == runs));
        }
    });
}

#[test]
fn one_thread_runs_in_topological_order_with_insertion_ties() {
    let mut builder = JobGraphBuilder::<Record>::new();
    // Insertion order: c, a, d, b; "d" runs after "a" and "b" (added later), "a" after "c".
    builder
        .add("c", &[], |r: &Record, _| r.mark(0))
        .add("a", &["c"], |r: &Record, _| r.mark(1))
        .add("d", &["a", "b"], |r: &Record, _| r.mark(2))
        .add("b", &[], |r: &Record, _| r.mark(3));
    let graph = builder.build().unwrap();
    assert_eq!(graph.topological_order(), &[0, 1, 3, 2]);
    assert_eq!(graph.names().collect::<Vec<_>>(), ["c", "a", "d", "b"]);
    assert_eq!(graph.index_of("d"), Some(2));
    assert_eq!(graph.dependents(0), &[1]);
    assert_eq!(graph.dependency_count(2), 2);

    let jobs = JobSystem::new(1).unwrap();
    let record = Record::new(4);
    graph.run(&jobs, &record, None);
    let at: Vec<usize> = record.at.iter().map(|a| a.load(Ordering::SeqCst)).collect();
    assert_eq!(at, [0, 1, 3, 2]);
}

fn build_err(jobs: &[(&str, &[&str])]) -> GraphError {
    let mut builder = JobGraphBuilder::<()>::new();
    for &(name, after) in jobs {
        builder.add(name, after, |_, _| {});
    }
    builder.build().expect_err("must be refused")
}

#[test]
fn cycles_are_refused_with_their_jobs_in_order() {
    let err = build_err(&[("x", &[]), ("a", &["c", "x"]), ("b", &["a"]), ("c", &["b"])]);
    assert_eq!(err, GraphError::Cycle(vec!["a".into(), "c".into(), "b".into()]));
    let message = err.to_string();
    assert!(
        message.contains(r#""a" runs after "c", which runs after "b", which runs after "a""#),
        "{message}"
    );

    let err = build_err(&[("p", &["q"]), ("q", &["p"]), ("r", &[])]);
    assert_eq!(err, GraphError::Cycle(vec!["p".into(), "q".into()]));

    // A job that only leads into a cycle is not part of it.
    let err = build_err(&[("lead", &["m"]), ("m", &["n"]), ("n", &["m"])]);
    assert_eq!(err, GraphError::Cycle(vec!["m".into(), "n".into()]));

    let err = build_err(&[("solo", &["solo"])]);
    assert_eq!(err, GraphError::SelfDependency("solo".into()));
    assert!(err.to_string().contains("\"solo\""), "{err}");
}

#[test]
fn bad_names_are_refused() {
    let err = build_err(&[("a", &[]), ("b", &["a", "ghost"])]);
    assert_eq!(
        err,
        GraphError::UnknownDependency {
            job: "b".into(),
            dependency: "ghost".into()
        }
    );
    let message = err.to_string();
    assert!(message.contains("\"b\"") && message.contains("\"ghost\""), "{message}");

    let err = build_err(&[("a", &[]), ("b", &[]), ("a", &["b"])]);
    assert_eq!(err, GraphError::DuplicateName("a".into()));
    assert!(err.to_string().contains("\"a\""), "{err}");

    let err = build_err(&[("a", &[]), ("", &["a"])]);
    assert_eq!(err, GraphError::EmptyName { index: 1 });
    assert!(err.to_string().contains("#1"), "{err}");

    let err = build_err(&[("a", &[""])]);
    assert!(matches!(err, GraphError::UnknownDependency { .. }), "{err:?}");
}

#[test]
fn empty_graph_and_repeated_dependencies() {
    let graph = JobGraphBuilder::<()>::new().build().unwrap();
    assert!(graph.is_empty());
    graph.run(&JobSystem::new(2).unwrap(), &(), None);

    let count = Arc::new(AtomicUsize::new(0));
    let mut builder = JobGraphBuilder::<()>::new();
    let (c1, c2) = (Arc::clone(&count), Arc::clone(&count));
    builder.add("a", &[], move |_, _| {
        c1.fetch_add(1, Ordering::SeqCst);
    });
    builder.add("b", &["a", "a"], move |_, _| {
        c2.fetch_add(10, Ordering::SeqCst);
    });
    let graph = builder.build().unwrap();
    assert_eq!(graph.dependency_count(1), 1);
    for threads in [1, 3] {
        count.store(0, Ordering::SeqCst);
        graph.run(&JobSystem::new(threads).unwrap(), &(), None);
        assert_eq!(count.load(Ordering::SeqCst), 11);
    }
}

#[test]
fn graph_runs_a_thousand_times() {
    with_timeout(120, || {
        let tracker = Arc::new(());
        let (graph, _) = random_graph(30, 99);
        let mut builder = JobGraphBuilder::<Record>::new();
        // A chain plus a wide fan-out, with closures holding an Arc to detect leaks.
        for i in 0..20 {
            let held = Arc::clone(&tracker);
            let after = if i == 0 {
                vec![]
            } else {
                vec![format!("n{}", (i - 1) / 3)]
            };
            let after: Vec<&str> = after.iter().map(String::as_str).collect();
            builder.add(&format!("n{i}"), &after, move |r: &Record, _| {
                let _ = &held;
                r.mark(i)
            });
        }
        let fan = builder.build().unwrap();
        assert_eq!(Arc::strong_count(&tracker), 21);

        for threads in [1, 2, 4] {
            let jobs = JobSystem::new(threads).unwrap();
            let random_record = Record::new(graph.len());
            let fan_record = Record::new(fan.len());
            let runs = scaled(1000);
            for _ in 0..runs {
                graph.run(&jobs, &random_record, None);
                fan.run(&jobs, &fan_record, None);
            }
            assert!(random_record.runs.iter().all(|r| r.load(Ordering::SeqCst) == runs));
            assert!(fan_record.runs.iter().all(|r| r.load(Ordering::SeqCst) == runs));
        }
        drop(fan);
        assert_eq!(Arc::strong_count(&tracker), 1, "the graph leaked its closures");
    });
}

#[test]
fn jobs_fan_out_inside_their_body() {
    let mut builder = JobGraphBuilder::<Vec<AtomicUsize>>::new();
    builder.add("fan", &[], |slots: &Vec<AtomicUsize>, jobs| {
        jobs.scope(|s| {
            for slot in slots.iter() {
                s.spawn(move |_| {
                    slot.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
    });
    builder.add("check", &["fan"], |slots: &Vec<AtomicUsize>, _| {
        assert!(slots.iter().all(|s| s.load(Ordering::SeqCst) % 2 == 1));
        for slot in slots {
            slot.fetch_add(1, Ordering::SeqCst);
        }
    });
    let graph = builder.build().unwrap();
    for threads in [1, 2, 4, 8] {
        let jobs = JobSystem::new(threads).unwrap();
        let slots: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
        let runs = scaled(50);
        for _ in 0..runs {
            graph.run(&jobs, &slots, None);
        }
        assert!(slots.iter().all(|s| s.load(Ordering::SeqCst) == 2 * runs));
    }
}

#[test]
fn unsized_context() {
    let mut builder = JobGraphBuilder::<[AtomicUsize]>::new();
    builder.add("first", &[], |ctx: &[AtomicUsize], _| {
        ctx[0].fetch_add(1, Ordering::SeqCst);
    });
    let graph = builder.build().unwrap();
    let ctx = [AtomicUsize::new(0)];
    graph.run(&JobSystem::new(2).unwrap(), &ctx[..], None);
    assert_eq!(ctx[0].load(Ordering::SeqCst), 1);
}

#[test]
fn panicking_job_skips_its_dependents_and_propagates() {
    let ran = Arc::new(AtomicUsize::new(0));
    let mut builder = JobGraphBuilder::<()>::new();
    let (r1, r2) = (Arc::clone(&ran), Arc::clone(&ran));
    builder.add("boom", &[], |_, _| panic!("graph job failed"));
    builder.add("after", &["boom"], move |_, _| {
        r1.fetch_add(1, Ordering::SeqCst);
    });
    builder.add("independent", &[], move |_, _| {
        thread::sleep(Duration::from_millis(2));
        r2.fetch_add(100, Ordering::SeqCst);
    });
    let graph = builder.build().unwrap();
    let jobs = JobSystem::new(4).unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| graph.run(&jobs, &(), None)));
    assert!(result.is_err());
    assert_eq!(ran.load(Ordering::SeqCst), 100);
    // Still usable.
    let mut builder = JobGraphBuilder::<()>::new();
    builder.add("ok", &[], |_, _| {});
    builder.build().unwrap().run(&jobs, &(), None);
}

#[test]
fn timings_are_recorded_per_job_name() {
    let mut builder = JobGraphBuilder::<()>::new();
    builder
        .add("physics", &[], |_, _| thread::sleep(Duration::from_millis(3)))
        .add("growth", &["physics"], |_, _| thread::sleep(Duration::from_millis(1)))
        .add("untimed", &[], |_, _| {});
    let graph = builder.build().unwrap();
    for threads in [1, 4] {
        let jobs = JobSystem::new(threads).unwrap();
        let mut timings = FrameTimings::new(&["growth", "render", "physics"]);
        let (physics, growth, render) = (
            timings.phase_id("physics").unwrap(),
            timings.phase_id("growth").unwrap(),
            timings.phase_id("render").unwrap(),
        );
        for _ in 0..3 {
            graph.run(&jobs, &(), Some(&timings));
            timings.end_frame(Duration::from_millis(5));
            assert!(timings.last(physics) >= Duration::from_millis(3));
            assert!(timings.last(growth) >= Duration::from_millis(1));
            assert_eq!(timings.last(render), Duration::ZERO);
        }
        assert_eq!(timings.frames(), 3);
        assert!(timings.total(physics) >= Duration::from_millis(9));
    }
}
