//! elevator against fio itself (issue 14): the same job text through both,
//! compared structurally (every key and type fio writes), by the figures
//! that must agree (bytes, I/O counts, block-size mix, how accesses spread),
//! by parse verdict over a few hundred generated job files, by fio's own
//! json+ reader and terse layout; plus verification catching a corrupted
//! block, and the job-file corpus in tests/fio-corpus.
//!
//! fio must be installed (`scripts/test` installs it): without it these
//! tests fail and name the package. No test asserts a timing.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use common::fio::{Rng, TempDir, elevator, fio, json, repo_root, stdout_ok};
use serde_json::Value;

/// The simulated device elevator runs the comparison jobs on: completes
/// every I/O after 5 µs, like fio's null engine completes them at once.
const NULL_DEVICE: &str = "null,latency=5";

/// The simulated device the corpus runs on.
const CORPUS_DEVICE: &str = "ssd-sata";

// ---------------------------------------------------------------------------
// Running one job text through both.

/// fio with its null engine on `job` (written to a scratch directory), in
/// `format`; returns stdout.
fn fio_null(dir: &TempDir, name: &str, job: &str, format: &str) -> String {
    let path = dir.write(&format!("{name}.fio"), job);
    let out = fio(
        dir.path(),
        &[
            "--ioengine=null",
            &format!("--output-format={format}"),
            path.to_str().expect("utf-8 path"),
        ],
    );
    stdout_ok(&format!("fio on {name}"), &out)
}

/// elevator on the null device with `job` (written to `dir` as
/// NAME.fio), in `format`; returns how it ended.
fn run_elevator_null(dir: &TempDir, name: &str, job: &str, format: &str) -> std::process::Output {
    let path = dir.write(&format!("{name}.fio"), job);
    elevator(
        dir.path(),
        &[
            "run",
            path.to_str().expect("utf-8 path"),
            "--device",
            NULL_DEVICE,
            "--output-format",
            format,
        ],
    )
}

/// elevator on the null device with `job`, in `format`; returns stdout.
fn elevator_null(dir: &TempDir, name: &str, job: &str, format: &str) -> String {
    let out = run_elevator_null(dir, name, job, format);
    stdout_ok(&format!("elevator on {name}"), &out)
}

/// elevator's JSON report on `what` from `out`; None, with a line saying
/// so pushed to `failures`, when elevator failed.
fn elevator_report(
    what: &str,
    out: &std::process::Output,
    failures: &mut Vec<String>,
) -> Option<Value> {
    if !out.status.success() {
        failures.push(format!(
            "{what}: elevator failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return None;
    }
    Some(json(
        &format!("elevator on {what}"),
        &String::from_utf8_lossy(&out.stdout),
    ))
}

// ---------------------------------------------------------------------------
// Structural comparison.

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key of `fio` must be in `ours` with the same JSON type, recursively;
/// the differences go to `diffs`, one line each, named by their path.
/// `bins` (json+ latency bins, keyed by the latencies seen) is compared by
/// type only; arrays of objects by their first element.
fn compare(path: &str, fio: &Value, ours: &Value, diffs: &mut Vec<String>) {
    if kind(fio) != kind(ours) {
        diffs.push(format!(
            "{path}: fio has {}, elevator has {}",
            kind(fio),
            kind(ours)
        ));
        return;
    }
    match (fio, ours) {
        (Value::Object(f), Value::Object(o)) => {
            for (key, fv) in f {
                let p = format!("{path}.{key}");
                match o.get(key) {
                    None => diffs.push(format!("{p}: missing (fio: {})", kind(fv))),
                    Some(_) if key == "bins" => {}
                    Some(ov) => compare(&p, fv, ov, diffs),
                }
            }
        }
        (Value::Array(f), Value::Array(o)) => {
            if let (Some(fv @ Value::Object(_)), Some(ov)) = (f.first(), o.first()) {
                compare(&format!("{path}[0]"), fv, ov, diffs);
            }
        }
        _ => {}
    }
}

/// The top level, each job and (when fio has it) disk_util of two reports.
fn compare_reports(name: &str, fio: &Value, ours: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let (Some(f), Some(o)) = (fio.as_object(), ours.as_object()) else {
        return vec![format!("{name}: a report is not a JSON object")];
    };
    for (key, fv) in f {
        match o.get(key) {
            None => diffs.push(format!("{name}.{key}: missing (fio: {})", kind(fv))),
            Some(ov) if kind(ov) != kind(fv) => diffs.push(format!(
                "{name}.{key}: fio has {}, elevator has {}",
                kind(fv),
                kind(ov)
            )),
            // The command lines differ (fio is told --ioengine=null).
            Some(_) if key == "global options" => {}
            Some(_) if key == "jobs" => {}
            Some(ov) => compare(&format!("{name}.{key}"), fv, ov, &mut diffs),
        }
    }
    let fjobs = fio["jobs"].as_array().cloned().unwrap_or_default();
    let ojobs = ours["jobs"].as_array().cloned().unwrap_or_default();
    if fjobs.len() != ojobs.len() {
        diffs.push(format!(
            "{name}.jobs: fio reports {} jobs, elevator {}",
            fjobs.len(),
            ojobs.len()
        ));
    }
    for (i, (fj, oj)) in fjobs.iter().zip(&ojobs).enumerate() {
        compare(&format!("{name}.jobs[{i}]"), fj, oj, &mut diffs);
        if fj["job options"] != oj["job options"] {
            diffs.push(format!(
                "{name}.jobs[{i}].job options: fio {}, elevator {}",
                fj["job options"], oj["job options"]
            ));
        }
    }
    diffs
}

/// A direction's byte and I/O counts in a job of a report.
fn counts(report: &Value, job: usize, dir: &str) -> (u64, u64) {
    let d = &report["jobs"][job][dir];
    (
        d["io_bytes"].as_u64().unwrap_or(u64::MAX),
        d["total_ios"].as_u64().unwrap_or(u64::MAX),
    )
}

/// The jobs of the structural comparison: bounded by size (never by time),
/// so the byte and I/O counts are the same on both.
const STRUCTURAL_JOBS: &[(&str, &str)] = &[
    (
        "randread",
        "[randread]\nrw=randread\nbs=4k\nsize=16m\niodepth=8\n",
    ),
    (
        "randwrite",
        "; 8 KiB random writes\n[randwrite]\nrw=randwrite\nbs=8k\nsize=16m\niodepth=4\n",
    ),
    (
        "randrw",
        "[mix]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=16m\niodepth=16\n",
    ),
    (
        "seqread-2jobs",
        "[global]\nbs=64k\n\n[seq]\nrw=read\nsize=32m\nnumjobs=2\ngroup_reporting\n",
    ),
    ("trim", "[trim]\nrw=randtrim\nbs=64k\nsize=32m\niodepth=4\n"),
    (
        "percentiles",
        "[pct]\nrw=randread\nbs=4k\nsize=8m\npercentile_list=50:90:99:99.9\n",
    ),
];

/// Every key and type fio's json+ has for a job is in elevator's, and the
/// figures both must agree on do: bytes and I/Os per direction (a random
/// read/write mix splits at random: its total agrees exactly, each
/// direction within 5 % of it), and the job's options.
#[test]
fn json_plus_has_every_key_fio_writes() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("structure");
    let mut failures = Vec::new();
    for (name, job) in STRUCTURAL_JOBS {
        let f = json(
            &format!("fio on {name}"),
            &fio_null(&dir, name, job, "json+"),
        );
        let ours = run_elevator_null(&dir, name, job, "json+");
        let Some(o) = elevator_report(name, &ours, &mut failures) else {
            continue;
        };
        let mut diffs = compare_reports(name, &f, &o);
        let jobs = f["jobs"].as_array().map_or(0, Vec::len);
        for j in 0..jobs {
            let mixed = job.contains("rw=randrw");
            let (mut fsum, mut osum) = ((0, 0), (0, 0));
            for d in ["read", "write", "trim"] {
                let (fb, fi) = counts(&f, j, d);
                let (ob, oi) = counts(&o, j, d);
                fsum = (fsum.0 + fb, fsum.1 + fi);
                osum = (osum.0 + ob, osum.1 + oi);
                let close = |a: u64, b: u64, total: u64| a.abs_diff(b) * 20 <= total;
                let agree = if mixed {
                    close(fb, ob, counts_total(&f, j).0) && close(fi, oi, counts_total(&f, j).1)
                } else {
                    fb == ob && fi == oi
                };
                if !agree {
                    diffs.push(format!(
                        "{name}.jobs[{j}].{d}: fio io_bytes={fb} total_ios={fi}, \
                         elevator io_bytes={ob} total_ios={oi}"
                    ));
                }
            }
            if fsum != osum {
                diffs.push(format!(
                    "{name}.jobs[{j}]: fio moved {fsum:?} (bytes, I/Os), elevator {osum:?}"
                ));
            }
        }
        failures.extend(diffs);
    }
    assert!(
        failures.is_empty(),
        "elevator's json+ differs from fio's ({} differences):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

fn counts_total(report: &Value, job: usize) -> (u64, u64) {
    ["read", "write", "trim"]
        .iter()
        .map(|d| counts(report, job, d))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// Jobs given as options on the command line, as fio takes them (no job
/// file; `--name` starts a job), and a command-line option given with a
/// job file: the same jobs, bytes, I/O counts and job options as fio's.
/// (fio 3.33 lets the job file's own value win over the command line's.)
#[test]
fn command_line_jobs_match_fio() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("cmdline");
    let jobs = [
        "--name=x",
        "--rw=randread",
        "--bs=4k",
        "--size=4m",
        "--name=y",
        "--rw=write",
        "--bs=8k",
        "--size=2m",
    ];
    let file = dir.write(
        "o.fio",
        "[a]\nrw=read\nbs=4k\nsize=16m\n[b]\nrw=write\nbs=4k\n",
    );
    let file = file.to_str().expect("utf-8 path");
    // fio takes command-line options as defaults that a job file's own
    // values override; elevator, as issue 14 asks, lets them override the
    // file (`elevator run job.fio --runtime=5` shortens every job). So the
    // second case compares elevator on the file plus --size=8m with fio on
    // the file as the override makes it.
    let overridden = dir.write(
        "o8.fio",
        "[a]\nrw=read\nbs=4k\nsize=8m\n[b]\nrw=write\nbs=4k\nsize=8m\n",
    );
    let overridden = overridden.to_str().expect("utf-8 path");
    let cases: [(&str, Vec<&str>, Vec<&str>); 2] = [
        ("command-line jobs", jobs.to_vec(), jobs.to_vec()),
        (
            "a job file and --size=8m",
            vec![overridden],
            vec![file, "--size=8m"],
        ),
    ];
    let mut failures = Vec::new();
    for (what, fio_args, args) in cases {
        let mut fargs = vec!["--output-format=json", "--ioengine=null"];
        fargs.extend(&fio_args);
        let f = json(
            &format!("fio, {what}"),
            &stdout_ok(what, &fio(dir.path(), &fargs)),
        );
        let mut oargs = vec!["run", "--device", NULL_DEVICE, "--output-format", "json"];
        oargs.extend(&args);
        let out = elevator(dir.path(), &oargs);
        let Some(o) = elevator_report(what, &out, &mut failures) else {
            continue;
        };
        let names = |v: &Value| -> Vec<Value> {
            v["jobs"]
                .as_array()
                .map(|js| js.iter().map(|j| j["jobname"].clone()).collect())
                .unwrap_or_default()
        };
        if names(&f) != names(&o) {
            failures.push(format!(
                "{what}: jobs fio {:?}, elevator {:?}",
                names(&f),
                names(&o)
            ));
            continue;
        }
        for j in 0..names(&f).len() {
            for d in ["read", "write", "trim"] {
                if counts(&f, j, d) != counts(&o, j, d) {
                    failures.push(format!(
                        "{what}: job {j} {d}: fio (io_bytes, total_ios) {:?}, elevator {:?}",
                        counts(&f, j, d),
                        counts(&o, j, d)
                    ));
                }
            }
            if fio_args == args && f["jobs"][j]["job options"] != o["jobs"][j]["job options"] {
                failures.push(format!(
                    "{what}: job {j} options: fio {}, elevator {}",
                    f["jobs"][j]["job options"], o["jobs"][j]["job options"]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------
// Block-size mix and random distributions, from the I/O logs.

/// One line of a log written with `log_offset=1`: fio's columns are time
/// (ms), value, direction, block size, offset[, priority].
struct LogEntry {
    bs: u64,
    offset: u64,
}

fn read_log(path: &Path) -> Vec<LogEntry> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the log {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<u64> = l
                .split(',')
                .map(|c| {
                    c.trim()
                        .parse()
                        .unwrap_or_else(|_| panic!("{}: bad log line '{l}'", path.display()))
                })
                .collect();
            assert!(
                cols.len() >= 5,
                "{}: '{l}' lacks the offset column (log_offset=1)",
                path.display()
            );
            LogEntry {
                bs: cols[3],
                offset: cols[4],
            }
        })
        .collect()
}

/// Run `job` (which writes `write_lat_log=NAME` with `log_offset=1`)
/// through fio and elevator, each in a directory of its own, and return
/// both latency logs (NAME_lat.1.log, fio's name for it), or why elevator's
/// could not be had.
fn both_logs(name: &str, job: &str) -> (Vec<LogEntry>, Result<Vec<LogEntry>, String>) {
    let fdir = TempDir::new(&format!("{name}-fio"));
    fio_null(&fdir, name, job, "json");
    let flog = read_log(&fdir.path().join(format!("{name}_lat.1.log")));
    let odir = TempDir::new(&format!("{name}-elevator"));
    let out = run_elevator_null(&odir, name, job, "json");
    if !out.status.success() {
        return (
            flog,
            Err(format!(
                "elevator failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        );
    }
    let olog_path = odir.path().join(format!("{name}_lat.1.log"));
    if !olog_path.exists() {
        return (
            flog,
            Err(format!("elevator wrote no {}", olog_path.display())),
        );
    }
    (flog, Ok(read_log(&olog_path)))
}

/// The share of I/Os of each block size.
fn bs_shares(log: &[LogEntry]) -> BTreeMap<u64, f64> {
    let mut m = BTreeMap::new();
    for e in log {
        *m.entry(e.bs).or_insert(0.0) += 1.0;
    }
    let n = log.len().max(1) as f64;
    m.values_mut().for_each(|v| *v /= n);
    m
}

/// `bssplit=4k/50:64k/50`: both tools issue each size for the same share of
/// I/Os, within 3 percentage points.
#[test]
fn block_size_mix_matches_fio() {
    elevator_testkit::needs!("fio");
    let job = "[bsmix]\nrw=randread\nbssplit=4k/50:64k/50\nnorandommap\nsize=256m\n\
               number_ios=20000\nio_size=1g\nwrite_lat_log=bsmix\nlog_offset=1\n";
    let (flog, olog) = both_logs("bsmix", job);
    let fshares = bs_shares(&flog);
    assert!(flog.len() > 15000, "fio logged only {} I/Os", flog.len());
    assert_eq!(
        fshares.keys().copied().collect::<Vec<_>>(),
        [4096, 65536],
        "fio's sizes"
    );
    let olog = olog.unwrap_or_else(|e| panic!("bssplit: {e}"));
    let oshares = bs_shares(&olog);
    for (bs, f) in &fshares {
        let o = oshares.get(bs).copied().unwrap_or(0.0);
        assert!(
            (f - o).abs() <= 0.03,
            "bssplit: {bs}-byte I/Os are {:.1} % of fio's, {:.1} % of elevator's \
             (fio {fshares:?}, elevator {oshares:?})",
            f * 100.0,
            o * 100.0
        );
    }
    assert_eq!(
        oshares.keys().collect::<Vec<_>>(),
        fshares.keys().collect::<Vec<_>>(),
        "block sizes elevator issued"
    );
}

/// The share of I/Os in each of `buckets` equal slices of `size` bytes.
fn offset_histogram(log: &[LogEntry], size: u64, buckets: u64) -> Vec<f64> {
    let mut h = vec![0.0; buckets as usize];
    for e in log {
        h[((e.offset * buckets / size).min(buckets - 1)) as usize] += 1.0;
    }
    let n = log.len().max(1) as f64;
    h.iter_mut().for_each(|v| *v /= n);
    h
}

/// How concentrated the accesses are, wherever the hot blocks are: the
/// share of I/Os that went to the 1, 10, 100 and 1000 most used blocks.
fn hot_set_curve(log: &[LogEntry]) -> Vec<f64> {
    let mut per_block: HashMap<u64, u64> = HashMap::new();
    for e in log {
        *per_block.entry(e.offset).or_insert(0) += 1;
    }
    let mut counts: Vec<u64> = per_block.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let n = log.len().max(1) as f64;
    [1, 10, 100, 1000]
        .iter()
        .map(|&k| counts.iter().take(k).sum::<u64>() as f64 / n)
        .collect()
}

/// `random_distribution=zipf:1.2` over 64 MiB of 4 KiB blocks, 20000 I/Os.
/// fio scatters zipf's ranks over the file with a hash of its own, so where
/// the hot blocks sit is fio's private choice; what must agree is how
/// concentrated the accesses are: the share of I/Os taken by the 1, 10, 100
/// and 1000 hottest blocks, within 0.05.
#[test]
fn zipf_concentration_matches_fio() {
    elevator_testkit::needs!("fio");
    let job = "[zipf]\nrw=randread\nbs=4k\nsize=64m\nrandom_distribution=zipf:1.2\n\
               norandommap\nnumber_ios=20000\nio_size=1g\nwrite_lat_log=zipf\nlog_offset=1\n";
    let (flog, olog) = both_logs("zipf", job);
    assert!(flog.len() > 15000, "fio logged only {} I/Os", flog.len());
    let f = hot_set_curve(&flog);
    // fio's own curve is that of zipf 1.2 (the hottest block alone takes
    // about a fifth of the I/Os): the harness reads the logs right.
    assert!(f[0] > 0.1 && f[3] > 0.6, "fio's zipf curve {f:?}");
    let olog = olog.unwrap_or_else(|e| panic!("zipf: {e}"));
    let o = hot_set_curve(&olog);
    for (i, k) in [1, 10, 100, 1000].iter().enumerate() {
        assert!(
            (f[i] - o[i]).abs() <= 0.05,
            "zipf:1.2: the {k} hottest blocks take {:.3} of fio's I/Os, {:.3} of elevator's \
             (fio {f:?}, elevator {o:?})",
            f[i],
            o[i]
        );
    }
}

/// `random_distribution=zoned:50/5:30/15:20/80` places its zones by offset:
/// a 20-bucket histogram over the file agrees within 0.05 in every bucket.
#[test]
fn zoned_histogram_matches_fio() {
    elevator_testkit::needs!("fio");
    let size = 128u64 << 20;
    let job = "[zoned]\nrw=randread\nbs=4k\nsize=128m\n\
               random_distribution=zoned:50/5:30/15:20/80\nnorandommap\nnumber_ios=20000\nio_size=1g\n\
               write_lat_log=zoned\nlog_offset=1\n";
    let (flog, olog) = both_logs("zoned", job);
    assert!(flog.len() > 15000, "fio logged only {} I/Os", flog.len());
    let f = offset_histogram(&flog, size, 20);
    // The first bucket is the first 5 % of the file: half of fio's I/Os.
    assert!((f[0] - 0.5).abs() < 0.05, "fio's zoned histogram {f:?}");
    let olog = olog.unwrap_or_else(|e| panic!("zoned: {e}"));
    let o = offset_histogram(&olog, size, 20);
    for (i, (a, b)) in f.iter().zip(&o).enumerate() {
        assert!(
            (a - b).abs() <= 0.05,
            "zoned: bucket {i} holds {a:.3} of fio's I/Os, {b:.3} of elevator's\n\
             fio      {f:.3?}\nelevator {o:.3?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Parse verdicts.

/// Options fio's parser accepts, alone or together (checked against fio on
/// every run). Left out on purpose, because `fio --parse-only` accepts them
/// although they are wrong (it prints an error and exits 0, or takes junk),
/// and elevator should not copy that: `iodepth=-1`, `numjobs=-1`, `bs=-4k`,
/// `loops=-1`, `fsync=-1`, `rwmixwrite=-5`, `size=0`, `size=150%`,
/// `offset=150%`, `bssplit=4k/abc`, `bssplit=4k/150`, `rw=read:abc`,
/// `percentile_list=50:101`, `include` of a missing file, `bs=4q`;
/// and `rw = read` (fio refuses spaces around `=` for `rw` but not for
/// numbers). Options that conflict only when the job runs (`bs` larger
/// than `size`, `iodepth_low` above `iodepth`) are not parse verdicts:
/// fio --parse-only accepts them.
const VALID: &[&str] = &[
    "bs=8k",
    "bs=4k,8k",
    "bs=4k,8k,16k",
    "bs = 8k",
    "iodepth = 16",
    "iodepth=32",
    "size=1g",
    "size=1G",
    "size=1GiB",
    "size=4096",
    "size=50%",
    "offset=10%",
    "offset=1m",
    "numjobs=4",
    "runtime=10m",
    "runtime=2",
    "time_based",
    "time_based=1",
    "bssplit=4k/50:8k/50",
    "bssplit=4k/50:8k/50,64k/100",
    "bssplit=4k/70:16k/20:64k/10",
    "bsrange=4k-64k",
    "bsrange=4k:64k",
    "blocksize_range=4k-16k",
    "blockalign=4k",
    "rate_iops=500,100",
    "rate_iops=2000",
    "rate=10m",
    "rate_min=1m",
    "rate_process=poisson",
    "rate_process=linear",
    "thinktime=5ms",
    "thinktime=200",
    "thinktime_blocks=8",
    "norandommap",
    "norandommap=0",
    "randrepeat=0",
    "randseed=1234",
    "random_generator=tausworthe",
    "random_generator=lfsr",
    "ramp_time=2s",
    "startdelay=1s",
    "startdelay=1-2",
    "io_size=16m",
    "number_ios=1000",
    "loops=3",
    "offset_increment=1m",
    "rw=randread:8",
    "rw=read:64k",
    "rw=rw",
    "rw=readwrite",
    "rw=randtrim",
    "rw=trimwrite",
    "rw=randrw",
    "rw=randrw\nrwmixread=70",
    "rwmixwrite=30",
    "rw_sequencer=identical",
    "rw_sequencer=sequential",
    "zonemode=strided\nzonesize=1m\nzonerange=16m",
    "zonemode=strided\nzonesize=4m\nzoneskip=12m",
    "fsync=32",
    "fdatasync=8",
    "end_fsync=1",
    "fsync_on_close=1",
    "verify=crc32c",
    "verify=md5\ndo_verify=1",
    "verify=sha256",
    "verify=xxhash\nverify_backlog=64",
    "verify=pattern\nverify_pattern=0xdeadbeef",
    "do_verify=0",
    "verify_fatal=1",
    "write_lat_log=lat",
    "write_bw_log=bw\nlog_avg_msec=100",
    "write_iops_log=iops",
    "log_offset=1",
    "percentile_list=50:99",
    "percentile_list=1:5:10:50:90:99:99.9",
    "stonewall",
    "group_reporting",
    "group_reporting=1",
    "unified_rw_reporting=mixed",
    "unified_rw_reporting=both",
    "unified_rw_reporting=none",
    "unified_rw_reporting=1",
    "iodepth_batch_submit=4",
    "iodepth_batch_complete_min=2",
    "iodepth_low=4",
    "directory=/mnt/test",
    "filename=/dev/sdb",
    "filename=/mnt/test/file\\:1",
    "filename_format=$jobname.$jobnum",
    "random_distribution=zipf:1.2",
    "random_distribution=pareto:0.9",
    "random_distribution=normal:20",
    "random_distribution=zoned:50/5:30/15:20/80",
    "random_distribution=zoned_abs:60/4m:40/12m",
    "random_distribution=random",
    "ioengine=libaio",
    "ioengine=io_uring",
    "ioengine=psync",
    "ioengine=sync",
    "ioengine=pvsync2",
    "ioengine=posixaio",
    "ioengine=mmap",
    "ioengine=null",
    "direct=1",
    "direct=0",
    "thread",
    "invalidate=1",
    "description=a job for the parser test",
];

/// What fio's parser refuses: bad units and numbers, unknown modes, values
/// out of range, options for an engine the job does not use, unknown
/// options, and lines that are not options.
const INVALID: &[&str] = &[
    "bs=abc",
    "bs=0",
    "bs",
    "bs=",
    "iodepth=abc",
    "numjobs=abc",
    "runtime=abc",
    "size=abc",
    "bsrange=abc",
    "rate_iops=abc",
    "rate=abc",
    "thinktime=abc",
    "thinktime_blocks=abc",
    "offset=abc",
    "loops=abc",
    "fsync=abc",
    "end_fsync=2",
    "randrepeat=2",
    "randseed=abc",
    "ramp_time=abc",
    "startdelay=abc",
    "io_size=abc",
    "number_ios=abc",
    "offset_increment=abc",
    "zonerange=abc",
    "verify_backlog=abc",
    "do_verify=maybe",
    "log_avg_msec=abc",
    "iodepth_batch_submit=abc",
    "blockalign=abc",
    "rw=readx",
    "rw=",
    "iodepth=0",
    "rwmixread=150",
    "direct=2",
    "direct=yes",
    "direct",
    "verify=foo",
    "random_distribution=foo",
    "random_distribution=zipf:1",
    "random_distribution=zipf:abc",
    "random_distribution=pareto:1.5",
    "random_distribution=normal:-5",
    "random_distribution=zoned:50/5:30/15",
    "random_distribution=zoned:50/5:30/15:20/80:10/0",
    "random_distribution=zoned_abs:60/4m:30/12m",
    "random_generator=foo",
    "rate_process=foo",
    "zonemode=foo",
    "rw_sequencer=foo",
    "unified_rw_reporting=3",
    "ioengine=libaio\nhipri",
    "ioengine=psync\nfixedbufs",
    "ioengine=psync\nhostname=example.com",
    "iodpeth=8",
    "blocksiz=4k",
    "global=1",
    "=4k",
];

/// Options fio accepts that elevator refuses on purpose, by name (engines
/// that do not do block I/O, engine names that do not exist, zoned block
/// devices): a refusal that names them is counted apart, not as a
/// difference. Each entry is (option lines, a name the refusal must say).
const ELEVATOR_REFUSES: &[(&str, &[&str])] = &[
    ("ioengine=net\nhostname=127.0.0.1\nport=8888", &["net"]),
    ("ioengine=cpuio\ncpuload=50", &["cpuio"]),
    ("ioengine=exec\nprogram=/bin/true", &["exec"]),
    ("ioengine=nosuchengine", &["nosuchengine"]),
    ("zonemode=zbd", &["zbd", "zonemode"]),
];

const RW_MODES: &[&str] = &["read", "write", "randread", "randwrite", "randrw", "rw"];

/// A generated job file and what it contains.
struct Generated {
    text: String,
    /// Whether every line is one fio accepts.
    valid: bool,
    /// The names a refusal by name may give, when an ELEVATOR_REFUSES entry
    /// is in it.
    refused_names: Vec<&'static str>,
}

/// Options, comments and blank lines a section gets: `count` entries from
/// VALID, each perhaps with an inline comment.
fn valid_lines(rng: &mut Rng, count: usize, out: &mut String) {
    for _ in 0..count {
        let entry = rng.pick::<&str>(VALID);
        let comment = match rng.index(10) {
            0 => " # why this value",
            1 => " ; tuned for the array",
            _ => "",
        };
        // A comment goes after the last line of a multi-line entry.
        out.push_str(entry);
        out.push_str(comment);
        out.push('\n');
        if rng.chance(10) {
            out.push_str(if rng.chance(50) {
                "# a note\n"
            } else {
                "\n; another\n"
            });
        }
    }
}

fn generate(rng: &mut Rng, n: usize) -> Generated {
    let mut text = String::new();
    if rng.chance(50) {
        text.push_str(&format!("# generated job file {n}\n"));
    }
    // Syntax errors outside any option table: an option before any section.
    let stray = rng.chance(4);
    if stray {
        text.push_str("rw=read\n");
    }
    let invalid = rng.chance(40);
    let refused = !invalid && rng.chance(6);
    let sections = 1 + rng.index(3);
    let global = rng.chance(50);
    let total = sections + usize::from(global);
    let bad_at = rng.index(total);
    let mut refused_names = Vec::new();
    for s in 0..total {
        if global && s == 0 {
            text.push_str("[global]\n");
            if rng.chance(40) {
                text.push_str(&format!("name=gen{n}\n"));
            }
        } else {
            text.push_str(&format!("\n[job{n}_{s}]\n"));
            text.push_str(&format!("rw={}\n", rng.pick(RW_MODES)));
            text.push_str("size=16m\n");
            if s > 1 && rng.chance(30) {
                text.push_str("stonewall\n");
            }
        }
        let count = rng.index(3);
        valid_lines(rng, count, &mut text);
        if invalid && s == bad_at {
            text.push_str(rng.pick::<&str>(INVALID));
            text.push('\n');
        }
        if refused && s == bad_at {
            let (lines, names) = rng.pick(ELEVATOR_REFUSES);
            text.push_str(lines);
            text.push('\n');
            refused_names.extend_from_slice(names);
        }
    }
    // A job section after [global] may come last, or [global] again.
    if rng.chance(5) {
        text.push_str("[global]\nbs=4k\n");
    }
    Generated {
        text,
        valid: !invalid && !stray,
        refused_names,
    }
}

/// Run `f` on every item, on as many threads as the machine has (fio takes
/// most of a fifth of a second to start, calibrating its clock).
fn parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, 8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= items.len() {
                        break;
                    }
                    let r = f(&items[i]);
                    *results[i].lock().expect("result lock") = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().expect("result lock").expect("a result"))
        .collect()
}

/// 320 job files made from the tables above (the same ones on every run),
/// each through `fio --parse-only` and `elevator run --parse-only`: the
/// verdicts must agree. The tables are checked first: fio must accept every
/// file made only of VALID lines and refuse every file with an INVALID one.
#[test]
fn parse_verdicts_match_fio() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("verdicts");
    let mut rng = Rng::new(0x5eed_0014);
    let files: Vec<(PathBuf, Generated)> = (0..320)
        .map(|n| {
            let g = generate(&mut rng, n);
            (dir.write(&format!("gen{n:03}.fio"), &g.text), g)
        })
        .collect();
    let verdicts = parallel(&files, |(path, _)| {
        let p = path.to_str().expect("utf-8 path");
        let f = fio(dir.path(), &["--parse-only", p]);
        let o = elevator(dir.path(), &["run", p, "--parse-only"]);
        (
            f.status.success(),
            String::from_utf8_lossy(&f.stderr).into_owned(),
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout),
        )
    });

    // Jobs fio's --parse-only accepts that elevator refuses on purpose, by
    // name: `time_based` with no
    // runtime would run for ever (fio runs it until killed); `rate` with
    // `rate_iops` for one direction is refused by fio too, when it runs.
    const DELIBERATE: &[&str] = &[
        "time_based needs a runtime",
        "rate and rate_iops are mutually exclusive",
    ];
    let mut table_errors = Vec::new();
    let mut differences = Vec::new();
    let (mut agree, mut by_name) = (0, 0);
    for ((path, g), (fio_ok, fio_err, ours_ok, ours_err)) in files.iter().zip(&verdicts) {
        let name = path.file_name().expect("name").to_string_lossy();
        if *fio_ok != g.valid {
            table_errors.push(format!(
                "{name}: the table says {}, fio says {}: {}\n{}",
                if g.valid { "valid" } else { "invalid" },
                if *fio_ok { "valid" } else { "invalid" },
                fio_err.trim(),
                g.text
            ));
            continue;
        }
        let first = ours_err.lines().next().unwrap_or("").to_string();
        match (fio_ok, ours_ok) {
            (true, true) => agree += 1,
            (false, false) if ours_err.contains(&*name) => agree += 1,
            (false, false) => differences.push(format!(
                "{name}: refused, but the message does not name the file: {first}"
            )),
            (true, false)
                if (!g.refused_names.is_empty()
                    && g.refused_names.iter().any(|n| ours_err.contains(n)))
                    || DELIBERATE.iter().any(|d| ours_err.contains(d)) =>
            {
                by_name += 1;
                eprintln!("refused by name  {name}: {first}");
            }
            (true, false) => differences.push(format!(
                "{name}: fio accepts it, elevator refuses: {first}\n{}",
                g.text
            )),
            (false, true) => differences.push(format!(
                "{name}: fio refuses it ({}), elevator accepts it\n{}",
                fio_err.lines().next().unwrap_or("").trim(),
                g.text
            )),
        }
    }
    assert!(
        table_errors.is_empty(),
        "the generator's tables disagree with fio {} times (a test bug):\n{}",
        table_errors.len(),
        table_errors.join("\n")
    );
    let accepted = files.iter().filter(|(_, g)| g.valid).count();
    eprintln!(
        "parse verdicts: {} files ({accepted} valid for fio), {agree} agree, \
         {by_name} refused by name, {} differ",
        files.len(),
        differences.len()
    );
    assert!(
        differences.is_empty(),
        "elevator's parse verdict differs from fio's on {} of {} files:\n{}",
        differences.len(),
        files.len(),
        differences
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// ---------------------------------------------------------------------------
// fio's own json+ reader, and terse output.

/// The CSV files `fio_jsonplus_clat2csv SOURCE STUB` wrote (STUB_jobN), and
/// their data rows.
fn clat2csv(dir: &TempDir, source: &Path, stub: &str) -> Vec<(String, usize)> {
    let out = common::fio::run(
        std::process::Command::new("python3")
            .current_dir(dir.path())
            .arg("/usr/bin/fio_jsonplus_clat2csv")
            .arg(source)
            .arg(dir.path().join(stub)),
    );
    assert!(
        out.status.success(),
        "fio_jsonplus_clat2csv {} failed: {}{}",
        source.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir.path()).expect("list the scratch directory") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.starts_with(&format!("{stub}_job")) {
            let text = std::fs::read_to_string(dir.path().join(&name)).expect("read the CSV");
            found.push((name, text.lines().count().saturating_sub(1)));
        }
    }
    found
}

/// fio_jsonplus_clat2csv (shipped with fio) reads elevator's json+ and
/// writes a CSV of latency bins with rows in it, as it does for fio's.
#[test]
fn fio_jsonplus_clat2csv_reads_elevators_json_plus() {
    elevator_testkit::needs!("fio", "python3");
    assert!(
        Path::new("/usr/bin/fio_jsonplus_clat2csv").exists(),
        "fio_jsonplus_clat2csv is missing: install Debian's package fio (apt-get install fio)"
    );
    let dir = TempDir::new("clat2csv");
    let job = "[lat]\nrw=randrw\nbs=4k\nsize=8m\niodepth=4\n";
    let f = fio_null(&dir, "lat", job, "json+");
    let fpath = dir.write("fio.json", &f);
    let fcsv = clat2csv(&dir, &fpath, "fio");
    assert!(
        fcsv.iter().any(|(_, rows)| *rows > 0),
        "fio's own json+ gave no CSV rows: {fcsv:?}"
    );
    // The job runs psync at iodepth=4: fio's note on its depth comes first
    // on stdout, as fio's would; the file holds the document alone.
    let ours = elevator_null(&dir, "lat", job, "json+");
    let opath = dir.write("elevator.json", &ours[ours.find('{').unwrap_or(0)..]);
    let ocsv = clat2csv(&dir, &opath, "elevator");
    assert!(
        ocsv.iter().any(|(_, rows)| *rows > 0),
        "fio_jsonplus_clat2csv found no latency bins in elevator's json+: {ocsv:?}"
    );
}

/// Fields of fio's terse (version 3) line: 5 of header, 41 for reads, 41 for
/// writes (no trims in version 3), 5 of CPU, 7 of I/O depths, 10 + 12 of
/// latency buckets; each disk adds 9 (fio's null engine has none).
const TERSE_FIELDS: usize = 121;
const TERSE_DISK_FIELDS: usize = 9;
const TERSE_READ_KB: usize = 5;
const TERSE_WRITE_KB: usize = 46;

fn terse_lines(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with("3;"))
        .map(|l| l.split(';').map(str::to_string).collect())
        .collect()
}

/// `--output-format=terse`: per job, a line with as many fields as fio's
/// (plus 9 per disk, which elevator's devices have and the null engine not),
/// and the same read and write KiB.
#[test]
fn terse_lines_match_fio() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("terse");
    let job = "[global]\nbs=4k\n[reader]\nrw=read\nsize=8m\n[writer]\nrw=randwrite\nsize=4m\n";
    let f = terse_lines(&fio_null(&dir, "terse", job, "terse"));
    assert_eq!(f.len(), 2, "fio's terse lines: {f:?}");
    for line in &f {
        assert_eq!(line.len(), TERSE_FIELDS, "fio's terse line: {line:?}");
    }
    assert_eq!(f[0][TERSE_READ_KB], "8192", "fio reader: {:?}", f[0]);
    assert_eq!(f[1][TERSE_WRITE_KB], "4096", "fio writer: {:?}", f[1]);

    let text = elevator_null(&dir, "terse", job, "terse");
    let o = terse_lines(&text);
    assert_eq!(
        o.len(),
        f.len(),
        "elevator's terse output has {} job lines, fio's {}:\n{text}",
        o.len(),
        f.len()
    );
    for (fl, ol) in f.iter().zip(&o) {
        let extra = ol.len().saturating_sub(TERSE_FIELDS);
        assert!(
            ol.len() >= TERSE_FIELDS && extra % TERSE_DISK_FIELDS == 0,
            "elevator's terse line has {} fields, fio's {} (+{} per disk):\n{}",
            ol.len(),
            fl.len(),
            TERSE_DISK_FIELDS,
            ol.join(";")
        );
        for (what, i) in [
            ("jobname", 2),
            ("read KiB", TERSE_READ_KB),
            ("write KiB", TERSE_WRITE_KB),
        ] {
            assert_eq!(
                ol[i], fl[i],
                "terse field {i} ({what}): fio {}, elevator {}",
                fl[i], ol[i]
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Verification.

/// The job pair of the verify test: write 4 MiB in 4 KiB blocks with crc32c
/// headers and no read-back; then the same job with `verify_only=1`, which
/// writes nothing and checks what the first run left.
const VERIFY_WRITE: &str = "[verified]\nrw=write\nbs=4k\nsize=4m\nverify=crc32c\ndo_verify=0\n";
const VERIFY_CHECK: &str = "[verified]\nrw=write\nbs=4k\nsize=4m\nverify=crc32c\nverify_only=1\n";

/// Where the corrupted block is: the 100th 4 KiB block.
const CORRUPT_AT: u64 = 100 * 4096;

fn corrupt(path: &Path, offset: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open the file to corrupt");
    f.seek(SeekFrom::Start(offset)).expect("seek");
    let mut rng = Rng::new(0xbad_b10c);
    let junk: Vec<u8> = (0..4096).map(|_| rng.next_u64() as u8).collect();
    f.write_all(&junk).expect("corrupt a block");
    f.sync_all().expect("sync");
}

fn names_offset(message: &str, offset: u64) -> bool {
    message.contains(&offset.to_string())
        || message.contains(&format!("{offset:#x}"))
        || message.contains(&format!("{offset:#X}"))
}

/// fio itself on the job pair (psync on a scratch file): the pair is right,
/// the good case passes and the corrupted block is reported at its offset.
#[test]
fn fio_verify_pair_catches_a_corrupted_block() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("verify-fio");
    let data = dir.path().join("data");
    let file = format!("--filename={}", data.display());
    let write = dir.write("write.fio", VERIFY_WRITE);
    let check = dir.write("check.fio", VERIFY_CHECK);
    for job in [&write, &check] {
        let out = fio(
            dir.path(),
            &["--ioengine=psync", &file, job.to_str().expect("utf-8")],
        );
        stdout_ok("fio verify pair", &out);
    }
    corrupt(&data, CORRUPT_AT);
    let out = fio(
        dir.path(),
        &["--ioengine=psync", &file, check.to_str().expect("utf-8")],
    );
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "fio missed the corruption:\n{text}");
    assert!(names_offset(&text, CORRUPT_AT), "fio's report:\n{text}");
}

/// elevator on a real device (`file:PATH`): the write pass and a
/// verify-only pass of the same job succeed; after one block is overwritten
/// with random bytes, the verify-only pass fails, naming the block's offset.
#[test]
fn verify_catches_a_corrupted_block() {
    let dir = TempDir::new("verify");
    let data = dir.path().join("data");
    std::fs::File::create(&data)
        .and_then(|f| f.set_len(8 << 20))
        .expect("create the device file");
    let device = format!("file:{}", data.display());
    let write = dir.write("write.fio", VERIFY_WRITE);
    let check = dir.write("check.fio", VERIFY_CHECK);
    let run = |job: &Path| {
        elevator(
            dir.path(),
            &[
                "run",
                job.to_str().expect("utf-8"),
                "--device",
                &device,
                "--seed",
                "14",
            ],
        )
    };
    stdout_ok("elevator write pass", &run(&write));
    stdout_ok(
        "elevator verify-only pass (nothing corrupted)",
        &run(&check),
    );
    corrupt(&data, CORRUPT_AT);
    let out = run(&check);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "elevator's verify-only pass missed the corrupted block:\n{text}"
    );
    assert!(
        names_offset(&text, CORRUPT_AT),
        "elevator's verify failure does not name offset {CORRUPT_AT} ({CORRUPT_AT:#x}):\n{text}"
    );
}

// ---------------------------------------------------------------------------
// The corpus.

fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    files
}

/// Every job file in tests/fio-corpus is one fio accepts, and runs as
/// written on a simulated SSD.
#[test]
fn corpus_runs_as_written() {
    elevator_testkit::needs!("fio");
    let corpus = repo_root().join("tests/fio-corpus");
    let files = corpus_files(&corpus);
    assert!(files.len() >= 40, "the corpus has {} files", files.len());
    let results = parallel(&files, |file| {
        let scratch = TempDir::new("corpus");
        let p = file.to_str().expect("utf-8 path");
        let f = fio(scratch.path(), &["--parse-only", p]);
        let o = elevator(
            scratch.path(),
            &[
                "run",
                p,
                "--device",
                CORPUS_DEVICE,
                "--output-format",
                "json",
            ],
        );
        (f, o)
    });
    let mut failures = Vec::new();
    for (file, (f, o)) in files.iter().zip(&results) {
        let name = file.file_name().expect("name").to_string_lossy();
        if !f.status.success() {
            failures.push(format!(
                "{name}: fio refuses it (the corpus is of files fio accepts): {}",
                String::from_utf8_lossy(&f.stderr).trim()
            ));
        } else if !o.status.success() {
            failures.push(format!(
                "{name}: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .next()
                    .unwrap_or("(no message)")
            ));
        } else if serde_json::from_slice::<Value>(&o.stdout).is_err() {
            failures.push(format!("{name}: exit 0, but the output is not JSON"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus files do not run as written on {CORPUS_DEVICE}:\n  {}",
        failures.len(),
        files.len(),
        failures.join("\n  ")
    );
}

/// The files in tests/fio-corpus/refused are accepted by fio and refused by
/// elevator, by name: the message says which engine or option.
#[test]
fn corpus_refusals_name_the_engine_or_option() {
    elevator_testkit::needs!("fio");
    let names: &[(&str, &[&str])] = &[
        ("cpuio-burner.fio", &["cpuio"]),
        ("exec-engine.fio", &["exec"]),
        ("net-tcp-sender.fio", &["net"]),
        ("zbd-zoned-write.fio", &["zbd", "zonemode"]),
    ];
    let dir = repo_root().join("tests/fio-corpus/refused");
    let files = corpus_files(&dir);
    let mut failures = Vec::new();
    let scratch = TempDir::new("refused");
    for file in &files {
        let name = file
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let Some((_, needles)) = names.iter().find(|(n, _)| *n == name) else {
            failures.push(format!(
                "{name}: not in this test's table of what it must name"
            ));
            continue;
        };
        let p = file.to_str().expect("utf-8 path");
        let f = fio(scratch.path(), &["--parse-only", p]);
        assert!(
            f.status.success(),
            "{name}: fio refuses it: {}",
            String::from_utf8_lossy(&f.stderr)
        );
        let o = elevator(scratch.path(), &["run", p, "--device", CORPUS_DEVICE]);
        // The file's own name (cpuio-burner.fio) does not count as naming it.
        let err = String::from_utf8_lossy(&o.stderr)
            .replace(p, "")
            .replace(&name, "");
        let first = err.lines().next().unwrap_or("(no message)");
        if o.status.success() {
            failures.push(format!("{name}: elevator ran it"));
        } else if !needles.iter().any(|n| {
            // As a word: "net" in "network" does not count.
            err.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .any(|w| w == *n)
        }) {
            failures.push(format!(
                "{name}: the refusal names none of {needles:?}: {first}"
            ));
        }
    }
    assert_eq!(files.len(), names.len(), "files in {}", dir.display());
    assert!(
        failures.is_empty(),
        "refusals that do not name what is refused:\n  {}",
        failures.join("\n  ")
    );
}

// ---------------------------------------------------------------------------
// I/O errors (issue 26): fio's own behaviour, side by side.

/// One run's error figures: exit status, the job's `error`, writes issued,
/// and `total_err` / `first_error` when the report has them.
fn error_figures(what: &str, out: &std::process::Output) -> (bool, i64, u64, Option<(u64, i64)>) {
    let v = json(what, &String::from_utf8_lossy(&out.stdout));
    let job = &v["jobs"][0];
    let counts = job["total_err"]
        .as_u64()
        .map(|t| (t, job["first_error"].as_i64().unwrap_or(-1)));
    (
        out.status.success(),
        job["error"].as_i64().unwrap_or(-1),
        job["write"]["total_ios"].as_u64().unwrap_or(u64::MAX),
        counts,
    )
}

/// fio cannot be given an EIO here, but `/dev/full` fails every write
/// with ENOSPC; elevator's memory device with `fail_rate=1` fails every
/// one with EIO. Each error is its own, but what follows must be fio's:
/// the job stops at the first error (one write at depth 1), reports it as
/// `error` and exits 1, with no `total_err`; with `ignore_error` naming the
/// error for writes, both run to the end (64 writes), count every error in
/// `total_err` with `first_error`, still report `error`, and exit 0; and the
/// text of both has the same `errors` line.
#[test]
fn io_errors_end_jobs_as_fios_do() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("io-errors");
    let job = [
        "--name=x",
        "--rw=write",
        "--bs=4k",
        "--size=256k",
        "--iodepth=1",
    ];
    let run_fio = |extra: &[&str]| {
        let mut args = job.to_vec();
        args.extend(["--ioengine=psync", "--filename=/dev/full"]);
        args.extend(extra);
        fio(dir.path(), &args)
    };
    let run_ours = |extra: &[&str]| {
        let mut args = vec!["run"];
        args.extend(job);
        args.extend(["--device", "mem:16m,fail_rate=1"]);
        args.extend(extra);
        elevator(dir.path(), &args)
    };
    let json_args = ["--output-format=json"];
    let fio_stop = error_figures("fio", &run_fio(&json_args));
    let our_stop = error_figures("elevator", &run_ours(&json_args));
    assert_eq!(fio_stop, (false, 28, 1, None), "fio on /dev/full");
    assert_eq!(our_stop, (false, 5, 1, None), "elevator on fail_rate=1");

    let fio_on = error_figures(
        "fio",
        &run_fio(&["--ignore_error=,ENOSPC", "--output-format=json"]),
    );
    let ours_on = error_figures(
        "elevator",
        &run_ours(&["--ignore_error=,EIO", "--output-format=json"]),
    );
    assert_eq!(fio_on, (true, 28, 64, Some((64, 28))), "fio");
    assert_eq!(ours_on, (true, 5, 64, Some((64, 5))), "elevator");

    let errors_line = |out: &std::process::Output| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.trim_start().starts_with("errors    :"))
            .map(|l| {
                l.replace("28/<No space left on device>", "N")
                    .replace("5/<Input/output error>", "N")
            })
    };
    let theirs = errors_line(&run_fio(&["--ignore_error=,ENOSPC"]));
    let ours = errors_line(&run_ours(&["--ignore_error=,EIO"]));
    assert!(theirs.is_some(), "fio prints an errors line");
    assert_eq!(theirs, ours);
}

/// The depth a job runs at, by engine, against fio itself: two clones of
/// 4 KiB random reads at iodepth=8 on a file (fio) and on the null device
/// (elevator). With psync, fio's default, both cap the depth at 1: the
/// same note per clone, before the report, and every I/O at depth 1. With
/// libaio neither notes anything and both keep more than 1 in flight.
#[test]
fn synchronous_engines_run_at_depth_1_as_in_fio() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("syncdepth");
    let file = dir.file("data");
    let filename = format!("--filename={file}");
    for (engine, capped) in [("psync", true), ("pvsync", true), ("libaio", false)] {
        let ioengine = format!("--ioengine={engine}");
        let job = [
            "--name=r",
            filename.as_str(),
            "--rw=randread",
            "--bs=4k",
            "--size=4m",
            "--iodepth=8",
            "--numjobs=2",
            ioengine.as_str(),
            "--output-format=json",
        ];
        let f = stdout_ok(&format!("fio with {engine}"), &fio(dir.path(), &job));
        let mut args = vec!["run", "--device", NULL_DEVICE];
        args.extend(job.iter().filter(|a| !a.starts_with("--filename")));
        let o = stdout_ok(
            &format!("elevator with {engine}"),
            &elevator(dir.path(), &args),
        );
        let notes = |text: &str| -> Vec<String> {
            text[..text.find('{').unwrap_or(0)]
                .lines()
                .filter(|l| l.starts_with("note: both iodepth"))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(
            notes(&f),
            notes(&o),
            "{engine}: fio's notes, then elevator's"
        );
        assert_eq!(
            notes(&o).len(),
            if capped { 2 } else { 0 },
            "{engine}:\n{o}"
        );
        let (f, o) = (json("fio", &f), json("elevator", &o));
        for j in 0..2 {
            let at = |v: &Value, depth: &str| v["jobs"][j]["iodepth_level"][depth].as_f64();
            if capped {
                assert_eq!(at(&f, "1"), Some(100.0), "{engine}: fio's depths");
                assert_eq!(at(&o, "1"), Some(100.0), "{engine}: elevator's depths");
            } else {
                // Deeper than 1 (how deep on a null device is each one's
                // own: fio's completes at once, elevator's in batches).
                for v in [&f, &o] {
                    assert!(at(v, "1").is_some_and(|p| p < 50.0), "{engine}: {v}");
                }
            }
        }
    }
}
