//! What the elevator-io tests share: memory devices (plain, or with a hook
//! changing what they do), engine configurations and engines, aligned
//! buffers (plain, or counting how many were freed), draining, and scratch
//! files.

// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use elevator_core::{Device, DeviceIo, Nanos, Op, Outcome};
use elevator_io::{
    AlignedBuf, Alignment, Completion, DataDevice, DataSegment, DeviceError, Engine, EngineConfig,
    FileDevice, FileOptions, IoBuf, MemDevice, MemOptions,
};
pub use elevator_testkit::skip;
use tempfile::TempPath;

/// A memory device of `bytes` with 512-byte blocks taking `queue_depth` I/Os.
pub fn mem_device(bytes: u64, queue_depth: u32) -> MemDevice {
    MemDevice::new(
        bytes,
        MemOptions {
            logical_block_size: 512,
            queue_depth,
            ..MemOptions::default()
        },
    )
    .expect("memory device")
}

/// A memory device of `kib` KiB with 512-byte blocks taking `queue_depth`
/// I/Os.
pub fn mem(kib: u64, queue_depth: u32) -> MemDevice {
    mem_device(kib << 10, queue_depth)
}

/// What a [`Hooked`] memory device does differently; each method's default
/// is the plain memory device's behaviour.
pub trait Hook {
    /// Report the completions of `inner`.
    fn complete(&mut self, inner: &mut MemDevice, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        inner.complete(now, done)
    }

    /// See `io` with its `data` before the device does; `false` refuses
    /// it without touching memory (a read through the data-less path, which
    /// completes with NotSupported).
    fn submitting(&mut self, io: &DeviceIo, data: &[DataSegment]) -> bool {
        let _ = (io, data);
        true
    }

    /// The memory alignment the device asks for.
    fn alignment(&self, inner: &MemDevice) -> Alignment {
        inner.alignment()
    }
}

/// A non-rotational memory device whose completions, submissions or
/// alignment `hook` changes; it never reports a completion time, and its
/// kick and cancel do nothing.
pub struct Hooked<H> {
    pub inner: MemDevice,
    pub hook: H,
}

impl<H: Hook> Hooked<H> {
    pub fn new(inner: MemDevice, hook: H) -> Hooked<H> {
        Hooked { inner, hook }
    }
}

impl<H: Hook> Device for Hooked<H> {
    elevator_core::forward_device!(inner: describe, limits, queue_depth, outstanding, stats);
    fn rotational(&self) -> bool {
        false
    }
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.inner.submit(io, now)
    }
    fn next_completion(&self) -> Option<Nanos> {
        None
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        self.hook.complete(&mut self.inner, now, done)
    }
}

impl<H: Hook> DataDevice for Hooked<H> {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        if self.hook.submitting(&io, data) {
            // SAFETY: passed on; our caller keeps the contract.
            unsafe { self.inner.submit_data(io, data, now) }
        } else {
            let failed = DeviceIo { op: Op::Read, ..io };
            self.inner.submit(failed, now);
        }
    }
    fn kick(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        self.inner.wait(timeout)
    }
    fn cancel_all(&mut self) {}
    fn alignment(&self) -> Alignment {
        self.hook.alignment(&self.inner)
    }
}

/// An engine configuration: scheduler `sched` with `tunables` set.
pub fn config(sched: &str, tunables: &[(&str, &str)]) -> EngineConfig {
    EngineConfig {
        scheduler: sched.to_string(),
        tunables: tunables
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..EngineConfig::default()
    }
}

/// An engine on `dev` with scheduler `sched` and `tunables` set.
pub fn engine<D: DataDevice, B: IoBuf>(
    dev: D,
    sched: &str,
    tunables: &[(&str, &str)],
) -> Engine<D, B> {
    Engine::new(dev, &config(sched, tunables)).expect("engine")
}

/// An engine under `sched` short of tags: a memory device of 1 MiB taking
/// two I/Os, four tags, 4 KiB requests and no merging, so that a few
/// larger writes wait for tags.
pub fn short_of_tags(sched: &str) -> Engine<MemDevice> {
    engine(
        mem(1024, 2),
        sched,
        &[
            ("nr_requests", "4"),
            ("max_sectors_kb", "4"),
            ("nomerges", "2"),
        ],
    )
}

/// Everything `e` completes until it is idle, in the order it reports them.
pub fn drained<D: DataDevice, B: IoBuf>(e: &mut Engine<D, B>) -> Vec<Completion<B>> {
    let mut out = Vec::new();
    e.drain(&mut out).expect("drain");
    out
}

/// A 4096-byte-aligned buffer of `len` bytes.
pub fn buf(len: usize) -> AlignedBuf {
    AlignedBuf::new(len, 4096).expect("alloc")
}

/// A buffer that counts how many of its kind have been freed.
#[derive(Debug)]
pub struct Counted {
    buf: AlignedBuf,
    freed: Rc<Cell<usize>>,
}

impl Counted {
    pub fn new(len: usize, freed: &Rc<Cell<usize>>) -> Counted {
        Counted {
            buf: buf(len),
            freed: freed.clone(),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.freed.set(self.freed.get() + 1);
    }
}

// SAFETY: all of it is the inner AlignedBuf's memory, which keeps the
// trait's promises.
unsafe impl IoBuf for Counted {
    fn as_ptr(&self) -> *const u8 {
        self.buf.as_ptr()
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.as_mut_ptr()
    }
    fn len(&self) -> usize {
        self.buf.len()
    }
}

/// A file of `bytes` zero bytes in `dir`, removed when dropped. Where it
/// lives matters: `/dev/shm` is tmpfs (whose direct I/O io_uring runs on
/// worker threads), `/var/tmp` the root file system.
pub fn scratch_file(dir: &Path, tag: &str, bytes: u64) -> std::io::Result<TempPath> {
    let file = tempfile::Builder::new()
        .prefix(&format!("elevator-io-{tag}-"))
        .tempfile_in(dir)?;
    file.as_file().set_len(bytes)?;
    Ok(file.into_temp_path())
}

/// A scratch file of 1 MiB in `/dev/shm` (see [`scratch_file`]), opened as
/// a [`FileDevice`] under an engine with scheduler `sched` and `tunables`
/// set; `None`, after [`skip`] has said why, where there is no such file.
pub fn engine_on_shm(
    test: &str,
    tag: &str,
    sched: &str,
    tunables: &[(&str, &str)],
) -> Option<(TempPath, Engine<FileDevice>)> {
    let Some(file) = scratch_file(Path::new("/dev/shm"), tag, 1 << 20).ok() else {
        skip(test, "cannot create a file in /dev/shm");
        return None;
    };
    let dev = FileDevice::open(&file, &FileOptions::default()).expect("open");
    Some((file, engine(dev, sched, tunables)))
}
