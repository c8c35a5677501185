//! [`FifoPlugin`]: a scheduler written outside elevator's schedulers, as
//! the Python package makes them, for the tests of plugin schedulers: first
//! in, first out, and able to fail on cue as a Python exception would.

use std::collections::VecDeque;

use elevator_core::{
    MergeKind, Nanos, Plugin, PluginScheduler, Plugins, RequestId, Requests, SchedDispatch,
    Scheduler, TunableError, TunableSpec,
};

/// First in, first out, with no tunables. Once it has taken more than
/// `fail_after` requests it says it failed (`failure`), but still hands
/// back what it holds, as the Python adapter does after an exception.
#[derive(Clone, Debug, Default)]
pub struct FifoPlugin {
    held: VecDeque<RequestId>,
    inserts: u32,
    fail_after: Option<u32>,
}

impl FifoPlugin {
    /// Its name, as a run chooses it and as it names itself.
    pub const NAME: &'static str = "test-fifo";

    /// The plugins with this one, failing after `fail_after` inserts (if
    /// given) with the message "raised after N inserts".
    pub fn plugins(fail_after: Option<u32>) -> Plugins {
        let mut p = Plugins::default();
        p.add(Plugin::new(
            Self::NAME,
            move || -> Box<dyn PluginScheduler> {
                Box::new(FifoPlugin {
                    fail_after,
                    ..FifoPlugin::default()
                })
            },
        ));
        p
    }
}

impl Scheduler for FifoPlugin {
    fn name(&self) -> &'static str {
        Self::NAME
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
        owner: FifoPlugin::NAME.to_string(),
        known: String::new(),
    }
}

impl PluginScheduler for FifoPlugin {
    fn clone_box(&self) -> Box<dyn PluginScheduler> {
        Box::new(self.clone())
    }
    fn failure(&self) -> Option<String> {
        self.fail_after
            .filter(|n| self.inserts > *n)
            .map(|n| format!("raised after {n} inserts"))
    }
}
