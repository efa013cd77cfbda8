//! BLAST, BIC-TCP with loss tolerance (Ha, dissertation ch. 7: §7.1.1–7.1.2 the loss classifier,
//! Eqs. 7.1–7.5; §7.1.3 RTT estimation, Eqs. 7.6–7.10; §7.2.1 the integration with loss recovery,
//! Figs. 7.6–7.9).
//!
//! BLAST is BIC-TCP ([`BicCore`]) whose losses are first classified by the mean queueing delay of
//! the current round trip, `D̄_k = mean RTT of the round − min RTT` (Eq. 7.2), against two
//! thresholds set from the largest queueing delay the flow has seen, `δ_L = γ_L (maxRTT − minRTT)`
//! and `δ_H = γ_H (maxRTT − minRTT)` (Eq. 7.5). Below `δ_L` a loss is not congestion, above `δ_H`
//! it is, and in between (the grey zone) it is congestion if the delay is rising (Eq. 7.3).
//!
//! A congestion loss is BIC's: `W_max` is recorded and the window cut by `beta`. A loss judged
//! not congestion leaves the window as it is: `ssthresh` returns cwnd (Fig. 7.9
//! `blast_recalc_ssthresh`), so the sender's fast recovery (RFC 6675: cwnd = ssthresh; RFC 6582:
//! ssthresh + 3, deflated back to ssthresh at the end) retransmits without shrinking the window,
//! and `W_max` is untouched. During fast recovery BLAST keeps running congestion control on every
//! ACK that delivers data (§7.2.1, "BLAST Fast Recovery"): while the classifier says "no
//! congestion", the window the sender deflates to at the end of recovery (ssthresh) and the
//! current cwnd grow by BIC's increment. When recovery ends, a loss first judged non-congestion is
//! judged again, and cut as BIC if the queue has built up in the meantime.
//!
//! Timeouts are unchanged from BIC (§7.2.1): ssthresh is BIC's decrease whatever the classifier
//! says, and the estimators are reset (Fig. 7.9 `blast_reset`).
//!
//! BLAST is active only while `δ_L` ≥ 2 ms (§7.2.1: Linux's 1 ms timer granularity; "if the
//! maximum queueing delay of a connection is less than 8 ms, BLAST falls back to vanilla
//! BIC-TCP"): until then every loss is congestion.

use super::bic::{BicConfig, BicCore};
use super::counting::{NewlyDelivered, SsCounting};
use super::params::{closed, param, require, AlgorithmConfig, Allowed, Param, ParamError};
use super::{Ack, AckSample, CaState, CongestionControl, LossVerdicts, Tcb};
use crate::time::{Duration, Time};
use serde::{Deserialize, Serialize};

/// What a round with too few RTT samples uses as its mean queueing delay.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FewSamples {
    /// The previous round's, D̄_{k−1} (§7.1.2: "BLAST uses the estimate of the previous round").
    Previous,
    /// Zero, hence "not congestion" (Fig. 7.9 `avg_delay()` returns 0 without samples).
    Zero,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BlastConfig {
    /// γ_L of Eq. 7.5 (25 %).
    pub gamma_l: f64,
    /// γ_H of Eq. 7.5 (35 %).
    pub gamma_h: f64,
    /// BLAST is active only while δ_L is at least this, ms (§7.2.1: 2 ms).
    pub min_threshold_ms: f64,
    /// The min and max RTT are taken over the last one to two windows of this length, s
    /// (§7.1.3: T_w "in the order of a minute"); 0 keeps them for the whole connection.
    pub rtt_window_s: f64,
    /// Fewer RTT samples than this in the current round count as "too few" (§7.1.2).
    pub min_round_samples: u32,
    /// The mean queueing delay of a round with too few samples.
    pub few_samples: FewSamples,
    /// Congestion control inside fast recovery (§7.2.1, BLAST Fast Recovery).
    pub recovery_growth: bool,
    /// Judge a non-congestion loss again when recovery ends, and cut the window if it now looks
    /// like congestion (Fig. 7.9, `snd_una >= high_seq`).
    pub recheck_at_recovery_end: bool,
    /// BIC-TCP (see `bic`): window multiplier on a congestion loss.
    pub beta: f64,
    /// BIC-TCP: largest increment per round trip, segments.
    pub s_max: f64,
    /// BIC-TCP: smallest increment per round trip, segments.
    pub s_min: f64,
    /// BIC-TCP: standard TCP below this window, segments.
    pub low_window: f64,
    /// BIC-TCP: binary search divisor.
    pub search_divisor: f64,
    /// BIC-TCP: fast convergence.
    pub fast_convergence: bool,
    /// Slow-start growth.
    pub ss_counting: SsCounting,
}

impl Default for BlastConfig {
    fn default() -> Self {
        let b = BicConfig::default();
        BlastConfig {
            gamma_l: 0.25,
            gamma_h: 0.35,
            min_threshold_ms: 2.0,
            rtt_window_s: 60.0,
            min_round_samples: 1,
            few_samples: FewSamples::Previous,
            recovery_growth: true,
            recheck_at_recovery_end: true,
            beta: b.beta,
            s_max: b.s_max,
            s_min: b.s_min,
            low_window: b.low_window,
            search_divisor: b.search_divisor,
            fast_convergence: b.fast_convergence,
            ss_counting: b.ss_counting,
        }
    }
}

impl BlastConfig {
    fn bic(&self) -> BicConfig {
        BicConfig {
            beta: self.beta,
            s_max: self.s_max,
            s_min: self.s_min,
            low_window: self.low_window,
            search_divisor: self.search_divisor,
            fast_convergence: self.fast_convergence,
            ss_counting: self.ss_counting,
        }
    }

    fn validate(&self) -> Result<(), String> {
        self.bic().validate()?;
        if !(self.gamma_l >= 0.0 && self.gamma_l <= self.gamma_h) {
            return Err("need 0 <= gamma_l <= gamma_h".into());
        }
        if !(self.min_threshold_ms >= 0.0 && self.rtt_window_s >= 0.0) {
            return Err("min_threshold_ms and rtt_window_s must not be negative".into());
        }
        Ok(())
    }
}

impl AlgorithmConfig for BlastConfig {
    const PARAMS: &'static [Param] = &BLAST_PARAMS;

    fn check(&self) -> Result<(), ParamError> {
        super::bic::check_increments(self.s_min, self.s_max)?;
        require(self.gamma_l <= self.gamma_h, "gamma_l", || {
            format!(
                "gamma_l = {} is above gamma_h = {}: expected gamma_l <= gamma_h (Eq. 7.5)",
                self.gamma_l, self.gamma_h
            )
        })
    }
}

const BLAST_PARAMS: [Param; 15] = {
    let b = super::bic::BIC_PARAMS;
    [
        param("gamma_l", "", closed(0.0, 1.0), "low threshold delta_L = gamma_l x (max RTT - min RTT) (Eq. 7.5)"),
        param("gamma_h", "", closed(0.0, 1.0), "high threshold delta_H = gamma_h x (max RTT - min RTT) (Eq. 7.5)"),
        param("min_threshold_ms", "ms", closed(0.0, 1e4), "BLAST acts only while delta_L >= this, ms; otherwise it is BIC-TCP (§7.2.1)"),
        param("rtt_window_s", "s", closed(0.0, 86400.0), "min / max RTT kept over the last one to two windows of this length, s; 0 = whole connection"),
        param("min_round_samples", "", closed(0.0, 1e6), "a round with fewer RTT samples uses the few_samples rule"),
        param("few_samples", "", Allowed::Any, "mean queueing delay of such a round: \"previous\" round's (prose) or \"zero\" (Fig. 7.9)"),
        param("recovery_growth", "", Allowed::Any, "grow ssthresh and cwnd by BIC's increment in fast recovery while not congested (§7.2.1)"),
        param("recheck_at_recovery_end", "", Allowed::Any, "judge a non-congestion loss again when recovery ends; cut if now congestion"),
        b[0], b[1], b[2], b[3], b[4], b[5], b[6],
    ]
};

/// The classifier's verdict on a loss.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Congestion,
    NonCongestion,
}

/// The last loss `ssthresh` was asked about.
#[derive(Copy, Clone, Debug)]
struct LossEvent {
    at: Time,
    cwnd: f64,
    verdict: Verdict,
}

#[derive(Clone, Debug)]
pub struct Blast {
    cfg: BlastConfig,
    bic: BicCore,
    // --- RTT estimators (§7.1.3), seconds ---
    /// minRTT (Eq. 7.6) of the current and the previous T_w window.
    min_cur: f64,
    min_prev: f64,
    /// maxRTT (Eq. 7.10) of the current and the previous T_w window.
    max_cur: f64,
    max_prev: f64,
    window_start: Option<Time>,
    /// The last three raw samples, newest last, and how many there are (for Eq. 7.8).
    recent: [f64; 3],
    n_recent: usize,
    /// sRTT (Eq. 7.9).
    s_rtt: Option<f64>,
    /// Sum and count of this round's raw samples (Eq. 7.7, Fig. 7.7 sumRTT / cntRTT).
    sum: f64,
    cnt: u32,
    /// D̄_{k−1}, the previous round's mean queueing delay.
    prev_delay: f64,
    /// The round ends once `tcb.delivered` passes this.
    round_end: Option<u64>,
    last_loss: Option<LossEvent>,
    congestion_losses: u64,
    non_congestion_losses: u64,
    delivered: NewlyDelivered,
}

impl Blast {
    pub fn new(cfg: BlastConfig) -> Result<Self, String> {
        cfg.validate()?;
        Ok(Blast {
            bic: BicCore::new(cfg.bic()),
            cfg,
            min_cur: f64::INFINITY,
            min_prev: f64::INFINITY,
            max_cur: 0.0,
            max_prev: 0.0,
            window_start: None,
            recent: [0.0; 3],
            n_recent: 0,
            s_rtt: None,
            sum: 0.0,
            cnt: 0,
            prev_delay: 0.0,
            round_end: None,
            last_loss: None,
            congestion_losses: 0,
            non_congestion_losses: 0,
            delivered: NewlyDelivered::default(),
        })
    }

    pub fn bic(&self) -> &BicCore {
        &self.bic
    }

    /// min RTT, s.
    fn d_min(&self) -> f64 {
        self.min_cur.min(self.min_prev)
    }

    /// max RTT (of the filtered sRTT), s.
    fn d_max(&self) -> f64 {
        self.max_cur.max(self.max_prev)
    }

    /// (δ_L, δ_H), Eq. 7.5, s.
    pub fn thresholds(&self) -> (f64, f64) {
        let range = (self.d_max() - self.d_min()).max(0.0);
        if !range.is_finite() {
            return (0.0, 0.0);
        }
        (self.cfg.gamma_l * range, self.cfg.gamma_h * range)
    }

    /// Whether the classifier is on (§7.2.1: δ_L ≥ 2 ms).
    pub fn is_active(&self) -> bool {
        self.d_min().is_finite() && self.thresholds().0 >= self.cfg.min_threshold_ms * 1e-3
    }

    /// D̄_k, the mean queueing delay of the current round (Eq. 7.2), s.
    pub fn avg_delay(&self) -> f64 {
        if self.cnt >= self.cfg.min_round_samples.max(1) && self.d_min().is_finite() {
            (self.sum / self.cnt as f64 - self.d_min()).max(0.0)
        } else {
            match self.cfg.few_samples {
                FewSamples::Previous => self.prev_delay,
                FewSamples::Zero => 0.0,
            }
        }
    }

    /// Eq. 7.3 (`blast_loss_predictor`, Fig. 7.9).
    pub fn classify(&self) -> Verdict {
        if !self.is_active() {
            return Verdict::Congestion;
        }
        let (low, high) = self.thresholds();
        let d = self.avg_delay();
        // Ties follow Fig. 7.9 (D̄ <= δ_L: not congestion; D̄ > δ_H: congestion; rising means
        // D̄_k > D̄_{k−1}); Eq. 7.3 puts D̄_k = δ_H and D̄_k = D̄_{k−1} on the congestion side.
        // With delays measured in nanoseconds ties do not occur in practice.
        if d <= low {
            Verdict::NonCongestion
        } else if d > high || d > self.prev_delay {
            Verdict::Congestion
        } else {
            Verdict::NonCongestion
        }
    }

    /// Fig. 7.9 `blast_reset`, on a timeout.
    fn reset(&mut self) {
        self.bic.reset();
        self.prev_delay = 0.0;
        self.min_cur = f64::INFINITY;
        self.min_prev = f64::INFINITY;
        self.max_cur = 0.0;
        self.max_prev = 0.0;
        self.window_start = None;
        self.n_recent = 0;
        self.s_rtt = None;
        self.sum = 0.0;
        self.cnt = 0;
        self.round_end = None;
        self.last_loss = None;
    }

    /// One RTT sample: Eqs. 7.6–7.10 and the round's sum (Fig. 7.7 "On each ACK").
    fn on_rtt(&mut self, rtt: Duration, now: Time) {
        let r = rtt.as_secs_f64();
        // T_w (§7.1.3): the extremes are kept over the current and the previous window, so a
        // route change is forgotten after one to two windows (the text gives no mechanism).
        let tw = self.cfg.rtt_window_s;
        match self.window_start {
            None => self.window_start = Some(now),
            Some(start) if tw > 0.0 && now.saturating_since(start).as_secs_f64() >= tw => {
                self.min_prev = self.min_cur;
                self.max_prev = self.max_cur;
                self.min_cur = f64::INFINITY;
                self.max_cur = 0.0;
                self.window_start = Some(now);
            }
            Some(_) => {}
        }
        // Eq. 7.6.
        self.min_cur = self.min_cur.min(r);
        // Eq. 7.8: the median of the last three raw samples (Fig. 7.8's median_filter keeps its
        // output in the middle slot, a recursive median; the difference is within one sample).
        // With fewer than three samples the newest passes through.
        self.recent = [self.recent[1], self.recent[2], r];
        self.n_recent = (self.n_recent + 1).min(3);
        let m = if self.n_recent < 3 {
            r
        } else {
            let [a, b, c] = self.recent;
            a.max(b).min(a.min(b).max(c))
        };
        // Eq. 7.9, started at the first filtered sample (Fig. 7.7 starts from 0, which would
        // pull maxRTT below the real RTTs for the first dozens of samples).
        let s = match self.s_rtt {
            None => m,
            Some(s) => 0.875 * s + 0.125 * m,
        };
        self.s_rtt = Some(s);
        // Eq. 7.10.
        self.max_cur = self.max_cur.max(s);
        // Eq. 7.7 over the current round.
        self.sum += r;
        self.cnt += 1;
    }
}

impl CongestionControl for Blast {
    fn init(&mut self, _tcb: &mut Tcb, _now: Time) {
        self.reset();
    }

    /// §7.3.2's ncl_blast counts these. A loss event is a call of `ssthresh`: a fast retransmit
    /// or a timeout outside recovery. Each is counted once, with its final verdict: a timeout is
    /// congestion, and a non-congestion loss judged again at the end of its recovery may become
    /// congestion.
    fn loss_verdicts(&self) -> Option<LossVerdicts> {
        Some(LossVerdicts {
            congestion: self.congestion_losses,
            non_congestion: self.non_congestion_losses,
        })
    }

    /// Fig. 7.9 `blast_recalc_ssthresh`.
    fn ssthresh(&mut self, tcb: &mut Tcb, now: Time) -> f64 {
        let verdict = self.classify();
        self.last_loss = Some(LossEvent {
            at: now,
            cwnd: tcb.cwnd,
            verdict,
        });
        self.bic.restart_round();
        match verdict {
            Verdict::Congestion => {
                self.congestion_losses += 1;
                self.bic.on_loss(tcb.cwnd)
            }
            Verdict::NonCongestion => {
                // ssthresh <- cwnd: the sender's recovery keeps the window; W_max is not set.
                self.non_congestion_losses += 1;
                tcb.cwnd.max(2.0)
            }
        }
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        // Count the segments this ACK newly delivered (Linux `acked`), not those it covers.
        let mut acked = self.delivered.take(tcb, now).min(ack.acked);
        // The sender never calls this in fast recovery; BLAST's own growth there is in
        // `pkts_acked`.
        if !tcb.cwnd_limited || tcb.ca_state == CaState::Recovery {
            return;
        }
        if tcb.in_slow_start() {
            acked = self.bic.slow_start(tcb, acked);
            if acked == 0 {
                return;
            }
        }
        let (delivered, in_flight) = (tcb.delivered, tcb.in_flight);
        self.bic.grow(&mut tcb.cwnd, delivered, in_flight, acked);
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.delivered.record(tcb, sample, now);
        // Fig. 7.7 "At the start of each RTT round": prev_delay <- avg_delay(), restart the sum.
        // A round ends when the segments in flight at its start have been delivered, so rounds
        // go on during fast recovery, where snd_una stands still.
        if self.round_end.is_none_or(|end| tcb.delivered > end) {
            self.prev_delay = self.avg_delay();
            self.sum = 0.0;
            self.cnt = 0;
            self.round_end = Some(tcb.delivered + tcb.in_flight as u64);
        }
        if let Some(rtt) = sample.rtt {
            self.on_rtt(rtt, now);
        }
        // BLAST Fast Recovery (§7.2.1, Fig. 7.9): on every ACK of the recovery, grow the window
        // by BIC's increment unless the classifier sees congestion. Fig. 7.9 writes
        // `if is_cong then pipe <- pipe + bictcp.update()`, which contradicts the prose
        // ("increasing cwnd on every ACK in the absence of congestion"); the prose is followed.
        // The window the sender returns to when recovery ends is ssthresh ("pipe"), so it grows
        // with cwnd.
        if tcb.ca_state == CaState::Recovery
            && self.cfg.recovery_growth
            && sample.acked > 0
            && self.classify() == Verdict::NonCongestion
        {
            let mut w = tcb.ssthresh;
            self.bic
                .grow(&mut w, tcb.delivered, tcb.in_flight, sample.acked);
            let inc = (w - tcb.ssthresh).max(0.0);
            tcb.ssthresh += inc;
            tcb.cwnd += inc;
        }
    }

    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, now: Time) {
        match state {
            CaState::Loss => {
                // A timeout: one BIC decrease whatever the classifier said ("BLAST does not
                // change the timeout behavior of standard TCP", §7.2.1).
                match self.last_loss.take() {
                    // The sender asked `ssthresh` just before this, at the same instant (a
                    // congestion answer there is already BIC's decrease).
                    Some(l) if l.at == now && l.verdict == Verdict::NonCongestion => {
                        self.non_congestion_losses -= 1;
                        self.congestion_losses += 1;
                        tcb.ssthresh = self.bic.on_loss(l.cwnd);
                    }
                    // A timeout during fast recovery keeps the recovery's ssthresh (the sender,
                    // as Linux `tcp_enter_loss`, does not ask again). After a congestion loss
                    // that is already BIC's decrease; after a non-congestion loss it is the
                    // undiminished window BLAST kept through the recovery, so the decrease is
                    // applied to it here, once.
                    Some(l)
                        if tcb.ca_state == CaState::Recovery
                            && l.verdict == Verdict::NonCongestion =>
                    {
                        tcb.ssthresh = self.bic.on_loss(tcb.ssthresh);
                    }
                    _ => {}
                }
                self.reset();
            }
            CaState::Open | CaState::Disorder if tcb.ca_state == CaState::Recovery => {
                // Fast recovery is over (Fig. 7.9, snd_una >= high_seq); cwnd = ssthresh.
                let entry = self.last_loss.take();
                if self.cfg.recheck_at_recovery_end
                    && entry.is_some_and(|l| l.verdict == Verdict::NonCongestion)
                    && self.classify() == Verdict::Congestion
                {
                    // Judged again, now congestion: BIC's decrease, once. (Fig. 7.9 recomputes
                    // after a congestion loss too, which would cut the window twice for one
                    // loss; a loss already cut is left alone.)
                    self.non_congestion_losses -= 1;
                    self.congestion_losses += 1;
                    let s = self.bic.on_loss(tcb.cwnd);
                    tcb.ssthresh = s;
                    tcb.cwnd = tcb.cwnd.min(s);
                }
                self.prev_delay = self.avg_delay();
                self.bic.restart_round();
            }
            _ => self.bic.restart_round(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::Driver;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    fn blast(cfg: BlastConfig) -> Box<dyn CongestionControl> {
        Box::new(Blast::new(cfg).unwrap())
    }

    /// Congestion avoidance at 20 segments; 5 rounds at 100 ms (minRTT = 100 ms), then 5 rounds
    /// at `high` ms, a standing queue: the median filter passes `high` from the 2nd such sample
    /// on, and sRTT converges to it (7/8 per sample, 100+ samples), so maxRTT ≈ `high`.
    /// With `high` = 160: δ_L = 0.25 × 60 = 15 ms, δ_H = 0.35 × 60 = 21 ms.
    fn primed(cfg: BlastConfig, high: u64) -> Driver {
        let mut d = Driver::new(blast(cfg), 20.0, 20.0);
        for _ in 0..5 {
            d.round(ms(100));
        }
        for _ in 0..5 {
            d.round(ms(high));
        }
        d
    }

    /// A round at 101 ms: D̄ = 1 ms ≤ δ_L = 15 ms, the queue is empty, the loss is not
    /// congestion: ssthresh = cwnd, and the window survives fast recovery.
    #[test]
    fn a_loss_under_an_empty_queue_is_not_congestion() {
        let mut d = primed(BlastConfig::default(), 160);
        d.round(ms(101));
        let w = d.tcb.cwnd;
        d.send();
        d.fast_recovery();
        assert_eq!(d.tcb.ssthresh, w);
        assert_eq!(d.tcb.cwnd, w);
    }

    /// A round at 158 ms: D̄ = 58 ms > δ_H = 21 ms, the queue is full, the loss is congestion:
    /// BIC's decrease, cwnd × 0.8.
    #[test]
    fn a_loss_under_a_full_queue_is_congestion() {
        let mut d = primed(BlastConfig::default(), 160);
        d.round(ms(158));
        let w = d.tcb.cwnd;
        d.send();
        d.fast_recovery();
        assert!((d.tcb.cwnd - 0.8 * w).abs() < 1e-9);
    }

    /// The grey zone δ_L < D̄ ≤ δ_H (15 to 21 ms): a round at 118 ms (D̄ = 18 ms) after one at
    /// 110 ms (10 ms) is a rising delay, congestion; after one at 125 ms (25 ms) it is falling,
    /// not congestion.
    #[test]
    fn in_the_grey_zone_the_delay_trend_decides() {
        for (before, congestion) in [(110, true), (125, false)] {
            let mut d = primed(BlastConfig::default(), 160);
            d.round(ms(before));
            d.round(ms(118));
            let w = d.tcb.cwnd;
            d.send();
            d.fast_recovery();
            let cut = d.tcb.cwnd < w;
            assert_eq!(cut, congestion, "after {before} ms");
        }
    }

    /// The largest queueing delay seen is 5 ms, so δ_L = 1.25 ms < 2 ms: BLAST is off and even
    /// a loss under an empty queue is congestion, as BIC.
    #[test]
    fn below_8ms_of_queueing_blast_is_plain_bic() {
        let mut d = primed(BlastConfig::default(), 105);
        d.round(ms(100));
        let w = d.tcb.cwnd;
        d.send();
        d.fast_recovery();
        assert!((d.tcb.cwnd - 0.8 * w).abs() < 1e-9);
    }

    /// A timeout is handled as BIC whatever the queue (§7.2.1): ssthresh = 0.8 cwnd.
    #[test]
    fn timeouts_are_unchanged() {
        let mut d = primed(BlastConfig::default(), 160);
        d.round(ms(101));
        let w = d.tcb.cwnd;
        d.timeout();
        assert!((d.tcb.ssthresh - 0.8 * w).abs() < 1e-9);
        assert_eq!(d.tcb.cwnd, 1.0);
    }

    /// A timeout during a recovery entered on a non-congestion loss: the sender keeps the
    /// recovery's ssthresh (the undiminished window) and does not ask `ssthresh` again; BLAST
    /// applies BIC's decrease when the state becomes Loss: ssthresh = 0.8 w.
    #[test]
    fn a_timeout_during_a_non_congestion_recovery_still_cuts_once() {
        let mut d = primed(BlastConfig::default(), 160);
        d.round(ms(101));
        let w = d.tcb.cwnd;
        d.tcb.ssthresh = d.cc.ssthresh(&mut d.tcb, d.now);
        d.cc.set_state(&mut d.tcb, CaState::Recovery, d.now);
        d.tcb.ca_state = CaState::Recovery;
        d.tcb.cwnd = d.tcb.ssthresh;
        assert_eq!(d.tcb.ssthresh, w);
        d.advance(ms(300));
        d.cc.set_state(&mut d.tcb, CaState::Loss, d.now);
        assert!((d.tcb.ssthresh - 0.8 * w).abs() < 1e-9);
    }

    /// During fast recovery after a non-congestion loss, each ACK that delivers data grows
    /// ssthresh and cwnd by BIC's increment: W_max is unknown (no congestion loss yet), so
    /// S_max = 32 over the round. Recovery ends with cwnd = ssthresh = w + 32.
    #[test]
    fn fast_recovery_keeps_growing_after_a_non_congestion_loss() {
        let mut d = primed(BlastConfig::default(), 160);
        d.round(ms(101));
        let w = d.tcb.cwnd;
        // The sender's order: ssthresh, then the state change, cwnd = ssthresh (SACK recovery).
        d.tcb.ssthresh = d.cc.ssthresh(&mut d.tcb, d.now);
        d.cc.set_state(&mut d.tcb, CaState::Recovery, d.now);
        d.tcb.ca_state = CaState::Recovery;
        d.tcb.cwnd = d.tcb.ssthresh;
        assert_eq!(d.tcb.cwnd, w);
        // One round of ACKs at 101 ms (SACKs of the segments after the hole).
        d.round(ms(101));
        assert!(
            (d.tcb.ssthresh - (w + 32.0)).abs() < 1e-9,
            "{}",
            d.tcb.ssthresh
        );
        assert!((d.tcb.cwnd - (w + 32.0)).abs() < 1e-9);
        // End of recovery: cwnd = ssthresh, still no congestion.
        d.tcb.cwnd = d.tcb.ssthresh;
        d.cc.set_state(&mut d.tcb, CaState::Open, d.now);
        d.tcb.ca_state = CaState::Open;
        assert!((d.tcb.cwnd - (w + 32.0)).abs() < 1e-9);
    }

    /// A non-congestion loss whose recovery sees the queue fill (rounds at 158 ms) is judged
    /// again when recovery ends and cut as BIC.
    #[test]
    fn the_end_of_recovery_judges_the_loss_again() {
        let mut d = primed(BlastConfig::default(), 160);
        d.round(ms(101));
        let w = d.tcb.cwnd;
        d.tcb.ssthresh = d.cc.ssthresh(&mut d.tcb, d.now);
        d.cc.set_state(&mut d.tcb, CaState::Recovery, d.now);
        d.tcb.ca_state = CaState::Recovery;
        d.tcb.cwnd = d.tcb.ssthresh;
        d.round(ms(158));
        // Congestion all along this round: no growth.
        assert_eq!(d.tcb.ssthresh, w);
        d.tcb.cwnd = d.tcb.ssthresh;
        d.cc.set_state(&mut d.tcb, CaState::Open, d.now);
        d.tcb.ca_state = CaState::Open;
        assert!((d.tcb.cwnd - 0.8 * w).abs() < 1e-9);
    }

    /// Fig. 7.9's reading of an empty round (avg_delay() = 0) against the prose's (previous
    /// round): right after a round at 158 ms, a loss on the first ACK of a new round that
    /// carries no RTT sample.
    #[test]
    fn few_samples_previous_round_or_zero() {
        for (few, cut) in [(FewSamples::Previous, true), (FewSamples::Zero, false)] {
            let mut b = Blast::new(BlastConfig {
                few_samples: few,
                ..Default::default()
            })
            .unwrap();
            let mut t = Tcb::new(1000, 1040, 50.0, 50.0);
            let mut now = Time::ZERO;
            let feed = |b: &mut Blast, t: &mut Tcb, rtt: Option<u64>, now: Time| {
                t.delivered += 1;
                t.in_flight = 0;
                let s = AckSample {
                    acked: 1,
                    rtt: rtt.map(ms),
                    prior_in_flight: 1,
                };
                b.pkts_acked(t, &s, now);
            };
            for rtt in [100, 100, 100, 160, 160, 160, 160, 160, 160, 158] {
                now += ms(rtt);
                feed(&mut b, &mut t, Some(rtt), now);
            }
            now += ms(10);
            feed(&mut b, &mut t, None, now);
            assert_eq!(b.avg_delay() > 0.0, cut);
            let s = b.ssthresh(&mut t, now);
            assert_eq!(s < 50.0, cut, "{few:?}");
        }
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<BlastConfig>();
    }
}
