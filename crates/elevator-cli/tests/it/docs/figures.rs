//! The prose-figure check: the prose after a block of `$` commands describes
//! that block, so every figure in it must appear in the block (its commands
//! or shown output) as written. A derived figure (a gain in %, a ratio) must
//! be printed by the command to be quoted there; a sentence with a figure
//! from elsewhere goes before the block or after a heading.
//!
//! A figure is a number as written (`2.7`, `1,234`, `937`) that is not part
//! of a word (`p99`, `ext4`, `x86_64`, `sha256`, `utf-8`, `#30`), nor in
//! inline code, a link's target, a URL or an HTML tag, nor an option's value
//! (`--rounds 5`), nor a list item's number, nor a name's number after one
//! of [`NAMING_WORDS`] (`fio 3.33`, `issue 28`, `seed 003`). In the block every number
//! counts, wherever it stands (`2104KiB/s`, `3.4%`, `1.03x`), but whole:
//! "4" is not in "2104". Digit groups are the same either way: "1,234" in
//! prose is "1234" in the block, and the other way round.

use super::page::{self, Page};

/// Words after which a number names something (a version, an issue, a
/// seed) rather than being a figure: `fio 3.33`, `issue 28`, `seed 003`
/// (any case).
pub const NAMING_WORDS: &[&str] = &["fio", "rustc", "linux", "issue", "seed"];

/// Pages not yet clean, with the checks they fail for now: the doc tests
/// pass over these, and fail when one has become clean (take it off then),
/// so this list only shrinks. Issue 30 leaves it empty. With
/// `ELEVATOR_DOCS_ONLY` set, the pages it keeps are checked in full, listed
/// or not: `ELEVATOR_DOCS_ONLY=README.md cargo test -p elevator-cli --test it
/// docs::` shows what is left to do there.
pub const NOT_YET_CLEAN: &[(&str, Check)] = &[];

/// One of the fast doc checks, as [`NOT_YET_CLEAN`] names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The prose after a `$` block quotes only the block's figures.
    Figures,
    /// Relative links point at files and headings that exist.
    Links,
    /// README.md has at most 500 lines.
    Length,
    /// README.md's table of contents links every `## ` heading.
    Contents,
}

/// Whether the fast check `check` is passed over on `page` for now (never
/// when `only`, the `ELEVATOR_DOCS_ONLY` filter, is set).
pub fn pending(page: &str, check: Check, only: Option<&str>) -> bool {
    only.is_none() && NOT_YET_CLEAN.contains(&(page, check))
}

/// The end of the number that starts at byte `start` of `text`: digits,
/// groups of three after a comma, and `.digits` (twice for a version).
fn number_end(text: &[u8], start: usize) -> usize {
    let digits = |mut i: usize| {
        while i < text.len() && text[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut end = digits(start);
    loop {
        if text.get(end) == Some(&b',') {
            let after = digits(end + 1);
            if after == end + 4 {
                end = after;
                continue;
            }
        }
        if text.get(end) == Some(&b'.') && text.get(end + 1).is_some_and(u8::is_ascii_digit) {
            end = digits(end + 1);
            continue;
        }
        return end;
    }
}

/// Every number of `text` (a block's commands and output), with its digit
/// groups' commas taken out.
pub fn numbers(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let end = number_end(bytes, i);
            out.push(text[i..end].replace(',', ""));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// `prose` with what holds no figures blanked out (same length, so offsets
/// and lines stay): inline code, link targets, URLs, HTML tags, and the
/// numbers of ordered list items.
fn masked(prose: &str) -> Vec<u8> {
    let mut out = prose.as_bytes().to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let bytes = prose.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &prose[i..];
        if bytes[i] == b'`' {
            let run = rest.len() - rest.trim_start_matches('`').len();
            let fence = &rest[..run];
            let close = rest[run..]
                .match_indices(fence)
                .find(|(at, _)| !rest[run + at + run..].starts_with('`'))
                .map(|(at, _)| i + run + at + run);
            let end = close.unwrap_or(i + run);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with("](") {
            let end = rest.find(')').map_or(bytes.len(), |e| i + e + 1);
            blank(&mut out, i + 1, end);
            i = end;
        } else if rest.starts_with("http://") || rest.starts_with("https://") {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '>' || c == ')')
                .map_or(bytes.len(), |e| i + e);
            blank(&mut out, i, end);
            i = end;
        } else if bytes[i] == b'<'
            && bytes
                .get(i + 1)
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'/' || *b == b'!')
        {
            let end = rest.find('>').map_or(bytes.len(), |e| i + e + 1);
            blank(&mut out, i, end);
            i = end;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    // An ordered list item's number, and a reference definition's target.
    let mut start = 0;
    for line in prose.split('\n') {
        let indent = line.len() - line.trim_start().len();
        let item = line[indent..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let after = &line[indent + item..];
        if item > 0 && (after.starts_with(". ") || after.starts_with(") ")) {
            blank(&mut out, start + indent, start + indent + item);
        }
        if line[indent..].starts_with('[')
            && let Some(colon) = line.find("]: ")
        {
            blank(&mut out, start + colon + 1, start + line.len());
        }
        start += line.len() + 1;
    }
    out
}

/// Whether the number at byte `start` of `text` is part of a word (`p99`,
/// `x86_64`, `utf-8`, `file.0`, `#30`) or an option's value (`--rounds 5`).
fn not_a_figure(text: &[u8], start: usize) -> bool {
    let Some(&before) = start.checked_sub(1).and_then(|i| text.get(i)) else {
        return false;
    };
    if word_byte(before) || before == b'#' {
        return true;
    }
    let two_before = start.checked_sub(2).and_then(|i| text.get(i)).copied();
    if matches!(before, b'-' | b'.' | b'/')
        && two_before.is_some_and(|b| word_byte(b) && !b.is_ascii_digit())
    {
        return true;
    }
    if matches!(before, b' ' | b'=') {
        let word: Vec<u8> = text[..start - 1]
            .iter()
            .rev()
            .take_while(|b| word_byte(**b) || **b == b'-')
            .copied()
            .collect();
        if word.len() > 2 && word.ends_with(b"--") {
            return true;
        }
        let word: String = word.iter().rev().map(|b| char::from(*b)).collect();
        if before == b' ' && NAMING_WORDS.iter().any(|w| word.eq_ignore_ascii_case(w)) {
            return true;
        }
    }
    false
}

/// The figures of `prose`: (byte offset, the number as written).
pub fn figures(prose: &str) -> Vec<(usize, String)> {
    let text = masked(prose);
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i].is_ascii_digit() {
            let end = number_end(&text, i);
            if !not_a_figure(&text, i) {
                out.push((i, prose[i..end].to_string()));
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Whether `figure` (as written in prose) is one of `numbers` (a block's).
pub fn quoted(figure: &str, numbers: &[String]) -> bool {
    let figure = figure.replace(',', "");
    numbers.contains(&figure)
}

/// Every figure of `page`'s prose that its block does not show:
/// `page:line: figure` with the block's line.
pub fn unquoted(page: &Page) -> Vec<String> {
    let mut failures = Vec::new();
    for (fence, prose) in page::prose_after_sessions(&page.text) {
        let Some(&(first, _)) = prose.first() else {
            continue;
        };
        let numbers = numbers(&fence.body.join("\n"));
        let text: Vec<&str> = prose.iter().map(|(_, l)| l.as_str()).collect();
        let text = text.join("\n");
        for (at, figure) in figures(&text) {
            if !quoted(&figure, &numbers) {
                let line = first + 1 + text[..at].matches('\n').count();
                failures.push(format!(
                    "{}:{line}: {figure} is not in the block it follows ({}:{})",
                    page.path,
                    page.path,
                    fence.open + 1
                ));
            }
        }
    }
    failures
}

#[test]
fn the_prose_after_each_block_quotes_only_the_block_s_figures() {
    let selection = page::pages();
    let mut failures = Vec::new();
    for page in &selection.pages {
        let found = unquoted(page);
        let only = selection.only.as_deref();
        match (pending(&page.path, Check::Figures, only), found.is_empty()) {
            (false, false) => failures.extend(found),
            (true, true) => failures.push(format!(
                "{}: every figure is quoted now: take it off figures::NOT_YET_CLEAN (Figures)",
                page.path
            )),
            _ => {}
        }
    }
    let (blocks, quoted): (usize, usize) = selection
        .pages
        .iter()
        .flat_map(|page| page::prose_after_sessions(&page.text))
        .filter(|(_, prose)| !prose.is_empty())
        .map(|(_, prose)| {
            let text: Vec<&str> = prose.iter().map(|(_, l)| l.as_str()).collect();
            (1, figures(&text.join("\n")).len())
        })
        .fold((0, 0), |(b, f), (db, df)| (b + db, f + df));
    println!(
        "{} pages: {quoted} figures in the prose after {blocks} output blocks, each checked against its block",
        selection.pages.len()
    );
    if !selection.partial {
        for (path, _) in NOT_YET_CLEAN {
            if !selection.pages.iter().any(|p| p.path == *path) {
                failures.push(format!(
                    "{path} is in figures::NOT_YET_CLEAN but is no page"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} figure(s) in prose that the block before does not show (move the sentence \
         before the block or under a heading, or make the command print the figure):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[cfg(test)]
fn written(prose: &str) -> Vec<String> {
    figures(prose).into_iter().map(|(_, f)| f).collect()
}

#[test]
fn figures_are_numbers_that_are_no_part_of_a_word() {
    assert_eq!(written("p99 472 ms against 401"), ["472", "401"]);
    assert_eq!(written("moves 1.03x the data"), ["1.03"]);
    assert_eq!(written("4 KiB blocks, 2,104 KiB/s"), ["4", "2,104"]);
    assert_eq!(written("in 0.5 s, gains 3.4%."), ["0.5", "3.4"]);
    assert_eq!(
        written("run with --rounds 5 or --jobs=2"),
        Vec::<String>::new()
    );
    assert_eq!(
        written("ext4 on x86_64, sha256 and utf-8"),
        Vec::<String>::new()
    );
    assert_eq!(
        written("issue #30, O_DIRECT, io_uring"),
        Vec::<String>::new()
    );
    assert_eq!(
        written("zones 200-100 MB/s, -5 and 1/2"),
        ["200", "100", "5", "1", "2"]
    );
    assert_eq!(written("version 1.95.0 and 003."), ["1.95.0", "003"]);
    assert_eq!(
        written("fio 3.33, rustc 1.95.0, Issue 28, seed 003, 7 seeds"),
        ["7"]
    );
    assert_eq!(written("1,2,4 threads"), ["1", "2", "4"]);
}

#[test]
fn code_links_urls_tags_and_list_numbers_hold_no_figures() {
    assert_eq!(written("`--rounds 5` and ``a ` 7`` then 8"), ["8"]);
    assert_eq!(
        written("[part 3](docs/seed3.md#part-2) at https://x.org/9 <img width=\"600\">"),
        ["3"]
    );
    assert_eq!(written("1. first\n  2) second 6\n[ref]: docs/v2.md"), ["6"]);
    assert_eq!(written("a `span\nover 2 lines` and 10"), ["10"]);
}

#[test]
fn a_block_s_numbers_are_whole_and_ungrouped() {
    let block = numbers("none 526 2104KiB/s 3.4% 1.03x p99 1,234 v1.95.0 0.5s");
    assert_eq!(
        block,
        ["526", "2104", "3.4", "1.03", "99", "1234", "1.95.0", "0.5"]
    );
    assert!(quoted("2,104", &block));
    assert!(quoted("1234", &block));
    assert!(quoted("3.4", &block));
    assert!(quoted("0.5", &block));
    assert!(!quoted("4", &block));
    assert!(!quoted("2.7", &block));
    assert!(!quoted("1.95", &block));
}

#[test]
fn the_check_names_the_page_line_figure_and_block() {
    let page = Page {
        path: "docs/x.md".to_string(),
        text: "intro 9\n\n```\n$ elevator compare\nnone 526 3.4%\n```\n\nnone \
               makes 526, a gain of 3.4 % and 7 more.\n\n## Next\n\nand 8\n"
            .to_string(),
    };
    assert_eq!(
        unquoted(&page),
        ["docs/x.md:8: 7 is not in the block it follows (docs/x.md:3)"]
    );
}
