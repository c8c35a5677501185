//! Tests of the service-time table: the analyzer's pairing fills it, keys
//! keep their order, the model is bounded and seeded, the pass over a
//! trace follows the device the planner chooses.

use super::*;
use crate::record::{Record, dev_t, event};
use elevator_core::BioFlags;

fn rec(dev: DevT, time: u64, action: TraceAction, op: Op, sector: u64, sectors: u32) -> Record {
    Record::new(
        event(time, action, op, BioFlags::NONE, sector, sectors * 512, 7),
        0,
        dev,
    )
}

/// The service times an analyzer keeps from `records`.
fn kept(records: impl IntoIterator<Item = Record>) -> ServiceTimes {
    let mut a = Analyzer::with_service_times();
    for r in records {
        a.record(&r);
    }
    a.take_service_times().expect("asked for")
}

#[test]
fn issues_and_completions_pair_by_request_in_order() {
    use TraceAction::*;
    let d = dev_t(7, 0);
    let t = kept([
        rec(d, 0, Issue, Op::Write, 100, 16),
        rec(d, 5, Issue, Op::Flush, 0, 0),
        rec(d, 10, Issue, Op::Read, 500, 8),
        rec(d, 30, Complete, Op::Write, 100, 16),
        rec(d, 35, Complete, Op::Flush, 0, 0),
        rec(d, 40, Issue, Op::Write, 100, 16),
        rec(d, 1040, Complete, Op::Write, 100, 16),
        rec(d, 2010, Complete, Op::Read, 500, 8),
    ]);
    assert_eq!(t.requests(), 4);
    assert_eq!(t.completed(), 4);
    assert_eq!(t.max_in_flight(), 3);
    let w = t.group(Op::Write, 100, 16).expect("the write");
    assert_eq!(t.times(w), &[30, 1000], "in the recording's order");
    let r = t.group(Op::Read, 500, 8).expect("the read");
    assert_eq!(t.times(r), &[2000]);
    let f = t.group(Op::Flush, 0, 0).expect("the flush");
    assert_eq!(t.times(f), &[30]);
    // Another size, operation or sector is another request.
    assert_eq!(t.group(Op::Write, 100, 8), None);
    assert_eq!(t.group(Op::Read, 100, 16), None);
    assert_eq!(t.group(Op::Write, 101, 16), None);
}

#[test]
fn an_analyzer_not_asked_keeps_nothing() {
    let mut a = Analyzer::new();
    a.record(&rec(1, 0, TraceAction::Issue, Op::Write, 0, 8));
    assert!(a.take_service_times().is_none());
}

#[test]
fn the_model_draws_from_the_size_class_and_is_bounded() {
    let mut b = ServiceTimesBuilder::new();
    for i in 0..10_000u64 {
        b.issued();
        // 8-sector writes take 1000..2000 ns; 256-sector ones 50_000.
        b.completed(Op::Write, i * 8, 8, 1000 + i % 1000);
    }
    b.issued();
    b.completed(Op::Write, 1 << 30, 256, 50_000);
    let t = b.finish();
    assert_eq!(t.max_in_flight(), 1);
    assert!(
        t.model.iter().all(|s| s.len() <= SAMPLE_SIZE),
        "the sample is bounded"
    );
    let mut rng = Rng::new(3);
    for _ in 0..100 {
        let v = t.modelled(Op::Write, 8, &mut rng);
        assert!((1000..2000).contains(&v), "{v}");
        // 12 sectors: the class of 8..16.
        assert!((1000..2000).contains(&t.modelled(Op::Write, 12, &mut rng)));
        assert_eq!(t.modelled(Op::Write, 300, &mut rng), 50_000);
        // 200 sectors: the class of 128..256 is empty, 256..512 is nearer
        // than 8..16.
        assert_eq!(t.modelled(Op::Write, 200, &mut rng), 50_000);
    }
    // No read was recorded: a read takes a write's time.
    assert!(t.modelled(Op::Read, 8, &mut rng) >= 1000);
    // The same seed draws the same times.
    let draw = |seed| {
        let mut rng = Rng::new(seed);
        (0..20)
            .map(|_| t.modelled(Op::Write, 8, &mut rng))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(5), draw(5));
    assert_ne!(draw(5), draw(6));
    assert_eq!(ServiceTimes::default().modelled(Op::Read, 8, &mut rng), 0);
}

#[test]
fn a_requeue_leaves_the_device() {
    use TraceAction::*;
    let d = dev_t(7, 0);
    let t = kept([
        rec(d, 0, Issue, Op::Write, 0, 8),
        rec(d, 1, Requeue, Op::Write, 0, 8),
        rec(d, 2, Issue, Op::Write, 0, 8),
        rec(d, 9, Complete, Op::Write, 0, 8),
    ]);
    assert_eq!(t.max_in_flight(), 1);
    let g = t.group(Op::Write, 0, 8).expect("kept");
    assert_eq!(t.times(g), &[7], "from the last issue");
}

#[test]
fn the_pass_follows_the_device_the_planner_chooses() {
    use TraceAction::*;
    let (busy, other) = (dev_t(8, 0), dev_t(7, 0));
    let mut records = Vec::new();
    for i in 0..10u64 {
        let t = i * 100;
        records.push(rec(busy, t, Queue, Op::Write, i * 8, 8));
        records.push(rec(busy, t + 1, Issue, Op::Write, i * 8, 8));
        records.push(rec(busy, t + 50, Complete, Op::Write, i * 8, 8));
    }
    records.push(rec(other, 2000, Queue, Op::Read, 0, 8));
    records.push(rec(other, 2001, Issue, Op::Read, 0, 8));
    records.push(rec(other, 2900, Complete, Op::Read, 0, 8));
    let items = || records.iter().map(|r| Ok(Item::Record(*r)));
    let (dev, t) = recorded_service_times(items(), Events::Queued, None)
        .expect("reads")
        .expect("a device");
    assert_eq!(dev, busy);
    assert_eq!(t.requests(), 10);
    assert!(t.group(Op::Read, 0, 8).is_none());
    let (dev, t) = recorded_service_times(items(), Events::Queued, Some(other))
        .expect("reads")
        .expect("a device");
    assert_eq!(dev, other);
    assert_eq!(t.requests(), 1);
    let g = t.group(Op::Read, 0, 8).expect("the read");
    assert_eq!(t.times(g), &[899]);
}

#[test]
fn a_trace_without_completions_has_no_service_times() {
    let d = dev_t(8, 0);
    let records = [
        rec(d, 0, TraceAction::Queue, Op::Write, 0, 8),
        rec(d, 1, TraceAction::Issue, Op::Write, 0, 8),
    ];
    let (_, t) = recorded_service_times(
        records.iter().map(|r| Ok(Item::Record(*r))),
        Events::Queued,
        None,
    )
    .expect("reads")
    .expect("a device");
    assert!(t.is_empty());
}
