//! CPU time of the calling thread: what a run or benchmark cost, not
//! how long the (shared, noisy) machine took to get round to it.

use rustix::time::{ClockId, clock_gettime};

/// CPU time this thread has used, in nanoseconds (user + system).
pub fn thread_cpu_ns() -> u64 {
    let ts = clock_gettime(ClockId::ThreadCPUTime);
    // A thread's CPU time is never negative.
    ts.tv_sec.max(0) as u64 * 1_000_000_000 + ts.tv_nsec.max(0) as u64
}
