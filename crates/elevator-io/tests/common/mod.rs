//! What the elevator-io tests share: memory devices, engine configurations
//! and aligned buffers.

// Each test file uses its own part of this module.
#![allow(dead_code)]

use elevator_io::{AlignedBuf, EngineConfig, MemDevice, MemOptions};

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
