//! The pages the doc tests read (README.md and every `docs/**/*.md`), and
//! what they read in them: fenced code blocks, the commands and shown output
//! in those, the prose after a block, and headings with GitHub's anchors.

use std::path::Path;

use super::ROOT;

/// A page: its path from the repository's root (`docs/fio.md`) and its text.
pub struct Page {
    pub path: String,
    pub text: String,
}

/// The pages a doc test reads, and whether `ELEVATOR_DOCS_ONLY` left some out.
pub struct Selection {
    pub pages: Vec<Page>,
    /// The `ELEVATOR_DOCS_ONLY` filter, when set: a substring of the paths kept.
    pub only: Option<String>,
    /// Whether the filter left some page out.
    pub partial: bool,
}

/// README.md, then every `docs/**/*.md` sorted by path, keeping only the
/// paths that hold `ELEVATOR_DOCS_ONLY` when it is set.
pub fn pages() -> Selection {
    let only = std::env::var("ELEVATOR_DOCS_ONLY")
        .ok()
        .filter(|s| !s.is_empty());
    let mut paths = Vec::new();
    markdown_under(&Path::new(ROOT).join("docs"), "docs", &mut paths);
    paths.sort();
    paths.insert(0, "README.md".to_string());
    let count = paths.len();
    let pages: Vec<Page> = paths
        .into_iter()
        .filter(|p| only.as_deref().is_none_or(|o| p.contains(o)))
        .map(|path| {
            let text = std::fs::read_to_string(Path::new(ROOT).join(&path))
                .unwrap_or_else(|e| panic!("{path}: {e}"));
            Page { path, text }
        })
        .collect();
    let partial = pages.len() < count;
    Selection {
        pages,
        only,
        partial,
    }
}

/// Every `.md` file under `dir` (named `shown` from the root), recursively.
fn markdown_under(dir: &Path, shown: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_dir() {
            markdown_under(&path, &format!("{shown}/{name}"), out);
        } else if name.ends_with(".md") {
            out.push(format!("{shown}/{name}"));
        }
    }
}

/// A fenced code block (```` ``` ````, at most three spaces in).
#[derive(Debug)]
pub struct Fence {
    /// What follows the opening backticks (`sh`, `text`, ...).
    pub info: String,
    /// The opening line's index (from 0).
    pub open: usize,
    /// The closing line's index (the page's line count when never closed).
    pub close: usize,
    /// The lines between, with the opening fence's indentation taken off.
    pub body: Vec<String>,
}

fn fence_indent(line: &str) -> Option<usize> {
    let trimmed = line.trim_start_matches(' ');
    let indent = line.len() - trimmed.len();
    (indent <= 3 && trimmed.starts_with("```")).then_some(indent)
}

/// The fenced code blocks of `text`, in order.
pub fn fences(text: &str) -> Vec<Fence> {
    let lines: Vec<&str> = text.lines().collect();
    let mut fences = Vec::new();
    let mut n = 0;
    while n < lines.len() {
        let Some(indent) = fence_indent(lines[n]) else {
            n += 1;
            continue;
        };
        let info = lines[n].trim().trim_start_matches('`').trim().to_string();
        let open = n;
        let mut body = Vec::new();
        n += 1;
        while n < lines.len() && fence_indent(lines[n]).is_none() {
            let line = lines[n];
            let cut = line.len() - line.trim_start_matches(' ').len();
            body.push(line[cut.min(indent)..].to_string());
            n += 1;
        }
        fences.push(Fence {
            info,
            open,
            close: n,
            body,
        });
        n += 1;
    }
    fences
}

/// Whether line `n` of `text` (from 0) is in no fenced code block.
pub fn outside_code(text: &str) -> Vec<bool> {
    let count = text.lines().count();
    let mut outside = vec![true; count];
    for fence in fences(text) {
        for flag in &mut outside[fence.open..=fence.close.min(count.saturating_sub(1))] {
            *flag = false;
        }
    }
    outside
}

/// One command and the output the page shows for it.
#[derive(Debug)]
pub struct Shown {
    /// The command's first line (from 1).
    pub line: usize,
    pub command: String,
    /// What the page shows it printing: `None` for a line of a `sh` block,
    /// which shows no output.
    pub output: Option<Vec<String>>,
    /// The index (from 0) of the page's line where the output starts.
    pub output_at: usize,
}

/// The commands of a page, block by block: every line after a `$ ` in a code
/// block (a line ending in `\` continues on the next) with the lines after
/// it as its output, and every line of a `sh` block.
pub fn commands(text: &str) -> Vec<Vec<Shown>> {
    let mut blocks = Vec::new();
    for fence in fences(text) {
        let session = fence.body.iter().any(|l| l.starts_with("$ "));
        let mut block: Vec<Shown> = Vec::new();
        let mut continued = false;
        for (i, l) in fence.body.iter().enumerate() {
            let at = fence.open + 1 + i;
            if continued {
                if let Some(last) = block.last_mut() {
                    last.command.push(' ');
                    last.command
                        .push_str(l.trim().trim_end_matches('\\').trim_end());
                    last.output_at = at + 1;
                }
                continued = l.ends_with('\\');
                continue;
            }
            let command = if session {
                l.strip_prefix("$ ")
            } else if fence.info == "sh" && !l.trim().is_empty() {
                Some(l.as_str())
            } else {
                None
            };
            match command {
                Some(c) => {
                    continued = c.ends_with('\\');
                    block.push(Shown {
                        line: at + 1,
                        command: c.trim_end_matches('\\').trim().to_string(),
                        output: session.then(Vec::new),
                        output_at: at + 1,
                    });
                }
                None => {
                    if let Some(output) = block.last_mut().and_then(|s| s.output.as_mut()) {
                        output.push(l.clone());
                    }
                }
            }
        }
        if !block.is_empty() {
            blocks.push(block);
        }
    }
    blocks
}

/// Whether `line` is an ATX heading (`## Title`): its level and its text.
pub fn heading(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let level = trimmed.len() - trimmed.trim_start_matches('#').len();
    let rest = &trimmed[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let text = rest.trim();
    let text = text.trim_end_matches('#');
    Some((level, text.trim_end()))
}

/// A page's session blocks (those with a `$ ` command) and, for each, the
/// prose after it: its lines (index from 0, text) up to the next code block
/// or heading.
pub fn prose_after_sessions(text: &str) -> Vec<(Fence, Vec<(usize, String)>)> {
    let lines: Vec<&str> = text.lines().collect();
    let fences = fences(text);
    let mut out = Vec::new();
    for (i, fence) in fences.iter().enumerate() {
        if !fence.body.iter().any(|l| l.starts_with("$ ")) {
            continue;
        }
        let end = fences.get(i + 1).map_or(lines.len(), |f| f.open);
        let prose = (fence.close + 1..end)
            .take_while(|&n| heading(lines[n]).is_none())
            .map(|n| (n, lines[n].to_string()))
            .collect();
        out.push((
            Fence {
                info: fence.info.clone(),
                open: fence.open,
                close: fence.close,
                body: fence.body.clone(),
            },
            prose,
        ));
    }
    out
}

/// The anchor GitHub gives a heading: its rendered text in lower case, with
/// what is neither a letter, a digit, `-`, `_` nor a space taken out, and
/// each space made a `-`.
pub fn slug(heading: &str) -> String {
    rendered(heading)
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A heading's text as rendered: links reduced to their text, HTML tags out.
fn rendered(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '<'
            && let Some(end) = rest.find('>')
        {
            rest = &rest[end + 1..];
            continue;
        }
        if c == ']'
            && rest[1..].starts_with('(')
            && let Some(end) = rest.find(')')
        {
            rest = &rest[end + 1..];
            continue;
        }
        if c != '[' && c != ']' && c != '!' {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Every anchor of a page: its headings' slugs (the second of a name gets
/// `-1`, as on GitHub), and the `id`s and `name`s of its HTML tags.
pub fn anchors(text: &str) -> Vec<String> {
    let outside = outside_code(text);
    let mut anchors: Vec<String> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if !outside[n] {
            continue;
        }
        if let Some((_, title)) = heading(line) {
            let base = slug(title);
            let mut name = base.clone();
            let mut k = 0;
            while anchors.contains(&name) {
                k += 1;
                name = format!("{base}-{k}");
            }
            anchors.push(name);
        }
        for attribute in ["id=\"", "name=\""] {
            for (at, _) in line.match_indices(attribute) {
                let value = &line[at + attribute.len()..];
                if let Some(end) = value.find('"') {
                    anchors.push(value[..end].to_string());
                }
            }
        }
    }
    anchors
}

#[test]
fn the_parser_reads_sessions_sh_blocks_and_continuations() {
    let text = "x\n```\n$ elevator a \\\n    --b c\nout 1\nout 2\n$ elevator d\n```\n\
                ```sh\nelevator e   # note\n\n```\n```text\nelevator f\n```\n";
    let blocks = commands(text);
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert_eq!(blocks[0][0].command, "elevator a --b c");
    assert_eq!(
        blocks[0][0].output.as_deref(),
        Some(&["out 1".to_string(), "out 2".to_string()][..])
    );
    assert_eq!(blocks[0][0].output_at, 4);
    assert_eq!(blocks[1][0].output, None);
    assert_eq!(blocks[0][1].command, "elevator d");
    assert_eq!(blocks[0][1].output_at, 7);
    assert_eq!(blocks[1][0].command, "elevator e   # note");
    assert_eq!(blocks[1][0].line, 10);
}

#[test]
fn fences_in_lists_are_read_without_their_indentation() {
    let text = "- a list:\n\n  ```\n  $ elevator devices\n    indented\n  ```\n";
    let blocks = commands(text);
    assert_eq!(blocks[0][0].command, "elevator devices");
    assert_eq!(blocks[0][0].line, 4);
    assert_eq!(
        blocks[0][0].output.as_deref(),
        Some(&["  indented".to_string()][..])
    );
}

#[test]
fn prose_runs_to_the_next_block_or_heading() {
    let text = "```\n$ a\n1\n```\nsays 1\n\nand 2\n```\nx\n```\nnot this\n\
                ```\n$ b\n```\nsays\n## Next\nnot this\n";
    let sessions = prose_after_sessions(text);
    assert_eq!(sessions.len(), 2);
    let lines: Vec<&str> = sessions[0].1.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(lines, ["says 1", "", "and 2"]);
    assert_eq!(sessions[0].1[0].0, 4);
    let lines: Vec<&str> = sessions[1].1.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(lines, ["says"]);
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug("The seeds' results in one command: `elevator experiment all`"),
        "the-seeds-results-in-one-command-elevator-experiment-all"
    );
    assert_eq!(
        slug("Performance: what is guarded, and what was measured"),
        "performance-what-is-guarded-and-what-was-measured"
    );
    assert_eq!(
        slug("Device models (`crates/elevator-sim/src/device/`)"),
        "device-models-crateselevator-simsrcdevice"
    );
    assert_eq!(slug("Issue 28's figures"), "issue-28s-figures");
    assert_eq!(slug("a — b"), "a--b");
    assert_eq!(
        slug("See [the fio page](docs/fio.md) & more"),
        "see-the-fio-page--more"
    );
    assert_eq!(slug("io_uring's `O_DIRECT`"), "io_urings-o_direct");
    let text = "# A\n## Twice\n```\n# not a heading\n```\n## Twice\n<a id=\"here\"></a>\n";
    assert_eq!(anchors(text), ["a", "twice", "twice-1", "here"]);
}
