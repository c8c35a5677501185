//! Opening a trace whatever it is: a per-CPU blktrace set (`NAME` or
//! `NAME.blktrace.N`), one file, or standard input (`-`); plain, gzip or xz
//! (recognised from the magic and decompressed as a stream); in blktrace
//! binary, blkparse text, tracefs text or a fio iolog (recognised from the
//! content unless named). [`open`] returns a [`TraceReader`], one iterator
//! over the items of any of them; its text readers put lines a little out
//! of time order back in order within [`ReorderWindow::DEFAULT`] unless
//! given another window ([`TraceReader::with_reorder_window`]).

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::Path;

use crate::blkparse::BlkparseReader;
use crate::blktrace::Endian;
use crate::blktrace_read::{BlktraceReader, BlktraceSetReader, is_set, set_prefix};
use crate::error::{TraceError, TraceErrorKind};
use crate::iolog::{IologReader, IologVersion};
use crate::record::Item;
use crate::reorder::{ReorderStats, ReorderWindow};
use crate::tracefs::TracefsReader;

/// Bytes looked at to recognise compression and format.
const SNIFF_BYTES: u64 = 4096;

/// A trace format elevator reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// blktrace's binary records (one file, a per-CPU set, or a stream).
    Blktrace,
    /// blkparse's default text output.
    Blkparse,
    /// tracefs block tracepoint text (`trace_pipe`).
    Tracefs,
    /// fio's iolog, version 2 or 3.
    Iolog,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 4] = [
        Format::Blktrace,
        Format::Blkparse,
        Format::Tracefs,
        Format::Iolog,
    ];

    /// The format's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Blktrace => "blktrace",
            Format::Blkparse => "blkparse",
            Format::Tracefs => "tracefs",
            Format::Iolog => "iolog",
        }
    }

    /// The format named `name` (also `text` for blkparse).
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "text" => Some(Format::Blkparse),
            _ => Format::ALL.into_iter().find(|f| f.name() == name),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a file is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (`1f 8b`).
    Gzip,
    /// xz (`fd 37 7a 58 5a 00`).
    Xz,
}

/// The compression `first_bytes` start with.
pub fn compression(first_bytes: &[u8]) -> Compression {
    if first_bytes.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if first_bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Compression::Xz
    } else {
        Compression::None
    }
}

/// The format of a (decompressed) trace that starts with `first_bytes`:
/// blktrace's magic; a fio iolog header; a tracefs header or line; a
/// blkparse line. Blank lines and `#` comments before the first line are
/// passed over.
pub fn detect(first_bytes: &[u8]) -> Option<Format> {
    if first_bytes.len() >= 4 {
        let m = [
            first_bytes[0],
            first_bytes[1],
            first_bytes[2],
            first_bytes[3],
        ];
        if Endian::detect(m).is_some() {
            return Some(Format::Blktrace);
        }
    }
    let mut tracefs_header = false;
    for line in first_bytes.split(|&b| b == b'\n') {
        let text = crate::text_fields::Fields::new(line).line();
        let trimmed = text.trim_ascii_start();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with(b"# tracer:") {
            tracefs_header = true;
        }
        if trimmed.starts_with(b"#") {
            continue;
        }
        if IologVersion::from_header(text).is_some() {
            return Some(Format::Iolog);
        }
        if crate::blkparse::looks_like(text) {
            return Some(Format::Blkparse);
        }
        let tracepoint = text.windows(8).any(|w| w == b": block_");
        if tracefs_header || tracepoint {
            return Some(Format::Tracefs);
        }
        return None;
    }
    tracefs_header.then_some(Format::Tracefs)
}

/// A readable stream of a trace's bytes, as [`TraceReader::from_reader`]
/// takes it.
pub type TraceInput = Box<dyn Read + Send>;

enum Inner {
    Blktrace(BlktraceReader<TraceInput>),
    Set(BlktraceSetReader<File>),
    Blkparse(BlkparseReader<BufReader<TraceInput>>),
    Tracefs(TracefsReader<BufReader<TraceInput>>),
    Iolog(IologReader<BufReader<TraceInput>>),
}

/// The items of a trace in any format: an iterator of
/// `Result<Item, TraceError>` that ends after the first error unless bad
/// records are skipped.
pub struct TraceReader {
    inner: Inner,
    format: Format,
    source_name: String,
}

impl TraceReader {
    /// A reader of `input` (compressed or not), named `source_name` in
    /// errors, in `format` or the one its content shows.
    pub fn from_reader(
        input: TraceInput,
        source_name: &str,
        format: Option<Format>,
        skip_bad: bool,
    ) -> Result<TraceReader, TraceError> {
        let header_error = |e: io::Error| TraceError {
            source_name: source_name.to_string(),
            place: "header".into(),
            kind: e.into(),
        };
        let (head, input) =
            sniff(decompressed(input).map_err(header_error)?).map_err(header_error)?;
        let format = match format.or_else(|| detect(&head)) {
            Some(f) => f,
            None if head.is_empty() => {
                return Err(TraceError {
                    source_name: source_name.to_string(),
                    place: "header".into(),
                    kind: TraceErrorKind::UnknownFormat("empty".into()),
                });
            }
            None => {
                let shown = String::from_utf8_lossy(&head[..head.len().min(40)]).into_owned();
                return Err(TraceError {
                    source_name: source_name.to_string(),
                    place: "header".into(),
                    kind: TraceErrorKind::UnknownFormat(format!("starts {shown:?}")),
                });
            }
        };
        let buffered = |input| BufReader::with_capacity(1 << 16, input);
        let window = ReorderWindow::DEFAULT;
        let inner = match format {
            Format::Blktrace => Inner::Blktrace(BlktraceReader::new(input, source_name, skip_bad)),
            Format::Blkparse => Inner::Blkparse(
                BlkparseReader::new(buffered(input), source_name, skip_bad)
                    .with_reorder_window(window),
            ),
            Format::Tracefs => Inner::Tracefs(
                TracefsReader::new(buffered(input), source_name, skip_bad)
                    .with_reorder_window(window),
            ),
            Format::Iolog => Inner::Iolog(IologReader::new(buffered(input), source_name, skip_bad)),
        };
        Ok(TraceReader {
            inner,
            format,
            source_name: source_name.to_string(),
        })
    }

    /// The same reader, with the text formats' reorder window `window`
    /// (given before the first item is read; [`ReorderWindow::STRICT`]
    /// refuses any line earlier than the one before it). Binary blktrace
    /// (merged by time across a per-CPU set, checked per CPU) and fio
    /// iologs (one thread's log, checked in order) have no window.
    pub fn with_reorder_window(mut self, window: ReorderWindow) -> TraceReader {
        self.inner = match self.inner {
            Inner::Blkparse(r) => Inner::Blkparse(r.with_reorder_window(window)),
            Inner::Tracefs(r) => Inner::Tracefs(r.with_reorder_window(window)),
            other => other,
        };
        self
    }

    /// What the reorder window did so far (nothing for the binary format
    /// and iologs).
    pub fn reordered(&self) -> ReorderStats {
        match &self.inner {
            Inner::Blkparse(r) => r.reordered(),
            Inner::Tracefs(r) => r.reordered(),
            Inner::Blktrace(_) | Inner::Set(_) | Inner::Iolog(_) => ReorderStats::default(),
        }
    }

    /// The format being read.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The name used in errors (the file, the set's prefix, or `-`).
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// Bad records or lines skipped (with `skip_bad`).
    pub fn skipped(&self) -> u64 {
        match &self.inner {
            Inner::Blktrace(r) => r.skipped(),
            Inner::Set(r) => r.skipped(),
            Inner::Blkparse(r) => r.skipped(),
            Inner::Tracefs(r) => r.skipped(),
            Inner::Iolog(r) => r.skipped(),
        }
    }

    /// Records of actions elevator does not replay (sleep, bounce, remap,
    /// passthrough), dropped.
    pub fn ignored(&self) -> u64 {
        match &self.inner {
            Inner::Blktrace(r) => r.ignored(),
            Inner::Set(r) => r.ignored(),
            Inner::Blkparse(r) => r.ignored(),
            Inner::Tracefs(_) | Inner::Iolog(_) => 0,
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<Item, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Blktrace(r) => r.next(),
            Inner::Set(r) => r.next(),
            Inner::Blkparse(r) => r.next(),
            Inner::Tracefs(r) => r.next(),
            Inner::Iolog(r) => r.next(),
        }
    }
}

/// The bytes of `input`, decompressed as a stream if it is gzip or xz.
pub fn decompressed(input: TraceInput) -> io::Result<TraceInput> {
    let (head, input) = sniff(input)?;
    Ok(match compression(&head) {
        Compression::None => input,
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
        Compression::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(input)),
    })
}

/// The first bytes of `input` and a stream that still starts with them.
fn sniff(mut input: TraceInput) -> io::Result<(Vec<u8>, TraceInput)> {
    let mut head = Vec::with_capacity(SNIFF_BYTES as usize);
    (&mut input).take(SNIFF_BYTES).read_to_end(&mut head)?;
    let again: TraceInput = Box::new(Cursor::new(head.clone()).chain(input));
    Ok((head, again))
}

/// Open the trace at `path` (`-` for standard input) in `format`, or the
/// format its content shows: a per-CPU blktrace set when `path` is
/// `NAME.blktrace.N` or a `NAME` with a `NAME.blktrace.0` beside it; a
/// single file otherwise, decompressed if it is gzip or xz.
pub fn open(
    path: &Path,
    format: Option<Format>,
    skip_bad: bool,
) -> Result<TraceReader, TraceError> {
    let name = path.display().to_string();
    if path.as_os_str() == "-" {
        return TraceReader::from_reader(Box::new(io::stdin()), "-", format, skip_bad);
    }
    let blktrace_ok = matches!(format, None | Some(Format::Blktrace));
    let names_set = set_prefix(path) != path || !path.exists();
    if blktrace_ok && names_set && is_set(path) {
        let set = BlktraceSetReader::open(path, skip_bad)?;
        return Ok(TraceReader {
            inner: Inner::Set(set),
            format: Format::Blktrace,
            source_name: set_prefix(path).display().to_string(),
        });
    }
    let file = File::open(path).map_err(|e| TraceError {
        source_name: name.clone(),
        place: String::new(),
        kind: e.into(),
    })?;
    TraceReader::from_reader(Box::new(file), &name, format, skip_bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_trace_says_it_could_not_be_read() {
        let Err(e) = open(Path::new("/nonexistent/elevator.trace"), None, false) else {
            panic!("a missing trace opened");
        };
        let text = e.to_string();
        assert!(
            text.starts_with("reading trace /nonexistent/elevator.trace: "),
            "{text}"
        );
        assert!(!text.contains("header"), "{text}");
    }

    #[test]
    fn formats_are_recognised() {
        let raw = crate::blktrace::RawRecord {
            magic: crate::blktrace::MAGIC | 7,
            ..Default::default()
        };
        assert_eq!(detect(&raw.encode()), Some(Format::Blktrace));
        assert_eq!(
            detect(b"fio version 3 iolog\n0 /d add\n"),
            Some(Format::Iolog)
        );
        assert_eq!(detect(b"fio version 2 iolog\r\n"), Some(Format::Iolog));
        assert_eq!(
            detect(b"\n  8,0    1        1     0.000000000  1234  Q  WS 1 + 8 [a]\n"),
            Some(Format::Blkparse)
        );
        assert_eq!(
            detect(
                b"# tracer: nop\n#\n  <...>-19829   [000] .....  1662.607850: block_plug: [bash]\n"
            ),
            Some(Format::Tracefs)
        );
        assert_eq!(
            detect(b"  <...>-19829   [000] .....  1662.607850: block_plug: [bash]\n"),
            Some(Format::Tracefs)
        );
        assert_eq!(detect(b"hello\n"), None);
        assert_eq!(detect(b""), None);
        assert_eq!(compression(&[0x1f, 0x8b, 8]), Compression::Gzip);
        assert_eq!(compression(b"\xfd7zXZ\0rest"), Compression::Xz);
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
    }
}
