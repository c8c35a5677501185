//! Named tunables: the sysfs-style settings of the queue and of schedulers.
//!
//! Each tunable has a [`TunableSpec`]: its Linux name, default, range and unit.
//! Values are integers in the unit Linux uses in sysfs (milliseconds for times,
//! 0/1 for switches). Text values are parsed with [`parse_value`].
//!
//! Each owner (the queue, each scheduler) declares its tunables once, in a
//! table of [`Tunable`]s: the spec beside how to read the value from the owner
//! and how to store it (as the kernel declares a scheduler's sysfs attributes
//! once, with their show and store functions). Reading and setting by name,
//! validation, the default values and the listing ([`specs`]) all come from
//! that table. A store function cannot fail: every check (the spec's range,
//! read-only, and the owner's own checks of [`Tunable::checked`]) runs before
//! it, so a refused value changes nothing.

use crate::error::TunableError;

/// The unit of a tunable's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A plain count.
    Count,
    /// Milliseconds.
    Millis,
    /// Microseconds.
    Micros,
    /// Nanoseconds.
    Nanos,
    /// 0 (off) or 1 (on).
    Bool,
    /// Kibibytes.
    KiB,
    /// Bytes.
    Bytes,
    /// 512-byte sectors.
    Sectors,
}

impl Unit {
    /// How the unit is written after a value.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Count => "",
            Unit::Millis => "ms",
            Unit::Micros => "us",
            Unit::Nanos => "ns",
            Unit::Bool => "(0/1)",
            Unit::KiB => "KiB",
            Unit::Bytes => "bytes",
            Unit::Sectors => "sectors",
        }
    }
}

/// A tunable's description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunableSpec {
    /// Linux's name for it.
    pub name: &'static str,
    /// Linux's default.
    pub default: u64,
    /// Smallest accepted value.
    pub min: u64,
    /// Largest accepted value.
    pub max: u64,
    /// Unit of the value.
    pub unit: Unit,
    /// Whether it can only be read.
    pub read_only: bool,
    /// One line on what it does.
    pub help: &'static str,
}

impl TunableSpec {
    /// A settable tunable.
    pub const fn new(
        name: &'static str,
        default: u64,
        min: u64,
        max: u64,
        unit: Unit,
        help: &'static str,
    ) -> TunableSpec {
        TunableSpec {
            name,
            default,
            min,
            max,
            unit,
            read_only: false,
            help,
        }
    }

    /// A read-only attribute.
    pub const fn read_only(name: &'static str, unit: Unit, help: &'static str) -> TunableSpec {
        TunableSpec {
            name,
            default: 0,
            min: 0,
            max: u64::MAX,
            unit,
            read_only: true,
            help,
        }
    }

    /// `value` if this tunable accepts it, else the reason.
    pub fn check(&self, value: u64) -> Result<u64, TunableError> {
        if self.read_only {
            return Err(TunableError::ReadOnly { name: self.name });
        }
        if value < self.min || value > self.max {
            return Err(TunableError::OutOfRange {
                name: self.name,
                value,
                min: self.min,
                max: self.max,
                unit: self.unit.name(),
            });
        }
        Ok(value)
    }
}

/// An owner's own check of a value for the tunable `spec`, beyond the
/// spec's range; it changes nothing.
pub type Check<T> = fn(owner: &T, spec: &TunableSpec, value: u64) -> Result<(), TunableError>;

/// A tunable of `T` as its owner declares it: the spec, how to read the
/// value from `T` and how to store a value into `T`.
pub struct Tunable<T> {
    /// Name, default, range, unit, meaning.
    pub spec: TunableSpec,
    get: fn(&T) -> u64,
    /// The owner's own checks, beyond the spec's range; changes nothing.
    check: Option<Check<T>>,
    /// Stores a value that passed every check; `None` when read-only.
    store: Option<fn(&mut T, u64)>,
}

impl<T> Tunable<T> {
    /// A settable tunable: `get` reads it in the spec's unit, `store` writes a
    /// value already checked against the spec's range.
    ///
    /// Checked when the table is compiled: the spec is settable and its
    /// default lies in its range (defaults are stored without a check).
    pub const fn new(spec: TunableSpec, get: fn(&T) -> u64, store: fn(&mut T, u64)) -> Self {
        assert!(!spec.read_only, "a settable tunable with a read-only spec");
        assert!(
            spec.min <= spec.default && spec.default <= spec.max,
            "a tunable's default outside its range"
        );
        Tunable {
            spec,
            get,
            check: None,
            store: Some(store),
        }
    }

    /// A read-only attribute.
    pub const fn read_only(spec: TunableSpec, get: fn(&T) -> u64) -> Self {
        assert!(spec.read_only, "a read-only attribute with a settable spec");
        Tunable {
            spec,
            get,
            check: None,
            store: None,
        }
    }

    /// A settable tunable with a further check of a value against the
    /// owner's state (a range that depends on the device, a setting possible
    /// only while idle), run after the spec's range check and before `store`.
    pub const fn checked(
        spec: TunableSpec,
        get: fn(&T) -> u64,
        store: fn(&mut T, u64),
        check: Check<T>,
    ) -> Self {
        Tunable {
            check: Some(check),
            ..Tunable::new(spec, get, store)
        }
    }

    /// The value in `owner`.
    #[inline]
    pub fn get(&self, owner: &T) -> u64 {
        (self.get)(owner)
    }

    /// Whether `owner` would take `value`: every check, nothing changes.
    pub fn validate(&self, owner: &T, value: u64) -> Result<(), TunableError> {
        self.spec.check(value)?;
        match self.check {
            Some(check) => check(owner, &self.spec, value),
            None => Ok(()),
        }
    }

    /// Check `value` fully, then store it; a refused value changes nothing.
    pub fn set(&self, owner: &mut T, value: u64) -> Result<(), TunableError> {
        self.validate(owner, value)?;
        let Some(store) = self.store else {
            return Err(TunableError::ReadOnly {
                name: self.spec.name,
            });
        };
        store(owner, value);
        Ok(())
    }
}

/// The specs of a table, in its order: what [`crate::Scheduler::tunables`]
/// lists.
pub const fn specs<T, const N: usize>(table: &[Tunable<T>; N]) -> [TunableSpec; N] {
    let mut out = [TunableSpec::read_only("", Unit::Count, ""); N];
    let mut i = 0;
    while i < N {
        out[i] = table[i].spec;
        i += 1;
    }
    out
}

/// Find `name` in `table`, or say which names exist.
pub fn find<'a, T>(
    table: &'a [Tunable<T>],
    owner: &str,
    name: &str,
) -> Result<&'a Tunable<T>, TunableError> {
    table
        .iter()
        .find(|t| t.spec.name == name)
        .ok_or_else(|| TunableError::Unknown {
            name: name.to_string(),
            owner: format!(
                "{owner}{}",
                crate::spelling::did_you_mean(name, table.iter().map(|t| t.spec.name))
            ),
            known: table
                .iter()
                .map(|t| t.spec.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Read tunable `name` of `owner` (called `owner_name` in errors).
pub fn get<T>(
    table: &[Tunable<T>],
    owner_name: &str,
    owner: &T,
    name: &str,
) -> Result<u64, TunableError> {
    Ok(find(table, owner_name, name)?.get(owner))
}

/// Set tunable `name` of `owner` to `value`, after every check.
pub fn set<T>(
    table: &[Tunable<T>],
    owner_name: &str,
    owner: &mut T,
    name: &str,
    value: u64,
) -> Result<(), TunableError> {
    find(table, owner_name, name)?.set(owner, value)
}

/// Store every settable tunable's default into `owner`: constructors take
/// their defaults from the table, so each default is written once.
pub fn apply_defaults<T>(table: &[Tunable<T>], owner: &mut T) {
    for t in table {
        if let Some(store) = t.store {
            store(owner, t.spec.default);
        }
    }
}

/// Find `name` in `specs`, or say which names exist.
pub fn find_spec(
    specs: &'static [TunableSpec],
    owner: &str,
    name: &str,
) -> Result<&'static TunableSpec, TunableError> {
    specs
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| TunableError::Unknown {
            name: name.to_string(),
            owner: format!(
                "{owner}{}",
                crate::spelling::did_you_mean(name, specs.iter().map(|s| s.name))
            ),
            known: specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
        })
}

/// Parse a tunable value written as text: a decimal integer (`500`), with an
/// optional unit suffix the tunable's unit accepts (`500ms`, `2s` for times;
/// `4k`, `1m` for sizes), or `true`/`false`/`on`/`off` for switches.
pub fn parse_value(spec: &TunableSpec, text: &str) -> Result<u64, TunableError> {
    let bad = |why: &'static str| TunableError::BadValue {
        name: spec.name.to_string(),
        value: text.to_string(),
        why,
    };
    let t = text.trim();
    if spec.unit == Unit::Bool {
        return match t {
            "0" | "false" | "off" | "no" => Ok(0),
            "1" | "true" | "on" | "yes" => Ok(1),
            _ => Err(bad("expected 0 or 1")),
        };
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    if digits.is_empty() {
        return Err(bad("expected a non-negative integer"));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| bad("expected a non-negative integer that fits in 64 bits"))?;
    let suffix = suffix.trim().to_ascii_lowercase();
    if suffix.is_empty() {
        return Ok(n);
    }
    // Scale relative to the tunable's own unit.
    let time_ns: Option<u64> = match suffix.as_str() {
        "ns" => Some(1),
        "us" | "usec" => Some(1_000),
        "ms" | "msec" => Some(1_000_000),
        "s" | "sec" => Some(1_000_000_000),
        _ => None,
    };
    let size_bytes: Option<u64> = match suffix.as_str() {
        "b" => Some(1),
        "k" | "kb" | "kib" => Some(1 << 10),
        "m" | "mb" | "mib" => Some(1 << 20),
        "g" | "gb" | "gib" => Some(1 << 30),
        _ => None,
    };
    let (scale, unit) = match (spec.unit, time_ns, size_bytes) {
        (Unit::Millis, Some(s), _) => (s, 1_000_000),
        (Unit::Micros, Some(s), _) => (s, 1_000),
        (Unit::Nanos, Some(s), _) => (s, 1),
        (Unit::KiB, _, Some(s)) => (s, 1 << 10),
        (Unit::Bytes, _, Some(s)) => (s, 1),
        (Unit::Sectors, _, Some(s)) => (s, 512),
        _ => return Err(bad("unit suffix not accepted for this tunable")),
    };
    let total = n.checked_mul(scale).ok_or_else(|| bad("value too large"))?;
    if total % unit != 0 {
        return Err(bad("not a whole number of the tunable's unit"));
    }
    Ok(total / unit)
}

/// One settable tunable of a table, in one row:
/// `tunable!(KIND, "name", default, min, max, Unit::U, "meaning", o => o.field)`,
/// where `o.field` is where the owner keeps the value and KIND says how:
/// - `ms`: nanoseconds, set and shown in milliseconds;
/// - `count`: a `u32`;
/// - `flag`: a `bool`, shown as 0 or 1;
/// - `value`: a `u64`, as shown.
///
/// Rows that convert otherwise, or act when set, use [`Tunable::new`].
macro_rules! tunable {
    (ms, $name:literal, $default:expr, $min:expr, $max:expr, $unit:expr, $help:literal, $o:ident => $place:expr) => {
        $crate::tunable::Tunable::new(
            $crate::tunable::TunableSpec::new($name, $default, $min, $max, $unit, $help),
            |$o| $crate::tunable::ns_to_ms($place),
            |$o, v| $place = $crate::tunable::ms_to_ns(v),
        )
    };
    (count, $name:literal, $default:expr, $min:expr, $max:expr, $unit:expr, $help:literal, $o:ident => $place:expr) => {
        $crate::tunable::Tunable::new(
            $crate::tunable::TunableSpec::new($name, $default, $min, $max, $unit, $help),
            |$o| u64::from($place),
            // The range keeps the value within u32.
            |$o, v| $place = v as u32,
        )
    };
    (flag, $name:literal, $default:expr, $min:expr, $max:expr, $unit:expr, $help:literal, $o:ident => $place:expr) => {
        $crate::tunable::Tunable::new(
            $crate::tunable::TunableSpec::new($name, $default, $min, $max, $unit, $help),
            |$o| u64::from($place),
            |$o, v| $place = v != 0,
        )
    };
    (value, $name:literal, $default:expr, $min:expr, $max:expr, $unit:expr, $help:literal, $o:ident => $place:expr) => {
        $crate::tunable::Tunable::new(
            $crate::tunable::TunableSpec::new($name, $default, $min, $max, $unit, $help),
            |$o| $place,
            |$o, v| $place = v,
        )
    };
}
pub(crate) use tunable;

/// Nanoseconds to whole milliseconds.
#[inline]
pub(crate) fn ns_to_ms(ns: u64) -> u64 {
    ns / 1_000_000
}

/// Milliseconds to nanoseconds, saturating.
#[inline]
pub(crate) fn ms_to_ns(ms: u64) -> u64 {
    ms.saturating_mul(1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: TunableSpec = TunableSpec::new("read_expire", 500, 0, 3_600_000, Unit::Millis, "");
    const SW: TunableSpec = TunableSpec::new("front_merges", 1, 0, 1, Unit::Bool, "");
    const KB: TunableSpec = TunableSpec::new("max_sectors_kb", 4096, 4, 4096, Unit::KiB, "");

    #[test]
    fn parses_plain_and_suffixed_values() {
        assert_eq!(parse_value(&MS, "250").unwrap(), 250);
        assert_eq!(parse_value(&MS, "2s").unwrap(), 2000);
        assert_eq!(parse_value(&MS, "1000us").unwrap(), 1);
        assert!(parse_value(&MS, "1500us").is_err());
        assert_eq!(parse_value(&SW, "on").unwrap(), 1);
        assert_eq!(parse_value(&KB, "1m").unwrap(), 1024);
        assert!(parse_value(&KB, "5ms").is_err());
        assert!(parse_value(&MS, "-1").is_err());
        assert!(parse_value(&MS, "").is_err());
        assert!(parse_value(&MS, "99999999999999999999").is_err());
    }

    #[test]
    fn range_and_read_only() {
        assert!(MS.check(3_600_001).is_err());
        let ro = TunableSpec::read_only("logical_block_size", Unit::Bytes, "");
        assert!(matches!(ro.check(1), Err(TunableError::ReadOnly { .. })));
        let e = find_spec(&[MS, SW], "mq-deadline", "read_expir").unwrap_err();
        assert!(e.to_string().contains("read_expire, front_merges"), "{e}");
    }
}
