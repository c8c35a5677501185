//! The seek curve: [`SeekCurve`], its two-part fit to the single-cylinder,
//! average and full-stroke times, and `SeekTable`, the curve as a table of
//! nanoseconds that the model looks up at run time.

/// Entries of the exact part of the seek table.
const SEEK_FINE: u32 = 4096;

/// The fitted seek curve, in milliseconds over cylinder distance:
/// `a + b·√d` up to the knee, `c + e·d` beyond.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeekCurve {
    /// Constant of the sqrt part, ms.
    pub a: f64,
    /// Coefficient of √d, ms.
    pub b: f64,
    /// Constant of the linear part, ms.
    pub c: f64,
    /// Coefficient of d, ms per cylinder.
    pub e: f64,
    /// Distance (cylinders) where the parts meet.
    pub knee: f64,
}

impl SeekCurve {
    /// Seek time in ms over `d` cylinders (0 for 0).
    pub fn ms(&self, d: f64) -> f64 {
        if d <= 0.0 {
            0.0
        } else if d <= self.knee {
            self.a + self.b * d.sqrt()
        } else {
            self.c + self.e * d
        }
    }

    /// The curve through `seek(1) = t2t` and `seek(max) = full` with a smooth
    /// knee at `k`.
    fn with_knee(t2t: f64, full: f64, max: f64, k: f64) -> SeekCurve {
        let sk = k.sqrt();
        let b = (full - t2t) / (sk / 2.0 + max / (2.0 * sk) - 1.0);
        let a = t2t - b;
        let e = b / (2.0 * sk);
        let c = a + b * sk / 2.0;
        SeekCurve {
            a,
            b,
            c,
            e,
            knee: k,
        }
    }

    /// Mean over distances with density `2(L - x) / L²` on `[0, L]` (random
    /// start and end cylinders), in closed form.
    fn mean(&self, l: f64) -> f64 {
        let k = self.knee;
        let sqrt_part = self.a * (l * k - k * k / 2.0)
            + self.b * (l * (2.0 / 3.0) * k.powf(1.5) - (2.0 / 5.0) * k.powf(2.5));
        let lin_part = self.c * (l * (l - k) - (l * l - k * k) / 2.0)
            + self.e * (l * (l * l - k * k) / 2.0 - (l * l * l - k * k * k) / 3.0);
        2.0 / (l * l) * (sqrt_part + lin_part)
    }

    /// Fit to single-cylinder, average and full-stroke times over `max`
    /// cylinders of distance; `Err((lo, hi))` gives the reachable averages.
    pub(super) fn fit(t2t: f64, avg: f64, full: f64, max: f64) -> Result<SeekCurve, (f64, f64)> {
        let lo_curve = SeekCurve::with_knee(t2t, full, max, 1.0);
        let hi_curve = SeekCurve::with_knee(t2t, full, max, max);
        let (lo, hi) = (lo_curve.mean(max), hi_curve.mean(max));
        if !(avg >= lo && avg <= hi) {
            return Err((lo, hi));
        }
        // Bisection on log(knee): the mean rises with the knee.
        let (mut x0, mut x1) = (0.0f64, max.ln());
        for _ in 0..200 {
            let xm = (x0 + x1) / 2.0;
            if SeekCurve::with_knee(t2t, full, max, xm.exp()).mean(max) < avg {
                x0 = xm;
            } else {
                x1 = xm;
            }
        }
        Ok(SeekCurve::with_knee(
            t2t,
            full,
            max,
            ((x0 + x1) / 2.0).exp(),
        ))
    }
}

/// The seek curve as a table of nanoseconds.
#[derive(Clone, Debug)]
pub(super) struct SeekTable {
    /// Exact values for `d < fine.len()`.
    fine: Vec<u32>,
    /// Values at multiples of `1 << shift`, each with the rise to the
    /// next (saturating at 0), interpolated between: one lookup per seek.
    coarse: Vec<(u32, u32)>,
    /// The last coarse value: the answer past the table.
    last: u32,
    shift: u32,
}

impl SeekTable {
    pub(super) fn new(curve: &SeekCurve, max: u32) -> SeekTable {
        let ns = |d: f64| (curve.ms(d) * 1e6).round().max(0.0) as u32;
        let fine_len = max.saturating_add(1).min(SEEK_FINE);
        let fine = (0..fine_len).map(|d| ns(f64::from(d))).collect();
        let mut shift = 0;
        while (max >> shift) > SEEK_FINE {
            shift += 1;
        }
        let at: Vec<u32> = if max >= SEEK_FINE {
            (0..=(max >> shift) + 1)
                .map(|i| ns(f64::from(i) * f64::from(1u32 << shift)))
                .collect()
        } else {
            Vec::new()
        };
        // The last value has no next: a distance in its step is past the
        // table and answers the last value.
        let coarse = at
            .iter()
            .zip(at.iter().skip(1))
            .map(|(&a, &b)| (a, b.saturating_sub(a)))
            .collect();
        let last = at.last().copied().unwrap_or(0);
        SeekTable {
            fine,
            coarse,
            last,
            shift,
        }
    }

    #[inline]
    pub(super) fn ns(&self, d: u32) -> u32 {
        if let Some(&v) = self.fine.get(d as usize) {
            return v;
        }
        let i = (d >> self.shift) as usize;
        let f = u64::from(d & ((1 << self.shift) - 1));
        let Some(&(a, rise)) = self.coarse.get(i) else {
            return self.last;
        };
        a + ((u64::from(rise) * f) >> self.shift) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::hdd::HddParams;
    use crate::device::hdd::geometry::Geo;

    fn geo(name: &str) -> Geo {
        Geo::new(&HddParams::preset(name).unwrap()).unwrap()
    }

    #[test]
    fn seek_mean_rises_with_the_knee() {
        let mut last = 0.0;
        for i in 0..=100 {
            let k = (f64::from(i) / 100.0 * 400_000f64.ln()).exp();
            let m = SeekCurve::with_knee(0.8, 16.0, 400_000.0, k).mean(400_000.0);
            assert!(m >= last - 1e-9, "knee {k}: {m} < {last}");
            last = m;
        }
    }

    #[test]
    fn seek_table_is_monotone() {
        for name in ["hdd-7200", "hdd-sas-10k", "hdd-sas-15k"] {
            let g = geo(name);
            let mut last = 0;
            for d in 0..g.cylinders {
                let v = g.seek.ns(d);
                assert!(v >= last, "{name}: seek({d}) = {v} < {last}");
                last = v;
            }
        }
    }
}
