//! The `hdd-sata-2011` preset: a commodity 7200 rpm SATA disk of 2011, the
//! kind of "single slow SATA hdd" the cfq-idling report measured CFQ on
//! (LKML, August 2011, "CFQ: fixing performance issues"), with the bounded,
//! segmented write cache such a drive has.
//!
//! # The drive
//!
//! A 500 GB single-platter desktop drive of the Seagate Barracuda 7200.12
//! generation (ST3500418AS, sold 2009-2011). Where each value comes from:
//!
//! | parameter | value | source |
//! |---|---|---|
//! | `rpm` | 7200 | product manual (average latency 4.16 ms = half a revolution) |
//! | `capacity` | 976 773 168 sectors | IDEMA LBA1-03 count for 500 GB, as the manual lists |
//! | `heads` | 2 | one 500 GB platter (the 7200.12's platter capacity) |
//! | `outer_rate` | 125 MB/s | product manual: maximum sustained data rate |
//! | `inner_rate` | 62.5 MB/s | assumption: half the outer rate, as for `hdd-7200` (3.5-inch media) |
//! | `cylinders` | 325 000 | derived: the zones' size just above the capacity |
//! | `seek_avg` | 8.5 ms | product manual: average read seek |
//! | `write_settle` | 1.0 ms | product manual: average write seek 9.5 ms, one millisecond above the read |
//! | `seek_t2t` | 1.0 ms | product manual class figure for 2009-2011 desktop drives (read track-to-track under 1 ms) |
//! | `seek_full` | 17 ms | assumption: typical desktop full stroke (DiskSim's Barracuda: 16.7 ms) |
//! | `cache_size` | 16 MiB | product manual: 16 MB buffer for the 500 GB model |
//! | `cache_segments` | 16 | assumption, see below |
//! | `interface_rate` | 300 MB/s | SATA 3 Gb/s, the 7200.12's interface |
//! | `ncq` | 32 | SATA NCQ (the drive supports it; AHCI in 2011 enabled it) |
//! | `max_sectors` | 1024 | Linux 3.1's default `max_sectors_kb` of 512 (`BLK_DEF_MAX_SECTORS`), also the destage unit |
//!
//! Head switch, command overhead, age limit and read-ahead are `hdd-7200`'s.
//!
//! # The write cache
//!
//! The model's write cache (see the module documentation of `hdd`) accepts a
//! write that fits in `cache_size` dirty bytes and `cache_segments` separate
//! dirty extents, coalesces a write with the dirty extents it touches (so a
//! sequential stream of 4 KiB writes is destaged as runs of up to
//! `max_sectors`), and makes a write that does not fit wait while the drive
//! destages, choosing what to destage by shortest positioning time. Drive
//! buffers of the period were divided into segments (Quantum's DisCache:
//! a fixed number of LRU-replaced segments; Hitachi's CacheFlow: "multiple
//! segments" for non-contiguous areas; Maxtor's write-cache stacking: writes
//! accepted "until either the write command stack is full or the data buffer
//! is full"), and DIXtrac (Schindler and Ganger, CMU-CS-99-176) extracted
//! segment counts and replacement policies from SCSI drives of the late
//! 1990s. No datasheet of a 2011 SATA drive gives its segment count; 16 is an
//! assumption of that order, not a fit. What it means for cfq-idling: 32
//! interleaved streams do not fit in 16 segments, so without a scheduler
//! that groups them the cache holds short extents and destages them with
//! seeks; with one process's four streams at a time they fit and coalesce.
//!
//! # Against the seed
//!
//! `elevator experiment cfq-idling` runs the report's job on this preset, with
//! the batches aio-stress submits (`examples/seed004.fio`: four at a time,
//! the next four once all are back). Noop 1.89 MB/s (the seed: 2.49), CFQ as
//! in 2011 9.88 (3.59), CFQ fixed 73.0 (5.46): the seed's shapes hold (2011
//! beats noop, the fix beats both; `tests/hdd_sata_2011.rs` checks them), for
//! any segment count below the 32 streams (4, 8 and 16 tried), but CFQ's
//! rates are 2.8 to 13 times the seed's. The model destages one process's four
//! coalesced streams at near media rate; the seed's disk did not. Not
//! modelled: ext4's layout of concurrently written files, its journal, and
//! whether a 2011 drive merges separately written commands when destaging.

use super::params::HddParams;

/// The preset's name.
pub(super) const NAME: &str = "hdd-sata-2011";

/// The preset's one-line description.
pub(super) const SUMMARY: &str = "500 GB 7200 rpm SATA disk of 2011 (Barracuda 7200.12 class): 8.5 ms average seek, 125-62 MB/s, NCQ 32, 16 MiB write cache in 16 segments";

/// The preset, built on `hdd-7200`'s values for what it does not set.
pub(super) fn params(base: &HddParams) -> HddParams {
    HddParams {
        rpm: 7200.0,
        cylinders: 325_000,
        heads: 2,
        outer_rate: 125.0,
        inner_rate: 62.5,
        capacity: 976_773_168 * 512,
        seek_t2t: 1.0,
        seek_avg: 8.5,
        seek_full: 17.0,
        write_settle: 1.0,
        ncq: 32,
        write_cache: true,
        cache_size: 16 << 20,
        cache_segments: 16,
        interface_rate: 300.0,
        max_sectors: 1024,
        ..base.clone()
    }
}
