//! The filled document: a scenario with every default in place, every value checked and every
//! `BDP` limit in packets, in plain values.
//!
//! Only the stages of [`super::resolve`] make one ([`super::defaults`], [`super::topology`],
//! [`super::flows`], [`super::measure`]), so a value read from it has been filled and checked:
//! nothing here is optional that the run needs. [`FilledScenario::document`] writes it back as
//! the text model, every field present (the run's `scenario.toml`).

use super::model::*;
use super::schedule::Varies;
use super::units::{DurationText, Interval, Limitable, QueueLimit, RateText, SizeText, Window};
use crate::cc::controller::ControllerFactory;
use crate::measure::recorder::MeasureSpec;
use crate::net::aqm::{CodelParams, FqCodelParams, PieParams};
use crate::net::vary::Variation;
use crate::net::{Limit, NodeId};
use crate::time::Duration;
use crate::traffic::{OnOffDistribution, SizeDistribution};
use crate::units::Rate;

/// A scenario after every stage of filling and checking.
#[derive(Clone, Debug)]
pub struct FilledScenario {
    pub name: String,
    pub seed: u64,
    pub duration: Duration,
    pub topology: FilledTopology,
    /// The document's `[tcp]` over its stack's defaults.
    pub tcp: FilledTcp,
    pub flows: Vec<FilledFlow>,
    pub measure: FilledMeasure,
}

impl FilledScenario {
    /// The text model with every field filled in.
    pub fn document(&self) -> Scenario {
        Scenario {
            name: Some(self.name.clone()),
            seed: Some(self.seed),
            duration: DurationText(self.duration),
            topology: self.topology.document(),
            tcp: self.tcp.document(),
            flows: self.flows.iter().map(FilledFlow::document).collect(),
            measure: self.measure.document(),
        }
    }
}

/// `[tcp]` (or a flow's `tcp` over it) with every field set.
#[derive(Clone, Debug, PartialEq)]
pub struct FilledTcp {
    pub stack: StackText,
    pub loss_detection: LossDetectionText,
    pub ack_policy: AckPolicyText,
    pub rto: RtoText,
    pub hz: u32,
    pub mss: u64,
    pub header: u64,
    pub ack_size: u64,
    pub initial_window: Window,
    pub initial_ssthresh: Limitable,
    pub receive_window: Limitable,
    pub delayed_ack: bool,
    pub delayed_ack_timeout: Duration,
    pub sack: bool,
    pub recovery: RecoveryText,
    pub dupack_threshold: u32,
    pub min_rto: Duration,
    pub max_rto: Duration,
    pub initial_rto: Duration,
    pub clock_granularity: Duration,
    pub handshake: bool,
    pub undo: bool,
    pub dsack: bool,
    pub ecn: bool,
    pub frto: bool,
    pub restart_after_idle: bool,
    pub metrics: bool,
    pub metrics_ssthresh: bool,
    pub tso_defer: bool,
    pub pacing: PacingText,
    pub pacing_ss_ratio: f64,
    pub pacing_ca_ratio: f64,
}

impl FilledTcp {
    /// `over`'s fields where set, else these.
    pub fn under(&self, over: &TcpSpec) -> FilledTcp {
        FilledTcp {
            stack: over.stack.unwrap_or(self.stack),
            loss_detection: over.loss_detection.unwrap_or(self.loss_detection),
            ack_policy: over.ack_policy.unwrap_or(self.ack_policy),
            rto: over.rto.unwrap_or(self.rto),
            hz: over.hz.unwrap_or(self.hz),
            mss: over.mss.map_or(self.mss, |s| s.0),
            header: over.header.map_or(self.header, |s| s.0),
            ack_size: over.ack_size.map_or(self.ack_size, |s| s.0),
            initial_window: over.initial_window.unwrap_or(self.initial_window),
            initial_ssthresh: over.initial_ssthresh.unwrap_or(self.initial_ssthresh),
            receive_window: over.receive_window.unwrap_or(self.receive_window),
            delayed_ack: over.delayed_ack.unwrap_or(self.delayed_ack),
            delayed_ack_timeout: over
                .delayed_ack_timeout
                .map_or(self.delayed_ack_timeout, |d| d.0),
            sack: over.sack.unwrap_or(self.sack),
            recovery: over.recovery.unwrap_or(self.recovery),
            dupack_threshold: over.dupack_threshold.unwrap_or(self.dupack_threshold),
            min_rto: over.min_rto.map_or(self.min_rto, |d| d.0),
            max_rto: over.max_rto.map_or(self.max_rto, |d| d.0),
            initial_rto: over.initial_rto.map_or(self.initial_rto, |d| d.0),
            clock_granularity: over
                .clock_granularity
                .map_or(self.clock_granularity, |d| d.0),
            handshake: over.handshake.unwrap_or(self.handshake),
            undo: over.undo.unwrap_or(self.undo),
            dsack: over.dsack.unwrap_or(self.dsack),
            ecn: over.ecn.unwrap_or(self.ecn),
            frto: over.frto.unwrap_or(self.frto),
            restart_after_idle: over.restart_after_idle.unwrap_or(self.restart_after_idle),
            metrics: over.metrics.unwrap_or(self.metrics),
            metrics_ssthresh: over.metrics_ssthresh.unwrap_or(self.metrics_ssthresh),
            tso_defer: over.tso_defer.unwrap_or(self.tso_defer),
            pacing: over.pacing.unwrap_or(self.pacing),
            pacing_ss_ratio: over.pacing_ss_ratio.unwrap_or(self.pacing_ss_ratio),
            pacing_ca_ratio: over.pacing_ca_ratio.unwrap_or(self.pacing_ca_ratio),
        }
    }

    /// The text model, every field set.
    pub fn document(&self) -> TcpSpec {
        TcpSpec {
            stack: Some(self.stack),
            loss_detection: Some(self.loss_detection),
            ack_policy: Some(self.ack_policy),
            rto: Some(self.rto),
            hz: Some(self.hz),
            mss: Some(SizeText(self.mss)),
            header: Some(SizeText(self.header)),
            ack_size: Some(SizeText(self.ack_size)),
            initial_window: Some(self.initial_window),
            initial_ssthresh: Some(self.initial_ssthresh),
            receive_window: Some(self.receive_window),
            delayed_ack: Some(self.delayed_ack),
            delayed_ack_timeout: Some(DurationText(self.delayed_ack_timeout)),
            sack: Some(self.sack),
            recovery: Some(self.recovery),
            dupack_threshold: Some(self.dupack_threshold),
            min_rto: Some(DurationText(self.min_rto)),
            max_rto: Some(DurationText(self.max_rto)),
            initial_rto: Some(DurationText(self.initial_rto)),
            clock_granularity: Some(DurationText(self.clock_granularity)),
            handshake: Some(self.handshake),
            undo: Some(self.undo),
            dsack: Some(self.dsack),
            ecn: Some(self.ecn),
            frto: Some(self.frto),
            restart_after_idle: Some(self.restart_after_idle),
            metrics: Some(self.metrics),
            metrics_ssthresh: Some(self.metrics_ssthresh),
            tso_defer: Some(self.tso_defer),
            pacing: Some(self.pacing),
            pacing_ss_ratio: Some(self.pacing_ss_ratio),
            pacing_ca_ratio: Some(self.pacing_ca_ratio),
        }
    }

    /// Bytes of a full data packet on the wire.
    pub fn segment_bytes(&self) -> u64 {
        self.mss + self.header
    }
}

/// A link with both directions filled in. `L` is the queue limit: as written
/// ([`QueueLimit`], possibly in BDPs) until the topology's BDP is known, then a [`Limit`].
#[derive(Clone, Debug, PartialEq)]
pub struct FilledLink<L = Limit> {
    pub rate: Rate,
    pub delay: Duration,
    pub reverse_rate: Rate,
    pub reverse_delay: Duration,
    pub queue: FilledQueue<L>,
    pub reverse_queue: FilledQueue<L>,
    pub loss: f64,
    pub reverse_loss: f64,
    /// What varies in each direction (`rate`, `delay` and `loss` above are then its values
    /// at 0).
    pub variation: Option<Box<Variation>>,
    pub reverse_variation: Option<Box<Variation>>,
    /// The schedules, jitter and reordering as written, for the document.
    pub written: Box<LinkSpec>,
}

/// A queue with its discipline's parameters filled in.
#[derive(Clone, Debug, PartialEq)]
pub enum FilledQueue<L = Limit> {
    DropTail {
        limit: L,
    },
    Red {
        limit: L,
        min_th: f64,
        max_th: f64,
        max_p: f64,
        w_q: f64,
        gentle: bool,
    },
    Codel {
        limit: L,
        params: CodelParams,
    },
    FqCodel {
        limit: L,
        params: FqCodelParams,
    },
    Pie {
        limit: L,
        params: PieParams,
    },
}

impl<L> FilledLink<L> {
    /// Propagation delay there and back.
    pub fn round_trip(&self) -> Duration {
        self.delay + self.reverse_delay
    }
}

impl FilledLink<QueueLimit> {
    /// The link with its `BDP` limits turned into packets of a BDP of `bdp_packets`.
    pub fn in_packets(self, bdp_packets: f64) -> FilledLink {
        FilledLink {
            rate: self.rate,
            delay: self.delay,
            reverse_rate: self.reverse_rate,
            reverse_delay: self.reverse_delay,
            queue: self.queue.in_packets(bdp_packets),
            reverse_queue: self.reverse_queue.in_packets(bdp_packets),
            loss: self.loss,
            reverse_loss: self.reverse_loss,
            variation: self.variation,
            reverse_variation: self.reverse_variation,
            written: self.written,
        }
    }
}

impl FilledQueue<QueueLimit> {
    pub fn in_packets(self, bdp_packets: f64) -> FilledQueue {
        let limit = |l: QueueLimit| match l {
            QueueLimit::Packets(p) => Limit::Packets(p),
            QueueLimit::Bytes(b) => Limit::Bytes(b),
            QueueLimit::Bdp(x) => Limit::Packets((x * bdp_packets).round().max(1.0) as u32),
        };
        match self {
            FilledQueue::DropTail { limit: l } => FilledQueue::DropTail { limit: limit(l) },
            FilledQueue::Red {
                limit: l,
                min_th,
                max_th,
                max_p,
                w_q,
                gentle,
            } => FilledQueue::Red {
                limit: limit(l),
                min_th,
                max_th,
                max_p,
                w_q,
                gentle,
            },
            FilledQueue::Codel { limit: l, params } => FilledQueue::Codel {
                limit: limit(l),
                params,
            },
            FilledQueue::FqCodel { limit: l, params } => FilledQueue::FqCodel {
                limit: limit(l),
                params,
            },
            FilledQueue::Pie { limit: l, params } => FilledQueue::Pie {
                limit: limit(l),
                params,
            },
        }
    }
}

impl FilledLink {
    /// The text model, every field set.
    pub fn document(&self) -> LinkSpec {
        // A schedule is written back as it was given; a constant, filled.
        fn either<C: Copy, S: Clone>(
            written: &Option<Varies<C, S>>,
            value: C,
        ) -> Option<Varies<C, S>> {
            match written {
                Some(v @ Varies::Schedule(_)) => Some(v.clone()),
                _ => Some(Varies::Fixed(value)),
            }
        }
        let w = &self.written;
        LinkSpec {
            rate: either(&w.rate, RateText(self.rate)),
            delay: either(&w.delay, DurationText(self.delay)),
            reverse_rate: either(&w.reverse_rate, RateText(self.reverse_rate)),
            reverse_delay: either(&w.reverse_delay, DurationText(self.reverse_delay)),
            queue: Some(self.queue.document()),
            reverse_queue: Some(self.reverse_queue.document()),
            loss: either(&w.loss, self.loss),
            reverse_loss: either(&w.reverse_loss, self.reverse_loss),
            jitter: w.jitter,
            reverse_jitter: w.reverse_jitter,
            reorder: w.reorder,
            reverse_reorder: w.reverse_reorder,
        }
    }
}

impl<L: Copy> FilledQueue<L> {
    pub fn limit(&self) -> L {
        match *self {
            FilledQueue::DropTail { limit }
            | FilledQueue::Red { limit, .. }
            | FilledQueue::Codel { limit, .. }
            | FilledQueue::FqCodel { limit, .. }
            | FilledQueue::Pie { limit, .. } => limit,
        }
    }
}

impl FilledQueue {
    fn document(&self) -> QueueSpec {
        let limit = Some(match self.limit() {
            Limit::Packets(p) => QueueLimit::Packets(p),
            Limit::Bytes(b) => QueueLimit::Bytes(b),
        });
        let d = |d: Duration| Some(DurationText(d));
        let codel = |kind, c: &CodelParams| QueueSpec {
            limit,
            target: d(c.target),
            interval: d(c.interval),
            ce_threshold: c.ce_threshold.and_then(d),
            ecn: Some(c.ecn),
            mtu: Some(c.mtu),
            ..QueueSpec::of(kind)
        };
        match self {
            FilledQueue::DropTail { .. } => QueueSpec {
                limit,
                ..QueueSpec::of(QueueKind::Droptail)
            },
            &FilledQueue::Red {
                min_th,
                max_th,
                max_p,
                w_q,
                gentle,
                ..
            } => QueueSpec {
                limit,
                min_th: Some(min_th),
                max_th: Some(max_th),
                max_p: Some(max_p),
                w_q: Some(w_q),
                gentle: Some(gentle),
                ..QueueSpec::of(QueueKind::Red)
            },
            FilledQueue::Codel { params, .. } => codel(QueueKind::Codel, params),
            FilledQueue::FqCodel { params: p, .. } => QueueSpec {
                flows: Some(p.flows),
                quantum: Some(p.quantum),
                memory_limit: Some(p.memory_limit as u64),
                drop_batch: Some(p.drop_batch),
                ..codel(QueueKind::FqCodel, &p.codel)
            },
            FilledQueue::Pie { params: p, .. } => QueueSpec {
                limit,
                target: d(p.target),
                tupdate: d(p.tupdate),
                alpha: Some(p.alpha),
                beta: Some(p.beta),
                ecn: Some(p.ecn),
                bytemode: Some(p.bytemode),
                dq_rate_estimator: Some(p.dq_rate_estimator),
                mtu: Some(p.mtu),
                ..QueueSpec::of(QueueKind::Pie)
            },
        }
    }
}

/// The topology with every link filled in and the BDP its limits were converted with.
#[derive(Clone, Debug)]
pub struct FilledTopology {
    pub shape: Shape,
    pub bottleneck: FilledLink,
    /// The access links' defaults (a parking lot's access links).
    pub access: FilledLink,
    /// `topology.bdp_rtt`, or the first path's propagation RTT.
    pub bdp_rtt: Duration,
}

/// What is particular to each kind of topology.
#[derive(Clone, Debug)]
pub enum Shape<L = Limit> {
    Dumbbell {
        pairs: Vec<FilledPair<L>>,
    },
    /// Independent copies of the dumbbell path, one per pair.
    Parallel {
        pairs: Vec<FilledPair<L>>,
    },
    ParkingLot {
        hops: Vec<FilledLink<L>>,
        long_pairs: u32,
        cross_pairs: u32,
    },
}

/// A sender and a receiver and their access links.
#[derive(Clone, Debug)]
pub struct FilledPair<L = Limit> {
    pub sender_access: FilledLink<L>,
    pub receiver_access: FilledLink<L>,
}

impl Shape<QueueLimit> {
    /// The shape with its `BDP` limits turned into packets.
    pub fn in_packets(self, bdp_packets: f64) -> Shape {
        let pairs = |pairs: Vec<FilledPair<QueueLimit>>| {
            pairs
                .into_iter()
                .map(|p| FilledPair {
                    sender_access: p.sender_access.in_packets(bdp_packets),
                    receiver_access: p.receiver_access.in_packets(bdp_packets),
                })
                .collect()
        };
        match self {
            Shape::Dumbbell { pairs: p } => Shape::Dumbbell { pairs: pairs(p) },
            Shape::Parallel { pairs: p } => Shape::Parallel { pairs: pairs(p) },
            Shape::ParkingLot {
                hops,
                long_pairs,
                cross_pairs,
            } => Shape::ParkingLot {
                hops: hops
                    .into_iter()
                    .map(|h| h.in_packets(bdp_packets))
                    .collect(),
                long_pairs,
                cross_pairs,
            },
        }
    }
}

impl FilledTopology {
    pub fn kind(&self) -> TopologyKind {
        match self.shape {
            Shape::Dumbbell { .. } => TopologyKind::Dumbbell,
            Shape::Parallel { .. } => TopologyKind::Parallel,
            Shape::ParkingLot { .. } => TopologyKind::ParkingLot,
        }
    }

    fn document(&self) -> Topology {
        let mut t = Topology {
            kind: self.kind(),
            bdp_rtt: Some(DurationText(self.bdp_rtt)),
            bottleneck: self.bottleneck.document(),
            access: Some(self.access.document()),
            pairs: None,
            pair: None,
            hops: None,
            long_pairs: None,
            cross_pairs: None,
            hop: None,
        };
        match &self.shape {
            Shape::Dumbbell { pairs } | Shape::Parallel { pairs } => {
                t.pairs = Some(pairs.len() as u32);
                t.pair = Some(
                    pairs
                        .iter()
                        .map(|p| PairSpec {
                            sender_access: Some(p.sender_access.document()),
                            receiver_access: Some(p.receiver_access.document()),
                        })
                        .collect(),
                );
            }
            Shape::ParkingLot {
                hops,
                long_pairs,
                cross_pairs,
            } => {
                t.hops = Some(hops.len() as u32);
                t.hop = Some(hops.iter().map(FilledLink::document).collect());
                t.long_pairs = Some(*long_pairs);
                t.cross_pairs = Some(*cross_pairs);
            }
        }
        t
    }
}

/// A host of the network, by name and id.
#[derive(Clone, Debug)]
pub struct Host {
    pub name: String,
    pub node: NodeId,
}

/// A `[[flows]]` entry with its endpoints found and every default filled in.
#[derive(Clone, Debug)]
pub struct FilledFlow {
    /// The entry's own label, if it has one.
    pub label: Option<String>,
    pub src: Host,
    pub dst: Host,
    pub start: Duration,
    pub traffic: FilledTraffic,
}

/// What an entry sends, per kind.
#[derive(Clone, Debug)]
pub enum FilledTraffic {
    /// `kind = "tcp"`.
    Tcp {
        copies: Copies,
        /// When the application closes the connections; `None`: when they complete.
        stop: Option<Duration>,
        size: Limitable,
        /// An application that writes responses one at a time (then `size` is unlimited).
        requests: Option<FilledRequests>,
        tcp: TcpFlow,
    },
    /// `kind = "tcp-arrivals"`.
    Arrivals {
        stop: Duration,
        mean_interarrival: Duration,
        sizes: FilledSizes,
        tcp: TcpFlow,
    },
    /// `kind = "cbr"`.
    Cbr {
        copies: Copies,
        stop: Duration,
        udp: UdpFlow,
    },
    /// `kind = "on-off"`.
    OnOff {
        copies: Copies,
        stop: Duration,
        udp: UdpFlow,
        on_time: Duration,
        off_time: Duration,
        distribution: OnOffDistribution,
    },
}

/// `count` copies of an entry, each `stagger` after the previous one.
#[derive(Copy, Clone, Debug)]
pub struct Copies {
    pub count: u32,
    pub stagger: Duration,
}

/// What the TCP kinds share: their settings and their controller.
#[derive(Clone, Debug)]
pub struct TcpFlow {
    /// The entry's own `tcp`, as written.
    pub given: Option<TcpSpec>,
    /// The entry's `tcp` over the document's.
    pub tcp: FilledTcp,
    /// Its algorithms as filled in, checked, and the factory of its controllers.
    pub controller: ControllerFactory,
}

/// What the UDP kinds share.
#[derive(Copy, Clone, Debug)]
pub struct UdpFlow {
    pub rate: Rate,
    pub packet_size: u64,
}

/// A checked size distribution, as written (with its default shape) and as drawn from.
#[derive(Clone, Debug)]
pub struct FilledSizes {
    pub written: SizeDistributionSpec,
    pub sizes: SizeDistribution,
}

/// `requests`, checked: as written back, and as the worlds run it.
#[derive(Clone, Debug)]
pub struct FilledRequests {
    pub written: RequestsSpec,
    pub spec: crate::traffic::RequestSpec,
}

impl FilledFlow {
    pub fn kind(&self) -> FlowKind {
        match self.traffic {
            FilledTraffic::Tcp { .. } => FlowKind::Tcp,
            FilledTraffic::Arrivals { .. } => FlowKind::TcpArrivals,
            FilledTraffic::Cbr { .. } => FlowKind::Cbr,
            FilledTraffic::OnOff { .. } => FlowKind::OnOff,
        }
    }

    /// The TCP settings and controller of a TCP entry.
    pub fn tcp(&self) -> Option<&TcpFlow> {
        match &self.traffic {
            FilledTraffic::Tcp { tcp, .. } | FilledTraffic::Arrivals { tcp, .. } => Some(tcp),
            FilledTraffic::Cbr { .. } | FilledTraffic::OnOff { .. } => None,
        }
    }

    fn document(&self) -> FlowSpec {
        let mut f = FlowSpec {
            kind: self.kind(),
            label: self.label.clone(),
            src: Some(self.src.name.clone()),
            dst: Some(self.dst.name.clone()),
            start: Some(DurationText(self.start)),
            ..FlowSpec::default()
        };
        let copies = |f: &mut FlowSpec, c: &Copies| {
            f.count = Some(c.count);
            f.stagger = Some(DurationText(c.stagger));
        };
        let tcp = |f: &mut FlowSpec, t: &TcpFlow| {
            f.cc = Some(t.controller.cc().to_string());
            f.cc_params = Some(t.controller.cc_params().clone());
            f.startup = Some(t.controller.startup().to_string());
            f.startup_params = Some(t.controller.startup_params().clone());
            f.tcp = t.given.clone();
        };
        let udp = |f: &mut FlowSpec, u: &UdpFlow| {
            f.rate = Some(RateText(u.rate));
            f.packet_size = Some(SizeText(u.packet_size));
        };
        match &self.traffic {
            FilledTraffic::Tcp {
                copies: c,
                stop,
                size,
                requests,
                tcp: t,
            } => {
                copies(&mut f, c);
                f.stop = stop.map(DurationText);
                match requests {
                    Some(r) => f.requests = Some(r.written.clone()),
                    None => f.size = Some(FlowSizeSpec::Fixed(*size)),
                }
                tcp(&mut f, t);
            }
            FilledTraffic::Arrivals {
                stop,
                mean_interarrival,
                sizes,
                tcp: t,
            } => {
                f.stop = Some(DurationText(*stop));
                f.mean_interarrival = Some(DurationText(*mean_interarrival));
                f.size = Some(FlowSizeSpec::Distribution(sizes.written.clone()));
                tcp(&mut f, t);
            }
            FilledTraffic::Cbr {
                copies: c,
                stop,
                udp: u,
            } => {
                copies(&mut f, c);
                f.stop = Some(DurationText(*stop));
                udp(&mut f, u);
            }
            FilledTraffic::OnOff {
                copies: c,
                stop,
                udp: u,
                on_time,
                off_time,
                distribution,
            } => {
                copies(&mut f, c);
                f.stop = Some(DurationText(*stop));
                udp(&mut f, u);
                f.on_time = Some(DurationText(*on_time));
                f.off_time = Some(DurationText(*off_time));
                f.distribution = Some(match distribution {
                    OnOffDistribution::Constant => OnOffDistributionText::Constant,
                    OnOffDistribution::Exponential => OnOffDistributionText::Exponential,
                    OnOffDistribution::Pareto { .. } => OnOffDistributionText::Pareto,
                });
                if let OnOffDistribution::Pareto { shape } = distribution {
                    f.shape = Some(*shape);
                }
            }
        }
        f
    }
}

/// `[measure]` filled in, its links found.
#[derive(Clone, Debug)]
pub struct FilledMeasure {
    /// The sampled links' names, as written or by default.
    pub links: Vec<String>,
    pub window: Vec<WindowSpec>,
    /// What the recorder measures, links by id.
    pub recorded: MeasureSpec,
}

impl FilledMeasure {
    fn document(&self) -> MeasureSpecText {
        MeasureSpecText {
            interval: Some(match self.recorded.interval {
                Some(d) => Interval::Every(d),
                None => Interval::Event,
            }),
            flow_series: Some(self.recorded.flow_series),
            queue_series: Some(self.recorded.queue_series),
            links: Some(self.links.clone()),
            window: self.window.clone(),
        }
    }
}
