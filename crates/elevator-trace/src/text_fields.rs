//! Byte-level pieces shared by the text formats: reading one line of at
//! most [`MAX_LINE_BYTES`] ([`read_line`]), a cursor over one line's fields
//! (no allocation per line) and integer formatting into a line buffer (no
//! `fmt` machinery per field).

use std::io::{self, BufRead};

/// The longest line a text trace may have (real lines are under 200
/// bytes): a longer one is an error, and memory never holds more of it.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// What [`read_line`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineRead {
    /// The end of the input.
    End,
    /// A line (with its `\n`, if it had one).
    Line,
    /// A line longer than [`MAX_LINE_BYTES`], passed over to its end.
    TooLong,
}

/// Read the next line of `input` into `line` (emptied first), keeping at
/// most [`MAX_LINE_BYTES`] of it: a longer line is read through to its end
/// and left out ([`LineRead::TooLong`]).
pub fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<LineRead> {
    line.clear();
    let mut any = false;
    let mut too_long = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        any = true;
        let (n, done) = match buf.iter().position(|&c| c == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if !too_long {
            if line.len() + n <= MAX_LINE_BYTES {
                line.extend_from_slice(&buf[..n]);
            } else {
                too_long = true;
                line.clear();
            }
        }
        input.consume(n);
        if done {
            break;
        }
    }
    Ok(match (any, too_long) {
        (false, _) => LineRead::End,
        (true, false) => LineRead::Line,
        (true, true) => LineRead::TooLong,
    })
}

/// A cursor over the bytes of one text line.
pub struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    /// A cursor at the start of `bytes` (a line, with or without its end).
    pub fn new(bytes: &'a [u8]) -> Fields<'a> {
        let mut end = bytes.len();
        while end > 0 && matches!(bytes[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        Fields {
            bytes: &bytes[..end],
            at: 0,
        }
    }

    /// Skip spaces and tabs.
    pub fn skip_space(&mut self) {
        while self.at < self.bytes.len() && matches!(self.bytes[self.at], b' ' | b'\t') {
            self.at += 1;
        }
    }

    /// The next run of non-blank bytes, after any blanks; empty at the end.
    pub fn word(&mut self) -> &'a [u8] {
        self.skip_space();
        let start = self.at;
        while self.at < self.bytes.len() && !matches!(self.bytes[self.at], b' ' | b'\t') {
            self.at += 1;
        }
        &self.bytes[start..self.at]
    }

    /// The next word as an unsigned decimal number.
    pub fn uint(&mut self) -> Option<u64> {
        parse_uint(self.word())
    }

    /// Whether only blanks are left.
    pub fn at_end(&mut self) -> bool {
        self.skip_space();
        self.at >= self.bytes.len()
    }

    /// The next byte after blanks, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes.get(self.at).copied()
    }

    /// Skip a `(...)` group after blanks; false if it is not closed.
    pub fn skip_parenthesized(&mut self) -> bool {
        self.skip_space();
        match self.bytes[self.at..].iter().position(|&c| c == b')') {
            Some(i) => {
                self.at += i + 1;
                true
            }
            None => false,
        }
    }

    /// Everything not read yet, blanks first skipped.
    pub fn rest(&mut self) -> &'a [u8] {
        self.skip_space();
        let r = &self.bytes[self.at..];
        self.at = self.bytes.len();
        r
    }

    /// The whole line.
    pub fn line(&self) -> &'a [u8] {
        self.bytes
    }
}

/// An unsigned decimal number, all digits; `None` if empty, not digits or
/// too large.
pub fn parse_uint(b: &[u8]) -> Option<u64> {
    if b.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// `seconds.fraction` as nanoseconds (up to nine fraction digits).
pub fn parse_seconds(b: &[u8]) -> Option<u64> {
    let dot = b.iter().position(|&c| c == b'.');
    let (whole, frac) = match dot {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (b, &b[..0]),
    };
    if frac.len() > 9 || (dot.is_some() && frac.is_empty()) {
        return None;
    }
    let mut ns = if frac.is_empty() {
        0
    } else {
        parse_uint(frac)?
    };
    for _ in frac.len()..9 {
        ns *= 10;
    }
    parse_uint(whole)?
        .checked_mul(1_000_000_000)?
        .checked_add(ns)
}

/// Append `v` in decimal, right-aligned in `width` columns.
pub fn push_uint(line: &mut Vec<u8>, v: u64, width: usize) {
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut x = v;
    loop {
        digits[19 - n] = b'0' + (x % 10) as u8;
        n += 1;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    for _ in n..width {
        line.push(b' ');
    }
    line.extend_from_slice(&digits[20 - n..]);
}

/// Append `v` in decimal, left-aligned in `width` columns.
pub fn push_uint_left(line: &mut Vec<u8>, v: u64, width: usize) {
    let start = line.len();
    push_uint(line, v, 0);
    for _ in line.len() - start..width {
        line.push(b' ');
    }
}

/// Append `v` in decimal with exactly `width` digits (zero padded).
pub fn push_uint_zeros(line: &mut Vec<u8>, v: u64, width: usize) {
    let start = line.len();
    push_uint(line, v, width);
    for b in &mut line[start..] {
        if *b == b' ' {
            *b = b'0';
        }
    }
}

/// Append `text` right-aligned in `width` columns.
pub fn push_right(line: &mut Vec<u8>, text: &[u8], width: usize) {
    for _ in text.len()..width {
        line.push(b' ');
    }
    line.extend_from_slice(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_whole_or_passed_over_when_too_long() {
        let long = vec![b'x'; MAX_LINE_BYTES + 1];
        let mut text = b"a b\n".to_vec();
        text.extend_from_slice(&long);
        text.extend_from_slice(b"\nlast");
        let mut input = io::BufReader::with_capacity(100, &text[..]);
        let mut line = Vec::new();
        assert_eq!(read_line(&mut input, &mut line).unwrap(), LineRead::Line);
        assert_eq!(line, b"a b\n");
        assert_eq!(read_line(&mut input, &mut line).unwrap(), LineRead::TooLong);
        assert!(line.capacity() <= 2 * MAX_LINE_BYTES);
        assert_eq!(read_line(&mut input, &mut line).unwrap(), LineRead::Line);
        assert_eq!(line, b"last");
        assert_eq!(read_line(&mut input, &mut line).unwrap(), LineRead::End);
    }

    #[test]
    fn numbers_format_and_parse() {
        let mut l = Vec::new();
        push_uint(&mut l, 42, 5);
        push_uint_left(&mut l, 7, 3);
        push_uint_zeros(&mut l, 1234, 9);
        push_uint(&mut l, 0, 0);
        assert_eq!(l, b"   427  0000012340");
        assert_eq!(parse_seconds(b"1.5"), Some(1_500_000_000));
        assert_eq!(parse_seconds(b"0.000000731"), Some(731));
        assert_eq!(parse_seconds(b"12"), Some(12_000_000_000));
        assert_eq!(parse_seconds(b"1."), None);
        assert_eq!(parse_seconds(b"1.0000000001"), None);
        assert_eq!(parse_uint(b"18446744073709551616"), None);
        let mut f = Fields::new(b"  8,0  1 [a b] 3\n");
        assert_eq!(f.word(), b"8,0");
        assert_eq!(f.uint(), Some(1));
        assert_eq!(f.rest(), b"[a b] 3");
        assert!(f.at_end());
    }
}
