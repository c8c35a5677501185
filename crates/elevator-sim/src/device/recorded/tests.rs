//! Tests of the recorded device: recorded times handed out per request in
//! order, the model for the rest (seeded), completions in time order, the
//! recording's depth, media tracking.

use super::*;
use elevator_core::BioFlags;
use elevator_trace::analyze::service_times::ServiceTimesBuilder;

fn io(tag: u32, op: Op, sector: u64, sectors: u32) -> DeviceIo {
    DeviceIo {
        tag,
        op,
        sector,
        sectors,
        flags: BioFlags::NONE,
    }
}

/// Writes of 8 sectors at 0 took 100 then 300 ns, a flush 50, reads of 16
/// sectors 1000..1100; at most 3 were in flight.
fn times() -> Arc<ServiceTimes> {
    let mut b = ServiceTimesBuilder::new();
    for _ in 0..3 {
        b.issued();
    }
    b.completed(Op::Write, 0, 8, 100);
    b.completed(Op::Write, 0, 8, 300);
    b.completed(Op::Flush, 0, 0, 50);
    for i in 0..100 {
        b.issued();
        b.completed(Op::Read, 1 << 20, 16, 1000 + i);
    }
    Arc::new(b.finish())
}

/// (tag, time) of every completion up to `until`, stepping through the
/// device's own completion times.
fn completions(d: &mut RecordedDevice, until: Nanos) -> Vec<(u32, Nanos)> {
    let mut out = Vec::new();
    while let Some(t) = d.next_completion()
        && t <= until
    {
        d.complete(t, &mut |tag, o| {
            assert_eq!(o, Outcome::Done);
            out.push((tag, t));
        });
    }
    out
}

#[test]
fn recorded_requests_take_their_recorded_times_in_turn() {
    let p = RecordedParams::new(times());
    assert_eq!(p.queue_depth, 3, "the recording's most in flight");
    let mut d = RecordedDevice::new(&p).expect("builds");
    d.submit(io(1, Op::Write, 0, 8), 0);
    d.submit(io(2, Op::Write, 0, 8), 10);
    d.submit(io(3, Op::Flush, 77, 0), 20);
    assert_eq!(d.outstanding(), 3);
    assert_eq!(completions(&mut d, 1000), vec![(3, 70), (1, 100), (2, 310)]);
    assert_eq!((d.matched(), d.modelled()), (3, 0));
    // The third write of the key was not recorded: the model serves it.
    d.submit(io(4, Op::Write, 0, 8), 1000);
    assert_eq!(d.modelled(), 1);
    assert_eq!(d.stats().ios, 3);
    let done = completions(&mut d, Nanos::MAX);
    assert_eq!(done.len(), 1);
    assert!(
        d.describe()
            .contains("3 requests matched, 1 from the model")
    );
}

#[test]
fn unrecorded_requests_draw_from_the_model_by_seed() {
    let served = |seed: u64| {
        let mut p = RecordedParams::new(times());
        p.set("seed", &seed.to_string()).expect("a seed");
        let mut d = RecordedDevice::new(&p).expect("builds");
        let mut out = Vec::new();
        for i in 0..20u32 {
            let t = Nanos::from(i) * 10_000;
            d.submit(io(i, Op::Read, u64::from(i) * 64, 16), t);
            out.extend(
                completions(&mut d, Nanos::MAX)
                    .into_iter()
                    .map(|(_, c)| c - t),
            );
        }
        assert_eq!(d.modelled(), 20);
        out
    };
    let a = served(1);
    assert!(a.iter().all(|t| (1000..1100).contains(t)), "{a:?}");
    assert_eq!(a, served(1), "a seed gives the same times");
    assert_ne!(a, served(2));
}

#[test]
fn ties_complete_in_submission_order() {
    let mut d = RecordedDevice::new(&RecordedParams::new(times())).expect("builds");
    // 100 + 0 and 50 + 50: both at 100.
    d.submit(io(7, Op::Write, 0, 8), 0);
    d.submit(io(8, Op::Flush, 0, 0), 50);
    assert_eq!(completions(&mut d, 100), vec![(7, 100), (8, 100)]);
    assert_eq!(d.stats().busy_ns, 100);
}

#[test]
fn its_parameters_are_checked_and_listed() {
    let mut p = RecordedParams::new(times());
    p.set("queue_depth", "0").expect("parses");
    assert!(RecordedDevice::new(&p).is_err());
    assert!(p.set("latency", "5").is_err(), "not a parameter of it");
    let spec = crate::device::ModelSpec {
        kind: crate::device::Model::Recorded(RecordedParams::new(times())),
        faults: Box::default(),
    };
    assert_eq!(spec.model(), "recorded");
    assert!(
        spec.params()
            .iter()
            .any(|v| v.name == "queue_depth" && v.value == 3.0)
    );
    assert!(spec.build().is_ok());
    assert!(
        crate::device::ModelSpec::parse("recorded").is_err(),
        "not a preset: it needs a trace"
    );
}

#[test]
fn a_write_is_on_the_media_when_it_completes() {
    let mut d = RecordedDevice::new(&RecordedParams::new(times())).expect("builds");
    d.track_media();
    d.submit(io(1, Op::Write, 0, 8), 0);
    d.complete(99, &mut |_, _| {});
    assert_eq!(d.media().expect("tracked").get(0), 0, "not yet");
    d.complete(100, &mut |_, _| {});
    assert_eq!(d.media().expect("tracked").get(7), 1);
}
