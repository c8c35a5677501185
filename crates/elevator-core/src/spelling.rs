//! The nearest known name to a misspelt one, for the "did you mean" of
//! every name a user types (schedulers, tunables, device presets and
//! options): [`closest`] by edit distance, and the words an error gives
//! it ([`did_you_mean`]).

/// Longer names are not typos of any name elevator knows.
const LONGEST: usize = 64;

/// The name in `known` closest to `name` by edit distance (insertions,
/// deletions and substitutions of single bytes), if it is within reach: at
/// most 2 edits, or a third of `name`'s length for longer names. Ties go to
/// the earliest in `known`; `name` itself is never suggested, and a name
/// longer than 64 bytes gets no suggestion (so garbage costs little).
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if name.is_empty() || name.len() > LONGEST {
        return None;
    }
    let reach = 2.max(name.len() / 3);
    let mut best: Option<(usize, &str)> = None;
    for candidate in known {
        if candidate == name {
            continue;
        }
        if let Some(d) = distance(name, candidate, reach)
            && best.is_none_or(|(b, _)| d < b)
        {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, n)| n)
}

/// `" (did you mean NAME?)"` for the name of `known` nearest `name`
/// ([`closest`]), or empty: what an error puts after the name it refuses.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, known)
        .map(|n| format!(" (did you mean {n}?)"))
        .unwrap_or_default()
}

/// Edit distance between `a` and `b` (bytes), if it is at most `limit`;
/// the row lives on the stack and the walk stops as soon as every cell of
/// a row is past `limit`.
pub fn distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    const MAX: usize = LONGEST + 1;
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() >= MAX || b.len() >= MAX || a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut row = [0usize; MAX];
    for (j, cell) in row.iter_mut().enumerate().take(b.len() + 1) {
        *cell = j;
    }
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        let mut least = row[0];
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(above + 1);
            least = least.min(row[j + 1]);
            diagonal = above;
        }
        if least > limit {
            return None;
        }
    }
    Some(row[b.len()]).filter(|&d| d <= limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_nearest_name_within_reach() {
        let known = ["read_expire", "write_expire", "fifo_batch"];
        assert_eq!(closest("read_expir", known), Some("read_expire"));
        assert_eq!(closest("fifo_bacth", known), Some("fifo_batch"));
        assert_eq!(closest("slice_idle", known), None);
        assert_eq!(closest("read_expire", known), None, "never itself");
        assert_eq!(closest("", known), None);
        assert_eq!(closest(&"x".repeat(100), known), None);
    }

    #[test]
    fn distance_counts_single_edits() {
        assert_eq!(distance("kitten", "sitting", 5), Some(3));
        assert_eq!(distance("kitten", "sitting", 2), None);
        assert_eq!(distance("abc", "abc", 0), Some(0));
        assert_eq!(distance("", "ab", 2), Some(2));
    }
}
