//! The recording's service times: how long its device took to serve each
//! request (btt's D2C, issue to completion, paired by the [`Analyzer`]),
//! kept so that a simulated device can serve a replay as the recording's
//! device did. Owns [`ServiceTimes`] (the table and the model, read-only
//! once built), its builder and [`recorded_service_times`], the pass over
//! a trace that fills it for the device a replay will choose.
//!
//! - **The table**: each completed request of the device, by (operation,
//!   first sector, sectors), with its D2C; requests of the same key keep
//!   their completion order, so a device hands them out in turn
//!   ([`ServiceTimes::group`], [`ServiceTimes::times`]). An entry costs 4
//!   bytes and a key 16, so the table is smaller than the trace's own text
//!   (two lines of 80 bytes or more per request), and at most
//!   [`MAX_REQUESTS`] requests are kept: past that, completions only feed
//!   the model.
//! - **The model**, for requests the recording never issued: per operation
//!   and size class (powers of two of sectors), a uniform sample of at most
//!   [`SAMPLE_SIZE`] D2C times of that class (reservoir sampling, with a
//!   fixed seed: the same trace gives the same sample), from which a device
//!   draws with its own seeded generator ([`ServiceTimes::modelled`]).
//! - **The concurrency**: the most requests the device had issued and not
//!   completed at once ([`ServiceTimes::max_in_flight`]).
//!
//! Flushes are one key (operation flush, sector 0, no sectors): a replayed
//! flush takes what the recording's flushes took, in their order.

use elevator_core::rng::Rng;
use elevator_core::{Nanos, Op, TraceAction};

use crate::analyze::Analyzer;
use crate::error::TraceError;
use crate::fast_hash::IntMap;
use crate::record::{DevT, Item};
use crate::replay::{Events, Planner};

/// At most this many requests are kept in the table (16 M: about 330 MB
/// at the worst, one key per request; a trace that long is 5 GB of text).
pub const MAX_REQUESTS: usize = 1 << 24;

/// D2C times kept per operation and size class for the model.
pub const SAMPLE_SIZE: usize = 1024;

/// At most this many devices of a trace are followed while the device to
/// replay is not yet chosen; the others' completions are passed over.
pub const MAX_DEVICES: usize = 64;

/// Size classes: no sectors, then one per power of two of sectors.
const CLASSES: usize = 34;

/// The seed of the reservoir sampling (any fixed value: the sample must be
/// the same for the same trace).
const SAMPLE_SEED: u64 = 0x5e41_71ce;

/// The size class of a request of `sectors` sectors.
#[inline]
fn class(sectors: u32) -> usize {
    if sectors == 0 {
        0
    } else {
        1 + (31 - sectors.leading_zeros()) as usize
    }
}

/// A table key: the first sector, and the sectors with the operation in
/// the low 3 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    sector: u64,
    len_op: u64,
}

impl Key {
    #[inline]
    fn new(op: Op, sector: u64, sectors: u32) -> Key {
        Key {
            sector,
            len_op: (u64::from(sectors) << 3) | op as u64,
        }
    }
}

/// A D2C in nanoseconds, as kept (at most `u32::MAX`, 4.3 s).
#[inline]
fn kept(ns: Nanos) -> u32 {
    u32::try_from(ns).unwrap_or(u32::MAX)
}

/// The recording's service times of one device (see the module's doc).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ServiceTimes {
    /// The keys, sorted, each with the index of its first time.
    keys: Vec<(Key, u32)>,
    /// D2C times in ns, key after key, each key's in completion order.
    times: Vec<u32>,
    /// The model's samples, by operation (as [`Op::ALL`]) then class.
    model: Vec<Vec<u32>>,
    max_in_flight: u32,
    completed: u64,
}

impl std::fmt::Debug for ServiceTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceTimes")
            .field("requests", &self.times.len())
            .field("keys", &self.keys.len())
            .field("completed", &self.completed)
            .field("max_in_flight", &self.max_in_flight)
            .finish_non_exhaustive()
    }
}

impl ServiceTimes {
    /// Requests in the table.
    pub fn requests(&self) -> usize {
        self.times.len()
    }

    /// Distinct (operation, sector, sectors) keys in the table.
    pub fn keys(&self) -> usize {
        self.keys.len()
    }

    /// Requests of the device whose completion was paired with their issue
    /// (those kept and those past [`MAX_REQUESTS`]).
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// Whether there is nothing to serve from (no completion was paired).
    pub fn is_empty(&self) -> bool {
        self.completed == 0
    }

    /// The most requests the device had in flight at once (at least 1).
    pub fn max_in_flight(&self) -> u32 {
        self.max_in_flight.max(1)
    }

    /// The key of a request (`op`, first `sector`, `sectors`): its index,
    /// if the recording completed such a request.
    pub fn group(&self, op: Op, sector: u64, sectors: u32) -> Option<usize> {
        let key = Key::new(op, sector, sectors);
        self.keys.binary_search_by(|(k, _)| k.cmp(&key)).ok()
    }

    /// The D2C times (ns) of key `group`, in the recording's order.
    pub fn times(&self, group: usize) -> &[u32] {
        let start = self.keys.get(group).map_or(0, |k| k.1 as usize);
        let end = self
            .keys
            .get(group + 1)
            .map_or(self.times.len(), |k| k.1 as usize);
        self.times.get(start..end).unwrap_or_default()
    }

    /// A D2C (ns) for a request of `op` and `sectors` that the table does
    /// not hold, drawn with `rng` from the sample of its operation and size
    /// class, else of the nearest class of that operation holding one,
    /// else of any operation's nearest (0 with no sample at all).
    pub fn modelled(&self, op: Op, sectors: u32, rng: &mut Rng) -> Nanos {
        let c = class(sectors);
        let ops = std::iter::once(op as usize).chain(0..Op::ALL.len());
        for o in ops {
            for d in 0..CLASSES {
                for cl in [c.checked_sub(d), c.checked_add(d)].into_iter().flatten() {
                    if let Some(s) = self.model.get(o * CLASSES + cl)
                        && !s.is_empty()
                    {
                        return Nanos::from(s[rng.below(s.len() as u64) as usize]);
                    }
                }
            }
        }
        0
    }
}

/// Fills a [`ServiceTimes`] from paired issues and completions.
#[derive(Clone, Debug)]
pub struct ServiceTimesBuilder {
    /// (key, D2C), in completion order.
    samples: Vec<(Key, u32)>,
    model: Vec<Vec<u32>>,
    seen: Vec<u64>,
    rng: Rng,
    in_flight: u32,
    max_in_flight: u32,
    completed: u64,
}

impl Default for ServiceTimesBuilder {
    fn default() -> ServiceTimesBuilder {
        ServiceTimesBuilder::new()
    }
}

impl ServiceTimesBuilder {
    /// Nothing taken yet.
    pub fn new() -> ServiceTimesBuilder {
        ServiceTimesBuilder {
            samples: Vec::new(),
            model: vec![Vec::new(); Op::ALL.len() * CLASSES],
            seen: vec![0; Op::ALL.len() * CLASSES],
            rng: Rng::new(SAMPLE_SEED),
            in_flight: 0,
            max_in_flight: 0,
            completed: 0,
        }
    }

    /// A request was issued.
    #[inline]
    pub fn issued(&mut self) {
        self.in_flight = self.in_flight.saturating_add(1);
        self.max_in_flight = self.max_in_flight.max(self.in_flight);
    }

    /// A request issued earlier went back to the queue (it will be issued
    /// again).
    #[inline]
    pub fn requeued(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// A request issued earlier (`op`, first `sector`, `sectors`)
    /// completed `d2c` ns after its issue.
    pub fn completed(&mut self, op: Op, sector: u64, sectors: u32, d2c: Nanos) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.completed += 1;
        let d2c = kept(d2c);
        if self.samples.len() < MAX_REQUESTS {
            self.samples.push((Key::new(op, sector, sectors), d2c));
        }
        let i = op as usize * CLASSES + class(sectors);
        let (Some(sample), Some(seen)) = (self.model.get_mut(i), self.seen.get_mut(i)) else {
            return;
        };
        *seen += 1;
        if sample.len() < SAMPLE_SIZE {
            sample.push(d2c);
        } else {
            let j = self.rng.below(*seen) as usize;
            if let Some(slot) = sample.get_mut(j) {
                *slot = d2c;
            }
        }
    }

    /// The table and model.
    pub fn finish(mut self) -> ServiceTimes {
        // Stable: a key's times stay in completion order.
        self.samples.sort_by_key(|s| s.0);
        let mut keys: Vec<(Key, u32)> = Vec::new();
        let mut times = Vec::with_capacity(self.samples.len());
        for (i, (k, t)) in self.samples.into_iter().enumerate() {
            if keys.last().is_none_or(|l| l.0 != k) {
                keys.push((k, i as u32));
            }
            times.push(t);
        }
        ServiceTimes {
            keys,
            times,
            model: self.model,
            max_in_flight: self.max_in_flight,
            completed: self.completed,
        }
    }
}

/// The recording's service times of the device a replay of `items` (of
/// `events`, device `dev` or the one the planner chooses) runs: the items
/// go through a [`Planner`] (which chooses the device as the replay's
/// will), and each device's issues and completions through an
/// [`Analyzer`] that pairs them (the first [`MAX_DEVICES`] devices seen,
/// or only `dev`). `None` when no device was chosen.
pub fn recorded_service_times<I>(
    items: I,
    events: Events,
    dev: Option<DevT>,
) -> Result<Option<(DevT, ServiceTimes)>, TraceError>
where
    I: Iterator<Item = Result<Item, TraceError>>,
{
    let mut analyzers: IntMap<DevT, Analyzer> = IntMap::default();
    let chosen = {
        let tap = Paired {
            items,
            dev,
            analyzers: &mut analyzers,
        };
        let mut plan = Planner::new(tap, events, dev);
        for step in plan.by_ref() {
            step?;
        }
        plan.device()
    };
    Ok(chosen.map(|d| {
        let times = analyzers
            .remove(&d)
            .and_then(|mut a| a.take_service_times())
            .unwrap_or_default();
        (d, times)
    }))
}

/// Passes items on to the planner, and each device's issues, completions
/// and requeues to its analyzer.
struct Paired<'a, I> {
    items: I,
    dev: Option<DevT>,
    analyzers: &'a mut IntMap<DevT, Analyzer>,
}

impl<I: Iterator<Item = Result<Item, TraceError>>> Iterator for Paired<'_, I> {
    type Item = Result<Item, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.items.next();
        if let Some(Ok(Item::Record(r))) = &item
            && matches!(
                r.event.action,
                TraceAction::Issue | TraceAction::Complete | TraceAction::Requeue
            )
            && self.dev.is_none_or(|d| d == r.dev)
            && (self.analyzers.len() < MAX_DEVICES || self.analyzers.contains_key(&r.dev))
        {
            self.analyzers
                .entry(r.dev)
                .or_insert_with(Analyzer::with_service_times)
                .record(r);
        }
        item
    }
}

#[cfg(test)]
mod tests;
