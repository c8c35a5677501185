//! `elevator replay --generate N OUT`: a synthetic tracefs trace of N
//! events (rounded up to a whole batch), streamed to a file or standard output, for the replay speed and
//! memory benchmarks. It looks like a kernel's: four tasks on device 8,0
//! write batches of 1 to 8 contiguous 4 KiB bios under a plug (Q, G, P, then
//! Q and M for each further bio, U, I, D, C), every 50th batch a random
//! read, every 64th an fsync's empty flush (Q, G, D, C). Deterministic.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufWriter, Write};

use anyhow::{Context, Result};

/// Write `events` lines of synthetic trace to `path` (`-`: stdout).
pub fn generate(path: &str, events: u64) -> Result<()> {
    let out: Box<dyn Write> = if path == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(std::fs::File::create(path).with_context(|| format!("creating {path}"))?)
    };
    let mut w = BufWriter::with_capacity(1 << 16, out);
    write_trace(&mut w, events).with_context(|| format!("writing {path}"))?;
    w.flush().with_context(|| format!("writing {path}"))
}

const TASKS: [(&str, u32); 4] = [
    ("postgres", 4100),
    ("jbd2/sda1-8", 310),
    ("kworker/u8:3", 77),
    ("my app - two", 5000),
];

fn write_trace(w: &mut dyn Write, events: u64) -> std::io::Result<()> {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let written = std::cell::Cell::new(0u64);
    let mut t: u64 = 1_000_000_000_000; // ns
    let mut batch = 0u64;
    let line = |w: &mut dyn Write, t: u64, task: (&str, u32), what: std::fmt::Arguments| {
        written.set(written.get() + 1);
        writeln!(
            w,
            "{:>16}-{:<7} [{:03}] ..... {:>5}.{:06}: {}",
            task.0,
            task.1,
            task.1 % 2,
            t / 1_000_000_000,
            t % 1_000_000_000 / 1000,
            what
        )
    };
    // Completions wait here until the trace's time reaches them, so that
    // every line comes in time order, as tracefs prints them.
    let mut completions: BinaryHeap<Reverse<Completion>> = BinaryHeap::new();
    let complete = |w: &mut dyn Write, c: Completion| {
        let Completion {
            time,
            rw,
            start,
            sectors,
        } = c;
        if rw == "FF" {
            line(
                w,
                time,
                ("ksoftirqd/1", 22),
                format_args!("block_rq_complete: 8,0 FF () 18446744073709551615 + 0 none,0,0 [0]"),
            )
        } else {
            line(
                w,
                time,
                ("ksoftirqd/1", 22),
                format_args!("block_rq_complete: 8,0 {rw} () {start} + {sectors} be,0,4 [0]"),
            )
        }
    };
    while written.get() < events {
        batch += 1;
        let task = TASKS[(rand() % 4) as usize];
        let c = task.0;
        t += 20_000 + rand() % 50_000;
        while let Some(&Reverse(due)) = completions.peek()
            && due.time <= t
        {
            completions.pop();
            complete(w, due)?;
        }
        if batch.is_multiple_of(64) {
            line(
                w,
                t,
                task,
                format_args!("block_bio_queue: 8,0 FWS 0 + 0 [{c}]"),
            )?;
            line(
                w,
                t + 1000,
                task,
                format_args!("block_getrq: 8,0 FWS 0 + 0 [{c}]"),
            )?;
            line(
                w,
                t + 2000,
                task,
                format_args!("block_rq_issue: 8,0 FF 0 () 0 + 0 none,0,0 [{c}]"),
            )?;
            completions.push(Reverse(Completion {
                time: t + 90_000,
                rw: "FF",
                start: 0,
                sectors: 0,
            }));
            continue;
        }
        let (rw, n) = if batch.is_multiple_of(50) {
            ("R", 1)
        } else {
            ("W", 1 + rand() % 8)
        };
        let start = (rand() % (1 << 28)) & !7;
        line(
            w,
            t,
            task,
            format_args!("block_bio_queue: 8,0 {rw} {start} + 8 [{c}]"),
        )?;
        line(
            w,
            t + 500,
            task,
            format_args!("block_getrq: 8,0 {rw} {start} + 8 [{c}]"),
        )?;
        line(w, t + 600, task, format_args!("block_plug: [{c}]"))?;
        for k in 1..n {
            let s = start + 8 * k;
            let tk = t + 600 + 400 * k;
            line(
                w,
                tk,
                task,
                format_args!("block_bio_queue: 8,0 {rw} {s} + 8 [{c}]"),
            )?;
            line(
                w,
                tk + 100,
                task,
                format_args!("block_bio_backmerge: 8,0 {rw} {s} + 8 [{c}]"),
            )?;
        }
        let te = t + 1000 + 400 * n;
        let sectors = 8 * n;
        let bytes = sectors * 512;
        line(w, te, task, format_args!("block_unplug: [{c}] 1"))?;
        line(
            w,
            te + 100,
            task,
            format_args!("block_rq_insert: 8,0 {rw} {bytes} () {start} + {sectors} be,0,4 [{c}]"),
        )?;
        line(
            w,
            te + 200,
            task,
            format_args!("block_rq_issue: 8,0 {rw} {bytes} () {start} + {sectors} be,0,4 [{c}]"),
        )?;
        completions.push(Reverse(Completion {
            time: te + 100_000,
            rw,
            start,
            sectors,
        }));
    }
    while let Some(Reverse(due)) = completions.pop() {
        complete(w, due)?;
    }
    Ok(())
}

/// A request's completion, written when the trace's time reaches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Completion {
    time: u64,
    rw: &'static str,
    start: u64,
    sectors: u64,
}
