//! What the elevator-io tests share: memory devices, engine configurations,
//! aligned buffers (plain, or counting how many were freed) and scratch
//! files.

// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;

use elevator_io::{AlignedBuf, EngineConfig, IoBuf, MemDevice, MemOptions};
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

/// Skip the rest of a test that this machine cannot run (no root, no
/// tmpfs, a kernel that will not mount), saying why on stderr. Under CI
/// (`CI` set, as `.ci/run` runs) nothing may be skipped: it fails instead,
/// so a green CI means every test ran.
pub fn skip(test: &str, why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{test} cannot run here, and CI skips nothing: {why}");
    }
    eprintln!("SKIPPED {test}: {why}");
}
