//! Active queue management: disciplines that decide when a packet leaves, not only whether it
//! enters. CoDel and FQ-CoDel drop (or mark) at dequeue from the packet's sojourn time;
//! FQ-CoDel also reorders flows; PIE drops at enqueue with a probability that a timer updates
//! from the dequeue-time delay. The link therefore keeps their packets and runs their dequeue
//! whenever its transmitter frees (see `link.rs`), where a FIFO's departure is computed at
//! admission.
//!
//! Each follows Linux 6.18's qdisc of the same name, in its integer arithmetic.

pub mod codel;
pub mod fq_codel;
pub mod pie;

pub use codel::{Codel, CodelParams};
pub use fq_codel::{Classifier, FqCodel, FqCodelParams};
pub use pie::{Pie, PieParams};

use super::packet::Packet;
use crate::time::Time;

/// A packet held by an AQM.
#[derive(Copy, Clone, Debug)]
pub struct Queued {
    pub packet: Packet,
    /// The event-order number reserved for its arrival at the far end.
    pub seq: u64,
    /// When it entered the queue (the qdisc's enqueue timestamp).
    pub enqueued: Time,
}

/// What a discipline decided besides the packet it returns: the packets it dropped and how many
/// it marked CE.
#[derive(Clone, Debug, Default)]
pub struct Verdicts {
    pub dropped: Vec<Queued>,
    pub marks: u64,
}

/// One link direction's AQM. Its variants differ in size; the discipline boxes the whole enum
/// (one per link direction), so they stay inline here.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Aqm {
    Codel(Codel),
    FqCodel(FqCodel),
    Pie(Pie),
}

impl Aqm {
    /// Offers an arrival. `Err` returns it refused; drops of other packets it causes (FQ-CoDel's
    /// overflow) and marks go to `out`.
    pub fn enqueue(&mut self, item: Queued, out: &mut Verdicts) -> Result<(), Queued> {
        match self {
            Aqm::Codel(q) => q.enqueue(item),
            Aqm::FqCodel(q) => {
                q.enqueue(item, out);
                Ok(())
            }
            Aqm::Pie(q) => q.enqueue(item, out),
        }
    }

    /// The next packet to transmit at `now`, if any.
    pub fn dequeue(&mut self, now: Time, out: &mut Verdicts) -> Option<Queued> {
        match self {
            Aqm::Codel(q) => q.dequeue(now, out),
            Aqm::FqCodel(q) => q.dequeue(now, out),
            Aqm::Pie(q) => q.dequeue(now),
        }
    }

    /// The discipline's own timer (PIE's probability update), if it has one.
    pub fn next_timer(&self) -> Option<Time> {
        match self {
            Aqm::Pie(q) => Some(q.next_update()),
            _ => None,
        }
    }

    /// Fires the timer due at `next_timer`, `now` being at or after it.
    pub fn on_timer(&mut self, now: Time) {
        if let Aqm::Pie(q) = self {
            q.update(now);
        }
    }

    /// Packets queued.
    pub fn len(&self) -> u32 {
        match self {
            Aqm::Codel(q) => q.len(),
            Aqm::FqCodel(q) => q.len(),
            Aqm::Pie(q) => q.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes queued.
    pub fn backlog(&self) -> u64 {
        match self {
            Aqm::Codel(q) => q.backlog(),
            Aqm::FqCodel(q) => q.backlog(),
            Aqm::Pie(q) => q.backlog(),
        }
    }

    /// The packet limit.
    pub fn limit(&self) -> u32 {
        match self {
            Aqm::Codel(q) => q.limit,
            Aqm::FqCodel(q) => q.limit,
            Aqm::Pie(q) => q.limit,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Aqm::Codel(_) => "codel",
            Aqm::FqCodel(_) => "fq_codel",
            Aqm::Pie(_) => "pie",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::net::packet::Ecn;

    pub(crate) fn item_of(flow: u32, bytes: u32, enqueued: Time, ecn: Ecn) -> Queued {
        Queued {
            packet: Packet {
                ecn,
                ..Packet::datagram(flow, 0, 1, bytes, 0, enqueued)
            },
            seq: 0,
            enqueued,
        }
    }

    pub(crate) fn item(bytes: u32, enqueued: Time, ecn: Ecn) -> Queued {
        item_of(0, bytes, enqueued, ecn)
    }
}
