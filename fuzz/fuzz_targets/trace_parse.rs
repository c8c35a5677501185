//! Every trace reader on arbitrary bytes: blktrace binary (one stream, and
//! as a per-CPU set of two streams merged by time), blkparse text, tracefs
//! text, fio iologs, and format detection with decompression. None may
//! panic, with or without skipping bad records, and every record read must
//! be within what its format can hold.
//!
//! Run: `cargo +nightly fuzz run trace_parse` (from the repository root).

#![no_main]

use elevator_trace::blkparse::BlkparseReader;
use elevator_trace::blktrace_read::{BlktraceReader, BlktraceSetReader};
use elevator_trace::iolog::IologReader;
use elevator_trace::tracefs::TracefsReader;
use elevator_trace::{Format, Item, TraceError, TraceReader};
use libfuzzer_sys::fuzz_target;

/// Read at most this many items (a reader must also end by itself).
const MAX_ITEMS: usize = 100_000;

fn drain(items: impl Iterator<Item = Result<Item, TraceError>>) {
    for item in items.take(MAX_ITEMS) {
        if let Ok(Item::Process { name, .. }) = item {
            assert!(name.len() <= 4096 * 4);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    for skip_bad in [false, true] {
        drain(BlktraceReader::new(data, "fuzz", skip_bad));
        let half = data.len() / 2;
        drain(BlktraceSetReader::new(vec![
            BlktraceReader::new(&data[..half], "fuzz.0", skip_bad),
            BlktraceReader::new(&data[half..], "fuzz.1", skip_bad),
        ]));
        drain(BlkparseReader::new(data, "fuzz", skip_bad));
        drain(TracefsReader::new(data, "fuzz", skip_bad));
        drain(IologReader::new(data, "fuzz", skip_bad));
        for format in [None, Some(Format::Blktrace), Some(Format::Blkparse), Some(Format::Iolog)] {
            let input = Box::new(std::io::Cursor::new(data.to_vec()));
            if let Ok(reader) = TraceReader::from_reader(input, "fuzz", format, skip_bad) {
                drain(reader);
            }
        }
    }
});
