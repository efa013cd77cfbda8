//! The records the controllers write into their ring buffer (`struct event`, bpf/startlab.h).

use std::net::Ipv4Addr;

/// Size of one record.
pub const EVENT_BYTES: usize = 64;

pub const KIND_EXIT: u32 = 1;
pub const KIND_PHASE: u32 = 2;

/// One event of one connection.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// `CLOCK_MONOTONIC`, ns.
    pub time_ns: u64,
    pub saddr: Ipv4Addr,
    pub daddr: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
    /// [`KIND_EXIT`] or [`KIND_PHASE`].
    pub kind: u32,
    /// The simulator's phase number (`cc::Phase`).
    pub phase: u32,
    pub ssthresh: u32,
    /// Segments, with the fraction the controller keeps.
    pub cwnd: f64,
    /// The exit reason in the simulator's words; empty for phase events.
    pub reason: String,
}

impl Event {
    /// Decodes one ring-buffer record, or `None` if it is too short.
    pub fn decode(b: &[u8]) -> Option<Event> {
        if b.len() < EVENT_BYTES {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let reason = &b[40..64];
        let end = reason.iter().position(|&c| c == 0).unwrap_or(reason.len());
        Some(Event {
            time_ns: u64_at(0),
            saddr: Ipv4Addr::from(u32::from_be(u32_at(8))),
            daddr: Ipv4Addr::from(u32::from_be(u32_at(12))),
            sport: u16::from_le_bytes([b[16], b[17]]),
            dport: u16::from_le_bytes([b[18], b[19]]),
            kind: u32_at(20),
            phase: u32_at(24),
            ssthresh: u32_at(28),
            cwnd: u64_at(32) as f64 / 65536.0,
            reason: String::from_utf8_lossy(&reason[..end]).into_owned(),
        })
    }
}
