//! `elevator devices`: every kind of device a `--device` spec names (the
//! simulated presets with their parameters, `recorded`, `file:PATH`,
//! `mem:SIZE`) and the fault options of both engines, each listed from
//! the parser's own table, so that the listing says what is taken.

use std::sync::Arc;

use anyhow::Result;
use elevator_io::fault::FAULT_OPTIONS;
use elevator_io::spec::{FILE_OPTIONS, MEM_OPTIONS};
use elevator_sim::device::fault::FAULT_PARAMS;
use elevator_sim::device::{Model, ModelSpec, ParamValue, RecordedParams, presets};
use elevator_trace::analyze::service_times::ServiceTimes;

/// The width the listing keeps to.
const WIDTH: usize = 100;
/// Where a row's meaning starts: 4 spaces, a 20-wide name, a 16-wide
/// default, a space between each.
const MEANING_AT: usize = 42;

/// `text`, wrapped at [`WIDTH`] columns, continued lines indented by
/// `indent` spaces, the first starting at column `first`.
fn wrapped(text: &str, first: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut column = first;
    let mut line_empty = true;
    for word in text.split_whitespace() {
        if !line_empty && column + 1 + word.len() > WIDTH {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            column = indent;
            line_empty = true;
        }
        if !line_empty {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += word.len();
        line_empty = false;
    }
    out
}

/// A heading paragraph: `text` wrapped at [`WIDTH`], from column 0.
fn paragraph(text: &str) {
    println!("{}", wrapped(text, 0, 0));
}

/// One option or parameter: name, default, meaning (wrapped under itself).
fn row(name: &str, default: &str, meaning: &str) {
    let head = format!("    {name:<20} {default:<16} ");
    let at = head.chars().count().max(MEANING_AT);
    println!("{head}{}", wrapped(meaning, at, MEANING_AT));
}

/// A model parameter's row, its value in its unit as the default.
fn param_row(p: &ParamValue, default: Option<&str>) {
    let value = if p.value.fract() == 0.0 && p.value.abs() < 1e15 {
        format!("{}", p.value as i64)
    } else {
        format!("{:.3}", p.value)
    };
    let shown = format!("{value} {}", p.unit.name());
    let meaning = match (p.name, p.help) {
        // A capacity's bare byte count is hard to read: say it in GB and
        // GiB too.
        ("capacity", help) if default.is_none() && p.value >= 1e9 => {
            let help = if help == "size" {
                "the device's size"
            } else {
                help
            };
            format!("{help} ({})", gigabytes(p.value))
        }
        (_, help) => help.to_string(),
    };
    row(p.name, default.unwrap_or(shown.trim_end()), &meaning);
}

/// `bytes` in decimal and binary gigabytes (`1099.5 GB, 1024 GiB`), one
/// decimal, a `.0` dropped.
fn gigabytes(bytes: f64) -> String {
    let one = |v: f64| {
        let text = format!("{v:.1}");
        text.strip_suffix(".0").map_or(text.clone(), str::to_string)
    };
    format!(
        "{} GB, {} GiB",
        one(bytes / 1e9),
        one(bytes / f64::from(1u32 << 30))
    )
}

/// Print every kind of device, its options and the fault options.
pub fn devices() -> Result<()> {
    paragraph(
        "--device SPEC names a simulated model (a preset, with overrides) or a real device \
         (file:PATH, mem:SIZE). Options follow the name, comma-separated: \
         hdd-7200,rpm=5400,ncq=1 or mem:1g,queue_depth=8. Each row: option, default, meaning.",
    );
    println!();
    paragraph("Simulated presets, on the virtual clock:");
    println!();
    for (name, what) in presets() {
        let spec = ModelSpec::preset(name)?;
        paragraph(&format!("{name}: {what}"));
        if let Model::Raid0(p) = &spec.kind {
            row("member", &p.member, "members' preset");
        }
        for p in spec.params() {
            param_row(&p, None);
        }
        println!();
    }
    paragraph(
        "recorded: replay's device, its default for a trace with completions (elevator \
         replay --device recorded): each request takes the time the recording's device took \
         for it (the trace's D2C); replay only",
    );
    let recorded = RecordedParams::new(Arc::new(ServiceTimes::default()));
    for p in recorded.list() {
        let default = (p.name == "queue_depth").then_some("recording's");
        param_row(&p, default);
    }
    println!();
    paragraph(
        "Faults, on any model (power_cut_at: models with a write cache: hdd, ssd, a raid0 of \
         them):",
    );
    for (name, default, what) in FAULT_PARAMS {
        row(name, default, what);
    }
    println!();
    paragraph("Real devices, through io_uring on the real clock:");
    println!();
    paragraph(
        "file:PATH: a regular file or a block device (file:/dev/sdX), opened with O_DIRECT; a \
         file must exist with a size (truncate -s 1G PATH) on a file system that takes \
         O_DIRECT; a block device needs read and write permission (root or the disk group; \
         ro to only read), and a job that writes overwrites what it holds; PATH has no commas",
    );
    for (name, default, what) in FILE_OPTIONS {
        row(name, default, what);
    }
    println!();
    paragraph(
        "mem:SIZE: memory, e.g. mem:1g (SIZE a whole number of blocks); costs only the pages \
         written",
    );
    for (name, default, what) in MEM_OPTIONS {
        row(name, default, what);
    }
    println!();
    paragraph("Faults, on file: and mem: (e.g. mem:1g,fail_rate=0.01):");
    for (name, default, what) in FAULT_OPTIONS {
        row(name, default, what);
    }
    Ok(())
}
