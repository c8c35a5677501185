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
const IOLOG: &str = "elevator replays one iolog or blktrace per job as it is (read_iolog); \
                     for merged or rescaled traces use `elevator replay`";
const CONTENT: &str = "elevator does not model data contents (compression, deduplication)";
const PROCESS: &str = "elevator does not change process priorities, users, cgroups or NUMA \
                       placement (yet)";
const OUTPUT: &str = "it changes fio's reporting in a way elevator does not reproduce (yet)";
const DEFAULT_ONLY: &str = "only fio's default is supported";

/// Shorthand for [`Verdict::DefaultOnly`].
const fn d(default: &'static str, reason: &'static str) -> Verdict {
    D { default, reason }
}

/// Every fio option name (canonical), with its verdict.
/// Why an engine option is refused.
const E_IO_URING_LIBAIO: &str =
    "an io_uring/libaio option: elevator does not implement I/O priorities (yet)";
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

pub(super) const TABLE: &[(&str, Verdict)] = &[
    // Job description, files.
    ("description", I),
    ("name", I),
    ("wait_for", I),
    ("filename", I),
    ("lockfile", d("none", NOT_YET)),
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
    ("create_only", d("0", NOT_YET)),
    ("allow_file_create", d("1", NOT_YET)),
    (
        "allow_mounted_write",
        N("elevator does not check whether a device is mounted: check the target yourself"),
    ),
    ("pre_read", d("0", NO_CACHE)),
    (
        "unlink",
        N(
            "elevator lays a job's files out as extents of the device under test: there is \
           no file to delete",
        ),
    ),
    ("unlink_each_loop", d("0", NOT_YET)),
    ("fallocate", N("elevator lays out its own files")),
    ("fadvise_hint", N(NO_CACHE)),
    ("invalidate", N(NO_CACHE)),
    ("file_append", d("0", NOT_YET)),
    ("fill_device", I),
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
    ("atomic", d("0", NOT_YET)),
    ("rw", I),
    ("rw_sequencer", I),
    ("unified_rw_reporting", I),
    ("randrepeat", I),
    ("allrandrepeat", I),
    ("randseed", I),
    ("write_hint", d("none", NOT_YET)),
    ("offset", I),
    ("offset_align", d("0", NOT_YET)),
    ("offset_increment", I),
    ("number_ios", I),
    ("fsync", I),
    ("fdatasync", I),
    ("write_barrier", d("0", NOT_YET)),
    ("sync_file_range", R(NOT_YET)),
    (
        "overwrite",
        N(
            "elevator's files are extents of the device that exist before the job starts, \
           so writes always overwrite: there is nothing to lay out first",
        ),
    ),
    ("end_fsync", I),
    ("fsync_on_close", I),
    ("rwmixread", I),
    ("rwmixwrite", I),
    ("random_distribution", I),
    ("percentage_random", d("100", NOT_YET)),
    ("norandommap", I),
    ("softrandommap", N("elevator's random map is always there")),
    ("random_generator", I),
    // Block size.
    ("bs", I),
    ("bsrange", I),
    ("bssplit", I),
    ("bs_unaligned", I),
    ("bs_is_seq_rand", d("0", NOT_YET)),
    ("ba", I),
    // Buffers and memory.
    ("zero_buffers", d("0", CONTENT)),
    ("refill_buffers", d("0", CONTENT)),
    ("scramble_buffers", d("1", CONTENT)),
    ("buffer_pattern", R(CONTENT)),
    ("buffer_compress_percentage", R(CONTENT)),
    ("buffer_compress_chunk", d("512", CONTENT)),
    ("dedupe_percentage", R(CONTENT)),
    ("dedupe_mode", d("repeat", CONTENT)),
    ("dedupe_working_set_percentage", d("5", CONTENT)),
    ("dedupe_global", d("0", CONTENT)),
    ("sync", d("none|0", NOT_YET)),
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
    ("serialize_overlap", d("0", NOT_YET)),
    (
        "io_submit_mode",
        N(
            "elevator submits each job's I/O from its own thread or event loop, at the times \
           its rate asks for; offload changes which fio thread submits, not the I/O",
        ),
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
        N(
            "fio's way to save clock reads, at the price of its latency and bandwidth \
           figures; elevator's figures cost no extra clock reads in simulation, so it \
           reports them",
        ),
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
    ("latency_run", d("0", NOT_YET)),
    ("steadystate", R(NOT_YET)),
    ("steadystate_duration", d("0", NOT_YET)),
    ("steadystate_ramp_time", d("0", NOT_YET)),
    // Verification.
    ("verify_only", I),
    ("verify", I),
    ("do_verify", I),
    ("verify_interval", I),
    ("verify_offset", R(NOT_YET)),
    ("verify_pattern", I),
    ("verify_fatal", I),
    ("verify_dump", d("0", NOT_YET)),
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
    ("experimental_verify", d("0", NOT_YET)),
    ("verify_state_load", d("0", NOT_YET)),
    ("verify_state_save", d("1|0", NOT_YET)),
    ("trim_percentage", d("0", NOT_YET)),
    ("trim_verify_zero", d("1", NOT_YET)),
    ("trim_backlog", R(NOT_YET)),
    ("trim_backlog_batch", R(NOT_YET)),
    // I/O logs and replay.
    ("write_iolog", I),
    ("read_iolog", I),
    (
        "read_iolog_chunked",
        N("elevator always streams the log: it is never read whole into memory"),
    ),
    ("replay_no_stall", I),
    (
        "replay_redirect",
        N("elevator replays every log onto the job's device, at the log's offsets"),
    ),
    ("replay_scale", R(IOLOG)),
    ("replay_align", R(IOLOG)),
    ("replay_time_scale", I),
    ("replay_skip", I),
    ("merge_blktrace_file", R(IOLOG)),
    ("merge_blktrace_scalars", R(IOLOG)),
    ("merge_blktrace_iters", R(IOLOG)),
    // Process.
    ("exec_prerun", R("elevator does not run commands")),
    ("exec_postrun", R("elevator does not run commands")),
    ("nice", d("0", PROCESS)),
    ("prio", R(PROCESS)),
    ("prioclass", R(PROCESS)),
    ("cpumask", R("use cpus_allowed, which elevator implements")),
    ("cpus_allowed", I),
    ("cpus_allowed_policy", d("shared", NOT_YET)),
    ("numa_cpu_nodes", R(PROCESS)),
    ("numa_mem_policy", R(PROCESS)),
    ("cgroup", R(PROCESS)),
    ("cgroup_nodelete", d("0", PROCESS)),
    ("cgroup_weight", R(PROCESS)),
    ("uid", R(PROCESS)),
    ("gid", R(PROCESS)),
    ("flow_id", d("0", NOT_YET)),
    ("flow", d("0", NOT_YET)),
    ("flow_sleep", d("0", NOT_YET)),
    ("exitall", d("0", NOT_YET)),
    ("exit_what", d("group", NOT_YET)),
    ("exitall_on_error", d("0", NOT_YET)),
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
    ("bwavgtime", d("500", OUTPUT)),
    ("iopsavgtime", d("500", OUTPUT)),
    ("log_entries", N("elevator grows its logs as needed")),
    ("log_avg_msec", I),
    ("log_hist_msec", d("0", NOT_YET)),
    ("log_hist_coarseness", d("0", NOT_YET)),
    ("log_max_value", d("0", NOT_YET)),
    ("log_offset", I),
    ("log_prio", d("0", NOT_YET)),
    ("log_compression", d("0", NOT_YET)),
    ("log_compression_cpus", R(NOT_YET)),
    ("log_store_compressed", d("0", NOT_YET)),
    ("log_unix_epoch", d("0", NOT_YET)),
    ("log_alternate_epoch", d("0", NOT_YET)),
    ("log_alternate_epoch_clock_id", d("0", NOT_YET)),
    ("block_error_percentiles", d("0", NOT_YET)),
    ("group_reporting", I),
    ("stats", d("1", OUTPUT)),
    ("clat_percentiles", I),
    ("lat_percentiles", I),
    ("slat_percentiles", I),
    ("percentile_list", I),
    ("significant_figures", d("4", OUTPUT)),
    ("disk_util", d("1", OUTPUT)),
    ("disable_lat", d("0", OUTPUT)),
    ("disable_clat", d("0", OUTPUT)),
    ("disable_slat", d("0", OUTPUT)),
    ("disable_bw_measurement", d("0", OUTPUT)),
    ("continue_on_error", I),
    ("ignore_error", I),
    ("error_dump", I),
    ("kb_base", I),
    ("unit_base", d("0", OUTPUT)),
    // Engine options (fio knows them once the engine is chosen).
    ("cmdprio_percentage", R(E_IO_URING_LIBAIO)),
    ("cmdprio_class", R(E_IO_URING_LIBAIO)),
    ("cmdprio", R(E_IO_URING_LIBAIO)),
    ("cmdprio_bssplit", R(E_IO_URING_LIBAIO)),
    ("fixedbufs", R(E_IO_URING)),
    ("nonvectored", R(E_IO_URING)),
    ("force_async", R(E_IO_URING)),
    ("registerfiles", R(E_IO_URING)),
    ("sqthread_poll", R(E_IO_URING)),
    ("sqthread_poll_cpu", R(E_IO_URING)),
    ("cmd_type", R(E_IO_URING_CMD)),
    ("hipri", R(E_IO_URING_HIPRI)),
    ("userspace_reap", R(E_LIBAIO)),
    ("hipri_percentage", R(E_PVSYNC2)),
    ("nowait", R(E_IO_URING_LIBAIO_PVSYNC2)),
    ("cpuload", R(E_CPUIO)),
    ("cpuchunks", R(E_CPUIO)),
    ("cpumode", R(E_CPUIO)),
    ("exit_on_io_done", R(E_CPUIO)),
    ("namenode", R(E_LIBHDFS)),
    ("hdfsdirectory", R(E_LIBHDFS)),
    ("port", R(E_NET)),
    ("hostname", R(E_NET)),
    ("serverip", R(E_LIBRPMA)),
    ("direct_write_to_pmem", R(E_LIBRPMA)),
    ("busy_wait_polling", R(E_LIBRPMA)),
    ("interface", R(E_NET)),
    ("ttl", R(E_NET)),
    ("nodelay", R(E_NET)),
    ("protocol", R(E_NET)),
    ("listen", R(E_NET)),
    ("pingpong", R(E_NET)),
    ("window_size", R(E_NET)),
    ("mss", R(E_NET)),
    ("donorname", R(E_E4DEFRAG)),
    ("inplace", R(E_E4DEFRAG)),
    ("clustername", R(E_CEPH)),
    ("rbdname", R(E_CEPH)),
    ("clientname", R(E_CEPH)),
    ("conf", R(E_CEPH)),
    ("busy_poll", R(E_CEPH)),
    ("touch_objects", R(E_CEPH)),
    ("pool", R(E_DAOS)),
    ("cont", R(E_DAOS)),
    ("chunk_size", R(E_DAOS)),
    ("object_class", R(E_DAOS)),
    ("skip_bad", R(E_MTD)),
    ("verb", R(E_RDMA)),
    ("bindname", R(E_RDMA)),
    ("stat_type", R(E_FILESTAT)),
    ("readfua", R(E_SG)),
    ("writefua", R(E_SG)),
    ("sg_write_mode", R(E_SG)),
    ("stream_id", R(E_SG)),
    ("http_host", R(E_HTTP)),
    ("http_user", R(E_HTTP)),
    ("http_pass", R(E_HTTP)),
    ("https", R(E_HTTP)),
    ("http_mode", R(E_HTTP)),
    ("http_s3_region", R(E_HTTP)),
    ("http_s3_key", R(E_HTTP)),
    ("http_s3_keyid", R(E_HTTP)),
    ("http_s3_sse_customer_key", R(E_HTTP)),
    ("http_s3_sse_customer_algorithm", R(E_HTTP)),
    ("http_s3_storage_class", R(E_HTTP)),
    ("http_swift_auth_token", R(E_HTTP)),
    ("http_verbose", R(E_HTTP)),
    ("uri", R(E_NBD)),
    ("gpu_dev_ids", R(E_LIBCUFILE)),
    ("cuda_io", R(E_LIBCUFILE)),
    ("nfs_url", R(E_NFS)),
    ("program", R(E_EXEC)),
    ("arguments", R(E_EXEC)),
    ("grace_time", R(E_EXEC)),
    ("std_redirect", R(E_EXEC)),
    ("xnvme_async", R(E_XNVME)),
    ("xnvme_sync", R(E_XNVME)),
    ("xnvme_admin", R(E_XNVME)),
    ("xnvme_dev_nsid", R(E_XNVME)),
    ("xnvme_iovec", R(E_XNVME)),
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
    ("threads", "thread"),
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
/// Names longer than any option could be mistyped from get no suggestion,
/// and candidates whose length alone puts them out of reach are skipped,
/// so a long garbage name costs little.
pub(super) fn closest(name: &str) -> Option<&'static str> {
    /// Longer names are not typos of an option.
    const LONGEST: usize = 64;
    if name.len() > LONGEST {
        return None;
    }
    let reach = 2.max(name.len() / 3);
    TABLE
        .iter()
        .map(|&(n, _)| n)
        .chain(ALIASES.iter().map(|&(a, _)| a))
        .filter_map(|n| Some((distance(name, n, reach)?, n)))
        .min()
        .map(|(_, n)| n)
}

/// Levenshtein distance between `a` and `b` (bytes: option names are
/// ASCII), if it is at most `limit`; rows live on the stack and the walk
/// stops as soon as every cell of a row is past `limit`.
fn distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    const MAX: usize = 128;
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if b.len() >= MAX || a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut row = [0usize; MAX];
    for (j, cell) in row.iter_mut().enumerate().take(b.len() + 1) {
        *cell = j;
    }
    for (i, &ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        let mut best = row[0];
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            best = best.min(row[j + 1]);
            prev = cur;
        }
        if best > limit {
            return None;
        }
    }
    Some(row[b.len()]).filter(|&d| d <= limit)
}

/// The message of `DefaultOnly` options given another value.
pub(super) fn default_only_message(default: &str, reason: &str) -> String {
    format!(
        "fio's option, but elevator does not implement it (yet) beyond fio's default ({}): \
         {reason}",
        default.replace('|', " or ")
    )
}

/// Documentation of `DEFAULT_ONLY` notes.
pub(super) const DEFAULT_NOTE: &str = DEFAULT_ONLY;
