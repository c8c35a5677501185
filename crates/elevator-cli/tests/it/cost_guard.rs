//! The instruction-count guard (`elevator cost-scenario`, hidden; what
//! `scripts/perf-guard` runs): a scenario runs in-process and says how many
//! operations it ran; under callgrind its count is the same every time, a
//! count within the threshold of its baseline passes, and one grown past it
//! fails with the table. No timing: counts are instruction counts.

use crate::common;
use common::fio::TempDir;
use common::{elevator, ok};

#[test]
fn a_scenario_runs_and_says_how_many_operations() {
    let out = ok(&["cost-scenario", "run", "core/none/d128", "--ops", "2000"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ops 2000\n");
    let list = ok(&["cost-scenario", "list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    for name in [
        "core/bfq/d4096",
        "sim/hdd-randread-qd32",
        "nbd/mem-rw",
        "io/mem-randread-qd32",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    let bad = elevator(&["cost-scenario", "run", "core/no-such/d1"]);
    assert!(!bad.status.success());
    let help = ok(&["--help"]);
    assert!(
        !String::from_utf8_lossy(&help.stdout).contains("cost-scenario"),
        "the internal subcommand shows in --help"
    );
}

#[test]
fn the_guard_is_deterministic_and_fails_past_the_threshold() {
    elevator_testkit::needs!("valgrind");
    let dir = TempDir::new("cost-guard");
    let baselines = dir.path().join("baselines.txt");
    let path = baselines.to_str().expect("UTF-8 path");
    let guard_with = |rustc: &str, extra: &[&str]| {
        let mut args = vec![
            "cost-scenario",
            "guard",
            "--baselines",
            path,
            "--rustc",
            rustc,
            "--only",
            "core/none/d128",
        ];
        args.extend_from_slice(extra);
        elevator(&args)
    };
    let guard = |extra: &[&str]| guard_with("rustc test", extra);
    let made = guard(&["--update"]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let text = std::fs::read_to_string(&baselines).expect("baselines written");
    let count: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("core/none/d128 "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in:\n{text}"));
    assert!(count > 0.0, "{text}");

    // The same build counts the same.
    let again = guard(&[]);
    let table = String::from_utf8_lossy(&again.stdout);
    assert!(
        again.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(table.contains("+0.00%"), "{table}");

    // A baseline 5% under the count: the guard fails and says which.
    let lower = text.replace(&format!("{count:.1}"), &format!("{:.1}", count / 1.05));
    std::fs::write(&baselines, lower).expect("rewriting the baselines");
    let caught = guard(&[]);
    let table = String::from_utf8_lossy(&caught.stdout);
    assert!(!caught.status.success(), "{table}");
    assert!(table.contains("REGRESSION"), "{table}");
    assert!(
        String::from_utf8_lossy(&caught.stderr).contains("grew by more than 3%"),
        "{}",
        String::from_utf8_lossy(&caught.stderr)
    );

    // Another compiler's baselines are not compared.
    let other = guard_with("rustc 0.0.0", &[]);
    assert!(!other.status.success());
    assert!(String::from_utf8_lossy(&other.stderr).contains("depend on the compiler"));
}
