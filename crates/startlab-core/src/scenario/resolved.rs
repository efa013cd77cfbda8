//! The resolved scenario: what a world needs to run a scenario, with nothing left optional.
//!
//! [`super::resolve`] produces it once per run: the document with every default filled in (for
//! the run's `scenario.toml`), the network built with its seeded random streams, each flow
//! entry with its endpoints, its TCP settings and the factory of its controllers, and what to
//! measure. The simulator consumes it ([`crate::Simulation::from_resolved`]); so does any other
//! world that runs the same scenario, and so do the tools that only need to know the network's
//! links, hosts and round-trip times ([`ResolvedScenario::describe`]).

use super::model::Scenario;
use crate::cc::controller::ControllerFactory;
use crate::measure::recorder::MeasureSpec;
use crate::net::{LinkId, Network, NodeId, NodeKind};
use crate::tcp::{FlowSize, TcpConfig};
use crate::time::{Duration, Time};
use crate::traffic::{SizeDistribution, UdpPattern};
use crate::units::Rate;

/// A scenario ready to run.
#[derive(Debug)]
pub struct ResolvedScenario {
    /// The document with every default filled in and every `BDP` limit in packets.
    pub document: Scenario,
    pub name: String,
    pub seed: u64,
    pub duration: Duration,
    /// The topology, built once, with the random streams of its RED queues and lossy links.
    pub network: Network,
    /// The reference bandwidth-delay product of `BDP` quantities.
    pub bdp: Bdp,
    /// One entry per `[[flows]]` entry, in order.
    pub flows: Vec<FlowPlan>,
    pub measure: MeasureSpec,
    /// What the scenario probably does not mean ([`super::guards`]): valid, but worth a word.
    pub warnings: Vec<super::ScenarioError>,
}

/// The bandwidth-delay product that `BDP` quantities refer to.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Bdp {
    /// The reference round-trip time (`topology.bdp_rtt`, or the first path's propagation RTT).
    pub rtt: Duration,
    /// Bottleneck rate × `rtt`, in packets of `tcp.mss + tcp.header` bytes.
    pub packets: f64,
}

/// A `[[flows]]` entry, resolved.
#[derive(Clone, Debug)]
pub struct FlowPlan {
    /// Its index in `flows`.
    pub entry: usize,
    pub src: NodeId,
    pub dst: NodeId,
    pub traffic: Traffic,
}

/// What a flow entry sends.
#[derive(Clone, Debug)]
pub enum Traffic {
    /// `count` TCP connections (one per element), all with the same settings.
    Tcp {
        connections: Vec<Connection>,
        tcp: TcpConfig,
        controller: ControllerFactory,
    },
    /// Poisson arrivals of finite TCP connections.
    Arrivals {
        label: String,
        tcp: TcpConfig,
        controller: ControllerFactory,
        mean_interarrival: Duration,
        start: Time,
        stop: Time,
        sizes: SizeDistribution,
    },
    /// `count` UDP sources.
    Udp {
        sources: Vec<UdpPlan>,
        rate: Rate,
        packet_bytes: u32,
        pattern: UdpPattern,
    },
}

/// One TCP connection of an entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Connection {
    pub label: String,
    pub start: Time,
    /// When the application closes it; `None`: when it completes or the run ends.
    pub stop: Option<Time>,
    pub size: FlowSize,
    /// An application that writes responses one at a time (then `size` is unlimited).
    pub requests: Option<RequestPlan>,
}

/// The application of one connection: what it writes, and whose random stream it draws from
/// (copy `copy` of flow entry `entry`, [`crate::traffic::requests_stream`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestPlan {
    pub spec: crate::traffic::RequestSpec,
    pub entry: u32,
    pub copy: u32,
}

/// One UDP source of an entry.
#[derive(Clone, Debug, PartialEq)]
pub struct UdpPlan {
    pub label: String,
    pub start: Time,
    pub stop: Time,
}

/// The facts about a resolved scenario that tools ask for without running it.
#[derive(Clone, Debug, PartialEq)]
pub struct Description {
    pub links: Vec<LinkDescription>,
    pub hosts: Vec<String>,
    /// One per flow (each copy of a `count` entry; one for an arrival process).
    pub flows: Vec<FlowDescription>,
    pub bdp: Bdp,
    /// Links whose queues are sampled (`measure.links`).
    pub sampled_links: Vec<LinkId>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkDescription {
    pub link: LinkId,
    pub name: String,
    /// `None` if the scenario has no name for it.
    pub alias: Option<String>,
    pub src: String,
    pub dst: String,
    pub rate: Rate,
    pub delay: Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FlowDescription {
    /// The `[[flows]]` entry it comes from.
    pub entry: usize,
    pub label: String,
    /// `tcp`, `tcp-arrivals`, `cbr` or `on-off`.
    pub kind: String,
    pub src: String,
    pub dst: String,
    /// Propagation delay there and back along the routes (no serialization, no queueing).
    pub rtt: Duration,
}

impl ResolvedScenario {
    /// When the run ends.
    pub fn end(&self) -> Time {
        Time::ZERO + self.duration
    }

    /// Propagation round-trip time between two hosts along their routes.
    pub fn path_rtt(&self, src: NodeId, dst: NodeId) -> Duration {
        let one_way = |a, b| {
            self.network
                .path(a, b)
                .unwrap_or_default()
                .iter()
                .fold(Duration::ZERO, |acc, &l| {
                    acc + self.network.links[l as usize].params.delay
                })
        };
        one_way(src, dst) + one_way(dst, src)
    }

    /// Links, hosts, flows with their RTTs, the BDP and the sampled links.
    pub fn describe(&self) -> Description {
        let net = &self.network;
        let node = |n: NodeId| net.nodes[n as usize].name.clone();
        let links = net
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| LinkDescription {
                link: i as LinkId,
                name: net.link_names[i].clone(),
                alias: Some(net.link_aliases[i].clone()).filter(|a| !a.is_empty()),
                src: node(l.from),
                dst: node(l.to),
                rate: l.params.rate,
                delay: l.params.delay,
            })
            .collect();
        let hosts = net
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Host)
            .map(|n| n.name.clone())
            .collect();
        let mut flows = Vec::new();
        for plan in &self.flows {
            let entry = &self.document.flows[plan.entry];
            let rtt = self.path_rtt(plan.src, plan.dst);
            let mut push = |label: &str| {
                flows.push(FlowDescription {
                    entry: plan.entry,
                    label: label.to_string(),
                    kind: entry.kind.name().to_string(),
                    src: node(plan.src),
                    dst: node(plan.dst),
                    rtt,
                })
            };
            match &plan.traffic {
                Traffic::Tcp { connections, .. } => connections.iter().for_each(|c| push(&c.label)),
                Traffic::Arrivals { label, .. } => push(label),
                Traffic::Udp { sources, .. } => sources.iter().for_each(|s| push(&s.label)),
            }
        }
        Description {
            links,
            hosts,
            flows,
            bdp: self.bdp,
            sampled_links: self.measure.links.clone(),
        }
    }
}
