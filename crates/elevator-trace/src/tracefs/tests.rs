//! Tests of the tracefs reader on lines from real kernels.

use super::*;

fn read(text: &str) -> Vec<Item> {
    TracefsReader::new(text.as_bytes(), "t", false)
        .collect::<Result<Vec<_>, _>>()
        .expect("parses")
}

fn records(text: &str) -> Vec<Record> {
    read(text)
        .into_iter()
        .filter_map(|i| match i {
            Item::Record(r) => Some(r),
            Item::Process { .. } => None,
        })
        .collect()
}

#[test]
fn reads_every_tracepoint() {
    let text = "\
# tracer: nop
        postgres-19830   [000] .....  1662.621792: block_bio_queue: 7,0 W 4509728 + 56 [postgres]
        postgres-19830   [000] .....  1662.621847: block_getrq: 7,0 W 4509728 + 56 [postgres]
        postgres-19830   [000] .....  1662.621849: block_plug: [postgres]
        postgres-19830   [000] .....  1662.621851: block_unplug: [postgres] 3
        postgres-19830   [000] ...1.  1662.621853: block_rq_insert: 7,0 W 28672 () 4509728 + 56 be,0,4 [postgres]
        postgres-19830   [000] .....  1662.621858: block_rq_issue: 7,0 W 28672 () 4509728 + 56 be,0,4 [postgres]
     ksoftirqd/1-22      [001] ..s..  1662.622189: block_rq_complete: 7,0 W () 4509728 + 56 be,0,4 [0]
     ksoftirqd/1-22      [001] ..s..  1662.624684: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
        postgres-19830   [001] .....  1662.764560: block_split: 7,0 WS 297280 / 299840 [postgres]
    jbd2/loop0-8-19500   [001] .....  1662.780329: block_bio_backmerge: 7,0 WSM 3934056 + 8 [jbd2/loop0-8]
        postgres-19745   [001] ...1.  1667.525905: block_rq_merge: 7,0 W 16384 () 4460200 + 32 be,0,4 [postgres]
";
    let r = records(text);
    let letters: String = r.iter().map(|r| r.event.action.letter()).collect();
    assert_eq!(letters, "QGPUIDCCXMM");
    assert_eq!(r[0].event.time, 1_662_621_792_000);
    assert_eq!(r[0].event.sector, 4509728);
    assert_eq!(r[0].event.bytes, 56 * 512);
    assert_eq!(r[0].dev, dev_t(7, 0));
    assert_eq!(r[0].pid(), 19830);
    assert_eq!(r[2].dev, 0);
    assert_eq!(r[3].event.extra, 3);
    assert_eq!(r[7].event.op, Op::Flush);
    assert_eq!(r[7].event.sector, 0);
    assert_eq!(r[8].event.extra, 299840);
    assert_eq!(r[9].pid(), 19500);
    assert_eq!(r[9].event.flags, BioFlags::SYNC | BioFlags::META);
    assert_eq!(r[10].event.action, TraceAction::RqMerge);
    assert_eq!(r[1].cpu, 0);
    assert_eq!(r[6].cpu, 1);
}

#[test]
fn names_processes_once() {
    let text = "\
           <...>-19829   [000] .....  1662.607850: block_plug: [bash]
 my task - two-19829   [000] .....  1662.607887: block_unplug: [bash] 1
    jbd2/loop0-8-19500   [001] .....  1662.780329: block_bio_queue: 7,0 WSM 3934056 + 8 [jbd2/loop0-8]
    jbd2/loop0-8-19500   [001] .....  1662.780329: block_bio_queue: 7,0 WSM 3934064 + 8 [jbd2/loop0-8]
";
    let names: Vec<(u32, String)> = read(text)
        .into_iter()
        .filter_map(|i| match i {
            Item::Process { pid, name, .. } => Some((pid, name)),
            Item::Record(_) => None,
        })
        .collect();
    assert_eq!(
        names,
        vec![
            (19829, "bash".to_string()),
            (19500, "jbd2/loop0-8".to_string())
        ]
    );
}

#[test]
fn old_kernels_without_ioprio_or_flags() {
    let text = "\
  kworker/u8:2-301   [002]  5.000001: block_rq_issue: 8,16 R 4096 () 100 + 8 [kworker/u8:2]
  kworker/u8:2-301   [002]  5.000002: block_rq_complete: 8,16 R () 100 + 8 [-5]
";
    let r = records(text);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].dev, dev_t(8, 16));
    assert_eq!(r[0].event.time, 5_000_001_000);
    assert_eq!(r[1].event.error, 5);
}

#[test]
fn bad_lines_name_the_line_or_are_counted() {
    let text = "\
  a-1 [000] ..... 1.000000: block_bio_queue: 7,0 W 8 + 8 [a]
  a-1 [000] ..... 1.000001: block_frobnicate: 7,0 W 8 + 8 [a]
  garbage
  a-1 [000] ..... 1.000002: block_bio_queue: 7,0 Z 8 + 8 [a]
  a-1 [000] ..... 1.000003: block_bio_complete: 7,0 W 8 + 8 [0]
";
    let mut r = TracefsReader::new(text.as_bytes(), "x.trace", false);
    assert!(matches!(r.next(), Some(Ok(Item::Process { .. }))));
    assert!(matches!(r.next(), Some(Ok(Item::Record(_)))));
    let e = r.next().and_then(Result::err).expect("error");
    assert_eq!(e.place, "line 2");
    assert!(matches!(e.kind, TraceErrorKind::UnknownEvent(ref n) if n == "block_frobnicate"));
    assert!(r.next().is_none());

    let mut r = TracefsReader::new(text.as_bytes(), "x.trace", true);
    let n = r
        .by_ref()
        .filter(|i| matches!(i, Ok(Item::Record(_))))
        .count();
    assert_eq!(n, 1);
    assert_eq!(r.skipped(), 3);
}

#[test]
fn never_panics_on_junk() {
    for text in [
        "-[",
        "a-[0]",
        "a-1 [0]",
        "a-1 [0] x",
        "a-1 [0] 1.5:",
        "a-1 [0] 1.5: block_rq_issue:",
        "a-1 [0] 1.5: block_rq_issue: 7,0 W 1 (",
        "a-1 [0] 1.5: block_split: 7,0 W 9 / 1 [a]",
        "a-1 [0] 1.5: block_bio_queue: 7,0 W 1 + 99999999999 [a]",
        "a-99999999999 [0] 1.5: block_plug: [a]",
        "\u{0}\u{ff}",
    ] {
        let _ = TracefsReader::new(text.as_bytes(), "j", false).count();
        let _ = TracefsReader::new(text.as_bytes(), "j", true).count();
    }
}

#[test]
fn a_line_earlier_than_the_one_before_is_named_or_counted() {
    let text = "\
        postgres-19830   [000] .....  1662.621792: block_bio_queue: 7,0 W 8 + 8 [postgres]
        postgres-19830   [000] .....  1662.621700: block_bio_queue: 7,0 W 16 + 8 [postgres]
        postgres-19830   [000] .....  1662.621800: block_bio_queue: 7,0 W 24 + 8 [postgres]
";
    let err = TracefsReader::new(text.as_bytes(), "t", false)
        .find_map(Result::err)
        .expect("an error");
    // Issue 29: the message names both lines and the window's flag.
    assert_eq!(
        err.to_string(),
        "t: line 2: out of time order: line 2 at 1662.621700000 s is 92.000 µs before line 1 \
         at 1662.621792000 s, outside --reorder-window 0s (widen it, or --skip-bad to leave \
         such lines out)"
    );
    let mut skipping = TracefsReader::new(text.as_bytes(), "t", true);
    let sectors: Vec<u64> = skipping
        .by_ref()
        .filter_map(|i| match i {
            Ok(Item::Record(r)) => Some(r.event.sector),
            _ => None,
        })
        .collect();
    assert_eq!(sectors, [8, 24]);
    assert_eq!(skipping.skipped(), 1);
}

#[test]
fn lines_a_little_out_of_order_are_put_back_within_the_window() {
    let text = "\
        postgres-19830   [000] .....  1662.621792: block_bio_queue: 7,0 W 8 + 8 [postgres]
          <...>-19831    [001] .....  1662.621700: block_bio_queue: 7,0 W 16 + 8 [psql]
        postgres-19830   [000] .....  1662.621800: block_bio_queue: 7,0 W 24 + 8 [postgres]
        postgres-19830   [000] .....  1662.621800: block_bio_queue: 7,0 W 32 + 8 [postgres]
          <...>-19831    [001] .....  1662.621790: block_bio_queue: 7,0 W 40 + 8 [psql]
";
    let window = ReorderWindow::parse("100us").expect("window");
    let mut reader = TracefsReader::new(text.as_bytes(), "t", false).with_reorder_window(window);
    let items: Vec<Item> = reader
        .by_ref()
        .collect::<Result<_, _>>()
        .expect("reordered");
    let order: Vec<(u64, u64)> = items
        .iter()
        .map(|i| match i {
            Item::Record(r) => (r.event.sector, r.event.time),
            Item::Process { pid, time, .. } => (u64::from(*pid), *time),
        })
        .collect();
    // Each name before its pid's first record; equal times in file order.
    assert_eq!(
        order,
        [
            (19831, 1662621700000),
            (16, 1662621700000),
            (40, 1662621790000),
            (19830, 1662621792000),
            (8, 1662621792000),
            (24, 1662621800000),
            (32, 1662621800000),
        ]
    );
    assert_eq!(
        reader.reordered(),
        ReorderStats {
            records: 2,
            largest_inversion_ns: 92_000
        }
    );
    // 91 us is not enough for line 2.
    let window = ReorderWindow::parse("91us").expect("window");
    let err = TracefsReader::new(text.as_bytes(), "t", false)
        .with_reorder_window(window)
        .find_map(Result::err)
        .expect("an error");
    assert!(
        err.to_string().starts_with(
            "t: line 2: out of time order: line 2 at 1662.621700000 s is 92.000 µs before line 1"
        ),
        "{err}"
    );
    assert!(err.to_string().contains("--reorder-window 91us"), "{err}");
}

#[test]
fn every_action_is_known_by_its_tracepoint() {
    for a in TraceAction::ALL {
        assert_eq!(action_of(a.tracepoint().as_bytes()), Some(a));
    }
    assert_eq!(action_of(b"block_"), None);
    assert_eq!(action_of(b"bio_queue"), None);
}

#[test]
fn lines_across_the_buffer_read_as_whole_lines_do() {
    let text = "\
# tracer: nop
        postgres-19830   [000] .....  1662.621792: block_bio_queue: 7,0 W 4509728 + 56 [postgres]
           <...>-19829   [000] .....  1662.621800: block_plug: [bash]
        postgres-19830   [000] ...1.  1662.621853: block_rq_insert: 7,0 W 28672 () 4509728 + 56 be,0,4 [postgres]

     ksoftirqd/1-22      [001] ..s..  1662.624684: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
        postgres-19830   [001] .....  1662.764560: block_split: 7,0 WS 297280 / 299840 [postgres]
    jbd2/loop0-8-19500   [001] .....  1662.780329: block_bio_backmerge: 7,0 WSM 3934056 + 8 [jbd2/loop0-8]";
    let whole = read(text);
    assert_eq!(whole.len(), 10);
    for capacity in [1, 2, 7, 50, 97, 98, 99, 200] {
        let buffered = std::io::BufReader::with_capacity(capacity, text.as_bytes());
        let items = TracefsReader::new(buffered, "t", false)
            .collect::<Result<Vec<_>, _>>()
            .expect("parses");
        assert_eq!(items, whole, "buffer of {capacity} bytes");
    }
}

#[test]
fn word_at_a_time_searches_agree_with_byte_loops() {
    let samples: [&[u8]; 6] = [
        b"",
        b"        postgres-19830   [000] .....  1662.621792: block_bio_queue:",
        b"                \t  x",
        b"         ",
        b"\x80\x80\x80\x80\x80\x80\x80\x80[\x01]:",
        b"[[[[[[[[]]]]]]]]::::::::........",
    ];
    for s in samples {
        for from in 0..s.len() {
            let b = &s[from..];
            for c in [b'[', b']', b':', b'.', b' ', 0x80, 0x01, b'x'] {
                assert_eq!(find(b, c), b.iter().position(|&x| x == c), "{b:?} {c}");
            }
            let start = b
                .iter()
                .position(|c| !c.is_ascii_whitespace())
                .unwrap_or(b.len());
            assert_eq!(trim_start(b), &b[start..]);
        }
    }
}
