//! The multi-queue layer keeps data and completions exact with several
//! submitting threads: under every lock mode and every scheduler, threads
//! write interleaved checksummed blocks (so that neighbours from different
//! threads merge in a shared queue, and one thread's request carries
//! another's bios), then every thread reads every block back and checks it.
//! Each request completes exactly once, with its full length. On files
//! (tmpfs) and on shared memory devices. Also: a shutdown with I/O in
//! flight on every thread returns every buffer.

use crate::common;

use std::path::Path;
use std::sync::Barrier;

use common::{scratch_file, skip};
use elevator_io::mq::{LockMode, MqEngine, MultiQueue};
use elevator_io::{
    AlignedBuf, Completion, DataDevice, DioRequest, EngineConfig, FileDevice, FileOptions,
    MemDevice, MemOptions,
};
use elevator_testkit::TestRng;

const BLOCK: usize = 4096;
const BLOCKS: u64 = 96;

/// The bytes block `b` holds after the writes (`b` and a checksum of the
/// pattern in its first bytes, so that a misplaced block shows).
fn pattern(b: u64, out: &mut [u8]) {
    TestRng::new(b).fill(out);
    out[..8].copy_from_slice(&b.to_le_bytes());
}

fn buf_with(b: u64) -> AlignedBuf {
    let mut buf = AlignedBuf::new(BLOCK, 4096).expect("buffer");
    pattern(b, &mut buf);
    buf
}

/// Poll `e` until it is idle (nothing of its own in flight, nothing of
/// anyone's at its device); every completion goes to `out`.
fn settle<D: DataDevice>(e: &mut MqEngine<D, AlignedBuf>, out: &mut Vec<Completion<AlignedBuf>>) {
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

/// Handles on `devices` devices for `threads` threads (thread t uses device
/// t % devices): the first handle of each device is index 0.
type Handles<D> = Vec<Vec<D>>;

/// `devices` scratch files in /dev/shm, opened once per thread that uses
/// them; `None` (after `skip`) where there is no /dev/shm.
fn file_handles(
    test: &str,
    devices: usize,
    threads: usize,
) -> Option<(Vec<tempfile::TempPath>, Handles<FileDevice>)> {
    let mut paths = Vec::new();
    let mut handles = Vec::new();
    for i in 0..devices {
        let Ok(p) = scratch_file(Path::new("/dev/shm"), &format!("mqi{i}"), BLOCKS * 4096) else {
            skip(test, "cannot create a file in /dev/shm");
            return None;
        };
        let users = (0..threads).filter(|t| t % devices == i).count();
        handles.push(
            (0..users)
                .map(|_| FileDevice::open(&p, &FileOptions::default()).expect("open"))
                .collect(),
        );
        paths.push(p);
    }
    Some((paths, handles))
}

/// `devices` memory devices, shared by the threads that use them.
fn mem_handles(devices: usize, threads: usize) -> Handles<MemDevice> {
    (0..devices)
        .map(|i| {
            let first = MemDevice::new(BLOCKS * 4096, MemOptions::default()).expect("memory");
            let users = (0..threads).filter(|t| t % devices == i).count();
            let mut all: Vec<MemDevice> =
                (1..users).map(|_| first.share().expect("share")).collect();
            all.insert(0, first);
            all
        })
        .collect()
}

/// One round: `threads` threads over the devices of `handles` under `lock`
/// and `sched`; thread t writes the blocks b with b % threads == t, in
/// batches under one plug, then (after every thread's writes) reads all
/// blocks of its device back.
fn round<D: DataDevice + Send>(lock: LockMode, sched: &str, threads: usize, handles: Handles<D>) {
    round_with(lock, &config(sched), threads, handles)
}

/// [`round`] with the queue configuration `cfg`.
fn round_with<D: DataDevice + Send>(
    lock: LockMode,
    cfg: &EngineConfig,
    threads: usize,
    handles: Handles<D>,
) {
    let sched = &cfg.scheduler;
    let devices = handles.len();
    let firsts: Vec<&D> = handles.iter().map(|h| &h[0]).collect();
    let users: Vec<usize> = handles.iter().map(Vec::len).collect();
    let mq = MultiQueue::new(&firsts, &users, cfg, lock, true).expect("layer");
    let mut handles: Vec<std::vec::IntoIter<D>> = handles.into_iter().map(Vec::into_iter).collect();
    let barrier = Barrier::new(threads);
    let what = format!("{lock} {sched} {threads} threads on {devices} devices");
    std::thread::scope(|s| {
        for t in 0..threads {
            let d = t % devices;
            let dev = handles[d].next().expect("a handle per thread");
            let (mq, barrier, what) = (&mq, &barrier, &what);
            s.spawn(move || {
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
                // Every thread reads every block of its device back: the
                // blocks written by the threads on the same device.
                out.clear();
                let all: Vec<u64> = (0..BLOCKS)
                    .filter(|b| *b as usize % threads % devices == d)
                    .collect();
                for batch in all.chunks(16) {
                    e.plug();
                    for &b in batch {
                        let buf = AlignedBuf::new(BLOCK, 4096).expect("buffer");
                        let req = DioRequest::read(b * BLOCK as u64, vec![buf], b);
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
}

#[test]
fn data_and_completions_are_exact_under_every_lock_mode_and_scheduler() {
    let test = "data_and_completions_are_exact_under_every_lock_mode_and_scheduler";
    for lock in LockMode::ALL {
        for sched in elevator_core::SCHEDULER_NAMES {
            for (threads, devices) in [(2, 1), (4, 2), (8, 1)] {
                let Some((_paths, files)) = file_handles(test, devices, threads) else {
                    return;
                };
                round(lock, sched, threads, files);
                round(lock, sched, threads, mem_handles(devices, threads));
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
                MultiQueue::new(&[&first], &[threads], &config(sched), lock, false).expect("layer");
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

/// A scheduler that idles for one submitter (CFQ and BFQ with
/// `slice_idle` set to 8 ms, which memory's defaults leave at 0) while the other
/// threads submit: no thread waits forever, and the data is exact.
#[test]
fn an_idling_scheduler_does_not_deadlock_other_submitters() {
    for lock in LockMode::ALL {
        for sched in ["cfq", "bfq"] {
            let mut cfg = config(sched);
            cfg.tunables = vec![("slice_idle".into(), "8".into())];
            round_with(lock, &cfg, 4, mem_handles(1, 4));
        }
    }
}
