//! Queue disciplines: the drop decision of a FIFO output queue, or an AQM.
//!
//! A FIFO discipline (drop-tail, RED) only decides whether an arriving packet is admitted; the
//! link keeps the packets and computes when each leaves, at the moment it is admitted (see
//! `link.rs`). An AQM (`aqm/`) keeps its packets and decides at dequeue.

use super::aqm::Aqm;
use crate::rng::Rng;
use crate::time::{Duration, Time};

/// A queue limit: packets waiting, or bytes waiting.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u32),
    Bytes(u64),
}

impl Limit {
    /// Whether one more packet of `wire_bytes` fits after `waiting_packets` / `waiting_bytes`.
    pub fn admits(self, waiting_packets: u32, waiting_bytes: u64, wire_bytes: u32) -> bool {
        match self {
            Limit::Packets(n) => waiting_packets < n,
            Limit::Bytes(b) => waiting_bytes + wire_bytes as u64 <= b,
        }
    }
}

/// Occupancy of a queue as seen by an arriving packet.
#[derive(Copy, Clone, Debug)]
pub struct Occupancy {
    pub packets: u32,
    pub bytes: u64,
    /// When the queue last became empty, if it is empty now (RED's idle-time correction).
    pub idle_since: Option<Time>,
}

/// DropTail: admit while below the limit, drop the arrival otherwise.
#[derive(Clone, Debug)]
pub struct DropTail {
    pub limit: Limit,
}

impl DropTail {
    pub fn admit(&mut self, occ: &Occupancy, wire_bytes: u32) -> bool {
        self.limit.admits(occ.packets, occ.bytes, wire_bytes)
    }
}

/// RED parameters, as ns-2 names them (Floyd & Jacobson 1993; ns-2 `red.cc`).
#[derive(Clone, Debug, PartialEq)]
pub struct RedParams {
    /// Hard limit.
    pub limit: Limit,
    /// Lower threshold of the average queue, packets.
    pub min_th: f64,
    /// Upper threshold of the average queue, packets.
    pub max_th: f64,
    /// Drop probability at `max_th`.
    pub max_p: f64,
    /// Weight of the average-queue EWMA.
    pub w_q: f64,
    /// Ramp the drop probability from `max_p` at `max_th` to 1 at `2 × max_th`.
    pub gentle: bool,
}

/// Random Early Detection.
#[derive(Clone, Debug)]
pub struct Red {
    pub params: RedParams,
    /// Average queue length, packets.
    avg: f64,
    /// Packets admitted since the last early drop (ns-2 `count`).
    count: u32,
    /// Transmission time of a typical packet, for the idle-time correction (ns-2 `ptc`).
    typical_tx_time: Duration,
    rng: Rng,
}

impl Red {
    pub fn new(params: RedParams, typical_tx_time: Duration, rng: Rng) -> Self {
        Red {
            params,
            avg: 0.0,
            count: 0,
            typical_tx_time,
            rng,
        }
    }

    pub fn average(&self) -> f64 {
        self.avg
    }

    /// Updates the average queue for an arrival at `now`, then decides (ns-2 `REDQueue::enque`).
    pub fn admit(&mut self, occ: &Occupancy, wire_bytes: u32, now: Time) -> bool {
        let p = &self.params;
        // Average queue: after an idle period, decay as if m small packets had passed through an
        // empty queue (Floyd & Jacobson §4, m = idle time / typical transmission time).
        if let Some(since) = occ.idle_since {
            let m = (now.saturating_since(since).as_nanos() as f64
                / self.typical_tx_time.as_nanos().max(1) as f64)
                .floor();
            self.avg *= (1.0 - p.w_q).powf(m);
        }
        self.avg = (1.0 - p.w_q) * self.avg + p.w_q * occ.packets as f64;

        if !p.limit.admits(occ.packets, occ.bytes, wire_bytes) {
            self.count = 0;
            return false;
        }
        let avg = self.avg;
        let pb = if avg < p.min_th {
            self.count = 0;
            return true;
        } else if avg < p.max_th {
            p.max_p * (avg - p.min_th) / (p.max_th - p.min_th)
        } else if p.gentle && avg < 2.0 * p.max_th {
            p.max_p + (1.0 - p.max_p) * (avg - p.max_th) / p.max_th
        } else {
            // Forced drop above max_th (or 2 max_th when gentle).
            self.count = 0;
            return false;
        };
        // Spread drops uniformly: pa = pb / (1 - count pb) (Floyd & Jacobson §7).
        self.count += 1;
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 {
            1.0
        } else {
            (pb / denom).min(1.0)
        };
        if self.rng.bernoulli(pa) {
            self.count = 0;
            false
        } else {
            true
        }
    }
}

/// The discipline of one link direction.
// RED's state is larger than DropTail's; it stays inline (not boxed) because the discipline is
// matched on every packet and there is one per link direction.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Discipline {
    DropTail(DropTail),
    Red(Red),
    /// Boxed: the FIFO disciplines stay small, so a link's hot fields share cache lines.
    Aqm(Box<Aqm>),
}

impl Discipline {
    /// A FIFO discipline's admission decision (an AQM's link never asks).
    pub fn admit(&mut self, occ: &Occupancy, wire_bytes: u32, now: Time) -> bool {
        match self {
            Discipline::DropTail(q) => q.admit(occ, wire_bytes),
            Discipline::Red(q) => q.admit(occ, wire_bytes, now),
            Discipline::Aqm(_) => unreachable!("an AQM decides in the link's enqueue"),
        }
    }

    pub fn limit(&self) -> Limit {
        match self {
            Discipline::DropTail(q) => q.limit,
            Discipline::Red(q) => q.params.limit,
            Discipline::Aqm(q) => Limit::Packets(q.limit()),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Discipline::DropTail(_) => "droptail",
            Discipline::Red(_) => "red",
            Discipline::Aqm(q) => q.name(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occ(packets: u32) -> Occupancy {
        Occupancy {
            packets,
            bytes: packets as u64 * 1000,
            idle_since: None,
        }
    }

    #[test]
    fn droptail_in_packets_admits_up_to_the_limit() {
        let mut q = DropTail {
            limit: Limit::Packets(3),
        };
        assert!(q.admit(&occ(2), 1000));
        assert!(!q.admit(&occ(3), 1000));
    }

    #[test]
    fn droptail_in_bytes_counts_the_arrival() {
        let mut q = DropTail {
            limit: Limit::Bytes(2500),
        };
        assert!(q.admit(&occ(1), 1000)); // 1000 + 1000 <= 2500
        assert!(!q.admit(&occ(2), 1000)); // 2000 + 1000 > 2500
        assert!(q.admit(&occ(2), 500));
    }

    fn red(gentle: bool) -> Red {
        Red::new(
            RedParams {
                limit: Limit::Packets(1000),
                min_th: 5.0,
                max_th: 15.0,
                max_p: 0.1,
                w_q: 0.5,
                gentle,
            },
            Duration::from_micros(100),
            Rng::stream(1, 0),
        )
    }

    #[test]
    fn red_never_drops_below_min_th_and_always_above_the_forced_region() {
        let mut q = red(false);
        for _ in 0..50 {
            assert!(q.admit(&occ(2), 1000, Time::ZERO));
        }
        // With w_q = 0.5 the average reaches ~40 after a few arrivals at 40.
        for _ in 0..10 {
            q.admit(&occ(40), 1000, Time::ZERO);
        }
        assert!(q.average() > 30.0);
        for _ in 0..20 {
            assert!(!q.admit(&occ(40), 1000, Time::ZERO));
        }
        // Gentle: between max_th and 2 max_th drops are probabilistic, not certain.
        let mut g = red(true);
        let mut admitted = 0;
        for _ in 0..2000 {
            if g.admit(&occ(20), 1000, Time::ZERO) {
                admitted += 1;
            }
        }
        assert!(admitted > 0 && admitted < 2000, "{admitted}");
    }

    #[test]
    fn red_average_decays_over_an_idle_period() {
        let mut q = red(false);
        for _ in 0..10 {
            q.admit(&occ(10), 1000, Time::ZERO);
        }
        let before = q.average();
        // 10 ms idle = 100 typical packet times: (1 - 0.5)^100 ~ 0
        let idle = Occupancy {
            packets: 0,
            bytes: 0,
            idle_since: Some(Time::ZERO),
        };
        q.admit(&idle, 1000, Time::ZERO + Duration::from_millis(10));
        assert!(before > 9.0 && q.average() < 1e-6);
    }
}
