//! Hoe's packet-pair slow-start threshold: the initial ssthresh is the bottleneck bandwidth,
//! estimated by least squares over three closely spaced ACKs, times the RTT of the first
//! segment; slow start is otherwise standard.
//!
//! Source: Wang et al., *TCP Startup Performance in Large Bandwidth Delay Networks* (Wang et al. 2004),
//! §III.C, describing J. Hoe, *Improving the Start-up Behavior of a Congestion Control Scheme for
//! TCP* (SIGCOMM 1996). Deng et al. (Deng et al., §2.3) suggest the same estimate as P-Start's
//! ssthresh, so [`HoeEstimator`] is public and used by `pstart`.
//!
//! Choices where the description leaves room (each repeated at its line):
//! - "closely spaced": three consecutive data-acknowledging ACKs whose two gaps are each at most
//!   `max_gap` × the first RTT (default a quarter). In slow start the ACKs of one flight come
//!   spaced by the bottleneck, while consecutive flights are about an RTT apart and a delayed-ACK
//!   timer adds a gap of its timeout, so both are excluded.
//! - The least-squares fit is of the cumulative delivered segments against ACK arrival time; its
//!   slope is the bandwidth (segments per second). Delayed ACKs (two segments each) need no
//!   special case.
//! - The estimate is taken once, before any loss; it replaces ssthresh only while the connection
//!   is still in its first slow start. If it is at or below cwnd, slow start ends at once (reported
//!   as `hoe-estimate`). ssthresh is at least 2 segments.

use super::params::{above, param, AlgorithmConfig, Param};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, AckSample, CaState, CwndEvent, ExitReason, SlowStart, Tcb};
use crate::time::{Duration, Time};
use serde::{Deserialize, Serialize};

/// The least-squares slope of `points` (x in seconds, y in segments); `None` if every x is equal.
fn least_squares_slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Hoe's bandwidth × delay estimate, fed with every ACK that delivers data.
#[derive(Clone, Debug)]
pub struct HoeEstimator {
    max_gap: f64,
    first_rtt: Option<Duration>,
    /// The last three ACKs: (arrival time, cumulative segments delivered).
    recent: Vec<(Time, f64)>,
    delivered: f64,
    bandwidth: Option<f64>,
    estimate: Option<f64>,
}

impl HoeEstimator {
    /// `max_gap`: the largest gap between consecutive ACKs of the triple, as a fraction of the
    /// first RTT.
    pub fn new(max_gap: f64) -> Self {
        HoeEstimator {
            max_gap,
            first_rtt: None,
            recent: Vec::with_capacity(3),
            delivered: 0.0,
            bandwidth: None,
            estimate: None,
        }
    }

    /// Feeds one ACK; returns the estimate (segments) the first time it can be made.
    pub fn on_ack(&mut self, sample: &AckSample, now: Time) -> Option<f64> {
        if self.estimate.is_some() {
            return None;
        }
        // "RTT is obtained by measuring the round trip time of the first segment transmitted":
        // the first RTT sample (Karn's rule already excludes retransmissions).
        if self.first_rtt.is_none() {
            self.first_rtt = sample.rtt;
        }
        self.delivered += sample.acked as f64;
        let rtt = self.first_rtt?;
        if self.recent.len() == 3 {
            self.recent.remove(0);
        }
        self.recent.push((now, self.delivered));
        if self.recent.len() < 3 {
            return None;
        }
        let limit = rtt.as_secs_f64() * self.max_gap;
        let close = self
            .recent
            .windows(2)
            .all(|w| w[1].0.saturating_since(w[0].0).as_secs_f64() <= limit);
        if !close {
            return None;
        }
        let t0 = self.recent[0].0;
        let points: Vec<(f64, f64)> = self
            .recent
            .iter()
            .map(|&(t, y)| (t.saturating_since(t0).as_secs_f64(), y))
            .collect();
        let slope = least_squares_slope(&points).filter(|s| *s > 0.0 && s.is_finite())?;
        self.bandwidth = Some(slope);
        let est = slope * rtt.as_secs_f64();
        self.estimate = Some(est);
        Some(est)
    }

    /// The bandwidth estimate, segments per second.
    pub fn bandwidth(&self) -> Option<f64> {
        self.bandwidth
    }

    /// Bandwidth × first RTT, segments.
    pub fn estimate(&self) -> Option<f64> {
        self.estimate
    }
}

/// Sets ssthresh from Hoe's estimate during the first slow start; ends slow start (with the
/// `hoe-estimate` reason) if the estimate is not above cwnd.
pub fn apply_estimate(tcb: &mut Tcb, estimate: f64) {
    let s = estimate.max(2.0);
    tcb.ssthresh = s;
    if tcb.cwnd >= s {
        tcb.exit_reason_hint = Some(ExitReason::Detector("hoe-estimate"));
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HoeConfig {
    /// Largest gap between consecutive ACKs of the triple, as a fraction of the first RTT.
    pub max_gap: f64,
}

impl Default for HoeConfig {
    fn default() -> Self {
        HoeConfig { max_gap: 0.25 }
    }
}

impl AlgorithmConfig for HoeConfig {
    const PARAMS: &'static [Param] = &[param(
        "max_gap",
        "",
        above(0.0, 10.0),
        "three ACKs are closely spaced when each gap is at most max_gap x the first RTT",
    )];
}

/// Standard slow start whose ssthresh is replaced by Hoe's estimate once it is available.
#[derive(Clone, Debug)]
pub struct Hoe {
    estimator: HoeEstimator,
    /// The estimate has been applied or can no longer be (a loss came first).
    done: bool,
}

impl Hoe {
    pub fn new(config: HoeConfig) -> Self {
        Hoe {
            estimator: HoeEstimator::new(config.max_gap),
            done: false,
        }
    }
}

impl SlowStart for Hoe {
    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) -> u32 {
        // RFC 5681 slow start: one segment per ACK.
        grow_to_ssthresh(tcb, ack.acked.min(1), ack.acked)
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        if self.done {
            return;
        }
        if let Some(est) = self.estimator.on_ack(sample, now) {
            self.done = true;
            if matches!(tcb.ca_state, CaState::Open | CaState::Disorder) && tcb.in_slow_start() {
                apply_estimate(tcb, est);
            }
        }
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        // The estimate sets the *initial* ssthresh; a loss before it is made settles ssthresh.
        if matches!(state, CaState::Recovery | CaState::Loss) {
            self.done = true;
        }
    }

    fn cwnd_event(&mut self, _tcb: &mut Tcb, event: CwndEvent, _now: Time) {
        if event == CwndEvent::Loss {
            self.done = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::registry::{self, Params};
    use crate::cc::testing::Driver;

    fn sample(acked: u32, rtt_ms: u64) -> AckSample {
        AckSample {
            acked,
            rtt: Some(Duration::from_millis(rtt_ms)),
            prior_in_flight: 0,
        }
    }

    /// A 12 Mbps bottleneck with 1500-byte packets on the wire spaces ACKs by 1 ms: 1000
    /// segments/s. First RTT 100 ms: the estimate is 1000 × 0.1 = 100 segments.
    #[test]
    fn three_acks_at_the_bottleneck_rate_give_bandwidth_times_first_rtt() {
        let mut h = HoeEstimator::new(0.25);
        let t = |us: u64| Time::from_nanos(us * 1000);
        // First ACK (first RTT sample), then the next flight one RTT later.
        assert_eq!(h.on_ack(&sample(1, 100), t(100_000)), None);
        assert_eq!(h.on_ack(&sample(1, 100), t(200_000)), None);
        assert_eq!(h.on_ack(&sample(1, 100), t(201_000)), None); // gap of 100 ms in the triple
        let est = h.on_ack(&sample(1, 101), t(202_000)).unwrap();
        assert!((h.bandwidth().unwrap() - 1000.0).abs() < 1e-6);
        assert!((est - 100.0).abs() < 1e-6, "{est}");
        // Only once.
        assert_eq!(h.on_ack(&sample(1, 100), t(203_000)), None);
    }

    /// Delayed ACKs: two segments every 2 ms is the same 1000 segments/s; with uneven spacing
    /// the least-squares slope of (0, 6), (1.5 ms, 8), (4 ms, 10) is
    /// Σ(x−x̄)(y−ȳ)/Σ(x−x̄)² with x̄ = 1.8333 ms, ȳ = 8: (−1.8333·−2 + 0 + 2.1667·2)/(3.3611 +
    /// 0.1111 + 4.6944) ms⁻¹ = 8/8.1667 per ms = 979.6 segments/s.
    #[test]
    fn least_squares_over_uneven_delayed_acks() {
        let mut h = HoeEstimator::new(0.25);
        let t = |us: u64| Time::from_nanos(us * 1000);
        // Gaps of 51.5 and 28.5 ms exceed 0.25 × 50 ms = 12.5 ms: no triple until the fifth ACK.
        assert_eq!(h.on_ack(&sample(2, 50), t(50_000)), None);
        assert_eq!(h.on_ack(&sample(2, 50), t(101_500)), None);
        assert_eq!(h.on_ack(&sample(2, 50), t(130_000)), None);
        assert_eq!(h.on_ack(&sample(2, 50), t(131_500)), None);
        let est = h.on_ack(&sample(2, 50), t(134_000)).unwrap();
        // Triple: 130.0, 131.5, 134.0 ms: x = 0, 1.5, 4.0 ms; y = 6, 8, 10.
        let bw = h.bandwidth().unwrap();
        assert!((bw - 8.0 / 8.1667e-3).abs() < 0.1, "{bw}");
        assert!((est - bw * 0.05).abs() < 1e-9);
    }

    #[test]
    fn acks_all_at_the_same_instant_give_no_estimate() {
        let mut h = HoeEstimator::new(0.25);
        for _ in 0..5 {
            assert_eq!(h.on_ack(&sample(1, 100), Time::from_nanos(5)), None);
        }
    }

    /// On the Driver, ACKs of a round spread over 10 ms: with 4 segments per round-3 flight the
    /// ACKs come 2.5 ms apart (400 segments/s); first RTT 100 ms: ssthresh = 40. Slow start then
    /// continues to 40 (1, 2, 4, 8, 16, 32, 40 + congestion avoidance).
    #[test]
    fn ssthresh_is_set_from_the_estimate_and_slow_start_stops_there() {
        let c = registry::build("newreno", &Params::new(), "hoe", &Params::new()).unwrap();
        let mut d = Driver::new(c, 1.0, 32.0);
        let rtt = Duration::from_millis(100);
        // Round 1: one ACK. Round 2: two ACKs 5 ms apart (spread 10 ms / 2). Round 3: four ACKs
        // 2.5 ms apart: the first triple within round 3 gives 1 / 2.5 ms = 400 segments/s.
        d.round_spread(rtt, Duration::from_millis(10));
        d.round_spread(rtt, Duration::from_millis(10));
        assert_eq!(d.tcb.ssthresh, 32.0);
        d.round_spread(rtt, Duration::from_millis(10));
        // The RTT of the first segment: 100 ms. Estimate 400 × 0.1 = 40.
        assert!((d.tcb.ssthresh - 40.0).abs() < 1e-6, "{}", d.tcb.ssthresh);
        let w: Vec<f64> = (0..3)
            .map(|_| d.round_spread(rtt, Duration::from_millis(10)))
            .collect();
        assert_eq!(w[..2], [16.0, 32.0]);
        assert!(w[2] > 40.0 && w[2] < 41.0, "{w:?}");
    }

    #[test]
    fn an_estimate_below_cwnd_ends_slow_start_with_its_reason() {
        let mut t = Tcb::new(1000, 1040, 50.0, f64::INFINITY);
        apply_estimate(&mut t, 40.0);
        assert_eq!(t.ssthresh, 40.0);
        assert!(!t.in_slow_start());
        assert_eq!(
            t.exit_reason_hint,
            Some(ExitReason::Detector("hoe-estimate"))
        );
    }
}
