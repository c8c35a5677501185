//! One clone of one job: a process issuing I/O as fio would. Pure: every
//! method is given the time; the engines (simulated and real) call the same
//! methods in the same way, so a job behaves alike on both.
//!
//! - Keeps up to `iodepth` I/Os in flight (1 with a synchronous engine such
//!   as psync, fio's default: [`JobSpec::queue_depth`]); with `iodepth_low`, once the
//!   depth is reached it refills only when in-flight I/Os fall to it
//!   (`iodepth_low=0` is `iodepth`, as in fio).
//! - Takes each I/O's direction, file, offset and length from its
//!   [`Pattern`]; `rate`/`rate_iops` hold an I/O until its time
//!   ([`super::rate`]); `rate_min` is checked at completions.
//! - Gives each I/O its priority ([`super::prio`]: `prio`, `prioclass`,
//!   `cmdprio_*`), which its bio carries and its latency is counted under.
//! - `flow`: before each I/O of its own, asks its flow ([`super::flow`]);
//!   held back, it waits (for its I/O in flight and `flow_sleep`, or to try
//!   again).
//! - Think time ([`super::think`]): when due, it stops issuing, waits for its
//!   I/O in flight, then pauses (`sleeping_until`; the first
//!   `thinktime_spin` of it is `spin_until`, which a real engine spends
//!   spinning and a simulation spends like the rest).
//! - `iodepth_batch_submit`: its I/Os are counted into submissions of that
//!   many ([`JobStats::submitted`] once per submission, and once for a
//!   partial one when the engine [`Worker::commit`]s). The engines plug a
//!   worker's whole burst as before: batches change the figures only.
//! - Depths (`IO depths`) are counted as fio counts them: when I/Os are
//!   committed, each at the job's I/Os in flight then, itself included
//!   (fio's `cur_depth` at `td_io_commit`). The simulated engine commits
//!   each batch as above (one I/O at a time by default, as fio does). The
//!   real engine hands a worker's whole burst to the kernel in one
//!   `io_uring_enter`, so it asks for [`Worker::count_whole_bursts`]: the
//!   burst is one submission, its I/Os counted at the depth after it.
//! - `iodepth_batch_complete_min/max`: completions are taken
//!   ([`Worker::reap`]) only once at least `min` (or all in flight) are
//!   there, in groups of at most `max`; an I/O's slot in the depth frees
//!   when it is reaped.
//! - `fsync=N` / `fdatasync=N`: a cache flush ([`Op::Flush`]) after every N
//!   writes issued, queued like any I/O behind them without waiting for the
//!   writes in flight, as fio's io_uring and libaio engines queue it
//!   (`IORING_OP_FSYNC`): ordering is the device's. `end_fsync` and
//!   `fsync_on_close`: one flush per file each once the job's I/O (and
//!   verification) is over and nothing is in flight, before it ends.
//! - `ramp_time`: figures start ([`JobStats::start`]) at its end, as do the
//!   rate's schedule and `rate_min`'s cycles; `runtime` counts after it.
//!   (A job bounded by size counts its ramp's I/O towards its size.)
//! - `verify` ([`super::verify_log`]): writes carry a generation to fill
//!   their buffers with; completed writes are logged; after the job's I/O
//!   (or every `verify_backlog` writes, once those have completed) the
//!   logged blocks are read back with the generation to check. Checking is
//!   the engine's (it has the data): a real engine calls
//!   [`Worker::verify_failed`]; the simulation has no data and only issues
//!   and times the reads. `verify_only` replays the job's choices without
//!   issuing them to build the log, then only reads back.
//! - `read_iolog` ([`super::replay`]): the I/Os come from the log instead
//!   of the pattern, each held until the log's time for it (as a rate holds
//!   one), at most `iodepth` in flight; its syncs are the log's (`fsync`,
//!   `end_fsync`, rates and think time do not apply).
//! - I/O errors ([`Worker::completed`] with a failed status): as fio, the
//!   first error the job's [`ErrorPolicy`] (`continue_on_error`,
//!   `ignore_error`) does not let it go on after ends it: it issues nothing
//!   more, its I/Os in flight complete, and [`Worker::failure`] says which
//!   I/O failed and how. Errors it goes on after are counted
//!   ([`Worker::total_err`], [`Worker::first_error`]). A block that does
//!   not verify is an `EILSEQ` of the verify kind.
//! - `exitall` / `exitall_on_error` ([`super::end_others`]): another
//!   clone's end can end it ([`Worker::terminate`]): it issues nothing
//!   more and ends once its I/O in flight completes.
//! - `latency_target` ([`super::latency_target`]): the depth it keeps is
//!   the search's; a change waits for its I/O in flight; the search's end
//!   ends its I/O as an exhausted pattern does.
//! - Stops issuing when its pattern (or log) is exhausted or `runtime` is up; it is
//!   done when its last I/O (and sync) completes.

use elevator_core::{Bio, BioFlags, IoContext, IoPrio, Nanos, Op, Status};

use super::exit::ExitRule;
use super::failure::{IoError, JobFailure};
use super::flow::{FLOW_RETRY, FlowMember};
use super::latency_target::{LatencyStep, LatencyTarget};
use super::layout::Extent;
use super::pattern::{NextIo, Pattern};
use super::prio::{self, Prios};
use super::rate::{Rate, RateMin, directions};
use super::replay::{IoLog, Replay};
use super::start::StartRule;
use super::think::Think;
use super::verify_log::{self, GENERATION, VerifyLog};
use crate::job::{ErrorKind, ErrorPolicy, JobError, JobSpec};
use crate::result::{IoDone, JobStats};
use crate::verify::{VerifyError, VerifySpec};

/// Where a worker is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Its start conditions are not met yet.
    Waiting,
    /// Issuing and completing I/O.
    Running,
    /// Finished.
    Done,
}

/// What an I/O does for `verify`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyIo {
    /// Nothing.
    None,
    /// A write whose buffer is to be filled for this generation.
    Fill(u64),
    /// A read-back whose data is to be checked against this generation.
    Check(u64),
}

/// An I/O the worker generated, not yet issued or in flight.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    /// Operation.
    pub op: Op,
    /// First sector on the device (0 for a flush).
    pub sector: u64,
    /// Length in bytes (0 for a flush).
    pub len: u32,
    /// When the worker wanted it issued.
    pub issued: Nanos,
    /// What it does for `verify`.
    pub verify: VerifyIo,
    /// Its priority: fio's raw `ioprio` value ([`super::prio`]).
    pub prio: u16,
}

impl Pending {
    /// Its byte offset on the device.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.sector << 9
    }
}

/// Where a running worker is in its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// The job's I/O (with backlog read-backs).
    Io,
    /// Reading back what it wrote.
    Verify,
    /// `end_fsync` / `fsync_on_close`.
    Sync,
    /// Failed fatally: no more I/O.
    Stopped,
}

/// Index of `op`'s direction (read, write, trim), if it has one.
#[inline]
pub(crate) fn dir(op: Op) -> Option<usize> {
    match op {
        Op::Read => Some(0),
        Op::Write | Op::WriteZeroes => Some(1),
        Op::Discard => Some(2),
        Op::Flush => None,
    }
}

/// One job clone.
#[derive(Debug)]
pub struct Worker {
    /// The job's name.
    pub name: String,
    /// Which job of the file (0-based).
    pub job_index: usize,
    /// Which clone of the job (`numjobs`).
    pub clone: u32,
    /// Its reporting group.
    pub group: u32,
    /// Its I/O context (one per clone, as one process per clone in fio).
    pub ctx: IoContext,
    /// What it issues.
    pub pattern: Pattern,
    /// How its buffers are filled and checked, when it verifies.
    pub verify: Option<VerifySpec>,
    /// Its priorities, when the job sets any.
    prios: Option<Box<Prios>>,
    /// Its part in its flow (`flow`), if it has a weight.
    pub(crate) flow: Option<Box<FlowMember>>,
    /// Held back by its flow with a `flow_sleep`: once its I/O in flight
    /// is done, it sleeps.
    flow_pause: bool,
    /// What its writes carry, when the job sets fio's buffer options
    /// (and does not verify: verify fills its own buffers).
    pub contents: Option<super::Contents>,
    pub(crate) rule: StartRule,
    iodepth: u32,
    low: u32,
    filling: bool,
    runtime: Option<Nanos>,
    ramp: Nanos,
    ramp_end: Option<Nanos>,
    write_flags: BioFlags,
    /// Where it is in its life.
    pub state: State,
    /// When its figures started (its start, or the end of its ramp).
    pub start: Nanos,
    /// When it finished.
    pub end: Nanos,
    began: Nanos,
    /// I/Os issued and not reaped.
    pub in_flight: u32,
    unreaped: u32,
    reap_min: u32,
    reap_max: u32,
    batch_submit: u32,
    batch: u32,
    think: Option<Think>,
    quiescing: bool,
    /// The end of its think time, while it thinks.
    pub sleeping_until: Option<Nanos>,
    /// The end of the part of its think time spent busy (`thinktime_spin`):
    /// a real engine spins until then.
    pub spin_until: Option<Nanos>,
    /// An I/O it generated that the engine could not issue yet (no tag).
    pub pending: Option<Pending>,
    /// Whether it waits for a tag.
    pub blocked: bool,
    /// Any option beyond depth, pattern and think time in force (rate,
    /// ramp, syncs, verify, a failure): the slower paths are taken only
    /// then.
    slow: bool,
    stage: Stage,
    rate: Option<Rate>,
    held: Option<Pending>,
    rate_wait: Option<Nanos>,
    rate_ignore_think: bool,
    rate_min: Option<RateMin>,
    replay: Option<Box<Replay>>,
    sync_every: [u64; 2],
    writes: u64,
    syncs_owed: u32,
    end_syncs: u32,
    log: Option<Box<VerifyLog>>,
    do_verify: bool,
    verify_backlog: u64,
    verify_fatal: bool,
    backlog_due: bool,
    verify_only: bool,
    /// Blocks read back that failed verification.
    pub verify_errors: u64,
    /// Why it failed, if it did (the first failure).
    pub failure: Option<JobFailure>,
    /// Which errors it goes on after.
    errors: ErrorPolicy,
    /// Errors it went on after (fio's `total_err_count`).
    pub total_err: u64,
    /// The first error it went on after (fio's `first_error`), 0 for none.
    pub first_error: i32,
    /// The first I/O error it went on after, kept when `error_dump` asks
    /// for errors that went on to be reported.
    pub first_ignored: Option<IoError>,
    /// Its figures.
    pub stats: JobStats,
    /// When its end ends other clones (`exitall`, `exit_what`).
    pub exit_rule: ExitRule,
    /// Ended by another clone's end ([`super::end_others`]).
    terminated: bool,
    /// Its steady-state watch's result (`ss_dur`), on the first clone
    /// watched ([`super::SteadyWatch::finish`]).
    pub steady: Option<Box<super::SteadyResult>>,
    /// `latency_target`'s search for a depth, when it has one.
    lat_target: Option<Box<LatencyTarget>>,
    /// The search is over: its I/O ends as if its pattern had.
    lat_done: bool,
    /// Its figures restart once its I/O in flight has completed (the
    /// search's final cycle).
    lat_reset: bool,
    /// `iodepth_low` as the job gives it (the depth the search keeps caps
    /// it).
    job_low: u32,
    /// The most it may ever keep in flight ([`JobSpec::queue_depth`]): the
    /// latency target's search never goes past it.
    depth_cap: u32,
}

impl Worker {
    /// A worker for clone `clone` of `job` (job `job_index` of the file
    /// `path`), with its files laid out and its start rule; its random
    /// choices come from `seed`. Refuses a `verify` it cannot do. With
    /// `log`, it replays that log (its job's `read_iolog`) instead of
    /// following its pattern.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        job: &JobSpec,
        path: &str,
        job_index: usize,
        clone: u32,
        group: u32,
        ctx: u32,
        files: Vec<Extent>,
        seed: u64,
        rule: StartRule,
        log: Option<(Box<dyn IoLog>, Option<u64>)>,
    ) -> Result<Worker, JobError> {
        let verify_seed = super::mix(&[
            job.randseed.unwrap_or(0x5EED_F10F),
            u64::from(clone),
            0x007E_21F7,
        ]);
        let verify = verify_log::spec(job, verify_seed).map_err(|message| JobError {
            file: path.to_string(),
            line: job.line_of(&["verify", "verify_pattern", "verify_interval"]),
            option: Some("verify".into()),
            message,
        })?;
        let file_bytes: u64 = files.iter().map(|f| f.bytes - f.start).sum();
        let nfiles = files.len() as u32;
        let device_bytes = files.iter().map(|f| f.end).max().unwrap_or(0);
        let replay =
            log.map(|(log, largest)| Box::new(Replay::new(job, log, device_bytes, largest)));
        // A replaying clone's pattern is never drawn from: a sequential one
        // (no random map over the device).
        let sequential;
        let pattern_job = if replay.is_some() {
            let mut j = job.clone();
            j.rw = crate::job::RwMode::Read;
            sequential = j;
            &sequential
        } else {
            job
        };
        let mut pattern = Pattern::new(pattern_job, files, clone, seed).map_err(|e| JobError {
            file: path.to_string(),
            ..e
        })?;
        let verify_only = verify.is_some() && job.verify_only;
        let mut log = verify
            .as_ref()
            .map(|_| Box::new(VerifyLog::new(pattern.max_bs())));
        if verify_only && let Some(log) = log.as_deref_mut() {
            replay_writes(&mut pattern, log, file_bytes);
        }
        let writes = directions(job.rw)[1] && !verify_only && replay.is_none();
        let end_syncs = if writes {
            (u32::from(job.end_fsync) + u32::from(job.fsync_on_close)) * nfiles
        } else {
            0
        };
        // A synchronous engine runs at depth 1 (fio's cap), whatever the
        // job states; iodepth_batch*, iodepth_low and the latency target's
        // search all stay within it.
        let iodepth = job.queue_depth();
        let batch_submit = match job.iodepth_batch_submit {
            0 => iodepth,
            n => n.min(iodepth),
        };
        let reap_max = match job.iodepth_batch_complete_max {
            0 => iodepth,
            n => n,
        };
        let rate = if verify_only || replay.is_some() {
            None
        } else {
            Rate::new(job, seed)
        };
        let rate_min = if verify_only { None } else { RateMin::new(job) };
        let sync_every = if writes {
            [u64::from(job.fsync), u64::from(job.fdatasync)]
        } else {
            [0; 2]
        };
        // As fio: iodepth_low 0, or above the depth, is the depth itself.
        let low = match job.iodepth_low {
            None | Some(0) => iodepth,
            Some(n) => n.min(iodepth),
        };
        let prios = (job.prio.is_some()
            || job.prioclass.is_some()
            || job.cmdprio_percentage != [0; 3]
            || job.cmdprio_bssplit.is_some())
        .then(|| Box::new(Prios::new(job, seed)));
        let mut stats = JobStats::new(job);
        if prios.as_ref().is_some_and(|p| p.per_io()) {
            stats.keep_prios(&prios.as_ref().map_or_else(Default::default, |p| p.order()));
        }
        let flow = (job.flow > 0 && !verify_only && replay.is_none())
            .then(|| Box::new(FlowMember::new(job.flow_id, job.flow, job.flow_sleep)));
        let slow = flow.is_some()
            || rate.is_some()
            || job.latency_target > 0
            || rate_min.is_some()
            || job.ramp_time > 0
            || sync_every != [0; 2]
            || end_syncs > 0
            || log.is_some()
            || replay.is_some();
        Ok(Worker {
            name: job.name.clone(),
            job_index,
            clone,
            group,
            ctx: IoContext(ctx),
            pattern,
            verify,
            prios,
            flow,
            flow_pause: false,
            rule,
            iodepth,
            depth_cap: iodepth,
            low,
            filling: true,
            runtime: job.runtime,
            ramp: job.ramp_time,
            ramp_end: None,
            write_flags: if job.direct {
                BioFlags::SYNC
            } else {
                BioFlags::NONE
            },
            state: State::Waiting,
            start: 0,
            end: 0,
            began: 0,
            in_flight: 0,
            unreaped: 0,
            reap_min: job.iodepth_batch_complete_min.max(1),
            reap_max: reap_max.max(1),
            batch_submit: batch_submit.max(1),
            batch: 0,
            think: if replay.is_some() {
                None
            } else {
                Think::new(job)
            },
            quiescing: false,
            sleeping_until: None,
            spin_until: None,
            pending: None,
            blocked: false,
            slow,
            stage: Stage::Io,
            rate,
            held: None,
            rate_wait: None,
            rate_ignore_think: job.rate_ignore_thinktime,
            rate_min,
            replay,
            sync_every,
            writes: 0,
            syncs_owed: 0,
            end_syncs,
            log,
            do_verify: job.do_verify || job.verify_only,
            verify_backlog: job.verify_backlog,
            verify_fatal: job.verify_fatal,
            backlog_due: false,
            verify_only,
            verify_errors: 0,
            failure: None,
            errors: job.errors.clone(),
            total_err: 0,
            first_error: 0,
            first_ignored: None,
            stats,
            exit_rule: ExitRule::default(),
            terminated: false,
            steady: None,
            lat_target: LatencyTarget::new(job).map(Box::new),
            lat_done: false,
            lat_reset: false,
            job_low: low,
            contents: super::Contents::new(job, seed, file_bytes),
        })
    }

    /// Whether it runs for its runtime whatever its size.
    pub fn time_based(&self) -> bool {
        self.pattern.time_based()
    }

    /// The workers that must finish before it starts.
    pub fn waits_for(&self) -> &[u32] {
        &self.rule.after
    }

    /// Forget its waits for other workers (an engine that has seen them
    /// over, e.g. on another thread); its start delay stays.
    pub fn clear_waits(&mut self) {
        self.rule.after.clear();
    }

    /// Which others its end ends, now that it is done (see
    /// [`super::end_others`]).
    pub fn ends_others(&self) -> Option<crate::job::ExitWhat> {
        self.exit_rule.fires(self.failure.is_some())
    }

    /// The depth its latency target's search kept last (`latency_target`),
    /// if it has one.
    pub fn latency_depth(&self) -> Option<u32> {
        self.lat_target.as_ref().map(|t| t.depth())
    }

    /// When it started (its ramp's start).
    pub fn began(&self) -> Nanos {
        self.began
    }

    /// Whether another clone's end ended it.
    pub fn terminated(&self) -> bool {
        self.terminated
    }

    /// Another clone's end ends it (fio's terminate): a running clone
    /// issues nothing more and ends once its I/O in flight completes; a
    /// waiting one ends as soon as it starts, with no start delay. Returns
    /// whether it was running (the engine must look at it again).
    pub fn terminate(&mut self) -> bool {
        self.terminated = true;
        match self.state {
            State::Waiting => {
                self.rule.delay = 0;
                false
            }
            State::Running => {
                self.stop();
                self.slow = true;
                self.sleeping_until = None;
                self.spin_until = None;
                true
            }
            State::Done => false,
        }
    }

    /// Start at `now`.
    pub fn start(&mut self, now: Nanos) {
        debug_assert_eq!(self.state, State::Waiting);
        self.state = State::Running;
        self.began = now;
        if let Some(f) = &mut self.flow {
            f.join();
        }
        self.start = now;
        if self.terminated {
            self.stop();
            self.slow = true;
        }
        if self.ramp > 0 {
            self.ramp_end = Some(now.saturating_add(self.ramp));
        } else {
            self.stats.start(now);
        }
        self.restart_clocks(now);
    }

    fn restart_clocks(&mut self, now: Nanos) {
        if let Some(t) = &mut self.lat_target {
            t.begin(now, self.stats.dirs.iter().map(|d| d.ios).sum());
            let depth = t.depth();
            self.set_depth(depth);
        }
        if let Some(r) = &mut self.rate {
            r.restart(now);
        }
        if let Some(r) = &mut self.rate_min {
            r.restart(now);
        }
        if let Some(t) = &mut self.think {
            t.begin(now);
        }
    }

    /// When its runtime is up (after its ramp), if it has one.
    fn deadline(&self) -> Option<Nanos> {
        self.runtime
            .map(|r| self.began.saturating_add(self.ramp).saturating_add(r))
    }

    #[inline]
    fn deadline_passed(&self, now: Nanos) -> bool {
        self.runtime.is_some() && self.deadline().is_some_and(|d| now >= d)
    }

    /// Time-driven changes due at `now`: the end of the ramp.
    fn tick(&mut self, now: Nanos) {
        if let Some(t) = self.ramp_end
            && now >= t
        {
            self.ramp_end = None;
            self.start = now;
            self.stats.start(now);
            self.restart_clocks(now);
        }
    }

    /// Keep at most `depth` I/Os in flight (the latency target's search).
    fn set_depth(&mut self, depth: u32) {
        self.iodepth = depth.clamp(1, self.depth_cap);
        self.low = self.job_low.min(self.iodepth);
        self.filling = self.in_flight <= self.low || self.in_flight < self.iodepth;
    }

    /// Act on a step of the latency target's search, taken at `now`
    /// (`io`: the I/O that missed the target, for a fatal step).
    #[cold]
    fn lat_step(&mut self, step: LatencyStep, io: Option<&Pending>) {
        match step {
            LatencyStep::None => {}
            LatencyStep::Quiesce => self.quiescing = true,
            LatencyStep::FinalRun => {
                self.quiescing = true;
                self.lat_reset = true;
            }
            LatencyStep::Done => self.lat_done = true,
            LatencyStep::Fatal => {
                if let Some(io) = io {
                    self.io_failed(io, super::latency_target::ETIMEDOUT);
                }
            }
        }
        if let Some(depth) = self.lat_target.as_ref().map(|t| t.depth()) {
            self.set_depth(depth);
        }
    }

    /// Record `failure`; with `fatal`, stop issuing.
    fn fail(&mut self, failure: JobFailure, fatal: bool) {
        if self.failure.is_none() {
            self.failure = Some(failure);
        }
        self.slow = true;
        if fatal {
            self.stop();
        }
    }

    /// A block read back at `error`'s offset did not verify (the engine
    /// checked it): counted; with `verify_fatal` the job stops.
    pub fn verify_failed(&mut self, error: VerifyError) {
        self.verify_errors += 1;
        if self.errors.goes_on(ErrorKind::Verify, crate::errno::EILSEQ) {
            self.went_on(crate::errno::EILSEQ, None);
            return;
        }
        let n = self.verify_errors;
        match &mut self.failure {
            Some(JobFailure::Verify { errors, .. }) => *errors = n,
            Some(_) => {}
            None => self.failure = Some(JobFailure::Verify { error, errors: n }),
        }
        self.slow = true;
        if self.verify_fatal {
            self.stop();
        }
    }

    /// `io` failed with `errno`: counted if the job goes on after such an
    /// error, else the job's failure.
    #[cold]
    fn io_failed(&mut self, io: &Pending, errno: i32) {
        let kind = ErrorKind::of(io.op, errno);
        let file = match io.op {
            Op::Flush => None,
            _ => self.pattern.file_at(io.sector),
        };
        let error = IoError {
            errno,
            op: io.op,
            file,
            device_offset: io.offset(),
            len: io.len,
        };
        if self.errors.goes_on(kind, errno) {
            self.went_on(errno, Some(error));
        } else {
            self.fail(JobFailure::Io(error), true);
        }
    }

    /// An error the job goes on after.
    fn went_on(&mut self, errno: i32, error: Option<IoError>) {
        self.total_err += 1;
        if self.first_error == 0 {
            self.first_error = errno;
        }
        if self.errors.dump && self.first_ignored.is_none() {
            self.first_ignored = error;
        }
    }

    /// Issue nothing more.
    fn stop(&mut self) {
        self.stage = Stage::Stopped;
        self.held = None;
        self.syncs_owed = 0;
        self.quiescing = false;
    }

    /// Whether it wants to issue an I/O now.
    #[inline]
    pub fn can_issue(&mut self, now: Nanos) -> bool {
        if self.state != State::Running
            || self.blocked
            || self.quiescing
            || !self.filling
            || self.in_flight >= self.iodepth
        {
            return false;
        }
        if self.pending.is_some() {
            // Chosen, and waiting for a tag only.
            return !(self.stage == Stage::Stopped
                || (self.stage == Stage::Io && self.deadline_passed(now)));
        }
        if let Some(t) = self.sleeping_until {
            if now < t {
                return false;
            }
            self.woke();
        }
        if self.slow {
            return self.can_issue_slow(now);
        }
        !self.pattern.exhausted() && !self.deadline_passed(now)
    }

    /// Its think time is over.
    fn woke(&mut self) {
        self.sleeping_until = None;
        if self.rate_ignore_think
            && let (Some(r), Some(t)) = (&mut self.rate, &self.think)
        {
            r.shift(t.time());
        }
    }

    fn can_issue_slow(&mut self, now: Nanos) -> bool {
        self.tick(now);
        if self.syncs_owed > 0 {
            return true;
        }
        let read_back = self.log.as_ref().is_some_and(|l| l.has_next());
        match self.stage {
            Stage::Stopped | Stage::Sync => false,
            Stage::Verify => read_back,
            Stage::Io => {
                if read_back {
                    return true;
                }
                if self.verify_only
                    || self.backlog_due
                    || self.exhausted()
                    || self.deadline_passed(now)
                {
                    return false;
                }
                if self.replay.is_some() {
                    return self.replay_allows(now);
                }
                if self.rate.is_some() && !self.rate_allows(now) {
                    return false;
                }
                self.flow_allows(now)
            }
        }
    }

    /// Flow: whether its flow lets it issue now (the I/O is then counted);
    /// if not, it waits: for its I/O in flight and `flow_sleep`, or to try
    /// again.
    fn flow_allows(&mut self, now: Nanos) -> bool {
        let Some(f) = self.flow.as_deref_mut() else {
            return true;
        };
        if f.allows() {
            return true;
        }
        let sleep = f.sleep;
        if sleep > 0 && self.in_flight > 0 {
            self.quiescing = true;
            self.flow_pause = true;
        } else if sleep > 0 || self.in_flight == 0 {
            self.sleeping_until = Some(now.saturating_add(sleep.max(FLOW_RETRY)));
        }
        false
    }

    /// Rate: choose the next I/O (held until its time) and say whether its
    /// time has come.
    fn rate_allows(&mut self, now: Nanos) -> bool {
        let held = match self.held {
            Some(h) => h,
            None => {
                let h = self.choose(now);
                self.held = Some(h);
                h
            }
        };
        let at = self.rate.as_ref().map_or(0, |r| r.allowed_at(held.op));
        // Wanted from when its rate lets it go.
        self.release_at(now, at)
    }

    /// Whether the held I/O may go at `now`, its time being `at`: if not,
    /// wait for `at`; if so, it was wanted from `at` (or its own issue
    /// time, if later).
    #[inline]
    fn release_at(&mut self, now: Nanos, at: Nanos) -> bool {
        if now < at {
            self.rate_wait = Some(at);
            return false;
        }
        self.rate_wait = None;
        if let Some(h) = &mut self.held {
            h.issued = h.issued.max(at);
        }
        true
    }

    /// Whether it has nothing more of its own to issue: its pattern, or its
    /// log, is over.
    #[inline]
    fn exhausted(&self) -> bool {
        if self.lat_done {
            return true;
        }
        match &self.replay {
            Some(r) => r.done() && self.held.is_none(),
            None => self.pattern.exhausted(),
        }
    }

    /// Replay: take the log's next I/O (held until the log's time for it)
    /// and say whether its time has come. A bad log stops the clone.
    fn replay_allows(&mut self, now: Nanos) -> bool {
        let base_prio = self.base_prio();
        let Some(replay) = self.replay.as_deref_mut() else {
            return false;
        };
        let due = match (self.held, self.rate_wait) {
            (Some(_), due) => due.unwrap_or(0),
            _ => match replay.next(self.began) {
                Ok(Some((io, due))) => {
                    let h = Pending {
                        op: io.op,
                        sector: io.offset >> 9,
                        len: io.len as u32,
                        issued: now,
                        verify: VerifyIo::None,
                        prio: base_prio,
                    };
                    self.held = Some(h);
                    due
                }
                Ok(None) => return false,
                Err(failure) => {
                    self.fail(failure, true);
                    return false;
                }
            },
        };
        // Wanted from when the log says.
        self.release_at(now, due)
    }

    fn choose(&mut self, now: Nanos) -> Pending {
        let io = self.pattern.choose();
        let verify = if io.op == Op::Write && self.log.is_some() {
            VerifyIo::Fill(GENERATION)
        } else {
            VerifyIo::None
        };
        let prio = match &mut self.prios {
            Some(p) => p.choose(io.op, io.len),
            None => 0,
        };
        Pending {
            op: io.op,
            sector: io.sector,
            len: io.len,
            issued: now,
            verify,
            prio,
        }
    }

    /// The next I/O to issue (call only when [`Worker::can_issue`] said
    /// so): a pending one, or a new one.
    #[inline]
    pub fn next_io(&mut self, now: Nanos) -> Pending {
        if let Some(p) = self.pending.take() {
            return p;
        }
        if self.slow {
            if self.syncs_owed > 0 {
                return Pending {
                    op: Op::Flush,
                    sector: 0,
                    len: 0,
                    issued: now,
                    verify: VerifyIo::None,
                    prio: self.base_prio(),
                };
            }
            if let Some(log) = &mut self.log
                && let Some((offset, len, generation)) = log.next()
            {
                return Pending {
                    op: Op::Read,
                    sector: offset >> 9,
                    len,
                    issued: now,
                    verify: VerifyIo::Check(generation),
                    prio: self.base_prio(),
                };
            }
            if let Some(h) = self.held.take() {
                return h;
            }
        }
        self.choose(now)
    }

    /// The job's own priority (fio's raw value; 0: the default).
    #[inline]
    fn base_prio(&self) -> u16 {
        self.prios.as_ref().map_or(0, |p| p.base())
    }

    /// Its largest block size (of a replayed log: its largest I/O when the
    /// engine asked for it, and at least 4 KiB).
    pub fn max_bs(&self) -> u64 {
        match &self.replay {
            Some(r) => r.largest().unwrap_or(0).max(4096),
            None => self.pattern.max_bs(),
        }
    }

    /// The bio for `io`.
    #[inline]
    pub fn bio(&self, io: &Pending, token: u64) -> Bio {
        let flags = self.flags(io.op);
        Bio {
            op: io.op,
            sector: io.sector,
            len: io.len,
            flags,
            ctx: self.ctx,
            prio: Worker::io_prio(io),
            token,
        }
    }

    /// The priority `io`'s bio carries (the default when the job sets
    /// none).
    #[inline]
    pub fn io_prio(io: &Pending) -> IoPrio {
        if io.prio == 0 {
            IoPrio::DEFAULT
        } else {
            prio::bio_prio(io.prio)
        }
    }

    /// The flags its I/Os of `op` carry (reads and direct writes are
    /// synchronous; a flush flushes).
    #[inline]
    pub fn flags(&self, op: Op) -> BioFlags {
        match op {
            Op::Read => BioFlags::SYNC,
            Op::Write => self.write_flags,
            Op::Flush => BioFlags::PREFLUSH,
            _ => BioFlags::NONE,
        }
    }

    /// `io` was taken by the queue at `now`.
    #[inline]
    pub fn issued(&mut self, io: &Pending, now: Nanos) {
        self.in_flight += 1;
        debug_assert!(self.in_flight <= self.iodepth, "depth exceeded");
        if self.in_flight >= self.iodepth {
            self.filling = false;
        }
        self.batch += 1;
        if self.batch >= self.batch_submit {
            self.stats.submitted(self.batch, self.in_flight);
            self.batch = 0;
        }
        if io.op == Op::Flush {
            debug_assert!(self.syncs_owed > 0 || self.replay.is_some());
            self.syncs_owed = self.syncs_owed.saturating_sub(1);
            return;
        }
        if let VerifyIo::Check(_) = io.verify {
            return;
        }
        if self.replay.is_some() {
            return;
        }
        self.pattern.accepted(&NextIo {
            op: io.op,
            sector: io.sector,
            len: io.len,
        });
        if let Some(t) = &mut self.think
            && t.issued(now)
        {
            self.quiescing = true;
        }
        if self.slow {
            self.issued_slow(io);
        }
    }

    fn issued_slow(&mut self, io: &Pending) {
        if let Some(f) = &mut self.flow {
            f.used();
        }
        if let Some(r) = &mut self.rate {
            r.issued(io.op, io.len);
        }
        if io.op == Op::Write {
            self.writes += 1;
            if self
                .sync_every
                .iter()
                .any(|&n| n > 0 && self.writes.is_multiple_of(n))
            {
                self.syncs_owed += 1;
            }
            if let Some(log) = &mut self.log
                && log.issued_write(self.verify_backlog)
                && self.do_verify
            {
                self.backlog_due = true;
            }
        }
    }

    /// The engine hands each of this worker's bursts (what it issues
    /// between two [`Worker::commit`]s) to the device in one submission:
    /// count each burst as one submission, its I/Os at the depth in flight
    /// after it (fio's `cur_depth` when it commits), rather than in
    /// batches of `iodepth_batch_submit` as they are issued. Without it a
    /// burst of 16 refilling a job whose 16 I/Os completed together counts
    /// its I/Os at depths 1 to 16, though all 16 reach the device at once.
    pub fn count_whole_bursts(&mut self) {
        self.batch_submit = u32::MAX;
    }

    /// The engine is done issuing for now: a partial submission batch (or,
    /// with [`Worker::count_whole_bursts`], the burst) is one submission.
    #[inline]
    pub fn commit(&mut self) {
        if self.batch > 0 {
            self.stats.submitted(self.batch, self.in_flight);
            self.batch = 0;
        }
    }

    /// `io` (submitted to the queue at `submitted`) completed at `now`,
    /// moving `bytes`, with `status`: a failure is counted, and ends the
    /// job unless its [`ErrorPolicy`] lets it go on. Its slot frees when it
    /// is reaped.
    #[inline]
    pub fn completed(
        &mut self,
        io: &Pending,
        bytes: u64,
        status: Status,
        submitted: Nanos,
        now: Nanos,
    ) {
        self.unreaped += 1;
        debug_assert!(self.unreaped <= self.in_flight, "completion not in flight");
        let ok = status.is_ok();
        if !ok {
            self.io_failed(io, status.errno());
        }
        if io.op == Op::Flush {
            self.stats.synced(io.issued, now, ok);
            return;
        }
        self.stats.completed(&IoDone {
            op: io.op,
            bytes,
            ok,
            offset: io.offset(),
            issued: io.issued,
            submitted,
            now,
            prio: io.prio,
        });
        if let Some(t) = &mut self.think
            && t.completed(now)
        {
            self.quiescing = true;
        }
        if self.slow {
            if let (VerifyIo::Fill(generation), Some(log)) = (io.verify, &mut self.log) {
                log.written(io.offset(), io.len, generation, ok);
            }
            self.tick(now);
            if self.stage == Stage::Io
                && self.ramp_end.is_none()
                && let Some(r) = &mut self.rate_min
                && let Err(shortfall) = r.completed(io.op, bytes, now)
            {
                self.fail(JobFailure::RateMin(shortfall), true);
            }
            if matches!(io.op, Op::Read | Op::Write)
                && let Some(t) = &mut self.lat_target
            {
                let ios = self.stats.dirs.iter().map(|d| d.ios).sum();
                let step = t.completed(now.saturating_sub(io.issued), now, ios);
                self.lat_step(step, Some(io));
            }
        }
    }

    /// Take the completions the engine delivered (call once the engine has
    /// delivered what it had, e.g. after each event or poll). Returns the
    /// time it wants to wake at, if it goes to think.
    #[inline]
    pub fn reap(&mut self, now: Nanos) -> Option<Nanos> {
        if self.unreaped == 0 || self.unreaped < self.reap_min.min(self.in_flight) {
            return None;
        }
        let mut left = self.unreaped;
        while left > 0 {
            let n = left.min(self.reap_max);
            self.stats.reaped(n);
            left -= n;
        }
        self.in_flight -= self.unreaped;
        self.unreaped = 0;
        if self.in_flight <= self.low {
            self.filling = true;
        }
        if self.slow {
            self.tick(now);
            if self.ramp_end.is_none()
                && self.stage == Stage::Io
                && !self.lat_done
                && let Some(t) = &mut self.lat_target
            {
                let ios = self.stats.dirs.iter().map(|d| d.ios).sum();
                let step = t.check(now, ios);
                self.lat_step(step, None);
            }
        }
        if self.in_flight > 0 {
            return None;
        }
        if std::mem::take(&mut self.lat_reset) {
            // The search's final cycle: its figures only.
            self.start = now;
            self.stats.start(now);
            if let Some(t) = &mut self.lat_target {
                t.restart(now);
            }
        }
        if self.backlog_due {
            self.backlog_due = false;
            if let Some(log) = &mut self.log {
                log.queue_all();
            }
        }
        if self.quiescing && self.stage != Stage::Stopped {
            self.quiescing = false;
            if std::mem::take(&mut self.flow_pause) {
                let sleep = self.flow.as_ref().map_or(0, |f| f.sleep);
                let wake = now.saturating_add(sleep);
                self.sleeping_until = Some(wake);
                return Some(wake);
            }
            if let Some(t) = &mut self.think {
                let (spin, wake) = t.pause(now);
                self.spin_until = (spin > now).then_some(spin);
                self.sleeping_until = Some(wake);
                return Some(wake);
            }
        }
        None
    }

    /// Move on if its present work is over; mark it done if it has nothing
    /// more to do. Returns whether it is done.
    pub fn check_done(&mut self, now: Nanos) -> bool {
        if self.state != State::Running {
            return self.state == State::Done;
        }
        if self.slow {
            self.tick(now);
        }
        let time_up = self.stage == Stage::Io && self.deadline_passed(now);
        if time_up || self.stage == Stage::Stopped {
            // An I/O still waiting for a tag or for its rate is never issued.
            self.pending = None;
            self.blocked = false;
            self.held = None;
            self.syncs_owed = 0;
        }
        loop {
            let idle = self.in_flight == 0 && self.pending.is_none() && self.syncs_owed == 0;
            if !idle {
                return false;
            }
            let read_back = self.log.as_ref().is_some_and(|l| l.has_next());
            match self.stage {
                Stage::Io => {
                    if read_back || !(time_up || self.verify_only || self.exhausted()) {
                        return false;
                    }
                    self.held = None;
                    self.backlog_due = false;
                    self.stage = Stage::Verify;
                    if self.do_verify
                        && let Some(log) = &mut self.log
                    {
                        log.queue_all();
                    }
                }
                Stage::Verify => {
                    if read_back {
                        return false;
                    }
                    self.stage = Stage::Sync;
                    self.syncs_owed = self.end_syncs;
                }
                Stage::Sync | Stage::Stopped => {
                    if let Some(f) = &mut self.flow {
                        f.leave();
                    }
                    self.state = State::Done;
                    self.end = now;
                    self.quiescing = false;
                    self.stats.finish(now);
                    debug_assert!(self.in_flight == 0 && self.unreaped == 0);
                    return true;
                }
            }
        }
    }

    /// When it must be looked at again even if none of its I/O completes:
    /// the end of its think time, of its rate wait, of its ramp, or of its
    /// runtime.
    pub fn next_wake(&self) -> Option<Nanos> {
        if self.state != State::Running {
            return None;
        }
        let mut t = self.sleeping_until;
        let mut at = |x: Option<Nanos>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        if self.stage == Stage::Io {
            at(self.deadline());
        }
        if self.slow {
            at(self.rate_wait);
            at(self.ramp_end);
        }
        t
    }

    /// How far along it is, 0..=1.
    pub fn progress(&self, now: Nanos) -> f64 {
        match self.state {
            State::Waiting => 0.0,
            State::Done => 1.0,
            State::Running => {
                let by_time = self.runtime.map(|r| {
                    now.saturating_sub(self.began) as f64
                        / r.saturating_add(self.ramp).max(1) as f64
                });
                let by_bytes = match &self.replay {
                    Some(r) => Some(if r.done() { 1.0 } else { 0.0 }),
                    None => (!self.time_based()).then(|| self.pattern.progress()),
                };
                by_time
                    .into_iter()
                    .chain(by_bytes)
                    .fold(0.0f64, f64::max)
                    .min(1.0)
            }
        }
    }
}

/// `verify_only`: replay the job's I/O choices without issuing them, and
/// log the writes it would have made (at most one pass over its files when
/// it is time based).
fn replay_writes(pattern: &mut Pattern, log: &mut VerifyLog, file_bytes: u64) {
    let cap = if pattern.time_based() {
        file_bytes
    } else {
        u64::MAX
    };
    let mut bytes = 0u64;
    while !pattern.exhausted() && bytes < cap {
        let io = pattern.choose();
        pattern.accepted(&io);
        bytes += u64::from(io.len.max(1));
        if io.op == Op::Write {
            log.written(io.sector << 9, io.len, GENERATION, true);
        }
    }
    debug_assert!(pattern.exhausted() || bytes >= cap);
}
