//! A self-contained HTML page: styles inline, every plot an inline SVG, no
//! scripts and nothing fetched, so it reads the same offline, from a mail
//! attachment, or printed.

use std::fmt::Write as _;

use anyhow::Result;

use super::figure::Figure;
use super::svg;
use elevator_run::experiment::Shape;

/// One part of a page: a heading, plots, a table, checked shapes, notes.
#[derive(Debug, Default)]
pub struct Section {
    /// The anchor (`#id`) of the section.
    pub id: String,
    /// Its heading.
    pub heading: String,
    /// A paragraph under the heading.
    pub lead: String,
    /// Shapes checked, shown as a table with the verdicts.
    pub shapes: Vec<Shape>,
    /// Plots.
    pub figures: Vec<Figure>,
    /// Text as the terminal shows it (tables), shown preformatted.
    pub text: String,
    /// Remarks, one paragraph each.
    pub notes: Vec<String>,
}

/// One row of a page's summary table.
#[derive(Debug)]
pub struct SummaryRow {
    /// The section's anchor.
    pub id: String,
    /// The seed (`004`).
    pub seed: String,
    /// The shape.
    pub shape: Shape,
}

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc;padding-bottom:.2em}\
table{border-collapse:collapse;margin:1em 0;font-size:.92em}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}\
th{background:#f3f3f3}\
td.holds{color:#1a7f37;font-weight:600}td.fails{color:#c62828;font-weight:600}td.unchecked{color:#8a6d00;font-weight:600}\
pre{background:#f7f7f7;padding:.8em;overflow-x:auto;font-size:.82em;line-height:1.3}\
figure{margin:1.2em 0;break-inside:avoid}figure svg{max-width:100%;height:auto;display:block}\
figcaption{font-size:.85em;color:#555}\
@media print{body{max-width:none;margin:0}h2{break-before:page}pre{white-space:pre-wrap}}";

/// Escape text for HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The CSS class and the words of a shape's verdict.
fn verdict(shape: &Shape) -> (&'static str, &'static str) {
    match shape.verdict() {
        "holds" => ("holds", "holds"),
        "not checked" => ("unchecked", "not checked"),
        _ => ("fails", "does not hold"),
    }
}

/// The header cells of a table of shapes, and the row's end.
const SHAPE_HEADS: &str = "<th>shape</th><th>the seed's figure</th>\
     <th>elevator's figure</th><th>verdict</th></tr>\n";

/// A shape's cells (the claim, both figures, the verdict) and the row's end.
fn shape_cells(h: &mut String, shape: &Shape) {
    let (class, word) = verdict(shape);
    let _ = writeln!(
        h,
        "<td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{word}</td></tr>",
        escape(&shape.claim),
        escape(&shape.seed),
        escape(&shape.ours)
    );
}

/// The page: a title, a lead paragraph, a summary table (if any rows), then
/// the sections.
pub fn page(
    title: &str,
    lead: &str,
    summary: &[SummaryRow],
    sections: &[Section],
) -> Result<String> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<p>{}</p>\n",
        escape(title),
        escape(title),
        escape(lead)
    );
    if !summary.is_empty() {
        let held = summary.iter().filter(|r| r.shape.holds).count();
        let _ = write!(
            h,
            "<h2 id=\"summary\">Summary</h2>\n<p>{held} of {} shapes hold.</p>\n<table>\
             <tr><th>seed</th>{SHAPE_HEADS}",
            summary.len()
        );
        for r in summary {
            let _ = write!(
                h,
                "<tr><td><a href=\"#{}\">{}</a></td>",
                escape(&r.id),
                escape(&r.seed)
            );
            shape_cells(&mut h, &r.shape);
        }
        h.push_str("</table>\n");
    }
    for s in sections {
        section(&mut h, s)?;
    }
    h.push_str("</body></html>\n");
    Ok(h)
}

fn section(h: &mut String, s: &Section) -> Result<()> {
    let _ = writeln!(
        h,
        "<section id=\"{}\">\n<h2>{}</h2>",
        escape(&s.id),
        escape(&s.heading)
    );
    if !s.lead.is_empty() {
        let _ = writeln!(h, "<p>{}</p>", escape(&s.lead));
    }
    if !s.shapes.is_empty() {
        let _ = write!(h, "<table><tr>{SHAPE_HEADS}");
        for sh in &s.shapes {
            h.push_str("<tr>");
            shape_cells(h, sh);
        }
        h.push_str("</table>\n");
    }
    for n in &s.notes {
        let _ = writeln!(h, "<p>{}</p>", escape(n));
    }
    for f in &s.figures {
        let _ = writeln!(
            h,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            svg::render(f)?,
            escape(f.title())
        );
    }
    if !s.text.is_empty() {
        let _ = writeln!(h, "<pre>{}</pre>", escape(s.text.trim_end()));
    }
    h.push_str("</section>\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::figure::{Axis, Mark, Series, XyPlot};

    #[test]
    fn a_page_is_self_contained_and_escaped() {
        let shape = Shape {
            claim: "a < b".into(),
            seed: "1 vs 2".into(),
            ours: "1.1 vs 2".into(),
            holds: true,
        };
        let s = Section {
            id: "x".into(),
            heading: "Seed <x>".into(),
            shapes: vec![shape.clone()],
            figures: vec![Figure::Xy(XyPlot {
                title: "p".into(),
                x: Axis::linear("x"),
                y: Axis::linear("y"),
                mark: Mark::Lines,
                panels: false,
                series: vec![Series {
                    label: "none".into(),
                    points: vec![(0.0, 1.0), (1.0, 2.0)],
                }],
            })],
            text: "a  b\n".into(),
            ..Section::default()
        };
        let row = SummaryRow {
            id: "x".into(),
            seed: "000".into(),
            shape,
        };
        let html = page("T", "lead", &[row], &[s]).expect("page");
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("Seed &lt;x&gt;") && html.contains("a &lt; b"));
        assert!(html.contains("<svg") && html.contains("1 of 1 shapes hold"));
        assert!(
            !html.contains("<script") && !html.contains("http://")
                || html.contains("http://www.w3.org/2000/svg")
        );
    }
}
