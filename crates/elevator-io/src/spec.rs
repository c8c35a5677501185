//! Device specs, as `--device` and `--export` name any device, and the
//! device they open.
//!
//! One spec names every device elevator runs on:
//!
//! - a model, a preset with overrides (`hdd-7200`, `hdd-7200,rpm=5400`,
//!   `null,latency=10`; `elevator devices` lists them): simulated on the
//!   virtual clock, or run paced by the real clock;
//! - `file:PATH[,queue_depth=N][,ro]`: a regular file or block device,
//!   O_DIRECT through io_uring (the path may not contain commas);
//! - `mem:SIZE[,lbs=N][,queue_depth=N][,huge_pages=0|1][,copy=0|1][,host_reserve=SIZE]`:
//!   memory, e.g. `mem:1g`; SIZE must be a whole number of blocks (of `lbs`
//!   bytes, 512 by default); it costs only the pages written. Writes that
//!   need new pages fail with ENOSPC while the host has less than
//!   `host_reserve` (default 64m; 0: never) of memory available besides
//!   (see [`MemOptions::host_reserve`]), and [`DeviceSpec::warnings`] says
//!   when SIZE is more than the host has available;
//! - on a file or memory, faults (each off by default; see
//!   [`crate::fault`] for what each does to the bytes):
//!   - `fail_rate=F` (default 0): a fraction 0..=1 of reads and writes fail
//!     with EIO;
//!   - `fail_sectors=A-B[:C-D...]` (default none): I/O touching these
//!     512-byte sectors (`A..B`, B excluded) fails with EIO;
//!   - `fail_seed=N` (default 0): seeds every random choice;
//!   - `lse_sectors=A-B[:C-D...]` (default none): latent sector errors:
//!     reads there fail with EIO until a write reaches them;
//!   - `torn_rate=F` (default 0): a fraction of writes reach the media only
//!     in part (a prefix of whole blocks), and fail with EIO;
//!   - `misdirect_rate=F` (default 0): a fraction of writes land at another
//!     place and complete OK;
//!   - `spike_rate=F` (default 0), `spike_ms=T` (default 100): a fraction
//!     of I/Os complete T late;
//!   - `timeout_rate=F` (default 0), `timeout_ms=T` (default 30000): a
//!     fraction of I/Os are never answered and complete ETIMEDOUT after T;
//!   - `vanish_at=T` (default never; `500ms`, `2s`, or plain seconds): from
//!     T after the device is opened, everything completes ENODEV.
//!
//!   Rates are fractions 0..=1; the ranges of one option must not be empty
//!   or overlap.
//!
//! [`DeviceSpec::parse`] reads it; [`DeviceSpec::parse_with`] hands the
//! options it does not know to its caller (an NBD export's scheduler and
//! tunables); [`DeviceSpec::open`] builds the device on the real clock.

use std::path::PathBuf;
use std::time::Duration;

use elevator_core::{Device, DeviceIo, DeviceStats, Limits, Nanos, Outcome};
use elevator_sim::device::{ModelSpec, ParamError, ParamUnit, parse_param};
use thiserror::Error;

use crate::device::{Alignment, DataDevice, DataSegment, DeviceError};
use crate::fault::{FaultDevice, FaultSpec, fault_option_names};
use crate::file::{FileDevice, FileOptions};
use crate::mem::{MemDevice, MemOptions};
use crate::paced::PacedDevice;
use crate::write_log::{WriteLog, WriteLogDevice};

/// The options of `file:PATH` (name, default, meaning). The parser takes
/// no other (it looks the name up here first), and `elevator devices`
/// lists them from here.
pub const FILE_OPTIONS: [(&str, &str, &str); 2] = [
    (
        "queue_depth",
        "device's",
        "I/Os in flight (a block device's nr_tags up to 128, else 64)",
    ),
    (
        "ro",
        "off",
        "open read-only (also `readonly`): writes complete unsupported",
    ),
];

/// The options of `mem:SIZE` (name, default, meaning). The parser takes
/// no other (it looks the name up here first), and `elevator devices`
/// lists them from here.
pub const MEM_OPTIONS: [(&str, &str, &str); 5] = [
    (
        "lbs",
        "512",
        "logical block size, bytes (a power of two, 512..=65536)",
    ),
    ("queue_depth", "64", "I/Os it takes at once"),
    (
        "huge_pages",
        "0",
        "1: transparent huge pages for stores of 2 MiB or more",
    ),
    (
        "copy",
        "1",
        "0: move no data (null_blk's memory_backed=0), the layer alone",
    ),
    (
        "host_reserve",
        "64m",
        "memory the host keeps; a write needing pages past it: ENOSPC",
    ),
];

/// What kind of device, with its options.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceKind {
    /// A model of a disk, flash or RAID: simulated, or paced by the real
    /// clock.
    Model(ModelSpec),
    /// A file or block device.
    File {
        /// Its path.
        path: PathBuf,
        /// How to open it.
        opts: FileOptions,
    },
    /// Memory.
    Mem {
        /// Size in bytes.
        bytes: u64,
        /// Block size and depth.
        opts: MemOptions,
    },
}

/// A parsed device spec: any device elevator runs on.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSpec {
    /// The device.
    pub kind: DeviceKind,
    /// Faults to inject (none by default; files and memory only).
    pub faults: FaultSpec,
}

/// A spec that does not parse.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SpecError {
    /// A model's name, parameter or value is wrong.
    #[error(transparent)]
    Model(#[from] elevator_sim::device::SpecError),
    /// A `key=value` part is malformed or unknown.
    #[error("'{spec}': {why}")]
    Option {
        /// The spec.
        spec: String,
        /// What was wrong.
        why: String,
    },
}

impl DeviceSpec {
    /// Whether `spec` names a real device (`file:` or `mem:`) rather than a
    /// model.
    pub fn is_real(spec: &str) -> bool {
        spec.starts_with("file:") || spec.starts_with("mem:")
    }

    /// Parse a spec; every option must be the device's own.
    pub fn parse(spec: &str) -> Result<DeviceSpec, SpecError> {
        DeviceSpec::parse_with(spec, &mut |_, _| Ok(false))
    }

    /// Parse a spec, offering every `key=value` (or bare `key`) option that
    /// is not the device's own to `other`, which answers whether it took it
    /// (or why it is wrong). An option nobody takes is an error that lists
    /// the device's options.
    pub fn parse_with(
        spec: &str,
        other: &mut dyn FnMut(&str, &str) -> Result<bool, String>,
    ) -> Result<DeviceSpec, SpecError> {
        let bad = |why: String| SpecError::Option {
            spec: spec.to_string(),
            why,
        };
        let (head, rest) = spec.split_once(',').unwrap_or((spec, ""));
        let head = head.trim();
        let mut kind = if head == "file" {
            return Err(bad(
                "file needs a path: file:PATH, a file or a block device (file:/dev/sdX), \
                 e.g. file:/dev/shm/disk.img"
                    .into(),
            ));
        } else if head == "mem" {
            return Err(bad("mem needs a size: mem:SIZE, e.g. mem:1g".into()));
        } else if let Some(path) = head.strip_prefix("file:") {
            if path.is_empty() {
                return Err(bad("file: needs a path, e.g. file:/dev/shm/disk.img".into()));
            }
            DeviceKind::File {
                path: PathBuf::from(path),
                opts: FileOptions::default(),
            }
        } else if let Some(size) = head.strip_prefix("mem:") {
            let bytes = parse_param("mem", "size", ParamUnit::Bytes, size)
                .map_err(|e| bad(e.to_string()))?;
            if bytes.fract() != 0.0 {
                return Err(bad(format!(
                    "mem:{size} is {bytes} bytes: not a whole number of bytes"
                )));
            }
            DeviceKind::Mem {
                bytes: bytes as u64,
                opts: MemOptions::default(),
            }
        } else {
            DeviceKind::Model(ModelSpec::preset(head)?)
        };
        let mut faults = FaultSpec::default();
        for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .map_or((part, ""), |(k, v)| (k.trim(), v.trim()));
            if let DeviceKind::Model(model) = &mut kind {
                if value.is_empty() {
                    if other(key, value).map_err(&bad)? {
                        continue;
                    }
                    return Err(elevator_sim::device::SpecError::Malformed {
                        spec: spec.to_string(),
                        part: part.to_string(),
                    }
                    .into());
                }
                match model.set(key, value) {
                    Ok(()) => continue,
                    Err(ParamError::Unknown { .. }) if other(key, value).map_err(&bad)? => continue,
                    Err(error) => {
                        return Err(elevator_sim::device::SpecError::Param {
                            spec: spec.to_string(),
                            error,
                        }
                        .into());
                    }
                }
            }
            let number = |unit| {
                let n = parse_param("device", key, unit, value).map_err(|e| bad(e.to_string()))?;
                if n.fract() != 0.0 || n > f64::from(u32::MAX) {
                    return Err(bad(format!("{key}={value}: expected a whole number")));
                }
                Ok(n)
            };
            let own = match kind {
                DeviceKind::File { .. } => &FILE_OPTIONS[..],
                _ => &MEM_OPTIONS[..],
            };
            let key = if key == "readonly" { "ro" } else { key };
            // Only the table's names are the device's own.
            let listed = own.iter().any(|(n, _, _)| *n == key);
            match (&mut kind, key) {
                _ if !listed => {}
                (DeviceKind::File { opts, .. }, "queue_depth") => {
                    opts.queue_depth = Some(number(ParamUnit::Count)? as u32)
                }
                (DeviceKind::File { opts, .. }, "ro" | "readonly") => opts.read_only = true,
                (DeviceKind::Mem { opts, .. }, "queue_depth") => {
                    opts.queue_depth = number(ParamUnit::Count)? as u32
                }
                (DeviceKind::Mem { opts, .. }, "huge_pages") => {
                    opts.huge_pages = match value {
                        "1" | "on" | "true" => true,
                        "0" | "off" | "false" => false,
                        _ => return Err(bad(format!("huge_pages={value}: expected 0 or 1"))),
                    }
                }
                (DeviceKind::Mem { opts, .. }, "copy") => {
                    opts.copy = match value {
                        "1" | "on" | "true" => true,
                        "0" | "off" | "false" => false,
                        _ => return Err(bad(format!("copy={value}: expected 0 or 1"))),
                    }
                }
                (DeviceKind::Mem { opts, .. }, "lbs") => {
                    opts.logical_block_size = number(ParamUnit::Bytes)? as u32
                }
                (DeviceKind::Mem { opts, .. }, "host_reserve") => {
                    let n = parse_param("mem", key, ParamUnit::Bytes, value)
                        .map_err(|e| bad(e.to_string()))?;
                    // 2^64 as f64: anything below it fits a u64.
                    if n.fract() != 0.0 || n >= 18_446_744_073_709_551_616.0 {
                        return Err(bad(format!(
                            "host_reserve={value}: expected a whole number of bytes below 2^64"
                        )));
                    }
                    opts.host_reserve = n as u64;
                }
                // A listed option with no arm here: the test of every
                // listed option finds it.
                _ => return Err(bad(format!("{key}: listed, but not taken here"))),
            }
            if listed || faults.set(key, value).map_err(&bad)? || other(key, value).map_err(&bad)? {
                continue;
            }
            let known: Vec<&str> = own.iter().map(|(n, _, _)| *n).collect();
            let hint = elevator_core::spelling::did_you_mean(
                key,
                own.iter()
                    .chain(crate::fault::FAULT_OPTIONS.iter())
                    .map(|(n, _, _)| *n),
            );
            return Err(bad(format!(
                "unknown option '{part}'{hint}; options: {}, {}",
                known.join(", "),
                fault_option_names()
            )));
        }
        match &kind {
            DeviceKind::Model(model) => {
                model
                    .validate()
                    .map_err(|error| elevator_sim::device::SpecError::Param {
                        spec: spec.to_string(),
                        error,
                    })?
            }
            DeviceKind::Mem { bytes, opts } => {
                let lbs = u64::from(opts.logical_block_size);
                // (A block size that is no power of two, or out of range, is
                // refused when the device is made, with its own message.)
                if lbs.is_power_of_two() && bytes % lbs != 0 {
                    let size = head.strip_prefix("mem:").unwrap_or(head);
                    let down = bytes / lbs * lbs;
                    // The next multiple up, unless it overflows a u64.
                    let up = (bytes / lbs)
                        .checked_add(1)
                        .and_then(|n| n.checked_mul(lbs));
                    let such = match (down, up) {
                        (0, Some(up)) => format!("{up}"),
                        (down, Some(up)) => format!("{down} or {up}"),
                        (down, None) => format!("{down}"),
                    };
                    return Err(bad(format!(
                        "mem:{size} is {bytes} bytes, not a multiple of the {lbs}-byte block \
                         size (lbs): give a whole number of blocks, such as {such}"
                    )));
                }
            }
            DeviceKind::File { .. } => {}
        }
        Ok(DeviceSpec { kind, faults })
    }

    /// What the user should know before the device is used (each a
    /// sentence for the command to print as a warning): a memory device
    /// larger than the memory the host has available
    /// ([`oversize_warning`](crate::mem::oversize_warning)). Reads
    /// `/proc/meminfo` for a memory device; nothing for the others.
    pub fn warnings(&self) -> Vec<String> {
        match &self.kind {
            DeviceKind::Mem { bytes, opts } => {
                crate::mem::oversize_warning(*bytes, opts, &crate::mem::ProcMeminfo)
                    .into_iter()
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// The model, if the spec names one (rather than a file or memory).
    pub fn model(&self) -> Option<&ModelSpec> {
        match &self.kind {
            DeviceKind::Model(m) => Some(m),
            _ => None,
        }
    }

    /// Open the device on the real clock: a file, memory, or the model
    /// paced by the real clock; with its faults, if any.
    ///
    /// A file's ring takes `DEFER_TASKRUN` where the kernel offers it, and
    /// then has no [`poll_fd`](DataDevice::poll_fd): an event loop that
    /// waits on the device opens it with [`DeviceSpec::open_polled`].
    pub fn open(&self) -> Result<RealDevice, OpenError> {
        self.open_ring(false)
    }

    /// Open the device as [`DeviceSpec::open`] does, for an event loop that
    /// waits on its [`poll_fd`](DataDevice::poll_fd): a file's ring is set
    /// up so that its descriptor wakes `epoll` (see
    /// [`FileDevice::open_polled`]).
    pub fn open_polled(&self) -> Result<RealDevice, OpenError> {
        self.open_ring(true)
    }

    fn open_ring(&self, polled: bool) -> Result<RealDevice, OpenError> {
        let dev = match &self.kind {
            DeviceKind::Model(model) => {
                RealDevice::Paced(Box::new(PacedDevice::new(model.build()?)))
            }
            DeviceKind::File { path, opts } if polled => {
                RealDevice::File(Box::new(FileDevice::open_polled(path, opts)?))
            }
            DeviceKind::File { path, opts } => {
                RealDevice::File(Box::new(FileDevice::open(path, opts)?))
            }
            DeviceKind::Mem { bytes, opts } => RealDevice::Mem(MemDevice::new(*bytes, *opts)?),
        };
        Ok(if self.faults.is_active() {
            RealDevice::Faulty(Box::new(FaultDevice::new(dev, &self.faults)))
        } else {
            dev
        })
    }
}

/// A device that cannot be opened.
#[derive(Debug, Error)]
pub enum OpenError {
    /// The model's parameters do not work together.
    #[error(transparent)]
    Model(#[from] ParamError),
    /// The file or memory cannot be had.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The device cannot be shared between threads ([`RealDevice::share`]).
    #[error("{device}: a simulated disk model cannot be shared between threads yet")]
    NotShareable {
        /// The device, described.
        device: String,
    },
}

impl RealDevice {
    /// This device with every write, flush and FUA recorded in `log`
    /// (see [`crate::write_log`]); its shares record into the same log.
    pub fn logged(self, log: std::sync::Arc<WriteLog>) -> RealDevice {
        RealDevice::Logged(Box::new(WriteLogDevice::new(self, log)))
    }

    /// Another handle on the same device, for another thread to drive (a
    /// hardware context of its own): memory shares its bytes
    /// ([`MemDevice::share`]); a file or block device is opened again the
    /// same way, with its own descriptor and ring ([`FileDevice::share`]);
    /// faults wrap a share of the device underneath with the same spec and
    /// a seed of their own ([`FaultDevice::share_with`]). A simulated model
    /// cannot be shared yet ([`OpenError::NotShareable`]).
    ///
    /// Each handle keeps its own statistics ([`Device::stats`]): the caller
    /// adds them up for the device's.
    pub fn share(&self) -> Result<RealDevice, OpenError> {
        Ok(match self {
            RealDevice::Mem(m) => RealDevice::Mem(m.share()?),
            RealDevice::File(f) => RealDevice::File(Box::new(f.share()?)),
            RealDevice::Faulty(f) => RealDevice::Faulty(Box::new(f.share_with(f.inner().share()?))),
            RealDevice::Logged(l) => RealDevice::Logged(Box::new(l.share_with(l.inner().share()?))),
            RealDevice::Paced(p) => {
                return Err(OpenError::NotShareable {
                    device: p.describe(),
                });
            }
        })
    }

    /// Whether [`RealDevice::share`] can give another handle (a simulated
    /// model cannot be shared).
    pub fn shareable(&self) -> bool {
        match self {
            RealDevice::Paced(_) => false,
            RealDevice::Faulty(f) => f.inner().shareable(),
            RealDevice::Logged(l) => l.inner().shareable(),
            RealDevice::Mem(_) | RealDevice::File(_) => true,
        }
    }

    /// A window on the device's own memory, if it is a memory device (see
    /// [`MemDevice::map`]).
    pub fn map(&self, offset: u64, len: usize) -> Option<crate::mem::MemSlice> {
        match self {
            RealDevice::Mem(m) => m.map(offset, len),
            // Writes through a window would not be recorded.
            _ => None,
        }
    }

    /// A window on the device's own memory for the kernel to read, if it
    /// is a memory device (see [`MemDevice::lend`]).
    pub fn lend(&self, offset: u64, len: usize) -> Option<crate::mem::LentSlice> {
        match self {
            RealDevice::Mem(m) => m.lend(offset, len),
            _ => None,
        }
    }
}

/// Any real device (a closed set, so that calls through it stay static).
pub enum RealDevice {
    /// A file or block device.
    File(Box<FileDevice>),
    /// Memory.
    Mem(MemDevice),
    /// A simulated device on the real clock.
    Paced(Box<PacedDevice>),
    /// Any of these, with faults.
    Faulty(Box<FaultDevice<RealDevice>>),
    /// Any of these, with its writes recorded in a write log.
    Logged(Box<WriteLogDevice<RealDevice>>),
}

macro_rules! each {
    ($self:expr, $d:ident => $e:expr) => {
        match $self {
            RealDevice::File($d) => $e,
            RealDevice::Mem($d) => $e,
            RealDevice::Paced($d) => $e,
            RealDevice::Faulty($d) => $e,
            RealDevice::Logged($d) => $e,
        }
    };
}

impl Device for RealDevice {
    fn describe(&self) -> String {
        each!(self, d => d.describe())
    }
    fn limits(&self) -> Limits {
        each!(self, d => d.limits())
    }
    fn queue_depth(&self) -> u32 {
        each!(self, d => d.queue_depth())
    }
    fn rotational(&self) -> bool {
        each!(self, d => d.rotational())
    }
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        each!(self, d => d.submit(io, now))
    }
    fn next_completion(&self) -> Option<Nanos> {
        each!(self, d => d.next_completion())
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        each!(self, d => d.complete(now, done))
    }
    fn outstanding(&self) -> u32 {
        each!(self, d => d.outstanding())
    }
    fn stats(&self) -> DeviceStats {
        each!(self, d => d.stats())
    }
}

impl DataDevice for RealDevice {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        // SAFETY: passed through unchanged; our caller keeps the contract.
        each!(self, d => unsafe { d.submit_data(io, data, now) })
    }
    fn kick(&mut self) -> Result<(), DeviceError> {
        each!(self, d => d.kick())
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        each!(self, d => d.wait(timeout))
    }
    fn cancel_all(&mut self) {
        each!(self, d => d.cancel_all())
    }
    fn alignment(&self) -> Alignment {
        each!(self, d => d.alignment())
    }
    fn poll_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        each!(self, d => d.poll_fd())
    }
    fn watch(&mut self, fd: std::os::fd::RawFd) -> Result<(), DeviceError> {
        each!(self, d => d.watch(fd))
    }
    fn extents(
        &self,
        offset: u64,
        len: u64,
        max: usize,
    ) -> Result<Vec<crate::Extent>, DeviceError> {
        each!(self, d => d.extents(offset, len, max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let s = DeviceSpec::parse("mem:64m,lbs=4096,fail_rate=0.01,fail_sectors=8-16:100-101")
            .expect("parses");
        assert_eq!(
            s.kind,
            DeviceKind::Mem {
                bytes: 64 << 20,
                opts: MemOptions {
                    logical_block_size: 4096,
                    queue_depth: 64,
                    huge_pages: false,
                    copy: true,
                    host_reserve: 64 << 20,
                }
            }
        );
        assert_eq!(s.faults.bad_sectors, vec![(8, 16), (100, 101)]);
        // Whole blocks of any size parse.
        for ok in ["mem:1536", "mem:8k,lbs=4096", "mem:1.5k", "mem:64k,lbs=64k"] {
            DeviceSpec::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        let n = DeviceSpec::parse("mem:4m,copy=0").expect("parses");
        assert!(matches!(
            n.kind,
            DeviceKind::Mem {
                opts: MemOptions { copy: false, .. },
                ..
            }
        ));
        let h = DeviceSpec::parse("mem:4m,huge_pages=1").expect("parses");
        assert!(matches!(
            h.kind,
            DeviceKind::Mem {
                opts: MemOptions {
                    huge_pages: true,
                    ..
                },
                ..
            }
        ));
        for (text, want) in [
            ("mem:4m,host_reserve=1g", 1 << 30),
            ("mem:4m,host_reserve=0", 0),
        ] {
            let r = DeviceSpec::parse(text).expect("parses");
            assert!(
                matches!(r.kind, DeviceKind::Mem { opts: MemOptions { host_reserve, .. }, .. } if host_reserve == want),
                "{text}: {:?}",
                r.kind
            );
        }
        let f = DeviceSpec::parse("file:/tmp/x,queue_depth=8,ro").expect("parses");
        assert!(matches!(
            f.kind,
            DeviceKind::File {
                opts: FileOptions {
                    queue_depth: Some(8),
                    read_only: true,
                    ..
                },
                ..
            }
        ));
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (spec, needle) in [
            // One spec names models too: a model's mistakes are its own.
            ("floppy", "unknown device 'floppy'"),
            ("hdd-7200,rpm=fast", "rpm"),
            ("hdd-7200,fail_rate=0.1", "fail_rate"),
            ("file:", "needs a path"),
            ("mem:lots", "mem"),
            ("mem:1g,colour=red", "unknown option 'colour=red'"),
            ("mem:1g,fail_rate=2", "fraction"),
            ("mem:1g,fail_sectors=9-3", "START < END"),
            (
                "mem:1g,huge_pages=maybe",
                "huge_pages=maybe: expected 0 or 1",
            ),
            ("file:/tmp/x,huge_pages=1", "unknown option 'huge_pages=1'"),
            (
                "mem:1g,host_reserve=0.5",
                "host_reserve=0.5: expected a whole number",
            ),
            (
                "mem:1g,host_reserve=20000000t",
                "host_reserve=20000000t: expected a whole number",
            ),
            ("mem:1g,host_reserve=lots", "host_reserve"),
            (
                "file:/tmp/x,host_reserve=1g",
                "unknown option 'host_reserve=1g'",
            ),
            (
                "mem:1000",
                "mem:1000 is 1000 bytes, not a multiple of the 512-byte block size (lbs): \
                 give a whole number of blocks, such as 512 or 1024",
            ),
            (
                "mem:100",
                "not a multiple of the 512-byte block size (lbs): give a whole number of \
                 blocks, such as 512",
            ),
            (
                "mem:6k,lbs=4096",
                "mem:6k is 6144 bytes, not a multiple of the 4096-byte block size",
            ),
            ("mem:1000.5", "not a whole number of bytes"),
            // Found by the device_spec fuzz target: the next multiple up
            // overflowed.
            (
                "mem:18446744073709551615",
                "give a whole number of blocks, such as 18446744073709551104",
            ),
        ] {
            let e = DeviceSpec::parse(spec).expect_err(spec).to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }

    #[test]
    fn a_memory_device_larger_than_the_host_has_available_is_warned_about() {
        // No host has 64 TiB of memory available (the spec is only
        // parsed: nothing is allocated).
        let huge = DeviceSpec::parse("mem:64t").expect("parses");
        let w = huge.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("a memory device of 67108864 MiB is larger than the")
                && w[0].contains("MemAvailable")
                && w[0].contains("ENOSPC once less than 64 MiB is left (host_reserve)"),
            "{}",
            w[0]
        );
        let off = DeviceSpec::parse("mem:64t,host_reserve=0").expect("parses");
        assert!(off.warnings()[0].contains("nothing refuses its writes (host_reserve=0)"));
        // Small enough for any host that runs the tests; not memory at all.
        for fits in ["mem:1m", "hdd-7200", "file:/tmp/x"] {
            let s = DeviceSpec::parse(fits).expect("parses");
            assert!(s.warnings().is_empty(), "{fits}: {:?}", s.warnings());
        }
    }
}
