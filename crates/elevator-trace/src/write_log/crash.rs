//! Crash states: the device contents a power cut could leave, under a write
//! log's rules, planned from the records' heads alone (pure: no I/O, no
//! clock; `elevator crash-states` builds and checks the images).
//!
//! # The rules
//!
//! A power cut comes before some record `cut`: records `0..cut` happened.
//! Every content record (write, discard, write-zeroes) before the last
//! flush before the cut is on the media (`durable`). Of the content records
//! after that flush and before the cut (the unflushed ones), the FUA ones
//! are on the media too, and any subset of the others may be: they are
//! applied in log order.
//!
//! # The states explored, and their IDs
//!
//! - `f<k>`, a flush boundary: every content record before flush record
//!   `k` applied. One per flush that is the last before a content record
//!   (a run of flushes with no content between them leaves one image; the
//!   last of them sees the most marks). Its cut is the next content record,
//!   so its marks are every mark recorded while the media held exactly that.
//! - `end`: every content record applied, the cut at the end of the log.
//! - `c<cut>-<n>`, between boundaries: the cut comes just before record
//!   `cut` (a content record or a flush, or the end of the log: the last
//!   moment a given set of writes was unflushed), and `n` picks which of the
//!   unflushed non-FUA writes survived: with `u` of them, `n < 2^u` when
//!   `u < 64` (a bijection of `n` keyed by the seed and the cut, so distinct
//!   `n` are distinct subsets) and any `n` otherwise (a stream of bits
//!   seeded by the seed, the cut and `n`). The subset with every write
//!   kept at an epoch's last cut is not explored there: it is the next
//!   boundary's (or `end`'s) image.
//!
//! [`plan`] picks up to `between` distinct states per epoch (all of them
//! when there are no more), spread over the log by [`PlanOptions::max_states`];
//! [`rebuild`] gives back one state from its ID and the seed.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use super::{Kind, RecordHead};

/// What names a crash state: it and the seed rebuild it exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StateId {
    /// `f<k>`: every content record before flush record `k`.
    Boundary(u64),
    /// `c<cut>-<n>`: the `n`-th subset of the unflushed writes at the cut
    /// before record `cut`.
    Between {
        /// The record the power cut came before.
        cut: u64,
        /// Which subset.
        n: u64,
    },
    /// `end`: every content record.
    End,
}

impl fmt::Display for StateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateId::Boundary(k) => write!(f, "f{k}"),
            StateId::Between { cut, n } => write!(f, "c{cut}-{n}"),
            StateId::End => f.write_str("end"),
        }
    }
}

impl FromStr for StateId {
    type Err = PlanError;

    fn from_str(s: &str) -> Result<StateId, PlanError> {
        let bad = || PlanError::BadId(s.to_string());
        if s == "end" {
            return Ok(StateId::End);
        }
        if let Some(k) = s.strip_prefix('f') {
            return k.parse().map(StateId::Boundary).map_err(|_| bad());
        }
        let rest = s.strip_prefix('c').ok_or_else(bad)?;
        let (cut, n) = rest.split_once('-').ok_or_else(bad)?;
        Ok(StateId::Between {
            cut: cut.parse().map_err(|_| bad())?,
            n: n.parse().map_err(|_| bad())?,
        })
    }
}

/// Why a state cannot be planned or rebuilt.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PlanError {
    /// The text is not an ID.
    #[error("'{0}' is not a crash state ID (f<flush record>, c<cut record>-<n>, or end)")]
    BadId(String),
    /// `f<k>` where record `k` is no flush.
    #[error("state f{0}: record {0} is not a flush (the log has {1} records)")]
    NotAFlush(u64, u64),
    /// `c<cut>-<n>` past the log's end.
    #[error("state c{cut}-{n}: the log has only {records} records")]
    CutPastEnd {
        /// The cut.
        cut: u64,
        /// The subset.
        n: u64,
        /// Records in the log.
        records: u64,
    },
    /// `c<cut>-<n>` with `n` past the subsets there are.
    #[error(
        "state c{cut}-{n}: the cut leaves {unflushed} unflushed writes that may be lost, so n must be below {possible}"
    )]
    NoSuchSubset {
        /// The cut.
        cut: u64,
        /// The subset.
        n: u64,
        /// Non-FUA unflushed writes.
        unflushed: u32,
        /// Subsets there are.
        possible: u64,
    },
}

/// How many states to explore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Seeds the choice of subsets.
    pub seed: u64,
    /// States between boundaries to explore per epoch (at most).
    pub between: u64,
    /// States to explore in all (at most): past it, the states kept are
    /// spread evenly over the log.
    pub max_states: usize,
}

/// Which unflushed non-FUA writes a state keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Subset {
    /// Bit `i` keeps the `i`-th (fewer than 64 of them).
    Mask(u64),
    /// A stream of bits from this key (64 or more of them).
    Stream(u64),
}

/// One state a power cut could leave: which records are on the media.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashState {
    /// Its name.
    pub id: StateId,
    /// The power cut came before this record: records `0..cut` happened,
    /// and the marks before it are the ones the state's checker sees.
    pub cut: u64,
    /// Every content record before this one is on the media.
    pub durable: u64,
    /// Content records in `durable..cut`: the unflushed ones.
    pub unflushed: u64,
    /// The FUA ones among them (always kept).
    pub unflushed_fua: u64,
    subset: Subset,
}

impl CrashState {
    /// The unflushed records (in `durable..cut`) this state keeps, in log
    /// order: the FUA ones and the chosen others. `heads` is the log's.
    pub fn kept(&self, heads: &[RecordHead]) -> Vec<u64> {
        let mut bits = SubsetBits::new(self.subset);
        let end = (self.cut as usize).min(heads.len());
        let start = (self.durable as usize).min(end);
        let mut kept = Vec::new();
        for h in &heads[start..end] {
            if !h.kind.changes_content() {
                continue;
            }
            if h.fua() || bits.next_bit() {
                kept.push(h.seq);
            }
        }
        debug_assert!(kept.len() as u64 <= self.unflushed);
        kept
    }
}

/// What [`plan`] chose.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The states to explore, by `durable` then `cut`: an image updated in
    /// log order reaches each state's `durable` in turn.
    pub states: Vec<CrashState>,
    /// States there are under the rules (saturating): the boundaries,
    /// `end`, and every subset at every cut.
    pub possible: u128,
    /// States chosen before [`PlanOptions::max_states`] cut them down.
    pub planned: usize,
    /// Flush boundaries chosen.
    pub boundaries: usize,
    /// Epochs (runs of content records between boundaries).
    pub epochs: usize,
}

/// One step of splitmix64 from state `z`: its 64 mixed bits.
fn mix(mut z: u64) -> u64 {
    elevator_core::rng::splitmix64(&mut z)
}

/// The key that picks subsets at `cut`.
fn cut_key(seed: u64, cut: u64) -> u64 {
    mix(seed ^ mix(cut ^ 0x6375_7473))
}

/// A bijection on `u`-bit numbers (`1 <= u < 64`), keyed.
fn permute(n: u64, key: u64, u: u32) -> u64 {
    debug_assert!((1..64).contains(&u) && n >> u == 0);
    let m = (1u64 << u) - 1;
    let s = u.div_ceil(2);
    let mut x = n.wrapping_add(key) & m;
    for round in 0..3u32 {
        x ^= x >> s;
        x = x.wrapping_mul(mix(key ^ u64::from(round)) | 1) & m;
        x ^= mix(key.rotate_left(round * 13 + 1)) & m;
    }
    x
}

/// The subset `n` at a cut with `u` unflushed non-FUA writes.
fn subset(key: u64, u: u32, n: u64) -> Subset {
    match u {
        0 => Subset::Mask(0),
        1..64 => Subset::Mask(permute(n, key, u)),
        _ => Subset::Stream(mix(key ^ mix(n ^ 0x7374_7265_616d))),
    }
}

/// Subsets at a cut with `u` unflushed non-FUA writes (saturating).
fn subsets(u: u32) -> u128 {
    if u >= 127 { u128::MAX } else { 1u128 << u }
}

/// Reads a subset's bits one by one.
struct SubsetBits {
    subset: Subset,
    word: u64,
    used: u32,
    index: u32,
}

impl SubsetBits {
    fn new(subset: Subset) -> SubsetBits {
        SubsetBits {
            subset,
            word: 0,
            used: 64,
            index: 0,
        }
    }

    fn next_bit(&mut self) -> bool {
        match &mut self.subset {
            Subset::Mask(m) => {
                let bit = self.index < 64 && (*m >> self.index) & 1 == 1;
                self.index += 1;
                bit
            }
            Subset::Stream(state) => {
                if self.used == 64 {
                    *state = mix(*state);
                    self.word = *state;
                    self.used = 0;
                }
                let bit = (self.word >> self.used) & 1 == 1;
                self.used += 1;
                bit
            }
        }
    }
}

/// A content record in the epoch being planned, and its cut (the next
/// content record or flush after it, or the log's end).
#[derive(Clone, Copy)]
struct Cut {
    cut: u64,
    /// Non-FUA content records from the epoch's start through this one.
    u: u32,
    /// FUA ones.
    fua: u64,
    /// Content records from the epoch's start through this one.
    content: u64,
}

/// Choose the states to explore in a log whose records are `heads` (in
/// order, `heads[i].seq == i`).
pub fn plan(heads: &[RecordHead], opts: &PlanOptions) -> Plan {
    let records = heads.len() as u64;
    let mut out = Plan::default();
    let mut durable = 0u64;
    let mut epoch: Vec<Cut> = Vec::new();
    let mut open_cut = false;
    let mut flush_since_content: Option<u64> = None;
    let (mut u, mut fua, mut content) = (0u32, 0u64, 0u64);
    for (i, h) in heads.iter().enumerate() {
        let i = i as u64;
        let is_content = h.kind.changes_content();
        if (is_content || h.kind == Kind::Flush) && open_cut {
            if let Some(last) = epoch.last_mut() {
                last.cut = i;
            }
            open_cut = false;
        }
        if h.kind == Kind::Flush {
            flush_since_content = Some(i);
        }
        if !is_content {
            continue;
        }
        if let Some(f) = flush_since_content.take() {
            plan_epoch(durable, &epoch, opts, &mut out);
            out.states.push(CrashState {
                id: StateId::Boundary(f),
                cut: i,
                durable: f,
                unflushed: 0,
                unflushed_fua: 0,
                subset: Subset::Mask(0),
            });
            out.boundaries += 1;
            out.possible = out.possible.saturating_add(1);
            durable = f;
            epoch.clear();
            (u, fua, content) = (0, 0, 0);
        }
        content += 1;
        if h.fua() {
            fua += 1;
        } else {
            u = u.saturating_add(1);
        }
        epoch.push(Cut {
            cut: records,
            u,
            fua,
            content,
        });
        open_cut = true;
    }
    plan_epoch(durable, &epoch, opts, &mut out);
    out.states.push(CrashState {
        id: StateId::End,
        cut: records,
        durable: records,
        unflushed: 0,
        unflushed_fua: 0,
        subset: Subset::Mask(0),
    });
    out.possible = out.possible.saturating_add(1);
    out.states.sort_by_key(|s| (s.durable, s.cut, s.id));
    out.planned = out.states.len();
    spread(&mut out.states, opts.max_states);
    debug_assert!(out.states.len() <= opts.max_states);
    out
}

/// Keep `max` of `states`, spread evenly over them.
fn spread(states: &mut Vec<CrashState>, max: usize) {
    let total = states.len();
    if total <= max {
        return;
    }
    let mut keep = 0usize;
    let mut next = 0usize;
    let mut i = 0usize;
    states.retain(|_| {
        let chosen = keep < max && i == next;
        if chosen {
            keep += 1;
            next = (keep as u128 * total as u128 / max as u128) as usize;
        }
        i += 1;
        chosen
    });
}

/// The states between the boundaries of one epoch.
fn plan_epoch(durable: u64, epoch: &[Cut], opts: &PlanOptions, out: &mut Plan) {
    if epoch.is_empty() {
        return;
    }
    out.epochs += 1;
    let last = epoch.len() - 1;
    // Subsets explorable at cut j: all of them, less the full one at the
    // last cut (the next boundary's image).
    let room = |j: usize| subsets(epoch[j].u) - u128::from(j == last);
    let possible = (0..epoch.len()).fold(0u128, |acc, j| acc.saturating_add(room(j)));
    out.possible = out.possible.saturating_add(possible);
    let push = |j: usize, n: u64, out: &mut Plan| {
        let c = epoch[j];
        out.states.push(CrashState {
            id: StateId::Between { cut: c.cut, n },
            cut: c.cut,
            durable,
            unflushed: c.content,
            unflushed_fua: c.fua,
            subset: subset(cut_key(opts.seed, c.cut), c.u, n),
        });
    };
    let is_full = |j: usize, n: u64| {
        let c = epoch[j];
        j == last && c.u < 64 && subset(cut_key(opts.seed, c.cut), c.u, n) == full_mask(c.u)
    };
    if possible <= u128::from(opts.between) {
        for (j, c) in epoch.iter().enumerate() {
            for n in 0..subsets(c.u) as u64 {
                if !is_full(j, n) {
                    push(j, n, out);
                }
            }
        }
        return;
    }
    // Sample: a cut at random, then its next unused n; a cut whose subsets
    // are all taken is passed over.
    let mut rng = mix(opts.seed ^ mix(durable ^ 0x0065_706f_6368));
    let mut next_n: HashMap<usize, u64> = HashMap::new();
    let mut taken_at: HashMap<usize, u128> = HashMap::new();
    let mut seen: HashSet<(usize, u64)> = HashSet::new();
    let mut taken = 0u64;
    let mut misses = 0u32;
    while taken < opts.between {
        rng = mix(rng);
        let mut j = (rng % epoch.len() as u64) as usize;
        if misses > 64 {
            // Scan for a cut with room (there is one: possible > between).
            match (0..epoch.len()).find(|&j| *taken_at.get(&j).unwrap_or(&0) < room(j)) {
                Some(free) => j = free,
                None => break,
            }
        }
        let all = subsets(epoch[j].u);
        let n = next_n.entry(j).or_insert(0);
        while u128::from(*n) < all && is_full(j, *n) {
            *n += 1;
        }
        if u128::from(*n) >= all {
            misses += 1;
            continue;
        }
        let pick = *n;
        *n += 1;
        let signature = match subset(cut_key(opts.seed, epoch[j].cut), epoch[j].u, pick) {
            Subset::Mask(m) => m,
            Subset::Stream(k) => mix(k),
        };
        if !seen.insert((j, signature)) {
            misses += 1;
            continue;
        }
        misses = 0;
        *taken_at.entry(j).or_insert(0) += 1;
        push(j, pick, out);
        taken += 1;
    }
}

fn full_mask(u: u32) -> Subset {
    Subset::Mask(if u >= 64 { u64::MAX } else { (1u64 << u) - 1 })
}

/// The state `id` names in a log whose records are `heads`, with `seed`.
pub fn rebuild(heads: &[RecordHead], id: StateId, seed: u64) -> Result<CrashState, PlanError> {
    let records = heads.len() as u64;
    match id {
        StateId::End => Ok(CrashState {
            id,
            cut: records,
            durable: records,
            unflushed: 0,
            unflushed_fua: 0,
            subset: Subset::Mask(0),
        }),
        StateId::Boundary(k) => {
            if heads.get(k as usize).map(|h| h.kind) != Some(Kind::Flush) {
                return Err(PlanError::NotAFlush(k, records));
            }
            let cut = heads[k as usize..]
                .iter()
                .find(|h| h.kind.changes_content())
                .map_or(records, |h| h.seq);
            Ok(CrashState {
                id,
                cut,
                durable: k,
                unflushed: 0,
                unflushed_fua: 0,
                subset: Subset::Mask(0),
            })
        }
        StateId::Between { cut, n } => {
            if cut > records {
                return Err(PlanError::CutPastEnd { cut, n, records });
            }
            let before = &heads[..cut as usize];
            let durable = before
                .iter()
                .rposition(|h| h.kind == Kind::Flush)
                .map_or(0, |f| f as u64);
            let (mut u, mut fua, mut content) = (0u32, 0u64, 0u64);
            for h in &before[durable as usize..] {
                if h.kind.changes_content() {
                    content += 1;
                    if h.fua() {
                        fua += 1;
                    } else {
                        u = u.saturating_add(1);
                    }
                }
            }
            if u < 64 && n >> u != 0 {
                return Err(PlanError::NoSuchSubset {
                    cut,
                    n,
                    unflushed: u,
                    possible: 1u64 << u,
                });
            }
            Ok(CrashState {
                id,
                cut,
                durable,
                unflushed: content,
                unflushed_fua: fua,
                subset: subset(cut_key(seed, cut), u, n),
            })
        }
    }
}

#[cfg(test)]
#[path = "crash_tests.rs"]
mod tests;
