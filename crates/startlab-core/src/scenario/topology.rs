//! The topology: filled and checked per kind, its `BDP` limits turned into packets, and built
//! into a [`Network`] with the run's seed.

use super::check::{self, not_for};
use super::defaults::{
    bottleneck_defaults, default_access, fill_directions, fill_queue, merge_link,
};
use super::filled::*;
use super::model::*;
use super::resolved::Bdp;
use super::schedule::{self, DelayValue, LossValue, RateValue, ReorderSpec};
use super::units::{DurationText, QueueLimit};
use super::{err, ScenarioError};
use crate::net::aqm::{
    Aqm, Classifier, Codel, CodelParams, FqCodel, FqCodelParams, Pie, PieParams,
};
use crate::net::topology::{self, DumbbellSpec, Duplex, ParkingLotSpec};
use crate::net::vary::Variation;
use crate::net::{Discipline, DropTail, Limit, LinkParams, Network, Red, RedParams};
use crate::rng::{streams, Rng};
use crate::time::Duration;
use crate::units::Rate;

/// The most nodes a topology may have: a 10000-pair dumbbell's (the routes are nodes² entries).
const MAX_NODES: u64 = 20_002;

/// The links every kind shares, as merged onto their defaults (before each direction is filled
/// in: a pair or hop that sets only `delay` gets that delay in both directions).
struct Common {
    access: LinkSpec,
    bottleneck: LinkSpec,
}

/// Fills in and checks `[topology]`; `tcp` gives the packets that `BDP` counts.
pub fn fill(t: &Topology, tcp: &FilledTcp) -> Result<(FilledTopology, Bdp), ScenarioError> {
    let common = Common {
        access: merge_link(
            t.access.as_ref().unwrap_or(&LinkSpec::default()),
            &default_access(),
        ),
        bottleneck: merge_link(&t.bottleneck, &bottleneck_defaults()),
    };
    let access = fill_link(&common.access, "topology.access")?;
    let bottleneck = fill_link(&common.bottleneck, "topology.bottleneck")?;
    let shape = match t.kind {
        TopologyKind::Dumbbell => Shape::Dumbbell {
            pairs: pairs(t, &common, "dumbbell")?,
        },
        TopologyKind::Parallel => Shape::Parallel {
            pairs: pairs(t, &common, "parallel")?,
        },
        TopologyKind::ParkingLot => parking_lot(t, &common)?,
    };

    // "BDP" = bottleneck rate x reference RTT, in data packets on the wire.
    let rtt = match t.bdp_rtt {
        Some(d) => d.0,
        None => first_path_rtt(&shape, &bottleneck, &access),
    };
    let packets = bottleneck.rate.bytes_in(rtt) as f64 / tcp.segment_bytes() as f64;
    if bottleneck.rate.bps() == 0 && matches!(bottleneck.queue.limit(), QueueLimit::Bdp(_)) {
        return Err(err(
            "topology.bottleneck.rate",
            "the rate at 0s is 0bps, so a BDP (the queue's limit) has no size: give the queue a limit in packets, or start the schedule above 0bps",
        ));
    }
    let filled = FilledTopology {
        shape: shape.in_packets(packets),
        bottleneck: bottleneck.in_packets(packets),
        access: access.in_packets(packets),
        bdp_rtt: rtt,
    };
    Ok((filled, Bdp { rtt, packets }))
}

/// A link (at `path`) merged onto its defaults: each direction filled in, checked.
fn fill_link(l: &LinkSpec, path: &str) -> Result<FilledLink<QueueLimit>, ScenarioError> {
    let l = fill_directions(l.clone());
    let rate = l
        .rate
        .as_ref()
        .ok_or_else(|| err(format!("{path}.rate"), "required (e.g. rate = \"40Mbps\")"))?;
    let delay = l
        .delay
        .as_ref()
        .ok_or_else(|| err(format!("{path}.delay"), "required (e.g. delay = \"40ms\")"))?;
    let forward = direction(
        rate,
        delay,
        l.loss.as_ref(),
        l.jitter,
        l.reorder.as_ref(),
        path,
        "",
    )?;
    let reverse = direction(
        l.reverse_rate.as_ref().unwrap_or(rate),
        l.reverse_delay.as_ref().unwrap_or(delay),
        l.reverse_loss.as_ref(),
        l.reverse_jitter,
        l.reverse_reorder.as_ref(),
        path,
        "reverse_",
    )?;
    // Every link is merged onto defaults that have a queue.
    let written = l
        .queue
        .as_ref()
        .ok_or_else(|| err(format!("{path}.queue"), "required"))?;
    let queue = filled_queue(written, &format!("{path}.queue"))?;
    let reverse_queue = match &l.reverse_queue {
        Some(q) => filled_queue(q, &format!("{path}.reverse_queue"))?,
        None => queue.clone(),
    };
    Ok(FilledLink {
        rate: forward.rate,
        delay: forward.delay,
        reverse_rate: reverse.rate,
        reverse_delay: reverse.delay,
        queue,
        reverse_queue,
        loss: forward.loss,
        reverse_loss: reverse.loss,
        variation: forward.variation,
        reverse_variation: reverse.variation,
        written: Box::new(l),
    })
}

/// One direction of a link: its values at 0 and what varies.
struct Direction {
    rate: Rate,
    delay: Duration,
    loss: f64,
    variation: Option<Box<Variation>>,
}

/// Checks one direction's rate, delay, loss, jitter and reordering (`prefix` is `reverse_`
/// for the reverse one).
fn direction(
    rate: &RateValue,
    delay: &DelayValue,
    loss: Option<&LossValue>,
    jitter: Option<DurationText>,
    reorder: Option<&ReorderSpec>,
    path: &str,
    prefix: &str,
) -> Result<Direction, ScenarioError> {
    let (rate, capacity) = schedule::capacity(rate, &format!("{path}.{prefix}rate"))?;
    let (delay, delay_schedule) = schedule::delay(delay, &format!("{path}.{prefix}delay"))?;
    let (loss, loss_schedule, bursty_loss) = match loss {
        Some(l) => schedule::loss(l, &format!("{path}.{prefix}loss"))?,
        None => (0.0, None, None),
    };
    let jitter = jitter.map_or(Duration::ZERO, |j| j.0);
    if jitter > Duration::from_secs(60) {
        return Err(err(
            format!("{path}.{prefix}jitter"),
            format!("invalid duration {jitter}: at most 60s"),
        ));
    }
    let reorder = reorder
        .map(|r| schedule::reorder(r, &format!("{path}.{prefix}reorder")))
        .transpose()?;
    let variation = Variation {
        capacity,
        delay: delay_schedule,
        loss: loss_schedule,
        bursty_loss,
        jitter,
        reorder,
    };
    Ok(Direction {
        rate,
        delay,
        loss,
        variation: variation.is_some().then(|| Box::new(variation)),
    })
}

/// A queue given as a TOML inline table (`{ kind = "codel", target = "5ms" }`), with its
/// defaults, checked, and its discipline for one link of `rate` (a packet-by-packet replay:
/// FQ-CoDel classifies by flow number). A limit in BDPs has no meaning here and is refused.
pub fn replay_discipline(text: &str, rate: Rate, seed: u64) -> Result<Discipline, ScenarioError> {
    #[derive(serde::Deserialize)]
    struct One {
        queue: QueueSpec,
    }
    let one: One = toml::from_str(&format!("queue = {text}")).map_err(|e| {
        err(
            "queue",
            format!("invalid queue table {text}: {}", e.message()),
        )
    })?;
    let filled = filled_queue(&one.queue, "queue")?;
    if let QueueLimit::Bdp(_) = filled.limit() {
        return Err(err(
            "queue.limit",
            "a replay has no BDP: give the limit in packets or bytes",
        ));
    }
    let filled = filled.in_packets(1.0);
    let mut streams = QueueStreams { seed, next: 0 };
    let mut d = streams.discipline(&filled, rate);
    if let Discipline::Aqm(a) = &mut d {
        if let Aqm::FqCodel(q) = a.as_mut() {
            q.classifier = Classifier::FlowNumber;
        }
    }
    Ok(d)
}

/// A queue as written, with its defaults, checked.
fn filled_queue(written: &QueueSpec, path: &str) -> Result<FilledQueue<QueueLimit>, ScenarioError> {
    check::queue_fields(written, path)?;
    let q = fill_queue(written.clone());
    let limit = q.limit.unwrap_or(QueueLimit::Bdp(1.0));
    let filled = match q.kind {
        QueueKind::Droptail => FilledQueue::DropTail { limit },
        QueueKind::Red => FilledQueue::Red {
            limit,
            min_th: q.min_th.unwrap_or(5.0),
            max_th: q.max_th.unwrap_or(15.0),
            max_p: q.max_p.unwrap_or(0.1),
            w_q: q.w_q.unwrap_or(0.002),
            gentle: q.gentle.unwrap_or(true),
        },
        QueueKind::Codel | QueueKind::FqCodel | QueueKind::Pie => aqm_queue(&q, limit, path)?,
    };
    check::queue(&filled, path)?;
    Ok(filled)
}

/// An AQM's parameters, filled (`fill_queue` set every one), in Linux's ranges.
fn aqm_queue(
    q: &QueueSpec,
    limit: QueueLimit,
    path: &str,
) -> Result<FilledQueue<QueueLimit>, ScenarioError> {
    let kind = q.kind.name();
    if let QueueLimit::Bytes(_) = limit {
        return Err(err(
            format!("{path}.limit"),
            format!("{kind}'s limit counts packets, as Linux's qdisc does: write a number of packets or of BDPs"),
        ));
    }
    let filled = |v: Option<DurationText>| v.expect("filled by fill_queue").0;
    // tc takes these times as 32-bit microseconds.
    let time = |v: Option<DurationText>, field: &str, zero_ok: bool| {
        let d = filled(v);
        let max = Duration::from_micros(u32::MAX as u64);
        if (d.is_zero() && !zero_ok) || d > max {
            Err(err(
                format!("{path}.{field}"),
                format!("invalid duration {d}: expected more than 0 and at most {max}"),
            ))
        } else {
            Ok(d)
        }
    };
    let mtu = q.mtu.expect("filled");
    if !(68..=65_535).contains(&mtu) {
        return Err(err(
            format!("{path}.mtu"),
            format!("invalid mtu {mtu}: expected 68 to 65535 bytes"),
        ));
    }
    if q.kind == QueueKind::Pie {
        for (field, v) in [("alpha", q.alpha), ("beta", q.beta)] {
            let v = v.expect("filled");
            if v > 32 {
                return Err(err(
                    format!("{path}.{field}"),
                    format!("invalid value {v}: expected 0 to 32 (sixteenths, as tc takes them)"),
                ));
            }
        }
        return Ok(FilledQueue::Pie {
            limit,
            params: PieParams {
                target: time(q.target, "target", false)?,
                tupdate: time(q.tupdate, "tupdate", false)?,
                alpha: q.alpha.expect("filled"),
                beta: q.beta.expect("filled"),
                ecn: q.ecn.expect("filled"),
                bytemode: q.bytemode.expect("filled"),
                dq_rate_estimator: q.dq_rate_estimator.expect("filled"),
                mtu,
            },
        });
    }
    let codel = CodelParams {
        target: time(q.target, "target", false)?,
        interval: time(q.interval, "interval", false)?,
        ce_threshold: match q.ce_threshold {
            Some(_) => Some(time(q.ce_threshold, "ce_threshold", true)?),
            None => None,
        },
        ecn: q.ecn.expect("filled"),
        mtu,
    };
    if q.kind == QueueKind::Codel {
        return Ok(FilledQueue::Codel {
            limit,
            params: codel,
        });
    }
    let flows = q.flows.expect("filled");
    if !(1..=65_536).contains(&flows) {
        return Err(err(
            format!("{path}.flows"),
            format!("invalid value {flows}: expected 1 to 65536 buckets"),
        ));
    }
    let quantum = q.quantum.expect("filled");
    if !(256..=1 << 20).contains(&quantum) {
        return Err(err(
            format!("{path}.quantum"),
            format!("invalid value {quantum}: expected 256 to 1048576 bytes (Linux raises smaller ones to 256)"),
        ));
    }
    let memory_limit = q.memory_limit.expect("filled");
    if !(1..=1 << 31).contains(&memory_limit) {
        return Err(err(
            format!("{path}.memory_limit"),
            format!("invalid value {memory_limit}: expected 1 to 2147483648 bytes"),
        ));
    }
    let drop_batch = q.drop_batch.expect("filled");
    if drop_batch == 0 {
        return Err(err(
            format!("{path}.drop_batch"),
            "invalid value 0: expected at least 1 packet",
        ));
    }
    Ok(FilledQueue::FqCodel {
        limit,
        params: FqCodelParams {
            codel,
            flows,
            quantum,
            memory_limit: memory_limit as u32,
            drop_batch,
        },
    })
}

/// A dumbbell's or parallel paths' pairs, each access link over `topology.access`.
fn pairs(
    t: &Topology,
    common: &Common,
    kind: &str,
) -> Result<Vec<FilledPair<QueueLimit>>, ScenarioError> {
    not_for("topology.hops", t.hops.is_some(), kind)?;
    not_for("topology.long_pairs", t.long_pairs.is_some(), kind)?;
    not_for("topology.cross_pairs", t.cross_pairs.is_some(), kind)?;
    not_for("topology.hop", t.hop.is_some(), kind)?;
    let pairs = t.pairs.unwrap_or(1);
    if pairs == 0 || pairs > 10_000 {
        return Err(err(
            "topology.pairs",
            format!("invalid value {pairs}: expected 1 to 10000"),
        ));
    }
    let given = t.pair.clone().unwrap_or_default();
    if given.len() > pairs as usize {
        return Err(err(
            "topology.pair",
            format!("{} entries for {pairs} pairs", given.len()),
        ));
    }
    (0..pairs as usize)
        .map(|i| {
            let p = given.get(i).cloned().unwrap_or_default();
            let link = |l: Option<LinkSpec>, side: &str| {
                fill_link(
                    &merge_link(&l.unwrap_or_default(), &common.access),
                    &format!("topology.pair[{i}].{side}"),
                )
            };
            Ok(FilledPair {
                sender_access: link(p.sender_access, "sender_access")?,
                receiver_access: link(p.receiver_access, "receiver_access")?,
            })
        })
        .collect()
}

/// A parking lot's hops, each over `topology.bottleneck`, and its pairs.
fn parking_lot(t: &Topology, common: &Common) -> Result<Shape<QueueLimit>, ScenarioError> {
    let kind = "parking-lot";
    not_for("topology.pairs", t.pairs.is_some(), kind)?;
    not_for("topology.pair", t.pair.is_some(), kind)?;
    let hops = t.hops.ok_or_else(|| {
        err(
            "topology.hops",
            "required for a parking lot (e.g. hops = 3)",
        )
    })?;
    if hops == 0 || hops > 1000 {
        return Err(err(
            "topology.hops",
            format!("invalid value {hops}: expected 1 to 1000"),
        ));
    }
    let given = t.hop.clone().unwrap_or_default();
    if given.len() > hops as usize {
        return Err(err(
            "topology.hop",
            format!("{} entries for {hops} hops", given.len()),
        ));
    }
    let hop_links = (0..hops as usize)
        .map(|i| {
            fill_link(
                &merge_link(
                    &given.get(i).cloned().unwrap_or_default(),
                    &common.bottleneck,
                ),
                &format!("topology.hop[{i}]"),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (long_pairs, cross_pairs) = (t.long_pairs.unwrap_or(1), t.cross_pairs.unwrap_or(1));
    for (field, n) in [("long_pairs", long_pairs), ("cross_pairs", cross_pairs)] {
        if n > 10_000 {
            return Err(err(
                format!("topology.{field}"),
                format!("invalid value {n}: expected 0 to 10000"),
            ));
        }
    }
    // Hosts: 2 per long pair, 2 per cross pair and hop; routers: hops + 1. The routes are a
    // table of nodes² entries: keep it as large as a 10000-pair dumbbell's at most.
    let (long_hosts, cross_hosts) = (2 * long_pairs as u64, 2 * cross_pairs as u64 * hops as u64);
    let nodes = long_hosts + cross_hosts + hops as u64 + 1;
    if nodes > MAX_NODES {
        // Named: the pairs that bring the most hosts.
        let field = if long_hosts >= cross_hosts {
            "topology.long_pairs"
        } else {
            "topology.cross_pairs"
        };
        return Err(err(
            field,
            format!("{long_pairs} long pairs and {cross_pairs} cross pairs on each of {hops} hops make {nodes} nodes; at most {MAX_NODES} are allowed"),
        ));
    }
    Ok(Shape::ParkingLot {
        hops: hop_links,
        long_pairs,
        cross_pairs,
    })
}

/// Round-trip propagation delay of s0 -> r0 (dumbbell) or ls0 -> lr0 (parking lot).
fn first_path_rtt<L>(
    shape: &Shape<L>,
    bottleneck: &FilledLink<L>,
    access: &FilledLink<L>,
) -> Duration {
    match shape {
        Shape::Dumbbell { pairs } | Shape::Parallel { pairs } => {
            // A dumbbell has at least one pair.
            pairs.first().map_or(Duration::ZERO, |p| {
                p.sender_access.round_trip()
                    + bottleneck.round_trip()
                    + p.receiver_access.round_trip()
            })
        }
        Shape::ParkingLot { hops, .. } => hops
            .iter()
            .fold(access.round_trip() * 2, |acc, h| acc + h.round_trip()),
    }
}

// ----- building ----------------------------------------------------------------------------------

/// The network of a filled topology, its RED queues and lossy links seeded from `seed`.
pub fn build(t: &FilledTopology, seed: u64) -> Network {
    let mut streams = QueueStreams { seed, next: 0 };
    match &t.shape {
        Shape::Dumbbell { pairs } => {
            topology::dumbbell(&dumbbell_spec(t, pairs, &mut streams), seed)
        }
        Shape::Parallel { pairs } => {
            topology::parallel(&dumbbell_spec(t, pairs, &mut streams), seed)
        }
        Shape::ParkingLot {
            hops,
            long_pairs,
            cross_pairs,
        } => {
            let spec = ParkingLotSpec {
                hops: hops.iter().map(|h| streams.duplex(h)).collect(),
                long_pairs: *long_pairs as usize,
                cross_pairs: *cross_pairs as usize,
                access: streams.duplex(&t.access),
            };
            topology::parking_lot(&spec, seed)
        }
    }
}

fn dumbbell_spec(
    t: &FilledTopology,
    pairs: &[FilledPair],
    streams: &mut QueueStreams,
) -> DumbbellSpec {
    DumbbellSpec {
        bottleneck: streams.duplex(&t.bottleneck),
        sender_access: pairs
            .iter()
            .map(|p| streams.duplex(&p.sender_access))
            .collect(),
        receiver_access: pairs
            .iter()
            .map(|p| streams.duplex(&p.receiver_access))
            .collect(),
    }
}

/// The random streams of RED queues, one per queue in the order they are built.
struct QueueStreams {
    seed: u64,
    next: u64,
}

impl QueueStreams {
    /// RED's idle-time correction uses the transmission time of a typical (1000-byte) packet.
    const TYPICAL_PACKET_BYTES: u64 = 1000;

    fn duplex(&mut self, l: &FilledLink) -> Duplex {
        Duplex {
            forward: LinkParams {
                rate: l.rate,
                delay: l.delay,
                discipline: self.discipline(&l.queue, l.rate),
                loss: l.loss,
                variation: l.variation.clone(),
            },
            reverse: LinkParams {
                rate: l.reverse_rate,
                delay: l.reverse_delay,
                discipline: self.discipline(&l.reverse_queue, l.reverse_rate),
                loss: l.reverse_loss,
                variation: l.reverse_variation.clone(),
            },
        }
    }

    fn discipline(&mut self, q: &FilledQueue, rate: Rate) -> Discipline {
        match q {
            &FilledQueue::DropTail { limit } => Discipline::DropTail(DropTail { limit }),
            &FilledQueue::Red {
                limit,
                min_th,
                max_th,
                max_p,
                w_q,
                gentle,
            } => Discipline::Red(Red::new(
                RedParams {
                    limit,
                    min_th,
                    max_th,
                    max_p,
                    w_q,
                    gentle,
                },
                rate.transmit_time(Self::TYPICAL_PACKET_BYTES),
                self.stream(),
            )),
            FilledQueue::Codel { limit, params } => Discipline::Aqm(Box::new(Aqm::Codel(
                Codel::new(params.clone(), packets(*limit)),
            ))),
            FilledQueue::FqCodel { limit, params } => {
                // The hash perturbation, as the kernel draws one per qdisc.
                let perturbation = self.stream().next_u64() as u32;
                Discipline::Aqm(Box::new(Aqm::FqCodel(FqCodel::new(
                    params.clone(),
                    packets(*limit),
                    Classifier::Hash { perturbation },
                ))))
            }
            FilledQueue::Pie { limit, params } => Discipline::Aqm(Box::new(Aqm::Pie(Pie::new(
                params.clone(),
                packets(*limit),
                self.stream(),
            )))),
        }
    }

    /// The next queue's random stream.
    fn stream(&mut self) -> Rng {
        self.next += 1;
        Rng::stream(self.seed, streams::QUEUE + self.next)
    }
}

/// An AQM's limit, which the scenario checks is in packets.
fn packets(limit: Limit) -> u32 {
    match limit {
        Limit::Packets(p) => p,
        Limit::Bytes(_) => unreachable!("an AQM's limit is checked to count packets"),
    }
}
