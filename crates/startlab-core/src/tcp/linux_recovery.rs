//! The sender's ACK processing and loss recovery as Linux 6.18 runs them (`recovery = "prr"`):
//! `tcp_ack`, `tcp_fastretrans_alert`, `tcp_cwnd_reduction` (PRR, RFC 6937), `tcp_enter_loss`,
//! RACK-TLP (RFC 8985, `tcp_recovery.c`) and the tail-loss probe (`tcp_send_loss_probe`).
//!
//! Order on every ACK, as `tcp_ack`: SACK tagging and the cumulative ACK (RACK advances on
//! each delivered segment; RTT samples from the oldest segment acknowledged), the controller's
//! `pkts_acked`, the state machine (loss detection, entering and leaving Recovery), then
//! `tcp_cong_control`: PRR while in CWR or Recovery, the controller's `cong_avoid` when the
//! cumulative ACK advanced otherwise; then retransmissions before new data.

use super::linux_undo::{AckFlags, LinuxUndo, Rexmit};
use super::*;
use crate::tcp::rack::{self, ReoWndInputs};
use crate::tcp::LossDetection;

/// Linux's per-connection recovery state beyond the scoreboard.
#[derive(Clone, Debug, Default)]
pub(super) struct LinuxRecovery {
    /// `snd_nxt` when the current recovery, CWR or loss episode began (`high_seq`).
    pub high_seq: u32,
    /// PRR (RFC 6937 §3): data delivered and sent since recovery began.
    pub prr_delivered: u64,
    pub prr_out: u64,
    pub rack: rack::Rack,
    /// Which of the RTO, RACK's reordering timer and the loss probe holds the connection's one
    /// retransmission timer (`icsk_pending`): arming one replaces the others.
    pub slot: XmitTimer,
    /// The RACK reordering timer (`ICSK_TIME_REO_TIMEOUT`).
    pub reo_deadline: Option<Time>,
    /// The tail-loss probe timer (`ICSK_TIME_LOSS_PROBE`) and the probe in flight
    /// (`tlp_high_seq`, `tlp_retrans`).
    pub tlp_deadline: Option<Time>,
    pub tlp_high_seq: Option<u32>,
    pub tlp_retrans: bool,
    /// Timeouts since the cumulative ACK last advanced (`icsk_retransmits`).
    pub rto_retransmits: u32,
    /// Undo and F-RTO.
    pub undo: LinuxUndo,
    /// F-RTO step 2b: this transmission round sends new data only (`REXMIT_NEW`).
    pub new_data_only: bool,
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

/// What the segments an ACK delivered tell (`tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`).
#[derive(Default)]
struct Delivery {
    /// Most recently sent segment delivered (rate sample).
    newest: Option<SegState>,
    /// Send times of the first and last never-retransmitted segments cumulatively acknowledged
    /// (`first_ackt`, `last_ackt`) and SACKed (`first_sackt`, `last_sackt`).
    first_ackt: Option<Time>,
    last_ackt: Option<Time>,
    first_sackt: Option<Time>,
    last_sackt: Option<Time>,
    /// Retransmitted data was cumulatively acknowledged (`FLAG_RETRANS_DATA_ACKED`).
    retrans_acked: bool,
    /// A never-retransmitted segment below the highest SACKed one was delivered: reordering.
    reordered: bool,
    /// A never-retransmitted segment sent before `high_seq` was delivered
    /// (`FLAG_ORIG_SACK_ACKED`).
    orig_acked: bool,
}

impl Delivery {
    fn note(&mut self, s: &SegState) {
        if self.newest.map_or(true, |n| s.sent_at >= n.sent_at) {
            self.newest = Some(*s);
        }
    }
}

/// `TCP_TIMEOUT_MIN`: two jiffies added to the RACK and TLP timers.
fn two_jiffies(g: Duration) -> Duration {
    g * 2
}

impl TcpSender {
    pub(super) fn in_cwnd_reduction(&self) -> bool {
        matches!(self.tcb.ca_state, CaState::Cwr | CaState::Recovery)
    }

    pub(super) fn on_ack_linux(&mut self, now: Time, pkt: &Packet, out: &mut Outbox) {
        let ack = pkt.seq;
        let window_update = self.tcb.rwnd != pkt.rwnd_segments;
        self.tcb.rwnd = pkt.rwnd_segments;
        if ack < self.tcb.snd_una || ack > self.tcb.high_tx {
            return;
        }
        let una_before = self.tcb.snd_una;
        let high_seq = self.linux.high_seq;
        let prior_in_flight = self.in_flight();
        let prior_fack = self.board.highest_sacked().map_or(una_before, |h| h + 1);
        let min_rtt = self.tcb.min_rtt;
        let mut d = Delivery::default();

        // tcp_check_dsack; a D-SACKed segment counts as delivered ("A spurious retransmission
        // is delivered", tcp_dsack_seen).
        let (dup_segs, dsack_end) = if self.cfg.dsack {
            self.check_dsack(pkt, una_before)
        } else {
            (0, 0)
        };
        let rack = &mut self.linux.rack;
        let mut sacked = 0;
        if !pkt.sack.is_empty() {
            sacked = self.board.apply_sack(
                (self.tcb.snd_una, self.tcb.high_tx),
                ack,
                &pkt.sack,
                &mut |seq, s| {
                    rack.advance(now, seq, s, min_rtt);
                    d.note(s);
                    if !s.retransmitted {
                        d.first_sackt.get_or_insert(s.sent_at);
                        d.last_sackt = Some(s.sent_at);
                        d.reordered |= seq < prior_fack;
                        d.orig_acked |= seq < high_seq;
                    }
                },
            );
        }
        let advanced = ack > una_before;
        let mut acked = 0;
        if advanced {
            let any_sacked = self.board.sacked_out > 0;
            acked = self.board.advance(una_before, ack, &mut |seq, s| {
                rack.advance(now, seq, s, min_rtt);
                d.note(s);
                if s.retransmitted {
                    d.retrans_acked = true;
                } else {
                    d.first_ackt.get_or_insert(s.sent_at);
                    d.last_ackt = Some(s.sent_at);
                    d.orig_acked |= seq < high_seq;
                    // "Non-retransmitted hole got filled? That's reordering."
                    d.reordered |= any_sacked && seq < prior_fack;
                }
            });
            self.tcb.snd_una = ack;
            self.linux.rto_retransmits = 0;
        }
        self.linux.rack.reord_seen |= d.reordered;
        let delivered = sacked + acked + dup_segs;
        if delivered > 0 {
            self.tcb.delivered += delivered as u64;
            self.delivered_time = now;
        }

        // tcp_clean_rtx_queue + tcp_ack_update_rtt: SRTT from the oldest segment newly
        // acknowledged (none if a retransmission was), else the oldest newly SACKed, else the
        // echoed timestamp; the controller's RTT and min_rtt from the newest.
        let since = |t: Option<Time>| t.map(|t| now.saturating_since(t));
        let (mut seq_rtt, mut ca_rtt) = if d.retrans_acked {
            (None, None)
        } else {
            (since(d.first_ackt), since(d.last_ackt))
        };
        if d.first_sackt.is_some() {
            seq_rtt = seq_rtt.or(since(d.first_sackt));
            ca_rtt = since(d.last_sackt);
        }
        if seq_rtt.is_none() && advanced {
            let r = now.saturating_since(pkt.ts);
            seq_rtt = Some(r);
            ca_rtt = Some(r);
        }
        self.last_rtt_sample = None;
        if let Some(r) = seq_rtt {
            self.rtt
                .on_sample_linux(r, self.tcb.snd_una, self.tcb.high_tx);
            self.tcb.srtt = self.rtt.srtt();
        }
        if let Some(c) = ca_rtt {
            self.tcb.latest_rtt = Some(c);
            self.tcb.min_rtt = Some(self.tcb.min_rtt.map_or(c, |m| m.min(c)));
            self.last_rtt_sample = Some(c);
        }
        self.tcb.in_flight = self.in_flight();
        if sacked + acked > 0 {
            let sample = AckSample {
                acked: sacked + acked,
                rtt: ca_rtt,
                prior_in_flight,
            };
            self.cc.pkts_acked(&mut self.tcb, &sample, now);
        }

        let flags = AckFlags {
            advanced,
            data_sacked: sacked > 0,
            orig_sack_acked: d.orig_acked,
            dsack: dup_segs > 0,
            dsack_tlp: dup_segs == 1 && self.linux.tlp_high_seq == Some(dsack_end),
            dupack: !advanced && !window_update && dup_segs == 0,
            ecr: pkt.ts,
        };
        self.process_tlp_ack(now, ack, &flags);

        // tcp_ack_is_dubious: a duplicate, new SACK or D-SACK information, or not Open.
        let mut newly_lost = 0;
        let mut rexmit = Rexmit::Lost;
        if !advanced || sacked > 0 || flags.dsack || self.tcb.ca_state != CaState::Open {
            if delivered == 0 && !advanced {
                self.cc.cwnd_event(&mut self.tcb, CwndEvent::DupAck, now);
            }
            (newly_lost, rexmit) = self.fastretrans_alert(now, &flags);
        }

        if !self.size.is_unlimited() && self.tcb.snd_una >= self.size.segments {
            self.finish(now);
            return;
        }

        // tcp_cong_control.
        let mut cong_controlled = false;
        if let Some(s) = d.newest.filter(|_| delivered > 0) {
            let rs = RateSample {
                delivered: self.tcb.delivered - s.delivered_at_send,
                interval: now.saturating_since(s.delivered_time_at_send),
                prior_in_flight,
                rtt: ca_rtt,
                acked: delivered,
            };
            cong_controlled = self.cc.cong_control(&mut self.tcb, &rs, now);
        }
        if !cong_controlled {
            if self.in_cwnd_reduction() {
                self.cwnd_reduction(delivered, newly_lost, advanced);
            } else if advanced {
                // tcp_may_raise_cwnd: only when the cumulative ACK advanced.
                self.cong_avoid(delivered, ack, now);
            }
        }

        if self.ss_exit.is_none()
            && self.tcb.ca_state == CaState::Open
            && !self.cc.in_startup(&self.tcb)
        {
            self.note_slow_start_exit(now, ExitReason::Threshold);
        }
        // tcp_rearm_rto on an advancing ACK (tcp_set_xmit_timer; the probe is scheduled after
        // the sends below).
        if advanced {
            self.rearm_rto(now);
        }
        self.update_pacing();
        // tcp_xmit_recovery: F-RTO's new data first; if none could go, F-RTO ends and the lost
        // segments go as usual.
        if rexmit == Rexmit::New {
            self.linux.new_data_only = true;
            self.try_send(now, out);
            self.linux.new_data_only = false;
            if self.tcb.high_tx <= self.linux.high_seq {
                self.linux.undo.frto = false;
            }
        }
        self.try_send(now, out);
        if advanced {
            self.schedule_loss_probe(now, true);
        }
    }

    /// `tcp_fastretrans_alert` with RACK: returns the segments newly deemed lost and what
    /// `tcp_process_loss` asks to send.
    fn fastretrans_alert(&mut self, now: Time, f: &AckFlags) -> (u32, Rexmit) {
        let una = self.tcb.snd_una;
        // D. State exit: everything sent before the episode is acknowledged.
        if self.tcb.ca_state == CaState::Open {
            self.linux.undo.retrans_stamp = None;
        } else if una >= self.linux.high_seq {
            match self.tcb.ca_state {
                CaState::Cwr if una != self.linux.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_ca_state(CaState::Open, now);
                }
                CaState::Recovery => {
                    // tcp_try_undo_recovery opens, then tcp_end_cwnd_reduction.
                    self.try_undo_recovery(f.ecr, now);
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        // E. Process the state.
        match self.tcb.ca_state {
            CaState::Recovery => {
                if f.advanced && self.try_undo_partial(f.ecr, now) {
                    return (0, Rexmit::None);
                }
                if self.try_undo_dsack() {
                    self.try_keep_open(now);
                }
                let (lost, _) = self.identify_loss(now);
                // Undo reverted the state: a new recovery if loss is evident.
                if self.tcb.ca_state != CaState::Recovery && self.board.lost_out > 0 {
                    self.enter_recovery_linux(now);
                }
                return (lost, Rexmit::Lost);
            }
            CaState::Loss => {
                let rexmit = self.process_loss(f, now);
                let (lost, lost_retrans) = self.identify_loss(now);
                // "Change state if cwnd is undone or retransmits are lost."
                if !(self.tcb.ca_state == CaState::Open || lost_retrans) {
                    return (lost, rexmit);
                }
            }
            _ => {}
        }
        if matches!(self.tcb.ca_state, CaState::Open | CaState::Disorder) {
            self.try_undo_dsack();
        }
        let (lost, _) = self.identify_loss(now);
        // tcp_time_to_recover: loss detection marked something lost.
        if self.board.lost_out == 0 {
            self.try_to_open(now);
            return (lost, Rexmit::Lost);
        }
        self.enter_recovery_linux(now);
        (lost, Rexmit::Lost)
    }

    /// `tcp_identify_packet_loss`: RACK, or RFC 6675's IsLost with `loss_detection =
    /// "dupthresh"`. Returns (newly lost, a retransmission among them).
    fn identify_loss(&mut self, now: Time) -> (u32, bool) {
        match self.cfg.loss_detection {
            LossDetection::Rack { .. } => {
                let reo = self.linux.rack.reo_wnd(ReoWndInputs {
                    recovering: matches!(self.tcb.ca_state, CaState::Recovery | CaState::Loss),
                    sacked_out: self.board.sacked_out,
                    reordering: self.cfg.dupack_threshold,
                    min_rtt: self.tcb.min_rtt,
                    srtt: self.rtt.srtt(),
                });
                let d = self
                    .linux
                    .rack
                    .detect_loss(now, &mut self.board, self.tcb.snd_una, reo);
                if let Some(t) = d.timer {
                    // tcp_rack_mark_lost: usecs_to_jiffies(timeout) + TCP_TIMEOUT_MIN, from the
                    // current jiffy, in the retransmission timer's slot: the RTO stops.
                    let g = self.cfg.clock_granularity.as_nanos().max(1);
                    let at = Time::from_nanos(t.as_nanos().div_ceil(g) * g)
                        + two_jiffies(self.cfg.clock_granularity);
                    self.linux.reo_deadline = Some(at);
                    self.linux.tlp_deadline = None;
                    self.rto_deadline = None;
                    self.linux.slot = XmitTimer::Reo;
                }
                (d.newly_lost, d.lost_retransmission)
            }
            LossDetection::DupThresh => {
                let before = self.board.lost_out;
                self.board
                    .mark_sack_losses(self.dupthresh(), self.tcb.snd_una, self.tcb.high_tx);
                (self.board.lost_out - before, false)
            }
        }
    }

    /// `tcp_try_to_open`: CWR is kept; otherwise `tcp_try_keep_open`.
    fn try_to_open(&mut self, now: Time) {
        if !self.any_retrans_done() {
            self.linux.undo.retrans_stamp = None;
        }
        if self.tcb.ca_state != CaState::Cwr {
            self.try_keep_open(now);
        }
    }

    /// `tcp_init_cwnd_reduction`: the episode's start, and the controller's new ssthresh.
    fn init_cwnd_reduction(&mut self, now: Time) {
        self.linux.high_seq = self.tcb.high_tx;
        self.linux.tlp_high_seq = None;
        self.tcb.prior_cwnd = self.tcb.cwnd;
        self.linux.prr_delivered = 0;
        self.linux.prr_out = 0;
        self.tcb.ssthresh = self.cc.ssthresh(&mut self.tcb, now);
    }

    /// `tcp_end_cwnd_reduction`: cwnd = ssthresh in CWR, or in Recovery unless it was undone
    /// (a controller that sets cwnd itself has already done so).
    fn end_cwnd_reduction(&mut self) {
        if self.tcb.ssthresh.is_finite()
            && (self.tcb.ca_state == CaState::Cwr || self.linux.undo.marker.is_some())
        {
            self.tcb.cwnd = self.tcb.ssthresh.max(1.0);
        }
    }

    /// `tcp_enter_recovery`.
    fn enter_recovery_linux(&mut self, now: Time) {
        self.note_slow_start_exit(now, ExitReason::Loss);
        self.stats.fast_recoveries += 1;
        self.linux.undo.prior_ssthresh = 0.0;
        self.init_undo();
        if !self.in_cwnd_reduction() {
            self.linux.undo.prior_ssthresh = self.current_ssthresh();
            self.init_cwnd_reduction(now);
        }
        self.recover = self.linux.high_seq;
        self.set_ca_state(CaState::Recovery, now);
        // No probe in Recovery: a pending probe timer would only rearm the RTO from the head's
        // last transmission when it fired (tcp_send_loss_probe), which this does now.
        if self.linux.slot == XmitTimer::Tlp {
            self.rearm_rto(now);
        }
    }

    /// PRR (RFC 6937 §3.1, `tcp_cwnd_reduction`): while in flight exceeds ssthresh, send in
    /// proportion ssthresh / prior_cwnd of what is delivered; below it, slow start back up to
    /// ssthresh (PRR-SSRB: at most one more than delivered, when the ACK advanced and found no
    /// new loss). The first ACK always lets the fast retransmit go.
    fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, advanced: bool) {
        let prior_cwnd = self.tcb.prior_cwnd.floor() as i64;
        if newly_acked_sacked == 0 || prior_cwnd <= 0 {
            return;
        }
        let ssthresh = self.tcb.ssthresh.floor() as i64;
        let in_flight = self.in_flight() as i64;
        self.linux.prr_delivered += newly_acked_sacked as u64;
        let delivered = self.linux.prr_delivered as i64;
        let out = self.linux.prr_out as i64;
        let delta = ssthresh - in_flight;
        let mut sndcnt = if delta < 0 {
            (ssthresh * delivered + prior_cwnd - 1) / prior_cwnd - out
        } else {
            let mut s = (delivered - out).max(newly_acked_sacked as i64);
            if advanced && newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        sndcnt = sndcnt.max(if out > 0 { 0 } else { 1 });
        self.tcb.cwnd = (in_flight + sndcnt).max(1) as f64;
    }

    /// `tcp_process_tlp_ack`: the ACK of a probe. A probe that retransmitted data and is
    /// acknowledged beyond itself repaired a loss: reduce the window (CWR). A D-SACK of the
    /// probe says the original arrived too: no loss.
    fn process_tlp_ack(&mut self, now: Time, ack: u32, f: &AckFlags) {
        let Some(high) = self.linux.tlp_high_seq else {
            return;
        };
        if ack < high {
            return;
        }
        if !self.linux.tlp_retrans || f.dsack_tlp {
            self.linux.tlp_high_seq = None;
        } else if ack > high {
            self.linux.tlp_high_seq = None;
            self.init_cwnd_reduction(now);
            self.set_ca_state(CaState::Cwr, now);
            self.end_cwnd_reduction();
            self.try_keep_open(now);
        } else if !f.advanced && !f.data_sacked {
            // A pure duplicate: original and probe both arrived, no loss.
            self.linux.tlp_high_seq = None;
        }
    }

    /// `tcp_schedule_loss_probe`: in Open or CWR with data out, a probe after 2 × SRTT plus two
    /// jiffies (plus the minimum RTO for a single segment, which a delayed ACK may hold),
    /// never after the RTO would fire: `advancing` (an ACK that moved snd_una) counts the RTO
    /// from now, otherwise from the head's last transmission (`tcp_rto_delta_us`).
    pub(super) fn schedule_loss_probe(&mut self, now: Time, advancing: bool) {
        if !matches!(self.cfg.loss_detection, LossDetection::Rack { tlp: true })
            || self.linux.tlp_high_seq.is_some()
            || self.packets_out() == 0
            || !matches!(self.tcb.ca_state, CaState::Open | CaState::Cwr)
        {
            // No probe: a probe timer still pending would only have rearmed the RTO from the
            // head's last transmission (tcp_send_loss_probe's "rearm_timer"), as this does.
            if self.linux.slot == XmitTimer::Tlp {
                self.rearm_rto(now);
            }
            return;
        }
        let g = self.cfg.clock_granularity;
        let pto = match self.rtt.srtt() {
            Some(srtt) => {
                let extra = if self.packets_out() == 1 {
                    self.cfg.min_rto
                } else {
                    Duration::from_millis(2)
                };
                let raw = srtt * 2 + extra;
                let gn = g.as_nanos().max(1);
                Duration::from_nanos(raw.as_nanos().div_ceil(gn) * gn)
            }
            None => self.cfg.initial_rto,
        };
        let rto = self.rtt.rto();
        let rto_at = match self.board.segs.front() {
            Some(head) if !advancing => head.sent_at + rto,
            _ => now + rto,
        };
        let mut at = now + pto;
        if rto_at > now {
            at = at.min(rto_at);
        }
        // The probe takes the timer: the RTO stops until the probe rearms it.
        self.linux.tlp_deadline = Some(at);
        self.linux.reo_deadline = None;
        self.rto_deadline = None;
        self.linux.slot = XmitTimer::Tlp;
    }

    /// `tcp_rearm_rto`: the RTO from now, or, when it takes the slot back from RACK's timer or
    /// the probe, from the head's last transmission (`tcp_rto_delta_us`); none with nothing
    /// out.
    pub(super) fn rearm_rto(&mut self, now: Time) {
        self.linux.reo_deadline = None;
        self.linux.tlp_deadline = None;
        let took_back = self.linux.slot != XmitTimer::Rto;
        self.linux.slot = XmitTimer::Rto;
        let Some(head) = self.board.segs.front() else {
            self.rto_deadline = None;
            return;
        };
        let rto = self.rtt.rto();
        self.rto_deadline = Some(if took_back {
            // "delta_us may not be positive": at least a microsecond.
            (head.sent_at + rto).max(now + Duration::from_micros(1))
        } else {
            now + rto
        });
    }

    /// `tcp_send_loss_probe`: new data if the window allows, else the last segment again.
    fn on_loss_probe(&mut self, now: Time, out: &mut Outbox) {
        self.linux.tlp_deadline = None;
        if self.packets_out() == 0 || !matches!(self.tcb.ca_state, CaState::Open | CaState::Cwr) {
            // "rearm_timer": the RTO takes the slot back.
            self.rearm_rto(now);
            return;
        }
        let new = self.tcb.high_tx;
        if new < self.size.segments && self.packets_out() < self.tcb.rwnd {
            self.linux.tlp_retrans = false;
            self.transmit(new, now, out, true);
        } else {
            self.linux.tlp_retrans = true;
            self.transmit(self.tcb.high_tx - 1, now, out, true);
        }
        self.tcb.in_flight = self.in_flight();
        self.linux.tlp_high_seq = Some(self.tcb.high_tx);
        // tcp_rearm_rto after the probe (the slot still the probe's: from the head's last
        // transmission).
        self.rearm_rto(now);
    }

    /// `tcp_rack_reo_timeout`: the reordering window of a waiting segment has passed.
    fn on_reo_timeout(&mut self, now: Time, out: &mut Outbox) {
        self.linux.reo_deadline = None;
        // Scan again even though no delivery advanced RACK (the timer's own scan).
        self.linux.rack.rescan();
        let (lost, _) = self.identify_loss(now);
        if lost > 0 {
            if self.tcb.ca_state != CaState::Recovery {
                // "tcp_enter_recovery(sk, false); tcp_cwnd_reduction(sk, 1, 0, 0)".
                self.enter_recovery_linux(now);
                self.cwnd_reduction(1, 0, false);
            }
            self.try_send(now, out);
        }
        // The RTO takes the slot back, from the head's last transmission (the scan's own
        // timeout is not armed: tcp_rack_detect_loss, not tcp_rack_mark_lost).
        self.rearm_rto(now);
    }

    /// `tcp_retransmit_timer` → `tcp_enter_loss` with RACK: the first segment and every one not
    /// sent within the last RACK.rtt are lost; ssthresh is reduced once per episode; cwnd =
    /// in flight + 1; the episode lasts until everything sent so far is acknowledged.
    pub(super) fn on_rto_linux(&mut self, now: Time, out: &mut Outbox) {
        self.stats.timeouts += 1;
        self.note_slow_start_exit(now, ExitReason::Timeout);
        let state = self.tcb.ca_state;
        let rack = &self.linux.rack;
        self.board
            .mark_lost_on_timeout(self.tcb.snd_una, &|s| rack.too_recent(now, s.sent_at));
        if matches!(state, CaState::Open | CaState::Disorder)
            || self.linux.high_seq <= self.tcb.snd_una
            || (state == CaState::Loss && self.linux.rto_retransmits == 0)
        {
            self.linux.undo.prior_ssthresh = self.current_ssthresh();
            self.tcb.prior_cwnd = self.tcb.cwnd;
            self.tcb.ssthresh = self.cc.ssthresh(&mut self.tcb, now);
            self.cc.cwnd_event(&mut self.tcb, CwndEvent::Loss, now);
            self.init_undo();
        }
        self.tcb.cwnd = (self.in_flight() + 1) as f64;
        self.set_ca_state(CaState::Loss, now);
        self.linux.high_seq = self.tcb.high_tx;
        // F-RTO (RFC 5682 §3.1 step 1) unless a recovery was under way, except on a repeated
        // timeout of the same data (§3.2).
        self.linux.undo.frto = self.cfg.frto
            && (matches!(state, CaState::Open | CaState::Disorder | CaState::Cwr)
                || self.linux.rto_retransmits > 0);
        self.recover = self.tcb.high_tx;
        self.linux.tlp_high_seq = None;
        self.linux.tlp_deadline = None;
        self.linux.reo_deadline = None;
        self.linux.slot = XmitTimer::Rto;
        self.linux.rto_retransmits += 1;
        // Retransmit the head, back off, restart the timer (tcp_retransmit_timer).
        self.rtt.back_off();
        self.retransmit_now(self.tcb.snd_una, now, out);
        self.rto_deadline = Some(now + self.rtt.rto());
        self.try_send(now, out);
    }

    /// The RACK and TLP timers (the RTO and pacing timers are the sender's own).
    pub(super) fn linux_timers(&self) -> Option<Time> {
        match (self.linux.reo_deadline, self.linux.tlp_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(super) fn on_linux_timers(&mut self, now: Time, out: &mut Outbox) {
        if matches!(self.linux.reo_deadline, Some(t) if t <= now) {
            self.on_reo_timeout(now, out);
        }
        if matches!(self.linux.tlp_deadline, Some(t) if t <= now) {
            self.on_loss_probe(now, out);
        }
    }
}
