use std::collections::HashSet;

use proptest::prelude::*;

use super::*;
use crate::write_log::{FLAG_FUA, Kind, RecordHead};

/// A log from a compact script: `w` write, `W` FUA write, `d` discard,
/// `z` write-zeroes, `f` flush, `m` mark.
fn log(script: &str) -> Vec<RecordHead> {
    script
        .chars()
        .enumerate()
        .map(|(i, c)| {
            let (kind, flags) = match c {
                'w' => (Kind::Write, 0),
                'W' => (Kind::Write, FLAG_FUA),
                'd' => (Kind::Discard, 0),
                'z' => (Kind::WriteZeroes, 0),
                'f' => (Kind::Flush, 0),
                _ => (Kind::Mark, 0),
            };
            RecordHead {
                kind,
                flags,
                seq: i as u64,
                sector: i as u64,
                sectors: u32::from(kind.changes_content()),
                payload_len: 0,
                time_ns: i as u64 * 10,
            }
        })
        .collect()
}

fn opts(seed: u64, between: u64) -> PlanOptions {
    PlanOptions {
        seed,
        between,
        max_states: usize::MAX,
    }
}

fn ids(p: &Plan) -> Vec<String> {
    p.states.iter().map(|s| s.id.to_string()).collect()
}

#[test]
fn ids_round_trip() {
    for id in [
        StateId::End,
        StateId::Boundary(7),
        StateId::Between { cut: 12, n: 3 },
    ] {
        assert_eq!(id.to_string().parse::<StateId>(), Ok(id));
    }
    for bad in ["", "f", "fx", "c1", "c-1", "c1-", "x3", "end1"] {
        assert!(bad.parse::<StateId>().is_err(), "{bad}");
    }
}

#[test]
fn a_small_log_is_explored_whole() {
    // w0 w1 f2 m3 w4: boundary f2 (cut at 4, sees the mark), end, and
    // between: the cut before 1 (w0 lost or kept), the cut before 2 (of
    // w0 w1: 3 subsets, the 4th is f2), the cut at the end (w4 lost).
    let heads = log("wwfmw");
    let p = plan(&heads, &opts(1, 100));
    assert_eq!(p.boundaries, 1);
    assert_eq!(p.epochs, 2);
    assert_eq!(p.possible, 1 + 1 + 2 + 3 + 1);
    assert_eq!(p.states.len() as u128, p.possible);
    let f2 = p
        .states
        .iter()
        .find(|s| s.id == StateId::Boundary(2))
        .unwrap();
    assert_eq!((f2.cut, f2.durable), (4, 2));
    assert!(f2.kept(&heads).is_empty());
    let end = p.states.last().unwrap();
    assert_eq!(end.id, StateId::End);
    let lost = p
        .states
        .iter()
        .find(|s| matches!(s.id, StateId::Between { cut: 5, .. }))
        .unwrap();
    assert_eq!((lost.durable, lost.unflushed), (2, 1));
    assert!(lost.kept(&heads).is_empty(), "keeping w4 is the end state");
}

#[test]
fn fua_writes_survive_and_flushes_in_a_row_make_one_boundary() {
    let heads = log("wWffmw");
    let p = plan(&heads, &opts(3, 100));
    assert_eq!(ids(&p).iter().filter(|i| i.starts_with('f')).count(), 1);
    assert!(p.states.iter().any(|s| s.id == StateId::Boundary(3)));
    for s in &p.states {
        let kept = s.kept(&heads);
        if s.durable <= 1 && s.cut > 1 {
            assert!(kept.contains(&1), "{}: {kept:?}", s.id);
        }
    }
}

#[test]
fn rebuild_gives_back_every_planned_state() {
    let heads = log("wwwwwwwwmfwWwwdzwwwwwwfmwwwwwwwwwwwwwwwww");
    for seed in [0, 1, 99] {
        let p = plan(&heads, &opts(seed, 5));
        for s in &p.states {
            let again = rebuild(&heads, s.id, seed).unwrap();
            assert_eq!(again, *s, "{}", s.id);
            assert_eq!(again.kept(&heads), s.kept(&heads));
        }
    }
}

#[test]
fn rebuild_refuses_what_is_not_there() {
    let heads = log("wwfw");
    assert_eq!(
        rebuild(&heads, StateId::Boundary(1), 0),
        Err(PlanError::NotAFlush(1, 4))
    );
    assert!(matches!(
        rebuild(&heads, StateId::Between { cut: 9, n: 0 }, 0),
        Err(PlanError::CutPastEnd { .. })
    ));
    assert!(matches!(
        rebuild(&heads, StateId::Between { cut: 2, n: 4 }, 0),
        Err(PlanError::NoSuchSubset { possible: 4, .. })
    ));
}

#[test]
fn many_unflushed_writes_use_a_stream() {
    let heads = log(&"w".repeat(200));
    let p = plan(&heads, &opts(5, 8));
    assert_eq!(p.possible, u128::MAX);
    let between = p
        .states
        .iter()
        .filter(|s| matches!(s.id, StateId::Between { .. }));
    assert_eq!(between.count(), 8);
    let s = rebuild(
        &heads,
        StateId::Between {
            cut: 200,
            n: 123456,
        },
        5,
    )
    .unwrap();
    let kept = s.kept(&heads).len();
    assert!(kept > 50 && kept < 150, "{kept} of 200 kept");
}

#[test]
fn max_states_spreads_over_the_log() {
    let heads = log(&"wwwfm".repeat(50));
    let p = plan(
        &heads,
        &PlanOptions {
            seed: 0,
            between: 4,
            max_states: 20,
        },
    );
    assert_eq!(p.states.len(), 20);
    assert!(p.planned > 20);
    assert!(
        p.states.last().unwrap().cut > 200,
        "the end is explored too"
    );
}

fn script() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            6 => Just('w'),
            1 => Just('W'),
            1 => Just('d'),
            1 => Just('z'),
            2 => Just('f'),
            1 => Just('m'),
        ],
        0..120,
    )
    .prop_map(|v| v.into_iter().collect())
}

proptest! {
    #[test]
    fn plans_keep_the_rules(s in script(), seed in any::<u64>(), between in 0u64..12, max in 1usize..60) {
        let heads = log(&s);
        let p = plan(&heads, &PlanOptions { seed, between, max_states: max });
        prop_assert!(p.states.len() <= max);
        prop_assert!(p.states.len() <= p.planned);
        prop_assert!(p.planned as u128 <= p.possible);
        let mut seen = HashSet::new();
        let mut last_durable = 0;
        for st in &p.states {
            prop_assert!(st.durable >= last_durable, "ordered by durable");
            last_durable = st.durable;
            prop_assert!(st.durable <= st.cut && st.cut <= heads.len() as u64);
            let kept = st.kept(&heads);
            // FUA writes in the unflushed window always survive; nothing
            // outside it is in `kept`.
            for h in &heads[st.durable as usize..st.cut as usize] {
                if h.kind.changes_content() && h.fua() {
                    prop_assert!(kept.contains(&h.seq), "{}: FUA {} lost", st.id, h.seq);
                }
            }
            for k in &kept {
                prop_assert!(*k >= st.durable && *k < st.cut);
                prop_assert!(heads[*k as usize].kind.changes_content());
            }
            match st.id {
                StateId::Boundary(f) => {
                    prop_assert_eq!(heads[f as usize].kind, Kind::Flush);
                    prop_assert_eq!(st.durable, f);
                    // Every record before the flush is applied, nothing after.
                    prop_assert!(kept.is_empty());
                    prop_assert!(heads[f as usize..st.cut as usize].iter().all(|h| !h.kind.changes_content()));
                }
                StateId::End => prop_assert_eq!(st.durable, heads.len() as u64),
                StateId::Between { cut, .. } => {
                    prop_assert_eq!(st.cut, cut);
                    let flushes = heads[st.durable as usize..cut as usize]
                        .iter()
                        .filter(|h| h.kind == Kind::Flush && h.seq != st.durable)
                        .count();
                    prop_assert_eq!(flushes, 0, "no flush inside the window");
                }
            }
            // Distinct: by ID, and by what is kept at the same cut.
            prop_assert!(seen.insert((st.cut, st.durable, kept.clone(), matches!(st.id, StateId::Between { .. }))), "{} repeats a state", st.id);
            prop_assert_eq!(rebuild(&heads, st.id, seed).unwrap(), *st);
        }
    }
}
