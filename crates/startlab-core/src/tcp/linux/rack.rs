//! RACK loss detection (RFC 8985 §6) as Linux runs it (net/ipv4/tcp_recovery.c): time, not
//! duplicate ACK counts, decides. A segment is lost once a segment sent after it has been
//! delivered and more than `RACK.rtt + reo_wnd` has passed since it was sent. The same rule
//! finds lost retransmissions, which duplicate-ACK counting cannot.

use crate::tcp::scoreboard::{Scoreboard, SegState};
use crate::time::{Duration, Time};

/// The RACK state of one connection (`tp->rack`).
#[derive(Clone, Debug, Default)]
pub(super) struct Rack {
    /// Send time and sequence number of the most recently sent segment delivered so far
    /// (RACK.xmit_ts, RACK.end_seq).
    xmit: Option<(Time, u32)>,
    /// RTT of the most recently delivered segment (RACK.rtt; `rack.rtt_us`).
    rtt: Duration,
    /// Some delivery advanced the state since the last scan (`rack.advanced`).
    advanced: bool,
    /// Reordering was observed (`tp->reord_seen`): the reordering window is then always open.
    pub reord_seen: bool,
}

/// The reordering window's inputs (`tcp_rack_reo_wnd`).
#[derive(Copy, Clone, Debug)]
pub(super) struct ReoWndInputs {
    /// In Recovery or Loss (`icsk_ca_state >= TCP_CA_Recovery`).
    pub recovering: bool,
    pub sacked_out: u32,
    /// `tp->reordering` (the duplicate-ACK threshold, 3).
    pub reordering: u32,
    pub min_rtt: Option<Duration>,
    pub srtt: Option<Duration>,
}

/// Whether a segment sent at `t1` with sequence `s1` was sent after one at `t2`, `s2`
/// (`tcp_skb_sent_after`: ties in time broken by sequence).
fn sent_after(t1: Time, s1: u32, t2: Time, s2: u32) -> bool {
    t1 > t2 || (t1 == t2 && s1 > s2)
}

impl Rack {
    /// `tcp_rack_advance` (RFC 8985 §6.2 step 2): segment `seq`, sent at `s.sent_at`, was
    /// delivered (cumulatively or by SACK) at `now`.
    pub fn advance(&mut self, now: Time, seq: u32, s: &SegState, min_rtt: Option<Duration>) {
        let rtt = now.saturating_since(s.sent_at);
        // A retransmitted segment acknowledged sooner than the minimum RTT was probably
        // delivered by its original transmission: no sample (Linux: "rtt_us < tcp_min_rtt",
        // where the minimum is ~0U until the first sample).
        if s.retransmitted && min_rtt.is_none_or(|m| rtt < m) {
            return;
        }
        self.advanced = true;
        self.rtt = rtt;
        if self
            .xmit
            .is_none_or(|(t, e)| sent_after(s.sent_at, seq, t, e))
        {
            self.xmit = Some((s.sent_at, seq));
        }
    }

    /// `tcp_rack_reo_wnd`: no window once in recovery or with DupThresh segments SACKed,
    /// unless reordering was seen; else min(min_rtt / 4, srtt).
    pub fn reo_wnd(&self, i: ReoWndInputs) -> Duration {
        if !self.reord_seen && (i.recovering || i.sacked_out >= i.reordering) {
            return Duration::ZERO;
        }
        let Some(min_rtt) = i.min_rtt else {
            return Duration::ZERO;
        };
        let w = min_rtt / 4;
        match i.srtt {
            Some(s) if s < w => s,
            _ => w,
        }
    }

    /// `tcp_rack_mark_lost` / `tcp_rack_detect_loss` (RFC 8985 §6.2 step 5): marks lost every
    /// unSACKed segment sent before RACK.xmit_ts whose time is up. Returns the segments newly
    /// deemed lost, whether one of them was a retransmission, and when the next one's time is
    /// up (the reordering timer), if any is still waiting.
    pub fn detect_loss(
        &mut self,
        now: Time,
        board: &mut Scoreboard,
        una: u32,
        reo_wnd: Duration,
    ) -> Detection {
        let mut d = Detection::default();
        if !self.advanced {
            return d;
        }
        self.advanced = false;
        let Some((xmit_ts, xmit_seq)) = self.xmit else {
            return d;
        };
        let limit = self.rtt + reo_wnd;
        for i in 0..board.segs.len() {
            let s = board.segs[i];
            let seq = una + i as u32;
            // Marked lost and not yet retransmitted: nothing more to learn.
            if s.sacked || (s.lost && !s.retx_in_flight) {
                continue;
            }
            if !sent_after(xmit_ts, xmit_seq, s.sent_at, seq) {
                continue;
            }
            let elapsed = now.saturating_since(s.sent_at);
            if elapsed >= limit {
                d.lost_retransmission |= s.retx_in_flight;
                if board.mark_lost_again(una, seq) {
                    d.newly_lost += 1;
                }
            } else {
                let at = s.sent_at + limit;
                d.timer = Some(d.timer.map_or(at, |t: Time| t.min(at)));
            }
        }
        d
    }

    /// The reordering timer fired: the next scan runs although nothing was delivered.
    pub fn rescan(&mut self) {
        self.advanced = true;
    }

    /// `tcp_rack_skb_timeout(tp, skb, 0) > 0`: a segment sent at `sent_at` is too recent to be
    /// deemed lost by a timeout (`tcp_timeout_mark_lost`).
    pub fn too_recent(&self, now: Time, sent_at: Time) -> bool {
        self.xmit.is_some() && now.saturating_since(sent_at) < self.rtt
    }
}

/// What one RACK scan found.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Detection {
    pub newly_lost: u32,
    pub lost_retransmission: bool,
    pub timer: Option<Time>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::ZERO + Duration::from_millis(x)
    }

    fn seg(sent: u64) -> SegState {
        SegState {
            sent_at: ms(sent),
            tx: Default::default(),
            sacked: false,
            lost: false,
            retx_in_flight: false,
            retransmitted: false,
        }
    }

    fn inputs(recovering: bool, sacked_out: u32) -> ReoWndInputs {
        ReoWndInputs {
            recovering,
            sacked_out,
            reordering: 3,
            min_rtt: Some(Duration::from_millis(100)),
            srtt: Some(Duration::from_millis(120)),
        }
    }

    #[test]
    fn the_reordering_window_is_a_quarter_of_min_rtt_until_three_sacks() {
        let mut r = Rack::default();
        assert_eq!(r.reo_wnd(inputs(false, 1)), Duration::from_millis(25));
        assert_eq!(r.reo_wnd(inputs(false, 3)), Duration::ZERO);
        assert_eq!(r.reo_wnd(inputs(true, 0)), Duration::ZERO);
        r.reord_seen = true;
        assert_eq!(r.reo_wnd(inputs(true, 5)), Duration::from_millis(25));
        // Never more than srtt.
        let tiny = ReoWndInputs {
            srtt: Some(Duration::from_millis(10)),
            ..inputs(false, 0)
        };
        assert_eq!(r.reo_wnd(tiny), Duration::from_millis(10));
    }

    /// Segments 0..5 sent 1 ms apart from t = 0; segment 0 is lost, 1 and 2 are SACKed at
    /// 101 and 102 ms (RTT 100 ms).
    fn board_with_a_hole() -> (Rack, Scoreboard) {
        let mut b = Scoreboard::default();
        for k in 0..5 {
            b.segs.push_back(seg(k));
        }
        let mut r = Rack::default();
        for (seq, at) in [(1u32, 101u64), (2, 102)] {
            b.segs[seq as usize].sacked = true;
            b.sacked_out += 1;
            let s = b.segs[seq as usize];
            r.advance(ms(at), seq, &s, None);
        }
        (r, b)
    }

    #[test]
    fn a_segment_is_lost_once_rtt_plus_the_window_has_passed_since_it_was_sent() {
        // RACK.xmit_ts = 2 ms (segment 2), RACK.rtt = 100 ms. With a 25 ms window segment 0
        // (sent at 0) is lost from 125 ms; at 102 ms the timer is set for 125 ms. Segments 3
        // and 4 were sent after segment 2: not candidates.
        let (mut r, mut b) = board_with_a_hole();
        let d = r.detect_loss(ms(102), &mut b, 0, Duration::from_millis(25));
        assert_eq!(
            d,
            Detection {
                newly_lost: 0,
                lost_retransmission: false,
                timer: Some(ms(125))
            }
        );
        // Nothing advanced since: no scan.
        assert_eq!(
            r.detect_loss(ms(130), &mut b, 0, Duration::from_millis(25)),
            Detection::default()
        );
        // With no window (three SACKs, or in recovery) it is lost at once: 102 - 0 >= 100.
        let (mut r, mut b) = board_with_a_hole();
        let d = r.detect_loss(ms(102), &mut b, 0, Duration::ZERO);
        assert_eq!((d.newly_lost, d.timer), (1, None));
        assert!(b.segs[0].lost);
        assert_eq!(b.lost_out, 1);
    }

    #[test]
    fn a_lost_retransmission_is_found_when_later_data_is_delivered() {
        let (mut r, mut b) = board_with_a_hole();
        r.detect_loss(ms(102), &mut b, 0, Duration::ZERO);
        // Segment 0 is retransmitted at 110 ms, then new segment 5 at 111 ms.
        b.segs[0].retx_in_flight = true;
        b.segs[0].retransmitted = true;
        b.segs[0].sent_at = ms(110);
        b.retrans_out += 1;
        b.segs.push_back(seg(111));
        // Segment 5 is SACKed at 211 ms: the retransmission (sent at 110, before 111) has had
        // 101 ms >= RACK.rtt 100 ms: lost again, and the retransmission counter drops.
        b.segs[5].sacked = true;
        b.sacked_out += 1;
        let s = b.segs[5];
        r.advance(ms(211), 5, &s, None);
        let d = r.detect_loss(ms(211), &mut b, 0, Duration::ZERO);
        // Segments 3 and 4 (sent at 3 and 4 ms, never SACKed) are lost too by now: three
        // losses (tcp_mark_skb_lost counts a lost retransmission as a loss event), two new in
        // lost_out.
        assert_eq!((d.newly_lost, d.lost_retransmission), (3, true));
        assert_eq!((b.retrans_out, b.lost_out), (0, 3));
        assert!(!b.segs[0].retx_in_flight);
        assert!(b.segs[3].lost && b.segs[4].lost);
    }

    #[test]
    fn an_ack_of_a_retransmission_faster_than_min_rtt_is_ignored() {
        let mut r = Rack::default();
        let mut s = seg(100);
        s.retransmitted = true;
        r.advance(ms(150), 0, &s, Some(Duration::from_millis(100)));
        assert!(r.xmit.is_none());
    }
}
