//! `elevator bench-vs-fio`: the same job on the same file, through fio's
//! io_uring engine and through elevator, one after the other, with IOPS and
//! CPU per I/O side by side.
//!
//! Both run the same text: the job file with, at the end of every job
//! section, `filename=PATH`, `nrfiles=1`, `ioengine=io_uring`, `direct=1`
//! (and `size=` the device's size, for a job without one).
//!
//! CPU per I/O is shown in two scopes, because io_uring may run a file's I/O
//! on kernel worker threads of the submitting process (it does for tmpfs):
//! - **thread**: the submitting thread's user + system time (fio's own
//!   `usr_cpu + sys_cpu`, which it takes from `RUSAGE_THREAD`, over its
//!   runtime; elevator's engine thread);
//! - **process**: every thread, io_uring workers included (fio's whole run
//!   as a child process, from `RUSAGE_CHILDREN`; elevator's process).
//!
//! With `--rounds N` the runs alternate N times and the table shows each
//! engine's median round (by IOPS).

use std::io::Write;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use elevator_core::Device;
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_io::cpu::CpuTime;
use elevator_io::{DeviceKind, DeviceSpec};
use serde::Serialize;
use serde_json::Value;

use crate::run::execute;

/// Options of `elevator bench-vs-fio`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The fio job file.
    jobfile: String,
    /// The device both run on: file:PATH (a file or block device).
    #[arg(long)]
    device: String,
    /// elevator schedulers to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "none,mq-deadline")]
    schedulers: Vec<String>,
    /// Set a queue or scheduler tunable for elevator's runs (repeatable).
    #[arg(long = "set", value_name = "TUNABLE=VALUE")]
    set: Vec<String>,
    /// Run everything this many times, alternating, and report medians.
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// The fio binary.
    #[arg(long, default_value = "fio")]
    fio: String,
    #[command(flatten)]
    threads: crate::run::ThreadArgs,
}

/// One engine's figures for one round.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct Figures {
    /// I/Os per second.
    pub(crate) iops: f64,
    /// Bytes per second.
    pub(crate) bytes_per_sec: f64,
    /// Submitting thread's CPU per I/O, ns.
    pub(crate) cpu_per_io_ns: f64,
    /// Whole process's CPU per I/O, ns.
    pub(crate) process_per_io_ns: f64,
}

/// A comparison to run: one job through fio's io_uring engine and through
/// elevator under each scheduler, on the same file, alternating rounds.
pub(crate) struct Bench<'a> {
    /// The job text, as given (the file's overrides are added here).
    pub(crate) text: &'a str,
    /// Where the job text came from, for messages.
    pub(crate) jobfile: &'a str,
    /// The device both run on: `file:PATH`.
    pub(crate) device: &'a DeviceSpec,
    /// elevator's schedulers.
    pub(crate) schedulers: &'a [String],
    /// Queue or scheduler tunables for elevator's runs.
    pub(crate) tunables: &'a [(String, String)],
    /// Rounds (at least one).
    pub(crate) rounds: u32,
    /// The fio binary.
    pub(crate) fio: &'a str,
    /// How elevator's runs use threads and locks.
    pub(crate) threads: &'a crate::run::ThreadArgs,
}

/// Every round of a comparison.
pub(crate) struct Comparison {
    /// fio's rounds, in order.
    pub(crate) fio: Vec<Figures>,
    /// Each scheduler's rounds, in order, in the order given.
    pub(crate) elevator: Vec<(String, Vec<Figures>)>,
}

impl Comparison {
    /// Each engine's median round by IOPS: fio's, then each scheduler's.
    pub(crate) fn medians(&self) -> (Figures, Vec<(String, Figures)>) {
        (
            median(self.fio.clone()),
            self.elevator
                .iter()
                .map(|(s, r)| (s.clone(), median(r.clone())))
                .collect(),
        )
    }
}

/// The job text both engines run.
fn rewrite(text: &str, path: &Path, size: Option<u64>) -> String {
    let mut overrides = format!(
        "filename={}\nnrfiles=1\nioengine=io_uring\ndirect=1\n",
        path.display()
    );
    if let Some(size) = size {
        overrides.push_str(&format!("size={size}\n"));
    }
    let mut out = String::new();
    let mut in_job = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            if in_job {
                out.push_str(&overrides);
            }
            in_job = !t.eq_ignore_ascii_case("[global]");
        }
        out.push_str(line);
        out.push('\n');
    }
    if in_job {
        out.push_str(&overrides);
    }
    out
}

/// fio's figures from its JSON output (all but the process CPU, which the
/// JSON does not have), and its I/O count.
fn fio_figures(json: &Value) -> Result<(Figures, f64)> {
    let jobs = json["jobs"]
        .as_array()
        .context("fio's JSON output has no jobs array")?;
    let (mut iops, mut bw, mut ios, mut cpu_ns) = (0.0, 0.0, 0.0, 0.0);
    for j in jobs {
        let runtime_ms = j["job_runtime"].as_f64().unwrap_or(0.0);
        let cpu = j["usr_cpu"].as_f64().unwrap_or(0.0) + j["sys_cpu"].as_f64().unwrap_or(0.0);
        cpu_ns += cpu / 100.0 * runtime_ms * 1e6;
        for dir in elevator_fio::result::DIR_NAMES {
            iops += j[dir]["iops"].as_f64().unwrap_or(0.0);
            bw += j[dir]["bw_bytes"].as_f64().unwrap_or(0.0);
            ios += j[dir]["total_ios"].as_f64().unwrap_or(0.0);
        }
    }
    if ios == 0.0 {
        bail!("fio completed no I/O");
    }
    let f = Figures {
        iops,
        bytes_per_sec: bw,
        cpu_per_io_ns: cpu_ns / ios,
        process_per_io_ns: 0.0,
    };
    Ok((f, ios))
}

fn run_fio(fio: &str, job_path: &Path) -> Result<Figures> {
    let before = CpuTime::children();
    let out = Command::new(fio)
        .arg("--output-format=json")
        .arg(job_path)
        .output()
        .with_context(|| format!("running '{fio}' (is fio installed? e.g. apt-get install fio)"))?;
    if !out.status.success() {
        bail!(
            "fio failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    // fio may print notes before the JSON document.
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find('{').context("fio printed no JSON")?;
    let json: Value = serde_json::from_str(&text[start..]).context("reading fio's JSON output")?;
    let (mut f, ios) = fio_figures(&json)?;
    f.process_per_io_ns = CpuTime::children().since(&before).total().as_nanos() as f64 / ios;
    Ok(f)
}

fn run_elevator(
    jobs: &JobFile,
    spec: &DeviceSpec,
    cfg: &RunConfig,
    threads: &crate::run::ThreadArgs,
) -> Result<Figures> {
    let run = execute(jobs, spec, cfg, threads)?;
    let cpu = run.cpu.unwrap_or_default();
    let secs = run.elapsed.max(1) as f64 / 1e9;
    let bytes = run.bytes();
    Ok(Figures {
        iops: run.ios as f64 / secs,
        bytes_per_sec: bytes as f64 / secs,
        cpu_per_io_ns: cpu.thread_per_io(run.ios),
        process_per_io_ns: cpu.per_io(run.ios),
    })
}

fn median(mut rounds: Vec<Figures>) -> Figures {
    rounds.sort_by(|a, b| a.iops.total_cmp(&b.iops));
    rounds[rounds.len() / 2]
}

/// Run `elevator bench-vs-fio`.
pub fn run(args: &Args) -> Result<()> {
    let spec = DeviceSpec::parse(&args.device)?;
    let DeviceKind::File { path, .. } = &spec.kind else {
        bail!("--device: bench-vs-fio needs file:PATH (fio cannot open elevator's memory)");
    };
    let text = elevator_run::job_text::read_job_text(std::path::Path::new(&args.jobfile), false)
        .map_err(|why| anyhow::anyhow!("reading job file {}: {why}", args.jobfile))?;
    let tunables = args
        .set
        .iter()
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .with_context(|| format!("--set '{s}': expected TUNABLE=VALUE"))
        })
        .collect::<Result<Vec<_>>>()?;
    let bench = Bench {
        text: &text,
        jobfile: &args.jobfile,
        device: &spec,
        schedulers: &crate::list::several_schedulers("--schedulers", &args.schedulers)?,
        tunables: &tunables,
        rounds: args.rounds,
        fio: &args.fio,
        threads: &args.threads,
    };
    let (fio, elevator) = compare(&bench, &mut |what, _, _| eprintln!("{what}"))?.medians();
    print_table(args, path, &fio, &elevator)
}

/// Run a comparison: fio's io_uring engine and elevator under each
/// scheduler, on the same file with the same job (`filename`, `nrfiles=1`,
/// `ioengine=io_uring`, `direct=1` and, for a job without one, `size=` the
/// file's size appended to every job), one after the other, `rounds` times.
/// `progress` hears "round R/N: ENGINE", step and steps before each run.
pub(crate) fn compare(
    b: &Bench,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<Comparison> {
    let DeviceKind::File { path, .. } = &b.device.kind else {
        bail!("--device: bench-vs-fio needs file:PATH (fio cannot open elevator's memory)");
    };
    if b.device.faults.is_active() {
        bail!("--device: no faults in a benchmark");
    }
    if b.schedulers.is_empty() || b.rounds == 0 {
        bail!("give at least one scheduler and one round");
    }
    let original = JobFile::parse(b.text, b.jobfile)?;
    let capacity = b
        .device
        .open()
        .with_context(|| format!("opening {}", path.display()))?
        .limits()
        .capacity
        << 9;
    let needs_size = original.jobs.iter().any(|j| j.size.is_none());
    let both = rewrite(b.text, path, needs_size.then_some(capacity));
    let jobs = JobFile::parse(&both, b.jobfile)?;
    let job_path = std::env::temp_dir().join(format!("elevator-bench-{}.fio", std::process::id()));
    std::fs::write(&job_path, &both).with_context(|| format!("writing {}", job_path.display()))?;
    let result = rounds(b, &jobs, &job_path, progress);
    let _ = std::fs::remove_file(&job_path);
    result
}

fn rounds(
    b: &Bench,
    jobs: &JobFile,
    job_path: &Path,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<Comparison> {
    let mut fio_rounds = Vec::new();
    let mut ours: Vec<Vec<Figures>> = vec![Vec::new(); b.schedulers.len()];
    let rounds = b.rounds as usize;
    let steps = rounds * (1 + b.schedulers.len());
    let mut step = 0;
    for round in 0..rounds {
        progress(
            &format!("round {}/{}: fio io_uring", round + 1, rounds),
            step,
            steps,
        );
        step += 1;
        fio_rounds.push(run_fio(b.fio, job_path)?);
        for (i, sched) in b.schedulers.iter().enumerate() {
            progress(
                &format!("round {}/{}: elevator {sched}", round + 1, rounds),
                step,
                steps,
            );
            step += 1;
            let cfg = RunConfig {
                plugins: Default::default(),
                scheduler: sched.clone(),
                tunables: b.tunables.to_vec(),
                seed: 0,
            };
            ours[i].push(
                run_elevator(jobs, b.device, &cfg, b.threads)
                    .with_context(|| format!("running elevator with {sched}"))?,
            );
        }
    }
    Ok(Comparison {
        fio: fio_rounds,
        elevator: b.schedulers.iter().cloned().zip(ours).collect(),
    })
}

fn print_table(
    args: &Args,
    path: &Path,
    fio: &Figures,
    elevator: &[(String, Figures)],
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} on {} ({} round{}, median by IOPS)",
        args.jobfile,
        path.display(),
        args.rounds,
        if args.rounds == 1 { "" } else { "s" }
    )?;
    write!(out, "{}", table(fio, elevator))?;
    Ok(())
}

/// The table of a comparison's figures: IOPS, MB/s, CPU per I/O (thread
/// and process) and each as a ratio to fio's, a row per engine, fio first.
pub(crate) fn table(fio: &Figures, elevator: &[(String, Figures)]) -> String {
    let heads = format!(
        "{:<22} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "", "", "", "CPU/IO ns", "", "", "CPU/fio", ""
    );
    let mut out = format!("{}\n", heads.trim_end());
    out.push_str(&format!(
        "{:<22} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "engine", "IOPS", "MB/s", "thread", "process", "IOPS/fio", "thread", "process"
    ));
    let ratio = |a: f64, b: f64| a / b.max(f64::MIN_POSITIVE);
    let row = |name: &str, f: &Figures| {
        format!(
            "{:<22} {:>9.0} {:>8.1} {:>9.0} {:>9.0} {:>9.3} {:>9.3} {:>9.3}\n",
            name,
            f.iops,
            f.bytes_per_sec / 1e6,
            f.cpu_per_io_ns,
            f.process_per_io_ns,
            ratio(f.iops, fio.iops),
            ratio(f.cpu_per_io_ns, fio.cpu_per_io_ns),
            ratio(f.process_per_io_ns, fio.process_per_io_ns)
        )
    };
    out.push_str(&row("fio io_uring", fio));
    for (sched, f) in elevator {
        out.push_str(&row(&format!("elevator {sched}"), f));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_go_at_the_end_of_every_job() {
        let text = "[global]\nbs=4k\n\n[a]\nrw=randread\n[b]\nrw=read\nsize=1m\n";
        let out = rewrite(text, Path::new("/x/y"), Some(4096));
        let a = out.find("[a]").expect("a");
        let b = out.find("[b]").expect("b");
        let first = out.find("filename=/x/y").expect("override");
        assert!(a < first && first < b, "{out}");
        assert_eq!(out.matches("ioengine=io_uring").count(), 2);
        assert!(!out[..a].contains("filename"), "not in [global]: {out}");
    }

    #[test]
    fn fio_json_figures() {
        let json: Value = serde_json::from_str(
            r#"{"jobs":[{"job_runtime":1000,"usr_cpu":25.0,"sys_cpu":50.0,
                "read":{"iops":1000.0,"bw_bytes":4096000.0,"total_ios":1000},
                "write":{"iops":0.0,"bw_bytes":0.0,"total_ios":0},
                "trim":{"iops":0.0,"bw_bytes":0.0,"total_ios":0}}]}"#,
        )
        .expect("json");
        let (f, ios) = fio_figures(&json).expect("figures");
        assert_eq!(ios, 1000.0);
        assert_eq!(f.iops, 1000.0);
        assert!((f.cpu_per_io_ns - 750_000.0).abs() < 1e-6);
    }
}
