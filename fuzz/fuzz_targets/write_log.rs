//! The write log's reader and the crash-state planner on arbitrary bytes.
//! Reading never panics; the records returned before an error are
//! consistent (sequence numbers from 0, payload lengths as the heads say,
//! offsets back to back) and the error names the next record and where the
//! valid prefix ends. Planning crash states over the records read (and over
//! heads made straight from the bytes, which get past no checksum) never
//! panics and keeps its rules: at most `max_states` states, FUA writes
//! always kept, boundary states at flushes with nothing unflushed, and every
//! state rebuilt the same from its ID.
//!
//! Run: `cargo +nightly fuzz run write_log` (from the repository root);
//! seeds are in fuzz/seeds/write_log/.

#![no_main]

use elevator_trace::write_log::crash::{self, PlanOptions, StateId};
use elevator_trace::write_log::{FLAG_FUA, HEADER_LEN, Kind, RECORD_HEAD_LEN, Reader, RecordHead};
use libfuzzer_sys::fuzz_target;

/// Plan over `heads` and check the plan's rules.
fn check_plan(heads: &[RecordHead], knobs: u64) {
    let opts = PlanOptions {
        seed: knobs,
        between: knobs % 9,
        max_states: (knobs >> 8) as usize % 40,
    };
    let plan = crash::plan(heads, &opts);
    assert!(plan.states.len() <= opts.max_states);
    assert!(plan.states.len() <= plan.planned);
    assert!(plan.planned as u128 <= plan.possible);
    let mut durable = 0;
    for s in &plan.states {
        assert!(s.durable >= durable, "states in log order");
        durable = s.durable;
        assert!(s.durable <= s.cut && s.cut <= heads.len() as u64);
        let kept = s.kept(heads);
        for h in &heads[s.durable as usize..s.cut as usize] {
            if h.kind.changes_content() && h.fua() {
                assert!(kept.contains(&h.seq), "{}: FUA record {} lost", s.id, h.seq);
            }
        }
        if let StateId::Boundary(f) = s.id {
            assert_eq!(heads[f as usize].kind, Kind::Flush);
            assert!(kept.is_empty());
        }
        assert_eq!(crash::rebuild(heads, s.id, opts.seed).as_ref(), Ok(s));
        assert_eq!(s.id.to_string().parse::<StateId>(), Ok(s.id));
    }
}

fuzz_target!(|data: &[u8]| {
    let knobs = data
        .iter()
        .take(8)
        .fold(0u64, |k, &b| (k << 8) | u64::from(b));
    if let Ok(mut reader) = Reader::new(data) {
        let mut heads = Vec::new();
        let mut next_offset = HEADER_LEN as u64;
        loop {
            match reader.next_record() {
                Ok(Some(rec)) => {
                    assert_eq!(rec.head.seq, heads.len() as u64);
                    assert_eq!(rec.payload.len(), rec.head.payload_len as usize);
                    if rec.head.has_data() {
                        assert_eq!(rec.payload.len() as u64, u64::from(rec.head.sectors) * 512);
                    }
                    assert_eq!(rec.offset, next_offset);
                    next_offset += (RECORD_HEAD_LEN + rec.payload.len()) as u64;
                    heads.push(rec.head);
                }
                Ok(None) => break,
                Err(e) => {
                    assert_eq!(e.valid_bytes(), Some(next_offset));
                    assert_eq!(reader.valid_bytes(), next_offset);
                    let named = format!("record {} ", heads.len());
                    assert!(e.to_string().contains(&named), "{e}");
                    assert!(matches!(reader.next_record(), Ok(None)));
                    break;
                }
            }
        }
        assert_eq!(reader.records(), heads.len() as u64);
        check_plan(&heads, knobs);
    }
    // Heads straight from the bytes: one record per byte.
    let heads: Vec<RecordHead> = data
        .iter()
        .skip(8)
        .enumerate()
        .map(|(i, &b)| {
            let kind = Kind::from_code(b % 5 + 1).unwrap_or(Kind::Write);
            RecordHead {
                kind,
                flags: if b & 0x80 != 0 { FLAG_FUA } else { 0 },
                seq: i as u64,
                sector: u64::from(b),
                sectors: u32::from(kind.changes_content()),
                payload_len: 0,
                time_ns: i as u64,
            }
        })
        .collect();
    check_plan(&heads, knobs);
});
