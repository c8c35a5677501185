//! Each fault of the real fault device on a memory device, by itself: what
//! the caller is told, and what the bytes underneath really are
//! afterwards (latent sector errors fail reads until a write repairs them,
//! torn writes leave only their prefix, misdirected writes land elsewhere,
//! spikes and timeouts hold completions back until their time, a vanished
//! device answers everything `Offline` and sends nothing on).

use crate::common;

use std::time::{Duration, Instant};

use elevator_core::{Device, DeviceIo, Nanos, Op, Outcome, Status};
use elevator_io::{
    AlignedBuf, DataDevice, DataSegment, FaultDevice, FaultSpec, FileDevice, FileOptions, IoBuf,
    MemDevice, MemOptions,
};

const MS: Nanos = 1_000_000;

fn mem(lbs: u32) -> MemDevice {
    MemDevice::new(
        256 << 10,
        MemOptions {
            logical_block_size: lbs,
            ..MemOptions::default()
        },
    )
    .expect("memory")
}

fn faulty(spec: &FaultSpec) -> FaultDevice<MemDevice> {
    FaultDevice::new(mem(512), spec)
}

/// A buffer of `len` bytes of `fill`.
fn filled(len: usize, fill: u8) -> AlignedBuf {
    let mut b = AlignedBuf::new(len, 4096).expect("buffer");
    b.fill(fill);
    b
}

/// Submit `op` of `buf` at `sector` as `tag`.
fn submit(
    d: &mut FaultDevice<MemDevice>,
    tag: u32,
    op: Op,
    sector: u64,
    buf: &mut AlignedBuf,
    now: Nanos,
) {
    let io = DeviceIo {
        tag,
        op,
        sector,
        sectors: (buf.len() / 512) as u32,
        flags: elevator_core::BioFlags::NONE,
    };
    let seg = DataSegment {
        addr: buf.as_mut_ptr(),
        len: buf.len() as u32,
    };
    // SAFETY: the buffers outlive every completion the tests wait for (each
    // test collects them before its buffers go).
    unsafe { d.submit_data(io, &[seg], now) };
}

fn completions(d: &mut FaultDevice<MemDevice>, now: Nanos) -> Vec<(u32, Outcome)> {
    let mut got = Vec::new();
    d.complete(now, &mut |tag, o| got.push((tag, o)));
    got
}

fn failed(status: Status, good_bytes: u64) -> Outcome {
    Outcome::Failed { status, good_bytes }
}

/// Read `sectors` at `sector` at time 0: the outcome and the bytes read.
fn read(d: &mut FaultDevice<MemDevice>, sector: u64, sectors: usize) -> (Outcome, AlignedBuf) {
    let mut buf = filled(sectors * 512, 0xEE);
    submit(d, 7, Op::Read, sector, &mut buf, 0);
    let got = completions(d, 0);
    assert_eq!(got.len(), 1);
    (got[0].1, buf)
}

fn write(d: &mut FaultDevice<MemDevice>, sector: u64, sectors: usize, fill: u8) -> Outcome {
    let mut buf = filled(sectors * 512, fill);
    submit(d, 9, Op::Write, sector, &mut buf, 0);
    let got = completions(d, 0);
    assert_eq!(got.len(), 1);
    got[0].1
}

#[test]
fn latent_sector_errors_fail_reads_until_a_write_repairs_them() {
    let mut d = faulty(&FaultSpec {
        lse_sectors: vec![(8, 16)],
        ..FaultSpec::default()
    });
    assert_eq!(write(&mut d, 0, 8, 0x11), Outcome::Done);
    // A read across the start of the bad range: good up to sector 8.
    let (o, buf) = read(&mut d, 4, 8);
    assert_eq!(o, failed(Status::IoError, 4 * 512));
    assert!(
        buf[..4 * 512].iter().all(|&b| b == 0x11),
        "the good part was read"
    );
    assert_eq!(read(&mut d, 0, 8).0, Outcome::Done, "before the range");
    assert_eq!(read(&mut d, 16, 8).0, Outcome::Done, "after the range");
    // A write over sectors 10 and 11 repairs them, and only them.
    assert_eq!(write(&mut d, 10, 2, 0x22), Outcome::Done);
    assert_eq!(d.counts().lse_repaired, 2);
    let (o, buf) = read(&mut d, 10, 2);
    assert_eq!(o, Outcome::Done);
    assert!(buf.iter().all(|&b| b == 0x22));
    assert_eq!(read(&mut d, 8, 4).0, failed(Status::IoError, 0));
    assert_eq!(read(&mut d, 11, 3).0, failed(Status::IoError, 512));
    assert_eq!(d.counts().lse_reads, 3);
    // A share sees the same media: its write repairs for both.
    let mut s = d.share_with(d.inner().share().expect("share"));
    assert_eq!(read(&mut s, 12, 1).0, failed(Status::IoError, 0));
    assert_eq!(write(&mut s, 8, 8, 0x33), Outcome::Done);
    assert_eq!(read(&mut d, 8, 8).0, Outcome::Done);
    assert_eq!(d.device_counts().lse_repaired, 8);
    assert_eq!(s.counts().lse_repaired, 6);
}

#[test]
fn a_torn_write_leaves_only_its_prefix_on_the_media() {
    let mut prefixes = std::collections::BTreeSet::new();
    for seed in 0..24u64 {
        let mut d = faulty(&FaultSpec {
            torn_rate: 1.0,
            seed,
            ..FaultSpec::default()
        });
        let o = write(&mut d, 16, 8, 0xAB);
        let Outcome::Failed {
            status: Status::IoError,
            good_bytes,
        } = o
        else {
            panic!("seed {seed}: a torn write fails, got {o:?}");
        };
        assert!(
            good_bytes < 8 * 512 && good_bytes % 512 == 0,
            "{good_bytes}"
        );
        let bytes = d.inner().contents();
        let at = 16 * 512;
        let g = good_bytes as usize;
        assert!(
            bytes[at..at + g].iter().all(|&b| b == 0xAB),
            "prefix written"
        );
        assert!(
            bytes[at + g..at + 4096].iter().all(|&b| b == 0),
            "rest untouched"
        );
        assert!(
            bytes[..at]
                .iter()
                .chain(&bytes[at + 4096..])
                .all(|&b| b == 0)
        );
        assert_eq!(d.counts().torn, 1);
        prefixes.insert(good_bytes);
    }
    assert!(prefixes.len() > 3, "prefixes vary: {prefixes:?}");
    // On 4 KiB blocks the prefix is whole blocks.
    for seed in 0..8 {
        let mut d = FaultDevice::new(
            mem(4096),
            &FaultSpec {
                torn_rate: 1.0,
                seed,
                ..FaultSpec::default()
            },
        );
        match write(&mut d, 0, 32, 0xAB) {
            Outcome::Failed { good_bytes, .. } => assert_eq!(good_bytes % 4096, 0),
            o => panic!("{o:?}"),
        }
    }
}

#[test]
fn a_misdirected_write_lands_elsewhere_and_leaves_its_own_place() {
    for seed in 0..16u64 {
        let mut d = faulty(&FaultSpec {
            misdirect_rate: 1.0,
            seed,
            ..FaultSpec::default()
        });
        assert_eq!(write(&mut d, 16, 2, 0xCD), Outcome::Done, "silently");
        assert_eq!(d.counts().misdirected, 1);
        let bytes = d.inner().contents();
        let landed: Vec<usize> = (0..bytes.len())
            .step_by(512)
            .filter(|&i| bytes[i] == 0xCD)
            .collect();
        assert_eq!(landed.len(), 2, "seed {seed}: two sectors landed somewhere");
        assert_eq!(landed[1], landed[0] + 512);
        assert_ne!(landed[0], 16 * 512, "not at its own place");
        assert!(bytes[16 * 512..18 * 512].iter().all(|&b| b == 0));
    }
}

#[test]
fn a_spike_holds_a_completion_back_until_its_time() {
    let mut d = faulty(&FaultSpec {
        spike_rate: 1.0,
        spike: Duration::from_millis(5),
        ..FaultSpec::default()
    });
    let mut buf = filled(4096, 0x5A);
    submit(&mut d, 3, Op::Write, 0, &mut buf, 10 * MS);
    assert!(completions(&mut d, 10 * MS).is_empty(), "held back");
    assert_eq!(d.outstanding(), 1);
    assert_eq!(d.next_completion(), Some(15 * MS));
    assert!(completions(&mut d, 15 * MS - 1).is_empty());
    assert_eq!(completions(&mut d, 15 * MS), vec![(3, Outcome::Done)]);
    assert_eq!(d.outstanding(), 0);
    assert_eq!(d.counts().spikes, 1);
    assert_eq!(d.injected(), 0, "a spike changes no status");
}

#[test]
fn a_timeout_completes_timed_out_after_its_time_with_the_data_landed() {
    let mut d = faulty(&FaultSpec {
        timeout_rate: 1.0,
        timeout: Duration::from_millis(10),
        ..FaultSpec::default()
    });
    let mut buf = filled(4096, 0x77);
    submit(&mut d, 1, Op::Write, 8, &mut buf, MS);
    assert!(completions(&mut d, MS).is_empty());
    assert_eq!(d.next_completion(), Some(11 * MS));
    assert!(completions(&mut d, 11 * MS - 1).is_empty());
    assert_eq!(
        completions(&mut d, 11 * MS),
        vec![(1, failed(Status::TimedOut, 0))]
    );
    assert!(
        d.inner().contents()[8 * 512..8 * 512 + 4096]
            .iter()
            .all(|&b| b == 0x77)
    );
    assert_eq!(d.counts().timeouts, 1);
    // Cancelled: released at once, as cancelled.
    submit(&mut d, 2, Op::Read, 8, &mut buf, 20 * MS);
    assert!(completions(&mut d, 20 * MS).is_empty());
    d.cancel_all();
    assert_eq!(
        completions(&mut d, 20 * MS),
        vec![(2, failed(Status::Cancelled, 0))]
    );
    assert_eq!(d.outstanding(), 0);
}

/// `wait` wakes for a held completion on the real clock (were it not
/// capped, this would sleep an hour).
#[test]
fn wait_wakes_for_a_held_completion() {
    let mut d = faulty(&FaultSpec {
        spike_rate: 1.0,
        spike: Duration::from_millis(3),
        ..FaultSpec::default()
    });
    let clock = elevator_io::Clock::new();
    let mut buf = filled(512, 1);
    submit(&mut d, 5, Op::Read, 0, &mut buf, clock.now());
    let mut got = completions(&mut d, clock.now());
    while got.is_empty() {
        d.wait(Some(Duration::from_secs(3600))).expect("wait");
        got = completions(&mut d, clock.now());
    }
    assert_eq!(got, vec![(5, Outcome::Done)]);
}

#[test]
fn a_vanished_device_answers_offline_and_sends_nothing_on() {
    let mut d = faulty(&FaultSpec {
        vanish_at: Some(Duration::ZERO),
        ..FaultSpec::default()
    });
    assert!(d.vanished());
    assert_eq!(write(&mut d, 0, 8, 0x99), failed(Status::Offline, 0));
    assert_eq!(read(&mut d, 0, 8).0, failed(Status::Offline, 0));
    let flush = DeviceIo {
        tag: 4,
        op: Op::Flush,
        sector: 0,
        sectors: 0,
        flags: elevator_core::BioFlags::NONE,
    };
    d.submit(flush, 0);
    assert_eq!(
        completions(&mut d, 0),
        vec![(4, failed(Status::Offline, 0))]
    );
    assert_eq!(d.inner().stats().ios, 0, "nothing reached the memory");
    assert!(d.inner().contents().iter().all(|&b| b == 0));
    assert_eq!(d.counts().offline, 3);
}

/// Before `vanish_at` I/O works; from then on, on every share at once,
/// everything (a completion held back included) is `Offline`.
#[test]
fn a_device_vanishes_at_its_time_on_every_share() {
    let mut d = faulty(&FaultSpec {
        vanish_at: Some(Duration::from_millis(300)),
        spike_rate: 0.5,
        spike: Duration::from_secs(3600),
        seed: 3,
        ..FaultSpec::default()
    });
    let mut s = d.share_with(d.inner().share().expect("share"));
    // Right after opening: not gone yet (the write and read take far less
    // than 300 ms).
    let mut buf = filled(4096, 0x42);
    let mut held = 0;
    for tag in 0..8 {
        submit(&mut d, tag, Op::Write, 0, &mut buf, 0);
        held += 1 - completions(&mut d, 0).len();
    }
    assert!(held > 0, "some completions are held an hour");
    assert!(!d.vanished() && !s.vanished());
    let end = Instant::now() + Duration::from_millis(300);
    while !d.vanished() {
        std::thread::sleep(end.saturating_duration_since(Instant::now()));
    }
    assert!(s.vanished(), "the share vanished with it");
    let got = completions(&mut d, 0);
    assert_eq!(got.len(), held);
    assert!(got.iter().all(|(_, o)| *o == failed(Status::Offline, 0)));
    assert_eq!(write(&mut s, 64, 8, 0x43), failed(Status::Offline, 0));
    assert!(d.inner().contents()[64 * 512..].iter().all(|&b| b == 0));
    assert_eq!(d.outstanding() + s.outstanding(), 0);
}

#[test]
fn device_specs_carry_every_fault_option() {
    let spec = elevator_io::DeviceSpec::parse(
        "mem:1m,lse_sectors=100-108,torn_rate=0.01,misdirect_rate=0.02,spike_rate=0.1,\
         spike_ms=5,timeout_rate=0.001,timeout_ms=200,vanish_at=2s,fail_seed=9",
    )
    .expect("parses");
    let f = &spec.faults;
    assert_eq!(f.lse_sectors, vec![(100, 108)]);
    assert_eq!(
        (f.torn_rate, f.misdirect_rate, f.spike_rate),
        (0.01, 0.02, 0.1)
    );
    assert_eq!(f.spike, Duration::from_millis(5));
    assert_eq!(
        (f.timeout_rate, f.timeout),
        (0.001, Duration::from_millis(200))
    );
    assert_eq!(f.vanish_at, Some(Duration::from_secs(2)));
    assert_eq!(f.seed, 9);
    for (spec, needle) in [
        (
            "mem:1m,torn_rate=2",
            "torn_rate=2: expected a fraction 0..=1",
        ),
        ("mem:1m,vanish_at=soon", "vanish_at=soon: expected a time"),
        ("mem:1m,lse_sectors=5-5", "lse_sectors: '5-5' is empty"),
        ("mem:1m,lse_sectors=1-9:8-10", "ranges 1-9 and 8-10 overlap"),
        ("mem:1m,spike_ms=-3", "spike_ms=-3"),
        ("mem:1m,colour=red", "lse_sectors, torn_rate"),
    ] {
        let e = elevator_io::DeviceSpec::parse(spec)
            .expect_err(spec)
            .to_string();
        assert!(e.contains(needle), "{spec}: {e}");
    }
}

/// Through io_uring on a file: a torn write's shortened request really
/// writes only its prefix, and a misdirected one lands elsewhere.
#[test]
fn torn_and_misdirected_writes_on_a_file() {
    let test = "torn_and_misdirected_writes_on_a_file";
    let Ok(path) = common::scratch_file(std::path::Path::new("/dev/shm"), "faults", 1 << 20) else {
        common::skip(test, "cannot create a file in /dev/shm");
        return;
    };
    for (seed, torn) in [(1u64, true), (2, true), (3, false)] {
        std::fs::write(&path, vec![0u8; 1 << 20]).expect("zero the file");
        let file = FileDevice::open(&path, &FileOptions::default()).expect("open");
        let spec = FaultSpec {
            torn_rate: if torn { 1.0 } else { 0.0 },
            misdirect_rate: if torn { 0.0 } else { 1.0 },
            seed,
            ..FaultSpec::default()
        };
        let mut d = FaultDevice::new(file, &spec);
        let mut buf = filled(8 * 4096, 0xAB);
        let io = DeviceIo {
            tag: 1,
            op: Op::Write,
            sector: 64,
            sectors: 64,
            flags: elevator_core::BioFlags::NONE,
        };
        let seg = DataSegment {
            addr: buf.as_mut_ptr(),
            len: buf.len() as u32,
        };
        // SAFETY: `buf` lives until the write has completed (below).
        unsafe { d.submit_data(io, &[seg], 0) };
        let mut got = Vec::new();
        while got.is_empty() {
            d.wait(Some(Duration::from_secs(10))).expect("wait");
            d.complete(0, &mut |tag, o| got.push((tag, o)));
        }
        let bytes = std::fs::read(&path).expect("read back");
        let at = 64 * 512;
        let written: Vec<usize> = (0..bytes.len())
            .step_by(512)
            .filter(|&i| bytes[i] == 0xAB)
            .collect();
        if torn {
            let Outcome::Failed {
                status: Status::IoError,
                good_bytes,
            } = got[0].1
            else {
                panic!("seed {seed}: {:?}", got[0]);
            };
            assert_eq!(good_bytes % 4096, 0, "whole blocks of the file's");
            assert!(good_bytes < 8 * 4096);
            let g = good_bytes as usize;
            assert!(bytes[at..at + g].iter().all(|&b| b == 0xAB));
            assert!(bytes[at + g..at + 8 * 4096].iter().all(|&b| b == 0));
            assert_eq!(written.len(), g / 512, "nothing else written");
        } else {
            assert_eq!(got[0].1, Outcome::Done);
            assert_eq!(written.len(), 64, "all of it, elsewhere");
            assert_ne!(written[0], at);
            assert_eq!(written[63], written[0] + 63 * 512, "in one piece");
        }
    }
}
