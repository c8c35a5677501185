//! fio's value forms: sizes with `kb_base`-dependent suffixes, times with
//! units, ranges, per-direction lists (`r,w,t`), percentages, floats,
//! switches and parenthesised arithmetic. Every function returns the message
//! of what is wrong; the caller adds file, line and option.
//!
//! Where fio reads a value in a way nobody means (`1.5g` is 1 byte to fio,
//! `4 k` is 4, `-1` is 2^64-1), elevator refuses it and says so.

use elevator_core::Nanos;

/// One microsecond in nanoseconds.
pub(super) const MICROSECOND: Nanos = 1_000;
/// One millisecond in nanoseconds.
pub(super) const MILLISECOND: Nanos = 1_000_000;
/// One second in nanoseconds.
pub(super) const SECOND: Nanos = 1_000_000_000;

/// A size in bytes. `kb_base` is fio's: with 1024 (the default) `k`, `kb`
/// mean 1024 and `ki`, `kib` mean 1000 (fio keeps old scripts working);
/// with 1000 it is the other way round. Hex (`0x1000`) and parenthesised
/// arithmetic (`(4*1024)`) are accepted.
pub(super) fn size(v: &str, kb_base: u32) -> Result<u64, String> {
    let v = v.trim();
    if v.starts_with('(') {
        return expression(v, kb_base);
    }
    let (n, suffix) = leading_number(v, "size")?;
    let factor = size_factor(suffix, kb_base).ok_or_else(|| {
        format!(
            "'{v}': unknown size suffix '{suffix}' (use k, m, g, t or p, optionally followed by \
             b, i or ib)"
        )
    })?;
    n.checked_mul(factor)
        .ok_or_else(|| format!("size '{v}' is too large"))
}

/// The multiplier of a size suffix, `None` when it is not one.
fn size_factor(suffix: &str, kb_base: u32) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    let s = s.strip_suffix('b').unwrap_or(&s);
    if s.is_empty() {
        return Some(1);
    }
    let (letter, iec) = match s.strip_suffix('i') {
        Some(l) => (l, true),
        None => (s, false),
    };
    let power = match letter {
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return None,
    };
    // fio's kb_base=1024 swaps the standards: k is 1024, ki is 1000.
    let base: u64 = match (kb_base == 1000, iec) {
        (true, false) | (false, true) => 1000,
        _ => 1024,
    };
    base.checked_pow(power)
}

/// A time in nanoseconds; a bare number is in units of `default`. Units:
/// `ns`, `us`/`usec`, `ms`/`msec`, `s`/`sec`, `m`/`min`, `h`/`hour`, `d`/`day`
/// (any case). In parentheses, arithmetic in microseconds (fio's rule).
pub(super) fn time(v: &str, default: Nanos) -> Result<Nanos, String> {
    let v = v.trim();
    if v.starts_with('(') {
        let us = expression(v, 1024)?;
        return us
            .checked_mul(MICROSECOND)
            .ok_or_else(|| format!("time '{v}' is too large"));
    }
    let (n, unit) = leading_number(v, "time")?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" => default,
        "ns" | "nsec" => 1,
        "us" | "usec" => MICROSECOND,
        "ms" | "msec" => MILLISECOND,
        "s" | "sec" => SECOND,
        "m" | "min" => 60 * SECOND,
        "h" | "hour" => 3600 * SECOND,
        "d" | "day" => 86_400 * SECOND,
        _ => {
            return Err(format!(
                "'{v}': unknown time unit '{unit}' (use ns, us, ms, s, m, h or d)"
            ));
        }
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("time '{v}' is too large"))
}

/// `lo-hi` or `lo:hi` (a single value is `v-v`); fio swaps a reversed pair.
pub(super) fn range<T: Copy + PartialOrd>(
    v: &str,
    one: impl Fn(&str) -> Result<T, String>,
) -> Result<(T, T), String> {
    let v = v.trim();
    // A '-' right at the start is a sign, not a separator.
    let cut = v
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '-' || c == ':')
        .map(|(i, _)| i);
    let (lo, hi) = match cut {
        Some(i) => (one(&v[..i])?, one(&v[i + 1..])?),
        None => {
            let x = one(v)?;
            (x, x)
        }
    };
    Ok(if lo > hi { (hi, lo) } else { (lo, hi) })
}

/// fio's per-direction list (reads, writes, trims) as `bs` takes it: one
/// value is all three; `a,b` is reads `a`, writes and trims `b`; an empty
/// part keeps the default; a list ending in a comma leaves the rest at the
/// default. `None` in the result: keep the current value.
pub(super) fn directions(v: &str) -> Result<[Option<&str>; 3], String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "'{v}': at most three values (reads, writes, trims)"
        ));
    }
    if parts.iter().all(|p| p.is_empty()) {
        return Err(format!(
            "'{v}' sets nothing: give a value for reads, writes or trims"
        ));
    }
    let last = parts.last().copied().filter(|p| !p.is_empty());
    let mut out = [None; 3];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = match parts.get(i) {
            Some(&"") => None,
            Some(p) => Some(*p),
            None => last,
        };
    }
    Ok(out)
}

/// Apply a per-direction list to `current`, parsing each given part.
pub(super) fn per_direction<T: Clone>(
    v: &str,
    current: &mut [T; 3],
    one: impl Fn(&str) -> Result<T, String>,
) -> Result<(), String> {
    let parts = directions(v)?;
    let mut next = current.clone();
    for (slot, part) in next.iter_mut().zip(parts) {
        if let Some(p) = part {
            *slot = one(p)?;
        }
    }
    *current = next;
    Ok(())
}

/// A switch that takes `0` or `1` (fio's `bool`: no bare form, no words).
pub(super) fn boolean(v: Option<&str>) -> Result<bool, String> {
    match v.map(str::trim) {
        Some("1") => Ok(true),
        Some("0") => Ok(false),
        None | Some("") => {
            Err("needs a value: 0 or 1 (fio's bool options have no bare form)".into())
        }
        Some(v) => Err(format!("expected 0 or 1, got '{v}'")),
    }
}

/// A switch that may stand alone (fio's "empty or boolean"): bare is on,
/// otherwise a whole number, 0 for off and anything else for on.
pub(super) fn set_switch(v: Option<&str>) -> Result<bool, String> {
    match v.map(str::trim) {
        None | Some("") => Ok(true),
        Some(v) => match whole(v, "number") {
            Ok(n) => Ok(n != 0),
            Err(_) => Err(format!(
                "expected 0 or 1 (or the bare name for 1), got '{v}'"
            )),
        },
    }
}

/// A whole number in `min..=max`, without units.
pub(super) fn int_in(v: &str, min: u64, max: u64) -> Result<u64, String> {
    let n = whole(v, "number")?;
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(format!("must be between {min} and {max}, got {v}"))
    }
}

/// `int_in` for `u32` fields.
pub(super) fn int32(v: &str, min: u32, max: u32) -> Result<u32, String> {
    let n = int_in(v, u64::from(min), u64::from(max))?;
    u32::try_from(n).map_err(|_| format!("{v} is too large"))
}

/// A percentage 0..=100, whole.
pub(super) fn percent(v: &str) -> Result<u8, String> {
    let n = int_in(v, 0, 100)?;
    u8::try_from(n).map_err(|_| format!("must be between 0 and 100, got {v}"))
}

/// A plain `u64` (decimal, hex `0x`, or a parenthesised expression) with
/// nothing after it.
pub(super) fn whole(v: &str, what: &str) -> Result<u64, String> {
    let v = v.trim();
    if v.starts_with('(') {
        return expression(v, 1024);
    }
    match leading_number(v, what)? {
        (n, "") => Ok(n),
        _ => Err(format!("'{v}' is not a whole number (no units here)")),
    }
}

/// A finite floating-point number.
pub(super) fn float(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("'{v}' is not a number")),
    }
}

/// The number at the start of `v` (decimal or `0x` hex) and what follows
/// it, with clear errors for the forms fio misreads.
pub(super) fn leading_number<'a>(v: &'a str, what: &str) -> Result<(u64, &'a str), String> {
    if v.starts_with('-') {
        return Err(format!("negative {what} '{v}' is not allowed"));
    }
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        if end == 0 {
            return Err(format!("'{v}' is not a hexadecimal {what}"));
        }
        let n = u64::from_str_radix(&hex[..end], 16)
            .map_err(|_| format!("{what} '{v}' is too large"))?;
        return Ok((n, &hex[end..]));
    }
    let end = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, rest) = v.split_at(end);
    if rest.starts_with('.') || digits.is_empty() && v.starts_with('.') {
        return Err(format!(
            "'{v}': decimals are not accepted here (fio would silently read only the part \
             before the '.'); write a whole number with a smaller unit"
        ));
    }
    if digits.is_empty() {
        return Err(format!("'{v}' is not a {what}"));
    }
    if rest.starts_with(char::is_whitespace) {
        return Err(format!(
            "'{v}': a space between the number and its unit (fio would read only the number)"
        ));
    }
    let n = digits
        .parse()
        .map_err(|_| format!("{what} '{v}' is too large"))?;
    Ok((n, rest))
}

/// Evaluate a parenthesised integer expression (`+ - * / % ^`, nested
/// parentheses, numbers with size suffixes), as fio documents it.
pub(super) fn expression(v: &str, kb_base: u32) -> Result<u64, String> {
    let mut p = Expr {
        s: v.as_bytes(),
        at: 0,
        kb_base,
        depth: 0,
    };
    let n = p.sum()?;
    p.skip_space();
    if p.at != p.s.len() {
        return Err(format!(
            "'{v}': unexpected text at position {} of the expression",
            p.at + 1
        ));
    }
    u64::try_from(n).map_err(|_| format!("'{v}' comes to {n}, which is negative"))
}

/// A recursive-descent evaluator over `i128`.
struct Expr<'a> {
    s: &'a [u8],
    at: usize,
    kb_base: u32,
    depth: u32,
}

impl Expr<'_> {
    fn skip_space(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.s.get(self.at).copied()
    }

    fn overflow() -> String {
        "the expression overflows".into()
    }

    fn sum(&mut self) -> Result<i128, String> {
        let mut acc = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.at += 1;
            let rhs = self.product()?;
            acc = if op == b'+' {
                acc.checked_add(rhs)
            } else {
                acc.checked_sub(rhs)
            }
            .ok_or_else(Self::overflow)?;
        }
        Ok(acc)
    }

    fn product(&mut self) -> Result<i128, String> {
        let mut acc = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.at += 1;
            let rhs = self.power()?;
            acc = match op {
                b'*' => acc.checked_mul(rhs),
                _ if rhs == 0 => return Err("division by zero in the expression".into()),
                b'/' => acc.checked_div(rhs),
                _ => acc.checked_rem(rhs),
            }
            .ok_or_else(Self::overflow)?;
        }
        Ok(acc)
    }

    fn power(&mut self) -> Result<i128, String> {
        let base = self.atom()?;
        if self.peek() == Some(b'^') {
            self.at += 1;
            let exp = self.power()?;
            let exp = u32::try_from(exp).map_err(|_| Self::overflow())?;
            return base.checked_pow(exp).ok_or_else(Self::overflow);
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<i128, String> {
        match self.peek() {
            Some(b'(') => {
                self.depth += 1;
                if self.depth > 32 {
                    return Err("the expression nests too deeply".into());
                }
                self.at += 1;
                let n = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("missing ')' in the expression".into());
                }
                self.at += 1;
                self.depth -= 1;
                Ok(n)
            }
            Some(b'-') => {
                self.at += 1;
                Ok(-self.atom()?)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.at;
                while self
                    .s
                    .get(self.at)
                    .is_some_and(|c| c.is_ascii_alphanumeric())
                {
                    self.at += 1;
                }
                let token = std::str::from_utf8(&self.s[start..self.at])
                    .map_err(|_| "the expression is not text".to_string())?;
                Ok(i128::from(size(token, self.kb_base)?))
            }
            _ => Err("expected a number or '(' in the expression".into()),
        }
    }
}

/// An I/O priority level, 0..=7 (`prio`, `cmdprio`).
pub(super) fn level(v: &str) -> Result<u8, String> {
    let n = int_in(v, 0, 7)?;
    u8::try_from(n).map_err(|_| format!("must be between 0 and 7, got {v}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_kb_base() {
        for (text, bytes) in [
            ("0", 0),
            ("4k", 4096),
            ("4K", 4096),
            ("4kb", 4096),
            ("4KB", 4096),
            ("4KiB", 4000),
            ("4ki", 4000),
            ("1m", 1 << 20),
            ("1mi", 1_000_000),
            ("2g", 2 << 30),
            ("1p", 1 << 50),
            ("7b", 7),
            ("0x1000", 4096),
            ("0x10k", 16 * 1024),
            ("(4*1024)", 4096),
            ("(1+2)", 3),
            ("(2^10)", 1024),
            ("((3+1)*1k)", 4096),
            ("(10/3)", 3),
            ("(10%3)", 1),
        ] {
            assert_eq!(size(text, 1024), Ok(bytes), "{text}");
        }
        assert_eq!(size("4k", 1000), Ok(4000));
        assert_eq!(size("4KiB", 1000), Ok(4096));
        for bad in [
            "",
            "k",
            "-4k",
            "1.5m",
            ".5k",
            "4 k",
            "4x",
            "4kk",
            "4ik",
            "0x",
            "0xg",
            "(1-2)",
            "(1/0)",
            "(1+",
            "(1)x",
            "16777216T",
        ] {
            assert!(size(bad, 1024).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_take_units() {
        assert_eq!(time("10", MICROSECOND), Ok(10_000));
        assert_eq!(time("2d", SECOND), Ok(2 * 86_400 * SECOND));
        assert_eq!(time("(2*3)", SECOND), Ok(6 * MICROSECOND));
        assert!(time("1.5s", SECOND).is_err());
    }

    #[test]
    fn ranges_and_directions() {
        let sz = |s: &str| size(s, 1024);
        assert_eq!(range("4k-64k", sz), Ok((4096, 65536)));
        assert_eq!(range("64k:4k", sz), Ok((4096, 65536)));
        assert_eq!(range("8k", sz), Ok((8192, 8192)));
        assert_eq!(directions("a"), Ok([Some("a"); 3]));
        assert_eq!(directions("a,b"), Ok([Some("a"), Some("b"), Some("b")]));
        assert_eq!(directions("a,b,"), Ok([Some("a"), Some("b"), None]));
        assert_eq!(directions(",b"), Ok([None, Some("b"), Some("b")]));
        assert_eq!(directions("a,"), Ok([Some("a"), None, None]));
        assert!(directions(",").is_err());
        assert!(directions("a,b,c,d").is_err());
    }

    #[test]
    fn switches() {
        assert_eq!(boolean(Some("1")), Ok(true));
        assert!(boolean(None).is_err());
        assert!(boolean(Some("true")).is_err());
        assert_eq!(set_switch(None), Ok(true));
        assert_eq!(set_switch(Some("2")), Ok(true));
        assert_eq!(set_switch(Some("0")), Ok(false));
        assert!(set_switch(Some("yes")).is_err());
    }
}
