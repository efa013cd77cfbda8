//! The sender's ACK processing and loss recovery as Linux 6.18 runs them (`recovery = "prr"`):
//! `tcp_ack`, `tcp_fastretrans_alert`, `tcp_cwnd_reduction` (PRR, RFC 6937), `tcp_enter_loss`,
//! RACK-TLP (RFC 8985, `tcp_recovery.c`) and the tail-loss probe (`tcp_send_loss_probe`).
//!
//! Order on every ACK, as `tcp_ack`: SACK tagging and the cumulative ACK (RACK advances on
//! each delivered segment; RTT samples from the oldest segment acknowledged), the controller's
//! `pkts_acked`, the state machine (loss detection, entering and leaving Recovery), then
//! `tcp_cong_control`: PRR while in CWR or Recovery, the controller's `cong_avoid` when the
//! cumulative ACK advanced otherwise; then retransmissions before new data.

use super::rack::ReoWndInputs;
use super::undo::{any_retrans_done, current_ssthresh, AckFlags, Rexmit};
use super::{in_cwnd_reduction, LinuxRecovery, XmitTimer};
use crate::cc::{AckEvent, AckSample, CaState, CwndEvent, ExitReason};
use crate::net::Packet;
use crate::tcp::connection::Connection;
use crate::tcp::rate::Sampling;
use crate::tcp::{LossDetection, Outbox};
use crate::time::{Duration, Time};

/// What the segments an ACK delivered tell (`tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`).
#[derive(Default)]
struct Delivery {
    /// The segment the rate sample is taken from (`tcp_rate_skb_delivered`).
    rate: Sampling,
    /// Send times of the first and last never-retransmitted segments cumulatively acknowledged
    /// (`first_ackt`, `last_ackt`) and SACKed (`first_sackt`, `last_sackt`).
    first_ackt: Option<Time>,
    last_ackt: Option<Time>,
    first_sackt: Option<Time>,
    last_sackt: Option<Time>,
    /// Retransmitted data was cumulatively acknowledged (`FLAG_RETRANS_DATA_ACKED`).
    retrans_acked: bool,
    /// The lowest never-retransmitted segment newly SACKed (`state->reord`) and cumulatively
    /// acknowledged (`reord` in `tcp_clean_rtx_queue`) below the highest SACKed one before
    /// the ACK: reordering.
    sack_reord: Option<u32>,
    ack_reord: Option<u32>,
    /// A never-retransmitted segment sent before `high_seq` was delivered
    /// (`FLAG_ORIG_SACK_ACKED`).
    orig_acked: bool,
}

/// `sysctl_tcp_max_reordering`: the most `tp->reordering` grows to.
const MAX_REORDERING: u32 = 300;

/// The lowest of `low` and `seq`.
fn lowest(low: Option<u32>, seq: u32) -> Option<u32> {
    Some(low.map_or(seq, |l| l.min(seq)))
}

/// `TCP_TIMEOUT_MIN`: two jiffies added to the RACK and TLP timers.
fn two_jiffies(g: Duration) -> Duration {
    g * 2
}

impl LinuxRecovery {
    /// `tcp_ack`: an ACK of the established connection (see the module docs for the order).
    pub(in crate::tcp) fn on_ack(
        &mut self,
        c: &mut Connection,
        now: Time,
        pkt: &Packet,
        out: &mut Outbox,
    ) {
        let ack = pkt.seq;
        let window_update = c.tcb.rwnd != pkt.rwnd_segments;
        c.tcb.rwnd = pkt.rwnd_segments;
        if ack < c.tcb.snd_una || ack > c.tcb.high_tx {
            return;
        }
        let una_before = c.tcb.snd_una;
        let high_seq = c.tcb.high_seq;
        let prior_in_flight = c.in_flight();
        let prior_fack = c.board.highest_sacked().map_or(una_before, |h| h + 1);
        let min_rtt = c.tcb.min_rtt;
        let lost_before = c.board.marked_lost;
        let mut d = Delivery::default();

        // tcp_check_dsack; a D-SACKed segment counts as delivered ("A spurious retransmission
        // is delivered", tcp_dsack_seen), and may widen RACK's window.
        let (dup_segs, dsack_end) = if c.cfg.dsack {
            self.check_dsack(c, pkt, una_before)
        } else {
            (0, 0)
        };
        let dsack_tlp = dup_segs == 1 && c.tcb.tlp_high_seq == Some(dsack_end);
        if dup_segs > 0 {
            self.rack.on_dsack(dsack_tlp);
        }
        let rack = &mut self.rack;
        let rate = &mut c.rate;
        let mut sacked = 0;
        if !pkt.sack.is_empty() {
            sacked = c.board.apply_sack(
                (c.tcb.snd_una, c.tcb.high_tx),
                ack,
                &pkt.sack,
                &mut |seq, s| {
                    rack.advance(now, seq, s, min_rtt);
                    rate.on_delivered(&mut d.rate, seq, s.sent_at, &s.tx, s.retransmitted);
                    if !s.retransmitted {
                        d.first_sackt.get_or_insert(s.sent_at);
                        d.last_sackt = Some(s.sent_at);
                        // "New sack for not retransmitted frame, which was in hole."
                        if seq < prior_fack {
                            d.sack_reord = lowest(d.sack_reord, seq);
                        }
                        d.orig_acked |= seq < high_seq;
                    }
                },
            );
        }
        let advanced = ack > una_before;
        let mut acked = 0;
        if advanced {
            let any_sacked = c.board.sacked_out > 0;
            acked = c.board.advance(una_before, ack, &mut |seq, s| {
                rack.advance(now, seq, s, min_rtt);
                rate.on_delivered(&mut d.rate, seq, s.sent_at, &s.tx, s.retransmitted);
                if s.retransmitted {
                    d.retrans_acked = true;
                } else {
                    d.first_ackt.get_or_insert(s.sent_at);
                    d.last_ackt = Some(s.sent_at);
                    d.orig_acked |= seq < high_seq;
                    // "Non-retransmitted hole got filled? That's reordering."
                    if any_sacked && seq < prior_fack {
                        d.ack_reord = lowest(d.ack_reord, seq);
                    }
                }
            });
            c.tcb.snd_una = ack;
        }
        // tcp_sacktag_write_queue (not in Loss unless it may be undone), then
        // tcp_clean_rtx_queue. The newly SACKed segments lie above the ACK, so the highest
        // SACKed one is the same after the cumulative ACK as before it.
        if let Some(low) = d.sack_reord {
            if c.tcb.ca_state != CaState::Loss || c.tcb.undo_marker.is_some() {
                self.check_sack_reordering(c, low);
            }
        }
        if let Some(low) = d.ack_reord {
            self.check_sack_reordering(c, low);
        }
        c.tcb.reordering = self.reordering(c);
        let delivered = sacked + acked + dup_segs;
        c.tcb.delivered += delivered as u64;
        // tcp_count_delivered: what an ACK with an ECN echo delivered was marked.
        let ece = c.cfg.ecn && pkt.ece;
        if ece {
            c.tcb.delivered_ce += delivered as u64;
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
        c.last_rtt_sample = None;
        if let Some(r) = seq_rtt {
            c.rtt.on_sample_linux(r, c.tcb.snd_una, c.tcb.high_tx);
            c.sync_rtt();
        }
        if let Some(r) = ca_rtt {
            c.tcb.latest_rtt = Some(r);
            c.tcb.min_rtt = Some(c.tcb.min_rtt.map_or(r, |m| m.min(r)));
            c.last_rtt_sample = Some(r);
        }
        c.sync_pipe();
        if sacked + acked > 0 {
            let sample = AckSample {
                acked: sacked + acked,
                rtt: ca_rtt,
                prior_in_flight,
            };
            c.cc.pkts_acked(&mut c.tcb, &sample, now);
        }
        // tcp_rack_update_reo_wnd, after tcp_clean_rtx_queue.
        self.rack
            .update_reo_wnd(d.rate.prior_delivered(), c.tcb.delivered);

        let flags = AckFlags {
            advanced,
            data_sacked: sacked > 0,
            orig_sack_acked: d.orig_acked,
            dsack: dup_segs > 0,
            dsack_tlp,
            dupack: !advanced && !window_update && dup_segs == 0,
            ecr: pkt.ts,
            ece,
        };
        // tcp_in_ack_event, after tcp_clean_rtx_queue (Linux 6.18). An ACK that advances
        // snd_una with neither SACK blocks nor ECE passes tcp_rcv_established's header
        // prediction: tcp_ack then flags it FLAG_WIN_UPDATE (the receiver's window is fixed).
        let event = AckEvent {
            ece,
            win_update: advanced && pkt.sack.is_empty() && !ece,
        };
        c.cc.in_ack_event(&mut c.tcb, event, now);
        self.process_tlp_ack(c, now, ack, &flags);

        // tcp_ack_is_dubious: a duplicate, new SACK or D-SACK information, or not Open.
        let mut newly_lost = 0;
        let mut rexmit = Rexmit::Lost;
        if !advanced || sacked > 0 || flags.dsack || flags.ece || c.tcb.ca_state != CaState::Open {
            if delivered == 0 && !advanced {
                c.cc.cwnd_event(&mut c.tcb, CwndEvent::DupAck, now);
            }
            (newly_lost, rexmit) = self.fastretrans_alert(c, now, una_before, &flags);
        }

        if c.send.all_acked(c.tcb.snd_una) {
            c.finish(now);
            return;
        }

        // tcp_rate_gen, then tcp_cong_control: a controller with cong_control sets cwnd and
        // pacing itself, in every state.
        let cong_controlled = c.cong_control(
            &d.rate,
            delivered,
            lost_before,
            prior_in_flight,
            ca_rtt,
            now,
        );
        if !cong_controlled {
            if in_cwnd_reduction(c) {
                self.cwnd_reduction(c, delivered, newly_lost, advanced);
            } else if self.may_raise_cwnd(c, advanced, sacked > 0) {
                // What the controller's cong_avoid asks of tcp_is_cwnd_limited.
                c.tcb.cwnd_limited = super::cwnd_use::is_cwnd_limited(c);
                c.cong_avoid(delivered, ack, now);
            }
        }

        // A controller with cong_control ends its start-up itself, in any state.
        let may_exit = c.tcb.ca_state == CaState::Open || c.owns_cwnd;
        if c.ss_exit.is_none() && may_exit && !c.cc.in_startup(&c.tcb) {
            c.note_slow_start_exit(now, ExitReason::Threshold);
        }
        // tcp_rearm_rto on an advancing ACK (tcp_set_xmit_timer; the probe is scheduled after
        // the sends below).
        if advanced {
            self.rearm_rto(c, now);
        }
        c.update_pacing();
        // tcp_xmit_recovery: F-RTO's new data first; if none could go, F-RTO ends and the lost
        // segments go as usual.
        if rexmit == Rexmit::New {
            self.new_data_only = true;
            c.try_send(self, now, out);
            self.new_data_only = false;
            if c.tcb.high_tx <= c.tcb.high_seq {
                self.undo.frto = false;
            }
        }
        c.try_send(self, now, out);
        if advanced {
            self.schedule_loss_probe(c, now, true);
        }
    }

    /// `tcp_may_raise_cwnd`: only on an advancing cumulative ACK (`FLAG_DATA_ACKED`, RFC 5681),
    /// unless reordering raised `tp->reordering` above the sysctl: then on any ACK that
    /// delivered data (`FLAG_FORWARD_PROGRESS`, SACKs too).
    fn may_raise_cwnd(&self, c: &Connection, advanced: bool, data_sacked: bool) -> bool {
        if self.reordering(c) > c.cfg.dupack_threshold {
            advanced || data_sacked
        } else {
            advanced
        }
    }

    /// `tp->reordering`: the sysctl (`net.ipv4.tcp_reordering`, `tcp.dupack_threshold`) until
    /// reordering beyond it is measured.
    pub(super) fn reordering(&self, c: &Connection) -> u32 {
        self.reordering.max(c.cfg.dupack_threshold)
    }

    /// `tcp_check_sack_reordering`: never-retransmitted segment `low` was delivered after data
    /// above it, up to `tcp_highest_sack_seq` (the end of the highest SACKed segment; snd_una
    /// with none SACKed). Reordering is seen (`tp->reord_seen`), and `tp->reordering` grows to
    /// the distance in segments, at most `tcp_max_reordering`.
    pub(super) fn check_sack_reordering(&mut self, c: &Connection, low: u32) {
        let fack = match c.board.highest_sacked() {
            Some(h) if c.board.sacked_out > 0 => h + 1,
            _ => c.tcb.snd_una,
        };
        if low >= fack {
            return;
        }
        let distance = fack - low;
        if distance > self.reordering(c) {
            self.reordering = distance.min(MAX_REORDERING);
        }
        self.rack.reord_seen = true;
    }

    /// `tcp_fastretrans_alert` with RACK (`prior_una`: snd_una before the ACK): returns the
    /// segments newly deemed lost and what `tcp_process_loss` asks to send.
    fn fastretrans_alert(
        &mut self,
        c: &mut Connection,
        now: Time,
        prior_una: u32,
        f: &AckFlags,
    ) -> (u32, Rexmit) {
        let una = c.tcb.snd_una;
        // D. State exit: everything sent before the episode is acknowledged.
        if c.tcb.ca_state == CaState::Open {
            c.tcb.retrans_stamp = None;
        } else if una >= c.tcb.high_seq {
            match c.tcb.ca_state {
                CaState::Cwr if una != c.tcb.high_seq => {
                    self.end_cwnd_reduction(c, now);
                    c.set_ca_state(CaState::Open, now);
                }
                CaState::Recovery => {
                    // tcp_try_undo_recovery opens, then tcp_end_cwnd_reduction.
                    self.try_undo_recovery(c, f.ecr, now);
                    self.end_cwnd_reduction(c, now);
                }
                _ => {}
            }
        }
        // E. Process the state.
        match c.tcb.ca_state {
            CaState::Recovery => {
                if f.advanced && self.try_undo_partial(c, prior_una, f.ecr, now) {
                    return (0, Rexmit::None);
                }
                if self.try_undo_dsack(c) {
                    self.try_keep_open(c, now);
                }
                let (lost, _) = self.identify_loss(c, now);
                // Undo reverted the state: a new recovery if loss is evident.
                if c.tcb.ca_state != CaState::Recovery && c.board.lost_out > 0 {
                    self.enter_recovery(c, now);
                }
                return (lost, Rexmit::Lost);
            }
            CaState::Loss => {
                let rexmit = self.process_loss(c, f, now);
                let (lost, lost_retrans) = self.identify_loss(c, now);
                // "Change state if cwnd is undone or retransmits are lost."
                if !(c.tcb.ca_state == CaState::Open || lost_retrans) {
                    return (lost, rexmit);
                }
            }
            _ => {}
        }
        if matches!(c.tcb.ca_state, CaState::Open | CaState::Disorder) {
            self.try_undo_dsack(c);
        }
        let (lost, _) = self.identify_loss(c, now);
        // tcp_time_to_recover: loss detection marked something lost.
        if c.board.lost_out == 0 {
            self.try_to_open(c, now, f.ece);
            return (lost, Rexmit::Lost);
        }
        self.enter_recovery(c, now);
        (lost, Rexmit::Lost)
    }

    /// `tcp_identify_packet_loss`: RACK, or RFC 6675's IsLost with `loss_detection =
    /// "dupthresh"`. Returns (newly lost, a retransmission among them).
    fn identify_loss(&mut self, c: &mut Connection, now: Time) -> (u32, bool) {
        match c.cfg.loss_detection {
            LossDetection::Rack { .. } => {
                let reo = self.rack.reo_wnd(ReoWndInputs {
                    recovering: matches!(c.tcb.ca_state, CaState::Recovery | CaState::Loss),
                    sacked_out: c.board.sacked_out,
                    reordering: self.reordering(c),
                    min_rtt: c.tcb.min_rtt,
                    srtt: c.rtt.srtt(),
                });
                let d = self.rack.detect_loss(now, &mut c.board, c.tcb.snd_una, reo);
                if let Some(t) = d.timer {
                    // tcp_rack_mark_lost: usecs_to_jiffies(timeout) + TCP_TIMEOUT_MIN, from the
                    // current jiffy, in the retransmission timer's slot: the RTO stops.
                    let g = c.cfg.clock_granularity.as_nanos().max(1);
                    let at = Time::from_nanos(t.as_nanos().div_ceil(g) * g)
                        + two_jiffies(c.cfg.clock_granularity);
                    self.reo_deadline = Some(at);
                    self.tlp_deadline = None;
                    c.rto_deadline = None;
                    self.slot = XmitTimer::Reo;
                }
                (d.newly_lost, d.lost_retransmission)
            }
            LossDetection::DupThresh => {
                let before = c.board.lost_out;
                c.board
                    .mark_sack_losses(c.dupthresh(), c.tcb.snd_una, c.tcb.high_tx);
                (c.board.lost_out - before, false)
            }
        }
    }

    /// `tcp_try_to_open`: an ECN echo enters CWR; CWR is kept; otherwise `tcp_try_keep_open`.
    fn try_to_open(&mut self, c: &mut Connection, now: Time, ece: bool) {
        if !any_retrans_done(c) {
            c.tcb.retrans_stamp = None;
        }
        if ece {
            self.enter_cwr(c, now);
        }
        if c.tcb.ca_state != CaState::Cwr {
            self.try_keep_open(c, now);
        }
    }

    /// `tcp_enter_cwr`: a window reduction by PRR without a loss (an ECN echo), once per
    /// window of data: not again before `high_seq` is acknowledged.
    fn enter_cwr(&mut self, c: &mut Connection, now: Time) {
        c.tcb.prior_ssthresh = 0.0;
        if matches!(c.tcb.ca_state, CaState::Open | CaState::Disorder) {
            c.note_slow_start_exit(now, ExitReason::Ecn);
            c.stats.ecn_reductions += 1;
            c.tcb.undo_marker = None;
            self.init_cwnd_reduction(c, now);
            c.set_ca_state(CaState::Cwr, now);
        }
    }

    /// `tcp_init_cwnd_reduction`: the episode's start, and the controller's new ssthresh.
    fn init_cwnd_reduction(&mut self, c: &mut Connection, now: Time) {
        c.tcb.high_seq = c.tcb.high_tx;
        c.tcb.tlp_high_seq = None;
        c.tcb.prior_cwnd = c.tcb.cwnd;
        self.prr_delivered = 0;
        c.tcb.prr_delivered = 0;
        self.prr_out = 0;
        c.tcb.ssthresh = c.cc.ssthresh(&mut c.tcb, now);
        // tcp_ecn_queue_cwr: every reduction tells an ECN receiver to stop echoing.
        c.ecn_queue_cwr = true;
    }

    /// `tcp_end_cwnd_reduction`: cwnd = ssthresh in CWR, or in Recovery unless it was undone
    /// (a controller that sets cwnd itself has already done so).
    fn end_cwnd_reduction(&mut self, c: &mut Connection, now: Time) {
        if c.owns_cwnd {
            return;
        }
        if c.tcb.ssthresh.is_finite()
            && (c.tcb.ca_state == CaState::Cwr || c.tcb.undo_marker.is_some())
        {
            c.tcb.cwnd = c.tcb.ssthresh.max(1.0);
        }
        c.cc.cwnd_event(&mut c.tcb, CwndEvent::CompleteCwr, now);
    }

    /// `tcp_enter_recovery`.
    fn enter_recovery(&mut self, c: &mut Connection, now: Time) {
        c.note_slow_start_exit(now, ExitReason::Loss);
        c.stats.fast_recoveries += 1;
        c.tcb.prior_ssthresh = 0.0;
        self.init_undo(c);
        if !in_cwnd_reduction(c) {
            c.tcb.prior_ssthresh = current_ssthresh(c);
            self.init_cwnd_reduction(c, now);
        }
        c.set_ca_state(CaState::Recovery, now);
        // No probe in Recovery: a pending probe timer would only rearm the RTO from the head's
        // last transmission when it fired (tcp_send_loss_probe), which this does now.
        if self.slot == XmitTimer::Tlp {
            self.rearm_rto(c, now);
        }
    }

    /// PRR (RFC 6937 §3.1, `tcp_cwnd_reduction`): while in flight exceeds ssthresh, send in
    /// proportion ssthresh / prior_cwnd of what is delivered; below it, slow start back up to
    /// ssthresh (PRR-SSRB: at most one more than delivered, when the ACK advanced and found no
    /// new loss). The first ACK always lets the fast retransmit go.
    fn cwnd_reduction(
        &mut self,
        c: &mut Connection,
        newly_acked_sacked: u32,
        newly_lost: u32,
        advanced: bool,
    ) {
        let prior_cwnd = c.tcb.prior_cwnd.floor() as i64;
        if newly_acked_sacked == 0 || prior_cwnd <= 0 {
            return;
        }
        let ssthresh = c.tcb.ssthresh.floor() as i64;
        let in_flight = c.in_flight() as i64;
        self.prr_delivered += newly_acked_sacked as u64;
        c.tcb.prr_delivered = self.prr_delivered as u32;
        let delivered = self.prr_delivered as i64;
        let out = self.prr_out as i64;
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
        c.tcb.cwnd = (in_flight + sndcnt).max(1) as f64;
    }

    /// `tcp_process_tlp_ack`: the ACK of a probe. A probe that retransmitted data and is
    /// acknowledged beyond itself repaired a loss: reduce the window (CWR). A D-SACK of the
    /// probe says the original arrived too: no loss.
    fn process_tlp_ack(&mut self, c: &mut Connection, now: Time, ack: u32, f: &AckFlags) {
        let Some(high) = c.tcb.tlp_high_seq else {
            return;
        };
        if ack < high {
            return;
        }
        if !c.tcb.tlp_retrans || f.dsack_tlp {
            c.tcb.tlp_high_seq = None;
        } else if ack > high {
            c.tcb.tlp_high_seq = None;
            self.init_cwnd_reduction(c, now);
            c.set_ca_state(CaState::Cwr, now);
            self.end_cwnd_reduction(c, now);
            self.try_keep_open(c, now);
        } else if !f.advanced && !f.data_sacked {
            // A pure duplicate: original and probe both arrived, no loss.
            c.tcb.tlp_high_seq = None;
        }
    }

    /// `tcp_schedule_loss_probe`: in Open or CWR with data out, a probe after 2 × SRTT plus two
    /// jiffies (plus the minimum RTO for a single segment, which a delayed ACK may hold),
    /// never after the RTO would fire: `advancing` (an ACK that moved snd_una) counts the RTO
    /// from now, otherwise from the head's last transmission (`tcp_rto_delta_us`).
    pub(super) fn schedule_loss_probe(&mut self, c: &mut Connection, now: Time, advancing: bool) {
        if !matches!(c.cfg.loss_detection, LossDetection::Rack { tlp: true })
            || c.tcb.tlp_high_seq.is_some()
            || c.packets_out() == 0
            || !matches!(c.tcb.ca_state, CaState::Open | CaState::Cwr)
        {
            // No probe: a probe timer still pending would only have rearmed the RTO from the
            // head's last transmission (tcp_send_loss_probe's "rearm_timer"), as this does.
            if self.slot == XmitTimer::Tlp {
                self.rearm_rto(c, now);
            }
            return;
        }
        let g = c.cfg.clock_granularity;
        let pto = match c.rtt.srtt() {
            Some(srtt) => {
                let extra = if c.packets_out() == 1 {
                    c.cfg.min_rto
                } else {
                    Duration::from_millis(2)
                };
                let raw = srtt * 2 + extra;
                let gn = g.as_nanos().max(1);
                Duration::from_nanos(raw.as_nanos().div_ceil(gn) * gn)
            }
            None => c.cfg.initial_rto,
        };
        let rto = c.rtt.rto();
        let rto_at = match c.board.segs.front() {
            Some(head) if !advancing => head.sent_at + rto,
            _ => now + rto,
        };
        let mut at = now + pto;
        if rto_at > now {
            at = at.min(rto_at);
        }
        // The probe takes the timer: the RTO stops until the probe rearms it.
        self.tlp_deadline = Some(at);
        self.reo_deadline = None;
        c.rto_deadline = None;
        self.slot = XmitTimer::Tlp;
    }

    /// `tcp_rearm_rto`: the RTO from now, or, when it takes the slot back from RACK's timer or
    /// the probe, from the head's last transmission (`tcp_rto_delta_us`); none with nothing
    /// out.
    pub(super) fn rearm_rto(&mut self, c: &mut Connection, now: Time) {
        self.reo_deadline = None;
        self.tlp_deadline = None;
        let took_back = self.slot != XmitTimer::Rto;
        self.slot = XmitTimer::Rto;
        let Some(head) = c.board.segs.front() else {
            c.rto_deadline = None;
            return;
        };
        let rto = c.rtt.rto();
        c.rto_deadline = Some(if took_back {
            // "delta_us may not be positive": at least a microsecond.
            (head.sent_at + rto).max(now + Duration::from_micros(1))
        } else {
            now + rto
        });
    }

    /// `tcp_send_loss_probe`: new data if the window allows, else the last segment again.
    fn on_loss_probe(&mut self, c: &mut Connection, now: Time, out: &mut Outbox) {
        self.tlp_deadline = None;
        if c.packets_out() == 0 || !matches!(c.tcb.ca_state, CaState::Open | CaState::Cwr) {
            // "rearm_timer": the RTO takes the slot back.
            self.rearm_rto(c, now);
            return;
        }
        let new = c.tcb.high_tx;
        if new < c.send.written() && c.packets_out() < c.tcb.rwnd {
            c.tcb.tlp_retrans = false;
            c.transmit(self, new, now, out, true);
        } else {
            c.tcb.tlp_retrans = true;
            c.transmit(self, c.tcb.high_tx - 1, now, out, true);
        }
        c.sync_pipe();
        c.tcb.tlp_high_seq = Some(c.tcb.high_tx);
        // tcp_rearm_rto after the probe (the slot still the probe's: from the head's last
        // transmission).
        self.rearm_rto(c, now);
    }

    /// `tcp_rack_reo_timeout`: the reordering window of a waiting segment has passed.
    fn on_reo_timeout(&mut self, c: &mut Connection, now: Time, out: &mut Outbox) {
        self.reo_deadline = None;
        // Scan again even though no delivery advanced RACK (the timer's own scan).
        self.rack.rescan();
        let (lost, _) = self.identify_loss(c, now);
        if lost > 0 {
            if c.tcb.ca_state != CaState::Recovery {
                // "tcp_enter_recovery(sk, false); tcp_cwnd_reduction(sk, 1, 0, 0)".
                self.enter_recovery(c, now);
                self.cwnd_reduction(c, 1, 0, false);
            }
            c.try_send(self, now, out);
        }
        // The RTO takes the slot back, from the head's last transmission (the scan's own
        // timeout is not armed: tcp_rack_detect_loss, not tcp_rack_mark_lost).
        self.rearm_rto(c, now);
    }

    /// `tcp_retransmit_timer` → `tcp_enter_loss` with RACK: the first segment and every one not
    /// sent within the last RACK.rtt are lost; ssthresh is reduced once per episode; cwnd =
    /// in flight + 1; the episode lasts until everything sent so far is acknowledged.
    pub(in crate::tcp) fn on_rto(&mut self, c: &mut Connection, now: Time, out: &mut Outbox) {
        c.stats.timeouts += 1;
        c.note_slow_start_exit(now, ExitReason::Timeout);
        let state = c.tcb.ca_state;
        let rack = &self.rack;
        c.board
            .mark_lost_on_timeout(c.tcb.snd_una, &|s| rack.too_recent(now, s.sent_at));
        c.report_lost_segments(now);
        if matches!(state, CaState::Open | CaState::Disorder)
            || c.tcb.high_seq <= c.tcb.snd_una
            || (state == CaState::Loss && c.tcb.rto_retransmits == 0)
        {
            c.tcb.prior_ssthresh = current_ssthresh(c);
            c.tcb.prior_cwnd = c.tcb.cwnd;
            c.tcb.ssthresh = c.cc.ssthresh(&mut c.tcb, now);
            c.cc.cwnd_event(&mut c.tcb, CwndEvent::Loss, now);
            self.init_undo(c);
        }
        c.tcb.cwnd = (c.in_flight() + 1) as f64;
        // "Timeout in disordered state after receiving substantial DUPACKs suggests that the
        // degree of reordering is over-estimated": tp->reordering back to the sysctl.
        if matches!(state, CaState::Open | CaState::Disorder)
            && c.board.sacked_out >= c.cfg.dupack_threshold
        {
            self.reordering = 0;
        }
        c.enter_loss_state(now);
        c.tcb.high_seq = c.tcb.high_tx;
        // F-RTO (RFC 5682 §3.1 step 1) unless a recovery was under way, except on a repeated
        // timeout of the same data (§3.2).
        self.undo.frto = c.cfg.frto
            && (matches!(state, CaState::Open | CaState::Disorder | CaState::Cwr)
                || c.tcb.rto_retransmits > 0);
        c.tcb.tlp_high_seq = None;
        self.tlp_deadline = None;
        self.reo_deadline = None;
        self.slot = XmitTimer::Rto;
        c.count_rto();
        // Retransmit the head, back off, restart the timer (tcp_retransmit_timer).
        c.rtt.back_off();
        c.sync_rtt();
        c.retransmit_now(self, c.tcb.snd_una, now, out);
        c.rto_deadline = Some(now + c.rtt.rto());
        c.try_send(self, now, out);
    }

    /// The RACK and TLP timers (the RTO and pacing timers are the sender's own).
    pub(in crate::tcp) fn timers(&self) -> Option<Time> {
        match (self.reo_deadline, self.tlp_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The RACK reordering timer and the loss probe, when due.
    pub(in crate::tcp) fn on_timers(&mut self, c: &mut Connection, now: Time, out: &mut Outbox) {
        if matches!(self.reo_deadline, Some(t) if t <= now) {
            self.on_reo_timeout(c, now, out);
        }
        if matches!(self.tlp_deadline, Some(t) if t <= now) {
            self.on_loss_probe(c, now, out);
        }
    }
}
