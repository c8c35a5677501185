//! `ssd`: flash behind a controller with parallel channels.
//!
//! An I/O is cut into `stripe`-sized pieces that live on channels in turn
//! (piece `k` of the address space on channel `k mod channels`). Each channel
//! is a first-come first-served server: a piece costs the operation's latency
//! (`read_latency` for a flash page read, `write_latency` for a program into
//! the controller's buffer) plus its bytes at `channel_rate`. The host link
//! is one more server: it carries read data after the channels and write data
//! before them, at `link_rate`. A flush costs `flush_latency`, a discard
//! `trim_latency`. The I/O completes when its last piece has crossed.
//!
//! Completion times are fixed when an I/O is submitted, so the model never
//! reorders; an SSD's parallelism comes from its channels and its deep queue.
//! No garbage collection or wear is modelled.
//!
//! # Volatile write buffer (content only; the timing above is unchanged)
//!
//! A completed write is in the controller's DRAM buffer, not yet on flash:
//! it reaches flash `writeback` after it completed (default 2000 µs, an
//! assumption: controllers program buffered data within milliseconds), or
//! when a flush submitted after it completes, or when a later write with
//! PREFLUSH completes; a FUA write is on flash when it completes. A power
//! cut (`power_cut_at`) loses what is buffered, unless `plp=1` (power-loss
//! protection, as enterprise drives have: capacitors hold the power up long
//! enough to write the buffer, so every completed write survives). Both
//! presets are consumer drives: `plp=0`. This only matters when media
//! content is tracked (a write log, a power cut).
//!
//! Presets (from typical datasheets; channels as MQSim models them):
//! - `ssd-sata`: 960 GB, 8 channels, 80 µs reads, 25 µs buffered writes,
//!   200 MB/s per channel, 550 MB/s SATA link, NCQ 32 (about 10k IOPS at
//!   depth 1, 80k at depth 32, 530 MB/s sequential).
//! - `nvme`: 2 TB, 16 channels, 60 µs reads, 15 µs writes, 400 MB/s per
//!   channel, 3500 MB/s PCIe link, queue depth 1023.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use elevator_core::{BioFlags, Device, DeviceIo, DeviceStats, Limits, Nanos, Op, Outcome};

use super::media::{ExtentMap, SimDevice, WriteNo, numbered};
use super::null::checked_limits;
use super::param::{ParamError, ParamUnit, ParamValue, parse_listed};

/// Parameters of the SSD model.
#[derive(Clone, Debug, PartialEq)]
pub struct SsdParams {
    /// Size in bytes.
    pub capacity: u64,
    /// Independent flash channels.
    pub channels: u32,
    /// Bytes per stripe piece (the unit spread over channels).
    pub stripe: u64,
    /// Flash read latency per piece, µs.
    pub read_latency: f64,
    /// Program (buffered write) latency per piece, µs.
    pub write_latency: f64,
    /// Per-channel transfer rate, MB/s.
    pub channel_rate: f64,
    /// Host link rate, MB/s.
    pub link_rate: f64,
    /// Cost of a flush, µs.
    pub flush_latency: f64,
    /// Cost of a discard, µs.
    pub trim_latency: f64,
    /// Commands it takes at once.
    pub queue_depth: u32,
    /// Time a completed write stays in the volatile buffer, µs.
    pub writeback: f64,
    /// Power-loss protection: a power cut loses nothing completed.
    pub plp: bool,
}

impl SsdParams {
    /// The model's name.
    pub const MODEL: &'static str = "ssd";
    /// Its presets.
    pub const PRESETS: [(&'static str, &'static str); 2] = [
        (
            "ssd-sata",
            "SATA flash SSD, 960 GB, 8 channels, 550 MB/s link, NCQ 32",
        ),
        (
            "nvme",
            "NVMe flash SSD, 2 TB, 16 channels, 3.5 GB/s link, queue depth 1023",
        ),
    ];

    /// The preset called `name`.
    pub fn preset(name: &str) -> Option<SsdParams> {
        match name {
            "ssd-sata" => Some(SsdParams {
                capacity: 960_000_000_000,
                channels: 8,
                stripe: 16 << 10,
                read_latency: 80.0,
                write_latency: 25.0,
                channel_rate: 200.0,
                link_rate: 550.0,
                flush_latency: 500.0,
                trim_latency: 20.0,
                queue_depth: 32,
                writeback: 2000.0,
                plp: false,
            }),
            "nvme" => Some(SsdParams {
                capacity: 2_000_000_000_000,
                channels: 16,
                stripe: 16 << 10,
                read_latency: 60.0,
                write_latency: 15.0,
                channel_rate: 400.0,
                link_rate: 3500.0,
                flush_latency: 200.0,
                trim_latency: 10.0,
                queue_depth: 1023,
                writeback: 2000.0,
                plp: false,
            }),
            _ => None,
        }
    }

    /// The parameters with their values.
    pub fn list(&self) -> Vec<ParamValue> {
        let p = |name, value, unit, help| ParamValue {
            name,
            value,
            unit,
            help,
        };
        vec![
            p("capacity", self.capacity as f64, ParamUnit::Bytes, "size"),
            p(
                "channels",
                f64::from(self.channels),
                ParamUnit::Count,
                "independent flash channels",
            ),
            p(
                "stripe",
                self.stripe as f64,
                ParamUnit::Bytes,
                "bytes per piece spread over channels",
            ),
            p(
                "read_latency",
                self.read_latency,
                ParamUnit::Micros,
                "flash read per piece",
            ),
            p(
                "write_latency",
                self.write_latency,
                ParamUnit::Micros,
                "buffered program per piece",
            ),
            p(
                "channel_rate",
                self.channel_rate,
                ParamUnit::MBps,
                "transfer rate of one channel",
            ),
            p(
                "link_rate",
                self.link_rate,
                ParamUnit::MBps,
                "host link rate",
            ),
            p(
                "flush_latency",
                self.flush_latency,
                ParamUnit::Micros,
                "cost of a cache flush",
            ),
            p(
                "trim_latency",
                self.trim_latency,
                ParamUnit::Micros,
                "cost of a discard",
            ),
            p(
                "queue_depth",
                f64::from(self.queue_depth),
                ParamUnit::Count,
                "commands taken at once",
            ),
            p(
                "writeback",
                self.writeback,
                ParamUnit::Micros,
                "time a completed write stays in the volatile buffer (assumed)",
            ),
            p(
                "plp",
                if self.plp { 1.0 } else { 0.0 },
                ParamUnit::Bool,
                "power-loss protection: a power cut loses no completed write (consumer presets: 0)",
            ),
        ]
    }

    /// Set a parameter from text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), ParamError> {
        let v = parse_listed(Self::MODEL, &self.list(), name, text)?;
        match name {
            "capacity" => self.capacity = v as u64,
            "channels" => self.channels = v as u32,
            "stripe" => self.stripe = v as u64,
            "read_latency" => self.read_latency = v,
            "write_latency" => self.write_latency = v,
            "channel_rate" => self.channel_rate = v,
            "link_rate" => self.link_rate = v,
            "flush_latency" => self.flush_latency = v,
            "trim_latency" => self.trim_latency = v,
            "writeback" => self.writeback = v,
            "plp" => self.plp = v != 0.0,
            _ => self.queue_depth = v as u32,
        }
        Ok(())
    }
}

fn range(name: &'static str, value: f64, ok: bool, why: &str) -> Result<(), ParamError> {
    if ok {
        Ok(())
    } else {
        Err(ParamError::OutOfRange {
            model: SsdParams::MODEL,
            name,
            value,
            why: why.to_string(),
        })
    }
}

/// Nanoseconds to move `bytes` at `mb_s` MB/s.
#[inline]
fn xfer_ns(bytes: u64, mb_s: f64) -> Nanos {
    (bytes as f64 * 1000.0 / mb_s) as Nanos
}

/// The SSD.
#[derive(Clone, Debug)]
pub struct Ssd {
    p: SsdParams,
    limits: Limits,
    stripe_sectors: u64,
    read_ns: Nanos,
    write_ns: Nanos,
    flush_ns: Nanos,
    trim_ns: Nanos,
    /// When each channel is next free.
    channel_free: Vec<Nanos>,
    /// When the link is next free.
    link_free: Nanos,
    /// (completion time, submission sequence, tag).
    pending: BinaryHeap<Reverse<(Nanos, u64, u32)>>,
    seq: u64,
    stats: DeviceStats,
    busy_since: Nanos,
    writeback_ns: Nanos,
    /// Write submissions so far.
    writes: WriteNo,
    /// Which write the buffer and the flash hold, if asked.
    content: Option<Box<SsdContent>>,
}

/// A write in the volatile buffer.
#[derive(Clone, Copy, Debug)]
struct Buffered {
    wn: WriteNo,
    lo: u64,
    hi: u64,
    /// When it completes (is in the buffer).
    done: Nanos,
    /// When it is on flash.
    durable: Nanos,
}

#[derive(Clone, Debug, Default)]
struct SsdContent {
    buffer: Vec<Buffered>,
    flash: ExtentMap,
}

impl SsdContent {
    /// What is on flash by `now` goes there.
    fn settle(&mut self, now: Nanos) {
        let SsdContent { buffer, flash } = self;
        buffer.retain(|b| {
            if b.durable <= now {
                flash.set_newer(b.lo, b.hi, b.wn);
                false
            } else {
                true
            }
        });
    }

    /// Everything buffered is on flash by `t`.
    fn flushed_by(&mut self, t: Nanos) {
        for b in &mut self.buffer {
            b.durable = b.durable.min(t.max(b.done));
        }
    }
}

impl Ssd {
    /// An SSD with these parameters.
    pub fn new(p: &SsdParams) -> Result<Ssd, ParamError> {
        range(
            "channels",
            f64::from(p.channels),
            (1..=1024).contains(&p.channels),
            "1..=1024",
        )?;
        range(
            "queue_depth",
            f64::from(p.queue_depth),
            (1..=65535).contains(&p.queue_depth),
            "1..=65535",
        )?;
        range(
            "stripe",
            p.stripe as f64,
            p.stripe >= 4096 && p.stripe.is_power_of_two() && p.stripe <= 1 << 30,
            "a power of two from 4 KiB to 1 GiB",
        )?;
        for (name, v) in [
            ("read_latency", p.read_latency),
            ("write_latency", p.write_latency),
            ("flush_latency", p.flush_latency),
            ("trim_latency", p.trim_latency),
            ("writeback", p.writeback),
        ] {
            range(name, v, (0.0..=1e9).contains(&v), "0..=1e9 us")?;
        }
        for (name, v) in [("channel_rate", p.channel_rate), ("link_rate", p.link_rate)] {
            range(name, v, (0.001..=1e7).contains(&v), "0.001..=1e7 MB/s")?;
        }
        range(
            "capacity",
            p.capacity as f64,
            p.capacity >= p.stripe && p.capacity <= 1 << 60,
            "at least one stripe, at most 1 EiB",
        )?;
        let limits = checked_limits(
            SsdParams::MODEL,
            Limits {
                capacity: p.capacity / 4096 * 8,
                max_sectors: 2560,
                ..Limits::default()
            },
        )?;
        let us = |v: f64| (v * 1000.0) as Nanos;
        Ok(Ssd {
            limits,
            stripe_sectors: p.stripe / 512,
            read_ns: us(p.read_latency),
            write_ns: us(p.write_latency),
            flush_ns: us(p.flush_latency),
            trim_ns: us(p.trim_latency),
            channel_free: vec![0; p.channels as usize],
            link_free: 0,
            pending: BinaryHeap::with_capacity(p.queue_depth as usize),
            seq: 0,
            stats: DeviceStats::default(),
            busy_since: 0,
            writeback_ns: us(p.writeback),
            writes: 0,
            content: None,
            p: p.clone(),
        })
    }

    /// Run the pieces of `[sector, sector + sectors)` on their channels, each
    /// starting no earlier than `start` and costing `op_ns` plus its transfer;
    /// returns when the last one ends.
    fn channels(&mut self, sector: u64, sectors: u64, start: Nanos, op_ns: Nanos) -> Nanos {
        let n = self.channel_free.len() as u64;
        let mut end = start;
        let mut s = sector;
        let last = sector + sectors;
        while s < last {
            let piece = s / self.stripe_sectors;
            let piece_end = ((piece + 1) * self.stripe_sectors).min(last);
            let c = (piece % n) as usize;
            let begin = self.channel_free[c].max(start);
            let done = begin + op_ns + xfer_ns((piece_end - s) * 512, self.p.channel_rate);
            self.stats.transfer_ns += done - begin;
            self.channel_free[c] = done;
            end = end.max(done);
            s = piece_end;
        }
        end
    }

    /// The link carries `bytes` no earlier than `start`; returns when done.
    fn link(&mut self, bytes: u64, start: Nanos) -> Nanos {
        let begin = self.link_free.max(start);
        self.link_free = begin + xfer_ns(bytes, self.p.link_rate);
        self.link_free
    }
}

impl Device for Ssd {
    fn describe(&self) -> String {
        format!(
            "ssd ({} GB, {} channels, {} MB/s link)",
            self.p.capacity / 1_000_000_000,
            self.p.channels,
            self.p.link_rate
        )
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }

    fn rotational(&self) -> bool {
        false
    }

    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        if self.pending.is_empty() {
            self.busy_since = now;
        }
        let sectors = u64::from(io.sectors);
        let done = match io.op {
            Op::Read => {
                let media = self.channels(io.sector, sectors, now, self.read_ns);
                self.link(io.bytes(), media)
            }
            Op::Write => {
                let arrived = self.link(io.bytes(), now);
                self.channels(io.sector, sectors, arrived, self.write_ns)
            }
            // Write-zeroes needs no data over the link.
            Op::WriteZeroes => self.channels(io.sector, sectors, now, self.write_ns),
            Op::Discard => now + self.trim_ns,
            Op::Flush => {
                // Everything written before is durable once every channel is
                // idle and the flush itself is done.
                let idle = self.channel_free.iter().copied().max().unwrap_or(now);
                idle.max(now) + self.flush_ns
            }
        };
        if numbered(io.op) {
            self.writes += 1;
            if let Some(c) = &mut self.content {
                if io.flags.contains(BioFlags::PREFLUSH) {
                    c.flushed_by(done);
                }
                let lo = io.sector.min(self.limits.capacity);
                let hi = (io.sector + sectors).min(self.limits.capacity);
                let fua = io.flags.contains(BioFlags::FUA);
                c.buffer.push(Buffered {
                    wn: self.writes,
                    lo,
                    hi,
                    done,
                    durable: if fua { done } else { done + self.writeback_ns },
                });
            }
        } else if io.op == Op::Flush
            && let Some(c) = &mut self.content
        {
            c.flushed_by(done);
        }
        self.seq += 1;
        self.pending.push(Reverse((done, self.seq, io.tag)));
    }

    fn next_completion(&self) -> Option<Nanos> {
        self.pending.peek().map(|Reverse((t, _, _))| *t)
    }

    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        if let Some(c) = &mut self.content {
            c.settle(now);
        }
        while let Some(&Reverse((t, _, tag))) = self.pending.peek() {
            if t > now {
                break;
            }
            self.pending.pop();
            self.stats.ios += 1;
            if self.pending.is_empty() {
                self.stats.busy_ns += t.saturating_sub(self.busy_since);
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

/// Content tracking: see "Volatile write buffer" in the module docs.
impl SimDevice for Ssd {
    fn track_media(&mut self) {
        self.content.get_or_insert_with(Box::default);
    }

    fn media(&self) -> Option<&ExtentMap> {
        self.content.as_deref().map(|c| &c.flash)
    }

    fn volatile_cache(&self) -> bool {
        true
    }

    fn end_of_run(&mut self, now: Nanos) {
        if let Some(c) = &mut self.content {
            c.settle(now);
        }
    }

    fn power_cut(&mut self, now: Nanos) {
        let plp = self.p.plp;
        if let Some(c) = &mut self.content {
            c.settle(now);
            if plp {
                // The capacitors write out every completed write.
                for b in &mut c.buffer {
                    if b.done <= now {
                        b.durable = now;
                    }
                }
                c.settle(now);
            }
            c.buffer.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::BioFlags;

    fn io(tag: u32, op: Op, sector: u64, bytes: u32) -> DeviceIo {
        DeviceIo {
            tag,
            op,
            sector,
            sectors: bytes / 512,
            flags: BioFlags::NONE,
        }
    }

    /// Closed loop at `depth`: returns I/Os per second over `n` I/Os.
    fn iops(p: &SsdParams, depth: u32, bytes: u32, random: bool, n: u64) -> f64 {
        let mut d = Ssd::new(p).unwrap();
        let blocks = d.limits().capacity / u64::from(bytes / 512);
        let mut rng = elevator_core::rng::Rng::new(0x2545_F491_4F6C_DD1D);
        let mut next = 0u64;
        let mut pos = move || {
            if random {
                rng.below(blocks) * u64::from(bytes / 512)
            } else {
                next += u64::from(bytes / 512);
                next
            }
        };
        let mut now = 0;
        for tag in 0..depth {
            d.submit(io(tag, Op::Read, pos(), bytes), now);
        }
        let mut done = 0;
        while done < n {
            now = d.next_completion().unwrap();
            let mut tags = vec![];
            d.complete(now, &mut |t, _| tags.push(t));
            for t in tags {
                done += 1;
                d.submit(io(t, Op::Read, pos(), bytes), now);
            }
        }
        done as f64 / (now as f64 / 1e9)
    }

    #[test]
    fn sata_preset_figures() {
        let p = SsdParams::preset("ssd-sata").unwrap();
        let qd1 = iops(&p, 1, 4096, true, 2000);
        assert!((8_000.0..12_000.0).contains(&qd1), "QD1 {qd1}");
        let qd32 = iops(&p, 32, 4096, true, 20_000);
        assert!((60_000.0..100_000.0).contains(&qd32), "QD32 {qd32}");
        let mbs = iops(&p, 4, 1 << 20, false, 500) * 1.048576;
        assert!((450.0..560.0).contains(&mbs), "sequential {mbs} MB/s");
    }

    #[test]
    fn flush_waits_for_writes_and_presets_build() {
        let mut d = Ssd::new(&SsdParams::preset("nvme").unwrap()).unwrap();
        d.submit(io(1, Op::Write, 0, 1 << 20), 0);
        d.submit(io(2, Op::Flush, 0, 0), 0);
        let mut order = vec![];
        while let Some(t) = d.next_completion() {
            d.complete(t, &mut |tag, _| order.push((tag, t)));
        }
        assert_eq!(order.len(), 2);
        assert!(order[1].0 == 2 && order[1].1 >= order[0].1);
        let mut p = SsdParams::preset("ssd-sata").unwrap();
        p.set("channels", "0").unwrap();
        assert!(Ssd::new(&p).unwrap_err().to_string().contains("channels"));
        assert!(
            p.set("rpm", "1")
                .unwrap_err()
                .to_string()
                .contains("channel_rate")
        );
    }
}
