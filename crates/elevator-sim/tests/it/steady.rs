//! Steady-state detection (issue 29): `ss`, `ss_dur` and `ss_ramp` end a
//! job once the last `ss_dur` seconds of its samples meet the criterion, as
//! fio's helper thread does, and report fio's `steadystate` figures.

use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::result::RunResult;
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::{SimError, run};

const S: u64 = 1_000_000_000;

fn go(text: &str, dev: &str) -> Result<RunResult, SimError> {
    let jobs = JobFile::parse(text, "steady.fio").expect("job file");
    let dev = ModelSpec::parse(dev).expect("device");
    run(&jobs, &dev, &RunConfig::default(), &mut |_| {})
}

fn job(ss: &str, extra: &str) -> String {
    format!(
        "[j]\nfilename=f\nsize=256m\nrw=randread\niodepth=4\ntime_based\nruntime=60\n{ss}\n{extra}\n"
    )
}

/// A steady random read meets `iops:20%` once its ramp and window are
/// over, and ends then: after 2 s of ramp, the tick one second later
/// begins the 5-second window, tested from its fifth sample on.
#[test]
fn a_steady_job_ends_when_its_window_is_steady() {
    let r = go(&job("ss=iops:20%\nss_dur=5s\nss_ramp=2s", ""), "ssd-sata").expect("runs");
    let j = &r.jobs[0];
    let ss = j.steady.as_deref().expect("steadystate reported");
    assert!(ss.attained);
    assert_eq!((ss.iops.len(), ss.bw.len()), (5, 5));
    assert!(
        ss.criterion < 20.0 && ss.criterion >= 0.0,
        "{}",
        ss.criterion
    );
    assert!(ss.iops.iter().all(|&n| n > 0), "{:?}", ss.iops);
    // Samples are one second each: bytes/s are 4 KiB per I/O here.
    assert!(ss.bw.iter().zip(&ss.iops).all(|(&b, &n)| b == n * 4096));
    assert!(j.end >= 7 * S && j.end < 9 * S, "ended at {} ns", j.end);
    assert_eq!(ss.spec.name(), "iops:20.000000%");
}

/// A criterion that cannot be met (a slope below 0 %) leaves the job to
/// its runtime, with the last window reported as not attained.
#[test]
fn an_unmet_criterion_runs_to_the_end() {
    let r = go(
        &job("ss=iops_slope:0%\nss_dur=3\nruntime=10", ""),
        "ssd-sata",
    )
    .expect("runs");
    let j = &r.jobs[0];
    let ss = j.steady.as_deref().expect("steadystate reported");
    assert!(!ss.attained);
    assert!(j.end >= 10 * S);
    assert_eq!(ss.iops.len(), 3);
}

/// With `group_reporting`, the group is watched as one (its clones'
/// samples summed) and all of its clones end together.
#[test]
fn a_group_is_watched_as_one() {
    let text = job(
        "ss=bw:20%\nss_dur=4\nss_ramp=1",
        "numjobs=4\ngroup_reporting",
    );
    let r = go(&text, "ssd-sata").expect("runs");
    let with: Vec<_> = r.jobs.iter().filter(|j| j.steady.is_some()).collect();
    assert_eq!(with.len(), 1, "one watch for the group");
    let ss = with[0].steady.as_deref().expect("steady");
    assert!(ss.attained);
    let total: u64 = r.jobs.iter().map(|j| j.dirs[0].bytes).sum();
    assert!(
        ss.bw_mean() * 4 < total,
        "the group's bandwidth, not one clone's"
    );
    let end = r.jobs.iter().map(|j| j.end).max().unwrap_or(0);
    assert!(end < 10 * S, "{end}");
    // Jobs of one group that disagree are refused, as fio refuses them.
    let text = "[global]\nfilename=f\nsize=16m\ngroup_reporting\ntime_based\nruntime=5\n\
                [a]\nss_dur=3\n[b]\nss_dur=4\n";
    match go(text, "ssd-sata") {
        Err(SimError::Job(e)) => assert_eq!(e.option.as_deref(), Some("steadystate")),
        other => panic!("expected a refusal: {other:?}"),
    }
}

/// fio's forms of `ss`, `ss_dur` and `ss_ramp`.
#[test]
fn steadystate_options_take_fios_forms() {
    let spec = |body: &str| {
        JobFile::parse(&format!("[j]\n{body}\n"), "f")
            .map(|f| f.jobs[0].steadystate)
            .map_err(|e| e.option.unwrap_or_default())
    };
    let s = spec("ss=bw_slope:1%\nss_dur=10s\nss_ramp=5s").unwrap();
    assert!(!s.iops && s.slope && s.percent && s.limit == 1.0);
    assert_eq!((s.dur, s.ramp), (10, 5 * S));
    let s = spec("steadystate=bw:10m\nsteadystate_duration=1500ms").unwrap();
    assert!(!s.percent && s.limit == (10 << 20) as f64);
    assert_eq!(s.dur, 1, "whole seconds, as fio keeps them");
    let s = spec("ss=iops:500").unwrap();
    assert!(s.iops && !s.slope && s.limit == 500.0 && s.dur == 0);
    let parsed = JobFile::parse("[j]\nss=iops:5%\n", "f").unwrap();
    assert!(parsed.jobs[0].steady().is_none(), "ss alone does nothing");
    for bad in ["ss=iops", "ss=lat:5%", "ss=iops:x%", "ss_dur=3d"] {
        assert!(spec(bad).is_err(), "{bad}");
    }
}
