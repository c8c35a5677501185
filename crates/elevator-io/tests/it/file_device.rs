//! `FileDevice` driven directly through the device traits (no engine): real
//! O_DIRECT files on tmpfs (`/dev/shm`) and on the root file system, and a
//! loop device when the test runs as root.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use elevator_core::{BioFlags, Device, DeviceIo, Op, Outcome, Status};
use elevator_io::{
    AlignedBuf, DataDevice, DataSegment, DeviceError, FileCache, FileDevice, FileKind, FileOptions,
    IoBuf,
};
use elevator_testkit::TestRng;
use tempfile::TempPath;

const MIB: u64 = 1 << 20;

/// A file of `size` bytes in `dir`, removed when the test ends (even by a
/// panic).
fn temp_file(dir: &Path, test: &str, size: u64) -> TempPath {
    common::scratch_file(dir, test, size).expect("create test file")
}

/// The two file systems to test on: tmpfs and the root file system (ext4).
fn dirs() -> [PathBuf; 2] {
    let disk = if Path::new("/var/tmp").is_dir() {
        PathBuf::from("/var/tmp")
    } else {
        std::env::temp_dir()
    };
    [PathBuf::from("/dev/shm"), disk]
}

/// Run `body` on a device of a fresh `size`-byte file named for `test` in
/// each of [`dirs`] (the file lives until `body` returns).
fn on_each_fs(test: &str, size: u64, mut body: impl FnMut(&mut FileDevice, &Path)) {
    for dir in dirs() {
        let file = temp_file(&dir, test, size);
        let mut dev = open(&file);
        body(&mut dev, &dir);
    }
}

fn open(path: &Path) -> FileDevice {
    FileDevice::open(path, &FileOptions::default()).expect("open")
}

fn dio(tag: u32, op: Op, offset: u64, bytes: u64, flags: BioFlags) -> DeviceIo {
    DeviceIo {
        tag,
        op,
        sector: offset >> 9,
        sectors: (bytes >> 9) as u32,
        flags,
    }
}

fn buffer(dev: &FileDevice, len: usize) -> AlignedBuf {
    AlignedBuf::new(len, dev.alignment().memory.max(512) as usize).expect("buffer")
}

fn seg(buf: &mut AlignedBuf) -> DataSegment {
    DataSegment {
        addr: buf.as_mut_ptr(),
        len: buf.len() as u32,
    }
}

/// Wait and reap until `n` I/Os are reported; each tag at most once.
fn reap(dev: &mut FileDevice, n: usize) -> HashMap<u32, Outcome> {
    let mut got = HashMap::new();
    let mut now = 1_000;
    while got.len() < n {
        assert!(
            dev.outstanding() > 0,
            "{} of {n} I/Os reported, none outstanding",
            got.len()
        );
        dev.wait(None).expect("wait");
        now += 1;
        dev.complete(now, &mut |tag, outcome| {
            assert!(
                got.insert(tag, outcome).is_none(),
                "tag {tag} reported twice"
            );
        });
    }
    assert_eq!(dev.outstanding(), 0);
    got
}

/// Submit one I/O with `segs` and wait for its outcome.
fn run(dev: &mut FileDevice, io: DeviceIo, segs: &[DataSegment]) -> Outcome {
    // SAFETY: the segments' buffers outlive this call, which waits for the
    // I/O to be reported.
    unsafe { dev.submit_data(io, segs, 0) };
    let got = reap(dev, 1);
    got[&io.tag]
}

fn read(dev: &mut FileDevice, offset: u64, len: usize) -> AlignedBuf {
    let mut buf = buffer(dev, len);
    let io = dio(99, Op::Read, offset, len as u64, BioFlags::NONE);
    assert_eq!(run(dev, io, &[seg(&mut buf)]), Outcome::Done);
    buf
}

fn write(dev: &mut FileDevice, offset: u64, data: &[u8], flags: BioFlags) -> Outcome {
    let mut buf =
        AlignedBuf::copy_from(data, dev.alignment().memory.max(512) as usize).expect("buffer");
    run(
        dev,
        dio(98, Op::Write, offset, data.len() as u64, flags),
        &[seg(&mut buf)],
    )
}

#[test]
fn writev_then_read_back() {
    on_each_fs("writev", 8 * MIB, |dev, dir| {
        let lbs = u64::from(dev.limits().logical_block_size);
        let mut rng = TestRng::new(0x1234_5678);
        for round in 0..8u32 {
            // Three segments of different lengths, in separate buffers.
            let lens = [lbs as usize, 3 * lbs as usize, 8192];
            let total: usize = lens.iter().sum();
            let offset = rng.next_u64() % (8 * MIB - total as u64) / lbs * lbs;
            let mut bufs: Vec<AlignedBuf> = lens.iter().map(|&l| buffer(dev, l)).collect();
            let mut expect = Vec::new();
            for b in &mut bufs {
                rng.fill(b);
                expect.extend_from_slice(b);
            }
            let segs: Vec<DataSegment> = bufs.iter_mut().map(seg).collect();
            let io = dio(round, Op::Write, offset, total as u64, BioFlags::NONE);
            assert_eq!(run(dev, io, &segs), Outcome::Done, "{}", dir.display());
            let back = read(dev, offset, total);
            assert!(
                back[..] == expect[..],
                "{}: round {round} read back differs",
                dir.display()
            );

            // And back again through a Readv into two buffers.
            let mut halves = [buffer(dev, total / 2), buffer(dev, total / 2)];
            let segs: Vec<DataSegment> = halves.iter_mut().map(seg).collect();
            let io = dio(round, Op::Read, offset, total as u64, BioFlags::NONE);
            assert_eq!(run(dev, io, &segs), Outcome::Done);
            assert!(halves[0][..] == expect[..total / 2] && halves[1][..] == expect[total / 2..]);
        }
        assert_eq!(dev.stats().ios, 24);
    });
}

#[test]
fn many_in_flight_each_reported_once() {
    on_each_fs("many", 4 * MIB, |dev, _| {
        let qd = dev.queue_depth() as usize;
        let mut bufs: Vec<AlignedBuf> = (0..qd).map(|_| buffer(dev, 4096)).collect();
        for (i, b) in bufs.iter_mut().enumerate() {
            b.fill(i as u8);
            let io = dio(i as u32, Op::Write, i as u64 * 4096, 4096, BioFlags::NONE);
            // SAFETY: `bufs` outlives the reaping below.
            unsafe { dev.submit_data(io, &[seg(b)], 0) };
        }
        assert_eq!(dev.outstanding() as usize, qd);
        let got = reap(dev, qd);
        assert!(got.values().all(|o| *o == Outcome::Done));
        for i in 0..qd {
            let back = read(dev, i as u64 * 4096, 4096);
            assert!(back.iter().all(|&b| b == i as u8));
        }
    });
}

#[test]
fn fua_and_preflush_writes() {
    on_each_fs("fua", MIB, |dev, _| {
        let mut rng = TestRng::new(7);
        for (i, flags) in [
            BioFlags::FUA,
            BioFlags::PREFLUSH,
            BioFlags::FUA | BioFlags::PREFLUSH,
        ]
        .into_iter()
        .enumerate()
        {
            let mut data = vec![0u8; 8192];
            rng.fill(&mut data);
            let offset = i as u64 * 65536;
            assert_eq!(write(dev, offset, &data, flags), Outcome::Done, "{flags:?}");
            assert!(read(dev, offset, data.len())[..] == data[..]);
        }
    });
}

#[test]
fn flush() {
    on_each_fs("flush", MIB, |dev, _| {
        assert_eq!(write(dev, 0, &[5; 4096], BioFlags::NONE), Outcome::Done);
        // Through the core trait (no data) and through submit_data.
        dev.submit(dio(1, Op::Flush, 0, 0, BioFlags::NONE), 0);
        assert_eq!(reap(dev, 1)[&1], Outcome::Done);
        assert_eq!(
            run(dev, dio(2, Op::Flush, 0, 0, BioFlags::NONE), &[]),
            Outcome::Done
        );
    });
}

#[test]
fn discard_reads_zeroes() {
    on_each_fs("discard", MIB, |dev, dir| {
        assert_eq!(write(dev, 0, &[0xab; 65536], BioFlags::NONE), Outcome::Done);
        dev.submit(dio(1, Op::Discard, 8192, 16384, BioFlags::NONE), 0);
        assert_eq!(reap(dev, 1)[&1], Outcome::Done, "{}", dir.display());
        let back = read(dev, 0, 65536);
        assert!(back[..8192].iter().all(|&b| b == 0xab));
        assert!(
            back[8192..24576].iter().all(|&b| b == 0),
            "discarded range not zero"
        );
        assert!(back[24576..].iter().all(|&b| b == 0xab));
    });
}

#[test]
fn write_zeroes_reads_zeroes() {
    // On tmpfs the first write-zeroes gets EOPNOTSUPP and is resubmitted as
    // a hole punch; later ones punch at once. Several in flight at once
    // exercise both paths.
    on_each_fs("zeroes", MIB, |dev, dir| {
        for round in 0..2 {
            assert_eq!(write(dev, 0, &[0xcd; 65536], BioFlags::NONE), Outcome::Done);
            for i in 0..4u32 {
                let io = dio(
                    i,
                    Op::WriteZeroes,
                    u64::from(i) * 16384,
                    4096,
                    BioFlags::NONE,
                );
                // SAFETY: no data.
                unsafe { dev.submit_data(io, &[], 0) };
            }
            let got = reap(dev, 4);
            assert!(
                got.values().all(|o| *o == Outcome::Done),
                "{}: {got:?}",
                dir.display()
            );
            let back = read(dev, 0, 65536);
            for (i, chunk) in back.chunks(4096).enumerate() {
                let want = if i % 4 == 0 { 0 } else { 0xcd };
                assert!(chunk.iter().all(|&b| b == want), "round {round} block {i}");
            }
        }
    });
}

#[test]
fn short_read_reports_good_bytes() {
    on_each_fs("short", MIB, |dev, dir| {
        // The device ends 4096 bytes into this read (the core would never
        // send it, but the file could shrink under us).
        let mut buf = buffer(dev, 8192);
        let io = dio(5, Op::Read, MIB - 4096, 8192, BioFlags::NONE);
        let outcome = run(dev, io, &[seg(&mut buf)]);
        let want = Outcome::Failed {
            status: Status::IoError,
            good_bytes: 4096,
        };
        assert_eq!(outcome, want, "{}", dir.display());
    });
}

#[test]
fn core_submit_of_read_is_not_supported() {
    let file = temp_file(Path::new("/dev/shm"), "coreread", MIB);
    let mut dev = open(&file);
    dev.submit(dio(7, Op::Read, 0, 4096, BioFlags::NONE), 0);
    dev.submit(dio(8, Op::Write, 0, 4096, BioFlags::NONE), 0);
    assert_eq!(dev.outstanding(), 2);
    let got = reap(&mut dev, 2);
    let not_supported = Outcome::Failed {
        status: Status::NotSupported,
        good_bytes: 0,
    };
    assert_eq!(got[&7], not_supported);
    assert_eq!(got[&8], not_supported);
}

#[test]
fn read_only_refuses_writes() {
    let file = temp_file(Path::new("/dev/shm"), "readonly", MIB);
    {
        let mut dev = open(&file);
        assert_eq!(
            write(&mut dev, 0, &[9; 4096], BioFlags::NONE),
            Outcome::Done
        );
    }
    let opts = FileOptions {
        read_only: true,
        ..FileOptions::default()
    };
    let mut dev = FileDevice::open(&file, &opts).expect("open read-only");
    assert!(dev.read_only());
    let not_supported = Outcome::Failed {
        status: Status::NotSupported,
        good_bytes: 0,
    };
    assert_eq!(
        write(&mut dev, 0, &[1; 4096], BioFlags::NONE),
        not_supported
    );
    for op in [Op::Discard, Op::WriteZeroes] {
        dev.submit(dio(3, op, 0, 4096, BioFlags::NONE), 0);
        assert_eq!(reap(&mut dev, 1)[&3], not_supported, "{op:?}");
    }
    dev.submit(dio(4, Op::Flush, 0, 0, BioFlags::NONE), 0);
    assert_eq!(reap(&mut dev, 1)[&4], Outcome::Done);
    assert!(read(&mut dev, 0, 4096).iter().all(|&b| b == 9));
}

/// Through the page cache (`cache=page`): 512-byte sectors at any sector
/// offset, what one handle writes the other (O_DIRECT) reads once flushed,
/// and FUA and flush work.
#[test]
fn page_cache_takes_sectors() {
    for dir in dirs() {
        let file = temp_file(&dir, "page", MIB);
        let opts = FileOptions {
            cache: FileCache::Page,
            ..FileOptions::default()
        };
        let mut dev = FileDevice::open(&file, &opts).expect("open through the page cache");
        assert_eq!(dev.limits().logical_block_size, 512);
        assert_eq!(dev.alignment().offset, 512);
        assert!(
            dev.describe().contains("through the page cache"),
            "{}",
            dev.describe()
        );
        let data: Vec<u8> = (0..1536u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(write(&mut dev, 512, &data, BioFlags::NONE), Outcome::Done);
        assert_eq!(
            write(&mut dev, 4608, &data[..512], BioFlags::FUA),
            Outcome::Done
        );
        dev.submit(dio(5, Op::Flush, 0, 0, BioFlags::NONE), 0);
        assert_eq!(reap(&mut dev, 1)[&5], Outcome::Done);
        assert!(
            read(&mut dev, 512, 1536)[..] == data[..],
            "{}",
            dir.display()
        );
        let mut direct = open(&file);
        let back = read(&mut direct, 4096, 4096);
        assert!(back[512..1024] == data[..512], "{}", dir.display());
        let back = read(&mut direct, 0, 4096);
        assert!(back[512..2048] == data[..] && back[..512].iter().all(|&b| b == 0));
    }
}

#[test]
fn open_errors_name_the_path() {
    elevator_testkit::needs!("mkfifo");
    let missing = Path::new("/dev/shm/elevator-io-no-such-file");
    let e = FileDevice::open(missing, &FileOptions::default()).unwrap_err();
    assert!(matches!(e, DeviceError::Open { .. }), "{e}");
    assert!(e.to_string().contains("elevator-io-no-such-file"), "{e}");

    let kind = |p: &Path| match FileDevice::open(p, &FileOptions::default()) {
        Err(DeviceError::NotFileOrBlock { kind, path }) => {
            assert!(path.contains(&*p.to_string_lossy()));
            kind
        }
        other => panic!("{}: {other:?}", p.display()),
    };
    assert_eq!(kind(Path::new("/dev/shm")), "directory");
    assert_eq!(kind(Path::new("/dev/null")), "character device");

    let special = tempfile::tempdir().expect("temporary directory");
    let fifo = special.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
    );
    let k = kind(&fifo);
    assert_eq!(k, "FIFO");

    let sock = special.path().join("sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
    let k = kind(&sock);
    drop(listener);
    assert_eq!(k, "socket");

    // procfs takes no O_DIRECT.
    let e = FileDevice::open(Path::new("/proc/version"), &FileOptions::default()).unwrap_err();
    assert!(matches!(e, DeviceError::NoDirect { .. }), "{e}");
    assert!(e.to_string().contains("/proc/version"), "{e}");

    for dir in dirs() {
        let empty = temp_file(&dir, "empty", 0);
        let e = FileDevice::open(&empty, &FileOptions::default()).unwrap_err();
        assert!(matches!(e, DeviceError::Geometry { .. }), "{e}");
        assert!(e.to_string().contains("truncate -s"), "{e}");
        assert!(e.to_string().contains(&*empty.to_string_lossy()), "{e}");
    }
}

#[test]
fn limits_and_alignment_are_sane() {
    for dir in dirs() {
        let size = 3 * MIB + 1000; // not a whole number of blocks
        let file = temp_file(&dir, "limits", size);
        let dev = open(&file);
        let l = dev.limits();
        l.validate().expect("limits validate");
        let a = dev.alignment();
        assert!(l.logical_block_size.is_power_of_two() && l.logical_block_size >= 512);
        assert_eq!(l.logical_block_size, a.offset);
        assert!(a.memory.is_power_of_two());
        let lbs = u64::from(l.logical_block_size);
        assert_eq!(l.capacity << 9, size / lbs * lbs);
        assert_eq!(dev.kind(), FileKind::Regular);
        assert_eq!(dev.path(), &*file);
        assert!(!dev.read_only());
        assert!((1..=128).contains(&dev.queue_depth()));
        assert_eq!(dev.next_completion(), None);
        let d = dev.describe();
        assert!(
            !d.contains('\n') && d.contains(&*file.to_string_lossy()),
            "{d}"
        );
        // The bytes past the last whole block are not served, and it says so.
        let tail = size % lbs;
        assert_eq!(dev.unserved_tail(), tail);
        assert!(
            d.contains(&format!(
                "the file's last {tail} bytes are not served: they are not a whole \
                 {lbs}-byte block"
            )),
            "{d}"
        );
        let whole = temp_file(&dir, "whole", 3 * MIB);
        let w = open(&whole);
        assert_eq!(w.unserved_tail(), 0);
        assert!(!w.describe().contains("not served"), "{}", w.describe());
        println!("{d} [ring: {}]", dev.ring_setup());
    }
    // tmpfs has no block device under it: not rotational.
    let file = temp_file(Path::new("/dev/shm"), "rot", MIB);
    assert!(!open(&file).rotational());
}

#[test]
fn queue_depth_option_is_clamped() {
    let file = temp_file(Path::new("/dev/shm"), "qd", MIB);
    for (ask, get) in [(Some(0), 1), (Some(3), 3), (Some(100_000), 4096)] {
        let opts = FileOptions {
            queue_depth: ask,
            ..FileOptions::default()
        };
        assert_eq!(
            FileDevice::open(&file, &opts).expect("open").queue_depth(),
            get
        );
    }
    // Depth 1: I/Os one after another still work.
    let opts = FileOptions {
        queue_depth: Some(1),
        ..FileOptions::default()
    };
    let mut dev = FileDevice::open(&file, &opts).expect("open");
    for i in 0..4u8 {
        assert_eq!(
            write(&mut dev, 0, &[i; 4096], BioFlags::PREFLUSH),
            Outcome::Done
        );
    }
}

#[test]
fn busy_time_follows_the_clock_passed_in() {
    let file = temp_file(Path::new("/dev/shm"), "busy", MIB);
    let mut dev = open(&file);
    let mut buf = buffer(&dev, 4096);
    // SAFETY: `buf` outlives the reaping below.
    unsafe {
        dev.submit_data(
            dio(1, Op::Read, 0, 4096, BioFlags::NONE),
            &[seg(&mut buf)],
            100,
        )
    };
    while dev.outstanding() > 0 {
        dev.wait(None).expect("wait");
        dev.complete(350, &mut |_, _| {});
    }
    // Idle time (350..1000) does not count.
    dev.submit(dio(2, Op::Flush, 0, 0, BioFlags::NONE), 1_000);
    while dev.outstanding() > 0 {
        dev.wait(None).expect("wait");
        dev.complete(1_100, &mut |_, _| {});
    }
    let s = dev.stats();
    assert_eq!(s.ios, 2);
    assert_eq!(s.busy_ns, 250 + 100);
}

#[test]
fn wait_returns_with_nothing_in_flight() {
    let file = temp_file(Path::new("/dev/shm"), "idle", MIB);
    let mut dev = open(&file);
    dev.wait(None).expect("wait without timeout");
    dev.wait(Some(std::time::Duration::from_millis(1)))
        .expect("wait with timeout");
    dev.kick().expect("kick");
    dev.cancel_all();
    assert_eq!(dev.outstanding(), 0);
}

#[test]
fn cancel_all_reports_every_tag_once() {
    for dir in dirs() {
        let file = temp_file(&dir, "cancel", 16 * MIB);
        let opts = FileOptions {
            queue_depth: Some(128),
            ..FileOptions::default()
        };
        let mut dev = FileDevice::open(&file, &opts).expect("open");
        let mut bufs: Vec<AlignedBuf> = (0..128).map(|_| buffer(&dev, 65536)).collect();
        for (i, b) in bufs.iter_mut().enumerate() {
            let (op, flags) = match i % 4 {
                0 => (Op::Read, BioFlags::NONE),
                1 => (Op::Write, BioFlags::PREFLUSH),
                2 => (Op::Write, BioFlags::FUA),
                _ => (Op::Flush, BioFlags::NONE),
            };
            let bytes = if op == Op::Flush { 0 } else { 65536 };
            let io = dio(i as u32, op, i as u64 * 65536, bytes, flags);
            let segs = if op == Op::Flush {
                vec![]
            } else {
                vec![seg(b)]
            };
            // SAFETY: `bufs` outlives the reaping below.
            unsafe { dev.submit_data(io, &segs, 0) };
        }
        dev.kick().expect("kick");
        dev.cancel_all();
        let got = reap(&mut dev, 128);
        assert_eq!(got.len(), 128);
        let cancelled = got
            .values()
            .filter(|o| {
                matches!(
                    o,
                    Outcome::Failed {
                        status: Status::Cancelled,
                        ..
                    }
                )
            })
            .count();
        let done = got.values().filter(|o| **o == Outcome::Done).count();
        assert_eq!(cancelled + done, 128, "{}: {got:?}", dir.display());
        println!("{}: {done} done, {cancelled} cancelled", dir.display());
    }
}

#[test]
fn drop_with_io_in_flight_returns() {
    for dir in dirs() {
        let file = temp_file(&dir, "drop", 16 * MIB);
        // The buffers are declared first, so they outlive the device.
        let mut bufs: Vec<AlignedBuf> = (0..64)
            .map(|_| AlignedBuf::new(65536, 4096).expect("buf"))
            .collect();
        let mut dev = open(&file);
        for (i, b) in bufs.iter_mut().enumerate() {
            let op = if i % 2 == 0 { Op::Read } else { Op::Write };
            let io = dio(i as u32, op, i as u64 * 65536, 65536, BioFlags::PREFLUSH);
            // SAFETY: `bufs` outlives `dev`, whose drop waits for the I/O.
            unsafe { dev.submit_data(io, &[seg(b)], 0) };
        }
        dev.kick().expect("kick");
        drop(dev);
        // Queued but never kicked: the drop submits, cancels and reaps.
        let mut dev = open(&file);
        for (i, b) in bufs.iter_mut().enumerate() {
            let io = dio(i as u32, Op::Read, i as u64 * 65536, 65536, BioFlags::NONE);
            // SAFETY: as above.
            unsafe { dev.submit_data(io, &[seg(b)], 0) };
        }
        drop(dev);
    }
}

/// A loop device over a file, detached on drop.
struct Loop(String);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn loop_block_device() {
    elevator_testkit::needs!("losetup");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        common::skip("loop_block_device", "loop devices need root");
        return;
    }
    let dir = &dirs()[1];
    let file = temp_file(dir, "loop", 32 * MIB);
    let out = match Command::new("losetup")
        .args(["--find", "--show", "--direct-io=on"])
        .arg(&file)
        .output()
    {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            common::skip(
                "loop_block_device",
                &format!(
                    "losetup failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            );
            return;
        }
        Err(e) => {
            common::skip("loop_block_device", &format!("cannot run losetup: {e}"));
            return;
        }
    };
    let node = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let guard = Loop(node.clone());
    let mut dev = open(Path::new(&node));
    assert_eq!(dev.kind(), FileKind::Block);
    let l = dev.limits();
    l.validate().expect("limits validate");
    assert_eq!(l.capacity, (32 * MIB) >> 9);

    let name = node.trim_start_matches("/dev/");
    let sysfs = |attr: &str| -> u64 {
        let p = format!("/sys/block/{name}/queue/{attr}");
        std::fs::read_to_string(&p)
            .expect("sysfs")
            .trim()
            .parse()
            .expect("number")
    };
    assert_eq!(u64::from(l.logical_block_size), sysfs("logical_block_size"));
    assert_eq!(u64::from(l.max_sectors), sysfs("max_sectors_kb") * 2);
    assert_eq!(u64::from(l.max_segments), sysfs("max_segments").min(1024));
    assert_eq!(
        u64::from(l.max_segment_size),
        sysfs("max_segment_size").min(u64::from(u32::MAX)) / 512 * 512
    );
    assert_eq!(dev.rotational(), sysfs("rotational") == 1);
    println!("{} [ring: {}]", dev.describe(), dev.ring_setup());

    let mut rng = TestRng::new(99);
    let mut data = vec![0u8; 3 * 65536];
    rng.fill(&mut data);
    let mut bufs: Vec<AlignedBuf> = data
        .chunks(65536)
        .map(|c| AlignedBuf::copy_from(c, dev.alignment().memory.max(512) as usize).expect("buf"))
        .collect();
    let segs: Vec<DataSegment> = bufs.iter_mut().map(seg).collect();
    let io = dio(1, Op::Write, MIB, data.len() as u64, BioFlags::FUA);
    assert_eq!(run(&mut dev, io, &segs), Outcome::Done);
    assert!(read(&mut dev, MIB, data.len())[..] == data[..]);
    dev.submit(dio(2, Op::Flush, 0, 0, BioFlags::NONE), 0);
    assert_eq!(reap(&mut dev, 1)[&2], Outcome::Done);
    drop(dev);
    drop(guard);
}
