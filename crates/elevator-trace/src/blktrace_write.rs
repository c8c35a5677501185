//! Writing blktrace's binary format: [`BlktraceWriter`] writes one stream
//! (one `NAME.blktrace.N` file, or all CPUs to one stream as
//! `blktrace -o -` does), [`BlktraceSet`] writes a per-CPU set of files, one
//! per `cpu` value of the records, as `blktrace -o NAME` does.
//!
//! What is written is what the kernel writes: event records numbered from 1
//! per file (`sequence`), a split's payload (the big-endian sector where the
//! next piece starts), an unplug's (the big-endian request count), and a
//! process notify record (the name, 16 bytes NUL padded, sequence 0) before
//! a process's first event in a file. A request merge is written as a back
//! merge and write-zeroes as a write, as the kernel writes them.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use elevator_core::TraceAction;

use crate::blktrace::{MAGIC, RECORD_BYTES, RawRecord, VERSION, action_word, category, code};
use crate::record::{DevT, Record};
use crate::sink::TraceSink;

/// Bytes of a process notify record's payload (the kernel's `comm`).
pub const COMM_BYTES: usize = 16;

/// The raw record for `record` numbered `sequence`; its `pdu_len` is 8 for
/// a split or unplug (whose payload is `extra`, big-endian), 0 otherwise.
pub fn raw_record(record: &Record, sequence: u32) -> RawRecord {
    let e = &record.event;
    let pdu_len = if matches!(e.action, TraceAction::Split | TraceAction::Unplug) {
        8
    } else {
        0
    };
    RawRecord {
        magic: MAGIC | u32::from(VERSION),
        sequence,
        time: e.time,
        sector: e.sector,
        bytes: e.bytes,
        action: action_word(e.action, e.op, e.flags),
        pid: e.ctx.0,
        device: record.dev,
        cpu: record.cpu,
        // The kernel stores the (negative) errno in 16 bits.
        error: e.error as u16,
        pdu_len,
    }
}

/// Writes blktrace records to one stream.
pub struct BlktraceWriter<W: Write> {
    out: W,
    sequence: u32,
    device: DevT,
    cpu: u32,
    written: u64,
}

impl<W: Write> BlktraceWriter<W> {
    /// A writer onto `out` (buffer it: records are written 48 bytes at a
    /// time).
    pub fn new(out: W) -> BlktraceWriter<W> {
        BlktraceWriter {
            out,
            sequence: 0,
            device: 0,
            cpu: 0,
            written: 0,
        }
    }

    /// Event records written.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Write a process notify record naming `pid` on `cpu` and `dev`.
    pub fn notify(
        &mut self,
        pid: u32,
        name: &str,
        time: u64,
        cpu: u32,
        dev: DevT,
    ) -> io::Result<()> {
        let raw = RawRecord {
            magic: MAGIC | u32::from(VERSION),
            sequence: 0,
            time,
            sector: 0,
            bytes: 0,
            action: (category::NOTIFY << 16) | code::NOTIFY_PROCESS,
            pid,
            device: dev,
            cpu,
            error: 0,
            pdu_len: COMM_BYTES as u16,
        };
        let mut comm = [0u8; COMM_BYTES];
        // The kernel's comm holds 15 bytes and a NUL.
        let n = name.len().min(COMM_BYTES - 1);
        comm[..n].copy_from_slice(&name.as_bytes()[..n]);
        let mut buf = [0u8; RECORD_BYTES + COMM_BYTES];
        buf[..RECORD_BYTES].copy_from_slice(&raw.encode());
        buf[RECORD_BYTES..].copy_from_slice(&comm);
        self.out.write_all(&buf)
    }
}

impl<W: Write> TraceSink for BlktraceWriter<W> {
    fn record(&mut self, record: &Record) -> io::Result<()> {
        self.sequence = self.sequence.wrapping_add(1);
        self.device = record.dev;
        self.cpu = record.cpu;
        let raw = raw_record(record, self.sequence);
        let mut buf = [0u8; RECORD_BYTES + 8];
        buf[..RECORD_BYTES].copy_from_slice(&raw.encode());
        let len = RECORD_BYTES + usize::from(raw.pdu_len);
        buf[RECORD_BYTES..].copy_from_slice(&record.event.extra.to_be_bytes());
        self.written += 1;
        self.out.write_all(&buf[..len])
    }

    fn process(&mut self, pid: u32, name: &str, time: u64) -> io::Result<()> {
        let (cpu, dev) = (self.cpu, self.device);
        self.notify(pid, name, time, cpu, dev)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// One file of a [`BlktraceSet`]: its writer and the processes already
/// named in it.
struct SetFile {
    writer: BlktraceWriter<BufWriter<File>>,
    named: HashSet<u32>,
    last_pid: Option<u32>,
}

/// Writes `PREFIX.blktrace.N`, one file per `cpu` value, created when the
/// first record for that CPU arrives.
pub struct BlktraceSet {
    prefix: PathBuf,
    files: Vec<Option<SetFile>>,
    names: HashMap<u32, String>,
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
            names: HashMap::new(),
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

    /// The files written so far.
    pub fn paths(&self) -> Vec<PathBuf> {
        (0..self.files.len())
            .filter(|&i| self.files[i].is_some())
            .map(|i| Self::path_of(&self.prefix, i as u32))
            .collect()
    }

    /// Create CPU `cpu`'s file if it is not open yet; its index.
    fn open_file(&mut self, cpu: u32) -> io::Result<usize> {
        // One file per CPU: a CPU number past this is a corrupt record.
        const MAX_CPUS: u32 = 1 << 16;
        if cpu >= MAX_CPUS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cpu {cpu} is beyond {MAX_CPUS}"),
            ));
        }
        let i = cpu as usize;
        if self.files.len() <= i {
            self.files.resize_with(i + 1, || None);
        }
        if self.files[i].is_none() {
            let f = File::create(Self::path_of(&self.prefix, cpu))?;
            self.files[i] = Some(SetFile {
                writer: BlktraceWriter::new(BufWriter::with_capacity(1 << 16, f)),
                named: HashSet::new(),
                last_pid: None,
            });
        }
        Ok(i)
    }
}

impl TraceSink for BlktraceSet {
    fn record(&mut self, record: &Record) -> io::Result<()> {
        let pid = record.pid();
        let i = self.open_file(record.cpu)?;
        let Some(file) = self.files[i].as_mut() else {
            return Err(io::Error::other("file not created"));
        };
        if file.last_pid != Some(pid) {
            if let Some(name) = self.names.get(&pid)
                && file.named.insert(pid)
            {
                file.writer
                    .notify(pid, name, record.event.time, record.cpu, record.dev)?;
            }
            file.last_pid = Some(pid);
        }
        file.writer.record(record)?;
        self.written += 1;
        Ok(())
    }

    fn process(&mut self, pid: u32, name: &str, _time: u64) -> io::Result<()> {
        if self.names.get(&pid).map(String::as_str) != Some(name) {
            self.names.insert(pid, name.to_string());
            // Renamed: name it again in every file before its next event.
            for f in self.files.iter_mut().flatten() {
                f.named.remove(&pid);
                if f.last_pid == Some(pid) {
                    f.last_pid = None;
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        for f in self.files.iter_mut().flatten() {
            f.writer.finish()?;
        }
        Ok(())
    }
}
