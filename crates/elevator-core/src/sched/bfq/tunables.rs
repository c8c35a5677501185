//! BFQ's tunables as data: each one's name, Linux default, range, unit and
//! description, and how it is read and set. The listing, the defaults a new
//! scheduler starts with, and get/set all come from [`TABLE`]; the header of
//! `mod.rs` says what each tunable does.

use super::Bfq;
use crate::tunable::{Tunable, TunableSpec, Unit, specs, tunable};

/// BFQ's tunables, declared once: listing, defaults, get and set come from
/// here. Times are kept in nanoseconds.
pub(super) const TABLE: [Tunable<Bfq>; 9] = [
    Tunable::new(
        TunableSpec::new(
            "low_latency",
            1,
            0,
            1,
            Unit::Bool,
            "raise the weight of interactive and soft real-time queues",
        ),
        |b| u64::from(b.low_latency),
        |b, v| b.set_low_latency(v != 0),
    ),
    tunable!(ms, "slice_idle", 8, 0, 60_000, Unit::Millis,
        "how long to wait for the next request of the queue in service", b => b.slice_idle),
    tunable!(ms, "timeout_sync", 125, 1, 60_000, Unit::Millis,
        "longest service slot of a queue", b => b.timeout_sync),
    tunable!(value, "max_budget", 0, 0, 1 << 31, Unit::Sectors,
        "largest budget of a queue; 0 = peak rate × timeout_sync", b => b.user_max_budget),
    tunable!(ms, "fifo_expire_sync", 125, 0, 3_600_000, Unit::Millis,
        "deadline of a sync request", b => b.fifo_expire[1]),
    tunable!(ms, "fifo_expire_async", 250, 0, 3_600_000, Unit::Millis,
        "deadline of an async request", b => b.fifo_expire[0]),
    tunable!(value, "back_seek_max", 16384, 0, u32::MAX as u64, Unit::KiB,
        "farthest backward seek preferred to a forward one", b => b.back_seek_max),
    tunable!(value, "back_seek_penalty", 2, 1, 1_000_000, Unit::Count,
        "cost of a backward seek relative to a forward one", b => b.back_seek_penalty),
    tunable!(flag, "strict_guarantees", 0, 0, 1, Unit::Bool,
        "always idle for sync queues and keep one request in the device", b => b.strict_guarantees),
];

/// BFQ's tunables, with Linux defaults.
pub const TUNABLES: [TunableSpec; 9] = specs(&TABLE);
