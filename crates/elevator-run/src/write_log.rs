//! Applying a write log onto image files: an image of the log's device
//! made from zeroes or a base image ([`create_image`]), and records put
//! onto it one by one with their data read from the log by pread
//! ([`RecordApplier`]). What `elevator write-log replay` and
//! `elevator crash-states` build their images with.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use elevator_core::ByteRange;
use elevator_core::range::RangeError;
use elevator_trace::write_log::{Kind, LoadedLog, RECORD_HEAD_LEN, RecordHead};
use thiserror::Error;

/// Why an image could not be made or a record applied onto it.
#[derive(Debug, Error)]
pub enum ImageError {
    /// A file operation failed; `what` says which, on which file.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// The base image is larger than the log's device.
    #[error(
        "--base {} is {len} bytes, more than the log's device ({capacity} bytes)",
        base.display()
    )]
    BaseTooLarge {
        /// The base image.
        base: PathBuf,
        /// Its length in bytes.
        len: u64,
        /// The device's capacity in bytes.
        capacity: u64,
    },
    /// A record's range is past 2^64 bytes.
    #[error("{}: record {seq}", log.display())]
    Range {
        /// The log.
        log: PathBuf,
        /// The record.
        seq: u64,
        /// Why.
        #[source]
        source: RangeError,
    },
    /// A write record without its data.
    #[error("{}: record {seq} is a write without its data", log.display())]
    NoData {
        /// The log.
        log: PathBuf,
        /// The record.
        seq: u64,
    },
}

/// `result`'s error, said to be from doing `what`.
pub(crate) fn doing<T>(
    result: io::Result<T>,
    what: impl FnOnce() -> String,
) -> Result<T, ImageError> {
    result.map_err(|source| ImageError::Io {
        what: what(),
        source,
    })
}

/// Create `path` as the device's image: zeroes of `capacity` bytes, or a
/// copy of `base` (extended to `capacity` if shorter).
pub fn create_image(path: &Path, capacity: u64, base: Option<&Path>) -> Result<File, ImageError> {
    if let Some(base) = base {
        let len = doing(std::fs::metadata(base), || {
            format!("--base {}", base.display())
        })?
        .len();
        if len > capacity {
            return Err(ImageError::BaseTooLarge {
                base: base.to_path_buf(),
                len,
                capacity,
            });
        }
        doing(std::fs::copy(base, path), || {
            format!("copying {} to {}", base.display(), path.display())
        })?;
    } else if path.exists() {
        doing(std::fs::remove_file(path), || {
            format!("replacing {}", path.display())
        })?;
    }
    let file = doing(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path),
        || format!("creating {}", path.display()),
    )?;
    doing(file.set_len(capacity), || {
        format!("sizing {} to {capacity} bytes", path.display())
    })?;
    Ok(file)
}

/// Make `len` bytes at `at` of `image` a hole that reads as zeroes;
/// whether the file system could.
fn punch_hole(image: &File, at: u64, len: u64) -> bool {
    use rustix::fs::{FallocateFlags, fallocate};
    len == 0
        || fallocate(
            image,
            FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
            at,
            len,
        )
        .is_ok()
}

/// Applies records onto images, reading their data from the log with
/// pread.
pub struct RecordApplier {
    log: File,
    path: PathBuf,
    buf: Vec<u8>,
}

/// Bytes moved at a time.
const CHUNK: usize = 1 << 20;

impl RecordApplier {
    /// Read data from `log`'s file.
    pub fn new(log: &LoadedLog) -> Result<RecordApplier, ImageError> {
        let file = doing(File::open(&log.path), || {
            format!("opening {}", log.path.display())
        })?;
        Ok(RecordApplier {
            log: file,
            path: log.path.clone(),
            buf: vec![0; CHUNK],
        })
    }

    /// Apply `log`'s records `records` (indices, in the order given) onto
    /// `image`: how many of them change content (the others are passed
    /// over).
    pub fn apply_records(
        &mut self,
        image: &File,
        log: &LoadedLog,
        records: impl IntoIterator<Item = usize>,
    ) -> Result<u64, ImageError> {
        let mut applied = 0;
        for i in records {
            let head = &log.heads[i];
            if head.kind.changes_content() {
                self.apply(image, head, log.offsets[i])?;
                applied += 1;
            }
        }
        Ok(applied)
    }

    /// Apply record `head` (starting at `offset` in the log) onto `image`;
    /// records that change no content are passed over. Write-zeroes and
    /// discards punch a hole (what reads as zeroes and takes no disk), so
    /// a log of a few bytes cannot make the image take terabytes; where
    /// the file system cannot punch holes they write zeroes.
    pub fn apply(
        &mut self,
        image: &File,
        head: &RecordHead,
        offset: u64,
    ) -> Result<(), ImageError> {
        if !head.kind.changes_content() {
            return Ok(());
        }
        let range =
            ByteRange::from_sectors(head.sector, u64::from(head.sectors)).map_err(|source| {
                ImageError::Range {
                    log: self.path.clone(),
                    seq: head.seq,
                    source,
                }
            })?;
        let (at, len) = (range.offset(), range.len());
        let from_log = head.kind == Kind::Write;
        if from_log && !head.has_data() {
            return Err(ImageError::NoData {
                log: self.path.clone(),
                seq: head.seq,
            });
        }
        if !from_log && punch_hole(image, at, len) {
            return Ok(());
        }
        let payload = offset + RECORD_HEAD_LEN as u64;
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(CHUNK as u64) as usize;
            let buf = &mut self.buf[..n];
            if from_log {
                doing(self.log.read_exact_at(buf, payload + done), || {
                    format!("reading record {}'s data", head.seq)
                })?;
            } else {
                buf.fill(0);
            }
            doing(image.write_all_at(buf, at + done), || {
                format!("writing record {} onto the image", head.seq)
            })?;
            done += n as u64;
        }
        Ok(())
    }
}
