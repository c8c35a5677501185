//! elevator-core: the block layer's core, in user space.
//!
//! Bios become requests, requests merge, schedulers order them, and every bio
//! completes exactly once. The core is pure and deterministic: no threads, no
//! system calls, no clock (time is a [`Nanos`] the caller passes in), no global
//! state, so the same scheduler code runs on a simulation's virtual clock and
//! on a real device's.
//!
//! ```
//! use elevator_core::{Bio, Dispatch, Outcome, Queue, QueueConfig};
//!
//! let mut q = Queue::with_scheduler(QueueConfig::default(), "mq-deadline")?;
//! q.submit(&Bio::read(0, 4096, 1), 0)?;
//! q.submit(&Bio::read(8, 4096, 2), 0)?; // back-merges into the first request
//! let Dispatch::Request(rq) = q.dispatch(10) else { panic!("nothing to dispatch") };
//! assert_eq!(q.request(rq).bytes(), 8192);
//! let mut done = vec![];
//! q.complete(rq, Outcome::Done, 20, &mut |c| done.push(c.token))?;
//! assert_eq!(done, vec![1, 2]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Modules: [`bio`] (what a submitter asks), [`limits`] (what the device
//! takes), [`request`] (what the device gets), [`queue`] (merging, plugging,
//! tags, dispatch, completion), [`range`] (byte ranges from outside, checked
//! once), [`sched`] (the schedulers), [`stats`], [`lockstat`] (lock
//! statistics as lockmeter counts them), [`rng`] (seeded random streams),
//! [`fault`] (fault counts and the fault decisions both engines share),
//! [`tunable`] (named settings), [`spelling`] ("did you mean"), [`index`] (the allocation-free lists, trees
//! and slabs underneath).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bio;
pub mod device;
pub mod error;
pub mod fault;
pub mod index;
pub mod limits;
pub mod lockstat;
pub mod queue;
pub mod range;
pub mod request;
pub mod rng;
pub mod sched;
pub mod spelling;
pub mod stats;
pub mod trace;
pub mod tunable;

pub use bio::{
    Bio, BioCompletion, BioFlags, Dir, IoContext, IoPrio, Nanos, Op, PrioClass, SECTOR_SIZE,
    Sector, Status,
};
pub use device::{Device, DeviceIo, DeviceStats, HeadSample};
pub use error::{BioError, ConfigError, RequestError, SubmitError, TunableError, UnknownScheduler};
pub use limits::Limits;
pub use queue::{BuildError, DeviceShape, Dispatch, Outcome, Queue, QueueConfig, Submitted};
pub use range::{ByteRange, RangeError};
pub use request::{BioView, Request, RequestId, Requests, RqState};
pub use sched::{
    AnyScheduler, MergeKind, Plugin, PluginScheduler, Plugins, SCHEDULER_ALIASES, SCHEDULER_NAMES,
    SchedDispatch, Scheduler, canonical_scheduler, scheduler_list,
};
pub use stats::{DiskDir, Histogram, QueueStats, Summary};
pub use trace::{TraceAction, TraceEvent, TraceLog};
pub use tunable::{TunableSpec, Unit};
