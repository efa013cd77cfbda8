//! CUBIC (Ha, dissertation ch. 5: §5.1.2 the window function, §5.1.3 the TCP-friendly region,
//! §5.1.4–5.1.5 the concave and convex regions, §5.1.6 multiplicative decrease, §5.1.7 fast
//! convergence; Figs. 5.2–5.3, the Linux CUBIC v2.2 pseudo-code).
//!
//! After a loss the window follows `W(t) = C (t − K)³ + W_max` (Eq. 5.1) in real time since the
//! start of the epoch: concave up to the plateau at `W_max`, convex past it, so the growth does not
//! depend on the RTT. Where standard TCP would be faster (short RTTs, small windows) it follows
//! the AIMD window of Eq. 5.4 instead.
//!
//! Two constant sets, selected by `constants`: `"linux"` (the default) is today's Linux
//! `net/ipv4/tcp_cubic.c` (β = 717/1024, C = 0.4, growth at most 50 % per RTT and, before the
//! first loss, at least 5 % per RTT, slow start counting acknowledged segments); `"dissertation"`
//! is §5.1 and Figs. 5.2–5.3 (β = 0.2 as a *decrease fraction*, i.e. a window multiplier of 0.8,
//! C = 0.4, no clamps beyond one segment per ACK, slow start counting ACKs). Every constant can be
//! set on its own.
//!
//! Here `beta` is always the window multiplier (window after a loss = beta × window before), as in
//! Linux; the dissertation's β of ch. 5 is `1 − beta`. Windows are in segments.
//!
//! Slow start is CUBIC's own standard slow start (Fig. 5.2: `cwnd <- cwnd + 1` per ACK; Linux
//! `tcp_slow_start`: + acknowledged segments); HyStart (ch. 6) is the separate `hystart` start-up.
//!
//! `hz` = 0 computes in continuous time with a fractional window. `hz` > 0 computes as Linux 6.18
//! `tcp_cubic.c` does (`bictcp_update`, `cubictcp_cong_avoid`, `cubictcp_recalc_ssthresh`,
//! `cubictcp_acked`): integers, whole segments, a clock of `hz` jiffies per second, t and K in
//! 1/1024 s (see [`KernelCubic`]).

use super::counting::{NewlyDelivered, SsCounting};
use super::params::{
    above, closed, open, param, require, AlgorithmConfig, Allowed, Param, ParamError,
};
use super::reno::{linux_cong_avoid_ai, linux_slow_start};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, AckSample, CaState, CongestionControl, CwndEvent, Tcb};
use crate::time::{Duration, Time};
use serde::{Deserialize, Serialize};

/// The constant set.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CubicConstants {
    Linux,
    Dissertation,
}

/// How K is computed at the start of an epoch: Ha 2009 Eq. 5.2 takes it from W_max·β, the
/// pseudo-code of Fig. 5.3 (and Linux) from W_last_max − cwnd at the start of the epoch.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KRule {
    /// Fig. 5.3 and Linux: K = ∛((W_last_max − cwnd) / C) with the window at the epoch start, so
    /// W(0) = cwnd whatever fast convergence did to W_last_max.
    PseudoCode,
    /// Eq. 5.2 as printed: K = ∛(W_max (1 − beta) / C) with W_max = W_last_max; after fast
    /// convergence W(0) is then below the window.
    Equation,
}

/// CUBIC's parameters; those left unset take the value of `constants`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, into = "CubicParams")]
pub struct CubicConfig {
    pub constants: CubicConstants,
    /// Window multiplier on a loss (linux 717/1024; dissertation 1 − 0.2 = 0.8).
    pub beta: Option<f64>,
    /// C of Eq. 5.1, segments / s³ (0.4 in both).
    pub c: Option<f64>,
    pub fast_convergence: bool,
    pub tcp_friendliness: bool,
    pub k_rule: KRule,
    /// Largest growth in one RTT of congestion avoidance, as a fraction of cwnd (= the largest
    /// increment per acknowledged segment). Linux: `cnt >= 2`, 0.5; Fig. 5.2: one segment per
    /// ACK at most, 1.0.
    pub max_growth_per_rtt: Option<f64>,
    /// While there is no `W_last_max` (before the first loss, after a timeout), the least growth
    /// per RTT as a fraction of cwnd. Linux: `cnt <= 20`, 0.05; the dissertation has none, 0.
    pub min_growth_no_loss: Option<f64>,
    /// Slow-start growth (linux: segments; dissertation: ACKs, Fig. 5.2).
    pub ss_counting: Option<SsCounting>,
    /// The kernel's clock, ticks per second: 0 = continuous time (not set by `constants`);
    /// 1..=1000 = tcp_cubic.c's integer arithmetic with jiffies of 1/hz s (CONFIG_HZ offers 100,
    /// 250, 300 and 1000; any whole rate computes).
    pub hz: u32,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            constants: CubicConstants::Linux,
            beta: None,
            c: None,
            fast_convergence: true,
            tcp_friendliness: true,
            k_rule: KRule::PseudoCode,
            max_growth_per_rtt: None,
            min_growth_no_loss: None,
            ss_counting: None,
            hz: 0,
        }
    }
}

/// The parameters with every value resolved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CubicParams {
    pub constants: CubicConstants,
    pub beta: f64,
    pub c: f64,
    pub fast_convergence: bool,
    pub tcp_friendliness: bool,
    pub k_rule: KRule,
    pub max_growth_per_rtt: f64,
    pub min_growth_no_loss: f64,
    pub ss_counting: SsCounting,
    pub hz: u32,
}

impl From<CubicConfig> for CubicParams {
    fn from(c: CubicConfig) -> Self {
        let (beta, cc, max_g, min_g, ss) = match c.constants {
            // tcp_cubic.c: beta = 717 (/1024), bic_scale = 41 (C ≈ 0.4), cnt >= 2, cnt <= 20
            // while last_max_cwnd = 0; tcp_slow_start adds the acknowledged segments.
            CubicConstants::Linux => (717.0 / 1024.0, 0.4, 0.5, 0.05, SsCounting::Segments),
            // §5.1.6 β = 0.2 (decrease fraction), Fig. 5.2 C = 0.4; integer cnt >= 1; slow start
            // cwnd <- cwnd + 1 per ACK.
            CubicConstants::Dissertation => (0.8, 0.4, 1.0, 0.0, SsCounting::Acks),
        };
        CubicParams {
            constants: c.constants,
            beta: c.beta.unwrap_or(beta),
            c: c.c.unwrap_or(cc),
            fast_convergence: c.fast_convergence,
            tcp_friendliness: c.tcp_friendliness,
            k_rule: c.k_rule,
            max_growth_per_rtt: c.max_growth_per_rtt.unwrap_or(max_g),
            min_growth_no_loss: c.min_growth_no_loss.unwrap_or(min_g),
            ss_counting: c.ss_counting.unwrap_or(ss),
            hz: c.hz,
        }
    }
}

impl CubicParams {
    fn validate(&self) -> Result<(), String> {
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err("beta (the window multiplier on a loss) must be in (0, 1)".into());
        }
        if !(self.c > 0.0 && self.c.is_finite()) {
            return Err("c must be positive".into());
        }
        if !(self.max_growth_per_rtt > 0.0 && self.min_growth_no_loss >= 0.0) {
            return Err("need max_growth_per_rtt > 0 and min_growth_no_loss >= 0".into());
        }
        Ok(())
    }

    /// What `hz` > 0 (tcp_cubic.c's integers) cannot represent, naming the parameter.
    fn check_hz(&self) -> Result<(), ParamError> {
        if self.hz == 0 {
            return Ok(());
        }
        require(self.hz <= 1000, "hz", || {
            format!(
                "invalid value {}: expected 0 (continuous time) or 1 <= hz <= 1000",
                self.hz
            )
        })?;
        require(self.k_rule == KRule::PseudoCode, "k_rule", || {
            "hz > 0 follows tcp_cubic.c, whose K is computed from the window at the epoch start: needs k_rule = \"pseudo-code\"".into()
        })?;
        require(
            self.ss_counting == SsCounting::Segments,
            "ss_counting",
            || {
                "hz > 0 follows tcp_cubic.c, whose slow start (tcp_slow_start) adds the acknowledged segments: needs ss_counting = \"segments\"".into()
            },
        )?;
        require((1..=1023).contains(&per_1024(self.beta)), "beta", || {
            format!(
                "hz > 0 uses beta in 1/1024: {} rounds to {}/1024, outside 1..1023",
                self.beta,
                per_1024(self.beta)
            )
        })?;
        require(per_1024(self.c) >= 1, "c", || {
            format!(
                "hz > 0 uses C in 1/1024 (tcp_cubic.c's cube_rtt_scale): {} rounds to 0",
                self.c
            )
        })?;
        // tcp_cong_avoid_ai adds one segment per cnt acknowledged: a growth per RTT is 1/cnt.
        let one_over_n = |x: f64| {
            let n = reciprocal(x);
            (1..=10_000).contains(&n) && (n as f64 * x - 1.0).abs() < 1e-6
        };
        require(
            one_over_n(self.max_growth_per_rtt),
            "max_growth_per_rtt",
            || {
                format!("hz > 0 bounds tcp_cong_avoid_ai's integer cnt: max_growth_per_rtt must be 1/n for a whole n from 1 to 10000 (0.5 is Linux's cnt >= 2), not {}", self.max_growth_per_rtt)
            },
        )?;
        require(
            self.min_growth_no_loss == 0.0 || one_over_n(self.min_growth_no_loss),
            "min_growth_no_loss",
            || {
                format!("hz > 0 bounds tcp_cong_avoid_ai's integer cnt: min_growth_no_loss must be 0 or 1/n for a whole n from 1 to 10000 (0.05 is Linux's cnt <= 20), not {}", self.min_growth_no_loss)
            },
        )?;
        Ok(())
    }
}

impl AlgorithmConfig for CubicConfig {
    const PARAMS: &'static [Param] = &[
        param("constants", "", Allowed::Any, "\"linux\" (tcp_cubic.c) or \"dissertation\" (§5.1, Figs. 5.2-5.3); sets the defaults below"),
        param("beta", "", open(0.0, 1.0), "window multiplier on a loss (linux 717/1024, dissertation 1 - 0.2)"),
        param("c", "segments/s^3", above(0.0, 1000.0), "C of W(t) = C (t - K)^3 + W_max, segments/s^3"),
        param("fast_convergence", "", Allowed::Any, "lower W_max to cwnd (1 + beta) / 2 on a loss below the previous W_max (§5.1.7)"),
        param("tcp_friendliness", "", Allowed::Any, "grow at least as standard TCP would (Eq. 5.4, §5.1.3)"),
        param("k_rule", "", Allowed::Any, "\"pseudo-code\": K = cbrt((W_max - cwnd) / C) at the epoch start; \"equation\": Eq. 5.2 K = cbrt(W_max (1 - beta) / C)"),
        param("max_growth_per_rtt", "", above(0.0, 10.0), "largest congestion-avoidance growth per RTT, fraction of cwnd (linux 0.5, dissertation 1)"),
        param("min_growth_no_loss", "", closed(0.0, 10.0), "least growth per RTT while no W_max is known, fraction of cwnd (linux 0.05, dissertation 0)"),
        param("ss_counting", "", Allowed::Any, "slow-start growth per ACK: \"segments\" acknowledged (linux) or 1 per ACK (\"acks\", dissertation)"),
        param("hz", "Hz", closed(0.0, 1000.0), "0: continuous time; 1 to 1000: Linux tcp_cubic.c's integer arithmetic with jiffies of 1/hz s (the kernel's CONFIG_HZ: 100, 250, 300 or 1000)"),
    ];

    fn check(&self) -> Result<(), ParamError> {
        CubicParams::from(self.clone()).check_hz()
    }
}

/// `x` in Q32.32, as the loader writes a `fixed_t` parameter for the port.
fn q32(x: f64) -> u64 {
    (x * 2f64.powi(32)).round() as u64
}

/// round(x × 1024), from the Q32.32 value as the port computes it (the same as rounding `x`
/// itself except within 2^-33 of a tie).
fn per_1024(x: f64) -> u32 {
    ((q32(x) + (1 << 21)) >> 22) as u32
}

/// round(1 / x) from the Q32.32 value, as the port computes it; 0 for x = 0.
fn reciprocal(x: f64) -> u32 {
    let q = q32(x);
    ((1u64 << 32) + q / 2)
        .checked_div(q)
        .map_or(0, |r| r as u32)
}

/// floor(∛x), exact (the port's `cubic_icbrt`). tcp_cubic.c's `cubic_root` (a table lookup and
/// one Newton step) is within 0.16 % of it: K differs by at most 5/1024 s for
/// last_max_cwnd − cwnd <= 100, 15/1024 s up to 1000.
fn icbrt(x: u64) -> u64 {
    let cube = |y: u64| (y as u128).pow(3);
    let mut y = (x as f64).cbrt() as u64;
    while y > 0 && cube(y) > x as u128 {
        y -= 1;
    }
    while cube(y + 1) <= x as u128 {
        y += 1;
    }
    y
}

/// CUBIC as Linux 6.18 `net/ipv4/tcp_cubic.c` computes it (`hz` > 0): the constants
/// `cubictcp_register` derives from the parameters and the state `struct bictcp` keeps, in the
/// kernel's integer types (u32 arithmetic wraps as the kernel's does). Times are jiffies
/// (1/hz s), t and K are 1/1024 s (BICTCP_HZ = 10), windows whole segments.
///
/// Differs from the kernel: K is the exact floor cube root ([`icbrt`]); jiffies do not wrap
/// and start at 0 with the clock; "no epoch" is `None`, not epoch_start = 0; a TCP-friendly step
/// of 0 (beta below about 0.5 at cwnd 1 or 2), where the kernel loops for ever, counts as 1.
#[derive(Clone, Debug, Default)]
struct KernelCubic {
    hz: u64,
    /// `beta`, 1/1024 (717).
    beta: u32,
    /// `cube_rtt_scale` = C × 1024 (410 = bic_scale 41 × 10).
    cube_rtt_scale: u32,
    /// `cube_factor` = 2^40 / cube_rtt_scale.
    cube_factor: u64,
    /// `beta_scale` = 8 (1024 + beta) / 3 / (1024 − beta) (15 for 717).
    beta_scale: u32,
    /// Lower bound of cnt, 1 / max_growth_per_rtt (Linux 2).
    cnt_min: u32,
    /// Upper bound of cnt while last_max_cwnd = 0, 1 / min_growth_no_loss (Linux 20); 0 = none.
    cnt_max_no_loss: u32,
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    /// Jiffies.
    last_time: u64,
    origin_point: u32,
    /// `bic_K`, 1/1024 s.
    k: u32,
    /// µs; 0 = none.
    delay_min: u32,
    /// Jiffies; `None` = 0 in the kernel (no epoch).
    epoch_start: Option<u64>,
    ack_cnt: u32,
    tcp_cwnd: u32,
    /// `tp->snd_cwnd_cnt` of `tcp_cong_avoid_ai`.
    cwnd_cnt: u32,
}

impl KernelCubic {
    /// `cubictcp_register`: the scale factors from the parameters (checked by `check_hz`).
    fn new(p: &CubicParams) -> Self {
        let beta = per_1024(p.beta);
        let cube_rtt_scale = per_1024(p.c);
        KernelCubic {
            hz: p.hz as u64,
            beta,
            cube_rtt_scale,
            cube_factor: (1u64 << 40) / cube_rtt_scale as u64,
            beta_scale: 8 * (1024 + beta) / 3 / (1024 - beta),
            cnt_min: reciprocal(p.max_growth_per_rtt),
            cnt_max_no_loss: reciprocal(p.min_growth_no_loss),
            ..Default::default()
        }
    }

    /// `bictcp_reset` (and `tcp_enter_loss` zeroing snd_cwnd_cnt).
    fn reset(&mut self) {
        *self = KernelCubic {
            hz: self.hz,
            beta: self.beta,
            cube_rtt_scale: self.cube_rtt_scale,
            cube_factor: self.cube_factor,
            beta_scale: self.beta_scale,
            cnt_min: self.cnt_min,
            cnt_max_no_loss: self.cnt_max_no_loss,
            ..Default::default()
        };
    }

    /// tcp_jiffies32 = floor(now × hz), not wrapped. The phase of the kernel's jiffy ticks
    /// against its microsecond clock is not modelled: both start at 0 here.
    fn jiffies(&self, now: Time) -> u64 {
        (now.as_nanos() as u128 * self.hz as u128 / 1_000_000_000) as u64
    }

    /// `bictcp_update`: sets `cnt` for `acked` segments at window `cwnd`, jiffy `now`.
    fn update(&mut self, cwnd: u32, acked: u32, now: u64, tcp_friendliness: bool) {
        // bictcp_update: count the acknowledged segments.
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);
        // bictcp_update: same window and at most hz/32 jiffies since the last update: keep cnt.
        if self.last_cwnd == cwnd && now.wrapping_sub(self.last_time) <= self.hz / 32 {
            return;
        }
        // bictcp_update: cnt changes at most once per jiffy (within one, only TCP friendliness).
        if !(self.epoch_start.is_some() && now == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now;
            let epoch_start = match self.epoch_start {
                Some(e) => e,
                None => {
                    // bictcp_update: a new epoch.
                    self.epoch_start = Some(now);
                    self.ack_cnt = acked;
                    self.tcp_cwnd = cwnd;
                    if self.last_max_cwnd <= cwnd {
                        self.k = 0;
                        self.origin_point = cwnd;
                    } else {
                        // bictcp_update: K = ∛(cube_factor (last_max_cwnd − cwnd)), 1/1024 s.
                        let x = self
                            .cube_factor
                            .wrapping_mul((self.last_max_cwnd - cwnd) as u64);
                        self.k = icbrt(x) as u32;
                        self.origin_point = self.last_max_cwnd;
                    }
                    now
                }
            };
            // bictcp_update: t = (jiffies − epoch_start + usecs_to_jiffies(delay_min)) << 10 / HZ;
            // usecs_to_jiffies rounds up.
            let d = (self.delay_min as u64 * self.hz).div_ceil(1_000_000);
            let t = (now.wrapping_sub(epoch_start).wrapping_add(d) << 10) / self.hz;
            let k = self.k as u64;
            let offs = k.abs_diff(t);
            // bictcp_update: delta = cube_rtt_scale offs³ >> 40 (u64, then u32).
            let delta = ((self.cube_rtt_scale as u64)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                >> 40) as u32;
            let target = if t < k {
                self.origin_point.wrapping_sub(delta)
            } else {
                self.origin_point.wrapping_add(delta)
            };
            // bictcp_update: cnt = cwnd / (target − cwnd), or 100 cwnd at or above the target.
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100u32.wrapping_mul(cwnd)
            };
            // bictcp_update: cnt <= 20 while last_max_cwnd = 0 (min_growth_no_loss).
            if self.last_max_cwnd == 0 && self.cnt_max_no_loss > 0 {
                self.cnt = self.cnt.min(self.cnt_max_no_loss);
            }
        }
        if tcp_friendliness {
            // bictcp_update: tcp_cwnd += 1 per (cwnd beta_scale) >> 3 acknowledged segments (the
            // kernel's loop in closed form; a step of 0, where the kernel would loop for ever,
            // counts as 1).
            let step = (cwnd.wrapping_mul(self.beta_scale) >> 3).max(1);
            if self.ack_cnt > step {
                let n = (self.ack_cnt - 1) / step;
                self.ack_cnt -= n * step;
                self.tcp_cwnd = self.tcp_cwnd.wrapping_add(n);
            }
            // bictcp_update: if tcp_cwnd > cwnd, cnt <= cwnd / (tcp_cwnd − cwnd).
            if self.tcp_cwnd > cwnd {
                self.cnt = self.cnt.min(cwnd / (self.tcp_cwnd - cwnd));
            }
        }
        // bictcp_update: cnt >= 2 (max_growth_per_rtt).
        self.cnt = self.cnt.max(self.cnt_min);
    }

    /// `cubictcp_recalc_ssthresh` at window `cwnd`.
    fn recalc_ssthresh(&mut self, cwnd: u32, fast_convergence: bool) -> u32 {
        self.epoch_start = None;
        self.last_max_cwnd = if fast_convergence && cwnd < self.last_max_cwnd {
            // cubictcp_recalc_ssthresh: fast convergence, cwnd (1024 + beta) / 2048.
            cwnd.wrapping_mul(1024 + self.beta) / 2048
        } else {
            cwnd
        };
        // cubictcp_recalc_ssthresh: max(cwnd beta / 1024, 2).
        (cwnd.wrapping_mul(self.beta) / 1024).max(2)
    }

    /// `cubictcp_acked` for an RTT sample of `rtt_us` at jiffy `now`.
    fn acked(&mut self, rtt_us: u32, now: u64) {
        // cubictcp_acked: samples within 1 s (hz jiffies) of the epoch start are discarded.
        if let Some(start) = self.epoch_start {
            if now.wrapping_sub(start) < self.hz {
                return;
            }
        }
        // cubictcp_acked: delay 0 counts as 1 µs; delay_min = min.
        let delay = rtt_us.max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
    }
}

#[derive(Clone, Debug)]
pub struct Cubic {
    p: CubicParams,
    /// α of the TCP-friendly window: 3β_d / (2 − β_d) with the decrease fraction β_d = 1 − beta
    /// (§5.1.3), i.e. 3 (1 − beta) / (1 + beta).
    alpha: f64,
    /// W_last_max (Fig. 5.2); 0 = none.
    w_last_max: f64,
    /// Start of the current epoch (the first congestion-avoidance ACK after a loss or reset).
    epoch_start: Option<Time>,
    /// `origin_point`: the plateau of this epoch's cubic.
    origin: f64,
    /// K, seconds.
    k: f64,
    /// dMin, the smallest RTT seen (reset by a timeout).
    d_min: Option<Duration>,
    /// W_tcp, the window standard TCP would have (Eq. 5.4, built ACK by ACK as Fig. 5.3).
    w_tcp: f64,
    last_ack: Option<Time>,
    delivered: NewlyDelivered,
    /// `hz` > 0: tcp_cubic.c's integers, which replace everything above but `last_ack`.
    kernel: Option<KernelCubic>,
}

impl Cubic {
    pub fn new(config: CubicConfig) -> Result<Self, String> {
        let p = CubicParams::from(config);
        p.validate()?;
        p.check_hz().map_err(|e| e.message)?;
        Ok(Cubic {
            kernel: (p.hz > 0).then(|| KernelCubic::new(&p)),
            alpha: 3.0 * (1.0 - p.beta) / (1.0 + p.beta),
            p,
            w_last_max: 0.0,
            epoch_start: None,
            origin: 0.0,
            k: 0.0,
            d_min: None,
            w_tcp: 0.0,
            last_ack: None,
            delivered: NewlyDelivered::default(),
        })
    }

    pub fn params(&self) -> &CubicParams {
        &self.p
    }
    /// W_last_max (`last_max_cwnd` when hz > 0).
    pub fn w_last_max(&self) -> f64 {
        match &self.kernel {
            Some(k) => k.last_max_cwnd as f64,
            None => self.w_last_max,
        }
    }
    /// K of the current epoch, seconds (`bic_K` / 1024 when hz > 0).
    pub fn k(&self) -> f64 {
        match &self.kernel {
            Some(k) => k.k as f64 / 1024.0,
            None => self.k,
        }
    }
    /// W(t) of the current epoch (Eq. 5.1), `t` seconds after its start.
    pub fn window_at(&self, t: f64) -> f64 {
        self.origin + self.p.c * (t - self.k).powi(3)
    }

    /// `cubic_reset` (Fig. 5.3), on a timeout.
    fn reset(&mut self) {
        self.w_last_max = 0.0;
        self.epoch_start = None;
        self.origin = 0.0;
        self.k = 0.0;
        self.d_min = None;
        self.w_tcp = 0.0;
        if let Some(k) = &mut self.kernel {
            k.reset();
        }
    }

    /// `cubic_update` and the window increase (Figs. 5.2–5.3) for `acked` segments.
    fn update(&mut self, tcb: &mut Tcb, acked: u32, now: Time) {
        let p = &self.p;
        let cwnd = tcb.cwnd;
        let epoch_start = match self.epoch_start {
            Some(e) => e,
            None => {
                if cwnd < self.w_last_max {
                    self.k = match p.k_rule {
                        // Fig. 5.3: K = ∛((W_last_max − cwnd) / C).
                        KRule::PseudoCode => ((self.w_last_max - cwnd) / p.c).cbrt(),
                        // Eq. 5.2: K = ∛(W_max β_d / C), β_d = 1 − beta.
                        KRule::Equation => (self.w_last_max * (1.0 - p.beta) / p.c).cbrt(),
                    };
                    self.origin = self.w_last_max;
                } else {
                    // No plateau above: grow convexly from here.
                    self.k = 0.0;
                    self.origin = cwnd;
                }
                self.w_tcp = cwnd;
                self.epoch_start = Some(now);
                now
            }
        };
        // t + dMin: the target is W one RTT ahead, W(t + RTT) (§5.1.2).
        let t = now.saturating_since(epoch_start) + self.d_min.unwrap_or(Duration::ZERO);
        // Eq. 5.1: W(t) = C (t − K)³ + W_max.
        let target = self.window_at(t.as_secs_f64());
        // Concave (§5.1.4) and convex (§5.1.5) regions alike: (W(t+RTT) − cwnd) / cwnd per ACK;
        // at or above the target, cnt = 100 cwnd: 1/100 of a segment per RTT.
        let mut inc = if target > cwnd {
            (target - cwnd) / cwnd
        } else {
            0.01 / cwnd
        };
        if self.w_last_max == 0.0 {
            inc = inc.max(p.min_growth_no_loss);
        }
        // §5.1.3, Eq. 5.4: W_tcp(t) = W_max (1 − β_d) + 3 β_d / (2 − β_d) · t / RTT, advanced by
        // α / cwnd per acknowledged segment (Fig. 5.3 `cubic_tcp_friendliness`).
        self.w_tcp += self.alpha * acked as f64 / cwnd;
        if p.tcp_friendliness && self.w_tcp > cwnd {
            // TCP mode: at least as fast as standard TCP.
            inc = inc.max((self.w_tcp - cwnd) / cwnd);
        }
        inc = inc.min(p.max_growth_per_rtt);
        tcb.cwnd += inc * acked as f64;
    }
}

/// Linux's snd_cwnd: the whole segments of cwnd, at least 1 (as the port reads it).
fn snd_cwnd(tcb: &Tcb) -> u32 {
    tcb.snd_cwnd() as u32
}

impl CongestionControl for Cubic {
    fn init(&mut self, _tcb: &mut Tcb, _now: Time) {
        self.reset();
    }

    /// §5.1.6–5.1.7 (Fig. 5.2 "Packet loss").
    fn ssthresh(&mut self, tcb: &mut Tcb, _now: Time) -> f64 {
        if let Some(k) = &mut self.kernel {
            // cubictcp_recalc_ssthresh on snd_cwnd.
            return k.recalc_ssthresh(snd_cwnd(tcb), self.p.fast_convergence) as f64;
        }
        let cwnd = tcb.cwnd;
        self.epoch_start = None;
        self.w_last_max = if self.p.fast_convergence && cwnd < self.w_last_max {
            // Fast convergence: W_last_max <- cwnd (2 − β_d) / 2 = cwnd (1 + beta) / 2.
            cwnd * (1.0 + self.p.beta) / 2.0
        } else {
            cwnd
        };
        // ssthresh <- cwnd (1 − β_d) = beta cwnd (Linux: at least 2).
        (cwnd * self.p.beta).max(2.0)
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        // Count the segments this ACK newly delivered (Linux `acked`), not those it covers.
        let mut acked = self.delivered.take(tcb, now).min(ack.acked);
        if !tcb.cwnd_limited {
            return;
        }
        if let Some(k) = &mut self.kernel {
            // cubictcp_cong_avoid: tcp_slow_start, then bictcp_update and tcp_cong_avoid_ai.
            if tcb.in_slow_start() {
                acked = linux_slow_start(tcb, acked);
                if acked == 0 {
                    return;
                }
            }
            let now = k.jiffies(now);
            k.update(snd_cwnd(tcb), acked, now, self.p.tcp_friendliness);
            linux_cong_avoid_ai(tcb, &mut k.cwnd_cnt, k.cnt, acked);
            return;
        }
        // Slow start while cwnd < ssthresh (Fig. 5.2 says cwnd <= ssthresh; the engine's rule,
        // Linux `tcp_in_slow_start`, is strict). Left-over segments go to the cubic update.
        if tcb.in_slow_start() {
            let inc = self.p.ss_counting.increase(acked);
            acked = grow_to_ssthresh(tcb, inc, acked);
            if acked == 0 {
                return;
            }
        }
        self.update(tcb, acked, now);
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        // Fig. 5.2 "Timeout: cubic_reset()"; Linux `cubictcp_state` on TCP_CA_Loss.
        if state == CaState::Loss {
            self.reset();
        }
        // tcp_init_cwnd_reduction and tcp_enter_loss zero snd_cwnd_cnt (hz > 0).
        if let Some(k) = &mut self.kernel {
            if matches!(state, CaState::Recovery | CaState::Loss | CaState::Cwr) {
                k.cwnd_cnt = 0;
            }
        }
    }

    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, now: Time) {
        // After an idle period the epoch is shifted by the idle time so the cubic does not
        // jump.
        if let Some(k) = &mut self.kernel {
            // Linux `cubictcp_cwnd_event`: idle since the last transmission (lsndtime), in
            // jiffies, not past now.
            if let (CwndEvent::TxStart, Some(start)) = (event, k.epoch_start) {
                let now = k.jiffies(now);
                let delta = (now as u32).wrapping_sub(k.jiffies(tcb.lsndtime) as u32) as i32;
                if delta > 0 {
                    k.epoch_start = Some((start + delta as u64).min(now));
                }
            }
            return;
        }
        // The paper's CUBIC measures idle from the last ACK.
        if let (CwndEvent::TxStart, Some(start), Some(last)) =
            (event, self.epoch_start, self.last_ack)
        {
            let idle = now.saturating_since(last);
            self.epoch_start = Some((start + idle).min(now));
        }
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.delivered.record(tcb, sample, now);
        self.last_ack = Some(now);
        if let Some(k) = &mut self.kernel {
            // cubictcp_acked: none without an RTT sample (rtt_us < 0); µs as sample->rtt_us.
            if let Some(rtt) = sample.rtt {
                let us = (rtt.as_nanos() / 1000).min(i32::MAX as u64) as u32;
                k.acked(us, k.jiffies(now));
            }
            return;
        }
        // Fig. 5.2: dMin <- min(dMin, RTT).
        if let Some(rtt) = sample.rtt {
            self.d_min = Some(self.d_min.map_or(rtt, |m| m.min(rtt)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::Driver;

    fn cubic(config: CubicConfig) -> Cubic {
        Cubic::new(config).unwrap()
    }

    /// The RTT of the driver's rounds.
    const RTT: Duration = Duration::from_millis(20);

    /// A driver in congestion avoidance at cwnd 100 that has just had a loss there.
    fn loss_at_100(config: CubicConfig) -> Driver {
        let mut d = Driver::new(Box::new(cubic(config)), 100.0, 100.0);
        d.fast_recovery();
        d
    }

    /// W_max = 100 with beta = 0.7 (Linux's 717/1024, rounded) and C = 0.4: the loss leaves
    /// cwnd = 70 and K = ∛((100 − 70) / 0.4) = ∛75 = 4.2172 s (Eq. 5.2: ∛(100 × 0.3 / 0.4), the
    /// same).
    /// W(0) = 70, W(K) = 100 (the plateau), W(2K) = 100 + 0.4 K³ = 100 + 30 = 130.
    ///
    /// The driver's rounds are 20 ms; on the ACKs of the round at epoch time τ the target is
    /// W(τ + 20 ms), and a round closes about 1 − 1/e of the gap (each of its ~cwnd ACKs adds
    /// (target − cwnd)/cwnd), so cwnd lags W(τ + RTT) by about 0.6 × slope × RTT: at most
    /// 0.6 × 3 C K² × 0.02 ≈ 0.26 segments at τ = 0 or 2K, nothing at the plateau.
    /// TCP friendliness is off: with 20 ms rounds standard TCP would be faster (see the next test).
    #[test]
    fn window_follows_the_cubic_function_after_a_loss_at_w_max_100() {
        let mut d = loss_at_100(CubicConfig {
            tcp_friendliness: false,
            beta: Some(0.7),
            ..Default::default()
        });
        assert_eq!(d.tcb.cwnd, 70.0);
        let k = 75f64.cbrt();
        let w = |t: f64| 100.0 + 0.4 * (t - k).powi(3);
        let rtt = RTT.as_secs_f64();
        let (mut at_k, mut at_2k) = (None, None);
        for j in 0..=((2.0 * k / rtt) as usize) {
            let cwnd = d.round(RTT);
            // This round's ACKs came at τ = j × RTT (the epoch starts on the first).
            let tau = j as f64 * rtt;
            assert!(
                (cwnd - w(tau + rtt)).abs() < 0.5,
                "τ {tau}: {cwnd} vs {}",
                w(tau + rtt)
            );
            if at_k.is_none() && tau + rtt >= k {
                at_k = Some(cwnd);
            }
            if tau + rtt <= 2.0 * k {
                at_2k = Some((cwnd, tau + rtt));
            }
        }
        let at_k = at_k.unwrap();
        assert!((at_k - 100.0).abs() < 0.05, "W(K) {at_k}");
        let (at_2k, t) = at_2k.unwrap();
        // The last round ends within one RTT (slope 21 segments/s, 0.43 segments) of 2K.
        assert!((2.0 * k - t) < rtt + 1e-9);
        assert!((at_2k - 130.0).abs() < 0.8, "W(2K) {at_2k}");
    }

    /// TCP-friendly region (§5.1.3): with 20 ms rounds, standard TCP (α = 3 × 0.3 / 1.7 = 0.529
    /// segments per RTT from W_max beta = 70, Eq. 5.4) is faster than the cubic early in the
    /// epoch: after 50 rounds (1 s) W_tcp ≈ 70 + 26.5 = 96.5 while W(1.02 s) = 100 − 0.4
    /// (4.217 − 1.02)³ = 86.9. cwnd follows W_tcp.
    #[test]
    fn with_short_rtts_the_window_follows_standard_tcp() {
        let mut d = loss_at_100(CubicConfig {
            beta: Some(0.7),
            ..Default::default()
        });
        for _ in 0..50 {
            d.round(RTT);
        }
        let alpha = 3.0 * 0.3 / 1.7;
        let want = 70.0 + alpha * 50.0;
        // W_tcp adds α × floor(cwnd) / cwnd per round, a little under α.
        assert!(
            d.tcb.cwnd < want && d.tcb.cwnd > want - 1.0,
            "{} vs {want}",
            d.tcb.cwnd
        );
    }

    /// Dissertation constants: β = 0.2 (multiplier 0.8): ssthresh = 80 at W_max = 100,
    /// K = ∛(20 / 0.4) = ∛50 = 3.684 s, W(2K) = 100 + 0.4 × 50 = 120.
    #[test]
    fn dissertation_constants() {
        let d = loss_at_100(CubicConfig {
            constants: CubicConstants::Dissertation,
            ..Default::default()
        });
        assert_eq!(d.tcb.ssthresh, 80.0);
        let c = cubic(CubicConfig {
            constants: CubicConstants::Dissertation,
            ..Default::default()
        });
        assert_eq!(c.params().beta, 0.8);
        assert_eq!(c.params().ss_counting, SsCounting::Acks);
        // K as computed at the epoch start.
        let mut c = c;
        let mut t = Tcb::new(1000, 1040, 100.0, 100.0);
        t.ssthresh = c.ssthresh(&mut t, Time::ZERO);
        t.cwnd = t.ssthresh;
        c.cong_avoid(
            &mut t,
            &Ack {
                acked: 1,
                ack_seq: 1,
            },
            Time::ZERO,
        );
        assert!((c.k() - 50f64.cbrt()).abs() < 1e-12);
        assert!((c.window_at(2.0 * c.k()) - 120.0).abs() < 1e-9);
        assert!((c.window_at(c.k()) - 100.0).abs() < 1e-12);
    }

    /// beta = 0.7. Loss at 100 (W_last_max = 100), then at 90 < 100: fast convergence (§5.1.7)
    /// sets W_last_max = 90 × (1 + 0.7) / 2 = 76.5; ssthresh = 63. At the next epoch (cwnd 63),
    /// K = ∛((76.5 − 63) / 0.4) = ∛33.75 by the pseudo-code, ∛(76.5 × 0.3 / 0.4) = ∛57.375 by
    /// Eq. 5.2 as printed. Without fast convergence W_last_max = 90.
    #[test]
    fn fast_convergence_and_the_two_readings_of_k() {
        let ca_ack = Ack {
            acked: 1,
            ack_seq: 1,
        };
        for (rule, k3) in [(KRule::PseudoCode, 33.75f64), (KRule::Equation, 57.375)] {
            let mut c = cubic(CubicConfig {
                k_rule: rule,
                beta: Some(0.7),
                ..Default::default()
            });
            let mut t = Tcb::new(1000, 1040, 100.0, 100.0);
            assert!((c.ssthresh(&mut t, Time::ZERO) - 70.0).abs() < 1e-12);
            t.cwnd = 90.0;
            assert!((c.ssthresh(&mut t, Time::ZERO) - 63.0).abs() < 1e-12);
            assert!((c.w_last_max() - 76.5).abs() < 1e-12);
            t.cwnd = 63.0;
            t.ssthresh = 63.0;
            c.cong_avoid(&mut t, &ca_ack, Time::ZERO);
            assert!((c.k() - k3.cbrt()).abs() < 1e-9, "{rule:?}");
        }
        let mut c = cubic(CubicConfig {
            fast_convergence: false,
            ..Default::default()
        });
        let mut t = Tcb::new(1000, 1040, 100.0, 100.0);
        c.ssthresh(&mut t, Time::ZERO);
        t.cwnd = 90.0;
        c.ssthresh(&mut t, Time::ZERO);
        assert_eq!(c.w_last_max(), 90.0);
    }

    /// A timeout resets CUBIC (Fig. 5.2): no W_last_max, so the next epoch grows convexly from
    /// the window it starts at (K = 0, origin = cwnd).
    #[test]
    fn a_timeout_resets_the_epoch_and_w_last_max() {
        let mut d = loss_at_100(CubicConfig::default());
        d.round(RTT);
        d.timeout();
        d.tcb.cwnd = 50.0;
        d.tcb.ssthresh = 50.0;
        d.round(RTT);
        // Linux constants: before a loss at least 5 % per RTT (cnt <= 20).
        assert!((d.tcb.cwnd - 52.5).abs() < 0.01, "{}", d.tcb.cwnd);
    }

    /// Slow start: Linux counts acknowledged segments, Fig. 5.2 counts ACKs.
    #[test]
    fn slow_start_counting() {
        for (constants, want) in [
            (CubicConstants::Linux, 4.0),
            (CubicConstants::Dissertation, 3.0),
        ] {
            let c = cubic(CubicConfig {
                constants,
                ..Default::default()
            });
            let mut d = Driver::new(Box::new(c), 2.0, f64::INFINITY);
            d.send();
            d.advance(RTT);
            d.ack(2);
            assert_eq!(d.tcb.cwnd, want, "{constants:?}");
        }
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<CubicConfig>();
    }

    // hz > 0: tcp_cubic.c's integers. Jiffies at HZ 250 are 4 ms: time 4000 ms is jiffy 1000.

    fn ms(ms: u64) -> Time {
        Time::from_nanos(ms * 1_000_000)
    }

    /// One ACK of `n` segments at `at`, with an RTT sample or none: pkts_acked, then cong_avoid.
    fn ack(c: &mut Cubic, t: &mut Tcb, at: Time, n: u32, rtt: Option<Duration>) {
        let sample = AckSample {
            acked: n,
            rtt,
            prior_in_flight: 0,
        };
        c.pkts_acked(t, &sample, at);
        c.cong_avoid(
            t,
            &Ack {
                acked: n,
                ack_seq: 0,
            },
            at,
        );
    }

    fn kernel(c: &Cubic) -> &KernelCubic {
        c.kernel.as_ref().unwrap()
    }

    /// HZ 250, default (Linux) constants otherwise: an RTT sample of 40 ms at 3.9 s (no epoch
    /// yet, so it is kept: delay_min = 40000 µs), then a loss at cwnd 100: last_max_cwnd = 100,
    /// ssthresh = 100 × 717 / 1024 = 70 (70.02), cwnd = 70.
    fn hz250_after_a_loss_at_100(config: CubicConfig) -> (Cubic, Tcb) {
        let mut c = cubic(CubicConfig { hz: 250, ..config });
        let mut t = Tcb::new(1000, 1040, 100.0, 100.0);
        let sample = AckSample {
            acked: 1,
            rtt: Some(Duration::from_millis(40)),
            prior_in_flight: 0,
        };
        c.pkts_acked(&mut t, &sample, ms(3900));
        t.ssthresh = c.ssthresh(&mut t, ms(3950));
        t.cwnd = t.ssthresh;
        assert_eq!(
            (t.cwnd, kernel(&c).last_max_cwnd, kernel(&c).delay_min),
            (70.0, 100, 40_000)
        );
        (c, t)
    }

    /// t in 1/1024 s from jiffies. cube_factor = 2^40 / 410 = 2681735677; K = ∛(2681735677 ×
    /// (100 − 70)) = ∛80452070310 = 4316 (4316.97; 4317³ = 80453723013 is above).
    /// usecs_to_jiffies(40 ms) = 10. At the epoch start (jiffy 1000): t = 10 × 1024 / 250 = 40,
    /// delta = 410 × (4316 − 40)³ >> 40 = 29 (29.15), target = 100 − 29 = 71, cnt = 70 / 1 = 70.
    /// At jiffy 1025: t = (25 + 10) × 1024 / 250 = 143 (143.36), delta = 410 × 4173³ >> 40 = 27
    /// (27.10), target 73, cnt = 70 / 3 = 23; an ACK of 46 segments brings snd_cwnd_cnt to
    /// 1 + 46 = 47 = 2 × 23 + 1: cwnd 72.
    #[test]
    fn hz_t_is_in_jiffies_then_1024ths_of_a_second() {
        let (mut c, mut t) = hz250_after_a_loss_at_100(CubicConfig {
            tcp_friendliness: false,
            ..Default::default()
        });
        ack(&mut c, &mut t, ms(4000), 1, None);
        let k = kernel(&c);
        assert_eq!(
            (k.epoch_start, k.k, k.origin_point, k.cnt),
            (Some(1000), 4316, 100, 70)
        );
        assert_eq!((t.cwnd, k.cwnd_cnt), (70.0, 1));
        assert_eq!(c.k(), 4316.0 / 1024.0);
        ack(&mut c, &mut t, ms(4100), 46, None);
        let k = kernel(&c);
        assert_eq!((k.last_time, k.cnt), (1025, 23));
        assert_eq!((t.cwnd, k.cwnd_cnt), (72.0, 1));
    }

    /// cnt changes at most once per jiffy. After the loss at 100 (cnt 70 at jiffy 1000):
    /// 4.008 s (jiffy 1002), 69 segments: same cwnd within hz/32, cnt kept; cwnd_cnt 70: cwnd 71.
    /// 4.009 s (jiffy 1002), 1 segment: cwnd changed, so cnt is recomputed: t = 12 × 1024 / 250
    /// = 49, delta = 410 × 4267³ >> 40 = 28, target 72, cnt = 71 / 1 = 71.
    /// 4.010 s, 70 segments: cwnd_cnt 71: cwnd 72. 4.011 s, 1 segment: cwnd changed, but it is
    /// still jiffy 1002: cnt stays 71 (recomputed it would be 100 × 72, target 72 <= cwnd).
    /// 4.012 s (jiffy 1003): t = 53, target still 72: cnt = 7200.
    #[test]
    fn hz_cnt_is_recomputed_at_most_once_per_jiffy() {
        let (mut c, mut t) = hz250_after_a_loss_at_100(CubicConfig {
            tcp_friendliness: false,
            ..Default::default()
        });
        ack(&mut c, &mut t, ms(4000), 1, None);
        ack(&mut c, &mut t, ms(4008), 69, None);
        assert_eq!(
            (t.cwnd, kernel(&c).cnt, kernel(&c).last_time),
            (71.0, 70, 1000)
        );
        ack(&mut c, &mut t, ms(4009), 1, None);
        assert_eq!(
            (kernel(&c).cnt, kernel(&c).last_time, kernel(&c).last_cwnd),
            (71, 1002, 71)
        );
        ack(&mut c, &mut t, ms(4010), 70, None);
        assert_eq!(t.cwnd, 72.0);
        ack(&mut c, &mut t, ms(4011), 1, None);
        assert_eq!((kernel(&c).cnt, kernel(&c).last_cwnd), (71, 71));
        ack(&mut c, &mut t, ms(4012), 1, None);
        assert_eq!(
            (kernel(&c).cnt, kernel(&c).last_cwnd, kernel(&c).last_time),
            (7200, 72, 1003)
        );
    }

    /// With the window unchanged, cnt is kept for hz/32 = 7 jiffies (28 ms at HZ 250). At jiffy
    /// 1007 the target has moved (t = 17 × 1024 / 250 = 69, delta = 410 × 4247³ >> 40 = 28,
    /// target 72: cnt would be 70 / 2 = 35) but cnt stays 70 and last_time 1000; at jiffy 1008
    /// (t = 73, delta 28) it becomes 35.
    #[test]
    fn hz_same_window_keeps_cnt_for_hz_over_32_jiffies() {
        let (mut c, mut t) = hz250_after_a_loss_at_100(CubicConfig {
            tcp_friendliness: false,
            ..Default::default()
        });
        ack(&mut c, &mut t, ms(4000), 1, None);
        ack(&mut c, &mut t, ms(4028), 1, None);
        assert_eq!(
            (t.cwnd, kernel(&c).cnt, kernel(&c).last_time),
            (70.0, 70, 1000)
        );
        // ack_cnt counts even when bictcp_update returns early.
        assert_eq!(kernel(&c).ack_cnt, 2);
        ack(&mut c, &mut t, ms(4032), 1, None);
        assert_eq!(
            (t.cwnd, kernel(&c).cnt, kernel(&c).last_time),
            (70.0, 35, 1008)
        );
    }

    /// TCP friendliness counts whole segments: beta_scale = 8 × (1024 + 717) / 3 / (1024 − 717)
    /// = 4642 / 307 = 15, so tcp_cwnd grows by one per (cwnd × 15) >> 3 acknowledged segments:
    /// 131 at cwnd 70, 133 at 71. A loss at 70 that leaves cwnd at 70 (last_max_cwnd = cwnd, so
    /// K = 0, origin 70, target 70 + 0: cnt = 100 × 70 = 7000). An ACK of 132: ack_cnt 132 > 131,
    /// tcp_cwnd 71, ack_cnt 1; cnt = min(7000, 70 / (71 − 70)) = 70; snd_cwnd_cnt 132: cwnd 71,
    /// 62 left. In the same jiffy an ACK of 262: ack_cnt 263 > 133, tcp_cwnd 72, ack_cnt 130;
    /// cnt = min(70, 71 / 1) = 70; snd_cwnd_cnt 62 + 262 = 324 = 4 × 70 + 44: cwnd 75.
    #[test]
    fn hz_tcp_friendliness_counts_whole_segments() {
        let mut c = cubic(CubicConfig {
            hz: 250,
            ..Default::default()
        });
        assert_eq!(kernel(&c).beta_scale, 15);
        let mut t = Tcb::new(1000, 1040, 70.0, 70.0);
        assert_eq!(c.ssthresh(&mut t, ms(3900)), 49.0);
        ack(&mut c, &mut t, ms(4000), 132, None);
        let k = kernel(&c);
        assert_eq!(
            (k.k, k.origin_point, k.tcp_cwnd, k.ack_cnt, k.cnt),
            (0, 70, 71, 1, 70)
        );
        assert_eq!((t.cwnd, k.cwnd_cnt), (71.0, 62));
        ack(&mut c, &mut t, ms(4001), 262, None);
        let k = kernel(&c);
        assert_eq!((k.tcp_cwnd, k.ack_cnt, k.cnt), (72, 130, 70));
        assert_eq!((t.cwnd, k.cwnd_cnt), (75.0, 44));
        // Without it, the cubic alone: cnt 7000, 132 segments add nothing.
        let mut c = cubic(CubicConfig {
            hz: 250,
            tcp_friendliness: false,
            ..Default::default()
        });
        let mut t = Tcb::new(1000, 1040, 70.0, 70.0);
        c.ssthresh(&mut t, ms(3900));
        ack(&mut c, &mut t, ms(4000), 132, None);
        assert_eq!((t.cwnd, kernel(&c).cnt), (70.0, 7000));
    }

    /// cubictcp_recalc_ssthresh in integers: a loss at 100 gives ssthresh 100 × 717 / 1024 = 70
    /// (70.02) and last_max_cwnd 100; then at 90 < 100, fast convergence: last_max_cwnd =
    /// 90 × 1741 / 2048 = 76 (76.5), ssthresh = 90 × 717 / 1024 = 63 (63.02); at 2: 2 × 717 / 1024
    /// = 1, at least 2, last_max_cwnd = 2 × 1741 / 2048 = 1. Without fast convergence the loss at
    /// 90 leaves last_max_cwnd = 90.
    #[test]
    fn hz_ssthresh_and_last_max_cwnd_are_integers() {
        let mut c = cubic(CubicConfig {
            hz: 250,
            ..Default::default()
        });
        let mut t = Tcb::new(1000, 1040, 100.0, 100.0);
        ack(&mut c, &mut t, ms(4000), 1, None);
        assert!(kernel(&c).epoch_start.is_some());
        assert_eq!(c.ssthresh(&mut t, ms(4100)), 70.0);
        assert_eq!((c.w_last_max(), kernel(&c).epoch_start), (100.0, None));
        t.cwnd = 90.0;
        assert_eq!(c.ssthresh(&mut t, ms(4200)), 63.0);
        assert_eq!(c.w_last_max(), 76.0);
        t.cwnd = 2.0;
        assert_eq!(c.ssthresh(&mut t, ms(4300)), 2.0);
        assert_eq!(c.w_last_max(), 1.0);
        let mut c = cubic(CubicConfig {
            hz: 250,
            fast_convergence: false,
            ..Default::default()
        });
        let mut t = Tcb::new(1000, 1040, 100.0, 100.0);
        c.ssthresh(&mut t, ms(4100));
        t.cwnd = 90.0;
        c.ssthresh(&mut t, ms(4200));
        assert_eq!(c.w_last_max(), 90.0);
    }

    /// cubictcp_acked: RTT samples within HZ jiffies (1 s) of the epoch start are discarded.
    /// The epoch starts at jiffy 1000 (4 s); 30 ms samples at 4.5 s (jiffy 1125) and 4.996 s
    /// (jiffy 1249) are dropped, the one at 5 s (jiffy 1250) is kept; no sample changes nothing;
    /// a sample of 0 counts as 1 µs.
    #[test]
    fn hz_delay_samples_right_after_the_epoch_start_are_discarded() {
        let (mut c, mut t) = hz250_after_a_loss_at_100(CubicConfig::default());
        ack(&mut c, &mut t, ms(4000), 1, None);
        assert_eq!(kernel(&c).epoch_start, Some(1000));
        let rtt = Some(Duration::from_millis(30));
        for at in [4500, 4996] {
            ack(&mut c, &mut t, ms(at), 1, rtt);
            assert_eq!(kernel(&c).delay_min, 40_000, "{at} ms");
        }
        ack(&mut c, &mut t, ms(5000), 1, rtt);
        assert_eq!(kernel(&c).delay_min, 30_000);
        ack(&mut c, &mut t, ms(5100), 1, None);
        assert_eq!(kernel(&c).delay_min, 30_000);
        ack(&mut c, &mut t, ms(5200), 1, Some(Duration::ZERO));
        assert_eq!(kernel(&c).delay_min, 1);
        // A timeout (TCP_CA_Loss) resets everything, delay_min and snd_cwnd_cnt included.
        c.set_state(&mut t, CaState::Loss, ms(5300));
        let k = kernel(&c);
        assert_eq!(
            (k.delay_min, k.epoch_start, k.last_max_cwnd, k.cwnd_cnt),
            (0, None, 0, 0)
        );
    }

    /// Slow start with hz > 0 is tcp_slow_start: whole segments up to ssthresh, the rest to
    /// bictcp_update (here the first epoch: no last_max_cwnd, K = 0, cnt <= 20).
    #[test]
    fn hz_slow_start_is_tcp_slow_start() {
        let mut c = cubic(CubicConfig {
            hz: 250,
            ..Default::default()
        });
        let mut t = Tcb::new(1000, 1040, 10.0, 12.0);
        ack(&mut c, &mut t, ms(4000), 5, None);
        // 2 segments reach ssthresh 12; 3 go to the update: cnt = min(100 × 12, 20) = 20.
        let k = kernel(&c);
        assert_eq!(
            (t.cwnd, k.cnt, k.cwnd_cnt, k.epoch_start),
            (12.0, 20, 3, Some(1000))
        );
    }

    /// What hz > 0 cannot represent is refused, naming the parameter.
    #[test]
    fn hz_parameters_that_the_kernel_arithmetic_cannot_represent_are_refused() {
        let refusal = |p: serde_json::Value| {
            crate::cc::params::parse::<CubicConfig>(p.as_object().unwrap())
                .unwrap_err()
                .name
                .unwrap()
        };
        use serde_json::json;
        assert_eq!(refusal(json!({"hz": 1001})), "hz");
        assert_eq!(refusal(json!({"hz": 2.5})), "hz");
        assert_eq!(refusal(json!({"hz": 250, "k_rule": "equation"})), "k_rule");
        assert_eq!(
            refusal(json!({"hz": 250, "constants": "dissertation"})),
            "ss_counting"
        );
        assert_eq!(
            refusal(json!({"hz": 250, "max_growth_per_rtt": 0.3})),
            "max_growth_per_rtt"
        );
        assert_eq!(
            refusal(json!({"hz": 250, "min_growth_no_loss": 0.07})),
            "min_growth_no_loss"
        );
        assert_eq!(refusal(json!({"hz": 250, "beta": 0.0001})), "beta");
        assert_eq!(refusal(json!({"hz": 250, "c": 0.0001})), "c");
        for ok in [
            json!({"hz": 0, "k_rule": "equation", "max_growth_per_rtt": 0.3}),
            json!({"hz": 100}),
            json!({"hz": 1}),
            json!({"hz": 1000, "constants": "dissertation", "ss_counting": "segments"}),
            json!({"hz": 300, "max_growth_per_rtt": 0.3333333, "min_growth_no_loss": 0}),
        ] {
            let config = crate::cc::params::parse::<CubicConfig>(ok.as_object().unwrap()).unwrap();
            Cubic::new(config).unwrap();
        }
        let c = cubic(CubicConfig {
            hz: 1000,
            constants: CubicConstants::Dissertation,
            ss_counting: Some(SsCounting::Segments),
            ..Default::default()
        });
        // Dissertation: beta 0.8 = 819/1024, cnt >= 1, no bound before a loss.
        let k = kernel(&c);
        assert_eq!(
            (k.beta, k.cube_rtt_scale, k.cnt_min, k.cnt_max_no_loss),
            (819, 410, 1, 0)
        );
        assert_eq!(
            kernel(&cubic(CubicConfig {
                hz: 250,
                ..Default::default()
            }))
            .cnt_max_no_loss,
            20
        );
    }

    /// The eBPF port (crates/startlab-bpf/bpf/cc/cubic.bpf.c), run by the simulator's VM beside
    /// the model hook by hook (`cc::bpf::Shadow`), computes the same whole windows and ssthresh
    /// with hz > 0: slow start, losses, a timeout, ACKs spread over many jiffies.
    #[test]
    fn hz_the_ebpf_port_computes_what_the_model_computes() {
        if let Err(e) = startlab_bpf::Controllers::built() {
            eprintln!("skipped: {e}");
            return;
        }
        for (hz, friendly, fast) in [
            (250, true, true),
            (100, true, false),
            (1000, false, true),
            (300, true, true),
        ] {
            let mut params = crate::cc::registry::Params::new();
            params.insert("hz".into(), serde_json::json!(hz));
            params.insert("tcp_friendliness".into(), serde_json::json!(friendly));
            params.insert("fast_convergence".into(), serde_json::json!(fast));
            let (f, log) =
                crate::cc::controller::factory("cubic", &params, "default", &Default::default())
                    .unwrap()
                    .shadowed()
                    .unwrap();
            let mut d = Driver::new(f.build(), 10.0, 16.0);
            let mut rounds = 0u64;
            let mut round = |d: &mut Driver, n: u64| {
                for _ in 0..n {
                    rounds += 1;
                    // RTTs of 17 to 61 ms less 3 ms every 40 rounds (new minima keep coming,
                    // also within 1 s of an epoch start), the ACKs spread over 0 to 30 ms.
                    let rtt = Duration::from_micros(
                        17_000 + (rounds * 7919) % 44_000 - (rounds / 40).min(5) * 3000,
                    );
                    let spread = Duration::from_micros((rounds * 4513) % 30_000);
                    d.round_spread(rtt, spread);
                }
            };
            // Slow start to 16, an epoch from last_max_cwnd 0; losses every 25 rounds, which keep
            // the window small enough for TCP friendliness to set cnt; longer epochs (one loss
            // below last_max_cwnd: fast convergence), a timeout and slow start again.
            round(&mut d, 30);
            for _ in 0..12 {
                d.fast_recovery();
                round(&mut d, 25);
            }
            round(&mut d, 30);
            // Idle for 0.3 s after the last transmission: TX_START shifts the epoch.
            d.tcb.lsndtime = d.now;
            d.advance(Duration::from_millis(300));
            d.cc.cwnd_event(&mut d.tcb, CwndEvent::TxStart, d.now);
            round(&mut d, 30);
            d.fast_recovery();
            round(&mut d, 90);
            d.fast_recovery();
            round(&mut d, 15);
            d.fast_recovery();
            round(&mut d, 60);
            d.timeout();
            round(&mut d, 40);
            let l = log.lock().unwrap();
            let at = format!("hz {hz}: {l:?}");
            assert!(l.error.is_none() && l.acks > 10_000, "{at}");
            assert_eq!(
                (l.misses, l.max_cwnd_gap, l.max_ssthresh_gap),
                (0, 0.0, 0.0),
                "{at}"
            );
        }
    }
}
