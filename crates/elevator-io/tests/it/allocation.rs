//! No heap allocation per I/O once warm, measured with a counting global
//! allocator (per thread, so other tests in this binary do not disturb it).

use crate::common;

use common::{buf, engine, mem};
use elevator_core::IoContext;
use elevator_io::{AlignedBuf, Completion, DioRequest, Engine, MemDevice};

mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static ALLOCS: Cell<u64> = const { Cell::new(0) };
    }

    /// The system allocator, counting allocations per thread.
    pub struct Counting;

    fn count() {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    }

    /// Allocations made by this thread so far.
    pub fn allocations() -> u64 {
        ALLOCS.with(Cell::get)
    }

    // SAFETY: every call is passed to the system allocator unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: as the caller promised us.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: as the caller promised us.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count();
            // SAFETY: as the caller promised us.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as the caller promised us.
            unsafe { System.dealloc(ptr, layout) }
        }
    }
}

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// docs/io.md: "no heap allocation per I/O once warm". Requests of every kind,
/// under the caller's plug and not, with tag waits, recycled through the
/// engine: after a warm-up, a thousand more allocate nothing.
#[test]
fn no_allocation_per_io_once_warm() {
    use elevator_core::BioFlags;
    use elevator_core::rng::Rng;

    let a = counting::allocations();
    std::hint::black_box(vec![0u8; 64]);
    assert!(counting::allocations() > a, "the allocator counts");
    for sched in elevator_core::SCHEDULER_NAMES {
        let mut e: Engine<MemDevice> = engine(
            mem(1024, 4),
            sched,
            &[("nr_requests", "8"), ("max_sectors_kb", "8")],
        );
        let mut rng = Rng::new(5);
        let mut spare: Vec<Vec<AlignedBuf>> = (0..8)
            .map(|_| {
                let mut v = Vec::with_capacity(4);
                v.push(buf(16384));
                v.push(buf(4096));
                v
            })
            .collect();
        let mut out: Vec<Completion<AlignedBuf>> = Vec::with_capacity(16);
        let round = |e: &mut Engine<MemDevice>,
                     spare: &mut Vec<Vec<AlignedBuf>>,
                     out: &mut Vec<Completion<AlignedBuf>>,
                     rng: &mut Rng| {
            let plug = rng.below(2) == 0;
            if plug {
                e.plug();
            }
            for id in 0..8u64 {
                let off = rng.below(200) * 4096;
                let ctx = IoContext(rng.below(3) as u32);
                let req = match id {
                    6 => DioRequest::discard(off, 8192, id),
                    7 => DioRequest::flush(id).with_flags(BioFlags::PREFLUSH),
                    _ => {
                        let bufs = spare.pop().expect("spare buffers");
                        if id % 2 == 0 {
                            DioRequest::write(off, bufs, id)
                        } else {
                            DioRequest::read(off, bufs, id)
                        }
                    }
                };
                e.submit(req.with_ctx(ctx)).expect("accepted");
            }
            if plug {
                e.unplug();
            }
            e.drain(out).expect("drain");
            for c in out.drain(..) {
                assert!(c.result.is_ok(), "{sched}: {:?}", c.result);
                if !c.bufs.is_empty() {
                    spare.push(c.bufs);
                }
            }
        };
        for _ in 0..200 {
            round(&mut e, &mut spare, &mut out, &mut rng);
        }
        let before = counting::allocations();
        for _ in 0..125 {
            round(&mut e, &mut spare, &mut out, &mut rng);
        }
        let allocs = counting::allocations() - before;
        assert_eq!(allocs, 0, "{sched}: {allocs} allocations in 1000 warm I/Os");
    }
}

/// The same through io_uring on tmpfs.
#[test]
fn no_allocation_per_io_once_warm_on_a_file() {
    let Some((_file, mut e)) = common::engine_on_shm(
        module_path!(),
        "alloc",
        "mq-deadline",
        &[("submit_batch", "0")],
    ) else {
        return;
    };
    let mut bufs: Vec<Vec<AlignedBuf>> = (0..8).map(|_| vec![buf(8192)]).collect();
    let mut out: Vec<Completion<AlignedBuf>> = Vec::with_capacity(16);
    let mut before = 0;
    for round in 0..300u64 {
        if round == 100 {
            before = counting::allocations();
        }
        for id in 0..8u64 {
            let b = bufs.pop().expect("buffers");
            let off = (round * 8 + id) % 120 * 8192;
            let req = if id % 2 == 0 {
                DioRequest::write(off, b, id)
            } else {
                DioRequest::read(off, b, id)
            };
            e.submit(req).expect("accepted");
        }
        e.submit(DioRequest::flush(9)).expect("accepted");
        e.drain(&mut out).expect("drain");
        for c in out.drain(..) {
            assert!(c.result.is_ok());
            if !c.bufs.is_empty() {
                bufs.push(c.bufs);
            }
        }
    }
    let allocs = counting::allocations() - before;
    assert_eq!(allocs, 0, "{allocs} allocations in 1800 warm I/Os");
}
