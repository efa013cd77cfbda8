//! RTT estimation and the retransmission timeout (RFC 6298).

use crate::time::Duration;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rto: Duration,
    max_rto: Duration,
    granularity: Duration,
    /// RTO before back-off.
    base_rto: Duration,
    /// Number of consecutive doublings (RFC 6298 §5.5).
    backoff: u32,
}

impl RttEstimator {
    pub fn new(
        initial_rto: Duration,
        min_rto: Duration,
        max_rto: Duration,
        granularity: Duration,
    ) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            min_rto,
            max_rto,
            granularity,
            base_rto: initial_rto,
            backoff: 0,
        }
    }

    /// Takes an RTT measurement (the caller applies Karn's rule) and resets the back-off.
    pub fn on_sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                // RFC 6298 §2.2
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                // RFC 6298 §2.3, beta = 1/4, alpha = 1/8
                let err = if srtt > r {
                    srtt.saturating_sub(r)
                } else {
                    r.saturating_sub(srtt)
                };
                self.rttvar =
                    Duration::from_nanos((3 * self.rttvar.as_nanos() + err.as_nanos()) / 4);
                self.srtt = Some(Duration::from_nanos(
                    (7 * srtt.as_nanos() + r.as_nanos()) / 8,
                ));
            }
        }
        let srtt = self.srtt.unwrap();
        // RTO = SRTT + max(G, K * RTTVAR), K = 4, bounded below by min_rto (§2.4) and above by max_rto (§2.5).
        let k_rttvar = self.rttvar * 4;
        let rto = srtt
            + if self.granularity > k_rttvar {
                self.granularity
            } else {
                k_rttvar
            };
        self.base_rto = rto.max(self.min_rto).min(self.max_rto);
        self.backoff = 0;
    }

    /// The timer expired: double the RTO (§5.5).
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(32);
    }

    /// The current RTO including back-off.
    pub fn rto(&self) -> Duration {
        let factor = 1u64.checked_shl(self.backoff).unwrap_or(u64::MAX);
        let rto = self.base_rto * factor;
        if rto > self.max_rto {
            self.max_rto
        } else {
            rto
        }
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(
            Duration::from_secs(1),
            Duration::from_millis(200),
            Duration::from_secs(60),
            Duration::from_millis(1),
        )
    }

    #[test]
    fn first_sample_sets_rto_to_three_rtts() {
        let mut e = est();
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.on_sample(Duration::from_millis(100));
        // SRTT = 100, RTTVAR = 50, RTO = 100 + 4 * 50 = 300 ms
        assert_eq!(e.rto(), Duration::from_millis(300));
        e.on_sample(Duration::from_millis(100));
        // RTTVAR = 3/4 * 50 = 37.5, SRTT = 100, RTO = 250 ms
        assert_eq!(e.rto(), Duration::from_millis(250));
    }

    #[test]
    fn rto_backs_off_exponentially_up_to_the_maximum() {
        let mut e = est();
        e.on_sample(Duration::from_millis(100));
        let base = e.rto();
        e.back_off();
        assert_eq!(e.rto(), base * 2);
        e.back_off();
        assert_eq!(e.rto(), base * 4);
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
        e.on_sample(Duration::from_millis(100));
        assert_eq!(e.backoff(), 0);
    }

    #[test]
    fn minimum_rto_applies() {
        let mut e = est();
        for _ in 0..50 {
            e.on_sample(Duration::from_millis(10));
        }
        assert_eq!(e.rto(), Duration::from_millis(200));
    }
}
