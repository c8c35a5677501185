//! One clone of one job: a process issuing I/O as fio would.
//!
//! - Keeps up to `iodepth` I/Os in flight.
//! - Picks each I/O's direction (`rw`, `rwmixread`), file (`nrfiles`,
//!   `file_service_type`) and offset: random block-aligned offsets drawn
//!   uniformly with replacement (fio with `norandommap`), or a sequential
//!   cursor per file that wraps at the end of the file's region.
//! - `thinktime`: after every `thinktime_blocks` I/Os issued it stops, waits
//!   for its outstanding I/O to complete, then sleeps `thinktime` (fio's
//!   behaviour).
//! - Stops issuing when `size` bytes are issued (unless `time_based`) or when
//!   `runtime` is up; it is done when its last I/O completes.

use elevator_core::{Bio, BioFlags, IoContext, IoPrio, Nanos, Op};

use super::layout::Extent;
use crate::job::{FileService, JobSpec, RwMode};
use crate::result::DirStats;
use crate::rng::Rng;

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
    files: Vec<Extent>,
    /// Byte offset within each file where I/O may start, and where it ends.
    region: Vec<(u64, u64)>,
    cursors: Vec<u64>,
    cur_file: usize,
    on_file: u32,
    rw: RwMode,
    mixread: u8,
    bs: [u64; 2],
    iodepth: u32,
    think: Nanos,
    think_blocks: u32,
    file_service: (FileService, u32),
    /// Bytes to issue (`u64::MAX` when time based).
    budget: u64,
    runtime: Option<Nanos>,
    write_flags: BioFlags,
    rng: Rng,
    /// Where it is in its life.
    pub state: State,
    /// When it started.
    pub start: Nanos,
    /// When it finished.
    pub end: Nanos,
    issued_bytes: u64,
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
    /// Its figures by direction ([`crate::result::READ`], `WRITE`, `TRIM`).
    pub dirs: [DirStats; 3],
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
    ) -> Worker {
        // The layout placed `offset` and checked that a block fits after it.
        let region: Vec<(u64, u64)> = files.iter().map(|f| (f.start, f.bytes)).collect();
        let total: u64 = region.iter().map(|(s, e)| e - s).sum();
        let budget = if job.time_based {
            u64::MAX
        } else {
            // fio: `size` is the job's total I/O (files are revisited if it
            // exceeds them); without it, every file once.
            match job.size {
                Some(crate::job::Amount::Bytes(b)) => b,
                Some(crate::job::Amount::Percent(p)) => total / 100 * u64::from(p),
                None => total,
            }
        };
        let cursors = region.iter().map(|&(s, _)| s).collect();
        Worker {
            name: job.name.clone(),
            job_index,
            clone,
            group,
            phase,
            ctx: IoContext(ctx),
            files,
            region,
            cursors,
            cur_file: 0,
            on_file: 0,
            rw: job.rw,
            mixread: job.rwmixread,
            bs: job.bs,
            iodepth: job.iodepth,
            think: job.thinktime,
            think_blocks: job.thinktime_blocks.max(1),
            file_service: job.file_service,
            budget,
            runtime: job.runtime,
            write_flags: if job.direct {
                BioFlags::SYNC
            } else {
                BioFlags::NONE
            },
            rng: Rng::new(seed),
            state: State::Waiting,
            start: 0,
            end: 0,
            issued_bytes: 0,
            in_flight: 0,
            since_think: 0,
            quiescing: false,
            sleeping_until: None,
            pending: None,
            blocked: false,
            dirs: Default::default(),
        }
    }

    /// Whether it runs for its runtime whatever its size.
    pub fn time_based(&self) -> bool {
        self.budget == u64::MAX
    }

    /// Start at `now`.
    pub fn start(&mut self, now: Nanos) {
        self.state = State::Running;
        self.start = now;
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
            && self.issued_bytes < self.budget
            && !self.deadline_passed(now)
    }

    /// The next I/O to issue: a pending one, or a new one.
    #[inline]
    pub fn next_io(&mut self, now: Nanos) -> Pending {
        if let Some(p) = self.pending.take() {
            return p;
        }
        let op = match self.rw {
            RwMode::Read | RwMode::RandRead => Op::Read,
            RwMode::Write | RwMode::RandWrite => Op::Write,
            RwMode::ReadWrite | RwMode::RandRw => {
                if self.rng.percent(self.mixread) {
                    Op::Read
                } else {
                    Op::Write
                }
            }
            RwMode::Trim | RwMode::RandTrim => Op::Discard,
        };
        let bs = self.bs[usize::from(op != Op::Read)];
        let f = self.pick_file();
        let (start, end) = self.region[f];
        let offset = if self.rw.random() {
            start + self.rng.below(((end - start) / bs).max(1)) * bs
        } else {
            let mut c = self.cursors[f];
            if c + bs > end {
                c = start;
            }
            self.cursors[f] = c + bs;
            c
        };
        // Never past the end of the file (a last partial block is shortened).
        let len = bs.min(end - offset);
        Pending {
            op,
            sector: self.files[f].sector + offset / 512,
            len: len as u32,
            issued: now,
        }
    }

    fn pick_file(&mut self) -> usize {
        let n = self.files.len();
        if n == 1 {
            return 0;
        }
        let (kind, count) = self.file_service;
        match kind {
            FileService::RoundRobin | FileService::Random => {
                if self.on_file >= count {
                    self.on_file = 0;
                    self.cur_file = if kind == FileService::RoundRobin {
                        (self.cur_file + 1) % n
                    } else {
                        self.rng.below(n as u64) as usize
                    };
                }
                self.on_file += 1;
            }
            FileService::Sequential => {
                let (start, end) = self.region[self.cur_file];
                let bs = self.bs[0].max(self.bs[1]);
                let done = if self.rw.random() {
                    self.on_file as u64 * bs >= end - start
                } else {
                    self.cursors[self.cur_file] + bs > end
                };
                if done {
                    self.cur_file = (self.cur_file + 1) % n;
                    self.on_file = 0;
                }
                self.on_file += 1;
            }
        }
        self.cur_file
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
        let d = &mut self.dirs[match op {
            Op::Read => crate::result::READ,
            Op::Discard => crate::result::TRIM,
            _ => crate::result::WRITE,
        }];
        d.ios += 1;
        d.bytes += bytes;
        if !ok {
            d.errors += 1;
        }
        d.clat.record(now - submitted);
        d.slat.record(submitted - issued);
        d.lat.record(now - issued);
    }

    /// Its largest block size.
    pub fn max_bs(&self) -> u64 {
        self.bs[0].max(self.bs[1])
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
        self.issued_bytes += u64::from(io.len);
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
        let finished_issuing = self.issued_bytes >= self.budget || self.deadline_passed(now);
        if finished_issuing && self.in_flight == 0 && self.pending.is_none() {
            self.state = State::Done;
            self.end = now;
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
                let by_bytes = (self.budget != u64::MAX)
                    .then(|| self.issued_bytes as f64 / self.budget.max(1) as f64);
                by_time
                    .into_iter()
                    .chain(by_bytes)
                    .fold(0.0f64, f64::max)
                    .min(1.0)
            }
        }
    }
}
