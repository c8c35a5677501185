//! fio jobs as workers: each clone of each job becomes a [`Worker`] that
//! generates I/O as fio would, with its files laid out on the device by
//! [`Layout`]. The simulation engine drives workers on a virtual clock;
//! elevator-io drives the same workers on the real one.

mod contents;
mod distribution;
mod exit;
mod failure;
mod flow;
mod latency_target;
mod layout;
mod open_files;
mod pattern;
pub mod prio;
mod randommap;
mod rate;
mod replay;
mod start;
mod steady;
mod think;
mod verify_log;
mod worker;
mod zones;

pub use contents::{Contents, DedupeMode};
pub use exit::{ExitRule, end_others};
pub use failure::{IoError, JobFailure};
pub use flow::FLOW_RETRY;
pub use layout::{Extent, Layout};
pub use pattern::{NextIo, Pattern};
pub use rate::RateShortfall;
pub use replay::{IoLog, IoLogError, LoggedIo, NoIoLogs, OpenIoLog};
pub use start::{StartRule, start_ready};
pub use steady::{CloneSample, SteadyResult, SteadyWatch, TICK as STEADY_TICK};
pub use verify_log::GENERATION;
pub use worker::{Pending, State, VerifyIo, Worker};

use elevator_core::Nanos;

use crate::job::{JobError, JobFile, JobSpec};
use crate::result::JobResult;

/// Every clone of every job in `jobs`, with files laid out on a device of
/// `device_bytes` and its start rule (`stonewall`, `wait_for`,
/// `startdelay`: see [`start_ready`]). Clone `i` (counting from 0 across the
/// file) runs as I/O context `i + 1`; each clone's random stream is derived
/// from `seed`, its job's `randseed`, and its position. Reporting groups
/// start at `stonewall` and `new_group`. A job with `read_iolog` is
/// refused: see [`workers_with_logs`].
pub fn workers(jobs: &JobFile, device_bytes: u64, seed: u64) -> Result<Vec<Worker>, JobError> {
    workers_with_logs(jobs, device_bytes, seed, &NoIoLogs)
}

/// [`workers`], with the logs of jobs with `read_iolog` opened by `logs`
/// (once per clone): such a clone replays its log onto the whole device
/// instead of following its pattern.
pub fn workers_with_logs(
    jobs: &JobFile,
    device_bytes: u64,
    seed: u64,
    logs: &dyn OpenIoLog,
) -> Result<Vec<Worker>, JobError> {
    let mut seeds = Vec::new();
    for (j, job) in jobs.jobs.iter().enumerate() {
        for clone in 0..job.numjobs {
            seeds.push(mix(&[
                seed,
                job.randseed.unwrap_or(0x5EED_F10F),
                j as u64,
                u64::from(clone),
            ]));
        }
    }
    let mut rules = start::rules(jobs, &seeds)?.into_iter();
    let mut layout = Layout::new(device_bytes);
    let mut workers = Vec::with_capacity(seeds.len());
    let mut group = 0u32;
    for (j, job) in jobs.jobs.iter().enumerate() {
        if j > 0 && (job.stonewall || job.new_group) {
            group += 1;
        }
        for clone in 0..job.numjobs {
            let files = clone_files(&mut layout, job, clone, jobs.file_of(job))?;
            let ctx = workers.len() as u32 + 1;
            let seed = seeds[workers.len()];
            let rule = rules.next().unwrap_or_default();
            let log = match &job.read_iolog {
                Some(path) => {
                    let error = |e: IoLogError| JobError {
                        file: jobs.file_of(job).to_string(),
                        line: job.line_of(&["read_iolog"]),
                        option: Some("read_iolog".into()),
                        message: format!("job '{}': cannot replay {path}: {e}", job.name),
                    };
                    let largest = logs.largest_io(path).transpose().map_err(error)?;
                    Some((logs.open(path).map_err(error)?, largest))
                }
                None => None,
            };
            workers.push(Worker::new(
                job,
                jobs.file_of(job),
                j,
                clone,
                group,
                ctx,
                files,
                seed,
                rule,
                log,
            )?);
        }
    }
    if workers
        .iter()
        .any(|w| w.contents.as_ref().is_some_and(Contents::wants_shared))
    {
        let bases: std::sync::Arc<[u64]> = seeds.iter().map(|&s| Contents::base_of(s)).collect();
        for (own, w) in workers.iter_mut().enumerate() {
            if let Some(c) = w.contents.as_mut() {
                c.share_working_set(std::sync::Arc::clone(&bases), own);
            }
        }
    }
    exit::arm(jobs, &mut workers);
    flow::join_groups(workers.iter_mut().filter_map(|w| w.flow.as_deref_mut()));
    Ok(workers)
}

/// The files of clone `clone` of `job`, laid out by `layout`; a clone that
/// replays a log (`read_iolog`) has the whole device as its one file.
fn clone_files(
    layout: &mut Layout,
    job: &JobSpec,
    clone: u32,
    path: &str,
) -> Result<Vec<Extent>, JobError> {
    if job.read_iolog.is_some() {
        let bytes = layout.device_bytes() / 512 * 512;
        return Ok(vec![Extent {
            sector: 0,
            bytes,
            start: 0,
            end: bytes,
        }]);
    }
    layout.files_for(job, clone, path)
}

/// One job clone's files, named as fio names them, where they lie on the
/// device: what `write_iolog` needs to log an I/O as fio does (the file's
/// name, the offset in it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloneFiles {
    /// The clone's I/O context (as [`workers`] numbers them: clone `i` of
    /// the file is `i + 1`).
    pub ctx: u32,
    /// Which job of the file (0-based).
    pub job_index: usize,
    /// Which clone of the job.
    pub clone: u32,
    /// Its files: name and extent.
    pub files: Vec<(String, Extent)>,
}

/// Every clone's files, as [`workers`] lays them out on a device of
/// `device_bytes` (a clone replaying a log has the device: its file is
/// named as the job's first file).
pub fn clone_files_all(jobs: &JobFile, device_bytes: u64) -> Result<Vec<CloneFiles>, JobError> {
    let mut layout = Layout::new(device_bytes);
    let mut out = Vec::new();
    for (j, job) in jobs.jobs.iter().enumerate() {
        for clone in 0..job.numjobs {
            let extents = clone_files(&mut layout, job, clone, jobs.file_of(job))?;
            let files = extents
                .into_iter()
                .enumerate()
                .map(|(i, e)| (Layout::file_name(job, clone, i as u32), e))
                .collect();
            out.push(CloneFiles {
                ctx: out.len() as u32 + 1,
                job_index: j,
                clone,
                files,
            });
        }
    }
    Ok(out)
}

/// The I/Os the jobs of `jobs` may have in flight at once (sum of the depth
/// each runs at, [`JobSpec::queue_depth`], × `numjobs`).
pub fn total_depth(jobs: &JobFile) -> u32 {
    jobs.jobs
        .iter()
        .map(|j| j.queue_depth().saturating_mul(j.numjobs))
        .fold(0, u32::saturating_add)
}

/// What a run of `jobs` holds in memory for its workers and their I/Os, in
/// bytes, when each I/O that may be in flight costs `per_io(job)` bytes: an
/// estimate made before anything is allocated, so that a run that would not
/// fit can be refused rather than killed halfway.
pub fn memory_estimate(jobs: &JobFile, per_io: impl Fn(&JobSpec) -> u64) -> u64 {
    let per_clone =
        (std::mem::size_of::<Worker>() + 3 * elevator_core::Histogram::HEAP_BYTES) as u64;
    jobs.jobs
        .iter()
        .map(|j| {
            let ios = u64::from(j.queue_depth()).saturating_mul(per_io(j));
            u64::from(j.numjobs).saturating_mul(per_clone.saturating_add(ios))
        })
        .fold(0, u64::saturating_add)
}

/// Each worker's figures as a job result.
pub fn job_results(workers: Vec<Worker>) -> Vec<JobResult> {
    workers
        .into_iter()
        .map(|w| JobResult {
            latency_depth: w.latency_depth(),
            name: w.name,
            job_index: w.job_index,
            clone: w.clone,
            group: w.group,
            ctx: w.ctx.0,
            start: w.start.min(w.end),
            end: w.end,
            dirs: w.stats.dirs,
            extra: w.stats.extra,
            failure: w.failure,
            total_err: w.total_err,
            first_error: w.first_error,
            first_ignored: w.first_ignored,
            steady: w.steady,
        })
        .collect()
}

/// The first failed worker: its job, clone and failure (the run's
/// `JobFailed` error, in either engine).
pub fn first_failure(workers: &[Worker]) -> Option<(String, u32, JobFailure)> {
    workers
        .iter()
        .find_map(|w| Some((w.name.clone(), w.clone, w.failure.clone()?)))
}

/// When the last worker ended.
pub fn elapsed(workers: &[Worker]) -> Nanos {
    workers.iter().map(|w| w.end).max().unwrap_or(0)
}

/// How far along the workers are, 0..=1.
pub fn progress(workers: &[Worker], now: Nanos) -> f64 {
    let n = workers.len().max(1) as f64;
    let sum: f64 = workers.iter().map(|w| w.progress(now)).sum();
    (sum / n).clamp(0.0, 1.0)
}

/// Mix several numbers into one seed.
pub fn mix(parts: &[u64]) -> u64 {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    for &p in parts {
        h ^= p;
        h = h.wrapping_mul(0x0100_0000_01B3).rotate_left(29);
    }
    h
}
