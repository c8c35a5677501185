//! Reports of a run, simulated or real, in fio 3.33's formats: normal text
//! ([`text`]), JSON and json+ ([`json`]), terse v3 ([`terse`]); and the
//! logs fio writes ([`logs`]); lock statistics in lockmeter's and
//! `/proc/lock_stat`'s tables ([`locks`]). [`render`] picks one by [`Format`].
//!
//! Reporting follows fio: a job stanza per job clone, or one per group when
//! its jobs set `group_reporting`; then a "Run status group" line per group;
//! then disk statistics, and elevator's own figures for the queue.
//!
//! Dates: elevator-fio has no clock. A run on the real clock carries when it
//! ended ([`RunResult::ended_at_ms`](crate::result::RunResult::ended_at_ms)),
//! and its reports show that date as fio does (`ctime`'s form, in UTC;
//! `SOURCE_DATE_EPOCH` instead when set). A simulation has no date: its job
//! line says `simulated` where fio's shows the date, and its JSON gives
//! `"timestamp": 0`, `"timestamp_ms": 0`, `"time": "simulated"`, so that its
//! reports are the same on every run. Where fio shows a process id, elevator shows
//! the job clone's I/O context id.

pub mod fmt;
pub mod json;
pub mod locks;
pub mod logs;
pub mod terse;
pub mod text;

use std::str::FromStr;

use crate::job::{JobFile, JobSpec};
use crate::result::{DirStats, JobExtra, JobResult, RunResult};

/// fio's version, as elevator's reports give it (the format they imitate).
pub const FIO_VERSION: &str = "fio-3.33";

/// An output format (fio's `--output-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `normal`: fio's text.
    Normal,
    /// `json`.
    Json,
    /// `json+`: JSON with latency bins.
    JsonPlus,
    /// `terse`: fio's semicolon-separated version 3.
    Terse,
}

impl Format {
    /// fio's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Normal => "normal",
            Format::Json => "json",
            Format::JsonPlus => "json+",
            Format::Terse => "terse",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "normal" => Ok(Format::Normal),
            "json" => Ok(Format::Json),
            "json+" => Ok(Format::JsonPlus),
            "terse" | "minimal" => Ok(Format::Terse),
            _ => Err(format!(
                "unknown output format '{s}' (normal, json, json+ or terse)"
            )),
        }
    }
}

/// The report of `run` of `jobs` on `device_name` in `format`.
pub fn render(format: Format, jobs: &JobFile, run: &RunResult, device_name: &str) -> String {
    match format {
        Format::Normal => text::render(jobs, run, device_name),
        Format::Json | Format::JsonPlus => {
            let mut s = json::render_text(jobs, run, device_name, format == Format::JsonPlus);
            s.push('\n');
            s
        }
        Format::Terse => terse::render(jobs, run, device_name),
    }
}

/// fio's notes for the clones of `run` whose synchronous engine caps their
/// job's `iodepth` to 1 ([`JobSpec::depth_capped`]): one line each, as fio
/// prints one as each such clone starts. The normal report has them after
/// its "Starting" line; fio prints them before a JSON or terse report, on
/// stdout, which the caller does (they are not part of the document).
pub fn depth_notes(jobs: &JobFile, run: &RunResult) -> String {
    let mut out = String::new();
    for clone in &run.jobs {
        if jobs
            .jobs
            .get(clone.job_index)
            .is_some_and(JobSpec::depth_capped)
        {
            out.push_str(crate::job::SYNC_DEPTH_NOTE);
            out.push('\n');
        }
    }
    out
}

/// fio's default completion-latency percentiles.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// One stanza: a job clone, or a group reported as one.
pub struct Stanza<'a> {
    /// Name shown (the first job's).
    pub name: &'a str,
    /// Index of the (first) job in the job file.
    pub job_index: usize,
    /// Reporting group.
    pub group: u32,
    /// How many job clones it covers.
    pub jobs: usize,
    /// I/O context of the (first) clone.
    pub ctx: u32,
    /// Earliest start and latest end.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Reads, writes, trims.
    pub dirs: [DirStats; 3],
    /// Syncs, depths, latency buckets (logs are not merged).
    pub extra: JobExtra,
    /// The job's options, when the job file has it.
    pub spec: Option<&'a JobSpec>,
    /// The error fio reports for it (the first of its clones' with one):
    /// [`JobResult::error`].
    pub error: i32,
    /// What ended it, when it failed (the first failed clone's).
    pub failure: Option<&'a crate::workload::JobFailure>,
    /// Errors its clones went on after, summed (fio's `total_err`).
    pub total_err: u64,
    /// The first of those (fio's `first_error`).
    pub first_error: i32,
    /// Its steady-state result (`ss_dur`), the first clone's with one.
    pub steady: Option<&'a crate::workload::SteadyResult>,
    /// The depth its `latency_target` search ended at (the first clone's).
    pub latency_depth: Option<u32>,
}

impl Stanza<'_> {
    /// fio's `latency` figures: depth, target (ns), window (µs) and
    /// percentile; without a `latency_target`, the job's depth and fio's
    /// zeros.
    pub fn latency(&self) -> (u32, u64, u64, f64) {
        let depth = self
            .latency_depth
            .unwrap_or_else(|| self.spec.map_or(1, |j| j.iodepth));
        match self.spec.filter(|j| j.latency_target > 0) {
            Some(j) => (
                depth,
                j.latency_target,
                j.latency_window / 1000,
                j.latency_percentile,
            ),
            None => (depth, 0, 0, 100.0),
        }
    }

    /// How long it ran, in ns.
    pub fn runtime(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// The percentiles to report, in numeric order (`percentile_list`, or
    /// fio's default).
    pub fn percentiles(&self) -> Vec<f64> {
        let mut list = self
            .spec
            .and_then(|s| s.percentile_list.clone())
            .unwrap_or_else(|| PERCENTILES.to_vec());
        list.sort_by(f64::total_cmp);
        list
    }

    /// Reads, writes and trims as one (fio's `mixed`).
    pub fn mixed(&self) -> DirStats {
        let mut m = self.dirs[0].clone();
        m.merge(&self.dirs[1]);
        m.merge(&self.dirs[2]);
        m
    }

    /// `unified_rw_reporting`.
    pub fn unified(&self) -> crate::job::UnifiedRw {
        self.spec
            .map_or(crate::job::UnifiedRw::None, |s| s.unified_rw_reporting)
    }

    /// Whether its job goes on after some errors (`continue_on_error`,
    /// `ignore_error`): fio then reports `total_err` and `first_error`.
    pub fn continues(&self) -> bool {
        self.spec.is_some_and(|s| s.errors.continues())
    }

    /// fio's text for its error, after `err=N` in the job's line: what
    /// failed and the error's text (`func=io_u error, error=Input/output
    /// error`); `None` without an error.
    pub fn error_text(&self) -> Option<String> {
        use crate::workload::JobFailure;
        if self.error == 0 {
            return None;
        }
        let func = match self.failure {
            Some(JobFailure::Verify { .. }) => "verify",
            Some(JobFailure::RateMin(_)) => "check_min_rate",
            Some(JobFailure::Replay { .. }) => "read_iolog",
            Some(JobFailure::Io(_)) | None => "io_u error",
        };
        Some(format!(
            "func={func}, error={}",
            crate::errno::describe(self.error)
        ))
    }

    /// Whether it reports completion-latency percentiles.
    pub fn clat_percentiles(&self) -> bool {
        self.spec.is_none_or(|s| s.clat_percentiles)
    }
}

/// The stanzas of a run, as fio would print them, each made when it is
/// reached: a report holds one stanza's figures at a time, not a copy of
/// every job's.
pub fn stanzas<'a>(jobs: &'a JobFile, run: &'a RunResult) -> impl Iterator<Item = Stanza<'a>> {
    // Which job results each stanza covers: (group, members).
    let mut plan: Vec<(u32, Vec<usize>)> = Vec::new();
    for (i, j) in run.jobs.iter().enumerate() {
        let grouped = jobs
            .jobs
            .get(j.job_index)
            .is_some_and(|spec| spec.group_reporting);
        if grouped && let Some((_, members)) = plan.iter_mut().find(|(g, _)| *g == j.group) {
            members.push(i);
            continue;
        }
        plan.push((j.group, vec![i]));
    }
    plan.into_iter().filter_map(move |(_, members)| {
        let (&first, rest) = members.split_first()?;
        let j = run.jobs.get(first)?;
        let mut s = Stanza {
            name: &j.name,
            job_index: j.job_index,
            group: j.group,
            jobs: 1,
            ctx: j.ctx,
            start: j.start,
            end: j.end,
            dirs: j.dirs.clone(),
            extra: {
                let mut x = JobExtra::default();
                x.merge(&j.extra);
                x
            },
            spec: jobs.jobs.get(j.job_index),
            error: j.error(),
            failure: j.failure.as_ref(),
            total_err: j.total_err,
            first_error: j.first_error,
            steady: j.steady.as_deref(),
            latency_depth: j.latency_depth,
        };
        for j in rest.iter().filter_map(|&i| run.jobs.get(i)) {
            absorb(&mut s, j);
        }
        Some(s)
    })
}

fn absorb<'a>(s: &mut Stanza<'a>, j: &'a JobResult) {
    s.jobs += 1;
    s.start = s.start.min(j.start);
    s.end = s.end.max(j.end);
    for (a, b) in s.dirs.iter_mut().zip(&j.dirs) {
        a.merge(b);
    }
    s.extra.merge(&j.extra);
    if s.error == 0 {
        s.error = j.error();
    }
    if s.failure.is_none() {
        s.failure = j.failure.as_ref();
    }
    s.total_err += j.total_err;
    if s.first_error == 0 {
        s.first_error = j.first_error;
    }
    if s.steady.is_none() {
        s.steady = j.steady.as_deref();
    }
    s.latency_depth = s.latency_depth.or(j.latency_depth);
}

/// A reporting group's totals.
pub struct Group {
    /// Group id.
    pub id: u32,
    /// Per direction: bytes, and the range of per-job bandwidths (bytes/s).
    pub dirs: [GroupDir; 3],
    /// Earliest start, latest end.
    pub start: u64,
    /// See `start`.
    pub end: u64,
}

impl Group {
    /// The group's aggregate bandwidth in direction `i`, bytes/s: its
    /// bytes over its longest job's runtime (fio's `agg`).
    pub fn agg(&self, i: usize) -> f64 {
        rate(self.dirs[i].bytes, self.dirs[i].max_run)
    }

    /// Reads, writes and trims as one (fio's `MIXED` line: the bytes
    /// summed, the slowest and fastest of the directions' job rates).
    pub fn mixed(&self) -> GroupDir {
        let mut m = GroupDir::default();
        for d in self.dirs.iter().filter(|d| d.bytes > 0) {
            let first = m.bytes == 0;
            m.bytes += d.bytes;
            m.min_bw = if first {
                d.min_bw
            } else {
                m.min_bw.min(d.min_bw)
            };
            m.max_bw = m.max_bw.max(d.max_bw);
            m.min_run = if first {
                d.min_run
            } else {
                m.min_run.min(d.min_run)
            };
            m.max_run = m.max_run.max(d.max_run);
        }
        m
    }
}

/// fio's disk statistics for the run's device, from what the queue counted
/// (as `/proc/diskstats` would): reads and writes (discards and flushes are
/// counted apart by Linux, and fio shows neither; they do count in
/// `in_queue`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskUtil {
    /// Requests completed: reads, writes.
    pub ios: [u64; 2],
    /// Merges: reads, writes.
    pub merges: [u64; 2],
    /// Milliseconds the requests spent from allocation to completion,
    /// summed: reads, writes.
    pub ticks: [u64; 2],
    /// Milliseconds of all requests in the queue, summed (diskstats'
    /// weighted time in queue).
    pub in_queue: u64,
    /// The device's busy time in percent of the run.
    pub util: f64,
}

impl DiskUtil {
    /// The disk statistics of `run`.
    pub fn of(run: &RunResult) -> DiskUtil {
        let d = &run.queue.disk;
        DiskUtil {
            ios: [d[0].ios, d[1].ios],
            merges: [d[0].merges, d[1].merges],
            ticks: [d[0].ticks_ns / 1_000_000, d[1].ticks_ns / 1_000_000],
            in_queue: d.iter().map(|x| x.ticks_ns).sum::<u64>() / 1_000_000,
            util: run.utilisation() * 100.0,
        }
    }

    /// The counts in the order fio's reports give them: reads' and writes'
    /// ios, merges and ticks, then `in_queue`.
    pub fn counts(&self) -> [u64; 7] {
        let [ios, merges, ticks] = [self.ios, self.merges, self.ticks];
        [
            ios[0],
            ios[1],
            merges[0],
            merges[1],
            ticks[0],
            ticks[1],
            self.in_queue,
        ]
    }
}

/// One direction of a group.
#[derive(Clone, Copy, Default)]
pub struct GroupDir {
    /// Bytes moved by the group.
    pub bytes: u64,
    /// Slowest job's bandwidth, bytes/s.
    pub min_bw: f64,
    /// Fastest job's bandwidth, bytes/s.
    pub max_bw: f64,
    /// Shortest and longest job runtime with I/O in this direction, ns.
    pub min_run: u64,
    /// See `min_run`.
    pub max_run: u64,
}

/// The groups of a run, in order.
pub fn groups(run: &RunResult) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for j in &run.jobs {
        let g = match out.iter_mut().position(|g| g.id == j.group) {
            Some(i) => &mut out[i],
            None => {
                out.push(Group {
                    id: j.group,
                    dirs: [GroupDir::default(); 3],
                    start: j.start,
                    end: j.end,
                });
                out.last_mut().expect("just pushed")
            }
        };
        g.start = g.start.min(j.start);
        g.end = g.end.max(j.end);
        for (d, s) in g.dirs.iter_mut().zip(&j.dirs) {
            if s.ios == 0 {
                continue;
            }
            let bw = rate(s.bytes, j.runtime());
            let first = d.bytes == 0;
            d.bytes += s.bytes;
            d.min_bw = if first { bw } else { d.min_bw.min(bw) };
            d.max_bw = d.max_bw.max(bw);
            d.min_run = if first {
                j.runtime()
            } else {
                d.min_run.min(j.runtime())
            };
            d.max_run = d.max_run.max(j.runtime());
        }
    }
    out
}

/// fio's `bw_agg` / `per=`: a direction's mean sampled bandwidth as a
/// percent of its group's aggregate `agg` (bytes/s); 0 without samples.
pub fn bw_share(d: &DirStats, agg: f64) -> f64 {
    let agg_kib = (agg as u64 / 1024) as f64;
    if d.bw.samples == 0 {
        0.0
    } else if agg_kib > 0.0 {
        (d.bw.mean * 100.0 / agg_kib).min(100.0)
    } else {
        100.0
    }
}

/// `amount` per second over `ns` nanoseconds.
pub fn rate(amount: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        amount as f64 * 1e9 / ns as f64
    }
}

/// Why a simulated run's rates and latencies are all zero, when they are: a
/// device that takes no time (`null` without `latency`) completes every I/O
/// at the instant it is issued, so no simulated time passes.
pub fn no_time_note(run: &RunResult) -> Option<String> {
    (run.cpu.is_none() && run.elapsed == 0 && run.ios > 0).then(|| {
        format!(
            "{} completes I/O in no simulated time, so IOPS, bandwidth and latencies are 0; \
             the {} I/Os are counted below and the host CPU they took is on stderr \
             (give the device a latency for rates, e.g. --device null,latency=10)",
            run.device, run.ios
        )
    })
}
