//! Draws a [`Figure`] as an SVG document with `plotters`' SVG backend.
//!
//! Readable without a legend hunt: every series is named beside its last
//! point, in its colour, in a margin right of the plot (names pushed apart
//! so they never overlap). A scheduler keeps its colour in every plot.
//! Series are thinned to a bounded number of points so that a report stays
//! small (a head-position plot of a long run has hundreds of thousands).

use std::fmt::Display;
use std::ops::Range;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;

use super::figure::{Figure, Mark, Series, SpanKind, Timeline, XyPlot};

/// Width and height of a plot, pixels.
const SIZE: (u32, u32) = (760, 400);
/// Right margin for the series' names.
const NAMES_WIDTH: u32 = 190;
/// Points kept per series drawn as lines.
const MAX_LINE_POINTS: usize = 1500;
/// Points kept per series drawn as dots.
const MAX_DOTS: usize = 2500;

/// Colours, in order, for series that are not a known scheduler.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A scheduler's colour, the same in every plot; others by position.
fn colour(label: &str, index: usize) -> RGBColor {
    // Longest names first: "cfq (fixed)" before "cfq".
    const KNOWN: [(&str, usize); 12] = [
        ("global", 3),
        ("queue", 1),
        ("mq", 2),
        ("deadline-rbtree", 5),
        ("deadline-list", 6),
        ("mq-deadline", 2),
        ("cfq (2011)", 3),
        ("cfq (fixed)", 0),
        ("none", 7),
        ("bfq", 4),
        ("kyber", 9),
        ("cfq", 1),
    ];
    let name = label
        .split(|c: char| c.is_whitespace() || c == ',')
        .next()
        .unwrap_or("");
    KNOWN
        .iter()
        .find(|(k, _)| label.starts_with(k) && (k.contains(' ') || name == *k))
        .map_or(PALETTE[index % PALETTE.len()], |&(_, i)| PALETTE[i])
}

fn plot_err(title: &str) -> impl Fn(&dyn Display) -> anyhow::Error + '_ {
    move |e| anyhow!("drawing plot '{title}': {e}")
}

/// Draw on a white page of `size` with `title` at its top: `body` draws on
/// the area below the title.
fn titled_page(
    svg: &mut String,
    size: (u32, u32),
    title: &str,
    body: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<()>,
) -> Result<()> {
    let root = SVGBackend::with_string(svg, size).into_drawing_area();
    let err = plot_err(title);
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let area = root
        .titled(title, ("sans-serif", 18))
        .map_err(|e| err(&e))?;
    body(&area)?;
    root.present().map_err(|e| err(&e))
}

/// Draw `figure` as a complete SVG document.
pub fn render(figure: &Figure) -> Result<String> {
    let mut svg = String::new();
    match figure {
        Figure::Xy(p) if p.panels => {
            let rows = p.series.len().div_ceil(2).max(1) as u32;
            let size = (SIZE.0, 40 + rows * 280);
            titled_page(&mut svg, size, &p.title, |body| {
                let cells = body.split_evenly((rows as usize, 2));
                let (xr, yr) = ranges(p, &p.series);
                for (i, (s, cell)) in p.series.iter().zip(cells.iter()).enumerate() {
                    xy_chart(
                        cell,
                        p,
                        std::slice::from_ref(s),
                        xr.clone(),
                        yr.clone(),
                        i,
                        true,
                    )?;
                }
                Ok(())
            })?;
        }
        Figure::Xy(p) => titled_page(&mut svg, SIZE, &p.title, |body| {
            let (xr, yr) = ranges(p, &p.series);
            xy_chart(body, p, &p.series, xr, yr, 0, false)
        })?,
        Figure::Timeline(t) => {
            let rows = t.rows.len().max(1);
            let height = (90 + 26 * rows as u32).max(200);
            titled_page(&mut svg, (SIZE.0, height), &t.title, |body| {
                timeline(body, t)
            })?
        }
    }
    Ok(svg)
}

/// The points of `s` that can be drawn on `p`'s axes (finite, and > 0 on a
/// log axis), thinned to at most `max`.
fn drawable(p: &XyPlot, s: &Series) -> Vec<(f64, f64)> {
    let ok = |v: f64, log: bool| v.is_finite() && (!log || v > 0.0);
    let pts: Vec<(f64, f64)> = s
        .points
        .iter()
        .copied()
        .filter(|&(x, y)| ok(x, p.x.log) && ok(y, p.y.log))
        .collect();
    let max = if p.mark == Mark::Points {
        MAX_DOTS
    } else {
        MAX_LINE_POINTS
    };
    if pts.len() <= max {
        return pts;
    }
    // Even thinning, keeping the last point (where the name goes).
    let step = pts.len().div_ceil(max);
    let last = pts[pts.len() - 1];
    let mut out: Vec<(f64, f64)> = pts.into_iter().step_by(step).collect();
    if out.last() != Some(&last) {
        out.push(last);
    }
    out
}

/// The axes' ranges over every series, padded; a log axis spans whole
/// decades' worth around the data.
fn ranges(p: &XyPlot, series: &[Series]) -> (Range<f64>, Range<f64>) {
    let mut x = (f64::INFINITY, f64::NEG_INFINITY);
    let mut y = (f64::INFINITY, f64::NEG_INFINITY);
    for s in series {
        for (a, b) in drawable(p, s) {
            x = (x.0.min(a), x.1.max(a));
            y = (y.0.min(b), y.1.max(b));
        }
    }
    (span(x, p.x.log, false), span(y, p.y.log, true))
}

fn span((lo, hi): (f64, f64), log: bool, from_zero: bool) -> Range<f64> {
    if !lo.is_finite() || !hi.is_finite() {
        return if log { 1.0..10.0 } else { 0.0..1.0 };
    }
    if log {
        let lo = 10f64.powf(lo.log10().floor());
        let hi = 10f64.powf(hi.log10().ceil());
        if hi > lo { lo..hi } else { lo..lo * 10.0 }
    } else {
        let lo = if from_zero && lo >= 0.0 { 0.0 } else { lo };
        let pad = ((hi - lo) * 0.05).max(f64::EPSILON.max(hi.abs() * 1e-9));
        let lo = if from_zero && lo == 0.0 {
            0.0
        } else {
            lo - pad
        };
        lo..hi + pad
    }
}

/// One chart of `series` on `area`, with the axes `p` says.
fn xy_chart(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    p: &XyPlot,
    series: &[Series],
    xr: Range<f64>,
    yr: Range<f64>,
    first: usize,
    panel: bool,
) -> Result<()> {
    match (p.x.log, p.y.log) {
        (false, false) => xy_on(area, p, series, xr, yr, first, panel),
        (true, false) => xy_on(area, p, series, xr.log_scale(), yr, first, panel),
        (false, true) => xy_on(area, p, series, xr, yr.log_scale(), first, panel),
        (true, true) => xy_on(
            area,
            p,
            series,
            xr.log_scale(),
            yr.log_scale(),
            first,
            panel,
        ),
    }
}

fn xy_on<XS, YS>(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    p: &XyPlot,
    series: &[Series],
    xs: XS,
    ys: YS,
    first: usize,
    panel: bool,
) -> Result<()>
where
    XS: AsRangedCoord<Value = f64>,
    YS: AsRangedCoord<Value = f64>,
    XS::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    YS::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let err = plot_err(&p.title);
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(8)
        .x_label_area_size(38)
        .y_label_area_size(62);
    if panel {
        let name = series.first().map_or("", |s| s.label.as_str());
        builder.caption(name, ("sans-serif", 14));
    } else {
        builder.margin_right(NAMES_WIDTH);
    }
    let mut chart = builder.build_cartesian_2d(xs, ys).map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(p.x.label.as_str())
        .y_desc(p.y.label.as_str())
        .x_label_formatter(&|v| number(*v))
        .y_label_formatter(&|v| number(*v))
        .label_style(("sans-serif", 12))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|e| err(&e))?;
    let mut ends = Vec::new();
    let mut used: Vec<RGBColor> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let c = colour(&s.label, first + i);
        // A colour met again (the same scheduler or lock in another
        // setting) is drawn dashed.
        let dashed = used.contains(&c);
        used.push(c);
        let pts = drawable(p, s);
        match p.mark {
            Mark::Points => {
                chart
                    .draw_series(pts.iter().map(|&pt| Circle::new(pt, 1, c.filled())))
                    .map_err(|e| err(&e))?;
            }
            Mark::Lines | Mark::LinesPoints if dashed => {
                chart
                    .draw_series(DashedLineSeries::new(
                        pts.iter().copied(),
                        6,
                        4,
                        c.stroke_width(2),
                    ))
                    .map_err(|e| err(&e))?;
                if p.mark == Mark::LinesPoints {
                    chart
                        .draw_series(pts.iter().map(|&pt| Circle::new(pt, 3, c.stroke_width(1))))
                        .map_err(|e| err(&e))?;
                }
            }
            Mark::Lines | Mark::LinesPoints => {
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                    .map_err(|e| err(&e))?;
                if p.mark == Mark::LinesPoints {
                    chart
                        .draw_series(pts.iter().map(|&pt| Circle::new(pt, 3, c.filled())))
                        .map_err(|e| err(&e))?;
                }
            }
        }
        if let Some(&last) = pts.last() {
            ends.push((chart.backend_coord(&last), s.label.clone(), c));
        }
    }
    if !panel {
        name_ends(area, &mut ends, p)?;
    }
    Ok(())
}

/// Write each series' name right of the plot at the height of its last
/// point, pushed apart to at least a line's height.
fn name_ends(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    ends: &mut [((i32, i32), String, RGBColor)],
    p: &XyPlot,
) -> Result<()> {
    const LINE: i32 = 14;
    let err = plot_err(&p.title);
    // Chart coordinates are the document's; drawing on `area` is relative
    // to its corner.
    let (bx, by) = area.get_base_pixel();
    for ((x, y), _, _) in ends.iter_mut() {
        *x -= bx;
        *y -= by;
    }
    ends.sort_by_key(|((_, y), _, _)| *y);
    let (w, h) = area.dim_in_pixel();
    let x = w as i32 - NAMES_WIDTH as i32 + 14;
    let mut next = 0;
    let mut ys: Vec<i32> = Vec::with_capacity(ends.len());
    for ((_, y), _, _) in ends.iter() {
        let y = (*y).max(next);
        ys.push(y);
        next = y + LINE;
    }
    // Pushed off the bottom: pull back up.
    let mut limit = h as i32 - LINE;
    for y in ys.iter_mut().rev() {
        if *y > limit {
            *y = limit;
        }
        limit = *y - LINE;
    }
    for (((px, py), label, c), y) in ends.iter().zip(ys) {
        let style = ("sans-serif", 12).into_font().color(c);
        area.draw(&PathElement::new(
            vec![(*px + 4, *py), (x - 4, y)],
            c.mix(0.35),
        ))
        .map_err(|e| err(&e))?;
        area.draw(&Text::new(label.clone(), (x, y - 6), style))
            .map_err(|e| err(&e))?;
    }
    Ok(())
}

/// A number for an axis label: no trailing zeros, thousands as k/M.
fn number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let a = v.abs();
    let s = if a == 0.0 || a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A timeline: one row per name, served spans in the row's colour, idle
/// spans hatched grey with a red edge.
fn timeline(body: &DrawingArea<SVGBackend<'_>, Shift>, t: &Timeline) -> Result<()> {
    let err = plot_err(&t.title);
    let rows = t.rows.len().max(1);
    let (lo, hi) = t
        .spans
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), s| {
            (a.min(s.start), b.max(s.end))
        });
    let xr = span((lo, hi), false, false);
    let xr_lo = xr.start;
    let mut chart = ChartBuilder::on(body)
        .margin(8)
        .margin_right(24)
        .x_label_area_size(38)
        .y_label_area_size(110)
        .build_cartesian_2d(xr, 0f64..rows as f64)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(t.x_label.as_str())
        .x_label_formatter(&|v| number(*v))
        .label_style(("sans-serif", 12))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|e| err(&e))?;
    // Row r is drawn top to bottom: y from rows - r - 1 to rows - r.
    let band = |r: usize| (rows - r - 1) as f64;
    let idle = RGBColor(200, 200, 200);
    chart
        .draw_series(t.spans.iter().map(|s| {
            let y0 = band(s.row) + 0.15;
            let y1 = band(s.row) + 0.85;
            let style = match s.kind {
                SpanKind::Served => colour(&t.rows[s.row.min(rows - 1)], s.row).filled(),
                SpanKind::Idle => idle.filled(),
            };
            Rectangle::new([(s.start, y0), (s.end.max(s.start), y1)], style)
        }))
        .map_err(|e| err(&e))?;
    chart
        .draw_series(
            t.spans
                .iter()
                .filter(|s| s.kind == SpanKind::Idle)
                .map(|s| {
                    let y = band(s.row) + 0.15;
                    Rectangle::new(
                        [(s.start, y), (s.end.max(s.start), y + 0.1)],
                        RGBColor(214, 39, 40).filled(),
                    )
                }),
        )
        .map_err(|e| err(&e))?;
    let (_, base_y) = body.get_base_pixel();
    for (r, name) in t.rows.iter().enumerate() {
        let (_, y) = chart.backend_coord(&(xr_lo, band(r) + 0.5));
        let y = y - base_y;
        let x = 8;
        body.draw(&Text::new(
            name.clone(),
            (x, y - 6),
            ("sans-serif", 12).into_font(),
        ))
        .map_err(|e| err(&e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::figure::{Axis, Span};

    fn plot(mark: Mark, log: bool, panels: bool) -> Figure {
        Figure::Xy(XyPlot {
            title: "t <&>".into(),
            x: if log {
                Axis::log("x")
            } else {
                Axis::linear("x")
            },
            y: Axis::linear("y"),
            mark,
            panels,
            series: vec![
                Series {
                    label: "cfq (2011)".into(),
                    points: (1..5000).map(|i| (i as f64, (i % 7) as f64)).collect(),
                },
                Series {
                    label: "none".into(),
                    points: vec![(0.0, 1.0), (2.0, 3.0)],
                },
                Series {
                    label: "empty".into(),
                    points: vec![],
                },
            ],
        })
    }

    #[test]
    fn every_kind_draws_an_svg_with_its_names() {
        for f in [
            plot(Mark::Lines, true, false),
            plot(Mark::LinesPoints, false, false),
            plot(Mark::Points, false, true),
        ] {
            let svg = render(&f).expect("render");
            assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
            assert!(svg.contains("cfq (2011)"));
            assert!(svg.contains("&lt;&amp;&gt;") || svg.contains("t &lt;"));
        }
        let t = Figure::Timeline(Timeline {
            title: "slices".into(),
            x_label: "time (ms)".into(),
            rows: vec!["p1".into(), "p2".into()],
            spans: vec![
                Span {
                    row: 0,
                    start: 0.0,
                    end: 3.0,
                    kind: SpanKind::Served,
                },
                Span {
                    row: 0,
                    start: 3.0,
                    end: 4.0,
                    kind: SpanKind::Idle,
                },
                Span {
                    row: 1,
                    start: 4.0,
                    end: 9.0,
                    kind: SpanKind::Served,
                },
            ],
        });
        let svg = render(&t).expect("timeline");
        assert!(svg.contains("<rect") && svg.contains("p2"));
    }

    #[test]
    fn thinning_bounds_points_and_keeps_the_last() {
        let Figure::Xy(p) = plot(Mark::Lines, false, false) else {
            unreachable!()
        };
        let pts = drawable(&p, &p.series[0]);
        assert!(pts.len() <= MAX_LINE_POINTS + 1);
        assert_eq!(pts.last(), p.series[0].points.last());
        assert_eq!(number(12_500.0), "12.5k");
        assert_eq!(number(0.25), "0.25");
    }

    #[test]
    fn empty_plots_still_draw() {
        let f = Figure::Xy(XyPlot {
            title: "nothing".into(),
            x: Axis::log("x"),
            y: Axis::log("y"),
            mark: Mark::Lines,
            panels: false,
            series: vec![],
        });
        assert!(render(&f).expect("render").contains("nothing"));
    }
}
