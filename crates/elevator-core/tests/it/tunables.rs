//! Tunables set by name: each is declared once, and a refused set changes
//! nothing. The property test drives two twin queues per scheduler with the
//! same random stream; one of them also gets refused sets (out of range, bad
//! text, read-only, unknown, beyond the device or `max_bios`, `nr_requests`
//! while requests exist), and both must behave identically throughout.

use crate::common;

use common::{Driven, Model, Setup, submit};
use elevator_core::queue::QUEUE_TUNABLES;
use elevator_core::{
    Bio, Dispatch, Limits, Outcome, Queue, QueueConfig, RequestId, SCHEDULER_NAMES, Status,
    SubmitError, TunableError, TunableSpec,
};
use proptest::prelude::*;

/// Dispatch and complete everything.
fn drain(q: &mut Queue) {
    loop {
        q.check_invariants();
        match q.dispatch(1) {
            Dispatch::Request(id) => q.complete(id, Outcome::Done, 2, &mut |_| {}).unwrap(),
            Dispatch::Empty => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(q.is_idle());
}

/// Regression: with `max_bios` below 128, `nr_requests=128` was refused
/// only after the request table and the merge hash had been rebuilt for 128,
/// so `get` said 128 while the scheduler still held 64, and with more than
/// 64 requests at once a submit panicked in mq-deadline's B+tree ("the len
/// is 64 but the index is 64"; with `max_bios` 64 the bio table ran out
/// first, so 100 shows the panic). The refusal is a range error and leaves
/// the queue exactly as it was.
#[test]
fn refused_nr_requests_over_max_bios_changes_nothing() {
    for max_bios in [64, 100] {
        let cfg = QueueConfig {
            max_bios: Some(max_bios),
            ..QueueConfig::default()
        };
        assert_eq!(cfg.nr_requests, 64);
        let mut q = Queue::with_scheduler(cfg, "mq-deadline").unwrap();
        let e = q.set("nr_requests", 128).unwrap_err();
        assert!(
            matches!(
                e,
                TunableError::OutOfRange {
                    name: "nr_requests",
                    value: 128,
                    min: 4,
                    max,
                    ..
                } if max == u64::from(max_bios)
            ),
            "{e:?}"
        );
        assert_eq!(q.get("nr_requests").unwrap(), 64);
        // More requests than 64 asked for at once: each bio is far from the
        // others, so none merges. The 65th is refused for want of a tag (or,
        // with max_bios 64, of a bio entry).
        let mut accepted = 0;
        for i in 0..100u64 {
            match q.submit(&Bio::read(i * 64, 4096, i), 0) {
                Ok(_) => accepted += 1,
                Err(SubmitError::NoTag { nr_requests, .. }) => assert_eq!(nr_requests, 64),
                Err(SubmitError::NoBioSlot { max_bios: 64, .. }) => {}
                Err(e) => panic!("unexpected {e}"),
            }
            q.check_invariants();
        }
        assert_eq!(accepted, 64);
        drain(&mut q);
        // Values within max_bios still take.
        q.set("nr_requests", 32).unwrap();
        assert_eq!(q.get("nr_requests").unwrap(), 32);
        q.set("nr_requests", u64::from(max_bios)).unwrap();
        assert_eq!(q.get("nr_requests").unwrap(), u64::from(max_bios));
    }
}

/// Each tunable is declared once: a new queue reads every scheduler tunable
/// at its listed default, and every settable value reads back as set.
#[test]
fn declared_defaults_read_back_and_values_round_trip() {
    for sched in SCHEDULER_NAMES {
        let mut q = Queue::with_scheduler(QueueConfig::default(), sched).unwrap();
        let specs: Vec<TunableSpec> = q.tunables().copied().collect();
        assert_eq!(
            specs[..QUEUE_TUNABLES.len()],
            QUEUE_TUNABLES,
            "the queue's tunables come first"
        );
        for s in &specs {
            assert!(
                s.read_only || (s.min..=s.max).contains(&s.default),
                "{sched} {}: default {} outside {}..={}",
                s.name,
                s.default,
                s.min,
                s.max
            );
            let own = specs.iter().filter(|o| o.name == s.name).count();
            assert_eq!(own, 1, "{sched}: {} declared twice", s.name);
        }
        for s in &specs[QUEUE_TUNABLES.len()..] {
            assert_eq!(q.get(s.name).unwrap(), s.default, "{sched} {}", s.name);
            for v in [s.min, s.max, s.default] {
                q.set(s.name, v).unwrap();
                assert_eq!(q.get(s.name).unwrap(), v, "{sched} {}", s.name);
            }
        }
        for (name, v) in [("nomerges", 2), ("nomerges", 0), ("max_sectors_kb", 64)] {
            q.set(name, v).unwrap();
            assert_eq!(q.get(name).unwrap(), v, "{sched} {name}");
        }
    }
}

/// The steps only one twin takes.
#[derive(Clone, Debug)]
enum Refusal {
    /// A set that must be refused.
    Refused { pick: u16, kind: u8, value: u64 },
    /// `nr_requests` to a value in range while requests exist (refused as
    /// busy); nothing when the queue is idle.
    ResizeWhileBusy(u16),
}

/// A completion fails (with EIO after its first block) or not.
type Step = common::Step<bool, Refusal>;

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => submit().prop_map(Step::Submit),
        1 => Just(Step::Plug),
        1 => Just(Step::Unplug),
        5 => Just(Step::Dispatch),
        4 => (any::<u8>(), proptest::bool::weighted(0.1))
            .prop_map(|(pick, fail)| Step::Complete { pick, fail }),
        1 => any::<u8>().prop_map(|pick| Step::Requeue { pick }),
        1 => (0u16..200).prop_map(Step::Advance),
        2 => (any::<u16>(), 0u8..4, any::<u64>())
            .prop_map(|(pick, kind, value)| Step::Extra(Refusal::Refused { pick, kind, value })),
        1 => any::<u16>().prop_map(|v| Step::Extra(Refusal::ResizeWhileBusy(v))),
    ]
}

/// A device of one block size, `max_hw_sectors_kb` 32 (a larger
/// `max_sectors_kb` is refused) and the default segments and chunks; with
/// `max_bios` 64, `nr_requests` above 64 is refused.
fn setup() -> impl Strategy<Value = Setup> {
    (
        prop_oneof![Just(512u32), Just(4096)],
        4u32..40,
        1u32..8,
        0u8..3,
        any::<bool>(),
    )
        .prop_map(
            |(lbs, nr_requests, queue_depth, nomerges, rotational)| Setup {
                lbs,
                max_sectors: 64,
                max_segments: Limits::default().max_segments,
                chunk_sectors: Limits::default().chunk_sectors,
                nr_requests,
                queue_depth,
                nomerges,
                rotational,
            },
        )
}

/// Try a set that must be refused on `q`; panics if it takes or if the queue
/// changed in any way (its whole state, as `Debug` prints it).
fn refuse(q: &mut Queue, pick: u16, kind: u8, value: u64) {
    let specs: Vec<TunableSpec> = q.tunables().copied().collect();
    let spec = specs[usize::from(pick) % specs.len()];
    let before = format!("{q:?}");
    let busy = !q.is_idle();
    let max_hw_kb = q.get("max_hw_sectors_kb").unwrap();
    let min_kb = u64::from(q.limits().logical_block_size / 1024);
    let mut text = false;
    let result = match kind {
        // Above the range.
        0 if spec.max < u64::MAX => q.set(spec.name, spec.max + 1 + value % (u64::MAX - spec.max)),
        // Below the range.
        1 if spec.min > 0 => q.set(spec.name, value % spec.min),
        // Beyond what this queue takes, though within the spec's range.
        3 if spec.name == "nr_requests" && busy => q.set(spec.name, 4 + value % 61),
        3 if spec.name == "nr_requests" => q.set(spec.name, 65 + value % (65536 - 64)),
        3 if spec.name == "max_sectors_kb" && value.is_multiple_of(2) => {
            q.set(spec.name, max_hw_kb + 1 + value % (spec.max - max_hw_kb))
        }
        3 if spec.name == "max_sectors_kb" && min_kb > 1 => {
            q.set(spec.name, 1 + value % (min_kb - 1))
        }
        3 if spec.read_only => q.set(spec.name, value),
        3 => q.set(&format!("{}_not", spec.name), value),
        // Text that is no value of this tunable.
        _ => {
            let texts = ["many", "-1", "", "1.5", "99999999999999999999", "4x", "2s5"];
            let bad = if spec.unit == elevator_core::Unit::Bool && value.is_multiple_of(3) {
                "2"
            } else {
                texts[(value % texts.len() as u64) as usize]
            };
            text = true;
            q.set_str(spec.name, bad)
        }
    };
    assert!(
        result.is_err(),
        "{} kind {kind} value {value} was not refused",
        spec.name
    );
    if spec.read_only && !text {
        assert!(
            matches!(result, Err(TunableError::ReadOnly { .. })),
            "{}: {result:?}",
            spec.name
        );
    }
    assert_eq!(
        before,
        format!("{q:?}"),
        "a refused {} changed the queue",
        spec.name
    );
}

/// One queue driven by the stream, with the log of everything it answered;
/// it takes the refusal steps only if `refusals`.
struct Twin {
    d: Driven,
    refusals: bool,
    log: Vec<String>,
}

impl Twin {
    fn new(setup: Setup, sched: &str, refusals: bool) -> Twin {
        Twin {
            d: Driven::new(setup, sched),
            refusals,
            log: vec![],
        }
    }

    fn dispatched(&mut self, id: RequestId) {
        let rq = self.d.q.request(id);
        let tokens: Vec<u64> = self.d.q.bios(id).map(|b| b.token).collect();
        self.log.push(format!(
            "dispatch {id:?} {} {} {tokens:?}",
            rq.sector(),
            rq.sectors()
        ));
        self.d.in_flight.push(id);
    }
}

impl Model for Twin {
    type Fail = bool;
    type Extra = Refusal;

    fn driven(&mut self) -> &mut Driven {
        &mut self.d
    }

    fn submit(&mut self, bio: Bio) {
        let r = self.d.q.submit(&bio, self.d.now);
        self.log.push(format!("submit {}: {r:?}", bio.token));
    }

    fn dispatch(&mut self) {
        match self.d.q.dispatch(self.d.now) {
            Dispatch::Request(id) => self.dispatched(id),
            other => self.log.push(format!("dispatch: {other:?}")),
        }
    }

    fn complete(&mut self, idx: usize, fail: bool) {
        let id = self.d.in_flight.swap_remove(idx);
        let outcome = if fail {
            Outcome::Failed {
                status: Status::IoError,
                good_bytes: u64::from(self.d.setup.lbs),
            }
        } else {
            Outcome::Done
        };
        let mut done = vec![];
        self.d
            .q
            .complete(id, outcome, self.d.now, &mut |c| done.push(c))
            .unwrap();
        self.log.push(format!("complete {id:?}: {done:?}"));
    }

    fn extra(&mut self, refusal: &Refusal) {
        if !self.refusals {
            return;
        }
        match *refusal {
            Refusal::Refused { pick, kind, value } => refuse(&mut self.d.q, pick, kind, value),
            Refusal::ResizeWhileBusy(v) => {
                if !self.d.q.is_idle() {
                    let before = format!("{:?}", self.d.q);
                    let r = self.d.q.set("nr_requests", 4 + u64::from(v) % 61);
                    assert!(matches!(r, Err(TunableError::Busy { .. })), "{r:?}");
                    assert_eq!(
                        before,
                        format!("{:?}", self.d.q),
                        "a refused resize changed the queue"
                    );
                }
            }
        }
    }

    fn drained(&mut self, id: RequestId) {
        self.dispatched(id);
    }

    fn stalled(&mut self) {
        self.complete(0, false);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// For every scheduler: a twin that also gets refused sets (of every
    /// tunable, of every kind, idle or busy) dispatches and completes exactly
    /// like the twin that never saw them, and ends in the same state.
    #[test]
    fn refused_sets_change_nothing(
        setup in setup(),
        steps in proptest::collection::vec(step(), 1..200),
    ) {
        for sched in SCHEDULER_NAMES {
            let mut a = Twin::new(setup, sched, true);
            let mut b = Twin::new(setup, sched, false);
            for s in &steps {
                a.run(s);
                b.run(s);
                prop_assert_eq!(a.log.last(), b.log.last(), "{} after {:?}", sched, s);
            }
            a.drain_queue(false);
            b.drain_queue(false);
            prop_assert_eq!(&a.log, &b.log, "{}", sched);
            prop_assert_eq!(format!("{:?}", a.d.q), format!("{:?}", b.d.q), "{}", sched);
        }
    }
}
