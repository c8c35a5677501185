//! The pages' links and the README's shape: every relative link points at a
//! file that exists (and its `#anchor` at a heading of that page), and
//! README.md stays short, with a table of contents near its top.

use std::path::{Component, Path, PathBuf};

use super::ROOT;
use super::figures::{Check, pending};
use super::page::{self, Page};

/// The most lines README.md may have.
const README_LINES: usize = 500;

/// The table of contents must start within this many lines of the top.
const CONTENTS_BY_LINE: usize = 100;

/// The link targets of `text` outside code, with their lines (from 1):
/// `[text](target)`, `![alt](target)`, `[name]: target`, `href="target"`
/// and `src="target"`.
pub fn links(text: &str) -> Vec<(usize, String)> {
    let outside = page::outside_code(text);
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if !outside[n] {
            continue;
        }
        let line = without_code_spans(line);
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            out.push((n + 1, target(&rest[..end])));
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && !trimmed.starts_with("[!")
            && let Some(colon) = trimmed.find("]: ")
        {
            out.push((n + 1, target(&trimmed[colon + 3..])));
        }
        for attribute in ["href=\"", "src=\""] {
            for (at, _) in line.match_indices(attribute) {
                let value = &line[at + attribute.len()..];
                let end = value.find('"').unwrap_or(value.len());
                out.push((n + 1, value[..end].to_string()));
            }
        }
    }
    out
}

/// A link's target without its title (`path "title"`) or angle brackets.
fn target(raw: &str) -> String {
    let raw = raw.trim();
    let raw = raw.split_whitespace().next().unwrap_or("");
    raw.trim_start_matches('<')
        .trim_end_matches('>')
        .to_string()
}

/// `line` with its inline code spans blanked.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for c in line.chars() {
        if c == '`' {
            inside = !inside;
            out.push(' ');
        } else {
            out.push(if inside { ' ' } else { c });
        }
    }
    out
}

/// `path` with `.` and `..` resolved, or `None` when it leaves the root.
fn resolved(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// `%20`-style escapes of a link's path decoded.
fn decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = path
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What is wrong with the link `target` of `page` (a path from the root),
/// if anything; `read` gives another page's text by its path from the root.
pub fn broken(page: &str, target: &str, read: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let scheme = target
        .split_once(':')
        .is_some_and(|(s, _)| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphabetic()));
    if scheme {
        return None;
    }
    if target.is_empty() {
        return Some("an empty link".to_string());
    }
    if target.starts_with('/') {
        return Some(format!(
            "{target}: not relative (write it from {page}'s folder)"
        ));
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let file = if path.is_empty() {
        page.to_string()
    } else {
        let dir = Path::new(page).parent().unwrap_or(Path::new(""));
        match resolved(&dir.join(decoded(path))) {
            Some(file) => file.to_string_lossy().into_owned(),
            None => return Some(format!("{target}: leaves the repository")),
        }
    };
    let text = read(&file);
    if text.is_none() && !Path::new(ROOT).join(&file).exists() {
        return Some(format!("{target}: no file {file}"));
    }
    if anchor.is_empty() || !file.ends_with(".md") {
        return None;
    }
    let anchors = page::anchors(&text.unwrap_or_default());
    (!anchors.iter().any(|a| a == anchor))
        .then(|| format!("{target}: {file} has no heading with the anchor #{anchor}"))
}

/// A page's text by its path from the root, if it is a file.
fn read_page(path: &str) -> Option<String> {
    std::fs::read_to_string(Path::new(ROOT).join(path)).ok()
}

/// Every broken link of `page`: `page:line: what is wrong`.
fn broken_links(page: &Page) -> Vec<String> {
    links(&page.text)
        .into_iter()
        .filter_map(|(line, target)| {
            broken(&page.path, &target, &read_page).map(|e| format!("{}:{line}: {e}", page.path))
        })
        .collect()
}

/// Keep `found` as failures, or note that a page on the list is clean now.
fn judged(
    path: &str,
    check: Check,
    only: Option<&str>,
    found: Vec<String>,
    failures: &mut Vec<String>,
) {
    match (pending(path, check, only), found.is_empty()) {
        (false, false) => failures.extend(found),
        (true, true) => failures.push(format!(
            "{path} passes now: take ({path}, {check:?}) off figures::NOT_YET_CLEAN"
        )),
        _ => {}
    }
}

#[test]
fn every_relative_link_points_at_a_file_and_heading_that_exist() {
    let selection = page::pages();
    let mut failures = Vec::new();
    for page in &selection.pages {
        let only = selection.only.as_deref();
        judged(
            &page.path,
            Check::Links,
            only,
            broken_links(page),
            &mut failures,
        );
    }
    assert!(
        failures.is_empty(),
        "{} broken link(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// What is wrong with the README's table of contents: the first list near
/// the top with a link to a heading of its own, which must link every `## `
/// heading (but the one it stands under).
pub fn contents_missing(readme: &str) -> Vec<String> {
    let lines: Vec<&str> = readme.lines().collect();
    let outside = page::outside_code(readme);
    let item = |l: &str| {
        let t = l.trim_start();
        t.starts_with("- ")
            || t.starts_with("* ")
            || t.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let start = (0..lines.len().min(CONTENTS_BY_LINE))
        .find(|&n| outside[n] && item(lines[n]) && lines[n].contains("](#"));
    let Some(mut start) = start else {
        return vec![format!(
            "README.md: no table of contents (a list of links to its own headings) \
             in its first {CONTENTS_BY_LINE} lines"
        )];
    };
    while start > 0 && item(lines[start - 1]) {
        start -= 1;
    }
    let end = (start..lines.len())
        .find(|&n| !(item(lines[n]) || lines[n].starts_with("  ") && !lines[n].trim().is_empty()))
        .unwrap_or(lines.len());
    let linked: Vec<String> = links(&lines[start..end].join("\n"))
        .into_iter()
        .filter_map(|(_, t)| t.strip_prefix('#').map(str::to_string))
        .collect();
    let above = (0..start)
        .rev()
        .find_map(|n| page::heading(lines[n]).filter(|(level, _)| *level == 2))
        .map(|(_, title)| page::slug(title));
    let mut missing = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let Some((2, title)) = page::heading(line).filter(|_| outside[n]) else {
            continue;
        };
        let slug = page::slug(title);
        if !linked.contains(&slug) && above.as_ref() != Some(&slug) {
            missing.push(format!(
                "README.md:{}: `## {title}` is not in the table of contents (lines {}-{})",
                n + 1,
                start + 1,
                end
            ));
        }
    }
    missing
}

#[test]
fn the_readme_is_short_and_has_a_table_of_contents() {
    let selection = page::pages();
    let Some(readme) = selection.pages.iter().find(|p| p.path == "README.md") else {
        return;
    };
    let (readme, only) = (&readme.text, selection.only.as_deref());
    let mut failures = Vec::new();
    let count = readme.lines().count();
    let long = (count > README_LINES).then(|| {
        format!("README.md has {count} lines, more than {README_LINES}: move some to docs/")
    });
    let long = long.into_iter().collect();
    judged("README.md", Check::Length, only, long, &mut failures);
    let missing = contents_missing(readme);
    judged("README.md", Check::Contents, only, missing, &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn links_are_read_outside_code_and_judged() {
    let text = "see [a](docs/a.md#top \"title\") and `[b](nowhere)`\n```\n[c](nowhere)\n```\n\
                [ref]: ../x.md\n<img src=\"docs/report.png\"> [d](https://example.org/)\n";
    let found = links(text);
    assert_eq!(
        found,
        [
            (1, "docs/a.md#top".to_string()),
            (5, "../x.md".to_string()),
            (6, "https://example.org/".to_string()),
            (6, "docs/report.png".to_string()),
        ]
    );
    let pages = |p: &str| match p {
        "docs/a.md" => Some("# Top\n## Two words\n".to_string()),
        "README.md" => Some("# elevator\n".to_string()),
        _ => None,
    };
    assert_eq!(broken("README.md", "docs/a.md#top", &pages), None);
    assert_eq!(broken("docs/b.md", "a.md#two-words", &pages), None);
    assert_eq!(broken("docs/b.md", "../README.md#elevator", &pages), None);
    assert_eq!(broken("docs/b.md", "https://example.org/#x", &pages), None);
    assert_eq!(
        broken("docs/b.md", "a.md#three", &pages).as_deref(),
        Some("a.md#three: docs/a.md has no heading with the anchor #three")
    );
    assert_eq!(
        broken("docs/b.md", "c.md", &pages).as_deref(),
        Some("c.md: no file docs/c.md")
    );
    assert!(broken("README.md", "../outside.md", &pages).is_some());
    assert!(broken("README.md", "/docs/a.md", &pages).is_some());
    assert_eq!(broken("README.md", "docs/report.png", &pages), None);
}

#[test]
fn the_table_of_contents_links_every_section() {
    let readme = "# elevator\n\nintro\n\n## Contents\n\n- [First](#first)\n  - [Sub](#sub)\n\
                  - [Third one](#third-one)\n\n## First\n### Sub\n## Second\n## Third one\n";
    assert_eq!(
        contents_missing(readme),
        ["README.md:13: `## Second` is not in the table of contents (lines 7-9)"]
    );
    assert_eq!(contents_missing("# elevator\n\n## First\n").len(), 1);
}
