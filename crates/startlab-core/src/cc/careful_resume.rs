//! Careful Resume (draft-ietf-tsvwg-careful-resume-24, now RFC 9959): a connection reuses
//! the capacity and minimum RTT an earlier connection between the same hosts saw, in phases
//! (§3): Reconnaissance (slow start from the initial window while the path is confirmed),
//! Unvalidated (cwnd jumps to half the saved window, paced over the current RTT), Validating
//! (the jump's packets are acknowledged), then normal congestion control, or Safe Retreat on
//! congestion (cwnd to half of what was validated, the saved state deleted).
//!
//! Windows and sequence numbers count segments. Its slow start grows by the segments each ACK
//! acknowledges, as Linux's `tcp_slow_start` and QUIC's byte counting do. The saved state comes from the sender's path
//! cache ([`crate::tcp::path_cache`]); the simulation hands it over when the connection opens
//! and saves what the connection observed when it closes (§3.1: cwnd in congestion
//! avoidance, half of it while still in slow start, nothing below 4 initial windows).

use super::params::{closed, param, AlgorithmConfig, Param};
use super::slow_start::grow_to_ssthresh;
use super::{Ack, AckSample, CaState, PathObservation, SlowStart, Tcb};
use crate::tcp::path_cache::ResumeState;
use crate::time::{Duration, Time};
use crate::units::Rate;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CarefulResumeConfig {
    /// §2.4 Beta: ssthresh = PipeSize × beta when Safe Retreat ends.
    pub beta: f64,
    /// §2.4 max_jump, segments: the jump is min(max_jump, saved_cwnd / 2).
    pub max_jump: f64,
    /// §4.2.1: a current RTT above this many saved RTTs means another path (guidance; the
    /// draft's MUST is the lower bound, saved_rtt / 2).
    pub rtt_max_factor: f64,
    /// §3.1 Lifetime: how long saved state may be used, seconds.
    pub lifetime: f64,
    /// §4.1: a window below this many initial windows is not saved.
    pub min_saved_iw: f64,
}

impl Default for CarefulResumeConfig {
    fn default() -> Self {
        CarefulResumeConfig {
            beta: 0.5,
            max_jump: 1e7,
            rtt_max_factor: 10.0,
            lifetime: 600.0,
            min_saved_iw: 4.0,
        }
    }
}

impl AlgorithmConfig for CarefulResumeConfig {
    const PARAMS: &'static [Param] = &[
        param("beta", "", closed(0.5, 1.0), "ssthresh = PipeSize × beta when Safe Retreat ends (§3.5)"),
        param("max_jump", "segments", closed(1.0, 1e7), "the jump is min(max_jump, saved_cwnd / 2) (§3.3)"),
        param("rtt_max_factor", "", closed(1.0, 1000.0), "saved state is not used if the RTT in Reconnaissance exceeds this many saved RTTs (§4.2.1)"),
        param("lifetime", "s", closed(1.0, 86400.0), "how long saved state may be used (§3.1); the draft sets no default"),
        param("min_saved_iw", "", closed(0.0, 1000.0), "a window below this many initial windows is not saved (§4.1)"),
    ];
}

/// The phases of §3.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// No saved state, or Careful Resume has ended: the controller's own slow start.
    Normal,
    Reconnaissance,
    Unvalidated,
    Validating,
    SafeRetreat,
}

#[derive(Clone, Debug)]
pub struct CarefulResume {
    config: CarefulResumeConfig,
    phase: Phase,
    saved: Option<ResumeState>,
    /// The initial window (the first data: Reconnaissance ends once it is acknowledged).
    iw: f64,
    min_rtt_recon: Option<Duration>,
    latest_rtt: Option<Duration>,
    congested: bool,
    /// PipeSize (§2.4): the flight at the jump, then what was acknowledged of what followed.
    pipe_at_jump: f64,
    jump: f64,
    /// First segment sent in Unvalidated, and the last, once known.
    first_unvalidated: u32,
    last_unvalidated: u32,
    unvalidated_since: Time,
    /// Safe Retreat was entered: the saved state is deleted (§3.5).
    retreated: bool,
}

impl CarefulResume {
    pub fn new(config: CarefulResumeConfig) -> Self {
        CarefulResume {
            config,
            phase: Phase::Normal,
            saved: None,
            iw: 0.0,
            min_rtt_recon: None,
            latest_rtt: None,
            congested: false,
            pipe_at_jump: 0.0,
            jump: 0.0,
            first_unvalidated: 0,
            last_unvalidated: 0,
            unvalidated_since: Time::ZERO,
            retreated: false,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// PipeSize: the flight at the jump plus the segments sent after it that were acknowledged
    /// (cumulatively: a SACKed segment above a hole is not counted until the hole is filled).
    fn pipe_size(&self, tcb: &Tcb) -> f64 {
        self.pipe_at_jump + tcb.snd_una.saturating_sub(self.first_unvalidated) as f64
    }

    /// §3.2 Reconnaissance → Unvalidated: the initial data acknowledged, no congestion, the
    /// window full (the sender has more to send than slow start allows), and the RTT within
    /// (saved_rtt / 2, rtt_max_factor × saved_rtt].
    fn confirm_path(&mut self, tcb: &mut Tcb, now: Time) {
        let Some(saved) = &self.saved else { return };
        if (tcb.snd_una as f64) < self.iw || !tcb.cwnd_limited {
            return;
        }
        let Some(min_rtt) = self.min_rtt_recon else {
            return;
        };
        let ns = |d: Duration| d.as_nanos() as f64;
        let jump = (saved.cwnd / 2.0).min(self.config.max_jump);
        let rtt_ok = ns(min_rtt) > ns(saved.min_rtt) / 2.0
            && ns(min_rtt) <= ns(saved.min_rtt) * self.config.rtt_max_factor;
        if !rtt_ok || jump <= tcb.cwnd {
            self.phase = Phase::Normal;
            return;
        }
        // §3.3 on entry: PipeSize = flight size; cwnd = jump; the next segment is the first
        // unvalidated one; pacing over the current RTT.
        self.pipe_at_jump = tcb.in_flight as f64;
        self.jump = jump;
        tcb.cwnd = jump;
        self.first_unvalidated = tcb.high_tx;
        self.unvalidated_since = now;
        self.phase = Phase::Unvalidated;
        self.pace(tcb);
    }

    /// §4.3.2: jump_cwnd spread over the current RTT (wire bytes).
    fn pace(&self, tcb: &mut Tcb) {
        if let Some(rtt) = self.latest_rtt.filter(|r| !r.is_zero()) {
            let bits = self.jump * tcb.wire_bytes as f64 * 8.0;
            let bps = (bits / rtt.as_secs_f64()).clamp(1.0, u64::MAX as f64) as u64;
            tcb.pacing_rate = Some(Rate::from_bps(bps));
        }
    }

    /// §3.3 "Check flight_size", when all unvalidated packets are sent, the first is
    /// acknowledged, or an RTT has passed.
    fn check_flight(&mut self, tcb: &mut Tcb, now: Time) {
        let all_sent = tcb.in_flight as f64 >= tcb.cwnd.floor();
        let first_acked = tcb.snd_una > self.first_unvalidated;
        let rtt_passed = self
            .latest_rtt
            .is_some_and(|r| now.saturating_since(self.unvalidated_since) > r);
        if !(all_sent || first_acked || rtt_passed) {
            return;
        }
        tcb.pacing_rate = None;
        let flight = tcb.in_flight as f64;
        let pipe = self.pipe_size(tcb);
        if flight < self.iw || flight <= pipe {
            // Rate-limited: the jump was not used; back to normal with what was validated.
            tcb.cwnd = pipe.max(self.iw);
            self.phase = Phase::Normal;
        } else {
            tcb.cwnd = flight;
            self.last_unvalidated = tcb.high_tx.saturating_sub(1);
            self.phase = Phase::Validating;
        }
    }

    /// What the connection saves of its path when it closes (§3.1); `None`: nothing.
    pub fn observation(&self, tcb: &Tcb, now: Time) -> Option<ResumeState> {
        if self.retreated || matches!(self.phase, Phase::Unvalidated | Phase::Validating) {
            return None;
        }
        // §3.1: not an overshooting slow-start window: half of it while still in slow start.
        let cwnd = if tcb.in_slow_start() {
            tcb.cwnd / 2.0
        } else {
            tcb.cwnd
        };
        let min_rtt = tcb.min_rtt?;
        (cwnd >= self.config.min_saved_iw * self.iw).then(|| ResumeState {
            cwnd,
            min_rtt,
            expires: now + Duration::from_secs_f64(self.config.lifetime),
            in_use: false,
        })
    }

    /// Whether the saved state must be deleted (Safe Retreat was entered, §3.5).
    pub fn retreated(&self) -> bool {
        self.retreated
    }
}

impl SlowStart for CarefulResume {
    fn init(&mut self, tcb: &mut Tcb, _now: Time) {
        self.iw = tcb.cwnd;
    }

    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) -> u32 {
        match self.phase {
            Phase::Reconnaissance => {
                let left = grow_to_ssthresh(tcb, ack.acked, ack.acked);
                if !self.congested {
                    self.confirm_path(tcb, now);
                }
                left
            }
            // §3.3: cwnd is not increased.
            Phase::Unvalidated | Phase::SafeRetreat => 0,
            Phase::Validating => grow_to_ssthresh(tcb, ack.acked, ack.acked),
            Phase::Normal => grow_to_ssthresh(tcb, ack.acked, ack.acked),
        }
    }

    /// Every ACK that acknowledges data, whether or not the window is in use (the growth in
    /// `on_ack` comes only on ACKs that may raise cwnd, while the flow is cwnd-limited): the
    /// RTT samples, and the checks that end Unvalidated, Validating and Safe Retreat, so that a
    /// jump the receiver's window or the application holds back is still checked (§3.3: then
    /// it is found rate-limited).
    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        if let Some(rtt) = sample.rtt {
            self.latest_rtt = Some(rtt);
            if self.phase == Phase::Reconnaissance {
                self.min_rtt_recon = Some(self.min_rtt_recon.map_or(rtt, |m| m.min(rtt)));
            }
        }
        match self.phase {
            Phase::Unvalidated => {
                self.pace(tcb);
                self.check_flight(tcb, now);
            }
            // The ACK of the last unvalidated segment ends Validating (§3.4) ...
            Phase::Validating if tcb.snd_una > self.last_unvalidated => {
                self.phase = Phase::Normal;
            }
            // ... and Safe Retreat, with ssthresh = PipeSize × beta (§3.5).
            Phase::SafeRetreat if tcb.snd_una > self.last_unvalidated => {
                tcb.ssthresh = (self.pipe_size(tcb) * self.config.beta).max(2.0);
                self.phase = Phase::Normal;
            }
            _ => {}
        }
    }

    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, _now: Time) {
        if !matches!(state, CaState::Recovery | CaState::Loss | CaState::Cwr) {
            return;
        }
        self.congested = true;
        match self.phase {
            // §3.2: congestion in Reconnaissance: the controller reacts, Careful Resume ends.
            Phase::Reconnaissance => self.phase = Phase::Normal,
            Phase::Unvalidated | Phase::Validating => {
                if self.phase == Phase::Unvalidated {
                    self.last_unvalidated = tcb.high_tx.saturating_sub(1);
                }
                tcb.pacing_rate = None;
                self.retreated = true;
                self.phase = Phase::SafeRetreat;
            }
            Phase::SafeRetreat | Phase::Normal => {}
        }
    }

    /// §3.5 on entry: cwnd to PipeSize / 2 (through the stack's recovery: on the Linux stack
    /// PRR reduces to it, where the draft asks for it at once).
    fn on_loss(&mut self, tcb: &mut Tcb, ssthresh: f64, _now: Time) -> f64 {
        match self.phase {
            Phase::Unvalidated | Phase::Validating | Phase::SafeRetreat => {
                (self.pipe_size(tcb) / 2.0).max(2.0)
            }
            _ => ssthresh,
        }
    }

    fn resumes(&self) -> bool {
        true
    }

    /// The saved state for this connection (checked for its lifetime and exclusive use by the
    /// cache): Reconnaissance starts.
    fn resume_from(&mut self, saved: ResumeState) {
        self.saved = Some(saved);
        self.phase = Phase::Reconnaissance;
    }

    fn path_observation(&self, tcb: &Tcb, now: Time) -> PathObservation {
        if self.retreated {
            return PathObservation::Delete;
        }
        self.observation(tcb, now)
            .map_or(PathObservation::Keep, PathObservation::Save)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcb(cwnd: f64) -> Tcb {
        Tcb::new(1000, 1040, cwnd, f64::INFINITY)
    }

    fn saved(cwnd: f64, rtt_ms: u64) -> ResumeState {
        ResumeState {
            cwnd,
            min_rtt: Duration::from_millis(rtt_ms),
            expires: Time::from_nanos(u64::MAX),
            in_use: true,
        }
    }

    fn ack(acked: u32) -> Ack {
        Ack { acked, ack_seq: 0 }
    }

    fn sample(rtt_ms: u64) -> AckSample {
        AckSample {
            acked: 1,
            rtt: Some(Duration::from_millis(rtt_ms)),
            prior_in_flight: 0,
        }
    }

    /// The draft's example (App. B): IW 10, saved_cwnd 300; the jump comes with 29 segments
    /// in flight, so cwnd = 150 and the first unvalidated segment is the 30th.
    fn jumped() -> (CarefulResume, Tcb) {
        let mut cr = CarefulResume::new(CarefulResumeConfig::default());
        let mut t = tcb(10.0);
        cr.init(&mut t, Time::ZERO);
        cr.resume_from(saved(300.0, 100));
        cr.pkts_acked(&mut t, &sample(100), Time::ZERO);
        // The initial window is acknowledged: 10 delivered, slow start at 20 with 29 sent.
        (t.snd_una, t.high_tx, t.in_flight, t.cwnd) = (10, 39, 29, 19.0);
        t.cwnd_limited = true;
        assert_eq!(cr.on_ack(&mut t, &ack(1), Time::ZERO), 0);
        (cr, t)
    }

    #[test]
    fn the_jump_is_half_the_saved_window_paced_over_the_rtt() {
        let (cr, t) = jumped();
        assert_eq!(cr.phase(), Phase::Unvalidated);
        assert_eq!(
            (t.cwnd, cr.first_unvalidated, cr.pipe_at_jump),
            (150.0, 39, 29.0)
        );
        // 150 × 1040 B over 100 ms: 12.48 Mbit/s.
        assert_eq!(t.pacing_rate, Some(Rate::from_bps(12_480_000)));
    }

    #[test]
    fn a_loss_in_unvalidated_retreats_to_half_the_pipe() {
        // App. B.4 (-24): 34 unvalidated segments are acknowledged before the loss is
        // detected: PipeSize = 29 + 34 = 63, cwnd = 31 (63 / 2, whole segments in the draft).
        let (mut cr, mut t) = jumped();
        t.snd_una = 39 + 34;
        cr.set_state(&mut t, CaState::Recovery, Time::ZERO);
        assert_eq!(cr.phase(), Phase::SafeRetreat);
        assert_eq!(cr.on_loss(&mut t, 75.0, Time::ZERO), 31.5);
        assert!(cr.retreated());
        assert_eq!(t.pacing_rate, None);
        // Safe Retreat ends when the last unvalidated segment is acknowledged, with
        // ssthresh = PipeSize × beta.
        t.high_tx = 200;
        cr.last_unvalidated = 188;
        t.snd_una = 189;
        cr.pkts_acked(&mut t, &sample(100), Time::ZERO);
        assert_eq!(cr.phase(), Phase::Normal);
        // PipeSize = 29 + (189 - 39) = 179; × 0.5.
        assert_eq!(t.ssthresh, 89.5);
        assert_eq!(cr.observation(&t, Time::ZERO), None);
    }

    #[test]
    fn a_used_jump_is_validated_then_normal() {
        let (mut cr, mut t) = jumped();
        // All 150 sent: flight 150 > PipeSize 29: Validating with cwnd = flight.
        (t.high_tx, t.in_flight) = (160, 150);
        cr.pkts_acked(&mut t, &sample(100), Time::from_nanos(1));
        assert_eq!(
            (cr.phase(), t.cwnd, cr.last_unvalidated),
            (Phase::Validating, 150.0, 159)
        );
        // Slow start goes on.
        t.snd_una = 159;
        cr.pkts_acked(&mut t, &sample(100), Time::from_nanos(2));
        assert_eq!(cr.on_ack(&mut t, &ack(1), Time::from_nanos(2)), 0);
        assert_eq!((cr.phase(), t.cwnd), (Phase::Validating, 151.0));
        // The ACK of segment 159 ends Careful Resume.
        t.snd_una = 160;
        cr.pkts_acked(&mut t, &sample(100), Time::from_nanos(3));
        cr.on_ack(&mut t, &ack(1), Time::from_nanos(3));
        assert_eq!((cr.phase(), t.cwnd), (Phase::Normal, 152.0));
    }

    #[test]
    fn an_unused_jump_returns_to_what_was_validated() {
        let (mut cr, mut t) = jumped();
        // The first unvalidated segment is acknowledged with only 30 in flight (the
        // application, or the receiver's window, let little more go): flight 30 <= PipeSize
        // 29 + (49 - 39) = 39. The check comes with the ACK's sample, though the window of 150
        // is far from in use (on_ack, which grows cwnd, is not called then).
        (t.snd_una, t.high_tx, t.in_flight) = (49, 79, 30);
        t.cwnd_limited = false;
        cr.pkts_acked(&mut t, &sample(100), Time::from_nanos(1));
        assert_eq!((cr.phase(), t.cwnd), (Phase::Normal, 39.0));
        assert_eq!(t.pacing_rate, None);
    }

    #[test]
    fn the_rtt_must_be_above_half_and_at_most_ten_times_the_saved_one() {
        for (rtt, resumes) in [(50, false), (51, true), (1000, true), (1001, false)] {
            let mut cr = CarefulResume::new(CarefulResumeConfig::default());
            let mut t = tcb(10.0);
            cr.init(&mut t, Time::ZERO);
            cr.resume_from(saved(300.0, 100));
            cr.pkts_acked(&mut t, &sample(rtt), Time::ZERO);
            (t.snd_una, t.high_tx, t.in_flight, t.cwnd) = (10, 39, 29, 19.0);
            t.cwnd_limited = true;
            cr.on_ack(&mut t, &ack(1), Time::ZERO);
            let phase = if resumes {
                Phase::Unvalidated
            } else {
                Phase::Normal
            };
            assert_eq!(cr.phase(), phase, "rtt {rtt}");
        }
    }

    #[test]
    fn what_is_saved_is_the_window_or_half_of_a_slow_start_one() {
        let cr = CarefulResume {
            iw: 10.0,
            ..CarefulResume::new(CarefulResumeConfig::default())
        };
        let mut t = tcb(300.0);
        t.min_rtt = Some(Duration::from_millis(80));
        let at = Time::from_nanos(1_000_000_000);
        // Still in slow start: half, and above 4 IW.
        let s = cr.observation(&t, at).unwrap();
        assert_eq!((s.cwnd, s.min_rtt), (150.0, Duration::from_millis(80)));
        assert_eq!(s.expires, Time::from_nanos(601_000_000_000));
        // In congestion avoidance: the window; below 4 IW: nothing.
        t.ssthresh = 200.0;
        assert_eq!(cr.observation(&t, at).unwrap().cwnd, 300.0);
        t.cwnd = 39.0;
        assert_eq!(cr.observation(&t, at), None);
    }

    #[test]
    fn every_parameter_is_listed_and_parsed_by_name() {
        crate::cc::params::assert_params_listed::<CarefulResumeConfig>();
    }
}
