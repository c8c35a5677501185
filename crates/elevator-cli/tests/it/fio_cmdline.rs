//! fio's command line and size rules against fio 3.33 itself (issue 29):
//! the same arguments through `fio --parse-only` and `elevator run
//! --parse-only` (both accept or both refuse), several job files in one
//! run (each job's group and bytes as fio's JSON gives them), and the size
//! a job without `size` gets from its existing file or the device (fio's
//! total bytes against elevator's, on the file as the device).

use crate::common;

use std::collections::BTreeMap;

use common::fio::{TempDir, elevator, fio, json, stdout_ok};
use serde_json::Value;

/// A job file whose `[global]` must reach only its own jobs.
const A_FIO: &str = "[global]\nbs=8k\nfilename=data\nsize=1m\n[a1]\nrw=read\n[a2]\nrw=read\n";

/// A job file with no `[global]`: its jobs get fio's defaults (bs=4k).
const B_FIO: &str =
    "[b1]\nrw=read\nfilename=data\nsize=1m\n[b2]\nrw=read\nfilename=data\nsize=1m\n";

/// A scratch directory with `a.fio`, `b.fio`, and `data` and `disk.img`
/// (8 MiB each).
fn scratch(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write("a.fio", A_FIO);
    dir.write("b.fio", B_FIO);
    for name in ["data", "disk.img"] {
        let file = std::fs::File::create(dir.path().join(name)).expect("create a data file");
        file.set_len(8 << 20).expect("size a data file");
    }
    dir
}

/// Argument lists both must accept (`true`) or refuse (`false`).
const VERDICTS: &[(&str, bool)] = &[
    ("--name=x --bs 4k --size=1m", true),
    ("--name x --size 1m --rw randread", true),
    ("--name=x --size=1m --runtime 5 --time_based", true),
    ("--name=x --size=1m --group_reporting", true),
    // fio's getopt gives the log's name the next argument, whatever it is.
    ("--name=x --size=1m --write_bw_log --bs=4k", true),
    (
        "--name=x --iodepth 4 --size 1m --ioengine libaio --rw randread",
        true,
    ),
    ("--name=x --filename=data", true),
    // fio's getopt_long_only: one dash does.
    ("-name=x -size=1m -bs 4k", true),
    ("-name x -size 1m -time_based -runtime=1", true),
    ("a.fio b.fio", true),
    ("a.fio --name=c --rw=read --size=1m b.fio", true),
    ("--bs=16k a.fio b.fio", true),
    // A switch takes no value: `1` is a job file that is not there.
    ("--name=x --time_based 1 --size=1m", false),
    // `direct` takes the next argument, and `--rw=read` is no boolean.
    ("--name=x --direct --rw=read --size=1m", false),
    ("--name=x --size=1m --direct", false),
    ("--name=x --size=1m --write_bw_log", false),
    ("--name=x --rw sideways", false),
    ("--name=x --size=1m --nosuch=1", false),
    ("--name=x --size=1m --nosuch 1", false),
    ("a.fio missing.fio", false),
];

#[test]
fn parse_only_verdicts_match_fio() {
    elevator_testkit::needs!("fio");
    let dir = scratch("verdicts");
    let mut wrong = Vec::new();
    for &(args, accept) in VERDICTS {
        let words: Vec<&str> = args.split_whitespace().collect();
        let mut fio_args = vec!["--parse-only"];
        fio_args.extend(&words);
        let f = fio(dir.path(), &fio_args);
        let mut ours = vec!["run", "--parse-only", "--device", "nvme"];
        ours.extend(&words);
        let e = elevator(dir.path(), &ours);
        let verdicts = (f.status.success(), e.status.success());
        if verdicts != (accept, accept) {
            wrong.push(format!(
                "{args}: fio {}, elevator {} (expected both to {}): fio said {:?}, elevator {:?}",
                verdict(verdicts.0),
                verdict(verdicts.1),
                verdict(accept),
                String::from_utf8_lossy(&f.stderr).trim(),
                String::from_utf8_lossy(&e.stderr).trim(),
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn verdict(accepted: bool) -> &'static str {
    if accepted { "accepts" } else { "refuses" }
}

/// Each job of a JSON report: name to (group, bytes done).
fn jobs_of(what: &str, text: &str) -> BTreeMap<String, (u64, u64)> {
    let doc = json(what, text);
    let jobs = doc["jobs"].as_array().cloned().unwrap_or_default();
    jobs.iter()
        .map(|j| {
            let bytes = |d: &str| j[d]["io_bytes"].as_u64().unwrap_or(0);
            (
                j["jobname"].as_str().unwrap_or("?").to_string(),
                (
                    j["groupid"].as_u64().unwrap_or(u64::MAX),
                    bytes("read") + bytes("write"),
                ),
            )
        })
        .collect()
}

/// (group, I/Os) of every job, from a JSON report.
fn ios_of(what: &str, text: &str) -> BTreeMap<String, (u64, u64)> {
    let doc = json(what, text);
    let jobs = doc["jobs"].as_array().cloned().unwrap_or_default();
    jobs.iter()
        .map(|j: &Value| {
            let ios = |d: &str| j[d]["total_ios"].as_u64().unwrap_or(0);
            (
                j["jobname"].as_str().unwrap_or("?").to_string(),
                (
                    j["groupid"].as_u64().unwrap_or(u64::MAX),
                    ios("read") + ios("write"),
                ),
            )
        })
        .collect()
}

#[test]
fn several_job_files_run_as_fio_runs_them() {
    elevator_testkit::needs!("fio");
    let dir = scratch("files");
    // a.fio's bs=8k stays in a.fio: b's jobs read 1 MiB in 4 KiB blocks;
    // b.fio's first job starts a group of its own (fio's stonewall).
    for files in [&["a.fio", "b.fio"][..], &["b.fio", "a.fio"]] {
        let mut args = vec!["--output-format=json"];
        args.extend(files);
        let f = stdout_ok("fio", &fio(dir.path(), &args));
        let mut ours = vec!["run", "--device", "nvme", "--output-format", "json"];
        ours.extend(files);
        let e = stdout_ok("elevator", &elevator(dir.path(), &ours));
        let (f, e) = (ios_of("fio", &f), ios_of("elevator", &e));
        assert_eq!(
            f, e,
            "{files:?}: fio's jobs (group, I/Os) against elevator's"
        );
        assert_eq!(f.len(), 4, "{f:?}");
    }
}

/// (fio's extra arguments, elevator's) for one job with no size, fio on
/// the file `disk.img`, elevator on that file as the device (or a memory
/// device of its size, with no file named).
const SIZE_RULES: &[&str] = &[
    "",
    "--offset=1m",
    "--offset=25%",
    "--size=50%",
    "--size=2m --offset=3m",
    "--rw=randread --io_size=3m",
];

#[test]
fn a_job_without_size_gets_its_file_or_device_size_as_in_fio() {
    elevator_testkit::needs!("fio");
    let dir = scratch("sizes");
    let mut wrong = Vec::new();
    for extra in SIZE_RULES {
        let mut args = vec!["--name=x", "--rw=read", "--bs=4k"];
        args.extend(extra.split_whitespace());
        let mut f_args = vec!["--output-format=json", "--filename=disk.img"];
        f_args.extend(&args);
        let want = jobs_of("fio", &stdout_ok("fio", &fio(dir.path(), &f_args)));
        let mut devices: Vec<(&str, &[&str])> = vec![
            ("file:disk.img", &["--filename=disk.img"]),
            ("mem:8m", &[]),
            ("nvme,capacity=8m", &[]),
            ("hdd-7200,capacity=8m", &[]),
        ];
        // Another existing file: its size (a percentage `size` of it),
        // laid out on the device.
        devices.push(("nvme", &["--filename=data"]));
        devices.push(("file:disk.img", &["--filename=data"]));
        for (device, name) in devices {
            let mut ours = vec!["run", "--output-format", "json", "--device", device];
            ours.extend(name);
            ours.extend(&args);
            let got = jobs_of(
                "elevator",
                &stdout_ok("elevator", &elevator(dir.path(), &ours)),
            );
            if got != want {
                wrong.push(format!(
                    "{extra:?} on {device}: fio {want:?}, elevator {got:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Two jobs on the device's own file with no size, the second after the
/// first: each does the whole file, as in fio.
#[test]
fn jobs_sharing_the_device_file_each_use_all_of_it() {
    elevator_testkit::needs!("fio");
    let dir = scratch("shared");
    let job = "[w]\nrw=write\nbs=64k\nfilename=disk.img\n[r]\nrw=read\nbs=64k\nfilename=disk.img\nstonewall\n";
    dir.write("two.fio", job);
    let f = stdout_ok(
        "fio",
        &fio(dir.path(), &["--output-format=json", "two.fio"]),
    );
    let e = elevator(
        dir.path(),
        &[
            "run",
            "two.fio",
            "--device",
            "file:disk.img",
            "--output-format",
            "json",
        ],
    );
    let (f, e) = (
        jobs_of("fio", &f),
        jobs_of("elevator", &stdout_ok("elevator", &e)),
    );
    assert_eq!(f, e);
    assert_eq!(f.get("r"), Some(&(1, 8 << 20)), "{f:?}");
}

#[test]
fn a_job_fio_cannot_size_is_refused_by_both() {
    elevator_testkit::needs!("fio");
    let dir = scratch("nosize");
    for extra in ["--filename=nothere", "--nrfiles=2"] {
        let args = ["--name=x", "--rw=read", "--bs=4k", extra];
        let f = fio(dir.path(), &args);
        let fio_said =
            String::from_utf8_lossy(&f.stdout).to_string() + &String::from_utf8_lossy(&f.stderr);
        assert!(
            fio_said.contains("you need to specify size="),
            "{extra}: {fio_said}"
        );
        let mut ours = vec!["run", "--device", "mem:8m"];
        ours.extend(args);
        let e = elevator(dir.path(), &ours);
        let said = String::from_utf8_lossy(&e.stderr);
        assert!(!e.status.success(), "{extra}: elevator ran it");
        assert!(said.contains("--size (command line"), "{extra}: {said}");
        assert!(said.contains("needs size="), "{extra}: {said}");
    }
}

#[test]
fn command_line_errors_name_the_option() {
    let dir = scratch("errors");
    let e = elevator(
        dir.path(),
        &[
            "run",
            "--name=x",
            "--rw=read",
            "--bs=4q",
            "--device",
            "nvme",
        ],
    );
    let said = String::from_utf8_lossy(&e.stderr);
    assert!(
        said.contains("--bs (command line, argument 4): '4q'"),
        "{said}"
    );
    // The position is the one on the command line typed, elevator's own
    // flags and `--opt value` pairs counted.
    let e = elevator(
        dir.path(),
        &["run", "--device", "nvme", "--name", "x", "--bs", "4q"],
    );
    let said = String::from_utf8_lossy(&e.stderr);
    assert!(
        said.contains("--bs (command line, argument 6): '4q'"),
        "{said}"
    );
    // An option fio does not know is named before any job file is read.
    let e = elevator(
        dir.path(),
        &["run", "--name=x", "--iodpeth", "4", "--device", "nvme"],
    );
    let said = String::from_utf8_lossy(&e.stderr);
    assert!(
        said.contains("--iodpeth (command line, argument 3): unknown option")
            && said.contains("did you mean 'iodepth'"),
        "{said}"
    );
    // A job file's errors keep its file and line.
    dir.write("bad.fio", "[j]\nrw=read\nbs=4q\n");
    let e = elevator(dir.path(), &["run", "bad.fio", "--device", "nvme"]);
    let said = String::from_utf8_lossy(&e.stderr);
    assert!(said.contains("bad.fio:3: option 'bs'"), "{said}");
    // The second of several files names its own file.
    dir.write("good.fio", "[g]\nrw=read\nsize=1m\n");
    let e = elevator(
        dir.path(),
        &["run", "good.fio", "bad.fio", "--device", "nvme"],
    );
    let said = String::from_utf8_lossy(&e.stderr);
    assert!(said.contains("bad.fio:3: option 'bs'"), "{said}");
}
