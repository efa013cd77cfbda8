//! The shared sending path: the window clamp, pacing, `cong_control`; and the packets and
//! senders the stacks' tests build.

use super::*;
use crate::cc::reno::{Reno, RenoConfig};
use crate::cc::{Ack, RateSample};
use crate::net::SackBlocks;
use crate::units::Rate;

/// A controller that paces at a fixed rate and keeps cwnd at 10 through `cong_control`.
#[derive(Debug, Default)]
struct Fixed {
    cong_avoid_calls: u32,
    cong_control_calls: u32,
}
impl CongestionControl for Fixed {
    fn init(&mut self, tcb: &mut Tcb, _now: Time) {
        tcb.cwnd = 10.0;
        // 1040-byte segments at 8.32 Mbps: one per millisecond.
        tcb.pacing_rate = Some(Rate::from_bps(8_320_000));
    }
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        tcb.cwnd
    }
    fn cong_avoid(&mut self, _tcb: &mut Tcb, _ack: &Ack, _now: Time) {
        self.cong_avoid_calls += 1;
    }
    fn cong_control(&mut self, tcb: &mut Tcb, _rs: &RateSample, _now: Time) -> bool {
        self.cong_control_calls += 1;
        tcb.cwnd = 10.0;
        true
    }
    fn has_cong_control(&self) -> bool {
        true
    }
}

pub(in crate::tcp) fn ack_echo(seq: u32, ts: Time) -> Packet {
    Packet { ts, ..ack(seq) }
}

pub(in crate::tcp) fn ack(seq: u32) -> Packet {
    Packet {
        flow: 0,
        src: 1,
        dst: 0,
        wire_bytes: 40,
        kind: PacketKind::Ack,
        seq,
        rwnd_segments: u32::MAX,
        ts: Time::ZERO,
        sack: SackBlocks::default(),
        ecn: Default::default(),
        ece: false,
        cwr: false,
    }
}

pub(in crate::tcp) fn ms(x: u64) -> Time {
    Time::ZERO + Duration::from_millis(x)
}

/// A controller gone wild: a window of 10^15 segments.
#[derive(Debug)]
struct Huge;
impl CongestionControl for Huge {
    fn init(&mut self, tcb: &mut Tcb, _now: Time) {
        tcb.cwnd = 1e15;
    }
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        tcb.cwnd
    }
    fn cong_avoid(&mut self, _tcb: &mut Tcb, _ack: &Ack, _now: Time) {}
}

#[test]
fn no_controller_can_make_the_sender_send_more_than_the_clamp() {
    let mut s = TcpSender::new(
        0,
        0,
        1,
        TcpConfig::default(),
        FlowSize::UNLIMITED,
        Box::new(Huge),
        Time::ZERO,
    );
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    assert_eq!(out.packets.len(), CWND_CLAMP_SEGMENTS as usize);
    assert_eq!(s.conn.tcb.cwnd, CWND_CLAMP_SEGMENTS);
}

#[test]
fn a_paced_sender_spaces_its_window() {
    let mut s = TcpSender::new(
        0,
        0,
        1,
        TcpConfig::default(),
        FlowSize::UNLIMITED,
        Box::new(Fixed::default()),
        Time::ZERO,
    );
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    assert_eq!(out.packets.len(), 1, "one segment, then wait for the pacer");
    for k in 1..10u64 {
        assert_eq!(s.next_timer(), Some(ms(k)));
        s.on_timer(ms(k), &mut out);
        assert_eq!(out.packets.len() as u64, k + 1);
    }
    // The window (10) is full: the next wake-up is the retransmission timer, not the pacer.
    s.on_timer(ms(10), &mut out);
    assert_eq!(out.packets.len(), 10);
    assert_eq!(s.next_timer(), Some(Time::ZERO + Duration::from_secs(1)));
}

#[test]
fn cong_control_replaces_cong_avoid() {
    let mut s = TcpSender::new(
        0,
        0,
        1,
        TcpConfig::default(),
        FlowSize::UNLIMITED,
        Box::new(Fixed::default()),
        Time::ZERO,
    );
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    for k in 1..10 {
        s.on_timer(ms(k), &mut out);
    }
    for a in 1..=5 {
        s.on_packet(ms(100 + a as u64), &ack(a), &mut out);
    }
    assert_eq!(s.conn.tcb.cwnd, 10.0);
    let fixed = format!("{:?}", s.conn.cc);
    assert!(
        fixed.contains("cong_avoid_calls: 0") && fixed.contains("cong_control_calls: 5"),
        "{fixed}"
    );
    // RTT of the newest acknowledged segment: segment 4 left at 4 ms, its ACK came at 105 ms.
    assert_eq!(s.last_rtt_sample(), Some(Duration::from_millis(101)));
}

/// A Reno sender of `size` with `cfg`.
pub(in crate::tcp) fn reno_sender(cfg: TcpConfig, size: FlowSize) -> TcpSender {
    let reno = Box::new(Reno::new(RenoConfig::default()));
    TcpSender::new(0, 0, 1, cfg, size, reno, Time::ZERO)
}
pub(in crate::tcp) fn sack_ack(seq: u32, block: (u32, u32)) -> Packet {
    let mut sack = SackBlocks::default();
    sack.push(block);
    Packet { sack, ..ack(seq) }
}

pub(in crate::tcp) fn with_ts(p: Packet, ts: Time) -> Packet {
    Packet { ts, ..p }
}

// ----- ECN (RFC 3168) ----------------------------------------------------------------------

fn ecn_ack(seq: u32) -> Packet {
    Packet {
        ece: true,
        ..ack(seq)
    }
}

/// A sender of 10 segments with ECN on the given stack, its first window sent.
fn ecn_sender(linux: bool) -> (TcpSender, Outbox) {
    let mut cfg = TcpConfig {
        initial_window: 10,
        sack: true,
        ecn: true,
        ..TcpConfig::default()
    };
    if linux {
        cfg.stack = crate::tcp::Stack::Linux;
        cfg.loss_detection = crate::tcp::LossDetection::Rack { tlp: false };
        cfg.rto_algorithm = crate::tcp::RtoAlgorithm::Linux;
    }
    let mut s = reno_sender(cfg, FlowSize::UNLIMITED);
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    (s, out)
}

#[test]
fn new_data_is_ect_and_retransmissions_are_not() {
    for linux in [false, true] {
        let (_, out) = ecn_sender(linux);
        assert!(out
            .packets
            .iter()
            .all(|p| p.ecn == crate::net::Ecn::Ect0 && !p.cwr));
    }
    let (mut s, mut out) = ecn_sender(false);
    out.packets.clear();
    for k in 0..3 {
        s.on_packet(ms(100 + k), &ack(0), &mut out);
    }
    assert_eq!(out.packets[0].seq, 0, "the fast retransmit");
    assert_eq!(out.packets[0].ecn, crate::net::Ecn::NotEct);
}

#[test]
fn an_echo_halves_the_window_once_per_window_and_the_next_new_segment_carries_cwr() {
    for linux in [false, true] {
        let (mut s, mut out) = ecn_sender(linux);
        out.packets.clear();
        // ACK of segment 0 with ECE: the controller's ssthresh, here Reno's half of the
        // FlightSize after this ACK (RFC 5681 eq. 4: 9 / 2).
        s.on_packet(ms(100), &ecn_ack(1), &mut out);
        assert_eq!(s.conn.stats.ecn_reductions, 1, "linux {linux}");
        assert_eq!(s.conn.tcb.ssthresh, 4.5, "linux {linux}");
        assert_eq!(
            s.ss_exit().map(|e| e.reason),
            Some(crate::cc::ExitReason::Ecn)
        );
        // More echoes for data sent before the reduction: no second reduction.
        for k in 2..10 {
            s.on_packet(ms(100 + k as u64), &ecn_ack(k), &mut out);
        }
        assert_eq!(s.conn.stats.ecn_reductions, 1, "linux {linux}");
        let first_new = out.packets.iter().find(|p| p.seq >= 10).expect("new data");
        assert!(first_new.cwr, "linux {linux}");
        assert_eq!(out.packets.iter().filter(|p| p.cwr).count(), 1);
        // An echo acknowledging data sent after the reduction reduces again.
        let high = s.conn.tcb.high_tx;
        s.on_packet(ms(300), &ecn_ack(high), &mut out);
        assert_eq!(s.conn.stats.ecn_reductions, 2, "linux {linux}");
    }
}

#[test]
fn without_ecn_an_echo_is_ignored() {
    let mut s = reno_sender(
        TcpConfig {
            initial_window: 10,
            ..TcpConfig::default()
        },
        FlowSize::UNLIMITED,
    );
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    assert!(out.packets.iter().all(|p| p.ecn == crate::net::Ecn::NotEct));
    s.on_packet(ms(100), &ecn_ack(1), &mut out);
    assert_eq!(s.conn.stats.ecn_reductions, 0);
    assert!(s.conn.tcb.cwnd > 10.0);
}
