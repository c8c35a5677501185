//! fio's `openfiles` below a job's file count: which of its files are open
//! at once. fio serves only open files (round robin, sequential or random
//! among them, by `file_service_type`); a file closes when the job has done
//! its region's bytes in it, and the next unopened file takes its place
//! (measured with fio 3.33's `write_iolog`: `nrfiles=4 openfiles=2
//! rw=read` reads files 0 and 1 in turn, closes both, then 2 and 3).

use elevator_core::rng::Rng;

/// The open files of one job clone and the bytes done in each.
#[derive(Clone, Debug)]
pub(super) struct OpenFiles {
    /// Indices of the open files, in the order they opened.
    open: Vec<usize>,
    /// The next file to open.
    next: usize,
    /// Bytes done in each file, and each file's region.
    done: Vec<u64>,
    region: Vec<u64>,
    /// Position in `open` of the file served last.
    at: usize,
    /// How many may be open at once.
    limit: usize,
}

impl OpenFiles {
    /// At most `limit` of the files with these `regions` (bytes) open at
    /// once; `None` when `limit` lets every file be open (0 is fio's
    /// "as many as nrfiles").
    pub(super) fn new(limit: u32, regions: Vec<u64>) -> Option<OpenFiles> {
        let limit = limit as usize;
        if limit == 0 || limit >= regions.len() {
            return None;
        }
        let mut files = OpenFiles {
            open: Vec::with_capacity(limit),
            next: 0,
            done: vec![0; regions.len()],
            region: regions,
            at: 0,
            limit,
        };
        files.reopen();
        Some(files)
    }

    /// Every file closed, and the first ones open again (a new loop).
    pub(super) fn reopen(&mut self) {
        self.open.clear();
        self.done.iter_mut().for_each(|d| *d = 0);
        self.open.extend(0..self.limit.min(self.region.len()));
        self.next = self.open.len();
        self.at = 0;
    }

    /// The file served now: the one at the current position.
    pub(super) fn current(&self) -> usize {
        self.open[self.at.min(self.open.len() - 1)]
    }

    /// Move to the next open file (round robin).
    pub(super) fn advance(&mut self) {
        self.at = (self.at + 1) % self.open.len();
    }

    /// Move to an open file drawn uniformly by `rng`.
    pub(super) fn choose(&mut self, rng: &mut Rng) {
        self.at = rng.below(self.open.len() as u64) as usize;
    }

    /// `bytes` were done in file `f`: when its region is done it closes and
    /// the next unopened file takes its place (when every file is done,
    /// they start over, as a new pass). Whether `f` closed.
    pub(super) fn did(&mut self, f: usize, bytes: u64) -> bool {
        self.done[f] = self.done[f].saturating_add(bytes);
        if self.done[f] < self.region[f] {
            return false;
        }
        let Some(pos) = self.open.iter().position(|&o| o == f) else {
            return false;
        };
        if self.next < self.region.len() {
            // The new file takes the closed one's place in the rotation,
            // behind the files still open.
            self.open.remove(pos);
            self.open.push(self.next);
            self.next += 1;
        } else {
            self.open.remove(pos);
        }
        if self.open.is_empty() {
            self.reopen();
        } else if pos <= self.at {
            // The next advance lands on the file after the closed one.
            self.at = self.at.checked_sub(1).unwrap_or(self.open.len() - 1);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_open_in_turn() {
        // fio: nrfiles=4 openfiles=2 rw=read bs=64k size=512k: 0 1 0 1
        // (both close) 2 3 2 3.
        let mut w = OpenFiles::new(2, vec![128 << 10; 4]).unwrap();
        let mut order = Vec::new();
        for _ in 0..8 {
            let f = w.current();
            order.push(f);
            w.did(f, 64 << 10);
            w.advance();
        }
        assert_eq!(order, [0, 1, 0, 1, 2, 3, 2, 3]);
        assert!(OpenFiles::new(0, vec![1; 4]).is_none());
        assert!(OpenFiles::new(4, vec![1; 4]).is_none());
    }
}
