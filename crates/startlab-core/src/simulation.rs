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

use crate::cc::controller::ControllerFactory;
use crate::cc::{PathObservation, Phase};
pub use crate::measure::recorder::MeasureSpec;
use crate::measure::recorder::{self, TcpFlowFacts};
use crate::measure::{Flows, Recorder, Report, Requests, RunStats};
use crate::net::{Admission, FlowId, LinkId, Network, NodeId, Packet, PacketKind, NO_ROUTE};
use crate::rng::{streams, Rng};
use crate::scenario::resolved::{RequestPlan, ResolvedScenario, Traffic};
use crate::sim::EventQueue;
use crate::tcp::path_cache::PathRecord;
use crate::tcp::{FlowSize, Outbox, TcpConfig, TcpReceiver, TcpSender};
use crate::time::{Duration, Time};
use crate::traffic::{
    arrivals_stream, requests_stream, source_stream, ArrivalDraws, RequestDraws, SizeDistribution,
    UdpSource,
};
use std::collections::BTreeMap;

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
    /// Builds the connection's controller.
    pub controller: ControllerFactory,
    /// An application that writes responses one at a time (`size` is then ignored).
    pub requests: Option<RequestPlan>,
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
    controller: ControllerFactory,
    /// Time of the pending sender / receiver timer event, if any.
    sender_event: Option<Time>,
    receiver_event: Option<Time>,
    /// Bytes the receiver had delivered when the connection was stopped (`spec.stop`).
    delivered_at_stop: Option<u64>,
    /// The connection has left its state in the path cache.
    left_path_state: bool,
    /// It is using its path's saved state (Careful Resume: one connection at a time).
    holds_saved_path: bool,
}

#[derive(Debug)]
enum Slot {
    Tcp(Box<TcpFlow>),
    /// A UDP source and its label.
    Udp(Box<UdpSource>, String),
}

struct Generator {
    spec: ArrivalSpec,
    draws: ArrivalDraws,
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
    recorder: Recorder,
    events_processed: u64,
    packets_created: u64,
    packets_delivered: u64,
    packets_dropped: u64,
    scratch: Vec<Packet>,
    /// What connections leave for later ones, per (sending host, receiving host).
    paths: BTreeMap<(NodeId, NodeId), PathRecord>,
}

impl Simulation {
    /// The simulation of a resolved scenario: its network, its flows, its measurements.
    pub fn from_resolved(s: ResolvedScenario) -> Self {
        let end = s.end();
        let mut sim = Simulation::new(s.network, end, s.seed, s.measure);
        // The run's eBPF objects, each with the state its connections share.
        let mut registered = Vec::new();
        for plan in s.flows {
            let (src, dst) = (plan.src, plan.dst);
            match plan.traffic {
                Traffic::Tcp {
                    connections,
                    tcp,
                    controller,
                } => {
                    let controller = controller.for_run(&mut registered);
                    for c in connections {
                        sim.add_tcp_flow(TcpFlowSpec {
                            label: c.label,
                            src,
                            dst,
                            cfg: tcp.clone(),
                            size: c.size,
                            start: c.start,
                            stop: c.stop,
                            controller: controller.clone(),
                            requests: c.requests,
                        });
                    }
                }
                Traffic::Arrivals {
                    label,
                    tcp,
                    controller,
                    mean_interarrival,
                    start,
                    stop,
                    sizes,
                } => sim.add_arrivals(ArrivalSpec {
                    template: TcpFlowSpec {
                        label,
                        src,
                        dst,
                        cfg: tcp,
                        size: FlowSize::UNLIMITED,
                        start,
                        stop: None,
                        controller: controller.for_run(&mut registered),
                        requests: None,
                    },
                    mean_interarrival,
                    start,
                    stop,
                    sizes,
                }),
                Traffic::Udp {
                    sources,
                    rate,
                    packet_bytes,
                    pattern,
                } => {
                    for u in sources {
                        let pattern = pattern.clone();
                        sim.add_udp_source(u.label, |id, rng| {
                            UdpSource::new(
                                id,
                                src,
                                dst,
                                rate,
                                packet_bytes,
                                u.start,
                                u.stop,
                                pattern,
                                rng,
                            )
                        });
                    }
                }
            }
        }
        sim
    }

    /// A simulation of `net` from t = 0 to `end`, with no traffic yet; every random choice
    /// derives from `seed`.
    pub fn new(net: Network, end: Time, seed: u64, measure: MeasureSpec) -> Self {
        let recorder = Recorder::new(measure, net.links.len(), end);
        let mut events = EventQueue::new();
        if recorder.interval().is_some() {
            events.push(Time::ZERO, Event::Sample);
        }
        for (t, i) in recorder.window_marks() {
            events.push(t, Event::WindowMark(i));
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
            recorder,
            events_processed: 0,
            packets_created: 0,
            packets_delivered: 0,
            packets_dropped: 0,
            scratch: Vec::new(),
            paths: BTreeMap::new(),
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
    pub fn add_tcp_flow(&mut self, spec: TcpFlowSpec) -> FlowId {
        let (start, stop) = (spec.start, spec.stop);
        let id = self.insert_tcp(spec);
        self.events.push(start, Event::FlowStart(id));
        if let Some(stop) = stop {
            self.events.push(stop, Event::FlowStop(id));
        }
        id
    }

    fn insert_tcp(&mut self, spec: TcpFlowSpec) -> FlowId {
        let mut cc = spec.controller.build();
        let id = self.flows.len() as FlowId;
        cc.seed(Rng::stream(self.seed, streams::CONTROLLER + id as u64));
        let mut cfg = spec.cfg;
        // A controller that needs ECN has it on both ends (TCP_CONG_NEEDS_ECN).
        if cc.needs_ecn() {
            cfg.ecn = true;
            cfg.ecn_ca = true;
        }
        let mut sender = TcpSender::new(
            id,
            spec.src,
            spec.dst,
            cfg.clone(),
            spec.size,
            cc,
            spec.start,
        );
        let mut receiver_size = spec.size;
        if let Some(r) = spec.requests {
            let rng = requests_stream(self.seed, r.entry, r.copy);
            sender = sender.with_requests(RequestDraws::new(r.spec, rng));
            // The receiver learns each response's end from its short last segment.
            receiver_size = FlowSize::UNLIMITED;
        }
        let receiver = TcpReceiver::new(id, spec.dst, spec.src, cfg, receiver_size);
        self.flows.push(Slot::Tcp(Box::new(TcpFlow {
            sender,
            receiver,
            label: spec.label,
            controller: spec.controller,
            sender_event: None,
            receiver_event: None,
            delivered_at_stop: None,
            left_path_state: false,
            holds_saved_path: false,
        })));
        self.flow_drops.push(0);
        id
    }

    /// Adds a UDP source labelled `label`; `build` gets the flow id and the source's random
    /// stream.
    pub fn add_udp_source(
        &mut self,
        label: impl Into<String>,
        build: impl FnOnce(FlowId, Rng) -> UdpSource,
    ) -> FlowId {
        let id = self.flows.len() as FlowId;
        let source = build(id, source_stream(self.seed, id));
        self.events.push(source.start, Event::UdpTick(id));
        self.flows.push(Slot::Udp(Box::new(source), label.into()));
        self.flow_drops.push(0);
        id
    }

    /// Adds an arrival process of finite TCP connections.
    pub fn add_arrivals(&mut self, spec: ArrivalSpec) {
        let index = self.generators.len() as u32;
        let draws = ArrivalDraws::new(
            arrivals_stream(self.seed, index),
            spec.mean_interarrival,
            spec.sizes.clone(),
            spec.start,
            spec.stop,
        );
        if let Some(first) = draws.peek() {
            self.events.push(first, Event::Spawn(index));
        }
        self.generators.push(Generator { spec, draws });
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
        if self.recorder.interval().is_some() && self.recorder.last_sample() != Some(self.end) {
            self.sample();
        }
        self.report()
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::Arrival(link) => {
                let l = &mut self.net.links[link as usize];
                if !l.head_due(self.now) {
                    return; // overtaken on a reordering link: its head has its own event
                }
                let delivered = l.head_delivered();
                let pkt = l.pop_arrival(self.now);
                let node = l.to;
                if let Some((t, seq)) = l.next_arrival() {
                    self.events.push_reserved(t, seq, Event::Arrival(link));
                }
                self.count_discarded(link);
                if delivered {
                    self.arrive(node, pkt);
                }
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
                        if t.sender.is_started() && !t.left_path_state {
                            Self::leave_path_state(&mut self.paths, t, now);
                        }
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
                if let Some(dt) = self.recorder.interval() {
                    let next = self.now + dt;
                    if next <= self.end {
                        self.events.push(next, Event::Sample);
                    }
                }
            }
            Event::WindowMark(i) => self.recorder.on_window_mark(i, self.now, &mut self.net),
        }
    }

    fn start_tcp(&mut self, f: FlowId) {
        let now = self.now;
        if let Slot::Tcp(t) = &mut self.flows[f as usize] {
            if t.sender.is_done() {
                return; // stopped before it started
            }
            let key = (t.sender.node(), t.sender.peer());
            if t.sender.uses_metrics() {
                let cached = self.paths.get(&key).map(|p| p.linux.current(now));
                t.sender.set_cached_metrics(cached.unwrap_or_default());
            }
            if t.sender.resumes() {
                // draft-ietf-tsvwg-careful-resume §3.2: within its lifetime (an expired state
                // is deleted), and used by one connection at a time.
                let record = self.paths.entry(key).or_default();
                if record.resume.as_ref().is_some_and(|s| now >= s.expires) {
                    record.resume = None;
                }
                if let Some(saved) = record.resume.as_mut().filter(|s| !s.in_use) {
                    saved.in_use = true;
                    t.holds_saved_path = true;
                    t.sender.resume_from(saved.clone());
                }
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
        let (_, bytes) = gen
            .draws
            .next()
            .expect("a spawn is scheduled only before the stop");
        spec.size = FlowSize::from_bytes(bytes, spec.cfg.mss_bytes);
        spec.start = now;
        let next = gen.draws.peek();
        let id = self.insert_tcp(spec);
        self.start_tcp(id);
        if let Some(next) = next {
            self.events.push(next, Event::Spawn(g));
        }
    }

    /// A connection closes: it leaves what it saw for later ones between the same hosts
    /// (`tcp_update_metrics`, as Linux does when the connection reaches TIME_WAIT).
    fn leave_path_state(
        paths: &mut BTreeMap<(NodeId, NodeId), PathRecord>,
        t: &mut TcpFlow,
        now: Time,
    ) {
        t.left_path_state = true;
        t.sender.release(now);
        if !t.sender.uses_metrics() && !t.sender.resumes() {
            return;
        }
        let record = paths.entry((t.sender.node(), t.sender.peer())).or_default();
        if t.sender.uses_metrics() {
            let save_ssthresh = t.sender.saves_ssthresh_metrics();
            record
                .linux
                .update(&t.sender.closing_state(), save_ssthresh, now);
        }
        if t.sender.resumes() {
            if t.holds_saved_path {
                if let Some(saved) = record.resume.as_mut() {
                    saved.in_use = false;
                }
            }
            match t.sender.path_observation(now) {
                PathObservation::Keep => {}
                PathObservation::Delete => record.resume = None,
                PathObservation::Save(s) => record.resume = Some(s),
            }
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
                    if t.sender.closed_at().is_some() && !t.left_path_state {
                        Self::leave_path_state(&mut self.paths, t, now);
                    }
                } else {
                    t.receiver.on_packet(now, &pkt, &mut out);
                }
                self.flush(out);
                self.sync_timers(f);
                if to_sender && self.recorder.samples_every_ack() {
                    if let Slot::Tcp(t) = &self.flows[f as usize] {
                        self.recorder.record_flow(now, f, &t.sender, &t.receiver);
                    }
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
            Admission::Queued { became_head } => {
                let l = &self.net.links[link as usize];
                if became_head {
                    let (t, s) = l.next_arrival().expect("a new head packet");
                    self.events.push_reserved(t, s, Event::Arrival(link));
                }
            }
        }
        self.count_discarded(link);
        if self.recorder.samples_every_packet(link) {
            self.recorder
                .record_queue(self.now, link, &mut self.net.links[link as usize]);
        }
    }

    /// Counts the packets an AQM dropped (or sent and the wire lost) against their flows.
    #[inline]
    fn count_discarded(&mut self, link: LinkId) {
        if self.net.links[link as usize].has_discarded() {
            self.count_discarded_slow(link);
        }
    }

    #[inline(never)]
    fn count_discarded_slow(&mut self, link: LinkId) {
        let l = &mut self.net.links[link as usize];
        let (flow_drops, dropped) = (&mut self.flow_drops, &mut self.packets_dropped);
        l.take_discarded(|_, p, _| {
            flow_drops[p.flow as usize] += 1;
            *dropped += 1;
        });
    }

    fn sync_timers(&mut self, f: FlowId) {
        let Slot::Tcp(t) = &mut self.flows[f as usize] else {
            return;
        };
        if let Some(d) = t.sender.next_timer() {
            if t.sender_event.is_none_or(|p| d < p) {
                t.sender_event = Some(d);
                self.events.push(d, Event::SenderTimer(f));
            }
        }
        if let Some(d) = t.receiver.next_timer() {
            if t.receiver_event.is_none_or(|p| d < p) {
                t.receiver_event = Some(d);
                self.events.push(d, Event::ReceiverTimer(f));
            }
        }
    }

    // ----- measurement ---------------------------------------------------------------------

    fn sample(&mut self) {
        let tcp = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(f, slot)| match slot {
                Slot::Tcp(t) => Some((f as FlowId, &t.sender, &t.receiver)),
                Slot::Udp(..) => None,
            });
        self.recorder.sample(self.now, tcp, &mut self.net);
    }

    fn report(mut self) -> Report {
        let end = self.end;
        // An AQM's dequeues due by the end, and their drops counted against the flows.
        for l in 0..self.net.links.len() {
            self.net.links[l].settle(end);
            self.count_discarded(l as LinkId);
        }
        let mut flows = Flows::default();
        for (i, slot) in self.flows.iter().enumerate() {
            let drops = self.flow_drops[i];
            flows.push(match slot {
                Slot::Tcp(t) => recorder::tcp_summary(
                    TcpFlowFacts {
                        flow: i as FlowId,
                        label: &t.label,
                        cc: t.controller.cc(),
                        startup: t.controller.startup(),
                        sender: &t.sender,
                        delivered_bytes: t.delivered_at_stop.unwrap_or(t.receiver.delivered_bytes),
                        drops,
                        ce_marks: t.receiver.ce_marks,
                    },
                    &self.net,
                    end,
                ),
                Slot::Udp(u, label) => {
                    recorder::udp_summary(i as FlowId, label, u, drops, &self.net, end)
                }
            });
        }
        let links = recorder::link_summaries(&mut self.net, end);
        let mut requests = Requests::default();
        for (i, slot) in self.flows.iter().enumerate() {
            if let Slot::Tcp(t) = slot {
                recorder::request_rows(i as FlowId, &t.label, &t.sender, end, &mut requests);
            }
        }
        let stats = RunStats {
            events: self.events_processed,
            packets_forwarded: links.forwarded_packets.iter().sum(),
            sim_time_ns: end.as_nanos(),
            packets_created: self.packets_created,
            packets_delivered: self.packets_delivered,
            packets_dropped: self.packets_dropped,
            packets_in_network: self.net.links.iter().map(|l| l.in_flight() as u64).sum(),
            jain_index: flows.tcp_jain_index(),
        };
        let errors = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| match slot {
                Slot::Tcp(t) => t
                    .sender
                    .controller_error()
                    .map(|e| format!("flow {i} ({}): {e}", t.label)),
                _ => None,
            })
            .collect();
        let (flow_series, queue_series, windows) = self.recorder.finish(&self.net);
        Report {
            flow_series,
            queue_series,
            flows,
            links,
            windows,
            requests,
            stats,
            errors,
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
