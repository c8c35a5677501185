//! Property tests: random bio streams through every scheduler and every
//! `nomerges` value, checked against a model.
//!
//! - every accepted bio completes exactly once, with `bytes == len` on success
//!   and fewer bytes on failure; refused bios never complete;
//! - a request's bios are contiguous and of one operation (and the queue's
//!   full invariants hold after every step);
//! - no request exceeds the limits;
//! - nothing merges across flush, FUA, PREFLUSH or NOMERGE, nor with a piece
//!   of a split bio;
//! - the queue drains to empty;
//! - `deadline-list` and `mq-deadline` dispatch the same requests for the same
//!   input when no deadline expires.

use std::collections::HashMap;

use elevator_core::{
    Bio, BioError, BioFlags, Dispatch, IoContext, IoPrio, Limits, Op, Outcome, PrioClass, Queue,
    QueueConfig, RequestId, SCHEDULER_NAMES, Status, SubmitError, Submitted,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    Submit {
        op: u8,
        block: u16,
        blocks: u16,
        flags: u8,
        prio: u8,
        ctx: u8,
    },
    Misaligned,
    Plug,
    Unplug,
    Dispatch,
    Complete {
        pick: u8,
        fail: Option<(u8, u16)>,
    },
    Requeue {
        pick: u8,
    },
    Advance(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0u8..20, 0u16..96, 1u16..24, 0u8..40, 0u8..8, 0u8..3).prop_map(
            |(op, block, blocks, flags, prio, ctx)| Step::Submit { op, block, blocks, flags, prio, ctx }
        ),
        1 => Just(Step::Misaligned),
        1 => Just(Step::Plug),
        1 => Just(Step::Unplug),
        5 => Just(Step::Dispatch),
        4 => (any::<u8>(), proptest::option::weighted(0.2, (0u8..4, any::<u16>())))
            .prop_map(|(pick, fail)| Step::Complete { pick, fail }),
        1 => any::<u8>().prop_map(|pick| Step::Requeue { pick }),
        1 => (0u16..200).prop_map(Step::Advance),
    ]
}

#[derive(Clone, Copy, Debug)]
struct Setup {
    lbs: u32,
    max_sectors: u32,
    max_segments: u16,
    chunk_sectors: u32,
    nr_requests: u32,
    queue_depth: u32,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        prop_oneof![Just(512u32), Just(4096)],
        prop_oneof![Just(16u32), Just(64), Just(8192)],
        prop_oneof![Just(2u16), Just(4), Just(128)],
        prop_oneof![Just(0u32), Just(64), Just(256)],
        4u32..40,
        1u32..8,
    )
        .prop_map(
            |(lbs, max_sectors, max_segments, chunk_sectors, nr_requests, queue_depth)| Setup {
                lbs,
                max_sectors: max_sectors.max(lbs / 512),
                max_segments,
                chunk_sectors: if chunk_sectors != 0 {
                    chunk_sectors.max(lbs / 512)
                } else {
                    0
                },
                nr_requests,
                queue_depth,
            },
        )
}

fn make_queue(s: &Setup, sched: &str, nomerges: u8) -> Queue {
    let limits = Limits {
        logical_block_size: s.lbs,
        max_sectors: s.max_sectors,
        max_segments: s.max_segments,
        max_segment_size: 4096,
        chunk_sectors: s.chunk_sectors,
        capacity: 1 << 20,
        ..Limits::default()
    };
    let cfg = QueueConfig {
        limits,
        nr_requests: s.nr_requests,
        queue_depth: s.queue_depth,
        nomerges,
        max_bios: Some(64),
        rotational: true,
    };
    Queue::with_scheduler(cfg, sched).expect("valid setup")
}

fn make_bio(s: &Setup, step: &Step, token: u64) -> Option<Bio> {
    let Step::Submit {
        op,
        block,
        blocks,
        flags,
        prio,
        ctx,
    } = *step
    else {
        return None;
    };
    let bs = u64::from(s.lbs / 512);
    let op = match op {
        0..=8 => Op::Read,
        9..=15 => Op::Write,
        16 => Op::Flush,
        17..=18 => Op::Discard,
        _ => Op::WriteZeroes,
    };
    let mut f = BioFlags::NONE;
    for (bit, flag) in [
        (1, BioFlags::SYNC),
        (2, BioFlags::META),
        (4, BioFlags::FUA),
        (8, BioFlags::PREFLUSH),
        (16, BioFlags::NOMERGE),
    ] {
        // Rare no-merge flags, so that merges still happen often.
        if flags & bit != 0 && (bit < 4 || flags >= 32) {
            f |= flag;
        }
    }
    let class = match prio {
        0 => PrioClass::Rt,
        7 => PrioClass::Idle,
        _ => PrioClass::Be,
    };
    let (sector, len) = if op == Op::Flush {
        (0, 0)
    } else {
        (u64::from(block) * bs, u32::from(blocks) * s.lbs)
    };
    Some(Bio {
        op,
        sector,
        len,
        flags: f,
        ctx: IoContext(u32::from(ctx)),
        prio: IoPrio::new(class, 4).expect("level 4"),
        token,
    })
}

/// What the model knows of an accepted bio.
#[derive(Clone, Copy, Debug)]
struct Pending {
    op: Op,
    len: u32,
    no_merge: bool,
    split: bool,
    /// Pieces not yet completed.
    pieces_left: u32,
    /// Earliest failure seen in its pieces: (byte offset, status).
    first_failure: Option<(u32, Status)>,
}

struct Harness {
    q: Queue,
    setup: Setup,
    now: u64,
    next_token: u64,
    pending: HashMap<u64, Pending>,
    in_flight: Vec<RequestId>,
    dispatched: Vec<(u64, u32, Vec<u64>)>,
}

impl Harness {
    fn new(setup: Setup, sched: &str, nomerges: u8) -> Harness {
        Harness {
            q: make_queue(&setup, sched, nomerges),
            setup,
            now: 0,
            next_token: 0,
            pending: HashMap::new(),
            in_flight: vec![],
            dispatched: vec![],
        }
    }

    fn check_request(&self, id: RequestId) {
        let rq = self.q.request(id);
        let l = self.q.limits();
        if rq.op() != Op::Flush {
            assert!(
                rq.sectors() <= l.max_sectors_for(rq.op()),
                "request over max_sectors"
            );
        }
        assert!(rq.segments() <= l.max_segments, "request over max_segments");
        assert!(
            !l.crosses_chunk(rq.sector(), u64::from(rq.sectors())),
            "request crosses a chunk"
        );
        let bios: Vec<_> = self.q.bios(id).collect();
        assert_eq!(bios.len() as u32, rq.nr_bios());
        let mut sector = rq.sector();
        for b in &bios {
            let p = self
                .pending
                .get(&b.token)
                .expect("bio of a request is pending");
            assert_eq!(p.op, rq.op(), "request mixes operations");
            assert_eq!(b.sector, sector, "bios not contiguous");
            sector += u64::from(b.len / 512);
            if bios.len() > 1 {
                assert!(!p.no_merge, "a FUA/PREFLUSH/NOMERGE/flush bio was merged");
                assert!(!p.split, "a piece of a split bio was merged");
                assert!(rq.op().mergeable(), "an unmergeable op was merged");
            }
        }
        assert_eq!(sector, rq.end());
    }

    fn complete(&mut self, idx: usize, fail: Option<(u8, u16)>) {
        let id = self.in_flight.swap_remove(idx);
        let (outcome, status, good) = match fail {
            None => (Outcome::Done, Status::Ok, u64::MAX),
            Some((s, good)) => {
                let status = [
                    Status::IoError,
                    Status::NoSpace,
                    Status::NotSupported,
                    Status::Cancelled,
                ][usize::from(s) % 4];
                let good = u64::from(good % 48) * 256; // lands inside most requests
                // The queue counts whole logical blocks only.
                let counted = good - good % u64::from(self.setup.lbs);
                (
                    Outcome::Failed {
                        status,
                        good_bytes: good,
                    },
                    status,
                    counted,
                )
            }
        };
        // The model's own account of what each bio of the request gets.
        let mut expected = HashMap::new();
        let mut offset = 0u64;
        for b in self.q.bios(id).collect::<Vec<_>>() {
            let end = offset + u64::from(b.len);
            let p = self
                .pending
                .get_mut(&b.token)
                .expect("bio of a request is pending");
            // A bio fails if it reaches past the good bytes, and a bio with
            // no data (a flush) fails with its request.
            if end > good || (b.len == 0 && status != Status::Ok) {
                let at = b.offset + (good.saturating_sub(offset).min(u64::from(b.len)) as u32);
                if p.first_failure.is_none_or(|(f, _)| at < f) {
                    p.first_failure = Some((at, status));
                }
            }
            offset = end;
            p.pieces_left -= 1;
            if p.pieces_left == 0 {
                let e = match p.first_failure {
                    None => (Status::Ok, p.len),
                    Some((at, st)) => (st, at),
                };
                expected.insert(b.token, e);
            }
        }
        let mut done = HashMap::new();
        self.q
            .complete(id, outcome, self.now, &mut |c| {
                assert!(
                    done.insert(c.token, (c.status, c.bytes)).is_none(),
                    "token {} completed twice",
                    c.token
                );
            })
            .unwrap();
        assert_eq!(done, expected, "completions differ from the model's");
        for (token, (st, bytes)) in done {
            let p = self
                .pending
                .remove(&token)
                .expect("completed bio was pending");
            if st == Status::Ok {
                assert_eq!(bytes, p.len, "successful bio must report all its bytes");
            } else {
                assert!(
                    bytes < p.len || p.len == 0,
                    "failed bio reports {bytes} of {} bytes",
                    p.len
                );
            }
        }
    }

    fn run(&mut self, step: &Step) {
        match step {
            Step::Submit { .. } => {
                let token = self.next_token;
                self.next_token += 1;
                let bio = make_bio(&self.setup, step, token).expect("a submit step");
                let pieces = self.q.limits().pieces(&bio);
                match self.q.submit(&bio, self.now) {
                    Ok(sub) => {
                        if let Submitted::Split(n) = sub {
                            assert_eq!(n, pieces);
                        }
                        self.pending.insert(
                            token,
                            Pending {
                                op: bio.op,
                                len: bio.len,
                                no_merge: !bio.mergeable(),
                                split: pieces > 1,
                                pieces_left: pieces,
                                first_failure: None,
                            },
                        );
                    }
                    Err(SubmitError::NoTag { .. } | SubmitError::NoBioSlot { .. }) => {}
                    Err(SubmitError::Bio(BioError::TooLarge { pieces: p, .. })) => {
                        assert_eq!(p, pieces);
                        assert!(
                            pieces > self.setup.nr_requests || pieces >= 64,
                            "{pieces} pieces refused as too large with {} tags",
                            self.setup.nr_requests
                        );
                    }
                    Err(e) => panic!("valid bio refused: {e}"),
                }
            }
            Step::Misaligned => {
                let before = self.q.stats().bios;
                let mut bad = vec![
                    Bio::read(0, 100, u64::MAX),
                    Bio::read(1 << 20, 4096, u64::MAX),
                ];
                if self.setup.lbs > 512 {
                    bad.push(Bio::read(1, self.setup.lbs, u64::MAX));
                }
                for bio in bad {
                    let r = self.q.submit(&bio, self.now);
                    assert!(
                        matches!(r, Err(SubmitError::Bio(_))),
                        "bad bio accepted: {bio:?}"
                    );
                }
                assert_eq!(self.q.stats().bios, before);
            }
            Step::Plug => self.q.plug(),
            Step::Unplug => self.q.unplug(self.now),
            Step::Dispatch => {
                if let Dispatch::Request(id) = self.q.dispatch(self.now) {
                    self.check_request(id);
                    let rq = self.q.request(id);
                    self.dispatched.push((
                        rq.sector(),
                        rq.sectors(),
                        self.q.bios(id).map(|b| b.token).collect(),
                    ));
                    self.in_flight.push(id);
                }
            }
            Step::Complete { pick, fail } => {
                if !self.in_flight.is_empty() {
                    let idx = usize::from(*pick) % self.in_flight.len();
                    self.complete(idx, *fail);
                }
            }
            Step::Requeue { pick } => {
                if !self.in_flight.is_empty() {
                    let idx = usize::from(*pick) % self.in_flight.len();
                    let id = self.in_flight.swap_remove(idx);
                    self.q.requeue(id).unwrap();
                }
            }
            Step::Advance(ms) => self.now += u64::from(*ms) * 1_000_000,
        }
        self.q.check_invariants();
    }

    fn drain(&mut self) {
        self.q.unplug(self.now);
        let mut guard = 0;
        while !self.q.is_idle() {
            guard += 1;
            assert!(guard < 100_000, "queue does not drain");
            match self.q.dispatch(self.now) {
                Dispatch::Request(id) => {
                    self.check_request(id);
                    self.in_flight.push(id);
                }
                Dispatch::WaitUntil(t) => self.now = t,
                Dispatch::Blocked | Dispatch::Empty => {
                    assert!(
                        !self.in_flight.is_empty(),
                        "work queued, nothing in flight, nothing dispatched"
                    );
                    self.complete(0, None);
                }
            }
            self.q.check_invariants();
        }
        assert!(self.in_flight.is_empty());
        assert!(
            self.pending.is_empty(),
            "bios never completed: {:?}",
            self.pending.keys()
        );
        let s = self.q.stats();
        assert_eq!(
            s.bios, s.bios_completed,
            "every accepted bio completes once"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn every_bio_completes_once(
        setup in setup(),
        sched in 0..SCHEDULER_NAMES.len(),
        nomerges in 0u8..3,
        steps in proptest::collection::vec(step(), 1..300),
    ) {
        let mut h = Harness::new(setup, SCHEDULER_NAMES[sched], nomerges);
        for s in &steps {
            h.run(s);
        }
        h.drain();
    }

    #[test]
    fn deadline_list_dispatches_like_mq_deadline(
        setup in setup(),
        nomerges in 0u8..3,
        steps in proptest::collection::vec(step(), 1..300),
    ) {
        let mut a = Harness::new(setup, "mq-deadline", nomerges);
        let mut b = Harness::new(setup, "deadline-list", nomerges);
        for s in &steps {
            // Keep time well inside read_expire (500 ms): no deadline expires.
            let s = match s {
                Step::Advance(ms) => Step::Advance(ms % 2),
                other => other.clone(),
            };
            a.run(&s);
            b.run(&s);
            prop_assert_eq!(&a.dispatched, &b.dispatched);
        }
        a.drain();
        b.drain();
        prop_assert_eq!(a.q.stats().bio_merges(), b.q.stats().bio_merges());
        prop_assert_eq!(a.q.stats().request_merges, b.q.stats().request_merges);
    }
}
