//! SUSS, "Speeding Up Slow Start" (Arghavani, Zhang, Eyers, Arghavani, SIGCOMM 2024), as the
//! authors' Linux implements it on CUBIC (SUSSdeveloper/SUSS, `sourceCode/linux-6.8/suss`:
//! `tcp_cubic.c` `suss_measurements`, `suss_speedup`, `suss_cap`, `hystart_update`,
//! `cubictcp_acked`; `tcp_output.c` `tcp_update_skb_after_send`; `tcp_input.c`
//! `tcp_init_cwnd_reduction`, `tcp_enter_loss`, `tcp_update_pacing_rate`).
//!
//! Slow start doubles cwnd per round. SUSS times the ACK train of the segments each round's
//! ACK clock released (the *blue* segments: the first `IW · 2^(r-1)` of round r); while that
//! train is short against minRTT and a prediction says the next one will still fit in minRTT,
//! the round's window becomes 4 times the previous round's instead of 2 times. The extra
//! (*red*) segments are paced over the part of the RTT the blue ones leave, with a guard gap at
//! each end. The growth factor is 4 or 2, nothing between, and once a round says no SUSS never
//! jumps again.
//!
//! It runs with Linux's HyStart as the authors' CUBIC does: HyStart's delay exit unchanged,
//! HyStart's ACK-train exit replaced by SUSS's own (the train, measured on blue ACKs, scaled by
//! 2^jumps; the exit when cwnd passes the window the train predicts). A flow SUSS turns off
//! (minRTT at most 10 ms, or a long first train) keeps HyStart's own ACK-train exit.
//!
//! Hooks, in Linux's order for one ACK: `pkts_acked` (`cubictcp_acked`: minRTT, the round of its
//! last decrease, `hystart_update` with SUSS's exit), `before_cong_avoid` (the start of
//! `cubictcp_cong_avoid`: SUSS's measurement and decision), `on_ack` (`tcp_slow_start`), then
//! the sender's transmissions, each followed by `on_transmit` (`tcp_update_skb_after_send`:
//! with `hooks = "kernel"`, cwnd += 2 and the start of pacing). A window reduction runs
//! `before_ssthresh` (`tcp_init_cwnd_reduction`), a timeout `cwnd_event(Loss)`
//! (`tcp_enter_loss`).
//!
//! Times are microseconds as in the kernel (`tcp_mstamp`, `sample->rtt_us`), the pacing start in
//! nanoseconds (`tcp_clock_cache`); integer arithmetic as the authors' code has it, so the
//! decision reproduces their logs to the unit (tests below). docs/algorithms/suss.md lists every
//! departure from their kernel.

use super::counting::NewlyDelivered;
use super::hystart::RoundStart;
use super::params::{closed, param, AlgorithmConfig, Allowed, Param};
use super::slow_start::grow_to_ssthresh;
use super::{
    rate_of_sk_pacing_rate, Ack, AckEvent, AckSample, CaState, CwndEvent, ExitReason, SlowStart,
    Tcb,
};
use crate::tcp::linux_sk_pacing_rate;
use crate::time::{Duration, Time};
use serde::{Deserialize, Serialize};

/// How the extra segments of a jump are released: what the authors' kernel does outside
/// `tcp_cubic.c`, or what a `tcp_congestion_ops` (the eBPF port) can do.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hooks {
    /// The authors' `tcp_update_skb_after_send`: after each segment sent that fills the window,
    /// cwnd += 2 until the round's target; the first such send turns pacing on at the planned
    /// rate, and the next segment waits for the planned start (`tcp_wstamp_ns`).
    Kernel,
    /// No per-segment hook, no write to `tcp_wstamp_ns`: at the decision cwnd becomes the
    /// round's target, and pacing starts at once at the rate that spreads the extra segments
    /// over the leading guard gap and the pacing period; red ACKs leave cwnd as it is.
    StructOps,
}

/// Whether the receiver's advertised window limits the sender.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReceiveWindow {
    /// As TCP requires.
    Honour,
    /// The authors' 6.8 `cubictcp_cong_avoid`: snd_wnd is raised to at least
    /// `IW << (round + jumps - 1)` segments while SUSS may still jump, to `IW` otherwise.
    Override,
}

/// SUSS's parameters (module parameters and constants of the authors' `tcp_cubic.c`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SussConfig {
    pub hooks: Hooks,
    /// `suss_max`: a round r >= 3 may grow x4 only while r < suss_max + 2.
    pub suss_max: u32,
    /// The initial window of the blue-segment bookkeeping (`10` / `TCP_INIT_CWND` in the code,
    /// whatever the connection's initial window).
    pub iw: u32,
    /// `hystart_low_window`, segments: HyStart's tests, SUSS's exit among them, from this cwnd.
    pub low_window: u32,
    /// `"any-cwnd"`: the 6.8 code (and Linux 6.13 and later) starts HyStart rounds at any cwnd;
    /// `"low-window"`: the evaluated 5.19.10 calls `hystart_update` only from `low_window` on.
    pub round_start: RoundStart,
    pub receive_window: ReceiveWindow,
}

impl Default for SussConfig {
    fn default() -> Self {
        SussConfig {
            hooks: Hooks::Kernel,
            suss_max: 3,
            iw: 10,
            low_window: 16,
            round_start: RoundStart::AnyCwnd,
            receive_window: ReceiveWindow::Honour,
        }
    }
}

impl AlgorithmConfig for SussConfig {
    const PARAMS: &'static [Param] = &[
        param("hooks", "", Allowed::Any, "\"kernel\": the extra segments released as the authors' tcp_update_skb_after_send does (cwnd += 2 per segment sent, pacing from the planned start); \"struct-ops\": what a tcp_congestion_ops can do (cwnd set to the round's target at once, pacing at once over the guard gap and the pacing period), as the eBPF port"),
        param("suss_max", "rounds", closed(0.0, 16.0), "suss_max: rounds r >= 3 may grow x4 only while r < suss_max + 2"),
        param("iw", "segments", closed(1.0, 100.0), "initial window of the blue-segment bookkeeping (10, hard-coded in the authors' code)"),
        param("low_window", "segments", closed(0.0, 1e6), "hystart_low_window: HyStart's exits, SUSS's among them, run from this cwnd on"),
        param("round_start", "", Allowed::Any, "\"any-cwnd\": HyStart rounds at any cwnd (the 6.8 code); \"low-window\": hystart_update only from low_window on (the evaluated 5.19.10)"),
        param("receive_window", "", Allowed::Any, "\"honour\": the receiver's window limits the sender; \"override\": the 6.8 code's floor on snd_wnd, IW << (round + jumps - 1) segments while SUSS may jump (a flow-control violation)"),
    ];
}

// ---- the authors' constants ------------------------------------------------------------------

/// `delay_min > 10000`: SUSS needs a minRTT above 10 ms (µs).
const MIN_RTT_US: u64 = 10_000;
/// `SUSS_SCALE`: mu in fixed point.
const SUSS_SCALE: u32 = 10;
/// `BW_SCALE`: the pacing-rate computation's fixed point.
const BW_SCALE: u32 = 24;
/// `tcp_enter_loss`: a timeout with cwnd below this turns SUSS off.
const RTO_OFF_CWND: u64 = 40;
/// Per segment sent that fills the window (`tcp_update_skb_after_send`).
const BUMP: f64 = 2.0;
/// `hystart_ack_delta_us`, `HYSTART_MIN_SAMPLES`, `HYSTART_DELAY_MIN/MAX` (µs).
const ACK_DELTA_US: u32 = 2000;
const MIN_SAMPLES: u32 = 8;
const DELAY_THRESH_MIN_US: u32 = 4000;
const DELAY_THRESH_MAX_US: u32 = 16000;
/// `GSO_LEGACY_MAX_SIZE` for `hystart_ack_delay` (as `cc::hystart`).
const GSO_MAX_BYTES: u64 = 65_536;
/// The blue count doubles per round: shifts stop at 2^16 (a round number the 5-bit kernel
/// field would have wrapped long before), so nothing overflows.
const MAX_SHIFT: u32 = 16;

/// `suss_state` (`tcp_sock`).
pub mod state {
    /// Measuring, ACK-clocked.
    pub const CLOCKED: u8 = 1;
    /// A jump planned: red segments paced.
    pub const PACING: u8 = 2;
    /// Left slow start by SUSS's ACK-train exit (cwnd above the cap).
    pub const CAP_EXIT: u8 = 3;
    /// Left slow start by HyStart's delay exit.
    pub const DELAY_EXIT: u8 = 4;
    /// A window reduction (loss, ECN) happened.
    pub const REDUCED: u8 = 9;
    /// Off: minRTT at most 10 ms, a long first train, or a timeout with cwnd < 40.
    pub const OFF: u8 = 10;
}

const TRAIN: &str = "suss-train";
const HYSTART_TRAIN: &str = "hystart-train";
const HYSTART_DELAY: &str = "hystart-delay";

fn us(t: Time) -> u32 {
    (t.as_nanos() / 1000) as u32
}

// ---- the decision arithmetic (pure, as the kernel computes it) ------------------------------

/// The blue ACK train's duration, `delta_t_bat` (µs): the mean spacing of the `blue_cnt`
/// segments acknowledged since the round's first ACK, over `elapsed` µs, times the
/// `blue_pkt / 2` segments of the measured train. `None` when no segment was counted (a single
/// ACK both started the round and passed the blue tail), where the kernel divides by zero.
pub fn delta_t_bat(blue_pkt: u64, elapsed_us: u32, blue_cnt: u32) -> Option<u64> {
    (blue_cnt > 0).then(|| blue_pkt * elapsed_us as u64 / ((blue_cnt as u64) << 1))
}

/// The next round's predicted train, `2 mu dT` with `mu = dT / (2 dT_prev)` in 2^-10 (µs), for
/// round `round` >= 3 with this round's and the previous round's `delta_t_bat`. `None` when
/// the previous one is 0 (the kernel divides by zero).
pub fn predicted_train(round: u32, dtb: u64, prev_dtb: u64) -> Option<u64> {
    let d_t = dtb << (round - 2).min(MAX_SHIFT);
    let d_prev = prev_dtb << (round - 3).min(MAX_SHIFT);
    if d_prev == 0 {
        return None;
    }
    let mu = (d_t << SUSS_SCALE) / (d_prev << 1);
    Some((mu * d_t) >> (SUSS_SCALE - 1))
}

/// Condition 2 (no queue building): `(k+1) curr_rtt <= (k+1) minRTT + k minRTT / 8` with k the
/// rounds since minRTT last decreased; `curr_rtt` is HyStart's round minimum (`u32::MAX`
/// before its first sample, which fails).
pub fn no_queue(k: u32, curr_rtt: u32, delay_min: u32) -> bool {
    let k = k as u64;
    (k + 1) * curr_rtt as u64 <= (k + 1) * delay_min as u64 + ((k * delay_min as u64) >> 3)
}

/// A round's plan once it may jump (`suss_measurements` after `suss_speedup` said yes).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Extra segments this round, `blue (2^(r-1) - 1)`.
    pub red_pkt: u64,
    /// The previous round's red segments acknowledged this round, `blue/2 (2^(r-2) - 1)`.
    pub red_ack: u64,
    /// `suss_limit`: cwnd at the end of the round (4 x the previous round's window).
    pub limit: u64,
    /// The pacing period, `minRTT - minRTT >> (r-1)` (µs).
    pub duration_us: u64,
    /// `suss_rate`, bytes per second (`sk_pacing_rate`).
    pub rate: u64,
    /// The blue slot, `minRTT >> (r-1)` (µs).
    pub slot_us: u64,
    /// The guard gap before the first red segment, `(slot - dtb) / 2` (µs), if the blue train
    /// fits its slot (else no jump this round).
    pub guard_us: Option<u64>,
}

/// `red_pkt mss / period` in bytes per second, through `BW_SCALE` as the kernel rounds it.
pub fn paced_rate(red_pkt: u64, mss: u64, period_us: u64) -> u64 {
    if period_us == 0 {
        return 0;
    }
    let rate = ((red_pkt * mss) << BW_SCALE) / period_us;
    (rate * 1_000_000) >> BW_SCALE
}

/// The plan of round `round` (>= 2) whose blue train lasted `dtb` µs, with `cwnd_acked` =
/// cwnd + the segments this ACK acknowledged (slow start's cwnd after it).
pub fn plan(
    round: u32,
    blue_pkt: u64,
    dtb: u64,
    delay_min: u32,
    cwnd_acked: u64,
    mss: u64,
) -> Plan {
    let blue_ack = blue_pkt >> 1;
    let r1 = (round - 1).min(MAX_SHIFT);
    let r2 = (round - 2).min(MAX_SHIFT);
    let red_pkt = (blue_pkt << r1) - blue_pkt;
    let red_ack = (blue_ack << r2) - blue_ack;
    let delay_min = delay_min as u64;
    let duration_us = delay_min - (delay_min >> r1);
    let slot_us = delay_min - duration_us;
    Plan {
        red_pkt,
        red_ack,
        limit: cwnd_acked + red_pkt - red_ack,
        duration_us,
        rate: paced_rate(red_pkt, mss, duration_us),
        slot_us,
        guard_us: (slot_us > dtb).then(|| (slot_us - dtb) >> 1),
    }
}

/// `suss_cap`: the window SUSS's ACK-train exit waits for once the blue train, scaled by
/// 2^jumps, passed half of minRTT: cwnd plus the blue segments acknowledged so far times
/// 2^jumps - 1.
pub fn cap(cwnd: u64, blue_cnt: u64, jumps: u32) -> u64 {
    cwnd + blue_cnt * ((1u64 << jumps.min(MAX_SHIFT)) - 1)
}

// ---- the algorithm ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
pub struct Suss {
    p: SussConfig,
    delivered: NewlyDelivered,
    /// The segments the current ACK newly delivered (Linux `acked`), from `before_cong_avoid`.
    acked: u32,
    /// `hooks = "struct-ops"`: this ACK is red during a jump and does not grow cwnd.
    hold: bool,
    /// When the last ACK was processed: a window reduction at that time comes from an ACK
    /// (`tcp_init_cwnd_reduction`), one at another time from a timer.
    last_ack_at: Option<Time>,

    // HyStart (struct bictcp)
    found: bool,
    /// `delay_min`, µs (0: none).
    delay_min: u32,
    round_start: u32,
    last_ack: u32,
    /// `end_seq`: high_tx when the HyStart round began.
    end_seq: u32,
    curr_rtt: u32,
    sample_cnt: u32,

    // SUSS (struct bictcp and tcp_sock)
    state: u8,
    /// `suss_head_seq`: high_tx at the start of the current round.
    head: u32,
    /// One past `suss_tail_seq`: the blue tail is passed when the cumulative ACK reaches it.
    tail: u32,
    round_no: u32,
    suss_round_start: u32,
    gf: bool,
    is_blue: u8,
    flag: bool,
    cap: u64,
    r_minupdate: u32,
    blue_cnt: u32,
    prev_dtb: u64,
    jumps: u32,
    limit: u64,
    /// `suss_rate` (bytes/s), and what pacing runs at (the same, or the struct-ops rate).
    rate: u64,
    /// `suss_pacing_start_ns`.
    pacing_start: Time,
    /// `sk_pacing_status` is SK_PACING_NEEDED (SUSS paces), at `paced_rate` bytes/s.
    pacing: bool,
    paced_rate: u64,
}

impl Suss {
    pub fn new(p: SussConfig) -> Self {
        Suss {
            p,
            delivered: NewlyDelivered::default(),
            acked: 0,
            hold: false,
            last_ack_at: None,
            found: false,
            delay_min: 0,
            round_start: 0,
            last_ack: 0,
            end_seq: 0,
            curr_rtt: u32::MAX,
            sample_cnt: 0,
            state: state::CLOCKED,
            head: 0,
            tail: 0,
            round_no: 1,
            suss_round_start: 0,
            gf: true,
            is_blue: 0,
            flag: false,
            cap: 0,
            r_minupdate: 0,
            blue_cnt: 0,
            prev_dtb: 0,
            jumps: 0,
            limit: 0,
            rate: 0,
            pacing_start: Time::ZERO,
            pacing: false,
            paced_rate: 0,
        }
    }

    /// `suss_state`.
    pub fn state(&self) -> u8 {
        self.state
    }

    /// Successful jumps so far (`suss_num_of_jump`).
    pub fn jumps(&self) -> u32 {
        self.jumps
    }

    /// The last round's cwnd target (`suss_limit`) and pacing rate (`suss_rate`, bytes/s).
    pub fn target(&self) -> (u64, u64) {
        (self.limit, self.rate)
    }

    /// `bictcp_hystart_reset`.
    fn hystart_round(&mut self, tcb: &Tcb, now_us: u32) {
        self.round_start = now_us;
        self.last_ack = now_us;
        self.end_seq = tcb.high_tx;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    fn pacing_on(&mut self, tcb: &mut Tcb, rate: u64) {
        self.pacing = true;
        self.paced_rate = rate.max(1);
        tcb.pacing_rate = Some(rate_of_sk_pacing_rate(self.paced_rate, tcb));
    }

    /// `sk_pacing_status` back to SK_PACING_NONE.
    fn pacing_off(&mut self, tcb: &mut Tcb) {
        if self.pacing {
            self.pacing = false;
            tcb.pacing_rate = None;
        }
    }

    /// `sk_pacing_rate`, bytes/s: SUSS's while it paces (Linux's update is suppressed in state
    /// 2, and nothing else paces a SUSS flow), Linux's own otherwise.
    fn sk_pacing_rate(&self, tcb: &Tcb) -> u64 {
        if self.pacing {
            self.paced_rate
        } else {
            linux_sk_pacing_rate(tcb)
        }
    }

    /// `hystart_ack_delay`, µs.
    fn ack_delay(&self, tcb: &Tcb) -> u64 {
        match self.sk_pacing_rate(tcb) {
            0 => 0,
            rate => (GSO_MAX_BYTES * 4 * 1_000_000 / rate).min(1000),
        }
    }

    /// An exit: ssthresh = cwnd, after cwnd = packets in flight if SUSS jumped more than once
    /// (the window may be far ahead of what was sent).
    fn exit(&mut self, tcb: &mut Tcb, cut: bool, reason: &'static str) {
        self.found = true;
        if cut && self.jumps > 1 {
            tcb.cwnd = tcb.in_flight.max(1) as f64;
        }
        tcb.ssthresh = tcb.snd_cwnd() as f64;
        tcb.exit_reason_hint = Some(ExitReason::Detector(reason));
    }

    /// `suss_cap`: SUSS's ACK-train exit, and the cap it waits for.
    fn suss_cap(&mut self, tcb: &mut Tcb, now_us: u32) {
        if self.flag && tcb.snd_cwnd() > self.cap {
            self.state = state::CAP_EXIT;
            self.exit(tcb, true, TRAIN);
            return;
        }
        if !self.flag
            && self.state < state::CAP_EXIT
            && self.is_blue != 0
            && now_us.wrapping_sub(self.last_ack) as i32 <= ACK_DELTA_US as i32
        {
            self.last_ack = now_us;
            let threshold = (self.delay_min as u64 + self.ack_delay(tcb)) >> 1;
            let train = (now_us.wrapping_sub(self.round_start) as u64) << self.jumps.min(MAX_SHIFT);
            if train > threshold {
                self.flag = true;
                self.cap = cap(tcb.snd_cwnd(), self.blue_cnt as u64, self.jumps);
            }
        }
    }

    /// `hystart_update` as the authors changed it.
    fn hystart_update(&mut self, tcb: &mut Tcb, delay: u32, now_us: u32) {
        if tcb.snd_una > self.end_seq {
            self.hystart_round(tcb, now_us);
        }
        if tcb.snd_cwnd() < self.p.low_window as u64 {
            return;
        }
        // The ACK train: SUSS's exit, or HyStart's own for a flow SUSS turned off.
        self.suss_cap(tcb, now_us);
        if self.state == state::OFF
            && now_us.wrapping_sub(self.last_ack) as i32 <= ACK_DELTA_US as i32
        {
            self.last_ack = now_us;
            let mut threshold = self.delay_min as u64 + self.ack_delay(tcb);
            if !self.pacing {
                threshold >>= 1;
            }
            if now_us.wrapping_sub(self.round_start) as i32 as i64 > threshold as i64 {
                self.exit(tcb, false, HYSTART_TRAIN);
            }
        }
        // The delay increase, unchanged but for SUSS's state and cut.
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = (self.delay_min >> 3).clamp(DELAY_THRESH_MIN_US, DELAY_THRESH_MAX_US);
            if self.curr_rtt as u64 > self.delay_min as u64 + thresh as u64 {
                let cut = self.state < state::REDUCED;
                if cut {
                    self.state = state::DELAY_EXIT;
                }
                self.exit(tcb, cut, HYSTART_DELAY);
            }
        }
    }

    /// `suss_speedup`: whether round `round_no` may jump, with its `delta_t_bat`.
    fn speedup(&mut self, dtb: u64) -> bool {
        if self.round_no == 2 {
            if self.delay_min as u64 > MIN_RTT_US && dtb < (self.delay_min >> 2) as u64 {
                return true;
            }
            self.state = state::OFF;
            return false;
        }
        let Some(pred) = predicted_train(self.round_no, dtb, self.prev_dtb) else {
            return false;
        };
        pred <= self.delay_min as u64
            && self.round_no < self.p.suss_max + 2
            && no_queue(
                self.round_no.saturating_sub(self.r_minupdate),
                self.curr_rtt,
                self.delay_min,
            )
    }

    /// `suss_measurements`: rounds, the blue train, the decision at its tail, red ACKs.
    fn measure(&mut self, tcb: &mut Tcb, ack_seq: u32, acked: u32, now: Time) {
        let now_us = us(now);
        if self.is_blue == 2 {
            self.is_blue = 0;
        }
        if ack_seq > self.head {
            self.is_blue = 1;
            self.blue_cnt = 0;
            self.round_no += 1;
            self.suss_round_start = now_us;
            self.head = tcb.high_tx;
            self.pacing_off(tcb);
            self.state = state::CLOCKED;
        }
        if ack_seq >= self.tail {
            self.is_blue = 2;
            let elapsed = now_us.wrapping_sub(self.suss_round_start);
            let round = self.round_no.max(2);
            let blue_pkt = (self.p.iw as u64) << (round - 1).min(MAX_SHIFT);
            self.tail = self
                .head
                .saturating_add(blue_pkt.min(u32::MAX as u64) as u32);
            let dtb = delta_t_bat(blue_pkt, elapsed, self.blue_cnt);
            if self.gf {
                self.gf = match dtb {
                    Some(d) => self.speedup(d),
                    None => false,
                };
            }
            if let (true, Some(dtb)) = (self.gf, dtb) {
                self.prev_dtb = dtb;
                let cwnd_acked = tcb.snd_cwnd() + acked as u64;
                let plan = plan(
                    round,
                    blue_pkt,
                    dtb,
                    self.delay_min,
                    cwnd_acked,
                    tcb.mss_bytes as u64,
                );
                self.limit = plan.limit;
                self.rate = plan.rate;
                match plan.guard_us {
                    Some(guard) if plan.duration_us > 0 => {
                        self.state = state::PACING;
                        self.jumps += 1;
                        self.pacing_start = now + Duration::from_micros(guard);
                        if self.p.hooks == Hooks::StructOps {
                            // The target at once (this ACK's slow start adds `acked`), the red
                            // segments spread over the guard gap and the pacing period.
                            tcb.cwnd = tcb.cwnd.max((plan.limit - acked as u64) as f64);
                            let rate = paced_rate(
                                plan.red_pkt,
                                tcb.mss_bytes as u64,
                                plan.duration_us + guard,
                            );
                            self.pacing_on(tcb, rate);
                        }
                    }
                    _ => self.state = state::CLOCKED,
                }
            }
        }
        if self.is_blue != 0 {
            self.blue_cnt = self.blue_cnt.saturating_add(acked);
        }
        if self.is_blue == 0 && self.state == state::PACING {
            match self.p.hooks {
                // Red ACKs clock out segments without growing cwnd: slow start adds it back.
                Hooks::Kernel => tcb.cwnd = (tcb.cwnd - acked as f64).max(1.0),
                Hooks::StructOps => self.hold = true,
            }
        }
    }

    /// `tcp_init_cwnd_reduction`'s SUSS part: the un-sent part of the window is dropped and SUSS
    /// ends.
    fn reduce(&mut self, tcb: &mut Tcb) {
        if self.state < state::REDUCED {
            if self.state < state::CAP_EXIT {
                tcb.cwnd = tcb.in_flight.max(1) as f64;
            }
            self.state = state::REDUCED;
            self.pacing_off(tcb);
        }
    }
}

impl SlowStart for Suss {
    /// `cubictcp_init`.
    fn init(&mut self, tcb: &mut Tcb, now: Time) {
        let p = self.p.clone();
        *self = Suss::new(p);
        let now_us = us(now);
        self.hystart_round(tcb, now_us);
        self.head = tcb.high_tx;
        self.tail = tcb.high_tx + self.p.iw;
        // A socket already paced is not SUSS's (cubictcp_init: sk_pacing_status != NONE).
        if tcb.pacing_rate.is_some() {
            self.state = state::OFF;
        }
    }

    /// `tcp_slow_start`: + the segments acknowledged, up to ssthresh.
    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) -> u32 {
        let acked = self.acked.min(ack.acked);
        if std::mem::take(&mut self.hold) {
            return 0;
        }
        grow_to_ssthresh(tcb, acked, acked)
    }

    /// `cubictcp_acked`.
    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.delivered.record(tcb, sample, now);
        self.last_ack_at = Some(now);
        let Some(rtt) = sample.rtt else {
            return;
        };
        let delay = ((rtt.as_nanos() / 1000).min(i32::MAX as u64) as u32).max(1);
        if self.delay_min == 0 || delay < self.delay_min {
            self.delay_min = delay;
            self.r_minupdate = self.round_no;
        }
        if self.found || tcb.snd_cwnd() >= tcb.snd_ssthresh() {
            return;
        }
        if self.p.round_start == RoundStart::LowWindow && tcb.snd_cwnd() < self.p.low_window as u64
        {
            return;
        }
        self.hystart_update(tcb, delay, us(now));
    }

    /// The start of `cubictcp_cong_avoid`.
    fn before_cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        self.acked = self.delivered.take(tcb, now).min(ack.acked);
        self.hold = false;
        if (state::CAP_EXIT..state::OFF).contains(&self.state) {
            self.pacing_off(tcb);
        }
        if self.state < state::CAP_EXIT && !self.flag {
            self.measure(tcb, ack.ack_seq, self.acked, now);
        }
        if self.p.receive_window == ReceiveWindow::Override {
            let x = if self.state < state::CAP_EXIT && self.round_no < self.p.suss_max + self.jumps
            {
                self.round_no + self.jumps - 1
            } else {
                0
            };
            let floor = (self.p.iw as u64) << x.min(MAX_SHIFT);
            tcb.rwnd = tcb.rwnd.max(floor.min(u32::MAX as u64) as u32);
        }
    }

    fn in_ack_event(&mut self, _tcb: &mut Tcb, _event: AckEvent, now: Time) {
        self.last_ack_at = Some(now);
    }

    /// `tcp_update_skb_after_send` (`hooks = "kernel"`).
    fn on_transmit(&mut self, tcb: &mut Tcb, _now: Time) {
        if self.p.hooks != Hooks::Kernel || self.state != state::PACING {
            return;
        }
        let cwnd = tcb.snd_cwnd();
        if cwnd < self.limit && cwnd <= tcb.in_flight as u64 {
            tcb.cwnd = cwnd as f64 + BUMP;
            if !self.pacing {
                self.pacing_on(tcb, self.rate);
                tcb.next_departure = tcb.next_departure.max(self.pacing_start);
            }
        }
    }

    /// `tcp_init_cwnd_reduction` (a loss, an ECN echo) when it comes from an ACK; a reduction
    /// from a timer is a timeout's (`cwnd_event`) or RACK's reordering timer's (`set_state`).
    fn before_ssthresh(&mut self, tcb: &mut Tcb, now: Time) {
        if self.last_ack_at == Some(now) {
            self.reduce(tcb);
        }
    }

    fn set_state(&mut self, tcb: &mut Tcb, new: CaState, now: Time) {
        match new {
            // A reduction that did not come from an ACK (RACK's reordering timer): SUSS's part
            // of tcp_init_cwnd_reduction, after the controller's ssthresh.
            CaState::Recovery | CaState::Cwr => self.reduce(tcb),
            // cubictcp_state: bictcp_reset and bictcp_hystart_reset (SUSS's own fields stay).
            CaState::Loss => {
                self.found = false;
                self.delay_min = 0;
                self.hystart_round(tcb, us(now));
            }
            _ => {}
        }
    }

    /// `tcp_enter_loss`: a timeout with cwnd < 40 turns SUSS off; one with a larger window in
    /// the growth states ends it (the kernel leaves those states as they were).
    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, _now: Time) {
        if event != CwndEvent::Loss || self.state >= state::OFF {
            return;
        }
        if tcb.snd_cwnd() < RTO_OFF_CWND {
            self.state = state::OFF;
        } else if self.state < state::CAP_EXIT {
            self.state = state::REDUCED;
        }
        self.pacing_off(tcb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::registry;
    use crate::cc::testing::Driver;

    /// The authors' log (usageGuide/example/raw.suss1, flow 143): delay_min 49 986 µs,
    /// mss 1448, one segment per ACK.
    const LOG_MIN_RTT: u32 = 49_986;
    const LOG_MSS: u64 = 1448;

    /// Round 2: the IW's train, elapsed 2176 µs over 9 segments: dtb = 20 x 2176 / 18 = 2417.
    /// 49 986 > 10 000 and 2417 < 49 986 / 4 = 12 496: jump. red 20, red_ack 0, cwnd + acked
    /// = 19 + 1: limit 40; pacing period 49 986 - 24 993 = 24 993 µs; rate ((20 x 1448) << 24
    /// / 24 993 = 19 440 169) x 10^6 >> 24 = 1 158 724 B/s; guard (24 993 - 2417) / 2 = 11 288
    /// µs = 11 288 000 ns. As the log.
    #[test]
    fn round_two_plans_what_the_authors_log_shows() {
        let dtb = delta_t_bat(20, 2176, 9).unwrap();
        assert_eq!(dtb, 2417);
        assert!(dtb < (LOG_MIN_RTT >> 2) as u64);
        let p = plan(2, 20, dtb, LOG_MIN_RTT, 19 + 1, LOG_MSS);
        assert_eq!(
            p,
            Plan {
                red_pkt: 20,
                red_ack: 0,
                limit: 40,
                duration_us: 24_993,
                rate: 1_158_724,
                slot_us: 24_993,
                guard_us: Some(11_288),
            }
        );
        assert_eq!(p.guard_us.unwrap() * 1000, 11_288_000);
    }

    /// Round 3: elapsed 4559 µs over 19: dtb = 40 x 4559 / 38 = 4798. dT = 9596, dT_prev =
    /// 2417, mu = (9596 << 10) / 4834 = 2032, pred = 2032 x 9596 >> 9 = 38 084 <= 49 986: jump
    /// (3 < suss_max + 2). red 120, red_ack 20, cwnd + acked = 59 + 1: limit 160; period
    /// 49 986 - 12 496 = 37 490 µs; rate 4 634 835 B/s; guard (12 496 - 4798) / 2 = 3849 µs.
    #[test]
    fn round_three_plans_what_the_authors_log_shows() {
        let dtb = delta_t_bat(40, 4559, 19).unwrap();
        assert_eq!(dtb, 4798);
        assert_eq!(predicted_train(3, dtb, 2417), Some(38_084));
        let p = plan(3, 40, dtb, LOG_MIN_RTT, 59 + 1, LOG_MSS);
        assert_eq!(
            (p.red_pkt, p.red_ack, p.limit, p.duration_us, p.rate),
            (120, 20, 160, 37_490, 4_634_835)
        );
        assert_eq!(p.guard_us.map(|g| g * 1000), Some(3_849_000));
    }

    /// Round 4: elapsed 9389 over 39: dtb = 80 x 9389 / 78 = 9629; dT = 38 516, dT_prev =
    /// 9596, mu = 2055, pred = 154 590 > 49 986: no jump (plain slow start, 160 -> 320).
    #[test]
    fn round_four_declines_as_in_the_authors_log() {
        let dtb = delta_t_bat(80, 9389, 39).unwrap();
        assert_eq!(dtb, 9629);
        assert_eq!(predicted_train(4, dtb, 4798), Some(154_590));
    }

    /// Round 5: the cap with cwnd 392, 72 blue segments, 2 jumps: 392 + 72 x 3 = 608; the exit
    /// at the first ACK that finds cwnd 609 > 608, with 599 in flight: two jumps, so cwnd = 599
    /// and ssthresh = 599 (state 3), as the log.
    #[test]
    fn round_five_caps_and_exits_where_the_authors_log_does() {
        assert_eq!(cap(392, 72, 2), 608);
        let mut s = Suss::new(SussConfig::default());
        let mut tcb = Tcb::new(1448, 1500, 609.0, f64::INFINITY);
        s.init(&mut tcb, Time::ZERO);
        (s.flag, s.cap, s.jumps) = (true, 608, 2);
        tcb.high_tx = 1000;
        tcb.snd_una = 401;
        tcb.in_flight = 599;
        let sample = AckSample {
            acked: 1,
            rtt: Some(Duration::from_micros(LOG_MIN_RTT as u64)),
            prior_in_flight: 600,
        };
        s.pkts_acked(&mut tcb, &sample, Time::from_nanos(600_000_000));
        assert_eq!((tcb.cwnd, tcb.ssthresh), (599.0, 599.0));
        assert_eq!(s.state(), state::CAP_EXIT);
        assert_eq!(tcb.exit_reason_hint, Some(ExitReason::Detector(TRAIN)));
    }

    /// Condition 2's tolerance, curr_rtt / minRTT <= 1 + k / (8 (k + 1)): with minRTT
    /// 96 000 µs, 1.0, 1.0625, 1.0833, 1.09375, 1.1 x for k = 0..4.
    #[test]
    fn condition_two_tolerates_a_rise_growing_with_the_rounds_since_min_rtt_fell() {
        let m = 96_000;
        for (k, ok) in [
            (0, 96_000),
            (1, 102_000),
            (2, 104_000),
            (3, 105_000),
            (4, 105_600),
        ] {
            assert!(no_queue(k, ok, m), "k {k}: {ok}");
            assert!(!no_queue(k, ok + 1, m), "k {k}: {}", ok + 1);
        }
        assert!(!no_queue(3, u32::MAX, m));
    }

    /// What the kernel divides by zero is "no jump" here.
    #[test]
    fn a_train_of_no_segment_and_a_zero_previous_train_do_not_jump() {
        assert_eq!(delta_t_bat(20, 1000, 0), None);
        assert_eq!(predicted_train(3, 4000, 0), None);
    }

    /// The synthetic path of the notes: minRTT 100 ms, ACKs 240 µs apart (50 Mbit/s of
    /// 1500-byte packets), IW 10. The driver sends each window at once, as a burst, and the
    /// ACKs come back 240 µs apart (`hooks = "struct-ops"`: cwnd jumps at the decision).
    /// - Round 2: dtb 20 x 2160 / 18 = 2400 < 25 000: limit 40.
    /// - Round 3: at the 20th ACK cwnd 59, dtb 40 x 4560 / 38 = 4800, pred 38 400 <= 100 000:
    ///   limit 59 + 1 + 120 - 20 = 160; the 20 red ACKs leave it there.
    /// - Round 4: the blue tail at the 40th ACK (the 40 blue segments of round 3): dtb 80 x
    ///   9360 / 78 = 9600, dT 38 400, dT_prev 9600, pred 153 600 > 100 000: no jump, for good
    ///   (as the notes derive); slow start takes cwnd to 320. The later ACKs are red: no cap.
    /// - Round 5: the train << 2 jumps passes (100 000 + 1000) / 2 = 50 500 µs at the 54th
    ///   ACK (53 x 240 x 4 = 50 880), a blue one: cap = cwnd 320 + 53 + 53 blue x 3 = 532.
    ///   At the 214th ACK cwnd 320 + 213 > 532: exit; two jumps, so cwnd = in flight (the
    ///   driver sent the round at once: 320 - 214 = 106) = ssthresh.
    #[test]
    fn on_a_long_path_the_window_grows_four_fold_per_round_then_leaves_at_the_cap() {
        let mut d = suss_driver("struct-ops");
        let rtt = Duration::from_millis(100);
        let gap = Duration::from_micros(240);
        let mut windows = Vec::new();
        for _ in 0..3 {
            let n = d.tcb.cwnd as u64;
            windows.push(d.round_spread(rtt, gap * n));
        }
        assert_eq!(windows, [40.0, 160.0, 320.0]);
        assert_eq!(d.tcb.ssthresh, f64::INFINITY);
        d.round_spread(rtt, gap * 320);
        assert_eq!(d.tcb.ssthresh, 106.0);
        assert_eq!(d.tcb.exit_reason_hint, Some(ExitReason::Detector(TRAIN)));
    }

    /// minRTT 8 ms (<= 10 ms): round 2 turns SUSS off (state 10) and slow start doubles, with
    /// HyStart's own ACK-train exit: ACKs 100 µs apart, threshold (8000 + 1000) / 2 = 4500 µs
    /// (the cushion is its 1 ms cap), passed at the 47th ACK of the 80-segment round
    /// (46 x 100 = 4600), with cwnd 80 + 46 = 126.
    #[test]
    fn on_a_short_path_slow_start_doubles_and_hystart_exits() {
        let mut d = suss_driver("struct-ops");
        let rtt = Duration::from_millis(8);
        let gap = Duration::from_micros(100);
        let mut windows = Vec::new();
        for _ in 0..3 {
            let n = d.tcb.cwnd as u64;
            windows.push(d.round_spread(rtt, gap * n));
        }
        assert_eq!(windows, [20.0, 40.0, 80.0]);
        assert_eq!(d.tcb.ssthresh, f64::INFINITY);
        d.round_spread(rtt, gap * 80);
        assert_eq!(d.tcb.ssthresh, 126.0);
        assert_eq!(
            d.tcb.exit_reason_hint,
            Some(ExitReason::Detector(HYSTART_TRAIN))
        );
    }

    /// One-shot, 1: a first train longer than minRTT / 4 turns SUSS off (minRTT 100 ms, ACKs
    /// 3 ms apart, beyond HyStart's 2 ms spacing so no train exit: dtb = 20 x 27 000 / 18 =
    /// 30 000 >= 25 000), and later short trains (240 µs) do not bring it back: slow start
    /// doubles throughout.
    #[test]
    fn a_long_first_train_turns_suss_off_for_good() {
        let mut d = suss_driver("struct-ops");
        let rtt = Duration::from_millis(100);
        assert_eq!(d.round_spread(rtt, Duration::from_millis(3) * 10), 20.0);
        let gap = Duration::from_micros(240);
        let mut windows = Vec::new();
        for _ in 0..3 {
            let n = d.tcb.cwnd as u64;
            windows.push(d.round_spread(rtt, gap * n));
        }
        assert_eq!(windows, [40.0, 80.0, 160.0]);
    }

    /// One-shot, 2: after two jumps and a declined round (the long path above), a timeout
    /// (a second later, with cwnd 320: state 9) and a new slow start: no jump, the window
    /// doubles from 1.
    #[test]
    fn after_a_timeout_suss_does_not_jump_again() {
        let mut d = suss_driver("struct-ops");
        let rtt = Duration::from_millis(100);
        let gap = Duration::from_micros(240);
        for _ in 0..3 {
            let n = d.tcb.cwnd as u64;
            d.round_spread(rtt, gap * n);
        }
        d.advance(Duration::from_secs(1));
        d.timeout();
        d.tcb.ssthresh = f64::INFINITY;
        let mut windows = Vec::new();
        for _ in 0..4 {
            let n = d.tcb.cwnd.max(1.0) as u64;
            windows.push(d.round_spread(rtt, gap * n));
        }
        assert_eq!(windows, [2.0, 4.0, 8.0, 16.0]);
    }

    /// Timeouts (tcp_enter_loss, at CA_EVENT_LOSS with the window before the timeout): cwnd
    /// 30 < 40 turns SUSS off (state 10); cwnd 50 in a growth state ends it (state 9, the
    /// kernel would leave it).
    #[test]
    fn a_timeout_turns_suss_off_below_forty_segments_and_ends_it_above() {
        for (cwnd, after) in [(30.0, state::OFF), (50.0, state::REDUCED)] {
            let mut s = Suss::new(SussConfig::default());
            let mut tcb = Tcb::new(1448, 1500, cwnd, f64::INFINITY);
            s.init(&mut tcb, Time::ZERO);
            assert_eq!(s.state(), state::CLOCKED);
            s.cwnd_event(&mut tcb, CwndEvent::Loss, Time::from_nanos(5_000_000));
            assert_eq!(s.state(), after, "cwnd {cwnd}");
        }
    }

    /// A loss found by an ACK in a growth state: cwnd = packets in flight before CUBIC's
    /// ssthresh, so ssthresh = max(in flight x 717 / 1024, 2) (tcp_init_cwnd_reduction then
    /// cubictcp_recalc_ssthresh); SUSS ends (state 9). cwnd 40 with 30 in flight: cwnd 30,
    /// ssthresh 30 x 717 / 1024 = 21. A timeout (a reduction at another time than the last
    /// ACK) leaves cwnd to CUBIC: ssthresh 40 x 717 / 1024 = 28.
    #[test]
    fn a_loss_in_a_growth_state_drops_the_unsent_window_before_cubics_ssthresh() {
        let now = Time::from_nanos(150_000_000);
        let acked = || {
            let mut c = registry::build(
                "cubic",
                &params(&[("hz", 1000.into())]),
                "suss",
                &params(&[]),
            )
            .unwrap();
            let mut tcb = Tcb::new(1448, 1500, 40.0, f64::INFINITY);
            c.init(&mut tcb, Time::ZERO);
            tcb.high_tx = 70;
            tcb.snd_una = 40;
            tcb.in_flight = 30;
            let sample = AckSample {
                acked: 1,
                rtt: Some(Duration::from_millis(100)),
                prior_in_flight: 31,
            };
            c.pkts_acked(&mut tcb, &sample, now);
            (c, tcb)
        };
        let (mut c, mut tcb) = acked();
        assert_eq!(c.ssthresh(&mut tcb, now), 21.0);
        assert_eq!(tcb.cwnd, 30.0);
        let (mut c, mut tcb) = acked();
        assert_eq!(c.ssthresh(&mut tcb, Time::from_nanos(400_000_000)), 28.0);
        assert_eq!(tcb.cwnd, 40.0);
    }

    /// `hooks = "kernel"`: after the decision the ACK-clocked sends leave cwnd alone until one
    /// fills the window; from then on each send that fills it adds 2 up to the target, the
    /// first turns pacing on at suss_rate and holds the next segment until the planned start.
    #[test]
    fn in_the_kernel_each_send_that_fills_the_window_adds_two_until_the_target() {
        let mut s = Suss::new(SussConfig::default());
        let mut tcb = Tcb::new(1448, 1500, 20.0, f64::INFINITY);
        s.init(&mut tcb, Time::ZERO);
        s.state = state::PACING;
        s.limit = 24;
        s.rate = 1_158_724;
        s.pacing_start = Time::from_nanos(111_288_000);
        tcb.in_flight = 19;
        s.on_transmit(&mut tcb, Time::from_nanos(100_000_000));
        assert_eq!((tcb.cwnd, tcb.pacing_rate), (20.0, None));
        tcb.in_flight = 20;
        s.on_transmit(&mut tcb, Time::from_nanos(100_000_000));
        assert_eq!(tcb.cwnd, 22.0);
        assert_eq!(
            tcb.pacing_rate,
            Some(rate_of_sk_pacing_rate(1_158_724, &tcb))
        );
        assert_eq!(tcb.next_departure, Time::from_nanos(111_288_000));
        tcb.in_flight = 22;
        s.on_transmit(&mut tcb, Time::from_nanos(111_288_000));
        assert_eq!(tcb.cwnd, 24.0);
        tcb.in_flight = 24;
        s.on_transmit(&mut tcb, Time::from_nanos(111_300_000));
        assert_eq!(tcb.cwnd, 24.0);
    }

    #[test]
    fn suss_runs_on_cubic_only() {
        let e = registry::build("newreno", &params(&[]), "suss", &params(&[])).unwrap_err();
        assert_eq!(e.field, "startup");
        assert!(e.message.contains("\"cubic\""), "{}", e.message);
        assert!(registry::build("cubic", &params(&[]), "suss", &params(&[])).is_ok());
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<SussConfig>();
    }

    fn params(pairs: &[(&str, serde_json::Value)]) -> registry::Params {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn suss_driver(hooks: &str) -> Driver {
        let c = registry::build(
            "cubic",
            &params(&[]),
            "suss",
            &params(&[("hooks", hooks.into())]),
        )
        .unwrap();
        Driver::new(c, 10.0, f64::INFINITY)
    }
}
