//! The logs fio writes (`write_lat_log`, `write_bw_log`,
//! `write_iops_log`), as fio 3.33 names and formats them: a line per entry,
//! `time (ms), value, direction, block size, [offset,] priority`, the offset
//! only with `log_offset`, the priority 1 for a real-time one (else 0), or
//! with `log_prio` the I/O's whole priority value in hex (`0x2004`); latencies in ns, bandwidth in KiB/s, IOPS in I/Os
//! per second (1 per entry when every I/O is logged). Files are
//! `PREFIX_lat.N.log` (and `_clat`, `_slat`, `_bw`, `_iops`), `N` the job
//! clone's number in the run from 1; with `per_job_logs=0`, one
//! `PREFIX_lat.log` for all clones of the job, their entries one after the
//! other.
//!
//! Entries are what the hooks kept in memory ([`crate::result::Logs`]): a
//! submission latency is logged when its I/O completes (fio logs it at
//! submission), so its time is the completion's.

use std::fmt::Write;

use crate::job::JobFile;
use crate::result::{LogEntry, RunResult};

/// Every log file of `run`: `(file name, contents)`, for the caller to
/// write.
pub fn files(jobs: &JobFile, run: &RunResult) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (n, j) in run.jobs.iter().enumerate() {
        let Some(spec) = jobs.jobs.get(j.job_index) else {
            continue;
        };
        let logs = &j.extra.logs;
        let sets: [(&Option<String>, &str, &Vec<LogEntry>); 5] = [
            (&spec.write_lat_log, "lat", &logs.lat),
            (&spec.write_lat_log, "clat", &logs.clat),
            (&spec.write_lat_log, "slat", &logs.slat),
            (&spec.write_bw_log, "bw", &logs.bw),
            (&spec.write_iops_log, "iops", &logs.iops),
        ];
        for (prefix, kind, entries) in sets {
            let Some(prefix) = prefix else { continue };
            let name = if spec.per_job_logs {
                format!("{prefix}_{kind}.{}.log", n + 1)
            } else {
                format!("{prefix}_{kind}.log")
            };
            let text = match out.iter_mut().find(|(f, _)| *f == name) {
                Some((_, t)) => t,
                None => {
                    out.push((name, String::new()));
                    &mut out.last_mut().expect("just pushed").1
                }
            };
            for e in entries {
                let _ = write!(text, "{}, {}, {}, {}, ", e.time_ms, e.value, e.ddir, e.bs);
                if spec.log_offset {
                    let _ = write!(text, "{}, ", e.offset);
                }
                if spec.log_prio {
                    let _ = writeln!(text, "0x{:04x}", e.prio);
                } else {
                    // fio: 1 for a real-time priority, else 0.
                    let rt = crate::workload::prio::ioprio_class(e.prio) == 1;
                    let _ = writeln!(text, "{}", u8::from(rt));
                }
            }
        }
    }
    out
}
