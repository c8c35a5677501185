//! The `IO depths` and `submit` figures on the real engine count as fio
//! counts them: each I/O at the job's depth in flight when its burst is
//! handed to the device. A job that keeps 16 in flight reports them at 16,
//! even when its completions come back (and it refills) 16 at a time.

use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_io::jobs::run;
use elevator_io::{MemDevice, MemOptions};

/// fio's `iodepth_level` bucket of depths 16 to 31.
const AT_16: usize = 4;

fn depth_run(text: &str) -> elevator_fio::result::JobResult {
    let jobs = JobFile::parse(text, "depths.fio").expect("job file");
    let dev = MemDevice::new(64 << 20, MemOptions::default()).expect("a memory device");
    let cfg = RunConfig {
        plugins: Default::default(),
        scheduler: "mq-deadline".into(),
        tunables: Vec::new(),
        seed: 3,
    };
    let mut result = run(&jobs, dev, &cfg, &mut |_| {}).expect("the run");
    assert_eq!(result.jobs.len(), 1);
    result.jobs.remove(0)
}

#[test]
fn a_qd16_job_on_mem_reports_its_ios_at_depth_16() {
    let job = depth_run(
        "[j]\nrw=randread\nbs=4k\nsize=16m\niodepth=16\nioengine=libaio\nfilename=/dev/x\n",
    );
    let ios: u64 = job.dirs.iter().map(|d| d.ios).sum();
    assert_eq!(ios, 4096);
    let depth = job.extra.depth;
    assert_eq!(depth.iter().sum::<u64>(), ios, "every I/O counted once");
    assert!(
        depth[AT_16] * 10 >= ios * 9,
        "at 16: {} of {ios} ({depth:?})",
        depth[AT_16]
    );
    // Each burst is one submission, of at most 16.
    let submits: u64 = job.extra.submit.iter().sum();
    assert!(submits > 0 && submits <= ios);
    assert_eq!(job.extra.submit[5] + job.extra.submit[6], 0);
}

#[test]
fn a_qd1_job_on_mem_reports_its_ios_at_depth_1() {
    let job = depth_run("[j]\nrw=randwrite\nbs=64k\nsize=8m\niodepth=1\nfilename=/dev/x\n");
    let ios: u64 = job.dirs.iter().map(|d| d.ios).sum();
    assert_eq!(ios, 128);
    assert_eq!(job.extra.depth[0], ios);
    // One I/O per submission: fio's `submit : 4=100.0%`.
    assert_eq!(job.extra.submit[1], ios);
}
