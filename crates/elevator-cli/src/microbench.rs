//! `elevator microbench`: the CPU cost per I/O of elevator-core's path
//! (submit, merge attempt, insert, dispatch, complete), with no device.
//!
//! Each case builds a fresh queue, fills the scheduler to `depth` queued
//! requests, runs a warm-up, then times `ios` bios in steady state: each bio
//! is submitted, and whenever more than `depth` requests are queued one is
//! dispatched to a pretend device that holds up to `inflight` requests and
//! completes the oldest as soon as it needs room. Time is this thread's CPU
//! time, so a busy machine slows the run but not the figure much; each case
//! runs `repeat` times and the median is reported.

use std::collections::VecDeque;
use std::io::Write;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use elevator_core::{
    AnyScheduler, Bio, BioCompletion, Dispatch, Limits, Outcome, Queue, QueueConfig, RequestId,
    Scheduler, Status, SubmitError,
};
use serde::Serialize;

use elevator_run::cpu_time::thread_cpu_ns;

/// Size of the pretend device, in sectors (1 TiB): random 4 KiB I/O over it
/// almost never lands next to a queued request.
const DEVICE_SECTORS: u64 = 1 << 31;
/// Virtual time between bios (the core's deadlines never expire at this pace
/// for the depths measured here).
const TICK_NS: u64 = 1_000;

/// The most runs per case: each run's figures are kept for the median.
const MAX_REPEAT: u32 = 1000;

/// Access pattern of the generated bios.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Uniformly random, block-aligned positions over the whole device.
    Random,
    /// Each bio starts where the previous one ended.
    Sequential,
}

impl Pattern {
    /// The pattern's name: `random`, `sequential`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Sequential => "sequential",
        }
    }
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A table for people.
    Normal,
    /// One JSON document.
    Json,
}

/// Options of `elevator microbench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scheduler(s), comma-separated: none, mq-deadline, deadline-list.
    #[arg(long, value_delimiter = ',', default_value = "none,mq-deadline")]
    scheduler: Vec<String>,
    /// Requests kept queued in the scheduler; several values separated by commas.
    #[arg(long, value_delimiter = ',', default_value = "128,512,4096")]
    depth: Vec<u32>,
    /// Access pattern(s), comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "random")]
    pattern: Vec<Pattern>,
    /// Bio size in bytes (suffixes k and m accepted: 4k, 1m).
    #[arg(long, default_value = "4096", value_parser = parse_bytes)]
    bs: u32,
    /// Merge policy(ies), comma-separated: 0 all merges, 1 only the one-hit
    /// cache, 2 none.
    #[arg(long, value_delimiter = ',', default_value = "0",
          value_parser = clap::value_parser!(u8).range(0..=2))]
    nomerges: Vec<u8>,
    /// Bios timed per case (after filling the queue and a warm-up).
    #[arg(long, default_value_t = 1_000_000)]
    ios: u64,
    /// Runs per case (1 to 1000); the median is reported.
    #[arg(long, default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=MAX_REPEAT as i64))]
    repeat: u32,
    /// Requests the pretend device holds before completing the oldest.
    #[arg(long, default_value_t = 32)]
    inflight: u32,
    /// Seed of the random positions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Set a queue or scheduler tunable for every case (repeatable), e.g.
    /// --set fifo_batch=32.
    #[arg(long = "set", value_name = "TUNABLE=VALUE")]
    set: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "normal")]
    output_format: OutputFormat,
}

impl Args {
    /// The case of these options for one scheduler, depth, pattern and
    /// merge policy.
    fn case<'a>(&self, scheduler: &'a str, depth: u32, pattern: Pattern, nomerges: u8) -> Case<'a> {
        Case {
            scheduler,
            depth,
            pattern,
            nomerges,
            bs: self.bs,
            ios: self.ios,
            inflight: self.inflight,
            seed: self.seed,
        }
    }
}

/// Parse a byte count with an optional k/m/g suffix (powers of 1024).
pub fn parse_bytes(text: &str) -> Result<u32, String> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, mult) = match t.trim_end_matches(['b', 'i']).char_indices().last() {
        Some((i, 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'm')) => (&t[..i], 1 << 20),
        Some((i, 'g')) => (&t[..i], 1 << 30),
        _ => (t.as_str(), 1),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a byte count (examples: 4096, 4k, 1m)"))?;
    let bytes = n
        .checked_mul(mult)
        .filter(|&b| b <= u64::from(u32::MAX))
        .ok_or_else(|| format!("'{text}' is too large (at most 4 GiB - 1)"))?;
    Ok(bytes as u32)
}

/// One case's measurement.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CaseResult {
    /// The scheduler's own name.
    pub(crate) scheduler: String,
    /// Requests kept queued.
    pub(crate) depth: u32,
    /// Access pattern.
    pub(crate) pattern: Pattern,
    /// Merge policy.
    pub(crate) nomerges: u8,
    /// Bio size in bytes.
    pub(crate) bs: u32,
    /// Bios timed per run.
    pub(crate) ios: u64,
    /// Median CPU nanoseconds per bio over the runs.
    pub(crate) ns_per_io: f64,
    /// Fastest run.
    pub(crate) ns_per_io_min: f64,
    /// Every run, in order.
    pub(crate) ns_per_io_runs: Vec<f64>,
    /// Bios that merged into an existing request (back or front), per run.
    pub(crate) merges: u64,
    /// `merges` as a percentage of `ios`.
    pub(crate) merged_pct: f64,
    /// Requests merged into a neighbour, per run.
    pub(crate) request_merges: u64,
    /// Requests made, per run.
    pub(crate) requests: u64,
    /// Requests dispatched, per run.
    pub(crate) dispatches: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    benchmark: &'static str,
    elevator_version: &'static str,
    bs: u32,
    ios: u64,
    repeat: u32,
    inflight: u32,
    seed: u64,
    cases: Vec<CaseResult>,
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
                self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = self.state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
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
    fn complete_oldest(&mut self) -> Result<()> {
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
            .context("completing a dispatched request")?;
        self.completed += done;
        self.failed += failed;
        Ok(())
    }

    /// Dispatch one request to the pretend device, completing the oldest
    /// first if it is full. Returns false if nothing could be dispatched.
    #[inline]
    fn dispatch_one(&mut self) -> Result<bool> {
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
    fn step(&mut self) -> Result<()> {
        let bio = Bio::read(self.positions.next(), self.bs, self.token);
        self.token += 1;
        loop {
            match self.queue.submit(&bio, self.now) {
                Ok(_) => break,
                Err(SubmitError::NoTag { .. } | SubmitError::NoBioSlot { .. }) => {
                    if !self.dispatch_one()? {
                        bail!(
                            "no free tag and nothing to dispatch: {} requests queued, {} on the \
                             pretend device, nr_requests={}",
                            self.queue.queued(),
                            self.inflight.len(),
                            self.queue.get("nr_requests").unwrap_or(0)
                        );
                    }
                }
                Err(e) => return Err(e).context("submitting a bio"),
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
    fn drain(&mut self) -> Result<()> {
        while !self.queue.is_idle() {
            if !self.inflight.is_empty() {
                self.complete_oldest()?;
                continue;
            }
            if !self.dispatch_one()? {
                bail!("queue not idle but nothing to dispatch");
            }
        }
        Ok(())
    }
}

/// One case: the scheduler and queue setup measured, and how long.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Case<'a> {
    /// Scheduler name, as `AnyScheduler::by_name` takes it.
    pub(crate) scheduler: &'a str,
    /// Requests kept queued in the scheduler.
    pub(crate) depth: u32,
    /// Access pattern of the bios.
    pub(crate) pattern: Pattern,
    /// Linux's `nomerges`: 0 all merges, 1 the one-hit cache only, 2 none.
    pub(crate) nomerges: u8,
    /// Bio size in bytes (a positive multiple of 512).
    pub(crate) bs: u32,
    /// Bios timed per run (after filling the queue and a warm-up).
    pub(crate) ios: u64,
    /// Requests the pretend device holds before completing the oldest.
    pub(crate) inflight: u32,
    /// Seed of the random positions.
    pub(crate) seed: u64,
}

struct Run {
    ns_per_io: f64,
    merges: u64,
    request_merges: u64,
    requests: u64,
    dispatches: u64,
}

/// The queue for one case, with `--set` applied and checked against what
/// the case needs.
fn build_queue(case: &Case, sets: &[(String, String)]) -> Result<Queue<AnyScheduler>> {
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
    let mut queue = Queue::new(config, scheduler).context("building the queue")?;
    for (name, value) in sets {
        queue
            .set_str(name, value)
            .with_context(|| format!("--set {name}={value} for {}", case.scheduler))?;
    }
    // The case keeps `depth` requests in the scheduler and the pretend
    // device holds `inflight`: every one of them needs a tag.
    let needed = case.depth + case.inflight + 1;
    let nr_requests = queue.get("nr_requests").context("reading nr_requests")?;
    if nr_requests < u64::from(needed) {
        bail!(
            "nr_requests={nr_requests} is too small for this case: it keeps {} requests queued \
             (--depth) while the pretend device holds {} (--inflight), so it needs at least {needed} \
             tags (microbench sets nr_requests={needed} itself: leave it out of --set, or lower \
             --depth or --inflight)",
            case.depth,
            case.inflight
        );
    }
    Ok(queue)
}

fn run_once(case: &Case, sets: &[(String, String)]) -> Result<Run> {
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
    let t0 = thread_cpu_ns();
    for _ in 0..case.ios {
        bench.step()?;
    }
    let t1 = thread_cpu_ns();
    let stats = bench.queue.stats().clone();
    bench.drain()?;
    if bench.completed != bench.token || bench.failed != 0 {
        bail!(
            "bio accounting broken: {} submitted, {} completed, {} failed",
            bench.token,
            bench.completed,
            bench.failed
        );
    }
    Ok(Run {
        ns_per_io: (t1 - t0) as f64 / case.ios as f64,
        merges: stats.bio_merges(),
        request_merges: stats.request_merges,
        requests: stats.requests,
        dispatches: stats.dispatches,
    })
}

/// Measure one case: `repeat` runs, each on a fresh queue with `sets`
/// applied, and the median (and fastest) CPU time per bio. The case's bio
/// size must be a positive multiple of 512 and its depth plus inflight fit
/// in 65536 tags (`elevator microbench` checks its options for that).
pub(crate) fn measure(case: &Case, sets: &[(String, String)], repeat: u32) -> Result<CaseResult> {
    if case.ios == 0 || repeat == 0 {
        bail!("a microbench case needs at least one bio and one run");
    }
    if case.bs == 0 || !case.bs.is_multiple_of(512) {
        bail!(
            "bio size {}: must be a positive multiple of 512 bytes",
            case.bs
        );
    }
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

fn validate(args: &Args) -> Result<Vec<(String, String)>> {
    for s in &args.scheduler {
        AnyScheduler::by_name(s).context("--scheduler")?;
    }
    if args.bs == 0 || !args.bs.is_multiple_of(512) {
        bail!("--bs {}: must be a positive multiple of 512 bytes", args.bs);
    }
    if u64::from(args.bs) > u64::from(Limits::default().max_sectors) * 512 {
        bail!(
            "--bs {}: at most 4 MiB (one request; larger bios would be split)",
            args.bs
        );
    }
    if args.ios == 0 {
        bail!("--ios must be at least 1");
    }
    if args.inflight == 0 || args.inflight > 4096 {
        bail!("--inflight {}: must be 1..=4096", args.inflight);
    }
    for &d in &args.depth {
        if d == 0 || d + args.inflight + 1 > 65536 {
            bail!(
                "--depth {d}: must be 1..={} (depth + inflight + 1 requests must fit in 65536 tags)",
                65535 - args.inflight
            );
        }
    }
    args.set
        .iter()
        .map(|s| {
            let (name, value) = s
                .split_once('=')
                .with_context(|| format!("--set '{s}': expected TUNABLE=VALUE"))?;
            Ok((name.trim().to_string(), value.trim().to_string()))
        })
        .collect()
}

/// Run `elevator microbench`.
pub fn run(args: &Args) -> Result<()> {
    let sets = validate(args)?;
    // Every case's queue is built once before anything is printed or timed,
    // so a bad --set fails at once.
    for sched in &args.scheduler {
        for &nomerges in &args.nomerges {
            for &depth in &args.depth {
                let case = args.case(sched, depth, Pattern::Random, nomerges);
                build_queue(&case, &sets)?;
            }
        }
    }
    let json = args.output_format == OutputFormat::Json;
    let mut out = std::io::stdout().lock();
    if !json {
        writeln!(
            out,
            "elevator microbench: core path per bio (submit, merge attempt, insert, dispatch, complete), no device"
        )?;
        writeln!(
            out,
            "{}-byte reads, {} bios timed per case, up to {} in flight; median of {} runs of thread CPU time\n",
            args.bs, args.ios, args.inflight, args.repeat
        )?;
        writeln!(
            out,
            "{:<14} {:>6}  {:<10} {:>8} {:>9} {:>9} {:>8} {:>8}",
            "scheduler", "depth", "pattern", "nomerges", "ns/IO", "min ns/IO", "Mbio/s", "merged"
        )?;
    }
    let mut cases = Vec::new();
    for sched in &args.scheduler {
        for &pattern in &args.pattern {
            for &nomerges in &args.nomerges {
                for &depth in &args.depth {
                    let case = args.case(sched, depth, pattern, nomerges);
                    let result = measure(&case, &sets, args.repeat)?;
                    if !json {
                        writeln!(
                            out,
                            "{:<14} {:>6}  {:<10} {:>8} {:>9.1} {:>9.1} {:>8.2} {:>7.1}%",
                            result.scheduler,
                            depth,
                            pattern.name(),
                            nomerges,
                            result.ns_per_io,
                            result.ns_per_io_min,
                            1000.0 / result.ns_per_io,
                            result.merged_pct
                        )?;
                        out.flush()?;
                    }
                    cases.push(result);
                }
            }
        }
    }
    if json {
        let report = Report {
            benchmark: "elevator microbench",
            elevator_version: env!("CARGO_PKG_VERSION"),
            bs: args.bs,
            ios: args.ios,
            repeat: args.repeat,
            inflight: args.inflight,
            seed: args.seed,
            cases,
        };
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    }
    Ok(())
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("4k"), Ok(4096));
        assert_eq!(parse_bytes("4KiB"), Ok(4096));
        assert_eq!(parse_bytes("1m"), Ok(1 << 20));
        assert!(parse_bytes("4x").is_err());
        assert!(parse_bytes("8g").is_err());
        assert!(parse_bytes("").is_err());
    }
}
