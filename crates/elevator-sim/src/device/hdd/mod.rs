//! `hdd`: a zoned hard disk on the virtual clock: seek curve, rotation, track
//! skew, an on-disk command queue (NCQ / TCQ) ordered by shortest positioning
//! time, a volatile write cache with destaging, and read-ahead.
//!
//! # Geometry
//!
//! `cylinders` × `heads` tracks in `zones` zones of equal cylinder ranges, from
//! the outer edge (zone 0, fastest) to the inner edge. A zone's sectors per
//! track follow its media rate, `rate × revolution / 512`, with the rate
//! falling linearly from `outer_rate` to `inner_rate` (recording density is
//! constant, so a track's length, and its sector count, falls linearly with
//! its radius). Sectors are 512 bytes. LBAs run outer to inner, cylinder by
//! cylinder, and within a cylinder head 0 to head `heads - 1` on every
//! cylinder (not serpentine). The device exposes `capacity` (0: all the zones
//! hold); the rest of the innermost tracks is unused, like a drive's spare
//! area.
//!
//! Each track starts `skew` sectors later (in angle) than the one before it:
//! a head-switch's worth of sectors after a head switch, a single-cylinder
//! seek's worth after a cylinder switch (the first track of a zone is skewed
//! against the last one of the zone before it the same way). A transfer that
//! crosses a track boundary therefore costs the switch plus under one sector of
//! slack, never a revolution.
//!
//! # Timing of one media operation
//!
//! 1. Command overhead: a command is ready `overhead` after it arrives; the
//!    drive decodes queued commands while the media works, so the overhead is
//!    only on the critical path when the drive was waiting for that command.
//! 2. Positioning: seek over the cylinder distance `d` (the curve below), or a
//!    head switch when only the head changes (seek and head change overlap:
//!    the larger counts), plus `write_settle` for writes after any movement.
//! 3. Rotation: all platters turn in phase; the angle at time `t` is
//!    `(t mod T) / T` with `T = 60 s / rpm` (integer nanoseconds). The drive
//!    waits until the first target sector's start passes under the head.
//! 4. Transfer: one track's worth of sectors takes one revolution; crossing a
//!    track adds the head switch (or single-cylinder seek) and the skew slack.
//!
//! `positioning_ns` in [`DeviceStats`] counts seeks, head switches and
//! rotational waits (including those inside a transfer), `transfer_ns` the
//! time sectors pass under the head; both count every media operation,
//! including destaging and read-ahead done while no request was outstanding,
//! so they may exceed `busy_ns`.
//!
//! # Seek curve (DiskSim's / Ruemmler & Wilkes' two-part form)
//!
//! `seek(d) = a + b·√d` for `1 ≤ d ≤ k`, `c + e·d` for `d > k`, `seek(0) = 0`.
//! Five conditions fix the five unknowns: `seek(1) = seek_t2t`,
//! `seek(D) = seek_full` (`D = cylinders - 1`), continuity at the knee `k`,
//! a smooth knee (`e = b / (2√k)`: the sqrt part is an arm that
//! accelerates and decelerates, the linear part one that also coasts at its
//! top speed, and the two meet with equal slopes), and the mean. For a given
//! knee, `a`, `b`, `c`, `e` follow in closed form; the knee is then found by
//! bisection so that the mean seek over uniformly random distinct start and
//! end cylinders (the distance density `2(D - x) / D²`, integrated in closed
//! form; for the presets' 10^5 cylinders it equals the discrete mean to
//! 10^-5) equals `seek_avg`. Moving the knee from 1 to `D` raises that mean monotonically
//! from about `t2t + (full - t2t) / 3` to about `t2t + 0.53 (full - t2t)`; an
//! average outside that range is refused. At run time the curve is a table:
//! exact nanoseconds for `d < 4096`, then at most 4096 points with linear
//! interpolation (error well under a microsecond).
//!
//! # Command queue (`ncq`)
//!
//! With `ncq > 1` the drive serves next the queued command with the shortest
//! positioning time (overhead still to run + seek + rotational wait) from
//! where the head is when it picks, over every queued command; ties go to the
//! oldest. A command older than `age_limit` is served first (oldest first).
//! With `ncq` 0 or 1 commands are served in arrival order. The next command is
//! picked the moment the previous media operation ends, among the commands
//! queued by then (a command submitted at that same instant, after the
//! completion, is not among them, as on a real drive).
//!
//! # Write cache, flush, FUA, read cache
//!
//! - `write_cache=1`: a write without FUA that fits (total dirty data at most
//!   `cache_size`, at most `cache_segments` separate dirty extents; a write
//!   merges with the dirty extents it overlaps or touches) completes once it
//!   has crossed the interface (`interface_rate`, one transfer at a time, after
//!   the command overhead). Dirty data is written back ("destaged", at most
//!   `max_sectors` at a time, the extent with the shortest positioning time
//!   first) whenever the drive has nothing else to do. A write that does not
//!   fit waits, in arrival order, and while one waits the drive's choice for
//!   the next media operation includes destaging dirty extents, by the same
//!   shortest-positioning rule as queued commands. A write larger than the
//!   cache goes to the media.
//! - FLUSH and PREFLUSH are ordered like a non-queued ATA command: the flush
//!   starts once every command submitted before it has completed, destages all
//!   dirty data (shortest positioning first), and completes when that is done
//!   (no sooner than `overhead` after it arrived); commands submitted after it
//!   wait until it completes. A write with PREFLUSH does the same flush, then
//!   proceeds as a write (its overhead counted from then).
//! - FUA writes, writes with the cache off and WRITE ZEROES are media writes
//!   (queued, scheduled with the reads).
//! - DISCARD completes after the command overhead and touches nothing (disks
//!   do not implement it).
//! - Reads wholly inside a dirty extent or the read segment (the last media
//!   read and its read-ahead) are cache hits: they complete after the
//!   overhead and the interface transfer. Writes to the media invalidate an
//!   overlapping read segment.
//! - Read-ahead: when a media read ends and the drive has nothing queued, it
//!   keeps reading up to `read_ahead` bytes past it into the read segment. A
//!   read that starts inside the segment or its read-ahead range rides along
//!   (the read-ahead stretches to cover it and `read_ahead` past it), so a
//!   sequential stream at queue depth 1 never loses a revolution. Any command
//!   that needs the media stops the read-ahead at once (after the data of the
//!   reads riding on it).
//! - Not modelled: a read only partly in the read segment is a media read of
//!   all of it; there is one read segment; a media read's interface transfer
//!   overlaps the media (it completes when its last sector is read). The model
//!   keeps timing, not data: a write into dirty data that is being destaged
//!   counts as destaged with it.
//!
//! # Media content and power cuts
//!
//! Asked to ([`SimDevice::track_media`]: a write log, a power cut), the
//! drive keeps which write each sector holds: in the write cache (a write
//! accepted into it) and on the platters (a media write when it ends, a
//! destage when it ends; a media write makes older cached content of its
//! sectors stale). A power cut (`power_cut_at`, see `fault.rs`) loses the
//! cache: what was acknowledged from it and neither destaged nor flushed is
//! not on the platters; a media operation under way at the cut did not
//! happen. The drive has a cache to lose even with `write_cache=0` (it then
//! holds nothing). No new parameters.
//!
//! # Engine notes
//!
//! - [`Device::next_completion`] is exact: the time of the next completion if
//!   nothing more is submitted. A submission can move it either way (a cache
//!   hit completes sooner; a new command may be picked before the one the
//!   answer counted on), so ask again after every `submit`.
//! - Work the drive does on its own (destaging, read-ahead) runs on the
//!   virtual clock between calls, whether or not anything is outstanding, and
//!   is caught up with on the next call; it never completes anything itself,
//!   so an idle drive with dirty data still answers `None`. Destaging while
//!   idle delays a command that arrives meanwhile by up to one destage
//!   (`max_sectors`) plus its positioning.
//! - A command that exceeds the capacity is cut at it (one starting beyond
//!   it completes after the overhead); more than `queue_depth` outstanding is
//!   tolerated (the slots grow) but not what a drive allows.
//!
//! # Cost
//!
//! Per-command state lives in slots preallocated to the queue depth, queued
//! commands in an array sorted by cylinder, dirty data in a sorted interval
//! set: after warm-up nothing is allocated per I/O. The shortest-positioning
//! pick walks outward from the head's cylinder and stops on each side once
//! the seek alone exceeds the best cost found (seek table lookups, integer
//! rotation with a multiply-based modulo), so it costs a handful of
//! evaluations rather than one per queued command; it equals a full scan
//! (tested). Locating a sector takes three multiply-based divisions.

// Layout: `params` (parameters, presets, validation helpers), `seek` (seek
// curve fit and table), `geometry` (zones, LBA to location, the build-time
// `Geo`), `timing` (rotation, positioning and transfer times on a `Geo`),
// `mechanics` (where the heads are, positioning cost, the
// shortest-positioning search), `queue` (the command queue: queued commands
// by cylinder and in arrival order), `cache` (the write cache's dirty data,
// the read segment and read-ahead), `drive` (the drive `State`: commands,
// barriers, the event loop, choosing and ending media operations, over the
// parts above), and this file (`Hdd` and its `Device` impl, through
// `State`'s methods only). Dependencies point one way: `drive` → `queue`,
// `cache` → `mechanics` → `geometry`, `timing`, `seek`.

mod cache;
mod drive;
mod geometry;
mod mechanics;
mod params;
mod queue;
mod sata_2011;
mod seek;
mod timing;

use elevator_core::{Device, DeviceIo, DeviceStats, HeadSample, Limits, Nanos, Outcome};

use self::drive::{FitsMemo, State};
use self::geometry::Geo;
use super::media::{ExtentMap, SimDevice};
use super::param::ParamError;

pub use self::geometry::HddLocation;
pub use self::params::HddParams;
pub use self::seek::SeekCurve;

/// A time that never comes.
const NEVER: Nanos = Nanos::MAX;

// ---------------------------------------------------------------------------
// The device
// ---------------------------------------------------------------------------

/// The hard-disk model. See the module documentation.
#[derive(Debug)]
pub struct Hdd {
    geo: Geo,
    st: State,
    /// Where predictions run.
    scratch: State,
    next_done: Option<Nanos>,
    /// The last answer of the writes-waiting fast path of `predict`.
    fits_memo: FitsMemo,
    depth: u32,
    outstanding: u32,
}

impl Hdd {
    /// A disk with these parameters, every value checked.
    pub fn new(p: &HddParams) -> Result<Hdd, ParamError> {
        let geo = Geo::new(p)?;
        let depth = p.ncq.max(1);
        let st = State::new(depth as usize, geo.cache_segments);
        Ok(Hdd {
            scratch: st.clone(),
            st,
            geo,
            next_done: None,
            fits_memo: None,
            depth,
            outstanding: 0,
        })
    }

    /// Seek time over `distance` cylinders, ns, as the model uses it.
    pub fn seek_ns(&self, distance: u32) -> u64 {
        u64::from(self.geo.seek.ns(distance.min(self.geo.cylinders - 1)))
    }

    /// The fitted seek curve.
    pub fn seek_curve(&self) -> SeekCurve {
        self.geo.curve
    }

    /// Cylinders.
    pub fn cylinders(&self) -> u32 {
        self.geo.cylinders
    }

    /// One revolution, ns.
    pub fn revolution_ns(&self) -> u64 {
        self.geo.rev
    }

    /// Head switch time, ns.
    pub fn head_switch_ns(&self) -> u64 {
        u64::from(self.geo.head_switch)
    }

    /// Where `sector` is (clamped to the capacity).
    pub fn locate(&self, sector: u64) -> HddLocation {
        let loc = self.geo.locate(sector.min(self.geo.capacity - 1));
        HddLocation {
            zone: loc.zone,
            cylinder: loc.cyl,
            head: loc.head,
            sector: loc.sector,
            sectors_per_track: self.geo.zones[loc.zone as usize].spt,
        }
    }

    /// Time of the next completion if nothing more is submitted.
    fn predict(&mut self) -> Option<Nanos> {
        self.st
            .predict(&self.geo, &mut self.scratch, &mut self.fits_memo)
    }
}

impl Device for Hdd {
    fn describe(&self) -> String {
        let g = &self.geo;
        format!(
            "hdd ({} GB, {} rpm, {} zones {}-{} MB/s, {}, write cache {})",
            g.capacity * 512 / 1_000_000_000,
            g.rpm,
            g.zones.len(),
            g.outer_rate,
            g.inner_rate,
            if g.ncq > 1 {
                format!("queue {}", g.ncq)
            } else {
                "FIFO".to_string()
            },
            if g.write_cache { "on" } else { "off" }
        )
    }

    fn limits(&self) -> Limits {
        self.geo.limits
    }

    fn queue_depth(&self) -> u32 {
        self.depth
    }

    fn rotational(&self) -> bool {
        true
    }

    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.st.submit(&self.geo, io, now);
        self.outstanding += 1;
        self.next_done = self.predict();
    }

    fn next_completion(&self) -> Option<Nanos> {
        self.next_done
    }

    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        let now = now.max(self.st.clock());
        let moved = self.st.advance(&self.geo, now);
        if !moved && !self.st.has_done() {
            return;
        }
        for tag in self.st.take_done() {
            self.outstanding = self.outstanding.saturating_sub(1);
            done(tag, Outcome::Done);
        }
        self.next_done = self.predict();
    }

    fn outstanding(&self) -> u32 {
        self.outstanding
    }

    fn stats(&self) -> DeviceStats {
        self.st.stats()
    }

    /// Samples are taken when a media operation (a request, a destage, a
    /// read-ahead) ends: its first sector's time and cylinder, and its end
    /// if it moved to another cylinder. An operation still under way when
    /// the samples are taken is not in them yet.
    fn record_heads(&mut self, cap: usize) {
        self.st.record_heads(cap);
    }

    fn take_heads(&mut self, out: &mut Vec<HeadSample>) -> u64 {
        self.st.take_heads(out)
    }
}

/// Content tracking: dirty data is cached content until destaged; media
/// writes (FUA, cache off, write-zeroes, writes larger than the cache) and
/// destages put content on the media; a power cut loses the cache.
impl SimDevice for Hdd {
    fn track_media(&mut self) {
        self.st.track_content();
    }

    fn media(&self) -> Option<&ExtentMap> {
        self.st.content().map(|c| &c.media)
    }

    /// It has one, even with `write_cache=0` (then a power cut loses
    /// nothing).
    fn volatile_cache(&self) -> bool {
        true
    }

    /// The drive keeps destaging while idle until `now`.
    fn end_of_run(&mut self, now: Nanos) {
        let now = now.max(self.st.clock());
        self.st.advance(&self.geo, now);
        self.next_done = self.predict();
    }

    fn power_cut(&mut self, _now: Nanos) {
        self.st.lose_cache();
    }
}
