//! Sweeps with a scheduler written outside elevator (a plugin, as the
//! Python package makes them): it runs by name beside the built-ins, the
//! built-ins' tunables are left out of its configurations, and one that
//! fails fails the sweep with what it said.

use std::collections::VecDeque;

use elevator_core::{
    MergeKind, Nanos, Plugin, PluginScheduler, Plugins, RequestId, Requests, SchedDispatch,
    Scheduler, TunableError, TunableSpec,
};
use elevator_run::sweep::{Cell, Fixed, Spec, Workload, run_local};

/// First in, first out; with `fail`, it says it failed once it has run.
#[derive(Clone, Debug, Default)]
struct Fifo {
    held: VecDeque<RequestId>,
    fail: bool,
}

impl Scheduler for Fifo {
    fn name(&self) -> &'static str {
        "py-fifo"
    }
    fn resize(&mut self, _nr_requests: u32) {}
    fn insert(&mut self, _rqs: &Requests, rq: RequestId, _now: Nanos) {
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
        owner: "py-fifo".to_string(),
        known: String::new(),
    }
}

impl PluginScheduler for Fifo {
    fn clone_box(&self) -> Box<dyn PluginScheduler> {
        Box::new(self.clone())
    }
    fn failure(&self) -> Option<String> {
        self.fail.then(|| "Traceback: ValueError: no".to_string())
    }
}

fn plugins(fail: bool) -> Plugins {
    let mut p = Plugins::default();
    p.add(Plugin::new(
        "py-fifo",
        move || -> Box<dyn PluginScheduler> {
            Box::new(Fifo {
                fail,
                ..Fifo::default()
            })
        },
    ));
    p
}

fn spec(plugins: &Plugins) -> Result<Spec, String> {
    let workload = Workload::Job {
        name: "w.fio".to_string(),
        text: "[w]\nrw=randwrite\nbs=4k\nsize=256k\nioengine=libaio\niodepth=8\n".to_string(),
    };
    let grid = vec![
        (
            "scheduler".to_string(),
            vec!["bfq".to_string(), "py-fifo".to_string()],
        ),
        (
            "slice_idle".to_string(),
            vec!["0".to_string(), "8".to_string()],
        ),
    ];
    Spec::new(workload, Fixed::default(), grid, plugins).map_err(|e| e.to_string())
}

#[test]
fn a_plugin_runs_beside_the_builtins_without_their_tunables() {
    let p = plugins(false);
    let spec = spec(&p).unwrap();
    // bfq × {0, 8}, and py-fifo once: slice_idle is bfq's.
    assert_eq!(spec.len(), 3);
    let rows = run_local(&spec, 2, None, &p, &|_| {}).unwrap();
    let fifo = &rows[2].1[0];
    assert_eq!(fifo[1], Cell::Text("py-fifo".to_string()));
    assert_eq!(fifo[2], Cell::Empty);
    assert_eq!(fifo[6], Cell::Int(64), "64 writes of 4 KiB: {fifo:?}");
    assert_eq!(fifo.last(), Some(&Cell::Empty));
    // Unknown without the plugin.
    let err = spec_err(&Plugins::default());
    assert!(err.contains("unknown scheduler 'py-fifo'"), "{err}");
}

fn spec_err(plugins: &Plugins) -> String {
    spec(plugins).unwrap_err()
}

#[test]
fn a_plugin_that_fails_fails_the_sweep_with_its_message() {
    let p = plugins(true);
    let spec = spec(&p).unwrap();
    let err = run_local(&spec, 1, None, &p, &|_| {})
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("scheduler py-fifo failed: Traceback: ValueError: no"),
        "{err}"
    );
}
