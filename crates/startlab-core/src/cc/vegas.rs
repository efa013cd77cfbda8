//! TCP Vegas: congestion avoidance on the estimated backlog Δ, and its modified slow start that
//! doubles the window only every other round trip.
//!
//! Sources: Ho, Chan, Chen, *An Enhanced Slow-Start Mechanism for TCP Vegas* (Ho et al.), §2,
//! which gives eq. (1) and the slow-start exit rule (Δ > γ, cwnd cut by 1/8) with the defaults
//! α = 1, β = 3, γ = 1; Wang et al., *TCP Startup Performance in Large Bandwidth Delay Networks*
//! (Wang et al. 2004), §III.D, which times the check: it is made only at the start of the round trip in
//! which cwnd is doubled, so the RTT it uses was measured while the previous doubling's queue was
//! draining. Both papers cite Brakmo and Peterson (1995) for the rest of Vegas (the +1 / −1
//! segment per RTT of congestion avoidance).
//!
//! Two names are registered: `vegas` (a controller: this slow start, Vegas congestion avoidance,
//! a loss response) and `vegas-ss` (the slow start alone, as a start-up algorithm on another
//! controller, which is how Wang et al. 2004 Table 3 / Fig. 4 looks at it).
//!
//! Rounds are delimited by [`super::rounds::Rounds`], which Gallop-Vegas and P-Start share.

use super::params::{closed, open, param, require, AlgorithmConfig, Allowed, Param, ParamError};
use super::rounds::{RoundEvent, RoundRtt, Rounds, RttStats};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, AckSample, CaState, CongestionControl, CwndEvent, ExitReason, SlowStart, Tcb};
use crate::time::{Duration, Time};
use serde::{Deserialize, Serialize};

// ----- rounds ---------------------------------------------------------------------------------

/// How a round ended, as [`VegasMeter`] reports it.
#[derive(Copy, Clone, Debug)]
pub enum Boundary {
    /// The first round after a (re)start begins; there is nothing to judge yet.
    First,
    /// A round ended with these RTT samples.
    Next(RttStats),
}

/// Eq. (1) of Ho et al.: Δ = (Expected − Actual) × BaseRTT = W (D − d) / D, in segments, with
/// Expected = W / d and Actual = W / D. Zero when D is zero (no queue can be inferred).
pub fn backlog(window: f64, rtt: f64, base_rtt: f64) -> f64 {
    if rtt > 0.0 && rtt.is_finite() {
        (window * (rtt - base_rtt) / rtt).max(0.0)
    } else {
        0.0
    }
}

/// RTT bookkeeping shared by Vegas, Vegas slow start and Gallop-Vegas: BaseRTT (the smallest
/// RTT ever seen) and the samples of the current round.
#[derive(Clone, Debug, Default)]
pub struct VegasMeter {
    rounds: Rounds,
    base_rtt: Option<Duration>,
    current: RttStats,
    boundary: Option<Boundary>,
}

impl VegasMeter {
    /// Every ACK that delivers data (`pkts_acked`). A round boundary found here is kept until
    /// [`VegasMeter::take_boundary`]; the ACK's own sample goes to the round it begins.
    pub fn on_ack(&mut self, tcb: &Tcb, sample: &AckSample) {
        match self.rounds.on_ack(tcb) {
            RoundEvent::Same => {}
            RoundEvent::First => {
                self.current = RttStats::default();
                self.boundary = Some(Boundary::First);
            }
            RoundEvent::Next => {
                self.boundary = Some(Boundary::Next(std::mem::take(&mut self.current)));
            }
        }
        if let Some(rtt) = sample.rtt {
            self.current.add(rtt);
            self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
        }
    }

    /// The round that ended at the last ACK, once.
    pub fn take_boundary(&mut self) -> Option<Boundary> {
        self.boundary.take()
    }

    pub fn base_rtt(&self) -> Option<Duration> {
        self.base_rtt
    }

    /// Δ of eq. (1) for window `w` over a finished round; `None` without samples. With
    /// `integer`, Δ is rounded to the nearest whole segment as ns-2's Vegas does
    /// (`int(x + 0.5)`).
    pub fn delta(&self, w: f64, stats: &RttStats, which: RoundRtt, integer: bool) -> Option<f64> {
        let d = stats.rtt(which)?;
        let base = self.base_rtt?.as_secs_f64();
        let delta = backlog(w, d, base);
        Some(if integer {
            (delta + 0.5).floor()
        } else {
            delta
        })
    }

    /// Starts counting rounds afresh (after a timeout); BaseRTT is kept.
    pub fn restart(&mut self) {
        self.rounds.reset();
        self.current = RttStats::default();
        self.boundary = None;
    }
}

// ----- slow start ------------------------------------------------------------------------------

/// Vegas's modified slow start: rounds alternate between growth (cwnd += 1 per ACK, so the
/// window doubles) and hold (cwnd fixed, so the RTT of a known window can be measured). At the
/// end of each hold round Δ is computed; if Δ > γ slow start ends with cwnd cut by 1/8.
#[derive(Clone, Debug)]
pub struct VegasSlowStartCore {
    pub gamma: f64,
    pub round_rtt: RoundRtt,
    pub integer_delta: bool,
    pub first_round_grows: bool,
    /// Whether the current round is a growth round; `None` before the first round.
    growing: Option<bool>,
}

impl VegasSlowStartCore {
    pub fn new(
        gamma: f64,
        round_rtt: RoundRtt,
        integer_delta: bool,
        first_round_grows: bool,
    ) -> Self {
        VegasSlowStartCore {
            gamma,
            round_rtt,
            integer_delta,
            first_round_grows,
            growing: None,
        }
    }

    /// At a round boundary while in slow start. Returns `true` if slow start ended here.
    pub fn on_boundary(&mut self, tcb: &mut Tcb, boundary: Boundary, meter: &VegasMeter) -> bool {
        match (self.growing, boundary) {
            (None, _) | (_, Boundary::First) => {
                // The first round: nothing measured yet. Brakmo's and ns-2's code begin with a
                // hold round; we begin with a growth round unless told otherwise (a hold round
                // with the initial window measures nothing a later hold round would not).
                self.growing = Some(self.first_round_grows);
                false
            }
            (Some(true), _) => {
                self.growing = Some(false);
                false
            }
            (Some(false), Boundary::Next(stats)) => {
                // Wang et al. 2004 §III.D: the check is made at the start of the round in which cwnd
                // would be doubled, with the RTT of the hold round that just ended.
                let delta = meter.delta(tcb.cwnd, &stats, self.round_rtt, self.integer_delta);
                // Ho et al. §2: "When Δ > γ, Vegas leaves the slow-start phase" (strict). A hold
                // round without RTT samples (all retransmissions) gives no evidence: grow.
                if delta.is_some_and(|d| d > self.gamma) {
                    // Ho et al. §2: "decreases its congestion window size by 1/8". Never below
                    // two segments unless it was already (ns-2 floors at 2; we never raise).
                    let cut = tcb.cwnd - tcb.cwnd / 8.0;
                    tcb.cwnd = cut.max(tcb.cwnd.min(2.0));
                    tcb.ssthresh = tcb.cwnd;
                    tcb.exit_reason_hint = Some(ExitReason::Detector("vegas-gamma"));
                    self.growing = None;
                    true
                } else {
                    self.growing = Some(true);
                    false
                }
            }
        }
    }

    /// Growth for one ACK in slow start; returns the ACKed segments left for congestion
    /// avoidance (when cwnd reaches ssthresh in a growth round).
    pub fn grow(&self, tcb: &mut Tcb, ack: &Ack) -> u32 {
        if self.growing == Some(true) {
            // One segment per ACK, as Reno's slow start (RFC 5681 counting).
            grow_to_ssthresh(tcb, ack.acked.min(1), ack.acked)
        } else {
            0
        }
    }

    pub fn reset(&mut self) {
        self.growing = None;
    }
}

// ----- congestion avoidance ---------------------------------------------------------------------

/// Vegas congestion avoidance: once per round, Δ < α ⇒ cwnd grows by one segment over the next
/// round (1/cwnd per ACK); Δ > β ⇒ cwnd −= 1 at once; otherwise cwnd is left alone.
#[derive(Clone, Debug)]
pub struct VegasCaCore {
    pub alpha: f64,
    pub beta: f64,
    pub round_rtt: RoundRtt,
    pub integer_delta: bool,
    increase: bool,
}

impl VegasCaCore {
    pub fn new(alpha: f64, beta: f64, round_rtt: RoundRtt, integer_delta: bool) -> Self {
        VegasCaCore {
            alpha,
            beta,
            round_rtt,
            integer_delta,
            // Before the first judgement the window grows as Reno's would.
            increase: true,
        }
    }

    /// At the end of a round in congestion avoidance.
    pub fn on_round(&mut self, tcb: &mut Tcb, stats: &RttStats, meter: &VegasMeter) {
        let Some(delta) = meter.delta(tcb.cwnd, stats, self.round_rtt, self.integer_delta) else {
            return;
        };
        if delta < self.alpha {
            self.increase = true;
        } else if delta > self.beta {
            self.increase = false;
            tcb.cwnd = (tcb.cwnd - 1.0).max(tcb.cwnd.min(2.0));
            // Keep ssthresh at or below cwnd so a decrease does not restart slow start.
            tcb.ssthresh = tcb.ssthresh.min(tcb.cwnd);
        } else {
            self.increase = false;
        }
    }

    /// Do not change cwnd during the next round (after a slow-start exit).
    pub fn hold(&mut self) {
        self.increase = false;
    }

    /// Growth for one ACK in congestion avoidance: 1/cwnd per ACK in an increasing round, so
    /// about one segment over the round (ns-2 does the same: `v_incr_ = 1/cwnd_`).
    pub fn grow(&self, tcb: &mut Tcb) {
        if self.increase {
            tcb.cwnd += 1.0 / tcb.cwnd;
        }
    }
}

// ----- `vegas` ---------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VegasConfig {
    /// Congestion avoidance: grow while Δ < alpha (segments). Ho et al. §3.2: 1.
    pub alpha: f64,
    /// Congestion avoidance: shrink while Δ > beta (segments). Ho et al. §3.2: 3.
    pub beta: f64,
    /// Slow start ends when Δ > gamma (segments). Ho et al. §2: 1.
    pub gamma: f64,
    /// ssthresh = max(FlightSize × loss_beta, 2) on a loss. Vegas (and ns-2's Vegas) takes a
    /// quarter off the window on a fast retransmit: 0.75; Linux's Vegas uses Reno's 0.5.
    pub loss_beta: f64,
    /// Which RTT of a round is D in eq. (1).
    pub round_rtt: RoundRtt,
    /// Round Δ to the nearest segment before comparing (ns-2's Vegas does).
    pub integer_delta: bool,
    /// Whether the first round of slow start is a growth round (else a hold round, as ns-2).
    pub first_round_grows: bool,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            alpha: 1.0,
            beta: 3.0,
            gamma: 1.0,
            loss_beta: 0.75,
            round_rtt: RoundRtt::Mean,
            integer_delta: false,
            first_round_grows: true,
        }
    }
}

// Backlog thresholds are segments of queue: any value up to the largest window makes sense, and a
// very large one switches a test off (Deng et al. Table 1 runs Vegas with gamma = 10^6).
impl AlgorithmConfig for VegasConfig {
    const PARAMS: &'static [Param] = &[
        param(
            "alpha",
            "segments",
            closed(0.0, 1e9),
            "congestion avoidance grows cwnd by 1 per RTT while the backlog Δ < alpha (segments)",
        ),
        param(
            "beta",
            "segments",
            closed(0.0, 1e9),
            "congestion avoidance shrinks cwnd by 1 per RTT while Δ > beta (segments)",
        ),
        param(
            "gamma",
            "segments",
            closed(0.0, 1e9),
            "slow start ends (cwnd cut by 1/8) when Δ > gamma (segments)",
        ),
        param(
            "loss_beta",
            "",
            open(0.0, 1.0),
            "on a loss ssthresh = max(FlightSize x loss_beta, 2)",
        ),
        param(
            "round_rtt",
            "",
            Allowed::Any,
            "RTT of a round used as D in Δ = W (D - BaseRTT) / D: \"mean\" or \"min\"",
        ),
        param(
            "integer_delta",
            "",
            Allowed::Any,
            "round Δ to the nearest segment before comparing (ns-2)",
        ),
        param(
            "first_round_grows",
            "",
            Allowed::Any,
            "slow start's first round doubles cwnd (false: it holds, as ns-2)",
        ),
    ];

    /// Brakmo and Peterson's band: alpha <= beta (Ho et al. §2).
    fn check(&self) -> Result<(), ParamError> {
        require(self.alpha <= self.beta, "alpha", || {
            format!(
                "alpha = {} is above beta = {}: expected alpha <= beta",
                self.alpha, self.beta
            )
        })
    }
}

/// TCP Vegas with its own slow start.
#[derive(Clone, Debug)]
pub struct Vegas {
    config: VegasConfig,
    meter: VegasMeter,
    ss: VegasSlowStartCore,
    ca: VegasCaCore,
}

impl Vegas {
    pub fn new(config: VegasConfig) -> Self {
        let ss = VegasSlowStartCore::new(
            config.gamma,
            config.round_rtt,
            config.integer_delta,
            config.first_round_grows,
        );
        let ca = VegasCaCore::new(
            config.alpha,
            config.beta,
            config.round_rtt,
            config.integer_delta,
        );
        Vegas {
            config,
            meter: VegasMeter::default(),
            ss,
            ca,
        }
    }
}

impl CongestionControl for Vegas {
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        (tcb.flight_size() as f64 * self.config.loss_beta).max(2.0)
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, _now: Time) {
        self.meter.on_ack(tcb, sample);
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        if state == CaState::Loss {
            // Slow start begins again after a timeout, with fresh rounds.
            self.meter.restart();
            self.ss.reset();
        }
    }

    fn cwnd_event(&mut self, _tcb: &mut Tcb, event: CwndEvent, _now: Time) {
        // Every timeout, also one while already in Loss (no state change then).
        if event == CwndEvent::Loss {
            self.meter.restart();
            self.ss.reset();
        }
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) {
        if let Some(boundary) = self.meter.take_boundary() {
            if tcb.in_slow_start() {
                if self.ss.on_boundary(tcb, boundary, &self.meter) {
                    // ns-2: no increase in the round after the exit.
                    self.ca.hold();
                }
            } else if let Boundary::Next(stats) = boundary {
                self.ca.on_round(tcb, &stats, &self.meter);
            }
        }
        if !tcb.cwnd_limited {
            return;
        }
        // In slow start the ACK goes to congestion avoidance only if slow start reached
        // ssthresh with segments left over.
        if tcb.in_slow_start() && self.ss.grow(tcb, ack) == 0 {
            return;
        }
        self.ca.grow(tcb);
    }
}

// ----- `vegas-ss` ------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VegasSsConfig {
    /// Slow start ends when Δ > gamma (segments). Ho et al. §2: 1.
    pub gamma: f64,
    /// Which RTT of a round is D in eq. (1).
    pub round_rtt: RoundRtt,
    /// Round Δ to the nearest segment before comparing (ns-2's Vegas does).
    pub integer_delta: bool,
    /// Whether the first round is a growth round (else a hold round, as ns-2).
    pub first_round_grows: bool,
}

impl Default for VegasSsConfig {
    fn default() -> Self {
        VegasSsConfig {
            gamma: 1.0,
            round_rtt: RoundRtt::Mean,
            integer_delta: false,
            first_round_grows: true,
        }
    }
}

impl AlgorithmConfig for VegasSsConfig {
    const PARAMS: &'static [Param] = &[
        param(
            "gamma",
            "segments",
            closed(0.0, 1e9),
            "slow start ends (cwnd cut by 1/8) when the backlog Δ > gamma (segments)",
        ),
        param(
            "round_rtt",
            "",
            Allowed::Any,
            "RTT of a round used as D in Δ = W (D - BaseRTT) / D: \"mean\" or \"min\"",
        ),
        param(
            "integer_delta",
            "",
            Allowed::Any,
            "round Δ to the nearest segment before comparing (ns-2)",
        ),
        param(
            "first_round_grows",
            "",
            Allowed::Any,
            "the first round doubles cwnd (false: it holds, as ns-2)",
        ),
    ];
}

/// Vegas's slow start as a start-up algorithm: on exit cwnd is cut by 1/8 and ssthresh set to
/// it, and the controller's congestion avoidance takes over.
#[derive(Clone, Debug)]
pub struct VegasSlowStart {
    meter: VegasMeter,
    core: VegasSlowStartCore,
}

impl VegasSlowStart {
    pub fn new(config: VegasSsConfig) -> Self {
        VegasSlowStart {
            meter: VegasMeter::default(),
            core: VegasSlowStartCore::new(
                config.gamma,
                config.round_rtt,
                config.integer_delta,
                config.first_round_grows,
            ),
        }
    }
}

impl SlowStart for VegasSlowStart {
    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) -> u32 {
        if let Some(boundary) = self.meter.take_boundary() {
            if self.core.on_boundary(tcb, boundary, &self.meter) {
                return 0;
            }
        }
        self.core.grow(tcb, ack)
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, _now: Time) {
        self.meter.on_ack(tcb, sample);
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        if state == CaState::Loss {
            self.meter.restart();
            self.core.reset();
        }
    }

    fn cwnd_event(&mut self, _tcb: &mut Tcb, event: CwndEvent, _now: Time) {
        if event == CwndEvent::Loss {
            self.meter.restart();
            self.core.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::registry::{self, Params};
    use crate::cc::testing::Driver;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn vegas(params: serde_json::Value) -> Box<dyn CongestionControl> {
        let p: Params = serde_json::from_value(params).unwrap();
        registry::build("vegas", &p, "default", &Params::new()).unwrap()
    }

    #[test]
    fn rounds_begin_with_the_first_ack_of_a_segment_sent_after_the_last_round_began() {
        let mut t = Tcb::new(1000, 1040, 2.0, f64::INFINITY);
        let mut r = Rounds::default();
        t.high_tx = 2;
        t.snd_una = 1;
        assert_eq!(r.on_ack(&t), RoundEvent::First);
        t.snd_una = 2;
        t.high_tx = 4; // sent in response to the first ACK
        assert_eq!(r.on_ack(&t), RoundEvent::Same);
        t.snd_una = 3;
        t.high_tx = 6;
        assert_eq!(r.on_ack(&t), RoundEvent::Next);
        t.snd_una = 6;
        assert_eq!(r.on_ack(&t), RoundEvent::Same);
        t.snd_una = 7;
        assert_eq!(r.on_ack(&t), RoundEvent::Next);
    }

    #[test]
    fn backlog_is_window_times_queueing_share_of_rtt() {
        // Eq. (1): W = 20, d = 100 ms, D = 125 ms: Δ = 20 × 25 / 125 = 4.
        assert!((backlog(20.0, 0.125, 0.100) - 4.0).abs() < 1e-12);
        assert_eq!(backlog(20.0, 0.0, 0.0), 0.0);
    }

    /// Derivation (IW 2, no queue, ssthresh unlimited, all ACKs of a round at once):
    /// round 1 grows (+1 per ACK: 2 → 4), round 2 holds (4), at the start of round 3 Δ = 0 ≤ γ
    /// so it grows (8), round 4 holds (8), round 5 grows (16), round 6 holds (16).
    /// Round 6 is measured at 110 ms against a BaseRTT of 100 ms: at the start of round 7,
    /// Δ = 16 × 10 / 110 = 1.45 > γ = 1, so cwnd = 16 − 16/8 = 14 and ssthresh = 14.
    /// An earlier hold round at 110 ms with W = 8 gives Δ = 0.73 ≤ 1 and does not stop growth.
    #[test]
    fn slow_start_doubles_every_other_rtt_and_exits_when_delta_exceeds_gamma() {
        let mut d = Driver::new(vegas(serde_json::json!({})), 2.0, f64::INFINITY);
        let rtts = [100, 100, 100, 110, 100, 110];
        let w: Vec<f64> = rtts.iter().map(|&r| d.round(MS(r))).collect();
        assert_eq!(w, [4.0, 4.0, 8.0, 8.0, 16.0, 16.0]);
        assert_eq!(d.tcb.ssthresh, f64::INFINITY);
        // Round 7: the first ACK ends slow start.
        d.send();
        d.advance(MS(100));
        d.ack(1);
        assert_eq!(d.tcb.cwnd, 14.0);
        assert_eq!(d.tcb.ssthresh, 14.0);
        assert_eq!(
            d.tcb.exit_reason_hint,
            Some(ExitReason::Detector("vegas-gamma"))
        );
        // The rest of round 7 holds (no increase in the round after the exit).
        for _ in 1..16 {
            d.ack(1);
        }
        assert_eq!(d.tcb.cwnd, 14.0);
    }

    /// With `first_round_grows = false` the phases shift by one round: 2, 4, 4, 8.
    #[test]
    fn the_first_round_can_be_a_hold_round() {
        let mut d = Driver::new(
            vegas(serde_json::json!({"first_round_grows": false})),
            2.0,
            f64::INFINITY,
        );
        let w: Vec<f64> = (0..4).map(|_| d.round(MS(100))).collect();
        assert_eq!(w, [2.0, 4.0, 4.0, 8.0]);
    }

    /// Congestion avoidance from cwnd = ssthresh = 10, BaseRTT 100 ms (learned in round 1):
    /// round 1 (no judgement yet) adds 1/cwnd per ACK: ≈ 10.95. Rounds 1 and 2 at 100 ms are
    /// judged at the starts of rounds 2 and 3 (Δ = 0 < α): both grow, ≈ 11.9 and ≈ 12.8.
    /// Round 3 at 150 ms is judged at the start of round 4: W ≈ 12.8, Δ = 12.8 × 50 / 150 ≈ 4.3,
    /// above β = 3: cwnd drops by one at once and round 4 does not grow.
    #[test]
    fn congestion_avoidance_adds_or_removes_one_segment_per_round() {
        let mut d = Driver::new(vegas(serde_json::json!({})), 10.0, 10.0);
        let w1 = d.round(MS(100));
        assert!(w1 > 10.9 && w1 < 11.0, "{w1}");
        let w2 = d.round(MS(100));
        assert!(w2 > 11.8 && w2 < 12.0, "{w2}");
        let w3 = d.round(MS(150));
        assert!(w3 > 12.7 && w3 < 12.9, "{w3}");
        // Round 4 at 150 ms: the first ACK judges round 3 (Δ ≈ 12.8 × 50/150 > 3).
        let w4 = d.round(MS(150));
        assert!((w4 - (w3 - 1.0)).abs() < 1e-9, "{w3} -> {w4}");
        assert!(d.tcb.ssthresh <= d.tcb.cwnd);
    }

    #[test]
    fn loss_takes_a_quarter_off_the_flight() {
        let mut d = Driver::new(vegas(serde_json::json!({})), 16.0, 16.0);
        d.send();
        d.fast_recovery();
        assert_eq!(d.tcb.ssthresh, 12.0);
    }

    #[test]
    fn vegas_ss_on_newreno_hands_over_to_additive_increase() {
        let c = registry::build("newreno", &Params::new(), "vegas-ss", &Params::new()).unwrap();
        let mut d = Driver::new(c, 2.0, f64::INFINITY);
        let rtts = [100, 100, 100, 100, 100, 120];
        let w: Vec<f64> = rtts.iter().map(|&r| d.round(MS(r))).collect();
        assert_eq!(w, [4.0, 4.0, 8.0, 8.0, 16.0, 16.0]);
        // Round 7 (first ACK): Δ = 16 × 20 / 120 = 2.67 > 1: cwnd 14, then NewReno adds
        // 1/cwnd for each of the other 15 ACKs.
        let w7 = d.round(MS(100));
        assert_eq!(d.tcb.ssthresh, 14.0);
        assert!(w7 > 15.0 && w7 < 15.1, "{w7}");
    }

    #[test]
    fn timeout_restarts_the_alternation() {
        let mut d = Driver::new(vegas(serde_json::json!({})), 2.0, f64::INFINITY);
        for _ in 0..3 {
            d.round(MS(100));
        }
        d.send();
        d.timeout();
        assert_eq!(d.tcb.cwnd, 1.0);
        // ssthresh = 0.75 × 8 = 6: growth round 1 → 2, hold 2, growth 4, hold 4, growth to 6.
        let w: Vec<f64> = (0..5).map(|_| d.round(MS(100))).collect();
        assert_eq!(w[..4], [2.0, 2.0, 4.0, 4.0]);
        assert!(w[4] >= 6.0, "{w:?}");
    }
}
