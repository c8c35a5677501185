//! fio's `verify` as the worker sees it: which blocks were written (and
//! with which generation), and which are to be read back and checked.
//!
//! The log keeps each completed write not yet verified, by device byte
//! offset: a later write over any part of a logged block replaces it (the
//! older block is dropped, since only part of it would still be there). It
//! exists only when verify is on; it is the one structure that grows per
//! I/O. Every write of a run carries generation 0 (see [`GENERATION`]).
//!
//! Two writes to one block in flight at once (random I/O without a random
//! map, `iodepth` > 1) may land in either order; the later issued is the one
//! logged, so such a job can report false failures, as fio warns.

use std::collections::{BTreeMap, VecDeque};

use crate::verify::{VerifyKind, VerifySpec};

/// The generation every write carries. A single value keeps `verify_only`
/// simple and exact: a run that only checks replays the job's I/O choices
/// without issuing them and expects generation 0 wherever the job would have
/// written, however many times it wrote each block. Stale data from an
/// earlier write of the same offset by the same job is therefore not told
/// apart (the block is the same); data of another offset, job or seed is.
pub const GENERATION: u64 = 0;

/// Blocks written, and blocks to read back.
#[derive(Clone, Debug)]
pub(crate) struct VerifyLog {
    /// Offset → (length, generation) of completed, unverified writes.
    written: BTreeMap<u64, (u32, u64)>,
    /// Blocks to read back next, in offset order.
    queue: VecDeque<(u64, u32, u64)>,
    /// Writes issued since the last read-back (`verify_backlog`).
    since_backlog: u64,
    max_len: u64,
}

impl VerifyLog {
    pub(crate) fn new(max_len: u64) -> VerifyLog {
        VerifyLog {
            written: BTreeMap::new(),
            queue: VecDeque::new(),
            since_backlog: 0,
            max_len: max_len.max(1),
        }
    }

    /// A write of `len` bytes at byte `offset` completed; `ok`: whether it
    /// succeeded (a failed write leaves what was there unknown: nothing
    /// there is checked).
    pub(crate) fn written(&mut self, offset: u64, len: u32, generation: u64, ok: bool) {
        let end = offset.saturating_add(u64::from(len));
        let from = offset.saturating_sub(self.max_len - 1);
        let mut overlapped = Vec::new();
        for (&o, &(l, _)) in self.written.range(from..end) {
            if o.saturating_add(u64::from(l)) > offset {
                overlapped.push(o);
            }
        }
        for o in overlapped {
            self.written.remove(&o);
        }
        if ok {
            self.written.insert(offset, (len, generation));
        }
        debug_assert!(!ok || self.written.contains_key(&offset));
    }

    /// A write was issued: whether `backlog` writes have now been issued
    /// since the last read-back (0: never).
    pub(crate) fn issued_write(&mut self, backlog: u64) -> bool {
        self.since_backlog += 1;
        backlog > 0 && self.since_backlog >= backlog
    }

    /// Queue every logged block for reading back (the log empties).
    pub(crate) fn queue_all(&mut self) {
        self.since_backlog = 0;
        let written = std::mem::take(&mut self.written);
        self.queue
            .extend(written.into_iter().map(|(o, (l, g))| (o, l, g)));
    }

    /// Whether blocks wait to be read back.
    #[inline]
    pub(crate) fn has_next(&self) -> bool {
        !self.queue.is_empty()
    }

    /// The next block to read back: (byte offset, length, generation).
    pub(crate) fn next(&mut self) -> Option<(u64, u32, u64)> {
        self.queue.pop_front()
    }
}

/// The verify spec of `job` (`None` without `verify`, or with `null`/`0`),
/// with its random payloads drawn from `seed`; or what is wrong with it.
pub(crate) fn spec(job: &crate::job::JobSpec, seed: u64) -> Result<Option<VerifySpec>, String> {
    let Some(name) = &job.verify else {
        return Ok(None);
    };
    let Some(kind) = VerifyKind::parse_option(name)? else {
        return Ok(None);
    };
    let interval = match job.verify_interval {
        None => None,
        Some(i) => {
            Some(usize::try_from(i).map_err(|_| format!("verify_interval={i} is too large"))?)
        }
    };
    let spec = VerifySpec {
        kind,
        pattern: job.verify_pattern.clone(),
        seed,
        interval,
        format: job.verify_format,
        dump: job
            .verify_dump
            .then(|| crate::verify::dump_base(job.filename.as_deref(), &job.name)),
    };
    if kind == VerifyKind::Pattern && spec.pattern.as_ref().is_none_or(|p| p.is_empty()) {
        return Err("verify=pattern needs a verify_pattern".into());
    }
    Ok(Some(spec))
}
