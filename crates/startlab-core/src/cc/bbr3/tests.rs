//! BBRv3's bounds and every transition of its state machine, with values derived by hand from
//! the v3 source's integer arithmetic (bandwidth in packets/µs << 24, gains in 1/256).

use super::*;
use crate::cc::params::assert_params_listed;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn at(x: u64) -> Time {
    Time::ZERO + ms(x)
}

/// 1000-byte segments (on the wire too), cwnd 10, srtt and min RTT 100 ms, nothing in flight.
fn tcb() -> Tcb {
    let mut t = Tcb::new(1000, 1000, 10.0, f64::INFINITY);
    t.srtt = Some(ms(100));
    t.min_rtt = Some(ms(100));
    t
}

fn sample(prior_delivered: u64, delivered: u64, acked: u32) -> RateSample {
    RateSample {
        prior_delivered,
        delivered: Some(delivered),
        interval: Some(ms(100)),
        ack_interval: ms(100),
        rtt: Some(ms(100)),
        acked_sacked: acked,
        ..RateSample::default()
    }
}

fn started_with(signals: Signals) -> (Bbr3, Tcb) {
    let mut b = Bbr3::new(Bbr3Config {
        signals,
        ..Bbr3Config::default()
    });
    let mut t = tcb();
    b.init(&mut t, Time::ZERO);
    (b, t)
}

fn started() -> (Bbr3, Tcb) {
    started_with(Signals::V3)
}

/// One round: `per_round` segments delivered in 100 ms, one ACK at its end (t = `k` × 100 ms),
/// `losses` of them newly marked lost.
fn round_with(b: &mut Bbr3, t: &mut Tcb, k: u64, per_round: u64, losses: u32) {
    let prior = t.delivered;
    t.delivered += per_round;
    t.lost += losses as u64;
    t.delivered_mstamp = at(100 * k);
    let rs = RateSample {
        losses,
        ..sample(prior, per_round, per_round as u32)
    };
    b.cong_control(t, &rs, at(100 * k));
}

fn round(b: &mut Bbr3, t: &mut Tcb, k: u64, per_round: u64) {
    round_with(b, t, k, per_round, 0);
}

/// Startup ended by the full-bandwidth rule after rounds 1–4 of 10 segments each.
fn past_startup() -> (Bbr3, Tcb) {
    let (mut b, mut t) = started();
    for k in 1..=4 {
        round(&mut b, &mut t, k, 10);
    }
    (b, t)
}

#[test]
fn parameters_are_declared_and_the_defaults_are_the_v3_sources() {
    assert_params_listed::<Bbr3Config>();
    let b = Bbr3::new(Bbr3Config::default());
    // 256 × 277/100 + 1 = 710; 256 × 1000/2885 = 88; 256 × 91/100 = 232; 256 × 2/100 = 5;
    // 256 × 30/100 = 76; 256 × 15/100 = 38; BBR_UNIT × 1/4 = 64; BBR_UNIT / 2 = 128.
    let u = &b.u;
    assert_eq!(
        (u.startup_pacing, u.startup_cwnd, u.drain, u.cwnd),
        (710, 512, 88, 512)
    );
    assert_eq!(u.phase, [320, 232, 256, 256]);
    assert_eq!((u.loss_thresh, u.beta, u.headroom), (5, 76, 38));
    assert_eq!(
        (u.bw_probe_cwnd, u.probe_rtt_cwnd, u.full_bw_thresh),
        (64, 128, 320)
    );
}

#[test]
fn gains_too_large_for_the_kernels_bit_fields_are_refused() {
    let c = Bbr3Config {
        cwnd_gain: 3.2,
        bw_probe_cwnd_gain: 0.75,
        ..Bbr3Config::default()
    };
    // 819 + 192 = 1011 < 1024: accepted; 3.2 + 0.8 would not fit in the 1..0.75 range anyway.
    assert!(c.check().is_ok());
    let c = Bbr3Config {
        probe_rtt_win_ms: 20_000,
        ..Bbr3Config::default()
    };
    let e = c.check().unwrap_err();
    assert_eq!(e.name.as_deref(), Some("probe_rtt_win_ms"), "{e}");
    assert!(e.message.contains("20000 ms"), "{e}");
}

/// A bandwidth sample is delivered / interval rounded up (v3; v1 rounds down):
/// 10 × 2^24 / 100 000 µs = 1677.72 → 1678.
#[test]
fn a_bandwidth_sample_rounds_up() {
    let (mut b, mut t) = started();
    round(&mut b, &mut t, 1, 10);
    assert_eq!(b.sample_bw, 1678);
    assert_eq!(b.bw_hi, [0, 1678]);
    assert_eq!((b.pacing_gain, b.cwnd_gain), (710, 512));
}

/// Rounds of 10 segments at a constant rate: round 1's sample sets full_bw = 1678; rounds 2, 3
/// and 4 fall short of 1678 × 320/256 = 2097, so round 4 counts the third and ends Startup.
/// Drain is left on the same ACK (nothing is in flight) for ProbeBW Down, and Down for Cruise
/// (nothing in flight is below the BDP of ceil(1678 × 100 000 / 2^24) = 11).
#[test]
fn three_rounds_without_25_percent_growth_end_startup() {
    let (mut b, mut t) = started();
    for k in 1..=3 {
        round(&mut b, &mut t, k, 10);
        assert_eq!(b.mode(), Mode::Startup, "round {k}");
    }
    assert_eq!((b.full_bw, b.full_bw_cnt), (1678, 2));
    round(&mut b, &mut t, 4, 10);
    assert_eq!(
        t.exit_reason_hint,
        Some(ExitReason::Detector("bbr-full-bw"))
    );
    assert_eq!((b.mode(), b.phase()), (Mode::ProbeBw, Phase::Cruise));
    assert_eq!(t.ssthresh, 11.0);
    // Leaving Down, the filter's window advanced: this cycle's samples are the older window.
    assert_eq!(b.bw_hi, [1678, 0]);
    assert_eq!(b.mode_name(), "probe-bw-cruise");
}

/// A growing rate keeps Startup going: 10, 13, 17, 22 … each at least 25 % above the last.
#[test]
fn a_growing_rate_keeps_startup_going() {
    let (mut b, mut t) = started();
    for (k, n) in [10u64, 13, 17, 22, 28, 35].into_iter().enumerate() {
        round(&mut b, &mut t, k as u64 + 1, n);
    }
    assert_eq!(b.mode(), Mode::Startup);
    assert_eq!(b.full_bw_cnt, 0);
}

/// Startup's loss exit (v3 signals): six ACKs with a loss in recovery, then a new loss round
/// whose sample lost 7 of a flight of 100 (> 100 × 5/256 = 1) ends Startup with `bbr-loss`.
/// inflight_hi is the larger of the BDP at max_bw and the round's delivered: samples of 20 in
/// 100 ms are ceil(20 × 2^24 / 10^5) = 3356, a BDP of ceil(3356 × 10^5 / 2^24) = 21 (3 × 2
/// segments of burst budget are less), against 20 delivered.
#[test]
fn loss_above_2_percent_in_a_round_of_recovery_ends_startup() {
    let run = |events: u32, state: CaState| {
        let (mut b, mut t) = started();
        t.ca_state = state;
        for i in 1..=events {
            // Same flight as the first ACK: not a new loss round (loss_round_delivered = 1).
            t.delivered += 20;
            let rs = RateSample {
                losses: 1,
                lost: i,
                tx_in_flight: 100,
                ..sample(0, 20, 20)
            };
            b.cong_control(&mut t, &rs, at(10 * i as u64));
        }
        t.delivered += 20;
        let rs = RateSample {
            losses: 1,
            lost: events + 1,
            tx_in_flight: 100,
            ..sample(20, 20, 20)
        };
        b.cong_control(&mut t, &rs, at(100));
        (b, t)
    };
    let (b, t) = run(5, CaState::Recovery);
    assert_eq!(t.exit_reason_hint, Some(ExitReason::Detector("bbr-loss")));
    assert_eq!(b.inflight_hi, 21);
    assert_ne!(b.mode(), Mode::Startup);
    // Four events and the one of the last ACK: five, one short.
    let (b, _) = run(4, CaState::Recovery);
    assert_eq!(b.mode(), Mode::Startup);
    // Outside recovery the rule does not apply.
    let (b, _) = run(5, CaState::Open);
    assert_eq!(b.mode(), Mode::Startup);
}

/// `bbr_inflight_hi_from_lost_skb`, by hand:
/// - flight 1000, 5 lost: 999 before it, 4 lost before; budget ceil(999 × 5/256) = 20 > 4, so
///   the rate crossed 5/256 after (20 - 4) × 256 / (256 - 5) = 16 more: 1015;
/// - flight 100, 3 lost: budget ceil(99 × 5/256) = 2 ≤ 2 lost before: crossed already, 99;
/// - an empty flight has no answer (~0U).
#[test]
fn the_flight_where_the_loss_rate_crossed_its_threshold() {
    let b = Bbr3::new(Bbr3Config::default());
    let at_loss = |tx_in_flight, lost| {
        b.inflight_hi_from_lost_skb(&LossSignal {
            tx_in_flight,
            lost,
            is_app_limited: false,
        })
    };
    assert_eq!(at_loss(1000, 5), 1015);
    assert_eq!(at_loss(100, 3), 99);
    assert_eq!(at_loss(0, 1), UNSET);
}

/// Headroom: 15 % (38/256) of inflight_hi, at least 1, never below cwnd_min_target:
/// 100 → 100 - 14 = 86; 10 → 10 - 1 = 9; 4 → 4.
#[test]
fn headroom_leaves_15_percent_under_inflight_hi() {
    let mut b = Bbr3::new(Bbr3Config::default());
    assert_eq!(b.inflight_with_headroom(), UNSET);
    for (hi, expected) in [(100, 86), (10, 9), (4, 4)] {
        b.inflight_hi = hi;
        assert_eq!(b.inflight_with_headroom(), expected, "inflight_hi {hi}");
    }
}

/// Outside probing, a lossy round cuts bw_lo by beta (76/256), not below the round's own
/// delivery rate: the round after a slow one (2 segments in 100 ms, ceil(2 × 2^24/10^5) = 336)
/// takes bw_lo from max_bw 1678 to 1678 × 180/256 = 1179, and the estimate with it.
#[test]
fn a_lossy_round_outside_probing_cuts_the_lower_bounds_by_beta() {
    let (mut b, mut t) = past_startup();
    // The first lossy round sets the bounds from max_bw and cwnd, then cuts them; the last
    // round's own rate (1678) and volume (10) hold them up.
    let cwnd = t.cwnd as u32;
    round_with(&mut b, &mut t, 5, 2, 1);
    assert_eq!(b.bw_lo, 1678);
    let inflight_lo = b.inflight_lo;
    assert_eq!(inflight_lo, (cwnd * 180 / 256).max(10));
    round_with(&mut b, &mut t, 6, 2, 1);
    assert_eq!(b.bw_lo, 1179);
    assert_eq!(b.inflight_lo, (inflight_lo * 180 / 256).max(2));
    assert_eq!(b.bw(), 1179);
    // A round without loss leaves them.
    round(&mut b, &mut t, 7, 2);
    assert_eq!(b.bw_lo, 1179);
}

/// While a probe's samples arrive, a segment marked lost with 25 of a flight of 1000 lost since
/// it was sent (> 1000 × 5/256 = 19) means the probe went too high: inflight_hi comes down to
/// 999 (the flight before it; the threshold was crossed earlier, ceil(999 × 5/256) = 20 ≤ 24)
/// and Up ends for Down. The loss also marks the round and the cycle.
#[test]
fn a_segment_lost_while_probing_cuts_inflight_hi_and_ends_up() {
    let (mut b, mut t) = past_startup();
    b.set_cycle_idx(Phase::Up);
    b.bw_probe_samples = true;
    t.lost = 25;
    let seg = LostSegment {
        tx_in_flight: 1000,
        tx_lost: 0,
        is_app_limited: false,
    };
    b.skb_marked_lost(&mut t, &seg, at(500));
    assert_eq!(b.inflight_hi, 999);
    assert_eq!(b.phase(), Phase::Down);
    assert!(b.prev_probe_too_high && !b.bw_probe_samples);
    // Down starts with its congestion signals reset, this loss's included.
    assert!(!b.loss_in_round && !b.loss_in_cycle);
    // Outside a probe, a loss only marks the round.
    let (mut b, mut t) = past_startup();
    t.lost = 25;
    b.skb_marked_lost(&mut t, &seg, at(500));
    assert_eq!(b.inflight_hi, UNSET);
    assert!(b.loss_in_round && b.loss_in_cycle);
    // Only the v3 signals ask for lost segments.
    assert!(b.wants_lost_segments());
    assert!(!started_with(Signals::Mainline).0.wants_lost_segments());
}

/// Mainline stand-ins: a loss in an ACK's `losses` marks the round (there is no
/// skb_marked_lost), the flight is the one before the ACK, and `lost` counts from the start of
/// the previous round: 3 lost by round 1's start, 7 by round 2's, 9 now → 6.
#[test]
fn mainline_stands_in_for_the_per_segment_signals() {
    let (mut b, mut t) = started_with(Signals::Mainline);
    t.lost = 3;
    round(&mut b, &mut t, 1, 10);
    t.lost = 7;
    round(&mut b, &mut t, 2, 10);
    t.lost = 9;
    let rs = RateSample {
        prior_in_flight: 40,
        losses: 2,
        ..sample(15, 10, 10)
    };
    let s = b.loss_signal(&t, &rs);
    assert_eq!((s.lost, s.tx_in_flight), (6, 40));
    assert!(!b.loss_in_round);
    b.cong_control(&mut t, &rs, at(250));
    assert!(b.loss_in_cycle);
    // With v3's signals the same ACK reads the sample's own.
    let (b, t) = started();
    let rs = RateSample {
        lost: 1,
        tx_in_flight: 12,
        ..rs
    };
    assert_eq!(b.loss_signal(&t, &rs).lost, 1);
    assert_eq!(b.loss_signal(&t, &rs).tx_in_flight, 12);
}

/// ProbeRTT: no RTT below 100 ms for 5 s (the 5000-jiffy window expires after jiffy 5000) →
/// ProbeRTT at t = 5.1 s with cwnd at half the BDP, max(4, ceil(1678 × 10^5 × 128/256 / 2^24))
/// = 6; nothing in flight, so it lasts 200 ms (to jiffy 5300) and a round, and ends after
/// jiffy 5300, at 5.4 s, back in Cruise with the saved cwnd.
#[test]
fn probe_rtt_every_5_s_at_half_the_bdp() {
    let (mut b, mut t) = past_startup();
    let mut k = 5;
    while k <= 50 {
        round(&mut b, &mut t, k, 10);
        assert_ne!(b.mode(), Mode::ProbeRtt, "t = {k}00 ms");
        k += 1;
    }
    let before = t.cwnd;
    round(&mut b, &mut t, 51, 10);
    assert_eq!(b.mode(), Mode::ProbeRtt);
    assert_eq!(t.cwnd, 6.0);
    assert_eq!(b.prior_cwnd, before as u32);
    assert_eq!((b.pacing_gain, b.cwnd_gain), (256, 256));
    for k in 52..=53 {
        round(&mut b, &mut t, k, 10);
        assert_eq!(b.mode(), Mode::ProbeRtt, "t = {k}00 ms");
    }
    round(&mut b, &mut t, 54, 10);
    assert_eq!((b.mode(), b.phase()), (Mode::ProbeBw, Phase::Cruise));
    assert!(t.cwnd >= before);
    assert_eq!(b.probe_rtt_min_stamp, 5400);
}

/// Cruise lasts the wall-clock wait drawn on entering Down (2 to 3 s) unless the
/// Reno-coexistence count (min(63, BDP) rounds) comes first; then Refill for one round, then Up
/// with its gains 5/4 and 2 + 1/4, whose cwnd target carries 2 more segments.
#[test]
fn cruise_then_refill_then_up() {
    let (mut b, mut t) = past_startup();
    assert!(
        (2_000_000..3_000_000).contains(&b.probe_wait_us),
        "{}",
        b.probe_wait_us
    );
    assert!(b.rounds_since_probe < 2);
    let mut k = 5;
    while b.phase() == Phase::Cruise {
        round(&mut b, &mut t, k, 10);
        k += 1;
    }
    // 11 rounds of BDP (Reno coexistence) come before 2 s.
    let cruise_rounds = k - 5;
    assert!((10..=11).contains(&cruise_rounds), "{cruise_rounds}");
    assert_eq!(b.phase(), Phase::Refill);
    assert_eq!(b.bw_lo, UNSET);
    assert_eq!((b.pacing_gain, b.cwnd_gain), (256, 512));
    round(&mut b, &mut t, k, 10);
    assert_eq!(b.phase(), Phase::Up);
    assert!(b.bw_probe_samples);
    assert_eq!((b.pacing_gain, b.cwnd_gain), (320, 576));
    // Up's target: ceil(1678 × 10^5 × 576/256 / 2^24) = 23, plus 2.
    assert_eq!(b.inflight(&t, b.bw(), 576), 25);
    // The rate does not grow: three rounds without 25 % (full_bw_now) end Up for Down, with a
    // new wait drawn and the probe's samples over once Down's first round ends.
    let mut rounds = 0;
    while b.phase() == Phase::Up {
        rounds += 1;
        round(&mut b, &mut t, k + 1 + rounds, 10);
    }
    assert_eq!(rounds, 3);
    assert_eq!(b.phase(), Phase::Down);
    assert_eq!(b.bw_probe_up_cnt, UNSET);
}

/// Drain holds its gain while the flight Startup built is above the BDP: with 30 segments in
/// flight against a BDP of 11, Startup's end leaves BBR in Drain (gain 88/256); when the flight
/// is down to 11 it moves to ProbeBW.
#[test]
fn drain_lasts_until_the_flight_is_down_to_the_bdp() {
    let (mut b, mut t) = started();
    t.in_flight = 30;
    for k in 1..=4 {
        round(&mut b, &mut t, k, 10);
    }
    assert_eq!(b.mode(), Mode::Drain);
    assert_eq!(b.pacing_gain, 88);
    t.in_flight = 11;
    round(&mut b, &mut t, 5, 10);
    assert_eq!(b.mode(), Mode::ProbeBw);
}

/// A timeout starts the full-pipe count over and, outside probing, sets inflight_lo from the
/// window before it; an undo brings back the bounds saved by ssthresh and the saved cwnd.
#[test]
fn timeouts_and_undo() {
    let (mut b, mut t) = past_startup();
    t.cwnd = 30.0;
    b.ssthresh(&mut t, at(500));
    assert_eq!(b.prior_cwnd, 30);
    b.inflight_hi = 50;
    t.cwnd = 1.0;
    b.set_state(&mut t, CaState::Loss, at(500));
    assert_eq!(b.inflight_lo, 30);
    assert_eq!(b.full_bw, 0);
    // Leaving Loss restores the saved window.
    b.set_state(&mut t, CaState::Open, at(600));
    assert_eq!(t.cwnd, 30.0);
    assert_eq!(b.undo_cwnd(&mut t), 30.0);
    // The saved bounds were unset: undoing leaves inflight_hi at the larger.
    assert_eq!(b.inflight_hi, UNSET);
}

/// With the fast path, an application-limited ACK below the estimate that changes neither mode
/// nor min RTT skips the model's update (the ACK-aggregation epoch does not count it); without
/// the fast path the same ACK is counted.
#[test]
fn the_fast_path_skips_only_what_changes_nothing() {
    let run = |fast_path: bool| {
        let mut b = Bbr3::new(Bbr3Config {
            fast_path,
            ..Bbr3Config::default()
        });
        let mut t = tcb();
        b.init(&mut t, Time::ZERO);
        for k in 1..=8 {
            round(&mut b, &mut t, k, 10);
        }
        assert!(b.try_fast_path);
        let before = (b.bw_hi, b.mode, b.cycle_idx, t.cwnd, b.ack_epoch_acked);
        t.delivered += 2;
        let rs = RateSample {
            is_app_limited: true,
            ..sample(t.delivered - 2, 2, 2)
        };
        b.cong_control(&mut t, &rs, at(850));
        (
            before,
            (b.bw_hi, b.mode, b.cycle_idx, t.cwnd, b.ack_epoch_acked),
        )
    };
    let (before, after) = run(true);
    assert_eq!(before, after);
    let (before, after) = run(false);
    assert_eq!(after.4, before.4 + 2);
}

/// The same seed draws the same probe waits; another seed, others.
#[test]
fn probe_waits_are_drawn_from_the_connections_stream() {
    let draw = |seed: u64| {
        let mut b = Bbr3::new(Bbr3Config::default());
        b.seed(Rng::stream(seed, 0));
        let mut t = tcb();
        b.init(&mut t, Time::ZERO);
        for k in 1..=4 {
            round(&mut b, &mut t, k, 10);
        }
        (b.probe_wait_us, b.rounds_since_probe)
    };
    assert_eq!(draw(1), draw(1));
    assert_ne!(draw(1).0, draw(2).0);
}
