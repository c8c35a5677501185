//! The programs `bench-vs-nbdkit` runs: the two servers (started on a Unix
//! socket or a TCP loopback port, stopped when dropped) and the clients
//! (fio's `nbd` engine and `nbdcopy`), each reduced to the figure the table
//! shows; and what the servers say about the bytes they read.

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use elevator_core::rng::Rng;
use serde_json::Value;

/// How a client reaches a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A Unix socket in the bench's directory.
    Unix,
    /// TCP on 127.0.0.1, a port the kernel picked.
    Tcp,
}

impl Transport {
    /// Both, in the order the table shows them.
    pub const ALL: [Transport; 2] = [Transport::Unix, Transport::Tcp];

    /// Its name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
        }
    }
}

/// Where a server listens: a socket path or a loopback port.
pub enum Address {
    /// A Unix socket.
    Unix(PathBuf),
    /// A TCP port on 127.0.0.1.
    Tcp(u16),
}

impl Address {
    /// A fresh address of `transport`: `socket` for a Unix socket, or a
    /// port free a moment ago.
    pub fn new(transport: Transport, socket: &Path) -> Result<Address> {
        Ok(match transport {
            Transport::Unix => Address::Unix(socket.to_path_buf()),
            Transport::Tcp => {
                let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                    .context("finding a free TCP port")?;
                Address::Tcp(l.local_addr()?.port())
            }
        })
    }

    /// The NBD URI of `export` (the default export when empty).
    pub fn uri(&self, export: &str) -> String {
        match self {
            Address::Unix(p) => format!("nbd+unix:///{export}?socket={}", p.display()),
            Address::Tcp(port) => format!("nbd://127.0.0.1:{port}/{export}"),
        }
    }

    /// `nbdkit`'s options to listen here.
    pub fn nbdkit_args(&self) -> Vec<String> {
        match self {
            Address::Unix(p) => vec!["-U".into(), p.display().to_string()],
            Address::Tcp(port) => vec![
                "-i".into(),
                "127.0.0.1".into(),
                "-p".into(),
                port.to_string(),
            ],
        }
    }

    /// `elevator serve`'s options to listen here.
    pub fn elevator_args(&self) -> Vec<String> {
        match self {
            Address::Unix(p) => vec!["--unix".into(), p.display().to_string()],
            Address::Tcp(port) => vec!["--listen".into(), format!("127.0.0.1:{port}")],
        }
    }

    fn listening(&self) -> bool {
        match self {
            Address::Unix(p) => p.exists(),
            Address::Tcp(port) => TcpStream::connect((Ipv4Addr::LOCALHOST, *port)).is_ok(),
        }
    }

    fn clean_up(&self) {
        if let Address::Unix(p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Fail unless `tool` runs, naming its Debian package.
pub fn need(tool: &str, package: &str) -> Result<()> {
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

/// A server process, stopped (SIGTERM, then SIGKILL) when dropped.
pub struct Running {
    child: Child,
    address: Address,
}

impl Running {
    /// Start `cmd`, with its stderr to `log`, and wait until it listens at
    /// `address`.
    pub fn start(mut cmd: Command, address: Address, log: &Path) -> Result<Running> {
        address.clean_up();
        let log =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = cmd
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {cmd:?}"))?;
        let mut running = Running { child, address };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !running.address.listening() {
            if let Ok(Some(status)) = running.child.try_wait() {
                bail!("{cmd:?} exited ({status}) before it listened");
            }
            if Instant::now() > deadline {
                bail!("{cmd:?} did not listen within a minute");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(running)
    }

    /// Where it listens.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// The CPU time (user and system, all its threads) it has used so far,
    /// in seconds, from `/proc/<pid>/stat`.
    pub fn cpu_seconds(&self) -> Result<f64> {
        let path = format!("/proc/{}/stat", self.child.id());
        let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        stat_cpu_seconds(&stat, clock_ticks()).with_context(|| format!("parsing {path}"))
    }

    /// Stop it and wait for it to exit (so its log and statistics are
    /// complete).
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        // SIGTERM first (both servers finish cleanly on it), then make sure.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                self.address.clean_up();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.address.clean_up();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate();
        }
    }
}

/// The clock ticks per second `/proc/<pid>/stat` counts in (`getconf
/// CLK_TCK`; 100, Linux's, if that cannot tell).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|t| t.trim().parse::<f64>().ok())
            .filter(|&t| t > 0.0)
            .unwrap_or(100.0)
    })
}

/// User plus system time in seconds from the text of a `/proc/<pid>/stat`
/// (its 14th and 15th fields, in `ticks` per second; the second field, the
/// command name in parentheses, may hold spaces).
pub fn stat_cpu_seconds(stat: &str, ticks: f64) -> Result<f64> {
    let after_name = stat
        .rfind(')')
        .map(|i| &stat[i + 1..])
        .context("no command name")?;
    // Fields from the third (state) on: utime is the 14th, so the 12th here.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |i: usize| -> Result<f64> {
        fields
            .get(i)
            .context("too few fields")?
            .parse::<f64>()
            .context("a time that is not a number")
    };
    Ok((field(11)? + field(12)?) / ticks)
}

/// Run `cmd` (program `name`) to its end: its output, or what it said on
/// stderr as the error if it failed.
fn run_to_end(mut cmd: Command, name: &str) -> Result<std::process::Output> {
    let out = cmd.output().with_context(|| format!("running {name}"))?;
    if !out.status.success() {
        bail!(
            "{name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out)
}

/// fio's `nbd` engine on `uri`: `rw` of 4 KiB blocks at depth 16 over
/// `size` bytes for `runtime` s, with `jobs` jobs (each its own
/// connection); their IOPS summed.
pub fn fio(uri: &str, rw: &str, jobs: u32, size: u64, runtime: u32) -> Result<f64> {
    let mut cmd = Command::new("fio");
    cmd.args([
        "--name=bench",
        "--ioengine=nbd",
        &format!("--uri={uri}"),
        &format!("--rw={rw}"),
        "--bs=4k",
        "--iodepth=16",
        &format!("--numjobs={jobs}"),
        "--group_reporting",
        &format!("--size={size}"),
        &format!("--runtime={runtime}"),
        "--time_based",
        "--output-format=json",
    ]);
    let out = run_to_end(cmd, "fio")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find('{').context("fio printed no JSON")?;
    let v: Value = serde_json::from_str(&text[start..]).context("reading fio's JSON")?;
    let job = &v["jobs"][0];
    Ok(job["read"]["iops"].as_f64().unwrap_or(0.0) + job["write"]["iops"].as_f64().unwrap_or(0.0))
}

/// `nbdcopy from to` over `connections` connections (one thread each), in
/// MB/s of `bytes`.
pub fn nbdcopy(from: &str, to: &str, connections: u32, bytes: u64) -> Result<f64> {
    let t = Instant::now();
    let mut cmd = Command::new("nbdcopy");
    cmd.arg(format!("--connections={connections}"))
        .arg(format!("--threads={connections}"))
        .args([from, to]);
    run_to_end(cmd, "nbdcopy")?;
    Ok(bytes as f64 / t.elapsed().as_secs_f64() / 1e6)
}

/// Fill `block` with random bytes from `rng`.
fn fill_random(block: &mut [u8], rng: &mut Rng) {
    for chunk in block.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes()[..chunk.len()]);
    }
}

/// Write `size` bytes of random data (from `seed`) to `path`.
pub fn write_random(path: &Path, size: u64, seed: u64) -> Result<()> {
    let mut f =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15 ^ seed);
    let mut block = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        fill_random(&mut block, &mut rng);
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])
            .with_context(|| format!("writing {}", path.display()))?;
        left -= n as u64;
    }
    Ok(())
}

/// Make `path` a sparse file of `size` bytes whose first MiB of every
/// 10 MiB is random data (the rest holes); return the bytes of data.
pub fn write_sparse(path: &Path, size: u64, seed: u64) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    const MIB: u64 = 1 << 20;
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    f.set_len(size)
        .with_context(|| format!("sizing {}", path.display()))?;
    let mut rng = Rng::new(0x2545_F491_4F6C_DD1D ^ seed);
    let mut block = vec![0u8; MIB as usize];
    let mut data = 0;
    for at in (0..size).step_by(10 * MIB as usize) {
        fill_random(&mut block, &mut rng);
        let n = (size - at).min(MIB) as usize;
        f.write_all_at(&block[..n], at)
            .with_context(|| format!("writing {}", path.display()))?;
        data += n as u64;
    }
    Ok(data)
}

/// The bytes `elevator serve` read for clients of `export`, summed over the
/// connection lines of its log (`... N reads (B bytes) ...`).
pub fn elevator_read_bytes(log: &str, export: &str) -> Result<u64> {
    let needle = format!("export '{export}'");
    let mut total = 0;
    for line in log.lines().filter(|l| l.contains(&needle)) {
        let Some((_, after)) = line.split_once(" reads (") else {
            continue;
        };
        let bytes = after
            .split_once(" bytes)")
            .and_then(|(n, _)| n.parse::<u64>().ok())
            .with_context(|| format!("no read byte count in the log line {line:?}"))?;
        total += bytes;
    }
    Ok(total)
}

/// The bytes nbdkit's stats filter counted as read (its `read:` line:
/// `read: N ops, T s, X UNIT, ...`).
pub fn nbdkit_read_bytes(stats: &str) -> Result<u64> {
    let Some(line) = stats.lines().find(|l| l.starts_with("read:")) else {
        return Ok(0); // no reads at all
    };
    let amount = line
        .split(", ")
        .nth(2)
        .with_context(|| format!("nbdkit's stats line {line:?}"))?;
    let (value, unit) = amount
        .split_once(' ')
        .with_context(|| format!("nbdkit's stats amount {amount:?}"))?;
    let value: f64 = value
        .parse()
        .with_context(|| format!("nbdkit's stats amount {amount:?}"))?;
    let scale = match unit {
        "bytes" | "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => bail!("nbdkit's stats: unknown unit {other:?} in {line:?}"),
    };
    Ok((value * scale) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_from_a_stat_line() {
        let stat = "4242 (elevator (x) y) S 1 4242 4242 0 -1 4194560 2345 0 0 0 \
                    150 50 0 0 20 0 3 0 1000 100000 500 18446744073709551615";
        assert_eq!(stat_cpu_seconds(stat, 100.0).expect("parsed"), 2.0);
        assert!(stat_cpu_seconds("4242 (cut) S 1 2", 100.0).is_err());
        assert!(stat_cpu_seconds("no name", 100.0).is_err());
    }

    #[test]
    fn read_bytes_from_the_servers_words() {
        let log = "elevator serve: listening on x\n\
            elevator serve: unix:/s export 'sparse' after 1.0 s: 3 reads (12288 bytes), 0 writes (0 bytes), 0 errors; client disconnected (DISC)\n\
            elevator serve: unix:/s export 'other' after 1.0 s: 1 reads (4096 bytes), 0 writes (0 bytes), 0 errors; x\n\
            elevator serve: unix:/s export 'sparse' after 1.0 s: 1 reads (4096 bytes), 0 writes (0 bytes), 0 errors; x\n";
        assert_eq!(elevator_read_bytes(log, "sparse").ok(), Some(16384));
        let stats = "total: 9 ops, 0.47 s, 2.00 MiB, 4.25 MiB/s\n\
            read: 8 ops, 0.000625 s, 2.00 MiB, 3.12 GiB/s op, 4.25 MiB/s total\n";
        assert_eq!(nbdkit_read_bytes(stats).ok(), Some(2 << 20));
        assert_eq!(nbdkit_read_bytes("total: 0 ops\n").ok(), Some(0));
        assert!(nbdkit_read_bytes("read: 1 ops, 0 s, 2.00 XiB, x\n").is_err());
    }
}
