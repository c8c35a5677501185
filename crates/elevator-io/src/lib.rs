//! elevator-io: elevator on real devices, on the real clock.
//!
//! - [`buf`]: buffers the kernel reads and writes while I/O is in flight;
//!   [`device`]: what a device that moves data adds to
//!   [`elevator_core::Device`] ([`DataDevice`]), its alignment and errors;
//!   [`clock`]: the real clock in the engine's nanoseconds; [`extent`]:
//!   which parts of a device hold data and which are holes.
//! - [`file`](mod@file): a regular file or block device opened with O_DIRECT, driven
//!   through io_uring ([`file_kind`]: a file's type in words, for messages); [`mem`]: a device in memory (and windows on it);
//!   [`fault`]: a wrapper that fails, tears, misplaces, delays or drops I/O, or vanishes;
//!   [`paced`]: a simulated disk on the real clock, its data in memory. All
//!   of them sit behind the same [`elevator_core::Device`] trait the
//!   simulated devices use, plus [`DataDevice`] for the data.
//! - [`dio`]: the direct-I/O submission path's rules: a caller's request
//!   (op, offset, a list of buffers) is checked whole before anything is
//!   submitted, and its completion follows one rule for partial failure.
//! - [`engine`]: one queue over one device on the real clock: requests
//!   become bios, bios become requests, schedulers' wake-ups become io_uring
//!   timeouts.
//! - [`jobs`]: fio job files run through the engine; [`spec`]: the one
//!   device spec (`file:PATH`, `mem:SIZE`, or a model, which runs paced by
//!   the real clock) and the device it opens; [`cpu`]: CPU time used.
//! - [`lockstat`]: a mutex that counts its acquisitions, contentions,
//!   rejects and hold and wait times, as lockmeter does.
//! - [`tags`]: a device's tag set, shared by its hardware contexts and taken
//!   without a lock ([`TagSet`]); [`inbox`]: completions handed back to the
//!   thread that submitted them, waking it through an eventfd only when it
//!   sleeps ([`Inbox`]). Both are model-checked with loom (`scripts/loom`).
//!
//! Dependencies point one way: [`buf`] names no other module, [`device`]
//! only [`buf`], the devices only those two (and io_uring's wrapper), and
//! the engine, jobs and specs sit above the devices.
//!
//! Unsafe code in elevator lives here: the buffers, the memory devices'
//! stores, the io_uring code, a `getrusage` call, and the devices passing on
//! [`DataDevice::submit_data`]'s contract; each block has a `SAFETY:`
//! comment.

#![warn(missing_docs)]

pub mod buf;
pub mod clock;
pub mod cpu;
pub mod device;
pub mod dio;
pub mod engine;
pub mod extent;
pub mod fault;
pub mod file;
pub mod file_kind;
pub mod inbox;
pub mod jobs;
pub mod lockstat;
pub mod mem;
pub mod mq;
pub mod paced;
pub mod replay;
pub mod spec;
mod sync;
pub mod tags;
mod uring;
mod verify_dump;
pub mod write_log;
pub mod write_log_file;
mod written;

pub use buf::{AlignedBuf, BufError, IoBuf, Slice};
pub use clock::Clock;
pub use device::{Alignment, DataDevice, DataSegment, DeviceError};
pub use dio::{Completion, DioError, DioFailure, DioRequest, Rejected};
pub use engine::{Engine, EngineConfig, EngineError};
pub use extent::Extent;
pub use fault::{FaultCounts, FaultDevice, FaultSpec, FaultTally};
pub use file::{FileCache, FileDevice, FileKind, FileOptions};
pub use inbox::Inbox;
pub use mem::{IoMem, LentSlice, MemDevice, MemOptions, MemSlice, SendList};
pub use paced::PacedDevice;
pub use spec::{DeviceKind, DeviceSpec, OpenError, RealDevice, SpecError};
pub use tags::{TagHint, TagSet, TagSetError};
pub use write_log::{WriteLog, WriteLogCounts, WriteLogDevice, WriteLogOptions};
