//! What a run's plots need, gathered from its trace as it runs: a
//! [`TraceSink`] that keeps no events, only each submitter's bytes
//! completed per interval (throughput over time) and, within a window, who
//! the device was serving and when it sat idle with requests waiting (the
//! slices and idle periods of CFQ and BFQ). Memory is bounded: one counter
//! per submitter and interval, and at most [`MAX_SPANS`] spans.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use elevator_core::Histogram;
use elevator_core::TraceAction;
use elevator_trace::record::Record;
use elevator_trace::sink::TraceSink;

use crate::experiment::figure::{Axis, Figure, Mark, Series, Span, SpanKind, Timeline, XyPlot};

/// Spans kept for the timeline.
pub const MAX_SPANS: usize = 4000;
/// Intervals kept per submitter for throughput over time: past this, two
/// neighbours become one and the interval doubles.
const MAX_BUCKETS: usize = 400;

/// The run's shape, gathered from its trace events.
#[derive(Debug)]
pub struct PlotRecorder {
    bucket_ns: u64,
    /// Timeline windows: spans are kept in each; the last one that holds
    /// any is drawn (a later window, unless the run ended before it).
    windows: Vec<(u64, u64)>,
    names: BTreeMap<u32, String>,
    bytes: BTreeMap<u32, Vec<u64>>,
    in_flight: u64,
    queued: u64,
    /// The submitter being served: (pid, since).
    serving: Option<(u32, u64)>,
    /// Idle with requests waiting since, and for whom.
    idle: Option<(u32, u64)>,
    /// (window, pid, start, end, kind).
    spans: Vec<(usize, u32, u64, u64, SpanKind)>,
    end: u64,
    /// Where a disk model's heads went: (ns, cylinder), from the device
    /// rather than the trace ([`PlotRecorder::set_heads`]).
    heads: Vec<(u64, u32)>,
}

/// Head samples a reported run keeps.
pub const MAX_HEADS: usize = 200_000;

impl PlotRecorder {
    /// Throughput in intervals of `bucket_ns` (doubled as often as needed to
    /// keep at most 400 of them); the timeline over `[from, to)` ns of the
    /// run, or, with several windows, over the last one the run reached.
    pub fn new(bucket_ns: u64, windows: &[(u64, u64)]) -> PlotRecorder {
        PlotRecorder {
            bucket_ns: bucket_ns.max(1),
            windows: windows.to_vec(),
            names: BTreeMap::new(),
            bytes: BTreeMap::new(),
            in_flight: 0,
            queued: 0,
            serving: None,
            idle: None,
            spans: Vec::new(),
            end: 0,
            heads: Vec::new(),
        }
    }

    /// The disk heads' positions over the run: (ns, cylinder) in time order.
    pub fn set_heads(&mut self, heads: impl IntoIterator<Item = (u64, u32)>) {
        self.heads = heads.into_iter().collect();
    }

    /// Whether the run recorded where a disk's heads went.
    pub fn has_heads(&self) -> bool {
        !self.heads.is_empty()
    }

    /// The heads' cylinder over one second of the run (1-2 s in, or the
    /// first second of a shorter run), in seconds, named `label`.
    pub fn heads(&self, label: &str) -> Series {
        let late = self.heads.iter().any(|&(t, _)| t >= 1_000_000_000);
        let from = if late { 1_000_000_000 } else { 0 };
        Series {
            label: label.to_string(),
            points: self
                .heads
                .iter()
                .filter(|&&(t, _)| t >= from && t < from + 1_000_000_000)
                .map(|&(t, c)| (t as f64 / 1e9, f64::from(c)))
                .collect(),
        }
    }

    fn in_window(&self, t: u64) -> bool {
        self.windows.iter().any(|&(a, b)| t >= a && t < b)
    }

    fn push_span(&mut self, pid: u32, start: u64, end: u64, kind: SpanKind) {
        for (i, &(w0, w1)) in self.windows.iter().enumerate() {
            if end >= w0 && start < w1 && self.spans.len() < MAX_SPANS {
                self.spans.push((i, pid, start.max(w0), end.min(w1), kind));
            }
        }
    }

    /// Add `bytes` completed by `pid` at `t`.
    fn add_bytes(&mut self, pid: u32, t: u64, bytes: u64) {
        let mut i = (t / self.bucket_ns) as usize;
        while i >= MAX_BUCKETS {
            self.bucket_ns *= 2;
            for v in self.bytes.values_mut() {
                let halved: Vec<u64> = v.chunks(2).map(|c| c.iter().sum()).collect();
                *v = halved;
            }
            i = (t / self.bucket_ns) as usize;
        }
        let v = self.bytes.entry(pid).or_default();
        if v.len() <= i {
            v.resize(i + 1, 0);
        }
        v[i] += bytes;
    }

    fn event(&mut self, r: &Record) {
        let e = &r.event;
        let t = e.time;
        let pid = r.pid();
        self.end = self.end.max(t);
        match e.action {
            TraceAction::Insert => self.queued += 1,
            TraceAction::Issue => {
                self.queued = self.queued.saturating_sub(1);
                self.in_flight += 1;
                if let Some((who, since)) = self.idle.take() {
                    self.push_span(who, since, t, SpanKind::Idle);
                }
                // A submitter is served from its first dispatch until
                // another's (or until the device idles for it).
                match self.serving {
                    Some((p, _)) if p == pid => {}
                    other => {
                        if let Some((p, start)) = other {
                            self.push_span(p, start, t, SpanKind::Served);
                        }
                        self.serving = Some((pid, t));
                    }
                }
            }
            TraceAction::Requeue => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.queued += 1;
            }
            TraceAction::Complete => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.add_bytes(pid, t, u64::from(e.bytes));
                if self.in_flight == 0 && self.queued > 0 && self.in_window(t) {
                    let who = match self.serving.take() {
                        Some((p, start)) => {
                            self.push_span(p, start, t, SpanKind::Served);
                            p
                        }
                        None => pid,
                    };
                    self.idle = Some((who, t));
                }
            }
            _ => {}
        }
    }

    fn name(&self, pid: u32) -> String {
        self.names
            .get(&pid)
            .map_or_else(|| format!("pid {pid}"), |n| format!("{n} ({pid})"))
    }

    /// Throughput over time, one series per submitter, MB/s (10^6 bytes).
    pub fn throughput(&self, title: &str) -> Figure {
        let secs = self.bucket_ns as f64 / 1e9;
        let series = self
            .bytes
            .iter()
            .map(|(&pid, v)| Series {
                label: self.name(pid),
                points: v
                    .iter()
                    .enumerate()
                    .map(|(i, &b)| ((i as f64 + 0.5) * secs, b as f64 / secs / 1e6))
                    .collect(),
            })
            .collect();
        Figure::Xy(XyPlot {
            title: title.to_string(),
            x: Axis::linear("time (s)"),
            y: Axis::linear("MB/s"),
            mark: Mark::Lines,
            panels: false,
            series,
        })
    }

    /// Throughput over time of every submitter together, MB/s, as a series
    /// named `label`.
    pub fn total(&self, label: &str) -> Series {
        let secs = self.bucket_ns as f64 / 1e9;
        let n = self.bytes.values().map(Vec::len).max().unwrap_or(0);
        let points = (0..n)
            .map(|i| {
                let b: u64 = self.bytes.values().filter_map(|v| v.get(i)).sum();
                ((i as f64 + 0.5) * secs, b as f64 / secs / 1e6)
            })
            .collect();
        Series {
            label: label.to_string(),
            points,
        }
    }

    /// Who the device served, and when it idled with requests waiting,
    /// over the window; times in seconds.
    pub fn timeline(&self, title: &str) -> Figure {
        let mut all = self.spans.clone();
        if let Some((p, start)) = self.serving {
            let last = self.end;
            for (i, &(w0, w1)) in self.windows.iter().enumerate() {
                if last >= w0 && start < w1 {
                    all.push((i, p, start.max(w0), last.min(w1), SpanKind::Served));
                }
            }
        }
        let shown = all.iter().map(|s| s.0).max();
        let mut spans: Vec<(u32, u64, u64, SpanKind)> = all
            .iter()
            .filter(|s| Some(s.0) == shown)
            .map(|s| (s.1, s.2, s.3, s.4))
            .collect();
        spans.sort_by_key(|s| s.1);
        let pids: Vec<u32> = {
            let mut p: Vec<u32> = spans.iter().map(|s| s.0).collect();
            p.sort_unstable();
            p.dedup();
            p
        };
        let row = |pid: u32| pids.binary_search(&pid).unwrap_or(0);
        Figure::Timeline(Timeline {
            title: title.to_string(),
            x_label: "time (s)".into(),
            rows: pids.iter().map(|&p| self.name(p)).collect(),
            spans: spans
                .iter()
                .map(|&(pid, s, e, kind)| Span {
                    row: row(pid),
                    start: s as f64 / 1e9,
                    end: e as f64 / 1e9,
                    kind,
                })
                .collect(),
        })
    }
}

/// An [`PlotRecorder`] shared with the threads of a run on real devices.
#[derive(Clone, Debug)]
pub struct SharedObserver(pub Arc<Mutex<PlotRecorder>>);

impl SharedObserver {
    /// A new observer ([`PlotRecorder::new`]), shared.
    pub fn new(bucket_ns: u64, windows: &[(u64, u64)]) -> SharedObserver {
        SharedObserver(Arc::new(Mutex::new(PlotRecorder::new(bucket_ns, windows))))
    }

    /// Use the observer.
    pub fn with<T>(&self, f: impl FnOnce(&mut PlotRecorder) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl TraceSink for SharedObserver {
    fn record(&mut self, record: &Record) -> std::io::Result<()> {
        self.with(|o| o.event(record));
        Ok(())
    }

    fn record_batch(&mut self, records: &[Record]) -> std::io::Result<()> {
        self.with(|o| records.iter().for_each(|r| o.event(r)));
        Ok(())
    }

    fn process(&mut self, pid: u32, name: &str, time: u64) -> std::io::Result<()> {
        self.with(|o| o.process(pid, name, time))
    }

    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl TraceSink for PlotRecorder {
    fn record(&mut self, record: &Record) -> std::io::Result<()> {
        self.event(record);
        Ok(())
    }

    fn process(&mut self, pid: u32, name: &str, _time: u64) -> std::io::Result<()> {
        self.names.insert(pid, name.to_string());
        Ok(())
    }

    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A latency distribution as a CDF series: x in ms, y the fraction of I/Os
/// done within x.
pub fn latency_cdf(label: &str, h: &Histogram) -> Series {
    let total = h.count().max(1) as f64;
    let mut seen = 0u64;
    let points = h
        .bins()
        .map(|(v, c)| {
            seen += c;
            (v as f64 / 1e6, seen as f64 / total)
        })
        .collect();
    Series {
        label: label.to_string(),
        points,
    }
}

/// Where the heads went, one panel per series (cylinder against seconds).
pub fn heads_plot(title: &str, series: Vec<Series>) -> Figure {
    Figure::Xy(XyPlot {
        title: title.to_string(),
        x: Axis::linear("time (s)"),
        y: Axis::linear("cylinder"),
        mark: Mark::Lines,
        panels: true,
        series,
    })
}

/// Completion latency CDFs, one series each, on a log time axis.
pub fn latency_plot(title: &str, series: Vec<Series>) -> Figure {
    Figure::Xy(XyPlot {
        title: title.to_string(),
        x: Axis::log("completion latency (ms)"),
        y: Axis::linear("fraction of I/Os done"),
        mark: Mark::Lines,
        panels: false,
        series,
    })
}

/// A run's taps feed the shared observer; a disk model's heads are kept.
impl crate::taps::Observer for SharedObserver {
    fn sink(&self) -> Box<dyn TraceSink + Send> {
        Box::new(self.clone())
    }

    fn max_heads(&self) -> usize {
        MAX_HEADS
    }

    fn set_heads(&self, heads: &mut dyn Iterator<Item = (u64, u32)>) {
        self.with(|o| o.set_heads(heads));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{BioFlags, IoContext, Op, TraceEvent};

    fn rec(action: TraceAction, time: u64, pid: u32) -> Record {
        let event = TraceEvent {
            time,
            action,
            op: Op::Write,
            flags: BioFlags::NONE,
            sector: 0,
            bytes: 4096,
            ctx: IoContext(pid),
            error: 0,
            extra: 0,
        };
        Record::new(event, pid, 0)
    }

    #[test]
    fn spans_and_idle_come_from_issues_and_completions() {
        let mut o = PlotRecorder::new(1_000_000, &[(0, u64::MAX)]);
        o.process(1, "a", 0).ok();
        for r in [
            rec(TraceAction::Insert, 0, 1),
            rec(TraceAction::Insert, 0, 2),
            rec(TraceAction::Issue, 10, 1),
            rec(TraceAction::Complete, 20, 1),
            // Idle 20..50 with pid 2's request waiting.
            rec(TraceAction::Issue, 50, 2),
            rec(TraceAction::Complete, 60, 2),
        ] {
            o.record(&r).ok();
        }
        let Figure::Timeline(t) = o.timeline("t") else {
            unreachable!()
        };
        assert_eq!(t.rows, vec!["a (1)".to_string(), "pid 2".to_string()]);
        let kinds: Vec<_> = t.spans.iter().map(|s| (s.row, s.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (0, SpanKind::Served),
                (0, SpanKind::Idle),
                (1, SpanKind::Served)
            ]
        );
        let Figure::Xy(p) = o.throughput("x") else {
            unreachable!()
        };
        assert_eq!(p.series.len(), 2);
        assert!((p.series[0].points[0].1 - 4096.0 / 1e-3 / 1e6).abs() < 1e-9);
    }

    #[test]
    fn a_cdf_ends_at_one() {
        let mut h = Histogram::new();
        for v in [1_000u64, 2_000_000, 30_000_000] {
            h.record(v);
        }
        let s = latency_cdf("x", &h);
        assert_eq!(s.points.len(), 3);
        assert!((s.points[2].1 - 1.0).abs() < 1e-12);
    }
}
