//! fio's `random_distribution` as a sampler of block positions `0..n`.
//!
//! - `random`: uniform.
//! - `zipf:θ`: rank `k` (from 1) drawn with probability ∝ `k^-θ`, exactly
//!   (Hörmann and Derflinger's rejection-inversion: O(1) per draw, no
//!   table). fio draws with Gray et al.'s approximation, which gives its
//!   third and later ranks a little more; measured on 64 MiB of 4 KiB
//!   blocks, fio's hottest 10 % of blocks get 95.9 % of a pass's I/Os,
//!   exact Zipf 95.3 %.
//! - `pareto:h`: rank fraction `u^(ln h / ln(1-h))` for uniform `u`: the
//!   hottest `h` of the blocks get `1 - h` of the I/Os (`pareto:0.2` is the
//!   80/20 rule), which is what fio's runs show.
//! - `normal:dev`: fio's shape as measured (not a Gaussian of deviation
//!   `dev` %): the mean of 12 uniform draws over the blocks (a bell of
//!   deviation n/12) plus a uniform spread of `dev` % of the blocks,
//!   wrapping around. fio's `normal:10` over 1024 blocks has a deviation of
//!   about 88 blocks, this one sqrt((n/12)² + (n·dev)²/12) = 88.
//! - zipf, pareto and normal draw *ranks*; fio spreads ranks over the file
//!   (its hottest blocks are not adjacent), and so does elevator, by the
//!   bijection `rank × m mod n` with `m` near `n × 0.618` and coprime
//!   with `n`: neighbouring ranks land far apart.
//! - `zoned` / `zoned_abs`: a zone chosen by its share of accesses, then a
//!   uniform position in it; zones lie in order from the start of the
//!   region. Zones past the region's end are cut at it (and dropped when
//!   nothing is left of them, their share going to the rest).

use crate::job::{Distribution, Zone};
use elevator_core::rng::Rng;

/// A sampler of positions `0..n` for one direction.
#[derive(Clone, Debug)]
pub struct Dist {
    n: u64,
    shape: Shape,
    /// Multiplier spreading ranks over `0..n` (coprime with `n`).
    spread: u64,
}

#[derive(Clone, Debug)]
enum Shape {
    Uniform,
    Zipf(Zipf),
    Pareto {
        exp: f64,
    },
    Normal {
        spread: f64,
    },
    /// Cumulative access share and `[lo, hi)` positions per zone.
    Zoned(Vec<(f64, u64, u64)>),
}

impl Dist {
    /// A sampler of `n` positions (`n > 0`) of `unit` bytes each (for
    /// `zoned_abs`) for direction `dir` (0 read, 1 write, 2 trim). Errors
    /// are messages about the `random_distribution` value.
    pub fn new(spec: &Distribution, dir: usize, n: u64, unit: u64) -> Result<Dist, String> {
        let n = n.max(1);
        let shape = match spec {
            Distribution::Random => Shape::Uniform,
            Distribution::Zipf(theta) => {
                if !(theta.is_finite() && *theta > 0.0) {
                    return Err(format!("zipf theta {theta} must be greater than 0"));
                }
                Shape::Zipf(Zipf::new(n, *theta))
            }
            Distribution::Pareto(h) => {
                if !(h.is_finite() && *h > 0.0 && *h < 1.0) {
                    return Err(format!("pareto power {h} must be between 0 and 1"));
                }
                Shape::Pareto {
                    exp: h.ln() / (1.0 - h).ln(),
                }
            }
            Distribution::Normal(dev) => {
                if !(dev.is_finite() && (0.0..=100.0).contains(dev)) {
                    return Err(format!("normal deviation {dev} must be 0 to 100 (percent)"));
                }
                Shape::Normal {
                    spread: dev / 100.0,
                }
            }
            Distribution::Zoned { dirs, absolute } => {
                // A direction without zones of its own takes the first set
                // given (fio: one set applies to every direction).
                let zones = if dirs[dir].is_empty() {
                    dirs.iter().find(|z| !z.is_empty())
                } else {
                    Some(&dirs[dir])
                };
                match zones {
                    None => Shape::Uniform,
                    Some(z) => zoned(z, *absolute, n, unit)?,
                }
            }
        };
        Ok(Dist {
            n,
            shape,
            spread: spreader(n),
        })
    }

    /// The same sampler with ranks in order, not spread: rank 0 (the
    /// hottest) is position 0. fio's `file_service_type=zipf` (and pareto,
    /// normal) draws files this way, over `nrfiles << 10` positions.
    pub fn ranked(self) -> Dist {
        Dist { spread: 1, ..self }
    }

    /// Whether it is uniform (`random`).
    pub fn uniform(&self) -> bool {
        matches!(self.shape, Shape::Uniform)
    }

    /// A position in `0..n`.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let n = self.n;
        let rank = match &self.shape {
            Shape::Uniform => return rng.below(n),
            Shape::Zoned(zones) => {
                let u = rng.unit();
                let i = zones
                    .partition_point(|z| z.0 <= u)
                    .min(zones.len().saturating_sub(1));
                let (_, lo, hi) = zones[i];
                return lo + rng.below(hi - lo);
            }
            Shape::Zipf(z) => z.sample(rng) - 1,
            Shape::Pareto { exp } => ((n as f64) * rng.unit().powf(*exp)) as u64,
            Shape::Normal { spread } => {
                let mut sum = 0.0;
                for _ in 0..12 {
                    sum += rng.unit();
                }
                let x = sum / 12.0 + spread * (rng.unit() - 0.5);
                (x.rem_euclid(1.0) * n as f64) as u64
            }
        };
        let rank = rank.min(n - 1);
        ((u128::from(rank) * u128::from(self.spread)) % u128::from(n)) as u64
    }
}

/// A multiplier near `n × 0.618` coprime with `n`.
fn spreader(n: u64) -> u64 {
    if n <= 2 {
        return 1;
    }
    let mut m = ((n as f64 * 0.618_033_988_749_895) as u64).max(1);
    while gcd(m, n) != 1 {
        m += 1;
    }
    m
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn zoned(zones: &[Zone], absolute: bool, n: u64, unit: u64) -> Result<Shape, String> {
    let mut table = Vec::with_capacity(zones.len());
    let mut at = 0.0f64;
    let mut total = 0.0;
    for z in zones {
        if !(z.access.is_finite() && z.access >= 0.0 && z.size.is_finite() && z.size >= 0.0) {
            return Err(format!(
                "zone {}/{} must have a non-negative share and size",
                z.access, z.size
            ));
        }
        let size = if absolute {
            z.size / unit.max(1) as f64
        } else {
            z.size / 100.0 * n as f64
        };
        let (lo, hi) = (at.min(n as f64) as u64, (at + size).min(n as f64) as u64);
        at += size;
        if hi > lo && z.access > 0.0 {
            total += z.access;
            table.push((total, lo, hi));
        }
    }
    if table.is_empty() {
        return Err("no zone has both accesses and blocks in the region".to_string());
    }
    for z in &mut table {
        z.0 /= total;
    }
    Ok(Shape::Zoned(table))
}

/// Zipf over ranks `1..=n` by rejection-inversion: the continuous hat
/// `x^-θ` is inverted and a draw is kept when it falls under the discrete
/// mass. Expected draws per sample are close to 1.
#[derive(Clone, Debug)]
struct Zipf {
    n: f64,
    theta: f64,
    h_x1: f64,
    h_n: f64,
    s: f64,
}

impl Zipf {
    fn new(n: u64, theta: f64) -> Zipf {
        let mut z = Zipf {
            n: n as f64,
            theta,
            h_x1: 0.0,
            h_n: 0.0,
            s: 0.0,
        };
        z.h_x1 = z.big_h(1.5) - 1.0;
        z.h_n = z.big_h(n as f64 + 0.5);
        z.s = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    /// The integral of the hat: `(x^(1-θ) - 1) / (1-θ)` (`ln x` at θ = 1).
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over((1.0 - self.theta) * lx) * lx
    }

    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.theta)).max(-1.0);
        (log1p_over(t) * y).exp()
    }

    fn sample(&self, rng: &mut Rng) -> u64 {
        // Bounded: acceptance is above 1/2 per round for any θ > 0.
        for _ in 0..64 {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.big_h_inv(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.s || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
        1
    }
}

/// `(e^x - 1) / x`, 1 at 0.
fn expm1_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x / 2.0
    }
}

/// `ln(1 + x) / x`, 1 at 0.
fn log1p_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(d: &Dist, draws: usize) -> Vec<u64> {
        let mut rng = Rng::new(3);
        let mut c = vec![0u64; d.n as usize];
        for _ in 0..draws {
            c[d.sample(&mut rng) as usize] += 1;
        }
        c
    }

    #[test]
    fn zipf_matches_its_masses() {
        let n = 1000;
        let d = Dist::new(&Distribution::Zipf(1.2), 0, n, 4096).unwrap();
        let c = shares(&d, 200_000);
        let z: f64 = (1..=n).map(|k| (k as f64).powf(-1.2)).sum();
        // Rank k lands on (k - 1) × m mod n.
        for k in 1..=3u64 {
            let pos = ((k - 1) * d.spread % n) as usize;
            let want = (k as f64).powf(-1.2) / z;
            let got = c[pos] as f64 / 200_000.0;
            assert!((got - want).abs() < 0.01, "rank {k}: {got} vs {want}");
        }
        // θ = 1 and θ < 1 work too.
        for theta in [1.0, 0.5, 3.0] {
            let d = Dist::new(&Distribution::Zipf(theta), 0, 7, 1).unwrap();
            assert!(shares(&d, 1000).iter().sum::<u64>() == 1000);
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        for spec in [
            Distribution::Zipf(0.0),
            Distribution::Zipf(f64::NAN),
            Distribution::Pareto(1.0),
            Distribution::Pareto(0.0),
            Distribution::Normal(-1.0),
            Distribution::Normal(101.0),
        ] {
            assert!(Dist::new(&spec, 0, 10, 1).is_err(), "{spec:?}");
        }
    }

    #[test]
    fn spread_is_a_bijection() {
        for n in [1u64, 2, 3, 10, 1024, 4099] {
            let m = spreader(n);
            let mut seen: Vec<u64> = (0..n).map(|k| k * m % n).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>());
        }
    }
}
