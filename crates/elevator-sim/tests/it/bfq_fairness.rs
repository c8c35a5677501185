//! BFQ through the simulator: two equal sequential readers on a 7200 rpm disk
//! share its throughput evenly, and BFQ's idling keeps each reader's stream
//! sequential (far more throughput than interleaving them would give).

use crate::common;

use elevator_fio::job::{JobSpec, RwMode};
use elevator_fio::result::{READ, RunResult};

use common::{file, sim, timed};

const GIB: u64 = 1 << 30;
const SECOND: u64 = 1_000_000_000;

fn reader(name: &str, bs: u64) -> JobSpec {
    let mut j = timed(name, RwMode::Read, GIB, 1, 10 * SECOND);
    j.bs = [bs; 3];
    j
}

fn two_readers(bs: u64, sched: &str, tunables: &[(&str, &str)]) -> RunResult {
    let jobs = file("bfq-fairness.fio", vec![reader("a", bs), reader("b", bs)]);
    sim(&jobs, "hdd-7200", sched, tunables)
}

/// Each reader's share of the bytes read, and the total in MB/s.
fn shares(r: &RunResult) -> ([f64; 2], f64) {
    let a = r.jobs[0].dirs[READ].bytes as f64;
    let b = r.jobs[1].dirs[READ].bytes as f64;
    let secs = r.elapsed as f64 / SECOND as f64;
    ([a / (a + b), b / (a + b)], (a + b) / secs / 1e6)
}

fn check_fair(bs: u64, tunables: &[(&str, &str)]) -> f64 {
    let r = two_readers(bs, "bfq", tunables);
    let (s, mbps) = shares(&r);
    eprintln!(
        "bfq bs={bs} {tunables:?}: shares {:.1}% / {:.1}%, {mbps:.1} MB/s",
        s[0] * 100.0,
        s[1] * 100.0
    );
    for (i, share) in s.iter().enumerate() {
        assert!(
            (0.40..=0.60).contains(share),
            "bs={bs} {tunables:?}: reader {i} got {:.1}% of the throughput",
            share * 100.0
        );
    }
    assert!(
        r.jobs.iter().all(|j| j.end >= 10 * SECOND),
        "time-based jobs run 10 s"
    );
    mbps
}

#[test]
fn two_sequential_readers_share_evenly_4k() {
    check_fair(4096, &[]);
}

#[test]
fn two_sequential_readers_share_evenly_64k() {
    check_fair(64 << 10, &[]);
}

#[test]
fn fair_without_low_latency_and_with_strict_guarantees() {
    check_fair(64 << 10, &[("low_latency", "0")]);
    check_fair(64 << 10, &[("strict_guarantees", "1")]);
}

/// Idling serves each reader in long sequential runs: BFQ beats a scheduler
/// that interleaves the two streams (seeking between the files for every
/// request).
#[test]
fn idling_keeps_streams_sequential() {
    let bfq = check_fair(64 << 10, &[]);
    let (_, deadline) = shares(&two_readers(64 << 10, "mq-deadline", &[]));
    eprintln!("mq-deadline: {deadline:.1} MB/s, bfq: {bfq:.1} MB/s");
    assert!(
        bfq > deadline * 1.5,
        "bfq {bfq:.1} MB/s vs mq-deadline {deadline:.1} MB/s"
    );
}
