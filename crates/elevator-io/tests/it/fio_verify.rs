//! fio's `verify` and syncs on real devices: a job writes verifiable
//! blocks, reads them back and checks them, on memory and on a file; a block
//! corrupted between a write-only run and a `verify_only` run fails, naming
//! its offset.

use crate::common;

use std::path::Path;

use elevator_fio::RunConfig;
use elevator_fio::job::{Amount, JobFile, JobSpec, RwMode};
use elevator_fio::verify::MAGIC;
use elevator_fio::workload::JobFailure;
use elevator_io::file::{FileDevice, FileOptions};
use elevator_io::jobs::{JobRunError, run};

fn verify_job(rw: RwMode) -> JobFile {
    let mut j = JobSpec::new("v", 1);
    j.rw = rw;
    j.size = Some(Amount::Bytes(64 * 4096));
    j.iodepth = 4;
    j.ioengine = "libaio".into();
    j.direct = true;
    j.verify = Some("crc32c".into());
    j.end_fsync = true;
    JobFile {
        path: "verify.fio".into(),
        global_options: vec![],
        warnings: vec![],
        jobs: vec![j],
    }
}

/// The result of `jobs` on a fresh 4 MiB memory device; they must pass.
fn verified_on_memory(jobs: &JobFile) -> elevator_fio::result::RunResult {
    run(
        jobs,
        common::mem(4096, 8),
        &RunConfig::default(),
        &mut |_| {},
    )
    .expect("verify passes")
}

#[test]
fn verify_passes_on_memory() {
    // Random writes (some blocks twice: the last write is the one checked;
    // one at a time, so that two writes of a block are never in flight
    // together).
    let mut random = verify_job(RwMode::RandWrite);
    random.jobs[0].iodepth = 1;
    let r = verified_on_memory(&random);
    assert!(r.jobs[0].dirs[0].ios > 0 && r.jobs[0].dirs[0].ios <= 64);
    let jobs = verify_job(RwMode::Write);
    let r = verified_on_memory(&jobs);
    assert_eq!(r.jobs[0].dirs[1].ios, 64);
    assert_eq!(r.jobs[0].dirs[0].ios, 64, "every block read back");
    assert_eq!(r.jobs[0].extra.sync.count(), 1, "end_fsync");
}

fn open(path: &Path) -> FileDevice {
    FileDevice::open(path, &FileOptions::default()).expect("open")
}

#[test]
fn verify_on_a_file_and_a_corrupted_block_fails() {
    let test = "verify_on_a_file_and_a_corrupted_block_fails";
    let Ok(file) = common::scratch_file(Path::new("/dev/shm"), "verify", 4 << 20) else {
        common::skip(test, "cannot create a file in /dev/shm");
        return;
    };
    let cfg = RunConfig::default();
    run(&verify_job(RwMode::Write), open(&file), &cfg, &mut |_| {}).expect("verify passes");

    // Write only, then corrupt one block's payload, then check only.
    let mut jobs = verify_job(RwMode::Write);
    jobs.jobs[0].do_verify = false;
    let r = run(&jobs, open(&file), &cfg, &mut |_| {}).expect("write");
    assert_eq!(r.jobs[0].dirs[0].ios, 0);
    let mut data = std::fs::read(&file).expect("read");
    let blocks: Vec<usize> = (0..data.len())
        .step_by(4096)
        .filter(|&o| data[o..o + 8] == MAGIC)
        .collect();
    assert_eq!(blocks.len(), 64);
    let bad = blocks[10];
    data[bad + 1000] ^= 0xFF;
    std::fs::write(&file, &data).expect("corrupt");

    jobs.jobs[0].verify_only = true;
    match run(&jobs, open(&file), &cfg, &mut |_| {}) {
        Err(JobRunError::JobFailed {
            job,
            failure,
            partial,
            ..
        }) => {
            let JobFailure::Verify { error, errors } = *failure else {
                panic!("{failure}");
            };
            assert_eq!(job, "v");
            assert_eq!(error.offset(), Some(bad as u64), "{error}");
            assert_eq!(errors, 1);
            assert_eq!(partial.jobs[0].dirs[1].ios, 0, "verify_only writes nothing");
            assert_eq!(partial.jobs[0].dirs[0].ios, 64);
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a corrupted block verified"),
    }

    // verify_fatal stops at it.
    jobs.jobs[0].verify_fatal = true;
    match run(&jobs, open(&file), &cfg, &mut |_| {}) {
        Err(JobRunError::JobFailed { partial, .. }) => {
            assert!(
                partial.jobs[0].dirs[0].ios < 64,
                "{}",
                partial.jobs[0].dirs[0].ios
            );
        }
        other => panic!("{:?}", other.err()),
    }
}
