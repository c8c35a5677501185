//! What a job clone's next I/O is: its direction (`rw`, `rwmixread`), its
//! file (`nrfiles`, `file_service_type`), its offset and its length; and
//! when the job has issued all it should (`size`, `io_size`, `number_ios`,
//! `loops`, `time_based`).
//!
//! [`Pattern`] is the whole of that choice, apart from timing: the
//! [`super::Worker`] decides *when* to issue, the pattern *what*. Every
//! option follows fio 3.33's documented and observed behaviour:
//!
//! - **Block sizes**, per direction: `bssplit` (weighted choice) over
//!   `bsrange` over `bs`. A `bsrange` length is drawn as fio's runs show:
//!   uniform in `[min, min + max)`, rounded down to a multiple of `min`
//!   (of 512 with `bs_unaligned`: elevator works in sectors), capped at
//!   `max` (so `3k-10k` gives 3k, 6k and 9k 30 % each and 10k 10 %).
//! - **Sequential offsets**: a cursor per file and direction (fio's mixed
//!   `rw` reads and writes each go through the file on their own),
//!   wrapping to the region's start when the next block would pass its
//!   end. `rw=read:N` skips `N` bytes after every I/O (holes; the holes do
//!   not count towards the amount).
//! - **Random offsets**: multiples of `blockalign` (default: the
//!   direction's smallest block size) from the region's start, drawn by
//!   `random_distribution` ([`super::distribution`]). With the random map
//!   (fio's default, for uniform offsets only: fio drops the map for other
//!   distributions and for `blockalign`), a block already taken gives way
//!   to the next free one after it, wrapping (as fio); a full map starts a
//!   new pass that repeats the first one's order (as fio with
//!   `randrepeat`). `random_generator=lfsr` walks a full-period sequence
//!   instead, no map. `norandommap`: uniform with replacement.
//!   `tausworthe`/`tausworthe64` draw from elevator's generator: the same
//!   distributions as fio, never fio's numbers.
//! - **`rw=randread:N`**: a new random offset every `N` I/Os; in between,
//!   `rw_sequencer=sequential` follows on from the last I/O (a follow-on
//!   that would pass the region's end draws a new offset instead, without
//!   restarting the count, as fio) and `identical` repeats the offset.
//!   Follow-ons do not take blocks in the random map (nor does fio's).
//! - **`zonemode=strided`**: see [`super::zones`]; random I/O in a zone
//!   draws its offsets within the zone, without a random map (fio's
//!   strided random jobs repeat blocks too).
//! - **Files**: `file_service_type` `roundrobin`, `sequential`, `random`
//!   switch files every `:N` I/Os; `zipf`, `pareto`, `normal` draw a file
//!   at every I/O from the distribution over `nrfiles << 10` positions in
//!   rank order (as fio: the first file, or the middle one for `normal`,
//!   the hottest).
//! - **`rw=trimwrite`**, **`randtrimwrite`**: each block is trimmed, then
//!   the same block (offset and length) written; the amount and
//!   `number_ios` count both, so they double, as fio's do.
//! - **Amount**: `io_size` bytes (a percent is of the clone's regions), else
//!   `size` bytes, else the regions once; times `loops` (a new loop starts
//!   the cursors, zones and map afresh). `number_ios` stops earlier if
//!   reached first. `time_based` is never done by bytes.

use elevator_core::Op;

use super::distribution::Dist;
use super::layout::Extent;
use super::open_files::OpenFiles;
use super::randommap::{FullCycle, MAX_MAP_BYTES, RandomMap};
use super::zones::Strided;
use crate::job::{
    Amount, Distribution, FileService, JobError, JobSpec, RandomGenerator, RwMode, RwSequencer,
};
use elevator_core::rng::Rng;

/// One I/O the pattern chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextIo {
    /// Operation (read, write or discard).
    pub op: Op,
    /// First sector on the device.
    pub sector: u64,
    /// Length in bytes.
    pub len: u32,
}

/// How one direction's block sizes are drawn.
#[derive(Clone, Debug)]
enum BlockSize {
    Fixed(u64),
    Range {
        min: u64,
        max: u64,
        step: u64,
    },
    /// `(block size, cumulative weight)`, and the total weight.
    Split(Vec<(u64, u64)>, u64),
}

impl BlockSize {
    fn min(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range { min, .. } => *min,
            BlockSize::Split(t, _) => t.iter().map(|e| e.0).min().unwrap_or(512),
        }
    }

    fn max(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range { max, .. } => *max,
            BlockSize::Split(t, _) => t.iter().map(|e| e.0).max().unwrap_or(512),
        }
    }

    /// The largest of its sizes that fits in `room` bytes (fio picks a
    /// smaller block size that fits rather than cut one short); `room`
    /// itself when none does (a last partial block is shortened).
    fn fit(&self, room: u64) -> u64 {
        match self {
            BlockSize::Fixed(_) => room,
            BlockSize::Range { min, step, .. } if room >= *min => room / step * step,
            BlockSize::Range { .. } => room,
            BlockSize::Split(t, _) => t
                .iter()
                .map(|e| e.0)
                .filter(|&b| b <= room)
                .max()
                .unwrap_or(room),
        }
    }

    #[inline]
    fn draw(&self, rng: &mut Rng) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range { min, max, step } => {
                let len = min + rng.below(*max);
                (len / step * step).min(*max)
            }
            BlockSize::Split(table, total) => {
                let r = rng.below(*total);
                let i = table.partition_point(|e| e.1 <= r);
                table[i.min(table.len() - 1)].0
            }
        }
    }
}

/// Where random offsets come from.
#[derive(Clone, Debug)]
enum Offsets {
    /// Drawn by the distribution, with replacement.
    Drawn,
    /// Uniform through a random map per file, in blocks of `unit` bytes.
    Map { unit: u64, maps: Vec<RandomMap> },
    /// A full-period sequence per file (`lfsr`), in blocks of `unit` bytes.
    Cycle { unit: u64, cycles: Vec<FullCycle> },
}

/// One file's state.
#[derive(Clone, Debug)]
struct FileState {
    sector: u64,
    /// The region I/O stays in, in bytes from the file's start.
    lo: u64,
    hi: u64,
    /// Sequential cursor per direction.
    cursor: [u64; 3],
    /// Current strided zone and bytes done in it.
    zone: u64,
    zone_done: u64,
    /// The last I/O, for `rw=randread:N`.
    last_off: u64,
    last_end: u64,
    /// Follow-on I/Os left before the next random offset.
    seq_left: u64,
}

/// The I/O choices of one job clone.
#[derive(Debug)]
pub struct Pattern {
    files: Vec<FileState>,
    cur_file: usize,
    on_file: u32,
    file_service: (FileService, u32),
    rw: RwMode,
    mixread: u8,
    bs: [BlockSize; 3],
    align: [u64; 3],
    dist: [Dist; 3],
    offsets: Offsets,
    zones: Option<Strided>,
    rw_nr: u64,
    /// `rw=read:-N`: bytes to move back after each I/O.
    rw_back: u64,
    sequencer: RwSequencer,
    time_based: bool,
    /// Bytes per loop, bytes in all, and where the next loop starts.
    per_loop: u64,
    budget: u64,
    next_loop_at: u64,
    number_ios: u64,
    issued_bytes: u64,
    issued_ios: u64,
    max_bs: u64,
    dir_rng: Rng,
    bs_rng: Rng,
    off_rng: Rng,
    off_seed: u64,
    /// `trimwrite`, `randtrimwrite`: the write of the block last trimmed,
    /// still to issue.
    owed_write: Option<NextIo>,
    /// `file_service_type=zipf`, `pareto`, `normal`: files drawn over
    /// `nrfiles << 10` positions, in rank order.
    file_dist: Option<Dist>,
    /// `openfiles` below the file count: the files open at once.
    open_files: Option<OpenFiles>,
}

/// The directions `rw` issues (read 0, write 1, trim 2).
fn active(rw: RwMode) -> &'static [usize] {
    match rw {
        RwMode::Read | RwMode::RandRead => &[0],
        RwMode::Write | RwMode::RandWrite => &[1],
        RwMode::ReadWrite | RwMode::RandRw => &[0, 1],
        RwMode::Trim | RwMode::RandTrim => &[2],
        RwMode::TrimWrite | RwMode::RandTrimWrite => &[1, 2],
    }
}

/// Positions of `align` bytes where a block of `min` bytes starts in
/// `bytes` (at least one: a block longer than the region is shortened).
#[inline]
fn positions(bytes: u64, min: u64, align: u64) -> u64 {
    if bytes <= min {
        1
    } else {
        (bytes - min) / align + 1
    }
}

impl Pattern {
    /// The pattern of clone `clone` of `job`, on its laid-out `files`, with
    /// random choices from `seed`. A job it cannot run (block sizes that
    /// are zero or not whole sectors, a bad distribution, a random map
    /// larger than 256 MiB...) is an error naming the option; its `file`
    /// is left empty for the caller to fill.
    pub fn new(
        job: &JobSpec,
        files: Vec<Extent>,
        clone: u32,
        seed: u64,
    ) -> Result<Pattern, JobError> {
        let _ = clone;
        let err = |option: &str, message: String| JobError {
            file: String::new(),
            line: job.line_of(&[option]),
            option: Some(option.to_string()),
            message: format!("job '{}': {message}", job.name),
        };
        if files.is_empty() {
            return Err(err("filename", "has no files".to_string()));
        }
        let mut states = Vec::with_capacity(files.len());
        for f in &files {
            let (lo, hi) = (f.start / 512 * 512, f.end.min(f.bytes) / 512 * 512);
            if lo >= hi {
                return Err(err(
                    "offset",
                    format!(
                        "I/O would start at byte {lo} of a file of {} bytes, where its \
                         region ends ({hi})",
                        f.bytes
                    ),
                ));
            }
            states.push(FileState {
                sector: f.sector,
                lo,
                hi,
                cursor: [lo; 3],
                zone: lo,
                zone_done: 0,
                last_off: lo,
                last_end: lo,
                seq_left: 0,
            });
        }
        let dirs = active(job.rw);
        let mut bs = [
            BlockSize::Fixed(512),
            BlockSize::Fixed(512),
            BlockSize::Fixed(512),
        ];
        let sector = |option: &str, what: &str, b: u64| {
            if b == 0 || !b.is_multiple_of(512) || b > u64::from(u32::MAX) / 512 * 512 {
                Err(err(
                    option,
                    format!(
                        "{what} {b} must be a positive multiple of 512 bytes below 4 GiB \
                         (elevator works in 512-byte sectors)"
                    ),
                ))
            } else {
                Ok(b)
            }
        };
        for &d in dirs {
            let split = job
                .bssplit
                .as_ref()
                .map(|s| &s[d])
                .filter(|s| !s.is_empty());
            bs[d] = if let Some(split) = split {
                let mut table = Vec::with_capacity(split.len());
                let mut total = 0u64;
                for &(b, pct) in split {
                    sector("bssplit", "block size", b)?;
                    if pct > 0 {
                        total += u64::from(pct);
                        table.push((b, total));
                    }
                }
                if total == 0 {
                    return Err(err("bssplit", "no block size has a share".to_string()));
                }
                BlockSize::Split(table, total)
            } else if let Some(r) = &job.bsrange {
                let (min, max) = r[d];
                sector("bsrange", "block size", min)?;
                sector("bsrange", "block size", max)?;
                if min > max {
                    return Err(err(
                        "bsrange",
                        format!("range {min}-{max} has its minimum above its maximum"),
                    ));
                }
                let step = if job.bs_unaligned { 512 } else { min };
                BlockSize::Range { min, max, step }
            } else {
                BlockSize::Fixed(sector("bs", "block size", job.bs[d])?)
            };
        }
        let mut align = [512u64; 3];
        for &d in dirs {
            align[d] = match &job.blockalign {
                Some(a) => sector("blockalign", "alignment", a[d])?,
                None => bs[d].min(),
            };
        }
        let min_len = [bs[0].min(), bs[1].min(), bs[2].min()];
        let max_bs = dirs.iter().map(|&d| bs[d].max()).max().unwrap_or(512);

        // Distributions, sized on the first file's region (a file of another
        // size folds the draws onto its own positions).
        let region0 = states[0].hi - states[0].lo;
        let mut dist = Vec::with_capacity(3);
        for d in 0..3 {
            let n = positions(region0, min_len[d], align[d]);
            let unit = align[d];
            dist.push(
                Dist::new(&job.random_distribution, d, n, unit)
                    .map_err(|m| err("random_distribution", m))?,
            );
        }
        let Ok(dist) = <[Dist; 3]>::try_from(dist) else {
            return Err(err(
                "random_distribution",
                "internal: three directions".into(),
            ));
        };

        let zones = Strided::of(job);
        let uniform = dirs.iter().all(|&d| dist[d].uniform());
        let unit = dirs.iter().map(|&d| align[d]).min().unwrap_or(512);
        let aligned_default =
            job.blockalign.is_none() || dirs.iter().all(|&d| align[d] == min_len[d]);
        let offsets = if !job.rw.random() || zones.is_some() || !uniform {
            Offsets::Drawn
        } else if job.random_generator == RandomGenerator::Lfsr {
            let cycles = states
                .iter()
                .enumerate()
                .map(|(i, s)| FullCycle::new((s.hi - s.lo) / unit, seed ^ (0x1F5B_0000 + i as u64)))
                .collect();
            Offsets::Cycle { unit, cycles }
        } else if job.randommap && aligned_default {
            let bytes = states
                .iter()
                .map(|s| RandomMap::bytes_for((s.hi - s.lo) / unit))
                .fold(0u64, u64::saturating_add);
            if bytes > MAX_MAP_BYTES {
                return Err(JobError {
                    option: Some("size".to_string()),
                    line: job.line_of(&["size", "filesize"]),
                    ..err(
                        "norandommap",
                        format!(
                            "the random map of its {} bytes in blocks of {unit} would take \
                             {bytes} bytes (elevator's limit: {MAX_MAP_BYTES}); set \
                             norandommap (or random_generator=lfsr, or a larger bs)",
                            states.iter().map(|s| s.hi - s.lo).sum::<u64>()
                        ),
                    )
                });
            }
            let maps = states
                .iter()
                .map(|s| RandomMap::new((s.hi - s.lo) / unit))
                .collect();
            Offsets::Map { unit, maps }
        } else {
            Offsets::Drawn
        };

        let total: u64 = states.iter().map(|s| s.hi - s.lo).sum();
        let per_loop = match job.io_size {
            Some(Amount::Bytes(b)) if b > 0 => b,
            Some(Amount::Percent(p)) => (u128::from(total) * u128::from(p) / 100) as u64,
            _ => match job.size {
                Some(Amount::Bytes(b)) if b > 0 => b,
                _ => total,
            },
        };
        // trimwrite trims and then writes every byte: twice the bytes and
        // I/Os, as fio counts them.
        let pairs = if job.rw.trims_then_writes() { 2 } else { 1 };
        let per_loop = per_loop.saturating_mul(pairs);
        let number_ios = job.number_ios.saturating_mul(pairs);
        let file_dist = match job.file_service.0 {
            FileService::Zipf | FileService::Pareto | FileService::Normal => {
                let param = job.file_service_param.0;
                let shape = match job.file_service.0 {
                    FileService::Zipf => Distribution::Zipf(param),
                    FileService::Pareto => Distribution::Pareto(param),
                    _ => Distribution::Normal(param),
                };
                let positions = (states.len() as u64) << 10;
                let dist =
                    Dist::new(&shape, 0, positions, 1).map_err(|m| err("file_service_type", m))?;
                Some(dist.ranked())
            }
            _ => None,
        };
        let open_files = match file_dist {
            Some(_) => None,
            None => OpenFiles::new(job.openfiles, states.iter().map(|s| s.hi - s.lo).collect()),
        };
        let loops = u64::from(job.loops.max(1));
        let off_seed = seed ^ 0x0FF5_E7A5_D15C_0FF5;
        Ok(Pattern {
            files: states,
            cur_file: 0,
            on_file: 0,
            file_service: job.file_service,
            rw: job.rw,
            mixread: job.rwmixread,
            bs,
            align,
            dist,
            offsets,
            zones,
            rw_nr: job.rw_nr,
            rw_back: job.rw_back,
            sequencer: job.rw_sequencer,
            time_based: job.time_based,
            per_loop,
            budget: per_loop.saturating_mul(loops),
            next_loop_at: per_loop,
            number_ios,
            issued_bytes: 0,
            issued_ios: 0,
            max_bs,
            dir_rng: Rng::new(seed),
            bs_rng: Rng::new(seed ^ 0xB10C_5123_0000_0001),
            off_rng: Rng::new(off_seed),
            off_seed,
            owed_write: None,
            open_files,
            file_dist,
        })
    }

    /// Whether it runs until its runtime is up, whatever it has issued.
    pub fn time_based(&self) -> bool {
        self.time_based
    }

    /// Whether it has issued all it should (by bytes never, when time
    /// based; by `number_ios` always).
    #[inline]
    pub fn exhausted(&self) -> bool {
        (!self.time_based && self.issued_bytes >= self.budget)
            || (self.number_ios > 0 && self.issued_ios >= self.number_ios)
    }

    /// How much of its I/O it has issued, 0..=1 (0 when time based without
    /// `number_ios`).
    pub fn progress(&self) -> f64 {
        let mut p: f64 = 0.0;
        if !self.time_based {
            p = self.issued_bytes as f64 / self.budget.max(1) as f64;
        }
        if self.number_ios > 0 {
            p = p.max(self.issued_ios as f64 / self.number_ios as f64);
        }
        p.min(1.0)
    }

    /// Its largest block size.
    pub fn max_bs(&self) -> u64 {
        self.max_bs
    }

    /// Which of its files holds device sector `sector`, and the byte
    /// offset in that file (for naming the file of a failed I/O).
    pub fn file_at(&self, sector: u64) -> Option<(u32, u64)> {
        self.files
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, f)| sector >= f.sector)
            .map(|(i, f)| (i as u32, (sector - f.sector).saturating_mul(512)))
            .find(|&(i, offset)| offset < self.files[i as usize].hi)
    }

    /// `io` was taken by the queue: it counts towards the job's amount (and
    /// may end a loop).
    #[inline]
    pub fn accepted(&mut self, io: &NextIo) {
        self.issued_bytes = self.issued_bytes.saturating_add(u64::from(io.len));
        self.issued_ios += 1;
        if self.issued_bytes >= self.next_loop_at
            && self.issued_bytes < self.budget
            && !self.time_based
        {
            self.next_loop_at = self.next_loop_at.saturating_add(self.per_loop);
            self.new_loop();
        }
    }

    /// A new loop: cursors, zones and random maps start afresh.
    fn new_loop(&mut self) {
        for s in &mut self.files {
            s.cursor = [s.lo; 3];
            s.zone = s.lo;
            s.zone_done = 0;
            s.seq_left = 0;
        }
        if let Offsets::Map { maps, .. } = &mut self.offsets {
            maps.iter_mut().for_each(RandomMap::clear);
        }
        self.cur_file = 0;
        self.on_file = 0;
        if let Some(open) = &mut self.open_files {
            open.reopen();
        }
    }

    /// The next I/O.
    #[inline]
    pub fn choose(&mut self) -> NextIo {
        let d = match self.rw {
            RwMode::Read | RwMode::RandRead => 0,
            RwMode::Write | RwMode::RandWrite => 1,
            RwMode::ReadWrite | RwMode::RandRw => {
                if self.dir_rng.percent(self.mixread) {
                    0
                } else {
                    1
                }
            }
            RwMode::Trim | RwMode::RandTrim => 2,
            RwMode::TrimWrite | RwMode::RandTrimWrite => {
                // The block just trimmed is written next, as fio.
                if let Some(write) = self.owed_write.take() {
                    return write;
                }
                2
            }
        };
        let op = [Op::Read, Op::Write, Op::Discard][d];
        let mut len = self.bs[d].draw(&mut self.bs_rng);
        let f = self.pick_file();
        let (wlo, whi) = self.window(f);
        let off = if self.rw.random() {
            self.random_offset(f, d, len, wlo, whi)
        } else {
            let s = &mut self.files[f];
            let c = s.cursor[d];
            if c < wlo || c >= whi || whi - c < len {
                wlo
            } else {
                c
            }
        };
        if len > whi - off {
            len = self.bs[d].fit(whi - off);
        }
        if let Some(open) = &mut self.open_files
            && open.did(f, len)
        {
            // The file closed: the next I/O goes to another.
            self.on_file = u32::MAX;
        }
        let s = &mut self.files[f];
        if !self.rw.random() {
            let next = off.saturating_add(len).saturating_add(self.rw_nr);
            s.cursor[d] = if self.rw_back == 0 {
                next
            } else if next >= wlo.saturating_add(self.rw_back) {
                next - self.rw_back
            } else {
                // Backwards past the start: on from `rw_back` before the
                // end, as fio 3.33 goes (0, then end - 8k for read:-8k).
                whi.saturating_sub(self.rw_back).max(wlo)
            };
        }
        s.last_off = off;
        s.last_end = off + len;
        s.zone_done = s.zone_done.saturating_add(len);
        let io = NextIo {
            op,
            sector: s.sector + off / 512,
            len: len as u32,
        };
        if self.rw.trims_then_writes() {
            self.owed_write = Some(NextIo {
                op: Op::Write,
                ..io
            });
        }
        io
    }

    /// File `f`'s window for the next I/O: its region, or its current
    /// strided zone (moving on when the zone is done).
    #[inline]
    fn window(&mut self, f: usize) -> (u64, u64) {
        let s = &mut self.files[f];
        match self.zones {
            None => (s.lo, s.hi),
            Some(z) => {
                if s.zone_done >= z.size {
                    s.zone = z.next(s.zone, s.lo, s.hi);
                    s.zone_done = 0;
                    s.cursor = [s.zone; 3];
                    s.seq_left = 0;
                }
                (s.zone, z.end(s.zone, s.hi))
            }
        }
    }

    /// A random I/O's offset in `[wlo, whi)`, with `rw=...:N` applied.
    #[inline]
    fn random_offset(&mut self, f: usize, d: usize, len: u64, wlo: u64, whi: u64) -> u64 {
        if self.rw_nr > 1 {
            let s = &mut self.files[f];
            if s.seq_left > 0 {
                s.seq_left -= 1;
                let off = match self.sequencer {
                    RwSequencer::Sequential => s.last_end,
                    RwSequencer::Identical => s.last_off,
                };
                let room = match self.sequencer {
                    RwSequencer::Sequential => len,
                    RwSequencer::Identical => 1,
                };
                if off >= wlo && off < whi && whi - off >= room {
                    return off;
                }
            } else {
                s.seq_left = self.rw_nr - 1;
            }
        }
        self.fresh_offset(f, d, len, wlo, whi)
    }

    /// A new random offset in `[wlo, whi)`.
    #[inline]
    fn fresh_offset(&mut self, f: usize, d: usize, len: u64, wlo: u64, whi: u64) -> u64 {
        match &mut self.offsets {
            Offsets::Map { unit, maps } => {
                let unit = *unit;
                let map = &mut maps[f];
                let p = self.off_rng.below(map.blocks());
                let b = match map.next_free(p) {
                    Some(b) => b,
                    None => {
                        // A pass is done: the next repeats its order.
                        map.clear();
                        self.off_rng = Rng::new(self.off_seed);
                        self.off_rng.below(map.blocks())
                    }
                };
                let blocks = len.div_ceil(unit).max(1);
                for i in 0..blocks {
                    map.take(b + i);
                }
                wlo + b * unit
            }
            Offsets::Cycle { unit, cycles } => wlo + cycles[f].next() * *unit,
            Offsets::Drawn => {
                let dist = &self.dist[d];
                let n = positions(whi - wlo, self.bs[d].min(), self.align[d]);
                let mut k = dist.sample(&mut self.off_rng);
                if k >= n {
                    k %= n;
                }
                wlo + k * self.align[d]
            }
        }
    }

    fn pick_file(&mut self) -> usize {
        let n = self.files.len();
        if n == 1 {
            return 0;
        }
        let (kind, count) = self.file_service;
        if let Some(open) = &mut self.open_files {
            let switch = match kind {
                FileService::Sequential => self.on_file == u32::MAX,
                _ => self.on_file >= count.max(1),
            };
            if switch {
                self.on_file = 0;
                if kind == FileService::Random {
                    open.choose(&mut self.dir_rng);
                } else {
                    open.advance();
                }
            }
            self.on_file = self.on_file.saturating_add(1);
            self.cur_file = open.current();
            return self.cur_file;
        }
        match kind {
            FileService::RoundRobin | FileService::Random => {
                if self.on_file >= count.max(1) {
                    self.on_file = 0;
                    self.cur_file = if kind == FileService::RoundRobin {
                        (self.cur_file + 1) % n
                    } else {
                        self.dir_rng.below(n as u64) as usize
                    };
                }
                self.on_file += 1;
            }
            FileService::Zipf | FileService::Pareto | FileService::Normal => {
                if let Some(dist) = &self.file_dist {
                    let k = dist.sample(&mut self.dir_rng) >> 10;
                    self.cur_file = (k as usize).min(n - 1);
                }
            }
            FileService::Sequential => {
                let s = &self.files[self.cur_file];
                let bs = self.max_bs;
                let done = if self.rw.random() {
                    u64::from(self.on_file).saturating_mul(bs) >= s.hi - s.lo
                } else {
                    s.cursor.iter().any(|&c| c.saturating_add(bs) > s.hi)
                };
                if done {
                    self.cur_file = (self.cur_file + 1) % n;
                    self.on_file = 0;
                }
                self.on_file = self.on_file.saturating_add(1);
            }
        }
        self.cur_file
    }
}
