//! The engine end to end, with jobs built in code: bytes and I/O counts add
//! up, runs are deterministic, time-based jobs stop on time, stonewall
//! phases run one after another, think time spaces I/O out.

use crate::common;

use elevator_fio::RunConfig;
use elevator_fio::job::{JobFile, JobSpec, RwMode};
use elevator_fio::result::{READ, RunResult, WRITE};
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::run;

use common::{job, timed};

fn file(jobs: Vec<JobSpec>) -> JobFile {
    common::file("test.fio", jobs)
}

fn sim(jobs: &JobFile, dev: &str, sched: &str) -> RunResult {
    common::sim(jobs, dev, sched, &[])
}

#[test]
fn sizes_add_up() {
    for sched in ["none", "mq-deadline", "deadline-list"] {
        let jobs = file(vec![
            job("r", RwMode::RandRead, 8 << 20, 16),
            job("w", RwMode::Write, 4 << 20, 4),
        ]);
        let r = sim(&jobs, "ssd-sata", sched);
        assert_eq!(r.jobs[0].dirs[READ].bytes, 8 << 20, "{sched}");
        assert_eq!(r.jobs[0].dirs[READ].ios, 2048, "{sched}");
        assert_eq!(r.jobs[1].dirs[WRITE].bytes, 4 << 20, "{sched}");
        assert_eq!(r.ios, 2048 + 1024);
        assert_eq!(r.queue.bios, r.ios);
        assert!(r.elapsed > 0 && r.jobs.iter().all(|j| j.end > j.start));
        assert!(r.utilisation() > 0.5, "{}", r.utilisation());
    }
}

#[test]
fn deterministic() {
    let jobs = file(vec![
        job("a", RwMode::RandRw, 4 << 20, 8),
        job("b", RwMode::RandRead, 4 << 20, 8),
    ]);
    let a = sim(&jobs, "hdd-7200", "mq-deadline");
    let b = sim(&jobs, "hdd-7200", "mq-deadline");
    assert_eq!(a.elapsed, b.elapsed);
    assert_eq!(a.events, b.events);
    for (x, y) in a.jobs.iter().zip(&b.jobs) {
        assert_eq!(x.end, y.end);
        assert_eq!(
            x.dirs[READ].clat.percentile(99.0),
            y.dirs[READ].clat.percentile(99.0)
        );
    }
}

#[test]
fn time_based_stops_on_time_and_stonewall_waits() {
    let t = timed("timed", RwMode::RandRead, 1 << 20, 4, 200_000_000);
    let mut after = job("after", RwMode::Read, 1 << 20, 1);
    after.stonewall = true;
    let r = sim(&file(vec![t, after]), "ssd-sata", "mq-deadline");
    let timed = &r.jobs[0];
    assert!(
        timed.end >= 200_000_000 && timed.end < 201_000_000,
        "{}",
        timed.end
    );
    assert!(
        timed.dirs[READ].bytes > 1 << 20,
        "time_based keeps going past size"
    );
    assert!(r.jobs[1].start >= timed.end, "stonewall starts after");
    assert_eq!(r.jobs[1].group, 1);
}

#[test]
fn thinktime_spaces_io() {
    let mut j = job("slow", RwMode::RandRead, 100 * 4096, 1);
    j.thinktime = 1_000_000;
    let r = sim(&file(vec![j]), "null", "none");
    // 100 I/Os, 1 ms think after each.
    assert!(r.elapsed >= 99_000_000, "{}", r.elapsed);
}

#[test]
fn numjobs_clones_are_separate_contexts() {
    let mut j = job("c", RwMode::RandRead, 1 << 20, 2);
    j.numjobs = 3;
    let r = sim(&file(vec![j]), "ssd-sata", "mq-deadline");
    assert_eq!(r.jobs.len(), 3);
    let ctxs: Vec<u32> = r.jobs.iter().map(|j| j.ctx).collect();
    assert_eq!(ctxs, vec![1, 2, 3]);
}

#[test]
fn time_standing_still_is_an_error_not_a_hang() {
    let j = timed("forever", RwMode::RandRead, 1 << 20, 4, 1_000_000_000);
    let cfg = RunConfig::default();
    let dev = ModelSpec::parse("null").unwrap();
    let e = run(&file(vec![j]), &dev, &cfg, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("has not moved") && e.contains("latency"), "{e}");
    // A job bounded by size ends, however fast the device.
    let many = job("many", RwMode::RandRead, 8 << 30, 32);
    assert_eq!(
        run(&file(vec![many]), &dev, &cfg, &mut |_| {}).unwrap().ios,
        2 << 20
    );
    let dev = ModelSpec::parse("null,latency=1").unwrap();
    let j = timed("timed", RwMode::RandRead, 1 << 20, 4, 10_000_000);
    assert!(run(&file(vec![j]), &dev, &cfg, &mut |_| {}).is_ok());
}

/// I/O errors end a job as fio's do, on the simulator as on real devices:
/// torn writes (EIO) end it at once unless `continue_on_error` lets EIO go
/// on; a vanished device (ENODEV) ends it even then, unless `ignore_error`
/// names ENODEV.
#[test]
fn io_errors_end_jobs_unless_told_to_go_on() {
    use elevator_fio::job::ErrorPolicy;
    use elevator_sim::engine::SimError;
    let cfg = RunConfig::default();
    let go = |j: &JobSpec, dev: &str| {
        run(
            &file(vec![j.clone()]),
            &ModelSpec::parse(dev).unwrap(),
            &cfg,
            &mut |_| {},
        )
    };
    let failed = |r: Result<RunResult, SimError>| match r {
        Err(SimError::JobFailed {
            failure, partial, ..
        }) => (failure.errno(), *partial),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("the job went on after an I/O error"),
    };
    let j = job("w", RwMode::Write, 4 << 20, 8);
    let (errno, partial) = failed(go(&j, "ssd-sata,torn_rate=1"));
    assert_eq!((errno, partial.jobs[0].error()), (5, 5));
    let ios = partial.jobs[0].dirs[WRITE].ios;
    assert!(
        (1..=8).contains(&ios),
        "{ios} writes issued after the first error"
    );

    let mut on = j.clone();
    on.errors.continue_on = ErrorPolicy::ALL;
    let r = go(&on, "ssd-sata,torn_rate=1").expect("EIO goes on");
    let w = &r.jobs[0];
    // A torn request fails the bios from its tear on (those before it
    // landed): every failed one is counted.
    assert_eq!(w.dirs[WRITE].ios, 1024);
    assert!(
        w.total_err > 0 && w.total_err == w.dirs[WRITE].errors,
        "{}",
        w.total_err
    );
    assert_eq!((w.error(), w.first_error), (5, 5));
    assert!(w.failure.is_none());

    let (errno, _) = failed(go(&on, "ssd-sata,vanish_at=1ms"));
    assert_eq!(errno, 19, "ENODEV is not in fio's default list");
    let mut gone = on.clone();
    gone.errors.ignore[1] = vec![19];
    let r = go(&gone, "ssd-sata,vanish_at=1ms").expect("ENODEV listed");
    assert_eq!(r.jobs[0].dirs[WRITE].ios, 1024);
    assert!(r.jobs[0].total_err > 0 && r.jobs[0].first_error == 19);
}
