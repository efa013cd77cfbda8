//! What travels on the links. Kept small and `Copy`: packets are moved through queues by value.

use crate::time::Time;

/// Index of a node (host or router) in the network.
pub type NodeId = u32;
/// Index of a traffic source (TCP connection or UDP source) in the simulation.
pub type FlowId = u32;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// TCP data segment; `seq` is the segment number.
    Data,
    /// Pure TCP acknowledgement; `seq` is the cumulative ACK (next segment expected).
    Ack,
    /// Connection request (handshake).
    Syn,
    /// Connection accept (handshake); `seq` is unused.
    SynAck,
    /// UDP datagram of a CBR or on-off source; `seq` counts datagrams.
    Datagram,
}

/// Up to three SACK blocks, `[start, end)` in segment numbers (RFC 2018 allows 3 with timestamps).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    pub len: u8,
    pub blocks: [(u32, u32); 3],
}

impl SackBlocks {
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.blocks[..self.len as usize].iter().copied()
    }
    pub fn push(&mut self, block: (u32, u32)) {
        if (self.len as usize) < self.blocks.len() {
            self.blocks[self.len as usize] = block;
            self.len += 1;
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The ECN field of the IP header (RFC 3168 §5), with the codepoints' values.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable transport.
    #[default]
    NotEct = 0,
    /// ECT(1) (the L4S identifier of RFC 9331).
    Ect1 = 1,
    /// ECT(0).
    Ect0 = 2,
    /// Congestion experienced.
    Ce = 3,
}

impl Ecn {
    /// The codepoint of the two low bits of an IPv4 TOS byte.
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// Sets CE on an ECN-capable packet and says whether the packet now carries CE, as
    /// `IP_ECN_set_ce` does (`if (!(ecn & 2)) return !ecn;`): a Not-ECT packet cannot be
    /// marked (an AQM drops it instead), one already CE counts as marked and is left as it is.
    pub fn set_ce(&mut self) -> bool {
        match self {
            Ecn::Ect0 | Ecn::Ect1 | Ecn::Ce => {
                *self = Ecn::Ce;
                true
            }
            Ecn::NotEct => false,
        }
    }
}

/// A fixed layout of exactly 64 bytes, aligned to 16: a packet is copied on every hop and
/// event, and with the compiler's own layout it copied 63 bytes with an overlapping unaligned
/// move that stalled on store-to-load forwarding (a tenth of the simulator's time).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct Packet {
    /// Timestamp option (RFC 7323): on data, when it was sent; on an ACK, the echo of the
    /// timestamp of the segment that advanced the receiver's window most recently.
    pub ts: Time,
    pub flow: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    /// Size on the wire (payload + headers), bytes.
    pub wire_bytes: u32,
    pub seq: u32,
    /// The receiver's advertised window in segments (ACKs only; `u32::MAX` = unlimited).
    pub rwnd_segments: u32,
    pub sack: SackBlocks,
    pub kind: PacketKind,
    /// The IP header's ECN field.
    pub ecn: Ecn,
    /// TCP's ECN-Echo flag (an ACK reporting CE, RFC 3168 §6.1.3).
    pub ece: bool,
    /// TCP's Congestion Window Reduced flag (the sender reacted to ECE).
    pub cwr: bool,
}

impl Packet {
    /// A datagram of `wire_bytes` from `src` to `dst`, numbered `seq`, sent at `ts` (UDP
    /// sources, the emulator's IP packets, replays): no TCP fields, Not-ECT.
    pub fn datagram(
        flow: FlowId,
        src: NodeId,
        dst: NodeId,
        wire_bytes: u32,
        seq: u32,
        ts: Time,
    ) -> Self {
        Packet {
            ts,
            flow,
            src,
            dst,
            wire_bytes,
            seq,
            rwnd_segments: 0,
            sack: SackBlocks::default(),
            kind: PacketKind::Datagram,
            ecn: Ecn::NotEct,
            ece: false,
            cwr: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ecn;

    #[test]
    fn set_ce_marks_only_ect() {
        for (before, marked, after) in [
            (Ecn::NotEct, false, Ecn::NotEct),
            (Ecn::Ect0, true, Ecn::Ce),
            (Ecn::Ect1, true, Ecn::Ce),
            (Ecn::Ce, true, Ecn::Ce),
        ] {
            let mut e = before;
            assert_eq!(e.set_ce(), marked);
            assert_eq!(e, after);
            assert_eq!(Ecn::from_bits(before as u8), before);
        }
    }

    #[test]
    fn a_packet_is_one_aligned_64_byte_block() {
        assert_eq!(std::mem::size_of::<super::Packet>(), 64);
        assert_eq!(std::mem::align_of::<super::Packet>(), 16);
    }

    #[test]
    fn a_packet_stays_small() {
        assert!(std::mem::size_of::<super::Packet>() <= 64);
    }
}
