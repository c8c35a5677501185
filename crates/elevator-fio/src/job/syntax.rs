//! fio's job-file syntax, before any option is understood: lines,
//! full-line and inline comments, `[section]` headers, `name=value` and bare
//! names, `include FILE`, `${VAR}` and the keywords `$pagesize`,
//! `$mb_memory`, `$ncpus`. The result is a stream of [`Item`]s, each
//! knowing the file and line it came from (an included file's own), handed
//! on one at a time as they are read.
//!
//! What a file may make the parser read is bounded: includes nest at most
//! [`MAX_INCLUDE_DEPTH`] deep, a file and its includes hold at most
//! [`MAX_TEXT_BYTES`] of text in all, read from at most [`MAX_INCLUDES`]
//! includes (each read by the caller, which bounds a file at
//! [`MAX_FILE_BYTES`] before reading it).

use super::options::MAX_VALUE_BYTES;
use super::{JobError, ParseEnv};

/// How deep `include` may nest.
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// The most bytes one job file (or included file) may hold: callers read
/// at most this much, plus one byte to know it is longer.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// The most bytes of text a job file and all it includes may hold.
pub const MAX_TEXT_BYTES: usize = 16 << 20;

/// The most `include` lines a job file and its includes may follow.
pub const MAX_INCLUDES: usize = 1024;

/// What is left of a parse's allowance.
struct Budget {
    bytes: usize,
    includes: usize,
}

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

/// Where items go as they are read.
pub(super) type Emit<'a> = dyn FnMut(&Item) -> Result<(), JobError> + 'a;

/// The items of `text` (the file at `path`), includes expanded, each given
/// to `emit` as it is read.
pub(super) fn items(
    text: &str,
    path: &str,
    env: &ParseEnv,
    emit: &mut Emit<'_>,
) -> Result<(), JobError> {
    let mut stack = vec![path.to_string()];
    let mut budget = Budget {
        bytes: MAX_TEXT_BYTES,
        includes: MAX_INCLUDES,
    };
    take(&mut budget, text.len(), path, 0, "the job file")?;
    read(text, path, env, &mut stack, &mut budget, emit)
}

/// Count `len` bytes of text against the budget; `what` names the text
/// for the error (at `path:line`, the line that brought it in).
fn take(
    budget: &mut Budget,
    len: usize,
    path: &str,
    line: usize,
    what: &str,
) -> Result<(), JobError> {
    if len > budget.bytes {
        return Err(JobError {
            file: path.to_string(),
            line,
            option: (line > 0).then(|| "include".to_string()),
            message: format!(
                "{what} brings the text read to more than {} MiB, the most a job file and \
                 its includes may hold",
                MAX_TEXT_BYTES >> 20
            ),
        });
    }
    budget.bytes -= len;
    Ok(())
}

fn read(
    text: &str,
    path: &str,
    env: &ParseEnv,
    stack: &mut Vec<String>,
    budget: &mut Budget,
    emit: &mut Emit<'_>,
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
            if budget.includes == 0 {
                let message =
                    format!("more than {MAX_INCLUDES} includes in the job file and its includes");
                return Err(error(line_no, Some("include"), message));
            }
            budget.includes -= 1;
            let body = (env.read_include)(&target).map_err(|why| {
                error(
                    line_no,
                    Some("include"),
                    format!("cannot read '{target}': {why}"),
                )
            })?;
            if body.len() as u64 > MAX_FILE_BYTES {
                let message = format!(
                    "'{target}' holds more than {} MiB, the most a job file may",
                    MAX_FILE_BYTES >> 20
                );
                return Err(error(line_no, Some("include"), message));
            }
            take(budget, body.len(), path, line_no, &format!("'{target}'"))?;
            stack.push(target.clone());
            read(&body, &target, env, stack, budget, emit)?;
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
        emit(&Item {
            file: path.to_string(),
            line: line_no,
            kind,
        })?;
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
    // A job's name is copied into each clone's report and its files'
    // names: bounded as an option's value is.
    if name.len() > MAX_VALUE_BYTES {
        return Err(format!(
            "the section name is {} bytes long: at most {MAX_VALUE_BYTES}",
            name.len()
        ));
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
            let name = &inner[..end];
            let value = (env.var)(name).unwrap_or_default();
            // Bounded as it grows: a line of many `${BIG}` would otherwise
            // expand to gigabytes before the value's own length is checked.
            if out.len() + value.len() > MAX_VALUE_BYTES {
                return Err(format!(
                    "with ${{{name}}} replaced ({} bytes), the value is longer than \
                     {MAX_VALUE_BYTES} bytes, the most a value may be (PATH_MAX)",
                    value.len()
                ));
            }
            out.push_str(&value);
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
