//! BBR version 1 as Linux 6.18 runs it (`net/ipv4/tcp_bbr.c`; Cardwell et al., "BBR:
//! Congestion-Based Congestion Control", ACM Queue 14(5), 2016).
//!
//! A model-based controller: on every ACK, through `cong_control`, it updates a model of the
//! path — the bottleneck bandwidth as the windowed maximum of delivery-rate samples over 10
//! rounds, the propagation delay as the minimum RTT over 10 s — and sets the pacing rate to
//! `pacing_gain × bw` and cwnd to `cwnd_gain × bw × min_rtt` plus a quantum. Four modes set the
//! gains: Startup (2/ln 2 for both, until the bandwidth stops growing by 25 % for three rounds),
//! Drain (the inverse gain, until the queue Startup built is gone), ProbeBW (the eight-phase
//! cycle 5/4, 3/4, 1 × 6, entered at a random phase) and ProbeRTT (cwnd of 4 for 200 ms and a
//! round when the minimum RTT has not been refreshed for 10 s). A long-term estimator detects
//! token-bucket policers from two lossy intervals of consistent rate.
//!
//! The arithmetic is the kernel's: bandwidth in packets per microsecond scaled by 2^24, gains in
//! 1/256, times in microseconds, the ProbeRTT and min-RTT clocks in jiffies of `hz`. Pacing rates
//! are computed in payload bytes per second as Linux's `sk_pacing_rate` and handed to the
//! sender scaled to wire bytes, so the spacing of segments is the kernel's.

use super::params::{above, closed, param, require, AlgorithmConfig, Param, ParamError};
use super::{CaState, CongestionControl, CwndEvent, ExitReason, ModelState, RateSample, Tcb};
use crate::rng::Rng;
use crate::time::{Duration, Time};
use crate::units::Rate;
use serde::{Deserialize, Serialize};
use startlab_bpf::vm::prandom_u32;

/// Bandwidth unit: packets per microsecond, scaled by 2^24 (`BW_SCALE`).
pub(super) const BW_SCALE: u32 = 24;
pub(super) const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gains in 1/256 (`BBR_SCALE`).
pub(super) const BBR_SCALE: u32 = 8;
pub(super) const BBR_UNIT: u32 = 1 << BBR_SCALE;
/// Phases of the ProbeBW gain cycle (`CYCLE_LEN`).
const CYCLE_LEN: u8 = 8;
/// `TCP_INIT_CWND`: the window BBR caps itself at while it has no RTT sample.
const TCP_INIT_CWND: u32 = 10;
/// `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` on x86-64: the most `bbr_tso_segs_goal` budgets
/// in one burst, in bytes.
pub(super) const TSO_MAX_BYTES: u64 = 65536 - 1 - 320;

/// BBR's mode (`enum bbr_mode`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BbrMode {
    Startup = 0,
    Drain = 1,
    ProbeBw = 2,
    ProbeRtt = 3,
}

impl BbrMode {
    pub const NAMES: [&'static str; 4] = ["startup", "drain", "probe-bw", "probe-rtt"];
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BbrConfig {
    /// Startup's pacing and cwnd gain (`bbr_high_gain` = 739/256, 2/ln 2 rounded up).
    pub high_gain: f64,
    /// Drain's pacing gain (`bbr_drain_gain` = 88/256, 1/high_gain).
    pub drain_gain: f64,
    /// ProbeBW's cwnd gain (`bbr_cwnd_gain` = 2).
    pub cwnd_gain: f64,
    /// ProbeBW's probing phase gain (5/4) and draining phase gain (3/4).
    pub probe_up_gain: f64,
    pub probe_down_gain: f64,
    /// Rounds of the max-bandwidth filter (`bbr_bw_rtts` = CYCLE_LEN + 2).
    pub bw_rtts: u32,
    /// Seconds of the min-RTT filter, and so between ProbeRTTs (`bbr_min_rtt_win_sec`).
    pub min_rtt_win_s: u32,
    /// Least time in ProbeRTT (`bbr_probe_rtt_mode_ms`).
    pub probe_rtt_ms: u32,
    /// Growth per round below which the pipe counts as full (`bbr_full_bw_thresh` = 5/4) …
    pub full_bw_thresh: f64,
    /// … for this many rounds (`bbr_full_bw_cnt`).
    pub full_bw_cnt: u32,
    /// Smallest cwnd, and ProbeRTT's (`bbr_cwnd_min_target`).
    pub cwnd_min_target: u32,
    /// Pace this much below the estimate (`bbr_pacing_margin_percent`).
    pub pacing_margin_percent: u32,
    /// Gain on the ACK-aggregation allowance (`bbr_extra_acked_gain`; 0 turns it off).
    pub extra_acked_gain: f64,
    /// Rounds of each half of the ACK-aggregation filter (`bbr_extra_acked_win_rtts`).
    pub extra_acked_win_rtts: u32,
    /// The long-term (policer) estimator is used (Linux always uses it).
    pub lt_bw: bool,
    /// `sk_pacing_shift`: the burst budget of `bbr_tso_segs_goal` is rate >> shift bytes.
    pub pacing_shift: u32,
    /// The kernel's `CONFIG_HZ`: the clock of the min-RTT filter and of ProbeRTT (jiffies).
    pub hz: u32,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            high_gain: 739.0 / 256.0,
            drain_gain: 88.0 / 256.0,
            cwnd_gain: 2.0,
            probe_up_gain: 1.25,
            probe_down_gain: 0.75,
            bw_rtts: CYCLE_LEN as u32 + 2,
            min_rtt_win_s: 10,
            probe_rtt_ms: 200,
            full_bw_thresh: 1.25,
            full_bw_cnt: 3,
            cwnd_min_target: 4,
            pacing_margin_percent: 1,
            extra_acked_gain: 1.0,
            extra_acked_win_rtts: 5,
            lt_bw: true,
            pacing_shift: 10,
            hz: 1000,
        }
    }
}

impl AlgorithmConfig for BbrConfig {
    const PARAMS: &'static [Param] = &[
        param("high_gain", "", closed(1.0, 3.99), "Startup's pacing and cwnd gain (kept in 1/256; Linux: 739/256 = 2/ln 2 rounded up)"),
        param("drain_gain", "", closed(0.1, 1.0), "Drain's pacing gain (kept in 1/256; Linux: 88/256 = 1/high_gain)"),
        param("cwnd_gain", "", closed(1.0, 3.99), "ProbeBW's cwnd gain: cwnd = cwnd_gain x bw x min_rtt + quantum"),
        param("probe_up_gain", "", closed(1.0, 3.99), "pacing gain of ProbeBW's probing phase (5/4)"),
        param("probe_down_gain", "", closed(0.1, 1.0), "pacing gain of ProbeBW's draining phase (3/4)"),
        param("bw_rtts", "rounds", closed(1.0, 100.0), "length of the max-bandwidth filter in rounds (Linux: 10)"),
        param("min_rtt_win_s", "s", closed(1.0, 3600.0), "length of the min-RTT filter: ProbeRTT when it expires (Linux: 10 s)"),
        param("probe_rtt_ms", "ms", closed(1.0, 10000.0), "least time spent in ProbeRTT at cwnd_min_target (Linux: 200 ms)"),
        param("full_bw_thresh", "", above(1.0, 4.0), "bandwidth growth per round below which a round counts toward a full pipe (Linux: 1.25)"),
        param("full_bw_cnt", "rounds", closed(1.0, 3.0), "rounds without that growth that end Startup (Linux: 3; the kernel keeps it in 2 bits)"),
        param("cwnd_min_target", "segments", closed(1.0, 1000.0), "smallest cwnd, and cwnd in ProbeRTT (Linux: 4)"),
        param("pacing_margin_percent", "%", closed(0.0, 99.0), "pace this far below the bandwidth estimate (Linux: 1)"),
        param("extra_acked_gain", "", closed(0.0, 3.99), "gain on the ACK-aggregation allowance added to cwnd after Startup; 0 turns it off (Linux: 1)"),
        param("extra_acked_win_rtts", "rounds", closed(1.0, 31.0), "rounds of each half of the ACK-aggregation max filter (Linux: 5)"),
        param("lt_bw", "", super::params::Allowed::Any, "true: the long-term estimator detects token-bucket policers and paces at their rate (Linux: always)"),
        param("pacing_shift", "", closed(0.0, 20.0), "sk_pacing_shift: bbr_tso_segs_goal budgets rate >> shift bytes per burst (Linux: 10, about 1 ms)"),
        param("hz", "Hz", closed(1.0, 1000.0), "the kernel's CONFIG_HZ: jiffies of the min-RTT filter and ProbeRTT's timer (on the Linux stack: tcp.hz)"),
    ];

    fn check(&self) -> Result<(), ParamError> {
        require(
            (self.full_bw_thresh * BBR_UNIT as f64).round() > BBR_UNIT as f64,
            "full_bw_thresh",
            || {
                format!(
                    "{} is 256/256 in BBR's 1/256 units: it must exceed 1",
                    self.full_bw_thresh
                )
            },
        )
    }
}

/// A gain in 1/256.
pub(super) fn unit(g: f64) -> u32 {
    (g * BBR_UNIT as f64).round() as u32
}

/// Linux `struct minmax` with `minmax_running_max`: the windowed maximum of the samples of the
/// last `win` rounds, kept as the best, second-best and third-best of successive sub-windows
/// (Kathleen Nichols' algorithm, `lib/win_minmax.c`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct WindowedMax {
    /// (round, value), best first.
    s: [(u32, u64); 3],
}

impl WindowedMax {
    fn get(&self) -> u64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u32, v: u64) {
        self.s = [(t, v); 3];
    }

    fn running_max(&mut self, win: u32, t: u32, v: u64) -> u64 {
        let sample = (t, v);
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            self.reset(t, v);
            return v;
        }
        if v >= self.s[1].1 {
            self.s[1] = sample;
            self.s[2] = sample;
        } else if v >= self.s[2].1 {
            self.s[2] = sample;
        }
        self.subwin_update(win, sample)
    }

    /// `minmax_subwin_update`: age the best samples out of the window.
    fn subwin_update(&mut self, win: u32, sample: (u32, u64)) -> u64 {
        let dt = sample.0.wrapping_sub(self.s[0].0);
        if dt > win {
            // The best has passed the window: promote the second and third.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = sample;
            if sample.0.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = sample;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            // A quarter of the window without a better sample: take a second choice.
            self.s[1] = sample;
            self.s[2] = sample;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            // Half the window: take a third.
            self.s[2] = sample;
        }
        self.s[0].1
    }
}

#[derive(Clone, Debug)]
pub struct Bbr {
    c: BbrConfig,
    /// Gains in 1/256.
    high_gain: u32,
    drain_gain: u32,
    cwnd_gain_probe_bw: u32,
    cycle_gains: [u32; CYCLE_LEN as usize],
    full_bw_thresh: u32,
    extra_acked_gain: u32,

    /// The socket's pacing rate, payload bytes per second (`sk_pacing_rate`).
    pacing_rate: u64,
    /// The state of the ProbeBW phase draws (`prandom_u32_max`): the connection's seed, stepped
    /// as the simulator's `bpf_get_prandom_u32` steps it, so that the port draws the same.
    prandom: u64,

    min_rtt_us: u32,
    min_rtt_stamp: u32,
    probe_rtt_done_stamp: u32,
    bw: WindowedMax,
    rtt_cnt: u32,
    next_rtt_delivered: u64,
    cycle_mstamp: u64,
    mode: BbrMode,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp: u64,
    lt_last_lost: u64,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: u8,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    full_bw: u64,
    ack_epoch_mstamp: u64,
    extra_acked: [u32; 2],
    ack_epoch_acked: u32,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
}

/// Microseconds of a time (the kernel's `tcp_mstamp`).
pub(super) fn us(t: Time) -> u64 {
    t.as_nanos() / 1000
}

/// `tcp_jiffies32` at `now` for a kernel ticking at `hz`.
pub(super) fn jiffies(now: Time, hz: u32) -> u32 {
    (now.as_nanos() as u128 * hz as u128 / 1_000_000_000) as u32
}

/// `msecs_to_jiffies`, rounding up.
pub(super) fn ms_to_jiffies(ms: u32, hz: u32) -> u32 {
    (ms as u64 * hz as u64).div_ceil(1000) as u32
}

/// `bbr_rate_bytes_per_sec`: bandwidth `rate` (packets/µs << 24) of `mss`-byte segments, with
/// `gain` (1/256), `margin_percent` below it, in payload bytes per second.
pub(super) fn rate_bytes_per_sec(rate: u64, mss: u32, gain: u32, margin_percent: u32) -> u64 {
    let mut rate = rate as u128 * mss as u128;
    rate = (rate * gain as u128) >> BBR_SCALE;
    rate *= 1_000_000 / 100 * (100 - margin_percent.min(99)) as u128;
    (rate >> BW_SCALE).min(u64::MAX as u128) as u64
}

/// The sender's pacing rate from Linux's `sk_pacing_rate` (payload bytes per second), scaled
/// to wire bytes so that the spacing of segments is the kernel's.
pub(super) fn publish_pacing_rate(tcb: &mut Tcb, payload_bytes_per_s: u64) {
    let wire = tcb.wire_bytes as u128;
    let bps = payload_bytes_per_s as u128 * 8 * wire / tcb.mss_bytes.max(1) as u128;
    tcb.pacing_rate = Some(Rate::from_bps(bps.clamp(1, u64::MAX as u128) as u64));
}

impl Bbr {
    pub fn new(c: BbrConfig) -> Self {
        let cycle_gains = {
            let mut g = [BBR_UNIT; CYCLE_LEN as usize];
            g[0] = unit(c.probe_up_gain);
            g[1] = unit(c.probe_down_gain);
            g
        };
        Bbr {
            high_gain: unit(c.high_gain),
            drain_gain: unit(c.drain_gain),
            cwnd_gain_probe_bw: unit(c.cwnd_gain),
            cycle_gains,
            full_bw_thresh: unit(c.full_bw_thresh),
            extra_acked_gain: unit(c.extra_acked_gain),
            c,
            pacing_rate: 0,
            prandom: 0,
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: BbrMode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
        }
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// The model as `bbr_get_info` reports it, with the bandwidth in payload bits per second.
    pub fn state(&self, mss_bytes: u32) -> ModelState {
        let bytes_per_s = (self.bbr_bw() as u128 * mss_bytes as u128 * 1_000_000) >> BW_SCALE;
        ModelState {
            mode: self.mode.name(),
            bw: Rate::from_bps((bytes_per_s * 8).min(u64::MAX as u128) as u64),
            min_rtt: (self.min_rtt_us != u32::MAX)
                .then(|| Duration::from_micros(self.min_rtt_us as u64)),
            pacing_gain: self.pacing_gain as f64 / BBR_UNIT as f64,
            cwnd_gain: self.cwnd_gain as f64 / BBR_UNIT as f64,
        }
    }

    fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    fn bbr_bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec` with BBR's pacing margin.
    fn rate_bytes_per_sec(&self, tcb: &Tcb, rate: u64, gain: u32) -> u64 {
        rate_bytes_per_sec(rate, tcb.mss_bytes, gain, self.c.pacing_margin_percent)
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain × cwnd / srtt (1 ms before any RTT sample).
    fn init_pacing_rate_from_rtt(&mut self, tcb: &Tcb) {
        let rtt_us = match tcb.srtt {
            Some(srtt) => {
                self.has_seen_rtt = true;
                (srtt.as_nanos() / 1000).max(1)
            }
            None => 1000,
        };
        let bw = tcb.cwnd.floor() as u64 * BW_UNIT / rtt_us;
        self.pacing_rate = self.rate_bytes_per_sec(tcb, bw, self.high_gain);
    }

    /// `bbr_set_pacing_rate`: only up while Startup has not filled the pipe.
    fn set_pacing_rate(&mut self, tcb: &Tcb, bw: u64, gain: u32) {
        let rate = self.rate_bytes_per_sec(tcb, bw, gain);
        if !self.has_seen_rtt && tcb.srtt.is_some() {
            self.init_pacing_rate_from_rtt(tcb);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_min_tso_segs`: bursts of 2 above 1.2 Mbit/s.
    fn min_tso_segs(&self) -> u32 {
        if self.pacing_rate < 1_200_000 / 8 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal`: about 1 ms of data at the pacing rate, in segments.
    fn tso_segs_goal(&self, tcb: &Tcb) -> u32 {
        let bytes = (self.pacing_rate >> self.c.pacing_shift.min(63)).min(TSO_MAX_BYTES);
        let segs = ((bytes / tcb.mss_bytes.max(1) as u64) as u32).max(self.min_tso_segs());
        segs.min(0x7f)
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self, tcb: &Tcb) {
        let cwnd = tcb.cwnd.floor() as u32;
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw × min_rtt × gain), or the initial window without an RTT sample.
    fn bdp(&self, bw: u64, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        let w = bw as u128 * self.min_rtt_us as u128;
        ((w * gain as u128) >> BBR_SCALE)
            .div_ceil(BW_UNIT as u128)
            .min(u32::MAX as u128) as u32
    }

    /// `bbr_quantization_budget`: room for three bursts, an even cwnd, and more than the BDP in
    /// ProbeBW's probing phase.
    fn quantization_budget(&self, tcb: &Tcb, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.saturating_add(3 * self.tso_segs_goal(tcb));
        cwnd = (cwnd.saturating_add(1)) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`.
    fn inflight(&self, tcb: &Tcb, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(tcb, self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: what will still be in the network when the next paced
    /// segment may leave.
    fn packets_in_net_at_edt(&self, tcb: &Tcb, inflight_now: u32, now: Time) -> u32 {
        let interval_us = tcb.next_departure.max(now).saturating_since(now).as_nanos() / 1000;
        let interval_delivered = ((self.bbr_bw() as u128 * interval_us as u128) >> BW_SCALE) as u64;
        let mut at_edt = inflight_now as u64;
        if self.pacing_gain > BBR_UNIT {
            at_edt += self.tso_segs_goal(tcb) as u64;
        }
        at_edt.saturating_sub(interval_delivered) as u32
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = ((self.bbr_bw() as u128 * 100_000) / BW_UNIT as u128) as u64;
        let aggr = (self.extra_acked_gain as u64 * self.extra_acked() as u64) >> BBR_SCALE;
        aggr.min(max_aggr) as u32
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: packet conservation in the first round of
    /// Recovery, the saved cwnd restored when recovery ends. Returns the cwnd and whether
    /// conservation decides it.
    fn recover_or_restore(&mut self, tcb: &Tcb, rs: &RateSample, acked: u32) -> (u32, bool) {
        let state = tcb.ca_state;
        let prev = self.prev_ca_state;
        let mut cwnd = tcb.cwnd.floor() as u32;
        // An ACK for P packets releases at most 2P: the losses come off first.
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = tcb.delivered;
            cwnd = tcb.in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(tcb.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, tcb: &mut Tcb, rs: &RateSample, acked: u32, bw: u64, gain: u32) {
        let mut cwnd = tcb.cwnd.floor() as u32;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(tcb, rs, acked);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target = target.saturating_add(self.ack_aggregation_cwnd());
                target = self.quantization_budget(tcb, target);
                if self.full_bw_reached {
                    cwnd = cwnd.saturating_add(acked).min(target);
                } else if cwnd < target || tcb.delivered < TCP_INIT_CWND as u64 {
                    cwnd = cwnd.saturating_add(acked);
                }
                cwnd = cwnd.max(self.c.cwnd_min_target);
            }
        }
        if self.mode == BbrMode::ProbeRtt {
            cwnd = cwnd.min(self.c.cwnd_min_target);
        }
        tcb.cwnd = cwnd as f64;
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, tcb: &Tcb, rs: &RateSample, now: Time) -> bool {
        let is_full_length =
            us(tcb.delivered_mstamp).saturating_sub(self.cycle_mstamp) > self.min_rtt_us as u64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(tcb, rs.prior_in_flight, now);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(tcb, bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(tcb, bw, BBR_UNIT)
    }

    fn advance_cycle_phase(&mut self, tcb: &Tcb) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = us(tcb.delivered_mstamp);
    }

    /// `bbr_reset_probe_bw_mode`: ProbeBW at a random phase other than the draining one.
    fn reset_probe_bw_mode(&mut self, tcb: &Tcb) {
        self.mode = BbrMode::ProbeBw;
        // prandom_u32_max(bbr_cycle_rand = 7): 0..=6.
        let r = ((prandom_u32(&mut self.prandom) as u64 * 7) >> 32) as u8;
        self.cycle_idx = CYCLE_LEN - 1 - r;
        self.advance_cycle_phase(tcb);
    }

    fn reset_mode(&mut self, tcb: &Tcb) {
        if !self.full_bw_reached {
            self.mode = BbrMode::Startup;
        } else {
            self.reset_probe_bw_mode(tcb);
        }
    }

    fn reset_lt_bw_sampling_interval(&mut self, tcb: &Tcb) {
        self.lt_last_stamp = us(tcb.delivered_mstamp) / 1000;
        self.lt_last_delivered = tcb.delivered;
        self.lt_last_lost = tcb.lost;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self, tcb: &Tcb) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tcb);
    }

    /// `bbr_lt_bw_interval_done`: two intervals of consistent rate mean a policer.
    fn lt_bw_interval_done(&mut self, tcb: &Tcb, bw: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT as u64 <= (BBR_UNIT as u64 / 8) * self.lt_bw
                || self.rate_bytes_per_sec(tcb, diff, BBR_UNIT) <= 4000 / 8
            {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tcb);
    }

    /// `bbr_lt_bw_sampling`: the long-term rate over intervals of 4 to 16 rounds that end in a
    /// loss, with a loss rate of at least 50/256.
    fn lt_bw_sampling(&mut self, tcb: &Tcb, rs: &RateSample) {
        if !self.c.lt_bw {
            return;
        }
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= 48 {
                    self.reset_lt_bw_sampling(tcb);
                    self.reset_probe_bw_mode(tcb);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tcb);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(tcb);
            return;
        }
        if self.round_start {
            // The kernel keeps lt_rtt_cnt in 7 bits.
            self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & 0x7f;
        }
        if self.lt_rtt_cnt < 4 {
            return;
        }
        if self.lt_rtt_cnt > 4 * 4 {
            self.reset_lt_bw_sampling(tcb);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = tcb.lost.saturating_sub(self.lt_last_lost);
        let delivered = tcb.delivered.saturating_sub(self.lt_last_delivered);
        if delivered == 0 || (lost << BBR_SCALE) < 50 * delivered {
            return;
        }
        let t = (us(tcb.delivered_mstamp) / 1000) as i64 - self.lt_last_stamp as i64;
        if t < 1 {
            return;
        }
        if t as u64 >= u32::MAX as u64 / 1000 {
            self.reset_lt_bw_sampling(tcb);
            return;
        }
        let bw = delivered * BW_UNIT / (t as u64 * 1000);
        self.lt_bw_interval_done(tcb, bw);
    }

    /// `bbr_update_bw`: count rounds, and take the sample into the max filter unless it is
    /// application-limited and below the estimate.
    fn update_bw(&mut self, tcb: &Tcb, rs: &RateSample) {
        self.round_start = false;
        let (Some(delivered), Some(interval)) = (rs.delivered, rs.interval) else {
            return;
        };
        let interval_us = interval.as_nanos() / 1000;
        if interval_us == 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tcb.delivered;
            self.rtt_cnt = self.rtt_cnt.wrapping_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(tcb, rs);
        let bw = ((delivered as u128 * BW_UNIT as u128) / interval_us as u128).min(u32::MAX as u128)
            as u64;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(self.c.bw_rtts, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`: the most data acknowledged beyond bw × time in an epoch.
    fn update_ack_aggregation(&mut self, tcb: &Tcb, rs: &RateSample) {
        if self.extra_acked_gain == 0
            || rs.acked_sacked == 0
            || rs.delivered.is_none()
            || rs.interval.is_none_or(|i| i.as_nanos() / 1000 == 0)
        {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= self.c.extra_acked_win_rtts {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = us(tcb.delivered_mstamp).saturating_sub(self.ack_epoch_mstamp);
        let mut expected = ((self.bbr_bw() as u128 * epoch_us as u128) / BW_UNIT as u128) as u64;
        if self.ack_epoch_acked as u64 <= expected
            || self.ack_epoch_acked as u64 + rs.acked_sacked as u64 >= 1 << 20
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = us(tcb.delivered_mstamp);
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked as u64 - expected).min(tcb.cwnd.floor() as u64) as u32;
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        if extra > *slot {
            *slot = extra;
        }
    }

    /// `bbr_check_full_bw_reached`: three rounds without 25 % growth.
    fn check_full_bw_reached(&mut self, tcb: &mut Tcb, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = (self.full_bw * self.full_bw_thresh as u64) >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.c.full_bw_cnt;
        if self.full_bw_reached && self.mode == BbrMode::Startup {
            tcb.exit_reason_hint = Some(ExitReason::Detector("bbr-full-bw"));
        }
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, tcb: &mut Tcb, now: Time) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            tcb.ssthresh = self.inflight(tcb, self.max_bw(), BBR_UNIT) as f64;
        }
        if self.mode == BbrMode::Drain
            && self.packets_in_net_at_edt(tcb, tcb.in_flight, now)
                <= self.inflight(tcb, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tcb);
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, tcb: &mut Tcb, now: Time) {
        let jiffies = jiffies(now, self.c.hz);
        if !(self.probe_rtt_done_stamp != 0
            && (jiffies.wrapping_sub(self.probe_rtt_done_stamp) as i32) > 0)
        {
            return;
        }
        self.min_rtt_stamp = jiffies;
        tcb.cwnd = tcb.cwnd.max(self.prior_cwnd as f64);
        self.reset_mode(tcb);
    }

    /// `bbr_update_min_rtt`: the min-RTT filter and ProbeRTT.
    fn update_min_rtt(&mut self, tcb: &mut Tcb, rs: &RateSample, now: Time) {
        let jiffies = jiffies(now, self.c.hz);
        let win = self.c.min_rtt_win_s.saturating_mul(self.c.hz);
        let filter_expired =
            (jiffies.wrapping_sub(self.min_rtt_stamp.wrapping_add(win)) as i32) > 0;
        // is_ack_delayed is not modelled (always false): an expired filter takes any sample.
        if let Some(rtt) = rs.rtt {
            let rtt_us = (rtt.as_nanos() / 1000).min(u32::MAX as u64 - 1) as u32;
            if rtt_us <= self.min_rtt_us || filter_expired {
                self.min_rtt_us = rtt_us;
                self.min_rtt_stamp = jiffies;
            }
        }
        if self.c.probe_rtt_ms > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != BbrMode::ProbeRtt
        {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(tcb);
            self.probe_rtt_done_stamp = 0;
        }
        if self.mode == BbrMode::ProbeRtt {
            // Its own low-rate samples are marked application-limited.
            tcb.app_limited = Some(tcb.delivered + tcb.in_flight as u64);
            if self.probe_rtt_done_stamp == 0 && tcb.in_flight <= self.c.cwnd_min_target {
                let j = ms_to_jiffies(self.c.probe_rtt_ms, self.c.hz);
                self.probe_rtt_done_stamp = jiffies.wrapping_add(j).max(1);
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

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (self.high_gain, self.high_gain),
            BbrMode::Drain => (self.drain_gain, self.high_gain),
            BbrMode::ProbeBw => {
                let pacing = if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    self.cycle_gains[self.cycle_idx as usize]
                };
                (pacing, self.cwnd_gain_probe_bw)
            }
            BbrMode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }
}

impl CongestionControl for Bbr {
    fn init(&mut self, tcb: &mut Tcb, now: Time) {
        self.prior_cwnd = 0;
        tcb.ssthresh = f64::INFINITY;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = 0;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        self.min_rtt_us = tcb.min_rtt.map_or(u32::MAX, |m| {
            (m.as_nanos() / 1000).min(u32::MAX as u64 - 1) as u32
        });
        self.min_rtt_stamp = jiffies(now, self.c.hz);
        self.bw.reset(self.rtt_cnt, 0);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tcb);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(tcb);
        self.mode = BbrMode::Startup;
        self.ack_epoch_mstamp = us(now);
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
        publish_pacing_rate(tcb, self.pacing_rate);
    }

    /// `bbr_ssthresh`: a loss saves cwnd for the end of recovery; ssthresh is unchanged.
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        self.save_cwnd(tcb);
        tcb.ssthresh
    }

    fn cong_avoid(&mut self, _tcb: &mut Tcb, _ack: &super::Ack, _now: Time) {}

    /// `bbr_set_state`: a timeout ends the round and starts over the full-pipe estimate.
    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, _now: Time) {
        if state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            let rs = RateSample {
                losses: 1,
                ..RateSample::default()
            };
            self.lt_bw_sampling(tcb, &rs);
        }
    }

    /// `bbr_cwnd_event`: restarting from idle while application-limited.
    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, now: Time) {
        if event == CwndEvent::TxStart && tcb.app_limited.is_some() {
            self.idle_restart = true;
            self.ack_epoch_mstamp = us(now);
            self.ack_epoch_acked = 0;
            match self.mode {
                BbrMode::ProbeBw => {
                    self.set_pacing_rate(tcb, self.bbr_bw(), BBR_UNIT);
                    publish_pacing_rate(tcb, self.pacing_rate);
                }
                BbrMode::ProbeRtt => self.check_probe_rtt_done(tcb, now),
                _ => {}
            }
        }
    }

    /// `bbr_undo_cwnd`: the reduction was spurious; Startup's full-pipe count starts over.
    fn undo_cwnd(&mut self, tcb: &mut Tcb) -> f64 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(tcb);
        tcb.cwnd
    }

    /// `bbr_main`.
    fn cong_control(&mut self, tcb: &mut Tcb, rs: &RateSample, now: Time) -> bool {
        // bbr_update_model
        self.update_bw(tcb, rs);
        self.update_ack_aggregation(tcb, rs);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(tcb, rs, now) {
            self.advance_cycle_phase(tcb);
        }
        self.check_full_bw_reached(tcb, rs);
        self.check_drain(tcb, now);
        self.update_min_rtt(tcb, rs, now);
        self.update_gains();

        let bw = self.bbr_bw();
        self.set_pacing_rate(tcb, bw, self.pacing_gain);
        publish_pacing_rate(tcb, self.pacing_rate);
        self.set_cwnd(tcb, rs, rs.acked_sacked, bw, self.cwnd_gain);
        true
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// Until the pipe is full (`bbr_full_bw_reached`), as the kernel world reads Linux's bbr
    /// (`bbr_check_drain` makes ssthresh finite): a PROBE_RTT that a 10-second-old min_rtt
    /// forces during a long Startup (`bbr_update_min_rtt`) returns to Startup
    /// (`bbr_reset_mode`), and does not end it.
    fn in_startup(&self, _tcb: &Tcb) -> bool {
        !self.full_bw_reached
    }

    fn seed(&mut self, mut rng: Rng) {
        self.prandom = rng.next_u64();
    }

    fn model_state(&self, tcb: &Tcb) -> Option<ModelState> {
        Some(self.state(tcb.mss_bytes))
    }
}

#[cfg(test)]
mod tests;
