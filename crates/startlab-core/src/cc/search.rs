//! SEARCH slow start ("Slow start Exit At Right CHokepoint", Chung et al., IETF draft
//! draft-chung-ccwg-search): the SEARCH 3.0 pseudo-code, lines 1-42, of the June 2024 text
//! (draft-chung-ietf-ccwg-00), with two corrections to its bins (below).
//!
//! In slow start the bytes delivered per RTT double; once the bottleneck is full they stop
//! growing. SEARCH keeps the delivered bytes in time bins, compares the bytes delivered over a
//! window of `window_factor` initial RTTs with those of the same window one RTT earlier, and
//! leaves slow start when the current window delivered less than twice the earlier one by more
//! than `thresh` (normalized). On exit it takes back the growth of the last two initial RTTs,
//! since detection lags the chokepoint by about that much.
//!
//! The two corrections (without them the sums of lines 15 and 17 miss most of what was
//! delivered):
//! - update_bins (lines 24-31) clears the bins that were skipped, curr_idx + 1 to
//!   curr_idx + passed_bins - 1, before it writes bin curr_idx + passed_bins. Line 26 starts the
//!   clearing at curr_idx, the latest completed bin, which would erase each bin's count at the
//!   next boundary.
//! - The ring holds W + EXTRA_BINS + 1 bins (line 4 has W + EXTRA_BINS). The earlier window with
//!   its interpolated end bins spans prev_idx - W to prev_idx, and lines 13-14 allow
//!   curr_idx - prev_idx up to EXTRA_BINS: W + EXTRA_BINS + 1 bins from prev_idx - W to
//!   curr_idx, the oldest of which would otherwise share its slot with the newest.

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
    /// EXTRA_BINS: bins kept beyond the window, to look back one RTT (the ring holds
    /// `bins + extra_bins + 1`).
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
    /// Delivered segments per bin, indexed modulo `bins + extra_bins + 1`: the bins from
    /// `curr_idx - bins - extra_bins` to `curr_idx`, all that lines 12-17 may read.
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
        let n = config.bins as usize + config.extra_bins as usize + 1;
        Search {
            config,
            bin: vec![0.0; n],
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

    /// Lines 24-31: the bins skipped since the latest completed one (curr_idx + 1 to
    /// curr_idx + passed_bins - 1) are cleared, the latest keeps its count, and the new one gets
    /// what was delivered since the last boundary. More than a ring of skipped bins clears the
    /// ring once.
    fn update_bins(&mut self, now: Time, delivered: u64) {
        let d = self.bin_duration.as_nanos();
        let passed = (now.saturating_since(self.bin_end).as_nanos() / d) as i64 + 1;
        self.bin_end += Duration::from_nanos(d * passed as u64);
        let n = self.bin.len() as i64;
        for i in (self.curr_idx + 1)..(self.curr_idx + passed.min(n + 1)) {
            self.bin[i.rem_euclid(n) as usize] = 0.0;
        }
        self.curr_idx += passed;
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
                    // exit_slow_start(), lines 39-42; the look-back reaches no further than the
                    // bins the ring holds.
                    if self.config.rollback {
                        let two_rtts = ((2.0 * self.initial_rtt.unwrap().as_nanos() as f64 / d)
                            .round() as i64)
                            .min(self.bin.len() as i64 - 1);
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

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        // A loss ends SEARCH for the connection: it watches the initial slow start only (as
        // HyStart++ here, RFC 9406 §4.3), and the slow start after a timeout is standard. The
        // first ACK after a timeout can acknowledge a whole window at once; counted in a bin,
        // it would stand as the earlier window and end the new slow start at once.
        if matches!(state, CaState::Loss | CaState::Recovery) {
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
    fn consecutive_bin_updates_keep_their_counts() {
        // BIN_DURATION 10 ms, the first bin ending at 10 ms; update_bins gets the cumulative
        // delivered count.
        let mut s = Search::new(SearchConfig::default());
        s.bin_duration = Duration::from_millis(10);
        s.bin_end = Time::from_nanos(10_000_000);
        let ms = |t: u64| Time::from_nanos(t * 1_000_000);
        // 11 ms: bin 0 completes with 5 segments; 21 ms: bin 1 with 12 - 5 = 7, and bin 0 keeps
        // its 5.
        s.update_bins(ms(11), 5);
        s.update_bins(ms(21), 12);
        assert_eq!(s.curr_idx, 1);
        assert_eq!(&s.bin[..2], &[5.0, 7.0]);
        // 45 ms, past the ends of bins 2 (30 ms) and 3 (40 ms): bin 2 was skipped (empty), bin 3
        // gets 20 - 12 = 8, bins 0 and 1 keep theirs.
        s.update_bins(ms(45), 20);
        assert_eq!(s.curr_idx, 3);
        assert_eq!(&s.bin[..4], &[5.0, 7.0, 0.0, 8.0]);
        // The window of the last four bins (line 15): 5 + 7 + 0 + 8 = 20.
        assert_eq!(s.sum_bins(-1, 3, 0.0), 20.0);
        // 1045 ms: passed_bins = (1045 - 50) / 10 + 1 = 100, more than the ring holds: only the
        // new bin, 103, is non-zero.
        s.update_bins(ms(1045), 30);
        assert_eq!(s.curr_idx, 103);
        assert_eq!(s.bin.iter().sum::<f64>(), 10.0);
        assert_eq!(s.at(103), 10.0);
    }

    #[test]
    fn the_look_back_at_the_largest_shift_reads_the_oldest_bin() {
        // W = 10, EXTRA_BINS = 15, BIN_DURATION 10 ms. Bins 0 to 23 are complete with one
        // segment each, bin 24 with none; the ACK at 251 ms completes bin 25 with 9 (delivered
        // 100 -> 109).
        let mut s = Search::new(SearchConfig::default());
        s.initial_rtt = Some(Duration::from_millis(100));
        s.bin_duration = Duration::from_millis(10);
        let n = s.bin.len() as i64;
        for i in 0..24 {
            s.bin[(i % n) as usize] = 1.0;
        }
        s.curr_idx = 24;
        s.bin_end = Time::from_nanos(250_000_000);
        s.prev_delivered = 100;
        let mut tcb = Tcb::new(1000, 1040, 100.0, f64::INFINITY);
        tcb.delivered = 109;
        // rtt = 15.5 bins: prev_idx = 25 - 15 = 10, the largest shift lines 13-14 allow
        // (curr_idx - prev_idx = EXTRA_BINS), and fraction 0.5.
        tcb.latest_rtt = Some(Duration::from_millis(155));
        let ack = Ack {
            acked: 1,
            ack_seq: 109,
        };
        s.on_ack(&mut tcb, &ack, Time::from_nanos(251_000_000));
        assert_eq!(s.curr_idx, 25);
        // prev_delv = 0.5 × bin 0 + bins 1..=9 + 0.5 × bin 10 = 0.5 + 9 + 0.5 = 10: bin 0 is the
        // oldest bin, not bin 25 (which would give 4.5 + 9 + 0.5 = 14).
        assert_eq!(s.sum_bins(0, 10, 0.5), 10.0);
        // curr_delv = bins 16..=25 = 8 + 0 + 9 = 17.
        assert_eq!(s.sum_bins(15, 25, 0.0), 17.0);
        // norm_diff = (20 - 17) / 20 = 0.15 < THRESH: slow start goes on (with bin 25 in bin 0's
        // place, (28 - 17) / 28 = 0.39 would end it).
        assert!(tcb.ssthresh.is_infinite());
        assert_eq!(tcb.cwnd, 101.0);
    }

    #[test]
    fn doubling_delivery_never_exits_and_a_capped_one_does() {
        // Uncapped: each round's ACKs all come one RTT after its window was sent, so delivery
        // doubles every RTT, the interval the comparison looks back over. SEARCH stays in slow
        // start (derived by hand: INITIAL_RTT = 100 ms, BIN_DURATION = 35 ms, the rounds' ACKs in
        // bins 1, 4, 7, ..., 19, 21; norm_diff < 0 at each check, in rounds 5 to 8).
        let rtt = Duration::from_millis(100);
        let mut d = driver(SearchConfig::default());
        for _ in 0..9 {
            d.round(rtt);
        }
        assert!(d.tcb.ssthresh.is_infinite());
        assert_eq!(d.tcb.cwnd, 1024.0);
        // Capped at 64 segments per RTT (a bottleneck): the window keeps growing but delivery
        // does not.
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
        // Derived by hand. Round r's ACKs come 100 ms after its window was sent, 1.5625 ms apart
        // (2, 4, ..., 64 in round 5, then 64 per round). INITIAL_RTT = 101.5625 ms (the first
        // ACK), BIN_DURATION = 35.546875 ms, bins from that ACK. The first check, in round 5,
        // gives norm_diff 0.24, then 0.17, < 0, < 0. The first ACK of round 6 (898.4375 ms,
        // rtt 101.5625 ms: prev_idx = curr_idx - 2, fraction 0.857) completes bin 21, bins 19
        // and 20 empty: curr_delv = bins 12..=21 = 10 + 22 + 5 + 23 + 23 + 13 = 96, prev_delv =
        // bins 10..=18 = 16 + 10 + 22 + 5 + 23 + 23 = 99 (end bins 9 and 19 empty), norm_diff =
        // (198 - 96) / 198 = 0.52. The rollback takes the last round(2 × 101.5625 / 35.546875)
        // = 6 bins, 16..=21 (5 + 23 + 23 + 13 = 64), from cwnd 129.
        assert_eq!(r, 6, "exited in round {r}");
        assert_eq!(d.tcb.ssthresh, 65.0);
        assert_eq!(d.tcb.exit_reason_hint, Some(ExitReason::Detector("search")));
    }

    /// A loss ends SEARCH: after a timeout, slow start runs to the new ssthresh and no SEARCH
    /// exit is reported, even when the first ACK after the timeout covers a whole window (100
    /// segments SACKed before it), which a detector restarted with empty bins would count as
    /// the earlier window's delivery and exit on.
    #[test]
    fn the_slow_start_after_a_timeout_is_standard() {
        let rtt = Duration::from_millis(100);
        let mut d = driver(SearchConfig::default());
        for _ in 0..7 {
            d.round(rtt);
        }
        d.send();
        d.timeout();
        let ssthresh = d.tcb.ssthresh;
        assert_eq!(ssthresh, 128.0);
        d.tcb.delivered += 100;
        for _ in 0..10 {
            d.round_spread(rtt, rtt / 2);
        }
        assert_eq!(d.tcb.exit_reason_hint, None);
        assert_eq!(d.tcb.ssthresh, ssthresh);
        assert!(d.tcb.cwnd >= ssthresh);
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<SearchConfig>();
    }
}
