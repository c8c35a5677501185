//! fio's job-file syntax, before any option is understood: lines,
//! full-line and inline comments, `[section]` headers, `name=value` and bare
//! names, `include FILE`, `${VAR}` and the keywords `$pagesize`,
//! `$mb_memory`, `$ncpus`. The result is a flat list of [`Item`]s, each
//! knowing the file and line it came from (an included file's own).

use super::{JobError, ParseEnv};

/// How deep `include` may nest.
const MAX_INCLUDE_DEPTH: usize = 16;

/// One meaningful line.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Item {
    /// The file it is in (an included file's path as resolved).
    pub file: String,
    /// Its line there (1-based).
    pub line: usize,
    /// What it says.
    pub kind: Kind,
}

/// What a line says.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Kind {
    /// `[name]`.
    Section(String),
    /// `name=value` (value substituted) or a bare `name`.
    Option {
        /// The option name as written.
        name: String,
        /// The value, `None` for a bare name.
        value: Option<String>,
    },
}

/// The items of `text` (the file at `path`), includes expanded.
pub(super) fn items(text: &str, path: &str, env: &ParseEnv) -> Result<Vec<Item>, JobError> {
    let mut out = Vec::new();
    let mut stack = vec![path.to_string()];
    read(text, path, env, &mut stack, &mut out)?;
    Ok(out)
}

fn read(
    text: &str,
    path: &str,
    env: &ParseEnv,
    stack: &mut Vec<String>,
    out: &mut Vec<Item>,
) -> Result<(), JobError> {
    let error = |line: usize, option: Option<&str>, message: String| JobError {
        file: path.to_string(),
        line,
        option: option.map(str::to_string),
        message,
    };
    let included = stack.len() > 1;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        // fio drops everything from the first ';' or '#' on a line.
        let line = raw.find([';', '#']).map_or(raw, |cut| &raw[..cut]).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("include")
            && rest.starts_with(char::is_whitespace)
        {
            let target = resolve(path, rest.trim());
            if stack.len() > MAX_INCLUDE_DEPTH {
                let message = format!("includes nest deeper than {MAX_INCLUDE_DEPTH} files");
                return Err(error(line_no, Some("include"), message));
            }
            if stack.contains(&target) {
                let message = format!(
                    "'{target}' includes itself (through {})",
                    stack.join(" -> ")
                );
                return Err(error(line_no, Some("include"), message));
            }
            let body = (env.read_include)(&target).map_err(|why| {
                error(
                    line_no,
                    Some("include"),
                    format!("cannot read '{target}': {why}"),
                )
            })?;
            stack.push(target.clone());
            read(&body, &target, env, stack, out)?;
            stack.pop();
            continue;
        }
        let kind = if line.starts_with('[') {
            if included {
                let message = "an included file may not contain [sections] (fio's rule): \
                               it adds options to the section that includes it"
                    .to_string();
                return Err(error(line_no, None, message));
            }
            Kind::Section(section_name(line).map_err(|m| error(line_no, None, m))?)
        } else {
            let (name, value) = match line.split_once('=') {
                Some((name, value)) => (name.trim(), Some(value.trim())),
                None => (line, None),
            };
            if name.is_empty() || name.contains(char::is_whitespace) || name.contains(['[', ']']) {
                let message = format!(
                    "malformed line '{line}': expected a [section] header, name=value or a \
                     bare option name"
                );
                return Err(error(line_no, None, message));
            }
            let value = match value {
                Some(v) => Some(substitute(v, env).map_err(|m| error(line_no, Some(name), m))?),
                None => None,
            };
            Kind::Option {
                name: name.to_string(),
                value,
            }
        };
        out.push(Item {
            file: path.to_string(),
            line: line_no,
            kind,
        });
    }
    Ok(())
}

/// An include's path: as written when absolute, else relative to the
/// directory of the including file.
fn resolve(including: &str, target: &str) -> String {
    if target.starts_with('/') {
        return target.to_string();
    }
    match including.rfind('/') {
        Some(cut) => format!("{}/{target}", &including[..cut]),
        None => target.to_string(),
    }
}

/// The name inside a `[section]` header line (already trimmed).
fn section_name(line: &str) -> Result<String, String> {
    let Some(end) = line.find(']') else {
        return Err(format!("unterminated section header '{line}': missing ']'"));
    };
    if end + 1 != line.len() {
        return Err(format!("text after the section header in '{line}'"));
    }
    let name = line[1..end].trim();
    if name.is_empty() {
        return Err("empty section name '[]'".into());
    }
    if name.contains('[') {
        return Err(format!("'[' inside the section name in '{line}'"));
    }
    Ok(name.to_string())
}

/// `${VAR}` from the environment (empty when unset, as fio does) and fio's
/// keywords. A value whose keywords were replaced and that holds arithmetic
/// (`8*$mb_memory`) is evaluated, as fio does, by wrapping it in
/// parentheses.
pub(super) fn substitute(v: &str, env: &ParseEnv) -> Result<String, String> {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    let mut keyword = false;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(inner) = after.strip_prefix('{') {
            let Some(end) = inner.find('}') else {
                return Err(format!("'{v}': '${{' without a closing '}}'"));
            };
            out.push_str(&(env.var)(&inner[..end]).unwrap_or_default());
            rest = &inner[end + 1..];
            continue;
        }
        let word_end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let replacement = match &after[..word_end] {
            "pagesize" => Some(env.pagesize),
            "mb_memory" => Some(env.mb_memory),
            "ncpus" => Some(u64::from(env.ncpus)),
            _ => None,
        };
        match replacement {
            Some(n) => {
                out.push_str(&n.to_string());
                keyword = true;
                rest = &after[word_end..];
            }
            // `$jobname` in filename_format and other '$' text stay as written.
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if keyword && !out.starts_with('(') && out.contains(['*', '/', '+', '^']) {
        out = format!("({out})");
    }
    Ok(out)
}
