//! Every command on hostile input, under an address-space limit and a time
//! limit: each case must end by itself, refuse what is wrong with a message
//! that names it, and never panic, abort or be killed. The limit (1 GiB of
//! address space, through `prlimit`) turns an unbounded allocation into a
//! failed case rather than a machine out of memory.
//!
//! The cases are grouped by the kind of input; the test prints the table of
//! counts per kind, and docs/reliability.md holds the same
//! table (checked here, so that its figures are the test's).

use crate::common;

use common::crc32;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The address-space limit every case runs under.
const ADDRESS_SPACE: u64 = 1 << 30;
/// How long a case may run before it counts as hung (a guard, not a
/// measurement: every case here ends in well under a second when right).
const TIME_LIMIT: Duration = Duration::from_secs(120);

/// What a case must do.
#[derive(Clone, Debug)]
enum Expect {
    /// Exit non-zero with this text in its message.
    Refused(&'static str),
    /// Exit zero (the input is odd but valid, and the run stays bounded).
    Runs,
    /// Its standard output is closed before it writes: it ends quietly,
    /// by SIGPIPE or with status 0, without a panic.
    ClosedStdout,
}

/// Where the case's standard input comes from.
enum Input {
    None,
    /// These bytes.
    Bytes(Vec<u8>),
    /// `len` bytes made by repeating `unit`, streamed (the command may
    /// stop reading early).
    Stream {
        unit: Vec<u8>,
        len: u64,
    },
}

struct Case {
    kind: &'static str,
    what: String,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    input: Input,
    /// A file its standard output goes to (else a pipe the test drains).
    stdout: Option<&'static str>,
    expect: Expect,
}

fn case(kind: &'static str, what: &str, args: &[&str], expect: Expect) -> Case {
    Case {
        kind,
        what: what.to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: Vec::new(),
        input: Input::None,
        stdout: None,
        expect,
    }
}

impl Case {
    fn env(mut self, name: &'static str, value: String) -> Case {
        self.env.push((name, value));
        self
    }

    fn stdout_to(mut self, path: &'static str) -> Case {
        self.stdout = Some(path);
        self
    }

    fn stdin(mut self, input: Input) -> Case {
        self.input = input;
        self
    }
}

/// A scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let dir = std::env::temp_dir().join(format!("elevator-hostile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch directory");
        Scratch(dir)
    }

    /// Write `name` with `bytes`; its path.
    fn file(&self, name: &str, bytes: impl AsRef<[u8]>) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("write scratch file");
        path.to_str().expect("utf-8 path").to_string()
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().expect("utf-8 path").to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A tracefs line for one bio.
fn tracefs_bio(dev: &str, rwbs: &str, sector: &str, sectors: &str) -> String {
    format!(
        "       postgres-1   [000] .....  1.000000: block_bio_queue: {dev} {rwbs} {sector} + {sectors} [postgres]\n"
    )
}

/// A blkparse line for one queued bio.
fn blkparse_bio(sector: &str, sectors: &str) -> String {
    format!("  7,0    0        1     0.000000000  4321  Q   W {sector} + {sectors} [postgres]\n")
}

/// A write log header (the format in elevator-trace's write_log module).
fn write_log_header(capacity: u64, block_size: u32, reserved: u8) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..8].copy_from_slice(b"ELVWLOG\0");
    h[8..12].copy_from_slice(&1u32.to_le_bytes());
    h[12..16].copy_from_slice(&1u32.to_le_bytes());
    h[16..24].copy_from_slice(&capacity.to_le_bytes());
    h[24..28].copy_from_slice(&block_size.to_le_bytes());
    h[40] = reserved;
    let crc = crc32(&h[..60]);
    h[60..64].copy_from_slice(&crc.to_le_bytes());
    h
}

/// A write log record with no payload.
fn write_log_record(kind: u8, seq: u64, sector: u64, sectors: u32) -> Vec<u8> {
    let mut r = vec![0u8; 48];
    r[..4].copy_from_slice(b"WLR1");
    r[4] = kind;
    r[8..16].copy_from_slice(&seq.to_le_bytes());
    r[16..24].copy_from_slice(&sector.to_le_bytes());
    r[24..28].copy_from_slice(&sectors.to_le_bytes());
    let crc = crc32(&r[..44]);
    r[44..48].copy_from_slice(&crc.to_le_bytes());
    r
}

/// Every case, in table order.
fn cases(s: &Scratch) -> Vec<Case> {
    use Expect::*;
    let mut v = Vec::new();
    let run = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["run", "--name=x", "--rw=randread", "--bs=4k", "--size=1m"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };

    // Job files.
    let job = "job file";
    let zero = s.file("zero.fio", "include /dev/zero\n");
    v.push(case(
        job,
        "include /dev/zero",
        &["run", &zero, "--parse-only"],
        Refused("/dev/zero"),
    ));
    let me = s.path("self.fio");
    s.file("self.fio", format!("include {me}\n[x]\nrw=read\nsize=1m\n"));
    v.push(case(
        job,
        "a file that includes itself",
        &["run", &me, "--parse-only"],
        Refused("include"),
    ));
    let mut many = String::new();
    for i in 0..20_000 {
        many.push_str(&format!("[j{i}]\nrw=read\nsize=4k\n"));
    }
    let many = s.file("many.fio", many);
    v.push(case(
        job,
        "20,000 sections",
        &["run", &many, "--parse-only"],
        Refused("4096"),
    ));
    let expand = s.file(
        "expand.fio",
        format!(
            "[x]\nrw=read\nbs=4k\nsize=1m\ndescription={}\n",
            "${BIG}".repeat(20_000)
        ),
    );
    v.push(
        case(
            job,
            "${VAR} expanded to 2 GB",
            &["run", &expand, "--parse-only"],
            Refused("BIG"),
        )
        .env("BIG", "a".repeat(100_000)),
    );
    v.push(
        case(
            job,
            "a job file from a stream of 2 GiB",
            &["run", "-", "--parse-only"],
            Refused("job file"),
        )
        .stdin(Input::Stream {
            unit: b"; a comment line that goes on and on\n".to_vec(),
            len: 2 << 30,
        }),
    );
    for (option, value) in [
        ("offset", "18446744073709551615"),
        ("size", "18446744073709551615"),
        ("offset", "9223372036854775808"),
        ("bs", "4294967296"),
        ("iodepth", "18446744073709551615"),
        ("numjobs", "4294967297"),
        ("offset_increment", "18446744073709551615"),
    ] {
        let arg = format!("--{option}={value}");
        let mut c = case(job, &format!("{option}={value}"), &[], Refused(option));
        c.args = run(&[&arg, "--numjobs=2", "--device", "mem:64m"]);
        if option == "numjobs" {
            c.args.retain(|a| a != "--numjobs=2");
            c.args.push(arg);
        }
        v.push(c);
    }
    let mut c = case(job, "io_size=2^64-1 for one second", &[], Runs);
    c.args = run(&[
        "--io_size=18446744073709551615",
        "--runtime=1",
        "--device",
        "mem:64m",
    ]);
    v.push(c);

    // Device specs.
    let dev = "device spec";
    for (spec, needle) in [
        ("mem:18446744073709551104", "mem"),
        ("mem:0", "mem"),
        ("null,queue_depth=18446744073709551615", "queue_depth"),
        ("hdd-7200,rpm=1e308", "rpm"),
        ("hdd-7200,capacity=18446744073709551615", "capacity"),
        ("raid0-8x-sas-10k,members=4294967295", "members"),
        ("ssd-sata,channels=4294967295", "channels"),
        ("file:/dev/zero", "/dev/zero"),
        ("mem:64m,fail_rate=2", "fail_rate"),
    ] {
        let mut c = case(dev, spec, &[], Refused(needle));
        c.args = run(&["--device", spec]);
        v.push(c);
    }
    // More memory than the host has available, and more than the address
    // space the case may map: the warning, then a clean refusal.
    let mut c = case(dev, "mem:100g", &[], Refused("is larger than the"));
    c.args = run(&["--device", "mem:100g"]);
    v.push(c);

    // Traces, in each format.
    let tr = "trace";
    let victim = s.file("victim.img", vec![0xa5u8; 1 << 20]);
    let dev_file = format!("file:{victim}");
    for (what, text, needle) in [
        ("tracefs bio at sector 2^64-1", tracefs_bio("7,0", "W", "18446744073709551615", "8"), "line 1"),
        ("tracefs bio at sector 2^63", tracefs_bio("7,0", "W", "9223372036854775808", "8"), "line 1"),
        ("tracefs bio whose end wraps", tracefs_bio("7,0", "W", "18446744073709551608", "16"), "line 1"),
        ("tracefs bio of 2^64-1 sectors", tracefs_bio("7,0", "W", "0", "18446744073709551615"), "line 1"),
        ("blkparse bio at sector 2^64-1", blkparse_bio("18446744073709551615", "8"), "line 1"),
        ("blkparse bio whose end wraps", blkparse_bio("18446744073709551608", "16"), "line 1"),
        ("iolog write at offset 2^64-1", "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 18446744073709551615 4096\n/dev/x close\n".to_string(), "line 4"),
        ("iolog write whose end wraps", "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 18446744073709547520 8192\n/dev/x close\n".to_string(), "line 4"),
    ] {
        let path = s.file(&format!("t{}.trace", v.len()), text);
        v.push(case(tr, what, &["replay", &path, "--device", &dev_file], Refused(needle)));
    }
    v.push(
        case(
            tr,
            "tracefs bio at sector 2^64-1 on stdin",
            &["replay", "-", "--device", &dev_file],
            Refused("line 1"),
        )
        .stdin(Input::Bytes(
            tracefs_bio("7,0", "W", "18446744073709551615", "8").into_bytes(),
        )),
    );
    let far = s.file(
        "far.trace",
        tracefs_bio("7,0", "R", "0", "8")
            + &tracefs_bio("7,0", "R", "8", "8").replace("  1.000000:", "  18446744073.000000:"),
    );
    v.push(case(
        tr,
        "a bio 584 years after the first, slowed down 2 times",
        &["replay", &far, "--speed", "0.5"],
        Runs,
    ));
    v.push(case(
        tr,
        "replay --speed 1e-300",
        &["replay", &far, "--speed", "1e-300"],
        Refused("--speed"),
    ));
    let wrapped = s.file(
        "wrapped.trace",
        tracefs_bio("7,0", "W", "18446744073709551608", "16"),
    );
    v.push(case(
        tr,
        "trace convert of a bio whose end wraps",
        &["trace", "convert", "--to", "iolog", &wrapped, "-"],
        Refused("line 1"),
    ));
    v.push(case(
        tr,
        "advise on a bio whose end wraps",
        &["advise", "--trace", &wrapped],
        Refused("line 1"),
    ));
    let mut devices = String::new();
    for i in 0..10_000 {
        devices.push_str(&tracefs_bio(
            &format!("{},{}", 8 + i / 1000, i % 1000),
            "R",
            "0",
            "8",
        ));
    }
    devices.push_str(&tracefs_bio("7,0", "R", "0", "8"));
    let devices = s.file("devices.trace", devices);
    v.push(case(
        tr,
        "10,000 devices named, one replayed",
        &["replay", &devices, "--dev", "7,0"],
        Runs,
    ));
    v.push(
        case(
            tr,
            "one line of 2 GiB",
            &["replay", "-", "--format", "tracefs"],
            Refused("line 1"),
        )
        .stdin(Input::Stream {
            unit: b"a".repeat(4096),
            len: 2 << 30,
        }),
    );
    v.push(
        case(
            tr,
            "a trace of 2 GiB of zeroes",
            &["replay", "-"],
            Refused("not a trace"),
        )
        .stdin(Input::Stream {
            unit: vec![0u8; 4096],
            len: 2 << 30,
        }),
    );

    // Write logs.
    let wl = "write log";
    for (what, header, needle) in [
        ("block size 0", write_log_header(2048, 0, 0), "block size"),
        (
            "block size 513",
            write_log_header(2048, 513, 0),
            "block size",
        ),
        (
            "block size 2^31",
            write_log_header(2048, 1 << 31, 0),
            "block size",
        ),
        (
            "reserved bytes set",
            write_log_header(2048, 512, 1),
            "reserved",
        ),
    ] {
        let path = s.file(&format!("w{}.wlog", v.len()), header);
        v.push(case(
            wl,
            what,
            &["write-log", "show", &path],
            Refused(needle),
        ));
    }
    let mut past = write_log_header(2048, 512, 0);
    past.extend(write_log_record(3, 0, u64::MAX, 8));
    let past = s.file("past.wlog", past);
    v.push(case(
        wl,
        "a record at sector 2^64-1",
        &["write-log", "show", &past],
        Refused("record 0"),
    ));
    // A 1 TiB device and a thousand write-zeroes of 512 GiB each:
    // replaying them may not write 512 TiB of zeroes to the disk.
    let mut zeroes = write_log_header(1 << 31, 512, 0);
    for seq in 0..1000u64 {
        zeroes.extend(write_log_record(3, seq, (seq % 2) << 30, 1 << 30));
    }
    let zeroes = s.file("zeroes.wlog", zeroes);
    let image = s.path("zeroes.img");
    v.push(case(
        wl,
        "512 TiB of write-zeroes replayed onto an image",
        &["write-log", "replay", &zeroes, "--out", &image],
        Runs,
    ));

    // Command-line flags.
    let cl = "command-line flag";
    v.push(case(
        cl,
        "microbench --repeat 4294967295",
        &["microbench", "--repeat", "4294967295", "--ios", "1"],
        Refused("--repeat"),
    ));
    v.push(case(
        cl,
        "microbench --depth 100000000",
        &["microbench", "--depth", "100000000"],
        Refused("--depth"),
    ));
    v.push(case(
        cl,
        "experiment lock-scaling --threads 100000",
        &[
            "experiment",
            "lock-scaling",
            "--quick",
            "--threads",
            "100000",
        ],
        Refused("--threads"),
    ));
    v.push(case(
        cl,
        "trace bench-convert --events 2^64-1",
        &["trace", "bench-convert", "--events", "18446744073709551615"],
        Refused("--events"),
    ));
    v.push(case(
        cl,
        "serve --threads 100000",
        &["serve", "--export", "a=mem:1m", "--threads", "100000"],
        Refused("--threads"),
    ));
    v.push(case(
        cl,
        "serve --max-request 2^64-1",
        &[
            "serve",
            "--export",
            "a=mem:1m",
            "--max-request",
            "18446744073709551615",
        ],
        Refused("--max-request"),
    ));
    v.push(case(
        cl,
        "serve --idle-timeout 2^64-1",
        &[
            "serve",
            "--export",
            "a=mem:1m",
            "--idle-timeout",
            "18446744073709551615",
        ],
        Refused("--idle-timeout"),
    ));
    let mut c = case(
        cl,
        "run --iodepth=65536 --numjobs=64",
        &[],
        Refused("numjobs or iodepth"),
    );
    c.args = run(&[
        "--ioengine=libaio",
        "--iodepth=65536",
        "--numjobs=64",
        "--device",
        "mem:64m",
    ]);
    v.push(c);

    let bad_block = s.file("bad-block.wlog", write_log_header(2048, 0, 0));
    v.push(case(
        wl,
        "crash-states of a log with block size 0",
        &["crash-states", &bad_block, "--out", &s.path("cs")],
        Refused("block size"),
    ));
    v.push(case(
        wl,
        "write-log replay of a record at sector 2^64-1",
        &["write-log", "replay", &past, "--out", &s.path("past.img")],
        Refused("record 0"),
    ));
    v.push(case(
        cl,
        "crash-states --timeout 1e19",
        &[
            "crash-states",
            "examples/crash/app-correct.wlog",
            "--out",
            &s.path("cs19"),
            "--check",
            "true",
            "--timeout",
            "1e19",
        ],
        Refused("--timeout"),
    ));
    v.push(case(
        cl,
        "write-log mark --timeout 1e19",
        &[
            "write-log",
            "mark",
            &s.path("no.sock"),
            "x",
            "--timeout",
            "1e19",
        ],
        Refused("--timeout"),
    ));
    let long_name = s.file(
        "long-name.fio",
        format!("[{}]\nrw=read\nsize=1m\n", "n".repeat(5000)),
    );
    v.push(case(
        job,
        "a section name of 5000 bytes",
        &["run", &long_name, "--parse-only"],
        Refused("section name"),
    ));
    v.push(case(
        dev,
        "serve --export a=mem:1m,lbs=3",
        &["serve", "--export", "a=mem:1m,lbs=3"],
        Refused("lbs"),
    ));
    v.push(case(
        cl,
        "microbench --set nr_requests=2^64-1",
        &[
            "microbench",
            "--set",
            "nr_requests=18446744073709551615",
            "--ios",
            "1",
        ],
        Refused("nr_requests"),
    ));
    let mut c = case(
        job,
        "compare with ${VAR} expanded to 2 GB",
        &[],
        Refused("BIG"),
    );
    c.args = vec!["compare".into(), expand.clone()];
    v.push(c.env("BIG", "a".repeat(100_000)));

    // Where the output goes.
    let out = "output";
    for cmd in [
        &["schedulers"][..],
        &["devices"],
        &["run", "--name=x", "--rw=read", "--bs=4k", "--size=1m"],
    ] {
        v.push(case(
            out,
            &format!("{} into a closed pipe", cmd[0]),
            cmd,
            ClosedStdout,
        ));
    }
    for cmd in [&["schedulers"][..], &["devices"]] {
        v.push(
            case(
                out,
                &format!("{} > /dev/full", cmd[0]),
                cmd,
                Refused("No space left"),
            )
            .stdout_to("/dev/full"),
        );
    }
    v.push(case(
        out,
        "run --output /dev/full",
        &[
            "run",
            "--name=x",
            "--rw=read",
            "--bs=4k",
            "--size=1m",
            "--output",
            "/dev/full",
        ],
        Refused("No space left"),
    ));
    v
}

/// How one case ended.
struct Ended {
    code: Option<i32>,
    /// The signal that ended it, if one did.
    signal: Option<i32>,
    stderr: String,
    timed_out: bool,
}

fn run_case(c: &Case) -> Ended {
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--as={ADDRESS_SPACE}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_elevator"))
        .args(&c.args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .env("RUST_BACKTRACE", "0")
        .stdin(match c.input {
            Input::None => Stdio::null(),
            _ => Stdio::piped(),
        })
        .stdout(match c.stdout {
            Some(path) => Stdio::from(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .expect("open the case's stdout"),
            ),
            None => Stdio::piped(),
        })
        .stderr(Stdio::piped());
    for (k, val) in &c.env {
        cmd.env(k, val);
    }
    let mut child = cmd.spawn().expect("run prlimit (util-linux)");
    if matches!(c.expect, Expect::ClosedStdout) {
        drop(child.stdout.take());
    }
    let feeder = child.stdin.take().map(|mut stdin| {
        let input = match &c.input {
            Input::Bytes(b) => Input::Bytes(b.clone()),
            Input::Stream { unit, len } => Input::Stream {
                unit: unit.clone(),
                len: *len,
            },
            Input::None => Input::None,
        };
        std::thread::spawn(move || match input {
            Input::Bytes(b) => {
                let _ = stdin.write_all(&b);
            }
            Input::Stream { unit, len } => {
                let mut sent = 0;
                while sent < len {
                    if stdin.write_all(&unit).is_err() {
                        break;
                    }
                    sent += unit.len() as u64;
                }
            }
            Input::None => {}
        })
    });
    // Drain stdout and stderr on threads so that a chatty command never
    // blocks on a full pipe.
    let out = child.stdout.take().map(|mut o| {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut o, &mut std::io::sink());
        })
    });
    let mut err_pipe = child.stderr.take().expect("stderr piped");
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ =
            std::io::Read::read_to_end(&mut std::io::Read::take(&mut err_pipe, 1 << 20), &mut buf);
        let _ = std::io::copy(&mut err_pipe, &mut std::io::sink());
        buf
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > TIME_LIMIT {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    if let Some(o) = out {
        let _ = o.join();
    }
    let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
    Ended {
        code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        stderr,
        timed_out,
    }
}

/// Why a case failed, or `None` when it did what it must.
fn verdict(c: &Case, e: &Ended) -> Option<String> {
    if e.timed_out {
        return Some(format!("ran past {} s", TIME_LIMIT.as_secs()));
    }
    if e.stderr.contains("panicked") || e.stderr.contains("memory allocation of") {
        return Some(format!(
            "panicked or ran out of memory: {}",
            tail(&e.stderr)
        ));
    }
    let Some(code) = e.code else {
        if matches!(c.expect, Expect::ClosedStdout) && e.signal == Some(13) {
            return None;
        }
        return Some(format!(
            "killed by signal {:?}: {}",
            e.signal,
            tail(&e.stderr)
        ));
    };
    match &c.expect {
        Expect::Refused(needle) if code == 0 => {
            Some(format!("accepted; expected a refusal naming '{needle}'"))
        }
        Expect::Refused(needle) if !e.stderr.contains(needle) => Some(format!(
            "refused without naming '{needle}': {}",
            tail(&e.stderr)
        )),
        Expect::Runs if code != 0 => Some(format!("failed: {}", tail(&e.stderr))),
        Expect::ClosedStdout if code != 0 => {
            Some(format!("exit status {code}: {}", tail(&e.stderr)))
        }
        _ => None,
    }
}

fn tail(s: &str) -> String {
    let t: String = s.chars().rev().take(400).collect();
    t.chars().rev().collect::<String>().replace('\n', " | ")
}

/// The table of counts per input kind, as docs/reliability.md shows it.
fn table(cases: &[Case]) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for c in cases {
        if !kinds.contains(&c.kind) {
            kinds.push(c.kind);
        }
    }
    let mut t = String::from(
        "| input | cases | refused, naming what was wrong | accepted, bounded | ended quietly on a closed pipe |\n|---|---:|---:|---:|---:|\n",
    );
    for k in kinds {
        let of: Vec<&Case> = cases.iter().filter(|c| c.kind == k).collect();
        let count = |f: fn(&Expect) -> bool| of.iter().filter(|c| f(&c.expect)).count();
        t.push_str(&format!(
            "| {k} | {} | {} | {} | {} |\n",
            of.len(),
            count(|e| matches!(e, Expect::Refused(_))),
            count(|e| matches!(e, Expect::Runs)),
            count(|e| matches!(e, Expect::ClosedStdout)),
        ));
    }
    t
}

#[test]
fn every_command_on_hostile_input_stays_bounded_and_says_why() {
    elevator_testkit::needs!("prlimit");
    let s = Scratch::new();
    let all = cases(&s);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(usize, Option<String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(c) = all.get(i) else { break };
                        let e = run_case(c);
                        mine.push((i, verdict(c, &e)));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(i, f)| {
            f.as_ref()
                .map(|why| format!("  {} / {}: {why}", all[*i].kind, all[*i].what))
        })
        .collect();
    let t = table(&all);
    println!("{t}");
    assert!(
        failures.is_empty(),
        "{} of {} hostile cases failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reliability.md"),
    )
    .expect("read docs/reliability.md");
    assert!(
        page.contains(&t),
        "docs/reliability.md should hold this table:\n{t}"
    );
}
