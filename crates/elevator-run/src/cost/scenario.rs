//! The guarded scenarios, by name, and running one in this process: what
//! `elevator cost-scenario run NAME` does under valgrind.
//!
//! - `core/SCHED/dDEPTH`: elevator-core's path per bio (submit, merge
//!   attempt, insert, dispatch, complete) at a depth, random 4 KiB reads,
//!   [`crate::microbench`]'s loop; `cell/SCHED/PATTERN/nmN/dDEPTH` is any
//!   such case (the experiments count theirs this way).
//! - `sim/hdd-randread-qd32` and `sim/hdd-randread-qd32-norandommap`: the
//!   simulator's event loop on `hdd-7200`, fio's random map on and off, per
//!   simulated I/O.
//! - `trace/tracefs-replay`: parsing and replaying a tracefs text trace
//!   (synthetic, written before the count) on the null device, per record.
//! - `nbd/mem-rw`: the NBD server's request path on a memory export, per
//!   request (4 KiB reads and writes from a client thread, one at a time).
//! - `io/mem-randread-qd32`: the io engine's submit and complete on a
//!   memory device, per I/O.

use std::io::BufWriter;

use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_trace::replay::{Events, FlushModel, Timing};

use super::{CostError, measured};
use crate::listener::Quiet;
use crate::microbench::{Case, Pattern, Prepared};
use crate::replay::{ReplayOptions, replay};
use crate::target::Target;
use crate::{Taps, jobs::JobsRequest};

/// How a scenario's instructions are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counting {
    /// Once: [`measured`] holds only the operations counted (the core
    /// loops, set up and warmed up before it).
    Region,
    /// Twice, at the scenario's operations and at twice as many, inside
    /// [`measured`]: the difference per operation, so that what a run costs
    /// once (building a device, allocating the random map, opening a
    /// trace) cancels out.
    RegionDelta,
    /// Twice as [`Counting::RegionDelta`], but every thread of the process
    /// except the one that ran the function named here (a client thread's
    /// body): for work that runs on threads the scenario does not own (the
    /// NBD server's).
    ProcessDelta(&'static str),
}

/// A guarded scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// Its name: `core/mq-deadline/d128`.
    pub name: String,
    /// What one operation is: `bio`, `simulated I/O`, `record`, `request`.
    pub unit: &'static str,
    /// Operations it runs (under [`Counting::RegionDelta`], the smaller
    /// run's).
    pub ops: u64,
    /// How it is counted.
    pub counting: Counting,
    /// Whether growth past the threshold fails the guard: false for a
    /// scenario whose count varies between runs by more than the threshold
    /// (it is counted and printed, not judged).
    pub gated: bool,
}

/// The schedulers the core scenarios measure.
pub const CORE_SCHEDULERS: [&str; 6] = [
    "none",
    "mq-deadline",
    "deadline-list",
    "kyber",
    "cfq",
    "bfq",
];
/// The depths the core scenarios measure.
pub const CORE_DEPTHS: [u32; 2] = [128, 4096];

/// Requests the pretend device of the core scenarios holds.
const CORE_INFLIGHT: u32 = 32;
/// Seed of the core scenarios' positions.
const CORE_SEED: u64 = 0x5EED_0028;

/// Every guarded scenario, in the order the guard runs and prints them.
pub fn all() -> Vec<Scenario> {
    let mut out = Vec::new();
    for sched in CORE_SCHEDULERS {
        for depth in CORE_DEPTHS {
            out.push(Scenario {
                name: format!("core/{sched}/d{depth}"),
                unit: "bio",
                ops: cell_ios(sched, depth),
                counting: Counting::Region,
                gated: true,
            });
        }
    }
    for name in ["sim/hdd-randread-qd32", "sim/hdd-randread-qd32-norandommap"] {
        out.push(Scenario {
            name: name.to_string(),
            unit: "simulated I/O",
            ops: 20_000,
            counting: Counting::RegionDelta,
            gated: true,
        });
    }
    out.push(Scenario {
        name: "trace/tracefs-replay".to_string(),
        unit: "record",
        ops: 40_000,
        counting: Counting::RegionDelta,
        gated: true,
    });
    out.push(Scenario {
        name: "nbd/mem-rw".to_string(),
        unit: "request",
        ops: 4_000,
        counting: Counting::ProcessDelta(super::nbd::CLIENT_SYMBOL),
        // Varies by up to 9 % between runs: how many passes the server's
        // event loop makes per request depends on how its thread and the
        // client's are scheduled. Printed, not judged, until it is steady.
        gated: false,
    });
    out.push(Scenario {
        name: "io/mem-randread-qd32".to_string(),
        unit: "I/O",
        ops: 20_000,
        counting: Counting::RegionDelta,
        gated: true,
    });
    out
}

/// The bios a core cell counts: fewer where one costs thousands of
/// instructions (the O(N) list at depth), so that a scenario stays within
/// seconds under callgrind.
pub fn cell_ios(scheduler: &str, depth: u32) -> u64 {
    if scheduler == "deadline-list" && depth > 256 {
        (20_000 * 256 / u64::from(depth)).max(2_000)
    } else {
        20_000
    }
}

/// The scenario called `name`: one of [`all`], or a core cell
/// (`cell/SCHED/PATTERN/nmN/dDEPTH`).
pub fn find(name: &str) -> Result<Scenario, CostError> {
    if let Some(s) = all().into_iter().find(|s| s.name == name) {
        return Ok(s);
    }
    if let Some(case) = parse_cell(name) {
        return Ok(Scenario {
            name: name.to_string(),
            unit: "bio",
            ops: case.ios,
            counting: Counting::Region,
            gated: true,
        });
    }
    Err(CostError::UnknownScenario {
        name: name.to_string(),
        known: all()
            .iter()
            .map(|s| s.name.as_str())
            .chain(["cell/SCHED/random|sequential/nm0|1|2/dDEPTH"])
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// The name of the core cell of `scheduler`, `pattern`, `nomerges` and
/// `depth` (4 KiB bios, 32 in flight).
pub fn cell_name(scheduler: &str, pattern: Pattern, nomerges: u8, depth: u32) -> String {
    format!("cell/{scheduler}/{}/nm{nomerges}/d{depth}", pattern.name())
}

/// The microbench case a `core/...` or `cell/...` name stands for.
fn parse_cell(name: &str) -> Option<Case<'static>> {
    let parts: Vec<&str> = name.split('/').collect();
    let (sched, pattern, nomerges, depth) = match parts.as_slice() {
        ["core", s, d] => (*s, Pattern::Random, 0, *d),
        ["cell", s, p, nm, d] => {
            let pattern = match *p {
                "random" => Pattern::Random,
                "sequential" => Pattern::Sequential,
                _ => return None,
            };
            let nomerges: u8 = nm.strip_prefix("nm")?.parse().ok().filter(|n| *n <= 2)?;
            (*s, pattern, nomerges, *d)
        }
        _ => return None,
    };
    let depth: u32 = depth.strip_prefix('d')?.parse().ok().filter(|d| *d >= 1)?;
    // The case borrows the scheduler's name: keep the static one.
    let scheduler = elevator_core::SCHEDULER_NAMES
        .iter()
        .copied()
        .find(|n| *n == sched)?;
    Some(Case {
        scheduler,
        depth,
        pattern,
        nomerges,
        bs: 4096,
        ios: cell_ios(scheduler, depth),
        inflight: CORE_INFLIGHT,
        seed: CORE_SEED,
    })
}

/// Run the scenario `name` with `ops` operations in this process, its
/// counted part inside [`measured`]. Returns the operations it ran (a
/// trace's records may round up).
pub fn run(name: &str, ops: u64) -> Result<u64, CostError> {
    let scenario = find(name)?;
    let fail = |e: &dyn std::fmt::Display| CostError::Scenario {
        name: name.to_string(),
        source: e.to_string().into(),
    };
    if let Some(mut case) = parse_cell(name) {
        case.ios = ops;
        let mut prepared = Prepared::new(&case, &[]).map_err(|e| CostError::scenario(name, e))?;
        let mut result = Ok(());
        measured(&mut || result = prepared.run(ops));
        result.map_err(|e| CostError::scenario(name, e))?;
        prepared
            .finish()
            .map_err(|e| CostError::scenario(name, e))?;
        return Ok(ops);
    }
    match scenario.name.as_str() {
        "sim/hdd-randread-qd32" => simulate(name, ops, false),
        "sim/hdd-randread-qd32-norandommap" => simulate(name, ops, true),
        "trace/tracefs-replay" => replay_trace(name, ops),
        "nbd/mem-rw" => super::nbd::run(ops).map_err(|e| fail(&e)),
        "io/mem-randread-qd32" => super::io_mem::run(ops).map_err(|e| fail(&e)),
        _ => Err(fail(&"has no runner")),
    }
}

/// The simulator's scenario: 4 KiB random reads over the whole `hdd-7200`
/// at depth 32, `ops` of them, fio's random map on unless `norandommap`.
fn simulate(name: &str, ops: u64, norandommap: bool) -> Result<u64, CostError> {
    let text = format!(
        "[randread]\nfilename=/dev/sda\nrw=randread\nbs=4k\ndirect=1\nioengine=libaio\n\
         iodepth=32\nnumber_ios={ops}\n{}",
        if norandommap { "norandommap\n" } else { "" }
    );
    let jobs = JobFile::parse(&text, name).map_err(|e| CostError::scenario(name, e))?;
    let target = Target::parse("hdd-7200").map_err(|e| CostError::scenario(name, e))?;
    let cfg = RunConfig {
        seed: 28,
        ..RunConfig::default()
    };
    let taps = Taps::default();
    let request = JobsRequest {
        jobs: &jobs,
        target: &target,
        cfg: &cfg,
        taps: &taps,
    };
    let mut run = None;
    measured(&mut || run = Some(request.run_strict(&mut Quiet)));
    let run = run
        .ok_or_else(|| CostError::scenario(name, std::io::Error::other("did not run")))?
        .map_err(|e| CostError::scenario(name, e))?;
    Ok(run
        .result
        .jobs
        .iter()
        .flat_map(|j| j.dirs.iter().map(|d| d.ios))
        .sum())
}

/// The trace scenario: `ops` records of synthetic tracefs text, written to
/// a temporary file first, replayed as fast as the null device takes them.
fn replay_trace(name: &str, ops: u64) -> Result<u64, CostError> {
    let io = |e: std::io::Error| CostError::scenario(name, e);
    let path = std::env::temp_dir().join(format!("elevator-cost-{}.trace", std::process::id()));
    let file = std::fs::File::create(&path).map_err(io)?;
    let written = {
        let mut w = BufWriter::new(file);
        elevator_trace::synthetic::kernel_text::write(&mut w, ops)
            .and_then(|()| std::io::Write::flush(&mut w))
    };
    let result = written.map_err(io).and_then(|()| {
        let opts = ReplayOptions {
            plugins: Default::default(),
            trace: path.display().to_string(),
            format: Some(elevator_trace::Format::Tracefs),
            scheduler: "mq-deadline".to_string(),
            tunables: Vec::new(),
            events: Events::Queued,
            timing: Timing::Asap,
            dev: None,
            skip_bad: false,
            reorder_window: elevator_trace::reorder::ReorderWindow::DEFAULT,
            flush: FlushModel::default(),
        };
        let target = Target::parse("null").map_err(|e| CostError::scenario(name, e))?;
        let mut run = None;
        measured(&mut || run = Some(replay(&opts, &target, &Taps::default(), &mut Quiet)));
        let run = run
            .ok_or_else(|| CostError::scenario(name, std::io::Error::other("did not run")))?
            .map_err(|e| CostError::scenario(name, e))?;
        Ok(run.records)
    });
    // The trace is a scratch file: a failure to remove it changes nothing.
    let _ = std::fs::remove_file(&path);
    result
}
