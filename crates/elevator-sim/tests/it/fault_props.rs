//! Property tests: random I/O streams, with random faults, on every model.
//!
//! - straight onto the device (through the write log tap): every I/O
//!   completes exactly once, nothing hangs, I/O after a cut or a vanishing
//!   fails `Offline`, and the media agrees with the write log (no
//!   misdirected writes here: those must fail the check);
//! - fio jobs through the sim engine and the queue: the run ends, and every
//!   I/O the device was given came back exactly once.

use crate::common;

use std::collections::HashSet;

use elevator_core::{BioFlags, Device, DeviceIo, Nanos, Op, Outcome, Status};
use elevator_fio::RunConfig;
use elevator_fio::job::RwMode;
use elevator_sim::device::{ExtentMap, ModelSpec, SimDevice, WriteLogDevice};
use elevator_sim::engine::run_on;
use elevator_testkit::TagLedger;
use proptest::prelude::*;

const MODELS: [&str; 8] = [
    "null,latency=50",
    "raid0-8x-sas-10k,members=3,chunk=4k",
    "raid0-8x-sas-10k,members=2,chunk=8k,member=ssd-sata",
    "ssd-sata",
    "nvme,writeback=100us",
    "hdd-7200",
    "hdd-7200,ncq=1,cache_size=64k",
    "hdd-7200,write_cache=0",
];

fn faults() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just(0.0), Just(0.2)],
        prop_oneof![Just(0.0), Just(0.2)],
        prop_oneof![Just(0.0), Just(0.1)],
        proptest::option::of(0u64..40),
        proptest::option::of((0u64..1000, 1u64..64)),
        any::<bool>(),
        any::<u16>(),
    )
        .prop_map(|(torn, spike, timeout, end_ms, lse, cut, seed)| {
            let mut s = format!(
                "torn_rate={torn},spike_rate={spike},spike_ms=3,timeout_rate={timeout},\
                 timeout_ms=20,fail_seed={seed}"
            );
            if let Some(ms) = end_ms {
                let what = if cut { "power_cut_at" } else { "vanish_at" };
                s.push_str(&format!(",{what}={ms}ms"));
            }
            if let Some((a, n)) = lse {
                s.push_str(&format!(",lse_sectors={a}-{}", a + n));
            }
            s
        })
}

/// Model `m` with `faults` (the null device has no cache to lose: it
/// vanishes instead).
fn spec_of(m: usize, faults: &str) -> String {
    let faults = if MODELS[m].starts_with("null") {
        faults.replace("power_cut_at", "vanish_at")
    } else {
        faults.to_string()
    };
    format!("{},{faults}", MODELS[m])
}

/// One I/O: time since the last, operation, place, length, flags.
type Step = (u16, u8, u16, u8, u8);

fn steps() -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec((0u16..3000, 0u8..10, 0u16..1024, 1u8..33, 0u8..8), 1..120)
}

fn op_of(k: u8) -> Op {
    match k {
        0..=3 => Op::Write,
        4..=6 => Op::Read,
        7 => Op::Flush,
        8 => Op::Discard,
        _ => Op::WriteZeroes,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_io_completes_once_and_the_media_agrees(
        m in 0..MODELS.len(),
        faults in faults(),
        steps in steps(),
    ) {
        let spec = spec_of(m, &faults);
        let dev = ModelSpec::parse(&spec).unwrap().build_sim().unwrap();
        let mut tap = WriteLogDevice::new(dev, Vec::new()).unwrap();
        let qd = tap.queue_depth().min(16);
        let mut flying = HashSet::new();
        let mut free: Vec<u32> = (0..qd).rev().collect();
        let mut now: Nanos = 0;
        let mut gone_at = None;
        let take = |tap: &mut WriteLogDevice<Vec<u8>>, now: Nanos,
                        flying: &mut HashSet<u32>, free: &mut Vec<u32>| {
            let mut got = Vec::new();
            tap.complete(now, &mut |tag, o| got.push((tag, o)));
            for (tag, o) in got {
                prop_assert!(flying.remove(&tag), "tag {} completed twice", tag);
                free.push(tag);
                if let Outcome::Failed { status, good_bytes } = o {
                    prop_assert!(status != Status::Ok);
                    if status == Status::Offline || status == Status::TimedOut {
                        prop_assert_eq!(good_bytes, 0);
                    }
                }
            }
            Ok(())
        };
        for (gap, k, place, len, flags) in steps {
            let arrive = now + u64::from(gap) * 1000;
            // Completions up to the arrival, and room for it.
            loop {
                let next = tap.next_completion();
                match next {
                    Some(t) if t <= arrive || free.is_empty() => {
                        prop_assert!(t >= now, "time went backwards");
                        now = t;
                        take(&mut tap, now, &mut flying, &mut free)?;
                    }
                    None if free.is_empty() => prop_assert!(false, "full and nothing due"),
                    _ => break,
                }
            }
            now = now.max(arrive);
            let op = op_of(k);
            let mut f = BioFlags::NONE;
            if op == Op::Write && flags & 1 != 0 {
                f |= BioFlags::FUA;
            }
            if op == Op::Write && flags & 2 != 0 {
                f |= BioFlags::PREFLUSH;
            }
            let tag = free.pop().unwrap();
            flying.insert(tag);
            let sectors = if op == Op::Flush { 0 } else { u32::from(len) };
            tap.submit(
                DeviceIo { tag, op, sector: u64::from(place) * 4, sectors, flags: f },
                now,
            );
            if gone_at.is_none() {
                gone_at = tap.fault_counts().and_then(|c| c.gone).map(|g| g.at);
            }
        }
        let mut guard = 0;
        while !flying.is_empty() {
            let t = tap.next_completion();
            prop_assert!(t.is_some(), "{} I/Os outstanding, nothing due", flying.len());
            now = now.max(t.unwrap());
            take(&mut tap, now, &mut flying, &mut free)?;
            guard += 1;
            prop_assert!(guard < 100_000, "does not drain");
        }
        prop_assert_eq!(tap.outstanding(), 0);
        let (report, log) = tap.finish(now).unwrap();
        prop_assert!(report.verdict().is_ok(), "{}: {}", spec, report.summary());
        prop_assert!(report.check.is_some());
        // The log reads back whole.
        let mut r = elevator_trace::write_log::Reader::new(&log[..]).unwrap();
        let mut n = 0;
        while r.next_record().unwrap().is_some() {
            n += 1;
        }
        prop_assert_eq!(n, report.records);
    }
}

/// A device that checks the engine's side of the protocol: every tag it
/// reports was in flight, once.
struct Counting {
    inner: Box<dyn SimDevice + Send>,
    ledger: TagLedger,
}

impl Device for Counting {
    elevator_core::forward_device!(
        inner: describe,
        limits,
        queue_depth,
        rotational,
        next_completion,
        outstanding,
        stats,
        record_heads,
        take_heads,
    );
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.ledger.submit(&io);
        self.inner.submit(io, now);
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        let Counting { inner, ledger } = self;
        inner.complete(now, &mut |tag, o| {
            ledger.complete(tag);
            done(tag, o);
        });
    }
}

impl SimDevice for Counting {
    fn media(&self) -> Option<&ExtentMap> {
        self.inner.media()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn fio_jobs_through_the_engine_complete_once(
        m in 0..MODELS.len(),
        faults in faults(),
        rw in prop_oneof![Just(RwMode::RandRw), Just(RwMode::RandWrite), Just(RwMode::Write)],
        depth in 1u32..16,
        fsync in 0u32..8,
        sched in prop_oneof![Just("none"), Just("mq-deadline"), Just("bfq")],
        go_on in any::<bool>(),
    ) {
        let spec = ModelSpec::parse(&spec_of(m, &faults)).unwrap();
        let mut j = common::job("j", rw, 2 << 20, depth);
        j.fsync = fsync;
        if go_on {
            // Every error the faults make goes on: EIO, ETIMEDOUT, ENODEV.
            j.errors.continue_on = elevator_fio::job::ErrorPolicy::ALL;
            j.errors.ignore = [vec![5, 110, 19], vec![5, 110, 19], vec![]];
        }
        let jobs = common::file("p.fio", vec![j]);
        let mut dev = Counting {
            inner: spec.build_sim().unwrap(),
            ledger: TagLedger::default(),
        };
        let cfg = RunConfig { scheduler: sched.into(), ..RunConfig::default() };
        let r = run_on(&jobs, &mut dev, &cfg, &mut |_| {}, None, None);
        // A job ends at its first I/O error unless it goes on after them;
        // either way every I/O completes once.
        match r {
            Ok(_) => {}
            Err(elevator_sim::engine::SimError::JobFailed { .. }) if !go_on => {}
            Err(e) => prop_assert!(false, "{e}"),
        }
        prop_assert_eq!(dev.ledger.twice, 0);
        prop_assert!(dev.ledger.in_flight() == 0);
        prop_assert_eq!(dev.ledger.submitted, dev.ledger.completed);
    }
}
