//! `elevator bench-vs-nbdkit`: `elevator serve` with a memory export beside
//! `nbdkit memory`, under the same clients, one after the other.
//!
//! Each round starts one server on a Unix socket, then runs: `nbdcopy` of a
//! file of random bytes into the export (upload), the same again (now the
//! server's memory is touched: the first upload also pays for the machine
//! handing the server fresh pages, which varies a lot), fio's `nbd` engine with
//! 4 KiB random reads and then random writes at depth 16, and `nbdcopy` of the
//! export to `/dev/null` (download); then stops the server and does the same
//! with the other. Rounds alternate the order; the table shows each figure's
//! median.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use elevator_sim::device::{ParamUnit, parse_param};
use serde_json::Value;

/// Options of `elevator bench-vs-nbdkit`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Export size (and bytes nbdcopy moves).
    #[arg(long, default_value = "1g")]
    size: String,
    /// Seconds per fio run.
    #[arg(long, default_value_t = 10)]
    runtime: u32,
    /// Rounds (each runs both servers).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// elevator's scheduler.
    #[arg(long, default_value = "none")]
    scheduler: String,
    /// Where the sockets and the source file go.
    #[arg(long, default_value = "/dev/shm")]
    dir: PathBuf,
}

/// A table row: workload, unit, and which figure.
type Row = (&'static str, &'static str, fn(&Figures) -> f64);

/// One server's figures in one round.
#[derive(Clone, Copy, Debug, Default)]
struct Figures {
    randread_iops: f64,
    randwrite_iops: f64,
    upload_mbps: f64,
    upload_again_mbps: f64,
    download_mbps: f64,
}

fn need(tool: &str, package: &str) -> Result<()> {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        bail!("{tool} is not installed (apt-get install {package})");
    }
    Ok(())
}

/// A server process, stopped when dropped.
struct Running(Child, PathBuf);

impl Drop for Running {
    fn drop(&mut self) {
        // SIGTERM first (elevator shuts down cleanly on it), then make sure.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.0.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                let _ = std::fs::remove_file(&self.1);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_file(&self.1);
    }
}

fn start(mut cmd: Command, socket: &Path) -> Result<Running> {
    let _ = std::fs::remove_file(socket);
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting a server")?;
    let running = Running(child, socket.to_path_buf());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !socket.exists() {
        if Instant::now() > deadline {
            bail!(
                "the server did not create {} within a minute",
                socket.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(running)
}

fn fio(uri: &str, rw: &str, size: u64, runtime: u32) -> Result<f64> {
    let out = Command::new("fio")
        .args([
            "--name=bench",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            &format!("--rw={rw}"),
            "--bs=4k",
            "--iodepth=16",
            &format!("--size={size}"),
            &format!("--runtime={runtime}"),
            "--time_based",
            "--output-format=json",
        ])
        .output()
        .context("running fio")?;
    if !out.status.success() {
        bail!(
            "fio failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find('{').context("fio printed no JSON")?;
    let v: Value = serde_json::from_str(&text[start..]).context("reading fio's JSON")?;
    let job = &v["jobs"][0];
    Ok(job["read"]["iops"].as_f64().unwrap_or(0.0) + job["write"]["iops"].as_f64().unwrap_or(0.0))
}

/// `nbdcopy from to`, in MB/s for `bytes`.
fn nbdcopy(from: &str, to: &str, bytes: u64) -> Result<f64> {
    let t = Instant::now();
    let out = Command::new("nbdcopy")
        .args([from, to])
        .output()
        .context("running nbdcopy")?;
    if !out.status.success() {
        bail!(
            "nbdcopy failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(bytes as f64 / t.elapsed().as_secs_f64() / 1e6)
}

fn measure(uri: &str, source: &Path, size: u64, runtime: u32) -> Result<Figures> {
    let source = source.display().to_string();
    let upload_mbps = nbdcopy(&source, uri, size)?;
    let upload_again_mbps = nbdcopy(&source, uri, size)?;
    let randread_iops = fio(uri, "randread", size, runtime)?;
    let randwrite_iops = fio(uri, "randwrite", size, runtime)?;
    let download_mbps = nbdcopy(uri, "null:", size)?;
    Ok(Figures {
        randread_iops,
        randwrite_iops,
        upload_mbps,
        upload_again_mbps,
        download_mbps,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
    let pid = std::process::id();
    let source = args.dir.join(format!("elevator-bench-src-{pid}.img"));
    let sock = args.dir.join(format!("elevator-bench-{pid}.sock"));
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let me = std::env::current_exe().context("finding the elevator binary")?;
    // Random bytes, so that nothing can be skipped as zero.
    {
        let mut f = std::fs::File::create(&source)
            .with_context(|| format!("creating {}", source.display()))?;
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(pid);
        let mut block = vec![0u8; 1 << 20];
        let mut left = size;
        while left > 0 {
            for chunk in block.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
            }
            let n = left.min(block.len() as u64) as usize;
            f.write_all(&block[..n])?;
            left -= n as u64;
        }
    }
    let result = (|| -> Result<(Vec<Figures>, Vec<Figures>)> {
        let (mut nbdkit, mut ours) = (Vec::new(), Vec::new());
        for round in 0..args.rounds {
            for first in [round % 2 == 0, round % 2 == 1] {
                if first {
                    eprintln!("round {}/{}: nbdkit memory", round + 1, args.rounds);
                    let mut cmd = Command::new("nbdkit");
                    cmd.args(["-f", "-U"])
                        .arg(&sock)
                        .args(["memory", &size.to_string()]);
                    let _server = start(cmd, &sock)?;
                    nbdkit.push(measure(&uri, &source, size, args.runtime)?);
                } else {
                    eprintln!("round {}/{}: elevator serve", round + 1, args.rounds);
                    let mut cmd = Command::new(&me);
                    cmd.args([
                        "serve",
                        "--export",
                        &format!("bench=mem:{size},scheduler={}", args.scheduler),
                        "--unix",
                    ])
                    .arg(&sock);
                    let _server = start(cmd, &sock)?;
                    ours.push(measure(&uri, &source, size, args.runtime)?);
                }
            }
        }
        Ok((nbdkit, ours))
    })();
    let _ = std::fs::remove_file(&source);
    let (nbdkit, ours) = result?;
    let pick = |v: &[Figures], f: fn(&Figures) -> f64| median(v.iter().map(f).collect());
    let rows: [Row; 5] = [
        ("fio nbd randread 4k QD16", "IOPS", |f| f.randread_iops),
        ("fio nbd randwrite 4k QD16", "IOPS", |f| f.randwrite_iops),
        ("nbdcopy file -> export", "MB/s", |f| f.upload_mbps),
        ("  the same again", "MB/s", |f| f.upload_again_mbps),
        ("nbdcopy export -> null:", "MB/s", |f| f.download_mbps),
    ];
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "nbdkit memory vs elevator serve mem: (scheduler {}), {} export, Unix socket, {} round{} (medians)",
        args.scheduler,
        args.size,
        args.rounds,
        if args.rounds == 1 { "" } else { "s" }
    )?;
    writeln!(
        out,
        "{:<28} {:>6} {:>12} {:>12} {:>8}",
        "workload", "unit", "nbdkit", "elevator", "ratio"
    )?;
    for (name, unit, f) in rows {
        let (a, b) = (pick(&nbdkit, f), pick(&ours, f));
        writeln!(
            out,
            "{name:<28} {unit:>6} {a:>12.0} {b:>12.0} {:>8.2}",
            b / a.max(f64::MIN_POSITIVE)
        )?;
    }
    if args.rounds > 1 {
        writeln!(out, "\nevery round (nbdkit / elevator):")?;
        for (name, _, f) in rows {
            let each: Vec<String> = nbdkit
                .iter()
                .zip(&ours)
                .map(|(a, b)| format!("{:.0}/{:.0}", f(a), f(b)))
                .collect();
            writeln!(out, "{name:<28} {}", each.join("  "))?;
        }
    }
    Ok(())
}
