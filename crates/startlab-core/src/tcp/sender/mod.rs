//! The sending end: what both stacks share (window, scoreboard, RTT estimator, retransmission
//! timer, pacing, handshake and transmission) and the stack that runs its ACK processing and
//! loss recovery (`StackState`: the ns-2 stack in `tcp/ns2`, Linux's in [`super::linux`]),
//! chosen once from [`TcpConfig::stack`](super::TcpConfig::stack).
//!
//! Accounting follows Linux `tcp_packets_in_flight` and RFC 6675's pipe:
//! `in_flight = packets_out - sacked_out - lost_out + retrans_out`, with `packets_out =
//! high_tx - snd_una`. With Reno and NewReno recovery nothing is SACKed, so `in_flight` is the
//! RFC 5681 FlightSize and fast recovery inflates cwnd by one segment per duplicate ACK; with SACK
//! recovery cwnd is not inflated and the pipe shrinks as segments are SACKed or deemed lost.

use super::linux::LinuxRecovery;
use super::ns2::Ns2Recovery;
use super::pacer::{pacing_rate, rate_of, Pacer, Window};
use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, SegState};
use super::{FlowSize, Outbox, Pacing, Stack, TcpConfig};
use crate::cc::{Ack, CaState, CongestionControl, CwndEvent, ExitReason, LossVerdicts, Phase, Tcb};
use crate::net::{FlowId, NodeId, Packet, PacketKind, SackBlocks};
use crate::time::{Duration, Time};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(in crate::tcp) enum ConnState {
    NotStarted,
    SynSent,
    Established,
    Done,
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

/// One connection's sending end: the state both stacks share, and the stack's own.
#[derive(Debug)]
pub struct TcpSender {
    pub(in crate::tcp) conn: Connection,
    /// Chosen once from `conn.cfg.stack`.
    pub(in crate::tcp) stack: StackState,
}

/// The stack's own state: its ACK processing, loss recovery and timers beyond the RTO.
#[derive(Debug)]
pub(in crate::tcp) enum StackState {
    Ns2(Ns2Recovery),
    Linux(LinuxRecovery),
}

/// What the shared transmission path leaves to the stack.
pub(in crate::tcp) trait TransmitRules {
    /// Lost segments may go before new data (not in F-RTO's new-data round, `REXMIT_NEW`).
    fn may_retransmit(&self) -> bool;
    /// A segment has just been sent, `new_data` or a retransmission, with `prior_packets` out
    /// before it: the stack's timer rule and counters.
    fn on_transmit(&mut self, c: &mut Connection, now: Time, new_data: bool, prior_packets: u32);
    /// The first unacknowledged segment went again within the window.
    fn on_head_retransmitted(&mut self, c: &mut Connection, now: Time);
    /// New data went in this round of [`Connection::try_send`].
    fn on_new_data_sent(&mut self, c: &mut Connection, now: Time);
}

/// The state both stacks share.
#[derive(Debug)]
pub(in crate::tcp) struct Connection {
    pub flow: FlowId,
    pub node: NodeId,
    pub peer: NodeId,
    pub cfg: TcpConfig,
    pub size: FlowSize,
    pub tcb: Tcb,
    pub cc: Box<dyn CongestionControl>,
    pub state: ConnState,
    /// What is known of every segment between `snd_una` and `high_tx`.
    pub board: Scoreboard,
    pub rtt: RttEstimator,
    pub rto_deadline: Option<Time>,
    pub pacer: Pacer,
    pub syn_sent_at: Option<Time>,
    pub syn_retransmitted: bool,
    pub delivered_time: Time,
    pub start_time: Time,
    pub stats: SenderStats,
    /// When the last segment of a finite flow was acknowledged.
    pub completed_at: Option<Time>,
    /// When the application closed the connection before it completed ([`TcpSender::stop`]).
    pub stopped_at: Option<Time>,
    pub ss_exit: Option<SlowStartExit>,
    /// Set when the segments acked by the last ACK included retransmissions (for tests / traces).
    pub last_rtt_sample: Option<Duration>,
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
        let stack = match cfg.stack {
            Stack::Ns2 { recovery } => StackState::Ns2(Ns2Recovery::new(recovery)),
            Stack::Linux => StackState::Linux(LinuxRecovery::default()),
        };
        TcpSender {
            conn: Connection {
                flow,
                node,
                peer,
                size,
                tcb,
                cc,
                state: ConnState::NotStarted,
                board: Scoreboard::default(),
                rtt,
                rto_deadline: None,
                pacer: Pacer::default(),
                syn_sent_at: None,
                syn_retransmitted: false,
                delivered_time: start_time,
                start_time,
                stats: SenderStats::default(),
                completed_at: None,
                stopped_at: None,
                ss_exit: None,
                last_rtt_sample: None,
                cfg,
            },
            stack,
        }
    }

    // ----- observation -------------------------------------------------------------------

    /// The controller's view of the connection (cwnd, ssthresh, RTT, pacing rate).
    pub fn tcb(&self) -> &Tcb {
        &self.conn.tcb
    }

    pub fn stats(&self) -> &SenderStats {
        &self.conn.stats
    }

    /// When the application opened the connection.
    pub fn start_time(&self) -> Time {
        self.conn.start_time
    }

    /// When the last segment of a finite flow was acknowledged.
    pub fn completed_at(&self) -> Option<Time> {
        self.conn.completed_at
    }

    pub fn ss_exit(&self) -> Option<SlowStartExit> {
        self.conn.ss_exit
    }

    /// Segments in the network (see the module docs).
    pub fn in_flight(&self) -> u32 {
        self.conn.in_flight()
    }

    pub fn phase(&self) -> Phase {
        let c = &self.conn;
        match (c.state, c.tcb.ca_state) {
            (ConnState::Done, _) => Phase::Closed,
            (_, CaState::Recovery) => Phase::Recovery,
            (_, CaState::Loss) => Phase::Loss,
            (_, CaState::Cwr) => Phase::Cwr,
            (_, CaState::Disorder) if matches!(self.stack, StackState::Linux(_)) => Phase::Disorder,
            _ if c.cc.in_startup(&c.tcb) => Phase::SlowStart,
            _ => Phase::CongestionAvoidance,
        }
    }

    /// The sending host.
    pub fn node(&self) -> NodeId {
        self.conn.node
    }

    /// The receiving host.
    pub fn peer(&self) -> NodeId {
        self.conn.peer
    }

    pub fn is_done(&self) -> bool {
        self.conn.state == ConnState::Done
    }

    pub fn is_started(&self) -> bool {
        self.conn.state != ConnState::NotStarted
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.conn.rtt.srtt()
    }

    pub fn rto(&self) -> Duration {
        self.conn.rtt.rto()
    }

    pub fn last_rtt_sample(&self) -> Option<Duration> {
        self.conn.last_rtt_sample
    }

    pub fn size(&self) -> FlowSize {
        self.conn.size
    }

    /// When the sender next needs [`TcpSender::on_timer`].
    pub fn next_timer(&self) -> Option<Time> {
        let c = &self.conn;
        let t = first(c.rto_deadline, c.pacer.deadline());
        match &self.stack {
            StackState::Linux(l) if c.state == ConnState::Established => {
                // With data out, one of Linux's timers holds the retransmission timer.
                debug_assert!(
                    !(c.packets_out() > 0 && c.rto_deadline.is_none() && l.timers().is_none()),
                    "data out and no timer"
                );
                first(t, l.timers())
            }
            _ => t,
        }
    }

    // ----- events --------------------------------------------------------------------------

    /// The application opens the connection and starts writing.
    pub fn start(&mut self, now: Time, out: &mut Outbox) {
        let c = &mut self.conn;
        debug_assert_eq!(c.state, ConnState::NotStarted);
        if c.cfg.handshake {
            c.state = ConnState::SynSent;
            c.syn_sent_at = Some(now);
            out.packets.push(c.control(PacketKind::Syn));
            c.rto_deadline = Some(now + c.rtt.rto());
        } else {
            self.establish(now, out);
        }
    }

    fn establish(&mut self, now: Time, out: &mut Outbox) {
        let c = &mut self.conn;
        c.state = ConnState::Established;
        c.rto_deadline = None;
        c.cc.init(&mut c.tcb, now);
        c.cc.cwnd_event(&mut c.tcb, CwndEvent::TxStart, now);
        if let (Pacing::InitialSpreading, Some(srtt)) = (c.cfg.pacing, c.rtt.srtt()) {
            // One segment every RTT / IW (Sallantin et al. 2013 §III.C: "one packet is sent every RTT/10").
            let iw = c.cfg.initial_window.max(1) as f64;
            c.tcb.pacing_rate = Some(rate_of(iw * c.tcb.wire_bytes as f64, srtt));
        }
        c.update_pacing();
        if c.size.segments == 0 {
            c.finish(now);
            return;
        }
        self.try_send(now, out);
    }

    /// An ACK or SYN-ACK for this connection arrived.
    pub fn on_packet(&mut self, now: Time, pkt: &Packet, out: &mut Outbox) {
        let c = &mut self.conn;
        match (pkt.kind, c.state) {
            (PacketKind::SynAck, ConnState::SynSent) => {
                // The handshake gives the first RTT sample (unless the SYN was retransmitted).
                if !c.syn_retransmitted {
                    let r = now - c.syn_sent_at.expect("SYN sent");
                    c.take_rtt_sample(r);
                }
                c.tcb.rwnd = pkt.rwnd_segments;
                self.establish(now, out);
            }
            (PacketKind::Ack, ConnState::Established) => match &mut self.stack {
                StackState::Ns2(s) => s.on_ack(c, now, pkt, out),
                StackState::Linux(l) => l.on_ack(c, now, pkt, out),
            },
            _ => {}
        }
    }

    /// A timer returned by [`TcpSender::next_timer`] is due.
    pub fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        if let StackState::Linux(l) = &mut self.stack {
            if self.conn.state == ConnState::Established {
                l.on_timers(&mut self.conn, now, out);
            }
        }
        if matches!(self.conn.rto_deadline, Some(d) if d <= now) {
            self.on_rto(now, out);
        }
        if self.conn.pacer.due(now) {
            self.try_send(now, out);
        }
    }

    fn on_rto(&mut self, now: Time, out: &mut Outbox) {
        let c = &mut self.conn;
        match c.state {
            ConnState::SynSent => {
                c.syn_retransmitted = true;
                c.rtt.back_off();
                out.packets.push(c.control(PacketKind::Syn));
                c.rto_deadline = Some(now + c.rtt.rto());
                return;
            }
            ConnState::Established if c.packets_out() > 0 => {}
            _ => {
                c.rto_deadline = None;
                return;
            }
        }
        match &mut self.stack {
            StackState::Ns2(s) => s.on_rto(c, now, out),
            StackState::Linux(l) => l.on_rto(c, now, out),
        }
    }

    fn try_send(&mut self, now: Time, out: &mut Outbox) {
        match &mut self.stack {
            StackState::Ns2(s) => self.conn.try_send(s, now, out),
            StackState::Linux(l) => self.conn.try_send(l, now, out),
        }
    }

    /// The application closes the connection at `now` (a flow's `stop`): nothing more is sent
    /// or retransmitted and later ACKs are ignored. Returns false if it had already completed.
    pub fn stop(&mut self, now: Time) -> bool {
        let c = &mut self.conn;
        if c.state == ConnState::Done {
            return false;
        }
        c.finish(now);
        c.completed_at = None;
        c.stopped_at = Some(now);
        true
    }

    /// Why the controller stopped working, if it did (`CongestionControl::error`).
    pub fn controller_error(&self) -> Option<String> {
        self.conn.cc.error()
    }

    /// The controller's loss verdicts, if it classifies losses (BLAST).
    pub fn loss_verdicts(&self) -> Option<LossVerdicts> {
        self.conn.cc.loss_verdicts()
    }

    /// When the connection completed or was stopped, if it has.
    pub fn closed_at(&self) -> Option<Time> {
        self.conn.completed_at.or(self.conn.stopped_at)
    }
}

/// The earlier of two optional deadlines.
fn first(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Connection {
    // ----- observation -------------------------------------------------------------------

    pub fn packets_out(&self) -> u32 {
        self.tcb.high_tx - self.tcb.snd_una
    }

    /// DupThresh of RFC 6675's IsLost, within the three SACKed segments the scoreboard keeps.
    pub fn dupthresh(&self) -> usize {
        self.cfg.dupack_threshold.clamp(1, 3) as usize
    }

    /// Segments in the network (see the module docs).
    pub fn in_flight(&self) -> u32 {
        self.board.in_flight(self.packets_out())
    }

    // ----- events --------------------------------------------------------------------------

    pub fn take_rtt_sample(&mut self, r: Duration) {
        // RFC 6298, or Linux's estimator when configured (the handshake's sample too).
        self.rtt
            .on_sample_linux(r, self.tcb.snd_una, self.tcb.high_tx);
        self.tcb.srtt = self.rtt.srtt();
        self.tcb.latest_rtt = Some(r);
        self.tcb.min_rtt = Some(self.tcb.min_rtt.map_or(r, |m| m.min(r)));
        self.last_rtt_sample = Some(r);
    }

    /// Sets the pacing rate of the `Window` and `Linux` modes from cwnd and srtt.
    pub fn update_pacing(&mut self) {
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

    pub fn finish(&mut self, now: Time) {
        self.state = ConnState::Done;
        self.completed_at = Some(now);
        self.rto_deadline = None;
        self.pacer.stop();
        self.tcb.in_flight = 0;
    }

    /// The controller's window growth for an ACK for `ack` that delivered `delivered` segments.
    pub fn cong_avoid(&mut self, delivered: u32, ack: u32, now: Time) {
        let ack = Ack {
            acked: delivered,
            ack_seq: ack,
        };
        self.cc.cong_avoid(&mut self.tcb, &ack, now);
    }

    pub fn set_ca_state(&mut self, new: CaState, now: Time) {
        if new != self.tcb.ca_state {
            self.cc.set_state(&mut self.tcb, new, now);
            self.tcb.ca_state = new;
        }
    }

    pub fn note_slow_start_exit(&mut self, now: Time, reason: ExitReason) {
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
    fn next_segment(&mut self, may_retransmit: bool) -> Option<u32> {
        if self.board.lost_out > self.board.retrans_out && may_retransmit {
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

    /// Sends what the window, the receiver's window and the pacer allow, retransmissions first.
    pub fn try_send<S: TransmitRules>(&mut self, stack: &mut S, now: Time, out: &mut Outbox) {
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
            let Some(seq) = self.next_segment(stack.may_retransmit()) else {
                // Out of data, or held back by the receiver's window.
                self.tcb.cwnd_limited = false;
                break;
            };
            if self.pacer.hold(now, self.tcb.pacing_rate) {
                break;
            }
            let head_again = seq == self.tcb.snd_una && seq < self.tcb.high_tx;
            self.transmit(stack, seq, now, out, false);
            sent_new |= seq + 1 == self.tcb.high_tx;
            if head_again {
                stack.on_head_retransmitted(self, now);
            }
        }
        self.tcb.in_flight = self.in_flight();
        if sent_new {
            stack.on_new_data_sent(self, now);
        }
    }

    pub fn retransmit_now<S: TransmitRules>(
        &mut self,
        stack: &mut S,
        seq: u32,
        now: Time,
        out: &mut Outbox,
    ) {
        self.transmit(stack, seq, now, out, true);
        self.tcb.in_flight = self.in_flight();
    }

    /// Sends segment `seq`. Only fast retransmits, partial-ACK and timeout retransmissions are
    /// `forced` past the window; everything else must fit in it.
    pub fn transmit<S: TransmitRules>(
        &mut self,
        stack: &mut S,
        seq: u32,
        now: Time,
        out: &mut Outbox,
        forced: bool,
    ) {
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
        if new_data {
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
        }
        self.stats.sent_packets += 1;
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
        stack.on_transmit(self, now, new_data, prior_packets);
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

    pub fn control(&self, kind: PacketKind) -> Packet {
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

#[cfg(test)]
pub(in crate::tcp) mod tests;
