//! Jobs that want more tags than the queue has share the free ones: a
//! waiting job gets one tag, issues one I/O and waits behind the others for
//! the next, as Linux's tag waiters are woken in turn. Without that, the first
//! job to be woken took every freed tag and the others starved.

use crate::common;

use elevator_fio::job::{JobFile, RwMode};
use elevator_fio::result::{READ, RunResult};

use common::{file, timed};

/// `n` equal time-based random readers, 4 KiB at iodepth 64, for 5 ms.
fn readers(n: usize) -> JobFile {
    let jobs = (0..n)
        .map(|i| {
            let mut j = timed(&format!("r{i}"), RwMode::RandRead, 64 << 20, 64, 5_000_000);
            j.bs = [4096; 3];
            j
        })
        .collect();
    file("tags.fio", jobs)
}

fn sim(jobs: &JobFile, dev: &str, sched: &str, nr_requests: u32) -> RunResult {
    let nr_requests = nr_requests.to_string();
    common::sim(jobs, dev, sched, &[("nr_requests", &nr_requests)])
}

/// Each job's share of the I/Os, in percent.
fn shares(r: &RunResult) -> Vec<f64> {
    let total: u64 = r.jobs.iter().map(|j| j.dirs[READ].ios).sum();
    assert!(total > 0);
    r.jobs
        .iter()
        .map(|j| 100.0 * j.dirs[READ].ios as f64 / total as f64)
        .collect()
}

#[test]
fn jobs_short_of_tags_share_them() {
    let jobs = readers(2);
    for dev in ["null,latency=1", "nvme"] {
        for sched in ["none", "mq-deadline"] {
            let r = sim(&jobs, dev, sched, 32);
            let s = shares(&r);
            let ios: Vec<u64> = r.jobs.iter().map(|j| j.dirs[READ].ios).collect();
            assert!(
                s.iter().all(|&p| (40.0..=60.0).contains(&p)),
                "{dev} {sched}: I/Os per job {ios:?}, shares {s:?}"
            );
            // Both waited for tags, and the wait shows as submission latency.
            for j in &r.jobs {
                assert!(
                    j.dirs[READ].slat.mean() > 0.0,
                    "{dev} {sched}: job {} never waited for a tag",
                    j.name
                );
            }
            // Same inputs, same figures.
            let again = sim(&jobs, dev, sched, 32);
            let ios_again: Vec<u64> = again.jobs.iter().map(|j| j.dirs[READ].ios).collect();
            assert_eq!(ios, ios_again, "{dev} {sched}: not deterministic");
            assert_eq!(r.events, again.events, "{dev} {sched}");
        }
    }
}

#[test]
fn four_jobs_short_of_tags_share_them() {
    let r = sim(&readers(4), "null,latency=1", "none", 32);
    let s = shares(&r);
    assert!(
        s.iter().all(|&p| (20.0..=30.0).contains(&p)),
        "shares {s:?}"
    );
}

#[test]
fn enough_tags_no_wait() {
    // 128 tags for 2 × 64: nobody waits, so no submission latency.
    let r = sim(&readers(2), "null,latency=1", "none", 128);
    let s = shares(&r);
    assert!(s.iter().all(|&p| (45.0..=55.0).contains(&p)), "{s:?}");
    for j in &r.jobs {
        assert_eq!(j.dirs[READ].slat.max(), 0, "job {}", j.name);
    }
}
