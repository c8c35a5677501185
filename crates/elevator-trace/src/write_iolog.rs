//! `write_iolog`: each job clone's I/Os logged as fio logs them, from the
//! queue's trace events.
//!
//! fio logs the I/O units a job issues, before the block layer: in
//! elevator those are the clone's bios, the queue events (Q) of its I/O
//! context. [`JobIologs`] is a [`TraceSink`] fed by the engines' trace tap
//! (so the engines stay as they are): it routes each Q event by its context
//! to that clone's [`IologWriter`] (fio 3.33's version 3, with timestamps),
//! as an I/O on the clone's file that holds it, at the offset in that file
//! (fio's `FILE read|write|trim|sync OFFSET LENGTH`), each file added and
//! opened before its first I/O and closed at the end. Other events, and the
//! contexts of clones that log nothing, are passed over.

use std::io::{self, Write};

use crate::iolog::{IologVersion, IologWriter};
use crate::{Record, TraceSink};
use elevator_core::{Op, TraceAction};
use elevator_fio::workload::CloneFiles;

/// One clone's log: its writer and its files' sector ranges.
struct CloneLog<W: Write> {
    writer: IologWriter<W>,
    /// Each file's first sector and end sector, in file order.
    files: Vec<(u64, u64)>,
    /// The file of the last I/O (the next is most likely in it too).
    last: usize,
}

/// The iologs of a run's clones (see the module's documentation).
pub struct JobIologs<W: Write> {
    /// By I/O context.
    logs: Vec<Option<CloneLog<W>>>,
}

impl<W: Write> Default for JobIologs<W> {
    fn default() -> Self {
        JobIologs { logs: Vec::new() }
    }
}

impl<W: Write> JobIologs<W> {
    /// No logs yet.
    pub fn new() -> JobIologs<W> {
        JobIologs::default()
    }

    /// Log `clone`'s I/Os to `out`.
    pub fn add(&mut self, clone: &CloneFiles, out: W) -> io::Result<()> {
        let name = clone.files.first().map_or("", |(n, _)| n.as_str());
        let mut writer = IologWriter::new(out, IologVersion::V3, TraceAction::Queue, name)
            .per_process_files(true);
        let mut files = Vec::with_capacity(clone.files.len());
        for (i, (name, extent)) in clone.files.iter().enumerate() {
            writer.process(i as u32, name, 0)?;
            files.push((extent.sector, extent.sector + extent.bytes / 512));
        }
        let i = clone.ctx as usize;
        if self.logs.len() <= i {
            self.logs.resize_with(i + 1, || None);
        }
        self.logs[i] = Some(CloneLog {
            writer,
            files,
            last: 0,
        });
        Ok(())
    }

    /// Whether any clone logs.
    pub fn is_empty(&self) -> bool {
        self.logs.iter().all(Option::is_none)
    }

    /// The writers, by clone, once finished.
    pub fn into_writers(self) -> Vec<W> {
        self.logs
            .into_iter()
            .flatten()
            .map(|l| l.writer.into_inner())
            .collect()
    }
}

impl<W: Write> TraceSink for JobIologs<W> {
    fn record(&mut self, record: &Record) -> io::Result<()> {
        let e = &record.event;
        if e.action != TraceAction::Queue {
            return Ok(());
        }
        let Some(Some(log)) = self.logs.get_mut(e.ctx.0 as usize) else {
            return Ok(());
        };
        let within = |&(start, end): &(u64, u64)| e.sector >= start && e.sector < end;
        // A flush goes to the file of the I/O before it.
        let file = if e.op == Op::Flush || log.files.get(log.last).is_some_and(within) {
            log.last
        } else {
            log.files.iter().position(within).unwrap_or(log.last)
        };
        log.last = file;
        let start = log.files.get(file).map_or(0, |f| f.0);
        let mut r = *record;
        r.event.ctx.0 = file as u32;
        r.event.sector = e.sector.saturating_sub(start);
        log.writer.record(&r)
    }

    fn process(&mut self, _pid: u32, _name: &str, _time: u64) -> io::Result<()> {
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        for log in self.logs.iter_mut().flatten() {
            log.writer.finish()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::event;
    use elevator_core::BioFlags;
    use elevator_fio::workload::Extent;

    fn files(ctx: u32, names: &[(&str, u64)]) -> CloneFiles {
        CloneFiles {
            ctx,
            job_index: 0,
            clone: ctx - 1,
            files: names
                .iter()
                .map(|&(n, sector)| {
                    let e = Extent {
                        sector,
                        bytes: 1 << 20,
                        start: 0,
                        end: 1 << 20,
                    };
                    (n.to_string(), e)
                })
                .collect(),
        }
    }

    #[test]
    fn each_clone_logs_its_queue_events_by_file() {
        let mut logs = JobIologs::new();
        logs.add(&files(1, &[("a.0.0", 0), ("a.0.1", 2048)]), Vec::new())
            .unwrap();
        logs.add(&files(3, &[("b.0.0", 8192)]), Vec::new()).unwrap();
        let q = |t, op, sector, bytes, ctx| {
            Record::new(
                event(
                    t,
                    TraceAction::Queue,
                    op,
                    BioFlags::NONE,
                    sector,
                    bytes,
                    ctx,
                ),
                0,
                0,
            )
        };
        for r in [
            q(1000, Op::Read, 8, 4096, 1),
            q(2000, Op::Write, 2048 + 16, 4096, 1),
            q(2500, Op::Flush, 0, 0, 1),
            q(3000, Op::Write, 8192, 512, 3),
            q(4000, Op::Read, 0, 512, 2),
            Record::new(
                event(
                    5000,
                    TraceAction::Issue,
                    Op::Read,
                    BioFlags::NONE,
                    8,
                    4096,
                    1,
                ),
                0,
                0,
            ),
        ] {
            logs.record(&r).unwrap();
        }
        logs.finish().unwrap();
        let out: Vec<String> = logs
            .into_writers()
            .into_iter()
            .map(|w| String::from_utf8(w).unwrap())
            .collect();
        assert_eq!(
            out[0],
            "fio version 3 iolog\n0 a.0.0 add\n0 a.0.0 open\n0 a.0.0 read 4096 4096\n\
             1 a.0.1 add\n1 a.0.1 open\n1 a.0.1 write 8192 4096\n1 a.0.1 sync 0 0\n\
             1 a.0.0 close\n1 a.0.1 close\n"
        );
        assert_eq!(
            out[1],
            "fio version 3 iolog\n0 b.0.0 add\n0 b.0.0 open\n0 b.0.0 write 0 512\n0 b.0.0 close\n"
        );
    }
}
