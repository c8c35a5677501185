//! BFQ through the public queue API: weights share sectors, budgets and
//! timeouts end service slots, idling waits for the queue in service and
//! stops when it is gone, FIFO expiry, classes, weight raising, tunables,
//! and random streams with BFQ's internal invariants checked at every step.

use elevator_core::sched::Bfq;
use elevator_core::{
    Bio, BioFlags, Dispatch, IoContext, IoPrio, Outcome, PrioClass, Queue, QueueConfig, RequestId,
    TunableError,
};
use elevator_testkit::TestRng;

const MS: u64 = 1_000_000;

/// A BFQ queue; every bio its own request (no merging) unless `merges`.
fn bfq_queue(sets: &[(&str, u64)], queue_depth: u32, merges: bool) -> Queue<Bfq> {
    let cfg = QueueConfig {
        nomerges: if merges { 0 } else { 2 },
        queue_depth,
        nr_requests: 256,
        ..QueueConfig::default()
    };
    bfq_with(cfg, sets)
}

/// A BFQ queue of `cfg` with the tunables `sets` set (shared with
/// `bfq_idling`).
pub(crate) fn bfq_with(cfg: QueueConfig, sets: &[(&str, u64)]) -> Queue<Bfq> {
    let mut q = Queue::new(cfg, Bfq::new()).unwrap();
    for &(name, value) in sets {
        q.set(name, value).unwrap();
    }
    q
}

pub(crate) fn prio(class: PrioClass, level: u8) -> IoPrio {
    IoPrio::new(class, level).unwrap()
}

fn be(level: u8) -> IoPrio {
    prio(PrioClass::Be, level)
}

/// A sync read of 8 sectors at `sector` for `ctx`.
fn read(ctx: u32, sector: u64, p: IoPrio) -> Bio {
    Bio::read(sector, 4096, sector)
        .with_ctx(IoContext(ctx))
        .with_prio(p)
}

fn check(q: &Queue<Bfq>) {
    q.check_invariants();
    q.scheduler().check_invariants(q.requests());
}

fn complete(q: &mut Queue<Bfq>, id: RequestId, now: u64) {
    q.complete(id, Outcome::Done, now, &mut |_| {}).unwrap();
}

/// Keeps contexts backlogged with sequential 4 KiB reads, each in its own
/// region (1 GiB apart), and serves them one request at a time.
struct Backlog {
    ctxs: Vec<(u32, IoPrio)>,
    next: Vec<u64>,
}

impl Backlog {
    fn new(ctxs: &[(u32, IoPrio)]) -> Backlog {
        Backlog {
            ctxs: ctxs.to_vec(),
            next: vec![0; ctxs.len()],
        }
    }

    /// A backlog of `ctxs` that has submitted `n` requests of each, at time 0.
    fn filled(q: &mut Queue<Bfq>, ctxs: &[(u32, IoPrio)], n: u32) -> Backlog {
        let mut b = Backlog::new(ctxs);
        for i in 0..ctxs.len() {
            b.submit(q, i, n, 0);
        }
        b
    }

    fn index(&self, ctx: u32) -> usize {
        self.ctxs.iter().position(|&(c, _)| c == ctx).unwrap()
    }

    fn submit(&mut self, q: &mut Queue<Bfq>, i: usize, n: u32, now: u64) {
        let (ctx, p) = self.ctxs[i];
        for _ in 0..n {
            // 16 sectors apart: never contiguous, so never merged.
            let sector = ((i as u64 + 1) << 21) + self.next[i] * 16;
            self.next[i] += 1;
            q.submit(&read(ctx, sector, p), now).unwrap();
        }
    }

    /// Dispatch one request, complete it after `service(ctx)`, replace it
    /// with a new one of the same context. Returns (context index, sectors).
    fn step(
        &mut self,
        q: &mut Queue<Bfq>,
        now: &mut u64,
        service: impl Fn(u32) -> u64,
    ) -> (usize, u32) {
        let id = loop {
            match q.dispatch(*now) {
                Dispatch::Request(id) => break id,
                Dispatch::WaitUntil(t) => *now = t,
                other => panic!("backlogged queue answered {other:?}"),
            }
        };
        let (ctx, sectors) = (q.request(id).ctx().0, q.request(id).sectors());
        *now += service(ctx);
        complete(q, id, *now);
        let i = self.index(ctx);
        self.submit(q, i, 1, *now);
        (i, sectors)
    }
}

/// Lengths of the runs of equal values in `seq`, with the value.
fn runs(seq: &[usize]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = vec![];
    for &x in seq {
        match out.last_mut() {
            Some((v, n)) if *v == x => *n += 1,
            _ => out.push((x, 1)),
        }
    }
    out
}

#[test]
fn weights_share_sectors_by_priority() {
    // Weight raising off: both queues are new, and an interactive raise ends
    // for the first that has received 110K sectors, which would tilt the
    // figures for a while.
    let mut q = bfq_queue(&[("max_budget", 256), ("low_latency", 0)], 1, false);
    let mut b = Backlog::filled(&mut q, &[(1, be(0)), (2, be(7))], 8);
    let mut now = 0;
    let mut sectors = [0u64; 2];
    for i in 0..20_000u32 {
        let (c, s) = b.step(&mut q, &mut now, |_| 100_000);
        if i >= 1000 {
            sectors[c] += u64::from(s);
        }
        if i.is_multiple_of(1000) {
            check(&q);
        }
    }
    let share = sectors[0] as f64 / (sectors[0] + sectors[1]) as f64;
    // Weights 80 and 10: 8/9 = 88.9%.
    assert!((0.86..=0.92).contains(&share), "level 0 got {share:.3}");
}

#[test]
fn budget_exhaustion_ends_slots_and_budgets_grow() {
    let mut q = bfq_queue(&[("max_budget", 64), ("low_latency", 0)], 1, false);
    let mut b = Backlog::filled(&mut q, &[(1, be(4)), (2, be(4))], 16);
    let mut now = 0;
    let seq: Vec<usize> = (0..400)
        .map(|_| b.step(&mut q, &mut now, |_| MS).0)
        .collect();
    check(&q);
    let r = runs(&seq);
    // First slots: 2/3 of max_budget (42 sectors) = 5 requests of 8 sectors;
    // exhausted, the budget grows (×4, capped at 64): 8 requests.
    assert_eq!(&r[..2], &[(0, 5), (1, 5)], "{r:?}");
    assert!(r[2..r.len() - 1].iter().all(|&(_, n)| n == 8), "{r:?}");
    // Equal weights: the queues alternate.
    assert!(r.windows(2).all(|w| w[0].0 != w[1].0));
}

#[test]
fn timeout_expires_slow_queue_and_charges_its_whole_budget() {
    let mut q = bfq_queue(&[("max_budget", 512), ("low_latency", 0)], 1, false);
    let mut b = Backlog::filled(&mut q, &[(1, be(4)), (2, be(4))], 8);
    let mut now = 0;
    // Context 1 is slow (30 ms per request, a seeky process on a disk),
    // context 2 fast (1 ms).
    let seq: Vec<usize> = (0..3000)
        .map(|_| {
            b.step(&mut q, &mut now, |c| if c == 1 { 30 * MS } else { MS })
                .0
        })
        .collect();
    check(&q);
    let r = runs(&seq);
    let slow: Vec<usize> = r.iter().filter(|x| x.0 == 0).map(|x| x.1).collect();
    let fast: Vec<usize> = r.iter().filter(|x| x.0 == 1).map(|x| x.1).collect();
    // The slow queue's slot ends 125 ms after its first completion: 6
    // requests (48 sectors), far below its budget.
    assert!(slow.iter().all(|&n| n <= 6), "{slow:?}");
    // Charged its whole budget, it waits its turn like the fast queue, which
    // uses its budget (64 requests): the two alternate. Charged only 48
    // sectors, it would get several slots per slot of the fast queue.
    assert!(fast[1..fast.len() - 1].iter().all(|&n| n == 64), "{fast:?}");
    assert!(r.windows(2).all(|w| w[0].0 != w[1].0), "{r:?}");
    assert!(slow.len().abs_diff(fast.len()) <= 1);
}

#[test]
fn idles_for_the_queue_in_service_until_its_next_request() {
    // Rotational, one request at a time: idling always pays.
    let mut q = bfq_queue(&[], 1, false);
    q.submit(&read(1, 0, be(4)), 0).unwrap();
    let Dispatch::Request(r1) = q.dispatch(0) else {
        panic!()
    };
    for i in 0..4 {
        q.submit(&read(2, (1 << 30) + i * 16, be(4)), 0).unwrap();
    }
    check(&q);
    complete(&mut q, r1, MS);
    // Context 1 has nothing queued; context 2 waits while BFQ idles.
    assert_eq!(q.dispatch(MS), Dispatch::WaitUntil(9 * MS));
    assert_eq!(q.dispatch(5 * MS), Dispatch::WaitUntil(9 * MS));
    check(&q);
    // Its next request ends the wait.
    q.submit(&read(1, 8, be(4)), 6 * MS).unwrap();
    let Dispatch::Request(r2) = q.dispatch(6 * MS) else {
        panic!()
    };
    assert_eq!(q.request(r2).ctx(), IoContext(1));
    assert_eq!(q.request(r2).sector(), 8);
    complete(&mut q, r2, 7 * MS);
    assert_eq!(q.dispatch(7 * MS), Dispatch::WaitUntil(15 * MS));
    // The wait runs out: context 1 expires, context 2 is served.
    let Dispatch::Request(r3) = q.dispatch(15 * MS) else {
        panic!()
    };
    assert_eq!(q.request(r3).ctx(), IoContext(2));
    check(&q);
}

#[test]
fn no_idling_with_slice_idle_zero_or_for_async_queues() {
    for (sets, op_sync) in [(&[("slice_idle", 0)][..], true), (&[][..], false)] {
        let mut q = bfq_queue(sets, 1, false);
        let first = if op_sync {
            read(1, 0, be(4))
        } else {
            Bio::write(0, 4096, 0).with_ctx(IoContext(1))
        };
        q.submit(&first, 0).unwrap();
        let Dispatch::Request(r1) = q.dispatch(0) else {
            panic!()
        };
        q.submit(&read(2, 1 << 30, be(4)), 0).unwrap();
        complete(&mut q, r1, MS);
        let Dispatch::Request(r2) = q.dispatch(MS) else {
            panic!("{sets:?} sync={op_sync}: BFQ idled")
        };
        assert_eq!(q.request(r2).ctx(), IoContext(2));
        check(&q);
    }
}

#[test]
fn a_late_wake_up_after_the_queue_is_gone_does_nothing_harmful() {
    let mut q = bfq_queue(&[], 1, false);
    q.submit(&read(1, 0, be(4)), 0).unwrap();
    let Dispatch::Request(r1) = q.dispatch(0) else {
        panic!()
    };
    for i in 0..2 {
        q.submit(&read(2, (1 << 30) + i * 16, be(4)), 0).unwrap();
    }
    complete(&mut q, r1, MS);
    assert_eq!(q.dispatch(MS), Dispatch::WaitUntil(9 * MS));
    // An RT request preempts the idling queue, which is freed (nothing
    // queued, nothing in flight).
    q.submit(&read(3, 1 << 29, prio(PrioClass::Rt, 4)), 2 * MS)
        .unwrap();
    check(&q);
    let Dispatch::Request(rt) = q.dispatch(2 * MS) else {
        panic!()
    };
    assert_eq!(q.request(rt).ctx(), IoContext(3));
    complete(&mut q, rt, 3 * MS);
    // The engine's timer for the old wait fires: BFQ answers for the queue
    // in service now (the RT queue, idling until 11 ms), not the freed one.
    assert_eq!(q.dispatch(9 * MS), Dispatch::WaitUntil(11 * MS));
    let mut order = vec![];
    let mut now = 11 * MS;
    while !q.is_idle() {
        match q.dispatch(now) {
            Dispatch::Request(id) => {
                order.push(q.request(id).ctx().0);
                complete(&mut q, id, now + MS);
            }
            Dispatch::WaitUntil(t) => now = t,
            other => panic!("{other:?}"),
        }
        now += MS;
        check(&q);
    }
    assert_eq!(order, vec![2, 2]);
    // Context 1 comes back (its freed queue's history is found again); it
    // is served once context 2's idle wait ends.
    q.submit(&read(1, 16, be(4)), now).unwrap();
    let r = loop {
        match q.dispatch(now) {
            Dispatch::Request(r) => break r,
            Dispatch::WaitUntil(t) => now = t,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(q.request(r).ctx(), IoContext(1));
    complete(&mut q, r, now + MS);
    check(&q);
}

#[test]
fn a_context_gone_ends_the_wait_for_it() {
    let mut q = bfq_queue(&[], 1, false);
    q.submit(&read(1, 0, be(4)), 0).unwrap();
    let Dispatch::Request(r1) = q.dispatch(0) else {
        panic!()
    };
    q.submit(&read(2, 1 << 30, be(4)), 0).unwrap();
    complete(&mut q, r1, MS);
    assert_eq!(q.dispatch(MS), Dispatch::WaitUntil(9 * MS));
    q.context_gone(IoContext(1), 2 * MS);
    check(&q);
    let Dispatch::Request(r2) = q.dispatch(2 * MS) else {
        panic!("still waiting for a context that is gone")
    };
    assert_eq!(q.request(r2).ctx(), IoContext(2));
    // A context gone while its requests are still queued: they are served,
    // and nobody waits for it afterwards.
    for i in 0..2 {
        q.submit(&read(5, (1 << 28) + i * 16, be(4)), 3 * MS)
            .unwrap();
    }
    q.context_gone(IoContext(5), 3 * MS);
    complete(&mut q, r2, 3 * MS);
    let mut now = 3 * MS;
    let mut served = 0;
    while !q.is_idle() {
        match q.dispatch(now) {
            Dispatch::Request(id) => {
                served += 1;
                complete(&mut q, id, now + MS);
            }
            Dispatch::WaitUntil(t) => now = t,
            other => panic!("{other:?}"),
        }
        check(&q);
    }
    assert_eq!(served, 2);
}

#[test]
fn fifo_expiry_is_checked_once_per_slot() {
    for (when, first) in [(MS, 0u64), (200 * MS, 1 << 20)] {
        let mut q = bfq_queue(&[], 1, false);
        // The oldest request lies far ahead; the others at the head.
        for s in [1 << 20, 0, 16, 32] {
            q.submit(&read(1, s, be(4)), 0).unwrap();
        }
        let Dispatch::Request(id) = q.dispatch(when) else {
            panic!()
        };
        assert_eq!(q.request(id).sector(), first, "dispatch at {when}");
        complete(&mut q, id, when);
        // Only the slot's first dispatch looks at the FIFO: the rest follow
        // the sector order (wrapping to the lowest after the far request).
        let Dispatch::Request(id) = q.dispatch(when) else {
            panic!()
        };
        assert_eq!(q.request(id).sector(), if first == 0 { 16 } else { 0 });
        complete(&mut q, id, when);
        check(&q);
    }
}

#[test]
fn backward_seeks_within_back_seek_max_are_penalised() {
    let mut q = bfq_queue(&[], 1, false);
    q.submit(&read(1, 10_000, be(4)), 0).unwrap();
    let Dispatch::Request(id) = q.dispatch(0) else {
        panic!()
    };
    complete(&mut q, id, MS);
    // Head at 10008: 9908 is 100 behind (costs 200), 10158 is 150 ahead.
    q.submit(&read(1, 9_908, be(4)), MS).unwrap();
    q.submit(&read(1, 10_158, be(4)), MS).unwrap();
    let Dispatch::Request(id) = q.dispatch(MS) else {
        panic!()
    };
    assert_eq!(q.request(id).sector(), 10_158);
    complete(&mut q, id, 2 * MS);
    check(&q);
}

/// Dispatch everything, completing at once, jumping over idle waits.
fn drain_order(q: &mut Queue<Bfq>, now: &mut u64) -> Vec<u32> {
    let mut order = vec![];
    while !q.is_idle() {
        match q.dispatch(*now) {
            Dispatch::Request(id) => {
                order.push(q.request(id).ctx().0);
                complete(q, id, *now);
            }
            Dispatch::WaitUntil(t) => *now = t,
            other => panic!("{other:?}"),
        }
        check(q);
    }
    order
}

#[test]
fn classes_are_strict_and_a_higher_class_preempts() {
    let mut q = bfq_queue(&[("low_latency", 0)], 1, false);
    for i in 0..4 {
        q.submit(&read(1, i * 16, be(4)), 0).unwrap();
        q.submit(&read(2, (1 << 30) + i * 16, prio(PrioClass::Idle, 4)), 0)
            .unwrap();
        q.submit(&read(3, (1 << 29) + i * 16, prio(PrioClass::Rt, 4)), 0)
            .unwrap();
    }
    let mut now = MS;
    let order = drain_order(&mut q, &mut now);
    assert_eq!(order, [3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2]);

    // A BE queue is being served; an RT request takes over at once.
    for i in 0..4 {
        q.submit(&read(1, 64 + i * 16, be(4)), now).unwrap();
    }
    let Dispatch::Request(id) = q.dispatch(now) else {
        panic!()
    };
    complete(&mut q, id, now);
    q.submit(&read(3, 1 << 29, prio(PrioClass::Rt, 0)), now)
        .unwrap();
    let Dispatch::Request(id) = q.dispatch(now) else {
        panic!()
    };
    assert_eq!(q.request(id).ctx(), IoContext(3));
    complete(&mut q, id, now);
    check(&q);
}

#[test]
fn weight_raising_favours_a_new_queue_only_with_low_latency() {
    for low_latency in [0, 1] {
        let mut q = bfq_queue(&[("max_budget", 256), ("low_latency", 0)], 1, false);
        let mut b = Backlog::new(&[(1, be(4)), (2, be(4))]);
        b.submit(&mut q, 0, 16, 0);
        let mut now = 0;
        for _ in 0..100 {
            b.step(&mut q, &mut now, |_| MS);
        }
        // Context 1 has been busy for 100 ms, unraised; now a new process
        // starts (an interactive application).
        q.set("low_latency", low_latency).unwrap();
        b.submit(&mut q, 1, 16, now);
        check(&q);
        let mut sectors = [0u64; 2];
        for _ in 0..2000 {
            let (c, s) = b.step(&mut q, &mut now, |_| MS);
            sectors[c] += u64::from(s);
        }
        check(&q);
        let share = sectors[1] as f64 / (sectors[0] + sectors[1]) as f64;
        if low_latency == 1 {
            // Weight 40 × 30 against 40.
            assert!(share > 0.9, "raised share {share:.3}");
        } else {
            assert!((0.4..=0.6).contains(&share), "share {share:.3}");
        }
    }
}

#[test]
fn a_large_burst_of_new_queues_is_not_raised() {
    // Ten processes start together: none is raised, so an eleventh, started
    // later, is raised against all of them.
    let mut q = bfq_queue(&[("max_budget", 256)], 1, false);
    let ctxs: Vec<(u32, IoPrio)> = (1..=11).map(|c| (c, be(4))).collect();
    let mut b = Backlog::new(&ctxs);
    for i in 0..10 {
        b.submit(&mut q, i, 8, i as u64 * MS);
    }
    let mut now = 10 * MS;
    for _ in 0..300 {
        b.step(&mut q, &mut now, |_| MS);
    }
    b.submit(&mut q, 10, 8, now);
    let mut sectors = vec![0u64; 11];
    for _ in 0..3000 {
        let (c, s) = b.step(&mut q, &mut now, |_| MS);
        sectors[c] += u64::from(s);
    }
    check(&q);
    let total: u64 = sectors.iter().sum();
    let late = sectors[10] as f64 / total as f64;
    // 1200 against 10 × 40: 75%.
    assert!((0.65..=0.85).contains(&late), "late queue got {late:.3}");
    // The ten share the rest evenly.
    for &s in &sectors[..10] {
        let share = s as f64 / total as f64;
        assert!((0.015..=0.04).contains(&share), "{sectors:?}");
    }
}

#[test]
fn tunables_get_set_and_errors() {
    let mut q = bfq_queue(&[], 1, false);
    let defaults = [
        ("low_latency", 1),
        ("slice_idle", 8),
        ("timeout_sync", 125),
        ("max_budget", 0),
        ("fifo_expire_sync", 125),
        ("fifo_expire_async", 250),
        ("back_seek_max", 16384),
        ("back_seek_penalty", 2),
        ("strict_guarantees", 0),
    ];
    for (name, value) in defaults {
        assert_eq!(q.get(name).unwrap(), value, "{name}");
    }
    let names: Vec<&str> = q.tunables().map(|t| t.name).collect();
    for (name, _) in defaults {
        assert!(names.contains(&name), "{name} not listed");
    }
    for (name, value) in [
        ("low_latency", 0),
        ("slice_idle", 0),
        ("timeout_sync", 250),
        ("max_budget", 4096),
        ("fifo_expire_sync", 50),
        ("fifo_expire_async", 1000),
        ("back_seek_max", 0),
        ("back_seek_penalty", 5),
        ("strict_guarantees", 1),
    ] {
        q.set(name, value).unwrap();
        assert_eq!(q.get(name).unwrap(), value, "{name}");
    }
    q.set_str("slice_idle", "2ms").unwrap();
    assert_eq!(q.get("slice_idle").unwrap(), 2);
    q.set_str("max_budget", "1m").unwrap();
    assert_eq!(q.get("max_budget").unwrap(), 2048);
    for (name, value) in [
        ("low_latency", 2),
        ("strict_guarantees", 7),
        ("timeout_sync", 0),
        ("back_seek_penalty", 0),
        ("slice_idle", 60_001),
    ] {
        let e = q.set(name, value).unwrap_err();
        assert!(matches!(e, TunableError::OutOfRange { .. }), "{name}: {e}");
        assert!(e.to_string().contains(name), "{e}");
    }
    let e = q.set("slice_sync", 1).unwrap_err();
    assert!(matches!(e, TunableError::Unknown { .. }));
    assert!(e.to_string().contains("timeout_sync"), "{e}");
    assert!(q.get("quantum").is_err());
}

#[test]
fn strict_guarantees_keeps_one_request_in_the_device() {
    let mut q = bfq_queue(&[("strict_guarantees", 1)], 8, false);
    for i in 0..4 {
        q.submit(&read(1, i * 16, be(4)), 0).unwrap();
    }
    let Dispatch::Request(a) = q.dispatch(0) else {
        panic!()
    };
    assert_eq!(q.dispatch(0), Dispatch::Blocked);
    complete(&mut q, a, MS);
    assert!(matches!(q.dispatch(MS), Dispatch::Request(_)));
    check(&q);
}

#[test]
fn merges_stay_within_a_queue() {
    let mut q = bfq_queue(&[], 1, true);
    // Context 1's request at 0..8; context 2's bio at 8 must not join it,
    // context 1's must.
    q.submit(&read(1, 0, be(4)), 0).unwrap();
    q.submit(&read(2, 8, be(4)), 0).unwrap();
    q.submit(&read(1, 16, be(4)), 0).unwrap();
    q.submit(&read(1, 8, be(4)).with_ctx(IoContext(1)), 0)
        .unwrap();
    check(&q);
    // Front merge from context 1's queue.
    q.submit(&Bio::read(24 * 1024, 4096, 1).with_ctx(IoContext(1)), 0)
        .unwrap();
    q.submit(&Bio::read(24 * 1024 - 8, 4096, 2).with_ctx(IoContext(1)), 0)
        .unwrap();
    // A sync write does not merge with an async one of the same context.
    q.submit(&Bio::write(1 << 20, 4096, 3).with_ctx(IoContext(1)), 0)
        .unwrap();
    q.submit(
        &Bio::write((1 << 20) + 8, 4096, 4)
            .with_ctx(IoContext(1))
            .with_flags(BioFlags::SYNC),
        0,
    )
    .unwrap();
    check(&q);
    let mut sizes = vec![];
    let mut now = 0;
    while !q.is_idle() {
        match q.dispatch(now) {
            Dispatch::Request(id) => {
                let r = q.request(id);
                sizes.push((r.ctx().0, r.sector(), r.sectors()));
                complete(&mut q, id, now);
            }
            Dispatch::WaitUntil(t) => now = t,
            other => panic!("{other:?}"),
        }
        check(&q);
    }
    sizes.sort();
    assert_eq!(
        sizes,
        vec![
            (1, 0, 24),
            (1, 24 * 1024 - 8, 16),
            (1, 1 << 20, 8),
            (1, (1 << 20) + 8, 8),
            (2, 8, 8)
        ]
    );
}

/// Random streams from many contexts (arbitrary `u32` ids, more of them than
/// BFQ has queue slots, so freed queues get reused), mixed priorities and
/// operations, requeues, tunable changes, contexts going away: the queue's
/// and BFQ's invariants hold at every step, and everything drains.
#[test]
fn random_streams_keep_the_invariants() {
    for seed in 1..=100u64 {
        let mut rng = TestRng::new(seed);
        let nr = 4 + rng.below(40) as u32;
        let cfg = QueueConfig {
            nr_requests: nr,
            queue_depth: 1 + rng.below(8) as u32,
            nomerges: rng.below(3) as u8,
            rotational: rng.below(4) != 0,
            ..QueueConfig::default()
        };
        let mut q = Queue::new(cfg, Bfq::new()).unwrap();
        let contexts: Vec<u32> = (0..400)
            .map(|i| match i % 4 {
                0 => i,
                1 => u32::MAX - i,
                2 => i << 20,
                _ => rng.next_u64() as u32,
            })
            .collect();
        let mut cursor = vec![0u64; contexts.len()];
        let mut in_flight: Vec<RequestId> = vec![];
        let mut now = 0u64;
        let mut token = 0u64;
        for _ in 0..3000 {
            match rng.below(20) {
                0..=7 => {
                    // A few busy contexts at a time, drifting over all.
                    let base = (now / (50 * MS)) as usize;
                    let c = (base + rng.below(6) as usize) % contexts.len();
                    let sector = if rng.below(3) == 0 {
                        rng.below(1 << 20) * 8
                    } else {
                        cursor[c] += 8;
                        ((c as u64) << 22) + cursor[c]
                    };
                    let class = [PrioClass::Rt, PrioClass::Be, PrioClass::Be, PrioClass::Idle]
                        [rng.below(4) as usize];
                    let mut bio = match rng.below(4) {
                        0 => Bio::write(sector, 4096 * (1 + rng.below(4) as u32), token),
                        1 => Bio::write(sector, 4096, token).with_flags(BioFlags::SYNC),
                        _ => Bio::read(sector, 4096 * (1 + rng.below(4) as u32), token),
                    }
                    .with_ctx(IoContext(contexts[c]))
                    .with_prio(prio(class, rng.below(8) as u8));
                    if rng.below(30) == 0 {
                        bio = bio.with_flags(BioFlags::META);
                    }
                    token += 1;
                    let _ = q.submit(&bio, now);
                }
                8..=11 => match q.dispatch(now) {
                    Dispatch::Request(id) => in_flight.push(id),
                    Dispatch::WaitUntil(t) => assert!(t > now, "wait until the past"),
                    _ => {}
                },
                12..=15 if !in_flight.is_empty() => {
                    let id = in_flight.swap_remove(rng.below(in_flight.len() as u64) as usize);
                    complete(&mut q, id, now);
                }
                16 if !in_flight.is_empty() => {
                    let id = in_flight.swap_remove(rng.below(in_flight.len() as u64) as usize);
                    q.requeue(id).unwrap();
                }
                17 => now += rng.below(20 * MS),
                18 => {
                    let c = rng.below(contexts.len() as u64) as usize;
                    q.context_gone(IoContext(contexts[c]), now);
                }
                19 => {
                    let (name, value) = [
                        ("low_latency", rng.below(2)),
                        ("strict_guarantees", u64::from(rng.below(8) == 0)),
                        ("slice_idle", rng.below(12)),
                        ("max_budget", [0, 8, 64, 4096][rng.below(4) as usize]),
                        ("timeout_sync", 1 + rng.below(200)),
                    ][rng.below(5) as usize];
                    q.set(name, value).unwrap();
                }
                _ => {}
            }
            check(&q);
        }
        // Drain.
        let mut guard = 0;
        while !q.is_idle() {
            guard += 1;
            assert!(guard < 100_000, "seed {seed}: does not drain");
            match q.dispatch(now) {
                Dispatch::Request(id) => in_flight.push(id),
                Dispatch::WaitUntil(t) => now = t,
                Dispatch::Blocked | Dispatch::Empty => {
                    assert!(
                        !in_flight.is_empty(),
                        "seed {seed}: work queued, nothing in flight, nothing dispatched"
                    );
                    let id = in_flight.remove(0);
                    complete(&mut q, id, now);
                }
            }
            check(&q);
        }
        assert!(in_flight.is_empty());
    }
}

/// Once warm, many contexts with idling, preemption and weight raising
/// make no allocation.
#[test]
fn many_contexts_do_not_allocate_once_warm() {
    let cfg = QueueConfig {
        nr_requests: 64,
        queue_depth: 4,
        ..QueueConfig::default()
    };
    let mut q = Queue::new(cfg, Bfq::new()).unwrap();
    let mut rng = TestRng::new(0x1234_5678);
    let mut in_flight: Vec<RequestId> = Vec::with_capacity(64);
    let mut now = 0u64;
    let mut token = 0u64;
    let mut run = |q: &mut Queue<Bfq>, steps: u32| {
        for _ in 0..steps {
            if rng.below(2) == 0 {
                // 1000 contexts (more than the queue slots), ids spread over u32.
                let ctx = (rng.below(1000) as u32).wrapping_mul(2_654_435_761);
                let class = if rng.below(10) == 0 {
                    PrioClass::Rt
                } else {
                    PrioClass::Be
                };
                let bio = Bio::read(rng.below(1 << 24) * 8, 4096, token)
                    .with_ctx(IoContext(ctx))
                    .with_prio(prio(class, rng.below(8) as u8));
                token += 1;
                let _ = q.submit(&bio, now);
            }
            match q.dispatch(now) {
                Dispatch::Request(id) => in_flight.push(id),
                Dispatch::WaitUntil(t) => now = t,
                _ => {}
            }
            if !in_flight.is_empty() && rng.below(3) != 0 {
                let id = in_flight.swap_remove(0);
                q.complete(id, Outcome::Done, now, &mut |_| {}).unwrap();
            }
            now += 100_000;
        }
    };
    run(&mut q, 200_000);
    let info = allocation_counter::measure(|| run(&mut q, 100_000));
    assert_eq!(info.count_total, 0, "{} allocations", info.count_total);
}
