//! The simulator's trace: every event the queue counts is written, a job
//! clone's events (its completions too) to its own CPU, each clone named
//! before its first event, times never going back within a CPU.

use std::collections::BTreeMap;

use elevator_core::{QueueStats, TraceAction};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::{TraceOut, run_traced};
use elevator_trace::tap::TRACE_DEV;
use elevator_trace::{Item, MemorySink};

const JOB: &str = "
[w]
rw=write
bs=4k
size=2m
numjobs=2
ioengine=libaio
iodepth=8
[r]
rw=read
bs=2m
size=8m
ioengine=libaio
iodepth=2
";

/// Events in `items` by action, and checks that hold for any trace: names
/// before events, a CPU per submitter, times in order per CPU.
pub fn check_items(items: &[Item], cpu_of: impl Fn(u32) -> u32) -> BTreeMap<TraceAction, u64> {
    let mut counts = BTreeMap::new();
    let mut named = Vec::new();
    let mut last_time: BTreeMap<u32, u64> = BTreeMap::new();
    for item in items {
        match item {
            Item::Process { pid, name, .. } => {
                assert!(!name.is_empty() && name.len() <= 15, "{name:?}");
                named.push(*pid);
            }
            Item::Record(r) => {
                assert!(named.contains(&r.pid()), "pid {} unnamed", r.pid());
                assert_eq!(r.cpu, cpu_of(r.pid()), "{r:?}");
                let last = last_time.entry(r.cpu).or_insert(0);
                assert!(r.event.time >= *last, "time went back on CPU {}", r.cpu);
                *last = r.event.time;
                *counts.entry(r.event.action).or_insert(0) += 1;
            }
        }
    }
    counts
}

/// The trace's counts are the queue's.
pub fn check_counts(counts: &BTreeMap<TraceAction, u64>, q: &QueueStats) {
    let n = |a| counts.get(&a).copied().unwrap_or(0);
    assert_eq!(n(TraceAction::Queue), q.bios, "Q");
    assert_eq!(n(TraceAction::GetRq), q.requests, "G");
    assert_eq!(n(TraceAction::Issue), q.dispatches, "D");
    assert_eq!(n(TraceAction::Complete), q.completions, "C");
    assert_eq!(n(TraceAction::BackMerge), q.back_merges, "M");
    assert_eq!(n(TraceAction::FrontMerge), q.front_merges, "F");
    assert_eq!(n(TraceAction::RqMerge), q.request_merges, "request merges");
    assert_eq!(n(TraceAction::Requeue), q.requeues, "R");
}

#[test]
fn the_simulators_trace_holds_what_its_queue_counted() {
    let jobs = JobFile::parse(JOB, "trace.fio").expect("job");
    let spec = ModelSpec::preset("ssd-sata").expect("preset");
    let mut sink = MemorySink::default();
    let mut out = TraceOut::new(&mut sink);
    let result = run_traced(
        &jobs,
        &spec,
        &RunConfig::default(),
        &mut |_| {},
        Some(&mut out),
    )
    .expect("run");
    let summary = out.summary.expect("a summary");
    assert_eq!(summary.dropped, 0);
    assert_eq!(summary.files(), 3, "a file per job clone");
    let counts = check_items(&sink.items, |pid| pid - 1);
    check_counts(&counts, &result.queue);
    assert!(counts[&TraceAction::Split] > 0 && counts[&TraceAction::BackMerge] > 0);
    assert_eq!(summary.events, counts.values().sum::<u64>());
    assert!(sink.items.iter().all(|i| match i {
        Item::Record(r) => r.dev == TRACE_DEV,
        Item::Process { .. } => true,
    }));
    // The same run untraced gives the same figures.
    let plain =
        elevator_sim::engine::run(&jobs, &spec, &RunConfig::default(), &mut |_| {}).expect("run");
    assert_eq!(plain.ios, result.ios);
    assert_eq!(plain.elapsed, result.elapsed);
}
