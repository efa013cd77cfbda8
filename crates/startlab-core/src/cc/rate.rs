//! The eligible rate estimate (ERE) of TCP Westwood (Wang et al. 2004 §II.B), shared by
//! Westwood and Astart: the adaptive sample interval T_k, the ERE sample (data acknowledged over
//! T_k, divided by it), and the first-order low-pass filter discretised with the Tustin
//! approximation (Ha 2009 eq. 3.7) with virtual zero samples every τ/m of silence. The choices
//! made where the paper leaves room are listed in `westwood.rs`.

use super::params::{above, below, closed, param, Allowed, Param};
use super::Tcb;
use crate::time::Time;
use std::collections::VecDeque;

/// A first-order low-pass filter discretised with the Tustin approximation, driven by irregular
/// samples (Ha 2009 eq. 3.7), with virtual zero samples when the input pauses.
#[derive(Clone, Debug, Default)]
pub struct TustinFilter {
    value: f64,
    last_input: f64,
    last_time: Option<Time>,
}

impl TustinFilter {
    /// One step of eq. 3.7 over `dt` seconds with input `x`.
    fn step(&mut self, x: f64, dt: f64, tau: f64) {
        // α ∈ [0, 1): with virtual samples every τ/m (m ≥ 2) dt ≤ τ/2 and α ≥ 0.6; without them
        // a gap longer than 2τ would make α negative, so it is clamped.
        let a = ((2.0 * tau - dt) / (2.0 * tau + dt)).max(0.0);
        self.value = a * self.value + (1.0 - a) / 2.0 * (x + self.last_input);
        self.last_input = x;
    }

    /// Feeds sample `x` taken at `now`. `m` > 0 inserts virtual zero samples every τ/m of
    /// silence; `seed` makes the first sample the initial output (else the filter starts at 0).
    pub fn update(&mut self, x: f64, now: Time, tau: f64, m: f64, seed: bool) {
        let Some(last) = self.last_time else {
            // A fresh filter starts at 0 and takes its first sample in through the trapezoid of
            // the next step (there is no interval yet to weigh it by); seeded, it starts there.
            self.value = if seed { x } else { 0.0 };
            self.last_input = x;
            self.last_time = Some(now);
            return;
        };
        self.last_time = Some(now);
        let mut dt = now.saturating_since(last).as_secs_f64();
        let tau = tau.max(1e-9);
        if m > 0.0 {
            let every = tau / m;
            if dt > every {
                // Virtual null samples at last + every, last + 2·every, …: the first blends the
                // last real input with zero, the rest are pure decay by the same α.
                let n = ((dt / every).ceil() as u64).saturating_sub(1).max(1);
                self.step(0.0, every, tau);
                if n > 1 {
                    let a = (2.0 * tau - every) / (2.0 * tau + every);
                    self.value *= a.powi((n - 1).min(i32::MAX as u64) as i32);
                }
                dt -= every * n as f64;
                dt = dt.max(0.0);
            }
        }
        self.step(x, dt, tau);
    }

    pub fn value(&self) -> Option<f64> {
        self.last_time.map(|_| self.value)
    }
}

/// Parameters of the eligible rate estimate, shared by Westwood and Astart.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EreParams {
    /// Filter time constant τ, seconds.
    pub tau: f64,
    /// Virtual zero samples every τ/m of silence; 0 disables them.
    pub virtual_sample_m: f64,
    /// Start the ERE filter at its first sample instead of at zero.
    pub seed_with_first_sample: bool,
    /// Weight ε of the previous RE in RE ← ε·RE + (1 − ε)·sample.
    pub re_gain: f64,
}

/// The eligible rate estimate of TCP Westwood (Wang et al. 2004 §II.B), in segments per second.
#[derive(Clone, Debug)]
pub struct Ere {
    params: EreParams,
    /// (ACK arrival time, cumulative segments delivered after it); one entry per instant.
    history: VecDeque<(Time, f64)>,
    /// Entries older than the horizon were dropped (before that, nothing had been delivered
    /// before the oldest entry).
    pruned: bool,
    delivered: f64,
    /// Segments credited to duplicate ACKs and not yet covered by a cumulative ACK.
    accounted: f64,
    re: Option<f64>,
    ere: TustinFilter,
    last_interval: Option<f64>,
}

/// Longest history kept, entries (a safeguard; the RTT horizon normally bounds it).
const MAX_HISTORY: usize = 1 << 16;

impl Ere {
    pub fn new(params: EreParams) -> Self {
        Ere {
            params,
            history: VecDeque::new(),
            pruned: false,
            delivered: 0.0,
            accounted: 0.0,
            re: None,
            ere: TustinFilter::default(),
            last_interval: None,
        }
    }

    /// Cumulative segments delivered by the latest ACK at or before `t`.
    fn delivered_at(&self, t: Time) -> f64 {
        // The history is in time order: a binary search, not a scan of a window's worth of ACKs.
        match self.history.partition_point(|e| e.0 <= t) {
            0 if self.pruned => self.history.front().map_or(0.0, |e| e.1),
            0 => 0.0,
            i => self.history[i - 1].1,
        }
    }

    /// A duplicate ACK that delivered nothing visible (`CwndEvent::DupAck`): Westwood counts it
    /// as one segment received (Mascolo et al., TCP Westwood; Linux `westwood_acked_count`).
    pub fn on_dupack(&mut self, tcb: &Tcb, now: Time) {
        self.accounted += 1.0;
        self.record(tcb, 1.0, now);
    }

    /// Every ACK that delivers data (`pkts_acked`): `acked` segments arrived at `now`. A
    /// cumulative ACK of several segments after duplicate ACKs counts only what they did not
    /// (at least one segment), so the segments received out of order during a recovery are
    /// counted when they arrived, not all at once when the hole is filled.
    pub fn on_ack(&mut self, tcb: &Tcb, acked: u32, now: Time) {
        let mut acked = acked as f64;
        if acked > 1.0 && self.accounted > 0.0 {
            if self.accounted >= acked {
                self.accounted -= acked;
                acked = 1.0;
            } else {
                acked -= self.accounted;
                self.accounted = 0.0;
            }
        }
        self.record(tcb, acked, now);
    }

    fn record(&mut self, tcb: &Tcb, acked: f64, now: Time) {
        self.delivered += acked;
        match self.history.back_mut() {
            Some(last) if last.0 == now => last.1 = self.delivered,
            _ => self.history.push_back((now, self.delivered)),
        }
        let (Some(srtt), Some(min_rtt)) = (tcb.srtt.or(tcb.latest_rtt), tcb.min_rtt) else {
            return;
        };
        let rtt = srtt.as_secs_f64();
        let rtt_min = min_rtt.as_secs_f64();
        // Keep one entry at or before now − RTT (the longest span looked back), drop older.
        let horizon = Time::from_nanos(now.as_nanos().saturating_sub(srtt.as_nanos()));
        while self.history.len() > 2 && self.history[1].0 <= horizon {
            self.history.pop_front();
            self.pruned = true;
        }
        while self.history.len() > MAX_HISTORY {
            self.history.pop_front();
            self.pruned = true;
        }
        if rtt <= 0.0 || rtt_min <= 0.0 {
            return;
        }
        let p = self.params;

        // RE: data acknowledged during the latest RTT, divided by it (§II.B), exponentially
        // averaged with a constant gain, starting at the first sample.
        let re_sample = (self.delivered - self.delivered_at(horizon)) / rtt;
        let eps = p.re_gain.clamp(0.0, 1.0);
        let re = self
            .re
            .map_or(re_sample, |v| eps * v + (1.0 - eps) * re_sample);
        self.re = Some(re);

        // T_k (§II.B): small when the achieved rate matches cwnd / RTT_min (no queue: close to a
        // packet pair), up to one RTT under congestion (a packet train). Clamped to [0, RTT].
        let expected = tcb.cwnd / rtt_min;
        let tk = if expected > 0.0 {
            (rtt * (expected - re) / expected).clamp(0.0, rtt)
        } else {
            rtt
        };
        self.last_interval = Some(tk);

        // The ERE sample (§II.B): the data acknowledged in (t_k − T, t_k] divided by T, with
        // T = max(T_k, time since the previous ACK), so T_k → 0 gives a packet pair (T_k is cut
        // to the time since the first ACK while the connection is younger than T_k). Dividing by
        // T_k itself, not by the span back to the last ACK before t_k − T_k: when a flow's ACKs
        // come in one burst per RTT, that span stretches over the gap between bursts and the
        // samples at the start of each burst read as a fraction of the flow's rate.
        let n = self.history.len();
        if n >= 2 {
            let (t_prev, d_prev) = self.history[n - 2];
            let (t_first, d_first) = self.history[0];
            let gap = now.saturating_since(t_prev).as_secs_f64();
            let age = now.saturating_since(t_first).as_secs_f64();
            let (d0, span) = if gap >= tk.min(age) {
                (d_prev, gap)
            } else if age <= tk {
                (d_first, age)
            } else {
                let from = Time::from_nanos(
                    now.as_nanos()
                        .saturating_sub(crate::time::Duration::from_secs_f64(tk).as_nanos()),
                );
                (self.delivered_at(from), tk)
            };
            if span > 0.0 {
                let sample = (self.delivered - d0) / span;
                self.ere.update(
                    sample,
                    now,
                    p.tau,
                    p.virtual_sample_m,
                    p.seed_with_first_sample,
                );
            }
        }
    }

    /// The eligible rate estimate, segments per second (`None` before the first sample).
    pub fn rate(&self) -> Option<f64> {
        self.ere.value()
    }

    /// The smoothed achieved rate RE, segments per second.
    pub fn achieved_rate(&self) -> Option<f64> {
        self.re
    }

    /// T_k of the last ACK, seconds.
    pub fn last_interval(&self) -> Option<f64> {
        self.last_interval
    }

    /// ERE × RTT_min / segment size, in segments (the rate is already in segments per second).
    pub fn window(&self, tcb: &Tcb) -> Option<f64> {
        let rate = self.rate()?;
        let rtt_min = tcb.min_rtt?.as_secs_f64();
        let w = rate * rtt_min;
        w.is_finite().then_some(w)
    }
}

/// The estimator's parameters, as Westwood and Astart declare them.
pub const ERE_PARAMS: [Param; 4] = [
    param(
        "tau",
        "s",
        above(0.0, 100.0),
        "time constant of the Tustin low-pass filter of ERE, seconds",
    ),
    param(
        "virtual_sample_m",
        "",
        closed(0.0, 1000.0),
        "insert zero samples every tau/m seconds without ACKs; 0: never",
    ),
    param(
        "seed_with_first_sample",
        "",
        Allowed::Any,
        "start the ERE filter at its first sample instead of at 0",
    ),
    param(
        "re_gain",
        "",
        below(0.0, 1.0),
        "weight of the previous value in the achieved-rate average RE (0.6)",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    /// Westwood's and Astart's defaults.
    fn params() -> EreParams {
        EreParams {
            tau: 0.5,
            virtual_sample_m: 2.0,
            seed_with_first_sample: false,
            re_gain: 0.6,
        }
    }

    #[test]
    fn tustin_step_matches_the_formula() {
        let mut f = TustinFilter::default();
        let t = |ms: u64| Time::from_nanos(ms * 1_000_000);
        f.update(10.0, t(0), 0.5, 2.0, false);
        assert_eq!(f.value(), Some(0.0));
        f.update(10.0, t(100), 0.5, 2.0, false);
        assert!((f.value().unwrap() - 20.0 / 11.0).abs() < 1e-12);
    }

    /// Silence of 1 s with τ = 0.5, m = 2: virtual samples at +0.25, +0.5, +0.75 s, then the
    /// real one after the last 0.25 s. α = (1 − 0.25)/(1 + 0.25) = 0.6 each step. Starting at
    /// ERE = 10 with last input 10: 0.6·10 + 0.2·10 = 8, then 4.8, 2.88, then
    /// 0.6·2.88 + 0.2·(0 + 10) = 3.728.
    #[test]
    fn virtual_null_samples_fill_long_silences() {
        let mut f = TustinFilter::default();
        let t = |ms: u64| Time::from_nanos(ms * 1_000_000);
        f.update(10.0, t(0), 0.5, 2.0, true);
        assert_eq!(f.value(), Some(10.0));
        f.update(10.0, t(1000), 0.5, 2.0, true);
        assert!((f.value().unwrap() - 3.728).abs() < 1e-9, "{:?}", f.value());
    }

    /// ACKs at a constant 1000 segments/s (one per ms) on a 100 ms path whose window matches
    /// the rate (cwnd 100, no queue): every ERE sample is 1000 segments/s whatever T_k, so the
    /// filter, started at 0, converges as 1 − Π α_k: with Δt = 1 ms and τ = 0.5 s,
    /// α = 999/1001 per ACK; after 2 s (2000 ACKs) the gap is about e^(−2000·2/1001) ≈ 2 %,
    /// after 4 s about 0.03 %.
    #[test]
    fn ere_converges_to_a_constant_ack_rate() {
        let mut tcb = Tcb::new(1000, 1040, 100.0, f64::INFINITY);
        let rtt = Duration::from_millis(100);
        tcb.srtt = Some(rtt);
        tcb.min_rtt = Some(rtt);
        tcb.latest_rtt = Some(rtt);
        let mut e = Ere::new(params());
        let at = |ms: u64, e: &mut Ere| e.on_ack(&tcb, 1, Time::from_nanos(ms * 1_000_000));
        for ms in 1..=2000 {
            at(ms, &mut e);
        }
        let r2 = e.rate().unwrap();
        assert!(r2 > 970.0 && r2 < 1000.0, "{r2}");
        for ms in 2001..=4000 {
            at(ms, &mut e);
        }
        let r4 = e.rate().unwrap();
        assert!((r4 - 1000.0).abs() < 1.0, "{r4}");
        // RE (100 segments per 100 ms) converges to the same rate, so T_k shrinks to ~0:
        // packet-pair samples.
        assert!((e.achieved_rate().unwrap() - 1000.0).abs() < 1.0);
        assert!(e.last_interval().unwrap() < 0.001);
        // ERE × RTT_min = 100 segments.
        assert!((e.window(&tcb).unwrap() - 100.0).abs() < 0.1);
    }

    /// A recovery without SACK: one segment per ms, then 20 duplicate ACKs (one per ms, each a
    /// segment received out of order), a partial ACK of one segment at 4021 ms and, 1 ms later,
    /// the ACK that acknowledges the 20 segments held at the receiver. Westwood's counting
    /// credits each duplicate ACK with one segment and the cumulative ACK with the one segment
    /// they did not cover, so every sample is 1000 segments/s and ERE stays there. (Counting the
    /// 20 segments at once would make the last sample 20 / 1 ms = 20000 segments/s.)
    #[test]
    fn duplicate_acks_count_as_delivered_segments() {
        let mut tcb = Tcb::new(1000, 1040, 100.0, f64::INFINITY);
        let rtt = Duration::from_millis(100);
        tcb.srtt = Some(rtt);
        tcb.min_rtt = Some(rtt);
        tcb.latest_rtt = Some(rtt);
        let ms = |m: u64| Time::from_nanos(m * 1_000_000);
        let mut e = Ere::new(EreParams {
            seed_with_first_sample: true,
            ..params()
        });
        for m in 1..=4000 {
            e.on_ack(&tcb, 1, ms(m));
        }
        for m in 4001..=4020 {
            e.on_dupack(&tcb, ms(m));
        }
        e.on_ack(&tcb, 1, ms(4021));
        e.on_ack(&tcb, 20, ms(4022));
        assert_eq!(e.delivered, 4022.0);
        let r = e.rate().unwrap();
        assert!((r - 1000.0).abs() < 1.0, "{r}");
        // A delayed ACK of two segments with no duplicate ACKs before it counts both.
        e.on_ack(&tcb, 2, ms(4024));
        assert_eq!(e.delivered, 4024.0);
    }

    /// Under congestion (RE well below cwnd / RTT_min) T_k grows toward the RTT: cwnd 200 over
    /// RTT_min 100 ms expects 2000 segments/s; RE = 1000 gives T_k = RTT × (2000 − 1000)/2000
    /// = RTT / 2.
    #[test]
    fn sample_interval_grows_with_congestion() {
        let mut tcb = Tcb::new(1000, 1040, 200.0, f64::INFINITY);
        let rtt = Duration::from_millis(100);
        tcb.srtt = Some(rtt);
        tcb.min_rtt = Some(rtt);
        let mut e = Ere::new(EreParams {
            seed_with_first_sample: true,
            ..params()
        });
        for ms in 1..=4000u64 {
            e.on_ack(&tcb, 1, Time::from_nanos(ms * 1_000_000));
        }
        assert!((e.last_interval().unwrap() - 0.05).abs() < 1e-3);
        assert!((e.rate().unwrap() - 1000.0).abs() < 1.0);
    }
}
