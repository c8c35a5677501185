//! BFQ's idling rules as Linux's: no idling for symmetric queues on a device
//! that queues commands, idling for the only active queue until another
//! becomes active, idling where guarantees need it (classes, raised queues,
//! weights) but not merely because the device is deep in others' requests,
//! injection of the same context's async writes and of others'
//! requests up to the learned inject limit, and command queueing learned from
//! the depth seen in flight.

use crate::bfq::{bfq_with, prio};
use elevator_core::sched::Bfq;
use elevator_core::{
    Bio, Dispatch, IoContext, IoPrio, Outcome, PrioClass, Queue, QueueConfig, RequestId,
};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// A BFQ queue on a device taking `queue_depth` commands, no merging.
fn bfq_on(queue_depth: u32, rotational: bool, sets: &[(&str, u64)]) -> Queue<Bfq> {
    let cfg = QueueConfig {
        nomerges: 2,
        queue_depth,
        rotational,
        nr_requests: 256,
        ..QueueConfig::default()
    };
    bfq_with(cfg, sets)
}

/// A sync read of 8 sectors for `ctx` at `sector`, best effort at `level`.
fn read(ctx: u32, sector: u64, level: u8) -> Bio {
    read_prio(ctx, sector, prio(PrioClass::Be, level))
}

fn read_prio(ctx: u32, sector: u64, p: IoPrio) -> Bio {
    Bio::read(sector, 4096, sector)
        .with_ctx(IoContext(ctx))
        .with_prio(p)
}

/// An async (buffered) write of 8 sectors for `ctx`.
fn async_write(ctx: u32, sector: u64) -> Bio {
    Bio::write(sector, 4096, sector).with_ctx(IoContext(ctx))
}

fn check(q: &Queue<Bfq>) {
    q.check_invariants();
    q.scheduler().check_invariants(q.requests());
}

fn complete(q: &mut Queue<Bfq>, id: RequestId, now: u64) {
    q.complete(id, Outcome::Done, now, &mut |_| {}).unwrap();
    check(q);
}

fn request(q: &mut Queue<Bfq>, now: u64) -> RequestId {
    match q.dispatch(now) {
        Dispatch::Request(id) => id,
        other => panic!("expected a request at {now}, got {other:?}"),
    }
}

/// Context 1 has one read in flight (in service, and dispatched at `t0`),
/// and `others` are submitted beside it.
fn first_in_flight(q: &mut Queue<Bfq>, t0: u64, others: &[Bio]) -> RequestId {
    q.submit(&read(1, 0, 4), t0).unwrap();
    let r1 = request(q, t0);
    assert_eq!(q.request(r1).ctx(), IoContext(1));
    for b in others {
        q.submit(b, t0).unwrap();
    }
    check(q);
    r1
}

#[test]
fn symmetric_queues_on_a_queueing_flash_device_are_not_idled_for() {
    for low_latency in [0, 1] {
        let mut q = bfq_on(32, false, &[("low_latency", low_latency)]);
        let others: Vec<Bio> = (0..4).map(|i| read(2, (1 << 30) + i * 64, 4)).collect();
        let r1 = first_in_flight(&mut q, 0, &others);
        complete(&mut q, r1, MS);
        let r2 = request(&mut q, MS);
        assert_eq!(
            q.request(r2).ctx(),
            IoContext(2),
            "low_latency={low_latency}"
        );
    }
}

#[test]
fn the_only_active_queue_is_idled_for_until_another_becomes_active() {
    let mut q = bfq_on(32, false, &[]);
    let r1 = first_in_flight(&mut q, 0, &[]);
    complete(&mut q, r1, MS);
    // Idled for (nothing else to do: the queue reports no work).
    assert_eq!(q.dispatch(MS), Dispatch::Empty);
    // Another queue becoming active ends the wait: idling no longer pays.
    q.submit(&read(2, 1 << 30, 4), 2 * MS).unwrap();
    check(&q);
    let r2 = request(&mut q, 2 * MS);
    assert_eq!(q.request(r2).ctx(), IoContext(2));
}

#[test]
fn active_queues_in_two_classes_make_the_scenario_asymmetric() {
    for (class, idles) in [(PrioClass::Idle, true), (PrioClass::Be, false)] {
        let mut q = bfq_on(32, false, &[("low_latency", 0)]);
        let others = [read_prio(2, 1 << 30, prio(class, 4))];
        let r1 = first_in_flight(&mut q, 0, &others);
        complete(&mut q, r1, MS);
        match q.dispatch(MS) {
            Dispatch::WaitUntil(t) => assert!(idles && t == 9 * MS, "{class:?}: waited"),
            Dispatch::Request(id) => {
                assert!(!idles, "{class:?}: did not wait");
                assert_eq!(q.request(id).ctx(), IoContext(2));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_raised_queue_is_idled_for_when_an_active_queue_is_not_raised() {
    // Context 1's new queue is raised with low_latency; the async queue
    // (context 2's writes) never is.
    for (low_latency, idles) in [(1, true), (0, false)] {
        let mut q = bfq_on(32, false, &[("low_latency", low_latency)]);
        let r1 = first_in_flight(&mut q, 0, &[async_write(2, 1 << 30)]);
        complete(&mut q, r1, MS);
        match q.dispatch(MS) {
            Dispatch::WaitUntil(t) => assert!(idles && t == 9 * MS, "waited"),
            Dispatch::Request(id) => {
                assert!(!idles, "did not wait");
                assert_eq!(q.request(id).ctx(), IoContext(2));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn raised_queues_of_one_weight_are_not_idled_for_because_the_device_is_deep() {
    // Two new queues, both raised: context 2's five reads are in the device
    // when context 1's one read is dispatched. Context 1, with nothing
    // queued, is not kept: context 2's next read goes next.
    let mut q = bfq_on(32, false, &[]);
    for i in 0..5 {
        q.submit(&read(2, (i + 1) << 24, 4), 0).unwrap();
    }
    q.submit(&read(1, 0, 4), 0).unwrap();
    let firsts: Vec<u32> = (0..6)
        .map(|_| {
            let id = request(&mut q, 0);
            q.request(id).ctx().0
        })
        .collect();
    assert_eq!(firsts, [2, 2, 2, 2, 2, 1]);
    q.submit(&read(2, 6 << 24, 4), 10 * US).unwrap();
    check(&q);
    let next = request(&mut q, 10 * US);
    assert_eq!(q.request(next).ctx(), IoContext(2));
}

#[test]
fn a_heavier_queue_is_idled_for_against_a_lighter_one() {
    let mut q = bfq_on(32, false, &[("low_latency", 0)]);
    q.submit(&read(1, 0, 0), 0).unwrap();
    let r1 = request(&mut q, 0);
    q.submit(&read(2, 1 << 30, 7), 0).unwrap();
    complete(&mut q, r1, MS);
    assert_eq!(q.dispatch(MS), Dispatch::WaitUntil(9 * MS));
}

#[test]
fn the_same_contexts_async_writes_are_injected_while_idling() {
    // Raised context 1 is idled for (the async queue is not raised); its own
    // buffered write is served meanwhile, and it stays in service.
    let mut q = bfq_on(32, false, &[]);
    let r1 = first_in_flight(&mut q, 0, &[async_write(1, 1 << 30)]);
    complete(&mut q, r1, MS);
    let w = request(&mut q, MS);
    assert_eq!(q.request(w).ctx(), IoContext(1));
    assert!(!q.request(w).is_sync());
    assert_eq!(q.dispatch(MS), Dispatch::Empty);
    complete(&mut q, w, 2 * MS);
    q.submit(&read(1, 8, 4), 3 * MS).unwrap();
    let r2 = request(&mut q, 3 * MS);
    assert!(q.request(r2).is_sync());
    assert_eq!(q.request(r2).sector(), 8);
}

#[test]
fn others_are_injected_once_a_service_time_is_known() {
    // Context 1 (weight 80) is idled for against context 2 (weight 10). Its
    // inject limit starts at 0 (short think time); once one of its requests
    // is timed alone in the device, the limit is 1.
    let t0 = 20 * MS;
    let mut q = bfq_on(32, false, &[("low_latency", 0)]);
    q.submit(&read(1, 0, 0), t0).unwrap();
    let r1 = request(&mut q, t0);
    for i in 0..4 {
        q.submit(&read(2, (1 << 30) + i * 64, 7), t0).unwrap();
    }
    complete(&mut q, r1, t0 + MS);
    assert_eq!(q.dispatch(t0 + MS), Dispatch::WaitUntil(t0 + 9 * MS));
    // Timed: it arrives with the device empty and completes alone.
    q.submit(&read(1, 8, 0), t0 + 2 * MS).unwrap();
    let r2 = request(&mut q, t0 + 2 * MS);
    assert_eq!(q.request(r2).ctx(), IoContext(1));
    complete(&mut q, r2, t0 + 3 * MS);
    // One injected request, no more; context 1 stays in service.
    let inj = request(&mut q, t0 + 3 * MS);
    assert_eq!(q.request(inj).ctx(), IoContext(2));
    assert_eq!(q.dispatch(t0 + 3 * MS), Dispatch::WaitUntil(t0 + 11 * MS));
    q.submit(&read(1, 16, 0), t0 + 4 * MS).unwrap();
    let r3 = request(&mut q, t0 + 4 * MS);
    assert_eq!(q.request(r3).ctx(), IoContext(1));
    complete(&mut q, inj, t0 + 5 * MS);
    complete(&mut q, r3, t0 + 5 * MS);
}

#[test]
fn command_queueing_is_learned_from_the_depth_in_flight() {
    // A device that takes 32 commands but is only ever given one at a time
    // does not queue: a sequential queue is then idled for (it would not be
    // on a queueing flash device, as above).
    let mut q = bfq_on(32, false, &[("low_latency", 0)]);
    let mut next = [0u64; 2];
    let mut submit = |q: &mut Queue<Bfq>, c: usize, now: u64| {
        let sector = ((c as u64 + 1) << 20) + next[c];
        next[c] += 8;
        q.submit(&read(c as u32 + 1, sector, 4), now).unwrap();
    };
    for c in 0..2 {
        for _ in 0..8 {
            submit(&mut q, c, 0);
        }
    }
    let mut now = 0;
    let mut last = 0;
    for _ in 0..64 {
        let id = request(&mut q, now);
        last = q.request(id).ctx().0 as usize - 1;
        now += 100 * US;
        complete(&mut q, id, now);
        submit(&mut q, last, now);
    }
    // Stop feeding the queue in service: it is drained, then waited for.
    loop {
        match q.dispatch(now) {
            Dispatch::Request(id) => {
                assert_eq!(
                    q.request(id).ctx().0 as usize - 1,
                    last,
                    "switched without idling"
                );
                now += 100 * US;
                complete(&mut q, id, now);
            }
            Dispatch::WaitUntil(t) => {
                assert_eq!(t, now + 8 * MS);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Context 1 has two reads in flight while an IDLE-class queue is active
/// (so context 1 is idled for) and context 2's async write is queued; one of
/// the reads completes. What does dispatch answer?
fn idled_for_with_a_write_waiting(q: &mut Queue<Bfq>, now: u64) -> Dispatch {
    let idle_class = prio(PrioClass::Idle, 4);
    q.submit(&read_prio(3, 1 << 21, idle_class), now).unwrap();
    q.submit(&read(1, 4096, 4), now).unwrap();
    q.submit(&read(1, 8192, 4), now).unwrap();
    let a = request(q, now);
    let b = request(q, now);
    assert_eq!(q.request(a).ctx(), IoContext(1));
    assert_eq!(q.request(b).ctx(), IoContext(1));
    q.submit(&async_write(2, 1 << 22), now).unwrap();
    complete(q, a, now + 100 * US);
    q.dispatch(now + 100 * US)
}

#[test]
fn the_queue_whose_completions_wake_the_one_in_service_is_injected() {
    // Control: with no waker known, nothing is injected while context 1 is
    // idled for with a request in flight (its inject limit is 0).
    let mut q = bfq_on(32, false, &[("low_latency", 0)]);
    assert_eq!(idled_for_with_a_write_waiting(&mut q, 0), Dispatch::Blocked);

    // Context 1's reads follow the completions of context 2's async writes,
    // three times in a row: the async queue becomes its waker.
    let mut q = bfq_on(32, false, &[("low_latency", 0)]);
    let mut now = 0;
    for round in 0..4u64 {
        q.submit(&read(1, round * 64, 4), now).unwrap();
        let r = request(&mut q, now);
        assert_eq!(q.request(r).ctx(), IoContext(1));
        q.submit(&async_write(2, (1 << 20) + round * 64), now)
            .unwrap();
        now += 100 * US;
        complete(&mut q, r, now);
        // Symmetric queues on a queueing device: no idling.
        let w = request(&mut q, now);
        assert_eq!(q.request(w).ctx(), IoContext(2));
        now += 100 * US;
        complete(&mut q, w, now);
        now += 100 * US;
    }
    match idled_for_with_a_write_waiting(&mut q, now) {
        Dispatch::Request(w) => {
            assert_eq!(q.request(w).ctx(), IoContext(2));
            assert!(!q.request(w).is_sync());
        }
        other => panic!("the waker's write was not injected: {other:?}"),
    }
    check(&q);
}
