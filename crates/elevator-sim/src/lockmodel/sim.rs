//! The event loop behind [`super::run`].
//!
//! Events: the end of a CPU's current segment (switching in, work up to the
//! thread's next shared step, a hold that reaches past the quantum, a
//! blocking lock's spin budget), the end of a CPU's quantum, the release of
//! a lock someone waits for, a device completion. Ties go in the order the
//! events were scheduled. Stale events (a segment cut short by preemption, a
//! release whose holder was preempted) are recognised by their sequence
//! number, which is no longer the one their CPU or lock expects, and
//! skipped.
//!
//! A running thread is only ever interrupted at the end of its quantum (no
//! wake-up preemption), so between now and the quantum's end it can run
//! ahead through steps that nobody else observes: outside work, locks only
//! it uses, and the hold of a shared lock it has just acquired (the lock
//! records when it will be free, `held_until`, and a release event is only
//! scheduled if someone waits). What it cannot do ahead of time is ask for a
//! shared lock or issue an I/O: those are events at the time they happen.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use elevator_core::rng::Rng;

use super::{CpuTime, Dist, LockKind, LockModel, LockStats, ModelResult, Step};

/// A step, with its duration as an index into [`Sim::dists`].
#[derive(Clone, Copy, Debug)]
enum S {
    Cpu(usize),
    Lock { lock: usize, hold: usize },
    Device { device: usize, service: usize },
}

/// What an event is about. An event is queued as its time and one word:
/// its sequence number (which orders events of the same time, and names
/// it), its kind and the index of its CPU, lock or thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// The end of a CPU's current segment.
    Segment = 0,
    /// The end of a CPU's quantum.
    Quantum = 1,
    /// A lock is free for its waiters.
    Release = 2,
    /// A device completes a thread's I/O (the one its current step issued).
    IoDone = 3,
}

/// Bits of an event word that hold the index of its object.
const INDEX_BITS: u32 = 22;

/// Objects of one kind (CPUs, threads, locks) a model may have.
pub(super) const MAX_OBJECTS: usize = 1 << INDEX_BITS;

/// What a thread is doing, at step `pc` of its plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Working until it reaches the start of step `pc` (`left` to go when
    /// off a CPU).
    Run,
    /// Holding the lock of step `pc` (since `since`, `left` to go when off a
    /// CPU), in a segment of its own.
    Hold(usize),
    /// Waiting for the lock of step `pc` (since `since`): spinning on a CPU,
    /// preempted, or asleep.
    Wait(usize),
}

#[derive(Debug)]
struct Thread {
    pc: usize,
    phase: Phase,
    left: u64,
    /// Request time in `Wait`, acquisition time in `Hold`.
    since: u64,
    /// The current request found the lock held.
    waited: bool,
    /// CPU time spun in this attempt at a blocking lock.
    spun: u64,
    /// When the current spin began.
    spin_from: u64,
    cpu: Option<usize>,
    last_cpu: usize,
    ios: u64,
    /// It has finished its last step's work on paper, but will only have
    /// done so once it gets to the end of its current segment.
    io_owed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Idle,
    Busy,
    Spin,
    Switch,
}

#[derive(Debug)]
struct Cpu {
    thread: Option<usize>,
    switching: bool,
    /// Sequence number of the pending segment event (0: none).
    seg_seq: u64,
    seg_end: u64,
    /// Sequence number of the pending quantum event (0: none).
    q_seq: u64,
    q_end: u64,
    /// The quantum ended while the thread could not be preempted.
    need_resched: bool,
    mode: Mode,
    mode_since: u64,
    time: CpuTime,
}

#[derive(Debug)]
struct Lock {
    kind: LockKind,
    /// Used by one thread at most: never contended, never tracked.
    private: bool,
    /// Free from this time on; `u64::MAX` while its holder is preempted.
    held_until: u64,
    /// Waiters spinning on a CPU.
    spinners: Vec<usize>,
    /// Waiters asleep (blocking locks), longest first.
    sleepers: VecDeque<usize>,
    /// Time of the pending release event, if any.
    armed: Option<u64>,
    /// Its sequence number.
    release_seq: u64,
    stats: LockStats,
}

impl Lock {
    fn record_hold(&mut self, h: u64) {
        let s = &mut self.stats;
        s.hold_total_ns += h;
        s.hold_min_ns = s.hold_min_ns.min(h);
        s.hold_max_ns = s.hold_max_ns.max(h);
    }
}

#[derive(Debug)]
struct Device {
    depth: u32,
    busy: u32,
    queue: VecDeque<(usize, u64)>,
    ios: u64,
}

pub(super) struct Sim {
    now: u64,
    until: u64,
    quantum: u64,
    switch: u64,
    rng: Rng,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64)>>,
    dists: Vec<Dist>,
    plans: Vec<Vec<S>>,
    threads: Vec<Thread>,
    cpus: Vec<Cpu>,
    idle: usize,
    locks: Vec<Lock>,
    devices: Vec<Device>,
    runq: VecDeque<usize>,
    switches: u64,
    preemptions: u64,
}

impl Sim {
    /// A simulation of a validated `model`.
    pub(super) fn new(model: &LockModel, until: u64) -> Sim {
        let mut dists = Vec::new();
        let mut users = vec![Vec::<usize>::new(); model.locks.len()];
        let plans = model
            .threads
            .iter()
            .enumerate()
            .map(|(t, plan)| {
                plan.steps
                    .iter()
                    .map(|step| {
                        dists.push(step.dist().clone());
                        let d = dists.len() - 1;
                        match *step {
                            Step::Cpu { .. } => S::Cpu(d),
                            Step::Lock { lock, .. } => {
                                if !users[lock].contains(&t) {
                                    users[lock].push(t);
                                }
                                S::Lock { lock, hold: d }
                            }
                            Step::Device { device, .. } => S::Device { device, service: d },
                        }
                    })
                    .collect()
            })
            .collect();
        let cpus = model.cpus as usize;
        Sim {
            now: 0,
            until,
            quantum: model.quantum_ns,
            switch: model.switch_ns,
            rng: Rng::new(model.seed),
            seq: 0,
            events: BinaryHeap::new(),
            dists,
            plans,
            threads: (0..model.threads.len())
                .map(|t| Thread {
                    pc: 0,
                    phase: Phase::Run,
                    left: 0,
                    since: 0,
                    waited: false,
                    spun: 0,
                    spin_from: 0,
                    cpu: None,
                    last_cpu: t % cpus,
                    ios: 0,
                    io_owed: false,
                })
                .collect(),
            cpus: (0..cpus)
                .map(|_| Cpu {
                    thread: None,
                    switching: false,
                    seg_seq: 0,
                    seg_end: 0,
                    q_seq: 0,
                    q_end: 0,
                    need_resched: false,
                    mode: Mode::Idle,
                    mode_since: 0,
                    time: CpuTime::default(),
                })
                .collect(),
            idle: cpus,
            locks: model
                .locks
                .iter()
                .zip(&users)
                .map(|(&kind, users)| Lock {
                    kind,
                    private: users.len() <= 1,
                    held_until: 0,
                    spinners: Vec::new(),
                    sleepers: VecDeque::new(),
                    armed: None,
                    release_seq: 0,
                    stats: LockStats {
                        hold_min_ns: u64::MAX,
                        wait_min_ns: u64::MAX,
                        ..LockStats::default()
                    },
                })
                .collect(),
            devices: model
                .devices
                .iter()
                .map(|d| Device {
                    depth: d.depth,
                    busy: 0,
                    queue: VecDeque::new(),
                    ios: 0,
                })
                .collect(),
            runq: VecDeque::new(),
            switches: 0,
            preemptions: 0,
        }
    }

    /// Run to the end and report.
    pub(super) fn run(mut self) -> ModelResult {
        for t in 0..self.threads.len() {
            self.make_ready(t);
        }
        while let Some(&Reverse((time, word))) = self.events.peek() {
            if time > self.until {
                break;
            }
            self.events.pop();
            debug_assert!(time >= self.now, "event at {time} before now {}", self.now);
            self.now = time;
            let seq = word >> (INDEX_BITS + 2);
            let i = (word & (MAX_OBJECTS as u64 - 1)) as usize;
            match (word >> INDEX_BITS) & 3 {
                0 => self.on_segment(i, seq),
                1 => self.on_quantum(i, seq),
                2 => self.on_release(i, seq),
                _ => self.on_io_done(i),
            }
            // Checked now and then: the check looks at every lock and CPU.
            #[cfg(debug_assertions)]
            if seq.is_multiple_of(64) {
                self.check();
            }
        }
        self.finish()
    }

    fn finish(mut self) -> ModelResult {
        self.now = self.until.max(self.now);
        for c in 0..self.cpus.len() {
            let mode = self.cpus[c].mode;
            self.set_mode(c, mode);
        }
        // Holds and spins still in progress count up to the end.
        for th in &self.threads {
            if let Phase::Hold(l) = th.phase {
                self.locks[l].stats.hold_total_ns += self.now.saturating_sub(th.since);
            }
        }
        for lock in &mut self.locks {
            for &t in &lock.spinners {
                lock.stats.spin_ns += self.now - self.threads[t].spin_from;
            }
        }
        let locks = self
            .locks
            .iter()
            .map(|l| {
                let mut s = l.stats;
                if s.hold_min_ns == u64::MAX {
                    s.hold_min_ns = 0;
                }
                if s.wait_min_ns == u64::MAX {
                    s.wait_min_ns = 0;
                }
                s
            })
            .collect();
        ModelResult {
            elapsed_ns: self.now,
            ios: self.threads.iter().map(|t| t.ios).collect(),
            total_ios: 0,
            locks,
            device_ios: self.devices.iter().map(|d| d.ios).collect(),
            cpus: self.cpus.iter().map(|c| c.time).collect(),
            cpu_total: CpuTime::default(),
            context_switches: self.switches,
            preemptions: self.preemptions,
        }
    }

    /// Invariants that hold between events.
    #[cfg(debug_assertions)]
    fn check(&self) {
        for (l, lock) in self.locks.iter().enumerate() {
            for &t in &lock.spinners {
                let c = self.threads[t].cpu.expect("a spinner off its CPU");
                assert_eq!(
                    self.cpus[c].thread,
                    Some(t),
                    "lock {l}: spinner {t} not on CPU {c}"
                );
                assert_eq!(self.threads[t].phase, Phase::Wait(l), "spinner {t}");
                assert_eq!(self.cpus[c].mode, Mode::Spin, "spinner {t}'s CPU {c}");
            }
            if !lock.spinners.is_empty() {
                assert!(
                    lock.held_until >= self.now,
                    "lock {l} free with spinners at {}",
                    self.now
                );
                assert!(
                    lock.held_until == u64::MAX || lock.armed == Some(lock.held_until),
                    "lock {l} with spinners and no release due at {}: held_until {} armed {:?}",
                    self.now,
                    lock.held_until,
                    lock.armed
                );
            }
        }
        let idle = self.cpus.iter().filter(|c| c.thread.is_none()).count();
        assert_eq!(idle, self.idle);
        assert!(self.idle == 0 || self.runq.is_empty());
    }

    // --- bookkeeping ---------------------------------------------------

    /// Queue event `ev` about object `i` at `at`; its sequence number.
    fn push(&mut self, at: u64, ev: Ev, i: usize) -> u64 {
        self.seq += 1;
        debug_assert!(
            self.seq < 1 << (64 - INDEX_BITS - 2),
            "event sequence overflow"
        );
        let word = self.seq << (INDEX_BITS + 2) | (ev as u64) << INDEX_BITS | i as u64;
        self.events.push(Reverse((at, word)));
        self.seq
    }

    fn sample(&mut self, d: usize) -> u64 {
        self.dists[d].sample(&mut self.rng)
    }

    fn set_mode(&mut self, c: usize, mode: Mode) {
        let cpu = &mut self.cpus[c];
        let d = self.now - cpu.mode_since;
        match cpu.mode {
            Mode::Idle => cpu.time.idle_ns += d,
            Mode::Busy => cpu.time.busy_ns += d,
            Mode::Spin => cpu.time.spin_ns += d,
            Mode::Switch => cpu.time.switch_ns += d,
        }
        cpu.mode = mode;
        cpu.mode_since = self.now;
    }

    /// CPU `c`'s current segment ends at `at`.
    fn segment(&mut self, c: usize, at: u64) {
        self.cpus[c].seg_end = at;
        self.cpus[c].seg_seq = self.push(at, Ev::Segment, c);
    }

    /// A time slice: the quantum ±10%, drawn, so that CPUs that started
    /// together do not all preempt at the same instant (which lets a group
    /// of threads that lost the lock starve, one whole slice after another).
    fn slice(&mut self) -> u64 {
        let spread = self.quantum / 10;
        self.quantum - spread + self.rng.below(2 * spread + 1)
    }

    fn new_quantum(&mut self, c: usize) {
        let slice = self.slice();
        self.cpus[c].q_end = self.now + slice;
        self.cpus[c].q_seq = self.push(self.now + slice, Ev::Quantum, c);
    }

    /// Thread `t` has finished step `pc`.
    fn next_step(&mut self, t: usize) {
        let th = &mut self.threads[t];
        th.pc += 1;
        if th.pc == self.plans[t].len() {
            th.pc = 0;
            th.ios += 1;
        }
    }

    /// Thread `t` will have finished step `pc` at the end of its current
    /// stretch of work, unless the run ends first: its I/O counts then.
    fn next_step_owed(&mut self, t: usize) {
        let th = &mut self.threads[t];
        th.pc += 1;
        if th.pc == self.plans[t].len() {
            th.pc = 0;
            th.io_owed = true;
        }
    }

    /// Call after lock `l`'s release time or waiters change: if it has
    /// waiters and a known release time, a release event is due then, and
    /// no other.
    fn arm(&mut self, l: usize) {
        let lock = &mut self.locks[l];
        if lock.private || lock.armed == Some(lock.held_until) {
            return;
        }
        if (lock.spinners.is_empty() && lock.sleepers.is_empty())
            || lock.held_until == u64::MAX
            || lock.held_until < self.now
        {
            lock.armed = None;
            lock.release_seq = 0;
            return;
        }
        let at = lock.held_until;
        lock.armed = Some(at);
        self.locks[l].release_seq = self.push(at, Ev::Release, l);
    }

    // --- scheduling ----------------------------------------------------

    /// Thread `t` can run: on an idle CPU if there is one, else in the queue.
    fn make_ready(&mut self, t: usize) {
        self.threads[t].cpu = None;
        if self.idle == 0 {
            self.runq.push_back(t);
            return;
        }
        let last = self.threads[t].last_cpu;
        let c = if self.cpus[last].thread.is_none() {
            last
        } else {
            self.cpus
                .iter()
                .position(|c| c.thread.is_none())
                .expect("an idle CPU")
        };
        self.idle -= 1;
        self.start_on(c, t);
    }

    /// CPU `c` starts running thread `t`.
    fn start_on(&mut self, c: usize, t: usize) {
        self.switches += 1;
        let slice = self.slice();
        let th = &mut self.threads[t];
        th.cpu = Some(c);
        th.last_cpu = c;
        let cpu = &mut self.cpus[c];
        cpu.thread = Some(t);
        cpu.need_resched = false;
        cpu.q_end = self.now + self.switch + slice;
        let q_end = cpu.q_end;
        self.cpus[c].q_seq = self.push(q_end, Ev::Quantum, c);
        if self.switch > 0 {
            self.cpus[c].switching = true;
            self.set_mode(c, Mode::Switch);
            self.segment(c, self.now + self.switch);
        } else {
            self.resume(c, t);
        }
    }

    /// CPU `c`, whose thread has left it, runs the next one or idles.
    fn schedule_next(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        cpu.thread = None;
        cpu.switching = false;
        cpu.seg_seq = 0;
        if let Some(t) = self.runq.pop_front() {
            self.start_on(c, t);
        } else {
            self.cpus[c].q_seq = 0;
            self.idle += 1;
            self.set_mode(c, Mode::Idle);
        }
    }

    /// The thread on CPU `c` goes to the back of the run queue.
    fn preempt(&mut self, c: usize) {
        let t = self.cpus[c].thread.expect("a running thread");
        let seg_end = self.cpus[c].seg_end;
        debug_assert!(!self.cpus[c].switching, "preempted while switching in");
        debug_assert!(
            self.cpus[c].seg_seq != 0 || matches!(self.threads[t].phase, Phase::Wait(_)),
            "a running thread with no segment"
        );
        match self.threads[t].phase {
            Phase::Run => self.threads[t].left = seg_end - self.now,
            Phase::Hold(l) => {
                self.threads[t].left = seg_end - self.now;
                let lock = &mut self.locks[l];
                lock.stats.holder_preemptions += 1;
                if !lock.private {
                    lock.held_until = u64::MAX;
                    lock.armed = None;
                    lock.release_seq = 0;
                }
            }
            Phase::Wait(l) => {
                self.stop_spin(c, t, l);
                self.threads[t].left = 0;
            }
        }
        self.preemptions += 1;
        self.threads[t].cpu = None;
        self.runq.push_back(t);
        self.schedule_next(c);
    }

    /// Thread `t` carries on with what it was doing, on CPU `c`.
    fn resume(&mut self, c: usize, t: usize) {
        let left = std::mem::take(&mut self.threads[t].left);
        match self.threads[t].phase {
            Phase::Run => self.advance(c, t, self.now + left),
            Phase::Hold(l) => {
                self.set_mode(c, Mode::Busy);
                let end = self.now + left;
                self.segment(c, end);
                if !self.locks[l].private {
                    self.locks[l].held_until = end;
                    self.arm(l);
                }
            }
            Phase::Wait(l) => {
                if let Some(at) = self.want(c, t, l) {
                    self.advance(c, t, at);
                }
            }
        }
    }

    // --- threads -------------------------------------------------------

    /// Thread `t`, running on CPU `c`, reaches the start of step `pc` at
    /// `at` (≥ now), busy until then. It runs ahead through what nobody else
    /// sees, up to the end of its quantum, then leaves an event for where it
    /// stopped.
    fn advance(&mut self, c: usize, t: usize, mut at: u64) {
        self.set_mode(c, Mode::Busy);
        let limit = self.cpus[c].q_end.min(self.until);
        loop {
            if at > limit {
                self.threads[t].phase = Phase::Run;
                self.segment(c, at);
                return;
            }
            let th = &mut self.threads[t];
            if th.io_owed {
                th.io_owed = false;
                th.ios += 1;
            }
            match self.plans[t][th.pc] {
                S::Cpu(d) => {
                    at += self.sample(d);
                    self.next_step_owed(t);
                }
                S::Lock { lock, hold } if self.locks[lock].private => {
                    let h = self.sample(hold);
                    self.locks[lock].stats.acquisitions += 1;
                    if at + h <= limit {
                        self.locks[lock].record_hold(h);
                        at += h;
                        self.next_step(t);
                    } else {
                        let th = &mut self.threads[t];
                        th.phase = Phase::Hold(lock);
                        th.since = at;
                        self.segment(c, at + h);
                        return;
                    }
                }
                S::Lock { .. } | S::Device { .. } if at > self.now => {
                    self.threads[t].phase = Phase::Run;
                    self.segment(c, at);
                    return;
                }
                S::Lock { lock, .. } => {
                    let th = &mut self.threads[t];
                    th.since = self.now;
                    th.waited = false;
                    th.spun = 0;
                    match self.want(c, t, lock) {
                        Some(next) => at = next,
                        None => return,
                    }
                }
                S::Device { device, service } => {
                    let s = self.sample(service);
                    self.submit(c, t, device, s);
                    return;
                }
            }
        }
    }

    /// Thread `t` on CPU `c` wants shared lock `l` now. If it gets it and
    /// will have released it before its quantum ends, the time it does so;
    /// otherwise (it waits, or holds it in a segment of its own) `None`.
    fn want(&mut self, c: usize, t: usize, l: usize) -> Option<u64> {
        let lock = &self.locks[l];
        // At the very instant of a release its spinners are already there:
        // a newcomer joins them and the release event draws among all.
        if self.now > lock.held_until || (self.now == lock.held_until && lock.spinners.is_empty()) {
            self.grant(t, l);
            self.hold(c, t, l)
        } else {
            let th = &mut self.threads[t];
            th.phase = Phase::Wait(l);
            th.waited = true;
            self.spin(c, t, l);
            None
        }
    }

    /// Thread `t` acquires lock `l` now.
    fn grant(&mut self, t: usize, l: usize) {
        let th = &self.threads[t];
        let s = &mut self.locks[l].stats;
        s.acquisitions += 1;
        if th.waited {
            let w = self.now - th.since;
            debug_assert!(w >= th.spun, "waited {w} but spun {}", th.spun);
            s.contentions += 1;
            s.wait_total_ns += w;
            s.wait_min_ns = s.wait_min_ns.min(w);
            s.wait_max_ns = s.wait_max_ns.max(w);
        }
    }

    /// Thread `t` on CPU `c` has just acquired shared lock `l`: it holds it
    /// for a time drawn now. As [`Sim::want`].
    fn hold(&mut self, c: usize, t: usize, l: usize) -> Option<u64> {
        let S::Lock { hold, .. } = self.plans[t][self.threads[t].pc] else {
            unreachable!("holding outside a lock step");
        };
        let h = self.sample(hold);
        let end = self.now + h;
        self.locks[l].held_until = end;
        self.arm(l);
        let cpu = &self.cpus[c];
        // A thread whose quantum ended while it could not be preempted
        // releases in a segment of its own, whose end preempts it.
        if !cpu.need_resched && end <= cpu.q_end.min(self.until) {
            self.locks[l].record_hold(h);
            self.next_step(t);
            self.threads[t].phase = Phase::Run;
            Some(end)
        } else {
            let th = &mut self.threads[t];
            th.phase = Phase::Hold(l);
            th.since = self.now;
            self.set_mode(c, Mode::Busy);
            self.segment(c, end);
            None
        }
    }

    /// Thread `t` on CPU `c` spins on lock `l` (held by another), or sleeps
    /// at once if it is a blocking lock with no spin left.
    fn spin(&mut self, c: usize, t: usize, l: usize) {
        if let LockKind::Blocking { spin_ns } = self.locks[l].kind {
            let budget = spin_ns.saturating_sub(self.threads[t].spun);
            if budget == 0 {
                self.sleep(c, t, l);
                return;
            }
            self.segment(c, self.now + budget);
        } else {
            self.cpus[c].seg_seq = 0;
        }
        self.threads[t].spin_from = self.now;
        self.locks[l].spinners.push(t);
        self.set_mode(c, Mode::Spin);
        self.arm(l);
    }

    /// Thread `t` on CPU `c` stops spinning on lock `l`.
    fn stop_spin(&mut self, c: usize, t: usize, l: usize) {
        let th = &mut self.threads[t];
        let d = self.now - th.spin_from;
        th.spun += d;
        let lock = &mut self.locks[l];
        lock.stats.spin_ns += d;
        if let Some(i) = lock.spinners.iter().position(|&x| x == t) {
            lock.spinners.swap_remove(i);
        }
        self.cpus[c].seg_seq = 0;
    }

    /// Thread `t` on CPU `c` sleeps until lock `l` is released.
    fn sleep(&mut self, c: usize, t: usize, l: usize) {
        let lock = &mut self.locks[l];
        lock.stats.sleeps += 1;
        lock.sleepers.push_back(t);
        self.threads[t].cpu = None;
        self.arm(l);
        self.schedule_next(c);
    }

    /// Thread `t` on CPU `c` issues an I/O taking `service` to `device` and
    /// sleeps.
    fn submit(&mut self, c: usize, t: usize, device: usize, service: u64) {
        let dev = &mut self.devices[device];
        dev.ios += 1;
        if dev.busy < dev.depth {
            dev.busy += 1;
            self.push(self.now + service, Ev::IoDone, t);
        } else {
            dev.queue.push_back((t, service));
        }
        self.threads[t].cpu = None;
        self.schedule_next(c);
    }

    // --- events --------------------------------------------------------

    fn on_segment(&mut self, c: usize, seq: u64) {
        if seq != self.cpus[c].seg_seq {
            return;
        }
        let t = self.cpus[c].thread.expect("a segment without a thread");
        if self.cpus[c].switching {
            self.cpus[c].switching = false;
            self.resume(c, t);
            return;
        }
        match self.threads[t].phase {
            Phase::Run => self.advance(c, t, self.now),
            Phase::Hold(l) => {
                let held = self.now - self.threads[t].since;
                self.locks[l].record_hold(held);
                self.next_step(t);
                self.threads[t].phase = Phase::Run;
                if std::mem::take(&mut self.cpus[c].need_resched) {
                    if !self.runq.is_empty() {
                        self.threads[t].left = 0;
                        self.cpus[c].seg_end = self.now;
                        self.preempt(c);
                        return;
                    }
                    self.new_quantum(c);
                }
                self.advance(c, t, self.now);
            }
            Phase::Wait(l) => {
                // A blocking lock's spin budget is spent.
                self.stop_spin(c, t, l);
                self.sleep(c, t, l);
            }
        }
    }

    fn on_quantum(&mut self, c: usize, seq: u64) {
        if seq != self.cpus[c].q_seq {
            return;
        }
        let Some(t) = self.cpus[c].thread else {
            return;
        };
        if self.runq.is_empty() {
            self.new_quantum(c);
            return;
        }
        if let Phase::Hold(l) | Phase::Wait(l) = self.threads[t].phase
            && self.locks[l].kind == LockKind::KernelSpin
        {
            self.cpus[c].need_resched = true;
            return;
        }
        self.preempt(c);
    }

    fn on_release(&mut self, l: usize, seq: u64) {
        let lock = &mut self.locks[l];
        if seq != lock.release_seq {
            return;
        }
        lock.armed = None;
        lock.release_seq = 0;
        debug_assert!(lock.held_until <= self.now);
        if !lock.spinners.is_empty() {
            let i = self.rng.below(lock.spinners.len() as u64) as usize;
            let t = lock.spinners[i];
            let c = self.threads[t].cpu.expect("a spinner on a CPU");
            self.stop_spin(c, t, l);
            self.grant(t, l);
            if let Some(at) = self.hold(c, t, l) {
                self.advance(c, t, at);
            }
        } else if let Some(t) = lock.sleepers.pop_front() {
            self.threads[t].spun = 0;
            self.make_ready(t);
        }
    }

    fn on_io_done(&mut self, t: usize) {
        let S::Device { device, .. } = self.plans[t][self.threads[t].pc] else {
            unreachable!("an I/O completes for a thread not at a device step");
        };
        let dev = &mut self.devices[device];
        dev.busy -= 1;
        if let Some((next, service)) = dev.queue.pop_front() {
            dev.busy += 1;
            self.push(self.now + service, Ev::IoDone, next);
        }
        self.next_step(t);
        let th = &mut self.threads[t];
        th.phase = Phase::Run;
        th.left = 0;
        self.make_ready(t);
    }
}
