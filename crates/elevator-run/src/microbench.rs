//! The CPU cost per I/O of elevator-core's path (submit, merge attempt,
//! insert, dispatch, complete), with no device: the measuring behind
//! `elevator microbench` and the `merging` and `deadline_cost` experiments.
//!
//! Each [`Case`] builds a fresh queue, fills the scheduler to `depth` queued
//! requests, runs a warm-up, then times `ios` bios in steady state: each bio
//! is submitted, and whenever more than `depth` requests are queued one is
//! dispatched to a pretend device that holds up to `inflight` requests and
//! completes the oldest as soon as it needs room. Time is this thread's CPU
//! time, so a busy machine slows the run but not the figure much; each case
//! runs `repeat` times and [`measure`] reports the median.

use std::collections::VecDeque;

use crate::cpu_time::thread_cpu_ns;
use elevator_core::rng::splitmix64;
use elevator_core::{
    AnyScheduler, Bio, BioCompletion, ConfigError, Dispatch, Limits, Outcome, Queue, QueueConfig,
    RequestError, RequestId, Scheduler, Status, SubmitError, TunableError, UnknownScheduler,
};
use serde::Serialize;

/// Size of the pretend device, in sectors (1 TiB): random 4 KiB I/O over it
/// almost never lands next to a queued request.
const DEVICE_SECTORS: u64 = 1 << 31;
/// Virtual time between bios (the core's deadlines never expire at this pace
/// for the depths measured here).
const TICK_NS: u64 = 1_000;

/// The most runs per case: each run's figures are kept for the median.
pub const MAX_REPEAT: u32 = 1000;

/// Why a case could not be measured: a [`MicrobenchErrorKind`], boxed so
/// that the timed loop's `Result` stays one pointer wide.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct MicrobenchError(Box<MicrobenchErrorKind>);

impl MicrobenchError {
    /// What went wrong.
    pub fn kind(&self) -> &MicrobenchErrorKind {
        &self.0
    }
}

impl From<MicrobenchErrorKind> for MicrobenchError {
    fn from(kind: MicrobenchErrorKind) -> MicrobenchError {
        MicrobenchError(Box::new(kind))
    }
}

impl From<UnknownScheduler> for MicrobenchError {
    fn from(e: UnknownScheduler) -> MicrobenchError {
        MicrobenchErrorKind::Scheduler(e).into()
    }
}

/// What went wrong in a case.
#[derive(Debug, thiserror::Error)]
pub enum MicrobenchErrorKind {
    /// The case's scheduler is not one elevator-core has.
    #[error(transparent)]
    Scheduler(UnknownScheduler),
    /// The queue refused the case's configuration.
    #[error("building the queue")]
    Queue(#[source] ConfigError),
    /// A `--set` tunable was refused.
    #[error("--set {name}={value} for {scheduler}")]
    Set {
        /// The tunable.
        name: String,
        /// Its value.
        value: String,
        /// The case's scheduler.
        scheduler: String,
        /// Why it was refused.
        #[source]
        source: TunableError,
    },
    /// `nr_requests` could not be read back.
    #[error("reading nr_requests")]
    ReadNrRequests(#[source] TunableError),
    /// `nr_requests` (set by `--set`) leaves too few tags for the case.
    #[error(
        "nr_requests={nr_requests} is too small for this case: it keeps {depth} requests queued \
         (--depth) while the pretend device holds {inflight} (--inflight), so it needs at least \
         {needed} tags (microbench sets nr_requests={needed} itself: leave it out of --set, or \
         lower --depth or --inflight)"
    )]
    TooFewTags {
        /// The queue's `nr_requests`.
        nr_requests: u64,
        /// The case's depth.
        depth: u32,
        /// The case's inflight.
        inflight: u32,
        /// Tags the case needs.
        needed: u32,
    },
    /// The queue refused a completion.
    #[error("completing a dispatched request")]
    Complete(#[source] RequestError),
    /// The queue refused a bio.
    #[error("submitting a bio")]
    Submit(#[source] SubmitError),
    /// No tag was free and nothing could be dispatched.
    #[error(
        "no free tag and nothing to dispatch: {queued} requests queued, {inflight} on the \
         pretend device, nr_requests={nr_requests}"
    )]
    Stuck {
        /// Requests queued.
        queued: u32,
        /// Requests on the pretend device.
        inflight: usize,
        /// The queue's `nr_requests`.
        nr_requests: u64,
    },
    /// Draining found requests queued that could not be dispatched.
    #[error("queue not idle but nothing to dispatch")]
    NotIdle,
    /// Bios were lost or failed.
    #[error("bio accounting broken: {submitted} submitted, {completed} completed, {failed} failed")]
    Accounting {
        /// Bios submitted.
        submitted: u64,
        /// Bios completed.
        completed: u64,
        /// Bios completed with an error.
        failed: u64,
    },
    /// A case with no bios or no runs.
    #[error("a microbench case needs at least one bio and one run")]
    Empty,
    /// A bio size that is not a positive multiple of 512.
    #[error("bio size {0}: must be a positive multiple of 512 bytes")]
    BioSize(u32),
}

/// Access pattern of the generated bios.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Uniformly random, block-aligned positions over the whole device.
    Random,
    /// Each bio starts where the previous one ended.
    Sequential,
}

impl Pattern {
    /// The pattern's name: `random`, `sequential`.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Sequential => "sequential",
        }
    }
}

/// One case's measurement.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    /// The scheduler's own name.
    pub scheduler: String,
    /// Requests kept queued.
    pub depth: u32,
    /// Access pattern.
    pub pattern: Pattern,
    /// Merge policy.
    pub nomerges: u8,
    /// Bio size in bytes.
    pub bs: u32,
    /// Bios timed per run.
    pub ios: u64,
    /// Median CPU nanoseconds per bio over the runs.
    pub ns_per_io: f64,
    /// Fastest run.
    pub ns_per_io_min: f64,
    /// Every run, in order.
    pub ns_per_io_runs: Vec<f64>,
    /// Bios that merged into an existing request (back or front), per run.
    pub merges: u64,
    /// `merges` as a percentage of `ios`.
    pub merged_pct: f64,
    /// Requests merged into a neighbour, per run.
    pub request_merges: u64,
    /// Requests made, per run.
    pub requests: u64,
    /// Requests dispatched, per run.
    pub dispatches: u64,
}

/// A deterministic generator of bio positions (SplitMix64).
struct Positions {
    pattern: Pattern,
    state: u64,
    next_seq: u64,
    blocks: u64,
    block_sectors: u64,
}

impl Positions {
    #[inline]
    fn next(&mut self) -> u64 {
        match self.pattern {
            Pattern::Random => {
                let z = splitmix64(&mut self.state);
                // Multiply-shift maps z uniformly onto 0..blocks.
                let block = ((u128::from(z) * u128::from(self.blocks)) >> 64) as u64;
                block * self.block_sectors
            }
            Pattern::Sequential => {
                let s = self.next_seq;
                self.next_seq += self.block_sectors;
                if self.next_seq + self.block_sectors > DEVICE_SECTORS {
                    self.next_seq = 0;
                }
                s
            }
        }
    }
}

/// The driver: a queue, a position generator and a pretend device.
struct Bench {
    queue: Queue,
    positions: Positions,
    bs: u32,
    depth: u32,
    inflight: VecDeque<RequestId>,
    inflight_max: usize,
    now: u64,
    token: u64,
    completed: u64,
    failed: u64,
}

impl Bench {
    /// Complete the oldest request the pretend device holds.
    #[inline]
    fn complete_oldest(&mut self) -> Result<(), MicrobenchError> {
        let Some(id) = self.inflight.pop_front() else {
            return Ok(());
        };
        let (mut done, mut failed) = (0, 0);
        self.queue
            .complete(id, Outcome::Done, self.now, &mut |c: BioCompletion| {
                done += 1;
                if c.status != Status::Ok {
                    failed += 1;
                }
            })
            .map_err(|e| MicrobenchError::from(MicrobenchErrorKind::Complete(e)))?;
        self.completed += done;
        self.failed += failed;
        Ok(())
    }

    /// Dispatch one request to the pretend device, completing the oldest
    /// first if it is full. Returns false if nothing could be dispatched.
    #[inline]
    fn dispatch_one(&mut self) -> Result<bool, MicrobenchError> {
        if self.inflight.len() >= self.inflight_max {
            self.complete_oldest()?;
        }
        Ok(match self.queue.dispatch(self.now) {
            Dispatch::Request(id) => {
                self.inflight.push_back(id);
                true
            }
            Dispatch::Blocked if !self.inflight.is_empty() => {
                self.complete_oldest()?;
                true
            }
            _ => false,
        })
    }

    /// Submit one bio and keep the scheduler at `depth`.
    #[inline]
    fn step(&mut self) -> Result<(), MicrobenchError> {
        let bio = Bio::read(self.positions.next(), self.bs, self.token);
        self.token += 1;
        loop {
            match self.queue.submit(&bio, self.now) {
                Ok(_) => break,
                Err(SubmitError::NoTag { .. } | SubmitError::NoBioSlot { .. }) => {
                    if !self.dispatch_one()? {
                        return Err(MicrobenchError::from(MicrobenchErrorKind::Stuck {
                            queued: self.queue.queued(),
                            inflight: self.inflight.len(),
                            nr_requests: self.queue.get("nr_requests").unwrap_or(0),
                        }));
                    }
                }
                Err(e) => return Err(MicrobenchErrorKind::Submit(e).into()),
            }
        }
        while self.queue.queued() > self.depth {
            if !self.dispatch_one()? {
                break;
            }
        }
        self.now += TICK_NS;
        Ok(())
    }

    /// Dispatch and complete everything left.
    fn drain(&mut self) -> Result<(), MicrobenchError> {
        while !self.queue.is_idle() {
            if !self.inflight.is_empty() {
                self.complete_oldest()?;
                continue;
            }
            if !self.dispatch_one()? {
                return Err(MicrobenchErrorKind::NotIdle.into());
            }
        }
        Ok(())
    }
}

/// One case: the scheduler and queue setup measured, and how long.
#[derive(Clone, Copy, Debug)]
pub struct Case<'a> {
    /// Scheduler name, as `AnyScheduler::by_name` takes it.
    pub scheduler: &'a str,
    /// Requests kept queued in the scheduler.
    pub depth: u32,
    /// Access pattern of the bios.
    pub pattern: Pattern,
    /// Linux's `nomerges`: 0 all merges, 1 the one-hit cache only, 2 none.
    pub nomerges: u8,
    /// Bio size in bytes (a positive multiple of 512).
    pub bs: u32,
    /// Bios timed per run (after filling the queue and a warm-up).
    pub ios: u64,
    /// Requests the pretend device holds before completing the oldest.
    pub inflight: u32,
    /// Seed of the random positions.
    pub seed: u64,
}

struct Run {
    ns_per_io: f64,
    merges: u64,
    request_merges: u64,
    requests: u64,
    dispatches: u64,
}

/// Build the queue of `case` with the tunables `sets` (name, value) applied,
/// and check that it has the tags the case needs: what [`measure`] does
/// first, for a front end to check its options before it times anything.
pub fn check_case(case: &Case, sets: &[(String, String)]) -> Result<(), MicrobenchError> {
    build_queue(case, sets).map(drop)
}

/// The queue for one case, with `sets` applied and checked against what
/// the case needs.
fn build_queue(
    case: &Case,
    sets: &[(String, String)],
) -> Result<Queue<AnyScheduler>, MicrobenchError> {
    let limits = Limits {
        capacity: DEVICE_SECTORS,
        ..Limits::default()
    };
    let config = QueueConfig {
        limits,
        nr_requests: case.depth + case.inflight + 1,
        queue_depth: case.inflight,
        nomerges: case.nomerges,
        max_bios: None,
        // No device: schedulers that idle on disks (CFQ, BFQ) must not.
        rotational: false,
    };
    let scheduler = AnyScheduler::by_name(case.scheduler)?;
    let mut queue = Queue::new(config, scheduler)
        .map_err(|e| MicrobenchError::from(MicrobenchErrorKind::Queue(e)))?;
    for (name, value) in sets {
        queue
            .set_str(name, value)
            .map_err(|source| MicrobenchErrorKind::Set {
                name: name.clone(),
                value: value.clone(),
                scheduler: case.scheduler.to_string(),
                source,
            })?;
    }
    // The case keeps `depth` requests in the scheduler and the pretend
    // device holds `inflight`: every one of them needs a tag.
    let needed = case.depth + case.inflight + 1;
    let nr_requests = queue
        .get("nr_requests")
        .map_err(|e| MicrobenchError::from(MicrobenchErrorKind::ReadNrRequests(e)))?;
    if nr_requests < u64::from(needed) {
        return Err(MicrobenchError::from(MicrobenchErrorKind::TooFewTags {
            nr_requests,
            depth: case.depth,
            inflight: case.inflight,
            needed,
        }));
    }
    Ok(queue)
}

/// A case's queue filled to its depth and warmed up, ready for the bios
/// that are measured: [`measure`] times them, the instruction-count
/// scenarios ([`crate::cost`]) count them.
pub struct Prepared {
    bench: Bench,
}

impl Prepared {
    /// Build the queue of `case` with `sets` applied, fill the scheduler to
    /// its depth and run the warm-up.
    pub fn new(case: &Case, sets: &[(String, String)]) -> Result<Prepared, MicrobenchError> {
        check_sizes(case)?;
        let queue = build_queue(case, sets)?;
        let block_sectors = u64::from(case.bs / 512);
        let mut bench = Bench {
            queue,
            positions: Positions {
                pattern: case.pattern,
                state: case.seed,
                next_seq: 0,
                blocks: DEVICE_SECTORS / block_sectors,
                block_sectors,
            },
            bs: case.bs,
            depth: case.depth,
            inflight: VecDeque::with_capacity(case.inflight as usize),
            inflight_max: case.inflight as usize,
            now: 0,
            token: 0,
            completed: 0,
            failed: 0,
        };
        // Fill the scheduler to its depth, then warm up in steady state.
        let fill_limit = u64::from(case.depth) * 4096 + 100_000;
        let mut filled = 0;
        while bench.queue.queued() < case.depth && filled < fill_limit {
            bench.step()?;
            filled += 1;
        }
        for _ in 0..(case.ios / 10).max(10_000) {
            bench.step()?;
        }
        bench.queue.reset_stats();
        Ok(Prepared { bench })
    }

    /// Submit `ios` bios in steady state: the measured loop.
    pub fn run(&mut self, ios: u64) -> Result<(), MicrobenchError> {
        for _ in 0..ios {
            self.bench.step()?;
        }
        Ok(())
    }

    /// Dispatch and complete everything left, and check that every bio
    /// submitted completed without error.
    pub fn finish(mut self) -> Result<(), MicrobenchError> {
        self.bench.drain()?;
        let b = &self.bench;
        if b.completed != b.token || b.failed != 0 {
            return Err(MicrobenchError::from(MicrobenchErrorKind::Accounting {
                submitted: b.token,
                completed: b.completed,
                failed: b.failed,
            }));
        }
        Ok(())
    }
}

fn run_once(case: &Case, sets: &[(String, String)]) -> Result<Run, MicrobenchError> {
    let mut prepared = Prepared::new(case, sets)?;
    let t0 = thread_cpu_ns();
    prepared.run(case.ios)?;
    let t1 = thread_cpu_ns();
    let stats = prepared.bench.queue.stats().clone();
    prepared.finish()?;
    Ok(Run {
        ns_per_io: (t1 - t0) as f64 / case.ios as f64,
        merges: stats.bio_merges(),
        request_merges: stats.request_merges,
        requests: stats.requests,
        dispatches: stats.dispatches,
    })
}

/// A case with no bios, or a bio size that is not a positive multiple of
/// 512, is refused.
fn check_sizes(case: &Case) -> Result<(), MicrobenchError> {
    if case.ios == 0 {
        return Err(MicrobenchErrorKind::Empty.into());
    }
    if case.bs == 0 || !case.bs.is_multiple_of(512) {
        return Err(MicrobenchErrorKind::BioSize(case.bs).into());
    }
    Ok(())
}

/// Measure one case: `repeat` runs, each on a fresh queue with `sets`
/// applied, and the median (and fastest) CPU time per bio. The case's bio
/// size must be a positive multiple of 512 and its depth plus inflight fit
/// in 65536 tags (`elevator microbench` checks its options for that).
pub fn measure(
    case: &Case,
    sets: &[(String, String)],
    repeat: u32,
) -> Result<CaseResult, MicrobenchError> {
    if repeat == 0 {
        return Err(MicrobenchErrorKind::Empty.into());
    }
    check_sizes(case)?;
    let mut runs = Vec::with_capacity(repeat as usize);
    for _ in 0..repeat {
        runs.push(run_once(case, sets)?);
    }
    let mut times: Vec<f64> = runs.iter().map(|r| r.ns_per_io).collect();
    let all = times.clone();
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let last = &runs[runs.len() - 1];
    Ok(CaseResult {
        scheduler: AnyScheduler::by_name(case.scheduler)?.name().to_string(),
        depth: case.depth,
        pattern: case.pattern,
        nomerges: case.nomerges,
        bs: case.bs,
        ios: case.ios,
        ns_per_io: round2(median),
        ns_per_io_min: round2(times[0]),
        ns_per_io_runs: all.into_iter().map(round2).collect(),
        merges: last.merges,
        merged_pct: round2(100.0 * last.merges as f64 / case.ios as f64),
        request_merges: last.request_merges,
        requests: last.requests,
        dispatches: last.dispatches,
    })
}

/// `x` to two decimals, as the reports give CPU figures.
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
