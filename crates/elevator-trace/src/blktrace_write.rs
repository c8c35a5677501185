//! Writing blktrace's binary format: [`BlktraceWriter`] writes one stream
//! (one `NAME.blktrace.N` file, or all CPUs to one stream as
//! `blktrace -o -` does), [`BlktraceSet`] (in [`crate::blktrace_set`])
//! writes a per-CPU set of files, one per `cpu` value of the records, as
//! `blktrace -o NAME` does.
//!
//! What is written is what the kernel writes: event records numbered from 1
//! per file (`sequence`), a split's payload (the big-endian sector where the
//! next piece starts), an unplug's (the big-endian request count), and a
//! process notify record (the name, 16 bytes NUL padded, sequence 0) before
//! a process's first event in a file. A request merge is written as a back
//! merge and write-zeroes as a write, as the kernel writes them.

use std::io::{self, Write};

use elevator_core::TraceAction;

use crate::blktrace::{MAGIC, RECORD_BYTES, RawRecord, VERSION, action_word};
use crate::blktrace_encode::encode_notify;
use crate::record::{DevT, Record};
use crate::sink::TraceSink;

pub use crate::blktrace_encode::COMM_BYTES;
pub use crate::blktrace_set::BlktraceSet;

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
        let mut buf = Vec::with_capacity(RECORD_BYTES + COMM_BYTES);
        encode_notify(&mut buf, pid, name, time, cpu, dev);
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
