//! The write log's file: where [`WriteLog`](crate::write_log::WriteLog)'s
//! records go. This module owns the file, its staging chunks and the
//! thread that writes them.
//!
//! Records are copied into aligned chunks of [`CHUNK`] bytes (the one pass
//! the recording thread makes over a write's data, beside its checksum);
//! a thread of the log's own writes each full chunk at its place in the
//! file, with O_DIRECT where the file system takes it, so that neither the
//! page cache nor the write waits on the I/O path. At most [`CHUNKS`]
//! chunks exist: a recorder that finds none free waits for the file.
//!
//! On a file system in memory (tmpfs, ramfs), where a direct write is a
//! copy into the page cache all the same, or one that refuses O_DIRECT,
//! the records go through a 64 KiB buffer straight to the file instead:
//! a staging copy there would be a second one.
//!
//! [`LogFile::flush`] hands over the partly filled chunk and waits until
//! every byte given so far is in the file (a direct write of a partial
//! chunk is padded to a whole block, and the file cut back to its length;
//! the next chunk starts at that block and writes it again, whole). An
//! error of the file is kept and returned by every later call.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, IoSlice, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::buf::AlignedBuf;

/// Bytes of one staging chunk (a multiple of the 4 KiB alignment): a huge page,
/// at a huge page's alignment, so that pinning a chunk for a direct write
/// takes one page, not 512.
pub const CHUNK: usize = 2 << 20;
/// Most chunks a log holds (filling, queued and being written).
pub const CHUNKS: usize = 6;
/// Threads writing chunks, each one at a time: a direct write waits for
/// the device, and one at a time (1 MiB, about 1 ms on a virtio disk)
/// is slower than a busy server fills chunks.
pub const WRITERS: usize = 3;
/// Alignment of the chunks' memory, file offsets and direct write lengths:
/// enough for every logical block size Linux has (at most a page).
const ALIGN: usize = 4096;
/// The buffer of a log written without O_DIRECT.
const BUFFER: usize = 64 << 10;
/// `statfs` magic numbers of file systems in memory.
const MEMORY_FS: [u64; 2] = [0x0102_1994, 0x8584_58f6];

/// A chunk for the file thread to write.
struct Job {
    buf: AlignedBuf,
    /// Where `buf[0]` goes in the file.
    offset: u64,
    /// Bytes of `buf` that are the log's.
    len: usize,
}

/// What the file thread has done, shared with the recorders.
#[derive(Default)]
struct Progress {
    /// Jobs sent and jobs finished.
    sent: u64,
    done: u64,
    /// Chunks written and free for reuse.
    free: Vec<AlignedBuf>,
    /// Chunks allocated so far.
    allocated: usize,
    /// The first error writing the file.
    error: Option<io::Error>,
}

struct Shared {
    progress: Mutex<Progress>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The log's file, written through staging chunks by a thread of its own.
pub struct LogFile {
    /// The file and its first error, when it is written without O_DIRECT
    /// (and none of the rest is used).
    buffered: Option<(BufWriter<File>, Option<io::Error>)>,
    /// The chunk being filled, and how much of it is.
    chunk: Option<AlignedBuf>,
    filled: usize,
    /// Where the chunk starts in the file.
    offset: u64,
    jobs: Option<Sender<Job>>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

fn copy_error(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), e.to_string())
}

/// Open `path` for the log, created or truncated: with O_DIRECT when the
/// file system takes a direct write there, else buffered. Whether it is
/// direct comes back too.
fn open(path: &Path) -> io::Result<(File, bool)> {
    let mut opts = OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    let plain = opts.open(path)?;
    #[allow(clippy::unnecessary_cast)] // f_type's width differs by architecture
    let in_memory =
        rustix::fs::fstatfs(&plain).is_ok_and(|st| MEMORY_FS.contains(&(st.f_type as u64)));
    if in_memory {
        return Ok((plain, false));
    }
    let direct = match OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    {
        Ok(f) => f,
        Err(_) => return Ok((plain, false)),
    };
    // Some file systems take O_DIRECT at open and refuse it at the first
    // write: try one block, then cut the file back.
    let probe = AlignedBuf::new(ALIGN, ALIGN).map_err(io::Error::other)?;
    match direct.write_at(&probe, 0) {
        Ok(ALIGN) => {
            direct.set_len(0)?;
            Ok((direct, true))
        }
        Ok(0) | Err(_) => Ok((plain, false)),
        Ok(_) => {
            plain.set_len(0)?;
            Ok((plain, false))
        }
    }
}

/// A new staging chunk, backed by a huge page where the system gives one
/// to memory that asks (`madvise`), before anything touches it.
fn new_chunk() -> io::Result<AlignedBuf> {
    let mut buf = AlignedBuf::new(CHUNK, CHUNK).map_err(io::Error::other)?;
    // SAFETY: the range is the buffer's own memory, untouched so far;
    // MADV_HUGEPAGE changes only how the kernel backs it, never its
    // contents or validity. Failure leaves small pages, which work too.
    unsafe {
        libc::madvise(buf.as_mut_ptr().cast(), CHUNK, libc::MADV_HUGEPAGE);
    }
    Ok(buf)
}

/// A file thread: write each job at its place; cut the file back after
/// a padded partial chunk (no later chunk is handed over before the
/// flush that sent it has seen it written, and every earlier one ends
/// before it).
fn write_jobs(file: Arc<File>, direct: bool, jobs: Arc<Mutex<Receiver<Job>>>, shared: Arc<Shared>) {
    loop {
        let next = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(job) = next else {
            return;
        };
        let failed = shared.lock().error.is_some();
        let result = if failed {
            Ok(())
        } else {
            let len = if direct {
                job.len.next_multiple_of(ALIGN)
            } else {
                job.len
            };
            file.write_all_at(&job.buf[..len], job.offset)
                .and_then(|()| {
                    if direct && len != job.len {
                        file.set_len(job.offset + job.len as u64)
                    } else {
                        Ok(())
                    }
                })
        };
        let mut p = shared.lock();
        if let Err(e) = result
            && p.error.is_none()
        {
            p.error = Some(e);
        }
        p.done += 1;
        p.free.push(job.buf);
        drop(p);
        shared.changed.notify_all();
    }
}

impl LogFile {
    /// Create (or truncate) `path` and start its thread.
    pub fn create(path: &Path) -> io::Result<LogFile> {
        let (file, direct) = open(path)?;
        let shared = Arc::new(Shared {
            progress: Mutex::new(Progress::default()),
            changed: Condvar::new(),
        });
        if !direct {
            return Ok(LogFile {
                buffered: Some((BufWriter::with_capacity(BUFFER, file), None)),
                chunk: None,
                filled: 0,
                offset: 0,
                jobs: None,
                shared,
                threads: Vec::new(),
            });
        }
        let (jobs, rx) = mpsc::channel();
        let (file, rx) = (Arc::new(file), Arc::new(Mutex::new(rx)));
        let mut threads = Vec::new();
        for _ in 0..WRITERS {
            let (file, rx, shared) = (Arc::clone(&file), Arc::clone(&rx), Arc::clone(&shared));
            threads.push(
                std::thread::Builder::new()
                    .name("write-log".into())
                    .spawn(move || write_jobs(file, direct, rx, shared))?,
            );
        }
        Ok(LogFile {
            buffered: None,
            chunk: None,
            filled: 0,
            offset: 0,
            jobs: Some(jobs),
            shared,
            threads,
        })
    }

    /// A free chunk: a written one, a new one while fewer than [`CHUNKS`]
    /// exist, or the next one the file thread finishes.
    fn free_chunk(&self) -> io::Result<AlignedBuf> {
        let mut p = self.shared.lock();
        loop {
            if let Some(e) = &p.error {
                return Err(copy_error(e));
            }
            if let Some(buf) = p.free.pop() {
                return Ok(buf);
            }
            if p.allocated < CHUNKS {
                p.allocated += 1;
                drop(p);
                return new_chunk();
            }
            p = self
                .shared
                .changed
                .wait(p)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    fn send(&mut self, job: Job) -> io::Result<()> {
        let Some(jobs) = &self.jobs else {
            return Err(io::Error::other("the write log's file is closed"));
        };
        self.shared.lock().sent += 1;
        jobs.send(job)
            .map_err(|_| io::Error::other("the write log's file thread stopped"))
    }

    /// Hand the chunk being filled to the file thread: whole, or (for a
    /// flush) as far as it is filled, keeping its last partial block at
    /// the start of the next chunk.
    fn hand_over(&mut self) -> io::Result<()> {
        let Some(buf) = self.chunk.take() else {
            return Ok(());
        };
        let len = self.filled;
        if len == CHUNK {
            self.filled = 0;
            let offset = self.offset;
            self.offset += len as u64;
            return self.send(Job { buf, offset, len });
        }
        let whole = len / ALIGN * ALIGN;
        let mut next = self.free_chunk()?;
        next[..len - whole].copy_from_slice(&buf[whole..len]);
        let offset = self.offset;
        self.chunk = Some(next);
        self.filled = len - whole;
        self.offset += whole as u64;
        self.send(Job { buf, offset, len })
    }

    /// Copy `data` into chunks, handing over each that fills.
    fn put(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let chunk = match &mut self.chunk {
                Some(c) => c,
                None => {
                    let c = self.free_chunk()?;
                    self.filled = 0;
                    self.chunk.insert(c)
                }
            };
            let n = data.len().min(CHUNK - self.filled);
            chunk[self.filled..self.filled + n].copy_from_slice(&data[..n]);
            self.filled += n;
            data = &data[n..];
            if self.filled == CHUNK {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    fn check(&self) -> io::Result<()> {
        match &self.shared.lock().error {
            Some(e) => Err(copy_error(e)),
            None => Ok(()),
        }
    }
}

/// `f` on a buffered file, unless it failed before; its error is kept.
fn buffered<T>(
    (file, error): &mut (BufWriter<File>, Option<io::Error>),
    f: impl FnOnce(&mut BufWriter<File>) -> io::Result<T>,
) -> io::Result<T> {
    if let Some(e) = error {
        return Err(copy_error(e));
    }
    f(file).inspect_err(|e| *error = Some(copy_error(e)))
}

impl Write for LogFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Some(b) = &mut self.buffered {
            return buffered(b, |f| f.write(data));
        }
        self.check()?;
        self.put(data)?;
        Ok(data.len())
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if let Some(b) = &mut self.buffered {
            return buffered(b, |f| f.write_vectored(bufs));
        }
        self.check()?;
        let mut n = 0;
        for b in bufs {
            self.put(b)?;
            n += b.len();
        }
        Ok(n)
    }

    /// Hand over what is filled and wait until the file holds all of it.
    fn flush(&mut self) -> io::Result<()> {
        if let Some(b) = &mut self.buffered {
            return buffered(b, BufWriter::flush);
        }
        self.check()?;
        if self.chunk.is_some() && self.filled > 0 {
            self.hand_over()?;
        }
        let mut p = self.shared.lock();
        while p.done < p.sent && p.error.is_none() {
            p = self
                .shared
                .changed
                .wait(p)
                .unwrap_or_else(|e| e.into_inner());
        }
        match &p.error {
            Some(e) => Err(copy_error(e)),
            None => Ok(()),
        }
    }
}

impl Drop for LogFile {
    /// Write out what is held and stop the thread.
    fn drop(&mut self) {
        let _ = self.flush();
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that differ from place to place.
    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn the_file_holds_every_byte_in_order_across_flushes_and_chunks() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("log");
        let mut file = LogFile::create(&path).expect("create");
        let mut want = Vec::new();
        // Pieces of odd sizes, some larger than a chunk, with flushes
        // (partial chunks, unaligned ends) between some of them.
        for (i, len) in [48, 4096, 100, CHUNK + 7, 3, 2 * CHUNK, 5000, 1]
            .into_iter()
            .enumerate()
        {
            let piece = pattern(len, i as u8);
            file.write_all(&piece).expect("write");
            want.extend_from_slice(&piece);
            if i % 2 == 1 {
                file.flush().expect("flush");
                assert_eq!(std::fs::read(&path).expect("read"), want, "after piece {i}");
            }
        }
        let parts = [IoSlice::new(b"head"), IoSlice::new(&[7; 600])];
        assert_eq!(file.write_vectored(&parts).expect("vectored"), 604);
        want.extend_from_slice(b"head");
        want.extend_from_slice(&[7; 600]);
        drop(file);
        assert_eq!(std::fs::read(&path).expect("read"), want);
    }

    #[test]
    fn a_file_that_cannot_be_written_fails_every_later_call() {
        let mut file = LogFile::create(Path::new("/dev/full")).expect("open /dev/full");
        file.write_all(&[1; 100]).expect("staged, not yet written");
        assert!(file.flush().is_err(), "the flush meets the error");
        assert!(
            file.write_all(&[1; 100]).is_err(),
            "and so does every write"
        );
        assert!(file.flush().is_err());
    }
}
