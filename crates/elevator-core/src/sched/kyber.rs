//! `kyber`: latency targets per operation class, enforced by token depths.
//!
//! Kyber does not sort. It splits requests into four scheduling domains by
//! operation and limits how many requests of each domain may be at the device
//! at once; a feedback loop on measured latencies moves those limits.
//!
//! **Domains.** Reads go to READ, writes to WRITE, discards to DISCARD, and
//! everything else (write-zeroes; flushes never reach a scheduler) to OTHER.
//! Each domain keeps a FIFO of its queued requests and a token depth: READ
//! 256, WRITE 128, DISCARD 64, OTHER 16 at most, and it starts at the most.
//! A dispatched request holds one token of its domain until it completes; a
//! domain whose tokens are all held dispatches nothing.
//!
//! **Dispatch.** One domain is current. It is served for a batch (READ 16,
//! WRITE 8, DISCARD 1, OTHER 1 requests) while it has requests and a free
//! token. When its batch is used up, or it has nothing it may send, the batch
//! count restarts and the other domains are tried round-robin, starting after
//! the current one and ending with the current one again; the first that can
//! dispatch becomes current. If none can, dispatch answers
//! [`SchedDispatch::Nothing`]: every domain with requests is out of tokens,
//! and a completion frees one.
//!
//! **Latency samples.** Every completion of a READ, WRITE or DISCARD request
//! records two latencies in its domain's histograms: the *I/O latency*
//! (completion − dispatch) and the *total latency* (completion − the request's
//! allocation, [`crate::Request::alloc_time`], Linux `start_time_ns`; it
//! includes the time spent waiting for a token). A histogram has 8 buckets
//! relative to the domain's target `T`: a latency `l` goes to bucket
//! `min((l − 1) / (T / 4), 7)`, so buckets 0-3 meet the target and 4-7 miss
//! it (4: up to 1.25 T, ..., 7: beyond 1.75 T). Targets: READ
//! `read_lat_nsec`, WRITE `write_lat_nsec`, DISCARD a fixed 5 s (as in Linux;
//! not a tunable). OTHER records nothing and keeps its depth of 16.
//!
//! **Evaluation timer.** A completion arms the timer 100 ms ahead if it is not
//! armed (Linux re-arms with `timer_reduce` on every completion, which is the
//! same: the timer fires 100 ms after the first completion since it last
//! fired). The timer is checked on completion: a completion at or after the
//! armed time runs the evaluation first and then records its own samples,
//! which belong to the next window.
//!
//! **Percentiles.** A histogram yields a percentile only once it holds at
//! least 500 samples or its first sample is at least 1 s old; otherwise it
//! keeps accumulating across evaluations. Yielding a percentile empties it
//! (a new window starts). The percentile is the bucket in which the
//! cumulative count reaches `ceil(samples × p / 100)`.
//!
//! **Evaluation.** For READ, WRITE and DISCARD:
//! 1. The device is *congested* if any domain's p90 I/O latency falls in a
//!    bucket ≥ 4 (over its target).
//! 2. Each domain's p99 total latency bucket is taken. When the device is
//!    congested and a domain has no fresh p99, the last p99 it yielded while
//!    the device was not congested is used; a congested evaluation forgets
//!    that remembered value, so one sample set throttles once. An uncongested
//!    evaluation with a fresh p99 remembers it.
//! 3. With a p99 bucket `b`, a domain's depth becomes
//!    `clamp(depth × (b + 1) / 4, 1, max)` if the device is congested or
//!    `b ≥ 4`. So under congestion every domain with good latency is
//!    throttled (to 1/4 of its depth at `b = 0`, unchanged at `b = 3`), and a
//!    domain with bad latency is throttled less: its depth grows (up to ×2 at
//!    `b = 7`). Because total latency includes the wait for a token, a domain
//!    throttled too hard sees its own latency go bad and grows back; with
//!    good latencies and no congestion depths stay where they are.
//!
//! **Merging.** Like `none` (Linux merges a bio against recent requests of
//! its software queue): [`MergeLookup::ScanRecent`] over the 8 most recently
//! queued requests of all domains, newest first, kept on one arrival-ordered
//! list beside the domain FIFOs. No request-into-request merges.
//!
//! Tunables (Linux names and defaults, in nanoseconds; 0 is refused, Linux
//! takes any value):
//! - `read_lat_nsec` 2000000: latency target of READ (2 ms).
//! - `write_lat_nsec` 10000000: latency target of WRITE (10 ms).
//!
//! Differences from Linux, on purpose or by model:
//! - Tokens are counts, not bits of an `sbitmap`: after a depth shrinks a
//!   domain dispatches again only once fewer than `depth` of its requests
//!   are in flight (Linux may hand out a freed low bit earlier).
//! - A bio is tried against the newest 8 queued requests of every domain;
//!   Linux scans the list of the bio's own domain in the submitting CPU's
//!   software queue, only for requests not yet moved to the dispatch list.
//! - One CPU: histograms are not per-CPU, and there is one hardware queue.
//! - The 1 s percentile window starts at a histogram's first sample, and
//!   each histogram (domain × I/O/total) has its own; Linux starts one shared
//!   per-domain window at the first timer run that sees samples, which can
//!   keep a slow domain's total-latency p99 from ever being computed before
//!   it reaches 500 samples.
//! - The timer is checked at completions only, so an evaluation runs at the
//!   first completion at or after it is due rather than exactly when due.
//! - A requeued request goes to the queue's own dispatch list and keeps its
//!   token until it completes (Linux returns the token and inserts the
//!   request again at the head of its domain, where it waits for a token).
//! - `async_depth` (Linux limits asynchronous requests to 75% of the tag
//!   pool) is not modelled; the device's queue depth is left to the queue.

use super::{MergeKind, MergeLookup, SchedDispatch, Scheduler};
use crate::bio::{Nanos, Op};
use crate::index::{ListHead, ListLinks};
use crate::request::{RequestId, Requests};
use crate::tunable::{self, Tunable, TunableSpec, Unit, specs, tunable};

/// How many recent requests a bio is tried against: `none`'s (Linux 8).
pub use super::none::SCAN_DEPTH;

/// Number of scheduling domains.
pub const DOMAINS: usize = 4;

/// Domains with a latency target and feedback (READ, WRITE, DISCARD).
const FEEDBACK_DOMAINS: usize = 3;

/// Buckets per latency histogram.
const BUCKETS: usize = 8;

/// Buckets `0..GOOD_BUCKETS` meet the target; each is a quarter of it.
const GOOD_BUCKETS: usize = 4;

/// Time between evaluations (Linux `HZ / 10`).
pub const EVAL_INTERVAL_NS: Nanos = 100_000_000;

/// A histogram yields a percentile with at least this many samples...
pub const MIN_SAMPLES: u32 = 500;

/// ... or once its first sample is this old (Linux `HZ`).
pub const MAX_WINDOW_NS: Nanos = 1_000_000_000;

/// The fixed latency target of DISCARD (Linux: 5 s, not a tunable).
pub const DISCARD_LAT_NS: Nanos = 5_000_000_000;

/// A scheduling domain: the class of operation a request belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// Reads.
    Read = 0,
    /// Writes.
    Write = 1,
    /// Discards.
    Discard = 2,
    /// Everything else (write-zeroes).
    Other = 3,
}

impl Domain {
    /// All domains, in round-robin order.
    pub const ALL: [Domain; DOMAINS] =
        [Domain::Read, Domain::Write, Domain::Discard, Domain::Other];

    /// The domain of an operation.
    #[inline]
    pub fn of(op: Op) -> Domain {
        match op {
            Op::Read => Domain::Read,
            Op::Write => Domain::Write,
            Op::Discard => Domain::Discard,
            Op::Flush | Op::WriteZeroes => Domain::Other,
        }
    }

    /// The domain's index, 0..DOMAINS.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The domain's name (Linux's debugfs names).
    pub fn name(self) -> &'static str {
        ["read", "write", "discard", "other"][self.index()]
    }

    /// The most tokens the domain may have (Linux `kyber_depth`).
    pub fn max_depth(self) -> u32 {
        MAX_DEPTH[self.index()]
    }

    /// Requests served in a row before the next domain's turn (Linux
    /// `kyber_batch_size`).
    pub fn batch(self) -> u32 {
        BATCH[self.index()]
    }
}

const MAX_DEPTH: [u32; DOMAINS] = [256, 128, 64, 16];
const BATCH: [u32; DOMAINS] = [16, 8, 1, 1];

/// Which latency a histogram holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Latency {
    /// Completion − allocation.
    Total = 0,
    /// Completion − dispatch.
    Io = 1,
}

/// kyber's tunables, declared once: listing, defaults, get and set come
/// from here.
const TABLE: [Tunable<Kyber>; 2] = [
    tunable!(value, "read_lat_nsec", 2_000_000, 1, u64::MAX, Unit::Nanos,
        "latency target of reads", k => k.targets[Domain::Read.index()]),
    tunable!(value, "write_lat_nsec", 10_000_000, 1, u64::MAX, Unit::Nanos,
        "latency target of writes", k => k.targets[Domain::Write.index()]),
];

/// kyber's tunables, with Linux defaults.
pub const TUNABLES: [TunableSpec; 2] = specs(&TABLE);

/// One latency histogram, bucketed relative to its domain's target, and the
/// time its current window started.
#[derive(Clone, Copy, Debug, Default)]
struct LatencyHist {
    counts: [u32; BUCKETS],
    samples: u32,
    window_start: Nanos,
}

impl LatencyHist {
    #[inline]
    fn record(&mut self, latency: Nanos, target: Nanos, now: Nanos) {
        let width = (target / GOOD_BUCKETS as u64).max(1);
        let bucket = (latency.saturating_sub(1) / width).min(BUCKETS as u64 - 1) as usize;
        if self.samples == 0 {
            self.window_start = now;
        }
        self.counts[bucket] = self.counts[bucket].saturating_add(1);
        self.samples = self.samples.saturating_add(1);
    }

    /// The bucket holding the `pct`th percentile, if the window is ready;
    /// then the window restarts.
    fn take_percentile(&mut self, pct: u64, now: Nanos) -> Option<usize> {
        if self.samples == 0 {
            return None;
        }
        if self.samples < MIN_SAMPLES && now.saturating_sub(self.window_start) < MAX_WINDOW_NS {
            return None;
        }
        let mut rank = (u64::from(self.samples) * pct).div_ceil(100);
        let mut bucket = BUCKETS - 1;
        for (b, &n) in self.counts.iter().enumerate() {
            if u64::from(n) >= rank {
                bucket = b;
                break;
            }
            rank -= u64::from(n);
        }
        *self = LatencyHist::default();
        Some(bucket)
    }
}

/// The `kyber` scheduler.
#[derive(Clone, Debug)]
pub struct Kyber {
    /// Targets of READ, WRITE, DISCARD.
    targets: [Nanos; FEEDBACK_DOMAINS],
    /// Domain FIFOs, threaded through `links`.
    links: ListLinks,
    fifo: [ListHead; DOMAINS],
    /// All queued requests in arrival order, for the merge scan.
    arrival_links: ListLinks,
    arrival: ListHead,
    /// Dispatch time of each request, by tag.
    io_start: Vec<Nanos>,
    /// Current token depth of each domain.
    depth: [u32; DOMAINS],
    /// Tokens held (dispatched, not completed) per domain.
    in_use: [u32; DOMAINS],
    /// The domain being served and how many it sent in its batch.
    cur: usize,
    batching: u32,
    /// Histograms per feedback domain, by [`Latency`].
    hist: [[LatencyHist; 2]; FEEDBACK_DOMAINS],
    /// The p99 bucket a domain last yielded while the device was not
    /// congested, for the next congested evaluation.
    remembered_p99: [Option<usize>; FEEDBACK_DOMAINS],
    /// When the evaluation timer fires, if armed.
    next_eval: Option<Nanos>,
    evaluations: u64,
    queued: u32,
}

impl Kyber {
    /// kyber with Linux's default tunables and every domain at its most tokens.
    pub fn new() -> Kyber {
        let mut k = Kyber {
            // READ and WRITE: set from the table's defaults below.
            targets: [0, 0, DISCARD_LAT_NS],
            links: ListLinks::new(0),
            fifo: [ListHead::EMPTY; DOMAINS],
            arrival_links: ListLinks::new(0),
            arrival: ListHead::EMPTY,
            io_start: Vec::new(),
            depth: MAX_DEPTH,
            in_use: [0; DOMAINS],
            cur: 0,
            batching: 0,
            hist: [[LatencyHist::default(); 2]; FEEDBACK_DOMAINS],
            remembered_p99: [None; FEEDBACK_DOMAINS],
            next_eval: None,
            evaluations: 0,
            queued: 0,
        };
        tunable::apply_defaults(&TABLE, &mut k);
        k
    }

    /// The current token depth of `domain`.
    pub fn depth(&self, domain: Domain) -> u32 {
        self.depth[domain.index()]
    }

    /// Tokens of `domain` held by dispatched, not yet completed requests.
    pub fn tokens_in_use(&self, domain: Domain) -> u32 {
        self.in_use[domain.index()]
    }

    /// Requests of `domain` waiting to be dispatched.
    pub fn queued_in(&self, domain: Domain) -> u32 {
        self.fifo[domain.index()].len() as u32
    }

    /// How many times the feedback evaluation has run.
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// Dispatch the head of domain `d` if it has one and a free token.
    #[inline]
    fn take_from(&mut self, d: usize, now: Nanos) -> Option<RequestId> {
        if self.in_use[d] >= self.depth[d] {
            return None;
        }
        let raw = self.links.pop_front(&mut self.fifo[d])?;
        self.arrival_links.remove(&mut self.arrival, raw);
        self.in_use[d] += 1;
        self.batching += 1;
        self.queued -= 1;
        self.io_start[raw as usize] = now;
        Some(RequestId::from_raw(raw))
    }

    /// The feedback step, run when the timer fires.
    fn evaluate(&mut self, now: Nanos) {
        self.evaluations += 1;
        let mut congested = false;
        for d in 0..FEEDBACK_DOMAINS {
            let h = &mut self.hist[d][Latency::Io as usize];
            if h.take_percentile(90, now)
                .is_some_and(|b| b >= GOOD_BUCKETS)
            {
                congested = true;
            }
        }
        for (d, &max) in MAX_DEPTH.iter().enumerate().take(FEEDBACK_DOMAINS) {
            let fresh = self.hist[d][Latency::Total as usize].take_percentile(99, now);
            let p99 = if congested {
                // Throttle once per sample set: forget what was remembered.
                let remembered = self.remembered_p99[d].take();
                fresh.or(remembered)
            } else {
                if fresh.is_some() {
                    self.remembered_p99[d] = fresh;
                }
                fresh
            };
            let Some(b) = p99 else { continue };
            if congested || b >= GOOD_BUCKETS {
                let scaled = u64::from(self.depth[d]) * (b as u64 + 1) / GOOD_BUCKETS as u64;
                self.depth[d] = scaled.clamp(1, u64::from(max)) as u32;
            }
        }
    }
}

impl Default for Kyber {
    fn default() -> Kyber {
        Kyber::new()
    }
}

impl Scheduler for Kyber {
    fn name(&self) -> &'static str {
        "kyber"
    }

    fn resize(&mut self, nr_requests: u32) {
        let n = nr_requests as usize;
        self.links.grow(n);
        self.arrival_links.grow(n);
        if self.io_start.len() < n {
            self.io_start.resize(n, 0);
        }
    }

    scan_recent_merges!(arrival, arrival_links);

    #[inline]
    fn insert(&mut self, rqs: &Requests, rq: RequestId, _now: Nanos) {
        let d = Domain::of(rqs[rq].op()).index();
        self.links.push_back(&mut self.fifo[d], rq.raw());
        self.arrival_links.push_back(&mut self.arrival, rq.raw());
        self.queued += 1;
    }

    #[inline]
    fn bio_merged(&mut self, _rqs: &Requests, _rq: RequestId, _kind: MergeKind) {}

    fn requests_merged(&mut self, rqs: &Requests, _: RequestId, gone: RequestId, queued: bool) {
        if queued {
            let d = Domain::of(rqs[gone].op()).index();
            self.links.remove(&mut self.fifo[d], gone.raw());
            self.arrival_links.remove(&mut self.arrival, gone.raw());
            self.queued -= 1;
        }
    }

    fn dispatch(&mut self, _rqs: &Requests, now: Nanos) -> SchedDispatch {
        if self.queued == 0 {
            return SchedDispatch::Nothing;
        }
        if self.batching < BATCH[self.cur]
            && let Some(id) = self.take_from(self.cur, now)
        {
            return SchedDispatch::Request(id);
        }
        // Batch over, or the current domain cannot send: the next domain
        // that can, ending with the current one again.
        self.batching = 0;
        for _ in 0..DOMAINS {
            self.cur = (self.cur + 1) % DOMAINS;
            if let Some(id) = self.take_from(self.cur, now) {
                return SchedDispatch::Request(id);
            }
        }
        SchedDispatch::Nothing
    }

    fn completed(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        let r = &rqs[rq];
        let d = Domain::of(r.op()).index();
        debug_assert!(self.in_use[d] > 0, "completion without a token held");
        self.in_use[d] -= 1;
        if d >= FEEDBACK_DOMAINS {
            return;
        }
        if let Some(due) = self.next_eval
            && now >= due
        {
            self.next_eval = None;
            self.evaluate(now);
        }
        let target = self.targets[d];
        let [total, io] = &mut self.hist[d];
        total.record(now.saturating_sub(r.alloc_time()), target, now);
        io.record(now.saturating_sub(self.io_start[rq.index()]), target, now);
        if self.next_eval.is_none() {
            self.next_eval = Some(now.saturating_add(EVAL_INTERVAL_NS));
        }
    }

    table_tunables!(TABLE, TUNABLES);
}
