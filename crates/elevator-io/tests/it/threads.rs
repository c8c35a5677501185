//! fio jobs on threads (`elevator_io::mq`): under every lock mode and every
//! scheduler, with 2 to 8 submitting threads on one device or several, every
//! I/O a job issues completes exactly once, and the queues' own counts agree.

use crate::common;

use std::path::Path;

use common::{scratch_file, skip};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::result::{READ, WRITE};
use elevator_io::mq::{LockMode, ThreadConfig, run_threads};
use elevator_io::{FileDevice, FileOptions};

/// `numjobs` clones of a job doing `ios` 4 KiB I/Os of `rw` each over
/// 1 MiB at depth `depth` (libaio: psync would run at depth 1).
fn job(rw: &str, numjobs: u32, depth: u32) -> JobFile {
    let text = format!(
        "[j]\nrw={rw}\nbs=4k\nsize=1m\nioengine=libaio\niodepth={depth}\nnumjobs={numjobs}\nfilename=/dev/x\n"
    );
    JobFile::parse(&text, "threads.fio").expect("job file")
}

fn config(sched: &str, lock: LockMode) -> ThreadConfig {
    ThreadConfig {
        run: RunConfig {
            plugins: Default::default(),
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

/// `jobs` on one scratch file under `mq` and `none`; `None` where there is
/// no /dev/shm (after `skip`).
fn run_on_shm(
    test: &str,
    jobs: &JobFile,
) -> Option<Result<elevator_io::mq::ThreadedRun, elevator_io::jobs::JobRunError>> {
    let (_paths, devs) = files(test, 1)?;
    Some(run_threads(
        jobs,
        devs,
        reopen,
        &config("none", LockMode::Mq),
        &mut |_| {},
    ))
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
    let Some(run) = run_on_shm("more_threads_than_allowed_is_a_clear_error", &jobs) else {
        return;
    };
    let err = run.expect_err("65 threads refused");
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

#[test]
fn cpus_allowed_pins_threads_and_names_cpus_that_do_not_exist() {
    let test = "cpus_allowed_pins_threads_and_names_cpus_that_do_not_exist";
    let text =
        "[j]\nrw=randread\nbs=4k\nsize=256k\nnumjobs=2\nthread\ncpus_allowed=0\nfilename=/dev/x\n";
    let jobs = JobFile::parse(text, "pinned.fio").expect("job file");
    let Some(run) = run_on_shm(test, &jobs) else {
        return;
    };
    let run = run.expect("CPU 0 exists");
    assert!(run.result.jobs.iter().all(|j| j.dirs[READ].ios == 64));
    let text = text.replace("cpus_allowed=0", "cpus_allowed=0,1000-1001");
    let jobs = JobFile::parse(&text, "pinned.fio").expect("job file");
    let Some(run) = run_on_shm(test, &jobs) else {
        return;
    };
    let text = run.expect_err("CPU 1000 does not exist here").to_string();
    assert!(text.contains("cpus_allowed names CPU 1000"), "{text}");
}

/// A memory device whose `fuse`-th submission panics (a bug in a device, or
/// in the layer, on one thread).
struct Bomb {
    inner: elevator_io::MemDevice,
    fuse: Option<u32>,
}

impl elevator_core::Device for Bomb {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn limits(&self) -> elevator_core::Limits {
        self.inner.limits()
    }
    fn queue_depth(&self) -> u32 {
        self.inner.queue_depth()
    }
    fn rotational(&self) -> bool {
        false
    }
    fn submit(&mut self, io: elevator_core::DeviceIo, now: elevator_core::Nanos) {
        self.inner.submit(io, now)
    }
    fn next_completion(&self) -> Option<elevator_core::Nanos> {
        self.inner.next_completion()
    }
    fn complete(
        &mut self,
        now: elevator_core::Nanos,
        done: &mut dyn FnMut(u32, elevator_core::Outcome),
    ) {
        self.inner.complete(now, done)
    }
    fn outstanding(&self) -> u32 {
        self.inner.outstanding()
    }
    fn stats(&self) -> elevator_core::DeviceStats {
        self.inner.stats()
    }
}

impl elevator_io::DataDevice for Bomb {
    unsafe fn submit_data(
        &mut self,
        io: elevator_core::DeviceIo,
        data: &[elevator_io::DataSegment],
        now: elevator_core::Nanos,
    ) {
        if let Some(n) = &mut self.fuse {
            *n = n.saturating_sub(1);
            assert!(*n > 0, "the bomb went off");
        }
        // SAFETY: passed through; our caller keeps the contract.
        unsafe { self.inner.submit_data(io, data, now) }
    }
    fn kick(&mut self) -> Result<(), elevator_io::DeviceError> {
        self.inner.kick()
    }
    fn wait(
        &mut self,
        timeout: Option<std::time::Duration>,
    ) -> Result<(), elevator_io::DeviceError> {
        self.inner.wait(timeout)
    }
    fn cancel_all(&mut self) {
        self.inner.cancel_all()
    }
    fn alignment(&self) -> elevator_io::Alignment {
        self.inner.alignment()
    }
    fn watch(&mut self, fd: std::os::fd::RawFd) -> Result<(), elevator_io::DeviceError> {
        self.inner.watch(fd)
    }
}

/// One thread's device panics midway: the run ends (no hang) with that
/// thread's error, and the other threads' results come back with it.
#[test]
fn a_thread_that_panics_stops_the_run_with_everyone_elses_results() {
    use elevator_io::jobs::JobRunError;
    // Every lock mode, and mq both with a scheduler lock and without locks.
    let cases = [
        (LockMode::Global, "mq-deadline"),
        (LockMode::Queue, "bfq"),
        (LockMode::Mq, "mq-deadline"),
        (LockMode::Mq, "none"),
    ];
    for (lock, sched) in cases {
        {
            let jobs = JobFile::parse(
                "[j]\nrw=randread\nbs=4k\nsize=4m\nioengine=libaio\niodepth=4\nnumjobs=3\ntime_based\nruntime=20s\nfilename=/dev/x\n",
                "bomb.fio",
            )
            .expect("job file");
            let mem = elevator_io::MemDevice::new(8 << 20, elevator_io::MemOptions::default())
                .expect("memory");
            let shares = std::cell::Cell::new(0);
            let share = |d: &Bomb| {
                shares.set(shares.get() + 1);
                d.inner.share().map(|inner| Bomb {
                    inner,
                    // The first share's thread fails after a while.
                    fuse: (shares.get() == 1).then_some(500),
                })
            };
            let first = Bomb {
                inner: mem,
                fuse: None,
            };
            let err = run_threads(&jobs, vec![first], share, &config(sched, lock), &mut |_| {})
                .expect_err("the bomb stops the run");
            let JobRunError::Stopped { error, partial } = err else {
                panic!("{lock} {sched}: expected a stopped run, got {err}");
            };
            assert!(error.to_string().contains("the bomb went off"), "{error}");
            assert_eq!(
                partial.jobs.len(),
                2,
                "{lock} {sched}: the two others report"
            );
            // (Their figures are whatever they did before the stop: under
            // BFQ, which may have been serving the failing thread, possibly
            // nothing.)
            assert!(
                partial.elapsed < 15_000_000_000,
                "{lock} {sched}: the others stopped early, not at their runtime"
            );
        }
    }
}
