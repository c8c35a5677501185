//! Several files per job (`filename=a:b:c`, `nrfiles`, `filesize` ranges,
//! `directory` lists, `file_service_type`) and `rw=trimwrite`, against fio
//! 3.33's behaviour. The fio figures come from `--write_iolog` of the same
//! job (the command is next to each), on files in /var/tmp or on a loop
//! device for trims.

use std::collections::HashMap;

use elevator_core::Op;
use elevator_fio::job::{FileService, JobFile, JobSpec};
use elevator_fio::workload::{Layout, Pattern};

const K: u64 = 1024;
const M: u64 = 1024 * 1024;

fn parse(text: &str) -> JobSpec {
    let file = JobFile::parse(&format!("[j]\n{text}\n"), "t.fio").unwrap();
    file.jobs[0].clone()
}

/// Every I/O until the pattern is exhausted (at most `cap`): (op, file
/// index, offset in the file, length).
fn run(j: &JobSpec, cap: usize) -> Vec<(Op, usize, u64, u64)> {
    let files = Layout::new(1 << 34).files_for(j, 0, "t.fio").unwrap();
    let mut p = Pattern::new(j, files.clone(), 0, 7).unwrap();
    let mut out = Vec::new();
    while !p.exhausted() && out.len() < cap {
        let io = p.choose();
        p.accepted(&io);
        let (i, f) = files
            .iter()
            .enumerate()
            .rev()
            .find(|(_, f)| io.sector >= f.sector)
            .unwrap();
        out.push((io.op, i, (io.sector - f.sector) * 512, u64::from(io.len)));
    }
    out
}

/// `fio --name=j --filename=a:b:c --size=384k --bs=64k --rw=read
/// --write_iolog=log`: a 0, b 0, c 0, a 64k, b 64k, c 64k.
#[test]
fn a_list_of_files_is_served_round_robin() {
    let j = parse("filename=a:b\\:x:c\nsize=384k\nbs=64k\nrw=read");
    let names: Vec<_> = (0..3).map(|i| Layout::file_name(&j, 0, i)).collect();
    assert_eq!(names, ["a", "b:x", "c"]);
    let files = Layout::new(1 << 30).files_for(&j, 0, "t.fio").unwrap();
    assert_eq!(files.len(), 3);
    assert!(files.iter().all(|f| f.bytes == 128 * K));
    let ios: Vec<_> = run(&j, 100).iter().map(|io| (io.1, io.2)).collect();
    assert_eq!(
        ios,
        [
            (0, 0),
            (1, 0),
            (2, 0),
            (0, 64 * K),
            (1, 64 * K),
            (2, 64 * K)
        ]
    );
    // nrfiles after the list lowers the count; before it, the list wins
    // (fio: `--filename=a:b:c --nrfiles=2` has a and b).
    assert_eq!(Layout::file_count(&parse("filename=a:b:c\nnrfiles=2")), 2);
    assert_eq!(Layout::file_count(&parse("nrfiles=3\nfilename=a:b")), 2);
}

/// `directory=d1:d2`: clone k's files in the (k mod 2)th directory; named
/// files in the first (fio's set_name_idx).
#[test]
fn a_list_of_directories_spreads_clones() {
    let j = parse("directory=/d1:/d2\nsize=1m\nnumjobs=2");
    assert_eq!(Layout::file_name(&j, 0, 0), "/d1/j.0.0");
    assert_eq!(Layout::file_name(&j, 1, 0), "/d2/j.1.0");
    let named = parse("directory=/d1:/d2\nfilename=x:y\nsize=1m");
    assert_eq!(Layout::file_name(&named, 1, 1), "/d1/y");
}

/// `fio --name=j --nrfiles=4 --filesize=1m-3m --bs=64k --rw=read
/// --size=4m`: files of 1310720, 1638400, 1638400 and 2883584 bytes: each
/// drawn in [1m, 3m), a multiple of the block size.
#[test]
fn filesize_ranges_draw_each_file_size() {
    let j = parse("nrfiles=4\nfilesize=1m-3m\nbs=64k\nrw=read\nsize=4m");
    let files = Layout::new(1 << 30).files_for(&j, 0, "t.fio").unwrap();
    let sizes: Vec<u64> = files.iter().map(|f| f.bytes).collect();
    assert!(
        sizes
            .iter()
            .all(|&s| (M..3 * M).contains(&s) && s % (64 * K) == 0),
        "{sizes:?}"
    );
    assert!(sizes.iter().any(|&s| s != sizes[0]), "{sizes:?}");
    // The same sizes every run.
    let again = Layout::new(1 << 30).files_for(&j, 0, "t.fio").unwrap();
    assert_eq!(files, again);
    // I/O stays in each file.
    for io in run(&j, 1000) {
        assert!(io.2 + io.3 <= files[io.1].bytes, "{io:?}");
    }
}

/// `fio --name=j --filename=a:b:c --size=3m --bs=64k --rw=randread
/// --file_service_type=zipf:1.2`: a 44, b 3, c 1 of 48 reads; `normal`:
/// a 2, b 45, c 1.
#[test]
fn distributed_file_service_favours_the_first_or_middle_file() {
    let counts = |service: &str| {
        let j = parse(&format!(
            "filename=a:b:c\nsize=3m\nbs=64k\nrw=randread\nnorandommap\n\
             file_service_type={service}\nloops=20"
        ));
        assert_ne!(j.file_service.0, FileService::RoundRobin);
        let mut n: HashMap<usize, usize> = HashMap::new();
        for io in run(&j, 100_000) {
            *n.entry(io.1).or_default() += 1;
        }
        let total: usize = n.values().sum();
        [0, 1, 2].map(|i| n.get(&i).copied().unwrap_or(0) as f64 / total as f64)
    };
    let zipf = counts("zipf:1.2");
    assert!(zipf[0] > 0.85 && zipf[1] > zipf[2], "{zipf:?}");
    let normal = counts("normal");
    assert!(normal[1] > 0.85, "{normal:?}");
    let pareto = counts("pareto");
    assert!(pareto[0] > pareto[1] && pareto[0] > 0.5, "{pareto:?}");
}

/// `fio --name=j --size=256k --bs=64k --rw=trimwrite --filename=/dev/loop0
/// --direct=1 --write_iolog=log`: trim 0, write 0, trim 64k, write 64k...:
/// 256k trimmed and 256k written. `randtrimwrite` (iodepth 4): each write
/// follows its trim at the same offset, every block once.
#[test]
fn trimwrite_trims_then_writes_each_block() {
    let j = parse("size=256k\nbs=64k\nrw=trimwrite");
    let ios: Vec<_> = run(&j, 100).iter().map(|io| (io.0, io.2)).collect();
    let mut want = Vec::new();
    for b in 0..4 {
        want.push((Op::Discard, b * 64 * K));
        want.push((Op::Write, b * 64 * K));
    }
    assert_eq!(ios, want);

    let j = parse("size=256k\nbs=64k\nrw=randtrimwrite");
    let ios = run(&j, 100);
    assert_eq!(ios.len(), 8);
    let mut trimmed: Vec<u64> = Vec::new();
    for pair in ios.chunks(2) {
        assert_eq!(pair[0].0, Op::Discard);
        assert_eq!(pair[1].0, Op::Write);
        assert_eq!((pair[0].2, pair[0].3), (pair[1].2, pair[1].3));
        trimmed.push(pair[0].2);
    }
    trimmed.sort_unstable();
    assert_eq!(trimmed, [0, 64 * K, 128 * K, 192 * K]);
    // number_ios counts both, as fio doubles it.
    let j = parse("size=256k\nbs=64k\nrw=trimwrite\nnumber_ios=2");
    assert_eq!(run(&j, 100).len(), 4);
}

/// `fio --name=j --nrfiles=4 --openfiles=2 --size=512k --bs=64k --rw=read
/// --write_iolog=log`: j.0.0 0, j.0.1 0, j.0.0 64k, j.0.1 64k (both close),
/// then j.0.2 and j.0.3 the same way.
#[test]
fn openfiles_serves_only_the_open_files() {
    let j = parse("nrfiles=4\nopenfiles=2\nsize=512k\nbs=64k\nrw=read");
    let ios: Vec<_> = run(&j, 100).iter().map(|io| (io.1, io.2)).collect();
    let k = 64 * K;
    assert_eq!(
        ios,
        [
            (0, 0),
            (1, 0),
            (0, k),
            (1, k),
            (2, 0),
            (3, 0),
            (2, k),
            (3, k)
        ]
    );
    // Random I/O closes a file when its region's bytes are done, too; every
    // block is read once.
    let j = parse("nrfiles=4\nopenfiles=2\nsize=1m\nbs=64k\nrw=randread");
    let mut seen: Vec<_> = run(&j, 100).iter().map(|io| (io.1, io.2)).collect();
    assert_eq!(seen.len(), 16);
    assert!(seen[..8].iter().all(|io| io.0 < 2), "{seen:?}");
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 16);
}
