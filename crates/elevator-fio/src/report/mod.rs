//! Reports of a run, simulated or real: fio's text ([`text`]) and fio's JSON
//! ([`json`]).
//!
//! Reporting follows fio: a job stanza per job clone, or one per group when
//! its jobs set `group_reporting`; then a "Run status group" line per group;
//! then disk statistics, and elevator's own figures for the queue.

pub mod json;
pub mod text;

use crate::job::JobFile;
use crate::result::{DirStats, JobResult, RunResult};

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
}

impl Stanza<'_> {
    /// How long it ran, in ns.
    pub fn runtime(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// The stanzas of a run, as fio would print them.
pub fn stanzas<'a>(jobs: &JobFile, run: &'a RunResult) -> Vec<Stanza<'a>> {
    let mut out: Vec<Stanza<'a>> = Vec::new();
    for j in &run.jobs {
        let grouped = jobs
            .jobs
            .get(j.job_index)
            .is_some_and(|spec| spec.group_reporting);
        if grouped && let Some(s) = out.iter_mut().find(|s| s.group == j.group && s.jobs > 0) {
            absorb(s, j);
            continue;
        }
        out.push(Stanza {
            name: &j.name,
            job_index: j.job_index,
            group: j.group,
            jobs: 1,
            ctx: j.ctx,
            start: j.start,
            end: j.end,
            dirs: j.dirs.clone(),
        });
    }
    out
}

fn absorb(s: &mut Stanza<'_>, j: &JobResult) {
    s.jobs += 1;
    s.start = s.start.min(j.start);
    s.end = s.end.max(j.end);
    for (a, b) in s.dirs.iter_mut().zip(&j.dirs) {
        a.merge(b);
    }
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
