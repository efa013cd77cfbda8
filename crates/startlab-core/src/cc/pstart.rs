//! P-Start: exponential growth (× (γ+1) per round) below ssthresh/2, then a negatively
//! exponential approach that closes γ/(γ+1) of the gap to ssthresh each round, until the gap is
//! below δ, when cwnd is set to ssthresh.
//!
//! Source: Deng, Chen, Zhang, *A Parameterized Model of TCP Slow Start* (Deng et al.), §2.2
//! (eq. 2 and the algorithm), §2.3 (eq. 3, the γ-parameterized rule, and eq. 4, the adaptive γ).
//! The per-round rule, with W = cwnd at the start of a round and S = ssthresh:
//!
//! ```text
//!            ⎧ (γ + 1) W              if W < S/2                        (eq. 3, first case)
//! W(t + T) = ⎨ (γ S + W) / (γ + 1)    if W ≥ S/2 and S − W ≥ δ          (eq. 3, second case)
//!            ⎩ S                      if W > S or S − W < δ              (eq. 3, third case)
//! ```
//!
//! Realisation per ACK: a round is delimited by sequence number ([`Rounds`]); its case is chosen
//! at its first ACK from W and S then. N = the segments outstanding when the round begins = the
//! segments its ACKs will acknowledge (= W when the window was full).
//! - Exponential round: cwnd += γ per ACKed segment ("cwnd increases γ packets if one packet is
//!   successfully acked", §2.3); over the round's N = W segments: W + γW = (γ + 1) W. ✓
//! - Approach round: the round's target increase is G = γ (S − W)/(γ + 1) (eq. 3: (γS + W)/(γ+1)
//!   − W). Each ACKed segment adds G/N, so after k of the N segments cwnd = W + G·k/N, and at the
//!   end of the round W + G = (γ S + W)/(γ + 1). ✓ (computed from W each time, so the round ends
//!   exactly on eq. 3's value; at most G in total even if more than N segments are ACKed.)
//! - Exit: at the first ACK of a round with S − W < δ, cwnd = S.
//!
//! With γ = 1, δ = 2, W₀ = 1, S = 64 the rounds end at 2, 4, 8, 16, 32 (16 < 32: exponential),
//! 48 (32 ≥ 32: 32 + (64 − 32)/2), 56, 60, 62, 63 (gap 2 ≥ δ), then 64 (gap 1 < δ).
//!
//! Choices where the paper leaves room (each repeated at its line):
//! - Gap test: eq. 2, eq. 3 and the prose ("until (ssthresh − cwnd) is less than δ") continue
//!   while S − W ≥ δ; the algorithm listing (step 5) while S − W > δ. Default eq. 3;
//!   `strict_gap = true` selects step 5 (the example above then ends 60, 62, 64).
//! - Adaptive γ (§2.3): log₂S ≤ 5 ⇒ γ = 1; 5 < log₂S ≤ 10 ⇒ γ = α·log₂(S/5) as printed
//!   ("α × log_2^{ssthresh/5}"), or α·(log₂S)/5, which is continuous with γ = 1 at S = 32
//!   (`adaptive_middle = "ratio-of-log"`); log₂S > 10 ⇒ the smallest γ satisfying eq. 4,
//!   log_{γ+1}(S/2 − δ) ≤ 5, i.e. γ = (S/2 − δ)^{1/5} − 1. γ is never below 1 (§2.3: γ ≥ 1). It
//!   is recomputed at each round from the ssthresh of the moment; with no finite ssthresh the
//!   fixed `gamma` is used.
//! - ssthresh: the configured one, or Hoe's estimate (§2.3: "ssthresh can be gained by the method
//!   of J. Hoe"), which replaces it once, during the first slow start, when three closely spaced
//!   ACKs have been seen ([`HoeEstimator`]).
//! - Step 6 ("3 dup-ACKs or timeout ⇒ re-enter slow start, goto 1") is the controller's business
//!   here: P-Start runs whenever cwnd < ssthresh, including after a timeout with the
//!   controller's ssthresh; fast recovery is the controller's.
//! - Growth counts ACKed segments, not ACKs (the paper's γ per acknowledged packet), so with
//!   delayed ACKs the round's total is still the eq. 3 value; but at most `abc_limit` (2, RFC
//!   3465's L) per ACK, so that a cumulative ACK after a timeout or a repaired hole does not
//!   release a burst of γ × (segments acknowledged).

use super::hoe::{apply_estimate, HoeEstimator};
use super::params::{above, closed, param, AlgorithmConfig, Allowed, Param};
use super::rounds::{RoundEvent, Rounds};
use super::{Ack, AckSample, CaState, CwndEvent, SlowStart, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// Which ssthresh P-Start approaches.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SsthreshSource {
    /// The configured (initial) ssthresh, or the controller's after a loss.
    #[default]
    Configured,
    /// Hoe's packet-pair estimate, once available (Deng et al. §2.3).
    Hoe,
}

/// Reading of the middle band of the adaptive γ rule (5 < log₂ ssthresh ≤ 10).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdaptiveMiddle {
    /// γ = α · log₂(ssthresh / 5), as printed.
    #[default]
    LogOfRatio,
    /// γ = α · log₂(ssthresh) / 5.
    RatioOfLog,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PStartConfig {
    /// Acceleration γ ≥ 1: segments added per ACKed segment below ssthresh/2, and the share
    /// γ/(γ+1) of the gap closed per round above it (§2.3). §2.2's algorithm is γ = 1.
    pub gamma: f64,
    /// Exit distance δ, segments (2 ≤ δ ≤ ssthresh/2; §2.2 uses 2).
    pub delta: f64,
    /// Choose γ from ssthresh by the adaptive rule of §2.3 (eq. 4) instead of `gamma`.
    pub adaptive_gamma: bool,
    /// α ≥ 1 of the adaptive rule's middle band.
    pub alpha: f64,
    /// Reading of the adaptive rule's middle band.
    pub adaptive_middle: AdaptiveMiddle,
    /// Approach while ssthresh − cwnd > δ (algorithm step 5) instead of ≥ δ (eq. 3).
    pub strict_gap: bool,
    /// The ssthresh to approach.
    pub ssthresh_source: SsthreshSource,
    /// Hoe's estimator: largest gap between the three ACKs, as a fraction of the first RTT.
    pub hoe_max_gap: f64,
    /// At most this many ACKed segments count per ACK (RFC 3465's L); 0: no limit.
    pub abc_limit: u32,
}

impl Default for PStartConfig {
    fn default() -> Self {
        PStartConfig {
            gamma: 1.0,
            delta: 2.0,
            adaptive_gamma: false,
            alpha: 1.0,
            adaptive_middle: AdaptiveMiddle::LogOfRatio,
            strict_gap: false,
            ssthresh_source: SsthreshSource::Configured,
            hoe_max_gap: 0.25,
            abc_limit: 2,
        }
    }
}

impl AlgorithmConfig for PStartConfig {
    const PARAMS: &'static [Param] = &[
        param("gamma", "", above(0.0, 100.0), "acceleration: +gamma per ACKed segment below ssthresh/2, gamma/(gamma+1) of the gap per RTT above"),
        param("delta", "segments", above(0.0, 1e6), "exit distance: cwnd = ssthresh once ssthresh - cwnd < delta (segments)"),
        param("adaptive_gamma", "", Allowed::Any, "choose gamma from ssthresh by the adaptive rule (eq. 4) instead of the fixed value"),
        param("alpha", "", above(0.0, 100.0), "alpha of the adaptive rule's middle band (5 < log2 ssthresh <= 10)"),
        param("adaptive_middle", "", Allowed::Any, "middle band: \"log-of-ratio\" alpha*log2(ssthresh/5) or \"ratio-of-log\" alpha*log2(ssthresh)/5"),
        param("strict_gap", "", Allowed::Any, "approach while ssthresh - cwnd > delta (algorithm step 5) instead of >= delta (eq. 3)"),
        param("ssthresh_source", "", Allowed::Any, "\"configured\" or \"hoe\" (Hoe's packet-pair estimate)"),
        param("hoe_max_gap", "", above(0.0, 10.0), "Hoe: three ACKs are closely spaced when each gap is at most this x the first RTT"),
        param("abc_limit", "segments", closed(0.0, 1000.0), "ACKed segments counted per ACK at most (RFC 3465 L; 0: no limit)"),
    ];
}

/// The adaptive γ of §2.3 for ssthresh `s` and exit distance `delta`.
pub fn adaptive_gamma(s: f64, delta: f64, alpha: f64, middle: AdaptiveMiddle) -> f64 {
    let l = s.log2();
    let g = if l <= 5.0 {
        1.0
    } else if l <= 10.0 {
        match middle {
            AdaptiveMiddle::LogOfRatio => alpha * (s / 5.0).log2(),
            AdaptiveMiddle::RatioOfLog => alpha * l / 5.0,
        }
    } else {
        // Eq. 4: log_{γ+1}(S/2 − δ) ≤ 5 ⇔ γ + 1 ≥ (S/2 − δ)^{1/5}; the smallest such γ.
        (s / 2.0 - delta).max(1.0).powf(0.2) - 1.0
    };
    g.max(1.0)
}

#[derive(Copy, Clone, Debug)]
enum Plan {
    /// cwnd += γ per ACKed segment, up to ssthresh.
    Exponential { gamma: f64 },
    /// cwnd = start + target × min(acked, expected) / expected.
    Approach {
        start: f64,
        target: f64,
        expected: u32,
        acked: u32,
    },
}

/// P-Start.
#[derive(Clone, Debug)]
pub struct PStart {
    config: PStartConfig,
    rounds: Rounds,
    new_round: bool,
    plan: Option<Plan>,
    hoe: Option<HoeEstimator>,
}

impl PStart {
    pub fn new(config: PStartConfig) -> Self {
        let hoe = (config.ssthresh_source == SsthreshSource::Hoe)
            .then(|| HoeEstimator::new(config.hoe_max_gap));
        PStart {
            config,
            rounds: Rounds::default(),
            new_round: false,
            plan: None,
            hoe,
        }
    }

    /// A timeout: slow start begins again from cwnd = 1 with fresh rounds.
    fn restart(&mut self) {
        self.hoe = None;
        self.rounds.reset();
        self.plan = None;
        self.new_round = false;
    }

    /// γ for ssthresh `s`.
    pub fn gamma(&self, s: f64) -> f64 {
        if self.config.adaptive_gamma && s.is_finite() && s > 0.0 {
            adaptive_gamma(
                s,
                self.config.delta,
                self.config.alpha,
                self.config.adaptive_middle,
            )
        } else {
            self.config.gamma.max(f64::MIN_POSITIVE)
        }
    }

    /// Chooses the case of eq. 3 for a round starting now; `None` if slow start ends.
    fn plan(&self, tcb: &mut Tcb, ack: &Ack) -> Option<Plan> {
        let (w, s) = (tcb.cwnd, tcb.ssthresh);
        let gamma = self.gamma(s);
        if w < s / 2.0 {
            return Some(Plan::Exponential { gamma });
        }
        let gap = s - w;
        // Eq. 3 (and eq. 2, and the prose): continue while S − W ≥ δ; step 5 of the listing:
        // while S − W > δ.
        let go_on = if self.config.strict_gap {
            gap > self.config.delta
        } else {
            gap >= self.config.delta
        };
        if go_on {
            // The segments this round's ACKs acknowledge: those outstanding before this ACK.
            let expected = (tcb.flight_size() + ack.acked).max(1);
            Some(Plan::Approach {
                start: w,
                target: gamma * gap / (gamma + 1.0),
                expected,
                acked: 0,
            })
        } else {
            None
        }
    }
}

impl SlowStart for PStart {
    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) -> u32 {
        // A window lowered under the round's plan (a loss the hooks did not announce) voids it.
        if let Some(Plan::Approach { start, .. }) = self.plan {
            if tcb.cwnd < start {
                self.plan = None;
            }
        }
        if self.new_round || self.plan.is_none() {
            self.new_round = false;
            self.plan = self.plan(tcb, ack);
            if self.plan.is_none() {
                // Eq. 3, third case: cwnd = ssthresh; slow start is over. This ACK was used.
                tcb.cwnd = tcb.cwnd.max(tcb.ssthresh);
                return 0;
            }
        }
        // Segments counted for this ACK: all of them, up to L (a cumulative ACK after a
        // timeout or a repaired hole must not release a burst).
        let counted = match self.config.abc_limit {
            0 => ack.acked,
            l => ack.acked.min(l),
        };
        match self.plan.as_mut().expect("planned") {
            Plan::Exponential { gamma } => {
                let inc = *gamma * counted as f64;
                let room = (tcb.ssthresh - tcb.cwnd).max(0.0);
                if inc <= room {
                    tcb.cwnd += inc;
                    0
                } else {
                    // Eq. 3, "cwnd > ssthresh ⇒ ssthresh": stop there, give back the segments
                    // not needed to get there.
                    tcb.cwnd = tcb.cwnd.max(tcb.ssthresh);
                    let used = (room / *gamma).ceil() as u32;
                    counted.saturating_sub(used)
                }
            }
            Plan::Approach {
                start,
                target,
                expected,
                acked,
            } => {
                *acked = acked.saturating_add(counted);
                let k = (*acked).min(*expected) as f64;
                tcb.cwnd = tcb.cwnd.max(*start + *target * k / *expected as f64);
                0
            }
        }
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        if let Some(h) = self.hoe.as_mut() {
            if let Some(est) = h.on_ack(sample, now) {
                self.hoe = None;
                if matches!(tcb.ca_state, CaState::Open | CaState::Disorder) && tcb.in_slow_start()
                {
                    apply_estimate(tcb, est);
                    // A new ssthresh: choose the case again at the next ACK.
                    self.plan = None;
                }
            }
        }
        if self.rounds.on_ack(tcb) != RoundEvent::Same {
            self.new_round = true;
        }
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        match state {
            CaState::Loss => self.restart(),
            CaState::Recovery | CaState::Cwr => {
                // Hoe's estimate sets the initial ssthresh only.
                self.hoe = None;
                self.plan = None;
            }
            CaState::Open | CaState::Disorder => {}
        }
    }

    fn cwnd_event(&mut self, _tcb: &mut Tcb, event: CwndEvent, _now: Time) {
        // Every timeout, also one while already in Loss (no state change then).
        if event == CwndEvent::Loss {
            self.restart();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::registry::{self, Params};
    use crate::cc::testing::Driver;
    use crate::time::Duration;

    fn pstart(params: serde_json::Value) -> Box<dyn crate::cc::CongestionControl> {
        let p: Params = serde_json::from_value(params).unwrap();
        registry::build("newreno", &Params::new(), "pstart", &p).unwrap()
    }

    /// γ = 1, δ = 2, from cwnd 1 toward ssthresh 64 (derivation in the module docs):
    /// exponential while the round starts below 32, then each round closes half the gap while
    /// the gap is at least 2, then cwnd = 64 at the first ACK of the round whose gap is 1.
    #[test]
    fn gamma_one_delta_two_from_one_to_sixty_four() {
        let mut d = Driver::new(
            pstart(serde_json::json!({"gamma": 1, "delta": 2})),
            1.0,
            64.0,
        );
        let rtt = Duration::from_millis(100);
        let w: Vec<f64> = (0..10).map(|_| d.round(rtt)).collect();
        assert_eq!(w, [2.0, 4.0, 8.0, 16.0, 32.0, 48.0, 56.0, 60.0, 62.0, 63.0]);
        // Round 11: gap 1 < δ: the first ACK sets cwnd = 64; the other 62 go to NewReno's
        // congestion avoidance (+1/cwnd each).
        let w11 = d.round(rtt);
        assert!(w11 > 64.9 && w11 < 65.0, "{w11}");
        assert!(!d.tcb.in_slow_start());
    }

    /// Inside an approach round cwnd rises linearly with the ACKed segments: round 6 starts at
    /// 32 with target 16 over 32 ACKs, so half a segment per ACK.
    #[test]
    fn approach_increment_is_spread_over_the_round() {
        let mut d = Driver::new(pstart(serde_json::json!({})), 1.0, 64.0);
        for _ in 0..5 {
            d.round(Duration::from_millis(100));
        }
        d.send();
        d.advance(Duration::from_millis(100));
        for k in 1..=32 {
            d.ack(1);
            assert_eq!(d.tcb.cwnd, 32.0 + 0.5 * k as f64);
        }
    }

    /// A window lowered under an approach round's plan without a state change (a repeated
    /// timeout, say) does not jump back to the plan: the round is planned again from the new
    /// window (1 < 32: exponential).
    #[test]
    fn a_lowered_window_voids_the_round_plan() {
        let mut d = Driver::new(pstart(serde_json::json!({})), 1.0, 64.0);
        for _ in 0..5 {
            d.round(Duration::from_millis(100));
        }
        d.send();
        d.advance(Duration::from_millis(100));
        d.ack(1);
        assert_eq!(d.tcb.cwnd, 32.5);
        d.tcb.cwnd = 1.0;
        d.ack(1);
        assert_eq!(d.tcb.cwnd, 2.0);
    }

    /// Step 5's strict test: at 62 the gap (2) is not above δ, so cwnd = 64 one round earlier.
    #[test]
    fn strict_gap_reading_exits_a_round_earlier() {
        let mut d = Driver::new(pstart(serde_json::json!({"strict_gap": true})), 1.0, 64.0);
        let w: Vec<f64> = (0..9)
            .map(|_| d.round(Duration::from_millis(100)))
            .collect();
        assert_eq!(w[5..], [48.0, 56.0, 60.0, 62.0]);
        let w10 = d.round(Duration::from_millis(100));
        assert!(w10 > 64.0 && w10 < 65.0, "{w10}");
    }

    /// γ = 3, δ = 2. From 1 toward ssthresh 1024: ×4 per round while the round starts below
    /// 512: 4, 16, 64, 256, then 256 + 3 × 256 = 1024 (eq. 3, third case caps it there).
    /// From 150 toward 300 (150 ≥ 150): each round adds 3/4 of the gap: 262.5 (+ 112.5),
    /// then 290.625 (+ 28.125), 297.65625 (+ 7.03125), 299.4140625 (+ 1.7578125); then the
    /// gap (0.59) is below δ: cwnd = 300.
    #[test]
    fn gamma_three_quadruples_then_closes_three_quarters_of_the_gap() {
        let mut d = Driver::new(pstart(serde_json::json!({"gamma": 3})), 1.0, 1024.0);
        let w: Vec<f64> = (0..5)
            .map(|_| d.round(Duration::from_millis(100)))
            .collect();
        assert_eq!(w, [4.0, 16.0, 64.0, 256.0, 1024.0]);

        let mut d = Driver::new(pstart(serde_json::json!({"gamma": 3})), 150.0, 300.0);
        let w: Vec<f64> = (0..4)
            .map(|_| d.round(Duration::from_millis(100)))
            .collect();
        let want = [262.5, 290.625, 297.65625, 299.4140625];
        for (a, b) in w.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{w:?}");
        }
        d.round(Duration::from_millis(100));
        assert!(!d.tcb.in_slow_start());
    }

    /// §2.3: log₂S ≤ 5 ⇒ 1; S = 256 (log₂ = 8): log₂(256/5) = 5.68 as printed, or 8/5 = 1.6;
    /// S = 4096: (2048 − 2)^{1/5} − 1 = 3.58, and then log₄.₅₈(2046) = 5.
    #[test]
    fn adaptive_gamma_bands() {
        assert_eq!(
            adaptive_gamma(32.0, 2.0, 1.0, AdaptiveMiddle::LogOfRatio),
            1.0
        );
        let g = adaptive_gamma(256.0, 2.0, 1.0, AdaptiveMiddle::LogOfRatio);
        assert!((g - (51.2f64).log2()).abs() < 1e-12);
        let g = adaptive_gamma(256.0, 2.0, 1.0, AdaptiveMiddle::RatioOfLog);
        assert!((g - 1.6).abs() < 1e-12);
        let g = adaptive_gamma(4096.0, 2.0, 1.0, AdaptiveMiddle::LogOfRatio);
        assert!(
            ((2046.0f64).ln() / (g + 1.0).ln() - 5.0).abs() < 1e-9,
            "{g}"
        );
    }

    /// Hoe's estimate as ssthresh: ACKs spread over 10 ms per round on a 100 ms RTT; round 3's
    /// four ACKs 2.5 ms apart give 400 segments/s × 100 ms = 40 (see `hoe.rs`). Then P-Start
    /// with γ = 1, δ = 2: 8 → 16 → 32 (16 < 20) → 36 (32 ≥ 20, half the gap of 8) → 38 → 39
    /// (gap 2) → 40.
    #[test]
    fn ssthresh_from_hoe() {
        let mut d = Driver::new(
            pstart(serde_json::json!({"ssthresh_source": "hoe"})),
            1.0,
            f64::INFINITY,
        );
        let rtt = Duration::from_millis(100);
        let spread = Duration::from_millis(10);
        let w: Vec<f64> = (0..8).map(|_| d.round_spread(rtt, spread)).collect();
        assert!((d.tcb.ssthresh - 40.0).abs() < 1e-6, "{}", d.tcb.ssthresh);
        assert_eq!(w[..3], [2.0, 4.0, 8.0]);
        for (a, b) in w[3..].iter().zip([16.0, 32.0, 36.0, 38.0, 39.0]) {
            assert!((a - b).abs() < 1e-6, "{w:?}");
        }
    }

    #[test]
    fn timeout_restarts_from_one_toward_the_new_ssthresh() {
        let mut d = Driver::new(pstart(serde_json::json!({})), 1.0, 64.0);
        for _ in 0..6 {
            d.round(Duration::from_millis(100));
        }
        d.send();
        d.timeout();
        // NewReno: ssthresh = 48 / 2 = 24; P-Start: 1, 2, 4, 8, 16 (8 < 12), 20 (16 ≥ 12),
        // 22, 23 (gap 2), then 24 at the first ACK of the next round (and NewReno after).
        let w: Vec<f64> = (0..8)
            .map(|_| d.round(Duration::from_millis(100)))
            .collect();
        assert_eq!(w[..7], [2.0, 4.0, 8.0, 16.0, 20.0, 22.0, 23.0]);
        assert!(w[7] > 24.0 && w[7] < 25.0, "{w:?}");
    }
}
