//! CUBIC (Ha, dissertation ch. 5: §5.1.2 the window function, §5.1.3 the TCP-friendly region,
//! §5.1.4–5.1.5 the concave and convex regions, §5.1.6 multiplicative decrease, §5.1.7 fast
//! convergence; Figs. 5.2–5.3, the Linux CUBIC v2.2 pseudo-code).
//!
//! After a loss the window follows `W(t) = C (t − K)³ + W_max` (Eq. 5.1) in real time since the
//! start of the epoch: concave up to the plateau at `W_max`, convex past it, so the growth does not
//! depend on the RTT. Where standard TCP would be faster (short RTTs, small windows) it follows
//! the AIMD window of Eq. 5.4 instead.
//!
//! Two constant sets, selected by `constants`: `"linux"` (the default) is today's Linux
//! `net/ipv4/tcp_cubic.c` (β = 717/1024, C = 0.4, growth at most 50 % per RTT and, before the
//! first loss, at least 5 % per RTT, slow start counting acknowledged segments); `"dissertation"`
//! is §5.1 and Figs. 5.2–5.3 (β = 0.2 as a *decrease fraction*, i.e. a window multiplier of 0.8,
//! C = 0.4, no clamps beyond one segment per ACK, slow start counting ACKs). Every constant can be
//! set on its own.
//!
//! Here `beta` is always the window multiplier (window after a loss = beta × window before), as in
//! Linux; the dissertation's β of ch. 5 is `1 − beta`. Windows are in segments.
//!
//! Slow start is CUBIC's own standard slow start (Fig. 5.2: `cwnd <- cwnd + 1` per ACK; Linux
//! `tcp_slow_start`: + acknowledged segments); HyStart (ch. 6) is the separate `hystart` start-up.

use super::counting::{NewlyDelivered, SsCounting};
use super::params::{above, closed, open, param, AlgorithmConfig, Allowed, Param};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, AckSample, CaState, CongestionControl, CwndEvent, Tcb};
use crate::time::{Duration, Time};
use serde::{Deserialize, Serialize};

/// The constant set.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CubicConstants {
    Linux,
    Dissertation,
}

/// How K is computed at the start of an epoch (extraction §8.3).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KRule {
    /// Fig. 5.3 and Linux: K = ∛((W_last_max − cwnd) / C) with the window at the epoch start, so
    /// W(0) = cwnd whatever fast convergence did to W_last_max.
    PseudoCode,
    /// Eq. 5.2 as printed: K = ∛(W_max (1 − beta) / C) with W_max = W_last_max; after fast
    /// convergence W(0) is then below the window.
    Equation,
}

/// CUBIC's parameters; those left unset take the value of `constants`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, into = "CubicParams")]
pub struct CubicConfig {
    pub constants: CubicConstants,
    /// Window multiplier on a loss (linux 717/1024; dissertation 1 − 0.2 = 0.8).
    pub beta: Option<f64>,
    /// C of Eq. 5.1, segments / s³ (0.4 in both).
    pub c: Option<f64>,
    pub fast_convergence: bool,
    pub tcp_friendliness: bool,
    pub k_rule: KRule,
    /// Largest growth in one RTT of congestion avoidance, as a fraction of cwnd (= the largest
    /// increment per acknowledged segment). Linux: `cnt >= 2`, 0.5; Fig. 5.2: one segment per
    /// ACK at most, 1.0.
    pub max_growth_per_rtt: Option<f64>,
    /// While there is no `W_last_max` (before the first loss, after a timeout), the least growth
    /// per RTT as a fraction of cwnd. Linux: `cnt <= 20`, 0.05; the dissertation has none, 0.
    pub min_growth_no_loss: Option<f64>,
    /// Slow-start growth (linux: segments; dissertation: ACKs, Fig. 5.2).
    pub ss_counting: Option<SsCounting>,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            constants: CubicConstants::Linux,
            beta: None,
            c: None,
            fast_convergence: true,
            tcp_friendliness: true,
            k_rule: KRule::PseudoCode,
            max_growth_per_rtt: None,
            min_growth_no_loss: None,
            ss_counting: None,
        }
    }
}

/// The parameters with every value resolved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CubicParams {
    pub constants: CubicConstants,
    pub beta: f64,
    pub c: f64,
    pub fast_convergence: bool,
    pub tcp_friendliness: bool,
    pub k_rule: KRule,
    pub max_growth_per_rtt: f64,
    pub min_growth_no_loss: f64,
    pub ss_counting: SsCounting,
}

impl From<CubicConfig> for CubicParams {
    fn from(c: CubicConfig) -> Self {
        let (beta, cc, max_g, min_g, ss) = match c.constants {
            // tcp_cubic.c: beta = 717 (/1024), bic_scale = 41 (C ≈ 0.4), cnt >= 2, cnt <= 20
            // while last_max_cwnd = 0; tcp_slow_start adds the acknowledged segments.
            CubicConstants::Linux => (717.0 / 1024.0, 0.4, 0.5, 0.05, SsCounting::Segments),
            // §5.1.6 β = 0.2 (decrease fraction), Fig. 5.2 C = 0.4; integer cnt >= 1; slow start
            // cwnd <- cwnd + 1 per ACK.
            CubicConstants::Dissertation => (0.8, 0.4, 1.0, 0.0, SsCounting::Acks),
        };
        CubicParams {
            constants: c.constants,
            beta: c.beta.unwrap_or(beta),
            c: c.c.unwrap_or(cc),
            fast_convergence: c.fast_convergence,
            tcp_friendliness: c.tcp_friendliness,
            k_rule: c.k_rule,
            max_growth_per_rtt: c.max_growth_per_rtt.unwrap_or(max_g),
            min_growth_no_loss: c.min_growth_no_loss.unwrap_or(min_g),
            ss_counting: c.ss_counting.unwrap_or(ss),
        }
    }
}

impl CubicParams {
    fn validate(&self) -> Result<(), String> {
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err("beta (the window multiplier on a loss) must be in (0, 1)".into());
        }
        if !(self.c > 0.0 && self.c.is_finite()) {
            return Err("c must be positive".into());
        }
        if !(self.max_growth_per_rtt > 0.0 && self.min_growth_no_loss >= 0.0) {
            return Err("need max_growth_per_rtt > 0 and min_growth_no_loss >= 0".into());
        }
        Ok(())
    }
}

impl AlgorithmConfig for CubicConfig {
    const PARAMS: &'static [Param] = &[
        param("constants", "", Allowed::Any, "\"linux\" (tcp_cubic.c) or \"dissertation\" (§5.1, Figs. 5.2-5.3); sets the defaults below"),
        param("beta", "", open(0.0, 1.0), "window multiplier on a loss (linux 717/1024, dissertation 1 - 0.2)"),
        param("c", "segments/s^3", above(0.0, 1000.0), "C of W(t) = C (t - K)^3 + W_max, segments/s^3"),
        param("fast_convergence", "", Allowed::Any, "lower W_max to cwnd (1 + beta) / 2 on a loss below the previous W_max (§5.1.7)"),
        param("tcp_friendliness", "", Allowed::Any, "grow at least as standard TCP would (Eq. 5.4, §5.1.3)"),
        param("k_rule", "", Allowed::Any, "\"pseudo-code\": K = cbrt((W_max - cwnd) / C) at the epoch start; \"equation\": Eq. 5.2 K = cbrt(W_max (1 - beta) / C)"),
        param("max_growth_per_rtt", "", above(0.0, 10.0), "largest congestion-avoidance growth per RTT, fraction of cwnd (linux 0.5, dissertation 1)"),
        param("min_growth_no_loss", "", closed(0.0, 10.0), "least growth per RTT while no W_max is known, fraction of cwnd (linux 0.05, dissertation 0)"),
        param("ss_counting", "", Allowed::Any, "slow-start growth per ACK: \"segments\" acknowledged (linux) or 1 per ACK (\"acks\", dissertation)"),
    ];
}

#[derive(Clone, Debug)]
pub struct Cubic {
    p: CubicParams,
    /// α of the TCP-friendly window: 3β_d / (2 − β_d) with the decrease fraction β_d = 1 − beta
    /// (§5.1.3), i.e. 3 (1 − beta) / (1 + beta).
    alpha: f64,
    /// W_last_max (Fig. 5.2); 0 = none.
    w_last_max: f64,
    /// Start of the current epoch (the first congestion-avoidance ACK after a loss or reset).
    epoch_start: Option<Time>,
    /// `origin_point`: the plateau of this epoch's cubic.
    origin: f64,
    /// K, seconds.
    k: f64,
    /// dMin, the smallest RTT seen (reset by a timeout).
    d_min: Option<Duration>,
    /// W_tcp, the window standard TCP would have (Eq. 5.4, built ACK by ACK as Fig. 5.3).
    w_tcp: f64,
    last_ack: Option<Time>,
    delivered: NewlyDelivered,
}

impl Cubic {
    pub fn new(config: CubicConfig) -> Result<Self, String> {
        let p = CubicParams::from(config);
        p.validate()?;
        Ok(Cubic {
            alpha: 3.0 * (1.0 - p.beta) / (1.0 + p.beta),
            p,
            w_last_max: 0.0,
            epoch_start: None,
            origin: 0.0,
            k: 0.0,
            d_min: None,
            w_tcp: 0.0,
            last_ack: None,
            delivered: NewlyDelivered::default(),
        })
    }

    pub fn params(&self) -> &CubicParams {
        &self.p
    }
    pub fn w_last_max(&self) -> f64 {
        self.w_last_max
    }
    /// K of the current epoch, seconds.
    pub fn k(&self) -> f64 {
        self.k
    }
    /// W(t) of the current epoch (Eq. 5.1), `t` seconds after its start.
    pub fn window_at(&self, t: f64) -> f64 {
        self.origin + self.p.c * (t - self.k).powi(3)
    }

    /// `cubic_reset` (Fig. 5.3), on a timeout.
    fn reset(&mut self) {
        self.w_last_max = 0.0;
        self.epoch_start = None;
        self.origin = 0.0;
        self.k = 0.0;
        self.d_min = None;
        self.w_tcp = 0.0;
    }

    /// `cubic_update` and the window increase (Figs. 5.2–5.3) for `acked` segments.
    fn update(&mut self, tcb: &mut Tcb, acked: u32, now: Time) {
        let p = &self.p;
        let cwnd = tcb.cwnd;
        let epoch_start = match self.epoch_start {
            Some(e) => e,
            None => {
                if cwnd < self.w_last_max {
                    self.k = match p.k_rule {
                        // Fig. 5.3: K = ∛((W_last_max − cwnd) / C).
                        KRule::PseudoCode => ((self.w_last_max - cwnd) / p.c).cbrt(),
                        // Eq. 5.2: K = ∛(W_max β_d / C), β_d = 1 − beta.
                        KRule::Equation => (self.w_last_max * (1.0 - p.beta) / p.c).cbrt(),
                    };
                    self.origin = self.w_last_max;
                } else {
                    // No plateau above: grow convexly from here.
                    self.k = 0.0;
                    self.origin = cwnd;
                }
                self.w_tcp = cwnd;
                self.epoch_start = Some(now);
                now
            }
        };
        // t + dMin: the target is W one RTT ahead, W(t + RTT) (§5.1.2).
        let t = now.saturating_since(epoch_start) + self.d_min.unwrap_or(Duration::ZERO);
        // Eq. 5.1: W(t) = C (t − K)³ + W_max.
        let target = self.window_at(t.as_secs_f64());
        // Concave (§5.1.4) and convex (§5.1.5) regions alike: (W(t+RTT) − cwnd) / cwnd per ACK;
        // at or above the target, cnt = 100 cwnd: 1/100 of a segment per RTT.
        let mut inc = if target > cwnd {
            (target - cwnd) / cwnd
        } else {
            0.01 / cwnd
        };
        if self.w_last_max == 0.0 {
            inc = inc.max(p.min_growth_no_loss);
        }
        // §5.1.3, Eq. 5.4: W_tcp(t) = W_max (1 − β_d) + 3 β_d / (2 − β_d) · t / RTT, advanced by
        // α / cwnd per acknowledged segment (Fig. 5.3 `cubic_tcp_friendliness`).
        self.w_tcp += self.alpha * acked as f64 / cwnd;
        if p.tcp_friendliness && self.w_tcp > cwnd {
            // TCP mode: at least as fast as standard TCP.
            inc = inc.max((self.w_tcp - cwnd) / cwnd);
        }
        inc = inc.min(p.max_growth_per_rtt);
        tcb.cwnd += inc * acked as f64;
    }
}

impl CongestionControl for Cubic {
    fn init(&mut self, _tcb: &mut Tcb, _now: Time) {
        self.reset();
    }

    /// §5.1.6–5.1.7 (Fig. 5.2 "Packet loss").
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        let cwnd = tcb.cwnd;
        self.epoch_start = None;
        self.w_last_max = if self.p.fast_convergence && cwnd < self.w_last_max {
            // Fast convergence: W_last_max <- cwnd (2 − β_d) / 2 = cwnd (1 + beta) / 2.
            cwnd * (1.0 + self.p.beta) / 2.0
        } else {
            cwnd
        };
        // ssthresh <- cwnd (1 − β_d) = beta cwnd (Linux: at least 2).
        (cwnd * self.p.beta).max(2.0)
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        // Count the segments this ACK newly delivered (Linux `acked`), not those it covers.
        let mut acked = self.delivered.take(tcb, now).min(ack.acked);
        if !tcb.cwnd_limited {
            return;
        }
        // Slow start while cwnd < ssthresh (Fig. 5.2 says cwnd <= ssthresh; the engine's rule,
        // Linux `tcp_in_slow_start`, is strict). Left-over segments go to the cubic update.
        if tcb.in_slow_start() {
            let inc = self.p.ss_counting.increase(acked);
            acked = grow_to_ssthresh(tcb, inc, acked);
            if acked == 0 {
                return;
            }
        }
        self.update(tcb, acked, now);
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        // Fig. 5.2 "Timeout: cubic_reset()"; Linux `cubictcp_state` on TCP_CA_Loss.
        if state == CaState::Loss {
            self.reset();
        }
    }

    fn cwnd_event(&mut self, _tcb: &mut Tcb, event: CwndEvent, now: Time) {
        // Linux `cubictcp_cwnd_event`: after an idle period the epoch is shifted by the idle time
        // so the cubic does not jump. Idle is measured from the last ACK here.
        if let (CwndEvent::TxStart, Some(start), Some(last)) =
            (event, self.epoch_start, self.last_ack)
        {
            let idle = now.saturating_since(last);
            self.epoch_start = Some((start + idle).min(now));
        }
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.delivered.record(tcb, sample, now);
        self.last_ack = Some(now);
        // Fig. 5.2: dMin <- min(dMin, RTT).
        if let Some(rtt) = sample.rtt {
            self.d_min = Some(self.d_min.map_or(rtt, |m| m.min(rtt)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::Driver;

    fn cubic(config: CubicConfig) -> Cubic {
        Cubic::new(config).unwrap()
    }

    /// The RTT of the driver's rounds.
    const RTT: Duration = Duration::from_millis(20);

    /// A driver in congestion avoidance at cwnd 100 that has just had a loss there.
    fn loss_at_100(config: CubicConfig) -> Driver {
        let mut d = Driver::new(Box::new(cubic(config)), 100.0, 100.0);
        d.fast_recovery();
        d
    }

    /// W_max = 100 with beta = 0.7 (Linux's 717/1024, rounded) and C = 0.4: the loss leaves
    /// cwnd = 70 and K = ∛((100 − 70) / 0.4) = ∛75 = 4.2172 s (Eq. 5.2: ∛(100 × 0.3 / 0.4), the
    /// same).
    /// W(0) = 70, W(K) = 100 (the plateau), W(2K) = 100 + 0.4 K³ = 100 + 30 = 130.
    ///
    /// The driver's rounds are 20 ms; on the ACKs of the round at epoch time τ the target is
    /// W(τ + 20 ms), and a round closes about 1 − 1/e of the gap (each of its ~cwnd ACKs adds
    /// (target − cwnd)/cwnd), so cwnd lags W(τ + RTT) by about 0.6 × slope × RTT: at most
    /// 0.6 × 3 C K² × 0.02 ≈ 0.26 segments at τ = 0 or 2K, nothing at the plateau.
    /// TCP friendliness is off: with 20 ms rounds standard TCP would be faster (see the next test).
    #[test]
    fn window_follows_the_cubic_function_after_a_loss_at_w_max_100() {
        let mut d = loss_at_100(CubicConfig {
            tcp_friendliness: false,
            beta: Some(0.7),
            ..Default::default()
        });
        assert_eq!(d.tcb.cwnd, 70.0);
        let k = 75f64.cbrt();
        let w = |t: f64| 100.0 + 0.4 * (t - k).powi(3);
        let rtt = RTT.as_secs_f64();
        let (mut at_k, mut at_2k) = (None, None);
        for j in 0..=((2.0 * k / rtt) as usize) {
            let cwnd = d.round(RTT);
            // This round's ACKs came at τ = j × RTT (the epoch starts on the first).
            let tau = j as f64 * rtt;
            assert!(
                (cwnd - w(tau + rtt)).abs() < 0.5,
                "τ {tau}: {cwnd} vs {}",
                w(tau + rtt)
            );
            if at_k.is_none() && tau + rtt >= k {
                at_k = Some(cwnd);
            }
            if tau + rtt <= 2.0 * k {
                at_2k = Some((cwnd, tau + rtt));
            }
        }
        let at_k = at_k.unwrap();
        assert!((at_k - 100.0).abs() < 0.05, "W(K) {at_k}");
        let (at_2k, t) = at_2k.unwrap();
        // The last round ends within one RTT (slope 21 segments/s, 0.43 segments) of 2K.
        assert!((2.0 * k - t) < rtt + 1e-9);
        assert!((at_2k - 130.0).abs() < 0.8, "W(2K) {at_2k}");
    }

    /// TCP-friendly region (§5.1.3): with 20 ms rounds, standard TCP (α = 3 × 0.3 / 1.7 = 0.529
    /// segments per RTT from W_max beta = 70, Eq. 5.4) is faster than the cubic early in the
    /// epoch: after 50 rounds (1 s) W_tcp ≈ 70 + 26.5 = 96.5 while W(1.02 s) = 100 − 0.4
    /// (4.217 − 1.02)³ = 86.9. cwnd follows W_tcp.
    #[test]
    fn with_short_rtts_the_window_follows_standard_tcp() {
        let mut d = loss_at_100(CubicConfig {
            beta: Some(0.7),
            ..Default::default()
        });
        for _ in 0..50 {
            d.round(RTT);
        }
        let alpha = 3.0 * 0.3 / 1.7;
        let want = 70.0 + alpha * 50.0;
        // W_tcp adds α × floor(cwnd) / cwnd per round, a little under α.
        assert!(
            d.tcb.cwnd < want && d.tcb.cwnd > want - 1.0,
            "{} vs {want}",
            d.tcb.cwnd
        );
    }

    /// Dissertation constants: β = 0.2 (multiplier 0.8): ssthresh = 80 at W_max = 100,
    /// K = ∛(20 / 0.4) = ∛50 = 3.684 s, W(2K) = 100 + 0.4 × 50 = 120.
    #[test]
    fn dissertation_constants() {
        let d = loss_at_100(CubicConfig {
            constants: CubicConstants::Dissertation,
            ..Default::default()
        });
        assert_eq!(d.tcb.ssthresh, 80.0);
        let c = cubic(CubicConfig {
            constants: CubicConstants::Dissertation,
            ..Default::default()
        });
        assert_eq!(c.params().beta, 0.8);
        assert_eq!(c.params().ss_counting, SsCounting::Acks);
        // K as computed at the epoch start.
        let mut c = c;
        let mut t = Tcb::new(1000, 1040, 100.0, 100.0);
        t.ssthresh = c.ssthresh(&mut t, Time::ZERO);
        t.cwnd = t.ssthresh;
        c.cong_avoid(
            &mut t,
            &Ack {
                acked: 1,
                ack_seq: 1,
            },
            Time::ZERO,
        );
        assert!((c.k() - 50f64.cbrt()).abs() < 1e-12);
        assert!((c.window_at(2.0 * c.k()) - 120.0).abs() < 1e-9);
        assert!((c.window_at(c.k()) - 100.0).abs() < 1e-12);
    }

    /// beta = 0.7. Loss at 100 (W_last_max = 100), then at 90 < 100: fast convergence (§5.1.7)
    /// sets W_last_max = 90 × (1 + 0.7) / 2 = 76.5; ssthresh = 63. At the next epoch (cwnd 63),
    /// K = ∛((76.5 − 63) / 0.4) = ∛33.75 by the pseudo-code, ∛(76.5 × 0.3 / 0.4) = ∛57.375 by
    /// Eq. 5.2 as printed. Without fast convergence W_last_max = 90.
    #[test]
    fn fast_convergence_and_the_two_readings_of_k() {
        let ca_ack = Ack {
            acked: 1,
            ack_seq: 1,
        };
        for (rule, k3) in [(KRule::PseudoCode, 33.75f64), (KRule::Equation, 57.375)] {
            let mut c = cubic(CubicConfig {
                k_rule: rule,
                beta: Some(0.7),
                ..Default::default()
            });
            let mut t = Tcb::new(1000, 1040, 100.0, 100.0);
            assert!((c.ssthresh(&mut t, Time::ZERO) - 70.0).abs() < 1e-12);
            t.cwnd = 90.0;
            assert!((c.ssthresh(&mut t, Time::ZERO) - 63.0).abs() < 1e-12);
            assert!((c.w_last_max() - 76.5).abs() < 1e-12);
            t.cwnd = 63.0;
            t.ssthresh = 63.0;
            c.cong_avoid(&mut t, &ca_ack, Time::ZERO);
            assert!((c.k() - k3.cbrt()).abs() < 1e-9, "{rule:?}");
        }
        let mut c = cubic(CubicConfig {
            fast_convergence: false,
            ..Default::default()
        });
        let mut t = Tcb::new(1000, 1040, 100.0, 100.0);
        c.ssthresh(&mut t, Time::ZERO);
        t.cwnd = 90.0;
        c.ssthresh(&mut t, Time::ZERO);
        assert_eq!(c.w_last_max(), 90.0);
    }

    /// A timeout resets CUBIC (Fig. 5.2): no W_last_max, so the next epoch grows convexly from
    /// the window it starts at (K = 0, origin = cwnd).
    #[test]
    fn a_timeout_resets_the_epoch_and_w_last_max() {
        let mut d = loss_at_100(CubicConfig::default());
        d.round(RTT);
        d.timeout();
        d.tcb.cwnd = 50.0;
        d.tcb.ssthresh = 50.0;
        d.round(RTT);
        // Linux constants: before a loss at least 5 % per RTT (cnt <= 20).
        assert!((d.tcb.cwnd - 52.5).abs() < 0.01, "{}", d.tcb.cwnd);
    }

    /// Slow start: Linux counts acknowledged segments, Fig. 5.2 counts ACKs.
    #[test]
    fn slow_start_counting() {
        for (constants, want) in [
            (CubicConstants::Linux, 4.0),
            (CubicConstants::Dissertation, 3.0),
        ] {
            let c = cubic(CubicConfig {
                constants,
                ..Default::default()
            });
            let mut d = Driver::new(Box::new(c), 2.0, f64::INFINITY);
            d.send();
            d.advance(RTT);
            d.ack(2);
            assert_eq!(d.tcb.cwnd, want, "{constants:?}");
        }
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<CubicConfig>();
    }
}
