//! Bios: one contiguous I/O from a submitter, and the small types that describe it
//! (operation, flags, priority, I/O context, completion status).
//!
//! A [`Bio`] names a byte range on the device and one contiguous buffer of the
//! caller's (the core never touches data; it only needs the length). The caller's
//! `token` comes back in the bio's single [`BioCompletion`].

use std::fmt;

/// A 512-byte sector number or count, the unit of every position in the core.
pub type Sector = u64;

/// Time in nanoseconds. The core has no clock: callers pass `now` in.
pub type Nanos = u64;

/// Bytes per sector.
pub const SECTOR_SIZE: u32 = 512;
/// `log2(SECTOR_SIZE)`.
pub const SECTOR_SHIFT: u32 = 9;

/// What a bio asks the device to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    /// Read data into the caller's buffer.
    Read = 0,
    /// Write the caller's buffer.
    Write = 1,
    /// Make completed writes durable (a cache flush). Carries no data.
    Flush = 2,
    /// Tell the device a range is no longer needed. Carries no data buffer.
    Discard = 3,
    /// Write zeroes to a range without a data buffer.
    WriteZeroes = 4,
}

impl Op {
    /// All operations, in declaration order.
    pub const ALL: [Op; 5] = [Op::Read, Op::Write, Op::Flush, Op::Discard, Op::WriteZeroes];

    /// The direction schedulers sort this operation under. Discard and
    /// write-zeroes count as writes, as in Linux (`op_is_write`); a flush never
    /// reaches a scheduler, and is called a write here.
    #[inline]
    pub fn dir(self) -> Dir {
        match self {
            Op::Read => Dir::Read,
            _ => Dir::Write,
        }
    }

    /// Whether the bio moves data through a caller's buffer (and so has segments).
    #[inline]
    pub fn has_data(self) -> bool {
        matches!(self, Op::Read | Op::Write)
    }

    /// Whether requests of this operation may take further bios (Linux: flush
    /// and write-zeroes requests never merge).
    #[inline]
    pub fn mergeable(self) -> bool {
        matches!(self, Op::Read | Op::Write | Op::Discard)
    }

    /// The operation's name as Linux and blktrace spell it.
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Discard => "discard",
            Op::WriteZeroes => "write-zeroes",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Data direction, the axis deadline-style schedulers split on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Dir {
    /// Reads.
    Read = 0,
    /// Writes, discards, write-zeroes.
    Write = 1,
}

impl Dir {
    /// Index for per-direction arrays.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Bio flags (a small bit set), with Linux's meanings.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BioFlags(u8);

impl BioFlags {
    /// No flags.
    pub const NONE: BioFlags = BioFlags(0);
    /// Synchronous: a submitter waits for it (reads, O_DIRECT writes).
    pub const SYNC: BioFlags = BioFlags(1);
    /// File-system metadata.
    pub const META: BioFlags = BioFlags(2);
    /// Forced unit access: complete only once the data is on stable media.
    pub const FUA: BioFlags = BioFlags(4);
    /// Flush the device's cache before this I/O.
    pub const PREFLUSH: BioFlags = BioFlags(8);
    /// Never merge this bio, nor anything into its request.
    pub const NOMERGE: BioFlags = BioFlags(16);

    const NAMES: [(BioFlags, &'static str); 5] = [
        (BioFlags::SYNC, "sync"),
        (BioFlags::META, "meta"),
        (BioFlags::FUA, "fua"),
        (BioFlags::PREFLUSH, "preflush"),
        (BioFlags::NOMERGE, "nomerge"),
    ];

    /// Whether every flag of `other` is set in `self`.
    #[inline]
    pub fn contains(self, other: BioFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any flag of `other` is set in `self`.
    #[inline]
    pub fn intersects(self, other: BioFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// The flags that keep a bio or request from merging (Linux `REQ_NOMERGE_FLAGS`).
    pub const NO_MERGE_MASK: BioFlags = BioFlags(4 | 8 | 16);

    /// Whether these flags allow merging.
    #[inline]
    pub fn mergeable(self) -> bool {
        !self.intersects(BioFlags::NO_MERGE_MASK)
    }

    /// These flags without those of `other`.
    #[inline]
    pub fn without(self, other: BioFlags) -> BioFlags {
        BioFlags(self.0 & !other.0)
    }

    /// The raw bits.
    #[inline]
    pub fn bits(self) -> u8 {
        self.0
    }
}

impl std::ops::BitOr for BioFlags {
    type Output = BioFlags;
    #[inline]
    fn bitor(self, rhs: BioFlags) -> BioFlags {
        BioFlags(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for BioFlags {
    #[inline]
    fn bitor_assign(&mut self, rhs: BioFlags) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for BioFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for BioFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (flag, name) in BioFlags::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// I/O priority class, as Linux's `ioprio` classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum PrioClass {
    /// Real time: served before everything else.
    Rt = 0,
    /// Best effort: the default.
    Be = 1,
    /// Idle: served when nothing else wants the disk.
    Idle = 2,
}

impl PrioClass {
    /// Index for per-class arrays (RT 0, BE 1, IDLE 2).
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The class's name as `ionice` spells it.
    pub fn name(self) -> &'static str {
        match self {
            PrioClass::Rt => "rt",
            PrioClass::Be => "be",
            PrioClass::Idle => "idle",
        }
    }
}

/// An I/O priority: a class and a level within it (0 highest .. 7 lowest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoPrio {
    class: PrioClass,
    level: u8,
}

impl IoPrio {
    /// Best effort, level 4: what a process gets by default.
    pub const DEFAULT: IoPrio = IoPrio {
        class: PrioClass::Be,
        level: 4,
    };

    /// A priority; the level must be 0..=7.
    pub fn new(class: PrioClass, level: u8) -> Result<IoPrio, crate::BioError> {
        if level > 7 {
            return Err(crate::BioError::PrioLevel { level });
        }
        Ok(IoPrio { class, level })
    }

    /// The class.
    #[inline]
    pub fn class(self) -> PrioClass {
        self.class
    }

    /// The level, 0..=7.
    #[inline]
    pub fn level(self) -> u8 {
        self.level
    }
}

impl Default for IoPrio {
    fn default() -> IoPrio {
        IoPrio::DEFAULT
    }
}

/// Which submitter a bio belongs to (a process, an fio job, an NBD connection).
/// Fair-queueing schedulers keep one queue per context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct IoContext(pub u32);

/// One contiguous I/O from a submitter.
///
/// `len` is in bytes; it and `sector` must be multiples of the queue's logical
/// block size. Data operations need `len > 0`; a flush needs `len == 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bio {
    /// The operation.
    pub op: Op,
    /// First 512-byte sector.
    pub sector: Sector,
    /// Length in bytes.
    pub len: u32,
    /// Flags.
    pub flags: BioFlags,
    /// The submitter.
    pub ctx: IoContext,
    /// Priority.
    pub prio: IoPrio,
    /// The caller's token, returned in the bio's completion.
    pub token: u64,
}

impl Bio {
    /// A bio with default flags, context 0 and default priority.
    pub fn new(op: Op, sector: Sector, len: u32, token: u64) -> Bio {
        Bio {
            op,
            sector,
            len,
            flags: BioFlags::NONE,
            ctx: IoContext(0),
            prio: IoPrio::DEFAULT,
            token,
        }
    }

    /// A synchronous read.
    pub fn read(sector: Sector, len: u32, token: u64) -> Bio {
        Bio::new(Op::Read, sector, len, token).with_flags(BioFlags::SYNC)
    }

    /// A (asynchronous, buffered-style) write.
    pub fn write(sector: Sector, len: u32, token: u64) -> Bio {
        Bio::new(Op::Write, sector, len, token)
    }

    /// A cache flush.
    pub fn flush(token: u64) -> Bio {
        Bio::new(Op::Flush, 0, 0, token).with_flags(BioFlags::PREFLUSH)
    }

    /// These flags added.
    pub fn with_flags(mut self, flags: BioFlags) -> Bio {
        self.flags |= flags;
        self
    }

    /// This context.
    pub fn with_ctx(mut self, ctx: IoContext) -> Bio {
        self.ctx = ctx;
        self
    }

    /// This priority.
    pub fn with_prio(mut self, prio: IoPrio) -> Bio {
        self.prio = prio;
        self
    }

    /// Length in sectors.
    #[inline]
    pub fn sectors(&self) -> u32 {
        self.len >> SECTOR_SHIFT
    }

    /// The sector just past the bio.
    #[inline]
    pub fn end(&self) -> Sector {
        self.sector + u64::from(self.sectors())
    }

    /// Whether the bio may merge at all (op and flags).
    #[inline]
    pub fn mergeable(&self) -> bool {
        self.op.mergeable() && self.flags.mergeable()
    }
}

/// How an I/O ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Completed.
    Ok,
    /// The device failed it (EIO).
    IoError,
    /// The device is out of space (ENOSPC).
    NoSpace,
    /// The device does not support the operation (EOPNOTSUPP).
    NotSupported,
    /// Cancelled before completion, e.g. at shutdown (ECANCELED).
    Cancelled,
    /// The device did not answer in time and the I/O was given up
    /// (ETIMEDOUT; Linux's `BLK_STS_TIMEOUT`).
    TimedOut,
    /// The device is gone: removed, or dead mid-run (ENODEV; Linux's
    /// `BLK_STS_OFFLINE`).
    Offline,
}

impl Status {
    /// Whether this is success.
    #[inline]
    pub fn is_ok(self) -> bool {
        self == Status::Ok
    }

    /// The POSIX errno this status maps to (0 for `Ok`).
    pub fn errno(self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::IoError => 5,
            Status::NoSpace => 28,
            Status::NotSupported => 95,
            Status::Cancelled => 125,
            Status::TimedOut => 110,
            Status::Offline => 19,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::IoError => "I/O error",
            Status::NoSpace => "no space left on device",
            Status::NotSupported => "operation not supported",
            Status::Cancelled => "cancelled",
            Status::TimedOut => "timed out",
            Status::Offline => "device offline",
        })
    }
}

/// The one completion every submitted bio gets.
///
/// `bytes` counts the bytes from the start of the bio that completed before the
/// first failure: all of `len` on success, and never a byte that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BioCompletion {
    /// The bio's token.
    pub token: u64,
    /// The bio's status: the status of its earliest failed byte, else `Ok`.
    pub status: Status,
    /// Bytes completed from the start of the bio.
    pub bytes: u32,
}
