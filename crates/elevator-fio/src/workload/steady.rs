//! Steady-state detection (fio's `ss`, `ss_dur`, `ss_ramp`): owns the
//! per-second samples of a job's (or, with `group_reporting`, its group's)
//! IOPS and bandwidth, the test of the last `ss_dur` of them against the
//! criterion, and the end of the jobs once it is met ([`SteadyWatch`]).
//!
//! As fio's helper thread, the engine calls [`SteadyWatch::tick`] once a
//! second, counted from the run's start. Each tick, every running clone's
//! bytes and I/Os since the last tick, over the time since, make its
//! sample (bytes/s and IOPS, whole numbers); a clone's first sample is
//! 0, as fio's is when it has no earlier tick to measure from. A clone
//! contributes once `ss_ramp`, plus one second, has passed since it
//! started. Once the window holds `ss_dur` samples, every tick tests it:
//! `iops`/`bw`, the largest distance of a sample from the window's mean
//! (in percent of the mean with `%`); `iops_slope`/`bw_slope`, the
//! least-squares slope of the samples over their seconds (in percent of the
//! mean with `%`), by its absolute value. Below the limit, steady state is
//! attained: the job's clones (its group's, with `group_reporting`) end as
//! fio's terminate ends them.

use std::collections::VecDeque;

use elevator_core::Nanos;

use super::worker::{State, Worker};
use crate::job::{JobError, JobFile, JobSpec, SteadySpec};

/// How often the engine ticks.
pub const TICK: Nanos = 1_000_000_000;

/// A job's (or group's) steady state as fio reports it (its JSON
/// `steadystate`, its text `steadystate :` line).
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyResult {
    /// The criterion, limit and window.
    pub spec: SteadySpec,
    /// Whether it was met.
    pub attained: bool,
    /// The last tested value (percent of the mean with `%`), 0 before the
    /// first test.
    pub criterion: f64,
    /// The last largest deviation from the mean (deviation criteria).
    pub max_deviation: f64,
    /// The last slope (slope criteria).
    pub slope: f64,
    /// The window's bandwidth samples, bytes/s, oldest first (`ss_dur` of
    /// them; zeros where the window was not full).
    pub bw: Vec<u64>,
    /// The window's IOPS samples, oldest first.
    pub iops: Vec<u64>,
}

impl SteadyResult {
    /// The mean of the bandwidth samples (fio's `bw_mean`, bytes/s).
    pub fn bw_mean(&self) -> u64 {
        mean(&self.bw)
    }

    /// The mean of the IOPS samples (fio's `iops_mean`).
    pub fn iops_mean(&self) -> u64 {
        mean(&self.iops)
    }
}

fn mean(v: &[u64]) -> u64 {
    match v.len() {
        0 => 0,
        n => v.iter().sum::<u64>() / n as u64,
    }
}

/// What a watch needs of one clone at a tick: an engine takes it from the
/// [`Worker`] ([`CloneSample::of`]), or, on threads, from what each
/// clone's thread published.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CloneSample {
    /// Whether it is running (started, not done).
    pub running: bool,
    /// Whether it is done.
    pub done: bool,
    /// When it started.
    pub began: Nanos,
    /// Bytes it has moved, all directions.
    pub bytes: u64,
    /// I/Os it has completed, all directions.
    pub ios: u64,
}

impl CloneSample {
    /// Worker `w` now.
    pub fn of(w: &Worker) -> CloneSample {
        CloneSample {
            running: w.state == State::Running,
            done: w.state == State::Done,
            began: w.began(),
            bytes: w.stats.dirs.iter().map(|d| d.bytes).sum(),
            ios: w.stats.dirs.iter().map(|d| d.ios).sum(),
        }
    }
}

/// A clone at its last tick: time, bytes, I/Os.
type LastTick = (Nanos, u64, u64);

/// One job's (or group's) watch.
#[derive(Debug)]
struct Tracker {
    spec: SteadySpec,
    /// Worker indices it covers, and each one's last tick (`None` before
    /// its first).
    members: Vec<(u32, Option<LastTick>)>,
    /// `(bw, iops)`, oldest first, at most `spec.dur`.
    window: VecDeque<(u64, u64)>,
    attained: bool,
    criterion: f64,
    deviation: f64,
    slope: f64,
}

/// The steady-state watches of a run: one per job clone with `ss_dur`, or
/// per reporting group with `group_reporting`.
#[derive(Debug, Default)]
pub struct SteadyWatch {
    trackers: Vec<Tracker>,
}

impl SteadyWatch {
    /// The watches `jobs` asks for (`workers` are its clones, in order):
    /// `None` when no job has `ss_dur`. Refuses, as fio does, a reporting
    /// group whose jobs disagree on steady-state options.
    pub fn new(jobs: &JobFile, workers: &[Worker]) -> Result<Option<SteadyWatch>, JobError> {
        if jobs.jobs.iter().all(|j| j.steady().is_none()) {
            return Ok(None);
        }
        // With group_reporting, a group's jobs agree (fio rejects them
        // otherwise) and share one watch.
        let mut groups: Vec<(u32, Option<SteadySpec>, Option<usize>)> = Vec::new();
        let mut trackers: Vec<Tracker> = Vec::new();
        for (i, w) in workers.iter().enumerate() {
            let Some(job) = jobs.jobs.get(w.job_index) else {
                continue;
            };
            let spec = job.steady();
            let member = (i as u32, None);
            let seen = groups.iter().position(|g| g.0 == w.group);
            if job.group_reporting
                && let Some(g) = seen
            {
                if groups[g].1 != spec {
                    return Err(inconsistent(jobs, job));
                }
                if let Some(t) = groups[g].2 {
                    trackers[t].members.push(member);
                }
                continue;
            }
            let Some(spec) = spec else {
                if job.group_reporting {
                    groups.push((w.group, None, None));
                }
                continue;
            };
            if job.group_reporting {
                groups.push((w.group, Some(spec), Some(trackers.len())));
            }
            trackers.push(Tracker {
                spec,
                members: vec![member],
                window: VecDeque::with_capacity(spec.dur as usize),
                attained: false,
                criterion: 0.0,
                deviation: 0.0,
                slope: 0.0,
            });
        }
        Ok(Some(SteadyWatch { trackers }))
    }

    /// Whether any watch still waits for steady state (a member not done).
    pub fn active(&self, clones: &[CloneSample]) -> bool {
        self.trackers.iter().any(|t| {
            !t.attained
                && t.members
                    .iter()
                    .any(|&(w, _)| clones.get(w as usize).is_some_and(|c| !c.done))
        })
    }

    /// The tick at `now`, `clones` being every clone of the run (in worker
    /// order): sample, test, and add to `ended` every clone of each watch
    /// that attains steady state (the engine ends them:
    /// [`Worker::terminate`]).
    pub fn tick(&mut self, clones: &[CloneSample], now: Nanos, ended: &mut Vec<u32>) {
        for t in &mut self.trackers {
            if t.attained {
                continue;
            }
            if t.sample(clones, now) && t.test() {
                t.attained = true;
                ended.extend(t.members.iter().map(|&(w, _)| w));
            }
        }
    }

    /// Each watch's result, with the clone to report it on: its first (a
    /// group's is reported once, with the group).
    pub fn finish(self) -> Vec<(u32, SteadyResult)> {
        let mut out = Vec::with_capacity(self.trackers.len());
        for t in self.trackers {
            let Some(&(first, _)) = t.members.first() else {
                continue;
            };
            let pad = (t.spec.dur as usize).saturating_sub(t.window.len());
            let zeros = std::iter::repeat_n(0, pad);
            out.push((
                first,
                SteadyResult {
                    spec: t.spec,
                    attained: t.attained,
                    criterion: t.criterion,
                    max_deviation: t.deviation,
                    slope: t.slope,
                    bw: t.window.iter().map(|s| s.0).chain(zeros.clone()).collect(),
                    iops: t.window.iter().map(|s| s.1).chain(zeros).collect(),
                },
            ));
        }
        out
    }
}

fn inconsistent(jobs: &JobFile, job: &JobSpec) -> JobError {
    JobError {
        file: jobs.path.clone(),
        line: job.line_of(&["steadystate", "ss", "ss_dur", "steadystate_duration"]),
        option: Some("steadystate".into()),
        message: format!(
            "job '{}': steadystate options must be the same for every job of a reporting group \
             with group_reporting (fio rejects the job too)",
            job.name
        ),
    }
}

impl Tracker {
    /// Take this tick's sample; whether the window is to be tested.
    fn sample(&mut self, clones: &[CloneSample], now: Nanos) -> bool {
        let (mut bw, mut iops, mut ramped) = (0u64, 0u64, false);
        for (w, last) in &mut self.members {
            let Some(c) = clones.get(*w as usize).filter(|c| c.running) else {
                continue;
            };
            let over = self.spec.ramp == 0
                || now.saturating_sub(c.began) >= self.spec.ramp.saturating_add(TICK);
            if over {
                ramped = true;
                if let Some((t, b, n)) = *last {
                    let ms = (now.saturating_sub(t) / 1_000_000).max(1);
                    bw += 1000 * c.bytes.saturating_sub(b) / ms;
                    iops += 1000 * c.ios.saturating_sub(n) / ms;
                }
            }
            *last = Some((now, c.bytes, c.ios));
        }
        if !ramped {
            return false;
        }
        if self.window.len() == self.spec.dur as usize {
            self.window.pop_front();
        }
        self.window.push_back((bw, iops));
        self.window.len() == self.spec.dur as usize
    }

    /// Test the full window against the criterion.
    fn test(&mut self) -> bool {
        let ys: Vec<f64> = self
            .window
            .iter()
            .map(|&(bw, iops)| if self.spec.iops { iops } else { bw } as f64)
            .collect();
        let n = ys.len() as f64;
        let mean = ys.iter().sum::<f64>() / n;
        let of_mean = |v: f64| {
            if self.spec.percent {
                100.0 * v / mean
            } else {
                v
            }
        };
        if self.spec.slope {
            let sum_x = n * (n - 1.0) / 2.0;
            let sum_x2 = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
            let sum_xy: f64 = ys.iter().enumerate().map(|(i, y)| i as f64 * y).sum();
            let sum_y = mean * n;
            self.slope = (sum_xy - sum_x * sum_y / n) / (sum_x2 - sum_x * sum_x / n);
            self.criterion = of_mean(self.slope);
            self.criterion.abs() < self.spec.limit
        } else {
            self.deviation = ys.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max);
            self.criterion = of_mean(self.deviation);
            self.criterion < self.spec.limit
        }
    }
}
