//! Traces of real-time runs: every event the queue counts is written, by
//! the thread that caused it (one CPU per thread), each job clone named
//! before its first event, times never going back within a CPU.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use elevator_core::{QueueStats, TraceAction};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_io::mq::{LockMode, ThreadConfig, run_threads_traced};
use elevator_io::{MemDevice, MemOptions};
use elevator_trace::tap::SharedSink;
use elevator_trace::{Item, MemorySink, Record, TraceSink};

const JOB: &str = "
[w]
rw=write
bs=4k
size=1m
numjobs=2
ioengine=libaio
iodepth=8
[r]
rw=randread
bs=8k
size=1m
ioengine=libaio
iodepth=4
";

/// A memory sink the test keeps a hold on.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<MemorySink>>);

impl TraceSink for Kept {
    fn record(&mut self, record: &Record) -> std::io::Result<()> {
        self.0.lock().expect("sink").record(record)
    }

    fn process(&mut self, pid: u32, name: &str, time: u64) -> std::io::Result<()> {
        self.0.lock().expect("sink").process(pid, name, time)
    }

    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Events by action; names come before events (in the sink's order), CPUs
/// are below `cpus`, and times do not go back within a CPU.
fn check_items(items: &[Item], cpus: u32) -> BTreeMap<TraceAction, u64> {
    let mut counts = BTreeMap::new();
    let mut named = Vec::new();
    let mut last_time: BTreeMap<u32, u64> = BTreeMap::new();
    for item in items {
        match item {
            Item::Process { pid, .. } => named.push(*pid),
            Item::Record(r) => {
                assert!(named.contains(&r.pid()), "pid {} unnamed", r.pid());
                assert!(r.cpu < cpus, "{r:?}");
                let last = last_time.entry(r.cpu).or_insert(0);
                assert!(r.event.time >= *last, "time went back on CPU {}", r.cpu);
                *last = r.event.time;
                *counts.entry(r.event.action).or_insert(0) += 1;
            }
        }
    }
    counts
}

fn check_counts(counts: &BTreeMap<TraceAction, u64>, q: &QueueStats) {
    let n = |a| counts.get(&a).copied().unwrap_or(0);
    assert_eq!(n(TraceAction::Queue), q.bios, "Q");
    assert_eq!(n(TraceAction::GetRq), q.requests, "G");
    assert_eq!(n(TraceAction::Issue), q.dispatches, "D");
    assert_eq!(n(TraceAction::Complete), q.completions, "C");
    assert_eq!(n(TraceAction::BackMerge), q.back_merges, "M");
    assert_eq!(n(TraceAction::FrontMerge), q.front_merges, "F");
    assert_eq!(n(TraceAction::RqMerge), q.request_merges, "request merges");
}

fn memory() -> MemDevice {
    MemDevice::new(16 << 20, MemOptions::default()).expect("memory device")
}

#[test]
fn a_single_engine_traces_to_one_cpu() {
    let jobs = JobFile::parse(JOB, "trace.fio").expect("job");
    let kept = Kept::default();
    let sink: SharedSink = Arc::new(Mutex::new(Box::new(kept.clone())));
    let (result, summary) = elevator_io::jobs::run_traced(
        &jobs,
        memory(),
        &RunConfig::default(),
        &mut |_| {},
        Some(sink),
    )
    .expect("run");
    let summary = summary.expect("a summary");
    assert_eq!((summary.files(), summary.dropped), (1, 0));
    let items = kept.0.lock().expect("sink").items.clone();
    let counts = check_items(&items, 1);
    check_counts(&counts, &result.queue);
    assert_eq!(summary.events, counts.values().sum::<u64>());
}

#[test]
fn threads_trace_what_each_caused_under_every_lock_mode() {
    let jobs = JobFile::parse(JOB, "trace.fio").expect("job");
    for lock in LockMode::ALL {
        for scheduler in ["none", "mq-deadline"] {
            let kept = Kept::default();
            let sink: SharedSink = Arc::new(Mutex::new(Box::new(kept.clone())));
            let cfg = ThreadConfig {
                run: RunConfig {
                    scheduler: scheduler.into(),
                    ..RunConfig::default()
                },
                lock,
                lock_stats: false,
            };
            let run = run_threads_traced(
                &jobs,
                vec![memory()],
                MemDevice::share,
                &cfg,
                &mut |_| {},
                Some(sink),
            )
            .expect("run");
            let summary = run.trace.expect("a summary");
            assert_eq!(summary.dropped, 0);
            let items = kept.0.lock().expect("sink").items.clone();
            let counts = check_items(&items, 3);
            check_counts(&counts, &run.result.queue);
            assert_eq!(
                summary.events,
                counts.values().sum::<u64>(),
                "{lock:?} {scheduler}"
            );
        }
    }
}
