//! The real device: a regular file or a block device opened with O_DIRECT
//! (or, on request, through the page cache) and driven through io_uring.
//!
//! This module owns opening and probing: what the path is, whether direct
//! I/O works on it, its size, the alignment direct I/O needs (from `statx`,
//! the block layer, or a conservative guess), its limits, whether it spins,
//! and how deep to queue. Moving the data is the
//! (private) `uring` module's business.
//!
//! [`FileCache`] chooses between the two ways of opening: direct I/O (the
//! default: the host's page cache is out of the way, as under a disk) or
//! the page cache (as nbdkit's file plugin opens files by default): reads
//! it holds never reach the file system's device, writes are acknowledged
//! once in it, and flushes and FUA writes make them durable (`fdatasync`,
//! `RWF_DSYNC`). Through the page cache any 512-byte-aligned I/O works.
//!
//! The io_uring ring is set up with the fastest flags the kernel offers
//! (`SINGLE_ISSUER | DEFER_TASKRUN` on 6.1+, as fio 3.33+ does;
//! [`FileDevice::ring_setup`] says which it got). Such a ring belongs to the
//! thread that first submits to it or waits on it, not the one that opened
//! it: open a device anywhere and drive it on the thread of your choice. It
//! may move to another thread later while nothing is in flight (it then
//! sets up a fresh ring there); with I/O in flight, only its thread can
//! reap it ([`DeviceError::WrongThread`] elsewhere). An event loop that
//! waits on the ring's descriptor ([`DataDevice::poll_fd`]) needs a device
//! opened with [`FileDevice::open_polled`]: a `DEFER_TASKRUN` ring's
//! descriptor does not wake `epoll` (checked on 6.18), so it has none.
//!
//! Several threads drive one file or block device through [shares]
//! (`FileDevice::share`): each its own descriptor and ring, each its own
//! statistics (the caller adds them up).
//!
//! [shares]: FileDevice::share
//!
//! ```no_run
//! use elevator_core::Device;
//! use elevator_io::{FileDevice, FileOptions};
//!
//! let dev = FileDevice::open("/dev/shm/disk".as_ref(), &FileOptions::default())?;
//! println!("{}", dev.describe());
//! # Ok::<(), elevator_io::DeviceError>(())
//! ```

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use elevator_core::{Device, Limits, Nanos};
use rustix::fs::{AtFlags, Mode, OFlags, SeekFrom, StatxFlags};
use rustix::io::Errno;

use crate::buf::AlignedBuf;
use crate::device::{Alignment, DataDevice, DeviceError};
use crate::uring::{MAX_QUEUE_DEPTH, Ring, RingConfig};

/// How to open a [`FileDevice`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileOptions {
    /// I/Os in flight at once (clamped to 1..=4096). Default: the block
    /// device's hardware queue depth (`mq/0/nr_tags`, at most 128), else 64.
    pub queue_depth: Option<u32>,
    /// Open read-only: writes, discards and write-zeroes then complete with
    /// `Status::NotSupported`.
    pub read_only: bool,
    /// Direct I/O (the default) or the page cache.
    pub cache: FileCache,
}

/// Whether a [`FileDevice`] goes through the host's page cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileCache {
    /// O_DIRECT: every I/O reaches the file system's device, aligned as it
    /// needs (`cache=direct`, the default).
    #[default]
    Direct,
    /// Buffered: reads and writes go through the page cache, as nbdkit's
    /// file plugin does by default (`cache=page`).
    Page,
}

impl FileCache {
    /// Parse `direct` or `page`.
    pub fn parse(text: &str) -> Option<FileCache> {
        match text {
            "direct" => Some(FileCache::Direct),
            "page" => Some(FileCache::Page),
            _ => None,
        }
    }

    /// Its name, as [`parse`](FileCache::parse) takes it.
    pub fn name(self) -> &'static str {
        match self {
            FileCache::Direct => "direct",
            FileCache::Page => "page",
        }
    }
}

/// What a [`FileDevice`] is underneath.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file on some file system.
    Regular,
    /// A block device node.
    Block,
}

/// Where a device's direct-I/O alignment came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AlignSource {
    /// `statx(STATX_DIOALIGN)`.
    Statx,
    /// `BLKSSZGET` and `queue/dma_alignment` in sysfs.
    BlockQueue,
    /// Nothing said: 4096/4096, which every file system takes.
    Assumed,
    /// Opened through the page cache: 512-byte sectors, no direct I/O.
    PageCache,
}

/// A regular file or block device, opened with O_DIRECT (or through the
/// page cache, [`FileCache::Page`]), behind io_uring.
///
/// Its statistics ([`Device::stats`]) are its own: the shares of one file
/// count apart, and whoever wants the whole device's adds them up.
pub struct FileDevice {
    // Declared first so that it is dropped (and has reaped every CQE) before
    // the file is closed.
    ring: Ring,
    file: OwnedFd,
    path: PathBuf,
    kind: FileKind,
    /// As opened (a share opens the same way).
    opts: FileOptions,
    /// Opened with `open_polled`.
    polled: bool,
    read_only: bool,
    limits: Limits,
    alignment: Alignment,
    align_source: AlignSource,
    rotational: bool,
    queue_depth: u32,
    /// "on ext4", "7:0": for `describe`.
    home: String,
    /// Bytes at the end of the file past its last whole block: not served.
    tail: u64,
}

impl FileDevice {
    /// Open `path` for direct I/O (or through the page cache, as
    /// [`FileOptions::cache`] says) and probe it. Nothing is submitted on
    /// failure, and every error names the path.
    ///
    /// Its ring takes `DEFER_TASKRUN` where the kernel offers it, and then
    /// has no [`poll_fd`](DataDevice::poll_fd): to wait on the device in an
    /// event loop, use [`FileDevice::open_polled`].
    pub fn open(path: &Path, opts: &FileOptions) -> Result<FileDevice, DeviceError> {
        FileDevice::open_ring(path, opts, false)
    }

    /// Open `path` as [`FileDevice::open`] does, with a ring whose
    /// descriptor an event loop can wait on ([`DataDevice::poll_fd`] is
    /// always `Some`): set up without `DEFER_TASKRUN`, whose descriptor
    /// does not wake `epoll` or `poll` when completions are pending.
    pub fn open_polled(path: &Path, opts: &FileOptions) -> Result<FileDevice, DeviceError> {
        FileDevice::open_ring(path, opts, true)
    }

    /// Another handle on the same file or block device, for another thread
    /// to drive: the same path opened again, the same way (options, and
    /// [`open_polled`](FileDevice::open_polled) or not), with its own
    /// descriptor, ring (set up by the thread that first uses it), queue
    /// depth and statistics. What one share writes, another reads once the
    /// write has completed: the page cache is out of the way (O_DIRECT), or
    /// all of them share it ([`FileCache::Page`]).
    pub fn share(&self) -> Result<FileDevice, DeviceError> {
        FileDevice::open_ring(&self.path, &self.opts, self.polled)
    }

    fn open_ring(path: &Path, opts: &FileOptions, polled: bool) -> Result<FileDevice, DeviceError> {
        let name = || path.display().to_string();
        let open_err = |source: io::Error| DeviceError::Open {
            path: name(),
            source,
        };
        let no_direct = |why: String| DeviceError::NoDirect { path: name(), why };
        let geometry = |why: String| DeviceError::Geometry { path: name(), why };

        let kind = kind_of(&fs::metadata(path).map_err(open_err)?.file_type())
            .map_err(|kind| DeviceError::NotFileOrBlock { path: name(), kind })?;
        let access = if opts.read_only {
            OFlags::RDONLY
        } else {
            OFlags::RDWR
        };
        let buffered = opts.cache == FileCache::Page;
        let direct = if buffered {
            OFlags::empty()
        } else {
            OFlags::DIRECT
        };
        let file = rustix::fs::open(path, access | direct | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| match e {
                Errno::INVAL => no_direct("open with O_DIRECT failed with EINVAL".into()),
                e => open_err(e.into()),
            })?;

        let st = probe_stat(&file).map_err(open_err)?;
        let (alignment, align_source) = match (st.dio, kind) {
            // Through the page cache, any sector takes I/O.
            _ if buffered => (aligned(512, 512), AlignSource::PageCache),
            (Some((0, _)), _) => {
                return Err(no_direct(
                    "statx reports no direct I/O support (DIO offset alignment 0)".into(),
                ));
            }
            (Some((offset, memory)), _) => (aligned(offset, memory), AlignSource::Statx),
            (None, FileKind::Block) => {
                let lbs = rustix::fs::ioctl_blksszget(&file).map_err(|e| open_err(e.into()))?;
                let dma = sysfs(st.rdev, "queue/dma_alignment").and_then(|a| a.checked_add(1));
                let memory = dma.and_then(|m| u32::try_from(m).ok()).unwrap_or(lbs);
                (aligned(lbs, memory), AlignSource::BlockQueue)
            }
            (None, FileKind::Regular) => (aligned(4096, 4096), AlignSource::Assumed),
        };
        let lbs = alignment.offset;
        if lbs > 65536 {
            return Err(geometry(format!(
                "a {lbs}-byte direct I/O block is larger than the 64 KiB elevator takes"
            )));
        }

        let bytes = match kind {
            FileKind::Regular => st.size,
            FileKind::Block => {
                rustix::fs::seek(&file, SeekFrom::End(0)).map_err(|e| open_err(e.into()))?
            }
        };
        let whole = bytes / u64::from(lbs) * u64::from(lbs);
        let tail = bytes - whole;
        let bytes = whole;
        if bytes == 0 {
            return Err(geometry(match kind {
                FileKind::Regular => format!(
                    "is empty (or smaller than one {lbs}-byte block); give it a size, \
                     e.g. truncate -s 1G {}",
                    name()
                ),
                FileKind::Block => "the block device has no capacity".into(),
            }));
        }

        // One synchronous direct read of the first block: some file systems
        // accept O_DIRECT at open and refuse it at the first I/O.
        let mut probe = AlignedBuf::new(lbs as usize, alignment.memory.max(lbs) as usize)?;
        match rustix::io::pread(&file, &mut probe[..], 0) {
            Ok(_) => {}
            Err(Errno::INVAL) => {
                return Err(no_direct(format!(
                    "a direct read of the first {lbs}-byte block failed with EINVAL"
                )));
            }
            Err(e) => return Err(open_err(e.into())),
        }

        // The block device whose queue we describe: the device itself, or
        // the one under the file's file system (none for tmpfs: major 0).
        let queue = match kind {
            FileKind::Block => st.rdev,
            FileKind::Regular => st.dev,
        };
        let limits = limits_of(kind, queue, lbs, bytes);
        limits.validate().map_err(|e| geometry(e.to_string()))?;
        let rotational = sysfs(queue, "queue/rotational") == Some(1);
        let queue_depth = match opts.queue_depth {
            Some(qd) => qd.clamp(1, MAX_QUEUE_DEPTH),
            None => sysfs(queue, "mq/0/nr_tags").map_or(64, |t| t.clamp(1, 128) as u32),
        };
        let ring = Ring::new(
            file.as_raw_fd(),
            RingConfig {
                queue_depth,
                max_segments: limits.max_segments,
                read_only: opts.read_only,
                polled,
            },
        )
        .map_err(|source| DeviceError::NoUring { source })?;
        let home = match kind {
            FileKind::Regular => format!("on {}", fs_name(&file)),
            FileKind::Block => format!("{}:{}", st.rdev.0, st.rdev.1),
        };
        Ok(FileDevice {
            ring,
            file,
            path: path.to_path_buf(),
            kind,
            opts: *opts,
            polled,
            read_only: opts.read_only,
            limits,
            alignment,
            align_source,
            rotational,
            queue_depth,
            home,
            tail,
        })
    }

    /// Bytes at the end of the file that are not part of the device: the
    /// size is rounded down to a whole number of logical blocks, so the
    /// last `tail` bytes of a file whose size is not a multiple of the block
    /// size can be neither read nor written through it. Its
    /// [`describe`](Device::describe) says so.
    pub fn unserved_tail(&self) -> u64 {
        self.tail
    }

    /// Whether it is a regular file or a block device.
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// The path it was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it was opened read-only.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// How the io_uring ring was set up, in a few words: the setup flags
    /// the kernel took, and whether the file is registered with the ring
    /// (e.g. "single-issuer defer-taskrun coop-taskrun taskrun-flag
    /// submit-all, registered file"). [`describe`](Device::describe)
    /// includes it.
    pub fn ring_setup(&self) -> String {
        self.ring.setup()
    }
}

impl std::fmt::Debug for FileDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileDevice")
            .field("path", &self.path)
            .field("fd", &self.file.as_raw_fd())
            .field("kind", &self.kind)
            .field("limits", &self.limits)
            .field("alignment", &self.alignment)
            .field("queue_depth", &self.queue_depth)
            .finish_non_exhaustive()
    }
}

impl Device for FileDevice {
    fn describe(&self) -> String {
        let kind = match self.kind {
            FileKind::Regular => "regular file",
            FileKind::Block => "block device",
        };
        let source = match self.align_source {
            AlignSource::Statx => "statx",
            AlignSource::BlockQueue => "BLKSSZGET and sysfs",
            AlignSource::Assumed => "a conservative guess",
            AlignSource::PageCache => "",
        };
        let alignment = if self.align_source == AlignSource::PageCache {
            "through the page cache".to_string()
        } else {
            format!(
                "DIO alignment {}/{} from {source}",
                self.alignment.offset, self.alignment.memory
            )
        };
        let tail = if self.tail == 0 {
            String::new()
        } else {
            format!(
                "; the file's last {} bytes are not served: they are not a whole {}-byte \
                 block",
                self.tail, self.limits.logical_block_size
            )
        };
        format!(
            "file {} ({} {kind} {}{}, {}-byte blocks, {alignment}, \
             queue depth {}, io_uring {}{tail})",
            self.path.display(),
            human_bytes(self.limits.capacity << 9),
            self.home,
            if self.rotational { ", rotational" } else { "" },
            self.limits.logical_block_size,
            self.queue_depth,
            self.ring.setup(),
        )
    }

    elevator_core::device_shape_fields!();

    elevator_core::forward_device!(ring: submit, complete, outstanding, stats);

    fn next_completion(&self) -> Option<Nanos> {
        None
    }
}

impl DataDevice for FileDevice {
    crate::forward_data_device!(ring: submit_data, kick, wait, cancel_all);

    fn alignment(&self) -> Alignment {
        self.alignment
    }

    fn poll_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.ring.pollable().then(|| self.ring.fd())
    }

    /// A multishot poll on `fd` in the ring; its CQEs are no I/O (never in
    /// [`outstanding`](Device::outstanding), never reported by
    /// [`complete`](Device::complete)).
    fn watch(&mut self, fd: std::os::fd::RawFd) -> Result<(), DeviceError> {
        self.ring.watch(fd)
    }

    /// A regular file's holes, from `lseek(SEEK_DATA/SEEK_HOLE)` (holes read
    /// as zeroes); a block device is all data.
    fn extents(
        &self,
        offset: u64,
        len: u64,
        max: usize,
    ) -> Result<Vec<crate::Extent>, DeviceError> {
        let served = self.limits.capacity.saturating_mul(512);
        let len = len.min(served.saturating_sub(offset));
        if len == 0 {
            return Ok(Vec::new());
        }
        match self.kind {
            FileKind::Regular => crate::extent::file_extents(&self.file, offset, len, max),
            FileKind::Block => Ok(vec![crate::Extent::data(len)]),
        }
    }
}

/// What `stat` says about an open file.
struct Stat {
    size: u64,
    /// The file system's device (major, minor).
    dev: (u32, u32),
    /// The device a device node stands for.
    rdev: (u32, u32),
    /// DIO (offset, memory) alignment, if `statx` reported it.
    dio: Option<(u32, u32)>,
}

fn probe_stat(file: &OwnedFd) -> io::Result<Stat> {
    let mask = StatxFlags::BASIC_STATS | StatxFlags::DIOALIGN;
    match rustix::fs::statx(file, "", AtFlags::EMPTY_PATH, mask) {
        Ok(st) => Ok(Stat {
            size: st.stx_size,
            dev: (st.stx_dev_major, st.stx_dev_minor),
            rdev: (st.stx_rdev_major, st.stx_rdev_minor),
            dio: StatxFlags::from_bits_retain(st.stx_mask)
                .contains(StatxFlags::DIOALIGN)
                .then_some((st.stx_dio_offset_align, st.stx_dio_mem_align)),
        }),
        // No statx (a seccomp policy, an old kernel): plain fstat.
        Err(_) => {
            let st = rustix::fs::fstat(file)?;
            let dev = |d| (rustix::fs::major(d), rustix::fs::minor(d));
            Ok(Stat {
                size: u64::try_from(st.st_size).unwrap_or(0),
                dev: dev(st.st_dev),
                rdev: dev(st.st_rdev),
                dio: None,
            })
        }
    }
}

fn kind_of(t: &fs::FileType) -> Result<FileKind, &'static str> {
    if t.is_file() {
        Ok(FileKind::Regular)
    } else if t.is_block_device() {
        Ok(FileKind::Block)
    } else {
        Err(crate::file_kind::name(t))
    }
}

/// An alignment with the offset at least 512 and both powers of two.
fn aligned(offset: u32, memory: u32) -> Alignment {
    let pow2 = |n: u32| n.checked_next_power_of_two().unwrap_or(1 << 31);
    Alignment {
        offset: pow2(offset.max(512)),
        memory: pow2(memory.max(1)),
    }
}

/// A number from `/sys/dev/block/MAJ:MIN/<rel>`, or from the parent's
/// (where a partition's queue lives). `None` for major 0 (tmpfs and other
/// file systems without a device) or anything unreadable.
fn sysfs(dev: (u32, u32), rel: &str) -> Option<u64> {
    if dev.0 == 0 {
        return None;
    }
    let base = format!("/sys/dev/block/{}:{}", dev.0, dev.1);
    [format!("{base}/{rel}"), format!("{base}/../{rel}")]
        .iter()
        .find_map(|p| fs::read_to_string(p).ok()?.trim().parse().ok())
}

/// The limits of a device of `bytes` bytes with `lbs`-byte blocks, whose
/// block queue (if any) is `queue`.
fn limits_of(kind: FileKind, queue: (u32, u32), lbs: u32, bytes: u64) -> Limits {
    let d = Limits::default();
    let base = Limits {
        logical_block_size: lbs,
        capacity: bytes >> 9,
        chunk_sectors: 0,
        ..d
    };
    match kind {
        // Every piece of a bio is one iovec for us: allow large ones.
        FileKind::Regular => Limits {
            max_sectors: 8192,
            max_segments: 256,
            max_segment_size: 4 << 20,
            ..base
        },
        FileKind::Block => {
            let lbs_sectors = u64::from(lbs >> 9);
            let max_sectors = sysfs(queue, "queue/max_sectors_kb")
                .map(|kb| (kb * 2).min(u64::from(u32::MAX >> 9)))
                .map(|s| s / lbs_sectors * lbs_sectors)
                .filter(|&s| s >= lbs_sectors)
                .map_or(d.max_sectors, |s| s as u32);
            // More than IOV_MAX iovecs cannot go in one readv.
            let max_segments = sysfs(queue, "queue/max_segments")
                .filter(|&n| n >= 1)
                .map_or(d.max_segments, |n| n.min(1024) as u16);
            let max_segment_size = sysfs(queue, "queue/max_segment_size")
                .map(|n| n.min(u64::from(u32::MAX)) / u64::from(lbs) * u64::from(lbs))
                .filter(|&n| n >= 4096)
                .map_or(d.max_segment_size.max(lbs), |n| n as u32);
            Limits {
                max_sectors,
                max_segments,
                max_segment_size,
                ..base
            }
        }
    }
}

/// The file system `file` lives on, by its magic number.
fn fs_name(file: &OwnedFd) -> String {
    let Ok(st) = rustix::fs::fstatfs(file) else {
        return "an unknown file system".into();
    };
    #[allow(clippy::unnecessary_cast)] // f_type's width differs by architecture
    let magic = st.f_type as u64;
    let name = match magic {
        0x0102_1994 => "tmpfs",
        0xef53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683e => "btrfs",
        0xf2f5_2010 => "f2fs",
        0xca45_1a4e => "bcachefs",
        0x2fc1_2fc1 => "zfs",
        0x794c_7630 => "overlayfs",
        0x6969 => "nfs",
        0x6573_5546 => "fuse",
        0x0102_1997 => "9p",
        _ => return format!("file system {magic:#x}"),
    };
    name.into()
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2} {}", UNITS[unit])
}
