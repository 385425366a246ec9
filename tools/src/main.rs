//! `sylva`: Sylva's command-line tool.

mod args;
mod bench;
mod bench_collision;
mod bench_frame;
mod bench_render;
mod bench_wind;
mod export;
mod grow;
mod headless;
mod input;
mod interrupt;
mod output;
mod peer;
mod progress;
mod scene;
mod sway;
mod trees;
mod view;

use clap::{Parser, Subcommand};

/// Builds with the rapier comparison count live heap bytes, to measure rapier's memory.
#[cfg(feature = "peer")]
#[global_allocator]
static ALLOC: peer::alloc::Counting = peer::alloc::Counting;

#[derive(Parser)]
#[command(
    name = "sylva",
    version,
    about = "Sylva: real-time tree simulation",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Benchmarks: per-phase timings, memory and a final-state hash.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
    /// Tree specs from Arbaro, Blender Sapling, tree-gen, Helios and Sylva.
    Spec {
        #[command(subcommand)]
        what: trees::SpecCommand,
    },
    /// Grows a spec and writes it as a mesh for other tools (.obj or .glb).
    Export(trees::ExportArgs),
    /// Opens the viewer: a forest in wind, with orbit camera, timing overlay and a sphere to
    /// push through the trees.
    View(view::ViewArgs),
    /// Simulates a scene for some frames and writes the last one as a PNG, without a window.
    Render(headless::RenderArgs),
    /// Grows a tree by an algorithm (space colonization, L-system) and writes its mesh.
    Grow {
        #[command(subcommand)]
        what: grow::GrowCommand,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Steps a forest of test trees with Weber's model and reports time per segment and step.
    Sim(bench::SimArgs),
    /// Grows a spec repeatedly on one thread and reports the time.
    Gen(bench::GenArgs),
    /// Fill time per instance, upload bytes and frames per second of the viewer's pipeline.
    Render(bench_render::RenderBenchArgs),
    /// Steps the stable-fluids wind grid and reports time per pass and the divergence left.
    Wind(bench_wind::WindBenchArgs),
    /// One frame of the viewer's simulation thread (wind, trees, render command fill) on its
    /// real scene, without drawing: time per phase and a state hash.
    Frame(bench_frame::FrameBenchArgs),
    /// The test trees in Sylva and as rapier multibodies (same masses, springs, gravity and
    /// wind): time per segment and step, bytes per segment, tip trajectory differences. Needs
    /// the cargo feature `peer`.
    Peer(peer::PeerArgs),
    /// Chen 2011's Table 6.1: the collision-free modelling pass on trees of the sizes of
    /// Chen's treeA to treeE, with and without its voxel grid.
    CollisionFree(bench_collision::CollisionBenchArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    interrupt::install();
    let result = match cli.command {
        Command::Bench {
            what: BenchCommand::Sim(args),
        } => bench::run_sim(&args),
        Command::Bench {
            what: BenchCommand::Gen(args),
        } => bench::run_gen(&args),
        Command::Bench {
            what: BenchCommand::Render(args),
        } => bench_render::run(&args),
        Command::Bench {
            what: BenchCommand::Wind(args),
        } => bench_wind::run(&args),
        Command::Bench {
            what: BenchCommand::Frame(args),
        } => bench_frame::run(&args),
        Command::Bench {
            what: BenchCommand::Peer(args),
        } => peer::run(&args),
        Command::Bench {
            what: BenchCommand::CollisionFree(args),
        } => bench_collision::run(&args),
        Command::Spec { what } => trees::run_spec(&what),
        Command::Export(args) => trees::run_export(&args),
        Command::Grow { what } => grow::run(&what),
        Command::Render(args) => headless::run(&args),
        Command::View(args) => view::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) if e.is::<interrupt::Interrupted>() => {
            eprintln!("sylva: {e}");
            std::process::ExitCode::from(interrupt::EXIT_CODE)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
