//! `elevator run`, `elevator compare` and `elevator devices`: fio job files
//! on simulated devices (virtual clock) or real ones (`file:PATH`, `mem:SIZE`,
//! through io_uring on the real clock).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use elevator_core::{BuildError, DeviceShape, Limits, Queue};
use elevator_fio::job::JobFile;
use elevator_fio::result::RunResult;
use elevator_fio::{Progress, RunConfig};
use elevator_io::DeviceSpec;
use elevator_sim::device::{ModelSpec, presets};
use elevator_sim::engine::run as simulate;

use crate::cpu_time::thread_cpu_ns;
use elevator_fio::report;

/// The job `compare` runs when given none: 8 random readers at depth 4, a
/// shipped file (`examples/default.fio`).
pub const DEFAULT_JOB: (&str, &str) = (
    "examples/default.fio",
    include_str!("../../../examples/default.fio"),
);

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// fio-like text.
    Normal,
    /// fio-compatible JSON.
    Json,
}

/// How real-device runs use threads and locks (`run`, `compare`,
/// `bench-vs-fio`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ThreadArgs {
    /// Locking design on real devices: global (one lock over every queue,
    /// Linux 2.4), queue (a lock per device queue, 2.5-3.x) or mq (blk-mq:
    /// per-thread contexts, shared tags, a scheduler behind its own lock);
    /// default mq.
    #[arg(long)]
    pub lock: Option<elevator_io::mq::LockMode>,
    /// Measure every lock the layer takes (lockmeter's and lock_stat's
    /// figures, in the report).
    #[arg(long)]
    pub lock_stats: bool,
    /// Another real device (repeatable): job clones spread over --device and
    /// these, clone k on device k mod N, each on a thread of its own.
    #[arg(long = "also-device", value_name = "SPEC")]
    pub also: Vec<String>,
}

/// Options of `elevator run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The fio job file.
    jobfile: String,
    /// Device: a simulated preset with optional overrides (hdd-7200,rpm=5400;
    /// `elevator devices` lists them), or a real one: file:PATH (O_DIRECT
    /// through io_uring) or mem:SIZE.
    #[arg(long, default_value = "hdd-7200")]
    device: String,
    /// I/O scheduler (`elevator schedulers` lists them).
    #[arg(long, default_value = "mq-deadline")]
    scheduler: String,
    /// Set a queue or scheduler tunable (repeatable), e.g. --set read_expire=250.
    #[arg(long = "set", value_name = "TUNABLE=VALUE")]
    set: Vec<String>,
    /// Seed mixed into every job's random stream.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "normal")]
    output_format: OutputFormat,
    #[command(flatten)]
    threads: ThreadArgs,
}

/// Options of `elevator compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The fio job file (default: a shipped job, 8 random readers at depth 4).
    jobfile: Option<String>,
    /// Device: a simulated preset with optional overrides, or file:PATH or
    /// mem:SIZE.
    #[arg(long, default_value = "hdd-7200")]
    device: String,
    /// Schedulers to compare, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,mq-deadline,deadline-list"
    )]
    schedulers: Vec<String>,
    /// Set a queue or scheduler tunable for every run (repeatable).
    #[arg(long = "set", value_name = "TUNABLE=VALUE")]
    set: Vec<String>,
    /// Seed mixed into every job's random stream.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "normal")]
    output_format: OutputFormat,
    #[command(flatten)]
    threads: ThreadArgs,
}

fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>> {
    sets.iter()
        .map(|s| {
            let (n, v) = s
                .split_once('=')
                .with_context(|| format!("--set '{s}': expected TUNABLE=VALUE"))?;
            Ok((n.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// Read and parse a job file, printing its warnings to stderr.
pub fn load(path: &str) -> Result<JobFile> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading job file {path}"))?;
    let jobs = JobFile::parse(&text, path)?;
    for warning in &jobs.warnings {
        eprintln!("elevator: warning: {warning}");
    }
    Ok(jobs)
}

/// The share of the machine's memory a run may plan to hold: half.
const MEMORY_SHARE: u64 = 2;

/// The machine's memory in bytes (`MemTotal` of /proc/meminfo), if known.
fn machine_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Refuse a run whose workers and I/O buffers would hold more than half of
/// the machine's memory, before anything is allocated: such a run would be
/// killed by the kernel partway (`numjobs=4096` with `iodepth=65536` grew to
/// 23 GB and was).
pub fn check_memory(jobs: &JobFile, target: &DeviceSpec) -> Result<()> {
    let Some(total) = machine_memory() else {
        return Ok(());
    };
    let (need, what) = match target.model() {
        Some(_) => (
            elevator_sim::engine::memory_estimate(jobs),
            "for its job clones and their I/O records",
        ),
        None => (
            elevator_io::jobs::memory_estimate(jobs),
            "for its job clones and their I/O buffers (iodepth × bs each)",
        ),
    };
    if need > total / MEMORY_SHARE {
        let clones: u64 = jobs.jobs.iter().map(|j| u64::from(j.numjobs)).sum();
        let ios: u64 = jobs
            .jobs
            .iter()
            .map(|j| u64::from(j.numjobs) * u64::from(j.iodepth))
            .sum();
        bail!(
            "{}: this run would hold about {} {what}: {clones} job clones with {ios} I/Os in \
             flight in all, more than half of this machine's memory ({}); lower numjobs or iodepth",
            jobs.path,
            report::text::iec(need as f64),
            report::text::iec(total as f64),
        );
    }
    Ok(())
}

/// Check every scheduler name and every `--set` tunable before anything
/// runs, so that a mistake in the last of several schedulers is not found
/// after the first has run in full. Tunables are tried on a queue of each
/// scheduler; on a real device the engine's own `submit_batch` is checked
/// by the engine's rule.
pub fn check_schedulers(
    target: &DeviceSpec,
    schedulers: &[String],
    tunables: &[(String, String)],
) -> Result<()> {
    // The engine's own tunable, on a real device; the rest are the queue's.
    let mut queue_tunables = Vec::with_capacity(tunables.len());
    for (name, value) in tunables {
        if target.model().is_none() && name == elevator_io::engine::SUBMIT_BATCH {
            elevator_io::engine::parse_batch(name, value)
                .with_context(|| format!("--set {name}={value}"))?;
        } else {
            queue_tunables.push((name.clone(), value.clone()));
        }
    }
    let shape = DeviceShape {
        limits: Limits::default(),
        queue_depth: 32,
        rotational: true,
    };
    for sched in schedulers {
        Queue::for_device(shape, sched, &queue_tunables).map_err(|e| match e {
            BuildError::Config(e) => anyhow::Error::from(e),
            BuildError::Tunable { name, value, error } => {
                anyhow::anyhow!("--set {name}={value} under {sched}: {error}")
            }
        })?;
    }
    Ok(())
}

/// A progress bar on stderr, shown only for runs longer than a second, when
/// stderr is a terminal and the output is not JSON.
pub struct Bar {
    enabled: bool,
    real: bool,
    started: Instant,
    shown: bool,
    label: String,
}

impl Bar {
    /// A bar labelled `label`, drawn if `enabled` and stderr is a terminal.
    pub fn new(enabled: bool, label: String) -> Bar {
        Bar {
            enabled: enabled && std::io::stderr().is_terminal(),
            real: false,
            started: Instant::now(),
            shown: false,
            label,
        }
    }

    fn update(&mut self, p: Progress) {
        if !self.enabled || self.started.elapsed() < Duration::from_secs(1) {
            return;
        }
        let width = 30;
        let filled = (p.fraction * width as f64).round() as usize;
        eprint!(
            "\r{} [{}{}] {:3.0}%  {:.1} s{}, {} I/Os ",
            self.label,
            "=".repeat(filled.min(width)),
            " ".repeat(width - filled.min(width)),
            p.fraction * 100.0,
            p.now as f64 / 1e9,
            if self.real { "" } else { " simulated" },
            p.ios
        );
        let _ = std::io::stderr().flush();
        self.shown = true;
    }

    fn finish(&mut self) {
        if self.shown {
            eprint!("\r{}\r", " ".repeat(90));
            let _ = std::io::stderr().flush();
        }
    }
}

/// Run `jobs` on `target` and measure the host CPU it took (this thread's,
/// for a simulation; the process's user + system time, for a real device).
pub fn execute(
    jobs: &JobFile,
    target: &DeviceSpec,
    cfg: &RunConfig,
    threads: &ThreadArgs,
    bar: &mut Bar,
) -> Result<(RunResult, u64)> {
    match target.model() {
        Some(_) if !threads.also.is_empty() => bail!(
            "--also-device goes with a real --device (file:PATH or mem:SIZE): a disk model runs \
             in the simulator, one device at a time"
        ),
        Some(_) if threads.lock.is_some() || threads.lock_stats => bail!(
            "--lock and --lock-stats go with a real --device (file:PATH or mem:SIZE): the \
             simulator runs one queue on one virtual clock, with no threads or locks"
        ),
        Some(model) => {
            let t0 = thread_cpu_ns();
            let result = simulate(jobs, model, cfg, &mut |p| bar.update(p));
            let cpu = thread_cpu_ns().saturating_sub(t0);
            bar.finish();
            Ok((result?, cpu))
        }
        None => {
            bar.real = true;
            let mut devs = vec![target.open()?];
            for spec in &threads.also {
                let extra = DeviceSpec::parse(spec)?;
                if extra.model().is_some() {
                    bail!(
                        "--also-device {spec}: several devices must all be real (file:PATH or \
                         mem:SIZE); a disk model runs in the simulator, one at a time"
                    );
                }
                devs.push(extra.open()?);
            }
            let tcfg = elevator_io::mq::ThreadConfig {
                run: cfg.clone(),
                lock: threads.lock.unwrap_or_default(),
                lock_stats: threads.lock_stats,
            };
            let result = elevator_io::mq::run_threads(
                jobs,
                devs,
                |d: &elevator_io::RealDevice| d.share(),
                &tcfg,
                &mut |p| bar.update(p),
            );
            bar.finish();
            let result = result?.result;
            let cpu = result.cpu.map_or(0, |c| c.process_ns);
            Ok((result, cpu))
        }
    }
}

/// The host-dependent line: kept off stdout, which is deterministic.
fn speed_line(run: &RunResult, cpu_ns: u64) -> String {
    if let Some(cpu) = run.cpu {
        return format!(
            "elevator: {} on {}: {} I/Os in {:.3} s ({:.0} IOPS), CPU per I/O {:.0} ns \
             (engine thread), {:.0} ns (whole process)",
            run.scheduler,
            run.device,
            run.ios,
            run.elapsed as f64 / 1e9,
            run.ios as f64 / (run.elapsed.max(1) as f64 / 1e9),
            cpu.thread_per_io(run.ios),
            cpu.per_io(run.ios)
        );
    }
    let per_sec = run.ios as f64 / (cpu_ns.max(1) as f64 / 1e9);
    format!(
        "elevator: {} on {}: {} I/Os simulated in {:.3} s of host CPU ({:.2} M I/Os per CPU second)",
        run.scheduler,
        run.device,
        run.ios,
        cpu_ns as f64 / 1e9,
        per_sec / 1e6
    )
}

/// Run `elevator run`.
pub fn run(args: &RunArgs) -> Result<()> {
    let jobs = load(&args.jobfile)?;
    let dev = DeviceSpec::parse(&args.device)?;
    let cfg = RunConfig {
        scheduler: args.scheduler.clone(),
        tunables: parse_sets(&args.set)?,
        seed: args.seed,
    };
    check_schedulers(&dev, std::slice::from_ref(&cfg.scheduler), &cfg.tunables)?;
    check_memory(&jobs, &dev)?;
    let json = args.output_format == OutputFormat::Json;
    let mut bar = Bar::new(!json, format!("{} on {}", args.scheduler, args.device));
    let (result, cpu) = execute(&jobs, &dev, &cfg, &args.threads, &mut bar)?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(
            &mut out,
            &report::json::render(&jobs, &result, &args.device),
        )?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "{}",
            report::text::render(&jobs, &result, &args.device)
        )?;
        eprintln!("{}", speed_line(&result, cpu));
    }
    Ok(())
}

/// Run `elevator compare`.
pub fn compare(args: &CompareArgs) -> Result<()> {
    let (jobs, name) = match &args.jobfile {
        Some(path) => (load(path)?, path.clone()),
        None => (
            JobFile::parse(DEFAULT_JOB.1, DEFAULT_JOB.0)?,
            DEFAULT_JOB.0.to_string(),
        ),
    };
    if args.schedulers.is_empty() {
        bail!("--schedulers: give at least one scheduler");
    }
    let dev = DeviceSpec::parse(&args.device)?;
    let tunables = parse_sets(&args.set)?;
    check_schedulers(&dev, &args.schedulers, &tunables)?;
    check_memory(&jobs, &dev)?;
    let json = args.output_format == OutputFormat::Json;
    let mut runs = Vec::new();
    for sched in &args.schedulers {
        let cfg = RunConfig {
            scheduler: sched.clone(),
            tunables: tunables.clone(),
            seed: args.seed,
        };
        let mut bar = Bar::new(!json, format!("{sched} on {}", args.device));
        let (result, cpu) = execute(&jobs, &dev, &cfg, &args.threads, &mut bar)
            .with_context(|| format!("running {name} under {sched}"))?;
        if !json {
            eprintln!("{}", speed_line(&result, cpu));
        }
        runs.push(result);
    }
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(
            &mut out,
            &crate::compare::render_json(&name, &args.device, &runs),
        )?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "{}",
            crate::compare::render(&name, &runs[0].device, &runs)
        )?;
    }
    Ok(())
}

/// Run `elevator devices`.
pub fn devices() -> Result<()> {
    for (name, what) in presets() {
        let spec = ModelSpec::preset(name)?;
        println!("{name}: {what}");
        if let ModelSpec::Raid0(p) = &spec {
            println!("    {:<20} {:<16} members' preset", "member", p.member);
        }
        for p in spec.params() {
            let value = if p.value.fract() == 0.0 && p.value.abs() < 1e15 {
                format!("{}", p.value as i64)
            } else {
                format!("{:.3}", p.value)
            };
            println!(
                "    {:<20} {:<16} {}",
                p.name,
                format!("{value} {}", p.unit.name()).trim_end(),
                p.help
            );
        }
        println!();
    }
    println!("Override parameters by name: --device hdd-7200,rpm=5400,ncq=1");
    Ok(())
}
