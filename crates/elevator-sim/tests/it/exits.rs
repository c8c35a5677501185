//! Jobs that end other jobs (issue 29): `exitall`, `exit_what` and
//! `exitall_on_error` end the clones fio's `fio_terminate_threads` would,
//! at the end of the clone whose rule fires.

use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::result::{READ, RunResult, WRITE};
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::{SimError, run};

const MS: u64 = 1_000_000;

fn go(text: &str, dev: &str) -> Result<RunResult, SimError> {
    let jobs = JobFile::parse(text, "exits.fio").expect("job file");
    let dev = ModelSpec::parse(dev).expect("device");
    run(&jobs, &dev, &RunConfig::default(), &mut |_| {})
}

fn by_name<'a>(r: &'a RunResult, name: &str) -> Vec<&'a elevator_fio::result::JobResult> {
    r.jobs.iter().filter(|j| j.name == name).collect()
}

/// fio's examples/exitwhat.fio, shortened: `exit_what=stonewall` ends the
/// running jobs (of any group) when slow1 ends, the stonewall phase after
/// still runs in full, and its `exit_what=all` ends the jobs started with
/// it (which, as in fio, start with it, not before).
#[test]
fn exitwhat_example_ends_as_fio_does() {
    let text = "[global]\nfilename=t\nfilesize=64m\nbs=4k\ngroup_reporting\nexitall=1\n\
        [slow1]\nrw=read\nthinktime=2000\nnumber_ios=100\nnew_group=1\nexit_what=stonewall\n\
        [fast1]\nnew_group=1\nrw=randrw\nnumjobs=3\nioengine=libaio\niodepth=32\nrate=300,300,300\n\
        [slow2]\nstonewall\nrw=write\nnew_group=1\nthinktime=2000\nnumber_ios=100\nexit_what=all\n\
        [fast2]\nrw=randrw\nnumjobs=3\nioengine=libaio\niodepth=32\nrate=300,300,300\n\
        [runsnever]\nrw=randrw\nnumjobs=3\nioengine=libaio\niodepth=32\nrate=300,300,300\n";
    let r = go(text, "hdd-7200").expect("runs");
    let slow1 = by_name(&r, "slow1")[0];
    let slow2 = by_name(&r, "slow2")[0];
    assert_eq!(slow1.dirs[READ].ios, 100);
    assert_eq!(slow2.dirs[WRITE].ios, 100, "slow2 runs in full");
    for f in by_name(&r, "fast1") {
        assert_eq!(f.end, slow1.end, "fast1 ends when slow1 does");
    }
    for name in ["fast2", "runsnever"] {
        for f in by_name(&r, name) {
            assert!(f.start >= slow1.end, "{name} waits for the stonewall");
            assert_eq!(f.end, slow2.end, "{name} ends when slow2 does");
        }
    }
    assert!(slow1.end > 200 * MS && r.elapsed < slow1.end + slow2.end + 100 * MS);
}

/// `exitall` (default `exit_what=group`) ends the rest of the ending job's
/// group, not other groups; without `exitall` nothing ends early.
#[test]
fn exitall_ends_the_group_only() {
    let text = |exitall: &str| {
        format!(
            "[global]\nfilename=t\nsize=16m\n{exitall}\n\
             [short]\nrw=read\nnumber_ios=10\n\
             [long]\nrw=randread\ntime_based\nruntime=5\n\
             [other]\nnew_group\nrw=randread\ntime_based\nruntime=2\n"
        )
    };
    let r = go(&text("exitall"), "ssd-sata").expect("runs");
    let short = by_name(&r, "short")[0];
    // It ends once its I/O in flight completes.
    let long = by_name(&r, "long")[0];
    assert!(long.end >= short.end && long.end < short.end + 10 * MS);
    assert!(short.end < 100 * MS);
    let other = by_name(&r, "other")[0];
    assert!(other.end >= 2_000 * MS, "another group runs its time");
    let r = go(&text(""), "ssd-sata").expect("runs");
    assert!(by_name(&r, "long")[0].end >= 5_000 * MS);
}

/// `exitall_on_error`: a job that fails ends its group; one that ends
/// well ends nothing.
#[test]
fn exitall_on_error_fires_on_failure_only() {
    let text = "[global]\nfilename=t\nsize=16m\nexitall_on_error\n\
        [dies]\nrw=write\nnumber_ios=50\n\
        [long]\nrw=randread\ntime_based\nruntime=3\n";
    match go(text, "ssd-sata,torn_rate=1") {
        Err(SimError::JobFailed { job, partial, .. }) => {
            assert_eq!(job, "dies");
            let dies = by_name(&partial, "dies")[0];
            let long = by_name(&partial, "long")[0];
            assert!(long.end >= dies.end && long.end < dies.end + 10 * MS);
        }
        other => panic!("expected the job to fail: {other:?}"),
    }
    let r = go(text, "ssd-sata").expect("runs");
    assert!(by_name(&r, "long")[0].end >= 3_000 * MS);
}

/// `exit_what` takes fio's three words and refuses others by name.
#[test]
fn exit_what_takes_fios_words() {
    use elevator_fio::job::ExitWhat;
    for (w, want) in [
        ("group", ExitWhat::Group),
        ("stonewall", ExitWhat::Stonewall),
        ("all", ExitWhat::All),
    ] {
        let j = JobFile::parse(&format!("[a]\nexit_what={w}\n"), "f").unwrap();
        assert_eq!(j.jobs[0].exit_what, want);
    }
    let e = JobFile::parse("[a]\nexit_what=some\n", "f").unwrap_err();
    assert_eq!(e.option.as_deref(), Some("exit_what"));
    let j = JobFile::parse("[a]\nexitall\nexitall_on_error=1\n", "f").unwrap();
    assert!(j.jobs[0].exitall && j.jobs[0].exitall_on_error);
}
