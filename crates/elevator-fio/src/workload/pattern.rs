//! What a job clone's next I/O is: its direction (`rw`, `rwmixread`), its
//! file (`nrfiles`, `file_service_type`), its offset (sequential cursors
//! per file, or random offsets) and its length (`bs`); and when the job has
//! issued all it should (`size`).
//!
//! [`Pattern`] is the whole of that choice, apart from timing: the
//! [`super::Worker`] decides *when* to issue, the pattern *what*.

use elevator_core::Op;

use super::layout::Extent;
use crate::job::{Amount, FileService, JobSpec, RwMode};
use crate::rng::Rng;

/// One I/O the pattern chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextIo {
    /// Operation (read, write or discard).
    pub op: Op,
    /// First sector on the device.
    pub sector: u64,
    /// Length in bytes.
    pub len: u32,
}

/// The I/O choices of one job clone.
#[derive(Debug)]
pub struct Pattern {
    files: Vec<Extent>,
    /// Byte offset within each file where I/O may start, and where it ends.
    region: Vec<(u64, u64)>,
    cursors: Vec<u64>,
    cur_file: usize,
    on_file: u32,
    rw: RwMode,
    mixread: u8,
    bs: [u64; 3],
    file_service: (FileService, u32),
    /// Bytes to issue (`u64::MAX` when time based).
    budget: u64,
    issued_bytes: u64,
    rng: Rng,
}

impl Pattern {
    /// The pattern of clone `clone` of `job`, on its laid-out `files`, with
    /// random choices from `seed`.
    pub fn new(job: &JobSpec, files: Vec<Extent>, clone: u32, seed: u64) -> Pattern {
        let _ = clone;
        // The layout placed `offset` and checked that a block fits after it.
        let region: Vec<(u64, u64)> = files.iter().map(|f| (f.start, f.bytes)).collect();
        let total: u64 = region.iter().map(|(s, e)| e - s).sum();
        let budget = if job.time_based {
            u64::MAX
        } else {
            // fio: `size` is the job's total I/O (files are revisited if it
            // exceeds them); without it, every file once.
            match job.size {
                Some(Amount::Bytes(b)) => b,
                Some(Amount::Percent(p)) => total / 100 * u64::from(p),
                None => total,
            }
        };
        let cursors = region.iter().map(|&(s, _)| s).collect();
        Pattern {
            files,
            region,
            cursors,
            cur_file: 0,
            on_file: 0,
            rw: job.rw,
            mixread: job.rwmixread,
            bs: job.bs,
            file_service: job.file_service,
            budget,
            issued_bytes: 0,
            rng: Rng::new(seed),
        }
    }

    /// Whether it runs until its runtime is up, whatever it has issued.
    pub fn time_based(&self) -> bool {
        self.budget == u64::MAX
    }

    /// Whether it has issued all it should (never, when time based).
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.issued_bytes >= self.budget
    }

    /// How much of its I/O it has issued, 0..=1 (0 when time based).
    pub fn progress(&self) -> f64 {
        if self.time_based() {
            0.0
        } else {
            (self.issued_bytes as f64 / self.budget.max(1) as f64).min(1.0)
        }
    }

    /// Its largest block size.
    pub fn max_bs(&self) -> u64 {
        self.bs.iter().copied().max().unwrap_or(512)
    }

    /// `io` was taken by the queue: it counts towards the job's size.
    #[inline]
    pub fn accepted(&mut self, io: &NextIo) {
        self.issued_bytes += u64::from(io.len);
    }

    /// The next I/O.
    #[inline]
    pub fn choose(&mut self) -> NextIo {
        let op = match self.rw {
            RwMode::Read | RwMode::RandRead => Op::Read,
            RwMode::Write | RwMode::RandWrite => Op::Write,
            RwMode::ReadWrite | RwMode::RandRw => {
                if self.rng.percent(self.mixread) {
                    Op::Read
                } else {
                    Op::Write
                }
            }
            RwMode::Trim | RwMode::RandTrim => Op::Discard,
        };
        let bs = self.bs[match op {
            Op::Read => 0,
            Op::Discard => 2,
            _ => 1,
        }];
        let f = self.pick_file();
        let (start, end) = self.region[f];
        let offset = if self.rw.random() {
            start + self.rng.below(((end - start) / bs).max(1)) * bs
        } else {
            let mut c = self.cursors[f];
            if c + bs > end {
                c = start;
            }
            self.cursors[f] = c + bs;
            c
        };
        // Never past the end of the file (a last partial block is shortened).
        let len = bs.min(end - offset);
        NextIo {
            op,
            sector: self.files[f].sector + offset / 512,
            len: len as u32,
        }
    }

    fn pick_file(&mut self) -> usize {
        let n = self.files.len();
        if n == 1 {
            return 0;
        }
        let (kind, count) = self.file_service;
        match kind {
            FileService::RoundRobin | FileService::Random => {
                if self.on_file >= count {
                    self.on_file = 0;
                    self.cur_file = if kind == FileService::RoundRobin {
                        (self.cur_file + 1) % n
                    } else {
                        self.rng.below(n as u64) as usize
                    };
                }
                self.on_file += 1;
            }
            FileService::Sequential => {
                let (start, end) = self.region[self.cur_file];
                let bs = self.max_bs();
                let done = if self.rw.random() {
                    self.on_file as u64 * bs >= end - start
                } else {
                    self.cursors[self.cur_file] + bs > end
                };
                if done {
                    self.cur_file = (self.cur_file + 1) % n;
                    self.on_file = 0;
                }
                self.on_file += 1;
            }
        }
        self.cur_file
    }
}
