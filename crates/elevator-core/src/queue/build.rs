//! Building the queue for a device: the one place where a scheduler's name,
//! tunables given as text and a device's limits become a [`Queue`]. The
//! simulator's engine, the real-time engine (and so the NBD server) all
//! build their queues here, so a queue is the same whichever runs it.

use thiserror::Error;

use super::{Queue, QueueConfig};
use crate::error::{ConfigError, TunableError};
use crate::limits::Limits;
use crate::sched::{AnyScheduler, Plugins};

/// A queue that cannot be built.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BuildError {
    /// The scheduler is unknown, or the configuration does not hold.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A tunable given by name was refused.
    #[error("{name}={value}: {error}")]
    Tunable {
        /// Its name.
        name: String,
        /// Its value as given.
        value: String,
        /// Why it was refused.
        error: TunableError,
    },
}

/// What a device tells the queue about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceShape {
    /// Its limits.
    pub limits: Limits,
    /// Requests it takes at once.
    pub queue_depth: u32,
    /// Whether it has moving parts (schedulers that idle care).
    pub rotational: bool,
}

impl Queue<AnyScheduler> {
    /// The queue for a device of `shape` under the scheduler named
    /// `scheduler`, with `tunables` set in order, by name, from text.
    /// `nr_requests` starts by Linux's rule for a queue with a scheduler
    /// (twice the device's depth, 4 to 256).
    pub fn for_device(
        shape: DeviceShape,
        scheduler: &str,
        tunables: &[(String, String)],
    ) -> Result<Queue<AnyScheduler>, BuildError> {
        Self::for_device_in(shape, scheduler, &Plugins::default(), tunables)
    }

    /// [`Queue::for_device`], where `scheduler` may also name one of
    /// `plugins` (see [`AnyScheduler::by_name_in`]).
    pub fn for_device_in(
        shape: DeviceShape,
        scheduler: &str,
        plugins: &Plugins,
        tunables: &[(String, String)],
    ) -> Result<Queue<AnyScheduler>, BuildError> {
        let mut config = QueueConfig::for_depth(shape.limits, shape.queue_depth);
        config.rotational = shape.rotational;
        let sched = AnyScheduler::by_name_in(scheduler, plugins).map_err(ConfigError::from)?;
        let mut queue = Queue::new(config, sched)?;
        for (name, value) in tunables {
            queue
                .set_str(name, value)
                .map_err(|error| BuildError::Tunable {
                    name: name.clone(),
                    value: value.clone(),
                    error,
                })?;
        }
        Ok(queue)
    }
}
