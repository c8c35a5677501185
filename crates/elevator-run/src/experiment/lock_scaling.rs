//! The lock-scaling experiment (`elevator experiment lock-scaling`; its
//! source is `../shared/seeds/003_85dd265750d52fad.txt`: the 2001 lockmeter
//! report on Linux 2.4's global `io_request_lock`, LKML, "Lockmeter
//! Analysis of 2 DDs"): `dd` readers, 64 KiB sequential reads one at a time, each on its
//! own device, and then all on one device, under one lock over every queue
//! (`global`), a lock per queue (`queue`) and blk-mq (`mq`), for 1, 2, 4
//! and 8 readers. It prints the throughput, the lockmeter table of each
//! mode at the most readers, and checks the shape: `global` contends and
//! flattens as readers are added, `queue` removes the contention across
//! devices but not within one, `mq` scales within one device.

use std::fmt::Write;

use elevator_core::lockstat::{LockReport, LockStat};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::report::locks::lockmeter_table;
use elevator_fio::result::READ;
use elevator_io::DeviceSpec;
use elevator_io::mq::{LockMode, MAX_THREADS, ThreadConfig, run_threads};
use serde::Serialize;

use super::figure::{Axis, Figure, Mark, Series, XyPlot};
use super::{ExperimentError, Opts, Outcome, Progress, Shape, StepContext, lock_model};

/// Where the readers' devices are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Each reader on a device of its own.
    OwnDevices,
    /// Every reader on one device.
    OneDevice,
}

impl Layout {
    fn short(self) -> &'static str {
        match self {
            Layout::OwnDevices => "own devices",
            Layout::OneDevice => "one device",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Layout::OwnDevices => "readers on their own devices",
            Layout::OneDevice => "readers on one device",
        }
    }
}

/// One run: a layout, a lock mode, a reader count.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Where the readers' devices are.
    pub layout: Layout,
    /// The lock mode's name.
    pub lock: &'static str,
    /// Readers.
    pub readers: usize,
    /// Their throughput, MB/s.
    pub mb_per_s: f64,
    /// I/Os done.
    pub ios: u64,
    /// How long the run took, ns.
    pub elapsed_ns: u64,
    /// The whole process's CPU per I/O.
    pub cpu_ns_per_io: f64,
    /// The reader threads' CPU per I/O (their sum over the I/Os of all).
    pub thread_cpu_ns_per_io: f64,
    /// The shared locks' statistics.
    #[serde(skip)]
    pub locks: Vec<LockStat>,
    /// The locks in lockmeter's and lock_stat's terms.
    lock_report: serde_json::Value,
}

/// The seed's workload for `readers` readers: `dd if=/dev/rawN bs=64k`,
/// reading the device from its start again and again for `runtime_ms`.
fn job(readers: usize, runtime_ms: u64) -> Result<JobFile, ExperimentError> {
    let text = format!(
        "[global]\nrw=read\nbs=64k\niodepth=1\ntime_based\nruntime={runtime_ms}ms\n\
         [dd]\nnumjobs={readers}\nfilename=/dev/elevator\n"
    );
    JobFile::parse(&text, "lock-scaling").map_err(ExperimentError::from_source)
}

fn cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// Run every cell.
fn measure(
    args: &Params,
    spec: &DeviceSpec,
    seed: u64,
    progress: Progress,
) -> Result<Vec<Cell>, ExperimentError> {
    let runtime_ms = (args.runtime * 1000.0).round() as u64;
    let mut cells = Vec::new();
    let total = 2 * args.threads.len() * LockMode::ALL.len();
    for layout in [Layout::OwnDevices, Layout::OneDevice] {
        for &readers in &args.threads {
            for lock in LockMode::ALL {
                progress(
                    &format!("{}, {readers} readers, {}", layout.title(), lock.name()),
                    cells.len(),
                    total,
                );
                let ndev = match layout {
                    Layout::OwnDevices => readers,
                    Layout::OneDevice => 1,
                };
                let devices = (0..ndev)
                    .map(|_| spec.open())
                    .collect::<Result<Vec<_>, _>>()
                    .step(|| format!("opening {}", args.device))?;
                let cfg = ThreadConfig {
                    run: RunConfig {
                        plugins: Default::default(),
                        scheduler: args.scheduler.clone(),
                        tunables: Vec::new(),
                        seed,
                    },
                    lock,
                    lock_stats: true,
                };
                let jobs = job(readers, runtime_ms)?;
                let run = run_threads(&jobs, devices, |d| d.share(), &cfg, &mut |_| {})
                    .step(|| format!("{} readers, {} lock, {}", readers, lock, layout.title()))?;
                let r = &run.result;
                let bytes: u64 = r.jobs.iter().map(|j| j.dirs[READ].bytes).sum();
                let secs = r.elapsed.max(1) as f64 / 1e9;
                let lock_report = elevator_fio::report::locks::to_json(&LockReport {
                    elapsed_ns: r.elapsed,
                    cpus: cpus(),
                    locks: run.locks.clone(),
                });
                cells.push(Cell {
                    lock_report,
                    layout,
                    lock: lock.name(),
                    readers,
                    mb_per_s: bytes as f64 / secs / 1e6,
                    ios: r.ios,
                    elapsed_ns: r.elapsed,
                    cpu_ns_per_io: r.cpu.map_or(0.0, |c| c.per_io(r.ios)),
                    thread_cpu_ns_per_io: r.cpu.map_or(0.0, |c| c.thread_per_io(r.ios)),
                    locks: run.locks,
                });
            }
        }
    }
    Ok(cells)
}

fn cell(cells: &[Cell], layout: Layout, lock: LockMode, readers: usize) -> Option<&Cell> {
    cells
        .iter()
        .find(|c| c.layout == layout && c.lock == lock.name() && c.readers == readers)
}

/// Contention of the busiest lock of a cell, 0..=1 (0 if it took none).
fn con(c: &Cell) -> f64 {
    c.locks.iter().map(|l| l.con() / 100.0).fold(0.0, f64::max)
}

fn shapes(cells: &[Cell], lo: usize, hi: usize) -> Vec<Shape> {
    let get = |layout, lock, n| cell(cells, layout, lock, n);
    // `lock`'s contention with `hi` readers on `layout`, against `holds`.
    let contention = |layout, lock, claim: String, seed: &str, holds: fn(f64) -> bool| {
        get(layout, lock, hi).map(|c| Shape {
            claim,
            seed: seed.into(),
            ours: format!("CON {:.1}%", 100.0 * con(c)),
            holds: holds(con(c)),
        })
    };
    let scale = |lock, layout| -> Option<f64> {
        let a = get(layout, lock, lo)?;
        let b = get(layout, lock, hi)?;
        Some(b.mb_per_s / a.mb_per_s.max(1e-9))
    };
    // How locks `a` and `b` scale from `lo` to `hi` readers on `layout`.
    let scaling = |layout, (a, b), claim: String, seed: &str, holds: fn(f64, f64) -> bool| {
        let (x, y) = (scale(a, layout)?, scale(b, layout)?);
        Some(Shape {
            claim,
            seed: seed.into(),
            ours: format!("{x:.2}x vs {y:.2}x"),
            holds: holds(x, y),
        })
    };
    let contends = hi >= 2;
    [
        contention(
            Layout::OwnDevices,
            LockMode::Global,
            format!("global contends with {hi} readers on their own devices (CON > 0)"),
            "CON 59.4%, held 57.7% of the time (10 readers, 4 CPUs)",
            |c| c > 0.0,
        )
        .filter(|_| contends),
        scaling(
            Layout::OwnDevices,
            (LockMode::Global, LockMode::Queue),
            format!("global flattens: its MB/s from {lo} to {hi} readers grows less than queue's"),
            "2.49 of 4 CPUs held or spinning on the lock (10 readers)",
            |g, q| g < q,
        ),
        contention(
            Layout::OwnDevices,
            LockMode::Queue,
            "queue: no contention across devices (CON < 1%)".into(),
            "no figure (Linux 2.5's lock per queue came later)",
            |c| c < 0.01,
        ),
        contention(
            Layout::OneDevice,
            LockMode::Queue,
            format!("queue contends within one device with {hi} readers (CON > 0)"),
            "no figure (why blk-mq came, in 2013)",
            |c| c > 0.0,
        )
        .filter(|_| contends),
        scaling(
            Layout::OneDevice,
            (LockMode::Mq, LockMode::Queue),
            format!("mq scales within one device: from {lo} to {hi} readers, more than queue"),
            "no figure (blk-mq's per-CPU queues came later)",
            |m, q| m > q,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// What lock-scaling runs: the readers' device, reader counts, seconds per
/// run, the scheduler.
#[derive(Clone, Debug)]
pub struct Params {
    /// The device each reader reads, as `DeviceSpec::parse` takes it.
    pub device: String,
    /// Reader counts, each 1 to `MAX_THREADS`.
    pub threads: Vec<usize>,
    /// Seconds each run lasts, more than 0 and at most 3600.
    pub runtime: f64,
    /// The scheduler every queue runs.
    pub scheduler: String,
}

impl Params {
    /// The reader counts and seconds per run when none are given: 1, 2, 4
    /// and 8 readers for 2 s, or with `quick` 1 and 2 readers for 0.5 s.
    pub fn defaults(quick: bool) -> (Vec<usize>, f64) {
        if quick {
            (vec![1, 2], 0.5)
        } else {
            (vec![1, 2, 4, 8], 2.0)
        }
    }
}

/// What the experiment measured: every layout, lock mode and reader count.
#[derive(Clone, Debug)]
pub struct Results {
    /// What ran.
    pub params: Params,
    /// This machine's CPUs.
    pub cpus: u32,
    /// Every run.
    pub cells: Vec<Cell>,
}

impl Results {
    /// The fewest and most readers run.
    fn range(&self) -> (usize, usize) {
        let t = &self.params.threads;
        (
            t.iter().copied().min().unwrap_or(1),
            t.iter().copied().max().unwrap_or(1),
        )
    }
}

/// Measure every layout, lock mode and reader count.
pub fn measure_all(
    args: &Params,
    opts: &Opts,
    progress: Progress,
) -> Result<Results, ExperimentError> {
    if args.threads.is_empty() || args.threads.iter().any(|&n| n == 0 || n > MAX_THREADS) {
        return Err(ExperimentError::Params(format!(
            "--threads takes reader counts of 1 to {MAX_THREADS}, e.g. 1,2,4,8"
        )));
    }
    if !(args.runtime > 0.0 && args.runtime <= 3600.0) {
        return Err(ExperimentError::Params(
            "--runtime takes seconds, more than 0 and at most 3600".to_string(),
        ));
    }
    let spec = DeviceSpec::parse(&args.device).map_err(ExperimentError::from_source)?;
    let cells = measure(args, &spec, opts.seed, progress)?;
    Ok(Results {
        params: args.clone(),
        cpus: cpus(),
        cells,
    })
}

/// Run the experiment: measure, then check, fit the model and render.
pub fn outcome(args: &Params, opts: &Opts, progress: Progress) -> Result<Outcome, ExperimentError> {
    Ok(outcome_of(&measure_all(args, opts, progress)?))
}

/// The model fitted to measured results: its fits, its checks against this
/// machine's runs, and its predictions.
#[derive(Clone, Debug, Serialize)]
pub struct Model {
    /// Each mode's fit.
    pub fits: Vec<lock_model::Fit>,
    /// The model against the runs it can be checked against.
    pub checks: Vec<lock_model::Prediction>,
    /// Predictions for more CPUs.
    pub predictions: Vec<lock_model::Prediction>,
}

/// Fit the model to measured results and ask it for more CPUs.
pub fn model(r: &Results) -> Model {
    let fits = lock_model::fit(&r.cells);
    let checks = lock_model::checks(&fits, &r.cells, r.cpus);
    let predictions = lock_model::predictions(&fits);
    Model {
        fits,
        checks,
        predictions,
    }
}

/// The outcome of measured results: table, JSON, shapes and plots.
pub fn outcome_of(r: &Results) -> Outcome {
    let model = model(r);
    let (lo, hi) = r.range();
    Outcome {
        name: "lock-scaling",
        seed: "003",
        title: "The global io_request_lock (LKML 2001): dd readers under one lock, a lock per \
                queue and blk-mq"
            .into(),
        table: table(r, &model),
        data: data(r, &model),
        shapes: shapes(&r.cells, lo, hi),
        figures: figures(&r.cells, &r.params.threads),
        notes: Vec::new(),
    }
}

/// Every run and the model, as JSON.
pub fn data(r: &Results, model: &Model) -> serde_json::Value {
    let args = &r.params;
    serde_json::json!({
        "experiment": "lock-scaling",
        "device": args.device,
        "scheduler": args.scheduler,
        "runtime_s": args.runtime,
        "cpus": r.cpus,
        "runs": r.cells,
        "model": model,
    })
}

/// The table: MB/s per layout, lock mode and readers, each mode's
/// lockmeter table at the most readers, and the model's part.
pub fn table(r: &Results, model: &Model) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_table(&mut out, r, model);
    out
}

fn write_table(out: &mut String, r: &Results, model: &Model) -> std::fmt::Result {
    let (args, cells, cpus) = (&r.params, &r.cells, r.cpus);
    let (_, hi) = r.range();
    writeln!(
        out,
        "Seed 003: dd readers (64 KiB sequential reads, one at a time) under one global lock, a lock per\n\
         queue and blk-mq; device {}, scheduler {}, {} s per run, {} CPUs here",
        args.device, args.scheduler, args.runtime, cpus
    )?;
    for layout in [Layout::OwnDevices, Layout::OneDevice] {
        writeln!(out, "\n{} (MB/s):", layout.title())?;
        let mut head = format!("  {:<8}", "lock");
        for n in &args.threads {
            head.push_str(&format!("{:>10}", format!("N={n}")));
        }
        head.push_str(&format!("{:>12}", format!("CON at {hi}")));
        writeln!(out, "{head}")?;
        for lock in LockMode::ALL {
            let mut line = format!("  {:<8}", lock.name());
            for &n in &args.threads {
                let v = cell(cells, layout, lock, n).map_or(0.0, |c| c.mb_per_s);
                line.push_str(&format!("{v:>10.0}"));
            }
            let c = cell(cells, layout, lock, hi).map_or(0.0, con);
            line.push_str(&format!("{:>11.1}%", 100.0 * c));
            writeln!(out, "{line}")?;
        }
    }
    for layout in [Layout::OwnDevices, Layout::OneDevice] {
        for lock in LockMode::ALL {
            let Some(c) = cell(cells, layout, lock, hi) else {
                continue;
            };
            writeln!(out, "\nlockmeter, {lock}, {hi} {}:", layout.title())?;
            if c.locks.is_empty() {
                writeln!(
                    out,
                    "  (no shared lock: each reader's queue is its own, tags are shared lock-free)"
                )?;
                continue;
            }
            let report = LockReport {
                elapsed_ns: c.elapsed_ns,
                cpus,
                locks: c.locks.clone(),
            };
            write!(out, "{}", lockmeter_table(&report))?;
        }
    }
    write_model(out, &model.fits, &model.checks, &model.predictions)?;
    writeln!(out)
}

/// Throughput against readers per lock mode, and the busiest lock's mean
/// hold and wait, per layout.
fn figures(cells: &[Cell], threads: &[usize]) -> Vec<Figure> {
    let mut out = Vec::new();
    let per_mode = |layout: Layout, f: &dyn Fn(&Cell) -> Option<f64>| -> Vec<Series> {
        LockMode::ALL
            .iter()
            .map(|&lock| Series {
                label: format!("{}, {}", lock.name(), layout.short()),
                points: threads
                    .iter()
                    .filter_map(|&n| {
                        let c = cell(cells, layout, lock, n)?;
                        Some((n as f64, f(c)?))
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    for layout in [Layout::OwnDevices, Layout::OneDevice] {
        out.push(Figure::Xy(XyPlot {
            title: format!("MB/s against readers, {}, per lock design", layout.title()),
            x: Axis::linear("readers"),
            y: Axis::linear("MB/s"),
            mark: Mark::LinesPoints,
            panels: false,
            series: per_mode(layout, &|c| Some(c.mb_per_s)),
        }));
    }
    let busiest = |c: &Cell| c.locks.iter().max_by_key(|l| l.hold_total_ns).cloned();
    let hold = |c: &Cell| {
        let l = busiest(c)?;
        (l.acquisitions > 0).then(|| l.hold_total_ns as f64 / l.acquisitions as f64)
    };
    let wait = |c: &Cell| {
        let l = busiest(c)?;
        Some(l.wait_total_ns as f64 / l.contentions.max(1) as f64)
    };
    let both = |f: &dyn Fn(&Cell) -> Option<f64>| {
        let mut s = per_mode(Layout::OwnDevices, f);
        s.extend(per_mode(Layout::OneDevice, f));
        s
    };
    out.push(Figure::Xy(XyPlot {
        title: "Mean hold of the busiest shared lock against readers (mq has none)".into(),
        x: Axis::linear("readers"),
        y: Axis::linear("mean hold (ns)"),
        mark: Mark::LinesPoints,
        panels: false,
        series: both(&hold),
    }));
    out.push(Figure::Xy(XyPlot {
        title: "Mean wait of a contended acquisition of the busiest lock against readers".into(),
        x: Axis::linear("readers"),
        y: Axis::linear("mean wait (ns)"),
        mark: Mark::LinesPoints,
        panels: false,
        series: both(&wait),
    }));
    out
}

/// The model's part of the report: its fit, its check against this
/// machine's runs, its predictions.
fn write_model(
    out: &mut String,
    fits: &[lock_model::Fit],
    checks: &[lock_model::Prediction],
    predictions: &[lock_model::Prediction],
) -> std::fmt::Result {
    writeln!(
        out,
        "\nModel (elevator-sim's CPUs contending for locks on a virtual clock), fitted per mode to its\n\
         1-reader run: per I/O, CPU outside the shared lock, and the lock's acquisitions and mean hold"
    )?;
    for f in fits {
        writeln!(
            out,
            "  {:<7} {:>8.0} ns outside, {:>4.2} acquisitions of {:>6.0} ns",
            f.lock, f.outside_ns, f.acquisitions_per_io, f.hold_ns
        )?;
    }
    writeln!(out, "checked against this machine's runs (MB/s):")?;
    writeln!(
        out,
        "  {:<7} {:>7} {:>8} {:>10} {:>8} {:>8}",
        "lock", "readers", "devices", "measured", "model", "ratio"
    )?;
    for p in checks {
        let m = p.measured_mb_per_s.unwrap_or(0.0);
        writeln!(
            out,
            "  {:<7} {:>7} {:>8} {:>10.0} {:>8.0} {:>8.2}",
            p.lock,
            p.readers,
            p.devices,
            m,
            p.mb_per_s,
            p.mb_per_s / m.max(1e-9)
        )?;
    }
    writeln!(
        out,
        "predicted MB/s (CON of the busiest lock) of N readers on N CPUs, on their own devices /\n\
         on one device, and of the seed's 10 readers on 4 CPUs (2001):"
    )?;
    writeln!(
        out,
        "  {:<7} {:>22} {:>22} {:>22} {:>14}",
        "lock", "4 CPUs", "16 CPUs", "64 CPUs", "2001"
    )?;
    let locks: Vec<&str> = fits.iter().map(|f| f.lock).collect();
    for lock in locks {
        let mut line = format!("  {lock:<7}");
        for cpus in [4u32, 16, 64] {
            let get = |devices: usize| {
                predictions.iter().find(|p| {
                    p.lock == lock
                        && p.cpus == cpus
                        && p.readers == cpus as usize
                        && p.devices == devices
                })
            };
            let own = get(cpus as usize);
            let one = get(1);
            let cell = match (own, one) {
                (Some(a), Some(b)) => format!(
                    "{:.0} ({:.0}%) / {:.0}",
                    a.mb_per_s,
                    100.0 * a.con,
                    b.mb_per_s
                ),
                _ => "-".into(),
            };
            line.push_str(&format!(" {cell:>22}"));
        }
        let seed = predictions
            .iter()
            .find(|p| p.lock == lock && p.cpus == 4 && p.readers == 10);
        let cell = seed.map_or("-".into(), |p| {
            format!("{:.0} ({:.0}%)", p.mb_per_s, 100.0 * p.con)
        });
        line.push_str(&format!(" {cell:>14}"));
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}
