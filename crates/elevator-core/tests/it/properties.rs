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
//! - trace events agree with the statistics (one Q per accepted bio, one G
//!   per request made, M/F/request merges, D, C and R as counted), come in
//!   time order, and pair every P with a later U;
//! - `deadline-list` and `mq-deadline` dispatch the same requests for the same
//!   input when no deadline expires.

use crate::common;

use std::collections::HashMap;

use common::{Driven, Model, Setup, submit};
use elevator_core::{
    Bio, BioError, Dispatch, Op, Outcome, RequestId, SCHEDULER_NAMES, Status, SubmitError,
    Submitted, TraceAction, TraceEvent,
};
use proptest::prelude::*;

/// Submitting bios the queue must refuse (misaligned, beyond the device).
#[derive(Clone, Debug)]
struct Misaligned;

/// A completion fails (with a status and good bytes drawn from these) or
/// not.
type Fail = Option<(u8, u16)>;

type Step = common::Step<Fail, Misaligned>;

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => submit().prop_map(Step::Submit),
        1 => Just(Step::Extra(Misaligned)),
        1 => Just(Step::Plug),
        1 => Just(Step::Unplug),
        5 => Just(Step::Dispatch),
        4 => (any::<u8>(), proptest::option::weighted(0.2, (0u8..4, any::<u16>())))
            .prop_map(|(pick, fail)| Step::Complete { pick, fail }),
        1 => any::<u8>().prop_map(|pick| Step::Requeue { pick }),
        1 => (0u16..200).prop_map(Step::Advance),
    ]
}

/// Limits from small to large, with chunks or not; `nomerges` is drawn
/// apart, the device rotates.
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
                nomerges: 0,
                rotational: true,
            },
        )
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
    d: Driven,
    pending: HashMap<u64, Pending>,
    dispatched: Vec<(u64, u32, Vec<u64>)>,
}

impl Harness {
    fn new(setup: Setup, sched: &str, nomerges: u8) -> Harness {
        Harness {
            d: Driven::new(Setup { nomerges, ..setup }, sched),
            pending: HashMap::new(),
            dispatched: vec![],
        }
    }

    fn check_request(&self, id: RequestId) {
        let rq = self.d.q.request(id);
        let l = self.d.q.limits();
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
        let bios: Vec<_> = self.d.q.bios(id).collect();
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

    fn drain(&mut self) {
        self.drain_queue(true);
        assert!(self.d.in_flight.is_empty());
        assert!(
            self.pending.is_empty(),
            "bios never completed: {:?}",
            self.pending.keys()
        );
        let s = self.d.q.stats();
        assert_eq!(
            s.bios, s.bios_completed,
            "every accepted bio completes once"
        );
    }
}

impl Model for Harness {
    type Fail = Fail;
    type Extra = Misaligned;

    fn driven(&mut self) -> &mut Driven {
        &mut self.d
    }

    fn submit(&mut self, bio: Bio) {
        let token = bio.token;
        let pieces = self.d.q.limits().pieces(&bio);
        match self.d.q.submit(&bio, self.d.now) {
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
                    pieces > self.d.setup.nr_requests || pieces >= 64,
                    "{pieces} pieces refused as too large with {} tags",
                    self.d.setup.nr_requests
                );
            }
            Err(e) => panic!("valid bio refused: {e}"),
        }
    }

    fn dispatch(&mut self) {
        if let Dispatch::Request(id) = self.d.q.dispatch(self.d.now) {
            self.check_request(id);
            let rq = self.d.q.request(id);
            self.dispatched.push((
                rq.sector(),
                rq.sectors(),
                self.d.q.bios(id).map(|b| b.token).collect(),
            ));
            self.d.in_flight.push(id);
        }
    }

    fn complete(&mut self, idx: usize, fail: Fail) {
        let id = self.d.in_flight.swap_remove(idx);
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
                let counted = good - good % u64::from(self.d.setup.lbs);
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
        for b in self.d.q.bios(id).collect::<Vec<_>>() {
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
        self.d
            .q
            .complete(id, outcome, self.d.now, &mut |c| {
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

    fn extra(&mut self, _: &Misaligned) {
        let before = self.d.q.stats().bios;
        let mut bad = vec![
            Bio::read(0, 100, u64::MAX),
            Bio::read(1 << 20, 4096, u64::MAX),
        ];
        if self.d.setup.lbs > 512 {
            bad.push(Bio::read(1, self.d.setup.lbs, u64::MAX));
        }
        for bio in bad {
            let r = self.d.q.submit(&bio, self.d.now);
            assert!(
                matches!(r, Err(SubmitError::Bio(_))),
                "bad bio accepted: {bio:?}"
            );
        }
        assert_eq!(self.d.q.stats().bios, before);
    }

    fn drained(&mut self, id: RequestId) {
        self.check_request(id);
        self.d.in_flight.push(id);
    }

    fn stalled(&mut self) {
        assert!(
            !self.d.in_flight.is_empty(),
            "work queued, nothing in flight, nothing dispatched"
        );
        self.complete(0, None);
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
        prop_assert_eq!(a.d.q.stats().bio_merges(), b.d.q.stats().bio_merges());
        prop_assert_eq!(a.d.q.stats().request_merges, b.d.q.stats().request_merges);
    }

    #[test]
    fn trace_events_agree_with_statistics(
        setup in setup(),
        sched in 0..SCHEDULER_NAMES.len(),
        nomerges in 0u8..3,
        steps in proptest::collection::vec(step(), 1..300),
    ) {
        let mut h = Harness::new(setup, SCHEDULER_NAMES[sched], nomerges);
        h.d.q.set_tracing(true, 1 << 20);
        let mut events: Vec<TraceEvent> = vec![];
        for s in &steps {
            h.run(s);
            events.extend(h.d.q.drain_trace());
        }
        h.drain();
        events.extend(h.d.q.drain_trace());
        prop_assert_eq!(h.d.q.trace_dropped(), 0);
        let count = |a: TraceAction| events.iter().filter(|e| e.action == a).count() as u64;
        let st = h.d.q.stats();
        prop_assert_eq!(count(TraceAction::Queue), st.bios);
        prop_assert_eq!(count(TraceAction::GetRq), st.requests);
        prop_assert_eq!(count(TraceAction::BackMerge), st.back_merges);
        prop_assert_eq!(count(TraceAction::FrontMerge), st.front_merges);
        prop_assert_eq!(count(TraceAction::RqMerge), st.request_merges);
        prop_assert_eq!(count(TraceAction::Issue), st.dispatches);
        prop_assert_eq!(count(TraceAction::Complete), st.completions);
        prop_assert_eq!(count(TraceAction::Requeue), st.requeues);
        // Every bio's Q comes before what became of it, and pieces of a
        // split bio each got a request: Q + X = G + M + F.
        prop_assert_eq!(
            count(TraceAction::Queue) + count(TraceAction::Split),
            count(TraceAction::GetRq) + st.back_merges + st.front_merges
        );
        let mut plugged = false;
        for w in events.windows(2) {
            prop_assert!(w[0].time <= w[1].time, "events out of time order: {:?} then {:?}", w[0], w[1]);
        }
        for e in &events {
            match e.action {
                TraceAction::Plug => {
                    prop_assert!(!plugged, "P twice without U");
                    plugged = true;
                }
                TraceAction::Unplug => {
                    prop_assert!(plugged, "U without P");
                    prop_assert!(e.extra > 0);
                    plugged = false;
                }
                _ => {}
            }
        }
    }
}
