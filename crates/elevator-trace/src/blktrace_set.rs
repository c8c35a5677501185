//! [`BlktraceSet`]: a per-CPU set of blktrace files, one per `cpu` value of
//! the records, as `blktrace -o NAME` writes them.
//!
//! This is the writer on the trace-out hot path, so each event costs little:
//! records are encoded straight into a large buffer per file
//! ([`WRITE_BYTES`], less when many files share the [`WRITE_BUDGET`],
//! written with one `write` call when full), the `action`
//! word comes from a table, a file is found by indexing a `Vec` with the
//! CPU, and whether a process has been named in a file is looked up only
//! when the process differs from the file's previous event's (then in a
//! dense bit set). [`TraceSink::record_batch`] runs the loop without a
//! dynamic call per event.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::blktrace::RECORD_BYTES;
use crate::blktrace_encode::{ActionWords, COMM_BYTES, encode_notify, encode_record};
use crate::record::Record;
use crate::sink::TraceSink;

/// Bytes a file's buffer holds before it is written out (one `write` call
/// each), while the set has few files.
pub const WRITE_BYTES: usize = 256 << 10;
/// Bytes all files' buffers hold together at most: with many files each
/// holds less (down to [`MIN_WRITE_BYTES`]).
pub const WRITE_BUDGET: usize = 32 << 20;
/// Bytes a file's buffer holds at least before it is written out.
pub const MIN_WRITE_BYTES: usize = 4 << 10;
/// Process ids whose names are kept, and large ids each file remembers
/// naming: past these, they are forgotten (a process may then be named
/// again, or not at all).
const MAX_NAMES: usize = 1 << 16;
const MAX_LARGE_PIDS: usize = 1 << 10;
/// Files a rename is carried to one by one, at most.
const RENAME_FILES: usize = 64;

/// Room past [`WRITE_BYTES`] for what one event may add (a notify record
/// and a record with its payload), so that the buffer never grows.
const SLACK: usize = 2 * (RECORD_BYTES + COMM_BYTES);

/// Process ids below this are kept in a bit set (8 KiB at most per file);
/// larger ones in a hash set of at most [`MAX_LARGE_PIDS`].
const DENSE_PIDS: u32 = 1 << 16;

/// A set of process ids: a bit set for the usual small ids, a hash set for
/// the rest.
#[derive(Debug, Default)]
struct PidSet {
    bits: Vec<u64>,
    large: HashSet<u32>,
}

impl PidSet {
    #[inline]
    fn contains(&self, pid: u32) -> bool {
        if pid < DENSE_PIDS {
            self.bits
                .get((pid / 64) as usize)
                .is_some_and(|w| w & (1 << (pid % 64)) != 0)
        } else {
            self.large.contains(&pid)
        }
    }

    fn insert(&mut self, pid: u32) {
        if pid < DENSE_PIDS {
            let word = (pid / 64) as usize;
            if self.bits.len() <= word {
                self.bits.resize(word + 1, 0);
            }
            self.bits[word] |= 1 << (pid % 64);
        } else {
            if self.large.len() >= MAX_LARGE_PIDS {
                self.large.clear();
            }
            self.large.insert(pid);
        }
    }

    fn remove(&mut self, pid: u32) {
        if pid < DENSE_PIDS {
            if let Some(w) = self.bits.get_mut((pid / 64) as usize) {
                *w &= !(1 << (pid % 64));
            }
        } else {
            self.large.remove(&pid);
        }
    }
}

/// One file of a [`BlktraceSet`]: its bytes not yet written, its sequence
/// and the processes already named in it.
struct SetFile {
    file: File,
    buf: Vec<u8>,
    sequence: u32,
    named: PidSet,
    last_pid: Option<u32>,
    /// The set's rename epoch `named` is valid for (see
    /// [`BlktraceSet::process`]).
    epoch: u64,
}

impl SetFile {
    fn new(file: File, write_at: usize) -> SetFile {
        SetFile {
            file,
            buf: Vec::with_capacity(write_at + SLACK),
            sequence: 0,
            named: PidSet::default(),
            last_pid: None,
            epoch: 0,
        }
    }

    /// Write the buffer out (emptied even on error: what failed is lost and
    /// the error says so).
    #[inline(never)]
    fn write_out(&mut self, write_at: usize) -> io::Result<()> {
        let written = self.file.write_all(&self.buf);
        self.buf.clear();
        if self.buf.capacity() > write_at + SLACK {
            self.buf.shrink_to(write_at + SLACK);
        }
        written
    }
}

impl Drop for SetFile {
    /// Write what is left, as `BufWriter` does; errors are reported only
    /// by [`TraceSink::finish`].
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            let _ = self.write_out(0);
        }
    }
}

/// Writes `PREFIX.blktrace.N`, one file per `cpu` value, created when the
/// first record for that CPU arrives; CPU numbers below it that have no
/// file yet get an empty one, so that blkparse (which stops at the first
/// number missing) reads them all.
///
/// What is written is what the kernel writes: event records numbered from 1
/// per file (`sequence`), a split's and an unplug's payload, and a process
/// notify record before a process's first event in a file (see
/// [`crate::blktrace_write`]).
pub struct BlktraceSet {
    prefix: PathBuf,
    files: Vec<Option<SetFile>>,
    /// Bytes a file's buffer holds before it is written out: the
    /// [`WRITE_BUDGET`] shared by the files, within
    /// [`MIN_WRITE_BYTES`]..=[`WRITE_BYTES`].
    write_at: usize,
    names: HashMap<u32, String>,
    /// Bumped when a process is renamed while many files are open: each
    /// file then forgets whom it named, at its next event.
    epoch: u64,
    words: ActionWords,
    written: u64,
}

impl BlktraceSet {
    /// A set writing `prefix.blktrace.N` files. Files are created lazily;
    /// the directory must exist.
    pub fn create(prefix: &Path) -> io::Result<BlktraceSet> {
        if let Some(dir) = prefix.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.is_dir()
        {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("directory {} does not exist", dir.display()),
            ));
        }
        Ok(BlktraceSet {
            prefix: prefix.to_path_buf(),
            files: Vec::new(),
            write_at: WRITE_BYTES,
            names: HashMap::new(),
            epoch: 0,
            words: ActionWords::new(),
            written: 0,
        })
    }

    /// The path of CPU `cpu`'s file.
    pub fn path_of(prefix: &Path, cpu: u32) -> PathBuf {
        let mut name = prefix.as_os_str().to_os_string();
        name.push(format!(".blktrace.{cpu}"));
        PathBuf::from(name)
    }

    /// Event records written, over all files.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The files written so far (with the empty ones that fill gaps in
    /// the CPU numbers).
    pub fn paths(&self) -> Vec<PathBuf> {
        (0..self.files.len())
            .map(|i| Self::path_of(&self.prefix, i as u32))
            .collect()
    }

    /// Create CPU `cpu`'s file if it is not open yet.
    fn open_file(
        prefix: &Path,
        files: &mut Vec<Option<SetFile>>,
        cpu: u32,
        write_at: &mut usize,
    ) -> io::Result<()> {
        // One file per CPU: a CPU number past this is a corrupt record.
        const MAX_CPUS: u32 = 1 << 13;
        if cpu >= MAX_CPUS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cpu {cpu} is beyond {MAX_CPUS}"),
            ));
        }
        let i = cpu as usize;
        if files.len() <= i {
            // blkparse stops at the first file number missing: fill the gap
            // with empty files (which it reads as no events).
            for gap in files.len()..i {
                File::create(Self::path_of(prefix, gap as u32))?;
            }
            files.resize_with(i + 1, || None);
        }
        if files[i].is_none() {
            let open = files.iter().flatten().count() + 1;
            *write_at = (WRITE_BUDGET / open).clamp(MIN_WRITE_BYTES, WRITE_BYTES);
            files[i] = Some(SetFile::new(
                File::create(Self::path_of(prefix, cpu))?,
                *write_at,
            ));
        }
        Ok(())
    }

    /// Encode one record into its file's buffer (with its process's notify
    /// record first, if the file has not named it yet).
    #[inline(always)]
    fn record_one(&mut self, record: &Record) -> io::Result<()> {
        let i = record.cpu as usize;
        let pid = record.pid();
        // The usual case: the file is open and its last event was this
        // process's; anything else is settled out of line.
        if !matches!(self.files.get(i), Some(Some(f)) if f.last_pid == Some(pid)) {
            self.prepare(record)?;
        }
        let Some(Some(file)) = self.files.get_mut(i) else {
            return Err(io::Error::other("file not created"));
        };
        file.sequence = file.sequence.wrapping_add(1);
        encode_record(&mut file.buf, &self.words, record, file.sequence);
        self.written += 1;
        if file.buf.len() >= self.write_at {
            file.write_out(self.write_at)?;
        }
        Ok(())
    }

    /// Before `record` is encoded: open its file, and name its process
    /// there if it differs from the file's previous event's and has not
    /// been named in it yet.
    #[inline(never)]
    fn prepare(&mut self, record: &Record) -> io::Result<()> {
        let i = record.cpu as usize;
        if !matches!(self.files.get(i), Some(Some(_))) {
            Self::open_file(
                &self.prefix,
                &mut self.files,
                record.cpu,
                &mut self.write_at,
            )?;
        }
        let Some(Some(file)) = self.files.get_mut(i) else {
            return Err(io::Error::other("file not created"));
        };
        let pid = record.pid();
        if file.epoch != self.epoch {
            file.epoch = self.epoch;
            file.named = PidSet::default();
            file.last_pid = None;
        }
        if file.last_pid != Some(pid) {
            if !file.named.contains(pid)
                && let Some(name) = self.names.get(&pid)
            {
                file.named.insert(pid);
                let e = &record.event;
                encode_notify(&mut file.buf, pid, name, e.time, record.cpu, record.dev);
            }
            file.last_pid = Some(pid);
        }
        Ok(())
    }
}

impl TraceSink for BlktraceSet {
    fn record(&mut self, record: &Record) -> io::Result<()> {
        self.record_one(record)
    }

    fn record_batch(&mut self, records: &[Record]) -> io::Result<()> {
        for record in records {
            self.record_one(record)?;
        }
        Ok(())
    }

    fn process(&mut self, pid: u32, name: &str, _time: u64) -> io::Result<()> {
        let known = self.names.get(&pid).map(String::as_str);
        if known != Some(name) {
            let renamed = known.is_some();
            if !renamed && self.names.len() >= MAX_NAMES {
                self.names.clear();
            }
            self.names.insert(pid, name.to_string());
            // Renamed: name it again in every file before its next event
            // (with many files, every process is named again: a rename
            // costs the same whatever the number of files).
            if renamed && self.files.len() > RENAME_FILES {
                self.epoch += 1;
            } else if renamed {
                for f in self.files.iter_mut().flatten() {
                    f.named.remove(pid);
                    if f.last_pid == Some(pid) {
                        f.last_pid = None;
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        for f in self.files.iter_mut().flatten() {
            f.write_out(self.write_at)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_sets_hold_small_and_large_ids() {
        let mut s = PidSet::default();
        for pid in [0, 63, 64, 4101, DENSE_PIDS - 1, DENSE_PIDS, u32::MAX] {
            assert!(!s.contains(pid));
            s.insert(pid);
            assert!(s.contains(pid));
        }
        assert!(!s.contains(1) && !s.contains(4100));
        s.remove(4101);
        s.remove(u32::MAX);
        assert!(!s.contains(4101) && !s.contains(u32::MAX) && s.contains(64));
        assert!(s.bits.len() <= (DENSE_PIDS / 64) as usize);
    }
}
