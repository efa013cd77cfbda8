//! Round trips: where one ends and the next begins (by sequence number, as Vegas and Linux's
//! `beg_snd_nxt` delimit them), and the RTT samples of a round. Shared by Vegas, Vegas slow start,
//! Gallop-Vegas and P-Start.

use super::Tcb;
use crate::time::Duration;
use serde::{Deserialize, Serialize};

/// What an ACK means for the round-trip count.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RoundEvent {
    /// The ACK belongs to the current round.
    Same,
    /// The first ACK since the delimiter was (re)started: a round begins, none has ended.
    First,
    /// The ACK covers a segment sent after the current round began: that round has ended and
    /// this ACK is the first of the next.
    Next,
}

/// Delimits round trips by sequence number, as Vegas does (Linux `beg_snd_nxt`): a round begins
/// with the first ACK that covers a segment sent after the previous round began. At that ACK the
/// end marker becomes `high_tx`, so the round lasts until every segment sent so far is
/// acknowledged and one more is.
///
/// After a timeout the segments below the old `high_tx` are sent again without moving `high_tx`,
/// so the first round after [`Rounds::reset`] lasts until the whole old flight is repaired.
#[derive(Clone, Debug, Default)]
pub struct Rounds {
    end: Option<u32>,
}

impl Rounds {
    /// Call on every ACK that delivers data, after `tcb.snd_una` has advanced.
    pub fn on_ack(&mut self, tcb: &Tcb) -> RoundEvent {
        match self.end {
            Some(end) if tcb.snd_una <= end => RoundEvent::Same,
            Some(_) => {
                self.end = Some(tcb.high_tx);
                RoundEvent::Next
            }
            None => {
                self.end = Some(tcb.high_tx);
                RoundEvent::First
            }
        }
    }

    /// Forget the current round; the next ACK begins a new one ([`RoundEvent::First`]).
    pub fn reset(&mut self) {
        self.end = None;
    }
}

// ----- the backlog estimate (eq. 1) --------------------------------------------------------------

/// Which RTT of a round stands for "the actual round-trip time" D of eq. (1).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RoundRtt {
    /// The mean of the round's RTT samples (Brakmo and Peterson's implementation, and ns-2's,
    /// which both papers used).
    #[default]
    Mean,
    /// The smallest sample of the round (Linux `tcp_vegas`, which discounts delayed ACKs).
    Min,
}

/// RTT samples of one round.
#[derive(Copy, Clone, Debug, Default)]
pub struct RttStats {
    sum_secs: f64,
    count: u32,
    min: Option<Duration>,
}

impl RttStats {
    pub fn add(&mut self, rtt: Duration) {
        self.sum_secs += rtt.as_secs_f64();
        self.count += 1;
        self.min = Some(self.min.map_or(rtt, |m| m.min(rtt)));
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// The round's RTT in seconds, if it had samples.
    pub fn rtt(&self, which: RoundRtt) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        Some(match which {
            RoundRtt::Mean => self.sum_secs / self.count as f64,
            RoundRtt::Min => self.min.map_or(0.0, |m| m.as_secs_f64()),
        })
    }
}
