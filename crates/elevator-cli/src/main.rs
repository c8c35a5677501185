//! `elevator`: a block I/O layer in user space. This module owns the
//! command line: the commands clap knows (see `ABOUT` for them by group;
//! docs/commands/ has a page for each) and the dispatch to their modules.

/// A line on stderr that is lost, not fatal, when stderr is closed or
/// full: `serve`'s log, where ending the process on a lost log line would
/// skip its shutdown (the write log's last records, the exports' flush).
macro_rules! log_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod advise;
mod advise_report;
mod bench_fio;
mod bench_nbd;
mod bench_write_log;
mod closed_stdout;
mod compare;
mod cost_scenario;
mod crash_states;
mod devices;
mod experiment;
mod fio_args;
mod list;
mod mark;
mod microbench;
mod progress;
mod replay;
mod replay_report;
mod report;
mod run;
mod run_report;
mod serve;
mod sweep;
mod trace_cmd;
mod write_log_cmd;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// The summary `elevator --help` prints before "Usage": every visible
/// command, by what it works on (a test checks that none is missing).
const ABOUT: &str =
    "elevator: a block I/O layer in user space (bios, requests, merging, I/O schedulers).
  simulate: run, compare, advise, replay, sweep, experiment, microbench
  real:     serve, bench-vs-fio, bench-vs-nbdkit, bench-write-log
  data:     trace, write-log, crash-states
  lists:    devices, schedulers";

/// elevator: a block I/O layer in user space (bios, requests, merging, I/O schedulers).
#[derive(Parser, Debug)]
#[command(name = "elevator", version, about = ABOUT, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a fio job file on a simulated device (hdd-7200, nvme, ...) or a
    /// real one (file:PATH through io_uring, mem:SIZE), with fio-like output.
    Run(run::RunArgs),
    /// Run a fio job file under several schedulers and compare them.
    Compare(run::CompareArgs),
    /// Run a workload (fio job or trace) under every scheduler on a
    /// simulated device, rank them by a goal (throughput, p99, fairness)
    /// and explain the choice.
    Advise(advise::Args),
    /// Replay a recorded block trace (blktrace, blkparse or tracefs text, fio
    /// iolog; plain, xz or gzip) through a scheduler on a
    /// simulated or real device, and compare its counts with the recording's.
    Replay(replay::Args),
    /// Run a workload (fio job or trace) over a grid of schedulers, devices,
    /// tunables, fio options and seeds on simulated devices, on every core,
    /// to a CSV that is written as results complete and resumes.
    Sweep(sweep::Args),
    /// Run one of the seeds' experiments, or all of them, and check the
    /// shapes they report.
    Experiment(experiment::Args),
    /// Measure the CPU cost per I/O of the core path (submit, merge attempt,
    /// insert, dispatch, complete) with no device.
    Microbench(microbench::Args),
    /// Serve exports over NBD (file:PATH, mem:SIZE, or a simulated disk on
    /// the real clock), each with its own scheduler, until SIGINT or SIGTERM.
    Serve(serve::Args),
    /// Run a job through fio's io_uring engine and through elevator on the
    /// same file, one after the other, and compare IOPS and CPU per I/O.
    BenchVsFio(bench_fio::Args),
    /// Run the same NBD clients (nbdcopy, fio's nbd engine) against
    /// `nbdkit memory` and `elevator serve` with a memory export (and a
    /// sparse file), and compare throughput and the servers' CPU per unit
    /// of work.
    BenchVsNbdkit(bench_nbd::Args),
    /// What `serve --write-log` costs: a memory export without and with a
    /// write log, under nbdcopy and fio, in alternating rounds.
    BenchWriteLog(bench_write_log::Args),
    /// Trace tools: convert a trace (blktrace, blkparse text, tracefs text,
    /// fio iolog) to blktrace, blkparse text or a fio iolog (`convert`), and
    /// time the converters (`bench-convert`).
    Trace(trace_cmd::Args),
    /// Write logs: print one (`show`), apply its writes onto an image
    /// (`replay`), or put a mark in a running server's log (`mark`).
    WriteLog(write_log_cmd::Args),
    /// Build the images a power cut could leave, from a write log, and run
    /// a checker on each.
    CrashStates(crash_states::Args),
    /// List the device presets with their parameters.
    Devices,
    /// List the I/O schedulers with their tunables and Linux defaults.
    Schedulers,
    /// Internal: the instruction-count regression guard (scripts/perf-guard)
    /// and its scenarios, run under callgrind. Hidden from --help.
    #[command(hide = true)]
    CostScenario(cost_scenario::Args),
}

fn main() -> ExitCode {
    // A closed stdout ends any command quietly, by SIGPIPE (sockets keep
    // SIGPIPE ignored: see the module).
    closed_stdout::install();
    let (args, fio) = fio_args::split::<Cli>(std::env::args_os().collect());
    let parsed = Cli::command()
        .try_get_matches_from(args)
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    let (cli, matches) = parsed.unwrap_or_else(|e| {
        // What clap's exit() does, but a closed stdout (--help piped
        // into a reader that is gone) ends by SIGPIPE like the rest.
        if let Err(io) = e.print() {
            closed_stdout::exit_if_closed(&io.into());
        }
        std::process::exit(e.exit_code())
    });
    let result = match cli.command {
        Command::Microbench(args) => microbench::run(&args),
        Command::Run(mut args) => fio_args::check_names::<Cli>("run", &fio).and_then(|()| {
            args.fio = fio;
            args.device_given = matches
                .subcommand_matches("run")
                .is_some_and(|run| run.value_source("device") == Some(ValueSource::CommandLine));
            run::run(&args)
        }),
        Command::Compare(mut args) => {
            fio_args::check_names::<Cli>("compare", &fio).and_then(|()| {
                args.fio = fio;
                run::compare(&args)
            })
        }
        Command::Advise(mut args) => fio_args::check_names::<Cli>("advise", &fio).and_then(|()| {
            args.fio = fio;
            advise::run(&args)
        }),
        Command::Experiment(args) => experiment::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::BenchVsFio(args) => bench_fio::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::BenchVsNbdkit(args) => bench_nbd::run(&args),
        Command::BenchWriteLog(args) => bench_write_log::run(&args),
        Command::Trace(args) => trace_cmd::run(&args),
        Command::WriteLog(args) => write_log_cmd::run(&args),
        Command::CrashStates(args) => crash_states::run(&args),
        Command::Devices => devices::devices(),
        Command::Schedulers => list::schedulers(),
        Command::CostScenario(args) => cost_scenario::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            closed_stdout::exit_if_closed(&e);
            eprintln!("elevator: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
