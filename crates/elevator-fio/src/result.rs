//! What a simulated run produced: per job clone and per direction, the I/O
//! counts, bytes and latencies; and the queue's and device's own figures.
//! Reports (fio-like text, fio JSON, comparison tables) are made from this.

use elevator_core::{DeviceStats, Histogram, Nanos, Op, QueueStats};

use crate::job::JobSpec;

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
}

impl DirStats {
    /// Add another job's figures (for group reporting).
    pub fn merge(&mut self, other: &DirStats) {
        self.ios += other.ios;
        self.bytes += other.bytes;
        self.errors += other.errors;
        self.clat.merge(&other.clat);
        self.slat.merge(&other.slat);
        self.lat.merge(&other.lat);
    }
}

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
}

/// What fio reports per job beyond the per-direction figures: syncs,
/// I/O depths, logs.
#[derive(Clone, Debug, Default)]
pub struct JobExtra {
    /// Cache flushes (`fsync`, `fdatasync`, `end_fsync`): their latencies.
    pub sync: Summary,
}

/// A job clone's figures while it runs: the hooks a worker calls as it
/// issues and completes I/O, and what they gather.
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    /// Reads, writes, trims.
    pub dirs: [DirStats; 3],
    /// Syncs, depths, logs.
    pub extra: JobExtra,
}

impl JobStats {
    /// Figures for a clone of `job` (which logs, percentiles...).
    pub fn new(job: &JobSpec) -> JobStats {
        let _ = job;
        JobStats::default()
    }

    /// Figures start at `now`: the job starts, or its `ramp_time` ends
    /// (what was gathered before is dropped).
    pub fn start(&mut self, now: Nanos) {
        let _ = now;
    }

    /// One submission: `ios` I/Os went to the queue together, leaving
    /// `in_flight` of the job's I/Os in flight.
    #[inline]
    pub fn submitted(&mut self, ios: u32, in_flight: u32) {
        let _ = (ios, in_flight);
    }

    /// One I/O completed.
    #[inline]
    pub fn completed(&mut self, io: &IoDone) {
        let d = &mut self.dirs[match io.op {
            Op::Read => READ,
            Op::Discard => TRIM,
            _ => WRITE,
        }];
        d.ios += 1;
        d.bytes += io.bytes;
        if !io.ok {
            d.errors += 1;
        }
        d.clat.record(io.now - io.submitted);
        d.slat.record(io.submitted - io.issued);
        d.lat.record(io.now - io.issued);
    }

    /// The job took `ios` completions together.
    #[inline]
    pub fn reaped(&mut self, ios: u32) {
        let _ = ios;
    }

    /// A cache flush the job asked for (wanted at `issued`) completed at
    /// `now`.
    pub fn synced(&mut self, issued: Nanos, now: Nanos, ok: bool) {
        let _ = ok;
        self.extra.sync.record(now - issued);
    }

    /// The job ended at `now`.
    pub fn finish(&mut self, now: Nanos) {
        let _ = now;
    }
}

/// Index of reads, writes and trims in [`JobResult::dirs`].
pub const READ: usize = 0;
/// See [`READ`].
pub const WRITE: usize = 1;
/// See [`READ`].
pub const TRIM: usize = 2;

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
}

impl JobResult {
    /// How long it ran.
    pub fn runtime(&self) -> Nanos {
        self.end.saturating_sub(self.start)
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
    /// The locks the run's threads shared, measured (empty unless asked
    /// for, or where no lock was shared).
    pub locks: Vec<crate::locks::LockStat>,
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
    /// The device's utilisation over the run, 0..=1.
    pub fn utilisation(&self) -> f64 {
        if self.elapsed == 0 {
            0.0
        } else {
            (self.device_stats.busy_ns as f64 / self.elapsed as f64).min(1.0)
        }
    }
}
