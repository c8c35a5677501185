//! The figures the hooks gather from a synthetic stream of completions, and
//! the reports made from them: fio's normal lines, JSON keys and percentile
//! order, json+ bins, terse field count, logs.

use elevator_core::{DeviceStats, Op, QueueStats};
use elevator_fio::job::{JobFile, JobSpec, RwMode};
use elevator_fio::report::{self, Format};
use elevator_fio::result::{IoDone, JobResult, JobStats, READ, RunResult, WRITE};

const MS: u64 = 1_000_000;

fn spec() -> JobSpec {
    let mut j = JobSpec::new("x", 1);
    j.rw = RwMode::RandRw;
    j.iodepth = 8;
    j.ioengine = "libaio".into();
    j.percentile_list = Some(vec![99.0, 50.0, 1.0, 99.9]);
    j.lat_percentiles = true;
    j.slat_percentiles = true;
    j.write_lat_log = Some("pl".into());
    j.write_bw_log = Some("pb".into());
    j.write_iops_log = Some("pi".into());
    j.log_offset = true;
    j
}

/// 3 s of I/O: a read every 1 ms (100 µs latency) and a write every 2 ms
/// (2 ms latency), submitted in pairs at depth 2, one sync.
fn stats(job: &JobSpec) -> JobStats {
    let mut s = JobStats::new(job);
    s.start(0);
    for i in 0..3000u64 {
        let t = i * MS;
        s.submitted(2, 2);
        s.completed(&IoDone {
            op: Op::Read,
            bytes: 4096,
            ok: true,
            offset: i * 4096,
            issued: t,
            submitted: t + 1_000,
            now: t + 101_000,
            prio: 0,
        });
        if i % 2 == 0 {
            s.completed(&IoDone {
                op: Op::Write,
                bytes: 8192,
                ok: true,
                offset: i * 8192,
                issued: t,
                submitted: t + 1_000,
                now: t + 2 * MS + 1_000,
                prio: 0,
            });
        }
        s.reaped(2);
    }
    s.synced(10 * MS, 11 * MS, true);
    s.finish(3000 * MS + 2 * MS);
    s
}

fn make_run(job: &JobSpec, clones: u32) -> (JobFile, RunResult) {
    let jobs = JobFile {
        path: "t.fio".into(),
        global_options: vec![],
        jobs: vec![job.clone()],
        warnings: vec![],
    };
    let results = (0..clones)
        .map(|c| {
            let s = stats(job);
            JobResult {
                name: job.name.clone(),
                job_index: 0,
                clone: c,
                group: 0,
                ctx: c + 1,
                start: 0,
                end: 3002 * MS,
                dirs: s.dirs,
                extra: s.extra,
                failure: None,
                total_err: 0,
                first_error: 0,
                first_ignored: None,
                steady: None,
                latency_depth: None,
            }
        })
        .collect();
    let mut queue = QueueStats::default();
    queue.disk[1].merges = 5;
    queue.disk[1].ios = 1500;
    let run = RunResult {
        scheduler: "none".into(),
        device: "null".into(),
        jobs: results,
        elapsed: 3002 * MS,
        queue,
        device_stats: DeviceStats {
            busy_ns: 1501 * MS,
            ..DeviceStats::default()
        },
        events: 0,
        ios: 4500,
        cpu: None,
        ended_at_ms: None,
        locks: vec![],
    };
    (jobs, run)
}

#[test]
fn hooks_sample_bucket_and_count_depths() {
    let s = stats(&spec());
    let r = &s.dirs[READ];
    assert_eq!(r.ios, 3000);
    // A sample per 500 ms window closed by a completion: the last write
    // completes just after 3 s, closing the sixth.
    assert_eq!(r.bw.samples, 6);
    assert_eq!(r.iops.samples, 6);
    // About 500 reads (× 4 KiB) and 250 writes per 0.5 s window.
    assert!((990..=1010).contains(&r.iops.min), "{:?}", r.iops);
    assert!((r.iops.mean - 1000.0).abs() < 5.0, "{:?}", r.iops);
    assert!((r.bw.mean - 4000.0).abs() < 20.0, "{:?}", r.bw);
    assert!((s.dirs[WRITE].iops.mean - 500.0).abs() < 5.0);
    // Completion latencies: 100 µs reads in the 250 µs bucket, 2 ms writes
    // in the 4 ms one.
    assert_eq!(s.extra.lat_us[6], 3000);
    assert_eq!(s.extra.lat_ms[1], 1500);
    assert_eq!(s.extra.depth[1], 6000);
    assert_eq!(s.extra.submit[1], 3000);
    assert_eq!(s.extra.complete[1], 3000);
    assert_eq!(s.extra.sync.count(), 1);
    assert_eq!(r.slat_hist.as_ref().map(|h| h.count()), Some(3000));
    assert_eq!(s.extra.logs.lat.len(), 4500);
    assert_eq!(s.extra.logs.iops.len(), 4500);
}

#[test]
fn ramp_drops_what_came_before() {
    let mut s = stats(&spec());
    s.start(5000 * MS);
    assert_eq!(s.dirs[READ].ios, 0);
    assert_eq!(s.extra.lat_us.iter().sum::<u64>(), 0);
    assert!(s.dirs[READ].lat_hist.is_some());
}

#[test]
fn averaged_logs_per_window() {
    let mut job = spec();
    job.log_avg_msec = 1000;
    let s = stats(&job);
    let bw: Vec<_> = s.extra.logs.bw.iter().filter(|e| e.ddir == 0).collect();
    assert_eq!(bw.len(), 3, "windows closed at 1, 2 and 3 s");
    assert_eq!(bw[0].time_ms, 1000);
    assert!((3990..=4010).contains(&bw[0].value), "{:?}", bw[0]);
    // Latencies: three closed windows, and the last, partial one at the end
    // (the stream reports the write that closes the third window before the
    // last read).
    let lat: Vec<_> = s.extra.logs.clat.iter().filter(|e| e.ddir == 0).collect();
    let times: Vec<u64> = lat.iter().map(|e| e.time_ms).collect();
    assert_eq!(times, [1000, 2000, 3000, 3002]);
    assert_eq!(lat[0].value, 100_000);
}

#[test]
fn normal_output_lines() {
    let (jobs, run) = make_run(&spec(), 1);
    let out = report::render(Format::Normal, &jobs, &run, "nullb0");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "x: (g=0): rw=randrw, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, \
         ioengine=libaio, iodepth=8"
    );
    assert_eq!(lines[1], "fio-3.33");
    assert_eq!(lines[2], "Starting 1 process");
    assert!(
        lines[3].starts_with("x: (groupid=0, jobs=1): err= 0: pid=1: "),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].starts_with("  read: IOPS=999, BW=3997KiB/s (4093kB/s)(11.7MiB/3002msec)"),
        "{}",
        lines[4]
    );
    let has = |prefix: &str| lines.iter().any(|l| l.starts_with(prefix));
    for p in [
        "    slat (nsec): min=1000, max=1000, avg=1000.00, stdev= 0.00",
        "    clat (usec): min=100, max=100, avg=100.00, stdev= 0.00",
        "     lat (usec): min=101, max=101,",
        "    clat percentiles (usec):",
        "     |  1.0th=[  101], 50.0th=[  101], 99.0th=[  101], 99.9th=[  101]",
        "   bw (  KiB/s): min= 3",
        "   iops        : min=  99",
        "  write: IOPS=499, BW=3997KiB/s",
        "  lat (usec)   : 250=66.67%",
        "  lat (msec)   : 4=33.33%",
        "  fsync/fdatasync/sync_file_range:",
        "    sync (usec): min=1000, max=1000,",
        "  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0",
        "  IO depths    : 1=0.0%, 2=100.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%",
        "     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%",
        "     complete  : 0=0.0%, 4=100.0%,",
        "     issued rwts: total=3000,1500,0,1 short=0,0,0,0 dropped=0,0,0,0",
        "     latency   : target=0, window=0, percentile=100.00%, depth=8",
        "Run status group 0 (all jobs):",
        "   READ: bw=3997KiB/s (4093kB/s), 3997KiB/s-3997KiB/s (4093kB/s-4093kB/s), io=11.7MiB (12.3MB), run=3002-3002msec",
        "Disk stats (read/write):",
        "  nullb0: ios=0/1500, merge=0/5, ticks=0/0, in_queue=0, util=50.00%",
    ] {
        assert!(has(p), "no line starting {p:?} in\n{out}");
    }
    let bw = lines.iter().find(|l| l.starts_with("   bw (")).unwrap();
    assert!(
        bw.contains(", per=100.00%, avg=") && bw.ends_with(", samples=6"),
        "{bw}"
    );
    // fio's order: the job stanza, a blank line, the groups, a blank line,
    // disk stats.
    let pos = |p: &str| lines.iter().position(|l| l.starts_with(p)).unwrap();
    assert!(pos("  read:") < pos("  write:"));
    assert!(pos("  lat (usec)") < pos("  cpu"));
    assert!(pos("     latency") < pos("Run status"));
    assert_eq!(lines[pos("Run status") - 1], "");
}

fn json(format: Format, jobs: &JobFile, run: &RunResult) -> serde_json::Value {
    serde_json::from_str(&report::render(format, jobs, run, "nullb0")).unwrap()
}

#[test]
fn json_keys_and_percentile_order() {
    let (jobs, run) = make_run(&spec(), 1);
    let v = json(Format::Json, &jobs, &run);
    for k in [
        "fio version",
        "timestamp",
        "timestamp_ms",
        "time",
        "jobs",
        "disk_util",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }
    let job = &v["jobs"][0];
    for k in [
        "jobname",
        "groupid",
        "error",
        "eta",
        "elapsed",
        "job options",
        "read",
        "write",
        "trim",
        "sync",
        "job_runtime",
        "usr_cpu",
        "sys_cpu",
        "ctx",
        "majf",
        "minf",
        "iodepth_level",
        "iodepth_submit",
        "iodepth_complete",
        "latency_ns",
        "latency_us",
        "latency_ms",
        "latency_depth",
        "latency_target",
        "latency_percentile",
        "latency_window",
    ] {
        assert!(job.get(k).is_some(), "job key {k}");
    }
    let r = &job["read"];
    for k in [
        "io_bytes",
        "io_kbytes",
        "bw_bytes",
        "bw",
        "iops",
        "runtime",
        "total_ios",
        "short_ios",
        "drop_ios",
        "slat_ns",
        "clat_ns",
        "lat_ns",
        "bw_min",
        "bw_max",
        "bw_agg",
        "bw_mean",
        "bw_dev",
        "bw_samples",
        "iops_min",
        "iops_max",
        "iops_mean",
        "iops_stddev",
        "iops_samples",
    ] {
        assert!(r.get(k).is_some(), "read key {k}");
    }
    let keys: Vec<&String> = r["clat_ns"]["percentile"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["1.000000", "50.000000", "99.000000", "99.900000"]);
    assert!(r["clat_ns"].get("bins").is_none());
    assert_eq!(r["bw_samples"], 6);
    assert_eq!(job["iodepth_level"]["2"], 100.0);
    assert_eq!(job["sync"]["total_ios"], 1);
    assert_eq!(v["disk_util"][0]["write_merges"], 5);
    assert_eq!(v["fio version"], "fio-3.33");
}

#[test]
fn json_plus_bins_sum_to_ios() {
    let (jobs, run) = make_run(&spec(), 2);
    let v = json(Format::JsonPlus, &jobs, &run);
    for dir in ["read", "write"] {
        let d = &v["jobs"][0][dir];
        for lat in ["clat_ns", "lat_ns", "slat_ns"] {
            let bins = d[lat]["bins"].as_object().unwrap();
            let sum: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
            assert_eq!(sum, d["total_ios"].as_u64().unwrap(), "{dir} {lat}");
        }
    }
}

#[test]
fn json_plus_read_by_fio_jsonplus_clat2csv() {
    elevator_testkit::needs!("python3");
    let script = "/usr/bin/fio_jsonplus_clat2csv";
    if !std::path::Path::new(script).exists() {
        return;
    }
    let (jobs, run) = make_run(&spec(), 1);
    let dir = std::env::temp_dir().join(format!("elevator-jsonplus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("out.json");
    std::fs::write(
        &src,
        report::render(Format::JsonPlus, &jobs, &run, "nullb0"),
    )
    .unwrap();
    // Convert, then check the CSV against the bins (the script's own
    // --validate).
    for validate in [false, true] {
        let mut cmd = std::process::Command::new("python3");
        cmd.arg(script);
        if validate {
            cmd.arg("--validate");
        }
        let Ok(status) = cmd.arg(&src).arg(dir.join("out.csv")).status() else {
            return;
        };
        assert!(status.success(), "fio_jsonplus_clat2csv failed");
        assert!(dir.join("out_job0.csv").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unified_mixed_has_only_mixed() {
    let mut job = spec();
    job.unified_rw_reporting = elevator_fio::job::UnifiedRw::Mixed;
    let (jobs, run) = make_run(&job, 1);
    let v = json(Format::Json, &jobs, &run);
    let j = &v["jobs"][0];
    assert!(j.get("mixed").is_some() && j.get("read").is_none());
    assert_eq!(j["mixed"]["total_ios"], 4500);
    let out = report::render(Format::Normal, &jobs, &run, "nullb0");
    assert!(out.contains("\n  mixed: IOPS="));
    assert!(out.contains("\n  MIXED: bw="));
}

#[test]
fn terse_has_fios_field_count() {
    let (jobs, run) = make_run(&spec(), 1);
    let out = report::render(Format::Terse, &jobs, &run, "nullb0");
    // fio 3.33 `--output-format=terse` for a job on one disk: 130 fields
    // (121 without a disk, as measured on the null engine).
    assert_eq!(report::terse::JOB_FIELDS + report::terse::DISK_FIELDS, 130);
    let fields: Vec<&str> = out.trim_end().split(';').collect();
    assert_eq!(fields.len(), 130, "{out}");
    assert_eq!(&fields[..5], ["3", "fio-3.33", "x", "0", "0"]);
    assert_eq!(fields[121], "nullb0");
}

#[test]
fn log_files_as_fio_names_them() {
    let (jobs, run) = make_run(&spec(), 2);
    let files = report::logs::files(&jobs, &run);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    for n in [
        "pl_lat.1.log",
        "pl_clat.2.log",
        "pl_slat.1.log",
        "pb_bw.1.log",
        "pi_iops.2.log",
    ] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    let clat = &files.iter().find(|(n, _)| n == "pl_clat.1.log").unwrap().1;
    assert_eq!(clat.lines().next(), Some("0, 100000, 0, 4096, 0, 0"));
    let mut job = spec();
    job.per_job_logs = false;
    job.log_offset = false;
    let (jobs, run) = make_run(&job, 2);
    let files = report::logs::files(&jobs, &run);
    let (_, bw) = files.iter().find(|(n, _)| n == "pb_bw.log").unwrap();
    assert_eq!(bw.lines().count(), 9000);
    assert_eq!(bw.lines().next(), Some("0, 40960, 0, 4096, 0"));
}

#[test]
fn format_names() {
    for f in [
        Format::Normal,
        Format::Json,
        Format::JsonPlus,
        Format::Terse,
    ] {
        assert_eq!(f.name().parse::<Format>(), Ok(f));
    }
    assert!("xml".parse::<Format>().is_err());
}

/// The JSON text is written a job at a time, yet it is exactly the text of
/// the whole document, for one job, several, and json+.
#[test]
fn json_text_written_job_by_job_is_the_whole_document() {
    for clones in [1, 3] {
        let (jobs, run) = make_run(&spec(), clones);
        for (format, plus) in [(Format::Json, false), (Format::JsonPlus, true)] {
            let whole = report::json::render_with(&jobs, &run, "nullb0", plus);
            let mut expected = serde_json::to_string_pretty(&whole).unwrap();
            expected.push('\n');
            assert_eq!(report::render(format, &jobs, &run, "nullb0"), expected);
        }
    }
}

/// A simulation has no date: its job line says `simulated` where fio's shows
/// the date, and its JSON gives 0, 0 and "simulated" in fio's date keys (of
/// fio's types). A run on the real clock shows when it ended, as fio does.
#[test]
fn simulated_runs_say_simulated_and_real_runs_show_their_date() {
    let (jobs, mut run) = make_run(&spec(), 1);
    let out = report::render(Format::Normal, &jobs, &run, "nullb0");
    let line = out.lines().nth(3).unwrap();
    assert_eq!(line, "x: (groupid=0, jobs=1): err= 0: pid=1: simulated");
    for format in [Format::Json, Format::JsonPlus] {
        let v = json(format, &jobs, &run);
        assert_eq!(v["timestamp"], 0);
        assert_eq!(v["timestamp_ms"], 0);
        assert_eq!(v["time"], "simulated");
    }
    // Wed Nov 25 13:25:51 2026 UTC, and 250 ms.
    run.ended_at_ms = Some(1_795_613_151_250);
    if std::env::var_os("SOURCE_DATE_EPOCH").is_none() {
        let out = report::render(Format::Normal, &jobs, &run, "nullb0");
        let line = out.lines().nth(3).unwrap();
        assert_eq!(
            line,
            "x: (groupid=0, jobs=1): err= 0: pid=1: Wed Nov 25 13:25:51 2026"
        );
        let v = json(Format::Json, &jobs, &run);
        assert_eq!(v["timestamp"], 1_795_613_151u64);
        assert_eq!(v["timestamp_ms"], 1_795_613_151_250u64);
        assert_eq!(v["time"], "Wed Nov 25 13:25:51 2026");
    }
}
