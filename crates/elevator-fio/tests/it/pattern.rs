//! What `Pattern` chooses, against fio's semantics. Figures said to be
//! fio's were measured with fio 3.33's null engine and its latency log
//! (`--write_lat_log=x --log_offset=1`: the logged offsets and sizes), with
//! the command given next to each.

use std::collections::HashMap;

use elevator_core::Op;
use elevator_fio::job::{
    Amount, Distribution, JobSpec, RandomGenerator, RwMode, RwSequencer, Zone, ZoneMode,
};
use elevator_fio::workload::{Layout, Pattern};

const K: u64 = 1024;
const M: u64 = 1024 * 1024;

fn job(rw: RwMode, size: u64) -> JobSpec {
    let mut j = JobSpec::new("t", 1);
    j.rw = rw;
    j.size = Some(Amount::Bytes(size));
    j
}

fn pattern(j: &JobSpec, clone: u32) -> Pattern {
    let files = Layout::new(1 << 40).files_for(j, clone, "t.fio").unwrap();
    Pattern::new(j, files, clone, 7).unwrap()
}

/// Every I/O until the pattern is exhausted (at most `cap`): (op, byte
/// offset on the device, length).
fn run(j: &JobSpec, cap: usize) -> Vec<(Op, u64, u64)> {
    let mut p = pattern(j, 0);
    let mut out = Vec::new();
    while !p.exhausted() && out.len() < cap {
        let io = p.choose();
        p.accepted(&io);
        out.push((io.op, io.sector * 512, u64::from(io.len)));
    }
    out
}

fn blocks(ios: &[(Op, u64, u64)], bs: u64) -> Vec<u64> {
    ios.iter().map(|io| io.1 / bs).collect()
}

/// Share of all I/Os that the hottest `fraction` of `n` blocks got.
fn hottest_share(ios: &[(Op, u64, u64)], bs: u64, n: u64, fraction: f64) -> f64 {
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for io in ios {
        *counts.entry(io.1 / bs).or_default() += 1;
    }
    let mut c: Vec<u64> = counts.into_values().collect();
    c.sort_unstable_by(|a, b| b.cmp(a));
    let top = (n as f64 * fraction) as usize;
    c.iter().take(top).sum::<u64>() as f64 / ios.len() as f64
}

#[test]
fn bssplit_proportions() {
    let mut j = job(RwMode::RandRead, 64 * M);
    j.bssplit = Some([
        vec![(4 * K, 10), (64 * K, 50), (32 * K, 40)],
        vec![],
        vec![],
    ]);
    j.randommap = false;
    j.time_based = true;
    let ios = run(&j, 100_000);
    for (bs, pct) in [(4 * K, 10.0), (64 * K, 50.0), (32 * K, 40.0)] {
        let got = ios.iter().filter(|io| io.2 == bs).count() as f64 / 1000.0;
        assert!((got - pct).abs() < 1.0, "{bs}: {got}% for {pct}%");
    }
    assert_eq!(pattern(&j, 0).max_bs(), 64 * K);
}

#[test]
fn bsrange_bounds_and_steps_as_fio() {
    // fio --name=x --ioengine=null --rw=randread --size=64m --bsrange=3k-10k
    //   --norandommap: 3k 30.4 %, 6k 30.2 %, 9k 29.0 %, 10k 10.3 %.
    let mut j = job(RwMode::RandRead, 64 * M);
    j.bsrange = Some([(3 * K, 10 * K); 3]);
    j.randommap = false;
    j.time_based = true;
    let ios = run(&j, 100_000);
    for (bs, pct) in [(3 * K, 30.0), (6 * K, 30.0), (9 * K, 30.0), (10 * K, 10.0)] {
        let got = ios.iter().filter(|io| io.2 == bs).count() as f64 / 1000.0;
        assert!((got - pct).abs() < 1.0, "{bs}: {got}% for {pct}%");
    }
    // (An I/O at the region's end is shortened to fit.)
    let inside = |io: &&(Op, u64, u64)| io.1 + io.2 < 64 * M;
    assert!(
        ios.iter()
            .filter(inside)
            .all(|io| [3, 6, 9, 10].contains(&(io.2 / K)) && io.2 % K == 0)
    );
    // Offsets are multiples of the minimum (fio's blockalign default).
    assert!(ios.iter().all(|io| io.1 % (3 * K) == 0));

    j.bsrange = Some([(4 * K, 16 * K); 3]);
    let ios = run(&j, 10_000);
    assert!(
        ios.iter()
            .all(|io| io.2 % (4 * K) == 0 && (4 * K..=16 * K).contains(&io.2))
    );
    for bs in [4, 8, 12, 16] {
        assert!(ios.iter().any(|io| io.2 == bs * K));
    }

    j.bsrange = Some([(K, 10 * K); 3]);
    j.bs_unaligned = true;
    let ios = run(&j, 10_000);
    assert!(
        ios.iter()
            .all(|io| io.2 % 512 == 0 && (K..=10 * K).contains(&io.2))
    );
    assert!(ios.iter().any(|io| io.2 % K != 0));
}

#[test]
fn blockalign_aligns_random_offsets() {
    // fio --rw=randread --size=64k --bs=4k --blockalign=2k: offsets on 2k,
    // repeats allowed (blockalign turns the random map off).
    let mut j = job(RwMode::RandRead, 64 * K);
    j.blockalign = Some([2 * K; 3]);
    j.time_based = true;
    let ios = run(&j, 10_000);
    assert!(
        ios.iter()
            .all(|io| io.1 % (2 * K) == 0 && io.1 + io.2 <= 64 * K)
    );
    assert!(ios.iter().any(|io| io.1 % (4 * K) != 0));
    assert!(ios.iter().any(|io| io.1 == 60 * K));
}

#[test]
fn zipf_shape_as_fio() {
    // fio --name=x --ioengine=null --rw=randread --size=64m --bs=4k
    //   --random_distribution=zipf:1.2: 16384 I/Os; the hottest 10 % of the
    //   blocks got 95.86 % of them, the hottest 1 % 79.46 %.
    let mut j = job(RwMode::RandRead, 64 * M);
    j.random_distribution = Distribution::Zipf(1.2);
    let ios = run(&j, usize::MAX);
    assert_eq!(ios.len(), 16384);
    let n = 16384;
    let top10 = hottest_share(&ios, 4 * K, n, 0.10);
    let top1 = hottest_share(&ios, 4 * K, n, 0.01);
    assert!((top10 - 0.9586).abs() < 0.02, "{top10}");
    assert!((top1 - 0.7946).abs() < 0.025, "{top1}");
    // Hot blocks are spread, not adjacent (fio's are too).
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for b in blocks(&ios, 4 * K) {
        *counts.entry(b).or_default() += 1;
    }
    let mut hot: Vec<(u64, u64)> = counts.into_iter().map(|(b, c)| (c, b)).collect();
    hot.sort_unstable_by(|a, b| b.cmp(a));
    assert!(hot[0].1.abs_diff(hot[1].1) > 16);
}

#[test]
fn pareto_and_normal_shapes_as_fio() {
    // fio --rw=randread --size=4m --io_size=800m --bs=4k
    //   --random_distribution=pareto:0.2 (204800 I/Os over 1024 blocks):
    //   hottest 1 % 52.5 %, 16 % 77.4 %, 32 % 85.4 %.
    // ... --random_distribution=normal:10: hottest 8 % 34.4 %, 16 % 62.8 %,
    //   32 % 93.0 %.
    let mut j = job(RwMode::RandRead, 4 * M);
    j.io_size = Some(Amount::Bytes(800 * M));
    j.random_distribution = Distribution::Pareto(0.2);
    let ios = run(&j, usize::MAX);
    assert_eq!(ios.len(), 204_800);
    for (f, want) in [(0.01, 0.5252), (0.16, 0.7735), (0.32, 0.8536)] {
        let got = hottest_share(&ios, 4 * K, 1024, f);
        assert!((got - want).abs() < 0.02, "pareto top {f}: {got} vs {want}");
    }
    j.random_distribution = Distribution::Normal(10.0);
    let ios = run(&j, usize::MAX);
    for (f, want) in [(0.08, 0.3435), (0.16, 0.6278), (0.32, 0.9298)] {
        let got = hottest_share(&ios, 4 * K, 1024, f);
        assert!((got - want).abs() < 0.03, "normal top {f}: {got} vs {want}");
    }
}

#[test]
fn zoned_percentages() {
    // fio --rw=randread --size=4m --io_size=40m --bs=4k
    //   --random_distribution=zoned:60/10:30/20:10/70: 60.1 %, 30.1 %, 9.8 %.
    let zones = vec![
        Zone {
            access: 60.0,
            size: 10.0,
        },
        Zone {
            access: 30.0,
            size: 20.0,
        },
        Zone {
            access: 10.0,
            size: 70.0,
        },
    ];
    let mut j = job(RwMode::RandRead, 100 * M);
    j.random_distribution = Distribution::Zoned {
        dirs: [zones, vec![], vec![]],
        absolute: false,
    };
    j.time_based = true;
    let ios = run(&j, 100_000);
    let share =
        |lo: u64, hi: u64| ios.iter().filter(|io| (lo..hi).contains(&io.1)).count() as f64 / 1000.0;
    assert!((share(0, 10 * M) - 60.0).abs() < 1.0);
    assert!((share(10 * M, 30 * M) - 30.0).abs() < 1.0);
    assert!((share(30 * M, 100 * M) - 10.0).abs() < 1.0);

    j.random_distribution = Distribution::Zoned {
        dirs: [
            vec![
                Zone {
                    access: 70.0,
                    size: M as f64,
                },
                Zone {
                    access: 30.0,
                    size: (200 * M) as f64,
                },
            ],
            vec![],
            vec![],
        ],
        absolute: true,
    };
    let ios = run(&j, 100_000);
    let first = ios.iter().filter(|io| io.1 < M).count() as f64 / 1000.0;
    assert!((first - 70.0).abs() < 1.0, "{first}");
    assert!(ios.iter().all(|io| io.1 + io.2 <= 100 * M));
}

#[test]
fn random_map_touches_every_block_once_per_pass() {
    let mut j = job(RwMode::RandRead, 4 * M);
    let ios = run(&j, usize::MAX);
    let mut b = blocks(&ios, 4 * K);
    assert_eq!(b.len(), 1024);
    b.sort_unstable();
    assert_eq!(b, (0..1024).collect::<Vec<_>>());

    // fio --rw=randread --size=64k --io_size=128k: the second pass repeats
    // the first one's order.
    j.io_size = Some(Amount::Bytes(8 * M));
    let ios = blocks(&run(&j, usize::MAX), 4 * K);
    assert_eq!(ios.len(), 2048);
    assert_eq!(ios[..1024], ios[1024..]);

    // lfsr: the same without a map.
    j.io_size = None;
    j.random_generator = RandomGenerator::Lfsr;
    let mut b = blocks(&run(&j, usize::MAX), 4 * K);
    b.sort_unstable();
    assert_eq!(b, (0..1024).collect::<Vec<_>>());

    // norandommap: with replacement.
    j.random_generator = RandomGenerator::Tausworthe;
    j.randommap = false;
    let mut b = blocks(&run(&j, usize::MAX), 4 * K);
    assert_eq!(b.len(), 1024);
    b.sort_unstable();
    b.dedup();
    assert!(b.len() < 1000, "{}", b.len());
}

#[test]
fn sequential_holes() {
    // fio --rw=read:4k --size=64k --bs=4k: 0 8k ... 56k 0 8k ..., 16 I/Os.
    let mut j = job(RwMode::Read, 64 * K);
    j.rw_nr = 4 * K;
    let b = blocks(&run(&j, usize::MAX), 4 * K);
    assert_eq!(b, [0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14]);
}

#[test]
fn sequential_backwards() {
    // fio --rw=read:-8k --size=1m --bs=4k --number_ios=10 logs offsets 0,
    // 1040384 (1m - 8k), 1036288, ... 1007616: 4k back after each I/O.
    let mut j = job(RwMode::Read, 1 << 20);
    j.rw_back = 8 * K;
    let ios = run(&j, 10);
    let offsets: Vec<u64> = ios.iter().map(|io| io.1).collect();
    let mut want = vec![0];
    want.extend((0..9).map(|i| (1 << 20) - 8 * K - i * 4 * K));
    assert_eq!(offsets, want);
}

#[test]
fn random_with_sequencer() {
    let mut j = job(RwMode::RandRead, 64 * M);
    j.rw_nr = 8;
    j.randommap = false;
    let ios = run(&j, 8000);
    // A new random offset every 8 I/Os, following on in between (unless
    // the region's end comes first).
    for run in ios.chunks(8) {
        for w in run.windows(2) {
            if w[0].1 + w[0].2 < 64 * M {
                assert_eq!(w[1].1, w[0].1 + w[0].2);
            }
        }
    }
    let starts: Vec<u64> = ios.chunks(8).map(|c| c[0].1).collect();
    assert!(starts.windows(2).filter(|w| w[1] == w[0] + 32 * K).count() < 5);

    j.rw_sequencer = RwSequencer::Identical;
    let ios = run(&j, 8000);
    for run in ios.chunks(8) {
        assert!(run.iter().all(|io| io.1 == run[0].1));
    }
    assert_ne!(ios[0].1, ios[8].1);
}

#[test]
fn strided_zones_as_fio() {
    // fio --rw=read --size=256k --bs=4k --zonemode=strided --zonesize=8k
    //   --zonerange=64k --zoneskip=16k: 0 1 20 21 40 41 60 61 0 1 ...
    let mut j = job(RwMode::Read, 256 * K);
    j.zonemode = ZoneMode::Strided;
    j.zonesize = 8 * K;
    j.zonerange = 64 * K;
    j.zoneskip = 16 * K;
    let b = blocks(&run(&j, usize::MAX), 4 * K);
    assert_eq!(b.len(), 64);
    assert_eq!(b[..10], [0, 1, 20, 21, 40, 41, 60, 61, 0, 1]);
    // zoneskip 0: the next zone is zonerange on.
    j.zoneskip = 0;
    let b = blocks(&run(&j, 10), 4 * K);
    assert_eq!(b[..9], [0, 1, 16, 17, 32, 33, 48, 49, 0]);
    // zonesize > zonerange: each zone twice over (fio: 0 1 0 1 2 3 2 3).
    j.zonesize = 16 * K;
    j.zonerange = 8 * K;
    let b = blocks(&run(&j, 8), 4 * K);
    assert_eq!(b, [0, 1, 0, 1, 2, 3, 2, 3]);
    // Random: 2 I/Os within each 64k zone in turn.
    j.rw = RwMode::RandRead;
    j.zonesize = 8 * K;
    j.zonerange = 64 * K;
    let b = blocks(&run(&j, usize::MAX), 4 * K);
    for (i, blk) in b.iter().enumerate() {
        let zone = (i as u64 / 2) % 4;
        assert!((zone * 16..zone * 16 + 16).contains(blk), "{i}: {blk}");
    }
    // A zone larger than the file: the file is the zone.
    j.zonesize = 1 << 40;
    j.zonerange = 1 << 40;
    assert_eq!(run(&j, usize::MAX).len(), 64);
}

#[test]
fn budgets_are_exact() {
    let mut j = job(RwMode::Read, 64 * K);
    j.io_size = Some(Amount::Bytes(40 * K));
    assert_eq!(run(&j, usize::MAX).len(), 10);
    j.io_size = Some(Amount::Bytes(200 * K));
    let b = blocks(&run(&j, usize::MAX), 4 * K);
    assert_eq!((b.len(), b[16], b[49]), (50, 0, 1));
    j.io_size = Some(Amount::Percent(50));
    assert_eq!(run(&j, usize::MAX).len(), 8);
    j.io_size = None;
    j.number_ios = 7;
    assert_eq!(run(&j, usize::MAX).len(), 7);
    j.number_ios = 0;
    j.loops = 3;
    let b = blocks(&run(&j, usize::MAX), 4 * K);
    assert_eq!(b.len(), 48);
    assert_eq!(b[16..32], b[..16]);
    // Loops of a random job: every block once per loop.
    j.rw = RwMode::RandRead;
    j.loops = 2;
    let b = blocks(&run(&j, usize::MAX), 4 * K);
    for half in b.chunks(16) {
        let mut h = half.to_vec();
        h.sort_unstable();
        assert_eq!(h, (0..16).collect::<Vec<_>>());
    }
    // Time based: never done by bytes, but number_ios still stops it.
    j.time_based = true;
    j.number_ios = 100;
    assert_eq!(run(&j, usize::MAX).len(), 100);
}

#[test]
fn mixed_directions_have_their_own_cursors() {
    // fio --rw=rw --size=64k --bs=4k,8k: reads 0 4k 8k ..., writes 0 8k ...
    let mut j = job(RwMode::ReadWrite, 64 * K);
    j.bs = [4 * K, 8 * K, 8 * K];
    let ios = run(&j, usize::MAX);
    let reads: Vec<u64> = ios
        .iter()
        .filter(|i| i.0 == Op::Read)
        .map(|i| i.1)
        .collect();
    let writes: Vec<u64> = ios
        .iter()
        .filter(|i| i.0 == Op::Write)
        .map(|i| i.1)
        .collect();
    assert!(
        reads
            .iter()
            .enumerate()
            .all(|(i, &o)| o == i as u64 * 4 * K)
    );
    assert!(
        writes
            .iter()
            .enumerate()
            .all(|(i, &o)| o == i as u64 * 8 * K)
    );
    // The amount is reached by whole blocks (fio: the last may pass it).
    let total = ios.iter().map(|i| i.2).sum::<u64>();
    assert!((64 * K..72 * K).contains(&total), "{total}");
}

#[test]
fn offset_increment_per_clone() {
    // fio --directory=d --size=64k --offset_increment=64k --numjobs=2: files
    // x.0.0 of 64k and x.1.0 of 128k; clone 1 reads 64k..128k.
    let mut j = job(RwMode::Read, 64 * K);
    j.offset_increment = Some(Amount::Bytes(64 * K));
    let mut l = Layout::new(1 << 30);
    let f0 = l.files_for(&j, 0, "t.fio").unwrap();
    let f1 = l.files_for(&j, 1, "t.fio").unwrap();
    assert_eq!((f0[0].start, f0[0].end, f0[0].bytes), (0, 64 * K, 64 * K));
    assert_eq!(
        (f1[0].start, f1[0].end, f1[0].bytes),
        (64 * K, 128 * K, 128 * K)
    );
    let mut p = Pattern::new(&j, f1.clone(), 1, 1).unwrap();
    let first = p.choose();
    assert_eq!(first.sector * 512, f1[0].sector * 512 + 64 * K);

    // A shared file grows to hold every clone (fio: 3 × 64k).
    j.filename = Some("shared".into());
    let mut l = Layout::new(1 << 30);
    let ext: Vec<_> = (0..3)
        .map(|c| l.files_for(&j, c, "t.fio").unwrap()[0])
        .collect();
    assert!(ext.iter().all(|e| e.sector == ext[0].sector));
    assert_eq!(ext[2].start, 128 * K);
    assert_eq!(l.files_for(&j, 0, "t.fio").unwrap()[0].bytes, 192 * K);

    // Percent: of the file.
    j.offset_increment = Some(Amount::Percent(25));
    j.filename = None;
    let f = Layout::new(1 << 30).files_for(&j, 2, "t.fio").unwrap();
    assert_eq!(f[0].start, 32 * K);

    // Raw device: past the end is an error naming offset_increment's line.
    let mut raw = job(RwMode::Read, M);
    raw.filename = Some("/dev/sdb".into());
    raw.offset_increment = Some(Amount::Bytes(M));
    raw.option_lines = vec![("size".into(), 4), ("offset_increment".into(), 5)];
    let raw = &raw;
    let mut l = Layout::new(4 * M);
    assert_eq!(l.files_for(raw, 3, "t.fio").unwrap()[0].start, 3 * M);
    let e = l.files_for(raw, 4, "t.fio").unwrap_err();
    assert_eq!(
        (e.line, e.option.as_deref()),
        (5, Some("offset_increment")),
        "{e}"
    );
}

#[test]
fn file_names_decide_sharing() {
    let mut a = job(RwMode::Read, M);
    a.filename_format = Some("data.$filenum".into());
    a.directory = Some("/mnt/x/".into());
    let mut b = a.clone();
    b.name = "other".into();
    assert_eq!(Layout::file_name(&a, 3, 1), "/mnt/x/data.1");
    let mut l = Layout::new(1 << 30);
    let fa = l.files_for(&a, 0, "t.fio").unwrap();
    let fb = l.files_for(&b, 0, "t.fio").unwrap();
    assert_eq!(fa[0].sector, fb[0].sector);
    b.filename_format = None;
    assert_eq!(Layout::file_name(&b, 2, 0), "/mnt/x/other.2.0");
    let fb = l.files_for(&b, 0, "t.fio").unwrap();
    assert_ne!(fa[0].sector, fb[0].sector);
}

#[test]
fn extreme_jobs_do_not_panic() {
    let mut variants = Vec::new();
    for rw in [RwMode::Read, RwMode::RandRw, RwMode::RandTrim] {
        let mut j = job(rw, 4 * K);
        variants.push(j.clone());
        j.bs = [4 * K; 3];
        j.size = Some(Amount::Bytes(4 * K));
        j.zonemode = ZoneMode::Strided;
        j.zonesize = 1 << 50;
        variants.push(j.clone());
        j.zonesize = 512;
        j.zonerange = 1;
        j.zoneskip = u64::MAX;
        variants.push(j.clone());
        let mut h = job(rw, 1 << 39);
        h.randommap = false;
        h.io_size = Some(Amount::Bytes(u64::MAX));
        h.loops = u32::MAX;
        h.rw_nr = u64::MAX;
        h.number_ios = u64::MAX;
        variants.push(h.clone());
        h.random_generator = RandomGenerator::Lfsr;
        h.random_distribution = Distribution::Zipf(0.0001);
        variants.push(h.clone());
        h.random_distribution = Distribution::Pareto(0.999);
        h.bsrange = Some([(512, 1 << 31); 3]);
        variants.push(h.clone());
        let mut b = job(rw, 1 << 30);
        b.bs = [1 << 30; 3];
        b.rw_sequencer = RwSequencer::Identical;
        b.rw_nr = 3;
        variants.push(b);
    }
    for j in &variants {
        let files = Layout::new(1 << 40).files_for(j, 0, "t.fio").unwrap();
        let mut p = Pattern::new(j, files.clone(), 0, u64::MAX).unwrap();
        for _ in 0..1000 {
            let io = p.choose();
            let f = files[0];
            assert!(io.sector * 512 >= f.sector * 512 + f.start, "{j:?}");
            assert!(io.sector * 512 + u64::from(io.len) <= f.sector * 512 + f.end);
            assert!(io.len >= 512);
            p.accepted(&io);
        }
    }
}

#[test]
fn bad_jobs_are_refused_by_option() {
    let refuse = |j: &JobSpec, option: &str| {
        let files = Layout::new(1 << 50).files_for(j, 0, "t.fio").unwrap();
        let e = Pattern::new(j, files, 0, 1).unwrap_err();
        assert_eq!(e.option.as_deref(), Some(option), "{e}");
        e.message
    };
    let mut j = job(RwMode::RandRead, 1 << 44);
    j.bs = [512; 3];
    let m = refuse(&j, "size");
    assert!(m.contains("norandommap"), "{m}");
    j.randommap = false;
    let files = Layout::new(1 << 50).files_for(&j, 0, "t.fio").unwrap();
    assert!(Pattern::new(&j, files, 0, 1).is_ok());

    let mut j = job(RwMode::Read, M);
    j.bsrange = Some([(8 * K, 4 * K); 3]);
    refuse(&j, "bsrange");
    j.bsrange = None;
    j.bssplit = Some([vec![(4 * K, 0)], vec![], vec![]]);
    refuse(&j, "bssplit");
    j.bssplit = None;
    j.blockalign = Some([100; 3]);
    refuse(&j, "blockalign");
    j.blockalign = None;
    j.rw = RwMode::RandRead;
    j.random_distribution = Distribution::Pareto(1.5);
    refuse(&j, "random_distribution");

    let mut j = job(RwMode::Read, M);
    j.offset = Amount::Bytes(u64::MAX - 10);
    assert!(Layout::new(1 << 30).files_for(&j, 0, "t.fio").is_err());
    j.offset = Amount::Bytes(0);
    j.offset_increment = Some(Amount::Bytes(u64::MAX / 2));
    let e = Layout::new(1 << 30).files_for(&j, 3, "t.fio").unwrap_err();
    assert_eq!(e.option.as_deref(), Some("offset_increment"), "{e}");
}

/// Offsets and sizes from a job file at the extremes of a `u64` (issue 26):
/// each job is refused with an error naming one of its options, or runs
/// with every I/O inside the device; nothing wraps, nothing panics.
#[test]
fn extreme_offsets_and_sizes_never_wrap() {
    use elevator_fio::job::JobFile;
    use elevator_fio::workload::{State, workers};
    const DEVICE: u64 = 1 << 30;
    let extremes = [
        "18446744073709551615",
        "18446744073709551104",
        "9223372036854775808",
        "9223372036854771712",
        "0xffffffffffffffff",
        "(2^63)",
    ];
    let mut cases = Vec::new();
    for v in extremes {
        for (opts, named) in [
            (format!("size={v}"), &["size"][..]),
            (format!("size=1m\noffset={v}"), &["offset"][..]),
            (format!("filesize={v}"), &["filesize", "size"][..]),
            (format!("size=1m\nio_size={v}"), &["io_size"][..]),
            (
                format!("size=1m\nnumjobs=2\noffset_increment={v}"),
                &["offset_increment", "offset"][..],
            ),
            (format!("size=1m\nbsrange=4k-{v}"), &["bsrange", "size"][..]),
            (format!("size=1m\nbs={v}"), &["bs", "size"][..]),
            (format!("size=1m\nrw=read:{v}"), &["rw"][..]),
            (
                format!("size=1m\nzonemode=strided\nzonesize=4k\nzoneskip={v}"),
                &["zoneskip"][..],
            ),
            (
                format!("size=1m\nzonemode=strided\nzonesize={v}"),
                &["zonesize"][..],
            ),
            (
                format!("filename=/dev/sda\nsize={v}\noffset={v}"),
                &["size", "offset"][..],
            ),
            (format!("size=1m\nnumber_ios={v}"), &["number_ios"][..]),
        ] {
            cases.push((format!("[j]\n{opts}\n"), named));
        }
    }
    for (text, named) in cases {
        let named_ok =
            |option: &Option<String>| option.as_deref().is_some_and(|o| named.contains(&o));
        let jobs = match JobFile::parse(&text, "x.fio") {
            Ok(jobs) => jobs,
            Err(e) => {
                assert!(named_ok(&e.option), "{text}: {e}");
                continue;
            }
        };
        let mut ws = match workers(&jobs, DEVICE, 1) {
            Ok(ws) => ws,
            Err(e) => {
                assert!(named_ok(&e.option), "{text}: {e}");
                continue;
            }
        };
        for w in &mut ws {
            w.start(0);
            let mut n = 0;
            while w.state == State::Running && n < 2000 {
                if !w.can_issue(0) {
                    if w.check_done(0) {
                        break;
                    }
                    continue;
                }
                let io = w.next_io(0);
                let end = (io.sector as u128 * 512) + u128::from(io.len);
                assert!(
                    end <= u128::from(DEVICE),
                    "{text}: I/O at sector {} + {} past the device",
                    io.sector,
                    io.len
                );
                w.issued(&io, 0);
                w.completed(&io, u64::from(io.len), elevator_core::Status::Ok, 0, 0);
                w.reap(0);
                n += 1;
            }
        }
    }
}
