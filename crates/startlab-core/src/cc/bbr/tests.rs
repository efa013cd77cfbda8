//! BBR's filters and every transition of its state machine, with values derived by hand from
//! tcp_bbr.c's integer arithmetic (bandwidth in packets/µs << 24, gains in 1/256).

use super::*;
use crate::cc::params::{assert_params_listed, parse, Params};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn at(x: u64) -> Time {
    Time::ZERO + ms(x)
}

/// 1000-byte segments (on the wire too), cwnd 10, srtt and min RTT 100 ms.
fn tcb() -> Tcb {
    let mut t = Tcb::new(1000, 1000, 10.0, f64::INFINITY);
    t.srtt = Some(ms(100));
    t.min_rtt = Some(ms(100));
    t
}

fn sample(prior_delivered: u64, delivered: u64, interval: Duration, acked: u32) -> RateSample {
    RateSample {
        prior_delivered,
        delivered: Some(delivered),
        interval: Some(interval),
        send_interval: Duration::ZERO,
        ack_interval: interval,
        prior_in_flight: 0,
        rtt: Some(ms(100)),
        acked_sacked: acked,
        losses: 0,
        ..RateSample::default()
    }
}

/// A BBR after `init` at t = 0 on [`tcb`].
fn started() -> (Bbr, Tcb) {
    let mut b = Bbr::new(BbrConfig::default());
    let mut t = tcb();
    b.init(&mut t, Time::ZERO);
    (b, t)
}

/// One round: `per_round` segments delivered in 100 ms, one ACK at its end (t = `k` × 100 ms).
fn round(b: &mut Bbr, t: &mut Tcb, k: u64, per_round: u64) {
    let prior = t.delivered;
    t.delivered += per_round;
    t.delivered_mstamp = at(100 * k);
    let rs = sample(prior, per_round, ms(100), per_round as u32);
    b.cong_control(t, &rs, at(100 * k));
}

#[test]
fn parameters_are_declared_and_the_defaults_are_the_kernels() {
    assert_params_listed::<BbrConfig>();
    let b = Bbr::new(BbrConfig::default());
    // bbr_high_gain = 256 × 2885 / 1000 + 1 = 739, bbr_drain_gain = 256 × 1000 / 2885 = 88.
    assert_eq!(
        (b.high_gain, b.drain_gain, b.cwnd_gain_probe_bw),
        (739, 88, 512)
    );
    assert_eq!(b.cycle_gains, [320, 192, 256, 256, 256, 256, 256, 256]);
    assert_eq!(b.full_bw_thresh, 320);
    let mut bad = Params::new();
    bad.insert("full_bw_thresh".into(), serde_json::json!(1.001));
    let e = parse::<BbrConfig>(&bad).unwrap_err();
    assert_eq!(e.name.as_deref(), Some("full_bw_thresh"));
    bad.insert("full_bw_thresh".into(), serde_json::json!(7));
    assert!(parse::<BbrConfig>(&bad).is_err());
}

/// The windowed max keeps the best of the last `win` rounds, and falls back to the second and
/// third choices as the best ages out (lib/win_minmax.c).
#[test]
fn the_bandwidth_filter_is_a_windowed_max_over_rounds() {
    let mut f = WindowedMax::default();
    f.reset(0, 0);
    assert_eq!(f.running_max(10, 1, 100), 100);
    assert_eq!(f.running_max(10, 2, 50), 100);
    // After a quarter of the window (dt 3 > 10/4) a lower sample becomes the second choice …
    assert_eq!(f.running_max(10, 4, 60), 100);
    assert_eq!(f.s[1], (4, 60));
    // … after half of it (dt 6 > 5), the third.
    assert_eq!(f.running_max(10, 7, 40), 100);
    assert_eq!(f.s[2], (7, 40));
    // At round 12 the best (round 1) is 11 rounds old: the second takes over.
    assert_eq!(f.running_max(10, 12, 10), 60);
    // A higher sample replaces everything.
    assert_eq!(f.running_max(10, 13, 70), 70);
    assert_eq!(f.s, [(13, 70); 3]);
}

/// Init: ssthresh unlimited, min RTT from the handshake, pacing at high_gain × cwnd / srtt with
/// the 1 % margin: bw = 10 × 2^24 / 100000 = 1677; 1677 × 1000 × 739 >> 8 = 4 841 037;
/// × 990 000 >> 24 = 285 662 bytes/s, 2 285 296 bit/s on the wire.
#[test]
fn init_paces_the_initial_window_at_high_gain_over_srtt() {
    let (b, t) = started();
    assert_eq!(t.ssthresh, f64::INFINITY);
    assert_eq!(b.min_rtt_us, 100_000);
    assert_eq!(b.pacing_rate, 285_662);
    assert_eq!(t.pacing_rate, Some(Rate::from_bps(2_285_296)));
    assert_eq!(b.mode(), BbrMode::Startup);
    // Without an RTT sample: 1 ms (10 × 2^24 / 1000 = 167772).
    let mut b = Bbr::new(BbrConfig::default());
    let mut t = Tcb::new(1000, 1000, 10.0, f64::INFINITY);
    b.init(&mut t, Time::ZERO);
    assert_eq!(b.pacing_rate, b.rate_bytes_per_sec(&t, 167_772, 739));
    assert_eq!(b.bdp(1677, 256), TCP_INIT_CWND);
}

/// bdp = ceil(1677 × 100000 / 2^24) = ceil(9.9957) = 10; the quantum adds 3 bursts of 2 (the
/// pacing rate is above 1.2 Mbit/s and 1 ms of it is under a segment), and rounds to even.
#[test]
fn the_target_window_is_the_bdp_plus_three_bursts() {
    let (mut b, t) = started();
    assert_eq!(b.bdp(1677, BBR_UNIT), 10);
    assert_eq!(b.bdp(1677, 739), 29); // ceil(9.9957 × 739 / 256 = 28.855)
    assert_eq!(b.tso_segs_goal(&t), 2);
    assert_eq!(b.inflight(&t, 1677, BBR_UNIT), 16);
    // ProbeBW's probing phase gets 2 more.
    b.mode = BbrMode::ProbeBw;
    b.cycle_idx = 0;
    assert_eq!(b.inflight(&t, 1677, BBR_UNIT), 18);
    // At 100 Mbyte/s, 1 ms is 97 656 bytes: 65 215 (the GSO limit) / 1000 = 65 segments.
    b.pacing_rate = 100_000_000;
    assert_eq!(b.tso_segs_goal(&t), 65);
    // Below 1.2 Mbit/s bursts are single segments.
    b.pacing_rate = 149_999;
    assert_eq!(b.tso_segs_goal(&t), 1);
}

/// Startup grows cwnd by what is acknowledged while below the target (high_gain × BDP), and
/// paces at high_gain × the estimate.
#[test]
fn startup_grows_cwnd_by_what_is_acknowledged() {
    let (mut b, mut t) = started();
    round(&mut b, &mut t, 1, 10);
    assert!(b.round_start);
    assert_eq!(b.max_bw(), 1677);
    // target = bdp(1677, 739) = 29 + 6 = 35 > 10: cwnd = 10 + 10.
    assert_eq!(t.cwnd, 20.0);
    assert_eq!((b.pacing_gain, b.cwnd_gain), (739, 739));
    // The rate only ever rises in Startup: same estimate, same rate.
    assert_eq!(b.pacing_rate, 285_662);
}

/// The pipe is full after three rounds without 25 % growth: round 1 sets full_bw = 1677; rounds
/// 2-4 deliver the same, below 1677 × 320 / 256 = 2096. Drain starts with ssthresh = the gain-1
/// target (16) and the exit named by the detector; with 100 in flight Drain holds.
#[test]
fn startup_ends_after_three_rounds_without_growth() {
    let (mut b, mut t) = started();
    t.in_flight = 100;
    for k in 1..=3 {
        round(&mut b, &mut t, k, 10);
        assert_eq!(b.mode(), BbrMode::Startup, "round {k}");
    }
    assert_eq!((b.full_bw, b.full_bw_cnt), (1677, 2));
    round(&mut b, &mut t, 4, 10);
    assert!(b.full_bw_reached);
    assert_eq!(b.mode(), BbrMode::Drain);
    assert_eq!(t.ssthresh, 16.0);
    assert_eq!(
        t.exit_reason_hint,
        Some(ExitReason::Detector("bbr-full-bw"))
    );
    assert!(!b.in_startup(&t));
    assert_eq!((b.pacing_gain, b.cwnd_gain), (88, 739));
    // Drain paces at 88/256 of the estimate: 1677 × 1000 × 88 >> 8 = 576 468; × 990 000 >> 24.
    assert_eq!(b.pacing_rate, (576_468u64 * 990_000) >> 24);
}

/// Growth of 25 % or more in a round restarts the count.
#[test]
fn growth_restarts_the_full_pipe_count() {
    let (mut b, mut t) = started();
    t.in_flight = 100;
    round(&mut b, &mut t, 1, 10);
    round(&mut b, &mut t, 2, 10);
    assert_eq!(b.full_bw_cnt, 1);
    round(&mut b, &mut t, 3, 13); // 13 × 2^24 / 100000 = 2181 ≥ 2096
    assert_eq!((b.full_bw, b.full_bw_cnt), (2181, 0));
    // An application-limited round does not count.
    let prior = t.delivered;
    t.delivered += 13;
    let mut rs = sample(prior, 13, ms(100), 13);
    rs.is_app_limited = true;
    b.cong_control(&mut t, &rs, at(400));
    assert_eq!(b.full_bw_cnt, 0);
}

/// Drain ends when what will be in the network at the next departure is at most the gain-1
/// target: Drain paces at 34 016 bytes/s, below 1.2 Mbit/s, so bursts are single segments and
/// the target is 10 + 3 × 1 = 13, rounded to 14. ProbeBW then starts at a seeded random phase
/// other than the draining one (cycle_idx = 7 - r, then advanced).
#[test]
fn drain_ends_when_the_queue_is_gone_and_probe_bw_cycles() {
    let (mut b, mut t) = started();
    t.in_flight = 100;
    for k in 1..=4 {
        round(&mut b, &mut t, k, 10);
    }
    assert_eq!(b.mode(), BbrMode::Drain);
    t.in_flight = 15;
    round(&mut b, &mut t, 5, 10);
    assert_eq!(b.mode(), BbrMode::Drain);
    t.in_flight = 14;
    round(&mut b, &mut t, 6, 10);
    assert_eq!(b.mode(), BbrMode::ProbeBw);
    // Unseeded (state 0): the first draw is 0xe220a839, r = 0xe220a839 x 7 >> 32 = 6:
    // cycle_idx 7 - 6 = 1 advanced to 2, a phase at gain 1.
    assert_eq!(prandom_u32(&mut 0), 0xe220_a839);
    assert_eq!(b.cycle_idx, 2);
    assert_eq!(b.pacing_gain, 256);
    assert_eq!(b.cycle_mstamp, 600_000);
    // The probing phase lasts at least min_rtt and until inflight reaches 5/4 × BDP, or a loss.
    b.cycle_idx = 0;
    b.update_gains();
    t.delivered_mstamp = at(750);
    let mut rs = sample(t.delivered, 0, ms(100), 1);
    rs.prior_in_flight = 10;
    assert!(!b.is_next_cycle_phase(&t, &rs, at(750)));
    rs.losses = 1;
    assert!(b.is_next_cycle_phase(&t, &rs, at(750)));
    // The phases of the cycle in order, the draining one after the probing one.
    b.advance_cycle_phase(&t);
    b.update_gains();
    assert_eq!(b.pacing_gain, 192);
    // Seeded: the phase is one of 1..=7 after the advance, and the same seed gives the same.
    let first = |seed| {
        let mut b = Bbr::new(BbrConfig::default());
        b.seed(Rng::stream(seed, 0));
        let t = tcb();
        b.reset_probe_bw_mode(&t);
        b.cycle_idx
    };
    assert_eq!(first(1), first(1));
    let phases: std::collections::BTreeSet<u8> = (0..64).map(first).collect();
    assert!(phases.iter().all(|&p| p != 1), "{phases:?}");
    assert_eq!(phases.len(), 7, "{phases:?}");
}

/// ProbeRTT: when the min-RTT filter (10 s) expires, cwnd is capped at 4 and the samples are
/// marked application-limited; once 4 or fewer are in flight, 200 ms (200 jiffies at 1000 Hz)
/// and a round pass, then the saved cwnd comes back and ProbeBW resumes.
#[test]
fn probe_rtt_dips_to_four_packets_for_200_ms_and_a_round() {
    let (mut b, mut t) = started();
    t.in_flight = 100;
    for k in 1..=4 {
        round(&mut b, &mut t, k, 10);
    }
    t.in_flight = 14;
    round(&mut b, &mut t, 5, 10);
    assert_eq!(b.mode(), BbrMode::ProbeBw);
    t.in_flight = 30;
    // The last 100 ms sample (round 5, jiffy 500) stamped the filter: it expires after jiffy
    // 10 500, and samples above 100 ms do not refresh it.
    assert_eq!(b.min_rtt_stamp, 500);
    let mut rs = sample(t.delivered, 1, ms(100), 1);
    rs.rtt = Some(ms(120));
    t.delivered += 1;
    b.cong_control(&mut t, &rs, at(10_500));
    assert_eq!(b.mode(), BbrMode::ProbeBw);
    // ProbeBW has snapped cwnd to its target; that is the window ProbeRTT saves.
    let before = t.cwnd;
    assert!(before > 4.0);
    t.delivered += 1;
    b.cong_control(&mut t, &rs, at(10_501));
    assert_eq!(b.mode(), BbrMode::ProbeRtt);
    // The expired filter took the 120 ms sample.
    assert_eq!(b.min_rtt_us, 120_000);
    assert_eq!(b.prior_cwnd as f64, before);
    assert_eq!(t.cwnd, 4.0);
    assert_eq!(t.app_limited, Some(t.delivered + 30));
    // Four in flight: the 200 ms start now (done after jiffy 10 702) and a round must pass.
    t.in_flight = 4;
    t.delivered += 1;
    b.cong_control(&mut t, &sample(0, 1, ms(100), 1), at(10_502));
    assert_eq!(b.probe_rtt_done_stamp, 10_702);
    let round_end = t.delivered;
    t.delivered += 1;
    b.cong_control(&mut t, &sample(round_end, 1, ms(100), 1), at(10_600));
    assert!(b.probe_rtt_round_done);
    assert_eq!(b.mode(), BbrMode::ProbeRtt);
    t.delivered += 1;
    b.cong_control(&mut t, &sample(0, 1, ms(100), 1), at(10_702));
    assert_eq!(b.mode(), BbrMode::ProbeRtt);
    t.delivered += 1;
    b.cong_control(&mut t, &sample(0, 1, ms(100), 1), at(10_703));
    assert_eq!(b.mode(), BbrMode::ProbeBw);
    assert_eq!(b.min_rtt_stamp, 10_703);
    assert!(t.cwnd >= before, "cwnd {} < {before}", t.cwnd);
}

/// The first round of Recovery conserves packets (cwnd = in flight + acked, after the losses
/// come off); leaving Recovery restores the window saved by ssthresh.
#[test]
fn recovery_conserves_packets_then_restores_the_saved_window() {
    let (mut b, mut t) = started();
    t.cwnd = 50.0;
    t.in_flight = 40;
    assert_eq!(b.ssthresh(&mut t, at(1)), f64::INFINITY);
    assert_eq!(b.prior_cwnd, 50);
    t.ca_state = CaState::Recovery;
    t.in_flight = 30;
    let mut rs = sample(0, 2, ms(100), 2);
    rs.losses = 3;
    t.delivered += 2;
    b.cong_control(&mut t, &rs, at(2));
    assert!(b.packet_conservation);
    assert_eq!(t.cwnd, 32.0);
    assert_eq!(b.next_rtt_delivered, t.delivered);
    // Recovery over: cwnd = max(cwnd, 50).
    t.ca_state = CaState::Open;
    t.delivered += 1;
    b.cong_control(&mut t, &sample(0, 1, ms(100), 1), at(3));
    assert!(!b.packet_conservation);
    assert!(t.cwnd >= 50.0);
    // A timeout (set_state Loss) ends the round and restarts the full-pipe estimate.
    b.full_bw = 99;
    b.set_state(&mut t, CaState::Loss, at(4));
    assert_eq!(
        (b.full_bw, b.round_start, b.prev_ca_state),
        (0, true, CaState::Loss)
    );
}

/// A policer: after the first loss, two intervals of 4+ rounds, each ending in a loss with at
/// least 50/256 of the delivered lost, at rates within 1/8 of each other: BBR paces at their
/// average, with gain 1, and drops the estimate after 48 rounds of ProbeBW.
#[test]
fn two_lossy_intervals_at_one_rate_mean_a_policer() {
    let (mut b, mut t) = started();
    b.mode = BbrMode::ProbeBw;
    b.full_bw_reached = true;
    let mut now = 0;
    let mut ack = |b: &mut Bbr, t: &mut Tcb, delivered: u64, lost: u64, new_round: bool| {
        now += 100;
        let prior = if new_round { t.delivered } else { 0 };
        t.delivered += delivered;
        t.lost += lost;
        t.delivered_mstamp = at(now);
        let mut rs = sample(prior, delivered, ms(100), delivered as u32);
        rs.losses = lost as u32;
        b.cong_control(t, &rs, at(now));
    };
    // The first loss starts sampling (interval start: delivered 10, lost 5, stamp 100 ms).
    ack(&mut b, &mut t, 10, 5, true);
    assert!(b.lt_is_sampling);
    // Four rounds of 10 delivered, the fourth with 10 lost: 40 delivered, 10 + 0 lost since
    // the start, 400 ms → bw = 40 × 2^24 / 400000 = 1677.
    for k in 0..4 {
        ack(&mut b, &mut t, 10, if k == 3 { 10 } else { 0 }, true);
    }
    assert_eq!(b.lt_bw, 1677);
    assert!(!b.lt_use_bw);
    // A second interval at the same rate: policed.
    for k in 0..4 {
        ack(&mut b, &mut t, 10, if k == 3 { 10 } else { 0 }, true);
    }
    assert!(b.lt_use_bw);
    assert_eq!(b.lt_bw, 1677);
    assert_eq!(b.pacing_gain, BBR_UNIT);
    assert_eq!(b.bbr_bw(), 1677);
    for _ in 0..48 {
        ack(&mut b, &mut t, 10, 0, true);
    }
    assert!(!b.lt_use_bw);
}

/// ACK aggregation: data acknowledged beyond bw × elapsed in an epoch widens cwnd once the
/// pipe is full (bounded by 100 ms of bw).
#[test]
fn aggregated_acks_widen_the_window_after_startup() {
    let (mut b, mut t) = started();
    b.bw.reset(0, 1677); // 10 packets per 100 ms
    b.full_bw_reached = true;
    b.ack_epoch_mstamp = 0;
    // 30 packets acknowledged at 100 ms: 10 expected, 20 extra.
    t.delivered_mstamp = at(100);
    b.ack_epoch_acked = 11; // above expected (10): the epoch goes on
    let rs = sample(0, 19, ms(100), 19);
    b.update_ack_aggregation(&t, &rs);
    assert_eq!(b.extra_acked[0], 10); // min(30 - 10 = 20, cwnd 10)
                                      // 100 ms of bw = 1677 × 100000 / 2^24 = 9 packets bound the allowance.
    assert_eq!(b.ack_aggregation_cwnd(), 9);
}

/// What BBR shows: bw 1677 at 1000-byte segments = 1677 × 1000 × 10^6 >> 24 = 99 956 bytes/s.
#[test]
fn the_model_state_reports_bandwidth_min_rtt_and_gains() {
    let (mut b, mut t) = started();
    round(&mut b, &mut t, 1, 10);
    let s = b.model_state(&t).unwrap();
    assert_eq!(s.mode, "startup");
    assert_eq!(s.bw, Rate::from_bps(99_956 * 8));
    assert_eq!(s.min_rtt, Some(ms(100)));
    assert_eq!(s.pacing_gain, 739.0 / 256.0);
}
