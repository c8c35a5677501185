//! The ranking of `advise`: the runs ordered by the goal ([`Advice`]), and
//! a few sentences that say which setting to choose, with the numbers, the
//! runner-up and what the choice costs ([`Advice::explanation`]).

use elevator_fio::report::text::iec;

use super::Measured;

/// Differences smaller than this share of a figure are within noise.
const NOISE: f64 = 0.02;

/// The schedulers from the simplest to the most involved: the order ties
/// are broken in, by `advise` and `compare`, so that when two schedulers do
/// equally well the one with less to go wrong is named. The production
/// schedulers come first, by how much state they keep (`none` none,
/// `mq-deadline` two sorted sweeps and FIFOs, `kyber` token depths per
/// class, `bfq` per-process budgets in virtual time, `cfq` per-process slices
/// with idling, gone from Linux since 5.0); then the two structures kept
/// to compare deadline's cost against, `deadline-rbtree` and the O(N)
/// baseline `deadline-list`, which nobody should pick over `mq-deadline`.
pub const SIMPLEST_FIRST: [&str; 7] = [
    "none",
    "mq-deadline",
    "kyber",
    "bfq",
    "cfq",
    "deadline-rbtree",
    "deadline-list",
];

/// Where a scheduler comes in [`SIMPLEST_FIRST`] (aliases as their
/// scheduler: `noop` as `none`, `deadline` as `mq-deadline`); a name not
/// there comes after every one.
pub fn simplicity(name: &str) -> usize {
    let name = match name {
        "noop" => "none",
        "deadline" => "mq-deadline",
        other => other,
    };
    SIMPLEST_FIRST
        .iter()
        .position(|s| *s == name)
        .unwrap_or(SIMPLEST_FIRST.len())
}

/// Whether two runs show the same figures in every column of the table as
/// printed (throughput in IEC units, both p99s to 10 µs, fairness to three
/// places): they share a rank.
fn same_figures(a: &Measured, b: &Measured) -> bool {
    let p99 = |ns: Option<u64>| ns.map(|ns| (ns + 5_000) / 10_000);
    let fairness = |f: f64| (f * 1000.0).round();
    iec(a.throughput) == iec(b.throughput)
        && p99(a.read_p99) == p99(b.read_p99)
        && p99(a.write_p99) == p99(b.write_p99)
        && fairness(a.fairness) == fairness(b.fairness)
}

/// Each run of `runs` that shows the same figures as the one before it
/// moved behind every simpler one of them: equal figures share a rank, and
/// the simplest of them comes first.
fn simplest_first_among_equals(runs: &mut [Measured]) {
    let mut start = 0;
    while start < runs.len() {
        let end = start
            + runs[start..]
                .iter()
                .take_while(|m| same_figures(&runs[start], m))
                .count();
        runs[start..end].sort_by(simpler);
        start = end;
    }
}

/// Simpler first: by [`simplicity`], then the lower `nomerges` (0 is the
/// default).
fn simpler(a: &Measured, b: &Measured) -> std::cmp::Ordering {
    simplicity(&a.scheduler)
        .cmp(&simplicity(&b.scheduler))
        .then(a.nomerges.cmp(&b.nomerges))
}

/// What `advise` ranks by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Total bytes per second, highest first.
    Throughput,
    /// The worst job's p99 completion latency (reads if the workload reads,
    /// else writes), lowest first.
    P99,
    /// Jain's fairness index, highest first: over each job clone's
    /// throughput relative to its job's throughput alone on the device;
    /// over each submitter's mean completion latency for a trace.
    Fairness,
}

impl Goal {
    /// Its name: `throughput`, `p99` or `fairness`.
    pub fn name(self) -> &'static str {
        match self {
            Goal::Throughput => "throughput",
            Goal::P99 => "p99",
            Goal::Fairness => "fairness",
        }
    }

    /// What tells runs apart within noise of the best on this goal: p99
    /// latency for throughput, throughput for the others.
    fn tiebreak(self) -> Goal {
        match self {
            Goal::Throughput => Goal::P99,
            _ => Goal::Throughput,
        }
    }

    /// The goal's figure of a run, oriented so that higher is better.
    fn score(self, m: &Measured) -> f64 {
        match self {
            Goal::Throughput => m.throughput,
            Goal::P99 => m.goal_p99.map_or(f64::NEG_INFINITY, |ns| -(ns as f64)),
            Goal::Fairness => m.fairness,
        }
    }

    /// The goal's figure of a run, as text.
    fn figure(self, m: &Measured) -> String {
        match self {
            Goal::Throughput => format!("{}/s", iec(m.throughput)),
            Goal::P99 => m.goal_p99.map_or("-".into(), ms),
            Goal::Fairness => format!("{:.3}", m.fairness),
        }
    }

    /// What the goal's figure is, in words (`m`: a run, for the p99's
    /// direction).
    fn what(self, trace: bool, m: &Measured) -> String {
        match (self, trace) {
            (Goal::Throughput, _) => "throughput".into(),
            (Goal::P99, false) => format!("worst job's p99 {} latency", m.goal_p99_dir),
            (Goal::P99, true) => format!("p99 {} latency", m.goal_p99_dir),
            (Goal::Fairness, _) => "fairness".into(),
        }
    }

    /// How the goal's figure is defined, in a sentence.
    pub fn definition(self, trace: bool) -> &'static str {
        match (self, trace) {
            (Goal::Throughput, _) => "throughput: bytes moved per second of simulated time.",
            (Goal::P99, false) => {
                "p99: the worst job's 99th percentile completion latency, of reads if the \
                 workload reads, else of writes."
            }
            (Goal::P99, true) => {
                "p99: the 99th percentile completion latency of every read (of every write if \
                 nothing reads)."
            }
            (Goal::Fairness, false) => {
                "fairness: Jain's index (1 = equal, 1/n = one takes all) over each job's \
                 throughput as a share of its throughput alone on the device."
            }
            (Goal::Fairness, true) => {
                "fairness: Jain's index (1 = equal, 1/n = one takes all) over each submitter's \
                 (pid's) mean completion latency."
            }
        }
    }

    /// Relative difference of the goal's figure between `best` and
    /// `other`, as a share of the best's.
    fn gap(self, best: &Measured, other: &Measured) -> f64 {
        let (a, b) = match self {
            Goal::Throughput => (best.throughput, other.throughput),
            Goal::P99 => (
                best.goal_p99.unwrap_or(0) as f64,
                other.goal_p99.unwrap_or(0) as f64,
            ),
            Goal::Fairness => (best.fairness, other.fairness),
        };
        if a == 0.0 {
            if b == 0.0 { 0.0 } else { f64::INFINITY }
        } else {
            (a - b).abs() / a
        }
    }
}

/// The runs ranked by a goal.
pub struct Advice {
    /// The workload's name.
    pub workload: String,
    /// "job" or "trace".
    pub kind: &'static str,
    /// The device spec.
    pub device: String,
    /// The goal.
    pub goal: Goal,
    /// Every run, best first.
    pub ranked: Vec<Measured>,
}

impl Advice {
    /// Rank `runs` by `goal`; ties go to higher throughput, then to the
    /// simpler scheduler ([`SIMPLEST_FIRST`]).
    pub fn new(
        workload: &str,
        kind: &'static str,
        device: &str,
        goal: Goal,
        mut runs: Vec<Measured>,
    ) -> Advice {
        runs.sort_by(|a, b| {
            goal.score(b)
                .total_cmp(&goal.score(a))
                .then_with(|| b.throughput.total_cmp(&a.throughput))
                .then_with(|| simpler(a, b))
        });
        // Within noise of the best, the goal does not tell them apart:
        // its tie-break does, then the goal's figure, then simplicity.
        if let Some(best) = runs.first().cloned() {
            let tied = runs
                .iter()
                .take_while(|m| goal.gap(&best, m) < NOISE)
                .count();
            let tiebreak = goal.tiebreak();
            runs[..tied].sort_by(|a, b| {
                tiebreak
                    .score(b)
                    .total_cmp(&tiebreak.score(a))
                    .then_with(|| goal.score(b).total_cmp(&goal.score(a)))
                    .then_with(|| simpler(a, b))
            });
        }
        simplest_first_among_equals(&mut runs);
        Advice {
            workload: workload.to_string(),
            kind,
            device: device.to_string(),
            goal,
            ranked: runs,
        }
    }

    /// Each run's rank, in the order of [`Advice::ranked`]: its place, or
    /// the rank of the run before it when both show the same figures
    /// (equal figures share a rank).
    pub fn ranks(&self) -> Vec<usize> {
        let mut ranks: Vec<usize> = Vec::with_capacity(self.ranked.len());
        for (i, m) in self.ranked.iter().enumerate() {
            let rank = match (i.checked_sub(1), ranks.last()) {
                (Some(prev), Some(&r)) if same_figures(&self.ranked[prev], m) => r,
                _ => i + 1,
            };
            ranks.push(rank);
        }
        ranks
    }

    /// How many runs from `from` on show the same figures as the run at
    /// `from` (at least 1 when there is one).
    fn same_run(&self, from: usize) -> usize {
        match self.ranked.get(from) {
            Some(first) => self.ranked[from..]
                .iter()
                .take_while(|m| same_figures(first, m))
                .count(),
            None => 0,
        }
    }

    /// The run at `at` as a sentence names it with its figure, and those
    /// after it that show the same figures: "none (2104KiB/s; kyber the
    /// same)".
    fn label_with_ties(&self, at: usize) -> String {
        let n = self.same_run(at);
        let m = &self.ranked[at];
        let figure = self.goal.figure(m);
        if n > 1 {
            let others: Vec<String> = self.ranked[at + 1..at + n]
                .iter()
                .map(|o| self.label(o))
                .collect();
            format!("{} ({figure}; {} the same)", self.label(m), list(&others))
        } else {
            format!("{} ({figure})", self.label(m))
        }
    }

    /// Whether the workload is a trace.
    pub fn trace(&self) -> bool {
        self.kind == "trace"
    }

    /// Whether more than one `nomerges` setting was tried.
    fn several_nomerges(&self) -> bool {
        self.ranked
            .iter()
            .any(|m| Some(m.nomerges) != self.ranked.first().map(|f| f.nomerges))
    }

    /// A run's name: its scheduler, and its `nomerges` if several were tried.
    fn label(&self, m: &Measured) -> String {
        if self.several_nomerges() {
            format!("{} (nomerges={})", m.scheduler, m.nomerges)
        } else {
            m.scheduler.clone()
        }
    }

    /// The few sentences that explain the choice: the best and its figure
    /// against the runner-up (the first run outside noise of the best),
    /// what it costs on the other goals, and whether the choice matters.
    pub fn explanation(&self) -> String {
        let goal = self.goal;
        let Some(best) = self.ranked.first() else {
            return "No runs.".to_string();
        };
        let what = goal.what(self.trace(), best);
        if self.ranked.len() == 1 {
            return format!(
                "{}: {what} {} (the only setting tried).",
                self.label(best),
                goal.figure(best)
            );
        }
        let tied = self
            .ranked
            .iter()
            .take_while(|m| goal.gap(best, m) < NOISE)
            .count();
        let runner_up = self.ranked.get(tied);
        let mut text = String::new();
        let same = self.same_run(0);
        if tied > 1 && same == tied {
            let names: Vec<String> = self.ranked[..tied].iter().map(|m| self.label(m)).collect();
            text.push_str(&format!(
                "{} are tied, with the same figures ({what} {}): for this goal the choice among \
                 them hardly matters, and {} is the simplest.",
                list(&names),
                goal.figure(best),
                self.label(best),
            ));
            text.push_str(&self.against_the_rest(tied));
        } else if tied > 1 {
            let names: Vec<String> = self.ranked[..tied].iter().map(|m| self.label(m)).collect();
            // The best on the goal's figure alone, which its tie-break may
            // have ranked below another.
            let top = self.ranked[..tied]
                .iter()
                .reduce(|a, b| if goal.score(b) > goal.score(a) { b } else { a })
                .unwrap_or(best);
            text.push_str(&format!(
                "{} are within {:.0} % of the best on {what} ({} for {}): for this goal the \
                 choice among them hardly matters.",
                list(&names),
                NOISE * 100.0,
                goal.figure(top),
                self.label(top),
            ));
            if same > 1 {
                let names: Vec<String> =
                    self.ranked[..same].iter().map(|m| self.label(m)).collect();
                text.push_str(&format!(
                    " {} are tied (the same figures): {} is the simplest.",
                    list(&names),
                    self.label(best),
                ));
            }
            if let Some(second) = self.ranked[..tied].get(same) {
                let tiebreak = goal.tiebreak();
                let (on, figures) = if tiebreak.figure(best) == tiebreak.figure(second) {
                    // The tie-break's figures print alike: the goal's
                    // figure is what sets them apart.
                    (goal, (goal.figure(best), goal.figure(second)))
                } else {
                    (tiebreak, (tiebreak.figure(best), tiebreak.figure(second)))
                };
                text.push_str(&format!(
                    " {} ranks first on {} ({} vs {} for {}).",
                    self.label(best),
                    on.what(self.trace(), best),
                    figures.0,
                    figures.1,
                    self.label(second),
                ));
            }
            text.push_str(&self.against_the_rest(tied));
        } else if let Some(next) = runner_up {
            text.push_str(&format!(
                "{}: {what} {} vs {}, the runner-up, {}.",
                self.label(best),
                goal.figure(best),
                self.label_with_ties(tied),
                self.cost(best, next),
            ));
        }
        if goal == Goal::Fairness
            && let Some(next) = runner_up
            && let (Some((who, figure)), Some((next_who, next_figure))) =
                (self.least_served(best), self.least_served(next))
        {
            let (whom, what, verb) = if self.trace() {
                ("submitter", "waits {} on average", "waits")
            } else {
                ("job", "gets {} of its throughput alone", "gets")
            };
            text.push_str(&format!(
                " Under {}, the least served {whom}, {who}, {}; under {}, {next_who} {verb} {next_figure}.",
                self.label(best),
                what.replace("{}", &figure),
                self.label(next),
            ));
        }
        // The last rank, with every run that shares it.
        let ranks = self.ranks();
        if let Some(&last_rank) = ranks.last()
            && last_rank > tied + 1
        {
            let last = last_rank - 1;
            let names: Vec<String> = self.ranked[last..].iter().map(|m| self.label(m)).collect();
            let (who, verb) = if names.len() > 1 {
                (format!("{} (tied)", list(&names)), "get")
            } else {
                (list(&names), "gets")
            };
            text.push_str(&format!(
                " The last, {who}, {verb} {}.",
                goal.figure(&self.ranked[last])
            ));
        }
        text.push_str(&self.trade_off(best));
        text
    }

    /// " Against the best of the rest, none (2104KiB/s), mq-deadline runs
    /// ...": the best against the first run outside noise of it (at
    /// `tied`), empty when every run is within noise.
    fn against_the_rest(&self, tied: usize) -> String {
        match (self.ranked.first(), self.ranked.get(tied)) {
            (Some(best), Some(next)) => format!(
                " Against the best of the rest, {}, {} runs {}.",
                self.label_with_ties(tied),
                self.label(best),
                self.cost(best, next)
            ),
            _ => String::new(),
        }
    }

    /// The least served job clone or trace submitter of a run, when there
    /// are several: its name and its figure ("21 %" of its throughput
    /// alone; "12.00 ms" of mean latency for a trace).
    fn least_served(&self, m: &Measured) -> Option<(String, String)> {
        if m.shares.len() < 2 {
            return None;
        }
        if self.trace() {
            let (who, ns) = m.shares.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            Some((who.clone(), ms(*ns as u64)))
        } else {
            let (who, share) = m.shares.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
            Some((who.clone(), format!("{:.0} %", share * 100.0)))
        }
    }

    /// "at N % less (more) throughput (a vs b)", or for the throughput
    /// goal the p99 latency's change, of `best` against `other`.
    fn cost(&self, best: &Measured, other: &Measured) -> String {
        match self.goal {
            Goal::Throughput => match (best.goal_p99, other.goal_p99) {
                (Some(a), Some(b)) => format!(
                    "with a {} of {} vs {}",
                    Goal::P99.what(self.trace(), best),
                    ms(a),
                    ms(b)
                ),
                _ => "with no latency to compare".to_string(),
            },
            _ => {
                let change = relative(best.throughput, other.throughput);
                if change.abs() < NOISE {
                    format!(
                        "at the same throughput within {:.0} % ({}/s)",
                        NOISE * 100.0,
                        iec(best.throughput)
                    )
                } else {
                    format!(
                        "at {:.0} % {} throughput ({}/s vs {}/s)",
                        change.abs() * 100.0,
                        if change < 0.0 { "less" } else { "more" },
                        iec(best.throughput),
                        iec(other.throughput)
                    )
                }
            }
        }
    }

    /// What the best for another goal would give, when it is another run.
    fn trade_off(&self, best: &Measured) -> String {
        let mut text = String::new();
        for other_goal in [Goal::Throughput, Goal::P99, Goal::Fairness] {
            if other_goal == self.goal {
                continue;
            }
            // The best by that goal, as advise would rank for it.
            let by_other = Advice::new("", self.kind, "", other_goal, self.ranked.clone());
            let Some(top) = by_other.ranked.first() else {
                continue;
            };
            if (top.scheduler.as_str(), top.nomerges) == (best.scheduler.as_str(), best.nomerges)
                || other_goal.gap(top, best) < NOISE
            {
                continue;
            }
            text.push_str(&format!(
                " For {} {} would be the choice ({} vs {}).",
                other_goal.name(),
                self.label(top),
                other_goal.figure(top),
                other_goal.figure(best)
            ));
        }
        text
    }
}

/// "a", "a and b", "a, b and c".
fn list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// (a − b) / b, 0 when b is 0.
fn relative(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { (a - b) / b }
}

/// Nanoseconds as milliseconds, `1.23 ms`.
fn ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(scheduler: &str, throughput: f64, p99_ms: u64) -> Measured {
        Measured {
            scheduler: scheduler.to_string(),
            nomerges: 0,
            throughput,
            read_p99: Some(p99_ms * 1_000_000),
            write_p99: None,
            goal_p99: Some(p99_ms * 1_000_000),
            goal_p99_dir: "read",
            fairness: 1.0,
            shares: Vec::new(),
            ios: 1,
            elapsed: 1,
        }
    }

    /// The runs of `examples/default.fio` on hdd-7200, in the order of
    /// `SCHEDULER_NAMES`, rounded.
    fn default_job() -> Vec<Measured> {
        vec![
            run("none", 2_104_000.0, 442),
            run("mq-deadline", 2_159_000.0, 518),
            run("deadline-rbtree", 2_159_000.0, 518),
            run("deadline-list", 2_159_000.0, 518),
            run("cfq", 1_518_000.0, 608),
            run("bfq", 2_146_000.0, 591),
            run("kyber", 2_104_000.0, 442),
        ]
    }

    #[test]
    fn every_scheduler_has_a_place_and_aliases_take_theirs() {
        for name in elevator_core::SCHEDULER_NAMES {
            assert!(simplicity(name) < SIMPLEST_FIRST.len(), "{name}");
        }
        assert_eq!(simplicity("noop"), simplicity("none"));
        assert_eq!(simplicity("deadline"), simplicity("mq-deadline"));
        assert!(simplicity("mq-deadline") < simplicity("deadline-list"));
        assert_eq!(simplicity("elevator9"), SIMPLEST_FIRST.len());
    }

    #[test]
    fn equal_figures_share_a_rank_and_the_simplest_comes_first() {
        let a = Advice::new("j", "job", "d", Goal::Throughput, default_job());
        let order: Vec<&str> = a.ranked.iter().map(|m| m.scheduler.as_str()).collect();
        assert_eq!(
            order,
            [
                "mq-deadline",
                "deadline-rbtree",
                "deadline-list",
                "bfq",
                "none",
                "kyber",
                "cfq"
            ]
        );
        assert_eq!(a.ranks(), [1, 1, 1, 4, 5, 5, 7]);
    }

    #[test]
    fn the_explanation_names_every_tied_run_and_the_best_of_the_rest() {
        let a = Advice::new("j", "job", "d", Goal::Throughput, default_job());
        let text = a.explanation();
        assert!(
            text.starts_with("mq-deadline, deadline-rbtree, deadline-list and bfq are within 2 %"),
            "{text}"
        );
        assert!(text.contains("mq-deadline is the simplest"), "{text}");
        assert!(text.contains("(518.00 ms vs 591.00 ms for bfq)"), "{text}");
        assert!(
            text.contains("Against the best of the rest, none (")
                && text.contains("KiB/s; kyber the same)"),
            "{text}"
        );
        assert!(!text.contains("1 more"), "{text}");
        assert!(!text.contains("the next"), "{text}");
    }
}
