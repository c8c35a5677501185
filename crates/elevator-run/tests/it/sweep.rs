//! Sweeps: the spec's parsing and each refusal, the grid's order, tunables
//! a scheduler lacks, the CSV's quoting, resuming after a kill, and the
//! same table on 1 and 2 threads, for a trace and a job.

use std::path::{Path, PathBuf};

use elevator_run::sweep::results_file::csv_line;
use elevator_run::sweep::{
    Cell, Fixed, Plugins, ResultsFile, Spec, Workload, run_config, run_local,
};

const TRACE: &str = "tests/traces/pgbench-init-mq-deadline.trace.xz";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory for one test.
fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("elevator-sweep-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The spec `text` (TOML) in a file of its own.
fn spec_file(tag: &str, text: &str) -> (PathBuf, Result<Spec, String>) {
    let d = dir(tag);
    let path = d.join("spec.toml");
    std::fs::write(&path, text).unwrap();
    let spec = Spec::from_toml_file(&path, &Plugins::default()).map_err(|e| e.to_string());
    (d, spec)
}

fn trace_spec(tag: &str, grid: &str) -> (PathBuf, Spec) {
    let trace = root().join(TRACE);
    let text = format!(
        "trace = {:?}\n[grid]\n{grid}\n",
        trace.display().to_string()
    );
    let (d, spec) = spec_file(tag, &text);
    (d, spec.unwrap())
}

const JOB: &str = "[r]\nrw=randread\nbs=4k\nsize=256k\nioengine=libaio\n";

fn job_spec(grid: Vec<(&str, Vec<&str>)>) -> Result<Spec, String> {
    let workload = Workload::Job {
        name: "r.fio".to_string(),
        text: JOB.to_string(),
    };
    let fixed = Fixed {
        device: "nvme".to_string(),
        seed: 7,
        ..Fixed::default()
    };
    let grid = grid
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
        .collect();
    Spec::new(workload, fixed, grid, &Plugins::default()).map_err(|e| e.to_string())
}

fn refused(text: &str, needles: &[&str]) {
    let (_, spec) = spec_file("refused", text);
    let err = spec.expect_err(text);
    for n in needles {
        assert!(err.contains(n), "{text}\n=> {err}\nlacks {n:?}");
    }
}

#[test]
fn a_spec_file_reads_with_its_grid_in_order() {
    let (_, spec) = trace_spec(
        "order",
        "scheduler = [\"none\", \"bfq\"]\nnr_requests = [32, 64, 128]",
    );
    assert_eq!(spec.len(), 6);
    let values = |i| spec.config(i).unwrap().values;
    // The last key varies fastest.
    let pair = |s: &str, n: &str| {
        vec![
            ("scheduler".into(), s.into()),
            ("nr_requests".into(), n.into()),
        ]
    };
    assert_eq!(values(0), pair("none", "32"));
    assert_eq!(values(1), pair("none", "64"));
    assert_eq!(values(3), pair("bfq", "32"));
    assert_eq!(values(5), pair("bfq", "128"));
    assert!(spec.config(6).is_none());
    let columns = spec.columns();
    assert_eq!(
        &columns[..4],
        ["config", "scheduler", "nr_requests", "bios"]
    );
    assert_eq!(columns.last().map(String::as_str), Some("error"));
}

#[test]
fn each_mistake_is_refused_before_anything_runs() {
    let trace = root().join(TRACE).display().to_string();
    let t = |rest: &str| format!("trace = {trace:?}\n{rest}");
    refused(
        &t("[grid]\nnr_request = [1]"),
        &[
            "spec.toml: [grid] unknown key 'nr_request'",
            "did you mean nr_requests?",
            "a grid key is scheduler, device, seed, a queue or scheduler tunable",
        ],
    );
    refused(
        &t("sheduler = \"bfq\""),
        &["unknown key 'sheduler'", "did you mean scheduler?"],
    );
    refused(
        &t("[grid]\nscheduler = [\"bfg\"]"),
        &[
            "[grid] scheduler",
            "unknown scheduler 'bfg'",
            "did you mean bfq?",
            "known: none, mq-deadline",
        ],
    );
    refused(
        &t("[grid]\ndevice = [\"hdd-72000\"]"),
        &["[grid] device", "hdd-72000"],
    );
    refused(
        &t("[grid]\ndevice = [\"mem:1g\"]"),
        &["a sweep runs on simulated devices only"],
    );
    refused(
        &t("[grid]\nnr_requests = [0]"),
        &["[grid] nr_requests", "nr_requests=0"],
    );
    refused(
        &t("[grid]\nnr_requests = []"),
        &["[grid] nr_requests: an empty list"],
    );
    refused(
        &t("[grid]\nnr_requests = [[1, 2]]"),
        &["[grid] nr_requests: a array is not a value"],
    );
    refused(
        &t("[grid]\nseed = [1, 2]"),
        &["[grid] key 'seed'", "a replay has no random stream"],
    );
    refused(
        &t("[grid]\niodepth = [1, 2]"),
        &["unknown key 'iodepth'", "a fio option, for a job"],
    );
    refused(
        &t("[grid]\nslice_idle = [1]\nscheduler = [\"kyber\"]"),
        &["not a tunable of kyber"],
    );
    refused(&t("job = \"x.fio\""), &["trace and job: give one workload"]);
    refused("[grid]\nscheduler = [\"bfq\"]", &["no workload"]);
    refused(&t("seed = -1"), &["seed: a whole number from 0"]);
    refused(
        &t("[grid]\nnr_requests = [{ a = 1 }]"),
        &["a table is not a value"],
    );
    let many: Vec<String> = (0..1001).map(|n| n.to_string()).collect();
    let list = many.join(", ");
    refused(
        &t(&format!(
            "[grid]\nread_expire = [{list}]\nwrite_expire = [{list}]"
        )),
        &[
            "more than 1000000 configurations",
            "1001 read_expire × 1001 write_expire",
        ],
    );
    refused(
        "job_text = \"[r]\\nrw=randread\\nbs=4k\\nsize=1m\"\n[grid]\nbs = [\"4q\"]",
        &["[grid] bs"],
    );
    refused(
        "job_text = \"[r]\\nrw=randread\"\n[grid]\niodepth_x = [1]",
        &["unknown key 'iodepth_x'", "or a fio option"],
    );
    refused(&t("[grid"), &["spec.toml"]);
    let huge = "job_text = \"[r]\\nrw=randread\\nbs=4k\\nsize=1m\\nioengine=libaio\\n\
                iodepth=65536\"\n[grid]\nnumjobs = [1, 4096]";
    refused(
        huge,
        &["[grid] numjobs", "more than half of this machine's memory"],
    );
}

#[test]
fn a_tunable_its_scheduler_lacks_is_empty_and_runs_once() {
    let spec = job_spec(vec![
        ("scheduler", vec!["none", "bfq"]),
        ("slice_idle", vec!["0", "8"]),
    ])
    .unwrap();
    // none × {0, 8} is one configuration: none has no slice_idle.
    assert_eq!(spec.len(), 3);
    let values: Vec<Vec<(String, String)>> =
        (0..3).map(|i| spec.config(i).unwrap().values).collect();
    assert_eq!(values[0][1], ("slice_idle".to_string(), String::new()));
    assert_eq!(values[1][1].1, "0");
    assert_eq!(values[2][1].1, "8");
    let rows = run_config(&spec, 0, &Plugins::default()).unwrap();
    assert_eq!(rows[0][2], Cell::Empty);
    assert_eq!(rows[0][3], Cell::Text("r".to_string()));
}

#[test]
fn csv_fields_are_quoted_when_they_must_be() {
    let line = csv_line(&[
        Cell::Int(3),
        Cell::Float(0.5),
        Cell::Text("plain".into()),
        Cell::Text("a,b".into()),
        Cell::Text("say \"hi\"".into()),
        Cell::Text("two\nlines".into()),
        Cell::Text(" padded".into()),
        Cell::Empty,
    ]);
    assert_eq!(
        line,
        "3,0.5,plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\" padded\",\n"
    );
}

/// The whole CSV of `spec` run fresh on `threads` into `dir/name`.
fn fresh(spec: &Spec, dir: &Path, name: &str, threads: usize) -> String {
    let path = dir.join(name);
    let mut out = ResultsFile::open(&path, spec).unwrap();
    run_local(spec, threads, Some(&mut out), &Plugins::default(), &|_| {}).unwrap();
    assert!(out.finish(spec).unwrap());
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_trace_sweep_is_the_same_on_one_and_two_threads() {
    let (d, spec) = trace_spec(
        "threads",
        "scheduler = [\"none\", \"mq-deadline\", \"kyber\"]\ndevice = [\"hdd-7200\", \"recorded\"]",
    );
    let one = fresh(&spec, &d, "one.csv", 1);
    let two = fresh(&spec, &d, "two.csv", 2);
    assert_eq!(one, two);
    assert_eq!(one.lines().count(), 1 + spec.len());
    let rows = run_local(&spec, 2, None, &Plugins::default(), &|_| {}).unwrap();
    let indices: Vec<usize> = rows.iter().map(|(i, _)| *i).collect();
    assert_eq!(indices, (0..spec.len()).collect::<Vec<_>>());
    let text: String = std::iter::once(csv_line(
        &spec
            .columns()
            .into_iter()
            .map(Cell::Text)
            .collect::<Vec<_>>(),
    ))
    .chain(rows.iter().flat_map(|(_, r)| r.iter().map(|r| csv_line(r))))
    .collect();
    assert_eq!(text, one);
}

#[test]
fn a_sweep_resumes_after_a_kill_and_ends_as_a_fresh_one() {
    let spec = job_spec(vec![
        ("scheduler", vec!["none", "mq-deadline", "bfq"]),
        ("iodepth", vec!["1", "4", "16"]),
    ])
    .unwrap();
    let d = dir("resume");
    let whole = fresh(&spec, &d, "fresh.csv", 2);
    // Killed: the header, configurations 4 and 1 done (out of order), and
    // half of configuration 7's line.
    let lines: Vec<&str> = whole.lines().collect();
    let torn = &lines[8][..lines[8].len() / 2];
    let partial = format!("{}\n{}\n{}\n{torn}", lines[0], lines[5], lines[2]);
    let path = d.join("killed.csv");
    std::fs::write(&path, partial).unwrap();
    let mut out = ResultsFile::open(&path, &spec).unwrap();
    assert_eq!(out.done().iter().copied().collect::<Vec<_>>(), [1, 4]);
    let ran = run_local(&spec, 2, Some(&mut out), &Plugins::default(), &|_| {}).unwrap();
    assert_eq!(ran.len(), spec.len() - 2);
    assert!(out.finish(&spec).unwrap());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);
}

#[test]
fn a_results_file_of_another_spec_is_refused() {
    let spec = job_spec(vec![("scheduler", vec!["none", "bfq"])]).unwrap();
    let other = job_spec(vec![("scheduler", vec!["none", "kyber"])]).unwrap();
    let d = dir("other");
    fresh(&other, &d, "other.csv", 1);
    let err = ResultsFile::open(&d.join("other.csv"), &spec)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("row 2: config 1 has scheduler=kyber, this sweep's has scheduler=bfq"),
        "{err}"
    );
    let wider = job_spec(vec![("scheduler", vec!["none"]), ("iodepth", vec!["1"])]).unwrap();
    let err = ResultsFile::open(&d.join("other.csv"), &wider)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("its header is not this sweep's columns"),
        "{err}"
    );
}

#[test]
fn a_spec_travels_as_json_and_runs_the_same() {
    let spec = job_spec(vec![
        ("scheduler", vec!["none", "bfq"]),
        ("slice_idle", vec!["0", "8"]),
    ])
    .unwrap();
    let back = Spec::from_json(&spec.to_json()).unwrap();
    assert_eq!(back.len(), spec.len());
    for i in 0..spec.len() {
        assert_eq!(back.config(i), spec.config(i));
        let p = Plugins::default();
        assert_eq!(
            run_config(&back, i, &p).unwrap(),
            run_config(&spec, i, &p).unwrap()
        );
    }
    assert!(Spec::from_json("{").is_err());
}

#[test]
fn a_failed_configuration_is_a_row_with_its_error() {
    // A latent sector error under the first read: the job fails on its
    // own terms (EIO), on one device of the grid only.
    let workload = Workload::Job {
        name: "read.fio".to_string(),
        text: "[r]\nrw=read\nbs=4k\nsize=64k\n".to_string(),
    };
    let grid = vec![(
        "device".to_string(),
        vec!["nvme,lse_sectors=0-100".to_string(), "nvme".to_string()],
    )];
    let spec = Spec::new(workload, Fixed::default(), grid, &Plugins::default()).unwrap();
    let rows = run_config(&spec, 0, &Plugins::default()).unwrap();
    let error = rows[0].last().unwrap();
    assert!(
        matches!(error, Cell::Text(t) if t.contains("job 'r' (clone 0) failed")),
        "{error:?}"
    );
    let rows = run_config(&spec, 1, &Plugins::default()).unwrap();
    assert_eq!(rows[0].last(), Some(&Cell::Empty));
}

#[test]
fn every_shipped_spec_reads() {
    let dir = root().join("examples/sweep");
    let mut read = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let spec = Spec::from_toml_file(&path, &Plugins::default())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(spec.len() >= 6, "{}", path.display());
            read += 1;
        }
    }
    assert!(read >= 4, "{read} specs in {}", dir.display());
}

#[test]
fn each_clone_of_a_job_has_its_rows() {
    let workload = Workload::Job {
        name: "two.fio".to_string(),
        text: "[w]\nrw=randrw\nbs=4k\nsize=64k\nnumjobs=2\n".to_string(),
    };
    let spec = Spec::new(workload, Fixed::default(), Vec::new(), &Plugins::default()).unwrap();
    let rows = run_config(&spec, 0, &Plugins::default()).unwrap();
    let keys: Vec<(Cell, Cell)> = rows.iter().map(|r| (r[2].clone(), r[3].clone())).collect();
    let key = |clone, dir: &str| (Cell::Int(clone), Cell::Text(dir.to_string()));
    assert_eq!(
        keys,
        [
            key(0, "read"),
            key(0, "write"),
            key(1, "read"),
            key(1, "write")
        ]
    );
}

#[test]
fn one_sweep_writes_a_results_file_at_a_time() {
    let spec = job_spec(vec![("scheduler", vec!["none", "bfq"])]).unwrap();
    let path = dir("lock").join("r.csv");
    let first = ResultsFile::open(&path, &spec).unwrap();
    let err = ResultsFile::open(&path, &spec).unwrap_err().to_string();
    assert!(err.contains("another sweep is writing it"), "{err}");
    drop(first);
    ResultsFile::open(&path, &spec).unwrap();
}
