//! Queue statistics: counters of what the queue did, a latency histogram,
//! and the summary (count, min, max, mean, deviation) both keep.
//!
//! [`Histogram`] is log-linear: exact below 64, then 64 buckets per power of
//! two (relative error under 1/64, about fio's precision). It is a fixed array,
//! so recording never allocates.

use crate::bio::Nanos;

const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = SUB + (64 - SUB_BITS as usize) * SUB;

/// Count, min, max, mean and standard deviation of a series, without keeping
/// its distribution.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Values seen.
    pub count: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: f64,
}

impl Summary {
    /// Add a value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.count += 1;
        self.sum += u128::from(v);
        self.sum_sq += (v as f64) * (v as f64);
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &Summary) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 || other.min < self.min {
            self.min = other.min;
        }
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// Smallest value (0 if none).
    pub fn min(&self) -> u64 {
        self.min
    }

    /// Largest value (0 if none).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Mean (0 if none).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Population standard deviation (0 if none).
    pub fn stddev(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let m = self.mean();
        (self.sum_sq / self.count as f64 - m * m).max(0.0).sqrt()
    }

    /// Sample standard deviation (divided by `count - 1`, as fio reports
    /// it; 0 with fewer than two values).
    pub fn sample_stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let m = self.mean();
        ((self.sum_sq - n * m * m) / (n - 1.0)).max(0.0).sqrt()
    }
}

/// A log-linear histogram of `u64` values (nanoseconds, usually). Its
/// buckets are allocated when its first value is recorded (or merged in),
/// so an empty one (a direction a job never uses) costs no heap.
#[derive(Clone)]
pub struct Histogram {
    counts: Option<Box<[u64; BUCKETS]>>,
    summary: Summary,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count())
            .field("min", &self.min())
            .field("mean", &self.mean())
            .field("max", &self.max())
            .finish()
    }
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

impl Histogram {
    /// The heap memory a histogram with values holds, in bytes (its
    /// buckets), for estimates of what a run will use.
    pub const HEAP_BYTES: usize = BUCKETS * std::mem::size_of::<u64>();

    /// An empty histogram (no heap until a value is recorded).
    pub fn new() -> Histogram {
        Histogram {
            counts: None,
            summary: Summary::default(),
        }
    }

    /// The buckets, allocated on first use.
    #[inline]
    fn counts_mut(&mut self) -> &mut [u64; BUCKETS] {
        self.counts.get_or_insert_with(|| Box::new([0; BUCKETS]))
    }

    /// The buckets (all zero when none were allocated).
    fn counts(&self) -> &[u64] {
        self.counts.as_deref().map_or(&[], |c| &c[..])
    }

    #[inline]
    fn bucket(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros();
        let shift = msb - SUB_BITS;
        let sub = ((v >> shift) as usize) - SUB;
        SUB + (shift as usize) * SUB + sub
    }

    /// The smallest and largest value bucket `i` holds.
    fn bucket_range(i: usize) -> (u64, u64) {
        if i < SUB {
            return (i as u64, i as u64);
        }
        let shift = ((i - SUB) / SUB) as u32;
        let sub = ((i - SUB) % SUB) as u64;
        let low = (SUB as u64 + sub) << shift;
        (low, low + ((1u64 << shift) - 1))
    }

    /// Add one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts_mut()[Self::bucket(v)] += 1;
        self.summary.record(v);
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        if let Some(theirs) = &other.counts {
            for (a, b) in self.counts_mut().iter_mut().zip(theirs.iter()) {
                *a += b;
            }
        }
        self.summary.merge(&other.summary);
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.summary.count
    }

    /// Count, min, max, mean and deviation of the values.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Smallest value (0 if empty).
    pub fn min(&self) -> u64 {
        self.summary.min()
    }

    /// Largest value (0 if empty).
    pub fn max(&self) -> u64 {
        self.summary.max()
    }

    /// Mean (0 if empty).
    pub fn mean(&self) -> f64 {
        self.summary.mean()
    }

    /// Population standard deviation (0 if empty).
    pub fn stddev(&self) -> f64 {
        self.summary.stddev()
    }

    /// The value fio reports for bucket `i` (its `plat_idx_to_val`): the
    /// value itself below 128, else the bucket's low end plus half its
    /// width. elevator's buckets are fio's (`FIO_IO_U_PLAT_BITS` = 6): 64
    /// per power of two, exact below 128.
    pub fn bucket_value(i: usize) -> u64 {
        let (lo, hi) = Self::bucket_range(i);
        lo + (hi - lo).div_ceil(2)
    }

    /// The non-empty buckets in increasing order: `(value, count)`, the
    /// value as fio computes it ([`Histogram::bucket_value`]), for fio's
    /// json+ `bins`.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts()
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(i, &c)| (Self::bucket_value(i), c))
    }

    /// The value at percentile `p` as fio computes it: the value of the
    /// first bucket where the running count reaches `p`% of the count
    /// (not clamped to the minimum and maximum, as fio's is not). 0 if
    /// empty.
    pub fn fio_percentile(&self, p: f64) -> u64 {
        let count = self.count();
        if count == 0 {
            return 0;
        }
        let want = p.clamp(0.0, 100.0) / 100.0 * count as f64;
        let mut seen = 0u64;
        for (i, &c) in self.counts().iter().enumerate() {
            seen += c;
            if seen as f64 >= want {
                return Self::bucket_value(i);
            }
        }
        self.max()
    }

    /// The value at percentile `p` (0..=100): the midpoint of the bucket that
    /// holds the `ceil(p% × count)`-th smallest value, clamped to [min, max].
    pub fn percentile(&self, p: f64) -> u64 {
        let count = self.count();
        if count == 0 {
            return 0;
        }
        let rank = ((p.clamp(0.0, 100.0) / 100.0) * count as f64).ceil() as u64;
        let rank = rank.max(1);
        let mut seen = 0;
        for (i, &c) in self.counts().iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = Self::bucket_range(i);
                return (lo + (hi - lo) / 2).clamp(self.min(), self.max());
            }
        }
        self.max()
    }
}

/// What a queue has done since it was made (or its stats were reset).
#[derive(Clone, Debug, Default)]
pub struct QueueStats {
    /// Bios accepted.
    pub bios: u64,
    /// Bios that were split to fit the limits.
    pub bios_split: u64,
    /// Requests made (tags allocated).
    pub requests: u64,
    /// Bios merged onto the end of a request.
    pub back_merges: u64,
    /// Bios merged onto the start of a request.
    pub front_merges: u64,
    /// Of the bio merges, those made with a plugged request.
    pub plug_merges: u64,
    /// Requests merged into a neighbour (after a bio merge, or at insertion).
    pub request_merges: u64,
    /// Requests marked unmergeable because a merge would break a limit.
    pub merge_limit_hits: u64,
    /// Requests dispatched to the device.
    pub dispatches: u64,
    /// Requests put back after dispatch.
    pub requeues: u64,
    /// Requests completed.
    pub completions: u64,
    /// Bios completed (submitted bios, after reassembling split ones).
    pub bios_completed: u64,
    /// Of those, bios completed with an error.
    pub bio_errors: u64,
    /// Bios refused because no tag or bio entry was free.
    pub refused_full: u64,
    /// Time from a request's allocation to its dispatch.
    pub queue_time: Histogram,
    /// What `/proc/diskstats` would say, per kind of request
    /// ([`QueueStats::disk_index`]: reads, writes, discards, flushes).
    pub disk: [DiskDir; 4],
}

/// One kind of request as `/proc/diskstats` counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskDir {
    /// Requests completed.
    pub ios: u64,
    /// Merges: bios merged into a request, and requests merged into a
    /// neighbour.
    pub merges: u64,
    /// Nanoseconds the completed requests spent from allocation to
    /// completion, summed (diskstats' ticks, and their sum its weighted
    /// time in queue).
    pub ticks_ns: u64,
}

impl DiskDir {
    /// Add another's counts.
    pub fn merge(&mut self, o: &DiskDir) {
        self.ios += o.ios;
        self.merges += o.merges;
        self.ticks_ns += o.ticks_ns;
    }
}

impl QueueStats {
    /// Bio merges of any kind.
    pub fn bio_merges(&self) -> u64 {
        self.back_merges + self.front_merges
    }

    /// Index of `op` in [`QueueStats::disk`]: reads 0, writes (and write
    /// zeroes) 1, discards 2, flushes 3.
    #[inline]
    pub fn disk_index(op: crate::bio::Op) -> usize {
        use crate::bio::Op;
        match op {
            Op::Read => 0,
            Op::Write | Op::WriteZeroes => 1,
            Op::Discard => 2,
            Op::Flush => 3,
        }
    }

    /// Add another queue's figures (the queues of a run's devices or
    /// hardware contexts, reported as one).
    pub fn merge(&mut self, other: &QueueStats) {
        self.bios += other.bios;
        self.bios_split += other.bios_split;
        self.requests += other.requests;
        self.back_merges += other.back_merges;
        self.front_merges += other.front_merges;
        self.plug_merges += other.plug_merges;
        self.request_merges += other.request_merges;
        self.merge_limit_hits += other.merge_limit_hits;
        self.dispatches += other.dispatches;
        self.requeues += other.requeues;
        self.completions += other.completions;
        self.bios_completed += other.bios_completed;
        self.bio_errors += other.bio_errors;
        self.refused_full += other.refused_full;
        self.queue_time.merge(&other.queue_time);
        for (a, b) in self.disk.iter_mut().zip(&other.disk) {
            a.merge(b);
        }
    }
}

/// Nanoseconds between two times (0 if time went backwards).
#[inline]
pub(crate) fn elapsed(from: Nanos, to: Nanos) -> Nanos {
    to.saturating_sub(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_and_order() {
        let mut last = 0;
        for v in [0u64, 1, 63, 64, 65, 127, 128, 1000, 1 << 40, u64::MAX] {
            let b = Histogram::bucket(v);
            assert!(b >= last);
            last = b;
            let (lo, hi) = Histogram::bucket_range(b);
            assert!(lo <= v && v <= hi, "{v} not in [{lo},{hi}]");
        }
        assert!(Histogram::bucket(u64::MAX) < BUCKETS);
    }

    #[test]
    fn percentiles_within_precision() {
        let mut h = Histogram::new();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.count(), 10_000);
        assert_eq!(h.min(), 1000);
        assert_eq!(h.max(), 10_000_000);
        let p50 = h.percentile(50.0) as f64;
        assert!((p50 / 5_000_000.0 - 1.0).abs() < 1.0 / 32.0, "p50 {p50}");
        let p99 = h.percentile(99.0) as f64;
        assert!((p99 / 9_900_000.0 - 1.0).abs() < 1.0 / 32.0, "p99 {p99}");
        assert_eq!(h.percentile(100.0), 10_000_000);
        assert!((h.mean() - 5_000_500.0).abs() < 1.0);
        let mut g = Histogram::new();
        g.merge(&h);
        assert_eq!(g.percentile(50.0), h.percentile(50.0));
        assert_eq!(Histogram::new().percentile(50.0), 0);
    }

    #[test]
    fn bucket_values_as_fio() {
        // fio 3.33's json+ bins for these latencies (ns): 131, 141, 262, 7328.
        for (v, fio) in [
            (5u64, 5u64),
            (127, 127),
            (131, 131),
            (140, 141),
            (262, 262),
            (7301, 7328),
        ] {
            assert_eq!(Histogram::bucket_value(Histogram::bucket(v)), fio, "{v}");
        }
        let mut h = Histogram::new();
        for v in [140u64, 141, 7301] {
            h.record(v);
        }
        let bins: Vec<_> = h.bins().collect();
        assert_eq!(bins, vec![(141, 2), (7328, 1)]);
        assert_eq!(h.fio_percentile(50.0), 141);
        assert_eq!(h.fio_percentile(99.99), 7328);
    }
}
