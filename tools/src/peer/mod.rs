//! `sylva bench peer`: Sylva's trees against the same trees in a general physics engine,
//! rapier's reduced-coordinate multibodies (`peer::rapier`, built with the feature, says how
//! each part of Weber's model maps onto rapier's).
//!
//! Where it lives: behind the cargo feature `peer` of sylva-tools, which adds the optional
//! dependency `rapier3d` (and, in that build only, a counting global allocator to measure
//! rapier's memory). A feature rather than a separate workspace member because the comparison
//! needs the same test trees, materials and command-line parsing as `sylva bench sim`, and a
//! feature that is off by default keeps rapier, nalgebra and parry out of Sylva's own build and
//! out of the README's `./scripts/run.sh` and `./scripts/test.sh`, which never enable it.
//! `./scripts/peer.sh` builds with it and runs its tests and benchmarks. Without the feature the
//! command exists and fails with the command that builds it.

use anyhow::Result;
use clap::Args;
use sylva_sim::scene::MAX_TEST_FOREST_SEGMENTS;
use sylva_sim::skeleton::MAX_LEAVES_PER_TREE;

use crate::args::{count_in, number_in, seed};

#[cfg(feature = "peer")]
pub mod alloc;
#[cfg(feature = "peer")]
mod bench;
#[cfg(feature = "peer")]
pub mod rapier;
#[cfg(all(test, feature = "peer"))]
mod tests;

/// Most steps `bench peer` runs.
pub const MAX_STEPS: u64 = 100_000;

/// The command that builds `sylva` with the comparison.
#[cfg(not(feature = "peer"))]
pub const BUILD_COMMAND: &str = "cargo build --release -p sylva-tools --features peer";

#[derive(Args, Debug, Clone)]
pub struct PeerArgs {
    /// Segments per tree (Weber's dense tree: 2246; simple: 907; Oliapuram's: 1597).
    #[arg(long, default_value = "2246", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, MAX_TEST_FOREST_SEGMENTS as u64))]
    pub segments: u64,
    /// Leaves per tree (dense: 6840; simple: 1530; Oliapuram's: 3603).
    #[arg(long, default_value = "6840", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 0, MAX_LEAVES_PER_TREE as u64))]
    pub leaves: u64,
    /// Trees in the forest.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, 100_000))]
    pub trees: u64,
    /// Trees rapier simulates, the first ones of the forest (all when left out). Rapier's
    /// multibody holds a dense mass matrix per tree, so a large forest may not fit in memory;
    /// the trees are independent and alike, so a few give its cost per segment.
    #[arg(long, allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, 100_000))]
    pub rapier_trees: Option<u64>,
    /// Time steps to simulate.
    #[arg(long, default_value = "60", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, MAX_STEPS))]
    pub steps: u64,
    /// Steps Sylva's models take, at least `--steps` (the default): the first `--steps` are
    /// compared with rapier's, and Sylva's time is over all of them, so a steady figure needs
    /// no more rapier steps (which can take minutes each).
    #[arg(long, allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, MAX_STEPS))]
    pub sylva_steps: Option<u64>,
    /// Mean wind speed [m/s], gusting ±`gust` of it.
    #[arg(long, default_value = "10", allow_hyphen_values = true, value_parser = |s: &str| number_in(s, 0.0, 200.0))]
    pub wind: f64,
    /// Relative gust strength, 0 for a steady wind.
    #[arg(long, default_value = "0.5", allow_hyphen_values = true, value_parser = |s: &str| number_in(s, 0.0, 1.0))]
    pub gust: f64,
    /// Threads: Sylva's job system runs on this many; rapier's trees are split into this many
    /// worlds, each stepped on its own thread.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, sylva_engine::MAX_THREADS as u64))]
    pub threads: u64,
    /// Time step (s).
    #[arg(long, default_value = "0.0166666667", allow_hyphen_values = true, value_parser = |s: &str| number_in(s, 1e-6, 1.0))]
    pub dt: f64,
    /// Seed of the test trees (tree k uses seed + k) and of the gusts.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = seed)]
    pub seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs the comparison, or explains how to build it.
pub fn run(a: &PeerArgs) -> Result<()> {
    #[cfg(feature = "peer")]
    {
        bench::run(a)
    }
    #[cfg(not(feature = "peer"))]
    {
        let _ = a;
        anyhow::bail!(
            "`sylva bench peer` needs the cargo feature `peer` (it adds the rapier3d dependency, \
             off by default); build it with `{BUILD_COMMAND}` and run \
             target/release/sylva bench peer, or run ./scripts/peer.sh"
        )
    }
}
