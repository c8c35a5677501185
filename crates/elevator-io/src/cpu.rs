//! CPU time used, split into user and system time, for "CPU per I/O"
//! figures.
//!
//! Two scopes, because io_uring can do a file's I/O on kernel worker threads
//! (`iou-wrk-*`, as it does for tmpfs) that belong to the process:
//! [`CpuTime::thread`] is the calling thread alone (what fio reports as a
//! job's `usr_cpu` and `sys_cpu`: it uses `RUSAGE_THREAD`), and
//! [`CpuTime::process_total`] is every thread of the process, io_uring's workers
//! included. [`CpuTime::children`] is the second scope for finished child
//! processes (fio run as a child).
//!
//! Totals come from the CPU-time clocks (`CLOCK_THREAD_CPUTIME_ID`,
//! `CLOCK_PROCESS_CPUTIME_ID`), which the kernel keeps exactly. The split
//! between user and system time is the kernel's estimate: it samples which
//! mode a task is in at each timer tick and scales the samples to the exact
//! total, separately for a thread and for the process. The two estimates do
//! not agree with each other (measured here: a run whose engine thread had
//! 0.357 s of user time was reported with 0.327 s for the whole process), so
//! the process is given as a total only ([`CpuTime::process_total`]), and
//! its threads other than the engine's are that total minus the thread's.
//!
//! Also where this machine's NUMA nodes and their CPUs are
//! ([`node_cpus`], for fio's `numa_cpu_nodes`), as sysfs lists them.

use std::time::Duration;

use rustix::time::{ClockId, clock_gettime};

fn clock(id: ClockId) -> Duration {
    let ts = clock_gettime(id);
    // CPU-time clocks never run negative.
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// User and system CPU time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel on our behalf.
    pub system: Duration,
}

impl CpuTime {
    /// This process's CPU time so far (all threads, io_uring workers
    /// included), exact, from `CLOCK_PROCESS_CPUTIME_ID`.
    pub fn process_total() -> Duration {
        clock(ClockId::ProcessCPUTime)
    }

    /// The calling thread's CPU time so far: the exact total of
    /// `CLOCK_THREAD_CPUTIME_ID`, split into user and system time in the
    /// proportion the kernel's tick samples give (all user time when there
    /// are none yet, as the kernel counts it).
    pub fn thread() -> CpuTime {
        let total = clock(ClockId::ThreadCPUTime);
        let sampled = CpuTime::usage(libc::RUSAGE_THREAD);
        let sampled_total = sampled.total().as_nanos();
        let system = (total.as_nanos() * sampled.system.as_nanos())
            .checked_div(sampled_total)
            .map_or(Duration::ZERO, |ns| {
                Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
            });
        CpuTime {
            user: total.saturating_sub(system),
            system,
        }
    }

    /// The CPU time of every child process waited for so far (all their
    /// threads).
    pub fn children() -> CpuTime {
        CpuTime::usage(libc::RUSAGE_CHILDREN)
    }

    fn usage(who: libc::c_int) -> CpuTime {
        // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable rusage for the call to fill, and
        // `who` is one of the RUSAGE_* constants.
        let rc = unsafe { libc::getrusage(who, &mut ru) };
        if rc != 0 {
            return CpuTime::default();
        }
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        CpuTime {
            user: tv(ru.ru_utime),
            system: tv(ru.ru_stime),
        }
    }

    /// Both together.
    pub fn total(&self) -> Duration {
        self.user + self.system
    }

    /// The CPU figures of a run whose engine thread (or threads) used this,
    /// and the whole process `process` in all.
    pub fn run_use(&self, process: Duration) -> elevator_fio::result::CpuUse {
        elevator_fio::result::CpuUse {
            process_ns: process.as_nanos() as u64,
            thread_user_ns: self.user.as_nanos() as u64,
            thread_system_ns: self.system.as_nanos() as u64,
        }
    }

    /// The time used since `earlier`.
    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// Where Linux lists NUMA nodes.
const NODE_DIR: &str = "/sys/devices/system/node";

/// The most CPUs or nodes a sysfs list may name here (`CPU_SETSIZE`).
const MAX_LISTED: u32 = 1024;

/// A sysfs list (`0-3,8,10-11`), sorted, no repeats; `None` if it is not
/// one or names a number of 1024 or more.
pub fn parse_list(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let n = part.parse::<u32>().ok()?;
                (n, n)
            }
        };
        if lo > hi || hi >= MAX_LISTED {
            return None;
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// This machine's online NUMA nodes (node 0 alone when sysfs has no list:
/// a kernel without NUMA has one node).
pub fn online_nodes() -> Vec<u32> {
    std::fs::read_to_string(format!("{NODE_DIR}/online"))
        .ok()
        .and_then(|t| parse_list(&t))
        .unwrap_or_else(|| vec![0])
}

/// The CPUs of NUMA node `node`, from sysfs; `None` when there is no such
/// node (or its list cannot be read).
pub fn node_cpus(node: u32) -> Option<Vec<u32>> {
    let text = std::fs::read_to_string(format!("{NODE_DIR}/node{node}/cpulist")).ok()?;
    parse_list(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn burn(until: Duration) {
        let start = CpuTime::thread().total();
        let mut x = 0u64;
        while CpuTime::thread().total() - start < until {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
    }

    #[test]
    fn sysfs_lists_read_as_the_kernel_writes_them() {
        assert_eq!(
            parse_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_list("\n"), Some(vec![]));
        assert_eq!(parse_list("3-1"), None);
        assert_eq!(parse_list("0-99999"), None);
        assert_eq!(parse_list("x"), None);
        // This machine has node 0 (every Linux machine does), with CPUs.
        assert!(online_nodes().contains(&0));
        assert!(
            node_cpus(0).is_some_and(|c| !c.is_empty()) || std::fs::metadata(NODE_DIR).is_err()
        );
    }

    /// The whole process's CPU covers the thread's, user time included:
    /// measured by separate kernel estimates it did not (0.327 s of user
    /// time for a process whose one thread had 0.357 s).
    #[test]
    fn the_process_covers_its_threads() {
        let (p0, t0) = (CpuTime::process_total(), CpuTime::thread());
        let other = std::thread::spawn(|| {
            let t = CpuTime::thread();
            burn(Duration::from_millis(30));
            CpuTime::thread().since(&t).total()
        });
        burn(Duration::from_millis(30));
        let theirs = other.join().expect("the burner thread");
        let mine = CpuTime::thread().since(&t0);
        let process = CpuTime::process_total() - p0;
        assert!(mine.total() >= Duration::from_millis(30), "{mine:?}");
        assert!(theirs >= Duration::from_millis(30), "{theirs:?}");
        assert!(
            process >= mine.total() + theirs,
            "{process:?} < {mine:?} + {theirs:?}"
        );
        assert!(mine.user + mine.system == mine.total());
    }
}
