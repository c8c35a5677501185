//! `elevator write-log show|replay` and `elevator crash-states` on logs of
//! a tiny "application": a header sector (`gen=G block=B`) pointing at a
//! data sector (`data gen=G`). The correct application writes the data,
//! flushes, writes the header, flushes, then marks `commit G`; the broken
//! one writes the header before flushing the data. A shell checker (dd, tr)
//! says whether an image is consistent and holds every committed
//! generation. Nothing here measures time.

use crate::common;
use common::elevator;
use common::fio::TempDir;

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use elevator_trace::write_log::{FLAG_DATA, Kind, LogHeader, Writer};
use serde_json::Value;

/// The checker (docs/trust.md's): an empty header is a fresh device (fine);
/// otherwise the data sector must hold the header's generation, and every
/// `commit N` mark must be visible.
const CHECKER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/crash/check-app.sh"
);

/// A sector holding `text`, zero-padded.
fn sector(text: &str) -> Vec<u8> {
    let mut s = vec![0u8; 512];
    s[..text.len()].copy_from_slice(text.as_bytes());
    s
}

/// Write the application's log: three generations, correct or broken.
fn app_log(path: &Path, correct: bool, has_data: bool) {
    let header = LogHeader {
        has_data,
        capacity: 64,
        block_size: 512,
    };
    let mut w = Writer::new(BufWriter::new(File::create(path).unwrap()), header).unwrap();
    let mut t = 0u64;
    let mut tick = || {
        t += 1000;
        t
    };
    let (flags, with) = if has_data {
        (FLAG_DATA, true)
    } else {
        (0, false)
    };
    let write = |w: &mut Writer<_>, at: u64, text: &str, t: u64| {
        let data = sector(text);
        let payload: &[&[u8]] = if with { &[&data] } else { &[] };
        w.append(Kind::Write, flags, at, 1, t, payload).unwrap();
    };
    for g in 1..=3u64 {
        let block = 10 + g;
        let data = format!("data gen={g}");
        let head = format!("gen={g} block={block}");
        if correct {
            write(&mut w, block, &data, tick());
            w.append(Kind::Flush, 0, 0, 0, tick(), &[]).unwrap();
            write(&mut w, 0, &head, tick());
        } else {
            write(&mut w, 0, &head, tick());
            write(&mut w, block, &data, tick());
        }
        w.append(Kind::Flush, 0, 0, 0, tick(), &[]).unwrap();
        w.mark(&format!("commit {g}"), tick()).unwrap();
    }
    w.into_inner().unwrap();
}

fn setup(correct: bool) -> (TempDir, String, String) {
    let dir = TempDir::new(if correct { "crash-ok" } else { "crash-broken" });
    let log = dir.file("app.wlog");
    app_log(Path::new(&log), correct, true);
    (dir, log, CHECKER.to_string())
}

/// `elevator crash-states LOG ARGS`.
fn crash_states(log: &str, args: &[&str]) -> std::process::Output {
    elevator(&[&["crash-states", log], args].concat())
}

/// The arguments of `elevator crash-states LOG --out OUT --check CHECK ARGS`.
fn checked_states_args<'a>(
    log: &'a str,
    out: &'a str,
    check: &'a str,
    args: &[&'a str],
) -> Vec<&'a str> {
    [&["crash-states", log, "--out", out, "--check", check], args].concat()
}

/// `elevator write-log replay LOG --out IMG ARGS`.
fn replay(log: &str, img: &str, args: &[&str]) -> std::process::Output {
    elevator(&[&["write-log", "replay", log, "--out", img], args].concat())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Assert that `bytes` (a command's stdout or stderr) hold `needle`.
fn assert_holds(bytes: &[u8], needle: &str) {
    let text = text(bytes);
    assert!(text.contains(needle), "{text}");
}

fn report(dir: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(dir).join("report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A crash-states run of the application checked by docs/trust.md's checker.
struct CheckedApp {
    dir: TempDir,
    log: String,
    out: String,
    check: String,
    o: std::process::Output,
}

/// Check the application's (correct or broken) states with
/// `--between 100 ARGS`.
fn check_app(correct: bool, args: &[&str]) -> CheckedApp {
    let (dir, log, checker) = setup(correct);
    let out = dir.file("states");
    let check = format!("sh {checker} {{}}");
    let o = elevator(&checked_states_args(
        &log,
        &out,
        &check,
        &[&["--between", "100"], args].concat(),
    ));
    CheckedApp {
        dir,
        log,
        out,
        check,
        o,
    }
}

#[test]
fn the_correct_application_passes_every_state() {
    elevator_testkit::needs!("sh");
    // The directory lives to the end of the test.
    let CheckedApp {
        dir: _dir, out, o, ..
    } = check_app(true, &["--jobs", "2"]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let r = report(&out);
    assert_eq!(r["failed"], 0);
    assert_eq!(r["passed"], r["explored"]);
    // 3 boundaries after the data flushes, 2 after the header flushes
    // (the last is the end), the end, and every subset between.
    assert_eq!(r["possible"], r["explored"]);
    assert!(r["explored"].as_u64().unwrap() >= 10, "{r}");
    assert_holds(&o.stdout, "0 failed");
    // Passing images are deleted (--keep failing).
    let images = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "img")
        })
        .count();
    assert_eq!(images, 0);
}

#[test]
fn the_broken_application_fails_and_only_rebuilds_the_image() {
    elevator_testkit::needs!("sh");
    let CheckedApp {
        dir,
        log,
        out,
        check,
        o,
    } = check_app(false, &["--seed", "7"]);
    assert!(!o.status.success());
    let stdout = text(&o.stdout);
    assert_holds(&o.stderr, "crash states failed the check");
    assert!(stdout.contains("FAILED c"), "{stdout}");
    assert!(stdout.contains("header says generation"), "{stdout}");
    let r = report(&out);
    let failing: Vec<&Value> = r["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "fail")
        .collect();
    assert!(!failing.is_empty());
    for s in &failing {
        // The header without its data: one of the two unflushed writes.
        assert_eq!(s["kept"], 1, "{s}");
        let id = s["id"].as_str().unwrap();
        assert_eq!(
            s["rebuild"].as_str().unwrap(),
            format!("elevator crash-states {log} --only {id} --seed 7 --out {out}")
        );
        // --only rebuilds it byte for byte, elsewhere.
        let again = dir.file(&format!("again-{id}"));
        let o = crash_states(&log, &["--only", id, "--seed", "7", "--out", &again]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let first = std::fs::read(Path::new(&out).join(format!("{id}.img"))).unwrap();
        let second = std::fs::read(Path::new(&again).join(format!("{id}.img"))).unwrap();
        assert!(first == second, "{id} rebuilt differently");
        // ... and the checker fails it again.
        let o = crash_states(
            &log,
            &[
                "--only", id, "--seed", "7", "--out", &again, "--check", &check,
            ],
        );
        assert!(!o.status.success());
    }
    // The rebuild command, run as printed, keeps the first run's report.
    let id = failing[0]["id"].as_str().unwrap();
    let explored = r["explored"].clone();
    let o = crash_states(&log, &["--only", id, "--seed", "7", "--out", &out]);
    assert!(o.status.success());
    assert_eq!(report(&out)["explored"], explored);
    assert!(Path::new(&out).join(format!("report-{id}.json")).exists());
    // Boundaries and the end pass: each flush covers header and data.
    for s in r["states"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        if id.starts_with('f') || id == "end" {
            assert_eq!(s["status"], "pass", "{s}");
        }
    }
}

/// Check two states (two at a time) with `check` under `--timeout 1`,
/// run by `run`; both must fail. Returns the directory, `--out` and the
/// output.
fn two_states_timing_out(
    check: &str,
    run: fn(&[&str]) -> std::process::Output,
) -> (TempDir, String, std::process::Output) {
    let (dir, log, _) = setup(true);
    let out = dir.file("states");
    let o = run(&checked_states_args(
        &log,
        &out,
        check,
        &["--timeout", "1", "--max-states", "2", "--jobs", "2"],
    ));
    assert!(!o.status.success());
    let doc = report(&out);
    assert_eq!(doc["failed"], 2, "{doc}");
    (dir, out, o)
}

#[test]
fn a_hanging_checker_is_killed_at_its_timeout() {
    elevator_testkit::needs!("sh", "sleep");
    let (_dir, _, o) = two_states_timing_out("sleep 100; true", elevator);
    let stdout = text(&o.stdout);
    assert!(stdout.contains("timed out after 1 s"), "{stdout}");
}

#[test]
fn without_a_check_every_image_is_written_and_listed() {
    let (dir, log, _) = setup(true);
    let out = dir.file("states");
    let o = elevator(&["crash-states", &log, "--out", &out, "--between", "2"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("images (no --check)"), "{stdout}");
    let r = report(&out);
    for s in r["states"].as_array().unwrap() {
        assert_eq!(s["status"], "unchecked");
        assert!(Path::new(s["image"].as_str().unwrap()).exists(), "{s}");
    }
    // Too many for --max-states: refused, saying what to do.
    let o = elevator(&["crash-states", &log, "--out", &out, "--max-states", "3"]);
    assert!(!o.status.success());
    assert_holds(&o.stderr, "more than --max-states 3");
}

#[test]
fn the_end_state_is_the_whole_replay() {
    let (dir, log, _) = setup(true);
    let img = dir.file("replayed.img");
    let o = replay(&log, &img, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_holds(&o.stdout, "replayed records 0..15 of 15");
    let out = dir.file("states");
    let o = elevator(&["crash-states", &log, "--only", "end", "--out", &out]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let end = std::fs::read(Path::new(&out).join("end.img")).unwrap();
    assert!(std::fs::read(&img).unwrap() == end);
    assert_eq!(end.len(), 64 * 512);
    assert_eq!(&end[..17], b"gen=3 block=13\0\0\0");
}

#[test]
fn replay_stops_at_a_mark_or_a_record() {
    let (dir, log, _) = setup(true);
    let img = dir.file("two.img");
    let o = replay(&log, &img, &["--to-mark", "commit 2"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_holds(&o.stdout, "through mark 9 \"commit 2\"");
    let bytes = std::fs::read(&img).unwrap();
    assert_eq!(&bytes[..14], b"gen=2 block=12");
    // A prefix of a mark's text finds it too.
    let o = replay(&log, &img, &["--to-mark", "commit"]);
    assert_holds(&o.stdout, "through mark 4");
    // Record 0 is generation 1's data alone.
    let o = replay(&log, &img, &["--to-record", "0"]);
    assert!(o.status.success());
    let bytes = std::fs::read(&img).unwrap();
    assert!(bytes[..512].iter().all(|&b| b == 0));
    assert_eq!(&bytes[11 * 512..11 * 512 + 10], b"data gen=1");
    let o = replay(&log, &img, &["--to-mark", "nope"]);
    assert_holds(&o.stderr, "no mark's text is or starts with \"nope\"");
    let o = replay(&log, &img, &["--to-record", "15"]);
    assert_holds(&o.stderr, "the log has 15 records");
}

#[test]
fn a_log_without_data_is_refused() {
    let dir = TempDir::new("crash-nodata");
    let log = dir.file("sim.wlog");
    app_log(Path::new(&log), true, false);
    for args in [
        vec!["write-log", "replay", &log, "--out", "/nonexistent/x.img"],
        vec!["crash-states", &log, "--out", "/nonexistent/dir"],
    ] {
        let o = elevator(&args);
        assert!(!o.status.success());
        assert_holds(&o.stderr, "the log carries no data");
    }
    // show still prints it.
    let o = elevator(&["write-log", "show", &log]);
    assert!(o.status.success());
    assert_holds(&o.stdout, "no data (a simulated device)");
}

#[test]
fn show_prints_records_and_a_summary() {
    let (_dir, log, _) = setup(true);
    let o = elevator(&["write-log", "show", &log, "--data"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("capacity 64 sectors"), "{out}");
    assert!(out.contains("writes carry their data"), "{out}");
    let first = out.lines().nth(2).unwrap();
    assert!(first.contains("write") && first.contains("11+1"), "{first}");
    let crc = format!("crc32 {:08x}", common::crc32(&sector("data gen=1")));
    assert!(first.contains(&crc), "{first}");
    assert!(out.contains("\"commit 3\""), "{out}");
    assert!(
        out.contains("15 records over 0.000015 s: 6 write (0 FUA), 0 discard, 0 write-zeroes, 6 flush, 3 mark"),
        "{out}"
    );
    assert!(
        out.contains("flush epochs: 6 flushed, 0 content records after the last flush"),
        "{out}"
    );
    let o = elevator(&["write-log", "show", &log, "--output-format", "json"]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["records"].as_array().unwrap().len(), 15);
    assert_eq!(doc["summary"]["mark"], 3);
    assert_eq!(doc["error"], Value::Null);
}

#[test]
fn a_truncated_log_names_the_record_and_valid_prefix_uses_the_rest() {
    elevator_testkit::needs!("sh");
    let (dir, log, checker) = setup(true);
    let bytes = std::fs::read(&log).unwrap();
    let cut = dir.file("cut.wlog");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    // The last record is the mark "commit 3" (record 14).
    let o = elevator(&["write-log", "show", &cut]);
    assert!(!o.status.success());
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(
        out.contains("\"commit 2\"") && !out.contains("\"commit 3\""),
        "{out}"
    );
    assert!(err.contains("record 14 at byte"), "{err}");
    assert!(err.contains("truncated"), "{err}");
    let img = dir.file("x.img");
    let o = replay(&cut, &img, &[]);
    assert!(!o.status.success());
    assert_holds(
        &o.stderr,
        "pass --valid-prefix to use the 14 records before it",
    );
    let o = replay(&cut, &img, &["--valid-prefix"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_holds(&o.stderr, "using the 14 records before it");
    let out = dir.file("states");
    let check = format!("sh {checker} {{}}");
    let o = elevator(&checked_states_args(&cut, &out, &check, &[]));
    assert!(!o.status.success());
    assert_holds(&o.stderr, "record 14 at byte");
    let o = elevator(&checked_states_args(
        &cut,
        &out,
        &check,
        &["--valid-prefix"],
    ));
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    assert_eq!(report(&out)["records"], 14);
}

#[test]
fn a_base_image_shows_under_the_writes_and_keep_all_keeps_every_image() {
    elevator_testkit::needs!("prlimit", "sh", "dd", "grep");
    let (dir, log, checker) = setup(true);
    let mut base = vec![0u8; 48 * 512];
    base[40 * 512..40 * 512 + 4].copy_from_slice(b"BASE");
    let base_path = dir.file("base.img");
    std::fs::write(&base_path, &base).unwrap();
    let img = dir.file("r.img");
    let o = replay(&log, &img, &["--base", &base_path]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let bytes = std::fs::read(&img).unwrap();
    assert_eq!(bytes.len(), 64 * 512, "extended to the device's capacity");
    assert_eq!(&bytes[40 * 512..40 * 512 + 4], b"BASE");
    assert_eq!(&bytes[..14], b"gen=3 block=13");
    let out = dir.file("states");
    let check = format!(
        "sh {checker} {{}} && dd if={{}} bs=512 skip=40 count=1 2>/dev/null | grep -q BASE"
    );
    let o = elevator(&checked_states_args(
        &log,
        &out,
        &check,
        &["--base", &base_path, "--keep", "all"],
    ));
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let r = report(&out);
    for s in r["states"].as_array().unwrap() {
        assert!(Path::new(s["image"].as_str().unwrap()).exists(), "{s}");
        assert!(
            s["rebuild"]
                .as_str()
                .unwrap()
                .ends_with(&format!("--base {base_path}"))
        );
    }
    // A base larger than the device is refused.
    std::fs::write(&base_path, vec![0u8; 65 * 512]).unwrap();
    let o = replay(&log, &img, &["--base", &base_path]);
    assert_holds(&o.stderr, "more than the log's device");
}

/// Run `elevator ARGS` under a 64 MiB file-size limit (prlimit), so that
/// output written without bound fails the test instead of filling the
/// disk; killed past a guard of 120 s (never a measure of time).
fn elevator_bounded(args: &[&str]) -> std::process::Output {
    let mut child = std::process::Command::new("prlimit")
        .arg(format!("--fsize={}", 64 << 20))
        .arg(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running prlimit (util-linux)");
    let start = std::time::Instant::now();
    while child.try_wait().expect("waiting").is_none() {
        if start.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("elevator {args:?} did not end within 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("its output")
}

/// A checker that prints without end (`yes`) is stopped at --timeout,
/// output included, and keeps a bounded tail: ID.out is a line counting
/// what was dropped and the last 64 KiB; the report says how many bytes
/// were dropped and shows the last lines.
#[test]
fn a_checker_that_prints_forever_keeps_a_bounded_tail() {
    elevator_testkit::needs!("sh", "yes");
    let (_dir, out, o) = two_states_timing_out("yes", elevator_bounded);
    let doc = report(&out);
    for s in doc["states"].as_array().expect("states") {
        assert_eq!(
            s["why"], "timed out after 1 s; its process group was killed",
            "{s}"
        );
        assert!(s["output_dropped_bytes"].as_u64() > Some(0), "{s}");
        assert_eq!(s["output_tail"].as_array().map(Vec::len), Some(10), "{s}");
        assert_eq!(s["output_tail"][9], "y", "{s}");
        let id = s["id"].as_str().expect("id");
        let bytes = std::fs::read(Path::new(&out).join(format!("{id}.out"))).expect("ID.out");
        let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
        let first = text(first);
        assert!(
            first.starts_with("[elevator: the checker's first ")
                && first.ends_with(" bytes of output were dropped; its last 65536 follow]"),
            "{first}"
        );
        assert_eq!(bytes.len(), first.len() + 1 + 65536);
    }
    assert_holds(&o.stdout, "bytes of output were dropped;");
}

/// What a checker leaves running is not left behind: what it started in
/// its process group is killed when it exits, and a process that left the
/// group (setsid) holding the output pipe is not waited for.
#[test]
fn a_checkers_leftovers_are_killed_or_not_waited_for() {
    elevator_testkit::needs!("kill", "sh", "sleep", "setsid");
    let (dir, log, _) = setup(true);
    let out = dir.file("states");
    let pids = dir.file("pids");
    let check = format!(
        "sleep 1000 & echo $! >> {pids}.group; setsid sleep 1000 & echo $! >> {pids}.setsid; echo started"
    );
    let o = elevator_bounded(&checked_states_args(
        &log,
        &out,
        &check,
        &["--max-states", "2", "--jobs", "1"],
    ));
    let setsid = std::fs::read_to_string(format!("{pids}.setsid")).unwrap_or_default();
    for pid in setsid.split_whitespace() {
        let _ = std::process::Command::new("kill")
            .args(["-9", pid])
            .status();
    }
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(report(&out)["passed"], 2);
    let group = std::fs::read_to_string(format!("{pids}.group")).expect("the pids");
    assert_eq!(group.split_whitespace().count(), 2, "{group}");
    for pid in group.split_whitespace() {
        // Killed; its zombie (if init has not reaped it yet) is not alive.
        let start = std::time::Instant::now();
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit(") ").next().and_then(|s| s.chars().next());
            if stat.is_empty() || state == Some('Z') {
                break;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(120),
                "the checker's background sleep {pid} is still running: {stat}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// A tmpfs mounted for a test, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// Mount a tmpfs of `size` at `path` (None, said on stderr, where
    /// mounting is not allowed: common::skip).
    fn mount(path: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(path).expect("a mount point");
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .output()
            .expect("running mount");
        if !out.status.success() {
            common::skip(
                "images_stop_before_the_out_file_system_is_full",
                &format!("cannot mount a tmpfs: {}", text(&out.stderr).trim()),
            );
            return None;
        }
        Some(Tmpfs(path.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// `--out` on a file system too small for every image: crash-states stops
/// with an error naming --out before the file system is full (it keeps a
/// twentieth of it free, at most 64 MiB), instead of filling it.
#[test]
fn images_stop_before_the_out_file_system_is_full() {
    elevator_testkit::needs!("mount", "umount");
    let dir = TempDir::new("crash-disk");
    // A 32 MiB device: 16 writes of 2 MiB, each flushed; the states'
    // images hold 2 to 32 MiB each, 272 MiB in all.
    let log = dir.file("big.wlog");
    let header = LogHeader {
        has_data: true,
        capacity: 32 << 11,
        block_size: 512,
    };
    let mut w = Writer::new(BufWriter::new(File::create(&log).unwrap()), header).unwrap();
    for i in 0..16u64 {
        let data = vec![0x5a ^ i as u8; 2 << 20];
        w.append(Kind::Write, FLAG_DATA, i * 4096, 4096, i * 2000, &[&data])
            .unwrap();
        w.append(Kind::Flush, 0, 0, 0, i * 2000 + 1000, &[])
            .unwrap();
    }
    w.into_inner().unwrap();
    let mnt = dir.path().join("small");
    let Some(_fs) = Tmpfs::mount(&mnt, "64m") else {
        return;
    };
    let out = mnt.join("states");
    let out = out.to_str().expect("UTF-8 path");
    let o = elevator_bounded(&["crash-states", &log, "--out", out, "--max-states", "200"]);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(&format!("--out {out}: ")) && err.contains("kept free: free some space"),
        "{err}"
    );
    let fs = rustix::fs::statvfs(&mnt).expect("statvfs");
    let free = fs.f_bavail * fs.f_frsize;
    assert!(free >= (64 << 20) / 20, "{free} bytes left free");
}
