//! fio's `ioengine` names and what elevator does with each.
//!
//! Block-I/O engines (reads and writes at offsets of a file or device) all
//! map onto elevator's own path: bios into its request queue, then the
//! simulated device or io_uring. Every other engine is refused with what
//! elevator runs instead; so are names fio does not know.

/// fio's block-I/O engines on Linux: elevator runs every one of them
/// through its own queue.
pub const BLOCK_ENGINES: &[&str] = &[
    "sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap",
    "null", "sg", "splice",
];

/// fio's synchronous block-I/O engines (its `FIO_SYNCIO` flag): each I/O
/// completes before the next is issued, so fio caps the depth a job runs
/// at to 1 whatever its `iodepth` says. fio's `null` engine is synchronous
/// only at `iodepth=1`, where the cap changes nothing, so it is not here.
pub const SYNC_ENGINES: &[&str] = &[
    "sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "splice", "sg",
];

/// fio's note for a job whose synchronous engine caps its `iodepth` > 1
/// (fio prints it once per job clone, on stdout, as the clone starts).
pub const SYNC_DEPTH_NOTE: &str = "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1";

/// Whether fio runs `engine` synchronously (at most one I/O in flight).
pub fn is_synchronous(engine: &str) -> bool {
    SYNC_ENGINES.contains(&engine)
}

/// The note a block-I/O engine adds to a job.
pub(super) const BLOCK_ENGINE_NOTE: &str = "elevator runs every block I/O engine through its own \
    queue: bios go through elevator's request queue and scheduler to the simulated device, or to \
    the real one through io_uring, whatever engine the job names; a synchronous engine (psync, fio's \
    default, sync, vsync, pvsync, pvsync2, mmap, splice, sg) keeps one I/O in flight, as fio's does";

/// What elevator runs instead, for refusals.
const INSTEAD: &str = "elevator runs block I/O (reads, writes, trims at offsets) on files, \
    block devices and simulated devices; use a block engine such as psync, libaio or io_uring";

/// fio's other engines (and some it has on other systems), each with why
/// elevator does not run it.
const OTHER_ENGINES: &[(&str, &str)] = &[
    (
        "net",
        "it moves data over TCP/UDP sockets, not to a block device",
    ),
    (
        "netsplice",
        "it moves data over network sockets, not to a block device",
    ),
    ("rdma", "it moves data over RDMA, not to a block device"),
    ("http", "it talks HTTP/S3/Swift to an object store"),
    ("exec", "it runs a program rather than doing I/O"),
    ("cpuio", "it burns CPU rather than doing I/O"),
    (
        "nbd",
        "it is an NBD client; elevator is the NBD side: run `elevator serve` and point fio's nbd \
         engine (or any NBD client) at it",
    ),
    (
        "rbd",
        "it talks to a Ceph RADOS block device through librbd",
    ),
    ("rados", "it talks to Ceph RADOS objects"),
    ("libhdfs", "it talks to HDFS"),
    ("gfapi", "it talks to GlusterFS through libgfapi"),
    ("gfapi_async", "it talks to GlusterFS through libgfapi"),
    ("e4defrag", "it runs ext4 online defragmentation"),
    (
        "falloc",
        "it calls fallocate() rather than reading or writing",
    ),
    (
        "ftruncate",
        "it calls ftruncate() rather than reading or writing",
    ),
    ("filecreate", "it creates files rather than doing block I/O"),
    ("filestat", "it stats files rather than doing block I/O"),
    ("filedelete", "it deletes files rather than doing block I/O"),
    (
        "dircreate",
        "it creates directories rather than doing block I/O",
    ),
    (
        "dirstat",
        "it stats directories rather than doing block I/O",
    ),
    (
        "dirdelete",
        "it deletes directories rather than doing block I/O",
    ),
    ("mtd", "it drives raw MTD flash (erase blocks)"),
    ("pmemblk", "it drives persistent memory through PMDK"),
    ("dev-dax", "it drives persistent memory through device DAX"),
    ("libpmem", "it drives persistent memory through PMDK"),
    ("libpmem2", "it drives persistent memory through PMDK"),
    (
        "librpma_apm_client",
        "it moves data over RDMA to persistent memory",
    ),
    (
        "librpma_apm_server",
        "it moves data over RDMA to persistent memory",
    ),
    (
        "librpma_gpspm_client",
        "it moves data over RDMA to persistent memory",
    ),
    (
        "librpma_gpspm_server",
        "it moves data over RDMA to persistent memory",
    ),
    (
        "io_uring_cmd",
        "it sends NVMe passthrough commands, below the block layer elevator models",
    ),
    (
        "xnvme",
        "it drives NVMe devices through xNVMe, below the block layer elevator models",
    ),
    (
        "spdk",
        "it drives NVMe devices through SPDK, below the block layer elevator models",
    ),
    (
        "libcufile",
        "it moves data between GPU memory and files through cuFile",
    ),
    ("nfs", "it talks NFS through libnfs"),
    ("dfs", "it talks to DAOS"),
    ("libiscsi", "it is an iSCSI client"),
    ("libzbc", "it drives zoned block devices through libzbc"),
    (
        "windowsaio",
        "it exists only on Windows (fio on Linux refuses it too)",
    ),
    (
        "solarisaio",
        "it exists only on Solaris (fio on Linux refuses it too)",
    ),
    ("guasi", "it is no longer part of fio"),
    ("binject", "it is no longer part of fio"),
    ("syslet-rw", "it is no longer part of fio"),
];

/// Check an `ioengine` value: `Ok` with its name when elevator runs it,
/// the refusal's message otherwise.
pub(super) fn check(v: &str) -> Result<String, String> {
    if BLOCK_ENGINES.contains(&v) {
        return Ok(v.to_string());
    }
    if let Some(path) = v.strip_prefix("external") {
        let path = path.strip_prefix(':').unwrap_or(path);
        return Err(format!(
            "external engine '{path}': elevator does not load fio engine plugins; {INSTEAD}"
        ));
    }
    if let Some((_, why)) = OTHER_ENGINES.iter().find(|(name, _)| *name == v) {
        return Err(format!(
            "fio's '{v}' engine is not a block I/O engine elevator can run: {why}. {INSTEAD}"
        ));
    }
    Err(format!(
        "unknown ioengine '{v}' (fio's block I/O engines elevator runs: {})",
        BLOCK_ENGINES.join(", ")
    ))
}
