//! Tests of replay planning: plugs found from P/U, one plug at a time,
//! device choice, D mode.

use super::*;
use crate::record::{dev_t, event};
use elevator_core::{IoContext, TraceEvent};

fn bio(t: u64, a: TraceAction, pid: u32, sector: u64, dev: DevT) -> Item {
    Item::Record(Record::new(
        event(t, a, Op::Write, BioFlags::SYNC, sector, 4096, pid),
        0,
        dev,
    ))
}

fn plug(t: u64, a: TraceAction, pid: u32) -> Item {
    Item::Record(Record::new(TraceEvent::plug(a, t, IoContext(pid), 1), 0, 0))
}

fn plan(items: Vec<Item>, events: Events) -> Vec<String> {
    Planner::new(items.into_iter().map(Ok), events, None)
        .window(16)
        .map(|s| match s.expect("plans") {
            Step::Bio(b) => format!("{}:{}", b.pid, b.sector),
            Step::Plug { pid, .. } => format!("P{pid}"),
            Step::Unplug { pid, .. } => format!("U{pid}"),
            Step::Process { pid, .. } => format!("N{pid}"),
        })
        .collect()
}

const D: DevT = 7 << 20;

#[test]
fn a_batch_under_one_plug() {
    use TraceAction::*;
    let items = vec![
        bio(0, Queue, 1, 0, D),
        bio(1, GetRq, 1, 0, D),
        plug(2, Plug, 1),
        bio(3, Queue, 1, 8, D),
        bio(4, BackMerge, 1, 8, D),
        bio(5, Queue, 1, 16, D),
        plug(6, Unplug, 1),
        bio(7, Queue, 1, 100, D),
        plug(8, Plug, 9),
        plug(9, Unplug, 9),
    ];
    assert_eq!(
        plan(items, Events::Queued),
        ["P1", "1:0", "1:8", "1:16", "U1", "1:100"]
    );
}

#[test]
fn other_tasks_wait_for_an_open_plug() {
    use TraceAction::*;
    let items = vec![
        bio(0, Queue, 1, 0, D),
        plug(1, Plug, 1),
        bio(2, Queue, 2, 500, D),
        bio(3, Queue, 1, 8, D),
        plug(4, Unplug, 1),
        bio(5, Queue, 3, 900, D),
    ];
    assert_eq!(
        plan(items, Events::Queued),
        ["P1", "1:0", "1:8", "U1", "2:500", "3:900"]
    );
}

#[test]
fn issued_mode_and_device_choice() {
    use TraceAction::*;
    let other = dev_t(8, 0);
    let items = vec![
        bio(0, Queue, 1, 0, D),
        bio(1, Issue, 1, 0, other),
        bio(2, Issue, 1, 0, D),
        bio(3, Issue, 1, 8, D),
        plug(4, Plug, 1),
    ];
    assert_eq!(plan(items, Events::Issued), ["1:0", "1:8"]);
}

#[test]
fn unclosed_plugs_close_at_the_end() {
    use TraceAction::*;
    let items = vec![
        bio(0, Queue, 1, 0, D),
        plug(1, Plug, 1),
        bio(2, Queue, 1, 8, D),
    ];
    assert_eq!(plan(items, Events::Queued), ["P1", "1:0", "1:8", "U1"]);
}

#[test]
fn flush_machinery() {
    let b = PlannedBio {
        time: 0,
        op: Op::Write,
        flags: BioFlags::PREFLUSH | BioFlags::FUA | BioFlags::SYNC | BioFlags::META,
        sector: 8,
        bytes: 4096,
        pid: 1,
        record: 1,
    };
    let ops =
        |m: FlushModel| -> Vec<Op> { m.parts(&b).parts.iter().flatten().map(|p| p.0).collect() };
    assert_eq!(
        ops(FlushModel::default()),
        [Op::Flush, Op::Write, Op::Flush]
    );
    let fua = FlushModel {
        write_cache: true,
        fua: true,
    };
    assert_eq!(ops(fua), [Op::Flush, Op::Write]);
    assert!(fua.parts(&b).parts[1].is_some_and(|p| p.1.contains(BioFlags::FUA)));
    let none = FlushModel {
        write_cache: false,
        fua: false,
    };
    assert_eq!(ops(none), [Op::Write]);
    let flush = PlannedBio {
        op: Op::Flush,
        bytes: 0,
        ..b
    };
    assert!(none.parts(&flush).parts[0].is_none());
    assert!(FlushModel::default().parts(&flush).is_single());
}

/// Many tasks that each open a plug and never unplug (a hostile trace, or
/// one cut short): the plug closed early for lack of room lets what waited
/// behind it go at once, without opening the waiting tasks' plugs one by
/// one (which re-examined every waiting step for each of them: a trace of a
/// million such tasks took 40 s).
#[test]
fn plugs_closed_for_room_release_what_waited_at_once() {
    use TraceAction::*;
    let tasks = 3 * MAX_DEFERRED as u32;
    let mut items = Vec::new();
    for pid in 1..=tasks {
        let t = u64::from(pid) * 10;
        items.push(bio(t, Queue, pid, u64::from(pid) * 8, D));
        items.push(plug(t + 1, Plug, pid));
    }
    let mut plan = Planner::new(items.into_iter().map(Ok), Events::Queued, Some(D));
    let bios = plan
        .by_ref()
        .filter(|s| matches!(s, Ok(Step::Bio(_))))
        .count();
    assert_eq!(bios, tasks as usize);
    assert!(plan.plugs() <= 8, "{} plugs opened", plan.plugs());
}

/// A task is followed for its plugs only while it may still open one:
/// millions of processes cost no more than a few.
#[test]
fn tasks_followed_are_bounded() {
    use TraceAction::*;
    let tasks = 4 * MAX_TASKS as u32;
    let items = (1..=tasks).flat_map(|pid| {
        let t = u64::from(pid) * 10;
        [
            bio(t, Queue, pid, 8, D),
            plug(t + 1, Plug, pid),
            plug(t + 2, Unplug, pid + 1),
        ]
    });
    let mut plan = Planner::new(items.map(Ok), Events::Queued, Some(D));
    let mut most = 0;
    let mut bios = 0;
    while let Some(step) = plan.next() {
        bios += usize::from(matches!(step, Ok(Step::Bio(_))));
        most = most.max(plan.tasks.len());
    }
    assert_eq!(bios, tasks as usize);
    assert!(most <= MAX_TASKS, "{most} tasks followed");
}

/// While the device is being chosen, what is held is bounded: a trace that
/// starts with millions of plugs is planned as it streams.
#[test]
fn what_waits_for_the_device_choice_is_bounded() {
    use TraceAction::*;
    let plugs = 8 * MAX_SAMPLE_ITEMS as u64;
    let items = (0..plugs)
        .map(|t| plug(t, Plug, 1))
        .chain([bio(plugs, Queue, 1, 8, D)]);
    let mut plan = Planner::new(items.map(Ok), Events::Queued, None);
    let info = allocation_counter::measure(|| {
        let steps: Vec<_> = plan.by_ref().map(|s| s.expect("plans")).collect();
        assert!(matches!(steps[..], [Step::Bio(_)]), "{steps:?}");
    });
    assert_eq!(plan.device(), Some(D));
    assert!(info.bytes_max < 16 << 20, "peak {} bytes", info.bytes_max);
}
