//! Review of the direct-I/O path: one test per bug found. Each names the
//! rule of README "The direct-I/O path" it checks.
//!
//! Tests marked `#[ignore]` show a bug whose fix needs an API change (see the
//! reason on each); run them with `cargo test -p elevator-io --test review --
//! --ignored`.

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use common::{buf, config, mem_device};
use elevator_core::{Device, DeviceIo, DeviceStats, IoContext, Limits, Nanos, Outcome, Status};
use elevator_io::{
    AlignedBuf, Alignment, Completion, DataDevice, DataSegment, DeviceError, DioFailure,
    DioRequest, Engine, FaultDevice, FaultSpec, FileDevice, FileOptions, IoBuf, MemDevice,
};

fn mem(kib: u64, queue_depth: u32) -> MemDevice {
    mem_device(kib << 10, queue_depth)
}

/// A buffer that counts how many of its kind have been freed.
#[derive(Debug)]
struct Counted {
    buf: AlignedBuf,
    freed: Rc<Cell<usize>>,
}

impl Counted {
    fn new(len: usize, freed: &Rc<Cell<usize>>) -> Counted {
        Counted {
            buf: buf(len),
            freed: freed.clone(),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.freed.set(self.freed.get() + 1);
    }
}

// SAFETY: all of it is the inner AlignedBuf's memory, which keeps the
// trait's promises.
unsafe impl IoBuf for Counted {
    fn as_ptr(&self) -> *const u8 {
        self.buf.as_ptr()
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.as_mut_ptr()
    }
    fn len(&self) -> usize {
        self.buf.len()
    }
}

// ---------------------------------------------------------------------------
// 1. A flush cancelled before it reached the queue was reported as done.
// ---------------------------------------------------------------------------

/// README: shutting down "fails what has not reached the queue with
/// `Cancelled`". A flush that was still waiting for a tag never ran, so its
/// caller must not be told that its writes are durable.
#[test]
fn a_flush_cancelled_while_waiting_for_a_tag_is_not_reported_done() {
    for sched in ["none", "mq-deadline", "bfq"] {
        let mut e: Engine<MemDevice> = Engine::new(
            mem(1024, 2),
            &config(
                sched,
                &[
                    ("nr_requests", "4"),
                    ("max_sectors_kb", "4"),
                    ("nomerges", "2"),
                ],
            ),
        )
        .expect("engine");
        // Eight 4 KiB bios, four tags: the write waits for tags, and the
        // flush waits behind it.
        e.submit(DioRequest::write(0, vec![buf(32768)], 1))
            .expect("accepted");
        e.submit(DioRequest::flush(2)).expect("accepted");
        assert!(e.stats().tag_waits >= 2, "{sched}: both wait for tags");
        e.cancel();
        let mut out = Vec::new();
        e.drain(&mut out).expect("drain");
        assert_eq!(out.len(), 2);
        let flush = out.iter().find(|c| c.user_data == 2).expect("flush");
        assert_eq!(
            flush.result,
            Err(DioFailure {
                done: 0,
                status: Status::Cancelled
            }),
            "{sched}: a flush that never reached the device reported success"
        );
    }
}

// ---------------------------------------------------------------------------
// 2. Requests held on the caller's plug: drain stalls, Drop leaks.
// ---------------------------------------------------------------------------

/// README: "The loop never busy-polls"; `drain` runs "until every accepted
/// request has completed". With the caller's plug held, poll(None) returned
/// at once without sleeping or dispatching, and drain said Stalled though
/// nothing was wrong (Linux flushes a plug whenever the task sleeps).
#[test]
fn drain_with_the_plug_held_completes_everything() {
    let mut e: Engine<MemDevice> =
        Engine::new(mem(1024, 4), &config("mq-deadline", &[])).expect("engine");
    e.plug();
    for id in 0..4u64 {
        e.submit(DioRequest::write(id * 8192, vec![buf(4096)], id))
            .expect("accepted");
    }
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
    out.clear();
    e.drain(&mut out).expect("drain");
    assert_eq!(out.len(), 2);
}

/// The same with requests waiting for tags behind the plug: as completions
/// free tags, the waiting requests' bios go onto the (still held) plug, and
/// drain must not call that a stall.
#[test]
fn drain_with_the_plug_held_and_tag_waits_completes_everything() {
    for sched in elevator_core::SCHEDULER_NAMES {
        let mut e: Engine<MemDevice> = Engine::new(
            mem(1024, 2),
            &config(
                sched,
                &[
                    ("nr_requests", "4"),
                    ("max_sectors_kb", "4"),
                    ("nomerges", "2"),
                ],
            ),
        )
        .expect("engine");
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

/// README: "No buffer is held after completion, on any path, including ...
/// Drop". Dropping an engine whose caller still held the plug found nothing
/// it could drain (the requests sat on the plug) and leaked every buffer
/// although none had ever reached the device.
#[test]
fn dropping_a_plugged_engine_frees_every_buffer() {
    let freed = Rc::new(Cell::new(0));
    let mut e: Engine<MemDevice, Counted> =
        Engine::new(mem(1024, 4), &config("mq-deadline", &[])).expect("engine");
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
    let mut e: Engine<MemDevice> = Engine::new(mem(1024, 4), &config("bfq", &[])).expect("engine");
    e.plug();
    for id in 0..6u64 {
        e.submit(DioRequest::write(id * 8192, vec![buf(4096)], id))
            .expect("accepted");
    }
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

// ---------------------------------------------------------------------------
// 3. One bad completion from the device lost every completion after it.
// ---------------------------------------------------------------------------

/// A memory device that once reports a tag the queue never dispatched,
/// before the real completions.
struct Stray {
    inner: MemDevice,
    fired: bool,
}

impl Device for Stray {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn limits(&self) -> Limits {
        self.inner.limits()
    }
    fn queue_depth(&self) -> u32 {
        self.inner.queue_depth()
    }
    fn rotational(&self) -> bool {
        false
    }
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.inner.submit(io, now)
    }
    fn next_completion(&self) -> Option<Nanos> {
        None
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        if !self.fired && self.inner.outstanding() > 0 {
            self.fired = true;
            done(9999, Outcome::Done);
        }
        self.inner.complete(now, done)
    }
    fn outstanding(&self) -> u32 {
        self.inner.outstanding()
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
}

impl DataDevice for Stray {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        // SAFETY: passed on; our caller keeps the contract.
        unsafe { self.inner.submit_data(io, data, now) }
    }
    fn kick(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        self.inner.wait(timeout)
    }
    fn cancel_all(&mut self) {}
    fn alignment(&self) -> Alignment {
        self.inner.alignment()
    }
}

/// README: "every request completes exactly once", and "no buffer is held
/// after completion, on any path, including ... errors returned from
/// poll/drain midway". `poll` reports the stray completion as an error, but
/// the real completions the device handed over in the same batch must not
/// be dropped on the floor: before, those requests never completed, drain
/// said Stalled, and Drop leaked their buffers.
#[test]
fn a_stray_completion_does_not_lose_the_real_ones() {
    let dev = Stray {
        inner: mem(1024, 8),
        fired: false,
    };
    let mut e: Engine<Stray> =
        Engine::new(dev, &config("none", &[("nomerges", "2")])).expect("engine");
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
// 4. A flush whose `len` field was set reported that many bytes moved.
// ---------------------------------------------------------------------------

/// `DioRequest::len` is "0 for a flush"; the field is public, and a flush
/// given a length moved no bytes, yet completed with `Ok(len)`.
#[test]
fn a_flush_moves_no_bytes_whatever_len_says() {
    let mut e: Engine<MemDevice> = Engine::new(mem(1024, 4), &config("none", &[])).expect("engine");
    let mut flush = DioRequest::<AlignedBuf>::flush(1);
    flush.len = 1 << 20;
    e.submit(flush).expect("accepted");
    let mut out = Vec::new();
    e.drain(&mut out).expect("drain");
    assert_eq!(out[0].result, Ok(0));
}

// ---------------------------------------------------------------------------
// 5. The fault device replaced the real device's status with EIO.
// ---------------------------------------------------------------------------

/// A memory device on which every write fails with ENOSPC at its first byte.
struct Full {
    inner: MemDevice,
    writes: Vec<bool>,
}

impl Device for Full {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn limits(&self) -> Limits {
        self.inner.limits()
    }
    fn queue_depth(&self) -> u32 {
        self.inner.queue_depth()
    }
    fn rotational(&self) -> bool {
        false
    }
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.inner.submit(io, now)
    }
    fn next_completion(&self) -> Option<Nanos> {
        None
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        let writes = &self.writes;
        self.inner.complete(now, &mut |tag, outcome| {
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
    fn outstanding(&self) -> u32 {
        self.inner.outstanding()
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
}

impl DataDevice for Full {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        let i = io.tag as usize;
        if self.writes.len() <= i {
            self.writes.resize(i + 1, false);
        }
        self.writes[i] = io.op == elevator_core::Op::Write;
        // SAFETY: passed on; our caller keeps the contract.
        unsafe { self.inner.submit_data(io, data, now) }
    }
    fn kick(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        self.inner.wait(timeout)
    }
    fn cancel_all(&mut self) {}
    fn alignment(&self) -> Alignment {
        self.inner.alignment()
    }
}

/// README: the caller gets "the status of the first failed bio in file
/// order". The device underneath failed the write at byte 0 with ENOSPC;
/// the injected bad sector is at byte 2048. The first failure is ENOSPC, but
/// the fault device turned every failure it touched into EIO (and likewise
/// turned `Cancelled` at shutdown into EIO).
#[test]
fn faults_keep_the_status_of_an_earlier_real_failure() {
    let faults = FaultSpec {
        bad_sectors: vec![(4, 5)],
        ..FaultSpec::default()
    };
    let dev = FaultDevice::new(
        Full {
            inner: mem(1024, 4),
            writes: Vec::new(),
        },
        &faults,
    );
    let mut e: Engine<FaultDevice<Full>> = Engine::new(dev, &config("none", &[])).expect("engine");
    e.submit(DioRequest::write(0, vec![buf(4096)], 1))
        .expect("accepted");
    let mut out = Vec::new();
    e.drain(&mut out).expect("drain");
    assert_eq!(
        out[0].result,
        Err(DioFailure {
            done: 0,
            status: Status::NoSpace
        })
    );
    // A read (which the device serves) still fails at the bad sector.
    e.submit(DioRequest::read(0, vec![buf(4096)], 2))
        .expect("accepted");
    out.clear();
    e.drain(&mut out).expect("drain");
    assert_eq!(
        out[0].result,
        Err(DioFailure {
            done: 2048,
            status: Status::IoError
        })
    );
}

// ---------------------------------------------------------------------------
// 6. A long timeout made io_uring return at once: busy polling.
// ---------------------------------------------------------------------------

/// A scratch file, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str, bytes: u64) -> Option<Scratch> {
        Scratch::in_dir("/dev/shm", name, bytes)
    }

    fn in_dir(dir: &str, name: &str, bytes: u64) -> Option<Scratch> {
        let path = std::path::Path::new(dir)
            .join(format!("elevator-io-review-{name}-{}", std::process::id()));
        let f = std::fs::File::create(&path).ok()?;
        f.set_len(bytes).ok()?;
        Some(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// README: "It sleeps in `io_uring_enter` until a completion arrives, or
/// until a timeout". A timeout beyond what the kernel's clock holds (here
/// `Duration::MAX`, "no limit" to many callers; a scheduler's or a job's
/// far-off deadline is the same) overflowed in the kernel into a time in the
/// past: the wait returned at once with nothing done, and a caller looping on
/// `poll` spun. With a read in flight, one poll must come back with it.
#[test]
fn a_very_long_timeout_still_sleeps_until_a_completion() {
    let Some(file) = Scratch::new("timeout", 1 << 20) else {
        common::skip(module_path!(), "cannot create a file in /dev/shm");
        return;
    };
    let dev = FileDevice::open(&file.0, &FileOptions::default()).expect("open");
    let mut e: Engine<FileDevice> = Engine::new(dev, &config("none", &[])).expect("engine");
    let mut out: Vec<Completion<AlignedBuf>> = Vec::new();
    for round in 0..50u64 {
        e.submit(DioRequest::read(0, vec![buf(4096)], round))
            .expect("accepted");
        let got = e.poll(Some(Duration::MAX), &mut out).expect("poll");
        assert_eq!(got, 1, "round {round}: poll returned without a completion");
    }
}

// ---------------------------------------------------------------------------
// 7. A segment cut mid-way left the next piece off the DMA alignment.
// ---------------------------------------------------------------------------

/// A memory device whose DMA alignment (4096) is larger than its logical
/// block (512), which fails any I/O with a segment off that alignment, as
/// the kernel does (EINVAL) for O_DIRECT.
struct Picky {
    inner: MemDevice,
    misaligned: Rc<Cell<usize>>,
}

impl Device for Picky {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn limits(&self) -> Limits {
        self.inner.limits()
    }
    fn queue_depth(&self) -> u32 {
        self.inner.queue_depth()
    }
    fn rotational(&self) -> bool {
        false
    }
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.inner.submit(io, now)
    }
    fn next_completion(&self) -> Option<Nanos> {
        None
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        self.inner.complete(now, done)
    }
    fn outstanding(&self) -> u32 {
        self.inner.outstanding()
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
}

impl DataDevice for Picky {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        if data.iter().any(|s| !(s.addr as usize).is_multiple_of(4096)) {
            self.misaligned.set(self.misaligned.get() + 1);
            // Refused without touching memory: a read through the data-less
            // path completes with NotSupported.
            let failed = DeviceIo {
                op: elevator_core::Op::Read,
                ..io
            };
            self.inner.submit(failed, now);
            return;
        }
        // SAFETY: passed on; our caller keeps the contract.
        unsafe { self.inner.submit_data(io, data, now) }
    }
    fn kick(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        self.inner.wait(timeout)
    }
    fn cancel_all(&mut self) {}
    fn alignment(&self) -> Alignment {
        Alignment {
            offset: 512,
            memory: 4096,
        }
    }
}

/// README: "every segment's address ... checked against the device's
/// alignment". The caller's segments were, but the engine then cut a segment
/// at `max_piece_bytes` (here `max_sectors_kb=6`: 6 KiB pieces) and handed
/// the device a piece starting 6 KiB into a buffer: off the 4 KiB DMA
/// alignment, which O_DIRECT refuses with EINVAL. Pieces that end inside a
/// segment must end on the memory alignment.
#[test]
fn pieces_cut_from_a_segment_keep_the_memory_alignment() {
    let misaligned = Rc::new(Cell::new(0));
    let dev = Picky {
        inner: mem(1024, 4),
        misaligned: misaligned.clone(),
    };
    let mut e: Engine<Picky> = Engine::new(
        dev,
        &config("none", &[("max_sectors_kb", "6"), ("nomerges", "2")]),
    )
    .expect("engine");
    let mut data = buf(65536);
    data.fill(0x5A);
    e.submit(DioRequest::write(0, vec![data], 1))
        .expect("accepted");
    let mut out = Vec::new();
    e.drain(&mut out).expect("drain");
    assert_eq!(misaligned.get(), 0, "pieces off the DMA alignment");
    assert_eq!(out[0].result, Ok(65536));
    assert!(
        e.device().inner.contents()[..65536]
            .iter()
            .all(|&b| b == 0x5A)
    );
}

// 8. `Engine::queue_mut` used to hand out the whole queue, so safe code
//    could requeue or complete a request the device still held (handing its
//    buffers back while the kernel could write them) or submit bios with
//    tokens the engine never issued. It is gone: the engine offers
//    `set_tunable` and `context_gone` instead, and the queue is read-only
//    from outside.

// ---------------------------------------------------------------------------
// Not bugs, but rules the review checked and found kept (kept as tests).
// ---------------------------------------------------------------------------

/// max_sectors_kb and nr_requests changed mid-flight: every request still
/// completes once, with the right data.
#[test]
fn tunables_changed_mid_flight() {
    let mut e: Engine<MemDevice> = Engine::new(
        mem(1024, 2),
        &config("mq-deadline", &[("nr_requests", "4")]),
    )
    .expect("engine");
    let mut out = Vec::new();
    for id in 0..8u64 {
        let mut b = buf(65536);
        b.fill(id as u8 + 1);
        e.submit(DioRequest::write(id * 65536, vec![b], id).with_ctx(IoContext(id as u32)))
            .expect("accepted");
        let kb = ["4", "1", "64", "2"][id as usize % 4];
        e.set_tunable("max_sectors_kb", kb).expect("max_sectors_kb");
        // Refused while requests exist; harmless.
        let _ = e.set_tunable("nr_requests", "8");
        e.poll(Some(Duration::ZERO), &mut out).expect("poll");
    }
    e.drain(&mut out).expect("drain");
    assert_eq!(out.len(), 8);
    assert!(out.iter().all(|c| c.result == Ok(65536)));
    let d = e.device().contents();
    for id in 0..8usize {
        assert!(
            d[id * 65536..(id + 1) * 65536]
                .iter()
                .all(|&b| b == id as u8 + 1)
        );
    }
}

/// Random mixes of every kind of request (reads and writes of 0..=4
/// segments, flushes with flags, discards, write-zeroes, zero-length ones),
/// with random faults, the caller's plug taken and released at random,
/// `max_sectors_kb` changed mid-flight, and an end by drain, cancel or drop:
/// every accepted request completes exactly once with all its buffers,
/// `done` stays within the request on a block boundary, nothing stalls, and
/// every buffer is freed.
fn random_mix<D: DataDevice>(dev: D, sched: &str, seed: u64) {
    use elevator_core::BioFlags;
    use elevator_fio::rng::Rng;
    use std::collections::HashMap;

    let mut rng = Rng::new(seed);
    let nr = ["4", "8", "32"][rng.below(3) as usize];
    let nomerges = ["0", "1", "2"][rng.below(3) as usize];
    let faults = FaultSpec {
        fail_rate: [0.0, 0.05, 0.3][rng.below(3) as usize],
        bad_sectors: vec![(704, 712)],
        seed,
    };
    let units = dev.limits().capacity * 512 / 4096;
    let freed = Rc::new(Cell::new(0usize));
    let mut given = 0usize;
    let mut e: Engine<FaultDevice<D>, Counted> = Engine::new(
        FaultDevice::new(dev, &faults),
        &config(sched, &[("nr_requests", nr), ("nomerges", nomerges)]),
    )
    .expect("engine");
    let unit = u64::from(e.alignment().offset.max(e.alignment().memory));
    assert!(unit <= 4096);
    let mut lens: HashMap<u64, (u64, usize)> = HashMap::new();
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut out = Vec::new();
    let check = |out: &mut Vec<Completion<Counted>>,
                 seen: &mut HashMap<u64, usize>,
                 lens: &HashMap<u64, (u64, usize)>| {
        for c in out.drain(..) {
            let (len, nbufs) = lens[&c.user_data];
            *seen.entry(c.user_data).or_insert(0) += 1;
            assert_eq!(c.bufs.len(), nbufs, "{sched} seed {seed}: buffers back");
            match c.result {
                Ok(n) => assert_eq!(n, len, "{sched} seed {seed}"),
                Err(f) => {
                    assert!(f.done <= len && f.done % 512 == 0, "{sched}: {f:?}");
                    assert!(len == 0 || f.done < len, "{sched}: {f:?} of {len}");
                }
            }
        }
    };
    let ops = 40 + rng.below(80);
    for id in 0..ops {
        match rng.below(10) {
            0 => e.plug(),
            1 => e.unplug(),
            2 => {
                // Below the block size it is refused; that is fine.
                let kb = ["1", "2", "4", "16", "128"][rng.below(5) as usize];
                let _ = e.set_tunable("max_sectors_kb", kb);
            }
            _ => {}
        }
        let off = rng.below(units - 16) * 4096;
        let blocks = |rng: &mut Rng, n: u64| rng.below(n) * 4096;
        let req = match rng.below(8) {
            0 => {
                let flags = [
                    BioFlags::NONE,
                    BioFlags::FUA,
                    BioFlags::PREFLUSH,
                    BioFlags::FUA | BioFlags::PREFLUSH,
                ][rng.below(4) as usize];
                DioRequest::flush(id).with_flags(flags)
            }
            1 => DioRequest::discard(off, blocks(&mut rng, 8), id),
            2 => DioRequest::write_zeroes(off, blocks(&mut rng, 8), id),
            op => {
                let nseg = rng.below(5) as usize;
                let bufs: Vec<Counted> = (0..nseg)
                    .map(|_| Counted::new(blocks(&mut rng, 4) as usize, &freed))
                    .collect();
                given += nseg;
                let r = if op % 2 == 0 {
                    DioRequest::read(off, bufs, id)
                } else {
                    DioRequest::write(off, bufs, id)
                };
                let fua = if rng.below(8) == 0 {
                    BioFlags::FUA
                } else {
                    BioFlags::NONE
                };
                r.with_ctx(IoContext(rng.below(4) as u32)).with_flags(fua)
            }
        };
        let len = req.bytes();
        let nbufs = req.bufs.len();
        match e.submit(req) {
            Ok(()) => {
                lens.insert(id, (len, nbufs));
            }
            Err(r) => panic!("{sched} seed {seed}: refused: {}", r.error),
        }
        if rng.below(4) == 0 {
            e.poll(Some(Duration::ZERO), &mut out).expect("poll");
            check(&mut out, &mut seen, &lens);
        }
    }
    match rng.below(3) {
        0 => {
            e.drain(&mut out)
                .unwrap_or_else(|err| panic!("{sched} seed {seed}: {err}"));
        }
        1 => {
            e.cancel();
            e.drain(&mut out)
                .unwrap_or_else(|err| panic!("{sched} seed {seed}: {err}"));
        }
        _ => {}
    }
    check(&mut out, &mut seen, &lens);
    let in_flight = e.in_flight() as usize;
    drop(e);
    assert_eq!(
        seen.len() + in_flight,
        lens.len(),
        "{sched} seed {seed}: requests lost"
    );
    assert!(seen.values().all(|&n| n == 1), "{sched} seed {seed}: twice");
    assert_eq!(freed.get(), given, "{sched} seed {seed}: buffers leaked");
}

#[test]
fn random_mixes_on_memory() {
    for (i, sched) in elevator_core::SCHEDULER_NAMES.iter().enumerate() {
        for seed in 0..40u64 {
            let depth = 1 + (seed % 8) as u32;
            random_mix(mem(1024, depth), sched, seed * 31 + i as u64);
        }
    }
}

/// The same through io_uring on tmpfs and on the root file system:
/// cancellation with I/O in the kernel, PREFLUSH links, write-zeroes (tmpfs
/// falls back to hole punching).
#[test]
fn random_mixes_on_files() {
    for dir in ["/dev/shm", "/var/tmp"] {
        let Some(file) = Scratch::in_dir(dir, "mix", 1 << 20) else {
            common::skip(module_path!(), &format!("cannot create a file in {dir}"));
            continue;
        };
        random_mixes_on(&file);
    }
}

fn random_mixes_on(file: &Scratch) {
    for (i, sched) in ["none", "mq-deadline", "bfq", "kyber"].iter().enumerate() {
        for seed in 0..6u64 {
            let dev = FileDevice::open(
                &file.0,
                &FileOptions {
                    queue_depth: Some(1 + (seed % 8) as u32 * 4),
                    read_only: false,
                },
            )
            .expect("open");
            random_mix(dev, sched, seed * 17 + i as u64);
        }
    }
}

// ---------------------------------------------------------------------------
// "No heap allocation per I/O once warm", measured.
// ---------------------------------------------------------------------------

mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static ALLOCS: Cell<u64> = const { Cell::new(0) };
    }

    /// The system allocator, counting allocations per thread.
    pub struct Counting;

    fn count() {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    }

    /// Allocations made by this thread so far.
    pub fn allocations() -> u64 {
        ALLOCS.with(Cell::get)
    }

    // SAFETY: every call is passed to the system allocator unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: as the caller promised us.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: as the caller promised us.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count();
            // SAFETY: as the caller promised us.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as the caller promised us.
            unsafe { System.dealloc(ptr, layout) }
        }
    }
}

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// README: "no heap allocation per I/O once warm". Requests of every kind,
/// under the caller's plug and not, with tag waits, recycled through the
/// engine: after a warm-up, a thousand more allocate nothing.
#[test]
fn no_allocation_per_io_once_warm() {
    use elevator_core::BioFlags;
    use elevator_fio::rng::Rng;

    let a = counting::allocations();
    std::hint::black_box(vec![0u8; 64]);
    assert!(counting::allocations() > a, "the allocator counts");
    for sched in elevator_core::SCHEDULER_NAMES {
        let mut e: Engine<MemDevice> = Engine::new(
            mem(1024, 4),
            &config(sched, &[("nr_requests", "8"), ("max_sectors_kb", "8")]),
        )
        .expect("engine");
        let mut rng = Rng::new(5);
        let mut spare: Vec<Vec<AlignedBuf>> = (0..8)
            .map(|_| {
                let mut v = Vec::with_capacity(4);
                v.push(buf(16384));
                v.push(buf(4096));
                v
            })
            .collect();
        let mut out: Vec<Completion<AlignedBuf>> = Vec::with_capacity(16);
        let round = |e: &mut Engine<MemDevice>,
                     spare: &mut Vec<Vec<AlignedBuf>>,
                     out: &mut Vec<Completion<AlignedBuf>>,
                     rng: &mut Rng| {
            let plug = rng.below(2) == 0;
            if plug {
                e.plug();
            }
            for id in 0..8u64 {
                let off = rng.below(200) * 4096;
                let ctx = IoContext(rng.below(3) as u32);
                let req = match id {
                    6 => DioRequest::discard(off, 8192, id),
                    7 => DioRequest::flush(id).with_flags(BioFlags::PREFLUSH),
                    _ => {
                        let bufs = spare.pop().expect("spare buffers");
                        if id % 2 == 0 {
                            DioRequest::write(off, bufs, id)
                        } else {
                            DioRequest::read(off, bufs, id)
                        }
                    }
                };
                e.submit(req.with_ctx(ctx)).expect("accepted");
            }
            if plug {
                e.unplug();
            }
            e.drain(out).expect("drain");
            for c in out.drain(..) {
                assert!(c.result.is_ok(), "{sched}: {:?}", c.result);
                if !c.bufs.is_empty() {
                    spare.push(c.bufs);
                }
            }
        };
        for _ in 0..200 {
            round(&mut e, &mut spare, &mut out, &mut rng);
        }
        let before = counting::allocations();
        for _ in 0..125 {
            round(&mut e, &mut spare, &mut out, &mut rng);
        }
        let allocs = counting::allocations() - before;
        assert_eq!(allocs, 0, "{sched}: {allocs} allocations in 1000 warm I/Os");
    }
}

/// The same through io_uring on tmpfs.
#[test]
fn no_allocation_per_io_once_warm_on_a_file() {
    let Some(file) = Scratch::new("alloc", 1 << 20) else {
        common::skip(module_path!(), "cannot create a file in /dev/shm");
        return;
    };
    let dev = FileDevice::open(&file.0, &FileOptions::default()).expect("open");
    let mut e: Engine<FileDevice> =
        Engine::new(dev, &config("mq-deadline", &[("submit_batch", "0")])).expect("engine");
    let mut bufs: Vec<Vec<AlignedBuf>> = (0..8).map(|_| vec![buf(8192)]).collect();
    let mut out: Vec<Completion<AlignedBuf>> = Vec::with_capacity(16);
    let mut before = 0;
    for round in 0..300u64 {
        if round == 100 {
            before = counting::allocations();
        }
        for id in 0..8u64 {
            let b = bufs.pop().expect("buffers");
            let off = (round * 8 + id) % 120 * 8192;
            let req = if id % 2 == 0 {
                DioRequest::write(off, b, id)
            } else {
                DioRequest::read(off, b, id)
            };
            e.submit(req).expect("accepted");
        }
        e.submit(DioRequest::flush(9)).expect("accepted");
        e.drain(&mut out).expect("drain");
        for c in out.drain(..) {
            assert!(c.result.is_ok());
            if !c.bufs.is_empty() {
                bufs.push(c.bufs);
            }
        }
    }
    let allocs = counting::allocations() - before;
    assert_eq!(allocs, 0, "{allocs} allocations in 1800 warm I/Os");
}
