//! What a run records: per-flow and per-queue time series, per-flow and per-link summaries,
//! exact utilization windows, and Jain's fairness index.
//!
//! The tables are declared once, in [`schema`]'s notation; [`recorder`] fills them during a run.

pub mod recorder;
pub mod schema;

pub use recorder::Recorder;
use schema::{table, Table, TableDef};

table! {
    /// Per-flow samples: one row per TCP flow per sampling instant (or per ACK).
    FlowSeries, FlowSample, "flow_series" {
        /// Sample time since the start of the run.
        time_ns: i64 = "ns",
        /// Flow id (the `flow` of the flows table).
        flow: u32 = "",
        /// Congestion window.
        cwnd: f64 = "segments",
        /// Slow-start threshold; null while unlimited.
        ssthresh: Option<f64> = "segments",
        /// Smoothed RTT; null before the first RTT sample.
        srtt_ns: Option<i64> = "ns",
        /// Latest RTT sample; null before the first.
        rtt_ns: Option<i64> = "ns",
        /// Segments sent and not yet acknowledged or marked lost (the sender's pipe, `tcp_packets_in_flight`). The kernel world reads it from `tcp_probe`, which carries no scoreboard: there it is `snd_nxt - snd_una` (RFC 5681's FlightSize, SACKed and lost segments included), so in recovery it stays above the simulator's.
        in_flight: u32 = "segments",
        /// Payload delivered in order to the receiving application.
        delivered_bytes: u64 = "bytes",
        /// Phase code; the names are `cc::Phase::NAMES`.
        phase: u8 = "",
        /// Pacing rate; null when the flow is not paced.
        pacing_rate_bps: Option<f64> = "bit/s",
        /// The last delivery-rate sample kept as TCP_INFO's tcpi_delivery_rate (payload); null before one (kernel world: flows of BBR and of eBPF ports with cong_control).
        delivery_rate_bps: Option<f64> = "bit/s",
        /// A model-based controller's (BBR's) bottleneck-bandwidth estimate (payload); null for others.
        model_bw_bps: Option<f64> = "bit/s",
        /// A model-based controller's minimum-RTT estimate; null for the others.
        model_min_rtt_ns: Option<i64> = "ns",
        /// A model-based controller's pacing gain; null for the others.
        pacing_gain: Option<f64> = "",
        /// A model-based controller's cwnd gain; null for the others.
        cwnd_gain: Option<f64> = "",
        /// A model-based controller's state (BBR: `startup`, `drain`, `probe-bw`, `probe-rtt`; BBRv3's ProbeBW by phase: `probe-bw-down`, `-cruise`, `-refill`, `-up`); null for others and in the kernel world.
        model_state: Option<String> = "",
    }
}

table! {
    /// Per-link queue samples of the sampled links.
    QueueSeries, QueueSample, "queue_series" {
        /// Sample time since the start of the run.
        time_ns: i64 = "ns",
        /// Link id (the `link` of the links table).
        link: u32 = "",
        /// Packets waiting, not counting the one being transmitted.
        queue_packets: u32 = "packets",
        /// Bytes waiting.
        queue_bytes: u64 = "bytes",
        /// Packets dropped by the queue discipline so far.
        drops: u64 = "packets",
        /// Packets lost at random (non-congestion losses) so far.
        losses: u64 = "packets",
        /// Time the transmitter has been busy since t = 0.
        busy_ns: i64 = "ns",
        /// The link's rate at this time (its schedule's; a trace's: its delivery opportunities over the last 100 ms).
        rate_bps: f64 = "bit/s",
        /// The link's propagation delay at this time (its schedule's, without jitter).
        delay_ns: i64 = "ns",
        /// Bytes that started transmission since t = 0.
        sent_bytes: u64 = "bytes",
        /// Bytes the link's capacity offered since t = 0, for a link whose capacity varies (a rate schedule or a trace); null for a constant rate.
        offered_bytes: Option<f64> = "bytes",
        /// Packets the queue discipline marked CE so far.
        marks: u64 = "packets",
        /// Mean sojourn (queued until transmission starts) of the packets an AQM sent, or a FIFO admitted, since the link's previous row; null if none.
        sojourn_ns: Option<i64> = "ns",
    }
}

table! {
    /// One row per flow (TCP connection or UDP source): totals, goodput, slow-start exit, completion.
    Flows, FlowSummary, "flows" {
        /// Flow id.
        flow: u32 = "",
        /// The entry's label (or its algorithm or kind), `#k` on the copies of a `count` entry.
        label: String = "",
        /// `tcp`, `cbr` or `on-off`.
        kind: String = "",
        /// Congestion control; null for UDP.
        cc: Option<String> = "",
        /// Start-up algorithm (`default`: the controller's own); null for UDP.
        startup: Option<String> = "",
        /// Sending host.
        src: String = "",
        /// Receiving host.
        dst: String = "",
        /// When the flow started.
        start_ns: i64 = "ns",
        /// Bytes to send; null for unlimited flows and UDP.
        size_bytes: Option<i64> = "bytes",
        /// Payload delivered in order to the receiving application.
        delivered_bytes: u64 = "bytes",
        /// Delivered bytes over the time from the start to the end of the run or the close.
        goodput_bps: f64 = "bit/s",
        /// Packets sent, retransmissions included.
        sent_packets: u64 = "packets",
        /// Segments retransmitted.
        retransmissions: u64 = "packets",
        /// Retransmission timeouts.
        timeouts: u64 = "",
        /// Fast retransmits that started a recovery.
        fast_recoveries: u64 = "",
        /// Window reductions undone as spurious (`tcp.undo`); null where a world cannot count them per flow.
        undos: Option<u64> = "",
        /// Packets of this flow (either direction) dropped by queues or lost on links; null where a world cannot see them.
        drops: Option<u64> = "packets",
        /// When the first slow start ended, after the flow's start; null if it never ended.
        ss_exit_ns: Option<i64> = "ns",
        /// cwnd when the first slow start ended; null if it never ended.
        ss_exit_cwnd: Option<f64> = "segments",
        /// Why it ended (`threshold`, `loss`, `timeout` or a detector's name); null if it never ended.
        ss_exit_reason: Option<String> = "",
        /// Loss events the controller judged congestion (BLAST, Ha 2009 §7.3.2); null if it does not classify.
        congestion_losses: Option<i64> = "",
        /// Loss events the controller judged non-congestion; null if it does not classify.
        noncongestion_losses: Option<i64> = "",
        /// From the start to the acknowledgement of the last byte; null if unfinished or unlimited.
        completion_ns: Option<i64> = "ns",
        /// Smallest RTT sample of the connection; null without a sample, and for UDP.
        min_rtt_ns: Option<i64> = "ns",
        /// Data segments that reached the receiver marked CE; null for UDP and where a world cannot count them.
        ce_marks: Option<u64> = "packets",
        /// Window reductions for an ECN echo; null for UDP and where a world cannot count them.
        ecn_reductions: Option<u64> = "",
    }
}

table! {
    /// One row per link direction: configuration, totals and utilization over the whole run.
    Links, LinkSummary, "links" {
        /// Link id.
        link: u32 = "",
        /// `from->to`.
        name: String = "",
        /// The scenario's name for it (`bottleneck`, `hop0`, …); null if it has none.
        alias: Option<String> = "",
        /// Node it leaves.
        src: String = "",
        /// Node it reaches.
        dst: String = "",
        /// Transmission rate (at t = 0, for a link whose rate varies).
        rate_bps: f64 = "bit/s",
        /// Mean capacity over the run (the rate, for a constant link).
        mean_rate_bps: f64 = "bit/s",
        /// Propagation delay (at t = 0, for a link whose delay varies).
        delay_ns: i64 = "ns",
        /// Queue discipline (`droptail`, `red`, `codel`, `fq_codel`, `pie`).
        queue: String = "",
        /// Queue limit in packets; null when limited in bytes.
        limit_packets: Option<i64> = "packets",
        /// Queue limit in bytes; null when limited in packets.
        limit_bytes: Option<i64> = "bytes",
        /// Packets that started transmission.
        forwarded_packets: u64 = "packets",
        /// Bytes that started transmission.
        forwarded_bytes: u64 = "bytes",
        /// Packets dropped by the queue discipline (arrivals refused, and an AQM's drops at dequeue or overflow).
        drops: u64 = "packets",
        /// Packets lost at random.
        losses: u64 = "packets",
        /// Fraction of the run the transmitter was busy; for a link whose capacity varies, the bytes sent over the bytes its capacity offered.
        utilization: f64 = "ratio",
        /// Largest queue seen.
        max_queue_packets: u32 = "packets",
        /// Packets the queue discipline marked CE.
        marks: u64 = "packets",
        /// Mean sojourn (queued until transmission starts) of the packets an AQM sent or a FIFO admitted (a FIFO fixes it at admission); null if none.
        mean_sojourn_ns: Option<i64> = "ns",
        /// Median of those sojourns (nearest rank, to within 1/32 of its value: the middle of its histogram bucket, never above the largest); null if none.
        p50_sojourn_ns: Option<i64> = "ns",
        /// Their 90th percentile, read as the median is.
        p90_sojourn_ns: Option<i64> = "ns",
        /// Their 99th percentile, read as the median is.
        p99_sojourn_ns: Option<i64> = "ns",
        /// Largest of those sojourns; null if none.
        max_sojourn_ns: Option<i64> = "ns",
    }
}

table! {
    /// The exact utilization windows of `[[measure.window]]`.
    Windows, WindowResult, "windows" {
        /// The link's name (`from->to`).
        link: String = "",
        /// Window start.
        from_ns: i64 = "ns",
        /// Window end (at most the end of the run).
        to_ns: i64 = "ns",
        /// Fraction of the window the transmitter was busy (of the capacity offered, on a link whose capacity varies).
        utilization: f64 = "ratio",
    }
}

table! {
    /// One row per response of a connection whose application writes them one at a time (a flow's `requests`).
    Requests, RequestRow, "requests" {
        /// Flow id.
        flow: u32 = "",
        /// The flow's label.
        label: String = "",
        /// 0 for the connection's first response.
        request: u32 = "",
        /// Payload bytes of the response.
        bytes: u64 = "bytes",
        /// When the application wrote it, since the start of the run.
        start_ns: i64 = "ns",
        /// From the write to the acknowledgement of its last byte; null if unfinished.
        completion_ns: Option<i64> = "ns",
        /// cwnd it started with: after any restart after idle, once the connection could send.
        start_cwnd: f64 = "segments",
        /// ssthresh then; null while unlimited.
        start_ssthresh: Option<f64> = "segments",
        /// How long the connection had sent no data when it was written (0 for the first response).
        idle_ns: i64 = "ns",
        /// 1 if the window was restarted after idle (`tcp.restart_after_idle`) when it was written.
        restarted: u8 = "",
    }
}

/// The declarations of every table, in the order they are written.
pub const TABLES: [TableDef; 6] = [
    FlowSeries::DEF,
    QueueSeries::DEF,
    Flows::DEF,
    Links::DEF,
    Windows::DEF,
    Requests::DEF,
];

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunStats {
    /// Events taken off the event queue (each packet arrival at a node, each timer, each sample).
    pub events: u64,
    /// Packets that started transmission on some link (one per link crossed).
    pub packets_forwarded: u64,
    pub sim_time_ns: u64,
    /// Packets created by endpoints, delivered to hosts, dropped by queues or lost on links, and
    /// still in the network at the end: created = delivered + dropped + in_network.
    pub packets_created: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub packets_in_network: u64,
    /// Jain's index over the goodput of TCP flows; `None` if there are none.
    pub jain_index: Option<f64>,
}

/// Everything a run produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub flow_series: FlowSeries,
    pub queue_series: QueueSeries,
    pub flows: Flows,
    pub links: Links,
    pub windows: Windows,
    pub requests: Requests,
    pub stats: RunStats,
    /// Controllers that stopped working during the run (an eBPF program that broke a rule of
    /// the simulator's VM), one line each naming the flow: a run with any is not a result.
    pub errors: Vec<String>,
}

/// Jain's fairness index (Σx)² / (n Σx²): 1 when all are equal, 1/n when one takes everything.
/// NaN for an empty input; 1 when every value is zero.
impl Flows {
    /// Jain's fairness index over the goodputs of the TCP flows; `None` without any.
    pub fn tcp_jain_index(&self) -> Option<f64> {
        let goodputs: Vec<f64> = (0..self.len())
            .filter(|&i| self.kind[i] == "tcp")
            .map(|i| self.goodput_bps[i])
            .collect();
        Some(jain_index(&goodputs)).filter(|x| x.is_finite())
    }
}

pub fn jain_index(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let sum: f64 = xs.iter().sum();
    let sum_sq: f64 = xs.iter().map(|x| x * x).sum();
    if sum_sq == 0.0 {
        return 1.0;
    }
    sum * sum / (xs.len() as f64 * sum_sq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_by_hand() {
        assert_eq!(jain_index(&[3.0, 3.0, 3.0]), 1.0);
        assert_eq!(jain_index(&[1.0, 0.0]), 0.5);
        // (1 + 2 + 3)^2 / (3 * 14) = 36 / 42
        assert!((jain_index(&[1.0, 2.0, 3.0]) - 36.0 / 42.0).abs() < 1e-12);
        assert!(jain_index(&[]).is_nan());
    }
}
