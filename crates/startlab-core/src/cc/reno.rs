//! Reno / NewReno congestion avoidance: AIMD (RFC 5681 §3.1).
//!
//! The two differ in loss recovery, which belongs to the sender (`tcp::Recovery`): `reno` uses
//! RFC 5681 §3.2 fast recovery, `newreno` the RFC 6582 modification. The window rules are the same.

use super::params::{closed, open, param, AlgorithmConfig, Param};
use super::slow_start::{Standard, StandardConfig};
use super::{Ack, CongestionControl, SlowStart, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RenoConfig {
    /// RFC 3465 byte counting limit L (segments) in slow start; 0 = count ACKs (RFC 5681).
    pub abc_limit: u32,
    /// Multiplicative decrease factor: ssthresh = max(FlightSize × beta, 2) (RFC 5681 eq. 4: 0.5).
    pub beta: f64,
}

impl Default for RenoConfig {
    fn default() -> Self {
        RenoConfig {
            abc_limit: 0,
            beta: 0.5,
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
    ];
}

#[derive(Debug, Clone)]
pub struct Reno {
    config: RenoConfig,
    slow_start: Standard,
}

impl Reno {
    pub fn new(config: RenoConfig) -> Self {
        let slow_start = Standard::new(StandardConfig {
            abc_limit: config.abc_limit,
        });
        Reno { config, slow_start }
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

impl CongestionControl for Reno {
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        // RFC 5681 eq. 4: ssthresh = max(FlightSize / 2, 2 SMSS).
        (tcb.flight_size() as f64 * self.config.beta).max(2.0)
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        if !tcb.cwnd_limited {
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
