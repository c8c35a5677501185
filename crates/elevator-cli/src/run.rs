//! `elevator run`, `elevator compare` and `elevator devices`: fio job files
//! on simulated devices (virtual clock) or real ones (`file:PATH`, `mem:SIZE`,
//! through io_uring on the real clock). The options and the printing:
//! [`elevator_run::jobs`] runs.

use std::io::Write;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::report;
use elevator_fio::result::RunResult;
use elevator_io::DeviceSpec;
use elevator_run::job_text::run_seed;
use elevator_run::jobs::JobsRequest;
use elevator_run::taps::blktrace::compare_prefix;
use elevator_run::target::parse_tunables;
use elevator_run::{Observer, Taps, Target, Threads};
use elevator_sim::device::WriteLogReport;

use crate::list;
use crate::progress::Stderr;
use crate::run_report;

/// The job `compare` runs when given none, a shipped file
/// (`examples/default.fio`): 4 random readers at depth 32 (its text says
/// what it is; a test checks `compare --help` against it).
pub const DEFAULT_JOB: (&str, &str) = (
    "examples/default.fio",
    include_str!("../../../examples/default.fio"),
);

/// Output format of the commands with a report of their own (`compare`,
/// `advise`, `replay`, `experiment`; `run` takes fio's formats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Text for people.
    Normal,
    /// One JSON document, this command's own (see docs/json.md).
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
///
/// fio's job options may follow on the command line as fio takes them
/// (`--name=a --rw=randread --bs=4k`, with or without a job file): every
/// `--option` that is not one of elevator's own is one
/// ([`crate::fio_args::split`]).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The fio job files (optional when the job is given as fio options on
    /// the command line). Several run as one run, as fio runs them: each
    /// file's `[global]` is its own, and each file after the first starts
    /// once every job before it has finished (fio's `stonewall`).
    jobfiles: Vec<String>,
    /// fio job options from the command line, in order (filled by
    /// `fio_args::split`, not by clap).
    #[arg(skip)]
    pub fio: Vec<String>,
    /// Whether --device was on the command line (set from clap's matches,
    /// not by clap): without it a job's filename= is a file on the default
    /// simulated disk, which a note says.
    #[arg(skip)]
    pub device_given: bool,
    /// Parse and check the job (file and command-line options), print
    /// nothing, and exit: 0 if it would run, non-zero with the reason if not
    /// (fio's --parse-only).
    #[arg(long)]
    parse_only: bool,
    /// Write the report to this file rather than stdout (fio's --output).
    #[arg(long, value_name = "FILE")]
    output: Option<String>,
    /// Also print what elevator makes of the job: options accepted with no
    /// effect here and why, the I/O path every ioengine maps onto.
    #[arg(long, short)]
    verbose: bool,
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
    /// Seed mixed into every job's random stream (default 0; a job with
    /// randrepeat=0 gets a fresh seed each run unless this is given, and the
    /// seed used is printed on stderr).
    #[arg(long)]
    seed: Option<u64>,
    /// Output format: normal, json, json+ or terse, or several joined by
    /// commas (as fio takes them).
    #[arg(long, default_value = "normal")]
    output_format: String,
    /// Write the queue's events as blktrace does (`NAME.blktrace.N`, one
    /// file per job clone or worker thread), for blkparse, btt and fio.
    #[arg(long, value_name = "NAME")]
    trace_out: Option<String>,
    /// Write an HTML report with plots (latency CDF per job, throughput over
    /// time per job, who the device served and when it idled, the disk
    /// head's position on a disk model): self-contained, readable offline.
    #[arg(long, value_name = "FILE.html")]
    report: Option<std::path::PathBuf>,
    /// Record what the device received as a write log (writes, flushes,
    /// FUA, discards, job start/end marks) to FILE, and check the simulated
    /// device's media against it at the end (after a power_cut_at or
    /// vanish_at, if the spec has one).
    #[arg(long, value_name = "FILE")]
    write_log: Option<std::path::PathBuf>,
    #[command(flatten)]
    threads: ThreadArgs,
}

/// Options of `elevator compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The fio job files (default, unless the job is given as fio options on
    /// the command line: examples/default.fio, built in: numjobs=4 random
    /// readers (rw=randread, bs=4k) at iodepth=32, size=4g each, for
    /// runtime=20 s); several run as one run, as in `elevator run`.
    jobfiles: Vec<String>,
    /// fio job options from the command line (see `elevator run`).
    #[arg(skip)]
    pub fio: Vec<String>,
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
    /// Write each scheduler's queue events as blktrace does, to
    /// `NAME-<scheduler>.blktrace.N`.
    #[arg(long, value_name = "NAME")]
    trace_out: Option<String>,
    /// Write an HTML report with plots (latency CDF per scheduler,
    /// throughput over time per job, who the device served and when it
    /// idled, the disk head's position on a disk model), one section per
    /// scheduler: self-contained, readable offline.
    #[arg(long, value_name = "FILE.html")]
    report: Option<std::path::PathBuf>,
    #[command(flatten)]
    threads: ThreadArgs,
}

/// The job a command line gives ([`elevator_run::job_text::load_jobs`]):
/// job files and fio options; its warnings are printed to stderr.
pub fn load_job(paths: &[String], fio: &[String]) -> Result<JobFile> {
    // Where each fio option is on this process's command line, found by the
    // same split that gave `fio` (none when `fio` came from elsewhere).
    let mut at = crate::fio_args::positions::<crate::Cli>(std::env::args_os().collect());
    if at.len() != fio.len() {
        at.clear();
    }
    let jobs = elevator_run::job_text::load_jobs(paths, fio, &at)?;
    print_warnings(&jobs);
    Ok(jobs)
}

/// The job's warnings, on stderr.
pub fn print_warnings(jobs: &JobFile) {
    for warning in &jobs.warnings {
        eprintln!("elevator: warning: {warning}");
    }
}

impl ThreadArgs {
    /// The threads and locks these options ask for.
    pub fn threads(&self) -> Threads {
        Threads {
            lock: self.lock,
            lock_stats: self.lock_stats,
            also: self.also.clone(),
        }
    }
}

/// Run `jobs` on the device `spec` with `threads` and give the result,
/// notes on stderr (`bench-vs-fio`).
pub fn execute(
    jobs: &JobFile,
    spec: &DeviceSpec,
    cfg: &RunConfig,
    threads: &ThreadArgs,
) -> Result<RunResult> {
    let target = Target::from_spec(spec.clone(), "").with_threads(threads.threads());
    let request = JobsRequest {
        jobs,
        target: &target,
        cfg,
        taps: &Taps::default(),
    };
    let run = request.run_strict(&mut Stderr::notes())?;
    Ok(run.result)
}

/// fio's JSON report `json` with a `write_log` field: the write log's
/// summary and figures. The report is returned as it was if it is not a
/// JSON object.
pub fn with_write_log(
    json: &str,
    report: &WriteLogReport,
    path: Option<&std::path::Path>,
) -> String {
    let Ok(serde_json::Value::Object(mut top)) = serde_json::from_str::<serde_json::Value>(json)
    else {
        return json.to_string();
    };
    let check = report.check.as_ref();
    let faults = report.faults.map(|f| {
        serde_json::json!({
            "lse_reads": f.lse_reads,
            "lse_repaired": f.lse_repaired,
            "torn": f.torn,
            "misdirected": f.misdirected,
            "spikes": f.spikes,
            "timeouts": f.timeouts,
            "offline": f.offline,
        })
    });
    top.insert(
        "write_log".to_string(),
        serde_json::json!({
            "file": path.map(|p| p.display().to_string()),
            "summary": report.summary(),
            "records": report.records,
            "writes": report.writes,
            "recorded_writes": report.recorded_writes,
            "checked_at_s": report.checked_at as f64 / 1e9,
            "power_cut": report.gone.is_some_and(|g| g.power_cut),
            "vanished": report.gone.is_some_and(|g| !g.power_cut),
            "lost_writes": check.map(|c| c.lost_writes),
            "lost_sectors": check.map(|c| c.lost_sectors),
            "required_writes": check.map(|c| c.required_writes),
            "check": match check {
                None => "not tracked",
                Some(c) if c.violations == 0 => "passed",
                Some(_) => "failed",
            },
            "violations": check.map(|c| c.violations),
            "faults": faults,
        }),
    );
    let mut out = serde_json::to_string_pretty(&serde_json::Value::Object(top))
        .unwrap_or_else(|_| json.to_string());
    out.push('\n');
    out
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

/// What to tell a user whose jobs name a file (filename= or directory=)
/// but who gave no --device: the jobs run on the simulated `device` (the
/// default), not on that file. `None` when no job names one.
fn default_device_note(jobs: &JobFile, device: &str) -> Option<String> {
    let (option, path) = jobs.jobs.iter().find_map(|job| {
        let first = |text: &str| text.split(':').next().unwrap_or_default().to_string();
        match (&job.filename, &job.directory) {
            (Some(name), _) if !name.is_empty() => Some(("filename=", first(name))),
            (_, Some(dir)) if !dir.is_empty() => Some(("directory=", first(dir))),
            _ => None,
        }
    })?;
    let (what, real) = if option == "filename=" {
        ("a file", format!("file, --device file:{path}"))
    } else {
        ("a directory", "files, --device file:PATH".to_string())
    };
    Some(format!(
        "no --device: the jobs run on the simulated {device} (the default); their {option} \
         names {what} on it. For the real {real}"
    ))
}

/// The output formats `--output-format` names: one, or several joined by
/// commas as fio takes them.
pub fn output_formats(text: &str) -> Result<Vec<report::Format>> {
    text.split(',')
        .map(|f| {
            f.trim()
                .parse::<report::Format>()
                .map_err(|e| anyhow::anyhow!("--output-format {text}: {e}"))
        })
        .collect()
}

/// Print each job's notes (options accepted that change nothing here, and
/// why), once per option and reason.
fn print_notes(jobs: &JobFile) {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for job in &jobs.jobs {
        for (option, why) in &job.notes {
            if !seen.contains(&(option.as_str(), why.as_str())) {
                seen.push((option, why));
                eprintln!("elevator: note: {option}: {why}");
            }
        }
    }
}

/// Run `elevator run`.
pub fn run(args: &RunArgs) -> Result<()> {
    let formats = output_formats(&args.output_format)?;
    let jobs = load_job(&args.jobfiles, &args.fio)?;
    let target = Target::parse(&args.device)?.with_threads(args.threads.threads());
    let scheduler = list::one_scheduler(&args.scheduler)?;
    let tunables = parse_tunables(&args.set)?;
    target.check_schedulers(std::slice::from_ref(&scheduler), &tunables)?;
    let normal_only = formats.iter().all(|f| *f == report::Format::Normal);
    let mut stderr = Stderr::new(
        normal_only && args.output.is_none(),
        target.is_real(),
        format!("{scheduler} on {}", args.device),
    );
    target.check_memory(&jobs, &mut stderr)?;
    if !args.device_given
        && let Some(note) = default_device_note(&jobs, &args.device)
    {
        eprintln!("elevator: note: {note}");
    }
    if args.verbose {
        print_notes(&jobs);
    }
    if args.parse_only {
        return Ok(());
    }
    let cfg = RunConfig {
        plugins: Default::default(),
        scheduler: scheduler.clone(),
        tunables,
        seed: run_seed(args.seed, &jobs, &mut stderr),
    };
    if let Some(path) = &args.report {
        run_report::check_writable(path)?;
    }
    let observer = args.report.as_ref().map(|_| run_report::observer());
    let taps = Taps {
        trace_out: args.trace_out.as_deref(),
        observer: observer.as_ref().map(|o| o as &dyn Observer),
        write_log: args.write_log.as_deref(),
    };
    let request = JobsRequest {
        jobs: &jobs,
        target: &target,
        cfg: &cfg,
        taps: &taps,
    };
    let run = request.run(&mut stderr)?;
    let result = &run.result;
    let mut text = String::new();
    // fio's note on a depth a synchronous engine caps: the normal report
    // has it after "Starting"; before JSON or terse alone, fio prints it on
    // stdout (never into an --output file, which stays a JSON document).
    if !formats.contains(&report::Format::Normal) && args.output.is_none() {
        text.push_str(&report::depth_notes(&jobs, result));
    }
    for format in &formats {
        let rendered = report::render(*format, &jobs, result, &args.device);
        match (&run.write_log, format) {
            (Some(wl), report::Format::Json | report::Format::JsonPlus) => {
                text.push_str(&with_write_log(&rendered, wl, args.write_log.as_deref()));
            }
            _ => text.push_str(&rendered),
        }
    }
    match &args.output {
        Some(path) => std::fs::write(path, &text).with_context(|| format!("writing {path}"))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    for (name, contents) in report::logs::files(&jobs, result) {
        std::fs::write(&name, contents).with_context(|| format!("writing log {name}"))?;
    }
    if let (Some(path), Some(observer)) = (&args.report, &observer) {
        let name = if args.jobfiles.is_empty() {
            "command line".to_string()
        } else {
            args.jobfiles.join(" ")
        };
        let normal = report::render(report::Format::Normal, &jobs, result, &args.device);
        run_report::write_run(
            path,
            &name,
            &args.device,
            &scheduler,
            result,
            observer,
            &normal,
        )?;
    }
    if normal_only {
        eprintln!("{}", speed_line(result, run.cpu_ns));
    }
    match run.failure {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}

/// Run `elevator compare`.
pub fn compare(args: &CompareArgs) -> Result<()> {
    let (jobs, name) = match args.jobfiles.as_slice() {
        [] if !args.fio.is_empty() => (load_job(&[], &args.fio)?, "command line".to_string()),
        [] => (
            JobFile::parse(DEFAULT_JOB.1, DEFAULT_JOB.0)?,
            DEFAULT_JOB.0.to_string(),
        ),
        paths => (load_job(paths, &args.fio)?, paths.join(" ")),
    };
    if args.schedulers.is_empty() {
        bail!("--schedulers: give at least one scheduler");
    }
    let schedulers = list::several_schedulers("--schedulers", &args.schedulers)?;
    let target = Target::parse(&args.device)?.with_threads(args.threads.threads());
    let tunables = parse_tunables(&args.set)?;
    target.check_schedulers(&schedulers, &tunables)?;
    target.check_memory(&jobs, &mut Stderr::notes())?;
    if let Some(path) = &args.report {
        run_report::check_writable(path)?;
    }
    let json = args.output_format == OutputFormat::Json;
    let mut runs = Vec::new();
    let mut observers = Vec::new();
    for sched in &schedulers {
        let cfg = RunConfig {
            plugins: Default::default(),
            scheduler: sched.clone(),
            tunables: tunables.clone(),
            seed: args.seed,
        };
        let mut stderr = Stderr::new(
            !json,
            target.is_real(),
            format!("{sched} on {}", args.device),
        );
        let trace = args
            .trace_out
            .as_deref()
            .map(|prefix| compare_prefix(prefix, sched));
        let observer = args.report.as_ref().map(|_| run_report::observer());
        let taps = Taps {
            trace_out: trace.as_deref(),
            observer: observer.as_ref().map(|o| o as &dyn Observer),
            write_log: None,
        };
        let request = JobsRequest {
            jobs: &jobs,
            target: &target,
            cfg: &cfg,
            taps: &taps,
        };
        let run = request
            .run_strict(&mut stderr)
            .with_context(|| format!("running {name} under {sched}"))?;
        observers.extend(observer);
        if !json {
            eprintln!("{}", speed_line(&run.result, run.cpu_ns));
        }
        runs.push(run.result);
    }
    if let Some(path) = &args.report {
        let text = crate::compare::render(&name, &runs[0].device, &runs);
        run_report::write_compare(
            path,
            &name,
            &args.device,
            &schedulers,
            &runs,
            &observers,
            &text,
        )?;
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
