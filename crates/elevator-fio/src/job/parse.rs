//! The fio job-file reader behind [`JobFile::parse`].
//!
//! One pass over the lines. `[global]` options are applied to a template
//! [`JobSpec`]; every job section starts as a copy of the template as it is
//! at that header (so a later `[global]` never reaches back to earlier jobs)
//! and applies its own options on top. Cross-option checks run when a job
//! section ends and are reported at its header line.
//!
//! Where elevator is stricter than fio, it says so in the error rather than
//! guessing: no `include`, no `$VAR`, no trailing comments, no decimal, hex or
//! negative numbers, no `:` suffixes on `rw`, one `filename` per job, block
//! sizes in whole 512-byte sectors, and `0`/`1` as the only switch values.

use elevator_core::Nanos;

use super::{Amount, FileService, JobError, JobFile, JobSpec, RwMode};

/// Every option elevator accepts (for "unsupported option" messages).
const SUPPORTED: &[&str] = &[
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "size",
    "offset",
    "iodepth",
    "numjobs",
    "nrfiles",
    "filesize",
    "thinktime",
    "thinktime_blocks",
    "runtime",
    "time_based",
    "direct",
    "group_reporting",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "randrepeat",
    "ioengine",
    "filename",
    "file_service_type",
    "randseed",
    "name",
    "description",
    "thread",
    "cpus_allowed",
];

/// Added to a bad value that looks like it carries a trailing comment.
const COMMENT_HINT: &str = " (comments must be on a line of their own: \
    ';' and '#' start a comment only at the beginning of a line)";

const MICROSECOND: Nanos = 1_000;
const SECOND: Nanos = 1_000_000_000;

/// The section the next option line belongs to.
enum Target {
    /// No section header yet.
    Nothing,
    /// A `[global]` section: options go to the template.
    Global,
    /// A job section being read.
    Job(Box<JobSpec>),
}

pub(super) fn parse(text: &str, path: &str) -> Result<JobFile, JobError> {
    let error = |line: usize, option: Option<&str>, message: String| JobError {
        file: path.to_string(),
        line,
        option: option.map(str::to_string),
        message,
    };
    let mut template = JobSpec::new("", 0);
    let mut global_options = Vec::new();
    let mut jobs = Vec::new();
    let mut warnings = Vec::new();
    let mut target = Target::Nothing;
    // Options set in the current section so far: (canonical name, line).
    let mut in_section: Vec<(&'static str, usize)> = Vec::new();

    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }

        if line.starts_with('[') {
            let name = section_name(line).map_err(|m| error(line_no, None, m))?;
            in_section.clear();
            let next = if name == "global" {
                Target::Global
            } else {
                let mut job = template.clone();
                job.name = name.to_string();
                job.line = line_no;
                job.options.clear();
                Target::Job(Box::new(job))
            };
            if let Target::Job(done) = std::mem::replace(&mut target, next) {
                check(&done).map_err(|(o, m)| error(done.line, o, m))?;
                jobs.push(*done);
            }
            continue;
        }

        let (name, value) = match line.split_once('=') {
            Some((name, value)) => (name.trim(), Some(value.trim())),
            None => (line, None),
        };
        if name.split_whitespace().next() == Some("include") {
            let message = "'include' is not supported: put all jobs in one file".to_string();
            return Err(error(line_no, Some("include"), message));
        }
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains(['[', ']']) {
            let message = format!(
                "malformed line '{line}': expected a [section] header, name=value or a bare switch"
            );
            return Err(error(line_no, None, message));
        }
        let fail = |message: String| error(line_no, Some(name), message);
        if value.is_some_and(|v| v.contains('$')) {
            return Err(fail(
                "variable substitution ($VAR, ${VAR}) is not supported".into(),
            ));
        }
        let spec = match &mut target {
            Target::Nothing => {
                return Err(fail(
                    "option before any [section]: put it under [global] or a job".into(),
                ));
            }
            Target::Global if name == "name" => {
                return Err(fail(
                    "'name' names one job: set it in a job section, not [global]".into(),
                ));
            }
            Target::Global => &mut template,
            Target::Job(job) => job,
        };
        apply(spec, name, value).map_err(|mut message| {
            if value.is_some_and(|v| v.contains([';', '#'])) {
                message.push_str(COMMENT_HINT);
            }
            fail(message)
        })?;
        let key = canonical(name);
        if let Some(&(_, first)) = in_section.iter().find(|(k, _)| *k == key) {
            let section = match &target {
                Target::Job(job) => job.name.as_str(),
                _ => "global",
            };
            let what = if key == name {
                format!("option '{name}' is set again")
            } else {
                format!("option '{name}' sets '{key}' again")
            };
            warnings.push(format!(
                "{path}:{line_no}: {what} in section [{section}] (first at line {first}); \
                 the value on line {line_no} is used, as fio does"
            ));
        }
        in_section.push((key, line_no));
        let record = (name.to_string(), value.unwrap_or("").to_string());
        match target {
            Target::Global => global_options.push(record),
            Target::Job(ref mut job) => job.options.push(record),
            Target::Nothing => {}
        }
        spec_of(&mut target, &mut template)
            .option_lines
            .push((key.to_string(), line_no));
    }

    if let Target::Job(done) = target {
        check(&done).map_err(|(o, m)| error(done.line, o, m))?;
        jobs.push(*done);
    }
    if jobs.is_empty() {
        let message = "the file has no jobs: add a [name] section after [global]".to_string();
        return Err(error(0, None, message));
    }
    Ok(JobFile {
        path: path.to_string(),
        global_options,
        jobs,
        warnings,
    })
}

/// The spec that options of the current section go to.
fn spec_of<'a>(target: &'a mut Target, template: &'a mut JobSpec) -> &'a mut JobSpec {
    match target {
        Target::Job(job) => job,
        Target::Global | Target::Nothing => template,
    }
}

/// One name for each setting that fio spells several ways (`readwrite` is
/// `rw`, `rwmixwrite` sets `rwmixread`), so that setting it twice is seen
/// whatever the spelling.
fn canonical(name: &str) -> &'static str {
    match name {
        "readwrite" => "rw",
        "rwmixwrite" => "rwmixread",
        "blocksize" => "bs",
        "wait_for_previous" => "stonewall",
        _ => SUPPORTED
            .iter()
            .find(|&&s| s == name)
            .copied()
            .unwrap_or("?"),
    }
}

/// The name inside a `[section]` header line (already trimmed).
fn section_name(line: &str) -> Result<&str, String> {
    let Some(end) = line.find(']') else {
        return Err(format!("unterminated section header '{line}': missing ']'"));
    };
    if end + 1 != line.len() {
        return Err(format!("text after the section header in '{line}'"));
    }
    let name = line[1..end].trim();
    if name.is_empty() {
        return Err("empty section name '[]'".into());
    }
    if name.contains('[') {
        return Err(format!("'[' inside the section name in '{line}'"));
    }
    Ok(name)
}

/// Checks across options once a job section is complete.
fn check(job: &JobSpec) -> Result<(), (Option<&'static str>, String)> {
    if job.time_based && job.runtime.is_none() {
        let message = format!(
            "job '{}': time_based needs a runtime greater than 0",
            job.name
        );
        return Err((Some("time_based"), message));
    }
    if job.nrfiles > 1 && job.filename.is_some() {
        let message = format!(
            "job '{}': nrfiles>1 with an explicit filename is not supported \
             (drop filename and elevator names the files)",
            job.name
        );
        return Err((Some("nrfiles"), message));
    }
    Ok(())
}

/// The switch (boolean) field an option sets, if it is one.
fn switch<'a>(spec: &'a mut JobSpec, name: &str) -> Option<&'a mut bool> {
    Some(match name {
        "time_based" => &mut spec.time_based,
        "direct" => &mut spec.direct,
        "group_reporting" => &mut spec.group_reporting,
        "stonewall" | "wait_for_previous" => &mut spec.stonewall,
        "new_group" => &mut spec.new_group,
        "randrepeat" => &mut spec.randrepeat,
        "thread" => &mut spec.thread,
        _ => return None,
    })
}

/// Set one option on `spec`; the error is the message only.
fn apply(spec: &mut JobSpec, name: &str, value: Option<&str>) -> Result<(), String> {
    if let Some(flag) = switch(spec, name) {
        *flag = match value {
            None | Some("1") => true,
            Some("0") => false,
            Some(v) => {
                return Err(format!(
                    "expected 0 or 1 (or the bare name for 1), got '{v}'"
                ));
            }
        };
        return Ok(());
    }
    if !SUPPORTED.contains(&name) {
        return Err(format!(
            "unsupported option (elevator supports: {})",
            SUPPORTED.join(", ")
        ));
    }
    let v = match value {
        Some(v) if !v.is_empty() => v,
        _ => return Err(format!("needs a value: write {name}=VALUE")),
    };
    match name {
        "rw" | "readwrite" => spec.rw = rw_mode(v)?,
        "rwmixread" => spec.rwmixread = percent(v)?,
        "rwmixwrite" => spec.rwmixread = 100 - percent(v)?,
        "bs" | "blocksize" => block_sizes(v, &mut spec.bs)?,
        "size" => spec.size = Some(amount(v, 1)?),
        "offset" => spec.offset = amount(v, 0)?,
        "iodepth" => spec.iodepth = int_in(v, 1, 65_536)?,
        "numjobs" => spec.numjobs = int_in(v, 1, 4096)?,
        "nrfiles" => spec.nrfiles = int_in(v, 1, 65_536)?,
        "filesize" => match size(v)? {
            0 => return Err("must be greater than 0".into()),
            bytes => spec.filesize = Some(bytes),
        },
        "thinktime" => spec.thinktime = time(v, MICROSECOND)?,
        "thinktime_blocks" => spec.thinktime_blocks = int_in(v, 1, u32::MAX)?,
        // fio's runtime=0 means "no limit".
        "runtime" => spec.runtime = Some(time(v, SECOND)?).filter(|&ns| ns > 0),
        "ioengine" => spec.ioengine = v.to_string(),
        "filename" if v.contains(':') => {
            return Err(format!(
                "'{v}': elevator supports one filename per job, not fio's ':'-separated list \
                 (use nrfiles for several files)"
            ));
        }
        "filename" => spec.filename = Some(v.to_string()),
        "file_service_type" => spec.file_service = file_service(v)?,
        "randseed" => spec.randseed = Some(whole(v, "seed")?),
        "name" => spec.name = v.to_string(),
        "cpus_allowed" => spec.cpus_allowed = Some(cpu_list(v)?),
        // Documentation only.
        "description" => {}
        _ => {
            return Err(format!(
                "option '{name}' is listed as supported but not handled"
            ));
        }
    }
    Ok(())
}

/// The most CPU numbers `cpus_allowed` takes (Linux's `CPU_SETSIZE`).
const MAX_CPUS: u32 = 1024;

/// A CPU list as fio and `taskset -c` write it: numbers and ranges joined
/// by commas (`0-3,6`), each below [`MAX_CPUS`].
fn cpu_list(v: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for part in v.split(',') {
        let part = part.trim();
        let cpu = |t: &str| -> Result<u32, String> {
            match t.trim().parse::<u32>() {
                Ok(n) if n < MAX_CPUS => Ok(n),
                Ok(n) => Err(format!(
                    "CPU {n} is beyond the {MAX_CPUS} CPUs a list can name"
                )),
                Err(_) => Err(format!(
                    "'{part}' is not a CPU number or range (write e.g. cpus_allowed=0-3,6)"
                )),
            }
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (cpu(a)?, cpu(b)?),
            None => {
                let n = cpu(part)?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(format!(
                "'{part}': a range runs from the lower CPU to the higher"
            ));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn rw_mode(v: &str) -> Result<RwMode, String> {
    if let Some((mode, _)) = v.split_once(':') {
        return Err(format!(
            "'{v}': fio's ':' suffix on rw (offset modifier) is not supported; write rw={mode}"
        ));
    }
    Ok(match v {
        "read" => RwMode::Read,
        "write" => RwMode::Write,
        "randread" => RwMode::RandRead,
        "randwrite" => RwMode::RandWrite,
        "rw" | "readwrite" => RwMode::ReadWrite,
        "randrw" => RwMode::RandRw,
        "trim" => RwMode::Trim,
        "randtrim" => RwMode::RandTrim,
        _ => {
            return Err(format!(
                "unknown mode '{v}': expected read, write, randread, randwrite, rw, readwrite, \
                 randrw, trim or randtrim"
            ));
        }
    })
}

/// `roundrobin`, `sequential` or `random`, optionally `:N` (I/Os per switch).
fn file_service(v: &str) -> Result<(FileService, u32), String> {
    let (kind, count) = v.split_once(':').map_or((v, None), |(k, c)| (k, Some(c)));
    let service = match kind {
        "roundrobin" => FileService::RoundRobin,
        "sequential" => FileService::Sequential,
        "random" => FileService::Random,
        _ => {
            return Err(format!(
                "unknown file_service_type '{kind}': expected roundrobin, sequential or random, \
                 optionally followed by :N"
            ));
        }
    };
    let count = match count {
        Some(c) => int_in(c, 1, u32::MAX).map_err(|e| format!("count after ':': {e}"))?,
        None => 1,
    };
    Ok((service, count))
}

/// `bs=SIZE` (reads and writes), `bs=R,W`, `bs=,W` or `bs=R,` (one side).
fn block_sizes(v: &str, bs: &mut [u64; 3]) -> Result<(), String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    *bs = match parts.as_slice() {
        [all] => [block_size(all)?; 3],
        ["", ""] => return Err("needs at least one size: bs=READ,WRITE".into()),
        [read, write] => {
            let side = |s: &str, old: u64| if s.is_empty() { Ok(old) } else { block_size(s) };
            let write = side(write, bs[1])?;
            [side(read, bs[0])?, write, write]
        }
        _ => {
            return Err(format!(
                "'{v}': at most two sizes (reads,writes); elevator uses the write size for trims"
            ));
        }
    };
    Ok(())
}

fn block_size(v: &str) -> Result<u64, String> {
    match size(v)? {
        bytes if bytes > 0 && bytes % 512 == 0 => Ok(bytes),
        _ => Err(format!(
            "block size '{v}' must be a positive multiple of 512 bytes (elevator works in 512-byte sectors)"
        )),
    }
}

/// A size in bytes or `N%` with `min_percent..=100`; 0% is 0 bytes.
fn amount(v: &str, min_percent: u32) -> Result<Amount, String> {
    if let Some(number) = v.strip_suffix('%') {
        let n = int_in(number, min_percent, 100).map_err(|e| format!("percentage '{v}': {e}"))?;
        return Ok(match n {
            0 => Amount::Bytes(0),
            p => Amount::Percent(u8::try_from(p).unwrap_or(100)),
        });
    }
    match size(v)? {
        0 if min_percent > 0 => {
            Err("must be greater than 0 (leave it out for the whole file)".into())
        }
        bytes => Ok(Amount::Bytes(bytes)),
    }
}

/// A size: digits, then optionally k/m/g/t followed by nothing, `i`, `b` or
/// `ib` (any case). All powers of 1024, as fio's default `kb_base=1024`.
fn size(v: &str) -> Result<u64, String> {
    let (n, suffix) = leading_number(v, "size")?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "ki" | "kb" | "kib" => 10,
        "m" | "mi" | "mb" | "mib" => 20,
        "g" | "gi" | "gb" | "gib" => 30,
        "t" | "ti" | "tb" | "tib" => 40,
        _ => {
            return Err(format!(
                "'{v}': unknown size suffix '{suffix}' (use k, m, g or t, optionally followed by \
                 i, b or ib; all powers of 1024)"
            ));
        }
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("size '{v}' is too large"))
}

/// A time in nanoseconds; a bare number is in units of `default`.
fn time(v: &str, default: Nanos) -> Result<Nanos, String> {
    let (n, unit) = leading_number(v, "time")?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" => default,
        "ns" => 1,
        "us" | "usec" => MICROSECOND,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => SECOND,
        "m" | "min" => 60 * SECOND,
        "h" | "hour" => 3600 * SECOND,
        _ => {
            return Err(format!(
                "'{v}': unknown time unit '{unit}' (use ns, us, ms, s, m or h)"
            ));
        }
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("time '{v}' is too large"))
}

fn percent(v: &str) -> Result<u8, String> {
    let n = int_in(v, 0, 100)?;
    u8::try_from(n).map_err(|_| format!("must be between 0 and 100, got {v}"))
}

/// A whole number in `min..=max`, without units.
fn int_in(v: &str, min: u32, max: u32) -> Result<u32, String> {
    let n = whole(v, "number")?;
    match u32::try_from(n) {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("must be between {min} and {max}, got {v}")),
    }
}

/// A plain `u64` with nothing after it.
fn whole(v: &str, what: &str) -> Result<u64, String> {
    match leading_number(v, what)? {
        (n, "") => Ok(n),
        _ => Err(format!("'{v}' is not a whole number (no units here)")),
    }
}

/// The decimal digits at the start of `v` and what follows them, with clear
/// errors for the number forms fio accepts but elevator does not.
fn leading_number<'a>(v: &'a str, what: &str) -> Result<(u64, &'a str), String> {
    if v.starts_with('-') {
        return Err(format!("negative {what} '{v}' is not allowed"));
    }
    if v.starts_with("0x") || v.starts_with("0X") {
        return Err(format!(
            "'{v}': elevator does not accept hexadecimal numbers"
        ));
    }
    let end = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, rest) = v.split_at(end);
    if rest.starts_with('.') || digits.is_empty() && v.starts_with('.') {
        return Err(format!(
            "'{v}': elevator accepts whole numbers only, not decimals"
        ));
    }
    if digits.is_empty() {
        return Err(format!("'{v}' is not a {what}"));
    }
    let n = digits
        .parse()
        .map_err(|_| format!("{what} '{v}' is too large"))?;
    Ok((n, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        for (text, bytes) in [
            ("0", 0),
            ("512", 512),
            ("4k", 4096),
            ("4K", 4096),
            ("4KiB", 4096),
            ("4KB", 4096),
            ("4kb", 4096),
            ("4ki", 4096),
            ("1m", 1 << 20),
            ("2g", 2 << 30),
            ("3T", 3 << 40),
            ("7b", 7),
        ] {
            assert_eq!(size(text), Ok(bytes), "{text}");
        }
        for bad in [
            "",
            "k",
            "-4k",
            "0x10",
            "1.5m",
            ".5k",
            "4 k",
            "4p",
            "4kk",
            "4ik",
            "16777216T",
        ] {
            assert!(size(bad).is_err(), "{bad}");
        }
        assert_eq!(size("18446744073709551615"), Ok(u64::MAX));
        assert!(
            size("18446744073709551616")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn times() {
        assert_eq!(time("10", MICROSECOND), Ok(10_000));
        assert_eq!(time("10", SECOND), Ok(10 * SECOND));
        for (text, ns) in [
            ("7ns", 7),
            ("7us", 7_000),
            ("7USEC", 7_000),
            ("7ms", 7_000_000),
            ("7msec", 7_000_000),
            ("7s", 7 * SECOND),
            ("7Sec", 7 * SECOND),
            ("7m", 420 * SECOND),
            ("7min", 420 * SECOND),
            ("7h", 7 * 3600 * SECOND),
            ("7hour", 7 * 3600 * SECOND),
        ] {
            assert_eq!(time(text, SECOND), Ok(ns), "{text}");
        }
        for bad in ["", "s", "-1", "1.5s", "5d", "5 s", "0x5"] {
            assert!(time(bad, SECOND).is_err(), "{bad}");
        }
        assert!(
            time("18446744073709551615s", SECOND)
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn every_supported_option_is_handled() {
        for &name in SUPPORTED {
            let mut spec = JobSpec::new("j", 1);
            let value = match name {
                "rw" | "readwrite" => "write",
                "ioengine" | "filename" | "name" | "description" | "file_service_type" => "random",
                _ if switch(&mut spec, name).is_some() => "1",
                _ => "8",
            };
            let value = if name == "bs" || name == "blocksize" || name == "filesize" {
                "4k"
            } else {
                value
            };
            assert_eq!(apply(&mut spec, name, Some(value)), Ok(()), "{name}");
        }
        let mut spec = JobSpec::new("j", 1);
        assert!(
            apply(&mut spec, "verify", Some("md5"))
                .unwrap_err()
                .starts_with("unsupported option")
        );
    }
}

#[cfg(test)]
mod cpu_list_tests {
    use super::cpu_list;

    #[test]
    fn cpu_lists_read_as_taskset_writes_them() {
        assert_eq!(cpu_list("0-3,6"), Ok(vec![0, 1, 2, 3, 6]));
        assert_eq!(cpu_list("1,1,0"), Ok(vec![0, 1]));
        assert!(cpu_list("3-1").unwrap_err().contains("lower CPU"));
        assert!(cpu_list("x").unwrap_err().contains("not a CPU number"));
        assert!(cpu_list("2000").unwrap_err().contains("beyond"));
        assert!(cpu_list("0,").unwrap_err().contains("not a CPU number"));
    }
}
