//! `sylva`: Sylva's command-line tool.

mod args;
mod bench;
mod export;

use clap::{Parser, Subcommand};

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
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Steps a forest of test trees with Weber's model and reports time per segment and step.
    Sim(bench::SimArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench {
            what: BenchCommand::Sim(args),
        } => bench::run_sim(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
