//! The shipped kernel trace (PostgreSQL's `pgbench -i` on a loop device
//! under mq-deadline) replayed on real devices, memory and an O_DIRECT
//! file in `/var/tmp`: the recorded bios reach the queue as bios, so the
//! counts that do not depend on timing are the recording's (Q, X, the
//! flushes issued, the bytes) on both, and those that do (merges,
//! requests) are within the issue's bounds at the recorded times on
//! memory, as in simulation.

use std::path::{Path, PathBuf};

use elevator_core::TraceAction;
use elevator_io::replay::{RealReplayConfig, replay};
use elevator_io::{DataDevice, EngineConfig, FileDevice, FileOptions, MemDevice, MemOptions};
use elevator_sim::device::ModelSpec;
use elevator_sim::replay::ReplayConfig;
use elevator_trace::analyze::Analysis;
use elevator_trace::replay::{Events, FlushModel, Planner, ReplayResult, Timing};

use crate::common;

/// The shipped trace: in `$ELEVATOR_TRACES`, or the repository's
/// `tests/traces`.
fn trace() -> PathBuf {
    let dir = match std::env::var_os("ELEVATOR_TRACES") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/traces"),
    };
    dir.join("pgbench-init-mq-deadline.trace.xz")
}

/// Bytes the trace's bios reach (sector 4,519,056), rounded up.
const TRACE_BYTES: u64 = 2304 << 20;

/// The recording's queue: its scheduler and limits (the summary's).
const TUNABLES: [(&str, &str); 2] = [("max_sectors_kb", "1280"), ("nr_requests", "256")];

/// The kernel's counts, from the summary beside the trace.
const KERNEL: [(TraceAction, u64); 7] = [
    (TraceAction::Queue, 1408),
    (TraceAction::BackMerge, 307),
    (TraceAction::FrontMerge, 0),
    (TraceAction::RqMerge, 1),
    (TraceAction::Split, 573),
    (TraceAction::GetRq, 1674),
    (TraceAction::Issue, 1789),
];

fn plan() -> Planner<elevator_trace::TraceReader> {
    let path = trace();
    assert!(path.exists(), "{} is not here", path.display());
    let reader = elevator_trace::open(&path, None, false).expect("opens the trace");
    Planner::new(reader, Events::Queued, None).analyze_recorded()
}

fn on_real<D: DataDevice>(device: D, timing: Timing) -> ReplayResult {
    let cfg = RealReplayConfig {
        engine: EngineConfig {
            scheduler: "mq-deadline".into(),
            tunables: TUNABLES
                .iter()
                .map(|&(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..EngineConfig::default()
        },
        timing,
        flush: FlushModel::default(),
        skip_bad: false,
        source_name: "pgbench".into(),
    };
    replay(plan(), device, &cfg, None, &mut |_, _| {}).expect("replays")
}

fn simulated(timing: Timing) -> Analysis {
    let model = ModelSpec::parse("null,latency=200,queue_depth=128").expect("model");
    let cfg = ReplayConfig {
        plugins: Default::default(),
        scheduler: "mq-deadline".into(),
        tunables: TUNABLES
            .iter()
            .map(|&(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        timing,
        flush: FlushModel::default(),
        skip_bad: false,
        source_name: "pgbench".into(),
    };
    elevator_sim::replay::replay(plan(), &model, &cfg, None, &mut |_| {})
        .expect("simulates")
        .analysis
}

/// A memory device as large as the trace that moves no data (the counts
/// do not depend on it, and the test keeps no 800 MB of zeroes).
fn memory() -> MemDevice {
    let opts = MemOptions {
        copy: false,
        ..MemOptions::default()
    };
    MemDevice::new(TRACE_BYTES, opts).expect("memory device")
}

/// Within 10 %, or within 5 where the kernel counted fewer than 50.
fn close(kernel: u64, mine: u64) -> bool {
    let diff = kernel.abs_diff(mine);
    if kernel < 50 {
        diff <= 5
    } else {
        diff * 10 <= kernel
    }
}

/// What does not depend on timing is the recording's: every recorded
/// bio one Q (a flush sequence's parts shown as the bio), split as the
/// kernel split it, the flush machinery's 512 flushes, every byte.
fn assert_timing_free_counts(r: &ReplayResult, what: &str) {
    let a = &r.analysis;
    let recorded = r
        .recorded
        .as_ref()
        .and_then(|rec| rec.device.as_ref())
        .expect("the recording analysed");
    assert_eq!(r.bios, 1408, "{what}");
    for action in [TraceAction::Queue, TraceAction::Split] {
        let kernel = KERNEL.iter().find(|k| k.0 == action).map(|k| k.1);
        assert_eq!(Some(a.count(action)), kernel, "{what}: {action:?}");
        assert_eq!(
            a.count(action),
            recorded.count(action),
            "{what}: {action:?}"
        );
    }
    assert_eq!(a.flush_issues, 512, "{what}");
    assert_eq!(a.flush_issues, recorded.flush_issues, "{what}");
    assert_eq!(a.queued, recorded.queued, "{what}: bytes queued");
    let issued = |x: &Analysis| x.issued.iter().map(|o| o.bytes).sum::<u64>();
    assert_eq!(issued(a), issued(recorded), "{what}: bytes issued");
    assert_eq!(a.count(TraceAction::Issue), a.count(TraceAction::Complete));
}

fn assert_close_to_the_kernel(a: &Analysis, what: &str) {
    for (action, kernel) in KERNEL {
        let mine = a.count(action);
        assert!(
            close(kernel, mine),
            "{what}: {action:?} kernel {kernel}, elevator {mine}"
        );
    }
}

#[test]
fn recorded_bios_reach_the_queue_as_bios_on_memory() {
    for timing in [Timing::Asap, Timing::Depth(32)] {
        let r = on_real(memory(), timing);
        assert_timing_free_counts(&r, &format!("mem {timing:?}"));
        // The simulated replay of the same timing splits and queues alike.
        let sim = simulated(timing);
        for action in [TraceAction::Queue, TraceAction::Split] {
            assert_eq!(r.analysis.count(action), sim.count(action), "{action:?}");
        }
        assert_eq!(r.analysis.flush_issues, sim.flush_issues);
    }
}

#[test]
fn recorded_bios_reach_the_queue_as_bios_on_a_file() {
    let dir = Path::new("/var/tmp");
    let Ok(file) = common::scratch_file(dir, "pgbench", TRACE_BYTES) else {
        common::skip(
            "recorded_bios_on_a_file",
            "cannot create a file in /var/tmp",
        );
        return;
    };
    let device = FileDevice::open(&file, &FileOptions::default()).expect("O_DIRECT file");
    let r = on_real(device, Timing::Asap);
    assert_timing_free_counts(&r, "file asap");
}

/// At the recorded times (5.2 s of real time), on memory (which serves at
/// once, whatever else the host is doing), merges and requests are within
/// the issue's bounds of the kernel's, as in simulation. On a file they
/// depend on how fast the host's disk serves at the time (a request that
/// waits in the scheduler takes more merges): docs/traces.md has figures.
#[test]
fn at_the_recorded_times_merges_are_the_kernels() {
    elevator_testkit::slow!();
    let r = on_real(memory(), Timing::Recorded(1.0));
    assert_timing_free_counts(&r, "mem recorded");
    assert_close_to_the_kernel(&r.analysis, "mem recorded");
}
