//! Random mixes of every kind of request, on memory and on real files, with
//! faults, the caller's plug, tunables changed mid-flight, and every way of
//! ending: each accepted request completes exactly once, with all its
//! buffers.

use crate::common;

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use common::{Counted, config, mem};
use elevator_core::IoContext;
use elevator_io::{
    Completion, DataDevice, DioRequest, Engine, FaultDevice, FaultSpec, FileDevice, FileOptions,
};

/// Random mixes of every kind of request (reads and writes of 0..=4
/// segments, flushes with flags, discards, write-zeroes, zero-length ones),
/// with random faults, the caller's plug taken and released at random,
/// `max_sectors_kb` changed mid-flight, and an end by drain, cancel or drop:
/// every accepted request completes exactly once with all its buffers,
/// `done` stays within the request on a block boundary, nothing stalls, and
/// every buffer is freed.
fn random_mix<D: DataDevice>(dev: D, sched: &str, seed: u64) {
    use elevator_core::BioFlags;
    use elevator_core::rng::Rng;
    use std::collections::HashMap;

    let mut rng = Rng::new(seed);
    let nr = ["4", "8", "32"][rng.below(3) as usize];
    let nomerges = ["0", "1", "2"][rng.below(3) as usize];
    let faults = FaultSpec {
        fail_rate: [0.0, 0.05, 0.3][rng.below(3) as usize],
        bad_sectors: vec![(704, 712)],
        seed,
        ..FaultSpec::default()
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
        let Some(file) = common::scratch_file(Path::new(dir), "mix", 1 << 20).ok() else {
            common::skip(module_path!(), &format!("cannot create a file in {dir}"));
            continue;
        };
        random_mixes_on(&file);
    }
}

fn random_mixes_on(file: &Path) {
    for (i, sched) in ["none", "mq-deadline", "bfq", "kyber"].iter().enumerate() {
        for seed in 0..6u64 {
            let dev = FileDevice::open(
                file,
                &FileOptions {
                    queue_depth: Some(1 + (seed % 8) as u32 * 4),
                    read_only: false,
                    ..FileOptions::default()
                },
            )
            .expect("open");
            random_mix(dev, sched, seed * 17 + i as u64);
        }
    }
}
