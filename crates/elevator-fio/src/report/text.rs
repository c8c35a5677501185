//! fio's normal (text) output, line for line as fio 3.33 prints it (header,
//! job stanzas, run status groups, disk stats), then a section with the
//! queue's and the device's own figures.

use std::fmt::Write;

use elevator_core::Histogram;

use crate::job::{JobFile, UnifiedRw};
use crate::result::{DirStats, RunResult, Summary};

use super::fmt::{date_text, depth_pct, lat_pct, num2str, precision};
use super::{DiskUtil, FIO_VERSION, GroupDir, Stanza, groups, rate, stanzas};

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

/// The unit elevator's own figures print latencies of this size in, and
/// its size in ns.
fn lat_unit(ns: f64) -> (&'static str, f64) {
    if ns < 10_000.0 {
        ("nsec", 1.0)
    } else if ns < 10_000_000.0 {
        ("usec", 1e3)
    } else {
        ("msec", 1e6)
    }
}

/// fio's `display_lat`: `    NAME (unit): min=, max=, avg=, stdev=`, in
/// ms when the minimum and mean pass 1 ms, µs when they pass 1 µs.
fn lat_line(out: &mut String, name: &str, s: &Summary) {
    let (mut min, mut max) = (s.min(), s.max());
    let (mut mean, mut dev) = (s.mean(), s.sample_stddev());
    let mut unit = "nsec";
    for (div, u) in [(1_000_000u64, "msec"), (1_000, "usec")] {
        if min > div && mean > div as f64 {
            min /= div;
            max /= div;
            mean /= div as f64;
            dev /= div as f64;
            unit = u;
            break;
        }
    }
    let _ = writeln!(
        out,
        "    {name} ({unit}): min={}, max={}, avg={mean:5.02}, stdev={dev:5.02}",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, "")
    );
}

/// fio's percentile table: `    NAME percentiles (unit):` then rows of
/// `|  1.00th=[  141],` as many as fit in 80 columns.
fn percentile_table(out: &mut String, name: &str, h: &Histogram, list: &[f64]) {
    if h.count() == 0 || list.is_empty() {
        return;
    }
    let vals: Vec<u64> = list.iter().map(|&p| h.fio_percentile(p)).collect();
    let minv = vals.iter().copied().min().unwrap_or(0);
    let maxv = vals.iter().copied().max().unwrap_or(0);
    let (scale, div, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = writeln!(out, "    {name} percentiles ({unit}):");
    let prec = precision(list);
    let width = 5.max(((maxv / div).max(1) as f64).log10() as usize + 1);
    let per_line = (73 / (prec + 10 + width)).max(1);
    out.push_str("     |");
    for (j, (&p, &v)) in list.iter().zip(&vals).enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let mut v = v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let last = j + 1 == list.len();
        let _ = write!(
            out,
            " {p:>w$.prec$}th=[{v:>width$}]{}",
            if last { '\n' } else { ',' },
            w = prec + 3,
        );
        if !last && j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// The priorities of a direction that completed I/Os, when there are two
/// or more (fio reports per-priority latencies only then).
fn prio_lats(d: &DirStats) -> Vec<&crate::result::PrioLat> {
    let with: Vec<_> = d.prios.iter().filter(|p| p.lat.count() > 0).collect();
    if with.len() < 2 { Vec::new() } else { with }
}

/// `class/level`, as fio names a priority.
fn prio_name(prio: u16) -> String {
    use crate::workload::prio::{ioprio_class, ioprio_level};
    format!("{}/{}", ioprio_class(prio), ioprio_level(prio))
}

/// One direction's figures: fio's `show_ddir_status`.
fn dir_stanza(out: &mut String, s: &Stanza<'_>, name: &str, d: &DirStats, agg: f64) {
    let runtime = s.runtime();
    let bw = rate(d.bytes, runtime) as u64;
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{}msec){}",
        num2str(rate(d.ios, runtime) as u64, 4, false, ""),
        num2str(bw, 4, true, "B/s"),
        num2str(bw, 4, false, "B/s"),
        num2str(d.bytes, 4, true, "B"),
        runtime / 1_000_000,
        if name == "write" {
            "; 0 zone resets"
        } else {
            ""
        }
    );
    if d.slat.count > 0 {
        lat_line(out, "slat", &d.slat);
    }
    lat_line(out, "clat", d.clat.summary());
    lat_line(out, " lat", &d.lat);
    let total = s.spec.is_some_and(|j| j.lat_percentiles);
    let kind = if total { "lat" } else { "clat" };
    let prios = prio_lats(d);
    for p in &prios {
        lat_line(
            out,
            &format!("{kind} prio {}", prio_name(p.prio)),
            p.lat.summary(),
        );
    }
    let list = s.percentiles();
    if let Some(h) = &d.slat_hist
        && d.slat.count > 0
    {
        percentile_table(out, "slat", h, &list);
    }
    if s.clat_percentiles() {
        percentile_table(out, "clat", &d.clat, &list);
    }
    if let Some(h) = &d.lat_hist {
        percentile_table(out, "lat", h, &list);
    }
    if s.clat_percentiles() || total {
        let n = d.clat.count().max(1) as f64;
        for p in &prios {
            let name = format!(
                "{kind} prio {} ({:.2}% of IOs)",
                prio_name(p.prio),
                100.0 * p.lat.count() as f64 / n
            );
            percentile_table(out, &name, &p.lat, &list);
        }
    }
    if d.bw.samples > 0 {
        let per = super::bw_share(d, agg);
        let (mut min, mut max, mut mean, mut dev) = (d.bw.min, d.bw.max, d.bw.mean, d.bw.stddev());
        let mut unit = "KiB";
        if mean > 1024.0 * 1024.0 {
            min /= 1024;
            max /= 1024;
            mean /= 1024.0;
            dev /= 1024.0;
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.02}, \
             stdev={dev:5.02}, samples={}",
            d.bw.samples
        );
    }
    if d.iops.samples > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.02}, stdev={:5.02}, samples={}",
            d.iops.min,
            d.iops.max,
            d.iops.mean,
            d.iops.stddev(),
            d.iops.samples
        );
    }
}

/// fio's latency bucket lines: `  lat (usec)   : 2=0.01%, ...`, five a line,
/// non-zero buckets only.
fn lat_buckets(out: &mut String, x: &crate::result::JobExtra, total: u64) {
    const RANGES: [&str; 12] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    let sets: [(&str, &[u64]); 3] = [
        ("nsec", &x.lat_ns),
        ("usec", &x.lat_us),
        ("msec", &x.lat_ms),
    ];
    for (unit, counts) in sets {
        let mut line = 0;
        for (i, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            if line == 0 {
                let _ = write!(out, "  lat ({unit})   : ");
            } else {
                out.push_str(", ");
            }
            let _ = write!(out, "{}={:3.2}%", RANGES[i], lat_pct(c, total));
            line += 1;
            if line == 5 {
                out.push('\n');
                line = 0;
            }
        }
        if line > 0 {
            out.push('\n');
        }
    }
}

fn dist(counts: &[u64; 7], keys: &[&str; 7]) -> String {
    let total: u64 = counts.iter().sum();
    keys.iter()
        .zip(counts)
        .map(|(k, &c)| format!("{k}={:3.1}%", depth_pct(c, total)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Keys of fio's `IO depths` line.
pub const DEPTH_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
/// Keys of fio's `submit` and `complete` lines.
pub const BATCH_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

/// `usr` and `sys` CPU in percent of the run: the engine thread's on the
/// real clock, none in simulation.
pub fn cpu_pct(run: &RunResult) -> (f64, f64) {
    match run.cpu {
        Some(c) if run.elapsed > 0 => (
            c.thread_user_ns as f64 * 100.0 / run.elapsed as f64,
            c.thread_system_ns as f64 * 100.0 / run.elapsed as f64,
        ),
        _ => (0.0, 0.0),
    }
}

/// fio's lines before the results: one per job section, the version, how
/// many processes start, and the note of each clone whose synchronous
/// engine caps its depth.
fn header(out: &mut String, jobs: &JobFile, run: &RunResult) {
    for (i, spec) in jobs.jobs.iter().enumerate() {
        let Some(first) = run.jobs.iter().find(|j| j.job_index == i) else {
            continue;
        };
        let bs: Vec<String> = ["R", "W", "T"]
            .iter()
            .enumerate()
            .map(|(d, n)| {
                let (lo, hi) = bs_range(spec, d);
                format!(
                    "({n}) {}-{}",
                    num2str(lo, 4, true, "B"),
                    num2str(hi, 4, true, "B")
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "{}: (g={}): rw={}, bs={}, ioengine={}, iodepth={}",
            spec.name,
            first.group,
            spec.rw.name(),
            bs.join(", "),
            spec.ioengine,
            spec.iodepth
        );
        if run.jobs.iter().filter(|j| j.job_index == i).count() > 1 {
            out.push_str("...\n");
        }
    }
    let _ = writeln!(out, "{FIO_VERSION}");
    let n = run.jobs.len();
    let threads = jobs.jobs.first().is_some_and(|s| s.thread);
    let what = match (threads, n == 1) {
        (true, true) => "thread",
        (true, false) => "threads",
        (false, true) => "process",
        (false, false) => "processes",
    };
    let _ = writeln!(out, "Starting {n} {what}");
    out.push_str(&super::depth_notes(jobs, run));
}

/// The smallest and largest block size of direction `d`.
fn bs_range(spec: &crate::job::JobSpec, d: usize) -> (u64, u64) {
    if let Some(split) = &spec.bssplit
        && !split[d].is_empty()
    {
        let lo = split[d].iter().map(|&(b, _)| b).min().unwrap_or(0);
        let hi = split[d].iter().map(|&(b, _)| b).max().unwrap_or(0);
        return (lo, hi);
    }
    if let Some(r) = &spec.bsrange {
        return r[d];
    }
    (spec.bs[d], spec.bs[d])
}

/// The whole text report.
pub fn render(jobs: &JobFile, run: &RunResult, device_name: &str) -> String {
    let mut out = String::new();
    header(&mut out, jobs, run);
    let date = date_text(run);
    let groups = groups(run);
    let (usr, sys) = cpu_pct(run);
    for s in stanzas(jobs, run) {
        let err = match s.error_text() {
            Some(text) => format!("err={:2} ({text})", s.error),
            None => format!("err={:2}", s.error),
        };
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): {err}: pid={}: {date}",
            s.name, s.group, s.jobs, s.ctx
        );
        let g = groups.iter().find(|g| g.id == s.group);
        let agg = |i: usize| g.map_or(0.0, |g| g.agg(i));
        let unified = s.unified();
        if unified != UnifiedRw::Mixed {
            for (i, (name, _)) in DIR_NAMES.iter().enumerate() {
                if s.dirs[i].ios > 0 {
                    dir_stanza(&mut out, &s, name, &s.dirs[i], agg(i));
                }
            }
        }
        if unified != UnifiedRw::None {
            let agg_all = (0..3).map(agg).sum();
            dir_stanza(&mut out, &s, "mixed", &s.mixed(), agg_all);
        }
        let x = &s.extra;
        let total: u64 = s.dirs.iter().map(|d| d.ios).sum();
        lat_buckets(&mut out, x, total);
        if x.sync.count() > 0 {
            out.push_str("  fsync/fdatasync/sync_file_range:\n");
            lat_line(&mut out, "sync", x.sync.summary());
            percentile_table(&mut out, "sync", &x.sync, &s.percentiles());
        }
        let _ = writeln!(
            out,
            "  cpu          : usr={usr:.2}%, sys={sys:.2}%, ctx=0, majf=0, minf=0"
        );
        let _ = writeln!(out, "  IO depths    : {}", dist(&x.depth, &DEPTH_KEYS));
        let _ = writeln!(out, "     submit    : {}", dist(&x.submit, &BATCH_KEYS));
        let _ = writeln!(out, "     complete  : {}", dist(&x.complete, &BATCH_KEYS));
        let _ = writeln!(
            out,
            "     issued rwts: total={},{},{},{} short=0,0,0,0 dropped=0,0,0,0",
            s.dirs[0].ios,
            s.dirs[1].ios,
            s.dirs[2].ios,
            x.sync.count()
        );
        if s.continues() {
            let _ = writeln!(
                out,
                "     errors    : total={}, first_error={}/<{}>",
                s.total_err,
                s.first_error,
                crate::errno::describe(s.first_error)
            );
        }
        let (depth, target, window, percentile) = s.latency();
        let _ = writeln!(
            out,
            "     latency   : target={target}, window={window}, percentile={percentile:.2}%, \
             depth={depth}"
        );
        if let Some(ss) = s.steady {
            steady_line(&mut out, ss);
        }
        out.push('\n');
    }
    for g in &groups {
        let _ = writeln!(out, "Run status group {} (all jobs):", g.id);
        let unified = jobs
            .jobs
            .iter()
            .enumerate()
            .find(|(i, _)| {
                run.jobs
                    .iter()
                    .any(|j| j.job_index == *i && j.group == g.id)
            })
            .map_or(UnifiedRw::None, |(_, s)| s.unified_rw_reporting);
        let mut lines: Vec<(&str, GroupDir)> = Vec::new();
        if unified != UnifiedRw::Mixed {
            for (i, (_, upper)) in DIR_NAMES.iter().enumerate() {
                lines.push((upper, g.dirs[i]));
            }
        }
        if unified != UnifiedRw::None {
            lines.push(("MIXED", g.mixed()));
        }
        for (upper, d) in lines {
            if d.bytes == 0 {
                continue;
            }
            let bw = rate(d.bytes, d.max_run) as u64;
            let _ = writeln!(
                out,
                "{upper:>7}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
                num2str(bw, 4, true, "B/s"),
                num2str(bw, 4, false, "B/s"),
                num2str(d.min_bw as u64, 4, true, "B/s"),
                num2str(d.max_bw as u64, 4, true, "B/s"),
                num2str(d.min_bw as u64, 4, false, "B/s"),
                num2str(d.max_bw as u64, 4, false, "B/s"),
                num2str(d.bytes, 4, true, "B"),
                num2str(d.bytes, 4, false, "B"),
                d.min_run / 1_000_000,
                d.max_run / 1_000_000
            );
        }
    }
    let disk = DiskUtil::of(run);
    let _ = writeln!(out, "\nDisk stats (read/write):");
    let [
        rd_ios,
        wr_ios,
        rd_merges,
        wr_merges,
        rd_ticks,
        wr_ticks,
        in_queue,
    ] = disk.counts();
    let _ = writeln!(
        out,
        "  {device_name}: ios={rd_ios}/{wr_ios}, merge={rd_merges}/{wr_merges}, \
         ticks={rd_ticks}/{wr_ticks}, in_queue={in_queue}, util={:.2}%",
        disk.util
    );
    let _ = writeln!(out, "\n-- elevator's own figures --");
    if let Some(note) = super::no_time_note(run) {
        let _ = writeln!(out, "note: {note}");
    }
    let q = &run.queue;
    let dev = &run.device_stats;
    let _ = writeln!(
        out,
        "elevator: scheduler {} on {}",
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
    // A model's run: simulated time and events; a real one's: wall time and
    // the engine loop's passes, then the CPU it took.
    let (ran, real_time, events) = match run.cpu {
        None => ("simulated", "", "events"),
        Some(_) => ("ran", " in real time", "loop passes"),
    };
    let _ = writeln!(
        out,
        "  {ran} {:.3} s{real_time}: {} I/Os, {} {events}",
        run.elapsed as f64 / 1e9,
        run.ios,
        run.events
    );
    if let Some(cpu) = run.cpu {
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
    if !run.locks.is_empty() {
        let report = elevator_core::lockstat::LockReport {
            elapsed_ns: run.elapsed,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            locks: run.locks.clone(),
        };
        out.push_str("\nlocks (lockmeter):\n");
        out.push_str(&super::locks::lockmeter_table(&report));
        out.push_str("\nlocks (lock_stat):\n");
        out.push_str(&super::locks::lockstat_table(&report));
    }
    out
}

/// fio's `steadystate :` line: attained, the window's mean bandwidth and
/// IOPS, and the last tested criterion.
fn steady_line(out: &mut String, ss: &crate::workload::SteadyResult) {
    let bw = ss.bw_mean();
    let _ = writeln!(
        out,
        "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}",
        if ss.attained { "yes" } else { "no" },
        num2str(bw, 4, true, "B/s"),
        num2str(bw, 4, false, "B/s"),
        num2str(ss.iops_mean(), 4, false, ""),
        if ss.spec.iops { "iops" } else { "bw" },
        if ss.spec.slope { " slope" } else { " mean dev" },
        ss.criterion,
        if ss.spec.percent { "%" } else { "" }
    );
}
