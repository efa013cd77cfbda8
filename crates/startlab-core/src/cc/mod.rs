//! The congestion-control interface.
//!
//! One small trait, [`CongestionControl`], whose hooks are named after Linux's
//! `struct tcp_congestion_ops` (include/net/tcp.h) so that a controller written here ports to an
//! eBPF `struct_ops` program hook for hook:
//!
//! | hook here       | Linux `tcp_congestion_ops` | fires                                                   |
//! |-----------------|----------------------------|---------------------------------------------------------|
//! | `init`          | `init`                     | the connection is established                           |
//! | `ssthresh`      | `ssthresh`                 | a loss is detected (fast retransmit or timeout)         |
//! | `cong_avoid`    | `cong_avoid`               | an ACK advances `snd_una` outside loss recovery         |
//! | `set_state`     | `set_state`                | the sender's [`CaState`] changes                        |
//! | `cwnd_event`    | `cwnd_event`               | transmission starts after idle, a timeout, …            |
//! | `pkts_acked`    | `pkts_acked`               | every ACK that acknowledges data, with an RTT sample    |
//! | `undo_cwnd`     | `undo_cwnd`                | a window reduction turned out to be spurious            |
//! | `cong_control`  | `cong_control`             | every ACK, with a delivery-rate sample; if it returns `true` it has set cwnd / pacing itself and `cong_avoid` is not called |
//! | `on_transmit`   | (none)                     | a data segment has just been sent (`tcp_update_skb_after_send`); for a model of a kernel change outside `tcp_congestion_ops` (SUSS) |
//!
//! The congestion window is counted in segments, as the papers count it, and is fractional (ns-2's
//! `cwnd_` is a double): the per-ACK increments of Reno, Westwood, Astart or P-Start are fractions
//! of a segment. The sender may send while `in_flight < floor(min(cwnd, rwnd))`.
//!
//! Slow start is pluggable separately from congestion avoidance: a [`SlowStart`] (standard, Limited
//! Slow Start, HyStart, Astart…) wraps any controller with [`WithStartup`], which takes over
//! `cong_avoid` while `cwnd < ssthresh` and hands the rest of the ACK to the controller once
//! slow start has reached `ssthresh`, as Linux's `tcp_slow_start` returns the leftover `acked`.

// Layers, bottom up: the interface (this module); the shared machinery — `params` (declared
// parameters), `counting` (slow-start counting, newly delivered segments), `rounds` (round
// trips and their RTTs), `rate` (Westwood's eligible rate estimate), `slow_start`; the
// algorithms, each in its own module, which import only the layers below; `registry`, the
// catalogue that names them all. `testing` drives a controller without a network.
pub mod astart;
pub mod bbr;
pub mod bbr3;
pub mod bic;
pub mod blast;
pub mod bpf;
pub mod careful_resume;
pub mod controller;
pub mod counting;
pub mod cubic;
pub mod dctcp;
pub mod gallop_vegas;
pub mod hoe;
pub mod hstcp;
pub mod hystart;
pub mod hystart_pp;
pub mod lss;
pub mod params;
pub mod pstart;
pub mod rate;
pub mod registry;
pub mod reno;
pub mod rounds;
pub mod search;
pub mod slow_start;
pub mod suss;
pub mod testing;
pub mod vegas;
pub mod westwood;

use crate::rng::Rng;
use crate::tcp::path_cache::ResumeState;
use crate::time::{Duration, Time};
use crate::units::Rate;
use std::fmt;

/// The sender's loss-recovery state (Linux `tcp_ca_state`; CWR only with the Linux stack),
/// ordered as Linux numbers them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    /// Nothing unusual.
    Open,
    /// Duplicate ACKs seen, fewer than the threshold.
    Disorder,
    /// A window reduction without a retransmission (Linux: a loss repaired by a tail-loss
    /// probe, `tcp_process_tlp_ack`); PRR brings cwnd down to ssthresh.
    Cwr,
    /// Fast recovery after a fast retransmit.
    Recovery,
    /// Recovery after a retransmission timeout.
    Loss,
}

/// The phase a flow is in, as reported in the time series.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    SlowStart = 0,
    CongestionAvoidance = 1,
    Recovery = 2,
    Loss = 3,
    Closed = 4,
    /// Linux stack only: duplicate ACKs or SACKs seen, no loss yet (`TCP_CA_Disorder`).
    Disorder = 5,
    /// Linux stack only: a window reduction without retransmissions (`TCP_CA_CWR`).
    Cwr = 6,
}

impl Phase {
    pub const NAMES: [&'static str; 7] = [
        "slow-start",
        "congestion-avoidance",
        "recovery",
        "loss",
        "closed",
        "disorder",
        "cwr",
    ];
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Why the first slow start ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ExitReason {
    /// cwnd reached ssthresh.
    Threshold,
    /// A loss detected by duplicate ACKs or SACK.
    Loss,
    /// A retransmission timeout.
    Timeout,
    /// An ECN echo (RFC 3168 §6.1.2): the window reduction for a CE mark.
    Ecn,
    /// A start-up algorithm's detector (for example `"hystart-delay"`).
    Detector(&'static str),
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Threshold => write!(f, "threshold"),
            ExitReason::Loss => write!(f, "loss"),
            ExitReason::Timeout => write!(f, "timeout"),
            ExitReason::Ecn => write!(f, "ecn"),
            ExitReason::Detector(name) => write!(f, "{name}"),
        }
    }
}

/// Events of `cwnd_event` (Linux `tcp_ca_event`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CwndEvent {
    /// A transmission with nothing in flight: the first, after idle, or after a timeout
    /// (`tcp_event_data_sent`; the ns-2 stack only with nothing outstanding).
    TxStart,
    /// The window is restarted after idle (`tcp_cwnd_restart`; the Linux stack only).
    CwndRestart,
    /// The retransmission timer expired.
    Loss,
    /// A duplicate ACK that delivered nothing the sender can see (no new SACK block): the
    /// receiver got one more segment out of order (Westwood's ACK counting).
    DupAck,
    /// A window reduction (CWR or Recovery) ended (Linux `CA_EVENT_COMPLETE_CWR`, from
    /// `tcp_end_cwnd_reduction`; the Linux stack only, and not to a controller with
    /// `cong_control`).
    CompleteCwr,
}

/// What `in_ack_event` is told of an ACK (Linux's `CA_ACK_*` flags).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AckEvent {
    /// The ACK carried an ECN echo on a connection that uses ECN (`CA_ACK_ECE`).
    pub ece: bool,
    /// The ACK advanced `snd_una` on the fast path, a pure window update (`CA_ACK_WIN_UPDATE`).
    pub win_update: bool,
}

/// The transmission control block: the part of the sender's state a controller reads and writes.
#[derive(Clone, Debug)]
pub struct Tcb {
    /// Congestion window, segments.
    pub cwnd: f64,
    /// Slow-start threshold, segments (`f64::INFINITY` = unlimited).
    pub ssthresh: f64,
    /// Payload bytes per segment.
    pub mss_bytes: u32,
    /// Bytes on the wire per full segment (payload + header).
    pub wire_bytes: u32,
    /// Smoothed RTT (RFC 6298), once there is a sample.
    pub srtt: Option<Duration>,
    /// Smallest RTT sample seen.
    pub min_rtt: Option<Duration>,
    /// Most recent RTT sample.
    pub latest_rtt: Option<Duration>,
    /// First unacknowledged segment.
    pub snd_una: u32,
    /// One past the highest segment sent.
    pub high_tx: u32,
    /// Segments in the network (RFC 6675 "pipe": sent, not acked, not SACKed, not deemed lost,
    /// plus retransmissions in flight).
    pub in_flight: u32,
    /// Segments delivered so far (acknowledged cumulatively or selectively).
    pub delivered: u64,
    /// Segments delivered by ACKs that echoed CE (`tcp_count_delivered` with an ECN echo).
    pub delivered_ce: u64,
    /// The connection uses ECN (RFC 3168, negotiated at the handshake: `tcp_sock.ecn_flags`
    /// has `TCP_ECN_OK`).
    pub ecn: bool,
    pub ca_state: CaState,
    /// Set by the controller to pace transmissions; `None` sends as fast as the window allows.
    pub pacing_rate: Option<Rate>,
    /// `sk_max_pacing_rate` as an eBPF controller set it (`bpf_setsockopt(SO_MAX_PACING_RATE)`):
    /// the sender's own pacing rate never goes above it (`tcp_update_pacing_rate`); `None`:
    /// no cap.
    pub max_pacing_rate: Option<Rate>,
    /// The ratios of the `sk_pacing_rate` Linux keeps on the socket
    /// ([`crate::tcp::linux_sk_pacing_rate`]): the connection's `TcpConfig::pacing_ratios`.
    pub pacing_ratios: crate::tcp::PacingRatios,
    /// Set by a start-up detector when it ends slow start, so the exit is reported with its reason.
    pub exit_reason_hint: Option<ExitReason>,
    /// Whether the window may grow: the last transmissions were limited by cwnd, not by the
    /// application or rwnd (the ns-2 stack), or Linux's `tcp_is_cwnd_limited` (the Linux
    /// stack, computed before each `cong_avoid`).
    pub cwnd_limited: bool,
    /// Linux `tp->is_cwnd_limited` and `tp->max_packets_out`, as `tcp_cwnd_validate` keeps
    /// them (the ns-2 stack: `cwnd_limited`, and cwnd when limited).
    pub is_cwnd_limited: bool,
    pub max_packets_out: u32,
    /// When data was last sent (`tp->lsndtime`, `tcp_event_data_sent`).
    pub lsndtime: Time,
    /// Receiver's advertised window, segments.
    pub rwnd: u32,
    /// cwnd before the last reduction (Linux `prior_cwnd`), for `undo_cwnd`.
    pub prior_cwnd: f64,
    /// The ssthresh an undo restores (`tp->prior_ssthresh`): on the Linux stack
    /// `tcp_current_ssthresh` when the Recovery or Loss began, 0 after a CWR (nothing to
    /// restore); on the ns-2 stack ssthresh before the last reduction.
    pub prior_ssthresh: f64,
    /// `snd_una` when the last loss episode began (`tp->undo_marker`, `tcp_init_undo`): a
    /// reduction of that episode may still be undone. The Linux stack clears it when it undoes
    /// the reduction or enters CWR; the ns-2 stack sets it at each loss reduction and clears
    /// it when it undoes one.
    pub undo_marker: Option<u32>,
    /// When the last ACK that delivered data arrived (`tp->delivered_mstamp`; rate sampling).
    pub delivered_mstamp: Time,
    /// Segments deemed lost so far, counted at each marking (`tp->lost`).
    pub lost: u64,
    /// The pipe's counters, with `in_flight` (RFC 6675; Linux's `sacked_out`, `lost_out`,
    /// `retrans_out`): segments SACKed, deemed lost and not retransmitted or acknowledged
    /// since, and retransmissions in the network.
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// Data segments sent, retransmissions included (`tp->data_segs_out`), and
    /// retransmissions (`tp->total_retrans`).
    pub data_segs_out: u64,
    pub total_retrans: u64,
    /// Segments delivered since the current window reduction began (`tp->prr_delivered`,
    /// RFC 6937's `prr_delivered`); the Linux stack's PRR keeps it, the ns-2 stack has none.
    pub prr_delivered: u32,
    /// The RTT estimator: 4 × the mean deviation (Linux's `mdev_us`, kept scaled by 4; zero
    /// under RFC 6298's estimator, which keeps no such value), the retransmission timeout with its
    /// back-off (`icsk_rto`), and the number of back-offs (`icsk_backoff`).
    pub mdev4: Duration,
    pub rto: Duration,
    pub backoff: u32,
    /// What the RTO adds to SRTT before its bounds: Linux's `rttvar_us` (at least the minimum
    /// RTO, decayed once per round trip), or RFC 6298's max(G, 4 × RTTVAR); and Linux's
    /// `mdev_max_us`, the largest `mdev_us` of the round trip (zero under RFC 6298).
    pub rttvar: Duration,
    pub mdev_max: Duration,
    /// Segments received (`tp->segs_in`: the SYN-ACK and every ACK) and segments sent without
    /// data (the SYNs: `tp->segs_out` less `data_segs_out`).
    pub segs_in: u64,
    pub control_segs_out: u64,
    /// The connection's ends: the sending and receiving nodes and the flow (a socket's
    /// addresses and ports, [`Tcb::ipv4_of`]).
    pub node: u32,
    pub peer: u32,
    pub flow: u32,
    /// The connection is application-limited until `delivered` exceeds this
    /// (`tp->app_limited`; `None` = not limited). A controller may set it, as BBR's ProbeRTT
    /// does, so that its own low-rate samples are marked.
    pub app_limited: Option<u64>,
    /// Earliest departure time of the next segment under pacing (`tp->tcp_wstamp_ns`), `now`
    /// or later.
    pub next_departure: Time,
    /// The last delivery-rate sample not application-limited, or the fastest one that is
    /// (`tp->rate_delivered`, `tp->rate_interval_us`, `tp->rate_app_limited`, kept by
    /// `tcp_rate_gen`; TCP_INFO's `tcpi_delivery_rate`).
    pub delivery_rate: Option<DeliveryRateRecord>,
    /// `tp->reordering`: segments of reordering the loss detection allows, the stack's
    /// `tcp.dupack_threshold` until measured reordering raises it (the Linux stack,
    /// `tcp_check_sack_reordering`).
    pub reordering: u32,
    /// `high_tx` when the current (or last) recovery, CWR or loss episode began: Linux's
    /// `tp->high_seq`, RFC 6582's `recover` and RFC 6675's RecoveryPoint on the ns-2 stack.
    pub high_seq: u32,
    /// Retransmissions of the current loss episode that no D-SACK has shown unnecessary
    /// (`tp->undo_retrans`): `tcp_init_undo` starts it at the retransmissions in flight, or -1
    /// for none; each retransmission adds one. 0 before the first episode. Kept by the Linux
    /// stack (the ns-2 stack leaves it at 0).
    pub undo_retrans: i64,
    /// When the first retransmission not yet acknowledged left (`tp->retrans_stamp`); kept by
    /// the Linux stack.
    pub retrans_stamp: Option<Time>,
    /// Timeouts since the cumulative ACK last advanced (`icsk_retransmits`).
    pub rto_retransmits: u32,
    /// Timeouts of the connection (`tp->total_rto`), and those among them that began a
    /// recovery, the first since the ACK last advanced (`tp->total_rto_recoveries`).
    pub total_rto: u64,
    pub total_rto_recoveries: u64,
    /// When the last ACK not older than `snd_una` arrived (`tp->rcv_tstamp`, set by `tcp_ack`).
    pub rcv_tstamp: Time,
    /// The tail-loss probe in flight: `high_tx` after it was sent (`tp->tlp_high_seq`), and
    /// whether it sent the last segment again rather than new data (`tp->tlp_retrans`). Kept by
    /// the Linux stack's RACK-TLP.
    pub tlp_high_seq: Option<u32>,
    pub tlp_retrans: bool,
}

/// A recorded delivery rate (see [`Tcb::delivery_rate`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryRateRecord {
    /// Segments delivered over `interval`.
    pub delivered: u64,
    pub interval: Duration,
    pub app_limited: bool,
}

impl Tcb {
    pub fn new(
        mss_bytes: u32,
        wire_bytes: u32,
        initial_window: f64,
        initial_ssthresh: f64,
    ) -> Self {
        Tcb {
            cwnd: initial_window,
            ssthresh: initial_ssthresh,
            mss_bytes,
            wire_bytes,
            srtt: None,
            min_rtt: None,
            latest_rtt: None,
            snd_una: 0,
            high_tx: 0,
            in_flight: 0,
            delivered: 0,
            delivered_ce: 0,
            ecn: false,
            ca_state: CaState::Open,
            pacing_rate: None,
            max_pacing_rate: None,
            pacing_ratios: crate::tcp::PacingRatios::LINUX,
            exit_reason_hint: None,
            cwnd_limited: true,
            is_cwnd_limited: true,
            max_packets_out: 0,
            lsndtime: Time::ZERO,
            rwnd: u32::MAX,
            prior_cwnd: initial_window,
            prior_ssthresh: 0.0,
            undo_marker: None,
            delivered_mstamp: Time::ZERO,
            lost: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            data_segs_out: 0,
            total_retrans: 0,
            prr_delivered: 0,
            mdev4: Duration::ZERO,
            rttvar: Duration::ZERO,
            mdev_max: Duration::ZERO,
            segs_in: 0,
            control_segs_out: 0,
            rto: Duration::from_secs(1),
            backoff: 0,
            node: 0,
            peer: 0,
            flow: 0,
            app_limited: None,
            next_departure: Time::ZERO,
            delivery_rate: None,
            reordering: 3,
            high_seq: 0,
            undo_retrans: 0,
            retrans_stamp: None,
            rto_retransmits: 0,
            total_rto: 0,
            total_rto_recoveries: 0,
            rcv_tstamp: Time::ZERO,
            tlp_high_seq: None,
            tlp_retrans: false,
        }
    }

    /// The IPv4 address of node `node` as a socket sees it: 198.18.0.0/15 numbered as the
    /// kernel world numbers its hosts in its first address block (250 per third octet, from .1).
    pub fn ipv4_of(node: u32) -> u32 {
        u32::from_be_bytes([198, 18, 0, 0]) + (node / 250) * 256 + node % 250 + 1
    }

    /// A flow's ports, the same in both worlds (the kernel world binds its sockets to them):
    /// the sender's from 20000, the receiver's from 5001.
    pub fn local_port(flow: u32) -> u16 {
        20_000 + (flow % 15_000) as u16
    }
    pub fn peer_port(flow: u32) -> u16 {
        5001 + (flow % 15_000) as u16
    }

    /// Linux `tcp_in_slow_start`.
    /// Linux `tcp_snd_cwnd`: cwnd in whole segments, at least 1.
    pub fn snd_cwnd(&self) -> u64 {
        self.cwnd.max(1.0).floor() as u64
    }

    /// Linux `snd_ssthresh`: ssthresh in whole segments, [`INFINITE_SSTHRESH`] when unlimited.
    pub fn snd_ssthresh(&self) -> u64 {
        ssthresh_segments(self.ssthresh)
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Segments between `snd_una` and `high_tx` (RFC 5681 FlightSize).
    pub fn flight_size(&self) -> u32 {
        self.high_tx - self.snd_una
    }
}

/// Linux `TCP_INFINITE_SSTHRESH`: the ssthresh of a socket that has none.
pub const INFINITE_SSTHRESH: u64 = 0x7fff_ffff;

/// An ssthresh (segments, `f64::INFINITY` for none) as Linux's `snd_ssthresh` holds it.
pub fn ssthresh_segments(ssthresh: f64) -> u64 {
    if ssthresh.is_finite() {
        (ssthresh.max(0.0) as u64).min(INFINITE_SSTHRESH)
    } else {
        INFINITE_SSTHRESH
    }
}

/// Linux's `sk_pacing_rate` (payload bytes per second) as the sender's pacing rate: the sender
/// spaces wire bytes, so the rate is scaled by wire / payload bytes, and a full segment leaves
/// every `mss / rate` seconds, as Linux's internal pacing spaces them (`skb->len` is payload).
pub fn rate_of_sk_pacing_rate(payload_bytes_per_s: u64, tcb: &Tcb) -> Rate {
    let bps =
        payload_bytes_per_s as u128 * 8 * tcb.wire_bytes as u128 / tcb.mss_bytes.max(1) as u128;
    Rate::from_bps(bps.clamp(1, u64::MAX as u128) as u64)
}

/// The inverse of [`rate_of_sk_pacing_rate`]: the sender's rate (wire bytes) as Linux's
/// `sk_pacing_rate`, payload bytes per second.
pub fn sk_pacing_rate_of(rate: Rate, tcb: &Tcb) -> u64 {
    (rate.bps() as u128 * tcb.mss_bytes.max(1) as u128 / tcb.wire_bytes.max(1) as u128 / 8) as u64
}

/// What an ACK acknowledged, for `cong_avoid`.
#[derive(Copy, Clone, Debug)]
pub struct Ack {
    /// Segments newly delivered by this ACK, cumulatively or by SACK (Linux `acked`); segments
    /// SACKed by earlier ACKs are not counted again when the cumulative ACK passes them.
    pub acked: u32,
    /// The cumulative ACK (next segment expected by the receiver).
    pub ack_seq: u32,
}

/// Per-ACK sample for `pkts_acked` (Linux `struct ack_sample`).
#[derive(Copy, Clone, Debug)]
pub struct AckSample {
    /// Segments newly delivered (cumulatively or selectively acknowledged).
    pub acked: u32,
    /// RTT measured on this ACK (Karn's rule: never from a retransmitted segment).
    pub rtt: Option<Duration>,
    /// `in_flight` before this ACK.
    pub prior_in_flight: u32,
}

/// Delivery-rate sample for `cong_control` (Linux `struct rate_sample`, computed as
/// net/ipv4/tcp_rate.c computes it; see `tcp::rate`).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct RateSample {
    /// `tcb.delivered` when the sampled segment was sent (`prior_delivered`).
    pub prior_delivered: u64,
    /// Segments delivered since the sampled segment was sent; `None` when the ACK delivered no
    /// segment with timing information (Linux: -1).
    pub delivered: Option<u64>,
    /// The longer of the send and ACK phases; `None` when there is no valid rate (no timing, or
    /// an interval shorter than the minimum RTT; Linux: -1).
    pub interval: Option<Duration>,
    /// From the first to the last send of the sampled flight (`snd_interval_us`).
    pub send_interval: Duration,
    /// From the delivery before the sampled segment was sent to this ACK (`rcv_interval_us`).
    pub ack_interval: Duration,
    /// `in_flight` before this ACK.
    pub prior_in_flight: u32,
    /// RTT of the newest segment delivered, if never retransmitted (`rtt_us`).
    pub rtt: Option<Duration>,
    /// Segments newly delivered by this ACK, cumulatively or selectively (`acked_sacked`).
    pub acked_sacked: u32,
    /// Segments newly deemed lost while processing this ACK (`losses`).
    pub losses: u32,
    /// The sampled segment was sent while the connection was application-limited.
    pub is_app_limited: bool,
    /// The sampled segment was a retransmission.
    pub is_retrans: bool,
    /// Segments in flight just after the sampled segment was sent, itself included (BBRv3's
    /// `rs->tx_in_flight` from `TCP_SKB_CB(skb)->tx.in_flight`; not in mainline Linux).
    pub tx_in_flight: u32,
    /// Segments marked lost since the sampled segment was sent (BBRv3's `rs->lost`,
    /// `tp->lost - tx.lost`; not in mainline Linux).
    pub lost: u32,
    /// `tcb.delivered_ce` when the sampled segment was sent (`prior_delivered_ce`).
    pub prior_delivered_ce: u64,
    /// Segments delivered with an ECN echo since the sampled segment was sent
    /// (`delivered_ce`; 0 when there is no sample).
    pub delivered_ce: u64,
}

impl RateSample {
    /// Delivery rate in segments per second, if the sample is valid.
    pub fn segments_per_second(&self) -> Option<f64> {
        let (d, i) = (self.delivered?, self.interval?);
        (!i.is_zero()).then(|| d as f64 / i.as_secs_f64())
    }
}

/// A congestion controller. See the module docs for when each hook fires.
pub trait CongestionControl: fmt::Debug {
    /// The connection is established; set initial state (cwnd and ssthresh are already set from
    /// the scenario).
    fn init(&mut self, _tcb: &mut Tcb, _now: Time) {}

    /// The connection is closed and its socket goes away (`tcp_cleanup_congestion_control`,
    /// the `release` of a `tcp_congestion_ops`): when all its data is acknowledged, or when it
    /// is stopped.
    fn release(&mut self, _tcb: &mut Tcb, _now: Time) {}

    /// A loss was detected; return the new ssthresh in segments. The sender then sets cwnd for
    /// recovery itself (RFC 5681 / 6582 / 6675 rules).
    fn ssthresh(&mut self, tcb: &mut Tcb, now: Time) -> f64;

    /// An ACK advanced `snd_una` outside loss recovery (or after a timeout): grow cwnd.
    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time);

    /// The loss-recovery state changed to `state` (`tcb.ca_state` still holds the old one).
    fn set_state(&mut self, _tcb: &mut Tcb, _state: CaState, _now: Time) {}

    /// A discrete event of the sender.
    fn cwnd_event(&mut self, _tcb: &mut Tcb, _event: CwndEvent, _now: Time) {}

    /// Every ACK that delivers data, before `cong_avoid`.
    fn pkts_acked(&mut self, _tcb: &mut Tcb, _sample: &AckSample, _now: Time) {}

    /// A reduction was spurious: return the cwnd to restore (default as Linux
    /// `tcp_reno_undo_cwnd`: the larger of the current and the prior window).
    fn undo_cwnd(&mut self, tcb: &mut Tcb) -> f64 {
        tcb.cwnd.max(tcb.prior_cwnd)
    }

    /// Controllers that set cwnd and pacing from delivery-rate samples implement this and return
    /// `true`; `cong_avoid` is then not called.
    fn cong_control(&mut self, _tcb: &mut Tcb, _rs: &RateSample, _now: Time) -> bool {
        false
    }

    /// Whether the controller sets cwnd and the pacing rate itself on every ACK (it has Linux's
    /// `cong_control`). The stacks then leave cwnd alone in recovery (no PRR, no reduction to
    /// ssthresh at its end, as `tcp_cong_control` and `tcp_end_cwnd_reduction`) and do not set
    /// a pacing rate of their own (`tcp_update_pacing_rate` is not called).
    fn has_cong_control(&self) -> bool {
        false
    }

    /// Whether the flow is still in its start-up phase, for the reported phase and the
    /// slow-start exit. By default, while cwnd < ssthresh.
    fn in_startup(&self, tcb: &Tcb) -> bool {
        tcb.in_slow_start()
    }

    /// For controllers that classify losses (BLAST, Ha 2009 §7.3.2): the loss events judged so
    /// far as (congestion, not congestion). `None` for controllers that treat every loss alike.
    fn loss_verdicts(&self) -> Option<LossVerdicts> {
        None
    }

    /// Every ACK, once the segments it delivered are counted (`delivered`, `delivered_ce`,
    /// `snd_una`), before the loss-recovery state machine (Linux `tcp_in_ack_event`).
    fn in_ack_event(&mut self, _tcb: &mut Tcb, _event: AckEvent, _now: Time) {}

    /// Whether the controller needs ECN whatever the scenario says (Linux
    /// `TCP_CONG_NEEDS_ECN`, DCTCP): the flow negotiates ECN, sends every data segment ECT, and
    /// its receiver echoes each segment's CE state.
    fn needs_ecn(&self) -> bool {
        false
    }

    /// Why the controller stopped working, if it did (an eBPF program that broke a rule of the
    /// simulator's VM while running); the run then fails with it.
    fn error(&self) -> Option<String> {
        None
    }

    /// The connection's own random stream, given once before `init`, for a controller that
    /// draws (BBR's ProbeBW phase, Linux `prandom_u32_max`).
    fn seed(&mut self, _rng: Rng) {}

    /// What a model-based controller (BBR) shows of its model, for `flow_series`.
    fn model_state(&self, _tcb: &Tcb) -> Option<ModelState> {
        None
    }

    /// Whether the controller is told of each segment marked lost ([`Self::skb_marked_lost`]).
    fn wants_lost_segments(&self) -> bool {
        false
    }

    /// A segment was just marked lost (BBRv3's `skb_marked_lost`, called from
    /// `tcp_mark_skb_lost` in Google's v3 kernel); `tcb.lost` counts it.
    fn skb_marked_lost(&mut self, _tcb: &mut Tcb, _seg: &LostSegment, _now: Time) {}

    /// A data segment has just been sent (new data or a retransmission): the pacer has counted
    /// it and `tcb.in_flight` and `tcb.high_tx` include it; `tcb.next_departure` is when the
    /// next segment may leave. Linux's `tcp_congestion_ops` has no such hook: it stands for
    /// code in `tcp_update_skb_after_send`, where the authors' SUSS kernel raises cwnd and
    /// starts pacing. A controller may raise `tcb.cwnd`, set `tcb.pacing_rate`, and move
    /// `tcb.next_departure` later (Linux `tcp_wstamp_ns`): the next segment then waits for it.
    /// eBPF programs have no such hook.
    fn on_transmit(&mut self, _tcb: &mut Tcb, _now: Time) {}

    /// Whether it resumes from saved path state (Careful Resume, a start-up algorithm).
    fn resumes(&self) -> bool {
        false
    }

    /// The saved state of the connection's path, when there is some to use.
    fn resume_from(&mut self, _saved: ResumeState) {}

    /// What the connection leaves in the path cache when it closes.
    fn path_observation(&self, _tcb: &Tcb, _now: Time) -> PathObservation {
        PathObservation::Keep
    }
}

/// A segment just marked lost, as BBRv3's `skb_marked_lost` hook sees it (Google's v3 kernel;
/// mainline Linux has no such hook): what was in flight and lost when it was last sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LostSegment {
    /// Segments in flight just after it was sent, itself included (`tx.in_flight`).
    pub tx_in_flight: u32,
    /// `tp->lost` when it was sent (`tx.lost`).
    pub tx_lost: u64,
    /// It was sent while the connection was application-limited (`tx.is_app_limited`).
    pub is_app_limited: bool,
}

/// A model-based controller's view of the path and its mode (BBR's `bbr_get_info` plus the
/// mode), as `flow_series` records it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ModelState {
    /// The controller's own name for its state (`"startup"`, `"drain"`, `"probe-bw"`, …).
    pub mode: &'static str,
    /// Bottleneck-bandwidth estimate, payload bits per second.
    pub bw: Rate,
    pub min_rtt: Option<Duration>,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
}

/// Loss events a classifying controller has judged (each controller says what it counts).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LossVerdicts {
    pub congestion: u64,
    pub non_congestion: u64,
}

/// A slow-start (start-up) algorithm, used while `cwnd < ssthresh`.
pub trait SlowStart: fmt::Debug {
    /// The connection is established.
    fn init(&mut self, _tcb: &mut Tcb, _now: Time) {}

    /// Grow cwnd for an ACK while in slow start. Returns the acknowledged segments not used
    /// because cwnd reached ssthresh; they go to congestion avoidance.
    fn on_ack(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) -> u32;

    /// Every ACK that delivers data (RTT samples for delay-based detectors).
    fn pkts_acked(&mut self, _tcb: &mut Tcb, _sample: &AckSample, _now: Time) {}

    /// The loss-recovery state changed.
    fn set_state(&mut self, _tcb: &mut Tcb, _state: CaState, _now: Time) {}

    /// Whether start-up is still under way. By default, while cwnd < ssthresh; an algorithm
    /// whose start-up alternates phases around ssthresh (Astart's mini-linear phases) says so
    /// here, so that its exit is not reported at the first crossing.
    fn in_startup(&self, tcb: &Tcb) -> bool {
        tcb.in_slow_start()
    }

    /// A discrete event of the sender (forwarded by [`WithStartup`]).
    fn cwnd_event(&mut self, _tcb: &mut Tcb, _event: CwndEvent, _now: Time) {}

    /// A loss was detected; `ssthresh` is the controller's choice. A start-up algorithm may
    /// replace it (Westwood's ERE-based ssthresh after a timeout, for example).
    fn on_loss(&mut self, _tcb: &mut Tcb, ssthresh: f64, _now: Time) -> f64 {
        ssthresh
    }

    /// A loss or an ECN echo is about to have the controller compute ssthresh (before
    /// [`CongestionControl::ssthresh`]): a start-up algorithm may change cwnd first, as
    /// code the authors' SUSS kernel runs in `tcp_init_cwnd_reduction` does.
    fn before_ssthresh(&mut self, _tcb: &mut Tcb, _now: Time) {}

    /// Every ACK that reaches `cong_avoid`, first, in or out of slow start and before the test
    /// of whether the flow is cwnd-limited: the part of a controller's `cong_avoid` that runs
    /// before `tcp_slow_start` (SUSS's measurements in its `cubictcp_cong_avoid`).
    fn before_cong_avoid(&mut self, _tcb: &mut Tcb, _ack: &Ack, _now: Time) {}

    /// Every ACK, as [`CongestionControl::in_ack_event`].
    fn in_ack_event(&mut self, _tcb: &mut Tcb, _event: AckEvent, _now: Time) {}

    /// A data segment has just been sent, as [`CongestionControl::on_transmit`].
    fn on_transmit(&mut self, _tcb: &mut Tcb, _now: Time) {}

    /// Whether it resumes from saved path state (Careful Resume).
    fn resumes(&self) -> bool {
        false
    }

    /// The saved state of the connection's path, when there is some to use.
    fn resume_from(&mut self, _saved: ResumeState) {}

    /// What the connection leaves in the path cache when it closes.
    fn path_observation(&self, _tcb: &Tcb, _now: Time) -> PathObservation {
        PathObservation::Keep
    }
}

/// What a closing connection does to its path's saved state (Careful Resume).
#[derive(Clone, Debug, PartialEq)]
pub enum PathObservation {
    /// Leave it as it is.
    Keep,
    /// Delete it (Safe Retreat was entered).
    Delete,
    /// Replace it with this.
    Save(ResumeState),
}

/// A controller whose slow start is replaced by `startup`.
#[derive(Debug)]
pub struct WithStartup {
    pub cc: Box<dyn CongestionControl>,
    pub startup: Box<dyn SlowStart>,
}

impl CongestionControl for WithStartup {
    fn init(&mut self, tcb: &mut Tcb, now: Time) {
        self.cc.init(tcb, now);
        self.startup.init(tcb, now);
    }
    fn ssthresh(&mut self, tcb: &mut Tcb, now: Time) -> f64 {
        self.startup.before_ssthresh(tcb, now);
        let s = self.cc.ssthresh(tcb, now);
        self.startup.on_loss(tcb, s, now)
    }
    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        self.startup.before_cong_avoid(tcb, ack, now);
        let mut ack = *ack;
        if tcb.in_slow_start() {
            // Linux grows cwnd only when the flow is cwnd-limited (`tcp_is_cwnd_limited`).
            if !tcb.cwnd_limited {
                return;
            }
            ack.acked = self.startup.on_ack(tcb, &ack, now);
            if ack.acked == 0 {
                return;
            }
        }
        self.cc.cong_avoid(tcb, &ack, now);
    }
    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, now: Time) {
        self.startup.set_state(tcb, state, now);
        self.cc.set_state(tcb, state, now);
    }
    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, now: Time) {
        self.cc.cwnd_event(tcb, event, now);
        self.startup.cwnd_event(tcb, event, now);
    }
    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.startup.pkts_acked(tcb, sample, now);
        self.cc.pkts_acked(tcb, sample, now);
    }
    fn undo_cwnd(&mut self, tcb: &mut Tcb) -> f64 {
        self.cc.undo_cwnd(tcb)
    }
    fn in_ack_event(&mut self, tcb: &mut Tcb, event: AckEvent, now: Time) {
        self.startup.in_ack_event(tcb, event, now);
        self.cc.in_ack_event(tcb, event, now);
    }
    fn on_transmit(&mut self, tcb: &mut Tcb, now: Time) {
        self.cc.on_transmit(tcb, now);
        self.startup.on_transmit(tcb, now);
    }
    fn needs_ecn(&self) -> bool {
        self.cc.needs_ecn()
    }
    fn in_startup(&self, tcb: &Tcb) -> bool {
        self.startup.in_startup(tcb)
    }
    fn cong_control(&mut self, tcb: &mut Tcb, rs: &RateSample, now: Time) -> bool {
        self.cc.cong_control(tcb, rs, now)
    }
    fn resumes(&self) -> bool {
        self.startup.resumes()
    }
    fn resume_from(&mut self, saved: ResumeState) {
        self.startup.resume_from(saved)
    }
    fn path_observation(&self, tcb: &Tcb, now: Time) -> PathObservation {
        self.startup.path_observation(tcb, now)
    }
    fn has_cong_control(&self) -> bool {
        self.cc.has_cong_control()
    }
    fn seed(&mut self, rng: Rng) {
        self.cc.seed(rng);
    }
    fn model_state(&self, tcb: &Tcb) -> Option<ModelState> {
        self.cc.model_state(tcb)
    }
    fn wants_lost_segments(&self) -> bool {
        self.cc.wants_lost_segments()
    }
    fn skb_marked_lost(&mut self, tcb: &mut Tcb, seg: &LostSegment, now: Time) {
        self.cc.skb_marked_lost(tcb, seg, now);
    }
    fn loss_verdicts(&self) -> Option<LossVerdicts> {
        self.cc.loss_verdicts()
    }
    fn error(&self) -> Option<String> {
        self.cc.error()
    }
}
