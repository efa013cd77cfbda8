//! The Linux 6.18 stack: the sender's ACK processing and loss recovery (`recovery`: RACK-TLP,
//! PRR, `tcp_enter_loss`), its undo and F-RTO (`undo`), RACK itself (`rack`) and the
//! receiver's ACK policy ([`acks`]).

pub mod acks;
mod cwnd_use;
mod rack;
mod recovery;
mod tso;
mod undo;

#[cfg(test)]
mod tests;

use self::cwnd_use::CwndUse;
use self::rack::Rack;
use self::undo::LinuxUndo;
use super::connection::{Connection, NewData, RoundEnd, TransmitRules};
use crate::cc::CaState;
use crate::time::Time;

/// `tcp_in_cwnd_reduction`: in CWR or Recovery.
fn in_cwnd_reduction(c: &Connection) -> bool {
    matches!(c.tcb.ca_state, CaState::Cwr | CaState::Recovery)
}

/// Linux's per-connection recovery state beyond the scoreboard.
#[derive(Clone, Debug, Default)]
pub(in crate::tcp) struct LinuxRecovery {
    /// PRR (RFC 6937 §3): data delivered and sent since recovery began.
    prr_delivered: u64,
    prr_out: u64,
    rack: Rack,
    /// `tp->reordering` once measured reordering raised it above the sysctl (0 until then:
    /// see [`LinuxRecovery::reordering`]).
    reordering: u32,
    /// Which of the RTO, RACK's reordering timer and the loss probe holds the connection's one
    /// retransmission timer (`icsk_pending`): arming one replaces the others.
    slot: XmitTimer,
    /// The RACK reordering timer (`ICSK_TIME_REO_TIMEOUT`).
    reo_deadline: Option<Time>,
    /// The tail-loss probe timer (`ICSK_TIME_LOSS_PROBE`; the probe in flight is the `Tcb`'s
    /// `tlp_high_seq` and `tlp_retrans`).
    tlp_deadline: Option<Time>,
    /// Undo and F-RTO.
    undo: LinuxUndo,
    /// F-RTO step 2b: this transmission round sends new data only (`REXMIT_NEW`).
    new_data_only: bool,
    /// How much of the window is in use (`tcp_cwnd_validate`), and the restart after idle.
    cwnd_use: CwndUse,
    /// The last transmission (`tcp_wstamp_ns` of a socket that is not paced), for GSO
    /// deferral.
    last_xmit: Option<Time>,
    /// The largest receive window seen, in segments (`tp->max_window`), which bounds the skbs
    /// the application's writes make (`tcp_bound_to_half_wnd`).
    max_window: u32,
}

/// The timers that share Linux's retransmission timer (`icsk_pending`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum XmitTimer {
    /// `ICSK_TIME_RETRANS` (also when nothing is armed).
    #[default]
    Rto,
    /// `ICSK_TIME_REO_TIMEOUT`: the RTO is not running.
    Reo,
    /// `ICSK_TIME_LOSS_PROBE`: the probe comes before the RTO would.
    Tlp,
}

impl TransmitRules for LinuxRecovery {
    fn may_retransmit(&self) -> bool {
        !self.new_data_only
    }

    fn on_transmit(&mut self, c: &mut Connection, now: Time, new_data: bool, prior_packets: u32) {
        self.last_xmit = Some(now);
        if !new_data {
            Self::note_retransmission_for_undo(c, now);
        }
        // PRR's prr_out: everything sent while the window is being reduced (tcp_write_xmit,
        // tcp_xmit_retransmit_queue).
        if matches!(c.tcb.ca_state, CaState::Cwr | CaState::Recovery) {
            self.prr_out += 1;
        }
        // tcp_event_new_data_sent: new data restarts the RTO when nothing was out, or when the
        // probe held the timer.
        if new_data && (prior_packets == 0 || self.slot == XmitTimer::Tlp) {
            self.rearm_rto(c, now);
        }
    }

    fn on_head_retransmitted(&mut self, c: &mut Connection, now: Time) {
        // tcp_xmit_retransmit_queue: retransmitting the head restarts the RTO from now,
        // unless RACK's reordering timer holds the timer.
        if self.slot != XmitTimer::Reo {
            self.slot = XmitTimer::Rto;
            self.tlp_deadline = None;
            c.rto_deadline = Some(now + c.rtt.rto());
        }
    }

    fn on_new_data_sent(&mut self, c: &mut Connection, now: Time) {
        self.schedule_loss_probe(c, now, false);
    }

    fn after_round(&mut self, c: &mut Connection, now: Time, sent: u32, end: RoundEnd) {
        // tcp_write_xmit: a deferral for want of window counts as the window in use.
        let deferred_for_cwnd = end == RoundEnd::Deferred { cwnd_limited: true };
        self.cwnd_use.validate(c, now, sent, deferred_for_cwnd);
    }

    /// `tcp_write_xmit`'s GSO rules for the skb at the head of the send queue
    /// ([`tso::should_defer`]); a sender that paces is not deferred (the simulator does not
    /// model deferral against pacing's departure times).
    fn new_data(&mut self, c: &Connection, now: Time) -> NewData {
        if !c.cfg.tso_defer {
            return NewData::Send(u32::MAX);
        }
        // tp->max_window (tcp_ack_update_window), kept only where it is read.
        self.max_window = self.max_window.max(c.tcb.rwnd);
        if c.tcb.pacing_rate.is_some() {
            return NewData::Send(u32::MAX);
        }
        let mss = c.cfg.mss_bytes;
        // sk_pacing_rate, under sk_max_pacing_rate (payload bytes per second).
        let cap = c
            .tcb
            .max_pacing_rate
            .map_or(u64::MAX, |r| crate::cc::sk_pacing_rate_of(r, &c.tcb));
        let rate = crate::tcp::linux_sk_pacing_rate(&c.tcb).min(cap);
        let max_segs = tso::autosize(rate, c.tcb.min_rtt, mss, tso::MIN_TSO_SEGS);
        // tcp_xmit_size_goal: the application's writes make skbs of the GSO size, at most half
        // the largest receive window.
        let gso_segs = (tso::GSO_MAX_BYTES / u64::from(mss.max(1))) as u32;
        let half_window = if self.max_window > 1 {
            self.max_window / 2
        } else {
            self.max_window
        };
        let size_goal = gso_segs.min(half_window).max(1);
        let unsent = c.send.written().saturating_sub(c.tcb.high_tx);
        let skb_segs = size_goal.min(unsent);
        let cwnd = c.tcb.cwnd.max(0.0).floor() as u32;
        let in_flight = c.in_flight();
        let snd_wnd_room = c.tcb.rwnd.saturating_sub(c.packets_out());
        // tcp_cwnd_test's quota (at least two skbs in flight) and the split at max_segs.
        let quota = (cwnd / 2).max(1).min(cwnd.saturating_sub(in_flight));
        let skb = quota.min(max_segs).min(skb_segs).min(snd_wnd_room).max(1);
        if skb_segs <= 1 {
            // One segment: only Nagle's test, which a full segment passes.
            return NewData::Send(skb);
        }
        let outlook = tso::Outlook {
            now,
            last_xmit: self.last_xmit,
            recovering: matches!(c.tcb.ca_state, CaState::Recovery | CaState::Loss),
            cwnd,
            in_flight,
            snd_wnd: c.tcb.rwnd,
            snd_wnd_room,
            max_segs,
            skb_segs,
            skb_is_tail: unsent <= size_goal,
            skb_complete: c.send.last_write_done(),
            head_sent_at: c.board.segs.front().map(|s| s.sent_at),
            srtt: c.rtt.srtt(),
        };
        match tso::should_defer(&outlook) {
            tso::Verdict::Send => NewData::Send(skb),
            tso::Verdict::Defer { cwnd_limited } => NewData::Defer { cwnd_limited },
        }
    }
}

impl LinuxRecovery {
    /// The application writes to a connection that may have been idle
    /// (`tcp_slow_start_after_idle_check`). Returns whether the window restarted.
    pub(in crate::tcp) fn on_write(&mut self, c: &mut Connection, now: Time) -> bool {
        self.cwnd_use.restart_after_idle(c, now)
    }
}
