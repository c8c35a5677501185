//! The direct-I/O submission path's contract: what a caller asks
//! ([`DioRequest`]), what is refused before anything starts ([`DioError`]),
//! and what the caller learns at the end ([`Completion`]).
//!
//! Rules, as Linux's block-device direct I/O keeps them:
//!
//! - **Alignment is checked on every segment, before any I/O starts.** The
//!   file offset must be a multiple of the device's offset alignment (its
//!   logical block size); every segment's address a multiple of its memory
//!   (DMA) alignment, and every segment's length a multiple of the logical
//!   block size. The first segment that breaks a rule is named in the error.
//!   So are I/O past the end of the device, buffers on an operation that
//!   carries none, and too many segments.
//! - **A zero-length read or write completes at once with 0 bytes.**
//! - **Partial failure**: a request is split into bios (one or more per
//!   segment, each within the queue's limits). If every bio succeeds, the
//!   caller gets `Ok(len)`. Otherwise it gets the error of the *first failed
//!   bio in file order* and `done`, the number of bytes from the start of the
//!   request up to the first byte that failed: the bytes of every bio before
//!   it plus whatever that bio itself reports as good. Bytes after it are
//!   never counted, even if their bios succeeded, so `done` never includes
//!   data that failed (a short read of `done` bytes is exactly what the
//!   caller's buffers hold correctly).
//! - **Buffers come back with the completion, on every path** (success,
//!   failure, cancellation, refusal): the engine holds none afterwards.

use elevator_core::{BioFlags, IoContext, IoPrio, Nanos, Op, Status};
use thiserror::Error;

use crate::buf::IoBuf;
use crate::device::Alignment;

/// Most segments one request may have (Linux `UIO_MAXIOV`).
pub const MAX_SEGMENTS: usize = 1024;

/// A caller's request: an operation at a byte offset over a list of buffers.
#[derive(Debug)]
pub struct DioRequest<B> {
    /// The operation.
    pub op: Op,
    /// Byte offset on the device.
    pub offset: u64,
    /// Length in bytes of an operation without buffers (discard,
    /// write-zeroes); ignored for reads and writes, whose length is the sum
    /// of their buffers'; 0 for a flush.
    pub len: u64,
    /// The data, in order (an iovec): read into, or written from.
    pub bufs: Vec<B>,
    /// Flags (FUA, PREFLUSH, SYNC, META, NOMERGE).
    pub flags: BioFlags,
    /// Who is asking: fair schedulers keep one queue per context.
    pub ctx: IoContext,
    /// Priority.
    pub prio: IoPrio,
    /// The caller's value, returned in the completion.
    pub user_data: u64,
}

impl<B: IoBuf> DioRequest<B> {
    fn new(op: Op, offset: u64, len: u64, bufs: Vec<B>, user_data: u64) -> DioRequest<B> {
        DioRequest {
            op,
            offset,
            len,
            bufs,
            flags: if op == Op::Read {
                BioFlags::SYNC
            } else {
                BioFlags::NONE
            },
            ctx: IoContext(0),
            prio: IoPrio::DEFAULT,
            user_data,
        }
    }

    /// Read into `bufs` from `offset`.
    pub fn read(offset: u64, bufs: Vec<B>, user_data: u64) -> DioRequest<B> {
        DioRequest::new(Op::Read, offset, 0, bufs, user_data)
    }

    /// Write `bufs` at `offset` (synchronous, as an O_DIRECT write is).
    pub fn write(offset: u64, bufs: Vec<B>, user_data: u64) -> DioRequest<B> {
        DioRequest::new(Op::Write, offset, 0, bufs, user_data).with_flags(BioFlags::SYNC)
    }

    /// Make completed writes durable.
    pub fn flush(user_data: u64) -> DioRequest<B> {
        DioRequest::new(Op::Flush, 0, 0, Vec::new(), user_data)
    }

    /// Discard `len` bytes at `offset`.
    pub fn discard(offset: u64, len: u64, user_data: u64) -> DioRequest<B> {
        DioRequest::new(Op::Discard, offset, len, Vec::new(), user_data)
    }

    /// Write `len` zero bytes at `offset`.
    pub fn write_zeroes(offset: u64, len: u64, user_data: u64) -> DioRequest<B> {
        DioRequest::new(Op::WriteZeroes, offset, len, Vec::new(), user_data)
    }

    /// These flags added.
    pub fn with_flags(mut self, flags: BioFlags) -> DioRequest<B> {
        self.flags |= flags;
        self
    }

    /// This I/O context.
    pub fn with_ctx(mut self, ctx: IoContext) -> DioRequest<B> {
        self.ctx = ctx;
        self
    }

    /// This priority.
    pub fn with_prio(mut self, prio: IoPrio) -> DioRequest<B> {
        self.prio = prio;
        self
    }

    /// Bytes the request covers on the device (0 for a flush, whatever
    /// `len` says).
    pub fn bytes(&self) -> u64 {
        match self.op {
            Op::Flush => 0,
            op if op.has_data() => self.bufs.iter().map(|b| b.len() as u64).sum(),
            _ => self.len,
        }
    }

    /// Check the request against a device's alignment and capacity (in
    /// bytes). Nothing is submitted unless this passes.
    pub fn check(&self, align: Alignment, capacity: u64) -> Result<(), DioError> {
        let block = u64::from(align.offset);
        let op = self.op;
        if !op.has_data() && !self.bufs.is_empty() {
            return Err(DioError::BuffersOnNoDataOp {
                op,
                count: self.bufs.len(),
            });
        }
        if op == Op::Flush {
            return Ok(());
        }
        if self.bufs.len() > MAX_SEGMENTS {
            return Err(DioError::TooManySegments {
                count: self.bufs.len(),
                max: MAX_SEGMENTS,
            });
        }
        let len = self.bytes();
        if len == 0 {
            return Ok(());
        }
        if !self.offset.is_multiple_of(block) {
            return Err(DioError::Offset {
                offset: self.offset,
                block: align.offset,
            });
        }
        if !op.has_data() && !len.is_multiple_of(block) {
            return Err(DioError::Length {
                len,
                block: align.offset,
            });
        }
        for (segment, b) in self.bufs.iter().enumerate() {
            let addr = b.as_ptr() as usize;
            if !addr.is_multiple_of(align.memory as usize) {
                return Err(DioError::SegmentAddress {
                    segment,
                    addr,
                    align: align.memory,
                });
            }
            if !(b.len() as u64).is_multiple_of(block) {
                return Err(DioError::SegmentLength {
                    segment,
                    len: b.len(),
                    block: align.offset,
                });
            }
        }
        match self.offset.checked_add(len) {
            Some(end) if end <= capacity => Ok(()),
            _ => Err(DioError::BeyondEnd {
                offset: self.offset,
                len,
                capacity,
            }),
        }
    }
}

/// Why a request was refused before any of it was submitted.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DioError {
    /// The file offset is not a multiple of the logical block size.
    #[error("offset {offset} is not a multiple of the device's {block}-byte logical block")]
    Offset {
        /// The offset.
        offset: u64,
        /// The block size.
        block: u32,
    },
    /// A discard or write-zeroes length is not a multiple of the block size.
    #[error("length {len} is not a multiple of the device's {block}-byte logical block")]
    Length {
        /// The length.
        len: u64,
        /// The block size.
        block: u32,
    },
    /// A segment's address breaks the device's memory alignment.
    #[error(
        "segment {segment}: buffer address {addr:#x} is not aligned to {align} bytes \
         (the device's DMA alignment)"
    )]
    SegmentAddress {
        /// Index of the segment (0-based).
        segment: usize,
        /// Its address.
        addr: usize,
        /// The alignment needed.
        align: u32,
    },
    /// A segment's length is not a multiple of the block size.
    #[error(
        "segment {segment}: length {len} is not a multiple of the device's {block}-byte \
         logical block"
    )]
    SegmentLength {
        /// Index of the segment (0-based).
        segment: usize,
        /// Its length.
        len: usize,
        /// The block size.
        block: u32,
    },
    /// The request reaches past the end of the device.
    #[error("{len} bytes at offset {offset} reach past the end of the device ({capacity} bytes)")]
    BeyondEnd {
        /// Offset.
        offset: u64,
        /// Length.
        len: u64,
        /// Device size in bytes.
        capacity: u64,
    },
    /// More segments than one request may have.
    #[error("{count} segments; at most {max} per request")]
    TooManySegments {
        /// Segments given.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Buffers given to an operation that moves no data.
    #[error("{op} carries no data, but {count} buffers were given")]
    BuffersOnNoDataOp {
        /// The operation.
        op: Op,
        /// Buffers given.
        count: usize,
    },
    /// The device is read-only and the request would change it.
    #[error("the device is read-only; {op} refused")]
    ReadOnly {
        /// The operation.
        op: Op,
    },
    /// As many requests are in flight as the engine allows.
    #[error("{max} requests are in flight already; wait for a completion")]
    Busy {
        /// The limit.
        max: u32,
    },
    /// The engine is shutting down.
    #[error("the engine is shutting down")]
    ShuttingDown,
}

/// A refused request, with everything the caller gave back.
#[derive(Debug)]
pub struct Rejected<B> {
    /// Why.
    pub error: DioError,
    /// The request, buffers and all.
    pub request: DioRequest<B>,
}

/// How a request that did not fully succeed ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("{status} after {done} bytes")]
pub struct DioFailure {
    /// Bytes from the start of the request that completed before the first
    /// failed byte.
    pub done: u64,
    /// The first failed bio's status.
    pub status: Status,
}

/// A finished request.
#[derive(Debug)]
pub struct Completion<B> {
    /// The caller's value.
    pub user_data: u64,
    /// The operation.
    pub op: Op,
    /// Bytes moved, or how it failed.
    pub result: Result<u64, DioFailure>,
    /// The caller's buffers, returned.
    pub bufs: Vec<B>,
    /// When its last bio entered the queue (engine clock).
    pub queued_at: Nanos,
    /// When it completed (engine clock).
    pub completed_at: Nanos,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::{AlignedBuf, Slice};

    const ALIGN: Alignment = Alignment {
        offset: 4096,
        memory: 512,
    };

    fn buf(len: usize) -> AlignedBuf {
        AlignedBuf::new(len, 4096).expect("alloc")
    }

    #[test]
    fn every_segment_is_checked_not_just_the_first() {
        let ok = DioRequest::read(0, vec![buf(4096), buf(8192)], 0);
        assert_eq!(ok.check(ALIGN, 1 << 20), Ok(()));
        let short = DioRequest::read(0, vec![buf(4096), buf(4096), buf(1024)], 0);
        assert!(matches!(
            short.check(ALIGN, 1 << 20),
            Err(DioError::SegmentLength {
                segment: 2,
                len: 1024,
                ..
            })
        ));
        let mut bufs: Vec<Slice<AlignedBuf>> = Vec::new();
        for start in [0, 0, 256] {
            bufs.push(Slice::new(buf(8192), start, 4096).expect("inside"));
        }
        let misaligned = DioRequest::read(0, bufs, 0);
        assert!(matches!(
            misaligned.check(ALIGN, 1 << 20),
            Err(DioError::SegmentAddress {
                segment: 2,
                align: 512,
                ..
            })
        ));
    }

    #[test]
    fn offsets_lengths_and_ends() {
        let r = DioRequest::read(512, vec![buf(4096)], 0);
        assert!(matches!(
            r.check(ALIGN, 1 << 20),
            Err(DioError::Offset { offset: 512, .. })
        ));
        let r = DioRequest::read((1 << 20) - 4096, vec![buf(8192)], 0);
        assert!(matches!(
            r.check(ALIGN, 1 << 20),
            Err(DioError::BeyondEnd { .. })
        ));
        let r = DioRequest::<AlignedBuf>::discard(u64::MAX - 4095, 8192, 0);
        assert!(matches!(
            r.check(ALIGN, 1 << 20),
            Err(DioError::BeyondEnd { .. })
        ));
        let r = DioRequest::<AlignedBuf>::write_zeroes(0, 1000, 0);
        assert!(matches!(
            r.check(ALIGN, 1 << 20),
            Err(DioError::Length { .. })
        ));
        let r = DioRequest::<AlignedBuf>::read(3, Vec::new(), 0);
        assert_eq!(
            r.check(ALIGN, 1 << 20),
            Ok(()),
            "zero length is fine anywhere"
        );
        let mut r = DioRequest::<AlignedBuf>::flush(0);
        r.bufs.push(buf(4096));
        assert!(matches!(
            r.check(ALIGN, 1 << 20),
            Err(DioError::BuffersOnNoDataOp { .. })
        ));
    }
}
