//! Linux's GSO sizing and deferral (`tcp_output.c`), `tcp.tso_defer`.
//!
//! A Linux TCP socket always builds GSO packets (`sk_setup_caps` gives every TCP socket
//! `NETIF_F_GSO`; a device without GSO has them cut into segments in software), so
//! `tcp_write_xmit` sends skbs of several segments and, while the window has room for less
//! than a full one, may wait for the next ACK instead of sending what fits
//! (`tcp_tso_should_defer`). It waits at most until a millisecond has passed since the last
//! transmission. A bulk sender therefore transmits in groups about a millisecond apart, of
//! about a millisecond of data at its pacing rate (`tcp_tso_autosize`), not one or two segments
//! per ACK; at an overflowing queue, its losses come in runs.
//!
//! The simulator counts in segments where Linux counts bytes.

use crate::time::{Duration, Time};

/// `sk_gso_max_size` of a device with the default `gso_max_size` (`GSO_LEGACY_MAX_SIZE`,
/// 65536 B) less the header room `sk_dst_gso_max_size` keeps (`MAX_TCP_HEADER + 1`, 320 + 1 B
/// on x86-64).
pub(super) const GSO_MAX_BYTES: u64 = 65536 - 321;

/// `sysctl_tcp_min_tso_segs`.
pub(super) const MIN_TSO_SEGS: u32 = 2;

/// `sysctl_tcp_tso_rtt_log`: a flow whose minimum RTT is below 2^9 µs gets a larger skb.
const TSO_RTT_LOG: u32 = 9;

/// `sysctl_tcp_tso_win_divisor`: a third of the window free is enough to send.
const TSO_WIN_DIVISOR: u64 = 3;

/// How long a connection may go without transmitting before deferral stops (the
/// `NSEC_PER_MSEC` of `tcp_tso_should_defer`).
const MAX_DEFER: Duration = Duration::from_millis(1);

/// `tcp_tso_autosize`: segments per skb, about 1 ms of data at the pacing rate
/// (`sk_pacing_rate >> sk_pacing_shift`, the shift 10), more on a path whose minimum RTT is
/// below a few milliseconds, at most `GSO_MAX_BYTES`, at least `min_segs`.
pub(super) fn autosize(
    pacing_bytes_per_s: u64,
    min_rtt: Option<Duration>,
    mss: u32,
    min_segs: u32,
) -> u32 {
    let mut bytes = pacing_bytes_per_s >> 10;
    // tcp_min_rtt is ~0U before the first sample: no bonus.
    let min_rtt_us = min_rtt.map_or(u64::from(u32::MAX), |r| r.as_nanos() / 1000);
    let r = min_rtt_us >> TSO_RTT_LOG;
    if r < 32 {
        bytes += GSO_MAX_BYTES >> r;
    }
    let bytes = bytes.min(GSO_MAX_BYTES);
    ((bytes / u64::from(mss.max(1))) as u32).max(min_segs)
}

/// What `tcp_tso_should_defer` looks at, in segments.
#[derive(Copy, Clone, Debug)]
pub(super) struct Outlook {
    pub now: Time,
    /// The last transmission (`tcp_wstamp_ns` of a socket that is not paced); `None` before
    /// the first.
    pub last_xmit: Option<Time>,
    /// In Recovery or Loss: no deferral.
    pub recovering: bool,
    pub cwnd: u32,
    pub in_flight: u32,
    /// The receive window, and what of it is beyond `snd_nxt` (`tcp_wnd_end - seq`).
    pub snd_wnd: u32,
    pub snd_wnd_room: u32,
    /// Segments per skb (`tcp_tso_autosize`).
    pub max_segs: u32,
    /// The next skb of the write queue, its segments, whether it is the queue's last, and
    /// whether it will get no more data (the application's last write: its FIN goes with it).
    pub skb_segs: u32,
    pub skb_is_tail: bool,
    pub skb_complete: bool,
    /// When the oldest unacknowledged segment was last sent, and the smoothed RTT.
    pub head_sent_at: Option<Time>,
    pub srtt: Option<Duration>,
}

/// `tcp_tso_should_defer`'s verdict.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Send,
    /// Wait for the next ACK; `cwnd_limited` when the window is what holds the skb back
    /// (`*is_cwnd_limited = true`, which `tcp_cwnd_validate` then sees).
    Defer {
        cwnd_limited: bool,
    },
}

/// `tcp_tso_should_defer`, for an skb of more than one segment with room in the window.
pub(super) fn should_defer(o: &Outlook) -> Verdict {
    if o.recovering {
        return Verdict::Send;
    }
    // Defer only while the last transmission is recent.
    match o.last_xmit {
        Some(t) if o.now.saturating_since(t) <= MAX_DEFER => {}
        _ => return Verdict::Send,
    }
    let cong_win = o.cwnd.saturating_sub(o.in_flight);
    let send_win = o.snd_wnd_room;
    let limit = cong_win.min(send_win);
    // A full-sized skb can go.
    if limit >= o.max_segs {
        return Verdict::Send;
    }
    // An skb in the middle of the queue gets no more data: send it if it fits.
    if !o.skb_is_tail && limit >= o.skb_segs {
        return Verdict::Send;
    }
    // A third of the window is free.
    if TSO_WIN_DIVISOR * u64::from(limit) >= u64::from(o.snd_wnd.min(o.cwnd)) {
        return Verdict::Send;
    }
    let (Some(head_sent_at), Some(srtt)) = (o.head_sent_at, o.srtt) else {
        return Verdict::Send;
    };
    // The next ACK is expected when the oldest segment out was sent, plus srtt; if that is
    // more than min(srtt / 2, 1 ms) away, waiting for it costs too much.
    let expected_ack = head_sent_at + srtt;
    let threshold = (srtt / 2).min(MAX_DEFER);
    if expected_ack.saturating_since(o.now) > threshold {
        return Verdict::Send;
    }
    if cong_win < send_win {
        if cong_win <= o.skb_segs {
            return Verdict::Defer { cwnd_limited: true };
        }
    } else if send_win <= o.skb_segs {
        return Verdict::Defer {
            cwnd_limited: false,
        };
    }
    if o.skb_is_tail && o.skb_complete {
        return Verdict::Send;
    }
    Verdict::Defer {
        cwnd_limited: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: f64) -> Time {
        Time::from_nanos((x * 1e6) as u64)
    }

    /// A bulk sender in slow start on a 100 ms path, a millisecond's skbs of 27 segments, its
    /// oldest segment sent an RTT ago (its ACK is due now): the window has room for 6.
    fn slow_start() -> Outlook {
        Outlook {
            now: ms(1000.0),
            last_xmit: Some(ms(999.5)),
            recovering: false,
            cwnd: 2200,
            in_flight: 2194,
            snd_wnd: 4000,
            snd_wnd_room: 1800,
            max_segs: 27,
            skb_segs: 45,
            skb_is_tail: false,
            skb_complete: false,
            head_sent_at: Some(ms(900.0)),
            srtt: Some(Duration::from_millis(100)),
        }
    }

    #[test]
    fn room_for_less_than_an_skb_waits_for_the_next_ack() {
        assert_eq!(
            should_defer(&slow_start()),
            Verdict::Defer { cwnd_limited: true }
        );
    }

    #[test]
    fn a_millisecond_without_transmitting_ends_the_wait() {
        let at_1ms = Outlook {
            last_xmit: Some(ms(999.0)),
            ..slow_start()
        };
        assert!(matches!(should_defer(&at_1ms), Verdict::Defer { .. }));
        let past = Outlook {
            last_xmit: Some(ms(998.9)),
            ..slow_start()
        };
        assert_eq!(should_defer(&past), Verdict::Send);
        let never = Outlook {
            last_xmit: None,
            ..slow_start()
        };
        assert_eq!(should_defer(&never), Verdict::Send);
    }

    #[test]
    fn a_full_skb_a_third_of_the_window_or_recovery_sends_at_once() {
        let full = Outlook {
            in_flight: 2200 - 27,
            ..slow_start()
        };
        assert_eq!(should_defer(&full), Verdict::Send);
        // 10 of a window of 30 free: a third.
        let third = Outlook {
            cwnd: 30,
            in_flight: 20,
            ..slow_start()
        };
        assert_eq!(should_defer(&third), Verdict::Send);
        let nine = Outlook {
            in_flight: 21,
            ..third
        };
        assert!(matches!(should_defer(&nine), Verdict::Defer { .. }));
        let recovering = Outlook {
            recovering: true,
            ..slow_start()
        };
        assert_eq!(should_defer(&recovering), Verdict::Send);
    }

    #[test]
    fn an_ack_due_later_than_half_an_rtt_or_a_millisecond_is_not_waited_for() {
        // The oldest segment out was sent 98.9 ms ago: its ACK is due in 1.1 ms, more than
        // min(50 ms, 1 ms).
        let late = Outlook {
            head_sent_at: Some(ms(901.1)),
            ..slow_start()
        };
        assert_eq!(should_defer(&late), Verdict::Send);
        let soon = Outlook {
            head_sent_at: Some(ms(900.9)),
            ..slow_start()
        };
        assert!(matches!(should_defer(&soon), Verdict::Defer { .. }));
    }

    #[test]
    fn the_last_write_goes_when_it_fits_and_a_short_receive_window_defers_it() {
        // The tail skb of 4 segments fits in the room of 6, and is the application's last.
        let tail = Outlook {
            skb_segs: 4,
            skb_is_tail: true,
            skb_complete: true,
            ..slow_start()
        };
        assert_eq!(should_defer(&tail), Verdict::Send);
        // The same tail, more to come: it waits.
        let more = Outlook {
            skb_complete: false,
            ..tail
        };
        assert_eq!(
            should_defer(&more),
            Verdict::Defer {
                cwnd_limited: false
            }
        );
        // The receive window leaves room for 3, the window for 6: rwnd-limited.
        let rwnd = Outlook {
            snd_wnd_room: 3,
            ..slow_start()
        };
        assert_eq!(
            should_defer(&rwnd),
            Verdict::Defer {
                cwnd_limited: false
            }
        );
    }

    #[test]
    fn an_skb_carries_a_millisecond_at_the_pacing_rate() {
        // 40 MB/s >> 10 = 39 062 B: 26 segments of 1448 B on a 100 ms path.
        assert_eq!(
            autosize(40_000_000, Some(Duration::from_millis(100)), 1448, 2),
            26
        );
        // A slow flow: at least two.
        assert_eq!(
            autosize(100_000, Some(Duration::from_millis(100)), 1448, 2),
            2
        );
        // A 1 ms path (r = 1000 µs >> 9 = 1) adds half the GSO size: 97 + 32607 B = 22 segments.
        assert_eq!(
            autosize(100_000, Some(Duration::from_millis(1)), 1448, 2),
            22
        );
        // Never more than the GSO size: 45 segments.
        assert_eq!(autosize(1 << 40, None, 1448, 2), 45);
    }
}
