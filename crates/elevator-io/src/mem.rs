//! A device in memory: the bytes live in one zero-filled allocation, reads
//! and writes are copies, and every I/O completes as soon as it is submitted
//! (it is reported by the next [`Device::complete`]).
//!
//! Useful as the fastest possible device under the queue (to measure the
//! layer's own cost), as an NBD export that forgets everything on exit, and
//! in tests. It keeps the same rules as a real disk: its logical block size
//! (512 unless told otherwise) and a DMA alignment equal to it.
//!
//! It also lends windows on its bytes ([`MemSlice`], from
//! [`MemDevice::map`]) for I/O that moves data straight between a socket and
//! the device, and [`IoMem`] is the memory for one I/O that may be either a
//! caller's buffer or such a window.
//!
//! Several threads can drive one memory device, each through its own handle
//! ([`MemDevice::share`]): the same bytes, each handle with its own ready
//! list, queue depth and statistics (the caller adds the statistics up).
//! While a store has more than one handle, the handles copy its bytes
//! under a lock per 64 KiB chunk, one chunk at a time (`chunk_locks`: two
//! threads may write the same block at once, as two hosts may on a shared
//! disk: the result is one or the other's bytes, chunk by chunk, never
//! undefined behaviour), and lend windows only for the kernel to read ([`MemDevice::lend`]: a reply sent to a socket
//! straight from the store); with one handle they copy with plain `memcpy`,
//! as before.
//!
//! Memory is taken only for what is written. A store of 1 MiB or more is an
//! anonymous mapping whose pages the kernel makes resident as they are
//! first written; a write-zeroes or discard hands the whole pages it covers
//! back (`madvise(MADV_DONTNEED)`: they read as zeroes and cost nothing),
//! and in a page it covers only in part, writes zeroes only over bytes that
//! are not zero already, so that zeroing or trimming a hole never makes it
//! resident. Which pages were written is kept in a bitmap (`WrittenPages`), from
//! which the device reports its extents.
//!
//! And the host is not run out of memory: a write that would make new pages
//! resident fails with ENOSPC ([`Status::NoSpace`]) while the host has less
//! than [`MemOptions::host_reserve`] available besides (asked of a
//! [`HostMemory`], `/proc/meminfo` by default; not on every I/O, see
//! [`MemDevice::with_host_memory`]); [`oversize_warning`] says when a
//! device is larger than the host's available memory to begin with.

use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use elevator_core::{ByteRange, Device, DeviceIo, DeviceStats, Limits, Nanos, Op, Outcome, Status};

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::buf::{AlignedBuf, BufError, IoBuf, Slice};
use crate::device::{Alignment, DataDevice, DataSegment, DeviceError, sleep_or_watch, watchable};
use crate::extent::Extent;
use crate::written::{PAGE, WrittenPages};

mod chunk_locks;
mod send;

use chunk_locks::ChunkLocks;
pub use send::{LentSlice, SendList};

/// How to build a [`MemDevice`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemOptions {
    /// Logical block size: a power of two, 512..=65536. Default 512.
    pub logical_block_size: u32,
    /// I/Os it takes at once. Default 64.
    pub queue_depth: u32,
    /// Ask for transparent huge pages on stores of 2 MiB or more. Default
    /// false. Huge pages spare the TLB on random access over a big store,
    /// but on a VM whose balloon hands free memory back to the host, the
    /// first touch of a huge page can cost ten times that of the same bytes
    /// in small pages, or almost nothing, depending on what ran before
    /// (docs/benchmarks-real.md has the figures). Small pages cost the same every time.
    pub huge_pages: bool,
    /// Move the data (default true). False is null_blk's
    /// `memory_backed=0`: nothing is copied, reads leave the caller's
    /// buffer as it was and writes are dropped, so what a run measures is
    /// the layer alone, as with a device whose controller moves the data
    /// by DMA.
    pub copy: bool,
    /// Memory in bytes the host must keep available (Linux's
    /// `MemAvailable`) besides what a write makes resident: a write that
    /// needs new pages while less is left fails with ENOSPC
    /// ([`Status::NoSpace`]) instead of running the host out of memory.
    /// Default 64 MiB; 0 never refuses a write (and never asks the host).
    /// Where the kernel backs the store with transparent huge pages
    /// (`huge_pages`, or THP `always`), a write into a 2 MiB region with
    /// nothing written counts as 2 MiB.
    pub host_reserve: u64,
}

/// [`MemOptions::host_reserve`]'s default: 64 MiB.
pub const DEFAULT_HOST_RESERVE: u64 = 64 << 20;

impl Default for MemOptions {
    fn default() -> MemOptions {
        MemOptions {
            logical_block_size: 512,
            queue_depth: 64,
            huge_pages: false,
            copy: true,
            host_reserve: DEFAULT_HOST_RESERVE,
        }
    }
}

/// Where a memory device learns how much memory the host has left for its
/// new pages ([`MemOptions::host_reserve`]). [`ProcMeminfo`] asks Linux; a
/// test can stand in another.
pub trait HostMemory: Send + Sync {
    /// Bytes the host can still give without swapping or killing anything
    /// (Linux's `MemAvailable`), or `None` if it cannot tell (a device then
    /// refuses nothing).
    fn available(&self) -> Option<u64>;

    /// The size of the pages the kernel backs a first write to a store of
    /// 2 MiB or more with (asked once, when a device is made), given
    /// whether the device asked for huge pages ([`MemOptions::huge_pages`]).
    /// By default, Linux's transparent huge page settings ([`fault_size`]).
    fn fault_size(&self, huge_pages: bool) -> u64 {
        fault_size(huge_pages)
    }
}

/// The host's available memory as Linux reports it: `MemAvailable` in
/// `/proc/meminfo` (read anew on every call: a system call or three).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcMeminfo;

impl HostMemory for ProcMeminfo {
    fn available(&self) -> Option<u64> {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        meminfo_available(&text)
    }
}

/// `MemAvailable` in bytes, from the text of `/proc/meminfo` (whose
/// figures are in KiB, written `kB`).
pub fn meminfo_available(text: &str) -> Option<u64> {
    let kib = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    kib.checked_mul(1024)
}

/// A warning for a memory device of `bytes` on a host with less memory
/// available than that (`None` if it fits, or the host cannot tell): the
/// device is made all the same (it costs only what is written), but it can
/// never be filled, and its writes will fail with ENOSPC once the host is
/// short (`opts.host_reserve`).
pub fn oversize_warning(bytes: u64, opts: &MemOptions, host: &dyn HostMemory) -> Option<String> {
    let available = host.available()?;
    (bytes > available).then(|| {
        let refusal = if opts.host_reserve == 0 {
            "nothing refuses its writes (host_reserve=0): the host may run out of memory \
             and kill a process"
                .to_string()
        } else {
            format!(
                "writes that need new memory will fail with ENOSPC once less than {} MiB is \
                 left (host_reserve)",
                opts.host_reserve >> 20
            )
        };
        format!(
            "a memory device of {} MiB is larger than the {} MiB of memory this host has \
             available (MemAvailable in /proc/meminfo): it can never be filled; {refusal}",
            bytes >> 20,
            available >> 20
        )
    })
}

/// The size of the pages the kernel backs a first write to a store of 2 MiB
/// or more with (it sits on a 2 MiB boundary): a transparent huge page
/// (`hpage_pmd_size`, 2 MiB on x86-64) where Linux makes them for every
/// anonymous mapping (`enabled` is `always`), or for those that ask
/// (`madvise`) when `huge_pages` asked; else 4 KiB. Read from
/// `/sys/kernel/mm/transparent_hugepage`; where it cannot be read, huge
/// pages are assumed if asked for.
pub fn fault_size(huge_pages: bool) -> u64 {
    let thp = "/sys/kernel/mm/transparent_hugepage";
    let huge = match std::fs::read_to_string(format!("{thp}/enabled")) {
        Ok(mode) if mode.contains("[always]") => true,
        Ok(mode) if mode.contains("[madvise]") => huge_pages,
        Ok(_) => false,
        Err(_) => huge_pages,
    };
    if !huge {
        return PAGE;
    }
    std::fs::read_to_string(format!("{thp}/hpage_pmd_size"))
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .filter(|&b| b.is_power_of_two() && (64 * PAGE..=1 << 30).contains(&b))
        .unwrap_or(2 << 20)
}

/// Keeps a store's new pages from running the host out of memory: counts
/// down the bytes of new pages that may still be made resident before the
/// host is asked again, so that the host is asked at most once per
/// [`HostGuard::MOST`] bytes of new pages, more often only as the host's
/// memory runs short, and never for a write to pages already written.
struct HostGuard {
    host: Arc<dyn HostMemory>,
    /// [`MemOptions::host_reserve`].
    reserve: u64,
    /// Bytes of new pages allowed before the next question.
    budget: AtomicU64,
}

impl HostGuard {
    /// The most bytes of new pages allowed between two questions.
    const MOST: u64 = 64 << 20;

    /// Whether `bytes` of new pages may be made resident; each handle on
    /// the store asks the same guard.
    fn admit(&self, bytes: u64) -> bool {
        let taken = self
            .budget
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                b.checked_sub(bytes)
            });
        if taken.is_ok() {
            return true;
        }
        let Some(available) = self.host.available() else {
            // The host cannot tell: refuse nothing, and ask again later.
            self.budget.store(HostGuard::MOST, Ordering::Release);
            return true;
        };
        let room = available.saturating_sub(self.reserve);
        if bytes > room {
            // Short: each write that needs new pages asks again (a refused
            // write is not the hot path), so that memory freed meanwhile is
            // used at once.
            self.budget.store(0, Ordering::Release);
            return false;
        }
        // Half of what would be left, so that a run of writes asks more
        // often as the room shrinks and never takes the host below the
        // reserve by itself.
        self.budget
            .store(((room - bytes) / 2).min(HostGuard::MOST), Ordering::Release);
        true
    }
}

/// A memory device's bytes: one allocation, shared by the device handles
/// on it and the windows ([`MemSlice`]) lent out of it, and touched only
/// through raw pointers (it is memory that I/O moves through, like a
/// disk's, not a Rust value).
///
/// `handles` counts the device handles on it, `windows` the windows lent.
/// Windows that Rust code may read or write ([`MemDevice::map`]) exist only
/// while there is one handle (`map` lends none from a store with more, and
/// `share` makes none while windows are out). While there are several,
/// every access Rust code makes to the bytes is made under the lock of the
/// 64 KiB chunk it falls in (`locks`), so none races with another, and the
/// only other accesses are the
/// kernel's reads of windows lent for it ([`MemDevice::lend`]): a system
/// call such as `sendmsg` that copies them to a socket, which, like another
/// process reading shared memory, is not an access of this program's and
/// races with nothing in it (it sees each byte old or new).
struct MemStore {
    /// Where the bytes start (taken once from `_owner`); 4096-aligned.
    base: NonNull<u8>,
    len: usize,
    /// [`MemDevice`] handles on the store.
    handles: AtomicUsize,
    /// [`MemSlice`] windows on it.
    windows: AtomicUsize,
    /// The locks every copy in or out of the bytes takes while there are
    /// several handles (made by the first [`MemDevice::share`]).
    locks: OnceLock<ChunkLocks>,
    /// Which pages were written (for [`DataDevice::extents`], and to know
    /// which pages a write makes resident).
    written: WrittenPages,
    /// Whether the bytes are an anonymous mapping of their own, whose whole
    /// pages can be handed back to the kernel (a store under 1 MiB comes
    /// from the allocator, and is zeroed by writing).
    mapped: bool,
    /// Refuses new pages when the host is short (none when
    /// [`MemOptions::host_reserve`] is 0).
    guard: Option<HostGuard>,
    /// The size of the pages the kernel backs a first write with: 4 KiB, or
    /// a transparent huge page's size where the kernel uses them on this
    /// store ([`fault_size`]).
    fault: u64,
    /// Owns the allocation; never accessed after `base` is taken.
    _owner: AlignedBuf,
}

// SAFETY: the store is an allocation (`AlignedBuf` is Send and Sync) and its
// address; its bytes are only reached through the rules above: plain
// accesses by the one handle (and its windows, on its thread) while it is
// alone, accesses under the chunk locks by every handle while there are
// several (and the kernel's reads of windows lent for it, which are not
// Rust accesses).
unsafe impl Send for MemStore {}
// SAFETY: as for Send.
unsafe impl Sync for MemStore {}

/// A device whose media is memory.
///
/// It is `Send`, so that a share ([`MemDevice::share`]) can go to another
/// thread, but not `Sync`: a handle is driven by one thread at a time.
pub struct MemDevice {
    store: Arc<MemStore>,
    limits: Limits,
    queue_depth: u32,
    /// Whether data moves ([`MemOptions::copy`]).
    copy: bool,
    ready: VecDeque<(u32, Outcome)>,
    outstanding: u32,
    stats: DeviceStats,
    /// When busy time was last counted ([`MemDevice::account`]).
    busy_mark: Nanos,
    /// The descriptor `wait` also watches ([`DataDevice::watch`]).
    watch: Option<RawFd>,
    /// Not Sync: `map` and `share` must not race on one handle.
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl MemDevice {
    /// A device of `bytes` (rounded down to the block size), all zeroes,
    /// that asks `/proc/meminfo` ([`ProcMeminfo`]) whether the host has
    /// memory for its new pages.
    pub fn new(bytes: u64, opts: MemOptions) -> Result<MemDevice, DeviceError> {
        MemDevice::with_host_memory(bytes, opts, Arc::new(ProcMeminfo))
    }

    /// A device of `bytes` (rounded down to the block size), all zeroes,
    /// that asks `host` whether the host has memory for its new pages
    /// ([`MemOptions::host_reserve`]). It asks when a write needs new pages
    /// and what it was last told does not cover them: at most once per 64
    /// MiB of new pages while memory is plentiful, more often as it runs
    /// short, on every write that needs new pages once it is short (those
    /// fail with ENOSPC), and never for writes to pages already written.
    pub fn with_host_memory(
        bytes: u64,
        opts: MemOptions,
        host: Arc<dyn HostMemory>,
    ) -> Result<MemDevice, DeviceError> {
        let lbs = opts.logical_block_size;
        let geometry = |why: String| DeviceError::Geometry {
            path: "mem".into(),
            why,
        };
        if !lbs.is_power_of_two() || !(512..=65536).contains(&lbs) {
            return Err(geometry(format!(
                "logical block size (lbs) {lbs} must be a power of two from 512 to 65536"
            )));
        }
        if opts.queue_depth == 0 || opts.queue_depth > 4096 {
            return Err(geometry(format!(
                "queue depth {} must be 1..=4096",
                opts.queue_depth
            )));
        }
        let bytes = bytes / u64::from(lbs) * u64::from(lbs);
        if bytes == 0 {
            return Err(geometry(format!(
                "a memory device needs at least one {lbs}-byte block"
            )));
        }
        let len = usize::try_from(bytes)
            .map_err(|_| geometry(format!("{bytes} bytes do not fit in memory")))?;
        // Large stores sit on 2 MiB boundaries, so that they can have
        // transparent huge pages when asked to.
        let huge = 2 << 20;
        let mut owner = AlignedBuf::new(len, if len >= huge { huge } else { 4096 })?;
        let base = NonNull::new(owner.as_mut_ptr()).ok_or(BufError::OutOfMemory { len })?;
        if len >= huge && opts.huge_pages {
            // SAFETY: the range is exactly the store's own allocation;
            // MADV_HUGEPAGE only changes how the kernel backs it, never its
            // contents, and a refusal (THP disabled) is harmless.
            unsafe {
                libc::madvise(base.as_ptr().cast(), len, libc::MADV_HUGEPAGE);
            }
        }
        let guard = (opts.host_reserve > 0).then(|| HostGuard {
            host,
            reserve: opts.host_reserve,
            budget: AtomicU64::new(0),
        });
        let store = Arc::new(MemStore {
            base,
            len,
            handles: AtomicUsize::new(1),
            windows: AtomicUsize::new(0),
            locks: OnceLock::new(),
            written: WrittenPages::new(bytes)?,
            mapped: owner.is_mapped(),
            fault: match &guard {
                Some(g) if len >= huge => g.host.fault_size(opts.huge_pages),
                _ => PAGE,
            },
            guard,
            _owner: owner,
        });
        let limits = Limits {
            logical_block_size: lbs,
            capacity: bytes >> 9,
            ..Limits::default()
        };
        Ok(MemDevice {
            store,
            limits,
            queue_depth: opts.queue_depth,
            copy: opts.copy,
            ready: VecDeque::with_capacity(opts.queue_depth as usize),
            outstanding: 0,
            stats: DeviceStats::default(),
            busy_mark: 0,
            watch: None,
            _not_sync: PhantomData,
        })
    }

    /// Another handle on the **same bytes**, for another thread to drive
    /// (it is `Send`): its own ready list, statistics (the caller adds the
    /// handles' up) and queue depth, the same block size. What one handle
    /// writes, the others read once the write has completed. It watches no
    /// descriptor until told to ([`DataDevice::watch`]).
    ///
    /// Fails while windows on the bytes ([`MemDevice::map`]) are lent out:
    /// another thread could change the bytes under them. A shared store
    /// lends no windows (`map` returns `None`) until only one handle is left.
    pub fn share(&self) -> Result<MemDevice, DeviceError> {
        // Only this handle lends windows while it is alone (and `self` is
        // not Sync, so it lends none meanwhile); once shared, none does.
        let windows = self.store.windows.load(Ordering::Acquire);
        if windows > 0 {
            return Err(DeviceError::WindowsLent { windows });
        }
        // The locks exist before a second handle does.
        self.locks();
        self.store.handles.fetch_add(1, Ordering::AcqRel);
        Ok(MemDevice {
            store: Arc::clone(&self.store),
            limits: self.limits,
            queue_depth: self.queue_depth,
            copy: self.copy,
            ready: VecDeque::with_capacity(self.queue_depth as usize),
            outstanding: 0,
            stats: DeviceStats::default(),
            busy_mark: 0,
            watch: None,
            _not_sync: PhantomData,
        })
    }

    /// The store's chunk locks (made on first use).
    fn locks(&self) -> &ChunkLocks {
        self.store
            .locks
            .get_or_init(|| ChunkLocks::new(self.store.len))
    }

    /// Whether other handles share the store (so bytes move under the
    /// chunk locks).
    fn shared(&self) -> bool {
        // Acquire: a handle dropped on another thread finished with the
        // bytes before it counted itself out.
        self.store.handles.load(Ordering::Acquire) > 1
    }

    /// A copy of the bytes on the device (for tests and checks).
    pub fn contents(&self) -> Vec<u8> {
        let len = self.store.len;
        let mut copy = vec![0u8; len];
        let base = self.store.base.as_ptr();
        if self.shared() {
            // One segment per 2 GiB at most (a segment's length is a u32).
            let most = 1usize << 31;
            for (i, part) in copy.chunks_mut(most).enumerate() {
                let seg = [DataSegment {
                    addr: part.as_mut_ptr(),
                    len: part.len() as u32,
                }];
                // SAFETY: `part` is ours and valid for its length, and not
                // in the store; `i * most + part.len() <= len` lies inside
                // the store; every other handle copies under the locks.
                unsafe { self.locks().copy(base, i * most, &seg, true) };
            }
        } else {
            // SAFETY: the store is valid for `len` bytes while `self` lives;
            // alone on it, this handle (whose `&self` keeps I/O from running
            // through it meanwhile) and its windows on this thread are all
            // that touch it.
            unsafe { std::ptr::copy_nonoverlapping(base, copy.as_mut_ptr(), len) };
        }
        copy
    }

    /// A window on `len` bytes at byte `offset`, for I/O that moves data
    /// straight to or from the device's memory (an NBD server replying from
    /// it, or receiving a write into it): a read into the window, or a write
    /// from it, finds the data already in place and copies nothing. `None` if
    /// the range is not inside the device, or if the device is shared with
    /// other handles ([`MemDevice::share`]): then the caller moves the data
    /// through a buffer of its own.
    pub fn map(&self, offset: u64, len: usize) -> Option<MemSlice> {
        if self.shared() {
            return None;
        }
        self.window(offset, len)
    }

    /// A window on `len` bytes at byte `offset` for the kernel to read,
    /// lent even while the store is shared with other handles (unlike
    /// [`MemDevice::map`]): a read into it finds the data in place and
    /// copies nothing, and a reply sent from it (`sendmsg`, [`SendList`]) leaves the
    /// store for the socket in one copy, the kernel's. `None` if the range
    /// is not inside the device.
    ///
    /// Another thread's handle may write those bytes while the kernel reads
    /// them (two overlapping requests in flight at once): the reply then
    /// holds old bytes, new ones, or a mix, as a disk's would.
    ///
    /// The window ([`LentSlice`]) gives Rust code its bytes only while
    /// the store has one handle; otherwise it goes to the kernel whole, in
    /// a [`SendList`], and to this device as a read's buffer on its own
    /// place (which copies nothing).
    pub fn lend(&self, offset: u64, len: usize) -> Option<LentSlice> {
        self.window(offset, len).map(LentSlice)
    }

    /// A window on `offset..offset + len`, if it is inside the store.
    fn window(&self, offset: u64, len: usize) -> Option<MemSlice> {
        // The store's length fits a usize, and so does anything within it.
        let r = ByteRange::new(offset, len as u64)
            .and_then(|r| r.within(self.store.len as u64))
            .ok()?;
        self.store.windows.fetch_add(1, Ordering::AcqRel);
        Some(MemSlice {
            store: Arc::clone(&self.store),
            offset: r.offset() as usize,
            len,
            _not_send: PhantomData,
        })
    }

    /// Whether every segment of `data` is a window on its own place in
    /// `range` of the store (the data is there already).
    fn in_place(&self, range: &std::ops::Range<usize>, data: &[DataSegment]) -> bool {
        let base = self.store.base.as_ptr();
        let mut at = range.start;
        data.iter().all(|seg| {
            let here = base.wrapping_add(at);
            at += seg.len as usize;
            std::ptr::eq(here, seg.addr)
        })
    }

    /// The store's bytes `io` covers, if they are inside it.
    fn range(&self, io: &DeviceIo) -> Option<std::ops::Range<usize>> {
        let r = ByteRange::at_sector(io.sector, io.bytes())
            .and_then(|r| r.within(self.store.len as u64))
            .ok()?;
        // Within the store, whose length is a usize.
        Some(r.offset() as usize..r.end() as usize)
    }

    /// Whether a write to `range` from `data` may go ahead: always, unless
    /// it makes new pages resident while the host is short of memory
    /// ([`MemOptions::host_reserve`]).
    fn admit(&self, range: &std::ops::Range<usize>, data: &[DataSegment]) -> bool {
        let Some(guard) = &self.store.guard else {
            return true;
        };
        let new = self
            .store
            .written
            .cost(range.start as u64, range.end as u64, self.store.fault);
        if new == 0 {
            return true;
        }
        // A write from a window on this very place has its bytes there
        // already: the memory is spent, and refusing would not get it back.
        let here = self.store.base.as_ptr().wrapping_add(range.start);
        if data.first().is_some_and(|s| std::ptr::eq(s.addr, here)) {
            return true;
        }
        guard.admit(new)
    }

    /// Count the time since the last call as busy if an I/O was in
    /// flight (submitted and not yet reported), as the kernel counts a
    /// disk's `io_ticks`: what fio's `util` is made of.
    fn account(&mut self, now: Nanos) {
        if self.outstanding > 0 {
            self.stats.busy_ns += now.saturating_sub(self.busy_mark);
        }
        self.busy_mark = self.busy_mark.max(now);
    }

    fn finish(&mut self, tag: u32, outcome: Outcome) {
        self.outstanding += 1;
        self.ready.push_back((tag, outcome));
    }

    /// Carry out an operation without data; `None` if it needs data.
    fn no_data(&mut self, io: &DeviceIo) -> Option<Outcome> {
        Some(match io.op {
            Op::Flush => Outcome::Done,
            Op::Discard | Op::WriteZeroes => match self.range(io) {
                Some(r) => {
                    self.zero(r);
                    Outcome::Done
                }
                None => failed(Status::IoError),
            },
            Op::Read | Op::Write => return None,
        })
    }

    /// Zero the bytes of `r`, a range of whole sectors inside the store,
    /// making no page resident that was not: the whole pages it covers
    /// become holes (their bits cleared first, see [`WrittenPages`]) and,
    /// on a mapped store, go back to the kernel; elsewhere only bytes that
    /// are not zero are written.
    fn zero(&self, r: std::ops::Range<usize>) {
        let store = &self.store;
        store.written.clear(r.start as u64, r.end as u64);
        let whole = store
            .written
            .whole_pages(r.start as u64, r.end as u64)
            .filter(|_| store.mapped);
        let Some((from, to)) = whole else {
            self.zero_bytes(r);
            return;
        };
        // Whole pages of the store, whose offsets fit a usize (the last
        // may end past `len`, inside the mapping's last page).
        let (from, to) = (from as usize, to as usize);
        self.zero_bytes(r.start..from);
        if !self.release(from..to) {
            self.zero_bytes(from..to.min(store.len));
        }
        self.zero_bytes(to.min(r.end)..r.end);
    }

    /// Hand the pages `r` (page-aligned offsets in a mapped store) back to
    /// the kernel; they read as zeroes from then on. `false` if the kernel
    /// would not, or `r` is not whole pages of the store's own mapping
    /// (nothing changed then).
    fn release(&self, r: std::ops::Range<usize>) -> bool {
        let page = PAGE as usize;
        let pages_end = self.store.len.next_multiple_of(page);
        let whole = r.start.is_multiple_of(page) && r.end.is_multiple_of(page) && r.start < r.end;
        if !self.store.mapped || !whole || r.end > pages_end {
            debug_assert!(
                false,
                "cannot release {r:?} of a {}-byte store",
                self.store.len
            );
            return false;
        }
        // SAFETY: `r` is whole pages inside the store's own private
        // anonymous mapping (checked above: the store starts on a page, and
        // a last page that ends past `len` is still the mapping's, as
        // mappings are whole pages), which stays mapped, readable and writable: MADV_DONTNEED only drops the
        // pages, which then read as zeroes, so every pointer into them
        // (windows included) stays valid. What it does to the bytes is what
        // writing zeroes over them would, and the store's rules for that
        // hold here as for any write:
        // - alone on the store, this handle is all that touches it but for
        //   its windows, used on this thread (and not during this call) or
        //   by the kernel for I/O this thread started (a socket send from a
        //   window, which reads either the old bytes or zeroes, as it would
        //   while the bytes were being zeroed: the memory is never freed);
        // - shared, every other access is another handle's copy (under a
        //   chunk lock, which this call need not take: it makes no access
        //   of this program's) or the kernel's read of a window lent for it
        //   (`lend`, which sees old bytes or zeroes, as above); one to these
        //   pages belongs to a request that overlaps this one (no other
        //   request can reach a page wholly inside this one's range), whose
        //   outcome is unspecified: each byte then holds the old, the new,
        //   or zero. Pages only
        //   partly covered are never released (`zero_bytes` writes them),
        //   so a request next to this one on the same page loses nothing.
        unsafe {
            libc::madvise(
                self.store.base.as_ptr().add(r.start).cast(),
                r.len(),
                libc::MADV_DONTNEED,
            ) == 0
        }
    }

    /// Write zeroes over the words of `r` (whole sectors inside the store)
    /// that are not zero already: a page that is all zeroes is read, never
    /// written, and so a hole (which reads from the kernel's shared zero
    /// page) stays one.
    fn zero_bytes(&self, r: std::ops::Range<usize>) {
        if r.is_empty() {
            return;
        }
        if !r.start.is_multiple_of(8) || !r.end.is_multiple_of(8) || r.end > self.store.len {
            debug_assert!(
                false,
                "cannot zero {r:?} of a {}-byte store",
                self.store.len
            );
            return;
        }
        let base = self.store.base.as_ptr();
        if self.shared() {
            self.locks().each(r, |part| {
                // SAFETY: `part` lies inside `r` (checked above), and starts
                // and ends on 8-byte boundaries (those of `r`, or a chunk's,
                // a multiple of 64 KiB); its chunk's lock is held, under
                // which every handle copies while the store is shared (the
                // kernel's reads of a window lent for it, `lend`, are not
                // accesses of this program's).
                unsafe { zero_nonzero_words(base.add(part.start).cast(), part.len()) };
            });
            return;
        }
        // SAFETY: `r` lies inside the store and starts and ends on 8-byte
        // boundaries of the 4096-aligned store (checked above); alone, this
        // handle is all that touches the bytes (its windows are used on
        // this thread, not during this call, or read by the kernel), so
        // its accesses race with nothing.
        unsafe { zero_nonzero_words(base.add(r.start).cast(), r.len()) };
    }
}

fn failed(status: Status) -> Outcome {
    Outcome::Failed {
        status,
        good_bytes: 0,
    }
}

impl Device for MemDevice {
    fn describe(&self) -> String {
        format!(
            "mem ({} MiB {}, {}-byte blocks)",
            self.store.len >> 20,
            if self.copy {
                "in memory"
            } else {
                "that moves no data"
            },
            self.limits.logical_block_size
        )
    }

    elevator_core::device_shape_fields!(rotational: false);

    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.account(now);
        let outcome = self.no_data(&io).unwrap_or(failed(Status::NotSupported));
        self.finish(io.tag, outcome);
    }

    fn next_completion(&self) -> Option<Nanos> {
        // What is submitted is done at once: due now, if anything waits.
        (!self.ready.is_empty()).then_some(0)
    }

    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        self.account(now);
        while let Some((tag, outcome)) = self.ready.pop_front() {
            self.outstanding -= 1;
            self.stats.ios += 1;
            done(tag, outcome);
        }
    }

    fn outstanding(&self) -> u32 {
        self.outstanding
    }

    fn stats(&self) -> DeviceStats {
        self.stats
    }
}

impl DataDevice for MemDevice {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        self.account(now);
        if let Some(outcome) = self.no_data(&io) {
            self.finish(io.tag, outcome);
            return;
        }
        let Some(range) = self.range(&io) else {
            self.finish(io.tag, failed(Status::IoError));
            return;
        };
        let total: usize = data.iter().map(|s| s.len as usize).sum();
        if total != range.len() {
            debug_assert!(
                false,
                "segments carry {total} bytes for a {}-byte I/O",
                range.len()
            );
            self.finish(io.tag, failed(Status::IoError));
            return;
        }
        if !self.copy {
            self.finish(io.tag, Outcome::Done);
            return;
        }
        if io.op == Op::Write && !self.admit(&range, data) {
            self.finish(io.tag, failed(Status::NoSpace));
            return;
        }
        let base = self.store.base.as_ptr();
        if io.op == Op::Read && self.in_place(&range, data) {
            // Windows on these very places (`map`, `lend`): the data is
            // there, and not a byte is touched.
            self.finish(io.tag, Outcome::Done);
            return;
        }
        if self.shared() {
            // SAFETY: `base` is the store's first byte and `range`, which
            // the segments add up to (checked above), lies inside the store
            // (checked by `range()`); the segments are valid for their
            // lengths by `submit_data`'s contract. A shared store lends
            // windows only for the kernel to read and as reads' buffers on
            // their own places (which copy nothing, above), so no segment
            // overlaps the bytes it is copied with. Every handle copies
            // under the locks while the store is shared.
            let whole = unsafe {
                self.locks()
                    .copy(base, range.start, data, io.op == Op::Read)
            };
            debug_assert!(whole, "{range:?} is inside the store");
            if io.op == Op::Write {
                self.store
                    .written
                    .mark(range.start as u64, range.end as u64);
            }
            self.finish(io.tag, Outcome::Done);
            return;
        }
        let mut at = range.start;
        for seg in data {
            let len = seg.len as usize;
            // SAFETY: `base + at` is inside the store, as the segments add up
            // to `range`, which `range()` checked.
            let here = unsafe { base.add(at) };
            if std::ptr::eq(here, seg.addr) {
                // A window on this very place (`map`): the data is there.
                at += len;
                continue;
            }
            // SAFETY: `at..at + len` lies inside the store (above); the
            // segment is valid for `len` bytes by `submit_data`'s contract;
            // a segment is either the caller's own memory or a window on the
            // store, and a window that is not exactly this place does not
            // overlap it unless two requests in flight overlap, which the
            // engine's callers do not do with windows (see `map`).
            unsafe {
                if io.op == Op::Read {
                    std::ptr::copy_nonoverlapping(base.add(at), seg.addr, len);
                } else {
                    std::ptr::copy_nonoverlapping(seg.addr, base.add(at), len);
                }
            }
            at += len;
        }
        if io.op == Op::Write {
            self.store
                .written
                .mark(range.start as u64, range.end as u64);
        }
        self.finish(io.tag, Outcome::Done);
    }

    fn kick(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }

    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        // Everything submitted is already complete; with nothing to report,
        // all there is to wait for is the timeout, or the watched
        // descriptor.
        if !self.ready.is_empty() {
            return Ok(());
        }
        sleep_or_watch(self.watch, timeout)
    }

    fn cancel_all(&mut self) {}

    fn alignment(&self) -> Alignment {
        Alignment {
            offset: self.limits.logical_block_size,
            memory: self.limits.logical_block_size,
        }
    }

    /// `wait` then waits with `poll(2)` on `fd` (and the timeout), rather
    /// than sleeping.
    fn watch(&mut self, fd: RawFd) -> Result<(), DeviceError> {
        // Refuses a descriptor that is not open.
        watchable(fd)?;
        self.watch = Some(fd);
        Ok(())
    }

    /// By 4 KiB page: a page never written, or zeroed whole by a
    /// write-zeroes or discard since, is a hole that reads as zeroes; any
    /// other is data (even if its bytes happen to be zero). Every handle
    /// on the store sees the same pages. Bytes changed through a window
    /// ([`MemDevice::map`]) count once a write from that window has been
    /// submitted.
    fn extents(&self, offset: u64, len: u64, max: usize) -> Result<Vec<Extent>, DeviceError> {
        Ok(self.store.written.extents(offset, len, max))
    }
}

impl Drop for MemDevice {
    fn drop(&mut self) {
        // Release: this handle's accesses to the bytes happen before any
        // handle that sees the count drop goes back to plain copies.
        self.store.handles.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The word at `w`, as an atomic (so that zeroing a word that is zero
/// already is never turned into a write, which would make a hole's page
/// resident).
///
/// # Safety
///
/// `w` is 8-aligned, inside a [`MemStore`], and (per the store's rules) no
/// other Rust access to it runs meanwhile but atomic word ones.
unsafe fn word<'a>(w: *mut u64) -> &'a AtomicU64 {
    // SAFETY: passed on from the caller; the store outlives every use.
    unsafe { AtomicU64::from_ptr(w) }
}

/// Zero the words among `len` bytes of the store's from `w` on that are
/// not zero already (those that are, are only read).
///
/// # Safety
///
/// `w` is 8-aligned and the store is valid from `w` for `len` bytes, a
/// multiple of 8, which no other Rust access touches meanwhile (the store's
/// rules: alone on it, or under their chunk's lock).
unsafe fn zero_nonzero_words(w: *mut u64, len: usize) {
    for i in 0..len / 8 {
        // SAFETY: word `i` is within the `len` bytes from `w`.
        let word = unsafe { word(w.add(i)) };
        if word.load(Ordering::Relaxed) != 0 {
            word.store(0, Ordering::Relaxed);
        }
    }
}

/// A window on a [`MemDevice`]'s memory, lent out by [`MemDevice::map`]: an
/// I/O buffer whose bytes are the device's own. It keeps the memory alive
/// (the device may go first). It stays on the thread that made it, where
/// the device that lent it is driven; a device shared with other threads
/// lends none but for the kernel to read ([`MemDevice::lend`]).
pub struct MemSlice {
    store: Arc<MemStore>,
    offset: usize,
    len: usize,
    _not_send: PhantomData<*mut u8>,
}

impl Drop for MemSlice {
    fn drop(&mut self) {
        // Release: done with the bytes before a share may be made.
        self.store.windows.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for MemSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemSlice")
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish()
    }
}

// SAFETY: the window lies inside the store (checked by `map`), whose
// allocation lives as long as any window (the Arc), does not move, and
// keeps its length. Windows are plain memory shared with the device, as a
// DMA buffer is: they are only read or written through transient slices on
// the one thread that holds them (`MemSlice` is not Send), never while a
// longer borrow of the same bytes is live; and they exist only while their
// store has a single device handle (see `MemStore`), so no other thread's
// handle moves those bytes meanwhile, but for windows lent for the kernel
// to read (`MemDevice::lend`), whose bytes the caller promised to leave to
// the kernel while the store is shared.
unsafe impl IoBuf for MemSlice {
    fn as_ptr(&self) -> *const u8 {
        // SAFETY: `offset <= len` of the store (checked by `map`).
        unsafe { self.store.base.as_ptr().add(self.offset) }
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: as in `as_ptr`.
        unsafe { self.store.base.as_ptr().add(self.offset) }
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl std::ops::Deref for MemSlice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the window is valid for `len` bytes (see the IoBuf impl).
        unsafe { std::slice::from_raw_parts(IoBuf::as_ptr(self), self.len) }
    }
}

impl std::ops::DerefMut for MemSlice {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes this window's access
        // unique for the slice's life.
        unsafe { std::slice::from_raw_parts_mut(IoBuf::as_mut_ptr(self), self.len) }
    }
}

/// Memory for one I/O: a buffer of the caller's, or a window on a memory
/// device's own bytes ([`MemSlice`], [`LentSlice`]), for servers that move
/// data straight between sockets and the device.
///
/// It reads as its bytes (`Deref`), but for a window lent for the kernel
/// while its store is shared, whose bytes this process must not read: that
/// goes whole to a socket ([`SendList::push_mem`]), and reading it is a
/// bug that panics.
#[derive(Debug)]
pub enum IoMem {
    /// An aligned buffer (or part of one).
    Buf(Slice<AlignedBuf>),
    /// A window on a memory device.
    Window(MemSlice),
    /// A window on a memory device, lent for the kernel to read.
    Lent(LentSlice),
}

impl IoMem {
    /// Its length in bytes (of any kind: this never reads them).
    pub fn len(&self) -> usize {
        IoBuf::len(self)
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        IoBuf::len(self) == 0
    }

    /// The aligned buffer, if it is one.
    pub fn into_buf(self) -> Option<Slice<AlignedBuf>> {
        match self {
            IoMem::Buf(b) => Some(b),
            IoMem::Window(_) | IoMem::Lent(_) => None,
        }
    }
}

// SAFETY: both kinds keep IoBuf's promises; this only forwards to them.
unsafe impl IoBuf for IoMem {
    fn as_ptr(&self) -> *const u8 {
        match self {
            IoMem::Buf(b) => b.as_ptr(),
            IoMem::Window(w) => w.as_ptr(),
            IoMem::Lent(w) => w.as_ptr(),
        }
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            IoMem::Buf(b) => b.as_mut_ptr(),
            IoMem::Window(w) => w.as_mut_ptr(),
            IoMem::Lent(w) => w.as_mut_ptr(),
        }
    }
    fn len(&self) -> usize {
        match self {
            IoMem::Buf(b) => IoBuf::len(b),
            IoMem::Window(w) => IoBuf::len(w),
            IoMem::Lent(w) => IoBuf::len(w),
        }
    }
}

impl std::ops::Deref for IoMem {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            IoMem::Buf(b) => b,
            IoMem::Window(w) => w,
            IoMem::Lent(w) => w.bytes().unwrap_or_else(|| panic!("{LENT_READ}")),
        }
    }
}

/// Why reading a lent window panics.
const LENT_READ: &str = "the bytes of a window lent for the kernel (MemDevice::lend) were read                          while its store is shared; they go whole to a socket (SendList)";

impl std::ops::DerefMut for IoMem {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            IoMem::Buf(b) => b,
            IoMem::Window(w) => w,
            IoMem::Lent(w) => {
                // Alone on its store (checked by `bytes`), a lent window is
                // an ordinary one.
                if w.bytes().is_none() {
                    panic!("{LENT_READ}");
                }
                &mut w.0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Host(Option<u64>);
    impl HostMemory for Host {
        fn available(&self) -> Option<u64> {
            self.0
        }
    }

    #[test]
    fn meminfo_gives_the_available_memory_or_nothing() {
        let text = "MemTotal:       24683520 kB\nMemFree:          207868 kB\n\
                    MemAvailable:   23551232 kB\nBuffers:            1024 kB\n";
        assert_eq!(meminfo_available(text), Some(23551232 * 1024));
        for bad in [
            "",
            "MemTotal: 1 kB\n",
            "MemAvailable: lots kB\n",
            "MemAvailable: 12\n",
            "MemAvailable: 18446744073709551615 kB\n",
        ] {
            assert_eq!(meminfo_available(bad), None, "{bad:?}");
        }
        // This host's, where there is one.
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(ProcMeminfo.available().is_some_and(|b| b > 0));
        }
    }

    #[test]
    fn a_device_larger_than_the_available_memory_is_warned_about() {
        let opts = MemOptions::default();
        let gib = 1u64 << 30;
        assert_eq!(oversize_warning(gib, &opts, &Host(Some(2 * gib))), None);
        assert_eq!(oversize_warning(gib, &opts, &Host(None)), None);
        let w = oversize_warning(100 * gib, &opts, &Host(Some(24 * gib))).expect("warned");
        assert_eq!(
            w,
            "a memory device of 102400 MiB is larger than the 24576 MiB of memory this host \
             has available (MemAvailable in /proc/meminfo): it can never be filled; writes \
             that need new memory will fail with ENOSPC once less than 64 MiB is left \
             (host_reserve)"
        );
    }

    /// Busy time is the time an I/O was in flight, as the kernel's
    /// `io_ticks`: from submission to the `complete` that reports it; idle
    /// gaps do not count. fio's `util` is that over the run's time.
    #[test]
    fn busy_time_is_the_time_an_io_was_in_flight() {
        let mut dev = MemDevice::new(1 << 20, MemOptions::default()).expect("a small device");
        let flush = |tag| DeviceIo {
            tag,
            op: Op::Flush,
            sector: 0,
            sectors: 0,
            flags: elevator_core::BioFlags::NONE,
        };
        let mut done = 0;
        dev.submit(flush(1), 100);
        dev.submit(flush(2), 150);
        dev.complete(350, &mut |_, o| {
            assert_eq!(o, Outcome::Done);
            done += 1;
        });
        dev.complete(400, &mut |_, _| done += 1);
        dev.submit(flush(3), 500);
        dev.complete(600, &mut |_, _| done += 1);
        assert_eq!(done, 3);
        let stats = dev.stats();
        assert_eq!(stats.ios, 3);
        assert_eq!(stats.busy_ns, 250 + 100);
    }
}
