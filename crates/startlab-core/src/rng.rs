//! Seeded randomness, injected where it is needed.
//!
//! Every component that draws random numbers (a lossy link, a RED queue, a traffic source) owns
//! its own stream, derived from the scenario seed and a fixed stream number, so adding a component
//! to a scenario does not change the draws of the others. ChaCha8 is portable: the same seed gives
//! the same numbers on every platform.

use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Stream-number ranges, so that the streams of different component kinds never collide.
pub mod streams {
    pub const LINK_LOSS: u64 = 1 << 32;
    pub const QUEUE: u64 = 2 << 32;
    pub const SOURCE: u64 = 3 << 32;
    pub const CONTROLLER: u64 = 4 << 32;
    pub const APPLICATION: u64 = 5 << 32;
}

#[derive(Clone, Debug)]
pub struct Rng(ChaCha8Rng);

impl Rng {
    /// The `stream`-th independent stream of the run seeded with `seed`.
    pub fn stream(seed: u64, stream: u64) -> Self {
        let mut inner = ChaCha8Rng::seed_from_u64(seed);
        inner.set_stream(stream);
        Rng(inner)
    }

    /// 64 uniform bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.gen::<u64>()
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0.gen::<f64>()
    }

    /// True with probability `p`.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }

    /// Exponential with the given mean (inverse transform).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Pareto with shape `alpha` and minimum `x_min`: P(X > x) = (x_min / x)^alpha.
    pub fn pareto(&mut self, alpha: f64, x_min: f64) -> f64 {
        x_min / (1.0 - self.uniform()).powf(1.0 / alpha)
    }

    /// Standard normal (Box-Muller; one value per call, the second is discarded for simplicity).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<f64> = (0..5)
            .map({
                let mut r = Rng::stream(7, 1);
                move |_| r.uniform()
            })
            .collect();
        let b: Vec<f64> = (0..5)
            .map({
                let mut r = Rng::stream(7, 1);
                move |_| r.uniform()
            })
            .collect();
        let c: Vec<f64> = (0..5)
            .map({
                let mut r = Rng::stream(7, 2);
                move |_| r.uniform()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn sample_means_are_close_to_the_distribution_means() {
        let mut r = Rng::stream(1, 0);
        let n = 200_000;
        let exp_mean: f64 = (0..n).map(|_| r.exponential(2.0)).sum::<f64>() / n as f64;
        assert!((exp_mean - 2.0).abs() < 0.03, "{exp_mean}");
        // Pareto mean = alpha x_min / (alpha - 1) = 3 for alpha 3, x_min 2
        let par_mean: f64 = (0..n).map(|_| r.pareto(3.0, 2.0)).sum::<f64>() / n as f64;
        assert!((par_mean - 3.0).abs() < 0.05, "{par_mean}");
        let norm: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let m = norm.iter().sum::<f64>() / n as f64;
        let v = norm.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.02, "{m} {v}");
    }
}
