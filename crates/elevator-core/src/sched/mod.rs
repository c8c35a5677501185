//! I/O schedulers: the [`Scheduler`] trait, modelled on the kernel's elevator
//! operations, and the schedulers elevator ships, one file each.
//!
//! The queue owns requests, merging (the `last_merge` cache, the back-merge
//! hash, plugging), tags and limits. A scheduler owns the order: it holds the
//! requests the queue inserts, nominates front-merge candidates from its sorted
//! structure, names a request's neighbours for request-into-request merges, and
//! picks what to dispatch next. Its per-request state lives in arrays indexed by
//! [`RequestId::index`], sized by [`Scheduler::resize`], so nothing allocates
//! per I/O.
//!
//! The [`Scheduler`] methods that several schedulers write alike come from
//! two macros here: `table_tunables!` (`queued` and the tunable lookups from
//! a scheduler's table) and `scan_recent_merges!` (merge candidates by
//! scanning the newest requests).
//!
//! | name | file | what it does |
//! |---|---|---|
//! | `none` | `none.rs` | FIFO, no sorting (Linux `none`) |
//! | `mq-deadline` | `deadline.rs` | per-direction sector sweep with FIFO deadlines and priority levels, over B+trees |
//! | `deadline-rbtree` | `deadline.rs` | the same over red-black trees, Linux's structure, for comparison |
//! | `deadline-list` | `deadline_list.rs` | the same over O(N) sorted lists: the pre-2002 deadline, whose insert and front-merge lookup walk the list |
//! | `cfq` | `cfq/` | per-process time slices with idling (Linux 3.x/4.x CFQ), and a fix for its idling on deep seeky queues |
//! | `bfq` | `bfq/` | per-process budgets served by B-WF2Q+ in virtual time, weighted by priority |
//! | `kyber` | `kyber.rs` | latency targets per operation class, enforced by token depths |
//!
//! Schedulers written outside elevator (in Python, through the bindings)
//! come in as [`plugin::PluginScheduler`]s, chosen by name from the
//! [`Plugins`] a run is given ([`AnyScheduler::by_name_in`]).

/// The [`Scheduler`] methods every scheduler writes alike, from its tunable
/// table and its `queued` count: `queued`, `tunables`, `get_tunable` and
/// `set_tunable`. `$table` is the [`crate::tunable::Tunable`] table, `$specs`
/// its [`TunableSpec`] listing; `$owner` (a field, default the scheduler) is
/// what the table's accessors read and write. Errors name the scheduler by
/// [`Scheduler::name`].
macro_rules! table_tunables {
    ($table:expr, $specs:expr $(, $owner:ident)?) => {
        #[inline]
        fn queued(&self) -> u32 {
            self.queued
        }

        table_tunables!(lookup_only: $table, $specs $(, $owner)?);
    };
    (lookup_only: $table:expr, $specs:expr $(, $owner:ident)?) => {
        fn tunables(&self) -> &'static [$crate::tunable::TunableSpec] {
            &$specs
        }

        fn get_tunable(&self, name: &str) -> Result<u64, $crate::error::TunableError> {
            $crate::tunable::get(&$table, self.name(), &(*self)$(.$owner)?, name)
        }

        fn set_tunable(
            &mut self,
            name: &str,
            value: u64,
        ) -> Result<(), $crate::error::TunableError> {
            $crate::tunable::set(&$table, self.name(), &mut (*self)$(.$owner)?, name, value)
        }
    };
}

/// The [`Scheduler`] methods of a scheduler whose merge candidates are its
/// most recent requests (Linux without an elevator): `merge_lookup` scans
/// [`none::SCAN_DEPTH`] of them, newest first, along `$fifo` (a
/// [`crate::index::ListHead`] in arrival order) threaded through `$links`.
macro_rules! scan_recent_merges {
    ($fifo:ident, $links:ident) => {
        #[inline]
        fn merge_lookup(&self) -> MergeLookup {
            MergeLookup::ScanRecent($crate::sched::none::SCAN_DEPTH)
        }

        #[inline]
        fn newest(&self) -> Option<RequestId> {
            self.$fifo.back().map(RequestId::from_raw)
        }

        #[inline]
        fn older(&self, rq: RequestId) -> Option<RequestId> {
            self.$links.prev(rq.raw()).map(RequestId::from_raw)
        }
    };
}

pub mod bfq;
pub mod cfq;
pub mod deadline;
pub mod deadline_list;
pub mod kyber;
pub mod none;
pub mod plugin;

use crate::bio::{Bio, IoContext, Nanos};
use crate::error::{TunableError, UnknownScheduler};
use crate::request::{RequestId, Requests};
use crate::tunable::TunableSpec;

pub use bfq::Bfq;
pub use cfq::Cfq;
pub use deadline::{Deadline, MqDeadline, RbDeadline};
pub use deadline_list::{DeadlineList, SortedList};
pub use kyber::Kyber;
pub use none::Noop;
pub use plugin::{Plugin, PluginScheduler, Plugins};

/// How the queue looks for a request a bio can merge into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeLookup {
    /// The elevator path: the `last_merge` cache, the back-merge hash, then the
    /// scheduler's front-merge lookup; neighbour merges after a bio merge, and
    /// merges when a request is inserted. Linux does this for any elevator.
    Elevator,
    /// Scan the most recently queued requests, newest first, at most this many
    /// (Linux without an elevator scans its software queue, at most 8).
    ScanRecent(u8),
}

/// Which end of a request a bio merged onto.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeKind {
    /// The bio starts where the request ended.
    Back,
    /// The bio ends where the request started: the request's start moved.
    Front,
}

/// What a scheduler's dispatch answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedDispatch {
    /// Send this request to the device. The scheduler has let go of it.
    Request(RequestId),
    /// Nothing now; ask again at this time (the scheduler is idling on purpose)
    /// or earlier if a request arrives or completes.
    WaitUntil(Nanos),
    /// Nothing to dispatch now. With work queued, it waits for a completion.
    Nothing,
}

/// An I/O scheduler, modelled on the kernel's elevator operations.
///
/// The queue calls these in a fixed protocol: a request is `insert`ed once,
/// then either handed back by `dispatch` or merged away (`requests_merged`
/// with it as `gone`); a dispatched request is `completed` once. Between
/// insert and dispatch the scheduler may be asked about merges.
pub trait Scheduler {
    /// The scheduler's Linux name.
    fn name(&self) -> &'static str;

    /// Size per-request state for tags `0..nr_requests`. Called before the
    /// first insert and whenever the tag pool grows (only while empty).
    fn resize(&mut self, nr_requests: u32);

    /// What the device is: whether it has moving parts (Linux `rotational`)
    /// and how many requests it takes at once. Called once, before tunables
    /// are set by name, so defaults that depend on it (CFQ's `slice_idle` is 0
    /// on non-rotational devices) can be overridden.
    fn set_device(&mut self, _rotational: bool, _queue_depth: u32) {}

    /// How the queue looks for merge candidates.
    fn merge_lookup(&self) -> MergeLookup {
        MergeLookup::Elevator
    }

    /// Whether `bio` may merge into `rq`, beyond the queue's own rules
    /// (Linux `allow_merge`; CFQ uses it to keep processes apart).
    fn allow_bio_merge(&self, _rqs: &Requests, _rq: RequestId, _bio: &Bio) -> bool {
        true
    }

    /// Whether `next` may merge into `rq`, beyond the queue's own rules.
    fn allow_request_merge(&self, _rqs: &Requests, _rq: RequestId, _next: RequestId) -> bool {
        true
    }

    /// A queued request that starts exactly where `bio` ends, for a front
    /// merge (Linux `request_merge`), looked up in the scheduler's sorted
    /// structure. `None` if there is none or front merges are off.
    fn front_merge_candidate(&self, _rqs: &Requests, _bio: &Bio) -> Option<RequestId> {
        None
    }

    /// For [`MergeLookup::ScanRecent`]: the most recently queued request.
    fn newest(&self) -> Option<RequestId> {
        None
    }

    /// For [`MergeLookup::ScanRecent`]: the request queued just before `rq`.
    fn older(&self, _rq: RequestId) -> Option<RequestId> {
        None
    }

    /// The next request after `rq` in sort order (Linux `next_request`), a
    /// candidate to merge into `rq` after a back merge.
    fn next_request(&self, _rqs: &Requests, _rq: RequestId) -> Option<RequestId> {
        None
    }

    /// The request before `rq` in sort order (Linux `former_request`), a
    /// candidate for `rq` to merge into after a front merge.
    fn prev_request(&self, _rqs: &Requests, _rq: RequestId) -> Option<RequestId> {
        None
    }

    /// Take `rq`.
    fn insert(&mut self, rqs: &Requests, rq: RequestId, now: Nanos);

    /// A bio merged into queued `rq` at `kind`'s end (Linux `request_merged`).
    /// After a front merge `rq`'s start changed: re-sort it.
    fn bio_merged(&mut self, rqs: &Requests, rq: RequestId, kind: MergeKind);

    /// `gone` was merged into `into` and is being freed. If `gone_queued`,
    /// the scheduler holds `gone` and must let go of it; otherwise `gone` was
    /// never inserted (an insert-time merge). `into` is queued.
    fn requests_merged(
        &mut self,
        rqs: &Requests,
        into: RequestId,
        gone: RequestId,
        gone_queued: bool,
    );

    /// Pick the next request for the device.
    ///
    /// `rqs` also tells the state of the tag pool ([`Requests::exhausted`]).
    /// A scheduler that idles for a queue must not answer
    /// [`SchedDispatch::WaitUntil`] while every tag is in use and nothing it
    /// dispatched is in the device: the queue's owner cannot allocate its
    /// next request until a tag is freed, no completion will free one, and
    /// the wait could only run out (other queues' requests, held back by the
    /// wait, hold the tags). Engines ask again after submissions and
    /// completions, so the answer follows the pool.
    fn dispatch(&mut self, rqs: &Requests, now: Nanos) -> SchedDispatch;

    /// A request this scheduler dispatched completed.
    fn completed(&mut self, _rqs: &Requests, _rq: RequestId, _now: Nanos) {}

    /// The submitter `ctx` is gone (a process exited, a connection closed):
    /// per-context state may go, and nothing may wait on it any more.
    fn context_gone(&mut self, _ctx: IoContext, _now: Nanos) {}

    /// Whether it holds requests.
    fn has_work(&self) -> bool {
        self.queued() > 0
    }

    /// Number of requests it holds (inserted, not yet dispatched).
    fn queued(&self) -> u32;

    /// Its tunables, with Linux names and defaults. Each scheduler declares
    /// them once, in a table of [`crate::tunable::Tunable`]s from which this
    /// list, its defaults, `get_tunable` and `set_tunable` all come.
    fn tunables(&self) -> &'static [TunableSpec];

    /// Read a tunable by name.
    fn get_tunable(&self, name: &str) -> Result<u64, TunableError>;

    /// Set a tunable by name (value in the tunable's unit). A refused value
    /// changes nothing.
    fn set_tunable(&mut self, name: &str, value: u64) -> Result<(), TunableError>;
}

/// Any of elevator's schedulers, chosen by name at run time and dispatched
/// without dynamic calls.
#[derive(Clone, Debug)]
pub enum AnyScheduler {
    /// `none`.
    None(Noop),
    /// `mq-deadline`.
    MqDeadline(MqDeadline),
    /// `deadline-list`.
    DeadlineList(DeadlineList),
    /// `deadline-rbtree`.
    DeadlineRbtree(RbDeadline),
    /// `cfq`.
    Cfq(Box<Cfq>),
    /// `bfq`.
    Bfq(Box<Bfq>),
    /// `kyber`.
    Kyber(Box<Kyber>),
    /// A scheduler from outside elevator ([`plugin`]), behind a dynamic call.
    Plugin(Box<dyn PluginScheduler>),
}

/// The names [`AnyScheduler::by_name`] takes (besides aliases).
pub const SCHEDULER_NAMES: [&str; 7] = [
    "none",
    "mq-deadline",
    "deadline-rbtree",
    "deadline-list",
    "cfq",
    "bfq",
    "kyber",
];

/// Other names Linux has used for two of them: (alias, the scheduler it
/// runs). `noop` and `deadline` were the legacy (single-queue) schedulers
/// that blk-mq's `none` and `mq-deadline` replaced.
pub const SCHEDULER_ALIASES: [(&str, &str); 2] = [("noop", "none"), ("deadline", "mq-deadline")];

/// The scheduler `name` runs: itself if it is one of [`SCHEDULER_NAMES`],
/// the scheduler an alias stands for ([`SCHEDULER_ALIASES`]), or `None`.
pub fn canonical_scheduler(name: &str) -> Option<&'static str> {
    SCHEDULER_NAMES
        .iter()
        .find(|n| **n == name)
        .or_else(|| {
            SCHEDULER_ALIASES
                .iter()
                .find(|(alias, _)| *alias == name)
                .map(|(_, n)| n)
        })
        .copied()
}

/// Every scheduler name with its aliases, as errors and listings give
/// them: `none (alias: noop), mq-deadline (alias: deadline), ...`.
pub fn scheduler_list() -> String {
    SCHEDULER_NAMES
        .iter()
        .map(|n| {
            let aliases: Vec<&str> = SCHEDULER_ALIASES
                .iter()
                .filter(|(_, to)| to == n)
                .map(|(alias, _)| *alias)
                .collect();
            if aliases.is_empty() {
                n.to_string()
            } else {
                format!("{n} (alias: {})", aliases.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl AnyScheduler {
    /// A scheduler by its name (one of [`SCHEDULER_NAMES`], or an alias
    /// of [`SCHEDULER_ALIASES`]), with default tunables; an unknown name
    /// is refused with the nearest known one and the list.
    pub fn by_name(name: &str) -> Result<AnyScheduler, UnknownScheduler> {
        match canonical_scheduler(name) {
            Some("none") => Ok(AnyScheduler::None(Noop::new())),
            Some("mq-deadline") => Ok(AnyScheduler::MqDeadline(MqDeadline::new())),
            Some("deadline-list") => Ok(AnyScheduler::DeadlineList(DeadlineList::new())),
            Some("deadline-rbtree") => Ok(AnyScheduler::DeadlineRbtree(RbDeadline::new())),
            Some("cfq") => Ok(AnyScheduler::Cfq(Box::default())),
            Some("bfq") => Ok(AnyScheduler::Bfq(Box::default())),
            Some("kyber") => Ok(AnyScheduler::Kyber(Box::default())),
            _ => Err(Self::unknown(name, &Plugins::default())),
        }
    }

    /// [`AnyScheduler::by_name`], or the plugin of that name among
    /// `plugins` (built by [`Plugin::build`]); an unknown name is refused
    /// with the nearest of both and both lists.
    pub fn by_name_in(name: &str, plugins: &Plugins) -> Result<AnyScheduler, UnknownScheduler> {
        if canonical_scheduler(name).is_none()
            && let Some(plugin) = plugins.find(name)
        {
            return Ok(AnyScheduler::Plugin(plugin.build()));
        }
        Self::by_name(name).map_err(|_| Self::unknown(name, plugins))
    }

    /// Whether `name` is a built-in scheduler, an alias, or one of `plugins`.
    pub fn known_in(name: &str, plugins: &Plugins) -> bool {
        canonical_scheduler(name).is_some() || plugins.find(name).is_some()
    }

    /// The plugin's failure, if this is a plugin that failed
    /// ([`PluginScheduler::failure`]).
    pub fn plugin_failure(&self) -> Option<String> {
        match self {
            AnyScheduler::Plugin(p) => p.failure(),
            _ => None,
        }
    }

    fn unknown(name: &str, plugins: &Plugins) -> UnknownScheduler {
        let every = SCHEDULER_NAMES
            .iter()
            .chain(SCHEDULER_ALIASES.iter().map(|(alias, _)| alias))
            .copied()
            .chain(plugins.names());
        let mut known = scheduler_list();
        for p in plugins.names() {
            known.push_str(", ");
            known.push_str(p);
        }
        UnknownScheduler {
            name: name.to_string(),
            hint: crate::spelling::did_you_mean(name, every),
            known,
        }
    }
}

/// `$body` on whichever scheduler `$self` holds, bound to `$s`; with
/// `plugin $p => $pbody`, a plugin's arm is its own (the built-ins' hottest
/// answers are kept free of a dynamic call).
macro_rules! each {
    ($self:expr, $s:ident => $body:expr) => {
        each!($self, $s => $body, plugin $s => $body)
    };
    ($self:expr, $s:ident => $body:expr, plugin $p:pat => $pbody:expr) => {
        match $self {
            AnyScheduler::None($s) => $body,
            AnyScheduler::MqDeadline($s) => $body,
            AnyScheduler::DeadlineList($s) => $body,
            AnyScheduler::DeadlineRbtree($s) => $body,
            AnyScheduler::Cfq($s) => $body,
            AnyScheduler::Bfq($s) => $body,
            AnyScheduler::Kyber($s) => $body,
            AnyScheduler::Plugin($p) => $pbody,
        }
    };
}

impl Scheduler for AnyScheduler {
    fn name(&self) -> &'static str {
        each!(self, s => s.name())
    }
    fn resize(&mut self, nr_requests: u32) {
        each!(self, s => s.resize(nr_requests))
    }
    fn set_device(&mut self, rotational: bool, queue_depth: u32) {
        each!(self, s => s.set_device(rotational, queue_depth))
    }
    #[inline]
    fn merge_lookup(&self) -> MergeLookup {
        // A plugin finds merges through the queue's own cache and hash: the
        // scan of recent requests (newest, older) is for built-ins, kept
        // free of dynamic calls in the queue's hottest loop.
        each!(self, s => s.merge_lookup(), plugin _ => MergeLookup::Elevator)
    }
    #[inline]
    fn allow_bio_merge(&self, rqs: &Requests, rq: RequestId, bio: &Bio) -> bool {
        each!(self, s => s.allow_bio_merge(rqs, rq, bio))
    }
    #[inline]
    fn allow_request_merge(&self, rqs: &Requests, rq: RequestId, next: RequestId) -> bool {
        each!(self, s => s.allow_request_merge(rqs, rq, next))
    }
    #[inline]
    fn front_merge_candidate(&self, rqs: &Requests, bio: &Bio) -> Option<RequestId> {
        each!(self, s => s.front_merge_candidate(rqs, bio))
    }
    #[inline]
    fn newest(&self) -> Option<RequestId> {
        each!(self, s => s.newest(), plugin _ => None)
    }
    #[inline]
    fn older(&self, rq: RequestId) -> Option<RequestId> {
        each!(self, s => s.older(rq), plugin _ => None)
    }
    #[inline]
    fn next_request(&self, rqs: &Requests, rq: RequestId) -> Option<RequestId> {
        each!(self, s => s.next_request(rqs, rq))
    }
    #[inline]
    fn prev_request(&self, rqs: &Requests, rq: RequestId) -> Option<RequestId> {
        each!(self, s => s.prev_request(rqs, rq))
    }
    #[inline]
    fn insert(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        each!(self, s => s.insert(rqs, rq, now))
    }
    #[inline]
    fn bio_merged(&mut self, rqs: &Requests, rq: RequestId, kind: MergeKind) {
        each!(self, s => s.bio_merged(rqs, rq, kind))
    }
    #[inline]
    fn requests_merged(&mut self, rqs: &Requests, into: RequestId, gone: RequestId, q: bool) {
        each!(self, s => s.requests_merged(rqs, into, gone, q))
    }
    #[inline]
    fn dispatch(&mut self, rqs: &Requests, now: Nanos) -> SchedDispatch {
        each!(self, s => s.dispatch(rqs, now))
    }
    #[inline]
    fn completed(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        each!(self, s => s.completed(rqs, rq, now))
    }
    fn context_gone(&mut self, ctx: IoContext, now: Nanos) {
        each!(self, s => s.context_gone(ctx, now))
    }
    #[inline]
    fn has_work(&self) -> bool {
        each!(self, s => s.has_work())
    }
    #[inline]
    fn queued(&self) -> u32 {
        each!(self, s => s.queued())
    }
    fn tunables(&self) -> &'static [TunableSpec] {
        each!(self, s => s.tunables())
    }
    fn get_tunable(&self, name: &str) -> Result<u64, TunableError> {
        each!(self, s => s.get_tunable(name))
    }
    fn set_tunable(&mut self, name: &str, value: u64) -> Result<(), TunableError> {
        each!(self, s => s.set_tunable(name, value))
    }
}

#[cfg(test)]
mod names {
    use super::*;

    #[test]
    fn aliases_run_their_scheduler_and_are_listed_with_it() {
        for (alias, to) in SCHEDULER_ALIASES {
            assert_eq!(canonical_scheduler(alias), Some(to));
            let s = AnyScheduler::by_name(alias).expect("alias");
            assert_eq!(s.name(), to);
        }
        for name in SCHEDULER_NAMES {
            assert_eq!(canonical_scheduler(name), Some(name));
        }
        assert_eq!(canonical_scheduler("all"), None);
        let list = scheduler_list();
        assert!(list.starts_with("none (alias: noop), mq-deadline (alias: deadline), "));
    }

    #[test]
    fn an_unknown_name_gets_the_nearest_and_the_list() {
        let e = AnyScheduler::by_name("cfqq")
            .expect_err("unknown")
            .to_string();
        assert_eq!(
            e,
            format!(
                "unknown scheduler 'cfqq' (did you mean cfq?); known: {}",
                scheduler_list()
            )
        );
        let e = AnyScheduler::by_name("nosuch")
            .expect_err("unknown")
            .to_string();
        assert!(e.starts_with("unknown scheduler 'nosuch'; known: none (alias: noop)"));
        let e = AnyScheduler::by_name("nop")
            .expect_err("unknown")
            .to_string();
        assert!(
            e.contains("(did you mean none?)") || e.contains("(did you mean noop?)"),
            "{e}"
        );
    }
}
