//! fio's terse output, version 3 (`--output-format=terse`): one line of
//! semicolon-separated fields per job stanza, in the order of fio's HOWTO
//! ("Terse output"): 121 fields for the job, then 9 for the disk (fio 3.33
//! writes the same 130 for a job on one disk).

use std::fmt::Write;

use crate::job::JobFile;
use crate::result::{DirStats, RunResult, Summary};

use super::fmt::{depth_pct, lat_pct};
use super::text::cpu_pct;
use super::{DiskUtil, FIO_VERSION, Stanza, groups, rate, stanzas};

/// Fields of a terse v3 line without the disk's, as fio 3.33 writes them
/// (measured: `fio --output-format=terse` on the null engine).
pub const JOB_FIELDS: usize = 121;
/// Fields a disk adds (name, ios, merges, ticks, in_queue, util).
pub const DISK_FIELDS: usize = 9;

/// Percentile fields per direction: fio writes 20, unused ones as `0%=0`.
const PCT_FIELDS: usize = 20;

fn lat(out: &mut String, s: &Summary) {
    let _ = write!(
        out,
        ";{};{};{:.6};{:.6}",
        s.min() / 1000,
        s.max() / 1000,
        s.mean() / 1000.0,
        s.sample_stddev() / 1000.0
    );
}

fn dir(out: &mut String, s: &Stanza<'_>, d: &DirStats, agg: f64) {
    let runtime = s.runtime();
    let bw = rate(d.bytes, runtime) as u64 / 1024;
    let _ = write!(
        out,
        ";{};{bw};{};{}",
        d.bytes / 1024,
        rate(d.ios, runtime) as u64,
        if d.ios == 0 { 0 } else { runtime / 1_000_000 }
    );
    lat(out, &d.slat);
    lat(out, d.clat.summary());
    let list = s.percentiles();
    for i in 0..PCT_FIELDS {
        match list.get(i) {
            Some(&p) if s.clat_percentiles() => {
                let _ = write!(out, ";{p:.6}%={}", d.clat.fio_percentile(p) / 1000);
            }
            _ => out.push_str(";0%=0"),
        }
    }
    lat(out, &d.lat);
    let per = super::bw_share(d, agg);
    let _ = write!(
        out,
        ";{};{};{per:.6}%;{:.6};{:.6}",
        d.bw.min,
        d.bw.max,
        d.bw.mean,
        d.bw.stddev()
    );
}

/// The terse report: a line per job stanza.
pub fn render(jobs: &JobFile, run: &RunResult, device_name: &str) -> String {
    let groups = groups(run);
    let (usr, sys) = cpu_pct(run);
    let disk = DiskUtil::of(run);
    let mut out = String::new();
    for s in stanzas(jobs, run) {
        let g = groups.iter().find(|g| g.id == s.group);
        let agg = |i: usize| g.map_or(0.0, |g| g.agg(i));
        let _ = write!(out, "3;{FIO_VERSION};{};{};{}", s.name, s.group, s.error);
        dir(&mut out, &s, &s.dirs[0], agg(0));
        dir(&mut out, &s, &s.dirs[1], agg(1));
        let _ = write!(out, ";{usr:.6}%;{sys:.6}%;0;0;0");
        let x = &s.extra;
        let total: u64 = x.depth.iter().sum();
        for &c in &x.depth {
            let _ = write!(out, ";{:3.1}%", depth_pct(c, total));
        }
        let ios: u64 = s.dirs.iter().map(|d| d.ios).sum();
        // fio's first µs field (<= 2 µs) takes every sub-µs bucket too.
        let under_2us: f64 =
            x.lat_ns.iter().map(|&c| lat_pct(c, ios)).sum::<f64>() + lat_pct(x.lat_us[0], ios);
        let _ = write!(out, ";{under_2us:3.2}%");
        for &c in x.lat_us[1..].iter().chain(&x.lat_ms) {
            let _ = write!(out, ";{:3.2}%", lat_pct(c, ios));
        }
        let _ = write!(out, ";{device_name}");
        for count in disk.counts() {
            let _ = write!(out, ";{count}");
        }
        let _ = write!(out, ";{:3.2}%", disk.util);
        // fio adds the error counts when the job goes on after errors.
        if s.continues() {
            let _ = write!(out, ";{};{}", s.total_err, s.first_error);
        }
        out.push('\n');
    }
    out
}
