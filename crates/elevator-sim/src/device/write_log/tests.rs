//! The check on hand-made media states.

use super::*;

fn ledger() -> Ledger {
    // Writes 1 (0..8), 2 (8..16), 3 (0..8, FUA), 4 (100..108); a flush
    // covering writes 1 and 2 completed after 3 was recorded; 4 was
    // recorded after.
    let mut l = Ledger {
        submitted: vec![(0, 8), (8, 16), (0, 8), (100, 108)],
        ..Ledger::default()
    };
    l.recorded(1, false);
    l.recorded(2, false);
    l.recorded(3, true);
    l.flushed(2);
    l.recorded(4, false);
    l
}

#[test]
fn a_correct_media_passes() {
    let l = ledger();
    let mut m = ExtentMap::new();
    m.set(0, 8, 3);
    m.set(8, 16, 2);
    let c = l.check(&m);
    assert_eq!(c.violations, 0, "{:?}", c.first);
    assert_eq!(c.required_writes, 3);
    // Write 4 was completed, not flushed: lost, and allowed to be.
    assert_eq!((c.lost_writes, c.lost_sectors), (1, 8));
}

#[test]
fn a_missing_flushed_write_fails() {
    let l = ledger();
    let mut m = ExtentMap::new();
    m.set(0, 8, 3);
    m.set(8, 12, 2); // 12..16 of write 2 never reached the media
    let c = l.check(&m);
    assert_eq!(c.violations, 1);
    assert_eq!(
        c.first[0],
        Violation::Missing {
            lo: 12,
            hi: 16,
            write: 2,
            found: 0
        }
    );
}

#[test]
fn an_older_write_under_a_fua_write_fails() {
    let l = ledger();
    let mut m = ExtentMap::new();
    m.set(0, 8, 1); // the FUA write 3 should have replaced it
    m.set(8, 16, 2);
    let c = l.check(&m);
    assert_eq!(c.violations, 1);
    assert!(
        c.first[0].to_string().contains("older write 1"),
        "{}",
        c.first[0]
    );
}

#[test]
fn content_where_it_was_never_written_fails() {
    let l = ledger();
    let mut m = ExtentMap::new();
    m.set(0, 8, 3);
    m.set(8, 16, 2);
    m.set(500, 508, 4); // write 4 went to 100..108
    m.set(600, 601, 9); // never submitted
    let c = l.check(&m);
    assert_eq!(c.violations, 2);
    assert!(c.first[0].to_string().contains("misdirected"));
    assert!(c.first[1].to_string().contains("never submitted"));
}

#[test]
fn a_discard_releases_what_it_covers() {
    let mut l = ledger();
    l.discarded(8, 16, 4);
    let mut m = ExtentMap::new();
    m.set(0, 8, 3);
    let c = l.check(&m);
    assert_eq!(c.violations, 0, "{:?}", c.first);
}

#[test]
fn a_flush_covers_only_what_was_recorded_before_it() {
    let mut l = Ledger {
        submitted: vec![(0, 8), (8, 16), (16, 24)],
        ..Ledger::default()
    };
    l.recorded(1, false);
    // A flush submitted now covers write 1 only.
    l.recorded(2, false);
    l.flushed(1);
    // A discard of 4..12 before write 3: write 1's 4..8 is undefined.
    l.discarded(4, 12, 2);
    l.recorded(3, false);
    l.flushed(3);
    let mut m = ExtentMap::new();
    m.set(0, 4, 1);
    m.set(12, 16, 2);
    m.set(16, 24, 3);
    let c = l.check(&m);
    assert_eq!(c.violations, 0, "{:?}", c.first);
    assert_eq!(c.required_writes, 3);
    m.remove(20, 21);
    assert_eq!(l.check(&m).violations, 1);
}
