//! `elevator trace convert` against the real tools: blkparse reads the
//! blktrace it writes (event counts equal to elevator's), btt reads a
//! `blkparse -d` dump of it (Q2C as elevator computes it), and
//! `fio --read_iolog` replays its iologs with the same bytes. Bad input
//! fails with the record's number, or is counted with `--skip-bad`.
//! blkparse, btt and fio are installed by scripts/test; nothing is skipped.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::fio::{TempDir, fio, run, stdout_ok};
use common::{elevator, ok};
use elevator_core::{Op, TraceAction};
use elevator_trace::blkparse::TextWriter;
use elevator_trace::blktrace_write::BlktraceWriter;
use elevator_trace::synthetic::{PROCESSES, SyntheticTrace};
use elevator_trace::{Record, TraceSink};

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 scratch path")
}

/// Write the synthetic trace of `n` events into `sink`.
fn generate(sink: &mut dyn TraceSink, n: u64) {
    for (pid, name) in PROCESSES {
        sink.process(pid, name, 0).unwrap();
    }
    for r in SyntheticTrace::new(n) {
        sink.record(&r).unwrap();
    }
    sink.finish().unwrap();
}

/// A blkparse text trace of `n` events in `dir` (an input `convert` must
/// recognise by its content).
fn text_trace(dir: &TempDir, n: u64) -> String {
    let path = dir.path().join("in.txt");
    let mut w = TextWriter::new(std::io::BufWriter::new(
        std::fs::File::create(&path).unwrap(),
    ));
    generate(&mut w, n);
    path_str(&path).to_string()
}

/// The arguments of `elevator trace convert INPUT OUTPUT --to TO ARGS`.
fn convert_args<'a>(
    input: &'a str,
    output: &'a str,
    to: &'a str,
    args: &[&'a str],
) -> Vec<&'a str> {
    [&["trace", "convert", input, output, "--to", to], args].concat()
}

fn tool(name: &str, args: &[&str], dir: &Path) -> String {
    let out = run(Command::new(name).args(args).current_dir(dir));
    stdout_ok(name, &out)
}

#[test]
fn blkparse_and_btt_read_what_convert_writes() {
    elevator_testkit::needs!("blkparse", "btt");
    let dir = TempDir::new("trace-blkparse");
    let input = text_trace(&dir, 3000);
    let out_prefix = dir.path().join("conv");
    let out = ok(&convert_args(
        &input,
        path_str(&out_prefix),
        "blktrace",
        &[],
    ));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("3000 events read, 3000 written, 0 bad skipped"),
        "{summary}"
    );
    // blkparse counts every event.
    let text = tool("blkparse", &["-i", "conv"], dir.path());
    assert!(text.contains("Events (conv): 3000 entries"), "{text}");
    let events = text
        .lines()
        .take_while(|l| !l.starts_with("CPU"))
        .filter(|l| !l.is_empty())
        .count();
    assert_eq!(events, 3000);
    // btt reads blkparse's dump; its Q2C is the mean of C - Q per I/O.
    tool(
        "blkparse",
        &["-i", "conv", "-d", "conv.bin", "-O"],
        dir.path(),
    );
    let report = tool("btt", &["-i", "conv.bin"], dir.path());
    let q2c = report
        .lines()
        .find(|l| l.starts_with("Q2C"))
        .unwrap_or_else(|| panic!("no Q2C in btt's report: {report}"));
    let fields: Vec<&str> = q2c.split_whitespace().collect();
    let btt_avg: f64 = fields[2].parse().unwrap();
    let btt_n: u64 = fields[4].parse().unwrap();
    let mut queued: HashMap<u64, u64> = HashMap::new();
    let (mut sum, mut n) = (0u64, 0u64);
    for r in SyntheticTrace::new(3000) {
        let e = r.event;
        match e.action {
            TraceAction::Queue if e.bytes > 0 => {
                queued.insert(e.sector, e.time);
            }
            TraceAction::Complete if e.bytes > 0 => {
                if let Some(q) = queued.remove(&e.sector) {
                    sum += e.time - q;
                    n += 1;
                }
            }
            _ => {}
        }
    }
    let ours = sum as f64 / n as f64 / 1e9;
    assert_eq!(btt_n, n, "{q2c}");
    assert!(
        (btt_avg - ours).abs() <= ours * 0.01,
        "btt Q2C {btt_avg} s, elevator {ours} s"
    );
}

/// Bytes read and written, and syncs, by fio's JSON.
fn fio_bytes(json: &str) -> (u64, u64, u64) {
    let v: serde_json::Value = serde_json::from_str(json).expect("fio JSON");
    let job = &v["jobs"][0];
    (
        job["read"]["io_bytes"].as_u64().unwrap(),
        job["write"]["io_bytes"].as_u64().unwrap(),
        job["sync"]["total_ios"].as_u64().unwrap_or(0),
    )
}

#[test]
fn fio_replays_the_iologs_convert_writes() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("trace-fio");
    // A binary trace from a single stream (as `blktrace -o -` writes).
    let input = dir.path().join("in.bin");
    let mut w = BlktraceWriter::new(std::io::BufWriter::new(
        std::fs::File::create(&input).unwrap(),
    ));
    generate(&mut w, 2000);
    let queued: Vec<Record> = SyntheticTrace::new(2000)
        .filter(|r| r.event.action == TraceAction::Queue)
        .collect();
    let bytes_of = |op: Op| -> u64 {
        queued
            .iter()
            .filter(|r| r.event.op == op)
            .map(|r| u64::from(r.event.bytes))
            .sum()
    };
    let end = queued
        .iter()
        .map(|r| r.event.sector * 512 + u64::from(r.event.bytes))
        .max()
        .unwrap();
    let data = dir.path().join("data");
    std::fs::File::create(&data).unwrap().set_len(end).unwrap();
    for version in ["2", "3"] {
        let log = dir.path().join(format!("v{version}.iolog"));
        let out = ok(&convert_args(
            path_str(&input),
            path_str(&log),
            "iolog",
            &[
                "--iolog-version",
                version,
                "--iolog-file",
                path_str(&data),
                "--no-trim",
            ],
        ));
        let summary = String::from_utf8_lossy(&out.stdout);
        let discards = queued.iter().filter(|r| r.event.op == Op::Discard).count();
        let want = format!("{} written", queued.len() - discards);
        assert!(summary.contains(&want), "{summary} lacks {want}");
        let first = std::fs::read_to_string(&log).unwrap();
        assert!(first.starts_with(&format!("fio version {version} iolog\n")));
        let out = fio(
            dir.path(),
            &[
                "--name=replay",
                &format!("--read_iolog={}", path_str(&log)),
                "--ioengine=psync",
                "--output-format=json",
            ],
        );
        let (read, written, syncs) = fio_bytes(&stdout_ok("fio", &out));
        assert_eq!(read, bytes_of(Op::Read), "v{version} read bytes");
        assert_eq!(written, bytes_of(Op::Write), "v{version} written bytes");
        if version == "3" {
            assert_eq!(
                syncs,
                queued.iter().filter(|r| r.event.op == Op::Flush).count() as u64
            );
        }
    }
}

#[test]
fn conversions_round_trip_through_the_command() {
    elevator_testkit::needs!("xz");
    let dir = TempDir::new("trace-rt");
    let input = text_trace(&dir, 5000);
    let d = dir.path();
    ok(&convert_args(
        &input,
        path_str(&d.join("bin")),
        "blktrace",
        &[],
    ));
    ok(&convert_args(
        path_str(&d.join("bin")),
        path_str(&d.join("back.txt")),
        "text",
        &[],
    ));
    let a = std::fs::read(&input).unwrap();
    assert!(
        a == std::fs::read(d.join("back.txt")).unwrap(),
        "text -> blktrace -> text differs"
    );
    // xz in, stdout out.
    let xz = run(Command::new("xz").args(["-k", "-1", &input]));
    assert!(xz.status.success());
    let out = ok(&convert_args(&format!("{input}.xz"), "-", "text", &[]));
    assert!(out.stdout == a, "xz text -> text differs");
    // Only the D events, as text.
    let out = ok(&convert_args(&input, "-", "text", &["--events", "D"]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().count() > 100);
    assert!(
        text.lines()
            .all(|l| l.split_whitespace().nth(5) == Some("D")),
        "{text}"
    );
}

#[test]
fn bad_input_names_its_line_and_skip_bad_counts_it() {
    let dir = TempDir::new("trace-bad");
    let input = text_trace(&dir, 50);
    let mut text = std::fs::read_to_string(&input).unwrap();
    let third = text.lines().nth(2).unwrap().to_string();
    text = text.replacen(&third, &third.replacen(" + ", " ^ ", 1), 1);
    std::fs::write(&input, text).unwrap();
    let out = elevator(&convert_args(&input, "-", "text", &[]));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in.txt: line 3: cannot parse"), "{err}");
    let out = ok(&convert_args(&input, "-", "text", &["--skip-bad"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("49 events read, 49 written, 1 bad skipped"),
        "{err}"
    );
    let out = elevator(&convert_args(&input, "-", "text", &["--from", "nonsense"]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown format 'nonsense'"));
}

/// A trace whose records name every CPU up to 8191 and 100,000
/// processes converts to a per-CPU blktrace set under 1 GiB of address
/// space: the set's write buffers share a fixed budget (each file had its
/// own 256 KiB: 2 GiB for 8192 files), and what it remembers of processes
/// is bounded.
#[test]
fn converting_a_trace_of_many_cpus_and_processes_is_bounded() {
    elevator_testkit::needs!("prlimit");
    let dir = TempDir::new("convert-many");
    let input = dir.path().join("many.txt");
    let mut text = String::new();
    for n in 0..100_000u64 {
        let cpu = n % 8192;
        text.push_str(&format!(
            "  8,0 {cpu:4} {n:8} {:5}.{:09} {:7}  Q   W {} + 8 [p{n}]\n",
            n / 1_000_000,
            n % 1_000_000,
            n * 5 + 1,
            n * 8
        ));
    }
    std::fs::write(&input, text).unwrap();
    let output = dir.path().join("out");
    let out = Command::new("prlimit")
        .arg(format!("--as={}", 1u64 << 30))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_elevator"))
        .args(["trace", "convert", "--to", "blktrace"])
        .arg(&input)
        .arg(&output)
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return common::skip("converting_many", &format!("no prlimit: {e}")),
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("100000 events read, 100000 written"),
        "{stdout}"
    );
}

/// bench-convert holds its generated trace in memory (about 190 bytes an
/// event in four forms): more events than fit under 1 GiB are refused by
/// the option's name, not an allocation failure.
#[test]
fn bench_convert_refuses_more_events_than_it_can_hold() {
    for events in ["18446744073709551615", "2500001"] {
        let out = elevator(&["trace", "bench-convert", "--events", events]);
        assert!(!out.status.success(), "{events}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("--events {events}: at most 2500000")),
            "{err}"
        );
    }
}
