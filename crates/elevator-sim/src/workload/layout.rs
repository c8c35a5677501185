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

use std::collections::BTreeMap;

use crate::job::{Amount, JobError, JobSpec};

/// One file: a contiguous run of bytes on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// First sector.
    pub sector: u64,
    /// Length in bytes (a multiple of 512).
    pub bytes: u64,
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
        let err = |option: Option<&str>, message: String| JobError {
            file: path.to_string(),
            line: job.line,
            option: option.map(str::to_string),
            message,
        };
        if let Some(name) = &job.filename
            && name.starts_with("/dev/")
        {
            // fio on a raw device: I/O within its first `size` bytes, or all
            // of it.
            let bytes = match job.size {
                Some(Amount::Bytes(b)) => b.min(self.device_bytes),
                Some(Amount::Percent(p)) => self.device_bytes / 100 * u64::from(p),
                None => self.device_bytes,
            };
            return Ok(vec![Extent {
                sector: 0,
                bytes: bytes / 512 * 512,
            }]);
        }
        let n = u64::from(job.nrfiles);
        let file_bytes = match (job.filesize, job.size) {
            (Some(f), _) => f,
            (None, Some(Amount::Bytes(s))) => s / n,
            (None, Some(Amount::Percent(p))) => self.device_bytes / 100 * u64::from(p) / n,
            (None, None) => {
                return Err(err(
                    Some("size"),
                    format!(
                        "job '{}' creates files, so it needs size= or filesize= \
                         (or a filename under /dev/ for the whole device)",
                        job.name
                    ),
                ));
            }
        };
        let file_bytes = file_bytes / 512 * 512;
        let bs = job.bs[0].max(job.bs[1]);
        if file_bytes < bs {
            return Err(err(
                Some("size"),
                format!("files of {file_bytes} bytes are smaller than one block of {bs} bytes"),
            ));
        }
        if let Some(name) = &job.filename
            && let Some(&e) = self.shared.get(name)
        {
            return Ok(vec![e]);
        }
        let mut files = Vec::with_capacity(job.nrfiles as usize);
        for _ in 0..n {
            let start = self.next.div_ceil(ALIGN) * ALIGN;
            let end = start
                .checked_add(file_bytes)
                .filter(|&e| e <= self.device_bytes);
            let Some(end) = end else {
                return Err(err(
                    None,
                    format!(
                        "job '{}': its files do not fit on the device ({} bytes); \
                         laid out so far: {} bytes",
                        job.name, self.device_bytes, self.next
                    ),
                ));
            };
            self.next = end;
            files.push(Extent {
                sector: start / 512,
                bytes: file_bytes,
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
                bytes: 3 << 19
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
}
