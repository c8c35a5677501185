//! fio's think time: `thinktime` (a pause), `thinktime_spin` (the part of
//! it spent busy on the CPU), `thinktime_blocks` with
//! `thinktime_blocks_type` (after how many I/Os issued, or completed) and
//! `thinktime_iotime` (after how much time doing I/O).
//!
//! As fio does, a job due to think stops issuing, waits for all its I/O in
//! flight to complete, then pauses. With `thinktime_iotime` and no
//! `thinktime_blocks` given, only the time counts (fio's example: 9 s of
//! I/O, then 1 s of thought).

use elevator_core::Nanos;

use crate::job::{JobSpec, ThinkBlocks};

/// A job clone's think-time rule and where it is in it.
#[derive(Clone, Debug)]
pub(crate) struct Think {
    time: Nanos,
    spin: Nanos,
    blocks: u32,
    on_issue: bool,
    iotime: Nanos,
    /// I/Os counted (issued or completed) since the last pause.
    count: u32,
    /// When the current stretch of I/O began.
    period_start: Nanos,
}

impl Think {
    /// The rule of `job`, if it thinks.
    pub(crate) fn new(job: &JobSpec) -> Option<Think> {
        if job.thinktime == 0 {
            return None;
        }
        let blocks_given = job
            .option_lines
            .iter()
            .any(|(n, _)| n == "thinktime_blocks");
        let blocks = if job.thinktime_iotime > 0 && !blocks_given {
            u32::MAX
        } else {
            job.thinktime_blocks.max(1)
        };
        Some(Think {
            time: job.thinktime,
            spin: job.thinktime_spin.min(job.thinktime),
            blocks,
            on_issue: job.thinktime_blocks_type == ThinkBlocks::Issue,
            iotime: job.thinktime_iotime,
            count: 0,
            period_start: 0,
        })
    }

    /// The job starts doing I/O at `now`.
    pub(crate) fn begin(&mut self, now: Nanos) {
        self.count = 0;
        self.period_start = now;
    }

    /// One I/O issued at `now`: whether it is now due to think.
    #[inline]
    pub(crate) fn issued(&mut self, now: Nanos) -> bool {
        if self.on_issue {
            self.count = self.count.saturating_add(1);
        }
        self.due(now)
    }

    /// One I/O completed at `now`: whether it is now due to think.
    #[inline]
    pub(crate) fn completed(&mut self, now: Nanos) -> bool {
        if !self.on_issue {
            self.count = self.count.saturating_add(1);
        }
        self.due(now)
    }

    fn due(&self, now: Nanos) -> bool {
        self.count >= self.blocks
            || (self.iotime > 0 && now.saturating_sub(self.period_start) >= self.iotime)
    }

    /// The pause starts at `now` (nothing in flight): returns when its spin
    /// ends and when it ends.
    pub(crate) fn pause(&mut self, now: Nanos) -> (Nanos, Nanos) {
        let end = now.saturating_add(self.time);
        self.count = 0;
        self.period_start = end;
        (now.saturating_add(self.spin), end)
    }

    /// The length of a pause.
    pub(crate) fn time(&self) -> Nanos {
        self.time
    }
}
