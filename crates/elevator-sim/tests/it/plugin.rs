//! Plugin schedulers (elevator_core::Plugins): a scheduler built outside
//! elevator runs a job by name beside the built-ins, and one that fails
//! makes the run fail with what it said, after handing back what it held.

use elevator_core::Plugins;
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::{SimError, run};
use elevator_testkit::FifoPlugin;

fn plugins(fail_after: Option<u32>) -> Plugins {
    FifoPlugin::plugins(fail_after)
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
