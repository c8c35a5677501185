//! What a crash-states run found ([`Report`]), as text (`elevator
//! crash-states` prints it and writes report.txt) and JSON (report.json),
//! with the command that rebuilds each failing state.

use elevator_trace::write_log::crash::{Plan, PlanOptions, StateId};
use elevator_trace::write_log::{Kind, LoadedLog};
use serde_json::{Value, json};

use super::{BuildOptions, BuiltState as Built, Verdict, shell_quote};

/// The records a state kept, as `2: records 3, 5`, or `none`.
fn kept_list(b: &Built) -> String {
    if b.kept_first.is_empty() {
        return "none".into();
    }
    let names: Vec<String> = b.kept_first.iter().map(u64::to_string).collect();
    let more = if b.kept > b.kept_first.len() as u64 {
        ", ..."
    } else {
        ""
    };
    let word = if b.kept == 1 { "record" } else { "records" };
    format!("{}: {word} {}{more}", b.kept, names.join(", "))
}

/// What the run found, as text and JSON.
#[derive(Debug)]
pub struct Report<'a> {
    /// The log.
    pub log: &'a LoadedLog,
    /// How the states were planned.
    pub options: &'a PlanOptions,
    /// What the plan chose (its states are `built`'s).
    pub plan: &'a Plan,
    /// How the states were built and checked.
    pub build: &'a BuildOptions,
    /// The one state asked for, as given.
    pub only: Option<&'a str>,
    /// Whether a damaged log's whole records were used.
    pub valid_prefix: bool,
    /// The states built.
    pub built: &'a [Built],
}

impl Report<'_> {
    /// The command that rebuilds `id`.
    fn rebuild_command(&self, id: StateId) -> String {
        let mut cmd = format!(
            "elevator crash-states {} --only {id} --seed {} --out {}",
            shell_quote(&self.log.path.to_string_lossy()),
            self.options.seed,
            shell_quote(&self.build.out.to_string_lossy())
        );
        if let Some(base) = &self.build.base {
            cmd.push_str(&format!(" --base {}", shell_quote(&base.to_string_lossy())));
        }
        if self.valid_prefix {
            cmd.push_str(" --valid-prefix");
        }
        cmd
    }

    /// What a state is, in words.
    fn describe(&self, b: &Built) -> String {
        let s = &b.state;
        let time = self.log.time_before(s.cut);
        match s.id {
            StateId::Boundary(k) => format!(
                "flush boundary: every write before flush record {k}; cut before record {} at {time:.6} s",
                s.cut
            ),
            StateId::End => format!(
                "end of the log: every write ({} records) at {time:.6} s",
                s.cut
            ),
            StateId::Between { cut, .. } => format!(
                "cut before record {cut} at {time:.6} s: {} unflushed write{} ({} FUA) after {}, kept {}",
                s.unflushed,
                if s.unflushed == 1 { "" } else { "s" },
                s.unflushed_fua,
                match self.log.heads.get(s.durable as usize) {
                    Some(h) if h.kind == Kind::Flush => format!("flush record {}", s.durable),
                    _ => "the start of the log".to_string(),
                },
                kept_list(b),
            ),
        }
    }

    fn marks_text(marks: &[String]) -> String {
        const SHOWN: usize = 5;
        if marks.is_empty() {
            return "no marks before it".into();
        }
        let skip = marks.len().saturating_sub(SHOWN);
        let shown: Vec<String> = marks[skip..].iter().map(|m| format!("{m:?}")).collect();
        if skip > 0 {
            format!(
                "{} marks before it, the last {SHOWN}: {}",
                marks.len(),
                shown.join(", ")
            )
        } else {
            format!("marks before it: {}", shown.join(", "))
        }
    }

    fn possible_text(&self) -> String {
        if self.plan.possible > u128::from(u64::MAX) {
            format!("over {}", u64::MAX)
        } else {
            self.plan.possible.to_string()
        }
    }

    /// The report as text.
    pub fn text(&self) -> String {
        let mut t = String::new();
        let count =
            |v: &dyn Fn(&Verdict) -> bool| self.built.iter().filter(|b| v(&b.verdict)).count();
        let passed = count(&|v| *v == Verdict::Pass);
        let failed = count(&|v| matches!(v, Verdict::Fail(_)));
        let checked = passed + failed;
        t.push_str(&format!(
            "crash states of {} ({} records), seed {}{}\n",
            self.log.path.display(),
            self.log.heads.len(),
            self.options.seed,
            match self.only {
                Some(_) => String::new(),
                None => format!(
                    ", up to {} between boundaries per epoch",
                    self.options.between
                ),
            }
        ));
        if let Some(id) = &self.only {
            t.push_str(&format!("state {id} only\n"));
        } else {
            let cut = if self.plan.planned > self.built.len() {
                format!(
                    " ({} chosen, spread over the log to --max-states {})",
                    self.plan.planned, self.options.max_states
                )
            } else {
                String::new()
            };
            let boundaries = self
                .built
                .iter()
                .filter(|b| matches!(b.state.id, StateId::Boundary(_)))
                .count();
            let between = self
                .built
                .iter()
                .filter(|b| matches!(b.state.id, StateId::Between { .. }))
                .count();
            let end = self.built.len() - boundaries - between;
            t.push_str(&format!(
                "states: {} possible, {} explored ({boundaries} flush {}, {between} between them, {end} end){cut}\n",
                self.possible_text(),
                self.built.len(),
                if boundaries == 1 { "boundary" } else { "boundaries" },
            ));
        }
        if self.build.check.is_some() {
            t.push_str(&format!(
                "checked {checked}: {passed} passed, {failed} failed\n"
            ));
        } else {
            t.push_str("images (no --check):\n");
            for b in self.built {
                t.push_str(&format!(
                    "  {:<12} {}  {}; {}\n",
                    b.state.id.to_string(),
                    b.image.display(),
                    self.describe(b),
                    Self::marks_text(&b.marks)
                ));
            }
        }
        for b in self.built {
            let Verdict::Fail(why) = &b.verdict else {
                continue;
            };
            t.push_str(&format!("\nFAILED {}: {}\n", b.state.id, self.describe(b)));
            t.push_str(&format!("  {}\n", Self::marks_text(&b.marks)));
            t.push_str(&format!("  checker: {why}\n"));
            if b.output_dropped > 0 {
                t.push_str(&format!(
                    "  (its first {} bytes of output were dropped; {} holds the last 64 KiB)\n",
                    b.output_dropped,
                    b.output.display()
                ));
            }
            for line in &b.tail {
                t.push_str(&format!("  | {line}\n"));
            }
            if b.image.exists() {
                t.push_str(&format!("  image: {}\n", b.image.display()));
            }
            t.push_str(&format!(
                "  rebuild: {}\n",
                self.rebuild_command(b.state.id)
            ));
        }
        t
    }

    /// The report as JSON.
    pub fn json(&self) -> Value {
        let states: Vec<Value> = self
            .built
            .iter()
            .map(|b| {
                let s = &b.state;
                let (status, why) = match &b.verdict {
                    Verdict::Unchecked => ("unchecked", None),
                    Verdict::Pass => ("pass", None),
                    Verdict::Fail(w) => ("fail", Some(w.clone())),
                };
                json!({
                    "id": s.id.to_string(),
                    "what": self.describe(b),
                    "cut": s.cut,
                    "time_s": self.log.time_before(s.cut),
                    "durable_before": s.durable,
                    "unflushed": s.unflushed,
                    "unflushed_fua": s.unflushed_fua,
                    "kept": b.kept,
                    "kept_records_first": b.kept_first,
                    "marks": b.marks,
                    "status": status,
                    "why": why,
                    "output_tail": b.tail,
                    "output_dropped_bytes": b.output_dropped,
                    "image": b.image.exists().then(|| b.image.display().to_string()),
                    "rebuild": self.rebuild_command(s.id),
                })
            })
            .collect();
        json!({
            "log": self.log.path.display().to_string(),
            "records": self.log.heads.len(),
            "log_error": self.log.error.as_ref().map(|e| e.to_string()),
            "seed": self.options.seed,
            "between": self.options.between,
            "max_states": self.options.max_states,
            "check": self.build.check,
            "possible": u64::try_from(self.plan.possible).map_or_else(|_| json!(self.possible_text()), |p| json!(p)),
            "planned": self.plan.planned,
            "explored": self.built.len(),
            "passed": self.built.iter().filter(|b| b.verdict == Verdict::Pass).count(),
            "failed": self.built.iter().filter(|b| matches!(b.verdict, Verdict::Fail(_))).count(),
            "states": states,
        })
    }
}
