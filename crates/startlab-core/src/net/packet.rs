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

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub flow: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    /// Size on the wire (payload + headers), bytes.
    pub wire_bytes: u32,
    pub kind: PacketKind,
    pub seq: u32,
    /// The receiver's advertised window in segments (ACKs only; `u32::MAX` = unlimited).
    pub rwnd_segments: u32,
    /// Timestamp option (RFC 7323): on data, when it was sent; on an ACK, the echo of the
    /// timestamp of the segment that advanced the receiver's window most recently.
    pub ts: Time,
    pub sack: SackBlocks,
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_packet_stays_small() {
        assert!(std::mem::size_of::<super::Packet>() <= 64);
    }
}
