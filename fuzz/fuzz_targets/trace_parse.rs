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

/// Read everything; with `fused`, a reader that does not skip bad input
/// must end at its first error.
fn drain(mut items: impl Iterator<Item = Result<Item, TraceError>>, fused: bool) {
    for _ in 0..MAX_ITEMS {
        match items.next() {
            None => return,
            Some(Ok(Item::Process { name, .. })) => assert!(name.len() <= 1 << 16),
            Some(Ok(Item::Record(_))) => {}
            Some(Err(e)) => {
                if fused {
                    assert!(items.next().is_none(), "a reader went on after {e}");
                }
                return;
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    for skip_bad in [false, true] {
        drain(BlktraceReader::new(data, "fuzz", skip_bad), !skip_bad);
        let half = data.len() / 2;
        drain(
            BlktraceSetReader::new(vec![
                BlktraceReader::new(&data[..half], "fuzz.0", skip_bad),
                BlktraceReader::new(&data[half..], "fuzz.1", skip_bad),
            ]),
            !skip_bad,
        );
        drain(BlkparseReader::new(data, "fuzz", skip_bad), !skip_bad);
        drain(TracefsReader::new(data, "fuzz", skip_bad), false);
        drain(IologReader::new(data, "fuzz", skip_bad), !skip_bad);
        for format in [
            None,
            Some(Format::Blktrace),
            Some(Format::Blkparse),
            Some(Format::Tracefs),
            Some(Format::Iolog),
        ] {
            let input = Box::new(std::io::Cursor::new(data.to_vec()));
            if let Ok(reader) = TraceReader::from_reader(input, "fuzz", format, skip_bad) {
                let fused = !skip_bad && reader.format() != Format::Tracefs;
                drain(reader, fused);
            }
        }
    }
});
