//! fio's JSON output (`--output-format=json` and `json+`) with every key
//! fio 3.33 writes for a job, in fio's units, so tools written for fio read
//! it; plus an `elevator` object with the queue's and the device's figures
//! (and each job's `notes`: options accepted that change nothing).
//!
//! Units as fio: `io_bytes` and `bw_bytes` in bytes (per second), `io_kbytes`
//! in KiB, `bw` in KiB/s, `runtime` in ms, latencies in ns. The output is
//! deterministic for simulated runs: `timestamp` and `timestamp_ms` are 0
//! and `time` is `"simulated"` (a real run's are when it ended, `time` as
//! fio prints it; whether the clock was virtual or real is also
//! `elevator.time`), and simulated jobs use no CPU (`usr_cpu` and `sys_cpu`
//! are 0). Runs on
//! real devices report the engine thread's CPU time as each job's `usr_cpu`
//! and `sys_cpu` (percent of the run's wall time; the jobs share the thread,
//! and fio too counts only a job's own thread), and the whole process's
//! (io_uring workers included) under `elevator.cpu`.

use elevator_core::Histogram;

use crate::job::{JobFile, UnifiedRw};
use crate::result::{DirStats, RunResult, Summary};
use crate::workload::prio;
use serde_json::{Map, Value, json};

use super::fmt::{ctime, date_ms, depth_pct, lat_pct};
use super::text::{BATCH_KEYS, DEPTH_KEYS, cpu_pct};
use super::{DiskUtil, Stanza, groups, rate, stanzas};

pub use super::FIO_VERSION;

/// `min`, `max`, `mean`, `stddev` (fio's, over `N - 1`) and `N`.
fn summary(s: &Summary) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("min".into(), json!(s.min()));
    m.insert("max".into(), json!(s.max()));
    m.insert("mean".into(), json!(s.mean()));
    m.insert("stddev".into(), json!(s.sample_stddev()));
    m.insert("N".into(), json!(s.count));
    m
}

/// A latency object: the summary, with `percentile` (keys as fio's `%f`,
/// in numeric order) when `h` is given and holds values, and json+'s
/// `bins` when `plus`.
fn latency(s: &Summary, h: Option<&Histogram>, list: &[f64], plus: bool) -> Value {
    let mut m = summary(s);
    if let Some(h) = h
        && h.count() > 0
    {
        let mut pct = Map::new();
        for &p in list {
            pct.insert(format!("{p:.6}"), json!(h.fio_percentile(p)));
        }
        m.insert("percentile".into(), Value::Object(pct));
        if plus {
            let mut bins = Map::new();
            for (v, c) in h.bins() {
                bins.insert(v.to_string(), json!(c));
            }
            m.insert("bins".into(), Value::Object(bins));
        }
    }
    Value::Object(m)
}

fn dir(s: &Stanza<'_>, d: &DirStats, agg: f64, plus: bool) -> Value {
    let list = s.percentiles();
    let mut v = dir_object(s, d, agg, &list, plus);
    if let (Some(p), Value::Object(m)) = (prios(s, d, &list, plus), &mut v) {
        m.insert("prios".into(), p);
    }
    v
}

/// fio's `prios` (its `clat_prio`): with two priorities or more that
/// completed I/Os, each one's class, level and latencies (completion
/// latencies, or total ones with `lat_percentiles`).
fn prios(s: &Stanza<'_>, d: &DirStats, list: &[f64], plus: bool) -> Option<Value> {
    if d.prios.iter().filter(|p| p.lat.count() > 0).count() < 2 {
        return None;
    }
    let total = s.spec.is_some_and(|j| j.lat_percentiles);
    let key = if total { "lat_ns" } else { "clat_ns" };
    let pct = s.clat_percentiles() || total;
    let out = d
        .prios
        .iter()
        .filter(|p| p.lat.count() > 0)
        .map(|p| {
            let mut m = Map::new();
            m.insert("prioclass".into(), json!(prio::ioprio_class(p.prio)));
            m.insert("prio".into(), json!(prio::ioprio_level(p.prio)));
            let h = pct.then_some(&p.lat);
            m.insert(key.into(), latency(p.lat.summary(), h, list, plus));
            Value::Object(m)
        })
        .collect();
    Some(Value::Array(out))
}

/// A direction's object, without `prios`.
fn dir_object(s: &Stanza<'_>, d: &DirStats, agg: f64, list: &[f64], plus: bool) -> Value {
    let runtime_ns = s.runtime();
    let bw_bytes = rate(d.bytes, runtime_ns);
    // fio: whole bytes per second, and KiB/s by integer division.
    let bw_b = bw_bytes as u64;
    let bw_kib = bw_b / 1024;
    let iops = rate(d.ios, runtime_ns);
    let runtime_ms = if d.ios == 0 {
        0
    } else {
        runtime_ns / 1_000_000
    };
    let bw_agg = super::bw_share(d, agg);
    let clat_hist = s.clat_percentiles().then_some(&d.clat);
    json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes / 1024,
        "bw_bytes": bw_b,
        "bw": bw_kib,
        "iops": iops,
        "runtime": runtime_ms,
        "total_ios": d.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": latency(&d.slat, d.slat_hist.as_ref(), list, plus),
        "clat_ns": latency(d.clat.summary(), clat_hist, list, plus),
        "lat_ns": latency(&d.lat, d.lat_hist.as_ref(), list, plus),
        "bw_min": d.bw.min,
        "bw_max": d.bw.max,
        "bw_agg": bw_agg,
        "bw_mean": d.bw.mean,
        "bw_dev": d.bw.stddev(),
        "bw_samples": d.bw.samples,
        "iops_min": d.iops.min,
        "iops_max": d.iops.max,
        "iops_mean": d.iops.mean,
        "iops_stddev": d.iops.stddev(),
        "iops_samples": d.iops.samples,
        // Not fio's: I/Os that failed (fio stops a job at its first error
        // unless told to continue).
        "errors": d.errors,
    })
}

/// Options as fio lists them: bare switches (`time_based`,
/// `group_reporting`) are left out, as fio leaves them out.
fn options(opts: &[(String, String)]) -> Value {
    let mut m = Map::new();
    for (k, v) in opts.iter().filter(|(_, v)| !v.is_empty()) {
        m.insert(k.clone(), json!(v));
    }
    Value::Object(m)
}

fn dist(counts: &[u64], keys: &[&str], pct: fn(u64, u64) -> f64) -> Value {
    let total: u64 = counts.iter().sum();
    let mut m = Map::new();
    for (k, &c) in keys.iter().zip(counts) {
        m.insert((*k).to_string(), json!(pct(c, total)));
    }
    Value::Object(m)
}

/// The JSON document for `run` of `jobs` (fio's `json`).
pub fn render(jobs: &JobFile, run: &RunResult, device_name: &str) -> Value {
    render_with(jobs, run, device_name, false)
}

/// The JSON document for `run` of `jobs`; with `plus`, fio's `json+`
/// (latency `bins` in each latency object that has percentiles).
pub fn render_with(jobs: &JobFile, run: &RunResult, device_name: &str, plus: bool) -> Value {
    let out: Vec<Value> = job_values(jobs, run, plus).collect();
    document(jobs, run, device_name, out)
}

/// [`render_with`] as the text `serde_json::to_string_pretty` makes of it,
/// written one job at a time: the document never holds every job's values
/// at once (4096 jobs' objects would take hundreds of MiB).
pub fn render_text(jobs: &JobFile, run: &RunResult, device_name: &str, plus: bool) -> String {
    let doc = document(jobs, run, device_name, Vec::new());
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    // The document's own "jobs" (two spaces in: a top-level key) is empty
    // here; the jobs go in its place, indented as they would be there.
    const EMPTY: &str = "\n  \"jobs\": []";
    let Some(at) = text.find(EMPTY) else {
        return text;
    };
    let mut jobs_text = String::from("\n  \"jobs\": [");
    for (i, job) in job_values(jobs, run, plus).enumerate() {
        if i > 0 {
            jobs_text.push(',');
        }
        jobs_text.push_str("\n    ");
        let one = serde_json::to_string_pretty(&job).unwrap_or_default();
        jobs_text.push_str(&one.replace('\n', "\n    "));
    }
    if jobs_text.ends_with('[') {
        jobs_text.push(']');
    } else {
        jobs_text.push_str("\n  ]");
    }
    text.replace_range(at..at + EMPTY.len(), &jobs_text);
    text
}

/// Each stanza's JSON object, made when it is reached.
fn job_values<'a>(
    jobs: &'a JobFile,
    run: &'a RunResult,
    plus: bool,
) -> impl Iterator<Item = Value> + 'a {
    let (usr_cpu, sys_cpu) = cpu_pct(run);
    let groups = groups(run);
    stanzas(jobs, run).map(move |s| job_value(&s, &groups, usr_cpu, sys_cpu, plus))
}

/// One stanza's JSON object.
fn job_value(
    s: &Stanza<'_>,
    groups: &[super::Group],
    usr_cpu: f64,
    sys_cpu: f64,
    plus: bool,
) -> Value {
    const LAT_KEYS: [&str; 12] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    let g = groups.iter().find(|g| g.id == s.group);
    let agg = |i: usize| g.map_or(0.0, |g| g.agg(i));
    let opts = s
        .spec
        .map(|j| options(&j.options))
        .unwrap_or_else(|| json!({}));
    let runtime = s.runtime();
    let x = &s.extra;
    let list = s.percentiles();
    let mut job = Map::new();
    job.insert("jobname".into(), json!(s.name));
    job.insert("groupid".into(), json!(s.group));
    job.insert("job_start".into(), json!(s.start / 1_000_000));
    job.insert("error".into(), json!(s.error));
    if s.continues() {
        job.insert("total_err".into(), json!(s.total_err));
        job.insert("first_error".into(), json!(s.first_error));
    }
    job.insert("eta".into(), json!(0));
    job.insert("elapsed".into(), json!(runtime.div_ceil(1_000_000_000)));
    job.insert("job options".into(), opts);
    let unified = s.unified();
    if unified != UnifiedRw::Mixed {
        for (i, name) in crate::result::DIR_NAMES.iter().enumerate() {
            job.insert((*name).into(), dir(s, &s.dirs[i], agg(i), plus));
        }
        job.insert(
            "sync".into(),
            json!({
                "total_ios": x.sync.count(),
                "lat_ns": latency(x.sync.summary(), Some(&x.sync), &list, plus),
            }),
        );
    }
    if unified != UnifiedRw::None {
        let all = (0..3).map(agg).sum();
        job.insert("mixed".into(), dir(s, &s.mixed(), all, plus));
    }
    let total: u64 = s.dirs.iter().map(|d| d.ios).sum();
    let lat = |c: &[u64]| {
        let mut m = Map::new();
        for (k, &n) in LAT_KEYS.iter().zip(c) {
            m.insert((*k).to_string(), json!(lat_pct(n, total)));
        }
        Value::Object(m)
    };
    let latency = s.latency();
    let rest = json!({
        "job_runtime": runtime / 1_000_000,
        "usr_cpu": usr_cpu,
        "sys_cpu": sys_cpu,
        "ctx": 0,
        "majf": 0,
        "minf": 0,
        "iodepth_level": dist(&x.depth, &DEPTH_KEYS, depth_pct),
        "iodepth_submit": dist(&x.submit, &BATCH_KEYS, depth_pct),
        "iodepth_complete": dist(&x.complete, &BATCH_KEYS, depth_pct),
        "latency_ns": lat(&x.lat_ns),
        "latency_us": lat(&x.lat_us),
        "latency_ms": lat(&x.lat_ms),
        "latency_depth": latency.0,
        "latency_target": latency.1,
        "latency_percentile": latency.3,
        "latency_window": latency.2,
    });
    if let Value::Object(m) = rest {
        job.extend(m);
    }
    if let Some(ss) = s.steady {
        job.insert("steadystate".into(), steadystate(ss));
    }
    Value::Object(job)
}

/// fio's `steadystate` object: the criterion, whether it was attained, the
/// last tested values, and the window's samples (bytes/s and IOPS).
fn steadystate(ss: &crate::workload::SteadyResult) -> Value {
    json!({
        "ss": ss.spec.name(),
        "duration": ss.spec.dur,
        "attained": u8::from(ss.attained),
        "criterion": format!("{:.6}{}", ss.criterion as f32, if ss.spec.percent { "%" } else { "" }),
        "max_deviation": ss.max_deviation,
        "slope": ss.slope,
        "data": {
            "bw_mean": ss.bw_mean(),
            "iops_mean": ss.iops_mean(),
            "iops": ss.iops,
            "bw": ss.bw,
        },
    })
}

/// The document around the jobs' objects `out`.
fn document(jobs: &JobFile, run: &RunResult, device_name: &str, out: Vec<Value>) -> Value {
    // fio's date keys keep their types; a simulation, which has no date,
    // gives 0, 0 and "simulated".
    let date = date_ms(run);
    let timestamp_ms = date.unwrap_or(0);
    let disk = DiskUtil::of(run);
    let notes: Vec<Value> = jobs
        .jobs
        .iter()
        .filter(|j| !j.notes.is_empty())
        .map(|j| {
            json!({
                "job": j.name,
                "notes": j.notes.iter().map(|(o, why)| json!({"option": o, "note": why})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let q = &run.queue;
    json!({
        "fio version": FIO_VERSION,
        "timestamp": timestamp_ms / 1000,
        "timestamp_ms": timestamp_ms,
        "time": date.map_or_else(|| "simulated".to_string(), |ms| ctime(ms / 1000)),
        "global options": options(&jobs.global_options),
        "jobs": out,
        "disk_util": [{
            "name": device_name,
            "read_ios": disk.ios[0],
            "write_ios": disk.ios[1],
            "read_merges": disk.merges[0],
            "write_merges": disk.merges[1],
            "read_ticks": disk.ticks[0],
            "write_ticks": disk.ticks[1],
            "in_queue": disk.in_queue,
            "util": disk.util,
        }],
        "elevator": {
            "version": env!("CARGO_PKG_VERSION"),
            "time": if run.cpu.is_some() { "real" } else { "simulated" },
            "note": super::no_time_note(run),
            "notes": notes,
            "scheduler": run.scheduler,
            "device": run.device,
            "simulated_ns": if run.cpu.is_some() { 0 } else { run.elapsed },
            "elapsed_ns": run.elapsed,
            "events": run.events,
            "ios": run.ios,
            "cpu": run.cpu.map(|c| json!({
                "process_ns": c.process_ns,
                "other_threads_ns": c.other_threads_ns(),
                "per_io_ns": c.per_io(run.ios),
                "thread_user_ns": c.thread_user_ns,
                "thread_system_ns": c.thread_system_ns,
                "thread_per_io_ns": c.thread_per_io(run.ios),
            })),
            "queue": {
                "bios": q.bios,
                "bios_split": q.bios_split,
                "requests": q.requests,
                "back_merges": q.back_merges,
                "front_merges": q.front_merges,
                "plug_merges": q.plug_merges,
                "request_merges": q.request_merges,
                "merge_limit_hits": q.merge_limit_hits,
                "dispatches": q.dispatches,
                "requeues": q.requeues,
                "completions": q.completions,
                "queue_time_ns": {
                    "mean": q.queue_time.mean(),
                    "p50": q.queue_time.percentile(50.0),
                    "p99": q.queue_time.percentile(99.0),
                    "max": q.queue_time.max(),
                },
            },
            "locks": (!run.locks.is_empty()).then(|| super::locks::to_json(&elevator_core::lockstat::LockReport {
                elapsed_ns: run.elapsed,
                cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
                locks: run.locks.clone(),
            })),
            "device_stats": {
                "ios": run.device_stats.ios,
                "busy_ns": run.device_stats.busy_ns,
                "positioning_ns": run.device_stats.positioning_ns,
                "transfer_ns": run.device_stats.transfer_ns,
                "util": run.utilisation(),
            },
        },
    })
}
