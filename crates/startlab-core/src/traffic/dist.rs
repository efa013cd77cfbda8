//! Random sizes and durations.

use crate::rng::Rng;

/// Flow sizes, bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDistribution {
    Fixed {
        bytes: u64,
    },
    Exponential {
        mean_bytes: f64,
    },
    /// Pareto with the given mean and shape (> 1): x_min = mean (shape - 1) / shape.
    Pareto {
        mean_bytes: f64,
        shape: f64,
    },
    /// SURGE-style web sizes (Ha 2009 §4.4): with probability `1 - tail_fraction` a log-normal
    /// body exp(N(mu, sigma)), otherwise a Pareto tail with `tail_shape` and minimum `tail_min_bytes`.
    LognormalPareto {
        mu: f64,
        sigma: f64,
        tail_fraction: f64,
        tail_shape: f64,
        tail_min_bytes: f64,
    },
}

impl SizeDistribution {
    /// A size of at least one byte.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let x = match *self {
            SizeDistribution::Fixed { bytes } => bytes as f64,
            SizeDistribution::Exponential { mean_bytes } => rng.exponential(mean_bytes),
            SizeDistribution::Pareto { mean_bytes, shape } => {
                rng.pareto(shape, mean_bytes * (shape - 1.0) / shape)
            }
            SizeDistribution::LognormalPareto {
                mu,
                sigma,
                tail_fraction,
                tail_shape,
                tail_min_bytes,
            } => {
                if rng.uniform() < tail_fraction {
                    rng.pareto(tail_shape, tail_min_bytes)
                } else {
                    (mu + sigma * rng.normal()).exp()
                }
            }
        };
        // Sizes beyond 1 TB are clamped: a heavy tail must not overflow segment counters.
        (x.round().clamp(1.0, 1e12)) as u64
    }
}

/// Durations of on and off periods, seconds.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum OnOffDistribution {
    Constant,
    Exponential,
    /// Pareto with the given shape (> 1) and the period's mean.
    Pareto {
        shape: f64,
    },
}

impl OnOffDistribution {
    pub fn sample(&self, mean_secs: f64, rng: &mut Rng) -> f64 {
        match *self {
            OnOffDistribution::Constant => mean_secs,
            OnOffDistribution::Exponential => rng.exponential(mean_secs),
            OnOffDistribution::Pareto { shape } => {
                rng.pareto(shape, mean_secs * (shape - 1.0) / shape)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean(d: &SizeDistribution, n: usize) -> f64 {
        let mut rng = Rng::stream(3, 0);
        (0..n).map(|_| d.sample(&mut rng) as f64).sum::<f64>() / n as f64
    }

    #[test]
    fn means_match() {
        assert_eq!(mean(&SizeDistribution::Fixed { bytes: 1234 }, 10), 1234.0);
        let m = mean(
            &SizeDistribution::Exponential {
                mean_bytes: 100_000.0,
            },
            100_000,
        );
        assert!((m / 100_000.0 - 1.0).abs() < 0.02, "{m}");
        let m = mean(
            &SizeDistribution::Pareto {
                mean_bytes: 100_000.0,
                shape: 2.5,
            },
            200_000,
        );
        assert!((m / 100_000.0 - 1.0).abs() < 0.05, "{m}");
    }

    #[test]
    fn lognormal_pareto_mixes_body_and_tail() {
        let d = SizeDistribution::LognormalPareto {
            mu: 9.357,
            sigma: 1.328,
            tail_fraction: 0.07,
            tail_shape: 1.1,
            tail_min_bytes: 133_000.0,
        };
        let mut rng = Rng::stream(5, 0);
        let xs: Vec<u64> = (0..100_000).map(|_| d.sample(&mut rng)).collect();
        // The body's median is exp(mu) ~ 11.6 KB; at least 7% of draws are >= 133 KB.
        let mut sorted = xs.clone();
        sorted.sort_unstable();
        let median = sorted[sorted.len() / 2] as f64;
        assert!(median > 9_000.0 && median < 14_000.0, "{median}");
        // P(size >= 133 KB) = 0.07 (tail) + 0.93 P(Z > (ln 133000 - 9.357) / 1.328 = 1.838)
        //                   = 0.07 + 0.93 x 0.0330 = 0.1007
        let tail = xs.iter().filter(|&&x| x >= 133_000).count() as f64 / xs.len() as f64;
        assert!((tail - 0.1007).abs() < 0.004, "{tail}");
    }
}
