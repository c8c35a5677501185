//! One clone of one job: a process issuing I/O as fio would.
//!
//! - Keeps up to `iodepth` I/Os in flight.
//! - Takes each I/O's direction, file, offset and length from its
//!   [`Pattern`].
//! - `thinktime`: after every `thinktime_blocks` I/Os issued it stops, waits
//!   for its outstanding I/O to complete, then sleeps `thinktime` (fio's
//!   behaviour).
//! - Stops issuing when `size` bytes are issued (unless `time_based`) or when
//!   `runtime` is up; it is done when its last I/O completes.

use elevator_core::{Bio, BioFlags, IoContext, IoPrio, Nanos, Op};

use super::layout::Extent;
use super::pattern::Pattern;
use crate::job::JobSpec;
use crate::result::{IoDone, JobStats};

/// Where a worker is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Its phase (stonewall) has not started.
    Waiting,
    /// Issuing and completing I/O.
    Running,
    /// Finished.
    Done,
}

/// An I/O the worker generated but the queue could not take yet.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    /// Operation.
    pub op: Op,
    /// First sector on the device.
    pub sector: u64,
    /// Length in bytes.
    pub len: u32,
    /// When the worker wanted it issued.
    pub issued: Nanos,
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
    /// Its stonewall phase.
    pub phase: u32,
    /// Its I/O context (one per clone, as one process per clone in fio).
    pub ctx: IoContext,
    /// What it issues.
    pub pattern: Pattern,
    iodepth: u32,
    think: Nanos,
    think_blocks: u32,
    runtime: Option<Nanos>,
    write_flags: BioFlags,
    /// Where it is in its life.
    pub state: State,
    /// When it started.
    pub start: Nanos,
    /// When it finished.
    pub end: Nanos,
    /// I/Os issued and not completed.
    pub in_flight: u32,
    since_think: u32,
    quiescing: bool,
    /// The end of its think time, while it thinks.
    pub sleeping_until: Option<Nanos>,
    /// An I/O it generated that is not issued yet.
    pub pending: Option<Pending>,
    /// Whether it waits for a tag.
    pub blocked: bool,
    /// Its figures.
    pub stats: JobStats,
}

impl Worker {
    /// A worker for clone `clone` of `job`, with its files laid out.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        job: &JobSpec,
        job_index: usize,
        clone: u32,
        group: u32,
        phase: u32,
        ctx: u32,
        files: Vec<Extent>,
        seed: u64,
    ) -> Result<Worker, crate::job::JobError> {
        Ok(Worker {
            name: job.name.clone(),
            job_index,
            clone,
            group,
            phase,
            ctx: IoContext(ctx),
            pattern: Pattern::new(job, files, clone, seed)?,
            iodepth: job.iodepth,
            think: job.thinktime,
            think_blocks: job.thinktime_blocks.max(1),
            runtime: job.runtime,
            write_flags: if job.direct {
                BioFlags::SYNC
            } else {
                BioFlags::NONE
            },
            state: State::Waiting,
            start: 0,
            end: 0,
            in_flight: 0,
            since_think: 0,
            quiescing: false,
            sleeping_until: None,
            pending: None,
            blocked: false,
            stats: JobStats::new(job),
        })
    }

    /// Whether it runs for its runtime whatever its size.
    pub fn time_based(&self) -> bool {
        self.pattern.time_based()
    }

    /// Start at `now`.
    pub fn start(&mut self, now: Nanos) {
        self.state = State::Running;
        self.start = now;
        self.stats.start(now);
    }

    fn deadline_passed(&self, now: Nanos) -> bool {
        self.runtime
            .is_some_and(|r| now >= self.start.saturating_add(r))
    }

    /// Whether it wants to issue an I/O now.
    #[inline]
    pub fn can_issue(&self, now: Nanos) -> bool {
        self.state == State::Running
            && !self.quiescing
            && !self.blocked
            && self.sleeping_until.is_none_or(|t| now >= t)
            && self.in_flight < self.iodepth
            && !self.pattern.exhausted()
            && !self.deadline_passed(now)
    }

    /// The next I/O to issue: a pending one, or a new one.
    #[inline]
    pub fn next_io(&mut self, now: Nanos) -> Pending {
        if let Some(p) = self.pending.take() {
            return p;
        }
        let io = self.pattern.choose();
        Pending {
            op: io.op,
            sector: io.sector,
            len: io.len,
            issued: now,
        }
    }

    /// Add a completed I/O to its figures: it was wanted at `issued`,
    /// entered the queue at `submitted` and completed at `now` with `bytes`
    /// and `status`.
    #[inline]
    pub fn record(
        &mut self,
        op: Op,
        bytes: u64,
        ok: bool,
        issued: Nanos,
        submitted: Nanos,
        now: Nanos,
    ) {
        self.stats.completed(&IoDone {
            op,
            bytes,
            ok,
            offset: 0,
            issued,
            submitted,
            now,
        });
    }

    /// Its largest block size.
    pub fn max_bs(&self) -> u64 {
        self.pattern.max_bs()
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
            prio: IoPrio::DEFAULT,
            token,
        }
    }

    /// `io` was taken by the queue.
    #[inline]
    pub fn issued(&mut self, io: &Pending) {
        self.in_flight += 1;
        self.pattern.accepted(&super::NextIo {
            op: io.op,
            sector: io.sector,
            len: io.len,
        });
        self.since_think += 1;
        if self.think > 0 && self.since_think >= self.think_blocks {
            self.quiescing = true;
        }
    }

    /// The flags its I/Os of `op` carry (reads and direct writes are
    /// synchronous).
    #[inline]
    pub fn flags(&self, op: Op) -> BioFlags {
        match op {
            Op::Read => BioFlags::SYNC,
            Op::Write => self.write_flags,
            _ => BioFlags::NONE,
        }
    }

    /// One of its I/Os completed at `now`. Returns the time it wants to wake
    /// up at, if it goes to sleep.
    #[inline]
    pub fn completed(&mut self, now: Nanos) -> Option<Nanos> {
        self.in_flight -= 1;
        if self.quiescing && self.in_flight == 0 {
            self.quiescing = false;
            self.since_think = 0;
            let wake = now + self.think;
            self.sleeping_until = Some(wake);
            return Some(wake);
        }
        None
    }

    /// Mark it done if it has nothing more to do; returns whether it is done.
    pub fn check_done(&mut self, now: Nanos) -> bool {
        if self.state != State::Running {
            return self.state == State::Done;
        }
        if self.deadline_passed(now) {
            // Time is up: an I/O still waiting for a tag is never issued.
            self.pending = None;
            self.blocked = false;
        }
        let finished_issuing = self.pattern.exhausted() || self.deadline_passed(now);
        if finished_issuing && self.in_flight == 0 && self.pending.is_none() {
            self.state = State::Done;
            self.end = now;
            self.stats.finish(now);
            return true;
        }
        false
    }

    /// When it must be looked at again even if nothing happens: the end of
    /// its runtime, if it has one.
    pub fn deadline(&self) -> Option<Nanos> {
        self.runtime.map(|r| self.start.saturating_add(r))
    }

    /// How far along it is, 0..=1.
    pub fn progress(&self, now: Nanos) -> f64 {
        match self.state {
            State::Waiting => 0.0,
            State::Done => 1.0,
            State::Running => {
                let by_time = self
                    .runtime
                    .map(|r| (now - self.start) as f64 / r.max(1) as f64);
                let by_bytes = (!self.time_based()).then(|| self.pattern.progress());
                by_time
                    .into_iter()
                    .chain(by_bytes)
                    .fold(0.0f64, f64::max)
                    .min(1.0)
            }
        }
    }
}
