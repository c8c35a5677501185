//! Trace replay on a simulated device: a discrete-event loop over the
//! virtual clock whose events are the plan's arrivals (at their recorded
//! times, sped up, as fast as the queue takes them, or a closed loop),
//! device completions and scheduler timers. The queue is built as `run`
//! builds it (scheduler, `--set` tunables, the device's limits); the queue
//! side (flush machinery, waiting for tags, analysis, trace out) is
//! [`session`]'s, on elevator-trace's replay core (the plan, when a step is
//! due, the bios in flight, the result).

use elevator_core::{BuildError, Dispatch, Nanos, Plugins, Queue, Scheduler};
use elevator_trace::error::TraceError;
use elevator_trace::replay::{FlushModel, Planner, ReplayError, ReplayResult, Step, Timing};
use elevator_trace::{Item, TraceSink};
use thiserror::Error;

use crate::device::{ModelSpec, ParamError, SimDevice};

pub mod session;

use session::Session;

/// Why a simulated replay could not run.
#[derive(Debug, Error)]
pub enum SimReplayError {
    /// A plugin scheduler failed (a Python exception): `message` says how.
    #[error("scheduler {name} failed: {message}")]
    Scheduler {
        /// The scheduler's name.
        name: String,
        /// Its failure (a Python traceback).
        message: String,
    },
    /// The device cannot be built.
    #[error("bad device parameters: {0}")]
    Device(#[from] ParamError),
    /// The queue cannot be built (scheduler, `--set`).
    #[error(transparent)]
    Queue(#[from] BuildError),
    /// The replay failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// How to replay.
#[derive(Clone, Debug)]
pub struct ReplayConfig {
    /// Scheduler name.
    pub scheduler: String,
    /// Schedulers from outside elevator that `scheduler` may name.
    pub plugins: Plugins,
    /// Queue and scheduler tunables, in order.
    pub tunables: Vec<(String, String)>,
    /// Timing.
    pub timing: Timing,
    /// What the device does with flushes.
    pub flush: FlushModel,
    /// Count bad records instead of stopping.
    pub skip_bad: bool,
    /// The trace's name, for errors.
    pub source_name: String,
}

/// Progress of a replay, for a progress bar.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplayProgress {
    /// Trace records read.
    pub records: u64,
    /// Bios replayed.
    pub bios: u64,
    /// Virtual time, ns.
    pub now: Nanos,
}

/// Replay `plan` on a `device` model. Queue events go to `sink`, if given,
/// as records of the planned device on CPU 0.
pub fn replay<I>(
    plan: Planner<I>,
    device: &ModelSpec,
    cfg: &ReplayConfig,
    sink: Option<&mut dyn TraceSink>,
    progress: &mut dyn FnMut(ReplayProgress),
) -> Result<ReplayResult, SimReplayError>
where
    I: Iterator<Item = Result<Item, TraceError>>,
{
    let mut device = device.build_sim()?;
    replay_on(plan, &mut *device, cfg, sink, progress)
}

/// [`replay`] on a device already built: a model, or a tap in front of one
/// ([`crate::device::WriteLogDevice`]), which the caller keeps and looks at
/// afterwards.
pub fn replay_on<I>(
    mut plan: Planner<I>,
    device: &mut dyn SimDevice,
    cfg: &ReplayConfig,
    sink: Option<&mut dyn TraceSink>,
    progress: &mut dyn FnMut(ReplayProgress),
) -> Result<ReplayResult, SimReplayError>
where
    I: Iterator<Item = Result<Item, TraceError>>,
{
    let queue = Queue::for_device_in(device.shape(), &cfg.scheduler, &cfg.plugins, &cfg.tunables)?;
    let mut next = plan.next().transpose().map_err(ReplayError::from)?;
    let dev = plan.device().unwrap_or(0);
    let mut s = Session::new(queue, dev, &cfg.source_name, cfg.flush, cfg.skip_bad, sink);
    let timing = cfg.timing;
    let mut now: Nanos = 0;
    let mut timer_at: Option<Nanos> = None;
    let mut done = Vec::new();
    let mut turns = 0u64;
    loop {
        // Completions due now, then what waited for their tags.
        if device.next_completion().is_some_and(|t| t <= now) {
            done.clear();
            device.complete(now, &mut |tag, o| done.push((tag, o)));
            for &(tag, o) in &done {
                s.complete(tag, o, now)?;
            }
        }
        s.retry(now)?;
        // Arrivals due now.
        while let Some(step) = &next {
            let due = step.due(&timing);
            let blocked = matches!(step, Step::Bio(_)) && !s.may_start(&timing);
            if blocked || due.is_some_and(|t| t > now) {
                break;
            }
            s.step(step, now)?;
            next = plan.next().transpose().map_err(ReplayError::from)?;
        }
        if timer_at.is_some_and(|t| t <= now) {
            timer_at = None;
        }
        // Dispatch while the device has room.
        while device.outstanding() < device.queue_depth() {
            match s.dispatch(now) {
                (Dispatch::Request(_), Some(io)) => device.submit(io, now),
                (Dispatch::WaitUntil(t), _) => {
                    let t = t.max(now + 1);
                    timer_at = Some(timer_at.map_or(t, |a| a.min(t)));
                    break;
                }
                _ => break,
            }
        }
        turns += 1;
        if turns & 0x3FFF == 0 {
            progress(ReplayProgress {
                records: plan.records(),
                bios: s.bios(),
                now,
            });
        }
        // The next event.
        let arrival = match &next {
            Some(step) if s.may_start(&timing) || !matches!(step, Step::Bio(_)) => {
                Some(step.due(&timing).unwrap_or(now))
            }
            _ => None,
        };
        let candidates = [device.next_completion(), timer_at, arrival];
        let Some(t) = candidates.into_iter().flatten().min() else {
            if s.queue().is_plugged() {
                // A closed loop waits for bios held on the plug: a task
                // that sleeps flushes its plug, so this one does.
                s.step(&Step::Unplug { time: now, pid: 0 }, now)?;
                continue;
            }
            if next.is_none() && s.is_idle() {
                break;
            }
            plugin_failed(s.queue())?;
            return Err(ReplayError::Stalled {
                now,
                why: format!(
                    "{} bios outstanding, {} requests queued, nothing due",
                    s.outstanding(),
                    s.queue().queued()
                ),
            }
            .into());
        };
        now = now.max(t);
    }
    progress(ReplayProgress {
        records: plan.records(),
        bios: s.bios(),
        now,
    });
    plugin_failed(s.queue())?;
    let mut result = s.finish()?;
    result.plugs = plan.plugs();
    result.waited = plan.waited();
    result.recorded = plan.recorded();
    Ok(result)
}

#[cfg(test)]
mod tests;

/// The failure of a plugin scheduler that failed (a Python exception), as
/// the replay's error.
fn plugin_failed(queue: &Queue) -> Result<(), SimReplayError> {
    match queue.scheduler().plugin_failure() {
        Some(message) => Err(SimReplayError::Scheduler {
            name: queue.scheduler().name().to_string(),
            message,
        }),
        None => Ok(()),
    }
}
