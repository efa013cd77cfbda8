//! Reno / NewReno congestion avoidance: AIMD (RFC 5681 §3.1).
//!
//! The two differ in loss recovery, which belongs to the sender (`tcp::Recovery`): `reno` uses
//! RFC 5681 §3.2 fast recovery, `newreno` the RFC 6582 modification. The window rules are the same.

use super::params::{closed, open, param, AlgorithmConfig, Allowed, Param};
use super::slow_start::{Standard, StandardConfig};
use super::{Ack, CaState, CongestionControl, SlowStart, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// How the window counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RenoCounting {
    /// RFC 5681: +1 per ACK in slow start (or per segment up to `abc_limit`), +1/cwnd per ACK
    /// after; ssthresh = max(FlightSize × beta, 2).
    Rfc5681,
    /// Linux `tcp_reno_cong_avoid`: `tcp_slow_start` adds every segment acknowledged up to
    /// ssthresh, `tcp_cong_avoid_ai` adds one segment per cwnd segments acknowledged with an
    /// integer counter (`snd_cwnd_cnt`); `tcp_reno_ssthresh` = max(cwnd × beta, 2) in whole
    /// segments.
    Linux,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RenoConfig {
    /// RFC 3465 byte counting limit L (segments) in slow start; 0 = count ACKs (RFC 5681).
    pub abc_limit: u32,
    /// Multiplicative decrease factor: ssthresh = max(FlightSize × beta, 2) (RFC 5681 eq. 4: 0.5).
    pub beta: f64,
    pub counting: RenoCounting,
}

impl Default for RenoConfig {
    fn default() -> Self {
        RenoConfig {
            abc_limit: 0,
            beta: 0.5,
            counting: RenoCounting::Rfc5681,
        }
    }
}

impl AlgorithmConfig for RenoConfig {
    const PARAMS: &'static [Param] = &[
        param(
            "abc_limit",
            "segments",
            closed(0.0, 1000.0),
            "RFC 3465 byte-counting limit L in segments; 0 counts ACKs (RFC 5681)",
        ),
        param(
            "beta",
            "",
            open(0.0, 1.0),
            "multiplicative decrease: ssthresh = max(FlightSize x beta, 2)",
        ),
        param(
            "counting",
            "",
            Allowed::Any,
            "\"rfc5681\" (per ACK; abc_limit) or \"linux\" (tcp_slow_start, tcp_cong_avoid_ai, ssthresh from cwnd); abc_limit is not used with \"linux\"",
        ),
    ];
}

#[derive(Debug, Clone)]
pub struct Reno {
    config: RenoConfig,
    slow_start: Standard,
    /// `snd_cwnd_cnt` of `tcp_cong_avoid_ai` (Linux counting).
    cwnd_cnt: u32,
}

impl Reno {
    pub fn new(config: RenoConfig) -> Self {
        let slow_start = Standard::new(StandardConfig {
            abc_limit: config.abc_limit,
        });
        Reno {
            config,
            slow_start,
            cwnd_cnt: 0,
        }
    }
}

/// Congestion avoidance: cwnd += 1/cwnd per ACK (RFC 5681 eq. 3), i.e. about one segment per RTT.
/// With ABC, each acknowledged segment counts.
pub fn additive_increase(tcb: &mut Tcb, ack: &Ack, abc_limit: u32) {
    let n = if abc_limit == 0 {
        1
    } else {
        ack.acked.min(abc_limit)
    };
    for _ in 0..n {
        tcb.cwnd += 1.0 / tcb.cwnd;
    }
}

/// Linux `tcp_slow_start`: cwnd = min(cwnd + acked, ssthresh); returns what is left over.
pub fn linux_slow_start(tcb: &mut Tcb, acked: u32) -> u32 {
    let cwnd = tcb.cwnd.floor();
    let new = (cwnd + acked as f64).min(tcb.ssthresh.floor().max(cwnd));
    tcb.cwnd = new;
    acked - (new - cwnd) as u32
}

/// Linux `tcp_cong_avoid_ai(tp, w, acked)`: one segment per `w` acknowledged, counted in
/// `cnt` (`snd_cwnd_cnt`).
pub fn linux_cong_avoid_ai(tcb: &mut Tcb, cnt: &mut u32, w: u32, acked: u32) {
    let w = w.max(1);
    // "If credits accumulated at a higher w, apply them gently now."
    if *cnt >= w {
        *cnt = 0;
        tcb.cwnd = tcb.cwnd.floor() + 1.0;
    }
    *cnt += acked;
    if *cnt >= w {
        let delta = *cnt / w;
        *cnt -= delta * w;
        tcb.cwnd = tcb.cwnd.floor() + delta as f64;
    }
}

impl CongestionControl for Reno {
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        match self.config.counting {
            // RFC 5681 eq. 4: ssthresh = max(FlightSize / 2, 2 SMSS).
            RenoCounting::Rfc5681 => (tcb.flight_size() as f64 * self.config.beta).max(2.0),
            // tcp_reno_ssthresh: max(snd_cwnd >> 1, 2).
            RenoCounting::Linux => (tcb.cwnd.floor() * self.config.beta).floor().max(2.0),
        }
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        // tcp_init_cwnd_reduction and tcp_enter_loss zero snd_cwnd_cnt.
        if matches!(state, CaState::Recovery | CaState::Loss | CaState::Cwr) {
            self.cwnd_cnt = 0;
        }
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        if !tcb.cwnd_limited {
            return;
        }
        if self.config.counting == RenoCounting::Linux {
            // tcp_reno_cong_avoid.
            let mut acked = ack.acked;
            if tcb.in_slow_start() {
                acked = linux_slow_start(tcb, acked);
                if acked == 0 {
                    return;
                }
            }
            let w = tcb.cwnd.floor() as u32;
            linux_cong_avoid_ai(tcb, &mut self.cwnd_cnt, w, acked);
            return;
        }
        let mut ack = *ack;
        if tcb.in_slow_start() {
            ack.acked = self.slow_start.on_ack(tcb, &ack, now);
            if ack.acked == 0 {
                return;
            }
        }
        additive_increase(tcb, &ack, self.config.abc_limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn congestion_avoidance_adds_about_one_segment_per_window() {
        let mut t = Tcb::new(1000, 1040, 10.0, 10.0);
        let mut r = Reno::new(RenoConfig::default());
        for i in 0..10 {
            r.cong_avoid(
                &mut t,
                &Ack {
                    acked: 1,
                    ack_seq: i,
                },
                Time::ZERO,
            );
        }
        // Ten increments of 1/cwnd starting at 10: just under 11.
        assert!(t.cwnd > 10.9 && t.cwnd < 11.0, "{}", t.cwnd);
    }

    fn linux() -> Reno {
        Reno::new(RenoConfig {
            counting: RenoCounting::Linux,
            ..RenoConfig::default()
        })
    }

    #[test]
    fn linux_counting_adds_every_segment_in_slow_start_and_carries_the_rest() {
        let mut t = Tcb::new(1000, 1040, 10.0, 14.0);
        let mut r = linux();
        // A stretch ACK of 6 segments: slow start to ssthresh 14 (4 used), 2 left over for
        // tcp_cong_avoid_ai at w = 14: the counter holds 2, cwnd stays 14.
        r.cong_avoid(
            &mut t,
            &Ack {
                acked: 6,
                ack_seq: 6,
            },
            Time::ZERO,
        );
        assert_eq!((t.cwnd, r.cwnd_cnt), (14.0, 2));
        // 12 more segments make the counter 14 = w: cwnd 15, counter 0.
        r.cong_avoid(
            &mut t,
            &Ack {
                acked: 12,
                ack_seq: 18,
            },
            Time::ZERO,
        );
        assert_eq!((t.cwnd, r.cwnd_cnt), (15.0, 0));
        // 31 segments at w = 15: two segments (30), one left in the counter.
        r.cong_avoid(
            &mut t,
            &Ack {
                acked: 31,
                ack_seq: 49,
            },
            Time::ZERO,
        );
        assert_eq!((t.cwnd, r.cwnd_cnt), (17.0, 1));
        // tcp_reno_ssthresh: 17 >> 1 = 8 (not FlightSize).
        t.high_tx = 100;
        assert_eq!(r.ssthresh(&mut t, Time::ZERO), 8.0);
    }

    #[test]
    fn ssthresh_is_half_the_flight_but_at_least_two() {
        let mut t = Tcb::new(1000, 1040, 10.0, 100.0);
        t.high_tx = 20;
        let mut r = Reno::new(RenoConfig::default());
        assert_eq!(r.ssthresh(&mut t, Time::ZERO), 10.0);
        t.high_tx = 3;
        assert_eq!(r.ssthresh(&mut t, Time::ZERO), 2.0);
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<RenoConfig>();
    }
}
