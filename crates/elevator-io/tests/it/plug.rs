//! The caller's plug ([`Engine::plug`]): requests held on it are
//! dispatched whenever the engine has to wait for them, and come back, with
//! their buffers, through drain, cancel and Drop like any others.

use crate::common;

use std::cell::Cell;
use std::rc::Rc;

use common::{Counted, buf, drained, engine, mem, short_of_tags};
use elevator_core::Status;
use elevator_io::{DioRequest, Engine, MemDevice};

/// An engine under `sched` holding `n` 4 KiB writes, 8 KiB apart, on the
/// caller's plug.
fn plugged(sched: &str, n: u64) -> Engine<MemDevice> {
    let mut e: Engine<MemDevice> = engine(mem(1024, 4), sched, &[]);
    e.plug();
    for id in 0..n {
        e.submit(DioRequest::write(id * 8192, vec![buf(4096)], id))
            .expect("accepted");
    }
    e
}

/// docs/io.md: "The loop never busy-polls"; `drain` runs "until every accepted
/// request has completed". With the caller's plug held, poll(None) must
/// still dispatch and sleep, and drain must not say Stalled (Linux flushes a
/// plug whenever the task sleeps).
#[test]
fn drain_with_the_plug_held_completes_everything() {
    let mut e = plugged("mq-deadline", 4);
    let mut out = Vec::new();
    e.drain(&mut out)
        .expect("drain must flush the plug rather than stall");
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|c| c.result == Ok(4096)));
    // The plug is still the caller's: later submissions still merge under
    // it until unplug.
    e.submit(DioRequest::write(0, vec![buf(4096)], 10))
        .expect("accepted");
    e.submit(DioRequest::write(4096, vec![buf(4096)], 11))
        .expect("accepted");
    e.unplug();
    assert_eq!(drained(&mut e).len(), 2);
}

/// The same with requests waiting for tags behind the plug: as completions
/// free tags, the waiting requests' bios go onto the (still held) plug, and
/// drain must not call that a stall.
#[test]
fn drain_with_the_plug_held_and_tag_waits_completes_everything() {
    for sched in elevator_core::SCHEDULER_NAMES {
        let mut e = short_of_tags(sched);
        e.plug();
        for id in 0..8u64 {
            e.submit(DioRequest::write(id * 65536, vec![buf(16384)], id))
                .expect("accepted");
        }
        assert!(e.stats().tag_waits > 0);
        let mut out = Vec::new();
        e.drain(&mut out)
            .unwrap_or_else(|err| panic!("{sched}: {err}"));
        assert_eq!(out.len(), 8, "{sched}");
        assert!(out.iter().all(|c| c.result == Ok(16384)), "{sched}");
    }
}

/// docs/io.md: "No buffer is held after completion, on any path, including ...
/// Drop". Dropping an engine whose caller still holds the plug frees every
/// buffer sitting on the plug, although none has reached the device.
#[test]
fn dropping_a_plugged_engine_frees_every_buffer() {
    let freed = Rc::new(Cell::new(0));
    let mut e: Engine<MemDevice, Counted> = engine(mem(1024, 4), "mq-deadline", &[]);
    e.plug();
    for id in 0..6u64 {
        e.submit(DioRequest::write(
            id * 8192,
            vec![Counted::new(4096, &freed)],
            id,
        ))
        .expect("accepted");
    }
    drop(e);
    assert_eq!(freed.get(), 6, "buffers leaked by Drop");
}

/// The same through `cancel` + `drain`: every request comes back once, with
/// its buffers, and none stalls on the plug.
#[test]
fn cancel_with_the_plug_held_completes_everything() {
    let mut e = plugged("bfq", 6);
    e.cancel();
    let mut out = Vec::new();
    e.drain(&mut out).expect("drain after cancel");
    assert_eq!(out.len(), 6);
    for c in &out {
        assert_eq!(c.bufs.len(), 1);
        if let Err(f) = c.result {
            assert_eq!(f.status, Status::Cancelled);
        }
    }
}
