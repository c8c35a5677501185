//! Every bio completes exactly once with faults injected: random streams of
//! reads, writes, flushes, discards and write-zeroes from two threads,
//! through the multi-queue layer under every lock mode, every scheduler
//! and every `nomerges`, over shares of one memory device with random
//! faults of every kind (failures, latent sector errors, torn and
//! misdirected writes, spikes and timeouts of a few milliseconds, and the
//! device vanishing mid-run), ended by a drain, a cancel, or dropping the
//! engines with I/O in flight.
//!
//! At the device each tag is reported once, with good bytes within its
//! length and a status the faults allow; each caller request completes
//! once, with a status the faults allow and never more good bytes than it
//! asked for; and nothing stalls.
//!
//! Deterministic: each combination's cases come from a seed of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use elevator_core::{Device, DeviceIo, Nanos, Outcome, Status};
use elevator_io::mq::{LockMode, MultiQueue};
use elevator_io::{
    AlignedBuf, Alignment, DataDevice, DataSegment, DeviceError, DioRequest, EngineConfig,
    FaultCounts, FaultDevice, FaultSpec, MemDevice, MemOptions,
};
use elevator_testkit::TagLedger;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

const BLOCK: u64 = 4096;
/// The device: 64 blocks.
const BLOCKS: u64 = 64;
const THREADS: usize = 2;

/// What one thread submits: an operation (0..6), a block and a length in
/// blocks.
type Step = (u8, u64, u64);

#[derive(Clone, Debug)]
struct Case {
    faults: FaultSpec,
    steps: [Vec<Step>; THREADS],
    /// End by cancelling rather than draining.
    cancel: bool,
    /// End by dropping the engines with I/O in flight (only the device's
    /// reports are checked then: the caller sees no completions).
    drop: bool,
}

fn rate(max: f64) -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), 0.0..max, Just(max)]
}

fn case() -> impl Strategy<Value = Case> {
    let faults = (
        any::<u64>(),
        rate(0.3),
        any::<bool>(),
        rate(0.5),
        rate(0.5),
        (rate(0.3), 1u64..4),
        (rate(0.2), 1u64..6),
        proptest::option::weighted(0.3, 0u64..15),
    )
        .prop_map(
            |(
                seed,
                fail,
                lse,
                torn,
                misdirect,
                (spike, spike_ms),
                (timeout, timeout_ms),
                vanish,
            )| {
                FaultSpec {
                    seed,
                    fail_rate: fail,
                    lse_sectors: if lse {
                        vec![(64, 80), (300, 310)]
                    } else {
                        Vec::new()
                    },
                    torn_rate: torn,
                    misdirect_rate: misdirect,
                    spike_rate: spike,
                    spike: Duration::from_millis(spike_ms),
                    timeout_rate: timeout,
                    timeout: Duration::from_millis(timeout_ms),
                    vanish_at: vanish.map(Duration::from_millis),
                    ..FaultSpec::default()
                }
            },
        );
    let steps = || proptest::collection::vec((0u8..6, 0..BLOCKS, 1u64..8), 10..40);
    let end = (proptest::bool::weighted(0.2), proptest::bool::weighted(0.2));
    (faults, steps(), steps(), end).prop_map(|(faults, a, b, (cancel, drop))| Case {
        faults,
        steps: [a, b],
        cancel,
        drop,
    })
}

/// The statuses `faults` (and a cancel) may produce.
fn allowed(faults: &FaultSpec, cancel: bool) -> Vec<Status> {
    let mut ok = vec![Status::Ok];
    if faults.fail_rate > 0.0 || !faults.lse_sectors.is_empty() || faults.torn_rate > 0.0 {
        ok.push(Status::IoError);
    }
    if faults.timeout_rate > 0.0 {
        ok.push(Status::TimedOut);
    }
    if faults.vanish_at.is_some() {
        ok.push(Status::Offline);
    }
    if cancel {
        ok.push(Status::Cancelled);
    }
    ok
}

/// A device that checks what the device under it reports: each tag once,
/// while in flight, with good bytes within its length and an allowed
/// status. Violations are noted, not panicked on (they may come up inside
/// an engine being dropped).
struct Checked<D> {
    inner: D,
    ledger: TagLedger,
    allowed: Vec<Status>,
    wrong: Arc<Mutex<Vec<String>>>,
}

impl<D: DataDevice> Checked<D> {
    fn note(&self, what: String) {
        self.wrong.lock().unwrap().push(what);
    }

    fn submitted(&mut self, io: &DeviceIo) {
        if !self.ledger.submit(io) {
            self.note(format!("tag {} submitted while in flight", io.tag));
        }
    }
}

impl<D> Drop for Checked<D> {
    fn drop(&mut self) {
        if self.ledger.in_flight() != 0 {
            let what = format!("dropped with {} tags unreported", self.ledger.in_flight());
            self.wrong.lock().unwrap().push(what);
        }
    }
}

impl<D: DataDevice> Device for Checked<D> {
    elevator_core::forward_device!(
        inner: describe,
        limits,
        queue_depth,
        rotational,
        next_completion,
        outstanding,
        stats,
    );
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.submitted(&io);
        self.inner.submit(io, now)
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        let mut got = Vec::new();
        self.inner.complete(now, &mut |tag, o| got.push((tag, o)));
        for (tag, o) in got {
            match self.ledger.complete(tag) {
                None => self.note(format!("tag {tag} completed but not in flight: {o:?}")),
                Some(bytes) => {
                    if let Outcome::Failed { status, good_bytes } = o {
                        if good_bytes > bytes {
                            self.note(format!("tag {tag}: {good_bytes} good of {bytes}"));
                        }
                        if !self.allowed.contains(&status) {
                            self.note(format!("tag {tag}: {status:?} not allowed"));
                        }
                    }
                }
            }
            done(tag, o);
        }
    }
}

impl<D: DataDevice> DataDevice for Checked<D> {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        self.submitted(&io);
        // SAFETY: passed on; our caller keeps the contract.
        unsafe { self.inner.submit_data(io, data, now) }
    }
    fn kick(&mut self) -> Result<(), DeviceError> {
        self.inner.kick()
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        self.inner.wait(timeout)
    }
    fn cancel_all(&mut self) {
        self.inner.cancel_all()
    }
    fn alignment(&self) -> Alignment {
        self.inner.alignment()
    }
    fn watch(&mut self, fd: std::os::fd::RawFd) -> Result<(), DeviceError> {
        self.inner.watch(fd)
    }
}

fn request(step: Step, id: u64) -> DioRequest<AlignedBuf> {
    let (op, block, blocks) = step;
    let blocks = blocks.min(BLOCKS - block);
    let (off, len) = (block * BLOCK, blocks * BLOCK);
    let buf = || vec![AlignedBuf::new(len as usize, 4096).expect("buffer")];
    match op {
        0 | 1 => DioRequest::read(off, buf(), id),
        2 | 3 => DioRequest::write(off, buf(), id),
        4 => DioRequest::flush(id),
        _ if block % 2 == 0 => DioRequest::discard(off, len, id),
        _ => DioRequest::write_zeroes(off, len, id),
    }
}

/// Run `case` under `lock`, `sched` and `nomerges`, adding the faults
/// injected to `seen`.
fn run(
    case: &Case,
    lock: LockMode,
    sched: &str,
    nomerges: &str,
    seen: &Mutex<FaultCounts>,
) -> Result<(), TestCaseError> {
    let allowed = allowed(&case.faults, case.cancel || case.drop);
    let wrong = Arc::new(Mutex::new(Vec::new()));
    let mem = MemDevice::new(BLOCKS * BLOCK, MemOptions::default()).expect("memory");
    let first = FaultDevice::new(mem, &case.faults);
    let second = first.share_with(first.inner().share().expect("share"));
    let checked = |inner| Checked {
        inner,
        ledger: TagLedger::default(),
        allowed: allowed.clone(),
        wrong: Arc::clone(&wrong),
    };
    let devs = vec![checked(first), checked(second)];
    let cfg = EngineConfig {
        scheduler: sched.into(),
        tunables: vec![
            ("nomerges".into(), nomerges.into()),
            ("nr_requests".into(), "16".into()),
        ],
        ..EngineConfig::default()
    };
    let mq = MultiQueue::new(&[&devs[0]], &[THREADS], &cfg, lock, false).expect("layer");
    let what = format!("{lock} {sched} nomerges={nomerges}");
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = devs
            .into_iter()
            .enumerate()
            .map(|(t, dev)| {
                let (mq, case, allowed) = (&mq, case, &allowed);
                s.spawn(move || -> Result<(), String> {
                    let mut e = mq.engine::<_, AlignedBuf>(t, 0, dev).expect("engine");
                    let mut lens = HashMap::new();
                    let mut out = Vec::new();
                    for (i, &step) in case.steps[t].iter().enumerate() {
                        let req = request(step, i as u64);
                        lens.insert(i as u64, req.bytes());
                        e.submit(req).map_err(|r| format!("refused: {}", r.error))?;
                        if i % 3 == 0 {
                            e.poll(Some(Duration::ZERO), &mut out)
                                .map_err(|e| e.to_string())?;
                        }
                    }
                    if case.drop {
                        // Dropped with I/O in flight: it cancels and waits
                        // for its device (the checks run as it is dropped).
                        return Ok(());
                    }
                    if case.cancel {
                        e.cancel();
                    }
                    while !e.is_idle() {
                        e.poll(None, &mut out).map_err(|e| e.to_string())?;
                    }
                    seen.lock().unwrap().add(&e.device().inner.counts());
                    let mut seen = HashMap::new();
                    for c in &out {
                        *seen.entry(c.user_data).or_insert(0) += 1;
                        let len = lens[&c.user_data];
                        match c.result {
                            Ok(n) if n == len => {}
                            Ok(n) => return Err(format!("{n} bytes done of {len}")),
                            Err(f) if f.done > len => {
                                return Err(format!("{f:?} of a {len}-byte request"));
                            }
                            Err(f) if !allowed.contains(&f.status) => {
                                return Err(format!("{f:?}: status not allowed"));
                            }
                            Err(_) => {}
                        }
                    }
                    if seen.len() != lens.len() || seen.values().any(|&n| n != 1) {
                        return Err(format!(
                            "{} requests, {} completed, some twice: {:?}",
                            lens.len(),
                            seen.len(),
                            seen.values().filter(|&&n| n != 1).count()
                        ));
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
            .collect()
    });
    for (t, r) in results.into_iter().enumerate() {
        if let Err(why) = r {
            return Err(TestCaseError::fail(format!("{what}: thread {t}: {why}")));
        }
    }
    let wrong = wrong.lock().unwrap();
    if !wrong.is_empty() {
        return Err(TestCaseError::fail(format!("{what}: {wrong:?}")));
    }
    let stats = mq.queue_stats();
    if stats.bios_completed != stats.bios {
        return Err(TestCaseError::fail(format!(
            "{what}: {} bios, {} completed",
            stats.bios, stats.bios_completed
        )));
    }
    Ok(())
}

#[test]
fn every_bio_completes_exactly_once_with_faults_injected() {
    let seen = Mutex::new(FaultCounts::default());
    let mut combo = 0u8;
    for lock in LockMode::ALL {
        for sched in elevator_core::SCHEDULER_NAMES {
            for nomerges in ["0", "1", "2"] {
                combo += 1;
                let config = Config {
                    cases: 6,
                    failure_persistence: None,
                    ..Config::default()
                };
                let mut seed = [0u8; 32];
                seed[0] = combo;
                let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
                let mut runner = TestRunner::new_with_rng(config, rng);
                if let Err(e) = runner.run(&case(), |c| run(&c, lock, sched, nomerges, &seen)) {
                    panic!("{lock} {sched} nomerges={nomerges}: {e}");
                }
            }
        }
    }
    // Every kind of fault came up somewhere.
    let seen = seen.into_inner().unwrap();
    let FaultCounts {
        failed,
        lse_reads,
        lse_repaired,
        torn,
        misdirected,
        spikes,
        timeouts,
        offline,
    } = seen;
    for (kind, n) in [
        ("failed", failed),
        ("lse_reads", lse_reads),
        ("lse_repaired", lse_repaired),
        ("torn", torn),
        ("misdirected", misdirected),
        ("spikes", spikes),
        ("timeouts", timeouts),
        ("offline", offline),
    ] {
        assert!(n > 0, "no {kind} fault in any case: {seen}");
    }
    eprintln!("faults injected: {seen}");
}
