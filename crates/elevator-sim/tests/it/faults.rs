//! Each fault on a model: one completion per I/O, with the right status,
//! time and good bytes; torn and misdirected writes as the write log's check
//! sees them.

use elevator_core::{BioFlags, DeviceIo, Nanos, Op, Outcome, Status};
use elevator_sim::device::{ModelSpec, SimDevice, WriteLogDevice};

type Done = Vec<(u32, Outcome, Nanos)>;

fn io(tag: u32, op: Op, sector: u64, sectors: u32) -> DeviceIo {
    DeviceIo {
        tag,
        op,
        sector,
        sectors,
        flags: BioFlags::NONE,
    }
}

/// Submit `ios` at their times, run to the end; every completion.
fn drive(dev: &mut dyn SimDevice, ios: &[(Nanos, DeviceIo)]) -> Done {
    let mut done = Vec::new();
    let mut now = 0;
    let mut next = 0;
    loop {
        let arrival = ios.get(next).map(|&(t, _)| t);
        let t = match (arrival, dev.next_completion()) {
            (None, None) => break,
            (a, c) => a.into_iter().chain(c).min().unwrap(),
        };
        now = now.max(t);
        dev.complete(now, &mut |tag, o| done.push((tag, o, now)));
        while let Some(&(t, io)) = ios.get(next)
            && t <= now
        {
            dev.submit(io, now);
            next += 1;
        }
    }
    assert_eq!(dev.outstanding(), 0);
    done
}

fn model(spec: &str) -> Box<dyn SimDevice + Send> {
    ModelSpec::parse(spec).unwrap().build_sim().unwrap()
}

fn once_each(done: &Done, n: u32) {
    let mut tags: Vec<u32> = done.iter().map(|d| d.0).collect();
    tags.sort_unstable();
    assert_eq!(tags, (0..n).collect::<Vec<_>>(), "one completion per I/O");
}

fn failed(status: Status, good_bytes: u64) -> Outcome {
    Outcome::Failed { status, good_bytes }
}

#[test]
fn latent_sector_errors_fail_reads_until_written() {
    let mut d = model("null,latency=100,lse_sectors=104-106:900-901");
    let done = drive(
        &mut *d,
        &[
            (0, io(0, Op::Read, 100, 8)),
            (0, io(1, Op::Read, 0, 8)),
            (1_000_000, io(2, Op::Write, 96, 16)),
            (2_000_000, io(3, Op::Read, 100, 8)),
            (2_000_000, io(4, Op::Read, 896, 8)),
        ],
    );
    once_each(&done, 5);
    let by_tag = |t: u32| done.iter().find(|d| d.0 == t).unwrap().1;
    assert_eq!(by_tag(0), failed(Status::IoError, 4 * 512));
    assert_eq!(by_tag(1), Outcome::Done);
    assert_eq!(
        by_tag(2),
        Outcome::Done,
        "a write over bad sectors succeeds"
    );
    assert_eq!(by_tag(3), Outcome::Done, "and repairs them");
    assert_eq!(by_tag(4), failed(Status::IoError, 4 * 512));
    let c = d.fault_counts().unwrap();
    assert_eq!((c.lse_reads, c.lse_repaired), (2, 1));
}

#[test]
fn torn_writes_fail_with_a_prefix_that_is_all_that_lands() {
    let mut tap =
        WriteLogDevice::new(model("ssd-sata,torn_rate=1,fail_seed=7"), Vec::new()).unwrap();
    let ios: Vec<(Nanos, DeviceIo)> = (0..20)
        .map(|i| {
            (
                u64::from(i) * 1_000_000,
                io(i, Op::Write, u64::from(i) * 64, 16),
            )
        })
        .collect();
    let done = drive(&mut tap, &ios);
    once_each(&done, 20);
    tap.end_of_run(100_000_000);
    let media = tap.media().unwrap().clone();
    for &(tag, o, _) in &done {
        let Outcome::Failed {
            status: Status::IoError,
            good_bytes,
        } = o
        else {
            panic!("tag {tag}: {o:?}");
        };
        assert!(good_bytes < 16 * 512 && good_bytes % 512 == 0);
        let lo = u64::from(tag) * 64;
        let kept = good_bytes / 512;
        for s in lo..lo + 16 {
            let want = if s < lo + kept { u64::from(tag) + 1 } else { 0 };
            assert_eq!(media.get(s), want, "sector {s}");
        }
    }
    let (r, _) = tap.finish(100_000_000).unwrap();
    assert_eq!(r.faults.unwrap().torn, 20);
    assert!(
        r.verdict().is_ok(),
        "a torn write's prefix is allowed: {}",
        r.summary()
    );
    assert_eq!(r.recorded_writes, 0, "failed writes are not recorded");
}

#[test]
fn a_misdirected_write_fails_the_check() {
    let mut tap =
        WriteLogDevice::new(model("hdd-7200,misdirect_rate=1,fail_seed=1"), Vec::new()).unwrap();
    let done = drive(
        &mut tap,
        &[
            (0, io(0, Op::Write, 1000, 8)),
            (10_000_000, io(1, Op::Flush, 0, 0)),
        ],
    );
    assert_eq!(
        done.iter().map(|d| d.1).collect::<Vec<_>>(),
        vec![Outcome::Done; 2]
    );
    let (r, _) = tap.finish(0).unwrap();
    assert_eq!(r.faults.unwrap().misdirected, 1);
    let c = r.check.as_ref().unwrap();
    assert_eq!(c.violations, 2, "{:?}", c.first);
    let e = r.verdict().unwrap_err().to_string();
    assert!(e.contains("misdirected"), "{e}");
    let line = r.summary();
    assert!(
        line.contains("write log check FAILED") && line.contains("1 misdirected writes injected"),
        "{line}"
    );
}

#[test]
fn spikes_are_late_and_ok() {
    let mut d = model("null,latency=100,spike_rate=1,spike_ms=5");
    let done = drive(
        &mut *d,
        &[(0, io(0, Op::Read, 0, 8)), (0, io(1, Op::Write, 8, 8))],
    );
    assert_eq!(
        done,
        vec![(0, Outcome::Done, 5_100_000), (1, Outcome::Done, 5_100_000)]
    );
    assert_eq!(d.fault_counts().unwrap().spikes, 2);
}

#[test]
fn timeouts_complete_timed_out_after_timeout_ms() {
    let mut d = model("ssd-sata,timeout_rate=1,timeout_ms=50");
    let done = drive(
        &mut *d,
        &[
            (0, io(0, Op::Read, 0, 8)),
            (1_000_000, io(1, Op::Write, 8, 8)),
            (2_000_000, io(2, Op::Flush, 0, 0)),
        ],
    );
    let t = failed(Status::TimedOut, 0);
    assert_eq!(
        done,
        vec![(0, t, 50_000_000), (1, t, 51_000_000), (2, t, 52_000_000)]
    );
    // The default is Linux's request timeout.
    let mut d = model("null,timeout_rate=1");
    let done = drive(&mut *d, &[(0, io(0, Op::Read, 0, 8))]);
    assert_eq!(done, vec![(0, t, 30_000_000_000)]);
}

#[test]
fn a_vanished_device_fails_everything_offline() {
    let mut d = model("null,latency=2000,vanish_at=1ms");
    let done = drive(
        &mut *d,
        &[
            (0, io(0, Op::Write, 0, 8)),
            (0, io(1, Op::Flush, 0, 0)),
            (500_000, io(2, Op::Read, 0, 8)),
            (3_000_000, io(3, Op::Read, 0, 8)),
        ],
    );
    let off = failed(Status::Offline, 0);
    assert_eq!(
        done,
        vec![
            (0, off, 1_000_000),
            (1, off, 1_000_000),
            (2, off, 1_000_000),
            (3, off, 4_000_000)
        ]
    );
    let c = d.fault_counts().unwrap();
    assert_eq!(c.offline, 4);
    assert!(c.gone.is_some_and(|g| g.at == 1_000_000 && !g.power_cut));
}

#[test]
fn fault_options_are_checked() {
    for (spec, what) in [
        ("null,torn_rate=2", "fraction"),
        ("null,lse_sectors=9-3", "START < END"),
        ("null,vanish_at=-1", "time"),
        ("null,spike_ms=1.5", "whole number"),
        ("null,tron_rate=0.1", "torn_rate"),
    ] {
        let e = ModelSpec::parse(spec).unwrap_err().to_string();
        assert!(e.contains(what), "{spec}: {e}");
    }
    let s = ModelSpec::parse("hdd-7200,vanish_at=500ms,fail_seed=3").unwrap();
    assert_eq!(s.faults.vanish_at, Some(500_000_000));
    assert!(s.has_faults() && !ModelSpec::parse("hdd-7200").unwrap().has_faults());
}

#[test]
fn fault_times_are_bounded() {
    let e = ModelSpec::parse("null,spike_ms=999999999999999")
        .unwrap_err()
        .to_string();
    assert!(e.contains("at most"), "{e}");
    let e = ModelSpec::parse("null,vanish_at=1e300")
        .unwrap_err()
        .to_string();
    assert!(e.contains("time"), "{e}");
}

/// Every fault option `elevator devices` lists for models
/// ([`FAULT_PARAMS`](elevator_sim::device::fault::FAULT_PARAMS)) is taken
/// by a model's spec and changes it; a misspelt one gets the nearest name.
#[test]
fn every_listed_fault_option_is_taken_by_a_model() {
    let plain = ModelSpec::parse("hdd-7200").expect("preset");
    for (name, default, meaning) in elevator_sim::device::fault::FAULT_PARAMS {
        assert!(!default.is_empty() && !meaning.is_empty(), "{name}");
        let value = match name {
            "lse_sectors" => "8-16",
            "spike_ms" | "timeout_ms" | "fail_seed" => "5",
            "vanish_at" | "power_cut_at" => "2s",
            n if n.ends_with("_rate") => "0.1",
            other => panic!("fault option {other} has no example here: add one"),
        };
        let spec = format!("hdd-7200,{name}={value}");
        let parsed = ModelSpec::parse(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_ne!(parsed, plain, "{spec}: parsed, but changed nothing");
    }
    let e = ModelSpec::parse("hdd-7200,torn_rat=0.1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("(did you mean torn_rate?)"), "{e}");
    let e = ModelSpec::parse("hdd-7200,rmp=5400")
        .unwrap_err()
        .to_string();
    assert!(e.contains("(did you mean rpm?)"), "{e}");
    let e = ModelSpec::parse("hdd-7300").unwrap_err().to_string();
    assert!(e.contains("(did you mean hdd-7200?)"), "{e}");
}
