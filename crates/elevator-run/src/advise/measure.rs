//! What a run gave, in the figures the goals rank by ([`Measured`]): from
//! a fio run's result, or from a trace replay with each submitter's
//! latency measured as it goes (`SubmitterLatency`).

use std::collections::BTreeMap;

use elevator_core::{Op, TraceAction};
use elevator_fio::result::RunResult;
use elevator_trace::replay::ReplayResult;
use elevator_trace::{Record, TraceSink};

/// What one run gave, in the figures the goals rank by.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The scheduler.
    pub scheduler: String,
    /// The `nomerges` setting.
    pub nomerges: u8,
    /// Bytes moved per second of (virtual) run time.
    pub throughput: f64,
    /// The worst job's 99th percentile completion latency of reads, ns
    /// (None: no reads); for a trace, that of every read.
    pub read_p99: Option<u64>,
    /// Likewise for writes.
    pub write_p99: Option<u64>,
    /// The p99 goal's figure, ns: the worst job's p99 read latency (write,
    /// if nothing reads); for a trace, the p99 of every read (write).
    pub goal_p99: Option<u64>,
    /// The direction `goal_p99` is of: "read" or "write".
    pub goal_p99_dir: &'static str,
    /// Jain's fairness index over the shares (1: all equal; 1/n: one takes
    /// everything).
    pub fairness: f64,
    /// Each job clone's throughput as a share of what its job gets alone
    /// on the device, or each trace submitter's mean completion latency
    /// (ns), named.
    pub shares: Vec<(String, f64)>,
    /// I/Os (bios) completed.
    pub ios: u64,
    /// Virtual run time, ns.
    pub elapsed: u64,
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²); 1 for no or one value.
pub fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if xs.len() < 2 || squares == 0.0 {
        1.0
    } else {
        sum * sum / (xs.len() as f64 * squares)
    }
}

impl Measured {
    /// A run's figures from its totals (bytes, I/Os, elapsed ns), its p99s
    /// (reads, writes) and each participant's share: the goal's p99 is of
    /// reads if anything read, fairness is Jain's index over the shares.
    fn new(
        scheduler: &str,
        nomerges: u8,
        (bytes, ios, elapsed): (u64, u64, u64),
        (read_p99, write_p99): (Option<u64>, Option<u64>),
        shares: Vec<(String, f64)>,
    ) -> Measured {
        let values: Vec<f64> = shares.iter().map(|(_, v)| *v).collect();
        Measured {
            scheduler: scheduler.to_string(),
            nomerges,
            throughput: elevator_fio::report::rate(bytes, elapsed),
            read_p99,
            write_p99,
            goal_p99: read_p99.or(write_p99),
            goal_p99_dir: if read_p99.is_some() { "read" } else { "write" },
            fairness: jain(&values),
            shares,
            ios,
            elapsed,
        }
    }
}

/// The figures of a fio run.
pub(super) fn measure_job(run: &RunResult, nomerges: u8, alone: &[f64]) -> Measured {
    let mut bytes = 0;
    let mut shares = Vec::with_capacity(run.jobs.len());
    for job in &run.jobs {
        let job_bytes: u64 = job.dirs.iter().map(|d| d.bytes).sum();
        bytes += job_bytes;
        let who = if job.clone == 0 {
            job.name.clone()
        } else {
            format!("{}.{}", job.name, job.clone)
        };
        let throughput = elevator_fio::report::rate(job_bytes, job.runtime().max(1));
        let share = match alone.get(job.job_index) {
            Some(&solo) if solo > 0.0 => throughput / solo,
            _ => throughput,
        };
        shares.push((who, share));
    }
    // The worst job's p99, per direction; the goal's is of reads if
    // anything reads.
    let worst_p99 = |dir: usize| {
        run.jobs
            .iter()
            .filter(|j| j.dirs[dir].clat.count() > 0)
            .map(|j| j.dirs[dir].clat.percentile(99.0))
            .max()
    };
    let (read_p99, write_p99) = (worst_p99(0), worst_p99(1));
    Measured::new(
        &run.scheduler,
        nomerges,
        (bytes, run.ios, run.elapsed),
        (read_p99, write_p99),
        shares,
    )
}

fn p99(h: &elevator_core::Histogram) -> Option<u64> {
    (h.count() > 0).then(|| h.percentile(99.0))
}

/// The figures of a trace replay.
pub(super) fn measure_trace(
    result: &ReplayResult,
    submitters: &SubmitterLatency,
    scheduler: &str,
    nomerges: u8,
) -> Measured {
    let a = &result.analysis;
    let hist = |op: Op| a.q2c_by_op.get(op as usize).and_then(p99);
    let bytes: u64 = a.completed.iter().map(|c| c.bytes).sum();
    let (read_p99, write_p99) = (hist(Op::Read), hist(Op::Write));
    let shares: Vec<(String, f64)> = submitters
        .by_pid
        .iter()
        .filter(|(_, s)| s.bios > 0)
        .map(|(pid, s)| (format!("pid {pid}"), s.latency_ns as f64 / s.bios as f64))
        .collect();
    Measured::new(
        scheduler,
        nomerges,
        (bytes, result.bios, result.elapsed),
        (read_p99, write_p99),
        shares,
    )
}

/// One submitter's bios completed and their summed latency.
#[derive(Clone, Copy, Debug, Default)]
struct Submitter {
    bios: u64,
    latency_ns: u64,
}

/// A trace sink that measures each submitter's (pid's) completion latency:
/// a queued bio completes with the first completion that covers its first
/// sector (merged bios complete with their request).
#[derive(Debug, Default)]
pub(super) struct SubmitterLatency {
    /// Bios in flight by (first sector, arrival number): pid, queue time.
    in_flight: BTreeMap<(u64, u64), (u32, u64)>,
    arrivals: u64,
    by_pid: BTreeMap<u32, Submitter>,
}

impl TraceSink for SubmitterLatency {
    fn record(&mut self, record: &Record) -> std::io::Result<()> {
        let e = &record.event;
        if e.bytes == 0 {
            return Ok(());
        }
        match e.action {
            TraceAction::Queue => {
                self.arrivals += 1;
                self.in_flight
                    .insert((e.sector, self.arrivals), (record.pid(), e.time));
            }
            TraceAction::Complete => {
                let end = e.sector + u64::from(e.bytes).div_ceil(512);
                let done: Vec<(u64, u64)> = self
                    .in_flight
                    .range((e.sector, 0)..(end, 0))
                    .map(|(k, _)| *k)
                    .collect();
                for key in done {
                    if let Some((pid, queued)) = self.in_flight.remove(&key) {
                        let s = self.by_pid.entry(pid).or_default();
                        s.bios += 1;
                        s.latency_ns += e.time.saturating_sub(queued);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn process(&mut self, _pid: u32, _name: &str, _time: u64) -> std::io::Result<()> {
        Ok(())
    }

    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::jain;

    #[test]
    fn jain_is_one_when_equal_and_one_over_n_when_one_takes_all() {
        assert_eq!(jain(&[3.0, 3.0, 3.0]), 1.0);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert_eq!(jain(&[]), 1.0);
    }
}
