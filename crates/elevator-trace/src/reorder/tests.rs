//! Tests of the reorder window: order, refusals, bounds, the flag's text.

use super::*;
use crate::record::Record;
use elevator_core::{IoContext, TraceAction, TraceEvent};

fn rec(time: u64, pid: u32) -> Item {
    Item::Record(Record::new(
        TraceEvent::plug(TraceAction::Plug, time, IoContext(pid), 0),
        0,
        0,
    ))
}

fn times(items: &[Item]) -> Vec<u64> {
    items.iter().map(time_of).collect()
}

/// Push `input` (time, pid) lines through a buffer of `window` ns: the
/// items out, or the first refusal.
fn run(window: u64, input: &[(u64, u32)]) -> Result<(Vec<Item>, ReorderStats), OutsideWindow> {
    let mut r = Reorder::new(ReorderWindow::from_ns(window));
    let mut out = Vec::new();
    for (i, &(t, pid)) in input.iter().enumerate() {
        r.check(t, i as u64 + 1).map_err(|e| *e)?;
        r.push(i as u64 + 1, rec(t, pid));
        while let Some(item) = r.pop_ready() {
            out.push(item);
        }
    }
    while let Some(item) = r.pop_any() {
        out.push(item);
    }
    Ok((out, r.stats()))
}

#[test]
fn an_item_held_takes_64_bytes_at_most() {
    assert!(std::mem::size_of::<Held>() <= 64);
}

#[test]
fn in_order_input_passes_unchanged() {
    let input: Vec<(u64, u32)> = (0..100).map(|i| (i * 10, 1)).collect();
    let (out, stats) = run(50, &input).expect("in order");
    assert_eq!(times(&out), (0..100).map(|i| i * 10).collect::<Vec<_>>());
    assert_eq!(stats, ReorderStats::default());
}

#[test]
fn inversions_within_the_window_are_sorted_stably_and_counted() {
    let input = [
        (10, 1),
        (30, 2),
        (20, 3),
        (20, 4),
        (40, 5),
        (15, 6),
        (50, 7),
    ];
    let (out, stats) = run(30, &input).expect("within the window");
    let order: Vec<u32> = out
        .iter()
        .map(|i| match i {
            Item::Record(r) => r.pid(),
            Item::Process { pid, .. } => *pid,
        })
        .collect();
    assert_eq!(order, [1, 6, 3, 4, 2, 5, 7]);
    assert_eq!(
        stats,
        ReorderStats {
            records: 3,
            largest_inversion_ns: 25
        }
    );
}

#[test]
fn an_inversion_past_the_window_names_both_lines() {
    let e = run(30, &[(10, 1), (50, 1), (19, 1)]).expect_err("outside");
    assert_eq!((e.line, e.earlier_line, e.left_full_buffer), (3, 2, None));
    assert_eq!(
        time_order_text(19, 50, Some(&e)),
        "out of time order: line 3 at 0.000000019 s is 0.031 µs before line 2 at \
         0.000000050 s, outside --reorder-window 30ns (widen it, or --skip-bad to leave \
         such lines out)"
    );
    // Exactly the window back is inside it.
    assert!(run(30, &[(10, 1), (50, 1), (20, 1)]).is_ok());
    // Strict: any step back.
    let e = run(0, &[(10, 1), (10, 1), (9, 1)]).expect_err("strict");
    assert_eq!((e.line, e.earlier_line), (3, 2));
}

#[test]
fn a_full_buffer_lets_its_oldest_go_and_refuses_what_falls_behind_them() {
    let n = MAX_HELD as u64 + 10;
    let mut r = Reorder::new(ReorderWindow::DEFAULT);
    let mut out = 0u64;
    for t in 0..n {
        r.push(t + 1, rec(t + 100, 1));
        while r.pop_ready().is_some() {
            out += 1;
        }
    }
    assert_eq!(r.held.len(), MAX_HELD - 1);
    assert_eq!(out, n - (MAX_HELD as u64 - 1));
    // Lines 1 to 11 (times 100 to 110) have left early: an item
    // earlier than the last of them is refused.
    let e = r.check(105, n + 1).expect_err("behind what left");
    assert_eq!(e.left_full_buffer, Some(MAX_HELD));
    assert_eq!(e.earlier_line, 11);
    assert_eq!(r.refused_against(&e), 110);
    assert_eq!(
        time_order_text(105, 110, Some(&e)),
        format!(
            "out of time order: line {} at 0.000000105 s is 0.005 µs before line 11 at \
             0.000000110 s, which had left the reorder buffer: it holds at most {MAX_HELD} \
             records, fewer than --reorder-window 1s spans here (--skip-bad leaves such \
             lines out)",
            n + 1
        )
    );
    assert!(r.check(200, n + 1).is_ok());
}

#[test]
fn a_name_given_later_goes_before_the_record_moved_ahead_of_it() {
    let mut r = Reorder::new(ReorderWindow::DEFAULT);
    r.push(
        1,
        Item::Process {
            pid: 7,
            name: "a".into(),
            time: 50,
        },
    );
    r.push(1, rec(50, 7));
    r.push(2, rec(40, 7));
    let out: Vec<Item> = std::iter::from_fn(|| r.pop_any()).collect();
    assert!(matches!(
        out[0],
        Item::Process {
            pid: 7,
            time: 40,
            ..
        }
    ));
    assert_eq!(times(&out), [40, 40, 50]);
}

proptest::proptest! {
    /// Any times through any window: what is no more than the window
    /// earlier than the newest before it comes out stably sorted, the
    /// rest is refused, and the count and largest inversion are those
    /// of the items taken that were earlier than the newest.
    #[test]
    fn the_window_sorts_what_it_takes_and_refuses_the_rest(
        times in proptest::collection::vec(0u64..200, 0..300),
        window in 0u64..60,
    ) {
        let mut r = Reorder::new(ReorderWindow::from_ns(window));
        let (mut out, mut taken) = (Vec::new(), Vec::new());
        let (mut newest, mut want) = (0u64, ReorderStats::default());
        for (i, &t) in times.iter().enumerate() {
            let inside = t + window >= newest;
            proptest::prop_assert_eq!(r.check(t, i as u64 + 1).is_ok(), inside);
            if !inside {
                continue;
            }
            if t < newest {
                want.records += 1;
                want.largest_inversion_ns = want.largest_inversion_ns.max(newest - t);
            }
            newest = newest.max(t);
            taken.push((t, i as u32));
            r.push(i as u64 + 1, rec(t, i as u32));
            while let Some(item) = r.pop_ready() {
                out.push(item);
            }
        }
        while let Some(item) = r.pop_any() {
            out.push(item);
        }
        taken.sort_by_key(|&(t, _)| t);
        let got: Vec<(u64, u32)> = out
            .iter()
            .map(|i| match i {
                Item::Record(r) => (r.event.time, r.pid()),
                Item::Process { pid, time, .. } => (*time, *pid),
            })
            .collect();
        proptest::prop_assert_eq!(got, taken);
        proptest::prop_assert_eq!(r.stats(), want);
    }
}

#[test]
fn windows_parse_and_print() {
    for (text, ns, shown) in [
        ("1s", 1_000_000_000, "1s"),
        ("0", 0, "0s"),
        ("250ms", 250_000_000, "250ms"),
        ("131us", 131_000, "131us"),
        ("131µs", 131_000, "131us"),
        ("1.5", 1_500_000_000, "1500ms"),
        ("0.0001s", 100_000, "100us"),
        ("7ns", 7, "7ns"),
        ("3600s", 3_600_000_000_000, "3600s"),
    ] {
        let w = ReorderWindow::parse(text).expect(text);
        assert_eq!(w.ns(), ns, "{text}");
        assert_eq!(w.to_string(), shown, "{text}");
    }
    for text in [
        "",
        "s",
        "1h",
        "x",
        "-1s",
        "1..2s",
        "3601s",
        "99999999999999999999s",
    ] {
        assert!(ReorderWindow::parse(text).is_err(), "{text}");
    }
}
