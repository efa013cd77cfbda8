//! Standard slow start (RFC 5681 §3.1), optionally with Appropriate Byte Counting (RFC 3465).

use super::params::{closed, param, AlgorithmConfig, Param};
use super::{Ack, SlowStart, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// Standard slow start's parameters; the default counts ACKs (RFC 5681).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StandardConfig {
    /// RFC 3465 limit L in segments: grow by min(segments acked, L) per ACK. 0 counts ACKs
    /// instead (RFC 5681: one segment per ACK, whatever it acknowledges).
    pub abc_limit: u32,
}

impl AlgorithmConfig for StandardConfig {
    const PARAMS: &'static [Param] = &[param(
        "abc_limit",
        "segments",
        closed(0.0, 1000.0),
        "RFC 3465 byte-counting limit L in segments; 0 counts ACKs (RFC 5681)",
    )];
}

/// Exponential growth: cwnd += 1 segment per ACK (RFC 5681 eq. 2), or += min(acked, L) with ABC.
#[derive(Clone, Debug, Default)]
pub struct Standard {
    pub config: StandardConfig,
}

impl Standard {
    pub fn new(config: StandardConfig) -> Self {
        Standard { config }
    }

    /// The increase for one ACK, in segments.
    pub fn increase(&self, ack: &Ack) -> u32 {
        match self.config.abc_limit {
            0 => 1.min(ack.acked),
            limit => ack.acked.min(limit),
        }
    }
}

/// Adds `increase` segments without passing ssthresh; returns what is left over (in ACKed
/// segments, for congestion avoidance), as Linux `tcp_slow_start`.
pub fn grow_to_ssthresh(tcb: &mut Tcb, increase: u32, acked: u32) -> u32 {
    let room = (tcb.ssthresh - tcb.cwnd).max(0.0);
    if (increase as f64) <= room {
        tcb.cwnd += increase as f64;
        0
    } else {
        tcb.cwnd = tcb.cwnd.max(tcb.ssthresh);
        let used = room.ceil() as u32;
        acked.saturating_sub(used)
    }
}

impl SlowStart for Standard {
    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) -> u32 {
        let inc = self.increase(ack);
        grow_to_ssthresh(tcb, inc, ack.acked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcb(cwnd: f64, ssthresh: f64) -> Tcb {
        Tcb::new(1000, 1040, cwnd, ssthresh)
    }

    #[test]
    fn one_segment_per_ack_without_abc() {
        let mut t = tcb(2.0, 100.0);
        let mut ss = Standard::default();
        // A delayed ACK covering two segments still adds one (RFC 5681).
        assert_eq!(
            ss.on_ack(
                &mut t,
                &Ack {
                    acked: 2,
                    ack_seq: 2
                },
                Time::ZERO
            ),
            0
        );
        assert_eq!(t.cwnd, 3.0);
    }

    #[test]
    fn abc_counts_acked_segments_up_to_l() {
        let mut t = tcb(2.0, 100.0);
        let mut ss = Standard::new(StandardConfig { abc_limit: 2 });
        ss.on_ack(
            &mut t,
            &Ack {
                acked: 3,
                ack_seq: 3,
            },
            Time::ZERO,
        );
        assert_eq!(t.cwnd, 4.0);
    }

    #[test]
    fn stops_at_ssthresh_and_returns_the_rest() {
        let mut t = tcb(9.0, 10.0);
        let mut ss = Standard::new(StandardConfig { abc_limit: 4 });
        let left = ss.on_ack(
            &mut t,
            &Ack {
                acked: 3,
                ack_seq: 3,
            },
            Time::ZERO,
        );
        assert_eq!(t.cwnd, 10.0);
        assert_eq!(left, 2);
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<StandardConfig>();
    }
}
