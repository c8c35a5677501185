//! The deadline-cost experiment (`elevator experiment deadline-cost`; its
//! source is `../shared/seeds/002_1fb1eeb25f99bbfa.txt`: LKML, November 2002,
//! Jens Axboe's tiobench profiles of deadline with and without its
//! red-black tree): deadline's sorted list costs O(N) per insertion and
//! merge lookup, so its CPU grows with the queue (`deadline_merge` went from
//! 1,972 oprofile samples at 128 requests per list to 11,753 at 4,096), while
//! the rbtree version stays "basically the same".
//!
//! This module owns the experiment's depths, table, shapes and plot. The
//! measuring is [`crate::microbench::measure`]'s: the CPU time per bio of
//! elevator-core's whole path, random 4 KiB reads, no device, with
//! `nomerges=0` (the seed's kernels tried every merge), for `deadline-list`
//! (2.5.45's sorted list), `deadline-rbtree` (the seed's patch) and
//! `mq-deadline` (elevator's B+tree), at queue depths from 16 to 4,096.
//! The verdicts use instructions per I/O of the same cases at 128, 512 and
//! 4,096, counted under callgrind ([`crate::cost::cells`]), when valgrind
//! is there, so that a busy machine cannot flip them; without it they are
//! timed, and say so.

use serde_json::json;

use super::figure::{Axis, Figure, Mark, Series, XyPlot};
use super::{ExperimentError, Opts, Outcome, Progress, Shape, measure_each, round_to};
use crate::cost::{CellCounter, CellMeasure};
use crate::microbench::{Case, CaseResult, Pattern};

/// The list: the seed's problem.
const LIST: &str = "deadline-list";
/// The seed's patch: a red-black tree.
const RBTREE: &str = "deadline-rbtree";
/// elevator's mq-deadline (a B+tree).
const MQ: &str = "mq-deadline";
/// The schedulers, list first.
const SCHEDULERS: [&str; 3] = [LIST, RBTREE, MQ];
/// Requests the pretend device holds.
const INFLIGHT: u32 = 32;
/// Bio size.
const BS: u32 = 4096;

/// The seed's oprofile samples of the scheduler's own functions over a
/// tiobench run, by requests per list: the stock list's `deadline_merge`,
/// the stock list's deadline functions in the top six, and the rbtree's.
mod seed {
    /// Requests per list the seed ran.
    pub const DEPTHS: [u32; 3] = [128, 512, 4096];
    /// Stock kernel, `deadline_merge` alone.
    pub const LIST_MERGE: [u32; 3] = [1972, 6094, 11753];
    /// Stock kernel: `deadline_merge`, `deadline_find_hash`,
    /// `deadline_add_request`, `deadline_move_requests` (absent from the
    /// 4,096 list), `deadline_next_request`.
    pub const LIST_ALL: [u32; 3] = [
        1972 + 315 + 283 + 248 + 196,
        6094 + 545 + 307 + 234 + 163,
        11753 + 625 + 309 + 134,
    ];
    /// rbtree kernel: `deadline_rb_find`, `deadline_hash_add`,
    /// `deadline_hash_find`, `deadline_rb_add`, `deadline_next_request`.
    pub const RBTREE_ALL: [u32; 3] = [
        267 + 234 + 225 + 204 + 157,
        287 + 236 + 350 + 197 + 121,
        523 + 424 + 931 + 293 + 166,
    ];
}

/// The list's growth from 128 to 4,096 the shape needs.
const LIST_GROWTH_4096: f64 = 5.0;
/// The list's growth from 128 to 512 the shape needs.
const LIST_GROWTH_512: f64 = 2.0;
/// The most a tree may grow from 128 to 512.
const TREE_GROWTH_512: f64 = 1.3;
/// The most a tree may grow from 128 to 4,096.
const TREE_GROWTH_4096: f64 = 1.5;

/// The cases whose instructions the verdicts use.
const COUNTED: [(&str, Pattern, u8, u32); 8] = [
    (LIST, Pattern::Random, 0, 128),
    (LIST, Pattern::Random, 0, 512),
    (LIST, Pattern::Random, 0, 4096),
    (RBTREE, Pattern::Random, 0, 128),
    (RBTREE, Pattern::Random, 0, 512),
    (RBTREE, Pattern::Random, 0, 4096),
    (MQ, Pattern::Random, 0, 128),
    (MQ, Pattern::Random, 0, 4096),
];

/// What the experiment measured: every scheduler at every depth.
#[derive(Clone, Debug)]
pub struct Results {
    depths: &'static [u32],
    base_ios: u64,
    min_ios: u64,
    repeat: u32,
    random_seed: u64,
    cases: Vec<CaseResult>,
    /// The instructions the verdicts use, or why they are timed.
    instructions: CellMeasure,
}

impl Results {
    /// Every case, by scheduler (list, rbtree, mq-deadline), then depth.
    pub fn cases(&self) -> &[CaseResult] {
        &self.cases
    }

    /// The depths measured.
    pub fn depths(&self) -> &[u32] {
        self.depths
    }

    /// CPU per I/O of `sched` at `depth`, ns (NaN if it was not measured).
    pub fn ns(&self, sched: &str, depth: u32) -> f64 {
        self.cases
            .iter()
            .find(|c| c.scheduler == sched && c.depth == depth)
            .map_or(f64::NAN, |c| c.ns_per_io)
    }

    /// The cost per I/O of `sched` at `depth` over its cost at 128.
    pub fn growth(&self, sched: &str, depth: u32) -> f64 {
        self.ns(sched, depth) / self.ns(sched, 128).max(f64::MIN_POSITIVE)
    }

    /// Instructions per I/O of `sched` at `depth`, if counted.
    pub fn instructions(&self, sched: &str, depth: u32) -> Option<f64> {
        let n = self
            .instructions
            .counts()?
            .get(sched, Pattern::Random, 0, depth);
        n.is_finite().then_some(n)
    }

    /// What the verdicts rest on.
    pub fn measure(&self) -> &CellMeasure {
        &self.instructions
    }

    /// The figure a verdict compares for `sched` at `depth`: instructions
    /// per I/O when they were counted, else ns per I/O.
    fn verdict_figure(&self, sched: &str, depth: u32) -> f64 {
        if self.instructions.counts().is_some() {
            self.instructions(sched, depth).unwrap_or(f64::NAN)
        } else {
            self.ns(sched, depth)
        }
    }
}

/// Measure every scheduler at every depth, and count the instructions of
/// the cases the verdicts use with `counter` (`None`: valgrind is not
/// there, the verdicts are timed).
pub fn measure_all(
    opts: &Opts,
    progress: Progress,
    counter: Option<&CellCounter>,
) -> Result<Results, ExperimentError> {
    let (depths, base_ios, min_ios, repeat): (&'static [u32], u64, u64, u32) = if opts.quick {
        (&[16, 64, 128, 512, 1024, 4096], 300_000, 30_000, 3)
    } else {
        (
            &[16, 32, 64, 128, 256, 512, 1024, 2048, 4096],
            1_000_000,
            100_000,
            5,
        )
    };
    // The list costs about 2 ns per queued request: fewer bios at depth.
    let ios_for = |sched: &str, depth: u32| -> u64 {
        if sched == LIST && depth > 256 {
            (base_ios * 256 / u64::from(depth)).max(min_ios)
        } else {
            base_ios
        }
    };
    let mut plan = Vec::with_capacity(SCHEDULERS.len() * depths.len());
    for sched in SCHEDULERS {
        for &depth in depths {
            plan.push(Case {
                scheduler: sched,
                depth,
                pattern: Pattern::Random,
                nomerges: 0,
                bs: BS,
                ios: ios_for(sched, depth),
                inflight: INFLIGHT,
                seed: opts.seed.wrapping_add(1),
            });
        }
    }
    let cases = measure_each(&plan, repeat, progress, |c| {
        let (sched, depth) = (c.scheduler, c.depth);
        (
            format!("{sched} depth {depth}"),
            format!("measuring {sched} at depth {depth}"),
        )
    })?;
    let instructions = CellMeasure::of(counter, &COUNTED, &mut |done, total| {
        progress("counting instructions under callgrind", done, total)
    });
    Ok(Results {
        depths,
        base_ios,
        min_ios,
        repeat,
        random_seed: opts.seed,
        cases,
        instructions,
    })
}

/// Run the experiment with instruction counts for the verdicts (see
/// [`measure_all`]), then check and render.
pub fn outcome(
    opts: &Opts,
    progress: Progress,
    counter: Option<&CellCounter>,
) -> Result<Outcome, ExperimentError> {
    Ok(outcome_of(&measure_all(opts, progress, counter)?))
}

/// The outcome of measured results: table, JSON, shapes, plot and notes.
pub fn outcome_of(r: &Results) -> Outcome {
    let shapes = shapes(r);
    let notes = notes(r, &shapes);
    Outcome {
        name: "deadline-cost",
        seed: "002",
        title: "Deadline's sorted list against its trees: CPU per I/O by queue depth".to_string(),
        table: table(r),
        data: data(r),
        shapes,
        figures: figures(r),
        notes,
    }
}

/// The table: CPU per I/O of each scheduler at each depth, and its growth.
pub fn table(r: &Results) -> String {
    let (repeat, base_ios, min_ios) = (r.repeat, r.base_ios, r.min_ios);
    let mut table = format!(
        "elevator experiment deadline-cost (seed 002): core path CPU per I/O against queue depth\n\
         {BS}-byte random reads, nomerges=0, up to {INFLIGHT} in flight, no device;\n\
         median of {repeat} runs of thread CPU time, {base_ios} bios per case\n\
         ({LIST}: fewer at depth > 256, at least {min_ios})\n\n\
         {:>11}",
        "queue depth"
    );
    for s in SCHEDULERS {
        table.push_str(&format!(" {s:>16}"));
    }
    table.push_str("   (ns per I/O)\n");
    for &d in r.depths {
        table.push_str(&format!("{d:>11}"));
        for s in SCHEDULERS {
            table.push_str(&format!(" {:>16.1}", r.ns(s, d)));
        }
        table.push('\n');
    }
    for d in [512, 4096] {
        table.push_str(&format!("{:>11}", format!("{d} vs 128")));
        for s in SCHEDULERS {
            table.push_str(&format!(" {:>15.2}x", r.growth(s, d)));
        }
        table.push('\n');
    }
    if r.instructions.counts().is_some() {
        table.push_str("\ninstructions per I/O under callgrind (the verdicts'):\n");
        for d in [128, 512, 4096] {
            table.push_str(&format!("{d:>11}"));
            for s in SCHEDULERS {
                match r.instructions(s, d) {
                    Some(n) => table.push_str(&format!(" {n:>16.0}")),
                    None => table.push_str(&format!(" {:>16}", "-")),
                }
            }
            table.push('\n');
        }
    }
    table
}

fn ratio(a: u32, b: u32) -> f64 {
    f64::from(a) / f64::from(b)
}

/// `from -> to ns per I/O (growth)`, the growth to `digits` places.
fn per_io_growth(from: f64, to: f64, digits: usize) -> String {
    format!("{from:.1} -> {to:.1} ns per I/O ({:.digits$}x)", to / from)
}

/// `sched`'s growth from 128 to `depth`: in instructions (the verdict's)
/// and in ns when counted, else in ns.
fn growth_text(r: &Results, sched: &str, depth: u32, digits: usize) -> String {
    let timed = per_io_growth(r.ns(sched, 128), r.ns(sched, depth), digits);
    match (r.instructions(sched, 128), r.instructions(sched, depth)) {
        (Some(a), Some(b)) => format!(
            "{a:.0} -> {b:.0} instructions per I/O ({:.digits$}x); {timed}",
            b / a
        ),
        _ => timed,
    }
}

/// The seed's `samples` at 128 requests and at `seed::DEPTHS[to]`, then
/// `span` and the growth to `digits` places: `A -> B samples{span} (Gx)`.
fn seed_growth(samples: [u32; 3], to: usize, span: &str, digits: usize) -> String {
    let (a, b) = (samples[0], samples[to]);
    format!("{a} -> {b} samples{span} ({:.digits$}x)", ratio(b, a))
}

/// The shapes the seed reported, checked.
pub fn shapes(r: &Results) -> Vec<Shape> {
    let ns = |s, d| r.verdict_figure(s, d);
    let (l128, l512, l4096) = (ns(LIST, 128), ns(LIST, 512), ns(LIST, 4096));
    let (r128, r512, r4096) = (ns(RBTREE, 128), ns(RBTREE, 512), ns(RBTREE, 4096));
    let (m128, m4096) = (ns(MQ, 128), ns(MQ, 4096));
    let mut shapes = vec![
        Shape {
            claim: format!(
                "{LIST} (O(N) insertion scan): at least {LIST_GROWTH_4096}x the cost per I/O at \
                 depth 4096 as at 128"
            ),
            seed: format!(
                "deadline_merge {}",
                seed_growth(
                    seed::LIST_MERGE,
                    2,
                    " from 128 to 4096 requests per list",
                    1
                )
            ),
            ours: growth_text(r, LIST, 4096, 1),
            holds: l4096 / l128 >= LIST_GROWTH_4096,
        },
        Shape {
            claim: format!(
                "{LIST}: worse already at 512 requests, at least {LIST_GROWTH_512}x the cost \
                 at 128"
            ),
            seed: format!(
                "deadline_merge {}: 'stock kernel shows worse behaviour with 512 requests vs \
                 128'",
                seed_growth(seed::LIST_MERGE, 1, " from 128 to 512", 1)
            ),
            ours: growth_text(r, LIST, 512, 1),
            holds: l512 / l128 >= LIST_GROWTH_512,
        },
        Shape {
            claim: format!(
                "{RBTREE}: 'basically the same' at 512 as at 128, at most {TREE_GROWTH_512}x"
            ),
            seed: format!(
                "rbtree deadline functions {}",
                seed_growth(seed::RBTREE_ALL, 1, "", 2)
            ),
            ours: growth_text(r, RBTREE, 512, 2),
            holds: r512 / r128 <= TREE_GROWTH_512,
        },
    ];
    for (sched, lo, hi) in [(RBTREE, r128, r4096), (MQ, m128, m4096)] {
        let ours = growth_text(r, sched, 4096, 2);
        shapes.push(Shape {
            claim: format!(
                "{sched} (a tree): at most {TREE_GROWTH_4096}x the cost per I/O at depth 4096 \
                 as at 128"
            ),
            seed: format!(
                "rbtree deadline functions {}, the growth laid on the back-merge hash being too \
                 small at 4096",
                seed_growth(seed::RBTREE_ALL, 2, "", 2)
            ),
            ours,
            holds: hi / lo <= TREE_GROWTH_4096,
        });
    }
    shapes.push(Shape {
        claim: format!("at depth 128 already, {RBTREE} cheaper per I/O than {LIST}"),
        seed: format!(
            "deadline functions at 128 requests: stock {} vs rbtree {} samples ({:.1}x): \
             'even with 128 requests per list, rbtree version is far superior'",
            seed::LIST_ALL[0],
            seed::RBTREE_ALL[0],
            ratio(seed::LIST_ALL[0], seed::RBTREE_ALL[0])
        ),
        ours: {
            let (tl, tr) = (r.ns(LIST, 128), r.ns(RBTREE, 128));
            let timed = format!(
                "{LIST} {tl:.1} vs {RBTREE} {tr:.1} ns per I/O ({:.2}x)",
                tl / tr
            );
            if r.instructions.counts().is_some() {
                format!(
                    "{LIST} {l128:.0} vs {RBTREE} {r128:.0} instructions per I/O ({:.2}x); {timed}",
                    l128 / r128
                )
            } else {
                timed
            }
        },
        holds: r128 < l128,
    });
    shapes
}

/// What a reader needs to know beside the shapes (`shapes`: this run's).
pub fn notes(r: &Results, shapes: &[Shape]) -> Vec<String> {
    let (r128, r4096) = (
        r.verdict_figure(RBTREE, 128),
        r.verdict_figure(RBTREE, 4096),
    );
    let mut notes = vec![
        r.instructions.note(),
        "The seed's figures are oprofile samples of the scheduler's functions over whole \
         tiobench runs (128 threads, ext2 on a 9 GB SCSI disk), not CPU per I/O, and its \
         I/O rate rose with the queue size; its ratios are the shape, not the scale."
            .to_string(),
        "Here the queue is kept at each depth by a pretend device with no latency, so the \
         figure is the cost of elevator-core's path alone (submit, merge attempt, insert, \
         dispatch, complete) per bio."
            .to_string(),
    ];
    if r4096 / r128 <= TREE_GROWTH_4096 {
        notes.push(format!(
            "The seed's rbtree grew {:.2}x from 128 to 4096 because its fixed back-merge hash \
             got too small (64 buckets, whatever the depth); elevator's back-merge hash has at \
             least two buckets per request, so its rbtree grows only {:.2}x, with the \
             tree's depth and its cache misses.",
            ratio(seed::RBTREE_ALL[2], seed::RBTREE_ALL[0]),
            r4096 / r128
        ));
    }
    if shapes.iter().any(|s| !s.holds) && r.instructions.counts().is_none() {
        notes.push(
            "A shape that does not hold here may be the machine: runs on a shared two-core \
             machine vary by about 5%; a run without --quick measures more bios per case."
                .to_string(),
        );
    }
    notes
}

/// The plot: CPU per I/O against queue depth, a line per scheduler.
pub fn figures(r: &Results) -> Vec<Figure> {
    let series = SCHEDULERS
        .iter()
        .map(|s| Series {
            label: (*s).to_string(),
            points: r
                .depths
                .iter()
                .map(|&d| (f64::from(d), r.ns(s, d)))
                .collect(),
        })
        .collect();
    vec![Figure::Xy(XyPlot {
        title: "Cost per I/O against queue depth (list vs tree)".to_string(),
        x: Axis::log("queue depth (requests)"),
        y: Axis::log("CPU per I/O (ns)"),
        mark: Mark::LinesPoints,
        panels: false,
        series,
    })]
}

/// Every figure measured, and the seed's, as JSON.
pub fn data(r: &Results) -> serde_json::Value {
    json!({
        "inflight": INFLIGHT,
        "bs_bytes": BS,
        "repeat": r.repeat,
        "depths": r.depths,
        "random_seed": r.random_seed,
        "cases": r.cases,
        "verdicts": if r.instructions.counts().is_some() { "instructions" } else { "timed" },
        "instructions_per_io": r.instructions.counts().map(|c| {
            c.all()
                .iter()
                .map(|(name, n)| (name.clone(), json!(round_to(*n, 1))))
                .collect::<serde_json::Map<_, _>>()
        }),
        "growth_vs_128": SCHEDULERS
            .iter()
            .map(|s| json!({
                "scheduler": s,
                "depth_512_ratio": round_to(r.growth(s, 512), 2),
                "depth_4096_ratio": round_to(r.growth(s, 4096), 2),
            }))
            .collect::<Vec<_>>(),
        "seed_figures": {
            "requests_per_list": seed::DEPTHS,
            "list_deadline_merge_samples": seed::LIST_MERGE,
            "list_deadline_samples": seed::LIST_ALL,
            "rbtree_deadline_samples": seed::RBTREE_ALL,
        },
    })
}
