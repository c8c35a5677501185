//! Where each job's files live on a simulated device.
//!
//! Like a fresh file system that allocates files one after another: every
//! file is one contiguous extent, aligned to 1 MiB, placed in the order jobs
//! and their clones appear, from the start of the device (job 1's clone 0's
//! files, then its clone 1's, then job 2's...). Jobs that name the same
//! `filename` share one file, laid out where it first appears. A `filename`
//! under `/dev/` is the raw device: one extent from its start, `size` long
//! (all of it without `size`), as fio does I/O on a device.
//!
//! File sizes follow fio: `filesize` if given, else `size / nrfiles`; a job
//! with neither `size` nor `filesize` needs a device filename.
//!
//! `offset` is where the job's I/O starts in each file (a percentage is of
//! the file), or on a raw device, where its `size` bytes start (a percentage
//! is of the device). An offset that leaves no room for one block, or an
//! offset + size past the device's end, is an error naming the option's
//! line and the device's size: nothing is clamped.

use std::collections::BTreeMap;

use crate::job::{Amount, JobError, JobSpec};

/// One file: a contiguous run of bytes on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// First sector.
    pub sector: u64,
    /// Length in bytes (a multiple of 512).
    pub bytes: u64,
    /// Where the job's I/O starts in it, in bytes (its `offset`, a multiple
    /// of 512, at least one block before `bytes`).
    pub start: u64,
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

    /// The files of one clone of `job` (from file `path`).
    pub fn files_for(&mut self, job: &JobSpec, path: &str) -> Result<Vec<Extent>, JobError> {
        let err = |option: &str, message: String| JobError {
            file: path.to_string(),
            line: job.line_of(&[option]),
            option: Some(option.to_string()),
            message,
        };
        let bs = job.bs[0].max(job.bs[1]);
        let offset_of = |of: u64| match job.offset {
            Amount::Bytes(b) => b / 512 * 512,
            Amount::Percent(p) => (u128::from(of) * u128::from(p) / 100) as u64 / 512 * 512,
        };
        if let Some(name) = &job.filename
            && name.starts_with("/dev/")
        {
            // fio on a raw device: I/O within `size` bytes from `offset`,
            // or from `offset` to the end.
            let dev = self.device_bytes;
            let start = offset_of(dev);
            if start.saturating_add(bs) > dev {
                return Err(err(
                    "offset",
                    format!(
                        "job '{}': offset {start} leaves no room for a block of {bs} bytes \
                         on the device ({dev} bytes)",
                        job.name
                    ),
                ));
            }
            let end = match job.size {
                Some(Amount::Bytes(b)) => {
                    start.checked_add(b).filter(|&e| e <= dev).ok_or_else(|| {
                        err(
                            "size",
                            format!(
                                "job '{}': offset {start} + size {b} runs past the end of the \
                             device ({dev} bytes)",
                                job.name
                            ),
                        )
                    })?
                }
                Some(Amount::Percent(p)) => (start + dev / 100 * u64::from(p)).min(dev),
                None => dev,
            };
            return Ok(vec![Extent {
                sector: 0,
                bytes: end / 512 * 512,
                start,
            }]);
        }
        let n = u64::from(job.nrfiles);
        let file_bytes = match (job.filesize, job.size) {
            (Some(f), _) => f,
            (None, Some(Amount::Bytes(s))) => s / n,
            (None, Some(Amount::Percent(p))) => self.device_bytes / 100 * u64::from(p) / n,
            (None, None) => {
                return Err(err(
                    "size",
                    format!(
                        "job '{}' creates files, so it needs size= or filesize= \
                         (or a filename under /dev/ for the whole device)",
                        job.name
                    ),
                ));
            }
        };
        let file_bytes = file_bytes / 512 * 512;
        if file_bytes < bs {
            let option = if job.filesize.is_some() {
                "filesize"
            } else {
                "size"
            };
            return Err(err(
                option,
                format!("files of {file_bytes} bytes are smaller than one block of {bs} bytes"),
            ));
        }
        let start = offset_of(file_bytes);
        if start.saturating_add(bs) > file_bytes {
            return Err(err(
                "offset",
                format!(
                    "job '{}': offset {start} leaves no room for a block of {bs} bytes in its \
                     files of {file_bytes} bytes (the device has {} bytes)",
                    job.name, self.device_bytes
                ),
            ));
        }
        if let Some(name) = &job.filename
            && let Some(&e) = self.shared.get(name)
        {
            return Ok(vec![Extent { start, ..e }]);
        }
        let mut files = Vec::with_capacity(job.nrfiles as usize);
        for _ in 0..n {
            let begin = self.next.div_ceil(ALIGN) * ALIGN;
            let end = begin
                .checked_add(file_bytes)
                .filter(|&e| e <= self.device_bytes);
            let Some(end) = end else {
                return Err(err(
                    if job.filesize.is_some() {
                        "filesize"
                    } else {
                        "size"
                    },
                    format!(
                        "job '{}': its files do not fit on the device ({} bytes); \
                         laid out so far: {} bytes",
                        job.name, self.device_bytes, self.next
                    ),
                ));
            };
            self.next = end;
            files.push(Extent {
                sector: begin / 512,
                bytes: file_bytes,
                start,
            });
        }
        if let Some(name) = &job.filename {
            self.shared.insert(name.clone(), files[0]);
        }
        Ok(files)
    }
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
        let f = l.files_for(&j, "x.fio").unwrap();
        assert_eq!(
            f[0],
            Extent {
                sector: 0,
                bytes: 3 << 19,
                start: 0,
            }
        );
        assert_eq!(f[1].sector, (2 << 20) / 512);
        let again = l.files_for(&j, "x.fio").unwrap();
        assert_eq!(again[0].sector, (4 << 20) / 512);
        j.filename = Some("/dev/sdb".into());
        assert_eq!(l.files_for(&j, "x.fio").unwrap()[0].bytes, 3 << 20);
        j.size = None;
        assert_eq!(l.files_for(&j, "x.fio").unwrap()[0].bytes, 1 << 30);
        j.size = Some(Amount::Bytes(3 << 20));
        j.filename = Some("shared".into());
        j.nrfiles = 1;
        let s1 = l.files_for(&j, "x.fio").unwrap();
        assert_eq!(l.files_for(&j, "x.fio").unwrap(), s1);
    }

    #[test]
    fn errors_name_the_job() {
        let mut l = Layout::new(10 << 20);
        let j = JobSpec::new("nosize", 3);
        let e = l.files_for(&j, "x.fio").unwrap_err().to_string();
        assert!(e.starts_with("x.fio:3: option 'size'"), "{e}");
        let mut big = JobSpec::new("big", 5);
        big.size = Some(Amount::Bytes(1 << 30));
        assert!(
            l.files_for(&big, "x.fio")
                .unwrap_err()
                .to_string()
                .contains("do not fit")
        );
    }

    #[test]
    fn errors_point_at_the_line_that_set_the_option() {
        let file = crate::job::JobFile::parse("[global]\nbs=4k\n[j]\nrw=read\nsize=1k\n", "x.fio")
            .unwrap();
        let e = Layout::new(1 << 30)
            .files_for(&file.jobs[0], "x.fio")
            .unwrap_err();
        assert_eq!((e.line, e.option.as_deref()), (5, Some("size")), "{e}");
    }

    #[test]
    fn offsets_past_the_end_are_refused_not_clamped() {
        let tb = 1_000_204_886_016;
        let mut raw = JobSpec::new("raw", 1);
        raw.filename = Some("/dev/sdb".into());
        raw.offset = Amount::Bytes(2 << 40);
        let e = Layout::new(tb).files_for(&raw, "x.fio").unwrap_err();
        assert_eq!(e.option.as_deref(), Some("offset"), "{e}");
        assert!(e.message.contains("(1000204886016 bytes)"), "{e}");
        raw.offset = Amount::Bytes(tb - (1 << 20));
        raw.size = Some(Amount::Bytes(2 << 20));
        let e = Layout::new(tb).files_for(&raw, "x.fio").unwrap_err();
        assert_eq!(e.option.as_deref(), Some("size"), "{e}");
        assert!(e.message.contains("runs past the end"), "{e}");
        raw.size = Some(Amount::Bytes(1 << 20));
        let f = Layout::new(tb).files_for(&raw, "x.fio").unwrap();
        assert_eq!((f[0].start, f[0].bytes), (tb - (1 << 20), tb));

        let mut file = JobSpec::new("file", 1);
        file.size = Some(Amount::Bytes(16 << 20));
        file.offset = Amount::Bytes(2 << 40);
        let e = Layout::new(64 << 20).files_for(&file, "x.fio").unwrap_err();
        assert_eq!(e.option.as_deref(), Some("offset"), "{e}");
        assert!(e.message.contains("the device has 67108864 bytes"), "{e}");
        file.offset = Amount::Percent(50);
        let f = Layout::new(64 << 20).files_for(&file, "x.fio").unwrap();
        assert_eq!(f[0].start, 8 << 20);
    }
}
