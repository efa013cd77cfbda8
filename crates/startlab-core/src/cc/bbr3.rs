//! BBR version 3 as Google's v3 source runs it (`net/ipv4/tcp_bbr.c` of github.com/google/bbr,
//! branch v3, `BBR_VERSION` 3) and draft-ietf-ccwg-bbr describes it.
//!
//! Like BBR v1 ([`super::bbr`]) it paces and sets cwnd from a model of the path on every ACK,
//! but the model has bounds on both sides: `bw_hi`/`inflight_hi`, the most the path delivered
//! or held without too much loss, probed upward; and `bw_lo`/`inflight_lo`, cut by `beta` (30 %)
//! in each round with loss when not probing. The modes:
//! - **Startup**: pacing gain 2.77 (4 ln 2), cwnd gain 2, until the delivery rate stops growing
//!   by 25 % for three rounds (`bbr-full-bw`), or a round of recovery sees at least six loss
//!   events and a loss rate above 2 % (`bbr-loss`; `inflight_hi` is then the BDP or the
//!   largest flight delivered in the round);
//! - **Drain** at pacing gain 0.35 until the flight is down to the BDP;
//! - **ProbeBW**, a cycle of four phases: Down (0.91, until the flight is below the BDP and
//!   leaves 15 % headroom under `inflight_hi`), Cruise (1.0, for 2–3 s or, Reno-coexistence,
//!   for as many rounds as the BDP in packets, at most 63), Refill (1.0 for a round, lower
//!   bounds reset), Up (1.25, cwnd gain 2.25, `inflight_hi` raised by a slope that doubles each
//!   round, until the rate plateaus, `inflight_hi` is reached after a probe that went too high,
//!   or the loss rate passes 2 % — then `inflight_hi` is cut to the flight of the loss);
//! - **ProbeRTT** every 5 s without a lower RTT: cwnd at half the BDP for 200 ms and a round.
//!
//! The arithmetic is the kernel's: bandwidth in packets per microsecond << 24, gains in 1/256,
//! times in microseconds, the min-RTT clocks in jiffies of `hz`; the kernel's bit-field widths
//! are kept where they saturate a counter.
//!
//! **Signals.** The v3 source needs what Google's v3 kernel adds to Linux: each segment's
//! `tx.in_flight` and `tx.lost` carried into the rate sample (`rs->tx_in_flight`, `rs->lost`)
//! and a `skb_marked_lost` hook called for every segment marked lost. `signals = "v3"` (the
//! default) uses them, as the simulator provides them. A `tcp_congestion_ops` program on
//! mainline Linux 6.18 has none of them, so `signals = "mainline"` — what the eBPF port
//! implements and the kernel world runs — stands in for them: a loss seen in an ACK's
//! `rs->losses` marks the round lossy (in place of `skb_marked_lost`), `tx_in_flight` is the
//! flight before the ACK (`rs->prior_in_flight`), and `lost` is what `tp->lost` grew by since the
//! start of the previous round (the packet an ACK samples was sent within about one round).
//!
//! Left out, because the simulator has no ECN yet: the ECN response (`ecn_alpha`, the CE-ratio
//! exit of Startup, the `inflight_lo` cut by `ecn_alpha`), which the v3 source enables only on
//! routes flagged as low-threshold ECN; Protective Load Balancing; `fast_ack_mode` (a receiver
//! option); the TLP-recovery event (`CA_EVENT_TLP_RECOVERY`, not in mainline Linux).

use super::bbr::{
    jiffies, ms_to_jiffies, publish_pacing_rate, rate_bytes_per_sec, unit, us, BBR_SCALE, BBR_UNIT,
    BW_SCALE, BW_UNIT, TSO_MAX_BYTES,
};
use super::params::{above, closed, param, require, AlgorithmConfig, Allowed, Param, ParamError};
use super::{
    CaState, CongestionControl, CwndEvent, ExitReason, LostSegment, ModelState, RateSample, Tcb,
};
use crate::rng::Rng;
use crate::time::{Duration, Time};
use crate::units::Rate;
use serde::{Deserialize, Serialize};
use startlab_bpf::vm::prandom_u32;

/// "No bound yet" (`~0U`).
const UNSET: u32 = u32::MAX;
/// GSO_LEGACY_MAX_SIZE: the base of `bbr_tso_segs_generic`'s min-RTT allowance.
const GSO_LEGACY_MAX_SIZE: u64 = 65536;

/// Where the v3 loss signals come from (see the module docs).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Signals {
    /// Google's v3 kernel: `rs->tx_in_flight`, `rs->lost` and `skb_marked_lost`.
    V3,
    /// What a struct_ops program sees on mainline Linux 6.18 (the eBPF port).
    Mainline,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bbr3Config {
    /// Startup's pacing gain (`bbr_startup_pacing_gain` = 256 × 277/100 + 1 = 710/256).
    pub startup_pacing_gain: f64,
    /// Startup's and Drain's cwnd gain (`bbr_startup_cwnd_gain` = 2).
    pub startup_cwnd_gain: f64,
    /// Drain's pacing gain (`bbr_drain_gain` = 256 × 1000/2885 = 88/256).
    pub drain_gain: f64,
    /// ProbeBW's cwnd gain (`bbr_cwnd_gain` = 2).
    pub cwnd_gain: f64,
    /// ProbeBW Up's pacing gain (5/4) and Down's (256 × 91/100 = 232/256).
    pub probe_up_gain: f64,
    pub probe_down_gain: f64,
    /// Added to cwnd_gain in ProbeBW Up (`bbr_bw_probe_cwnd_gain` = 1 quarter).
    pub bw_probe_cwnd_gain: f64,
    /// Seconds of the min-RTT filter (`bbr_min_rtt_win_sec`).
    pub min_rtt_win_s: u32,
    /// Window of the ProbeRTT min-RTT filter: ProbeRTT when it expires (`bbr_probe_rtt_win_ms`).
    pub probe_rtt_win_ms: u32,
    /// Least time in ProbeRTT (`bbr_probe_rtt_mode_ms`).
    pub probe_rtt_ms: u32,
    /// ProbeRTT's cwnd as a fraction of the BDP (`bbr_probe_rtt_cwnd_gain` = 1/2).
    pub probe_rtt_cwnd_gain: f64,
    /// Growth of a rate sample that restarts the plateau count (`bbr_full_bw_thresh` = 5/4) …
    pub full_bw_thresh: f64,
    /// … and rounds without it that mean the pipe is full (`bbr_full_bw_cnt`).
    pub full_bw_cnt: u32,
    /// Loss events in a round of recovery that, with a loss rate above loss_thresh, end
    /// Startup (`bbr_full_loss_cnt`; 0 turns the rule off).
    pub full_loss_cnt: u32,
    /// Loss rate of a flight above which probing went too far (`bbr_loss_thresh` = 5/256 ≈ 2 %).
    pub loss_thresh: f64,
    /// Multiplicative cut of bw_lo and inflight_lo per lossy round (`bbr_beta` = 76/256 ≈ 0.3).
    pub beta: f64,
    /// Headroom left under inflight_hi after a probe saw loss (`bbr_inflight_headroom` = 38/256).
    pub inflight_headroom: f64,
    /// Smallest cwnd (`bbr_cwnd_min_target`).
    pub cwnd_min_target: u32,
    /// Pace this much below the estimate (`bbr_pacing_margin_percent`).
    pub pacing_margin_percent: u32,
    /// Gain on the ACK-aggregation allowance (`bbr_extra_acked_gain`; 0 turns it off).
    pub extra_acked_gain: f64,
    /// Rounds of each half of the ACK-aggregation filter (`bbr_extra_acked_win_rtts`).
    pub extra_acked_win_rtts: u32,
    /// The ACK-aggregation allowance is at most this much time at the estimated rate
    /// (`bbr_extra_acked_max_us`).
    pub extra_acked_max_ms: u32,
    /// Most rounds of Cruise before a Reno-coexistence probe (`bbr_bw_probe_max_rounds`).
    pub bw_probe_max_rounds: u32,
    /// Random rounds added to that wait (`bbr_bw_probe_rand_rounds`).
    pub bw_probe_rand_rounds: u32,
    /// Wall-clock wait between probes: base plus a random part (`bbr_bw_probe_base_us`,
    /// `bbr_bw_probe_rand_us`).
    pub bw_probe_base_ms: u32,
    pub bw_probe_rand_ms: u32,
    /// Halve the min-RTT burst allowance for every 2^shift µs of min RTT (`bbr_tso_rtt_shift`).
    pub tso_rtt_shift: u32,
    /// `sk_pacing_shift`: the rate part of the burst allowance is rate >> shift bytes.
    pub pacing_shift: u32,
    /// `net.ipv4.tcp_min_tso_segs`: the least burst, segments.
    pub min_tso_segs: u32,
    /// Skip model updates on application-limited ACKs that change nothing (`bbr_fast_path`).
    pub fast_path: bool,
    /// Where the v3 loss signals come from: `"v3"` (Google's kernel) or `"mainline"` (what the
    /// eBPF port sees on Linux 6.18).
    pub signals: Signals,
    /// The kernel's `CONFIG_HZ`: the clock of the min-RTT filters and of ProbeRTT (jiffies).
    pub hz: u32,
}

impl Default for Bbr3Config {
    fn default() -> Self {
        Bbr3Config {
            startup_pacing_gain: 710.0 / 256.0,
            startup_cwnd_gain: 2.0,
            drain_gain: 88.0 / 256.0,
            cwnd_gain: 2.0,
            probe_up_gain: 1.25,
            probe_down_gain: 232.0 / 256.0,
            bw_probe_cwnd_gain: 0.25,
            min_rtt_win_s: 10,
            probe_rtt_win_ms: 5000,
            probe_rtt_ms: 200,
            probe_rtt_cwnd_gain: 0.5,
            full_bw_thresh: 1.25,
            full_bw_cnt: 3,
            full_loss_cnt: 6,
            loss_thresh: 5.0 / 256.0,
            beta: 76.0 / 256.0,
            inflight_headroom: 38.0 / 256.0,
            cwnd_min_target: 4,
            pacing_margin_percent: 1,
            extra_acked_gain: 1.0,
            extra_acked_win_rtts: 5,
            extra_acked_max_ms: 100,
            bw_probe_max_rounds: 63,
            bw_probe_rand_rounds: 2,
            bw_probe_base_ms: 2000,
            bw_probe_rand_ms: 1000,
            tso_rtt_shift: 9,
            pacing_shift: 10,
            min_tso_segs: 2,
            fast_path: true,
            signals: Signals::V3,
            hz: 1000,
        }
    }
}

impl AlgorithmConfig for Bbr3Config {
    const PARAMS: &'static [Param] = &[
        param("startup_pacing_gain", "", closed(1.0, 3.99), "Startup's pacing gain (kept in 1/256; v3: 710/256 = 2.77)"),
        param("startup_cwnd_gain", "", closed(1.0, 3.99), "Startup's and Drain's cwnd gain (v3: 2)"),
        param("drain_gain", "", closed(0.1, 1.0), "Drain's pacing gain (v3: 88/256 = 0.35)"),
        param("cwnd_gain", "", closed(1.0, 3.2), "ProbeBW's cwnd gain (v3: 2)"),
        param("probe_up_gain", "", closed(1.0, 3.99), "pacing gain of ProbeBW Up (v3: 5/4)"),
        param("probe_down_gain", "", closed(0.1, 1.0), "pacing gain of ProbeBW Down (v3: 232/256 = 0.91)"),
        param("bw_probe_cwnd_gain", "", closed(0.0, 0.75), "added to cwnd_gain in ProbeBW Up, in quarters (v3: 0.25)"),
        param("min_rtt_win_s", "s", closed(1.0, 3600.0), "length of the min-RTT filter (v3: 10 s)"),
        param("probe_rtt_win_ms", "ms", closed(1.0, 3_600_000.0), "ProbeRTT when no lower RTT was seen for this long (v3: 5000 ms; at most min_rtt_win_s)"),
        param("probe_rtt_ms", "ms", closed(0.0, 10000.0), "least time in ProbeRTT; 0: no ProbeRTT (v3: 200 ms)"),
        param("probe_rtt_cwnd_gain", "", closed(0.0, 1.0), "ProbeRTT's cwnd as a fraction of the BDP (v3: 0.5)"),
        param("full_bw_thresh", "", above(1.0, 4.0), "rate growth that restarts the full-pipe count (v3: 1.25)"),
        param("full_bw_cnt", "rounds", closed(1.0, 3.0), "rounds without that growth that mean the pipe is full (v3: 3; 2 bits)"),
        param("full_loss_cnt", "", closed(0.0, 15.0), "loss events in a round of recovery that, with loss_thresh passed, end Startup; 0: never (v3: 6)"),
        param("loss_thresh", "", closed(1.0 / 256.0, 0.99), "loss rate of a flight above which probing went too far (kept in 1/256; v3: 5/256)"),
        param("beta", "", closed(0.0, 0.99), "cut of bw_lo and inflight_lo per lossy round (kept in 1/256; v3: 76/256 = 0.3)"),
        param("inflight_headroom", "", closed(0.0, 0.99), "headroom left under inflight_hi (kept in 1/256; v3: 38/256 = 0.15)"),
        param("cwnd_min_target", "segments", closed(1.0, 1000.0), "smallest cwnd (v3: 4)"),
        param("pacing_margin_percent", "%", closed(0.0, 99.0), "pace this far below the bandwidth estimate (v3: 1)"),
        param("extra_acked_gain", "", closed(0.0, 3.99), "gain on the ACK-aggregation allowance; 0 turns it off (v3: 1)"),
        param("extra_acked_win_rtts", "rounds", closed(1.0, 31.0), "rounds of each half of the ACK-aggregation filter (v3: 5)"),
        param("extra_acked_max_ms", "ms", closed(0.0, 10000.0), "the ACK-aggregation allowance is at most this much time at the estimated rate (v3: 100 ms)"),
        param("bw_probe_max_rounds", "rounds", closed(1.0, 255.0), "most rounds of Cruise before a Reno-coexistence probe (v3: 63)"),
        param("bw_probe_rand_rounds", "rounds", closed(1.0, 255.0), "random rounds 0..n-1 counted as already waited (v3: 2)"),
        param("bw_probe_base_ms", "ms", closed(0.0, 3_600_000.0), "least wall-clock wait between bandwidth probes (v3: 2000 ms)"),
        param("bw_probe_rand_ms", "ms", closed(1.0, 3_600_000.0), "random part 0..n of that wait (v3: 1000 ms)"),
        param("tso_rtt_shift", "", closed(0.0, 31.0), "burst allowance 64 KB / 2^(min_rtt / 2^shift us); 0: none (v3: 9)"),
        param("pacing_shift", "", closed(0.0, 20.0), "sk_pacing_shift: rate >> shift bytes per burst (Linux: 10, about 1 ms)"),
        param("min_tso_segs", "segments", closed(1.0, 127.0), "net.ipv4.tcp_min_tso_segs: the least burst (Linux: 2)"),
        param("fast_path", "", Allowed::Any, "skip model updates on application-limited ACKs that change nothing (v3: true)"),
        param("signals", "", Allowed::Any, "\"v3\": Google's v3 kernel's per-segment loss signals; \"mainline\": what a struct_ops program has on Linux 6.18 (the eBPF port, the kernel world)"),
        param("hz", "Hz", closed(1.0, 1000.0), "the kernel's CONFIG_HZ: jiffies of the min-RTT filters and ProbeRTT (on the Linux stack: tcp.hz)"),
    ];

    fn check(&self) -> Result<(), ParamError> {
        require(
            unit(self.full_bw_thresh) > BBR_UNIT,
            "full_bw_thresh",
            || {
                format!(
                    "{} is 256/256 in BBR's 1/256 units: it must exceed 1",
                    self.full_bw_thresh
                )
            },
        )?;
        require(
            unit(self.cwnd_gain) + unit(self.bw_probe_cwnd_gain) < 1024,
            "cwnd_gain",
            || {
                format!(
                    "{} plus bw_probe_cwnd_gain {} must stay below 4 (the kernel keeps cwnd_gain in 10 bits of 1/256)",
                    self.cwnd_gain, self.bw_probe_cwnd_gain
                )
            },
        )?;
        require(
            self.probe_rtt_win_ms as u64 <= self.min_rtt_win_s as u64 * 1000,
            "probe_rtt_win_ms",
            || {
                format!(
                    "{} ms is longer than the min-RTT filter (min_rtt_win_s = {} s); it must not be",
                    self.probe_rtt_win_ms, self.min_rtt_win_s
                )
            },
        )
    }
}

/// BBR's mode (`enum bbr_mode`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// The phase of ProbeBW (`enum bbr_pacing_gain_phase`, the index of the gain table).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    Up = 0,
    Down = 1,
    Cruise = 2,
    Refill = 3,
}

/// How the ACKs relate to bandwidth probing (`enum bbr_ack_phase`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// The loss part of a rate sample that `bbr_is_inflight_too_high` judges.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct LossSignal {
    /// Lost since the sampled segment was sent (`rs->lost`).
    lost: u32,
    /// In flight when it was sent (`rs->tx_in_flight`).
    tx_in_flight: u32,
    is_app_limited: bool,
}

/// Gains and fractions in 1/256.
#[derive(Clone, Debug)]
struct Units {
    startup_pacing: u32,
    startup_cwnd: u32,
    drain: u32,
    cwnd: u32,
    /// Pacing gain of each ProbeBW phase, by [`Phase`].
    phase: [u32; 4],
    bw_probe_cwnd: u32,
    probe_rtt_cwnd: u32,
    full_bw_thresh: u32,
    loss_thresh: u32,
    beta: u32,
    headroom: u32,
    extra_acked: u32,
}

#[derive(Clone, Debug)]
pub struct Bbr3 {
    c: Bbr3Config,
    u: Units,
    /// `sk_pacing_rate`, payload bytes per second.
    pacing_rate: u64,
    /// The connection's random stream, stepped as the port's `bpf_get_prandom_u32`.
    prandom: u64,

    min_rtt_us: u32,
    min_rtt_stamp: u32,
    probe_rtt_done_stamp: u32,
    probe_rtt_min_us: u32,
    probe_rtt_min_stamp: u32,
    next_rtt_delivered: u64,
    cycle_mstamp: u64,
    mode: Mode,
    prev_ca_state: CaState,
    round_start: bool,
    bw_probe_up_rounds: u32,
    try_fast_path: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    init_cwnd: u32,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: Phase,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    full_bw: u32,
    ack_epoch_mstamp: u64,
    extra_acked: [u32; 2],
    ack_epoch_acked: u32,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    full_bw_now: bool,
    loss_in_cycle: bool,
    loss_round_delivered: u64,
    undo_bw_lo: u32,
    undo_inflight_lo: u32,
    undo_inflight_hi: u32,
    bw_latest: u32,
    bw_lo: u32,
    bw_hi: [u32; 2],
    inflight_latest: u32,
    inflight_lo: u32,
    inflight_hi: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    probe_wait_us: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    rounds_since_probe: u32,
    loss_round_start: bool,
    loss_in_round: bool,
    ack_phase: AckPhase,
    loss_events_in_round: u32,
    /// This ACK's bandwidth sample (`bbr_context.sample_bw`).
    sample_bw: u32,
    /// `signals = "mainline"`: `tp->lost` at the start of the previous and of this round.
    lost_at_round: [u64; 2],
}

impl Bbr3 {
    pub fn new(c: Bbr3Config) -> Self {
        let u = Units {
            startup_pacing: unit(c.startup_pacing_gain),
            startup_cwnd: unit(c.startup_cwnd_gain),
            drain: unit(c.drain_gain),
            cwnd: unit(c.cwnd_gain),
            phase: [
                unit(c.probe_up_gain),
                unit(c.probe_down_gain),
                BBR_UNIT,
                BBR_UNIT,
            ],
            bw_probe_cwnd: unit(c.bw_probe_cwnd_gain),
            probe_rtt_cwnd: unit(c.probe_rtt_cwnd_gain),
            full_bw_thresh: unit(c.full_bw_thresh),
            loss_thresh: unit(c.loss_thresh),
            beta: unit(c.beta),
            headroom: unit(c.inflight_headroom),
            extra_acked: unit(c.extra_acked_gain),
        };
        Bbr3 {
            c,
            u,
            pacing_rate: 0,
            prandom: 0,
            min_rtt_us: UNSET,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            probe_rtt_min_us: UNSET,
            probe_rtt_min_stamp: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            round_start: false,
            bw_probe_up_rounds: 0,
            try_fast_path: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            init_cwnd: 0,
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: Phase::Up,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            full_bw_now: false,
            loss_in_cycle: false,
            loss_round_delivered: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: UNSET,
            bw_hi: [0; 2],
            inflight_latest: 0,
            inflight_lo: UNSET,
            inflight_hi: UNSET,
            bw_probe_up_cnt: UNSET,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            ack_phase: AckPhase::Init,
            loss_events_in_round: 0,
            sample_bw: 0,
            lost_at_round: [0; 2],
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn phase(&self) -> Phase {
        self.cycle_idx
    }

    /// `(inflight_lo, inflight_hi)`, `None` where unset.
    pub fn inflight_bounds(&self) -> (Option<u32>, Option<u32>) {
        let set = |v: u32| (v != UNSET).then_some(v);
        (set(self.inflight_lo), set(self.inflight_hi))
    }

    /// The mode's name, ProbeBW's with its phase (`bbr_get_phase`).
    pub fn mode_name(&self) -> &'static str {
        match (self.mode, self.cycle_idx) {
            (Mode::Startup, _) => "startup",
            (Mode::Drain, _) => "drain",
            (Mode::ProbeRtt, _) => "probe-rtt",
            (Mode::ProbeBw, Phase::Up) => "probe-bw-up",
            (Mode::ProbeBw, Phase::Down) => "probe-bw-down",
            (Mode::ProbeBw, Phase::Cruise) => "probe-bw-cruise",
            (Mode::ProbeBw, Phase::Refill) => "probe-bw-refill",
        }
    }

    /// `get_random_u32_below(n)`, drawn as the port draws it: `prandom × n >> 32`.
    fn random_below(&mut self, n: u32) -> u32 {
        ((prandom_u32(&mut self.prandom) as u64 * n as u64) >> 32) as u32
    }

    /// `bbr_max_bw`: the larger of the two windows of the max filter.
    fn max_bw(&self) -> u32 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `bbr_bw`: the estimate, bounded by bw_lo.
    fn bw(&self) -> u32 {
        self.max_bw().min(self.bw_lo)
    }

    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_bw_to_pacing_rate`.
    fn bw_to_pacing_rate(&self, tcb: &Tcb, bw: u32, gain: u32) -> u64 {
        rate_bytes_per_sec(bw as u64, tcb.mss_bytes, gain, self.c.pacing_margin_percent).max(1)
    }

    /// `bbr_init_pacing_rate_from_rtt`: Startup's gain × cwnd / srtt (1 ms before any RTT).
    fn init_pacing_rate_from_rtt(&mut self, tcb: &Tcb) {
        let rtt_us = match tcb.srtt {
            Some(srtt) => {
                self.has_seen_rtt = true;
                (srtt.as_nanos() / 1000).max(1)
            }
            None => 1000,
        };
        let bw = tcb.cwnd.floor() as u64 * BW_UNIT / rtt_us;
        let rate = bw.min(u32::MAX as u64) as u32;
        self.pacing_rate = self.bw_to_pacing_rate(tcb, rate, self.u.startup_pacing);
    }

    /// `bbr_set_pacing_rate`: only up until the pipe is known full.
    fn set_pacing_rate(&mut self, tcb: &Tcb, bw: u32, gain: u32) {
        let rate = self.bw_to_pacing_rate(tcb, bw, gain);
        if !self.has_seen_rtt && tcb.srtt.is_some() {
            self.init_pacing_rate_from_rtt(tcb);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal`: about 1 ms at the pacing rate plus 64 KB halved for every 512 µs of
    /// min RTT, in segments.
    fn tso_segs_goal(&self, tcb: &Tcb) -> u32 {
        let mut bytes = self.pacing_rate >> self.c.pacing_shift.min(63);
        if self.c.tso_rtt_shift > 0 {
            let r = self.min_rtt_us >> self.c.tso_rtt_shift;
            if r < 32 {
                bytes += GSO_LEGACY_MAX_SIZE >> r;
            }
        }
        let bytes = (bytes as u32 as u64).min(TSO_MAX_BYTES);
        ((bytes / tcb.mss_bytes.max(1) as u64) as u32).max(self.c.min_tso_segs)
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self, tcb: &Tcb) {
        let cwnd = tcb.cwnd.floor() as u32;
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw × min_rtt × gain), or the initial window without an RTT sample.
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == UNSET {
            return self.init_cwnd;
        }
        let w = bw as u64 * self.min_rtt_us as u64;
        (((w as u128 * gain as u128) >> BBR_SCALE) + BW_UNIT as u128 - 1)
            .checked_div(BW_UNIT as u128)
            .unwrap_or(0) as u32
    }

    /// `bbr_quantization_budget`: room for three bursts, the least cwnd, and 2 more in Up.
    fn quantization_budget(&self, tcb: &Tcb, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.max(3 * self.tso_segs_goal(tcb));
        cwnd = cwnd.max(self.c.cwnd_min_target);
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            cwnd = cwnd.wrapping_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`.
    fn inflight(&self, tcb: &Tcb, bw: u32, gain: u32) -> u32 {
        self.quantization_budget(tcb, self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`.
    fn packets_in_net_at_edt(&self, tcb: &Tcb, inflight_now: u32, now: Time) -> u32 {
        let interval_us = tcb.next_departure.max(now).saturating_since(now).as_nanos() / 1000;
        let interval_delivered = ((self.bw() as u64 * interval_us) >> BW_SCALE) as u32;
        let mut at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            at_edt = at_edt.wrapping_add(self.tso_segs_goal(tcb));
        }
        at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.u.extra_acked == 0 {
            return 0;
        }
        let max_aggr = (self.bw() as u64 * self.c.extra_acked_max_ms as u64 * 1000) / BW_UNIT;
        let aggr = (self.u.extra_acked * self.extra_acked()) >> BBR_SCALE;
        (aggr as u64).min(max_aggr) as u32
    }

    /// `bbr_probe_rtt_cwnd`: half the BDP, at least cwnd_min_target.
    fn probe_rtt_cwnd(&self) -> u32 {
        self.c
            .cwnd_min_target
            .max(self.bdp(self.bw(), self.u.probe_rtt_cwnd))
    }

    /// `bbr_set_cwnd`: grow toward the target by what was ACKed; above it, down to it once
    /// the pipe is full.
    fn set_cwnd(&mut self, tcb: &mut Tcb, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tcb.cwnd.floor() as u32;
        if acked > 0 {
            let mut target = self.bdp(bw, gain);
            target = target.wrapping_add(self.ack_aggregation_cwnd());
            target = self.quantization_budget(tcb, target);
            self.try_fast_path = false;
            if self.full_bw_reached {
                cwnd = cwnd.wrapping_add(acked);
                if cwnd >= target {
                    cwnd = target;
                    self.try_fast_path = true;
                }
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd = cwnd.wrapping_add(acked);
            } else {
                self.try_fast_path = true;
            }
            cwnd = cwnd.max(self.c.cwnd_min_target);
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(self.probe_rtt_cwnd());
        }
        tcb.cwnd = cwnd as f64;
    }

    /// `bbr_update_round_start`.
    fn update_round_start(&mut self, tcb: &Tcb, rs: &RateSample) {
        self.round_start = false;
        if interval_us(rs) > 0 && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tcb.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_calculate_bw_sample`: delivered / interval, rounded up.
    fn calculate_bw_sample(&mut self, rs: &RateSample) {
        let i = interval_us(rs);
        self.sample_bw = match rs.delivered {
            Some(d) if i > 0 => ((d as u128 * BW_UNIT as u128).div_ceil(i as u128)) as u32,
            _ => 0,
        };
    }

    /// `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(&mut self, tcb: &Tcb, rs: &RateSample) {
        if self.u.extra_acked == 0
            || rs.acked_sacked == 0
            || rs.delivered.is_none()
            || interval_us(rs) == 0
        {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            let thresh = if self.full_bw_reached {
                self.c.extra_acked_win_rtts
            } else {
                1
            };
            if self.extra_acked_win_rtts >= thresh {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = us(tcb.delivered_mstamp).saturating_sub(self.ack_epoch_mstamp) as u32;
        let mut expected = ((self.bw() as u64 * epoch_us as u64) / BW_UNIT) as u32;
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + rs.acked_sacked >= 1 << 20 {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = us(tcb.delivered_mstamp);
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(tcb.cwnd.floor() as u32);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        if extra > *slot {
            *slot = extra;
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, tcb: &mut Tcb, now: Time) {
        let j = jiffies(now, self.c.hz);
        if !(self.probe_rtt_done_stamp != 0 && after(j, self.probe_rtt_done_stamp)) {
            return;
        }
        self.probe_rtt_min_stamp = j;
        tcb.cwnd = tcb.cwnd.max(self.prior_cwnd as f64);
        self.exit_probe_rtt(tcb, now);
    }

    /// `bbr_update_min_rtt`: the two min-RTT filters (5 s for ProbeRTT, 10 s for the model)
    /// and ProbeRTT.
    fn update_min_rtt(&mut self, tcb: &mut Tcb, rs: &RateSample, now: Time) {
        let j = jiffies(now, self.c.hz);
        let expire = self
            .probe_rtt_min_stamp
            .wrapping_add(ms_to_jiffies(self.c.probe_rtt_win_ms, self.c.hz));
        let probe_rtt_expired = after(j, expire);
        // is_ack_delayed is not modelled (false): an expired filter takes any sample.
        if let Some(rtt) = rs.rtt {
            let rtt_us = (rtt.as_nanos() / 1000).min(u32::MAX as u64 - 1) as u32;
            if rtt_us < self.probe_rtt_min_us || probe_rtt_expired {
                self.probe_rtt_min_us = rtt_us;
                self.probe_rtt_min_stamp = j;
            }
        }
        let expire = self
            .min_rtt_stamp
            .wrapping_add(self.c.min_rtt_win_s.wrapping_mul(self.c.hz));
        let min_rtt_expired = after(j, expire);
        if self.probe_rtt_min_us <= self.min_rtt_us || min_rtt_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if self.c.probe_rtt_ms > 0
            && probe_rtt_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(tcb);
            self.probe_rtt_done_stamp = 0;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = tcb.delivered;
        }
        if self.mode == Mode::ProbeRtt {
            // Its own low-rate samples are marked application-limited.
            tcb.app_limited = Some((tcb.delivered + tcb.in_flight as u64).max(1));
            if self.probe_rtt_done_stamp == 0 && tcb.in_flight <= self.probe_rtt_cwnd() {
                self.probe_rtt_done_stamp =
                    j.wrapping_add(ms_to_jiffies(self.c.probe_rtt_ms, self.c.hz));
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tcb.delivered;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tcb, now);
                }
            }
        }
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (self.u.startup_pacing, self.u.startup_cwnd),
            Mode::Drain => (self.u.drain, self.u.startup_cwnd),
            Mode::ProbeBw => {
                let mut cwnd_gain = self.u.cwnd;
                if self.cycle_idx == Phase::Up {
                    cwnd_gain += self.u.bw_probe_cwnd;
                }
                (self.u.phase[self.cycle_idx as usize], cwnd_gain)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_advance_max_bw_filter`: each cycle, the older window is forgotten.
    fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return;
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_target_inflight`: the BDP, unless cwnd is smaller.
    fn target_inflight(&self, tcb: &Tcb) -> u32 {
        self.inflight(tcb, self.bw(), BBR_UNIT)
            .min(tcb.cwnd.floor() as u32)
    }

    fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.cycle_idx, Phase::Refill | Phase::Up))
    }

    /// `bbr_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, interval_us: u32, now: Time) -> bool {
        us(now) > self.cycle_mstamp + interval_us as u64
    }

    /// The pipe is full (`full_bw_reached`): reported as Startup's end when Startup is on.
    fn set_full_bw_reached(&mut self, tcb: &mut Tcb, reason: &'static str) {
        if !self.full_bw_reached && self.mode == Mode::Startup {
            tcb.exit_reason_hint = Some(ExitReason::Detector(reason));
        }
        self.full_bw_reached = true;
    }

    /// `bbr_handle_queue_too_high_in_startup`.
    fn handle_queue_too_high_in_startup(&mut self, tcb: &mut Tcb) {
        self.set_full_bw_reached(tcb, "bbr-loss");
        let bdp = self.inflight(tcb, self.max_bw(), BBR_UNIT);
        self.inflight_hi = bdp.max(self.inflight_latest);
    }

    /// `bbr_raise_inflight_hi_slope`: the growth per round doubles.
    fn raise_inflight_hi_slope(&mut self, tcb: &Tcb) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (tcb.cwnd.floor() as u32 / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`.
    fn probe_inflight_hi_upward(&mut self, tcb: &Tcb, rs: &RateSample) {
        if !tcb.is_cwnd_limited || (tcb.cwnd.floor() as u32) < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.wrapping_add(delta);
            self.try_fast_path = false;
        }
        if self.round_start {
            self.raise_inflight_hi_slope(tcb);
        }
    }

    /// `bbr_is_inflight_too_high`: more than loss_thresh of the flight lost (ECN: not modelled).
    fn is_inflight_too_high(&self, s: &LossSignal) -> bool {
        if s.lost > 0 && s.tx_in_flight > 0 {
            let thresh = ((s.tx_in_flight as u64 * self.u.loss_thresh as u64) >> BBR_SCALE) as u32;
            return s.lost > thresh;
        }
        false
    }

    /// `bbr_inflight_hi_from_lost_skb`: the flight at which, within the lost segment, the loss
    /// rate crossed loss_thresh.
    fn inflight_hi_from_lost_skb(&self, s: &LossSignal) -> u32 {
        let inflight_prev = s.tx_in_flight as i64 - 1;
        let lost_prev = s.lost as i64 - 1;
        if inflight_prev < 0 || lost_prev < 0 {
            return UNSET;
        }
        let loss_thresh = self.u.loss_thresh as u64;
        let loss_budget = (inflight_prev as u64 * loss_thresh + BBR_UNIT as u64 - 1) >> BBR_SCALE;
        let lost_prefix = if lost_prev as u64 >= loss_budget {
            0
        } else {
            ((loss_budget - lost_prev as u64) << BBR_SCALE) / (BBR_UNIT as u64 - loss_thresh)
        };
        (inflight_prev as u64 + lost_prefix) as u32
    }

    /// `bbr_inflight_with_headroom`.
    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom = ((self.inflight_hi as u64 * self.u.headroom as u64) >> BBR_SCALE).max(1);
        (self.inflight_hi as i32)
            .wrapping_sub(headroom as i32)
            .max(self.c.cwnd_min_target as i32) as u32
    }

    /// `bbr_bound_cwnd_for_inflight_model`.
    fn bound_cwnd_for_inflight_model(&self, tcb: &mut Tcb) {
        let mut cap = UNSET;
        if self.mode == Mode::ProbeBw && self.cycle_idx != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt
            || (self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Cruise)
        {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(self.c.cwnd_min_target);
        tcb.cwnd = tcb.cwnd.min(cap as f64);
    }

    /// `bbr_adapt_lower_bounds`: outside probing, each lossy round cuts bw_lo and inflight_lo
    /// by beta, not below what the last round delivered.
    fn adapt_lower_bounds(&mut self, tcb: &Tcb) {
        if self.is_probing_bandwidth() {
            return;
        }
        if self.loss_in_round {
            // bbr_init_lower_bounds
            if self.bw_lo == UNSET {
                self.bw_lo = self.max_bw();
            }
            if self.inflight_lo == UNSET {
                self.inflight_lo = tcb.cwnd.floor() as u32;
            }
            // bbr_loss_lower_bounds
            let cut = (BBR_UNIT - self.u.beta) as u64;
            self.bw_lo = self
                .bw_latest
                .max(((self.bw_lo as u64 * cut) >> BBR_SCALE) as u32);
            self.inflight_lo = self
                .inflight_latest
                .max(((self.inflight_lo as u64 * cut) >> BBR_SCALE) as u32);
        }
        self.bw_lo = self.bw_lo.max(1);
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = UNSET;
        self.inflight_lo = UNSET;
    }

    /// `bbr_reset_congestion_signals`.
    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.loss_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_update_latest_delivery_signals`.
    fn update_latest_delivery_signals(&mut self, tcb: &Tcb, rs: &RateSample) {
        self.loss_round_start = false;
        if interval_us(rs) == 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(self.sample_bw);
        self.inflight_latest = self.inflight_latest.max(delivered32(rs));
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = tcb.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals` (a TLP retransmission's ACK is not told apart).
    fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = self.sample_bw;
            self.inflight_latest = delivered32(rs);
        }
    }

    /// `bbr_update_congestion_signals`: the max filter, and once per loss round the lower
    /// bounds.
    fn update_congestion_signals(&mut self, tcb: &Tcb, rs: &RateSample) {
        if interval_us(rs) == 0 || rs.acked_sacked == 0 {
            return;
        }
        let bw = self.sample_bw;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw_hi[1] = self.bw_hi[1].max(bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(tcb);
        self.loss_in_round = false;
    }

    /// `bbr_is_reno_coexistence_probe_time`.
    fn is_reno_coexistence_probe_time(&self, tcb: &Tcb) -> bool {
        let rounds = self.c.bw_probe_max_rounds.min(self.target_inflight(tcb));
        self.rounds_since_probe >= rounds
    }

    /// `bbr_pick_probe_wait`: 0..rand_rounds rounds already waited; 2–3 s of wall clock.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.random_below(self.c.bw_probe_rand_rounds);
        let base_us = self.c.bw_probe_base_ms.saturating_mul(1000);
        let rand_us = self.random_below(self.c.bw_probe_rand_ms.saturating_mul(1000));
        self.probe_wait_us = base_us.wrapping_add(rand_us);
    }

    fn set_cycle_idx(&mut self, phase: Phase) {
        self.cycle_idx = phase;
        self.try_fast_path = false;
    }

    /// `bbr_start_bw_probe_refill`.
    fn start_bw_probe_refill(&mut self, tcb: &Tcb, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = tcb.delivered;
        self.set_cycle_idx(Phase::Refill);
    }

    /// `bbr_start_bw_probe_up`.
    fn start_bw_probe_up(&mut self, tcb: &Tcb, now: Time) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = tcb.delivered;
        self.cycle_mstamp = us(now);
        self.reset_full_bw();
        self.full_bw = self.sample_bw;
        self.set_cycle_idx(Phase::Up);
        self.raise_inflight_hi_slope(tcb);
    }

    /// `bbr_start_bw_probe_down`.
    fn start_bw_probe_down(&mut self, tcb: &Tcb, now: Time) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET;
        self.pick_probe_wait();
        self.cycle_mstamp = us(now);
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = tcb.delivered;
        self.set_cycle_idx(Phase::Down);
    }

    /// `bbr_start_bw_probe_cruise`.
    fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.set_cycle_idx(Phase::Cruise);
    }

    /// `bbr_handle_inflight_too_high`: once per probe, inflight_hi comes down to the flight
    /// that saw the loss (at least (1 - beta) of the target), and Up ends.
    fn handle_inflight_too_high(&mut self, tcb: &Tcb, s: &LossSignal, now: Time) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !s.is_app_limited {
            let floor =
                (self.target_inflight(tcb) as u64 * (BBR_UNIT - self.u.beta) as u64) >> BBR_SCALE;
            self.inflight_hi = s.tx_in_flight.max(floor as u32);
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            self.start_bw_probe_down(tcb, now);
        }
    }

    /// `bbr_adapt_upper_bounds`; true when it decided a phase change.
    fn adapt_upper_bounds(
        &mut self,
        tcb: &Tcb,
        rs: &RateSample,
        s: &LossSignal,
        now: Time,
    ) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(tcb, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(s) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(tcb, s, now);
            }
        } else {
            if self.inflight_hi == UNSET {
                return false;
            }
            if s.tx_in_flight > self.inflight_hi {
                self.inflight_hi = s.tx_in_flight;
            }
            if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
                self.probe_inflight_hi_upward(tcb, rs);
            }
        }
        false
    }

    /// `bbr_check_time_to_probe_bw` (the ECN re-probe is not modelled).
    fn check_time_to_probe_bw(&mut self, tcb: &Tcb, now: Time) -> bool {
        if self.has_elapsed_in_phase(self.probe_wait_us, now)
            || self.is_reno_coexistence_probe_time(tcb)
        {
            self.start_bw_probe_refill(tcb, 0);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise`.
    fn check_time_to_cruise(&self, tcb: &Tcb, inflight: u32, bw: u32) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(tcb, bw, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase`: ProbeBW's state machine.
    fn update_cycle_phase(&mut self, tcb: &Tcb, rs: &RateSample, s: &LossSignal, now: Time) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(tcb, rs, s, now) {
            return;
        }
        if self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(tcb, rs.prior_in_flight, now);
        let bw = self.max_bw();
        match self.cycle_idx {
            Phase::Cruise => {
                self.check_time_to_probe_bw(tcb, now);
            }
            Phase::Refill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(tcb, now);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else if tcb.is_cwnd_limited && tcb.cwnd.floor() as u32 >= self.inflight_hi {
                    // inflight_hi is what limits growth: the plateau count starts over.
                    self.reset_full_bw();
                    self.full_bw = self.sample_bw;
                } else if self.full_bw_now {
                    done = true;
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(tcb, now);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(tcb, now) {
                    return;
                }
                if self.check_time_to_cruise(tcb, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }

    /// `bbr_exit_probe_rtt`: back to ProbeBW (cruising) or Startup.
    fn exit_probe_rtt(&mut self, tcb: &Tcb, now: Time) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tcb, now);
            // Leaving ProbeRTT, the flight is below the BDP: cruise.
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_check_loss_too_high_in_startup`: at the end of a round of recovery with at least
    /// full_loss_cnt loss events and a loss rate above loss_thresh.
    fn check_loss_too_high_in_startup(&mut self, tcb: &mut Tcb, rs: &RateSample, s: &LossSignal) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.c.full_loss_cnt > 0
            && self.loss_round_start
            && tcb.ca_state == CaState::Recovery
            && self.loss_events_in_round >= self.c.full_loss_cnt
            && self.is_inflight_too_high(s)
        {
            self.handle_queue_too_high_in_startup(tcb);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_check_full_bw_reached`: a sample 25 % above full_bw starts the count over; three
    /// rounds without one mean the pipe is full.
    fn check_full_bw_reached(&mut self, tcb: &mut Tcb, rs: &RateSample) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        let thresh = ((self.full_bw as u64 * self.u.full_bw_thresh as u64) >> BBR_SCALE) as u32;
        if self.sample_bw >= thresh {
            self.reset_full_bw();
            self.full_bw = self.sample_bw;
            return;
        }
        if !self.round_start {
            return;
        }
        // The kernel keeps the count in 2 bits.
        self.full_bw_cnt = (self.full_bw_cnt + 1) & 3;
        self.full_bw_now = self.full_bw_cnt >= self.c.full_bw_cnt;
        if self.full_bw_now {
            self.set_full_bw_reached(tcb, "bbr-full-bw");
        }
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, tcb: &mut Tcb, now: Time) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            // ssthresh only reports the end of Startup.
            tcb.ssthresh = self.inflight(tcb, self.max_bw(), BBR_UNIT) as f64;
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tcb, tcb.in_flight, now)
                <= self.inflight(tcb, self.max_bw(), BBR_UNIT)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tcb, now);
        }
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, tcb: &mut Tcb, rs: &RateSample, s: &LossSignal, now: Time) {
        self.update_congestion_signals(tcb, rs);
        self.update_ack_aggregation(tcb, rs);
        self.check_loss_too_high_in_startup(tcb, rs, s);
        self.check_full_bw_reached(tcb, rs);
        self.check_drain(tcb, now);
        self.update_cycle_phase(tcb, rs, s, now);
        self.update_min_rtt(tcb, rs, now);
    }

    /// `bbr_run_fast_path`: an application-limited ACK below the estimate, without loss, that
    /// changes neither mode nor min RTT changes nothing. Returns (skip all, update the model).
    fn run_fast_path(
        &mut self,
        tcb: &mut Tcb,
        rs: &RateSample,
        s: &LossSignal,
        now: Time,
    ) -> (bool, bool) {
        if self.c.fast_path
            && self.try_fast_path
            && rs.is_app_limited
            && self.sample_bw < self.max_bw()
            && !self.loss_in_round
        {
            let (prev_mode, prev_min_rtt) = (self.mode, self.min_rtt_us);
            self.check_drain(tcb, now);
            self.update_cycle_phase(tcb, rs, s, now);
            self.update_min_rtt(tcb, rs, now);
            if self.mode == prev_mode && self.min_rtt_us == prev_min_rtt && self.try_fast_path {
                return (true, false);
            }
            return (false, false);
        }
        (false, true)
    }

    /// `bbr_note_loss`: this round has loss.
    fn note_loss(&mut self, tcb: &Tcb) {
        if !self.loss_in_round {
            self.loss_round_delivered = tcb.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// The loss signal of an ACK's rate sample: v3's own, or the mainline stand-ins.
    fn loss_signal(&self, tcb: &Tcb, rs: &RateSample) -> LossSignal {
        match self.c.signals {
            Signals::V3 => LossSignal {
                lost: rs.lost,
                tx_in_flight: rs.tx_in_flight,
                is_app_limited: rs.is_app_limited,
            },
            Signals::Mainline => LossSignal {
                lost: tcb
                    .lost
                    .saturating_sub(self.lost_at_round[0])
                    .min(u32::MAX as u64) as u32,
                tx_in_flight: rs.prior_in_flight,
                is_app_limited: rs.is_app_limited,
            },
        }
    }
}

/// `rs->interval_us` when positive, else 0.
fn interval_us(rs: &RateSample) -> u64 {
    rs.interval.map_or(0, |i| i.as_nanos() / 1000)
}

/// `rs->delivered` as the kernel's 32 bits (0 when absent).
fn delivered32(rs: &RateSample) -> u32 {
    rs.delivered.unwrap_or(0).min(u32::MAX as u64) as u32
}

/// The kernel's `after(a, b)` on 32-bit clocks.
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

impl CongestionControl for Bbr3 {
    /// `bbr_init`.
    fn init(&mut self, tcb: &mut Tcb, now: Time) {
        let j = jiffies(now, self.c.hz);
        self.init_cwnd = (tcb.cwnd.floor() as u32).min(0x7f);
        self.prior_cwnd = tcb.prior_cwnd.floor() as u32;
        tcb.ssthresh = f64::INFINITY;
        self.next_rtt_delivered = tcb.delivered;
        self.prev_ca_state = CaState::Open;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        let min_rtt = tcb.min_rtt.map_or(UNSET, |m| {
            (m.as_nanos() / 1000).min(u32::MAX as u64 - 1) as u32
        });
        self.probe_rtt_min_us = min_rtt;
        self.probe_rtt_min_stamp = j;
        self.min_rtt_us = min_rtt;
        self.min_rtt_stamp = j;
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tcb);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.cycle_mstamp = 0;
        self.cycle_idx = Phase::Up;
        self.mode = Mode::Startup;
        self.ack_epoch_mstamp = us(now);
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
        self.try_fast_path = false;
        self.loss_round_delivered = tcb.delivered + 1;
        self.loss_round_start = false;
        self.undo_bw_lo = 0;
        self.undo_inflight_lo = 0;
        self.undo_inflight_hi = 0;
        self.loss_events_in_round = 0;
        self.reset_congestion_signals();
        self.bw_lo = UNSET;
        self.bw_hi = [0; 2];
        self.inflight_lo = UNSET;
        self.inflight_hi = UNSET;
        self.reset_full_bw();
        self.bw_probe_up_cnt = UNSET;
        self.bw_probe_up_acks = 0;
        self.bw_probe_up_rounds = 0;
        self.probe_wait_us = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Init;
        self.rounds_since_probe = 0;
        self.bw_probe_samples = false;
        self.prev_probe_too_high = false;
        self.lost_at_round = [tcb.lost; 2];
        publish_pacing_rate(tcb, self.pacing_rate);
    }

    /// `bbr_ssthresh`: entering recovery saves cwnd and the bounds for an undo; ssthresh is
    /// unchanged.
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        self.save_cwnd(tcb);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        tcb.ssthresh
    }

    fn cong_avoid(&mut self, _tcb: &mut Tcb, _ack: &super::Ack, _now: Time) {}

    /// `bbr_set_state`: a timeout restarts the full-pipe count and, outside probing, sets
    /// inflight_lo from the window before it; leaving Loss restores the saved cwnd.
    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, _now: Time) {
        if state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == UNSET {
                self.inflight_lo = (tcb.cwnd.floor() as u32).max(self.prior_cwnd);
            }
        } else if self.prev_ca_state == CaState::Loss {
            // bbr_exit_loss_recovery
            tcb.cwnd = tcb.cwnd.max(self.prior_cwnd as f64);
            self.try_fast_path = false;
        }
    }

    /// `bbr_cwnd_event`: restarting from idle while application-limited.
    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, now: Time) {
        if event == CwndEvent::TxStart && tcb.app_limited.is_some() {
            self.idle_restart = true;
            self.ack_epoch_mstamp = us(now);
            self.ack_epoch_acked = 0;
            match self.mode {
                Mode::ProbeBw => {
                    self.set_pacing_rate(tcb, self.bw(), BBR_UNIT);
                    publish_pacing_rate(tcb, self.pacing_rate);
                }
                Mode::ProbeRtt => self.check_probe_rtt_done(tcb, now),
                _ => {}
            }
        }
    }

    /// `bbr_undo_cwnd`: the loss was spurious; the bounds come back and cwnd is the saved one.
    fn undo_cwnd(&mut self, _tcb: &mut Tcb) -> f64 {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.try_fast_path = false;
        self.prior_cwnd as f64
    }

    /// `bbr_main`.
    fn cong_control(&mut self, tcb: &mut Tcb, rs: &RateSample, now: Time) -> bool {
        // Mainline Linux has no skb_marked_lost: the ACK's fresh losses mark the round.
        if self.c.signals == Signals::Mainline && rs.losses > 0 {
            self.note_loss(tcb);
        }
        self.update_round_start(tcb, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xff);
            self.lost_at_round = [
                self.lost_at_round[1],
                tcb.lost.saturating_sub(rs.losses as u64),
            ];
        }
        let s = self.loss_signal(tcb, rs);
        self.calculate_bw_sample(rs);
        self.update_latest_delivery_signals(tcb, rs);
        let (skip, update_model) = self.run_fast_path(tcb, rs, &s, now);
        if !skip {
            if update_model {
                self.update_model(tcb, rs, &s, now);
            }
            self.update_gains();
            let bw = self.bw();
            self.set_pacing_rate(tcb, bw, self.pacing_gain);
            self.set_cwnd(tcb, rs.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model(tcb);
        }
        self.advance_latest_delivery_signals(rs);
        self.prev_ca_state = tcb.ca_state;
        self.loss_in_cycle |= s.lost > 0;
        publish_pacing_rate(tcb, self.pacing_rate);
        true
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// Until the pipe is full or Startup's losses say so (`bbr_full_bw_reached`): a PROBE_RTT
    /// forced during a long Startup returns to it (`bbr_exit_probe_rtt` → `bbr_reset_mode`).
    fn in_startup(&self, _tcb: &Tcb) -> bool {
        !self.full_bw_reached
    }

    fn seed(&mut self, mut rng: Rng) {
        self.prandom = rng.next_u64();
    }

    fn model_state(&self, tcb: &Tcb) -> Option<ModelState> {
        let bytes_per_s = (self.bw() as u128 * tcb.mss_bytes as u128 * 1_000_000) >> BW_SCALE;
        Some(ModelState {
            mode: self.mode_name(),
            bw: Rate::from_bps((bytes_per_s * 8).min(u64::MAX as u128) as u64),
            min_rtt: (self.min_rtt_us != UNSET)
                .then(|| Duration::from_micros(self.min_rtt_us as u64)),
            pacing_gain: self.pacing_gain as f64 / BBR_UNIT as f64,
            cwnd_gain: self.cwnd_gain as f64 / BBR_UNIT as f64,
        })
    }

    fn wants_lost_segments(&self) -> bool {
        self.c.signals == Signals::V3
    }

    /// `bbr_skb_marked_lost`: the round has loss; while the samples reflect a probe, a loss
    /// rate above loss_thresh at this segment cuts inflight_hi to where it was crossed.
    fn skb_marked_lost(&mut self, tcb: &mut Tcb, seg: &LostSegment, now: Time) {
        self.note_loss(tcb);
        if !self.bw_probe_samples {
            return;
        }
        let mut s = LossSignal {
            tx_in_flight: seg.tx_in_flight,
            lost: tcb.lost.saturating_sub(seg.tx_lost).min(u32::MAX as u64) as u32,
            is_app_limited: seg.is_app_limited,
        };
        if self.is_inflight_too_high(&s) {
            s.tx_in_flight = self.inflight_hi_from_lost_skb(&s);
            self.handle_inflight_too_high(tcb, &s, now);
        }
    }
}

#[cfg(test)]
mod tests;
