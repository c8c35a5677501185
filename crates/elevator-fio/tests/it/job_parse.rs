//! fio job files: `JobFile::parse` on good and bad input.

use elevator_fio::job::{
    Amount, Distribution, FileService, JobError, JobFile, JobSpec, ParseEnv, RandomGenerator,
    RateProcess, RwMode, RwSequencer, UnifiedRw, Verdict, Zone, ZoneMode, fio_options,
};

const FILE: &str = "t.fio";

fn parse(text: &str) -> JobFile {
    JobFile::parse(text, FILE).unwrap_or_else(|e| panic!("{e}\n--- input:\n{text}"))
}

/// The single job of `[j]` followed by `body`.
fn job(body: &str) -> JobSpec {
    let mut file = parse(&format!("[j]\n{body}\n"));
    assert_eq!(file.jobs.len(), 1);
    file.jobs.remove(0)
}

fn error(text: &str) -> JobError {
    match JobFile::parse(text, FILE) {
        Ok(file) => panic!("accepted:\n{text}\nas {file:?}"),
        Err(e) => e,
    }
}

/// `[j]` then `line` (line 2) must fail about `option`, with `needle` in
/// the message; checks the Display format too.
fn rejects(line: &str, option: &str, needle: &str) -> JobError {
    let e = error(&format!("[j]\n{line}\n"));
    assert_eq!(e.file, FILE, "{e}");
    assert_eq!(e.line, 2, "{e}");
    assert_eq!(e.option.as_deref(), Some(option), "{e}");
    assert!(e.message.contains(needle), "'{needle}' not in: {e}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{FILE}:2: option '{option}': ")),
        "{shown}"
    );
    e
}

/// `rejects` for each `(line, option, needle)`.
fn rejects_all(cases: &[(&str, &str, &str)]) {
    for &(line, option, needle) in cases {
        rejects(line, option, needle);
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const SEC: u64 = 1_000_000_000;

#[test]
fn defaults_are_fios() {
    let j = job("");
    assert_eq!(j, JobSpec::new("j", 1));
    assert_eq!(j.rw, RwMode::Read);
    assert_eq!(j.bs, [4096; 3]);
    assert!(j.options.is_empty());
}

#[test]
fn rw_modes() {
    for (text, mode) in [
        ("read", RwMode::Read),
        ("write", RwMode::Write),
        ("randread", RwMode::RandRead),
        ("randwrite", RwMode::RandWrite),
        ("rw", RwMode::ReadWrite),
        ("readwrite", RwMode::ReadWrite),
        ("randrw", RwMode::RandRw),
        ("trim", RwMode::Trim),
        ("randtrim", RwMode::RandTrim),
        ("trimwrite", RwMode::TrimWrite),
        ("randtrimwrite", RwMode::RandTrimWrite),
    ] {
        assert_eq!(job(&format!("rw={text}")).rw, mode, "{text}");
        assert_eq!(job(&format!("readwrite={text}")).rw, mode, "{text}");
    }
    rejects_all(&[
        ("rw=randread:x", "rw", "offset modifier after ':'"),
        ("rw=random", "rw", "unknown mode 'random'"),
        ("readwrite=writes", "readwrite", "expected read, write"),
        ("rw=READ", "rw", "unknown mode"),
        ("rw", "rw", "needs a value"),
        ("rw=", "rw", "needs a value"),
    ]);
}

#[test]
fn rwmixread_and_rwmixwrite() {
    for (text, rwmixread) in [
        ("rw=randrw\nrwmixread=70", 70),
        ("rwmixread=0", 0),
        ("rwmixread=100", 100),
        ("rwmixwrite=30", 70),
        ("rwmixwrite=100", 0),
        // The last one wins, whichever it is.
        ("rwmixwrite=30\nrwmixread=10", 10),
        ("rwmixread=10\nrwmixwrite=30", 70),
        // A mix with a non-mixed mode is allowed (and ignored), as in fio.
        ("rw=read\nrwmixread=10", 10),
    ] {
        assert_eq!(job(text).rwmixread, rwmixread, "{text}");
    }
    rejects_all(&[
        ("rwmixread=101", "rwmixread", "between 0 and 100"),
        ("rwmixwrite=200", "rwmixwrite", "between 0 and 100"),
        ("rwmixread=-1", "rwmixread", "negative"),
        ("rwmixread=50%", "rwmixread", "not a whole number"),
        ("rwmixread=12.5", "rwmixread", "decimals"),
    ]);
}

#[test]
fn block_sizes() {
    for (text, bs) in [
        ("bs=4k", [4096; 3]),
        ("blocksize=64KB", [64 * KIB; 3]),
        ("bs=8k,32k,", [8 * KIB, 32 * KIB, 4096]),
        ("bs=,8k,", [4096, 8 * KIB, 4096]),
        ("bs=4k,8k,16k", [4 * KIB, 8 * KIB, 16 * KIB]),
        ("bs=0x1000", [4096; 3]),
        ("bs=512", [512; 3]),
        ("bs=8k,64k", [8 * KIB, 64 * KIB, 64 * KIB]),
        ("bs=8k , 64k", [8 * KIB, 64 * KIB, 64 * KIB]),
        ("bs=,8k", [4096, 8 * KIB, 8 * KIB]),
        ("bs=16k,", [16 * KIB, 4096, 4096]),
        ("bs=1m\nbs=,8k", [MIB, 8 * KIB, 8 * KIB]),
    ] {
        assert_eq!(job(text).bs, bs, "{text}");
    }
    rejects_all(&[
        ("bs=1000", "bs", "multiple of 512"),
        ("bs=0", "bs", "multiple of 512"),
        ("bs=4k,100", "bs", "multiple of 512"),
        ("bs=4k,8k,16k,32k", "bs", "at most three"),
        ("bs=,", "bs", "sets nothing"),
        ("blocksize=4KiB", "blocksize", "multiple of 512"),
        ("blocksize=4x", "blocksize", "unknown size suffix"),
        ("bs=1.5k", "bs", "decimals"),
        ("bs=-4k", "bs", "negative"),
        ("bs=0xzz", "bs", "hexadecimal"),
        ("bs=4k-16k", "bs", "bsrange"),
        ("bs=4k:16k", "bs", "bsrange"),
    ]);
}

#[test]
fn size_suffixes_follow_kb_base() {
    for (text, bytes) in [
        ("4096", 4096),
        ("4k", 4 * KIB),
        ("4K", 4 * KIB),
        // fio's default kb_base=1024 reads k as 1024 and ki as 1000.
        ("4KiB", 4000),
        ("4KB", 4 * KIB),
        ("4kb", 4 * KIB),
        ("1m", MIB),
        ("1MiB", 1_000_000),
        ("1p", 1 << 50),
        ("0x100000", MIB),
        ("2g", 2 << 30),
        ("2GB", 2 << 30),
        ("1t", 1 << 40),
    ] {
        assert_eq!(
            job(&format!("size={text}")).size,
            Some(Amount::Bytes(bytes)),
            "{text}"
        );
    }
}

#[test]
fn size_option() {
    for (text, size) in [
        ("size=16m", Some(Amount::Bytes(16 * MIB))),
        ("size=50%", Some(Amount::Percent(50))),
        ("size=100%", Some(Amount::Percent(100))),
        ("size=1%", Some(Amount::Percent(1))),
        ("size=1000", Some(Amount::Bytes(1000))),
    ] {
        assert_eq!(job(text).size, size, "{text}");
    }
    rejects_all(&[
        ("size=0", "size", "greater than 0"),
        ("size=0%", "size", "between 1 and 100"),
        ("size=101%", "size", "between 1 and 100"),
        ("size=-5%", "size", "negative"),
        ("size=1.5g", "size", "decimals"),
        ("size=4 k", "size", "a space between"),
        ("size=16777216t", "size", "too large"),
        ("size=99999999999999999999", "size", "too large"),
        ("size=%", "size", "percentage"),
    ]);
}

#[test]
fn offset_option() {
    for (text, offset) in [
        ("offset=1m", Amount::Bytes(MIB)),
        ("offset=0", Amount::Bytes(0)),
        ("offset=25%", Amount::Percent(25)),
        ("offset=0%", Amount::Bytes(0)),
        ("offset=100%", Amount::Percent(100)),
    ] {
        assert_eq!(job(text).offset, offset, "{text}");
    }
    rejects_all(&[
        ("offset=101%", "offset", "between 0 and 100"),
        ("offset=-1m", "offset", "negative"),
        ("offset=1z", "offset", "unknown size suffix"),
    ]);
}

#[test]
fn iodepth_numjobs_nrfiles_thinktime_blocks() {
    assert_eq!(job("iodepth=32").iodepth, 32);
    assert_eq!(job("iodepth=65536").iodepth, 65536);
    assert_eq!(job("numjobs=4096").numjobs, 4096);
    assert_eq!(job("nrfiles=8").nrfiles, 8);
    assert_eq!(job("thinktime_blocks=16").thinktime_blocks, 16);
    rejects_all(&[
        ("iodepth=0", "iodepth", "between 1 and 65536, got 0"),
        ("iodepth=65537", "iodepth", "between 1 and 65536"),
        ("iodepth=4k", "iodepth", "not a whole number"),
        ("numjobs=0", "numjobs", "between 1 and 4096"),
        ("numjobs=4097", "numjobs", "between 1 and 4096"),
        ("nrfiles=0", "nrfiles", "between 1 and 65536"),
        ("nrfiles=100000", "nrfiles", "between 1 and 65536"),
        ("thinktime_blocks=0", "thinktime_blocks", "between 1 and"),
        (
            "thinktime_blocks=99999999999",
            "thinktime_blocks",
            "between 1 and",
        ),
        ("iodepth=99999999999999999999999", "iodepth", "too large"),
        ("iodepth=abc", "iodepth", "not a number"),
        ("iodepth", "iodepth", "needs a value: write iodepth=VALUE"),
    ]);
}

#[test]
fn filesize_option() {
    assert_eq!(job("filesize=16m").filesize, Some(16 * MIB));
    assert_eq!(job("filesize=1000").filesize, Some(1000));
    // A range: each file's size drawn in it (the layout draws).
    let range = job("filesize=1m-4m");
    assert_eq!(
        (range.filesize, range.filesize_max),
        (Some(MIB), Some(4 * MIB))
    );
    rejects_all(&[
        ("filesize=0", "filesize", "greater than 0"),
        ("filesize=10%", "filesize", "unknown size suffix"),
    ]);
}

#[test]
fn thinktime_is_microseconds_by_default() {
    for (text, thinktime) in [
        ("thinktime=250", 250_000),
        ("thinktime=0", 0),
        ("thinktime=5ms", 5_000_000),
        ("thinktime=5MSEC", 5_000_000),
        ("thinktime=100ns", 100),
        ("thinktime=7usec", 7_000),
        ("thinktime=1s", SEC),
    ] {
        assert_eq!(job(text).thinktime, thinktime, "{text}");
    }
    rejects_all(&[
        ("thinktime=1.5ms", "thinktime", "decimals"),
        ("thinktime=5 ms", "thinktime", "a space between"),
        ("thinktime=5y", "thinktime", "unknown time unit"),
        ("thinktime=-1", "thinktime", "negative"),
        ("thinktime=18446744073709551615ms", "thinktime", "too large"),
    ]);
}

#[test]
fn runtime_is_seconds_by_default() {
    for (text, runtime) in [
        ("runtime=30", Some(30 * SEC)),
        ("runtime=30s", Some(30 * SEC)),
        ("runtime=2m", Some(120 * SEC)),
        ("runtime=2min", Some(120 * SEC)),
        ("runtime=1h", Some(3600 * SEC)),
        ("runtime=1HOUR", Some(3600 * SEC)),
        ("runtime=500ms", Some(SEC / 2)),
        ("runtime=1sec", Some(SEC)),
        // fio's runtime=0 is "no limit".
        ("runtime=10\nruntime=0", None),
    ] {
        assert_eq!(job(text).runtime, runtime, "{text}");
    }
    rejects_all(&[
        ("runtime=18446744074", "runtime", "too large"),
        ("runtime=5y", "runtime", "unknown time unit"),
        ("timeout=5y", "timeout", "unknown time unit"),
        ("runtime=", "runtime", "needs a value"),
    ]);
}

#[test]
fn switches() {
    type Field = fn(&JobSpec) -> bool;
    // fio's "empty or boolean" options: bare, 0, or any other number for on.
    let bare: [(&str, Field); 6] = [
        ("time_based", |j| j.time_based),
        ("group_reporting", |j| j.group_reporting),
        ("stonewall", |j| j.stonewall),
        ("wait_for_previous", |j| j.stonewall),
        ("new_group", |j| j.new_group),
        ("thread", |j| j.thread),
    ];
    for (name, field) in bare {
        let runtime = if name == "time_based" {
            "runtime=1\n"
        } else {
            ""
        };
        assert!(field(&job(&format!("{runtime}{name}"))), "bare {name}");
        assert!(field(&job(&format!("{runtime}{name}=1"))), "{name}=1");
        assert!(field(&job(&format!("{runtime}{name}=2"))), "{name}=2");
        assert!(field(&job(&format!("{runtime}{name} = 1"))), "{name} = 1");
        assert!(!field(&job(&format!("{runtime}{name}=0"))), "{name}=0");
        for bad in ["true", "yes", "-1"] {
            rejects(&format!("{name}={bad}"), name, "expected 0 or 1");
        }
    }
    // fio's bool options need 0 or 1: no bare form, no words.
    let bools: [(&str, Field); 4] = [
        ("direct", |j| j.direct),
        ("randrepeat", |j| j.randrepeat),
        ("end_fsync", |j| j.end_fsync),
        ("verify_fatal", |j| j.verify_fatal),
    ];
    for (name, field) in bools {
        assert!(field(&job(&format!("{name}=1"))), "{name}=1");
        assert!(!field(&job(&format!("{name}=0"))), "{name}=0");
        rejects(name, name, "needs a value");
        for bad in ["true", "false", "2", "on", "-1"] {
            rejects(&format!("{name}={bad}"), name, "expected 0 or 1");
        }
    }
    assert!(job("buffered=0").direct);
    assert!(!job("buffered=1").direct);
    assert!(!job("norandommap").randommap);
    assert!(job("norandommap=0").randommap);
    assert!(!JobSpec::new("j", 1).direct);
    assert!(JobSpec::new("j", 1).randrepeat);
}

#[test]
fn bare_switch_is_recorded_with_an_empty_value() {
    let j = job("runtime=5\ntime_based\ndirect=1\ngroup_reporting");
    let expected = [
        ("runtime", "5"),
        ("time_based", ""),
        ("direct", "1"),
        ("group_reporting", ""),
    ];
    assert_eq!(
        j.options,
        expected.map(|(n, v)| (n.to_string(), v.to_string()))
    );
}

#[test]
fn ioengine_option() {
    for (text, ioengine) in [
        ("ioengine=libaio", "libaio"),
        ("ioengine=io_uring", "io_uring"),
        ("", "psync"),
    ] {
        assert_eq!(job(text).ioengine, ioengine, "{text}");
    }
    rejects_all(&[
        ("ioengine=", "ioengine", "needs a value"),
        ("ioengine", "ioengine", "needs a value"),
    ]);
}

#[test]
fn filename_option() {
    assert_eq!(
        job("filename=/dev/sdb").filename.as_deref(),
        Some("/dev/sdb")
    );
    assert_eq!(
        job("filename=/tmp/data file").filename.as_deref(),
        Some("/tmp/data file")
    );
    assert_eq!(job("").filename, None);
    assert_eq!(job("filename=a\\:b").filename.as_deref(), Some("a:b"));
    assert_eq!(
        job("filename=/dev/disk/by-path/pci-0000\\:00\\:1f.2")
            .filename
            .as_deref(),
        Some("/dev/disk/by-path/pci-0000:00:1f.2")
    );
    // A ':'-separated list is several files (nrfiles their count), as in
    // fio; devices cannot be listed: elevator runs a job on one.
    let two = job("filename=a:b\\:c");
    assert_eq!(two.filenames, ["a", "b:c"]);
    assert_eq!((two.filename.as_deref(), two.nrfiles), (Some("a"), 2));
    rejects_all(&[
        (
            "filename=/dev/sdb:/dev/sdc",
            "filename",
            "cannot name devices",
        ),
        ("filename=:a", "filename", "no file name"),
        ("filename=", "filename", "needs a value"),
    ]);
}

#[test]
fn file_service_type_option() {
    for (text, service) in [
        ("", (FileService::RoundRobin, 1)),
        ("file_service_type=roundrobin", (FileService::RoundRobin, 1)),
        ("file_service_type=sequential", (FileService::Sequential, 1)),
        ("file_service_type=random", (FileService::Random, 1)),
        ("file_service_type=random:8", (FileService::Random, 8)),
        (
            "file_service_type=roundrobin:4",
            (FileService::RoundRobin, 4),
        ),
    ] {
        assert_eq!(job(text).file_service, service, "{text}");
    }
    for (text, service, param) in [
        ("file_service_type=zipf", FileService::Zipf, 1.1),
        ("file_service_type=zipf:1.2", FileService::Zipf, 1.2),
        ("file_service_type=pareto", FileService::Pareto, 0.2),
        ("file_service_type=pareto:0.3", FileService::Pareto, 0.3),
        ("file_service_type=normal:5", FileService::Normal, 5.0),
        ("file_service_type=gauss", FileService::Normal, 0.0),
    ] {
        let j = job(text);
        assert_eq!(j.file_service, (service, 1), "{text}");
        assert_eq!(j.file_service_param.0, param, "{text}");
    }
    rejects_all(&[
        (
            "file_service_type=zipf:1",
            "file_service_type",
            "zipf theta must be above 0 and not 1.0",
        ),
        (
            "file_service_type=pareto:2",
            "file_service_type",
            "pareto power must be between 0 and 1",
        ),
        (
            "file_service_type=random:0",
            "file_service_type",
            "count after ':'",
        ),
        (
            "file_service_type=random:",
            "file_service_type",
            "count after ':'",
        ),
        (
            "file_service_type=Random",
            "file_service_type",
            "expected roundrobin",
        ),
    ]);
}

#[test]
fn randseed_option() {
    assert_eq!(job("randseed=42").randseed, Some(42));
    assert_eq!(
        job("randseed=18446744073709551615").randseed,
        Some(u64::MAX)
    );
    assert_eq!(job("").randseed, None);
    rejects_all(&[
        ("randseed=18446744073709551616", "randseed", "too large"),
        ("randseed=-1", "randseed", "negative"),
        ("randseed=0xg", "randseed", "hexadecimal"),
        ("randseed=12k", "randseed", "not a whole number"),
    ]);
}

#[test]
fn name_and_description() {
    // fio drops everything from the first ';' or '#', even in a description.
    let j = job("name=renamed\ndescription=Just some words; with = signs");
    assert_eq!(j.name, "renamed");
    assert_eq!(
        j.options[1],
        ("description".into(), "Just some words".into())
    );
    rejects("name=", "name", "needs a value");
    // name= in [global] is fio's; each job keeps its section's name.
    let file = parse("[global]\nname=x\n[j]\n");
    assert_eq!(file.jobs[0].name, "j");
    assert_eq!(file.global_options, [("name".to_string(), "x".to_string())]);
}

#[test]
fn options_with_no_effect_here_are_accepted_with_a_note() {
    for (line, name, needle) in [
        ("gtod_reduce=1", "gtod_reduce", "clock reads"),
        ("unlink=1", "unlink", "no file to delete"),
        ("io_submit_mode=offload", "io_submit_mode", "not the I/O"),
    ] {
        let j = job(line);
        assert!(
            j.notes
                .iter()
                .any(|(n, why)| n == name && why.contains(needle)),
            "{line}: {:?}",
            j.notes
        );
    }
    // fio takes `threads` for `thread`.
    assert!(job("threads=1").thread);
}

#[test]
fn fio_options_elevator_does_not_implement_are_refused_by_name() {
    for (line, needle) in [
        ("exec_prerun=ls", "does not run commands"),
        ("exec_postrun=ls", "does not run commands"),
        // cmdprio_percentage is implemented (issue 29): an engine option
        // still refused stands in for it.
        ("nowait=1", "its own queue"),
        ("replay_scale=2", "elevator replay"),
        ("merge_blktrace_file=m", "elevator replay"),
        ("zonecapacity=1m", "zoned block devices"),
        ("stats=0", "reporting"),
        (
            "file_append=1",
            "not implement it (yet) beyond fio's default (0)",
        ),
        ("verify=pattern_no_hdr", "always carry a header"),
        ("zonemode=zbd", "not implemented by elevator"),
        ("hipri", "io_uring"),
    ] {
        let name = line.split('=').next().unwrap_or(line);
        rejects(line, name, needle);
    }
}

#[test]
fn iolog_options_are_read() {
    use elevator_fio::job::ReplaySkip;
    let j = job(
        "write_iolog=out.log\nread_iolog=in.log\nreplay_no_stall=1\n\
                 replay_time_scale=200\nreplay_skip=write,sync\nreplay_redirect=/dev/sdb",
    );
    assert_eq!(j.write_iolog.as_deref(), Some("out.log"));
    assert_eq!(j.read_iolog.as_deref(), Some("in.log"));
    assert!(j.replay_no_stall);
    assert_eq!(j.replay_time_scale, 200);
    assert_eq!(j.replay_skip, ReplaySkip::WRITE | ReplaySkip::SYNC);
    assert!(
        j.notes
            .iter()
            .any(|(n, why)| n == "replay_redirect" && why.contains("job's device")),
        "{:?}",
        j.notes
    );
    let d = job("rw=read");
    assert_eq!((d.write_iolog, d.read_iolog), (None, None));
    assert_eq!(
        (d.replay_no_stall, d.replay_time_scale, d.replay_skip),
        (false, 100, 0)
    );
    rejects(
        "replay_skip=read,frob",
        "replay_skip",
        "'frob': expected read, write",
    );
    rejects("replay_time_scale=0", "replay_time_scale", "");
    rejects("write_iolog", "write_iolog", "needs a value");
}

#[test]
fn unknown_options_are_errors_with_a_suggestion() {
    let e = rejects("iodepht=4", "iodepht", "unknown option");
    assert!(e.message.contains("did you mean 'iodepth'"), "{e}");
    let e = rejects("qqqqqqqq=1", "qqqqqqqq", "fio has no option");
    assert!(!e.message.contains("did you mean"), "{e}");
    rejects("loop=2", "loop", "did you mean 'loops'");
}

#[test]
fn options_with_no_effect_are_accepted_with_a_note() {
    let j = job("invalidate=1\nthread\nunique_filename=0\nstats=1\nioengine=libaio");
    let names: Vec<&str> = j.notes.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["invalidate", "unique_filename", "stats", "ioengine"]
    );
    assert!(j.notes[0].1.contains("page cache"), "{:?}", j.notes);
    assert!(
        j.notes[3]
            .1
            .starts_with("elevator runs every block I/O engine through its own queue")
    );
    // Notes from [global] reach the jobs; one note per option.
    let file = parse("[global]\ninvalidate=0\ninvalidate=1\n[a]\n[b]\n");
    assert_eq!(file.jobs[1].notes.len(), 1);
}

#[test]
fn global_options_reach_later_jobs_only() {
    let file = parse(
        "[early]\n\
         [global]\nbs=8k\niodepth=4\n\
         [middle]\niodepth=2\n\
         [global]\nbs=16k\n\
         [late]\n",
    );
    let names: Vec<&str> = file.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["early", "middle", "late"]);
    let [early, middle, late] = &file.jobs[..] else {
        panic!("three jobs")
    };
    assert_eq!((early.bs, early.iodepth, early.line), ([4096; 3], 1, 1));
    assert_eq!(
        (middle.bs, middle.iodepth, middle.line),
        ([8 * KIB; 3], 2, 5)
    );
    assert_eq!((late.bs, late.iodepth, late.line), ([16 * KIB; 3], 4, 9));
    // Each job records only its own options; the globals go to the file.
    assert!(early.options.is_empty() && late.options.is_empty());
    assert_eq!(middle.options, [("iodepth".to_string(), "2".to_string())]);
    let globals: Vec<(&str, &str)> = file
        .global_options
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    // Each option once, where it was last set, with its last value.
    assert_eq!(globals, [("iodepth", "4"), ("bs", "16k")]);
}

#[test]
fn job_overrides_global_and_repeated_options_take_the_last() {
    let file = parse("[global]\nrw=randread\nbs=4k\nbs=8k\n[a]\nrw=write\nrw=randwrite\n[b]\n");
    assert_eq!(file.jobs[0].rw, RwMode::RandWrite);
    assert_eq!(file.jobs[0].bs, [8 * KIB; 3]);
    assert_eq!(file.jobs[1].rw, RwMode::RandRead);
    assert_eq!(
        file.jobs[0].options,
        [("rw".to_string(), "randwrite".to_string())]
    );
}

#[test]
fn duplicate_job_names_and_names_as_written() {
    let file = parse("[same]\n[same]\n[  Mixed Case job-1 ]\n[Global]\n");
    let names: Vec<&str> = file.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["same", "same", "Mixed Case job-1", "Global"]);
}

#[test]
fn comments_blank_lines_and_whitespace() {
    let file = parse(
        "\u{feff}; leading comment\n\
         # another\n\
         \n\
         \t[global]  \n\
         \t  ; indented comment\n\
           bs = 8k  \n\
         iodepth\t=\t16\n\
         \n\
         [job one]\r\n\
         rw =randwrite\r\n\
           # size=1g is commented out\n",
    );
    let j = &file.jobs[0];
    assert_eq!((j.name.as_str(), j.line), ("job one", 9));
    assert_eq!(
        (j.bs, j.iodepth, j.rw, j.size),
        ([8 * KIB; 3], 16, RwMode::RandWrite, None)
    );
    assert_eq!(file.global_options[0], ("bs".to_string(), "8k".to_string()));
}

#[test]
fn inline_comments_start_at_the_first_semicolon_or_hash() {
    assert_eq!(job("bs=4k ; block size").bs, [4096; 3]);
    assert_eq!(job("iodepth=4 # deep").iodepth, 4);
    assert_eq!(job("iodepth=4#deep").iodepth, 4);
    let file = parse("[j] # the job\nrw=write;comment\n");
    assert_eq!(
        (file.jobs[0].name.as_str(), file.jobs[0].rw),
        ("j", RwMode::Write)
    );
    assert_eq!(
        file.jobs[0].options,
        [("rw".to_string(), "write".to_string())]
    );
}

#[test]
fn option_before_any_section() {
    let e = error("; comment\nbs=4k\n[j]\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("bs")));
    assert!(e.message.contains("before any [section]"), "{e}");
    assert!(e.to_string().starts_with("t.fio:2: option 'bs': "), "{e}");
}

#[test]
fn empty_files_and_files_without_jobs() {
    for text in [
        "",
        "\n\n",
        "; only a comment\n",
        "[global]\nbs=4k\n",
        "[global]\n[global]\n",
    ] {
        let e = error(text);
        assert_eq!((e.line, e.option.as_deref()), (0, None), "{e}");
        assert!(e.message.contains("no jobs"), "{e}");
        assert!(e.to_string().starts_with("t.fio:0: "), "{e}");
    }
}

#[test]
fn malformed_lines() {
    for (text, line, needle) in [
        ("[unterminated\nbs=4k\n", 1, "unterminated section header"),
        ("[]\n", 1, "empty section name"),
        ("[   ]\n", 1, "empty section name"),
        ("[a]b\n", 1, "text after the section header"),
        ("[a[b]\n", 1, "'[' inside"),
        ("[j]\n=4k\n", 2, "malformed line"),
        ("[j]\nbs 4k\n", 2, "malformed line"),
        ("[j]\njob]\n", 2, "malformed line"),
    ] {
        let e = error(text);
        assert_eq!((e.line, e.option.as_deref()), (line, None), "{e}");
        assert!(e.message.contains(needle), "'{needle}' not in: {e}");
        assert!(e.to_string().starts_with(&format!("t.fio:{line}: ")), "{e}");
        assert!(!e.to_string().contains("option '"), "{e}");
    }
}

#[test]
fn non_switch_without_a_value() {
    for name in [
        "bs",
        "size",
        "offset",
        "numjobs",
        "filename",
        "file_service_type",
        "randseed",
    ] {
        rejects(name, name, "needs a value");
    }
}

#[test]
fn includes_need_a_reader() {
    let e = error("[j]\ninclude other.fio\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("include")), "{e}");
    assert!(e.message.contains("cannot read 'other.fio'"), "{e}");
    let e = error("include\tglobal.fio\n[j]\n");
    assert_eq!(e.option.as_deref(), Some("include"), "{e}");
}

#[test]
fn cross_option_checks_report_at_the_job_header() {
    let e = error("[global]\ntime_based\n\n[j]\nrw=read\n[k]\nruntime=1\n");
    assert_eq!(
        (e.line, e.option.as_deref()),
        (4, Some("time_based")),
        "{e}"
    );
    assert!(e.message.contains("needs a runtime"), "{e}");
    let e = error("[j]\nruntime=0\ntime_based\n");
    assert_eq!(
        (e.line, e.option.as_deref()),
        (1, Some("time_based")),
        "{e}"
    );
    // fio takes nrfiles above the files filename names, and caps it at
    // them (elevator's layout does: one file here).
    let capped = job("filename=/dev/sdb\nnrfiles=2");
    assert_eq!(
        elevator_fio::workload::Layout::file_count(&capped),
        1,
        "{capped:?}"
    );
    // One file named explicitly is fine.
    assert_eq!(job("filename=/dev/sdb\nnrfiles=1").nrfiles, 1);
}

#[test]
fn errors_name_the_path_given() {
    let e = JobFile::parse("[j]\nverify=pattern_no_hdr\n", "jobs/verify.fio").unwrap_err();
    assert_eq!(e.file, "jobs/verify.fio");
    assert!(
        e.to_string().starts_with(
            "jobs/verify.fio:2: option 'verify': verify=pattern_no_hdr is not implemented"
        ),
        "{e}"
    );
}

#[test]
fn realistic_round_robin_writers() {
    let text = include_str!("../../../../examples/roundrobin-writers.fio");
    let file = JobFile::parse(text, "examples/roundrobin-writers.fio").unwrap();
    assert_eq!(file.path, "examples/roundrobin-writers.fio");
    assert_eq!(file.global_options.len(), 8);
    assert_eq!(
        file.global_options[0],
        ("ioengine".to_string(), "libaio".to_string())
    );
    let [w] = &file.jobs[..] else {
        panic!("one job")
    };
    let mut expected = JobSpec::new("writer", 13);
    expected.rw = RwMode::Write;
    expected.numjobs = 8;
    expected.ioengine = "libaio".into();
    expected.direct = true;
    expected.bs = [4096; 3];
    expected.size = Some(Amount::Bytes(16 * MIB));
    expected.nrfiles = 4;
    expected.filesize = Some(16 * MIB);
    expected.file_service = (FileService::RoundRobin, 1);
    expected.iodepth = 4;
    expected.notes = w.notes.clone();
    assert_eq!(expected.notes.len(), 1);
    assert_eq!(expected.notes[0].0, "ioengine");
    expected.options = vec![
        ("rw".into(), "write".into()),
        ("numjobs".into(), "8".into()),
    ];
    // Where each option was set is checked by jobs_remember_the_line_of_each_option.
    expected.option_lines.clone_from(&w.option_lines);
    assert_eq!(*w, expected);
}

#[test]
fn fio_style_timed_random_reads() {
    let text = include_str!("../../../../examples/randread-timed.fio");
    let file = JobFile::parse(text, "randread-timed.fio").unwrap();
    let [reads, write] = &file.jobs[..] else {
        panic!("two jobs")
    };
    assert_eq!(
        (reads.name.as_str(), reads.rw, reads.iodepth, reads.numjobs),
        ("random-reads", RwMode::RandRead, 32, 4)
    );
    assert_eq!(reads.runtime, Some(30 * SEC));
    assert!(reads.time_based && reads.group_reporting && reads.direct && !reads.stonewall);
    assert_eq!(reads.size, Some(Amount::Bytes(1 << 30)));
    assert_eq!(reads.options[0].0, "description");
    assert_eq!(
        (write.rw, write.bs, write.iodepth),
        (RwMode::Write, [128 * KIB; 3], 8)
    );
    assert!(write.stonewall && write.time_based && write.group_reporting);
    assert_eq!(
        file.global_options[5],
        ("time_based".to_string(), String::new())
    );
}

#[test]
fn fio_howto_style_job() {
    // In the spirit of fio's own examples: a mixed random job and a
    // sequential one in a new group.
    let file = parse(
        "[global]\n\
         rw=randrw\n\
         rwmixwrite=25\n\
         size=128m\n\
         runtime=1m\n\
         time_based=1\n\
         randrepeat=0\n\
         randseed=1234\n\
         \n\
         [mixed]\n\
         bs=4k,16k\n\
         thinktime=50\n\
         thinktime_blocks=8\n\
         offset=10%\n\
         \n\
         [seq]\n\
         new_group\n\
         rw=read\n\
         bs=1m\n\
         size=50%\n",
    );
    let [mixed, seq] = &file.jobs[..] else {
        panic!("two jobs")
    };
    assert_eq!(
        (mixed.rw, mixed.rwmixread, mixed.bs),
        (RwMode::RandRw, 75, [4 * KIB, 16 * KIB, 16 * KIB])
    );
    assert_eq!((mixed.thinktime, mixed.thinktime_blocks), (50_000, 8));
    assert_eq!(
        (mixed.offset, mixed.runtime),
        (Amount::Percent(10), Some(60 * SEC))
    );
    assert_eq!((mixed.randrepeat, mixed.randseed), (false, Some(1234)));
    assert!(seq.new_group && !seq.stonewall && seq.time_based);
    assert_eq!(
        (seq.rw, seq.bs, seq.size),
        (RwMode::Read, [MIB; 3], Some(Amount::Percent(50)))
    );
}

#[test]
fn an_option_set_twice_in_one_section_is_a_warning_naming_both_lines() {
    let file = parse("[global]\nbs=4k\nblocksize=8k\n[j]\nrw=read\nsize=1m\nreadwrite=randwrite\n");
    assert_eq!(file.jobs[0].rw, RwMode::RandWrite, "the last value wins");
    assert_eq!(file.jobs[0].bs, [8192; 3]);
    assert_eq!(file.warnings.len(), 2, "{:?}", file.warnings);
    assert!(
        file.warnings[0].starts_with(
            "t.fio:3: option 'blocksize' sets 'bs' again in section [global] (first at line 2)"
        ),
        "{}",
        file.warnings[0]
    );
    assert!(
        file.warnings[1].starts_with(
            "t.fio:7: option 'readwrite' sets 'rw' again in section [j] (first at line 5)"
        ),
        "{}",
        file.warnings[1]
    );
    // The same option in [global] and in a job is inheritance, not a slip.
    let file = parse("[global]\nrw=read\n[j]\nrw=write\n[k]\nrw=randread\n");
    assert!(file.warnings.is_empty(), "{:?}", file.warnings);
}

#[test]
fn jobs_remember_the_line_of_each_option() {
    let file = parse("[global]\nsize=1m\n[a]\nbs=8k\n[b]\nsize=2m\n");
    assert_eq!(file.jobs[0].line_of(&["size"]), 2);
    assert_eq!(file.jobs[0].line_of(&["bs"]), 4);
    assert_eq!(file.jobs[1].line_of(&["size"]), 6);
    assert_eq!(
        file.jobs[1].line_of(&["bs"]),
        5,
        "unset: the section's line"
    );
}

/// A sample value for each implemented option, and whether it leaves the
/// spec as the default (options recorded only).
fn sample(name: &str) -> (&'static str, bool) {
    match name {
        "description" => ("words", true),
        "name" => ("other", false),
        "wait_for" => ("first", false),
        "filename" | "directory" | "filename_format" => ("/tmp/x", false),
        "nrfiles" | "nr_files" | "iodepth" | "numjobs" | "loops" | "fsync" | "fdatasync" => {
            ("2", false)
        }
        "file_service_type" => ("random", false),
        "zonemode" => ("strided", true),
        "zonesize" => ("2m", false),
        "rw" | "readwrite" => ("randwrite:8", false),
        "rw_sequencer" => ("identical", false),
        "unified_rw_reporting" => ("both", false),
        "randseed" => ("7", false),
        "offset" | "fileoffset" | "offset_increment" | "zoneskip" => ("1m", false),
        "zonerange" => ("4m", false),
        "number_ios" | "verify_backlog" | "log_avg_msec" => ("10", false),
        "rwmixread" | "rwmixwrite" => ("30", false),
        "random_distribution" => ("zipf:1.2", false),
        "random_generator" => ("lfsr", false),
        "bs" | "blocksize" | "ba" | "blockalign" => ("8k", false),
        "bsrange" | "blocksize_range" => ("4k-16k", false),
        "bssplit" => ("4k/50:8k/", false),
        "size" | "io_size" | "io_limit" | "filesize" => ("16m", false),
        "ioengine" => ("libaio", false),
        "iodepth_batch"
        | "iodepth_batch_submit"
        | "iodepth_batch_complete_min"
        | "iodepth_batch_complete"
        | "iodepth_batch_complete_max"
        | "iodepth_low" => ("4", false),
        "startdelay" | "runtime" | "timeout" | "ramp_time" | "thinktime" | "thinktime_spin"
        | "thinktime_iotime" => ("5", false),
        "thinktime_blocks" => ("4", false),
        "thinktime_blocks_type" => ("issue", false),
        "rate" | "rate_min" | "ratemin" => ("1m", false),
        "rate_iops" | "rate_iops_min" => ("100", false),
        "rate_process" => ("poisson", false),
        "rate_cycle" | "ratecycle" => ("500", false),
        "verify" => ("md5", false),
        "verify_interval" => ("512", false),
        "verify_pattern" => ("0xdeadbeef", false),
        "cpus_allowed" => ("0-1", false),
        "exit_what" => ("stonewall", false),
        "steadystate" | "ss" => ("iops:10%", false),
        "numa_cpu_nodes" => ("0", false),
        "numa_mem_policy" => ("bind:0", false),
        "percentile_list" => ("99:50", false),
        "kb_base" => ("1000", false),
        "write_bw_log" | "write_lat_log" | "write_iops_log" => ("logs", false),
        "write_iolog" | "read_iolog" => ("io.log", false),
        "replay_skip" => ("trim", false),
        "replay_time_scale" => ("50", false),
        "cmdprio_bssplit" => ("64k/50/1/0", false),
        "flow_sleep" => ("1000", false),
        "verify_format" => ("fio", false),
        "dedupe_mode" => ("working_set", false),
        // 0/1 switches whose default is 1.
        "randrepeat" | "do_verify" | "per_job_logs" | "clat_percentiles" | "buffered" => {
            ("0", false)
        }
        _ => ("1", false),
    }
}

#[test]
fn every_fio_option_has_a_verdict_and_implemented_ones_take_a_sample() {
    let mut counts = [0usize; 4];
    for (name, verdict) in fio_options() {
        match verdict {
            Verdict::Implemented => {
                counts[0] += 1;
                let (value, unchanged) = sample(name);
                let extra = match name {
                    "wait_for" => "[first]\n",
                    _ => "",
                };
                // Options that need a partner get it from [global].
                let partner = match name {
                    // zonemode=strided again: checked by new_options_read_fios_forms.
                    "zonemode" | "zonesize" | "zonerange" | "zoneskip" => {
                        "[global]\nzonemode=strided\nzonesize=1m\n"
                    }
                    "time_based" => "[global]\nruntime=1\n",
                    _ => "",
                };
                let text = format!("{partner}{extra}[j]\n{name}={value}\n");
                let file =
                    JobFile::parse(&text, FILE).unwrap_or_else(|e| panic!("{name}={value}: {e}"));
                let mut j = file.jobs.last().cloned().expect("a job");
                assert_eq!(j.options, [(name.to_string(), value.to_string())], "{name}");
                j.options.clear();
                j.option_lines.clear();
                j.notes.clear();
                let text = format!("{partner}{extra}[j]\n");
                let mut default = parse(&text).jobs.pop().expect("a job");
                default.options.clear();
                default.option_lines.clear();
                default.notes.clear();
                assert_eq!(j == default, unchanged, "{name}={value}: {j:?}");
            }
            Verdict::Noted(reason) => {
                counts[1] += 1;
                let j = job(&format!("{name}={}", sample(name).0));
                assert_eq!(j.notes, [(name.to_string(), reason.to_string())], "{name}");
            }
            Verdict::DefaultOnly { default, .. } => {
                counts[2] += 1;
                let first = default.split('|').next().unwrap_or(default);
                let j = job(&format!("{name}={first}"));
                assert_eq!(j.notes.len(), 1, "{name}");
                rejects(&format!("{name}=12345"), name, "beyond fio's default");
            }
            Verdict::Refused(reason) => {
                counts[3] += 1;
                let e = rejects(
                    &format!("{name}=1"),
                    name,
                    "fio's option, but elevator does not",
                );
                assert!(e.message.contains(reason), "{e}");
            }
        }
    }
    assert!(counts.iter().sum::<usize>() >= 300, "{counts:?}");
    assert!(counts[0] >= 100, "{counts:?}");
    // docs/fio.md gives these counts in prose: they must be the table's.
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/fio.md"))
        .expect("docs/fio.md");
    let shown = |before: &str| -> usize {
        let at = page
            .find(before)
            .unwrap_or_else(|| panic!("docs/fio.md: no '{before}'"));
        let digits: String = page[at + before.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("docs/fio.md: no count after '{before}'"))
    };
    let on_page = [
        shown("**implemented** ("),
        shown("**accepted with a note** ("),
        shown("**at fio's default value only** ("),
        shown("**refused by name** ("),
    ];
    assert_eq!(
        on_page, counts,
        "docs/fio.md's verdict counts against job/table.rs"
    );
}

#[test]
fn new_options_read_fios_forms() {
    let j = job("bsrange=4k-16k,64k:8k");
    assert_eq!(
        j.bsrange,
        Some([(4096, 16384), (8192, 65536), (8192, 65536)])
    );
    let j = job("bssplit=4k/10:64k/50:32k/40,8k/");
    let s = j.bssplit.expect("bssplit");
    assert_eq!(s[0], [(4096, 10), (65536, 50), (32768, 40)]);
    assert_eq!(s[1], [(8192, 100)]);
    assert_eq!(
        job("bssplit=4k/50:1k/:32k/").bssplit.expect("split")[0][1..],
        [(1024, 25), (32768, 25)][..]
    );
    assert_eq!(
        job("bssplit=4k/40:8k/:16k/").bssplit.expect("split")[2],
        [(4096, 40), (8192, 30), (16384, 30)]
    );
    assert_eq!(job("rw=randread:8").rw_nr, 8);
    assert_eq!(job("rw=write:4k").rw_nr, 4096);
    assert_eq!(job("rate=1m,2m").rate, [MIB, 2 * MIB, 2 * MIB]);
    assert_eq!(job("rate_iops=,100,").rate_iops, [0, 100, 0]);
    assert_eq!(
        job("rate_process=poisson").rate_process,
        RateProcess::Poisson
    );
    assert_eq!(job("rate_cycle=250").rate_cycle, 250_000_000);
    assert_eq!(job("startdelay=5-1").startdelay, (SEC, 5 * SEC));
    assert_eq!(job("startdelay=2").startdelay, (2 * SEC, 2 * SEC));
    assert_eq!(job("ramp_time=1m").ramp_time, 60 * SEC);
    assert_eq!(job("thinktime_iotime=9").thinktime_iotime, 9 * SEC);
    assert_eq!(job("io_limit=50%").io_size, Some(Amount::Percent(50)));
    assert_eq!(
        job("random_generator=lfsr").random_generator,
        RandomGenerator::Lfsr
    );
    assert_eq!(
        job("rw_sequencer=identical").rw_sequencer,
        RwSequencer::Identical
    );
    assert_eq!(
        job("unified_rw_reporting=1").unified_rw_reporting,
        UnifiedRw::Mixed
    );
    assert_eq!(
        job("unified_rw_reporting=both").unified_rw_reporting,
        UnifiedRw::Both
    );
    let j = job("zonemode=strided\nzonesize=1m\nzoneskip=2m");
    assert_eq!(
        (j.zonemode, j.zonesize, j.zonerange, j.zoneskip),
        (ZoneMode::Strided, MIB, MIB, 2 * MIB)
    );
    let j = job("write_lat_log\nwrite_bw_log=bw\nwrite_iops_log=");
    assert_eq!(j.write_lat_log.as_deref(), Some("j"));
    assert_eq!(j.write_bw_log.as_deref(), Some("bw"));
    assert_eq!(j.write_iops_log.as_deref(), Some("j"));
    assert_eq!(
        job("percentile_list=99.9:50:1").percentile_list,
        Some(vec![99.9, 50.0, 1.0])
    );
    assert_eq!(job("iodepth_batch_submit=8").iodepth_batch_submit, 8);
    assert_eq!(
        job("iodepth_batch_complete=2").iodepth_batch_complete_min,
        2
    );
    assert_eq!(
        job("kb_base=1000\nsize=1m").size,
        Some(Amount::Bytes(1_000_000))
    );
    assert_eq!(job("kb_base=1000\nsize=1mi").size, Some(Amount::Bytes(MIB)));
    rejects_all(&[
        ("bssplit=4k/50:8k/60", "bssplit", "more than 100"),
        ("bssplit=4k/20:8k/20", "bssplit", "not 100"),
        ("bssplit=4k/x", "bssplit", "percentage"),
        ("bsrange=4k-1000", "bsrange", "multiple of 512"),
        ("rate_cycle=0", "rate_cycle", "between 1"),
        (
            "percentile_list=101",
            "percentile_list",
            "between 0 and 100",
        ),
        ("percentile_list=abc", "percentile_list", "not a number"),
        (
            "unified_rw_reporting=3",
            "unified_rw_reporting",
            "expected none",
        ),
        ("rate_process=burst", "rate_process", "linear or poisson"),
        ("kb_base=1", "kb_base", "1024 or 1000"),
    ]);
}

#[test]
fn random_distributions() {
    assert_eq!(
        job("random_distribution=zipf:1.2").random_distribution,
        Distribution::Zipf(1.2)
    );
    assert_eq!(
        job("random_distribution=pareto:0.3").random_distribution,
        Distribution::Pareto(0.3)
    );
    assert_eq!(
        job("random_distribution=normal:5").random_distribution,
        Distribution::Normal(5.0)
    );
    let j = job("random_distribution=zipf:1.2:0.25");
    assert_eq!(
        (j.random_distribution, j.random_center),
        (Distribution::Zipf(1.2), Some(0.25))
    );
    let zone = |access, size| Zone { access, size };
    let Distribution::Zoned { dirs, absolute } =
        job("random_distribution=zoned:60/10:30/20:8/30:2/40").random_distribution
    else {
        panic!("zoned")
    };
    assert!(!absolute);
    assert_eq!(
        dirs[2],
        [
            zone(60.0, 10.0),
            zone(30.0, 20.0),
            zone(8.0, 30.0),
            zone(2.0, 40.0)
        ]
    );
    let Distribution::Zoned { dirs, absolute } =
        job("random_distribution=zoned_abs:60/20m:40/100m,100/1g").random_distribution
    else {
        panic!("zoned_abs")
    };
    assert!(absolute);
    assert_eq!(dirs[0][1], zone(40.0, 100.0 * MIB as f64));
    assert_eq!(dirs[1], [zone(100.0, 1024.0 * MIB as f64)]);
    rejects_all(&[
        (
            "random_distribution=zipf:1",
            "random_distribution",
            "not 1.0",
        ),
        (
            "random_distribution=pareto:1",
            "random_distribution",
            "between 0 and 1",
        ),
        (
            "random_distribution=normal:101",
            "random_distribution",
            "below 100",
        ),
        (
            "random_distribution=zipf:1.2:2",
            "random_distribution",
            "centre",
        ),
        (
            "random_distribution=zoned:60/10:30/20",
            "random_distribution",
            "add up to 90",
        ),
        (
            "random_distribution=zoned:60/10:40/95",
            "random_distribution",
            "more than 100",
        ),
        (
            "random_distribution=zipf:1.2,pareto:0.3",
            "random_distribution",
            "zoned and zoned_abs only",
        ),
        (
            "random_distribution=gauss:2",
            "random_distribution",
            "expected random",
        ),
    ]);
}

#[test]
fn verify_options() {
    for (v, method) in [
        ("crc32c", Some("crc32c")),
        ("crc32c-intel", Some("crc32c")),
        ("md5", Some("md5")),
        ("sha256", Some("sha256")),
        ("xxhash", Some("xxhash")),
        ("pattern", Some("pattern")),
        ("meta", Some("meta")),
        ("null", None),
        ("0", None),
    ] {
        assert_eq!(job(&format!("verify={v}")).verify.as_deref(), method, "{v}");
    }
    assert_eq!(
        job("verify_pattern=0xdeadbeef").verify_pattern,
        Some(vec![0xde, 0xad, 0xbe, 0xef])
    );
    assert_eq!(
        job("verify_pattern=0xabc").verify_pattern,
        Some(vec![0x0a, 0xbc])
    );
    assert_eq!(
        job("verify_pattern=\"abc\"").verify_pattern,
        Some(b"abc".to_vec())
    );
    assert_eq!(job("verify_pattern=12").verify_pattern, Some(vec![12]));
    assert_eq!(
        job("verify_pattern=4660").verify_pattern,
        Some(vec![0x34, 0x12])
    );
    let j = job("verify=md5\nverify_backlog=16\nverify_fatal=1\ndo_verify=0\nverify_only");
    assert_eq!(
        (j.verify_backlog, j.verify_fatal, j.do_verify, j.verify_only),
        (16, true, false, true)
    );
    rejects_all(&[
        ("verify=pattern_no_hdr", "verify", "is not implemented"),
        ("verify=bogus", "verify", "unknown verify method"),
        ("verify_pattern=0xzz", "verify_pattern", "not a hexadecimal"),
        ("verify_pattern=%o", "verify_pattern", "%o"),
        ("verify_interval=0", "verify_interval", "greater than 0"),
    ]);
}

#[test]
fn ioengines_are_checked() {
    for engine in [
        "io_uring", "libaio", "psync", "sync", "pvsync", "pvsync2", "vsync", "posixaio", "mmap",
        "null", "sg", "splice",
    ] {
        let j = job(&format!("ioengine={engine}"));
        assert_eq!(j.ioengine, engine);
        assert_eq!(j.notes.len(), 1, "{engine}");
    }
    rejects_all(&[
        ("ioengine=net", "ioengine", "not a block I/O engine"),
        ("ioengine=cpuio", "ioengine", "burns CPU"),
        ("ioengine=nbd", "ioengine", "elevator serve"),
        ("ioengine=windowsaio", "ioengine", "only on Windows"),
        ("ioengine=external:/x.so", "ioengine", "plugins"),
        ("ioengine=bogus", "ioengine", "unknown ioengine 'bogus'"),
        (
            "ioengine=http",
            "ioengine",
            "use a block engine such as psync",
        ),
    ]);
}

#[test]
fn cross_option_checks_as_fio_makes_them() {
    let e = error("[j]\nzonesize=1m\n");
    assert_eq!((e.line, e.option.as_deref()), (1, Some("zonesize")), "{e}");
    let e = error("[j]\nzonemode=strided\n");
    assert_eq!(e.option.as_deref(), Some("zonemode"), "{e}");
    let e = error("[j]\nrate=1m\nrate_iops=10\n");
    assert_eq!((e.line, e.option.as_deref()), (1, Some("rate_iops")), "{e}");
    assert!(e.message.contains("mutually exclusive"), "{e}");
    let e = error("[j]\nrate=1m\nrate_min=2m\n");
    assert!(e.message.contains("rate_min exceeds rate"), "{e}");
    let e = error("[a]\nwait_for=b\n[b]\n");
    assert_eq!((e.line, e.option.as_deref()), (1, Some("wait_for")), "{e}");
    assert!(e.message.contains("not an earlier job"), "{e}");
    assert_eq!(
        parse("[a]\n[b]\nwait_for=a\n").jobs[1].wait_for.as_deref(),
        Some("a")
    );
}

/// An environment with the given files and variables.
fn env(files: &[(&'static str, &'static str)], vars: &[(&'static str, &'static str)]) -> ParseEnv {
    let files = files.to_vec();
    let vars = vars.to_vec();
    ParseEnv {
        read_include: Box::new(move |path| {
            files
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, t)| t.to_string())
                .ok_or_else(|| "no such file".to_string())
        }),
        var: Box::new(move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }),
        ncpus: 8,
        pagesize: 4096,
        mb_memory: 2048,
    }
}

#[test]
fn includes_variables_and_keywords() {
    let e = env(
        &[
            (
                "jobs/glob.fio",
                "thread=1\ngroup_reporting=1\ninclude more/deep.fio\n",
            ),
            ("jobs/more/deep.fio", "iodepth=4\n"),
            ("jobs/loop.fio", "include loop.fio\n"),
            ("jobs/bad.fio", "bs=4k\n[x]\n"),
            ("jobs/badval.fio", "\n\nbs=3\n"),
        ],
        &[("SIZE", "64m"), ("NJ", "4")],
    );
    let text = "[global]\ninclude glob.fio\n[j]\nsize=${SIZE}\nnumjobs=${NJ}\nbs=${UNSET}8k\n\
                iodepth_batch=$ncpus\nnumber_ios=$mb_memory/2\nfilename_format=$jobname.$jobnum\n";
    let file = JobFile::parse_with(text, "jobs/main.fio", &e).expect("parses");
    let j = &file.jobs[0];
    assert!(j.thread && j.group_reporting);
    assert_eq!(
        (j.iodepth, j.numjobs, j.size),
        (4, 4, Some(Amount::Bytes(64 * MIB)))
    );
    assert_eq!(
        (j.bs, j.iodepth_batch_submit, j.number_ios),
        ([8192; 3], 8, 1024)
    );
    assert_eq!(j.filename_format.as_deref(), Some("$jobname.$jobnum"));
    assert_eq!(job("size=(2*4k)").size, Some(Amount::Bytes(8192)));

    let err = JobFile::parse_with("[j]\ninclude loop.fio\n", "jobs/main.fio", &e).unwrap_err();
    assert_eq!((err.file.as_str(), err.line), ("jobs/loop.fio", 1), "{err}");
    assert!(err.message.contains("includes itself"), "{err}");
    let err = JobFile::parse_with("[j]\ninclude bad.fio\n", "jobs/main.fio", &e).unwrap_err();
    assert!(err.message.contains("may not contain [sections]"), "{err}");
    let err = JobFile::parse_with("[j]\ninclude badval.fio\n", "jobs/main.fio", &e).unwrap_err();
    assert_eq!(
        (err.file.as_str(), err.line, err.option.as_deref()),
        ("jobs/badval.fio", 3, Some("bs"))
    );
    let err = JobFile::parse_with("[j]\ninclude /abs/none.fio\n", "jobs/main.fio", &e).unwrap_err();
    assert!(
        err.message
            .contains("cannot read '/abs/none.fio': no such file"),
        "{err}"
    );
    rejects("size=${SIZE", "size", "without a closing");
}

#[test]
fn variables_expand_within_a_values_bound() {
    let big: &'static str = "a".repeat(3000).leak();
    let e = env(&[], &[("BIG", big)]);
    // One fits; two pass the 4096-byte bound and are refused while they
    // expand (20,000 of them made 2 GB before the value was checked).
    let one = JobFile::parse_with("[j]\nfilename=${BIG}\n", "m.fio", &e).expect("parses");
    assert_eq!(one.jobs[0].filename.as_deref(), Some(big));
    let many = format!("[j]\ndescription={}\n", "${BIG}".repeat(20_000));
    let err = JobFile::parse_with(&many, "m.fio", &e).unwrap_err();
    assert_eq!(
        (err.line, err.option.as_deref()),
        (2, Some("description")),
        "{err}"
    );
    assert!(
        err.message.contains("with ${BIG} replaced (3000 bytes)") && err.message.contains("4096"),
        "{err}"
    );
}

#[test]
fn names_are_bounded_as_values_are() {
    let long = "n".repeat(5000);
    let err = JobFile::parse(&format!("[{long}]\nrw=read\n"), "m.fio").unwrap_err();
    assert!(
        err.message.contains("section name is 5000 bytes long"),
        "{err}"
    );
    // Each `$jobname` copies the job's name into every file's name.
    let name = "n".repeat(200);
    let format = "$jobname".repeat(30);
    let err =
        JobFile::parse(&format!("[{name}]\nfilename_format={format}\n"), "m.fio").unwrap_err();
    assert_eq!(err.option.as_deref(), Some("filename_format"), "{err}");
    assert!(err.message.contains("at most 4096"), "{err}");
    assert!(
        JobFile::parse(
            &format!("[{name}]\nfilename_format=$jobname.$filenum\n"),
            "m.fio"
        )
        .is_ok()
    );
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn command_line_options() {
    let e = ParseEnv::none();
    let file = JobFile::from_command_line(
        None,
        &args(&[
            "--direct=1",
            "--bs",
            "8k",
            "--name=a",
            "--rw=randread",
            "--time_based",
            "--runtime=5",
            "--name=b",
        ]),
        &e,
    )
    .expect("parses");
    assert_eq!(file.path, "command line");
    let [a, b] = &file.jobs[..] else {
        panic!("two jobs")
    };
    assert_eq!(
        (a.name.as_str(), a.rw, a.bs, a.direct, a.time_based),
        ("a", RwMode::RandRead, [8192; 3], true, true)
    );
    assert_eq!((b.name.as_str(), b.rw, b.direct), ("b", RwMode::Read, true));
    assert_eq!(
        file.global_options,
        [
            ("direct".to_string(), "1".to_string()),
            ("bs".to_string(), "8k".to_string())
        ]
    );
    // rw, time_based, bs, and the name fio lists for a command-line job.
    assert_eq!(a.options.len(), 4);

    let err =
        JobFile::from_command_line(None, &args(&["--name=a", "--rw=sideways"]), &e).unwrap_err();
    assert_eq!(
        (err.file.as_str(), err.line, err.option.as_deref()),
        ("command line", 2, Some("rw"))
    );
    assert!(
        err.to_string()
            .starts_with("--rw (command line, argument 2): unknown mode"),
        "{err}"
    );
    let err = JobFile::from_command_line(None, &args(&["--name=a", "--direct"]), &e).unwrap_err();
    assert!(err.message.contains("needs a value"), "{err}");
    let err = JobFile::from_command_line(None, &args(&["--rw=read"]), &e).unwrap_err();
    assert!(err.message.contains("no jobs"), "{err}");
    let err = JobFile::from_command_line(None, &args(&["job.fio"]), &e).unwrap_err();
    assert!(err.message.contains("expected --option=value"), "{err}");

    // With a file: command-line globals override every job of the file.
    let text = "[global]\nbs=4k\n[x]\nbs=16k\nrw=write\n[y]\n";
    let file = JobFile::from_command_line(
        Some((text, "f.fio")),
        &args(&["--bs=64k", "--name=z", "--rw=randwrite"]),
        &e,
    )
    .expect("parses");
    let names: Vec<&str> = file.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["x", "y", "z"]);
    assert!(file.jobs.iter().all(|j| j.bs == [64 * KIB; 3]));
    assert_eq!(file.jobs[0].rw, RwMode::Write);
    assert_eq!(file.jobs[2].rw, RwMode::RandWrite);
    assert_eq!(file.jobs[0].line_of(&["bs"]), 1, "set by argument 1");
    let err =
        JobFile::from_command_line(Some((text, "f.fio")), &args(&["--bs=3"]), &e).unwrap_err();
    assert_eq!((err.file.as_str(), err.line), ("command line", 1), "{err}");
}

#[test]
fn command_line_values_follow_fios_getopt() {
    let e = ParseEnv::none();
    let parse = |list: &[&str]| JobFile::from_command_line(None, &args(list), &e);
    // A value that starts with '-' is still the value.
    let err = parse(&["--name=a", "--offset", "-1"]).unwrap_err();
    assert_eq!(err.option.as_deref(), Some("offset"), "{err}");
    assert!(err.message.contains("'-1'"), "{err}");
    // fio gives a log's name the next argument, whatever it is.
    let f = parse(&["--name=a", "--write_bw_log", "--bs=4k"]).expect("parses");
    assert_eq!(f.jobs[0].write_bw_log.as_deref(), Some("--bs=4k"));
    assert_eq!(f.jobs[0].bs, [4096; 3]);
    // A switch never takes one.
    let err = parse(&["--name=a", "--time_based", "1"]).unwrap_err();
    assert_eq!(err.line, 3, "{err}");
    assert!(err.message.contains("expected --option=value"), "{err}");
    let err = parse(&["--name=a", "--write_bw_log"]).unwrap_err();
    assert!(err.message.contains("needs a value"), "{err}");
    let err = parse(&["--name=a", "--bs=4q"]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("--bs (command line, argument 2): '4q'"),
        "{err}"
    );
    assert!(elevator_fio::job::takes_next_argument("bs"));
    assert!(elevator_fio::job::takes_next_argument("name"));
    assert!(elevator_fio::job::takes_next_argument("write_iops_log"));
    assert!(!elevator_fio::job::takes_next_argument("time_based"));
    assert!(!elevator_fio::job::takes_next_argument("group_reporting"));
    assert!(!elevator_fio::job::takes_next_argument("no_such_option"));
}

#[test]
fn several_job_files_are_one_run_with_their_own_globals() {
    let e = ParseEnv::none();
    let a = "[global]\nbs=8k\nsize=1m\n[a1]\n[a2]\nrw=write\n";
    let b = "[b1]\nsize=2m\n[b2]\nsize=2m\nnumjobs=2\n";
    let f = JobFile::from_files(&[(a, "a.fio"), (b, "b.fio")], &args(&["--iodepth=4"]), &e)
        .expect("parses");
    let got: Vec<(&str, u64, bool, u32, &str, usize)> = f
        .jobs
        .iter()
        .map(|j| {
            (
                j.name.as_str(),
                j.bs[0],
                j.stonewall,
                j.iodepth,
                f.file_of(j),
                j.line,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("a1", 8192, false, 4, "a.fio", 4),
            ("a2", 8192, false, 4, "a.fio", 5),
            ("b1", 4096, true, 4, "b.fio", 1),
            ("b2", 4096, false, 4, "b.fio", 3),
        ]
    );
    assert_eq!(f.path, "a.fio, b.fio");
    // An error in the second file names it, and its line.
    let bad = "[b1]\nsize=1m\nrw=sideways\n";
    let err = JobFile::from_files(&[(a, "a.fio"), (bad, "b.fio")], &[], &e).unwrap_err();
    assert_eq!((err.file.as_str(), err.line), ("b.fio", 3), "{err}");
    // So does one found when its job is complete.
    let bad = "[b1]\ntime_based=1\n";
    let err = JobFile::from_files(&[(a, "a.fio"), (bad, "b.fio")], &[], &e).unwrap_err();
    assert_eq!((err.file.as_str(), err.line), ("b.fio", 1), "{err}");
    // An option before any section of the second file: no [global] of the
    // first is open for it.
    let err = JobFile::from_files(&[(a, "a.fio"), ("rw=read\n", "b.fio")], &[], &e).unwrap_err();
    assert_eq!((err.file.as_str(), err.line), ("b.fio", 1), "{err}");
    // One file: as before, no job knows a file of its own.
    let f = JobFile::from_files(&[(a, "a.fio")], &[], &e).expect("parses");
    assert!(f.jobs.iter().all(|j| j.file.is_none() && !j.stonewall));
}

#[test]
fn no_input_panics() {
    // A crude sweep: every option with awkward values must give Ok or Err.
    let values = [
        "",
        "-",
        ":",
        ",",
        ",,,",
        "0x",
        "(",
        "((1)",
        "1:2:3",
        "%",
        "/",
        "a/b:c",
        "99999999999999999999999",
        "${",
        "$ncpus*",
        "\"",
        "1-",
        "zoned:",
        "zoned_abs:/",
    ];
    for (name, _) in fio_options() {
        for v in values {
            let _ = JobFile::parse(&format!("[j]\n{name}={v}\n"), FILE);
        }
    }
}

#[test]
fn negative_offset_modifier_reads_backwards() {
    let j = job("rw=read:-8k");
    assert_eq!((j.rw, j.rw_nr, j.rw_back), (RwMode::Read, 0, 8 * KIB));
    rejects("rw=randread:-8", "rw", "not negative");
}

#[test]
fn fill_device_and_overwrite() {
    assert!(job("fill_device=1").fill_device);
    assert!(job("fill_fs=1").fill_device);
    let j = job("overwrite=1");
    assert!(
        j.notes.iter().any(|(n, _)| n == "overwrite"),
        "{:?}",
        j.notes
    );
}

// ---------------------------------------------------------------------------
// Errors (issue 26): continue_on_error, ignore_error, error_dump.

#[test]
fn continue_on_error_takes_fios_values() {
    use elevator_fio::job::{ErrorKind, ErrorPolicy};
    for (value, bits) in [
        ("none", 0),
        ("0", 0),
        ("read", 0b001),
        ("write", 0b010),
        ("io", 0b011),
        ("verify", 0b100),
        ("all", 0b111),
        ("1", 0b111),
    ] {
        let j = job(&format!("continue_on_error={value}"));
        assert_eq!(j.errors.continue_on, bits, "{value}");
    }
    rejects_all(&[
        (
            "continue_on_error=yes",
            "continue_on_error",
            "expected none, read",
        ),
        (
            "continue_on_error=2",
            "continue_on_error",
            "expected none, read",
        ),
    ]);
    // fio's default list: EIO and EILSEQ go on, ENOSPC does not.
    let p = job("continue_on_error=all").errors;
    assert!(p.goes_on(ErrorKind::Write, 5) && p.goes_on(ErrorKind::Verify, 84));
    assert!(!p.goes_on(ErrorKind::Write, 28));
    assert!(!ErrorPolicy::default().goes_on(ErrorKind::Read, 5));
    let p = job("continue_on_error=read").errors;
    assert!(p.goes_on(ErrorKind::Read, 5) && !p.goes_on(ErrorKind::Write, 5));
    assert!(job("error_dump=1").errors.dump);
}

#[test]
fn ignore_error_takes_lists_per_kind() {
    use elevator_fio::job::ErrorKind;
    let p = job("ignore_error=EAGAIN,ENOSPC:122").errors;
    assert_eq!(p.continue_on, 0b011);
    assert_eq!(p.ignore[0], [11]);
    assert_eq!(p.ignore[1], [28, 122]);
    assert!(p.ignore[2].is_empty());
    assert!(p.goes_on(ErrorKind::Write, 122) && !p.goes_on(ErrorKind::Write, 5));
    // An empty list leaves its kind alone; -5 is 5, as fio's atoi makes it.
    let p = job("continue_on_error=verify\nignore_error=,-5").errors;
    assert_eq!((p.continue_on, p.ignore[1].as_slice()), (0b110, &[5][..]));
    // Names fio does not know, and elevator's own beyond them.
    assert_eq!(
        job("ignore_error=ENODEV:ETIMEDOUT").errors.ignore[0],
        [19, 110]
    );
    rejects_all(&[
        (
            "ignore_error=EIO,EIO,EIO,EIO",
            "ignore_error",
            "at most three lists",
        ),
        (
            "ignore_error=EBOGUS",
            "ignore_error",
            "'EBOGUS': unknown error name",
        ),
        ("ignore_error=0", "ignore_error", "a number from 1 to 4095"),
        (
            "ignore_error=five",
            "ignore_error",
            "expected an error name",
        ),
        (
            "ignore_error=99999",
            "ignore_error",
            "a number from 1 to 4095",
        ),
    ]);
    let long = vec!["5"; 65].join(":");
    rejects(
        &format!("ignore_error={long}"),
        "ignore_error",
        "more than 64 errors",
    );
}

// ---------------------------------------------------------------------------
// Bounds (issue 26): what a job file may make the parser hold.

#[test]
fn more_jobs_than_fios_limit_are_refused() {
    use elevator_fio::job::MAX_JOBS;
    let sections = |n: u32| (0..n).map(|i| format!("[j{i}]\n")).collect::<String>();
    let text = format!("[global]\nsize=1m\n{}", sections(MAX_JOBS));
    assert_eq!(parse(&text).jobs.len(), MAX_JOBS as usize);
    let e = error(&format!("[global]\nsize=1m\n{}", sections(20_000)));
    assert_eq!(e.line, 2 + MAX_JOBS as usize + 1, "{e}");
    assert!(e.message.contains("more than fio's limit of 4096"), "{e}");
    // Clones count: two sections of 3000.
    let e = error("[global]\nnumjobs=3000\n[a]\n[b]\n");
    assert_eq!((e.line, e.option.as_deref()), (4, Some("numjobs")), "{e}");
    assert!(e.message.contains("makes 6000 jobs"), "{e}");
}

#[test]
fn a_repeated_option_costs_what_one_costs() {
    use elevator_fio::job::MAX_WARNINGS;
    let text = format!("[global]\nbs=8k\n[a]\n{}", "iodepth=2\n".repeat(100_000));
    let file = parse(&text);
    let j = &file.jobs[0];
    assert_eq!(j.options, [("iodepth".to_string(), "2".to_string())]);
    assert_eq!(j.option_lines.len(), 2, "{:?}", j.option_lines);
    assert_eq!(j.line_of(&["iodepth"]), 100_003);
    assert_eq!(file.warnings.len(), MAX_WARNINGS + 1);
    assert!(
        file.warnings[MAX_WARNINGS].contains("99899 more warnings like these"),
        "{}",
        file.warnings[MAX_WARNINGS]
    );
}

#[test]
fn includes_are_bounded_in_size_and_count() {
    use elevator_fio::job::{MAX_FILE_BYTES, MAX_INCLUDES, MAX_TEXT_BYTES};
    // 3 MiB of comments, included again and again: the sixth goes past
    // 16 MiB of text.
    let big: &'static str = Box::leak(format!("; {}\n", "x".repeat(3 << 20)).into_boxed_str());
    let e = env(&[("big.fio", big)], &[]);
    let text = format!("[j]\nsize=1m\n{}", "include big.fio\n".repeat(6));
    let err = JobFile::parse_with(&text, "main.fio", &e).unwrap_err();
    assert_eq!(
        (err.line, err.option.as_deref()),
        (8, Some("include")),
        "{err}"
    );
    assert!(
        err.message
            .contains(&format!("more than {} MiB", MAX_TEXT_BYTES >> 20)),
        "{err}"
    );
    // A reader that hands back more than a file may hold is refused too.
    let huge: &'static str = Box::leak("#".repeat(MAX_FILE_BYTES as usize + 1).into_boxed_str());
    let e = env(&[("huge.fio", huge)], &[]);
    let err = JobFile::parse_with("[j]\ninclude huge.fio\n", "main.fio", &e).unwrap_err();
    assert!(err.message.contains("holds more than 4 MiB"), "{err}");
    // Many small includes: at most MAX_INCLUDES are followed.
    let e = env(&[("small.fio", "size=1m\n")], &[]);
    let text = format!("[j]\n{}", "include small.fio\n".repeat(MAX_INCLUDES + 1));
    let err = JobFile::parse_with(&text, "main.fio", &e).unwrap_err();
    assert_eq!(err.line, MAX_INCLUDES + 2, "{err}");
    assert!(err.message.contains("more than 1024 includes"), "{err}");
}

#[test]
fn a_value_is_at_most_path_max_and_a_pattern_fios_512_bytes() {
    let long = "f".repeat(4097);
    rejects(
        &format!("filename={long}"),
        "filename",
        "its value is 4097 bytes long: at most 4096",
    );
    assert_eq!(
        job(&format!("filename={}", &long[..4096]))
            .filename
            .map(|f| f.len()),
        Some(4096)
    );
    let hex = |n: usize| format!("verify_pattern=0x{}", "ab".repeat(n));
    assert_eq!(job(&hex(512)).verify_pattern.map(|p| p.len()), Some(512));
    rejects(&hex(513), "verify_pattern", "at most 512 (fio's limit)");
    // Inherited into every job, a long [global] value would multiply: it is
    // refused where it is written.
    let sections: String = (0..4096).map(|i| format!("[j{i}]\n")).collect();
    let e = error(&format!(
        "[global]\ndirectory={}\n{sections}",
        "d".repeat(1 << 20)
    ));
    assert_eq!((e.line, e.option.as_deref()), (2, Some("directory")), "{e}");
}

// NUMA placement (issue 29): numa_cpu_nodes, numa_mem_policy.

#[test]
fn numa_options_take_fios_forms() {
    use elevator_fio::job::{MemPolicy, NumaNodes};
    let j = job("numa_cpu_nodes=0-1,3");
    assert_eq!(j.numa_cpu_nodes, Some(NumaNodes::List(vec![0, 1, 3])));
    assert_eq!(
        job("numa_cpu_nodes=all").numa_cpu_nodes,
        Some(NumaNodes::All)
    );
    assert!(j.notes.iter().any(|(n, _)| n == "numa_cpu_nodes"));
    for (v, want) in [
        ("default", MemPolicy::Default),
        ("local", MemPolicy::Local),
        ("prefer:1", MemPolicy::Prefer(1)),
        ("bind:0", MemPolicy::Bind(NumaNodes::List(vec![0]))),
        (
            "interleave:0-1",
            MemPolicy::Interleave(NumaNodes::List(vec![0, 1])),
        ),
        ("interleave", MemPolicy::Interleave(NumaNodes::All)),
    ] {
        assert_eq!(
            job(&format!("numa_mem_policy={v}")).numa_mem_policy,
            Some(want),
            "{v}"
        );
    }
    // fio's rules: prefer takes one node, bind needs a list, default and
    // local take none.
    for bad in [
        "prefer",
        "prefer:0-1",
        "bind",
        "local:0",
        "default:1",
        "spread:0",
    ] {
        let e = JobFile::parse(&format!("[j]\nnuma_mem_policy={bad}\n"), FILE).unwrap_err();
        assert_eq!(e.option.as_deref(), Some("numa_mem_policy"), "{bad}");
    }
    let e = JobFile::parse("[j]\nnuma_cpu_nodes=x\n", FILE).unwrap_err();
    assert_eq!(e.option.as_deref(), Some("numa_cpu_nodes"));
}

#[test]
fn priority_and_flow_options_read_fios_forms() {
    use elevator_fio::job::CmdprioSplit;
    let j = job(
        "prio=7\nprioclass=3\ncmdprio_percentage=20,30\ncmdprio_class=1\ncmdprio=2\nlog_prio=1",
    );
    assert_eq!((j.prio, j.prioclass), (Some(7), Some(3)));
    assert_eq!(&j.cmdprio_percentage[..2], &[20, 30]);
    assert_eq!(&j.cmdprio_class[..2], &[1, 1]);
    assert_eq!(&j.cmdprio[..2], &[2, 2]);
    assert!(j.log_prio);
    // examples/cmdprio-bssplit.fio's advanced form: 0 % entries dropped.
    let j = job("cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0");
    let s = j.cmdprio_bssplit.expect("split");
    assert_eq!(
        s[0],
        [
            CmdprioSplit {
                bs: 65536,
                percent: 25,
                prio: Some((1, 1))
            },
            CmdprioSplit {
                bs: 65536,
                percent: 75,
                prio: Some((3, 2))
            },
        ]
    );
    assert!(s[1].is_empty());
    rejects(
        "cmdprio_bssplit=64k/60:64k/50",
        "cmdprio_bssplit",
        "more than 100",
    );
    rejects(
        "cmdprio_bssplit=64k/10/1",
        "cmdprio_bssplit",
        "blocksize/percentage",
    );
    rejects("prio=8", "prio", "between 0 and 7");
    rejects("cmdprio_class=0", "cmdprio_class", "between 1 and 3");
    let j = job("flow_id=3\nflow=8\nflow_sleep=1000");
    assert_eq!((j.flow_id, j.flow, j.flow_sleep), (3, 8, 1_000_000));
    rejects("flow=1001", "flow", "between 0 and 1000");
}

#[test]
fn buffer_and_verify_options_of_issue_29_are_read() {
    use elevator_fio::verify::BlockFormat;
    use elevator_fio::workload::DedupeMode;
    let j = job(
        "buffer_pattern=0x01\nbuffer_compress_percentage=50\nbuffer_compress_chunk=4k\n\
         refill_buffers\ndedupe_percentage=34\ndedupe_mode=working_set\n\
         dedupe_working_set_percentage=50\ndedupe_global=1\nverify=sha3-384\n\
         verify_dump=1\nverify_format=fio",
    );
    let b = &j.buffers;
    assert_eq!(b.pattern, Some(vec![1]));
    assert_eq!((b.compress, b.chunk, b.refill), (50, 4096, true));
    assert_eq!(
        (b.dedupe, b.mode, b.working_set, b.global),
        (34, DedupeMode::WorkingSet, 50, true)
    );
    assert_eq!(j.verify.as_deref(), Some("sha3-384"));
    assert!(j.verify_dump);
    assert_eq!(j.verify_format, BlockFormat::Fio);
    rejects_all(&[
        (
            "buffer_compress_percentage=101",
            "buffer_compress_percentage",
            "100",
        ),
        (
            "dedupe_mode=zigzag",
            "dedupe_mode",
            "repeat and working_set",
        ),
        ("verify_format=xfs", "verify_format", "elevator"),
        ("buffer_pattern=0xzz", "buffer_pattern", "not a hexadecimal"),
    ]);
}

/// fio's synchronous engines (psync, its default, among them) run a job at
/// depth 1 whatever its iodepth; the job keeps the depth it states.
#[test]
fn synchronous_engines_cap_the_depth_a_job_runs_at() {
    let default = job("iodepth=8");
    assert_eq!((default.ioengine.as_str(), default.iodepth), ("psync", 8));
    assert_eq!(default.queue_depth(), 1);
    assert!(default.depth_capped());
    for engine in elevator_fio::job::SYNC_ENGINES {
        let j = job(&format!("ioengine={engine}\niodepth=8"));
        assert_eq!((j.queue_depth(), j.depth_capped()), (1, true), "{engine}");
    }
    for engine in ["libaio", "io_uring", "posixaio", "null"] {
        let j = job(&format!("ioengine={engine}\niodepth=8"));
        assert_eq!((j.queue_depth(), j.depth_capped()), (8, false), "{engine}");
    }
    // At iodepth=1 there is nothing to cap, and no note.
    let one = job("ioengine=psync");
    assert_eq!((one.queue_depth(), one.depth_capped()), (1, false));
}
