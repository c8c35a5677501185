//! Faults on any model: [`FaultParams`] (the fault options of a device spec,
//! with the names and meanings the real fault device uses) and
//! [`FaultDevice`], the wrapper that applies them to a model on the virtual
//! clock, so that every model gets them. The counts, the option values both
//! engines parse alike and the sector-range decisions are
//! [`elevator_core::fault`]'s; what it did is a [`FaultState`].
//!
//! | option | default | what |
//! |---|---|---|
//! | `lse_sectors=A-B[:C-D...]` | none | latent sector errors on 512-byte sectors `A..B` (end exclusive, as `fail_sectors`): a read touching one fails `IoError`, good bytes those before the first bad sector; a write covering one succeeds and repairs it |
//! | `torn_rate=F` | 0 | a fraction of writes are torn: a random whole-sector prefix (0..n-1 sectors) reaches the media; the write fails `IoError` with that prefix good |
//! | `misdirect_rate=F` | 0 | a fraction of writes land at a random other sector (same length) and complete `Ok`: silent corruption, counted |
//! | `spike_rate=F`, `spike_ms=N` | 0, 100 | a fraction of I/Os complete N ms late, `Ok` |
//! | `timeout_rate=F`, `timeout_ms=N` | 0, 30000 | a fraction of I/Os are never answered; they complete `TimedOut` with 0 good bytes `timeout_ms` after submission (or when the model finishes them, if later). A timed-out write's data did reach the model (it may or may not have landed, as on a real device) |
//! | `vanish_at=T` | never | from T (`500ms`, `2s`, plain seconds; virtual time from the start) the device is gone: what is in flight completes `Offline` at T, new I/O completes `Offline` 1 ms after it arrives (so that a time-based job's clock still moves: jobs go on issuing after errors) |
//! | `power_cut_at=T` | never | as `vanish_at`, and power is lost: what the model's volatile write cache held and had not written is lost (hdd, ssd, a raid0 of them) |
//! | `fail_seed=N` | 0 | seeds every random choice |
//!
//! The choices are drawn per I/O at submission, in a fixed order (timeout,
//! then torn or misdirected for a write, then spike), each only when its
//! rate is above 0. Every I/O completes exactly once. A gone device's model
//! is no longer called: its media stays as it was at T.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::ops::{Deref, DerefMut};

use elevator_core::fault::{self, BadRange, FaultCounts, Gone};

use elevator_core::rng::Rng;
use elevator_core::{Device, DeviceIo, Nanos, Op, Outcome, Status};

use super::media::SimDevice;
use super::param::{ParamError, ParamUnit, parse_param};

/// What a gone device answers new I/O after.
pub const GONE_DELAY_NS: Nanos = 1_000_000;

/// The fault options of a device spec.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultParams {
    /// Latent sector errors: `[start, end)` ranges of 512-byte sectors.
    pub lse_sectors: Vec<(u64, u64)>,
    /// Fraction of writes torn.
    pub torn_rate: f64,
    /// Fraction of writes misdirected.
    pub misdirect_rate: f64,
    /// Fraction of I/Os late by `spike_ms`.
    pub spike_rate: f64,
    /// How late, ms (default 100).
    pub spike_ms: Option<u64>,
    /// Fraction of I/Os never answered.
    pub timeout_rate: f64,
    /// When they are given up, ms (default 30000).
    pub timeout_ms: Option<u64>,
    /// When the device vanishes, ns of virtual time.
    pub vanish_at: Option<Nanos>,
    /// When power is lost, ns of virtual time.
    pub power_cut_at: Option<Nanos>,
    /// Seed of every random choice.
    pub fail_seed: u64,
}

/// The fault options: name, default, what.
pub const FAULT_PARAMS: [(&str, &str, &str); 10] = [
    (
        "lse_sectors",
        "none",
        "A-B[:C-D..]: latent sector errors (reads fail, writes repair)",
    ),
    (
        "torn_rate",
        "0",
        "fraction of writes torn (a prefix lands, IoError)",
    ),
    (
        "misdirect_rate",
        "0",
        "fraction of writes landing elsewhere (Ok: silent)",
    ),
    (
        "spike_rate",
        "0",
        "fraction of I/Os completing spike_ms late",
    ),
    ("spike_ms", "100", "latency spike, ms"),
    (
        "timeout_rate",
        "0",
        "fraction of I/Os never answered (TimedOut after timeout_ms)",
    ),
    (
        "timeout_ms",
        "30000",
        "when an unanswered I/O is given up, ms",
    ),
    (
        "vanish_at",
        "never",
        "time (500ms, 2s) from which every I/O completes Offline",
    ),
    (
        "power_cut_at",
        "never",
        "time: the write cache's unflushed data is lost, then Offline (hdd, ssd, raid0 of them)",
    ),
    ("fail_seed", "0", "seed of every random fault choice"),
];

fn bad(name: &str, text: &str, why: &str) -> ParamError {
    ParamError::BadValue {
        model: "faults",
        name: name.to_string(),
        text: text.to_string(),
        why: why.to_string(),
    }
}

/// Parse a time: `500ms`, `2s`, `250us`, or plain seconds.
pub fn parse_time(name: &str, text: &str) -> Result<Nanos, ParamError> {
    let t = text.trim().to_ascii_lowercase();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e9)
    } else {
        (t.as_str(), 1e9)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| bad(name, text, "expected a time such as 500ms, 2s or 1.5"))?;
    if !(v.is_finite() && v >= 0.0 && v * scale < 1e18) {
        return Err(bad(name, text, "expected a time from 0 to 10^9 s"));
    }
    Ok((v * scale) as Nanos)
}

impl FaultParams {
    /// Whether any fault is asked for.
    pub fn is_active(&self) -> bool {
        *self != FaultParams::default()
    }

    /// Whether `name` is a fault option.
    pub fn knows(name: &str) -> bool {
        FAULT_PARAMS.iter().any(|(n, _, _)| *n == name)
    }

    /// Set fault option `name` from text (`name` must be one: [`Self::knows`]).
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), ParamError> {
        let rate = |text: &str| -> Result<f64, ParamError> {
            fault::fraction(text).ok_or_else(|| bad(name, text, "expected a fraction 0..=1"))
        };
        let count = |text: &str| -> Result<u64, ParamError> {
            let v = parse_param("faults", name, ParamUnit::Count, text)?;
            if v.fract() != 0.0 || v > 1e15 {
                return Err(bad(name, text, "expected a whole number"));
            }
            Ok(v as u64)
        };
        // At most 10^9 ms (11 days), so that times stay far from overflow.
        let millis = |text: &str| -> Result<u64, ParamError> {
            let v = count(text)?;
            if v > 1_000_000_000 {
                return Err(bad(name, text, "expected at most 1000000000 ms"));
            }
            Ok(v)
        };
        match name {
            "lse_sectors" => {
                for range in text.split(':') {
                    match fault::sector_range(range) {
                        Ok(r) => self.lse_sectors.push(r),
                        Err(BadRange::Empty(..) | BadRange::NotARange) => {
                            return Err(bad(
                                name,
                                range,
                                "not a sector range START-END with START < END",
                            ));
                        }
                    }
                }
            }
            "torn_rate" => self.torn_rate = rate(text)?,
            "misdirect_rate" => self.misdirect_rate = rate(text)?,
            "spike_rate" => self.spike_rate = rate(text)?,
            "spike_ms" => self.spike_ms = Some(millis(text)?),
            "timeout_rate" => self.timeout_rate = rate(text)?,
            "timeout_ms" => self.timeout_ms = Some(millis(text)?),
            "vanish_at" => self.vanish_at = Some(parse_time(name, text)?),
            "power_cut_at" => self.power_cut_at = Some(parse_time(name, text)?),
            "fail_seed" => self.fail_seed = count(text)?,
            _ => {
                return Err(ParamError::Unknown {
                    model: "faults",
                    name: name.to_string(),
                    hint: String::new(),
                    known: FAULT_PARAMS.map(|(n, _, _)| n).join(", "),
                });
            }
        }
        Ok(())
    }

    /// The options set, as `name=value` (for descriptions).
    pub fn describe(&self) -> String {
        let mut v = Vec::new();
        if !self.lse_sectors.is_empty() {
            let r: Vec<String> = self
                .lse_sectors
                .iter()
                .map(|(a, b)| format!("{a}-{b}"))
                .collect();
            v.push(format!("lse_sectors={}", r.join(":")));
        }
        for (n, x) in [
            ("torn_rate", self.torn_rate),
            ("misdirect_rate", self.misdirect_rate),
            ("spike_rate", self.spike_rate),
            ("timeout_rate", self.timeout_rate),
        ] {
            if x > 0.0 {
                v.push(format!("{n}={x}"));
            }
        }
        if let Some(t) = self.vanish_at {
            v.push(format!("vanish_at={}s", t as f64 / 1e9));
        }
        if let Some(t) = self.power_cut_at {
            v.push(format!("power_cut_at={}s", t as f64 / 1e9));
        }
        v.join(",")
    }
}

/// What the faults of a model did so far ([`SimDevice::fault_counts`]):
/// the counts ([`FaultCounts`]; a model never counts `failed`, and counts
/// the ranges a write repaired as `lse_repaired`), and whether and when the
/// device went away. Reads as its counts (`state.torn`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultState {
    /// Faults injected, by kind.
    pub counts: FaultCounts,
    /// Whether and when the device went away.
    pub gone: Option<Gone>,
}

impl Deref for FaultState {
    type Target = FaultCounts;

    fn deref(&self) -> &FaultCounts {
        &self.counts
    }
}

impl DerefMut for FaultState {
    fn deref_mut(&mut self) -> &mut FaultCounts {
        &mut self.counts
    }
}

/// What becomes of one I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Normal,
    /// Fails with this status and good bytes when the model finishes it.
    Fail(Status, u64),
    /// Late by this much.
    Late(Nanos),
    /// Given up at this time (or when the model finishes it, if later).
    Timeout(Nanos),
}

#[derive(Clone, Copy, Debug)]
struct Flying {
    fate: Fate,
    /// Decided: reported when due (in `due`).
    outcome: Option<Outcome>,
}

/// A model with faults. See the module documentation.
pub struct FaultDevice {
    inner: Box<dyn SimDevice + Send>,
    p: FaultParams,
    rng: Rng,
    lse: Vec<(u64, u64)>,
    capacity: u64,
    flying: HashMap<u32, Flying>,
    /// Completions decided: (time, order, tag).
    due: BinaryHeap<Reverse<(Nanos, u64, u32)>>,
    order: u64,
    counts: FaultState,
    /// When it goes (the earlier of `vanish_at` and `power_cut_at`).
    end: Option<Gone>,
    describe: String,
    /// The model's completions being decided (kept to reuse its room).
    got: Vec<(u32, Outcome)>,
}

impl FaultDevice {
    /// `inner` with the faults of `p`. `power_cut_at` is refused on a model
    /// without a volatile write cache.
    pub fn new(
        inner: Box<dyn SimDevice + Send>,
        p: &FaultParams,
    ) -> Result<FaultDevice, ParamError> {
        if p.power_cut_at.is_some() && !inner.volatile_cache() {
            return Err(bad(
                "power_cut_at",
                &format!("{}s", p.power_cut_at.unwrap_or(0) as f64 / 1e9),
                "this model has no volatile write cache to lose (hdd and ssd do); \
                 use vanish_at for a device that goes away",
            ));
        }
        let end = match (p.vanish_at, p.power_cut_at) {
            (Some(v), Some(c)) if v < c => Some(Gone {
                at: v,
                power_cut: false,
            }),
            (_, Some(c)) => Some(Gone {
                at: c,
                power_cut: true,
            }),
            (Some(v), None) => Some(Gone {
                at: v,
                power_cut: false,
            }),
            (None, None) => None,
        };
        let describe = format!("{} with faults {}", inner.describe(), p.describe());
        Ok(FaultDevice {
            capacity: inner.limits().capacity,
            flying: HashMap::with_capacity(inner.queue_depth() as usize),
            inner,
            rng: Rng::new(p.fail_seed),
            lse: p.lse_sectors.clone(),
            p: p.clone(),
            due: BinaryHeap::new(),
            order: 0,
            counts: FaultState::default(),
            end,
            describe,
            got: Vec::new(),
        })
    }

    /// The model underneath.
    pub fn inner(&self) -> &(dyn SimDevice + Send) {
        &*self.inner
    }

    fn coin(&mut self, rate: f64) -> bool {
        rate > 0.0 && self.rng.unit() < rate
    }

    fn push_due(&mut self, t: Nanos, tag: u32) {
        self.order += 1;
        self.due.push(Reverse((t, self.order, tag)));
    }

    /// Whether the device is gone by `now`; if it goes now, make it so:
    /// bring the model to the moment, cut its power if asked, and fail
    /// everything still in flight.
    fn catch_up(&mut self, now: Nanos) -> bool {
        let Some(end) = self.end else {
            return false;
        };
        if self.counts.gone.is_some() {
            return true;
        }
        if now < end.at {
            return false;
        }
        self.take_inner(end.at);
        if end.power_cut {
            self.inner.power_cut(end.at);
        }
        self.counts.gone = Some(end);
        // What has not been reported by then never will be.
        let mut late: Vec<u32> = Vec::new();
        let mut keep = Vec::new();
        while let Some(Reverse((t, o, tag))) = self.due.pop() {
            if t <= end.at {
                keep.push(Reverse((t, o, tag)));
            } else {
                late.push(tag);
            }
        }
        self.due.extend(keep);
        for (&tag, f) in &self.flying {
            if f.outcome.is_none() {
                late.push(tag);
            }
        }
        late.sort_unstable();
        for tag in late {
            if let Some(f) = self.flying.get_mut(&tag) {
                f.outcome = Some(Outcome::Failed {
                    status: Status::Offline,
                    good_bytes: 0,
                });
                self.counts.offline += 1;
                self.push_due(end.at, tag);
            }
        }
        true
    }

    /// Take the model's completions up to `now` and decide when and how
    /// each is reported.
    fn take_inner(&mut self, now: Nanos) {
        let mut got = std::mem::take(&mut self.got);
        got.clear();
        self.inner.complete(now, &mut |tag, o| got.push((tag, o)));
        for &(tag, o) in &got {
            let Some(f) = self.flying.get_mut(&tag) else {
                debug_assert!(
                    false,
                    "fault device: the model completed a tag not in flight"
                );
                continue;
            };
            let (t, out) = match f.fate {
                Fate::Normal => (now, o),
                Fate::Fail(status, good_bytes) => (now, Outcome::Failed { status, good_bytes }),
                Fate::Late(d) => (now + d, o),
                Fate::Timeout(at) => (
                    at.max(now),
                    Outcome::Failed {
                        status: Status::TimedOut,
                        good_bytes: 0,
                    },
                ),
            };
            f.outcome = Some(out);
            self.push_due(t, tag);
        }
        self.got = got;
    }
}

impl Device for FaultDevice {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    elevator_core::forward_device!(inner: limits, queue_depth, rotational, stats, record_heads,
        take_heads);

    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        debug_assert!(!self.flying.contains_key(&io.tag), "tag in flight twice");
        if self.catch_up(now) {
            self.flying.insert(
                io.tag,
                Flying {
                    fate: Fate::Normal,
                    outcome: Some(Outcome::Failed {
                        status: Status::Offline,
                        good_bytes: 0,
                    }),
                },
            );
            self.counts.offline += 1;
            self.push_due(now + GONE_DELAY_NS, io.tag);
            return;
        }
        let mut fate = Fate::Normal;
        let mut sent = io;
        let (lo, hi) = (io.sector, io.sector + u64::from(io.sectors));
        if self.coin(self.p.timeout_rate) {
            fate = Fate::Timeout(now + self.p.timeout_ms.unwrap_or(30_000) * 1_000_000);
            self.counts.timeouts += 1;
        }
        match io.op {
            Op::Read => {
                if let Some(b) = fault::first_in(&self.lse, lo, hi)
                    && fate == Fate::Normal
                {
                    fate = Fate::Fail(Status::IoError, (b - lo) << 9);
                    self.counts.lse_reads += 1;
                }
            }
            Op::Write | Op::WriteZeroes => {
                // A write remaps the bad sectors it covers.
                self.counts.lse_repaired += fault::cut(&mut self.lse, lo, hi).ranges;
                if io.op == Op::Write && io.sectors > 0 {
                    if self.coin(self.p.torn_rate) {
                        let keep =
                            fault::torn_prefix(&mut self.rng, u64::from(io.sectors), 1) as u32;
                        sent.sectors = keep;
                        if fate == Fate::Normal {
                            fate = Fate::Fail(Status::IoError, u64::from(keep) << 9);
                        }
                        self.counts.torn += 1;
                    } else if self.capacity > u64::from(io.sectors)
                        && self.coin(self.p.misdirect_rate)
                    {
                        let room = self.capacity - u64::from(io.sectors) + 1;
                        let mut at = self.rng.below(room);
                        if at == io.sector {
                            at = (at + u64::from(io.sectors)) % room;
                        }
                        sent.sector = at;
                        self.counts.misdirected += 1;
                    }
                }
            }
            _ => {}
        }
        if fate == Fate::Normal && self.coin(self.p.spike_rate) {
            fate = Fate::Late(self.p.spike_ms.unwrap_or(100) * 1_000_000);
            self.counts.spikes += 1;
        }
        self.flying.insert(
            io.tag,
            Flying {
                fate,
                outcome: None,
            },
        );
        self.inner.submit(sent, now);
    }

    fn next_completion(&self) -> Option<Nanos> {
        let due = self.due.peek().map(|Reverse((t, _, _))| *t);
        if self.counts.gone.is_some() {
            return due;
        }
        let inner = self.inner.next_completion();
        let end = match self.end {
            Some(e) if !self.flying.is_empty() => Some(e.at),
            _ => None,
        };
        [due, inner, end].into_iter().flatten().min()
    }

    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        let gone_at = self.end.map(|e| e.at);
        if gone_at.is_none_or(|t| now < t) || self.counts.gone.is_some() {
            if self.counts.gone.is_none() {
                self.take_inner(now);
            }
        } else {
            self.catch_up(now);
        }
        while let Some(&Reverse((t, _, tag))) = self.due.peek() {
            if t > now {
                break;
            }
            self.due.pop();
            if let Some(f) = self.flying.remove(&tag) {
                done(tag, f.outcome.unwrap_or(Outcome::Done));
            }
        }
    }

    fn outstanding(&self) -> u32 {
        self.flying.len() as u32
    }
}

impl SimDevice for FaultDevice {
    crate::forward_sim_device!(inner: track_media, media, volatile_cache, power_cut);

    fn fault_counts(&self) -> Option<FaultState> {
        Some(self.counts)
    }

    fn end_of_run(&mut self, now: Nanos) {
        // A cut or a vanishing after the run still happens: the device sat
        // idle until then (a disk destages meanwhile).
        match self.end {
            Some(e) => {
                self.catch_up(e.at.max(now));
                // The model stopped at the moment it went (a RAID puts its
                // members' media together then).
                self.inner.end_of_run(e.at);
            }
            None => self.inner.end_of_run(now),
        }
    }
}
