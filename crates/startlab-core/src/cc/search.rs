//! SEARCH slow start ("Slow start Exit At Right CHokepoint", Chung et al., IETF draft
//! draft-chung-ccwg-search, SEARCH 3.0 algorithm of the 2024 text).
//!
//! In slow start the bytes delivered per RTT double; once the bottleneck is full they stop
//! growing. SEARCH keeps the delivered bytes in time bins, compares the bytes delivered over a
//! window of `window_factor` initial RTTs with those of the same window one RTT earlier, and
//! leaves slow start when the current window delivered less than twice the earlier one by more
//! than `thresh` (normalized). On exit it takes back the growth of the last two initial RTTs,
//! since detection lags the chokepoint by about that much.

use super::params::{above, closed, param, AlgorithmConfig, Allowed, Param};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, CaState, ExitReason, SlowStart, Tcb};
use crate::time::{Duration, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    /// WINDOW_SIZE = INITIAL_RTT × this.
    pub window_factor: f64,
    /// W: bins per window.
    pub bins: u32,
    /// EXTRA_BINS: bins kept beyond the window, to look back one RTT.
    pub extra_bins: u32,
    /// THRESH on the normalized difference.
    pub thresh: f64,
    /// On exit, remove the delivered bytes of the last two initial RTTs from cwnd (lines 39-41).
    pub rollback: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            window_factor: 3.5,
            bins: 10,
            extra_bins: 15,
            thresh: 0.35,
            rollback: true,
        }
    }
}

impl AlgorithmConfig for SearchConfig {
    const PARAMS: &'static [Param] = &[
        param(
            "window_factor",
            "",
            above(0.0, 100.0),
            "the comparison window is this many initial RTTs",
        ),
        param("bins", "", closed(1.0, 1000.0), "W: bins per window"),
        param(
            "extra_bins",
            "",
            closed(0.0, 1000.0),
            "EXTRA_BINS: bins kept to look back one RTT",
        ),
        param(
            "thresh",
            "",
            above(0.0, 10.0),
            "THRESH: exit when the normalized difference reaches it",
        ),
        param(
            "rollback",
            "",
            Allowed::Any,
            "on exit, take back the growth of the last two initial RTTs",
        ),
    ];
}

#[derive(Clone, Debug)]
pub struct Search {
    config: SearchConfig,
    /// Delivered segments per bin, indexed modulo `bins + extra_bins`.
    bin: Vec<f64>,
    /// Index of the latest completed bin (-1: none yet).
    curr_idx: i64,
    bin_end: Time,
    bin_duration: Duration,
    initial_rtt: Option<Duration>,
    /// Delivered count at the last bin boundary.
    prev_delivered: u64,
    done: bool,
}

impl Search {
    pub fn new(config: SearchConfig) -> Self {
        let n = (config.bins + config.extra_bins) as usize;
        Search {
            config,
            bin: vec![0.0; n.max(1)],
            curr_idx: -1,
            bin_end: Time::ZERO,
            bin_duration: Duration::ZERO,
            initial_rtt: None,
            prev_delivered: 0,
            done: false,
        }
    }

    fn reset(&mut self, tcb: &Tcb, now: Time) {
        self.bin.iter_mut().for_each(|b| *b = 0.0);
        self.curr_idx = -1;
        self.prev_delivered = tcb.delivered;
        if let Some(rtt) = self.initial_rtt {
            self.bin_duration = Duration::from_nanos(
                ((rtt.as_nanos() as f64 * self.config.window_factor) / self.config.bins as f64)
                    .max(1.0) as u64,
            );
            self.bin_end = now + self.bin_duration;
        }
    }

    fn at(&self, i: i64) -> f64 {
        self.bin[i.rem_euclid(self.bin.len() as i64) as usize]
    }

    /// Sum of bins (idx1, idx2), plus `fraction` of bin idx1 and `1 - fraction` of bin idx2
    /// (lines 32-38).
    fn sum_bins(&self, idx1: i64, idx2: i64, fraction: f64) -> f64 {
        let middle: f64 = ((idx1 + 1)..idx2).map(|i| self.at(i)).sum();
        middle + self.at(idx1) * fraction + self.at(idx2) * (1.0 - fraction)
    }

    /// Lines 24-31.
    fn update_bins(&mut self, now: Time, delivered: u64) {
        let d = self.bin_duration.as_nanos();
        let passed = (now.saturating_since(self.bin_end).as_nanos() / d) as i64 + 1;
        self.bin_end += Duration::from_nanos(d * passed as u64);
        for i in self.curr_idx..(self.curr_idx + passed) {
            let n = self.bin.len() as i64;
            self.bin[i.rem_euclid(n) as usize] = 0.0;
        }
        self.curr_idx += passed;
        let n = self.bin.len() as i64;
        self.bin[self.curr_idx.rem_euclid(n) as usize] = (delivered - self.prev_delivered) as f64;
        self.prev_delivered = delivered;
    }
}

impl SlowStart for Search {
    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) -> u32 {
        let left = grow_to_ssthresh(tcb, ack.acked, ack.acked);
        if self.done {
            return left;
        }
        let Some(rtt) = tcb.latest_rtt.or(tcb.srtt) else {
            return left;
        };
        if self.initial_rtt.is_none() {
            // INITIAL_RTT is the first RTT measured on the connection; initialization (lines 7-9).
            self.initial_rtt = Some(rtt);
            self.reset(tcb, now);
            return left;
        }
        if now <= self.bin_end {
            return left;
        }
        self.update_bins(now, tcb.delivered);
        let d = self.bin_duration.as_nanos() as f64;
        let w = self.config.bins as i64;
        let shift = rtt.as_nanos() as f64 / d;
        // Line 12: prev_idx = curr_idx - rtt / BIN_DURATION (whole bins).
        let prev_idx = self.curr_idx - shift.floor() as i64;
        if prev_idx >= w && self.curr_idx - prev_idx <= self.config.extra_bins as i64 {
            let curr_delv = self.sum_bins(self.curr_idx - w, self.curr_idx, 0.0);
            // Line 16 writes "fraction = rtt mod BIN_DURATION"; sum_bins needs a proportion in
            // [0, 1] (line 36 text: "the proportion of the end bins"): the fractional part of
            // rtt / BIN_DURATION.
            let fraction = shift.fract();
            let prev_delv = self.sum_bins(prev_idx - w, prev_idx, fraction);
            if prev_delv > 0.0 {
                let norm_diff = (2.0 * prev_delv - curr_delv) / (2.0 * prev_delv);
                if norm_diff >= self.config.thresh {
                    // exit_slow_start(), lines 39-42.
                    if self.config.rollback {
                        let two_rtts =
                            (2.0 * self.initial_rtt.unwrap().as_nanos() as f64 / d).round() as i64;
                        let overshoot = self.sum_bins(self.curr_idx - two_rtts, self.curr_idx, 0.0);
                        tcb.cwnd = (tcb.cwnd - overshoot).max(tcb.cwnd.min(2.0)).max(1.0);
                    }
                    tcb.ssthresh = tcb.cwnd;
                    tcb.exit_reason_hint = Some(ExitReason::Detector("search"));
                    self.done = true;
                    return 0;
                }
            }
        }
        left
    }

    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, now: Time) {
        // A loss ends this slow start; the next one (after a timeout) starts with fresh bins.
        if state == CaState::Loss {
            self.done = false;
            self.reset(tcb, now);
        } else if state == CaState::Recovery {
            self.done = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::{Reno, RenoConfig};
    use crate::cc::testing::Driver;
    use crate::cc::WithStartup;

    fn driver(config: SearchConfig) -> Driver {
        let cc = WithStartup {
            cc: Box::new(Reno::new(RenoConfig::default())),
            startup: Box::new(Search::new(config)),
        };
        Driver::new(Box::new(cc), 2.0, f64::INFINITY)
    }

    #[test]
    fn sum_bins_interpolates_the_end_bins() {
        let mut s = Search::new(SearchConfig::default());
        for (i, b) in s.bin.iter_mut().enumerate() {
            *b = i as f64;
        }
        // (2, 5): bins 3 and 4 whole, a quarter of bin 2, three quarters of bin 5.
        assert_eq!(s.sum_bins(2, 5, 0.25), 3.0 + 4.0 + 0.5 + 3.75);
    }

    #[test]
    fn doubling_delivery_never_exits_and_a_capped_one_does() {
        // Uncapped: delivery doubles every round; SEARCH stays in slow start.
        let rtt = Duration::from_millis(100);
        let mut d = driver(SearchConfig::default());
        for _ in 0..9 {
            d.round_spread(rtt, rtt);
        }
        assert!(d.tcb.ssthresh.is_infinite());
        // Capped at 64 segments per RTT (a bottleneck): the window keeps growing but delivery
        // does not. By the worked example of the draft, the normalized difference passes 0.35
        // within a few RTTs of reaching capacity.
        let mut d = driver(SearchConfig::default());
        let mut exited_at = None;
        for round in 0..20 {
            // Send the window, but only 64 segments are delivered per RTT, evenly spread.
            d.send();
            d.advance(rtt);
            let n = d.in_flight().min(64);
            for _ in 0..n {
                d.advance(rtt / 64);
                d.ack(1);
            }
            if d.tcb.ssthresh.is_finite() {
                exited_at = Some(round);
                break;
            }
        }
        let r = exited_at.expect("SEARCH exits once delivery stops doubling");
        // Capacity (64 per RTT) is reached in round 5 (2, 4, ..., 64); the exit comes within 4
        // rounds of it.
        assert!((5..=9).contains(&r), "exited in round {r}");
        assert_eq!(d.tcb.exit_reason_hint, Some(ExitReason::Detector("search")));
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<SearchConfig>();
    }
}
