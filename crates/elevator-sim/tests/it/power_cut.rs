//! Power cuts on the cached models, checked against the write log: a
//! hand-built sequence (writes, a flush, a FUA write, more writes, the cut)
//! loses exactly what was neither flushed nor FUA.

use elevator_core::{BioFlags, Device, DeviceIo, Nanos, Op, Outcome, Status};
use elevator_sim::device::{ModelSpec, SimDevice, WriteLogDevice, WriteLogReport};
use elevator_trace::write_log::{Kind, Reader};

/// A device driven one I/O at a time, its completions collected.
struct Driver {
    dev: WriteLogDevice<Vec<u8>>,
    now: Nanos,
    done: Vec<(u32, Outcome, Nanos)>,
}

impl Driver {
    fn new(spec: &str) -> Driver {
        let dev = ModelSpec::parse(spec).unwrap().build_sim().unwrap();
        Driver {
            dev: WriteLogDevice::new(dev, Vec::new()).unwrap(),
            now: 0,
            done: Vec::new(),
        }
    }

    fn submit(&mut self, tag: u32, op: Op, sector: u64, sectors: u32, flags: BioFlags) {
        let io = DeviceIo {
            tag,
            op,
            sector,
            sectors,
            flags,
        };
        self.dev.submit(io, self.now);
    }

    fn write(&mut self, tag: u32, sector: u64, flags: BioFlags) {
        self.submit(tag, Op::Write, sector, 8, flags);
    }

    /// Run until nothing is outstanding; the time then.
    fn drain(&mut self) -> Nanos {
        while self.dev.outstanding() > 0 {
            let t = self
                .dev
                .next_completion()
                .expect("an outstanding I/O completes");
            self.now = self.now.max(t);
            let now = self.now;
            let done = &mut self.done;
            self.dev
                .complete(now, &mut |tag, o| done.push((tag, o, now)));
        }
        self.now
    }

    fn finish(self) -> (WriteLogReport, Vec<u8>, Vec<(u32, Outcome, Nanos)>) {
        let (r, log) = self.dev.finish(self.now).unwrap();
        (r, log, self.done)
    }
}

const A: u64 = 0;
const B: u64 = 100_000;
const FUA: u64 = 200_000;
const C: u64 = 300_000;
const D: u64 = 400_000;

/// Writes A and B, a flush, a FUA write, then C and D; the time C and D
/// were acknowledged.
fn script(d: &mut Driver) -> Nanos {
    d.write(1, A, BioFlags::NONE);
    d.write(2, B, BioFlags::NONE);
    d.drain();
    d.submit(3, Op::Flush, 0, 0, BioFlags::NONE);
    d.drain();
    d.write(4, FUA, BioFlags::FUA);
    d.drain();
    d.write(5, C, BioFlags::NONE);
    d.write(6, D, BioFlags::NONE);
    d.drain()
}

/// The media after `script` on `spec` with power cut `after` ns after C
/// and D were acknowledged: the report and the write each place holds.
fn cut(spec: &str, after: Nanos) -> (WriteLogReport, [u64; 5]) {
    let mut learn = Driver::new(spec);
    let acked = script(&mut learn);
    let mut d = Driver::new(&format!("{spec},power_cut_at={}ns", acked + after));
    assert_eq!(script(&mut d), acked, "the cut changes nothing before it");
    d.dev.end_of_run(d.now);
    let media = d.dev.media().expect("tracked");
    let held = [A, B, FUA, C, D].map(|s| media.get(s));
    let (report, log, done) = d.finish();
    assert_eq!(done.len(), 6, "one completion per I/O");
    assert!(done.iter().all(|(_, o, _)| *o == Outcome::Done));
    // The log: writes at completion, the flush at submission.
    let mut r = Reader::new(&log[..]).unwrap();
    let mut kinds = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        kinds.push((rec.head.kind, rec.head.sector, rec.head.fua()));
    }
    // A and B went together: either may complete first.
    kinds[..2].sort_by_key(|k| k.1);
    assert_eq!(
        kinds,
        vec![
            (Kind::Write, A, false),
            (Kind::Write, B, false),
            (Kind::Flush, 0, false),
            (Kind::Write, FUA, true),
            (Kind::Write, C, false),
            (Kind::Write, D, false),
        ]
    );
    (report, held)
}

fn assert_passes(r: &WriteLogReport) {
    let c = r.check.as_ref().expect("checked");
    assert_eq!(c.violations, 0, "{:?}", c.first);
    assert!(r.verdict().is_ok());
    assert_eq!(c.required_writes, 3, "A, B (flushed) and the FUA write");
}

#[test]
fn hdd_loses_exactly_the_unflushed_cache() {
    let (r, held) = cut("hdd-7200", 100_000);
    assert_passes(&r);
    assert_eq!(
        held,
        [1, 2, 3, 0, 0],
        "A, B, FUA on the media; C and D lost"
    );
    let c = r.check.as_ref().unwrap();
    assert_eq!((c.lost_writes, c.lost_sectors), (2, 16));
    assert!(r.gone.is_some_and(|g| g.power_cut));
    let line = r.summary();
    assert!(
        line.starts_with("power cut at ")
            && line.contains("lost 2 unflushed writes (16 sectors) from the write cache")
            && line.contains("every flushed or FUA write survived, nothing unwritten appeared"),
        "{line}"
    );
}

#[test]
fn hdd_destages_while_idle_before_a_late_cut() {
    let (r, held) = cut("hdd-7200", 1_000_000_000);
    assert_passes(&r);
    assert_eq!(held, [1, 2, 3, 4, 5]);
    assert_eq!(r.check.as_ref().unwrap().lost_writes, 0);
}

#[test]
fn hdd_without_a_write_cache_loses_nothing() {
    let (r, held) = cut("hdd-7200,write_cache=0", 0);
    assert_passes(&r);
    assert_eq!(held, [1, 2, 3, 4, 5]);
}

#[test]
fn ssd_loses_the_buffer_unless_protected() {
    let (r, held) = cut("ssd-sata", 100_000);
    assert_passes(&r);
    assert_eq!(held, [1, 2, 3, 0, 0]);
    assert_eq!(r.check.as_ref().unwrap().lost_sectors, 16);
    let (r, held) = cut("ssd-sata,plp=1", 100_000);
    assert_passes(&r);
    assert_eq!(
        held,
        [1, 2, 3, 4, 5],
        "power-loss protection writes the buffer"
    );
    // Past `writeback` the buffer is on flash anyway.
    let (r, held) = cut("nvme,writeback=500us", 1_000_000);
    assert_passes(&r);
    assert_eq!(held, [1, 2, 3, 4, 5]);
}

#[test]
fn in_flight_io_completes_offline_at_the_cut() {
    let mut d = Driver::new("hdd-7200,power_cut_at=1ms");
    d.write(1, C, BioFlags::FUA); // a media write: takes milliseconds
    d.submit(2, Op::Read, D, 8, BioFlags::NONE);
    d.drain();
    d.write(3, A, BioFlags::NONE); // after the cut
    d.drain();
    let (r, _, done) = d.finish();
    let offline = Outcome::Failed {
        status: Status::Offline,
        good_bytes: 0,
    };
    assert_eq!(
        done,
        vec![
            (1, offline, 1_000_000),
            (2, offline, 1_000_000),
            (3, offline, 2_000_000)
        ]
    );
    assert_passes_empty(&r);
}

fn assert_passes_empty(r: &WriteLogReport) {
    let c = r.check.as_ref().unwrap();
    assert_eq!((c.violations, c.required_writes, c.lost_writes), (0, 0, 0));
}

#[test]
fn models_without_a_cache_refuse_a_power_cut() {
    let e = ModelSpec::parse("null,power_cut_at=2s")
        .unwrap_err()
        .to_string();
    assert!(e.contains("power_cut_at") && e.contains("vanish_at"), "{e}");
    let e = ModelSpec::parse("hdd-7200,power_cut_at=soon")
        .unwrap_err()
        .to_string();
    assert!(e.contains("500ms"), "{e}");
}

#[test]
fn a_raid_of_cached_disks_loses_what_its_members_lose() {
    let (r, held) = cut(
        "raid0-8x-sas-10k,members=3,chunk=4k,member=hdd-7200",
        100_000,
    );
    assert_passes(&r);
    assert_eq!(held, [1, 2, 3, 0, 0]);
    assert_eq!(r.check.as_ref().unwrap().lost_sectors, 16);
    // SAS disks ship with their write cache off: nothing to lose.
    let (r, held) = cut("raid0-8x-sas-10k,members=3,chunk=4k", 100_000);
    assert_passes(&r);
    assert_eq!(held, [1, 2, 3, 4, 5]);
    let (r, held) = cut("raid0-8x-sas-10k,members=2,member=ssd-sata", 10_000_000);
    assert_passes(&r);
    assert_eq!(held, [1, 2, 3, 4, 5]);
}
