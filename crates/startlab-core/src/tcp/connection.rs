//! What both TCP stacks share on the sending side: the connection's window, scoreboard, RTT
//! estimator, retransmission timer, pacing, handshake and transmission ([`Connection`]), and
//! what its transmission path leaves to the stack ([`TransmitRules`]). It imports neither stack:
//! the stacks (`tcp/ns2`, `tcp/linux`) build on it, and [`super::sender`] holds one of them.
//!
//! Accounting follows Linux `tcp_packets_in_flight` and RFC 6675's pipe:
//! `in_flight = packets_out - sacked_out - lost_out + retrans_out`, with `packets_out =
//! high_tx - snd_una`. With Reno and NewReno recovery nothing is SACKed, so `in_flight` is the
//! RFC 5681 FlightSize and fast recovery inflates cwnd by one segment per duplicate ACK; with SACK
//! recovery cwnd is not inflated and the pipe shrinks as segments are SACKed or deemed lost.

use super::pacer::{pacing_rate, Pacer, Window};
use super::rate::{self, AckedCounts, DeliveryRate, Sampling};
use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, SegState};
use super::send_queue::SendQueue;
use super::{Outbox, Pacing, Stack, TcpConfig};
use crate::cc::{Ack, CaState, CongestionControl, CwndEvent, ExitReason, Tcb};
use crate::net::{Ecn, FlowId, NodeId, Packet, PacketKind, SackBlocks};
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
    /// Window reductions for an ECN echo.
    pub ecn_reductions: u64,
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
    /// A round of [`Connection::try_send`] sent `sent` segments and ended as `end`: the
    /// stack's account of whether the window is in use.
    fn after_round(&mut self, c: &mut Connection, now: Time, sent: u32, end: RoundEnd);
    /// How much new data may go now, asked before each skb's worth (the Linux stack's GSO
    /// deferral); by default, all the window allows.
    fn new_data(&mut self, _c: &Connection, _now: Time) -> NewData {
        NewData::Send(u32::MAX)
    }
}

/// A stack's verdict on the new data at the head of the send queue.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(in crate::tcp) enum NewData {
    /// Up to this many segments go (one skb), then the stack is asked again.
    Send(u32),
    /// Nothing goes until the next ACK; `cwnd_limited` if the window is what holds it.
    Defer { cwnd_limited: bool },
}

/// Why a round of [`Connection::try_send`] stopped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(in crate::tcp) enum RoundEnd {
    /// The window is full.
    WindowFull,
    /// Nothing more is written, or the receiver's window holds new data back.
    NothingToSend,
    /// The pacer holds the next segment.
    Paced,
    /// The stack holds new data back until the next ACK ([`NewData::Defer`]).
    Deferred { cwnd_limited: bool },
}

/// The state both stacks share.
#[derive(Debug)]
pub(in crate::tcp) struct Connection {
    pub flow: FlowId,
    pub node: NodeId,
    pub peer: NodeId,
    pub cfg: TcpConfig,
    /// What the application has written.
    pub send: SendQueue,
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
    /// Delivery-rate sampling (`tcp_rate.c`).
    pub rate: DeliveryRate,
    /// The controller sets cwnd and pacing itself (`CongestionControl::has_cong_control`,
    /// fixed for a controller: asked once).
    pub owns_cwnd: bool,
    pub start_time: Time,
    pub stats: SenderStats,
    /// When the last segment of a finite flow was acknowledged (everything the application
    /// wrote, once it writes nothing more).
    pub completed_at: Option<Time>,
    /// When the application closed the connection before it completed ([`TcpSender::stop`]).
    pub stopped_at: Option<Time>,
    pub ss_exit: Option<SlowStartExit>,
    /// Set when the segments acked by the last ACK included retransmissions (for tests / traces).
    pub last_rtt_sample: Option<Duration>,
    /// The next new segment carries CWR (Linux `TCP_ECN_QUEUE_CWR`).
    pub ecn_queue_cwr: bool,
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

    /// The RTT estimator into the controller's view (`srtt_us`, `mdev_us`, `icsk_rto`,
    /// `icsk_backoff`): after every sample and every back-off.
    pub fn sync_rtt(&mut self) {
        self.tcb.srtt = self.rtt.srtt();
        self.tcb.mdev4 = self.rtt.mdev4();
        self.tcb.rttvar = self.rtt.rttvar();
        self.tcb.mdev_max = self.rtt.mdev_max();
        self.tcb.rto = self.rtt.rto();
        self.tcb.backoff = self.rtt.backoff();
    }

    /// The pipe and its counters into the controller's view (`tcb.in_flight`, `sacked_out`,
    /// `lost_out`, `retrans_out`).
    pub fn sync_pipe(&mut self) {
        self.tcb.in_flight = self.in_flight();
        self.tcb.sacked_out = self.board.sacked_out;
        self.tcb.lost_out = self.board.lost_out;
        self.tcb.retrans_out = self.board.retrans_out;
    }

    // ----- events --------------------------------------------------------------------------

    pub fn take_rtt_sample(&mut self, r: Duration) {
        // RFC 6298, or Linux's estimator when configured (the handshake's sample too).
        self.rtt
            .on_sample_linux(r, self.tcb.snd_una, self.tcb.high_tx);
        self.sync_rtt();
        self.tcb.latest_rtt = Some(r);
        self.tcb.min_rtt = Some(self.tcb.min_rtt.map_or(r, |m| m.min(r)));
        self.last_rtt_sample = Some(r);
    }

    /// Sets the pacing rate of the `Window` and `Linux` modes from cwnd and srtt (not for a
    /// controller that sets its own in `cong_control`: Linux's `tcp_cong_control` returns
    /// before `tcp_update_pacing_rate`).
    pub fn update_pacing(&mut self) {
        if self.owns_cwnd {
            return;
        }
        let Some(srtt) = self.rtt.srtt() else { return };
        let window = Window {
            cwnd: self.tcb.cwnd,
            ssthresh: self.tcb.ssthresh,
            packets_out: self.packets_out(),
            wire_bytes: self.tcb.wire_bytes,
        };
        if let Some(rate) = pacing_rate(self.cfg.pacing, self.cfg.pacing_ratios, window, srtt) {
            self.tcb.pacing_rate = Some(match self.tcb.max_pacing_rate {
                Some(cap) if cap < rate => cap,
                _ => rate,
            });
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

    /// `tcp_rate_gen` then the controller's `cong_control` (`tcp_cong_control`), on every
    /// ACK: `sampling` is what the ACK's delivered segments chose, `lost_before` the losses
    /// marked before the ACK. Returns whether the controller set cwnd itself.
    pub fn cong_control(
        &mut self,
        sampling: &Sampling,
        delivered: u32,
        lost_before: u64,
        prior_in_flight: u32,
        rtt: Option<Duration>,
        now: Time,
    ) -> bool {
        self.report_lost_segments(now);
        self.tcb.lost = self.board.marked_lost;
        self.sync_pipe();
        let counts = AckedCounts {
            delivered,
            lost: (self.board.marked_lost - lost_before) as u32,
            prior_in_flight,
            rtt,
        };
        let rs = self.rate.generate(&mut self.tcb, sampling, counts, now);
        self.tcb.next_departure = self.pacer.next_departure(now);
        self.cc.cong_control(&mut self.tcb, &rs, now)
    }

    /// Tells a controller that wants it ([`CongestionControl::wants_lost_segments`]) of each
    /// segment marked lost since the last call, in marking order, with `tcb.lost` counting up
    /// to that segment as `tcp_mark_skb_lost` has it.
    pub fn report_lost_segments(&mut self, now: Time) {
        let Some(log) = self.board.lost_log.as_mut() else {
            return;
        };
        if log.is_empty() {
            return;
        }
        let marks = std::mem::take(log);
        for (seg, lost) in &marks {
            self.tcb.lost = *lost;
            self.cc.skb_marked_lost(&mut self.tcb, seg, now);
        }
        // Keep the allocation.
        let mut marks = marks;
        marks.clear();
        self.board.lost_log = Some(marks);
    }

    pub fn set_ca_state(&mut self, new: CaState, now: Time) {
        if new != self.tcb.ca_state {
            self.announce_ca_state(new, now);
        }
    }

    /// `tcp_enter_loss`'s `tcp_set_ca_state(sk, TCP_CA_Loss)`: the controller hears of every
    /// timeout, one in Loss already included.
    pub fn enter_loss_state(&mut self, now: Time) {
        self.announce_ca_state(CaState::Loss, now);
    }

    /// `tcp_set_ca_state`: the controller's `set_state`, then the new state.
    fn announce_ca_state(&mut self, new: CaState, now: Time) {
        // Losses marked on the way in (tcp_enter_loss marks before it sets the state), and the
        // scoreboard's counters as they are at this point of the ACK.
        self.tcb.lost = self.board.marked_lost;
        self.sync_pipe();
        self.cc.set_state(&mut self.tcb, new, now);
        self.tcb.ca_state = new;
    }

    /// A retransmission timeout's counters (`tcp_update_rto_stats`): the first timeout since
    /// the ACK last advanced begins an RTO recovery.
    pub fn count_rto(&mut self) {
        let t = &mut self.tcb;
        if t.rto_retransmits == 0 {
            t.total_rto_recoveries += 1;
        }
        t.rto_retransmits += 1;
        t.total_rto += 1;
    }

    pub fn note_slow_start_exit(&mut self, now: Time, reason: ExitReason) {
        // A controller with cong_control decides when its start-up ends: a loss does not end
        // BBR's Startup.
        if self.owns_cwnd && self.cc.in_startup(&self.tcb) {
            return;
        }
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
        (new < self.send.written() && self.packets_out() < self.tcb.rwnd).then_some(new)
    }

    /// Sends what the window, the receiver's window and the pacer allow, retransmissions first.
    pub fn try_send<S: TransmitRules>(&mut self, stack: &mut S, now: Time, out: &mut Outbox) {
        if self.state != ConnState::Established {
            return;
        }
        // Whatever a controller computed, the window stays within what a run can hold.
        self.tcb.cwnd = self.tcb.cwnd.min(CWND_CLAMP_SEGMENTS);
        let mut sent_new = false;
        let mut sent = 0;
        // New segments the current skb may still carry (asked of the stack when it is 0).
        let mut skb_left = 0u32;
        let end = loop {
            let cwnd = self.tcb.cwnd.floor().max(0.0) as u32;
            if self.in_flight() >= cwnd {
                break RoundEnd::WindowFull;
            }
            let Some(seq) = self.next_segment(stack.may_retransmit()) else {
                break RoundEnd::NothingToSend;
            };
            if self.pacer.hold(now, self.tcb.pacing_rate) {
                break RoundEnd::Paced;
            }
            let new_data = seq == self.tcb.high_tx;
            if new_data && skb_left == 0 {
                match stack.new_data(self, now) {
                    NewData::Send(n) => skb_left = n.max(1),
                    NewData::Defer { cwnd_limited } => break RoundEnd::Deferred { cwnd_limited },
                }
            }
            let head_again = seq == self.tcb.snd_una && seq < self.tcb.high_tx;
            self.transmit(stack, seq, now, out, false);
            if new_data {
                skb_left -= 1;
            }
            sent += 1;
            sent_new |= seq + 1 == self.tcb.high_tx;
            if head_again {
                stack.on_head_retransmitted(self, now);
            }
        };
        self.sync_pipe();
        stack.after_round(self, now, sent, end);
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
        self.sync_pipe();
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
        let in_flight = self.in_flight();
        // tcp_event_data_sent: a transmission with nothing in flight starts the controller's
        // clock again (cubictcp_cwnd_event shifts its epoch by the idle time since lsndtime).
        // The ns-2 stack tells it only when nothing at all is outstanding.
        let tx_start = match self.cfg.stack {
            Stack::Linux => in_flight == 0,
            Stack::Ns2 { .. } => prior_packets == 0,
        };
        if tx_start {
            self.cc.cwnd_event(&mut self.tcb, CwndEvent::TxStart, now);
        }
        self.tcb.lsndtime = now;
        let fresh = SegState {
            sent_at: now,
            tx: self.rate.on_send(
                &mut self.tcb,
                prior_packets,
                in_flight,
                self.board.marked_lost,
                now,
            ),
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
            s.tx = fresh.tx;
            self.stats.retransmissions += 1;
        }
        self.stats.sent_packets += 1;
        self.tcb.data_segs_out = self.stats.sent_packets;
        self.tcb.total_retrans = self.stats.retransmissions;
        let payload = self.send.payload(seq);
        let wire_bytes = payload + self.cfg.header_bytes;
        // Linux's internal pacing leaves a connection's first 10 data segments unpaced
        // (tcp_update_skb_after_send: "Original sch_fq does not pace first 10 MSS"), whether
        // the stack or a controller with cong_control set the rate.
        let linux_paced = matches!(self.cfg.pacing, Pacing::Linux)
            || (self.cfg.stack == Stack::Linux && self.owns_cwnd);
        let unpaced_start = linux_paced && self.stats.sent_packets <= 10;
        if !unpaced_start {
            self.pacer
                .on_transmit(now, self.tcb.pacing_rate, wire_bytes as u64);
        }
        // The controller's per-segment hook (tcp_update_skb_after_send), with the segment
        // counted; it may move the next departure later (tcp_wstamp_ns).
        self.sync_pipe();
        self.tcb.next_departure = self.pacer.next_departure(now);
        self.cc.on_transmit(&mut self.tcb, now);
        self.pacer.defer_to(self.tcb.next_departure);
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
            // RFC 3168 §6.1.5 (tcp_ecn_send): new data is ECT(0), retransmissions are not; CWR
            // goes on the first new segment after a reduction.
            ecn: if self.cfg.ecn && (new_data || self.cfg.ecn_ca) {
                Ecn::Ect0
            } else {
                Ecn::NotEct
            },
            ece: false,
            cwr: self.cfg.ecn && new_data && std::mem::take(&mut self.ecn_queue_cwr),
        });
    }

    /// The application has written everything there is to send (at the start: a connection
    /// opened and written to, `tcp_sendmsg`): it is application-limited if the window is not
    /// full (`tcp_rate_check_app_limited`).
    pub fn check_app_limited(&mut self) {
        self.sync_pipe();
        rate::check_app_limited(
            &mut self.tcb,
            true,
            self.board.lost_out,
            self.board.retrans_out,
        );
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
            ecn: Default::default(),
            ece: false,
            cwr: false,
        }
    }
}
