//! Every option fio 3.33 knows (its own list, `fio --cmdhelp=all`, and the
//! engine options of the HOWTO), each with elevator's verdict. One place:
//! the parser looks every name up here, tests walk it.

/// What elevator does with one of fio's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It sets a [`JobSpec`](super::JobSpec) field (or the parser's own
    /// state, like `kb_base`) with fio's value forms and defaults.
    Implemented,
    /// Accepted with any value, pushing `(name, reason)` to
    /// [`JobSpec::notes`](super::JobSpec::notes): it cannot change what
    /// elevator does or reports.
    Noted(&'static str),
    /// Accepted (with a note) only with fio's default value, one of the
    /// `|`-separated `default` forms; any other value is refused with
    /// `reason`.
    DefaultOnly {
        /// fio's default, `|` between equivalent spellings.
        default: &'static str,
        /// Why another value is refused.
        reason: &'static str,
    },
    /// Refused by name, with why.
    Refused(&'static str),
}

use Verdict::{DefaultOnly as D, Implemented as I, Noted as N, Refused as R};

const NOT_YET: &str = "elevator does not implement it (yet)";
const NO_CACHE: &str = "elevator has no page cache in the way: simulated devices have none and \
                        real files and devices are opened with O_DIRECT";
const BUFFERS: &str = "elevator allocates its own aligned I/O buffers";
const ZBD: &str = "zoned block devices (zonemode=zbd) are not modelled by elevator (yet)";
const IOLOG: &str = "elevator records and replays I/O as blktrace traces: use `elevator replay`";
const CONTENT: &str = "elevator does not model data contents (compression, deduplication)";
const PROCESS: &str = "elevator does not change process priorities, users, cgroups or NUMA \
                       placement (yet)";
const OUTPUT: &str = "it changes fio's reporting in a way elevator does not reproduce (yet)";
const DEFAULT_ONLY: &str = "only fio's default is supported";

/// Shorthand for an engine option.
const fn engine(reason: &'static str) -> Verdict {
    R(reason)
}

/// Every fio option name (canonical), with its verdict.
pub(super) const TABLE: &[(&str, Verdict)] = &[
    // Job description, files.
    ("description", I),
    ("name", I),
    ("wait_for", I),
    ("filename", I),
    (
        "lockfile",
        D {
            default: "none",
            reason: NOT_YET,
        },
    ),
    ("directory", I),
    ("filename_format", I),
    (
        "unique_filename",
        N("it only matters in fio's client/server mode"),
    ),
    ("opendir", R(NOT_YET)),
    ("nrfiles", I),
    ("openfiles", N("elevator keeps every file of a job open")),
    ("file_service_type", I),
    (
        "ioscheduler",
        R(
            "elevator's own scheduler replaces the kernel's: choose it with elevator's scheduler option",
        ),
    ),
    (
        "create_serialize",
        N("elevator lays out files before any job starts"),
    ),
    (
        "create_fsync",
        N("elevator lays out files before any job starts"),
    ),
    (
        "create_on_open",
        N("elevator lays out files before any job starts"),
    ),
    (
        "create_only",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "allow_file_create",
        D {
            default: "1",
            reason: NOT_YET,
        },
    ),
    (
        "allow_mounted_write",
        N("elevator does not check whether a device is mounted: check the target yourself"),
    ),
    (
        "pre_read",
        D {
            default: "0",
            reason: NO_CACHE,
        },
    ),
    (
        "unlink",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "unlink_each_loop",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("fallocate", N("elevator lays out its own files")),
    ("fadvise_hint", N(NO_CACHE)),
    ("invalidate", N(NO_CACHE)),
    (
        "file_append",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "fill_device",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    // Zones.
    ("zonemode", I),
    ("zonesize", I),
    ("zonerange", I),
    ("zoneskip", I),
    ("zonecapacity", R(ZBD)),
    ("read_beyond_wp", R(ZBD)),
    ("max_open_zones", R(ZBD)),
    ("job_max_open_zones", R(ZBD)),
    ("ignore_zone_limits", R(ZBD)),
    ("zone_reset_threshold", R(ZBD)),
    ("zone_reset_frequency", R(ZBD)),
    // I/O type.
    ("direct", I),
    ("buffered", I),
    (
        "atomic",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("rw", I),
    ("rw_sequencer", I),
    ("unified_rw_reporting", I),
    ("randrepeat", I),
    ("allrandrepeat", I),
    ("randseed", I),
    (
        "write_hint",
        D {
            default: "none",
            reason: NOT_YET,
        },
    ),
    ("offset", I),
    (
        "offset_align",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("offset_increment", I),
    ("number_ios", I),
    ("fsync", I),
    ("fdatasync", I),
    (
        "write_barrier",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("sync_file_range", R(NOT_YET)),
    (
        "overwrite",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("end_fsync", I),
    ("fsync_on_close", I),
    ("rwmixread", I),
    ("rwmixwrite", I),
    ("random_distribution", I),
    (
        "percentage_random",
        D {
            default: "100",
            reason: NOT_YET,
        },
    ),
    ("norandommap", I),
    ("softrandommap", N("elevator's random map is always there")),
    ("random_generator", I),
    // Block size.
    ("bs", I),
    ("bsrange", I),
    ("bssplit", I),
    ("bs_unaligned", I),
    (
        "bs_is_seq_rand",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("ba", I),
    // Buffers and memory.
    (
        "zero_buffers",
        D {
            default: "0",
            reason: CONTENT,
        },
    ),
    (
        "refill_buffers",
        D {
            default: "0",
            reason: CONTENT,
        },
    ),
    (
        "scramble_buffers",
        D {
            default: "1",
            reason: CONTENT,
        },
    ),
    ("buffer_pattern", R(CONTENT)),
    ("buffer_compress_percentage", R(CONTENT)),
    (
        "buffer_compress_chunk",
        D {
            default: "512",
            reason: CONTENT,
        },
    ),
    ("dedupe_percentage", R(CONTENT)),
    (
        "dedupe_mode",
        D {
            default: "repeat",
            reason: CONTENT,
        },
    ),
    (
        "dedupe_working_set_percentage",
        D {
            default: "5",
            reason: CONTENT,
        },
    ),
    (
        "dedupe_global",
        D {
            default: "0",
            reason: CONTENT,
        },
    ),
    (
        "sync",
        D {
            default: "none|0",
            reason: NOT_YET,
        },
    ),
    ("mem", N(BUFFERS)),
    ("mem_align", N(BUFFERS)),
    ("hugepage-size", N(BUFFERS)),
    ("lockmem", N(BUFFERS)),
    // Sizes.
    ("size", I),
    ("io_size", I),
    ("filesize", I),
    // I/O engine and depth.
    ("ioengine", I),
    ("iodepth", I),
    ("iodepth_batch", I),
    ("iodepth_batch_complete_min", I),
    ("iodepth_batch_complete_max", I),
    ("iodepth_low", I),
    (
        "serialize_overlap",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "io_submit_mode",
        D {
            default: "inline",
            reason: NOT_YET,
        },
    ),
    // Time, rate.
    ("loops", I),
    ("numjobs", I),
    ("startdelay", I),
    ("runtime", I),
    ("time_based", I),
    ("ramp_time", I),
    (
        "clocksource",
        N("elevator times I/O with its own clock (virtual, or the monotonic clock)"),
    ),
    (
        "gtod_reduce",
        D {
            default: "0",
            reason: "it turns off latency figures fio would report",
        },
    ),
    ("gtod_cpu", N("elevator does not run a time-keeping thread")),
    ("thinktime", I),
    ("thinktime_spin", I),
    ("thinktime_blocks", I),
    ("thinktime_blocks_type", I),
    ("thinktime_iotime", I),
    ("rate", I),
    ("rate_min", I),
    ("rate_process", I),
    ("rate_cycle", I),
    ("rate_ignore_thinktime", I),
    ("rate_iops", I),
    ("rate_iops_min", I),
    ("max_latency", R(NOT_YET)),
    ("latency_target", R(NOT_YET)),
    ("latency_window", R(NOT_YET)),
    ("latency_percentile", R(NOT_YET)),
    (
        "latency_run",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("steadystate", R(NOT_YET)),
    (
        "steadystate_duration",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "steadystate_ramp_time",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    // Verification.
    ("verify_only", I),
    ("verify", I),
    ("do_verify", I),
    ("verify_interval", I),
    ("verify_offset", R(NOT_YET)),
    ("verify_pattern", I),
    ("verify_fatal", I),
    (
        "verify_dump",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "verify_async",
        N("elevator checks data in its completion path, not in extra threads"),
    ),
    (
        "verify_async_cpus",
        N("elevator checks data in its completion path, not in extra threads"),
    ),
    ("verify_backlog", I),
    ("verify_backlog_batch", R(NOT_YET)),
    (
        "experimental_verify",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "verify_state_load",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "verify_state_save",
        D {
            default: "1|0",
            reason: NOT_YET,
        },
    ),
    (
        "trim_percentage",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "trim_verify_zero",
        D {
            default: "1",
            reason: NOT_YET,
        },
    ),
    ("trim_backlog", R(NOT_YET)),
    ("trim_backlog_batch", R(NOT_YET)),
    // I/O logs and replay.
    ("write_iolog", R(IOLOG)),
    ("read_iolog", R(IOLOG)),
    (
        "read_iolog_chunked",
        D {
            default: "0",
            reason: IOLOG,
        },
    ),
    ("replay_no_stall", R(IOLOG)),
    ("replay_redirect", R(IOLOG)),
    ("replay_scale", R(IOLOG)),
    ("replay_align", R(IOLOG)),
    ("replay_time_scale", R(IOLOG)),
    ("replay_skip", R(IOLOG)),
    ("merge_blktrace_file", R(IOLOG)),
    ("merge_blktrace_scalars", R(IOLOG)),
    ("merge_blktrace_iters", R(IOLOG)),
    // Process.
    ("exec_prerun", R("elevator does not run commands")),
    ("exec_postrun", R("elevator does not run commands")),
    (
        "nice",
        D {
            default: "0",
            reason: PROCESS,
        },
    ),
    ("prio", R(PROCESS)),
    ("prioclass", R(PROCESS)),
    ("cpumask", R("use cpus_allowed, which elevator implements")),
    ("cpus_allowed", I),
    (
        "cpus_allowed_policy",
        D {
            default: "shared",
            reason: NOT_YET,
        },
    ),
    ("numa_cpu_nodes", R(PROCESS)),
    ("numa_mem_policy", R(PROCESS)),
    ("cgroup", R(PROCESS)),
    (
        "cgroup_nodelete",
        D {
            default: "0",
            reason: PROCESS,
        },
    ),
    ("cgroup_weight", R(PROCESS)),
    ("uid", R(PROCESS)),
    ("gid", R(PROCESS)),
    (
        "flow_id",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "flow",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "flow_sleep",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "exitall",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "exit_what",
        D {
            default: "group",
            reason: NOT_YET,
        },
    ),
    (
        "exitall_on_error",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("stonewall", I),
    ("new_group", I),
    ("thread", I),
    (
        "profile",
        R("fio's built-in job profiles are not part of elevator"),
    ),
    // Logs and reporting.
    ("per_job_logs", I),
    ("write_bw_log", I),
    ("write_lat_log", I),
    ("write_iops_log", I),
    ("write_hist_log", R(NOT_YET)),
    (
        "bwavgtime",
        D {
            default: "500",
            reason: OUTPUT,
        },
    ),
    (
        "iopsavgtime",
        D {
            default: "500",
            reason: OUTPUT,
        },
    ),
    ("log_entries", N("elevator grows its logs as needed")),
    ("log_avg_msec", I),
    (
        "log_hist_msec",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "log_hist_coarseness",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "log_max_value",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("log_offset", I),
    (
        "log_prio",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "log_compression",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("log_compression_cpus", R(NOT_YET)),
    (
        "log_store_compressed",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "log_unix_epoch",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "log_alternate_epoch",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "log_alternate_epoch_clock_id",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    (
        "block_error_percentiles",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("group_reporting", I),
    (
        "stats",
        D {
            default: "1",
            reason: OUTPUT,
        },
    ),
    ("clat_percentiles", I),
    ("lat_percentiles", I),
    ("slat_percentiles", I),
    ("percentile_list", I),
    (
        "significant_figures",
        D {
            default: "4",
            reason: OUTPUT,
        },
    ),
    (
        "disk_util",
        D {
            default: "1",
            reason: OUTPUT,
        },
    ),
    (
        "disable_lat",
        D {
            default: "0",
            reason: OUTPUT,
        },
    ),
    (
        "disable_clat",
        D {
            default: "0",
            reason: OUTPUT,
        },
    ),
    (
        "disable_slat",
        D {
            default: "0",
            reason: OUTPUT,
        },
    ),
    (
        "disable_bw_measurement",
        D {
            default: "0",
            reason: OUTPUT,
        },
    ),
    (
        "continue_on_error",
        D {
            default: "none|0",
            reason: NOT_YET,
        },
    ),
    ("ignore_error", R(NOT_YET)),
    (
        "error_dump",
        D {
            default: "0",
            reason: NOT_YET,
        },
    ),
    ("kb_base", I),
    (
        "unit_base",
        D {
            default: "0",
            reason: OUTPUT,
        },
    ),
    // Engine options (fio knows them once the engine is chosen).
    (
        "cmdprio_percentage",
        engine("an io_uring/libaio option: elevator does not implement I/O priorities (yet)"),
    ),
    (
        "cmdprio_class",
        engine("an io_uring/libaio option: elevator does not implement I/O priorities (yet)"),
    ),
    (
        "cmdprio",
        engine("an io_uring/libaio option: elevator does not implement I/O priorities (yet)"),
    ),
    (
        "cmdprio_bssplit",
        engine("an io_uring/libaio option: elevator does not implement I/O priorities (yet)"),
    ),
    (
        "fixedbufs",
        engine("an io_uring option: elevator sets up its own io_uring"),
    ),
    (
        "nonvectored",
        engine("an io_uring option: elevator sets up its own io_uring"),
    ),
    (
        "force_async",
        engine("an io_uring option: elevator sets up its own io_uring"),
    ),
    (
        "registerfiles",
        engine("an io_uring option: elevator sets up its own io_uring"),
    ),
    (
        "sqthread_poll",
        engine("an io_uring option: elevator sets up its own io_uring"),
    ),
    (
        "sqthread_poll_cpu",
        engine("an io_uring option: elevator sets up its own io_uring"),
    ),
    (
        "cmd_type",
        engine("an io_uring_cmd option: elevator does not run that engine"),
    ),
    (
        "hipri",
        engine("an io_uring option: elevator sets up its own io_uring (see its --poll-us)"),
    ),
    (
        "userspace_reap",
        engine("a libaio option: elevator runs every engine through its own queue"),
    ),
    (
        "hipri_percentage",
        engine("a pvsync2 option: elevator runs every engine through its own queue"),
    ),
    (
        "nowait",
        engine(
            "an io_uring/libaio/pvsync2 option: elevator runs every engine through its own queue",
        ),
    ),
    (
        "cpuload",
        engine("a cpuio option: elevator does not run the cpuio engine"),
    ),
    (
        "cpuchunks",
        engine("a cpuio option: elevator does not run the cpuio engine"),
    ),
    (
        "cpumode",
        engine("a cpuio option: elevator does not run the cpuio engine"),
    ),
    (
        "exit_on_io_done",
        engine("a cpuio option: elevator does not run the cpuio engine"),
    ),
    (
        "namenode",
        engine("a libhdfs option: elevator does not run that engine"),
    ),
    (
        "hdfsdirectory",
        engine("a libhdfs option: elevator does not run that engine"),
    ),
    (
        "port",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "hostname",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "serverip",
        engine("a librpma option: elevator does not run that engine"),
    ),
    (
        "direct_write_to_pmem",
        engine("a librpma option: elevator does not run that engine"),
    ),
    (
        "busy_wait_polling",
        engine("a librpma option: elevator does not run that engine"),
    ),
    (
        "interface",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "ttl",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "nodelay",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "protocol",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "listen",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "pingpong",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "window_size",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "mss",
        engine("a network engine option: elevator does not run network engines"),
    ),
    (
        "donorname",
        engine("an e4defrag option: elevator does not run that engine"),
    ),
    (
        "inplace",
        engine("an e4defrag option: elevator does not run that engine"),
    ),
    (
        "clustername",
        engine("a Ceph option: elevator does not run the rbd/rados engines"),
    ),
    (
        "rbdname",
        engine("a Ceph option: elevator does not run the rbd/rados engines"),
    ),
    (
        "clientname",
        engine("a Ceph option: elevator does not run the rbd/rados engines"),
    ),
    (
        "conf",
        engine("a Ceph option: elevator does not run the rbd/rados engines"),
    ),
    (
        "busy_poll",
        engine("a Ceph option: elevator does not run the rbd/rados engines"),
    ),
    (
        "touch_objects",
        engine("a Ceph option: elevator does not run the rbd/rados engines"),
    ),
    (
        "pool",
        engine("a DAOS option: elevator does not run that engine"),
    ),
    (
        "cont",
        engine("a DAOS option: elevator does not run that engine"),
    ),
    (
        "chunk_size",
        engine("a DAOS option: elevator does not run that engine"),
    ),
    (
        "object_class",
        engine("a DAOS option: elevator does not run that engine"),
    ),
    (
        "skip_bad",
        engine("an mtd option: elevator does not run that engine"),
    ),
    (
        "verb",
        engine("an rdma option: elevator does not run that engine"),
    ),
    (
        "bindname",
        engine("an rdma option: elevator does not run that engine"),
    ),
    (
        "stat_type",
        engine("a filestat option: elevator does not run that engine"),
    ),
    (
        "readfua",
        engine("an sg option: elevator runs every engine through its own queue"),
    ),
    (
        "writefua",
        engine("an sg option: elevator runs every engine through its own queue"),
    ),
    (
        "sg_write_mode",
        engine("an sg option: elevator runs every engine through its own queue"),
    ),
    (
        "stream_id",
        engine("an sg option: elevator runs every engine through its own queue"),
    ),
    (
        "http_host",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_user",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_pass",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "https",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_mode",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_s3_region",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_s3_key",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_s3_keyid",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_s3_sse_customer_key",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_s3_sse_customer_algorithm",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_s3_storage_class",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_swift_auth_token",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "http_verbose",
        engine("an http option: elevator does not run that engine"),
    ),
    (
        "uri",
        engine("an nbd-engine option: elevator is the NBD side (`elevator serve`)"),
    ),
    (
        "gpu_dev_ids",
        engine("a libcufile option: elevator does not run that engine"),
    ),
    (
        "cuda_io",
        engine("a libcufile option: elevator does not run that engine"),
    ),
    (
        "nfs_url",
        engine("an nfs option: elevator does not run that engine"),
    ),
    (
        "program",
        engine("an exec option: elevator does not run that engine"),
    ),
    (
        "arguments",
        engine("an exec option: elevator does not run that engine"),
    ),
    (
        "grace_time",
        engine("an exec option: elevator does not run that engine"),
    ),
    (
        "std_redirect",
        engine("an exec option: elevator does not run that engine"),
    ),
    (
        "xnvme_async",
        engine("an xnvme option: elevator does not run that engine"),
    ),
    (
        "xnvme_sync",
        engine("an xnvme option: elevator does not run that engine"),
    ),
    (
        "xnvme_admin",
        engine("an xnvme option: elevator does not run that engine"),
    ),
    (
        "xnvme_dev_nsid",
        engine("an xnvme option: elevator does not run that engine"),
    ),
    (
        "xnvme_iovec",
        engine("an xnvme option: elevator does not run that engine"),
    ),
];

/// fio's other spellings: `(alias, canonical)`.
pub(super) const ALIASES: &[(&str, &str)] = &[
    ("readwrite", "rw"),
    ("blocksize", "bs"),
    ("blockalign", "ba"),
    ("blocksize_range", "bsrange"),
    ("blocksize_unaligned", "bs_unaligned"),
    ("iodepth_batch_submit", "iodepth_batch"),
    ("iodepth_batch_complete", "iodepth_batch_complete_min"),
    ("io_limit", "io_size"),
    ("fill_fs", "fill_device"),
    ("fileoffset", "offset"),
    ("nr_files", "nrfiles"),
    ("timeout", "runtime"),
    ("iomem", "mem"),
    ("iomem_align", "mem_align"),
    ("ratemin", "rate_min"),
    ("ratecycle", "rate_cycle"),
    ("wait_for_previous", "stonewall"),
    ("disable_bw", "disable_bw_measurement"),
    ("ss", "steadystate"),
    ("ss_dur", "steadystate_duration"),
    ("ss_ramp", "steadystate_ramp_time"),
    ("proto", "protocol"),
];

/// fio's options that may stand alone as a bare name (fio's "empty or
/// boolean" type). Every other option needs `=value`.
pub(super) const BARE: &[&str] = &[
    "bs_unaligned",
    "norandommap",
    "time_based",
    "verify_only",
    "exitall",
    "exitall_on_error",
    "stonewall",
    "new_group",
    "thread",
    "group_reporting",
    "zero_buffers",
    "refill_buffers",
    // Engine switches.
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "hipri",
    "listen",
    "pingpong",
];

/// The canonical name and verdict of `name` (itself or an alias).
pub(super) fn lookup(name: &str) -> Option<(&'static str, Verdict)> {
    let canonical = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |&(_, c)| c);
    TABLE
        .iter()
        .find(|(n, _)| *n == canonical)
        .map(|&(n, v)| (n, v))
}

/// The known name closest to `name` (edit distance), for "did you mean".
pub(super) fn closest(name: &str) -> Option<&'static str> {
    TABLE
        .iter()
        .map(|&(n, _)| n)
        .chain(ALIASES.iter().map(|&(a, _)| a))
        .map(|n| (distance(name, n), n))
        .min()
        .filter(|&(d, _)| d <= 2.max(name.len() / 3))
        .map(|(_, n)| n)
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The message of `DefaultOnly` options given another value.
pub(super) fn default_only_message(name: &str, default: &str, reason: &str) -> String {
    format!(
        "option '{name}' is fio's but elevator does not implement it (yet) beyond fio's default \
         ({}): {reason}",
        default.replace('|', " or ")
    )
}

/// Documentation of `DEFAULT_ONLY` notes.
pub(super) const DEFAULT_NOTE: &str = DEFAULT_ONLY;
