//! Writing a write log.

use std::io::{self, IoSlice, Write};

use super::{
    FLAG_DATA, HEADER_HAS_DATA, HEADER_LEN, Kind, LogHeader, MAGIC, RECORD_HEAD_LEN, RECORD_MAGIC,
    VERSION,
};

/// Writes a log: the header at once, then one record per call.
pub struct Writer<W: Write> {
    out: W,
    header: LogHeader,
    seq: u64,
    bytes: u64,
}

/// The header's bytes.
pub(super) fn encode_header(h: &LogHeader) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0..8].copy_from_slice(&MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    let flags = if h.has_data { HEADER_HAS_DATA } else { 0 };
    b[12..16].copy_from_slice(&flags.to_le_bytes());
    b[16..24].copy_from_slice(&h.capacity.to_le_bytes());
    b[24..28].copy_from_slice(&h.block_size.to_le_bytes());
    let crc = crc32fast::hash(&b[0..60]);
    b[60..64].copy_from_slice(&crc.to_le_bytes());
    b
}

impl<W: Write> Writer<W> {
    /// Start a log on `out` (give it a `BufWriter`: records are written in
    /// pieces).
    pub fn new(mut out: W, header: LogHeader) -> io::Result<Writer<W>> {
        out.write_all(&encode_header(&header))?;
        Ok(Writer {
            out,
            header,
            seq: 0,
            bytes: HEADER_LEN as u64,
        })
    }

    /// What the log is of.
    pub fn header(&self) -> LogHeader {
        self.header
    }

    /// Records written so far (the next record's sequence number).
    pub fn records(&self) -> u64 {
        self.seq
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Append a record whose payload is `payload`'s pieces one after
    /// another; returns its sequence number. A write's payload is its data
    /// (pass `FLAG_DATA` in `flags`) or nothing; a mark's is its text.
    /// A write carrying data must carry all of it.
    #[allow(clippy::too_many_arguments)]
    pub fn append(
        &mut self,
        kind: Kind,
        flags: u8,
        sector: u64,
        sectors: u32,
        time_ns: u64,
        payload: &[&[u8]],
    ) -> io::Result<u64> {
        let len: usize = payload.iter().map(|p| p.len()).sum();
        let payload_len = u32::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "payload over 4 GiB"))?;
        debug_assert!(
            flags & FLAG_DATA == 0 || u64::from(payload_len) == u64::from(sectors) << 9,
            "a write's data is all its sectors"
        );
        let mut h = [0u8; RECORD_HEAD_LEN];
        h[0..4].copy_from_slice(&RECORD_MAGIC);
        h[4] = kind.code();
        h[5] = flags;
        h[8..16].copy_from_slice(&self.seq.to_le_bytes());
        h[16..24].copy_from_slice(&sector.to_le_bytes());
        h[24..28].copy_from_slice(&sectors.to_le_bytes());
        h[28..32].copy_from_slice(&payload_len.to_le_bytes());
        h[32..40].copy_from_slice(&time_ns.to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&h[0..44]);
        for p in payload {
            crc.update(p);
        }
        h[44..48].copy_from_slice(&crc.finalize().to_le_bytes());
        // One vectored write of the head and the pieces: a buffered
        // writer passes a large record through without copying it.
        let mut stack = [IoSlice::new(&[]); 17];
        let mut heap = Vec::new();
        let slices: &mut [IoSlice<'_>] = if payload.len() < stack.len() {
            stack[0] = IoSlice::new(&h);
            for (s, p) in stack[1..].iter_mut().zip(payload) {
                *s = IoSlice::new(p);
            }
            &mut stack[..=payload.len()]
        } else {
            heap.push(IoSlice::new(&h));
            heap.extend(payload.iter().map(|p| IoSlice::new(p)));
            &mut heap
        };
        write_all_vectored(&mut self.out, slices)?;
        self.bytes += (RECORD_HEAD_LEN + len) as u64;
        let seq = self.seq;
        self.seq += 1;
        Ok(seq)
    }

    /// Append a mark with `text`.
    pub fn mark(&mut self, text: &str, time_ns: u64) -> io::Result<u64> {
        self.append(Kind::Mark, 0, 0, 0, time_ns, &[text.as_bytes()])
    }

    /// Push what is buffered to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The output, flushed.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Write every byte of `slices` (what `Write::write_all_vectored` does, on
/// stable Rust).
fn write_all_vectored(out: &mut impl Write, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match out.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
