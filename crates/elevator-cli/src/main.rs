//! `elevator`: a block I/O layer in user space. This binary drives
//! elevator-core: `microbench` measures what the core costs per I/O;
//! `schedulers` lists the schedulers and their tunables.

mod cpu_time;
mod list;
mod microbench;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// elevator: a block I/O layer in user space (bios, requests, merging, I/O schedulers).
#[derive(Parser, Debug)]
#[command(name = "elevator", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Measure the CPU cost per I/O of the core path (submit, merge attempt,
    /// insert, dispatch, complete) with no device.
    Microbench(microbench::Args),
    /// List the I/O schedulers with their tunables and Linux defaults.
    Schedulers,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Microbench(args) => microbench::run(&args),
        Command::Schedulers => list::schedulers(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("elevator: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
