//! From kernel trace records to the simulator's tables: a flow's per-ACK series and its
//! slow-start exit.
//!
//! What the kernel exposes differs from what the simulator records, and each difference is
//! stated where it is made:
//! - `tcp_probe` fires at the top of `tcp_rcv_established()`, before the ACK is processed: a
//!   record shows the state left by the previous ACK;
//! - its ssthresh is `tcp_current_ssthresh()` = max(ssthresh, 3/4 cwnd) outside CWR and
//!   Recovery; `cwnd < tcp_current_ssthresh()` holds exactly when `cwnd < ssthresh` does, so the
//!   phase is still exact;
//! - in-flight is `(snd_nxt − snd_una) / mss` (Linux `packets_out`), not the RFC 6675 pipe;
//! - delivered bytes are the bytes acknowledged at the sender (`snd_una` since the first
//!   record), not the bytes the receiving application has read;
//! - there is no per-ACK RTT sample or pacing rate in the event: those columns are null.

use crate::trace::{CongStateRecord, ProbeRecord, INFINITE_SSTHRESH};
use startlab_core::cc::Phase;
use startlab_core::measure::FlowSample;

/// Linux `TCP_CA_*` states.
pub mod ca_state {
    pub const OPEN: u8 = 0;
    pub const DISORDER: u8 = 1;
    pub const CWR: u8 = 2;
    pub const RECOVERY: u8 = 3;
    pub const LOSS: u8 = 4;
}

/// How the kernel counted HyStart's detections over the run, from the namespace's nstat
/// counters `TcpExtTCPHystartTrainDetect` and `TcpExtTCPHystartDelayDetect`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct HystartCounts {
    pub train: u64,
    pub delay: u64,
}

/// One reading of a namespace's HyStart counters (cumulative), taken between `from_ns` and
/// `to_ns` on the monotonic clock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CounterReading {
    pub from_ns: u64,
    pub to_ns: u64,
    pub counts: HystartCounts,
}

/// What tells which of HyStart's detectors ended a flow's slow start.
#[derive(Copy, Clone, Debug, Default)]
pub enum HystartEvidence<'a> {
    /// Nothing (the namespace's counters could not be read).
    #[default]
    None,
    /// The detections over the whole run of a namespace where the flow is alone.
    Run(HystartCounts),
    /// Readings of a namespace shared with other flows, in time order: the detections between
    /// the last reading before the exit and the first after it are the exit's.
    Readings(&'a [CounterReading]),
}

impl HystartEvidence<'_> {
    /// The detections counted around the ACK that ended slow start, which the kernel processed
    /// some instant between `from_ns` and `to_ns`.
    fn around(&self, from_ns: u64, to_ns: u64) -> Option<HystartCounts> {
        match *self {
            HystartEvidence::None => None,
            HystartEvidence::Run(c) => Some(c),
            HystartEvidence::Readings(r) => {
                let earlier = r.iter().rev().find(|x| x.to_ns <= from_ns)?;
                let later = r.iter().find(|x| x.from_ns >= to_ns)?;
                Some(HystartCounts {
                    train: later.counts.train.saturating_sub(earlier.counts.train),
                    delay: later.counts.delay.saturating_sub(earlier.counts.delay),
                })
            }
        }
    }
}

/// The end of a flow's first slow start, as the kernel ran it.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelExit {
    /// When the ACK that ended it was processed, on the trace clock (ns).
    pub time_ns: u64,
    /// cwnd when slow start ended, before any reduction (segments).
    pub cwnd: f64,
    /// `loss`, `timeout`, `hystart-train` or `hystart-delay` (the simulator's names), or
    /// `hystart` when the namespace's counters cannot tell which detector fired.
    pub reason: String,
}

/// The congestion state in force at `t` (the last change at or before it).
fn state_at(states: &[CongStateRecord], t: u64) -> u8 {
    states
        .iter()
        .take_while(|s| s.time_ns <= t)
        .last()
        .map_or(ca_state::OPEN, |s| s.state)
}

/// The end of BBR's Startup: `bbr_check_drain` sets ssthresh (infinite until then, a loss
/// leaves it so) to the gain-1 target when the pipe is full, whatever the congestion state.
/// The record that first shows it follows the ACK that did it; cwnd is what that ACK left.
pub fn bbr_startup_exit(probes: &[ProbeRecord]) -> Option<KernelExit> {
    let i = probes.iter().position(|p| p.ssthresh < INFINITE_SSTHRESH)?;
    Some(KernelExit {
        time_ns: probes[i.saturating_sub(1)].time_ns,
        cwnd: probes[i].cwnd as f64,
        reason: "bbr-full-bw".into(),
    })
}

/// The first slow-start exit of one flow: `probes` and `states` are that flow's records in
/// time order; `hystart` the namespace's counts of HyStart's detections; `ecn` whether the
/// connection uses ECN, in which case a CWR episode is an ECN echo's (`tcp_enter_cwr`), not a
/// loss repaired by a tail-loss probe (`tcp_process_tlp_ack`), which is the only other way in
/// during slow start.
pub fn slow_start_exit(
    probes: &[ProbeRecord],
    states: &[CongStateRecord],
    hystart: HystartEvidence<'_>,
    ecn: bool,
) -> Option<KernelExit> {
    let i = probes.iter().position(|p| p.ssthresh < INFINITE_SSTHRESH)?;
    // A record shows what the previous ACK left: slow start ended while that ACK was processed.
    let before = &probes[i.saturating_sub(1)];
    let after = &probes[i];
    // A loss or a timeout moves the state away from Open at the same time; check the changes
    // up to the record that shows the new ssthresh.
    let entered = states
        .iter()
        .find(|s| {
            s.time_ns <= after.time_ns
                && matches!(s.state, ca_state::RECOVERY | ca_state::LOSS | ca_state::CWR)
        })
        .map(|s| s.state);
    let (reason, cwnd, time_ns) = match entered {
        Some(ca_state::LOSS) => (
            "timeout".to_string(),
            before.cwnd,
            states_time(states, ca_state::LOSS, after.time_ns),
        ),
        Some(ca_state::CWR) => (
            if ecn { "ecn" } else { "loss" }.to_string(),
            before.cwnd,
            states_time(states, ca_state::CWR, after.time_ns),
        ),
        Some(ca_state::RECOVERY) => (
            "loss".to_string(),
            before.cwnd,
            states_time(states, ca_state::RECOVERY, after.time_ns),
        ),
        _ => {
            // HyStart sets ssthresh = cwnd and leaves cwnd as it is (tcp_cubic.c,
            // hystart_update): the new ssthresh is the exit window.
            let reason = match hystart.around(before.time_ns, after.time_ns) {
                Some(HystartCounts { train, delay }) if train > 0 && delay == 0 => "hystart-train",
                Some(HystartCounts { train, delay }) if delay > 0 && train == 0 => "hystart-delay",
                _ => "hystart",
            };
            (reason.to_string(), after.ssthresh, before.time_ns)
        }
    };
    Some(KernelExit {
        time_ns,
        cwnd: cwnd as f64,
        reason,
    })
}

/// When the flow first entered `state`, at or before `limit` (or `limit`).
fn states_time(states: &[CongStateRecord], state: u8, limit: u64) -> u64 {
    states
        .iter()
        .find(|s| s.state == state && s.time_ns <= limit)
        .map_or(limit, |s| s.time_ns)
}

/// The phase a record shows.
fn phase(p: &ProbeRecord, state: u8) -> Phase {
    match state {
        ca_state::RECOVERY | ca_state::CWR => Phase::Recovery,
        ca_state::LOSS => Phase::Loss,
        _ if p.cwnd < p.ssthresh => Phase::SlowStart,
        _ => Phase::CongestionAvoidance,
    }
}

/// A flow's series rows: `flow` its id, `start_ns` the run's start on the trace clock, `mss`
/// its MSS in bytes.
pub fn flow_samples(
    flow: u32,
    probes: &[ProbeRecord],
    states: &[CongStateRecord],
    start_ns: u64,
    mss: u32,
) -> Vec<FlowSample> {
    let Some(first) = probes.first() else {
        return Vec::new();
    };
    let una0 = first.snd_una;
    probes
        .iter()
        .map(|p| FlowSample {
            time_ns: p.time_ns.saturating_sub(start_ns) as i64,
            flow,
            cwnd: p.cwnd as f64,
            ssthresh: (p.ssthresh < INFINITE_SSTHRESH).then_some(p.ssthresh as f64),
            srtt_ns: (p.srtt_us > 0).then_some(p.srtt_us as i64 * 1000),
            rtt_ns: None,
            in_flight: p.snd_nxt.wrapping_sub(p.snd_una).div_ceil(mss.max(1)),
            delivered_bytes: p.snd_una.wrapping_sub(una0) as u64,
            phase: phase(p, state_at(states, p.time_ns)) as u8,
            pacing_rate_bps: None,
            delivery_rate_bps: None,
            model_bw_bps: None,
            model_min_rtt_ns: None,
            pacing_gain: None,
            cwnd_gain: None,
            model_state: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(t_ms: u64, cwnd: u32, ssthresh: u32) -> ProbeRecord {
        ProbeRecord {
            time_ns: t_ms * 1_000_000,
            src: "198.18.0.1".into(),
            dst: "198.18.1.1".into(),
            sport: 40000,
            dport: 5201,
            data_len: 0,
            snd_nxt: 1 + cwnd * 1448,
            snd_una: 1,
            cwnd,
            ssthresh,
            snd_wnd: 0,
            srtt_us: 20_000,
            rcv_wnd: 0,
        }
    }

    fn state(t_ms: u64, s: u8) -> CongStateRecord {
        CongStateRecord {
            time_ns: t_ms * 1_000_000,
            src: "198.18.0.1".into(),
            sport: 40000,
            dport: 5201,
            state: s,
        }
    }

    const INF: u32 = INFINITE_SSTHRESH;

    #[test]
    fn a_hystart_exit_is_the_ack_before_the_new_ssthresh_with_ssthresh_as_the_window() {
        let probes = [
            probe(10, 100, INF),
            probe(11, 110, INF),
            probe(12, 112, 112),
        ];
        let train = HystartEvidence::Run(HystartCounts { train: 1, delay: 0 });
        let e = slow_start_exit(&probes, &[], train, false).unwrap();
        assert_eq!(
            (e.time_ns, e.cwnd, e.reason.as_str()),
            (11_000_000, 112.0, "hystart-train")
        );
        let delay = HystartEvidence::Run(HystartCounts { train: 0, delay: 2 });
        assert_eq!(
            slow_start_exit(&probes, &[], delay, false).unwrap().reason,
            "hystart-delay"
        );
        // No counters: a HyStart exit, detector unknown.
        assert_eq!(
            slow_start_exit(&probes, &[], HystartEvidence::None, false)
                .unwrap()
                .reason,
            "hystart"
        );
    }

    /// Several flows in one namespace: the readings around the exit (the ACK processed between
    /// 11 and 12 ms) tell its detector, whatever the other flows' detections did before or after.
    #[test]
    fn a_shared_namespace_names_the_detector_from_the_readings_around_the_exit() {
        let probes = [
            probe(10, 100, INF),
            probe(11, 110, INF),
            probe(12, 112, 112),
        ];
        let reading = |from_us: u64, train, delay| CounterReading {
            from_ns: from_us * 1000,
            to_ns: from_us * 1000 + 50,
            counts: HystartCounts { train, delay },
        };
        // Another flow's delay detection at 5 ms, this flow's train detection between the
        // readings at 10.5 and 12.5 ms, another delay detection at 20 ms.
        let readings = [
            reading(4_000, 0, 0),
            reading(6_000, 0, 1),
            reading(10_500, 0, 1),
            reading(12_500, 1, 1),
            reading(21_000, 1, 2),
        ];
        let e = slow_start_exit(&probes, &[], HystartEvidence::Readings(&readings), false).unwrap();
        assert_eq!(e.reason, "hystart-train");
        // A reading taken while the ACK may have been processed (11.5 ms) does not bound it:
        // the bounds are the readings at 10.5 and 12.5 ms either way.
        let mut with_inside = readings.to_vec();
        with_inside.insert(3, reading(11_500, 1, 1));
        let e =
            slow_start_exit(&probes, &[], HystartEvidence::Readings(&with_inside), false).unwrap();
        assert_eq!(e.reason, "hystart-train");
        // Both detectors fired between the bounds (two flows at once): unknown.
        let both = [reading(10_500, 0, 0), reading(12_500, 1, 1)];
        let e = slow_start_exit(&probes, &[], HystartEvidence::Readings(&both), false).unwrap();
        assert_eq!(e.reason, "hystart");
        // No reading after the exit (the sampler stopped): unknown.
        let e = slow_start_exit(
            &probes,
            &[],
            HystartEvidence::Readings(&readings[..3]),
            false,
        )
        .unwrap();
        assert_eq!(e.reason, "hystart");
    }

    /// BBR: a loss in Startup leaves ssthresh infinite; the first finite ssthresh is Drain's.
    #[test]
    fn bbrs_startup_ends_at_the_first_finite_ssthresh_whatever_the_losses() {
        let probes = [
            probe(10, 100, INF),
            probe(11, 300, INF),
            probe(12, 280, INF),
            probe(13, 290, 120),
        ];
        let e = bbr_startup_exit(&probes).unwrap();
        assert_eq!(
            (e.time_ns, e.cwnd, e.reason.as_str()),
            (12_000_000, 290.0, "bbr-full-bw")
        );
        assert_eq!(bbr_startup_exit(&probes[..3]), None);
    }

    #[test]
    fn a_loss_exit_takes_the_window_before_the_reduction_and_the_time_of_recovery() {
        // cubic: ssthresh = 0.7 x 200 = 140, then PRR brings cwnd down.
        let probes = [
            probe(10, 190, INF),
            probe(11, 200, INF),
            probe(13, 180, 150),
        ];
        let states = [state(12, ca_state::DISORDER), state(12, ca_state::RECOVERY)];
        let e = slow_start_exit(&probes, &states, HystartEvidence::None, false).unwrap();
        assert_eq!(
            (e.time_ns, e.cwnd, e.reason.as_str()),
            (12_000_000, 200.0, "loss")
        );
        let states = [state(12, ca_state::LOSS)];
        assert_eq!(
            slow_start_exit(&probes, &states, HystartEvidence::None, false)
                .unwrap()
                .reason,
            "timeout"
        );
        // CWR: an ECN echo on a connection with ECN, a probe-repaired loss without.
        let states = [state(12, ca_state::CWR)];
        for (ecn, reason) in [(true, "ecn"), (false, "loss")] {
            let e = slow_start_exit(&probes, &states, HystartEvidence::None, ecn).unwrap();
            assert_eq!((e.time_ns, e.reason.as_str()), (12_000_000, reason));
        }
        assert!(slow_start_exit(&probes[..2], &[], HystartEvidence::None, false).is_none());
    }

    #[test]
    fn series_rows_carry_null_for_what_the_kernel_does_not_report() {
        let probes = [probe(1_000, 10, INF), probe(1_020, 12, 12)];
        let states = [state(1_010, ca_state::RECOVERY)];
        let rows = flow_samples(3, &probes, &states, 1_000_000_000, 1448);
        assert_eq!(rows[0].time_ns, 0);
        assert_eq!(rows[1].time_ns, 20_000_000);
        assert_eq!((rows[0].ssthresh, rows[1].ssthresh), (None, Some(12.0)));
        assert_eq!(rows[0].in_flight, 10);
        assert_eq!(rows[0].phase, Phase::SlowStart as u8);
        assert_eq!(rows[1].phase, Phase::Recovery as u8);
        assert_eq!(rows[0].srtt_ns, Some(20_000_000));
        assert!(rows
            .iter()
            .all(|r| r.rtt_ns.is_none() && r.pacing_rate_bps.is_none()));
    }
}
