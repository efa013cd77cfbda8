//! The Linux 6.18 stack: the sender's ACK processing and loss recovery (`recovery`: RACK-TLP,
//! PRR, `tcp_enter_loss`), its undo and F-RTO (`undo`), RACK itself (`rack`) and the
//! receiver's ACK policy ([`acks`]).

pub mod acks;
mod cwnd_use;
mod rack;
mod recovery;
mod undo;

#[cfg(test)]
mod tests;

use self::cwnd_use::CwndUse;
use self::rack::Rack;
use self::undo::LinuxUndo;
use super::connection::{Connection, RoundEnd, TransmitRules};
use crate::cc::CaState;
use crate::time::Time;

/// `tcp_in_cwnd_reduction`: in CWR or Recovery.
fn in_cwnd_reduction(c: &Connection) -> bool {
    matches!(c.tcb.ca_state, CaState::Cwr | CaState::Recovery)
}

/// Linux's per-connection recovery state beyond the scoreboard.
#[derive(Clone, Debug, Default)]
pub(in crate::tcp) struct LinuxRecovery {
    /// `snd_nxt` when the current recovery, CWR or loss episode began (`high_seq`).
    high_seq: u32,
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
    /// The tail-loss probe timer (`ICSK_TIME_LOSS_PROBE`) and the probe in flight
    /// (`tlp_high_seq`, `tlp_retrans`).
    tlp_deadline: Option<Time>,
    tlp_high_seq: Option<u32>,
    tlp_retrans: bool,
    /// Timeouts since the cumulative ACK last advanced (`icsk_retransmits`).
    rto_retransmits: u32,
    /// Undo and F-RTO.
    undo: LinuxUndo,
    /// F-RTO step 2b: this transmission round sends new data only (`REXMIT_NEW`).
    new_data_only: bool,
    /// How much of the window is in use (`tcp_cwnd_validate`), and the restart after idle.
    cwnd_use: CwndUse,
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
        if !new_data {
            self.note_retransmission_for_undo(now);
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

    fn after_round(&mut self, c: &mut Connection, now: Time, sent: u32, _end: RoundEnd) {
        self.cwnd_use.validate(c, now, sent);
    }
}

impl LinuxRecovery {
    /// The application writes to a connection that may have been idle
    /// (`tcp_slow_start_after_idle_check`). Returns whether the window restarted.
    pub(in crate::tcp) fn on_write(&mut self, c: &mut Connection, now: Time) -> bool {
        self.cwnd_use.restart_after_idle(c, now)
    }
}
