//! Applying one option to a [`JobSpec`]: the table's verdict first, then
//! fio's value forms that the implemented options' rows read.

use super::option::{self, Store, Verdict};
use super::values::{
    SECOND, boolean, float, int_in, int32, per_direction, range, set_switch, size, time, whole,
};
use super::{
    Amount, CmdprioSplit, Distribution, ErrorPolicy, ExitWhat, FileService, JobSpec, MemPolicy,
    NumaNodes, RandomGenerator, RateProcess, RwMode, RwSequencer, ThinkBlocks, UnifiedRw, Zone,
    ZoneMode,
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
    let Some(option) = option::lookup(name) else {
        let hint = option::closest(name)
            .map(|c| format!(" (did you mean '{c}'?)"))
            .unwrap_or_default();
        return Err(format!("unknown option: fio has no option '{name}'{hint}"));
    };
    let canonical = option.name;
    if value.is_none() && !option.bare {
        return Err(format!("needs a value: write {name}=VALUE"));
    }
    match option.verdict {
        Verdict::Implemented => {
            let value = value.map(str::trim);
            match option.store {
                Store::Switch(store) => store(spec, set_switch(value)?),
                Store::Bool(store) => store(spec, boolean(value)?),
                // An empty name: the job's own, filled in when the job is complete.
                Store::Log(field) => *field(spec) = Some(value.unwrap_or("").into()),
                Store::Value(store) => store(spec, needed(canonical, value)?)?,
                Store::Nowhere => {
                    return Err(format!(
                        "option '{canonical}' is in the table but not handled"
                    ));
                }
            }
        }
        Verdict::Noted(reason) => note(spec, name, reason),
        Verdict::DefaultOnly { default, reason } => {
            let given = value.map_or("1", str::trim);
            if !default.split('|').any(|d| d.eq_ignore_ascii_case(given)) {
                return Err(format!(
                    "fio's option, but elevator does not implement it (yet) beyond fio's default \
                     ({}): {reason}",
                    default.replace('|', " or ")
                ));
            }
            note(
                spec,
                name,
                &format!("only fio's default is supported: fio's default, {reason}"),
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

/// One of a few keywords, each with the value it stands for; the error
/// lists what is `expected`.
pub(super) fn choice<T: Copy>(v: &str, words: &[(&str, T)], expected: &str) -> Result<T, String> {
    words
        .iter()
        .find(|(w, _)| *w == v)
        .map(|&(_, t)| t)
        .ok_or_else(|| format!("'{v}': expected {expected}"))
}

/// `rw_sequencer`'s keywords.
pub(super) const RW_SEQUENCERS: &[(&str, RwSequencer)] = &[
    ("sequential", RwSequencer::Sequential),
    ("identical", RwSequencer::Identical),
];

/// `unified_rw_reporting`'s keywords.
pub(super) const UNIFIED_RW: &[(&str, UnifiedRw)] = &[
    ("none", UnifiedRw::None),
    ("0", UnifiedRw::None),
    ("mixed", UnifiedRw::Mixed),
    ("1", UnifiedRw::Mixed),
    ("both", UnifiedRw::Both),
    ("2", UnifiedRw::Both),
];

/// `random_generator`'s keywords.
pub(super) const GENERATORS: &[(&str, RandomGenerator)] = &[
    ("tausworthe", RandomGenerator::Tausworthe),
    ("lfsr", RandomGenerator::Lfsr),
    ("tausworthe64", RandomGenerator::Tausworthe64),
];

/// `thinktime_blocks_type`'s keywords.
pub(super) const THINK_BLOCKS: &[(&str, ThinkBlocks)] = &[
    ("complete", ThinkBlocks::Complete),
    ("issue", ThinkBlocks::Issue),
];

/// `rate_process`'s keywords.
pub(super) const RATE_PROCESSES: &[(&str, RateProcess)] = &[
    ("linear", RateProcess::Linear),
    ("poisson", RateProcess::Poisson),
];

/// `exit_what`'s keywords (issue 29).
pub(super) const EXIT_WHATS: &[(&str, ExitWhat)] = &[
    ("group", ExitWhat::Group),
    ("stonewall", ExitWhat::Stonewall),
    ("all", ExitWhat::All),
];

/// `kb_base`'s values.
pub(super) const KB_BASES: &[(&str, u32)] = &[("1024", 1024), ("1000", 1000)];

/// `bs`: one size per direction (a range is `bsrange`'s).
pub(super) fn store_bs(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let kb = spec.kb_base;
    let ranged = v
        .split(',')
        .any(|p| p.trim().get(1..).is_some_and(|t| t.contains(['-', ':'])));
    if ranged {
        return Err(format!(
            "'{v}': a range of block sizes is bsrange's (write bsrange={v}); fio would \
             read '-' or ':' in bs as a separator of the read and write sizes"
        ));
    }
    per_direction(v, &mut spec.bs, |s| block_size(s, kb))
}

/// `bsrange`, starting from `bs` in the directions it leaves out.
pub(super) fn store_bsrange(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let kb = spec.kb_base;
    let mut ranges = spec.bsrange.unwrap_or(spec.bs.map(|b| (b, b)));
    per_direction(v, &mut ranges, |s| range(s, |x| block_size(x, kb)))?;
    spec.bsrange = Some(ranges);
    Ok(())
}

/// `bssplit`, starting from `bs` in the directions it leaves out.
pub(super) fn store_bssplit(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let kb = spec.kb_base;
    let mut splits = spec
        .bssplit
        .clone()
        .unwrap_or_else(|| spec.bs.map(|b| vec![(b, 100)]));
    per_direction(v, &mut splits, |s| bssplit(s, kb))?;
    spec.bssplit = Some(splits);
    Ok(())
}

/// `ba` (`blockalign`), starting from `bs` in the directions it leaves out.
pub(super) fn store_blockalign(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let kb = spec.kb_base;
    let mut align = spec.blockalign.unwrap_or(spec.bs);
    per_direction(v, &mut align, |s| block_size(s, kb))?;
    spec.blockalign = Some(align);
    Ok(())
}

/// `filesize`: one size above 0, or a range `LO-HI` (each file's size
/// drawn in it).
pub(super) fn store_filesize(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let kb = spec.kb_base;
    let (lo, hi) = range(v, |s| size(s, kb))?;
    if lo == 0 {
        return Err("must be greater than 0".into());
    }
    spec.filesize = Some(lo);
    spec.filesize_max = (hi > lo).then_some(hi);
    Ok(())
}

/// `verify_interval`: a size above 0.
pub(super) fn store_verify_interval(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    match size(v, spec.kb_base)? {
        0 => Err("must be greater than 0".into()),
        n => {
            spec.verify_interval = Some(n);
            Ok(())
        }
    }
}

/// `verify_pattern`: at most fio's 512 bytes.
pub(super) fn store_verify_pattern(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let bytes = pattern(v)?;
    if bytes.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "a pattern of {} bytes: at most {MAX_PATTERN_BYTES} (fio's limit)",
            bytes.len()
        ));
    }
    spec.verify_pattern = Some(bytes);
    Ok(())
}

/// `continue_on_error`: the kinds of error a job goes on after, a bit per
/// [`ErrorKind`](super::ErrorKind) (fio's names, and 0 and 1 for none and
/// all).
pub(super) fn continue_on_error(v: &str) -> Result<u8, String> {
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
pub(super) fn ignore_error(v: &str, policy: &mut ErrorPolicy) -> Result<(), String> {
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
pub(super) fn replay_skip(v: &str) -> Result<u8, String> {
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

/// `filename`'s list of names: a plain `:` separates files, `\:` is a
/// colon in a name (as fio reads it: `a:b\:c` is `a` and `b:c`). An
/// empty name ends the list, as in fio; the first must not be empty.
pub(super) fn filenames(v: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars().peekable();
    loop {
        match chars.next() {
            Some('\\') if chars.peek() == Some(&':') => {
                chars.next();
                out.push(':');
            }
            Some(':') | None => {
                let name = out.trim();
                if name.is_empty() {
                    break;
                }
                names.push(name.to_string());
                out.clear();
                if chars.peek().is_none() {
                    break;
                }
            }
            Some(c) => out.push(c),
        }
    }
    if names.is_empty() {
        return Err(format!("'{v}': no file name"));
    }
    if names.len() > 65_536 {
        return Err(format!(
            "'{v}': {} files, at most 65536 (nrfiles' limit)",
            names.len()
        ));
    }
    let devices = names.iter().filter(|n| n.starts_with("/dev/")).count();
    if devices > 0 && names.len() > 1 {
        return Err(format!(
            "'{v}': several files of which {devices} under /dev/: elevator runs a job on one \
             device (the run's --device), so a job's list of files cannot name devices; give \
             one device per job (or files, which elevator lays out on the device)"
        ));
    }
    Ok(names)
}

/// `filename`: its files ([`filenames`]); `nrfiles` becomes their count
/// (a later `nrfiles` may lower it, as in fio).
pub(super) fn store_filename(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let names = filenames(v)?;
    spec.nrfiles = u32::try_from(names.len()).unwrap_or(u32::MAX);
    spec.filename = names.first().cloned();
    spec.filenames = names;
    Ok(())
}

/// `rw` with fio's optional `:N` offset modifier.
/// `rw`: the mode, its `:N` offset modifier, and for sequential modes a
/// negative one (`read:-8k`, backwards) as bytes to move back.
pub(super) fn rw_mode(v: &str, kb: u32) -> Result<(RwMode, u64, u64), String> {
    let modifier = |n: &str| size(n, kb).map_err(|e| format!("offset modifier after ':': {e}"));
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
        "trimwrite" => RwMode::TrimWrite,
        "randtrimwrite" => RwMode::RandTrimWrite,
        _ => {
            return Err(format!(
                "unknown mode '{mode}': expected read, write, randread, randwrite, rw, \
                 readwrite, randrw, trim, randtrim, trimwrite or randtrimwrite"
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

/// `roundrobin`, `sequential` or `random`, optionally `:N` (I/Os before
/// the next file); or `zipf`, `pareto`, `normal`/`gauss`, optionally
/// `:PARAM[:CENTRE]` (a file drawn at every I/O, as fio).
pub(super) fn store_file_service(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let (kind, rest) = v.split_once(':').map_or((v, None), |(k, c)| (k, Some(c)));
    let service = match kind {
        "roundrobin" => FileService::RoundRobin,
        "sequential" => FileService::Sequential,
        "random" => FileService::Random,
        "zipf" => FileService::Zipf,
        "pareto" => FileService::Pareto,
        "normal" | "gauss" => FileService::Normal,
        _ => {
            return Err(format!(
                "unknown file_service_type '{kind}': expected roundrobin, sequential or \
                 random, optionally followed by :N, or zipf, pareto, normal or gauss, \
                 optionally followed by :PARAMETER"
            ));
        }
    };
    if matches!(
        service,
        FileService::RoundRobin | FileService::Sequential | FileService::Random
    ) {
        let count = match rest {
            Some(c) => int32(c, 1, u32::MAX).map_err(|e| format!("count after ':': {e}"))?,
            None => 1,
        };
        spec.file_service = (service, count);
        return Ok(());
    }
    // The same numbers as random_distribution's (defaults 1.1, 0.2, 0):
    // checked by it.
    let spelled = match rest {
        Some(r) => format!("{}:{r}", if kind == "gauss" { "normal" } else { kind }),
        None => kind.replace("gauss", "normal"),
    };
    let (dist, centre) = distribution(&spelled, spec.kb_base)?;
    let param = match dist {
        Distribution::Zipf(x) | Distribution::Pareto(x) | Distribution::Normal(x) => x,
        _ => 0.0,
    };
    spec.file_service = (service, 1);
    spec.file_service_param = (param, centre);
    Ok(())
}

pub(super) fn zonemode(v: &str) -> Result<ZoneMode, String> {
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
    match size(v, kb)? {
        bytes if bytes > 0 && bytes % 512 == 0 => Ok(bytes),
        _ => Err(format!(
            "block size '{v}' must be a positive multiple of 512 bytes (fio allows smaller \
             sizes for buffered I/O, but elevator's block layer works in 512-byte sectors)"
        )),
    }
}

/// A size in bytes or `N%` with `min_percent..=100`; 0% is 0 bytes.
pub(super) fn amount(v: &str, min_percent: u64, kb: u32) -> Result<Amount, String> {
    if let Some(number) = v.strip_suffix('%') {
        let n = int_in(number, min_percent, 100).map_err(|e| format!("percentage '{v}': {e}"))?;
        return Ok(match u8::try_from(n) {
            Ok(0) => Amount::Bytes(0),
            Ok(p) => Amount::Percent(p),
            Err(_) => Amount::Percent(100),
        });
    }
    match size(v, kb)? {
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
pub(super) fn distribution(v: &str, kb: u32) -> Result<(Distribution, Option<f64>), String> {
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

/// `verify`'s method: fio's names, `None` for no verification; the one
/// fio method elevator does not implement (`pattern_no_hdr`) is refused by
/// name, with why.
pub(super) fn verify(v: &str) -> Result<Option<String>, String> {
    Ok(crate::verify::VerifyKind::parse_option(v)?.map(|kind| kind.name().to_string()))
}

/// `buffer_pattern`: the same forms as `verify_pattern`, at most fio's
/// pattern length.
pub(super) fn buffer_pattern(v: &str) -> Result<Vec<u8>, String> {
    let bytes = pattern(v)?;
    if bytes.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "a pattern of {} bytes: at most {MAX_PATTERN_BYTES} (fio's limit)",
            bytes.len()
        ));
    }
    Ok(bytes)
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
pub(super) fn percentiles(v: &str) -> Result<Vec<f64>, String> {
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

/// `numa_cpu_nodes` and the nodes of `numa_mem_policy`: `all`, or nodes
/// and ranges as `numactl` writes them (`0-1,3`).
pub(super) fn numa_nodes(v: &str) -> Result<NumaNodes, String> {
    if v.trim() == "all" {
        return Ok(NumaNodes::All);
    }
    cpu_list(v)
        .map(NumaNodes::List)
        .map_err(|_| format!("'{v}': expected all, or node numbers and ranges such as 0-1,3"))
}

/// `numa_mem_policy`: `default`, `prefer:N` (one node), `bind:NODES`,
/// `interleave[:NODES]` or `local`, with fio's rules on the node list.
pub(super) fn mem_policy(v: &str) -> Result<MemPolicy, String> {
    let (mode, nodes) = match v.split_once(':') {
        Some((m, n)) => (m, Some(n)),
        None => (v, None),
    };
    Ok(match (mode, nodes) {
        ("default", None) => MemPolicy::Default,
        ("local", None) => MemPolicy::Local,
        ("default" | "local", Some(_)) => {
            return Err(format!("'{v}': {mode} takes no node list"));
        }
        ("prefer", Some(n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            MemPolicy::Prefer(int_in(n, 0, 1023)? as u32)
        }
        ("prefer", _) => return Err(format!("'{v}': prefer takes one node (prefer:0)")),
        ("bind", Some(n)) => MemPolicy::Bind(numa_nodes(n)?),
        ("bind", None) => return Err(format!("'{v}': bind needs a node list (bind:0-1)")),
        ("interleave", n) => MemPolicy::Interleave(n.map_or(Ok(NumaNodes::All), numa_nodes)?),
        _ => {
            return Err(format!(
                "'{v}': expected default, prefer:N, bind:NODES, interleave[:NODES] or local"
            ));
        }
    })
}

/// Why `numa_cpu_nodes` is noted.
pub(super) const NUMA_CPU_NOTE: &str = "on a real device each of the job's threads runs on the     CPUs of these nodes (read from /sys/devices/system/node); a simulation has no CPUs to place";

/// Why `numa_mem_policy` is noted.
pub(super) const NUMA_MEM_NOTE: &str = "checked, not set: elevator allocates a job's buffers on     its own thread once numa_cpu_nodes has placed it, so the kernel's default (local) policy puts     them on those nodes; a simulation has no memory to place";

/// The longest steady-state window `ss_dur` takes, in seconds (a day: the
/// samples are kept for it).
pub(super) const MAX_SS_DUR: u64 = 86_400;

/// `steadystate` / `ss`: `iops`, `iops_slope`, `bw` or `bw_slope`, `:`,
/// and the limit: a percentage (`10%`), else a number of IOPS or a
/// bandwidth (`10m`, bytes/s).
pub(super) fn store_steadystate(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let Some((criterion, limit)) = v.split_once(':') else {
        return Err(format!(
            "'{v}': the limit must follow the criterion (e.g. ss=iops:10% or ss=bw_slope:1%)"
        ));
    };
    let (iops, slope) = match criterion.trim() {
        "iops" => (true, false),
        "iops_slope" => (true, true),
        "bw" => (false, false),
        "bw_slope" => (false, true),
        _ => {
            return Err(format!(
                "'{criterion}': expected iops, iops_slope, bw or bw_slope"
            ));
        }
    };
    let (limit, percent) = match limit.trim().strip_suffix('%') {
        Some(p) => (float(p)?, true),
        None if iops => (float(limit)?, false),
        None => (size(limit, spec.kb_base)? as f64, false),
    };
    if limit < 0.0 {
        return Err(format!("'{v}': the limit cannot be negative"));
    }
    let s = &mut spec.steadystate;
    (s.iops, s.slope, s.limit, s.percent) = (iops, slope, limit, percent);
    Ok(())
}

/// `steadystate_duration` / `ss_dur`: a time (seconds by default), kept
/// in whole seconds as fio keeps it.
pub(super) fn store_ss_dur(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let secs = time(v, SECOND)? / SECOND;
    if secs > MAX_SS_DUR {
        return Err(format!(
            "'{v}': at most {MAX_SS_DUR} s (elevator keeps every sample of the window)"
        ));
    }
    spec.steadystate.dur = secs as u32;
    Ok(())
}

/// `latency_percentile`: a percentage, 0 to 100.
pub(super) fn latency_percentile(v: &str) -> Result<f64, String> {
    match float(v)? {
        p if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("'{v}': a percentage from 0 to 100")),
    }
}

// I/O priorities and flows (issue 29).

/// `cmdprio_bssplit`: per direction (reads, writes; trims ignored, as
/// fio), `bs/percent` or `bs/percent/class/level` entries joined by `:`.
/// Entries of 0 percent are dropped; the percentages of one block size
/// may not add up to more than 100.
pub(super) fn store_cmdprio_bssplit(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    let kb = spec.kb_base;
    let mut splits: [Vec<CmdprioSplit>; 3] = Default::default();
    per_direction(v, &mut splits, |s| cmdprio_split(s, kb))?;
    splits[2].clear();
    spec.cmdprio_bssplit = Some(splits);
    Ok(())
}

fn cmdprio_split(v: &str, kb: u32) -> Result<Vec<CmdprioSplit>, String> {
    let mut out: Vec<CmdprioSplit> = Vec::new();
    for part in v.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let fields: Vec<&str> = part.split('/').map(str::trim).collect();
        let (bs, percent, prio) = match fields.as_slice() {
            [bs, p] => (bs, p, None),
            [bs, p, class, level] => {
                let class = int_in(class, 0, 3).map_err(|e| format!("class in '{part}': {e}"))?;
                let level = int_in(level, 0, 7).map_err(|e| format!("level in '{part}': {e}"))?;
                (bs, p, Some((class as u8, level as u8)))
            }
            _ => {
                return Err(format!(
                    "'{part}': expected blocksize/percentage or \
                     blocksize/percentage/class/level"
                ));
            }
        };
        let percent =
            super::values::percent(percent).map_err(|e| format!("percentage in '{part}': {e}"))?;
        let bs = block_size(bs, kb)?;
        if percent > 0 {
            out.push(CmdprioSplit { bs, percent, prio });
        }
    }
    if out.len() > 64 {
        return Err(format!(
            "'{v}': at most 64 entries per direction (fio's limit)"
        ));
    }
    out.sort_by_key(|e| e.bs);
    for e in &out {
        let total: u32 = out
            .iter()
            .filter(|o| o.bs == e.bs)
            .map(|o| u32::from(o.percent))
            .sum();
        if total > 100 {
            return Err(format!(
                "'{v}': the percentages for block size {} add up to {total}, more than 100",
                e.bs
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{bssplit, cpu_list, filenames, pattern};

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
        assert_eq!(filenames("a\\:b\\:c"), Ok(vec!["a:b:c".to_string()]));
        assert_eq!(filenames("a\\b"), Ok(vec!["a\\b".to_string()]));
        assert_eq!(
            filenames("a:b\\:c: d :"),
            Ok(vec!["a".to_string(), "b:c".to_string(), "d".to_string()])
        );
        assert!(filenames(":a").is_err());
        assert!(filenames("/dev/sdb:/dev/sdc").is_err());
        assert_eq!(pattern("0"), Ok(vec![0]));
        assert_eq!(pattern("0x1"), Ok(vec![1]));
        assert!(pattern("\"\"").is_err());
    }
}
