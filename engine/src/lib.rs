//! Sylva engine: work-stealing job system, job graph, frame timings.
