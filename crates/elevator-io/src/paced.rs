//! A simulated device on the real clock: a model from elevator-sim (a 7200
//! rpm disk, an SSD, a RAID-0) decides when each I/O completes, and the data
//! lives in a sparse store in memory. A client of an export backed by one
//! sees the model's latencies for real (NBD clients, `elevator run`).
//!
//! Data moves when an I/O is submitted (a read sees what was written before
//! it was submitted); the completion is reported when the model says the
//! I/O is done. The store keeps only what has been written, in 64 KiB
//! chunks, so a 1000 GB model costs nothing until it is used.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use elevator_core::{Device, DeviceIo, Nanos, Op, Outcome};

use crate::device::{Alignment, DataDevice, DataSegment, DeviceError, sleep_or_watch, watchable};

/// Bytes per chunk of the sparse store.
const CHUNK: usize = 64 << 10;

/// Memory holding only what was written.
#[derive(Debug, Default)]
pub struct SparseStore {
    chunks: HashMap<u64, Box<[u8]>>,
}

impl SparseStore {
    /// Copy `len` bytes at byte `offset` to `dst`.
    ///
    /// # Safety
    ///
    /// `dst` must be valid for writes of `len` bytes.
    unsafe fn read(&self, mut offset: u64, dst: *mut u8, len: usize) {
        let mut done = 0;
        while done < len {
            let (key, at) = (offset / CHUNK as u64, (offset % CHUNK as u64) as usize);
            let n = (CHUNK - at).min(len - done);
            // SAFETY: `done + n <= len`, inside `dst` by the caller's promise;
            // the chunk is our own allocation of CHUNK bytes and
            // `at + n <= CHUNK`.
            unsafe {
                match self.chunks.get(&key) {
                    Some(c) => std::ptr::copy_nonoverlapping(c.as_ptr().add(at), dst.add(done), n),
                    None => std::ptr::write_bytes(dst.add(done), 0, n),
                }
            }
            done += n;
            offset += n as u64;
        }
    }

    /// Copy `len` bytes from `src` to byte `offset`.
    ///
    /// # Safety
    ///
    /// `src` must be valid for reads of `len` bytes.
    unsafe fn write(&mut self, mut offset: u64, src: *const u8, len: usize) {
        let mut done = 0;
        while done < len {
            let (key, at) = (offset / CHUNK as u64, (offset % CHUNK as u64) as usize);
            let n = (CHUNK - at).min(len - done);
            let c = self
                .chunks
                .entry(key)
                .or_insert_with(|| vec![0u8; CHUNK].into_boxed_slice());
            // SAFETY: as in `read`, the other way round.
            unsafe { std::ptr::copy_nonoverlapping(src.add(done), c.as_mut_ptr().add(at), n) };
            done += n;
            offset += n as u64;
        }
    }

    /// Make `len` bytes at `offset` read as zeroes (dropping whole chunks).
    fn zero(&mut self, mut offset: u64, len: u64) {
        let end = offset + len;
        while offset < end {
            let (key, at) = (offset / CHUNK as u64, offset % CHUNK as u64);
            let n = (CHUNK as u64 - at).min(end - offset);
            if n == CHUNK as u64 {
                self.chunks.remove(&key);
            } else if let Some(c) = self.chunks.get_mut(&key) {
                c[at as usize..(at + n) as usize].fill(0);
            }
            offset += n;
        }
    }

    /// Bytes of memory in use.
    pub fn resident(&self) -> u64 {
        (self.chunks.len() * CHUNK) as u64
    }
}

/// A device model paced by the real clock, with its data in memory.
///
/// One thread drives it: a model is one queue, and cannot be shared
/// between threads yet.
pub struct PacedDevice {
    model: Box<dyn Device + Send>,
    store: SparseStore,
    /// The engine's time at the last call, and when that was, to tell how
    /// long to sleep in `wait`.
    last: (Nanos, Instant),
    /// The descriptor `wait` also watches ([`DataDevice::watch`]).
    watch: Option<std::os::fd::RawFd>,
}

impl PacedDevice {
    /// Pace `model` by the real clock.
    pub fn new(model: Box<dyn Device + Send>) -> PacedDevice {
        PacedDevice {
            model,
            store: SparseStore::default(),
            last: (0, Instant::now()),
            watch: None,
        }
    }

    /// The data written so far.
    pub fn store(&self) -> &SparseStore {
        &self.store
    }

    fn mark(&mut self, now: Nanos) {
        self.last = (now, Instant::now());
    }

    fn range_ok(&self, io: &DeviceIo) -> bool {
        io.sector.saturating_add(u64::from(io.sectors)) <= self.model.limits().capacity
    }
}

impl Device for PacedDevice {
    fn describe(&self) -> String {
        format!("{} (paced by the real clock)", self.model.describe())
    }
    elevator_core::forward_device!(model: limits, queue_depth, rotational, next_completion,
        outstanding, stats);
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.mark(now);
        if matches!(io.op, Op::Discard | Op::WriteZeroes) && self.range_ok(&io) {
            self.store.zero(io.sector << 9, io.bytes());
        }
        self.model.submit(io, now);
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        self.mark(now);
        self.model.complete(now, done);
    }
}

impl DataDevice for PacedDevice {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        if io.op.has_data() && self.range_ok(&io) {
            let mut at = io.sector << 9;
            for seg in data {
                let len = seg.len as usize;
                // SAFETY: the segment is valid for `len` bytes by
                // `submit_data`'s contract.
                unsafe {
                    if io.op == Op::Read {
                        self.store.read(at, seg.addr, len);
                    } else {
                        self.store.write(at, seg.addr, len);
                    }
                }
                at += len as u64;
            }
        } else {
            // The engine never sends I/O past the end (it checks first).
            debug_assert!(!io.op.has_data(), "I/O past the end of a paced device");
        }
        self.submit(io, now);
    }

    fn kick(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }

    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        let now = self.last.0 + self.last.1.elapsed().as_nanos() as Nanos;
        let until_done = self
            .model
            .next_completion()
            .map(|t| Duration::from_nanos(t.saturating_sub(now)));
        let sleep = match (until_done, timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        sleep_or_watch(self.watch, sleep)
    }

    /// `wait` then waits with `poll(2)` on `fd` (until the model's next
    /// completion or the timeout), rather than sleeping.
    fn watch(&mut self, fd: std::os::fd::RawFd) -> Result<(), DeviceError> {
        // Refuses a descriptor that is not open.
        watchable(fd)?;
        self.watch = Some(fd);
        Ok(())
    }

    fn cancel_all(&mut self) {}

    fn alignment(&self) -> Alignment {
        let lbs = self.model.limits().logical_block_size;
        Alignment {
            offset: lbs,
            memory: lbs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_store_reads_what_was_written_and_zeroes_elsewhere() {
        let mut s = SparseStore::default();
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        // SAFETY: `data` is valid for its length.
        unsafe { s.write(CHUNK as u64 - 100, data.as_ptr(), data.len()) };
        let mut back = vec![1u8; data.len() + 200];
        // SAFETY: `back` is valid for its length.
        unsafe { s.read(CHUNK as u64 - 200, back.as_mut_ptr(), back.len()) };
        assert!(back[..100].iter().all(|&b| b == 0));
        assert_eq!(&back[100..100 + data.len()], &data[..]);
        assert!(back[100 + data.len()..].iter().all(|&b| b == 0));
        s.zero(0, 4 * CHUNK as u64);
        assert_eq!(
            s.resident(),
            CHUNK as u64,
            "whole chunks dropped, the last one kept"
        );
    }
}
