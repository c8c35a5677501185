//! `elevator experiment direct-io` reproduces Ken Chen's "optimize o_direct
//! on block device" (its source is `../shared/seeds/001_c3a11612cc59a530.txt`:
//! LKML, November 2006): a tight submission loop for O_DIRECT on a block
//! device took the kernel's submit-and-complete path
//! for one 4 KiB I/O from 5.17 µs to 4.26 µs, about 20% in a micro-benchmark.
//!
//! elevator's direct-I/O path is such a loop in user space: a job's I/O
//! becomes a bio, goes through the queue and its scheduler, and is submitted
//! as an io_uring read on a file opened with O_DIRECT. The baseline is fio's
//! io_uring engine, the tightest ordinary submitter, on the same file with
//! the same job: 4 KiB random reads at depth 32 over a temporary file in
//! /dev/shm (or `$TMPDIR`). The kernel below both is the same, so what
//! differs is what each puts on top of it, in IOPS and CPU per I/O.
//!
//! This module owns the file, the job, the shapes and the plots; the runs
//! and their figures are `elevator bench-vs-fio`'s
//! ([`crate::bench_fio::compare`]). Without fio the experiment still
//! succeeds, with its shapes marked "not run".

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use elevator_core::rng::splitmix64;
use elevator_io::DeviceSpec;
use serde_json::json;

use crate::bench_fio::{Bench, Comparison, Figures, compare, table as fio_table};
use crate::run::ThreadArgs;
use elevator_run::experiment::figure::{Axis, Figure, Mark, Series, XyPlot};
use elevator_run::experiment::{Opts, Outcome, Progress, Shape};

/// The fio binary.
const FIO: &str = "fio";
/// I/O depth of the job.
const IODEPTH: u32 = 32;
/// The targets, as ratios to fio: `none`'s IOPS at least, `none`'s CPU per
/// I/O (submitting thread) at most, `mq-deadline`'s IOPS at least.
const NONE_IOPS_MIN: f64 = 1.0;
const NONE_CPU_MAX: f64 = 1.05;
const MQ_IOPS_MIN: f64 = 0.95;
/// The seed's figures: µs per 4 KiB O_DIRECT I/O, submit and completion,
/// stock 2.6.19 and with the tight loop.
const SEED_STOCK_US: f64 = 5.17;
const SEED_TIGHT_US: f64 = 4.26;

/// How big and long the runs are.
struct Plan {
    size_mib: u64,
    runtime_s: u32,
    rounds: u32,
}

/// A scratch file, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Run the experiment.
pub fn outcome(opts: &Opts, progress: Progress) -> Result<Outcome> {
    let plan = if opts.quick {
        Plan {
            size_mib: 64,
            runtime_s: 1,
            rounds: 3,
        }
    } else {
        Plan {
            size_mib: 256,
            runtime_s: 5,
            rounds: 5,
        }
    };
    let schedulers = vec!["none".to_string(), "mq-deadline".to_string()];
    let fio_version = Command::new(FIO)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let Some(fio_version) = fio_version else {
        return Ok(not_run(&plan));
    };

    let dir = scratch_dir();
    let scratch = Scratch(dir.join(format!("elevator-direct-io-{}.img", std::process::id())));
    progress(
        &format!("writing {} MiB to {}", plan.size_mib, scratch.0.display()),
        0,
        1,
    );
    fill(&scratch.0, plan.size_mib << 20, opts.seed)?;
    let spec = DeviceSpec::parse(&format!("file:{}", scratch.0.display()))
        .with_context(|| format!("opening {}", scratch.0.display()))?;
    let job = format!(
        "; elevator experiment direct-io: 4 KiB random reads at depth {IODEPTH}\n\
         [global]\nbs=4k\nioengine=libaio\niodepth={IODEPTH}\nruntime={}\ntime_based\n\n[randread]\nrw=randread\n",
        plan.runtime_s
    );
    let threads = ThreadArgs::default();
    let bench = Bench {
        text: &job,
        jobfile: "direct-io.fio",
        device: &spec,
        schedulers: &schedulers,
        tunables: &[],
        rounds: plan.rounds,
        fio: FIO,
        threads: &threads,
    };
    let cmp = compare(&bench, &mut *progress).context("running fio and elevator")?;
    drop(scratch);
    let steps = plan.rounds as usize * (1 + schedulers.len());
    progress("done", steps, steps);
    Ok(measured(&plan, &dir, &fio_version, &cmp))
}

/// /dev/shm if there is one, else the temporary directory (`$TMPDIR`).
fn scratch_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Mixed into `--seed` for the scratch file's data.
const FILL_SALT: u64 = 0x5EED_0001;

/// Write `bytes` of pseudo-random data to `path` (every page allocated, so
/// reads cost what reads of real data cost).
fn fill(path: &Path, bytes: u64, seed: u64) -> Result<()> {
    let mut f = std::fs::File::create(path)
        .with_context(|| format!("creating the scratch file {}", path.display()))?;
    let mut state = seed ^ FILL_SALT;
    let mut chunk = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        for word in chunk.chunks_exact_mut(8) {
            word.copy_from_slice(&splitmix64(&mut state).to_le_bytes());
        }
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])
            .with_context(|| format!("writing the scratch file {}", path.display()))?;
        left -= n as u64;
    }
    f.sync_all()
        .with_context(|| format!("writing the scratch file {}", path.display()))?;
    Ok(())
}

/// The claims, with the seed's figures, whatever elevator measured.
fn claims() -> [(String, String); 3] {
    let seed_cpu = format!(
        "tight O_DIRECT loop: {SEED_STOCK_US} -> {SEED_TIGHT_US} us per 4 KiB I/O, submit and \
         completion ({:.2}x), '~20% speedup for micro-benchmark'",
        SEED_TIGHT_US / SEED_STOCK_US
    );
    [
        (
            format!("elevator none: IOPS at least {NONE_IOPS_MIN:.2}x fio io_uring's"),
            seed_cpu.clone(),
        ),
        (
            format!(
                "elevator none: CPU per I/O (submitting thread) at most {NONE_CPU_MAX:.2}x \
                 fio io_uring's"
            ),
            seed_cpu,
        ),
        (
            format!("elevator mq-deadline: IOPS at least {MQ_IOPS_MIN:.2}x fio io_uring's"),
            "no figure: the seed's path ended at submit_bio, before the I/O scheduler; a \
             scheduler is what elevator adds on top of the loop"
                .to_string(),
        ),
    ]
}

/// The outcome without fio.
fn not_run(plan: &Plan) -> Outcome {
    let shapes = claims()
        .into_iter()
        .map(|(claim, seed)| Shape {
            claim,
            seed,
            ours: "not run: fio not found".to_string(),
            holds: false,
        })
        .collect();
    Outcome {
        name: "direct-io",
        seed: "001",
        title: "O_DIRECT submission path: elevator's io_uring path beside fio's".to_string(),
        table: "elevator experiment direct-io (seed 001): not run, fio not found\n".to_string(),
        data: json!({
            "fio": null,
            "size_mib": plan.size_mib,
            "runtime_s": plan.runtime_s,
            "rounds": plan.rounds,
        }),
        shapes,
        figures: Vec::new(),
        notes: vec![format!(
            "'{FIO}' was not found or did not run, so nothing was measured and the shapes are \
             not checked: install fio (Debian's package fio) and run again."
        )],
    }
}

/// The outcome of a measured comparison.
fn measured(plan: &Plan, dir: &Path, fio_version: &str, cmp: &Comparison) -> Outcome {
    let (fio, ours) = cmp.medians();
    let get = |name: &str| {
        ours.iter()
            .find(|(s, _)| s == name)
            .map(|(_, f)| *f)
            .unwrap_or_default()
    };
    let (none, mq) = (get("none"), get("mq-deadline"));
    let ratio = |a: f64, b: f64| a / b.max(f64::MIN_POSITIVE);
    let none_iops = ratio(none.iops, fio.iops);
    let none_cpu = ratio(none.cpu_per_io_ns, fio.cpu_per_io_ns);
    let none_proc = ratio(none.process_per_io_ns, fio.process_per_io_ns);
    let mq_iops = ratio(mq.iops, fio.iops);
    let [c0, c1, c2] = claims();
    let shapes = vec![
        Shape {
            claim: c0.0,
            seed: c0.1,
            ours: format!("{none_iops:.3}x ({:.0} vs {:.0} IOPS)", none.iops, fio.iops),
            holds: none_iops >= NONE_IOPS_MIN,
        },
        Shape {
            claim: c1.0,
            seed: c1.1,
            ours: format!(
                "{none_cpu:.3}x ({:.0} vs {:.0} ns; whole process {none_proc:.3}x)",
                none.cpu_per_io_ns, fio.cpu_per_io_ns
            ),
            holds: none_cpu <= NONE_CPU_MAX,
        },
        Shape {
            claim: c2.0,
            seed: c2.1,
            ours: format!("{mq_iops:.3}x ({:.0} vs {:.0} IOPS)", mq.iops, fio.iops),
            holds: mq_iops >= MQ_IOPS_MIN,
        },
    ];
    let mut notes = vec![
        format!(
            "Both engines read the same {} MiB file in {} with O_DIRECT through io_uring, \
             {} round{} of {} s each, alternating; each engine's median round by IOPS is \
             shown ({fio_version}).",
            plan.size_mib,
            dir.display(),
            plan.rounds,
            if plan.rounds == 1 { "" } else { "s" },
            plan.runtime_s
        ),
        "The seed measured the kernel's own path below the system call; here the kernel's \
         path is the same for both engines and the comparison is of what runs above it: \
         fio's bare io_uring loop against elevator's block layer (bio, queue, scheduler, \
         tags) feeding the same rings."
            .to_string(),
        format!(
            "CPU per I/O here is the whole cost as the submitting thread sees it ({:.2} us for \
             fio), comparable in scale to the seed's {SEED_STOCK_US} and {SEED_TIGHT_US} us of \
             2006 hardware; the process column adds io_uring's kernel workers.",
            fio.cpu_per_io_ns / 1000.0
        ),
    ];
    if shapes.iter().any(|s| !s.holds) {
        notes.push(
            "Runs on this shared two-core machine vary by about 5% from one minute to the \
             next, more with --quick's 1 s runs; a target missed by less than that needs a \
             full run (5 rounds of 5 s) before it means anything."
                .to_string(),
        );
    }
    let mut table = format!(
        "elevator experiment direct-io (seed 001): elevator's io_uring direct-I/O path beside \
         fio's\n4 KiB random reads at depth {IODEPTH}, {} MiB file in {}, {} round{} of {} s, \
         median by IOPS\n\n",
        plan.size_mib,
        dir.display(),
        plan.rounds,
        if plan.rounds == 1 { "" } else { "s" },
        plan.runtime_s
    );
    table.push_str(&fio_table(&fio, &ours));

    let per_round = |f: fn(&Figures) -> f64| {
        let mut series = vec![Series {
            label: "fio io_uring".to_string(),
            points: rounds_of(&cmp.fio, f),
        }];
        for (sched, r) in &cmp.elevator {
            series.push(Series {
                label: format!("elevator {sched}"),
                points: rounds_of(r, f),
            });
        }
        series
    };
    let figures = vec![
        Figure::Xy(XyPlot {
            title: "IOPS by round (4 KiB random reads, depth 32)".to_string(),
            x: Axis::linear("round"),
            y: Axis::linear("IOPS"),
            mark: Mark::LinesPoints,
            panels: false,
            series: per_round(|f| f.iops),
        }),
        Figure::Xy(XyPlot {
            title: "CPU per I/O of the submitting thread by round".to_string(),
            x: Axis::linear("round"),
            y: Axis::linear("CPU per I/O (ns)"),
            mark: Mark::LinesPoints,
            panels: false,
            series: per_round(|f| f.cpu_per_io_ns),
        }),
    ];
    let data = json!({
        "fio": fio_version,
        "dir": dir.display().to_string(),
        "size_mib": plan.size_mib,
        "runtime_s": plan.runtime_s,
        "rounds": plan.rounds,
        "iodepth": IODEPTH,
        "bs_bytes": 4096,
        "median": {
            "fio": fio,
            "elevator": ours.iter().map(|(s, f)| (s.clone(), json!(f))).collect::<serde_json::Map<_, _>>(),
        },
        "ratios": {
            "none_iops": none_iops,
            "none_cpu_thread": none_cpu,
            "none_cpu_process": none_proc,
            "mq_deadline_iops": mq_iops,
            "mq_deadline_cpu_thread": ratio(mq.cpu_per_io_ns, fio.cpu_per_io_ns),
        },
        "rounds_measured": {
            "fio": cmp.fio,
            "elevator": cmp.elevator.iter().map(|(s, r)| (s.clone(), json!(r))).collect::<serde_json::Map<_, _>>(),
        },
        "seed_figures": {"stock_us": SEED_STOCK_US, "tight_us": SEED_TIGHT_US},
    });
    Outcome {
        name: "direct-io",
        seed: "001",
        title: "O_DIRECT submission path: elevator's io_uring path beside fio's".to_string(),
        table,
        data,
        shapes,
        figures,
        notes,
    }
}

/// (round number, figure) for every round.
fn rounds_of(rounds: &[Figures], f: fn(&Figures) -> f64) -> Vec<(f64, f64)> {
    rounds
        .iter()
        .enumerate()
        .map(|(i, r)| ((i + 1) as f64, f(r)))
        .collect()
}
