//! mq-deadline's dispatch order: the sweep, batches, writes_starved, expiry,
//! priority levels and aging. Every test runs on `deadline-list` too, which
//! must order requests identically.

use elevator_core::{Bio, Dispatch, IoPrio, Outcome, PrioClass, Queue, QueueConfig, RequestId};

const MS: u64 = 1_000_000;

fn queue(sched: &str, sets: &[(&str, u64)]) -> Queue {
    // Order only: every bio is its own request.
    let cfg = QueueConfig {
        nomerges: 2,
        queue_depth: 1024,
        nr_requests: 1024,
        ..QueueConfig::default()
    };
    let mut q = Queue::with_scheduler(cfg, sched).unwrap();
    for &(name, value) in sets {
        q.set(name, value).unwrap();
    }
    q
}

fn next(q: &mut Queue, now: u64) -> Option<(RequestId, u64)> {
    match q.dispatch(now) {
        Dispatch::Request(id) => Some((id, q.bios(id).next().unwrap().token)),
        _ => None,
    }
}

/// Dispatch (and complete at once) `n` requests, returning their tokens.
fn take(q: &mut Queue, n: usize, now: u64) -> Vec<u64> {
    (0..n)
        .map(|_| {
            let (id, token) = next(q, now).expect("a request to dispatch");
            q.complete(id, Outcome::Done, now, &mut |_| {}).unwrap();
            token
        })
        .collect()
}

fn both(test: impl Fn(&str)) {
    for sched in ["mq-deadline", "deadline-list"] {
        test(sched);
    }
}

#[test]
fn one_way_sweep_then_wrap_to_fifo_head() {
    both(|s| {
        let mut q = queue(s, &[]);
        for (sector, token) in [(300, 3), (100, 1), (200, 2)] {
            q.submit(&Bio::read(sector, 4096, token), 0).unwrap();
        }
        assert_eq!(take(&mut q, 2, 1), vec![1, 2], "{s}");
        q.submit(&Bio::read(150, 4096, 15), 1).unwrap(); // behind the sweep
        q.submit(&Bio::read(250, 4096, 25), 1).unwrap(); // ahead of it
        // Sweep on: 250, 300; then nothing ahead: restart at the FIFO head.
        assert_eq!(take(&mut q, 3, 2), vec![25, 3, 15], "{s}");
    });
}

#[test]
fn writes_starved_gives_writes_every_third_batch() {
    both(|s| {
        let mut q = queue(s, &[("fifo_batch", 1)]);
        for i in 0..6u64 {
            q.submit(&Bio::read(i * 100, 4096, i), 0).unwrap();
            q.submit(&Bio::write(10_000 + i * 100, 4096, 100 + i), 0)
                .unwrap();
        }
        // The first dispatch continues the (empty) initial batch; after that
        // reads win twice, then writes once.
        assert_eq!(
            take(&mut q, 9, 1),
            vec![0, 1, 2, 100, 3, 4, 101, 5, 102],
            "{s}"
        );
        assert_eq!(take(&mut q, 3, 1), vec![103, 104, 105], "{s}");
    });
}

#[test]
fn fifo_batch_bounds_a_batch() {
    both(|s| {
        let mut q = queue(s, &[("fifo_batch", 3), ("writes_starved", 0)]);
        for i in 0..4u64 {
            q.submit(&Bio::write(10_000 + i * 100, 4096, 100 + i), 0)
                .unwrap();
        }
        for i in 0..4u64 {
            q.submit(&Bio::read(i * 100, 4096, i), 0).unwrap();
        }
        // The initial batch sweeps reads; then writes_starved=0 gives every new
        // batch to the waiting writes, 3 requests a batch, until none are left.
        assert_eq!(
            take(&mut q, 8, 1),
            vec![0, 1, 2, 100, 101, 102, 103, 3],
            "{s}"
        );
    });
}

#[test]
fn expired_fifo_head_starts_the_next_batch() {
    both(|s| {
        for (now, expect) in [(9 * MS, vec![0, 2, 3, 1]), (10 * MS, vec![0, 1, 2, 3])] {
            let mut q = queue(s, &[("read_expire", 10), ("fifo_batch", 1)]);
            q.submit(&Bio::read(0, 4096, 0), 0).unwrap();
            q.submit(&Bio::read(5000, 4096, 1), 0).unwrap();
            assert_eq!(take(&mut q, 1, 0), vec![0], "{s}");
            q.submit(&Bio::read(100, 4096, 2), 5 * MS).unwrap();
            q.submit(&Bio::read(200, 4096, 3), 5 * MS).unwrap();
            // Before 10 ms the sweep goes on from sector 0; at 10 ms the FIFO
            // head (sector 5000, queued at 0) has expired and goes first.
            let mut got = vec![0];
            got.extend(take(&mut q, 3, now));
            assert_eq!(got, expect, "{s} at {now} ns");
        }
    });
}

#[test]
fn expiry_is_soft_within_a_batch() {
    both(|s| {
        let mut q = queue(s, &[("read_expire", 10)]);
        q.submit(&Bio::read(5000, 4096, 1), 0).unwrap();
        for i in 0..3u64 {
            q.submit(&Bio::read(i * 100, 4096, 10 + i), 0).unwrap();
        }
        // The batch starts before expiry at 0, and continues past it.
        assert_eq!(take(&mut q, 1, 0), vec![10], "{s}");
        assert_eq!(take(&mut q, 3, 50 * MS), vec![11, 12, 1], "{s}");
    });
}

#[test]
fn priority_levels_in_order() {
    both(|s| {
        let mut q = queue(s, &[]);
        let rt = IoPrio::new(PrioClass::Rt, 0).unwrap();
        let idle = IoPrio::new(PrioClass::Idle, 7).unwrap();
        q.submit(&Bio::read(100, 4096, 1).with_prio(idle), 0)
            .unwrap();
        q.submit(&Bio::read(200, 4096, 2), 0).unwrap();
        q.submit(&Bio::read(300, 4096, 3).with_prio(rt), 0).unwrap();
        // RT first. While the BE request is in flight, IDLE waits.
        assert_eq!(take(&mut q, 1, 1), vec![3], "{s}");
        let (be, token) = next(&mut q, 1).unwrap();
        assert_eq!(token, 2, "{s}");
        assert_eq!(
            q.dispatch(1),
            Dispatch::Blocked,
            "{s}: IDLE must wait for BE to finish"
        );
        q.complete(be, Outcome::Done, 2, &mut |_| {}).unwrap();
        assert_eq!(take(&mut q, 1, 2), vec![1], "{s}");
    });
}

#[test]
fn aged_lower_priority_goes_ahead() {
    both(|s| {
        let mut q = queue(s, &[("prio_aging_expire", 100)]);
        let rt = IoPrio::new(PrioClass::Rt, 0).unwrap();
        q.submit(&Bio::read(100, 4096, 1), 0).unwrap(); // BE
        q.submit(&Bio::read(200, 4096, 2).with_prio(rt), 150 * MS)
            .unwrap();
        q.submit(&Bio::read(300, 4096, 3).with_prio(rt), 150 * MS)
            .unwrap();
        // The BE request has waited 150 ms > 100 ms: served before RT.
        assert_eq!(take(&mut q, 3, 150 * MS), vec![1, 2, 3], "{s}");

        let mut q = queue(s, &[("prio_aging_expire", 100)]);
        q.submit(&Bio::read(100, 4096, 1), 0).unwrap();
        q.submit(&Bio::read(200, 4096, 2).with_prio(rt), 50 * MS)
            .unwrap();
        assert_eq!(take(&mut q, 2, 50 * MS), vec![2, 1], "{s}: not aged yet");
    });
}

#[test]
fn merged_request_keeps_the_earlier_deadline() {
    both(|s| {
        let cfg = QueueConfig {
            nr_requests: 64,
            ..QueueConfig::default()
        };
        let mut q = Queue::with_scheduler(cfg, s).unwrap();
        q.set("read_expire", 10).unwrap();
        q.set("fifo_batch", 1).unwrap();
        q.submit(&Bio::read(1008, 4096, 1), 0).unwrap(); // deadline 10 ms
        q.submit(&Bio::read(992, 4096, 2), 4 * MS).unwrap(); // deadline 14 ms
        q.submit(&Bio::read(500, 4096, 5), 4 * MS).unwrap();
        q.submit(&Bio::read(600, 4096, 6), 4 * MS).unwrap();
        // [1000,1008) front-merges into [1008,..), which then merges into
        // [992,1000): the survivor takes the deadline of 10 ms.
        q.submit(&Bio::read(1000, 4096, 3), 5 * MS).unwrap();
        assert_eq!(
            (q.stats().front_merges, q.stats().request_merges),
            (1, 1),
            "{s}"
        );
        // At 10 ms: the initial batch takes sector 500; the next batch starts
        // at the expired FIFO head, the merged request, not at sector 600.
        assert_eq!(take(&mut q, 2, 10 * MS), vec![5, 2], "{s}");
    });
}
