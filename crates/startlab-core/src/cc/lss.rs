//! Limited Slow Start (RFC 3742; surveyed in Ha 2009 §3.2.3).
//!
//! Below `max_ssthresh` it is standard slow start. Above it, cwnd grows by 1/K segment per ACK
//! with K = int(cwnd / (0.5 max_ssthresh)) (RFC 3742 §2), so that slow start adds at most
//! `max_ssthresh / 2` segments per RTT however large the window.

use super::params::{closed, param, AlgorithmConfig, Param};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, SlowStart, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LssConfig {
    /// RFC 3742 §2: max_ssthresh in segments (the RFC suggests 100).
    pub max_ssthresh: f64,
}

impl Default for LssConfig {
    fn default() -> Self {
        LssConfig {
            max_ssthresh: 100.0,
        }
    }
}

impl AlgorithmConfig for LssConfig {
    const PARAMS: &'static [Param] = &[param(
        "max_ssthresh",
        "segments",
        closed(1.0, 1e7),
        "segments; above it growth is limited to max_ssthresh/2 per RTT",
    )];
}

#[derive(Clone, Debug)]
pub struct LimitedSlowStart {
    config: LssConfig,
}

impl LimitedSlowStart {
    pub fn new(config: LssConfig) -> Self {
        LimitedSlowStart { config }
    }
}

impl SlowStart for LimitedSlowStart {
    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) -> u32 {
        if ack.acked == 0 {
            return 0;
        }
        let max = self.config.max_ssthresh;
        if tcb.cwnd <= max {
            // RFC 3742 §2: "If (cwnd <= max_ssthresh) cwnd += MSS".
            return grow_to_ssthresh(tcb, 1, ack.acked);
        }
        // "K = int(cwnd / (0.5 max_ssthresh)); cwnd += int(MSS / K)": in segments, 1/K.
        let k = (tcb.cwnd / (0.5 * max)).floor().max(1.0);
        tcb.cwnd = (tcb.cwnd + 1.0 / k).min(tcb.ssthresh.max(tcb.cwnd));
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::{Reno, RenoConfig};
    use crate::cc::testing::Driver;
    use crate::cc::WithStartup;
    use crate::time::Duration;

    fn driver(max_ssthresh: f64, cwnd: f64) -> Driver {
        let cc = WithStartup {
            cc: Box::new(Reno::new(RenoConfig::default())),
            startup: Box::new(LimitedSlowStart::new(LssConfig { max_ssthresh })),
        };
        Driver::new(Box::new(cc), cwnd, f64::INFINITY)
    }

    #[test]
    fn doubles_below_max_ssthresh() {
        let mut d = driver(100.0, 10.0);
        assert_eq!(d.round(Duration::from_millis(50)), 20.0);
        assert_eq!(d.round(Duration::from_millis(50)), 40.0);
    }

    #[test]
    fn adds_at_most_half_max_ssthresh_per_rtt_above_it() {
        // From cwnd 200 with max_ssthresh 100: K = int(cwnd / 50) = 4 for cwnd in [200, 250),
        // so each of the 200 ACKs of the round adds 1/4 until cwnd reaches 250 (after 200 ACKs
        // exactly 250): the round adds 50 = max_ssthresh / 2.
        let mut d = driver(100.0, 200.0);
        let w = d.round(Duration::from_millis(50));
        assert!((w - 250.0).abs() < 1e-9, "{w}");
        // Next round: K = 5 over [250, 300): 250 ACKs x 1/5 = 50 again.
        let w = d.round(Duration::from_millis(50));
        assert!((w - 300.0).abs() < 1e-9, "{w}");
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<LssConfig>();
    }
}
