//! The sending end: window, scoreboard, loss recovery and the retransmission timer.
//!
//! Accounting follows Linux `tcp_packets_in_flight` and RFC 6675's pipe:
//! `in_flight = packets_out - sacked_out - lost_out + retrans_out`, with `packets_out =
//! high_tx - snd_una`. With Reno and NewReno recovery nothing is SACKed, so `in_flight` is the
//! RFC 5681 FlightSize and fast recovery inflates cwnd by one segment per duplicate ACK; with SACK
//! recovery cwnd is not inflated and the pipe shrinks as segments are SACKed or deemed lost.

#[path = "linux_recovery.rs"]
mod linux_recovery;
#[path = "linux_undo.rs"]
mod linux_undo;

use super::pacer::{pacing_rate, rate_of, Pacer, Window};
use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, SegState};
use super::{FlowSize, Outbox, Pacing, Recovery, TcpConfig};
use crate::cc::{
    Ack, AckSample, CaState, CongestionControl, CwndEvent, ExitReason, LossVerdicts, Phase,
    RateSample, Tcb,
};
use crate::net::{FlowId, NodeId, Packet, PacketKind, SackBlocks};
use crate::time::{Duration, Time};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ConnState {
    NotStarted,
    SynSent,
    Established,
    Done,
}

/// What a spurious retransmission would undo (Eifel, RFC 3522).
#[derive(Copy, Clone, Debug)]
struct UndoPoint {
    /// When the first retransmission of `seq` left.
    retransmitted_at: Time,
    seq: u32,
    prior_ssthresh: f64,
}

/// Counters of one connection.
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data segments sent, retransmissions included.
    pub sent_packets: u64,
    pub retransmissions: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Window reductions undone because the retransmission was spurious.
    pub undos: u64,
}

/// The end of the first slow start.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SlowStartExit {
    pub time: Time,
    /// cwnd when slow start ended (before any reduction), segments.
    pub cwnd: f64,
    pub reason: ExitReason,
}

/// The largest congestion window the sender uses, in segments (Linux has `snd_cwnd_clamp`;
/// tcp_cubic.c: "designed and tested for cwnd < 1 million packets"). It bounds the memory of
/// the scoreboard and of the queues, whatever a controller's parameters make of cwnd.
pub const CWND_CLAMP_SEGMENTS: f64 = (1 << 20) as f64;

#[derive(Debug)]
pub struct TcpSender {
    flow: FlowId,
    node: NodeId,
    peer: NodeId,
    cfg: TcpConfig,
    size: FlowSize,
    pub tcb: Tcb,
    cc: Box<dyn CongestionControl>,
    state: ConnState,
    /// What is known of every segment between `snd_una` and `high_tx`.
    board: Scoreboard,
    dupacks: u32,
    /// RFC 6582 `recover` / RFC 6675 RecoveryPoint: `high_tx` when recovery began.
    recover: u32,
    /// RFC 6582 §3.2 step 5 ("Impatient"): the timer is reset on the first partial ACK only.
    partial_ack_seen: bool,
    rtt: RttEstimator,
    rto_deadline: Option<Time>,
    pacer: Pacer,
    syn_sent_at: Option<Time>,
    syn_retransmitted: bool,
    delivered_time: Time,
    undo: Option<UndoPoint>,
    pub start_time: Time,
    pub stats: SenderStats,
    /// When the last segment of a finite flow was acknowledged.
    pub completed_at: Option<Time>,
    /// When the application closed the connection before it completed ([`TcpSender::stop`]).
    pub stopped_at: Option<Time>,
    pub ss_exit: Option<SlowStartExit>,
    /// Set when the segments acked by the last ACK included retransmissions (for tests / traces).
    last_rtt_sample: Option<Duration>,
    /// Linux's recovery state (`recovery = "prr"`).
    linux: linux_recovery::LinuxRecovery,
}

impl TcpSender {
    pub fn new(
        flow: FlowId,
        node: NodeId,
        peer: NodeId,
        cfg: TcpConfig,
        size: FlowSize,
        cc: Box<dyn CongestionControl>,
        start_time: Time,
    ) -> Self {
        let wire = cfg.mss_bytes + cfg.header_bytes;
        let tcb = Tcb::new(
            cfg.mss_bytes,
            wire,
            cfg.initial_window as f64,
            cfg.initial_ssthresh,
        );
        let rtt = RttEstimator::new(
            cfg.initial_rto,
            cfg.min_rto,
            cfg.max_rto,
            cfg.clock_granularity,
        )
        .with_algorithm(cfg.rto_algorithm);
        TcpSender {
            flow,
            node,
            peer,
            size,
            tcb,
            cc,
            state: ConnState::NotStarted,
            board: Scoreboard::default(),
            dupacks: 0,
            recover: 0,
            partial_ack_seen: false,
            rtt,
            rto_deadline: None,
            pacer: Pacer::default(),
            syn_sent_at: None,
            syn_retransmitted: false,
            delivered_time: start_time,
            undo: None,
            start_time,
            stats: SenderStats::default(),
            completed_at: None,
            stopped_at: None,
            ss_exit: None,
            last_rtt_sample: None,
            linux: Default::default(),
            cfg,
        }
    }

    // ----- observation -------------------------------------------------------------------

    fn packets_out(&self) -> u32 {
        self.tcb.high_tx - self.tcb.snd_una
    }

    /// DupThresh of RFC 6675's IsLost, within the three SACKed segments the scoreboard keeps.
    fn dupthresh(&self) -> usize {
        self.cfg.dupack_threshold.clamp(1, 3) as usize
    }

    /// Segments in the network (see the module docs).
    pub fn in_flight(&self) -> u32 {
        self.board.in_flight(self.packets_out())
    }

    pub fn phase(&self) -> Phase {
        match (self.state, self.tcb.ca_state) {
            (ConnState::Done, _) => Phase::Closed,
            (_, CaState::Recovery) => Phase::Recovery,
            (_, CaState::Loss) => Phase::Loss,
            (_, CaState::Cwr) => Phase::Cwr,
            (_, CaState::Disorder) if self.cfg.recovery == Recovery::Prr => Phase::Disorder,
            _ if self.cc.in_startup(&self.tcb) => Phase::SlowStart,
            _ => Phase::CongestionAvoidance,
        }
    }

    /// The sending host.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The receiving host.
    pub fn peer(&self) -> NodeId {
        self.peer
    }

    pub fn is_done(&self) -> bool {
        self.state == ConnState::Done
    }

    pub fn is_started(&self) -> bool {
        self.state != ConnState::NotStarted
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    pub fn last_rtt_sample(&self) -> Option<Duration> {
        self.last_rtt_sample
    }

    pub fn size(&self) -> FlowSize {
        self.size
    }

    /// When the sender next needs [`TcpSender::on_timer`].
    pub fn next_timer(&self) -> Option<Time> {
        // With data out, one of Linux's timers holds the retransmission timer.
        debug_assert!(
            !(self.cfg.recovery == Recovery::Prr
                && self.state == ConnState::Established
                && self.packets_out() > 0
                && self.rto_deadline.is_none()
                && self.linux_timers().is_none()),
            "data out and no timer"
        );
        let pace = self.pacer.deadline();
        let first = |a: Option<Time>, b: Option<Time>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let t = first(self.rto_deadline, pace);
        if self.cfg.recovery == Recovery::Prr && self.state == ConnState::Established {
            first(t, self.linux_timers())
        } else {
            t
        }
    }

    // ----- events --------------------------------------------------------------------------

    /// The application opens the connection and starts writing.
    pub fn start(&mut self, now: Time, out: &mut Outbox) {
        debug_assert_eq!(self.state, ConnState::NotStarted);
        if self.cfg.handshake {
            self.state = ConnState::SynSent;
            self.syn_sent_at = Some(now);
            out.packets.push(self.control(PacketKind::Syn));
            self.rto_deadline = Some(now + self.rtt.rto());
        } else {
            self.establish(now, out);
        }
    }

    fn establish(&mut self, now: Time, out: &mut Outbox) {
        self.state = ConnState::Established;
        self.rto_deadline = None;
        self.cc.init(&mut self.tcb, now);
        self.cc.cwnd_event(&mut self.tcb, CwndEvent::TxStart, now);
        if let (Pacing::InitialSpreading, Some(srtt)) = (self.cfg.pacing, self.rtt.srtt()) {
            // One segment every RTT / IW (Sallantin et al. 2013 §III.C: "one packet is sent every RTT/10").
            let iw = self.cfg.initial_window.max(1) as f64;
            self.tcb.pacing_rate = Some(rate_of(iw * self.tcb.wire_bytes as f64, srtt));
        }
        self.update_pacing();
        if self.size.segments == 0 {
            self.finish(now);
            return;
        }
        self.try_send(now, out);
    }

    /// An ACK or SYN-ACK for this connection arrived.
    pub fn on_packet(&mut self, now: Time, pkt: &Packet, out: &mut Outbox) {
        match (pkt.kind, self.state) {
            (PacketKind::SynAck, ConnState::SynSent) => {
                // The handshake gives the first RTT sample (unless the SYN was retransmitted).
                if !self.syn_retransmitted {
                    let r = now - self.syn_sent_at.expect("SYN sent");
                    self.take_rtt_sample(r);
                }
                self.tcb.rwnd = pkt.rwnd_segments;
                self.establish(now, out);
            }
            (PacketKind::Ack, ConnState::Established) if self.cfg.recovery == Recovery::Prr => {
                self.on_ack_linux(now, pkt, out)
            }
            (PacketKind::Ack, ConnState::Established) => self.on_ack(now, pkt, out),
            _ => {}
        }
    }

    /// A timer returned by [`TcpSender::next_timer`] is due.
    pub fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        if self.cfg.recovery == Recovery::Prr && self.state == ConnState::Established {
            self.on_linux_timers(now, out);
        }
        if matches!(self.rto_deadline, Some(d) if d <= now) {
            self.on_rto(now, out);
        }
        if self.pacer.due(now) {
            self.try_send(now, out);
        }
    }

    fn take_rtt_sample(&mut self, r: Duration) {
        // RFC 6298, or Linux's estimator when configured (the handshake's sample too).
        self.rtt
            .on_sample_linux(r, self.tcb.snd_una, self.tcb.high_tx);
        self.tcb.srtt = self.rtt.srtt();
        self.tcb.latest_rtt = Some(r);
        self.tcb.min_rtt = Some(self.tcb.min_rtt.map_or(r, |m| m.min(r)));
        self.last_rtt_sample = Some(r);
    }

    fn on_ack(&mut self, now: Time, pkt: &Packet, out: &mut Outbox) {
        let ack = pkt.seq;
        self.tcb.rwnd = pkt.rwnd_segments;
        if ack < self.tcb.snd_una || ack > self.tcb.high_tx {
            return; // old or invalid
        }
        let una_before = self.tcb.snd_una;
        let prior_in_flight = self.in_flight();
        let mut delivered: u32 = 0;
        // The most recently sent segment this ACK delivers: RTT and rate samples come from it.
        let mut newest: Option<SegState> = None;
        let note = |s: &SegState, newest: &mut Option<SegState>| {
            if newest.map_or(true, |n| s.sent_at >= n.sent_at) {
                *newest = Some(*s);
            }
        };

        if self.cfg.recovery.uses_sack() && !pkt.sack.is_empty() {
            delivered += self.board.apply_sack(
                (self.tcb.snd_una, self.tcb.high_tx),
                ack,
                &pkt.sack,
                &mut |_, s| note(s, &mut newest),
            );
        }
        if ack > una_before {
            delivered += self
                .board
                .advance(una_before, ack, &mut |_, s| note(s, &mut newest));
            self.tcb.snd_una = ack;
        }

        self.last_rtt_sample = None;
        if delivered > 0 {
            self.tcb.delivered += delivered as u64;
            self.delivered_time = now;
        }
        let newest = newest.filter(|_| delivered > 0);
        // Karn's rule (RFC 6298 §3): never sample a retransmitted segment.
        let rtt = newest.filter(|s| !s.retransmitted).map(|s| now - s.sent_at);
        if let Some(r) = rtt {
            self.take_rtt_sample(r);
        }
        self.tcb.in_flight = self.in_flight();

        let mut cong_controlled = false;
        if let Some(s) = newest {
            let sample = AckSample {
                acked: delivered,
                rtt,
                prior_in_flight,
            };
            self.cc.pkts_acked(&mut self.tcb, &sample, now);
            let rs = RateSample {
                delivered: self.tcb.delivered - s.delivered_at_send,
                interval: now.saturating_since(s.delivered_time_at_send),
                prior_in_flight,
                rtt,
                acked: delivered,
            };
            cong_controlled = self.cc.cong_control(&mut self.tcb, &rs, now);
        }

        if let Some(u) = self.undo {
            if ack > u.seq {
                self.undo = None;
                // Eifel detection (RFC 3522 §3.2): the ACK for the retransmitted segment echoes
                // a timestamp older than the retransmission, so the original arrived.
                if pkt.ts < u.retransmitted_at {
                    self.undo_reduction(u, now);
                }
            }
        }
        let acked = ack - una_before;
        if acked > 0 {
            self.on_new_data_acked(now, acked, delivered, ack, cong_controlled, out);
        } else if self.packets_out() > 0 {
            if delivered == 0 {
                self.cc.cwnd_event(&mut self.tcb, CwndEvent::DupAck, now);
            }
            self.on_dupack(now, out);
        }
        if self.cfg.recovery.uses_sack() {
            if self.tcb.ca_state == CaState::Recovery {
                self.board
                    .mark_sack_losses(self.dupthresh(), self.tcb.snd_una, self.tcb.high_tx);
            } else if matches!(self.tcb.ca_state, CaState::Open | CaState::Disorder)
                && self
                    .board
                    .is_lost_by_sack(self.dupthresh(), self.tcb.snd_una, self.tcb.snd_una)
                && ack >= self.recover
            {
                // RFC 6675 §5 step (2): IsLost(HighACK + 1) starts recovery too.
                self.enter_recovery(now, out);
            }
        }

        if !self.size.is_unlimited() && self.tcb.snd_una >= self.size.segments {
            self.finish(now);
            return;
        }
        if self.ss_exit.is_none()
            && self.tcb.ca_state == CaState::Open
            && !self.cc.in_startup(&self.tcb)
        {
            self.note_slow_start_exit(now, ExitReason::Threshold);
        }
        if self.cfg.pacing == Pacing::InitialSpreading && delivered > 0 {
            // The spread initial window is over: ordinary ACK clocking from now on.
            self.tcb.pacing_rate = None;
        }
        self.update_pacing();
        self.try_send(now, out);
    }

    /// Sets the pacing rate of the `Window` and `Linux` modes from cwnd and srtt.
    fn update_pacing(&mut self) {
        let Some(srtt) = self.rtt.srtt() else { return };
        let window = Window {
            cwnd: self.tcb.cwnd,
            ssthresh: self.tcb.ssthresh,
            packets_out: self.packets_out(),
            wire_bytes: self.tcb.wire_bytes,
        };
        if let Some(rate) = pacing_rate(self.cfg.pacing, window, srtt) {
            self.tcb.pacing_rate = Some(rate);
        }
    }

    fn on_new_data_acked(
        &mut self,
        now: Time,
        acked: u32,
        delivered: u32,
        ack: u32,
        cong_controlled: bool,
        out: &mut Outbox,
    ) {
        let mut restart_timer = true;
        match self.tcb.ca_state {
            CaState::Recovery => {
                if ack >= self.recover || self.cfg.recovery == Recovery::Reno {
                    // Full ACK (RFC 6582 §3.2 step 6) or, for Reno, any new ACK (RFC 5681 §3.2
                    // step 6): deflate the window to ssthresh.
                    self.tcb.cwnd = self.tcb.ssthresh.max(1.0);
                    self.dupacks = 0;
                    self.set_ca_state(CaState::Open, now);
                } else if self.cfg.recovery == Recovery::NewReno {
                    // Partial ACK (RFC 6582 §3.2 step 5): retransmit the first unacknowledged
                    // segment, deflate by the amount acknowledged, add back one segment.
                    self.board.mark_lost(self.tcb.snd_una, self.tcb.snd_una);
                    self.retransmit_now(self.tcb.snd_una, now, out);
                    self.tcb.cwnd = (self.tcb.cwnd - acked as f64 + 1.0).max(1.0);
                    restart_timer = !self.partial_ack_seen;
                    self.partial_ack_seen = true;
                }
            }
            CaState::Loss => {
                if ack >= self.recover {
                    self.set_ca_state(CaState::Open, now);
                }
                if !cong_controlled {
                    self.cong_avoid(delivered, ack, now);
                }
            }
            CaState::Open | CaState::Disorder | CaState::Cwr => {
                self.dupacks = 0;
                if self.tcb.ca_state == CaState::Disorder {
                    self.set_ca_state(CaState::Open, now);
                }
                if !cong_controlled {
                    self.cong_avoid(delivered, ack, now);
                }
            }
        }
        // RFC 6298 §5.2 / §5.3
        if self.packets_out() == 0 {
            self.rto_deadline = None;
        } else if restart_timer {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    fn on_dupack(&mut self, now: Time, out: &mut Outbox) {
        self.dupacks += 1;
        match self.tcb.ca_state {
            CaState::Recovery => {
                if !self.cfg.recovery.uses_sack() {
                    // RFC 5681 §3.2 step 4: inflate by one segment per further duplicate ACK.
                    self.tcb.cwnd += 1.0;
                }
            }
            CaState::Loss => {}
            CaState::Open | CaState::Disorder | CaState::Cwr => {
                if self.dupacks >= self.cfg.dupack_threshold {
                    // RFC 6582 §3.2 step 1 (also used for SACK): no new recovery for losses of
                    // data sent before the last recovery or timeout.
                    if self.cfg.recovery == Recovery::Reno || self.tcb.snd_una >= self.recover {
                        self.enter_recovery(now, out);
                        return;
                    }
                }
                self.set_ca_state(CaState::Disorder, now);
            }
        }
    }

    fn set_undo_point(&mut self, now: Time) {
        self.tcb.prior_cwnd = self.tcb.cwnd;
        if self.cfg.undo {
            self.undo = Some(UndoPoint {
                retransmitted_at: now,
                seq: self.tcb.snd_una,
                prior_ssthresh: self.tcb.ssthresh,
            });
        }
    }

    /// Restores the window after a spurious retransmission (Linux `tcp_undo_cwnd_reduction`).
    fn undo_reduction(&mut self, u: UndoPoint, now: Time) {
        self.stats.undos += 1;
        self.tcb.cwnd = self.cc.undo_cwnd(&mut self.tcb);
        self.tcb.ssthresh = self.tcb.ssthresh.max(u.prior_ssthresh);
        // Segments deemed lost but never retransmitted were not lost after all.
        for s in self.board.segs.iter_mut() {
            if s.lost && !s.retx_in_flight {
                s.lost = false;
                self.board.lost_out -= 1;
            }
        }
        self.dupacks = 0;
        self.set_ca_state(CaState::Open, now);
    }

    fn enter_recovery(&mut self, now: Time, out: &mut Outbox) {
        self.note_slow_start_exit(now, ExitReason::Loss);
        self.stats.fast_recoveries += 1;
        self.set_undo_point(now);
        self.tcb.ssthresh = self.cc.ssthresh(&mut self.tcb, now);
        self.recover = self.tcb.high_tx;
        self.partial_ack_seen = false;
        self.set_ca_state(CaState::Recovery, now);
        self.board.mark_lost(self.tcb.snd_una, self.tcb.snd_una);
        match self.cfg.recovery {
            // RFC 6675 §5 step (4.2): cwnd = ssthresh, no inflation.
            Recovery::Sack | Recovery::Prr => {
                self.tcb.cwnd = self.tcb.ssthresh;
                self.board
                    .mark_sack_losses(self.dupthresh(), self.tcb.snd_una, self.tcb.high_tx);
            }
            // RFC 5681 §3.2 step 2 / RFC 6582: cwnd = ssthresh + 3 segments.
            Recovery::Reno | Recovery::NewReno => {
                self.tcb.cwnd = self.tcb.ssthresh + self.cfg.dupack_threshold as f64;
            }
        }
        // Fast retransmit: the first missing segment goes at once, whatever the window.
        self.retransmit_now(self.tcb.snd_una, now, out);
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    fn on_rto(&mut self, now: Time, out: &mut Outbox) {
        match self.state {
            ConnState::SynSent => {
                self.syn_retransmitted = true;
                self.rtt.back_off();
                out.packets.push(self.control(PacketKind::Syn));
                self.rto_deadline = Some(now + self.rtt.rto());
                return;
            }
            ConnState::Established if self.packets_out() > 0 => {}
            _ => {
                self.rto_deadline = None;
                return;
            }
        }
        if self.cfg.recovery == Recovery::Prr {
            return self.on_rto_linux(now, out);
        }
        self.stats.timeouts += 1;
        self.note_slow_start_exit(now, ExitReason::Timeout);
        // RFC 5681 §3.1: ssthresh is reduced once, not again when the same data times out again.
        // A timeout during fast recovery keeps the ssthresh the recovery chose (as Linux
        // `tcp_enter_loss`): FlightSize then counts SACKed data and the inflated window.
        if self.rtt.backoff() == 0 && matches!(self.tcb.ca_state, CaState::Open | CaState::Disorder)
        {
            self.set_undo_point(now);
            self.tcb.ssthresh = self.cc.ssthresh(&mut self.tcb, now);
        }
        // Linux `tcp_enter_loss` order: ssthresh, CA_EVENT_LOSS, then the state change.
        self.cc.cwnd_event(&mut self.tcb, CwndEvent::Loss, now);
        self.set_ca_state(CaState::Loss, now);
        // RFC 5681 §3.1: loss window of one segment.
        self.tcb.cwnd = 1.0;
        self.recover = self.tcb.high_tx;
        self.dupacks = 0;
        // Everything outstanding and not SACKed is deemed lost; it is sent again from snd_una.
        self.board.mark_all_lost(self.tcb.snd_una, self.tcb.high_tx);
        // RFC 6298 §5.4-5.6: retransmit the earliest segment, back off, restart the timer.
        self.rtt.back_off();
        self.retransmit_now(self.tcb.snd_una, now, out);
        self.rto_deadline = Some(now + self.rtt.rto());
        self.try_send(now, out);
    }

    /// The application closes the connection at `now` (a flow's `stop`): nothing more is sent
    /// or retransmitted and later ACKs are ignored. Returns false if it had already completed.
    pub fn stop(&mut self, now: Time) -> bool {
        if self.state == ConnState::Done {
            return false;
        }
        self.finish(now);
        self.completed_at = None;
        self.stopped_at = Some(now);
        true
    }

    /// Why the controller stopped working, if it did (`CongestionControl::error`).
    pub fn controller_error(&self) -> Option<String> {
        self.cc.error()
    }

    /// The controller's loss verdicts, if it classifies losses (BLAST).
    pub fn loss_verdicts(&self) -> Option<LossVerdicts> {
        self.cc.loss_verdicts()
    }

    /// When the connection completed or was stopped, if it has.
    pub fn closed_at(&self) -> Option<Time> {
        self.completed_at.or(self.stopped_at)
    }

    fn finish(&mut self, now: Time) {
        self.state = ConnState::Done;
        self.completed_at = Some(now);
        self.rto_deadline = None;
        self.pacer.stop();
        self.tcb.in_flight = 0;
    }

    /// The controller's window growth for an ACK for `ack` that delivered `delivered` segments.
    fn cong_avoid(&mut self, delivered: u32, ack: u32, now: Time) {
        let ack = Ack {
            acked: delivered,
            ack_seq: ack,
        };
        self.cc.cong_avoid(&mut self.tcb, &ack, now);
    }

    fn set_ca_state(&mut self, new: CaState, now: Time) {
        if new != self.tcb.ca_state {
            self.cc.set_state(&mut self.tcb, new, now);
            self.tcb.ca_state = new;
        }
    }

    fn note_slow_start_exit(&mut self, now: Time, reason: ExitReason) {
        if self.ss_exit.is_none() {
            let reason = self.tcb.exit_reason_hint.take().unwrap_or(reason);
            self.ss_exit = Some(SlowStartExit {
                time: now,
                cwnd: self.tcb.cwnd,
                reason,
            });
        }
    }

    // ----- transmission --------------------------------------------------------------------

    /// The next segment to send: a lost segment not yet retransmitted (lowest first, RFC 6675
    /// NextSeg rule 1), else new data if the receiver's window allows (rule 2).
    fn next_segment(&mut self) -> Option<u32> {
        if self.board.lost_out > self.board.retrans_out && !self.linux.new_data_only {
            self.board.retx_hint = self.board.retx_hint.max(self.tcb.snd_una);
            while self.board.retx_hint < self.tcb.high_tx {
                let s = &self.board.segs[(self.board.retx_hint - self.tcb.snd_una) as usize];
                if s.lost && !s.retx_in_flight && !s.sacked {
                    return Some(self.board.retx_hint);
                }
                self.board.retx_hint += 1;
            }
        }
        let new = self.tcb.high_tx;
        (new < self.size.segments && self.packets_out() < self.tcb.rwnd).then_some(new)
    }

    fn try_send(&mut self, now: Time, out: &mut Outbox) {
        if self.state != ConnState::Established {
            return;
        }
        // Whatever a controller computed, the window stays within what a run can hold.
        self.tcb.cwnd = self.tcb.cwnd.min(CWND_CLAMP_SEGMENTS);
        let mut sent_new = false;
        loop {
            let cwnd = self.tcb.cwnd.floor().max(0.0) as u32;
            if self.in_flight() >= cwnd {
                self.tcb.cwnd_limited = true;
                break;
            }
            let Some(seq) = self.next_segment() else {
                // Out of data, or held back by the receiver's window.
                self.tcb.cwnd_limited = false;
                break;
            };
            if self.pacer.hold(now, self.tcb.pacing_rate) {
                break;
            }
            let head_again = seq == self.tcb.snd_una && seq < self.tcb.high_tx;
            self.transmit(seq, now, out, false);
            sent_new |= seq + 1 == self.tcb.high_tx;
            // tcp_xmit_retransmit_queue: retransmitting the head restarts the RTO from now,
            // unless RACK's reordering timer holds the timer.
            if head_again
                && self.cfg.recovery == Recovery::Prr
                && self.linux.slot != linux_recovery::XmitTimer::Reo
            {
                self.linux.slot = linux_recovery::XmitTimer::Rto;
                self.linux.tlp_deadline = None;
                self.rto_deadline = Some(now + self.rtt.rto());
            }
        }
        self.tcb.in_flight = self.in_flight();
        if sent_new && self.cfg.recovery == Recovery::Prr {
            self.schedule_loss_probe(now, false);
        }
    }

    fn retransmit_now(&mut self, seq: u32, now: Time, out: &mut Outbox) {
        self.transmit(seq, now, out, true);
        self.tcb.in_flight = self.in_flight();
    }

    /// Sends segment `seq`. Only fast retransmits, partial-ACK and timeout retransmissions are
    /// `forced` past the window; everything else must fit in it.
    fn transmit(&mut self, seq: u32, now: Time, out: &mut Outbox, forced: bool) {
        // The receive window limits new data only: a lost segment below high_tx may go again
        // when packets_out has reached rwnd.
        debug_assert!(
            forced
                || (self.in_flight() < (self.tcb.cwnd.floor() as u32).max(1)
                    && (seq < self.tcb.high_tx || self.packets_out() < self.tcb.rwnd)),
            "window exceeded: in_flight {} cwnd {} rwnd {}",
            self.in_flight(),
            self.tcb.cwnd,
            self.tcb.rwnd
        );
        let (new_data, prior_packets) = (seq == self.tcb.high_tx, self.packets_out());
        let fresh = SegState {
            sent_at: now,
            delivered_at_send: self.tcb.delivered,
            delivered_time_at_send: self.delivered_time,
            sacked: false,
            lost: false,
            retx_in_flight: false,
            retransmitted: false,
        };
        if seq == self.tcb.high_tx {
            self.board.segs.push_back(fresh);
            self.tcb.high_tx += 1;
        } else {
            let s = &mut self.board.segs[(seq - self.tcb.snd_una) as usize];
            if s.lost && !s.retx_in_flight {
                s.retx_in_flight = true;
                self.board.retrans_out += 1;
            }
            s.retransmitted = true;
            s.sent_at = now;
            s.delivered_at_send = fresh.delivered_at_send;
            s.delivered_time_at_send = fresh.delivered_time_at_send;
            self.stats.retransmissions += 1;
            if self.cfg.recovery == Recovery::Prr {
                self.note_retransmission_for_undo(now);
            }
        }
        self.stats.sent_packets += 1;
        // PRR's prr_out: everything sent while the window is being reduced (tcp_write_xmit,
        // tcp_xmit_retransmit_queue).
        if matches!(self.tcb.ca_state, CaState::Cwr | CaState::Recovery) {
            self.linux.prr_out += 1;
        }
        let payload = self.size.payload(seq, self.cfg.mss_bytes);
        let wire_bytes = payload + self.cfg.header_bytes;
        // Linux's internal pacing leaves a connection's first 10 data segments unpaced
        // (tcp_update_skb_after_send: "Original sch_fq does not pace first 10 MSS").
        let unpaced_start =
            matches!(self.cfg.pacing, Pacing::Linux { .. }) && self.stats.sent_packets <= 10;
        if !unpaced_start {
            self.pacer
                .on_transmit(now, self.tcb.pacing_rate, wire_bytes as u64);
        }
        if self.cfg.recovery == Recovery::Prr {
            // tcp_event_new_data_sent: new data restarts the RTO when nothing was out, or
            // when the probe held the timer.
            if new_data && (prior_packets == 0 || self.linux.slot == linux_recovery::XmitTimer::Tlp)
            {
                self.rearm_rto(now);
            }
        } else if self.rto_deadline.is_none() {
            // RFC 6298 §5.1: start the timer if it is not running.
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        out.packets.push(Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            wire_bytes,
            kind: PacketKind::Data,
            seq,
            rwnd_segments: 0,
            ts: now,
            sack: SackBlocks::default(),
        });
    }

    fn control(&self, kind: PacketKind) -> Packet {
        Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            wire_bytes: self.cfg.ack_bytes,
            kind,
            seq: 0,
            rwnd_segments: 0,
            ts: Time::ZERO,
            sack: SackBlocks::default(),
        }
    }
}

/// `bytes` per `period` as a rate (at least 1 bit/s).

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::{Reno, RenoConfig};
    use crate::units::Rate;

    /// A controller that paces at a fixed rate and keeps cwnd at 10 through `cong_control`.
    #[derive(Debug, Default)]
    struct Fixed {
        cong_avoid_calls: u32,
        cong_control_calls: u32,
    }
    impl CongestionControl for Fixed {
        fn init(&mut self, tcb: &mut Tcb, _now: Time) {
            tcb.cwnd = 10.0;
            // 1040-byte segments at 8.32 Mbps: one per millisecond.
            tcb.pacing_rate = Some(Rate::from_bps(8_320_000));
        }
        fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
            tcb.cwnd
        }
        fn cong_avoid(&mut self, _tcb: &mut Tcb, _ack: &Ack, _now: Time) {
            self.cong_avoid_calls += 1;
        }
        fn cong_control(&mut self, tcb: &mut Tcb, _rs: &RateSample, _now: Time) -> bool {
            self.cong_control_calls += 1;
            tcb.cwnd = 10.0;
            true
        }
    }

    fn ack_echo(seq: u32, ts: Time) -> Packet {
        Packet { ts, ..ack(seq) }
    }

    fn ack(seq: u32) -> Packet {
        Packet {
            flow: 0,
            src: 1,
            dst: 0,
            wire_bytes: 40,
            kind: PacketKind::Ack,
            seq,
            rwnd_segments: u32::MAX,
            ts: Time::ZERO,
            sack: SackBlocks::default(),
        }
    }

    fn ms(x: u64) -> Time {
        Time::ZERO + Duration::from_millis(x)
    }

    /// A controller gone wild: a window of 10^15 segments.
    #[derive(Debug)]
    struct Huge;
    impl CongestionControl for Huge {
        fn init(&mut self, tcb: &mut Tcb, _now: Time) {
            tcb.cwnd = 1e15;
        }
        fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
            tcb.cwnd
        }
        fn cong_avoid(&mut self, _tcb: &mut Tcb, _ack: &Ack, _now: Time) {}
    }

    #[test]
    fn no_controller_can_make_the_sender_send_more_than_the_clamp() {
        let mut s = TcpSender::new(
            0,
            0,
            1,
            TcpConfig::default(),
            FlowSize::UNLIMITED,
            Box::new(Huge),
            Time::ZERO,
        );
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        assert_eq!(out.packets.len(), CWND_CLAMP_SEGMENTS as usize);
        assert_eq!(s.tcb.cwnd, CWND_CLAMP_SEGMENTS);
    }

    #[test]
    fn a_paced_sender_spaces_its_window() {
        let mut s = TcpSender::new(
            0,
            0,
            1,
            TcpConfig::default(),
            FlowSize::UNLIMITED,
            Box::new(Fixed::default()),
            Time::ZERO,
        );
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        assert_eq!(out.packets.len(), 1, "one segment, then wait for the pacer");
        for k in 1..10u64 {
            assert_eq!(s.next_timer(), Some(ms(k)));
            s.on_timer(ms(k), &mut out);
            assert_eq!(out.packets.len() as u64, k + 1);
        }
        // The window (10) is full: the next wake-up is the retransmission timer, not the pacer.
        s.on_timer(ms(10), &mut out);
        assert_eq!(out.packets.len(), 10);
        assert_eq!(s.next_timer(), Some(Time::ZERO + Duration::from_secs(1)));
    }

    #[test]
    fn cong_control_replaces_cong_avoid() {
        let mut s = TcpSender::new(
            0,
            0,
            1,
            TcpConfig::default(),
            FlowSize::UNLIMITED,
            Box::new(Fixed::default()),
            Time::ZERO,
        );
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        for k in 1..10 {
            s.on_timer(ms(k), &mut out);
        }
        for a in 1..=5 {
            s.on_packet(ms(100 + a as u64), &ack(a), &mut out);
        }
        assert_eq!(s.tcb.cwnd, 10.0);
        let fixed = format!("{:?}", s.cc);
        assert!(
            fixed.contains("cong_avoid_calls: 0") && fixed.contains("cong_control_calls: 5"),
            "{fixed}"
        );
        // RTT of the newest acknowledged segment: segment 4 left at 4 ms, its ACK came at 105 ms.
        assert_eq!(s.last_rtt_sample(), Some(Duration::from_millis(101)));
    }

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
        assert_eq!(s.tcb.ssthresh, 5.0); // FlightSize 10 / 2
        assert_eq!(s.tcb.cwnd, 8.0); // ssthresh + 3
        assert_eq!(s.phase(), Phase::Recovery);
        // Six more duplicate ACKs inflate cwnd to 14 > FlightSize 10: new data may go.
        for k in 0..6 {
            s.on_packet(ms(103 + k), &ack(0), &mut out);
        }
        assert_eq!(s.tcb.cwnd, 14.0);
        let new: Vec<u32> = out.packets[1..].iter().map(|p| p.seq).collect();
        assert_eq!(new, [10, 11, 12, 13]);
        // The retransmission fills the hole: the full ACK ends recovery with cwnd = ssthresh.
        s.on_packet(ms(200), &ack(10), &mut out);
        assert_eq!(s.phase(), Phase::CongestionAvoidance);
        assert_eq!(s.tcb.cwnd, 5.0);
        assert_eq!(s.stats.fast_recoveries, 1);
        assert_eq!(
            s.ss_exit.map(|e| (e.cwnd, e.reason)),
            Some((10.0, ExitReason::Loss))
        );
    }

    /// A Reno sender of `size` with `cfg`.
    fn reno_sender(cfg: TcpConfig, size: FlowSize) -> TcpSender {
        let reno = Box::new(Reno::new(RenoConfig::default()));
        TcpSender::new(0, 0, 1, cfg, size, reno, Time::ZERO)
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
            assert_eq!((s.stats.timeouts, s.tcb.cwnd), (1, 1.0));
            assert_eq!(out.packets.last().unwrap().seq, 0);
            // The ACK of the original transmissions arrives, echoing their timestamp (t = 0).
            s.on_packet(ms(1010), &ack_echo(10, Time::ZERO), &mut out);
            if undo {
                // Restored to the prior 10, then one slow-start increment for this ACK.
                assert_eq!(
                    (s.stats.undos, s.tcb.cwnd, s.phase()),
                    (1, 11.0, Phase::SlowStart)
                );
                assert_eq!(s.tcb.ssthresh, f64::INFINITY);
            } else {
                assert_eq!((s.stats.undos, s.tcb.cwnd), (0, 2.0));
                assert_eq!(s.tcb.ssthresh, 5.0);
            }
        }
    }

    fn sack_ack(seq: u32, block: (u32, u32)) -> Packet {
        let mut sack = SackBlocks::default();
        sack.push(block);
        Packet { sack, ..ack(seq) }
    }

    /// Linux's recovery, RACK (with or without TLP) and RTO, jiffies of 4 ms.
    fn linux_config(iw: u32, tlp: bool) -> TcpConfig {
        TcpConfig {
            initial_window: iw,
            sack: true,
            recovery: Recovery::Prr,
            loss_detection: crate::tcp::LossDetection::Rack { tlp },
            rto_algorithm: crate::tcp::RtoAlgorithm::Linux,
            clock_granularity: Duration::from_millis(4),
            ..TcpConfig::default()
        }
    }

    fn linux_sender(iw: u32) -> TcpSender {
        reno_sender(linux_config(iw, false), FlowSize::UNLIMITED)
    }

    #[test]
    fn prr_sends_half_of_what_is_delivered_and_rack_finds_the_hole_at_three_sacks() {
        // IW 20 sent at t = 0; segment 0 is lost; segment k is SACKed at 100 + k ms.
        let mut s = linux_sender(20);
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        assert_eq!(out.packets.len(), 20);
        let mut sent_after = Vec::new();
        for k in 1..=9u32 {
            let before = out.packets.len();
            s.on_packet(ms(100 + k as u64), &sack_ack(0, (1, k + 1)), &mut out);
            sent_after.push(out.packets.len() - before);
            if k < 3 {
                // RACK's reordering window (min_rtt / 4 = 25.25 ms) is still open with fewer
                // than three segments SACKed: Disorder, no loss yet.
                assert_eq!(s.phase(), Phase::Disorder);
            }
        }
        // The first two SACKs take segments out of the pipe (in flight 19, then 20 with the
        // new one, < cwnd 20): new segments 20 and 21 go, as RFC 6675 and Linux send them.
        // The third SACK closes the window: segment 0 (sent at 0, RACK.rtt 103 ms) is lost;
        // Recovery with ssthresh = FlightSize 22 / 2 = 11, prior_cwnd 20. PRR lets out
        // ceil(11 × delivered / 20) in all: after ACK 3..9 (delivered 1..7) that is
        // 1, 2, 2, 3, 3, 4, 4: the retransmission of 0, then one new segment every other ACK.
        assert_eq!(sent_after, [1, 1, 1, 1, 0, 1, 0, 1, 0]);
        let seqs: Vec<u32> = out.packets[20..].iter().map(|p| p.seq).collect();
        assert_eq!(seqs, [20, 21, 0, 22, 23, 24]);
        assert_eq!((s.tcb.ssthresh, s.phase()), (11.0, Phase::Recovery));
        assert_eq!(s.stats.fast_recoveries, 1);
        // An ACK below high_seq (22) keeps Recovery; the one that passes it ends it with
        // cwnd = ssthresh (tcp_end_cwnd_reduction), then Reno's congestion avoidance adds
        // 3/11 for the three segments it delivered.
        s.on_packet(ms(250), &ack(20), &mut out);
        assert_eq!(s.phase(), Phase::Recovery);
        s.on_packet(ms(251), &ack(22), &mut out);
        assert_eq!(s.phase(), Phase::CongestionAvoidance);
        assert!(s.tcb.cwnd >= 11.0 && s.tcb.cwnd < 12.0, "{}", s.tcb.cwnd);
        assert_eq!(s.stats.timeouts, 0);
    }

    #[test]
    fn a_lost_retransmission_is_retransmitted_again_without_a_timeout() {
        let mut s = linux_sender(20);
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        for k in 1..=19u32 {
            s.on_packet(ms(100 + k as u64), &sack_ack(0, (1, k + 1)), &mut out);
        }
        let zeros = out.packets.iter().filter(|p| p.seq == 0).count();
        assert_eq!(zeros, 2, "the original and one retransmission of 0");
        // RACK's reordering timer holds the retransmission timer (due at 136 ms): the RTO is not
        // running, and the first retransmission (103 ms) did not restart it.
        assert_eq!(
            (s.linux.slot, s.linux.reo_deadline, s.rto_deadline),
            (linux_recovery::XmitTimer::Reo, Some(ms(136)), None)
        );
        // The reordering timer finds nothing more lost and gives the timer back to the RTO,
        // counted from the head's last transmission (tcp_rearm_rto): 103 + 316 ms.
        let sent = out.packets.len();
        s.on_timer(ms(136), &mut out);
        assert_eq!(out.packets.len(), sent);
        assert_eq!(s.rtt.rto(), Duration::from_millis(316));
        assert_eq!(
            (s.linux.slot, s.rto_deadline),
            (linux_recovery::XmitTimer::Rto, Some(ms(419)))
        );
        // The retransmission (sent at 103 ms) is lost too. Segment 22, the first new one sent
        // after it (104 ms), is SACKed at 230 ms: RACK.rtt = 126 ms, and the retransmission has
        // been out 127 ms, so it is deemed lost again and goes a third time (with two new
        // segments: in flight 8 < ssthresh 11), long before any RTO (>= srtt + 200 ms).
        let retx_at = out.packets.iter().rposition(|p| p.seq == 0).unwrap();
        let after = out.packets[retx_at..]
            .iter()
            .find(|p| p.seq >= 20)
            .unwrap()
            .seq;
        assert_eq!(after, 22);
        s.on_packet(ms(230), &sack_ack(0, (1, after + 1)), &mut out);
        let zeros = out.packets.iter().filter(|p| p.seq == 0).count();
        assert_eq!(zeros, 3);
        // Retransmitting the head again restarts the RTO from now (tcp_xmit_retransmit_queue):
        // 230 ms + RTO 320 ms, so the third copy has a whole RTO to arrive in.
        assert_eq!(s.rtt.rto(), Duration::from_millis(320));
        assert_eq!(s.rto_deadline, Some(ms(550)));
        assert_eq!((s.stats.timeouts, s.phase()), (0, Phase::Recovery));
    }

    #[test]
    fn a_tail_loss_probe_repairs_lost_last_segments_without_a_timeout() {
        // A 10-segment flow, all sent at t = 0; segments 8 and 9 are lost.
        let mut s = reno_sender(linux_config(10, true), FlowSize::from_bytes(10_000, 1000));
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        assert_eq!(out.packets.len(), 10);
        // The ACK of 0..7 at 100 ms: SRTT 100 ms, RTTVAR = max(4 × mdev = 2 × SRTT, rto_min)
        // = 200 ms, RTO 300 ms (at 400 ms). Two segments out: PTO = 2 × SRTT + 2 ms = 202 ms,
        // 204 ms in jiffies of 4 ms: the probe is due at 304 ms, before the RTO.
        s.on_packet(ms(100), &ack(8), &mut out);
        assert_eq!(s.next_timer(), Some(ms(304)));
        // No new data: the probe retransmits the last segment.
        s.on_timer(ms(304), &mut out);
        assert_eq!(out.packets.last().map(|p| p.seq), Some(9));
        assert_eq!(out.packets.len(), 11);
        // Its SACK at 404 ms: RACK.xmit_ts = 304 ms, RACK.rtt = 100 ms; segment 8 (sent at 0)
        // is 404 ms old > 100 + 25 ms (min_rtt / 4 with one SACK): lost. Recovery, and PRR
        // lets its retransmission go at once.
        s.on_packet(ms(404), &sack_ack(8, (9, 10)), &mut out);
        assert_eq!(s.phase(), Phase::Recovery);
        assert_eq!(out.packets.last().map(|p| p.seq), Some(8));
        s.on_packet(ms(504), &ack(10), &mut out);
        assert!(s.is_done());
        assert_eq!(s.stats.timeouts, 0);
    }

    fn with_ts(p: Packet, ts: Time) -> Packet {
        Packet { ts, ..p }
    }

    #[test]
    fn a_recovery_whose_retransmission_is_dsacked_is_undone() {
        for dsack in [false, true] {
            let cfg = TcpConfig {
                dsack,
                undo: true,
                ..linux_config(20, false)
            };
            let mut s = reno_sender(cfg, FlowSize::UNLIMITED);
            let mut out = Outbox::default();
            s.start(Time::ZERO, &mut out);
            // As in the PRR test: the third SACK (103 ms) starts Recovery (ssthresh 11,
            // prior_cwnd 20) and retransmits 0. Segments 20 and 21 went before it.
            for k in 1..=3u32 {
                s.on_packet(ms(100 + k as u64), &sack_ack(0, (1, k + 1)), &mut out);
            }
            assert_eq!(out.packets.last().unwrap().seq, 0);
            // Everything is acknowledged, echoing the retransmission's timestamp: no evidence
            // yet that it was spurious. Recovery ends with cwnd = ssthresh 11, then Reno adds
            // 1/11 for the ACK.
            s.on_packet(ms(150), &with_ts(ack(22), ms(103)), &mut out);
            assert_eq!((s.phase(), s.stats.undos), (Phase::CongestionAvoidance, 0));
            assert_eq!(s.tcb.cwnd, 11.0 + 1.0 / 11.0);
            // Then the retransmission of 0 arrives at the receiver as a duplicate: its D-SACK
            // takes the episode's one retransmission off (tcp_check_dsack) and the reduction
            // is undone (tcp_try_undo_dsack): cwnd back to prior_cwnd 20 and ssthresh to the
            // infinite one of slow start.
            let mut dsack_ack = with_ts(sack_ack(22, (0, 1)), ms(103));
            dsack_ack.sack.len = 1;
            s.on_packet(ms(160), &dsack_ack, &mut out);
            if dsack {
                assert_eq!((s.stats.undos, s.tcb.cwnd), (1, 20.0));
                assert_eq!(
                    (s.tcb.ssthresh, s.phase()),
                    (f64::INFINITY, Phase::SlowStart)
                );
            } else {
                assert_eq!((s.stats.undos, s.tcb.cwnd), (0, 11.0 + 1.0 / 11.0));
            }
        }
    }

    /// Ten segments sent at t = 0 and a timeout at 1 s with F-RTO; the retransmitted head's ACK
    /// at 1100 ms echoes the retransmission (the original was lost).
    fn after_a_timeout_with_frto(frto: bool) -> (TcpSender, Outbox) {
        let cfg = TcpConfig {
            frto,
            undo: true,
            ..linux_config(10, false)
        };
        let mut s = reno_sender(cfg, FlowSize::UNLIMITED);
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        s.on_timer(ms(1000), &mut out);
        // tcp_enter_loss: ssthresh = 10 / 2, cwnd = in flight 0 + 1: the head goes again.
        assert_eq!(
            (s.stats.timeouts, s.tcb.ssthresh, s.tcb.cwnd),
            (1, 5.0, 1.0)
        );
        assert_eq!(out.packets.last().unwrap().seq, 0);
        s.on_packet(ms(1100), &with_ts(ack(1), ms(1000)), &mut out);
        (s, out)
    }

    #[test]
    fn frto_sends_new_data_after_a_timeout_and_undoes_it_when_the_originals_arrive() {
        let (mut s, mut out) = after_a_timeout_with_frto(true);
        // RFC 5682 step 2b: slow start makes cwnd 2, and two new segments go, not the
        // retransmissions of 1 and 2.
        assert_eq!(s.tcb.cwnd, 2.0);
        let seqs: Vec<u32> = out.packets[11..].iter().map(|p| p.seq).collect();
        assert_eq!(seqs, [10, 11]);
        assert_eq!(s.phase(), Phase::Loss);
        // Step 3b: segments 1..4, never retransmitted, are acknowledged: the timeout was
        // spurious. cwnd back to prior_cwnd 10 (plus 1 in slow start for this ACK), ssthresh
        // to the infinite one before the timeout.
        s.on_packet(ms(1110), &with_ts(ack(5), ms(1000)), &mut out);
        assert_eq!((s.stats.undos, s.tcb.ssthresh), (1, f64::INFINITY));
        assert_eq!((s.tcb.cwnd, s.phase()), (11.0, Phase::SlowStart));
        // Nothing was retransmitted but the head.
        assert_eq!(s.stats.retransmissions, 1);

        // Without F-RTO the same ACKs find the lost segments and retransmit them; nothing is
        // undone.
        let (mut s, mut out) = after_a_timeout_with_frto(false);
        let seqs: Vec<u32> = out.packets[11..].iter().map(|p| p.seq).collect();
        assert_eq!(seqs, [1, 2]);
        s.on_packet(ms(1110), &with_ts(ack(5), ms(1000)), &mut out);
        assert_eq!((s.stats.undos, s.phase()), (0, Phase::Loss));
        assert!(s.stats.retransmissions > 3);
    }

    #[test]
    fn frto_finds_the_loss_real_when_the_new_data_is_sacked() {
        let (mut s, mut out) = after_a_timeout_with_frto(true);
        // Step 3a: the new segment 10 is SACKed while 1 is still missing: the loss was real,
        // F-RTO ends, and the lost segments are retransmitted from 1 on.
        s.on_packet(
            ms(1200),
            &with_ts(sack_ack(1, (10, 11)), ms(1000)),
            &mut out,
        );
        assert_eq!((s.stats.undos, s.phase()), (0, Phase::Loss));
        assert_eq!(out.packets.last().unwrap().seq, 1);
    }

    #[test]
    fn a_real_loss_is_not_undone() {
        let mut s = sender(true);
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        s.on_timer(ms(1000), &mut out);
        // The ACK echoes the retransmission's timestamp: the original was lost.
        s.on_packet(ms(1100), &ack_echo(10, ms(1000)), &mut out);
        assert_eq!((s.stats.undos, s.tcb.cwnd), (0, 2.0));
    }
}
