//! CPUs contending for locks on a virtual clock: a model that predicts how a
//! lock topology scales to more CPUs than the host has.
//!
//! # What is modelled
//!
//! - **CPUs** ([`LockModel::cpus`]) run **threads** ([`LockModel::threads`]).
//!   No thread is pinned. Runnable threads that find no idle CPU wait in one
//!   global FIFO run queue; a CPU runs a thread for a **quantum**
//!   ([`LockModel::quantum_ns`], default [`DEFAULT_QUANTUM_NS`] = 3 ms, CFS's
//!   6 ms latency target shared by two runnable threads per CPU; each slice
//!   is drawn within ±10% of it so that CPUs do not all preempt at the same
//!   instant) and, if another thread is waiting for a CPU when it ends, puts
//!   the running thread at the back of the queue and takes the front one
//!   (round robin).
//!   A woken thread takes an idle CPU (the one it last ran on if it is idle,
//!   else the lowest-numbered), or waits in the queue: there is no wake-up
//!   preemption. Every time a CPU starts running a thread it first spends
//!   [`LockModel::switch_ns`] switching (default 0).
//! - Each thread loops over its [`ThreadPlan`]: one pass through its
//!   [`Step`]s is one I/O. A step is work outside any lock
//!   ([`Step::Cpu`]), a critical section ([`Step::Lock`]: acquire, hold,
//!   release), or a synchronous I/O ([`Step::Device`]: the thread sleeps,
//!   its CPU is free, until the device completes it). Durations are
//!   [`Dist`]ributions, drawn from one generator seeded by
//!   [`LockModel::seed`].
//! - **Locks** ([`LockKind`]) are spinlocks whose holders and spinners can
//!   be preempted at the end of a quantum (a user-space spinlock), kernel
//!   spinlocks whose holders and spinners cannot (2.4's `io_request_lock`,
//!   taken with `spin_lock_irq`: the preemption waits until the lock is
//!   released), or blocking locks that spin for a while and then sleep,
//!   freeing the CPU (a futex mutex). A preempted holder keeps its lock
//!   while it waits for a CPU, and its waiters keep spinning: this is what
//!   makes user-space spinlocks collapse when threads outnumber CPUs.
//! - A released lock goes to one of the threads spinning on it *on a CPU*,
//!   chosen at random (a test-and-set lock, as 2.4's were: no ticket order,
//!   so a preempted spinner is simply passed over). A released blocking lock
//!   with no spinner wakes its longest sleeper, which must then get a CPU
//!   and try again; anyone else may take the lock first (barging, as a
//!   futex mutex allows).
//! - **Devices** ([`ModelDevice`]) serve up to `depth` I/Os at once, the
//!   rest wait in FIFO order; each I/O takes its step's service time.
//!
//! # Lock topologies are step lists
//!
//! With `w` the work outside locks, `d` the thread's device and `h` a hold:
//!
//! - `global` (2.4): every thread runs `[Cpu w, Lock(0, h), Device d]`;
//! - `queue` (2.5): thread `i` runs `[Cpu w, Lock(d, h), Device d]`, one
//!   lock per device;
//! - `mq` (blk-mq): thread `i` runs `[Cpu w, Lock(own_i, h_ctx),
//!   Lock(tags_d, h_tags), Device d]`: a lock per thread (its software
//!   context), never contended, and a short section per device (the tag
//!   set, or a scheduler's lock) that is shared.
//!
//! # Measured, in lockmeter's terms
//!
//! [`ModelResult`] gives, per lock, acquisitions, contended acquisitions
//! (the lock was held when asked for; a request at the very instant of a
//! release joins that release's draw and counts as contended), hold and
//! wait times (wall time:
//! a preempted holder still holds, a preempted or sleeping waiter still
//! waits) and the CPU time spent spinning on it; per CPU, time busy,
//! spinning, switching and idle; I/Os per thread. lockmeter's UTIL is
//! `hold_total_ns / elapsed_ns`, CON `contentions / acquisitions`, WAIT mean
//! `wait_total_ns / contentions`, `%CPU` `spin_ns / (elapsed_ns × cpus)`.
//!
//! # Left out
//!
//! Caches (a lock's cache line moving between CPUs costs nothing; holds do
//! not lengthen under contention), NUMA, interrupts (completion work runs as
//! steps of the woken thread, after its [`Step::Device`]), nested locks (a
//! step holds one lock), reader-writer locks, ticket or queued (MCS) lock
//! fairness, asynchronous I/O (every thread has one I/O in flight, as `dd`
//! does), per-CPU run queues and load balancing, priorities and wake-up
//! preemption, and the idle time a real CPU needs to wake up.
//!
//! # Determinism and cost
//!
//! The same model and seed give the same result, event for event
//! (exponential draws use `f64::ln`, so across platforms the last bit of a
//! draw may differ).
//!
//! An event queue over virtual time, not a clock that ticks. A thread that
//! runs does so without events through work nothing else can see (outside
//! work, locks no other thread uses, the hold of a lock it got) up to its
//! next step that touches something shared or to the end of its quantum;
//! a lock release is an event only when someone waits for it. So an
//! acquisition of a shared lock costs one event, or two if contended; an
//! I/O two (issue, completion); a step of private work none. An event
//! costs some 60 ns of host time, a private step some 8 ns: 64 CPUs and 64
//! threads on one global lock held 1 µs run a virtual second in about
//! 0.15 s, on 16 such locks (16 million acquisitions a second) in about 2 s.
//!
//! # Example: one global lock, as 2.4 had
//!
//! ```
//! use elevator_sim::lockmodel::{Dist, LockKind, LockModel, Step, ThreadPlan, run};
//!
//! let mut model = LockModel::new(4);
//! model.locks = vec![LockKind::KernelSpin];
//! model.threads = (0..8)
//!     .map(|_| ThreadPlan::new(vec![Step::cpu(Dist::Exp { mean: 3_000 }), Step::lock(0, 1_800)]))
//!     .collect();
//! let r = run(&model, 100_000_000).unwrap();
//! let util = r.locks[0].hold_total_ns as f64 / r.elapsed_ns as f64;
//! assert!(util > 0.4 && util <= 1.0);
//! ```

mod sim;

use std::sync::Arc;

use elevator_core::lockstat::ratio;
use elevator_core::rng::Rng;
use thiserror::Error;

/// The longest duration (2^50 ns, 13 days) or run (2^62 ns) a model takes,
/// so that virtual time cannot overflow.
pub const MAX_NS: u64 = 1 << 50;

/// The default scheduler quantum, 3 ms: CFS's 6 ms latency target split
/// between two runnable threads per CPU.
pub const DEFAULT_QUANTUM_NS: u64 = 3_000_000;

/// How long something takes, in nanoseconds, drawn anew each time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dist {
    /// Always this long.
    Fixed(u64),
    /// Uniform over `min..=max`.
    Uniform {
        /// Shortest.
        min: u64,
        /// Longest.
        max: u64,
    },
    /// Exponential with this mean, rounded to whole nanoseconds and never
    /// below 1 ns (a mean of 0 is always 0).
    Exp {
        /// Mean.
        mean: u64,
    },
    /// `short` usually, `long` with probability `long_ppm` per million: a
    /// critical section that now and then does much more (2.4's elevator
    /// scanning a long request list under `io_request_lock`).
    Bimodal {
        /// The usual duration.
        short: u64,
        /// The rare one.
        long: u64,
        /// How rare, in parts per million.
        long_ppm: u32,
    },
    /// One of these measured values, each as likely (a measured histogram
    /// fed back into the model). Must not be empty.
    Empirical(Arc<[u64]>),
}

impl From<u64> for Dist {
    fn from(ns: u64) -> Dist {
        Dist::Fixed(ns)
    }
}

impl Dist {
    /// Uniform within `percent`% either side of `mean` (`percent` ≤ 100):
    /// jitter that keeps threads from running in lock step.
    pub fn jitter(mean: u64, percent: u8) -> Dist {
        let d = mean / 100 * u64::from(percent.min(100))
            + mean % 100 * u64::from(percent.min(100)) / 100;
        Dist::Uniform {
            min: mean - d,
            max: mean + d,
        }
    }

    /// The mean, in nanoseconds.
    pub fn mean(&self) -> f64 {
        match self {
            Dist::Fixed(n) => *n as f64,
            Dist::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            Dist::Exp { mean } => *mean as f64,
            Dist::Bimodal {
                short,
                long,
                long_ppm,
            } => {
                let p = f64::from(*long_ppm) / 1e6;
                *short as f64 * (1.0 - p) + *long as f64 * p
            }
            Dist::Empirical(v) if v.is_empty() => 0.0,
            Dist::Empirical(v) => v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64,
        }
    }

    /// The shortest value it can give.
    fn min(&self) -> u64 {
        match self {
            Dist::Fixed(n) => *n,
            Dist::Uniform { min, .. } => *min,
            Dist::Exp { mean } => u64::from(*mean > 0),
            Dist::Bimodal {
                short,
                long,
                long_ppm,
            } => match *long_ppm {
                0 => *short,
                1_000_000.. => *long,
                _ => (*short).min(*long),
            },
            Dist::Empirical(v) => v.iter().copied().min().unwrap_or(0),
        }
    }

    /// What is wrong with it, if anything.
    fn check(&self) -> Option<&'static str> {
        let too_long = match self {
            Dist::Fixed(n) | Dist::Uniform { max: n, .. } => *n > MAX_NS,
            Dist::Exp { mean } => *mean > MAX_NS >> 6,
            Dist::Bimodal { short, long, .. } => *short.max(long) > MAX_NS,
            Dist::Empirical(v) => v.iter().any(|&x| x > MAX_NS),
        };
        if too_long {
            return Some("duration above 2^50 ns (2^44 ns for an exponential's mean)");
        }
        match self {
            Dist::Uniform { min, max } if min > max => Some("uniform duration with min > max"),
            Dist::Bimodal { long_ppm, .. } if *long_ppm > 1_000_000 => {
                Some("bimodal duration with long_ppm above 1000000")
            }
            Dist::Empirical(v) if v.is_empty() => Some("empirical duration with no values"),
            _ => None,
        }
    }

    /// One value.
    fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            Dist::Fixed(n) => *n,
            Dist::Uniform { min, max } => min + rng.below((max - min).saturating_add(1)),
            Dist::Exp { mean: 0 } => 0,
            Dist::Exp { mean } => {
                // 53 random bits as a uniform in (0, 1].
                let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
                (-(*mean as f64) * u.ln()).round().max(1.0) as u64
            }
            Dist::Bimodal {
                short,
                long,
                long_ppm,
            } => {
                if rng.below(1_000_000) < u64::from(*long_ppm) {
                    *long
                } else {
                    *short
                }
            }
            Dist::Empirical(v) => v[rng.below(v.len() as u64) as usize],
        }
    }
}

/// How a lock treats those who wait for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// A user-space spinlock: waiters spin on their CPU; holder and spinners
    /// can be preempted when their quantum ends.
    Spin,
    /// A kernel spinlock taken with preemption (and interrupts) off, as 2.4's
    /// `io_request_lock`: waiters spin; a holder or spinner whose quantum
    /// ends keeps its CPU until it has released the lock.
    KernelSpin,
    /// A blocking lock (a futex mutex): a waiter spins up to `spin_ns` of CPU
    /// time per attempt, then sleeps and frees its CPU until a release wakes
    /// it.
    Blocking {
        /// How long a waiter spins before it sleeps (0: sleep at once).
        spin_ns: u64,
    },
}

/// A device that serves up to `depth` I/Os at once, the rest in FIFO order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelDevice {
    /// I/Os in service at once (at least 1).
    pub depth: u32,
}

/// One step of an I/O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Work on the CPU outside any lock.
    Cpu {
        /// How long.
        ns: Dist,
    },
    /// Acquire lock `lock`, hold it `hold_ns` (CPU time: a preempted holder
    /// holds longer), release it.
    Lock {
        /// Index into [`LockModel::locks`].
        lock: usize,
        /// How long it is held.
        hold_ns: Dist,
    },
    /// Issue an I/O to device `device` and sleep, CPU free, until it
    /// completes.
    Device {
        /// Index into [`LockModel::devices`].
        device: usize,
        /// How long the device takes to serve it, once in service.
        service_ns: Dist,
    },
}

impl Step {
    /// [`Step::Cpu`].
    pub fn cpu(ns: impl Into<Dist>) -> Step {
        Step::Cpu { ns: ns.into() }
    }

    /// [`Step::Lock`].
    pub fn lock(lock: usize, hold_ns: impl Into<Dist>) -> Step {
        Step::Lock {
            lock,
            hold_ns: hold_ns.into(),
        }
    }

    /// [`Step::Device`].
    pub fn device(device: usize, service_ns: impl Into<Dist>) -> Step {
        Step::Device {
            device,
            service_ns: service_ns.into(),
        }
    }

    fn dist(&self) -> &Dist {
        match self {
            Step::Cpu { ns } => ns,
            Step::Lock { hold_ns, .. } => hold_ns,
            Step::Device { service_ns, .. } => service_ns,
        }
    }
}

/// What one thread does, over and over: one pass through `steps` is one I/O.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadPlan {
    /// The steps of one I/O, in order.
    pub steps: Vec<Step>,
}

impl ThreadPlan {
    /// A plan of these steps.
    pub fn new(steps: Vec<Step>) -> ThreadPlan {
        ThreadPlan { steps }
    }
}

/// CPUs, locks, devices and threads: everything a run needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockModel {
    /// Number of CPUs.
    pub cpus: u32,
    /// Scheduler quantum in ns (see [`DEFAULT_QUANTUM_NS`]).
    pub quantum_ns: u64,
    /// CPU time a CPU spends each time it starts running a thread.
    pub switch_ns: u64,
    /// The locks, by index.
    pub locks: Vec<LockKind>,
    /// The devices, by index.
    pub devices: Vec<ModelDevice>,
    /// One plan per thread.
    pub threads: Vec<ThreadPlan>,
    /// Seed of every random draw.
    pub seed: u64,
}

impl LockModel {
    /// `cpus` CPUs, the default quantum, free context switches, seed 0, and
    /// no locks, devices or threads yet.
    pub fn new(cpus: u32) -> LockModel {
        LockModel {
            cpus,
            quantum_ns: DEFAULT_QUANTUM_NS,
            switch_ns: 0,
            locks: Vec::new(),
            devices: Vec::new(),
            threads: Vec::new(),
            seed: 0,
        }
    }

    /// Check that the model can run.
    pub fn validate(&self) -> Result<(), LockModelError> {
        if self.cpus == 0 {
            return Err(LockModelError::NoCpus);
        }
        if self.threads.is_empty() {
            return Err(LockModelError::NoThreads);
        }
        if self.quantum_ns == 0 {
            return Err(LockModelError::ZeroQuantum);
        }
        let spins = self.locks.iter().map(|k| match k {
            LockKind::Blocking { spin_ns } => *spin_ns,
            _ => 0,
        });
        for (what, ns) in [("quantum", self.quantum_ns), ("switch", self.switch_ns)]
            .into_iter()
            .chain(spins.map(|ns| ("spin", ns)))
        {
            if ns > MAX_NS {
                return Err(LockModelError::TooLong { what, ns });
            }
        }
        for (what, count) in [
            ("CPUs", self.cpus as usize),
            ("threads", self.threads.len()),
            ("locks", self.locks.len()),
            ("devices", self.devices.len()),
        ] {
            if count > sim::MAX_OBJECTS {
                return Err(LockModelError::TooMany {
                    what,
                    count,
                    max: sim::MAX_OBJECTS,
                });
            }
        }
        if let Some(device) = self.devices.iter().position(|d| d.depth == 0) {
            return Err(LockModelError::ZeroDepth { device });
        }
        for (thread, plan) in self.threads.iter().enumerate() {
            if plan.steps.is_empty() {
                return Err(LockModelError::EmptyPlan { thread });
            }
            for (step, s) in plan.steps.iter().enumerate() {
                match *s {
                    Step::Lock { lock, .. } if lock >= self.locks.len() => {
                        return Err(LockModelError::NoSuchLock {
                            thread,
                            step,
                            lock,
                            locks: self.locks.len(),
                        });
                    }
                    Step::Device { device, .. } if device >= self.devices.len() => {
                        return Err(LockModelError::NoSuchDevice {
                            thread,
                            step,
                            device,
                            devices: self.devices.len(),
                        });
                    }
                    _ => {}
                }
                if let Some(reason) = s.dist().check() {
                    return Err(LockModelError::BadDuration {
                        thread,
                        step,
                        reason,
                    });
                }
            }
            if plan.steps.iter().all(|s| s.dist().min() == 0) {
                return Err(LockModelError::NoProgress { thread });
            }
        }
        Ok(())
    }
}

/// Why a model cannot run.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum LockModelError {
    /// `cpus` is 0.
    #[error("the model has no CPUs")]
    NoCpus,
    /// `threads` is empty.
    #[error("the model has no threads")]
    NoThreads,
    /// `quantum_ns` is 0.
    #[error("the scheduler quantum is 0 ns")]
    ZeroQuantum,
    /// A time too long for the virtual clock (see [`MAX_NS`]).
    #[error("{what} of {ns} ns is too long for the virtual clock")]
    TooLong {
        /// What it is: "quantum", "switch", "spin" or "run".
        what: &'static str,
        /// How long it is.
        ns: u64,
    },
    /// More CPUs, threads, locks or devices than the model can name.
    #[error("{count} {what}: the model handles at most {max}")]
    TooMany {
        /// CPUs, threads, locks or devices.
        what: &'static str,
        /// How many were given.
        count: usize,
        /// The most it handles.
        max: usize,
    },
    /// A device serves no I/O at a time.
    #[error("device {device} has queue depth 0")]
    ZeroDepth {
        /// The device.
        device: usize,
    },
    /// A thread has nothing to do.
    #[error("thread {thread} has no steps")]
    EmptyPlan {
        /// The thread.
        thread: usize,
    },
    /// A step names a lock that does not exist.
    #[error("thread {thread}, step {step}: lock {lock} does not exist (the model has {locks})")]
    NoSuchLock {
        /// The thread.
        thread: usize,
        /// The step.
        step: usize,
        /// The lock it names.
        lock: usize,
        /// How many locks there are.
        locks: usize,
    },
    /// A step names a device that does not exist.
    #[error(
        "thread {thread}, step {step}: device {device} does not exist (the model has {devices})"
    )]
    NoSuchDevice {
        /// The thread.
        thread: usize,
        /// The step.
        step: usize,
        /// The device it names.
        device: usize,
        /// How many devices there are.
        devices: usize,
    },
    /// A step's duration cannot be drawn.
    #[error("thread {thread}, step {step}: {reason}")]
    BadDuration {
        /// The thread.
        thread: usize,
        /// The step.
        step: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// Every step of a thread may take no time, so its loop could spin in
    /// place: at least one step must always take 1 ns or more.
    #[error("thread {thread}: every step may take 0 ns, so an I/O may take no time")]
    NoProgress {
        /// The thread.
        thread: usize,
    },
}

/// What happened to one lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Times it was acquired.
    pub acquisitions: u64,
    /// Acquisitions that found it held and had to wait.
    pub contentions: u64,
    /// Times a waiter went to sleep ([`LockKind::Blocking`] only).
    pub sleeps: u64,
    /// Times its holder was preempted while holding it.
    pub holder_preemptions: u64,
    /// Total hold time (including the part, up to the end of the run, of a
    /// hold still in progress), so `hold_total_ns / elapsed_ns` is UTIL.
    pub hold_total_ns: u64,
    /// Shortest completed hold (0 if none).
    pub hold_min_ns: u64,
    /// Longest completed hold.
    pub hold_max_ns: u64,
    /// Total wait of the contended acquisitions (request to acquisition,
    /// asleep or preempted included; waits still in progress at the end are
    /// not counted).
    pub wait_total_ns: u64,
    /// Shortest wait of a contended acquisition (0 if none).
    pub wait_min_ns: u64,
    /// Longest wait.
    pub wait_max_ns: u64,
    /// CPU time spent spinning on it, all CPUs together.
    pub spin_ns: u64,
}

impl LockStats {
    /// Mean hold, ns (0 if never acquired).
    pub fn hold_mean_ns(&self) -> f64 {
        ratio(self.hold_total_ns, self.acquisitions)
    }

    /// Mean wait of a contended acquisition, ns (0 if none).
    pub fn wait_mean_ns(&self) -> f64 {
        ratio(self.wait_total_ns, self.contentions)
    }

    /// Fraction of acquisitions that were contended (lockmeter's CON).
    pub fn contention(&self) -> f64 {
        ratio(self.contentions, self.acquisitions)
    }
}

/// Where one CPU's time went, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Running a thread's work or holding a lock.
    pub busy_ns: u64,
    /// Spinning on a lock.
    pub spin_ns: u64,
    /// Switching to a thread ([`LockModel::switch_ns`]).
    pub switch_ns: u64,
    /// Running nothing.
    pub idle_ns: u64,
}

impl CpuTime {
    fn add(&mut self, o: &CpuTime) {
        self.busy_ns += o.busy_ns;
        self.spin_ns += o.spin_ns;
        self.switch_ns += o.switch_ns;
        self.idle_ns += o.idle_ns;
    }
}

/// What a run gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelResult {
    /// Virtual time simulated, ns.
    pub elapsed_ns: u64,
    /// I/Os (passes through its plan) each thread completed.
    pub ios: Vec<u64>,
    /// All threads' I/Os.
    pub total_ios: u64,
    /// Per lock, by index.
    pub locks: Vec<LockStats>,
    /// I/Os each device was given.
    pub device_ios: Vec<u64>,
    /// Per CPU.
    pub cpus: Vec<CpuTime>,
    /// All CPUs together.
    pub cpu_total: CpuTime,
    /// Times a CPU started running a thread.
    pub context_switches: u64,
    /// Times a thread was preempted at the end of its quantum.
    pub preemptions: u64,
}

impl ModelResult {
    /// I/Os per second of virtual time, all threads.
    pub fn iops(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.total_ios as f64 * 1e9 / self.elapsed_ns as f64
        }
    }
}

/// Run `model` from time 0 to `until_ns` of virtual time. Deterministic: the
/// same model (seed included) gives the same result.
pub fn run(model: &LockModel, until_ns: u64) -> Result<ModelResult, LockModelError> {
    model.validate()?;
    if until_ns > MAX_NS << 12 {
        return Err(LockModelError::TooLong {
            what: "run",
            ns: until_ns,
        });
    }
    let mut result = sim::Sim::new(model, until_ns).run();
    for c in &result.cpus {
        result.cpu_total.add(c);
    }
    result.total_ios = result.ios.iter().sum();
    Ok(result)
}
