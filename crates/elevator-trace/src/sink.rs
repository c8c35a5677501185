//! Where trace events go: any writer of a trace format implements
//! [`TraceSink`], so that engines and converters write blktrace binary,
//! text or iologs through one interface; [`Tee`] feeds two.

use crate::record::Record;

/// A destination for trace items.
pub trait TraceSink {
    /// Write one event.
    fn record(&mut self, record: &Record) -> std::io::Result<()>;
    /// Write events in order, as [`TraceSink::record`] on each would (which
    /// is what this does unless the sink does better): one dynamic call per
    /// batch rather than per event.
    fn record_batch(&mut self, records: &[Record]) -> std::io::Result<()> {
        for record in records {
            self.record(record)?;
        }
        Ok(())
    }
    /// Name a process (blktrace's notify record); called before its first
    /// event, and again if its name changes.
    fn process(&mut self, pid: u32, name: &str, time: u64) -> std::io::Result<()>;
    /// Flush everything out; called once at the end.
    fn finish(&mut self) -> std::io::Result<()>;
}

/// A sink that keeps everything in memory (for tests and small traces).
#[derive(Clone, Debug, Default)]
pub struct MemorySink {
    /// Items in the order written.
    pub items: Vec<crate::record::Item>,
}

impl TraceSink for MemorySink {
    fn record(&mut self, record: &Record) -> std::io::Result<()> {
        self.items.push(crate::record::Item::Record(*record));
        Ok(())
    }

    fn process(&mut self, pid: u32, name: &str, time: u64) -> std::io::Result<()> {
        self.items.push(crate::record::Item::Process {
            pid,
            name: name.to_string(),
            time,
        });
        Ok(())
    }

    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Two sinks fed the same items (a blktrace and iologs of one run).
#[derive(Debug)]
pub struct Tee<A, B> {
    /// The first sink.
    pub first: A,
    /// The second sink.
    pub second: B,
}

impl<A: TraceSink, B: TraceSink> TraceSink for Tee<A, B> {
    fn record(&mut self, record: &Record) -> std::io::Result<()> {
        self.first.record(record)?;
        self.second.record(record)
    }

    fn record_batch(&mut self, records: &[Record]) -> std::io::Result<()> {
        self.first.record_batch(records)?;
        self.second.record_batch(records)
    }

    fn process(&mut self, pid: u32, name: &str, time: u64) -> std::io::Result<()> {
        self.first.process(pid, name, time)?;
        self.second.process(pid, name, time)
    }

    fn finish(&mut self) -> std::io::Result<()> {
        let first = self.first.finish();
        self.second.finish()?;
        first
    }
}

impl<S: TraceSink + ?Sized> TraceSink for Box<S> {
    fn record(&mut self, record: &Record) -> std::io::Result<()> {
        (**self).record(record)
    }

    fn record_batch(&mut self, records: &[Record]) -> std::io::Result<()> {
        (**self).record_batch(records)
    }

    fn process(&mut self, pid: u32, name: &str, time: u64) -> std::io::Result<()> {
        (**self).process(pid, name, time)
    }

    fn finish(&mut self) -> std::io::Result<()> {
        (**self).finish()
    }
}
