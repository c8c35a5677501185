//! One fio job as data: [`JobSpec`] with every option elevator knows, its
//! defaults (fio's), and the value types of options (distributions, rate
//! processes, zone modes...). The parser fills it; workloads read it.

use elevator_core::{Nanos, Op};

/// fio's `rw`: the I/O pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwMode {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `randread`.
    RandRead,
    /// `randwrite`.
    RandWrite,
    /// `rw` / `readwrite`: sequential, mixed by `rwmixread`.
    ReadWrite,
    /// `randrw`: random, mixed by `rwmixread`.
    RandRw,
    /// `trim`: sequential discards.
    Trim,
    /// `randtrim`: random discards.
    RandTrim,
    /// `trimwrite`: sequential, each block trimmed and then written.
    TrimWrite,
    /// `randtrimwrite`: random offsets, each block trimmed and then
    /// written.
    RandTrimWrite,
}

impl RwMode {
    /// Whether offsets are random.
    pub fn random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandRw
                | RwMode::RandTrim
                | RwMode::RandTrimWrite
        )
    }

    /// Whether each block is trimmed and then written (`trimwrite`,
    /// `randtrimwrite`).
    pub fn trims_then_writes(self) -> bool {
        matches!(self, RwMode::TrimWrite | RwMode::RandTrimWrite)
    }

    /// fio's name for it.
    pub fn name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
            RwMode::Trim => "trim",
            RwMode::RandTrim => "randtrim",
            RwMode::TrimWrite => "trimwrite",
            RwMode::RandTrimWrite => "randtrimwrite",
        }
    }
}

/// fio's `file_service_type`: how a job with several files moves between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileService {
    /// `roundrobin` (fio's default): the next file after every `count` I/Os.
    RoundRobin,
    /// `sequential`: finish one file before the next.
    Sequential,
    /// `random`: a random file every `count` I/Os.
    Random,
    /// `zipf[:theta]`: a file drawn by a Zipf distribution at every I/O,
    /// the first file the hottest (theta in [`JobSpec::file_service_param`]).
    Zipf,
    /// `pareto[:h]`: a file drawn by a Pareto distribution at every I/O,
    /// the first file the hottest.
    Pareto,
    /// `normal[:dev]` (alias `gauss`): a file drawn by fio's bell shape at
    /// every I/O, the middle file the hottest.
    Normal,
}

/// An amount given either in bytes or as a percentage of what it applies to
/// (fio accepts `size=50%`, `offset=10%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amount {
    /// Bytes.
    Bytes(u64),
    /// Percent, 1..=100 (of the file or device).
    Percent(u8),
}

/// Declares [`JobSpec`] with each field's default beside it (fio's
/// defaults) and [`JobSpec::new`] from them: a field is written once.
macro_rules! job_spec {
    (
        $(#[$attr:meta])*
        pub struct JobSpec {
            $( $(#[$doc:meta])* pub $field:ident: $ty:ty = $default:expr, )*
        }
    ) => {
        $(#[$attr])*
        pub struct JobSpec {
            $( $(#[$doc])* pub $field: $ty, )*
        }

        impl JobSpec {
            /// A job named `name` with fio's defaults.
            pub fn new(name: &str, line: usize) -> JobSpec {
                JobSpec {
                    $( $field: $default, )*
                }
                .named(name, line)
            }
        }
    };
}

job_spec! {
/// One job section, with `[global]` inheritance and defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// The section name.
    pub name: String = String::new(),
    /// Line of the section header (1-based).
    pub line: usize = 0,
    /// `rw` (default `read`).
    pub rw: RwMode = RwMode::Read,
    /// `rwmixread`: percent of reads in mixed modes (default 50; `rwmixwrite`
    /// sets 100 minus it).
    pub rwmixread: u8 = 50,
    /// `bs` for reads, writes and trims, in bytes (default 4096; `bs=4k`
    /// sets all three, `bs=4k,64k` reads and writes; see fio's HOWTO for
    /// how fewer than three values fill the rest). `bsrange` and `bssplit`,
    /// when set, take over from it for their directions.
    pub bs: [u64; 3] = [4096; 3],
    /// `size`: bytes of I/O per job (and the file size unless `filesize` is
    /// set). `None`: the whole file or device.
    pub size: Option<Amount> = None,
    /// `offset`: where in each file I/O starts (default 0).
    pub offset: Amount = Amount::Bytes(0),
    /// `iodepth` (default 1), as the job states it: reports show it, but
    /// a synchronous engine runs at depth 1 ([`JobSpec::queue_depth`]).
    pub iodepth: u32 = 1,
    /// `numjobs`: clones of this job, each its own process (default 1).
    pub numjobs: u32 = 1,
    /// `thinktime`: pause after an I/O completes before the next (µs unless
    /// a unit is given; default 0), in nanoseconds.
    pub thinktime: Nanos = 0,
    /// `thinktime_blocks`: I/Os issued between pauses (default 1).
    pub thinktime_blocks: u32 = 1,
    /// `runtime`: stop after this long (seconds unless a unit is given), in
    /// nanoseconds.
    pub runtime: Option<Nanos> = None,
    /// `time_based`: run for `runtime` even when `size` is done, starting
    /// over.
    pub time_based: bool = false,
    /// `direct` (default false). Direct I/O is synchronous in the block
    /// layer's sense (bios carry SYNC) for reads and writes alike.
    pub direct: bool = false,
    /// `ioengine` (default psync, as fio's): every block engine's I/O takes
    /// elevator's own path; the engine decides only the depth the job runs
    /// at (a synchronous one caps it at 1, [`JobSpec::queue_depth`]).
    pub ioengine: String = "psync".to_string(),
    /// `filename`: `None` means fio's default, a file per job clone
    /// (`name.clone.file`).
    pub filename: Option<String> = None,
    /// `nrfiles` (default 1).
    pub nrfiles: u32 = 1,
    /// `filesize`: size of each file (default: `size / nrfiles`).
    pub filesize: Option<u64> = None,
    /// `file_service_type` (default round robin) and its `:count` (default 1).
    pub file_service: (FileService, u32) = (FileService::RoundRobin, 1),
    /// `randrepeat` (default true): the same random sequence on every run.
    pub randrepeat: bool = true,
    /// `randseed`: the seed (default: fio's fixed seed, so runs repeat).
    pub randseed: Option<u64> = None,
    /// `group_reporting`: report the job's group as one.
    pub group_reporting: bool = false,
    /// `stonewall` / `wait_for_previous`: start only when every earlier job
    /// has finished; also starts a new reporting group.
    pub stonewall: bool = false,
    /// `new_group`: start a new reporting group.
    pub new_group: bool = false,
    /// `thread`: run clones as threads rather than processes. elevator
    /// always runs a real device's clones on threads of its own process
    /// (and a simulation's in one loop), so it is accepted and changes
    /// nothing.
    pub thread: bool = false,
    /// `cpus_allowed`: the CPUs the job's threads may run on (sorted, no
    /// repeats); `None` for any. The parser checks the list's form; the
    /// runner checks that the CPUs exist.
    pub cpus_allowed: Option<Vec<u32>> = None,
    /// `bsrange` per direction: block sizes drawn between `min` and `max`
    /// (multiples of the smaller of `min` and `blockalign`).
    pub bsrange: Option<[(u64, u64); 3]> = None,
    /// `bssplit` per direction: `(block size, percent)` pairs; the percents
    /// of a direction sum to 100 (fio fills a missing share).
    pub bssplit: Option<[Vec<(u64, u32)>; 3]> = None,
    /// `blockalign` per direction: offsets are multiples of it (default:
    /// the direction's minimum block size).
    pub blockalign: Option<[u64; 3]> = None,
    /// `bs_unaligned`: random block sizes need not be multiples of the
    /// minimum.
    pub bs_unaligned: bool = false,
    /// `random_distribution` (default `random`, uniform).
    pub random_distribution: Distribution = Distribution::Random,
    /// `norandommap` clears it (default true): with the map, random I/O
    /// touches every block once per pass before any twice.
    pub randommap: bool = true,
    /// `random_generator` (default tausworthe).
    pub random_generator: RandomGenerator = RandomGenerator::Tausworthe,
    /// `allrandrepeat`: every random choice repeats, not only offsets.
    pub allrandrepeat: bool = false,
    /// `rw=...:N`: fio's offset modifier: for sequential modes, bytes to skip
    /// after every I/O; for random modes, I/Os per new random offset
    /// (`rw_sequencer` says what happens in between). 0: none.
    pub rw_nr: u64 = 0,
    /// `rw=read:-N` (sequential modes): bytes the offset moves back after
    /// every I/O, so the job goes backwards; below the start of the region
    /// it goes on from N bytes before its end, as fio does. 0: none.
    pub rw_back: u64 = 0,
    /// `rw_sequencer` (default sequential).
    pub rw_sequencer: RwSequencer = RwSequencer::Sequential,
    /// `rate` per direction in bytes per second (0: no limit).
    pub rate: [u64; 3] = [0; 3],
    /// `rate_iops` per direction (0: no limit).
    pub rate_iops: [u64; 3] = [0; 3],
    /// `rate_min` per direction in bytes per second: the job fails if it
    /// falls below this (0: no minimum).
    pub rate_min: [u64; 3] = [0; 3],
    /// `rate_iops_min` per direction (0: no minimum).
    pub rate_iops_min: [u64; 3] = [0; 3],
    /// `rate_process` (default linear).
    pub rate_process: RateProcess = RateProcess::Linear,
    /// `rate_cycle`: the window `rate_min` is checked over (default 1000 ms).
    pub rate_cycle: Nanos = 1_000_000_000,
    /// `rate_ignore_thinktime`.
    pub rate_ignore_thinktime: bool = false,
    /// `ramp_time`: run this long before figures are recorded (the runtime
    /// starts after it). 0: none.
    pub ramp_time: Nanos = 0,
    /// `thinktime_spin`: of each think time, the part spent spinning on the
    /// CPU (for the simulation, time like the rest).
    pub thinktime_spin: Nanos = 0,
    /// `thinktime_blocks_type` (default complete).
    pub thinktime_blocks_type: ThinkBlocks = ThinkBlocks::Complete,
    /// `thinktime_iotime`: think only after this much I/O time (0: after
    /// every `thinktime_blocks`).
    pub thinktime_iotime: Nanos = 0,
    /// `io_size` (alias `io_limit`): bytes of I/O to do, when it differs from
    /// `size` (the region).
    pub io_size: Option<Amount> = None,
    /// `number_ios`: stop after this many I/Os (0: no limit).
    pub number_ios: u64 = 0,
    /// `loops`: run the job this many times (default 1).
    pub loops: u32 = 1,
    /// `startdelay`: wait before starting; a range `a-b` draws a delay in it.
    pub startdelay: (Nanos, Nanos) = (0, 0),
    /// `offset_increment`: clone `n` starts at `offset + n × offset_increment`.
    pub offset_increment: Option<Amount> = None,
    /// `zonemode` (default none; `strided` with `zonesize`/`zonerange`/
    /// `zoneskip`).
    pub zonemode: ZoneMode = ZoneMode::None,
    /// `zonesize`: bytes to transfer in a zone before moving on.
    pub zonesize: u64 = 0,
    /// `zonerange`: size of a zone (default: `zonesize`).
    pub zonerange: u64 = 0,
    /// `zoneskip`: bytes skipped after each zone.
    pub zoneskip: u64 = 0,
    /// `fsync`: a cache flush after every N writes (0: never).
    pub fsync: u32 = 0,
    /// `fdatasync`: as `fsync`; elevator's flush does both.
    pub fdatasync: u32 = 0,
    /// `fill_device` (alias `fill_fs`): a created file takes the rest of the
    /// device (fio writes until the device is full).
    pub fill_device: bool = false,
    /// `end_fsync`: flush when the job's writes are done.
    pub end_fsync: bool = false,
    /// `fsync_on_close`: flush when each file is closed (at the job's end).
    pub fsync_on_close: bool = false,
    /// `verify`: the checksum or pattern written blocks carry (fio's name,
    /// checked by the parser); `None` for no verification.
    pub verify: Option<String> = None,
    /// `do_verify` (default true): read back and check after writing.
    pub do_verify: bool = true,
    /// `verify_only`: do not write; only read and check (data written by an
    /// earlier run with the same options).
    pub verify_only: bool = false,
    /// `verify_backlog`: check after every N writes rather than at the end
    /// (0: at the end).
    pub verify_backlog: u64 = 0,
    /// `verify_fatal`: stop the job at the first failure.
    pub verify_fatal: bool = false,
    /// `verify_pattern`: the bytes of `verify=pattern`.
    pub verify_pattern: Option<Vec<u8>> = None,
    /// `verify_interval`: bytes covered by each header (default: the block).
    pub verify_interval: Option<u64> = None,
    /// `verify_format` (elevator's own option): the layout of verified
    /// blocks, elevator's (the default) or fio's on-disk format, which fio's
    /// `verify_only` checks and in which fio's files are read.
    pub verify_format: crate::verify::BlockFormat = crate::verify::BlockFormat::Elevator,
    /// `verify_dump`: write a block that fails its check, as read and as
    /// expected, to files (see [`crate::verify::dump_files`]).
    pub verify_dump: bool = false,
    /// fio's buffer options: what writes carry (see
    /// [`crate::workload::Contents`]).
    pub buffers: BufferContents = BufferContents::default(),
    /// `write_lat_log`: file name prefix of the latency logs (`PREFIX_lat`,
    /// `_clat`, `_slat`).
    pub write_lat_log: Option<String> = None,
    /// `write_bw_log`: file name prefix of the bandwidth log.
    pub write_bw_log: Option<String> = None,
    /// `write_iops_log`: file name prefix of the IOPS log.
    pub write_iops_log: Option<String> = None,
    /// `write_iolog`: the file the job's I/Os are logged to (fio's iolog,
    /// version 3; opened in append mode, as fio does).
    pub write_iolog: Option<String> = None,
    /// `read_iolog`: the iolog (or blktrace) the job's I/Os are replayed
    /// from, instead of its pattern.
    pub read_iolog: Option<String> = None,
    /// `replay_no_stall`: replay as fast as the depth allows, ignoring the
    /// log's timing.
    pub replay_no_stall: bool = false,
    /// `replay_time_scale`: the log's timing scaled, a percentage of its
    /// rate (200: twice as fast). Default 100.
    pub replay_time_scale: u32 = 100,
    /// `replay_skip`: directions left out of a replay (read, write, trim,
    /// sync: a bit each, [`ReplaySkip`](super::ReplaySkip)).
    pub replay_skip: u8 = 0,
    /// `log_avg_msec`: average log entries over this many ms (0: one entry
    /// per I/O).
    pub log_avg_msec: u64 = 0,
    /// `log_offset`: log entries carry the I/O's offset.
    pub log_offset: bool = false,
    /// `per_job_logs` (default true): each clone's own log file.
    pub per_job_logs: bool = true,
    /// `percentile_list`: the completion-latency percentiles reported
    /// (default fio's 17), in the order given.
    pub percentile_list: Option<Vec<f64>> = None,
    /// `clat_percentiles` (default true).
    pub clat_percentiles: bool = true,
    /// `lat_percentiles` (default false).
    pub lat_percentiles: bool = false,
    /// `slat_percentiles` (default false).
    pub slat_percentiles: bool = false,
    /// `wait_for`: start only when the job of this name has finished.
    pub wait_for: Option<String> = None,
    /// `directory`: prefix of the job's file names.
    pub directory: Option<String> = None,
    /// `filename_format` (default `$jobname.$jobnum.$filenum`).
    pub filename_format: Option<String> = None,
    /// `unified_rw_reporting` (default none).
    pub unified_rw_reporting: UnifiedRw = UnifiedRw::None,
    /// `iodepth_batch_submit` (alias `iodepth_batch`): I/Os submitted at
    /// once (default 1).
    pub iodepth_batch_submit: u32 = 1,
    /// `iodepth_batch_complete_min` (alias `iodepth_batch_complete`):
    /// completions reaped at once at least (default 1).
    pub iodepth_batch_complete_min: u32 = 1,
    /// `iodepth_batch_complete_max` (default `iodepth`).
    pub iodepth_batch_complete_max: u32 = 0,
    /// `iodepth_low`: once the depth is reached, refill only when in-flight
    /// I/Os fall to this (default, and for 0, `iodepth`).
    pub iodepth_low: Option<u32> = None,
    /// `random_distribution`'s optional second number for zipf, pareto and
    /// normal: where in the file (0.0..=1.0) the distribution is centred.
    /// `None`: fio's default (random for zipf and pareto, 0.5 for normal).
    pub random_center: Option<f64> = None,
    /// `filename`'s files, every name of its `:`-separated list in order
    /// (`\:` is a colon in a name); empty when `filename` is not set.
    /// [`JobSpec::filename`] is the first of them.
    pub filenames: Vec<String> = Vec::new(),
    /// `filesize`'s upper bound when it is a range (`filesize=1m-4m`):
    /// each file's size is drawn in `filesize..=filesize_max`, a multiple
    /// of the smallest block size, as fio draws it. `None`: one size.
    pub filesize_max: Option<u64> = None,
    /// `openfiles`: how many of the job's files are open at once (0, the
    /// default: all of them).
    pub openfiles: u32 = 0,
    /// `file_service_type`'s parameter for `zipf`, `pareto` and `normal`
    /// (fio's defaults 1.1, 0.2 and 0), and its optional centre.
    pub file_service_param: (f64, Option<f64>) = (0.0, None),
    /// `kb_base` (1024 or 1000): how the job's sizes were read, and the
    /// prefix fio uses for units it reports.
    pub kb_base: u32 = 1024,
    /// `continue_on_error`, `ignore_error`, `error_dump`: which I/O errors
    /// end the job (by default, any).
    pub errors: ErrorPolicy = ErrorPolicy::default(),
    // Ending jobs (issue 29): `exitall`, `exit_what`, `exitall_on_error`.
    /// `exitall`: when this job ends, it ends others as `exit_what` says.
    /// As in fio, one job with it turns it on for every job of the run
    /// (every worker of the run ends others when it ends).
    pub exitall: bool = false,
    /// `exit_what` (default `group`): which jobs `exitall` and
    /// `exitall_on_error` end.
    pub exit_what: ExitWhat = ExitWhat::Group,
    /// `exitall_on_error`: when this job ends in error, it ends others as
    /// `exit_what` says.
    pub exitall_on_error: bool = false,
    // NUMA placement (issue 29): `numa_cpu_nodes`, `numa_mem_policy`.
    /// `numa_cpu_nodes`: on a real device, the job's threads run on these
    /// nodes' CPUs (in place of `cpus_allowed`); a simulation has no CPUs.
    pub numa_cpu_nodes: Option<NumaNodes> = None,
    /// `numa_mem_policy`: the memory policy fio sets for the job. elevator
    /// checks it and notes it (see [`MemPolicy`]).
    pub numa_mem_policy: Option<MemPolicy> = None,
    // Steady state (issue 29): `ss`, `ss_dur`, `ss_ramp`.
    /// `steadystate` / `ss` (criterion and limit), `ss_dur` and `ss_ramp`;
    /// on only with an `ss_dur` of a second or more ([`JobSpec::steady`]).
    pub steadystate: SteadySpec = SteadySpec::FIO_DEFAULT,
    // Latency target (issue 29): `latency_target`, `latency_window`,
    // `latency_percentile`, `latency_run`.
    /// `latency_target` (µs unless a unit is given), in ns: search for the
    /// highest depth whose I/O meets it; 0: off.
    pub latency_target: Nanos = 0,
    /// `latency_window` (µs unless a unit is given), in ns: how long each
    /// depth is tried.
    pub latency_window: Nanos = 0,
    /// `latency_percentile` (default 100): the share of a window's I/O
    /// that must meet the target.
    pub latency_percentile: f64 = 100.0,
    /// `latency_run`: keep adjusting the depth instead of ending once
    /// found.
    pub latency_run: bool = false,
    /// Options accepted that have no effect on elevator, each with why, in
    /// the order set (`invalidate` when every I/O is direct, ...). Verbose
    /// output and the JSON's `elevator.notes` list them.
    pub notes: Vec<(String, String)> = Vec::new(),
    /// The job section's own options as written, for fio's "job options" in
    /// JSON: `(name, value)` in the order they were set (inherited ones are
    /// in [`super::JobFile::global_options`]; when a name repeats, the last wins).
    pub options: Vec<(String, String)> = Vec::new(),
    /// Where each option that applies to this job was set: `(name, line)`,
    /// `[global]` ones first, in file order. [`JobSpec::line_of`] reads it.
    pub option_lines: Vec<(String, usize)> = Vec::new(),
    /// The job file its section is in, when a run reads several (`None`:
    /// the run's one file, [`super::JobFile::path`]); its lines are that
    /// file's. [`super::JobFile::file_of`] reads it.
    pub file: Option<String> = None,
    // I/O priorities and flows (issue 29).
    /// `prio`: the job's priority level, 0..=7 (`None`: not set).
    pub prio: Option<u8> = None,
    /// `prioclass`: the job's priority class, 0..=3 as Linux's `ioprio`
    /// (0 none, 1 RT, 2 BE, 3 IDLE; `None`: not set).
    pub prioclass: Option<u8> = None,
    /// `cmdprio_percentage` per direction: percent of I/Os issued with
    /// the command priority (trims ignored, as fio).
    pub cmdprio_percentage: [u8; 3] = [0; 3],
    /// `cmdprio_class` per direction (0: not set, RT when a command
    /// priority is used).
    pub cmdprio_class: [u8; 3] = [0; 3],
    /// `cmdprio` per direction: the command priority's level.
    pub cmdprio: [u8; 3] = [0; 3],
    /// `cmdprio_bssplit` per direction: the percentages of I/Os of each
    /// block size issued with a command priority.
    pub cmdprio_bssplit: Option<[Vec<CmdprioSplit>; 3]> = None,
    /// `log_prio`: latency logs give each I/O's whole priority value.
    pub log_prio: bool = false,
    /// `flow_id`: the flow this job's `flow` weight counts in.
    pub flow_id: u32 = 0,
    /// `flow`: the job's weight in its flow (0: no flow control).
    pub flow: u32 = 0,
    /// `flow_sleep`: how long a job held back by its flow waits.
    pub flow_sleep: Nanos = 0,
}
}

/// One entry of `cmdprio_bssplit`: I/Os of `bs` bytes, `percent` of which
/// go with `prio` (fio's raw `ioprio` value, class << 13 | level), or
/// with the `cmdprio_class` / `cmdprio` priority when `prio` is `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdprioSplit {
    /// Block size in bytes.
    pub bs: u64,
    /// Percent of I/Os of that size.
    pub percent: u8,
    /// Its own class and level, if the entry gives them.
    pub prio: Option<(u8, u8)>,
}

impl JobSpec {
    /// The section's name and header line.
    fn named(mut self, name: &str, line: usize) -> JobSpec {
        self.name = name.to_string();
        self.line = line;
        self
    }

    /// The depth the job runs at: its `iodepth` (at least 1), or 1 with a
    /// synchronous `ioengine` (psync, fio's default, sync, vsync, pvsync,
    /// pvsync2, mmap, splice, sg), as fio caps it. Every engine's workers
    /// take their depth from here.
    pub fn queue_depth(&self) -> u32 {
        if self.depth_capped() {
            1
        } else {
            self.iodepth.max(1)
        }
    }

    /// Whether a synchronous `ioengine` caps a stated `iodepth` > 1 (fio
    /// then prints [`super::SYNC_DEPTH_NOTE`] for each clone).
    pub fn depth_capped(&self) -> bool {
        self.iodepth > 1 && super::engines::is_synchronous(&self.ioengine)
    }

    /// The largest block size any of its I/Os can have (`bs`, `bsrange`,
    /// `bssplit`), for buffers and layouts.
    pub fn max_bs(&self) -> u64 {
        self.bs_bound(|&(_, hi)| hi, u64::max)
    }

    /// The smallest block size any of its I/Os can have.
    pub fn min_bs(&self) -> u64 {
        self.bs_bound(|&(lo, _)| lo, u64::min)
    }

    /// `pick` over the block sizes of `bs`, the `end` of each `bsrange`
    /// and the sizes of `bssplit`.
    fn bs_bound(&self, end: fn(&(u64, u64)) -> u64, pick: fn(u64, u64) -> u64) -> u64 {
        let bs = self.bs.iter().copied().reduce(pick).unwrap_or(0);
        let ranges = self.bsrange.iter().flatten().map(end);
        let splits = self.bssplit.iter().flatten().flatten().map(|&(b, _)| b);
        ranges.chain(splits).fold(bs, pick)
    }

    /// Its steady-state detection, when `ss_dur` turns it on (fio ignores
    /// `ss` without it).
    pub fn steady(&self) -> Option<SteadySpec> {
        Some(self.steadystate).filter(|s| s.dur > 0)
    }

    /// The line that last set any of `names` for this job (in its section
    /// or an earlier `[global]`), or the section's header line when none
    /// was set: errors about an option point at the line that gave it.
    pub fn line_of(&self, names: &[&str]) -> usize {
        self.option_lines
            .iter()
            .rev()
            .find(|(n, _)| names.contains(&n.as_str()))
            .map_or(self.line, |&(_, line)| line)
    }
}

/// The kinds of error fio's `continue_on_error` and `ignore_error` tell
/// apart (fio's `error_type_bit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A read failed.
    Read = 0,
    /// A write, trim or flush failed.
    Write = 1,
    /// A block read back did not verify (`EILSEQ`, whatever its I/O).
    Verify = 2,
}

impl ErrorKind {
    /// The kind of error `errno` on an I/O of `op` is, as fio sorts them:
    /// `EILSEQ` is a verify error, a failed read a read error, anything
    /// else a write error.
    pub fn of(op: Op, errno: i32) -> ErrorKind {
        if errno == crate::errno::EILSEQ {
            ErrorKind::Verify
        } else if op == Op::Read {
            ErrorKind::Read
        } else {
            ErrorKind::Write
        }
    }

    /// fio's name for it (`read`, `write`, `verify`).
    pub fn name(self) -> &'static str {
        ["read", "write", "verify"][self as usize]
    }
}

/// Which errors a job goes on after, as fio decides it
/// (`td_non_fatal_error`): an error goes on when `continue_on_error`
/// covers its kind and its number is in the kind's `ignore_error` list (by
/// default `EIO` and `EILSEQ`). Every other error ends the job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorPolicy {
    /// The kinds that may go on, a bit per [`ErrorKind`]
    /// (`continue_on_error`, and each kind `ignore_error` lists).
    pub continue_on: u8,
    /// Per kind (read, write, verify), the error numbers that go on; an
    /// empty list is fio's default, `EIO` and `EILSEQ`.
    pub ignore: [Vec<i32>; 3],
    /// `error_dump`: report the errors that went on too, not only the one
    /// that ended the job.
    pub dump: bool,
}

impl ErrorPolicy {
    /// `continue_on_error=all`.
    pub const ALL: u8 = 0b111;

    /// Whether error `errno` of `kind` lets the job go on.
    pub fn goes_on(&self, kind: ErrorKind, errno: i32) -> bool {
        if self.continue_on & (1 << kind as u8) == 0 {
            return false;
        }
        match &self.ignore[kind as usize] {
            list if list.is_empty() => errno == crate::errno::EIO || errno == crate::errno::EILSEQ,
            list => list.contains(&errno),
        }
    }

    /// Whether any kind may go on (fio then reports `total_err` and
    /// `first_error`).
    pub fn continues(&self) -> bool {
        self.continue_on != 0
    }
}

/// fio's `random_distribution`: how random offsets are spread over a file.
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// `random`: uniform (fio's default).
    Random,
    /// `zipf:THETA`.
    Zipf(f64),
    /// `pareto:H`.
    Pareto(f64),
    /// `normal:DEV`: Gaussian with this deviation in percent of the file.
    Normal(f64),
    /// `zoned:...` (percent of accesses to percent of the file) or
    /// `zoned_abs:...` (to absolute sizes), per direction.
    Zoned {
        /// Per direction (read, write, trim): the zones in order.
        dirs: [Vec<Zone>; 3],
        /// `zoned_abs`: zone sizes in bytes rather than percent.
        absolute: bool,
    },
}

/// One zone of a zoned distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zone {
    /// Percent of the accesses that go to this zone.
    pub access: f64,
    /// Its size: percent of the file, or bytes for `zoned_abs`.
    pub size: f64,
}

/// fio's `random_generator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RandomGenerator {
    /// `tausworthe` (default).
    Tausworthe,
    /// `lfsr`: a full-period sequence, every block once per pass without a
    /// map.
    Lfsr,
    /// `tausworthe64`.
    Tausworthe64,
}

/// fio's `rw_sequencer`: what the I/Os between new offsets of `rw=...:N` do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwSequencer {
    /// `sequential`: follow on from the last offset.
    Sequential,
    /// `identical`: repeat the same offset.
    Identical,
}

/// fio's `rate_process`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateProcess {
    /// `linear`: evenly spaced I/Os.
    Linear,
    /// `poisson`: exponentially distributed gaps with the same mean.
    Poisson,
}

/// fio's `thinktime_blocks_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinkBlocks {
    /// `complete`: think after `thinktime_blocks` I/Os completed (default).
    Complete,
    /// `issue`: think after `thinktime_blocks` I/Os issued.
    Issue,
}

/// fio's `zonemode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneMode {
    /// No zones (default), unless `zonesize` is set, which implies strided.
    None,
    /// `strided`: `zonesize` bytes in each `zonerange`, then skip `zoneskip`.
    Strided,
}

/// `replay_skip`'s directions, a bit each of [`JobSpec::replay_skip`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplaySkip;

impl ReplaySkip {
    /// Reads.
    pub const READ: u8 = 1;
    /// Writes.
    pub const WRITE: u8 = 2;
    /// Trims.
    pub const TRIM: u8 = 4;
    /// `sync` and `datasync`.
    pub const SYNC: u8 = 8;
}

/// fio's `unified_rw_reporting`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnifiedRw {
    /// `none` / `0`: per direction (default).
    None,
    /// `mixed` / `1`: one `mixed` set of figures.
    Mixed,
    /// `both` / `2`: per direction and mixed.
    Both,
}

/// fio's `exit_what`: which jobs a job's end ends, under `exitall` or
/// `exitall_on_error` (fio's `fio_terminate_threads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// `group` (default): the jobs of its reporting group, started or not.
    Group,
    /// `stonewall`: the jobs running now (those waiting for a `stonewall`
    /// start later, as usual).
    Stonewall,
    /// `all`: every job, started or not.
    All,
}

impl ExitWhat {
    /// Whether a job of `group`, which has (`started`) or has not started,
    /// is ended by the end of a job of `ender_group` with this rule.
    pub fn ends(self, ender_group: u32, group: u32, started: bool) -> bool {
        match self {
            ExitWhat::Group => group == ender_group,
            ExitWhat::Stonewall => started,
            ExitWhat::All => true,
        }
    }
}

/// A list of NUMA nodes as `numa_cpu_nodes` and `numa_mem_policy` take it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NumaNodes {
    /// `all`: every node.
    All,
    /// These nodes (sorted, no repeats).
    List(Vec<u32>),
}

/// fio's `numa_mem_policy`: `mode[:nodes]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemPolicy {
    /// `default`: the process's policy.
    Default,
    /// `prefer:N`: node N first.
    Prefer(u32),
    /// `bind:NODES`: only these nodes.
    Bind(NumaNodes),
    /// `interleave[:NODES]`: pages spread over these nodes (all when none
    /// are named).
    Interleave(NumaNodes),
    /// `local`: the node of the CPU that allocates.
    Local,
}

/// fio's steady-state criterion (`ss=iops:10%`, `bw_slope:1%`...) with its
/// window (`ss_dur`) and ramp (`ss_ramp`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadySpec {
    /// IOPS (`iops...`) rather than bandwidth (`bw...`).
    pub iops: bool,
    /// The slope of the samples (`..._slope`) rather than their largest
    /// deviation from the mean.
    pub slope: bool,
    /// The limit: below it, steady state is attained.
    pub limit: f64,
    /// The limit is a percentage of the mean (`%`).
    pub percent: bool,
    /// `ss_dur`: the window, in whole seconds (0: off).
    pub dur: u32,
    /// `ss_ramp`: time after a clone starts before its samples count.
    pub ramp: Nanos,
}

impl SteadySpec {
    /// fio's default criterion, `iops_slope:0.01%`, with no window.
    pub const FIO_DEFAULT: SteadySpec = SteadySpec {
        iops: true,
        slope: true,
        limit: 0.01,
        percent: true,
        dur: 0,
        ramp: 0,
    };

    /// The criterion as fio's JSON names it: `iops_slope:0.010000%`.
    pub fn name(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            if self.iops { "iops" } else { "bw" },
            if self.slope { "_slope" } else { "" },
            self.limit as f32,
            if self.percent { "%" } else { "" }
        )
    }
}

/// fio's buffer options (`buffer_pattern`, `buffer_compress_percentage`,
/// `buffer_compress_chunk`, `refill_buffers`, `dedupe_percentage`,
/// `dedupe_mode`, `dedupe_working_set_percentage`): what writes carry, as
/// [`crate::workload::Contents`] fills them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferContents {
    /// `buffer_pattern`: the bytes of the compressible part (or of the whole
    /// buffer without compression or dedupe).
    pub pattern: Option<Vec<u8>>,
    /// `buffer_compress_percentage`: the share of each chunk that is the
    /// pattern (zeros without one), 0 to 100.
    pub compress: u32,
    /// `buffer_compress_chunk` (default 512): the chunk of that share.
    pub chunk: u64,
    /// `refill_buffers`: new pseudo-random bytes for every write.
    pub refill: bool,
    /// `dedupe_percentage`: the share of writes that repeat an earlier one.
    pub dedupe: u32,
    /// `dedupe_mode` (default `repeat`).
    pub mode: crate::workload::DedupeMode,
    /// `dedupe_working_set_percentage` (default 5): the working set, in
    /// percent of the job's region.
    pub working_set: u32,
    /// `dedupe_global`: the working set is spread over every job clone's
    /// buffers, so that jobs deduplicate against each other.
    pub global: bool,
}

impl Default for BufferContents {
    fn default() -> Self {
        BufferContents {
            pattern: None,
            compress: 0,
            chunk: 512,
            refill: false,
            dedupe: 0,
            mode: crate::workload::DedupeMode::Repeat,
            working_set: 5,
            global: false,
        }
    }
}
