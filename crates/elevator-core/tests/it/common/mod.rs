//! The random-stream machinery the property tests share: the device a
//! queue is built for, the steps of a stream (submitting random bios,
//! plugging, dispatching, completing, requeueing, time passing) and a
//! [`Model`] that runs them on a queue and drains it.

use elevator_core::{
    Bio, BioFlags, Dispatch, IoContext, IoPrio, Limits, Op, PrioClass, Queue, QueueConfig,
    RequestId,
};
use proptest::prelude::*;

/// The device and queue a stream runs on.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub lbs: u32,
    pub max_sectors: u32,
    pub max_segments: u16,
    pub chunk_sectors: u32,
    pub nr_requests: u32,
    pub queue_depth: u32,
    pub nomerges: u8,
    pub rotational: bool,
}

/// A queue under `sched` as `s` describes it, with 4 KiB segments, 512 MiB
/// and at most 64 bios.
pub fn make_queue(s: &Setup, sched: &str) -> Queue {
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
        nomerges: s.nomerges,
        max_bios: Some(64),
        rotational: s.rotational,
    };
    Queue::with_scheduler(cfg, sched).expect("valid setup")
}

/// A random bio, as drawn; [`make_bio`] makes it.
#[derive(Clone, Copy, Debug)]
pub struct Submit {
    pub op: u8,
    pub block: u16,
    pub blocks: u16,
    pub flags: u8,
    pub prio: u8,
    pub ctx: u8,
}

pub fn submit() -> impl Strategy<Value = Submit> {
    (0u8..20, 0u16..96, 1u16..24, 0u8..40, 0u8..8, 0u8..3).prop_map(
        |(op, block, blocks, flags, prio, ctx)| Submit {
            op,
            block,
            blocks,
            flags,
            prio,
            ctx,
        },
    )
}

/// The bio `s` draws, on a device of `lbs`-byte blocks.
pub fn make_bio(lbs: u32, s: &Submit, token: u64) -> Bio {
    let bs = u64::from(lbs / 512);
    let op = match s.op {
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
        if s.flags & bit != 0 && (bit < 4 || s.flags >= 32) {
            f |= flag;
        }
    }
    let class = match s.prio {
        0 => PrioClass::Rt,
        7 => PrioClass::Idle,
        _ => PrioClass::Be,
    };
    let (sector, len) = if op == Op::Flush {
        (0, 0)
    } else {
        (u64::from(s.block) * bs, u32::from(s.blocks) * lbs)
    };
    Bio {
        op,
        sector,
        len,
        flags: f,
        ctx: IoContext(u32::from(s.ctx)),
        prio: IoPrio::new(class, 4).expect("level 4"),
        token,
    }
}

/// One step of a stream: how a completion fails is `Fail`'s to say, and a
/// test's own steps are `Extra`.
#[derive(Clone, Debug)]
pub enum Step<Fail, Extra> {
    Submit(Submit),
    Plug,
    Unplug,
    Dispatch,
    Complete { pick: u8, fail: Fail },
    Requeue { pick: u8 },
    Advance(u16),
    Extra(Extra),
}

/// A queue driven by a stream: its clock, the next bio's token and the
/// requests in flight.
pub struct Driven {
    pub q: Queue,
    pub setup: Setup,
    pub now: u64,
    pub next_token: u64,
    pub in_flight: Vec<RequestId>,
}

impl Driven {
    pub fn new(setup: Setup, sched: &str) -> Driven {
        Driven {
            q: make_queue(&setup, sched),
            setup,
            now: 0,
            next_token: 0,
            in_flight: vec![],
        }
    }

    /// Where `pick` falls among the requests in flight, if any are.
    fn pick(&self, pick: u8) -> Option<usize> {
        (!self.in_flight.is_empty()).then(|| usize::from(pick) % self.in_flight.len())
    }
}

/// What a test makes of a stream: it owns a [`Driven`] queue and says what
/// to do with bios, dispatches, completions and its own steps; [`run`] and
/// [`drain`] do the rest.
///
/// [`run`]: Model::run
/// [`drain`]: Model::drain_queue
pub trait Model {
    type Fail: Copy;
    type Extra;

    fn driven(&mut self) -> &mut Driven;
    /// A submit step's bio, with its token.
    fn submit(&mut self, bio: Bio);
    /// A dispatch step.
    fn dispatch(&mut self);
    /// Complete the `idx`th request in flight, failing it as `fail` says.
    fn complete(&mut self, idx: usize, fail: Self::Fail);
    /// One of the test's own steps.
    fn extra(&mut self, extra: &Self::Extra);
    /// `id`, dispatched while draining.
    fn drained(&mut self, id: RequestId);
    /// Nothing to dispatch while draining: complete something.
    fn stalled(&mut self);

    /// Run `step`, then check the queue's invariants.
    fn run(&mut self, step: &Step<Self::Fail, Self::Extra>) {
        match step {
            Step::Submit(s) => {
                let d = self.driven();
                let token = d.next_token;
                d.next_token += 1;
                let bio = make_bio(d.setup.lbs, s, token);
                self.submit(bio);
            }
            Step::Plug => self.driven().q.plug(),
            Step::Unplug => {
                let d = self.driven();
                d.q.unplug(d.now);
            }
            Step::Dispatch => self.dispatch(),
            Step::Complete { pick, fail } => {
                if let Some(idx) = self.driven().pick(*pick) {
                    self.complete(idx, *fail);
                }
            }
            Step::Requeue { pick } => {
                let d = self.driven();
                if let Some(idx) = d.pick(*pick) {
                    let id = d.in_flight.swap_remove(idx);
                    d.q.requeue(id).unwrap();
                }
            }
            Step::Advance(ms) => self.driven().now += u64::from(*ms) * 1_000_000,
            Step::Extra(extra) => self.extra(extra),
        }
        self.driven().q.check_invariants();
    }

    /// Unplug, then dispatch (waiting when told to) and complete until the
    /// queue is idle; with `check_invariants`, check them after each turn.
    fn drain_queue(&mut self, check_invariants: bool) {
        let d = self.driven();
        d.q.unplug(d.now);
        let mut guard = 0;
        while !self.driven().q.is_idle() {
            guard += 1;
            assert!(guard < 100_000, "queue does not drain");
            let d = self.driven();
            match d.q.dispatch(d.now) {
                Dispatch::Request(id) => self.drained(id),
                Dispatch::WaitUntil(t) => d.now = t,
                Dispatch::Blocked | Dispatch::Empty => self.stalled(),
            }
            if check_invariants {
                self.driven().q.check_invariants();
            }
        }
    }
}
