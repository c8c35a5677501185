//! Which faults a [`FaultDevice`](super::FaultDevice) injects
//! ([`FaultSpec`]), and the device-spec options that say so
//! ([`FaultSpec::set`], which checks each value).
//!
//! | option | default | meaning |
//! |---|---|---|
//! | `fail_rate=F` | 0 | a fraction 0..=1 of reads and writes fail with EIO |
//! | `fail_sectors=A-B[:C-D...]` | none | every I/O touching these sectors fails with EIO |
//! | `fail_seed=N` | 0 | seeds every random choice |
//! | `lse_sectors=A-B[:C-D...]` | none | latent sector errors: reads there fail until a write covers them |
//! | `torn_rate=F` | 0 | a fraction of writes reach the media only in part |
//! | `misdirect_rate=F` | 0 | a fraction of writes land at another, random place |
//! | `spike_rate=F` | 0 | a fraction of I/Os complete `spike_ms` late |
//! | `spike_ms=T` | 100 | how late |
//! | `timeout_rate=F` | 0 | a fraction of I/Os are never answered, and time out |
//! | `timeout_ms=T` | 30000 | after how long (Linux's default request timeout) |
//! | `vanish_at=T` | never | the device is gone from T after it was opened |
//!
//! Sector ranges are 512-byte sectors, `A-B` meaning `A..B` (B excluded);
//! the ranges of one option must not be empty or overlap. Times are a
//! number with a unit (`500us`, `5ms`, `2s`); a plain number is
//! milliseconds for `spike_ms` and `timeout_ms`, seconds for `vanish_at`.

use std::time::Duration;

use elevator_core::Sector;
use elevator_core::fault::{self, BadRange};

/// Which I/O a [`FaultDevice`](super::FaultDevice) fails, delays or
/// misplaces (see the [module](self) for the options that set each field).
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSpec {
    /// `fail_sectors`: sector ranges `start..end` (512-byte sectors) where
    /// every I/O fails.
    pub bad_sectors: Vec<(Sector, Sector)>,
    /// `fail_rate`: fraction of reads and writes that fail, 0..=1.
    pub fail_rate: f64,
    /// `fail_seed`: seed for every random choice.
    pub seed: u64,
    /// `lse_sectors`: latent sector errors, ranges `start..end`: reads of
    /// them fail until a write reaches them.
    pub lse_sectors: Vec<(Sector, Sector)>,
    /// `torn_rate`: fraction of writes that are torn.
    pub torn_rate: f64,
    /// `misdirect_rate`: fraction of writes that land elsewhere.
    pub misdirect_rate: f64,
    /// `spike_rate`: fraction of I/Os that complete [`FaultSpec::spike`]
    /// late.
    pub spike_rate: f64,
    /// `spike_ms`: how late a spiked I/O completes. Default 100 ms.
    pub spike: Duration,
    /// `timeout_rate`: fraction of I/Os the device never answers.
    pub timeout_rate: f64,
    /// `timeout_ms`: when an unanswered I/O times out, from its
    /// submission. Default 30 s.
    pub timeout: Duration,
    /// `vanish_at`: when the device goes, from its opening (`None`: never).
    pub vanish_at: Option<Duration>,
}

/// `spike_ms`'s default.
pub const DEFAULT_SPIKE: Duration = Duration::from_millis(100);
/// `timeout_ms`'s default: Linux's default block request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The options [`FaultSpec::set`] takes: (name, default, meaning). The
/// parser takes no other (it looks the name up here first), and `elevator
/// devices` lists them from here.
pub const FAULT_OPTIONS: [(&str, &str, &str); 11] = [
    (
        "fail_rate",
        "0",
        "fraction 0..=1 of reads and writes failing with EIO",
    ),
    (
        "fail_sectors",
        "none",
        "A-B[:C-D..]: I/O touching these 512-byte sectors fails (EIO)",
    ),
    ("fail_seed", "0", "seed of every random fault choice"),
    (
        "lse_sectors",
        "none",
        "A-B[:C-D..]: latent sector errors (reads fail until written)",
    ),
    (
        "torn_rate",
        "0",
        "fraction of writes reaching the media only in part (EIO)",
    ),
    (
        "misdirect_rate",
        "0",
        "fraction of writes landing at another place (OK: silent)",
    ),
    (
        "spike_rate",
        "0",
        "fraction of I/Os completing spike_ms late",
    ),
    (
        "spike_ms",
        "100",
        "latency spike (500us, 5ms, 2s; plain: ms)",
    ),
    (
        "timeout_rate",
        "0",
        "fraction of I/Os never answered (ETIMEDOUT after timeout_ms)",
    ),
    (
        "timeout_ms",
        "30000",
        "when an unanswered I/O times out (plain: ms)",
    ),
    (
        "vanish_at",
        "never",
        "time after opening (500ms, 2s; plain: s) from which I/O gets ENODEV",
    ),
];

/// The names of [`FAULT_OPTIONS`], comma-separated, for error messages.
pub fn fault_option_names() -> String {
    FAULT_OPTIONS.map(|(n, _, _)| n).join(", ")
}

impl Default for FaultSpec {
    fn default() -> FaultSpec {
        FaultSpec {
            bad_sectors: Vec::new(),
            fail_rate: 0.0,
            seed: 0,
            lse_sectors: Vec::new(),
            torn_rate: 0.0,
            misdirect_rate: 0.0,
            spike_rate: 0.0,
            spike: DEFAULT_SPIKE,
            timeout_rate: 0.0,
            timeout: DEFAULT_TIMEOUT,
            vanish_at: None,
        }
    }
}

impl FaultSpec {
    /// Whether it would change anything.
    pub fn is_active(&self) -> bool {
        !self.bad_sectors.is_empty()
            || !self.lse_sectors.is_empty()
            || [
                self.fail_rate,
                self.torn_rate,
                self.misdirect_rate,
                self.spike_rate,
                self.timeout_rate,
            ]
            .iter()
            .any(|&r| r > 0.0)
            || self.vanish_at.is_some()
    }

    /// Take the device-spec option `key=value` if it is a fault option:
    /// `Ok(true)` if it was, `Ok(false)` if `key` is no fault option, or
    /// why the value is wrong (naming the option and the value).
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        if !FAULT_OPTIONS.iter().any(|(n, _, _)| *n == key) {
            return Ok(false);
        }
        match key {
            "fail_rate" => self.fail_rate = rate(key, value)?,
            "torn_rate" => self.torn_rate = rate(key, value)?,
            "misdirect_rate" => self.misdirect_rate = rate(key, value)?,
            "spike_rate" => self.spike_rate = rate(key, value)?,
            "timeout_rate" => self.timeout_rate = rate(key, value)?,
            "spike_ms" => self.spike = time(key, value, Duration::from_millis(1))?,
            "timeout_ms" => self.timeout = time(key, value, Duration::from_millis(1))?,
            "vanish_at" => self.vanish_at = Some(time(key, value, Duration::from_secs(1))?),
            "fail_seed" => {
                self.seed = value.trim().parse::<u64>().map_err(|_| {
                    format!("{key}={value}: expected a whole number 0..=18446744073709551615")
                })?
            }
            "fail_sectors" => self.bad_sectors = ranges(key, value)?,
            "lse_sectors" => self.lse_sectors = ranges(key, value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A fraction 0..=1.
fn rate(key: &str, value: &str) -> Result<f64, String> {
    fault::fraction(value).ok_or_else(|| format!("{key}={value}: expected a fraction 0..=1"))
}

/// A time: a number with a unit (`ns`, `us`, `ms`, `s`), or a plain number
/// of `unit`s.
pub fn time(key: &str, value: &str, unit: Duration) -> Result<Duration, String> {
    let bad = || {
        let plain = if unit >= Duration::from_secs(1) {
            "seconds"
        } else {
            "milliseconds"
        };
        format!(
            "{key}={value}: expected a time such as 500us, 5ms or 2s (a plain number is {plain})"
        )
    };
    let t = value.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let scale = match suffix.trim() {
        "" => unit.as_secs_f64(),
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return Err(bad()),
    };
    let secs = n * scale;
    // A year is as good as forever; more would not fit the clock's u64
    // nanoseconds comfortably.
    if !secs.is_finite() || secs > 365.0 * 24.0 * 3600.0 {
        return Err(format!("{key}={value}: more than a year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Sector ranges `A-B[:C-D...]`: each `A..B` with `A < B`, none
/// overlapping another; returned in order.
fn ranges(key: &str, value: &str) -> Result<Vec<(Sector, Sector)>, String> {
    let mut out: Vec<(Sector, Sector)> = Vec::new();
    for range in value.split(':') {
        match fault::sector_range(range) {
            Ok(r) => out.push(r),
            Err(BadRange::Empty(a, b)) => {
                return Err(format!(
                    "{key}: '{range}' is empty: a sector range START-END needs START < END \
                     (END is excluded), got {a} and {b}"
                ));
            }
            Err(BadRange::NotARange) => {
                return Err(format!(
                    "{key}: '{range}' is not a sector range START-END with START < END"
                ));
            }
        }
    }
    out.sort_unstable();
    for w in out.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(format!(
                "{key}: ranges {}-{} and {}-{} overlap",
                w[0].0, w[0].1, w[1].0, w[1].1
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        let mut f = FaultSpec::default();
        for (k, v) in [
            ("torn_rate", "0.25"),
            ("misdirect_rate", "1"),
            ("spike_rate", "0.5"),
            ("spike_ms", "7"),
            ("timeout_rate", "0"),
            ("timeout_ms", "1.5s"),
            ("vanish_at", "500ms"),
            ("lse_sectors", "100-108:8-9"),
            ("fail_seed", "42"),
        ] {
            assert_eq!(f.set(k, v), Ok(true), "{k}={v}");
        }
        assert_eq!(f.set("colour", "red"), Ok(false));
        assert_eq!(f.torn_rate, 0.25);
        assert_eq!(f.spike, Duration::from_millis(7));
        assert_eq!(f.timeout, Duration::from_millis(1500));
        assert_eq!(f.vanish_at, Some(Duration::from_millis(500)));
        assert_eq!(f.lse_sectors, vec![(8, 9), (100, 108)]);
        assert_eq!(f.seed, 42);
        assert!(f.is_active());
        assert_eq!(
            time("vanish_at", "2", Duration::from_secs(1)),
            Ok(Duration::from_secs(2))
        );
        assert!(!FaultSpec::default().is_active());
    }

    #[test]
    fn bad_options_name_the_option_and_value() {
        for (k, v, needle) in [
            (
                "torn_rate",
                "1.5",
                "torn_rate=1.5: expected a fraction 0..=1",
            ),
            ("spike_rate", "-0.1", "spike_rate=-0.1: expected a fraction"),
            ("misdirect_rate", "NaN", "misdirect_rate=NaN"),
            ("spike_ms", "fast", "spike_ms=fast: expected a time"),
            ("vanish_at", "2h", "vanish_at=2h: expected a time"),
            ("timeout_ms", "1e30", "timeout_ms=1e30"),
            ("vanish_at", "999999999", "more than a year"),
            ("lse_sectors", "8-8", "'8-8' is empty"),
            ("lse_sectors", "1-10:5-20", "ranges 1-10 and 5-20 overlap"),
            ("fail_sectors", "x", "'x' is not a sector range"),
            ("fail_seed", "-1", "fail_seed=-1: expected a whole number"),
        ] {
            let e = FaultSpec::default().set(k, v).expect_err(k);
            assert!(e.contains(needle), "{k}={v}: {e}");
        }
    }
}
