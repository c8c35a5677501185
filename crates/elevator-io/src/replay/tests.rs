//! Tests of the real-clock replay on a memory device.

use super::*;
use crate::mem::{MemDevice, MemOptions};
use elevator_core::TraceAction;
use elevator_trace::replay::Events;
use elevator_trace::tracefs::TracefsReader;

const TRACE: &str = "\
 jbd2/sda-8-100 [000] ..... 1.000000: block_bio_queue: 8,0 WSM 1000 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000001: block_getrq: 8,0 WSM 1000 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000002: block_plug: [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000003: block_bio_queue: 8,0 WSM 1008 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000004: block_bio_queue: 8,0 WSM 1016 + 8 [jbd2/sda-8]
 jbd2/sda-8-100 [000] ..... 1.000005: block_unplug: [jbd2/sda-8] 1
 jbd2/sda-8-100 [000] ..... 1.000100: block_bio_queue: 8,0 FWFSM 1024 + 8 [jbd2/sda-8]
 postgres-7 [001] ..... 1.000200: block_bio_queue: 8,0 FWS 0 + 0 [postgres]
 postgres-7 [001] ..... 1.000300: block_bio_queue: 8,0 R 4096 + 64 [postgres]
";

fn run(timing: Timing) -> ReplayResult {
    let plan = Planner::new(
        TracefsReader::new(TRACE.as_bytes(), "t", false),
        Events::Queued,
        None,
    );
    let cfg = RealReplayConfig {
        engine: EngineConfig::default(),
        timing,
        flush: FlushModel::default(),
        skip_bad: false,
        source_name: "t".into(),
    };
    let dev = MemDevice::new(64 << 20, MemOptions::default()).expect("memory");
    replay(plan, dev, &cfg, None, &mut |_, _| {}).expect("replays")
}

#[test]
fn replays_on_memory() {
    for timing in [Timing::Asap, Timing::Recorded(100.0), Timing::Depth(2)] {
        let r = run(timing);
        assert_eq!(r.bios, 6, "{timing:?}");
        let a = &r.analysis;
        assert_eq!(a.flush_issues, 3, "{timing:?}");
        assert_eq!(
            a.count(TraceAction::Issue),
            a.count(TraceAction::Complete),
            "{timing:?}"
        );
    }
    // In order with every bio at once, the jbd2 batch merges on its plug.
    assert_eq!(run(Timing::Asap).analysis.count(TraceAction::BackMerge), 2);
}
