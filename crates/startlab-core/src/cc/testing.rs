//! A driver that exercises a controller without a network: send, acknowledge, lose, time out
//! and let time pass, calling the hooks in the order the sender calls them.
//!
//! It models an ideal path with a fixed RTT and no queue unless told otherwise, so the window a
//! controller produces round by round can be compared with a sequence derived by hand from a
//! paper.
//!
//! ```
//! use startlab_core::cc::testing::Driver;
//! use startlab_core::cc::registry;
//! use startlab_core::Duration;
//!
//! let cc = registry::build("newreno", &Default::default(), "default", &Default::default()).unwrap();
//! let mut d = Driver::new(cc, 1.0, f64::INFINITY);
//! let windows: Vec<f64> = (0..4).map(|_| d.round(Duration::from_millis(100))).collect();
//! assert_eq!(windows, [2.0, 4.0, 8.0, 16.0]);
//! ```

use super::{Ack, AckSample, CaState, CongestionControl, CwndEvent, RateSample, Tcb};
use crate::time::{Duration, Time};

pub struct Driver {
    pub tcb: Tcb,
    pub cc: Box<dyn CongestionControl>,
    pub now: Time,
    /// Segments sent and not yet acknowledged or lost, with their send times.
    outstanding: std::collections::VecDeque<Time>,
}

impl Driver {
    /// A connection with the given initial cwnd and ssthresh (segments), 1000-byte segments,
    /// already established (`init` has been called).
    pub fn new(cc: Box<dyn CongestionControl>, cwnd: f64, ssthresh: f64) -> Self {
        let mut d = Driver {
            tcb: Tcb::new(1000, 1040, cwnd, ssthresh),
            cc,
            now: Time::ZERO,
            outstanding: Default::default(),
        };
        d.cc.init(&mut d.tcb, d.now);
        d.cc.cwnd_event(&mut d.tcb, CwndEvent::TxStart, d.now);
        d
    }

    pub fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    /// Sends as many segments as the window allows; returns how many. As the sender does, it
    /// marks the flow cwnd-limited unless the receiver's window held it back.
    pub fn send(&mut self) -> u32 {
        let cwnd = self.tcb.cwnd.floor().max(1.0) as u32;
        let allowed = cwnd.min(self.tcb.rwnd);
        let mut n = 0;
        while (self.outstanding.len() as u32) < allowed {
            self.outstanding.push_back(self.now);
            self.tcb.high_tx += 1;
            n += 1;
        }
        self.tcb.in_flight = self.outstanding.len() as u32;
        self.tcb.cwnd_limited = self.tcb.rwnd >= cwnd;
        n
    }

    /// One ACK for the `n` oldest outstanding segments, with the RTT measured on the newest.
    pub fn ack(&mut self, n: u32) {
        let n = n.min(self.outstanding.len() as u32);
        if n == 0 {
            return;
        }
        let prior_in_flight = self.outstanding.len() as u32;
        let mut newest = self.now;
        for _ in 0..n {
            newest = self.outstanding.pop_front().expect("outstanding");
        }
        let rtt = self.now.saturating_since(newest);
        self.tcb.snd_una += n;
        self.tcb.delivered += n as u64;
        self.tcb.in_flight = self.outstanding.len() as u32;
        self.tcb.latest_rtt = Some(rtt);
        self.tcb.min_rtt = Some(self.tcb.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.tcb.srtt = Some(match self.tcb.srtt {
            None => rtt,
            Some(s) => Duration::from_nanos((7 * s.as_nanos() + rtt.as_nanos()) / 8),
        });
        let sample = AckSample {
            acked: n,
            rtt: Some(rtt),
            prior_in_flight,
        };
        self.cc.pkts_acked(&mut self.tcb, &sample, self.now);
        // Every segment of the window delivered over one RTT (an idealised sample).
        let rs = RateSample {
            prior_delivered: self.tcb.delivered.saturating_sub(n as u64),
            delivered: Some(n as u64),
            interval: Some(rtt),
            send_interval: Duration::ZERO,
            ack_interval: rtt,
            prior_in_flight,
            rtt: Some(rtt),
            acked_sacked: n,
            losses: 0,
            is_app_limited: false,
            is_retrans: false,
            tx_in_flight: prior_in_flight,
            lost: 0,
            prior_delivered_ce: 0,
            delivered_ce: 0,
        };
        if !self.cc.cong_control(&mut self.tcb, &rs, self.now) {
            let ack = Ack {
                acked: n,
                ack_seq: self.tcb.snd_una,
            };
            self.cc.cong_avoid(&mut self.tcb, &ack, self.now);
        }
    }

    /// One round trip on an ideal path: send the window at once, then after `rtt` receive one
    /// ACK per segment, spread evenly over the following `spread` (zero: all at once). Returns
    /// cwnd at the end of the round.
    pub fn round_spread(&mut self, rtt: Duration, spread: Duration) -> f64 {
        self.send();
        let n = self.outstanding.len() as u64;
        self.advance(rtt);
        for i in 0..n {
            if i > 0 && !spread.is_zero() {
                self.advance(spread / n);
            }
            self.ack(1);
        }
        self.tcb.cwnd
    }

    /// [`Driver::round_spread`] with every ACK arriving at once.
    pub fn round(&mut self, rtt: Duration) -> f64 {
        self.round_spread(rtt, Duration::ZERO)
    }

    /// A loss detected by duplicate ACKs: the controller's ssthresh, cwnd = ssthresh, one round
    /// in recovery, then back to Open.
    pub fn fast_recovery(&mut self) {
        self.cc
            .set_state(&mut self.tcb, CaState::Recovery, self.now);
        self.tcb.ca_state = CaState::Recovery;
        self.tcb.prior_cwnd = self.tcb.cwnd;
        self.tcb.ssthresh = self.cc.ssthresh(&mut self.tcb, self.now);
        // As the stacks: a controller with cong_control keeps cwnd its own in recovery.
        if !self.cc.has_cong_control() {
            self.tcb.cwnd = self.tcb.ssthresh;
        }
        // The lost segment leaves the flight (it is retransmitted and acknowledged later).
        if self.outstanding.pop_front().is_some() {
            self.tcb.snd_una += 1;
        }
        self.tcb.in_flight = self.outstanding.len() as u32;
        self.cc.set_state(&mut self.tcb, CaState::Open, self.now);
        self.tcb.ca_state = CaState::Open;
    }

    /// A retransmission timeout: everything outstanding is lost, cwnd = 1.
    pub fn timeout(&mut self) {
        self.tcb.prior_cwnd = self.tcb.cwnd;
        self.tcb.ssthresh = self.cc.ssthresh(&mut self.tcb, self.now);
        // Linux `tcp_enter_loss` order, as the sender.
        self.cc.cwnd_event(&mut self.tcb, CwndEvent::Loss, self.now);
        self.cc.set_state(&mut self.tcb, CaState::Loss, self.now);
        self.tcb.ca_state = CaState::Loss;
        self.tcb.cwnd = 1.0;
        self.tcb.snd_una = self.tcb.high_tx;
        self.outstanding.clear();
        self.tcb.in_flight = 0;
        self.cc.set_state(&mut self.tcb, CaState::Open, self.now);
        self.tcb.ca_state = CaState::Open;
    }

    pub fn in_flight(&self) -> u32 {
        self.outstanding.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::registry;

    fn newreno() -> Box<dyn CongestionControl> {
        registry::build(
            "newreno",
            &Default::default(),
            "default",
            &Default::default(),
        )
        .unwrap()
    }

    #[test]
    fn reno_doubles_then_adds_one_per_round() {
        let mut d = Driver::new(newreno(), 1.0, 8.0);
        let rtt = Duration::from_millis(100);
        let w: Vec<f64> = (0..3).map(|_| d.round(rtt)).collect();
        assert_eq!(w, [2.0, 4.0, 8.0]);
        // At ssthresh: 8 ACKs each add 1/cwnd.
        let w = d.round(rtt);
        assert!(w > 8.9 && w < 9.0, "{w}");
    }

    #[test]
    fn loss_halves_and_timeout_restarts_from_one() {
        let mut d = Driver::new(newreno(), 16.0, 16.0);
        d.send();
        d.fast_recovery();
        assert_eq!(d.tcb.cwnd, 8.0);
        d.timeout();
        assert_eq!(d.tcb.cwnd, 1.0);
        // FlightSize was 16 at the loss, 15 at the timeout.
        assert_eq!(d.tcb.ssthresh, 7.5);
    }
}
