//! kyber in the simulator: mixed reads, writes and discards run to the end on
//! flash and on a disk, every byte accounted for, the same every run; its
//! tunables are taken by name and text.

use crate::common;

use elevator_fio::RunConfig;
use elevator_fio::job::{JobFile, JobSpec, RwMode};
use elevator_fio::result::{READ, RunResult, WRITE};
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::run;

use common::job;

fn file(jobs: Vec<JobSpec>) -> JobFile {
    common::file("kyber.fio", jobs)
}

fn sim(jobs: &JobFile, dev: &str, tunables: &[(&str, &str)]) -> RunResult {
    common::sim(jobs, dev, "kyber", tunables)
}

fn mixed() -> JobFile {
    file(vec![
        job("r", RwMode::RandRead, 4 << 20, 16),
        job("w", RwMode::RandWrite, 4 << 20, 64),
        job("t", RwMode::RandTrim, 1 << 20, 4),
    ])
}

#[test]
fn mixed_load_completes_on_flash_and_disk() {
    for dev in ["ssd-sata", "nvme", "hdd-7200"] {
        let r = sim(&mixed(), dev, &[]);
        assert_eq!(r.jobs[0].dirs[READ].bytes, 4 << 20, "{dev}");
        assert_eq!(r.jobs[1].dirs[WRITE].bytes, 4 << 20, "{dev}");
        assert_eq!(r.ios, 1024 + 1024 + 256, "{dev}");
        assert_eq!(r.queue.bios, r.ios, "{dev}");
    }
}

#[test]
fn deterministic() {
    let a = sim(&mixed(), "hdd-7200", &[]);
    let b = sim(&mixed(), "hdd-7200", &[]);
    assert_eq!(a.elapsed, b.elapsed);
    assert_eq!(a.events, b.events);
    assert_eq!(
        a.jobs[0].dirs[READ].clat.percentile(99.0),
        b.jobs[0].dirs[READ].clat.percentile(99.0)
    );
}

#[test]
fn tunables_by_name() {
    let jobs = file(vec![job("r", RwMode::RandRead, 1 << 20, 8)]);
    let r = sim(
        &jobs,
        "ssd-sata",
        &[("read_lat_nsec", "1ms"), ("write_lat_nsec", "20000000")],
    );
    assert_eq!(r.jobs[0].dirs[READ].bytes, 1 << 20);
    let cfg = RunConfig {
        scheduler: "kyber".into(),
        tunables: vec![("read_lat_nsec".into(), "0".into())],
        ..RunConfig::default()
    };
    let dev = ModelSpec::parse("ssd-sata").unwrap();
    let e = run(&jobs, &dev, &cfg, &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("read_lat_nsec"), "{e}");
}
