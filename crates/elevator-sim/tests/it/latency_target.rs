//! fio's latency-target profiling (issue 29): `latency_target`,
//! `latency_window`, `latency_percentile` and `latency_run` search for the
//! highest depth whose I/O meets the target, end the job once found (after
//! one more window at that depth, whose figures are the job's), and report
//! fio's `latency_depth`.

use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::result::{READ, RunResult};
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::{SimError, run};

const MS: u64 = 1_000_000;

fn go(lat: &str) -> Result<RunResult, SimError> {
    let text = format!(
        "[j]\nfilename=f\nsize=1g\nrw=randread\nioengine=libaio\niodepth=32\ntime_based\nruntime=120\n{lat}\n"
    );
    let jobs = JobFile::parse(&text, "lat.fio").expect("job file");
    let dev = ModelSpec::parse("hdd-7200").expect("device");
    run(&jobs, &dev, &RunConfig::default(), &mut |_| {})
}

/// On a disk whose latency grows with its queue, the search settles
/// between depth 1 and the job's 32, ends the job long before its runtime,
/// and the job's figures (its last window's) meet the target.
#[test]
fn the_search_finds_a_depth_and_ends() {
    let r = go("latency_target=20ms\nlatency_window=1s\nlatency_percentile=99").expect("runs");
    let j = &r.jobs[0];
    let depth = j.latency_depth.expect("a depth");
    assert!(depth > 1 && depth < 32, "depth {depth}");
    assert!(j.end < 60_000 * MS, "ended at {} ns", j.end);
    // The figures are the final window's: about a second of I/O.
    assert!(
        j.runtime() >= 1_000 * MS && j.runtime() < 3_000 * MS,
        "{}",
        j.runtime()
    );
    let lat = &j.dirs[READ].lat;
    assert!(lat.mean() < 60.0 * MS as f64, "{}", lat.mean());
}

/// `latency_run` keeps adjusting until the runtime; a target no I/O can
/// meet fails the job at depth 1 with ETIMEDOUT, as fio's does.
#[test]
fn latency_run_and_an_impossible_target() {
    let r = go("latency_target=60ms\nlatency_window=1s\nlatency_percentile=95\nlatency_run=1")
        .expect("runs");
    assert!(r.jobs[0].end >= 120_000 * MS);
    match go("latency_target=10us") {
        Err(SimError::JobFailed {
            failure, partial, ..
        }) => {
            assert_eq!(failure.errno(), 110);
            assert_eq!(partial.jobs[0].latency_depth, Some(1));
        }
        other => panic!("expected ETIMEDOUT: {:?}", other.map(|r| r.jobs[0].end)),
    }
}

/// The options take fio's units: µs by default.
#[test]
fn latency_options_take_fios_units() {
    let j = JobFile::parse(
        "[j]\nlatency_target=500000\nlatency_window=5000000\nlatency_percentile=99.9\n",
        "f",
    )
    .expect("parses");
    let j = &j.jobs[0];
    assert_eq!((j.latency_target, j.latency_window), (500 * MS, 5_000 * MS));
    assert_eq!(j.latency_percentile, 99.9);
    let e = JobFile::parse("[j]\nlatency_percentile=101\n", "f").unwrap_err();
    assert_eq!(e.option.as_deref(), Some("latency_percentile"));
}
