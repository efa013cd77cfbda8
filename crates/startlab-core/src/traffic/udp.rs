//! UDP sources: constant bit rate, and on-off (constant rate while on).

use super::dist::OnOffDistribution;
use crate::net::{FlowId, NodeId, Packet};
use crate::rng::Rng;
use crate::time::{Duration, Time};
use crate::units::Rate;

#[derive(Clone, Debug)]
pub enum UdpPattern {
    Cbr,
    OnOff {
        mean_on: Duration,
        mean_off: Duration,
        distribution: OnOffDistribution,
    },
}

/// The random stream of the UDP source that is flow `flow` of a run (its on-off periods), the
/// same in every world.
pub fn source_stream(seed: u64, flow: FlowId) -> Rng {
    Rng::stream(seed, crate::rng::streams::SOURCE + flow as u64)
}

#[derive(Clone, Debug)]
pub struct UdpSource {
    pub flow: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    pub rate: Rate,
    pub packet_bytes: u32,
    pub start: Time,
    pub stop: Time,
    pub pattern: UdpPattern,
    rng: Rng,
    /// End of the current on-period (on-off only).
    on_until: Time,
    next_seq: u32,
    pub sent_packets: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
}

impl UdpSource {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        flow: FlowId,
        src: NodeId,
        dst: NodeId,
        rate: Rate,
        packet_bytes: u32,
        start: Time,
        stop: Time,
        pattern: UdpPattern,
        rng: Rng,
    ) -> Self {
        UdpSource {
            flow,
            src,
            dst,
            rate,
            packet_bytes,
            start,
            stop,
            pattern,
            rng,
            on_until: start,
            next_seq: 0,
            sent_packets: 0,
            delivered_packets: 0,
            delivered_bytes: 0,
        }
    }

    fn interval(&self) -> Duration {
        self.rate.transmit_time(self.packet_bytes as u64)
    }

    /// Called at `start` and then at each time it returned: emits a packet if the source is on,
    /// and returns when to call it next.
    pub fn on_tick(&mut self, now: Time, out: &mut Vec<Packet>) -> Option<Time> {
        if now >= self.stop {
            return None;
        }
        if let UdpPattern::OnOff {
            mean_on,
            mean_off,
            distribution,
        } = self.pattern.clone()
        {
            if now >= self.on_until {
                // A new on-period starts now (the first, or after the off-period just ended).
                let on = distribution.sample(mean_on.as_secs_f64(), &mut self.rng);
                self.on_until = now + Duration::from_secs_f64(on);
            }
            let next = now + self.interval();
            let at = if next < self.on_until {
                next
            } else {
                let off = distribution.sample(mean_off.as_secs_f64(), &mut self.rng);
                self.on_until + Duration::from_secs_f64(off)
            };
            self.emit(out);
            return (at < self.stop).then_some(at);
        }
        self.emit(out);
        let next = now + self.interval();
        (next < self.stop).then_some(next)
    }

    fn emit(&mut self, out: &mut Vec<Packet>) {
        out.push(Packet::datagram(
            self.flow,
            self.src,
            self.dst,
            self.packet_bytes,
            self.next_seq,
            Time::ZERO,
        ));
        self.next_seq = self.next_seq.wrapping_add(1);
        self.sent_packets += 1;
    }

    pub fn on_delivery(&mut self, pkt: &Packet) {
        self.delivered_packets += 1;
        self.delivered_bytes += pkt.wire_bytes as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbr_sends_at_its_rate_between_start_and_stop() {
        // 8 Mbps with 1000-byte packets: one per millisecond, for 10 ms.
        let mut s = UdpSource::new(
            0,
            0,
            1,
            Rate::from_mbps(8),
            1000,
            Time::ZERO,
            Time::ZERO + Duration::from_millis(10),
            UdpPattern::Cbr,
            Rng::stream(0, 0),
        );
        let mut out = Vec::new();
        let mut t = Some(Time::ZERO);
        while let Some(now) = t {
            t = s.on_tick(now, &mut out);
        }
        assert_eq!(out.len(), 10);
    }
}
