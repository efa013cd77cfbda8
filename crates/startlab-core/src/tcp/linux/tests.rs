//! The Linux stack's recovery: PRR, RACK, the tail-loss probe, D-SACK undo and F-RTO.

use super::{LinuxRecovery, XmitTimer};
use crate::cc::Phase;
use crate::net::Packet;
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::tests::{ack, ms, reno_sender, sack_ack, with_ts};
use crate::tcp::sender::{StackState, TcpSender};
use crate::tcp::{FlowSize, Outbox, Stack, TcpConfig};
use crate::time::{Duration, Time};

fn linux(s: &TcpSender) -> &LinuxRecovery {
    match &s.stack {
        StackState::Linux(l) => l,
        StackState::Ns2(_) => panic!("not the Linux stack"),
    }
}

/// Linux's recovery, RACK (with or without TLP) and RTO, jiffies of 4 ms.
fn linux_config(iw: u32, tlp: bool) -> TcpConfig {
    TcpConfig {
        initial_window: iw,
        sack: true,
        stack: Stack::Linux,
        loss_detection: crate::tcp::LossDetection::Rack { tlp },
        rto_algorithm: crate::tcp::RtoAlgorithm::Linux,
        clock_granularity: Duration::from_millis(4),
        ..TcpConfig::default()
    }
}

fn linux_sender(iw: u32) -> TcpSender {
    reno_sender(linux_config(iw, false), FlowSize::UNLIMITED)
}

#[test]
fn prr_sends_half_of_what_is_delivered_and_rack_finds_the_hole_at_three_sacks() {
    // IW 20 sent at t = 0; segment 0 is lost; segment k is SACKed at 100 + k ms.
    let mut s = linux_sender(20);
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    assert_eq!(out.packets.len(), 20);
    let mut sent_after = Vec::new();
    for k in 1..=9u32 {
        let before = out.packets.len();
        s.on_packet(ms(100 + k as u64), &sack_ack(0, (1, k + 1)), &mut out);
        sent_after.push(out.packets.len() - before);
        if k < 3 {
            // RACK's reordering window (min_rtt / 4 = 25.25 ms) is still open with fewer
            // than three segments SACKed: Disorder, no loss yet.
            assert_eq!(s.phase(), Phase::Disorder);
        }
    }
    // The first two SACKs take segments out of the pipe (in flight 19, then 20 with the
    // new one, < cwnd 20): new segments 20 and 21 go, as RFC 6675 and Linux send them.
    // The third SACK closes the window: segment 0 (sent at 0, RACK.rtt 103 ms) is lost;
    // Recovery with ssthresh = FlightSize 22 / 2 = 11, prior_cwnd 20. PRR lets out
    // ceil(11 × delivered / 20) in all: after ACK 3..9 (delivered 1..7) that is
    // 1, 2, 2, 3, 3, 4, 4: the retransmission of 0, then one new segment every other ACK.
    assert_eq!(sent_after, [1, 1, 1, 1, 0, 1, 0, 1, 0]);
    let seqs: Vec<u32> = out.packets[20..].iter().map(|p| p.seq).collect();
    assert_eq!(seqs, [20, 21, 0, 22, 23, 24]);
    assert_eq!((s.conn.tcb.ssthresh, s.phase()), (11.0, Phase::Recovery));
    assert_eq!(s.conn.stats.fast_recoveries, 1);
    // An ACK below high_seq (22) keeps Recovery; the one that passes it ends it with
    // cwnd = ssthresh (tcp_end_cwnd_reduction), then Reno's congestion avoidance adds
    // 3/11 for the three segments it delivered.
    s.on_packet(ms(250), &ack(20), &mut out);
    assert_eq!(s.phase(), Phase::Recovery);
    s.on_packet(ms(251), &ack(22), &mut out);
    assert_eq!(s.phase(), Phase::CongestionAvoidance);
    assert!(
        s.conn.tcb.cwnd >= 11.0 && s.conn.tcb.cwnd < 12.0,
        "{}",
        s.conn.tcb.cwnd
    );
    assert_eq!(s.conn.stats.timeouts, 0);
}

#[test]
fn a_lost_retransmission_is_retransmitted_again_without_a_timeout() {
    let mut s = linux_sender(20);
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    for k in 1..=19u32 {
        s.on_packet(ms(100 + k as u64), &sack_ack(0, (1, k + 1)), &mut out);
    }
    let zeros = out.packets.iter().filter(|p| p.seq == 0).count();
    assert_eq!(zeros, 2, "the original and one retransmission of 0");
    // RACK's reordering timer holds the retransmission timer (due at 136 ms): the RTO is not
    // running, and the first retransmission (103 ms) did not restart it.
    assert_eq!(
        (linux(&s).slot, linux(&s).reo_deadline, s.conn.rto_deadline),
        (XmitTimer::Reo, Some(ms(136)), None)
    );
    // The reordering timer finds nothing more lost and gives the timer back to the RTO,
    // counted from the head's last transmission (tcp_rearm_rto): 103 + 316 ms.
    let sent = out.packets.len();
    s.on_timer(ms(136), &mut out);
    assert_eq!(out.packets.len(), sent);
    assert_eq!(s.conn.rtt.rto(), Duration::from_millis(316));
    assert_eq!(
        (linux(&s).slot, s.conn.rto_deadline),
        (XmitTimer::Rto, Some(ms(419)))
    );
    // The retransmission (sent at 103 ms) is lost too. Segment 22, the first new one sent
    // after it (104 ms), is SACKed at 230 ms: RACK.rtt = 126 ms, and the retransmission has
    // been out 127 ms, so it is deemed lost again and goes a third time (with two new
    // segments: in flight 8 < ssthresh 11), long before any RTO (>= srtt + 200 ms).
    let retx_at = out.packets.iter().rposition(|p| p.seq == 0).unwrap();
    let after = out.packets[retx_at..]
        .iter()
        .find(|p| p.seq >= 20)
        .unwrap()
        .seq;
    assert_eq!(after, 22);
    s.on_packet(ms(230), &sack_ack(0, (1, after + 1)), &mut out);
    let zeros = out.packets.iter().filter(|p| p.seq == 0).count();
    assert_eq!(zeros, 3);
    // Retransmitting the head again restarts the RTO from now (tcp_xmit_retransmit_queue):
    // 230 ms + RTO 320 ms, so the third copy has a whole RTO to arrive in.
    assert_eq!(s.conn.rtt.rto(), Duration::from_millis(320));
    assert_eq!(s.conn.rto_deadline, Some(ms(550)));
    assert_eq!((s.conn.stats.timeouts, s.phase()), (0, Phase::Recovery));
}

#[test]
fn a_tail_loss_probe_repairs_lost_last_segments_without_a_timeout() {
    // A 10-segment flow, all sent at t = 0; segments 8 and 9 are lost.
    let mut s = reno_sender(linux_config(10, true), FlowSize::from_bytes(10_000, 1000));
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    assert_eq!(out.packets.len(), 10);
    // The ACK of 0..7 at 100 ms: SRTT 100 ms, RTTVAR = max(4 × mdev = 2 × SRTT, rto_min)
    // = 200 ms, RTO 300 ms (at 400 ms). Two segments out: PTO = 2 × SRTT + 2 ms = 202 ms,
    // 204 ms in jiffies of 4 ms: the probe is due at 304 ms, before the RTO.
    s.on_packet(ms(100), &ack(8), &mut out);
    assert_eq!(s.next_timer(), Some(ms(304)));
    // No new data: the probe retransmits the last segment.
    s.on_timer(ms(304), &mut out);
    assert_eq!(out.packets.last().map(|p| p.seq), Some(9));
    assert_eq!(out.packets.len(), 11);
    // Its SACK at 404 ms: RACK.xmit_ts = 304 ms, RACK.rtt = 100 ms; segment 8 (sent at 0)
    // is 404 ms old > 100 + 25 ms (min_rtt / 4 with one SACK): lost. Recovery, and PRR
    // lets its retransmission go at once.
    s.on_packet(ms(404), &sack_ack(8, (9, 10)), &mut out);
    assert_eq!(s.phase(), Phase::Recovery);
    assert_eq!(out.packets.last().map(|p| p.seq), Some(8));
    s.on_packet(ms(504), &ack(10), &mut out);
    assert!(s.is_done());
    assert_eq!(s.conn.stats.timeouts, 0);
}

#[test]
fn a_recovery_whose_retransmission_is_dsacked_is_undone() {
    for dsack in [false, true] {
        let cfg = TcpConfig {
            dsack,
            undo: true,
            ..linux_config(20, false)
        };
        let mut s = reno_sender(cfg, FlowSize::UNLIMITED);
        let mut out = Outbox::default();
        s.start(Time::ZERO, &mut out);
        // As in the PRR test: the third SACK (103 ms) starts Recovery (ssthresh 11,
        // prior_cwnd 20) and retransmits 0. Segments 20 and 21 went before it.
        for k in 1..=3u32 {
            s.on_packet(ms(100 + k as u64), &sack_ack(0, (1, k + 1)), &mut out);
        }
        assert_eq!(out.packets.last().unwrap().seq, 0);
        // Everything is acknowledged, echoing the retransmission's timestamp: no evidence
        // yet that it was spurious. Recovery ends with cwnd = ssthresh 11, then Reno adds
        // 1/11 for the ACK.
        s.on_packet(ms(150), &with_ts(ack(22), ms(103)), &mut out);
        assert_eq!(
            (s.phase(), s.conn.stats.undos),
            (Phase::CongestionAvoidance, 0)
        );
        assert_eq!(s.conn.tcb.cwnd, 11.0 + 1.0 / 11.0);
        // Then the retransmission of 0 arrives at the receiver as a duplicate: its D-SACK
        // takes the episode's one retransmission off (tcp_check_dsack) and the reduction
        // is undone (tcp_try_undo_dsack): cwnd back to prior_cwnd 20 and ssthresh to the
        // infinite one of slow start.
        let mut dsack_ack = with_ts(sack_ack(22, (0, 1)), ms(103));
        dsack_ack.sack.len = 1;
        s.on_packet(ms(160), &dsack_ack, &mut out);
        if dsack {
            assert_eq!((s.conn.stats.undos, s.conn.tcb.cwnd), (1, 20.0));
            assert_eq!(
                (s.conn.tcb.ssthresh, s.phase()),
                (f64::INFINITY, Phase::SlowStart)
            );
        } else {
            assert_eq!(
                (s.conn.stats.undos, s.conn.tcb.cwnd),
                (0, 11.0 + 1.0 / 11.0)
            );
        }
    }
}

/// Ten segments sent at t = 0 and a timeout at 1 s with F-RTO; the retransmitted head's ACK
/// at 1100 ms echoes the retransmission (the original was lost).
fn after_a_timeout_with_frto(frto: bool) -> (TcpSender, Outbox) {
    let cfg = TcpConfig {
        frto,
        undo: true,
        ..linux_config(10, false)
    };
    let mut s = reno_sender(cfg, FlowSize::UNLIMITED);
    let mut out = Outbox::default();
    s.start(Time::ZERO, &mut out);
    s.on_timer(ms(1000), &mut out);
    // tcp_enter_loss: ssthresh = 10 / 2, cwnd = in flight 0 + 1: the head goes again.
    assert_eq!(
        (s.conn.stats.timeouts, s.conn.tcb.ssthresh, s.conn.tcb.cwnd),
        (1, 5.0, 1.0)
    );
    assert_eq!(out.packets.last().unwrap().seq, 0);
    s.on_packet(ms(1100), &with_ts(ack(1), ms(1000)), &mut out);
    (s, out)
}

#[test]
fn frto_sends_new_data_after_a_timeout_and_undoes_it_when_the_originals_arrive() {
    let (mut s, mut out) = after_a_timeout_with_frto(true);
    // RFC 5682 step 2b: slow start makes cwnd 2, and two new segments go, not the
    // retransmissions of 1 and 2.
    assert_eq!(s.conn.tcb.cwnd, 2.0);
    let seqs: Vec<u32> = out.packets[11..].iter().map(|p| p.seq).collect();
    assert_eq!(seqs, [10, 11]);
    assert_eq!(s.phase(), Phase::Loss);
    // Step 3b: segments 1..4, never retransmitted, are acknowledged: the timeout was
    // spurious. cwnd back to prior_cwnd 10 (plus 1 in slow start for this ACK), ssthresh
    // to the infinite one before the timeout.
    s.on_packet(ms(1110), &with_ts(ack(5), ms(1000)), &mut out);
    assert_eq!(
        (s.conn.stats.undos, s.conn.tcb.ssthresh),
        (1, f64::INFINITY)
    );
    assert_eq!((s.conn.tcb.cwnd, s.phase()), (11.0, Phase::SlowStart));
    // Nothing was retransmitted but the head.
    assert_eq!(s.conn.stats.retransmissions, 1);

    // Without F-RTO the same ACKs find the lost segments and retransmit them; nothing is
    // undone.
    let (mut s, mut out) = after_a_timeout_with_frto(false);
    let seqs: Vec<u32> = out.packets[11..].iter().map(|p| p.seq).collect();
    assert_eq!(seqs, [1, 2]);
    s.on_packet(ms(1110), &with_ts(ack(5), ms(1000)), &mut out);
    assert_eq!((s.conn.stats.undos, s.phase()), (0, Phase::Loss));
    assert!(s.conn.stats.retransmissions > 3);
}

#[test]
fn frto_finds_the_loss_real_when_the_new_data_is_sacked() {
    let (mut s, mut out) = after_a_timeout_with_frto(true);
    // Step 3a: the new segment 10 is SACKed while 1 is still missing: the loss was real,
    // F-RTO ends, and the lost segments are retransmitted from 1 on.
    s.on_packet(
        ms(1200),
        &with_ts(sack_ack(1, (10, 11)), ms(1000)),
        &mut out,
    );
    assert_eq!((s.conn.stats.undos, s.phase()), (0, Phase::Loss));
    assert_eq!(out.packets.last().unwrap().seq, 1);
}

/// A sender and an RFC 5681 receiver (an ACK for every segment) 50 ms apart each way, with no
/// queue: a burst arrives all at once, in the order it was sent, unless `late(seq)` holds the
/// first copy of segment `seq` back that much longer.
struct Path {
    sender: TcpSender,
    receiver: TcpReceiver,
    late: fn(u32) -> Duration,
    /// Packets on their way: arrival, order of sending, packet, towards the receiver.
    wire: Vec<(Time, u64, Packet, bool)>,
    order: u64,
    /// Every data segment sent, in order.
    sent: Vec<Packet>,
}

impl Path {
    fn new(cfg: TcpConfig, late: fn(u32) -> Duration) -> Path {
        let receiver = TcpReceiver::new(0, 1, 0, cfg.clone(), FlowSize::UNLIMITED);
        let mut path = Path {
            sender: reno_sender(cfg, FlowSize::UNLIMITED),
            receiver,
            late,
            wire: Vec::new(),
            order: 0,
            sent: Vec::new(),
        };
        let mut out = Outbox::default();
        path.sender.start(Time::ZERO, &mut out);
        path.send(Time::ZERO, out, true);
        path
    }

    fn send(&mut self, now: Time, out: Outbox, to_receiver: bool) {
        for p in out.packets {
            let mut at = now + Duration::from_millis(50);
            if to_receiver {
                if self.sent.iter().all(|q| q.seq != p.seq) {
                    at += (self.late)(p.seq);
                }
                self.sent.push(p);
            }
            self.order += 1;
            self.wire.push((at, self.order, p, to_receiver));
        }
    }

    /// Delivers every packet and fires every timer due by `end`, in time order.
    fn run_until(&mut self, end: Time) {
        loop {
            let next = self.wire.iter().map(|w| (w.0, w.1)).min();
            let timer = self.sender.next_timer().filter(|&t| t <= end);
            let mut out = Outbox::default();
            match (next, timer) {
                (Some((at, order)), _) if at <= end && timer.is_none_or(|t| at <= t) => {
                    let k = self.wire.iter().position(|w| w.1 == order).unwrap();
                    let (_, _, p, to_receiver) = self.wire.remove(k);
                    if to_receiver {
                        self.receiver.on_packet(at, &p, &mut out);
                        self.send(at, out, false);
                    } else {
                        self.sender.on_packet(at, &p, &mut out);
                        self.send(at, out, true);
                    }
                }
                (_, Some(t)) => {
                    self.sender.on_timer(t, &mut out);
                    self.send(t, out, true);
                }
                _ => return,
            }
        }
    }

    /// When segment `seq` was sent, each time.
    fn sends_of(&self, seq: u32) -> Vec<Time> {
        self.sent
            .iter()
            .filter(|p| p.seq == seq)
            .map(|p| p.ts)
            .collect()
    }
}

/// Segment 1's first copy arrives 0.5 ms late, after segments 2 to 9; segment 22's, 40 ms.
fn two_reorderings(seq: u32) -> Duration {
    match seq {
        1 => Duration::from_micros(500),
        22 => Duration::from_millis(40),
        _ => Duration::ZERO,
    }
}

#[test]
fn dsacks_widen_the_rack_window_so_that_reordering_is_not_taken_for_loss() {
    for dsack in [false, true] {
        let cfg = TcpConfig {
            dsack,
            undo: true,
            ..linux_config(10, false)
        };
        let mut path = Path::new(cfg, two_reorderings);
        // IW 10 at t = 0. At 100 ms the sender gets ACK 1, then SACKs of 2 to 9: at the
        // third (sacked_out 3 = tp->reordering, no reordering seen yet) RACK has no window,
        // and segment 1, sent 100 ms = RACK.rtt ago, is lost: Recovery, and it goes again.
        path.run_until(ms(100));
        assert_eq!(path.sends_of(1), [ms(0), ms(100)]);
        // At 100.5 ms the original fills the hole: ACK 10, echoing its timestamp (0), older
        // than the retransmission. tcp_try_undo_partial undoes the recovery and checks
        // reordering from snd_una 1 to snd_una 10 (nothing is SACKed any more): reordering
        // is seen, and tp->reordering is 9.
        path.run_until(ms(101));
        let l = linux(&path.sender);
        assert!(l.rack.reord_seen);
        assert_eq!(
            (l.reordering(&path.sender.conn), path.sender.phase()),
            (9, Phase::SlowStart)
        );
        // The retransmission reaches the receiver at 150 ms, a duplicate: with D-SACK its ACK
        // (at 200 ms) reports it, after reordering was seen. It delivers nothing new; the next
        // ACK, which does, widens RACK's window a step: 2 × min_rtt / 4 = 50 ms.
        //
        // Segment 22, the first sent at 200 ms, is 40 ms late: its ACK comes at 340 ms. The
        // segments sent after it are SACKed from 300 ms (RACK.rtt 100 ms), so it is deemed
        // lost at 200 + 100 + the window: with 25 ms at 325 ms, the reordering timer due in
        // jiffies of 4 ms at 328 + 2 jiffies = 336 ms, before its ACK; with 50 ms at 350 ms,
        // the timer at 352 + 8 = 360 ms, after it.
        path.run_until(ms(301));
        assert_eq!(path.sends_of(22), [ms(200)]);
        let deadline = if dsack { ms(360) } else { ms(336) };
        assert_eq!(linux(&path.sender).reo_deadline, Some(deadline));
        path.run_until(ms(400));
        if dsack {
            assert_eq!(path.sends_of(22), [ms(200)]);
        } else {
            assert_eq!(path.sends_of(22), [ms(200), ms(336)]);
        }
        assert_eq!(path.sender.conn.stats.timeouts, 0);
    }
}

#[test]
fn reordering_beyond_the_threshold_lets_sacks_grow_the_window() {
    // As above without D-SACK: tp->reordering is 9 from 100.5 ms, and the sender is in slow
    // start with cwnd 24 after the ACKs at 200.5 ms. From 300 ms segment 22 is missing and
    // the ACKs only SACK: 13 at 300 ms (segments 23 to 35) and 10 at 300.5 ms (36 to 45).
    // With tp->reordering 9 > tcp_reordering 3, tcp_may_raise_cwnd lets each grow cwnd by one
    // (FLAG_FORWARD_PROGRESS, in Disorder): 24 + 23 = 47. With 3 only an advancing cumulative
    // ACK would (FLAG_DATA_ACKED), and cwnd would stay 24.
    let cfg = TcpConfig {
        undo: true,
        ..linux_config(10, false)
    };
    let mut path = Path::new(cfg, two_reorderings);
    path.run_until(ms(201));
    assert_eq!(path.sender.conn.tcb.cwnd, 24.0);
    path.run_until(ms(301));
    assert_eq!(
        (path.sender.phase(), path.sender.conn.tcb.cwnd),
        (Phase::Disorder, 47.0)
    );
}
