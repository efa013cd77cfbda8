//! A run: the network, the traffic, the event loop and the measurements.
//!
//! ```text
//!   TcpSender ──Outbox──▶ offer(link) ──Link (queue + wire)──▶ Arrival event ──▶ next node
//!       ▲                                                                           │
//!       └──────────── ACK ◀── TcpReceiver ◀── host delivery ◀── route(node, dst) ◀──┘
//! ```
//!
//! Events: the arrival of a link's head packet, endpoint timers (retransmission, pacing, delayed
//! ACK), flow starts, UDP ticks, flow arrivals, samples and utilization-window marks. Endpoint
//! timers are lazy: an endpoint reports its next deadline and the simulation schedules an event
//! only when that deadline is earlier than the one already pending, so restarting the
//! retransmission timer on every ACK costs nothing.

use crate::cc::registry::{self, BuildError, Params};
use crate::cc::Phase;
use crate::measure::{
    jain_index, FlowSeries, FlowSummary, LinkSummary, QueueSeries, Report, RunStats, WindowResult,
};
use crate::net::{Admission, FlowId, LinkId, Network, NodeId, Packet, PacketKind, NO_ROUTE};
use crate::rng::{streams, Rng};
use crate::sim::EventQueue;
use crate::tcp::{FlowSize, Outbox, TcpConfig, TcpReceiver, TcpSender};
use crate::time::{Duration, Time};
use crate::traffic::{SizeDistribution, UdpSource};

/// A TCP connection to create.
#[derive(Clone, Debug)]
pub struct TcpFlowSpec {
    pub label: String,
    pub src: NodeId,
    pub dst: NodeId,
    pub cfg: TcpConfig,
    pub size: FlowSize,
    pub start: Time,
    /// When the application closes the connection (`None`: it runs until it completes or the
    /// run ends): the sender sends nothing more, and what arrives later is not counted.
    pub stop: Option<Time>,
    pub cc: String,
    pub cc_params: Params,
    pub startup: String,
    pub startup_params: Params,
}

/// Poisson arrivals of finite TCP connections built from `template`.
#[derive(Clone, Debug)]
pub struct ArrivalSpec {
    pub template: TcpFlowSpec,
    pub mean_interarrival: Duration,
    pub start: Time,
    pub stop: Time,
    pub sizes: SizeDistribution,
}

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

#[derive(Copy, Clone, Debug)]
enum Event {
    /// The head packet of a link reaches the link's far end.
    Arrival(LinkId),
    SenderTimer(FlowId),
    ReceiverTimer(FlowId),
    FlowStart(FlowId),
    FlowStop(FlowId),
    UdpTick(FlowId),
    Spawn(u32),
    Sample,
    WindowMark(u32),
}

#[derive(Debug)]
struct TcpFlow {
    sender: TcpSender,
    receiver: TcpReceiver,
    label: String,
    cc: String,
    startup: String,
    /// Time of the pending sender / receiver timer event, if any.
    sender_event: Option<Time>,
    receiver_event: Option<Time>,
    /// Bytes the receiver had delivered when the connection was stopped (`spec.stop`).
    delivered_at_stop: Option<u64>,
}

#[derive(Debug)]
enum Slot {
    Tcp(Box<TcpFlow>),
    /// A UDP source and its label.
    Udp(UdpSource, String),
}

struct Generator {
    spec: ArrivalSpec,
    rng: Rng,
}

struct Window {
    link: LinkId,
    from: Time,
    to: Time,
    busy_at_from: Duration,
    utilization: Option<f64>,
}

/// One run of a scenario.
pub struct Simulation {
    now: Time,
    end: Time,
    seed: u64,
    events: EventQueue<Event>,
    net: Network,
    flows: Vec<Slot>,
    /// Packets of each flow dropped or lost.
    flow_drops: Vec<u64>,
    generators: Vec<Generator>,
    measure: MeasureSpec,
    /// `sampled[link]`: whether the link's queue is sampled.
    sampled: Vec<bool>,
    windows: Vec<Window>,
    flow_series: FlowSeries,
    queue_series: QueueSeries,
    events_processed: u64,
    packets_created: u64,
    packets_delivered: u64,
    packets_dropped: u64,
    scratch: Vec<Packet>,
}

impl Simulation {
    /// A simulation of `net` from t = 0 to `end`; every random choice derives from `seed`.
    pub fn new(net: Network, end: Time, seed: u64, measure: MeasureSpec) -> Self {
        let mut sampled = vec![false; net.links.len()];
        for &l in &measure.links {
            sampled[l as usize] = true;
        }
        let mut events = EventQueue::new();
        if measure.interval.is_some() && (measure.flow_series || measure.queue_series) {
            events.push(Time::ZERO, Event::Sample);
        }
        let mut windows = Vec::new();
        for (i, &(link, from, to)) in measure.windows.iter().enumerate() {
            events.push(from, Event::WindowMark(i as u32));
            events.push(to.min(end), Event::WindowMark(i as u32));
            windows.push(Window {
                link,
                from,
                to: to.min(end),
                busy_at_from: Duration::ZERO,
                utilization: None,
            });
        }
        Simulation {
            now: Time::ZERO,
            end,
            seed,
            events,
            net,
            flows: Vec::new(),
            flow_drops: Vec::new(),
            generators: Vec::new(),
            measure,
            sampled,
            windows,
            flow_series: FlowSeries::default(),
            queue_series: QueueSeries::default(),
            events_processed: 0,
            packets_created: 0,
            packets_delivered: 0,
            packets_dropped: 0,
            scratch: Vec::new(),
        }
    }

    pub fn network(&self) -> &Network {
        &self.net
    }

    /// For scripted losses and other changes before the run starts.
    pub fn network_mut(&mut self) -> &mut Network {
        &mut self.net
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Adds a TCP connection that opens at `spec.start`.
    pub fn add_tcp_flow(&mut self, spec: TcpFlowSpec) -> Result<FlowId, BuildError> {
        let (start, stop) = (spec.start, spec.stop);
        let id = self.insert_tcp(spec)?;
        self.events.push(start, Event::FlowStart(id));
        if let Some(stop) = stop {
            self.events.push(stop, Event::FlowStop(id));
        }
        Ok(id)
    }

    fn insert_tcp(&mut self, spec: TcpFlowSpec) -> Result<FlowId, BuildError> {
        let cc = registry::build(
            &spec.cc,
            &spec.cc_params,
            &spec.startup,
            &spec.startup_params,
        )?;
        let id = self.flows.len() as FlowId;
        let sender = TcpSender::new(
            id,
            spec.src,
            spec.dst,
            spec.cfg.clone(),
            spec.size,
            cc,
            spec.start,
        );
        let receiver = TcpReceiver::new(id, spec.dst, spec.src, spec.cfg, spec.size);
        self.flows.push(Slot::Tcp(Box::new(TcpFlow {
            sender,
            receiver,
            label: spec.label,
            cc: spec.cc,
            startup: spec.startup,
            sender_event: None,
            receiver_event: None,
            delivered_at_stop: None,
        })));
        self.flow_drops.push(0);
        Ok(id)
    }

    /// Adds a UDP source labelled `label`; `build` gets the flow id and the source's random
    /// stream.
    pub fn add_udp_source(
        &mut self,
        label: impl Into<String>,
        build: impl FnOnce(FlowId, Rng) -> UdpSource,
    ) -> FlowId {
        let id = self.flows.len() as FlowId;
        let source = build(id, Rng::stream(self.seed, streams::SOURCE + id as u64));
        self.events.push(source.start, Event::UdpTick(id));
        self.flows.push(Slot::Udp(source, label.into()));
        self.flow_drops.push(0);
        id
    }

    /// Adds an arrival process of finite TCP connections; checks the template's algorithm now.
    pub fn add_arrivals(&mut self, spec: ArrivalSpec) -> Result<(), BuildError> {
        let t = &spec.template;
        registry::build(&t.cc, &t.cc_params, &t.startup, &t.startup_params)?;
        let index = self.generators.len() as u32;
        // Generators draw from streams after the per-flow ones, counted from the top.
        let rng = Rng::stream(self.seed, streams::SOURCE + (u32::MAX - index) as u64);
        let mut g = Generator { spec, rng };
        let first = g.spec.start
            + Duration::from_secs_f64(g.rng.exponential(g.spec.mean_interarrival.as_secs_f64()));
        if first < g.spec.stop {
            self.events.push(first, Event::Spawn(index));
        }
        self.generators.push(g);
        Ok(())
    }

    /// Runs to the end time and returns the measurements.
    pub fn run(mut self) -> Report {
        while let Some(t) = self.events.peek_time() {
            if t > self.end {
                break;
            }
            let (t, event) = self.events.pop().expect("peeked");
            self.now = t;
            self.events_processed += 1;
            self.dispatch(event);
        }
        self.now = self.end;
        if self.measure.interval.is_some() {
            let last = self
                .flow_series
                .time_ns
                .last()
                .or(self.queue_series.time_ns.last())
                .copied();
            if last != Some(self.end.as_nanos() as i64) {
                self.sample();
            }
        }
        self.report()
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::Arrival(link) => {
                let l = &mut self.net.links[link as usize];
                let pkt = l.pop_arrival();
                let node = l.to;
                if let Some((t, seq)) = l.next_arrival() {
                    self.events.push_reserved(t, seq, Event::Arrival(link));
                }
                self.arrive(node, pkt);
            }
            Event::SenderTimer(f) => {
                let now = self.now;
                if let Slot::Tcp(t) = &mut self.flows[f as usize] {
                    if t.sender_event == Some(now) {
                        t.sender_event = None;
                    }
                    let mut out = Outbox {
                        packets: std::mem::take(&mut self.scratch),
                    };
                    t.sender.on_timer(now, &mut out);
                    self.flush(out);
                    self.sync_timers(f);
                }
            }
            Event::ReceiverTimer(f) => {
                let now = self.now;
                if let Slot::Tcp(t) = &mut self.flows[f as usize] {
                    if t.receiver_event == Some(now) {
                        t.receiver_event = None;
                    }
                    let mut out = Outbox {
                        packets: std::mem::take(&mut self.scratch),
                    };
                    t.receiver.on_timer(now, &mut out);
                    self.flush(out);
                    self.sync_timers(f);
                }
            }
            Event::FlowStart(f) => self.start_tcp(f),
            Event::FlowStop(f) => {
                let now = self.now;
                if let Slot::Tcp(t) = &mut self.flows[f as usize] {
                    if t.sender.stop(now) {
                        t.delivered_at_stop = Some(t.receiver.delivered_bytes);
                    }
                    self.sync_timers(f);
                }
            }
            Event::UdpTick(f) => {
                let now = self.now;
                if let Slot::Udp(u, _) = &mut self.flows[f as usize] {
                    let mut out = std::mem::take(&mut self.scratch);
                    let next = u.on_tick(now, &mut out);
                    if let Some(next) = next {
                        self.events.push(next, Event::UdpTick(f));
                    }
                    self.flush(Outbox { packets: out });
                }
            }
            Event::Spawn(g) => self.spawn(g),
            Event::Sample => {
                self.sample();
                if let Some(dt) = self.measure.interval {
                    let next = self.now + dt;
                    if next <= self.end {
                        self.events.push(next, Event::Sample);
                    }
                }
            }
            Event::WindowMark(i) => {
                let now = self.now;
                let w = &mut self.windows[i as usize];
                let link = &self.net.links[w.link as usize];
                if now == w.from && w.utilization.is_none() && now != w.to {
                    w.busy_at_from = link.busy_time(now);
                } else if now == w.to {
                    w.utilization = Some(link.utilization(w.busy_at_from, w.from, w.to));
                }
            }
        }
    }

    fn start_tcp(&mut self, f: FlowId) {
        let now = self.now;
        if let Slot::Tcp(t) = &mut self.flows[f as usize] {
            if t.sender.is_done() {
                return; // stopped before it started
            }
            let mut out = Outbox {
                packets: std::mem::take(&mut self.scratch),
            };
            t.sender.start(now, &mut out);
            self.flush(out);
            self.sync_timers(f);
        }
    }

    fn spawn(&mut self, g: u32) {
        let now = self.now;
        let gen = &mut self.generators[g as usize];
        let mut spec = gen.spec.template.clone();
        let bytes = gen.spec.sizes.sample(&mut gen.rng);
        spec.size = FlowSize::from_bytes(bytes, spec.cfg.mss_bytes);
        spec.start = now;
        let next = now
            + Duration::from_secs_f64(
                gen.rng
                    .exponential(gen.spec.mean_interarrival.as_secs_f64()),
            );
        let stop = gen.spec.stop;
        let id = self
            .insert_tcp(spec)
            .expect("algorithm checked when the generator was added");
        self.start_tcp(id);
        if next < stop {
            self.events.push(next, Event::Spawn(g));
        }
    }

    /// A packet reaches `node`.
    fn arrive(&mut self, node: NodeId, pkt: Packet) {
        if pkt.dst != node {
            self.forward(node, pkt);
            return;
        }
        let now = self.now;
        let f = pkt.flow;
        self.packets_delivered += 1;
        match &mut self.flows[f as usize] {
            Slot::Udp(u, _) => u.on_delivery(&pkt),
            Slot::Tcp(t) => {
                let mut out = Outbox {
                    packets: std::mem::take(&mut self.scratch),
                };
                let to_sender = matches!(pkt.kind, PacketKind::Ack | PacketKind::SynAck);
                if to_sender {
                    t.sender.on_packet(now, &pkt, &mut out);
                } else {
                    t.receiver.on_packet(now, &pkt, &mut out);
                }
                self.flush(out);
                self.sync_timers(f);
                if to_sender && self.measure.interval.is_none() && self.measure.flow_series {
                    self.sample_flow(f);
                }
            }
        }
    }

    /// Sends every packet of `out` from its source node, then keeps the buffer for reuse.
    fn flush(&mut self, mut out: Outbox) {
        self.packets_created += out.packets.len() as u64;
        for pkt in out.packets.drain(..) {
            self.forward(pkt.src, pkt);
        }
        self.scratch = out.packets;
    }

    /// Puts `pkt` on the link from `node` towards its destination.
    fn forward(&mut self, node: NodeId, pkt: Packet) {
        let link = self.net.route(node, pkt.dst);
        assert!(
            link != NO_ROUTE,
            "no route from node {node} to node {}",
            pkt.dst
        );
        let seq = self.events.reserve_seq();
        let admission = self.net.links[link as usize].enqueue(self.now, pkt, seq);
        match admission {
            Admission::Dropped | Admission::Lost => {
                self.flow_drops[pkt.flow as usize] += 1;
                self.packets_dropped += 1;
            }
            Admission::Scheduled {
                arrival,
                became_head,
            } => {
                if became_head {
                    self.events
                        .push_reserved(arrival, seq, Event::Arrival(link));
                }
            }
        }
        if self.measure.interval.is_none()
            && self.measure.queue_series
            && self.sampled[link as usize]
        {
            self.sample_queue(link);
        }
    }

    fn sync_timers(&mut self, f: FlowId) {
        let Slot::Tcp(t) = &mut self.flows[f as usize] else {
            return;
        };
        if let Some(d) = t.sender.next_timer() {
            if t.sender_event.map_or(true, |p| d < p) {
                t.sender_event = Some(d);
                self.events.push(d, Event::SenderTimer(f));
            }
        }
        if let Some(d) = t.receiver.next_timer() {
            if t.receiver_event.map_or(true, |p| d < p) {
                t.receiver_event = Some(d);
                self.events.push(d, Event::ReceiverTimer(f));
            }
        }
    }

    // ----- measurement ---------------------------------------------------------------------

    fn sample(&mut self) {
        if self.measure.flow_series {
            for f in 0..self.flows.len() {
                self.sample_flow(f as FlowId);
            }
        }
        if self.measure.queue_series {
            for l in 0..self.net.links.len() {
                if self.sampled[l] {
                    self.sample_queue(l as LinkId);
                }
            }
        }
    }

    fn sample_flow(&mut self, f: FlowId) {
        let Slot::Tcp(t) = &self.flows[f as usize] else {
            return;
        };
        let s = &t.sender;
        if !s.is_started() || s.closed_at().is_some_and(|c| c < self.now) {
            return;
        }
        let fs = &mut self.flow_series;
        fs.time_ns.push(self.now.as_nanos() as i64);
        fs.flow.push(f);
        fs.cwnd.push(s.tcb.cwnd);
        fs.ssthresh.push(s.tcb.ssthresh);
        fs.srtt_ns
            .push(s.srtt().map_or(-1, |d| d.as_nanos() as i64));
        fs.rtt_ns
            .push(s.tcb.latest_rtt.map_or(-1, |d| d.as_nanos() as i64));
        fs.in_flight.push(s.in_flight());
        fs.delivered_bytes.push(t.receiver.delivered_bytes);
        fs.phase.push(s.phase() as u8);
        fs.pacing_rate_bps
            .push(s.tcb.pacing_rate.map_or(0.0, |r| r.bps_f64()));
    }

    fn sample_queue(&mut self, l: LinkId) {
        let now = self.now;
        let link = &mut self.net.links[l as usize];
        let occ = link.occupancy(now);
        let qs = &mut self.queue_series;
        qs.time_ns.push(now.as_nanos() as i64);
        qs.link.push(l);
        qs.queue_packets.push(occ.packets);
        qs.queue_bytes.push(occ.bytes);
        qs.drops.push(link.stats.drops);
        qs.losses.push(link.stats.losses);
        qs.busy_ns.push(link.busy_time(now).as_nanos() as i64);
    }

    fn report(mut self) -> Report {
        let end = self.end;
        let mut flows = Vec::with_capacity(self.flows.len());
        for (i, slot) in self.flows.iter().enumerate() {
            flows.push(self.summarize(i, slot));
        }
        let mut links = Vec::with_capacity(self.net.links.len());
        let mut packets_forwarded = 0;
        for i in 0..self.net.links.len() {
            let name = self.net.link_names[i].clone();
            let alias = self.net.link_aliases[i].clone();
            let link = &mut self.net.links[i];
            let stats = link.stats_at(end);
            packets_forwarded += stats.forwarded_packets;
            let (limit_packets, limit_bytes) = match link.limit() {
                crate::net::Limit::Packets(p) => (p as i64, -1),
                crate::net::Limit::Bytes(b) => (-1, b as i64),
            };
            links.push(LinkSummary {
                link: i as u32,
                name,
                alias,
                src: self.net.nodes[link.from as usize].name.clone(),
                dst: self.net.nodes[link.to as usize].name.clone(),
                rate_bps: link.params.rate.bps_f64(),
                delay_ns: link.params.delay.as_nanos() as i64,
                queue: link.params.discipline.name().to_string(),
                limit_packets,
                limit_bytes,
                forwarded_packets: stats.forwarded_packets,
                forwarded_bytes: stats.forwarded_bytes,
                drops: stats.drops,
                losses: stats.losses,
                utilization: link.utilization(Duration::ZERO, Time::ZERO, end),
                max_queue_packets: stats.max_queue_packets,
            });
        }
        let windows = self
            .windows
            .iter()
            .map(|w| WindowResult {
                link: self.net.link_names[w.link as usize].clone(),
                from_ns: w.from.as_nanos() as i64,
                to_ns: w.to.as_nanos() as i64,
                utilization: w.utilization.unwrap_or(f64::NAN),
            })
            .collect();
        let goodputs: Vec<f64> = flows
            .iter()
            .filter(|f| f.kind == "tcp")
            .map(|f| f.goodput_bps)
            .collect();
        let stats = RunStats {
            events: self.events_processed,
            packets_forwarded,
            sim_time_ns: end.as_nanos(),
            packets_created: self.packets_created,
            packets_delivered: self.packets_delivered,
            packets_dropped: self.packets_dropped,
            packets_in_network: self.net.links.iter().map(|l| l.in_flight() as u64).sum(),
            jain_index: jain_index(&goodputs),
        };
        Report {
            flow_series: self.flow_series,
            queue_series: self.queue_series,
            flows,
            links,
            windows,
            stats,
        }
    }

    fn summarize(&self, i: usize, slot: &Slot) -> FlowSummary {
        let end = self.end;
        let node = |n: NodeId| self.net.nodes[n as usize].name.clone();
        let goodput = |bytes: u64, start: Time, stop: Time| {
            let span = stop.saturating_since(start).as_secs_f64();
            if span > 0.0 {
                bytes as f64 * 8.0 / span
            } else {
                0.0
            }
        };
        match slot {
            Slot::Tcp(t) => {
                let s = &t.sender;
                let r = &t.receiver;
                let stop = s.closed_at().unwrap_or(end).min(end);
                let delivered = t.delivered_at_stop.unwrap_or(r.delivered_bytes);
                let exit = s.ss_exit;
                let verdicts = s.loss_verdicts();
                FlowSummary {
                    flow: i as u32,
                    label: t.label.clone(),
                    kind: "tcp".into(),
                    cc: t.cc.clone(),
                    startup: t.startup.clone(),
                    src: node(s.node()),
                    dst: node(s.peer()),
                    start_ns: s.start_time.as_nanos() as i64,
                    size_bytes: s
                        .size()
                        .total_bytes(s.tcb.mss_bytes)
                        .map_or(-1, |b| b as i64),
                    delivered_bytes: delivered,
                    goodput_bps: if s.is_started() {
                        goodput(delivered, s.start_time, stop)
                    } else {
                        0.0
                    },
                    sent_packets: s.stats.sent_packets,
                    retransmissions: s.stats.retransmissions,
                    timeouts: s.stats.timeouts,
                    fast_recoveries: s.stats.fast_recoveries,
                    undos: s.stats.undos,
                    drops: self.flow_drops[i],
                    // After the flow's start, as the completion time (docs/python.md, flows table).
                    ss_exit_ns: exit.map_or(-1, |e| (e.time - s.start_time).as_nanos() as i64),
                    ss_exit_cwnd: exit.map_or(f64::NAN, |e| e.cwnd),
                    ss_exit_reason: exit.map_or(String::new(), |e| e.reason.to_string()),
                    congestion_losses: verdicts.map_or(-1, |v| v.congestion as i64),
                    noncongestion_losses: verdicts.map_or(-1, |v| v.non_congestion as i64),
                    completion_ns: s
                        .completed_at
                        .map_or(-1, |c| (c - s.start_time).as_nanos() as i64),
                }
            }
            Slot::Udp(u, label) => FlowSummary {
                flow: i as u32,
                label: label.clone(),
                kind: match u.pattern {
                    crate::traffic::UdpPattern::Cbr => "cbr".into(),
                    crate::traffic::UdpPattern::OnOff { .. } => "on-off".into(),
                },
                cc: String::new(),
                startup: String::new(),
                src: node(u.src),
                dst: node(u.dst),
                start_ns: u.start.as_nanos() as i64,
                size_bytes: -1,
                delivered_bytes: u.delivered_bytes,
                goodput_bps: goodput(u.delivered_bytes, u.start, u.stop.min(end)),
                sent_packets: u.sent_packets,
                retransmissions: 0,
                timeouts: 0,
                fast_recoveries: 0,
                undos: 0,
                drops: self.flow_drops[i],
                ss_exit_ns: -1,
                ss_exit_cwnd: f64::NAN,
                ss_exit_reason: String::new(),
                congestion_losses: -1,
                noncongestion_losses: -1,
                completion_ns: -1,
            },
        }
    }

    /// The phase of TCP flow `f` now (for tests and drivers).
    pub fn phase(&self, f: FlowId) -> Option<Phase> {
        match &self.flows[f as usize] {
            Slot::Tcp(t) => Some(t.sender.phase()),
            Slot::Udp(..) => None,
        }
    }
}
