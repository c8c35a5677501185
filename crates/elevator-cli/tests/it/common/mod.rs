//! What the CLI tests share: running the `elevator` binary from the
//! repository's root and checking how it ended.

// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Run `elevator ARGS` from the repository's root.
pub fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .args(args)
        .output()
        .expect("run elevator")
}

/// Run `elevator ARGS`, which must succeed.
pub fn ok(args: &[&str]) -> Output {
    let out = elevator(args);
    assert!(
        out.status.success(),
        "elevator {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Run `elevator ARGS`, which must succeed and print every one of
/// `needles` on stdout.
pub fn prints_all(args: &[&str], needles: &[&str]) -> Output {
    let out = ok(args);
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in needles {
        assert!(
            text.contains(needle),
            "elevator {args:?}: missing '{needle}' in:\n{text}"
        );
    }
    out
}

/// Run `elevator ARGS`, which must fail with `needle` in its message.
pub fn fails_with(args: &[&str], needle: &str) {
    let out = elevator(args);
    assert!(!out.status.success(), "elevator {args:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(needle),
        "elevator {args:?}: stderr lacks '{needle}': {err}"
    );
}

pub use elevator_testkit::skip;

/// CRC-32 (IEEE), bit by bit: the tests' own, independent of the crate
/// the code under test checksums with.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// fio and elevator side by side (fio_compat.rs).
pub mod fio;
pub mod tools;
