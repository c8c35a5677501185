//! fio job files: `JobFile::parse` on good and bad input.

use elevator_fio::job::{Amount, FileService, JobError, JobFile, JobSpec, RwMode};

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

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const SEC: u64 = 1_000_000_000;

#[test]
fn defaults_are_fios() {
    let j = job("");
    assert_eq!(j, JobSpec::new("j", 1));
    assert_eq!(j.rw, RwMode::Read);
    assert_eq!(j.bs, [4096, 4096]);
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
    ] {
        assert_eq!(job(&format!("rw={text}")).rw, mode, "{text}");
        assert_eq!(job(&format!("readwrite={text}")).rw, mode, "{text}");
    }
    rejects("rw=randread:8", "rw", "':' suffix");
    rejects("rw=read:4k", "rw", "not supported");
    rejects("rw=random", "rw", "unknown mode 'random'");
    rejects("readwrite=trimwrite", "readwrite", "expected read, write");
    rejects("rw=READ", "rw", "unknown mode");
    rejects("rw", "rw", "needs a value");
    rejects("rw=", "rw", "needs a value");
}

#[test]
fn rwmixread_and_rwmixwrite() {
    assert_eq!(job("rw=randrw\nrwmixread=70").rwmixread, 70);
    assert_eq!(job("rwmixread=0").rwmixread, 0);
    assert_eq!(job("rwmixread=100").rwmixread, 100);
    assert_eq!(job("rwmixwrite=30").rwmixread, 70);
    assert_eq!(job("rwmixwrite=100").rwmixread, 0);
    // The last one wins, whichever it is.
    assert_eq!(job("rwmixwrite=30\nrwmixread=10").rwmixread, 10);
    assert_eq!(job("rwmixread=10\nrwmixwrite=30").rwmixread, 70);
    // A mix with a non-mixed mode is allowed (and ignored), as in fio.
    assert_eq!(job("rw=read\nrwmixread=10").rwmixread, 10);
    rejects("rwmixread=101", "rwmixread", "between 0 and 100");
    rejects("rwmixwrite=200", "rwmixwrite", "between 0 and 100");
    rejects("rwmixread=-1", "rwmixread", "negative");
    rejects("rwmixread=50%", "rwmixread", "not a whole number");
    rejects("rwmixread=12.5", "rwmixread", "decimals");
}

#[test]
fn block_sizes() {
    assert_eq!(job("bs=4k").bs, [4096, 4096]);
    assert_eq!(job("blocksize=64KiB").bs, [64 * KIB; 2]);
    assert_eq!(job("bs=512").bs, [512, 512]);
    assert_eq!(job("bs=8k,64k").bs, [8 * KIB, 64 * KIB]);
    assert_eq!(job("bs=8k , 64k").bs, [8 * KIB, 64 * KIB]);
    assert_eq!(job("bs=,8k").bs, [4096, 8 * KIB]);
    assert_eq!(job("bs=16k,").bs, [16 * KIB, 4096]);
    assert_eq!(job("bs=1m\nbs=,8k").bs, [MIB, 8 * KIB]);
    rejects("bs=1000", "bs", "multiple of 512");
    rejects("bs=0", "bs", "multiple of 512");
    rejects("bs=4k,100", "bs", "multiple of 512");
    rejects("bs=4k,8k,16k", "bs", "at most two sizes");
    rejects("bs=,", "bs", "at least one size");
    rejects("blocksize=4x", "blocksize", "unknown size suffix");
    rejects("bs=1.5k", "bs", "decimals");
    rejects("bs=-4k", "bs", "negative");
    rejects("bs=0x1000", "bs", "hexadecimal");
    rejects("bs=4k-16k", "bs", "unknown size suffix");
}

#[test]
fn size_suffixes_are_powers_of_1024() {
    for (text, bytes) in [
        ("4096", 4096),
        ("4k", 4 * KIB),
        ("4K", 4 * KIB),
        ("4KiB", 4 * KIB),
        ("4KB", 4 * KIB),
        ("4kb", 4 * KIB),
        ("1m", MIB),
        ("1MiB", MIB),
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
    assert_eq!(job("size=16m").size, Some(Amount::Bytes(16 * MIB)));
    assert_eq!(job("size=50%").size, Some(Amount::Percent(50)));
    assert_eq!(job("size=100%").size, Some(Amount::Percent(100)));
    assert_eq!(job("size=1%").size, Some(Amount::Percent(1)));
    assert_eq!(job("size=1000").size, Some(Amount::Bytes(1000)));
    rejects("size=0", "size", "greater than 0");
    rejects("size=0%", "size", "between 1 and 100");
    rejects("size=101%", "size", "between 1 and 100");
    rejects("size=-5%", "size", "negative");
    rejects("size=1.5g", "size", "decimals");
    rejects("size=16777216t", "size", "too large");
    rejects("size=99999999999999999999", "size", "too large");
    rejects("size=%", "size", "percentage");
}

#[test]
fn offset_option() {
    assert_eq!(job("offset=1m").offset, Amount::Bytes(MIB));
    assert_eq!(job("offset=0").offset, Amount::Bytes(0));
    assert_eq!(job("offset=25%").offset, Amount::Percent(25));
    assert_eq!(job("offset=0%").offset, Amount::Bytes(0));
    assert_eq!(job("offset=100%").offset, Amount::Percent(100));
    rejects("offset=101%", "offset", "between 0 and 100");
    rejects("offset=-1m", "offset", "negative");
    rejects("offset=1z", "offset", "unknown size suffix");
}

#[test]
fn iodepth_numjobs_nrfiles_thinktime_blocks() {
    assert_eq!(job("iodepth=32").iodepth, 32);
    assert_eq!(job("iodepth=65536").iodepth, 65536);
    assert_eq!(job("numjobs=4096").numjobs, 4096);
    assert_eq!(job("nrfiles=8").nrfiles, 8);
    assert_eq!(job("thinktime_blocks=16").thinktime_blocks, 16);
    rejects("iodepth=0", "iodepth", "between 1 and 65536, got 0");
    rejects("iodepth=65537", "iodepth", "between 1 and 65536");
    rejects("iodepth=4k", "iodepth", "not a whole number");
    rejects("numjobs=0", "numjobs", "between 1 and 4096");
    rejects("numjobs=4097", "numjobs", "between 1 and 4096");
    rejects("nrfiles=0", "nrfiles", "between 1 and 65536");
    rejects("nrfiles=100000", "nrfiles", "between 1 and 65536");
    rejects("thinktime_blocks=0", "thinktime_blocks", "between 1 and");
    rejects(
        "thinktime_blocks=99999999999",
        "thinktime_blocks",
        "between 1 and",
    );
    rejects("iodepth=99999999999999999999999", "iodepth", "too large");
    rejects("iodepth=abc", "iodepth", "not a number");
    rejects("iodepth", "iodepth", "needs a value: write iodepth=VALUE");
}

#[test]
fn filesize_option() {
    assert_eq!(job("filesize=16m").filesize, Some(16 * MIB));
    assert_eq!(job("filesize=1000").filesize, Some(1000));
    rejects("filesize=0", "filesize", "greater than 0");
    rejects("filesize=10%", "filesize", "unknown size suffix");
}

#[test]
fn thinktime_is_microseconds_by_default() {
    assert_eq!(job("thinktime=250").thinktime, 250_000);
    assert_eq!(job("thinktime=0").thinktime, 0);
    assert_eq!(job("thinktime=5ms").thinktime, 5_000_000);
    assert_eq!(job("thinktime=5MSEC").thinktime, 5_000_000);
    assert_eq!(job("thinktime=100ns").thinktime, 100);
    assert_eq!(job("thinktime=7usec").thinktime, 7_000);
    assert_eq!(job("thinktime=1s").thinktime, SEC);
    rejects("thinktime=1.5ms", "thinktime", "decimals");
    rejects("thinktime=5 ms", "thinktime", "unknown time unit");
    rejects("thinktime=5d", "thinktime", "unknown time unit");
    rejects("thinktime=-1", "thinktime", "negative");
    rejects("thinktime=18446744073709551615ms", "thinktime", "too large");
}

#[test]
fn runtime_is_seconds_by_default() {
    assert_eq!(job("runtime=30").runtime, Some(30 * SEC));
    assert_eq!(job("runtime=30s").runtime, Some(30 * SEC));
    assert_eq!(job("runtime=2m").runtime, Some(120 * SEC));
    assert_eq!(job("runtime=2min").runtime, Some(120 * SEC));
    assert_eq!(job("runtime=1h").runtime, Some(3600 * SEC));
    assert_eq!(job("runtime=1HOUR").runtime, Some(3600 * SEC));
    assert_eq!(job("runtime=500ms").runtime, Some(SEC / 2));
    assert_eq!(job("runtime=1sec").runtime, Some(SEC));
    // fio's runtime=0 is "no limit".
    assert_eq!(job("runtime=10\nruntime=0").runtime, None);
    rejects("runtime=18446744074", "runtime", "too large");
    rejects("runtime=5y", "runtime", "unknown time unit");
    rejects("runtime=", "runtime", "needs a value");
}

#[test]
fn switches() {
    type Field = fn(&JobSpec) -> bool;
    let fields: [(&str, Field); 7] = [
        ("time_based", |j| j.time_based),
        ("direct", |j| j.direct),
        ("group_reporting", |j| j.group_reporting),
        ("stonewall", |j| j.stonewall),
        ("wait_for_previous", |j| j.stonewall),
        ("new_group", |j| j.new_group),
        ("randrepeat", |j| j.randrepeat),
    ];
    for (name, field) in fields {
        let runtime = if name == "time_based" {
            "runtime=1\n"
        } else {
            ""
        };
        assert!(field(&job(&format!("{runtime}{name}"))), "bare {name}");
        assert!(field(&job(&format!("{runtime}{name}=1"))), "{name}=1");
        assert!(field(&job(&format!("{runtime}{name} = 1"))), "{name} = 1");
        assert!(!field(&job(&format!("{runtime}{name}=0"))), "{name}=0");
        assert!(
            !field(&job(&format!("{runtime}{name}\n{name}=0"))),
            "{name} then =0"
        );
        for bad in ["true", "false", "2", "yes", "", "-1"] {
            rejects(&format!("{name}={bad}"), name, "expected 0 or 1");
        }
    }
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
    assert_eq!(job("ioengine=libaio").ioengine, "libaio");
    assert_eq!(job("ioengine=io_uring").ioengine, "io_uring");
    assert_eq!(job("").ioengine, "psync");
    rejects("ioengine=", "ioengine", "needs a value");
    rejects("ioengine", "ioengine", "needs a value");
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
    rejects(
        "filename=/dev/sdb:/dev/sdc",
        "filename",
        "one filename per job",
    );
    rejects("filename=a:b", "filename", "use nrfiles");
    rejects("filename=", "filename", "needs a value");
}

#[test]
fn file_service_type_option() {
    assert_eq!(job("").file_service, (FileService::RoundRobin, 1));
    assert_eq!(
        job("file_service_type=roundrobin").file_service,
        (FileService::RoundRobin, 1)
    );
    assert_eq!(
        job("file_service_type=sequential").file_service,
        (FileService::Sequential, 1)
    );
    assert_eq!(
        job("file_service_type=random").file_service,
        (FileService::Random, 1)
    );
    assert_eq!(
        job("file_service_type=random:8").file_service,
        (FileService::Random, 8)
    );
    assert_eq!(
        job("file_service_type=roundrobin:4").file_service,
        (FileService::RoundRobin, 4)
    );
    rejects(
        "file_service_type=zipf:1.2",
        "file_service_type",
        "unknown file_service_type 'zipf'",
    );
    rejects(
        "file_service_type=random:0",
        "file_service_type",
        "count after ':'",
    );
    rejects(
        "file_service_type=random:",
        "file_service_type",
        "count after ':'",
    );
    rejects(
        "file_service_type=Random",
        "file_service_type",
        "expected roundrobin",
    );
}

#[test]
fn randseed_option() {
    assert_eq!(job("randseed=42").randseed, Some(42));
    assert_eq!(
        job("randseed=18446744073709551615").randseed,
        Some(u64::MAX)
    );
    assert_eq!(job("").randseed, None);
    rejects("randseed=18446744073709551616", "randseed", "too large");
    rejects("randseed=-1", "randseed", "negative");
    rejects("randseed=0x1234", "randseed", "hexadecimal");
    rejects("randseed=12k", "randseed", "not a whole number");
}

#[test]
fn name_and_description() {
    let j = job("name=renamed\ndescription=Just some words; with = signs");
    assert_eq!(j.name, "renamed");
    assert_eq!(
        j.options[1],
        ("description".into(), "Just some words; with = signs".into())
    );
    rejects("name=", "name", "needs a value");
    let e = error("[global]\nname=x\n[j]\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("name")));
}

#[test]
fn unsupported_options_are_errors_listing_the_supported_ones() {
    for line in [
        "verify=md5",
        "bsrange=4k-16k",
        "zonemode=zbd",
        "percentile_list=99:99.9",
        "iodepth_batch=4",
        "ramp_time=5",
        "loops=2",
        "rate=10m",
        "exec_prerun=ls",
        "exec_postrun=ls",
        "norandommap",
    ] {
        let name = line.split('=').next().unwrap_or(line);
        let e = rejects(line, name, "unsupported option");
        for supported in [
            "rw",
            "bs",
            "iodepth",
            "file_service_type",
            "randseed",
            "description",
        ] {
            assert!(e.message.contains(supported), "{e}");
        }
    }
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
    assert_eq!((early.bs, early.iodepth, early.line), ([4096; 2], 1, 1));
    assert_eq!(
        (middle.bs, middle.iodepth, middle.line),
        ([8 * KIB; 2], 2, 5)
    );
    assert_eq!((late.bs, late.iodepth, late.line), ([16 * KIB; 2], 4, 9));
    // Each job records only its own options; the globals go to the file.
    assert!(early.options.is_empty() && late.options.is_empty());
    assert_eq!(middle.options, [("iodepth".to_string(), "2".to_string())]);
    let globals: Vec<(&str, &str)> = file
        .global_options
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(globals, [("bs", "8k"), ("iodepth", "4"), ("bs", "16k")]);
}

#[test]
fn job_overrides_global_and_repeated_options_take_the_last() {
    let file = parse("[global]\nrw=randread\nbs=4k\nbs=8k\n[a]\nrw=write\nrw=randwrite\n[b]\n");
    assert_eq!(file.jobs[0].rw, RwMode::RandWrite);
    assert_eq!(file.jobs[0].bs, [8 * KIB; 2]);
    assert_eq!(file.jobs[1].rw, RwMode::RandRead);
    assert_eq!(file.jobs[0].options.len(), 2);
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
        ([8 * KIB; 2], 16, RwMode::RandWrite, None)
    );
    assert_eq!(file.global_options[0], ("bs".to_string(), "8k".to_string()));
}

#[test]
fn trailing_comments_are_part_of_the_value() {
    let e = rejects("bs=4k ; block size", "bs", "unknown size suffix");
    assert!(
        e.message
            .contains("comments must be on a line of their own"),
        "{e}"
    );
    rejects(
        "iodepth=4 # deep",
        "iodepth",
        "comments must be on a line of their own",
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
        ("[a] ; comment\n", 1, "text after the section header"),
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
fn unsupported_syntax() {
    let e = error("[j]\ninclude other.fio\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("include")), "{e}");
    assert!(e.message.contains("not supported"), "{e}");
    rejects("size=${SIZE}", "size", "variable substitution");
    rejects("filename=$HOME/f", "filename", "variable substitution");
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
    let e = error("[ok]\n[j]\nfilename=/dev/sdb\nnrfiles=2\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("nrfiles")), "{e}");
    assert!(
        e.message.contains("nrfiles>1 with an explicit filename"),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("t.fio:2: option 'nrfiles': job 'j': "),
        "{e}"
    );
    // One file named explicitly is fine.
    assert_eq!(job("filename=/dev/sdb\nnrfiles=1").nrfiles, 1);
}

#[test]
fn errors_name_the_path_given() {
    let e = JobFile::parse("[j]\nverify=crc32c\n", "jobs/verify.fio").unwrap_err();
    assert_eq!(e.file, "jobs/verify.fio");
    assert!(
        e.to_string()
            .starts_with("jobs/verify.fio:2: option 'verify': unsupported option")
    );
}

#[test]
fn realistic_round_robin_writers() {
    let text = include_str!("../../../examples/roundrobin-writers.fio");
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
    expected.bs = [4096; 2];
    expected.size = Some(Amount::Bytes(16 * MIB));
    expected.nrfiles = 4;
    expected.filesize = Some(16 * MIB);
    expected.file_service = (FileService::RoundRobin, 1);
    expected.iodepth = 4;
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
    let text = include_str!("../../../examples/randread-timed.fio");
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
        (RwMode::Write, [128 * KIB; 2], 8)
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
        (RwMode::RandRw, 75, [4 * KIB, 16 * KIB])
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
        (RwMode::Read, [MIB; 2], Some(Amount::Percent(50)))
    );
}

#[test]
fn an_option_set_twice_in_one_section_is_a_warning_naming_both_lines() {
    let file = parse("[global]\nbs=4k\nblocksize=8k\n[j]\nrw=read\nsize=1m\nreadwrite=randwrite\n");
    assert_eq!(file.jobs[0].rw, RwMode::RandWrite, "the last value wins");
    assert_eq!(file.jobs[0].bs, [8192; 2]);
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
