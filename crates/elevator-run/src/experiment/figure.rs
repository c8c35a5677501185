//! The data of a plot, apart from how it is drawn: an x-y plot of named
//! series (lines or points, either axis linear or logarithmic), or a
//! timeline of spans in rows. Experiments and `run`/`compare --report` build
//! [`Figure`]s; the `elevator` command draws them as SVG.

use serde::Serialize;

/// One plot.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Figure {
    /// Series of (x, y) points.
    Xy(XyPlot),
    /// Spans of time in named rows.
    Timeline(Timeline),
}

impl Figure {
    /// The plot's title.
    pub fn title(&self) -> &str {
        match self {
            Figure::Xy(p) => &p.title,
            Figure::Timeline(t) => &t.title,
        }
    }
}

/// How an x-y plot's series are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// Points joined by lines.
    Lines,
    /// Points joined by lines, each point marked (few points).
    LinesPoints,
    /// Dots, not joined (many points: a head's position over time).
    Points,
}

/// An axis: its label (with the unit) and whether it is logarithmic.
#[derive(Clone, Debug, Serialize)]
pub struct Axis {
    /// What the axis shows, with the unit: "completion latency (ms)".
    pub label: String,
    /// Logarithmic scale (every value must then be > 0; others are left out).
    pub log: bool,
}

impl Axis {
    /// A linear axis.
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            log: false,
        }
    }

    /// A logarithmic axis.
    pub fn log(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            log: true,
        }
    }
}

/// A named series of points.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// Its name, written beside it in the plot.
    pub label: String,
    /// The points, in the order they are joined.
    pub points: Vec<(f64, f64)>,
}

/// An x-y plot. Several series share the axes; with `panels`, each series
/// gets its own small plot with the same axes instead (head positions per
/// scheduler, where overlaid dots would hide each other).
#[derive(Clone, Debug, Serialize)]
pub struct XyPlot {
    /// The title.
    pub title: String,
    /// The x axis.
    pub x: Axis,
    /// The y axis.
    pub y: Axis,
    /// How points are drawn.
    pub mark: Mark,
    /// One small plot per series rather than all on one.
    pub panels: bool,
    /// The series.
    pub series: Vec<Series>,
}

/// What a span of a timeline is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// The row's owner was being served (a CFQ slice: its requests went to
    /// the device).
    Served,
    /// The device was idle, waiting for the row's owner (idling), while
    /// other requests were queued.
    Idle,
}

/// One span of a timeline.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Span {
    /// Index into [`Timeline::rows`].
    pub row: usize,
    /// Start, in the x axis's unit.
    pub start: f64,
    /// End (≥ start).
    pub end: f64,
    /// Served or idle.
    pub kind: SpanKind,
}

/// A timeline: rows (processes), and spans of time in them.
#[derive(Clone, Debug, Serialize)]
pub struct Timeline {
    /// The title.
    pub title: String,
    /// The x axis (time, with the unit).
    pub x_label: String,
    /// The rows' names, top to bottom.
    pub rows: Vec<String>,
    /// The spans.
    pub spans: Vec<Span>,
}
