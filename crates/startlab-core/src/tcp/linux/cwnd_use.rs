//! How much of its window a Linux connection uses, and what it does with a window it does not
//! use (`tcp_output.c`): `tcp_cwnd_validate` after each transmission round, the decay of an
//! application-limited window (`tcp_cwnd_application_limited`, RFC 2861's rule as Linux keeps
//! it), and the restart after idle (`tcp_slow_start_after_idle_check`, `tcp_cwnd_restart`).

use super::undo::current_ssthresh;
use crate::cc::{CaState, CwndEvent};
use crate::tcp::connection::Connection;
use crate::time::Time;

/// `tp->cwnd_usage_seq`, `tp->snd_cwnd_used` and `tp->snd_cwnd_stamp` (the flag and
/// `max_packets_out` live in the `Tcb`, where controllers and eBPF programs read them).
#[derive(Clone, Debug, Default)]
pub(super) struct CwndUse {
    cwnd_usage_seq: u32,
    snd_cwnd_used: u32,
    snd_cwnd_stamp: Time,
}

/// The window in whole segments, as `tcp_snd_cwnd`.
fn cwnd(c: &Connection) -> u32 {
    c.tcb.cwnd.max(0.0).floor() as u32
}

/// `tcp_is_cwnd_limited`: the window is in use, or in slow start it is less than twice the
/// most that was out in the last round.
pub(super) fn is_cwnd_limited(c: &Connection) -> bool {
    if c.tcb.is_cwnd_limited {
        return true;
    }
    c.tcb.in_slow_start() && (cwnd(c) as u64) < 2 * c.tcb.max_packets_out as u64
}

impl CwndUse {
    /// `tcp_cwnd_validate`, at the end of a transmission round that sent `sent` segments or
    /// found the window full (or held new data back for want of window: `deferred_for_cwnd`,
    /// GSO deferral's `is_cwnd_limited`).
    pub fn validate(&mut self, c: &mut Connection, now: Time, sent: u32, deferred_for_cwnd: bool) {
        let window_full = c.in_flight() >= cwnd(c) || deferred_for_cwnd;
        if sent == 0 && !window_full {
            return;
        }
        let packets_out = c.packets_out();
        // The strongest signal of the window's use in the last round (snd_una passed
        // cwnd_usage_seq), kept until a stronger one comes.
        if c.tcb.snd_una >= self.cwnd_usage_seq
            || window_full
            || (!c.tcb.is_cwnd_limited && packets_out > c.tcb.max_packets_out)
        {
            c.tcb.is_cwnd_limited = window_full;
            c.tcb.max_packets_out = packets_out;
            self.cwnd_usage_seq = c.tcb.high_tx;
        }
        if is_cwnd_limited(c) {
            self.snd_cwnd_used = 0;
            self.snd_cwnd_stamp = now;
            return;
        }
        self.snd_cwnd_used = self.snd_cwnd_used.max(packets_out);
        if c.cfg.restart_after_idle
            && now.saturating_since(self.snd_cwnd_stamp) >= c.rtt.rto()
            && !c.owns_cwnd
        {
            self.application_limited(c, now);
        }
    }

    /// `tcp_cwnd_application_limited`: a window the application has not filled for an RTO
    /// decays halfway to what it used (at least the initial window). A writer blocked on a full
    /// send buffer (`SOCK_NOSPACE`: data written and not yet sent) is not application-limited.
    fn application_limited(&mut self, c: &mut Connection, now: Time) {
        let writer_blocked = c.tcb.high_tx < c.send.written();
        if c.tcb.ca_state == CaState::Open && !writer_blocked {
            let win_used = self.snd_cwnd_used.max(c.cfg.initial_window);
            let w = cwnd(c);
            if win_used < w {
                c.tcb.ssthresh = current_ssthresh(c);
                c.tcb.cwnd = ((w + win_used) >> 1) as f64;
            }
            self.snd_cwnd_used = 0;
        }
        self.snd_cwnd_stamp = now;
    }

    /// `tcp_slow_start_after_idle_check`, when the application writes: a connection with
    /// nothing out that has sent nothing for longer than the RTO restarts its window
    /// (`tcp_cwnd_restart`; not for a controller with `cong_control`, which handles idle
    /// itself). Times are compared in nanoseconds where Linux counts jiffies.
    pub fn restart_after_idle(&mut self, c: &mut Connection, now: Time) -> bool {
        if !c.cfg.restart_after_idle || c.packets_out() > 0 || c.owns_cwnd {
            return false;
        }
        let rto = c.rtt.rto();
        let mut idle = now.saturating_since(c.tcb.lsndtime);
        if idle <= rto {
            return false;
        }
        c.cc.cwnd_event(&mut c.tcb, CwndEvent::CwndRestart, now);
        c.tcb.ssthresh = current_ssthresh(c);
        let restart = c.cfg.initial_window.min(cwnd(c));
        let mut w = cwnd(c);
        // Halved for each RTO, whole or begun, beyond the first, down to the restart window.
        loop {
            idle = idle.saturating_sub(rto);
            if idle.is_zero() || w <= restart {
                break;
            }
            w >>= 1;
        }
        c.tcb.cwnd = w.max(restart) as f64;
        self.snd_cwnd_stamp = now;
        self.snd_cwnd_used = 0;
        true
    }
}
