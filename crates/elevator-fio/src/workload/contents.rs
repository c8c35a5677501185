//! What a write carries when the job says (fio's buffer options, learnt
//! from its HOWTO and `io_u.c`): `buffer_pattern`,
//! `buffer_compress_percentage` and `buffer_compress_chunk`,
//! `refill_buffers`, and `dedupe_percentage` with `dedupe_mode`
//! (`repeat`, `working_set`) and `dedupe_working_set_percentage`.
//!
//! [`Contents`] fills one write's buffer. Every buffer comes from a seed:
//! a new one, or (`dedupe_percentage` of the writes, drawn per write) the
//! previous write's (`repeat`) or one of a working set (`working_set`: the
//! first of the new seeds, as many as the job's region has blocks times
//! `dedupe_working_set_percentage`, as fio), so that a deduplicated write
//! is a copy of another, byte for byte. Each chunk of `buffer_compress_chunk`
//! bytes is pseudo-random for its first `100 - buffer_compress_percentage`
//! percent, then `buffer_pattern` (or zeros). Without compression or dedupe,
//! `buffer_pattern` fills the buffer and `refill_buffers` gives every write
//! new pseudo-random bytes.
//!
//! With `dedupe_global` (and `working_set`), as fio's `dedupe.c`, a clone's
//! working set is spread over every clone's new seeds: its first
//! `working set / clones` entries are its own first new seeds, the next as
//! many the next clone's (in job order, wrapping), and so on, so that a
//! deduplicated write may copy another job's write.
//!
//! Jobs that set none of these keep the engine's buffers as they are
//! (random once, not per write). The simulation moves no data: there these
//! options are accepted and change nothing.

use std::sync::Arc;

use elevator_core::rng::Rng;

use super::mix;
use crate::job::JobSpec;

/// fio's `dedupe_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DedupeMode {
    /// `repeat`: a deduplicated write repeats the previous write's bytes.
    #[default]
    Repeat,
    /// `working_set`: it repeats one of a working set of buffers.
    WorkingSet,
}

impl DedupeMode {
    /// `dedupe_mode=`'s value.
    pub fn parse(v: &str) -> Result<DedupeMode, String> {
        match v.trim() {
            "repeat" => Ok(DedupeMode::Repeat),
            "working_set" => Ok(DedupeMode::WorkingSet),
            other => Err(format!(
                "dedupe_mode={other}: fio's modes are repeat and working_set"
            )),
        }
    }
}

/// One job clone's write contents.
#[derive(Clone, Debug)]
pub struct Contents {
    pattern: Option<Vec<u8>>,
    compress: u32,
    chunk: usize,
    refill: bool,
    dedupe: u32,
    mode: DedupeMode,
    /// Seeds in the working set: the first new ones.
    working_set: u64,
    /// The base of the new seeds, and how many were drawn.
    base: u64,
    drawn: u64,
    rng: Rng,
    prev: u64,
    /// `dedupe_global`: whether the working set is to be shared.
    global: bool,
    /// Once shared: every clone's base, in job order, and this clone's
    /// place among them.
    shared: Option<(Arc<[u64]>, usize)>,
}

impl Contents {
    /// The contents of `job`'s writes, drawn from `seed`, for a region of
    /// `region` bytes; `None` when the job sets no buffer option (the
    /// engine's buffers stay as they are).
    pub fn new(job: &JobSpec, seed: u64, region: u64) -> Option<Contents> {
        let b = &job.buffers;
        if b.pattern.is_none() && b.compress == 0 && b.dedupe == 0 && !b.refill {
            return None;
        }
        let blocks = region / job.bs[1].max(1);
        let working_set = (blocks.saturating_mul(u64::from(b.working_set)) / 100).max(1);
        let base = Contents::base_of(seed);
        Some(Contents {
            pattern: b.pattern.clone().filter(|p| !p.is_empty()),
            compress: b.compress.min(100),
            chunk: usize::try_from(b.chunk).unwrap_or(usize::MAX).max(1),
            refill: b.refill,
            dedupe: b.dedupe.min(100),
            mode: b.mode,
            working_set,
            base,
            drawn: 0,
            rng: Rng::new(mix(&[base, 1])),
            prev: mix(&[base, 0]),
            global: b.global && b.mode == DedupeMode::WorkingSet && b.dedupe > 0,
            shared: None,
        })
    }

    /// The base of the new seeds of the clone whose seed is `seed`.
    pub fn base_of(seed: u64) -> u64 {
        mix(&[seed, 0xC0_47E4_7500])
    }

    /// Whether the job asked for a working set shared by all clones
    /// (`dedupe_global` with `dedupe_mode=working_set`).
    pub fn wants_shared(&self) -> bool {
        self.global
    }

    /// Shares the working set with every clone: `bases` are all clones'
    /// [`Contents::base_of`] in job order (whether they dedupe or not, as
    /// fio), `own` this clone's place among them.
    pub fn share_working_set(&mut self, bases: Arc<[u64]>, own: usize) {
        if self.global && !bases.is_empty() {
            self.shared = Some((bases, own));
        }
    }

    /// Fills `buf`, the buffer of the next write. Allocates nothing.
    pub fn fill(&mut self, buf: &mut [u8]) {
        if self.compress == 0 && self.dedupe == 0 && !self.refill {
            if let Some(p) = &self.pattern {
                repeat(buf, p, 0);
            }
            return;
        }
        let seed = self.next_seed();
        if self.compress == 100 {
            match &self.pattern {
                Some(p) => repeat(buf, p, 0),
                None => buf.fill(0),
            }
            return;
        }
        for (i, chunk) in buf.chunks_mut(self.chunk).enumerate() {
            let random = chunk.len() * (100 - self.compress as usize) / 100;
            let (r, rest) = chunk.split_at_mut(random);
            let mut rng = Rng::new(mix(&[seed, i as u64]));
            for w in r.chunks_mut(8) {
                let x = rng.next_u64().to_le_bytes();
                w.copy_from_slice(&x[..w.len()]);
            }
            match &self.pattern {
                Some(p) => repeat(rest, p, 0),
                None => rest.fill(0),
            }
        }
    }

    /// The seed of the next buffer: new, or a deduplicated one.
    fn next_seed(&mut self) -> u64 {
        if self.dedupe > 0 && self.rng.below(100) < u64::from(self.dedupe) {
            return match self.mode {
                DedupeMode::Repeat => self.prev,
                DedupeMode::WorkingSet => {
                    let k = self.rng.below(self.working_set);
                    self.working_seed(k)
                }
            };
        }
        let s = self.new_seed(self.drawn);
        self.drawn += 1;
        self.prev = s;
        s
    }

    /// The `k`th new seed.
    fn new_seed(&self, k: u64) -> u64 {
        mix(&[self.base, 2, k])
    }

    /// The seed of entry `k` of the working set: this clone's `k`th new
    /// seed, or, when shared, entry `k % per` of clone `own + k / per`'s
    /// new seeds (`per`: the set's size over the clones, at least 1).
    fn working_seed(&self, k: u64) -> u64 {
        match &self.shared {
            None => self.new_seed(k),
            Some((bases, own)) => {
                let clones = bases.len() as u64;
                let per = (self.working_set / clones).max(1);
                let clone = (*own as u64 + k / per) % clones;
                let base = bases[usize::try_from(clone).unwrap_or(0)];
                mix(&[base, 2, k % per])
            }
        }
    }
}

/// `buf` filled with `pattern` repeated, its byte `phase` first.
fn repeat(buf: &mut [u8], pattern: &[u8], phase: usize) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern[(phase + i) % pattern.len()];
    }
}

#[cfg(test)]
mod tests {
    use super::{Contents, DedupeMode};
    use crate::job::JobSpec;
    use std::collections::HashSet;
    use std::sync::Arc;

    fn writes(job: &JobSpec, n: usize) -> Vec<Vec<u8>> {
        let mut c = Contents::new(job, 7, 64 << 20).expect("contents");
        (0..n)
            .map(|_| {
                let mut b = vec![0xAA; 4096];
                c.fill(&mut b);
                b
            })
            .collect()
    }

    #[test]
    fn nothing_set_is_none() {
        assert!(Contents::new(&JobSpec::new("j", 0), 1, 1 << 20).is_none());
    }

    #[test]
    fn compress_percentage_is_the_zero_share_of_each_chunk() {
        let mut j = JobSpec::new("j", 0);
        j.buffers.compress = 40;
        j.buffers.chunk = 512;
        for b in writes(&j, 8) {
            for c in b.chunks(512) {
                let random = 512 * 60 / 100;
                assert!(c[random..].iter().all(|&x| x == 0));
                assert!(c[..random].iter().filter(|&&x| x == 0).count() < 10);
            }
        }
    }

    #[test]
    fn dedupe_percentage_is_the_share_of_repeated_buffers() {
        for mode in [DedupeMode::Repeat, DedupeMode::WorkingSet] {
            let mut j = JobSpec::new("j", 0);
            j.buffers.dedupe = 30;
            j.buffers.mode = mode;
            j.buffers.working_set = 5;
            let all = writes(&j, 4000);
            let unique: HashSet<&Vec<u8>> = all.iter().collect();
            let dup = 100.0 * (all.len() - unique.len()) as f64 / all.len() as f64;
            assert!((dup - 30.0).abs() < 3.0, "{mode:?}: {dup:.1} % repeated");
        }
    }

    #[test]
    fn pattern_alone_fills_every_write() {
        let mut j = JobSpec::new("j", 0);
        j.buffers.pattern = Some(vec![1, 2, 3]);
        for b in writes(&j, 2) {
            assert!(b.iter().enumerate().all(|(i, &x)| x == [1, 2, 3][i % 3]));
        }
    }

    #[test]
    fn dedupe_global_copies_other_clones_first_writes() {
        let mut j = JobSpec::new("j", 0);
        j.buffers.dedupe = 50;
        j.buffers.mode = DedupeMode::WorkingSet;
        j.buffers.working_set = 5;
        j.buffers.global = true;
        let bases: Arc<[u64]> = [7u64, 8].iter().map(|&s| Contents::base_of(s)).collect();
        let fill = |seed: u64, shared: Option<usize>| -> Vec<Vec<u8>> {
            let mut c = Contents::new(&j, seed, 16 << 20).expect("contents");
            assert!(c.wants_shared());
            if let Some(own) = shared {
                c.share_working_set(Arc::clone(&bases), own);
            }
            (0..2000)
                .map(|_| {
                    let mut b = vec![0; 4096];
                    c.fill(&mut b);
                    b
                })
                .collect()
        };
        // The first clone's own writes (its draws kept to its own seeds).
        let first = fill(7, None);
        let first: HashSet<&Vec<u8>> = first.iter().collect();
        let copied = |writes: &[Vec<u8>]| writes.iter().filter(|w| first.contains(w)).count();
        // Half of the second clone's 1000 deduplicated writes draw from the
        // first clone's half of the set: copies of its first new writes.
        let shared = copied(&fill(8, Some(1)));
        assert!((350..650).contains(&shared), "{shared}");
        assert_eq!(copied(&fill(8, None)), 0);
    }
}
