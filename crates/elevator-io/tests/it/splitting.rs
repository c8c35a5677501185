//! How the engine cuts requests into pieces for the device: pieces keep the
//! device's memory alignment, and `max_sectors_kb` and `nr_requests`
//! changed mid-flight leave every request whole.

use crate::common;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use common::{Hook, Hooked, buf, drained, engine, mem};
use elevator_core::{DeviceIo, IoContext};
use elevator_io::{Alignment, DataSegment, DioRequest, Engine, MemDevice};

/// A memory device whose DMA alignment (4096) is larger than its logical
/// block (512), which fails any I/O with a segment off that alignment, as
/// the kernel does (EINVAL) for O_DIRECT.
struct Picky {
    misaligned: Rc<Cell<usize>>,
}

impl Hook for Picky {
    fn submitting(&mut self, _: &DeviceIo, data: &[DataSegment]) -> bool {
        let aligned = data.iter().all(|s| (s.addr as usize).is_multiple_of(4096));
        if !aligned {
            self.misaligned.set(self.misaligned.get() + 1);
        }
        aligned
    }
    fn alignment(&self, _inner: &MemDevice) -> Alignment {
        Alignment {
            offset: 512,
            memory: 4096,
        }
    }
}

/// docs/io.md: "every segment's address ... checked against the device's
/// alignment". The caller's segments are, and so must be the pieces the
/// engine cuts them into at `max_piece_bytes` (here `max_sectors_kb=6`:
/// 6 KiB pieces): a piece starting 6 KiB into a buffer is off the 4 KiB DMA
/// alignment, which O_DIRECT refuses with EINVAL. Pieces that end inside a
/// segment must end on the memory alignment.
#[test]
fn pieces_cut_from_a_segment_keep_the_memory_alignment() {
    let misaligned = Rc::new(Cell::new(0));
    let dev = Hooked::new(
        mem(1024, 4),
        Picky {
            misaligned: misaligned.clone(),
        },
    );
    let mut e: Engine<Hooked<Picky>> =
        engine(dev, "none", &[("max_sectors_kb", "6"), ("nomerges", "2")]);
    let mut data = buf(65536);
    data.fill(0x5A);
    e.submit(DioRequest::write(0, vec![data], 1))
        .expect("accepted");
    let out = drained(&mut e);
    assert_eq!(misaligned.get(), 0, "pieces off the DMA alignment");
    assert_eq!(out[0].result, Ok(65536));
    assert!(
        e.device().inner.contents()[..65536]
            .iter()
            .all(|&b| b == 0x5A)
    );
}

/// max_sectors_kb and nr_requests changed mid-flight: every request still
/// completes once, with the right data.
#[test]
fn tunables_changed_mid_flight() {
    let mut e: Engine<MemDevice> = engine(mem(1024, 2), "mq-deadline", &[("nr_requests", "4")]);
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
