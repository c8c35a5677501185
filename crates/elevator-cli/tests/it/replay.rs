//! `elevator replay` end to end: the shipped kernel trace (PostgreSQL's
//! `pgbench -i` on a loop device under mq-deadline) replayed with the
//! recording's scheduler and limits gives back the kernel's merges and
//! issued requests (counts, never times); bad traces fail with their line;
//! a generated trace replays.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common;
use common::fio::TempDir;

/// The shipped traces: `$ELEVATOR_TRACES`, or the repository's
/// `tests/traces`.
fn traces() -> PathBuf {
    match std::env::var_os("ELEVATOR_TRACES") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/traces"),
    }
}

fn elevator(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .output()
        .expect("runs elevator");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `elevator ARGS --output-format json`, which must succeed: its report.
fn elevator_json(args: &[&str]) -> Value {
    let (ok, out, err) = elevator(&[args, &["--output-format", "json"]].concat());
    assert!(ok, "{args:?}: {err}");
    serde_json::from_str(&out).expect("json")
}

/// `elevator replay TRACE --device DEVICE --skip-bad`: its JSON report.
fn replay_skip_bad(trace: &str, device: &str) -> Value {
    elevator_json(&["replay", trace, "--device", device, "--skip-bad"])
}

fn count(v: &Value, side: &str, row: &str) -> u64 {
    v[side]["counts"][row]
        .as_u64()
        .unwrap_or_else(|| panic!("{side}.{row} in {v}"))
}

/// Within 10 %, or within 5 where the kernel counted fewer than 50.
fn close(kernel: u64, mine: u64) -> bool {
    let diff = kernel.abs_diff(mine);
    if kernel < 50 {
        diff <= 5
    } else {
        diff * 10 <= kernel
    }
}

#[test]
fn pgbench_trace_merges_as_the_kernel_did() {
    let trace = traces().join("pgbench-init-mq-deadline.trace.xz");
    assert!(trace.exists(), "{} is not here", trace.display());
    let trace = trace.to_string_lossy().into_owned();
    let v = elevator_json(&[
        "replay",
        &trace,
        "--device",
        "null,latency=200,queue_depth=128",
        "--scheduler",
        "mq-deadline",
        "--set",
        "nomerges=0",
        "--set",
        "max_sectors_kb=1280",
        "--set",
        "nr_requests=256",
    ]);
    assert_eq!(v["dev"], "7,0");
    // The summary's own counts, as the trace holds them.
    for (row, kernel) in [
        ("bios_queued", 1408),
        ("back_merges", 307),
        ("front_merges", 0),
        ("request_merges", 1),
        ("splits", 573),
        ("requests_issued", 1789),
        ("flushes_issued", 512),
    ] {
        assert_eq!(count(&v, "recorded", row), kernel, "{row}");
    }
    for row in [
        "back_merges",
        "front_merges",
        "request_merges",
        "requests_issued",
        "flushes_issued",
        "requests_allocated",
        "requests_inserted",
    ] {
        let (k, e) = (count(&v, "recorded", row), count(&v, "elevator", row));
        assert!(close(k, e), "{row}: kernel {k}, elevator {e}");
    }
    assert_eq!(count(&v, "elevator", "bios_queued"), 1408);
    assert_eq!(v["bios"], 1408);
}

/// A tracefs line's CPU and time (µs).
fn cpu_time(line: &str) -> Option<(u32, u64)> {
    let mut words = line.split_whitespace();
    let cpu = words.find_map(|w| w.strip_prefix('[')?.strip_suffix(']')?.parse().ok())?;
    let (s, f) = words.find_map(|w| w.strip_suffix(':'))?.split_once('.')?;
    let time = s.parse::<u64>().ok()? * 1_000_000 + f.parse::<u64>().ok()?;
    Some((cpu, time))
}

/// The shipped trace's text with adjacent lines of different CPUs swapped
/// every 300 lines or so, where the later is 1 to 500 µs later (as
/// trace_pipe interleaves CPUs): the text and the swaps (the second line's
/// number, the inversion in µs).
fn interleaved() -> (String, Vec<(u64, u64)>) {
    use std::io::Read;
    let path = traces().join("pgbench-init-mq-deadline.trace.xz");
    let file = std::fs::File::open(&path).expect("the shipped trace");
    let mut text = String::new();
    elevator_trace::open::decompressed(Box::new(file))
        .and_then(|mut r| r.read_to_string(&mut text))
        .expect("xz text");
    let mut lines: Vec<&str> = text.lines().collect();
    let mut swaps = Vec::new();
    let mut i = 300;
    while i + 1 < lines.len() {
        match (cpu_time(lines[i]), cpu_time(lines[i + 1])) {
            (Some((ca, ta)), Some((cb, tb))) if ca != cb && tb > ta && tb - ta <= 500 => {
                lines.swap(i, i + 1);
                swaps.push((i as u64 + 2, tb - ta));
                i += 300;
            }
            _ => i += 1,
        }
    }
    (lines.join("\n") + "\n", swaps)
}

/// Issue 29, item 1: the shipped trace with lines of different CPUs a
/// little out of time order, as `trace_pipe` writes them, replays with
/// exactly the counts of the trace as recorded (no `--skip-bad`) and says
/// how many lines it put back in order; an inversion wider than
/// `--reorder-window` is refused naming both lines; 0 is strict.
#[test]
fn a_trace_with_cpus_interleaved_replays_as_recorded() {
    let dir = TempDir::new("replay-interleaved");
    let (text, swaps) = interleaved();
    assert!(swaps.len() >= 30, "{swaps:?}");
    let widest = swaps.iter().map(|s| s.1).max().expect("swaps");
    assert!(widest >= 200, "{swaps:?}");
    let path = dir.path().join("interleaved.trace");
    std::fs::write(&path, &text).expect("write");
    let swapped = path.to_string_lossy().into_owned();
    let shipped = traces().join("pgbench-init-mq-deadline.trace.xz");
    let shipped = shipped.to_string_lossy().into_owned();
    let options = [
        "--scheduler",
        "mq-deadline",
        "--set",
        "max_sectors_kb=1280",
        "--set",
        "nr_requests=256",
    ];
    let want = elevator_json(&[&["replay", &shipped], &options[..]].concat());
    let got = elevator_json(&[&["replay", &swapped], &options[..]].concat());
    for side in ["recorded", "elevator"] {
        assert_eq!(got[side]["counts"], want[side]["counts"], "{side}");
        assert_eq!(got[side]["ops"], want[side]["ops"], "{side}");
    }
    // The kernel's own counts (the summary beside the trace).
    for (row, kernel) in [
        ("bios_queued", 1408),
        ("back_merges", 307),
        ("splits", 573),
        ("requests_inserted", 1277),
        ("requests_issued", 1789),
    ] {
        assert_eq!(count(&got, "recorded", row), kernel, "{row}");
    }
    assert_eq!(
        (&got["bios"], &got["skipped_lines"]),
        (&want["bios"], &want["skipped_lines"])
    );
    assert_eq!(want["reordered"]["records"], 0);
    assert_eq!(got["reordered"]["records"], swaps.len() as u64);
    assert_eq!(got["reordered"]["largest_inversion_us"], widest as f64);
    assert_eq!(got["reordered"]["window"], "1s");
    // The text report says so.
    let (ok, out, err) = elevator(&[&["replay", &swapped], &options[..]].concat());
    assert!(ok, "{err}");
    let line = format!(
        "  reordered: {} records, largest inversion {widest}.000 µs (--reorder-window 1s)\n",
        swaps.len()
    );
    assert!(out.contains(&line), "{out}");
    // Strict: the first swap is refused, naming both lines and the flag.
    let (ok, _, err) = elevator(&["replay", &swapped, "--reorder-window", "0"]);
    assert!(!ok);
    let (l, d) = swaps[0];
    assert!(
        err.contains(&format!(
            "interleaved.trace: line {l}: out of time order: line {l} at "
        )) && err.contains(&format!("is {d}.000 µs before line {} at ", l - 1))
            && err.contains("outside --reorder-window 0s"),
        "{err}"
    );
    // A window narrower than the widest inversion refuses that one.
    let narrower = format!("{}us", widest - 1);
    let (ok, _, err) = elevator(&["replay", &swapped, "--reorder-window", &narrower]);
    assert!(!ok);
    let (l, _) = swaps
        .iter()
        .find(|s| s.1 == widest)
        .copied()
        .expect("widest");
    assert!(
        err.contains(&format!("line {l}: out of time order"))
            && err.contains(&format!("outside --reorder-window {narrower}")),
        "{err}"
    );
    // --skip-bad still leaves out only those.
    let v = elevator_json(&[
        "replay",
        &swapped,
        "--reorder-window",
        &narrower,
        "--skip-bad",
    ]);
    let wide = swaps.iter().filter(|s| s.1 == widest).count();
    assert_eq!(v["skipped_lines"], wide as u64);
    assert_eq!(v["reordered"]["records"], (swaps.len() - wide) as u64);
    // trace convert puts them back in order too, and says so.
    let out_path = dir.path().join("out.txt");
    let out_path = out_path.to_string_lossy().into_owned();
    let (ok, out, err) = elevator(&["trace", "convert", &swapped, &out_path, "--to", "text"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!(
            "0 not replayable dropped, {} reordered (largest inversion {widest}.000 µs, --reorder-window 1s)",
            swaps.len()
        )),
        "{out}"
    );
    let (ok, _, err) = elevator(&[
        "trace",
        "convert",
        &swapped,
        &out_path,
        "--to",
        "text",
        "--reorder-window",
        "0",
    ]);
    assert!(!ok && err.contains("outside --reorder-window 0s"), "{err}");
}

#[test]
fn bad_lines_are_named_or_counted() {
    let dir = TempDir::new("replay-bad");
    let path = dir.path().join("bad.trace");
    std::fs::write(
        &path,
        " a-1 [000] ..... 1.000000: block_bio_queue: 8,0 W 8 + 8 [a]\n\
         a-1 [000] ..... 1.000001: block_frob: 8,0 W 8 + 8 [a]\n\
         a-1 [000] ..... 1.000002: block_bio_queue: 8,0 W 16 + 8 [a]\n",
    )
    .expect("write");
    let p = path.to_string_lossy().into_owned();
    let (ok, _, err) = elevator(&["replay", &p, "--device", "null"]);
    assert!(!ok);
    assert!(
        err.contains("bad.trace: line 2: unknown event 'block_frob'"),
        "{err}"
    );
    let v = replay_skip_bad(&p, "null");
    assert_eq!(v["skipped_lines"], 1);
    assert_eq!(v["bios"], 2);
}

#[test]
fn a_generated_trace_replays_asap() {
    let dir = TempDir::new("replay-gen");
    let path = dir.path().join("gen.trace");
    let p = path.to_string_lossy().into_owned();
    let (ok, _, err) = elevator(&["replay", "--generate", "20000", &p]);
    assert!(ok, "{err}");
    let v = elevator_json(&["replay", &p, "--device", "null", "--timing", "asap"]);
    // Whole batches: a few more than asked.
    let records = v["records"].as_u64().expect("records");
    assert!((20000..20040).contains(&records), "{records}");
    // The generator's batches merge on their plugs as recorded.
    let (k, e) = (
        count(&v, "recorded", "back_merges"),
        count(&v, "elevator", "back_merges"),
    );
    assert!(close(k, e), "kernel {k}, elevator {e}");
}

/// `replay --trace-out` writes what the replay did as blktrace files that
/// blkparse reads with elevator's counts, and replaying that trace again
/// gives back the same merges and requests.
#[test]
fn a_replay_writes_a_trace_that_replays_the_same() {
    elevator_testkit::needs!("blkparse");
    let dir = TempDir::new("replay-out");
    let trace = traces().join("pgbench-init-mq-deadline.trace.xz");
    let trace = trace.to_string_lossy().into_owned();
    let out_prefix = dir.path().join("pg").to_string_lossy().into_owned();
    let common = [
        "--device",
        "null,latency=200,queue_depth=128",
        "--scheduler",
        "mq-deadline",
        "--set",
        "max_sectors_kb=1280",
        "--set",
        "nr_requests=256",
    ];
    let mut args = vec!["replay", &trace, "--trace-out", &out_prefix];
    args.extend(common);
    let first = elevator_json(&args);
    let letters = common::tools::blkparse_counts(&out_prefix);
    for (letter, row) in [
        ('Q', "bios_queued"),
        ('X', "splits"),
        ('G', "requests_allocated"),
        ('I', "requests_inserted"),
        ('D', "requests_issued"),
        ('C', "completions"),
    ] {
        assert_eq!(
            letters.get(&letter).copied().unwrap_or(0),
            count(&first, "elevator", row),
            "{letter}"
        );
    }
    // blkparse prints bio and request merges alike as M.
    assert_eq!(
        letters.get(&'M').copied().unwrap_or(0),
        count(&first, "elevator", "back_merges") + count(&first, "elevator", "request_merges")
    );
    let mut args = vec!["replay", &out_prefix];
    args.extend(common);
    let second = elevator_json(&args);
    for row in [
        "bios_queued",
        "back_merges",
        "splits",
        "requests_issued",
        "flushes_issued",
    ] {
        assert_eq!(
            count(&second, "elevator", row),
            count(&first, "elevator", row),
            "{row}"
        );
    }
}

/// Issue 26, item 1: a bio whose sector or end is past 2^64 bytes was
/// replayed at sector 0 of the target (tracefs read sector 2^64-1 as 0)
/// and the run said "left out as bad: 0 bios". Now every format refuses
/// it with its line or record, as blkparse does, and the target file is
/// untouched; with --skip-bad the record is counted and left out.
#[test]
fn a_bio_past_2_64_bytes_is_refused_and_the_target_is_untouched() {
    elevator_testkit::needs!("prlimit");
    let dir = TempDir::new("replay-wrap");
    let victim = dir.path().join("victim.img");
    let content: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8 + 1).collect();
    std::fs::write(&victim, &content).expect("write victim");
    let device = format!("file:{}", victim.display());
    let mut blktrace = elevator_trace::blktrace_write::BlktraceWriter::new(Vec::new());
    let event = elevator_trace::record::event(
        1,
        elevator_core::TraceAction::Queue,
        elevator_core::Op::Write,
        elevator_core::BioFlags::NONE,
        u64::MAX,
        4096,
        1,
    );
    elevator_trace::TraceSink::record(
        &mut blktrace,
        &elevator_trace::Record::new(event, 0, elevator_trace::dev_t(7, 0)),
    )
    .expect("encode");
    let cases: [(&str, Vec<u8>, &str); 5] = [
        (
            "hs.trace",
            b"       postgres-1   [000] .....  1.000000: block_bio_queue: 7,0 W 18446744073709551615 + 8 [postgres]\n".to_vec(),
            "hs.trace: line 1: I/O range refused: sector 18446744073709551615 + 8 sectors is past 2^64 bytes",
        ),
        (
            "end.trace",
            b"       postgres-1   [000] .....  1.000000: block_bio_queue: 7,0 W 36028797018963967 + 8 [postgres]\n".to_vec(),
            "end.trace: line 1: I/O range refused: sector 36028797018963967 + 8 sectors is past 2^64 bytes",
        ),
        (
            "hs.blkparse",
            b"  7,0    0        1     0.000000000     1  Q   W 18446744073709551615 + 8 [postgres]\n".to_vec(),
            "hs.blkparse: line 1: I/O range refused: sector 18446744073709551615 + 8 sectors",
        ),
        (
            "hs.iolog",
            b"fio version 2 iolog\n/d add\n/d write 18446744073709551615 4096\n".to_vec(),
            "hs.iolog: line 3: I/O range refused: offset 18446744073709551615 + length 4096",
        ),
        (
            "hs.blktrace",
            blktrace.into_inner(),
            "hs.blktrace: record 1: I/O range refused: sector 18446744073709551615",
        ),
    ];
    for (name, bytes, error) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write trace");
        let p = path.to_string_lossy().into_owned();
        let (ok, _, err) = elevator(&["replay", &p, "--device", &device]);
        assert!(!ok, "{name}: replayed");
        assert!(err.contains(error), "{name}: {err}");
        assert!(
            std::fs::read(&victim).expect("read victim") == content,
            "{name}: the target was written"
        );
        let v = replay_skip_bad(&p, &device);
        assert_eq!(v["skipped_lines"], 1, "{name}: {v}");
        assert_eq!(v["bios"], 0, "{name}: {v}");
        assert!(std::fs::read(&victim).expect("read victim") == content);
    }
    // A bio past the target's end (1 MiB) is refused by its record, or
    // counted as left out with --skip-bad.
    let path = dir.path().join("beyond.trace");
    std::fs::write(
        &path,
        b"  a-1 [000] ..... 1.000000: block_bio_queue: 7,0 W 2044 + 8 [a]\n",
    )
    .expect("write trace");
    let p = path.to_string_lossy().into_owned();
    let (ok, _, err) = elevator(&["replay", &p, "--device", &device]);
    assert!(!ok);
    assert!(
        err.contains("record 1: sectors 2044..2052 are beyond the device's 2048 sectors"),
        "{err}"
    );
    let v = replay_skip_bad(&p, &device);
    assert_eq!(v["skipped_bios"], 1, "{v}");
    assert!(std::fs::read(&victim).expect("read victim") == content);
}

/// Run `elevator ARGS` under an address-space limit of `limit` bytes
/// (prlimit), the trace written to its standard input by `write`:
/// whether it succeeded, its stdout and stderr. `None` when prlimit is
/// not here.
fn replay_limited(
    limit: u64,
    args: &[&str],
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Option<(bool, String, String)> {
    use std::process::Stdio;
    let mut child = match Command::new("prlimit")
        .arg(format!("--as={limit}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            common::skip("replay_limited", &format!("no prlimit: {e}"));
            return None;
        }
    };
    let mut stdin = std::io::BufWriter::new(child.stdin.take().expect("stdin"));
    // A replay that fails early closes the pipe: that is its answer.
    let _ = write(&mut stdin).and_then(|()| std::io::Write::flush(&mut stdin));
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Issue 26, item 7: each device a trace named cost an analyzer (140 KB,
/// even with --dev): 10,000 devices took 1.5 GB; 3 M plug lines before
/// the first bio were all held while the device was chosen (172 MB). Now
/// the first replays under 1 GiB of address space and the second under
/// 128 MiB (both need less than 16 MiB).
#[test]
fn replay_memory_does_not_grow_with_what_the_trace_names() {
    let args = [
        "replay",
        "-",
        "--device",
        "null",
        "--timing",
        "asap",
        "--output-format",
        "json",
    ];
    let devices = |out: &mut dyn std::io::Write| {
        for i in 0..10_000u32 {
            writeln!(
                out,
                "  a-1 [000] ..... 1.{i:06}: block_bio_queue: {},{} W {} + 8 [a]",
                i % 4000 + 8,
                i / 4000,
                u64::from(i) * 8
            )?;
        }
        writeln!(
            out,
            "  a-1 [000] ..... 2.000000: block_bio_queue: 7,0 W 8 + 8 [a]"
        )
    };
    for dev in [Some("7,0"), None] {
        let mut a = args.to_vec();
        if let Some(d) = dev {
            a.extend(["--dev", d]);
        }
        let Some((ok, out, err)) = replay_limited(1 << 30, &a, devices) else {
            return;
        };
        assert!(ok, "--dev {dev:?}: {err}");
        let v: Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v["records"], 10_001, "{v}");
        if dev.is_some() {
            assert_eq!(v["bios"], 1, "{v}");
        }
    }
    let plugs = |out: &mut dyn std::io::Write| {
        let line = b"  a-1 [000] ..... 1.000000: block_plug: [a]\n";
        let block = line.repeat(1000);
        for _ in 0..3000 {
            out.write_all(&block)?;
        }
        writeln!(
            out,
            "  a-1 [000] ..... 2.000000: block_bio_queue: 7,0 W 8 + 8 [a]"
        )
    };
    let Some((ok, out, err)) = replay_limited(128 << 20, &args, plugs) else {
        return;
    };
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["records"], 3_000_001, "{v}");
    assert_eq!(v["bios"], 1, "{v}");
    assert_eq!(v["dev"], "7,0", "{v}");
}
