//! The receiving end: cumulative ACKs, delayed ACKs (RFC 5681 §4.2, RFC 1122), SACK blocks
//! (RFC 2018) and D-SACK blocks (RFC 2883).

use super::intervals::IntervalSet;
use super::linux::acks::{AckAction, Arrival, LinuxAcks};
use super::{AckPolicy, FlowSize, Outbox, TcpConfig};
use crate::net::{Ecn, FlowId, NodeId, Packet, PacketKind, SackBlocks};
use crate::time::Time;

#[derive(Debug)]
pub struct TcpReceiver {
    flow: FlowId,
    /// This host.
    node: NodeId,
    /// The sender's host.
    peer: NodeId,
    cfg: TcpConfig,
    size: FlowSize,
    /// Next segment expected in order.
    rcv_nxt: u32,
    /// Segments received above `rcv_nxt`.
    out_of_order: IntervalSet,
    /// Segments that triggered the last ACKs, most recent first (RFC 2018: the first block holds
    /// the most recent segment, the following ones repeat recently reported blocks).
    recent: [Option<u32>; 3],
    /// In-order segments received since the last ACK.
    unacked: u32,
    delack_deadline: Option<Time>,
    /// Linux's ACK policy and receive window, when `ack_policy` is `Linux`.
    linux: Option<Box<LinuxAcks>>,
    /// A duplicate segment to report in the next ACK's first SACK block (RFC 2883 §4; Linux
    /// `tcp_dsack_set`, which keeps the latest).
    dsack_pending: Option<(u32, u32)>,
    /// Linux SACK compression: when the held ACK goes.
    compress_deadline: Option<Time>,
    /// RFC 7323 TS.Recent and Last.ACK.sent.
    ts_recent: Time,
    last_ack_sent: u32,
    /// Payload bytes delivered in order to the application.
    pub delivered_bytes: u64,
    /// Segments shorter than the MSS received above `rcv_nxt`, with their payload.
    short: std::collections::BTreeMap<u32, u32>,
    /// ECN: a CE mark is echoed (ECE) until a segment with CWR (`TCP_ECN_DEMAND_CWR`).
    ecn_demand_cwr: bool,
    /// Data segments that arrived with CE.
    pub ce_marks: u64,
    /// DCTCP's CE state: whether the latest segment was CE.
    ce_marks_state: bool,
    /// Acknowledge the segment being processed at once (a DCTCP state change).
    ack_now: bool,
    /// When the last byte of a finite flow arrived.
    pub completed_at: Option<Time>,
    pub acks_sent: u64,
}

impl TcpReceiver {
    pub fn new(flow: FlowId, node: NodeId, peer: NodeId, cfg: TcpConfig, size: FlowSize) -> Self {
        let linux = match &cfg.ack_policy {
            AckPolicy::Linux(p) => Some(Box::new(LinuxAcks::new(p.clone(), cfg.mss_bytes))),
            AckPolicy::Rfc5681 => None,
        };
        TcpReceiver {
            linux,
            dsack_pending: None,
            compress_deadline: None,
            flow,
            node,
            peer,
            cfg,
            size,
            rcv_nxt: 0,
            out_of_order: IntervalSet::new(),
            recent: [None; 3],
            unacked: 0,
            delack_deadline: None,
            ts_recent: Time::ZERO,
            last_ack_sent: 0,
            delivered_bytes: 0,
            short: std::collections::BTreeMap::new(),
            ecn_demand_cwr: false,
            ce_marks: 0,
            ce_marks_state: false,
            ack_now: false,
            completed_at: None,
            acks_sent: 0,
        }
    }

    pub fn rcv_nxt(&self) -> u32 {
        self.rcv_nxt
    }

    /// A data segment or SYN arrived.
    pub fn on_packet(&mut self, now: Time, pkt: &Packet, out: &mut Outbox) {
        match pkt.kind {
            PacketKind::Syn => {
                let mut syn_ack = self.control(PacketKind::SynAck);
                if let Some(l) = &self.linux {
                    syn_ack.rwnd_segments = self.window_segments(l.initial_window());
                }
                out.packets.push(syn_ack)
            }
            PacketKind::Data => {
                // RFC 7323 §4.3: echo the timestamp of the earliest segment not yet acknowledged
                // that advanced the window (or of a retransmission of old data).
                if pkt.ts >= self.ts_recent && pkt.seq <= self.last_ack_sent {
                    self.ts_recent = pkt.ts;
                }
                if self.cfg.ecn {
                    self.on_ecn(pkt, out);
                }
                // A segment shorter than the MSS ends one of the sender's writes.
                let payload = pkt.wire_bytes.saturating_sub(self.cfg.header_bytes);
                if payload < self.cfg.mss_bytes && pkt.seq >= self.rcv_nxt {
                    self.short.insert(pkt.seq, payload);
                }
                self.on_data(now, pkt.seq, out)
            }
            _ => {}
        }
    }

    fn on_data(&mut self, now: Time, seq: u32, out: &mut Outbox) {
        if self.linux.is_some() {
            return self.on_data_linux(now, seq, out);
        }
        self.note_duplicate(seq);
        let mut immediate = !self.cfg.delayed_ack || std::mem::take(&mut self.ack_now);
        if seq == self.rcv_nxt {
            let filled_hole = !self.out_of_order.is_empty();
            self.deliver(seq + 1);
            if let Some(end) = self.out_of_order.pop_starting_at(self.rcv_nxt) {
                self.deliver(end);
            }
            self.unacked += 1;
            // RFC 5681 §4.2: ACK at once when a segment fills a hole; otherwise every second
            // full segment.
            if filled_hole || self.unacked >= 2 {
                immediate = true;
            }
        } else {
            // Out of order (RFC 5681 §4.2: send a duplicate ACK at once) or a duplicate.
            if seq > self.rcv_nxt {
                self.out_of_order.insert(seq, seq + 1, |_, _| {});
                self.recent = [Some(seq), self.recent[0], self.recent[1]];
            }
            immediate = true;
        }
        if self.completed_at.is_none()
            && !self.size.is_unlimited()
            && self.rcv_nxt >= self.size.segments
        {
            self.completed_at = Some(now);
            immediate = true;
        }
        if immediate {
            self.send_ack(out);
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.cfg.delayed_ack_timeout);
        }
    }

    /// Linux's receiver (`tcp_data_queue`, `__tcp_ack_snd_check`, then the application's read).
    fn on_data_linux(&mut self, now: Time, seq: u32, out: &mut Outbox) {
        self.note_duplicate(seq);
        let mss = self.cfg.mss_bytes as u64;
        let before = self.rcv_nxt;
        let had_holes = !self.out_of_order.is_empty();
        if seq == self.rcv_nxt {
            self.deliver(seq + 1);
            if let Some(end) = self.out_of_order.pop_starting_at(self.rcv_nxt) {
                self.deliver(end);
            }
        } else if seq > self.rcv_nxt {
            self.out_of_order.insert(seq, seq + 1, |_, _| {});
            self.recent = [Some(seq), self.recent[0], self.recent[1]];
        }
        let ooo_end = self
            .out_of_order
            .ranges()
            .last()
            .map_or(0, |r| r.1 as u64 * mss);
        let arrival = Arrival {
            rcv_nxt_before: before as u64 * mss,
            rcv_nxt: self.rcv_nxt as u64 * mss,
            duplicate: seq < before,
            out_of_order: !self.out_of_order.is_empty(),
            filled_last_hole: had_holes && self.out_of_order.is_empty(),
            ooo_end,
        };
        let linux = self.linux.as_mut().expect("linux receiver");
        let mut action = linux.on_segment(now, arrival);
        if std::mem::take(&mut self.ack_now) {
            action = AckAction::Now;
        }
        if self.completed_at.is_none()
            && !self.size.is_unlimited()
            && self.rcv_nxt >= self.size.segments
        {
            self.completed_at = Some(now);
            action = AckAction::Now;
        }
        match action {
            AckAction::Now => return self.send_ack(out),
            AckAction::Delay(t) => {
                self.delack_deadline = Some(self.delack_deadline.map_or(t, |d| d.min(t)))
            }
            AckAction::Compress(t) => {
                self.compress_deadline = Some(self.compress_deadline.map_or(t, |d| d.min(t)))
            }
        }
        // The application reads what arrived in order.
        let pending = self.delack_deadline.is_some() || self.compress_deadline.is_some();
        let linux = self.linux.as_mut().expect("linux receiver");
        if linux.on_read(now, self.rcv_nxt as u64 * mss, ooo_end, pending) {
            self.send_ack(out);
        }
    }

    /// RFC 3168 §6.1.3 (`tcp_ecn_accept_cwr`, then `tcp_data_ecn_check`): CWR ends the echo; a
    /// CE mark starts it, and on the Linux receiver the next two segments are acknowledged at
    /// once ("sender can have a very low cwnd": `tcp_enter_quickack_mode(sk, 2)`).
    fn on_ecn(&mut self, pkt: &Packet, out: &mut Outbox) {
        if self.cfg.ecn_ca {
            return self.on_ecn_dctcp(pkt.ecn == Ecn::Ce, out);
        }
        if pkt.cwr {
            self.ecn_demand_cwr = false;
        }
        if pkt.ecn == Ecn::Ce {
            self.ce_marks += 1;
            if !self.ecn_demand_cwr {
                self.ecn_demand_cwr = true;
                if let Some(l) = self.linux.as_mut() {
                    l.enter_quickack_mode(2);
                }
            }
        }
    }

    /// DCTCP's receiver (`dctcp_ece_ack_update`, RFC 8257 §3.2): ECE mirrors the CE state of the
    /// latest segment. When the state changes, a delayed ACK for the segments before this one
    /// goes first with the old state, and this segment is acknowledged at once.
    fn on_ecn_dctcp(&mut self, ce: bool, out: &mut Outbox) {
        if self.ce_marks_state != ce {
            if self.delack_deadline.is_some() || self.compress_deadline.is_some() {
                self.send_ack(out);
            }
            self.ack_now = true;
        }
        self.ce_marks_state = ce;
        self.ecn_demand_cwr = ce;
        if ce {
            self.ce_marks += 1;
        }
    }

    /// RFC 2883 §4 (Linux `tcp_data_queue`, `tcp_data_queue_ofo`): a segment received before,
    /// below `rcv_nxt` or already held out of order, is reported in a D-SACK block.
    fn note_duplicate(&mut self, seq: u32) {
        if self.cfg.dsack && (seq < self.rcv_nxt || self.out_of_order.contains(seq)) {
            self.dsack_pending = Some((seq, seq + 1));
        }
    }

    /// A window in bytes as whole segments for the sender.
    fn window_segments(&self, bytes: u64) -> u32 {
        (bytes / self.cfg.mss_bytes.max(1) as u64).min(u32::MAX as u64 - 1) as u32
    }

    fn deliver(&mut self, up_to: u32) {
        let mss = self.cfg.mss_bytes as u64;
        self.delivered_bytes += (up_to - self.rcv_nxt) as u64 * mss;
        while let Some(entry) = self.short.first_entry() {
            if *entry.key() >= up_to {
                break;
            }
            let payload = entry.remove();
            self.delivered_bytes -= mss - payload as u64;
        }
        self.rcv_nxt = up_to;
    }

    /// The delayed-ACK timer is due.
    pub fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        let due = |d: Option<Time>| matches!(d, Some(d) if d <= now);
        if due(self.delack_deadline) || due(self.compress_deadline) {
            self.send_ack(out);
        }
    }

    pub fn next_timer(&self) -> Option<Time> {
        match (self.delack_deadline, self.compress_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn send_ack(&mut self, out: &mut Outbox) {
        self.unacked = 0;
        self.delack_deadline = None;
        self.compress_deadline = None;
        let mut ack = self.control(PacketKind::Ack);
        ack.seq = self.rcv_nxt;
        ack.ece = self.ecn_demand_cwr;
        let rcv_nxt_bytes = self.rcv_nxt as u64 * self.cfg.mss_bytes as u64;
        if let Some(l) = self.linux.as_mut() {
            let w = l.on_ack_sent(rcv_nxt_bytes, true);
            ack.rwnd_segments = self.window_segments(w);
        }
        ack.ts = self.ts_recent;
        self.last_ack_sent = self.rcv_nxt;
        // RFC 2883 §4: the D-SACK block first, once; then the SACK blocks (3 in all with
        // timestamps).
        if let Some(d) = self.dsack_pending.take() {
            ack.sack.push(d);
        }
        if self.cfg.sack && !self.out_of_order.is_empty() {
            for b in self.sack_blocks().iter() {
                ack.sack.push(b);
            }
        }
        if !ack.sack.is_empty() {
            // SACK option: 2 bytes + 8 per block (RFC 2018 §3).
            ack.wire_bytes += 2 + 8 * ack.sack.len as u32;
        }
        self.acks_sent += 1;
        out.packets.push(ack);
    }

    fn sack_blocks(&self) -> SackBlocks {
        let mut blocks = SackBlocks::default();
        let add = |blocks: &mut SackBlocks, r: (u32, u32)| {
            if !blocks.iter().any(|b| b == r) {
                blocks.push(r);
            }
        };
        for seg in self.recent.iter().flatten() {
            if let Some(r) = self.out_of_order.find(*seg) {
                add(&mut blocks, r);
            }
        }
        // Fill the rest with the highest blocks not yet reported.
        for &r in self.out_of_order.ranges().iter().rev() {
            if blocks.len as usize == blocks.blocks.len() {
                break;
            }
            add(&mut blocks, r);
        }
        blocks
    }

    fn control(&self, kind: PacketKind) -> Packet {
        Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            wire_bytes: self.cfg.ack_bytes,
            kind,
            seq: 0,
            rwnd_segments: self.cfg.receive_window,
            ts: Time::ZERO,
            sack: SackBlocks::default(),
            ecn: Default::default(),
            ece: false,
            cwr: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    pub(super) fn data(seq: u32) -> Packet {
        Packet {
            flow: 0,
            src: 0,
            dst: 1,
            wire_bytes: 1040,
            kind: PacketKind::Data,
            seq,
            rwnd_segments: 0,
            ts: Time::ZERO,
            sack: SackBlocks::default(),
            ecn: Default::default(),
            ece: false,
            cwr: false,
        }
    }

    fn receiver(delayed: bool, sack: bool) -> TcpReceiver {
        let cfg = TcpConfig {
            delayed_ack: delayed,
            sack,
            ..TcpConfig::default()
        };
        TcpReceiver::new(0, 1, 0, cfg, FlowSize::from_bytes(10_000, 1000))
    }

    #[test]
    fn acks_every_segment_by_default() {
        let mut r = receiver(false, false);
        let mut out = Outbox::default();
        r.on_packet(Time::ZERO, &data(0), &mut out);
        r.on_packet(Time::ZERO, &data(1), &mut out);
        let acks: Vec<u32> = out.packets.iter().map(|p| p.seq).collect();
        assert_eq!(acks, [1, 2]);
    }

    #[test]
    fn delayed_ack_every_second_segment_or_on_timeout() {
        let mut r = receiver(true, false);
        let mut out = Outbox::default();
        r.on_packet(Time::ZERO, &data(0), &mut out);
        assert!(out.packets.is_empty());
        assert_eq!(
            r.next_timer(),
            Some(Time::ZERO + Duration::from_millis(100))
        );
        r.on_packet(Time::ZERO, &data(1), &mut out);
        assert_eq!(out.packets.len(), 1);
        assert_eq!(out.packets[0].seq, 2);
        r.on_packet(Time::ZERO, &data(2), &mut out);
        r.on_timer(Time::ZERO + Duration::from_millis(100), &mut out);
        assert_eq!(out.packets.last().unwrap().seq, 3);
    }

    #[test]
    fn out_of_order_gets_an_immediate_duplicate_ack_with_sack() {
        let mut r = receiver(true, true);
        let mut out = Outbox::default();
        r.on_packet(Time::ZERO, &data(0), &mut out);
        r.on_packet(Time::ZERO, &data(1), &mut out);
        r.on_packet(Time::ZERO, &data(3), &mut out);
        r.on_packet(Time::ZERO, &data(5), &mut out);
        let last = out.packets.last().unwrap();
        assert_eq!(last.seq, 2);
        let blocks: Vec<_> = last.sack.iter().collect();
        assert_eq!(blocks, [(5, 6), (3, 4)]);
        assert_eq!(last.wire_bytes, 40 + 2 + 16);
        // Filling the hole acknowledges everything up to the next hole at once.
        r.on_packet(Time::ZERO, &data(2), &mut out);
        assert_eq!(out.packets.last().unwrap().seq, 4);
        assert_eq!(r.delivered_bytes, 4000);
    }

    #[test]
    fn a_duplicate_is_reported_once_in_a_dsack_block_ahead_of_the_sack_blocks() {
        let cfg = TcpConfig {
            delayed_ack: true,
            sack: true,
            dsack: true,
            ..TcpConfig::default()
        };
        let mut r = TcpReceiver::new(0, 1, 0, cfg, FlowSize::from_bytes(10_000, 1000));
        let mut out = Outbox::default();
        for seq in [0, 1, 3] {
            r.on_packet(Time::ZERO, &data(seq), &mut out);
        }
        let blocks = |p: &Packet| p.sack.iter().collect::<Vec<_>>();
        assert_eq!(blocks(out.packets.last().unwrap()), [(3, 4)]);
        // Segment 1 again, below rcv_nxt: RFC 2883 §4.1.1, the D-SACK block first, at once.
        r.on_packet(Time::ZERO, &data(1), &mut out);
        let last = *out.packets.last().unwrap();
        assert_eq!((last.seq, blocks(&last)), (2, vec![(1, 2), (3, 4)]));
        assert_eq!(last.wire_bytes, 40 + 2 + 16);
        // Segment 3 again, held out of order: §4.1.2, the D-SACK block inside the first SACK
        // block.
        r.on_packet(Time::ZERO, &data(3), &mut out);
        assert_eq!(blocks(out.packets.last().unwrap()), [(3, 4), (3, 4)]);
        // Each duplicate is reported once.
        r.on_packet(Time::ZERO, &data(4), &mut out);
        assert_eq!(blocks(out.packets.last().unwrap()), [(3, 5)]);
        // Without dsack, a duplicate is acknowledged with the SACK blocks only.
        let mut plain = receiver(true, true);
        for seq in [0, 1, 3, 1] {
            plain.on_packet(Time::ZERO, &data(seq), &mut out);
        }
        assert_eq!(blocks(out.packets.last().unwrap()), [(3, 4)]);
    }

    #[test]
    fn completion_is_the_arrival_of_the_last_byte() {
        let cfg = TcpConfig::default();
        let header = cfg.header_bytes;
        let mut r = TcpReceiver::new(0, 1, 0, cfg, FlowSize::from_bytes(1500, 1000));
        let mut out = Outbox::default();
        // The last segment carries the 500 bytes left; it comes first, out of order.
        let last = Packet {
            wire_bytes: 500 + header,
            ..data(1)
        };
        r.on_packet(Time::from_nanos(5), &last, &mut out);
        assert_eq!(r.delivered_bytes, 0);
        r.on_packet(Time::from_nanos(9), &data(0), &mut out);
        assert_eq!(r.completed_at, Some(Time::from_nanos(9)));
        assert_eq!(r.delivered_bytes, 1500);
    }

    #[test]
    fn acks_echo_the_earliest_unacknowledged_timestamp() {
        let mut r = receiver(true, false);
        let mut out = Outbox::default();
        let at = |seq, t| Packet {
            ts: Time::from_nanos(t),
            ..data(seq)
        };
        r.on_packet(Time::ZERO, &at(0, 10), &mut out);
        r.on_packet(Time::ZERO, &at(1, 20), &mut out);
        // Delayed ACK of 0 and 1 echoes segment 0's timestamp (RFC 7323 §4.3).
        assert_eq!(out.packets.last().unwrap().ts, Time::from_nanos(10));
        // An out-of-order segment does not update it.
        r.on_packet(Time::ZERO, &at(3, 40), &mut out);
        assert_eq!(out.packets.last().unwrap().ts, Time::from_nanos(10));
        // The segment filling the hole does.
        r.on_packet(Time::ZERO, &at(2, 50), &mut out);
        assert_eq!(out.packets.last().unwrap().ts, Time::from_nanos(50));
    }
}

#[cfg(test)]
mod ecn_tests {
    use super::*;
    use crate::tcp::Stack;

    fn data(seq: u32, ecn: Ecn, cwr: bool) -> Packet {
        Packet {
            ecn,
            cwr,
            ..super::tests::data(seq)
        }
    }

    fn receiver(linux: bool) -> TcpReceiver {
        let cfg = TcpConfig {
            ecn: true,
            delayed_ack: true,
            stack: if linux {
                Stack::Linux
            } else {
                TcpConfig::default().stack
            },
            ack_policy: if linux {
                AckPolicy::Linux(Default::default())
            } else {
                AckPolicy::Rfc5681
            },
            ..TcpConfig::default()
        };
        TcpReceiver::new(0, 1, 0, cfg, FlowSize::UNLIMITED)
    }

    #[test]
    fn a_ce_mark_is_echoed_until_cwr() {
        for linux in [false, true] {
            let mut r = receiver(linux);
            let mut out = Outbox::default();
            let t = Time::ZERO;
            r.on_packet(t, &data(0, Ecn::Ect0, false), &mut out);
            r.on_packet(t, &data(1, Ecn::Ce, false), &mut out);
            r.on_packet(t, &data(2, Ecn::Ect0, false), &mut out);
            r.on_packet(t, &data(3, Ecn::Ect0, false), &mut out);
            r.on_timer(Time::from_nanos(1_000_000_000), &mut out);
            let echoes: Vec<bool> = out.packets.iter().map(|p| p.ece).collect();
            assert!(!echoes.is_empty());
            // Every ACK after the mark echoes it (the first may precede the mark).
            assert!(
                echoes.iter().skip(1).all(|&e| e),
                "linux {linux}: {echoes:?}"
            );
            out.packets.clear();
            // CWR ends the echo; CE on that same segment would start it again.
            r.on_packet(t, &data(4, Ecn::Ect0, true), &mut out);
            r.on_packet(t, &data(5, Ecn::Ect0, false), &mut out);
            r.on_timer(Time::from_nanos(2_000_000_000), &mut out);
            assert!(out.packets.iter().all(|p| !p.ece), "linux {linux}");
            assert_eq!(r.ce_marks, 1);
        }
    }

    #[test]
    fn dctcps_receiver_mirrors_each_segments_ce_state() {
        // RFC 8257 §3.2 (dctcp_ece_ack_update): with delayed ACKs, a change of CE state sends
        // the held ACK first with the old state, then acknowledges the changing segment at once.
        let cfg = TcpConfig {
            ecn: true,
            ecn_ca: true,
            delayed_ack: true,
            ..TcpConfig::default()
        };
        let mut r = TcpReceiver::new(0, 1, 0, cfg, FlowSize::UNLIMITED);
        let mut out = Outbox::default();
        let t = Time::ZERO;
        r.on_packet(t, &data(0, Ecn::Ect0, false), &mut out);
        assert!(out.packets.is_empty(), "the first segment's ACK is delayed");
        r.on_packet(t, &data(1, Ecn::Ce, false), &mut out);
        let acks: Vec<(u32, bool)> = out.packets.iter().map(|p| (p.seq, p.ece)).collect();
        assert_eq!(acks, vec![(1, false), (2, true)]);
        out.packets.clear();
        // Still CE: an ordinary delayed ACK, echoing; back to ECT: at once, not echoing. No
        // CWR is needed to end the echo.
        r.on_packet(t, &data(2, Ecn::Ce, false), &mut out);
        r.on_packet(t, &data(3, Ecn::Ce, false), &mut out);
        r.on_packet(t, &data(4, Ecn::Ect0, false), &mut out);
        let acks: Vec<(u32, bool)> = out.packets.iter().map(|p| (p.seq, p.ece)).collect();
        assert_eq!(acks, vec![(4, true), (5, false)]);
        assert_eq!(r.ce_marks, 3);
    }

    #[test]
    fn the_linux_receiver_acknowledges_at_once_after_a_mark() {
        let mut r = receiver(true);
        let mut out = Outbox::default();
        // Past the initial quick-ACK mode: many in-order segments with a delayed ACK pending.
        for s in 0..200 {
            r.on_packet(
                Time::from_nanos(s as u64 * 1_000_000),
                &data(s, Ecn::Ect0, false),
                &mut out,
            );
        }
        out.packets.clear();
        r.on_packet(
            Time::from_nanos(300_000_000),
            &data(200, Ecn::Ce, false),
            &mut out,
        );
        assert_eq!(
            out.packets.len(),
            1,
            "tcp_enter_quickack_mode: ACK the marked segment now"
        );
        assert!(out.packets[0].ece);
    }
}
