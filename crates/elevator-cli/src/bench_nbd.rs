//! `elevator bench-vs-nbdkit`: `elevator serve` with a memory export beside
//! `nbdkit memory`, under the same clients, one server after the other,
//! over a Unix socket and over TCP loopback.
//!
//! Each round, for each transport, starts one server (elevator with its
//! default worker threads, nbdkit with its default threads) and runs, in
//! this order: `nbdcopy` of a file of random bytes into the fresh export
//! over one connection (the server also pays for the machine handing it
//! fresh pages), the same again over one connection and over four (into
//! touched memory), fio's `nbd` engine with 4 KiB random reads and then
//! random writes at depth 16 with one job and with four (a connection
//! each), and `nbdcopy` of the export to `null:` over one connection and
//! over four; then stops it and does the same with the other server. Then
//! each serves a sparse file (a tenth of it data) and `nbdcopy` copies it to
//! `null:` over four connections; the servers' own counts (elevator's log,
//! nbdkit's stats filter) say how many bytes that read. Rounds alternate
//! which server goes first. The table shows each figure's median over the
//! rounds, and the median and range of the per-round ratio
//! elevator / nbdkit; a second table, each server's CPU time (user and
//! system, from `/proc/<pid>/stat`) per MB copied or per fio request, and
//! the ratio nbdkit / elevator. `--only` runs some of the workloads.

pub(crate) mod peers;

use std::io::Write;
use std::process::Command;

use anyhow::{Context, Result, bail};
use elevator_sim::device::{ParamUnit, parse_param};

use peers::{Address, Running, Transport, need};

/// Options of `elevator bench-vs-nbdkit`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Export size (and bytes nbdcopy moves).
    #[arg(long, default_value = "1g")]
    size: String,
    /// Seconds per fio run.
    #[arg(long, default_value_t = 10)]
    runtime: u32,
    /// Rounds (each runs both servers on both transports).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// elevator's scheduler.
    #[arg(long, default_value = "none")]
    scheduler: String,
    /// Size of the sparse file export (a tenth of it data).
    #[arg(long, default_value = "1g")]
    sparse_size: String,
    /// Where the sockets, the source file and the sparse file go.
    #[arg(long, default_value = "/dev/shm")]
    dir: std::path::PathBuf,
    /// Run only the workloads whose name holds one of these words (commas
    /// between them; `sparse` selects the sparse copy), e.g. `--only
    /// nbdcopy` or `--only "in, 1,out, 4"`. The first copy in then finds
    /// the export fresh, whatever its name says.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// The `elevator` binary that serves (default: this one), to measure
    /// another build with this bench.
    #[arg(long)]
    server: Option<std::path::PathBuf>,
}

impl Args {
    /// Whether the workload named `name` runs.
    fn runs(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|w| name.contains(w.as_str()))
    }
}

/// What a workload runs.
#[derive(Clone, Copy, Debug)]
enum Client {
    /// nbdcopy from the source file into the export, over N connections.
    CopyIn(u32),
    /// fio's nbd engine: this access pattern, N jobs.
    Fio(&'static str, u32),
    /// nbdcopy from the export to `null:`, over N connections.
    CopyOut(u32),
}

/// A row of the table: its name, unit, and client.
struct Workload {
    name: &'static str,
    unit: &'static str,
    client: Client,
}

impl Workload {
    /// The work done at `figure` of its unit: MB copied for a copy (the
    /// size), requests for fio (IOPS × `runtime` seconds).
    fn work(&self, figure: f64, size: u64, runtime: u32) -> f64 {
        match self.client {
            Client::Fio(..) => figure * f64::from(runtime),
            Client::CopyIn(_) | Client::CopyOut(_) => size as f64 / 1e6,
        }
    }

    /// What [`Workload::work`] counts, per which CPU time is shown.
    fn per(&self) -> &'static str {
        match self.client {
            Client::Fio(..) => "us/IO",
            Client::CopyIn(_) | Client::CopyOut(_) => "us/MB",
        }
    }
}

/// The sparse copy's name.
fn sparse_name() -> String {
    format!("nbdcopy sparse out, {SPARSE_CONNECTIONS} conns")
}

/// The workloads on the memory export, in the order they run (the first
/// finds the export fresh).
const WORKLOADS: [Workload; 9] = [
    Workload {
        name: "nbdcopy in, fresh, 1 conn",
        unit: "MB/s",
        client: Client::CopyIn(1),
    },
    Workload {
        name: "nbdcopy in, 1 conn",
        unit: "MB/s",
        client: Client::CopyIn(1),
    },
    Workload {
        name: "nbdcopy in, 4 conns",
        unit: "MB/s",
        client: Client::CopyIn(4),
    },
    Workload {
        name: "fio randread 4k QD16, 1 conn",
        unit: "IOPS",
        client: Client::Fio("randread", 1),
    },
    Workload {
        name: "fio randread 4k QD16, 4 conns",
        unit: "IOPS",
        client: Client::Fio("randread", 4),
    },
    Workload {
        name: "fio randwrite 4k QD16, 1 conn",
        unit: "IOPS",
        client: Client::Fio("randwrite", 1),
    },
    Workload {
        name: "fio randwrite 4k QD16, 4 conns",
        unit: "IOPS",
        client: Client::Fio("randwrite", 4),
    },
    Workload {
        name: "nbdcopy out, 1 conn",
        unit: "MB/s",
        client: Client::CopyOut(1),
    },
    Workload {
        name: "nbdcopy out, 4 conns",
        unit: "MB/s",
        client: Client::CopyOut(4),
    },
];

/// Connections of the sparse copy.
const SPARSE_CONNECTIONS: u32 = 4;

/// The two servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Server {
    Nbdkit,
    Elevator,
}

/// One server's figures on one transport in one round.
#[derive(Clone, Debug, Default)]
struct Figures {
    /// Per workload that ran, in [`WORKLOADS`] order.
    workloads: Vec<f64>,
    /// The server's CPU time (user and system) per unit of work
    /// ([`Workload::work`]) in µs, per workload that ran.
    cpu: Vec<f64>,
    /// The sparse copy's apparent speed (file size / time), MB/s.
    sparse_mbps: f64,
    /// The bytes the sparse copy read, as a fraction of the file.
    sparse_read: f64,
}

/// One transport's figures: per round, [nbdkit, elevator].
type Rounds = Vec<[Figures; 2]>;

/// Everything one run needs to know.
struct Bench<'a> {
    args: &'a Args,
    size: u64,
    sparse_size: u64,
    source: std::path::PathBuf,
    sparse: std::path::PathBuf,
    socket: std::path::PathBuf,
    log: std::path::PathBuf,
    stats: std::path::PathBuf,
    me: std::path::PathBuf,
}

impl Bench<'_> {
    /// `nbdkit -f` listening on `address`, its plugin `args` after.
    fn nbdkit(address: &Address, args: &[&str]) -> Command {
        let mut cmd = Command::new("nbdkit");
        cmd.arg("-f").args(address.nbdkit_args()).args(args);
        cmd
    }

    /// `elevator serve` of `export` with the bench's scheduler, listening
    /// on `address`.
    fn elevator(&self, export: &str, address: &Address) -> Command {
        let mut cmd = Command::new(&self.me);
        cmd.args([
            "serve",
            "--export",
            &format!("{export},scheduler={}", self.args.scheduler),
        ])
        .args(address.elevator_args());
        cmd
    }

    /// Start `server` serving a memory export of the bench's size.
    fn start_mem(&self, server: Server, address: Address) -> Result<Running> {
        let cmd = match server {
            Server::Nbdkit => Bench::nbdkit(&address, &["memory", &self.size.to_string()]),
            Server::Elevator => self.elevator(&format!("bench=mem:{}", self.size), &address),
        };
        Running::start(cmd, address, &self.log)
    }

    /// Start `server` serving the sparse file (nbdkit through its stats
    /// filter, which counts the bytes read).
    fn start_sparse(&self, server: Server, address: Address) -> Result<Running> {
        let file = self.sparse.display().to_string();
        let cmd = match server {
            Server::Nbdkit => {
                let _ = std::fs::remove_file(&self.stats);
                let mut cmd = Bench::nbdkit(&address, &["--filter=stats", "file", &file]);
                cmd.arg(format!("statsfile={}", self.stats.display()));
                cmd
            }
            Server::Elevator => self.elevator(&format!("sparse=file:{file}"), &address),
        };
        Running::start(cmd, address, &self.log)
    }

    /// Every figure of `server` on `transport`.
    fn measure(&self, server: Server, transport: Transport) -> Result<Figures> {
        let mut figures = Figures::default();
        let running = self.start_mem(server, Address::new(transport, &self.socket)?)?;
        let uri = running.address().uri("bench");
        let source = self.source.display().to_string();
        for w in WORKLOADS.iter().filter(|w| self.args.runs(w.name)) {
            let before = running.cpu_seconds()?;
            let figure = match w.client {
                Client::CopyIn(n) => peers::nbdcopy(&source, &uri, n, self.size)?,
                Client::Fio(rw, jobs) => peers::fio(&uri, rw, jobs, self.size, self.args.runtime)?,
                Client::CopyOut(n) => peers::nbdcopy(&uri, "null:", n, self.size)?,
            };
            let cpu = running.cpu_seconds()? - before;
            let work = w.work(figure, self.size, self.args.runtime);
            figures.workloads.push(figure);
            figures.cpu.push(1e6 * cpu / work.max(f64::MIN_POSITIVE));
        }
        running.stop();
        if !self.args.runs(&sparse_name()) {
            return Ok(figures);
        }

        let running = self.start_sparse(server, Address::new(transport, &self.socket)?)?;
        let uri = running.address().uri("sparse");
        figures.sparse_mbps = peers::nbdcopy(&uri, "null:", SPARSE_CONNECTIONS, self.sparse_size)?;
        running.stop();
        let read = match server {
            Server::Nbdkit => {
                let stats = std::fs::read_to_string(&self.stats)
                    .with_context(|| format!("reading {}", self.stats.display()))?;
                peers::nbdkit_read_bytes(&stats)?
            }
            Server::Elevator => {
                let log = std::fs::read_to_string(&self.log)
                    .with_context(|| format!("reading {}", self.log.display()))?;
                peers::elevator_read_bytes(&log, "sparse")?
            }
        };
        figures.sparse_read = read as f64 / self.sparse_size as f64;
        Ok(figures)
    }
}

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

pub(crate) fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

/// Run `elevator bench-vs-nbdkit`.
pub fn run(args: &Args) -> Result<()> {
    need("nbdkit", "nbdkit")?;
    need("nbdcopy", "libnbd-bin")?;
    need("fio", "fio")?;
    if args.rounds == 0 {
        bail!("--rounds: at least one");
    }
    let size = parse_param("bench", "--size", ParamUnit::Bytes, &args.size)? as u64;
    let sparse_size = parse_param(
        "bench",
        "--sparse-size",
        ParamUnit::Bytes,
        &args.sparse_size,
    )? as u64;
    let pid = std::process::id();
    let at = |what: &str| args.dir.join(format!("elevator-bench-{pid}-{what}"));
    let bench = Bench {
        args,
        size,
        sparse_size,
        source: at("src.img"),
        sparse: at("sparse.img"),
        socket: at("nbd.sock"),
        log: at("server.log"),
        stats: at("nbdkit.stats"),
        me: match &args.server {
            Some(path) => path.clone(),
            None => std::env::current_exe().context("finding the elevator binary")?,
        },
    };
    let result = (|| -> Result<([Rounds; 2], u64)> {
        // Random bytes, so that nothing can be skipped as zero.
        peers::write_random(&bench.source, size, u64::from(pid))?;
        let data = peers::write_sparse(&bench.sparse, sparse_size, u64::from(pid))?;
        let mut by_transport: [Rounds; 2] = [Vec::new(), Vec::new()];
        for round in 0..args.rounds {
            let order = if round % 2 == 0 {
                [Server::Nbdkit, Server::Elevator]
            } else {
                [Server::Elevator, Server::Nbdkit]
            };
            for (t, transport) in Transport::ALL.into_iter().enumerate() {
                let mut pair: [Figures; 2] = Default::default();
                for server in order {
                    eprintln!(
                        "round {}/{}, {}: {}",
                        round + 1,
                        args.rounds,
                        transport.name(),
                        match server {
                            Server::Nbdkit => "nbdkit",
                            Server::Elevator => "elevator serve",
                        }
                    );
                    let i = usize::from(server == Server::Elevator);
                    pair[i] = bench.measure(server, transport)?;
                }
                by_transport[t].push(pair);
            }
        }
        Ok((by_transport, data))
    })();
    for path in [
        &bench.source,
        &bench.sparse,
        &bench.socket,
        &bench.log,
        &bench.stats,
    ] {
        let _ = std::fs::remove_file(path);
    }
    let (by_transport, data) = result?;
    print_table(args, sparse_size, data, &by_transport)
}

fn print_table(args: &Args, sparse_size: u64, data: u64, by_transport: &[Rounds]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "nbdkit memory vs elevator serve mem: (scheduler {}, default threads), {} export, {} round{}",
        args.scheduler,
        args.size,
        args.rounds,
        if args.rounds == 1 { "" } else { "s" }
    )?;
    writeln!(
        out,
        "{:<32} {:<4} {:>5} {:>9} {:>9} {:>6} {:>11}",
        "workload", "via", "unit", "nbdkit", "elevator", "ratio", "range"
    )?;
    let row = |out: &mut dyn Write,
               name: &str,
               via: &str,
               unit: &str,
               rounds: &Rounds,
               pick: &dyn Fn(&Figures) -> f64,
               less_is_more: bool|
     -> Result<()> {
        let kit: Vec<f64> = rounds.iter().map(|r| pick(&r[0])).collect();
        let ours: Vec<f64> = rounds.iter().map(|r| pick(&r[1])).collect();
        let ratios: Vec<f64> = kit
            .iter()
            .zip(&ours)
            .map(|(&a, &b)| if less_is_more { (a, b) } else { (b, a) })
            .map(|(a, b)| a / b.max(f64::MIN_POSITIVE))
            .collect();
        let (lo, hi) = min_max(&ratios);
        // CPU times (the figures where less is more) are small numbers.
        let digits = usize::from(less_is_more);
        writeln!(
            out,
            "{name:<32} {via:<4} {unit:>5} {:>9.digits$} {:>9.digits$} {:>6.2} {:>11}",
            median(&kit),
            median(&ours),
            median(&ratios),
            format!("{lo:.2}-{hi:.2}")
        )?;
        Ok(())
    };
    let ran = || WORKLOADS.iter().filter(|w| args.runs(w.name)).enumerate();
    for (i, w) in ran() {
        for (t, transport) in Transport::ALL.into_iter().enumerate() {
            row(
                &mut out,
                w.name,
                transport.name(),
                w.unit,
                &by_transport[t],
                &|f| f.workloads[i],
                false,
            )?;
        }
    }
    let sparse = args.runs(&sparse_name());
    if sparse {
        for (t, transport) in Transport::ALL.into_iter().enumerate() {
            row(
                &mut out,
                &sparse_name(),
                transport.name(),
                "MB/s",
                &by_transport[t],
                &|f| f.sparse_mbps,
                false,
            )?;
        }
    }
    writeln!(
        out,
        "\nserver CPU time (user+sys) per unit of work; ratio nbdkit / elevator (above 1: \
         elevator spends less)"
    )?;
    for (i, w) in ran() {
        for (t, transport) in Transport::ALL.into_iter().enumerate() {
            row(
                &mut out,
                w.name,
                transport.name(),
                w.per(),
                &by_transport[t],
                &|f| f.cpu[i],
                true,
            )?;
        }
    }
    if !sparse {
        return Ok(());
    }
    writeln!(
        out,
        "\nsparse copy: a {} file, {:.1}% of it data; bytes each server read (median):",
        args.sparse_size,
        100.0 * data as f64 / sparse_size as f64
    )?;
    for (t, transport) in Transport::ALL.into_iter().enumerate() {
        let rounds = &by_transport[t];
        let kit: Vec<f64> = rounds.iter().map(|r| r[0].sparse_read).collect();
        let ours: Vec<f64> = rounds.iter().map(|r| r[1].sparse_read).collect();
        writeln!(
            out,
            "  {:<4} nbdkit {:>5.1}%   elevator {:>5.1}%",
            transport.name(),
            100.0 * median(&kit),
            100.0 * median(&ours)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_ranges() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(min_max(&[2.0, 0.5, 1.0]), (0.5, 2.0));
    }

    #[test]
    fn the_sparse_file_is_a_tenth_data() {
        let dir = std::env::temp_dir().join(format!("elevator-sparse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let path = dir.join("sparse.img");
        let data = peers::write_sparse(&path, 100 << 20, 1).expect("writing a sparse file");
        assert_eq!(data, 10 << 20);
        assert_eq!(
            std::fs::metadata(&path).expect("stat").len(),
            100 << 20,
            "its size"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
