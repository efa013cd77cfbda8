//! Adaptive Start (Astart): during start-up, ssthresh is raised on every ACK to the eligible
//! rate estimate × RTT_min / segment size, so the window alternates between mini-exponential
//! growth (cwnd < ssthresh: +1 per ACK) and mini-linear growth (cwnd ≥ ssthresh: +1/cwnd per
//! ACK, the controller's congestion avoidance) until the first loss.
//!
//! Source: Wang et al., *TCP Startup Performance in Large Bandwidth Delay Networks* (Wang et al. 2004),
//! §IV (pseudo-code and Fig. 5–6), with the estimator of §II.B ([`super::westwood::Ere`]).
//!
//! Choices where the paper leaves room (each repeated at its line):
//! - Astart applies "when a connection initially begins or re-starts after a coarse timeout" and
//!   ends with "3 DUPACKS ⇒ switch to congestion avoidance": it is active from the start and
//!   after every timeout (`set_state(Loss)`), and inactive from a fast retransmit
//!   (`set_state(Recovery)`) until the next timeout.
//! - ssthresh is only ever raised by Astart, never lowered; the loss response is the
//!   controller's (Reno's FlightSize / 2 on NewReno; ERE × RTT_min with `cc = "westwood"`, which
//!   is the paper's TCPW + Astart).
//! - The raise is done in `pkts_acked` (every ACK that delivers data), before the window grows
//!   for that ACK, so the ACK is counted in whichever phase the new ssthresh puts it.
//! - The mini-linear phase is whatever the controller does at cwnd ≥ ssthresh (NewReno:
//!   +1/cwnd per ACK, exactly the pseudo-code).
//! - The sender reports the slow-start exit at the first time cwnd reaches ssthresh, i.e. at the
//!   first mini-linear phase; Astart may raise ssthresh again afterwards.

use super::params::{AlgorithmConfig, Param};
use super::rate::{Ere, EreParams, ERE_PARAMS};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, AckSample, CaState, CwndEvent, SlowStart, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AstartConfig {
    /// Time constant τ of the ERE filters, seconds (Westwood: 0.5 s).
    pub tau: f64,
    /// Virtual zero samples every τ/m without ACKs (Westwood: m = 2); 0 disables them.
    pub virtual_sample_m: f64,
    /// Start the ERE filter at its first sample instead of at zero.
    pub seed_with_first_sample: bool,
    /// Weight ε of the previous RE in RE ← ε·RE + (1 − ε)·sample (ABSE: 0.6).
    pub re_gain: f64,
}

impl Default for AstartConfig {
    fn default() -> Self {
        AstartConfig {
            tau: 0.5,
            virtual_sample_m: 2.0,
            seed_with_first_sample: false,
            re_gain: 0.6,
        }
    }
}

impl AlgorithmConfig for AstartConfig {
    const PARAMS: &'static [Param] = &ERE_PARAMS;
}

/// Adaptive Start.
#[derive(Clone, Debug)]
pub struct Astart {
    ere: Ere,
    /// Between the start (or a timeout) and the next fast retransmit.
    active: bool,
}

impl Astart {
    pub fn new(config: AstartConfig) -> Self {
        Astart {
            ere: Ere::new(EreParams {
                tau: config.tau,
                virtual_sample_m: config.virtual_sample_m,
                seed_with_first_sample: config.seed_with_first_sample,
                re_gain: config.re_gain,
            }),
            active: true,
        }
    }

    pub fn ere(&self) -> &Ere {
        &self.ere
    }
}

impl SlowStart for Astart {
    /// Start-up lasts until the first fast retransmit (§IV: "3 DUPACKS ⇒ switch to congestion
    /// avoidance"), through the mini-linear phases at ssthresh, and again after every timeout.
    fn in_startup(&self, tcb: &Tcb) -> bool {
        self.active && tcb.ca_state != CaState::Recovery
    }

    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) -> u32 {
        // Mini-exponential phase: cwnd += 1 per ACK up to ssthresh; the rest of the ACK goes to
        // the controller (the mini-linear phase).
        grow_to_ssthresh(tcb, ack.acked.min(1), ack.acked)
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.ere.on_ack(tcb, sample.acked, now);
        if !self.active || tcb.ca_state == CaState::Recovery {
            return;
        }
        // §IV: if (ssthresh < ERE × RTT_min / seg_size) ssthresh = ERE × RTT_min / seg_size.
        if let Some(w) = self.ere.window(tcb) {
            if w > tcb.ssthresh {
                tcb.ssthresh = w;
            }
        }
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        match state {
            // "3 DUPACKS ⇒ switch to congestion avoidance phase".
            CaState::Recovery | CaState::Cwr => self.active = false,
            // "… and after every coarse timeout".
            CaState::Loss => self.active = true,
            CaState::Open | CaState::Disorder => {}
        }
    }

    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, now: Time) {
        match event {
            // Every timeout, also one while already in Loss (no state change then).
            CwndEvent::Loss => self.active = true,
            CwndEvent::DupAck => self.ere.on_dupack(tcb, now),
            CwndEvent::TxStart | CwndEvent::CwndRestart | CwndEvent::CompleteCwr => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::registry::{self, Params};
    use crate::cc::testing::Driver;
    use crate::time::Duration;

    fn astart_on_newreno() -> Box<dyn crate::cc::CongestionControl> {
        registry::build("newreno", &Params::new(), "astart", &Params::new()).unwrap()
    }

    /// An ACK-clocked path on the Driver: a bottleneck of 1000 segments/s (one ACK per ms at
    /// most) and a 100 ms base RTT (BDP 100 segments). Every segment is sent at the ACK that
    /// allows it and acknowledged at max(sent + 100 ms, previous ACK + 1 ms); RTT samples grow
    /// only when a queue builds. Returns (cwnd, ssthresh) every 100 ms for `secs` seconds.
    fn bottleneck(
        cc: Box<dyn crate::cc::CongestionControl>,
        ssthresh: f64,
        secs: u64,
    ) -> Vec<(f64, f64)> {
        let mut d = Driver::new(cc, 2.0, ssthresh);
        let mut due: std::collections::VecDeque<Time> = Default::default();
        let mut last = Time::ZERO;
        let mut out = vec![];
        let mut next_sample = Time::ZERO;
        let end = Time::ZERO + Duration::from_secs(secs);
        let base = Duration::from_millis(100);
        let gap = Duration::from_millis(1);
        loop {
            for _ in 0..d.send() {
                let t = (d.now + base).max(last + gap);
                due.push_back(t);
                last = t;
            }
            let Some(t) = due.pop_front() else { break };
            while next_sample <= t && next_sample < end {
                out.push((d.tcb.cwnd, d.tcb.ssthresh));
                next_sample += Duration::from_millis(100);
            }
            if t >= end {
                break;
            }
            d.advance(t.saturating_since(d.now));
            d.ack(1);
        }
        out
    }

    /// NewReno with ssthresh 8 crawls from 8 by about one segment per RTT (≈ 24 after 2 s);
    /// Astart raises ssthresh toward ERE × RTT_min (ERE tends to the 1000 segments/s of the
    /// bottleneck while there is no queue), never lowering it: cwnd follows it in alternating
    /// mini-exponential and mini-linear steps, past 60 at 2 s and close to the BDP (100) at 4 s.
    #[test]
    fn ssthresh_is_raised_toward_ere_times_rtt_min() {
        let newreno = bottleneck(
            registry::build("newreno", &Params::new(), "default", &Params::new()).unwrap(),
            8.0,
            4,
        );
        let astart = bottleneck(astart_on_newreno(), 8.0, 4);
        let s: Vec<f64> = astart.iter().map(|x| x.1).collect();
        assert!(s.windows(2).all(|w| w[1] >= w[0]), "{s:?}");
        // At 2 s and at 4 s.
        assert!(newreno[20].0 < 30.0, "{newreno:?}");
        assert!(astart[20].0 > 2.0 * newreno[20].0, "{astart:?}");
        assert!(astart[39].0 > 85.0, "{astart:?}");
        assert!(s[39] > 50.0 && s[39] < 150.0, "{s:?}");
    }

    /// With cwnd ≥ ssthresh and the estimate above both, the next ACK raises ssthresh and the
    /// ACK grows cwnd by one (mini-exponential) instead of 1/cwnd.
    #[test]
    fn alternates_mini_linear_and_mini_exponential_increase() {
        let mut a = Astart::new(AstartConfig {
            seed_with_first_sample: true,
            ..AstartConfig::default()
        });
        let mut t = Tcb::new(1000, 1040, 20.0, 20.0);
        let rtt = Duration::from_millis(100);
        t.srtt = Some(rtt);
        t.min_rtt = Some(rtt);
        let s = AckSample {
            acked: 1,
            rtt: Some(rtt),
            prior_in_flight: 20,
        };
        // Two ACKs 1 ms apart: a packet-pair sample of 1000 segments/s seeds ERE: window 100.
        a.pkts_acked(&mut t, &s, Time::from_nanos(1_000_000));
        a.pkts_acked(&mut t, &s, Time::from_nanos(2_000_000));
        assert!((t.ssthresh - 100.0).abs() < 1e-6, "{}", t.ssthresh);
        let left = a.on_ack(
            &mut t,
            &Ack {
                acked: 1,
                ack_seq: 2,
            },
            Time::from_nanos(2_000_000),
        );
        assert_eq!((left, t.cwnd), (0, 21.0));
    }

    #[test]
    fn inactive_after_fast_retransmit_until_a_timeout() {
        let mut d = Driver::new(astart_on_newreno(), 2.0, 8.0);
        for _ in 0..10 {
            let spread = Duration::from_millis(d.tcb.cwnd.floor() as u64);
            d.round_spread(Duration::from_millis(100), spread);
        }
        d.send();
        d.fast_recovery();
        let s = d.tcb.ssthresh;
        for _ in 0..5 {
            let spread = Duration::from_millis(d.tcb.cwnd.floor() as u64);
            d.round_spread(Duration::from_millis(100), spread);
        }
        assert_eq!(d.tcb.ssthresh, s);
        d.send();
        d.timeout();
        let s = d.tcb.ssthresh;
        for _ in 0..5 {
            let spread = Duration::from_millis(d.tcb.cwnd.floor() as u64);
            d.round_spread(Duration::from_millis(100), spread);
        }
        assert!(d.tcb.ssthresh > s, "{} {}", d.tcb.ssthresh, s);
    }
}
