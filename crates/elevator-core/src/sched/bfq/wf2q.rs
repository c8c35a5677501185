//! B-WF2Q+ service trees: one per priority class, each with its own virtual
//! time, over queue handles.
//!
//! Every active queue (busy, or in service) is an *entity* with a weight, a
//! virtual start time `S` and finish time `F = S + budget / weight`. The
//! class's virtual time `V` grows by `service / Σweights` for every sector
//! served to the class. An entity is *eligible* when `S ≤ V`; the next to
//! serve is the eligible entity with the smallest `F`. If none is eligible,
//! `V` jumps to the smallest `S` (so `V` never lags the entities).
//!
//! Eligibility is kept with two trees over one node store: `waiting`, keyed
//! by `S`, holds entities not yet eligible; `eligible`, keyed by `F`, the rest.
//! Picking moves the entities that became eligible (`S ≤ V`) across, then
//! takes the first of `eligible`: O(log n) per entity moved or picked.
//!
//! When an entity goes idle its `F` is kept; if it becomes active again while
//! `F > V`, it restarts at `S = F`: going idle and coming back earns a queue
//! no service it did not wait for (Linux keeps such entities on an "idle
//! tree" until `V` passes them; keeping `F` and taking `max(V, F)` is the same
//! rule without the tree).
//!
//! Virtual times are integers: sectors × 2^[`VT_SHIFT`] / weight.

use crate::index::{RbForest, RbRoot};

/// Fixed-point shift of virtual times.
pub(super) const VT_SHIFT: u32 = 16;

/// Service amounts are capped here so that the shifted value fits in `u64`.
const SERVICE_CAP: u64 = 1 << 40;

/// `service / weight` in virtual-time units.
#[inline]
fn vt(service: u64, weight: u64) -> u64 {
    (service.min(SERVICE_CAP) << VT_SHIFT) / weight.max(1)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Not on a tree (idle, or in service).
    Out,
    Waiting,
    Eligible,
}

#[derive(Clone, Copy, Debug)]
struct Entity {
    start: u64,
    finish: u64,
    weight: u64,
    class: u8,
    place: Place,
    /// Counted in its class's weight sum.
    active: bool,
}

const NEW_ENTITY: Entity = Entity {
    start: 0,
    finish: 0,
    weight: 1,
    class: 0,
    place: Place::Out,
    active: false,
};

#[derive(Clone, Copy, Debug, Default)]
struct Tree {
    vtime: u64,
    wsum: u64,
    /// Active entities, including one in service.
    active: u32,
    eligible: RbRoot,
    waiting: RbRoot,
}

/// The service trees of the three classes (RT, BE, IDLE).
#[derive(Clone, Debug)]
pub(super) struct Wf2q {
    nodes: RbForest,
    entities: Vec<Entity>,
    trees: [Tree; 3],
}

impl Wf2q {
    pub(super) fn new() -> Wf2q {
        Wf2q {
            nodes: RbForest::new(0),
            entities: Vec::new(),
            trees: [Tree::default(); 3],
        }
    }

    /// Room for handles `0..n`.
    pub(super) fn grow(&mut self, n: usize) {
        self.nodes.grow(n);
        if self.entities.len() < n {
            self.entities.resize(n, NEW_ENTITY);
        }
    }

    /// Forget handle `h`'s history: it names a new queue of `class`.
    pub(super) fn reset(&mut self, h: u32, class: usize) {
        debug_assert!(
            !self.entities[h as usize].active,
            "reset of an active entity"
        );
        self.entities[h as usize] = Entity {
            class: class as u8,
            ..NEW_ENTITY
        };
    }

    /// The class's virtual time.
    #[cfg(test)]
    pub(super) fn vtime(&self, class: usize) -> u64 {
        self.trees[class].vtime
    }

    /// Whether the class has active entities waiting on its trees.
    #[inline]
    pub(super) fn has_busy(&self, class: usize) -> bool {
        let t = &self.trees[class];
        !t.eligible.is_empty() || !t.waiting.is_empty()
    }

    /// Active entities (busy or in service) over all classes.
    #[inline]
    pub(super) fn active_total(&self) -> u32 {
        self.trees.iter().map(|t| t.active).sum()
    }

    /// Classes with an active entity.
    #[inline]
    pub(super) fn classes_active(&self) -> u32 {
        self.trees.iter().map(|t| u32::from(t.active > 0)).sum()
    }

    /// The first busy entity of `class` in service order: the eligible ones
    /// by finish time, then the waiting ones by start time.
    #[inline]
    pub(super) fn first_busy(&self, class: usize) -> Option<u32> {
        let t = &self.trees[class];
        self.nodes
            .first(&t.eligible)
            .or_else(|| self.nodes.first(&t.waiting))
    }

    /// The busy entity after `h` in [`Wf2q::first_busy`]'s order.
    #[inline]
    pub(super) fn next_busy(&self, h: u32) -> Option<u32> {
        let e = &self.entities[h as usize];
        match e.place {
            Place::Eligible => self
                .nodes
                .next(h)
                .or_else(|| self.nodes.first(&self.trees[e.class as usize].waiting)),
            Place::Waiting => self.nodes.next(h),
            Place::Out => None,
        }
    }

    /// Take busy `h` off its tree without serving it (it stays active, as
    /// one in service does, until deactivated).
    pub(super) fn remove_busy(&mut self, h: u32) {
        let e = &mut self.entities[h as usize];
        let t = &mut self.trees[e.class as usize];
        match e.place {
            Place::Eligible => self.nodes.remove(&mut t.eligible, h),
            Place::Waiting => self.nodes.remove(&mut t.waiting, h),
            Place::Out => debug_assert!(false, "entity {h} is not on a tree"),
        }
        e.place = Place::Out;
    }

    /// The weight `h` is counted with.
    #[inline]
    pub(super) fn weight(&self, h: u32) -> u64 {
        self.entities[h as usize].weight
    }

    fn enqueue(&mut self, h: u32) {
        let e = &mut self.entities[h as usize];
        let t = &mut self.trees[e.class as usize];
        if e.start <= t.vtime {
            e.place = Place::Eligible;
            self.nodes.insert(&mut t.eligible, h, e.finish);
        } else {
            e.place = Place::Waiting;
            self.nodes.insert(&mut t.waiting, h, e.start);
        }
    }

    /// `h` becomes busy with `budget` at `weight`. Without history (a new
    /// queue) it starts at `V`; otherwise at `max(V, F)`.
    pub(super) fn activate(&mut self, h: u32, budget: u64, weight: u64, history: bool) {
        let e = &mut self.entities[h as usize];
        debug_assert!(!e.active, "entity {h} activated twice");
        let t = &mut self.trees[e.class as usize];
        e.start = if history {
            t.vtime.max(e.finish)
        } else {
            t.vtime
        };
        e.weight = weight.max(1);
        e.finish = e.start + vt(budget, e.weight);
        e.active = true;
        t.wsum += e.weight;
        t.active += 1;
        self.enqueue(h);
    }

    /// In-service `h` was charged `charged` and stays busy: it restarts where
    /// that service ends, with its next `budget` at `weight`.
    pub(super) fn requeue(&mut self, h: u32, charged: u64, budget: u64, weight: u64) {
        let e = &mut self.entities[h as usize];
        debug_assert!(e.active && e.place == Place::Out, "requeue of entity {h}");
        let t = &mut self.trees[e.class as usize];
        e.start += vt(charged, e.weight);
        t.wsum = t.wsum - e.weight + weight.max(1);
        e.weight = weight.max(1);
        e.finish = e.start + vt(budget, e.weight);
        self.enqueue(h);
    }

    /// In-service `h` was charged `charged` and goes idle; its finish time is
    /// kept for when it comes back.
    pub(super) fn deactivate(&mut self, h: u32, charged: u64) {
        let e = &mut self.entities[h as usize];
        debug_assert!(
            e.active && e.place == Place::Out,
            "deactivate of entity {h}"
        );
        let t = &mut self.trees[e.class as usize];
        e.finish = e.start + vt(charged, e.weight);
        e.active = false;
        t.wsum -= e.weight;
        t.active -= 1;
    }

    /// The class received `service` sectors: advance its virtual time.
    #[inline]
    pub(super) fn served(&mut self, class: usize, service: u64) {
        let t = &mut self.trees[class];
        if t.wsum > 0 {
            t.vtime += vt(service, t.wsum);
        }
    }

    /// Take the next entity of `class` to serve (it stays active, off the
    /// trees, until requeued or deactivated).
    pub(super) fn pick(&mut self, class: usize) -> Option<u32> {
        let t = &mut self.trees[class];
        if t.eligible.is_empty() {
            let first = self.nodes.first(&t.waiting)?;
            t.vtime = t.vtime.max(self.nodes.key(first));
        }
        while let Some(w) = self.nodes.first(&t.waiting) {
            let e = &mut self.entities[w as usize];
            if e.start > t.vtime {
                break;
            }
            self.nodes.remove(&mut t.waiting, w);
            e.place = Place::Eligible;
            self.nodes.insert(&mut t.eligible, w, e.finish);
        }
        let h = self.nodes.first(&t.eligible)?;
        self.nodes.remove(&mut t.eligible, h);
        self.entities[h as usize].place = Place::Out;
        Some(h)
    }

    /// Check the trees against the entities.
    pub(super) fn check(&self) {
        for (c, t) in self.trees.iter().enumerate() {
            #[cfg(any(test, debug_assertions))]
            {
                self.nodes.check(&t.eligible);
                self.nodes.check(&t.waiting);
            }
            assert!(
                (t.eligible.len() + t.waiting.len()) as u32 <= t.active,
                "class {c}: more queued entities than active ones"
            );
            let (mut wsum, mut active) = (0, 0);
            for e in self
                .entities
                .iter()
                .filter(|e| e.active && e.class as usize == c)
            {
                wsum += e.weight;
                active += 1;
            }
            assert_eq!(wsum, t.wsum, "class {c}: weight sum out of date");
            assert_eq!(active, t.active, "class {c}: active count out of date");
            let mut cur = self.nodes.first(&t.waiting);
            while let Some(h) = cur {
                let e = &self.entities[h as usize];
                assert!(e.active && e.place == Place::Waiting && e.start == self.nodes.key(h));
                cur = self.nodes.next(h);
            }
            let mut cur = self.nodes.first(&t.eligible);
            while let Some(h) = cur {
                let e = &self.entities[h as usize];
                assert!(e.active && e.place == Place::Eligible && e.finish == self.nodes.key(h));
                cur = self.nodes.next(h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two always-busy entities with weights 80 and 10 and equal budgets:
    /// service follows the weights.
    #[test]
    fn weights_share_service() {
        let mut w = Wf2q::new();
        w.grow(2);
        w.reset(0, 1);
        w.reset(1, 1);
        w.activate(0, 100, 80, false);
        w.activate(1, 100, 10, false);
        let mut got = [0u64; 2];
        for _ in 0..900 {
            let h = w.pick(1).unwrap();
            w.served(1, 100);
            got[h as usize] += 100;
            let weight = w.weight(h);
            w.requeue(h, 100, 100, weight);
            w.check();
        }
        assert_eq!(got[0] + got[1], 90_000);
        assert!((79_000..=81_000).contains(&got[0]), "{got:?}");
    }

    /// An entity that goes idle and comes back at once gains nothing.
    #[test]
    fn idle_and_back_restarts_at_its_finish() {
        let mut w = Wf2q::new();
        w.grow(2);
        w.reset(0, 1);
        w.reset(1, 1);
        w.activate(0, 100, 10, false);
        w.activate(1, 100, 10, false);
        let h = w.pick(1).unwrap();
        w.served(1, 100);
        w.deactivate(h, 100);
        w.activate(h, 100, 10, true);
        // The other entity, not yet served, goes first.
        assert_eq!(w.pick(1), Some(1 - h));
        assert!(w.vtime(1) > 0);
        w.check();
    }
}
