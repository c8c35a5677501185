//! The real-time engine over a memory device (and faults): data integrity
//! through every scheduler and `nomerges` value, the alignment rules, the
//! partial-failure rule, and cancellation at shutdown.

use crate::common;

use std::path::Path;

use common::{buf, config, mem_device};
use elevator_core::rng::Rng;
use elevator_core::{Device, IoContext, SCHEDULER_NAMES, Status};
use elevator_io::{
    AlignedBuf, Completion, DataDevice, DioError, DioRequest, Engine, FaultDevice, FaultSpec,
    FileDevice, FileOptions, MemDevice, Slice,
};

const LBS: usize = 512;

fn mem(mib: u64, queue_depth: u32) -> MemDevice {
    mem_device(mib << 20, queue_depth)
}

/// Run until everything accepted has completed.
fn drain<D: DataDevice, B: elevator_io::IoBuf>(e: &mut Engine<D, B>) -> Vec<Completion<B>> {
    let mut out = Vec::new();
    e.drain(&mut out).expect("drain");
    out
}

fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
    })
}

/// Fill `block` (one logical block at byte `offset`) with random data that
/// names its offset and ends with a checksum.
fn stamp(block: &mut [u8], offset: u64, rng: &mut Rng) {
    block[..8].copy_from_slice(&offset.to_le_bytes());
    for chunk in block[8..LBS - 8].chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes()[..chunk.len()]);
    }
    let sum = checksum(&block[..LBS - 8]);
    block[LBS - 8..].copy_from_slice(&sum.to_le_bytes());
}

/// A block read back is intact: its checksum holds and it names its offset
/// (or it was never written: all zeroes).
fn intact(block: &[u8], offset: u64) -> bool {
    if block.iter().all(|&b| b == 0) {
        return true;
    }
    let sum = u64::from_le_bytes(block[LBS - 8..].try_into().expect("8 bytes"));
    block[..8] == offset.to_le_bytes() && sum == checksum(&block[..LBS - 8])
}

/// Random writes (some adjacent, so they merge; some large, so they split;
/// several segments each) through `sched` at `nomerges` on `dev`, then
/// everything read back in other sizes: every byte must be what was last
/// written. I/O sizes are multiples of the device's block; every 512 bytes
/// carry their offset and a checksum. Returns the engine and what the device
/// must hold.
fn integrity<D: DataDevice>(
    dev: D,
    sched: &str,
    nomerges: u8,
    seed: u64,
    rounds: u64,
) -> (Engine<D>, Vec<u8>) {
    let dev_bytes = (dev.limits().capacity << 9) as usize;
    let nomerges = nomerges.to_string();
    let mut e: Engine<D> = Engine::new(
        dev,
        &config(sched, &[("nomerges", &nomerges), ("max_sectors_kb", "16")]),
    )
    .expect("engine");
    let unit = e.alignment().offset as usize;
    let units = dev_bytes / unit;
    let mut shadow = vec![0u8; dev_bytes];
    let mut rng = Rng::new(seed);
    for round in 0..rounds {
        // One batch of non-overlapping writes: a run of adjacent ones, then
        // scattered ones of up to 128 units.
        let mut taken: Vec<(usize, usize)> = Vec::new();
        e.plug();
        let mut cursor = rng.below((units - 64) as u64) as usize * unit;
        for i in 0..24 {
            let blocks = 1 + rng.below(if i % 3 == 0 { 128 } else { 8 }) as usize;
            let off = if i < 8 {
                cursor
            } else {
                rng.below((units - blocks) as u64) as usize * unit
            };
            let len = blocks * unit;
            if off + len > dev_bytes || taken.iter().any(|&(a, b)| off < b && a < off + len) {
                continue;
            }
            taken.push((off, off + len));
            cursor = off + len;
            // Split the data into 1..=4 segments of whole blocks.
            let nseg = (1 + rng.below(4) as usize).min(blocks);
            let mut bufs = Vec::new();
            let mut left = blocks;
            let mut at = off;
            for s in 0..nseg {
                let n = if s + 1 == nseg {
                    left
                } else {
                    1 + rng.below((left - (nseg - s - 1)) as u64) as usize
                };
                let mut b = buf(n * unit);
                for (k, block) in b.chunks_mut(LBS).enumerate() {
                    stamp(block, (at + k * LBS) as u64, &mut rng);
                }
                shadow[at..at + n * unit].copy_from_slice(&b);
                at += n * unit;
                left -= n;
                bufs.push(b);
            }
            let req = DioRequest::write(off as u64, bufs, round * 100 + i)
                .with_ctx(IoContext(1 + (i % 3) as u32));
            e.submit(req).expect("accepted");
        }
        e.unplug();
        for c in drain(&mut e) {
            assert!(c.result.is_ok(), "{sched}: write failed: {:?}", c.result);
        }
    }
    assert_eq!(e.in_flight(), 0);
    let stats = e.queue().stats().clone();
    if nomerges != "2" {
        assert!(
            stats.bio_merges() > 0,
            "{sched} nomerges={nomerges}: nothing merged"
        );
    }
    let es = e.stats();
    assert!(
        es.bios > es.submitted + 2 * rounds,
        "{sched}: too little was split ({es:?})"
    );
    // Read it all back in chunks of varying size.
    let mut offsets = Vec::new();
    let mut off = 0usize;
    while off < dev_bytes {
        let len = ((1 + rng.below(96) as usize) * unit).min(dev_bytes - off);
        let k = offsets.len() as u64;
        offsets.push(off);
        e.submit(DioRequest::read(off as u64, vec![buf(len)], k))
            .expect("accepted");
        off += len;
        if k % 16 == 15 {
            verify(&mut e, &shadow, &offsets, sched);
        }
    }
    verify(&mut e, &shadow, &offsets, sched);
    (e, shadow)
}

fn verify<D: DataDevice>(e: &mut Engine<D>, shadow: &[u8], offsets: &[usize], sched: &str) {
    for c in drain(e) {
        let len = c.result.expect("read ok") as usize;
        let data = &c.bufs[0];
        assert_eq!(data.len(), len);
        let off = offsets[c.user_data as usize];
        for (i, block) in data.chunks(LBS).enumerate() {
            let at = off + i * LBS;
            assert!(
                intact(block, at as u64),
                "{sched}: block {} damaged",
                at / LBS
            );
        }
        if let Some(i) = (0..len / LBS)
            .find(|&i| shadow[off + i * LBS..off + (i + 1) * LBS] != data[i * LBS..(i + 1) * LBS])
        {
            let got = &data[i * LBS..(i + 1) * LBS];
            panic!(
                "{sched}: block {} read back differs from what was last written there \
                 (read {len} bytes at {off}; it holds {})",
                (off / LBS) + i,
                if got.iter().all(|&b| b == 0) {
                    "zeroes".to_string()
                } else {
                    format!(
                        "data stamped for offset {}",
                        u64::from_le_bytes(got[..8].try_into().expect("8"))
                    )
                }
            );
        }
    }
}

#[test]
fn data_survives_every_scheduler_and_nomerges() {
    for (i, sched) in SCHEDULER_NAMES.iter().enumerate() {
        for nomerges in 0..=2 {
            let seed = 1000 + i as u64 * 10 + u64::from(nomerges);
            let (e, shadow) = integrity(mem(4, 8), sched, nomerges, seed, 40);
            assert_eq!(
                e.device().contents(),
                &shadow[..],
                "{sched}: device contents differ"
            );
        }
    }
}

/// The same, through io_uring onto real files: tmpfs (whose direct I/O
/// io_uring runs on worker threads) and the root file system.
#[test]
fn data_survives_on_real_files() {
    for dir in ["/dev/shm", "/var/tmp"] {
        let Some(file) = common::scratch_file(Path::new(dir), "integrity", 4 << 20).ok() else {
            common::skip(
                "data_survives_on_real_files",
                &format!("cannot create a file in {dir}"),
            );
            continue;
        };
        for (i, sched) in SCHEDULER_NAMES.iter().enumerate() {
            // Start from zeroes, as the shadow copy does.
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&file)
                .expect("open");
            f.set_len(0).expect("truncate");
            f.set_len(4 << 20).expect("extend");
            drop(f);
            let dev = FileDevice::open(&file, &FileOptions::default()).expect("open");
            let nomerges = (i % 3) as u8;
            integrity(dev, sched, nomerges, 77 + i as u64, 6);
        }
    }
}

/// Shutting down with I/O really in the kernel's hands: every request still
/// completes exactly once, with its buffers.
#[test]
fn cancellation_with_io_in_the_kernel() {
    let Some(file) = common::scratch_file(Path::new("/dev/shm"), "cancel", 8 << 20).ok() else {
        common::skip(
            "cancellation_with_io_in_the_kernel",
            "cannot create a file in /dev/shm",
        );
        return;
    };
    for sched in ["none", "bfq"] {
        let dev = FileDevice::open(
            &file,
            &FileOptions {
                queue_depth: Some(16),
                read_only: false,
                ..FileOptions::default()
            },
        )
        .expect("open");
        let mut e: Engine<FileDevice> = Engine::new(dev, &config(sched, &[])).expect("engine");
        for id in 0..128u64 {
            e.submit(DioRequest::write(id * 65536, vec![buf(65536)], id))
                .expect("accepted");
        }
        let mut out = Vec::new();
        e.poll(Some(std::time::Duration::ZERO), &mut out)
            .expect("poll");
        e.cancel();
        e.drain(&mut out).expect("drain");
        let mut ids: Vec<u64> = out.iter().map(|c| c.user_data).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!((out.len(), ids.len()), (128, 128), "{sched}");
        assert!(out.iter().all(|c| c.bufs.len() == 1));
        for c in &out {
            if let Err(f) = c.result {
                assert_eq!(f.status, Status::Cancelled, "{sched}");
            }
        }
    }
}

#[test]
fn misaligned_requests_are_refused_whole_with_buffers_back() {
    let mut e: Engine<MemDevice, Slice<AlignedBuf>> =
        Engine::new(mem(1, 8), &config("mq-deadline", &[])).expect("engine");
    let seg = |start| Slice::new(buf(8192), start, 4096).expect("inside");
    // The third segment is misaligned: nothing at all may be submitted.
    let req = DioRequest::write(0, vec![seg(0), seg(512), seg(100)], 7);
    let rejected = e.submit(req).expect_err("refused");
    assert!(matches!(
        rejected.error,
        DioError::SegmentAddress { segment: 2, .. }
    ));
    assert!(rejected.error.to_string().contains("segment 2"));
    assert_eq!(rejected.request.bufs.len(), 3, "buffers come back");
    assert_eq!(e.stats().bios, 0, "nothing submitted");
    assert_eq!(e.device().stats().ios, 0);
    // A length that is not whole blocks, in the second segment.
    let short = Slice::new(buf(4096), 0, 1000).expect("inside");
    let req = DioRequest::read(0, vec![seg(0), short], 8);
    assert!(matches!(
        e.submit(req).expect_err("refused").error,
        DioError::SegmentLength {
            segment: 1,
            len: 1000,
            ..
        }
    ));
    // An offset that is not a block multiple; past the end.
    let err = e
        .submit(DioRequest::read(100, vec![seg(0)], 9))
        .expect_err("refused");
    assert!(matches!(err.error, DioError::Offset { offset: 100, .. }));
    let err = e
        .submit(DioRequest::read((1 << 20) - 512, vec![seg(0)], 10))
        .expect_err("refused");
    assert!(matches!(err.error, DioError::BeyondEnd { .. }));
    assert_eq!(e.stats().bios, 0);
    assert_eq!(e.stats().refused, 4);
    // Zero length completes at once, with 0 bytes.
    e.submit(DioRequest::read(3 * 512, Vec::new(), 11))
        .expect("accepted");
    let done = drain(&mut e);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].result, Ok(0));
}

/// A 64 KiB write over sectors 0..128 split into 4 KiB bios, with sector 40
/// bad: whatever the merging, the caller learns 40 sectors were written, and
/// the queue goes on serving.
#[test]
fn partial_failure_counts_only_bytes_before_the_first_failure() {
    for sched in ["none", "mq-deadline", "bfq"] {
        for nomerges in ["0", "2"] {
            let faults = FaultSpec {
                bad_sectors: vec![(40, 41), (100, 104)],
                ..FaultSpec::default()
            };
            let dev = FaultDevice::new(mem(1, 4), &faults);
            let mut e: Engine<FaultDevice<MemDevice>> = Engine::new(
                dev,
                &config(sched, &[("nomerges", nomerges), ("max_sectors_kb", "4")]),
            )
            .expect("engine");
            let bufs: Vec<AlignedBuf> = (0..4).map(|_| buf(16384)).collect();
            e.submit(DioRequest::write(0, bufs, 1)).expect("accepted");
            // And one entirely before the bad sectors, and one after.
            e.submit(DioRequest::write(128 << 9, vec![buf(8192)], 2))
                .expect("accepted");
            let mut done = drain(&mut e);
            done.sort_by_key(|c| c.user_data);
            let f = done[0].result.expect_err("failed");
            assert_eq!(f.done, 40 * 512, "{sched} nomerges={nomerges}");
            assert_eq!(f.status, Status::IoError);
            assert_eq!(done[0].bufs.len(), 4, "buffers back");
            assert_eq!(done[1].result, Ok(8192));
            // The queue keeps serving.
            e.submit(DioRequest::read(0, vec![buf(20480)], 3))
                .expect("accepted");
            let again = drain(&mut e);
            assert_eq!(
                again[0].result,
                Ok(20480),
                "{sched}: reads before the bad sector work"
            );
            e.submit(DioRequest::read(96 << 9, vec![buf(8192)], 4))
                .expect("accepted");
            let f = drain(&mut e)[0].result.expect_err("bad sectors 100..104");
            assert_eq!(f.done, 4 * 512);
        }
    }
}

/// With a fraction of I/O failing, every request completes exactly once with
/// a byte count within its length and on a block boundary, and failed bytes
/// are never counted.
#[test]
fn random_faults_complete_every_request_once() {
    for sched in SCHEDULER_NAMES {
        let faults = FaultSpec {
            fail_rate: 0.2,
            seed: 7,
            ..FaultSpec::default()
        };
        let mut e: Engine<FaultDevice<MemDevice>> = Engine::new(
            FaultDevice::new(mem(2, 8), &faults),
            &config(sched, &[("max_sectors_kb", "8")]),
        )
        .expect("engine");
        let mut rng = Rng::new(3);
        let mut seen = vec![0u32; 400];
        let mut failed = 0;
        for id in 0..400u64 {
            let blocks = 1 + rng.below(64);
            let off = rng.below((2 << 20) / 512 - blocks) * 512;
            let req = if id % 2 == 0 {
                DioRequest::write(off, vec![buf(blocks as usize * 512)], id)
            } else {
                DioRequest::read(off, vec![buf(blocks as usize * 512)], id)
            };
            e.submit(req).expect("accepted");
            if id % 32 == 31 {
                for c in drain(&mut e) {
                    seen[c.user_data as usize] += 1;
                    if let Err(f) = c.result {
                        failed += 1;
                        assert!(f.done < c.bufs[0].len() as u64);
                        assert_eq!(f.done % 512, 0);
                    }
                }
            }
        }
        for c in drain(&mut e) {
            seen[c.user_data as usize] += 1;
        }
        assert!(
            seen.iter().all(|&n| n == 1),
            "{sched}: a request completed other than once"
        );
        assert!(failed > 20, "{sched}: faults were injected ({failed})");
        assert!(e.device().injected() > 0);
    }
}

/// Shutting down with requests waiting for tags, queued in the scheduler,
/// and at the device: each completes exactly once (done, or cancelled from
/// where it got to), all buffers come back, and nothing more is accepted.
#[test]
fn cancellation_at_shutdown() {
    for sched in ["none", "mq-deadline", "bfq", "cfq", "kyber"] {
        let mut e: Engine<MemDevice> = Engine::new(
            mem(4, 2),
            &config(sched, &[("nr_requests", "4"), ("max_sectors_kb", "4")]),
        )
        .expect("engine");
        for id in 0..64u64 {
            let req = DioRequest::write(id * 65536, vec![buf(32768)], id)
                .with_ctx(IoContext(id as u32 % 4));
            e.submit(req).expect("accepted");
        }
        // Let a little happen, then cancel.
        let mut out = Vec::new();
        e.poll(Some(std::time::Duration::ZERO), &mut out)
            .expect("poll");
        e.cancel();
        assert!(matches!(
            e.submit(DioRequest::read(0, vec![buf(512)], 99))
                .expect_err("refused")
                .error,
            DioError::ShuttingDown
        ));
        e.drain(&mut out).expect("drain");
        assert_eq!(out.len(), 64, "{sched}: every request completes once");
        let mut ids: Vec<u64> = out.iter().map(|c| c.user_data).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 64);
        let cancelled = out.iter().filter(|c| c.result.is_err()).count();
        assert!(cancelled > 0, "{sched}: something was cancelled");
        for c in &out {
            assert_eq!(c.bufs.len(), 1, "buffers back");
            if let Err(f) = c.result {
                assert_eq!(f.status, Status::Cancelled);
                assert!(f.done < 32768 && f.done % 4096 == 0);
            }
        }
        assert_eq!(e.in_flight(), 0);
    }
}

#[test]
fn dropping_an_engine_with_io_in_flight_completes_it_first() {
    let mut e: Engine<MemDevice> =
        Engine::new(mem(1, 2), &config("bfq", &[("nr_requests", "4")])).expect("engine");
    for id in 0..16u64 {
        e.submit(DioRequest::write(id * 8192, vec![buf(8192)], id))
            .expect("accepted");
    }
    drop(e);
}

#[test]
fn limits_on_requests_and_read_only() {
    let mut cfg = config("none", &[]);
    cfg.max_requests = 2;
    cfg.read_only = true;
    let mut e: Engine<MemDevice> = Engine::new(mem(1, 2), &cfg).expect("engine");
    assert!(matches!(
        e.submit(DioRequest::write(0, vec![buf(512)], 0))
            .expect_err("ro")
            .error,
        DioError::ReadOnly { .. }
    ));
    e.submit(DioRequest::read(0, vec![buf(512)], 1))
        .expect("accepted");
    e.submit(DioRequest::read(0, vec![buf(512)], 2))
        .expect("accepted");
    assert!(matches!(
        e.submit(DioRequest::read(0, vec![buf(512)], 3))
            .expect_err("busy")
            .error,
        DioError::Busy { max: 2 }
    ));
    assert_eq!(drain(&mut e).len(), 2);
    e.submit(DioRequest::flush(4)).expect("accepted");
    assert_eq!(drain(&mut e)[0].result, Ok(0));
}

#[test]
fn discard_and_write_zeroes_leave_zeroes() {
    let mut e: Engine<MemDevice> =
        Engine::new(mem(1, 4), &config("mq-deadline", &[])).expect("engine");
    let mut data = buf(65536);
    data.fill(0xAB);
    e.submit(DioRequest::write(0, vec![data], 0))
        .expect("accepted");
    drain(&mut e);
    e.submit(DioRequest::discard(4096, 8192, 1))
        .expect("accepted");
    e.submit(DioRequest::write_zeroes(32768, 4096, 2))
        .expect("accepted");
    for c in drain(&mut e) {
        assert!(c.result.is_ok());
    }
    let d = e.device().contents();
    assert!(d[..4096].iter().all(|&b| b == 0xAB));
    assert!(d[4096..12288].iter().all(|&b| b == 0));
    assert!(d[12288..32768].iter().all(|&b| b == 0xAB));
    assert!(d[32768..36864].iter().all(|&b| b == 0));
    assert!(d[36864..65536].iter().all(|&b| b == 0xAB));
}
