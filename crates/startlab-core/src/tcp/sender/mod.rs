//! The sending end: the state both stacks share ([`Connection`]) and the stack that runs its
//! ACK processing and loss recovery (`StackState`: the ns-2 stack in `tcp/ns2`, Linux's in
//! [`super::linux`]), chosen once from [`TcpConfig::stack`](super::TcpConfig::stack); each
//! event is dispatched to the stack by one `match`.

pub use super::connection::{SenderStats, SlowStartExit, CWND_CLAMP_SEGMENTS};
pub use app::RequestRecord;

mod app;

use self::app::RequestApp;

use super::connection::{ConnState, Connection};
use super::linux::LinuxRecovery;
use super::ns2::Ns2Recovery;
use super::pacer::{rate_of, Pacer};
use super::path_cache::{rto_from_cached_rtt, ClosingState, LinuxMetrics};
use super::rate::DeliveryRate;
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::send_queue::SendQueue;
use super::{FlowSize, Outbox, Pacing, Stack, TcpConfig};
use crate::cc::{CaState, CongestionControl, LossVerdicts, ModelState, Phase, Tcb};
use crate::net::{FlowId, NodeId, Packet, PacketKind};
use crate::time::{Duration, Time};
use crate::traffic::RequestDraws;

/// One connection's sending end: the state both stacks share, and the stack's own.
#[derive(Debug)]
pub struct TcpSender {
    pub(in crate::tcp) conn: Connection,
    /// Chosen once from `conn.cfg.stack`.
    pub(in crate::tcp) stack: StackState,
    /// An application that writes responses one at a time (`None`: a bulk flow, written whole
    /// at the start).
    app: Option<Box<RequestApp>>,
    /// What earlier connections to the same host left (`tcp.metrics`), read when this one is
    /// established (`tcp_init_metrics`).
    cached: Option<LinuxMetrics>,
}

/// The stack's own state: its ACK processing, loss recovery and timers beyond the RTO.
#[derive(Debug)]
pub(in crate::tcp) enum StackState {
    Ns2(Ns2Recovery),
    Linux(LinuxRecovery),
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
        let mut tcb = Tcb::new(
            cfg.mss_bytes,
            wire,
            cfg.initial_window as f64,
            cfg.initial_ssthresh,
        );
        tcb.ecn = cfg.ecn;
        tcb.pacing_ratios = cfg.pacing_ratios;
        tcb.reordering = cfg.dupack_threshold;
        (tcb.node, tcb.peer, tcb.flow) = (node, peer, flow);
        let rtt = RttEstimator::new(
            cfg.initial_rto,
            cfg.min_rto,
            cfg.max_rto,
            cfg.clock_granularity,
        )
        .with_algorithm(cfg.rto_algorithm);
        let owns_cwnd = cc.has_cong_control();
        let mut board = Scoreboard::default();
        board.lost_log = cc.wants_lost_segments().then(Vec::new);
        let stack = match cfg.stack {
            Stack::Ns2 { recovery } => StackState::Ns2(Ns2Recovery::new(recovery)),
            Stack::Linux => StackState::Linux(LinuxRecovery::default()),
        };
        TcpSender {
            conn: Connection {
                flow,
                node,
                peer,
                send: SendQueue::bulk(size, cfg.mss_bytes),
                tcb,
                cc,
                state: ConnState::NotStarted,
                board,
                rtt,
                rto_deadline: None,
                pacer: Pacer::default(),
                syn_sent_at: None,
                syn_retransmitted: false,
                rate: DeliveryRate::default(),
                owns_cwnd,
                start_time,
                stats: SenderStats::default(),
                completed_at: None,
                stopped_at: None,
                ss_exit: None,
                last_rtt_sample: None,
                ecn_queue_cwr: false,
                cfg,
            },
            stack,
            app: None,
            cached: None,
        }
    }

    /// The metrics earlier connections to the same host left, as the connection opens; applied
    /// when it is established (`tcp.metrics`).
    pub fn set_cached_metrics(&mut self, cached: LinuxMetrics) {
        self.cached = Some(cached);
    }

    /// Whether the connection reads and leaves Linux's TCP metrics.
    pub fn uses_metrics(&self) -> bool {
        self.conn.cfg.metrics
    }

    /// Whether the controller resumes from saved path state (Careful Resume).
    pub fn resumes(&self) -> bool {
        self.conn.cc.resumes()
    }

    /// The saved state of the connection's path, before it opens.
    pub fn resume_from(&mut self, saved: crate::tcp::path_cache::ResumeState) {
        self.conn.cc.resume_from(saved);
    }

    /// What the connection leaves of its path for later ones when it closes.
    /// The socket goes away: the controller's `release`.
    pub fn release(&mut self, now: Time) {
        self.conn.cc.release(&mut self.conn.tcb, now);
    }

    pub fn path_observation(&self, now: Time) -> crate::cc::PathObservation {
        self.conn.cc.path_observation(&self.conn.tcb, now)
    }

    /// Whether it saves ssthresh among them (`tcp.metrics_ssthresh`).
    pub fn saves_ssthresh_metrics(&self) -> bool {
        self.conn.cfg.metrics_ssthresh
    }

    /// What `tcp_update_metrics` reads when the connection closes.
    pub fn closing_state(&self) -> ClosingState {
        let c = &self.conn;
        let us = |d: Duration| d.as_nanos() / 1000;
        ClosingState {
            srtt_us8: c.rtt.srtt().map_or(0, |d| us(d) * 8),
            mdev_us4: us(c.rtt.mdev4()),
            backed_off: c.rtt.backoff() > 0,
            cwnd: c.tcb.cwnd.max(0.0).floor().min(u32::MAX as f64) as u32,
            ssthresh: c
                .tcb
                .ssthresh
                .is_finite()
                .then(|| c.tcb.ssthresh.max(0.0).min(u32::MAX as f64) as u32),
            ca_open_and_avoiding: !c.tcb.in_slow_start() && c.tcb.ca_state == CaState::Open,
        }
    }

    /// The same connection under an application that writes responses as `draws` gives them
    /// (its flow size is theirs).
    pub fn with_requests(mut self, draws: RequestDraws) -> Self {
        self.conn.send = SendQueue::empty(self.conn.cfg.mss_bytes);
        self.app = Some(Box::new(RequestApp::new(draws)));
        self
    }

    /// The responses written so far, if the connection has a request application.
    pub fn requests(&self) -> Option<&[RequestRecord]> {
        self.app.as_ref().map(|a| a.records.as_slice())
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

    /// The delivery rate TCP_INFO would report (`tcpi_delivery_rate`): the last sample not
    /// application-limited, or the fastest that is, in payload bits per second.
    pub fn delivery_rate(&self) -> Option<crate::units::Rate> {
        let r = self.conn.tcb.delivery_rate?;
        let ns = r.interval.as_nanos().max(1) as u128;
        let bits = r.delivered as u128 * self.conn.tcb.mss_bytes as u128 * 8;
        Some(crate::units::Rate::from_bps(
            (bits * 1_000_000_000 / ns).min(u64::MAX as u128) as u64,
        ))
    }

    /// What a model-based controller (BBR) shows of its model.
    pub fn model_state(&self) -> Option<ModelState> {
        self.conn.cc.model_state(&self.conn.tcb)
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

    /// Payload bytes the application writes in all, once known (`None` for an unlimited flow,
    /// or an application still writing).
    pub fn total_bytes(&self) -> Option<u64> {
        self.conn.send.total_bytes()
    }

    /// When the sender next needs [`TcpSender::on_timer`].
    pub fn next_timer(&self) -> Option<Time> {
        let c = &self.conn;
        let t = first(c.rto_deadline, c.pacer.deadline());
        let t = first(t, self.app.as_ref().and_then(|a| a.next_write));
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
        debug_assert_eq!(self.conn.state, ConnState::NotStarted);
        let c = &mut self.conn;
        if c.cfg.handshake {
            c.state = ConnState::SynSent;
            c.syn_sent_at = Some(now);
            c.tcb.control_segs_out += 1;
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
        // tcp_init_transfer: the idle clock starts at establishment; tcp_init_metrics reads what
        // earlier connections left, before the controller's init.
        c.tcb.lsndtime = now;
        if let (Some(m), true) = (&self.cached, c.cfg.metrics) {
            if c.cfg.metrics_ssthresh && m.ssthresh > 0 {
                c.tcb.ssthresh = m.ssthresh as f64;
            }
            let srtt_us8 = c.rtt.srtt().map_or(0, |d| d.as_nanos() / 1000 * 8);
            if m.rtt_us8 > srtt_us8 {
                let hz = (1_000_000_000 / c.cfg.clock_granularity.as_nanos().max(1)) as u32;
                c.rtt
                    .set_rto(rto_from_cached_rtt(m.rtt_us8, c.cfg.min_rto, hz));
            }
        }
        c.sync_rtt();
        c.cc.init(&mut c.tcb, now);
        // The application's first write finds nothing queued (tcp_sendmsg).
        c.check_app_limited();
        if let (Pacing::InitialSpreading, Some(srtt)) = (c.cfg.pacing, c.rtt.srtt()) {
            // One segment every RTT / IW (Sallantin et al. 2013 §III.C: "one packet is sent every RTT/10").
            let iw = c.cfg.initial_window.max(1) as f64;
            c.tcb.pacing_rate = Some(rate_of(iw * c.tcb.wire_bytes as f64, srtt));
        }
        c.update_pacing();
        // A server writes its first response once the connection is open (a blocking
        // connect() returns), as the kernel world's application does.
        self.write_next(now);
        let c = &mut self.conn;
        if c.send.all_acked(0) {
            c.finish(now);
            return;
        }
        self.try_send(now, out);
    }

    /// The application writes its next response (`tcp_sendmsg`): a connection that was idle
    /// may restart its window first (`tcp_slow_start_after_idle_check`, RFC 5681 §4.1).
    fn write_next(&mut self, now: Time) {
        let Some(app) = self.app.as_mut() else { return };
        app.next_write = None;
        let Some(bytes) = app.draws.next_size() else {
            return;
        };
        let c = &mut self.conn;
        debug_assert_eq!(c.state, ConnState::Established);
        let idle = if app.records.is_empty() {
            Duration::ZERO
        } else {
            now.saturating_since(c.tcb.lsndtime)
        };
        let restarted = match &mut self.stack {
            StackState::Linux(l) => l.on_write(c, now),
            StackState::Ns2(_) => super::ns2::restart_after_idle(c, now),
        };
        let (_, end) = c.send.write(bytes, app.draws.drew_last());
        app.end = end;
        app.records.push(RequestRecord {
            index: app.records.len() as u32,
            bytes,
            written_at: now,
            completed_at: None,
            cwnd: c.tcb.cwnd,
            ssthresh: c.tcb.ssthresh,
            idle,
            restarted,
        });
        // The write finds the connection with nothing queued (tcp_rate_check_app_limited in
        // tcp_sendmsg).
        c.check_app_limited();
    }

    /// After an ACK: the response in progress is complete once its last byte is acknowledged;
    /// the next is written a think time later.
    fn check_request_done(&mut self, now: Time) {
        let Some(app) = self.app.as_mut() else { return };
        let acked = self.conn.tcb.snd_una >= app.end;
        if !acked {
            return;
        }
        let Some(r) = app.in_progress() else { return };
        r.completed_at = Some(now);
        if !app.draws.drew_last() {
            app.next_write = Some(now + app.draws.next_think());
        }
    }

    /// An ACK or SYN-ACK for this connection arrived.
    pub fn on_packet(&mut self, now: Time, pkt: &Packet, out: &mut Outbox) {
        let c = &mut self.conn;
        c.tcb.segs_in += 1;
        match (pkt.kind, c.state) {
            (PacketKind::SynAck, ConnState::SynSent) => {
                // The handshake gives the first RTT sample (unless the SYN was retransmitted).
                if !c.syn_retransmitted {
                    let r = now - c.syn_sent_at.expect("SYN sent");
                    c.take_rtt_sample(r);
                }
                c.tcb.rwnd = pkt.rwnd_segments;
                // The SYN is acknowledged: tcp_ack clears the timeouts' count.
                c.tcb.rto_retransmits = 0;
                self.establish(now, out);
            }
            (PacketKind::Ack, ConnState::Established) => {
                // tcp_ack stamps every ACK that is neither old nor beyond what was sent, and one
                // that advances snd_una clears the timeouts' count, on either stack.
                if (c.tcb.snd_una..=c.tcb.high_tx).contains(&pkt.seq) {
                    c.tcb.rcv_tstamp = now;
                    if pkt.seq > c.tcb.snd_una {
                        c.tcb.rto_retransmits = 0;
                    }
                }
                match &mut self.stack {
                    StackState::Ns2(s) => s.on_ack(c, now, pkt, out),
                    StackState::Linux(l) => l.on_ack(c, now, pkt, out),
                }
                self.check_request_done(now);
            }
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
        let write_due = self
            .app
            .as_ref()
            .is_some_and(|a| a.next_write.is_some_and(|t| t <= now));
        if write_due && self.conn.state == ConnState::Established {
            self.write_next(now);
            self.try_send(now, out);
        } else if self.conn.pacer.due(now) {
            self.try_send(now, out);
        }
    }

    fn on_rto(&mut self, now: Time, out: &mut Outbox) {
        let c = &mut self.conn;
        match c.state {
            ConnState::SynSent => {
                // tcp_retransmit_timer counts a SYN's timeouts too (tcp_update_rto_stats).
                c.count_rto();
                c.syn_retransmitted = true;
                c.rtt.back_off();
                c.sync_rtt();
                c.tcb.control_segs_out += 1;
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
        if let Some(app) = self.app.as_mut() {
            app.next_write = None;
        }
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

#[cfg(test)]
pub(in crate::tcp) mod tests;
