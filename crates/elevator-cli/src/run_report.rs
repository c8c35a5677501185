//! `run --report FILE.html` and `compare --report FILE.html`: the plots of
//! any job as one self-contained HTML page. The run's trace events feed an
//! [`PlotRecorder`](crate::report::observe::PlotRecorder) as they happen (nothing is stored per event); latency comes
//! from the run's own histograms, the heads' positions (on a disk model)
//! from the device.

use std::path::Path;

use anyhow::{Context, Result};
use elevator_core::Histogram;
use elevator_fio::result::{DIR_NAMES as DIRS, RunResult};

use crate::report::figure::{Axis, Figure, Mark, XyPlot};
use crate::report::html::{Section, page};
use crate::report::observe::{SharedObserver, heads_plot, latency_cdf, latency_plot};

/// The observer a reported run feeds: throughput in 10 ms intervals (wider
/// for long runs), the timeline over 1.0-1.1 s of the run, or over its first
/// 100 ms if it is shorter.
pub fn observer() -> SharedObserver {
    SharedObserver::new(
        10_000_000,
        &[(0, 100_000_000), (1_000_000_000, 1_100_000_000)],
    )
}

/// Completion latency per job and direction.
fn job_latencies(run: &RunResult) -> Vec<crate::report::figure::Series> {
    let mut out = Vec::new();
    for (i, j) in run.jobs.iter().enumerate() {
        // Clones share their job's name: number them as the trace does.
        let same = run.jobs.iter().filter(|k| k.name == j.name).count();
        let name = if same > 1 {
            format!("{} ({})", j.name, i + 1)
        } else {
            j.name.clone()
        };
        for (d, dir) in j.dirs.iter().enumerate() {
            if d < DIRS.len() && dir.clat.count() > 0 {
                out.push(latency_cdf(&format!("{name}, {}", DIRS[d]), &dir.clat));
            }
        }
    }
    out
}

/// Write `run`'s report.
pub fn write_run(
    path: &Path,
    job: &str,
    device: &str,
    scheduler: &str,
    run: &RunResult,
    observer: &SharedObserver,
    text: &str,
) -> Result<()> {
    let figures = observer.with(|o| {
        let mut f = vec![
            latency_plot("Completion latency per job", job_latencies(run)),
            o.throughput("Throughput over time per job"),
            o.timeline("Who the device served; idle with requests waiting (grey)"),
        ];
        if o.has_heads() {
            f.push(heads_plot(
                "Where the heads went (cylinder of each media access)",
                vec![o.heads(scheduler)],
            ));
        }
        f
    });
    let section = Section {
        id: "run".into(),
        heading: format!("{job} on {device}, {scheduler}"),
        lead: format!("elevator run {job} --device {device} --scheduler {scheduler}"),
        figures,
        text: text.to_string(),
        ..Section::default()
    };
    write(path, &format!("elevator run: {job}"), &[section])
}

/// Write `compare`'s report: the schedulers side by side, then a section
/// per scheduler.
pub fn write_compare(
    path: &Path,
    job: &str,
    device: &str,
    schedulers: &[String],
    runs: &[RunResult],
    observers: &[SharedObserver],
    text: &str,
) -> Result<()> {
    let mut cdfs = Vec::new();
    let mut totals = Vec::new();
    let mut heads = Vec::new();
    for ((sched, run), o) in schedulers.iter().zip(runs).zip(observers) {
        for (d, dir) in DIRS.iter().enumerate() {
            let mut h = Histogram::new();
            for j in &run.jobs {
                if let Some(s) = j.dirs.get(d) {
                    h.merge(&s.clat);
                }
            }
            if h.count() > 0 {
                cdfs.push(latency_cdf(&format!("{sched} ({dir})"), &h));
            }
        }
        totals.push(o.with(|o| o.total(sched)));
        if let Some(h) = o.with(|o| o.has_heads().then(|| o.heads(sched))) {
            heads.push(h);
        }
    }
    let mut sections = vec![Section {
        id: "compare".into(),
        heading: format!("{job} on {device}: {}", schedulers.join(", ")),
        lead: format!(
            "elevator compare {job} --device {device} --schedulers {}",
            schedulers.join(",")
        ),
        figures: vec![
            latency_plot("Completion latency per scheduler, every job", cdfs),
            Figure::Xy(XyPlot {
                title: "Throughput over time per scheduler, every job".into(),
                x: Axis::linear("time (s)"),
                y: Axis::linear("MB/s"),
                mark: Mark::Lines,
                panels: false,
                series: totals,
            }),
        ],
        text: text.to_string(),
        ..Section::default()
    }];
    if !heads.is_empty() {
        sections[0].figures.push(heads_plot(
            "Where the heads went per scheduler (cylinder of each media access)",
            heads,
        ));
    }
    for ((sched, run), o) in schedulers.iter().zip(runs).zip(observers) {
        let figures = o.with(|o| {
            vec![
                latency_plot(
                    &format!("{sched}: completion latency per job"),
                    job_latencies(run),
                ),
                o.throughput(&format!("{sched}: throughput over time per job")),
                o.timeline(&format!(
                    "{sched}: who the device served; idle with requests waiting (grey)"
                )),
            ]
        });
        sections.push(Section {
            id: sched.clone(),
            heading: sched.clone(),
            figures,
            ..Section::default()
        });
    }
    write(path, &format!("elevator compare: {job}"), &sections)
}

/// Create the report's file at `path` before any run starts, so that a
/// directory that is not there or not writable is said at once, not after
/// every run has finished.
pub fn check_writable(path: &Path) -> Result<()> {
    std::fs::File::create(path)
        .map(drop)
        .with_context(|| format!("--report {}: cannot write it", path.display()))
}

fn write(path: &Path, title: &str, sections: &[Section]) -> Result<()> {
    let html = page(
        title,
        &format!("elevator {}", env!("CARGO_PKG_VERSION")),
        &[],
        sections,
    )?;
    std::fs::write(path, html).with_context(|| format!("writing the report {}", path.display()))?;
    eprintln!("report: {}", path.display());
    Ok(())
}
