//! Devices driven by several threads: shares of one memory device or one
//! file (each a hardware context of its own on the same bytes), a wake-up
//! descriptor that ends a device's `wait`, and a file device whose
//! single-issuer ring is opened on one thread and driven on another.
//!
//! Nothing here depends on timing: threads meet at barriers and channels,
//! and a wake-up test only asks that `wait` returns.

use crate::common;

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Barrier, mpsc};

use elevator_core::{BioFlags, Device, DeviceIo, Op, Outcome};
use elevator_io::{
    AlignedBuf, DataDevice, DataSegment, DeviceError, DeviceSpec, FileDevice, FileOptions, IoBuf,
    MemDevice, MemOptions, OpenError, RealDevice,
};
use elevator_testkit::TestRng;
use tempfile::TempPath;

const BLOCKS: u64 = 64;

/// Bytes of block `n` as written by `writer`: noise from both, its last 8
/// bytes a checksum (FNV-1a) of the rest.
fn block(n: u64, writer: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    TestRng::new((n << 32) ^ writer).fill(&mut b);
    let sum = checksum(&b[..len - 8]);
    b[len - 8..].copy_from_slice(&sum.to_le_bytes());
    b
}

fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether `b` carries a good checksum.
fn checks(b: &[u8]) -> bool {
    let (body, sum) = b.split_at(b.len() - 8);
    sum == checksum(body).to_le_bytes()
}

/// Run one I/O of `buf`'s length at `offset` and wait for it.
fn run<D: DataDevice>(dev: &mut D, op: Op, offset: u64, buf: &mut AlignedBuf) -> Outcome {
    let io = DeviceIo {
        tag: 7,
        op,
        sector: offset >> 9,
        sectors: (buf.len() >> 9) as u32,
        flags: BioFlags::NONE,
    };
    let seg = DataSegment {
        addr: buf.as_mut_ptr(),
        len: buf.len() as u32,
    };
    // SAFETY: `buf` is valid for its length and untouched until the I/O is
    // reported: this function waits for that before it returns (and a
    // device dropped meanwhile would wait for it too).
    unsafe { dev.submit_data(io, &[seg], 0) };
    dev.kick().expect("kick");
    let mut got = None;
    loop {
        dev.complete(0, &mut |tag, o| {
            assert_eq!(tag, 7, "only our I/O is reported");
            assert!(got.replace(o).is_none(), "reported twice");
        });
        if let Some(o) = got {
            assert_eq!(dev.outstanding(), 0);
            return o;
        }
        dev.wait(None).expect("wait");
    }
}

/// On `dev`, as writer `me` of two: write my blocks (every other one), wait
/// for the other writer, read back its blocks and check them. Returns the
/// I/Os this handle did.
fn write_mine_read_theirs<D: DataDevice>(dev: &mut D, me: u64, bs: usize, meet: &Barrier) -> u64 {
    let align = dev.alignment().memory.max(512) as usize;
    let mut buf = AlignedBuf::new(bs, align).expect("buffer");
    let mut ios = 0;
    for n in (me..BLOCKS).step_by(2) {
        buf.copy_from_slice(&block(n, me, bs));
        assert_eq!(run(dev, Op::Write, n * bs as u64, &mut buf), Outcome::Done);
        ios += 1;
    }
    meet.wait();
    let other = 1 - me;
    for n in (other..BLOCKS).step_by(2) {
        buf.fill(0);
        assert_eq!(run(dev, Op::Read, n * bs as u64, &mut buf), Outcome::Done);
        ios += 1;
        assert!(checks(&buf), "writer {me}: block {n} has a bad checksum");
        assert!(
            buf[..] == block(n, other, bs)[..],
            "writer {me}: block {n} is not what writer {other} wrote"
        );
    }
    ios
}

/// Two handles on one device, one per thread, each writing its blocks and
/// reading the other's; each handle's statistics are its own.
fn two_threads<D: DataDevice + Send>(mut a: D, mut b: D, bs: usize) {
    let meet = Barrier::new(2);
    let (ia, ib) = std::thread::scope(|s| {
        let ta = s.spawn(|| write_mine_read_theirs(&mut a, 0, bs, &meet));
        let tb = s.spawn(|| write_mine_read_theirs(&mut b, 1, bs, &meet));
        (ta.join().expect("thread a"), tb.join().expect("thread b"))
    });
    assert_eq!(ia, BLOCKS);
    assert_eq!(ib, BLOCKS);
    assert_eq!(a.stats().ios, ia, "a counts its own I/Os");
    assert_eq!(b.stats().ios, ib, "b counts its own I/Os");
}

fn shm_file(test: &str, bytes: u64) -> Option<TempPath> {
    match common::scratch_file(Path::new("/dev/shm"), test, bytes) {
        Ok(f) => Some(f),
        Err(e) => {
            common::skip(test, &format!("cannot create a file in /dev/shm: {e}"));
            None
        }
    }
}

/// A device on a fresh 1 MiB file in /dev/shm (the file too, which must
/// outlive it), or `None` when there is none (the test is skipped).
fn shm_device(test: &str) -> Option<(TempPath, FileDevice)> {
    let file = shm_file(test, 1 << 20)?;
    let dev = FileDevice::open(&file, &FileOptions::default()).expect("open");
    Some((file, dev))
}

#[test]
fn mem_shares_on_two_threads_see_each_others_blocks() {
    let bs = 4096;
    let opts = MemOptions {
        logical_block_size: 4096,
        ..MemOptions::default()
    };
    let a = MemDevice::new(BLOCKS * bs as u64, opts).expect("mem");
    let b = a.share().expect("share");
    two_threads(a, b, bs);
}

/// `data` as two segments, split at byte `at`.
fn split_segments(data: &mut [u8], at: usize) -> [DataSegment; 2] {
    let (x, y) = data.split_at_mut(at);
    [
        DataSegment {
            addr: x.as_mut_ptr(),
            len: x.len() as u32,
        },
        DataSegment {
            addr: y.as_mut_ptr(),
            len: y.len() as u32,
        },
    ]
}

#[test]
fn mem_shares_keep_the_same_bytes_and_lend_no_windows() {
    let a = common::mem(64, 8);
    let w = a.map(0, 512).expect("a lone device lends windows");
    match a.share() {
        Err(DeviceError::WindowsLent { windows: 1 }) => {}
        other => panic!("share with a window out: {:?}", other.map(|_| ())),
    }
    drop(w);
    let mut b = a.share().expect("share");
    assert!(a.map(0, 512).is_none(), "a shared store lends no windows");
    assert!(b.map(0, 512).is_none(), "a shared store lends no windows");
    // An odd split of the I/O's bytes over segments moves whole words all
    // the same.
    let mut data: Vec<u8> = (0..1024u32).map(|i| (i * 7 + 3) as u8).collect();
    let segs = split_segments(&mut data, 13);
    let io = |op| DeviceIo {
        tag: 1,
        op,
        sector: 4,
        sectors: 2,
        flags: BioFlags::NONE,
    };
    // SAFETY: the segments cover `data`, which outlives the I/O (a memory
    // device is done with it when `submit_data` returns).
    unsafe { b.submit_data(io(Op::Write), &segs, 0) };
    b.complete(0, &mut |_, o| assert_eq!(o, Outcome::Done));
    let want = data.clone();
    assert_eq!(&a.contents()[2048..3072], &want[..], "a sees b's write");
    data.fill(0);
    let segs = split_segments(&mut data, 1021);
    // SAFETY: as above.
    unsafe { b.submit_data(io(Op::Read), &segs, 0) };
    b.complete(0, &mut |_, o| assert_eq!(o, Outcome::Done));
    assert_eq!(data, want, "read back through odd segments");
    drop(b);
    assert!(a.map(0, 512).is_some(), "alone again: windows again");
}

#[test]
fn file_shares_on_two_threads_see_each_others_blocks() {
    let Some(file) = shm_file("share-file", BLOCKS * 4096) else {
        return;
    };
    let spec = DeviceSpec::parse(&format!("file:{}", file.display())).expect("spec");
    let a = spec.open().expect("open");
    let b = a.share().expect("share");
    let bs = a.alignment().offset.max(4096) as usize;
    // (`RealDevice` itself stays on one thread while a paced model's
    // `Box<dyn Device>` is not `Send`; its file devices move.)
    let (RealDevice::File(a), RealDevice::File(b)) = (a, b) else {
        panic!("a share of a file is a file");
    };
    println!("{}", a.describe());
    two_threads(*a, *b, bs);
}

#[test]
fn fault_shares_keep_their_spec_and_models_refuse_to_share() {
    let faulty = DeviceSpec::parse("mem:64k,fail_sectors=8-16,fail_seed=5")
        .expect("spec")
        .open()
        .expect("open");
    let mut share = faulty.share().expect("share");
    let RealDevice::Faulty(f) = &share else {
        panic!("a share of a faulty device has faults");
    };
    assert_eq!(f.spec().bad_sectors, vec![(8, 16)]);
    assert_ne!(f.spec().seed, 5, "a share gets a seed of its own");
    // Sectors 0..16, failing from sector 8 on.
    let mut buf = common::buf(8192);
    assert!(matches!(
        run(&mut share, Op::Read, 0, &mut buf),
        Outcome::Failed {
            good_bytes: 4096,
            ..
        }
    ));
    let paced = DeviceSpec::parse("hdd-7200")
        .expect("spec")
        .open()
        .expect("open");
    match paced.share() {
        Err(e @ OpenError::NotShareable { .. }) => {
            assert!(e.to_string().contains("cannot be shared"), "{e}")
        }
        other => panic!("a model shared: {:?}", other.map(|_| ())),
    }
}

/// `dev.wait(None)` returns once another thread writes to the watched
/// socket, and again for a second write once the first is read.
fn woken_by_another_thread<D: DataDevice>(dev: &mut D) {
    let (mut rx, tx) = UnixStream::pair().expect("socket pair");
    rx.set_nonblocking(true).expect("nonblocking");
    dev.watch(rx.as_raw_fd()).expect("watch");
    assert_eq!(dev.outstanding(), 0);
    let (go, ready) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut tx = &tx;
            for () in ready {
                tx.write_all(b"x").expect("wake");
            }
        });
        for round in 0..2 {
            go.send(()).expect("send");
            // Returns at once if a wake-up is already noted; loop until
            // the byte is there (a lost wake-up would hang here).
            let mut byte = [0u8; 1];
            loop {
                dev.wait(None).expect("wait");
                dev.complete(0, &mut |tag, _| panic!("round {round}: reported tag {tag}"));
                match rx.read(&mut byte) {
                    Ok(1) => break,
                    Ok(n) => panic!("read {n}"),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => panic!("read: {e}"),
                }
            }
            assert_eq!(dev.outstanding(), 0, "a wake-up is no I/O");
        }
        drop(go);
    });
    // Still a working device, with the watch armed: I/O completes and is
    // the only thing reported.
    let mut buf = AlignedBuf::new(4096, dev.alignment().memory.max(512) as usize).expect("buf");
    assert_eq!(run(dev, Op::Read, 0, &mut buf), Outcome::Done);
    assert!(matches!(dev.watch(-1), Err(DeviceError::Watch(_))));
}

#[test]
fn a_watched_descriptor_wakes_a_mem_device() {
    woken_by_another_thread(&mut common::mem(64, 8));
}

#[test]
fn a_watched_descriptor_wakes_a_paced_device() {
    let mut dev = DeviceSpec::parse("null")
        .expect("spec")
        .open()
        .expect("open");
    woken_by_another_thread(&mut dev);
}

#[test]
fn a_watched_descriptor_wakes_a_file_device() {
    let Some((file, mut dev)) = shm_device("share-watch") else {
        return;
    };
    woken_by_another_thread(&mut dev);
    let mut polled = FileDevice::open_polled(&file, &FileOptions::default()).expect("open");
    woken_by_another_thread(&mut polled);
    // Through the fault wrapper too.
    let spec =
        DeviceSpec::parse(&format!("file:{},fail_rate=0.0001", file.display())).expect("spec");
    woken_by_another_thread(&mut spec.open().expect("open"));
}

#[test]
fn a_file_device_opened_on_one_thread_is_driven_on_another() {
    let Some((_file, mut dev)) = shm_device("share-move") else {
        return;
    };
    let setup = dev.ring_setup();
    println!("ring: {setup}");
    assert!(dev.describe().contains(&setup), "describe names the ring");
    let bs = dev.alignment().offset.max(4096) as usize;
    let align = dev.alignment().memory.max(512) as usize;
    // Driven on a thread other than the one that opened it.
    let mut dev = std::thread::spawn(move || {
        let mut buf = AlignedBuf::new(bs, align).expect("buf");
        for n in 0..8 {
            buf.copy_from_slice(&block(n, 9, bs));
            assert_eq!(
                run(&mut dev, Op::Write, n * bs as u64, &mut buf),
                Outcome::Done
            );
        }
        dev
    })
    .join()
    .expect("driving thread");
    // Back here with nothing in flight: it goes on working (a fresh ring of
    // this thread's if the first was bound to the other).
    let mut buf = AlignedBuf::new(bs, align).expect("buf");
    for n in 0..8 {
        assert_eq!(
            run(&mut dev, Op::Read, n * bs as u64, &mut buf),
            Outcome::Done
        );
        assert!(buf[..] == block(n, 9, bs)[..], "block {n}");
    }
    assert_eq!(dev.stats().ios, 16);
}

#[test]
fn in_flight_io_stays_with_its_thread() {
    let Some((_file, dev)) = shm_device("share-inflight") else {
        return;
    };
    let single = dev.ring_setup().contains("single-issuer");
    let align = dev.alignment().memory.max(512) as usize;
    let (to_main, from_worker) = mpsc::channel::<FileDevice>();
    let (to_worker, from_main) = mpsc::channel::<FileDevice>();
    let worker = std::thread::spawn(move || {
        let mut dev = dev;
        // `_buf` lives on this thread until the device, back here, has
        // reported the I/O (below); the device is dropped here too.
        let _buf = read_first_block(&mut dev, 3, align);
        to_main.send(dev).expect("send");
        let mut dev = from_main.recv().expect("device back");
        let mut done = false;
        while !done {
            dev.complete(0, &mut |tag, o| {
                assert_eq!((tag, o), (3, Outcome::Done));
                done = true;
            });
            if !done {
                dev.wait(None).expect("wait on the issuer thread");
            }
        }
        assert_eq!(dev.outstanding(), 0);
    });
    let mut dev = from_worker.recv().expect("device");
    if single {
        assert!(matches!(dev.wait(None), Err(DeviceError::WrongThread)));
        assert_eq!(dev.outstanding(), 1, "still in flight, not lost");
    }
    to_worker.send(dev).expect("send back");
    worker.join().expect("worker");
}

#[test]
fn only_rings_that_wake_a_poller_lend_their_descriptor() {
    let Some((file, dev)) = shm_device("share-poll") else {
        return;
    };
    let defer = dev.ring_setup().contains("defer-taskrun");
    assert_eq!(dev.poll_fd().is_none(), defer);
    let mut polled = FileDevice::open_polled(&file, &FileOptions::default()).expect("open");
    assert!(!polled.ring_setup().contains("defer-taskrun"));
    // As the NBD server does: the descriptor goes into an epoll set before
    // the ring has done anything (or been enabled by its thread).
    let raw = polled
        .poll_fd()
        .expect("a polled ring lends its descriptor")
        .as_raw_fd();
    // SAFETY: plain system calls on descriptors this test owns; `ev` is
    // valid for the call.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(ep >= 0);
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: 1,
    };
    // SAFETY: as above.
    assert_eq!(
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, raw, &mut ev) },
        0
    );
    // A read in flight: the descriptor becomes readable when it is done.
    let align = polled.alignment().memory as usize;
    let _buf = read_first_block(&mut polled, 1, align);
    let mut got = None;
    while got.is_none() {
        // SAFETY: `ev` is valid for one event; no timeout: a ring that did
        // not wake its poller would hang the test here.
        let n = unsafe { libc::epoll_wait(ep, &mut ev, 1, -1) };
        assert!(n >= 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR));
        polled.complete(0, &mut |_, o| got = Some(o));
    }
    assert_eq!(got, Some(Outcome::Done));
    // SAFETY: `ep` is ours, closed once.
    unsafe { libc::close(ep) };
}

/// Submit a read of `dev`'s first block (as `tag`, into a buffer aligned to
/// `align` bytes) and kick it; the buffer it reads into, which the caller
/// keeps until the read is reaped.
fn read_first_block<D: DataDevice>(dev: &mut D, tag: u32, align: usize) -> AlignedBuf {
    let bs = dev.alignment().offset.max(4096) as usize;
    let mut buf = AlignedBuf::new(bs, align).expect("buf");
    let io = DeviceIo {
        tag,
        op: Op::Read,
        sector: 0,
        sectors: (bs >> 9) as u32,
        flags: BioFlags::NONE,
    };
    let seg = DataSegment {
        addr: buf.as_mut_ptr(),
        len: bs as u32,
    };
    // SAFETY: the buffer's memory is on the heap and goes to the caller,
    // which keeps it until the read is reaped.
    unsafe { dev.submit_data(io, &[seg], 0) };
    dev.kick().expect("kick");
    buf
}

#[test]
fn complete_alone_reaps_deferred_completions() {
    let Some((_file, mut dev)) = shm_device("share-defer") else {
        return;
    };
    let align = dev.alignment().memory as usize;
    let _buf = read_first_block(&mut dev, 1, align);
    // Never `wait`: with DEFER_TASKRUN, only an enter with GETEVENTS posts
    // the completion, and `complete` must make it (else this spins for
    // ever).
    let mut got = None;
    while got.is_none() {
        dev.complete(0, &mut |_, o| got = Some(o));
        std::thread::yield_now();
    }
    assert_eq!(got, Some(Outcome::Done));
}

#[test]
fn devices_move_between_threads() {
    fn send<T: Send>() {}
    send::<MemDevice>();
    send::<FileDevice>();
    send::<elevator_io::FaultDevice<MemDevice>>();
}

#[test]
fn a_shared_store_lends_windows_for_the_kernel_to_send() {
    // 256 KiB: a write across the store's 64 KiB lock chunks.
    let a = common::mem(256, 8);
    let mut b = a.share().expect("share");
    let mut data: Vec<u8> = (0..8192u32).map(|i| (i * 13 + 5) as u8).collect();
    let at: u64 = (64 << 10) - 4096;
    let segs = split_segments(&mut data, 4096 + 7);
    let io = |op| DeviceIo {
        tag: 3,
        op,
        sector: at >> 9,
        sectors: 16,
        flags: BioFlags::NONE,
    };
    // SAFETY: the segments cover `data`, which outlives the I/O (a memory
    // device is done with it when `submit_data` returns).
    unsafe { b.submit_data(io(Op::Write), &segs, 0) };
    b.complete(0, &mut |_, o| assert_eq!(o, Outcome::Done));
    // Shared: a window for the kernel, not for this process to read.
    let mut lent = elevator_io::IoMem::Lent(a.lend(at, 8192).expect("lent while shared"));
    assert!(a.map(at, 8192).is_none(), "nor a window to read");
    let seg = DataSegment {
        addr: lent.as_mut_ptr(),
        len: 8192,
    };
    let mut a = a;
    // SAFETY: the window is on this very place: the read copies nothing.
    unsafe { a.submit_data(io(Op::Read), &[seg], 0) };
    a.complete(0, &mut |_, o| assert_eq!(o, Outcome::Done));
    let (tx, mut rx) = UnixStream::pair().expect("socket pair");
    let mut list = elevator_io::SendList::new();
    assert!(list.push(b"head"));
    assert!(list.push_mem(&lent, 0, 8192));
    assert_eq!(
        list.send(std::os::fd::AsFd::as_fd(&tx)).expect("sent"),
        8196
    );
    let mut got = vec![0u8; 8196];
    rx.read_exact(&mut got).expect("received");
    assert_eq!(&got[..4], b"head");
    assert_eq!(&got[4..], &data[..], "b's write, sent from a's store");
    assert!(
        matches!(a.share(), Err(DeviceError::WindowsLent { windows: 1 })),
        "no new handle while a window is out"
    );
    drop(b);
    // Alone again: the window reads as an ordinary one.
    assert_eq!(&lent[..], &data[..]);
}

#[test]
#[should_panic(expected = "lent for the kernel")]
fn reading_a_lent_window_of_a_shared_store_panics() {
    let a = common::mem(64, 8);
    let _b = a.share().expect("share");
    let lent = elevator_io::IoMem::Lent(a.lend(0, 512).expect("lent"));
    let _ = lent[0];
}
