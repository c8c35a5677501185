//! Sub-block I/O: requests on the export's block size (what clients are
//! told: 512 bytes for a file) but not on the device's direct-I/O alignment
//! (4096 bytes for a file on tmpfs, or on a disk with 4 KiB sectors),
//! served inside the server by read-modify-write ([`RmwOp`]), and the range
//! locks ([`RangeLocks`]) that serialise a read-modify-write against every
//! other write that overlaps it, on any worker.
//!
//! - A read below the alignment reads the aligned blocks that hold it, and
//!   its reply is its part of them.
//! - A write or write-zeroes below the alignment takes its aligned range
//!   exclusively; then, one step at a time, each partial block at its ends
//!   is read, patched with the request's bytes (or zeroes) and written
//!   back, and the aligned middle is written (from a copy of the payload in
//!   an aligned buffer) or zeroed; FUA, if asked, on every write. A failed
//!   step ends it with that step's error.
//! - Writes, write-zeroes and trims on the alignment take their range
//!   shared: they may overlap each other, never a read-modify-write.
//! - A trim below the alignment trims the whole aligned blocks inside it
//!   (a trim is a hint; none inside: nothing to do).
//!
//! A request whose range is taken waits, its connection not read from,
//! until the range is given back (the worker is woken when it is).

use std::sync::Mutex;

use elevator_core::{BioFlags, IoContext};
use elevator_io::DioRequest;

use crate::pool::{Buf, Pool};
use crate::proto::cmd;

/// A range of an export taken by a write in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    /// First byte.
    pub start: u64,
    /// End (exclusive).
    pub end: u64,
    /// Taken alone (a read-modify-write), or shared with other writes.
    pub exclusive: bool,
}

impl Held {
    fn conflicts(&self, other: &Held) -> bool {
        self.start < other.end && other.start < self.end && (self.exclusive || other.exclusive)
    }
}

/// The ranges of one export taken by writes in flight, on every worker.
#[derive(Debug, Default)]
pub(crate) struct RangeLocks {
    held: Mutex<Vec<Held>>,
}

impl RangeLocks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Held>> {
        // A worker that panicked holding it left the list whole.
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take `h` if nothing held conflicts with it: whether it was taken.
    pub(crate) fn try_take(&self, h: Held) -> bool {
        let mut held = self.lock();
        if held.iter().any(|x| x.conflicts(&h)) {
            return false;
        }
        held.push(h);
        true
    }

    /// Whether `h` could be taken now.
    pub(crate) fn would_take(&self, h: Held) -> bool {
        !self.lock().iter().any(|x| x.conflicts(&h))
    }

    /// Give `h` back.
    pub(crate) fn give_back(&self, h: Held) {
        let mut held = self.lock();
        if let Some(i) = held.iter().position(|x| *x == h) {
            held.swap_remove(i);
        }
    }
}

fn floor(x: u64, a: u64) -> u64 {
    x / a * a
}

fn ceil(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Whether `offset..offset + len` is off the alignment `align`.
pub(crate) fn below(offset: u64, len: u64, align: u64) -> bool {
    !offset.is_multiple_of(align) || !len.is_multiple_of(align)
}

/// The aligned range that holds `offset..end` (which fits in a `u64`,
/// checked where the request was).
pub(crate) fn aligned(offset: u64, end: u64, align: u64) -> (u64, u64) {
    (floor(offset, align), ceil(end, align))
}

/// The whole aligned blocks inside `offset..end` (empty: start >= end).
pub(crate) fn inside(offset: u64, end: u64, align: u64) -> (u64, u64) {
    (ceil(offset, align), floor(end, align))
}

/// What a read-modify-write of `len` bytes at a device alignment of `align`
/// holds besides its reply: for a read, its aligned blocks; for a write,
/// its payload, one block and a copy of its middle; for a write-zeroes, one
/// block.
pub(crate) fn extra_bytes(kind: u16, offset: u64, len: u64, align: u64) -> u64 {
    let end = offset + len;
    let (a0, a1) = aligned(offset, end, align);
    let (m0, m1) = inside(offset, end, align);
    let size = |n: u64| crate::pool::alloc_size(n as usize);
    match kind {
        cmd::READ => size(a1 - a0),
        cmd::WRITE => size(len) + size(align) + if m1 > m0 { size(m1 - m0) } else { 0 },
        _ => size(align),
    }
}

/// The steps of a read-modify-write, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// A read: its aligned blocks, whole.
    ReadWhole,
    ReadHead,
    WriteHead,
    ReadTail,
    WriteTail,
    Middle,
}

/// One read-modify-write in flight: a request below the device's alignment.
pub(crate) struct RmwOp {
    /// Its connection's generation (of its slot), and its cookie.
    pub generation: u32,
    /// See `generation`.
    pub cookie: u64,
    /// The export.
    pub export: usize,
    /// `cmd::READ`, `cmd::WRITE` or `cmd::WRITE_ZEROES`.
    pub kind: u16,
    fua: bool,
    ctx: IoContext,
    /// The request's range.
    pub offset: u64,
    /// See `offset`.
    pub len: u64,
    align: u64,
    /// A write's data.
    payload: Option<Buf>,
    /// The range it holds (writes).
    pub lock: Option<Held>,
    /// Bytes of the budget held for it.
    pub reserved: u64,
    step: Step,
}

/// What the step that completed leads to.
pub(crate) enum Next {
    /// Submit this.
    Submit(DioRequest<Buf>),
    /// Done: for a read, its aligned blocks (the reply is a part of them).
    Done(Option<Buf>),
    /// No memory for the next step.
    NoMemory,
}

impl RmwOp {
    /// A read-modify-write of request `r` from a connection (its slot's
    /// generation and its I/O context) on export `export`, at device
    /// alignment `align`, with a write's `payload`, holding range `lock`
    /// and `reserved` bytes of the budget.
    pub(crate) fn new(
        conn: (u32, IoContext),
        export: usize,
        r: &crate::proto::Request,
        align: u64,
        payload: Option<Buf>,
        lock: Option<Held>,
        reserved: u64,
    ) -> RmwOp {
        let mut op = RmwOp {
            generation: conn.0,
            cookie: r.cookie,
            export,
            kind: r.kind,
            fua: r.flags & crate::proto::cflag::FUA != 0,
            ctx: conn.1,
            offset: r.offset,
            len: u64::from(r.len),
            align,
            payload,
            lock,
            reserved,
            step: Step::ReadWhole,
        };
        op.step = if op.kind == cmd::READ {
            Step::ReadWhole
        } else {
            op.steps().next().unwrap_or(Step::Middle)
        };
        op
    }

    fn end(&self) -> u64 {
        self.offset + self.len
    }

    /// The partial block at the start: (block, first byte, end of the
    /// request's bytes in it).
    fn head(&self) -> Option<(u64, u64, u64)> {
        let block = floor(self.offset, self.align);
        (block != self.offset).then(|| (block, self.offset, self.end().min(block + self.align)))
    }

    /// The partial block at the end, unless it is the head's.
    fn tail(&self) -> Option<(u64, u64, u64)> {
        let block = floor(self.end(), self.align);
        if block == self.end() || self.head().is_some_and(|(h, _, _)| h == block) {
            return None;
        }
        Some((block, self.offset.max(block), self.end()))
    }

    /// The partial block the current step reads or writes (the head's for
    /// the head's steps, else the tail's), as [`RmwOp::head`] gives it.
    fn partial_block(&self) -> (u64, u64, u64) {
        let part = if matches!(self.step, Step::ReadHead | Step::WriteHead) {
            self.head()
        } else {
            self.tail()
        };
        part.unwrap_or_default()
    }

    fn middle(&self) -> Option<(u64, u64)> {
        let (m0, m1) = inside(self.offset, self.end(), self.align);
        (m0 < m1).then_some((m0, m1))
    }

    /// A write's steps, in order.
    fn steps(&self) -> impl Iterator<Item = Step> + Clone + use<> {
        let (h, t, m) = (
            self.head().is_some(),
            self.tail().is_some(),
            self.middle().is_some(),
        );
        [
            (Step::ReadHead, h),
            (Step::WriteHead, h),
            (Step::ReadTail, t),
            (Step::WriteTail, t),
            (Step::Middle, m),
        ]
        .into_iter()
        .filter_map(|(s, on)| on.then_some(s))
    }

    /// The request of its first step, to submit with `user_data`.
    pub(crate) fn first(&mut self, pool: &mut Pool, user_data: u64) -> Next {
        self.request(None, pool, user_data)
    }

    /// The step under way completed (successfully), giving back `buf`:
    /// the next step's request, or the end.
    pub(crate) fn advance(&mut self, buf: Option<Buf>, pool: &mut Pool, user_data: u64) -> Next {
        if self.step == Step::ReadWhole {
            return Next::Done(buf);
        }
        let next = self.steps().skip_while(|s| *s != self.step).nth(1);
        let Some(next) = next else {
            if let Some(b) = buf {
                pool.put(b);
            }
            if let Some(p) = self.payload.take() {
                pool.put(p);
            }
            return Next::Done(None);
        };
        self.step = next;
        self.request(buf, pool, user_data)
    }

    /// The request of the current step; `buf` is what the previous step
    /// gave back (the block it read, to patch and write back).
    fn request(&mut self, buf: Option<Buf>, pool: &mut Pool, ud: u64) -> Next {
        let mut list = pool.list();
        let fua = if self.fua {
            BioFlags::FUA
        } else {
            BioFlags::NONE
        };
        let block_buf = |buf: Option<Buf>, pool: &mut Pool, len: u64| match buf {
            Some(b) if b.len() as u64 == len => Some(b),
            other => {
                if let Some(b) = other {
                    pool.put(b);
                }
                pool.get(len as usize).ok()
            }
        };
        let req = match self.step {
            Step::ReadWhole
            | Step::ReadHead
            | Step::ReadTail
            | Step::WriteHead
            | Step::WriteTail => {
                let (block, from, to) = self.partial_block();
                let (at, len) = match self.step {
                    Step::ReadWhole => {
                        let (a0, a1) = aligned(self.offset, self.end(), self.align);
                        (a0, a1 - a0)
                    }
                    _ => (block, self.align),
                };
                let Some(mut b) = block_buf(buf, pool, len) else {
                    pool.put_list(list);
                    return Next::NoMemory;
                };
                let patch = matches!(self.step, Step::WriteHead | Step::WriteTail);
                if patch {
                    let into = (from - block) as usize..(to - block) as usize;
                    match &self.payload {
                        Some(p) => b[into].copy_from_slice(
                            &p[(from - self.offset) as usize..(to - self.offset) as usize],
                        ),
                        None => b[into].fill(0),
                    }
                }
                list.push(b);
                if patch {
                    DioRequest::write(block, list, ud).with_flags(fua)
                } else {
                    DioRequest::read(at, list, ud)
                }
            }
            Step::Middle => {
                if let Some(b) = buf {
                    pool.put(b);
                }
                let (m0, m1) = self.middle().unwrap_or_default();
                match &self.payload {
                    Some(p) => {
                        let Ok(mut b) = pool.get((m1 - m0) as usize) else {
                            pool.put_list(list);
                            return Next::NoMemory;
                        };
                        let from = (m0 - self.offset) as usize;
                        b.copy_from_slice(&p[from..from + (m1 - m0) as usize]);
                        list.push(b);
                        DioRequest::write(m0, list, ud).with_flags(fua)
                    }
                    None => {
                        pool.put_list(list);
                        DioRequest::write_zeroes(m0, m1 - m0, ud).with_flags(fua)
                    }
                }
            }
        };
        Next::Submit(req.with_ctx(self.ctx))
    }

    /// It is over (done or failed): its buffers go back to `pool`.
    pub(crate) fn drop_buffers(&mut self, pool: &mut Pool) {
        if let Some(p) = self.payload.take() {
            pool.put(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Request;

    fn op(kind: u16, offset: u64, len: u32) -> RmwOp {
        let r = Request::unflagged(kind, 1, offset, len);
        RmwOp::new((0, IoContext(1)), 0, &r, 4096, None, None, 0)
    }

    #[test]
    fn a_write_is_split_at_the_alignment() {
        // 512 bytes inside one block: that block alone.
        let o = op(cmd::WRITE, 512, 512);
        assert_eq!(o.head(), Some((0, 512, 1024)));
        assert_eq!((o.tail(), o.middle()), (None, None));
        assert_eq!(
            o.steps().collect::<Vec<_>>(),
            [Step::ReadHead, Step::WriteHead]
        );
        // Across blocks: a head, a middle and a tail.
        let o = op(cmd::WRITE, 3584, 8192 + 1024);
        assert_eq!(o.head(), Some((0, 3584, 4096)));
        assert_eq!(o.middle(), Some((4096, 12288)));
        assert_eq!(o.tail(), Some((12288, 12288, 12800)));
        // Starting on a block, ending off one: a middle and a tail.
        let o = op(cmd::WRITE_ZEROES, 4096, 4608);
        assert_eq!((o.head(), o.middle()), (None, Some((4096, 8192))));
        assert_eq!(o.tail(), Some((8192, 8192, 8704)));
        assert_eq!(
            o.steps().collect::<Vec<_>>(),
            [Step::ReadTail, Step::WriteTail, Step::Middle]
        );
        // Two partial blocks side by side, no middle.
        let o = op(cmd::WRITE, 3584, 1024);
        assert_eq!(o.head(), Some((0, 3584, 4096)));
        assert_eq!(o.tail(), Some((4096, 4096, 4608)));
        assert_eq!(o.middle(), None);
    }

    #[test]
    fn reads_and_trims_round_to_the_blocks() {
        assert!(below(512, 512, 4096));
        assert!(!below(8192, 4096, 4096));
        assert_eq!(aligned(512, 1024, 4096), (0, 4096));
        assert_eq!(inside(512, 1024, 4096), (4096, 0));
        assert_eq!(inside(512, 12288, 4096), (4096, 12288));
        assert_eq!(extra_bytes(cmd::READ, 3584, 1024, 4096), 8192);
    }

    #[test]
    fn exclusive_ranges_exclude_every_overlap() {
        let l = RangeLocks::default();
        let ex = |start, end| Held {
            start,
            end,
            exclusive: true,
        };
        let sh = |start, end| Held {
            start,
            end,
            exclusive: false,
        };
        assert!(l.try_take(sh(0, 8192)));
        assert!(l.try_take(sh(4096, 12288)), "shared overlap shared");
        assert!(!l.try_take(ex(8192, 12288)), "exclusive over shared");
        assert!(l.try_take(ex(12288, 16384)), "beside");
        assert!(!l.would_take(sh(12288, 12800)));
        l.give_back(sh(4096, 12288));
        assert!(l.try_take(ex(8192, 12288)));
        l.give_back(ex(12288, 16384));
        assert!(l.would_take(sh(12288, 12800)));
    }
}
