//! DCTCP (RFC 8257) as Linux's `net/ipv4/tcp_dctcp.c`: Reno's growth (`tcp_reno_cong_avoid`),
//! and a window reduction in proportion to the fraction of segments the path marked CE.
//!
//! Once per window of data (`next_seq`), `alpha` (a fraction of 1024) moves towards the
//! fraction F of the segments delivered in that window whose ACKs echoed CE:
//! alpha ← alpha − alpha/2^g + F × 2^(10−g) (RFC 8257 §3.3, with g = `shift_g` = 4, i.e.
//! 1/16). An ECN echo makes the stack enter CWR once per window with ssthresh =
//! cwnd − cwnd × alpha / 2048 (§3.4: cwnd × (1 − alpha/2)); a loss halves cwnd as Reno does.
//! The receiver echoes each segment's CE state exactly (`dctcp_ece_ack_update`), which the
//! simulator's receiver does for a flow whose controller needs ECN (`TcpConfig::ecn_ca`).

use super::params::{closed, param, AlgorithmConfig, Param};
use super::reno::{Reno, RenoConfig, RenoCounting};
use super::{Ack, AckEvent, CaState, CongestionControl, CwndEvent, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// `DCTCP_MAX_ALPHA`: alpha = 1 in tenths of 2^10.
const MAX_ALPHA: u32 = 1024;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpConfig {
    /// `dctcp_shift_g`: the EWMA gain g = 1/2^shift_g.
    pub shift_g: u32,
    /// `dctcp_alpha_on_init`, in 1024ths.
    pub alpha_on_init: u32,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        // tcp_dctcp.c's module parameters.
        DctcpConfig {
            shift_g: 4,
            alpha_on_init: MAX_ALPHA,
        }
    }
}

impl AlgorithmConfig for DctcpConfig {
    const PARAMS: &'static [Param] = &[
        param(
            "shift_g",
            "",
            closed(0.0, 10.0),
            "alpha's EWMA gain g = 1/2^shift_g (tcp_dctcp.c dctcp_shift_g; RFC 8257's 1/16 is 4)",
        ),
        param(
            "alpha_on_init",
            "1/1024",
            closed(0.0, 1024.0),
            "alpha at the start, in 1024ths (dctcp_alpha_on_init)",
        ),
    ];
}

#[derive(Debug, Clone)]
pub struct Dctcp {
    config: DctcpConfig,
    reno: Reno,
    /// `dctcp_alpha`, in 1024ths.
    alpha: u32,
    /// The window of the alpha update ends when this segment is acknowledged.
    next_seq: u32,
    old_delivered: u64,
    old_delivered_ce: u64,
    /// cwnd before the last reduction (`loss_cwnd`, for the undo).
    loss_cwnd: f64,
}

impl Dctcp {
    pub fn new(config: DctcpConfig) -> Self {
        Dctcp {
            alpha: config.alpha_on_init.min(MAX_ALPHA),
            config,
            reno: Reno::new(RenoConfig {
                counting: RenoCounting::Linux,
                ..RenoConfig::default()
            }),
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            loss_cwnd: 0.0,
        }
    }

    /// alpha in 1024ths (for tests and tables).
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// `dctcp_reset`: a new observation window from now.
    fn reset(&mut self, tcb: &Tcb) {
        self.next_seq = tcb.high_tx;
        self.old_delivered = tcb.delivered;
        self.old_delivered_ce = tcb.delivered_ce;
    }

    /// `dctcp_update_alpha`, once the window's last segment is acknowledged.
    fn update_alpha(&mut self, tcb: &Tcb) {
        if tcb.snd_una < self.next_seq {
            return;
        }
        let g = self.config.shift_g;
        let mut delivered_ce = (tcb.delivered_ce - self.old_delivered_ce) as u32;
        let mut alpha = self.alpha;
        // alpha = (1 - g) alpha: min_not_zero keeps alpha >> g from being skipped at 0.
        let decay = alpha >> g;
        alpha -= if decay == 0 { alpha } else { decay.min(alpha) };
        if delivered_ce > 0 {
            let delivered = (tcb.delivered - self.old_delivered) as u32;
            // + g F, F = delivered_ce / delivered, in 1024ths.
            delivered_ce <<= 10 - g;
            delivered_ce /= delivered.max(1);
            alpha = (alpha + delivered_ce).min(MAX_ALPHA);
        }
        self.alpha = alpha;
        self.reset(tcb);
    }

    /// `dctcp_react_to_loss`: Reno's halving.
    fn react_to_loss(&mut self, tcb: &mut Tcb) {
        self.loss_cwnd = tcb.cwnd;
        tcb.ssthresh = (tcb.cwnd.floor() as u32 >> 1).max(2) as f64;
    }
}

impl CongestionControl for Dctcp {
    fn init(&mut self, tcb: &mut Tcb, _now: Time) {
        self.alpha = self.config.alpha_on_init.min(MAX_ALPHA);
        self.loss_cwnd = 0.0;
        self.reset(tcb);
    }

    /// `dctcp_ssthresh`: cwnd × (1 − alpha/2), at least 2.
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        let cwnd = tcb.cwnd.floor() as u64;
        self.loss_cwnd = tcb.cwnd;
        (cwnd - ((cwnd * self.alpha as u64) >> 11)).max(2) as f64
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        self.reno.cong_avoid(tcb, ack, now);
    }

    /// `dctcp_state`: entering Recovery (a loss) halves as Reno.
    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, now: Time) {
        if state == CaState::Recovery && tcb.ca_state != CaState::Recovery {
            self.react_to_loss(tcb);
        }
        self.reno.set_state(tcb, state, now);
    }

    /// `dctcp_cwnd_event`: a timeout reacts as a loss.
    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, _now: Time) {
        if event == CwndEvent::Loss {
            self.react_to_loss(tcb);
        }
    }

    fn in_ack_event(&mut self, tcb: &mut Tcb, _event: AckEvent, _now: Time) {
        self.update_alpha(tcb);
    }

    /// `dctcp_cwnd_undo`.
    fn undo_cwnd(&mut self, tcb: &mut Tcb) -> f64 {
        tcb.cwnd.max(self.loss_cwnd)
    }

    fn needs_ecn(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcb() -> Tcb {
        let mut t = Tcb::new(1448, 1500, 10.0, f64::INFINITY);
        t.high_tx = 100;
        t
    }

    #[test]
    fn alpha_decays_by_a_sixteenth_without_marks_and_rises_by_f_over_sixteen_with_them() {
        let mut d = Dctcp::new(DctcpConfig::default());
        let mut t = tcb();
        d.init(&mut t, Time::ZERO);
        assert_eq!(d.alpha(), 1024);
        // A window of 100 segments, none marked: 1024 - 1024/16 = 960.
        t.snd_una = 100;
        t.delivered = 100;
        t.high_tx = 200;
        d.in_ack_event(&mut t, AckEvent::default(), Time::ZERO);
        assert_eq!(d.alpha(), 960);
        // Not yet the end of the next window: no change.
        t.snd_una = 150;
        t.delivered = 150;
        t.delivered_ce = 25;
        d.in_ack_event(&mut t, AckEvent::default(), Time::ZERO);
        assert_eq!(d.alpha(), 960);
        // The window ends with 50 of 100 delivered marked: 960 - 60 + (50 << 6) / 100 = 932.
        t.snd_una = 200;
        t.delivered = 200;
        t.delivered_ce = 50;
        d.in_ack_event(&mut t, AckEvent::default(), Time::ZERO);
        assert_eq!(d.alpha(), 900 + 32);
    }

    #[test]
    fn an_echo_reduces_by_half_alpha_and_a_loss_by_half() {
        let mut d = Dctcp::new(DctcpConfig {
            alpha_on_init: 256, // a quarter
            ..DctcpConfig::default()
        });
        let mut t = tcb();
        t.cwnd = 100.0;
        d.init(&mut t, Time::ZERO);
        // 100 - 100 x 256 / 2048 = 100 - 12 (integer shift).
        assert_eq!(d.ssthresh(&mut t, Time::ZERO), 88.0);
        d.set_state(&mut t, CaState::Recovery, Time::ZERO);
        assert_eq!(t.ssthresh, 50.0);
        // With alpha 0 there is no reduction beyond the floor of 2.
        let mut z = Dctcp::new(DctcpConfig {
            alpha_on_init: 0,
            ..DctcpConfig::default()
        });
        z.init(&mut t, Time::ZERO);
        assert_eq!(z.ssthresh(&mut t, Time::ZERO), 100.0);
        t.cwnd = 2.0;
        assert_eq!(z.ssthresh(&mut t, Time::ZERO), 2.0);
    }
}
