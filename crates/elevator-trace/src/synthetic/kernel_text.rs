//! A tracefs text trace that looks like a kernel's, of any length, written
//! as it is generated: four tasks on device 8,0 write batches of 1 to 8
//! contiguous 4 KiB bios under a plug (Q, G, P, then Q and M for each
//! further bio, U, I, D, C), every 50th batch a random read, every 64th an
//! fsync's empty flush (Q, G, D, C). The replay speed and memory
//! benchmarks read it (`elevator replay --generate N`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use elevator_core::rng::Rng;

const TASKS: [(&str, u32); 4] = [
    ("postgres", 4100),
    ("jbd2/sda1-8", 310),
    ("kworker/u8:3", 77),
    ("my app - two", 5000),
];

/// One line of the synthetic trace, before its text is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// An empty preflush bio: Q, G, then a flush request issued.
    FlushQueue,
    FlushGetrq,
    FlushIssue,
    FlushComplete,
    /// A bio queued (`rw`, sector), its request got, merged, ...
    Queue(&'static str, u64),
    Getrq(&'static str, u64),
    Plug,
    Backmerge(&'static str, u64),
    Unplug,
    /// A request of `sectors` at `sector`.
    Insert(&'static str, u64, u64),
    Issue(&'static str, u64, u64),
    Complete(&'static str, u64, u64),
}

/// Writes lines in time order: a batch's own lines go out at once, and the
/// completions they cause wait until the trace's time reaches them.
struct Writer<'a> {
    w: &'a mut dyn Write,
    written: u64,
    completions: BinaryHeap<Reverse<(u64, Event)>>,
}

impl Writer<'_> {
    fn line(&mut self, t: u64, task: (&str, u32), e: Event) -> std::io::Result<()> {
        while let Some(&Reverse((due, c))) = self.completions.peek()
            && due <= t
        {
            self.completions.pop();
            self.text(due, ("ksoftirqd/1", 22), c)?;
        }
        self.text(t, task, e)
    }

    fn complete_at(&mut self, t: u64, e: Event) {
        self.completions.push(Reverse((t, e)));
    }

    fn finish(&mut self) -> std::io::Result<()> {
        while let Some(Reverse((due, c))) = self.completions.pop() {
            self.text(due, ("ksoftirqd/1", 22), c)?;
        }
        Ok(())
    }

    fn text(&mut self, t: u64, task: (&str, u32), e: Event) -> std::io::Result<()> {
        self.written += 1;
        let c = task.0;
        write!(
            self.w,
            "{:>16}-{:<7} [{:03}] ..... {:>5}.{:06}: ",
            task.0,
            task.1,
            task.1 % 2,
            t / 1_000_000_000,
            t % 1_000_000_000 / 1000,
        )?;
        match e {
            Event::FlushQueue => writeln!(self.w, "block_bio_queue: 8,0 FWS 0 + 0 [{c}]"),
            Event::FlushGetrq => writeln!(self.w, "block_getrq: 8,0 FWS 0 + 0 [{c}]"),
            Event::FlushIssue => {
                writeln!(self.w, "block_rq_issue: 8,0 FF 0 () 0 + 0 none,0,0 [{c}]")
            }
            Event::FlushComplete => writeln!(
                self.w,
                "block_rq_complete: 8,0 FF () 18446744073709551615 + 0 none,0,0 [0]"
            ),
            Event::Queue(rw, s) => writeln!(self.w, "block_bio_queue: 8,0 {rw} {s} + 8 [{c}]"),
            Event::Getrq(rw, s) => writeln!(self.w, "block_getrq: 8,0 {rw} {s} + 8 [{c}]"),
            Event::Plug => writeln!(self.w, "block_plug: [{c}]"),
            Event::Backmerge(rw, s) => {
                writeln!(self.w, "block_bio_backmerge: 8,0 {rw} {s} + 8 [{c}]")
            }
            Event::Unplug => writeln!(self.w, "block_unplug: [{c}] 1"),
            Event::Insert(rw, s, n) => writeln!(
                self.w,
                "block_rq_insert: 8,0 {rw} {} () {s} + {n} be,0,4 [{c}]",
                n * 512
            ),
            Event::Issue(rw, s, n) => writeln!(
                self.w,
                "block_rq_issue: 8,0 {rw} {} () {s} + {n} be,0,4 [{c}]",
                n * 512
            ),
            Event::Complete(rw, s, n) => {
                writeln!(
                    self.w,
                    "block_rq_complete: 8,0 {rw} () {s} + {n} be,0,4 [0]"
                )
            }
        }
    }
}

/// Write `events` lines of the trace to `w` (rounded up to a whole batch).
/// Deterministic.
pub fn write(w: &mut dyn Write, events: u64) -> std::io::Result<()> {
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let mut rand = move || rng.next_u64();
    let mut out = Writer {
        w,
        written: 0,
        completions: BinaryHeap::new(),
    };
    let mut t: u64 = 1_000_000_000_000; // ns
    let mut batch = 0u64;
    while out.written < events {
        batch += 1;
        let task = TASKS[(rand() % 4) as usize];
        t += 20_000 + rand() % 50_000;
        if batch.is_multiple_of(64) {
            out.line(t, task, Event::FlushQueue)?;
            out.line(t + 1000, task, Event::FlushGetrq)?;
            out.line(t + 2000, task, Event::FlushIssue)?;
            out.complete_at(t + 90_000, Event::FlushComplete);
            continue;
        }
        let (rw, n) = if batch.is_multiple_of(50) {
            ("R", 1)
        } else {
            ("W", 1 + rand() % 8)
        };
        let start = (rand() % (1 << 28)) & !7;
        out.line(t, task, Event::Queue(rw, start))?;
        out.line(t + 500, task, Event::Getrq(rw, start))?;
        out.line(t + 600, task, Event::Plug)?;
        for k in 1..n {
            let s = start + 8 * k;
            let tk = t + 600 + 400 * k;
            out.line(tk, task, Event::Queue(rw, s))?;
            out.line(tk + 100, task, Event::Backmerge(rw, s))?;
        }
        let te = t + 1000 + 400 * n;
        let sectors = 8 * n;
        out.line(te, task, Event::Unplug)?;
        out.line(te + 100, task, Event::Insert(rw, start, sectors))?;
        out.line(te + 200, task, Event::Issue(rw, start, sectors))?;
        out.complete_at(te + 100_000, Event::Complete(rw, start, sectors));
    }
    out.finish()
}
