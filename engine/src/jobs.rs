//! The work-stealing job system: a fixed pool of worker threads plus the calling thread.
//!
//! See the crate documentation for the overall design. The pieces in this file:
//!
//! * [`JobSystem`] owns the worker threads and the state they share ([`Shared`]): one global
//!   [`Injector`], one [`Stealer`] per worker, and the sleep machinery (a sleeper count, a
//!   `Mutex<()>` and a `Condvar`).
//! * Every worker thread owns one LIFO [`Worker`] deque, stored in a thread-local together with
//!   the id of its pool, so that `spawn` can tell whether the current thread is a worker *of this
//!   pool* (and push locally) or not (and push to the pool's injector).
//! * [`Scope`] is the only way to run jobs. A scope counts its pending jobs; [`JobSystem::scope`]
//!   does not return (or unwind) before that count is back to zero, and the waiting thread runs
//!   queued jobs meanwhile. That guarantee is what makes borrowing non-`'static` data from jobs
//!   sound (see [`erase_job_lifetime`]).
//!
//! [`erase_job_lifetime`] is the crate's only `unsafe`, which this module alone allows.

#![allow(unsafe_code)]

use std::any::Any;
use std::cell::OnceCell;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{self, AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};

/// The largest thread count [`JobSystem::new`] accepts (the calling thread included).
pub const MAX_THREADS: usize = 512;

/// A job's body with its real `'scope` lifetime erased by [`erase_job_lifetime`].
type ErasedFn = Box<dyn FnOnce() + Send + 'static>;

/// A queued job: its body, and the counter of the scope it belongs to.
///
/// The two are kept apart so that the scope's count is decremented by the pool *after* the body
/// returned: from then on nothing in this thread refers to the `Scope` (which lives on the
/// waiting thread's stack and may be gone as soon as the count reaches zero).
struct Job {
    body: ErasedFn,
    counter: Arc<ScopeCounter>,
}

impl Job {
    fn execute(self) {
        let Job { body, counter } = self;
        body(); // never unwinds: the body catches its own panics
        counter.job_done();
    }
}

/// What `catch_unwind` hands back for a panic.
type PanicPayload = Box<dyn Any + Send + 'static>;

/// How long a thread that found no job keeps looking (spinning, then yielding) before it sleeps.
/// Waking a sleeping thread costs several microseconds, so short gaps between bursts of jobs
/// (e.g. between two phases of a frame) are better bridged awake.
const IDLE_SPIN: Duration = Duration::from_micros(40);
/// Idle rounds with exponentially more `spin_loop` hints (1, 2, .. 64) before the remaining
/// rounds of the `IDLE_SPIN` window call `yield_now` instead.
const SPIN_ROUNDS: u32 = 7;

/// Source of the pool ids kept in the worker thread-local.
static NEXT_POOL_ID: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// Set once on each worker thread when it starts; empty on every other thread.
    static WORKER: OnceCell<WorkerLocal> = const { OnceCell::new() };
}

/// Why a [`JobSystem`] could not be created.
#[derive(Debug)]
pub enum JobSystemError {
    /// The requested thread count is outside `1..=MAX_THREADS`.
    ThreadCount {
        /// The refused value.
        requested: usize,
    },
    /// The operating system refused to start a worker thread.
    Spawn(io::Error),
}

impl fmt::Display for JobSystemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobSystemError::ThreadCount { requested } => write!(
                f,
                "invalid job system thread count {requested}: it must be in 1..={MAX_THREADS} \
                 (the count includes the calling thread; 1 runs every job inline)"
            ),
            JobSystemError::Spawn(err) => {
                write!(f, "failed to start a job system worker thread: {err}")
            }
        }
    }
}

impl std::error::Error for JobSystemError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JobSystemError::ThreadCount { .. } => None,
            JobSystemError::Spawn(err) => Some(err),
        }
    }
}

/// A pool of worker threads that run jobs spawned into [scopes](JobSystem::scope).
///
/// `threads` counts the calling thread too: a pool of `n` threads starts `n - 1` workers, and the
/// thread waiting for a scope runs jobs as well. With one thread there are no workers and every
/// job runs inline, at its `spawn` call.
///
/// Dropping the pool stops and joins its workers.
pub struct JobSystem {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    threads: usize,
}

impl JobSystem {
    /// Creates a pool of `threads` threads in total, the calling thread included, so it starts
    /// `threads - 1` worker threads.
    ///
    /// # Errors
    ///
    /// [`JobSystemError::ThreadCount`] when `threads` is 0 or more than [`MAX_THREADS`];
    /// [`JobSystemError::Spawn`] when a worker thread cannot be started (the workers already
    /// started are stopped and joined before returning).
    pub fn new(threads: usize) -> Result<JobSystem, JobSystemError> {
        if !(1..=MAX_THREADS).contains(&threads) {
            return Err(JobSystemError::ThreadCount { requested: threads });
        }
        // LIFO deques: a worker pops the job it pushed last. That is the job most likely to find
        // its data still in cache (a job's children work on the parent's data), and recursive
        // splitting then runs depth-first, which bounds how much is queued. Thieves take from the
        // other end, i.e. the oldest and, for recursive splits, the largest pieces of work.
        let deques: Vec<Worker<Job>> = (1..threads).map(|_| Worker::new_lifo()).collect();
        let shared = Arc::new(Shared {
            id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            injector: Injector::new(),
            stealers: deques.iter().map(Worker::stealer).collect(),
            sleepers: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let mut system = JobSystem {
            shared,
            handles: Vec::with_capacity(threads - 1),
            threads,
        };
        for (index, deque) in deques.into_iter().enumerate() {
            let shared = Arc::clone(&system.shared);
            let handle = thread::Builder::new()
                .name(format!("sylva-job-{index}"))
                .spawn(move || worker_main(shared, index, deque))
                .map_err(JobSystemError::Spawn)?; // dropping `system` joins the started workers
            system.handles.push(handle);
        }
        Ok(system)
    }

    /// The number of threads that run jobs, the calling thread included.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `f` with a [`Scope`] into which it can spawn jobs that borrow anything outliving the
    /// scope, and returns `f`'s result once every job spawned into the scope (by `f` or by other
    /// jobs of the scope) has finished.
    ///
    /// While it waits, the calling thread runs queued jobs of this pool (its own deque if it is a
    /// worker of this pool, the injector, other workers' deques) and only sleeps when there are
    /// none.
    ///
    /// # Panics
    ///
    /// If `f` or any job panics, the scope still waits for all of its jobs, then resumes the
    /// panic on the caller: `f`'s own panic if it had one, otherwise the first job panic recorded.
    /// The pool stays usable.
    pub fn scope<'env, F, R>(&self, f: F) -> R
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
    {
        let scope = Scope {
            system: self,
            counter: (self.threads > 1).then(|| {
                Arc::new(ScopeCounter {
                    word: AtomicUsize::new(0),
                    shared: Arc::clone(&self.shared),
                })
            }),
            panic: Mutex::new(None),
            scope: PhantomData,
            env: PhantomData,
        };
        let result = panic::catch_unwind(AssertUnwindSafe(|| f(&scope)));
        if let Some(counter) = &scope.counter {
            // Never unwinds: every job catches its own panic.
            self.shared
                .with_local(|local| self.shared.run_until(local, Waiter::Scope(counter)));
        }
        let job_panic = scope.panic.lock().unwrap_or_else(PoisonError::into_inner).take();
        match result {
            Err(payload) => {
                if let Some(other) = job_panic {
                    drop_payload(other);
                }
                panic::resume_unwind(payload)
            }
            Ok(value) => {
                if let Some(payload) = job_panic {
                    panic::resume_unwind(payload);
                }
                value
            }
        }
    }

    /// Runs `a` and `b`, possibly in parallel (`a` as a job, `b` on the calling thread), and
    /// returns both results. Panics like [`scope`](JobSystem::scope).
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let mut result_a = None;
        let result_b = self.scope(|s| {
            s.spawn(|_| result_a = Some(a()));
            b()
        });
        // The scope resumed `a`'s panic if it had one, so `a` finished normally here.
        let result_a = result_a.expect("join: job `a` finished without a result");
        (result_a, result_b)
    }

    /// Calls `f(index, item)` for every item, one job per item, and returns when all are done.
    /// Meant for coarse items (each tens of microseconds of work or more). Panics like
    /// [`scope`](JobSystem::scope).
    pub fn for_each_mut<T: Send, F: Fn(usize, &mut T) + Sync>(&self, items: &mut [T], f: F) {
        let f = &f;
        self.scope(|s| {
            for (index, item) in items.iter_mut().enumerate() {
                s.spawn(move |_| f(index, item));
            }
        });
    }
}

impl fmt::Debug for JobSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobSystem")
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl Drop for JobSystem {
    fn drop(&mut self) {
        // No scope can be running (it would borrow `self`), so the queues are empty. Setting the
        // flag before taking the lock means a worker either sees it in its pre-sleep check (made
        // under the lock) or is already waiting when `notify_all` runs.
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.wake_all();
        for handle in self.handles.drain(..) {
            // Workers catch job panics, so they do not panic; nothing to report if one did.
            let _ = handle.join();
        }
    }
}

/// A scope of jobs, created by [`JobSystem::scope`]. Jobs spawned into it may borrow anything
/// that outlives `'env`, and may spawn further jobs into it.
pub struct Scope<'scope, 'env: 'scope> {
    system: &'scope JobSystem,
    /// Pending-job count shared with the queued jobs; `None` on a one-thread pool, where jobs run
    /// inline at `spawn`.
    counter: Option<Arc<ScopeCounter>>,
    /// The first panic of a job of this scope.
    panic: Mutex<Option<PanicPayload>>,
    // Invariant in both lifetimes, like `std::thread::Scope`.
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Queues `f` as a job of this scope. `f` receives the scope, so it can spawn more jobs.
    ///
    /// On a worker thread of this pool the job goes to that worker's own deque, on any other
    /// thread to the pool's injector. On a one-thread pool `f` runs right here, before `spawn`
    /// returns (a panic in it is recorded and resumed when the scope ends, as on larger pools).
    pub fn spawn<F>(&'scope self, f: F)
    where
        F: FnOnce(&'scope Scope<'scope, 'env>) + Send + 'scope,
    {
        let Some(counter) = &self.counter else {
            self.run_catching(move || f(self));
            return;
        };
        // Relaxed is enough: whoever spawns is either the scope body (on the waiting thread,
        // before it waits) or a running job of this scope, which holds a count itself until after
        // this increment, so the count cannot reach zero in between.
        counter.word.fetch_add(PENDING_ONE, Ordering::Relaxed);
        let body: Box<dyn FnOnce() + Send + 'scope> = Box::new(move || self.run_catching(|| f(self)));
        self.system.shared.push(Job {
            body: erase_job_lifetime(body),
            counter: Arc::clone(counter),
        });
    }

    /// The pool this scope runs on.
    pub fn job_system(&self) -> &JobSystem {
        self.system
    }

    fn run_catching(&self, f: impl FnOnce()) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(f)) {
            let mut first = self.panic.lock().unwrap_or_else(PoisonError::into_inner);
            if first.is_none() {
                *first = Some(payload);
            } else {
                drop(first);
                drop_payload(payload);
            }
        }
    }
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("threads", &self.system.threads)
            .finish_non_exhaustive()
    }
}

/// Turns a job body that borrows data for `'scope` into a `'static` one that can sit in the
/// queues.
///
/// This is the crate's only `unsafe`.
fn erase_job_lifetime<'scope>(body: Box<dyn FnOnce() + Send + 'scope>) -> ErasedFn {
    // SAFETY: only the two types' lifetime bounds differ, so the layout (a fat box pointer) is
    // identical. What remains is to show the body never runs, nor is dropped, after 'scope ends.
    // The only caller, `Scope::spawn`, increments the scope's pending count before queuing the
    // body, and the pool decrements it (`Job::execute`) only after the body has run and been
    // consumed, so after everything borrowed for 'scope is gone; the counter itself is owned
    // through an `Arc`. `JobSystem::scope` does not return, and cannot unwind, before that count
    // is zero: the scope body's panic is caught and resumed only after the wait, and the wait
    // loop runs bodies that catch their own panics. Queued jobs are never dropped unrun: they
    // leave the queues only to be run, the workers never die while the pool lives (nothing they
    // run unwinds), and the pool cannot be dropped while a scope borrows it. So the body, and
    // every borrow in it, is gone before the borrowed data can be.
    unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + 'scope>, ErasedFn>(body) }
}

/// Drops a panic payload whose `Drop` might itself panic, without letting that unwind into the
/// pool's machinery (which must not unwind); such a second payload is leaked.
fn drop_payload(payload: PanicPayload) {
    if let Err(nested) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(nested);
    }
}

/// Low bit of [`ScopeCounter::word`]: the waiting thread is (about to be) asleep.
const WAITER_ASLEEP: usize = 1;
/// One pending job in [`ScopeCounter::word`]; the count lives in the bits above the flag.
const PENDING_ONE: usize = 2;

/// A scope's pending-job count, shared (by `Arc`) between the scope and its queued jobs.
struct ScopeCounter {
    /// `pending_jobs * PENDING_ONE | WAITER_ASLEEP?`. Packing the flag with the count lets the
    /// job that finishes last learn, in the same atomic operation, whether it must wake the
    /// waiter.
    word: AtomicUsize,
    shared: Arc<Shared>,
}

impl ScopeCounter {
    fn is_done(&self) -> bool {
        // Acquire pairs with the jobs' decrements (a release sequence of RMWs), so once this sees
        // zero everything the jobs wrote is visible to the thread returning from the scope.
        self.word.load(Ordering::Acquire) < PENDING_ONE
    }

    fn job_done(&self) {
        let previous = self.word.fetch_sub(PENDING_ONE, Ordering::SeqCst);
        // The waiter sets WAITER_ASLEEP under the sleep lock, then re-reads this word before it
        // waits. If our decrement came after its flag, we see the flag, and taking the lock below
        // waits until it is really waiting; if it came before, its re-read sees zero.
        if previous == PENDING_ONE | WAITER_ASLEEP {
            self.shared.wake_all();
        }
    }
}

/// What a thread running [`Shared::run_until`] waits for.
enum Waiter<'a> {
    /// A worker thread: runs jobs until the pool shuts down.
    Worker,
    /// A thread inside [`JobSystem::scope`]: runs jobs until the scope has none pending.
    Scope(&'a ScopeCounter),
}

/// State shared by a pool's handle, its workers and its scopes.
struct Shared {
    /// Distinguishes pools in the [`WORKER`] thread-local.
    id: usize,
    /// Jobs spawned by threads that are not workers of this pool.
    injector: Injector<Job>,
    /// One per worker deque, indexed like the workers.
    stealers: Box<[Stealer<Job>]>,
    /// Threads (workers or scope waiters) registered as sleeping or about to sleep.
    sleepers: AtomicUsize,
    shutdown: AtomicBool,
    sleep_lock: Mutex<()>,
    wake: Condvar,
}

/// The per-thread state of a worker thread.
struct WorkerLocal {
    pool: usize,
    index: usize,
    deque: Worker<Job>,
}

fn worker_main(shared: Arc<Shared>, index: usize, deque: Worker<Job>) {
    WORKER.with(|cell| {
        let local = cell.get_or_init(|| WorkerLocal {
            pool: shared.id,
            index,
            deque,
        });
        shared.run_until(Some(local), Waiter::Worker);
    });
}

// The sleep protocol (no lost wake-ups, no timed waits):
//
// * A pusher makes its job visible (deque or injector push), issues a SeqCst fence, then loads
//   `sleepers`; only if it is non-zero does it take `sleep_lock` and notify one waiter.
// * A thread going to sleep takes `sleep_lock`, increments `sleepers` (SeqCst), issues a SeqCst
//   fence, then re-checks the queues (and its own exit condition) *while still holding the lock*,
//   and waits on the condvar only if all are empty; `wait` releases the lock atomically.
//
// The two fences are totally ordered. If the pusher's comes first, the sleeper's re-check sees
// the job and it does not wait. If the sleeper's comes first, the pusher sees `sleepers > 0` and
// takes the lock; since the sleeper incremented under that lock, the pusher gets it only once the
// sleeper is waiting (or has left), so its notification cannot slip in before the wait.
//
// `notify_one` wakes one sleeper, which may not be the one best placed to run the job. A worker
// that wakes always scans every queue before it sleeps again, so it cannot strand the job. A
// scope waiter can wake and leave because its scope finished; to not swallow a wake-up meant
// for a job, a waiter that slept re-checks on its way out (`pass_on_wakeup`) and, if jobs are
// queued and someone sleeps, wakes one. If nobody sleeps, every thread is awake and will see the
// job in its own pre-sleep re-check (same fence argument).
//
// Scope completion uses the flag in `ScopeCounter::word` (see `ScopeCounter::job_done`) and
// `notify_all`, since the waiter cannot be singled out on the shared condvar; this only happens
// when the waiter actually went to sleep. Shutdown sets its flag before taking the lock, which the
// pre-sleep check (made under the lock) then sees.
impl Shared {
    /// Runs `f` with this thread's worker state if the thread is a worker of this pool.
    fn with_local<R>(&self, f: impl FnOnce(Option<&WorkerLocal>) -> R) -> R {
        WORKER.with(|cell| f(cell.get().filter(|local| local.pool == self.id)))
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        self.sleep_lock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, job: Job) {
        self.with_local(|local| match local {
            Some(local) => local.deque.push(job),
            None => self.injector.push(job),
        });
        atomic::fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            self.wake_one();
        }
    }

    /// Taking (and releasing) the lock orders this after any sleeper's check-then-wait.
    fn wake_one(&self) {
        drop(self.lock());
        self.wake.notify_one();
    }

    fn wake_all(&self) {
        drop(self.lock());
        self.wake.notify_all();
    }

    fn has_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    fn find_job(&self, local: Option<&WorkerLocal>) -> Option<Job> {
        if let Some(job) = local.and_then(|local| local.deque.pop()) {
            return Some(job);
        }
        loop {
            let stolen = match local {
                Some(local) => self.injector.steal_batch_and_pop(&local.deque),
                None => self.injector.steal(),
            };
            match stolen {
                Steal::Success(job) => return Some(job),
                Steal::Empty => break,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
        self.steal_from_workers(local)
    }

    fn steal_from_workers(&self, local: Option<&WorkerLocal>) -> Option<Job> {
        let count = self.stealers.len();
        // Workers start with their right-hand neighbour, so they do not all hit the same victim.
        let start = local.map_or(0, |local| local.index + 1);
        loop {
            let mut retry = false;
            for offset in 0..count {
                let victim = (start + offset) % count;
                let stolen = match local {
                    Some(local) if local.index == victim => continue,
                    Some(local) => self.stealers[victim].steal_batch_and_pop(&local.deque),
                    None => self.stealers[victim].steal(),
                };
                match stolen {
                    Steal::Success(job) => return Some(job),
                    Steal::Empty => {}
                    Steal::Retry => retry = true,
                }
            }
            if !retry {
                return None;
            }
            std::hint::spin_loop();
        }
    }

    fn is_done(&self, waiter: &Waiter<'_>) -> bool {
        match waiter {
            Waiter::Worker => self.shutdown.load(Ordering::SeqCst),
            Waiter::Scope(counter) => counter.is_done(),
        }
    }

    /// The loop of worker threads and of threads waiting for a scope: run jobs until `waiter` is
    /// done, spinning briefly and then sleeping when there are none.
    fn run_until(&self, local: Option<&WorkerLocal>, waiter: Waiter<'_>) {
        let mut idle_rounds = 0;
        let mut idle_since = None;
        let mut slept = false;
        while !self.is_done(&waiter) {
            if let Some(job) = self.find_job(local) {
                job.execute();
                idle_rounds = 0;
                idle_since = None;
            } else if idle_since.get_or_insert_with(Instant::now).elapsed() < IDLE_SPIN {
                if idle_rounds < SPIN_ROUNDS {
                    for _ in 0..1u32 << idle_rounds {
                        std::hint::spin_loop();
                    }
                } else {
                    thread::yield_now();
                }
                idle_rounds += 1;
            } else {
                self.sleep(&waiter);
                slept = true;
                idle_rounds = 0;
                idle_since = None;
            }
        }
        if slept {
            self.pass_on_wakeup();
        }
    }

    fn sleep(&self, waiter: &Waiter<'_>) {
        let guard = self.lock();
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if let Waiter::Scope(counter) = waiter {
            counter.word.fetch_or(WAITER_ASLEEP, Ordering::SeqCst);
        }
        atomic::fence(Ordering::SeqCst);
        let guard = if self.is_done(waiter) || self.has_work() {
            guard
        } else {
            // Any wake-up, spurious or not, just sends the thread back to scanning the queues.
            self.wake.wait(guard).unwrap_or_else(PoisonError::into_inner)
        };
        if let Waiter::Scope(counter) = waiter {
            counter.word.fetch_and(!WAITER_ASLEEP, Ordering::SeqCst);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        drop(guard);
    }

    /// Called by a thread that slept and now leaves the pool's loop: the wake-up it consumed may
    /// have been meant for a queued job, so hand it on if jobs are queued and someone sleeps.
    fn pass_on_wakeup(&self) {
        atomic::fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) != 0 && self.has_work() {
            self.wake_one();
        }
    }
}
