//! fio's normal (text) output for a simulated run, plus a section with the
//! queue's and the device's own figures.

use std::fmt::Write;

use crate::job::JobFile;
use crate::result::{DirStats, RunResult, Summary};

use super::{PERCENTILES, groups, rate, stanzas};

const DIR_NAMES: [(&str, &str); 3] = [("read", "READ"), ("write", "WRITE"), ("trim", "TRIM")];

/// `n` with binary (`KiB`) units, as fio prints sizes and rates.
pub fn iec(n: f64) -> String {
    scaled(n, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB", "PiB"])
}

/// `n` with decimal (`kB`) units.
pub fn si(n: f64) -> String {
    scaled(n, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB"])
}

fn scaled(mut n: f64, step: f64, units: &[&str]) -> String {
    let mut u = 0;
    while n >= 10_000.0 && u + 1 < units.len() {
        n /= step;
        u += 1;
    }
    if n >= 100.0 || u == 0 {
        format!("{n:.0}{}", units[u])
    } else {
        format!("{n:.1}{}", units[u])
    }
}

/// IOPS as fio prints them (`80`, `12.3k`).
pub fn iops(n: f64) -> String {
    if n < 1000.0 {
        format!("{n:.0}")
    } else if n < 1_000_000.0 {
        format!("{:.1}k", n / 1000.0)
    } else {
        format!("{:.2}M", n / 1e6)
    }
}

/// The unit fio would print latencies of this size in, and its size in ns.
fn lat_unit(ns: f64) -> (&'static str, f64) {
    if ns < 10_000.0 {
        ("nsec", 1.0)
    } else if ns < 10_000_000.0 {
        ("usec", 1e3)
    } else {
        ("msec", 1e6)
    }
}

fn summary_line(out: &mut String, label: &str, s: &Summary) {
    let (unit, div) = lat_unit(s.mean());
    let _ = writeln!(
        out,
        "    {label} ({unit}): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
        s.min() as f64 / div,
        s.max() as f64 / div,
        s.mean() / div,
        s.stddev() / div
    );
}

fn dir_stanza(out: &mut String, name: &str, d: &DirStats, runtime: u64) {
    let bw = rate(d.bytes, runtime);
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}/s ({}/s)({}/{}msec)",
        iops(rate(d.ios, runtime)),
        iec(bw),
        si(bw),
        iec(d.bytes as f64),
        runtime / 1_000_000
    );
    summary_line(out, "slat", &d.slat);
    let c = &d.clat;
    let (unit, div) = lat_unit(c.mean());
    let _ = writeln!(
        out,
        "    clat ({unit}): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
        c.min() as f64 / div,
        c.max() as f64 / div,
        c.mean() / div,
        c.stddev() / div
    );
    let mut lat = d.lat;
    if lat.count == 0 {
        lat = Summary::default();
    }
    let (unit_l, div_l) = lat_unit(lat.mean());
    let _ = writeln!(
        out,
        "     lat ({unit_l}): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
        lat.min() as f64 / div_l,
        lat.max() as f64 / div_l,
        lat.mean() / div_l,
        lat.stddev() / div_l
    );
    let _ = writeln!(out, "    clat percentiles ({unit}):");
    let lines: Vec<&[f64]> = PERCENTILES.chunks(4).collect();
    for (i, chunk) in lines.iter().enumerate() {
        let cells: Vec<String> = chunk
            .iter()
            .map(|&p| format!("{p:5.2}th=[{:5.0}]", c.percentile(p) as f64 / div))
            .collect();
        let end = if i + 1 < lines.len() { "," } else { "" };
        let _ = writeln!(out, "     | {}{end}", cells.join(", "));
    }
}

/// The whole text report.
pub fn render(jobs: &JobFile, run: &RunResult, device_name: &str) -> String {
    let mut out = String::new();
    if let Some(note) = super::no_time_note(run) {
        let _ = writeln!(out, "note: {note}\n");
    }
    for s in stanzas(jobs, run) {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err= 0: ctx={}: {}",
            s.name,
            s.group,
            s.jobs,
            s.ctx,
            if run.cpu.is_some() {
                "real time"
            } else {
                "simulated"
            }
        );
        for (i, (name, _)) in DIR_NAMES.iter().enumerate() {
            if s.dirs[i].ios > 0 {
                dir_stanza(&mut out, name, &s.dirs[i], s.runtime());
            }
        }
        out.push('\n');
    }
    for g in groups(run) {
        let _ = writeln!(out, "Run status group {} (all jobs):", g.id);
        for (i, (_, upper)) in DIR_NAMES.iter().enumerate() {
            let d = &g.dirs[i];
            if d.bytes == 0 {
                continue;
            }
            let bw = rate(d.bytes, g.end - g.start);
            let _ = writeln!(
                out,
                "  {upper:>5}: bw={}/s ({}/s), {}/s-{}/s ({}/s-{}/s), io={} ({}), run={}-{}msec",
                iec(bw),
                si(bw),
                iec(d.min_bw),
                iec(d.max_bw),
                si(d.min_bw),
                si(d.max_bw),
                iec(d.bytes as f64),
                si(d.bytes as f64),
                d.min_run / 1_000_000,
                d.max_run / 1_000_000
            );
        }
    }
    let reads: u64 = run.jobs.iter().map(|j| j.dirs[0].ios).sum();
    let writes: u64 = run.jobs.iter().map(|j| j.dirs[1].ios + j.dirs[2].ios).sum();
    let _ = writeln!(out, "\nDisk stats (read/write):");
    let _ = writeln!(
        out,
        "  {device_name}: ios={reads}/{writes}, merge={}, util={:.2}%",
        run.queue.bio_merges(),
        run.utilisation() * 100.0
    );
    let q = &run.queue;
    let dev = &run.device_stats;
    let _ = writeln!(
        out,
        "\nelevator: scheduler {} on {}",
        run.scheduler, run.device
    );
    let _ = writeln!(
        out,
        "  queue: bios={}, requests={}, split={}, merges: back={} front={} (plug={}) request={}, \
         limit hits={}",
        q.bios,
        q.requests,
        q.bios_split,
        q.back_merges,
        q.front_merges,
        q.plug_merges,
        q.request_merges,
        q.merge_limit_hits
    );
    let qt = &q.queue_time;
    let (unit, div) = lat_unit(qt.mean());
    let _ = writeln!(
        out,
        "  dispatched={}, time in queue ({unit}): avg={:.2}, p50={:.0}, p99={:.0}, max={:.0}",
        q.dispatches,
        qt.mean() / div,
        qt.percentile(50.0) as f64 / div,
        qt.percentile(99.0) as f64 / div,
        qt.max() as f64 / div
    );
    let _ = write!(
        out,
        "  device: ios={}, util={:.2}%",
        dev.ios,
        run.utilisation() * 100.0
    );
    if dev.positioning_ns > 0 {
        // Disks: where the heads' time went (summed over a RAID's members).
        let _ = write!(
            out,
            ", heads spent {:.2} s positioning and {:.2} s transferring",
            dev.positioning_ns as f64 / 1e9,
            dev.transfer_ns as f64 / 1e9
        );
    }
    out.push('\n');
    match run.cpu {
        None => {
            let _ = writeln!(
                out,
                "  simulated {:.3} s: {} I/Os, {} events",
                run.elapsed as f64 / 1e9,
                run.ios,
                run.events
            );
        }
        Some(cpu) => {
            let _ = writeln!(
                out,
                "  ran {:.3} s: {} I/Os, {} loop passes",
                run.elapsed as f64 / 1e9,
                run.ios,
                run.events
            );
            let _ = writeln!(
                out,
                "  cpu: engine thread usr={:.3} s sys={:.3} s, {:.0} ns per I/O; \
                 whole process {:.3} s (other threads, io_uring workers: {:.3} s), \
                 {:.0} ns per I/O",
                cpu.thread_user_ns as f64 / 1e9,
                cpu.thread_system_ns as f64 / 1e9,
                cpu.thread_per_io(run.ios),
                cpu.process_ns as f64 / 1e9,
                cpu.other_threads_ns() as f64 / 1e9,
                cpu.per_io(run.ios)
            );
        }
    }
    if !run.locks.is_empty() {
        let report = crate::locks::LockReport {
            elapsed_ns: run.elapsed,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            locks: run.locks.clone(),
        };
        out.push_str("\nlocks (lockmeter):\n");
        out.push_str(&crate::locks::lockmeter_table(&report));
        out.push_str("\nlocks (lock_stat):\n");
        out.push_str(&crate::locks::lockstat_table(&report));
    }
    out
}
