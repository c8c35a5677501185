//! The queue's `/proc/diskstats`-like counts: per direction, requests
//! completed, merges, and time from allocation to completion.

use elevator_core::{Bio, Dispatch, Limits, Outcome, Queue, QueueConfig, QueueStats};

#[test]
fn sequential_writes_merge_and_count_per_direction() {
    let cfg = QueueConfig::for_depth(Limits::default(), 32);
    let mut q = Queue::with_scheduler(cfg, "mq-deadline").unwrap();
    // Eight sequential 4 KiB writes merge into one request; one read.
    for i in 0..8u64 {
        q.submit(&Bio::write(i * 8, 4096, i), 1_000).unwrap();
    }
    q.submit(&Bio::read(10_000, 4096, 100), 1_000).unwrap();
    loop {
        match q.dispatch(5_000) {
            Dispatch::Request(id) => q
                .complete(id, Outcome::Done, 3_001_000, &mut |_| {})
                .unwrap(),
            Dispatch::Empty => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    let s = q.stats();
    let (r, w) = (s.disk[0], s.disk[1]);
    assert_eq!(w.ios, 1, "the writes merged into one request");
    assert_eq!(w.merges, 7);
    assert_eq!(r.ios, 1);
    assert_eq!(r.merges, 0);
    // Allocated at 1 µs, completed at 3.001 ms: 3 ms each.
    assert_eq!(w.ticks_ns, 3_000_000);
    assert_eq!(r.ticks_ns, 3_000_000);
    assert_eq!(s.bio_merges(), 7);
    let mut sum = QueueStats::default();
    sum.merge(s);
    sum.merge(s);
    assert_eq!(sum.disk[1].merges, 14);
}
