//! A job graph: named jobs with "runs after" dependencies, validated and flattened once by
//! [`JobGraphBuilder::build`], then run every frame by [`JobGraph::run`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::jobs::{JobSystem, Scope};
use crate::timings::{FrameTimings, PhaseId};

/// The body of a graph job: the frame context and the pool (to fan out with
/// [`JobSystem::scope`]).
type JobFn<C> = Box<dyn Fn(&C, &JobSystem) + Send + Sync>;

/// Why [`JobGraphBuilder::build`] refused a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphError {
    /// A job was added with an empty name.
    EmptyName {
        /// Position of the job in insertion order.
        index: usize,
    },
    /// Two jobs share a name.
    DuplicateName(String),
    /// A job runs after a name that no job has.
    UnknownDependency {
        /// The job that names the dependency.
        job: String,
        /// The name no job has.
        dependency: String,
    },
    /// A job lists itself among the jobs it runs after.
    SelfDependency(String),
    /// The dependencies form a cycle. Each job in the list runs after the next one, and the
    /// last runs after the first.
    Cycle(Vec<String>),
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::EmptyName { index } => {
                write!(f, "job graph: job #{index} (in insertion order) has an empty name")
            }
            GraphError::DuplicateName(name) => {
                write!(f, "job graph: more than one job is named {name:?}")
            }
            GraphError::UnknownDependency { job, dependency } => write!(
                f,
                "job graph: job {job:?} runs after {dependency:?}, but no job has that name"
            ),
            GraphError::SelfDependency(name) => {
                write!(f, "job graph: job {name:?} is listed as running after itself")
            }
            GraphError::Cycle(names) => {
                write!(f, "job graph: dependency cycle: ")?;
                for (i, name) in names.iter().enumerate() {
                    if i == 0 {
                        write!(f, "{name:?} runs after ")?;
                    } else {
                        write!(f, "{name:?}, which runs after ")?;
                    }
                }
                match names.first() {
                    Some(first) => write!(f, "{first:?}"),
                    None => write!(f, "(nothing)"),
                }
            }
        }
    }
}

impl std::error::Error for GraphError {}

struct PendingJob<C: ?Sized> {
    name: String,
    after: Vec<String>,
    run: JobFn<C>,
}

/// Collects named jobs and their dependencies; [`build`](JobGraphBuilder::build) validates them
/// and produces a [`JobGraph`].
pub struct JobGraphBuilder<C: ?Sized> {
    jobs: Vec<PendingJob<C>>,
}

impl<C: ?Sized + Sync> Default for JobGraphBuilder<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: ?Sized + Sync> JobGraphBuilder<C> {
    /// An empty builder.
    pub fn new() -> Self {
        JobGraphBuilder { jobs: Vec::new() }
    }

    /// Adds a job called `name` that runs after every job named in `after` (which may be added
    /// later). Names are checked by [`build`](JobGraphBuilder::build).
    pub fn add<F>(&mut self, name: &str, after: &[&str], f: F) -> &mut Self
    where
        F: Fn(&C, &JobSystem) + Send + Sync + 'static,
    {
        self.jobs.push(PendingJob {
            name: name.to_owned(),
            after: after.iter().map(|&dep| dep.to_owned()).collect(),
            run: Box::new(f),
        });
        self
    }

    /// Validates the jobs and flattens them into a [`JobGraph`]: dependents lists in one array
    /// with offsets, the initial dependency counts, the root jobs and a topological order (ties
    /// broken by insertion order). A dependency listed twice counts once.
    ///
    /// # Errors
    ///
    /// Refuses an empty name, a duplicate name, a dependency on an unknown name, a job that
    /// depends on itself, and a dependency cycle ([`GraphError::Cycle`] lists the jobs on it in
    /// order).
    pub fn build(self) -> Result<JobGraph<C>, GraphError> {
        let count = self.jobs.len();
        let mut by_name: HashMap<&str, usize> = HashMap::with_capacity(count);
        for (index, job) in self.jobs.iter().enumerate() {
            if job.name.is_empty() {
                return Err(GraphError::EmptyName { index });
            }
            if by_name.insert(&job.name, index).is_some() {
                return Err(GraphError::DuplicateName(job.name.clone()));
            }
        }

        // dependencies[i]: the jobs i runs after, in the order given, without repeats.
        let mut dependencies: Vec<Vec<usize>> = Vec::with_capacity(count);
        for (index, job) in self.jobs.iter().enumerate() {
            let mut deps = Vec::with_capacity(job.after.len());
            for dep in &job.after {
                let Some(&dep_index) = by_name.get(dep.as_str()) else {
                    return Err(GraphError::UnknownDependency {
                        job: job.name.clone(),
                        dependency: dep.clone(),
                    });
                };
                if dep_index == index {
                    return Err(GraphError::SelfDependency(job.name.clone()));
                }
                if !deps.contains(&dep_index) {
                    deps.push(dep_index);
                }
            }
            dependencies.push(deps);
        }

        // Dependents in compressed rows: those of job i are dependents[offsets[i]..offsets[i+1]],
        // in increasing index order.
        let mut offsets = vec![0usize; count + 1];
        for deps in &dependencies {
            for &dep in deps {
                offsets[dep + 1] += 1;
            }
        }
        for i in 0..count {
            offsets[i + 1] += offsets[i];
        }
        let mut dependents = vec![0usize; offsets[count]];
        let mut fill = offsets.clone();
        for (index, deps) in dependencies.iter().enumerate() {
            for &dep in deps {
                dependents[fill[dep]] = index;
                fill[dep] += 1;
            }
        }
        let dependency_counts: Vec<usize> = dependencies.iter().map(Vec::len).collect();

        // Kahn's algorithm, always taking the ready job added first.
        let mut remaining = dependency_counts.clone();
        let mut ready: BinaryHeap<Reverse<usize>> = (0..count).filter(|&i| remaining[i] == 0).map(Reverse).collect();
        let roots: Vec<usize> = (0..count).filter(|&i| remaining[i] == 0).collect();
        let mut order = Vec::with_capacity(count);
        while let Some(Reverse(index)) = ready.pop() {
            order.push(index);
            for &dependent in &dependents[offsets[index]..offsets[index + 1]] {
                remaining[dependent] -= 1;
                if remaining[dependent] == 0 {
                    ready.push(Reverse(dependent));
                }
            }
        }
        if order.len() < count {
            let cycle = find_cycle(&dependencies, &remaining);
            return Err(GraphError::Cycle(
                cycle.into_iter().map(|i| self.jobs[i].name.clone()).collect(),
            ));
        }

        let (names, runs): (Vec<String>, Vec<JobFn<C>>) = self.jobs.into_iter().map(|job| (job.name, job.run)).unzip();
        Ok(JobGraph {
            names: names.into(),
            runs: runs.into(),
            dependent_offsets: offsets.into(),
            dependents: dependents.into(),
            dependency_counts: dependency_counts.into(),
            roots: roots.into(),
            order: order.into(),
        })
    }
}

/// Finds a cycle among the jobs Kahn's algorithm could not order (`remaining[i] > 0`). Each of
/// them runs after at least one other such job, so following those edges must revisit a job.
/// Returns the cycle with each job followed by one it runs after, starting at its lowest index.
fn find_cycle(dependencies: &[Vec<usize>], remaining: &[usize]) -> Vec<usize> {
    let Some(start) = remaining.iter().position(|&r| r > 0) else {
        return Vec::new();
    };
    let mut position_on_path = vec![usize::MAX; remaining.len()];
    let mut path = Vec::new();
    let mut current = start;
    while position_on_path[current] == usize::MAX {
        position_on_path[current] = path.len();
        path.push(current);
        current = match dependencies[current].iter().find(|&&dep| remaining[dep] > 0) {
            Some(&dep) => dep,
            None => return Vec::new(), // unreachable for an unordered job; see above
        };
    }
    let mut cycle = path.split_off(position_on_path[current]);
    if let Some(lowest) = cycle.iter().enumerate().min_by_key(|&(_, &job)| job).map(|(at, _)| at) {
        cycle.rotate_left(lowest);
    }
    cycle
}

/// A validated job graph in flat arrays, built once and run any number of times.
pub struct JobGraph<C: ?Sized> {
    names: Box<[String]>,
    runs: Box<[JobFn<C>]>,
    /// Dependents of job `i`: `dependents[dependent_offsets[i]..dependent_offsets[i + 1]]`.
    dependent_offsets: Box<[usize]>,
    dependents: Box<[usize]>,
    /// How many jobs each job runs after.
    dependency_counts: Box<[usize]>,
    /// Jobs without dependencies, in insertion order.
    roots: Box<[usize]>,
    /// Topological order, ties broken by insertion order.
    order: Box<[usize]>,
}

impl<C: ?Sized + Sync> JobGraph<C> {
    /// Runs every job once, each after all the jobs it runs after have finished, independent jobs
    /// in parallel on `jobs`; returns when all have finished.
    ///
    /// On a one-thread pool the jobs run inline in [`topological_order`](Self::topological_order).
    /// Otherwise each run starts from fresh per-job atomic counters holding the built dependency
    /// counts; a job that finishes decrements those of its dependents, and those reaching zero
    /// are ready: it keeps the first for itself and spawns the others.
    ///
    /// With `timings`, each job's elapsed time is added to the phase of the same name, if the
    /// [`FrameTimings`] has one.
    ///
    /// # Panics
    ///
    /// If a job panics, the jobs that run after it (directly or not) are skipped, the other jobs
    /// still run, and once they finished the panic is resumed here. On a one-thread pool the
    /// panic propagates at once and the jobs after it in the order are skipped.
    pub fn run(&self, jobs: &JobSystem, ctx: &C, timings: Option<&FrameTimings>) {
        let phases: Option<(&FrameTimings, Vec<Option<PhaseId>>)> = timings.map(|timings| {
            let ids = self.names.iter().map(|name| timings.phase_id(name)).collect();
            (timings, ids)
        });
        let phases = phases.as_ref().map(|(timings, ids)| (*timings, ids.as_slice()));

        if jobs.threads() == 1 {
            for &index in self.order.iter() {
                self.run_job(index, ctx, jobs, phases);
            }
            return;
        }

        let remaining: Box<[AtomicUsize]> = self
            .dependency_counts
            .iter()
            .map(|&count| AtomicUsize::new(count))
            .collect();
        let run = GraphRun {
            graph: self,
            ctx,
            remaining: &remaining,
            phases,
        };
        let run = &run;
        jobs.scope(|scope| {
            for &root in self.roots.iter() {
                scope.spawn(move |scope| run.run_from(root, scope));
            }
        });
    }

    fn run_job(&self, index: usize, ctx: &C, jobs: &JobSystem, phases: Option<(&FrameTimings, &[Option<PhaseId>])>) {
        let job = &self.runs[index];
        match phases.and_then(|(timings, ids)| Some((timings, ids[index]?))) {
            Some((timings, id)) => {
                let start = Instant::now();
                job(ctx, jobs);
                timings.add(id, start.elapsed());
            }
            None => job(ctx, jobs),
        }
    }

    /// The jobs' names, in insertion order (a job's index is its position here).
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// The name of job `index`.
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn name(&self, index: usize) -> &str {
        &self.names[index]
    }

    /// The index of the job called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Job indices in the order a one-thread run executes them: a topological order, ties broken
    /// by insertion order.
    pub fn topological_order(&self) -> &[usize] {
        &self.order
    }

    /// The jobs that run (directly) after job `index`, in increasing index order.
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn dependents(&self, index: usize) -> &[usize] {
        &self.dependents[self.dependent_offsets[index]..self.dependent_offsets[index + 1]]
    }

    /// How many jobs job `index` runs after (directly).
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn dependency_count(&self, index: usize) -> usize {
        self.dependency_counts[index]
    }

    /// The number of jobs.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the graph has no jobs.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

impl<C: ?Sized> fmt::Debug for JobGraph<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobGraph")
            .field("names", &self.names)
            .field("order", &self.order)
            .finish_non_exhaustive()
    }
}

/// The state of one multi-threaded [`JobGraph::run`], shared by its jobs.
struct GraphRun<'a, C: ?Sized> {
    graph: &'a JobGraph<C>,
    ctx: &'a C,
    remaining: &'a [AtomicUsize],
    phases: Option<(&'a FrameTimings, &'a [Option<PhaseId>])>,
}

impl<C: ?Sized + Sync> GraphRun<'_, C> {
    /// Runs job `index`, then, as long as finishing a job makes dependents ready, spawns all but
    /// the first of them and continues with that one.
    fn run_from<'scope>(&'scope self, mut index: usize, scope: &'scope Scope<'scope, '_>) {
        loop {
            self.graph.run_job(index, self.ctx, scope.job_system(), self.phases);
            let mut next = None;
            for &dependent in self.graph.dependents(index) {
                // AcqRel: the job that takes the count to zero sees every dependency's writes.
                if self.remaining[dependent].fetch_sub(1, Ordering::AcqRel) == 1 {
                    if next.is_none() {
                        next = Some(dependent);
                    } else {
                        scope.spawn(move |scope| self.run_from(dependent, scope));
                    }
                }
            }
            match next {
                Some(dependent) => index = dependent,
                None => return,
            }
        }
    }
}
