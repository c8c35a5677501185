//! fio jobs on threads over a [`MultiQueue`]: one thread per job clone
//! (fio's `numjobs`, over every job section), in job-file order; clone `k`
//! uses device `k mod devices`. Every thread starts at once; each waits
//! until the clones its job waits for (`stonewall`, `wait_for`) have
//! finished, then for its `startdelay` (counted from the run's start), then
//! runs. A job that fails (`rate_min`, `verify`) ends; the others run on and
//! the run then ends with [`JobRunError::JobFailed`]. A thread is kept on its
//! job's CPUs: those of its `numa_cpu_nodes` (from sysfs), else its
//! `cpus_allowed`. A clone whose `exitall` fires ends the clones its
//! `exit_what` names on every thread, through an [`ExitBoard`].
//! A thread that fails (a device error, a refused I/O, a panic) stops the
//! run: every other thread cancels what it has in flight and drains, and the
//! error comes back with every thread's results.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use elevator_core::Nanos;
use elevator_core::lockstat::LockStat;
use elevator_core::{DeviceStats, QueueStats};
use elevator_fio::job::{JobFile, NumaNodes};
use elevator_fio::result::RunResult;
use elevator_fio::workload::{self, Worker};
use elevator_fio::{Progress, RunConfig};

use elevator_core::IoContext;
use elevator_trace::tap::{CpuRule, SharedSink, TraceSummary, TraceTap, trace_dev};

use super::{LockMode, MqEngine, MultiQueue};
use crate::cpu::CpuTime;
use crate::device::DataDevice;
use crate::engine::access::QueueAccess;
use crate::engine::{Engine, EngineConfig};
use crate::jobs::{Buf, ExitBoard, ExitLink, JobRunError, Runner, Stop, make_slots};

/// Which workers have finished, for the workers waiting for them.
#[derive(Default)]
struct Finished {
    done: Mutex<Vec<bool>>,
    changed: Condvar,
}

impl Finished {
    /// Worker `w` has finished (or will never run).
    fn set(&self, w: usize) {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = done.get_mut(w) {
            *d = true;
        }
        self.changed.notify_all();
    }

    /// Wait until every worker of `after` has finished; false if the run
    /// stopped meanwhile.
    fn wait(&self, after: &[u32], stop: &Stop) -> bool {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if stop.flag.load(Ordering::Relaxed) {
                return false;
            }
            if after
                .iter()
                .all(|&a| done.get(a as usize).copied().unwrap_or(true))
            {
                return true;
            }
            done = self
                .changed
                .wait_timeout(done, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

/// Marks a worker finished when its thread ends, however it ends.
struct MarkDone<'a>(&'a Finished, usize);

impl Drop for MarkDone<'_> {
    fn drop(&mut self) {
        self.0.set(self.1);
    }
}

/// How to run jobs on threads.
#[derive(Clone, Debug)]
pub struct ThreadConfig {
    /// Scheduler, tunables, seed.
    pub run: RunConfig,
    /// The locking design.
    pub lock: LockMode,
    /// Measure every shared lock (hold and wait times); off, locks cost
    /// what a plain mutex costs.
    pub lock_stats: bool,
}

/// What a threaded run produced beyond the run's result.
#[derive(Debug)]
pub struct ThreadedRun {
    /// The jobs' results, the queues' figures added up, the devices'
    /// figures added up, the locks (when measured) and the CPU time (the
    /// thread figures are the sum of the worker threads').
    pub result: RunResult,
    /// Threads the run started.
    pub threads: usize,
    /// The shared locks, with their figures when measured (empty where
    /// none was shared).
    pub locks: Vec<LockStat>,
    /// What the trace held, when the run was traced.
    pub trace: Option<TraceSummary>,
}

/// What one thread hands back.
struct ThreadEnd {
    /// The worker, with its figures (`None` if its thread panicked).
    worker: Option<Worker>,
    ios: u64,
    polls: u64,
    cpu: CpuTime,
    /// The thread's own queue's figures (`None` where the queue is shared).
    queue: Option<QueueStats>,
    device: DeviceStats,
    error: Option<JobRunError>,
    /// What this thread's trace tap wrote (or why it could not).
    trace: Option<Result<TraceSummary, std::io::Error>>,
}

impl ThreadEnd {
    /// A thread that failed before its worker ran.
    fn failed(worker: Worker, error: impl Into<Option<JobRunError>>) -> ThreadEnd {
        ThreadEnd {
            worker: Some(worker),
            ios: 0,
            polls: 0,
            cpu: CpuTime::default(),
            queue: None,
            device: DeviceStats::default(),
            error: error.into(),
            trace: None,
        }
    }
}

/// Run `jobs` on threads over `devices`, one thread per job clone; each
/// thread gets its own handle on its device from `share` (the last thread
/// of a device gets the device itself).
pub fn run_threads<D, S, E>(
    jobs: &JobFile,
    devices: Vec<D>,
    share: S,
    cfg: &ThreadConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<ThreadedRun, JobRunError>
where
    D: DataDevice + Send,
    S: Fn(&D) -> Result<D, E>,
    E: std::error::Error + Send + Sync + 'static,
{
    run_threads_traced(jobs, devices, share, cfg, progress, None)
}

/// [`run_threads`], writing the queues' trace events to `trace`: each
/// thread's events (those it caused, whoever submitted the I/O) with its
/// index as the record's `cpu` (one file per thread), device `240,d` for
/// device `d`, times in nanoseconds since the run started, every job
/// clone named by its job's name. The sink is not finished here.
pub fn run_threads_traced<D, S, E>(
    jobs: &JobFile,
    devices: Vec<D>,
    share: S,
    cfg: &ThreadConfig,
    progress: &mut dyn FnMut(Progress),
    trace: Option<SharedSink>,
) -> Result<ThreadedRun, JobRunError>
where
    D: DataDevice + Send,
    S: Fn(&D) -> Result<D, E>,
    E: std::error::Error + Send + Sync + 'static,
{
    let capacity = devices.iter().map(|d| d.limits().capacity << 9).min();
    let Some(capacity) = capacity else {
        return Err(super::MqError::NoDevice.into());
    };
    let mut workers = workload::workers_with_logs(
        jobs,
        capacity,
        cfg.run.seed,
        &elevator_trace::read_iolog::TraceLogs::sizing_buffers(),
    )?;
    // Each worker's burst reaches the kernel in one submission: its depth
    // and submit figures say so, as fio's would for one commit.
    for w in &mut workers {
        w.count_whole_bursts();
    }
    let pins = job_cpus(jobs)?;
    let nthreads = workers.len();
    let names: Vec<(IoContext, String)> = workers.iter().map(|w| (w.ctx, w.name.clone())).collect();
    // A device no clone would use is left out.
    let mut devices = devices;
    devices.truncate(nthreads.max(1));
    let ndev = devices.len();
    let device_of = |w: usize| w % ndev;
    let describe: Vec<String> = devices.iter().map(|d| d.describe()).collect();
    let engine_cfg = EngineConfig {
        scheduler: cfg.run.scheduler.clone(),
        tunables: cfg.run.tunables.clone(),
        max_requests: workload::total_depth(jobs).max(1),
        read_only: false,
    };
    let users: Vec<usize> = (0..ndev)
        .map(|d| (0..nthreads).filter(|&w| device_of(w) == d).count())
        .collect();
    let mq = MultiQueue::new(
        &devices.iter().collect::<Vec<_>>(),
        &users,
        &engine_cfg,
        cfg.lock,
        cfg.lock_stats,
    )?;
    // Handles: the shares first, the device itself last.
    let mut handles: Vec<std::vec::IntoIter<D>> = Vec::with_capacity(ndev);
    for (d, dev) in devices.into_iter().enumerate() {
        let users = (0..nthreads).filter(|&w| device_of(w) == d).count();
        let mut mine = Vec::with_capacity(users);
        for _ in 1..users {
            mine.push(share(&dev).map_err(|e| JobRunError::Share(Box::new(e)))?);
        }
        mine.push(dev);
        handles.push(mine.into_iter());
    }

    let inboxes = mq.waker();
    let stop = Arc::new(Stop {
        flag: AtomicBool::new(false),
        wake: Box::new(inboxes),
    });
    let mut steady = workload::SteadyWatch::new(jobs, &workers)?;
    let exits = Arc::new(ExitBoard::new(&workers, stop.clone(), steady.is_some()));
    let done_ios = Arc::new(AtomicU64::new(0));
    let cpu0 = CpuTime::process_total();
    let mut pending: Vec<Option<Worker>> = workers.into_iter().map(Some).collect();
    let mut ends: Vec<Option<ThreadEnd>> = (0..nthreads).map(|_| None).collect();
    let finished = Finished {
        done: Mutex::new(vec![false; nthreads]),
        changed: Condvar::new(),
    };
    let run_start = mq.clock().now();
    std::thread::scope(|scope| -> Result<(), JobRunError> {
        let mut running = Vec::new();
        // Each thread says when it is done, so that progress is shown
        // meanwhile.
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        for w in 0..nthreads {
            let (Some(worker), Some(device)) = (pending[w].take(), handles[device_of(w)].next())
            else {
                finished.set(w);
                continue;
            };
            let job = Job {
                jobs,
                pins: &pins,
                mq: &mq,
                thread: w,
                device: device_of(w),
                stop: stop.clone(),
                exits: exits.clone(),
                done_ios: done_ios.clone(),
                seed: cfg.run.seed,
                finished: &finished,
                run_start,
                trace: trace.clone().map(|sink| (sink, names.as_slice())),
            };
            let done = done_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("elevator-{w}"))
                .spawn_scoped(scope, move || {
                    let end = job.run(device, worker);
                    let _ = done.send(());
                    end
                });
            match spawned {
                Ok(handle) => running.push((w, handle)),
                Err(e) => {
                    stop.now();
                    for (w, h) in running {
                        ends[w] = h.join().ok();
                    }
                    return Err(JobRunError::Spawn(e.to_string()));
                }
            }
        }
        drop(done_tx);
        let mut done = 0;
        let mut next_tick = run_start + workload::STEADY_TICK;
        while done < running.len() {
            let now = mq.clock().now();
            if let Some(watch) = &mut steady
                && now >= next_tick
            {
                // Steady state: the tick fio's helper thread makes.
                let clones = exits.samples();
                let mut ended = Vec::new();
                watch.tick(&clones, now, &mut ended);
                exits.end(&ended);
                while next_tick <= now {
                    next_tick += workload::STEADY_TICK;
                }
            }
            let wait = match steady {
                Some(_) => Duration::from_nanos(next_tick.saturating_sub(now))
                    .min(Duration::from_millis(200)),
                None => Duration::from_millis(200),
            };
            match done_rx.recv_timeout(wait) {
                Ok(()) => done += 1,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => progress(Progress {
                    now: mq.clock().now(),
                    ios: done_ios.load(Ordering::Relaxed),
                    fraction: 0.0,
                }),
                // Every thread has gone (its sender with it).
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        for (w, h) in running {
            // A thread's panic is caught inside it; a join error would be a
            // panic in the catching itself.
            ends[w] = h.join().ok();
        }
        Ok(())
    })?;
    let process = CpuTime::process_total().saturating_sub(cpu0);
    for (w, result) in steady
        .map(workload::SteadyWatch::finish)
        .unwrap_or_default()
    {
        let worker = match ends.get_mut(w as usize) {
            Some(Some(end)) => end.worker.as_mut(),
            _ => pending.get_mut(w as usize).and_then(Option::as_mut),
        };
        if let Some(worker) = worker {
            worker.steady = Some(Box::new(result));
        }
    }
    finish(ends, pending, &mq, &describe, cfg, process)
}

/// The CPUs this process may run on.
fn usable_cpus() -> Vec<u32> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU as u32)
            .filter(|&c| set.is_set(c as usize))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The CPUs each job's threads are kept on, by job: its
/// `numa_cpu_nodes`' CPUs (as fio, they replace `cpus_allowed`), else its
/// `cpus_allowed`, else none; each must exist for this process.
fn job_cpus(jobs: &JobFile) -> Result<Vec<Option<Vec<u32>>>, JobRunError> {
    let usable = usable_cpus();
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let mut out = Vec::with_capacity(jobs.jobs.len());
    for job in &jobs.jobs {
        let cpus = match &job.numa_cpu_nodes {
            Some(nodes) => Some(node_set_cpus(job, nodes, &usable)?),
            None => job.cpus_allowed.clone(),
        };
        if let Some(cpus) = &cpus
            && let Some(&cpu) = cpus.iter().find(|c| !usable.contains(c))
        {
            return Err(JobRunError::NoSuchCpu {
                job: job.name.clone(),
                cpu,
                available: list(&usable),
            });
        }
        out.push(cpus);
    }
    Ok(out)
}

/// The CPUs of `nodes` that this process may use (`all`: of every online
/// node).
fn node_set_cpus(
    job: &elevator_fio::job::JobSpec,
    nodes: &NumaNodes,
    usable: &[u32],
) -> Result<Vec<u32>, JobRunError> {
    let online = crate::cpu::online_nodes();
    let named = match nodes {
        NumaNodes::All => online.clone(),
        NumaNodes::List(l) => l.clone(),
    };
    let mut cpus = Vec::new();
    for node in named {
        let Some(c) = crate::cpu::node_cpus(node).filter(|_| online.contains(&node)) else {
            return Err(JobRunError::NoSuchNode {
                job: job.name.clone(),
                node,
                available: online
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            });
        };
        cpus.extend(c.into_iter().filter(|c| usable.contains(c)));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Keep the calling thread on `cpus`.
fn pin(job: &str, cpus: &[u32]) -> Result<(), JobRunError> {
    let mut set = rustix::thread::CpuSet::new();
    for &c in cpus {
        set.set(c as usize);
    }
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| JobRunError::Affinity {
        job: job.to_string(),
        error: e.into(),
    })
}

/// Add up what the threads handed back into one result; the first
/// failure, if any, comes back with it.
fn finish(
    ends: Vec<Option<ThreadEnd>>,
    pending: Vec<Option<Worker>>,
    mq: &MultiQueue,
    describe: &[String],
    cfg: &ThreadConfig,
    process: Duration,
) -> Result<ThreadedRun, JobRunError> {
    let mut workers = Vec::with_capacity(ends.len());
    let mut queue = mq.queue_stats();
    let mut device_stats = DeviceStats::default();
    let (mut ios, mut polls) = (0, 0);
    let (mut user, mut system) = (Duration::ZERO, Duration::ZERO);
    let mut failure = None;
    let mut trace: Option<TraceSummary> = None;
    let mut trace_error = None;
    for (end, never) in ends.into_iter().zip(pending) {
        let Some(end) = end else {
            // A phase that never started (the run stopped).
            workers.extend(never);
            continue;
        };
        workers.extend(end.worker);
        ios += end.ios;
        polls += end.polls;
        user += end.cpu.user;
        system += end.cpu.system;
        if let Some(q) = &end.queue {
            queue.merge(q);
        }
        device_stats.merge(&end.device);
        if failure.is_none() {
            failure = end.error;
        }
        match end.trace {
            Some(Ok(t)) => trace.get_or_insert_with(TraceSummary::default).merge(&t),
            Some(Err(e)) => trace_error = trace_error.or(Some(e)),
            None => {}
        }
    }
    if let Some(t) = trace.as_mut() {
        t.dropped += mq.trace_dropped();
    }
    if failure.is_none() {
        failure = trace_error.map(JobRunError::Trace);
    }
    let locks = mq.locks();
    let mut device = describe.first().cloned().unwrap_or_default();
    if describe.len() > 1 {
        device = format!("{} devices: {}", describe.len(), describe.join("; "));
    }
    let failed = workload::first_failure(&workers);
    let result = RunResult {
        scheduler: cfg.run.scheduler.clone(),
        device,
        elapsed: workload::elapsed(&workers),
        queue,
        device_stats,
        events: polls,
        ios,
        cpu: Some(CpuTime { user, system }.run_use(process)),
        ended_at_ms: Some(crate::clock::unix_ms()),
        jobs: workload::job_results(workers),
        locks: if cfg.lock_stats {
            locks.clone()
        } else {
            Vec::new()
        },
    };
    match (failure, failed) {
        (Some(error), _) => Err(JobRunError::Stopped {
            error: Box::new(error),
            partial: Box::new(result),
        }),
        (None, Some(failed)) => Err(JobRunError::job_failed(failed, result)),
        (None, None) => Ok(ThreadedRun {
            result,
            threads: mq.threads(),
            locks,
            trace,
        }),
    }
}

/// One thread's work: its worker on its device handle.
struct Job<'a> {
    jobs: &'a JobFile,
    /// The CPUs each job's threads are kept on ([`job_cpus`]).
    pins: &'a [Option<Vec<u32>>],
    mq: &'a MultiQueue,
    thread: usize,
    device: usize,
    stop: Arc<Stop>,
    exits: Arc<ExitBoard>,
    done_ios: Arc<AtomicU64>,
    seed: u64,
    finished: &'a Finished,
    run_start: Nanos,
    /// Where to trace, and every clone's name.
    trace: Option<(SharedSink, &'a [(IoContext, String)])>,
}

impl Job<'_> {
    fn run<D: DataDevice>(self, device: D, mut worker: Worker) -> ThreadEnd {
        let cpu0 = CpuTime::thread();
        let (job, clone) = (worker.name.clone(), worker.clone);
        let _mark = MarkDone(self.finished, self.thread);
        if !self.finished.wait(worker.waits_for(), &self.stop) {
            // The run stopped before this job could start.
            return ThreadEnd::failed(worker, None);
        }
        worker.clear_waits();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            if let Some(Some(cpus)) = self.pins.get(worker.job_index)
                && let Err(e) = pin(&worker.name, cpus)
            {
                return ThreadEnd::failed(worker, e);
            }
            match self.mq.engine::<D, Buf>(self.thread, self.device, device) {
                Ok(MqEngine::Shared(e)) => self.drive(e, worker),
                Ok(MqEngine::Own(e)) => self.drive(e, worker),
                Err(e) => ThreadEnd::failed(worker, JobRunError::from(e)),
            }
        }));
        let mut end = result.unwrap_or_else(|payload| {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            ThreadEnd {
                worker: None,
                ios: 0,
                polls: 0,
                cpu: CpuTime::default(),
                queue: None,
                device: DeviceStats::default(),
                error: Some(JobRunError::Panicked {
                    job,
                    clone,
                    message,
                }),
                trace: None,
            }
        });
        if end.error.is_some() {
            self.stop.now();
        }
        end.cpu = CpuTime::thread().since(&cpu0);
        end
    }

    fn drive<D: DataDevice, Q: QueueAccess>(
        &self,
        mut engine: Engine<D, Buf, Q>,
        worker: Worker,
    ) -> ThreadEnd {
        if let Some((sink, names)) = &self.trace {
            let mut tap = TraceTap::new(
                trace_dev(self.device as u32),
                CpuRule::Fixed(self.thread as u32),
                self.run_start,
            );
            for (ctx, name) in names.iter() {
                tap.name(*ctx, name);
            }
            engine.trace_to(tap, sink.clone());
        }
        let align = engine.alignment().memory;
        let (slots, free) =
            match make_slots(self.jobs, std::slice::from_ref(&worker), align, self.seed) {
                Ok(s) => s,
                Err(e) => return ThreadEnd::failed(worker, JobRunError::from(e)),
            };
        let depth = self.jobs.jobs[worker.job_index].queue_depth() as usize;
        let mut runner = Runner {
            engine,
            workers: vec![worker],
            slots,
            free,
            run_start: Some(self.run_start),
            started: Vec::with_capacity(1),
            start_next: None,
            ios: 0,
            polls: 0,
            out: Vec::with_capacity(depth),
            stop: Some(self.stop.clone()),
            exits: Some(ExitLink::new(self.exits.clone(), self.thread)),
        };
        let done_ios = &self.done_ios;
        let mut last = 0;
        let result = runner.run(&mut |p| {
            done_ios.fetch_add(p.ios - last, Ordering::Relaxed);
            last = p.ios;
        });
        let queue = (!runner.engine.shares_queue())
            .then(|| runner.engine.with_queue(|q| q.stats().clone()));
        let device = runner.engine.device().stats();
        let trace = runner.engine.finish_trace();
        let Runner {
            engine,
            mut workers,
            ios,
            polls,
            ..
        } = runner;
        drop(engine);
        ThreadEnd {
            worker: workers.pop(),
            ios,
            polls,
            cpu: CpuTime::default(),
            queue,
            device,
            error: result.err(),
            trace,
        }
    }
}
