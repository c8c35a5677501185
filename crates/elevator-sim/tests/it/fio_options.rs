//! fio's timing and lifecycle options on the simulator (issue 14): rates,
//! ramp, start rules, think time, depth, syncs and verify, in simulated
//! time (deterministic, so asserted exactly or within a tolerance).

use crate::common;

use common::{file, job, sim, timed};
use elevator_fio::RunConfig;
use elevator_fio::job::{JobFile, RateProcess, RwMode, ThinkBlocks};
use elevator_fio::workload::{self, JobFailure, State};
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::{SimError, run};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
const DEV: &str = "null,latency=20";

fn run_err(jobs: &JobFile, dev: &str) -> SimError {
    let spec = ModelSpec::parse(dev).expect("device");
    match run(jobs, &spec, &RunConfig::default(), &mut |_| {}) {
        Ok(_) => panic!("the run should have failed"),
        Err(e) => e,
    }
}

#[test]
fn rate_iops_and_rate_give_the_rate_in_simulated_time() {
    let mut j = timed("r", RwMode::RandRead, 64 << 20, 8, SEC);
    j.rate_iops = [1000, 0, 0];
    let r = sim(&file("rate.fio", vec![j]), DEV, "none", &[]);
    let ios = r.jobs[0].dirs[0].ios as f64;
    assert!(
        (ios - 1000.0).abs() <= 20.0,
        "{ios} I/Os in 1 s at 1000 IOPS"
    );

    let mut j = timed("b", RwMode::Write, 64 << 20, 4, SEC);
    j.rate = [0, 4 << 20, 0];
    let r = sim(&file("rate.fio", vec![j]), DEV, "none", &[]);
    let bytes = r.jobs[0].dirs[1].bytes as f64;
    let want = (4 << 20) as f64;
    assert!(
        (bytes - want).abs() <= want * 0.02,
        "{bytes} bytes in 1 s at 4 MiB/s"
    );
}

#[test]
fn poisson_rate_has_the_same_mean() {
    let mut j = timed("p", RwMode::RandRead, 64 << 20, 16, 2 * SEC);
    j.rate_iops = [2000, 0, 0];
    j.rate_process = RateProcess::Poisson;
    let r = sim(&file("poisson.fio", vec![j]), DEV, "none", &[]);
    let ios = r.jobs[0].dirs[0].ios as f64;
    // 4000 expected; a Poisson count's deviation is about 63.
    assert!((ios - 4000.0).abs() <= 4000.0 * 0.05, "{ios}");
}

#[test]
fn ramp_time_comes_before_runtime_and_figures() {
    let mut j = timed("ramp", RwMode::RandRead, 64 << 20, 1, 100 * MS);
    j.ramp_time = 50 * MS;
    let r = sim(&file("ramp.fio", vec![j]), DEV, "none", &[]);
    let jr = &r.jobs[0];
    assert_eq!(jr.start, 50 * MS, "figures start at the ramp's end");
    assert!(
        jr.end >= 150 * MS && jr.end < 151 * MS,
        "runtime after the ramp: {}",
        jr.end
    );
}

#[test]
fn startdelay_and_wait_for_order_starts() {
    let mut a = job("a", RwMode::Read, 1 << 20, 1);
    a.startdelay = (10 * MS, 10 * MS);
    let b = job("b", RwMode::Read, 1 << 20, 1);
    let mut c = job("c", RwMode::Read, 1 << 20, 1);
    c.wait_for = Some("a".into());
    let r = sim(&file("start.fio", vec![a, b, c]), DEV, "none", &[]);
    let (a, b, c) = (&r.jobs[0], &r.jobs[1], &r.jobs[2]);
    assert_eq!(a.start, 10 * MS);
    assert_eq!(b.start, 0);
    assert!(
        c.start >= a.end && a.end > 0,
        "c waits for a: {} vs {}",
        c.start,
        a.end
    );

    // A range draws a delay in it per clone.
    let mut d = job("d", RwMode::Read, 1 << 20, 1);
    d.numjobs = 4;
    d.startdelay = (MS, 5 * MS);
    let r = sim(&file("range.fio", vec![d]), DEV, "none", &[]);
    for j in &r.jobs {
        assert!((MS..=5 * MS).contains(&j.start), "{}", j.start);
    }

    let mut e = job("e", RwMode::Read, 1 << 20, 1);
    e.wait_for = Some("nobody".into());
    assert!(matches!(
        run_err(&file("bad.fio", vec![e]), DEV),
        SimError::Job(_)
    ));
}

fn think(kind: ThinkBlocks) -> u64 {
    let mut j = job("t", RwMode::RandRead, 64 * 4096, 4);
    j.thinktime = MS;
    j.thinktime_blocks = 4;
    j.thinktime_blocks_type = kind;
    // One I/O at a time on the device: completions come one by one.
    sim(
        &file("think.fio", vec![j]),
        "null,latency=20,queue_depth=1",
        "none",
        &[],
    )
    .elapsed
}

#[test]
fn thinktime_blocks_type_issue_and_complete_differ() {
    // Issue: 4 issued, drained, 1 ms: 15 pauses between 16 groups (none
    // after the last). Complete: 4 completed while refilling, so 7
    // issued per pause (3 refills, then a drain of 3): 9 pauses.
    let issue = think(ThinkBlocks::Issue);
    let complete = think(ThinkBlocks::Complete);
    assert!((15 * MS..17 * MS).contains(&issue), "issue {issue}");
    assert!((9 * MS..11 * MS).contains(&complete), "complete {complete}");
}

/// A reader of depth 8 with `iodepth_low` set to `low`, filled to its
/// depth at time 0: its worker and the I/Os in flight.
fn filled_with_low(low: u32) -> (workload::Worker, Vec<workload::Pending>) {
    let mut j = job("low", RwMode::Read, 1 << 20, 8);
    j.iodepth_low = Some(low);
    let jobs = file("low.fio", vec![j]);
    let mut ws = workload::workers(&jobs, 1 << 30, 1).expect("workers");
    let mut w = ws.remove(0);
    w.start(0);
    let mut flight = Vec::new();
    while w.can_issue(0) {
        let io = w.next_io(0);
        w.issued(&io, 0);
        flight.push(io);
    }
    w.commit();
    assert_eq!(flight.len(), 8);
    (w, flight)
}

#[test]
fn iodepth_low_0_is_iodepth_as_in_fio() {
    // fio: iodepth_low=0 (or unset) is iodepth, so one completion refills.
    let (mut w, mut flight) = filled_with_low(0);
    let io = flight.remove(0);
    w.completed(&io, u64::from(io.len), elevator_core::Status::Ok, 0, 1);
    w.reap(1);
    assert!(w.can_issue(1), "one completion refills");
}

#[test]
fn iodepth_low_refills_only_at_the_low_mark() {
    let (mut w, mut flight) = filled_with_low(2);
    for n in 0..6 {
        let io = flight.remove(0);
        w.completed(&io, u64::from(io.len), elevator_core::Status::Ok, 0, 1);
        w.reap(1);
        assert_eq!(w.can_issue(1), n == 5, "after {} completions", n + 1);
    }
    let mut refill = 0;
    while w.can_issue(1) {
        let io = w.next_io(1);
        w.issued(&io, 1);
        refill += 1;
    }
    assert_eq!(refill, 6, "refilled to the full depth");
}

#[test]
fn fsync_every_4_writes_and_end_fsync() {
    let mut j = job("f", RwMode::Write, 64 * 4096, 4);
    j.fsync = 4;
    let r = sim(&file("fsync.fio", vec![j]), DEV, "none", &[]);
    assert_eq!(r.jobs[0].extra.sync.count(), 16);
    assert_eq!(r.jobs[0].dirs[1].ios, 64);

    let mut j = job("e", RwMode::Write, 64 * 4096, 4);
    j.end_fsync = true;
    let r = sim(&file("end.fio", vec![j]), DEV, "none", &[]);
    assert_eq!(r.jobs[0].extra.sync.count(), 1);

    // A read job has nothing to sync.
    let mut j = job("r", RwMode::Read, 64 * 4096, 4);
    j.end_fsync = true;
    j.fsync = 4;
    let r = sim(&file("read.fio", vec![j]), DEV, "none", &[]);
    assert_eq!(r.jobs[0].extra.sync.count(), 0);
}

#[test]
fn verify_reads_back_what_was_written() {
    let mut j = job("v", RwMode::RandWrite, 256 * 4096, 8);
    j.verify = Some("crc32c".into());
    let r = sim(&file("verify.fio", vec![j.clone()]), DEV, "none", &[]);
    let w = r.jobs[0].dirs[1].ios;
    assert_eq!(w, 256);
    assert!(r.jobs[0].dirs[0].ios > 0 && r.jobs[0].dirs[0].ios <= w);

    // With the random map every block is written once: every one is read.
    let mut s = j.clone();
    s.rw = RwMode::Write;
    let r = sim(&file("verify.fio", vec![s.clone()]), DEV, "none", &[]);
    assert_eq!(r.jobs[0].dirs[0].ios, 256, "ios doubled");

    // verify_backlog reads back as it goes: the same blocks in all.
    s.verify_backlog = 16;
    let r = sim(&file("backlog.fio", vec![s.clone()]), DEV, "none", &[]);
    assert_eq!(r.jobs[0].dirs[0].ios, 256);

    // verify_only: no writes, the same reads.
    s.verify_backlog = 0;
    s.verify_only = true;
    let r = sim(&file("only.fio", vec![s.clone()]), DEV, "none", &[]);
    assert_eq!(r.jobs[0].dirs[1].ios, 0);
    assert_eq!(r.jobs[0].dirs[0].ios, 256);

    // do_verify=0: written, not read.
    s.verify_only = false;
    s.do_verify = false;
    let r = sim(&file("nodo.fio", vec![s]), DEV, "none", &[]);
    assert_eq!(r.jobs[0].dirs[0].ios, 0);
}

#[test]
fn rate_min_not_met_fails_the_job() {
    let mut j = timed("slow", RwMode::RandRead, 64 << 20, 1, 6 * SEC);
    j.rate_iops = [100, 0, 0];
    j.rate_iops_min = [500, 0, 0];
    let mut other = timed("fine", RwMode::RandRead, 64 << 20, 1, 100 * MS);
    other.new_group = true;
    match run_err(&file("min.fio", vec![j, other]), DEV) {
        SimError::JobFailed {
            job,
            failure,
            partial,
            ..
        } => {
            let JobFailure::RateMin(s) = *failure else {
                panic!("{failure}");
            };
            assert_eq!(job, "slow");
            assert!(s.iops && s.min == 500 && s.got < 500, "{s:?}");
            // As fio (a 6 s job fails at 3.0 s): 2 s to settle, a baseline
            // then, and it stopped at the end of its first cycle after it;
            // the other job ran.
            let end = partial.jobs[0].end;
            assert!((3 * SEC..=3_100 * MS).contains(&end), "{end}");
            assert!(partial.jobs[1].dirs[0].ios > 0);
        }
        e => panic!("{e}"),
    }
}

#[test]
fn workers_end_done() {
    let jobs = file("x.fio", vec![job("a", RwMode::Read, 1 << 20, 1)]);
    let ws = workload::workers(&jobs, 1 << 30, 1).expect("workers");
    assert_eq!(ws[0].state, State::Waiting);
}

#[test]
fn slow_rate_clients_meet_their_floor_as_in_fio() {
    // Clients at 1250 B/s with a floor of 1024 B/s, started 4 s apart: one
    // 4 KiB read every 3.3 s, each over a cycle of 1 s. fio runs this (its
    // check waits 2 s, then compares completions a cycle or more apart).
    let text = "[global]\nsize=64k\nrw=read\nrate=1250\nratemin=1024\n\
                [c1]\nstartdelay=0\n[c2]\nstartdelay=4\n[c3]\nstartdelay=8\n";
    let jobs = JobFile::parse(text, "clients.fio").expect("parse");
    let r = sim(&jobs, "hdd-7200", "mq-deadline", &[]);
    for j in &r.jobs {
        assert_eq!(j.dirs[0].bytes, 64 << 10, "{}", j.name);
    }
}

#[test]
fn flow_weights_share_the_ios_as_in_fio() {
    // examples/flow.fio's shape: weights 1 and 8 in one flow.
    let text = "[global]\nnorandommap\ntime_based\nruntime=1\nsize=1g\nbs=8k\n\
                ioengine=libaio\niodepth=16\nflow_sleep=1000\n\
                [job2]\nrw=write\nflow=1\n[job1]\nrw=randread\nflow=8\n";
    let jobs = JobFile::parse(text, "flow.fio").expect("parse");
    let r = sim(&jobs, DEV, "none", &[]);
    let (w, rd) = (r.jobs[0].dirs[1].ios as f64, r.jobs[1].dirs[0].ios as f64);
    let ratio = rd / w;
    assert!((ratio - 8.0).abs() < 0.5, "{rd} reads, {w} writes");

    // Equal weights, no flow_sleep (butterfly.fio's shape): half each.
    let text = "[global]\nsize=4m\nbs=4k\n[forward]\nrw=read\nflow=2\n\
                [backward]\nrw=read:-8k\nflow=2\n";
    let jobs = JobFile::parse(text, "butterfly.fio").expect("parse");
    let r = sim(&jobs, "hdd-7200", "mq-deadline", &[]);
    let (a, b) = (r.jobs[0].dirs[0].ios, r.jobs[1].dirs[0].ios);
    assert!(a > 0 && b > 0, "{a} {b}");
}

#[test]
fn cmdprio_percentage_gives_that_share_its_priority() {
    let text = "[j]\nrw=randread\nbs=128k\nsize=64m\niodepth=8\nprioclass=3\n\
                cmdprio_percentage=20\ncmdprio_class=1\n";
    let jobs = JobFile::parse(text, "pct.fio").expect("parse");
    let r = sim(&jobs, "hdd-7200", "mq-deadline", &[]);
    let d = &r.jobs[0].dirs[0];
    let prios: Vec<(u16, u64)> = d.prios.iter().map(|p| (p.prio, p.lat.count())).collect();
    // fio's order: the job's own priority (IDLE 0), then the command one
    // (RT 0).
    assert_eq!(prios.len(), 2, "{prios:?}");
    assert_eq!((prios[0].0, prios[1].0), (3 << 13, 1 << 13));
    let share = prios[1].1 as f64 / d.ios as f64;
    assert!((share - 0.2).abs() < 0.05, "{prios:?}");
    // mq-deadline serves the real-time ones first.
    assert!(d.prios[1].lat.mean() < d.prios[0].lat.mean());
}
