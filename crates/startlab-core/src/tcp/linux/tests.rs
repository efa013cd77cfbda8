//! The Linux stack's recovery: PRR, RACK, the tail-loss probe, D-SACK undo and F-RTO.

use super::{LinuxRecovery, XmitTimer};
use crate::cc::Phase;
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
