//! What connections leave for later ones between the same pair of hosts: Linux's TCP metrics
//! (`tcp_metrics.c`: the RTT, its variation, ssthresh and cwnd a closing connection saw, per
//! destination) and Careful Resume's saved path state (draft-ietf-tsvwg-careful-resume §3.1:
//! the capacity and minimum RTT a connection observed, with a lifetime).
//!
//! The cache belongs to the sending host; the simulation keeps one per (sender, receiver)
//! pair, as Linux keys its metrics by destination address within a namespace.

use crate::time::{Duration, Time};

/// Linux's TCP metrics of one destination (`struct tcp_metrics_block`), in the kernel's units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinuxMetrics {
    /// `TCP_METRIC_RTT`: smoothed RTT in µs × 8 (as `srtt_us`); 0 = none.
    pub rtt_us8: u64,
    /// `TCP_METRIC_RTTVAR`: in the units of `mdev_us` (µs × 4).
    pub rttvar_us4: u64,
    /// `TCP_METRIC_SSTHRESH`, segments; 0 = none.
    pub ssthresh: u32,
    /// `TCP_METRIC_CWND`, segments.
    pub cwnd: u32,
    /// `tcpm_stamp`: when the block was last updated.
    pub stamp: Time,
}

/// `TCP_METRICS_TIMEOUT`: a block older than an hour is reset before use (`tcpm_check_stamp`).
pub const LINUX_METRICS_TIMEOUT: Duration = Duration::from_secs(3600);

/// What a closing Linux connection knows (`tcp_update_metrics`'s inputs).
#[derive(Clone, Debug, PartialEq)]
pub struct ClosingState {
    /// `srtt_us` (µs × 8), 0 without a sample; `mdev_us` (µs × 4).
    pub srtt_us8: u64,
    pub mdev_us4: u64,
    /// The RTO was backed off (`icsk_backoff`).
    pub backed_off: bool,
    pub cwnd: u32,
    /// `None` while unlimited (`tcp_in_initial_slowstart`).
    pub ssthresh: Option<u32>,
    /// In congestion avoidance and `TCP_CA_Open`.
    pub ca_open_and_avoiding: bool,
}

impl LinuxMetrics {
    /// `tcp_update_metrics` when a connection closes; `save_ssthresh` is
    /// `!net.ipv4.tcp_no_ssthresh_metrics_save` (Linux's default since 5.11: not saved).
    pub fn update(&mut self, s: &ClosingState, save_ssthresh: bool, now: Time) {
        if s.backed_off || s.srtt_us8 == 0 {
            // "This session failed to estimate rtt": forget the RTT.
            self.rtt_us8 = 0;
            return;
        }
        // A larger RTT replaces the stored one; a smaller one moves it by an eighth (an RTT
        // overestimated is better than one underestimated).
        let m = self.rtt_us8 as i64 - s.srtt_us8 as i64;
        self.rtt_us8 = if m <= 0 {
            s.srtt_us8
        } else {
            self.rtt_us8 - (m as u64 >> 3)
        };
        let m = (m.unsigned_abs() >> 1).max(s.mdev_us4);
        self.rttvar_us4 = if m >= self.rttvar_us4 {
            m
        } else {
            self.rttvar_us4 - ((self.rttvar_us4 - m) >> 2)
        };
        match s.ssthresh {
            // Slow start did not finish.
            None => {
                if save_ssthresh && self.ssthresh != 0 && s.cwnd >> 1 > self.ssthresh {
                    self.ssthresh = s.cwnd >> 1;
                }
                self.cwnd = self.cwnd.max(s.cwnd);
            }
            // Congestion avoidance in Open: cwnd is reliable.
            Some(ssthresh) if s.ca_open_and_avoiding => {
                if save_ssthresh {
                    self.ssthresh = (s.cwnd >> 1).max(ssthresh);
                }
                self.cwnd = (self.cwnd + s.cwnd) >> 1;
            }
            // Recovery, or a slow start after a loss: cwnd means little.
            Some(ssthresh) => {
                self.cwnd = (self.cwnd + ssthresh) >> 1;
                if save_ssthresh && self.ssthresh != 0 && ssthresh > self.ssthresh {
                    self.ssthresh = ssthresh;
                }
            }
        }
        self.stamp = now;
    }

    /// The block as a connection opening at `now` reads it (`tcpm_check_stamp`: reset when
    /// older than [`LINUX_METRICS_TIMEOUT`]).
    pub fn current(&self, now: Time) -> LinuxMetrics {
        if now.saturating_since(self.stamp) > LINUX_METRICS_TIMEOUT {
            LinuxMetrics::default()
        } else {
            self.clone()
        }
    }
}

/// `tcp_init_metrics`'s RTO from a cached RTT larger than the handshake's sample:
/// crtt + max(2 crtt, rto_min), crtt in jiffies of `hz` (the kernel's arithmetic).
pub fn rto_from_cached_rtt(rtt_us8: u64, rto_min: Duration, hz: u32) -> Duration {
    let jiffy_us = 1_000_000 / hz.max(1) as u64;
    let crtt_jiffies = rtt_us8 / (8 * jiffy_us);
    let crtt = Duration::from_micros(crtt_jiffies * jiffy_us);
    let twice = Duration::from_nanos(crtt.as_nanos() * 2);
    crtt + twice.max(rto_min)
}

/// The path state Careful Resume saves (draft-ietf-tsvwg-careful-resume §2.4): the capacity a
/// connection used, its minimum RTT and when the state expires.
#[derive(Clone, Debug, PartialEq)]
pub struct ResumeState {
    /// `saved_cwnd`, segments.
    pub cwnd: f64,
    /// `saved_rtt`: the minimum RTT of the observation.
    pub min_rtt: Duration,
    pub expires: Time,
    /// A connection is using it (only one may at a time, §3.2).
    pub in_use: bool,
}

/// One (sender, receiver) pair's cache.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathRecord {
    pub linux: LinuxMetrics,
    pub resume: Option<ResumeState>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closing(srtt_ms: u64, cwnd: u32, ssthresh: Option<u32>, avoiding: bool) -> ClosingState {
        ClosingState {
            srtt_us8: srtt_ms * 8000,
            mdev_us4: 4000,
            backed_off: false,
            cwnd,
            ssthresh,
            ca_open_and_avoiding: avoiding,
        }
    }

    #[test]
    fn the_rtt_is_replaced_when_larger_and_moves_an_eighth_when_smaller() {
        let mut m = LinuxMetrics::default();
        let t = Time::from_nanos(5);
        m.update(&closing(100, 50, None, false), false, t);
        // m = 0 - 800000 <= 0: replaced; rttvar = max(|m| / 2, mdev) = 400000.
        assert_eq!((m.rtt_us8, m.rttvar_us4, m.stamp), (800_000, 400_000, t));
        m.update(&closing(20, 50, None, false), false, t);
        // m = 800000 - 160000 = 640000: 800000 - 80000; rttvar: 320000 < 400000, so
        // 400000 - 80000 / 4.
        assert_eq!((m.rtt_us8, m.rttvar_us4), (720_000, 380_000));
        // A backed-off connection forgets the RTT.
        let mut failed = closing(20, 50, None, false);
        failed.backed_off = true;
        m.update(&failed, false, t);
        assert_eq!(m.rtt_us8, 0);
    }

    #[test]
    fn ssthresh_is_saved_only_when_asked_and_by_the_phase_it_closed_in() {
        let t = Time::ZERO;
        let mut off = LinuxMetrics::default();
        off.update(&closing(100, 300, Some(200), true), false, t);
        assert_eq!((off.ssthresh, off.cwnd), (0, 150));
        let mut m = LinuxMetrics::default();
        // In congestion avoidance: max(cwnd / 2, ssthresh); cwnd averaged with the stored 0.
        m.update(&closing(100, 300, Some(200), true), true, t);
        assert_eq!((m.ssthresh, m.cwnd), (200, 150));
        // Still in the first slow start: raised to cwnd / 2 only if one is stored and lower.
        m.update(&closing(100, 600, None, false), true, t);
        assert_eq!((m.ssthresh, m.cwnd), (300, 600));
        // In recovery: the larger ssthresh kept, cwnd averaged with ssthresh.
        m.update(&closing(100, 100, Some(250), false), true, t);
        assert_eq!((m.ssthresh, m.cwnd), (300, 425));
    }

    #[test]
    fn old_metrics_are_reset_and_a_cached_rtt_sets_the_rto() {
        let m = LinuxMetrics {
            rtt_us8: 800_000,
            stamp: Time::from_nanos(0),
            ..LinuxMetrics::default()
        };
        assert_eq!(m.current(Time::from_nanos(3_600_000_000_000)), m);
        assert_eq!(
            m.current(Time::from_nanos(3_600_000_000_001)),
            LinuxMetrics::default()
        );
        // 100 ms at HZ 250: 25 jiffies; RTO = 100 + max(200, 200) ms.
        assert_eq!(
            rto_from_cached_rtt(800_000, Duration::from_millis(200), 250),
            Duration::from_millis(300)
        );
        // 30 ms: 7 jiffies (28 ms) + max(56, 200) ms.
        assert_eq!(
            rto_from_cached_rtt(240_000, Duration::from_millis(200), 250),
            Duration::from_millis(228)
        );
    }
}
