//! `raid0`: a stripe over identical member devices of any model.
//!
//! The address space is cut into `chunk`-sized chunks dealt to the members in
//! turn: chunk `k` lives on member `k mod members` at member chunk
//! `k div members`. An I/O is split at chunk boundaries into parts, one per
//! chunk it touches, each sent to its member; it completes when its last part
//! does. A flush goes to every member, and so does a write's PREFLUSH (as a
//! flush of every member, sent before the write's parts). A member that already has its queue
//! depth outstanding holds further parts in a first-in first-out list, and
//! takes the next one the instant it completes something.
//!
//! The RAID takes `queue_depth` I/Os at once (default: the members' depths
//! added up, like a controller with a deep queue) and tells the queue its
//! chunk size (`chunk_sectors`), so requests never cross a chunk, as Linux's
//! md does.
//!
//! Parameters: `members` (8), `member` (a preset name, `hdd-sas-10k`), `chunk`
//! (64 KiB), `queue_depth` (0 = automatic).
//!
//! Media content (for a write log, a power cut): the array numbers its
//! writes, each member its own; the array remembers which array write each
//! member write was part of, and puts the members' media together, chunk by
//! chunk, when the run ends or the power is cut. A power cut reaches every
//! member (the array takes `power_cut_at` when its members have caches).
//! Preset: `raid0-8x-sas-10k`, eight 10K SAS disks, like the fast RAID of the 2011 report on
//! CFQ's idling (LKML, "CFQ: fixing performance issues").

use std::collections::VecDeque;

use elevator_core::{BioFlags, Device, DeviceIo, DeviceStats, Limits, Nanos, Op, Outcome, Status};

use super::ModelSpec;
use super::media::{ExtentMap, SimDevice, WriteNo, numbered};
use super::null::{checked_limits, unknown};
use super::param::{ParamError, ParamUnit, ParamValue, parse_param};

/// Parameters of a RAID-0.
#[derive(Clone, Debug, PartialEq)]
pub struct Raid0Params {
    /// Number of member devices.
    pub members: u32,
    /// The members' preset.
    pub member: String,
    /// Stripe chunk in bytes (a power of two).
    pub chunk: u64,
    /// I/Os the RAID takes at once; 0 for the members' depths added up.
    pub queue_depth: u32,
}

impl Raid0Params {
    /// The model's name.
    pub const MODEL: &'static str = "raid0";
    /// Its presets.
    pub const PRESETS: [(&'static str, &'static str); 1] = [(
        "raid0-8x-sas-10k",
        "RAID-0 of eight 10K SAS disks, 64 KiB chunks (the fast RAID of the 2011 CFQ idling report)",
    )];

    /// The preset called `name`.
    pub fn preset(name: &str) -> Option<Raid0Params> {
        (name == "raid0-8x-sas-10k").then(|| Raid0Params {
            members: 8,
            member: "hdd-sas-10k".to_string(),
            chunk: 64 << 10,
            queue_depth: 0,
        })
    }

    /// The numeric parameters with their values (`member` is a preset name:
    /// see [`Raid0Params::member`]).
    pub fn list(&self) -> Vec<ParamValue> {
        vec![
            ParamValue {
                name: "members",
                value: f64::from(self.members),
                unit: ParamUnit::Count,
                help: "member devices (the member preset is the 'member' parameter)",
            },
            ParamValue {
                name: "chunk",
                value: self.chunk as f64,
                unit: ParamUnit::Bytes,
                help: "stripe chunk",
            },
            ParamValue {
                name: "queue_depth",
                value: f64::from(self.queue_depth),
                unit: ParamUnit::Count,
                help: "I/Os taken at once (0: the members' depths added up)",
            },
        ]
    }

    /// Set a parameter from text (`member` takes a preset name).
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), ParamError> {
        if name == "member" {
            self.member = text.to_string();
            return Ok(());
        }
        let list = self.list();
        let unit = list
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.unit)
            .ok_or_else(|| {
                let mut known = list.clone();
                known.push(ParamValue {
                    name: "member",
                    value: 0.0,
                    unit: ParamUnit::Count,
                    help: "",
                });
                unknown(Self::MODEL, name, &known)
            })?;
        let v = parse_param(Self::MODEL, name, unit, text)?;
        match name {
            "members" => self.members = v as u32,
            "chunk" => self.chunk = v as u64,
            _ => self.queue_depth = v as u32,
        }
        Ok(())
    }
}

fn bad(name: &'static str, value: f64, why: impl Into<String>) -> ParamError {
    ParamError::OutOfRange {
        model: Raid0Params::MODEL,
        name,
        value,
        why: why.into(),
    }
}

/// One RAID I/O in flight.
#[derive(Clone, Copy, Debug)]
struct Slot {
    tag: u32,
    parts_left: u32,
    /// Parts that carry data (numbered first; a preflush's flushes of
    /// every member come after them).
    data_parts: u32,
    /// Sectors of the I/O's first part (later parts are whole chunks).
    first_part: u64,
    /// Earliest failure: (byte offset, status).
    failure: Option<(u64, Status)>,
    in_use: bool,
}

/// Parts per I/O are numbered in the member tag's low bits.
const PART_BITS: u32 = 16;

/// The RAID-0 device.
pub struct Raid0 {
    members: Vec<Box<dyn SimDevice + Send>>,
    member_depth: Vec<u32>,
    waiting: Vec<VecDeque<DeviceIo>>,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    chunk: u64,
    queue_depth: u32,
    limits: Limits,
    rotational: bool,
    describe: String,
    /// I/Os refused at submission (only if an engine breaks the protocol),
    /// reported at the time they came: (time, tag, outcome).
    completed: Vec<(Nanos, u32, Outcome)>,
    stats: DeviceStats,
    busy_since: Nanos,
    outstanding: u32,
    /// Writes submitted to the array.
    writes: WriteNo,
    /// Media content, if tracked.
    content: Option<Box<RaidContent>>,
}

/// Which array write each member write was part of, and the array's media
/// as last put together.
#[derive(Debug, Default)]
struct RaidContent {
    /// Per member, per member write number (index `n - 1`): the array write.
    parts: Vec<Vec<WriteNo>>,
    media: ExtentMap,
}

impl std::fmt::Debug for Raid0 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe)
    }
}

impl Raid0 {
    /// A RAID-0 with these parameters.
    pub fn new(p: &Raid0Params) -> Result<Raid0, ParamError> {
        if !(1..=256).contains(&p.members) {
            return Err(bad("members", f64::from(p.members), "1..=256"));
        }
        if p.chunk < 4096 || !p.chunk.is_power_of_two() || p.chunk > 1 << 30 {
            return Err(bad(
                "chunk",
                p.chunk as f64,
                "a power of two from 4 KiB to 1 GiB",
            ));
        }
        let spec = ModelSpec::preset(&p.member).map_err(|e| ParamError::BadValue {
            model: Raid0Params::MODEL,
            name: "member".into(),
            text: p.member.clone(),
            why: e.to_string(),
        })?;
        if matches!(spec.kind, super::Model::Raid0(_)) {
            return Err(ParamError::BadValue {
                model: Raid0Params::MODEL,
                name: "member".into(),
                text: p.member.clone(),
                why: "a RAID cannot be a member of a RAID".into(),
            });
        }
        let members = (0..p.members)
            .map(|_| spec.build_sim())
            .collect::<Result<Vec<_>, _>>()?;
        let ml = members[0].limits();
        let chunk_sectors = p.chunk / 512;
        if chunk_sectors < u64::from(ml.block_sectors()) {
            return Err(bad(
                "chunk",
                p.chunk as f64,
                "smaller than a member's logical block",
            ));
        }
        let per_member = ml.capacity / chunk_sectors * chunk_sectors;
        if per_member == 0 {
            return Err(bad("chunk", p.chunk as f64, "larger than a member"));
        }
        let member_depth: Vec<u32> = members.iter().map(|m| m.queue_depth()).collect();
        let auto_depth: u32 = member_depth.iter().copied().fold(0u32, u32::saturating_add);
        let queue_depth = if p.queue_depth == 0 {
            auto_depth.min(65536)
        } else {
            p.queue_depth
        };
        if queue_depth == 0 || queue_depth > 65536 {
            return Err(bad("queue_depth", f64::from(queue_depth), "1..=65536"));
        }
        let limits = checked_limits(
            Raid0Params::MODEL,
            Limits {
                capacity: per_member * u64::from(p.members),
                logical_block_size: ml.logical_block_size,
                max_sectors: ml.max_sectors.min(chunk_sectors as u32),
                chunk_sectors: chunk_sectors as u32,
                ..Limits::default()
            },
        )?;
        let describe = format!(
            "raid0 ({} x {}, {} KiB chunks, {} GiB)",
            p.members,
            members[0].describe(),
            p.chunk >> 10,
            (limits.capacity * 512) >> 30
        );
        let slot = Slot {
            tag: 0,
            parts_left: 0,
            data_parts: 0,
            first_part: 0,
            failure: None,
            in_use: false,
        };
        Ok(Raid0 {
            rotational: members[0].rotational(),
            waiting: (0..p.members).map(|_| VecDeque::new()).collect(),
            slots: vec![slot; queue_depth as usize],
            free_slots: (0..queue_depth).rev().collect(),
            member_depth,
            members,
            chunk: chunk_sectors,
            queue_depth,
            limits,
            describe,
            completed: Vec::new(),
            stats: DeviceStats::default(),
            busy_since: 0,
            outstanding: 0,
            writes: 0,
            content: None,
        })
    }

    /// The members' media as the array's.
    fn gather(&mut self) {
        let Some(c) = &mut self.content else {
            return;
        };
        let (n, chunk) = (self.members.len() as u64, self.chunk);
        let mut media = ExtentMap::new();
        for (m, dev) in self.members.iter().enumerate() {
            let Some(mm) = dev.media() else {
                continue;
            };
            for (lo, hi, w) in mm.iter() {
                let Some(&aw) = c.parts[m].get((w as usize).wrapping_sub(1)) else {
                    debug_assert!(false, "raid0: a member write the array did not send");
                    continue;
                };
                let mut s = lo;
                while s < hi {
                    let k = s / chunk;
                    let e = ((k + 1) * chunk).min(hi);
                    let a = (k * n + m as u64) * chunk + s % chunk;
                    media.set(a, a + (e - s), aw);
                    s = e;
                }
            }
        }
        c.media = media;
    }

    fn send(&mut self, member: usize, io: DeviceIo, now: Nanos) {
        if numbered(io.op)
            && let Some(c) = &mut self.content
        {
            // Members take parts in the order they are sent (waiting parts
            // first in, first out).
            c.parts[member].push(self.writes);
        }
        if self.members[member].outstanding() < self.member_depth[member] {
            self.members[member].submit(io, now);
        } else {
            self.waiting[member].push_back(io);
        }
    }

    /// A part of slot `slot` ended.
    fn part_done(
        &mut self,
        tag: u32,
        outcome: Outcome,
        now: Nanos,
        done: &mut dyn FnMut(u32, Outcome),
    ) {
        let slot_ix = (tag >> PART_BITS) as usize;
        let part = u64::from(tag & ((1 << PART_BITS) - 1));
        let chunk = self.chunk;
        let s = &mut self.slots[slot_ix];
        if let Outcome::Failed { status, good_bytes } = outcome {
            let part_start = if part == 0 || part >= u64::from(s.data_parts) {
                0
            } else {
                (s.first_part + (part - 1) * chunk) * 512
            };
            let at = part_start + good_bytes;
            if s.failure.is_none_or(|(f, _)| at < f) {
                s.failure = Some((at, status));
            }
        }
        s.parts_left -= 1;
        if s.parts_left > 0 {
            return;
        }
        s.in_use = false;
        let (tag, failure) = (s.tag, s.failure);
        self.free_slots.push(slot_ix as u32);
        self.outstanding -= 1;
        self.stats.ios += 1;
        if self.outstanding == 0 {
            self.stats.busy_ns += now.saturating_sub(self.busy_since);
        }
        let outcome = match failure {
            None => Outcome::Done,
            Some((good_bytes, status)) => Outcome::Failed { status, good_bytes },
        };
        done(tag, outcome);
    }
}

impl Device for Raid0 {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    elevator_core::device_shape_fields!();

    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        if numbered(io.op) {
            self.writes += 1;
        }
        if io.op != Op::Flush && io.sectors == 0 {
            // Nothing to send (a torn write that kept nothing): done.
            self.completed.push((now, io.tag, Outcome::Done));
            return;
        }
        let Some(slot_ix) = self.free_slots.pop() else {
            // The engine keeps to queue_depth; a caller that does not gets
            // the I/O failed rather than a lost completion.
            self.completed.push((
                now,
                io.tag,
                Outcome::Failed {
                    status: Status::IoError,
                    good_bytes: 0,
                },
            ));
            return;
        };
        if self.outstanding == 0 {
            self.busy_since = now;
        }
        self.outstanding += 1;
        let n = self.members.len() as u64;
        let chunk = self.chunk;
        let base = slot_ix << PART_BITS;
        if io.op == Op::Flush {
            self.slots[slot_ix as usize] = Slot {
                tag: io.tag,
                parts_left: n as u32,
                data_parts: 0,
                first_part: 0,
                failure: None,
                in_use: true,
            };
            for m in 0..self.members.len() {
                let part = DeviceIo { tag: base, ..io };
                self.send(m, part, now);
            }
            return;
        }
        let start = io.sector;
        let end = io.sector + u64::from(io.sectors);
        let first_part = (chunk - start % chunk).min(end - start);
        let parts = (end - start - first_part).div_ceil(chunk) + 1;
        // A write with PREFLUSH flushes every member first, as md does, not
        // only those its data goes to.
        let preflush = io.flags.contains(BioFlags::PREFLUSH);
        let flushes = if preflush { n } else { 0 };
        self.slots[slot_ix as usize] = Slot {
            tag: io.tag,
            parts_left: (parts + flushes) as u32,
            data_parts: parts as u32,
            first_part,
            failure: None,
            in_use: true,
        };
        for m in 0..flushes {
            let flush = DeviceIo {
                tag: base | (parts + m) as u32,
                op: Op::Flush,
                sector: 0,
                sectors: 0,
                flags: BioFlags::NONE,
            };
            self.send(m as usize, flush, now);
        }
        let flags = io.flags.without(BioFlags::PREFLUSH);
        let mut s = start;
        let mut k = 0u32;
        while s < end {
            let c = s / chunk;
            let part_end = ((c + 1) * chunk).min(end);
            let member = (c % n) as usize;
            let member_sector = (c / n) * chunk + s % chunk;
            let part = DeviceIo {
                tag: base | k,
                sector: member_sector,
                sectors: (part_end - s) as u32,
                flags,
                ..io
            };
            self.send(member, part, now);
            s = part_end;
            k += 1;
        }
    }

    fn next_completion(&self) -> Option<Nanos> {
        let refused = self.completed.first().map(|&(t, _, _)| t);
        let members = self
            .members
            .iter()
            .filter_map(|m| m.next_completion())
            .min();
        refused.into_iter().chain(members).min()
    }

    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        for (_, tag, outcome) in std::mem::take(&mut self.completed) {
            done(tag, outcome);
        }
        let mut parts = Vec::new();
        // Members' completions in time order, so that a part waiting for a
        // member starts the instant it has room.
        while let Some((m, t)) = self
            .members
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.next_completion().map(|t| (i, t)))
            .min_by_key(|&(i, t)| (t, i))
            .filter(|&(_, t)| t <= now)
        {
            parts.clear();
            self.members[m].complete(t, &mut |tag, o| parts.push((tag, o)));
            for &(tag, o) in &parts {
                self.part_done(tag, o, t, done);
            }
            while self.members[m].outstanding() < self.member_depth[m] {
                let Some(io) = self.waiting[m].pop_front() else {
                    break;
                };
                self.members[m].submit(io, t);
            }
        }
    }

    fn outstanding(&self) -> u32 {
        self.outstanding
    }

    fn stats(&self) -> DeviceStats {
        let mut s = self.stats;
        for m in &self.members {
            let ms = m.stats();
            s.positioning_ns += ms.positioning_ns;
            s.transfer_ns += ms.transfer_ns;
        }
        s
    }

    /// Member 0's heads (the members' heads move independently; one stands
    /// for the array in a head-position plot).
    fn record_heads(&mut self, cap: usize) {
        if let Some(m) = self.members.first_mut() {
            m.record_heads(cap);
        }
    }

    fn take_heads(&mut self, out: &mut Vec<elevator_core::HeadSample>) -> u64 {
        self.members.first_mut().map_or(0, |m| m.take_heads(out))
    }
}

/// See "Media content" in the module docs: the array's media is put
/// together at the end of the run and at a power cut.
impl SimDevice for Raid0 {
    fn track_media(&mut self) {
        for m in &mut self.members {
            m.track_media();
        }
        let parts = vec![Vec::new(); self.members.len()];
        self.content.get_or_insert_with(|| {
            Box::new(RaidContent {
                parts,
                media: ExtentMap::new(),
            })
        });
    }

    fn media(&self) -> Option<&ExtentMap> {
        self.content.as_deref().map(|c| &c.media)
    }

    fn volatile_cache(&self) -> bool {
        self.members.iter().any(|m| m.volatile_cache())
    }

    fn end_of_run(&mut self, now: Nanos) {
        for m in &mut self.members {
            m.end_of_run(now);
        }
        self.gather();
    }

    fn power_cut(&mut self, now: Nanos) {
        for m in &mut self.members {
            m.power_cut(now);
        }
        self.gather();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::BioFlags;

    fn raid(members: u32, member: &str, chunk: u64) -> Raid0 {
        Raid0::new(&Raid0Params {
            members,
            member: member.into(),
            chunk,
            queue_depth: 0,
        })
        .unwrap()
    }

    fn run_all(r: &mut Raid0) -> Vec<(u32, Nanos, Outcome)> {
        let mut out = vec![];
        while let Some(t) = r.next_completion() {
            r.complete(t, &mut |tag, o| out.push((tag, t, o)));
        }
        out
    }

    #[test]
    fn splits_at_chunks_and_completes_once() {
        let mut r = raid(4, "ssd-sata", 64 << 10);
        assert_eq!(r.limits().chunk_sectors, 128);
        // 256 KiB starting mid-chunk: 5 parts over 4 members.
        r.submit(
            DeviceIo {
                tag: 7,
                op: Op::Read,
                sector: 64,
                sectors: 512,
                flags: BioFlags::NONE,
            },
            0,
        );
        r.submit(
            DeviceIo {
                tag: 8,
                op: Op::Flush,
                sector: 0,
                sectors: 0,
                flags: BioFlags::NONE,
            },
            0,
        );
        let done = run_all(&mut r);
        assert_eq!(done.iter().filter(|d| d.0 == 7).count(), 1);
        assert_eq!(done.iter().filter(|d| d.0 == 8).count(), 1);
        assert_eq!(r.outstanding(), 0);
        assert_eq!(r.stats().ios, 2);
    }

    #[test]
    fn members_share_the_load() {
        // Eight 4 KiB reads in eight different chunks run in parallel: on one
        // null-latency-free SSD member each, they finish together.
        let mut r = raid(8, "ssd-sata", 64 << 10);
        for i in 0..8u32 {
            r.submit(
                DeviceIo {
                    tag: i,
                    op: Op::Read,
                    sector: u64::from(i) * 128,
                    sectors: 8,
                    flags: BioFlags::NONE,
                },
                0,
            );
        }
        let done = run_all(&mut r);
        let first = done[0].1;
        assert!(done.iter().all(|d| d.1 == first), "{done:?}");
    }

    #[test]
    fn bad_parameters_are_named() {
        let refusal = |p: &Raid0Params| Raid0::new(p).unwrap_err().to_string();
        let mut p = Raid0Params::preset("raid0-8x-sas-10k").unwrap();
        p.set("chunk", "3k").unwrap();
        assert!(refusal(&p).contains("chunk"));
        let mut p = Raid0Params::preset("raid0-8x-sas-10k").unwrap();
        p.set("member", "raid0-8x-sas-10k").unwrap();
        assert!(refusal(&p).contains("cannot be a member"));
        p.set("member", "floppy").unwrap();
        assert!(refusal(&p).contains("unknown device 'floppy'"));
        assert!(
            p.set("stripes", "4")
                .unwrap_err()
                .to_string()
                .contains("member")
        );
    }
}
