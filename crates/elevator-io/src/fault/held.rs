//! Completions a [`FaultDevice`](super::FaultDevice) holds back until their
//! time (latency spikes, timeouts): at most one per tag, released once the
//! clock passes their time, at once when cancelled, or as `Offline` when the
//! device vanishes.

use elevator_core::{Nanos, Outcome, Status};

/// A completion held back until `due`.
#[derive(Clone, Copy, Debug)]
struct Held {
    tag: u32,
    outcome: Outcome,
    due: Nanos,
}

/// The completions held back, in no order (few: at most the queue depth).
#[derive(Debug, Default)]
pub(crate) struct HeldBack {
    items: Vec<Held>,
}

impl HeldBack {
    /// Room for `n` without allocating.
    pub(crate) fn with_capacity(n: usize) -> HeldBack {
        HeldBack {
            items: Vec::with_capacity(n),
        }
    }

    /// How many are held.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Hold `tag`'s `outcome` until `due`.
    pub(crate) fn hold(&mut self, tag: u32, outcome: Outcome, due: Nanos) {
        debug_assert!(
            !self.items.iter().any(|h| h.tag == tag),
            "tag {tag} held twice"
        );
        self.items.push(Held { tag, outcome, due });
    }

    /// The earliest time one is due.
    pub(crate) fn earliest(&self) -> Option<Nanos> {
        self.items.iter().map(|h| h.due).min()
    }

    /// Hand `done` every completion due by `now`; every one, as `Offline`,
    /// if the device is `gone`.
    pub(crate) fn release(&mut self, now: Nanos, gone: bool, done: &mut dyn FnMut(u32, Outcome)) {
        let mut k = 0;
        while k < self.items.len() {
            let h = self.items[k];
            if gone || h.due <= now {
                self.items.swap_remove(k);
                let outcome = if gone {
                    Outcome::Failed {
                        status: Status::Offline,
                        good_bytes: 0,
                    }
                } else {
                    h.outcome
                };
                done(h.tag, outcome);
            } else {
                k += 1;
            }
        }
    }

    /// Nobody waits any more: every one is due now, a timed-out one as
    /// `Cancelled` (its timer had not run out).
    pub(crate) fn cancel(&mut self) {
        for h in &mut self.items {
            h.due = 0;
            if let Outcome::Failed {
                status: status @ Status::TimedOut,
                ..
            } = &mut h.outcome
            {
                *status = Status::Cancelled;
            }
        }
    }
}
