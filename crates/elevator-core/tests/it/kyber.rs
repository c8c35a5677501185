//! kyber through the public queue: domains and their token depths, batches,
//! the latency feedback loop (congestion throttles domains with good latency,
//! a domain with bad latency grows back), merging and tunables.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use elevator_core::sched::kyber::{Domain, Kyber};
use elevator_core::{
    AnyScheduler, Bio, Dispatch, Op, Outcome, Queue, QueueConfig, RequestId, Scheduler, Submitted,
    TunableError,
};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// A queue that never merges and lets thousands of requests be in flight, so
/// that only kyber's tokens limit dispatch.
fn queue() -> Queue {
    let cfg = QueueConfig {
        nomerges: 2,
        queue_depth: 8192,
        nr_requests: 8192,
        ..QueueConfig::default()
    };
    Queue::with_scheduler(cfg, "kyber").unwrap()
}

fn kyber(q: &Queue) -> &Kyber {
    match q.scheduler() {
        AnyScheduler::Kyber(k) => k,
        other => panic!("not kyber: {other:?}"),
    }
}

fn bio(op: Op, sector: u64, token: u64) -> Bio {
    match op {
        Op::Read => Bio::read(sector, 4096, token),
        _ => Bio::new(op, sector, 4096, token),
    }
}

fn complete(q: &mut Queue, id: RequestId, now: u64) {
    q.complete(id, Outcome::Done, now, &mut |_| {}).unwrap();
}

/// Dispatch until the queue has nothing it may send; the requests sent.
fn dispatch_all(q: &mut Queue, now: u64) -> Vec<RequestId> {
    let mut out = vec![];
    while let Dispatch::Request(id) = q.dispatch(now) {
        out.push(id);
    }
    out
}

/// A closed-loop workload: a fixed number of reads and writes outstanding,
/// each op with a fixed device latency; a completion is replaced by a new
/// request of the same op at once.
struct Rig {
    q: Queue,
    now: u64,
    token: u64,
    /// Requests to keep outstanding, per op (read, write).
    iodepth: [u32; 2],
    /// Device latency, per op.
    lat: [u64; 2],
    outstanding: [u32; 2],
    in_flight: BinaryHeap<Reverse<(u64, RequestId)>>,
}

fn slot(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        _ => unreachable!("the rig only makes reads and writes"),
    }
}

impl Rig {
    fn new(q: Queue) -> Rig {
        Rig {
            q,
            now: 0,
            token: 0,
            iodepth: [0; 2],
            lat: [100 * US; 2],
            outstanding: [0; 2],
            in_flight: BinaryHeap::new(),
        }
    }

    fn k(&self) -> &Kyber {
        kyber(&self.q)
    }

    /// Run the workload until `end`, then stop the clock there.
    fn run_until(&mut self, end: u64) {
        loop {
            for (s, op) in [(0, Op::Read), (1, Op::Write)] {
                while self.outstanding[s] < self.iodepth[s] {
                    self.token += 1;
                    let sector = (self.token % (1 << 20)) * 64;
                    let b = bio(op, sector, self.token);
                    assert!(matches!(
                        self.q.submit(&b, self.now),
                        Ok(Submitted::NewRequest(_))
                    ));
                    self.outstanding[s] += 1;
                }
            }
            while let Dispatch::Request(id) = self.q.dispatch(self.now) {
                let done = self.now + self.lat[slot(self.q.request(id).op())];
                self.in_flight.push(Reverse((done, id)));
            }
            let Some(&Reverse((t, id))) = self.in_flight.peek() else {
                break;
            };
            if t > end {
                break;
            }
            self.in_flight.pop();
            self.now = self.now.max(t);
            let s = slot(self.q.request(id).op());
            complete(&mut self.q, id, self.now);
            self.outstanding[s] -= 1;
        }
        self.now = self.now.max(end);
    }

    /// Stop making requests and complete everything outstanding.
    fn drain(&mut self) {
        self.iodepth = [0; 2];
        self.run_until(self.now + 10_000 * MS);
        assert!(self.q.is_idle());
    }
}

/// A fresh queue holding `counts` bios of each domain's op (reads, writes,
/// discards, write-zeroes), submitted in that order with tokens 1, 2, ....
fn queue_with_domains(counts: [u64; 4]) -> Queue {
    let mut q = queue();
    let mut token = 0;
    for (op, n) in [Op::Read, Op::Write, Op::Discard, Op::WriteZeroes]
        .into_iter()
        .zip(counts)
    {
        for _ in 0..n {
            token += 1;
            q.submit(&bio(op, token * 64, token), 0).unwrap();
        }
    }
    q
}

#[test]
fn domains_by_op_with_linux_max_depths() {
    let mut q = queue_with_domains([300, 150, 80, 20]);
    let k = kyber(&q);
    assert_eq!(
        Domain::ALL.map(|d| k.queued_in(d)),
        [300, 150, 80, 20],
        "one FIFO per domain"
    );
    assert_eq!(Domain::ALL.map(|d| k.depth(d)), [256, 128, 64, 16]);
    let sent = dispatch_all(&mut q, 1);
    assert_eq!(sent.len(), 256 + 128 + 64 + 16, "every token used once");
    assert_eq!(
        q.dispatch(1),
        Dispatch::Blocked,
        "all domains out of tokens"
    );
    let k = kyber(&q);
    assert_eq!(Domain::ALL.map(|d| k.tokens_in_use(d)), [256, 128, 64, 16]);
    assert_eq!(
        Domain::ALL.map(|d| k.queued_in(d)),
        [44, 22, 16, 4],
        "the rest wait for tokens"
    );
    // A completion frees a token of its own domain only.
    let write = *sent
        .iter()
        .find(|&&id| q.request(id).op() == Op::Write)
        .unwrap();
    complete(&mut q, write, 2);
    let Dispatch::Request(next) = q.dispatch(2) else {
        panic!("a write token is free")
    };
    assert_eq!(q.request(next).op(), Op::Write);
    assert_eq!(q.dispatch(2), Dispatch::Blocked);
    // Everything drains, each domain in arrival order.
    let mut in_flight: Vec<RequestId> = sent.into_iter().filter(|&id| id != write).collect();
    in_flight.push(next);
    let mut last_token = [0u64; 4];
    while !in_flight.is_empty() {
        for id in in_flight.drain(..) {
            complete(&mut q, id, 3);
        }
        for id in dispatch_all(&mut q, 3) {
            let d = Domain::of(q.request(id).op()).index();
            let t = q.bios(id).next().unwrap().token;
            assert!(t > last_token[d], "FIFO order within a domain");
            last_token[d] = t;
            in_flight.push(id);
        }
    }
    assert!(q.is_idle());
    assert_eq!(Domain::ALL.map(|d| kyber(&q).tokens_in_use(d)), [0; 4]);
}

#[test]
fn batches_round_robin_over_domains() {
    let mut q = queue_with_domains([40, 20, 3, 3]);
    let order: String = dispatch_all(&mut q, 1)
        .into_iter()
        .map(|id| match q.request(id).op() {
            Op::Read => 'R',
            Op::Write => 'W',
            Op::Discard => 'D',
            _ => 'O',
        })
        .collect();
    let expected = format!(
        "{r16}{w8}DO{r16}{w8}DO{r8}{w4}DO",
        r16 = "R".repeat(16),
        w8 = "W".repeat(8),
        r8 = "R".repeat(8),
        w4 = "W".repeat(4)
    );
    assert_eq!(order, expected);
}

#[test]
fn congestion_from_slow_reads_throttles_writes() {
    let mut rig = Rig::new(queue());
    // Reads take 10 ms at the device (target 2 ms): p90 I/O latency is bad,
    // the device is congested. Writes take 0.1 ms (target 10 ms): good.
    rig.iodepth = [32, 32];
    rig.lat = [10 * MS, 100 * US];
    rig.run_until(90 * MS);
    assert_eq!(rig.k().evaluations(), 0, "no evaluation before 100 ms");
    assert_eq!(rig.k().depth(Domain::Write), 128);
    rig.run_until(3000 * MS);
    assert!(rig.k().evaluations() >= 10);
    assert_eq!(
        rig.k().depth(Domain::Write),
        1,
        "writes with good latency are throttled while reads are slow"
    );
    assert_eq!(
        rig.k().depth(Domain::Read),
        256,
        "the slow domain is throttled less (it stays at its most)"
    );
    // Domains without traffic keep their depths.
    assert_eq!(rig.k().depth(Domain::Discard), 64);
    assert_eq!(rig.k().depth(Domain::Other), 16);
}

#[test]
fn depth_shrinks_under_congestion_and_grows_back_with_a_backlog() {
    let mut rig = Rig::new(queue());
    // Phase 1: reads are fast (0.1 ms, target 2 ms) but writes take 50 ms
    // (target 10 ms): congestion, so reads are throttled, by 4 each time
    // their p99 is in the lowest bucket: 256, 64, 16, 4, 1. The writes make
    // 160 samples a second, so congestion shows once a second.
    rig.iodepth = [8, 8];
    rig.lat = [100 * US, 50 * MS];
    let mut depths = vec![rig.k().depth(Domain::Read)];
    for step in 1..=60 {
        rig.run_until(step * 100 * MS);
        let d = rig.k().depth(Domain::Read);
        if d != *depths.last().unwrap() {
            depths.push(d);
        }
    }
    assert_eq!(depths, vec![256, 64, 16, 4, 1], "read depth steps down");
    assert_eq!(
        rig.k().depth(Domain::Write),
        128,
        "slow writes stay at the most"
    );
    rig.drain();
    assert_eq!(rig.k().depth(Domain::Read), 1, "depths persist when idle");

    // Phase 2: every I/O is fast now, but 512 reads are outstanding. With one
    // token they wait in the scheduler, so their total latency (which counts
    // the wait) blows the target: the read depth grows, up to ×2 per
    // evaluation, until the wait fits the target again.
    rig.iodepth = [512, 0];
    rig.lat = [500 * US, 100 * US];
    let start = rig.now;
    let mut depths = vec![1];
    for step in 1..=100 {
        rig.run_until(start + step * 100 * MS);
        let d = rig.k().depth(Domain::Read);
        assert!(
            d >= *depths.last().unwrap(),
            "never shrinks without congestion"
        );
        if d != *depths.last().unwrap() {
            depths.push(d);
        }
    }
    let d = rig.k().depth(Domain::Read);
    assert!(d >= 128, "read depth grew back toward the max: {depths:?}");
    assert!(
        depths.windows(2).all(|w| w[1] <= 2 * w[0]),
        "at most doubling per evaluation: {depths:?}"
    );
    assert_eq!(rig.k().depth(Domain::Write), 128);
}

#[test]
fn throttled_domain_stops_at_its_tokens_and_resumes_on_completion() {
    let mut rig = Rig::new(queue());
    rig.iodepth = [32, 32];
    rig.lat = [10 * MS, 100 * US];
    rig.run_until(3000 * MS);
    rig.drain();
    assert_eq!(rig.k().depth(Domain::Write), 1);
    let mut q = rig.q;
    let now = rig.now + 1;
    for i in 0..5u64 {
        q.submit(&Bio::write(i * 64, 4096, 100 + i), now).unwrap();
        q.submit(&Bio::read(10_000 + i * 64, 4096, 200 + i), now)
            .unwrap();
    }
    let sent = dispatch_all(&mut q, now);
    let writes: Vec<RequestId> = sent
        .iter()
        .copied()
        .filter(|&id| q.request(id).op() == Op::Write)
        .collect();
    assert_eq!(writes.len(), 1, "one write token");
    assert_eq!(sent.len(), 6, "reads are not held back by writes");
    assert_eq!(q.dispatch(now), Dispatch::Blocked);
    assert_eq!(kyber(&q).queued_in(Domain::Write), 4);
    // A read completing frees no write token.
    let read = sent.iter().copied().find(|&id| id != writes[0]).unwrap();
    complete(&mut q, read, now + 1);
    assert_eq!(q.dispatch(now + 1), Dispatch::Blocked);
    // The write completing lets the next write go, in FIFO order.
    complete(&mut q, writes[0], now + 2);
    let Dispatch::Request(w) = q.dispatch(now + 2) else {
        panic!("write token freed")
    };
    assert_eq!(q.bios(w).next().unwrap().token, 101);
    assert_eq!(q.dispatch(now + 2), Dispatch::Blocked);
}

#[test]
fn good_latency_and_no_congestion_leave_depths_alone() {
    let mut rig = Rig::new(queue());
    rig.iodepth = [32, 32];
    rig.lat = [200 * US, MS];
    rig.run_until(3000 * MS);
    assert!(rig.k().evaluations() >= 10);
    assert_eq!(Domain::ALL.map(|d| rig.k().depth(d)), [256, 128, 64, 16]);
}

#[test]
fn read_target_decides_congestion() {
    // The slow-read workload throttles writes with the default 2 ms target,
    // not with a 20 ms one.
    let mut q = queue();
    q.set("read_lat_nsec", 20 * MS).unwrap();
    let mut rig = Rig::new(q);
    rig.iodepth = [32, 32];
    rig.lat = [10 * MS, 100 * US];
    rig.run_until(3000 * MS);
    assert_eq!(rig.k().depth(Domain::Write), 128);
    // And a write target below the writes' latency makes writes the cause.
    let mut q = queue();
    q.set("write_lat_nsec", 50 * US).unwrap();
    let mut rig = Rig::new(q);
    rig.iodepth = [8, 32];
    rig.lat = [100 * US, 100 * US];
    rig.run_until(3000 * MS);
    assert!(rig.k().depth(Domain::Read) < 256, "reads throttled");
    assert_eq!(rig.k().depth(Domain::Write), 128);
}

#[test]
fn few_samples_wait_for_a_one_second_window() {
    // 4 slow reads at 10 ms: 400 samples a second, under 500, so the first
    // percentile comes once the window is 1 s old.
    let mut rig = Rig::new(queue());
    rig.iodepth = [4, 2];
    rig.lat = [10 * MS, 100 * US];
    rig.run_until(900 * MS);
    assert!(rig.k().evaluations() >= 5);
    assert_eq!(rig.k().depth(Domain::Write), 128, "window not ready");
    rig.run_until(1300 * MS);
    assert!(
        rig.k().depth(Domain::Write) < 128,
        "window of 1 s evaluated"
    );
}

#[test]
fn bios_merge_with_recent_requests_of_any_domain() {
    let cfg = QueueConfig {
        nr_requests: 64,
        ..QueueConfig::default()
    };
    let mut q = Queue::with_scheduler(cfg, "kyber").unwrap();
    q.submit(&Bio::read(0, 4096, 1), 0).unwrap();
    q.submit(&Bio::write(1000, 4096, 2), 0).unwrap();
    q.submit(&Bio::new(Op::Discard, 5000, 4096, 3), 0).unwrap();
    assert!(matches!(
        q.submit(&Bio::read(8, 4096, 4), 0),
        Ok(Submitted::Merged(_))
    ));
    assert!(matches!(
        q.submit(&Bio::write(992, 4096, 5), 0),
        Ok(Submitted::Merged(_))
    ));
    assert_eq!(q.queued(), 3);
    // Beyond the 8 newest requests the scan stops.
    for i in 0..8u64 {
        q.submit(&Bio::write(20_000 + i * 64, 4096, 10 + i), 0)
            .unwrap();
    }
    assert!(matches!(
        q.submit(&Bio::read(16, 4096, 30), 0),
        Ok(Submitted::NewRequest(_))
    ));
    assert_eq!(q.queued(), 12);
}

#[test]
fn tunables_get_set_and_errors() {
    let mut q = queue();
    assert_eq!(q.get("read_lat_nsec").unwrap(), 2_000_000);
    assert_eq!(q.get("write_lat_nsec").unwrap(), 10_000_000);
    let names: Vec<&str> = kyber(&q).tunables().iter().map(|s| s.name).collect();
    assert_eq!(names, ["read_lat_nsec", "write_lat_nsec"]);
    q.set("read_lat_nsec", 500_000).unwrap();
    q.set_str("write_lat_nsec", "5ms").unwrap();
    assert_eq!(q.get("read_lat_nsec").unwrap(), 500_000);
    assert_eq!(q.get("write_lat_nsec").unwrap(), 5_000_000);
    assert!(matches!(
        q.set("read_lat_nsec", 0),
        Err(TunableError::OutOfRange { min: 1, .. })
    ));
    assert!(matches!(
        q.set("write_lat_nsec", 0),
        Err(TunableError::OutOfRange { .. })
    ));
    assert_eq!(q.get("read_lat_nsec").unwrap(), 500_000, "unchanged");
    q.set("write_lat_nsec", u64::MAX).unwrap();
    let e = q.set("discard_lat_nsec", 1).unwrap_err();
    assert!(
        e.to_string().contains("read_lat_nsec, write_lat_nsec"),
        "{e}"
    );
    assert!(matches!(
        q.get("read_expire"),
        Err(TunableError::Unknown { .. })
    ));
}
