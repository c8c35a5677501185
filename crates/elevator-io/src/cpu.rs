//! CPU time used, split into user and system time, for "CPU per I/O"
//! figures.
//!
//! Two scopes, because io_uring can do a file's I/O on kernel worker threads
//! (`iou-wrk-*`, as it does for tmpfs) that belong to the process:
//! [`CpuTime::thread`] is the calling thread alone (what fio reports as a
//! job's `usr_cpu` and `sys_cpu`: it uses `RUSAGE_THREAD`), and
//! [`CpuTime::process`] is every thread of the process, io_uring's workers
//! included. [`CpuTime::children`] is the second scope for finished child
//! processes (fio run as a child).

use std::time::Duration;

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
    /// included), or zero if the system will not say.
    pub fn process() -> CpuTime {
        CpuTime::usage(libc::RUSAGE_SELF)
    }

    /// The calling thread's CPU time so far.
    pub fn thread() -> CpuTime {
        CpuTime::usage(libc::RUSAGE_THREAD)
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

    /// The time used since `earlier`.
    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}
