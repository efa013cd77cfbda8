//! What a run records: per-flow and per-queue time series (columnar, ready for Arrow), per-flow
//! and per-link summaries, exact utilization windows, and Jain's fairness index.

/// Per-flow samples. Column `i` of every vector belongs to the same sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowSeries {
    pub time_ns: Vec<i64>,
    pub flow: Vec<u32>,
    /// Segments.
    pub cwnd: Vec<f64>,
    /// Segments; +inf when unlimited.
    pub ssthresh: Vec<f64>,
    /// -1 before the first sample.
    pub srtt_ns: Vec<i64>,
    /// Latest RTT sample; -1 before the first.
    pub rtt_ns: Vec<i64>,
    /// Segments.
    pub in_flight: Vec<u32>,
    /// Payload bytes delivered in order to the receiving application.
    pub delivered_bytes: Vec<u64>,
    /// `cc::Phase` as u8.
    pub phase: Vec<u8>,
    /// 0 when not paced.
    pub pacing_rate_bps: Vec<f64>,
}

impl FlowSeries {
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }
}

/// Per-link queue samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueSeries {
    pub time_ns: Vec<i64>,
    pub link: Vec<u32>,
    pub queue_packets: Vec<u32>,
    pub queue_bytes: Vec<u64>,
    /// Cumulative drops by the queue discipline.
    pub drops: Vec<u64>,
    /// Cumulative random (non-congestion) losses.
    pub losses: Vec<u64>,
    /// Cumulative time the transmitter was busy since t = 0.
    pub busy_ns: Vec<i64>,
}

impl QueueSeries {
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSummary {
    pub flow: u32,
    pub label: String,
    /// "tcp", "cbr" or "on-off".
    pub kind: String,
    pub cc: String,
    pub startup: String,
    pub src: String,
    pub dst: String,
    pub start_ns: i64,
    /// -1 for unlimited flows.
    pub size_bytes: i64,
    pub delivered_bytes: u64,
    pub goodput_bps: f64,
    pub sent_packets: u64,
    pub retransmissions: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Reductions undone as spurious (`tcp.undo`).
    pub undos: u64,
    /// Packets of this flow (either direction) dropped by queues or lost on links.
    pub drops: u64,
    /// -1: slow start never ended.
    pub ss_exit_ns: i64,
    pub ss_exit_cwnd: f64,
    pub ss_exit_reason: String,
    /// Loss events the controller judged congestion / not congestion (BLAST's classifier,
    /// Ha 2009 §7.3.2); -1 for controllers that do not classify losses.
    pub congestion_losses: i64,
    pub noncongestion_losses: i64,
    /// From the flow's start to the acknowledgement of its last byte; -1 if unfinished.
    pub completion_ns: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkSummary {
    pub link: u32,
    pub name: String,
    pub alias: String,
    pub src: String,
    pub dst: String,
    pub rate_bps: f64,
    pub delay_ns: i64,
    pub queue: String,
    pub limit_packets: i64,
    pub limit_bytes: i64,
    pub forwarded_packets: u64,
    pub forwarded_bytes: u64,
    pub drops: u64,
    pub losses: u64,
    pub utilization: f64,
    pub max_queue_packets: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WindowResult {
    pub link: String,
    pub from_ns: i64,
    pub to_ns: i64,
    pub utilization: f64,
}

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
    /// Jain's index over the goodput of TCP flows (NaN if there are none).
    pub jain_index: f64,
}

/// Everything a run produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub flow_series: FlowSeries,
    pub queue_series: QueueSeries,
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
    pub windows: Vec<WindowResult>,
    pub stats: RunStats,
}

/// Jain's fairness index (Σx)² / (n Σx²): 1 when all are equal, 1/n when one takes everything.
/// NaN for an empty input; 1 when every value is zero.
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
