//! `elevator run`, `elevator compare` and `elevator devices`: fio job files
//! on simulated devices.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use elevator_sim::device::{DeviceSpec, presets};
use elevator_sim::engine::{Progress, SimConfig, run as simulate};
use elevator_sim::job::JobFile;
use elevator_sim::result::RunResult;

use crate::cpu_time::thread_cpu_ns;
use crate::report;

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

/// Options of `elevator run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The fio job file.
    jobfile: String,
    /// Device preset with optional overrides, e.g. hdd-7200 or hdd-7200,rpm=5400
    /// (`elevator devices` lists them).
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
}

/// Options of `elevator compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The fio job file (default: a shipped job, 8 random readers at depth 4).
    jobfile: Option<String>,
    /// Device preset with optional overrides.
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

fn load(path: &str) -> Result<JobFile> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading job file {path}"))?;
    Ok(JobFile::parse(&text, path)?)
}

fn device(spec: &str) -> Result<DeviceSpec> {
    Ok(DeviceSpec::parse(spec)?)
}

/// A progress bar on stderr, shown only for runs longer than a second, when
/// stderr is a terminal and the output is not JSON.
struct Bar {
    enabled: bool,
    started: Instant,
    shown: bool,
    label: String,
}

impl Bar {
    fn new(enabled: bool, label: String) -> Bar {
        Bar {
            enabled: enabled && std::io::stderr().is_terminal(),
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
            "\r{} [{}{}] {:3.0}%  {:.1} s simulated, {} I/Os ",
            self.label,
            "=".repeat(filled.min(width)),
            " ".repeat(width - filled.min(width)),
            p.fraction * 100.0,
            p.now as f64 / 1e9,
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

/// Simulate and measure the host CPU it took.
fn timed(
    jobs: &JobFile,
    dev: &DeviceSpec,
    cfg: &SimConfig,
    bar: &mut Bar,
) -> Result<(RunResult, u64)> {
    let t0 = thread_cpu_ns();
    let result = simulate(jobs, dev, cfg, &mut |p| bar.update(p));
    let cpu = thread_cpu_ns().saturating_sub(t0);
    bar.finish();
    Ok((result?, cpu))
}

/// The host-dependent line: kept off stdout, which is deterministic.
fn speed_line(run: &RunResult, cpu_ns: u64) -> String {
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
    let dev = device(&args.device)?;
    let cfg = SimConfig {
        scheduler: args.scheduler.clone(),
        tunables: parse_sets(&args.set)?,
        seed: args.seed,
    };
    let json = args.output_format == OutputFormat::Json;
    let mut bar = Bar::new(!json, format!("{} on {}", args.scheduler, args.device));
    let (result, cpu) = timed(&jobs, &dev, &cfg, &mut bar)?;
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
    let dev = device(&args.device)?;
    let tunables = parse_sets(&args.set)?;
    let json = args.output_format == OutputFormat::Json;
    let mut runs = Vec::new();
    for sched in &args.schedulers {
        let cfg = SimConfig {
            scheduler: sched.clone(),
            tunables: tunables.clone(),
            seed: args.seed,
        };
        let mut bar = Bar::new(!json, format!("{sched} on {}", args.device));
        let (result, cpu) = timed(&jobs, &dev, &cfg, &mut bar)
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
            &report::compare::render_json(&name, &args.device, &runs),
        )?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "{}",
            report::compare::render(&name, &runs[0].device, &runs)
        )?;
    }
    Ok(())
}

/// Run `elevator devices`.
pub fn devices() -> Result<()> {
    for (name, what) in presets() {
        let spec = DeviceSpec::preset(name)?;
        println!("{name}: {what}");
        if let DeviceSpec::Raid0(p) = &spec {
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
