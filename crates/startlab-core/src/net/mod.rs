//! The network: nodes, link directions, static routes, and builders for the papers' topologies.

pub mod aqm;
pub mod link;
pub mod packet;
pub mod queue;
pub mod replay;
pub mod sojourn;
pub mod topology;
pub mod vary;

pub use link::{Admission, Link, LinkId, LinkParams, LinkStats, Usage};
pub use packet::{Ecn, FlowId, NodeId, Packet, PacketKind, SackBlocks};
pub use queue::{Discipline, DropTail, Limit, Red, RedParams};

use crate::rng::{streams, Rng};
use std::collections::VecDeque;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Router,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
}

/// Nodes, link directions and a static next-hop table.
#[derive(Clone, Debug, Default)]
pub struct Network {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// Human names of the link directions (`"left->right"`) and their aliases (`"bottleneck"`).
    pub link_names: Vec<String>,
    pub link_aliases: Vec<String>,
    /// `next_hop[node][dst]`: the link a packet at `node` for `dst` leaves on (`NO_ROUTE` if none).
    next_hop: Vec<Vec<LinkId>>,
}

pub const NO_ROUTE: LinkId = LinkId::MAX;

impl Network {
    pub fn add_node(&mut self, name: impl Into<String>, kind: NodeKind) -> NodeId {
        self.nodes.push(Node {
            name: name.into(),
            kind,
        });
        (self.nodes.len() - 1) as NodeId
    }

    /// Adds a link between `a` and `b`: `forward` is the a→b direction, `reverse` b→a. Returns the
    /// ids of the two directions. Each direction draws its random losses from its own stream.
    pub fn add_link(
        &mut self,
        a: NodeId,
        b: NodeId,
        forward: LinkParams,
        reverse: LinkParams,
        alias: &str,
        seed: u64,
    ) -> (LinkId, LinkId) {
        let f = self.add_direction(a, b, forward, alias.to_string(), seed);
        let r_alias = if alias.is_empty() {
            String::new()
        } else {
            format!("{alias}.reverse")
        };
        let r = self.add_direction(b, a, reverse, r_alias, seed);
        (f, r)
    }

    fn add_direction(
        &mut self,
        from: NodeId,
        to: NodeId,
        params: LinkParams,
        alias: String,
        seed: u64,
    ) -> LinkId {
        let id = self.links.len() as LinkId;
        let rng = Rng::stream(seed, streams::LINK_LOSS + id as u64);
        self.links.push(Link::new(from, to, params, rng));
        self.link_names.push(format!(
            "{}->{}",
            self.nodes[from as usize].name, self.nodes[to as usize].name
        ));
        self.link_aliases.push(alias);
        id
    }

    /// Computes shortest-path (fewest hops) routes for every pair of nodes. Ties go to the link
    /// added first, so routes are deterministic.
    pub fn compute_routes(&mut self) {
        let n = self.nodes.len();
        let mut incoming: Vec<Vec<LinkId>> = vec![Vec::new(); n];
        for (id, link) in self.links.iter().enumerate() {
            incoming[link.to as usize].push(id as LinkId);
        }
        let mut table = vec![vec![NO_ROUTE; n]; n];
        for dst in 0..n {
            // Breadth-first search backwards from dst over incoming links.
            let mut reached = vec![false; n];
            reached[dst] = true;
            let mut frontier = VecDeque::from([dst]);
            while let Some(v) = frontier.pop_front() {
                for &id in &incoming[v] {
                    let u = self.links[id as usize].from as usize;
                    if !reached[u] {
                        reached[u] = true;
                        table[u][dst] = id;
                        // Hosts do not forward: only routers extend paths.
                        if self.nodes[u].kind == NodeKind::Router {
                            frontier.push_back(u);
                        }
                    }
                }
            }
        }
        self.next_hop = table;
    }

    /// The link a packet at `node` leaves on towards `dst`.
    pub fn route(&self, node: NodeId, dst: NodeId) -> LinkId {
        self.next_hop[node as usize][dst as usize]
    }

    /// Looks a link direction up by its name (`"s0->left"`) or alias (`"bottleneck"`).
    pub fn find_link(&self, name: &str) -> Option<LinkId> {
        self.link_names
            .iter()
            .position(|n| n == name)
            .or_else(|| {
                self.link_aliases
                    .iter()
                    .position(|n| !n.is_empty() && n == name)
            })
            .map(|i| i as LinkId)
    }

    pub fn find_node(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as NodeId)
    }

    /// The sequence of links from `src` to `dst`, if a route exists.
    pub fn path(&self, src: NodeId, dst: NodeId) -> Option<Vec<LinkId>> {
        let mut path = Vec::new();
        let mut at = src;
        while at != dst {
            let l = self.route(at, dst);
            if l == NO_ROUTE || path.len() > self.nodes.len() {
                return None;
            }
            path.push(l);
            at = self.links[l as usize].to;
        }
        Some(path)
    }
}
