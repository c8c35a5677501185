//! Plugin schedulers (elevator_core::Plugins): a scheduler built outside
//! elevator runs a job by name beside the built-ins, and one that fails
//! makes the run fail with what it said, after handing back what it held.

use std::collections::VecDeque;

use elevator_core::{
    MergeKind, Nanos, Plugin, PluginScheduler, Plugins, RequestId, Requests, SchedDispatch,
    Scheduler, TunableError, TunableSpec,
};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::{SimError, run};

/// First in, first out; after `fail_after` inserts it "fails" (as a Python
/// exception would) and says so, but still hands back what it holds.
#[derive(Clone, Debug, Default)]
struct Fifo {
    held: VecDeque<RequestId>,
    inserts: u32,
    fail_after: Option<u32>,
}

impl Scheduler for Fifo {
    fn name(&self) -> &'static str {
        "test-fifo"
    }
    fn resize(&mut self, _nr_requests: u32) {}
    fn insert(&mut self, _rqs: &Requests, rq: RequestId, _now: Nanos) {
        self.inserts += 1;
        self.held.push_back(rq);
    }
    fn bio_merged(&mut self, _rqs: &Requests, _rq: RequestId, _kind: MergeKind) {}
    fn requests_merged(&mut self, _: &Requests, _: RequestId, gone: RequestId, queued: bool) {
        if queued {
            self.held.retain(|r| *r != gone);
        }
    }
    fn dispatch(&mut self, _rqs: &Requests, _now: Nanos) -> SchedDispatch {
        self.held
            .pop_front()
            .map_or(SchedDispatch::Nothing, SchedDispatch::Request)
    }
    fn queued(&self) -> u32 {
        self.held.len() as u32
    }
    fn tunables(&self) -> &'static [TunableSpec] {
        &[]
    }
    fn get_tunable(&self, name: &str) -> Result<u64, TunableError> {
        Err(unknown(name))
    }
    fn set_tunable(&mut self, name: &str, _value: u64) -> Result<(), TunableError> {
        Err(unknown(name))
    }
}

fn unknown(name: &str) -> TunableError {
    TunableError::Unknown {
        name: name.to_string(),
        owner: "test-fifo".to_string(),
        known: String::new(),
    }
}

impl PluginScheduler for Fifo {
    fn clone_box(&self) -> Box<dyn PluginScheduler> {
        Box::new(self.clone())
    }
    fn failure(&self) -> Option<String> {
        self.fail_after
            .filter(|n| self.inserts > *n)
            .map(|n| format!("raised after {n} inserts"))
    }
}

fn plugins(fail_after: Option<u32>) -> Plugins {
    let mut p = Plugins::default();
    p.add(Plugin::new(
        "test-fifo",
        move || -> Box<dyn PluginScheduler> {
            Box::new(Fifo {
                fail_after,
                ..Fifo::default()
            })
        },
    ));
    p
}

const JOB: &str = "[r]\nrw=randread\nbs=4k\nsize=4m\niodepth=8\nioengine=libaio\n";

fn cfg(scheduler: &str, plugins: Plugins) -> RunConfig {
    RunConfig {
        scheduler: scheduler.to_string(),
        seed: 7,
        plugins,
        ..RunConfig::default()
    }
}

#[test]
fn a_plugin_runs_a_job_by_name_and_completes_every_io() {
    let jobs = JobFile::parse(JOB, "job").expect("job");
    let spec = ModelSpec::preset("hdd-7200").expect("preset");
    let ran = run(&jobs, &spec, &cfg("test-fifo", plugins(None)), &mut |_| {}).expect("run");
    assert_eq!(ran.ios, 1024, "4 MiB in 4 KiB reads");
    let again = run(&jobs, &spec, &cfg("test-fifo", plugins(None)), &mut |_| {}).expect("run");
    assert_eq!((ran.ios, ran.elapsed), (again.ios, again.elapsed));
    // Built-ins still run by name with plugins given.
    let none = run(&jobs, &spec, &cfg("none", plugins(None)), &mut |_| {}).expect("run");
    assert_eq!(none.ios, 1024);
}

#[test]
fn a_plugin_that_fails_fails_the_run_with_its_message() {
    let jobs = JobFile::parse(JOB, "job").expect("job");
    let spec = ModelSpec::preset("hdd-7200").expect("preset");
    let e = run(
        &jobs,
        &spec,
        &cfg("test-fifo", plugins(Some(10))),
        &mut |_| {},
    )
    .expect_err("the plugin failed");
    assert!(
        matches!(&e, SimError::Scheduler { name, message }
            if name == "test-fifo" && message == "raised after 10 inserts"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "scheduler test-fifo failed: raised after 10 inserts"
    );
}

#[test]
fn an_unknown_name_lists_the_plugins_too() {
    let jobs = JobFile::parse(JOB, "job").expect("job");
    let spec = ModelSpec::preset("hdd-7200").expect("preset");
    let e = run(&jobs, &spec, &cfg("test-fif", plugins(None)), &mut |_| {}).expect_err("unknown");
    // The queue's error, under "cannot build the queue".
    let e = std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string());
    assert!(
        e.contains("unknown scheduler 'test-fif' (did you mean test-fifo?)"),
        "{e}"
    );
    assert!(e.ends_with(", kyber, test-fifo"), "{e}");
}
