//! Sylva engine: a work-stealing job system, a job graph run every frame, and frame timings.
//!
//! # Job system ([`JobSystem`], [`Scope`])
//!
//! A pool of `n` threads is the calling thread plus `n - 1` worker threads. Each worker owns a
//! LIFO `crossbeam_deque::Worker` deque; the pool has one global `Injector`, and every thread can
//! steal from every worker through its `Stealer`.
//!
//! * Jobs are only spawned into a [`Scope`] ([`JobSystem::scope`], modelled on
//!   `std::thread::scope`), so they may borrow anything that outlives the scope. A worker of the
//!   pool pushes the jobs it spawns onto its own deque; any other thread (the main thread, or a
//!   worker of *another* pool) pushes onto the pool's injector. Several pools can exist at once.
//! * A thread looking for work tries its own deque, then the injector (taking a batch), then the
//!   other workers' deques.
//! * The thread waiting for a scope **helps**: it runs queued jobs until the scope's pending
//!   count is zero, and only sleeps when there is nothing to run. Nested scopes (a job opening a
//!   scope and waiting for it) therefore cannot deadlock the pool.
//! * Idle threads spin briefly (a few tens of microseconds), then sleep on a condition
//!   variable; pushers wake a sleeper only when one sleeps. The protocol (no lost wake-ups, no
//!   timed waits) is explained in `jobs.rs`.
//! * With one thread there are no workers and no queues: jobs run inline at their `spawn` call.
//!
//! Invariants: every spawned job runs exactly once; a scope returns only after all of its jobs
//! (including jobs spawned by its jobs) finished, even when one panicked, and then resumes the
//! first panic; worker threads never die from a job's panic; dropping the pool joins its threads.
//!
//! # Job graph ([`JobGraphBuilder`], [`JobGraph`])
//!
//! Named jobs with "runs after" dependencies are validated (unique, non-empty names; known
//! dependencies; no cycles) and flattened once into arrays: dependents lists with offsets,
//! dependency counts, roots and a topological order. Each [`JobGraph::run`] starts from fresh
//! atomic counters; a job whose counter reaches zero is ready and runs on the pool. With one
//! thread, jobs run inline in the topological order (ties broken by insertion order).
//!
//! # Frame timings ([`FrameTimings`])
//!
//! Named phases accumulate *work time* from any thread during a frame; closing the frame records
//! them and the frame's *wall time* into totals and a ring of the last [`HISTORY`] frames.
//!
//! # Determinism contract for callers
//!
//! The pool decides which thread runs which job and in what order; results must not depend on
//! that. Split work by data (fixed chunk sizes derived from the problem size), never by the
//! number of threads, and combine per-chunk results in chunk order. Then a simulation gives
//! bit-identical results on 1 thread and on 16.

#![warn(missing_docs)]

mod graph;
mod jobs;
mod timings;

pub use graph::{GraphError, JobGraph, JobGraphBuilder};
pub use jobs::{JobSystem, JobSystemError, Scope, MAX_THREADS};
pub use timings::{FrameTimings, PhaseId, HISTORY};
