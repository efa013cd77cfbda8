//! RACK loss detection (RFC 8985 §6) as Linux runs it (net/ipv4/tcp_recovery.c): time, not
//! duplicate ACK counts, decides. A segment is lost once a segment sent after it has been
//! delivered and more than `RACK.rtt + reo_wnd` has passed since it was sent. The same rule
//! finds lost retransmissions, which duplicate-ACK counting cannot.
//!
//! The window adapts to reordering as `tcp_rack_update_reo_wnd` has it (RFC 8985 §6.2 step 4,
//! with Linux's rounds and resets): a D-SACK after reordering was seen suggests a retransmission
//! RACK made too early, and widens the window by min_rtt / 4, at most once a round trip; 16
//! recoveries without one take it back to min_rtt / 4. (Linux's default: `net.ipv4.tcp_recovery`
//! without `TCP_RACK_STATIC_REO_WND`.)

use crate::tcp::scoreboard::{Scoreboard, SegState};
use crate::time::{Duration, Time};

/// Recoveries a widened window outlives without a new D-SACK (`TCP_RACK_RECOVERY_THRESH`).
const RECOVERY_THRESH: u8 = 16;

/// The RACK state of one connection (`tp->rack`).
#[derive(Clone, Debug)]
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
    /// The window in multiples of min_rtt / 4, 1 to 255 (`rack.reo_wnd_steps`;
    /// RACK.reo_wnd_mult).
    reo_wnd_steps: u8,
    /// Recoveries left before the window goes back to one step (`rack.reo_wnd_persist`).
    reo_wnd_persist: u8,
    /// A D-SACK arrived that may widen the window (`rack.dsack_seen`).
    dsack_seen: bool,
    /// `tp->delivered` when the window last widened (`rack.last_delivered`): a D-SACK counts
    /// only from an ACK of data sent after that, a round trip later.
    last_delivered: u64,
}

impl Default for Rack {
    /// `tcp_init_sock`: one step, nothing pending.
    fn default() -> Self {
        Rack {
            xmit: None,
            rtt: Duration::ZERO,
            advanced: false,
            reord_seen: false,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
            dsack_seen: false,
            last_delivered: 0,
        }
    }
}

/// The reordering window's inputs (`tcp_rack_reo_wnd`).
#[derive(Copy, Clone, Debug)]
pub(super) struct ReoWndInputs {
    /// In Recovery or Loss (`icsk_ca_state >= TCP_CA_Recovery`).
    pub recovering: bool,
    pub sacked_out: u32,
    /// `tp->reordering`: `tcp.dupack_threshold` (3) until reordering beyond it is measured.
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

    /// `tcp_rack_reo_wnd`: no window once in recovery or with `reordering` segments SACKed,
    /// unless reordering was seen; else min(steps × min_rtt / 4, srtt).
    pub fn reo_wnd(&self, i: ReoWndInputs) -> Duration {
        if !self.reord_seen && (i.recovering || i.sacked_out >= i.reordering) {
            return Duration::ZERO;
        }
        let Some(min_rtt) = i.min_rtt else {
            return Duration::ZERO;
        };
        let w = min_rtt / 4 * self.reo_wnd_steps as u64;
        match i.srtt {
            Some(s) if s < w => s,
            _ => w,
        }
    }

    /// `tcp_dsack_seen`: a credible D-SACK arrived. It may widen the window only if reordering
    /// was seen before this ACK, and not if it reports the tail-loss probe (`FLAG_DSACK_TLP`:
    /// the probe is sent on a timer, not by RACK).
    pub fn on_dsack(&mut self, reports_probe: bool) {
        if self.reord_seen && !reports_probe {
            self.dsack_seen = true;
        }
    }

    /// `tcp_rack_update_reo_wnd`, on every ACK after the delivered segments are counted
    /// (`tcp_ack`, after `tcp_clean_rtx_queue`). `prior_delivered` is `tp->delivered` when the
    /// most recently sent segment this ACK delivered was sent (`rs->prior_delivered`; `None`:
    /// the ACK delivered nothing new, and nothing changes); `delivered` is `tp->delivered` now.
    /// A pending D-SACK widens the window by a step, unless that segment was sent before the
    /// last widening (the same round trip); otherwise, with no recoveries left to persist, the
    /// window is back to one step.
    pub fn update_reo_wnd(&mut self, prior_delivered: Option<u64>, delivered: u64) {
        let Some(prior_delivered) = prior_delivered else {
            return;
        };
        if prior_delivered < self.last_delivered {
            self.dsack_seen = false;
        }
        if self.dsack_seen {
            self.reo_wnd_steps = self.reo_wnd_steps.saturating_add(1);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.reo_wnd_persist = RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }

    /// `tcp_try_undo_recovery` without an undo: one recovery fewer for the window to persist.
    pub fn recovery_ended_without_undo(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
    }

    /// `tcp_try_undo_dsack`: D-SACKs showed every retransmission of the episode spurious; the
    /// window persists one recovery more (at most 16).
    pub fn undone_by_dsacks(&mut self) {
        self.reo_wnd_persist = (self.reo_wnd_persist + 1).min(RECOVERY_THRESH);
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

    /// Reordering seen, min_rtt 100 ms, srtt 120 ms: one step is 25 ms.
    fn reordering_seen() -> (Rack, ReoWndInputs) {
        let r = Rack {
            reord_seen: true,
            ..Rack::default()
        };
        (r, inputs(true, 5))
    }

    /// A D-SACK, then an ACK that delivers a segment sent when `prior_delivered` segments were
    /// delivered, bringing the total to `delivered`.
    fn dsack_then_ack(r: &mut Rack, prior_delivered: u64, delivered: u64) {
        r.on_dsack(false);
        r.update_reo_wnd(Some(prior_delivered), delivered);
    }

    #[test]
    fn dsacks_widen_the_window_a_step_per_round_trip_up_to_srtt() {
        let (mut r, i) = reordering_seen();
        let ms = Duration::from_millis;
        assert_eq!(r.reo_wnd(i), ms(25));
        // A D-SACK on an ACK that delivers nothing new waits for one that does.
        r.on_dsack(false);
        r.update_reo_wnd(None, 10);
        assert_eq!(r.reo_wnd(i), ms(25));
        // That ACK delivers a segment sent when 10 were delivered; 20 are now: 2 steps.
        r.update_reo_wnd(Some(10), 20);
        assert_eq!((r.reo_wnd(i), r.reo_wnd_persist), (ms(50), 16));
        // A D-SACK of the same round trip (its ACK's segment was sent at 15 < 20) is
        // forgotten, and does not count later either.
        dsack_then_ack(&mut r, 15, 25);
        assert!(!r.dsack_seen);
        r.update_reo_wnd(Some(30), 35);
        assert_eq!(r.reo_wnd(i), ms(50));
        // The next round trip's (sent at 20, when the window last grew): 3 steps, 75 ms.
        dsack_then_ack(&mut r, 20, 40);
        assert_eq!(r.reo_wnd(i), ms(75));
        dsack_then_ack(&mut r, 40, 60);
        assert_eq!(r.reo_wnd(i), ms(100));
        // 5 steps would be 125 ms: srtt, 120 ms, is the most.
        dsack_then_ack(&mut r, 60, 80);
        assert_eq!((r.reo_wnd_steps, r.reo_wnd(i)), (5, ms(120)));
    }

    #[test]
    fn a_dsack_widens_nothing_without_reordering_or_when_it_reports_the_probe() {
        let (_, i) = reordering_seen();
        let mut r = Rack::default();
        dsack_then_ack(&mut r, 10, 20);
        assert_eq!(r.reo_wnd_steps, 1);
        r.reord_seen = true;
        r.on_dsack(true);
        r.update_reo_wnd(Some(10), 20);
        assert_eq!(r.reo_wnd(i), Duration::from_millis(25));
    }

    #[test]
    fn sixteen_recoveries_without_a_dsack_take_the_window_back_to_one_step() {
        let ms = Duration::from_millis;
        for undone in [false, true] {
            let (mut r, i) = reordering_seen();
            dsack_then_ack(&mut r, 0, 10);
            assert_eq!((r.reo_wnd(i), r.reo_wnd_persist), (ms(50), 16));
            // An undo by D-SACKs is one recovery more to persist, never more than 16.
            r.undone_by_dsacks();
            assert_eq!(r.reo_wnd_persist, 16);
            // Recoveries k = 1, 2, ... each followed by an ACK delivering data. The window
            // persists through 15 (with an undo after the 8th, through 16), and is one step
            // again from the first ACK after the 16th (17th).
            let last = if undone { 17 } else { 16 };
            for k in 1..=last {
                r.recovery_ended_without_undo();
                if undone && k == 8 {
                    r.undone_by_dsacks();
                }
                assert_eq!(r.reo_wnd(i), ms(50));
                r.update_reo_wnd(Some(10 * k), 10 * k + 10);
                let steps = if k < last { 2 } else { 1 };
                assert_eq!(r.reo_wnd_steps, steps, "after recovery {k}");
            }
            assert_eq!(r.reo_wnd(i), ms(25));
            // No count below zero.
            r.recovery_ended_without_undo();
            assert_eq!(r.reo_wnd_persist, 0);
        }
    }

    #[test]
    fn the_window_grows_to_255_steps_at_most() {
        let (mut r, _) = reordering_seen();
        for k in 0..300u64 {
            dsack_then_ack(&mut r, 10 * k, 10 * k + 10);
        }
        // 255 × 25 ms with an srtt of 10 s.
        let i = ReoWndInputs {
            srtt: Some(Duration::from_secs(10)),
            ..inputs(true, 5)
        };
        assert_eq!(r.reo_wnd_steps, 255);
        assert_eq!(r.reo_wnd(i), Duration::from_millis(6375));
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
