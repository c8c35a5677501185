//! An io_uring ring that a device drives its I/O through (the file and
//! block devices opened with O_DIRECT do): it owns the ring, the table of
//! in-flight I/Os (one slot per queue-depth tag, each with its own
//! preallocated iovec array) and the list of I/Os that finished without
//! reaching the kernel. It turns [`DeviceIo`]s into SQEs, CQEs back into
//! [`Outcome`]s, and makes sure the kernel never touches memory after the
//! ring is gone.
//!
//! Nothing here allocates per I/O and nothing makes a system call except
//! [`Ring::kick`], [`Ring::wait`] and [`Ring::cancel_all`]; [`Ring::complete`]
//! when the kernel flags task work that would post completions
//! (`IORING_SQ_TASKRUN`); the first use of a ring on a thread (which binds it
//! there, see below); and, if the submission queue were ever full, a push
//! that makes room.
//!
//! # One issuer
//!
//! Where the kernel offers them (6.0, 6.1), rings are set up as fio 3.33+
//! sets them up: `SINGLE_ISSUER`, so the kernel can skip locking the ring,
//! and `DEFER_TASKRUN`, so completions are posted only when the owner asks
//! for them (`io_uring_enter` with `GETEVENTS`) rather than by interrupting
//! it. Such a ring belongs to one thread. A device may be opened on one
//! thread and driven on another, so the ring is set up disabled
//! (`R_DISABLED`) and enabled by the first thread that uses it, which
//! becomes its issuer. If the device later moves to another thread with
//! nothing in flight, that thread sets up a fresh ring of its own (the old
//! one has nothing of ours); with I/O in flight, only the issuer can reap
//! it, and the other thread gets [`DeviceError::WrongThread`].
//!
//! A `DEFER_TASKRUN` ring's descriptor does not wake `epoll` or `poll` when
//! completions are pending (measured on 6.18: an `epoll_wait` on it sleeps
//! through its timeout while a finished timeout request sits in the
//! deferred list; without `DEFER_TASKRUN` the same wait wakes when it
//! finishes). Rings whose descriptor an event loop waits on
//! ([`RingConfig::polled`]) are therefore set up without it.
//!
//! # A wake-up descriptor
//!
//! [`Ring::watch`] arms a multishot `POLL_ADD` on a descriptor in the ring,
//! with a reserved `user_data`, so that [`Ring::wait`] also returns when it
//! becomes readable. Its CQEs are no I/O: `complete` skips them (noting the
//! wake-up) and re-arms the poll when the kernel ends it (a CQE without
//! `IORING_CQE_F_MORE`). A poll request points at no memory of ours (it holds
//! the kernel's own reference to the file), so a ring may be closed with it
//! armed: the kernel ends it with the ring.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use elevator_core::{BioFlags, DeviceIo, DeviceStats, Nanos, Op, Outcome, Status};
use io_uring::{IoUring, opcode, squeue, types};

use crate::device::{DataSegment, DeviceError, outcome_of};

/// Marks the first SQE of a linked pair (the PREFLUSH fsync before a write);
/// the low bits of `user_data` are the slot index.
const LINK_HEAD: u64 = 1 << 63;
/// `user_data` of cancel requests, whose CQEs [`Ring::complete`] skips.
const CANCEL: u64 = u64::MAX;
/// Marks the wake-up poll ([`Ring::watch`]); the low 32 bits are the
/// watch's generation, so that the last CQE of a replaced poll is told from
/// the current one's. Never set with [`LINK_HEAD`] (except in [`CANCEL`]).
const WATCH: u64 = 1 << 62;
/// `IORING_ENTER_GETEVENTS`, from the kernel's uapi header.
const ENTER_GETEVENTS: u32 = 1;
/// Times a push retries after making room in a full submission queue.
const PUSH_TRIES: u32 = 4;
/// Consecutive failed waits after which `Drop` gives up and leaks.
const DROP_WAIT_TRIES: u32 = 3;
/// The longest single sleep in `io_uring_enter` (see [`Ring::wait`]).
const MAX_WAIT: Duration = Duration::from_secs(365 * 24 * 3600);
/// The largest queue depth a ring takes.
pub(crate) const MAX_QUEUE_DEPTH: u32 = 4096;
const PUNCH: i32 = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
const ZERO_RANGE: i32 = libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE;

/// What a ring is built for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingConfig {
    /// Slots (I/Os in flight at once), 1..=[`MAX_QUEUE_DEPTH`].
    pub queue_depth: u32,
    /// The most segments one I/O carries (iovecs preallocated per slot).
    pub max_segments: u16,
    /// Refuse writes, discards and write-zeroes.
    pub read_only: bool,
    /// An event loop waits on the ring's descriptor ([`Ring::fd`]): set it up
    /// without `DEFER_TASKRUN`, whose descriptor would not wake it.
    pub polled: bool,
}

/// The setup flags a ring got (the first set in [`build`]'s list that the
/// kernel took).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Setup {
    /// `SINGLE_ISSUER` (with `R_DISABLED` until its first user enables it).
    single_issuer: bool,
    /// `DEFER_TASKRUN`.
    defer_taskrun: bool,
    /// `COOP_TASKRUN | TASKRUN_FLAG | SUBMIT_ALL`.
    coop_taskrun: bool,
}

impl Setup {
    fn name(self) -> &'static str {
        match (self.single_issuer, self.defer_taskrun, self.coop_taskrun) {
            (true, true, _) => "single-issuer defer-taskrun coop-taskrun taskrun-flag submit-all",
            (true, false, _) => "single-issuer coop-taskrun taskrun-flag submit-all",
            (false, _, true) => "coop-taskrun taskrun-flag submit-all",
            (false, _, false) => "plain",
        }
    }
}

/// Which threads may enter the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// Any (no `SINGLE_ISSUER`).
    Any,
    /// The ring is still disabled: the first thread to use it enables it.
    Unclaimed,
    /// Only this one (a [`this_thread`] number).
    Thread(u64),
}

/// One I/O in flight.
#[derive(Clone, Copy)]
struct Slot {
    tag: u32,
    op: Op,
    /// Byte offset on the device.
    offset: u64,
    /// Bytes the I/O moves (or the range a discard / write-zeroes covers).
    bytes: u64,
    /// CQEs still to come: 0 when the slot is free, 2 for a linked pair.
    pending: u8,
    /// A PREFLUSH fsync was linked before it (so it has two SQEs).
    linked: bool,
    /// A write-zeroes already resubmitted as a hole punch.
    punched: bool,
    /// The worst failure seen so far.
    failure: Option<Outcome>,
}

const FREE: Slot = Slot {
    tag: 0,
    op: Op::Flush,
    offset: 0,
    bytes: 0,
    pending: 0,
    linked: false,
    punched: false,
    failure: None,
};

/// The ring, its slots and the I/Os finished without the kernel.
pub(crate) struct Ring {
    ring: IoUring,
    fd: RawFd,
    /// The file is registered as fixed file 0.
    fixed: bool,
    read_only: bool,
    /// SQ entries asked for (to set up a ring again on another thread).
    entries: u32,
    polled: bool,
    setup: Setup,
    owner: Owner,
    /// The descriptor [`Ring::watch`] watches, and its generation.
    watch: Option<RawFd>,
    watch_gen: u32,
    /// The watch's poll is in the ring (pushed, and not yet ended).
    watch_armed: bool,
    /// A wake-up came since the last `wait`.
    woken: bool,
    /// The watch's poll failed (errno), to report at the next `wait`.
    watch_error: Option<i32>,
    slots: Box<[Slot]>,
    /// `max_segments` iovecs per slot, slot `i` at `i * max_segments`. Never
    /// reallocated: the kernel reads them while the slot's I/O is in flight.
    iovecs: Box<[libc::iovec]>,
    max_segments: usize,
    free: Vec<u32>,
    /// Finished without reaching the kernel, to report at the next `complete`.
    ready: Vec<(u32, Outcome)>,
    in_flight: u32,
    /// Write-zeroes got EOPNOTSUPP once: punch holes from now on.
    zero_by_punch: bool,
    /// `AsyncCancel2` with `ANY` was refused (kernel before 5.19).
    cancel_each: bool,
    stats: DeviceStats,
    busy_mark: Nanos,
}

// SAFETY: the only fields that are not `Send` are the iovecs' raw pointers,
// which are plain addresses into the submitters' buffers (whose validity is
// the `submit_data` contract's business, wherever the ring runs); the ring
// owns everything else and shares nothing with other threads. A
// `SINGLE_ISSUER` ring is entered only by its issuer thread (`claim` checks
// before every system call on it), whichever thread holds the `Ring`.
unsafe impl Send for Ring {}

/// A number for the calling thread, unique for the life of the process.
#[inline]
fn this_thread() -> u64 {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ID: Cell<u64> = const { Cell::new(0) };
    }
    ID.with(|id| {
        if id.get() == 0 {
            id.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        id.get()
    })
}

/// Build the `$fd` target for an opcode: the registered file, or the raw fd.
macro_rules! on_fd {
    ($self:ident, |$fd:ident| $build:expr) => {
        if $self.fixed {
            let $fd = types::Fixed(0);
            $build
        } else {
            let $fd = types::Fd($self.fd);
            $build
        }
    };
}

impl Ring {
    /// A ring on `fd` (which must outlive the ring).
    pub(crate) fn new(fd: RawFd, cfg: RingConfig) -> io::Result<Ring> {
        let qd = cfg.queue_depth.clamp(1, MAX_QUEUE_DEPTH);
        // Every I/O takes at most two SQEs (a PREFLUSH fsync linked before
        // its write), plus one for a cancel-all and two for the wake-up
        // poll (removing one, arming the next): the SQ never fills up. (The
        // per-I/O cancel fallback may; `push` then submits to make room.)
        let entries = (2 * qd + 3).next_power_of_two();
        let (ring, setup) = build(entries, cfg.polled)?;
        // Registering the file saves a file-table lookup per I/O; without
        // it (an old kernel, a tight RLIMIT_MEMLOCK) the plain fd works. A
        // disabled ring takes registrations from any thread.
        let fixed = ring.submitter().register_files(&[fd]).is_ok();
        let max_segments = usize::from(cfg.max_segments.max(1));
        let empty = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        };
        Ok(Ring {
            ring,
            fd,
            fixed,
            read_only: cfg.read_only,
            entries,
            polled: cfg.polled,
            setup,
            owner: if setup.single_issuer {
                Owner::Unclaimed
            } else {
                Owner::Any
            },
            watch: None,
            watch_gen: 0,
            watch_armed: false,
            woken: false,
            watch_error: None,
            slots: vec![FREE; qd as usize].into_boxed_slice(),
            iovecs: vec![empty; qd as usize * max_segments].into_boxed_slice(),
            max_segments,
            free: (0..qd).rev().collect(),
            ready: Vec::with_capacity(qd as usize),
            in_flight: 0,
            zero_by_punch: false,
            cancel_each: false,
            stats: DeviceStats::default(),
            busy_mark: 0,
        })
    }

    /// Make sure the calling thread may enter the ring: enable a ring no
    /// thread has used yet (this one becomes its issuer), or, if another
    /// thread is the issuer and nothing is in flight, set up a fresh ring
    /// here. Fails if another thread has I/O in flight on it.
    #[inline]
    fn claim(&mut self) -> Result<(), DeviceError> {
        match self.owner {
            Owner::Any => Ok(()),
            Owner::Thread(t) if t == this_thread() => Ok(()),
            Owner::Unclaimed => {
                self.ring
                    .submitter()
                    .register_enable_rings()
                    .map_err(DeviceError::Enter)?;
                self.owner = Owner::Thread(this_thread());
                Ok(())
            }
            Owner::Thread(_) if self.in_flight == 0 => self.rebuild(),
            Owner::Thread(_) => Err(DeviceError::WrongThread),
        }
    }

    /// Set up a fresh ring on the calling thread, in place of one another
    /// thread issued on, with nothing in flight.
    #[cold]
    fn rebuild(&mut self) -> Result<(), DeviceError> {
        debug_assert_eq!(self.in_flight, 0);
        let (ring, setup) =
            build(self.entries, self.polled).map_err(|source| DeviceError::NoUring { source })?;
        // The old ring has no I/O in flight, so neither it nor any SQE
        // still queued in it points at memory of ours (a cancel carries no
        // pointer, a wake-up poll none either): dropping it closes it, and
        // the kernel ends whatever poll it had.
        self.ring = ring;
        self.setup = setup;
        self.fixed = self.ring.submitter().register_files(&[self.fd]).is_ok();
        self.owner = if setup.single_issuer {
            Owner::Unclaimed
        } else {
            Owner::Any
        };
        self.watch_armed = false;
        self.claim()?;
        self.arm_watch();
        Ok(())
    }

    /// The ring's descriptor: readable while completions wait. (A ring set
    /// up with `DEFER_TASKRUN` does not wake a poller: see
    /// [`Ring::pollable`].) It changes if the device moves to another thread
    /// after doing I/O (see the module's notes).
    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsRawFd;
        // SAFETY: the descriptor belongs to `self.ring`, which outlives the
        // borrow returned (it is tied to `&self`).
        unsafe { std::os::fd::BorrowedFd::borrow_raw(self.ring.as_raw_fd()) }
    }

    /// How the ring was set up, in a few words: its setup flags, and
    /// whether the file is registered.
    pub(crate) fn setup(&self) -> String {
        let file = if self.fixed {
            "registered file"
        } else {
            "file by descriptor"
        };
        format!("{}, {file}", self.setup.name())
    }

    /// Whether an event loop waiting on [`Ring::fd`] wakes when completions
    /// are pending (the ring has no `DEFER_TASKRUN`).
    pub(crate) fn pollable(&self) -> bool {
        !self.setup.defer_taskrun
    }

    /// From now on, `wait` also returns when `fd` becomes readable: a
    /// multishot poll on it, armed in the ring (submitted with the next
    /// `kick` or `wait`).
    pub(crate) fn watch(&mut self, fd: RawFd) -> Result<(), DeviceError> {
        // Refuses a descriptor that is not open (POLLNVAL).
        crate::device::watchable(fd)?;
        if self.watch == Some(fd) && self.watch_armed {
            return Ok(());
        }
        if self.watch_armed {
            // Another descriptor before: end its poll. Its last CQE carries
            // the old generation, so it is not re-armed.
            let remove = opcode::PollRemove::new(WATCH | u64::from(self.watch_gen))
                .build()
                .user_data(CANCEL);
            // SAFETY: a poll-remove SQE carries no pointers.
            if !unsafe { self.push(&[remove]) } {
                return Err(DeviceError::Watch(io::Error::from_raw_os_error(
                    libc::EBUSY,
                )));
            }
            self.watch_armed = false;
        }
        self.watch = Some(fd);
        self.watch_gen = self.watch_gen.wrapping_add(1);
        self.watch_error = None;
        self.arm_watch();
        if self.watch_armed {
            Ok(())
        } else {
            Err(DeviceError::Watch(io::Error::from_raw_os_error(
                libc::EBUSY,
            )))
        }
    }

    /// Put the watch's poll in the ring if it is not there.
    fn arm_watch(&mut self) {
        let Some(fd) = self.watch else {
            return;
        };
        if self.watch_armed {
            return;
        }
        let poll = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(WATCH | u64::from(self.watch_gen));
        // SAFETY: a poll SQE carries no pointers into our memory.
        self.watch_armed = unsafe { self.push(&[poll]) };
    }

    /// I/Os accepted and not yet reported.
    pub(crate) fn outstanding(&self) -> u32 {
        self.in_flight + self.ready.len() as u32
    }

    /// Accumulated figures.
    pub(crate) fn stats(&self) -> DeviceStats {
        self.stats
    }

    /// Count the time since the last call as busy if anything was outstanding.
    fn account(&mut self, now: Nanos) {
        if self.outstanding() > 0 {
            self.stats.busy_ns += now.saturating_sub(self.busy_mark);
        }
        self.busy_mark = self.busy_mark.max(now);
    }

    /// Finish `tag` without the kernel; reported by the next `complete`.
    fn finish_now(&mut self, tag: u32, status: Status) {
        // Within capacity unless the caller exceeds the queue depth.
        self.ready.push((
            tag,
            Outcome::Failed {
                status,
                good_bytes: 0,
            },
        ));
    }

    /// A free slot for `io`, or `None` (and `io` failed) if the caller has
    /// more I/Os outstanding than the queue depth.
    fn take_slot(&mut self, io: &DeviceIo, pending: u8) -> Option<usize> {
        let Some(i) = self.free.pop() else {
            debug_assert!(false, "more I/Os than the queue depth");
            self.finish_now(io.tag, Status::IoError);
            return None;
        };
        self.in_flight += 1;
        self.slots[i as usize] = Slot {
            tag: io.tag,
            op: io.op,
            offset: io.sector << 9,
            bytes: io.bytes(),
            pending,
            ..FREE
        };
        Some(i as usize)
    }

    fn release(&mut self, i: usize) -> Slot {
        let slot = std::mem::replace(&mut self.slots[i], FREE);
        self.free.push(i as u32);
        self.in_flight -= 1;
        slot
    }

    /// Push `entries` (all or none), submitting to make room if the SQ is full.
    ///
    /// # Safety
    ///
    /// Every buffer or iovec the entries point at must stay valid until
    /// their CQEs are reaped.
    unsafe fn push(&mut self, entries: &[squeue::Entry]) -> bool {
        for _ in 0..PUSH_TRIES {
            // SAFETY: the caller keeps the entries' memory valid.
            if unsafe { self.ring.submission().push_multiple(entries) }.is_ok() {
                return true;
            }
            if self.claim().is_err() {
                return false;
            }
            if let Err(e) = self.ring.submit()
                && !transient(&e)
            {
                return false;
            }
        }
        false
    }

    /// Push the entries of slot `i`'s I/O; if they cannot be queued, the I/O
    /// fails rather than being lost.
    ///
    /// # Safety
    ///
    /// As for [`Ring::push`].
    unsafe fn start(&mut self, i: usize, entries: &[squeue::Entry]) {
        // SAFETY: passed on from the caller.
        if !unsafe { self.push(entries) } {
            let slot = self.release(i);
            self.finish_now(slot.tag, Status::IoError);
        }
    }

    fn fsync(&self, user_data: u64) -> squeue::Entry {
        on_fd!(self, |fd| opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::DATASYNC)
            .build())
        .user_data(user_data)
    }

    fn fallocate(&self, i: usize, mode: i32) -> squeue::Entry {
        let s = &self.slots[i];
        on_fd!(self, |fd| opcode::Fallocate::new(fd, s.bytes)
            .offset(s.offset)
            .mode(mode)
            .build())
        .user_data(i as u64)
    }

    /// Accept an operation without data (the core `Device::submit`): flush,
    /// discard, write-zeroes; a read or write fails with `NotSupported`.
    pub(crate) fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.account(now);
        if self.claim().is_err() {
            return self.finish_now(io.tag, Status::IoError);
        }
        match io.op {
            Op::Read | Op::Write => return self.finish_now(io.tag, Status::NotSupported),
            Op::Discard | Op::WriteZeroes if self.read_only => {
                return self.finish_now(io.tag, Status::NotSupported);
            }
            Op::Flush | Op::Discard | Op::WriteZeroes => {}
        }
        let Some(i) = self.take_slot(&io, 1) else {
            return;
        };
        let entry = match io.op {
            Op::WriteZeroes if !self.zero_by_punch => self.fallocate(i, ZERO_RANGE),
            Op::Discard | Op::WriteZeroes => {
                self.slots[i].punched = true;
                self.fallocate(i, PUNCH)
            }
            _ => self.fsync(i as u64),
        };
        // SAFETY: fsync and fallocate SQEs carry no pointers.
        unsafe { self.start(i, &[entry]) };
    }

    /// Accept `io` with its data segments.
    ///
    /// # Safety
    ///
    /// `DataDevice::submit_data`'s contract: every segment is valid for
    /// reads and writes of its length until `io.tag` is reported.
    pub(crate) unsafe fn submit_data(&mut self, io: DeviceIo, segs: &[DataSegment], now: Nanos) {
        if !io.op.has_data() {
            debug_assert!(segs.is_empty(), "{:?} with data segments", io.op);
            return self.submit(io, now);
        }
        self.account(now);
        if self.claim().is_err() {
            return self.finish_now(io.tag, Status::IoError);
        }
        if io.op == Op::Write && self.read_only {
            return self.finish_now(io.tag, Status::NotSupported);
        }
        let total: u64 = segs.iter().map(|s| u64::from(s.len)).sum();
        debug_assert_eq!(total, io.bytes(), "segment lengths must add up to the I/O");
        debug_assert!(
            segs.len() <= self.max_segments,
            "more segments than max_segments"
        );
        if total != io.bytes() || segs.is_empty() || segs.len() > self.max_segments {
            return self.finish_now(io.tag, Status::IoError);
        }
        let linked = io.op == Op::Write && io.flags.contains(BioFlags::PREFLUSH);
        let Some(i) = self.take_slot(&io, 1 + u8::from(linked)) else {
            return;
        };
        self.slots[i].linked = linked;
        let offset = io.sector << 9;
        let rw_flags = if io.flags.contains(BioFlags::FUA) {
            libc::RWF_DSYNC
        } else {
            0
        };
        let n = segs.len() as u32;
        // Slot i's own iovecs, and no other slot's (the kernel may be
        // reading those).
        let iovs = &mut self.iovecs[i * self.max_segments..][..segs.len()];
        if segs.len() > 1 {
            for (v, s) in iovs.iter_mut().zip(segs) {
                *v = libc::iovec {
                    iov_base: s.addr.cast(),
                    iov_len: s.len as usize,
                };
            }
        }
        let iov: *const libc::iovec = iovs.as_ptr();
        let (addr, len) = (segs[0].addr, segs[0].len);
        let data = match (io.op, segs.len()) {
            (Op::Read, 1) => on_fd!(self, |fd| opcode::Read::new(fd, addr, len)
                .offset(offset)
                .build()),
            (Op::Read, _) => on_fd!(self, |fd| opcode::Readv::new(fd, iov, n)
                .offset(offset)
                .build()),
            (_, 1) => on_fd!(self, |fd| opcode::Write::new(fd, addr, len)
                .offset(offset)
                .rw_flags(rw_flags)
                .build()),
            _ => on_fd!(self, |fd| opcode::Writev::new(fd, iov, n)
                .offset(offset)
                .rw_flags(rw_flags)
                .build()),
        }
        .user_data(i as u64);
        if linked {
            let flush = self
                .fsync(i as u64 | LINK_HEAD)
                .flags(squeue::Flags::IO_LINK);
            // SAFETY: the data SQE points at the caller's segments (valid
            // until the tag is reported, by this function's contract) or at
            // slot i's iovecs, which stay untouched in `self.iovecs` until
            // the slot's last CQE frees it; `Drop` waits for every CQE.
            unsafe { self.start(i, &[flush, data]) };
        } else {
            // SAFETY: as above.
            unsafe { self.start(i, &[data]) };
        }
    }

    /// Report every I/O finished by now. No system call, unless the kernel
    /// flags task work that would post completions (`IORING_SQ_TASKRUN`):
    /// a `DEFER_TASKRUN` ring posts them only when its issuer enters with
    /// `GETEVENTS`, so this does, without submitting or waiting.
    pub(crate) fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        self.account(now);
        for (tag, outcome) in self.ready.drain(..) {
            self.stats.ios += 1;
            done(tag, outcome);
        }
        if self.ring.submission().taskrun() && self.claim().is_ok() {
            // SAFETY: no argument is passed (a null pointer of size 0 is
            // what `io_uring_enter` takes for none); nothing is submitted.
            // Errors are left to the next `wait`, which enters again.
            let _ = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(0, 0, ENTER_GETEVENTS, None)
            };
        }
        loop {
            let Some(cqe) = self.ring.completion().next() else {
                break;
            };
            self.on_cqe(cqe.user_data(), cqe.result(), cqe.flags(), done);
        }
    }

    /// The wake-up poll's CQE: note the wake-up, re-arm the poll if the
    /// kernel ended it (a readiness, or a cancel-all that caught it), stop
    /// watching on any other error (reported by the next `wait`).
    fn on_watch(&mut self, user_data: u64, res: i32, flags: u32) {
        if user_data & 0xFFFF_FFFF != u64::from(self.watch_gen) || self.watch.is_none() {
            // The end of a poll that was replaced or given up.
            return;
        }
        if io_uring::cqueue::more(flags) {
            self.woken = true;
            return;
        }
        self.watch_armed = false;
        if res >= 0 || res == -libc::ECANCELED {
            self.woken |= res > 0;
            self.arm_watch();
        } else {
            self.woken = true;
            self.watch = None;
            self.watch_error = Some(-res);
        }
    }

    fn on_cqe(&mut self, user_data: u64, res: i32, flags: u32, done: &mut dyn FnMut(u32, Outcome)) {
        if user_data != CANCEL && user_data & WATCH != 0 {
            return self.on_watch(user_data, res, flags);
        }
        if user_data == CANCEL {
            if res == -libc::EINVAL && !self.cancel_each {
                // No `IORING_ASYNC_CANCEL_ANY` (before 5.19): one by one.
                self.cancel_each = true;
                self.cancel_one_by_one();
            }
            return;
        }
        let i = (user_data & !LINK_HEAD) as usize;
        let Some(slot) = self.slots.get(i).copied().filter(|s| s.pending > 0) else {
            debug_assert!(false, "CQE for a free slot: user_data {user_data:#x}");
            return;
        };
        if user_data & LINK_HEAD == 0
            && slot.op == Op::WriteZeroes
            && res == -libc::EOPNOTSUPP
            && !slot.punched
        {
            // No FALLOC_FL_ZERO_RANGE here (tmpfs): a punched hole reads
            // back as zeroes too. Resubmit the same slot that way.
            self.zero_by_punch = true;
            self.slots[i].punched = true;
            let entry = self.fallocate(i, PUNCH);
            // SAFETY: a fallocate SQE carries no pointers.
            unsafe { self.start(i, &[entry]) };
            return;
        }
        let want = if user_data & LINK_HEAD == 0 && slot.op.has_data() {
            slot.bytes
        } else {
            0
        };
        let s = &mut self.slots[i];
        s.failure = keep(s.failure, outcome_of(res, want));
        s.pending -= 1;
        if s.pending == 0 {
            let slot = self.release(i);
            self.stats.ios += 1;
            done(slot.tag, slot.failure.unwrap_or(Outcome::Done));
        }
    }

    /// Submit queued SQEs, if any, without waiting.
    pub(crate) fn kick(&mut self) -> Result<(), DeviceError> {
        if self.ring.submission().is_empty() {
            return Ok(());
        }
        self.claim()?;
        entered(self.ring.submit())
    }

    /// Submit queued SQEs and sleep until a CQE arrives (an I/O's, or the
    /// watched descriptor's) or `timeout` passes. Returns at once if a
    /// completion or a wake-up is already waiting, or if nothing is in
    /// flight, nothing is watched and there is no timeout.
    pub(crate) fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        self.claim()?;
        if let Some(errno) = self.watch_error.take() {
            return Err(DeviceError::Watch(io::Error::from_raw_os_error(errno)));
        }
        self.arm_watch();
        let woken = std::mem::take(&mut self.woken);
        let something = woken || !self.ready.is_empty() || !self.ring.completion().is_empty();
        let idle = self.in_flight == 0 && !self.watch_armed;
        if something || (idle && timeout.is_none()) {
            return self.kick();
        }
        match timeout {
            Some(t) => {
                // The kernel adds the timeout to its clock in signed 64-bit
                // nanoseconds: beyond ~292 years (`Duration::MAX`, a far-off
                // deadline) it overflows into the past and the wait returns
                // at once, so a caller looping on it would spin. A year is
                // as good as forever here.
                let ts = types::Timespec::from(t.min(MAX_WAIT));
                let args = types::SubmitArgs::new().timespec(&ts);
                entered(self.ring.submitter().submit_with_args(1, &args))
            }
            None => entered(self.ring.submit_and_wait(1)),
        }
    }

    /// Ask the kernel to cancel everything in flight; each I/O is still
    /// reported once (cancelled or not) by `complete`.
    pub(crate) fn cancel_all(&mut self) {
        if self.in_flight == 0 || self.claim().is_err() {
            // Nothing to cancel, or I/O only its issuer thread can reach.
            return;
        }
        if self.cancel_each {
            self.cancel_one_by_one();
        } else {
            let any = opcode::AsyncCancel2::new(types::CancelBuilder::any())
                .build()
                .user_data(CANCEL);
            // SAFETY: a cancel SQE carries no pointers.
            unsafe { self.push(&[any]) };
        }
        // Best effort: if this fails the I/Os simply run to completion.
        let _ = self.kick();
    }

    fn cancel_one_by_one(&mut self) {
        let one = |ud: u64| opcode::AsyncCancel::new(ud).build().user_data(CANCEL);
        for i in 0..self.slots.len() {
            let slot = self.slots[i];
            // SAFETY: cancel SQEs carry no pointers.
            unsafe {
                if slot.pending > 0 {
                    self.push(&[one(i as u64)]);
                }
                if slot.pending > 0 && slot.linked {
                    self.push(&[one(i as u64 | LINK_HEAD)]);
                }
            }
        }
    }
}

impl Drop for Ring {
    /// Cancels and reaps everything in flight before the slot table (whose
    /// iovecs the kernel may be reading) is freed. If waiting keeps failing,
    /// the iovecs are leaked instead: a leak is safe, a use-after-free by the
    /// kernel is not. (The submitters' own buffers are their business: the
    /// engine keeps them until every tag is reported.)
    ///
    /// A wake-up poll is left to the ring's teardown (it points at none of
    /// our memory). If another thread is the ring's issuer and has I/O in
    /// flight, this thread cannot reap it: the iovecs are leaked, and the
    /// error the caller got from `wait` told it to keep its buffers (the
    /// engine leaks them when draining fails).
    fn drop(&mut self) {
        self.watch = None;
        if self.in_flight == 0 {
            return;
        }
        if self.claim().is_err() {
            std::mem::forget(std::mem::take(&mut self.iovecs));
            return;
        }
        self.cancel_all();
        let now = self.busy_mark;
        let mut failures = 0;
        loop {
            self.complete(now, &mut |_, _| {});
            if self.in_flight == 0 {
                return;
            }
            match self.wait(None) {
                Ok(()) => failures = 0,
                Err(_) => {
                    failures += 1;
                    if failures >= DROP_WAIT_TRIES {
                        std::mem::forget(std::mem::take(&mut self.iovecs));
                        return;
                    }
                }
            }
        }
    }
}

/// The failure a slot keeps when `new` comes after `old`: the first one,
/// unless that is only the cancellation a failed link head caused.
fn keep(old: Option<Outcome>, new: Outcome) -> Option<Outcome> {
    let cancelled = Outcome::Failed {
        status: Status::Cancelled,
        good_bytes: 0,
    };
    match old {
        _ if new == Outcome::Done => old,
        None => Some(new),
        Some(o) if o == cancelled => Some(new),
        Some(_) => old,
    }
}

/// Errors from `io_uring_enter` that only mean "not now": a timeout, a
/// signal, a full completion queue (the next `complete` drains it), no
/// memory for requests this instant.
fn transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)
    )
}

fn entered(r: io::Result<usize>) -> Result<(), DeviceError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if transient(&e) => Ok(()),
        Err(e) => Err(DeviceError::Enter(e)),
    }
}

/// Build a ring of `entries` SQEs with the first of these setups the kernel
/// takes (an older one says EINVAL to flags it does not know):
///
/// 1. `SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN | TASKRUN_FLAG |
///    SUBMIT_ALL` (6.1), as fio 3.33+ sets up its rings; not for a `polled`
///    ring, whose descriptor `DEFER_TASKRUN` would keep from waking a
///    poller;
/// 2. the same without `DEFER_TASKRUN` (6.0);
/// 3. `COOP_TASKRUN | TASKRUN_FLAG | SUBMIT_ALL` (5.19);
/// 4. a plain ring.
///
/// `SINGLE_ISSUER` rings are set up disabled (`R_DISABLED`): the thread that
/// first uses one enables it and becomes its issuer ([`Ring::claim`]).
///
/// `COOP_TASKRUN` lets completions wait for our next system call instead of
/// interrupting the thread: measured here with 4 KiB random reads at queue
/// depth 32 on tmpfs (whose O_DIRECT I/O runs on io-wq workers), it gave
/// about twice the IOPS of a plain ring for half the system time; on the
/// virtio disk, which is the bottleneck, no difference. `SINGLE_ISSUER` and
/// `DEFER_TASKRUN` bought 5-15% more on tmpfs. `TASKRUN_FLAG` tells
/// [`Ring::complete`] when task work is waiting to post completions.
fn build(entries: u32, polled: bool) -> io::Result<(IoUring, Setup)> {
    let setup = |single_issuer, defer_taskrun, coop_taskrun| Setup {
        single_issuer,
        defer_taskrun,
        coop_taskrun,
    };
    let tries = [
        setup(true, true, true),
        setup(true, false, true),
        setup(false, false, true),
        setup(false, false, false),
    ];
    let mut last = io::Error::from_raw_os_error(libc::EINVAL);
    for s in tries.into_iter().filter(|s| !(polled && s.defer_taskrun)) {
        let mut b = IoUring::builder();
        if s.coop_taskrun {
            b.setup_coop_taskrun()
                .setup_taskrun_flag()
                .setup_submit_all();
        }
        if s.single_issuer {
            b.setup_single_issuer().setup_r_disabled();
        }
        if s.defer_taskrun {
            b.setup_defer_taskrun();
        }
        match b.build(entries) {
            Ok(ring) => return Ok((ring, s)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_link_head_beats_the_cancellation_it_caused() {
        let failed = |status| Outcome::Failed {
            status,
            good_bytes: 0,
        };
        let (io, cancelled) = (failed(Status::IoError), failed(Status::Cancelled));
        assert_eq!(keep(None, Outcome::Done), None);
        assert_eq!(keep(Some(cancelled), io), Some(io));
        assert_eq!(keep(Some(io), cancelled), Some(io));
        assert_eq!(keep(Some(io), failed(Status::NoSpace)), Some(io));
    }
}
