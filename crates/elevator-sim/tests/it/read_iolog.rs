//! `read_iolog`: a job replaying a log issues exactly the log's I/Os (its
//! bios, the queue events Q, are the log's lines, in order), not before the
//! log's time for them on the virtual clock; `replay_skip` leaves
//! directions out; a bad log stops the job with an error naming the file
//! and the line; and what `write_iolog` logs of a run replays as the same
//! I/Os.

use elevator_core::{Op, TraceAction};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::{SimError, TraceOut, run_traced};
use elevator_trace::write_iolog::JobIologs;
use elevator_trace::{Item, MemorySink, TraceSink};

/// A v2 log of reads, writes, a trim and syncs, with waits (microseconds).
const LOG: &str = "fio version 2 iolog
/dev/sdb add
/dev/sdb open
/dev/sdb read 0 4096
/dev/sdb read 8192 16384
/dev/sdb wait 500 0
/dev/sdb write 1048576 4096
/dev/sdb write 1052672 4096
/dev/sdb sync 0 0
/dev/sdb wait 1000 0
/dev/sdb trim 2097152 65536
/dev/sdb read 4096 512
/dev/sdb datasync 0 0
/dev/sdb write 0 131072
/dev/sdb close
";

/// The I/Os of `LOG`: op, sector, bytes, and the log's time (µs).
const LOG_IOS: [(Op, u64, u32, u64); 9] = [
    (Op::Read, 0, 4096, 0),
    (Op::Read, 16, 16384, 0),
    (Op::Write, 2048, 4096, 500),
    (Op::Write, 2056, 4096, 500),
    (Op::Flush, 0, 0, 500),
    (Op::Discard, 4096, 65536, 1500),
    (Op::Read, 8, 512, 1500),
    (Op::Flush, 0, 0, 1500),
    (Op::Write, 0, 131072, 1500),
];

struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("elevator-read-iolog-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(job: &str, sink: &mut dyn TraceSink) -> Result<elevator_fio::result::RunResult, SimError> {
    let jobs = JobFile::parse(job, "t.fio").unwrap();
    let device = ModelSpec::parse("ssd-sata").unwrap();
    let mut out = TraceOut::new(sink);
    run_traced(
        &jobs,
        &device,
        &RunConfig::default(),
        &mut |_| {},
        Some(&mut out),
    )
}

/// The queue events of `items`: op, sector, bytes, time (ns).
fn queued(items: &[Item]) -> Vec<(Op, u64, u32, u64)> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Record(r) if r.event.action == TraceAction::Queue => {
                let e = r.event;
                Some((e.op, e.sector, e.bytes, e.time))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_replaying_job_issues_exactly_the_logs_ios_at_their_times() {
    let dir = Scratch::new("exact");
    let log = dir.write("log", LOG);
    let mut sink = MemorySink::default();
    let result = run(
        &format!("[r]\nread_iolog={log}\nioengine=libaio\niodepth=4\n"),
        &mut sink,
    )
    .unwrap();
    let got = queued(&sink.items);
    let want = &LOG_IOS[..];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!((g.0, g.1, g.2), (w.0, w.1, w.2), "{got:?}");
        assert!(
            g.3 >= w.3 * 1000,
            "{g:?} issued before the log's time {w:?}"
        );
    }
    let job = &result.jobs[0];
    let bytes = |op: Op| -> u64 {
        want.iter()
            .filter(|w| w.0 == op)
            .map(|w| u64::from(w.2))
            .sum()
    };
    assert_eq!(job.dirs[0].bytes, bytes(Op::Read));
    assert_eq!(job.dirs[1].bytes, bytes(Op::Write));
    assert_eq!(job.dirs[2].bytes, bytes(Op::Discard));
    // Without stalls, the same I/Os, the first four at once.
    let mut sink = MemorySink::default();
    run(
        &format!("[r]\nread_iolog={log}\nioengine=libaio\niodepth=4\nreplay_no_stall=1\n"),
        &mut sink,
    )
    .unwrap();
    let fast = queued(&sink.items);
    assert_eq!(
        fast.iter().map(|g| (g.0, g.1, g.2)).collect::<Vec<_>>(),
        want.iter().map(|w| (w.0, w.1, w.2)).collect::<Vec<_>>()
    );
    assert!(fast[..4].iter().all(|g| g.3 == 0), "{fast:?}");
}

#[test]
fn replay_skip_leaves_directions_out() {
    let dir = Scratch::new("skip");
    let log = dir.write("log", LOG);
    let mut sink = MemorySink::default();
    run(
        &format!("[r]\nread_iolog={log}\nreplay_skip=write,sync,trim\nreplay_no_stall=1\n"),
        &mut sink,
    )
    .unwrap();
    let ops: Vec<Op> = queued(&sink.items).iter().map(|g| g.0).collect();
    assert_eq!(ops, [Op::Read, Op::Read, Op::Read]);
}

#[test]
fn a_bad_log_stops_the_job_naming_file_and_line() {
    let dir = Scratch::new("bad");
    for (text, needle) in [
        (
            "fio version 2 iolog\n/d add\n/d read 0 4096\n/d read x 4096\n",
            "line 4",
        ),
        (
            "fio version 2 iolog\n/d add\n/d read 0 1000\n",
            "whole 512-byte",
        ),
        (
            "fio version 2 iolog\n/d add\n/d read 0 4096\n/d read 99999999999999 4096\n",
            "beyond the device",
        ),
    ] {
        let log = dir.write("bad.log", text);
        let mut sink = MemorySink::default();
        match run(&format!("[r]\nread_iolog={log}\n"), &mut sink) {
            Err(SimError::JobFailed { failure, .. }) => {
                let shown = failure.to_string();
                assert!(shown.contains(&log), "{shown}");
                assert!(shown.contains(needle), "{shown} lacks {needle}");
            }
            other => panic!("{text}: expected the job to fail, got {other:?}"),
        }
    }
    let missing = dir.0.join("none").to_str().unwrap().to_string();
    let e = run(
        &format!("[r]\nread_iolog={missing}\n"),
        &mut MemorySink::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("read_iolog") && e.contains(&missing), "{e}");
}

#[test]
fn what_write_iolog_logs_replays_as_the_same_ios() {
    let dir = Scratch::new("round-trip");
    let job = "[w]\nrw=randrw\nbs=4k\nsize=1m\niodepth=8\nfsync=16\n";
    let jobs = JobFile::parse(job, "t.fio").unwrap();
    let device = ModelSpec::parse("ssd-sata").unwrap();
    let bytes = device.build().unwrap().limits().capacity * 512;
    let clones = elevator_fio::workload::clone_files_all(&jobs, bytes).unwrap();
    let mut logs = JobIologs::new();
    logs.add(&clones[0], Vec::new()).unwrap();
    let mut both = elevator_trace::Tee {
        first: MemorySink::default(),
        second: logs,
    };
    run(job, &mut both).unwrap();
    both.finish().unwrap();
    let recorded = queued(&both.first.items);
    let text = String::from_utf8(both.second.into_writers().remove(0)).unwrap();
    assert!(
        text.starts_with("fio version 3 iolog\n0 w.0.0 add\n"),
        "{text}"
    );
    let log = dir.write("w.log", &text);
    let mut sink = MemorySink::default();
    run(&format!("[r]\nread_iolog={log}\niodepth=8\n"), &mut sink).unwrap();
    let replayed = queued(&sink.items);
    let ios = |v: &[(Op, u64, u32, u64)]| v.iter().map(|g| (g.0, g.1, g.2)).collect::<Vec<_>>();
    assert_eq!(ios(&replayed), ios(&recorded));
    assert!(recorded.iter().any(|g| g.0 == Op::Flush));
}
