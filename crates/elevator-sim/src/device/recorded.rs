//! `recorded`: a device that serves each request in the time the
//! recording's device took for it (btt's D2C, from the trace), so that a
//! replay's requests wait, queue and merge as the recording's did. Not a
//! preset: `elevator replay` builds it from the trace it replays
//! ([`elevator_trace::analyze::service_times`]).
//!
//! A request is looked up by (operation, first sector, sectors): the
//! recording's requests of that key are handed out in their order, one per
//! request served; a request the recording did not issue (or issued fewer
//! times) takes a D2C drawn with the device's seeded generator from the
//! recording's D2C times of its operation and size class. Flushes take the
//! recording's flushes' times in turn. Requests are served side by side,
//! each in its own time (completions come in time order, ties in
//! submission order), at most `queue_depth` at once: by default the most
//! the recording had in flight.
//!
//! Parameters: `queue_depth` (the recording's most in flight), `seed` (1),
//! `capacity` (1 TiB, as `null`'s). Memory: the recording's table, shared,
//! and one counter per key of it. No write cache: a write's content is on
//! the media when it completes (tracked when asked, for a write log).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use elevator_core::rng::Rng;
use elevator_core::{Device, DeviceIo, DeviceStats, Limits, Nanos, Op, Outcome};
use elevator_trace::analyze::service_times::ServiceTimes;

use super::media::{ExtentMap, SimDevice, WriteNo, numbered};
use super::null::checked_limits;
use super::param::{ParamError, ParamUnit, ParamValue, parse_listed};

/// Parameters of the recorded device: the recording's service times and
/// what may be changed.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedParams {
    /// The recording's service times.
    pub times: Arc<ServiceTimes>,
    /// I/Os it takes at once.
    pub queue_depth: u32,
    /// Seeds the draws from the model.
    pub seed: u64,
    /// Size in bytes.
    pub capacity: u64,
}

impl RecordedParams {
    /// The model's name.
    pub const MODEL: &'static str = "recorded";

    /// The parameters of a device serving as `times` say, as deep as the
    /// recording's device was.
    pub fn new(times: Arc<ServiceTimes>) -> RecordedParams {
        RecordedParams {
            queue_depth: times.max_in_flight().clamp(1, 65536),
            times,
            seed: 1,
            capacity: 1 << 40,
        }
    }

    /// The parameters with their values.
    pub fn list(&self) -> Vec<ParamValue> {
        vec![
            ParamValue {
                name: "queue_depth",
                value: f64::from(self.queue_depth),
                unit: ParamUnit::Count,
                help: "I/Os taken at once (the recording's most in flight)",
            },
            ParamValue {
                name: "seed",
                value: self.seed as f64,
                unit: ParamUnit::Count,
                help: "seeds the draws of unrecorded requests' times",
            },
            ParamValue {
                name: "capacity",
                value: self.capacity as f64,
                unit: ParamUnit::Bytes,
                help: "size",
            },
        ]
    }

    /// Set a parameter from text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), ParamError> {
        let v = parse_listed(Self::MODEL, &self.list(), name, text)?;
        match name {
            "queue_depth" => self.queue_depth = v as u32,
            "seed" => self.seed = v as u64,
            _ => self.capacity = v as u64,
        }
        Ok(())
    }
}

/// An I/O being served, ordered by completion time, then submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Serving {
    done: Nanos,
    seq: u64,
    tag: u32,
    /// The write's number and sectors `[lo, hi)`, when the media is
    /// tracked and it is a write (else 0).
    write: WriteNo,
    lo: u64,
    hi: u64,
}

/// The recorded device.
#[derive(Clone, Debug)]
pub struct RecordedDevice {
    times: Arc<ServiceTimes>,
    /// Times handed out per key of the table.
    used: Vec<u32>,
    rng: Rng,
    limits: Limits,
    queue_depth: u32,
    serving: BinaryHeap<Reverse<Serving>>,
    seq: u64,
    stats: DeviceStats,
    busy_since: Nanos,
    writes: WriteNo,
    media: Option<Box<ExtentMap>>,
    matched: u64,
    modelled: u64,
}

impl RecordedDevice {
    /// A recorded device with these parameters.
    pub fn new(p: &RecordedParams) -> Result<RecordedDevice, ParamError> {
        if !(1..=65536).contains(&p.queue_depth) {
            return Err(ParamError::OutOfRange {
                model: RecordedParams::MODEL,
                name: "queue_depth",
                value: f64::from(p.queue_depth),
                why: "must be 1..=65536".into(),
            });
        }
        let limits = checked_limits(
            RecordedParams::MODEL,
            Limits {
                capacity: p.capacity / 512,
                ..Limits::default()
            },
        )?;
        Ok(RecordedDevice {
            used: vec![0; p.times.keys()],
            times: Arc::clone(&p.times),
            rng: Rng::new(p.seed),
            limits,
            queue_depth: p.queue_depth,
            serving: BinaryHeap::with_capacity(p.queue_depth as usize),
            seq: 0,
            stats: DeviceStats::default(),
            busy_since: 0,
            writes: 0,
            media: None,
            matched: 0,
            modelled: 0,
        })
    }

    /// Requests served in a time of the recording's same request.
    pub fn matched(&self) -> u64 {
        self.matched
    }

    /// Requests served in a time drawn from the model.
    pub fn modelled(&self) -> u64 {
        self.modelled
    }

    /// How long `io` takes: its key's next recorded time, else a draw.
    fn service_time(&mut self, io: &DeviceIo) -> Nanos {
        let (sector, sectors) = if io.op == Op::Flush {
            (0, 0)
        } else {
            (io.sector, io.sectors)
        };
        if let Some(g) = self.times.group(io.op, sector, sectors)
            && let Some(used) = self.used.get_mut(g)
            && let Some(&t) = self.times.times(g).get(*used as usize)
        {
            *used += 1;
            self.matched += 1;
            return Nanos::from(t);
        }
        self.modelled += 1;
        self.times.modelled(io.op, sectors, &mut self.rng)
    }
}

impl Device for RecordedDevice {
    fn describe(&self) -> String {
        format!(
            "the recording's service times: {} requests matched, {} from the model of D2C \
             by size; {} recorded, queue depth {}",
            self.matched,
            self.modelled,
            self.times.completed(),
            self.queue_depth
        )
    }

    elevator_core::device_shape_fields!(rotational: false);

    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        if self.serving.is_empty() {
            self.busy_since = now;
        }
        let done = now.saturating_add(self.service_time(&io));
        let (mut write, mut lo, mut hi) = (0, 0, 0);
        if numbered(io.op) {
            self.writes += 1;
            if self.media.is_some() {
                let cap = self.limits.capacity;
                write = self.writes;
                lo = io.sector.min(cap);
                hi = io.sector.saturating_add(u64::from(io.sectors)).min(cap);
            }
        }
        self.seq += 1;
        self.serving.push(Reverse(Serving {
            done,
            seq: self.seq,
            tag: io.tag,
            write,
            lo,
            hi,
        }));
    }

    fn next_completion(&self) -> Option<Nanos> {
        self.serving.peek().map(|s| s.0.done)
    }

    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        while let Some(&Reverse(s)) = self.serving.peek() {
            if s.done > now {
                break;
            }
            self.serving.pop();
            if s.write != 0
                && let Some(m) = &mut self.media
            {
                m.set_newer(s.lo, s.hi, s.write);
            }
            self.stats.ios += 1;
            if self.serving.is_empty() {
                self.stats.busy_ns += s.done - self.busy_since;
            }
            done(s.tag, Outcome::Done);
        }
    }

    fn outstanding(&self) -> u32 {
        self.serving.len() as u32
    }

    fn stats(&self) -> DeviceStats {
        self.stats
    }
}

/// No cache: a completed write is on the media.
impl SimDevice for RecordedDevice {
    fn track_media(&mut self) {
        self.media.get_or_insert_with(Box::default);
    }

    fn media(&self) -> Option<&ExtentMap> {
        self.media.as_deref()
    }
}

#[cfg(test)]
mod tests;
