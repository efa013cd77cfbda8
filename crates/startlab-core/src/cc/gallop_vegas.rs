//! Gallop-Vegas: Vegas whose slow start grows the window by an increment `incr` that itself
//! grows by one segment per round ("stable growth", between exponential and linear), judged
//! every round on Vegas's backlog Δ, with the transmissions of each round smoothed to one segment
//! per ACK plus one extra segment every second ACK.
//!
//! Source: Ho, Chan, Chen, *An Enhanced Slow-Start Mechanism for TCP Vegas* (Ho et al.), §3.2
//! (scheme, Table 1) and §3.3 (pseudo-code), with Vegas (§2, eq. 1) from `vegas.rs`. Defaults
//! γ = 1, β = 3 (and Vegas's α = 1).
//!
//! The state machine, evaluated once per round (at the first ACK of the next round) while in
//! slow start, with Δ measured over the round that just ended and maxincr = cwnd:
//!
//! | Δ             | status before | action                                                           | status after |
//! |---------------|---------------|------------------------------------------------------------------|--------------|
//! | Δ < γ         | any           | cwnd += incr; incr += 1 if incr < maxincr                         | 0            |
//! | γ ≤ Δ < β     | 0             | incr = ⌊incr/2⌋; if incr ≤ 1 {incr = 1; ssthresh = 2}; cwnd += incr | 1            |
//! | γ ≤ Δ < β     | 1             | cwnd += incr                                                     | 0            |
//! | Δ ≥ β         | any           | cwnd −= (last increment + Δ − β), ≥ 2; ssthresh = 2               | 2            |
//!
//! In congestion avoidance: status 2 ⇒ status = 0 and cwnd untouched for that round; otherwise
//! Vegas's rule. A timeout resets maxincr = 2, incr = 0, status = 0.
//!
//! Choices where the paper leaves room (each repeated at its line):
//! - The printed pseudo-code sets `status = 0` in the γ ≤ Δ < β, status 0 branch and never sets
//!   status 1; the prose and Table 1 set it to 1 there and back to 0 on the next such round. We
//!   follow the prose and Table 1.
//! - The pseudo-code tests `Δ > γ`, the prose and Table 1 `γ ≤ Δ`; we use `Δ ≥ γ` (the two differ
//!   only when Δ equals γ exactly, which with `integer_delta` is common: `strict_gamma` selects
//!   the pseudo-code's test). Δ ≥ β as in both.
//! - The printed indentation puts `cwnd += incr` in the γ ≤ Δ < β branch for both values of
//!   status; the prose ("While Δ is smaller than β, the addition of congestion window size is
//!   incr") agrees.
//! - incr starts at 0 and the round's increment is applied before incr is increased, so no growth
//!   happens in the first two rounds (the first has no measurement; §3.2: "we do not increase
//!   congestion window size in the first RTT … After the second RTT, we start to increase").
//! - "last increment of cwnd" is the amount actually added during the round just judged.
//! - Smoothing (§3.2, last paragraph): the increment decided at a round boundary is not added at
//!   once but spread over the round's ACKs at half a segment per ACKed segment, so the sender
//!   sends one segment per ACK and one extra every second ACK. An increment larger than half the
//!   round's ACKs (only in the first rounds, when incr is close to cwnd) is carried into the next
//!   round, so cwnd reaches the pseudo-code's value a few rounds late instead of bursting. Left-
//!   over increment is dropped when congestion avoidance begins, except in the round that the
//!   γ-branch ends slow start with (the pseudo-code still adds incr then: "transit to the
//!   congestion-avoidance phase at next RTT").
//! - In slow start the smoothed growth stops at a configured ssthresh.

use super::params::{closed, open, param, require, AlgorithmConfig, Allowed, Param, ParamError};
use super::rounds::RoundRtt;
use super::vegas::{Boundary, VegasCaCore, VegasMeter};
use super::{Ack, AckSample, CaState, CongestionControl, CwndEvent, ExitReason, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GallopVegasConfig {
    /// Vegas congestion avoidance: grow while Δ < alpha (segments). Ho et al. §3.2: 1.
    pub alpha: f64,
    /// Slow start: Δ ≥ beta cuts cwnd and ends slow start; congestion avoidance shrinks while
    /// Δ > beta (segments). Ho et al. §3.2: 3.
    pub beta: f64,
    /// Slow start: Δ ≥ gamma halves incr (segments). Ho et al. §3.2: 1.
    pub gamma: f64,
    /// ssthresh = max(FlightSize × loss_beta, 2) on a loss (Vegas: 0.75).
    pub loss_beta: f64,
    /// Which RTT of a round is D in eq. (1).
    pub round_rtt: RoundRtt,
    /// Round Δ to the nearest segment before comparing (ns-2's Vegas does).
    pub integer_delta: bool,
    /// Test Δ > γ (the pseudo-code) instead of Δ ≥ γ (the prose and Table 1); it matters with
    /// `integer_delta`.
    pub strict_gamma: bool,
    /// Growth per ACKed segment while a round's increment is being applied (the smoothing:
    /// 0.5 = one extra segment per two ACKs).
    pub smoothing: f64,
}

impl Default for GallopVegasConfig {
    fn default() -> Self {
        GallopVegasConfig {
            alpha: 1.0,
            beta: 3.0,
            gamma: 1.0,
            loss_beta: 0.75,
            round_rtt: RoundRtt::Mean,
            integer_delta: false,
            strict_gamma: false,
            smoothing: 0.5,
        }
    }
}

impl AlgorithmConfig for GallopVegasConfig {
    const PARAMS: &'static [Param] = &[
        param("alpha", "segments", closed(0.0, 1e9), "congestion avoidance grows cwnd by 1 per RTT while the backlog Δ < alpha (segments)"),
        param("beta", "segments", closed(0.0, 1e9), "slow start: Δ >= beta cuts cwnd and ends it; congestion avoidance shrinks while Δ > beta"),
        param("gamma", "segments", closed(0.0, 1e9), "slow start: Δ >= gamma halves the per-round increment (segments)"),
        param("loss_beta", "", open(0.0, 1.0), "on a loss ssthresh = max(FlightSize x loss_beta, 2)"),
        param("round_rtt", "", Allowed::Any, "RTT of a round used as D in Δ = W (D - BaseRTT) / D: \"mean\" or \"min\""),
        param("integer_delta", "", Allowed::Any, "round Δ to the nearest segment before comparing (ns-2)"),
        param("strict_gamma", "", Allowed::Any, "slow start tests Δ > gamma (pseudo-code) instead of Δ >= gamma (prose, Table 1)"),
        param("smoothing", "segments", closed(0.0, 10.0), "segments added per ACKed segment while a round's increment is applied (0.5: one extra per two ACKs)"),
    ];

    /// The slow-start thresholds of §3.2 in order, gamma <= beta, and the avoidance band
    /// alpha <= beta.
    fn check(&self) -> Result<(), ParamError> {
        require(self.gamma <= self.beta, "gamma", || {
            format!(
                "gamma = {} is above beta = {}: expected gamma <= beta",
                self.gamma, self.beta
            )
        })?;
        require(self.alpha <= self.beta, "alpha", || {
            format!(
                "alpha = {} is above beta = {}: expected alpha <= beta",
                self.alpha, self.beta
            )
        })
    }
}

/// Gallop-Vegas.
#[derive(Clone, Debug)]
pub struct GallopVegas {
    config: GallopVegasConfig,
    meter: VegasMeter,
    ca: VegasCaCore,
    /// The per-round increment of stable growth.
    incr: f64,
    maxincr: f64,
    /// Table 1: 0, 1 or 2.
    status: u8,
    /// Increment decided but not yet added (spread over ACKs).
    pending: f64,
    /// Added during the current round.
    added_this_round: f64,
    /// The γ-branch ended slow start: finish this round's increment in congestion avoidance.
    finish_in_ca: bool,
}

impl GallopVegas {
    pub fn new(config: GallopVegasConfig) -> Self {
        let ca = VegasCaCore::new(
            config.alpha,
            config.beta,
            config.round_rtt,
            config.integer_delta,
        );
        GallopVegas {
            config,
            meter: VegasMeter::default(),
            ca,
            incr: 0.0,
            maxincr: 2.0,
            status: 0,
            pending: 0.0,
            added_this_round: 0.0,
            finish_in_ca: false,
        }
    }

    pub fn incr(&self) -> f64 {
        self.incr
    }

    pub fn status(&self) -> u8 {
        self.status
    }

    /// §3.3, "In Retransmission-Timeout phase": maxincr = 2 (the initial window), incr = 0,
    /// status = 0. Rounds are counted afresh, so again the first round after the timeout is not
    /// judged and the second adds incr = 0.
    fn timeout_reset(&mut self) {
        self.maxincr = 2.0;
        self.incr = 0.0;
        self.status = 0;
        self.pending = 0.0;
        self.added_this_round = 0.0;
        self.finish_in_ca = false;
        self.meter.restart();
    }

    /// Stable growth (§3.3), at a round boundary in slow start.
    fn slow_start_round(&mut self, tcb: &mut Tcb, delta: Option<f64>) {
        let last_increment = self.added_this_round;
        self.maxincr = tcb.cwnd;
        // No RTT sample in the round (all retransmissions): no evidence of a queue.
        let delta = delta.unwrap_or(0.0);
        let (gamma, beta) = (self.config.gamma, self.config.beta);
        if delta >= beta {
            // cwnd −= (last increment of cwnd + Δ − β); ssthresh = 2; cwnd ≥ 2; status = 2.
            tcb.cwnd = (tcb.cwnd - (last_increment + delta - beta)).max(tcb.cwnd.min(2.0));
            tcb.ssthresh = 2.0;
            tcb.exit_reason_hint = Some(ExitReason::Detector("gallop-beta"));
            self.status = 2;
            self.pending = 0.0;
            self.ca.hold();
        } else if delta > gamma || (delta == gamma && !self.config.strict_gamma) {
            // Table 1 / prose: Δ "no smaller than γ" (the pseudo-code's `Δ > γ` differs only at
            // equality).
            if self.status == 0 {
                // Slow down: halve incr; at 1, leave slow start at the next round.
                self.incr = (self.incr / 2.0).floor();
                if self.incr <= 1.0 {
                    self.incr = 1.0;
                    tcb.ssthresh = 2.0;
                    tcb.exit_reason_hint = Some(ExitReason::Detector("gallop-gamma"));
                    self.finish_in_ca = true;
                    // This round only adds incr; Vegas's rule starts at the next one.
                    self.ca.hold();
                }
                // Prose and Table 1: status 1 (the printed pseudo-code's `status = 0` here would
                // make the status-1 branch unreachable).
                self.status = 1;
            } else {
                // Second consecutive round in [γ, β): do not halve again yet.
                self.status = 0;
            }
            self.pending += self.incr;
        } else {
            self.pending += self.incr;
            if self.incr < self.maxincr {
                self.incr += 1.0;
            }
            self.status = 0;
        }
    }
}

impl CongestionControl for GallopVegas {
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        (tcb.flight_size() as f64 * self.config.loss_beta).max(2.0)
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, _now: Time) {
        self.meter.on_ack(tcb, sample);
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        if state == CaState::Loss {
            self.timeout_reset();
        }
    }

    fn cwnd_event(&mut self, _tcb: &mut Tcb, event: CwndEvent, _now: Time) {
        // Every timeout, also one while already in Loss (no state change then).
        if event == CwndEvent::Loss {
            self.timeout_reset();
        }
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) {
        if let Some(boundary) = self.meter.take_boundary() {
            let in_ss = tcb.in_slow_start();
            match boundary {
                Boundary::First => {}
                Boundary::Next(stats) => {
                    let delta = self.meter.delta(
                        tcb.cwnd,
                        &stats,
                        self.config.round_rtt,
                        self.config.integer_delta,
                    );
                    if in_ss {
                        // (The first judged round adds incr = 0: no growth in round 2.)
                        self.slow_start_round(tcb, delta);
                    } else {
                        self.pending = 0.0;
                        self.finish_in_ca = false;
                        if self.status == 2 {
                            // §3.3: the first congestion-avoidance round after the β cut waits
                            // to see the effect of the cut.
                            self.status = 0;
                            self.ca.hold();
                        } else {
                            self.ca.on_round(tcb, &stats, &self.meter);
                        }
                    }
                }
            }
            self.added_this_round = 0.0;
        }
        if !tcb.cwnd_limited {
            return;
        }
        if self.pending > 0.0 && (tcb.in_slow_start() || self.finish_in_ca) {
            // Smoothing (§3.2): one segment goes out per ACK as the window slides; adding half
            // a segment per ACKed segment lets one extra segment go out every second ACK, so
            // the round's increment is sent evenly instead of as a burst.
            let mut step = (self.config.smoothing * ack.acked as f64).min(self.pending);
            self.pending -= step;
            if tcb.in_slow_start() && step >= tcb.ssthresh - tcb.cwnd {
                // Reached a configured ssthresh: slow start is over, the rest is dropped.
                step = (tcb.ssthresh - tcb.cwnd).max(0.0);
                self.pending = 0.0;
            }
            tcb.cwnd += step;
            self.added_this_round += step;
            return;
        }
        if !tcb.in_slow_start() {
            self.ca.grow(tcb);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::registry::{self, Params};
    use crate::cc::testing::Driver;
    use crate::time::Duration;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn gallop() -> Box<dyn CongestionControl> {
        registry::build("gallop-vegas", &Params::new(), "default", &Params::new()).unwrap()
    }

    /// No queue (Δ = 0), IW 2, all of a round's ACKs at once. Per round, the increment decided
    /// at its start and the window at its end (the pseudo-code's window in brackets):
    ///
    /// round  incr→   increment (+carry)  ACKs  added      cwnd   [literal]
    ///   1      0     — (not judged)        2    0          2      [2]
    ///   2    0→1     0                     2    0          2      [2]
    ///   3    1→2     1                     2    1          3      [3]
    ///   4    2→3     2                     3    1.5        4.5    [5]
    ///   5    3→4     3 + 0.5               4    2          6.5    [8]
    ///   6    4→5     4 + 1.5               6    3          9.5    [12]
    ///   7    5→6     5 + 2.5               9    4.5        14     [17]
    ///   8    6→7     6 + 3                14    7          21     [23]
    ///   9    7→8     7 + 2                21    9          30     [30]
    ///  10    8→9     8                    30    8          38     [38]
    #[test]
    fn stable_growth_with_smoothing_catches_up_with_the_pseudo_code() {
        let mut d = Driver::new(gallop(), 2.0, f64::INFINITY);
        let w: Vec<f64> = (0..10).map(|_| d.round(MS(100))).collect();
        assert_eq!(w, [2.0, 2.0, 3.0, 4.5, 6.5, 9.5, 14.0, 21.0, 30.0, 38.0]);
    }

    /// Within a round, cwnd grows by half a segment per ACK: after the first ACK of round 3
    /// (increment 1) the window allows one new segment for the freed slot only; after the
    /// second ACK it allows two (the extra one).
    #[test]
    fn smoothing_adds_one_extra_segment_every_second_ack() {
        let mut d = Driver::new(gallop(), 2.0, f64::INFINITY);
        d.round(MS(100));
        d.round(MS(100));
        d.send();
        d.advance(MS(100));
        d.ack(1);
        assert_eq!(d.tcb.cwnd, 2.5);
        assert_eq!(d.send(), 1);
        d.ack(1);
        assert_eq!(d.tcb.cwnd, 3.0);
        assert_eq!(d.send(), 2);
    }

    /// Runs rounds on a concrete `GallopVegas` so its state can be read.
    struct Rig {
        g: GallopVegas,
        d: Driver,
    }

    impl Rig {
        fn new() -> Self {
            // The Driver only holds a placeholder; the rig drives `g` by hand with the same
            // hook order.
            Rig {
                g: GallopVegas::new(GallopVegasConfig::default()),
                d: Driver::new(gallop(), 2.0, f64::INFINITY),
            }
        }

        /// One round: send the window, then after `rtt` one ACK per segment (at once).
        fn round(&mut self, rtt: u64) -> f64 {
            let t = &mut self.d.tcb;
            let n = t.cwnd.floor() as u32;
            t.high_tx += n;
            self.d.now += MS(rtt);
            for _ in 0..n {
                let t = &mut self.d.tcb;
                t.snd_una += 1;
                let r = MS(rtt);
                t.min_rtt = Some(t.min_rtt.map_or(r, |m| m.min(r)));
                t.srtt = Some(r);
                t.latest_rtt = Some(r);
                let s = AckSample {
                    acked: 1,
                    rtt: Some(r),
                    prior_in_flight: n,
                };
                self.g.pkts_acked(t, &s, self.d.now);
                let a = Ack {
                    acked: 1,
                    ack_seq: t.snd_una,
                };
                self.g.cong_avoid(t, &a, self.d.now);
            }
            self.d.tcb.cwnd
        }
    }

    /// State transitions. Each call below is a round measured at the RTT given; the previous
    /// round is judged at the first ACK of the call. Ten rounds at 100 ms as above (cwnd 38,
    /// incr 9, status 0), then:
    /// - 105 ms: judges a 100 ms round: Δ = 0 → +9, incr 10, status 0 → 47.
    /// - 105 ms: judges a 105 ms round with W = 47: Δ = 47 × 5/105 = 2.24 ∈ [γ, β), status 0
    ///   → incr = ⌊10/2⌋ = 5, status 1, +5 → 52.
    /// - 100 ms: W = 52, Δ = 2.48 ∈ [γ, β), status 1 → status 0, +5 → 57.
    /// - 110 ms: judges the 100 ms round: Δ = 0 → +5, incr 6, status 0 → 62.
    /// - 110 ms: W = 62, Δ = 62 × 10/110 = 5.64 ≥ β → cwnd = 62 − (5 + 5.64 − 3) = 54.36,
    ///   ssthresh 2, status 2 (slow start over, reason gallop-beta).
    /// - 110 ms: congestion avoidance, status 2 → 0, cwnd unchanged.
    /// - 110 ms: Vegas's rule: Δ = 54.36 × 10/110 = 4.9, above β: cwnd − 1.
    #[test]
    fn state_machine_transitions() {
        let mut r = Rig::new();
        for _ in 0..10 {
            r.round(100);
        }
        assert_eq!((r.d.tcb.cwnd, r.g.incr(), r.g.status()), (38.0, 9.0, 0));
        assert_eq!(r.round(105), 47.0);
        assert_eq!((r.g.incr(), r.g.status()), (10.0, 0));
        assert_eq!(r.round(105), 52.0);
        assert_eq!((r.g.incr(), r.g.status()), (5.0, 1));
        assert_eq!(r.round(100), 57.0);
        assert_eq!((r.g.incr(), r.g.status()), (5.0, 0));
        assert_eq!(r.round(110), 62.0);
        assert_eq!((r.g.incr(), r.g.status()), (6.0, 0));
        let w = r.round(110);
        let cut = 62.0 - (5.0 + 62.0 * 10.0 / 110.0 - 3.0);
        assert!((w - cut).abs() < 1e-9, "{w} {cut}");
        assert_eq!((r.g.status(), r.d.tcb.ssthresh), (2, 2.0));
        assert_eq!(
            r.d.tcb.exit_reason_hint,
            Some(ExitReason::Detector("gallop-beta"))
        );
        let w2 = r.round(110);
        assert_eq!((w2, r.g.status()), (w, 0));
        let w3 = r.round(110);
        assert!((w3 - (w - 1.0)).abs() < 1e-9, "{w} {w3}");
    }

    /// γ ≤ Δ < β with incr ≤ 1 after halving ends slow start (ssthresh 2) but the following
    /// round still adds incr. Rounds 1–3 at 100 ms: cwnd 3, incr 2. Round 4 (measured at
    /// 150 ms) adds 2 → incr 3, but only 1.5 in its 3 ACKs: cwnd 4.5, 0.5 carried. At the start
    /// of round 5, W = 4.5, Δ = 4.5 × 50/150 = 1.5 ∈ [1, 3), status 0: incr = ⌊3/2⌋ = 1 ⇒
    /// ssthresh 2 (gallop-gamma), status 1; round 5 adds 0.5 + 1 over its 4 ACKs: cwnd 6.
    /// Vegas's rule starts with round 6.
    #[test]
    fn halving_to_one_ends_slow_start() {
        let mut r = Rig::new();
        for _ in 0..3 {
            r.round(100);
        }
        assert_eq!(r.round(150), 4.5);
        assert_eq!(r.g.incr(), 3.0);
        let w = r.round(100);
        assert_eq!((r.g.incr(), r.g.status()), (1.0, 1));
        assert_eq!(r.d.tcb.ssthresh, 2.0);
        assert_eq!(
            r.d.tcb.exit_reason_hint,
            Some(ExitReason::Detector("gallop-gamma"))
        );
        assert_eq!(w, 6.0);
    }

    #[test]
    fn timeout_resets_incr_and_status() {
        let mut d = Driver::new(gallop(), 2.0, f64::INFINITY);
        for _ in 0..8 {
            d.round(MS(100));
        }
        d.send();
        d.timeout();
        // ssthresh = 0.75 × 21 = 15.75; no growth in the two rounds after the timeout, then
        // increments 1 and 2 at half a segment per ACK over rounds of 1 ACK each.
        let w: Vec<f64> = (0..4).map(|_| d.round(MS(100))).collect();
        assert_eq!(w, [1.0, 1.0, 1.5, 2.0]);
    }
}
