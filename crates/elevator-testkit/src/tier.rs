//! The test tiers and skipping. Plain `cargo test` is the fast tier: it
//! needs only the Rust toolchain, and a test that needs an outside program
//! (fio, the NBD tools, mkfs...) or is slow is skipped there, saying why on
//! one line. `scripts/test` sets [`FULL_TIER`], which runs them all. Under
//! CI (`CI` set, as `.ci/run` runs) nothing may be skipped: a skip fails
//! the test instead, so a green CI means every test ran.

use std::io::Write;

use crate::programs::{installed, missing, package_of};

/// The environment variable that selects the full tier (`scripts/test`
/// sets it): tests that need outside programs, and slow ones, run.
pub const FULL_TIER: &str = "ELEVATOR_TEST_ALL";

/// Whether the full tier was asked for ([`FULL_TIER`] set).
pub fn full_tier() -> bool {
    std::env::var_os(FULL_TIER).is_some()
}

/// Skip the rest of a test that this machine cannot run (no root, no
/// tmpfs, a kernel that will not mount), saying why on one line of stderr
/// (shown even when the test passes). Under CI (`CI` set) nothing may be
/// skipped: it fails instead.
pub fn skip(test: &str, why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{test} cannot run here, and CI skips nothing: {why}");
    }
    // Straight to the process's stderr, past the test harness's capture,
    // so that a passing run shows every skip and its reason.
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// Whether `test`, which runs the outside `programs`, runs in this tier:
/// always in the full tier, where a program that is not installed fails
/// the test at once, naming its package (never a skip); in the fast tier
/// it is skipped with a line naming the programs and their packages, and
/// `false` returned. [`needs!`](crate::needs!) calls it with the test's name.
pub fn needs(test: &str, programs: &[&str]) -> bool {
    if full_tier() {
        if let Some(p) = programs.iter().find(|p| !installed(p)) {
            panic!("{}", missing(p));
        }
        return true;
    }
    let named: Vec<String> = programs
        .iter()
        .map(|p| match package_of(p) {
            Some(package) => format!("{p} (Debian package {package})"),
            None => (*p).to_string(),
        })
        .collect();
    skip(
        test,
        &format!(
            "needs {}; scripts/test ({FULL_TIER}=1) runs it",
            named.join(", ")
        ),
    );
    false
}

/// Whether `test`, too slow for the fast tier, runs: only in the full tier;
/// in the fast tier it is skipped (reason "slow") and `false` returned.
pub fn slow(test: &str) -> bool {
    if full_tier() {
        return true;
    }
    skip(test, &format!("slow; scripts/test ({FULL_TIER}=1) runs it"));
    false
}

/// The name of the function this is expanded in (a test's path in its
/// binary, such as `fio_compat::terse_lines_match_fio`).
#[macro_export]
macro_rules! test_name {
    () => {{
        fn here() {}
        let name = ::std::any::type_name_of_val(&here);
        let name = name.strip_suffix("::here").unwrap_or(name);
        name.split_once("::").map_or(name, |(_, rest)| rest)
    }};
}

/// At the top of a test that runs outside programs: `needs!("fio",
/// "python3");` (or `needs!(in LIST)`, a `&[&str]` kept once) returns from
/// the test, skipped with its reason, in the fast tier (see [`needs`]).
#[macro_export]
macro_rules! needs {
    (in $programs:expr) => {
        if !$crate::needs($crate::test_name!(), $programs) {
            return;
        }
    };
    ($($program:expr),+ $(,)?) => {
        if !$crate::needs($crate::test_name!(), &[$($program),+]) {
            return;
        }
    };
}

/// At the top of a test too slow for the fast tier: `slow!();` returns from
/// the test, skipped (reason "slow"), unless the full tier runs (see
/// [`slow`]).
#[macro_export]
macro_rules! slow {
    () => {
        if !$crate::slow($crate::test_name!()) {
            return;
        }
    };
}
