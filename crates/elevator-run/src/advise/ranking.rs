//! The ranking of `advise`: the runs ordered by the goal ([`Advice`]), and
//! a few sentences that say which setting to choose, with the numbers, the
//! runner-up and what the choice costs ([`Advice::explanation`]).

use elevator_fio::report::text::iec;

use super::Measured;

/// Differences smaller than this share of a figure are within noise.
const NOISE: f64 = 0.02;

/// Runs named in a sentence before "and N more".
const MAX_NAMED: usize = 4;

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
    /// order given.
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
        });
        // Within noise of the best, the goal does not tell them apart:
        // its tie-break does (a stable sort keeps the goal's order on ties).
        if let Some(best) = runs.first().cloned() {
            let tied = runs
                .iter()
                .take_while(|m| goal.gap(&best, m) < NOISE)
                .count();
            let tiebreak = goal.tiebreak();
            runs[..tied].sort_by(|a, b| tiebreak.score(b).total_cmp(&tiebreak.score(a)));
        }
        Advice {
            workload: workload.to_string(),
            kind,
            device: device.to_string(),
            goal,
            ranked: runs,
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
        if tied > 1 {
            let mut names: Vec<String> = self.ranked[..tied]
                .iter()
                .take(MAX_NAMED)
                .map(|m| self.label(m))
                .collect();
            if tied > MAX_NAMED {
                names.push(format!("{} more", tied - MAX_NAMED));
            }
            let tiebreak = goal.tiebreak();
            let second = &self.ranked[1];
            text.push_str(&format!(
                "{} are within {:.0} % of each other on {what} ({} for {}): for this goal the \
                 choice among them hardly matters; {} ranks first on {} ({} vs {} for {}).",
                list(&names),
                NOISE * 100.0,
                goal.figure(best),
                self.label(best),
                self.label(best),
                tiebreak.what(self.trace(), best),
                tiebreak.figure(best),
                tiebreak.figure(second),
                self.label(second),
            ));
            if let Some(next) = runner_up {
                text.push_str(&format!(
                    " Against the next, {} ({}), {} runs {}.",
                    self.label(next),
                    goal.figure(next),
                    self.label(best),
                    self.cost(best, next)
                ));
            }
        } else if let Some(next) = runner_up {
            text.push_str(&format!(
                "{}: {what} {} vs {} for {}, the runner-up, {}.",
                self.label(best),
                goal.figure(best),
                goal.figure(next),
                self.label(next),
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
        if let Some(worst) = self.ranked.last()
            && self.ranked.len() > tied + 1
        {
            text.push_str(&format!(
                " The last, {}, gets {}.",
                self.label(worst),
                goal.figure(worst)
            ));
        }
        text.push_str(&self.trade_off(best));
        text
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
