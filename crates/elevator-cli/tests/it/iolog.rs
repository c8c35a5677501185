//! `write_iolog` and `read_iolog` in fio jobs, against the real fio
//! (installed by scripts/test; nothing is skipped): (a) what `elevator run`
//! logs on a simulated device (and on a real file), `fio --read_iolog`
//! replays moving the same bytes; (b) what `fio --write_iolog` logs,
//! `elevator run` replays as the same I/Os (bytes and counts per
//! direction), simulated and real; (c) elevator's log replayed
//! by elevator issues the same bios (the Q events of both runs' traces), as
//! does its blktrace given to `read_iolog`.
//! No timing is compared.

use crate::common;

use std::path::Path;

use common::fio::{TempDir, elevator, fio, json, stdout_ok};
use elevator_core::{Op, TraceAction};
use elevator_trace::Item;

/// Bytes and I/Os by direction (read, write), summed over a report's jobs.
fn moved(what: &str, text: &str) -> [(u64, u64); 2] {
    let v = json(what, text);
    let jobs = v["jobs"].as_array().expect("jobs");
    let sum = |dir: &str, field: &str| -> u64 {
        jobs.iter()
            .map(|j| j[dir][field].as_u64().unwrap_or(0))
            .sum()
    };
    [
        (sum("read", "io_bytes"), sum("read", "total_ios")),
        (sum("write", "io_bytes"), sum("write", "total_ios")),
    ]
}

/// The bios of a blktrace written with `--trace-out PREFIX`: op, sector,
/// bytes, in the order queued (one clone, so one file).
fn bios(prefix: &Path) -> Vec<(Op, u64, u32)> {
    elevator_trace::open(prefix, None, false)
        .expect("open the trace")
        .filter_map(|item| match item.expect("a good trace") {
            Item::Record(r) if r.event.action == TraceAction::Queue => {
                Some((r.event.op, r.event.sector, r.event.bytes))
            }
            _ => None,
        })
        .collect()
}

fn arg(dir: &TempDir, name: &str) -> String {
    dir.path().join(name).to_str().expect("UTF-8").to_string()
}

/// A real device for elevator: a file of `bytes` in `dir`.
fn real_device(dir: &TempDir, bytes: u64) -> String {
    let path = dir.path().join("dev.img");
    std::fs::File::create(&path)
        .unwrap()
        .set_len(bytes)
        .unwrap();
    format!("file:{}", path.to_str().expect("UTF-8"))
}

#[test]
fn fio_replays_what_elevator_logs() {
    elevator_testkit::needs!("fio");
    for real in [false, true] {
        fio_replays_what_elevator_logs_on(real);
    }
}

fn fio_replays_what_elevator_logs_on(real: bool) {
    let dir = TempDir::new("iolog-a");
    let device = if real {
        real_device(&dir, 8 << 20)
    } else {
        "ssd-sata".to_string()
    };
    let job = dir.write(
        "w.fio",
        "[w]\nrw=randrw\nbs=4k\nsize=1m\nnumjobs=2\niodepth=8\nfsync=32\nwrite_iolog=w.log\n",
    );
    let out = elevator(
        dir.path(),
        &[
            "run",
            job.to_str().unwrap(),
            "--device",
            &device,
            "--output-format",
            "json",
        ],
    );
    let ours = moved("elevator", &stdout_ok("elevator run", &out));
    let log = std::fs::read_to_string(dir.path().join("w.log")).expect("the log");
    assert!(log.starts_with("fio version 3 iolog\n"), "{log}");
    // Each clone's whole log, one after the other, as fio appends them.
    assert_eq!(log.matches("fio version 3 iolog").count(), 2);
    assert!(log.contains(" w.0.0 add\n") && log.contains(" w.1.0 add\n"));
    assert!(!dir.path().join("w.log.elevator-clone-2").exists());
    // fio replays it on the clones' files.
    for name in ["w.0.0", "w.1.0"] {
        std::fs::File::create(dir.path().join(name))
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
    }
    let out = fio(
        dir.path(),
        &[
            "--name=replay",
            "--read_iolog=w.log",
            "--ioengine=psync",
            "--output-format=json",
        ],
    );
    let theirs = moved("fio", &stdout_ok("fio --read_iolog", &out));
    assert_eq!(theirs[0].0, ours[0].0, "bytes read");
    assert_eq!(theirs[1].0, ours[1].0, "bytes written");
    assert!(ours[0].0 > 0 && ours[1].0 > 0);
}

#[test]
fn elevator_replays_what_fio_logs() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("iolog-b");
    let out = fio(
        dir.path(),
        &[
            "--name=rec",
            "--filename=data",
            "--size=2m",
            "--bs=4k",
            "--bsrange=4k-16k",
            "--rw=randrw",
            "--ioengine=psync",
            "--write_iolog=rec.log",
            "--output-format=json",
        ],
    );
    let theirs = moved("fio", &stdout_ok("fio --write_iolog", &out));
    assert!(theirs[0].1 > 0 && theirs[1].1 > 0);
    for device in ["ssd-sata".to_string(), real_device(&dir, 4 << 20)] {
        let out = elevator(
            dir.path(),
            &[
                "run",
                "--name=replay",
                "--read_iolog=rec.log",
                "--iodepth=4",
                "--device",
                &device,
                "--output-format",
                "json",
            ],
        );
        let ours = moved("elevator", &stdout_ok("elevator run --read_iolog", &out));
        assert_eq!(ours, theirs, "(bytes, I/Os) read and written on {device}");
    }
}

#[test]
fn elevator_replays_what_it_logs_as_the_same_bios() {
    let dir = TempDir::new("iolog-c");
    let job = dir.write(
        "w.fio",
        "[w]\nrw=randrw\nbsrange=4k-64k\nsize=4m\niodepth=16\nfsync=8\nwrite_iolog=w.log\n",
    );
    let run = |job: &str, trace: &str| {
        let out = elevator(
            dir.path(),
            &[
                "run",
                job,
                "--device",
                "hdd-7200",
                "--output-format",
                "json",
                "--trace-out",
                &arg(&dir, trace),
            ],
        );
        moved("elevator", &stdout_ok("elevator run", &out))
    };
    let recorded = run(job.to_str().unwrap(), "rec");
    let replay = dir.write("r.fio", "[r]\nread_iolog=w.log\niodepth=16\n");
    let replayed = run(replay.to_str().unwrap(), "rep");
    assert_eq!(replayed, recorded);
    let (a, b) = (bios(&dir.path().join("rec")), bios(&dir.path().join("rep")));
    assert!(a.iter().any(|b| b.0 == Op::Flush), "no flush logged");
    assert_eq!(a.len(), b.len());
    assert!(a == b, "the replay's bios differ from the recording's");
    // The recording's blktrace replays as the same bios too (fio takes a
    // blktrace for read_iolog).
    let from_blktrace = dir.write(
        "b.fio",
        &format!(
            "[b]\nread_iolog={}\niodepth=16\n",
            arg(&dir, "rec.blktrace.0")
        ),
    );
    assert_eq!(run(from_blktrace.to_str().unwrap(), "rep2"), recorded);
    assert!(
        a == bios(&dir.path().join("rep2")),
        "the blktrace replay's bios differ"
    );
}
