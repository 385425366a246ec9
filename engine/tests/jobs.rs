//! Tests of the work-stealing job system.

mod common;

use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{scaled, with_timeout};
use sylva_engine::{JobSystem, JobSystemError, Scope, MAX_THREADS};

const THREAD_COUNTS: [usize; 4] = [1, 2, 4, 8];

fn pool(threads: usize) -> JobSystem {
    JobSystem::new(threads).expect("job system")
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic>".to_owned()
    }
}

#[test]
fn job_system_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<JobSystem>();
    assert_send_sync::<Scope<'static, 'static>>();
}

#[test]
fn thread_count_out_of_range_is_refused() {
    for bad in [0, MAX_THREADS + 1, 100_000] {
        let err = JobSystem::new(bad).expect_err("must be refused");
        assert!(
            matches!(err, JobSystemError::ThreadCount { requested } if requested == bad),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(message.contains(&bad.to_string()), "{message}");
        assert!(message.contains("1..=512"), "{message}");
        assert!(std::error::Error::source(&err).is_none());
    }
    assert_eq!(pool(1).threads(), 1);
    assert_eq!(pool(3).threads(), 3);
}

#[test]
fn spawn_error_reports_io_error() {
    let err = JobSystemError::Spawn(std::io::Error::other("no threads left"));
    let message = err.to_string();
    assert!(message.contains("no threads left"), "{message}");
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn scope_runs_every_job_exactly_once() {
    with_timeout(60, || {
        for threads in THREAD_COUNTS {
            let jobs = pool(threads);
            for _round in 0..scaled(20) {
                let slots: Vec<AtomicUsize> = (0..scaled(500)).map(|_| AtomicUsize::new(0)).collect();
                jobs.scope(|s| {
                    for slot in &slots {
                        s.spawn(move |_| {
                            slot.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
                assert!(
                    slots.iter().all(|slot| slot.load(Ordering::Relaxed) == 1),
                    "{threads} threads: some job ran a number of times other than once"
                );
            }
        }
    });
}

#[test]
fn nested_spawns_run_exactly_once() {
    with_timeout(60, || {
        for threads in THREAD_COUNTS {
            let jobs = pool(threads);
            // 40 parents, each spawning 10 children, each spawning 3 grandchildren.
            let slots: Vec<AtomicUsize> = (0..40 * 10 * 3).map(|_| AtomicUsize::new(0)).collect();
            let parents = AtomicUsize::new(0);
            let children = AtomicUsize::new(0);
            let (slots_ref, parents_ref, children_ref) = (&slots, &parents, &children);
            jobs.scope(|s| {
                for p in 0..40 {
                    s.spawn(move |s| {
                        parents_ref.fetch_add(1, Ordering::Relaxed);
                        for c in 0..10 {
                            s.spawn(move |s| {
                                children_ref.fetch_add(1, Ordering::Relaxed);
                                for g in 0..3 {
                                    s.spawn(move |_| {
                                        slots_ref[(p * 10 + c) * 3 + g].fetch_add(1, Ordering::Relaxed);
                                    });
                                }
                            });
                        }
                    });
                }
            });
            assert_eq!(parents.load(Ordering::Relaxed), 40, "{threads} threads");
            assert_eq!(children.load(Ordering::Relaxed), 400, "{threads} threads");
            assert!(
                slots.iter().all(|slot| slot.load(Ordering::Relaxed) == 1),
                "{threads} threads: a grandchild ran a number of times other than once"
            );
        }
    });
}

#[test]
fn nested_scopes_complete() {
    for threads in THREAD_COUNTS {
        with_timeout(60, move || {
            let jobs = pool(threads);
            let total = AtomicUsize::new(0);
            let total_ref = &total;
            jobs.scope(|s| {
                for _ in 0..16 {
                    s.spawn(move |s| {
                        // A job opens its own scope on the same pool and waits by helping.
                        let inner = s.job_system().scope(|inner| {
                            let local = AtomicUsize::new(0);
                            let local_ref = &local;
                            inner.job_system().scope(|innermost| {
                                for _ in 0..8 {
                                    innermost.spawn(move |_| {
                                        local_ref.fetch_add(1, Ordering::Relaxed);
                                    });
                                }
                            });
                            for _ in 0..4 {
                                inner.spawn(move |_| {
                                    total_ref.fetch_add(1, Ordering::Relaxed);
                                });
                            }
                            local.load(Ordering::Relaxed)
                        });
                        assert_eq!(inner, 8);
                    });
                }
            });
            assert_eq!(total.load(Ordering::Relaxed), 16 * 4, "{threads} threads");
        });
    }
}

/// Recursive parallel sum through nested `join`s: deep nesting of scopes waiting by helping.
fn parallel_sum(jobs: &JobSystem, values: &[u64]) -> u64 {
    if values.len() <= 64 {
        return values.iter().sum();
    }
    let (left, right) = values.split_at(values.len() / 2);
    let (a, b) = jobs.join(|| parallel_sum(jobs, left), || parallel_sum(jobs, right));
    a + b
}

#[test]
fn recursive_join_gives_the_right_sum() {
    with_timeout(60, || {
        let values: Vec<u64> = (0..scaled(100_000) as u64).collect();
        let expected: u64 = values.iter().sum();
        for threads in THREAD_COUNTS {
            let jobs = pool(threads);
            for _ in 0..scaled(5) {
                assert_eq!(parallel_sum(&jobs, &values), expected, "{threads} threads");
            }
        }
    });
}

/// Fills `data` with `f(index)` by splitting it in halves with `split_at_mut`, one job per half.
fn fill_split<'scope>(
    s: &'scope Scope<'scope, '_>,
    data: &'scope mut [u64],
    offset: usize,
    f: &'scope (dyn Fn(usize) -> u64 + Sync),
) {
    if data.len() <= 100 {
        for (i, value) in data.iter_mut().enumerate() {
            *value = f(offset + i);
        }
        return;
    }
    let middle = data.len() / 2;
    let (left, right) = data.split_at_mut(middle);
    s.spawn(move |s| fill_split(s, left, offset, f));
    s.spawn(move |s| fill_split(s, right, offset + middle, f));
}

#[test]
fn jobs_borrow_disjoint_chunks_mutably() {
    with_timeout(60, || {
        for threads in THREAD_COUNTS {
            let jobs = pool(threads);
            let mut data = vec![0u64; 10_007];
            let square = |i: usize| (i as u64) * (i as u64);
            jobs.scope(|s| fill_split(s, &mut data, 0, &square));
            assert!(
                data.iter().enumerate().all(|(i, &v)| v == square(i)),
                "{threads} threads"
            );

            // The same through `chunks_mut` and `for_each_mut`.
            let mut chunks: Vec<&mut [u64]> = data.chunks_mut(1000).collect();
            jobs.for_each_mut(&mut chunks, |index, chunk| {
                for (i, value) in chunk.iter_mut().enumerate() {
                    *value = (index * 1000 + i) as u64 + 1;
                }
            });
            assert!(
                data.iter().enumerate().all(|(i, &v)| v == i as u64 + 1),
                "{threads} threads"
            );
        }
    });
}

#[test]
fn join_and_for_each_mut() {
    with_timeout(60, || {
        for threads in THREAD_COUNTS {
            let jobs = pool(threads);
            let (a, b) = jobs.join(|| 6 * 7, || "b".repeat(3));
            assert_eq!((a, b.as_str()), (42, "bbb"));

            let mut items: Vec<(usize, u32)> = vec![(usize::MAX, 0); 300];
            jobs.for_each_mut(&mut items, |index, item| {
                item.0 = index;
                item.1 += 1;
            });
            assert!(items
                .iter()
                .enumerate()
                .all(|(i, &(index, runs))| index == i && runs == 1));
            jobs.for_each_mut(&mut [] as &mut [u8], |_, _| unreachable!());
        }
    });
}

#[test]
fn panic_propagates_after_all_jobs_finished_and_pool_stays_usable() {
    for threads in THREAD_COUNTS {
        with_timeout(60, move || {
            let jobs = pool(threads);
            let finished = AtomicUsize::new(0);
            let finished_ref = &finished;
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                jobs.scope(|s| {
                    for i in 0..40 {
                        s.spawn(move |_| {
                            if i == 7 {
                                panic!("job 7 failed");
                            }
                            thread::sleep(Duration::from_micros(200));
                            finished_ref.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                })
            }));
            let payload = result.expect_err("the panic must reach the scope's caller");
            assert_eq!(panic_message(&*payload), "job 7 failed");
            assert_eq!(
                finished.load(Ordering::SeqCst),
                39,
                "{threads} threads: the scope returned before its other jobs finished"
            );

            // Only the first of several panics is resumed, and the pool still works.
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                jobs.scope(|s| {
                    for _ in 0..10 {
                        s.spawn(|_| panic!("many"));
                    }
                })
            }));
            assert_eq!(panic_message(&*result.expect_err("panics")), "many");

            let count = AtomicUsize::new(0);
            jobs.scope(|s| {
                for _ in 0..100 {
                    s.spawn(|_| {
                        count.fetch_add(1, Ordering::Relaxed);
                    });
                }
            });
            assert_eq!(count.load(Ordering::Relaxed), 100);
        });
    }
}

#[test]
fn panic_in_scope_body_waits_for_spawned_jobs() {
    with_timeout(60, || {
        for threads in THREAD_COUNTS {
            let jobs = pool(threads);
            let finished = AtomicUsize::new(0);
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                jobs.scope(|s| {
                    for _ in 0..8 {
                        s.spawn(|_| {
                            thread::sleep(Duration::from_millis(1));
                            finished.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                    panic!("body failed");
                })
            }));
            assert_eq!(panic_message(&*result.expect_err("panics")), "body failed");
            assert_eq!(finished.load(Ordering::SeqCst), 8, "{threads} threads");
        }
    });
}

#[test]
fn one_thread_runs_jobs_inline_in_spawn_order() {
    let jobs = pool(1);
    let caller = thread::current().id();
    let order = Mutex::new(Vec::new());
    let order_ref = &order;
    jobs.scope(|s| {
        for i in 0..3 {
            s.spawn(move |s| {
                assert_eq!(thread::current().id(), caller);
                order_ref.lock().unwrap().push(i * 10);
                s.spawn(move |_| order_ref.lock().unwrap().push(i * 10 + 1));
            });
            order_ref.lock().unwrap().push(100 + i);
        }
    });
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 100, 10, 11, 101, 20, 21, 102]);
}

#[test]
fn two_threads_both_run_jobs_and_the_caller_helps() {
    with_timeout(60, || {
        let jobs = pool(2);
        let caller = thread::current().id();
        for round in 0..scaled(20) {
            if round % 4 == 0 {
                // Let the worker fall asleep: the first push must wake it.
                thread::sleep(Duration::from_millis(3));
            }
            let started = AtomicUsize::new(0);
            let runners = Mutex::new(HashSet::new());
            let timed_out = AtomicBool::new(false);
            jobs.scope(|s| {
                for _ in 0..2 {
                    s.spawn(|_| {
                        runners.lock().unwrap().insert(thread::current().id());
                        started.fetch_add(1, Ordering::SeqCst);
                        // Block until both jobs run at once: only possible if both threads run
                        // jobs. The deadline only turns a hang into a failure.
                        let deadline = Instant::now() + Duration::from_secs(10);
                        while started.load(Ordering::SeqCst) < 2 {
                            if Instant::now() > deadline {
                                timed_out.store(true, Ordering::SeqCst);
                                return;
                            }
                            thread::yield_now();
                        }
                    });
                }
            });
            assert!(
                !timed_out.load(Ordering::SeqCst),
                "the two jobs never ran at the same time"
            );
            let runners = runners.into_inner().unwrap();
            assert_eq!(runners.len(), 2);
            assert!(runners.contains(&caller), "the calling thread did not help");
        }
    });
}

/// Spins (yielding) until `done()` or `secs` seconds passed; returns whether `done()` held.
/// The deadline only turns a hang into a test failure.
fn wait_until(secs: u64, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        thread::yield_now();
    }
    true
}

/// Busy-waits about `micros` microseconds.
fn spin_for(micros: u64) {
    let end = Instant::now() + Duration::from_micros(micros);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

#[test]
fn caller_steals_from_a_busy_workers_deque() {
    with_timeout(60, || {
        let jobs = pool(2);
        let caller = thread::current().id();
        for round in 0..scaled(20) {
            if round % 4 == 0 {
                thread::sleep(Duration::from_millis(3));
            }
            let parent_started = AtomicBool::new(false);
            let child_runner = Mutex::new(None);
            let child_ran = AtomicBool::new(false);
            let parent_saw_child = AtomicBool::new(false);
            jobs.scope(|s| {
                s.spawn(|s| {
                    parent_started.store(true, Ordering::SeqCst);
                    // This runs on the worker (the caller is busy below), so the child goes to
                    // the worker's own deque, and only the caller can run it: by stealing.
                    s.spawn(|_| {
                        *child_runner.lock().unwrap() = Some(thread::current().id());
                        child_ran.store(true, Ordering::SeqCst);
                    });
                    let ok = wait_until(10, || child_ran.load(Ordering::SeqCst));
                    parent_saw_child.store(ok, Ordering::SeqCst);
                });
                // Keep the caller out of the pool until the worker has taken the parent.
                assert!(
                    wait_until(10, || parent_started.load(Ordering::SeqCst)),
                    "the worker never picked up the job (not woken?)"
                );
            });
            assert!(
                parent_saw_child.load(Ordering::SeqCst),
                "nobody stole the child job from the busy worker's deque"
            );
            assert_eq!(*child_runner.lock().unwrap(), Some(caller));
        }
    });
}

#[test]
fn pushes_at_every_idle_phase_wake_the_worker() {
    // After each round the worker goes idle: spinning, yielding, then asleep. The next round's
    // push lands at a different point of that transition each time. The caller stays out of the
    // pool until the job has started, so a worker that missed its wake-up fails the round
    // instead of being covered by the helping caller.
    with_timeout(120, || {
        let jobs = pool(2);
        for round in 0..scaled(40_000) as u64 {
            spin_for(round * 7 % 97);
            let started = AtomicBool::new(false);
            jobs.scope(|s| {
                s.spawn(|_| started.store(true, Ordering::SeqCst));
                assert!(
                    wait_until(5, || started.load(Ordering::SeqCst)),
                    "round {round}: no worker ran the job (lost wake-up?)"
                );
            });
        }
    });
}

#[test]
fn scopes_finishing_at_every_idle_phase_wake_their_caller() {
    // The job runs on a worker while the caller waits; its length sweeps across the time the
    // caller spins before sleeping, so the scope completes before, during and after the
    // caller's move to sleep. A missed completion wake-up hangs the caller.
    with_timeout(120, || {
        for threads in [2, 3] {
            let jobs = pool(threads);
            let count = AtomicUsize::new(0);
            let rounds = scaled(5000);
            for round in 0..rounds as u64 {
                let started = AtomicBool::new(false);
                jobs.scope(|s| {
                    s.spawn(|_| {
                        started.store(true, Ordering::SeqCst);
                        spin_for(round * 7 % 97);
                        count.fetch_add(1, Ordering::Relaxed);
                    });
                    // Keep the caller from taking the job itself.
                    assert!(wait_until(5, || started.load(Ordering::SeqCst)));
                });
            }
            assert_eq!(count.load(Ordering::Relaxed), rounds);
        }
    });
}

#[test]
fn sleeping_workers_and_waiters_are_woken() {
    with_timeout(120, || {
        for threads in [2, 3, 4, 8] {
            let jobs = pool(threads);
            let count = AtomicUsize::new(0);
            for round in 0..scaled(200) {
                if round % 20 == 0 {
                    // Long enough for every idle thread to go to sleep.
                    thread::sleep(Duration::from_millis(2));
                }
                jobs.scope(|s| {
                    for j in 0..6 {
                        let count = &count;
                        s.spawn(move |s| {
                            if j == 0 && round % 10 == 0 {
                                // Keeps the scope busy long enough for its caller to sleep.
                                thread::sleep(Duration::from_millis(1));
                            }
                            if j == 1 {
                                // A job spawning from a worker while others may sleep.
                                s.spawn(move |_| {
                                    count.fetch_add(1, Ordering::Relaxed);
                                });
                            }
                            count.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
            }
            assert_eq!(count.load(Ordering::Relaxed), scaled(200) * 7, "{threads} threads");
        }
    });
}

#[test]
fn many_tiny_scopes_do_not_lose_jobs() {
    with_timeout(120, || {
        for threads in [2, 4] {
            let jobs = pool(threads);
            let count = AtomicUsize::new(0);
            for _ in 0..scaled(20_000) {
                jobs.scope(|s| {
                    s.spawn(|_| {
                        count.fetch_add(1, Ordering::Relaxed);
                    });
                });
            }
            assert_eq!(count.load(Ordering::Relaxed), scaled(20_000));
        }
    });
}

#[test]
fn several_pools_used_concurrently() {
    with_timeout(120, || {
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = [1, 2, 4, 3]
            .into_iter()
            .map(|threads| {
                let barrier = Arc::clone(&barrier);
                thread::spawn(move || {
                    let jobs = pool(threads);
                    barrier.wait();
                    let n = scaled(20_000) as u64;
                    let values: Vec<u64> = (0..n).collect();
                    for _ in 0..scaled(20) {
                        assert_eq!(parallel_sum(&jobs, &values), n * (n - 1) / 2);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().expect("pool thread panicked");
        }
    });
}

#[test]
fn worker_of_one_pool_spawns_into_another() {
    with_timeout(60, || {
        let a = pool(3);
        let b = pool(2);
        let count = AtomicUsize::new(0);
        let b_ref = &b;
        let count_ref = &count;
        a.scope(|s| {
            for _ in 0..12 {
                s.spawn(move |s| {
                    // Often a worker of `a`: its jobs for `b` must go to `b`'s injector.
                    b_ref.scope(|sb| {
                        for _ in 0..5 {
                            sb.spawn(move |sb| {
                                // And back: a job of `b` (maybe on `a`'s worker) spawning into `a`.
                                s.job_system().scope(|sa| {
                                    sa.spawn(move |_| {
                                        count_ref.fetch_add(1, Ordering::Relaxed);
                                    })
                                });
                                assert_eq!(sb.job_system().threads(), 2);
                            });
                        }
                    });
                });
            }
        });
        assert_eq!(count.load(Ordering::Relaxed), 60);
    });
}

#[test]
fn drop_joins_cleanly() {
    with_timeout(60, || {
        // Right after creation (workers may still be starting).
        for threads in THREAD_COUNTS {
            drop(pool(threads));
        }
        // While idle and asleep.
        for threads in THREAD_COUNTS {
            let jobs = pool(threads);
            jobs.scope(|s| s.spawn(|_| {}));
            thread::sleep(Duration::from_millis(5));
            drop(jobs);
        }
        // Many pools in a row.
        for _ in 0..scaled(50) {
            let jobs = pool(4);
            let count = AtomicUsize::new(0);
            jobs.scope(|s| {
                for _ in 0..10 {
                    s.spawn(|_| {
                        count.fetch_add(1, Ordering::Relaxed);
                    });
                }
            });
            assert_eq!(count.load(Ordering::Relaxed), 10);
        }
    });
}

#[test]
fn scope_returns_the_body_result_and_publishes_job_writes() {
    with_timeout(60, || {
        for threads in THREAD_COUNTS {
            let jobs = pool(threads);
            let mut values = [0u32; 64];
            let result = jobs.scope(|s| {
                for (i, value) in values.iter_mut().enumerate() {
                    s.spawn(move |_| *value = i as u32 * 3);
                }
                "done"
            });
            assert_eq!(result, "done");
            assert!(values.iter().enumerate().all(|(i, &v)| v == i as u32 * 3));
        }
    });
}
