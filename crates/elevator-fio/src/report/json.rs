//! fio's JSON output (`--output-format=json`) for a simulated run, with the
//! keys and units fio uses, so tools written for fio read it; plus an
//! `elevator` object with the queue's and the device's figures.
//!
//! Units as fio: `io_bytes` and `bw_bytes` in bytes (per second), `io_kbytes`
//! in KiB, `bw` in KiB/s, `runtime` in ms, latencies in ns. The output is
//! deterministic for simulated runs: `timestamp` is `SOURCE_DATE_EPOCH` (or
//! 0), and simulated jobs use no CPU (`usr_cpu` and `sys_cpu` are 0). Runs on
//! real devices report the engine thread's CPU time as each job's `usr_cpu`
//! and `sys_cpu` (percent of the run's wall time; the jobs share the thread,
//! and fio too counts only a job's own thread), and the whole process's
//! (io_uring workers included) under `elevator.cpu`.

use crate::job::JobFile;
use crate::result::{DirStats, RunResult, Summary};
use serde_json::{Map, Value, json};

use super::{PERCENTILES, rate, stanzas};

/// fio's version string, as tools that check it expect a `fio-` prefix.
pub const FIO_VERSION: &str = concat!("fio-3.35 (elevator ", env!("CARGO_PKG_VERSION"), ")");

fn summary(s: &Summary) -> Value {
    json!({
        "min": s.min(),
        "max": s.max(),
        "mean": s.mean(),
        "stddev": s.stddev(),
        "N": s.count,
    })
}

fn dir(d: &DirStats, runtime_ns: u64) -> Value {
    let mut pct = Map::new();
    for p in PERCENTILES {
        let v = if d.ios == 0 { 0 } else { d.clat.percentile(p) };
        pct.insert(format!("{p:.6}"), json!(v));
    }
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
        "slat_ns": summary(&d.slat),
        "clat_ns": {
            "min": d.clat.min(),
            "max": d.clat.max(),
            "mean": d.clat.mean(),
            "stddev": d.clat.stddev(),
            "N": d.clat.count(),
            "percentile": pct,
        },
        "lat_ns": summary(&d.lat),
        // One aggregate sample: the simulation does not sample per second.
        "bw_min": bw_kib,
        "bw_max": bw_kib,
        "bw_agg": 100.0,
        "bw_mean": bw_bytes / 1024.0,
        "bw_dev": 0.0,
        "bw_samples": u64::from(d.ios > 0),
        "iops_min": iops.round() as u64,
        "iops_max": iops.round() as u64,
        "iops_mean": iops,
        "iops_stddev": 0.0,
        "iops_samples": u64::from(d.ios > 0),
        "errors": d.errors,
    })
}

fn options(opts: &[(String, String)]) -> Value {
    let mut m = Map::new();
    for (k, v) in opts {
        m.insert(k.clone(), json!(v));
    }
    Value::Object(m)
}

/// The JSON document for `run` of `jobs`.
pub fn render(jobs: &JobFile, run: &RunResult, device_name: &str) -> Value {
    let timestamp: u64 = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (usr_cpu, sys_cpu) = match run.cpu {
        Some(c) if run.elapsed > 0 => (
            c.thread_user_ns as f64 * 100.0 / run.elapsed as f64,
            c.thread_system_ns as f64 * 100.0 / run.elapsed as f64,
        ),
        _ => (0.0, 0.0),
    };
    let mut out = Vec::new();
    for s in stanzas(jobs, run) {
        let opts = jobs
            .jobs
            .get(s.job_index)
            .map(|j| options(&j.options))
            .unwrap_or_else(|| json!({}));
        let runtime = s.runtime();
        let empty = DirStats::default();
        let sync = json!({
            "total_ios": 0,
            "lat_ns": summary(&Summary::default()),
        });
        out.push(json!({
            "jobname": s.name,
            "groupid": s.group,
            "job_start": s.start / 1_000_000,
            "error": 0,
            "eta": 0,
            "elapsed": runtime.div_ceil(1_000_000_000),
            "job options": opts,
            "read": dir(&s.dirs[0], runtime),
            "write": dir(&s.dirs[1], runtime),
            "trim": dir(if s.dirs[2].ios > 0 { &s.dirs[2] } else { &empty }, runtime),
            "sync": sync,
            "job_runtime": runtime / 1_000_000,
            "usr_cpu": usr_cpu,
            "sys_cpu": sys_cpu,
            "ctx": 0,
            "majf": 0,
            "minf": 0,
        }));
    }
    let q = &run.queue;
    let reads: u64 = run.jobs.iter().map(|j| j.dirs[0].ios).sum();
    let writes: u64 = run.jobs.iter().map(|j| j.dirs[1].ios + j.dirs[2].ios).sum();
    let busy_ms = run.device_stats.busy_ns / 1_000_000;
    json!({
        "fio version": FIO_VERSION,
        "timestamp": timestamp,
        "timestamp_ms": timestamp * 1000,
        "time": if run.cpu.is_some() { "real" } else { "simulated" },
        "global options": options(&jobs.global_options),
        "jobs": out,
        "disk_util": [{
            "name": device_name,
            "read_ios": reads,
            "write_ios": writes,
            "read_merges": 0,
            "write_merges": 0,
            "read_ticks": busy_ms,
            "write_ticks": 0,
            "in_queue": busy_ms,
            "util": run.utilisation() * 100.0,
        }],
        "elevator": {
            "note": super::no_time_note(run),
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
            "locks": (!run.locks.is_empty()).then(|| crate::locks::to_json(&crate::locks::LockReport {
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
