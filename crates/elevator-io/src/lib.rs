//! elevator-io: elevator on real devices, on the real clock.
//!
//! - [`file`](mod@file): a regular file or block device opened with O_DIRECT, driven
//!   through io_uring; [`mem`]: a device in memory; [`fault`]: a wrapper that
//!   fails chosen sectors or a fraction of I/Os; [`paced`]: a simulated disk
//!   on the real clock, its data in memory. All of them sit behind the same
//!   [`elevator_core::Device`] trait the simulated devices use, plus
//!   [`DataDevice`] for the data.
//! - [`dio`]: the direct-I/O submission path's rules: a caller's request
//!   (op, offset, a list of buffers) is checked whole before anything is
//!   submitted, and its completion follows one rule for partial failure.
//! - [`engine`]: one queue over one device on the real clock: requests
//!   become bios, bios become requests, schedulers' wake-ups become io_uring
//!   timeouts.
//! - [`jobs`]: fio job files run through the engine; [`spec`]: `file:PATH`
//!   and `mem:SIZE` device specs; [`cpu`]: CPU time used.
//!
//! Unsafe code in elevator lives here, in the buffer and io_uring code, each
//! block with a `SAFETY:` comment.

#![warn(missing_docs)]

pub mod buf;
pub mod clock;
pub mod cpu;
pub mod device;
pub mod dio;
pub mod engine;
pub mod fault;
pub mod file;
pub mod jobs;
pub mod mem;
pub mod paced;
pub mod spec;
mod uring;

pub use buf::{AlignedBuf, BufError, IoBuf, IoMem, Slice};
pub use clock::Clock;
pub use device::{Alignment, DataDevice, DataSegment, DeviceError};
pub use dio::{Completion, DioError, DioFailure, DioRequest, Rejected};
pub use engine::{Engine, EngineConfig, EngineError};
pub use fault::{FaultDevice, FaultSpec};
pub use file::{FileDevice, FileKind, FileOptions};
pub use mem::{MemDevice, MemOptions, MemSlice};
pub use paced::PacedDevice;
pub use spec::{DeviceKind, DeviceSpec, OpenError, RealDevice, SpecError};
