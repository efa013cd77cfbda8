//! A TCP sender and receiver that behave like a real stack: sliding window, cumulative and
//! selective acknowledgements, delayed ACKs, fast retransmit with Reno / NewReno / SACK-based
//! recovery, RFC 6298 retransmission timer, optional handshake and pacing.
//!
//! The sender runs one of two stacks ([`Stack`]), each a type with its own state: the ns-2-era
//! stack of the papers (`ns2`) or Linux's ([`linux`]: RACK-TLP, PRR, undo and F-RTO, and the
//! receiver's ACK policy). Both share the [`sender`]'s window, timers and transmission path.
//!
//! Both endpoints are clock-free (as quinn-proto): they never read a clock; every call gets `now`
//! and returns the packets to send in an [`Outbox`]; the simulation asks them when their timers
//! are due. Sequence numbers count segments, not bytes: every segment but the last of each of
//! the application's writes carries `mss` bytes ([`send_queue`]).

mod connection;
pub mod intervals;
pub mod linux;
mod ns2;
mod pacer;
pub mod path_cache;
mod rate;
pub mod receiver;
pub mod rtt;
mod scoreboard;
pub mod send_queue;
pub mod sender;

/// Linux's receiver ACK policy, also reachable as `tcp::linux_acks`.
pub use linux::acks as linux_acks;

pub use pacer::{linux_sk_pacing_rate, PacingRatios};
pub use receiver::TcpReceiver;
pub use sender::TcpSender;

use crate::net::Packet;
use crate::time::Duration;

/// Whose sender runs the connection: its ACK processing, loss recovery and timers beyond the
/// RTO (everything else is shared, in [`sender`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stack {
    /// The ns-2-era sender of the papers: RFC 5681 / 6582 / 6675 recovery on duplicate ACKs
    /// and SACK, RFC 6298 timer, Eifel undo (`tcp/ns2`).
    Ns2 { recovery: Recovery },
    /// Linux's recovery on a SACK scoreboard (`tcp_fastretrans_alert`): the states Open,
    /// Disorder, CWR, Recovery and Loss, recovery left when everything sent before it is
    /// acknowledged, and cwnd brought to ssthresh by Proportional Rate Reduction (RFC 6937,
    /// `tcp_cwnd_reduction`); RACK-TLP, undo and F-RTO (see [`linux`]).
    Linux,
}

impl Stack {
    /// Uses a SACK scoreboard.
    pub fn uses_sack(self) -> bool {
        matches!(
            self,
            Stack::Ns2 {
                recovery: Recovery::Sack
            } | Stack::Linux
        )
    }
}

/// The ns-2 stack's loss recovery after three duplicate ACKs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// RFC 5681 §3.2: fast retransmit, window inflation, leave on the first ACK of new data.
    Reno,
    /// RFC 6582: stay in recovery until everything outstanding at its start is acknowledged,
    /// retransmitting on each partial ACK.
    NewReno,
    /// RFC 6675: a SACK scoreboard, the pipe estimate and NextSeg().
    Sack,
}

/// When the receiver acknowledges and what window it offers.
#[derive(Clone, Debug, PartialEq)]
pub enum AckPolicy {
    /// RFC 5681 §4.2 / RFC 1122: every segment, or every second one with `delayed_ack` (timer
    /// `delayed_ack_timeout`); the window is `receive_window`.
    Rfc5681,
    /// Linux's receiver: quick ACKs, delayed ACKs on `ato`, SACK compression, and a receive
    /// window that autotunes (see [`linux::acks`]).
    Linux(linux::acks::LinuxAckConfig),
}

/// How the sender decides that a segment is lost.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum LossDetection {
    /// Duplicate ACKs (RFC 5681) or, with SACK, RFC 6675's IsLost (DupThresh SACKed above).
    DupThresh,
    /// RACK-TLP (RFC 8985) as Linux runs it (`tcp_recovery.c`): a segment is lost once a
    /// segment sent after it has been delivered and a reordering window has passed; lost
    /// retransmissions are detected the same way; a tail-loss probe after 2 × SRTT when `tlp`.
    Rack { tlp: bool },
}

/// How the retransmission timeout is computed from RTT samples.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RtoAlgorithm {
    /// RFC 6298: SRTT + max(G, 4 × RTTVAR), at least `min_rto`.
    Rfc6298,
    /// Linux `tcp_rtt_estimator` / `tcp_set_rto`: SRTT + RTTVAR where RTTVAR is at least
    /// `min_rto` and falls by a quarter per round trip towards the largest deviation of the
    /// last round trip; so RTO ≥ SRTT + `min_rto`. Rounded up to whole jiffies
    /// (`clock_granularity`).
    Linux,
}

/// Who sets the pacing rate.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Pacing {
    /// The congestion control may set `tcb.pacing_rate`; nothing else paces.
    ByController,
    /// The whole window spread over the smoothed RTT: rate = cwnd / srtt, updated on every ACK
    /// (Aggarwal, Savage and Anderson, "Understanding the performance of TCP pacing", 2000;
    /// Sallantin et al. 2013 §II.B).
    Window,
    /// Linux's internal pacing: rate = ratio × cwnd / srtt with the connection's
    /// [`PacingRatios`] (net/ipv4/tcp_input.c `tcp_update_pacing_rate`).
    Linux,
    /// Initial Spreading (Sallantin et al. 2013 §III.A): the initial window spaced evenly over the RTT measured
    /// on the handshake, one segment every RTT / IW, then ordinary ACK clocking from the first ACK.
    InitialSpreading,
}

/// Per-connection settings, resolved (every unit converted, every default applied).
#[derive(Clone, Debug)]
pub struct TcpConfig {
    /// Payload bytes per segment.
    pub mss_bytes: u32,
    /// Header bytes added on the wire to every segment.
    pub header_bytes: u32,
    /// Wire size of a pure ACK, SYN or SYN-ACK.
    pub ack_bytes: u32,
    /// Initial cwnd, segments.
    pub initial_window: u32,
    /// Initial ssthresh, segments (`f64::INFINITY` = unlimited).
    pub initial_ssthresh: f64,
    /// Receiver's advertised window, segments (`u32::MAX` = unlimited).
    pub receive_window: u32,
    pub delayed_ack: bool,
    pub delayed_ack_timeout: Duration,
    /// The receiver sends SACK blocks.
    pub sack: bool,
    /// The sender's stack (`recovery = "prr"` is Linux's; the others are the ns-2 stack's).
    pub stack: Stack,
    pub dupack_threshold: u32,
    pub min_rto: Duration,
    pub max_rto: Duration,
    pub initial_rto: Duration,
    pub clock_granularity: Duration,
    pub handshake: bool,
    /// Detect spurious fast retransmits and timeouts from echoed timestamps (Eifel, RFC 3522) and
    /// undo the window reduction (controller's `undo_cwnd`).
    pub undo: bool,
    /// The receiver reports a duplicate segment in a D-SACK block (RFC 2883; Linux
    /// `tcp_dsack_set`); the Linux stack (`Stack::Linux`) undoes a reduction whose
    /// retransmissions were all D-SACKed (`tcp_try_undo_dsack`).
    pub dsack: bool,
    /// ECN (RFC 3168), negotiated by both ends: new data is sent ECT(0); the receiver sets ECE
    /// on its ACKs from a CE mark until a segment with CWR; the sender reduces its window once
    /// per window of data on ECE (the ns-2 stack as `TcpAgent::ecn`, the Linux stack entering
    /// CWR as `tcp_enter_cwr`) and sets CWR on its next new segment.
    pub ecn: bool,
    /// The controller needs ECN (Linux `TCP_CONG_NEEDS_ECN`: DCTCP): retransmissions are ECT
    /// too, and the receiver echoes each segment's CE state instead of latching it until CWR
    /// (`dctcp_ece_ack_update`: a change of state is acknowledged at once, after any delayed
    /// ACK for the segments before it). Set from the controller, not by a scenario.
    pub ecn_ca: bool,
    /// F-RTO after a retransmission timeout (RFC 5682 §3.1 with SACK, as Linux's
    /// `tcp_process_loss`); the Linux stack only.
    pub frto: bool,
    /// A connection that has sent nothing for longer than the RTO restarts its window when the
    /// application writes again: the Linux stack as `tcp_slow_start_after_idle` (with the decay
    /// of an application-limited window, `tcp_cwnd_application_limited`), the ns-2 stack as
    /// RFC 5681 §4.1.
    pub restart_after_idle: bool,
    /// Linux's TCP metrics (`tcp_metrics.c`; the Linux stack): a connection reads what earlier
    /// ones to the same host left when it opens, and leaves its own when it closes.
    pub metrics: bool,
    /// With `metrics`, ssthresh is saved and restored too (`tcp_no_ssthresh_metrics_save = 0`;
    /// off by default since Linux 5.11).
    pub metrics_ssthresh: bool,
    /// Linux's GSO sizing and deferral (`tcp_tso_autosize`, `tcp_tso_should_defer`; the Linux
    /// stack, a sender that does not pace): new data goes in skbs of about a millisecond at
    /// the pacing rate, and while the window has room for less than one the sender waits for
    /// the next ACK, at most a millisecond since its last transmission.
    pub tso_defer: bool,
    pub pacing: Pacing,
    /// `net.ipv4.tcp_pacing_ss_ratio` and `_ca_ratio` as they are set for the connection: the
    /// ratios of `tcp_update_pacing_rate`, which keeps `sk_pacing_rate` on every socket, paced
    /// or not; `pacing = "window"` is both at 100 %.
    pub pacing_ratios: PacingRatios,
    pub ack_policy: AckPolicy,
    pub loss_detection: LossDetection,
    pub rto_algorithm: RtoAlgorithm,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1000,
            header_bytes: 40,
            ack_bytes: 40,
            initial_window: 1,
            initial_ssthresh: f64::INFINITY,
            receive_window: u32::MAX,
            delayed_ack: false,
            delayed_ack_timeout: Duration::from_millis(100),
            sack: false,
            stack: Stack::Ns2 {
                recovery: Recovery::NewReno,
            },
            dupack_threshold: 3,
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            initial_rto: Duration::from_secs(1),
            clock_granularity: Duration::from_millis(1),
            handshake: false,
            undo: false,
            dsack: false,
            ecn: false,
            ecn_ca: false,
            frto: false,
            restart_after_idle: true,
            metrics: false,
            metrics_ssthresh: false,
            tso_defer: false,
            pacing: Pacing::ByController,
            pacing_ratios: PacingRatios::LINUX,
            ack_policy: AckPolicy::Rfc5681,
            loss_detection: LossDetection::DupThresh,
            rto_algorithm: RtoAlgorithm::Rfc6298,
        }
    }
}

/// How much a connection carries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FlowSize {
    /// Number of segments (`u32::MAX` for an unlimited flow).
    pub segments: u32,
    /// Payload of the last segment.
    pub last_segment_bytes: u32,
}

impl FlowSize {
    pub const UNLIMITED: FlowSize = FlowSize {
        segments: u32::MAX,
        last_segment_bytes: 0,
    };

    pub fn from_bytes(bytes: u64, mss: u32) -> Self {
        if bytes == 0 {
            return FlowSize {
                segments: 0,
                last_segment_bytes: 0,
            };
        }
        let segments = bytes.div_ceil(mss as u64);
        assert!(segments < u32::MAX as u64, "flow too large: {bytes} bytes");
        let last = bytes - (segments - 1) * mss as u64;
        FlowSize {
            segments: segments as u32,
            last_segment_bytes: last as u32,
        }
    }

    pub fn is_unlimited(self) -> bool {
        self.segments == u32::MAX
    }

    pub fn total_bytes(self, mss: u32) -> Option<u64> {
        (!self.is_unlimited()).then(|| {
            if self.segments == 0 {
                0
            } else {
                (self.segments as u64 - 1) * mss as u64 + self.last_segment_bytes as u64
            }
        })
    }
}

/// Packets an endpoint wants sent, in order.
#[derive(Default, Debug)]
pub struct Outbox {
    pub packets: Vec<Packet>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_size_counts_a_short_last_segment() {
        let s = FlowSize::from_bytes(2500, 1000);
        assert_eq!((s.segments, s.last_segment_bytes), (3, 500));
        assert_eq!(s.total_bytes(1000), Some(2500));
        let s = FlowSize::from_bytes(3000, 1000);
        assert_eq!((s.segments, s.last_segment_bytes), (3, 1000));
    }
}
