//! The `hdd-sata-2011` preset's write cache: cached writes complete at
//! interface speed until the cache's bytes or segments run out, then wait for
//! destaging with real seeks; adjacent cached writes are destaged as one
//! media write; more interleaved streams than segments thrash the cache.
//! Every test drives the device directly on the virtual clock.

use elevator_core::{BioFlags, Device, DeviceIo, Nanos, Op};
use elevator_sim::device::{Hdd, HddParams};

const MS: Nanos = 1_000_000;
/// 4 KiB in sectors.
const BLOCK: u32 = 8;

fn disk(overrides: &[(&str, &str)]) -> Hdd {
    let mut p = HddParams::preset("hdd-sata-2011").expect("preset");
    for (k, v) in overrides {
        p.set(k, v).expect("parameter");
    }
    Hdd::new(&p).expect("builds")
}

fn write(tag: u32, sector: u64, sectors: u32) -> DeviceIo {
    DeviceIo {
        tag,
        op: Op::Write,
        sector,
        sectors,
        flags: BioFlags::NONE,
    }
}

/// Submit `io` at `t` and wait for it alone; its completion time.
fn one(d: &mut Hdd, io: DeviceIo, t: Nanos) -> Nanos {
    d.submit(io, t);
    let done = d.next_completion().expect("a completion");
    let mut n = 0;
    d.complete(done, &mut |_, _| n += 1);
    assert_eq!(n, 1);
    done
}

/// Flush at `t`; when it completes.
fn flush(d: &mut Hdd, t: Nanos) -> Nanos {
    one(
        d,
        DeviceIo {
            tag: 0,
            op: Op::Flush,
            sector: 0,
            sectors: 0,
            flags: BioFlags::NONE,
        },
        t,
    )
}

#[test]
fn preset_is_listed_with_the_datasheet_figures() {
    assert!(
        HddParams::PRESETS
            .iter()
            .any(|(name, _)| *name == "hdd-sata-2011")
    );
    let p = HddParams::preset("hdd-sata-2011").expect("preset");
    assert_eq!(p.cache_size, 16 << 20);
    assert_eq!(p.capacity, 976_773_168 * 512);
    let d = disk(&[]);
    assert_eq!(d.revolution_ns(), 8_333_333);
    assert!(d.describe().contains("500 GB"), "{}", d.describe());
}

#[test]
fn cached_writes_complete_at_interface_speed_until_the_segments_run_out() {
    // 40 writes of 4 KiB a gigabyte apart, one at a time: 16 fit in the 16
    // segments at once; after that each waits for a destage, a seek away.
    let mut d = disk(&[]);
    let mut t = 0;
    let mut latency = Vec::new();
    for i in 0..40u32 {
        let done = one(&mut d, write(i, u64::from(i) * 2_000_000, BLOCK), t);
        latency.push(done - t);
        t = done;
    }
    assert!(
        latency[..16].iter().all(|&l| l < MS / 2),
        "the first 16 are cached: {latency:?}"
    );
    let waited = latency[16..].iter().filter(|&&l| l > 2 * MS).count();
    assert!(waited >= 20, "later ones wait for destaging: {latency:?}");
    // Each destage positions the heads: seeks and rotations, not transfers.
    let s = d.stats();
    assert!(s.positioning_ns > 24 * 2 * MS, "{s:?}");
    assert!(s.transfer_ns < 40 * MS / 10, "{s:?}");
}

#[test]
fn a_cache_full_of_bytes_drains_at_the_media_rate() {
    // 64 MiB of sequential 512 KiB writes at depth 1 from the outer edge:
    // the first ones cross the 300 MB/s interface; once 16 MiB are dirty,
    // each waits for the media (125 MB/s: 4.2 ms per 512 KiB).
    let mut d = disk(&[]);
    let mut t = 0;
    let mut latency = Vec::new();
    for i in 0..128u32 {
        let done = one(&mut d, write(i, u64::from(i) * 1024, 1024), t);
        latency.push(done - t);
        t = done;
    }
    let mean = |xs: &[Nanos]| xs.iter().sum::<Nanos>() / xs.len() as Nanos;
    let early = mean(&latency[..16]);
    let late = mean(&latency[96..]);
    assert!(early < 2 * MS, "cached: {early} ns");
    assert!(
        (3_800_000..5_500_000).contains(&late),
        "at the media rate: {late} ns"
    );
    // The drive destaged it as long runs: little positioning for 64 MiB.
    let s = d.stats();
    assert!(s.positioning_ns < s.transfer_ns / 4, "{s:?}");
}

#[test]
fn adjacent_cached_writes_are_destaged_as_one() {
    // 16 sequential 4 KiB writes, then a flush: one media write of 64 KiB
    // (one positioning), against 16 writes a track apart (16 positionings).
    let run = |stride: u64| {
        let mut d = disk(&[]);
        let mut t = 0;
        for i in 0..16u32 {
            t = one(
                &mut d,
                write(i, 1_000_000 + u64::from(i) * stride, BLOCK),
                t,
            );
        }
        let cached = t;
        let done = flush(&mut d, t);
        (cached, done - cached, d.stats())
    };
    let (cached, flush_seq, seq) = run(u64::from(BLOCK));
    let (_, flush_apart, apart) = run(5_000);
    assert!(cached < 3 * MS, "all 16 cached at once: {cached} ns");
    // One positioning (at most a seek and a revolution) and 64 KiB of media.
    assert!(seq.positioning_ns < 30 * MS, "{seq:?}");
    assert!(seq.transfer_ns < MS, "{seq:?}");
    assert!(flush_seq < 30 * MS, "{flush_seq} ns");
    // Apart, every write positions on its own.
    assert!(apart.positioning_ns > 16 * MS, "{apart:?}");
    assert!(
        flush_apart > 2 * flush_seq,
        "{flush_apart} vs {flush_seq} ns"
    );
}

/// `streams` sequential 4 KiB write streams 16 MiB apart, one write in
/// flight each, `per_stream` writes each; MB/s.
fn streams_rate(d: &mut Hdd, streams: u32, per_stream: u32) -> f64 {
    let mut written = vec![0u32; streams as usize];
    let base = |s: u32| 1_000_000 + u64::from(s) * 32_768;
    for s in 0..streams {
        d.submit(write(s, base(s), BLOCK), 0);
        written[s as usize] = 1;
    }
    let mut end = 0;
    let mut done = Vec::new();
    while let Some(t) = d.next_completion() {
        done.clear();
        d.complete(t, &mut |tag, _| done.push(tag));
        end = t;
        for &s in &done {
            let n = &mut written[s as usize];
            if *n < per_stream {
                d.submit(write(s, base(s) + u64::from(*n) * 8, BLOCK), t);
                *n += 1;
            }
        }
    }
    let bytes = f64::from(streams) * f64::from(per_stream) * 4096.0;
    bytes / (end as f64 / 1e9) / 1e6
}

#[test]
fn more_interleaved_streams_than_segments_thrash_the_cache() {
    // 4 streams fit in the 16 segments and coalesce; 32 do not: the cache
    // holds short extents and destages them a seek apart.
    let few = streams_rate(&mut disk(&[]), 4, 2048);
    let many = streams_rate(&mut disk(&[]), 32, 256);
    assert!(few > 20.0, "4 streams: {few:.2} MB/s");
    assert!(many < 10.0, "32 streams: {many:.2} MB/s");
    // With a segment per stream, 32 streams coalesce too.
    let segmented = streams_rate(&mut disk(&[("cache_segments", "64")]), 32, 256);
    assert!(segmented > 5.0 * many, "{segmented:.2} vs {many:.2} MB/s");
}

/// Seed 004's three shapes on the disk, with the job as aio-stress ran it
/// (`examples/seed004.fio`): CFQ as in 2011 beats noop, the fix does at
/// least as well as 2011 and 1.5 times noop. The simulation is
/// deterministic: these are the figures docs/seeds.md reports.
#[test]
fn seed_004_shapes_hold_on_the_2011_disk() {
    use elevator_fio::RunConfig;
    use elevator_fio::job::JobFile;
    use elevator_fio::result::WRITE;
    use elevator_sim::device::ModelSpec;
    use elevator_sim::engine::run;

    let jobs = JobFile::parse(
        include_str!("../../../../examples/seed004.fio"),
        "seed004.fio",
    )
    .expect("job file");
    let dev = ModelSpec::parse("hdd-sata-2011").expect("preset");
    let mb_s = |sched: &str, tunables: &[(&str, &str)]| {
        let cfg = RunConfig {
            scheduler: sched.into(),
            tunables: std::iter::once(&("nr_requests", "128"))
                .chain(tunables)
                .map(|&(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..RunConfig::default()
        };
        let r = run(&jobs, &dev, &cfg, &mut |_| {}).expect("runs");
        let bytes: u64 = r.jobs.iter().map(|j| j.dirs[WRITE].bytes).sum();
        bytes as f64 * 1e3 / r.elapsed as f64
    };
    let noop = mb_s("none", &[]);
    let cfq_2011 = mb_s("cfq", &[("deep_seeky_idle", "1")]);
    let fixed = mb_s("cfq", &[("deep_seeky_idle", "0")]);
    assert!(cfq_2011 > noop, "2011 {cfq_2011} vs noop {noop}");
    assert!(fixed >= cfq_2011, "fixed {fixed} vs 2011 {cfq_2011}");
    assert!(fixed >= 1.5 * noop, "fixed {fixed} vs noop {noop}");
}
