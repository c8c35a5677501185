//! Applying one option to a [`JobSpec`]: the table's verdict first, then
//! the implemented options' values in fio's forms.

use super::table::{self, BARE, Verdict};
use super::values::{
    MICROSECOND, MILLISECOND, SECOND, boolean, float, int_in, int32, per_direction, percent, range,
    set_switch, time, whole,
};
use super::{
    Amount, Distribution, ErrorPolicy, FileService, JobSpec, RandomGenerator, RateProcess, RwMode,
    RwSequencer, ThinkBlocks, UnifiedRw, Zone, ZoneMode, engines,
};

/// The longest value an option may have, in bytes: Linux's `PATH_MAX`, the
/// longest a file name (the longest value fio's options take) can be. A
/// value in `[global]` is copied into every job: longer ones would cost
/// gigabytes over fio's 4096 jobs.
pub const MAX_VALUE_BYTES: usize = 4096;

/// The most bytes `verify_pattern` may give (fio's `MAX_PATTERN_SIZE`).
const MAX_PATTERN_BYTES: usize = 512;

/// Set option `name` (as written) to `value` on `spec`. `Ok(canonical)`
/// when accepted; the error is the message only.
pub(super) fn apply(
    spec: &mut JobSpec,
    name: &str,
    value: Option<&str>,
) -> Result<&'static str, String> {
    if let Some(v) = value
        && v.len() > MAX_VALUE_BYTES
    {
        return Err(format!(
            "its value is {} bytes long: at most {MAX_VALUE_BYTES} (PATH_MAX, the longest a \
             file name can be)",
            v.len()
        ));
    }
    let Some((canonical, verdict)) = table::lookup(name) else {
        let hint = table::closest(name)
            .map(|c| format!(" (did you mean '{c}'?)"))
            .unwrap_or_default();
        return Err(format!("unknown option: fio has no option '{name}'{hint}"));
    };
    if value.is_none()
        && !BARE.contains(&canonical)
        && !matches!(
            canonical,
            "write_bw_log" | "write_lat_log" | "write_iops_log"
        )
    {
        return Err(format!("needs a value: write {name}=VALUE"));
    }
    match verdict {
        Verdict::Implemented => implemented(spec, canonical, value.map(str::trim))?,
        Verdict::Noted(reason) => note(spec, name, reason),
        Verdict::DefaultOnly { default, reason } => {
            let given = value.map_or("1", str::trim);
            if !default.split('|').any(|d| d.eq_ignore_ascii_case(given)) {
                return Err(table::default_only_message(default, reason));
            }
            note(
                spec,
                name,
                &format!("{}: fio's default, {reason}", table::DEFAULT_NOTE),
            );
        }
        Verdict::Refused(reason) => {
            return Err(format!(
                "fio's option, but elevator does not implement it: {reason}"
            ));
        }
    }
    Ok(canonical)
}

/// Record why an accepted option changes nothing (once per name).
pub(super) fn note(spec: &mut JobSpec, name: &str, reason: &str) {
    spec.notes.retain(|(n, _)| n != name);
    spec.notes.push((name.to_string(), reason.to_string()));
}

/// A value that must be there and not empty.
fn needed<'a>(name: &str, value: Option<&'a str>) -> Result<&'a str, String> {
    match value {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("needs a value: write {name}=VALUE")),
    }
}

fn implemented(spec: &mut JobSpec, name: &str, value: Option<&str>) -> Result<(), String> {
    let kb = spec.kb_base;
    let size = |v: &str| super::values::size(v, kb);
    // Switches and log names first: they may be bare.
    match name {
        "time_based" => return set_switch(value).map(|b| spec.time_based = b),
        "stonewall" => return set_switch(value).map(|b| spec.stonewall = b),
        "new_group" => return set_switch(value).map(|b| spec.new_group = b),
        "thread" => return set_switch(value).map(|b| spec.thread = b),
        "group_reporting" => return set_switch(value).map(|b| spec.group_reporting = b),
        "bs_unaligned" => return set_switch(value).map(|b| spec.bs_unaligned = b),
        "verify_only" => return set_switch(value).map(|b| spec.verify_only = b),
        "norandommap" => return set_switch(value).map(|b| spec.randommap = !b),
        // An empty name: the job's own, filled in when the job is complete.
        "write_bw_log" => {
            spec.write_bw_log = Some(value.unwrap_or("").into());
            return Ok(());
        }
        "write_lat_log" => {
            spec.write_lat_log = Some(value.unwrap_or("").into());
            return Ok(());
        }
        "write_iops_log" => {
            spec.write_iops_log = Some(value.unwrap_or("").into());
            return Ok(());
        }
        _ => {}
    }
    if let Some(flag) = bool_field(spec, name) {
        *flag = boolean(value)?;
        return Ok(());
    }
    if name == "buffered" {
        spec.direct = !boolean(value)?;
        return Ok(());
    }
    let v = needed(name, value)?;
    match name {
        "description" => {}
        "name" => spec.name = v.to_string(),
        "wait_for" => spec.wait_for = Some(v.to_string()),
        "filename" => spec.filename = Some(filename(v)?),
        "directory" => spec.directory = Some(v.to_string()),
        "filename_format" => spec.filename_format = Some(v.to_string()),
        "nrfiles" => spec.nrfiles = int32(v, 1, 65_536)?,
        "file_service_type" => spec.file_service = file_service(v)?,
        "zonemode" => spec.zonemode = zonemode(v)?,
        "zonesize" => spec.zonesize = size(v)?,
        "zonerange" => spec.zonerange = size(v)?,
        "zoneskip" => spec.zoneskip = size(v)?,
        "rw" => {
            let (mode, nr, back) = rw_mode(v, kb)?;
            (spec.rw, spec.rw_nr, spec.rw_back) = (mode, nr, back);
        }
        "rw_sequencer" => {
            spec.rw_sequencer = match v {
                "sequential" => RwSequencer::Sequential,
                "identical" => RwSequencer::Identical,
                _ => return Err(format!("'{v}': expected sequential or identical")),
            }
        }
        "unified_rw_reporting" => {
            spec.unified_rw_reporting = match v {
                "none" | "0" => UnifiedRw::None,
                "mixed" | "1" => UnifiedRw::Mixed,
                "both" | "2" => UnifiedRw::Both,
                _ => return Err(format!("'{v}': expected none, mixed, both, 0, 1 or 2")),
            }
        }
        "randseed" => spec.randseed = Some(whole(v, "seed")?),
        "offset" => spec.offset = amount(v, 0, kb)?,
        "offset_increment" => spec.offset_increment = Some(amount(v, 0, kb)?),
        "number_ios" => spec.number_ios = size(v)?,
        "fsync" => spec.fsync = int32(v, 0, u32::MAX)?,
        "fdatasync" => spec.fdatasync = int32(v, 0, u32::MAX)?,
        "rwmixread" => spec.rwmixread = percent(v)?,
        "rwmixwrite" => spec.rwmixread = 100 - percent(v)?,
        "random_distribution" => {
            (spec.random_distribution, spec.random_center) = distribution(v, kb)?;
        }
        "random_generator" => {
            spec.random_generator = match v {
                "tausworthe" => RandomGenerator::Tausworthe,
                "lfsr" => RandomGenerator::Lfsr,
                "tausworthe64" => RandomGenerator::Tausworthe64,
                _ => return Err(format!("'{v}': expected tausworthe, lfsr or tausworthe64")),
            }
        }
        "bs" => {
            let ranged = v
                .split(',')
                .any(|p| p.trim().get(1..).is_some_and(|t| t.contains(['-', ':'])));
            if ranged {
                return Err(format!(
                    "'{v}': a range of block sizes is bsrange's (write bsrange={v}); fio would \
                     read '-' or ':' in bs as a separator of the read and write sizes"
                ));
            }
            per_direction(v, &mut spec.bs, |s| block_size(s, kb))?;
        }
        "bsrange" => {
            let mut ranges = spec.bsrange.unwrap_or(spec.bs.map(|b| (b, b)));
            per_direction(v, &mut ranges, |s| range(s, |x| block_size(x, kb)))?;
            spec.bsrange = Some(ranges);
        }
        "bssplit" => {
            let mut splits = spec
                .bssplit
                .clone()
                .unwrap_or_else(|| spec.bs.map(|b| vec![(b, 100)]));
            per_direction(v, &mut splits, |s| bssplit(s, kb))?;
            spec.bssplit = Some(splits);
        }
        "ba" => {
            let mut align = spec.blockalign.unwrap_or(spec.bs);
            per_direction(v, &mut align, |s| block_size(s, kb))?;
            spec.blockalign = Some(align);
        }
        "size" => spec.size = Some(amount(v, 1, kb)?),
        "io_size" => spec.io_size = Some(amount(v, 1, kb)?),
        "filesize" => {
            let (lo, hi) = range(v, size)?;
            if lo != hi {
                return Err(format!(
                    "'{v}': a range of file sizes is not implemented by elevator (yet); give one size"
                ));
            }
            if lo == 0 {
                return Err("must be greater than 0".into());
            }
            spec.filesize = Some(lo);
        }
        "ioengine" => {
            spec.ioengine = engines::check(v)?;
            note(spec, "ioengine", engines::BLOCK_ENGINE_NOTE);
        }
        "iodepth" => spec.iodepth = int32(v, 1, 65_536)?,
        "iodepth_batch" => spec.iodepth_batch_submit = int32(v, 0, 65_536)?,
        "iodepth_batch_complete_min" => spec.iodepth_batch_complete_min = int32(v, 0, 65_536)?,
        "iodepth_batch_complete_max" => spec.iodepth_batch_complete_max = int32(v, 0, 65_536)?,
        "iodepth_low" => spec.iodepth_low = Some(int32(v, 0, 65_536)?),
        "loops" => spec.loops = int32(v, 1, u32::MAX)?,
        "numjobs" => spec.numjobs = int32(v, 1, 4096)?,
        "startdelay" => spec.startdelay = range(v, |s| time(s, SECOND))?,
        // fio's runtime=0 means "no limit".
        "runtime" => spec.runtime = Some(time(v, SECOND)?).filter(|&ns| ns > 0),
        "ramp_time" => spec.ramp_time = time(v, SECOND)?,
        "thinktime" => spec.thinktime = time(v, MICROSECOND)?,
        "thinktime_spin" => spec.thinktime_spin = time(v, MICROSECOND)?,
        "thinktime_blocks" => spec.thinktime_blocks = int32(v, 1, u32::MAX)?,
        "thinktime_blocks_type" => {
            spec.thinktime_blocks_type = match v {
                "complete" => ThinkBlocks::Complete,
                "issue" => ThinkBlocks::Issue,
                _ => return Err(format!("'{v}': expected complete or issue")),
            }
        }
        "thinktime_iotime" => spec.thinktime_iotime = time(v, SECOND)?,
        "rate" => per_direction(v, &mut spec.rate, size)?,
        "rate_min" => per_direction(v, &mut spec.rate_min, size)?,
        "rate_iops" => per_direction(v, &mut spec.rate_iops, |s| whole(s, "rate"))?,
        "rate_iops_min" => per_direction(v, &mut spec.rate_iops_min, |s| whole(s, "rate"))?,
        "rate_process" => {
            spec.rate_process = match v {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                _ => return Err(format!("'{v}': expected linear or poisson")),
            }
        }
        "rate_cycle" => {
            let ms = int_in(v, 1, u64::MAX / MILLISECOND)?;
            spec.rate_cycle = ms * MILLISECOND;
        }
        "verify" => spec.verify = verify(v)?,
        "verify_interval" => match size(v)? {
            0 => return Err("must be greater than 0".into()),
            n => spec.verify_interval = Some(n),
        },
        "verify_pattern" => {
            let bytes = pattern(v)?;
            if bytes.len() > MAX_PATTERN_BYTES {
                return Err(format!(
                    "a pattern of {} bytes: at most {MAX_PATTERN_BYTES} (fio's limit)",
                    bytes.len()
                ));
            }
            spec.verify_pattern = Some(bytes);
        }
        "verify_backlog" => spec.verify_backlog = size(v)?,
        "cpus_allowed" => spec.cpus_allowed = Some(cpu_list(v)?),
        "log_avg_msec" => spec.log_avg_msec = whole(v, "number")?,
        "write_iolog" => spec.write_iolog = Some(v.to_string()),
        "read_iolog" => spec.read_iolog = Some(v.to_string()),
        "replay_time_scale" => spec.replay_time_scale = int32(v, 1, u32::MAX)?,
        "replay_skip" => spec.replay_skip = replay_skip(v)?,
        "percentile_list" => spec.percentile_list = Some(percentiles(v)?),
        "continue_on_error" => spec.errors.continue_on = continue_on_error(v)?,
        "ignore_error" => ignore_error(v, &mut spec.errors)?,
        "kb_base" => {
            spec.kb_base = match v {
                "1024" => 1024,
                "1000" => 1000,
                _ => return Err(format!("'{v}': expected 1024 or 1000")),
            }
        }
        _ => return Err(format!("option '{name}' is in the table but not handled")),
    }
    Ok(())
}

/// The `bool` field an option sets, if it is one.
fn bool_field<'a>(spec: &'a mut JobSpec, name: &str) -> Option<&'a mut bool> {
    Some(match name {
        "direct" => &mut spec.direct,
        "randrepeat" => &mut spec.randrepeat,
        "allrandrepeat" => &mut spec.allrandrepeat,
        "end_fsync" => &mut spec.end_fsync,
        "fill_device" => &mut spec.fill_device,
        "fsync_on_close" => &mut spec.fsync_on_close,
        "rate_ignore_thinktime" => &mut spec.rate_ignore_thinktime,
        "do_verify" => &mut spec.do_verify,
        "error_dump" => &mut spec.errors.dump,
        "verify_fatal" => &mut spec.verify_fatal,
        "per_job_logs" => &mut spec.per_job_logs,
        "log_offset" => &mut spec.log_offset,
        "replay_no_stall" => &mut spec.replay_no_stall,
        "clat_percentiles" => &mut spec.clat_percentiles,
        "lat_percentiles" => &mut spec.lat_percentiles,
        "slat_percentiles" => &mut spec.slat_percentiles,
        _ => return None,
    })
}

/// `continue_on_error`: the kinds of error a job goes on after, a bit per
/// [`ErrorKind`](super::ErrorKind) (fio's names, and 0 and 1 for none and
/// all).
fn continue_on_error(v: &str) -> Result<u8, String> {
    Ok(match v {
        "none" | "0" => 0,
        "read" => 0b001,
        "write" => 0b010,
        "io" => 0b011,
        "verify" => 0b100,
        "all" | "1" => ErrorPolicy::ALL,
        _ => {
            return Err(format!(
                "'{v}': expected none, read, write, io, verify, all, 0 or 1"
            ));
        }
    })
}

/// The most error numbers one kind of `ignore_error` lists.
const MAX_IGNORED: usize = 64;

/// `ignore_error`: up to three `:`-separated lists of errors, for reads,
/// writes and verification, the lists separated by `,`; each error a name
/// (`EIO`, `ENOSPC`) or a number (`5`; fio reads `-5` as 5 too). A kind
/// with a list goes on after the errors it lists (fio turns
/// `continue_on_error` on for it); an empty list leaves the kind as it
/// was.
fn ignore_error(v: &str, policy: &mut ErrorPolicy) -> Result<(), String> {
    let kinds: Vec<&str> = v.split(',').collect();
    if kinds.len() > 3 {
        return Err(format!(
            "'{v}': at most three lists (reads, writes, verification), separated by ','"
        ));
    }
    for (kind, list) in kinds.into_iter().enumerate() {
        let mut errors = Vec::new();
        for name in list.split(':').map(str::trim) {
            if name.is_empty() {
                // fio stops a list at its first empty entry.
                break;
            }
            let errno = if name.starts_with('E') {
                crate::errno::from_name(name).ok_or_else(|| {
                    format!(
                        "'{name}': unknown error name (write its number instead, e.g. 5 for EIO)"
                    )
                })?
            } else {
                let n = name.strip_prefix('-').unwrap_or(name);
                match int_in(n, 1, crate::errno::MAX_ERRNO as u64) {
                    Ok(e) => e as i32,
                    Err(_) => {
                        return Err(format!(
                            "'{name}': expected an error name (EIO, ENOSPC...) or a number from 1 \
                             to {}",
                            crate::errno::MAX_ERRNO
                        ));
                    }
                }
            };
            if errors.len() == MAX_IGNORED {
                return Err(format!(
                    "more than {MAX_IGNORED} errors for {}",
                    ["reads", "writes", "verification"][kind]
                ));
            }
            errors.push(errno);
        }
        if !errors.is_empty() {
            policy.continue_on |= 1 << kind;
            policy.ignore[kind] = errors;
        }
    }
    Ok(())
}

/// `replay_skip`: a comma-separated list of read, write, trim and sync.
fn replay_skip(v: &str) -> Result<u8, String> {
    use super::ReplaySkip;
    let mut bits = 0;
    for word in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        bits |= match word {
            "read" => ReplaySkip::READ,
            "write" => ReplaySkip::WRITE,
            "trim" => ReplaySkip::TRIM,
            "sync" => ReplaySkip::SYNC,
            _ => return Err(format!("'{word}': expected read, write, trim or sync")),
        };
    }
    Ok(bits)
}

/// One file name: `\:` is a colon in the name; a plain `:` separates
/// several files, which elevator does not run in one job.
fn filename(v: &str) -> Result<String, String> {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                out.push(':');
            }
            ':' => {
                return Err(format!(
                    "'{v}': fio's ':'-separated list of files shared by one job is not \
                     implemented by elevator (yet): give one file per job (write '\\:' for a \
                     colon inside a name), or use nrfiles for several files"
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// `rw` with fio's optional `:N` offset modifier.
/// `rw`: the mode, its `:N` offset modifier, and for sequential modes a
/// negative one (`read:-8k`, backwards) as bytes to move back.
fn rw_mode(v: &str, kb: u32) -> Result<(RwMode, u64, u64), String> {
    let modifier =
        |n: &str| super::values::size(n, kb).map_err(|e| format!("offset modifier after ':': {e}"));
    let (mode, nr, back) = match v.split_once(':') {
        Some((m, n)) if n.trim().is_empty() => (m, 0, 0),
        Some((m, n)) => match n.trim().strip_prefix('-') {
            Some(back) => (m, 0, modifier(back)?),
            None => (m, modifier(n)?, 0),
        },
        None => (v, 0, 0),
    };
    let mode = match mode {
        "read" => RwMode::Read,
        "write" => RwMode::Write,
        "randread" => RwMode::RandRead,
        "randwrite" => RwMode::RandWrite,
        "rw" | "readwrite" => RwMode::ReadWrite,
        "randrw" => RwMode::RandRw,
        "trim" => RwMode::Trim,
        "randtrim" => RwMode::RandTrim,
        "trimwrite" | "randtrimwrite" => {
            return Err(format!(
                "fio's '{mode}' mode is not implemented by elevator (yet)"
            ));
        }
        _ => {
            return Err(format!(
                "unknown mode '{mode}': expected read, write, randread, randwrite, rw, \
                 readwrite, randrw, trim or randtrim"
            ));
        }
    };
    if back > 0 && mode.random() {
        return Err(format!(
            "'{v}': a random mode's ':N' is a count of I/Os per new offset, not negative"
        ));
    }
    Ok((mode, nr, back))
}

/// `roundrobin`, `sequential` or `random`, optionally `:N`.
fn file_service(v: &str) -> Result<(FileService, u32), String> {
    let (kind, count) = v.split_once(':').map_or((v, None), |(k, c)| (k, Some(c)));
    let service = match kind {
        "roundrobin" => FileService::RoundRobin,
        "sequential" => FileService::Sequential,
        "random" => FileService::Random,
        "zipf" | "pareto" | "normal" | "gauss" => {
            return Err(format!(
                "file_service_type '{kind}' is fio's but not implemented by elevator (yet): \
                 use roundrobin, sequential or random"
            ));
        }
        _ => {
            return Err(format!(
                "unknown file_service_type '{kind}': expected roundrobin, sequential or \
                 random, optionally followed by :N"
            ));
        }
    };
    let count = match count {
        Some(c) => int32(c, 1, u32::MAX).map_err(|e| format!("count after ':': {e}"))?,
        None => 1,
    };
    Ok((service, count))
}

fn zonemode(v: &str) -> Result<ZoneMode, String> {
    match v {
        "none" => Ok(ZoneMode::None),
        "strided" => Ok(ZoneMode::Strided),
        "zbd" => Err(
            "zonemode=zbd is fio's but not implemented by elevator (yet): zoned block devices \
             are not modelled; zonemode=strided is"
                .into(),
        ),
        _ => Err(format!("'{v}': expected none, strided or zbd")),
    }
}

/// A block size: positive and a multiple of 512 bytes.
pub(super) fn block_size(v: &str, kb: u32) -> Result<u64, String> {
    match super::values::size(v, kb)? {
        bytes if bytes > 0 && bytes % 512 == 0 => Ok(bytes),
        _ => Err(format!(
            "block size '{v}' must be a positive multiple of 512 bytes (fio allows smaller \
             sizes for buffered I/O, but elevator's block layer works in 512-byte sectors)"
        )),
    }
}

/// A size in bytes or `N%` with `min_percent..=100`; 0% is 0 bytes.
fn amount(v: &str, min_percent: u64, kb: u32) -> Result<Amount, String> {
    if let Some(number) = v.strip_suffix('%') {
        let n = int_in(number, min_percent, 100).map_err(|e| format!("percentage '{v}': {e}"))?;
        return Ok(match u8::try_from(n) {
            Ok(0) => Amount::Bytes(0),
            Ok(p) => Amount::Percent(p),
            Err(_) => Amount::Percent(100),
        });
    }
    match super::values::size(v, kb)? {
        0 if min_percent > 0 => {
            Err("must be greater than 0 (leave it out for the whole file)".into())
        }
        bytes => Ok(Amount::Bytes(bytes)),
    }
}

/// One direction of `bssplit`: `bs/percent` joined by `:`; a missing
/// percent shares what is left evenly (the last takes the remainder).
fn bssplit(v: &str, kb: u32) -> Result<Vec<(u64, u32)>, String> {
    let mut entries: Vec<(u64, Option<u32>)> = Vec::new();
    for part in v.split(':') {
        let (bs, perc) = part.split_once('/').unwrap_or((part, ""));
        let perc = match perc.trim() {
            "" => None,
            p => Some(int32(p, 0, 100).map_err(|e| format!("percentage in '{part}': {e}"))?),
        };
        entries.push((block_size(bs.trim(), kb)?, perc));
    }
    if entries.len() > 64 {
        return Err(format!(
            "'{v}': at most 64 block sizes per direction (fio's limit)"
        ));
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = u32::try_from(entries.iter().filter(|e| e.1.is_none()).count()).unwrap_or(0);
    if given > 100 {
        return Err(format!(
            "'{v}': the percentages add up to {given}, more than 100"
        ));
    }
    if missing == 0 && given != 100 {
        return Err(format!(
            "'{v}': the percentages add up to {given}, not 100 (leave one blank, as in 4k/, \
             for fio to fill in the rest)"
        ));
    }
    let mut left = 100 - given;
    let mut slots = missing;
    Ok(entries
        .into_iter()
        .map(|(bs, p)| {
            let p = p.unwrap_or_else(|| {
                let share = if slots == 1 {
                    left
                } else {
                    left / slots.max(1)
                };
                left -= share;
                slots -= 1;
                share
            });
            (bs, p)
        })
        .collect())
}

/// `random_distribution` and its optional centre.
fn distribution(v: &str, kb: u32) -> Result<(Distribution, Option<f64>), String> {
    let (kind, rest) = v.split_once(':').unwrap_or((v, ""));
    let params = |default: f64| -> Result<(f64, Option<f64>), String> {
        let mut it = rest.split(':').filter(|s| !s.is_empty());
        let value = it.next().map_or(Ok(default), float)?;
        let center = it.next().map(float).transpose()?;
        if it.next().is_some() {
            return Err(format!("'{v}': at most two numbers after '{kind}'"));
        }
        if center.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
            return Err(format!("'{v}': the centre must be between 0 and 1"));
        }
        Ok((value, center))
    };
    if rest.contains(',') && !kind.starts_with("zoned") {
        return Err(format!(
            "'{v}': per-direction values (with ',') are for zoned and zoned_abs only, as in fio"
        ));
    }
    Ok(match kind {
        "random" if rest.is_empty() => (Distribution::Random, None),
        "zipf" => {
            let (theta, c) = params(1.1)?;
            if theta <= 0.0 || theta == 1.0 {
                return Err(format!("'{v}': zipf theta must be above 0 and not 1.0"));
            }
            (Distribution::Zipf(theta), c)
        }
        "pareto" => {
            let (h, c) = params(0.2)?;
            if !(h > 0.0 && h < 1.0) {
                return Err(format!(
                    "'{v}': pareto power must be between 0 and 1 (exclusive)"
                ));
            }
            (Distribution::Pareto(h), c)
        }
        "normal" => {
            let (dev, c) = params(0.0)?;
            if !(0.0..100.0).contains(&dev) {
                return Err(format!(
                    "'{v}': normal deviation must be at least 0 and below 100"
                ));
            }
            (Distribution::Normal(dev), c)
        }
        "zoned" | "zoned_abs" => {
            let absolute = kind == "zoned_abs";
            let mut dirs: [Vec<Zone>; 3] = Default::default();
            per_direction(rest, &mut dirs, |s| zones(s, absolute, kb))?;
            (Distribution::Zoned { dirs, absolute }, None)
        }
        _ => {
            return Err(format!(
                "'{v}': expected random, zipf[:theta], pareto[:h], normal[:dev], \
                 zoned:A/S[:A/S...] or zoned_abs:A/SIZE[:A/SIZE...]"
            ));
        }
    })
}

/// One direction of a zoned distribution: `access/size` joined by `:`.
fn zones(v: &str, absolute: bool, kb: u32) -> Result<Vec<Zone>, String> {
    let mut out = Vec::new();
    let parts: Vec<&str> = v.split(':').filter(|p| !p.is_empty()).collect();
    for (i, &part) in parts.iter().enumerate() {
        let Some((access, size)) = part.split_once('/') else {
            return Err(format!("zone '{part}': write ACCESS%/SIZE, e.g. 60/10"));
        };
        let access = float(access)?;
        // fio reads a last `zoned` zone with no size (`20/`) as the rest of
        // the file (checked against fio 3.33's offsets).
        let size = if size.is_empty() && !absolute && i + 1 == parts.len() {
            100.0 - out.iter().map(|z: &Zone| z.size).sum::<f64>()
        } else if absolute {
            super::values::size(size, kb)? as f64
        } else {
            float(size)?
        };
        if !(0.0..=100.0).contains(&access) || !absolute && !(0.0..=100.0).contains(&size) {
            return Err(format!("zone '{part}': percentages are between 0 and 100"));
        }
        out.push(Zone { access, size });
    }
    if out.is_empty() || out.len() > 256 {
        return Err(format!("'{v}': between 1 and 256 zones"));
    }
    let access: f64 = out.iter().map(|z| z.access).sum();
    if (access - 100.0).abs() > 1e-9 {
        return Err(format!(
            "'{v}': the access percentages add up to {access}, not 100"
        ));
    }
    let size: f64 = out.iter().map(|z| z.size).sum();
    if !absolute && size > 100.0 + 1e-9 {
        return Err(format!(
            "'{v}': the zone sizes add up to {size}%, more than 100"
        ));
    }
    Ok(out)
}

/// `verify`'s method: fio's names, `None` for no verification.
fn verify(v: &str) -> Result<Option<String>, String> {
    Ok(Some(match v {
        "0" | "null" => return Ok(None),
        "crc32c" | "crc32c-intel" => "crc32c".into(),
        "md5" | "sha256" | "xxhash" | "pattern" | "meta" => v.into(),
        "crc64" | "crc32" | "crc16" | "crc7" | "sha1" | "sha512" | "sha3-224" | "sha3-256"
        | "sha3-384" | "sha3-512" => {
            return Err(format!(
                "verify={v} is fio's but not implemented by elevator (yet): elevator verifies \
                 with crc32c, md5, sha256, xxhash, pattern or meta"
            ));
        }
        _ => {
            return Err(format!(
                "unknown verify method '{v}' (elevator verifies with crc32c, md5, sha256, \
                 xxhash, pattern or meta; 0 or null for none)"
            ));
        }
    }))
}

/// `verify_pattern`: `0xHEX`, `"text"` or a decimal number (its 1 to 8
/// bytes, least significant first).
fn pattern(v: &str) -> Result<Vec<u8>, String> {
    if v.contains('%') {
        return Err(format!(
            "'{v}': fio's %o (offset) patterns are not implemented by elevator (yet)"
        ));
    }
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("'{v}' is not a hexadecimal pattern"));
        }
        let padded = if hex.len() % 2 == 1 {
            format!("0{hex}")
        } else {
            hex.to_string()
        };
        return (0..padded.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&padded[i..i + 2], 16).map_err(|e| e.to_string()))
            .collect();
    }
    if let Some(text) = v.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        if text.is_empty() {
            return Err("an empty pattern".into());
        }
        return Ok(text.as_bytes().to_vec());
    }
    let n = whole(v, "pattern").map_err(|_| {
        format!("'{v}': expected 0xHEX, \"text\" or a decimal number (fio's forms)")
    })?;
    let width = (8 - n.leading_zeros() as usize / 8).max(1);
    Ok(n.to_le_bytes()[..width].to_vec())
}

/// `percentile_list`: up to 20 numbers in 0..=100, `:` between them.
fn percentiles(v: &str) -> Result<Vec<f64>, String> {
    let list = v
        .split(':')
        .map(|p| match float(p)? {
            x if (0.0..=100.0).contains(&x) => Ok(x),
            x => Err(format!("percentile {x} is not between 0 and 100")),
        })
        .collect::<Result<Vec<f64>, String>>()?;
    if list.len() > 20 {
        return Err(format!("{} percentiles: fio takes at most 20", list.len()));
    }
    Ok(list)
}

/// The most CPU numbers `cpus_allowed` takes (Linux's `CPU_SETSIZE`).
const MAX_CPUS: u32 = 1024;

/// A CPU list as fio and `taskset -c` write it: `0-3,6`.
pub(super) fn cpu_list(v: &str) -> Result<Vec<u32>, String> {
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

#[cfg(test)]
mod tests {
    use super::{bssplit, cpu_list, filename, pattern};

    #[test]
    fn cpu_lists_read_as_taskset_writes_them() {
        assert_eq!(cpu_list("0-3,6"), Ok(vec![0, 1, 2, 3, 6]));
        assert_eq!(cpu_list("1,1,0"), Ok(vec![0, 1]));
        assert!(cpu_list("3-1").unwrap_err().contains("lower CPU"));
        assert!(cpu_list("x").unwrap_err().contains("not a CPU number"));
        assert!(cpu_list("2000").unwrap_err().contains("beyond"));
        assert!(cpu_list("0,").unwrap_err().contains("not a CPU number"));
    }

    #[test]
    fn bssplit_fills_missing_shares() {
        assert_eq!(bssplit("4k", 1024), Ok(vec![(4096, 100)]));
        assert_eq!(
            bssplit("4k/:8k/:16k/", 1024),
            Ok(vec![(4096, 33), (8192, 33), (16384, 34)])
        );
        assert!(bssplit("4k/101", 1024).is_err());
    }

    #[test]
    fn filenames_and_patterns() {
        assert_eq!(filename("a\\:b\\:c"), Ok("a:b:c".to_string()));
        assert_eq!(filename("a\\b"), Ok("a\\b".to_string()));
        assert!(filename("a:b").is_err());
        assert_eq!(pattern("0"), Ok(vec![0]));
        assert_eq!(pattern("0x1"), Ok(vec![1]));
        assert!(pattern("\"\"").is_err());
    }
}
