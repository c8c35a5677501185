//! Allocation extents ([`DataDevice::extents`]) as devices report them: a
//! memory device by page (written, never written, zeroed whole), the same
//! on every share of its store and from another thread; a sparse file
//! through `SEEK_DATA`/`SEEK_HOLE`; a fault wrapper passing them on.

mod common;

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use common::{buf, drained, engine, mem_device};
use elevator_core::Device;
use elevator_io::{
    AlignedBuf, DataDevice, DeviceSpec, DioRequest, Engine, Extent, FileDevice, FileOptions,
    MemDevice,
};

const MIB: u64 = 1 << 20;

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
