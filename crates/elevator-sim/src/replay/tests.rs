//! Tests of the simulated replay on small traces.

use super::*;
use elevator_core::TraceAction;
use elevator_trace::analyze::Analysis;
use elevator_trace::replay::Events;
use elevator_trace::tracefs::TracefsReader;

const TRACE: &str = "\
 jbd2/sda-8-100 [000] ..... 1.000000: block_bio_queue: 8,0 WSM 1000 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000001: block_getrq: 8,0 WSM 1000 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000002: block_plug: [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000003: block_bio_queue: 8,0 WSM 1008 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000003: block_bio_backmerge: 8,0 WSM 1008 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000004: block_bio_queue: 8,0 WSM 1016 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000004: block_bio_backmerge: 8,0 WSM 1016 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000005: block_unplug: [jbd2/sda-8] 1
 jbd2/sda-8-100 [000] ..... 1.000100: block_bio_queue: 8,0 FWFSM 1024 + 8 [jbd2/sda-8]
 postgres-7 [001] ..... 1.000200: block_bio_queue: 8,0 FWS 0 + 0 [postgres]
 postgres-7 [001] ..... 1.000300: block_bio_queue: 8,0 W 4096 + 5120 [postgres]
";

fn run(timing: Timing) -> Analysis {
    let reader = TracefsReader::new(TRACE.as_bytes(), "t", false);
    let plan = Planner::new(reader, Events::Queued, None);
    let cfg = ReplayConfig {
        plugins: Default::default(),
        scheduler: "mq-deadline".into(),
        tunables: vec![("max_sectors_kb".into(), "1280".into())],
        timing,
        flush: FlushModel::default(),
        skip_bad: false,
        source_name: "t".into(),
    };
    let dev = ModelSpec::parse("null,latency=100").expect("device");
    let r = replay(plan, &dev, &cfg, None, &mut |_| {}).expect("replays");
    assert_eq!(r.bios, 6);
    r.analysis
}

#[test]
fn merges_flushes_and_splits_as_the_kernel() {
    for timing in [
        Timing::Recorded(1.0),
        Timing::Recorded(10.0),
        Timing::Asap,
        Timing::Depth(64),
    ] {
        let a = run(timing);
        assert_eq!(a.count(TraceAction::Queue), 6, "{timing:?}");
        assert_eq!(a.count(TraceAction::BackMerge), 2, "{timing:?}");
        // 5120 sectors at 2560 a request: one split.
        assert_eq!(a.count(TraceAction::Split), 1, "{timing:?}");
        // Flushes: FWFSM = flush, write, flush; FWS = one flush.
        assert_eq!(a.flush_issues, 3, "{timing:?}");
        assert_eq!(a.count(TraceAction::Issue), 7, "{timing:?}");
        assert_eq!(a.count(TraceAction::Complete), 7, "{timing:?}");
    }
}

#[test]
fn a_closed_loop_of_one_never_merges() {
    let a = run(Timing::Depth(1));
    assert_eq!(a.count(TraceAction::BackMerge), 0);
    assert_eq!(a.count(TraceAction::Issue), 9);
}

#[test]
fn beyond_the_device_names_the_record() {
    let text = " a-1 [000] ..... 1.0: block_bio_queue: 8,0 W 99999999999 + 8 [a]\n";
    let plan = Planner::new(
        TracefsReader::new(text.as_bytes(), "big", false),
        Events::Queued,
        None,
    );
    let cfg = ReplayConfig {
        plugins: Default::default(),
        scheduler: "none".into(),
        tunables: vec![],
        timing: Timing::Asap,
        flush: FlushModel::default(),
        skip_bad: false,
        source_name: "big".into(),
    };
    let dev = ModelSpec::parse("null,capacity=1g").expect("device");
    let e = replay(plan, &dev, &cfg, None, &mut |_| {}).expect_err("too far");
    assert!(
        e.to_string().contains("big: record 1: sectors 99999999999"),
        "{e}"
    );
    let plan = Planner::new(
        TracefsReader::new(text.as_bytes(), "big", false),
        Events::Queued,
        None,
    );
    let cfg = ReplayConfig {
        skip_bad: true,
        ..cfg
    };
    let r = replay(plan, &dev, &cfg, None, &mut |_| {}).expect("skips");
    assert_eq!((r.bios, r.skipped), (0, 1));
}

#[test]
fn the_sink_gets_every_queue_event_and_the_names() {
    let reader = TracefsReader::new(TRACE.as_bytes(), "t", false);
    let plan = Planner::new(reader, Events::Queued, None);
    let cfg = ReplayConfig {
        plugins: Default::default(),
        scheduler: "mq-deadline".into(),
        tunables: vec![],
        timing: Timing::Asap,
        flush: FlushModel::default(),
        skip_bad: false,
        source_name: "t".into(),
    };
    let mut sink = elevator_trace::MemorySink::default();
    let dev = ModelSpec::parse("null").expect("device");
    let r = replay(plan, &dev, &cfg, Some(&mut sink), &mut |_| {}).expect("replays");
    let records = sink
        .items
        .iter()
        .filter(|i| matches!(i, elevator_trace::Item::Record(r) if r.dev == elevator_trace::dev_t(8, 0)))
        .count();
    assert_eq!(records as u64, r.events);
    let names = sink
        .items
        .iter()
        .filter(|i| matches!(i, elevator_trace::Item::Process { .. }))
        .count();
    assert_eq!(names, 2);
    assert_eq!(r.plugs, 1);
}
