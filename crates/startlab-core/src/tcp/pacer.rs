//! Sender-side pacing: when the next segment may leave, and the rate the `window` and
//! `linux` pacing modes set from cwnd and srtt; and the `sk_pacing_rate` Linux keeps on every
//! socket, which controllers read.

use super::Pacing;
use crate::cc::Tcb;
use crate::time::{Duration, Time};
use crate::units::Rate;

/// The ratios of `tcp_update_pacing_rate` (`net.ipv4.tcp_pacing_ss_ratio` and
/// `tcp_pacing_ca_ratio`), in percent as the sysctls hold them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PacingRatios {
    /// While cwnd < ssthresh / 2.
    pub slow_start_percent: u32,
    /// After.
    pub avoidance_percent: u32,
}

impl PacingRatios {
    /// The sysctls' defaults: 200 % and 120 %.
    pub const LINUX: PacingRatios = PacingRatios {
        slow_start_percent: 200,
        avoidance_percent: 120,
    };
    /// `pacing = "window"`: the window over srtt in every state.
    pub const WINDOW: PacingRatios = PacingRatios {
        slow_start_percent: 100,
        avoidance_percent: 100,
    };

    /// The ratio in force, percent: `tcp_update_pacing_rate` uses the first while
    /// `tcp_snd_cwnd(tp) < tp->snd_ssthresh / 2`.
    fn percent(self, below_half_ssthresh: bool) -> u32 {
        if below_half_ssthresh {
            self.slow_start_percent
        } else {
            self.avoidance_percent
        }
    }
}

impl Default for PacingRatios {
    fn default() -> Self {
        PacingRatios::LINUX
    }
}

/// `sk->sk_pacing_rate` as `tcp_update_pacing_rate` keeps it on a socket whose rate no
/// controller sets, in payload bytes per second, in the kernel's integers:
/// `mss * ratio% * max(snd_cwnd, packets_out) / srtt`, with snd_cwnd and snd_ssthresh in whole
/// segments; `mss * ratio% * window` itself before the first RTT sample (srtt_us 0). It is not
/// capped: a caller applies `sk_max_pacing_rate`.
pub fn linux_sk_pacing_rate(tcb: &Tcb) -> u64 {
    let (cwnd, ssthresh) = (tcb.snd_cwnd(), tcb.snd_ssthresh());
    let percent = u64::from(tcb.pacing_ratios.percent(cwnd < ssthresh / 2));
    // tcp_update_pacing_rate: mss * ((USEC_PER_SEC / 100) << 3) * ratio * max(cwnd,
    // packets_out) / srtt_us (srtt_us is 8 x the RTT).
    let rate = u64::from(tcb.mss_bytes.max(1))
        .saturating_mul(80_000 * percent)
        .saturating_mul(cwnd.max(u64::from(tcb.flight_size())));
    let srtt_us = tcb.srtt.map_or(0, |d| d.as_nanos() / 1000 * 8);
    rate.checked_div(srtt_us).unwrap_or(rate)
}

/// The departure clock of a paced sender.
#[derive(Clone, Debug, Default)]
pub(super) struct Pacer {
    /// Earliest time the next segment may leave.
    next: Time,
    /// A segment is waiting for `next`.
    blocked: bool,
}

impl Pacer {
    /// When the sender must be woken up to send a held segment.
    pub fn deadline(&self) -> Option<Time> {
        self.blocked.then_some(self.next)
    }

    /// The earliest departure time of the next segment (Linux `tcp_wstamp_ns`): `now`, or later
    /// while pacing holds it back.
    pub fn next_departure(&self, now: Time) -> Time {
        self.next.max(now)
    }

    /// Whether a held segment may now leave (and the hold is over).
    pub fn due(&mut self, now: Time) -> bool {
        let due = self.blocked && self.next <= now;
        if due {
            self.blocked = false;
        }
        due
    }

    /// Whether the next segment must wait, at pacing rate `rate` (`None`: not paced).
    pub fn hold(&mut self, now: Time, rate: Option<Rate>) -> bool {
        let hold = rate.is_some() && now < self.next;
        if hold {
            self.blocked = true;
        }
        hold
    }

    /// A segment of `wire_bytes` left at `now`: the next may leave one transmission time at
    /// `rate` later.
    pub fn on_transmit(&mut self, now: Time, rate: Option<Rate>, wire_bytes: u64) {
        if let Some(rate) = rate.filter(|r| r.bps() > 0) {
            self.next = self.next.max(now) + rate.transmit_time(wire_bytes);
        }
    }

    /// The next segment may not leave before `t` (a controller moved Linux's `tcp_wstamp_ns`
    /// later); an earlier `t` changes nothing.
    pub fn defer_to(&mut self, t: Time) {
        self.next = self.next.max(t);
    }

    /// The connection closed: nothing is held any more.
    pub fn stop(&mut self) {
        self.blocked = false;
    }
}

/// What the pacing rate is computed from.
#[derive(Copy, Clone, Debug)]
pub(super) struct Window {
    pub cwnd: f64,
    pub ssthresh: f64,
    pub packets_out: u32,
    pub wire_bytes: u32,
}

/// The rate of the `window` and `linux` modes (`ratios`: the connection's, which are
/// [`PacingRatios::WINDOW`] in the window mode), in wire bytes and without rounding the window
/// to whole segments; `None` for the modes whose rate the controller or Initial Spreading sets.
pub(super) fn pacing_rate(
    mode: Pacing,
    ratios: PacingRatios,
    w: Window,
    srtt: Duration,
) -> Option<Rate> {
    if !matches!(mode, Pacing::Window | Pacing::Linux) {
        return None;
    }
    let ratio = f64::from(ratios.percent(w.cwnd < w.ssthresh / 2.0)) / 100.0;
    // Linux paces max(cwnd, packets_out) so that recovery is not slowed down.
    let window = w.cwnd.max(w.packets_out as f64);
    Some(rate_of(ratio * window * w.wire_bytes as f64, srtt))
}

/// The rate that sends `bytes` in `period`, at least 1 bit/s.
pub(super) fn rate_of(bytes: f64, period: Duration) -> Rate {
    let bps = bytes * 8.0 / period.as_secs_f64().max(1e-9);
    Rate::from_bps(bps.round().max(1.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_segment_waits_one_transmission_time_at_the_rate() {
        // 1000 B at 8 Mbps take 1 ms: the second segment may leave at 1 ms, not before.
        let mut p = Pacer::default();
        let rate = Some(Rate::from_mbps(8));
        assert!(!p.hold(Time::ZERO, rate));
        p.on_transmit(Time::ZERO, rate, 1000);
        assert!(p.hold(Time::from_nanos(999_999), rate));
        assert_eq!(p.deadline(), Some(Time::from_nanos(1_000_000)));
        assert!(!p.due(Time::from_nanos(999_999)));
        assert!(p.due(Time::from_nanos(1_000_000)));
        assert_eq!(p.deadline(), None);
        // Unpaced segments never wait.
        assert!(!p.hold(Time::ZERO, None));
    }

    #[test]
    fn linux_ratios_switch_at_half_ssthresh() {
        // 10 segments of 1000 B per 100 ms = 800 kbit/s; x2 in slow start below ssthresh/2.
        let srtt = Duration::from_millis(100);
        let w = |cwnd: f64| Window {
            cwnd,
            ssthresh: 40.0,
            packets_out: 0,
            wire_bytes: 1000,
        };
        let linux = PacingRatios::LINUX;
        assert_eq!(
            pacing_rate(Pacing::Linux, linux, w(10.0), srtt),
            Some(Rate::from_bps(1_600_000))
        );
        assert_eq!(
            pacing_rate(Pacing::Linux, linux, w(20.0), srtt),
            Some(Rate::from_bps(1_920_000))
        );
        assert_eq!(
            pacing_rate(Pacing::Window, PacingRatios::WINDOW, w(10.0), srtt),
            Some(Rate::from_bps(800_000))
        );
        assert_eq!(
            pacing_rate(Pacing::ByController, linux, w(10.0), srtt),
            None
        );
    }

    #[test]
    fn the_sockets_rate_is_linuxs_integer_arithmetic_with_the_connections_ratios() {
        // mss 1000, srtt 100 ms (srtt_us 800 000): 1000 * 80 000 * ratio * window / 800 000
        // = 100 * ratio * window bytes/s. cwnd 10, ssthresh 21: 10 < 21 / 2 = 10 is false in
        // the kernel's integers, so 120 %: 120 000 B/s (not 200 000, as 10 < 10.5 would give).
        let mut tcb = Tcb::new(1000, 1040, 10.0, 21.0);
        tcb.srtt = Some(Duration::from_millis(100));
        assert_eq!(linux_sk_pacing_rate(&tcb), 120_000);
        tcb.ssthresh = 22.0;
        assert_eq!(linux_sk_pacing_rate(&tcb), 200_000);
        // The ratios are the connection's: 300 % / 150 %.
        tcb.pacing_ratios = PacingRatios {
            slow_start_percent: 300,
            avoidance_percent: 150,
        };
        assert_eq!(linux_sk_pacing_rate(&tcb), 300_000);
        tcb.ssthresh = f64::INFINITY;
        tcb.cwnd = 10.9;
        assert_eq!(linux_sk_pacing_rate(&tcb), 300_000, "whole segments");
        // max(cwnd, packets_out): 30 segments out.
        tcb.high_tx = 30;
        assert_eq!(linux_sk_pacing_rate(&tcb), 900_000);
        // Before the first sample, srtt_us is 0 and the division is skipped.
        tcb.srtt = None;
        assert_eq!(linux_sk_pacing_rate(&tcb), 1000 * 80_000 * 300 * 30);
    }
}
