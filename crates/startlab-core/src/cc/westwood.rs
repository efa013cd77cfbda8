//! TCP Westwood with the eligible rate estimate (ERE): NewReno window growth; after a loss,
//! ssthresh (and cwnd, if larger) set to ERE × RTT_min / segment size.
//!
//! Source: Wang et al., *TCP Startup Performance in Large Bandwidth Delay Networks* (Wang et al. 2004),
//! §II.B: the adaptive sample interval
//!
//! ```text
//! T_k = RTT × (cwnd/RTT_min − RE) / (cwnd/RTT_min)                         (§II.B, T_k)
//! ```
//!
//! the ERE sample (data acknowledged over T_k, divided by it), a first-order low-pass filter
//! discretised with the Tustin (bilinear) approximation, and the loss pseudo-code. The filter is
//! the one of the original Westwood (Mascolo et al., MobiCom 2001, as Ha 2009 §3.1.6 eq. 3.6–3.7
//! reproduces it): with Δt_k the time since the previous sample and τ the filter time constant,
//!
//! ```text
//! α_k   = (2τ − Δt_k) / (2τ + Δt_k)
//! ERE_k = α_k · ERE_{k−1} + (1 − α_k)/2 · (s_k + s_{k−1})                   (Ha 2009 eq. 3.7)
//! ```
//!
//! and, when no ACK arrives for τ/m (m ≥ 2, a Nyquist argument of the same paper), zero-valued
//! "virtual" samples are inserted every τ/m.
//!
//! [`Ere`] is the estimator alone; Astart (`astart.rs`) reuses it.
//!
//! Choices where the paper leaves room (each repeated at its line):
//! - RE (the achieved rate) is the data acknowledged during the last smoothed RTT divided by
//!   that RTT, computed on every ACK and "exponentially averaged" with a constant gain:
//!   RE ← ε·RE + (1 − ε)·sample, ε = 0.6 (`re_gain`; the value the ERE authors' ABSE work uses).
//!   A slow filter here (the ERE filter's τ = 0.5 s, say) makes RE lag a growing window, which
//!   reads as congestion (T_k near the RTT) and turns ERE into a packet-train rate during start-up.
//! - The ERE sample on an ACK at t_k is the data acknowledged in (t_k − T, t_k] divided by T, with
//!   T = max(T_k, time since the previous ACK): T_k = 0 gives a packet-pair sample, T_k = RTT a
//!   packet-train sample. T_k is clamped to [0, RTT] and to the time since the first ACK.
//! - The ERE filter starts from zero (a fresh filter); `seed_with_first_sample` starts it at its
//!   first sample instead (as Linux's Westwood+ does). RE starts at its first sample.
//! - ssthresh is at least 2 segments after fast retransmits too (the pseudo-code bounds it only
//!   after a timeout). Before the first estimate the Reno rule (FlightSize / 2) is used.
//! - "cwnd = ssthresh if cwnd > ssthresh" after 3 DUPACKs: the sender runs fast recovery from
//!   cwnd = ssthresh (+3 with NewReno) and deflates to ssthresh when recovery ends; when recovery
//!   ends we then lower cwnd to the window held when the loss was detected if that was smaller
//!   (`recovery_cwnd_cap`), so cwnd never grows because of a loss. During recovery itself the
//!   sender's window may exceed the pre-loss window when ERE × RTT_min does.
//! - After a timeout the sender sets cwnd = 1 itself, as the pseudo-code does; it calls
//!   `ssthresh()` only for the first timeout of a segment and not for a timeout during fast
//!   recovery, so ERE × RTT_min is applied only then.

use super::params::{closed, param, AlgorithmConfig, Allowed, Param};
use super::rate::{Ere, EreParams, ERE_PARAMS};
use super::reno::{Reno, RenoConfig};
use super::{Ack, AckSample, CaState, CongestionControl, CwndEvent, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WestwoodConfig {
    /// Time constant τ of the Tustin filters, seconds (Westwood, MobiCom 2001: 0.5 s).
    pub tau: f64,
    /// Virtual zero samples every τ/m without ACKs (Westwood: m = 2); 0 disables them.
    pub virtual_sample_m: f64,
    /// Start the ERE filter at its first sample instead of at zero.
    pub seed_with_first_sample: bool,
    /// Weight ε of the previous RE in RE ← ε·RE + (1 − ε)·sample (ABSE: 0.6).
    pub re_gain: f64,
    /// After fast recovery, cwnd = min(ssthresh, cwnd at the loss) (the pseudo-code); false
    /// leaves the sender's cwnd = ssthresh.
    pub recovery_cwnd_cap: bool,
    /// RFC 3465 byte-counting limit L for the NewReno growth; 0 counts ACKs.
    pub abc_limit: u32,
}

impl Default for WestwoodConfig {
    fn default() -> Self {
        WestwoodConfig {
            tau: 0.5,
            virtual_sample_m: 2.0,
            seed_with_first_sample: false,
            re_gain: 0.6,
            recovery_cwnd_cap: true,
            abc_limit: 0,
        }
    }
}

impl WestwoodConfig {
    pub fn ere_params(&self) -> EreParams {
        EreParams {
            tau: self.tau,
            virtual_sample_m: self.virtual_sample_m,
            seed_with_first_sample: self.seed_with_first_sample,
            re_gain: self.re_gain,
        }
    }
}

impl AlgorithmConfig for WestwoodConfig {
    const PARAMS: &'static [Param] = &WESTWOOD_PARAMS;
}

const WESTWOOD_PARAMS: [Param; 6] = {
    let e = ERE_PARAMS;
    [
        e[0],
        e[1],
        e[2],
        e[3],
        param(
            "recovery_cwnd_cap",
            "",
            Allowed::Any,
            "after fast recovery cwnd = min(ERE x RTTmin, cwnd at the loss)",
        ),
        param(
            "abc_limit",
            "segments",
            closed(0.0, 1000.0),
            "RFC 3465 byte-counting limit L for NewReno growth; 0 counts ACKs",
        ),
    ]
};

/// TCP Westwood (ERE): NewReno growth, ERE-based ssthresh after losses.
#[derive(Clone, Debug)]
pub struct Westwood {
    config: WestwoodConfig,
    ere: Ere,
    reno: Reno,
    /// cwnd when the last loss was detected.
    loss_cwnd: Option<f64>,
}

impl Westwood {
    pub fn new(config: WestwoodConfig) -> Self {
        let ere = Ere::new(config.ere_params());
        let reno = Reno::new(RenoConfig {
            abc_limit: config.abc_limit,
            beta: 0.5,
            ..RenoConfig::default()
        });
        Westwood {
            config,
            ere,
            reno,
            loss_cwnd: None,
        }
    }

    pub fn ere(&self) -> &Ere {
        &self.ere
    }
}

impl CongestionControl for Westwood {
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        self.loss_cwnd = Some(tcb.cwnd);
        match self.ere.window(tcb) {
            // §II.B: ssthresh = (ERE × RTT_min) / seg_size, at least 2.
            Some(w) => w.max(2.0),
            // No estimate yet: Reno's rule.
            None => (tcb.flight_size() as f64 / 2.0).max(2.0),
        }
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        self.reno.cong_avoid(tcb, ack, now);
    }

    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, _now: Time) {
        // Leaving fast recovery: the sender has set cwnd = ssthresh; the pseudo-code lowers cwnd
        // to ssthresh only when it was larger, so never go above the window at the loss.
        if state == CaState::Open
            && tcb.ca_state == CaState::Recovery
            && self.config.recovery_cwnd_cap
        {
            if let Some(w) = self.loss_cwnd {
                tcb.cwnd = tcb.cwnd.min(w).max(1.0);
            }
        }
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.ere.on_ack(tcb, sample.acked, now);
    }

    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, now: Time) {
        if event == CwndEvent::DupAck {
            self.ere.on_dupack(tcb, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::registry::{self, Params};
    use crate::cc::testing::Driver;
    use crate::time::Duration;

    /// A Tustin step with Δt = τ/5: α = (2τ − τ/5)/(2τ + τ/5) = 9/11; from 0 with samples 10
    /// and 10: ERE = (1 − 9/11)/2 × 20 = 20/11.
    /// Feeds `w` 4000 ACKs of one segment, 1 ms apart, on a 100 ms path: ERE → 1000
    /// segments/s, ERE × RTT_min → 100 segments.
    fn warmed_up(tcb: &mut Tcb) -> Westwood {
        let mut w = Westwood::new(WestwoodConfig::default());
        let rtt = Duration::from_millis(100);
        tcb.srtt = Some(rtt);
        tcb.min_rtt = Some(rtt);
        let s = AckSample {
            acked: 1,
            rtt: Some(rtt),
            prior_in_flight: 100,
        };
        for ms in 1..=4000u64 {
            w.pkts_acked(tcb, &s, Time::from_nanos(ms * 1_000_000));
        }
        w
    }

    /// After three duplicate ACKs: ssthresh = ERE × RTT_min ≈ 100. With cwnd 150 at the loss,
    /// cwnd ends recovery at ssthresh (100); with cwnd 60 it stays 60 (the pseudo-code only
    /// lowers cwnd), so slow start resumes toward ssthresh.
    #[test]
    fn fast_retransmit_sets_ssthresh_from_the_estimate_and_only_lowers_cwnd() {
        for (at_loss, after) in [(150.0, 100.0), (60.0, 60.0)] {
            let mut tcb = Tcb::new(1000, 1040, 100.0, f64::INFINITY);
            let mut w = warmed_up(&mut tcb);
            tcb.cwnd = at_loss;
            let s = w.ssthresh(&mut tcb, Time::ZERO);
            assert!((s - 100.0).abs() < 0.1, "{s}");
            // What the sender does: cwnd = ssthresh (+3 with NewReno), then deflates to
            // ssthresh at the end of recovery and returns to Open.
            tcb.ssthresh = s;
            tcb.ca_state = CaState::Recovery;
            tcb.cwnd = s + 3.0;
            tcb.cwnd = s;
            w.set_state(&mut tcb, CaState::Open, Time::ZERO);
            assert!((tcb.cwnd - after).abs() < 0.1, "{at_loss}: {}", tcb.cwnd);
        }
    }

    #[test]
    fn timeout_sets_ssthresh_from_the_estimate_and_cwnd_to_one() {
        let c = registry::build("westwood", &Params::new(), "default", &Params::new()).unwrap();
        let mut d = Driver::new(c, 10.0, 10.0);
        for _ in 0..30 {
            d.round_spread(Duration::from_millis(100), Duration::from_millis(10));
        }
        d.send();
        d.timeout();
        assert_eq!(d.tcb.cwnd, 1.0);
        assert!(d.tcb.ssthresh >= 2.0);
    }

    #[test]
    fn without_an_estimate_the_reno_rule_applies() {
        let mut w = Westwood::new(WestwoodConfig::default());
        let mut t = Tcb::new(1000, 1040, 10.0, 100.0);
        t.high_tx = 20;
        assert_eq!(w.ssthresh(&mut t, Time::ZERO), 10.0);
    }
}
