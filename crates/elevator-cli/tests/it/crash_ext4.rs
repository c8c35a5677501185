//! Crash consistency of ext4 on `elevator serve`, end to end: the script
//! `scripts/crash-ext4` puts ext4 on an export (nbdfuse, a loop device)
//! under `--write-log`, writes and fsyncs files with a mark after each, and
//! runs `elevator crash-states` with `scripts/crash-check-ext4` on every
//! state at a flush boundary: journal replay, `fsck.ext4 -fn`, and the
//! fsynced files' content. Every state must pass.
//!
//! The same run on a deliberately broken device (`serve
//! --write-log-flush-before-data`: flushes recorded before the data they
//! cover) must produce failing states: the checker is shown able to fail.

use crate::common;

use std::process::{Command, Output};

/// What `scripts/crash-ext4` and its checker run.
const TOOLS: &[&str] = &[
    "bash",
    "nbdfuse",
    "fusermount3",
    "mkfs.ext4",
    "fsck.ext4",
    "debugfs",
    "losetup",
    "mount",
    "umount",
];

fn crash_ext4(args: &[&str]) -> Option<Output> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/crash-ext4"))
        .args(args)
        .env("ELEVATOR", env!("CARGO_BIN_EXE_elevator"))
        .output()
        .expect("run scripts/crash-ext4");
    if out.status.code() == Some(77) {
        common::skip("crash_ext4", String::from_utf8_lossy(&out.stderr).trim());
        return None;
    }
    Some(out)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn every_flush_boundary_of_ext4_passes_fsck_and_keeps_fsynced_files() {
    elevator_testkit::needs!(in TOOLS);
    let Some(out) = crash_ext4(&["--files", "8", "--between", "0", "--jobs", "2"]) else {
        return;
    };
    let all = text(&out);
    assert!(out.status.success(), "crash states failed:\n{all}");
    assert!(all.contains("0 failed"), "{all}");
}

#[test]
fn a_device_that_acknowledges_flushes_early_fails_the_check() {
    elevator_testkit::needs!(in TOOLS);
    let Some(out) = crash_ext4(&["--files", "8", "--between", "0", "--jobs", "2", "--broken"])
    else {
        return;
    };
    let all = text(&out);
    assert!(!out.status.success(), "the broken device passed:\n{all}");
    assert!(
        all.contains("was fsynced with sha256"),
        "the failures should be fsynced files without their data:\n{all}"
    );
    assert!(
        all.contains("--only"),
        "each failing state says how to rebuild it:\n{all}"
    );
}
