//! Every option fio 3.33 knows (its own list, `fio --cmdhelp=all`, and the
//! engine options of the HOWTO), declared once, as fio's `fio_option[]`:
//! its names, elevator's verdict, whether it may be bare, and for the
//! implemented ones how its value is read and which
//! [`JobSpec`](super::JobSpec) field it sets (the field's default is
//! [`JobSpec::new`](super::JobSpec::new)'s). The parser, the command line,
//! [`super::fio_options`] and the tests all read this one table.

use super::engines;
use super::option::{FioOption, Store, Verdict, opt, set, value};
use super::options::{
    EXIT_WHATS, GENERATORS, KB_BASES, NUMA_CPU_NOTE, NUMA_MEM_NOTE, RATE_PROCESSES, RW_SEQUENCERS,
    THINK_BLOCKS, UNIFIED_RW, amount, buffer_pattern, choice, continue_on_error, cpu_list,
    distribution, ignore_error, latency_percentile, mem_policy, note, numa_nodes, percentiles,
    replay_skip, rw_mode, store_blockalign, store_bs, store_bsrange, store_bssplit,
    store_cmdprio_bssplit, store_file_service, store_filename, store_filesize, store_ss_dur,
    store_steadystate, store_verify_interval, store_verify_pattern, verify, zonemode,
};
use super::values::{
    MICROSECOND, MILLISECOND, SECOND, int_in, int32, level, per_direction, percent, range, size,
    time, whole,
};

use Verdict::{DefaultOnly as D, Noted as N, Refused as R};

const NOT_YET: &str = "elevator does not implement it (yet)";
const NO_CACHE: &str = "elevator has no page cache in the way: simulated devices have none and \
                        real files and devices are opened with O_DIRECT";
const BUFFERS: &str = "elevator allocates its own aligned I/O buffers";
const ZBD: &str = "zoned block devices (zonemode=zbd) are not modelled by elevator (yet)";
const IOLOG: &str = "elevator replays one iolog or blktrace per job as it is (read_iolog); \
                     for merged or rescaled traces use `elevator replay`";
const CONTENT: &str = "elevator does not model data contents (compression, deduplication)";
const PROCESS: &str = "elevator does not change process priorities, users, cgroups or NUMA \
                       placement (yet)";
const OUTPUT: &str = "it changes fio's reporting in a way elevator does not reproduce (yet)";

/// Shorthand for [`Verdict::DefaultOnly`].
const fn d(default: &'static str, reason: &'static str) -> Verdict {
    D { default, reason }
}

/// Why an engine option is refused.
const E_IO_URING: &str = "an io_uring option: elevator sets up its own io_uring";
/// Why an engine option is refused.
const E_IO_URING_CMD: &str = "an io_uring_cmd option: elevator does not run that engine";
/// Why an engine option is refused.
const E_IO_URING_HIPRI: &str =
    "an io_uring option: elevator sets up its own io_uring (see its --poll-us)";
/// Why an engine option is refused.
const E_LIBAIO: &str = "a libaio option: elevator runs every engine through its own queue";
/// Why an engine option is refused.
const E_PVSYNC2: &str = "a pvsync2 option: elevator runs every engine through its own queue";
/// Why an engine option is refused.
const E_IO_URING_LIBAIO_PVSYNC2: &str =
    "an io_uring/libaio/pvsync2 option: elevator runs every engine through its own queue";
/// Why an engine option is refused.
const E_CPUIO: &str = "a cpuio option: elevator does not run the cpuio engine";
/// Why an engine option is refused.
const E_LIBHDFS: &str = "a libhdfs option: elevator does not run that engine";
/// Why an engine option is refused.
const E_NET: &str = "a network engine option: elevator does not run network engines";
/// Why an engine option is refused.
const E_LIBRPMA: &str = "a librpma option: elevator does not run that engine";
/// Why an engine option is refused.
const E_E4DEFRAG: &str = "an e4defrag option: elevator does not run that engine";
/// Why an engine option is refused.
const E_CEPH: &str = "a Ceph option: elevator does not run the rbd/rados engines";
/// Why an engine option is refused.
const E_DAOS: &str = "a DAOS option: elevator does not run that engine";
/// Why an engine option is refused.
const E_MTD: &str = "an mtd option: elevator does not run that engine";
/// Why an engine option is refused.
const E_RDMA: &str = "an rdma option: elevator does not run that engine";
/// Why an engine option is refused.
const E_FILESTAT: &str = "a filestat option: elevator does not run that engine";
/// Why an engine option is refused.
const E_SG: &str = "an sg option: elevator runs every engine through its own queue";
/// Why an engine option is refused.
const E_HTTP: &str = "an http option: elevator does not run that engine";
/// Why an engine option is refused.
const E_NBD: &str = "an nbd-engine option: elevator is the NBD side (`elevator serve`)";
/// Why an engine option is refused.
const E_LIBCUFILE: &str = "a libcufile option: elevator does not run that engine";
/// Why an engine option is refused.
const E_NFS: &str = "an nfs option: elevator does not run that engine";
/// Why an engine option is refused.
const E_EXEC: &str = "an exec option: elevator does not run that engine";
/// Why an engine option is refused.
const E_XNVME: &str = "an xnvme option: elevator does not run that engine";

/// Every option fio knows, one row each, in the order of fio's HOWTO
/// sections.
pub(super) const OPTIONS: &[FioOption] = &[
    // Job description, files.
    set("description", Store::Value(|_, _| Ok(()))),
    set("name", value!(|j, v| j.name = v.to_string())),
    set("wait_for", value!(|j, v| j.wait_for = Some(v.to_string()))),
    set("filename", Store::Value(store_filename)),
    opt("lockfile", d("none", NOT_YET)),
    set(
        "directory",
        value!(|j, v| j.directory = Some(v.to_string())),
    ),
    set(
        "filename_format",
        value!(|j, v| j.filename_format = Some(v.to_string())),
    ),
    opt(
        "unique_filename",
        N("it only matters in fio's client/server mode"),
    ),
    opt("opendir", R(NOT_YET)),
    set("nrfiles", value!(|j, v| j.nrfiles = int32(v, 1, 65_536)?)).aka(&["nr_files"]),
    set(
        "openfiles",
        value!(|j, v| j.openfiles = int32(v, 0, 65_536)?),
    ),
    set("file_service_type", Store::Value(store_file_service)),
    opt(
        "ioscheduler",
        R(
            "elevator's own scheduler replaces the kernel's: choose it with elevator's scheduler option",
        ),
    ),
    opt(
        "create_serialize",
        N("elevator lays out files before any job starts"),
    ),
    opt(
        "create_fsync",
        N("elevator lays out files before any job starts"),
    ),
    opt(
        "create_on_open",
        N("elevator lays out files before any job starts"),
    ),
    opt("create_only", d("0", NOT_YET)),
    opt("allow_file_create", d("1", NOT_YET)),
    opt(
        "allow_mounted_write",
        N("elevator does not check whether a device is mounted: check the target yourself"),
    ),
    opt("pre_read", d("0", NO_CACHE)),
    opt(
        "unlink",
        N(
            "elevator lays a job's files out as extents of the device under test: there is \
           no file to delete",
        ),
    ),
    opt("unlink_each_loop", d("0", NOT_YET)),
    opt("fallocate", N("elevator lays out its own files")),
    opt("fadvise_hint", N(NO_CACHE)),
    opt("invalidate", N(NO_CACHE)),
    opt("file_append", d("0", NOT_YET)),
    set("fill_device", Store::Bool(|j, b| j.fill_device = b)).aka(&["fill_fs"]),
    // Zones.
    set("zonemode", value!(|j, v| j.zonemode = zonemode(v)?)),
    set("zonesize", value!(|j, v| j.zonesize = size(v, j.kb_base)?)),
    set(
        "zonerange",
        value!(|j, v| j.zonerange = size(v, j.kb_base)?),
    ),
    set("zoneskip", value!(|j, v| j.zoneskip = size(v, j.kb_base)?)),
    opt("zonecapacity", R(ZBD)),
    opt("read_beyond_wp", R(ZBD)),
    opt("max_open_zones", R(ZBD)),
    opt("job_max_open_zones", R(ZBD)),
    opt("ignore_zone_limits", R(ZBD)),
    opt("zone_reset_threshold", R(ZBD)),
    opt("zone_reset_frequency", R(ZBD)),
    // I/O type.
    set("direct", Store::Bool(|j, b| j.direct = b)),
    set("buffered", Store::Bool(|j, b| j.direct = !b)),
    opt("atomic", d("0", NOT_YET)),
    set(
        "rw",
        value!(|j, v| (j.rw, j.rw_nr, j.rw_back) = rw_mode(v, j.kb_base)?),
    )
    .aka(&["readwrite"]),
    set(
        "rw_sequencer",
        value!(|j, v| j.rw_sequencer = choice(v, RW_SEQUENCERS, "sequential or identical")?),
    ),
    set(
        "unified_rw_reporting",
        value!(
            |j, v| j.unified_rw_reporting = choice(v, UNIFIED_RW, "none, mixed, both, 0, 1 or 2")?
        ),
    ),
    set("randrepeat", Store::Bool(|j, b| j.randrepeat = b)),
    set("allrandrepeat", Store::Bool(|j, b| j.allrandrepeat = b)),
    set(
        "randseed",
        value!(|j, v| j.randseed = Some(whole(v, "seed")?)),
    ),
    opt("write_hint", d("none", NOT_YET)),
    set("offset", value!(|j, v| j.offset = amount(v, 0, j.kb_base)?)).aka(&["fileoffset"]),
    opt("offset_align", d("0", NOT_YET)),
    set(
        "offset_increment",
        value!(|j, v| j.offset_increment = Some(amount(v, 0, j.kb_base)?)),
    ),
    set(
        "number_ios",
        value!(|j, v| j.number_ios = size(v, j.kb_base)?),
    ),
    set("fsync", value!(|j, v| j.fsync = int32(v, 0, u32::MAX)?)),
    set(
        "fdatasync",
        value!(|j, v| j.fdatasync = int32(v, 0, u32::MAX)?),
    ),
    opt("write_barrier", d("0", NOT_YET)),
    opt("sync_file_range", R(NOT_YET)),
    opt(
        "overwrite",
        N(
            "elevator's files are extents of the device that exist before the job starts, \
           so writes always overwrite: there is nothing to lay out first",
        ),
    ),
    set("end_fsync", Store::Bool(|j, b| j.end_fsync = b)),
    set("fsync_on_close", Store::Bool(|j, b| j.fsync_on_close = b)),
    set("rwmixread", value!(|j, v| j.rwmixread = percent(v)?)),
    set("rwmixwrite", value!(|j, v| j.rwmixread = 100 - percent(v)?)),
    set(
        "random_distribution",
        value!(|j, v| (j.random_distribution, j.random_center) = distribution(v, j.kb_base)?),
    ),
    opt("percentage_random", d("100", NOT_YET)),
    set("norandommap", Store::Switch(|j, b| j.randommap = !b)),
    opt("softrandommap", N("elevator's random map is always there")),
    set(
        "random_generator",
        value!(
            |j, v| j.random_generator = choice(v, GENERATORS, "tausworthe, lfsr or tausworthe64")?
        ),
    ),
    // Block size.
    set("bs", Store::Value(store_bs)).aka(&["blocksize"]),
    set("bsrange", Store::Value(store_bsrange)).aka(&["blocksize_range"]),
    set("bssplit", Store::Value(store_bssplit)),
    set("bs_unaligned", Store::Switch(|j, b| j.bs_unaligned = b)).aka(&["blocksize_unaligned"]),
    opt("bs_is_seq_rand", d("0", NOT_YET)),
    set("ba", Store::Value(store_blockalign)).aka(&["blockalign"]),
    // Buffers and memory.
    opt("zero_buffers", d("0", CONTENT)).bare(),
    opt("scramble_buffers", d("1", CONTENT)),
    // What writes carry (workload::contents).
    set("refill_buffers", Store::Switch(|j, b| j.buffers.refill = b)),
    set(
        "buffer_pattern",
        value!(|j, v| j.buffers.pattern = Some(buffer_pattern(v)?)),
    ),
    set(
        "buffer_compress_percentage",
        value!(|j, v| j.buffers.compress = u32::from(percent(v)?)),
    ),
    set(
        "buffer_compress_chunk",
        value!(|j, v| j.buffers.chunk = size(v, j.kb_base)?.max(1)),
    ),
    set(
        "dedupe_percentage",
        value!(|j, v| j.buffers.dedupe = u32::from(percent(v)?)),
    ),
    set(
        "dedupe_mode",
        value!(|j, v| j.buffers.mode = crate::workload::DedupeMode::parse(v)?),
    ),
    set(
        "dedupe_working_set_percentage",
        value!(|j, v| j.buffers.working_set = u32::from(percent(v)?)),
    ),
    set("dedupe_global", Store::Switch(|j, b| j.buffers.global = b)),
    opt("sync", d("none|0", NOT_YET)),
    opt("mem", N(BUFFERS)).aka(&["iomem"]),
    opt("mem_align", N(BUFFERS)).aka(&["iomem_align"]),
    opt("hugepage-size", N(BUFFERS)),
    opt("lockmem", N(BUFFERS)),
    // Sizes.
    set(
        "size",
        value!(|j, v| j.size = Some(amount(v, 1, j.kb_base)?)),
    ),
    set(
        "io_size",
        value!(|j, v| j.io_size = Some(amount(v, 1, j.kb_base)?)),
    )
    .aka(&["io_limit"]),
    set("filesize", Store::Value(store_filesize)),
    // I/O engine and depth.
    set(
        "ioengine",
        value!(|j, v| {
            j.ioengine = engines::check(v)?;
            note(j, "ioengine", engines::BLOCK_ENGINE_NOTE)
        }),
    ),
    set("iodepth", value!(|j, v| j.iodepth = int32(v, 1, 65_536)?)),
    set(
        "iodepth_batch",
        value!(|j, v| j.iodepth_batch_submit = int32(v, 0, 65_536)?),
    )
    .aka(&["iodepth_batch_submit"]),
    set(
        "iodepth_batch_complete_min",
        value!(|j, v| j.iodepth_batch_complete_min = int32(v, 0, 65_536)?),
    )
    .aka(&["iodepth_batch_complete"]),
    set(
        "iodepth_batch_complete_max",
        value!(|j, v| j.iodepth_batch_complete_max = int32(v, 0, 65_536)?),
    ),
    set(
        "iodepth_low",
        value!(|j, v| j.iodepth_low = Some(int32(v, 0, 65_536)?)),
    ),
    opt("serialize_overlap", d("0", NOT_YET)),
    opt(
        "io_submit_mode",
        N(
            "elevator submits each job's I/O from its own thread or event loop, at the times \
           its rate asks for; offload changes which fio thread submits, not the I/O",
        ),
    ),
    // Time, rate.
    set("loops", value!(|j, v| j.loops = int32(v, 1, u32::MAX)?)),
    set("numjobs", value!(|j, v| j.numjobs = int32(v, 1, 4096)?)),
    set(
        "startdelay",
        value!(|j, v| j.startdelay = range(v, |s| time(s, SECOND))?),
    ),
    set(
        "runtime",
        value!(|j, v| j.runtime = Some(time(v, SECOND)?).filter(|&ns| ns > 0)),
    )
    .aka(&["timeout"]),
    set("time_based", Store::Switch(|j, b| j.time_based = b)),
    set("ramp_time", value!(|j, v| j.ramp_time = time(v, SECOND)?)),
    opt(
        "clocksource",
        N("elevator times I/O with its own clock (virtual, or the monotonic clock)"),
    ),
    opt(
        "gtod_reduce",
        N(
            "fio's way to save clock reads, at the price of its latency and bandwidth \
           figures; elevator's figures cost no extra clock reads in simulation, so it \
           reports them",
        ),
    ),
    opt("gtod_cpu", N("elevator does not run a time-keeping thread")),
    set(
        "thinktime",
        value!(|j, v| j.thinktime = time(v, MICROSECOND)?),
    ),
    set(
        "thinktime_spin",
        value!(|j, v| j.thinktime_spin = time(v, MICROSECOND)?),
    ),
    set(
        "thinktime_blocks",
        value!(|j, v| j.thinktime_blocks = int32(v, 1, u32::MAX)?),
    ),
    set(
        "thinktime_blocks_type",
        value!(|j, v| j.thinktime_blocks_type = choice(v, THINK_BLOCKS, "complete or issue")?),
    ),
    set(
        "thinktime_iotime",
        value!(|j, v| j.thinktime_iotime = time(v, SECOND)?),
    ),
    set(
        "rate",
        value!(|j, v| per_direction(v, &mut j.rate, |x| size(x, j.kb_base))?),
    ),
    set(
        "rate_min",
        value!(|j, v| per_direction(v, &mut j.rate_min, |x| size(x, j.kb_base))?),
    )
    .aka(&["ratemin"]),
    set(
        "rate_process",
        value!(|j, v| j.rate_process = choice(v, RATE_PROCESSES, "linear or poisson")?),
    ),
    set(
        "rate_cycle",
        value!(|j, v| j.rate_cycle = int_in(v, 1, u64::MAX / MILLISECOND)? * MILLISECOND),
    )
    .aka(&["ratecycle"]),
    set(
        "rate_ignore_thinktime",
        Store::Bool(|j, b| j.rate_ignore_thinktime = b),
    ),
    set(
        "rate_iops",
        value!(|j, v| per_direction(v, &mut j.rate_iops, |x| whole(x, "rate"))?),
    ),
    set(
        "rate_iops_min",
        value!(|j, v| per_direction(v, &mut j.rate_iops_min, |x| whole(x, "rate"))?),
    ),
    opt("max_latency", R(NOT_YET)),
    set(
        "latency_target",
        value!(|j, v| j.latency_target = time(v, MICROSECOND)?),
    ),
    set(
        "latency_window",
        value!(|j, v| j.latency_window = time(v, MICROSECOND)?),
    ),
    set(
        "latency_percentile",
        value!(|j, v| j.latency_percentile = latency_percentile(v)?),
    ),
    set("latency_run", Store::Bool(|j, b| j.latency_run = b)),
    set("steadystate", Store::Value(store_steadystate)).aka(&["ss"]),
    set("steadystate_duration", Store::Value(store_ss_dur)).aka(&["ss_dur"]),
    set(
        "steadystate_ramp_time",
        value!(|j, v| j.steadystate.ramp = time(v, SECOND)?),
    )
    .aka(&["ss_ramp"]),
    // Verification.
    set("verify_only", Store::Switch(|j, b| j.verify_only = b)),
    set("verify", value!(|j, v| j.verify = verify(v)?)),
    set("do_verify", Store::Bool(|j, b| j.do_verify = b)),
    set("verify_interval", Store::Value(store_verify_interval)),
    opt("verify_offset", R(NOT_YET)),
    set("verify_pattern", Store::Value(store_verify_pattern)),
    set("verify_fatal", Store::Bool(|j, b| j.verify_fatal = b)),
    set("verify_dump", Store::Bool(|j, b| j.verify_dump = b)),
    // elevator's own option (fio writes its own format only): which block
    // layout verify writes and checks.
    set(
        "verify_format",
        value!(|j, v| j.verify_format = crate::verify::BlockFormat::parse(v)?),
    ),
    opt(
        "verify_async",
        N("elevator checks data in its completion path, not in extra threads"),
    ),
    opt(
        "verify_async_cpus",
        N("elevator checks data in its completion path, not in extra threads"),
    ),
    set(
        "verify_backlog",
        value!(|j, v| j.verify_backlog = size(v, j.kb_base)?),
    ),
    opt("verify_backlog_batch", R(NOT_YET)),
    opt("experimental_verify", d("0", NOT_YET)),
    opt("verify_state_load", d("0", NOT_YET)),
    opt("verify_state_save", d("1|0", NOT_YET)),
    opt("trim_percentage", d("0", NOT_YET)),
    opt("trim_verify_zero", d("1", NOT_YET)),
    opt("trim_backlog", R(NOT_YET)),
    opt("trim_backlog_batch", R(NOT_YET)),
    // I/O logs and replay.
    set(
        "write_iolog",
        value!(|j, v| j.write_iolog = Some(v.to_string())),
    ),
    set(
        "read_iolog",
        value!(|j, v| j.read_iolog = Some(v.to_string())),
    ),
    opt(
        "read_iolog_chunked",
        N("elevator always streams the log: it is never read whole into memory"),
    ),
    set("replay_no_stall", Store::Bool(|j, b| j.replay_no_stall = b)),
    opt(
        "replay_redirect",
        N("elevator replays every log onto the job's device, at the log's offsets"),
    ),
    opt("replay_scale", R(IOLOG)),
    opt("replay_align", R(IOLOG)),
    set(
        "replay_time_scale",
        value!(|j, v| j.replay_time_scale = int32(v, 1, u32::MAX)?),
    ),
    set(
        "replay_skip",
        value!(|j, v| j.replay_skip = replay_skip(v)?),
    ),
    opt("merge_blktrace_file", R(IOLOG)),
    opt("merge_blktrace_scalars", R(IOLOG)),
    opt("merge_blktrace_iters", R(IOLOG)),
    // Process.
    opt("exec_prerun", R("elevator does not run commands")),
    opt("exec_postrun", R("elevator does not run commands")),
    opt("nice", d("0", PROCESS)),
    set("prio", value!(|j, v| j.prio = Some(level(v)?))),
    set(
        "prioclass",
        value!(|j, v| j.prioclass = Some(int_in(v, 0, 3)? as u8)),
    ),
    opt("cpumask", R("use cpus_allowed, which elevator implements")),
    set(
        "cpus_allowed",
        value!(|j, v| j.cpus_allowed = Some(cpu_list(v)?)),
    ),
    opt("cpus_allowed_policy", d("shared", NOT_YET)),
    set(
        "numa_cpu_nodes",
        value!(|j, v| {
            j.numa_cpu_nodes = Some(numa_nodes(v)?);
            note(j, "numa_cpu_nodes", NUMA_CPU_NOTE)
        }),
    ),
    set(
        "numa_mem_policy",
        value!(|j, v| {
            j.numa_mem_policy = Some(mem_policy(v)?);
            note(j, "numa_mem_policy", NUMA_MEM_NOTE)
        }),
    ),
    opt("cgroup", R(PROCESS)),
    opt("cgroup_nodelete", d("0", PROCESS)),
    opt("cgroup_weight", R(PROCESS)),
    opt("uid", R(PROCESS)),
    opt("gid", R(PROCESS)),
    set("flow_id", value!(|j, v| j.flow_id = int32(v, 0, u32::MAX)?)),
    set("flow", value!(|j, v| j.flow = int32(v, 0, 1000)?)),
    opt(
        "flow_watermark",
        N("fio 3.33 deprecates it and ignores its value"),
    ),
    set(
        "flow_sleep",
        value!(|j, v| j.flow_sleep = time(v, MICROSECOND)?),
    ),
    set("exitall", Store::Switch(|j, b| j.exitall = b)),
    set(
        "exit_what",
        value!(|j, v| j.exit_what = choice(v, EXIT_WHATS, "group, stonewall or all")?),
    ),
    set(
        "exitall_on_error",
        Store::Switch(|j, b| j.exitall_on_error = b),
    ),
    set("stonewall", Store::Switch(|j, b| j.stonewall = b)).aka(&["wait_for_previous"]),
    set("new_group", Store::Switch(|j, b| j.new_group = b)),
    set("thread", Store::Switch(|j, b| j.thread = b)).aka(&["threads"]),
    opt(
        "profile",
        R("fio's built-in job profiles are not part of elevator"),
    ),
    // Logs and reporting.
    set("per_job_logs", Store::Bool(|j, b| j.per_job_logs = b)),
    set("write_bw_log", Store::Log(|j| &mut j.write_bw_log)),
    set("write_lat_log", Store::Log(|j| &mut j.write_lat_log)),
    set("write_iops_log", Store::Log(|j| &mut j.write_iops_log)),
    opt("write_hist_log", R(NOT_YET)),
    opt("bwavgtime", d("500", OUTPUT)),
    opt("iopsavgtime", d("500", OUTPUT)),
    opt("log_entries", N("elevator grows its logs as needed")),
    set(
        "log_avg_msec",
        value!(|j, v| j.log_avg_msec = whole(v, "number")?),
    ),
    opt("log_hist_msec", d("0", NOT_YET)),
    opt("log_hist_coarseness", d("0", NOT_YET)),
    opt("log_max_value", d("0", NOT_YET)),
    set("log_offset", Store::Bool(|j, b| j.log_offset = b)),
    set("log_prio", Store::Bool(|j, b| j.log_prio = b)),
    opt("log_compression", d("0", NOT_YET)),
    opt("log_compression_cpus", R(NOT_YET)),
    opt("log_store_compressed", d("0", NOT_YET)),
    opt("log_unix_epoch", d("0", NOT_YET)),
    opt("log_alternate_epoch", d("0", NOT_YET)),
    opt("log_alternate_epoch_clock_id", d("0", NOT_YET)),
    opt("block_error_percentiles", d("0", NOT_YET)),
    set(
        "group_reporting",
        Store::Switch(|j, b| j.group_reporting = b),
    ),
    opt("stats", d("1", OUTPUT)),
    set(
        "clat_percentiles",
        Store::Bool(|j, b| j.clat_percentiles = b),
    ),
    set("lat_percentiles", Store::Bool(|j, b| j.lat_percentiles = b)),
    set(
        "slat_percentiles",
        Store::Bool(|j, b| j.slat_percentiles = b),
    ),
    set(
        "percentile_list",
        value!(|j, v| j.percentile_list = Some(percentiles(v)?)),
    ),
    opt("significant_figures", d("4", OUTPUT)),
    opt("disk_util", d("1", OUTPUT)),
    opt("disable_lat", d("0", OUTPUT)),
    opt("disable_clat", d("0", OUTPUT)),
    opt("disable_slat", d("0", OUTPUT)),
    opt("disable_bw_measurement", d("0", OUTPUT)).aka(&["disable_bw"]),
    set(
        "continue_on_error",
        value!(|j, v| j.errors.continue_on = continue_on_error(v)?),
    ),
    set(
        "ignore_error",
        value!(|j, v| ignore_error(v, &mut j.errors)?),
    ),
    set("error_dump", Store::Bool(|j, b| j.errors.dump = b)),
    set(
        "kb_base",
        value!(|j, v| j.kb_base = choice(v, KB_BASES, "1024 or 1000")?),
    ),
    opt("unit_base", d("0", OUTPUT)),
    // Engine options (fio knows them once the engine is chosen).
    set(
        "cmdprio_percentage",
        value!(|j, v| per_direction(v, &mut j.cmdprio_percentage, percent)?),
    ),
    set(
        "cmdprio_class",
        value!(|j, v| per_direction(v, &mut j.cmdprio_class, |x| Ok(int_in(x, 1, 3)? as u8))?),
    ),
    set(
        "cmdprio",
        value!(|j, v| per_direction(v, &mut j.cmdprio, level)?),
    ),
    set("cmdprio_bssplit", Store::Value(store_cmdprio_bssplit)),
    opt("fixedbufs", R(E_IO_URING)).bare(),
    opt("nonvectored", R(E_IO_URING)),
    opt("force_async", R(E_IO_URING)),
    opt("registerfiles", R(E_IO_URING)).bare(),
    opt("sqthread_poll", R(E_IO_URING)).bare(),
    opt("sqthread_poll_cpu", R(E_IO_URING)),
    opt("cmd_type", R(E_IO_URING_CMD)),
    opt("hipri", R(E_IO_URING_HIPRI)).bare(),
    opt("userspace_reap", R(E_LIBAIO)),
    opt("hipri_percentage", R(E_PVSYNC2)),
    opt("nowait", R(E_IO_URING_LIBAIO_PVSYNC2)),
    opt("cpuload", R(E_CPUIO)),
    opt("cpuchunks", R(E_CPUIO)),
    opt("cpumode", R(E_CPUIO)),
    opt("exit_on_io_done", R(E_CPUIO)),
    opt("namenode", R(E_LIBHDFS)),
    opt("hdfsdirectory", R(E_LIBHDFS)),
    opt("port", R(E_NET)),
    opt("hostname", R(E_NET)),
    opt("serverip", R(E_LIBRPMA)),
    opt("direct_write_to_pmem", R(E_LIBRPMA)),
    opt("busy_wait_polling", R(E_LIBRPMA)),
    opt("interface", R(E_NET)),
    opt("ttl", R(E_NET)),
    opt("nodelay", R(E_NET)),
    opt("protocol", R(E_NET)).aka(&["proto"]),
    opt("listen", R(E_NET)).bare(),
    opt("pingpong", R(E_NET)).bare(),
    opt("window_size", R(E_NET)),
    opt("mss", R(E_NET)),
    opt("donorname", R(E_E4DEFRAG)),
    opt("inplace", R(E_E4DEFRAG)),
    opt("clustername", R(E_CEPH)),
    opt("rbdname", R(E_CEPH)),
    opt("clientname", R(E_CEPH)),
    opt("conf", R(E_CEPH)),
    opt("busy_poll", R(E_CEPH)),
    opt("touch_objects", R(E_CEPH)),
    opt("pool", R(E_DAOS)),
    opt("cont", R(E_DAOS)),
    opt("chunk_size", R(E_DAOS)),
    opt("object_class", R(E_DAOS)),
    opt("skip_bad", R(E_MTD)),
    opt("verb", R(E_RDMA)),
    opt("bindname", R(E_RDMA)),
    opt("stat_type", R(E_FILESTAT)),
    opt("readfua", R(E_SG)),
    opt("writefua", R(E_SG)),
    opt("sg_write_mode", R(E_SG)),
    opt("stream_id", R(E_SG)),
    opt("http_host", R(E_HTTP)),
    opt("http_user", R(E_HTTP)),
    opt("http_pass", R(E_HTTP)),
    opt("https", R(E_HTTP)),
    opt("http_mode", R(E_HTTP)),
    opt("http_s3_region", R(E_HTTP)),
    opt("http_s3_key", R(E_HTTP)),
    opt("http_s3_keyid", R(E_HTTP)),
    opt("http_s3_sse_customer_key", R(E_HTTP)),
    opt("http_s3_sse_customer_algorithm", R(E_HTTP)),
    opt("http_s3_storage_class", R(E_HTTP)),
    opt("http_swift_auth_token", R(E_HTTP)),
    opt("http_verbose", R(E_HTTP)),
    opt("uri", R(E_NBD)),
    opt("gpu_dev_ids", R(E_LIBCUFILE)),
    opt("cuda_io", R(E_LIBCUFILE)),
    opt("nfs_url", R(E_NFS)),
    opt("program", R(E_EXEC)),
    opt("arguments", R(E_EXEC)),
    opt("grace_time", R(E_EXEC)),
    opt("std_redirect", R(E_EXEC)),
    opt("xnvme_async", R(E_XNVME)),
    opt("xnvme_sync", R(E_XNVME)),
    opt("xnvme_admin", R(E_XNVME)),
    opt("xnvme_dev_nsid", R(E_XNVME)),
    opt("xnvme_iovec", R(E_XNVME)),
];
