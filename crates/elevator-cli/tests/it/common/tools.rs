//! The outside tools the trace tests run (blkparse, btt, fio, the NBD
//! clients), run to success (a program that is not installed fails the test
//! naming its Debian package, from elevator-testkit's table), and
//! blkparse's output counted by action letter.

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::Duration;

/// How long one outside tool may run before the test fails (this only
/// bounds a hang).
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Run `cmd` to completion: a program that is not installed fails the
/// test, naming its package (never a skip); one that fails, with its
/// output; one that hangs, after [`DEADLINE`].
pub fn run(cmd: &mut Command) -> Output {
    let out = elevator_testkit::run_with_deadline(cmd, DEADLINE);
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
