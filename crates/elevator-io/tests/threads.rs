//! fio jobs on threads (`elevator_io::mq`): under every lock mode and every
//! scheduler, with 2 to 8 submitting threads on one device or several, every
//! I/O a job issues completes exactly once, and the queues' own counts agree.

mod common;

use std::path::Path;

use common::{scratch_file, skip};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::result::{READ, WRITE};
use elevator_io::mq::{LockMode, ThreadConfig, run_threads};
use elevator_io::{FileDevice, FileOptions};

/// `numjobs` clones of a job doing `ios` 4 KiB I/Os of `rw` each over
/// 1 MiB at depth `depth`.
fn job(rw: &str, numjobs: u32, depth: u32) -> JobFile {
    let text = format!(
        "[j]\nrw={rw}\nbs=4k\nsize=1m\niodepth={depth}\nnumjobs={numjobs}\nfilename=/dev/x\n"
    );
    JobFile::parse(&text, "threads.fio").expect("job file")
}

fn config(sched: &str, lock: LockMode) -> ThreadConfig {
    ThreadConfig {
        run: RunConfig {
            scheduler: sched.into(),
            tunables: Vec::new(),
            seed: 7,
        },
        lock,
        lock_stats: false,
    }
}

/// `n` scratch files of 8 MiB on tmpfs, opened.
fn files(test: &str, n: usize) -> Option<(Vec<tempfile::TempPath>, Vec<FileDevice>)> {
    let mut paths = Vec::new();
    let mut devs = Vec::new();
    for i in 0..n {
        let Ok(p) = scratch_file(Path::new("/dev/shm"), &format!("threads{i}"), 8 << 20) else {
            skip(test, "cannot create a file in /dev/shm");
            return None;
        };
        devs.push(FileDevice::open(&p, &FileOptions::default()).expect("open"));
        paths.push(p);
    }
    Some((paths, devs))
}

fn reopen(d: &FileDevice) -> Result<FileDevice, elevator_io::DeviceError> {
    FileDevice::open(d.path(), &FileOptions::default())
}

#[test]
fn every_io_completes_once_under_every_lock_mode_and_scheduler() {
    let test = "every_io_completes_once_under_every_lock_mode_and_scheduler";
    for lock in LockMode::ALL {
        for sched in elevator_core::SCHEDULER_NAMES {
            for (threads, devices, rw) in [(2, 1, "randread"), (3, 2, "randwrite"), (4, 1, "read")]
            {
                let Some((_paths, devs)) = files(test, devices) else {
                    return;
                };
                let jobs = job(rw, threads, 8);
                let run = run_threads(&jobs, devs, reopen, &config(sched, lock), &mut |_| {})
                    .unwrap_or_else(|e| panic!("{lock} {sched} {threads}x{rw}: {e}"));
                let what = format!("{lock} {sched} {threads} threads on {devices} devices, {rw}");
                assert_eq!(run.threads, threads as usize, "{what}");
                assert_eq!(run.result.jobs.len(), threads as usize, "{what}");
                let dir = if rw.contains("write") { WRITE } else { READ };
                for j in &run.result.jobs {
                    assert_eq!(j.dirs[dir].ios, 256, "{what}: clone {}", j.clone);
                    assert_eq!(j.dirs[dir].errors, 0, "{what}");
                    assert_eq!(j.dirs[dir].bytes, 1 << 20, "{what}");
                }
                let q = &run.result.queue;
                assert_eq!(q.bios, 256 * u64::from(threads), "{what}");
                assert_eq!(q.bios_completed, q.bios, "{what}: every bio completes once");
                assert_eq!(q.completions, q.dispatches, "{what}");
                assert_eq!(run.result.ios, q.bios, "{what}");
            }
        }
    }
}

#[test]
fn more_threads_than_allowed_is_a_clear_error() {
    let jobs = job("randread", 65, 1);
    let Some((_paths, devs)) = files("more_threads_than_allowed_is_a_clear_error", 1) else {
        return;
    };
    let err = run_threads(
        &jobs,
        devs,
        reopen,
        &config("none", LockMode::Mq),
        &mut |_| {},
    )
    .expect_err("65 threads refused");
    let text = err.to_string();
    assert!(
        text.contains("65 threads") && text.contains("at most 64"),
        "{text}"
    );
}

#[test]
fn lock_modes_are_named() {
    for m in LockMode::ALL {
        assert_eq!(m.name().parse::<LockMode>(), Ok(m));
    }
    let err = "spin".parse::<LockMode>().expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "unknown lock mode 'spin': expected global, queue or mq"
    );
}
