//! What a device that moves real data adds to [`elevator_core::Device`].
//!
//! Simulated devices only need to know *what* a request is; a real one needs
//! the memory it reads into or writes from. [`DataDevice::submit_data`] hands
//! it a request together with its data segments (one per bio piece, in sector
//! order), and [`DataDevice::wait`] blocks until the device has something to
//! report or a deadline passes: that is where the real-time engine sleeps, so
//! nothing busy-polls.
//!
//! The core trait's own [`Device::submit`] (no data) still works on every real
//! device for operations without data (flush, discard, write-zeroes); a read or
//! write submitted that way completes with [`Status::NotSupported`], because a
//! real device will not invent the bytes it was not given.

use std::io;
use std::time::Duration;

use elevator_core::{Device, DeviceIo, Nanos, Outcome, Status};
use thiserror::Error;

use crate::extent::Extent;

/// One piece of a request's data: `len` bytes at `addr` in the submitter's
/// memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSegment {
    /// First byte.
    pub addr: *mut u8,
    /// Length in bytes.
    pub len: u32,
}

// SAFETY: a segment is only an address and a length; nothing is reachable
// through it without the `unsafe` contract of `DataDevice::submit_data`,
// which makes the submitter answer for the memory wherever the device runs.
unsafe impl Send for DataSegment {}

/// A device that moves data to and from memory.
pub trait DataDevice: Device {
    /// Accept `io` at `now`, moving its bytes to or from `data` (the request's
    /// segments in order; their lengths add up to the request's length; empty
    /// for operations without data).
    ///
    /// # Safety
    ///
    /// Every segment must be valid for reads and writes of its length, and
    /// must stay valid and untouched by anyone else until this device reports
    /// `io.tag` through [`Device::complete`] (or is dropped, which waits for
    /// everything in flight).
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos);

    /// Hand every accepted I/O to the hardware without waiting.
    fn kick(&mut self) -> Result<(), DeviceError>;

    /// Hand every accepted I/O to the hardware, then sleep until at least one
    /// I/O has completed or `timeout` has passed (`None`: no limit). Returns at
    /// once if a completion is already waiting, or if nothing is in flight and
    /// there is no timeout.
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError>;

    /// Ask the hardware to give up on everything in flight, as far as it can.
    /// Each I/O is still reported once by `complete`: done, or cancelled.
    fn cancel_all(&mut self);

    /// The alignment direct I/O needs on this device.
    fn alignment(&self) -> Alignment;

    /// A file descriptor that becomes readable when completions are waiting,
    /// for event loops that wait on sockets and the device at once (an
    /// io_uring's own descriptor). `None` for devices that complete at once
    /// (memory) or on a known schedule ([`Device::next_completion`]), and
    /// for rings whose descriptor would not wake an event loop (a
    /// [`FileDevice`](crate::file::FileDevice) opened with
    /// [`open`](crate::file::FileDevice::open) on a kernel with
    /// `DEFER_TASKRUN`: open it with
    /// [`open_polled`](crate::file::FileDevice::open_polled) to wait on it).
    fn poll_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }

    /// From now on, [`wait`](DataDevice::wait) also returns when `fd`
    /// becomes readable (another thread handed this one work). The caller
    /// reads (clears) `fd` itself; until it does, `wait` may return at once.
    /// Watching another descriptor replaces the first. The caller keeps `fd`
    /// open while it is watched (and does not reuse its number for another
    /// file). Devices that cannot watch return an error: the default body
    /// does.
    fn watch(&mut self, fd: std::os::fd::RawFd) -> Result<(), DeviceError> {
        let _ = fd;
        Err(DeviceError::Watch(io::Error::from(
            io::ErrorKind::Unsupported,
        )))
    }

    /// Which parts of the `len` bytes at byte `offset` hold data and which
    /// are holes or read as zeroes: extents in order from `offset`, at most
    /// `max` of them (at least one when `len > 0` and `offset` is inside
    /// the device), covering the range, or a leading part of it when
    /// `max` runs out. A range past the end is cut at the end. Cheap
    /// enough to call on the thread that serves requests (no I/O is
    /// queued). The default body knows nothing and says all data.
    fn extents(&self, offset: u64, len: u64, max: usize) -> Result<Vec<Extent>, DeviceError> {
        let _ = max;
        let capacity = self.limits().capacity.saturating_mul(512);
        let len = len.min(capacity.saturating_sub(offset));
        Ok(if len == 0 {
            Vec::new()
        } else {
            vec![Extent::data(len)]
        })
    }
}

/// Direct I/O alignment rules, as Linux's `statx(STATX_DIOALIGN)` reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alignment {
    /// File offsets and lengths must be multiples of this (the logical block
    /// size, at least 512).
    pub offset: u32,
    /// Buffer addresses must be multiples of this (the DMA alignment).
    pub memory: u32,
}

impl Default for Alignment {
    fn default() -> Alignment {
        Alignment {
            offset: 512,
            memory: 512,
        }
    }
}

/// A device could not be opened or used.
#[derive(Debug, Error)]
pub enum DeviceError {
    /// The path names nothing that can be opened.
    #[error("cannot open {path}")]
    Open {
        /// The path.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// The path is neither a regular file nor a block device.
    #[error("{path} is a {kind}; elevator needs a regular file or a block device")]
    NotFileOrBlock {
        /// The path.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// The file system (or device) refuses O_DIRECT.
    #[error("{path}: the file system does not support direct I/O (O_DIRECT): {why}")]
    NoDirect {
        /// The path.
        path: String,
        /// How it showed.
        why: String,
    },
    /// The kernel has no io_uring for us.
    #[error(
        "io_uring is not available (kernel too old, or disabled by \
         /proc/sys/kernel/io_uring_disabled or a seccomp policy)"
    )]
    NoUring {
        /// What `io_uring_setup` said.
        source: io::Error,
    },
    /// The device is too small or its geometry makes no sense.
    #[error("{path}: {why}")]
    Geometry {
        /// The path (or `mem`).
        path: String,
        /// What is wrong.
        why: String,
    },
    /// Memory for the device could not be had.
    #[error(transparent)]
    Memory(#[from] crate::buf::BufError),
    /// Submitting to or waiting on the kernel failed.
    #[error("io_uring_enter: {0}")]
    Enter(io::Error),
    /// The device's io_uring ring is bound to another thread (it was set up
    /// with `SINGLE_ISSUER`), which left I/O in flight on it: only that
    /// thread can submit to it or reap it. A device moves between threads
    /// freely while nothing is in flight.
    #[error("the device's io_uring ring belongs to another thread, which has I/O in flight on it")]
    WrongThread,
    /// A wake-up descriptor cannot be watched ([`DataDevice::watch`]).
    #[error("cannot watch the wake-up descriptor: {0}")]
    Watch(io::Error),
    /// A memory device cannot be shared while windows on its bytes
    /// ([`MemSlice`](crate::mem::MemSlice)) are lent out: another thread
    /// could change the bytes under them.
    #[error("a memory device cannot be shared while {windows} windows on its memory are lent out")]
    WindowsLent {
        /// Windows still alive.
        windows: usize,
    },
    /// Finding a file's holes and data (`lseek`) failed.
    #[error("cannot find the file's holes and data: {0}")]
    Extents(io::Error),
}

/// Whether `fd` can be watched: an open descriptor (`poll(2)` ignores
/// negative ones and flags closed ones).
pub(crate) fn watchable(fd: std::os::fd::RawFd) -> Result<(), DeviceError> {
    if fd < 0 {
        return Err(DeviceError::Watch(io::Error::from_raw_os_error(
            libc::EBADF,
        )));
    }
    poll_readable(fd, Some(Duration::ZERO)).map(|_| ())
}

/// The wait of a device that completes I/O without the kernel: with a
/// descriptor to `watch`, until it is readable or `timeout` passes (`None`:
/// no limit); without one, a sleep of `timeout` (`None`: no wait at all).
pub(crate) fn sleep_or_watch(
    watch: Option<std::os::fd::RawFd>,
    timeout: Option<Duration>,
) -> Result<(), DeviceError> {
    match (watch, timeout) {
        (Some(fd), t) => {
            poll_readable(fd, t)?;
        }
        (None, Some(t)) => std::thread::sleep(t),
        (None, None) => {}
    }
    Ok(())
}

/// Wait until `fd` is readable or `timeout` passes (`None`: no limit), as
/// `poll(2)` does; `Ok(true)` if it is readable. A signal ends the wait
/// early (`Ok(false)`), as any spurious wake-up may.
pub(crate) fn poll_readable(
    fd: std::os::fd::RawFd,
    timeout: Option<Duration>,
) -> Result<bool, DeviceError> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // A year is as good as forever, and fits every `time_t`.
    let ts = timeout.map(|t| {
        let t = t.min(Duration::from_secs(365 * 24 * 3600));
        libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        }
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfd` is one valid pollfd for the duration of the call; `tsp`
    // is null or points at `ts`, which lives until the call returns; a null
    // signal mask leaves the mask alone.
    let n = unsafe { libc::ppoll(&mut pfd, 1, tsp, std::ptr::null()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EINTR) => Ok(false),
            _ => Err(DeviceError::Watch(e)),
        };
    }
    if pfd.revents & libc::POLLNVAL != 0 {
        return Err(DeviceError::Watch(io::Error::from_raw_os_error(
            libc::EBADF,
        )));
    }
    Ok(n > 0 && pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
}

/// The status an errno from the kernel maps to.
pub fn status_of_errno(errno: i32) -> Status {
    match errno {
        libc::ENOSPC | libc::EDQUOT => Status::NoSpace,
        libc::EOPNOTSUPP | libc::ENOTTY => Status::NotSupported,
        libc::ECANCELED | libc::EINTR => Status::Cancelled,
        libc::ETIMEDOUT => Status::TimedOut,
        libc::ENODEV | libc::ENXIO => Status::Offline,
        _ => Status::IoError,
    }
}

/// What a request that moved `got` of its `want` bytes, or failed with
/// `-errno` (`res < 0`), counts as.
pub fn outcome_of(res: i32, want: u64) -> Outcome {
    if res < 0 {
        return Outcome::Failed {
            status: status_of_errno(-res),
            good_bytes: 0,
        };
    }
    let got = res as u64;
    if got >= want {
        Outcome::Done
    } else {
        // A short transfer: the rest did not happen. Counting it as an I/O
        // error keeps byte counts honest (never counting bytes that did not
        // move).
        Outcome::Failed {
            status: Status::IoError,
            good_bytes: got,
        }
    }
}

/// Writes [`DataDevice`] methods that pass the call on, unchanged, to a
/// field of the device (a wrapper's inner device, or a ring with the same
/// calls), as [`elevator_core::forward_device!`] does for
/// [`Device`]'s:
///
/// ```ignore
/// impl<D: DataDevice> DataDevice for Wrapper<D> {
///     elevator_io::forward_data_device!(inner: kick, wait, cancel_all, alignment);
///     unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) { .. }
/// }
/// ```
#[macro_export]
macro_rules! forward_data_device {
    ($inner:ident: $($method:ident),+ $(,)?) => {
        $($crate::forward_data_device!(@one $inner $method);)+
    };
    (@one $i:ident submit_data) => {
        #[inline]
        unsafe fn submit_data(
            &mut self,
            io: ::elevator_core::DeviceIo,
            data: &[$crate::DataSegment],
            now: ::elevator_core::Nanos,
        ) {
            // SAFETY: passed through unchanged; our caller keeps the
            // contract.
            unsafe { self.$i.submit_data(io, data, now) }
        }
    };
    (@one $i:ident kick) => {
        ::elevator_core::forward_method!($i: fn kick(&mut self)
            -> ::std::result::Result<(), $crate::DeviceError>);
    };
    (@one $i:ident wait) => {
        ::elevator_core::forward_method!($i: fn wait(
            &mut self,
            timeout: ::std::option::Option<::std::time::Duration>,
        ) -> ::std::result::Result<(), $crate::DeviceError>);
    };
    (@one $i:ident cancel_all) => {
        ::elevator_core::forward_method!($i: fn cancel_all(&mut self));
    };
    (@one $i:ident alignment) => {
        ::elevator_core::forward_method!($i: fn alignment(&self) -> $crate::Alignment);
    };
    (@one $i:ident poll_fd) => {
        ::elevator_core::forward_method!($i: fn poll_fd(&self)
            -> ::std::option::Option<::std::os::fd::BorrowedFd<'_>>);
    };
    (@one $i:ident watch) => {
        ::elevator_core::forward_method!($i: fn watch(&mut self, fd: ::std::os::fd::RawFd)
            -> ::std::result::Result<(), $crate::DeviceError>);
    };
    (@one $i:ident extents) => {
        ::elevator_core::forward_method!($i: fn extents(&self, offset: u64, len: u64, max: usize)
            -> ::std::result::Result<::std::vec::Vec<$crate::Extent>, $crate::DeviceError>);
    };
}
