//! Linux's undo of a window reduction that proves unnecessary (`tcp_input.c`, "Undo
//! procedures"), with the evidence Linux uses: echoed timestamps (Eifel, RFC 3522,
//! `tcp_packet_delayed`), D-SACKs of every retransmission (RFC 2883, RFC 3708,
//! `tcp_try_undo_dsack`) and F-RTO after a timeout (RFC 5682 §3.1, `tcp_process_loss`).
//!
//! An episode (Recovery or Loss) records `undo_marker` (snd_una when it began) and counts its
//! retransmissions in `undo_retrans`; each D-SACK of one of them takes one off. The reduction is
//! undone when nothing retransmitted was needed: every retransmission D-SACKed, or an ACK
//! echoing a timestamp older than the first retransmission.

use super::{in_cwnd_reduction, LinuxRecovery};
use crate::cc::CaState;
use crate::net::Packet;
use crate::tcp::connection::Connection;
use crate::time::Time;

/// Linux's undo state (`dsack_dups`, `frto`; the episode's `undo_marker`, `undo_retrans` and
/// `retrans_stamp`, and the ssthresh an undo restores, `prior_ssthresh`, are the `Tcb`'s).
#[derive(Clone, Debug, Default)]
pub(super) struct LinuxUndo {
    /// Segments reported by D-SACKs so far (`dsack_dups`).
    pub dsack_dups: u64,
    /// F-RTO is running in this Loss episode (`tp->frto`).
    pub frto: bool,
}

/// What an ACK told, as the flags of `tcp_ack` that the undo and F-RTO decisions read.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct AckFlags {
    /// The cumulative ACK advanced (`FLAG_SND_UNA_ADVANCED`).
    pub advanced: bool,
    /// Segments were newly SACKed (`FLAG_DATA_SACKED`).
    pub data_sacked: bool,
    /// Never-retransmitted data sent before `high_seq` was (S)ACKed (`FLAG_ORIG_SACK_ACKED`).
    pub orig_sack_acked: bool,
    /// The ACK carried a valid D-SACK (`FLAG_DSACKING_ACK`).
    pub dsack: bool,
    /// The D-SACK reported the tail-loss probe (`FLAG_DSACK_TLP`).
    pub dsack_tlp: bool,
    /// A duplicate ACK (`num_dupack`): no advance, no window update, no D-SACK.
    pub dupack: bool,
    /// The echoed timestamp (`rcv_tsecr`).
    pub ecr: Time,
    /// An ECN echo on a connection that negotiated ECN (`FLAG_ECE`).
    pub ece: bool,
}

/// What `tcp_process_loss` asks to send (`REXMIT_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Rexmit {
    None,
    /// F-RTO step 2b: new data, not retransmissions.
    New,
    Lost,
}

/// `tcp_current_ssthresh`: ssthresh, or 3/4 of cwnd (in whole segments, as `tcp_snd_cwnd`)
/// if that is larger, outside a reduction.
pub(super) fn current_ssthresh(c: &Connection) -> f64 {
    if in_cwnd_reduction(c) {
        return c.tcb.ssthresh;
    }
    let w = c.tcb.cwnd.floor() as u64;
    c.tcb.ssthresh.max(((w >> 1) + (w >> 2)) as f64)
}

/// `tcp_any_retrans_done`.
pub(super) fn any_retrans_done(c: &Connection) -> bool {
    c.board.retrans_out > 0 || c.board.segs.front().is_some_and(|s| s.retransmitted)
}

impl LinuxRecovery {
    /// `tcp_init_undo`, when Recovery or Loss begins.
    pub(super) fn init_undo(&mut self, c: &mut Connection) {
        c.tcb.undo_marker = Some(c.tcb.snd_una);
        // "Retransmission still in flight may cause DSACKs later."
        c.tcb.undo_retrans = if c.board.retrans_out > 0 {
            c.board.retrans_out as i64
        } else {
            -1
        };
    }

    /// `tcp_retransmit_skb`: a retransmission of the episode (stamped if it is the first).
    pub(super) fn note_retransmission_for_undo(c: &mut Connection, now: Time) {
        c.tcb.retrans_stamp.get_or_insert(now);
        c.tcb.undo_retrans = c.tcb.undo_retrans.max(0) + 1;
    }

    /// `tcp_packet_delayed`: the ACK echoes a timestamp older than the first retransmission, so
    /// the original arrived.
    fn packet_delayed(c: &Connection, ecr: Time) -> bool {
        c.tcb.retrans_stamp.is_some_and(|t| ecr < t)
    }

    /// `tcp_may_undo`. Undo can be switched off (`tcp.undo = false`); Linux cannot.
    fn may_undo(c: &Connection, ecr: Time) -> bool {
        c.cfg.undo
            && c.tcb.undo_marker.is_some()
            && (c.tcb.undo_retrans == 0 || Self::packet_delayed(c, ecr))
    }

    /// `tcp_undo_cwnd_reduction`: the controller's `undo_cwnd`, ssthresh back to what it was;
    /// with `unmark_loss`, nothing is deemed lost any more.
    fn undo_cwnd_reduction(&mut self, c: &mut Connection, unmark_loss: bool) {
        if unmark_loss {
            for s in c.board.segs.iter_mut() {
                s.lost = false;
            }
            c.board.lost_out = 0;
            c.board.retx_hint = c.tcb.snd_una;
        }
        let prior = c.tcb.prior_ssthresh;
        if prior > 0.0 {
            c.tcb.cwnd = c.cc.undo_cwnd(&mut c.tcb);
            c.tcb.ssthresh = c.tcb.ssthresh.max(prior);
        }
        c.tcb.undo_marker = None;
        c.stats.undos += 1;
        // "Force RACK to re-exam losses".
        self.rack.rescan();
    }

    /// `tcp_try_undo_recovery`, when the episode's data is all acknowledged: undo if nothing
    /// retransmitted was needed (else RACK's widened window has one recovery fewer to
    /// persist), then Open.
    pub(super) fn try_undo_recovery(&mut self, c: &mut Connection, ecr: Time, now: Time) {
        if Self::may_undo(c, ecr) {
            self.undo_cwnd_reduction(c, false);
        } else {
            self.rack.recovery_ended_without_undo();
        }
        c.set_ca_state(CaState::Open, now);
    }

    /// `tcp_try_undo_dsack`: every retransmission of the episode was D-SACKed (a recovery
    /// more for RACK's widened window to persist).
    pub(super) fn try_undo_dsack(&mut self, c: &mut Connection) -> bool {
        if c.cfg.undo && c.tcb.undo_marker.is_some() && c.tcb.undo_retrans == 0 {
            self.rack.undone_by_dsacks();
            self.undo_cwnd_reduction(c, false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`, on an advancing ACK in Recovery (from `prior_una`): the hole
    /// was filled by the original, not by a retransmission: reordering. Returns whether the
    /// ACK's processing stops here (retransmissions are still out: neither undo nor mark
    /// more).
    pub(super) fn try_undo_partial(
        &mut self,
        c: &mut Connection,
        prior_una: u32,
        ecr: Time,
        now: Time,
    ) -> bool {
        if !(c.tcb.undo_marker.is_some() && Self::packet_delayed(c, ecr)) {
            return false;
        }
        // "Plain luck! Hole if filled with delayed packet, rather than with a retransmit.
        // Check reordering."
        self.check_sack_reordering(c, prior_una);
        if !c.cfg.undo {
            return false;
        }
        if c.board.retrans_out > 0 {
            return true;
        }
        if !any_retrans_done(c) {
            c.tcb.retrans_stamp = None;
        }
        self.undo_cwnd_reduction(c, true);
        self.try_keep_open(c, now);
        false
    }

    /// `tcp_try_undo_loss`: in Loss, undo from timestamps or D-SACKs, or because F-RTO found
    /// the timeout spurious (`frto_undo`).
    fn try_undo_loss(&mut self, c: &mut Connection, frto_undo: bool, ecr: Time, now: Time) -> bool {
        if (frto_undo && c.cfg.undo) || Self::may_undo(c, ecr) {
            self.undo_cwnd_reduction(c, true);
            c.tcb.rto_retransmits = 0;
            c.set_ca_state(CaState::Open, now);
            return true;
        }
        false
    }

    /// `tcp_process_loss`: an ACK in Loss. F-RTO (RFC 5682 §3.1, the SACK-enhanced version):
    /// after the timeout's retransmission is acknowledged, send new data (step 2b); if data
    /// never retransmitted is then (S)ACKed, the timeout was spurious (step 3b); a SACK or
    /// duplicate ACK instead means the loss was real (step 3a).
    pub(super) fn process_loss(&mut self, c: &mut Connection, f: &AckFlags, now: Time) -> Rexmit {
        let recovered = c.tcb.snd_una >= c.tcb.high_seq;
        if f.advanced && self.try_undo_loss(c, false, f.ecr, now) {
            return Rexmit::None;
        }
        if self.undo.frto {
            if f.orig_sack_acked && self.try_undo_loss(c, true, f.ecr, now) {
                return Rexmit::None;
            }
            if c.tcb.high_tx > c.tcb.high_seq {
                if f.data_sacked || f.dupack {
                    self.undo.frto = false;
                }
            } else if f.advanced && !recovered {
                c.tcb.high_seq = c.tcb.high_tx;
                // tcp_wnd_end after snd_nxt: new data the receiver's window takes.
                let new = c.tcb.high_tx;
                if new < c.send.written() && c.packets_out() < c.tcb.rwnd {
                    return Rexmit::New;
                }
                self.undo.frto = false;
            }
        }
        if recovered {
            // Step 2a and the first part of 3a.
            self.try_undo_recovery(c, f.ecr, now);
            return Rexmit::None;
        }
        Rexmit::Lost
    }

    /// `tcp_try_keep_open`: Disorder while anything is SACKed, lost or retransmitted, else Open.
    pub(super) fn try_keep_open(&mut self, c: &mut Connection, now: Time) {
        let state = if c.board.sacked_out > 0 || c.board.lost_out > 0 || any_retrans_done(c) {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if state != c.tcb.ca_state {
            c.set_ca_state(state, now);
            c.tcb.high_seq = c.tcb.high_tx;
        }
    }

    /// `tcp_check_dsack` and the D-SACK half of `tcp_sacktag_one`: whether the first SACK
    /// block reports a duplicate (below the ACK, or inside the second block), and if it is
    /// credible (`tcp_dsack_seen`: no more duplicates than retransmissions), the retransmissions
    /// it shows were not needed. Returns the duplicate segments (0: no credible D-SACK) and the
    /// block's end.
    pub(super) fn check_dsack(
        &mut self,
        c: &mut Connection,
        pkt: &Packet,
        prior_una: u32,
    ) -> (u32, u32) {
        let mut blocks = pkt.sack.iter();
        let Some((start, end)) = blocks.next() else {
            return (0, 0);
        };
        let is_dsack = start < pkt.seq
            || blocks
                .next()
                .is_some_and(|(s1, e1)| start >= s1 && end <= e1);
        if !is_dsack || start >= end {
            return (0, end);
        }
        let dup_segs = end - start;
        self.undo.dsack_dups += dup_segs as u64;
        if self.undo.dsack_dups > c.stats.retransmissions {
            return (0, end);
        }
        let marker = c.tcb.undo_marker;
        let in_episode = |seq_end: u32| marker.is_some_and(|m| seq_end > m);
        if end <= prior_una {
            // "D-SACK for already forgotten data... Do dumb counting."
            if c.tcb.undo_retrans > 0 && in_episode(end) {
                c.tcb.undo_retrans = (c.tcb.undo_retrans - dup_segs as i64).max(0);
            }
            return (dup_segs, end);
        }
        for seq in start.max(prior_una)..end.min(c.tcb.high_tx) {
            let s = &mut c.board.segs[(seq - prior_una) as usize];
            if s.retransmitted && c.tcb.undo_retrans > 0 && in_episode(seq + 1) {
                c.tcb.undo_retrans -= 1;
            }
            // The retransmission arrived: it is no longer in flight.
            if s.retx_in_flight {
                s.retx_in_flight = false;
                c.board.retrans_out -= 1;
            }
        }
        (dup_segs, end)
    }
}
