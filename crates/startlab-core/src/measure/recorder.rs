//! The measurement recorder: what to sample and when, the samples, the utilization windows and
//! the summaries at the end of a run. The event loop only tells it when something happened.

use super::{
    FlowSample, FlowSeries, FlowSummary, LinkSummary, Links, QueueSample, QueueSeries, RequestRow,
    Requests, WindowResult, Windows,
};
use crate::net::{Limit, Link, LinkId, Network, NodeId, Usage};
use crate::tcp::{TcpReceiver, TcpSender};
use crate::time::{Duration, Time};
use crate::traffic::{UdpPattern, UdpSource};

/// What to record.
#[derive(Clone, Debug)]
pub struct MeasureSpec {
    /// Sampling interval; `None` records on every event (flow rows on every ACK, queue rows on
    /// every packet offered to a sampled link).
    pub interval: Option<Duration>,
    pub flow_series: bool,
    pub queue_series: bool,
    /// Links whose queues are sampled.
    pub links: Vec<LinkId>,
    /// Exact utilization windows: (link, from, to).
    pub windows: Vec<(LinkId, Time, Time)>,
}

impl Default for MeasureSpec {
    fn default() -> Self {
        MeasureSpec {
            interval: Some(Duration::from_millis(10)),
            flow_series: true,
            queue_series: true,
            links: Vec::new(),
            windows: Vec::new(),
        }
    }
}

#[derive(Clone, Debug)]
struct Window {
    link: LinkId,
    from: Time,
    to: Time,
    at_from: Usage,
    utilization: Option<f64>,
}

/// Records one run's measurements.
#[derive(Clone, Debug)]
pub struct Recorder {
    spec: MeasureSpec,
    /// `sampled[link]`: whether the link's queue is sampled.
    sampled: Vec<bool>,
    windows: Vec<Window>,
    flow_series: FlowSeries,
    queue_series: QueueSeries,
    /// Per link: (sojourn total, packets sent) at its previous queue row.
    last_sojourn: Vec<(Duration, u64)>,
}

impl Recorder {
    /// A recorder for a network of `links` links and a run that ends at `end`.
    pub fn new(spec: MeasureSpec, links: usize, end: Time) -> Self {
        let mut sampled = vec![false; links];
        for &l in &spec.links {
            sampled[l as usize] = true;
        }
        let windows = spec
            .windows
            .iter()
            .map(|&(link, from, to)| Window {
                link,
                from,
                to: to.min(end),
                at_from: Usage::default(),
                utilization: None,
            })
            .collect();
        Recorder {
            spec,
            sampled,
            windows,
            flow_series: FlowSeries::default(),
            queue_series: QueueSeries::default(),
            last_sojourn: vec![(Duration::ZERO, 0); links],
        }
    }

    /// The sampling interval, if the series are sampled periodically and any is recorded.
    pub fn interval(&self) -> Option<Duration> {
        self.spec
            .interval
            .filter(|_| self.spec.flow_series || self.spec.queue_series)
    }

    /// Whether flow rows are recorded on every ACK.
    pub fn samples_every_ack(&self) -> bool {
        self.spec.interval.is_none() && self.spec.flow_series
    }

    /// Whether a queue row is recorded for every packet offered to `link`.
    pub fn samples_every_packet(&self, link: LinkId) -> bool {
        self.spec.interval.is_none() && self.spec.queue_series && self.sampled[link as usize]
    }

    /// Whether `link`'s queue is sampled (every packet, or every interval).
    pub fn samples_queue(&self, link: LinkId) -> bool {
        self.spec.queue_series && self.sampled[link as usize]
    }

    /// The link of window `i`.
    pub fn window_link(&self, i: u32) -> LinkId {
        self.windows[i as usize].link
    }

    /// The instants at which window `i` must be told the time: (time, window index).
    pub fn window_marks(&self) -> Vec<(Time, u32)> {
        let mut marks = Vec::with_capacity(2 * self.windows.len());
        for (i, w) in self.windows.iter().enumerate() {
            marks.push((w.from, i as u32));
            marks.push((w.to, i as u32));
        }
        marks
    }

    /// Window `i`'s start or end has come.
    pub fn on_window_mark(&mut self, i: u32, now: Time, net: &mut Network) {
        let w = &mut self.windows[i as usize];
        let link = &mut net.links[w.link as usize];
        link.settle(now);
        if now == w.from && w.utilization.is_none() && now != w.to {
            w.at_from = link.usage(now);
        } else if now == w.to {
            let at_to = link.usage(now);
            w.utilization = Some(Link::utilization_between(&w.at_from, &at_to));
        }
    }

    /// The time of the last row recorded, if any.
    pub fn last_sample(&self) -> Option<Time> {
        self.flow_series
            .time_ns
            .last()
            .or(self.queue_series.time_ns.last())
            .map(|&t| Time::from_nanos(t as u64))
    }

    /// Records one row per flow and per sampled link.
    pub fn sample<'a>(
        &mut self,
        now: Time,
        tcp: impl Iterator<Item = (u32, &'a TcpSender, &'a TcpReceiver)>,
        net: &mut Network,
    ) {
        if self.spec.flow_series {
            for (f, sender, receiver) in tcp {
                self.record_flow(now, f, sender, receiver);
            }
        }
        if self.spec.queue_series {
            for (l, link) in net.links.iter_mut().enumerate() {
                if self.sampled[l] {
                    self.record_queue(now, l as LinkId, link);
                }
            }
        }
    }

    /// Records TCP flow `f`'s state, if it is open.
    pub fn record_flow(&mut self, now: Time, f: u32, s: &TcpSender, receiver: &TcpReceiver) {
        if !s.is_started() || s.closed_at().is_some_and(|c| c < now) {
            return;
        }
        let model = s.model_state();
        self.flow_series.push(FlowSample {
            time_ns: now.as_nanos() as i64,
            flow: f,
            cwnd: s.tcb().cwnd,
            ssthresh: Some(s.tcb().ssthresh).filter(|x| x.is_finite()),
            srtt_ns: s.srtt().map(|d| d.as_nanos() as i64),
            rtt_ns: s.tcb().latest_rtt.map(|d| d.as_nanos() as i64),
            in_flight: s.in_flight(),
            delivered_bytes: receiver.delivered_bytes,
            phase: s.phase() as u8,
            pacing_rate_bps: s.tcb().pacing_rate.map(|r| r.bps_f64()),
            delivery_rate_bps: s.delivery_rate().map(|r| r.bps_f64()),
            model_bw_bps: model.map(|m| m.bw.bps_f64()),
            model_min_rtt_ns: model.and_then(|m| m.min_rtt).map(|d| d.as_nanos() as i64),
            pacing_gain: model.map(|m| m.pacing_gain),
            cwnd_gain: model.map(|m| m.cwnd_gain),
            model_state: model.map(|m| m.mode.to_string()),
        });
    }

    /// Records the queue of link `l`.
    pub fn record_queue(&mut self, now: Time, l: LinkId, link: &mut Link) {
        let occ = link.occupancy(now);
        let stats = link.stats_at(now);
        let (rate, delay) = link.scheduled(now);
        let usage = link.usage(now);
        let sojourns = link.sojourns();
        let (total, counted) = std::mem::replace(
            &mut self.last_sojourn[l as usize],
            (sojourns.total(), sojourns.packets()),
        );
        let new = sojourns.packets() - counted;
        self.queue_series.push(QueueSample {
            time_ns: now.as_nanos() as i64,
            link: l,
            queue_packets: occ.packets,
            queue_bytes: occ.bytes,
            drops: stats.drops,
            losses: stats.losses,
            busy_ns: usage.busy.as_nanos() as i64,
            rate_bps: rate.bps_f64(),
            delay_ns: delay.as_nanos() as i64,
            sent_bytes: stats.forwarded_bytes,
            offered_bytes: usage.offered_bytes,
            marks: stats.marks,
            sojourn_ns: (new > 0)
                .then(|| (sojourns.total().saturating_sub(total).as_nanos() / new) as i64),
        });
    }

    /// The series and the windows, at the end of a run.
    pub fn finish(self, net: &Network) -> (FlowSeries, QueueSeries, Windows) {
        let mut windows = Windows::default();
        for w in &self.windows {
            windows.push(WindowResult {
                link: net.link_names[w.link as usize].clone(),
                from_ns: w.from.as_nanos() as i64,
                to_ns: w.to.as_nanos() as i64,
                utilization: w
                    .utilization
                    .expect("every window ends by the end of the run"),
            });
        }
        (self.flow_series, self.queue_series, windows)
    }
}

/// Goodput of `bytes` delivered between `start` and `stop`; 0 over an empty span.
fn goodput_bps(bytes: u64, start: Time, stop: Time) -> f64 {
    let span = stop.saturating_since(start).as_secs_f64();
    if span > 0.0 {
        bytes as f64 * 8.0 / span
    } else {
        0.0
    }
}

/// What the summary of a TCP flow needs besides its endpoints.
pub struct TcpFlowFacts<'a> {
    pub flow: u32,
    pub label: &'a str,
    pub cc: &'a str,
    pub startup: &'a str,
    pub sender: &'a TcpSender,
    /// Bytes delivered in order (at the close, if the application closed the connection).
    pub delivered_bytes: u64,
    pub drops: u64,
    /// Data segments the receiver got marked CE.
    pub ce_marks: u64,
}

/// The `requests` rows of a TCP flow whose application writes responses one at a time, as
/// they stand at `end`.
pub fn request_rows(flow: u32, label: &str, s: &TcpSender, end: Time, out: &mut Requests) {
    let Some(records) = s.requests() else { return };
    for r in records.iter().filter(|r| r.written_at <= end) {
        out.push(RequestRow {
            flow,
            label: label.to_string(),
            request: r.index,
            bytes: r.bytes,
            start_ns: r.written_at.as_nanos() as i64,
            completion_ns: r
                .completed_at
                .map(|t| t.saturating_since(r.written_at).as_nanos() as i64),
            start_cwnd: r.cwnd,
            start_ssthresh: Some(r.ssthresh).filter(|s| s.is_finite()),
            idle_ns: r.idle.as_nanos() as i64,
            restarted: r.restarted as u8,
        });
    }
}

/// The flows-table row of a TCP flow at `end`.
pub fn tcp_summary(f: TcpFlowFacts<'_>, net: &Network, end: Time) -> FlowSummary {
    let s = f.sender;
    let node = |n: NodeId| net.nodes[n as usize].name.clone();
    let stop = s.closed_at().unwrap_or(end).min(end);
    let exit = s.ss_exit();
    let verdicts = s.loss_verdicts();
    FlowSummary {
        flow: f.flow,
        label: f.label.to_string(),
        kind: "tcp".into(),
        cc: Some(f.cc.to_string()),
        startup: Some(f.startup.to_string()),
        src: node(s.node()),
        dst: node(s.peer()),
        start_ns: s.start_time().as_nanos() as i64,
        size_bytes: s.total_bytes().map(|b| b as i64),
        delivered_bytes: f.delivered_bytes,
        goodput_bps: if s.is_started() {
            goodput_bps(f.delivered_bytes, s.start_time(), stop)
        } else {
            0.0
        },
        sent_packets: s.stats().sent_packets,
        retransmissions: s.stats().retransmissions,
        timeouts: s.stats().timeouts,
        fast_recoveries: s.stats().fast_recoveries,
        undos: Some(s.stats().undos),
        drops: Some(f.drops),
        // After the flow's start, as the completion time (docs/python.md, flows table).
        ss_exit_ns: exit.map(|e| (e.time - s.start_time()).as_nanos() as i64),
        ss_exit_cwnd: exit.map(|e| e.cwnd),
        ss_exit_reason: exit.map(|e| e.reason.to_string()),
        congestion_losses: verdicts.map(|v| v.congestion as i64),
        noncongestion_losses: verdicts.map(|v| v.non_congestion as i64),
        completion_ns: s
            .completed_at()
            .map(|c| (c - s.start_time()).as_nanos() as i64),
        min_rtt_ns: s.tcb().min_rtt.map(|d| d.as_nanos() as i64),
        ce_marks: Some(f.ce_marks),
        ecn_reductions: Some(s.stats().ecn_reductions),
    }
}

/// The flows-table row of a UDP source at `end`.
pub fn udp_summary(
    flow: u32,
    label: &str,
    u: &UdpSource,
    drops: u64,
    net: &Network,
    end: Time,
) -> FlowSummary {
    let node = |n: NodeId| net.nodes[n as usize].name.clone();
    FlowSummary {
        flow,
        label: label.to_string(),
        kind: match u.pattern {
            UdpPattern::Cbr => "cbr".into(),
            UdpPattern::OnOff { .. } => "on-off".into(),
        },
        cc: None,
        startup: None,
        src: node(u.src),
        dst: node(u.dst),
        start_ns: u.start.as_nanos() as i64,
        size_bytes: None,
        delivered_bytes: u.delivered_bytes,
        goodput_bps: goodput_bps(u.delivered_bytes, u.start, u.stop.min(end)),
        sent_packets: u.sent_packets,
        retransmissions: 0,
        timeouts: 0,
        fast_recoveries: 0,
        undos: Some(0),
        drops: Some(drops),
        ss_exit_ns: None,
        ss_exit_cwnd: None,
        ss_exit_reason: None,
        congestion_losses: None,
        noncongestion_losses: None,
        completion_ns: None,
        min_rtt_ns: None,
        ce_marks: None,
        ecn_reductions: None,
    }
}

fn ns(d: Duration) -> i64 {
    d.as_nanos() as i64
}

/// The links table at `end`.
pub fn link_summaries(net: &mut Network, end: Time) -> Links {
    let mut links = Links::default();
    for i in 0..net.links.len() {
        let link = &mut net.links[i];
        let stats = link.stats_at(end);
        let start = link.usage_at_start();
        let usage = link.usage(end);
        let sojourns = link.sojourns();
        let (limit_packets, limit_bytes) = match link.limit() {
            Limit::Packets(p) => (Some(p as i64), None),
            Limit::Bytes(b) => (None, Some(b as i64)),
        };
        let alias = &net.link_aliases[i];
        links.push(LinkSummary {
            link: i as u32,
            name: net.link_names[i].clone(),
            alias: Some(alias.clone()).filter(|a| !a.is_empty()),
            src: net.nodes[link.from as usize].name.clone(),
            dst: net.nodes[link.to as usize].name.clone(),
            rate_bps: link.params.rate.bps_f64(),
            delay_ns: link.params.delay.as_nanos() as i64,
            queue: link.params.discipline.name().to_string(),
            limit_packets,
            limit_bytes,
            forwarded_packets: stats.forwarded_packets,
            forwarded_bytes: stats.forwarded_bytes,
            drops: stats.drops,
            losses: stats.losses,
            utilization: Link::utilization_between(&start, &usage),
            mean_rate_bps: usage
                .offered_bytes
                .filter(|_| end > Time::ZERO)
                .map_or(link.params.rate.bps_f64(), |b| b * 8.0 / end.as_secs_f64()),
            max_queue_packets: stats.max_queue_packets,
            marks: stats.marks,
            mean_sojourn_ns: sojourns.mean().map(ns),
            p50_sojourn_ns: sojourns.quantile(0.50).map(ns),
            p90_sojourn_ns: sojourns.quantile(0.90).map(ns),
            p99_sojourn_ns: sojourns.quantile(0.99).map(ns),
            max_sojourn_ns: (sojourns.packets() > 0).then(|| ns(sojourns.max())),
        });
    }
    links
}
