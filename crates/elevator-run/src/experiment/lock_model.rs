//! Past this machine's CPUs: the lock-scaling experiment's runs fitted into
//! elevator-sim's model of CPUs contending for locks on a virtual clock
//! ([`elevator_sim::lockmodel`]), checked against the runs it can be checked
//! against, and asked for 4, 16 and 64 CPUs and for the 2001 report's
//! machine (4 CPUs, 10 readers on 10 devices).
//!
//! The fit, per lock mode, from that mode's 1-reader run on its own device:
//! the CPU time of the reader's thread per I/O, and per shared lock its
//! acquisitions per I/O and its mean hold. An I/O is then that many rounds
//! of work outside the lock (the CPU time not spent holding it, split
//! evenly) followed by a hold, each drawn within ±20% of its mean. The locks
//! are the layer's own: futex mutexes that spin briefly and then sleep. The
//! devices are memory, so an I/O is CPU time only (a device with a service
//! time would free the CPU while it works; the model supports it, this fit
//! does not need it). What the model leaves out (caches, memory bandwidth,
//! a lock's cache line moving between CPUs) is in
//! [`elevator_sim::lockmodel`]'s documentation; the check against this
//! machine says how much that matters at 2 CPUs.

use elevator_sim::lockmodel::{self, Dist, LockKind, LockModel, Step, ThreadPlan};
use serde::Serialize;

use super::lock_scaling::{Cell, Layout};
use elevator_io::mq::LockMode;

/// How long a blocking lock's waiter spins before it sleeps (the std
/// mutex's spin, about a hundred tries of the lock).
const SPIN_NS: u64 = 500;
/// The seed of the model's jitter (fixed: a prediction is the same every
/// time).
const MODEL_SEED: u64 = 0x5EED_0003;
/// Virtual time each prediction runs.
const RUN_NS: u64 = 200_000_000;
/// The bytes each I/O moves.
const BS: f64 = 65536.0;

/// What one mode's 1-reader run says about an I/O.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    /// The lock mode.
    pub lock: &'static str,
    /// CPU time per I/O outside any shared lock, ns.
    pub outside_ns: f64,
    /// Shared-lock acquisitions per I/O.
    pub acquisitions_per_io: f64,
    /// Mean hold, ns.
    pub hold_ns: f64,
}

/// A prediction, or a check against a measured run.
#[derive(Clone, Debug, Serialize)]
pub struct Prediction {
    /// The lock mode.
    pub lock: &'static str,
    /// CPUs modelled.
    pub cpus: u32,
    /// Readers.
    pub readers: usize,
    /// Devices they read (each reader its own, or all one).
    pub devices: usize,
    /// Predicted MB/s.
    pub mb_per_s: f64,
    /// Predicted contention of the busiest lock, 0..=1.
    pub con: f64,
    /// Measured MB/s, where this is a check.
    pub measured_mb_per_s: Option<f64>,
}

/// Fit each mode from its fewest-readers run on its own device.
pub fn fit(cells: &[Cell]) -> Vec<Fit> {
    let mut out = Vec::new();
    for lock in LockMode::ALL {
        let Some(c) = cells
            .iter()
            .filter(|c| c.layout == Layout::OwnDevices && c.lock == lock.name())
            .min_by_key(|c| c.readers)
        else {
            continue;
        };
        let ios = c.ios.max(1) as f64;
        let acq: u64 = c.locks.iter().map(|l| l.acquisitions).sum();
        let hold: u64 = c.locks.iter().map(|l| l.hold_total_ns).sum();
        let per_io = acq as f64 / ios;
        let hold_ns = if acq > 0 {
            hold as f64 / acq as f64
        } else {
            0.0
        };
        let thread = c.thread_cpu_ns_per_io;
        out.push(Fit {
            lock: lock.name(),
            outside_ns: (thread - per_io * hold_ns).max(1.0),
            acquisitions_per_io: per_io,
            hold_ns,
        });
    }
    out
}

/// The model of `fit` for `readers` readers over `devices` devices on
/// `cpus` CPUs.
fn model(fit: &Fit, cpus: u32, readers: usize, devices: usize, seed: u64) -> LockModel {
    let mut m = LockModel::new(cpus);
    m.seed = seed;
    let rounds = fit.acquisitions_per_io.round().max(1.0) as usize;
    let locked = fit.acquisitions_per_io > 0.0 && fit.hold_ns > 0.0;
    let global = fit.lock == LockMode::Global.name();
    let nlocks = if !locked {
        0
    } else if global {
        1
    } else {
        devices
    };
    m.locks = vec![LockKind::Blocking { spin_ns: SPIN_NS }; nlocks];
    let work = (fit.outside_ns / rounds as f64).max(1.0) as u64;
    let hold = fit.hold_ns.max(1.0) as u64;
    m.threads = (0..readers)
        .map(|r| {
            let lock = if global { 0 } else { r % devices.max(1) };
            let mut steps = Vec::new();
            for _ in 0..rounds {
                steps.push(Step::cpu(Dist::jitter(work, 20)));
                if locked {
                    steps.push(Step::lock(lock, Dist::jitter(hold, 20)));
                }
            }
            ThreadPlan::new(steps)
        })
        .collect();
    m
}

/// Run the model of `fit`; `None` if the model refuses it (it says why in
/// its error, which a prediction has no room for).
fn predict(fit: &Fit, cpus: u32, readers: usize, devices: usize) -> Option<Prediction> {
    let m = model(fit, cpus, readers, devices, MODEL_SEED);
    let r = lockmodel::run(&m, RUN_NS).ok()?;
    let secs = r.elapsed_ns.max(1) as f64 / 1e9;
    Some(Prediction {
        lock: fit.lock,
        cpus,
        readers,
        devices,
        mb_per_s: r.total_ios as f64 * BS / secs / 1e6,
        con: r.locks.iter().map(|l| l.contention()).fold(0.0, f64::max),
        measured_mb_per_s: None,
    })
}

/// The model against every measured run with at most as many readers as
/// this machine has CPUs.
pub fn checks(fits: &[Fit], cells: &[Cell], cpus: u32) -> Vec<Prediction> {
    let mut out = Vec::new();
    for c in cells.iter().filter(|c| c.readers <= cpus as usize) {
        let Some(fit) = fits.iter().find(|f| f.lock == c.lock) else {
            continue;
        };
        let devices = match c.layout {
            Layout::OwnDevices => c.readers,
            Layout::OneDevice => 1,
        };
        if let Some(mut p) = predict(fit, cpus, c.readers, devices) {
            p.measured_mb_per_s = Some(c.mb_per_s);
            out.push(p);
        }
    }
    out
}

/// Predictions for 4, 16 and 64 CPUs (as many readers, each on its own
/// device, and all on one device), and the 2001 report's machine.
pub fn predictions(fits: &[Fit]) -> Vec<Prediction> {
    let mut out = Vec::new();
    for fit in fits {
        for cpus in [4u32, 16, 64] {
            let n = cpus as usize;
            out.extend(predict(fit, cpus, n, n));
            out.extend(predict(fit, cpus, n, 1));
        }
        out.extend(predict(fit, 4, 10, 10));
    }
    out
}
