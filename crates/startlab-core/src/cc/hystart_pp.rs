//! HyStart++ (RFC 9406): slow start that watches the minimum RTT of each round, moves to
//! Conservative Slow Start (CSS) when it rises by more than a threshold, and to congestion
//! avoidance after `css_rounds` rounds of CSS, or back to slow start if the RTT falls again.

use super::params::{closed, param, require, AlgorithmConfig, Param, ParamError};
use super::{Ack, AckSample, CaState, ExitReason, SlowStart, Tcb};
use crate::time::{Duration, Time};
use serde::{Deserialize, Serialize};

/// The constants of RFC 9406 §4.3, with its recommended values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HystartPpConfig {
    /// MIN_RTT_THRESH, ms.
    pub min_rtt_thresh_ms: f64,
    /// MAX_RTT_THRESH, ms.
    pub max_rtt_thresh_ms: f64,
    /// MIN_RTT_DIVISOR.
    pub min_rtt_divisor: f64,
    /// N_RTT_SAMPLE: RTT samples needed in a round before it is judged.
    pub n_rtt_sample: u32,
    /// CSS_GROWTH_DIVISOR.
    pub css_growth_divisor: f64,
    /// CSS_ROUNDS.
    pub css_rounds: u32,
    /// L: at most L segments of growth per ACK when not paced (RFC 9406 §4.2 recommends 8;
    /// infinite when paced).
    pub l_limit: u32,
}

impl Default for HystartPpConfig {
    fn default() -> Self {
        HystartPpConfig {
            min_rtt_thresh_ms: 4.0,
            max_rtt_thresh_ms: 16.0,
            min_rtt_divisor: 8.0,
            n_rtt_sample: 8,
            css_growth_divisor: 4.0,
            css_rounds: 5,
            l_limit: 8,
        }
    }
}

impl AlgorithmConfig for HystartPpConfig {
    const PARAMS: &'static [Param] = &[
        param(
            "min_rtt_thresh_ms",
            "ms",
            closed(0.0, 1e4),
            "MIN_RTT_THRESH, ms",
        ),
        param(
            "max_rtt_thresh_ms",
            "ms",
            closed(0.0, 1e4),
            "MAX_RTT_THRESH, ms",
        ),
        param(
            "min_rtt_divisor",
            "",
            closed(1.0, 1000.0),
            "MIN_RTT_DIVISOR: the RTT rise threshold is last round's min RTT / this, clamped",
        ),
        param(
            "n_rtt_sample",
            "",
            closed(1.0, 1000.0),
            "N_RTT_SAMPLE: RTT samples per round before it is judged",
        ),
        param(
            "css_growth_divisor",
            "",
            closed(1.0, 1000.0),
            "CSS_GROWTH_DIVISOR: growth in CSS is slow start's / this",
        ),
        param(
            "css_rounds",
            "",
            closed(0.0, 1000.0),
            "CSS_ROUNDS: rounds of CSS before congestion avoidance",
        ),
        param(
            "l_limit",
            "segments",
            closed(1.0, 1000.0),
            "L: segments of growth per ACK at most when not paced",
        ),
    ];

    /// RFC 9406 §4.3: the RTT threshold is clamped to [MIN_RTT_THRESH, MAX_RTT_THRESH].
    fn check(&self) -> Result<(), ParamError> {
        require(
            self.min_rtt_thresh_ms <= self.max_rtt_thresh_ms,
            "min_rtt_thresh_ms",
            || {
                format!(
                    "{} is above max_rtt_thresh_ms = {}: expected min_rtt_thresh_ms <= max_rtt_thresh_ms",
                    self.min_rtt_thresh_ms, self.max_rtt_thresh_ms
                )
            },
        )
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Mode {
    SlowStart,
    /// Conservative Slow Start since `rounds` rounds, entered when the round's minimum RTT was
    /// `baseline`.
    Css {
        baseline: Duration,
        rounds: u32,
    },
    Done,
}

#[derive(Clone, Debug)]
pub struct HystartPp {
    config: HystartPpConfig,
    mode: Mode,
    /// The round ends when an ACK covers this segment (RFC 9406 `windowEnd`).
    window_end: u32,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
    /// The mode this ACK grows by: the RFC updates cwnd before judging the ACK's RTT sample.
    growth_in_css: bool,
}

impl HystartPp {
    pub fn new(config: HystartPpConfig) -> Self {
        HystartPp {
            config,
            mode: Mode::SlowStart,
            window_end: 0,
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            rtt_sample_count: 0,
            growth_in_css: false,
        }
    }

    fn rtt_thresh(&self, last: Duration) -> Duration {
        // RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR, MAX_RTT_THRESH))
        let x = (last.as_secs_f64() * 1e3 / self.config.min_rtt_divisor)
            .min(self.config.max_rtt_thresh_ms)
            .max(self.config.min_rtt_thresh_ms);
        Duration::from_secs_f64(x * 1e-3)
    }

    fn start_round(&mut self, tcb: &Tcb) {
        self.last_round_min_rtt = self.current_round_min_rtt;
        self.current_round_min_rtt = None;
        self.rtt_sample_count = 0;
        self.window_end = tcb.high_tx;
    }
}

impl SlowStart for HystartPp {
    fn init(&mut self, tcb: &mut Tcb, _now: Time) {
        self.window_end = tcb.high_tx;
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, _now: Time) {
        if self.mode == Mode::Done || !tcb.in_slow_start() {
            // Outside HyStart++ (after CSS or a loss) slow start is standard: a later slow start
            // (after a timeout) grows by the ACKed segments, not by CSS's quarter.
            self.growth_in_css = false;
            return;
        }
        // A round ends when the ACK passes windowEnd (RFC 9406 §4.2).
        if tcb.snd_una > self.window_end {
            self.start_round(tcb);
            if let Mode::Css { baseline, rounds } = self.mode {
                let rounds = rounds + 1;
                if rounds >= self.config.css_rounds {
                    // CSS_ROUNDS rounds of CSS: enter congestion avoidance.
                    self.mode = Mode::Done;
                    self.growth_in_css = false;
                    tcb.ssthresh = tcb.cwnd;
                    tcb.exit_reason_hint = Some(ExitReason::Detector("hystart++"));
                    return;
                }
                self.mode = Mode::Css { baseline, rounds };
            }
        }
        self.growth_in_css = matches!(self.mode, Mode::Css { .. });
        let Some(rtt) = sample.rtt else { return };
        self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.rtt_sample_count += 1;
        if self.rtt_sample_count < self.config.n_rtt_sample {
            return;
        }
        let (Some(current), Some(last)) = (self.current_round_min_rtt, self.last_round_min_rtt)
        else {
            return;
        };
        match self.mode {
            Mode::SlowStart if current >= last + self.rtt_thresh(last) => {
                self.mode = Mode::Css {
                    baseline: current,
                    rounds: 0,
                };
            }
            // RFC 9406 §4.2: a lower RTT in CSS means the rise was spurious: back to slow start.
            Mode::Css { baseline, .. } if current < baseline => self.mode = Mode::SlowStart,
            _ => {}
        }
    }

    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, _now: Time) -> u32 {
        // Growth is limited to L segments per ACK unless paced (RFC 9406 §4.2).
        let limit = if tcb.pacing_rate.is_some() {
            u32::MAX
        } else {
            self.config.l_limit
        };
        let n = ack.acked.min(limit) as f64;
        let inc = if self.growth_in_css {
            n / self.config.css_growth_divisor
        } else {
            n
        };
        if tcb.cwnd + inc >= tcb.ssthresh {
            tcb.cwnd = tcb.cwnd.max(tcb.ssthresh);
            return 0;
        }
        tcb.cwnd += inc;
        0
    }

    fn set_state(&mut self, _tcb: &mut Tcb, state: CaState, _now: Time) {
        // A loss in slow start or CSS ends HyStart++ (RFC 9406 §4.2); after a timeout slow
        // start is standard again ("HyStart++ ... is only used during the initial slow start";
        // RFC 9406 §4.3 allows either, this follows the recommendation for the initial one).
        if matches!(state, CaState::Recovery | CaState::Loss) {
            self.mode = Mode::Done;
            self.growth_in_css = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::{Reno, RenoConfig};
    use crate::cc::testing::Driver;
    use crate::cc::WithStartup;

    fn driver() -> Driver {
        let cc = WithStartup {
            cc: Box::new(Reno::new(RenoConfig::default())),
            startup: Box::new(HystartPp::new(HystartPpConfig::default())),
        };
        Driver::new(Box::new(cc), 10.0, f64::INFINITY)
    }

    #[test]
    fn constant_rtt_is_plain_slow_start() {
        let mut d = driver();
        let w: Vec<f64> = (0..4)
            .map(|_| d.round(Duration::from_millis(100)))
            .collect();
        assert_eq!(w, [20.0, 40.0, 80.0, 160.0]);
        assert!(d.tcb.ssthresh.is_infinite());
    }

    #[test]
    fn an_rtt_rise_moves_to_css_then_to_congestion_avoidance_after_five_rounds() {
        let mut d = driver();
        // Rounds at 100 ms: 10 -> 20 -> 40.
        d.round(Duration::from_millis(100));
        d.round(Duration::from_millis(100));
        // The next round's RTT is 115 ms: threshold = clamp(100/8, 4, 16) = 12.5 ms, and
        // 115 >= 112.5, so after the 8th sample the round switches to CSS. The first 8 ACKs grew
        // by 1 each (48), the remaining 32 by 1/4 (56).
        let w = d.round(Duration::from_millis(115));
        assert_eq!(w, 48.0 + 32.0 / 4.0);
        // Four more rounds of CSS (each grows by a quarter of the ACKs), no lower RTT: when the
        // fifth CSS round starts, ssthresh = cwnd.
        let mut cwnd = w;
        for _ in 0..4 {
            let acks = cwnd.floor();
            let next = d.round(Duration::from_millis(115));
            assert_eq!(next, cwnd + acks / 4.0);
            cwnd = next;
        }
        assert!(d.tcb.ssthresh.is_infinite());
        d.round(Duration::from_millis(115));
        assert!(d.tcb.ssthresh.is_finite(), "CA after CSS_ROUNDS");
        assert_eq!(
            d.tcb.exit_reason_hint,
            Some(ExitReason::Detector("hystart++"))
        );
    }

    #[test]
    fn a_lower_rtt_during_css_returns_to_slow_start() {
        let mut d = driver();
        d.round(Duration::from_millis(100));
        d.round(Duration::from_millis(100));
        d.round(Duration::from_millis(115)); // CSS from the 9th ACK
                                             // RTT back to 100 ms < baseline 115: slow start again after the 8th sample of the round
                                             // (the first 8 ACKs still grow by 1/4).
        let before = d.tcb.cwnd;
        let acks = before.floor();
        let w = d.round(Duration::from_millis(100));
        assert_eq!(w, before + 8.0 / 4.0 + (acks - 8.0));
    }

    /// RFC 9406 §4.2-4.3: CSS's reduced growth belongs to CSS. A timeout during CSS, or after
    /// CSS_ROUNDS ended it, leaves HyStart++; the slow start that follows the timeout is
    /// standard: from cwnd 1, 1 → 2 → 4, not 1 → 1.25.
    #[test]
    fn after_css_slow_start_grows_at_its_full_rate_again() {
        for css_rounds in [0, 5] {
            let mut d = driver();
            d.round(Duration::from_millis(100));
            d.round(Duration::from_millis(100));
            d.round(Duration::from_millis(115)); // CSS from the 9th ACK
            for _ in 0..css_rounds {
                d.round(Duration::from_millis(115));
            }
            // The window is in flight when the timer fires: ssthresh is half of it.
            d.send();
            d.timeout();
            assert!(d.tcb.ssthresh > 8.0);
            assert_eq!(d.tcb.cwnd, 1.0);
            assert_eq!(
                d.round(Duration::from_millis(100)),
                2.0,
                "{css_rounds} CSS rounds"
            );
            assert_eq!(
                d.round(Duration::from_millis(100)),
                4.0,
                "{css_rounds} CSS rounds"
            );
        }
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<HystartPpConfig>();
    }
}
