//! Where each job's files live on a simulated device.
//!
//! Like a fresh file system that allocates files one after another: every
//! file is one contiguous extent, aligned to 1 MiB, placed in the order jobs
//! and their clones appear, from the start of the device (job 1's clone 0's
//! files, then its clone 1's, then job 2's...).
//!
//! Files have names, as fio gives them: `filename` when set (its
//! `:`-separated list, `\:` a colon in a name; `nrfiles` is capped at the
//! names listed, as fio caps it), else `filename_format` (default
//! `$jobname.$jobnum.$filenum`: `$jobnum` is the clone's number within its
//! job, `$filenum` the file's; `$clientuid` is empty, as in fio outside
//! client/server mode), under `directory` unless the name is absolute
//! (`directory=a:b`: clone k's generated files in entry k (mod their count) of the
//! list, files `filename` lists in the first, as fio).
//! Files with the same name are one file, laid out where it first appears
//! (so `filename=shared`, or a format without `$jobnum`, shares it between
//! clones and jobs). A name under `/dev/` is the raw device: one extent from
//! its start, as fio does I/O on a device.
//!
//! Regions follow fio (measured with fio 3.33 on real files):
//!
//! - A created file's I/O region is `size / nrfiles` bytes (a percentage:
//!   of the device) from its start offset, and the file ends where the
//!   region does (fio creates files of `offset` plus `size` bytes). With
//!   `filesize`, the file has that size (`filesize=LO-HI`: each file's
//!   drawn uniformly in `[LO, HI)`, a multiple of the smallest block size,
//!   as fio draws it; the same sizes every run) and the region runs from
//!   the start offset to its end. With `fill_device`, the region is the rest of the
//!   device (fio writes until it is full). Without `size` or `filesize`, a
//!   file an earlier job laid out keeps its size, as fio reads an existing
//!   file; a job that names no file at all (no `filename`,
//!   `filename_format` or `directory`, one file) uses the whole device as
//!   a job on a raw device does, the device being the one the user named.
//! - The start offset is `offset + clone × offset_increment`; a percentage
//!   of either is of the file (of `filesize`, else of the region) and is
//!   aligned down to the smallest block size. A file shared by clones is
//!   as long as its furthest clone needs.
//! - On a raw device, the region is `size` bytes from the start offset (all
//!   the rest without `size`); percentages are of the device.
//!
//! A start that leaves no room for a block, or a file or region past the
//! device's end, is an error naming the option (`offset`,
//! `offset_increment`, `size`, `filesize`), its line and the device's size:
//! nothing is clamped. Offsets plus lengths go through
//! [`elevator_core::ByteRange`] (an end past 2^64 is an error, never a
//! wrap), as every range from outside does.

use std::collections::BTreeMap;

use elevator_core::ByteRange;

use crate::job::{Amount, JobError, JobSpec};

/// One file: a contiguous run of bytes on the device, and the region of it
/// a job clone does I/O in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// First sector.
    pub sector: u64,
    /// Length in bytes (a multiple of 512).
    pub bytes: u64,
    /// Where the clone's I/O starts in it, in bytes (its `offset` and
    /// `offset_increment`, a multiple of 512, at least one block before
    /// `end`).
    pub start: u64,
    /// Where the clone's I/O region ends, in bytes (at most `bytes`).
    pub end: u64,
}

const ALIGN: u64 = 1 << 20;

/// Hands out extents from the start of a device.
#[derive(Debug)]
pub struct Layout {
    device_bytes: u64,
    next: u64,
    shared: BTreeMap<String, Extent>,
}

impl Layout {
    /// An empty layout on a device of `device_bytes`.
    pub fn new(device_bytes: u64) -> Layout {
        Layout {
            device_bytes,
            next: 0,
            shared: BTreeMap::new(),
        }
    }

    /// The size of the device, in bytes.
    pub fn device_bytes(&self) -> u64 {
        self.device_bytes
    }

    /// The name of file `filenum` of clone `clone` of `job`.
    pub fn file_name(job: &JobSpec, clone: u32, filenum: u32) -> String {
        let listed = job
            .filenames
            .get(filenum as usize)
            .or(job.filenames.last())
            .or(job.filename.as_ref());
        let name = match listed {
            Some(f) => f.clone(),
            None => job
                .filename_format
                .as_deref()
                .unwrap_or("$jobname.$jobnum.$filenum")
                .replace("$jobname", &job.name)
                .replace("$jobnum", &clone.to_string())
                .replace("$filenum", &filenum.to_string())
                .replace("$clientuid", ""),
        };
        match &job.directory {
            Some(dirs) if !name.starts_with('/') => {
                // fio: `directory=a:b` puts clone k's generated files in
                // entry k (mod their count); files `filename` names go in the first.
                let index = if listed.is_some() { 0 } else { clone };
                let dir = directory(dirs, index);
                format!("{}/{name}", dir.trim_end_matches('/'))
            }
            _ => name,
        }
    }

    /// Whether `job` (whose first file is `first`) does its I/O on the
    /// whole device: it names no file (no `filename`, `filename_format` or
    /// `directory`), has one file, and gives no `size`, `filesize` or
    /// `fill_device`, and no earlier job laid out a file of its name. fio
    /// would create a file and need its size; here the device is the one
    /// the user named, and the job uses all of it, as fio does a job whose
    /// file is a block device.
    fn is_whole_device(&self, job: &JobSpec, first: &str) -> bool {
        job.filename.is_none()
            && job.filename_format.is_none()
            && job.directory.is_none()
            && job.nrfiles <= 1
            && job.size.is_none()
            && job.filesize.is_none()
            && !job.fill_device
            && !self.shared.contains_key(first)
    }

    /// How many files clone `clone`s of `job` have: `nrfiles`, at most as
    /// many as `filename` lists (fio caps `nrfiles` at them).
    pub fn file_count(job: &JobSpec) -> u32 {
        let n = job.nrfiles.max(1);
        match job.filenames.len() {
            0 if job.filename.is_some() => 1,
            0 => n,
            listed => n.min(u32::try_from(listed).unwrap_or(u32::MAX)),
        }
    }

    /// The files of clone `clone` of `job` (from file `path`).
    pub fn files_for(
        &mut self,
        job: &JobSpec,
        clone: u32,
        path: &str,
    ) -> Result<Vec<Extent>, JobError> {
        let err = |option: &str, message: String| JobError {
            file: path.to_string(),
            line: job.line_of(&[option]),
            option: Some(option.to_string()),
            message,
        };
        let block = job.min_bs().max(512);
        let dev = self.device_bytes;
        let amount = |a: Amount, of: u64| match a {
            Amount::Bytes(b) => b / 512 * 512,
            Amount::Percent(p) => (u128::from(of) * u128::from(p) / 100) as u64 / block * block,
        };
        // The start offset in a file (or device) of `of` bytes, and the
        // option to blame when it is too far.
        let start_in = |of: u64| -> Result<(u64, &'static str), JobError> {
            let base = amount(job.offset, of);
            let Some(inc) = job.offset_increment.map(|a| amount(a, of)) else {
                return Ok((base, "offset"));
            };
            u64::from(clone)
                .checked_mul(inc)
                .and_then(|i| base.checked_add(i))
                .map(|s| {
                    (
                        s,
                        if clone > 0 && inc > 0 {
                            "offset_increment"
                        } else {
                            "offset"
                        },
                    )
                })
                .ok_or_else(|| {
                    err(
                        "offset_increment",
                        format!(
                            "job '{}': clone {clone} would start past 2^64 bytes \
                             (offset {base} + {clone} × {inc})",
                            job.name
                        ),
                    )
                })
        };
        let first = Layout::file_name(job, clone, 0);
        if first.starts_with("/dev/") || self.is_whole_device(job, &first) {
            // fio on a raw device: I/O within `size` bytes from the start,
            // or from the start to the end.
            let (start, blame) = start_in(dev)?;
            if start.saturating_add(block) > dev {
                return Err(err(
                    blame,
                    format!(
                        "job '{}': offset {start} leaves no room for a block of {block} bytes \
                         on the device ({dev} bytes)",
                        job.name
                    ),
                ));
            }
            let end = match job.size {
                Some(Amount::Bytes(b)) => ByteRange::new(start, b)
                    .and_then(|r| r.within(dev))
                    .map(|r| r.end())
                    .map_err(|e| {
                        let base = amount(job.offset, dev);
                        let fits_alone =
                            ByteRange::new(base, b).and_then(|r| r.within(dev)).is_ok();
                        err(
                            if fits_alone { blame } else { "size" },
                            format!(
                                "job '{}': offset {start} + size {b} runs past the end of the \
                                 device ({dev} bytes): {e}",
                                job.name
                            ),
                        )
                    })?,
                Some(Amount::Percent(p)) => start.saturating_add(dev / 100 * u64::from(p)).min(dev),
                None => dev,
            };
            let end = end / 512 * 512;
            return Ok(vec![Extent {
                sector: 0,
                bytes: end,
                start,
                end,
            }]);
        }
        let n = Layout::file_count(job);
        let size_option = if job.filesize.is_some() {
            "filesize"
        } else {
            "size"
        };
        let region = match (job.filesize, job.size) {
            (Some(f), _) => f,
            // fio writes until the device is full: the rest of it.
            (None, _) if job.fill_device => {
                dev.saturating_sub(self.next.div_ceil(ALIGN) * ALIGN) / u64::from(n)
            }
            (None, Some(Amount::Bytes(s))) => s / u64::from(n),
            (None, Some(Amount::Percent(p))) => dev / 100 * u64::from(p) / u64::from(n),
            // A file an earlier job laid out keeps its size, as fio uses an
            // existing file's.
            (None, None) => match self.shared.get(&Layout::file_name(job, clone, 0)) {
                Some(e) => e.bytes,
                None if job.filename.is_none() && n > 1 => {
                    return Err(err(
                        "size",
                        format!(
                            "job '{}' creates {n} files (nrfiles={n}), so it needs size= or \
                             filesize= to share out (a job with one file and no size uses the \
                             whole device)",
                            job.name
                        ),
                    ));
                }
                None => {
                    return Err(err(
                        "size",
                        format!(
                            "job '{}' creates its file '{}', so it needs size= or filesize= \
                             (fio: \"you need to specify size=\"); a job that names no file, \
                             or names the device's own file or one under /dev/, uses the whole \
                             device",
                            job.name,
                            Layout::file_name(job, clone, 0)
                        ),
                    ));
                }
            },
        } / 512
            * 512;
        if region < block {
            return Err(err(
                size_option,
                format!("files of {region} bytes are smaller than one block of {block} bytes"),
            ));
        }
        let (start, blame) = start_in(region)?;
        // The file's length and the region's end.
        let (bytes, end) = match job.filesize {
            Some(_) => (region, region),
            None => {
                let end = ByteRange::new(start, region)
                    .map(|r| r.end())
                    .map_err(|e| {
                        err(
                            blame,
                            format!("job '{}': offset {start} + size {region}: {e}", job.name),
                        )
                    })?;
                (end, end)
            }
        };
        if start.saturating_add(block) > end.min(dev) {
            return Err(err(
                blame,
                format!(
                    "job '{}': offset {start} leaves no room for a block of {block} bytes in its \
                     files of {region} bytes (the device has {dev} bytes)",
                    job.name
                ),
            ));
        }
        let mut files = Vec::with_capacity(n as usize);
        for filenum in 0..n {
            let name = Layout::file_name(job, clone, filenum);
            let (bytes, end) = match job.filesize_max {
                Some(max) if job.filesize.is_some() => {
                    let size = drawn_size(job, &name, region, max, block);
                    if start.saturating_add(block) > size {
                        return Err(err(
                            blame,
                            format!(
                                "job '{}': offset {start} leaves no room for a block of \
                                 {block} bytes in its file '{name}' of {size} bytes",
                                job.name
                            ),
                        ));
                    }
                    (size, size)
                }
                _ => (bytes, end),
            };
            let too_big = |at: u64| {
                err(
                    if start > 0 { blame } else { size_option },
                    format!(
                        "job '{}': its file '{name}' of {bytes} bytes (offset {start} + region \
                         {}) does not fit: the device has {dev} bytes, {at} laid out so far",
                        job.name,
                        end - start
                    ),
                )
            };
            let e = match self.shared.get(&name).copied() {
                Some(e) if e.bytes >= bytes => e,
                Some(e) => {
                    // A shared file that must grow: only the last one laid
                    // out can.
                    let begin = e.sector * 512;
                    if begin + e.bytes != self.next {
                        return Err(err(
                            blame,
                            format!(
                                "job '{}': file '{name}' was laid out with {} bytes by an \
                                 earlier job; this clone needs {bytes} (other files follow it)",
                                job.name, e.bytes
                            ),
                        ));
                    }
                    let stop = ByteRange::new(begin, bytes)
                        .and_then(|r| r.within(dev))
                        .map_err(|_| too_big(self.next))?
                        .end();
                    self.next = stop;
                    Extent { bytes, ..e }
                }
                None => {
                    let begin = self.next.div_ceil(ALIGN) * ALIGN;
                    let stop = ByteRange::new(begin, bytes)
                        .and_then(|r| r.within(dev))
                        .map_err(|_| too_big(self.next))?
                        .end();
                    self.next = stop;
                    Extent {
                        sector: begin / 512,
                        bytes,
                        start: 0,
                        end: bytes,
                    }
                }
            };
            self.shared.insert(name, e);
            files.push(Extent { start, end, ..e });
        }
        Ok(files)
    }
}

/// The entry `index` (mod their count) of `directory`'s `:`-separated
/// list (`\:` is a colon in a name).
fn directory(dirs: &str, index: u32) -> String {
    let mut list: Vec<String> = vec![String::new()];
    let mut chars = dirs.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                if let Some(d) = list.last_mut() {
                    d.push(':');
                }
            }
            ':' => list.push(String::new()),
            c => {
                if let Some(d) = list.last_mut() {
                    d.push(c);
                }
            }
        }
    }
    list.retain(|d| !d.is_empty());
    match list.len() {
        0 => dirs.to_string(),
        n => list.swap_remove(index as usize % n),
    }
}

/// The size of the file named `name` for `filesize=LO-HI`: uniform in
/// `[LO, HI)`, rounded down to a multiple of the smallest block size (as
/// fio draws it), from a stream of the job's seed and the file's name: the
/// same sizes every run, and one size for a file clones share.
fn drawn_size(job: &JobSpec, name: &str, lo: u64, hi: u64, block: u64) -> u64 {
    let mut parts = vec![job.randseed.unwrap_or(0x5EED_F10F), 0xF11E_5123];
    parts.extend(name.bytes().map(u64::from));
    let mut rng = elevator_core::rng::Rng::new(super::mix(&parts));
    let size = lo + rng.below(hi.saturating_sub(lo).max(1));
    (size - size % block).max(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_one_after_another_aligned() {
        let mut l = Layout::new(1 << 30);
        let mut j = JobSpec::new("a", 1);
        j.nrfiles = 2;
        j.size = Some(Amount::Bytes(3 << 20));
        let f = l.files_for(&j, 0, "x.fio").unwrap();
        assert_eq!(
            f[0],
            Extent {
                sector: 0,
                bytes: 3 << 19,
                start: 0,
                end: 3 << 19,
            }
        );
        assert_eq!(f[1].sector, (2 << 20) / 512);
        // Clone 1 has files of its own ("a.1.0", "a.1.1"); clone 0's again
        // are the same files.
        let again = l.files_for(&j, 1, "x.fio").unwrap();
        assert_eq!(again[0].sector, (4 << 20) / 512);
        assert_eq!(l.files_for(&j, 0, "x.fio").unwrap(), f);
        j.filename = Some("/dev/sdb".into());
        assert_eq!(l.files_for(&j, 0, "x.fio").unwrap()[0].bytes, 3 << 20);
        j.size = None;
        assert_eq!(l.files_for(&j, 0, "x.fio").unwrap()[0].bytes, 1 << 30);
        j.size = Some(Amount::Bytes(3 << 20));
        j.filename = Some("shared".into());
        j.nrfiles = 1;
        let s1 = l.files_for(&j, 0, "x.fio").unwrap();
        assert_eq!(l.files_for(&j, 0, "x.fio").unwrap(), s1);
    }

    #[test]
    fn errors_name_the_job() {
        let mut l = Layout::new(10 << 20);
        let mut j = JobSpec::new("nosize", 3);
        j.filename = Some("new-file".into());
        let e = l.files_for(&j, 0, "x.fio").unwrap_err().to_string();
        assert!(e.starts_with("x.fio:3: option 'size'"), "{e}");
        let mut big = JobSpec::new("big", 5);
        big.size = Some(Amount::Bytes(1 << 30));
        assert!(
            l.files_for(&big, 0, "x.fio")
                .unwrap_err()
                .to_string()
                .contains("does not fit")
        );
    }

    #[test]
    fn fill_device_takes_the_rest_and_a_later_job_reuses_the_file() {
        let mut l = Layout::new(64 << 20);
        let mut first = JobSpec::new("first", 1);
        first.size = Some(Amount::Bytes(4 << 20));
        l.files_for(&first, 0, "x.fio").unwrap();
        let mut fill = JobSpec::new("fill", 2);
        fill.filename = Some("data".into());
        fill.fill_device = true;
        let f = l.files_for(&fill, 0, "x.fio").unwrap();
        assert_eq!((f[0].sector * 512, f[0].bytes), (4 << 20, 60 << 20));
        let mut read = JobSpec::new("read", 3);
        read.filename = Some("data".into());
        assert_eq!(l.files_for(&read, 0, "x.fio").unwrap(), f);
    }

    #[test]
    fn errors_point_at_the_line_that_set_the_option() {
        let file = crate::job::JobFile::parse("[global]\nbs=4k\n[j]\nrw=read\nsize=1k\n", "x.fio")
            .unwrap();
        let e = Layout::new(1 << 30)
            .files_for(&file.jobs[0], 0, "x.fio")
            .unwrap_err();
        assert_eq!((e.line, e.option.as_deref()), (5, Some("size")), "{e}");
    }

    #[test]
    fn offsets_past_the_end_are_refused_not_clamped() {
        let tb = 1_000_204_886_016;
        let mut raw = JobSpec::new("raw", 1);
        raw.filename = Some("/dev/sdb".into());
        raw.offset = Amount::Bytes(2 << 40);
        let e = Layout::new(tb).files_for(&raw, 0, "x.fio").unwrap_err();
        assert_eq!(e.option.as_deref(), Some("offset"), "{e}");
        assert!(e.message.contains("(1000204886016 bytes)"), "{e}");
        raw.offset = Amount::Bytes(tb - (1 << 20));
        raw.size = Some(Amount::Bytes(2 << 20));
        let e = Layout::new(tb).files_for(&raw, 0, "x.fio").unwrap_err();
        assert_eq!(e.option.as_deref(), Some("size"), "{e}");
        assert!(e.message.contains("runs past the end"), "{e}");
        raw.size = Some(Amount::Bytes(1 << 20));
        let f = Layout::new(tb).files_for(&raw, 0, "x.fio").unwrap();
        assert_eq!((f[0].start, f[0].bytes), (tb - (1 << 20), tb));

        let mut file = JobSpec::new("file", 1);
        file.size = Some(Amount::Bytes(16 << 20));
        file.offset = Amount::Bytes(2 << 40);
        let e = Layout::new(64 << 20)
            .files_for(&file, 0, "x.fio")
            .unwrap_err();
        assert_eq!(e.option.as_deref(), Some("offset"), "{e}");
        assert!(e.message.contains("the device has 67108864 bytes"), "{e}");
        file.offset = Amount::Percent(50);
        let f = Layout::new(64 << 20).files_for(&file, 0, "x.fio").unwrap();
        assert_eq!(f[0].start, 8 << 20);
    }
}
