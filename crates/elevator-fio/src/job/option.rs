//! One of fio's options as the option table declares it ([`FioOption`]:
//! names, verdict, bare form, where its value is stored), and finding an
//! option by a name as written (with "did you mean" for typos).

use super::JobSpec;
use super::table::OPTIONS;

/// What elevator does with one of fio's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It sets a [`JobSpec`](super::JobSpec) field (or the parser's own
    /// state, like `kb_base`) with fio's value forms and defaults.
    Implemented,
    /// Accepted with any value, pushing `(name, reason)` to
    /// [`JobSpec::notes`](super::JobSpec::notes): it cannot change what
    /// elevator does or reports.
    Noted(&'static str),
    /// Accepted (with a note) only with fio's default value, one of the
    /// `|`-separated `default` forms; any other value is refused with
    /// `reason`.
    DefaultOnly {
        /// fio's default, `|` between equivalent spellings.
        default: &'static str,
        /// Why another value is refused.
        reason: &'static str,
    },
    /// Refused by name, with why.
    Refused(&'static str),
}

/// How an implemented option's value is read and where it goes.
#[derive(Clone, Copy)]
pub(super) enum Store {
    /// Not stored: the option is noted or refused.
    Nowhere,
    /// fio's "empty or boolean": bare is on, else a number (0 for off).
    Switch(fn(&mut JobSpec, bool)),
    /// fio's bool: 0 or 1, never bare.
    Bool(fn(&mut JobSpec, bool)),
    /// A log's file name prefix; bare (or empty) is the job's own name.
    Log(fn(&mut JobSpec) -> &mut Option<String>),
    /// Any other value: present and not empty, read by the function.
    Value(fn(&mut JobSpec, &str) -> Result<(), String>),
}

/// One of fio's options: everything elevator knows about it.
#[derive(Clone, Copy)]
pub(super) struct FioOption {
    /// fio's canonical name.
    pub(super) name: &'static str,
    /// fio's other spellings of it.
    pub(super) aliases: &'static [&'static str],
    /// What elevator does with it.
    pub(super) verdict: Verdict,
    /// Whether it may stand alone as a bare name (fio's "empty or
    /// boolean" type); every other option needs `=value`.
    pub(super) bare: bool,
    /// Where an implemented option's value goes.
    pub(super) store: Store,
}

/// An option elevator notes or refuses (`verdict` is not
/// [`Verdict::Implemented`]).
pub(super) const fn opt(name: &'static str, verdict: Verdict) -> FioOption {
    FioOption {
        name,
        aliases: &[],
        verdict,
        bare: false,
        store: Store::Nowhere,
    }
}

/// An option elevator implements, its value read and stored by `store`.
pub(super) const fn set(name: &'static str, store: Store) -> FioOption {
    FioOption {
        name,
        aliases: &[],
        verdict: Verdict::Implemented,
        bare: matches!(store, Store::Switch(_) | Store::Log(_)),
        store,
    }
}

impl FioOption {
    /// The same option with fio's other spellings.
    pub(super) const fn aka(self, aliases: &'static [&'static str]) -> FioOption {
        FioOption { aliases, ..self }
    }

    /// The same option, allowed as a bare name.
    pub(super) const fn bare(self) -> FioOption {
        FioOption { bare: true, ..self }
    }
}

/// A [`Store::Value`] that runs `$body` (an assignment, usually) with the
/// job and the value bound to the names given.
macro_rules! value {
    (|$spec:pat_param, $v:pat_param| $body:expr) => {
        Store::Value(|$spec, $v| {
            $body;
            Ok(())
        })
    };
}
pub(super) use value;

/// The option called `name` (its canonical name or an alias).
pub(super) fn lookup(name: &str) -> Option<&'static FioOption> {
    OPTIONS
        .iter()
        .find(|o| o.name == name || o.aliases.contains(&name))
}

/// Every name fio knows, canonical names first, then aliases.
pub(super) fn names() -> impl Iterator<Item = (&'static str, &'static FioOption)> {
    OPTIONS.iter().map(|o| (o.name, o)).chain(
        OPTIONS
            .iter()
            .flat_map(|o| o.aliases.iter().map(move |&a| (a, o))),
    )
}

/// The known name closest to `name` (edit distance), for "did you mean".
/// Names longer than any option could be mistyped from get no suggestion,
/// and candidates whose length alone puts them out of reach are skipped,
/// so a long garbage name costs little.
pub(super) fn closest(name: &str) -> Option<&'static str> {
    /// Longer names are not typos of an option.
    const LONGEST: usize = 64;
    if name.len() > LONGEST {
        return None;
    }
    let reach = 2.max(name.len() / 3);
    names()
        .filter_map(|(n, _)| Some((elevator_core::spelling::distance(name, n, reach)?, n)))
        .min()
        .map(|(_, n)| n)
}
