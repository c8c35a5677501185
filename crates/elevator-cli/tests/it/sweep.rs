//! `elevator sweep`: a tiny spec end to end (the table on stdout, the same
//! on one and two threads, its figures `elevator run`'s), resuming a
//! killed sweep's file, and a spec's mistake refused before anything runs.

use crate::common::elevator;
use crate::common::fio::TempDir;

const SPEC: &str = r#"job_text = """
[reader]
rw=randread
bs=4k
size=256k
ioengine=libaio
"""
device = "nvme"
seed = 3
[grid]
scheduler = ["none", "mq-deadline", "bfq"]
iodepth = [1, 8]
"#;

fn ok(args: &[&str]) -> std::process::Output {
    let out = elevator(args);
    assert!(
        out.status.success(),
        "elevator {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_tiny_sweep_prints_its_table_the_same_on_any_threads() {
    let dir = TempDir::new("sweep-tiny");
    let spec = dir.write("spec.toml", SPEC);
    let spec = spec.to_str().unwrap();
    let one = ok(&["sweep", spec, "--jobs", "1", "--quiet"]);
    let two = ok(&["sweep", spec, "--jobs", "2"]);
    assert_eq!(one.stdout, two.stdout);
    assert!(one.stderr.is_empty(), "--quiet");
    let table = String::from_utf8(one.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 7, "{table}");
    assert!(lines[0].starts_with("config,scheduler,iodepth,job,clone,direction,total_ios,"));
    // Progress: one line per configuration on stderr.
    let progress = String::from_utf8_lossy(&two.stderr);
    assert_eq!(
        progress.matches("elevator: sweep: ").count(),
        6,
        "{progress}"
    );
    assert!(progress.contains("/6 done: config 5 scheduler=bfq iodepth=8 ("));
    // Configuration 3 is mq-deadline at iodepth 8: `elevator run`'s figures.
    let columns: Vec<&str> = lines[0].split(',').collect();
    let row: Vec<&str> = lines[4].split(',').collect();
    let cell = |name: &str| row[columns.iter().position(|c| *c == name).unwrap()];
    assert_eq!(&row[..3], ["3", "mq-deadline", "8"]);
    let run = ok(&[
        "run",
        "--device",
        "nvme",
        "--scheduler",
        "mq-deadline",
        "--seed",
        "3",
        "--output-format",
        "json",
        "--name=reader",
        "--rw=randread",
        "--bs=4k",
        "--size=256k",
        "--ioengine=libaio",
        "--iodepth=8",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let read = &json["jobs"][0]["read"];
    assert_eq!(cell("total_ios"), read["total_ios"].to_string());
    assert_eq!(cell("bw_bytes"), read["bw_bytes"].to_string());
    assert_eq!(cell("iops"), read["iops"].to_string());
    assert_eq!(
        cell("clat_p99_ns"),
        read["clat_ns"]["percentile"]["99.000000"].to_string()
    );
}

#[test]
fn a_killed_sweep_resumes_and_ends_as_a_fresh_one() {
    let dir = TempDir::new("sweep-resume");
    let spec = dir.write("spec.toml", SPEC);
    let spec = spec.to_str().unwrap();
    let fresh = dir.file("fresh.csv");
    ok(&["sweep", spec, "--out", &fresh, "--quiet"]);
    let whole = std::fs::read_to_string(&fresh).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    // Killed after configurations 2 and 0, halfway through 4's line.
    let torn = &lines[5][..10];
    let killed = dir.file("killed.csv");
    std::fs::write(
        &killed,
        format!("{}\n{}\n{}\n{torn}", lines[0], lines[3], lines[1]),
    )
    .unwrap();
    let again = ok(&["sweep", spec, "--out", &killed]);
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(
        said.contains("killed.csv: 2 of 6 configurations done, running 4"),
        "{said}"
    );
    assert_eq!(said.matches("elevator: sweep: ").count(), 4, "{said}");
    assert_eq!(std::fs::read_to_string(&killed).unwrap(), whole);
    // Done: run again, nothing runs and nothing changes.
    let done = ok(&["sweep", spec, "--out", &killed]);
    assert!(
        String::from_utf8_lossy(&done.stderr).contains("6 of 6 configurations done, running 0")
    );
    assert_eq!(std::fs::read_to_string(&killed).unwrap(), whole);
}

#[test]
fn a_mistake_in_the_spec_is_refused_with_the_file_and_key() {
    let dir = TempDir::new("sweep-bad");
    let spec = dir.write(
        "bad.toml",
        &SPEC.replace("iodepth = [1, 8]", "iodeptth = [1, 8]"),
    );
    let out = elevator(&["sweep", spec.to_str().unwrap(), "--out", &dir.file("r.csv")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml: [grid] unknown key 'iodeptth' (did you mean iodepth?)"),
        "{err}"
    );
    assert!(
        !std::path::Path::new(&dir.file("r.csv")).exists(),
        "nothing ran"
    );
}
