//! Builders for the topologies of the source papers.
//!
//! ```text
//! dumbbell:     s0 ─┐                       ┌─ r0
//!               s1 ─┼─ left ══bottleneck══ right ─┼─ r1
//!               …  ─┘                       └─ …
//!
//! parking lot:  ls0 ─ R0 ══hop0══ R1 ══hop1══ R2 ══hop2══ R3 ─ lr0
//!                      │  cs0_0 →  │ → cr0_0
//!                      cs1_0 enters at R1 and leaves at R2 (cr1_0), and so on
//! ```

use super::{LinkParams, Network, NodeId, NodeKind};

/// The two directions of a link; `forward` goes from the sender side to the receiver side.
#[derive(Clone, Debug)]
pub struct Duplex {
    pub forward: LinkParams,
    pub reverse: LinkParams,
}

#[derive(Clone, Debug)]
pub struct DumbbellSpec {
    pub bottleneck: Duplex,
    /// One per pair: s_i → left is `forward`.
    pub sender_access: Vec<Duplex>,
    /// One per pair: right → r_i is `forward`.
    pub receiver_access: Vec<Duplex>,
}

/// Joins `a` and `b` with both directions of `d` (`forward` is a→b).
fn connect(net: &mut Network, a: NodeId, b: NodeId, d: &Duplex, alias: &str, seed: u64) {
    net.add_link(a, b, d.forward.clone(), d.reverse.clone(), alias, seed);
}

/// Builds a dumbbell with hosts `s{i}`, `r{i}` and routers `left`, `right`.
pub fn dumbbell(spec: &DumbbellSpec, seed: u64) -> Network {
    assert_eq!(spec.sender_access.len(), spec.receiver_access.len());
    let mut net = Network::default();
    let n = spec.sender_access.len();
    let senders: Vec<NodeId> = (0..n)
        .map(|i| net.add_node(format!("s{i}"), NodeKind::Host))
        .collect();
    let receivers: Vec<NodeId> = (0..n)
        .map(|i| net.add_node(format!("r{i}"), NodeKind::Host))
        .collect();
    let left = net.add_node("left", NodeKind::Router);
    let right = net.add_node("right", NodeKind::Router);
    let b = &spec.bottleneck;
    connect(&mut net, left, right, b, "bottleneck", seed);
    for i in 0..n {
        let a = &spec.sender_access[i];
        connect(&mut net, senders[i], left, a, "", seed);
        let a = &spec.receiver_access[i];
        connect(&mut net, right, receivers[i], a, "", seed);
    }
    net.compute_routes();
    net
}

/// Builds N independent copies of the dumbbell path, one per pair: `s{i}` → `left{i}` →
/// `right{i}` → `r{i}`, each bottleneck aliased `bottleneck{i}`. Flows on different pairs never
/// meet, so algorithms can be compared side by side under identical conditions in one run.
pub fn parallel(spec: &DumbbellSpec, seed: u64) -> Network {
    assert_eq!(spec.sender_access.len(), spec.receiver_access.len());
    let mut net = Network::default();
    let n = spec.sender_access.len();
    let senders: Vec<NodeId> = (0..n)
        .map(|i| net.add_node(format!("s{i}"), NodeKind::Host))
        .collect();
    let receivers: Vec<NodeId> = (0..n)
        .map(|i| net.add_node(format!("r{i}"), NodeKind::Host))
        .collect();
    for i in 0..n {
        let left = net.add_node(format!("left{i}"), NodeKind::Router);
        let right = net.add_node(format!("right{i}"), NodeKind::Router);
        let b = &spec.bottleneck;
        connect(&mut net, left, right, b, &format!("bottleneck{i}"), seed);
        let a = &spec.sender_access[i];
        connect(&mut net, senders[i], left, a, "", seed);
        let a = &spec.receiver_access[i];
        connect(&mut net, right, receivers[i], a, "", seed);
    }
    net.compute_routes();
    net
}

#[derive(Clone, Debug)]
pub struct ParkingLotSpec {
    /// One per hop: R{h} → R{h+1} is `forward`.
    pub hops: Vec<Duplex>,
    pub long_pairs: usize,
    pub cross_pairs: usize,
    /// Every host's access link; `forward` points away from senders and towards receivers.
    pub access: Duplex,
}

/// Builds a parking lot: routers `R0..R{hops}`, long flows `ls{i}` → `lr{i}` across every hop,
/// and per hop `h` cross traffic `cs{h}_{i}` (at `R{h}`) → `cr{h}_{i}` (at `R{h+1}`).
pub fn parking_lot(spec: &ParkingLotSpec, seed: u64) -> Network {
    let mut net = Network::default();
    let hops = spec.hops.len();
    let routers: Vec<NodeId> = (0..=hops)
        .map(|h| net.add_node(format!("R{h}"), NodeKind::Router))
        .collect();
    for (h, d) in spec.hops.iter().enumerate() {
        connect(
            &mut net,
            routers[h],
            routers[h + 1],
            d,
            &format!("hop{h}"),
            seed,
        );
    }
    let a = &spec.access;
    for i in 0..spec.long_pairs {
        let s = net.add_node(format!("ls{i}"), NodeKind::Host);
        connect(&mut net, s, routers[0], a, "", seed);
        let r = net.add_node(format!("lr{i}"), NodeKind::Host);
        connect(&mut net, routers[hops], r, a, "", seed);
    }
    for h in 0..hops {
        for i in 0..spec.cross_pairs {
            let s = net.add_node(format!("cs{h}_{i}"), NodeKind::Host);
            connect(&mut net, s, routers[h], a, "", seed);
            let r = net.add_node(format!("cr{h}_{i}"), NodeKind::Host);
            connect(&mut net, routers[h + 1], r, a, "", seed);
        }
    }
    net.compute_routes();
    net
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{Discipline, DropTail, Limit};
    use crate::time::Duration;
    use crate::units::Rate;

    fn params(mbps: u64, ms: u64) -> LinkParams {
        LinkParams {
            rate: Rate::from_mbps(mbps),
            delay: Duration::from_millis(ms),
            discipline: Discipline::DropTail(DropTail {
                limit: Limit::Packets(100),
            }),
            loss: 0.0,
            variation: None,
        }
    }
    fn duplex(mbps: u64, ms: u64) -> Duplex {
        Duplex {
            forward: params(mbps, ms),
            reverse: params(mbps, ms),
        }
    }

    #[test]
    fn dumbbell_routes_through_the_bottleneck() {
        let spec = DumbbellSpec {
            bottleneck: duplex(10, 20),
            sender_access: vec![duplex(100, 1); 2],
            receiver_access: vec![duplex(100, 1); 2],
        };
        let net = dumbbell(&spec, 1);
        let s1 = net.find_node("s1").unwrap();
        let r1 = net.find_node("r1").unwrap();
        let names: Vec<&str> = net
            .path(s1, r1)
            .unwrap()
            .iter()
            .map(|&l| net.link_names[l as usize].as_str())
            .collect();
        assert_eq!(names, ["s1->left", "left->right", "right->r1"]);
        let back: Vec<&str> = net
            .path(r1, s1)
            .unwrap()
            .iter()
            .map(|&l| net.link_names[l as usize].as_str())
            .collect();
        assert_eq!(back, ["r1->right", "right->left", "left->s1"]);
        assert_eq!(net.find_link("bottleneck"), net.find_link("left->right"));
        assert_eq!(
            net.find_link("bottleneck.reverse"),
            net.find_link("right->left")
        );
        // Hosts do not forward: no route from s0 to s1 through... s0 reaches s1 via left.
        assert_eq!(net.path(net.find_node("s0").unwrap(), s1).unwrap().len(), 2);
    }

    #[test]
    fn parallel_paths_do_not_meet() {
        let spec = DumbbellSpec {
            bottleneck: duplex(10, 20),
            sender_access: vec![duplex(100, 1); 2],
            receiver_access: vec![duplex(100, 1); 2],
        };
        let net = parallel(&spec, 1);
        let path =
            |a: &str, b: &str| net.path(net.find_node(a).unwrap(), net.find_node(b).unwrap());
        let names: Vec<&str> = path("s1", "r1")
            .unwrap()
            .iter()
            .map(|&l| net.link_names[l as usize].as_str())
            .collect();
        assert_eq!(names, ["s1->left1", "left1->right1", "right1->r1"]);
        assert!(path("s0", "r1").is_none());
        assert!(net.find_link("bottleneck1").is_some());
    }

    #[test]
    fn parking_lot_cross_traffic_uses_one_hop() {
        let spec = ParkingLotSpec {
            hops: vec![duplex(10, 5); 3],
            long_pairs: 1,
            cross_pairs: 1,
            access: duplex(100, 1),
        };
        let net = parking_lot(&spec, 1);
        let p = net
            .path(net.find_node("ls0").unwrap(), net.find_node("lr0").unwrap())
            .unwrap();
        assert_eq!(p.len(), 5);
        let p = net
            .path(
                net.find_node("cs1_0").unwrap(),
                net.find_node("cr1_0").unwrap(),
            )
            .unwrap();
        let names: Vec<&str> = p
            .iter()
            .map(|&l| net.link_names[l as usize].as_str())
            .collect();
        assert_eq!(names, ["cs1_0->R1", "R1->R2", "R2->cr1_0"]);
    }
}
