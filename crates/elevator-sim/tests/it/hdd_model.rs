//! The HDD model against the figures it must reproduce, and its semantics
//! (flush, FUA, write cache, NCQ age limit, seek fit, track skew). Every test
//! drives the device directly on the virtual clock, with pseudo-random
//! offsets from fixed seeds: these are model tests, not timing tests.

use elevator_core::{BioFlags, Device, DeviceIo, Nanos, Op, Outcome};
use elevator_sim::device::{Hdd, HddParams, ModelSpec, ParamError};
use elevator_testkit::TestRng;

const MS: Nanos = 1_000_000;

fn hdd(preset: &str, overrides: &[(&str, &str)]) -> Hdd {
    let mut p = HddParams::preset(preset).expect("preset");
    for (k, v) in overrides {
        p.set(k, v).expect("parameter");
    }
    Hdd::new(&p).expect("builds")
}

fn io(tag: u32, op: Op, sector: u64, sectors: u32, flags: BioFlags) -> DeviceIo {
    DeviceIo {
        tag,
        op,
        sector,
        sectors,
        flags,
    }
}

/// Complete everything due at the device's next completion, checking that
/// the announced time is exact (something completes then).
fn next_batch(d: &mut Hdd, log: &mut Vec<(u32, Nanos)>) -> Option<Nanos> {
    let t = d.next_completion()?;
    let before = log.len();
    d.complete(t, &mut |tag, o| {
        assert_eq!(o, Outcome::Done);
        log.push((tag, t));
    });
    assert!(log.len() > before, "nothing completed at the announced {t}");
    Some(t)
}

/// A closed loop: `depth` I/Os outstanding until `n` have completed; each
/// completion submits the next at its completion time. Returns every
/// (tag, completion time) in order, and the time of the last.
fn closed_loop(
    d: &mut Hdd,
    depth: u32,
    n: u32,
    mut next: impl FnMut(u32) -> (Op, u64, u32),
) -> (Vec<(u32, Nanos)>, Nanos) {
    let mut log = Vec::with_capacity(n as usize);
    let mut issued = 0;
    while issued < depth.min(n) {
        let (op, s, c) = next(issued);
        d.submit(io(issued, op, s, c, BioFlags::NONE), 0);
        issued += 1;
    }
    let mut end = 0;
    while let Some(t) = {
        let before = log.len();
        let t = next_batch(d, &mut log);
        for _ in before..log.len() {
            if issued < n {
                let (op, s, c) = next(issued);
                d.submit(io(issued, op, s, c, BioFlags::NONE), t.unwrap_or(0));
                issued += 1;
            }
        }
        t
    } {
        assert!(d.outstanding() <= depth);
        end = t;
    }
    assert_eq!(log.len(), n as usize);
    (log, end)
}

/// 4 KiB random reads over the whole disk at `depth`: IOPS.
fn random_read_iops(d: &mut Hdd, depth: u32, n: u32, seed: u64) -> f64 {
    let blocks = d.limits().capacity / 8;
    let mut rng = TestRng::new(seed);
    let (_, end) = closed_loop(d, depth, n, |_| (Op::Read, rng.below(blocks) * 8, 8));
    f64::from(n) / (end as f64 / 1e9)
}

#[test]
fn presets_build_with_their_figures() {
    let expect = [
        ("hdd-7200", 1_953_525_168u64, 32u32, 7200.0f64, 2560u32),
        ("hdd-sas-10k", 1_172_123_568, 64, 10_000.0, 2560),
        ("hdd-sas-15k", 586_072_368, 64, 15_000.0, 2560),
        ("hdd-sata-2011", 976_773_168, 32, 7200.0, 1024),
    ];
    assert_eq!(HddParams::PRESETS.len(), expect.len());
    for ((name, capacity, depth, rpm, max_sectors), (preset, _)) in
        expect.into_iter().zip(HddParams::PRESETS)
    {
        assert_eq!(name, preset);
        let d = hdd(name, &[]);
        let l = d.limits();
        l.validate().expect("valid limits");
        assert_eq!(l.capacity, capacity, "{name}");
        assert_eq!(l.logical_block_size, 512);
        assert_eq!(l.max_sectors, max_sectors, "{name}");
        assert_eq!(d.queue_depth(), depth, "{name}");
        assert!(d.rotational());
        assert_eq!(d.revolution_ns(), (60e9 / rpm).round() as u64);
        assert_eq!(d.outstanding(), 0);
        assert_eq!(d.next_completion(), None);
        assert!(
            d.describe().contains(&format!("{rpm} rpm")),
            "{}",
            d.describe()
        );
        // Through the registry too.
        let spec = ModelSpec::parse(name).expect("spec");
        assert_eq!(spec.model(), "hdd");
        assert!(spec.build().is_ok());
    }
    assert!(HddParams::preset("hdd-5400").is_none());
}

#[test]
fn every_parameter_lists_and_sets_by_name() {
    let p = HddParams::preset("hdd-7200").unwrap();
    for v in p.list() {
        assert!(!v.help.is_empty(), "{} has no help", v.name);
        let mut q = p.clone();
        let text = if v.unit == elevator_sim::device::ParamUnit::Bool {
            if v.value != 0.0 { "1" } else { "0" }.to_string()
        } else {
            format!("{}", v.value)
        };
        q.set(v.name, &text)
            .unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert_eq!(q, p, "setting {} to its own value changes nothing", v.name);
    }
    let d = ModelSpec::parse("hdd-7200,rpm=5400,ncq=0,write_cache=off").expect("overrides");
    let dev = d.build().unwrap();
    assert_eq!(dev.queue_depth(), 1);
    assert!(dev.describe().contains("5400 rpm") && dev.describe().contains("FIFO"));
    // A 4K-native variant.
    let d4k = hdd("hdd-7200", &[("logical_block_size", "4096")]);
    assert_eq!(d4k.limits().logical_block_size, 4096);
    assert_eq!(d4k.limits().capacity % 8, 0);
}

#[test]
fn bad_parameters_are_refused_clearly() {
    let mut p = HddParams::preset("hdd-7200").unwrap();
    match p.set("rmp", "7200") {
        Err(ParamError::Unknown { name, known, .. }) => {
            assert_eq!(name, "rmp");
            for k in [
                "rpm",
                "cylinders",
                "seek_avg",
                "ncq",
                "write_cache",
                "cache_size",
            ] {
                assert!(known.contains(k), "{known}");
            }
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        p.set("rpm", "fast"),
        Err(ParamError::BadValue { .. })
    ));
    assert!(matches!(
        p.set("cylinders", "1000.5"),
        Err(ParamError::OutOfRange {
            name: "cylinders",
            ..
        })
    ));
    assert!(matches!(
        p.set("write_cache", "2"),
        Err(ParamError::BadValue { .. })
    ));

    let refused = |k: &str, v: &str, want: &str| {
        let mut p = HddParams::preset("hdd-7200").unwrap();
        p.set(k, v)
            .unwrap_or_else(|e| panic!("{k}={v} should parse: {e}"));
        match Hdd::new(&p) {
            Err(e @ ParamError::OutOfRange { name, .. }) => {
                assert_eq!(name, want, "{k}={v}: {e}");
                e.to_string()
            }
            Err(e) => panic!("{k}={v}: {e}"),
            Ok(_) => panic!("{k}={v} accepted"),
        }
    };
    refused("rpm", "0", "rpm");
    refused("heads", "0", "heads");
    refused("ncq", "100000", "ncq");
    refused("inner_rate", "250", "inner_rate");
    refused("seek_full", "0.5", "seek_full");
    refused("logical_block_size", "1024", "logical_block_size");
    refused("max_sectors", "0", "max_sectors");
    let mut p = HddParams::preset("hdd-7200").unwrap();
    p.set("zones", "1000").unwrap();
    p.set("cylinders", "500").unwrap();
    let e = Hdd::new(&p)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("cylinders"), "{e}");
    let e = refused("cylinders", "100000", "capacity");
    assert!(
        e.contains("zones hold only") && e.contains("capacity=0"),
        "{e}"
    );
    let e = refused("seek_avg", "12", "seek_avg");
    assert!(e.contains("reaches averages"), "{e}");
    let e = refused("seek_avg", "4", "seek_avg");
    assert!(e.contains("reaches averages"), "{e}");
    // capacity=0 takes what the geometry holds, whatever it is.
    let mut p = HddParams::preset("hdd-7200").unwrap();
    p.set("cylinders", "100000").unwrap();
    p.set("capacity", "0").unwrap();
    let d = Hdd::new(&p).unwrap();
    assert!(d.limits().capacity > 400_000_000);
    // Through the registry the error names the spec.
    let err = ModelSpec::parse("hdd-7200,seek_avg=20")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("hdd-7200,seek_avg=20") && err.contains("seek_avg"),
        "{err}"
    );
}

#[test]
fn seek_curve_meets_its_three_figures() {
    for (name, t2t, avg, full) in [
        ("hdd-7200", 0.8, 8.5, 16.0),
        ("hdd-sas-10k", 0.3, 4.5, 10.6),
        ("hdd-sas-15k", 0.2, 3.5, 6.5),
    ] {
        let d = hdd(name, &[]);
        let max = d.cylinders() - 1;
        let ms = |ns: u64| ns as f64 / 1e6;
        assert!((ms(d.seek_ns(1)) - t2t).abs() < 1e-3, "{name}: seek(1)");
        assert!(
            (ms(d.seek_ns(max)) - full).abs() < 1e-3,
            "{name}: seek(full)"
        );
        assert_eq!(d.seek_ns(0), 0);
        // Mean over uniformly random distinct start and end cylinders: a
        // distance d has weight 2 (N - d) / (N (N - 1)).
        let n = f64::from(d.cylinders());
        let mean: f64 = (1..=max)
            .map(|k| ms(d.seek_ns(k)) * 2.0 * (n - f64::from(k)) / (n * (n - 1.0)))
            .sum();
        assert!(
            (mean - avg).abs() / avg < 0.02,
            "{name}: mean {mean} vs {avg}"
        );
        assert!(
            (mean - avg).abs() / avg < 0.001,
            "{name}: mean {mean} vs {avg}"
        );
        // Continuous and smooth at the knee.
        let c = d.seek_curve();
        let k = c.knee;
        assert!(((c.a + c.b * k.sqrt()) - (c.c + c.e * k)).abs() < 1e-9);
        assert!((c.b / (2.0 * k.sqrt()) - c.e).abs() < 1e-12);
        assert!(k > 1.0 && k < f64::from(max));
    }
}

#[test]
fn random_reads_at_depth_1_give_the_datasheet_iops() {
    for (model, expected, seed) in [
        ("hdd-7200", 70.0..=110.0, 1),
        // The SAS presets near typical datasheet figures, ~140 and ~185.
        ("hdd-sas-10k", 115.0..=165.0, 2),
        ("hdd-sas-15k", 155.0..=215.0, 3),
    ] {
        let mut d = hdd(model, &[]);
        let iops = random_read_iops(&mut d, 1, 3000, seed);
        println!("{model} 4 KiB random reads QD1: {iops:.1} IOPS");
        assert!(expected.contains(&iops), "{model} QD1: {iops:.1} IOPS");
    }
}

#[test]
fn ncq_at_depth_32_gives_two_to_three_times_depth_1() {
    let mut d = hdd("hdd-7200", &[]);
    let qd1 = random_read_iops(&mut d, 1, 3000, 11);
    let mut d = hdd("hdd-7200", &[]);
    let qd32 = random_read_iops(&mut d, 32, 6000, 12);
    let ratio = qd32 / qd1;
    println!("hdd-7200 4 KiB random reads QD32: {qd32:.1} IOPS, QD1 {qd1:.1}: {ratio:.2}x");
    assert!(
        (2.0..=3.0).contains(&ratio),
        "QD32 {qd32:.1} / QD1 {qd1:.1} = {ratio:.2}"
    );
    // Without reordering, depth does not help.
    let mut d = hdd("hdd-7200", &[("ncq", "0")]);
    assert_eq!(d.queue_depth(), 1);
    let fifo = random_read_iops(&mut d, 1, 3000, 11);
    assert!((fifo - qd1).abs() < 1e-9);
}

#[test]
fn sequential_reads_stream_at_the_media_rate() {
    let mut d = hdd("hdd-7200", &[]);
    let n = 400;
    let (_, end) = closed_loop(&mut d, 1, n, |i| (Op::Read, u64::from(i) * 2048, 2048));
    let mbs = f64::from(n) * 1048576.0 / (end as f64 / 1e9) / 1e6;
    println!("hdd-7200 1 MiB sequential reads QD1: {mbs:.1} MB/s");
    assert!((120.0..=250.0).contains(&mbs), "{mbs:.1} MB/s");
    // No revolution lost between requests: within 10 % of the outer zone's
    // 200 MB/s less the track and cylinder switches.
    assert!(mbs > 180.0, "{mbs:.1} MB/s");
    // Inner zones are slower.
    let cap = d.limits().capacity;
    let mut d = hdd("hdd-7200", &[]);
    let (_, end) = closed_loop(&mut d, 1, n, |i| {
        (Op::Read, cap - 2048 * 401 + u64::from(i) * 2048, 2048)
    });
    let inner = f64::from(n) * 1048576.0 / (end as f64 / 1e9) / 1e6;
    assert!((80.0..=105.0).contains(&inner), "{inner:.1} MB/s");
    // Without read-ahead, each request waits most of a revolution.
    let mut d = hdd("hdd-7200", &[("read_ahead", "0")]);
    let (_, end) = closed_loop(&mut d, 1, n, |i| (Op::Read, u64::from(i) * 2048, 2048));
    let no_ra = f64::from(n) * 1048576.0 / (end as f64 / 1e9) / 1e6;
    assert!(no_ra < mbs * 0.7, "{no_ra:.1} vs {mbs:.1} MB/s");
    // Queued sequential reads need no read-ahead.
    let mut d = hdd("hdd-7200", &[("read_ahead", "0")]);
    let (_, end) = closed_loop(&mut d, 4, n, |i| (Op::Read, u64::from(i) * 2048, 2048));
    let queued = f64::from(n) * 1048576.0 / (end as f64 / 1e9) / 1e6;
    assert!(queued > 180.0, "{queued:.1} MB/s");
}

#[test]
fn crossing_a_track_costs_the_switch_not_a_revolution() {
    let d0 = hdd("hdd-7200", &[]);
    let rev = d0.revolution_ns();
    let spt = u64::from(d0.locate(0).sectors_per_track);
    let sector = |n: u64| n * rev / spt;
    // The head-1 track of cylinder 0 starts at `spt`, cylinder 1 at `2 spt`.
    assert_eq!((d0.locate(spt).cylinder, d0.locate(spt).head), (0, 1));
    assert_eq!(
        (d0.locate(2 * spt).cylinder, d0.locate(2 * spt).head),
        (1, 0)
    );
    for (boundary, switch) in [(spt, d0.head_switch_ns()), (2 * spt, d0.seek_ns(1))] {
        let mut d = hdd("hdd-7200", &[("overhead", "0"), ("read_ahead", "0")]);
        let mut log = vec![];
        // Put the head just before the boundary, then read across it: the
        // second read starts with no positioning at all.
        d.submit(io(1, Op::Read, boundary - 300, 200, BioFlags::NONE), 0);
        let t1 = next_batch(&mut d, &mut log).unwrap();
        d.submit(io(2, Op::Read, boundary - 100, 200, BioFlags::NONE), t1);
        let t2 = next_batch(&mut d, &mut log).unwrap();
        let took = t2 - t1;
        let min = sector(200) + switch;
        assert!(
            took >= min - 2 && took <= min + sector(2),
            "took {took} ns, switch {switch} ns"
        );
        assert!(took < rev / 2, "a revolution lost: {took} ns");
    }
    // Within one track, exactly the sectors' time.
    let mut d = hdd("hdd-7200", &[("overhead", "0"), ("read_ahead", "0")]);
    let mut log = vec![];
    d.submit(io(1, Op::Read, 100, 200, BioFlags::NONE), 0);
    let t1 = next_batch(&mut d, &mut log).unwrap();
    d.submit(io(2, Op::Read, 300, 200, BioFlags::NONE), t1);
    let t2 = next_batch(&mut d, &mut log).unwrap();
    assert!((t2 - t1).abs_diff(sector(200)) <= 1);
}

#[test]
fn same_inputs_give_identical_completions() {
    let run = || {
        let mut d = hdd("hdd-7200", &[("cache_size", "1m")]);
        let mut rng = TestRng::new(99);
        let cap = d.limits().capacity;
        let (log, _) = closed_loop(&mut d, 32, 3000, |i| {
            let op = match i % 5 {
                0 | 1 => Op::Read,
                2 | 3 => Op::Write,
                _ => Op::WriteZeroes,
            };
            (
                op,
                rng.below(cap / 8 - 64) * 8,
                8 * (1 + rng.below(16) as u32),
            )
        });
        (log, d.stats())
    };
    let (a, sa) = run();
    let (b, sb) = run();
    assert_eq!(a, b);
    assert_eq!(sa, sb);
    assert_eq!(sa.ios, 3000);
    assert!(sa.positioning_ns > 0 && sa.transfer_ns > 0 && sa.busy_ns > 0);
}

#[test]
fn cached_writes_complete_at_the_interface_and_a_flush_waits_for_the_media() {
    let mut d = hdd("hdd-7200", &[]);
    let mut log = vec![];
    let mut rng = TestRng::new(5);
    let blocks = d.limits().capacity / 8;
    for tag in 0..8 {
        d.submit(
            io(tag, Op::Write, rng.below(blocks) * 8, 8, BioFlags::NONE),
            0,
        );
    }
    while log.len() < 8 {
        next_batch(&mut d, &mut log);
    }
    // Overhead (100 us) and 4 KiB at 600 MB/s each, one after another.
    let writes_done = log[7].1;
    assert!(writes_done < MS, "cached writes took {writes_done} ns");
    let before = d.stats();
    d.submit(io(100, Op::Flush, 0, 0, BioFlags::NONE), writes_done);
    // A read submitted after the flush waits for it.
    d.submit(io(101, Op::Read, 8, 8, BioFlags::NONE), writes_done);
    next_batch(&mut d, &mut log);
    next_batch(&mut d, &mut log);
    assert_eq!(log[8].0, 100, "the flush completes first");
    let flushed = log[8].1;
    // Eight random 4 KiB writes go to the media: milliseconds each.
    assert!(
        flushed - writes_done > 8 * 2 * MS,
        "flush after {} ns",
        flushed - writes_done
    );
    let after = d.stats();
    assert!(after.positioning_ns > before.positioning_ns);
    assert!(log[9].1 > flushed);
    // A flush with nothing dirty takes the command overhead.
    d.submit(io(102, Op::Flush, 0, 0, BioFlags::NONE), log[9].1);
    let t = next_batch(&mut d, &mut log).unwrap();
    assert_eq!(t - log[9].1, 100_000);
}

#[test]
fn fua_and_uncached_writes_take_media_time() {
    let mut rng = TestRng::new(6);
    for (cache, flags, media) in [
        ("1", BioFlags::NONE, false),
        ("1", BioFlags::FUA, true),
        ("0", BioFlags::NONE, true),
        ("0", BioFlags::FUA, true),
    ] {
        let mut d = hdd("hdd-7200", &[("write_cache", cache)]);
        let blocks = d.limits().capacity / 8;
        let mut log = vec![];
        let mut total = 0;
        let mut t = 0;
        for tag in 0..20 {
            d.submit(io(tag, Op::Write, rng.below(blocks) * 8, 8, flags), t);
            let done = next_batch(&mut d, &mut log).unwrap();
            total += done - t;
            t = done;
        }
        let mean = total / 20;
        if media {
            // Seek, settle and rotation: about 13 ms.
            assert!(mean > 5 * MS, "cache={cache} {flags}: {mean} ns");
        } else {
            assert!(mean < MS / 5, "cache={cache} {flags}: {mean} ns");
        }
    }
    // A write with PREFLUSH first writes back what is dirty.
    let mut d = hdd("hdd-7200", &[]);
    let mut log = vec![];
    d.submit(io(1, Op::Write, 1_000_000_000, 8, BioFlags::NONE), 0);
    let t = next_batch(&mut d, &mut log).unwrap();
    d.submit(io(2, Op::Write, 8, 8, BioFlags::PREFLUSH), t);
    let t2 = next_batch(&mut d, &mut log).unwrap();
    assert!(t2 - t > 2 * MS, "{} ns", t2 - t);
}

#[test]
fn reads_of_cached_data_hit_the_cache() {
    let mut d = hdd("hdd-7200", &[]);
    let mut log = vec![];
    d.submit(io(1, Op::Read, 123_456_000, 64, BioFlags::NONE), 0);
    let t = next_batch(&mut d, &mut log).unwrap();
    assert!(t > MS);
    // The same data again: overhead plus 32 KiB over the interface.
    d.submit(io(2, Op::Read, 123_456_000, 64, BioFlags::NONE), t);
    let t2 = next_batch(&mut d, &mut log).unwrap();
    assert_eq!(t2 - t, 100_000 + 32768 * 1000 / 600);
    // Dirty data too.
    d.submit(io(3, Op::Write, 555_555_000, 16, BioFlags::NONE), t2);
    let t3 = next_batch(&mut d, &mut log).unwrap();
    d.submit(io(4, Op::Read, 555_555_008, 8, BioFlags::NONE), t3);
    let t4 = next_batch(&mut d, &mut log).unwrap();
    assert!(t4 - t3 < MS / 5);
    // Discard completes after the overhead.
    d.submit(io(5, Op::Discard, 0, 2048, BioFlags::NONE), t4);
    let t5 = next_batch(&mut d, &mut log).unwrap();
    assert_eq!(t5 - t4, 100_000);
}

#[test]
fn the_age_limit_serves_a_far_request() {
    // 31 requests kept busy near the outer edge, one at the inner edge.
    const FAR: u32 = u32::MAX;
    let run = |age: &str| -> Option<Nanos> {
        let mut d = hdd("hdd-7200", &[("age_limit", age)]);
        let cap = d.limits().capacity;
        let mut rng = TestRng::new(7);
        let mut log = vec![];
        for tag in 0..31 {
            d.submit(
                io(tag, Op::Read, rng.below(100_000) * 8, 8, BioFlags::NONE),
                0,
            );
        }
        d.submit(io(FAR, Op::Read, cap - 8, 8, BioFlags::NONE), 0);
        let mut tag = 31;
        while let Some(t) = next_batch(&mut d, &mut log) {
            if let Some(&(_, done)) = log.iter().find(|(tg, _)| *tg == FAR) {
                return Some(done);
            }
            if t > 3000 * MS {
                return None;
            }
            while d.outstanding() < 32 {
                d.submit(
                    io(tag, Op::Read, rng.below(100_000) * 8, 8, BioFlags::NONE),
                    t,
                );
                tag += 1;
            }
        }
        None
    };
    let served = run("500").expect("served");
    assert!((500 * MS..560 * MS).contains(&served), "{served}");
    assert_eq!(run("0"), None, "without an age limit it starves");
}

#[test]
fn fifo_without_ncq_and_reordering_with_it() {
    let order = |ncq: &str| {
        let mut d = hdd("hdd-7200", &[("ncq", ncq)]);
        let mut rng = TestRng::new(8);
        let blocks = d.limits().capacity / 8;
        let mut log = vec![];
        // More than the FIFO drive's depth, only to see the order it keeps.
        for tag in 0..16 {
            d.submit(
                io(tag, Op::Read, rng.below(blocks) * 8, 8, BioFlags::NONE),
                0,
            );
        }
        while next_batch(&mut d, &mut log).is_some() {}
        log.iter().map(|&(tag, _)| tag).collect::<Vec<_>>()
    };
    let fifo = order("0");
    assert_eq!(fifo, (0..16).collect::<Vec<_>>());
    let sptf = order("32");
    assert_ne!(sptf, fifo);
    let mut sorted = sptf.clone();
    sorted.sort();
    assert_eq!(sorted, fifo);
    // Two requests for the same place: the older first.
    let mut d = hdd("hdd-7200", &[]);
    let mut log = vec![];
    d.submit(io(1, Op::Read, 800_000_000, 8, BioFlags::NONE), 0);
    d.submit(io(2, Op::Read, 400_000_000, 8, BioFlags::NONE), 0);
    d.submit(io(3, Op::Read, 400_000_000, 8, BioFlags::NONE), 0);
    while next_batch(&mut d, &mut log).is_some() {}
    let pos = |tag| log.iter().position(|&(t, _)| t == tag).unwrap();
    assert!(pos(2) < pos(3));
}

/// Every kind of command at arbitrary times, with the cache small enough to
/// fill: each announced completion is exact, each command completes once,
/// nothing panics.
#[test]
fn mixed_commands_complete_exactly_once_at_announced_times() {
    let configs: [&[(&str, &str)]; 5] = [
        &[],
        &[("cache_size", "256k"), ("cache_segments", "4")],
        &[("write_cache", "0"), ("ncq", "0")],
        &[
            ("read_ahead", "0"),
            ("overhead", "0"),
            ("cache_size", "64k"),
        ],
        &[
            ("age_limit", "20"),
            ("cache_segments", "1"),
            ("cache_size", "16k"),
        ],
    ];
    for (c, over) in configs.iter().enumerate() {
        for seed in 0..3u64 {
            let mut d = hdd("hdd-7200", over);
            let depth = d.queue_depth();
            let cap = d.limits().capacity;
            let mut rng = TestRng::new(1000 * c as u64 + seed + 1);
            let mut log = vec![];
            let mut outstanding = std::collections::HashSet::new();
            let mut t: Nanos = 0;
            let mut next_seq = 0u64;
            let mut tag = 0u32;
            for step in 0..1500 {
                // Either submit now, or move to the next completion, or to
                // some time in between.
                let r = rng.below(10);
                if r < 5 && d.outstanding() < depth {
                    let op = match rng.below(20) {
                        0 => Op::Flush,
                        1 => Op::Discard,
                        2 => Op::WriteZeroes,
                        3..=9 => Op::Write,
                        _ => Op::Read,
                    };
                    let flags = match rng.below(10) {
                        0 => BioFlags::FUA,
                        1 => BioFlags::PREFLUSH,
                        _ => BioFlags::NONE,
                    };
                    let sector = if rng.below(2) == 0 {
                        next_seq
                    } else {
                        rng.below(cap / 8) * 8
                    };
                    let sectors = if op == Op::Flush {
                        0
                    } else {
                        8 * (1 + rng.below(64) as u32)
                    };
                    next_seq = (sector + u64::from(sectors)) % (cap - 4096);
                    d.submit(io(tag, op, sector, sectors, flags), t);
                    outstanding.insert(tag);
                    tag += 1;
                } else if r < 8 {
                    let before = log.len();
                    if let Some(nt) = next_batch(&mut d, &mut log) {
                        t = nt;
                    }
                    for &(done, _) in &log[before..] {
                        assert!(outstanding.remove(&done), "{done} completed twice");
                    }
                } else {
                    t += rng.below(20 * MS);
                    let before = log.len();
                    let next = d.next_completion();
                    d.complete(t, &mut |tg, _| log.push((tg, t)));
                    for &(done, _) in &log[before..] {
                        assert!(outstanding.remove(&done), "{done} completed twice");
                    }
                    // Nothing completes before its announced time.
                    if log.len() > before {
                        assert!(
                            next.is_some_and(|n| n <= t),
                            "config {c} seed {seed} step {step}: announced {next:?}, completed {:?} by {t}",
                            &log[before..]
                        );
                    } else {
                        assert!(next.is_none_or(|n| n > t));
                    }
                }
                assert_eq!(d.outstanding() as usize, outstanding.len());
            }
            while let Some(nt) = d.next_completion() {
                let before = log.len();
                next_batch(&mut d, &mut log);
                assert!(nt >= t);
                t = nt;
                for &(done, _) in &log[before..] {
                    assert!(outstanding.remove(&done), "{done} completed twice");
                }
            }
            assert!(
                outstanding.is_empty(),
                "config {c} seed {seed}: {outstanding:?} never completed"
            );
            assert_eq!(d.outstanding(), 0);
            assert_eq!(d.stats().ios, u64::from(tag));
        }
    }
}
