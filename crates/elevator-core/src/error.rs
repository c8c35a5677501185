//! The core's error types. Every refusal says what was wrong and with which value.

use crate::bio::{Op, Sector};
use thiserror::Error;

/// A bio the queue cannot accept as given.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BioError {
    /// A data, discard or write-zeroes bio with no bytes.
    #[error("{op} bio at sector {sector} has zero length")]
    ZeroLength {
        /// Operation.
        op: Op,
        /// Start sector.
        sector: Sector,
    },
    /// The start is not on a logical block boundary.
    #[error(
        "{op} bio at sector {sector} is misaligned: the start must be a multiple of the \
         {logical_block_size}-byte logical block ({} sectors)",
        logical_block_size / 512
    )]
    MisalignedSector {
        /// Operation.
        op: Op,
        /// Start sector.
        sector: Sector,
        /// The queue's logical block size in bytes.
        logical_block_size: u32,
    },
    /// The length is not a whole number of logical blocks.
    #[error(
        "{op} bio of {len} bytes is misaligned: the length must be a multiple of the \
         {logical_block_size}-byte logical block"
    )]
    MisalignedLength {
        /// Operation.
        op: Op,
        /// Length in bytes.
        len: u32,
        /// The queue's logical block size in bytes.
        logical_block_size: u32,
    },
    /// The bio ends past the last sector of the device.
    #[error(
        "{op} bio at sector {sector} of {len} bytes runs past the end of the device \
         ({capacity} sectors)"
    )]
    BeyondEnd {
        /// Operation.
        op: Op,
        /// Start sector.
        sector: Sector,
        /// Length in bytes.
        len: u32,
        /// Device size in sectors.
        capacity: Sector,
    },
    /// A flush carries no data.
    #[error("flush bio must have zero length, got {len} bytes")]
    FlushWithData {
        /// Length in bytes.
        len: u32,
    },
    /// The bio splits into more requests (or bio entries) than the queue can
    /// ever hold at once: it can never be taken. Submit it in smaller parts.
    #[error(
        "{op} bio of {len} bytes splits into {pieces} requests of at most {max_piece} bytes, \
         more than the queue can ever hold ({limit}); submit it in smaller parts"
    )]
    TooLarge {
        /// Operation.
        op: Op,
        /// Length in bytes.
        len: u32,
        /// Requests it would need.
        pieces: u32,
        /// The largest piece the limits allow.
        max_piece: u32,
        /// Which limit: e.g. "nr_requests=64".
        limit: String,
    },
    /// An I/O priority level outside 0..=7.
    #[error("I/O priority level {level} is out of range 0..=7")]
    PrioLevel {
        /// The level given.
        level: u8,
    },
}

/// Why [`crate::Queue::submit`] refused a bio. The bio was not taken: nothing
/// of it is queued and it will not complete.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SubmitError {
    /// The bio itself is bad.
    #[error(transparent)]
    Bio(#[from] BioError),
    /// Every request tag is in use. Complete (or dispatch and complete)
    /// requests, then submit again.
    #[error(
        "no free request tag: the bio needs {needed}, {free} of nr_requests={nr_requests} \
         are free; complete requests and resubmit"
    )]
    NoTag {
        /// Tags the bio needs (one per piece after splitting).
        needed: u32,
        /// Tags free now.
        free: u32,
        /// The tag pool's size.
        nr_requests: u32,
    },
    /// The queue holds as many bios as it may (`max_bios`). Complete requests,
    /// then submit again.
    #[error(
        "bio table full: the bio needs {needed} entries, {free} of max_bios={max_bios} are \
         free; complete requests and resubmit"
    )]
    NoBioSlot {
        /// Entries the bio needs (its pieces, plus one to track a split).
        needed: u32,
        /// Entries free now.
        free: u32,
        /// The table's size.
        max_bios: u32,
    },
}

/// A request handle that cannot be completed or requeued.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// No request has this tag.
    #[error("request {tag} does not exist (the tag pool has {nr_requests})")]
    Unknown {
        /// The tag given.
        tag: u32,
        /// The pool's size.
        nr_requests: u32,
    },
    /// The request is not at the device: it cannot complete or be requeued.
    #[error(
        "request {tag} is not in flight (it is {state}); only a dispatched request can complete or be requeued"
    )]
    NotInFlight {
        /// The tag given.
        tag: u32,
        /// Where it is instead.
        state: &'static str,
    },
}

/// A tunable that could not be read or set.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TunableError {
    /// No tunable of that name.
    #[error("unknown tunable '{name}' for {owner}; known: {known}")]
    Unknown {
        /// The name given.
        name: String,
        /// Who was asked (the queue or a scheduler's name), then the
        /// nearest known name's `" (did you mean NAME?)"` when one is near
        /// ([`crate::spelling::did_you_mean`]; one field rather than two
        /// keeps the error small).
        owner: String,
        /// The names that exist, comma-separated.
        known: String,
    },
    /// The value is outside the tunable's range.
    #[error(
        "{name}={value} is out of range: {name} takes {min}..={max}{}",
        if unit.is_empty() { String::new() } else { format!(" {unit}") }
    )]
    OutOfRange {
        /// Tunable name.
        name: &'static str,
        /// The value given.
        value: u64,
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
        /// Unit of the value.
        unit: &'static str,
    },
    /// The value is not a number the tunable can take.
    #[error("{name}: '{value}' is not a valid value ({why})")]
    BadValue {
        /// Tunable name.
        name: String,
        /// The text given.
        value: String,
        /// What was expected.
        why: &'static str,
    },
    /// The tunable can be read but not set.
    #[error("{name} is read-only")]
    ReadOnly {
        /// Tunable name.
        name: &'static str,
    },
    /// The tunable cannot change in the queue's present state.
    #[error("{name} cannot be changed now: {why}")]
    Busy {
        /// Tunable name.
        name: &'static str,
        /// Why not.
        why: &'static str,
    },
}

/// An unknown scheduler name.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("unknown scheduler '{name}'{hint}; known: {known}")]
pub struct UnknownScheduler {
    /// The name given.
    pub name: String,
    /// `" (did you mean NAME?)"` when a known name is near, or empty.
    pub hint: String,
    /// The names that exist, comma-separated, with their aliases.
    pub known: String,
}

/// A queue configuration that cannot work.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A limit with an impossible value.
    #[error("limit {name}={value} is invalid: {why}")]
    Limit {
        /// Limit name.
        name: &'static str,
        /// The value given.
        value: u64,
        /// The rule it breaks.
        why: &'static str,
    },
    /// A queue setting with an impossible value.
    #[error(transparent)]
    Tunable(#[from] TunableError),
    /// No scheduler of that name.
    #[error(transparent)]
    UnknownScheduler(#[from] UnknownScheduler),
    /// A queue size that cannot work.
    #[error("{name}={value} is invalid: {why}")]
    Size {
        /// Setting name.
        name: &'static str,
        /// The value given.
        value: u64,
        /// The rule it breaks.
        why: &'static str,
    },
}
