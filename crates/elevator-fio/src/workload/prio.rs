//! fio's I/O priorities: the priority each I/O of a job clone goes with.
//!
//! Values are fio's (and Linux's) raw `ioprio`: class << 13 | level, class
//! 0 none, 1 RT, 2 BE, 3 IDLE. A job's own priority is `prioclass` /
//! `prio` (a class of 0 with a level set is BE, as fio's `ioprio_value`;
//! neither set: 0, the process's default). `cmdprio_percentage` gives that
//! percent of a direction's I/Os the `cmdprio_class` / `cmdprio` priority
//! (class RT unless set); `cmdprio_bssplit` does the same per block size,
//! an entry possibly with its own class and level. Each I/O draws one
//! number 0..=99 from the clone's own seeded generator, as fio draws from
//! its `prio_state`.

use elevator_core::rng::Rng;
use elevator_core::{IoPrio, Op, PrioClass};

use super::worker::dir;
use crate::job::JobSpec;

const CLASS_SHIFT: u16 = 13;
const CLASS_RT: u8 = 1;
const CLASS_BE: u8 = 2;

/// fio's raw priority value of `class` and `level` (a class of 0 is BE).
pub fn ioprio_value(class: u8, level: u8) -> u16 {
    let class = if class == 0 { CLASS_BE } else { class };
    (u16::from(class) << CLASS_SHIFT) | u16::from(level & 7)
}

/// The class of a raw priority value (0..=3).
pub fn ioprio_class(value: u16) -> u16 {
    value >> CLASS_SHIFT
}

/// The level of a raw priority value (0..=7).
pub fn ioprio_level(value: u16) -> u16 {
    value & 7
}

/// The bio priority for a raw value: none is the default (BE, level 4, a
/// process's priority at nice 0).
#[inline]
pub fn bio_prio(value: u16) -> IoPrio {
    let class = match ioprio_class(value) {
        1 => PrioClass::Rt,
        2 => PrioClass::Be,
        3 => PrioClass::Idle,
        _ => return IoPrio::DEFAULT,
    };
    IoPrio::new(class, ioprio_level(value) as u8).unwrap_or(IoPrio::DEFAULT)
}

/// One direction's command priorities.
#[derive(Clone, Debug, Default)]
struct Direction {
    /// `cmdprio_percentage`: percent, priority.
    percent: Option<(u8, u16)>,
    /// `cmdprio_bssplit`: block size, percent, priority.
    split: Vec<(u64, u8, u16)>,
}

/// A job clone's priorities.
#[derive(Clone, Debug)]
pub(crate) struct Prios {
    /// The job's own priority (every I/O without a command priority).
    base: u16,
    dirs: [Direction; 2],
    /// Whether any I/O may go with a command priority.
    per_io: bool,
    rng: Rng,
}

impl Prios {
    /// The priorities of `job`; its draws come from `seed`.
    pub(crate) fn new(job: &JobSpec, seed: u64) -> Prios {
        let base = match (job.prioclass, job.prio) {
            (None, None) => 0,
            (class, level) => ioprio_value(class.unwrap_or(0), level.unwrap_or(0)),
        };
        let mut dirs: [Direction; 2] = Default::default();
        let does = super::rate::directions(job.rw);
        for (d, slot) in dirs.iter_mut().enumerate() {
            if !does[d] {
                continue;
            }
            let class = match job.cmdprio_class[d] {
                0 => CLASS_RT,
                c => c,
            };
            let cmd = ioprio_value(class, job.cmdprio[d]);
            if let Some(split) = &job.cmdprio_bssplit {
                slot.split = split[d]
                    .iter()
                    .map(|e| {
                        let prio = e.prio.map_or(cmd, |(c, l)| ioprio_value(c, l));
                        (e.bs, e.percent, prio)
                    })
                    .collect();
            } else if job.cmdprio_percentage[d] > 0 {
                slot.percent = Some((job.cmdprio_percentage[d], cmd));
            }
        }
        let per_io = dirs
            .iter()
            .any(|d| d.percent.is_some() || !d.split.is_empty());
        Prios {
            base,
            dirs,
            per_io,
            rng: Rng::new(super::mix(&[seed, 0x0910_7210])),
        }
    }

    /// Whether its I/Os may differ in priority (fio then keeps latencies
    /// per priority).
    pub(crate) fn per_io(&self) -> bool {
        self.per_io
    }

    /// The priorities its I/Os of each direction may have, in fio's
    /// order: the job's own, then the command priorities as their options
    /// list them.
    pub(crate) fn order(&self) -> [Vec<u16>; 3] {
        let mut out: [Vec<u16>; 3] = Default::default();
        for (d, slot) in self.dirs.iter().enumerate() {
            let cmd = slot.percent.map(|p| p.1).into_iter();
            let split = slot.split.iter().map(|e| e.2);
            if slot.percent.is_none() && slot.split.is_empty() {
                continue;
            }
            let o = &mut out[d];
            o.push(self.base);
            for p in cmd.chain(split) {
                if !o.contains(&p) {
                    o.push(p);
                }
            }
        }
        out
    }

    /// The job's own priority.
    #[inline]
    pub(crate) fn base(&self) -> u16 {
        self.base
    }

    /// The priority of the next I/O of `op` and `len` bytes.
    #[inline]
    pub(crate) fn choose(&mut self, op: Op, len: u32) -> u16 {
        if !self.per_io {
            return self.base;
        }
        let Some(d) = dir(op).filter(|&d| d < 2) else {
            return self.base;
        };
        let slot = &self.dirs[d];
        let (total, entries): (u32, &[(u64, u8, u16)]) = match slot.percent {
            Some((p, prio)) => {
                let draw = self.rng.below(100) as u32;
                return if draw < u32::from(p) { prio } else { self.base };
            }
            None => {
                let bs = u64::from(len);
                let total = slot
                    .split
                    .iter()
                    .filter(|e| e.0 == bs)
                    .map(|e| u32::from(e.1))
                    .sum();
                (total, &slot.split)
            }
        };
        if total == 0 {
            return self.base;
        }
        let draw = self.rng.below(100) as u32;
        if draw >= total {
            return self.base;
        }
        let mut sum = 0u32;
        for e in entries.iter().filter(|e| e.0 == u64::from(len)) {
            sum += u32::from(e.1);
            if draw < sum {
                return e.2;
            }
        }
        self.base
    }
}
