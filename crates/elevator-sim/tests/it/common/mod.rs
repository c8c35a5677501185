//! What the simulator tests share: jobs and job files built in code, and a
//! run of them on a device model.

// Each test file uses its own part of this module.
#![allow(dead_code)]

use elevator_fio::RunConfig;
use elevator_fio::job::{Amount, JobFile, JobSpec, RwMode};
use elevator_fio::result::RunResult;
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::run;

/// A job file at `path` holding `jobs`, with no global options.
pub fn file(path: &str, jobs: Vec<JobSpec>) -> JobFile {
    JobFile {
        path: path.into(),
        global_options: vec![],
        warnings: vec![],
        jobs,
    }
}

/// An O_DIRECT job moving `size` bytes at `depth` (with libaio: psync,
/// fio's default, would run it at depth 1).
pub fn job(name: &str, rw: RwMode, size: u64, depth: u32) -> JobSpec {
    let mut j = JobSpec::new(name, 1);
    j.rw = rw;
    j.ioengine = "libaio".into();
    j.size = Some(Amount::Bytes(size));
    j.iodepth = depth;
    j.direct = true;
    j
}

/// `job`, time-based: it runs for `runtime` nanoseconds.
pub fn timed(name: &str, rw: RwMode, size: u64, depth: u32, runtime: u64) -> JobSpec {
    let mut j = job(name, rw, size, depth);
    j.time_based = true;
    j.runtime = Some(runtime);
    j
}

/// Run `jobs` on the model `dev` under `sched` with `tunables` set.
pub fn sim(jobs: &JobFile, dev: &str, sched: &str, tunables: &[(&str, &str)]) -> RunResult {
    let cfg = RunConfig {
        scheduler: sched.into(),
        tunables: tunables
            .iter()
            .map(|&(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        ..RunConfig::default()
    };
    run(jobs, &ModelSpec::parse(dev).unwrap(), &cfg, &mut |_| {}).unwrap()
}
