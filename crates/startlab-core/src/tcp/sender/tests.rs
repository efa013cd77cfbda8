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

// ----- an application that writes responses one at a time ----------------------------------

/// Responses of 3000 bytes (3 segments of 1000), 5 s of think time, on a Reno sender with an
/// initial window of 2.
fn request_sender(stack_linux: bool, count: u32) -> TcpSender {
    use crate::rng::Rng;
    use crate::traffic::{OnOffDistribution, RequestDraws, RequestSpec, SizeDistribution};
    let mut cfg = TcpConfig {
        initial_window: 2,
        ..TcpConfig::default()
    };
    if stack_linux {
        cfg.sack = true;
        cfg.stack = crate::tcp::Stack::Linux;
        cfg.loss_detection = crate::tcp::LossDetection::Rack { tlp: false };
        cfg.rto_algorithm = crate::tcp::RtoAlgorithm::Linux;
    }
    let spec = RequestSpec {
        count: Some(count),
        sizes: SizeDistribution::Fixed { bytes: 3000 },
        think: Duration::from_secs(5),
        think_distribution: OnOffDistribution::Constant,
    };
    reno_sender(cfg, FlowSize::UNLIMITED).with_requests(RequestDraws::new(spec, Rng::stream(1, 0)))
}

#[test]
fn each_response_is_written_a_think_time_after_the_last_was_acknowledged() {
    for linux in [false, true] {
        let mut s = request_sender(linux, 2);
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        // IW 2 of the first response's 3 segments.
        assert_eq!(
            out.packets.iter().map(|p| p.seq).collect::<Vec<_>>(),
            [0, 1]
        );
        s.on_packet(ms(100), &ack(1), &mut out);
        s.on_packet(ms(100), &ack(2), &mut out);
        // Slow start: cwnd 4, but only segment 2 is written.
        assert_eq!(out.packets.last().unwrap().seq, 2);
        assert_eq!(out.packets.len(), 3);
        assert_eq!(s.requests().unwrap()[0].completed_at, None);
        s.on_packet(ms(200), &ack(3), &mut out);
        let first = s.requests().unwrap()[0].clone();
        assert_eq!(
            (first.completed_at, first.cwnd, first.restarted),
            (Some(ms(200)), 2.0, false)
        );
        // Nothing is out: the next event is the second write, 5 s after the acknowledgement.
        assert_eq!(s.next_timer(), Some(ms(5200)));
        assert!(!s.is_done());
        // The window grew while it was in use: on the ns-2 stack only on the ACK that found it
        // full (2 -> 3); on Linux's, tcp_is_cwnd_limited held for the round that filled it,
        // so every ACK of it counted (2 -> 5).
        assert_eq!(s.tcb().cwnd, if linux { 5.0 } else { 3.0 });
        s.on_timer(ms(5200), &mut out);
        // Idle for 5.1 s since segment 2 left (100 ms), more than the RTO: the window
        // restarts at min(IW, cwnd) = 2 on both stacks (Linux halves 5 to 2 and stops
        // there), and two segments go.
        let second = s.requests().unwrap()[1].clone();
        assert_eq!(
            (
                second.written_at,
                second.idle,
                second.restarted,
                second.cwnd
            ),
            (ms(5200), Duration::from_millis(5100), true, 2.0),
            "linux {linux}"
        );
        let sent: Vec<u32> = out.packets[3..].iter().map(|p| p.seq).collect();
        assert_eq!(sent, [3, 4], "linux {linux}");
        for (t, a) in [(5300, 4), (5300, 5), (5400, 6)] {
            s.on_packet(ms(t), &ack(a), &mut out);
        }
        // The last response is acknowledged: the connection is complete.
        assert_eq!(s.requests().unwrap()[1].completed_at, Some(ms(5400)));
        assert_eq!((s.is_done(), s.completed_at()), (true, Some(ms(5400))));
        assert_eq!(s.total_bytes(), Some(6000));
    }
}

#[test]
fn no_restart_when_the_idle_time_is_within_the_rto_or_restart_is_off() {
    let mut s = request_sender(true, 3);
    s.conn.cfg.restart_after_idle = false;
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    for (t, a) in [(100, 1), (100, 2), (200, 3)] {
        s.on_packet(ms(t), &ack(a), &mut out);
    }
    let cwnd = s.tcb().cwnd;
    s.on_timer(ms(5200), &mut out);
    let second = &s.requests().unwrap()[1];
    assert_eq!((second.restarted, second.cwnd), (false, cwnd));
}

#[test]
fn linux_restarts_the_window_halving_it_once_per_rto_of_idle() {
    // tcp_cwnd_restart: cwnd 80, initial window 10, RTO 1 s (no sample yet), ssthresh 50.
    let restart_at = |idle_ms: u64| {
        let mut s = request_sender(true, 1);
        s.conn.cfg.initial_window = 10;
        (s.conn.tcb.cwnd, s.conn.tcb.ssthresh) = (80.0, 50.0);
        s.conn.tcb.lsndtime = ms(1000);
        let StackState::Linux(l) = &mut s.stack else {
            unreachable!()
        };
        let restarted = l.on_write(&mut s.conn, ms(1000 + idle_ms));
        (restarted, s.conn.tcb.cwnd, s.conn.tcb.ssthresh)
    };
    // Idle 0.9 s and exactly 1 s: not more than the RTO.
    assert_eq!(restart_at(900), (false, 80.0, 50.0));
    assert_eq!(restart_at(1000), (false, 80.0, 50.0));
    // 2.5 RTOs: 2.5 - 1 > 0 halves to 40, 1.5 - 1 > 0 halves to 20, 0.5 - 1 stops; ssthresh
    // = max(50, 80/2 + 80/4 = 60).
    assert_eq!(restart_at(2500), (true, 20.0, 60.0));
    // 10.5 RTOs: 40, 20, 10, then no lower than the restart window min(IW 10, cwnd).
    assert_eq!(restart_at(10_500), (true, 10.0, 60.0));
    // 1.2 RTOs: 1.2 - 1 > 0 halves once, to 40.
    assert_eq!(restart_at(1200), (true, 40.0, 60.0));
}

#[test]
fn a_write_marks_the_connection_application_limited() {
    let mut s = request_sender(true, 2);
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    // tcp_rate_check_app_limited at the first write: 2 segments out of a window of 2 is not
    // app-limited once they are sent, but at the write nothing was out.
    assert_eq!(s.tcb().app_limited, Some(0));
    for (t, a) in [(100, 1), (100, 2), (200, 3)] {
        s.on_packet(ms(t), &ack(a), &mut out);
    }
    s.on_timer(ms(5200), &mut out);
    // delivered 3, nothing in flight at the write: app-limited until delivered passes 3.
    assert_eq!(s.tcb().app_limited, Some(3));
}
