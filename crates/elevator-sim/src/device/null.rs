//! `null`: a device that completes every I/O the moment it is submitted (or
//! after a fixed `latency`), like Linux's null_blk. It measures the layers
//! above it.
//!
//! Parameters: `capacity` (1 TiB), `latency` (0 µs), `queue_depth` (1024),
//! `logical_block_size` (512).
//!
//! It has no write cache: a write's content is on the media when it
//! completes (tracked when asked, for a write log).

use elevator_core::{Device, DeviceIo, DeviceStats, Limits, Nanos, Outcome};
use std::collections::VecDeque;

use super::media::{ExtentMap, SimDevice, WriteNo, numbered};
use super::param::{ParamError, ParamUnit, ParamValue, parse_listed};

/// Parameters of the null device.
#[derive(Clone, Debug, PartialEq)]
pub struct NullParams {
    /// Size in bytes.
    pub capacity: u64,
    /// Time from submission to completion, in µs.
    pub latency_us: f64,
    /// I/Os it takes at once.
    pub queue_depth: u32,
    /// Logical block size in bytes.
    pub logical_block_size: u32,
}

impl Default for NullParams {
    fn default() -> NullParams {
        NullParams {
            capacity: 1 << 40,
            latency_us: 0.0,
            queue_depth: 1024,
            logical_block_size: 512,
        }
    }
}

impl NullParams {
    /// The model's name.
    pub const MODEL: &'static str = "null";
    /// Its one preset.
    pub const PRESET: (&'static str, &'static str) =
        ("null", "completes every I/O at once (1 TiB, like null_blk)");

    /// The parameters with their values.
    pub fn list(&self) -> Vec<ParamValue> {
        vec![
            ParamValue {
                name: "capacity",
                value: self.capacity as f64,
                unit: ParamUnit::Bytes,
                help: "size",
            },
            ParamValue {
                name: "latency",
                value: self.latency_us,
                unit: ParamUnit::Micros,
                help: "time from submission to completion",
            },
            ParamValue {
                name: "queue_depth",
                value: f64::from(self.queue_depth),
                unit: ParamUnit::Count,
                help: "I/Os taken at once",
            },
            ParamValue {
                name: "logical_block_size",
                value: f64::from(self.logical_block_size),
                unit: ParamUnit::Bytes,
                help: "smallest addressable unit",
            },
        ]
    }

    /// Set a parameter from text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), ParamError> {
        let v = parse_listed(Self::MODEL, &self.list(), name, text)?;
        match name {
            "capacity" => self.capacity = v as u64,
            "latency" => self.latency_us = v,
            "queue_depth" => self.queue_depth = v as u32,
            _ => self.logical_block_size = v as u32,
        }
        Ok(())
    }
}

/// The "no such parameter" error, listing what exists.
pub(crate) fn unknown(model: &'static str, name: &str, params: &[ParamValue]) -> ParamError {
    ParamError::Unknown {
        model,
        name: name.to_string(),
        hint: String::new(),
        known: params.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
    }
}

/// Check `limits` and map the core's complaint to a parameter error.
pub(crate) fn checked_limits(model: &'static str, limits: Limits) -> Result<Limits, ParamError> {
    limits.validate().map_err(|e| ParamError::OutOfRange {
        model,
        name: "limits",
        value: 0.0,
        why: e.to_string(),
    })?;
    Ok(limits)
}

/// The null device.
#[derive(Clone, Debug)]
pub struct NullDevice {
    limits: Limits,
    latency: Nanos,
    queue_depth: u32,
    /// (completion time, tag), in submission order = completion order.
    pending: VecDeque<(Nanos, u32)>,
    stats: DeviceStats,
    busy_since: Nanos,
    writes: WriteNo,
    /// The media, and the writes in flight, if tracked.
    content: Option<Box<(ExtentMap, VecDeque<Flying>)>>,
}

/// A write in flight: `(done, write, lo, hi)`, in completion order.
type Flying = (Nanos, WriteNo, u64, u64);

impl NullDevice {
    /// A null device with these parameters.
    pub fn new(p: &NullParams) -> Result<NullDevice, ParamError> {
        // Bounded as the SSD's and the RAID's are: the device preallocates
        // its queue (found by the device_spec fuzz target, which ran out of
        // memory on queue_depth=222222222222222222220).
        if !(1..=65536).contains(&p.queue_depth) {
            return Err(ParamError::OutOfRange {
                model: NullParams::MODEL,
                name: "queue_depth",
                value: f64::from(p.queue_depth),
                why: "must be 1..=65536".into(),
            });
        }
        if !(p.latency_us >= 0.0 && p.latency_us <= 1e9) {
            return Err(ParamError::OutOfRange {
                model: NullParams::MODEL,
                name: "latency",
                value: p.latency_us,
                why: "must be 0..=1e9 us".into(),
            });
        }
        let lbs = u64::from(p.logical_block_size.max(1));
        let limits = checked_limits(
            NullParams::MODEL,
            Limits {
                logical_block_size: p.logical_block_size,
                capacity: (p.capacity / lbs) * lbs / 512,
                ..Limits::default()
            },
        )?;
        Ok(NullDevice {
            limits,
            latency: (p.latency_us * 1000.0) as Nanos,
            queue_depth: p.queue_depth,
            pending: VecDeque::with_capacity(p.queue_depth as usize),
            stats: DeviceStats::default(),
            busy_since: 0,
            writes: 0,
            content: None,
        })
    }
}

impl Device for NullDevice {
    fn describe(&self) -> String {
        format!(
            "null ({} GiB, {} us)",
            (self.limits.capacity * 512) >> 30,
            self.latency / 1000
        )
    }

    elevator_core::device_shape_fields!(rotational: false);

    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        if self.pending.is_empty() {
            self.busy_since = now;
        }
        self.pending.push_back((now + self.latency, io.tag));
        if numbered(io.op) {
            self.writes += 1;
            if let Some(c) = &mut self.content {
                let cap = self.limits.capacity;
                let lo = io.sector.min(cap);
                let hi = (io.sector + u64::from(io.sectors)).min(cap);
                c.1.push_back((now + self.latency, self.writes, lo, hi));
            }
        }
    }

    fn next_completion(&self) -> Option<Nanos> {
        self.pending.front().map(|&(t, _)| t)
    }

    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        if let Some(c) = &mut self.content {
            let (media, flying) = &mut **c;
            while let Some(&(t, w, lo, hi)) = flying.front()
                && t <= now
            {
                media.set_newer(lo, hi, w);
                flying.pop_front();
            }
        }
        while let Some(&(t, tag)) = self.pending.front() {
            if t > now {
                break;
            }
            self.pending.pop_front();
            self.stats.ios += 1;
            if self.pending.is_empty() {
                self.stats.busy_ns += t - self.busy_since;
            }
            done(tag, Outcome::Done);
        }
    }

    fn outstanding(&self) -> u32 {
        self.pending.len() as u32
    }

    fn stats(&self) -> DeviceStats {
        self.stats
    }
}

/// No cache: a completed write is on the media.
impl SimDevice for NullDevice {
    fn track_media(&mut self) {
        self.content.get_or_insert_with(Box::default);
    }

    fn media(&self) -> Option<&ExtentMap> {
        self.content.as_deref().map(|c| &c.0)
    }
}

#[cfg(test)]
mod tests {
    use crate::device::ModelSpec;

    #[test]
    fn queue_depth_is_bounded() {
        // The device_spec fuzz target ran out of memory on this one: the
        // queue is preallocated.
        let e = ModelSpec::parse("null,queue_depth=222222222222222222220")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("queue_depth") && e.contains("1..=65536"), "{e}");
        assert!(
            ModelSpec::parse("null,queue_depth=65536")
                .expect("parses")
                .build()
                .is_ok()
        );
    }
}
