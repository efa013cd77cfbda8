//! BIC-TCP, binary increase congestion control, as described in Ha's dissertation §5.1.1
//! (Fig. 5.1(a)), with the constants the dissertation gives (S_max = 32 segments per RTT,
//! Table 5.1; TCP mode below 14 segments, §5.4.4) and the rest chosen below.
//!
//! After a loss the window before the reduction is `W_max` and the window after it `W_min`. Each
//! round trip without loss, the window jumps to the midpoint of the two (binary search); a jump
//! larger than `S_max` is cut to `S_max` (additive increase), and once the jump would be smaller
//! than `S_min` the window is set to `W_max`. Past `W_max` the growth mirrors the search (max
//! probing): slow near `W_max`, faster as the window moves away, at most `S_max` per round trip.
//!
//! The increment is decided once per round trip (the description's unit) and spread evenly over
//! the segments acknowledged in that round; Linux `tcp_bic.c` recomputes it on every ACK instead.
//! A round ends when the segments in flight at its start have been delivered (`tcb.delivered`,
//! so SACKed segments count).
//!
//! The search lives in [`BicCore`], which BLAST (ch. 7) reuses for its growth inside and outside
//! fast recovery and for its decrease.

use super::counting::{NewlyDelivered, SsCounting};
use super::params::{
    above, closed, open, param, require, AlgorithmConfig, Allowed, Param, ParamError,
};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, AckSample, CaState, CongestionControl, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BicConfig {
    /// Multiplicative decrease: the window after a loss is `beta` × the window before. §5.1.1
    /// gives no value; 0.8 is Linux `tcp_bic.c` (819/1024), the BIC-TCP BLAST was built on
    /// (§7.2: Linux 2.6.23.9).
    pub beta: f64,
    /// Largest increment per round trip, segments (Table 5.1: "clamped the maximum window
    /// increment to 32 packets per RTT").
    pub s_max: f64,
    /// Smallest increment per round trip, segments: below it the search stops at `W_max`.
    /// §5.1.1 gives no value; 0.01 is the BIC-TCP paper's (Xu, Harfoush, Rhee, 2004).
    pub s_min: f64,
    /// Below this window BIC behaves as standard TCP (§5.4.4: "BIC-TCP … when the window is
    /// less than 14 packets"): one segment per round trip, halving on a loss.
    pub low_window: f64,
    /// The search goes to `W_min + (W_max − W_min) / search_divisor` (§5.1.1: the midpoint, 2).
    /// Max probing mirrors it: increment = distance past `W_max` / (search_divisor − 1). Linux
    /// `tcp_bic.c` uses 4 (`BICTCP_B`).
    pub search_divisor: f64,
    /// A loss below the previous `W_max` lowers `W_max` to the midpoint of the loss window and
    /// the window after the decrease (as CUBIC §5.1.7; Linux `tcp_bic.c`).
    pub fast_convergence: bool,
    /// Slow-start growth: one segment per ACK, as Linux 2.6.23 (BLAST's base, §7.2) and
    /// RFC 5681; `"segments"` counts acknowledged segments as `tcp_slow_start` today.
    pub ss_counting: SsCounting,
}

impl Default for BicConfig {
    fn default() -> Self {
        BicConfig {
            beta: 0.8,
            s_max: 32.0,
            s_min: 0.01,
            low_window: 14.0,
            search_divisor: 2.0,
            fast_convergence: true,
            ss_counting: SsCounting::Acks,
        }
    }
}

impl BicConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err("beta must be in (0, 1)".into());
        }
        if !(self.s_min > 0.0 && self.s_min <= self.s_max) {
            return Err("need 0 < s_min <= s_max".into());
        }
        if self.search_divisor.is_nan() || self.search_divisor <= 1.0 {
            return Err("search_divisor must be greater than 1".into());
        }
        if self.low_window.is_nan() || self.low_window < 0.0 {
            return Err("low_window must not be negative".into());
        }
        Ok(())
    }
}

impl AlgorithmConfig for BicConfig {
    const PARAMS: &'static [Param] = &BIC_PARAMS;

    fn check(&self) -> Result<(), ParamError> {
        check_increments(self.s_min, self.s_max)
    }
}

/// The binary search's increments: s_min <= s_max (shared with BLAST).
pub fn check_increments(s_min: f64, s_max: f64) -> Result<(), ParamError> {
    require(s_min <= s_max, "s_min", || {
        format!("s_min = {s_min} is above s_max = {s_max}: expected s_min <= s_max")
    })
}

/// The parameter descriptions of BIC-TCP (shared with BLAST).
pub const BIC_PARAMS: [Param; 7] = [
    param("beta", "", open(0.0, 1.0), "window multiplier on a loss (Linux tcp_bic.c 819/1024)"),
    param("s_max", "segments", above(0.0, 1e6), "largest increment per RTT, segments (Table 5.1)"),
    param("s_min", "segments", above(0.0, 1e6), "smallest increment per RTT, segments; below it the window goes to W_max"),
    param("low_window", "segments", closed(0.0, 1e7), "standard TCP (1 segment per RTT, halving) below this window, segments (§5.4.4)"),
    param("search_divisor", "", above(1.0, 1000.0), "binary search goes 1/divisor of the way to W_max (2: the midpoint); max probing mirrors it"),
    param("fast_convergence", "", Allowed::Any, "lower W_max to cwnd (1 + beta) / 2 on a loss below the previous W_max"),
    param("ss_counting", "", Allowed::Any, "slow-start growth per ACK: \"segments\" acknowledged or 1 per ACK (\"acks\")"),
];

/// One round trip of growth: from `base`, `inc` segments spread over `segments` acknowledged
/// segments.
#[derive(Copy, Clone, Debug)]
struct Round {
    /// The round ends once `tcb.delivered` passes this.
    end_delivered: u64,
    base: f64,
    inc: f64,
    segments: f64,
    acked: f64,
    /// The window this round last wrote; anything else means the window was changed from
    /// outside (a loss), and a new round starts.
    last: f64,
}

/// BIC-TCP's window search, on a window held by the caller.
#[derive(Clone, Debug)]
pub struct BicCore {
    pub config: BicConfig,
    /// `W_max` (Linux `last_max_cwnd`); 0 before the first loss.
    w_max: f64,
    round: Option<Round>,
}

impl BicCore {
    pub fn new(config: BicConfig) -> Self {
        BicCore {
            config,
            w_max: 0.0,
            round: None,
        }
    }

    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// Forget everything (after a timeout, as Linux `bictcp_reset`).
    pub fn reset(&mut self) {
        self.w_max = 0.0;
        self.round = None;
    }

    /// The next ACK starts a new round (the window was just set from outside).
    pub fn restart_round(&mut self) {
        self.round = None;
    }

    /// The increment for one round trip that starts at window `w`, segments (§5.1.1).
    pub fn round_increment(&self, w: f64) -> f64 {
        let c = &self.config;
        if w < c.low_window {
            // TCP mode: standard additive increase, one segment per round trip.
            return 1.0;
        }
        if self.w_max <= 0.0 {
            // No loss yet (or forgotten after a timeout): W_max is unknown, so the window is
            // taken to be far from it, in max probing's additive increase (as Linux, whose
            // `last_max_cwnd` = 0 gives `max_increment` per round trip).
            return c.s_max;
        }
        if w < self.w_max {
            // Binary search: go to the midpoint of W_min (the current window) and W_max.
            let step = (self.w_max - w) / c.search_divisor;
            if step < c.s_min {
                // "until the window increment is less than S_min, at which point the window is
                // set to the current maximum".
                self.w_max - w
            } else {
                // Additive increase while the midpoint is more than S_max away.
                step.min(c.s_max)
            }
        } else {
            // Max probing: the mirror image, slow at W_max and growing with the distance from
            // it, then additive increase by S_max.
            ((w - self.w_max) / (c.search_divisor - 1.0)).clamp(c.s_min, c.s_max)
        }
    }

    /// Grows window `w` for `acked` newly acknowledged segments. `delivered` and `in_flight` are
    /// the sender's after this ACK; they delimit the round trip.
    pub fn grow(&mut self, w: &mut f64, delivered: u64, in_flight: u32, acked: u32) {
        if acked == 0 {
            return;
        }
        let fresh = match self.round {
            None => true,
            Some(r) => delivered > r.end_delivered || *w != r.last,
        };
        if fresh {
            // The segments acknowledged in this round: this ACK's and those still in flight.
            let segments = (in_flight as f64 + acked as f64).max(1.0);
            self.round = Some(Round {
                end_delivered: delivered + in_flight as u64,
                base: *w,
                inc: self.round_increment(*w),
                segments,
                acked: 0.0,
                last: *w,
            });
        }
        let r = self.round.as_mut().expect("round");
        r.acked += acked as f64;
        *w = r.base + r.inc * (r.acked / r.segments).min(1.0);
        r.last = *w;
    }

    /// The window after a congestion loss at `cwnd` (no state change).
    pub fn decreased(&self, cwnd: f64) -> f64 {
        if cwnd < self.config.low_window {
            // TCP mode: halve.
            (cwnd / 2.0).max(2.0)
        } else {
            (cwnd * self.config.beta).max(2.0)
        }
    }

    /// A congestion loss at window `cwnd`: records `W_max` and returns the new ssthresh.
    pub fn on_loss(&mut self, cwnd: f64) -> f64 {
        self.round = None;
        let c = &self.config;
        self.w_max = if c.fast_convergence && cwnd < self.w_max {
            // W_max <- (W_max + W_min) / 2 with W_max = cwnd, W_min = beta cwnd.
            cwnd * (1.0 + c.beta) / 2.0
        } else {
            cwnd
        };
        self.decreased(cwnd)
    }

    /// Standard slow start; returns the acknowledged segments left for congestion avoidance.
    pub fn slow_start(&self, tcb: &mut Tcb, acked: u32) -> u32 {
        let inc = self.config.ss_counting.increase(acked);
        grow_to_ssthresh(tcb, inc, acked)
    }
}

/// BIC-TCP as a controller.
#[derive(Clone, Debug)]
pub struct Bic {
    core: BicCore,
    delivered: NewlyDelivered,
}

impl Bic {
    pub fn new(config: BicConfig) -> Result<Self, String> {
        config.validate()?;
        Ok(Bic {
            core: BicCore::new(config),
            delivered: NewlyDelivered::default(),
        })
    }

    pub fn core(&self) -> &BicCore {
        &self.core
    }
}

impl CongestionControl for Bic {
    fn init(&mut self, _tcb: &mut Tcb, _now: Time) {
        self.core.reset();
    }

    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        self.core.on_loss(tcb.cwnd)
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        // Count the segments this ACK newly delivered (Linux `acked`), not those it covers.
        let mut acked = self.delivered.take(tcb, now).min(ack.acked);
        if !tcb.cwnd_limited {
            return;
        }
        if tcb.in_slow_start() {
            acked = self.core.slow_start(tcb, acked);
            if acked == 0 {
                return;
            }
        }
        let (delivered, in_flight) = (tcb.delivered, tcb.in_flight);
        self.core.grow(&mut tcb.cwnd, delivered, in_flight, acked);
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.delivered.record(tcb, sample, now);
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        match state {
            // A timeout forgets the search (Linux `bictcp_state`).
            CaState::Loss => self.core.reset(),
            _ => self.core.restart_round(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::Driver;
    use crate::time::Duration;

    const RTT: Duration = Duration::from_millis(50);

    fn bic(config: BicConfig) -> Box<dyn CongestionControl> {
        Box::new(Bic::new(config).unwrap())
    }

    /// A driver in congestion avoidance at `w` segments that has just had a loss there.
    fn after_loss_at(w: f64, config: BicConfig) -> Driver {
        let mut d = Driver::new(bic(config), w, w);
        d.send();
        d.fast_recovery();
        d
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// W_max = 100, beta = 0.8: the loss leaves cwnd = W_min = 80. Each round goes to the
    /// midpoint of the current window and 100: 90, 95, 97.5, 98.75, … After round n the
    /// distance is 20 / 2^n; at 20 / 2^10 = 0.0195 the next half-step (0.0098) is below
    /// S_min = 0.01, so round 11 sets the window to W_max = 100.
    #[test]
    fn binary_search_halves_the_distance_to_w_max_each_round() {
        let mut d = after_loss_at(100.0, BicConfig::default());
        assert_eq!(d.tcb.cwnd, 80.0);
        let want = [90.0, 95.0, 97.5, 98.75, 99.375];
        for w in want {
            let got = d.round(RTT);
            assert!(close(got, w), "{got} != {w}");
        }
        for n in 6..=10 {
            let got = d.round(RTT);
            assert!(close(got, 100.0 - 20.0 / 2f64.powi(n)), "round {n}: {got}");
        }
        assert!(close(d.round(RTT), 100.0));
    }

    /// W_max = 1000: W_min = 800 and the midpoint is 100 away, more than S_max = 32, so the
    /// window grows linearly by 32: 832, 864, 896, 928; from 928 the half-distance is 36, still
    /// clamped (960); from 960 it is 20, then 10: 980, 990.
    #[test]
    fn far_from_w_max_the_increase_is_clamped_to_s_max() {
        let mut d = after_loss_at(1000.0, BicConfig::default());
        let got: Vec<f64> = (0..7).map(|_| d.round(RTT)).collect();
        let want = [832.0, 864.0, 896.0, 928.0, 960.0, 980.0, 990.0];
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, w), "{got:?}");
        }
    }

    /// Max probing from W_max = 100: the increment is the distance past W_max (divisor 2 − 1),
    /// at least S_min: +0.01 (distance 0), +0.01, +0.02, +0.04, …, doubling the distance each
    /// round: after round n ≥ 1 it is 0.01 × 2^(n−1). Round 13 adds 20.48 (distance 40.96), and
    /// from there S_max = 32 per round: 172.96, 204.96.
    #[test]
    fn max_probing_mirrors_the_search_then_adds_s_max() {
        let mut d = after_loss_at(100.0, BicConfig::default());
        for _ in 0..11 {
            d.round(RTT);
        }
        assert!(close(d.tcb.cwnd, 100.0));
        for n in 1..=13 {
            let got = d.round(RTT);
            let want = 100.0 + 0.01 * 2f64.powi(n - 1);
            assert!(
                (got - want).abs() < 1e-6,
                "probe round {n}: {got} != {want}"
            );
        }
        assert!((d.round(RTT) - 172.96).abs() < 1e-6);
        assert!((d.round(RTT) - 204.96).abs() < 1e-6);
    }

    /// Before any loss W_max = 0: max probing is S_max per round trip.
    #[test]
    fn without_a_loss_the_window_grows_by_s_max() {
        let mut d = Driver::new(bic(BicConfig::default()), 100.0, 100.0);
        assert!(close(d.round(RTT), 132.0));
        assert!(close(d.round(RTT), 164.0));
    }

    /// Below 14 segments: one segment per round and halving (TCP mode, §5.4.4).
    #[test]
    fn below_the_low_window_it_behaves_as_tcp() {
        let mut d = Driver::new(bic(BicConfig::default()), 10.0, 10.0);
        assert!(close(d.round(RTT), 11.0));
        assert!(close(d.round(RTT), 12.0));
        d.send();
        d.fast_recovery();
        assert_eq!(d.tcb.ssthresh, 6.0);
    }

    /// Loss at 100 (W_max = 100), then at 90 < 100: fast convergence sets W_max = 90 × 1.8 / 2
    /// = 81 (without it, 90); ssthresh = 72 either way.
    #[test]
    fn fast_convergence_lowers_w_max_after_a_smaller_loss() {
        for (fc, want) in [(true, 81.0), (false, 90.0)] {
            let mut core = BicCore::new(BicConfig {
                fast_convergence: fc,
                ..BicConfig::default()
            });
            assert_eq!(core.on_loss(100.0), 80.0);
            assert_eq!(core.on_loss(90.0), 72.0);
            assert!(close(core.w_max(), want));
        }
    }

    #[test]
    fn a_timeout_forgets_w_max() {
        let mut d = after_loss_at(100.0, BicConfig::default());
        d.timeout();
        d.tcb.ssthresh = 20.0;
        d.tcb.cwnd = 20.0;
        // W_max = 0 again: S_max per round.
        assert!(close(d.round(RTT), 52.0));
    }

    #[test]
    fn invalid_parameters_are_refused() {
        assert!(Bic::new(BicConfig {
            search_divisor: 1.0,
            ..Default::default()
        })
        .is_err());
        assert!(Bic::new(BicConfig {
            beta: 1.5,
            ..Default::default()
        })
        .is_err());
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<BicConfig>();
    }
}
