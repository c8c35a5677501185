//! What the engine's completions report: each request completes exactly
//! once, with the status and byte count of what really happened at the
//! device, and `poll` sleeps until there is something to report.

use crate::common;

use std::time::Duration;

use common::{Hook, Hooked, buf, drained, engine, mem, short_of_tags};
use elevator_core::{Device, DeviceIo, Nanos, Outcome, Status};
use elevator_io::{
    AlignedBuf, Completion, DataSegment, DioFailure, DioRequest, Engine, FaultDevice, FaultSpec,
    MemDevice,
};

/// The result of a request that failed with `status` after `done` bytes.
fn failed(done: u64, status: Status) -> Result<u64, DioFailure> {
    Err(DioFailure { done, status })
}

// ---------------------------------------------------------------------------
// A flush cancelled before it reached the queue is not reported done.
// ---------------------------------------------------------------------------

/// docs/io.md: shutting down "fails what has not reached the queue with
/// `Cancelled`". A flush that was still waiting for a tag never ran, so its
/// caller must not be told that its writes are durable.
#[test]
fn a_flush_cancelled_while_waiting_for_a_tag_is_not_reported_done() {
    for sched in ["none", "mq-deadline", "bfq"] {
        let mut e = short_of_tags(sched);
        // Eight 4 KiB bios, four tags: the write waits for tags, and the
        // flush waits behind it.
        e.submit(DioRequest::write(0, vec![buf(32768)], 1))
            .expect("accepted");
        e.submit(DioRequest::flush(2)).expect("accepted");
        assert!(e.stats().tag_waits >= 2, "{sched}: both wait for tags");
        e.cancel();
        let out = drained(&mut e);
        assert_eq!(out.len(), 2);
        let flush = out.iter().find(|c| c.user_data == 2).expect("flush");
        assert_eq!(
            flush.result,
            failed(0, Status::Cancelled),
            "{sched}: a flush that never reached the device reported success"
        );
    }
}

// ---------------------------------------------------------------------------
// A bad completion from the device does not lose the ones after it.
// ---------------------------------------------------------------------------

/// A memory device that once reports a tag the queue never dispatched,
/// before the real completions.
struct Stray {
    fired: bool,
}

impl Hook for Stray {
    fn complete(&mut self, inner: &mut MemDevice, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        if !self.fired && inner.outstanding() > 0 {
            self.fired = true;
            done(9999, Outcome::Done);
        }
        inner.complete(now, done)
    }
}

/// docs/io.md: "every request completes exactly once", and "no buffer is held
/// after completion, on any path, including ... errors returned from
/// poll/drain midway". `poll` reports the stray completion as an error, but
/// the real completions the device handed over in the same batch must not
/// be dropped on the floor (those requests would never complete, drain
/// would say Stalled, and Drop would leak their buffers).
#[test]
fn a_stray_completion_does_not_lose_the_real_ones() {
    let dev = Hooked::new(mem(1024, 8), Stray { fired: false });
    let mut e: Engine<Hooked<Stray>> = engine(dev, "none", &[("nomerges", "2")]);
    for id in 0..3u64 {
        e.submit(DioRequest::write(id * 65536, vec![buf(4096)], id))
            .expect("accepted");
    }
    let mut out = Vec::new();
    let mut errors = 0;
    for _ in 0..4 {
        if e.poll(Some(Duration::ZERO), &mut out).is_err() {
            errors += 1;
        }
    }
    assert_eq!(errors, 1, "the stray completion is reported");
    e.drain(&mut out)
        .expect("the real completions were processed");
    let mut ids: Vec<u64> = out.iter().map(|c| c.user_data).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![0, 1, 2]);
    assert!(out.iter().all(|c| c.result == Ok(4096)));
}

// ---------------------------------------------------------------------------
// A flush moves no bytes, whatever its `len` field says.
// ---------------------------------------------------------------------------

/// `DioRequest::len` is "0 for a flush"; the field is public, and a flush
/// given a length moved no bytes, yet completed with `Ok(len)`.
#[test]
fn a_flush_moves_no_bytes_whatever_len_says() {
    let mut e: Engine<MemDevice> = engine(mem(1024, 4), "none", &[]);
    let mut flush = DioRequest::<AlignedBuf>::flush(1);
    flush.len = 1 << 20;
    e.submit(flush).expect("accepted");
    let out = drained(&mut e);
    assert_eq!(out[0].result, Ok(0));
}

// ---------------------------------------------------------------------------
// A fault keeps the status of an earlier real failure.
// ---------------------------------------------------------------------------

/// A memory device on which every write fails with ENOSPC at its first byte.
struct Full {
    writes: Vec<bool>,
}

impl Hook for Full {
    fn complete(&mut self, inner: &mut MemDevice, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        let writes = &self.writes;
        inner.complete(now, &mut |tag, outcome| {
            if writes.get(tag as usize) == Some(&true) {
                done(
                    tag,
                    Outcome::Failed {
                        status: Status::NoSpace,
                        good_bytes: 0,
                    },
                );
            } else {
                done(tag, outcome);
            }
        })
    }

    fn submitting(&mut self, io: &DeviceIo, _: &[DataSegment]) -> bool {
        let i = io.tag as usize;
        if self.writes.len() <= i {
            self.writes.resize(i + 1, false);
        }
        self.writes[i] = io.op == elevator_core::Op::Write;
        true
    }
}

/// docs/io.md: the caller gets "the status of the first failed bio in file
/// order". The device underneath failed the write at byte 0 with ENOSPC;
/// the injected bad sector is at byte 2048. The first failure is ENOSPC, and
/// the fault device must not turn it (or `Cancelled` at shutdown) into EIO.
#[test]
fn faults_keep_the_status_of_an_earlier_real_failure() {
    let faults = FaultSpec {
        bad_sectors: vec![(4, 5)],
        ..FaultSpec::default()
    };
    let dev = FaultDevice::new(
        Hooked::new(mem(1024, 4), Full { writes: Vec::new() }),
        &faults,
    );
    let mut e: Engine<FaultDevice<Hooked<Full>>> = engine(dev, "none", &[]);
    e.submit(DioRequest::write(0, vec![buf(4096)], 1))
        .expect("accepted");
    let out = drained(&mut e);
    assert_eq!(out[0].result, failed(0, Status::NoSpace));
    // A read (which the device serves) still fails at the bad sector.
    e.submit(DioRequest::read(0, vec![buf(4096)], 2))
        .expect("accepted");
    let out = drained(&mut e);
    assert_eq!(out[0].result, failed(2048, Status::IoError));
}

// ---------------------------------------------------------------------------
// A long timeout still sleeps in the kernel: no busy polling.
// ---------------------------------------------------------------------------

/// docs/io.md: "It sleeps in `io_uring_enter` until a completion arrives, or
/// until a timeout". A timeout beyond what the kernel's clock holds (here
/// `Duration::MAX`, "no limit" to many callers; a scheduler's or a job's
/// far-off deadline is the same) must not overflow in the kernel into a
/// time in the past, which would end the wait at once with nothing done and
/// make a caller looping on `poll` spin. With a read in flight, one poll
/// must come back with it.
#[test]
fn a_very_long_timeout_still_sleeps_until_a_completion() {
    let Some((_file, mut e)) = common::engine_on_shm(module_path!(), "timeout", "none", &[]) else {
        return;
    };
    let mut out: Vec<Completion<AlignedBuf>> = Vec::new();
    for round in 0..50u64 {
        e.submit(DioRequest::read(0, vec![buf(4096)], round))
            .expect("accepted");
        let got = e.poll(Some(Duration::MAX), &mut out).expect("poll");
        assert_eq!(got, 1, "round {round}: poll returned without a completion");
    }
}
