//! Allocation extents ([`DataDevice::extents`]) as devices report them: a
//! memory device by page (written, never written, zeroed whole), the same
//! on every share of its store and from another thread; a sparse file
//! through `SEEK_DATA`/`SEEK_HOLE`; a fault wrapper passing them on.
//!
//! And what a memory device's holes cost: zeroing or trimming a hole
//! touches no memory, zeroing or trimming written pages gives them back to
//! the host (the test process's resident memory, `VmRSS`, is measured);
//! and a write that needs new pages fails with ENOSPC while the host is
//! short of memory (the host's answer is a stand-in's, so the test never
//! runs the machine short).

use crate::common;

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{buf, drained, engine, mem_device};
use elevator_core::{Device, Status};
use elevator_io::mem::HostMemory;
use elevator_io::{
    AlignedBuf, DataDevice, DeviceSpec, DioFailure, DioRequest, Engine, Extent, FileDevice,
    FileOptions, MemDevice, MemOptions,
};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Held by the tests that measure the process's resident memory, and by
/// those that make much of it resident, so that they do not disturb one
/// another's figures.
static RESIDENT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The test process's resident memory (`VmRSS`), in bytes.
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/self/status:\n{status}"));
    kib << 10
}

/// `len` bytes read from `e`'s device at `offset`.
fn read_back(e: &mut Engine<MemDevice, AlignedBuf>, offset: u64, len: usize) -> Vec<u8> {
    e.submit(DioRequest::read(offset, vec![buf(len)], 99))
        .expect("accepted");
    e.unplug();
    let mut done = drained(e);
    assert_eq!(done.len(), 1);
    let c = done.remove(0);
    assert!(c.result.is_ok(), "{:?}", c.result);
    c.bufs.iter().flat_map(|b| b.iter().copied()).collect()
}

fn run(e: &mut Engine<MemDevice, AlignedBuf>, req: DioRequest<AlignedBuf>) {
    e.submit(req).expect("accepted");
    e.unplug();
    for c in drained(e) {
        assert!(c.result.is_ok(), "{:?}", c.result);
    }
}

#[test]
fn a_memory_device_is_holes_but_where_written() {
    let mut e = engine(mem_device(4 * MIB, 8), "none", &[]);
    assert_eq!(
        e.device().extents(0, 4 * MIB, 100).expect("extents"),
        vec![Extent::hole(4 * MIB)]
    );
    run(&mut e, DioRequest::write(MIB, vec![buf(8192)], 1));
    run(&mut e, DioRequest::write(3 * MIB, vec![buf(65536)], 2));
    let got = e.device().extents(0, 4 * MIB, 100).expect("extents");
    assert_eq!(
        got,
        vec![
            Extent::hole(MIB),
            Extent::data(8192),
            Extent::hole(2 * MIB - 8192),
            Extent::data(65536),
            Extent::hole(MIB - 65536),
        ]
    );
    // Zeroing whole pages makes holes again; half a page stays data.
    run(&mut e, DioRequest::write_zeroes(3 * MIB, 32768, 3));
    run(&mut e, DioRequest::discard(MIB + 4096 + 512, 3584, 4));
    let got = e.device().extents(MIB, 3 * MIB, 100).expect("extents");
    assert_eq!(
        got,
        vec![
            Extent::data(8192),
            Extent::hole(2 * MIB - 8192 + 32768),
            Extent::data(32768),
            Extent::hole(MIB - 65536),
        ]
    );
    // Capped at `max`, and cut at the end of the device.
    assert_eq!(e.device().extents(0, 4 * MIB, 2).expect("extents").len(), 2);
    let tail = e.device().extents(4 * MIB - 512, MIB, 10).expect("extents");
    assert_eq!(tail, vec![Extent::hole(512)]);
    assert!(
        e.device()
            .extents(4 * MIB, 512, 10)
            .expect("extents")
            .is_empty()
    );
}

#[test]
fn zeroing_or_trimming_a_never_written_memory_device_touches_no_memory() {
    let _alone = RESIDENT.lock().unwrap_or_else(|p| p.into_inner());
    let mut e = engine(mem_device(GIB, 8), "none", &[]);
    let before = resident();
    run(&mut e, DioRequest::write_zeroes(0, GIB, 1));
    let zeroed = resident();
    run(&mut e, DioRequest::discard(0, GIB, 2));
    // Not page-aligned: the partial pages at either end are holes too.
    run(&mut e, DioRequest::write_zeroes(512, GIB - 1024, 3));
    let trimmed = resident();
    eprintln!(
        "never-written 1 GiB: resident {} MiB, after write-zeroes {} MiB, after trims {} MiB",
        before >> 20,
        zeroed >> 20,
        trimmed >> 20
    );
    for (what, after) in [("write-zeroes", zeroed), ("trim", trimmed)] {
        assert!(
            after < before + 64 * MIB,
            "a {what} of a never-written 1 GiB memory device took the resident memory \
             from {} MiB to {} MiB",
            before >> 20,
            after >> 20
        );
    }
    assert_eq!(
        e.device().extents(0, GIB, 100).expect("extents"),
        vec![Extent::hole(GIB)]
    );
    for at in [0, GIB / 2 + 512, GIB - MIB] {
        assert!(read_back(&mut e, at, MIB as usize).iter().all(|&b| b == 0));
    }
}

#[test]
fn trimming_or_zeroing_written_pages_gives_their_memory_back() {
    let _alone = RESIDENT.lock().unwrap_or_else(|p| p.into_inner());
    let mut e = engine(mem_device(256 * MIB, 8), "none", &[]);
    let chunk = 4 * MIB as usize;
    for i in 0..32u64 {
        let data = AlignedBuf::copy_from(&vec![0xA5; chunk], 4096).expect("alloc");
        run(
            &mut e,
            DioRequest::write(64 * MIB + i * 4 * MIB, vec![data], i),
        );
    }
    let written = resident();
    // Neither starts nor ends on a page: the pages at either end keep the
    // bytes outside the range.
    run(
        &mut e,
        DioRequest::discard(64 * MIB + 512, 64 * MIB - 512, 100),
    );
    run(
        &mut e,
        DioRequest::write_zeroes(128 * MIB, 64 * MIB - 512, 101),
    );
    let freed = resident();
    eprintln!(
        "128 MiB written: resident {} MiB, after trim and write-zeroes {} MiB",
        written >> 20,
        freed >> 20
    );
    assert!(
        freed + 100 * MIB < written,
        "trimming and zeroing 128 MiB of written pages took the resident memory from \
         {} MiB to {} MiB",
        written >> 20,
        freed >> 20
    );
    assert_eq!(
        e.device().extents(0, 256 * MIB, 100).expect("extents"),
        vec![
            Extent::hole(64 * MIB),
            Extent::data(4096),
            Extent::hole(128 * MIB - 8192),
            Extent::data(4096),
            Extent::hole(64 * MIB),
        ]
    );
    let head = read_back(&mut e, 64 * MIB, 8192);
    assert!(head[..512].iter().all(|&b| b == 0xA5), "before the trim");
    assert!(head[512..].iter().all(|&b| b == 0), "trimmed");
    let tail = read_back(&mut e, 192 * MIB - 8192, 8192);
    assert!(tail[..8192 - 512].iter().all(|&b| b == 0), "zeroed");
    assert!(
        tail[8192 - 512..].iter().all(|&b| b == 0xA5),
        "after the zeroing"
    );
    for at in [64 * MIB + 4096, 100 * MIB, 128 * MIB, 190 * MIB] {
        assert!(read_back(&mut e, at, 8192).iter().all(|&b| b == 0));
    }
    // Written again, a freed page holds what is written.
    let data = AlignedBuf::copy_from(&[0x5A; 4096], 4096).expect("alloc");
    run(&mut e, DioRequest::write(100 * MIB, vec![data], 102));
    assert!(
        read_back(&mut e, 100 * MIB, 4096)
            .iter()
            .all(|&b| b == 0x5A)
    );
}

/// A host whose available memory the test sets, counting the questions,
/// and that backs new writes with pages of `fault` bytes (4 KiB if 0).
#[derive(Default)]
struct StandInHost {
    available: AtomicU64,
    asked: AtomicU64,
    fault: u64,
}

impl StandInHost {
    fn set(&self, bytes: u64) {
        self.available.store(bytes, Ordering::SeqCst);
    }
    fn asked(&self) -> u64 {
        self.asked.load(Ordering::SeqCst)
    }
}

impl HostMemory for StandInHost {
    fn available(&self) -> Option<u64> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Some(self.available.load(Ordering::SeqCst))
    }
    fn fault_size(&self, _huge_pages: bool) -> u64 {
        self.fault.max(4096)
    }
}

/// Write `len` bytes of `fill` at `offset`; what the engine says.
fn write(
    e: &mut Engine<MemDevice, AlignedBuf>,
    offset: u64,
    len: usize,
    fill: u8,
) -> Result<u64, DioFailure> {
    let data = AlignedBuf::copy_from(&vec![fill; len], 4096).expect("alloc");
    e.submit(DioRequest::write(offset, vec![data], 7))
        .expect("accepted");
    e.unplug();
    let mut done = drained(e);
    assert_eq!(done.len(), 1);
    done.remove(0).result
}

fn no_space(r: Result<u64, DioFailure>) -> bool {
    matches!(
        r,
        Err(DioFailure {
            status: Status::NoSpace,
            ..
        })
    )
}

#[test]
fn writes_that_need_new_pages_fail_with_enospc_while_the_host_is_short() {
    let host = Arc::new(StandInHost::default());
    let opts = MemOptions {
        host_reserve: 64 * MIB,
        ..MemOptions::default()
    };
    let dev = MemDevice::with_host_memory(16 * MIB, opts, host.clone()).expect("mem");
    let mut e = engine(dev, "none", &[]);
    // Short from the start: a write that needs new pages is refused whole.
    host.set(32 * MIB);
    assert!(no_space(write(&mut e, 0, 8192, 0x11)), "refused");
    assert_eq!(host.asked(), 1);
    assert!(read_back(&mut e, 0, 8192).iter().all(|&b| b == 0));
    assert_eq!(
        e.device().extents(0, 16 * MIB, 10).expect("extents"),
        vec![Extent::hole(16 * MIB)]
    );
    // Room for 1 MiB and two pages past the reserve: this write takes two
    // pages and leaves half the rest (512 KiB) to write before asking again.
    host.set(64 * MIB + MIB + 8192);
    assert_eq!(write(&mut e, 0, 8192, 0x22), Ok(8192));
    assert_eq!(host.asked(), 2);
    assert_eq!(write(&mut e, MIB, 512 << 10, 0x22), Ok(512 << 10));
    assert_eq!(host.asked(), 2, "within what the host last said");
    // Short again: the next new page asks and is refused, while pages
    // already written take writes without a question, and trims and
    // write-zeroes go on.
    host.set(32 * MIB);
    assert!(no_space(write(&mut e, 4 * MIB, 4096, 0x33)), "refused");
    assert_eq!(host.asked(), 3);
    assert_eq!(write(&mut e, 0, 8192, 0x44), Ok(8192));
    assert_eq!(write(&mut e, MIB + 4096, 4096, 0x44), Ok(4096));
    assert_eq!(host.asked(), 3, "written pages take writes unasked");
    run(&mut e, DioRequest::discard(MIB, 256 << 10, 8));
    run(&mut e, DioRequest::write_zeroes(MIB + (256 << 10), 4096, 9));
    assert_eq!(host.asked(), 3);
    assert!(
        no_space(write(&mut e, MIB, 4096, 0x55)),
        "trimmed: new again"
    );
    assert_eq!(host.asked(), 4);
    // Memory back: new pages are taken again, and many of them between
    // two questions.
    host.set(GIB);
    assert_eq!(write(&mut e, 4 * MIB, 4096, 0x66), Ok(4096));
    assert_eq!(host.asked(), 5);
    for i in 0..8 {
        assert_eq!(
            write(&mut e, 8 * MIB + i * MIB, MIB as usize, 0x77),
            Ok(MIB)
        );
    }
    assert_eq!(host.asked(), 5, "8 MiB of new pages within one answer");
    assert!(read_back(&mut e, 0, 8192).iter().all(|&b| b == 0x44));
    assert!(read_back(&mut e, 4 * MIB, 4096).iter().all(|&b| b == 0x66));
    assert!(
        read_back(&mut e, 4 * MIB + 4096, 4096)
            .iter()
            .all(|&b| b == 0)
    );
    // Where the kernel backs new writes with 2 MiB huge pages, the first
    // write into a 2 MiB region costs all of it.
    let huge = Arc::new(StandInHost {
        fault: 2 * MIB,
        ..StandInHost::default()
    });
    let dev = MemDevice::with_host_memory(16 * MIB, opts, huge.clone()).expect("mem");
    let mut e = engine(dev, "none", &[]);
    huge.set(64 * MIB + MIB);
    assert!(
        no_space(write(&mut e, 0, 4096, 1)),
        "2 MiB wanted, 1 MiB left"
    );
    huge.set(64 * MIB + 5 * MIB);
    assert_eq!(write(&mut e, 0, 4096, 1), Ok(4096));
    // 3 MiB left, and half of it (1.5 MiB) to go before asking again:
    // not enough for a fresh region, plenty for the rest of this one.
    huge.set(0);
    assert_eq!(write(&mut e, 4096, MIB as usize, 1), Ok(MIB));
    assert!(no_space(write(&mut e, 2 * MIB, 4096, 1)), "a fresh region");
    // With no reserve the host is never asked.
    let never = Arc::new(StandInHost::default());
    let off = MemOptions {
        host_reserve: 0,
        ..MemOptions::default()
    };
    let dev = MemDevice::with_host_memory(4 * MIB, off, never.clone()).expect("mem");
    let mut e = engine(dev, "none", &[]);
    assert_eq!(write(&mut e, 0, MIB as usize, 1), Ok(MIB));
    assert_eq!(never.asked(), 0);
}

#[test]
fn shares_of_a_memory_device_see_the_same_pages() {
    let a = mem_device(MIB, 8);
    let b = a.share().expect("share");
    let mut eb = engine(b, "none", &[]);
    let writer = std::thread::spawn(move || {
        run(&mut eb, DioRequest::write(65536, vec![buf(4096)], 1));
        eb
    });
    let eb = writer.join().expect("writer thread");
    let want = vec![
        Extent::hole(65536),
        Extent::data(4096),
        Extent::hole(MIB - 65536 - 4096),
    ];
    assert_eq!(a.extents(0, MIB, 10).expect("extents"), want);
    assert_eq!(eb.device().extents(0, MIB, 10).expect("extents"), want);
    // A trim through one handle (its pages go back to the kernel while
    // the store is shared) is a hole of zeroes through the other; a page
    // only partly trimmed keeps the rest of its bytes.
    let mut ea = engine(a, "none", &[]);
    run(&mut ea, DioRequest::discard(65536 - 4096, 4096 + 4096, 2));
    run(&mut ea, DioRequest::write(65536 + 8192, vec![buf(4096)], 3));
    let mut eb = eb;
    let data = AlignedBuf::copy_from(&[0x3C; 4096], 4096).expect("alloc");
    run(&mut eb, DioRequest::write(65536 + 8192, vec![data], 4));
    run(&mut ea, DioRequest::discard(65536 + 8192 + 1024, 1024, 5));
    for e in [
        ea.device().extents(0, MIB, 10),
        eb.device().extents(0, MIB, 10),
    ] {
        assert_eq!(
            e.expect("extents"),
            vec![
                Extent::hole(65536 + 8192),
                Extent::data(4096),
                Extent::hole(MIB - 65536 - 12288),
            ]
        );
    }
    let mut got = vec![0u8; 12288];
    eb.device()
        .contents()
        .iter()
        .skip(65536)
        .take(12288)
        .zip(got.iter_mut())
        .for_each(|(b, g)| *g = *b);
    assert!(got[..8192].iter().all(|&b| b == 0));
    assert!(got[8192..9216].iter().all(|&b| b == 0x3C));
    assert!(got[9216..10240].iter().all(|&b| b == 0));
    assert!(got[10240..].iter().all(|&b| b == 0x3C));
}

#[test]
fn a_small_memory_device_zeroes_by_writing() {
    // Under 1 MiB the store comes from the allocator, not a mapping of its
    // own: no pages go back, but zeroing still zeroes and makes holes.
    let mut e = engine(mem_device(256 << 10, 8), "none", &[]);
    let data = AlignedBuf::copy_from(&vec![0xA5; 256 << 10], 4096).expect("alloc");
    run(&mut e, DioRequest::write(0, vec![data], 1));
    run(&mut e, DioRequest::discard(4096 + 512, 64 << 10, 2));
    run(&mut e, DioRequest::write_zeroes(128 << 10, 128 << 10, 3));
    let got = read_back(&mut e, 0, 256 << 10);
    let zero = 4096 + 512..(64 << 10) + 4096 + 512;
    for (i, &b) in got.iter().enumerate() {
        let want = if zero.contains(&i) || i >= 128 << 10 {
            0
        } else {
            0xA5
        };
        assert_eq!(b, want, "byte {i}");
    }
    assert_eq!(
        e.device().extents(0, 256 << 10, 10).expect("extents"),
        vec![
            Extent::data(8192),
            Extent::hole(15 * 4096),
            Extent::data((128 << 10) - 17 * 4096),
            Extent::hole(128 << 10),
        ]
    );
}

#[test]
fn a_sparse_file_device_reports_its_holes_and_specs_pass_them_on() {
    let Ok(path) = common::scratch_file(Path::new("/dev/shm"), "extents", 0) else {
        common::skip("extents", "cannot create a file in /dev/shm");
        return;
    };
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        f.set_len(16 * MIB).expect("set_len");
        f.seek(SeekFrom::Start(4 * MIB)).expect("seek");
        f.write_all(&vec![1u8; MIB as usize]).expect("write");
    }
    let dev = match FileDevice::open(&path, &FileOptions::default()) {
        Ok(d) => d,
        Err(e) => {
            common::skip("extents", &format!("cannot open on /dev/shm: {e}"));
            return;
        }
    };
    let want = vec![
        Extent::hole(4 * MIB),
        Extent::data(MIB),
        Extent::hole(11 * MIB),
    ];
    assert_eq!(dev.extents(0, 16 * MIB, 100).expect("extents"), want);
    assert_eq!(
        dev.extents(4 * MIB + 4096, 8192, 100).expect("extents"),
        vec![Extent::data(8192)]
    );
    // Through a spec with faults: the same.
    let text = format!("file:{},fail_rate=0.5", path.display());
    let real = DeviceSpec::parse(&text)
        .expect("parses")
        .open()
        .expect("opens");
    assert_eq!(real.extents(0, 16 * MIB, 100).expect("extents"), want);
    assert_eq!(real.limits().capacity, 16 * MIB / 512);
}
