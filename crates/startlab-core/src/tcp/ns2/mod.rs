//! The ns-2-era sender of the papers: loss recovery on duplicate ACKs (RFC 5681 §3.2 Reno,
//! RFC 6582 NewReno) or on a SACK scoreboard (RFC 6675), the RFC 6298 retransmission timer,
//! and Eifel undo of a spurious retransmission (RFC 3522).

use super::connection::{Connection, RoundEnd, TransmitRules};
use super::scoreboard::SegState;
use super::{Outbox, Pacing, Recovery};
use crate::cc::{AckEvent, AckSample, CaState, CwndEvent, ExitReason};
use crate::net::Packet;
use crate::tcp::rate::Sampling;
use crate::time::Time;

/// What a spurious retransmission would undo (Eifel, RFC 3522).
#[derive(Copy, Clone, Debug)]
struct UndoPoint {
    /// When the first retransmission of `seq` left.
    retransmitted_at: Time,
    seq: u32,
}

/// The ns-2 stack's recovery state.
#[derive(Clone, Debug)]
pub(in crate::tcp) struct Ns2Recovery {
    recovery: Recovery,
    dupacks: u32,
    /// The last reduction was for an ECN echo (ns-2 `last_cwnd_action_ == CWND_ACTION_ECN`):
    /// a loss in its window is retransmitted without a second reduction.
    ecn_reduced_last: bool,
    /// RFC 6582 §3.2 step 5 ("Impatient"): the timer is reset on the first partial ACK only.
    partial_ack_seen: bool,
    undo: Option<UndoPoint>,
}

impl TransmitRules for Ns2Recovery {
    fn may_retransmit(&self) -> bool {
        true
    }

    fn on_transmit(&mut self, c: &mut Connection, now: Time, _new_data: bool, _prior: u32) {
        // RFC 6298 §5.1: start the timer if it is not running.
        if c.rto_deadline.is_none() {
            c.rto_deadline = Some(now + c.rtt.rto());
        }
    }

    fn on_head_retransmitted(&mut self, _c: &mut Connection, _now: Time) {}

    fn on_new_data_sent(&mut self, _c: &mut Connection, _now: Time) {}

    fn after_round(&mut self, c: &mut Connection, _now: Time, _sent: u32, end: RoundEnd) {
        // The window may grow while the sender fills it; a paced round keeps the last verdict.
        let limited = match end {
            RoundEnd::WindowFull => true,
            RoundEnd::NothingToSend => false,
            RoundEnd::Paced | RoundEnd::Deferred { .. } => return,
        };
        c.tcb.cwnd_limited = limited;
        c.tcb.is_cwnd_limited = limited;
        c.tcb.max_packets_out = if limited { c.packets_out() } else { 0 };
    }
}

/// RFC 5681 §4.1 "Restarting Idle Connections": a sender that has sent nothing for longer than
/// the RTO starts again from RW = min(IW, cwnd); ssthresh is kept. Returns whether it did.
pub(in crate::tcp) fn restart_after_idle(c: &mut Connection, now: Time) -> bool {
    if !c.cfg.restart_after_idle || c.packets_out() > 0 {
        return false;
    }
    if now.saturating_since(c.tcb.lsndtime) <= c.rtt.rto() {
        return false;
    }
    let restart = (c.cfg.initial_window as f64).min(c.tcb.cwnd);
    c.tcb.cwnd = restart;
    true
}

impl Ns2Recovery {
    pub fn new(recovery: Recovery) -> Self {
        Ns2Recovery {
            recovery,
            dupacks: 0,
            ecn_reduced_last: false,
            partial_ack_seen: false,
            undo: None,
        }
    }

    /// Uses a SACK scoreboard (RFC 6675).
    fn uses_sack(&self) -> bool {
        self.recovery == Recovery::Sack
    }

    /// An ACK of the established connection: SACK and cumulative ACK on the scoreboard, the
    /// RTT sample (Karn's rule, RFC 6298 §3), the controller, Eifel detection, then fast
    /// retransmit and recovery (RFC 5681 §3.2, RFC 6582 §3.2, RFC 6675 §5).
    pub fn on_ack(&mut self, c: &mut Connection, now: Time, pkt: &Packet, out: &mut Outbox) {
        let ack = pkt.seq;
        c.tcb.rwnd = pkt.rwnd_segments;
        if ack < c.tcb.snd_una || ack > c.tcb.high_tx {
            return; // old or invalid
        }
        let una_before = c.tcb.snd_una;
        let prior_in_flight = c.in_flight();
        let mut delivered: u32 = 0;
        let lost_before = c.board.marked_lost;
        // The most recently sent segment this ACK delivers: RTT and rate samples come from it.
        let mut newest: Option<SegState> = None;
        let mut sampling = Sampling::default();
        let rate = &mut c.rate;
        let mut note = |seq: u32, s: &SegState| {
            if newest.is_none_or(|n| s.sent_at >= n.sent_at) {
                newest = Some(*s);
            }
            rate.on_delivered(&mut sampling, seq, s.sent_at, &s.tx, s.retransmitted);
        };

        if self.uses_sack() && !pkt.sack.is_empty() {
            delivered +=
                c.board
                    .apply_sack((c.tcb.snd_una, c.tcb.high_tx), ack, &pkt.sack, &mut note);
        }
        if ack > una_before {
            delivered += c.board.advance(una_before, ack, &mut note);
            c.tcb.snd_una = ack;
        }

        c.last_rtt_sample = None;
        c.tcb.delivered += delivered as u64;
        let ece = c.cfg.ecn && pkt.ece;
        if ece {
            c.tcb.delivered_ce += delivered as u64;
        }
        let newest = newest.filter(|_| delivered > 0);
        // Karn's rule (RFC 6298 §3): never sample a retransmitted segment.
        let rtt = newest.filter(|s| !s.retransmitted).map(|s| now - s.sent_at);
        if let Some(r) = rtt {
            c.take_rtt_sample(r);
        }
        c.sync_pipe();

        if newest.is_some() {
            let sample = AckSample {
                acked: delivered,
                rtt,
                prior_in_flight,
            };
            c.cc.pkts_acked(&mut c.tcb, &sample, now);
        }
        // As the Linux stack flags it (tcp_in_ack_event).
        let event = AckEvent {
            ece,
            win_update: c.tcb.snd_una > una_before && pkt.sack.is_empty() && !ece,
        };
        c.cc.in_ack_event(&mut c.tcb, event, now);
        // The rate sample (tcp_rate_gen) and the controller's cong_control, on every ACK.
        let cong_controlled =
            c.cong_control(&sampling, delivered, lost_before, prior_in_flight, rtt, now);

        if let Some(u) = self.undo {
            if ack > u.seq {
                self.undo = None;
                // Eifel detection (RFC 3522 §3.2): the ACK for the retransmitted segment echoes
                // a timestamp older than the retransmission, so the original arrived.
                if pkt.ts < u.retransmitted_at {
                    self.undo_reduction(c, now);
                }
            }
        }
        // ECN (ns-2 `TcpAgent::ecn`, RFC 3168 §6.1.2): an echo for data sent after the last
        // reduction halves the window once per window, and this ACK does not grow it.
        let ecn_reduced = ece && ack > c.tcb.high_seq && self.ecn_reduce(c, now);
        let acked = ack - una_before;
        if acked > 0 {
            let hold = cong_controlled || ecn_reduced;
            self.on_new_data_acked(c, now, acked, delivered, hold, out);
        } else if c.packets_out() > 0 {
            if delivered == 0 {
                c.cc.cwnd_event(&mut c.tcb, CwndEvent::DupAck, now);
            }
            self.on_dupack(c, now, out);
        }
        if self.uses_sack() {
            if c.tcb.ca_state == CaState::Recovery {
                c.board
                    .mark_sack_losses(c.dupthresh(), c.tcb.snd_una, c.tcb.high_tx);
            } else if matches!(c.tcb.ca_state, CaState::Open | CaState::Disorder)
                && c.board
                    .is_lost_by_sack(c.dupthresh(), c.tcb.snd_una, c.tcb.snd_una)
                && (ack >= c.tcb.high_seq || self.ecn_reduced_last)
            {
                // RFC 6675 §5 step (2): IsLost(HighACK + 1) starts recovery too.
                self.enter_recovery(c, now, out);
            }
        }

        if c.send.all_acked(c.tcb.snd_una) {
            c.finish(now);
            return;
        }
        // A controller with cong_control ends its start-up itself, in any state.
        let may_exit = c.tcb.ca_state == CaState::Open || c.owns_cwnd;
        if c.ss_exit.is_none() && may_exit && !c.cc.in_startup(&c.tcb) {
            c.note_slow_start_exit(now, ExitReason::Threshold);
        }
        if c.cfg.pacing == Pacing::InitialSpreading && delivered > 0 {
            // The spread initial window is over: ordinary ACK clocking from now on.
            c.tcb.pacing_rate = None;
        }
        c.update_pacing();
        c.try_send(self, now, out);
    }

    /// The cumulative ACK advanced: leave recovery on a full ACK, retransmit on a partial one
    /// (NewReno), otherwise grow the window; restart the timer.
    fn on_new_data_acked(
        &mut self,
        c: &mut Connection,
        now: Time,
        acked: u32,
        delivered: u32,
        cong_controlled: bool,
        out: &mut Outbox,
    ) {
        // The cumulative ACK.
        let ack = c.tcb.snd_una;
        let mut restart_timer = true;
        match c.tcb.ca_state {
            CaState::Recovery => {
                if ack >= c.tcb.high_seq || self.recovery == Recovery::Reno {
                    // Full ACK (RFC 6582 §3.2 step 6) or, for Reno, any new ACK (RFC 5681 §3.2
                    // step 6): deflate the window to ssthresh.
                    if !cong_controlled {
                        c.tcb.cwnd = c.tcb.ssthresh.max(1.0);
                    }
                    self.dupacks = 0;
                    c.set_ca_state(CaState::Open, now);
                } else if self.recovery == Recovery::NewReno {
                    // Partial ACK (RFC 6582 §3.2 step 5): retransmit the first unacknowledged
                    // segment, deflate by the amount acknowledged, add back one segment.
                    c.board.mark_lost(c.tcb.snd_una, c.tcb.snd_una);
                    c.retransmit_now(self, c.tcb.snd_una, now, out);
                    if !cong_controlled {
                        c.tcb.cwnd = (c.tcb.cwnd - acked as f64 + 1.0).max(1.0);
                    }
                    restart_timer = !self.partial_ack_seen;
                    self.partial_ack_seen = true;
                }
            }
            CaState::Loss => {
                if ack >= c.tcb.high_seq {
                    c.set_ca_state(CaState::Open, now);
                }
                if !cong_controlled {
                    c.cong_avoid(delivered, ack, now);
                }
            }
            CaState::Open | CaState::Disorder | CaState::Cwr => {
                self.dupacks = 0;
                if c.tcb.ca_state == CaState::Disorder {
                    c.set_ca_state(CaState::Open, now);
                }
                if !cong_controlled {
                    c.cong_avoid(delivered, ack, now);
                }
            }
        }
        // RFC 6298 §5.2 / §5.3
        if c.packets_out() == 0 {
            c.rto_deadline = None;
        } else if restart_timer {
            c.rto_deadline = Some(now + c.rtt.rto());
        }
    }

    /// A duplicate ACK: inflate the window in recovery, enter it at DupThresh.
    fn on_dupack(&mut self, c: &mut Connection, now: Time, out: &mut Outbox) {
        self.dupacks += 1;
        match c.tcb.ca_state {
            CaState::Recovery => {
                if !self.uses_sack() && !c.owns_cwnd {
                    // RFC 5681 §3.2 step 4: inflate by one segment per further duplicate ACK.
                    c.tcb.cwnd += 1.0;
                }
            }
            CaState::Loss => {}
            CaState::Open | CaState::Disorder | CaState::Cwr => {
                if self.dupacks >= c.cfg.dupack_threshold {
                    // RFC 6582 §3.2 step 1 (also used for SACK): no new recovery for losses of
                    // data sent before the last recovery or timeout. After a reduction for an
                    // ECN echo the loss is recovered, without a second reduction (ns-2
                    // `dupack_action`'s CWND_ACTION_ECN branch; RFC 3168 §6.1.2).
                    if self.recovery == Recovery::Reno
                        || c.tcb.snd_una >= c.tcb.high_seq
                        || self.ecn_reduced_last
                    {
                        self.enter_recovery(c, now, out);
                        return;
                    }
                }
                c.set_ca_state(CaState::Disorder, now);
            }
        }
    }

    /// The window before a reduction, and what Eifel would restore (with `undo`).
    fn set_undo_point(&mut self, c: &mut Connection, now: Time) {
        c.tcb.prior_cwnd = c.tcb.cwnd;
        c.tcb.prior_ssthresh = c.tcb.ssthresh;
        c.tcb.undo_marker = Some(c.tcb.snd_una);
        if c.cfg.undo {
            self.undo = Some(UndoPoint {
                retransmitted_at: now,
                seq: c.tcb.snd_una,
            });
        }
    }

    /// Restores the window after a spurious retransmission (Linux `tcp_undo_cwnd_reduction`).
    fn undo_reduction(&mut self, c: &mut Connection, now: Time) {
        c.stats.undos += 1;
        c.tcb.undo_marker = None;
        c.tcb.cwnd = c.cc.undo_cwnd(&mut c.tcb);
        c.tcb.ssthresh = c.tcb.ssthresh.max(c.tcb.prior_ssthresh);
        // Segments deemed lost but never retransmitted were not lost after all.
        for s in c.board.segs.iter_mut() {
            if s.lost && !s.retx_in_flight {
                s.lost = false;
                c.board.lost_out -= 1;
            }
        }
        self.dupacks = 0;
        c.set_ca_state(CaState::Open, now);
    }

    /// The reduction for an ECN echo outside recovery: ssthresh from the controller, cwnd down
    /// to it, CWR on the next new segment (ns-2 `slowdown(CLOSE_CWND_HALF |
    /// CLOSE_SSTHRESH_HALF)` with the controller's ssthresh). Returns whether it reduced.
    fn ecn_reduce(&mut self, c: &mut Connection, now: Time) -> bool {
        if !matches!(c.tcb.ca_state, CaState::Open | CaState::Disorder) {
            return false;
        }
        c.note_slow_start_exit(now, ExitReason::Ecn);
        c.stats.ecn_reductions += 1;
        c.tcb.high_seq = c.tcb.high_tx;
        self.ecn_reduced_last = true;
        c.tcb.ssthresh = c.cc.ssthresh(&mut c.tcb, now);
        if !c.owns_cwnd {
            c.tcb.cwnd = c.tcb.ssthresh.max(1.0);
        }
        c.ecn_queue_cwr = true;
        true
    }

    /// Whether the sender is still in the window of a reduction for an ECN echo, which a loss
    /// or timeout now ends (it is the last reduction no more).
    fn take_ecn_window(&mut self, c: &Connection) -> bool {
        std::mem::take(&mut self.ecn_reduced_last) && c.tcb.snd_una < c.tcb.high_seq
    }

    /// Fast retransmit and the start of fast recovery (RFC 5681 §3.2 steps 2-3, RFC 6675 §5
    /// step 4).
    fn enter_recovery(&mut self, c: &mut Connection, now: Time, out: &mut Outbox) {
        c.note_slow_start_exit(now, ExitReason::Loss);
        c.stats.fast_recoveries += 1;
        // A loss in the window of a reduction for an ECN echo: the window was reduced once
        // already (RFC 3168 §6.1.2), so ssthresh stays.
        if !self.take_ecn_window(c) {
            self.set_undo_point(c, now);
            c.tcb.ssthresh = c.cc.ssthresh(&mut c.tcb, now);
        }
        c.tcb.high_seq = c.tcb.high_tx;
        self.partial_ack_seen = false;
        // ns-2 sets cong_action on every reduction: the next segment carries CWR.
        c.ecn_queue_cwr = true;
        c.set_ca_state(CaState::Recovery, now);
        c.board.mark_lost(c.tcb.snd_una, c.tcb.snd_una);
        // A controller with cong_control keeps cwnd its own business in recovery.
        let owns_cwnd = c.owns_cwnd;
        match self.recovery {
            // RFC 6675 §5 step (4.2): cwnd = ssthresh, no inflation.
            Recovery::Sack => {
                if !owns_cwnd {
                    c.tcb.cwnd = c.tcb.ssthresh;
                }
                c.board
                    .mark_sack_losses(c.dupthresh(), c.tcb.snd_una, c.tcb.high_tx);
            }
            // RFC 5681 §3.2 step 2 / RFC 6582: cwnd = ssthresh + 3 segments.
            Recovery::Reno | Recovery::NewReno if !owns_cwnd => {
                c.tcb.cwnd = c.tcb.ssthresh + c.cfg.dupack_threshold as f64;
            }
            Recovery::Reno | Recovery::NewReno => {}
        }
        // Fast retransmit: the first missing segment goes at once, whatever the window.
        c.retransmit_now(self, c.tcb.snd_una, now, out);
        c.rto_deadline = Some(now + c.rtt.rto());
    }

    /// The retransmission timer expired with data out (RFC 6298 §5.4-5.7, RFC 5681 §3.1).
    pub fn on_rto(&mut self, c: &mut Connection, now: Time, out: &mut Outbox) {
        c.stats.timeouts += 1;
        c.count_rto();
        c.note_slow_start_exit(now, ExitReason::Timeout);
        // RFC 5681 §3.1: ssthresh is reduced once, not again when the same data times out again.
        // A timeout during fast recovery keeps the ssthresh the recovery chose (as Linux
        // `tcp_enter_loss`): FlightSize then counts SACKed data and the inflated window.
        // A timeout in the window of a reduction for an ECN echo keeps its ssthresh too (Linux
        // `tcp_enter_loss` in CWR).
        let ecn_window = self.take_ecn_window(c);
        if c.rtt.backoff() == 0
            && matches!(c.tcb.ca_state, CaState::Open | CaState::Disorder)
            && !ecn_window
        {
            self.set_undo_point(c, now);
            c.tcb.ssthresh = c.cc.ssthresh(&mut c.tcb, now);
        }
        // Linux `tcp_enter_loss` order: ssthresh, CA_EVENT_LOSS, then the state change.
        c.cc.cwnd_event(&mut c.tcb, CwndEvent::Loss, now);
        c.enter_loss_state(now);
        // RFC 5681 §3.1: loss window of one segment.
        c.tcb.cwnd = 1.0;
        c.tcb.high_seq = c.tcb.high_tx;
        self.dupacks = 0;
        // Everything outstanding and not SACKed is deemed lost; it is sent again from snd_una.
        c.board.mark_all_lost(c.tcb.snd_una, c.tcb.high_tx);
        c.report_lost_segments(now);
        // RFC 6298 §5.4-5.6: retransmit the earliest segment, back off, restart the timer.
        c.rtt.back_off();
        c.sync_rtt();
        c.retransmit_now(self, c.tcb.snd_una, now, out);
        c.rto_deadline = Some(now + c.rtt.rto());
        c.try_send(self, now, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::{Reno, RenoConfig};
    use crate::cc::{ExitReason, Phase};
    use crate::tcp::sender::tests::{ack, ack_echo, ms, reno_sender};
    use crate::tcp::sender::TcpSender;
    use crate::tcp::{FlowSize, TcpConfig};

    #[test]
    fn three_duplicate_acks_trigger_a_fast_retransmit_and_newreno_inflation() {
        let cfg = TcpConfig {
            initial_window: 10,
            ..TcpConfig::default()
        };
        let reno = Box::new(Reno::new(RenoConfig::default()));
        let mut s = TcpSender::new(0, 0, 1, cfg, FlowSize::UNLIMITED, reno, Time::ZERO);
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        assert_eq!(out.packets.len(), 10);
        out.packets.clear();
        // Segment 0 is lost; 1..9 arrive and each produces a duplicate ACK for 0.
        s.on_packet(ms(100), &ack(0), &mut out);
        s.on_packet(ms(101), &ack(0), &mut out);
        assert!(out.packets.is_empty());
        s.on_packet(ms(102), &ack(0), &mut out);
        assert_eq!(out.packets.len(), 1);
        assert_eq!(
            out.packets[0].seq, 0,
            "fast retransmit of the first unacknowledged segment"
        );
        assert_eq!(s.conn.tcb.ssthresh, 5.0); // FlightSize 10 / 2
        assert_eq!(s.conn.tcb.cwnd, 8.0); // ssthresh + 3
        assert_eq!(s.phase(), Phase::Recovery);
        // Six more duplicate ACKs inflate cwnd to 14 > FlightSize 10: new data may go.
        for k in 0..6 {
            s.on_packet(ms(103 + k), &ack(0), &mut out);
        }
        assert_eq!(s.conn.tcb.cwnd, 14.0);
        let new: Vec<u32> = out.packets[1..].iter().map(|p| p.seq).collect();
        assert_eq!(new, [10, 11, 12, 13]);
        // The retransmission fills the hole: the full ACK ends recovery with cwnd = ssthresh.
        s.on_packet(ms(200), &ack(10), &mut out);
        assert_eq!(s.phase(), Phase::CongestionAvoidance);
        assert_eq!(s.conn.tcb.cwnd, 5.0);
        assert_eq!(s.conn.stats.fast_recoveries, 1);
        assert_eq!(
            s.ss_exit().map(|e| (e.cwnd, e.reason)),
            Some((10.0, ExitReason::Loss))
        );
    }

    fn sender(undo: bool) -> TcpSender {
        let cfg = TcpConfig {
            initial_window: 10,
            undo,
            ..TcpConfig::default()
        };
        reno_sender(cfg, FlowSize::UNLIMITED)
    }

    #[test]
    fn a_spurious_timeout_is_undone_when_the_ack_echoes_the_original_transmission() {
        for undo in [false, true] {
            let mut s = sender(undo);
            let mut out = Outbox::default();
            s.start(Time::ZERO, &mut out);
            // No ACK within the initial RTO of 1 s: timeout, retransmission of segment 0, cwnd 1.
            s.on_timer(ms(1000), &mut out);
            assert_eq!((s.conn.stats.timeouts, s.conn.tcb.cwnd), (1, 1.0));
            assert_eq!(out.packets.last().unwrap().seq, 0);
            // The ACK of the original transmissions arrives, echoing their timestamp (t = 0).
            s.on_packet(ms(1010), &ack_echo(10, Time::ZERO), &mut out);
            if undo {
                // Restored to the prior 10, then one slow-start increment for this ACK.
                assert_eq!(
                    (s.conn.stats.undos, s.conn.tcb.cwnd, s.phase()),
                    (1, 11.0, Phase::SlowStart)
                );
                assert_eq!(s.conn.tcb.ssthresh, f64::INFINITY);
            } else {
                assert_eq!((s.conn.stats.undos, s.conn.tcb.cwnd), (0, 2.0));
                assert_eq!(s.conn.tcb.ssthresh, 5.0);
            }
        }
    }

    #[test]
    fn a_real_loss_is_not_undone() {
        let mut s = sender(true);
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        s.on_timer(ms(1000), &mut out);
        // The ACK echoes the retransmission's timestamp: the original was lost.
        s.on_packet(ms(1100), &ack_echo(10, ms(1000)), &mut out);
        assert_eq!((s.conn.stats.undos, s.conn.tcb.cwnd), (0, 2.0));
    }
}
