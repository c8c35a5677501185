//! The multi-queue layer keeps data and completions exact with several
//! submitting threads: under every lock mode and every scheduler, threads
//! write interleaved checksummed blocks (so that neighbours from different
//! threads merge in a shared queue, and one thread's request carries
//! another's bios), then every thread reads every block back and checks it.
//! Each request completes exactly once, with its full length. Also: a
//! shutdown with I/O in flight on every thread returns every buffer.

mod common;

use std::path::Path;
use std::sync::Barrier;

use common::{scratch_file, skip};
use elevator_io::mq::{LockMode, MqEngine, MultiQueue};
use elevator_io::{AlignedBuf, Completion, DioRequest, EngineConfig, FileDevice, FileOptions};

const BLOCK: usize = 4096;
const BLOCKS: u64 = 96;

/// The bytes block `b` holds after the writes (`b` and a checksum of the
/// pattern in its first bytes, so that a misplaced block shows).
fn pattern(b: u64, out: &mut [u8]) {
    let mut x = b.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    out[..8].copy_from_slice(&b.to_le_bytes());
}

fn buf_with(b: u64) -> AlignedBuf {
    let mut buf = AlignedBuf::new(BLOCK, 4096).expect("buffer");
    pattern(b, &mut buf);
    buf
}

/// Poll `e` until it is idle (nothing of its own in flight, nothing of
/// anyone's at its device); every completion goes to `out`.
fn settle(e: &mut MqEngine<FileDevice, AlignedBuf>, out: &mut Vec<Completion<AlignedBuf>>) {
    while !e.is_idle() {
        e.poll(None, out).expect("poll");
    }
}

fn config(sched: &str) -> EngineConfig {
    EngineConfig {
        scheduler: sched.into(),
        tunables: Vec::new(),
        max_requests: 4096,
        read_only: false,
    }
}

/// One round: `threads` threads over `devices` files under `lock` and
/// `sched`; thread t writes the blocks b with b % threads == t, in batches
/// under one plug, then (after every thread's writes) reads all blocks.
fn round(test: &str, lock: LockMode, sched: &str, threads: usize, devices: usize) -> bool {
    let mut paths = Vec::new();
    for i in 0..devices {
        let Ok(p) = scratch_file(Path::new("/dev/shm"), &format!("mqi{i}"), BLOCKS * 4096) else {
            skip(test, "cannot create a file in /dev/shm");
            return false;
        };
        paths.push(p);
    }
    let opts = FileOptions::default();
    let firsts: Vec<FileDevice> = paths
        .iter()
        .map(|p| FileDevice::open(p, &opts).expect("open"))
        .collect();
    let mq = MultiQueue::new(
        &firsts.iter().collect::<Vec<_>>(),
        threads,
        &config(sched),
        lock,
        true,
    )
    .expect("layer");
    drop(firsts);
    let barrier = Barrier::new(threads);
    let what = format!("{lock} {sched} {threads} threads on {devices} devices");
    std::thread::scope(|s| {
        for t in 0..threads {
            let (mq, barrier, paths, what) = (&mq, &barrier, &paths, &what);
            s.spawn(move || {
                let d = t % devices;
                let dev = FileDevice::open(&paths[d], &FileOptions::default()).expect("open");
                let mut e = mq.engine::<_, AlignedBuf>(t, d, dev).expect("engine");
                let mine: Vec<u64> = (0..BLOCKS).filter(|b| *b as usize % threads == t).collect();
                let mut out = Vec::new();
                for batch in mine.chunks(8) {
                    e.plug();
                    for &b in batch {
                        let req = DioRequest::write(b * BLOCK as u64, vec![buf_with(b)], b);
                        e.submit(req)
                            .unwrap_or_else(|r| panic!("{what}: {}", r.error));
                    }
                    e.unplug();
                    e.poll(Some(std::time::Duration::ZERO), &mut out)
                        .expect("poll");
                }
                settle(&mut e, &mut out);
                let mut seen = vec![0u32; BLOCKS as usize];
                for c in &out {
                    assert_eq!(
                        c.result,
                        Ok(BLOCK as u64),
                        "{what}: write of block {}",
                        c.user_data
                    );
                    seen[c.user_data as usize] += 1;
                }
                for &b in &mine {
                    assert_eq!(seen[b as usize], 1, "{what}: block {b} written once");
                }
                barrier.wait();
                // Every thread reads every block (of its device) back.
                out.clear();
                let all: Vec<u64> = (0..BLOCKS)
                    .filter(|b| *b as usize % threads % devices == d)
                    .collect();
                for batch in all.chunks(16) {
                    e.plug();
                    for &b in batch {
                        let req = DioRequest::read(
                            b * BLOCK as u64,
                            vec![AlignedBuf::new(BLOCK, 4096).expect("buffer")],
                            b,
                        );
                        e.submit(req)
                            .unwrap_or_else(|r| panic!("{what}: {}", r.error));
                    }
                    e.unplug();
                }
                settle(&mut e, &mut out);
                assert_eq!(out.len(), all.len(), "{what}: every read completes once");
                let mut want = vec![0u8; BLOCK];
                for c in &out {
                    assert_eq!(c.result, Ok(BLOCK as u64), "{what}");
                    pattern(c.user_data, &mut want);
                    assert!(
                        c.bufs[0][..] == want[..],
                        "{what}: block {} read back different",
                        c.user_data
                    );
                }
                barrier.wait();
            });
        }
    });
    let stats = mq.queue_stats();
    assert_eq!(
        stats.bios_completed, stats.bios,
        "{what}: shared queues complete every bio"
    );
    true
}

#[test]
fn data_and_completions_are_exact_under_every_lock_mode_and_scheduler() {
    let test = "data_and_completions_are_exact_under_every_lock_mode_and_scheduler";
    for lock in LockMode::ALL {
        for sched in elevator_core::SCHEDULER_NAMES {
            for (threads, devices) in [(2, 1), (4, 2), (8, 1)] {
                if !round(test, lock, sched, threads, devices) {
                    return;
                }
            }
        }
    }
}

/// Every thread stops with I/O in flight (cancel, then drain): every
/// request comes back, done or cancelled, with its buffer.
#[test]
fn shutdown_with_io_in_flight_on_every_thread_returns_every_buffer() {
    let test = "shutdown_with_io_in_flight_on_every_thread_returns_every_buffer";
    for lock in LockMode::ALL {
        for sched in ["none", "mq-deadline", "bfq", "cfq"] {
            let threads = 4;
            let Ok(p) = scratch_file(Path::new("/dev/shm"), "mqstop", BLOCKS * 4096) else {
                skip(test, "cannot create a file in /dev/shm");
                return;
            };
            let first = FileDevice::open(&p, &FileOptions::default()).expect("open");
            let mq =
                MultiQueue::new(&[&first], threads, &config(sched), lock, false).expect("layer");
            drop(first);
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (mq, p) = (&mq, &p);
                    s.spawn(move || {
                        let dev = FileDevice::open(p, &FileOptions::default()).expect("open");
                        let mut e = mq.engine::<_, AlignedBuf>(t, 0, dev).expect("engine");
                        for i in 0..48u64 {
                            let b = (i * 7 + t as u64) % BLOCKS;
                            e.submit(DioRequest::read(b * BLOCK as u64, vec![buf_with(b)], i))
                                .unwrap_or_else(|r| panic!("{}", r.error));
                        }
                        e.cancel();
                        let mut out = Vec::new();
                        e.drain(&mut out).expect("drain");
                        assert_eq!(out.len(), 48, "{lock} {sched}: every request comes back");
                        assert!(out.iter().all(|c| c.bufs.len() == 1), "with its buffer");
                        // Others' requests dispatched here are seen through too.
                        assert_eq!(elevator_core::Device::outstanding(e.device()), 0);
                    });
                }
            });
        }
    }
}
