//! Tunables set by name: a refused set changes nothing.

use elevator_core::queue::QUEUE_TUNABLES;
use elevator_core::{
    Bio, Dispatch, Outcome, Queue, QueueConfig, SCHEDULER_NAMES, SubmitError, TunableError,
    TunableSpec,
};

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
