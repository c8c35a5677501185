//! The outside tools the trace tests run (blkparse, btt, fio, the NBD
//! clients): a program that is not installed fails the test naming its
//! Debian package, and blkparse's output counted by action letter.

use std::collections::BTreeMap;
use std::process::{Command, Output};

/// The Debian package of each program these tests run.
pub fn package_of(program: &str) -> &'static str {
    match program {
        "blkparse" | "btt" => "blktrace",
        "fio" => "fio",
        "nbdcopy" | "nbdinfo" => "libnbd-bin",
        "qemu-img" => "qemu-utils",
        "chromium" => "chromium",
        _ => "(unknown)",
    }
}

/// Run `cmd` to completion: a program that is not installed fails the
/// test, naming its package (never a skip); one that fails, with its
/// output.
pub fn run(cmd: &mut Command) -> Output {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let p = package_of(&program);
            panic!(
                "{program} is not installed, and this test needs it: install the Debian \
                 package {p} (apt-get install {p}), or run the tests with scripts/test, which \
                 installs every tool they use"
            )
        }
        Err(e) => panic!("cannot run {cmd:?}: {e}"),
    };
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// What blkparse prints for the trace `prefix`: events by action letter.
pub fn blkparse_counts(prefix: &str) -> BTreeMap<char, u64> {
    let out = run(Command::new("blkparse").args(["-i", prefix]));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        // "240,0    1       17     0.000123456     2  Q   W 7248 + 8 [a]"
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 6 && f[0].contains(',') && f[2].parse::<u64>().is_ok() {
            let letter = f[5].chars().next().expect("an action");
            *counts.entry(letter).or_insert(0) += 1;
        }
    }
    assert!(!counts.is_empty(), "blkparse printed no events:\n{text}");
    counts
}
