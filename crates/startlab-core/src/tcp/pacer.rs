//! Sender-side pacing: when the next segment may leave, and the rate the `window` and
//! `linux` pacing modes set from cwnd and srtt.

use super::Pacing;
use crate::time::{Duration, Time};
use crate::units::Rate;

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

/// The rate of the `window` and `linux` modes; `None` for the modes whose rate the controller
/// or Initial Spreading sets.
pub(super) fn pacing_rate(mode: Pacing, w: Window, srtt: Duration) -> Option<Rate> {
    let ratio = match mode {
        Pacing::Window => 1.0,
        // Linux `tcp_update_pacing_rate`: sysctl_tcp_pacing_ss_ratio while cwnd < ssthresh / 2,
        // sysctl_tcp_pacing_ca_ratio after.
        Pacing::Linux { ss_ratio, ca_ratio } => {
            if w.cwnd < w.ssthresh / 2.0 {
                ss_ratio
            } else {
                ca_ratio
            }
        }
        Pacing::ByController | Pacing::InitialSpreading => return None,
    };
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
        let linux = Pacing::Linux {
            ss_ratio: 2.0,
            ca_ratio: 1.2,
        };
        assert_eq!(
            pacing_rate(linux, w(10.0), srtt),
            Some(Rate::from_bps(1_600_000))
        );
        assert_eq!(
            pacing_rate(linux, w(20.0), srtt),
            Some(Rate::from_bps(1_920_000))
        );
        assert_eq!(
            pacing_rate(Pacing::Window, w(10.0), srtt),
            Some(Rate::from_bps(800_000))
        );
        assert_eq!(pacing_rate(Pacing::ByController, w(10.0), srtt), None);
    }
}
