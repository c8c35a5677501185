//! Tests of the btt-style analysis on small hand-made streams.

use super::*;
use crate::record::{dev_t, event};
use elevator_core::{BioFlags, TraceEvent};

fn rec(time: u64, action: TraceAction, op: Op, sector: u64, sectors: u32) -> Record {
    Record::new(
        event(time, action, op, BioFlags::NONE, sector, sectors * 512, 7),
        0,
        dev_t(8, 0),
    )
}

/// An analyzer that has recorded `records`, in order.
fn analyzed(records: impl IntoIterator<Item = Record>) -> Analyzer {
    let mut a = Analyzer::new();
    for r in records {
        a.record(&r);
    }
    a
}

#[test]
fn a_merged_pair_and_a_flush() {
    use TraceAction::*;
    let mut a = analyzed([
        rec(0, Queue, Op::Write, 100, 8),
        rec(1, GetRq, Op::Write, 100, 8),
        rec(2, Queue, Op::Write, 108, 8),
        rec(3, BackMerge, Op::Write, 108, 8),
        rec(5, Insert, Op::Write, 100, 16),
        rec(9, Issue, Op::Write, 100, 16),
        rec(20, Complete, Op::Write, 100, 16),
        rec(21, Queue, Op::Flush, 0, 0),
        rec(22, GetRq, Op::Flush, 0, 0),
        rec(23, Issue, Op::Flush, 0, 0),
        rec(30, Complete, Op::Flush, 0, 0),
    ]);
    a.record(&Record::new(
        TraceEvent::plug(Unplug, 31, elevator_core::IoContext(7), 2),
        0,
        0,
    ));
    let x = a.analysis();
    assert_eq!(x.count(Queue), 3);
    assert_eq!(x.count(BackMerge), 1);
    assert_eq!(x.count(Issue), 2);
    assert_eq!(x.flush_issues, 1);
    assert_eq!(x.issue_sizes, vec![((Op::Write, 8192), 1)]);
    assert_eq!(x.unplug_depths, vec![(2, 1)]);
    assert_eq!(x.q2g.count, 1);
    assert_eq!(x.g2i.count, 1);
    assert_eq!(x.g2i.max(), 4);
    assert_eq!(x.i2d.max(), 4);
    assert_eq!(x.q2m.max(), 1);
    assert_eq!(x.q2d.count, 2);
    assert_eq!((x.q2d.min(), x.q2d.max()), (7, 9));
    assert_eq!(x.q2c.count, 3);
    assert_eq!(x.q2c.max(), 20);
    assert_eq!(x.d2c.count, 2);
    assert_eq!((x.d2c.min(), x.d2c.max()), (7, 11));
    assert_eq!(x.q2c_by_op[1].count(), 2);
    assert_eq!(a.in_flight(), 0);
}

#[test]
fn split_pieces_complete_separately() {
    use TraceAction::*;
    let mut x = rec(1, Split, Op::Write, 0, 16);
    x.event.extra = 8;
    let a = analyzed([
        rec(0, Queue, Op::Write, 0, 16),
        x,
        rec(2, GetRq, Op::Write, 0, 8),
        rec(3, GetRq, Op::Write, 8, 8),
        rec(4, Issue, Op::Write, 0, 8),
        rec(5, Issue, Op::Write, 8, 8),
        rec(6, Complete, Op::Write, 0, 8),
        rec(8, Complete, Op::Write, 8, 8),
    ]);
    let x = a.analysis();
    assert_eq!(x.q2g.count, 2);
    assert_eq!(x.q2c.count, 2);
    assert_eq!(x.q2c.max(), 8);
    assert_eq!(a.in_flight(), 0);
}

#[test]
fn memory_is_bounded_without_completions() {
    let mut a = Analyzer::new();
    for i in 0..(MAX_TRACKED as u64 * 3) {
        a.record(&rec(i, TraceAction::Queue, Op::Write, i * 8, 8));
    }
    assert!(a.in_flight() <= MAX_TRACKED);
    assert!(a.analysis().forgotten >= MAX_TRACKED as u64);
}

/// Sizes and unplug depths are tallied for at most MAX_DISTINCT different
/// values: a trace of a million different ones costs what 4096 do.
#[test]
fn distinct_sizes_and_depths_are_bounded() {
    use TraceAction::*;
    let mut a = Analyzer::new();
    let n = 4 * MAX_DISTINCT as u64;
    for i in 0..n {
        a.record(&rec(i, Issue, Op::Write, i * 64, (i % 60_000) as u32 + 1));
        a.record(&rec(
            i,
            Complete,
            Op::Write,
            i * 64,
            (i % 60_000) as u32 + 1,
        ));
        let mut u = TraceEvent::plug(Unplug, i, elevator_core::IoContext(7), i);
        u.extra = i;
        a.record(&Record::new(u, 0, dev_t(8, 0)));
    }
    let x = a.analysis();
    assert_eq!(x.issue_sizes.len(), MAX_DISTINCT);
    assert_eq!(x.unplug_depths.len(), MAX_DISTINCT);
    assert_eq!(x.untallied, 2 * (n - MAX_DISTINCT as u64));
    assert!(a.sizes.len() <= MAX_DISTINCT && a.depths.len() <= MAX_DISTINCT);
}

#[test]
fn arrival_orders_past_2_32_are_renumbered_in_order() {
    use TraceAction::*;
    // Bios queued at one sector, some still held when the numbering wraps,
    // must be matched first in, first out, as with no wrap at all.
    let mut stream = Vec::new();
    for round in 0..4u64 {
        let t = round * 100;
        for i in 0..3 {
            stream.push(rec(t + i, Queue, Op::Write, 64, 8));
        }
        stream.push(rec(t + 10, GetRq, Op::Write, 64, 8));
        stream.push(rec(t + 11, BackMerge, Op::Write, 64, 8));
        stream.push(rec(t + 12, GetRq, Op::Write, 64, 8));
        stream.push(rec(t + 20, Issue, Op::Write, 64, 8));
        stream.push(rec(t + 30, Complete, Op::Write, 64, 8));
    }
    let plain = analyzed(stream.iter().copied());
    let mut wrapped = Analyzer::new();
    wrapped.near_the_last_arrival_order();
    for r in &stream {
        wrapped.record(r);
    }
    assert!(wrapped.seq < 100, "renumbered: {}", wrapped.seq);
    assert_eq!(
        format!("{:?}", wrapped.analysis()),
        format!("{:?}", plain.analysis())
    );
    assert_eq!(wrapped.in_flight(), plain.in_flight());
}
