//! An application that sends in bursts over one TCP connection: a server answering requests.
//! The first response is written when the connection opens, each whole; the next one is
//! written a think time after the previous one was acknowledged (a closed loop, as a client that asks again once it has its answer), so the
//! connection goes idle in between.
//!
//! One sequence of draws, shared by every world: the size of the first response, then for each
//! completed response the think time and the next size. The simulator and the kernel world
//! draw them from the same stream ([`requests_stream`]), so they write the same bytes.

use super::{OnOffDistribution, SizeDistribution};
use crate::rng::{streams, Rng};
use crate::time::Duration;

/// The random stream of the requests of copy `copy` of flow entry `entry`.
pub fn requests_stream(seed: u64, entry: u32, copy: u32) -> Rng {
    Rng::stream(
        seed,
        streams::APPLICATION + ((entry as u64) << 20) + copy as u64,
    )
}

/// What the application sends: how many responses, how large, and the think time between one
/// response's acknowledgement and the next write.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestSpec {
    /// `None`: responses until the connection is stopped or the run ends.
    pub count: Option<u32>,
    pub sizes: SizeDistribution,
    pub think: Duration,
    pub think_distribution: OnOffDistribution,
}

/// The draws of one connection's application.
#[derive(Clone, Debug)]
pub struct RequestDraws {
    spec: RequestSpec,
    rng: Rng,
    /// Responses drawn so far.
    drawn: u32,
}

impl RequestDraws {
    pub fn new(spec: RequestSpec, rng: Rng) -> Self {
        RequestDraws {
            spec,
            rng,
            drawn: 0,
        }
    }

    /// The size of the next response in bytes, or `None` when all `count` have been drawn.
    pub fn next_size(&mut self) -> Option<u64> {
        if self.spec.count.is_some_and(|n| self.drawn >= n) {
            return None;
        }
        self.drawn += 1;
        Some(self.spec.sizes.sample(&mut self.rng))
    }

    /// Whether the response last drawn is the last one.
    pub fn drew_last(&self) -> bool {
        self.spec.count.is_some_and(|n| self.drawn >= n)
    }

    /// The think time after a response (drawn after its size, before the next size).
    pub fn next_think(&mut self) -> Duration {
        let mean = self.spec.think.as_secs_f64();
        if mean == 0.0 {
            return Duration::ZERO;
        }
        // At most an hour: a heavy-tailed draw must not overflow the clock.
        let secs = self
            .spec
            .think_distribution
            .sample(mean, &mut self.rng)
            .clamp(0.0, 3600.0);
        Duration::from_secs_f64(secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(count: Option<u32>) -> RequestSpec {
        RequestSpec {
            count,
            sizes: SizeDistribution::Fixed { bytes: 5000 },
            think: Duration::from_millis(250),
            think_distribution: OnOffDistribution::Constant,
        }
    }

    #[test]
    fn fixed_requests_end_after_count() {
        let mut d = RequestDraws::new(spec(Some(2)), Rng::stream(1, 0));
        assert_eq!(d.next_size(), Some(5000));
        assert!(!d.drew_last());
        assert_eq!(d.next_think(), Duration::from_millis(250));
        assert_eq!(d.next_size(), Some(5000));
        assert!(d.drew_last());
        assert_eq!(d.next_size(), None);
    }

    #[test]
    fn the_same_stream_draws_the_same_sequence() {
        let mut s = spec(None);
        s.sizes = SizeDistribution::Exponential {
            mean_bytes: 100_000.0,
        };
        s.think_distribution = OnOffDistribution::Exponential;
        let draw = || {
            let mut d = RequestDraws::new(s.clone(), requests_stream(7, 2, 1));
            (0..50)
                .map(|_| (d.next_size().unwrap(), d.next_think()))
                .collect::<Vec<_>>()
        };
        let a = draw();
        assert_eq!(a, draw());
        assert!(!d_all_equal(&a));
        // Another copy of the entry draws differently.
        let mut other = RequestDraws::new(s.clone(), requests_stream(7, 2, 2));
        assert_ne!(other.next_size(), Some(a[0].0));
    }

    fn d_all_equal(v: &[(u64, Duration)]) -> bool {
        v.windows(2).all(|w| w[0] == w[1])
    }
}
