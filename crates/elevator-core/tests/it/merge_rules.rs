//! Each of Linux's merge rules, one test each:
//! what may merge with what, the limits that stop a merge and mark the
//! request, neighbour merges, insert-time merges, plugging, and each
//! `nomerges` level. Also tags, completion, splitting and bad input.

use elevator_core::{
    Bio, BioCompletion, BioError, BioFlags, Dispatch, IoPrio, Limits, MergeKind, Op, Outcome,
    PrioClass, Queue, QueueConfig, RequestId, Status, SubmitError, Submitted, TunableError,
};

fn queue(sched: &str) -> Queue {
    queue_with(sched, Limits::default(), 0)
}

fn queue_with(sched: &str, limits: Limits, nomerges: u8) -> Queue {
    let mut cfg = QueueConfig::for_depth(limits, 32);
    cfg.nomerges = nomerges;
    Queue::with_scheduler(cfg, sched).unwrap()
}

/// A queue with `nr_requests` tags and the other settings at their defaults.
fn queue_with_tags(sched: &str, nr_requests: u32) -> Queue {
    let cfg = QueueConfig {
        nr_requests,
        ..QueueConfig::default()
    };
    Queue::with_scheduler(cfg, sched).unwrap()
}

/// Dispatch everything, returning each request's (sector, sectors, tokens).
fn drain(q: &mut Queue) -> Vec<(u64, u32, Vec<u64>)> {
    let mut out = vec![];
    loop {
        q.check_invariants();
        match q.dispatch(1) {
            Dispatch::Request(id) => {
                let rq = q.request(id);
                let tokens = q.bios(id).map(|b| b.token).collect();
                out.push((rq.sector(), rq.sectors(), tokens));
                q.complete(id, Outcome::Done, 2, &mut |_| {}).unwrap();
            }
            Dispatch::Empty => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    q.check_invariants();
    assert!(q.is_idle());
    out
}

fn read(sector: u64, token: u64) -> Bio {
    Bio::read(sector, 4096, token)
}

fn write(sector: u64, token: u64) -> Bio {
    Bio::write(sector, 4096, token)
}

#[test]
fn back_and_front_merges() {
    for sched in ["mq-deadline", "deadline-list", "none"] {
        let mut q = queue(sched);
        q.submit(&read(8, 1), 0).unwrap();
        assert_eq!(
            q.submit(&read(16, 2), 0).unwrap(),
            Submitted::Merged(MergeKind::Back)
        );
        assert_eq!(
            q.submit(&read(0, 3), 0).unwrap(),
            Submitted::Merged(MergeKind::Front)
        );
        assert_eq!(q.stats().back_merges, 1, "{sched}");
        assert_eq!(q.stats().front_merges, 1, "{sched}");
        assert_eq!(drain(&mut q), vec![(0, 24, vec![3, 1, 2])], "{sched}");
    }
}

#[test]
fn different_ops_or_priorities_do_not_merge() {
    let mut q = queue("mq-deadline");
    q.submit(&read(0, 1), 0).unwrap();
    q.submit(&write(8, 2), 0).unwrap();
    let rt = IoPrio::new(PrioClass::Rt, 0).unwrap();
    q.submit(&read(8, 3).with_prio(rt), 0).unwrap();
    assert_eq!(q.stats().bio_merges(), 0);
    assert_eq!(drain(&mut q).len(), 3);
}

#[test]
fn fua_preflush_nomerge_never_merge() {
    for flag in [BioFlags::FUA, BioFlags::PREFLUSH, BioFlags::NOMERGE] {
        let mut q = queue("mq-deadline");
        q.submit(&write(0, 1).with_flags(flag), 0).unwrap();
        // Nothing merges into it, and it merges into nothing.
        q.submit(&write(8, 2), 0).unwrap();
        q.submit(&write(16, 3).with_flags(flag), 0).unwrap();
        assert_eq!(q.stats().bio_merges(), 0, "{flag}");
        let reqs = drain(&mut q);
        assert_eq!(reqs.len(), 3, "{flag}");
        if flag != BioFlags::NOMERGE {
            // FUA and PREFLUSH bypass the scheduler and go first.
            assert_eq!(reqs[0].2, vec![1]);
            assert_eq!(reqs[1].2, vec![3]);
        }
    }
}

#[test]
fn flush_is_its_own_request_and_goes_first() {
    let mut q = queue("mq-deadline");
    q.submit(&read(0, 1), 0).unwrap();
    q.submit(&Bio::flush(2), 0).unwrap();
    let reqs = drain(&mut q);
    assert_eq!(reqs, vec![(0, 0, vec![2]), (0, 8, vec![1])]);
}

#[test]
fn discard_merges_write_zeroes_does_not() {
    let mut q = queue("mq-deadline");
    q.submit(&Bio::new(Op::Discard, 0, 4096, 1), 0).unwrap();
    q.submit(&Bio::new(Op::Discard, 8, 4096, 2), 0).unwrap();
    q.submit(&Bio::new(Op::WriteZeroes, 100, 4096, 3), 0)
        .unwrap();
    q.submit(&Bio::new(Op::WriteZeroes, 108, 4096, 4), 0)
        .unwrap();
    assert_eq!(q.stats().bio_merges(), 1);
    assert_eq!(drain(&mut q).len(), 3);
}

#[test]
fn max_sectors_stops_a_merge_and_marks_the_request() {
    let limits = Limits {
        max_sectors: 16,
        ..Limits::default()
    };
    let mut q = queue_with("mq-deadline", limits, 0);
    q.submit(&Bio::read(0, 4096, 1), 0).unwrap();
    q.submit(&Bio::read(8, 4096, 2), 0).unwrap(); // 16 sectors: fits
    q.submit(&Bio::read(16, 4096, 3), 0).unwrap(); // 24: refused, marks
    assert_eq!(q.stats().merge_limit_hits, 1);
    assert_eq!(q.stats().back_merges, 1);
    let reqs = drain(&mut q);
    assert_eq!(reqs, vec![(0, 16, vec![1, 2]), (16, 8, vec![3])]);

    // Once marked, even a bio that would fit does not merge.
    let limits = Limits {
        max_sectors: 24,
        ..Limits::default()
    };
    let mut q = queue_with("mq-deadline", limits, 0);
    q.submit(&Bio::read(8, 8192, 1), 0).unwrap(); // [8, 24)
    q.submit(&Bio::read(24, 8192, 2), 0).unwrap(); // 32 > 24: marks [8, 24)
    q.submit(&Bio::read(0, 4096, 3), 0).unwrap(); // would fit (24): refused
    assert_eq!(q.stats().merge_limit_hits, 1);
    assert_eq!(q.stats().bio_merges(), 0);
    assert_eq!(drain(&mut q).len(), 3);
}

#[test]
fn max_segments_stops_a_merge() {
    let limits = Limits {
        max_segments: 2,
        ..Limits::default()
    };
    let mut q = queue_with("mq-deadline", limits, 0);
    for i in 0..3 {
        q.submit(&read(i * 8, i), 0).unwrap();
    }
    assert_eq!(q.stats().merge_limit_hits, 1);
    assert_eq!(drain(&mut q), vec![(0, 16, vec![0, 1]), (16, 8, vec![2])]);
}

#[test]
fn chunk_boundary_stops_a_merge() {
    let limits = Limits {
        chunk_sectors: 16,
        ..Limits::default()
    };
    let mut q = queue_with("mq-deadline", limits, 0);
    q.submit(&read(8, 1), 0).unwrap();
    q.submit(&read(16, 2), 0).unwrap();
    assert_eq!(q.stats().bio_merges(), 0);
    assert_eq!(drain(&mut q).len(), 2);
}

#[test]
fn back_merge_then_neighbour_merge() {
    let mut q = queue("mq-deadline");
    q.submit(&read(0, 1), 0).unwrap();
    q.submit(&read(16, 2), 0).unwrap();
    q.submit(&read(8, 3), 0).unwrap(); // joins [0,8), which then absorbs [16,24)
    assert_eq!(q.stats().back_merges, 1);
    assert_eq!(q.stats().request_merges, 1);
    assert_eq!(drain(&mut q), vec![(0, 24, vec![1, 3, 2])]);
}

#[test]
fn front_merge_then_neighbour_merge() {
    let mut q = queue("mq-deadline");
    q.submit(&read(1000, 0), 0).unwrap(); // takes last_merge, out of the way
    q.submit(&read(0, 1), 0).unwrap();
    q.submit(&read(16, 2), 0).unwrap();
    // A write ending at 8 heads the hash chain, so the read bio below gets
    // no back merge from the hash and front-merges into [16,24), which then
    // merges into its sort predecessor [0,8).
    q.submit(&write(0, 9), 0).unwrap();
    q.submit(&read(8, 3), 0).unwrap();
    assert_eq!(q.stats().front_merges, 1);
    assert_eq!(q.stats().request_merges, 1);
    let reqs = drain(&mut q);
    assert!(reqs.contains(&(0, 24, vec![1, 3, 2])), "{reqs:?}");
}

#[test]
fn front_merges_tunable_turns_them_off() {
    let mut q = queue("mq-deadline");
    q.set("front_merges", 0).unwrap();
    q.submit(&read(8, 1), 0).unwrap();
    q.submit(&read(100, 2), 0).unwrap(); // last_merge stays on [8,16)
    q.submit(&read(0, 3), 0).unwrap(); // hits last_merge: still merges
    q.submit(&read(200, 4), 0).unwrap();
    q.submit(&read(92, 5), 0).unwrap(); // only a front merge could take it
    assert_eq!(q.stats().front_merges, 1);
    assert_eq!(drain(&mut q).len(), 4);
}

#[test]
fn nomerges_1_tries_only_last_merge() {
    for (nomerges, expect_merges) in [(0u8, 2u64), (1, 1), (2, 0)] {
        let mut q = queue_with("mq-deadline", Limits::default(), nomerges);
        q.submit(&read(0, 1), 0).unwrap(); // last_merge
        q.submit(&read(100, 2), 0).unwrap();
        q.submit(&read(8, 3), 0).unwrap(); // last_merge hit
        q.submit(&read(108, 4), 0).unwrap(); // needs the hash
        assert_eq!(q.stats().bio_merges(), expect_merges, "nomerges={nomerges}");
        drain(&mut q);
    }
}

#[test]
fn nomerges_2_turns_off_plug_and_insert_merges() {
    let mut q = queue_with("mq-deadline", Limits::default(), 2);
    q.plug();
    q.submit(&read(0, 1), 0).unwrap();
    q.submit(&read(8, 2), 0).unwrap();
    q.unplug(0);
    assert_eq!(q.stats().bio_merges() + q.stats().request_merges, 0);
    assert_eq!(drain(&mut q).len(), 2);
}

#[test]
fn plug_merges_and_insert_merges() {
    let mut q = queue("mq-deadline");
    q.plug();
    q.submit(&read(0, 1), 0).unwrap();
    q.submit(&read(8, 2), 0).unwrap(); // plug merge with the last plugged
    assert_eq!(q.stats().plug_merges, 1);
    q.submit(&read(100, 3), 0).unwrap();
    q.submit(&read(16, 4), 0).unwrap(); // last plugged is [100,..): new request
    assert_eq!(
        q.queued(),
        0,
        "plugged requests are not visible to the scheduler"
    );
    assert_eq!(q.plugged_requests(), 3);
    q.unplug(0);
    // Inserting [16,24) finds [0,16) through last_merge: an insert-time merge.
    assert_eq!(q.stats().request_merges, 1);
    assert_eq!(
        drain(&mut q),
        vec![(0, 24, vec![1, 2, 4]), (100, 8, vec![3])]
    );
}

#[test]
fn insert_merge_uses_the_hash() {
    let mut q = queue("mq-deadline");
    q.plug();
    q.submit(&read(0, 1), 0).unwrap(); // becomes last_merge when inserted
    q.submit(&read(100, 2), 0).unwrap();
    q.submit(&read(500, 5), 0).unwrap();
    q.submit(&read(108, 3), 0).unwrap(); // not next to the last plugged one
    assert_eq!(q.stats().bio_merges(), 0);
    q.unplug(0); // [108,..) merges onto [100,108), found by the hash
    assert_eq!(q.stats().request_merges, 1);
    assert_eq!(
        drain(&mut q),
        vec![(0, 8, vec![1]), (100, 16, vec![2, 3]), (500, 8, vec![5])]
    );
}

#[test]
fn plug_flushes_at_32_requests_and_at_128k() {
    let mut q = queue_with_tags("none", 128);
    q.plug();
    for i in 0..33u64 {
        q.submit(&read(i * 1000, i), 0).unwrap();
    }
    assert_eq!(
        q.plugged_requests(),
        1,
        "the 33rd request flushed the first 32"
    );
    assert_eq!(q.queued(), 32);
    q.unplug(0);
    drain(&mut q);

    q.plug();
    q.submit(&Bio::read(0, 128 * 1024, 1), 0).unwrap();
    q.submit(&read(10_000, 2), 0).unwrap();
    assert_eq!(
        q.plugged_requests(),
        1,
        "a 128 KiB request flushes the plug"
    );
    q.unplug(0);
    drain(&mut q);
}

#[test]
fn none_scans_recent_requests_without_hash_or_neighbours() {
    let mut q = queue("none");
    q.submit(&read(0, 1), 0).unwrap();
    for i in 0..8u64 {
        q.submit(&read(1000 + i * 100, 10 + i), 0).unwrap();
    }
    // [0,8) is the 9th most recent: beyond the scan of 8.
    q.submit(&read(8, 2), 0).unwrap();
    assert_eq!(q.stats().bio_merges(), 0);
    q.submit(&read(1708, 3), 0).unwrap(); // newest: merges
    assert_eq!(q.stats().back_merges, 1);
    assert_eq!(drain(&mut q).len(), 10);
}

#[test]
fn tags_run_out_with_a_clear_result() {
    let mut q = queue_with_tags("mq-deadline", 4);
    for i in 0..4u64 {
        q.submit(&read(i * 100, i), 0).unwrap();
    }
    let err = q.submit(&read(1000, 9), 0).unwrap_err();
    assert!(matches!(
        err,
        SubmitError::NoTag {
            needed: 1,
            free: 0,
            nr_requests: 4
        }
    ));
    assert!(err.to_string().contains("nr_requests=4"), "{err}");
    // A bio that merges needs no tag.
    assert!(matches!(
        q.submit(&read(8, 10), 0),
        Ok(Submitted::Merged(_))
    ));
    let Dispatch::Request(id) = q.dispatch(1) else {
        panic!()
    };
    q.complete(id, Outcome::Done, 2, &mut |_| {}).unwrap();
    q.submit(&read(1000, 9), 0).unwrap();
    drain(&mut q);
}

#[test]
fn queue_depth_bounds_in_flight() {
    let cfg = QueueConfig {
        queue_depth: 2,
        ..QueueConfig::default()
    };
    let mut q = Queue::with_scheduler(cfg, "none").unwrap();
    for i in 0..3u64 {
        q.submit(&read(i * 100, i), 0).unwrap();
    }
    assert!(matches!(q.dispatch(0), Dispatch::Request(_)));
    assert!(matches!(q.dispatch(0), Dispatch::Request(_)));
    assert_eq!(q.dispatch(0), Dispatch::Blocked);
    assert_eq!(q.in_flight(), 2);
}

fn completions(q: &mut Queue, id: RequestId, outcome: Outcome) -> Vec<BioCompletion> {
    let mut v = vec![];
    q.complete(id, outcome, 5, &mut |c| v.push(c)).unwrap();
    v
}

#[test]
fn partial_failure_reports_good_bytes_only() {
    // 5000 good bytes count as 4608: whole 512-byte blocks only.
    let mut q = queue("mq-deadline");
    for i in 0..3u64 {
        q.submit(&read(i * 8, i), 0).unwrap();
    }
    let Dispatch::Request(id) = q.dispatch(1) else {
        panic!()
    };
    assert_eq!(q.request(id).nr_bios(), 3);
    let done = completions(
        &mut q,
        id,
        Outcome::Failed {
            status: Status::IoError,
            good_bytes: 5000,
        },
    );
    assert_eq!(
        done,
        vec![
            BioCompletion {
                token: 0,
                status: Status::Ok,
                bytes: 4096
            },
            BioCompletion {
                token: 1,
                status: Status::IoError,
                bytes: 512
            },
            BioCompletion {
                token: 2,
                status: Status::IoError,
                bytes: 0
            },
        ]
    );
    assert_eq!(q.stats().bio_errors, 2);
    assert!(q.is_idle());
}

#[test]
fn split_bio_completes_once_with_the_bytes_before_the_first_failure() {
    let mut q = queue("mq-deadline");
    let big = Bio::write(0, 9 << 20, 77); // 9 MiB: 4 + 4 + 1 MiB
    assert_eq!(q.submit(&big, 0).unwrap(), Submitted::Split(3));
    // Pieces never merge, even with a neighbour.
    q.submit(&Bio::write(9 << 11, 4096, 78), 0).unwrap();
    let mut ids = vec![];
    while let Dispatch::Request(id) = q.dispatch(1) {
        ids.push(id);
    }
    assert_eq!(ids.len(), 4);
    let offsets: Vec<u32> = ids
        .iter()
        .flat_map(|&id| q.bios(id).map(|b| b.offset))
        .collect();
    assert_eq!(offsets, vec![0, 4 << 20, 8 << 20, 0]);
    let mut all = vec![];
    // Complete out of order; the middle piece fails after 1 MiB.
    all.extend(completions(&mut q, ids[2], Outcome::Done));
    all.extend(completions(&mut q, ids[3], Outcome::Done));
    all.extend(completions(
        &mut q,
        ids[1],
        Outcome::Failed {
            status: Status::IoError,
            good_bytes: 1 << 20,
        },
    ));
    assert_eq!(all.len(), 1, "only the lone bio completed so far");
    all.extend(completions(&mut q, ids[0], Outcome::Done));
    assert_eq!(
        all[1],
        BioCompletion {
            token: 77,
            status: Status::IoError,
            bytes: 5 << 20
        }
    );
    assert!(q.is_idle());
}

#[test]
fn split_needs_all_its_tags_up_front() {
    let mut q = queue_with_tags("mq-deadline", 4);
    q.submit(&read(1000, 1), 0).unwrap();
    q.submit(&read(2000, 2), 0).unwrap();
    let err = q.submit(&Bio::write(0, 12 << 20, 3), 0).unwrap_err();
    assert!(
        matches!(
            err,
            SubmitError::NoTag {
                needed: 3,
                free: 2,
                ..
            }
        ),
        "{err}"
    );
    q.check_invariants();
    assert_eq!(
        q.requests().in_use(),
        2,
        "nothing of the refused bio was taken"
    );
}

#[test]
fn bad_bios_are_refused_and_change_nothing() {
    let limits = Limits {
        logical_block_size: 4096,
        capacity: 1 << 20,
        ..Limits::default()
    };
    let mut q = queue_with("mq-deadline", limits, 0);
    let cases = [
        Bio::read(0, 0, 1),
        Bio::read(4, 4096, 1),
        Bio::read(8, 1024, 1),
        Bio::read((1 << 20) - 8, 8192, 1),
        Bio::new(Op::Flush, 0, 512, 1),
    ];
    for bio in cases {
        let err = q.submit(&bio, 0).unwrap_err();
        assert!(matches!(err, SubmitError::Bio(_)), "{bio:?}: {err}");
    }
    let msg = q.submit(&Bio::read(4, 4096, 1), 0).unwrap_err().to_string();
    assert!(
        msg.contains("misaligned") && msg.contains("4096-byte"),
        "{msg}"
    );
    assert!(matches!(
        IoPrio::new(PrioClass::Be, 8),
        Err(BioError::PrioLevel { level: 8 })
    ));
    q.check_invariants();
    assert!(q.is_idle());
    assert_eq!(q.stats().bios, 0);
}

#[test]
fn tunables_by_name() {
    let mut q = queue("mq-deadline");
    assert_eq!(q.get("read_expire").unwrap(), 500);
    assert_eq!(q.get("nomerges").unwrap(), 0);
    assert_eq!(q.get("nr_requests").unwrap(), 64);
    q.set_str("read_expire", "2s").unwrap();
    assert_eq!(q.get("read_expire").unwrap(), 2000);
    q.set("max_sectors_kb", 128).unwrap();
    assert_eq!(q.limits().max_sectors, 256);
    assert!(matches!(
        q.set("max_sectors_kb", 8192),
        Err(TunableError::OutOfRange { .. })
    ));
    assert!(matches!(
        q.set("nomerges", 3),
        Err(TunableError::OutOfRange { .. })
    ));
    assert!(matches!(
        q.set("logical_block_size", 4096),
        Err(TunableError::ReadOnly { .. })
    ));
    let e = q.get("slice_idle").unwrap_err().to_string();
    assert!(
        e.contains("unknown tunable 'slice_idle'") && e.contains("fifo_batch"),
        "{e}"
    );
    assert!(matches!(
        q.set_str("fifo_batch", "many"),
        Err(TunableError::BadValue { .. })
    ));
    q.submit(&read(0, 1), 0).unwrap();
    assert!(matches!(
        q.set("nr_requests", 256),
        Err(TunableError::Busy { .. })
    ));
    drain(&mut q);
    q.set("nr_requests", 256).unwrap();
    assert_eq!(q.get("nr_requests").unwrap(), 256);
    let e = Queue::with_scheduler(QueueConfig::default(), "cfqq")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cfqq") && e.contains("mq-deadline"), "{e}");
}

#[test]
fn requeued_request_goes_first() {
    let mut q = queue("mq-deadline");
    q.submit(&read(0, 1), 0).unwrap();
    q.submit(&read(100, 2), 0).unwrap();
    let Dispatch::Request(first) = q.dispatch(1) else {
        panic!()
    };
    q.requeue(first).unwrap();
    assert_eq!(q.stats().requeues, 1);
    let Dispatch::Request(again) = q.dispatch(2) else {
        panic!()
    };
    assert_eq!(again, first);
    q.complete(again, Outcome::Done, 3, &mut |_| {}).unwrap();
    drain(&mut q);
}

#[test]
fn a_failed_flush_fails() {
    let mut q = queue("mq-deadline");
    q.submit(&Bio::flush(9), 0).unwrap();
    let Dispatch::Request(id) = q.dispatch(0) else {
        panic!()
    };
    let done = completions(
        &mut q,
        id,
        Outcome::Failed {
            status: Status::IoError,
            good_bytes: 0,
        },
    );
    assert_eq!(
        done,
        vec![BioCompletion {
            token: 9,
            status: Status::IoError,
            bytes: 0
        }]
    );
}

#[test]
fn a_bio_too_large_for_the_pool_is_refused_for_good() {
    let mut q = queue("mq-deadline"); // 64 tags of at most 4 MiB
    let err = q.submit(&Bio::write(0, 512 << 20, 1), 0).unwrap_err();
    assert!(
        matches!(
            err,
            SubmitError::Bio(BioError::TooLarge { pieces: 128, .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("nr_requests=64"), "{err}");
    assert!(q.is_idle());
    // 256 MiB fits in 64 requests exactly.
    assert_eq!(
        q.submit(&Bio::write(0, 256 << 20, 2), 0).unwrap(),
        Submitted::Split(64)
    );
}

#[test]
fn running_out_of_tags_flushes_the_plug() {
    let mut q = queue_with_tags("mq-deadline", 4);
    q.plug();
    for i in 0..4u64 {
        q.submit(&read(i * 100, i), 0).unwrap();
    }
    assert_eq!(
        q.dispatch(0),
        Dispatch::Empty,
        "plugged requests are not dispatchable"
    );
    assert!(matches!(
        q.submit(&read(1000, 9), 0),
        Err(SubmitError::NoTag { .. })
    ));
    // The refusal flushed the plug: the queue can make progress.
    assert_eq!(q.plugged_requests(), 0);
    assert!(matches!(q.dispatch(0), Dispatch::Request(_)));
    q.check_invariants();
}

#[test]
fn complete_and_requeue_refuse_requests_not_in_flight() {
    let mut q = queue("mq-deadline");
    let Submitted::NewRequest(queued) = q.submit(&read(0, 1), 0).unwrap() else {
        panic!()
    };
    let e = q
        .complete(queued, Outcome::Done, 1, &mut |_| panic!("no completion"))
        .unwrap_err();
    assert!(
        e.to_string().contains("not in flight (it is queued)"),
        "{e}"
    );
    assert!(q.requeue(queued).is_err());
    let e = q
        .complete(RequestId::from_raw(9999), Outcome::Done, 1, &mut |_| {})
        .unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    let Dispatch::Request(id) = q.dispatch(1) else {
        panic!()
    };
    q.complete(id, Outcome::Done, 2, &mut |_| {}).unwrap();
    assert!(
        q.complete(id, Outcome::Done, 3, &mut |_| panic!("twice"))
            .is_err()
    );
    q.check_invariants();
    assert!(q.is_idle());
}

#[test]
fn a_request_merged_away_at_insert_is_not_returned() {
    let limits = Limits {
        max_sectors: 16,
        ..Limits::default()
    };
    let mut q = queue_with("mq-deadline", limits, 0);
    q.submit(&read(16, 1), 0).unwrap();
    q.submit(&read(24, 2), 0).unwrap(); // [16,32): full
    q.submit(&read(0, 3), 0).unwrap(); // [0,8)
    // Hits last_merge [16,32) (full: marked), then as a request of its own
    // merges onto [0,8) at insertion.
    assert_eq!(
        q.submit(&read(8, 4), 0).unwrap(),
        Submitted::Merged(MergeKind::Back)
    );
    assert_eq!(
        drain(&mut q),
        vec![(0, 16, vec![3, 4]), (16, 16, vec![1, 2])]
    );
}

#[test]
fn nomerges_back_to_0_hashes_what_is_queued() {
    let mut q = queue_with("mq-deadline", Limits::default(), 2);
    q.submit(&read(100, 1), 0).unwrap();
    q.set("nomerges", 0).unwrap();
    q.submit(&read(0, 2), 0).unwrap(); // takes last_merge
    q.submit(&read(108, 3), 0).unwrap(); // back merge found through the hash
    assert_eq!(q.stats().back_merges, 1);
    drain(&mut q);
}

#[test]
fn lowering_max_sectors_kb_keeps_queued_requests_valid() {
    let mut q = queue("mq-deadline");
    q.submit(&Bio::read(0, 64 << 10, 1), 0).unwrap();
    q.set("max_sectors_kb", 4).unwrap();
    q.check_invariants();
    q.submit(&Bio::read(1000, 16 << 10, 2), 0).unwrap();
    let reqs = drain(&mut q);
    assert_eq!(reqs.len(), 5, "the 16 KiB bio is split in four: {reqs:?}");
}

#[test]
fn max_bios_below_nr_requests_is_refused() {
    let cfg = QueueConfig {
        max_bios: Some(8),
        ..QueueConfig::default()
    };
    let e = Queue::with_scheduler(cfg, "none").unwrap_err().to_string();
    assert!(e.contains("max_bios=8"), "{e}");
}
