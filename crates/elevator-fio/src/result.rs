//! What a simulated run produced: per job clone and per direction, the I/O
//! counts, bytes and latencies; and the queue's and device's own figures.
//! Reports (fio-like text, fio JSON, comparison tables) are made from this.

use elevator_core::{DeviceStats, Histogram, Nanos, Op, QueueStats};

use crate::job::JobSpec;
use crate::workload::{IoError, JobFailure};

/// Count, min, max, mean and standard deviation of a series (defined in
/// elevator-core, where [`Histogram`] keeps one too).
pub use elevator_core::Summary;

/// One direction of one job (fio's `read`, `write` or `trim` object).
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes completed.
    pub bytes: u64,
    /// I/Os that completed with an error.
    pub errors: u64,
    /// Completion latency: from entering the queue to completion.
    pub clat: Histogram,
    /// Submission latency: from the job wanting to issue to the queue taking
    /// it (waits for a free tag show here).
    pub slat: Summary,
    /// Total latency: submission plus completion.
    pub lat: Summary,
    /// Submission latencies' distribution, kept when the job asks for
    /// `slat_percentiles`.
    pub slat_hist: Option<Histogram>,
    /// Total latencies' distribution, kept when the job asks for
    /// `lat_percentiles`.
    pub lat_hist: Option<Histogram>,
    /// Bandwidth samples in KiB/s, one per [`SAMPLE_NS`] of run time with
    /// I/O (fio's `bw_*`).
    pub bw: Samples,
    /// IOPS samples, likewise (fio's `iops_*`).
    pub iops: Samples,
    /// Per priority (fio's `clat_prio`, kept when the job's I/Os may differ
    /// in priority): completion latencies, or total ones with
    /// `lat_percentiles`, the job's own priority first.
    pub prios: Vec<PrioLat>,
}

/// The latencies of one priority's I/Os in one direction.
#[derive(Clone, Debug, Default)]
pub struct PrioLat {
    /// fio's raw priority value (class << 13 | level).
    pub prio: u16,
    /// Their latencies.
    pub lat: Histogram,
}

impl DirStats {
    /// Add another job's figures (for group reporting). Bandwidth and IOPS
    /// samples add as fio adds them for a group: minimum, maximum, mean
    /// and spread summed (the group's aggregate), sample counts summed.
    pub fn merge(&mut self, other: &DirStats) {
        self.ios += other.ios;
        self.bytes += other.bytes;
        self.errors += other.errors;
        self.clat.merge(&other.clat);
        self.slat.merge(&other.slat);
        self.lat.merge(&other.lat);
        merge_hist(&mut self.slat_hist, &other.slat_hist);
        merge_hist(&mut self.lat_hist, &other.lat_hist);
        self.bw.sum(&other.bw);
        self.iops.sum(&other.iops);
        for p in &other.prios {
            match self.prios.iter_mut().find(|q| q.prio == p.prio) {
                Some(q) => q.lat.merge(&p.lat),
                None => self.prios.push(p.clone()),
            }
        }
    }
}

fn merge_hist(a: &mut Option<Histogram>, b: &Option<Histogram>) {
    match (a.as_mut(), b) {
        (Some(a), Some(b)) => a.merge(b),
        (None, Some(b)) => *a = Some(b.clone()),
        _ => {}
    }
}

/// A series of rate samples (fio's `io_stat` for bandwidth and IOPS):
/// count, extremes, running mean and sum of squared deviations.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Samples {
    /// Samples taken.
    pub samples: u64,
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Mean of the samples.
    pub mean: f64,
    /// Sum of squared deviations from the mean (Welford's `S`).
    pub s: f64,
}

impl Samples {
    /// Add a sample.
    pub fn add(&mut self, v: u64) {
        if self.samples == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.samples += 1;
        let delta = v as f64 - self.mean;
        self.mean += delta / self.samples as f64;
        self.s += delta * (v as f64 - self.mean);
    }

    /// Add another job's samples as fio does for a group: the group's rate
    /// is the sum of its jobs' rates.
    pub fn sum(&mut self, o: &Samples) {
        if o.samples == 0 {
            return;
        }
        self.min += o.min;
        self.max += o.max;
        self.mean += o.mean;
        self.s += o.s;
        self.samples += o.samples;
    }

    /// Sample standard deviation (fio's: `sqrt(S / (n - 1))`, 0 for one
    /// sample).
    pub fn stddev(&self) -> f64 {
        if self.samples < 2 {
            0.0
        } else {
            (self.s / (self.samples - 1) as f64).sqrt()
        }
    }
}

/// fio's bandwidth and IOPS sampling period (`bw_avg_time`,
/// `iops_avg_time`): 500 ms.
pub const SAMPLE_NS: Nanos = 500_000_000;

/// One completed I/O, as the figures see it.
#[derive(Clone, Copy, Debug)]
pub struct IoDone {
    /// Operation (read, write, discard).
    pub op: Op,
    /// Bytes it moved.
    pub bytes: u64,
    /// Whether it succeeded.
    pub ok: bool,
    /// Its byte offset on the device.
    pub offset: u64,
    /// When the job wanted it issued.
    pub issued: Nanos,
    /// When the queue took it.
    pub submitted: Nanos,
    /// When it completed.
    pub now: Nanos,
    /// Its priority: fio's raw value (0: the default).
    pub prio: u16,
}

/// One line of a fio log: `time, value, ddir, bs[, offset], prio`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogEntry {
    /// Milliseconds since the figures started.
    pub time_ms: u64,
    /// The value: latency in ns, bandwidth in KiB/s, or IOPS.
    pub value: u64,
    /// Direction: 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// Block size of the I/O (0 for averaged entries).
    pub bs: u64,
    /// Offset of the I/O (0 for averaged entries).
    pub offset: u64,
    /// The I/O's priority, fio's raw value (0 for averaged entries).
    pub prio: u16,
}

/// The logs a job keeps in memory (`write_lat_log`, `write_bw_log`,
/// `write_iops_log`), written out by [`crate::report::logs::files`].
#[derive(Clone, Debug, Default)]
pub struct Logs {
    /// Total latency (`_lat`).
    pub lat: Vec<LogEntry>,
    /// Completion latency (`_clat`).
    pub clat: Vec<LogEntry>,
    /// Submission latency (`_slat`).
    pub slat: Vec<LogEntry>,
    /// Bandwidth (`_bw`).
    pub bw: Vec<LogEntry>,
    /// IOPS (`_iops`).
    pub iops: Vec<LogEntry>,
}

/// What fio reports per job beyond the per-direction figures: syncs,
/// I/O depths, latency buckets, logs.
#[derive(Clone, Debug, Default)]
pub struct JobExtra {
    /// Cache flushes (`fsync`, `fdatasync`, `end_fsync`): their latencies.
    pub sync: Histogram,
    /// Flushes that failed.
    pub sync_errors: u64,
    /// I/Os submitted by the depth in flight after their submission:
    /// 1, 2, 4, 8, 16, 32, >=64 (fio's `iodepth_level`).
    pub depth: [u64; 7],
    /// Submissions by the I/Os they carried: 0, 1-4, 5-8, 9-16, 17-32,
    /// 33-64, >64 (fio's `iodepth_submit`).
    pub submit: [u64; 7],
    /// Reaps by the completions they took, bucketed as `submit` (fio's
    /// `iodepth_complete`).
    pub complete: [u64; 7],
    /// Completion latencies below 1 µs, by fio's buckets: < 2, 4, 10, 20,
    /// 50, 100, 250, 500, 750, 1000 ns.
    pub lat_ns: [u64; 10],
    /// From 1 µs to below 1 ms, the same buckets in µs.
    pub lat_us: [u64; 10],
    /// From 1 ms: < 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000,
    /// >= 2000 ms.
    pub lat_ms: [u64; 12],
    /// The logs the job asked for.
    pub logs: Logs,
}

impl JobExtra {
    /// Add another job's figures (for group reporting).
    pub fn merge(&mut self, o: &JobExtra) {
        self.sync.merge(&o.sync);
        self.sync_errors += o.sync_errors;
        add(&mut self.depth, &o.depth);
        add(&mut self.submit, &o.submit);
        add(&mut self.complete, &o.complete);
        add(&mut self.lat_ns, &o.lat_ns);
        add(&mut self.lat_us, &o.lat_us);
        add(&mut self.lat_ms, &o.lat_ms);
    }
}

fn add<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// fio's latency bucket limits (upper, exclusive) within a unit.
const LAT_LIMITS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];

#[inline]
fn lat_bucket(v: u64) -> usize {
    LAT_LIMITS.iter().position(|&l| v < l).unwrap_or(9)
}

/// fio's `iodepth_level` bucket of a depth.
#[inline]
fn depth_bucket(d: u32) -> usize {
    match d {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// fio's `iodepth_submit`/`iodepth_complete` bucket of a batch.
#[inline]
fn batch_bucket(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// Rate sampling over fixed windows from the figures' start: what was
/// completed (bytes and I/Os per direction) when the last window closed.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    /// Window length (0: off).
    len: Nanos,
    /// When the next window closes.
    next: Nanos,
    bytes: [u64; 3],
    ios: [u64; 3],
}

/// Latencies summed over a log averaging window, per direction.
#[derive(Clone, Copy, Debug, Default)]
struct LatSums {
    n: [u64; 3],
    lat: [u64; 3],
    clat: [u64; 3],
    slat: [u64; 3],
}

/// A job clone's figures while it runs: the hooks a worker calls as it
/// issues and completes I/O, and what they gather.
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    /// Reads, writes, trims.
    pub dirs: [DirStats; 3],
    /// Syncs, depths, logs.
    pub extra: JobExtra,
    start: Nanos,
    samples: Window,
    log_window: Window,
    lat_sums: LatSums,
    lat_log: bool,
    bw_log: bool,
    iops_log: bool,
}

impl JobStats {
    /// Figures for a clone of `job` (which logs, percentiles...).
    pub fn new(job: &JobSpec) -> JobStats {
        let mut s = JobStats {
            lat_log: job.write_lat_log.is_some(),
            bw_log: job.write_bw_log.is_some(),
            iops_log: job.write_iops_log.is_some(),
            ..JobStats::default()
        };
        for d in &mut s.dirs {
            d.slat_hist = job.slat_percentiles.then(Histogram::new);
            d.lat_hist = job.lat_percentiles.then(Histogram::new);
        }
        s.samples.len = SAMPLE_NS;
        s.log_window.len = job.log_avg_msec * 1_000_000;
        s.start(0);
        s
    }

    /// Figures start at `now`: the job starts, or its `ramp_time` ends
    /// (what was gathered before is dropped).
    pub fn start(&mut self, now: Nanos) {
        for d in &mut self.dirs {
            *d = DirStats {
                slat_hist: d.slat_hist.as_ref().map(|_| Histogram::new()),
                lat_hist: d.lat_hist.as_ref().map(|_| Histogram::new()),
                prios: d
                    .prios
                    .iter()
                    .map(|p| PrioLat {
                        prio: p.prio,
                        lat: Histogram::new(),
                    })
                    .collect(),
                ..DirStats::default()
            };
        }
        self.extra = JobExtra::default();
        self.start = now;
        for w in [&mut self.samples, &mut self.log_window] {
            *w = Window {
                len: w.len,
                next: now.saturating_add(w.len),
                ..Window::default()
            };
        }
        self.lat_sums = LatSums::default();
    }

    /// Keep latencies per priority, `order[d]` the priorities of
    /// direction `d` in fio's order (the job's own first).
    pub fn keep_prios(&mut self, order: &[Vec<u16>; 3]) {
        for (d, o) in self.dirs.iter_mut().zip(order) {
            d.prios = o
                .iter()
                .map(|&prio| PrioLat {
                    prio,
                    lat: Histogram::new(),
                })
                .collect();
        }
    }

    /// One submission: `ios` I/Os went to the queue together, leaving
    /// `in_flight` of the job's I/Os in flight.
    #[inline]
    pub fn submitted(&mut self, ios: u32, in_flight: u32) {
        self.extra.depth[depth_bucket(in_flight)] += u64::from(ios);
        self.extra.submit[batch_bucket(ios)] += 1;
    }

    /// One I/O completed.
    #[inline]
    pub fn completed(&mut self, io: &IoDone) {
        if io.now >= self.samples.next {
            self.sample(io.now);
        }
        if self.log_window.len > 0 && io.now >= self.log_window.next {
            self.log_averages(io.now);
        }
        let di = match io.op {
            Op::Read => READ,
            Op::Discard => TRIM,
            _ => WRITE,
        };
        let clat = io.now.saturating_sub(io.submitted);
        let slat = io.submitted.saturating_sub(io.issued);
        let lat = io.now.saturating_sub(io.issued);
        let d = &mut self.dirs[di];
        d.ios += 1;
        d.bytes += io.bytes;
        if !io.ok {
            d.errors += 1;
        }
        d.clat.record(clat);
        d.slat.record(slat);
        d.lat.record(lat);
        if let Some(h) = &mut d.slat_hist {
            h.record(slat);
        }
        if let Some(h) = &mut d.lat_hist {
            h.record(lat);
        }
        if !d.prios.is_empty() {
            let v = if d.lat_hist.is_some() { lat } else { clat };
            record_prio(&mut d.prios, io.prio, v);
        }
        // fio counts completion latencies in its buckets.
        let x = &mut self.extra;
        if clat < 1_000 {
            x.lat_ns[lat_bucket(clat)] += 1;
        } else if clat < 1_000_000 {
            x.lat_us[lat_bucket(clat / 1_000)] += 1;
        } else {
            let ms = clat / 1_000_000;
            let i = if ms < 1000 {
                lat_bucket(ms)
            } else if ms < 2000 {
                10
            } else {
                11
            };
            x.lat_ms[i] += 1;
        }
        if self.lat_log || self.bw_log || self.iops_log {
            self.log_io(io, di, lat, clat, slat);
        }
    }

    /// The logs' part of a completion.
    fn log_io(&mut self, io: &IoDone, di: usize, lat: u64, clat: u64, slat: u64) {
        if self.log_window.len > 0 {
            if self.lat_log {
                let s = &mut self.lat_sums;
                s.n[di] += 1;
                s.lat[di] += lat;
                s.clat[di] += clat;
                s.slat[di] += slat;
            }
            return;
        }
        let e = LogEntry {
            time_ms: io.now.saturating_sub(self.start) / 1_000_000,
            value: 0,
            ddir: di as u8,
            bs: io.bytes,
            offset: io.offset,
            prio: io.prio,
        };
        let logs = &mut self.extra.logs;
        if self.lat_log {
            logs.lat.push(LogEntry { value: lat, ..e });
            logs.clat.push(LogEntry { value: clat, ..e });
            logs.slat.push(LogEntry { value: slat, ..e });
        }
        if self.bw_log {
            // fio: bytes × 10^6 / completion latency in ns.
            let value = (io.bytes * 1_000_000).checked_div(clat).unwrap_or(0);
            logs.bw.push(LogEntry { value, ..e });
        }
        if self.iops_log {
            logs.iops.push(LogEntry { value: 1, ..e });
        }
    }

    /// Close the bandwidth/IOPS sampling windows that ended by `now`: one
    /// sample per direction that moved data in the last (fio skips a window
    /// without I/O, and what completes after a gap counts in one window).
    #[cold]
    fn sample(&mut self, now: Nanos) {
        let w = &mut self.samples;
        let ms = w.len / 1_000_000;
        for (i, d) in self.dirs.iter_mut().enumerate() {
            let bytes = d.bytes - w.bytes[i];
            if bytes == 0 {
                continue;
            }
            d.bw.add(bytes * 1000 / ms / 1024);
            d.iops.add((d.ios - w.ios[i]) * 1000 / ms);
            w.bytes[i] = d.bytes;
            w.ios[i] = d.ios;
        }
        w.next = next_boundary(self.start, w.len, now);
    }

    /// Close the log averaging windows that ended by `now`.
    #[cold]
    fn log_averages(&mut self, now: Nanos) {
        let w = &mut self.log_window;
        let time_ms = (w.next - self.start) / 1_000_000;
        let ms = w.len / 1_000_000;
        let logs = &mut self.extra.logs;
        for (i, d) in self.dirs.iter().enumerate() {
            let bytes = d.bytes - w.bytes[i];
            if bytes > 0 {
                let e = LogEntry {
                    time_ms,
                    ddir: i as u8,
                    ..LogEntry::default()
                };
                if self.bw_log {
                    logs.bw.push(LogEntry {
                        value: bytes * 1000 / ms / 1024,
                        ..e
                    });
                }
                if self.iops_log {
                    logs.iops.push(LogEntry {
                        value: (d.ios - w.ios[i]) * 1000 / ms,
                        ..e
                    });
                }
            }
            w.bytes[i] = d.bytes;
            w.ios[i] = d.ios;
        }
        flush_lat(&mut self.lat_sums, logs, time_ms);
        w.next = next_boundary(self.start, w.len, now);
    }

    /// The job took `ios` completions together.
    #[inline]
    pub fn reaped(&mut self, ios: u32) {
        self.extra.complete[batch_bucket(ios)] += 1;
    }

    /// A cache flush the job asked for (wanted at `issued`) completed at
    /// `now`.
    pub fn synced(&mut self, issued: Nanos, now: Nanos, ok: bool) {
        if !ok {
            self.extra.sync_errors += 1;
        }
        self.extra.sync.record(now.saturating_sub(issued));
    }

    /// The job ended at `now`.
    pub fn finish(&mut self, now: Nanos) {
        if self.log_window.len > 0 && self.lat_log {
            // fio writes the last, partial window of averaged latencies.
            let time_ms = now.saturating_sub(self.start) / 1_000_000;
            flush_lat(&mut self.lat_sums, &mut self.extra.logs, time_ms);
        }
    }
}

/// Count `v` for priority `prio` (one not known yet is added).
fn record_prio(prios: &mut Vec<PrioLat>, prio: u16, v: u64) {
    match prios.iter_mut().find(|p| p.prio == prio) {
        Some(p) => p.lat.record(v),
        None => {
            let mut lat = Histogram::new();
            lat.record(v);
            prios.push(PrioLat { prio, lat });
        }
    }
}

/// The first window end after `now`, windows of `len` from `start`.
fn next_boundary(start: Nanos, len: Nanos, now: Nanos) -> Nanos {
    start + ((now - start) / len + 1) * len
}

/// Averaged latency log entries for a window, and a fresh window.
fn flush_lat(s: &mut LatSums, logs: &mut Logs, time_ms: u64) {
    for i in 0..3 {
        let n = s.n[i];
        if n == 0 {
            continue;
        }
        let e = LogEntry {
            time_ms,
            ddir: i as u8,
            ..LogEntry::default()
        };
        logs.lat.push(LogEntry {
            value: s.lat[i] / n,
            ..e
        });
        logs.clat.push(LogEntry {
            value: s.clat[i] / n,
            ..e
        });
        logs.slat.push(LogEntry {
            value: s.slat[i] / n,
            ..e
        });
    }
    *s = LatSums::default();
}

/// Index of reads, writes and trims in [`JobResult::dirs`].
pub const READ: usize = 0;
/// See [`READ`].
pub const WRITE: usize = 1;
/// See [`READ`].
pub const TRIM: usize = 2;
/// The directions' names as fio writes them, by index ([`READ`], [`WRITE`],
/// [`TRIM`]).
pub const DIR_NAMES: [&str; 3] = ["read", "write", "trim"];

/// One job clone (a process, in fio's terms).
#[derive(Clone, Debug)]
pub struct JobResult {
    /// The job's section name.
    pub name: String,
    /// Index of the job in the job file.
    pub job_index: usize,
    /// Which clone of `numjobs` (0-based).
    pub clone: u32,
    /// Reporting group.
    pub group: u32,
    /// I/O context id it ran as.
    pub ctx: u32,
    /// When it started and ended, on the virtual clock.
    pub start: Nanos,
    /// See `start`.
    pub end: Nanos,
    /// Reads, writes, trims.
    pub dirs: [DirStats; 3],
    /// Syncs, depths, logs.
    pub extra: JobExtra,
    /// Why it failed, if it did: the I/O error that ended it, a block that
    /// did not verify, a rate not met...
    pub failure: Option<JobFailure>,
    /// Errors it went on after (`continue_on_error`, `ignore_error`):
    /// fio's `total_err_count`.
    pub total_err: u64,
    /// The first of those (fio's `first_error`), 0 for none.
    pub first_error: i32,
    /// The first I/O error it went on after, when `error_dump` asked for
    /// it to be reported.
    pub first_ignored: Option<IoError>,
    /// Its steady-state detection's result (`ss_dur`): on the first clone
    /// of a job, or of a group with `group_reporting`.
    pub steady: Option<Box<crate::workload::SteadyResult>>,
    /// The depth its `latency_target` search ended at, when it had one
    /// (fio's `latency_depth`).
    pub latency_depth: Option<u32>,
}

impl JobResult {
    /// How long it ran.
    pub fn runtime(&self) -> Nanos {
        self.end.saturating_sub(self.start)
    }

    /// The error fio reports for it (`err=` in text, `error` in JSON): its
    /// failure's, else the first error it went on after, else 0.
    pub fn error(&self) -> i32 {
        self.failure
            .as_ref()
            .map_or(self.first_error, JobFailure::errno)
    }
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The scheduler it ran under.
    pub scheduler: String,
    /// The device, described.
    pub device: String,
    /// Every job clone, in job-file order.
    pub jobs: Vec<JobResult>,
    /// Virtual time from start to the last completion.
    pub elapsed: Nanos,
    /// The queue's figures.
    pub queue: QueueStats,
    /// The device's figures.
    pub device_stats: DeviceStats,
    /// Events the engine processed (arrivals, completions, timers).
    pub events: u64,
    /// I/Os completed in all (bios).
    pub ios: u64,
    /// CPU time the run used, when it ran on the real clock.
    pub cpu: Option<CpuUse>,
    /// When a run on the real clock ended, in milliseconds since the Unix
    /// epoch (the date its reports show, as fio's do); `None` for a
    /// simulation, which has no date.
    pub ended_at_ms: Option<u64>,
    /// The locks the run's threads shared, measured (empty unless asked
    /// for, or where no lock was shared).
    pub locks: Vec<elevator_core::lockstat::LockStat>,
}

/// CPU time used by a run on the real clock: by the engine's thread alone
/// (user and system, what fio reports for a job) and by the whole process
/// (io_uring's kernel workers included). The process is a total only: the
/// kernel estimates the user/system split separately for a thread and for a
/// process, and the two estimates disagree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuUse {
    /// Nanoseconds of CPU, whole process (every thread).
    pub process_ns: u64,
    /// Nanoseconds in user mode, the engine's thread.
    pub thread_user_ns: u64,
    /// Nanoseconds in the kernel, the engine's thread.
    pub thread_system_ns: u64,
}

impl CpuUse {
    /// Nanoseconds of the whole process's CPU per I/O (0 if none).
    pub fn per_io(&self, ios: u64) -> f64 {
        per(self.process_ns, ios)
    }

    /// Nanoseconds used by the process's other threads (io_uring's
    /// workers): the process's total less the engine thread's.
    pub fn other_threads_ns(&self) -> u64 {
        self.process_ns
            .saturating_sub(self.thread_user_ns + self.thread_system_ns)
    }

    /// Nanoseconds of the engine thread's CPU per I/O (0 if none).
    pub fn thread_per_io(&self, ios: u64) -> f64 {
        per(self.thread_user_ns + self.thread_system_ns, ios)
    }
}

fn per(ns: u64, ios: u64) -> f64 {
    if ios == 0 {
        0.0
    } else {
        ns as f64 / ios as f64
    }
}

impl RunResult {
    /// Bytes transferred by every job, every direction.
    pub fn bytes(&self) -> u64 {
        self.jobs
            .iter()
            .flat_map(|j| j.dirs.iter())
            .map(|d| d.bytes)
            .sum()
    }

    /// The device's utilisation over the run, 0..=1.
    pub fn utilisation(&self) -> f64 {
        if self.elapsed == 0 {
            0.0
        } else {
            (self.device_stats.busy_ns as f64 / self.elapsed as f64).min(1.0)
        }
    }
}
