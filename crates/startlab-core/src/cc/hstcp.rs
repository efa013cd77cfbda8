//! HighSpeed TCP (RFC 3649), the high-speed controller Ha 2009 compares with CUBIC and BIC-TCP
//! (Figs. 5.10–5.12).
//!
//! Congestion avoidance adds `a(w)/w` segments per acknowledged segment and a loss cuts the
//! window by the fraction `b(w)`, where `w` is the current window. At or below `low_window`
//! (38 segments) `a = 1` and `b = 0.5`: standard TCP. Above it, the two follow the HighSpeed
//! response function (RFC 3649), a straight line on a log-log scale from drop rate `Low_P` at
//! `low_window` to `high_p` (10⁻⁷) at `high_window` (83000 segments):
//!
//! - `b(w) = (high_decrease − 0.5) (ln w − ln low_window) / (ln high_window − ln low_window) + 0.5`
//!   (RFC 3649), 0.5 at `low_window` down to `high_decrease` (0.1) at `high_window`;
//! - `a(w) = w² p(w) 2 b(w) / (2 − b(w))` (RFC 3649), with `p(w)` the response function's drop
//!   rate at `w`, interpolated log-log between `(low_window, Low_P)` and `(high_window, high_p)`;
//!   `Low_P = 0.078 / low_window^1.2`, the RFC's closed form `p(w) = 0.078 / w^1.2` at
//!   `low_window`.
//!
//! `a(w)` and `b(w)` are computed from these formulas for the window at each acknowledged
//! segment and at each loss. Linux `net/ipv4/tcp_highspeed.c` instead looks both up in a table of
//! 72 rows sampled from the same formulas (RFC 3649 Appendix B: the windows at which `a` reaches
//! 1, 2, …, 72, with `b` there), moving one row at a time as the window crosses a row boundary.
//!
//! Slow start below ssthresh is standard slow start, one segment per ACK (RFC 5681); another
//! start-up algorithm (for example `lss`, the Limited Slow-Start of RFC 3742, which RFC 3649 points to) can
//! replace it. Undo after a spurious reduction restores the window before it (the default,
//! as Linux `tcp_reno_undo_cwnd`): `a` and `b` are functions of the window, so no other state
//! needs restoring.

use super::counting::{NewlyDelivered, SsCounting};
use super::params::{above, closed, open, param, require, AlgorithmConfig, Param, ParamError};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, AckSample, CongestionControl, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// `p(w) = 0.078 / w^1.2`: the HighSpeed response function `w = 0.12 / p^0.835` (RFC 3649)
/// solved for `p`, as RFC 3649 writes it; its value at `low_window` is `Low_P`.
const P_COEFFICIENT: f64 = 0.078;
const P_EXPONENT: f64 = 1.2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HstcpConfig {
    /// Standard TCP at or below this window, segments (RFC 3649: 38, the window of Standard
    /// TCP at a drop rate of 10⁻³).
    pub low_window: f64,
    /// The window at which the response function reaches `high_p` and `b(w) = high_decrease`,
    /// segments (RFC 3649: 83000, 10 Gbps with 1500-byte packets and a 100 ms RTT).
    pub high_window: f64,
    /// The drop rate of the response function at `high_window` (RFC 3649: 10⁻⁷).
    pub high_p: f64,
    /// `b(high_window)`: the fraction of the window cut by a loss there (RFC 3649: 0.1).
    pub high_decrease: f64,
}

impl Default for HstcpConfig {
    fn default() -> Self {
        HstcpConfig {
            low_window: 38.0,
            high_window: 83000.0,
            high_p: 1e-7,
            high_decrease: 0.1,
        }
    }
}

impl HstcpConfig {
    /// `Low_P`, the response function's drop rate at `low_window`.
    pub fn low_p(&self) -> f64 {
        P_COEFFICIENT / self.low_window.powf(P_EXPONENT)
    }

    pub fn validate(&self) -> Result<(), String> {
        let lw = self.low_window;
        if !(lw.is_finite() && lw >= 1.0) {
            return Err(format!(
                "low_window = {lw}: must be a finite number of segments, at least 1"
            ));
        }
        let hw = self.high_window;
        if !(hw.is_finite() && hw > lw) {
            return Err(format!(
                "high_window = {hw}: must be a finite number of segments greater than low_window ({lw})"
            ));
        }
        let hd = self.high_decrease;
        if !(hd > 0.0 && hd <= 0.5) {
            return Err(format!(
                "high_decrease = {hd}: must be in (0, 0.5] (0.5 is standard TCP's decrease)"
            ));
        }
        let low_p = self.low_p();
        if !(self.high_p > 0.0 && self.high_p < low_p) {
            return Err(format!(
                "high_p = {}: must be in (0, Low_P) with Low_P = 0.078 / low_window^1.2 = {low_p:.4e}, the drop rate at low_window",
                self.high_p
            ));
        }
        Ok(())
    }
}

impl AlgorithmConfig for HstcpConfig {
    const PARAMS: &'static [Param] = &[
        param(
            "low_window",
            "segments",
            closed(1.0, 1e7),
            "standard TCP (a = 1, b = 0.5) at or below this window, segments (RFC 3649: 38)",
        ),
        param(
            "high_window",
            "segments",
            closed(1.0, 1e8),
            "window where the response function reaches high_p and b(w) = high_decrease, segments",
        ),
        param(
            "high_p",
            "",
            open(0.0, 0.01),
            "drop rate of the HighSpeed response function at high_window",
        ),
        param(
            "high_decrease",
            "",
            above(0.0, 0.5),
            "b(high_window): fraction of the window cut by a loss at high_window",
        ),
    ];

    /// The response function rises from (low_window, Low_P) to (high_window, high_p).
    fn check(&self) -> Result<(), ParamError> {
        let (lw, hw) = (self.low_window, self.high_window);
        require(hw > lw, "high_window", || {
            format!("high_window = {hw} is not above low_window = {lw}: expected low_window < high_window")
        })?;
        let low_p = self.low_p();
        require(self.high_p < low_p, "high_p", || {
            format!(
                "high_p = {} is not below Low_P = 0.078 / low_window^1.2 = {low_p:.4e}, the drop rate at low_window = {lw}",
                self.high_p
            )
        })
    }
}

/// HighSpeed TCP as a controller.
#[derive(Clone, Debug)]
pub struct Hstcp {
    config: HstcpConfig,
    ln_low_window: f64,
    /// ln high_window − ln low_window.
    ln_span: f64,
    ln_low_p: f64,
    ln_high_p: f64,
    delivered: NewlyDelivered,
}

impl Hstcp {
    pub fn new(config: HstcpConfig) -> Result<Self, String> {
        config.validate()?;
        Ok(Hstcp {
            ln_low_window: config.low_window.ln(),
            ln_span: config.high_window.ln() - config.low_window.ln(),
            ln_low_p: config.low_p().ln(),
            ln_high_p: config.high_p.ln(),
            delivered: NewlyDelivered::default(),
            config,
        })
    }

    pub fn config(&self) -> &HstcpConfig {
        &self.config
    }

    /// Where `w` lies between `low_window` (0) and `high_window` (1) on a log scale. Above
    /// `high_window` it stays 1: RFC 3649 specifies the response function up to
    /// `high_window` only, so `a` and `b` keep their values there (Linux likewise keeps its last
    /// row), and `b` never approaches zero.
    fn position(&self, w: f64) -> f64 {
        ((w.ln() - self.ln_low_window) / self.ln_span).min(1.0)
    }

    /// `b(w)`, the fraction of the window a loss at window `w` removes (RFC 3649).
    pub fn decrease(&self, w: f64) -> f64 {
        // "At most Low_Window" is standard TCP (RFC 3649).
        if w <= self.config.low_window {
            return 0.5;
        }
        (self.config.high_decrease - 0.5) * self.position(w) + 0.5
    }

    /// `p(w)`, the HighSpeed response function's drop rate at window `w` (RFC 3649).
    pub fn drop_rate(&self, w: f64) -> f64 {
        let x = self.position(w.max(self.config.low_window));
        (self.ln_low_p + x * (self.ln_high_p - self.ln_low_p)).exp()
    }

    /// `a(w)`, the increase per round trip at window `w`, segments (RFC 3649).
    pub fn increase(&self, w: f64) -> f64 {
        if w <= self.config.low_window {
            return 1.0;
        }
        let w_eff = w.min(self.config.high_window);
        let b = self.decrease(w);
        let a = w_eff * w_eff * self.drop_rate(w) * 2.0 * b / (2.0 - b);
        // RFC 3649 joins the two response functions at low_window without saying what
        // happens just above it: with Low_P = 0.078 / 38^1.2 the formula gives 0.95 there, less
        // than standard TCP's 1, until w ≈ 40.75. The HighSpeed response function is meant to
        // be at least as aggressive as standard TCP, and Appendix B's first row is a = 1 at 38,
        // so a(w) is kept at 1 or more.
        a.max(1.0)
    }
}

impl CongestionControl for Hstcp {
    /// `w ← (1 − b(w)) w` (RFC 3649) with `w` the congestion window at the loss, as Linux
    /// (RFC 5681's FlightSize would be the alternative; the RFC speaks of the window). `b` is
    /// that of the current window even when the loss ends slow start; Linux, whose table row
    /// moves only in congestion avoidance, halves at a first loss out of the initial slow start.
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        let w = tcb.cwnd;
        ((1.0 - self.decrease(w)) * w).max(2.0)
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        // Count the segments this ACK newly delivered (Linux `acked`), not those it covers.
        let mut acked = self.delivered.take(tcb, now).min(ack.acked);
        if !tcb.cwnd_limited {
            return;
        }
        if tcb.in_slow_start() {
            // RFC 3649 leaves slow start unchanged: one segment per ACK, RFC 5681.
            let inc = SsCounting::Acks.increase(acked);
            acked = grow_to_ssthresh(tcb, inc, acked);
            if acked == 0 {
                return;
            }
        }
        // RFC 3649 adds a(w)/w per acknowledgement, meaning a(w) segments per round trip.
        // Counted here per acknowledged segment, so that delayed ACKs do not halve the growth
        // and a round trip adds a(w). a(w) is recomputed from the window for every segment.
        for _ in 0..acked {
            tcb.cwnd += self.increase(tcb.cwnd) / tcb.cwnd;
        }
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.delivered.record(tcb, sample, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::registry::{self, Params};
    use crate::cc::testing::Driver;
    use crate::time::Duration;

    const RTT: Duration = Duration::from_millis(50);

    fn hstcp() -> Hstcp {
        Hstcp::new(HstcpConfig::default()).unwrap()
    }

    fn by_name() -> Box<dyn CongestionControl> {
        registry::build("hstcp", &Params::new(), "default", &Params::new()).unwrap()
    }

    /// A driver in congestion avoidance at `w` segments (ssthresh = w).
    fn in_avoidance_at(w: f64) -> Driver {
        Driver::new(by_name(), w, w)
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// At and below Low_Window = 38: standard TCP, a = 1 and b = 0.5 (RFC 3649, Appendix B's
    /// first row "38 1 0.50").
    #[test]
    fn standard_tcp_at_and_below_low_window() {
        let h = hstcp();
        for w in [1.0, 10.0, 37.5, 38.0] {
            assert_eq!(h.increase(w), 1.0, "a({w})");
            assert_eq!(h.decrease(w), 0.5, "b({w})");
        }
    }

    /// Just above 38 the formula falls below standard TCP's 1 and a(w) is held at 1. With
    /// slope s = ln(1e-7 / Low_P) / ln(83000 / 38) = (−16.118096 + 6.916150) / 7.689010
    /// = −1.196766 and Low_P = 0.078 / 38^1.2 = 9.91641e-4:
    /// - w = 39: b = 0.5 − 0.4 ln(39/38) / 7.689010 = 0.498649, p = Low_P (39/38)^s = 9.61288e-4,
    ///   a = 1521 p 2b / (2 − b) = 0.9712 → 1;
    /// - w = 41: b = 0.5 − 0.4 × 0.075986 / 7.689010 = 0.496047, p = Low_P × 0.913075
    ///   = 9.05442e-4, a = 1681 p × 0.992094 / 1.503953 = 1.52205 × 0.659658 = 1.00403.
    #[test]
    fn just_above_low_window_a_is_not_below_standard_tcp() {
        let h = hstcp();
        assert!(close(h.decrease(39.0), 0.498649, 1e-6));
        assert!(close(h.drop_rate(39.0), 9.61288e-4, 1e-9));
        assert_eq!(h.increase(39.0), 1.0);
        assert!(close(h.decrease(41.0), 0.496047, 1e-6));
        assert!(
            close(h.increase(41.0), 1.00403, 1e-5),
            "{}",
            h.increase(41.0)
        );
    }

    /// At High_Window = 83000 the log position is 1: b = High_Decrease = 0.1, p = High_P = 1e-7
    /// and a = 83000² × 1e-7 × 2 × 0.1 / (2 − 0.1) = 688.9 × 0.2 / 1.9 = 72.5158 (RFC 3649:
    /// a(w) = High_Window² High_P 2 b / (2 − b) ≈ 72 at High_Window). Above it both stay there.
    #[test]
    fn at_high_window_b_is_high_decrease_and_a_about_72() {
        let h = hstcp();
        assert!(close(h.decrease(83000.0), 0.1, 1e-12));
        assert!(close(h.drop_rate(83000.0), 1e-7, 1e-18));
        assert!(close(h.increase(83000.0), 72.515789, 1e-5));
        assert!(close(h.decrease(200000.0), 0.1, 1e-12));
        assert!(close(h.increase(200000.0), 72.515789, 1e-5));
    }

    /// w = 1058, the RFC 3649 Appendix B row "1058 8 0.33". By hand: ln(1058/38) = 3.326549,
    /// position x = 3.326549 / 7.689010 = 0.432637, b = 0.5 − 0.4 x = 0.326945;
    /// p = Low_P (1058/38)^s = 9.91641e-4 × 0.0186651 = 1.85090e-5;
    /// a = 1058² p × 2b / (2 − b) = 20.7184 × 0.653890 / 1.673055 = 8.0975.
    /// The table's b = 0.33 is b rounded to two places; its a = 8 is 1.2 % lower because the
    /// table evaluates p(w) as the rounded closed form 0.078 / w^1.2 (1.8311e-5 here), which
    /// ends at 0.078 / 83000^1.2 = 9.75e-8 instead of exactly High_P.
    #[test]
    fn middle_of_the_range_by_hand() {
        let h = hstcp();
        assert!(close(h.decrease(1058.0), 0.326945, 1e-6));
        assert!(close(h.drop_rate(1058.0), 1.85090e-5, 1e-9));
        assert!(
            close(h.increase(1058.0), 8.0975, 1e-4),
            "{}",
            h.increase(1058.0)
        );
    }

    /// Rows of RFC 3649 Appendix B (w, a, b). b(w) here matches the table's two decimals. The
    /// table's a column is reproduced (to 0.05) when this b(w) goes into a(w) = w² p 2b/(2 − b)
    /// with the table's p(w) = 0.078 / w^1.2; with the exact log-log p(w) used here, a(w) lies
    /// 0.6 % (w = 118) to 2.4 % (w = 79517) above the table, the gap of the two p(w) growing
    /// towards High_Window (1e-7 vs 9.75e-8).
    #[test]
    fn the_rfc_table_rows_follow_from_the_same_formulas() {
        let h = hstcp();
        let rows = [
            (118.0, 2.0, 0.44),
            (221.0, 3.0, 0.41),
            (1058.0, 8.0, 0.33),
            (1529.0, 10.0, 0.31),
            (10661.0, 30.0, 0.21),
            (79517.0, 70.0, 0.10),
        ];
        for (w, a_table, b_table) in rows {
            let b = h.decrease(w);
            assert!(close(b, b_table, 0.005), "b({w}) = {b}, table {b_table}");
            let a_rounded_p = w * w * (0.078 / w.powf(1.2)) * 2.0 * b / (2.0 - b);
            assert!(
                close(a_rounded_p, a_table, 0.05),
                "a({w}) with p = 0.078/w^1.2: {a_rounded_p}, table {a_table}"
            );
            let excess = h.increase(w) / a_table - 1.0;
            assert!(
                (0.0..0.025).contains(&excess),
                "a({w}) = {}, table {a_table}",
                h.increase(w)
            );
        }
    }

    /// A loss at 38 halves (b = 0.5): ssthresh = cwnd = 19. At 1058, b = 0.326945 (above):
    /// 1058 × 0.673055 = 712.092. At 83000, b = 0.1: 74700. At 3, half is 1.5, raised to 2.
    #[test]
    fn loss_response_cuts_by_b_of_the_window() {
        for (w, want) in [
            (38.0, 19.0),
            (1058.0, 712.092),
            (83000.0, 74700.0),
            (3.0, 2.0),
        ] {
            let mut d = in_avoidance_at(w);
            d.send();
            d.fast_recovery();
            assert!(close(d.tcb.ssthresh, want, 1e-3), "{w}: {}", d.tcb.ssthresh);
            assert!(close(d.tcb.cwnd, want, 1e-3));
        }
    }

    /// One round trip of congestion avoidance, one ACK per segment, adds a(w):
    /// - at 38, a = 1 throughout: 38 increments 1/w with w ∈ [38, 39) add between 38/39 = 0.974
    ///   and 1;
    /// - at 1058, each of the 1058 increments is a(w)/w ≤ a(1058)/1058 (a(w)/w falls with w:
    ///   a ∝ w^0.61 here), and the window rises by 0.77 % in the round, so a(w)/w falls by at
    ///   most 0.77 % × 0.39 = 0.3 %: the growth is within [0.996, 1] × a(1058) = 8.0975;
    /// - at 83000, a is held at 72.5158 and the increments 72.5158 / w with w ∈ [83000, 83072.6]
    ///   add between 72.5158 × 83000 / 83072.6 = 72.4524 and 72.5158.
    #[test]
    fn congestion_avoidance_adds_a_w_per_round_trip() {
        let h = hstcp();
        let mut d = in_avoidance_at(38.0);
        let g = d.round(RTT) - 38.0;
        assert!(g > 38.0 / 39.0 && g < 1.0, "{g}");

        let a = h.increase(1058.0);
        let mut d = in_avoidance_at(1058.0);
        let g = d.round(RTT) - 1058.0;
        assert!(g <= a && g >= 0.996 * a, "{g} vs a = {a}");

        let mut d = in_avoidance_at(83000.0);
        let g = d.round(RTT) - 83000.0;
        assert!((72.4524..=72.5158).contains(&g), "{g}");
    }

    /// Below ssthresh: one segment per ACK, 2 → 4 → 8 → 16; then congestion avoidance at 16
    /// (a = 1): 16 increments 1/w, between 16/17 and 1.
    #[test]
    fn slow_start_doubles_up_to_ssthresh() {
        let mut d = Driver::new(by_name(), 2.0, 16.0);
        let w: Vec<f64> = (0..3).map(|_| d.round(RTT)).collect();
        assert_eq!(w, [4.0, 8.0, 16.0]);
        let g = d.round(RTT) - 16.0;
        assert!(g > 16.0 / 17.0 && g < 1.0, "{g}");
    }

    /// A spurious reduction is undone to the window before it.
    #[test]
    fn undo_restores_the_window_before_the_loss() {
        let mut d = in_avoidance_at(1058.0);
        d.send();
        d.fast_recovery();
        assert!(d.tcb.cwnd < 713.0);
        assert_eq!(d.cc.undo_cwnd(&mut d.tcb), 1058.0);
    }

    #[test]
    fn invalid_parameters_are_refused_naming_field_and_value() {
        let cases = [
            (
                HstcpConfig {
                    high_decrease: 0.7,
                    ..Default::default()
                },
                ["high_decrease", "0.7"],
            ),
            (
                HstcpConfig {
                    high_p: 0.01,
                    ..Default::default()
                },
                ["high_p", "0.01"],
            ),
            (
                HstcpConfig {
                    high_window: 30.0,
                    ..Default::default()
                },
                ["high_window", "30"],
            ),
            (
                HstcpConfig {
                    low_window: f64::NAN,
                    ..Default::default()
                },
                ["low_window", "NaN"],
            ),
        ];
        for (config, words) in cases {
            let e = Hstcp::new(config).unwrap_err();
            for word in words {
                assert!(e.contains(word), "{e}");
            }
        }
        assert!(Hstcp::new(HstcpConfig::default()).is_ok());
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<HstcpConfig>();
    }
}
