//! RTT estimation and the retransmission timeout (RFC 6298, or Linux `tcp_rtt_estimator`).

use super::RtoAlgorithm;
use crate::time::Duration;

/// Linux's estimator state (`mdev_us`, `mdev_max_us`, `rttvar_us`, `rtt_seq`), in ns.
#[derive(Clone, Debug, Default)]
struct LinuxVar {
    /// 4 × mean deviation (`mdev_us` is kept scaled by 4).
    mdev4: u64,
    /// Largest `mdev4` in the current round trip, at least `min_rto`.
    mdev_max: u64,
    /// What the RTO adds to SRTT (`rttvar_us`).
    rttvar: u64,
    /// The round trip ends when `snd_una` passes this (`rtt_seq`).
    rtt_seq: u32,
}

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
    /// Linux's computation instead of RFC 6298's.
    linux: Option<LinuxVar>,
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
            linux: None,
        }
    }

    pub fn with_algorithm(mut self, a: RtoAlgorithm) -> Self {
        self.linux = (a == RtoAlgorithm::Linux).then(LinuxVar::default);
        self
    }

    /// Linux `tcp_rtt_estimator` + `tcp_set_rto`: a sample `r` taken when `snd_una` is `una`
    /// and `snd_nxt` is `nxt` (the round trip of the variance decay). Resets the back-off
    /// (`tcp_ack_update_rtt`).
    pub fn on_sample_linux(&mut self, r: Duration, una: u32, nxt: u32) {
        let Some(v) = self.linux.as_mut() else {
            return self.on_sample(r);
        };
        let m = r.as_nanos().max(1);
        let min_rto = self.min_rto.as_nanos();
        match self.srtt {
            None => {
                // "make sure rto = 3*rtt": mdev = m/2, so 4 × mdev = 2m.
                self.srtt = Some(r);
                v.mdev4 = 2 * m;
                v.mdev_max = v.mdev4.max(min_rto);
                v.rttvar = v.mdev_max;
                v.rtt_seq = nxt;
            }
            Some(srtt) => {
                let s = srtt.as_nanos() as i128;
                let err = m as i128 - s;
                // srtt = 7/8 srtt + 1/8 new (tcp_rtt_estimator keeps srtt × 8).
                self.srtt = Some(Duration::from_nanos((s + err / 8).max(1) as u64));
                let mdev = v.mdev4 as i128 / 4;
                let mut e = err.abs() - mdev;
                if err < 0 && e > 0 {
                    // A falling RTT moves mdev with the finer gain 1/32 (Eifel-like).
                    e /= 8;
                }
                v.mdev4 = (v.mdev4 as i128 + e).max(0) as u64;
                if v.mdev4 > v.mdev_max {
                    v.mdev_max = v.mdev4;
                    v.rttvar = v.rttvar.max(v.mdev_max);
                }
                // Once per round trip: rttvar decays a quarter of the way to mdev_max, and
                // mdev_max restarts from the minimum RTO.
                if una > v.rtt_seq {
                    if v.mdev_max < v.rttvar {
                        v.rttvar -= (v.rttvar - v.mdev_max) / 4;
                    }
                    v.rtt_seq = nxt;
                    v.mdev_max = min_rto;
                }
            }
        }
        // __tcp_set_rto: srtt + rttvar, in whole jiffies (usecs_to_jiffies rounds up);
        // tcp_bound_rto caps it.
        let raw = self.srtt.unwrap().as_nanos() + v.rttvar;
        let g = self.granularity.as_nanos().max(1);
        let rto = Duration::from_nanos(raw.div_ceil(g) * g);
        self.base_rto = rto.min(self.max_rto);
        self.backoff = 0;
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
        // RTO = SRTT + max(G, K * RTTVAR), bounded below by min_rto (§2.4) and above by max_rto (§2.5).
        let rto = self.srtt.unwrap() + self.rfc6298_variance_term();
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

    /// What the RTO adds to SRTT before its bounds: Linux's `rttvar_us`, or RFC 6298's
    /// max(G, 4 × RTTVAR) (§2.3); zero before the first sample.
    pub fn rttvar(&self) -> Duration {
        match &self.linux {
            Some(l) => Duration::from_nanos(l.rttvar),
            None if self.srtt.is_none() => Duration::ZERO,
            None => self.rfc6298_variance_term(),
        }
    }

    /// RFC 6298 §2.3's max(G, K × RTTVAR), K = 4: what its RTO adds to SRTT.
    fn rfc6298_variance_term(&self) -> Duration {
        (self.rttvar * 4).max(self.granularity)
    }

    /// Linux's `mdev_max_us`, zero under RFC 6298.
    pub fn mdev_max(&self) -> Duration {
        Duration::from_nanos(self.linux.as_ref().map_or(0, |l| l.mdev_max))
    }

    /// Linux's `mdev_us` (4 × the mean deviation), zero under RFC 6298.
    pub fn mdev4(&self) -> Duration {
        Duration::from_nanos(self.linux.as_ref().map_or(0, |l| l.mdev4))
    }

    /// An RTO set from outside the estimator until its next sample (`tcp_init_metrics`).
    pub fn set_rto(&mut self, rto: Duration) {
        self.base_rto = rto.max(self.min_rto).min(self.max_rto);
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
    fn linux_rto_is_srtt_plus_at_least_the_minimum_rto() {
        // Jiffies of 4 ms (HZ = 250).
        let mut e = RttEstimator::new(
            Duration::from_secs(1),
            Duration::from_millis(200),
            Duration::from_secs(120),
            Duration::from_millis(4),
        )
        .with_algorithm(RtoAlgorithm::Linux);
        // First sample 100 ms: mdev = 50 ms, 4 mdev = 200 ms = rto_min: RTO = 100 + 200.
        e.on_sample_linux(Duration::from_millis(100), 0, 10);
        assert_eq!(e.rto(), Duration::from_millis(300));
        // RFC 6298 gives 300 ms too here; the difference shows with a small RTT: 10 ms.
        let mut f = e.clone();
        f.srtt = None;
        f.on_sample_linux(Duration::from_millis(10), 0, 10);
        // 4 mdev = 20 ms < rto_min: rttvar = 200 ms, RTO = 10 + 200 = 210 ms, up to the next
        // whole jiffy: 212 ms (RFC 6298: 200).
        assert_eq!(f.rto(), Duration::from_millis(212));
        // A second 10 ms sample in the same round trip: err = 0, mdev4 = 20 - 20/4 = 15 ms;
        // rttvar stays 200 ms: RTO 212 ms again.
        f.on_sample_linux(Duration::from_millis(10), 5, 20);
        assert_eq!(f.rto(), Duration::from_millis(212));
        // A sample of 12 ms after the round trip (una 11 > rtt_seq 10): srtt = 10 + 2/8 = 10.25;
        // mdev4 = 15 + (2 - 3.75) = 13.25 ms; rttvar decays to max(mdev_max) = 200 ms (it
        // already is): RTO = 210.25 ms, up to the next jiffy: 212 ms.
        f.on_sample_linux(Duration::from_millis(12), 11, 30);
        assert_eq!(f.rto(), Duration::from_millis(212));
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
