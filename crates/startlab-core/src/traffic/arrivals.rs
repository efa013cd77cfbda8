//! The Poisson arrivals of finite TCP connections: when each arrives and how large it is.
//!
//! One sequence of draws, shared by every world that runs a `tcp-arrivals` entry, so that the
//! simulator and the kernel world open the same connections at the same times with the same
//! sizes: the first gap is drawn when the process is created, then each arrival draws its
//! size and the gap to the next.

use super::SizeDistribution;
use crate::rng::{streams, Rng};
use crate::time::{Duration, Time};

/// The random stream of the `index`-th arrival process of a run (after the per-flow streams,
/// counted from the top).
pub fn arrivals_stream(seed: u64, index: u32) -> Rng {
    Rng::stream(seed, streams::SOURCE + (u32::MAX - index) as u64)
}

/// Arrival draws: each [`ArrivalDraws::next`] is the next connection's arrival time and size.
#[derive(Clone, Debug)]
pub struct ArrivalDraws {
    rng: Rng,
    mean_interarrival: Duration,
    sizes: SizeDistribution,
    stop: Time,
    next_at: Time,
}

impl ArrivalDraws {
    pub fn new(
        mut rng: Rng,
        mean_interarrival: Duration,
        sizes: SizeDistribution,
        start: Time,
        stop: Time,
    ) -> Self {
        let next_at =
            start + Duration::from_secs_f64(rng.exponential(mean_interarrival.as_secs_f64()));
        ArrivalDraws {
            rng,
            mean_interarrival,
            sizes,
            stop,
            next_at,
        }
    }

    /// When the next connection arrives, if before the stop.
    pub fn peek(&self) -> Option<Time> {
        (self.next_at < self.stop).then_some(self.next_at)
    }
}

impl Iterator for ArrivalDraws {
    /// (arrival time, size in bytes).
    type Item = (Time, u64);

    fn next(&mut self) -> Option<(Time, u64)> {
        let at = self.peek()?;
        let bytes = self.sizes.sample(&mut self.rng);
        self.next_at = at
            + Duration::from_secs_f64(self.rng.exponential(self.mean_interarrival.as_secs_f64()));
        Some((at, bytes))
    }
}
