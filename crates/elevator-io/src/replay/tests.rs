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
    replay_text(TRACE, timing, 64 << 20).expect("replays")
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

/// A trace of `n` reads of `len(i)` bytes each, one after the other.
fn reads(n: u64, len: impl Fn(u64) -> u64) -> String {
    let mut text = String::new();
    let mut sector = 0;
    for i in 0..n {
        let sectors = len(i) / 512;
        text.push_str(&format!(
            " a-1 [000] ..... 1.{i:06}: block_bio_queue: 8,0 R {sector} + {sectors} [a]\n"
        ));
        sector += sectors;
    }
    text
}

fn replay_text(
    text: &str,
    timing: Timing,
    device_bytes: u64,
) -> Result<ReplayResult, RealReplayError> {
    replay_with(text, timing, device_bytes, &[], false)
}

fn replay_with(
    text: &str,
    timing: Timing,
    device_bytes: u64,
    tunables: &[(&str, &str)],
    skip_bad: bool,
) -> Result<ReplayResult, RealReplayError> {
    let plan = Planner::new(
        TracefsReader::new(text.as_bytes(), "t", false),
        Events::Queued,
        None,
    );
    let cfg = RealReplayConfig {
        engine: EngineConfig {
            tunables: tunables
                .iter()
                .map(|&(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..EngineConfig::default()
        },
        timing,
        flush: FlushModel::default(),
        skip_bad,
        source_name: "t".into(),
    };
    let dev = MemDevice::new(device_bytes, MemOptions::default()).expect("memory");
    replay(plan, dev, &cfg, None, &mut |_, _| {})
}

/// As fast as it goes, more bios than the engine takes at once wait for
/// room instead of failing ("4096 requests are in flight already").
#[test]
fn asap_waits_for_the_engine_to_have_room() {
    let n = 3 * u64::from(EngineConfig::default().max_requests);
    let r = replay_text(&reads(n, |_| 4096), Timing::Asap, 1 << 30).expect("replays");
    assert_eq!(r.bios, n);
}

/// Buffers kept for reuse are bounded in bytes whatever sizes a trace
/// asks for; a buffer is reused for its size.
#[test]
fn the_buffer_pool_is_bounded() {
    let mut pool = BufferPool::default();
    for k in 1..=2048usize {
        let b = AlignedBuf::new(k * 512, 4096).expect("buffer");
        pool.give(b);
        assert!(
            pool.bytes <= MAX_POOLED_BYTES,
            "{} bytes pooled",
            pool.bytes
        );
    }
    assert!(pool.by_len.len() <= MAX_POOLED_SIZES);
    let b = pool.take(512).expect("kept");
    assert_eq!(b.len(), 512);
    assert!(pool.take(512).is_none());
    // Its list stays, empty, for the next give of that size.
    assert!(pool.by_len.get(&512).is_some_and(Vec::is_empty));
    // Replays of many sizes read through the bounded pool.
    let r =
        replay_text(&reads(600, |i| (i % 300 + 1) * 512), Timing::Asap, 1 << 30).expect("replays");
    assert_eq!(r.bios, 600);
}

/// A recorded bio reaches the queue whole, and the queue splits it as
/// the kernel does (X), whatever the timing: 2 MiB under
/// `max_sectors_kb=1280` is one split and two requests.
#[test]
fn a_recorded_bio_is_split_by_the_queue() {
    let text = " a-1 [000] ..... 1.000000: block_bio_queue: 8,0 W 0 + 4096 [a]\n";
    for timing in [Timing::Asap, Timing::Recorded(1.0), Timing::Depth(1)] {
        let r = replay_with(text, timing, 64 << 20, &[("max_sectors_kb", "1280")], false)
            .expect("replays");
        let a = &r.analysis;
        assert_eq!(a.count(TraceAction::Queue), 1, "{timing:?}");
        assert_eq!(a.count(TraceAction::Split), 1, "{timing:?}");
        assert_eq!(a.count(TraceAction::Issue), 2, "{timing:?}");
        assert_eq!(a.count(TraceAction::Complete), 2, "{timing:?}");
    }
}

/// A bio that would need more requests than the queue has tags is
/// refused naming its record, as in simulation, or left out as bad.
#[test]
fn a_bio_the_queue_cannot_take_whole_is_named() {
    let text = format!(
        "{}{}",
        " a-1 [000] ..... 1.000000: block_bio_queue: 8,0 W 0 + 8 [a]\n",
        " a-1 [000] ..... 1.000001: block_bio_queue: 8,0 W 64 + 128 [a]\n"
    );
    let tunables = [("max_sectors_kb", "4"), ("nr_requests", "4")];
    let err = replay_with(&text, Timing::Asap, 1 << 20, &tunables, false)
        .expect_err("16 pieces, 4 tags")
        .to_string();
    assert!(
        err.contains("t: record 2: the queue refused the bio"),
        "{err}"
    );
    assert!(err.contains("nr_requests=4"), "{err}");
    let r = replay_with(&text, Timing::Asap, 1 << 20, &tunables, true).expect("skips");
    assert_eq!((r.bios, r.skipped), (2, 1));
    assert_eq!(r.analysis.count(TraceAction::Queue), 1);
}
