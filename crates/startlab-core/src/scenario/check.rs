//! Checks: the ranges and combinations a filled value must respect, and the size of a run.
//!
//! Each check returns the first problem as a [`ScenarioError`] naming the field; the filling
//! stages call them in the order a document is read, so the first error is always the same.

use super::defaults::DEFAULT_PARETO_SHAPE;
use super::filled::*;
use super::model::*;
use super::{err, ScenarioError};
use crate::measure::recorder::MeasureSpec;
use crate::net::{LinkId, Network};
use crate::time::Duration;
use crate::traffic::SizeDistribution;
use crate::units::Rate;
use std::collections::{BTreeMap, BTreeSet};

/// The most memory the recorded series of a run may be expected to take.
const MAX_SERIES_BYTES: f64 = 4.0 * (1u64 << 30) as f64;
/// The most connections an arrival process may be expected to open.
const MAX_ARRIVALS: f64 = 10_000_000.0;
/// The most packets a UDP entry may be expected to send: the arrivals' budget, in packets.
const MAX_UDP_PACKETS: f64 = MAX_ARRIVALS;

/// Refuses a field that the section's kind does not have.
pub fn not_for(field: &str, present: bool, kind: &str) -> Result<(), ScenarioError> {
    if present {
        Err(err(field, format!("not a field of kind = \"{kind}\"")))
    } else {
        Ok(())
    }
}

/// A filled `[tcp]` (at `path`): sizes, timers, ratios and the options that need each other.
pub fn tcp(t: &FilledTcp, path: &str) -> Result<(), ScenarioError> {
    if t.mss > 1_000_000 {
        return Err(err(format!("{path}.mss"), "must be at most 1000000B"));
    }
    let mss = t.mss.max(1) as u32;
    if t.initial_window.segments(mss) > 1_000_000 {
        return Err(err(
            format!("{path}.initial_window"),
            format!(
                "{} segments: expected at most 1000000",
                t.initial_window.segments(mss)
            ),
        ));
    }
    if t.dupack_threshold == 0 {
        return Err(err(
            format!("{path}.dupack_threshold"),
            "invalid value 0: expected at least 1",
        ));
    }
    if t.min_rto > t.max_rto {
        return Err(err(
            format!("{path}.min_rto"),
            format!("{} is above max_rto ({})", t.min_rto, t.max_rto),
        ));
    }
    if t.initial_rto.is_zero() {
        return Err(err(format!("{path}.initial_rto"), "must be longer than 0s"));
    }
    for (name, r) in [
        ("pacing_ss_ratio", t.pacing_ss_ratio),
        ("pacing_ca_ratio", t.pacing_ca_ratio),
    ] {
        // net.ipv4.tcp_pacing_*_ratio: whole percent, at most 1000 (proc_dointvec_minmax).
        let percent = r * 100.0;
        if !((1.0..=1000.0).contains(&percent) && (percent - percent.round()).abs() < 1e-6) {
            return Err(err(
                format!("{path}.{name}"),
                format!(
                    "invalid ratio {r}: expected a whole number of percent (the sysctl's unit) from 0.01 to 10"
                ),
            ));
        }
    }
    if t.pacing == PacingText::InitialSpreading && !t.handshake {
        return Err(err(
            format!("{path}.pacing"),
            "\"initial-spreading\" spaces the initial window over the RTT measured on the handshake: it needs handshake = true",
        ));
    }
    if matches!(t.recovery, RecoveryText::Sack | RecoveryText::Prr) && !t.sack {
        return Err(err(
            format!("{path}.recovery"),
            "\"sack\" and \"prr\" recovery need sack = true",
        ));
    }
    if !(100..=1000).contains(&t.hz) {
        return Err(err(
            format!("{path}.hz"),
            format!(
                "invalid timer frequency {}: expected 100 to 1000 (CONFIG_HZ)",
                t.hz
            ),
        ));
    }
    Ok(())
}

/// A TCP entry's merged `tcp` (at `path`, `flows[i].tcp`): besides [`tcp`], the stack stays the
/// document's and Linux's recovery options need what they run within.
pub fn flow_tcp(
    merged: &FilledTcp,
    given: Option<&TcpSpec>,
    document: &FilledTcp,
    path: &str,
) -> Result<(), ScenarioError> {
    tcp(merged, path)?;
    if let Some(stack) = given.and_then(|t| t.stack) {
        if stack != document.stack {
            return Err(err(
                format!("{path}.stack"),
                "the stack is chosen for the whole scenario, in [tcp] (its defaults are every flow's)",
            ));
        }
    }
    if merged.dsack && !merged.sack {
        return Err(err(
            format!("{path}.dsack"),
            "a D-SACK block is a SACK option: dsack = true needs sack = true",
        ));
    }
    if merged.metrics && merged.recovery != RecoveryText::Prr {
        return Err(err(
            format!("{path}.metrics"),
            "TCP metrics are Linux's (tcp_metrics.c): they need recovery = \"prr\" (stack = \"linux\")",
        ));
    }
    if merged.tso_defer && merged.recovery != RecoveryText::Prr {
        return Err(err(
            format!("{path}.tso_defer"),
            "GSO deferral is Linux's (tcp_tso_should_defer): it needs recovery = \"prr\" (stack = \"linux\")",
        ));
    }
    if merged.metrics_ssthresh && !merged.metrics {
        return Err(err(
            format!("{path}.metrics_ssthresh"),
            "saving ssthresh is part of the TCP metrics: it needs metrics = true",
        ));
    }
    if merged.frto && merged.recovery != RecoveryText::Prr {
        return Err(err(
            format!("{path}.frto"),
            "F-RTO runs within Linux's recovery: it needs recovery = \"prr\"",
        ));
    }
    if matches!(
        merged.loss_detection,
        LossDetectionText::Rack | LossDetectionText::RackTlp
    ) && merged.recovery != RecoveryText::Prr
    {
        return Err(err(
            format!("{path}.loss_detection"),
            "RACK runs within Linux's recovery: it needs recovery = \"prr\"",
        ));
    }
    Ok(())
}

/// A loss probability (at `path`).
pub fn probability(p: f64, path: &str) -> Result<(), ScenarioError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(err(
            path,
            format!("invalid probability {p}: expected 0 to 1"),
        ));
    }
    Ok(())
}

/// Each field of `written` belongs to its kind (at `path`): RED's thresholds to `red`, CoDel's
/// to `codel` and `fq_codel`, FQ-CoDel's and PIE's to themselves, and what every AQM has to
/// the three AQMs.
pub fn queue_fields(written: &QueueSpec, path: &str) -> Result<(), ScenarioError> {
    use QueueKind::{Codel, FqCodel, Pie, Red};
    const AQM: &[QueueKind] = &[Codel, FqCodel, Pie];
    const CODEL: &[QueueKind] = &[Codel, FqCodel];
    let w = written;
    for (f, set, kinds) in [
        ("min_th", w.min_th.is_some(), &[Red][..]),
        ("max_th", w.max_th.is_some(), &[Red]),
        ("max_p", w.max_p.is_some(), &[Red]),
        ("w_q", w.w_q.is_some(), &[Red]),
        ("gentle", w.gentle.is_some(), &[Red]),
        ("target", w.target.is_some(), AQM),
        ("interval", w.interval.is_some(), CODEL),
        ("ce_threshold", w.ce_threshold.is_some(), CODEL),
        ("ecn", w.ecn.is_some(), AQM),
        ("mtu", w.mtu.is_some(), AQM),
        ("flows", w.flows.is_some(), &[FqCodel]),
        ("quantum", w.quantum.is_some(), &[FqCodel]),
        ("memory_limit", w.memory_limit.is_some(), &[FqCodel]),
        ("drop_batch", w.drop_batch.is_some(), &[FqCodel]),
        ("tupdate", w.tupdate.is_some(), &[Pie]),
        ("alpha", w.alpha.is_some(), &[Pie]),
        ("beta", w.beta.is_some(), &[Pie]),
        ("bytemode", w.bytemode.is_some(), &[Pie]),
        ("dq_rate_estimator", w.dq_rate_estimator.is_some(), &[Pie]),
    ] {
        if !kinds.contains(&w.kind) {
            not_for(&format!("{path}.{f}"), set, w.kind.name())?;
        }
    }
    Ok(())
}

/// A filled queue (at `path`): RED's thresholds are in order and its probabilities in range
/// (the AQMs' ranges are checked as they are filled).
pub fn queue<L>(filled: &FilledQueue<L>, path: &str) -> Result<(), ScenarioError> {
    match *filled {
        FilledQueue::DropTail { .. }
        | FilledQueue::Codel { .. }
        | FilledQueue::FqCodel { .. }
        | FilledQueue::Pie { .. } => {}
        FilledQueue::Red {
            min_th: min,
            max_th: max,
            max_p,
            w_q,
            ..
        } => {
            if !(min >= 0.0 && min < max) {
                return Err(err(format!("{path}.min_th"), format!("invalid thresholds min_th = {min}, max_th = {max}: expected 0 <= min_th < max_th")));
            }
            if !(max_p > 0.0 && max_p <= 1.0) {
                return Err(err(
                    format!("{path}.max_p"),
                    format!("invalid value {max_p}: expected 0 < max_p <= 1"),
                ));
            }
            if !(w_q > 0.0 && w_q <= 1.0) {
                return Err(err(
                    format!("{path}.w_q"),
                    format!("invalid value {w_q}: expected 0 < w_q <= 1"),
                ));
            }
        }
    }
    Ok(())
}

/// A size distribution (at `path`): exactly its own parameters, in range. Returns it with its
/// default shape, and as drawn from.
pub fn size_distribution(
    d: &SizeDistributionSpec,
    path: &str,
) -> Result<FilledSizes, ScenarioError> {
    let at = |f: &str| format!("{path}.{f}");
    let mut written = d.clone();
    let allowed: &[&str] = match d.distribution {
        SizeDistributionKind::Fixed => &["value"],
        SizeDistributionKind::Exponential => &["mean"],
        SizeDistributionKind::Pareto => &["mean", "shape"],
        SizeDistributionKind::LognormalPareto => {
            &["mu", "sigma", "tail_fraction", "tail_shape", "tail_min"]
        }
    };
    let present = [
        ("value", d.value.is_some()),
        ("mean", d.mean.is_some()),
        ("shape", d.shape.is_some()),
        ("mu", d.mu.is_some()),
        ("sigma", d.sigma.is_some()),
        ("tail_fraction", d.tail_fraction.is_some()),
        ("tail_shape", d.tail_shape.is_some()),
        ("tail_min", d.tail_min.is_some()),
    ];
    for (name, set) in present {
        if set && !allowed.contains(&name) {
            return Err(err(
                at(name),
                format!(
                    "not a parameter of this distribution; it takes {}",
                    allowed.join(", ")
                ),
            ));
        }
        if !set && allowed.contains(&name) && name != "shape" {
            return Err(err(at(name), "required"));
        }
    }
    if d.distribution == SizeDistributionKind::Pareto {
        let shape = d.shape.unwrap_or(DEFAULT_PARETO_SHAPE);
        if shape <= 1.0 {
            return Err(err(
                at("shape"),
                format!("invalid value {shape}: expected a Pareto shape above 1"),
            ));
        }
        written.shape = Some(shape);
    }
    if let Some(f) = d.tail_fraction {
        if !(0.0..=1.0).contains(&f) {
            return Err(err(
                at("tail_fraction"),
                format!("invalid probability {f}: expected 0 to 1"),
            ));
        }
    }
    if let Some(s) = d.tail_shape {
        if s <= 0.0 {
            return Err(err(
                at("tail_shape"),
                format!("invalid value {s}: expected a positive Pareto shape"),
            ));
        }
    }
    if let Some(s) = d.sigma {
        if s < 0.0 {
            return Err(err(
                at("sigma"),
                format!("invalid value {s}: expected a non-negative standard deviation"),
            ));
        }
    }
    // Each parameter read here was required above.
    let required = |name: &str, v: Option<f64>| v.ok_or_else(|| err(at(name), "required"));
    let bytes = |name: &str, v: Option<super::units::SizeText>| {
        v.map(|s| s.0).ok_or_else(|| err(at(name), "required"))
    };
    let sizes = match d.distribution {
        SizeDistributionKind::Fixed => SizeDistribution::Fixed {
            bytes: bytes("value", d.value)?,
        },
        SizeDistributionKind::Exponential => SizeDistribution::Exponential {
            mean_bytes: bytes("mean", d.mean)? as f64,
        },
        SizeDistributionKind::Pareto => SizeDistribution::Pareto {
            mean_bytes: bytes("mean", d.mean)? as f64,
            shape: required("shape", written.shape)?,
        },
        SizeDistributionKind::LognormalPareto => SizeDistribution::LognormalPareto {
            mu: required("mu", d.mu)?,
            sigma: required("sigma", d.sigma)?,
            tail_fraction: required("tail_fraction", d.tail_fraction)?,
            tail_shape: required("tail_shape", d.tail_shape)?,
            tail_min_bytes: bytes("tail_min", d.tail_min)? as f64,
        },
    };
    Ok(FilledSizes { written, sizes })
}

/// Refuses, before anything is allocated, a run whose arrivals, UDP packets or recorded series
/// would not fit in memory or in a reasonable time; the message gives the estimate.
pub fn run_size(s: &FilledScenario, net: &Network) -> Result<(), ScenarioError> {
    let m = &s.measure.recorded;
    let duration = s.duration.as_secs_f64();
    let mut connections = 0.0;
    for (i, f) in s.flows.iter().enumerate() {
        match &f.traffic {
            FilledTraffic::Tcp { copies, .. } => connections += copies.count as f64,
            FilledTraffic::Arrivals {
                stop,
                mean_interarrival,
                ..
            } => {
                let span = stop.as_secs_f64() - f.start.as_secs_f64();
                let expected = span / mean_interarrival.as_secs_f64();
                if expected > MAX_ARRIVALS {
                    return Err(err(
                        format!("flows[{i}].mean_interarrival"),
                        format!("{mean_interarrival} over {span} s is about {expected:.3e} connections; at most {MAX_ARRIVALS:.0e} are allowed"),
                    ));
                }
                connections += expected;
            }
            FilledTraffic::Cbr { copies, stop, udp }
            | FilledTraffic::OnOff {
                copies, stop, udp, ..
            } => {
                let packets = udp_packets(f.start, *stop, copies, udp);
                if packets > MAX_UDP_PACKETS {
                    let (rate, bytes) = (udp.rate, udp.packet_size);
                    let span = stop.saturating_sub(f.start);
                    let sources = match copies.count {
                        1 => String::new(),
                        n => format!(" for each of {n} sources"),
                    };
                    return Err(err(
                        format!("flows[{i}].rate"),
                        format!(
                            "{rate} in {bytes}B packets (one every {}) over {span}{sources} is about {packets:.3e} packets; at most {MAX_UDP_PACKETS:.0e} are allowed: a lower rate or larger packets",
                            rate.transmit_time(bytes)
                        ),
                    ));
                }
            }
        }
    }
    let (flow_rows, queue_rows) = match m.interval {
        Some(interval) => {
            let samples = duration / interval.as_secs_f64() + 1.0;
            (samples * connections, samples * m.links.len() as f64)
        }
        None => event_rows(s, m, net),
    };
    let flow_rows = if m.flow_series { flow_rows } else { 0.0 };
    let queue_rows = if m.queue_series { queue_rows } else { 0.0 };
    // Bytes per row: the columns of the flow and queue series.
    let bytes = flow_rows * 72.0 + queue_rows * 44.0;
    if bytes > MAX_SERIES_BYTES {
        let (what, instead) = match m.interval {
            Some(interval) => (
                format!("{interval} over {} would record about", s.duration),
                "sample less often or fewer links",
            ),
            None => (
                format!("\"event\" over {} could record up to about", s.duration),
                "sample at an interval such as \"10ms\", or record fewer links or series",
            ),
        };
        return Err(err(
            "measure.interval",
            format!(
                "{what} {:.3e} rows ({:.1} GiB); at most {:.0} GiB of series are allowed: {instead}",
                flow_rows + queue_rows,
                bytes / (1u64 << 30) as f64,
                MAX_SERIES_BYTES / (1u64 << 30) as f64
            ),
        ));
    }
    Ok(())
}

/// The packets a UDP entry sends, all its sources together: one every transmission time of a
/// packet at its rate (an on-off source only while on), from its start to its stop.
fn udp_packets(start: Duration, stop: Duration, copies: &Copies, udp: &UdpFlow) -> f64 {
    let every = udp.rate.transmit_time(udp.packet_size);
    let span = stop.saturating_sub(start);
    copies.count as f64 * span.as_nanos() as f64 / every.as_nanos() as f64
}

/// Packets of `bytes` a link of `rate` finishes sending in `over` (it starts empty).
fn packets_carried(rate: Rate, over: Duration, bytes: u64) -> f64 {
    rate.bps_f64() * over.as_secs_f64() / (8.0 * bytes as f64)
}

/// The packets one flow entry sends along one path, for the size of event-level series.
struct Stream {
    path: Vec<LinkId>,
    /// Its usual packet: a full segment, an ACK (SACK blocks only add to it), a datagram.
    bytes: u64,
    /// The most its sources can send, where known: datagrams, ACKs (one per data packet or SYN
    /// received). A TCP sender's data is limited only by the links.
    sent: Option<f64>,
    /// Packets smaller than `bytes`, once per connection: the SYN and the short last segment.
    small: f64,
}

/// Upper estimates of the (flow, queue) rows of event-level series: a flow row per ACK reaching
/// a sender, a queue row per packet offered to a sampled link. No link carries more packets than
/// its rate over the run divided by their size, and each ACK answers a data packet.
fn event_rows(s: &FilledScenario, m: &MeasureSpec, net: &Network) -> (f64, f64) {
    let rate = |l: LinkId| net.links[l as usize].params.rate;
    // Packets of a size the link can carry over the run.
    let carried = |(l, bytes): (LinkId, u64)| packets_carried(rate(l), s.duration, bytes);
    let mut streams = Vec::new();
    // Per TCP entry, its data and ACK streams (indices into `streams`) and its connections.
    let mut tcp = Vec::new();
    for f in &s.flows {
        let (src, dst) = (f.src.node, f.dst.node);
        // The filled endpoints have routes both ways.
        let path = |a, b| net.path(a, b).unwrap_or_default();
        let (connections, t) = match &f.traffic {
            FilledTraffic::Tcp { copies, tcp, .. } => (copies.count as f64, tcp),
            FilledTraffic::Arrivals {
                stop,
                mean_interarrival,
                tcp,
                ..
            } => {
                let span = stop.saturating_sub(f.start);
                (span.as_secs_f64() / mean_interarrival.as_secs_f64(), tcp)
            }
            FilledTraffic::Cbr { copies, stop, udp }
            | FilledTraffic::OnOff {
                copies, stop, udp, ..
            } => {
                streams.push(Stream {
                    path: path(src, dst),
                    bytes: udp.packet_size,
                    // A first packet at the start of each source.
                    sent: Some(udp_packets(f.start, *stop, copies, udp) + copies.count as f64),
                    small: 0.0,
                });
                continue;
            }
        };
        let segment = t.tcp.segment_bytes();
        let data = Stream {
            path: path(src, dst),
            bytes: segment,
            sent: None,
            small: 2.0 * connections,
        };
        // The receiver answers each data packet or SYN that reaches it at most once.
        let received = data
            .path
            .iter()
            .map(|&l| carried((l, segment)))
            .fold(f64::INFINITY, f64::min)
            + data.small;
        tcp.push((streams.len(), streams.len() + 1, connections));
        streams.push(data);
        streams.push(Stream {
            path: path(dst, src),
            bytes: t.tcp.ack_size,
            sent: Some(received),
            small: 0.0,
        });
    }

    // Flow rows: each entry's ACKs are bounded by the link of its paths that carries the fewest
    // of its packets; entries bounded by the same link share it.
    let mut tightest = BTreeMap::new();
    let mut flow_rows = 0.0;
    for &(data, ack, connections) in &tcp {
        let fewest = [&streams[data], &streams[ack]]
            .iter()
            .flat_map(|st| st.path.iter().map(move |&l| (l, st.bytes)))
            .min_by(|&a, &b| carried(a).total_cmp(&carried(b)));
        if let Some((link, bytes)) = fewest {
            let smallest = tightest.entry(link).or_insert(bytes);
            *smallest = bytes.min(*smallest);
        }
        // The SYN-ACK, and the ACK of the short last segment.
        flow_rows += 2.0 * connections;
    }
    flow_rows += tightest.into_iter().map(carried).sum::<f64>();

    // Queue rows: the packets that reach a sampled link's source on their way to it, no more
    // than each link into that node carries of them, and those sent from that node (a TCP
    // sender offers its own link about what the link carries: what overflows its queue is lost
    // and the window shrinks).
    let sampled: BTreeSet<LinkId> = m.links.iter().copied().collect();
    let mut queue_rows = 0.0;
    // Per (sampled link, link into its source): the smallest packet of the streams that take
    // both, and what these send in all (if known).
    let mut incoming = BTreeMap::new();
    for st in &streams {
        for (k, &link) in st.path.iter().enumerate() {
            if !sampled.contains(&link) {
                continue;
            }
            queue_rows += st.small;
            if k == 0 {
                queue_rows += st.sent.unwrap_or_else(|| carried((link, st.bytes)));
            } else {
                let (bytes, sent) = incoming
                    .entry((link, st.path[k - 1]))
                    .or_insert((st.bytes, Some(0.0)));
                *bytes = st.bytes.min(*bytes);
                *sent = (*sent).zip(st.sent).map(|(a, b)| a + b);
            }
        }
    }
    for ((_, into), (bytes, sent)) in incoming {
        let most = carried((into, bytes));
        queue_rows += sent.map_or(most, |sent: f64| sent.min(most));
    }
    (flow_rows, queue_rows)
}
