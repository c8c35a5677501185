//! `elevator bench-write-log`: what `--write-log` costs. `elevator serve`
//! with a memory export, without and then with a write log (in
//! `--log-dir`), under the same clients, over a Unix socket: `nbdcopy` of a file of random bytes into the
//! export over one connection and over four, and fio's `nbd` engine with
//! 4 KiB random writes and random reads at depth 16 over four connections.
//! Rounds alternate which server goes first; the table shows each figure's
//! median and the median and range of the per-round ratio logged / plain.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use elevator_sim::device::{ParamUnit, parse_param};

use crate::bench_nbd::peers::{self, Address, Running, Transport, need};
use crate::bench_nbd::{median, min_max};

/// Options of `elevator bench-write-log`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Export size (and bytes nbdcopy moves).
    #[arg(long, default_value = "512m")]
    size: String,
    /// Seconds per fio run.
    #[arg(long, default_value_t = 5)]
    runtime: u32,
    /// Rounds (each runs both servers).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Where the socket and the source file go.
    #[arg(long, default_value = "/dev/shm")]
    dir: PathBuf,
    /// Where the write log goes (default: `--dir`, in memory, as this
    /// benchmark has always measured it). Give a directory on a disk, such
    /// as /var/tmp, to measure a log kept where it survives a reboot: there
    /// it is written with O_DIRECT by the log's own threads.
    #[arg(long)]
    log_dir: Option<PathBuf>,
}

/// What a workload runs.
#[derive(Clone, Copy, Debug)]
enum Client {
    /// nbdcopy from the source file into the export, over N connections.
    CopyIn(u32),
    /// fio's nbd engine: this access pattern, N jobs.
    Fio(&'static str, u32),
}

/// The workloads, with their names and units.
const WORKLOADS: [(&str, &str, Client); 4] = [
    ("nbdcopy in, 1 connection", "MB/s", Client::CopyIn(1)),
    ("nbdcopy in, 4 connections", "MB/s", Client::CopyIn(4)),
    (
        "fio randwrite 4k, 4 jobs",
        "IOPS",
        Client::Fio("randwrite", 4),
    ),
    (
        "fio randread 4k, 4 jobs",
        "IOPS",
        Client::Fio("randread", 4),
    ),
];

/// Run `elevator bench-write-log`.
pub fn run(args: &Args) -> Result<()> {
    need("nbdcopy", "libnbd-bin")?;
    need("fio", "fio")?;
    if args.rounds == 0 {
        bail!("--rounds: at least one");
    }
    let size = parse_param("bench", "--size", ParamUnit::Bytes, &args.size)? as u64;
    let pid = std::process::id();
    let at = |what: &str| args.dir.join(format!("elevator-bench-{pid}-{what}"));
    let (source, socket, server_log) = (at("src.img"), at("nbd.sock"), at("server.log"));
    let log_dir = args.log_dir.as_ref().unwrap_or(&args.dir);
    for (flag, dir) in [("--dir", &args.dir), ("--log-dir", log_dir)] {
        if !dir.is_dir() {
            bail!("{flag} {}: not a directory", dir.display());
        }
    }
    let write_log = log_dir.join(format!("elevator-bench-{pid}-w.wlog"));
    let me = std::env::current_exe().context("finding the elevator binary")?;
    // figures[workload][logged] per round.
    let mut figures: Vec<[Vec<f64>; 2]> = WORKLOADS.iter().map(|_| Default::default()).collect();
    let mut log_bytes = 0u64;
    let result = (|| -> Result<()> {
        peers::write_random(&source, size, u64::from(pid))?;
        for round in 0..args.rounds {
            let order = if round % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for logged in order {
                eprintln!(
                    "round {}/{}: elevator serve{}",
                    round + 1,
                    args.rounds,
                    if logged { " --write-log" } else { "" }
                );
                for (w, (_, _, client)) in WORKLOADS.iter().enumerate() {
                    // A fresh server (and log) for each workload, so that
                    // every log starts empty.
                    let mut cmd = Command::new(&me);
                    cmd.args([
                        "serve",
                        "--export",
                        &format!("bench=mem:{size},scheduler=none"),
                    ]);
                    let address = Address::new(Transport::Unix, &socket)?;
                    cmd.args(address.elevator_args());
                    if logged {
                        cmd.arg("--write-log").arg(&write_log);
                    }
                    let running = Running::start(cmd, address, &server_log)?;
                    let uri = running.address().uri("bench");
                    let figure = match *client {
                        Client::CopyIn(n) => {
                            peers::nbdcopy(&source.display().to_string(), &uri, n, size)?
                        }
                        Client::Fio(rw, jobs) => peers::fio(&uri, rw, jobs, size, args.runtime)?,
                    };
                    running.stop();
                    if logged {
                        let len = std::fs::metadata(&write_log).map_or(0, |m| m.len());
                        log_bytes = log_bytes.max(len);
                        let _ = std::fs::remove_file(&write_log);
                    }
                    figures[w][usize::from(logged)].push(figure);
                }
            }
        }
        Ok(())
    })();
    for path in [&source, &socket, &server_log, &write_log] {
        let _ = std::fs::remove_file(path);
    }
    result?;
    println!(
        "elevator serve, mem:{} export, scheduler none, Unix socket, log in {}; {} rounds; median (per-round ratio range)",
        args.size,
        log_dir.display(),
        args.rounds
    );
    println!(
        "{:<28} {:>12} {:>16} {:>22}",
        "workload", "plain", "--write-log", "logged / plain"
    );
    for (w, (name, unit, _)) in WORKLOADS.iter().enumerate() {
        let [plain, logged] = &figures[w];
        let ratios: Vec<f64> = plain
            .iter()
            .zip(logged)
            .map(|(p, l)| if *p > 0.0 { l / p } else { f64::NAN })
            .collect();
        let (lo, hi) = min_max(&ratios);
        let ratio = median(&ratios);
        println!(
            "{:<28} {:>7.0} {:<4} {:>11.0} {:<4} {:>8.2} ({:.2}-{:.2})",
            name,
            median(plain),
            unit,
            median(logged),
            unit,
            ratio,
            lo,
            hi
        );
    }
    println!(
        "largest write log: {:.0} MiB",
        log_bytes as f64 / f64::from(1 << 20)
    );
    Ok(())
}
