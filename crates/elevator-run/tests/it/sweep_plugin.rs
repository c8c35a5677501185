//! Sweeps with a scheduler written outside elevator (a plugin, as the
//! Python package makes them): it runs by name beside the built-ins, the
//! built-ins' tunables are left out of its configurations, and one that
//! fails fails the sweep with what it said.

use elevator_core::Plugins;
use elevator_run::sweep::{Cell, Fixed, Spec, Workload, run_local};
use elevator_testkit::FifoPlugin;

/// The test FIFO; with `fail`, it says it failed once it has
/// taken a request.
fn plugins(fail: bool) -> Plugins {
    FifoPlugin::plugins(fail.then_some(0))
}

fn spec(plugins: &Plugins) -> Result<Spec, String> {
    let workload = Workload::Job {
        name: "w.fio".to_string(),
        text: "[w]\nrw=randwrite\nbs=4k\nsize=256k\nioengine=libaio\niodepth=8\n".to_string(),
    };
    let grid = vec![
        (
            "scheduler".to_string(),
            vec!["bfq".to_string(), "test-fifo".to_string()],
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
    // bfq × {0, 8}, and test-fifo once: slice_idle is bfq's.
    assert_eq!(spec.len(), 3);
    let rows = run_local(&spec, 2, None, &p, &|_| {}).unwrap();
    let fifo = &rows[2].1[0];
    assert_eq!(fifo[1], Cell::Text("test-fifo".to_string()));
    assert_eq!(fifo[2], Cell::Empty);
    assert_eq!(fifo[6], Cell::Int(64), "64 writes of 4 KiB: {fifo:?}");
    assert_eq!(fifo.last(), Some(&Cell::Empty));
    // Unknown without the plugin.
    let err = spec_err(&Plugins::default());
    assert!(err.contains("unknown scheduler 'test-fifo'"), "{err}");
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
        err.contains("scheduler test-fifo failed: raised after 0 inserts"),
        "{err}"
    );
}
