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
use elevator_sim::device::{Model, ModelSpec, WriteLogDevice, WriteLogReport, presets};
use elevator_sim::engine::run_observed as simulate;

use crate::cpu_time::thread_cpu_ns;
use crate::report::observe::{MAX_HEADS, SharedObserver, beside};
use crate::run_report;
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
///
/// fio's job options may follow on the command line as fio takes them
/// (`--name=a --rw=randread --bs=4k`, with or without a job file): every
/// `--option` that is not one of elevator's own is one
/// ([`crate::fio_args::split`]).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The fio job file (optional when the job is given as fio options on
    /// the command line).
    jobfile: Option<String>,
    /// fio job options from the command line, in order (filled by
    /// `fio_args::split`, not by clap).
    #[arg(skip)]
    pub fio: Vec<String>,
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
    /// The fio job file (default: a shipped job, 8 random readers at depth 4,
    /// unless the job is given as fio options on the command line).
    jobfile: Option<String>,
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

/// `--set NAME=VALUE` options as (name, value) pairs.
pub fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>> {
    sets.iter()
        .map(|s| {
            let (n, v) = s
                .split_once('=')
                .with_context(|| format!("--set '{s}': expected TUNABLE=VALUE"))?;
            Ok((n.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// The job a command line gives: a job file, fio job options (`--name=a
/// --rw=randread ...`), or both (the options then override the file's for
/// every job); its warnings are printed to stderr.
pub fn load_job(path: Option<&str>, fio: &[String]) -> Result<JobFile> {
    if path.is_none() && fio.is_empty() {
        bail!(
            "no job: give a fio job file, or the job as fio options on the command line \
             (e.g. --name=a --rw=randread --bs=4k --size=64m)"
        );
    }
    let text = match path {
        Some(p) => Some(
            crate::fio_args::read_job_text(std::path::Path::new(p), false)
                .map_err(|why| anyhow::anyhow!("reading job file {p}: {why}"))?,
        ),
        None => None,
    };
    let file = match (&text, path) {
        (Some(t), Some(p)) => Some((t.as_str(), p)),
        _ => None,
    };
    let jobs = JobFile::from_command_line(file, fio, &crate::fio_args::parse_env())?;
    for warning in &jobs.warnings {
        eprintln!("elevator: warning: {warning}");
    }
    Ok(jobs)
}

/// The share of the machine's memory a run may plan to hold: half.
const MEMORY_SHARE: u64 = 2;

/// Refuse a run whose workers and I/O buffers would hold more than half of
/// the machine's memory, before anything is allocated: such a run would be
/// killed by the kernel partway (`numjobs=4096` with `iodepth=65536` grew to
/// 23 GB and was). Warns (on stderr) of what the device spec warns of: a
/// memory device larger than the host's available memory.
pub fn check_memory(jobs: &JobFile, target: &DeviceSpec) -> Result<()> {
    for warning in target.warnings() {
        eprintln!("elevator: warning: {warning}");
    }
    let Some(total) = crate::fio_args::machine_memory() else {
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

/// What a run records besides its result.
#[derive(Debug, Default)]
pub struct Taps<'a> {
    /// `--trace-out NAME`: the queue's events to `NAME.blktrace.N`.
    pub trace: Option<&'a str>,
    /// `--report`: the trace's events gathered for the plots.
    pub observer: Option<SharedObserver>,
    /// `--write-log FILE`: the device's write log.
    pub write_log: Option<&'a std::path::Path>,
    /// What the write log's check found, filled in when a simulated run
    /// ends (with `write_log`, or when the model has faults: the check
    /// then runs without a file).
    pub write_log_report: std::cell::RefCell<Option<WriteLogReport>>,
}

/// Run `jobs` on `target` and measure the host CPU it took (this thread's,
/// for a simulation; the process's user + system time, for a real device).
pub fn execute(
    jobs: &JobFile,
    target: &DeviceSpec,
    cfg: &RunConfig,
    threads: &ThreadArgs,
    bar: &mut Bar,
    taps: &Taps<'_>,
) -> Result<(RunResult, u64)> {
    let (result, cpu, failure) = execute_to_the_end(jobs, target, cfg, threads, bar, taps)?;
    match failure {
        Some(why) => bail!("{why}"),
        None => Ok((result, cpu)),
    }
}

/// [`execute`], but a job that failed on its own terms (a verify error,
/// `rate_min` not met) still gives the run's figures, with what failed:
/// fio reports such a run in full and then exits non-zero. With
/// `taps.trace`, the queue's events go to `NAME.blktrace.N` (a summary on
/// stderr), and to `taps.observer` if given; jobs with `write_iolog` log
/// their I/Os there ([`crate::iolog_out`]).
pub fn execute_to_the_end(
    jobs: &JobFile,
    target: &DeviceSpec,
    cfg: &RunConfig,
    threads: &ThreadArgs,
    bar: &mut Bar,
    taps: &Taps<'_>,
) -> Result<(RunResult, u64, Option<String>)> {
    let trace = taps.trace;
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
            let blktrace = trace.map(crate::trace_out::open_sink).transpose()?;
            let blktrace = beside(blktrace, taps.observer.as_ref());
            let iologs = crate::iolog_out::open(jobs, || {
                Ok(model.build()?.limits().capacity.saturating_mul(512))
            })?;
            let (iologs, appends) = iologs.unzip();
            let mut sink = crate::iolog_out::combine(blktrace, iologs);
            let mut out = sink
                .as_mut()
                .map(|s| elevator_sim::engine::TraceOut::new(&mut **s));
            let mut heads = taps
                .observer
                .as_ref()
                .map(|_| elevator_sim::engine::HeadsOut::new(MAX_HEADS));
            let t0 = thread_cpu_ns();
            let result = if taps.write_log.is_some() || model.has_faults() {
                let file: Box<dyn Write + Send> = match taps.write_log {
                    Some(path) => Box::new(std::io::BufWriter::new(
                        std::fs::File::create(path)
                            .with_context(|| format!("--write-log {}", path.display()))?,
                    )),
                    None => Box::new(std::io::sink()),
                };
                let mut tap = WriteLogDevice::new(model.build_sim()?, file)
                    .context("writing the write log (--write-log)")?;
                let result = elevator_sim::engine::run_on(
                    jobs,
                    &mut tap,
                    cfg,
                    &mut |p| bar.update(p),
                    out.as_mut(),
                    heads.as_mut(),
                );
                let (report, _) = tap
                    .finish(0)
                    .context("writing the write log (--write-log)")?;
                eprintln!("elevator: {}", report.summary());
                if let Some(line) = report.fault_line() {
                    eprintln!("elevator: {line}");
                }
                *taps.write_log_report.borrow_mut() = Some(report);
                result
            } else {
                simulate(
                    jobs,
                    model,
                    cfg,
                    &mut |p| bar.update(p),
                    out.as_mut(),
                    heads.as_mut(),
                )
            };
            let cpu = thread_cpu_ns().saturating_sub(t0);
            if let (Some(o), Some(h)) = (&taps.observer, heads) {
                o.with(|o| o.set_heads(h.samples.iter().map(|s| (s.time, s.cylinder))));
            }
            bar.finish();
            let summary = out.and_then(|o| o.summary);
            if let Some(sink) = sink.as_mut() {
                sink.finish()
                    .context("writing the trace (--trace-out, write_iolog)")?;
            }
            if let Some(appends) = appends {
                appends.finish()?;
            }
            if let (Some(prefix), Some(summary)) = (trace, summary) {
                eprintln!("{}", crate::trace_out::summary_line(prefix, &summary));
            }
            let check = taps
                .write_log_report
                .borrow()
                .as_ref()
                .and_then(|r| r.verdict().err())
                .map(|e| e.to_string());
            match result {
                Ok(result) => {
                    print_io_errors(jobs, &result);
                    Ok((result, cpu, check))
                }
                Err(elevator_sim::engine::SimError::JobFailed {
                    job,
                    clone,
                    failure,
                    partial,
                }) => {
                    print_io_errors(jobs, &partial);
                    Ok((*partial, cpu, Some(job_failed(&job, clone, &failure))))
                }
                Err(e) => Err(e.into()),
            }
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
            let devs_given = devs.len();
            // Each faulty device's counts, to report once the run has
            // taken the devices and is over.
            let faults: Vec<(usize, elevator_io::FaultTally)> = devs
                .iter()
                .enumerate()
                .filter_map(|(i, d)| match d {
                    elevator_io::RealDevice::Faulty(f) => Some((i, f.tally())),
                    _ => None,
                })
                .collect();
            // The write log records the --device (with its data); its
            // shares, one per thread, record into the same log.
            let write_log = match taps.write_log {
                Some(path) if devs_given > 1 => bail!(
                    "--write-log {} records one device: --also-device gives {devs_given}",
                    path.display()
                ),
                Some(path) => {
                    let limits = elevator_core::Device::limits(&devs[0]);
                    let log = elevator_io::WriteLog::create(path, &limits, Default::default())?;
                    devs = devs
                        .into_iter()
                        .map(|d| d.logged(std::sync::Arc::clone(&log)))
                        .collect();
                    Some((path, log))
                }
                None => None,
            };
            let tcfg = elevator_io::mq::ThreadConfig {
                run: cfg.clone(),
                lock: threads.lock.unwrap_or_default(),
                lock_stats: threads.lock_stats,
            };
            let blktrace = trace.map(crate::trace_out::open_sink).transpose()?;
            let blktrace = beside(blktrace, taps.observer.as_ref());
            let iologs = crate::iolog_out::open(jobs, || {
                let bytes = devs
                    .iter()
                    .map(|d| elevator_core::Device::limits(d).capacity << 9)
                    .min();
                Ok(bytes.unwrap_or(0))
            })?;
            let (iologs, appends) = iologs.unzip();
            let sink = crate::iolog_out::combine(blktrace, iologs)
                .map(|s| std::sync::Arc::new(std::sync::Mutex::new(s)));
            let result = elevator_io::mq::run_threads_traced(
                jobs,
                devs,
                |d: &elevator_io::RealDevice| d.share(),
                &tcfg,
                &mut |p| bar.update(p),
                sink.clone(),
            );
            bar.finish();
            if let Some((path, log)) = &write_log {
                let c = log
                    .finish()
                    .with_context(|| format!("--write-log {}", path.display()))?;
                eprintln!("elevator: {}", crate::mark::counts_line(path, &c));
            }
            for (i, tally) in &faults {
                let which = match (devs_given, i) {
                    (1, _) => String::new(),
                    (_, 0) => " on --device".to_string(),
                    (_, i) => format!(" on --also-device {}", threads.also[i - 1]),
                };
                eprintln!("elevator: faults injected{which}: {}", tally.get());
            }
            if let Some(sink) = &sink {
                let mut guard = sink.lock().unwrap_or_else(|e| e.into_inner());
                guard
                    .finish()
                    .context("writing the trace (--trace-out, write_iolog)")?;
            }
            if let Some(appends) = appends {
                appends.finish()?;
            }
            if let Some(prefix) = trace
                && let Ok(run) = &result
                && let Some(summary) = &run.trace
            {
                eprintln!("{}", crate::trace_out::summary_line(prefix, summary));
            }
            let (result, failure) = match result {
                Ok(run) => (run.result, None),
                Err(elevator_io::jobs::JobRunError::JobFailed {
                    job,
                    clone,
                    failure,
                    partial,
                }) => (*partial, Some(job_failed(&job, clone, &failure))),
                Err(e) => return Err(e.into()),
            };
            print_io_errors(jobs, &result);
            let cpu = result.cpu.map_or(0, |c| c.process_ns);
            Ok((result, cpu, failure))
        }
    }
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

/// fio's line for each I/O error it reports, on stderr: the one that ended
/// each failed job clone, and with `error_dump` the first one each clone
/// went on after (`io_u error on file NAME: TEXT: write offset=N,
/// buflen=N`); and for a clone that went on after errors, how many. A few
/// lines per clone at most, however many I/Os failed.
fn print_io_errors(jobs: &JobFile, result: &RunResult) {
    use elevator_fio::workload::{IoError, JobFailure, Layout};
    let line = |j: &elevator_fio::result::JobResult, e: &IoError, what: &str| {
        let file = match (jobs.jobs.get(j.job_index), e.file) {
            (Some(spec), Some((n, _))) => {
                format!(" on file {}", Layout::file_name(spec, j.clone, n))
            }
            _ => String::new(),
        };
        eprintln!("elevator: io_u error{file}: {}{what}", e.what());
    };
    for j in &result.jobs {
        if let Some(e) = &j.first_ignored {
            line(j, e, " (went on: continue_on_error)");
        }
        if j.total_err > 0 {
            // The run may succeed, as fio's does: say so where it is seen.
            eprintln!(
                "elevator: job '{}' (clone {}) went on after {} errors (first: {}, {}), as \
                 continue_on_error / ignore_error ask",
                j.name,
                j.clone,
                j.total_err,
                j.first_error,
                elevator_fio::errno::name(j.first_error).unwrap_or("?")
            );
        }
        if let Some(JobFailure::Io(e)) = &j.failure {
            line(j, e, "");
        }
    }
}

fn job_failed(job: &str, clone: u32, failure: &elevator_fio::workload::JobFailure) -> String {
    format!("job '{job}' (clone {clone}) failed: {failure}")
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

/// The output formats `--output-format` names: one, or several joined by
/// commas as fio takes them.
pub fn output_formats(text: &str) -> Result<Vec<report::Format>> {
    text.split(',')
        .map(|f| {
            f.trim().parse::<report::Format>().map_err(|e| {
                anyhow::anyhow!("--output-format {text}: {e} (normal, json, json+ or terse)")
            })
        })
        .collect()
}

/// The seed of a run: `--seed` if given; else 0, unless a job sets
/// randrepeat=0, which asks for a different random stream every run (as
/// fio's does): then one from the clock, printed so the run can be
/// repeated.
fn run_seed(given: Option<u64>, jobs: &JobFile) -> u64 {
    match given {
        Some(seed) => seed,
        None if jobs.jobs.iter().any(|j| !j.randrepeat) => {
            let seed = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            eprintln!(
                "elevator: randrepeat=0: random seed {seed} for this run (--seed {seed} repeats it)"
            );
            seed
        }
        None => 0,
    }
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
    let jobs = load_job(args.jobfile.as_deref(), &args.fio)?;
    let dev = DeviceSpec::parse(&args.device)?;
    let tunables = parse_sets(&args.set)?;
    check_schedulers(&dev, std::slice::from_ref(&args.scheduler), &tunables)?;
    check_memory(&jobs, &dev)?;
    if args.verbose {
        print_notes(&jobs);
    }
    if args.parse_only {
        return Ok(());
    }
    let cfg = RunConfig {
        scheduler: args.scheduler.clone(),
        tunables,
        seed: run_seed(args.seed, &jobs),
    };
    let normal_only = formats.iter().all(|f| *f == report::Format::Normal);
    let mut bar = Bar::new(
        normal_only && args.output.is_none(),
        format!("{} on {}", args.scheduler, args.device),
    );
    let observer = args.report.as_ref().map(|_| run_report::observer());
    let taps = Taps {
        trace: args.trace_out.as_deref(),
        observer: observer.clone(),
        write_log: args.write_log.as_deref(),
        ..Taps::default()
    };
    let (result, cpu, failure) =
        execute_to_the_end(&jobs, &dev, &cfg, &args.threads, &mut bar, &taps)?;

    let write_log = taps.write_log_report.borrow();
    let mut text = String::new();
    for format in &formats {
        let rendered = report::render(*format, &jobs, &result, &args.device);
        match (&*write_log, format) {
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
    for (name, contents) in report::logs::files(&jobs, &result) {
        std::fs::write(&name, contents).with_context(|| format!("writing log {name}"))?;
    }
    if let (Some(path), Some(observer)) = (&args.report, &observer) {
        let name = args.jobfile.as_deref().unwrap_or("command line");
        let normal = report::render(report::Format::Normal, &jobs, &result, &args.device);
        run_report::write_run(
            path,
            name,
            &args.device,
            &args.scheduler,
            &result,
            observer,
            &normal,
        )?;
    }
    if normal_only {
        eprintln!("{}", speed_line(&result, cpu));
    }
    match failure {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}

/// Run `elevator compare`.
pub fn compare(args: &CompareArgs) -> Result<()> {
    let (jobs, name) = match &args.jobfile {
        Some(path) => (load_job(Some(path), &args.fio)?, path.clone()),
        None if !args.fio.is_empty() => (load_job(None, &args.fio)?, "command line".to_string()),
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
    let mut observers = Vec::new();
    for sched in &args.schedulers {
        let cfg = RunConfig {
            scheduler: sched.clone(),
            tunables: tunables.clone(),
            seed: args.seed,
        };
        let mut bar = Bar::new(!json, format!("{sched} on {}", args.device));
        let trace = args
            .trace_out
            .as_deref()
            .map(|prefix| crate::trace_out::compare_prefix(prefix, sched));
        let observer = args.report.as_ref().map(|_| run_report::observer());
        let taps = Taps {
            trace: trace.as_deref(),
            observer: observer.clone(),
            ..Taps::default()
        };
        let (result, cpu) = execute(&jobs, &dev, &cfg, &args.threads, &mut bar, &taps)
            .with_context(|| format!("running {name} under {sched}"))?;
        observers.extend(observer);
        if !json {
            eprintln!("{}", speed_line(&result, cpu));
        }
        runs.push(result);
    }
    if let Some(path) = &args.report {
        let text = crate::compare::render(&name, &runs[0].device, &runs);
        run_report::write_compare(
            path,
            &name,
            &args.device,
            &args.schedulers,
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

/// Run `elevator devices`.
pub fn devices() -> Result<()> {
    for (name, what) in presets() {
        let spec = ModelSpec::preset(name)?;
        println!("{name}: {what}");
        if let Model::Raid0(p) = &spec.kind {
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
    println!(
        "Faults, on any model (power_cut_at: models with a write cache: hdd, ssd, a raid0 of them):"
    );
    for (name, default, what) in elevator_sim::device::fault::FAULT_PARAMS {
        println!("    {name:<20} {default:<16} {what}");
    }
    println!();
    println!("Override parameters by name: --device hdd-7200,rpm=5400,ncq=1");
    Ok(())
}
