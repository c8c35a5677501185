//! What a crash-states run found ([`Report`]), as text (`elevator
//! crash-states` prints it and writes report.txt) and JSON (report.json),
//! with the command that rebuilds each failing state.

use std::path::PathBuf;

use elevator_trace::write_log::crash::StateId;
use elevator_trace::write_log::{Kind, LoadedLog};
use serde_json::{Value, json};

use super::{BuiltState as Built, Verdict, shell_quote};

/// What a run was asked, as `elevator crash-states` was given it: the
/// report repeats it, and its rebuild commands use it.
#[derive(Clone, Debug)]
pub struct Asked {
    /// The write log.
    pub log: PathBuf,
    /// The output directory.
    pub out: PathBuf,
    /// The seed of the subsets explored.
    pub seed: u64,
    /// States between flush boundaries per epoch.
    pub between: u64,
    /// The most states explored.
    pub max_states: usize,
    /// The checker's command.
    pub check: Option<String>,
    /// The one state asked for, as given.
    pub only: Option<String>,
    /// The image the device started as.
    pub base: Option<PathBuf>,
    /// Whether a damaged log's whole records were used.
    pub valid_prefix: bool,
}

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
    /// What the run was asked.
    pub asked: &'a Asked,
    /// The log.
    pub log: &'a LoadedLog,
    /// How many states the log allows.
    pub possible: u128,
    /// How many states the plan chose.
    pub planned: usize,
    /// The states built.
    pub built: &'a [Built],
}

impl Report<'_> {
    /// The command that rebuilds `id`.
    fn rebuild_command(&self, id: StateId) -> String {
        let a = self.asked;
        let mut cmd = format!(
            "elevator crash-states {} --only {id} --seed {} --out {}",
            shell_quote(&a.log.to_string_lossy()),
            a.seed,
            shell_quote(&a.out.to_string_lossy())
        );
        if let Some(base) = &a.base {
            cmd.push_str(&format!(" --base {}", shell_quote(&base.to_string_lossy())));
        }
        if a.valid_prefix {
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
        if self.possible > u128::from(u64::MAX) {
            format!("over {}", u64::MAX)
        } else {
            self.possible.to_string()
        }
    }

    /// The report as text.
    pub fn text(&self) -> String {
        let a = self.asked;
        let mut t = String::new();
        let count =
            |v: &dyn Fn(&Verdict) -> bool| self.built.iter().filter(|b| v(&b.verdict)).count();
        let passed = count(&|v| *v == Verdict::Pass);
        let failed = count(&|v| matches!(v, Verdict::Fail(_)));
        let checked = passed + failed;
        t.push_str(&format!(
            "crash states of {} ({} records), seed {}{}\n",
            a.log.display(),
            self.log.heads.len(),
            a.seed,
            match a.only {
                Some(_) => String::new(),
                None => format!(", up to {} between boundaries per epoch", a.between),
            }
        ));
        if let Some(id) = &a.only {
            t.push_str(&format!("state {id} only\n"));
        } else {
            let cut = if self.planned > self.built.len() {
                format!(
                    " ({} chosen, spread over the log to --max-states {})",
                    self.planned, a.max_states
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
        if a.check.is_some() {
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
        let a = self.asked;
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
            "log": a.log.display().to_string(),
            "records": self.log.heads.len(),
            "log_error": self.log.error.as_ref().map(|e| e.to_string()),
            "seed": a.seed,
            "between": a.between,
            "max_states": a.max_states,
            "check": a.check,
            "possible": u64::try_from(self.possible).map_or_else(|_| json!(self.possible_text()), |p| json!(p)),
            "planned": self.planned,
            "explored": self.built.len(),
            "passed": self.built.iter().filter(|b| b.verdict == Verdict::Pass).count(),
            "failed": self.built.iter().filter(|b| matches!(b.verdict, Verdict::Fail(_))).count(),
            "states": states,
        })
    }
}
