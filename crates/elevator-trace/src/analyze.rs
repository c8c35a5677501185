//! A btt-style analysis of any stream of [`Record`]s: a recorded trace, or
//! the events elevator's own queue emits during a replay.
//!
//! It counts events by action (with flush requests apart), bytes by
//! operation, issued request sizes and unplug depths, and measures the
//! intervals btt reports, by btt's definitions (`man btt`):
//!
//! - Q2G: a bio queued to its request allocated; G2I: allocated to inserted;
//!   I2D: inserted to issued; D2C: issued to completed (per request).
//! - Q2M: a bio queued to merged into an existing request.
//! - Q2D: a bio queued to the issue of the request holding it; Q2C: to that
//!   request's completion (per bio: a merged bio counts too), also kept per
//!   operation for percentiles.
//!
//! Bios and requests in flight are tracked by (device, first sector) in
//! ordered maps that shrink as they complete: memory follows what is in
//! flight, not the trace's length, and at most [`MAX_TRACKED`] are
//! followed; at most [`MAX_DISTINCT`] issued sizes and unplug depths are
//! tallied. Split pieces are followed from the
//! split's sector; merged bios join their request's sector range; a request
//! merged into another hands over its range. Empty flushes (no sector) are
//! matched first in, first out.
//!
//! Asked for ([`Analyzer::with_service_times`]), it also keeps each
//! request's D2C by request, for a device that serves a replay as the
//! recording's did ([`service_times`]).

use std::collections::{BTreeMap, VecDeque};

use elevator_core::{Histogram, Nanos, Op, Summary, TraceAction};

use crate::fast_hash::IntMap;
use crate::record::{DevT, Record};

pub mod service_times;

use service_times::{ServiceTimes, ServiceTimesBuilder};

/// At most this many empty flushes are waited for at once; older ones are
/// forgotten (their completions were not in the trace).
const MAX_PENDING_FLUSHES: usize = 1 << 16;

/// At most this many bios (and as many requests) are followed at once: past
/// it, the older half is forgotten (a trace without completions, or one
/// cut short, must not hold the whole trace in memory).
pub const MAX_TRACKED: usize = 1 << 17;

/// At most this many different issued sizes (and as many unplug depths)
/// are tallied; events of others are counted in
/// [`Analysis::untallied`].
pub const MAX_DISTINCT: usize = 4096;

/// A bio or request in flight: (device, first sector, arrival order)
/// packed into one integer that orders as the triple does (the device in
/// the top 32 bits, the sector in the next 64, the arrival order in the
/// low 32), so that the maps compare keys in one step.
type Key = u128;

/// The key of (dev, sector, seq).
#[inline]
fn key(dev: DevT, sector: u64, seq: u32) -> Key {
    (u128::from(dev) << 96) | (u128::from(sector) << 32) | u128::from(seq)
}

/// The arrival order in `k`.
#[inline]
fn seq_of(k: Key) -> u32 {
    k as u32
}

#[derive(Clone, Copy, Debug)]
struct BioState {
    queued: Nanos,
    end: u64,
    op: Op,
    got_request: bool,
    issued: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct RqState {
    end: u64,
    allocated: Option<Nanos>,
    inserted: Option<Nanos>,
    issued: Option<Nanos>,
}

/// Count and bytes of one operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCount {
    /// Events.
    pub count: u64,
    /// Bytes they moved.
    pub bytes: u64,
}

/// What the analysis found (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    /// Events by action, indexed as [`TraceAction::ALL`].
    pub counts: [u64; 12],
    /// Issued requests that were flushes.
    pub flush_issues: u64,
    /// Queued bios by operation, indexed as [`Op::ALL`].
    pub queued: [OpCount; 5],
    /// Issued requests by operation.
    pub issued: [OpCount; 5],
    /// Completed requests by operation.
    pub completed: [OpCount; 5],
    /// Completions with an error.
    pub errors: u64,
    /// Issued data request sizes: (operation, bytes) → count, most common
    /// first.
    pub issue_sizes: Vec<((Op, u32), u64)>,
    /// Unplug depth → count, shallowest first.
    pub unplug_depths: Vec<(u64, u64)>,
    /// btt's Q2G.
    pub q2g: Summary,
    /// btt's G2I.
    pub g2i: Summary,
    /// btt's I2D.
    pub i2d: Summary,
    /// btt's Q2M.
    pub q2m: Summary,
    /// btt's Q2D.
    pub q2d: Summary,
    /// btt's D2C.
    pub d2c: Summary,
    /// btt's Q2C.
    pub q2c: Summary,
    /// Q2C per operation (percentiles), indexed as [`Op::ALL`].
    pub q2c_by_op: Vec<Histogram>,
    /// Bios and requests forgotten unfinished (more than [`MAX_TRACKED`]
    /// in flight).
    pub forgotten: u64,
    /// Issued requests and unplugs not tallied in [`Analysis::issue_sizes`]
    /// or [`Analysis::unplug_depths`]: their size or depth was a new one
    /// past [`MAX_DISTINCT`] different ones.
    pub untallied: u64,
    /// First and last event time.
    pub span: Option<(Nanos, Nanos)>,
}

impl Analysis {
    /// Events of `action`.
    pub fn count(&self, action: TraceAction) -> u64 {
        self.counts[action as usize]
    }
}

/// Count one `$key` in `$map` (counts by key), or in `$untallied` when it
/// would be a new key past [`MAX_DISTINCT`].
macro_rules! tally {
    ($map:expr, $key:expr, $untallied:expr) => {{
        let key = $key;
        if let Some(n) = $map.get_mut(&key) {
            *n += 1;
        } else if $map.len() < MAX_DISTINCT {
            $map.insert(key, 1);
        } else {
            $untallied += 1;
        }
    }};
}

/// The analyzer: feed it records in time order with [`Analyzer::record`].
#[derive(Debug)]
pub struct Analyzer {
    out: Analysis,
    sizes: IntMap<(Op, u32), u64>,
    depths: BTreeMap<u64, u64>,
    bios: BTreeMap<Key, BioState>,
    rqs: BTreeMap<Key, RqState>,
    flush_bios: VecDeque<Nanos>,
    flush_rqs: VecDeque<Nanos>,
    /// The last arrival order handed out (renumbered before it would
    /// pass `u32::MAX`).
    seq: u32,
    scratch: Vec<Key>,
    /// Each request's D2C, when asked for.
    service: Option<Box<ServiceTimesBuilder>>,
}

impl Default for Analyzer {
    fn default() -> Analyzer {
        Analyzer::new()
    }
}

/// The index of `op` in [`Op::ALL`] (declaration order).
#[inline]
fn op_index(op: Op) -> usize {
    op as usize
}

/// The first bio or request at (dev, sector) that `pred` accepts: one
/// descent of the map, the entry given to change in place.
#[inline]
fn first_at<V>(
    map: &mut BTreeMap<Key, V>,
    dev: DevT,
    sector: u64,
    pred: impl Fn(&V) -> bool,
) -> Option<&mut V> {
    map.range_mut(key(dev, sector, 0)..=key(dev, sector, u32::MAX))
        .map(|(_, v)| v)
        .find(|v| pred(v))
}

/// [`first_at`], taken out of the map.
#[inline]
fn take_first_at<V>(
    map: &mut BTreeMap<Key, V>,
    dev: DevT,
    sector: u64,
    pred: impl Fn(&V) -> bool,
) -> Option<V> {
    let key = map
        .range(key(dev, sector, 0)..=key(dev, sector, u32::MAX))
        .find(|(_, v)| pred(v))
        .map(|(k, _)| *k)?;
    map.remove(&key)
}

/// A queued (not issued) request ending at `end`, looking back a few.
#[inline]
fn rq_ending_at(rqs: &mut BTreeMap<Key, RqState>, dev: DevT, end: u64) -> Option<&mut RqState> {
    rqs.range_mut(key(dev, 0, 0)..key(dev, end, 0))
        .rev()
        .take(16)
        .map(|(_, r)| r)
        .find(|r| r.end == end && r.issued.is_none())
}

impl Analyzer {
    /// An empty analyzer.
    pub fn new() -> Analyzer {
        Analyzer {
            out: Analysis {
                q2c_by_op: (0..5).map(|_| Histogram::new()).collect(),
                ..Analysis::default()
            },
            sizes: IntMap::default(),
            depths: BTreeMap::new(),
            bios: BTreeMap::new(),
            rqs: BTreeMap::new(),
            flush_bios: VecDeque::new(),
            flush_rqs: VecDeque::new(),
            seq: 0,
            scratch: Vec::new(),
            service: None,
        }
    }

    /// An empty analyzer that also keeps each request's D2C by request
    /// ([`Analyzer::take_service_times`]).
    pub fn with_service_times() -> Analyzer {
        Analyzer {
            service: Some(Box::default()),
            ..Analyzer::new()
        }
    }

    /// The service times kept so far (`None` unless asked for with
    /// [`Analyzer::with_service_times`]); the analyzer keeps no more.
    pub fn take_service_times(&mut self) -> Option<ServiceTimes> {
        self.service.take().map(|b| b.finish())
    }

    /// Records taken.
    pub fn records(&self) -> u64 {
        self.out.counts.iter().sum()
    }

    /// Bios and requests held in flight (for memory checks).
    pub fn in_flight(&self) -> usize {
        self.bios.len() + self.rqs.len() + self.flush_bios.len() + self.flush_rqs.len()
    }

    fn next_key(&mut self, dev: DevT, sector: u64) -> Key {
        if self.seq == u32::MAX {
            self.renumber();
        }
        self.seq += 1;
        if self.bios.len() >= MAX_TRACKED {
            self.out.forgotten += forget_older_half(&mut self.bios);
        }
        if self.rqs.len() >= MAX_TRACKED {
            self.out.forgotten += forget_older_half(&mut self.rqs);
        }
        key(dev, sector, self.seq)
    }

    /// Number the bios and requests held 1, 2, ... in their arrival order
    /// (after 2^32 arrivals: those held are far fewer), so that arrival
    /// orders fit their 32 bits and keep their order.
    fn renumber(&mut self) {
        let mut seqs: Vec<u32> = self
            .bios
            .keys()
            .chain(self.rqs.keys())
            .map(|&k| seq_of(k))
            .collect();
        seqs.sort_unstable();
        // Each arrival order is handed out once: its rank is its new one.
        let renumbered = |k: Key| {
            let rank = seqs.binary_search(&seq_of(k)).unwrap_or(0) as u32 + 1;
            (k & !u128::from(u32::MAX)) | u128::from(rank)
        };
        self.bios = std::mem::take(&mut self.bios)
            .into_iter()
            .map(|(k, v)| (renumbered(k), v))
            .collect();
        self.rqs = std::mem::take(&mut self.rqs)
            .into_iter()
            .map(|(k, v)| (renumbered(k), v))
            .collect();
        self.seq = seqs.len() as u32;
    }

    /// Hand out arrival orders from just below `u32::MAX` (for the test of
    /// [`Analyzer::renumber`]).
    #[cfg(test)]
    fn near_the_last_arrival_order(&mut self) {
        self.seq = u32::MAX - 3;
    }

    /// Start tracking a request first seen at (dev, sector) in `state`.
    fn track_rq(&mut self, dev: DevT, sector: u64, state: RqState) {
        let key = self.next_key(dev, sector);
        self.rqs.insert(key, state);
    }

    /// Stamp the request at (dev, sector) that `pred` accepts with `stamp`
    /// and record `time` less its earlier step `since` in the histogram that
    /// `hist` picks; with no such request, track a new one ending at `end`,
    /// so stamped.
    #[inline]
    fn stamp_rq(
        &mut self,
        (dev, sector, end, time): (DevT, u64, u64, Nanos),
        pred: impl Fn(&RqState) -> bool,
        stamp: impl Fn(&mut RqState),
        since: impl Fn(&RqState) -> Option<Nanos>,
        hist: impl Fn(&mut Analysis) -> &mut Summary,
    ) {
        match first_at(&mut self.rqs, dev, sector, pred) {
            Some(rq) => {
                stamp(rq);
                if let Some(t) = since(rq) {
                    hist(&mut self.out).record(time.saturating_sub(t));
                }
            }
            None => {
                let mut state = RqState {
                    end,
                    ..RqState::default()
                };
                stamp(&mut state);
                self.track_rq(dev, sector, state);
            }
        }
    }

    /// Take one record.
    pub fn record(&mut self, r: &Record) {
        let e = &r.event;
        let out = &mut self.out;
        out.counts[e.action as usize] += 1;
        out.span = Some(match out.span {
            None => (e.time, e.time),
            Some((a, b)) => (a.min(e.time), b.max(e.time)),
        });
        let dev = r.dev;
        let sectors = u64::from(e.bytes >> 9);
        let end = e.sector.saturating_add(sectors);
        let empty = e.op == Op::Flush || e.bytes == 0;
        let oi = op_index(e.op);
        match e.action {
            TraceAction::Queue => {
                out.queued[oi].count += 1;
                out.queued[oi].bytes += u64::from(e.bytes);
                if empty {
                    if self.flush_bios.len() >= MAX_PENDING_FLUSHES {
                        self.flush_bios.pop_front();
                    }
                    self.flush_bios.push_back(e.time);
                } else {
                    let key = self.next_key(dev, e.sector);
                    self.bios.insert(
                        key,
                        BioState {
                            queued: e.time,
                            end,
                            op: e.op,
                            got_request: false,
                            issued: false,
                        },
                    );
                }
            }
            TraceAction::Split => {
                let cut = e.extra;
                if let Some(b) =
                    first_at(&mut self.bios, dev, e.sector, |b| b.end > cut && !b.issued)
                {
                    let rest = BioState { end: b.end, ..*b };
                    b.end = cut;
                    let key = self.next_key(dev, cut);
                    self.bios.insert(key, rest);
                }
            }
            TraceAction::BackMerge | TraceAction::FrontMerge => {
                if let Some(b) = first_at(&mut self.bios, dev, e.sector, |b| !b.got_request) {
                    b.got_request = true;
                    self.out.q2m.record(e.time.saturating_sub(b.queued));
                }
                if e.action == TraceAction::BackMerge {
                    if let Some(rq) = rq_ending_at(&mut self.rqs, dev, e.sector) {
                        rq.end = end;
                    }
                } else if let Some(rq) =
                    take_first_at(&mut self.rqs, dev, end, |r| r.issued.is_none())
                {
                    let key = self.next_key(dev, e.sector);
                    self.rqs.insert(key, rq);
                }
            }
            TraceAction::RqMerge => {
                take_first_at(&mut self.rqs, dev, e.sector, |r| r.issued.is_none());
                if let Some(rq) = rq_ending_at(&mut self.rqs, dev, e.sector) {
                    rq.end = rq.end.max(end);
                }
            }
            TraceAction::GetRq => {
                if empty {
                    return;
                }
                if let Some(b) = first_at(&mut self.bios, dev, e.sector, |b| !b.got_request) {
                    b.got_request = true;
                    self.out.q2g.record(e.time.saturating_sub(b.queued));
                }
                self.track_rq(
                    dev,
                    e.sector,
                    RqState {
                        end,
                        allocated: Some(e.time),
                        ..RqState::default()
                    },
                );
            }
            TraceAction::Insert => self.stamp_rq(
                (dev, e.sector, end, e.time),
                |r| r.inserted.is_none() && r.issued.is_none(),
                |rq| rq.inserted = Some(e.time),
                |rq| rq.allocated,
                |out| &mut out.g2i,
            ),
            TraceAction::Issue => self.issue(r, end, empty),
            TraceAction::Complete => self.complete(r, end, empty),
            TraceAction::Requeue => {
                if let Some(rq) = first_at(&mut self.rqs, dev, e.sector, |r| r.issued.is_some()) {
                    rq.issued = None;
                    if let Some(s) = &mut self.service {
                        s.requeued();
                    }
                }
            }
            TraceAction::Plug => {}
            TraceAction::Unplug => tally!(self.depths, e.extra, self.out.untallied),
        }
    }

    fn issue(&mut self, r: &Record, end: u64, empty: bool) {
        let e = &r.event;
        let dev = r.dev;
        let oi = op_index(e.op);
        self.out.issued[oi].count += 1;
        self.out.issued[oi].bytes += u64::from(e.bytes);
        if let Some(s) = &mut self.service {
            s.issued();
        }
        if empty {
            if e.op == Op::Flush {
                self.out.flush_issues += 1;
            }
            if self.flush_rqs.len() >= MAX_PENDING_FLUSHES {
                self.flush_rqs.pop_front();
            }
            self.flush_rqs.push_back(e.time);
            return;
        }
        tally!(self.sizes, (e.op, e.bytes), self.out.untallied);
        self.stamp_rq(
            (dev, e.sector, end, e.time),
            |r| r.issued.is_none(),
            |rq| {
                rq.issued = Some(e.time);
                rq.end = end;
            },
            |rq| rq.inserted,
            |out| &mut out.i2d,
        );
        for (_, b) in self.bios.range_mut(key(dev, e.sector, 0)..key(dev, end, 0)) {
            if !b.issued {
                b.issued = true;
                self.out.q2d.record(e.time.saturating_sub(b.queued));
            }
        }
    }

    fn complete(&mut self, r: &Record, end: u64, empty: bool) {
        let e = &r.event;
        let dev = r.dev;
        let oi = op_index(e.op);
        self.out.completed[oi].count += 1;
        self.out.completed[oi].bytes += u64::from(e.bytes);
        if e.error != 0 {
            self.out.errors += 1;
        }
        if empty {
            // The kernel also completes an emptied flush-sequence request
            // ("WS 0 + 0"): only the flush itself is matched.
            if e.op == Op::Flush {
                if let Some(d) = self.flush_rqs.pop_front() {
                    let d2c = e.time.saturating_sub(d);
                    self.out.d2c.record(d2c);
                    if let Some(s) = &mut self.service {
                        s.completed(Op::Flush, 0, 0, d2c);
                    }
                }
                if let Some(q) = self.flush_bios.pop_front() {
                    let v = e.time.saturating_sub(q);
                    self.out.q2c.record(v);
                    self.out.q2c_by_op[op_index(Op::Flush)].record(v);
                }
            }
            return;
        }
        if let Some(rq) = take_first_at(&mut self.rqs, dev, e.sector, |r| r.issued.is_some())
            && let Some(d) = rq.issued
        {
            let d2c = e.time.saturating_sub(d);
            self.out.d2c.record(d2c);
            if let Some(s) = &mut self.service {
                let sectors = u32::try_from(rq.end.saturating_sub(e.sector)).unwrap_or(u32::MAX);
                s.completed(e.op, e.sector, sectors, d2c);
            }
        }
        let mut keys = std::mem::take(&mut self.scratch);
        keys.clear();
        for (k, b) in self.bios.range(key(dev, e.sector, 0)..key(dev, end, 0)) {
            if b.issued {
                keys.push(*k);
            }
        }
        for k in &keys {
            if let Some(b) = self.bios.remove(k) {
                let v = e.time.saturating_sub(b.queued);
                self.out.q2c.record(v);
                self.out.q2c_by_op[op_index(b.op)].record(v);
            }
        }
        self.scratch = keys;
    }

    /// The analysis so far.
    pub fn analysis(&self) -> Analysis {
        let mut a = self.out.clone();
        let mut sizes: Vec<_> = self.sizes.iter().map(|(k, v)| (*k, *v)).collect();
        sizes.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.1.cmp(&a.0.1)));
        a.issue_sizes = sizes;
        a.unplug_depths = self.depths.iter().map(|(k, v)| (*k, *v)).collect();
        a
    }
}

/// Forget the older half of `map` (by arrival order); how many went.
fn forget_older_half<V>(map: &mut BTreeMap<Key, V>) -> u64 {
    let mut seqs: Vec<u32> = map.keys().map(|&k| seq_of(k)).collect();
    let mid = seqs.len() / 2;
    let (_, &mut cut, _) = seqs.select_nth_unstable(mid);
    let before = map.len();
    map.retain(|&k, _| seq_of(k) >= cut);
    (before - map.len()) as u64
}

#[cfg(test)]
mod tests;
