//! Issue 29, item 1: text traces as the kernel's tools write them, with
//! lines of different CPUs a little out of time order. The shipped trace
//! (tracefs text from `trace_pipe`) with adjacent lines of different CPUs
//! swapped, and the same as blkparse text, read back item for item as the
//! unswapped trace; an inversion wider than the window is refused naming
//! both lines; a window of 0 is strict.

use std::io::Read;
use std::path::PathBuf;

use elevator_trace::blkparse::TextWriter;
use elevator_trace::reorder::{ReorderStats, ReorderWindow};
use elevator_trace::{Format, Item, TraceReader, TraceSink};

/// The shipped trace's text.
fn shipped_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/traces/pgbench-init-mq-deadline.trace.xz");
    let file = std::fs::File::open(&path).expect("the shipped trace");
    let mut text = String::new();
    elevator_trace::open::decompressed(Box::new(file))
        .and_then(|mut r| r.read_to_string(&mut text))
        .expect("xz text");
    text
}

/// A tracefs line's CPU and time (µs).
fn tracefs_cpu_time(line: &str) -> Option<(u32, u64)> {
    let mut words = line.split_whitespace();
    let cpu = words.find_map(|w| w.strip_prefix('[')?.strip_suffix(']')?.parse().ok())?;
    let time = words.find_map(|w| micros(w.strip_suffix(':')?))?;
    Some((cpu, time))
}

/// A blkparse line's CPU and time (µs).
fn blkparse_cpu_time(line: &str) -> Option<(u32, u64)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() < 6 || !words[0].contains(',') {
        return None;
    }
    Some((words[1].parse().ok()?, micros(words[3])?))
}

/// `SECONDS.FRACTION` in µs (to six decimals).
fn micros(text: &str) -> Option<u64> {
    let (s, f) = text.split_once('.')?;
    let f: String = f.chars().chain(std::iter::repeat('0')).take(6).collect();
    Some(s.parse::<u64>().ok()? * 1_000_000 + f.parse::<u64>().ok()?)
}

/// The text with adjacent lines of different CPUs swapped, every `every`
/// lines or so, where the later is 1 to 500 µs later: the swaps made (the
/// second line's number, the inversion in µs).
fn swapped(
    text: &str,
    every: usize,
    cpu_time: fn(&str) -> Option<(u32, u64)>,
) -> (String, Vec<(u64, u64)>) {
    let mut lines: Vec<&str> = text.lines().collect();
    let mut swaps = Vec::new();
    let mut i = every;
    while i + 1 < lines.len() {
        let (a, b) = (cpu_time(lines[i]), cpu_time(lines[i + 1]));
        match (a, b) {
            (Some((ca, ta)), Some((cb, tb))) if ca != cb && tb > ta && tb - ta <= 500 => {
                lines.swap(i, i + 1);
                swaps.push((i as u64 + 2, tb - ta));
                i += every;
            }
            _ => i += 1,
        }
    }
    (lines.join("\n") + "\n", swaps)
}

/// Read `text` with `window`: the items, or the first error, and what the
/// window did.
fn read(
    text: &str,
    window: ReorderWindow,
) -> (Result<Vec<Item>, elevator_trace::TraceError>, ReorderStats) {
    let input = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
    let mut reader = TraceReader::from_reader(input, "t", None, false)
        .expect("opens")
        .with_reorder_window(window);
    let items = reader.by_ref().collect();
    (items, reader.reordered())
}

fn stats_of(swaps: &[(u64, u64)]) -> ReorderStats {
    ReorderStats {
        records: swaps.len() as u64,
        largest_inversion_ns: swaps.iter().map(|s| s.1 * 1000).max().unwrap_or(0),
    }
}

#[test]
fn the_shipped_trace_with_cpus_interleaved_reads_as_written() {
    let text = shipped_text();
    let (original, none) = read(&text, ReorderWindow::DEFAULT);
    let original = original.expect("the shipped trace reads");
    assert_eq!(none, ReorderStats::default());
    let (text2, swaps) = swapped(&text, 400, tracefs_cpu_time);
    assert!(swaps.len() >= 20, "{swaps:?}");
    assert!(swaps.iter().any(|s| s.1 >= 100), "{swaps:?}");
    let (items, stats) = read(&text2, ReorderWindow::DEFAULT);
    assert_eq!(items.expect("reordered"), original);
    assert_eq!(stats, stats_of(&swaps));
}

#[test]
fn an_inversion_wider_than_the_window_is_refused_naming_both_lines() {
    let text = shipped_text();
    let (text2, swaps) = swapped(&text, 400, tracefs_cpu_time);
    let widest = swaps.iter().map(|s| s.1).max().expect("swaps");
    let first_too_wide = swaps.iter().find(|s| s.1 == widest).expect("one");
    let window = ReorderWindow::from_ns((widest - 1) * 1000);
    let (items, _) = read(&text2, window);
    let e = items.expect_err("refused");
    let message = e.to_string();
    let wanted = format!(
        "t: line {line}: out of time order: line {line} at ",
        line = first_too_wide.0
    );
    assert!(message.starts_with(&wanted), "{message}");
    assert!(
        message.contains(&format!(
            "is {widest}.000 µs before line {} at ",
            first_too_wide.0 - 1
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!("outside --reorder-window {window}")),
        "{message}"
    );
    // Strict: the first swap is refused.
    let (items, _) = read(&text2, ReorderWindow::STRICT);
    let e = items.expect_err("strict");
    assert_eq!(e.place, format!("line {}", swaps[0].0));
    assert!(e.to_string().contains("--reorder-window 0s"), "{e}");
    // The window just wide enough takes them all.
    let (items, stats) = read(&text2, ReorderWindow::from_ns(widest * 1000));
    assert!(items.is_ok());
    assert_eq!(stats, stats_of(&swaps));
}

#[test]
fn skip_bad_leaves_out_only_what_the_window_refuses() {
    let text = shipped_text();
    let (text2, swaps) = swapped(&text, 400, tracefs_cpu_time);
    let narrow = swaps.iter().filter(|s| s.1 <= 100).count() as u64;
    assert!(narrow > 0 && narrow < swaps.len() as u64, "{swaps:?}");
    let input = Box::new(std::io::Cursor::new(text2.into_bytes()));
    let mut reader = TraceReader::from_reader(input, "t", None, true)
        .expect("opens")
        .with_reorder_window(ReorderWindow::from_ns(100_000));
    assert!(reader.by_ref().all(|i| i.is_ok()));
    assert_eq!(reader.skipped(), swaps.len() as u64 - narrow);
    assert_eq!(reader.reordered().records, narrow);
}

#[test]
fn blkparse_text_with_cpus_interleaved_reads_as_written() {
    let (original, _) = read(&shipped_text(), ReorderWindow::DEFAULT);
    let original = original.expect("reads");
    let mut w = TextWriter::new(Vec::new());
    for item in &original {
        match item {
            Item::Record(r) => w.record(r).expect("record"),
            Item::Process { pid, name, time } => w.process(*pid, name, *time).expect("name"),
        }
    }
    w.finish().expect("finish");
    let text = String::from_utf8(w.into_inner()).expect("utf-8");
    let (want, none) = read(&text, ReorderWindow::DEFAULT);
    let want = want.expect("blkparse text reads");
    assert_eq!(none, ReorderStats::default());
    let (text2, swaps) = swapped(&text, 400, blkparse_cpu_time);
    assert!(swaps.len() >= 20, "{swaps:?}");
    let input = Box::new(std::io::Cursor::new(text2.as_bytes().to_vec()));
    let reader = TraceReader::from_reader(input, "t", None, false).expect("opens");
    assert_eq!(reader.format(), Format::Blkparse);
    let (items, stats) = read(&text2, ReorderWindow::DEFAULT);
    assert_eq!(items.expect("reordered"), want);
    assert_eq!(stats, stats_of(&swaps));
    // Before the window, lines of different CPUs were passed on out of
    // order; strict now refuses them, naming both lines.
    let (items, _) = read(&text2, ReorderWindow::STRICT);
    let e = items.expect_err("strict");
    let line = swaps[0].0;
    assert_eq!(e.place, format!("line {line}"));
    assert!(
        e.to_string().contains(&format!("before line {}", line - 1)),
        "{e}"
    );
}
