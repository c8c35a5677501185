//! Number and date formatting as fio prints them: `num2str`'s significant
//! figures and unit prefixes, `ctime`'s dates (and a report's date,
//! [`date_ms`]), percentile labels.

/// fio's `num2str`: `num` in at most `maxlen` digits, divided by 1000 (or
/// 1024 with `pow2`) and prefixed (`k`, `Ki`...) until it fits, with the
/// remainder as decimals where room is left; `unit` follows (`B`, `B/s`).
pub fn num2str(mut num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let prefixes = if pow2 { IEC } else { SI };
    let thousand = if pow2 { 1024 } else { 1000 };
    let mut post = 0;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < prefixes.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    let post = if post >= prefixes.len() { 0 } else { post };
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let decimals = maxlen.saturating_sub(num.to_string().len());
    if decimals <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefixes[post]);
    }
    let frac = format!("{:.*}", decimals - 1, m as f64 / thousand as f64);
    let (whole, digits) = frac.split_once('.').unwrap_or(("0", ""));
    if whole != "0" {
        num += 1;
    }
    format!("{num}.{digits}{}{unit}", prefixes[post])
}

/// A date as C's `ctime` prints it (`Wed Nov 25 13:25:51 2026`), UTC, from
/// seconds since the epoch.
pub fn ctime(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        y
    )
}

/// The date a report of `run` shows, in milliseconds since the Unix epoch:
/// when a run on the real clock ended (`SOURCE_DATE_EPOCH`, in seconds,
/// instead when set, for reproducible records); `None` for a simulation,
/// whose reports say "simulated" and are the same on every run.
pub fn date_ms(run: &crate::result::RunResult) -> Option<u64> {
    let ended = run.ended_at_ms?;
    let fixed = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    Some(fixed.map_or(ended, |secs| secs.saturating_mul(1000)))
}

/// The date fio's job line shows for `run`: `ctime`'s, or `simulated`
/// ([`date_ms`]).
pub fn date_text(run: &crate::result::RunResult) -> String {
    date_ms(run).map_or_else(|| "simulated".to_string(), |ms| ctime(ms / 1000))
}

/// Decimals fio shows percentile labels with: the most any listed value
/// needs (fio's default list: 2).
pub fn precision(list: &[f64]) -> usize {
    list.iter()
        .map(|&p| {
            (0..=6)
                .find(|&d| {
                    let x = p * 10f64.powi(d);
                    (x - x.round()).abs() < 1e-6
                })
                .unwrap_or(6) as usize
        })
        .max()
        .unwrap_or(0)
}

/// A percentage of `part` in `total` as fio's latency buckets show it
/// (non-zero shares below 0.01 % show as 0.01 %).
pub fn lat_pct(part: u64, total: u64) -> f64 {
    floored(part, total, 0.01)
}

/// A percentage as fio's depth distributions show it (non-zero shares
/// below 0.1 % show as 0.1 %).
pub fn depth_pct(part: u64, total: u64) -> f64 {
    floored(part, total, 0.1)
}

fn floored(part: u64, total: u64, floor: f64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let p = part as f64 * 100.0 / total as f64;
    if part > 0 && p < floor { floor } else { p }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_as_fio() {
        // Seen in fio 3.33's output.
        assert_eq!(num2str(1_632_000, 4, false, ""), "1632k");
        assert_eq!(num2str(4000, 4, false, ""), "4000");
        assert_eq!(num2str(16_384_000, 4, true, "B/s"), "15.6MiB/s");
        assert_eq!(num2str(16_384_000, 4, false, "B/s"), "16.4MB/s");
        assert_eq!(num2str(8_159_232, 4, true, "B"), "7968KiB");
        assert_eq!(num2str(0, 4, true, "B"), "0B");
        assert_eq!(num2str(1_653_340, 6, false, ""), "1653.3k");
        assert_eq!(num2str(33_423_360, 4, true, "B"), "31.9MiB");
    }

    #[test]
    fn dates() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(1_795_613_151), "Wed Nov 25 13:25:51 2026");
    }

    #[test]
    fn precisions() {
        assert_eq!(precision(&[1.0, 50.0, 99.0]), 0);
        assert_eq!(precision(&crate::report::PERCENTILES), 2);
        assert_eq!(precision(&[99.9]), 1);
    }
}
