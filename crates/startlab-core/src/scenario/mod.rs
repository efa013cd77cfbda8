//! Scenarios, in four steps:
//!
//! 1. **parsing** ([`from_toml`], [`from_json`]) into the text model ([`model`]), where every
//!    field a user may leave out is optional;
//! 2. **defaults and checks** (inside [`resolve`]): every default filled in, every `BDP`
//!    converted to packets, every value checked;
//! 3. **network building**: the topology built once, with the run's seed;
//! 4. **resolution**: a [`ResolvedScenario`] with nothing optional — hosts and links, each flow
//!    with its endpoints, TCP settings and controller factory, what to measure.
//!
//! Every world runs a [`ResolvedScenario`]. Errors name the field as a dotted path
//! (`flows[0].cc`), the value, and what is allowed.

pub mod guards;
pub mod model;
pub mod resolved;
pub mod units;

pub use model::*;
pub use resolved::{
    Bdp, Connection, Description, FlowDescription, FlowPlan, LinkDescription, ResolvedScenario,
    Traffic, UdpPlan,
};

use crate::cc::registry::{self, ControllerFactory};
use crate::measure::recorder::MeasureSpec;
use crate::measure::Report;
use crate::net::topology::{self, DumbbellSpec, Duplex, ParkingLotSpec};
use crate::net::{
    Discipline, DropTail, Limit, LinkId, LinkParams, Network, NodeKind, Red, RedParams,
};
use crate::rng::{streams, Rng};
use crate::simulation::Simulation;
use crate::tcp::linux_acks::LinuxAckConfig;
use crate::tcp::{AckPolicy, FlowSize, LossDetection, Pacing, Recovery, RtoAlgorithm, TcpConfig};
use crate::time::{Duration, Time};
use crate::traffic::{OnOffDistribution, SizeDistribution, UdpPattern};
use crate::units::Rate;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use units::{DurationText, Interval, Limitable, QueueLimit, RateText, SizeText, Window};

/// A problem with a scenario: where (a dotted path, empty for the whole document) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

fn err(path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        path: path.into(),
        message: message.into(),
    }
}

fn from_path_error<E: fmt::Display>(e: serde_path_to_error::Error<E>) -> ScenarioError {
    let path = e.path().to_string();
    let path = if path == "." { String::new() } else { path };
    let message = e.inner().to_string();
    // toml renders the location over several lines: keep the position and the reason.
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let message = match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if lines.len() > 1 && first.starts_with("TOML parse error") => {
            format!("{last} ({first})")
        }
        _ => message.trim().to_string(),
    };
    err(path, message)
}

/// Parses a scenario from its JSON form (what the Python package sends).
pub fn from_json(text: &str) -> Result<Scenario, ScenarioError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de)
        .map_err(from_path_error)
        .map_err(|mut e| {
            // Positions in the JSON text mean nothing to the author of the TOML file it came from.
            if let Some(i) = e.message.rfind(" at line ") {
                if e.message[i..].contains(" column ") {
                    e.message.truncate(i);
                }
            }
            e
        })
}

/// Parses a scenario from TOML.
pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
    // TOML has nan and inf; no field of a scenario means anything by them, and an algorithm's
    // parameters would otherwise read them as "not given" (JSON has neither).
    if let Ok(value) = text.parse::<toml::Table>() {
        if let Some((path, x)) = non_finite(&toml::Value::Table(value), String::new()) {
            return Err(err(
                path,
                format!("invalid value {x}: expected a finite number"),
            ));
        }
    }
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(from_path_error)
}

/// The dotted path of the first NaN or infinity in a TOML value.
fn non_finite(v: &toml::Value, path: String) -> Option<(String, f64)> {
    match v {
        toml::Value::Float(x) if !x.is_finite() => Some((path, *x)),
        toml::Value::Table(t) => t.iter().find_map(|(k, v)| {
            non_finite(
                v,
                if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                },
            )
        }),
        toml::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| non_finite(v, format!("{path}[{i}]"))),
        _ => None,
    }
}

/// Parses, resolves and runs a scenario given as JSON. Returns the filled-in document and the
/// report.
pub fn run_json(text: &str) -> Result<(Scenario, Report), ScenarioError> {
    let resolved = resolve(&from_json(text)?)?;
    let document = resolved.document.clone();
    Ok((document, build(resolved).run()))
}

// ----- defaults ----------------------------------------------------------------------------------

const DEFAULT_NAME: &str = "scenario";
/// The most nodes a topology may have: a 10000-pair dumbbell's (the routes are nodes² entries).
const MAX_NODES: u64 = 20_002;
/// The most memory the recorded series of a run may be expected to take.
const MAX_SERIES_BYTES: f64 = 4.0 * (1u64 << 30) as f64;
/// The most connections an arrival process may be expected to open.
const MAX_ARRIVALS: f64 = 10_000_000.0;
/// The most packets a UDP entry may be expected to send: the arrivals' budget, in packets.
const MAX_UDP_PACKETS: f64 = MAX_ARRIVALS;
const DEFAULT_SEED: u64 = 1;

fn default_tcp() -> TcpSpec {
    let c = TcpConfig::default();
    TcpSpec {
        stack: Some(StackText::Ns2),
        loss_detection: Some(LossDetectionText::Dupthresh),
        ack_policy: Some(AckPolicyText::Rfc5681),
        rto: Some(RtoText::Rfc6298),
        hz: Some(250),
        mss: Some(SizeText(c.mss_bytes as u64)),
        header: Some(SizeText(c.header_bytes as u64)),
        ack_size: Some(SizeText(c.ack_bytes as u64)),
        initial_window: Some(Window::Segments(c.initial_window)),
        initial_ssthresh: Some(Limitable::Unlimited),
        receive_window: Some(Limitable::Unlimited),
        delayed_ack: Some(c.delayed_ack),
        delayed_ack_timeout: Some(DurationText(c.delayed_ack_timeout)),
        sack: Some(c.sack),
        recovery: Some(RecoveryText::Auto),
        dupack_threshold: Some(c.dupack_threshold),
        min_rto: Some(DurationText(c.min_rto)),
        max_rto: Some(DurationText(c.max_rto)),
        initial_rto: Some(DurationText(c.initial_rto)),
        clock_granularity: Some(DurationText(c.clock_granularity)),
        handshake: Some(c.handshake),
        undo: Some(c.undo),
        dsack: Some(c.dsack),
        frto: Some(c.frto),
        pacing: Some(PacingText::None),
        pacing_ss_ratio: Some(2.0),
        pacing_ca_ratio: Some(1.2),
    }
}

/// One jiffy of a kernel built with `CONFIG_HZ = hz`, the clock of its RTO (`tcp_set_rto`).
fn jiffy(hz: u32) -> DurationText {
    DurationText(crate::time::Duration::from_nanos(
        1_000_000_000 / hz.max(1) as u64,
    ))
}

/// The defaults of `stack = "linux"`: Linux 6.18 as Debian builds it (HZ = 250, or the
/// document's `hz`) on a 1500-byte MTU with timestamps (1448 bytes of payload, 52 of headers;
/// ACKs 52 bytes).
fn linux_tcp(hz: Option<u32>) -> TcpSpec {
    let hz = hz.unwrap_or(250);
    use crate::time::Duration;
    TcpSpec {
        stack: Some(StackText::Linux),
        mss: Some(SizeText(1448)),
        header: Some(SizeText(52)),
        ack_size: Some(SizeText(52)),
        // TCP_INIT_CWND; ssthresh starts at TCP_INFINITE_SSTHRESH.
        initial_window: Some(Window::Segments(10)),
        initial_ssthresh: Some(Limitable::Unlimited),
        receive_window: Some(Limitable::Unlimited),
        delayed_ack: Some(true),
        delayed_ack_timeout: Some(DurationText(Duration::from_millis(40))),
        sack: Some(true),
        recovery: Some(RecoveryText::Prr),
        // net.ipv4.tcp_reordering
        dupack_threshold: Some(3),
        // TCP_RTO_MIN, TCP_RTO_MAX, TCP_TIMEOUT_INIT; in jiffies (4 ms at HZ 250).
        min_rto: Some(DurationText(Duration::from_millis(200))),
        max_rto: Some(DurationText(Duration::from_secs(120))),
        initial_rto: Some(DurationText(Duration::from_secs(1))),
        clock_granularity: Some(jiffy(hz)),
        handshake: Some(true),
        undo: Some(true),
        // net.ipv4.tcp_dsack = 1, net.ipv4.tcp_frto = 2
        dsack: Some(true),
        frto: Some(true),
        // Unpaced unless the controller asks (a host without fq).
        pacing: Some(PacingText::None),
        // net.ipv4.tcp_pacing_ss_ratio / tcp_pacing_ca_ratio
        pacing_ss_ratio: Some(2.0),
        pacing_ca_ratio: Some(1.2),
        // net.ipv4.tcp_recovery = RACK, tcp_early_retrans = 3 (TLP)
        loss_detection: Some(LossDetectionText::RackTlp),
        ack_policy: Some(AckPolicyText::Linux),
        rto: Some(RtoText::Linux),
        hz: Some(hz),
    }
}

/// Under `stack = "linux"`, the controllers Linux has count as Linux counts, unless the flow
/// says otherwise: `reno`/`newreno` as `tcp_reno_cong_avoid`, CUBIC and HyStart as
/// `tcp_cubic.c` (CUBIC in jiffies of `tcp.hz`).
fn linux_controller_defaults(
    cc: &str,
    cc_params: &mut crate::cc::params::Params,
    startup: &str,
    startup_params: &mut crate::cc::params::Params,
    hz: u32,
) {
    let linux = || serde_json::Value::String("linux".into());
    if matches!(cc, "reno" | "newreno") {
        cc_params.entry("counting").or_insert_with(linux);
    }
    // tcp_cubic.c counts time in the kernel's jiffies (CUBIC's other defaults already are
    // Linux's).
    if cc == "cubic" {
        cc_params.entry("hz").or_insert_with(|| hz.into());
    }
    if startup == "hystart" {
        startup_params.entry("variant").or_insert_with(linux);
    }
}

/// The defaults of a document's `[tcp]`: its stack's.
fn stack_defaults(t: &TcpSpec) -> TcpSpec {
    match t.stack {
        Some(StackText::Linux) => linux_tcp(t.hz),
        _ => default_tcp(),
    }
}

/// A flow's `tcp` over the document's resolved one. Under the Linux stack, a flow that sets
/// its own `hz` without a `clock_granularity` gets that kernel's jiffy as its clock too.
fn flow_tcp(flow: Option<&TcpSpec>, doc: &TcpSpec) -> TcpSpec {
    let flow = flow.cloned().unwrap_or_default();
    let mut merged = merge_tcp(&flow, doc);
    if let (Some(StackText::Linux), Some(hz), None) = (doc.stack, flow.hz, flow.clock_granularity) {
        merged.clock_granularity = Some(jiffy(hz));
    }
    merged
}

/// `over`'s fields where set, else `base`'s.
fn merge_tcp(over: &TcpSpec, base: &TcpSpec) -> TcpSpec {
    macro_rules! pick {
        ($($f:ident),*) => { TcpSpec { $($f: over.$f.clone().or(base.$f.clone())),* } };
    }
    pick!(
        stack,
        loss_detection,
        ack_policy,
        rto,
        hz,
        mss,
        header,
        ack_size,
        initial_window,
        initial_ssthresh,
        receive_window,
        delayed_ack,
        delayed_ack_timeout,
        sack,
        recovery,
        dupack_threshold,
        min_rto,
        max_rto,
        initial_rto,
        clock_granularity,
        handshake,
        undo,
        dsack,
        frto,
        pacing,
        pacing_ss_ratio,
        pacing_ca_ratio
    )
}

fn merge_link(over: &LinkSpec, base: &LinkSpec) -> LinkSpec {
    macro_rules! pick {
        ($($f:ident),*) => { LinkSpec { $($f: over.$f.clone().or(base.$f.clone())),* } };
    }
    pick!(
        rate,
        delay,
        reverse_rate,
        reverse_delay,
        queue,
        reverse_queue,
        loss,
        reverse_loss
    )
}

fn default_access() -> LinkSpec {
    LinkSpec {
        rate: Some(RateText(Rate::from_bps(1_000_000_000))),
        delay: Some(DurationText(Duration::from_millis(1))),
        queue: Some(droptail(QueueLimit::Packets(1000))),
        ..LinkSpec::default()
    }
}

fn droptail(limit: QueueLimit) -> QueueSpec {
    QueueSpec {
        kind: QueueKind::Droptail,
        limit: Some(limit),
        min_th: None,
        max_th: None,
        max_p: None,
        w_q: None,
        gentle: None,
    }
}

// ----- resolution --------------------------------------------------------------------------------

/// Checks `s`, fills in every default, builds its network and returns it ready to run.
pub fn resolve(s: &Scenario) -> Result<ResolvedScenario, ScenarioError> {
    let mut r = s.clone();
    let name = s.name.clone().unwrap_or_else(|| DEFAULT_NAME.into());
    let seed = s.seed.unwrap_or(DEFAULT_SEED);
    r.name = Some(name.clone());
    r.seed = Some(seed);
    let duration = s.duration.0;
    if duration.is_zero() {
        return Err(err("duration", "must be longer than 0s"));
    }
    r.tcp = merge_tcp(&s.tcp, &stack_defaults(&s.tcp));
    check_tcp(&r.tcp, "tcp")?;
    let (topology, bdp) = resolve_topology(&s.topology, &r.tcp)?;
    r.topology = topology;
    // Built once, with the run's seed: the flows are checked against it and the run uses it.
    let network = build_network(&r.topology, seed)?;
    if s.flows.is_empty() {
        return Err(err("flows", "at least one flow is required"));
    }
    let mut controllers = Vec::with_capacity(s.flows.len());
    let mut filled = Vec::with_capacity(s.flows.len());
    for (i, f) in s.flows.iter().enumerate() {
        let (flow, controller) = resolve_flow(f, i, &r, &network)?;
        filled.push(flow);
        controllers.push(controller);
    }
    r.flows = filled;
    r.measure = resolve_measure(&s.measure, &r, &network)?;
    let measure = measure_spec(&r.measure, &network);
    check_run_size(&r, &measure, &network)?;
    let flows = r
        .flows
        .iter()
        .zip(controllers)
        .enumerate()
        .map(|(i, (f, controller))| plan_flow(i, f, controller, &r.tcp, &network))
        .collect();
    let mut resolved = ResolvedScenario {
        document: r,
        name,
        seed,
        duration,
        network,
        bdp,
        flows,
        measure,
        warnings: Vec::new(),
    };
    resolved.warnings = guards::warnings(&resolved);
    Ok(resolved)
}

fn check_tcp(t: &TcpSpec, path: &str) -> Result<(), ScenarioError> {
    if t.mss.is_some_and(|m| m.0 > 1_000_000) {
        return Err(err(format!("{path}.mss"), "must be at most 1000000B"));
    }
    if let Some(w) = t.initial_window {
        let mss = t.mss.map_or(1000, |m| m.0.max(1) as u32);
        if w.segments(mss) > 1_000_000 {
            return Err(err(
                format!("{path}.initial_window"),
                format!("{} segments: expected at most 1000000", w.segments(mss)),
            ));
        }
    }
    if t.dupack_threshold == Some(0) {
        return Err(err(
            format!("{path}.dupack_threshold"),
            "invalid value 0: expected at least 1",
        ));
    }
    if let (Some(min), Some(max)) = (t.min_rto, t.max_rto) {
        if min.0 > max.0 {
            return Err(err(
                format!("{path}.min_rto"),
                format!("{} is above max_rto ({})", min.0, max.0),
            ));
        }
    }
    if t.initial_rto.is_some_and(|d| d.0.is_zero()) {
        return Err(err(format!("{path}.initial_rto"), "must be longer than 0s"));
    }
    for (name, r) in [
        ("pacing_ss_ratio", t.pacing_ss_ratio),
        ("pacing_ca_ratio", t.pacing_ca_ratio),
    ] {
        if let Some(r) = r {
            if !(r > 0.0 && r <= 100.0) {
                return Err(err(
                    format!("{path}.{name}"),
                    format!("invalid ratio {r}: expected above 0 and at most 100"),
                ));
            }
        }
    }
    if t.pacing == Some(PacingText::InitialSpreading) && t.handshake == Some(false) {
        return Err(err(
            format!("{path}.pacing"),
            "\"initial-spreading\" spaces the initial window over the RTT measured on the handshake: it needs handshake = true",
        ));
    }
    if matches!(t.recovery, Some(RecoveryText::Sack | RecoveryText::Prr)) && t.sack == Some(false) {
        return Err(err(
            format!("{path}.recovery"),
            "\"sack\" and \"prr\" recovery need sack = true",
        ));
    }
    if let Some(hz) = t.hz {
        if !(100..=1000).contains(&hz) {
            return Err(err(
                format!("{path}.hz"),
                format!("invalid timer frequency {hz}: expected 100 to 1000 (CONFIG_HZ)"),
            ));
        }
    }
    Ok(())
}

fn not_for(field: &str, present: bool, kind: &str) -> Result<(), ScenarioError> {
    if present {
        Err(err(field, format!("not a field of kind = \"{kind}\"")))
    } else {
        Ok(())
    }
}

fn resolve_topology(t: &Topology, tcp: &TcpSpec) -> Result<(Topology, Bdp), ScenarioError> {
    let mut r = t.clone();
    let access = merge_link(
        t.access.as_ref().unwrap_or(&LinkSpec::default()),
        &default_access(),
    );
    check_link(&access, "topology.access")?;
    let bottleneck_defaults = LinkSpec {
        queue: Some(droptail(QueueLimit::Bdp(1.0))),
        ..LinkSpec::default()
    };
    // Per-pair and per-hop entries are merged onto these as written, before each direction is
    // filled in: a pair that sets only `delay` gets that delay in both directions.
    let bottleneck_spec = merge_link(&t.bottleneck, &bottleneck_defaults);
    let bottleneck = fill_directions(bottleneck_spec.clone());
    if bottleneck.rate.is_none() {
        return Err(err(
            "topology.bottleneck.rate",
            "required (e.g. rate = \"40Mbps\")",
        ));
    }
    if bottleneck.delay.is_none() {
        return Err(err(
            "topology.bottleneck.delay",
            "required (e.g. delay = \"40ms\")",
        ));
    }
    check_link(&bottleneck, "topology.bottleneck")?;
    let access_spec = access;
    let access = fill_directions(access_spec.clone());
    match t.kind {
        TopologyKind::Dumbbell | TopologyKind::Parallel => {
            let kind = if t.kind == TopologyKind::Dumbbell {
                "dumbbell"
            } else {
                "parallel"
            };
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
            let mut list = Vec::new();
            for i in 0..pairs as usize {
                let p = given.get(i).cloned().unwrap_or_default();
                let s = fill_directions(merge_link(
                    &p.sender_access.unwrap_or_default(),
                    &access_spec,
                ));
                let rcv = fill_directions(merge_link(
                    &p.receiver_access.unwrap_or_default(),
                    &access_spec,
                ));
                check_link(&s, &format!("topology.pair[{i}].sender_access"))?;
                check_link(&rcv, &format!("topology.pair[{i}].receiver_access"))?;
                list.push(PairSpec {
                    sender_access: Some(s),
                    receiver_access: Some(rcv),
                });
            }
            r.pairs = Some(pairs);
            r.pair = Some(list);
        }
        TopologyKind::ParkingLot => {
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
            let mut list = Vec::new();
            for i in 0..hops as usize {
                let h = fill_directions(merge_link(
                    &given.get(i).cloned().unwrap_or_default(),
                    &bottleneck_spec,
                ));
                check_link(&h, &format!("topology.hop[{i}]"))?;
                list.push(h);
            }
            r.hops = Some(hops);
            r.hop = Some(list);
            let (long_pairs, cross_pairs) = (t.long_pairs.unwrap_or(1), t.cross_pairs.unwrap_or(1));
            for (field, n) in [("long_pairs", long_pairs), ("cross_pairs", cross_pairs)] {
                if n > 10_000 {
                    return Err(err(
                        format!("topology.{field}"),
                        format!("invalid value {n}: expected 0 to 10000"),
                    ));
                }
            }
            // Hosts: 2 per long pair, 2 per cross pair and hop; routers: hops + 1. The routes
            // are a table of nodes² entries: keep it as large as a 10000-pair dumbbell's at most.
            let (long_hosts, cross_hosts) =
                (2 * long_pairs as u64, 2 * cross_pairs as u64 * hops as u64);
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
            r.long_pairs = Some(long_pairs);
            r.cross_pairs = Some(cross_pairs);
        }
    }
    r.bottleneck = bottleneck;
    r.access = Some(access);

    // "BDP" = bottleneck rate x reference RTT, in data packets on the wire.
    let rtt = match t.bdp_rtt {
        Some(d) => d.0,
        None => first_path_rtt(&r),
    };
    r.bdp_rtt = Some(DurationText(rtt));
    let wire = tcp.mss.unwrap().0 + tcp.header.unwrap().0;
    let bdp_packets = r.bottleneck.rate.unwrap().0.bytes_in(rtt) as f64 / wire as f64;
    let resolve_limit = |q: &mut Option<QueueSpec>| {
        if let Some(QueueSpec {
            limit: Some(QueueLimit::Bdp(x)),
            ..
        }) = q
        {
            let packets = (*x * bdp_packets).round().max(1.0) as u32;
            q.as_mut().unwrap().limit = Some(QueueLimit::Packets(packets));
        }
    };
    let mut links: Vec<&mut LinkSpec> = vec![&mut r.bottleneck];
    if let Some(a) = r.access.as_mut() {
        links.push(a);
    }
    for p in r.pair.iter_mut().flatten() {
        links.extend(p.sender_access.as_mut());
        links.extend(p.receiver_access.as_mut());
    }
    links.extend(r.hop.iter_mut().flatten());
    for l in links {
        resolve_limit(&mut l.queue);
        resolve_limit(&mut l.reverse_queue);
    }
    Ok((
        r,
        Bdp {
            rtt,
            packets: bdp_packets,
        },
    ))
}

/// Reverse direction defaults to the forward one; RED parameters get their defaults.
fn fill_directions(mut l: LinkSpec) -> LinkSpec {
    l.reverse_rate = l.reverse_rate.or(l.rate);
    l.reverse_delay = l.reverse_delay.or(l.delay);
    l.queue = l.queue.map(fill_queue);
    l.reverse_queue = l.reverse_queue.map(fill_queue).or(l.queue.clone());
    l.loss = Some(l.loss.unwrap_or(0.0));
    l.reverse_loss = Some(l.reverse_loss.unwrap_or(0.0));
    l
}

fn fill_queue(mut q: QueueSpec) -> QueueSpec {
    match q.kind {
        QueueKind::Droptail => q.limit = q.limit.or(Some(QueueLimit::Bdp(1.0))),
        QueueKind::Red => {
            q.limit = q.limit.or(Some(QueueLimit::Bdp(1.0)));
            q.min_th = q.min_th.or(Some(5.0));
            q.max_th = q.max_th.or(Some(15.0));
            q.max_p = q.max_p.or(Some(0.1));
            q.w_q = q.w_q.or(Some(0.002));
            q.gentle = q.gentle.or(Some(true));
        }
    }
    q
}

fn check_link(l: &LinkSpec, path: &str) -> Result<(), ScenarioError> {
    for (name, p) in [("loss", l.loss), ("reverse_loss", l.reverse_loss)] {
        if let Some(p) = p {
            if !(0.0..=1.0).contains(&p) {
                return Err(err(
                    format!("{path}.{name}"),
                    format!("invalid probability {p}: expected 0 to 1"),
                ));
            }
        }
    }
    for (name, q) in [("queue", &l.queue), ("reverse_queue", &l.reverse_queue)] {
        let Some(q) = q else { continue };
        let p = format!("{path}.{name}");
        match q.kind {
            QueueKind::Droptail => {
                for (f, set) in [
                    ("min_th", q.min_th.is_some()),
                    ("max_th", q.max_th.is_some()),
                    ("max_p", q.max_p.is_some()),
                    ("w_q", q.w_q.is_some()),
                    ("gentle", q.gentle.is_some()),
                ] {
                    not_for(&format!("{p}.{f}"), set, "droptail")?;
                }
            }
            QueueKind::Red => {
                let q = fill_queue(q.clone());
                let (min, max, max_p, w_q) = (
                    q.min_th.unwrap(),
                    q.max_th.unwrap(),
                    q.max_p.unwrap(),
                    q.w_q.unwrap(),
                );
                if !(min >= 0.0 && min < max) {
                    return Err(err(format!("{p}.min_th"), format!("invalid thresholds min_th = {min}, max_th = {max}: expected 0 <= min_th < max_th")));
                }
                if !(max_p > 0.0 && max_p <= 1.0) {
                    return Err(err(
                        format!("{p}.max_p"),
                        format!("invalid value {max_p}: expected 0 < max_p <= 1"),
                    ));
                }
                if !(w_q > 0.0 && w_q <= 1.0) {
                    return Err(err(
                        format!("{p}.w_q"),
                        format!("invalid value {w_q}: expected 0 < w_q <= 1"),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn round_trip(l: &LinkSpec) -> Duration {
    l.delay.unwrap().0 + l.reverse_delay.unwrap().0
}

/// Round-trip propagation delay of s0 -> r0 (dumbbell) or ls0 -> lr0 (parking lot).
fn first_path_rtt(t: &Topology) -> Duration {
    match t.kind {
        TopologyKind::Dumbbell | TopologyKind::Parallel => {
            let p = &t.pair.as_ref().unwrap()[0];
            round_trip(p.sender_access.as_ref().unwrap())
                + round_trip(&t.bottleneck)
                + round_trip(p.receiver_access.as_ref().unwrap())
        }
        TopologyKind::ParkingLot => {
            let a = t.access.as_ref().unwrap();
            t.hop
                .as_ref()
                .unwrap()
                .iter()
                .fold(round_trip(a) * 2, |acc, h| acc + round_trip(h))
        }
    }
}

/// The label of copy `k` of an entry with `count` copies: `label#k`, or the label alone.
fn copy_label(label: &str, k: u32, count: u32) -> String {
    if count > 1 {
        format!("{label}#{k}")
    } else {
        label.to_string()
    }
}

/// Checks flow entry `i` against the network and fills in its defaults; a TCP entry gets the
/// factory of its controllers.
fn resolve_flow(
    f: &FlowSpec,
    i: usize,
    s: &Scenario,
    net: &Network,
) -> Result<(FlowSpec, Option<ControllerFactory>), ScenarioError> {
    let at = |field: &str| format!("flows[{i}].{field}");
    let kind = f.kind.name();
    let mut r = f.clone();
    let duration = s.duration.0;

    // Endpoints.
    let (src, dst) = match (f.pair, &f.src, &f.dst) {
        (Some(p), None, None) => {
            if s.topology.kind == TopologyKind::ParkingLot {
                return Err(err(
                    at("pair"),
                    "not on a parking lot; name the hosts with src and dst",
                ));
            }
            let pairs = s.topology.pairs.unwrap();
            if p >= pairs {
                return Err(err(
                    at("pair"),
                    format!(
                        "invalid pair {p}: the dumbbell has pairs 0 to {}",
                        pairs - 1
                    ),
                ));
            }
            (format!("s{p}"), format!("r{p}"))
        }
        (Some(_), _, _) => {
            return Err(err(at("pair"), "give either pair or src and dst, not both"))
        }
        (None, Some(a), Some(b)) => (a.clone(), b.clone()),
        (None, None, None) if s.topology.kind != TopologyKind::ParkingLot => {
            ("s0".into(), "r0".into())
        }
        (None, None, _) => return Err(err(at("src"), "required (the sending host)")),
        (None, _, None) => return Err(err(at("dst"), "required (the receiving host)")),
    };
    for (field, name) in [("src", &src), ("dst", &dst)] {
        match net.find_node(name) {
            Some(n) if net.nodes[n as usize].kind == NodeKind::Host => {}
            _ => {
                let hosts: Vec<&str> = net
                    .nodes
                    .iter()
                    .filter(|n| n.kind == NodeKind::Host)
                    .map(|n| n.name.as_str())
                    .collect();
                let shown = if hosts.len() > 8 {
                    format!("{}, …", hosts[..8].join(", "))
                } else {
                    hosts.join(", ")
                };
                return Err(err(
                    at(field),
                    format!("unknown host \"{name}\"; hosts are {shown}"),
                ));
            }
        }
    }
    if src == dst {
        return Err(err(at("dst"), format!("\"{dst}\" is also the source")));
    }
    let (a, b) = (net.find_node(&src).unwrap(), net.find_node(&dst).unwrap());
    if net.route(a, b) == crate::net::NO_ROUTE || net.route(b, a) == crate::net::NO_ROUTE {
        return Err(err(
            at("dst"),
            format!("no path from \"{src}\" to \"{dst}\" (on kind = \"parallel\", each pair has its own path: s<k> reaches only r<k>)"),
        ));
    }
    r.pair = None;
    r.src = Some(src);
    r.dst = Some(dst);

    let start = f.start.map_or(Duration::ZERO, |d| d.0);
    if start >= duration {
        return Err(err(
            at("start"),
            format!("{start} is not before the end of the run ({duration})"),
        ));
    }
    r.start = Some(DurationText(start));

    let is_tcp = matches!(f.kind, FlowKind::Tcp | FlowKind::TcpArrivals);
    let is_udp = matches!(f.kind, FlowKind::Cbr | FlowKind::OnOff);
    for (field, set) in [
        ("cc", f.cc.is_some()),
        ("cc_params", f.cc_params.is_some()),
        ("startup", f.startup.is_some()),
        ("startup_params", f.startup_params.is_some()),
        ("size", f.size.is_some()),
        ("tcp", f.tcp.is_some()),
    ] {
        not_for(&at(field), set && !is_tcp, kind)?;
    }
    for (field, set) in [
        ("rate", f.rate.is_some()),
        ("packet_size", f.packet_size.is_some()),
    ] {
        not_for(&at(field), set && !is_udp, kind)?;
    }
    for (field, set) in [
        ("on_time", f.on_time.is_some()),
        ("off_time", f.off_time.is_some()),
        ("distribution", f.distribution.is_some()),
        ("shape", f.shape.is_some()),
    ] {
        not_for(&at(field), set && f.kind != FlowKind::OnOff, kind)?;
    }
    not_for(
        &at("mean_interarrival"),
        f.mean_interarrival.is_some() && f.kind != FlowKind::TcpArrivals,
        kind,
    )?;
    not_for(
        &at("count"),
        f.count.is_some() && f.kind == FlowKind::TcpArrivals,
        kind,
    )?;
    not_for(
        &at("stagger"),
        f.stagger.is_some() && f.kind == FlowKind::TcpArrivals,
        kind,
    )?;

    if f.kind != FlowKind::TcpArrivals {
        let count = f.count.unwrap_or(1);
        if count == 0 || count > 100_000 {
            return Err(err(
                at("count"),
                format!("invalid value {count}: expected 1 to 100000"),
            ));
        }
        r.count = Some(count);
        r.stagger = Some(f.stagger.unwrap_or(DurationText(Duration::ZERO)));
    }
    // A TCP connection without `stop` runs until it completes or the run ends; every other
    // source stops at the end of the run unless told otherwise.
    let stop = f
        .stop
        .map(|d| d.0)
        .or((f.kind != FlowKind::Tcp).then_some(duration));
    if let Some(stop) = stop {
        if stop <= start {
            return Err(err(
                at("stop"),
                format!("{stop} is not after the start ({start})"),
            ));
        }
        r.stop = Some(DurationText(stop));
    }

    let mut controller = None;
    if is_tcp {
        let cc = f.cc.clone().unwrap_or_else(|| "newreno".into());
        let startup = f
            .startup
            .clone()
            .unwrap_or_else(|| registry::DEFAULT_STARTUP.into());
        let mut cc_params = f.cc_params.clone().unwrap_or_default();
        let mut startup_params = f.startup_params.clone().unwrap_or_default();
        let merged = flow_tcp(f.tcp.as_ref(), &s.tcp);
        if let (Some(StackText::Linux), Some(hz)) = (s.tcp.stack, merged.hz) {
            linux_controller_defaults(&cc, &mut cc_params, &startup, &mut startup_params, hz);
        }
        controller = Some(
            registry::factory(&cc, &cc_params, &startup, &startup_params)
                .map_err(|e| err(at(&e.field), e.message))?,
        );
        r.cc = Some(cc);
        r.startup = Some(startup);
        r.cc_params = Some(cc_params);
        r.startup_params = Some(startup_params);
        check_tcp(&merged, &at("tcp"))?;
        if matches!(
            merged.recovery,
            Some(RecoveryText::Sack | RecoveryText::Prr)
        ) && merged.sack != Some(true)
        {
            return Err(err(
                at("tcp.recovery"),
                "\"sack\" and \"prr\" recovery need sack = true",
            ));
        }
        if let Some(fs) = f.tcp.as_ref().and_then(|t| t.stack) {
            if Some(fs) != s.tcp.stack.or(Some(StackText::Ns2)) {
                return Err(err(
                    at("tcp.stack"),
                    "the stack is chosen for the whole scenario, in [tcp] (its defaults are every flow's)",
                ));
            }
        }
        if merged.dsack == Some(true) && merged.sack != Some(true) {
            return Err(err(
                at("tcp.dsack"),
                "a D-SACK block is a SACK option: dsack = true needs sack = true",
            ));
        }
        if merged.frto == Some(true) && merged.recovery != Some(RecoveryText::Prr) {
            return Err(err(
                at("tcp.frto"),
                "F-RTO runs within Linux's recovery: it needs recovery = \"prr\"",
            ));
        }
        if matches!(
            merged.loss_detection,
            Some(LossDetectionText::Rack | LossDetectionText::RackTlp)
        ) && merged.recovery != Some(RecoveryText::Prr)
        {
            return Err(err(
                at("tcp.loss_detection"),
                "RACK runs within Linux's recovery: it needs recovery = \"prr\"",
            ));
        }
        match (f.kind, &f.size) {
            (FlowKind::Tcp, None) => r.size = Some(FlowSizeSpec::Fixed(Limitable::Unlimited)),
            (FlowKind::Tcp, Some(FlowSizeSpec::Fixed(_))) => {}
            (FlowKind::Tcp, Some(FlowSizeSpec::Distribution(_))) => {
                return Err(err(at("size"), "a size distribution is only allowed with kind = \"tcp-arrivals\""))
            }
            (_, Some(FlowSizeSpec::Distribution(d))) => {
                r.size = Some(FlowSizeSpec::Distribution(check_size_distribution(d, &at("size"))?))
            }
            (_, _) => {
                return Err(err(
                    at("size"),
                    "required for tcp-arrivals: a table such as { distribution = \"exponential\", mean = \"100KB\" }",
                ))
            }
        }
        if f.kind == FlowKind::TcpArrivals {
            match f.mean_interarrival {
                Some(d) if !d.0.is_zero() => {}
                _ => {
                    return Err(err(
                        at("mean_interarrival"),
                        "required: a positive duration such as \"500ms\"",
                    ))
                }
            }
        }
    }
    if is_udp {
        if f.rate.is_none() {
            return Err(err(at("rate"), "required (e.g. rate = \"20Mbps\")"));
        }
        r.packet_size = Some(f.packet_size.unwrap_or(SizeText(1000)));
        if r.packet_size.unwrap().0 > 65_535 {
            return Err(err(at("packet_size"), "must be at most 65535B"));
        }
    }
    if f.kind == FlowKind::OnOff {
        for (field, v) in [("on_time", f.on_time), ("off_time", f.off_time)] {
            match v {
                Some(d) if !d.0.is_zero() => {}
                _ => {
                    return Err(err(
                        at(field),
                        "required: a positive duration such as \"500ms\"",
                    ))
                }
            }
        }
        let dist = f.distribution.unwrap_or(OnOffDistributionText::Exponential);
        r.distribution = Some(dist);
        if dist == OnOffDistributionText::Pareto {
            let shape = f.shape.unwrap_or(1.5);
            if shape <= 1.0 {
                return Err(err(
                    at("shape"),
                    format!("invalid value {shape}: expected a Pareto shape above 1"),
                ));
            }
            r.shape = Some(shape);
        } else {
            not_for(
                &at("shape"),
                f.shape.is_some(),
                "on-off without distribution = \"pareto\"",
            )?;
        }
    }
    Ok((r, controller))
}

fn check_size_distribution(
    d: &SizeDistributionSpec,
    path: &str,
) -> Result<SizeDistributionSpec, ScenarioError> {
    let at = |f: &str| format!("{path}.{f}");
    let mut r = d.clone();
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
        let shape = d.shape.unwrap_or(1.5);
        if shape <= 1.0 {
            return Err(err(
                at("shape"),
                format!("invalid value {shape}: expected a Pareto shape above 1"),
            ));
        }
        r.shape = Some(shape);
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
    Ok(r)
}

fn resolve_measure(
    m: &MeasureSpecText,
    s: &Scenario,
    net: &Network,
) -> Result<MeasureSpecText, ScenarioError> {
    let mut r = m.clone();
    r.interval = Some(
        m.interval
            .unwrap_or(Interval::Every(Duration::from_millis(10))),
    );
    r.flow_series = Some(m.flow_series.unwrap_or(true));
    r.queue_series = Some(m.queue_series.unwrap_or(true));
    let links = m.links.clone().unwrap_or_else(|| match s.topology.kind {
        TopologyKind::Dumbbell => vec!["bottleneck".into()],
        TopologyKind::Parallel => (0..s.topology.pairs.unwrap())
            .map(|i| format!("bottleneck{i}"))
            .collect(),
        TopologyKind::ParkingLot => (0..s.topology.hops.unwrap())
            .map(|h| format!("hop{h}"))
            .collect(),
    });
    for (i, name) in links.iter().enumerate() {
        if net.find_link(name).is_none() {
            return Err(err(format!("measure.links[{i}]"), unknown_link(name, net)));
        }
    }
    r.links = Some(links);
    for (i, w) in m.window.iter().enumerate() {
        let at = |f: &str| format!("measure.window[{i}].{f}");
        if net.find_link(&w.link).is_none() {
            return Err(err(at("link"), unknown_link(&w.link, net)));
        }
        if w.from.0 >= w.to.0 {
            return Err(err(
                at("to"),
                format!("{} is not after from ({})", w.to.0, w.from.0),
            ));
        }
        if w.to.0 > s.duration.0 {
            return Err(err(
                at("to"),
                format!("{} is after the end of the run ({})", w.to.0, s.duration.0),
            ));
        }
    }
    Ok(r)
}

fn unknown_link(name: &str, net: &Network) -> String {
    let mut names: Vec<&str> = net
        .link_aliases
        .iter()
        .filter(|a| !a.is_empty())
        .map(|a| a.as_str())
        .collect();
    names.extend(net.link_names.iter().take(6).map(|n| n.as_str()));
    format!(
        "unknown link \"{name}\"; links are named like {}, …",
        names.join(", ")
    )
}

// ----- building ----------------------------------------------------------------------------------

fn discipline(q: &QueueSpec, rate: Rate, wire: u64, seed: u64, stream: &mut u64) -> Discipline {
    let limit = match q.limit.expect("resolved") {
        QueueLimit::Packets(p) => Limit::Packets(p),
        QueueLimit::Bytes(b) => Limit::Bytes(b),
        QueueLimit::Bdp(_) => unreachable!("BDP limits are resolved to packets"),
    };
    match q.kind {
        QueueKind::Droptail => Discipline::DropTail(DropTail { limit }),
        QueueKind::Red => {
            *stream += 1;
            Discipline::Red(Red::new(
                RedParams {
                    limit,
                    min_th: q.min_th.unwrap(),
                    max_th: q.max_th.unwrap(),
                    max_p: q.max_p.unwrap(),
                    w_q: q.w_q.unwrap(),
                    gentle: q.gentle.unwrap(),
                },
                rate.transmit_time(wire),
                Rng::stream(seed, streams::QUEUE + *stream),
            ))
        }
    }
}

fn duplex(l: &LinkSpec, wire: u64, seed: u64, stream: &mut u64) -> Duplex {
    let (rate, reverse_rate) = (l.rate.unwrap().0, l.reverse_rate.unwrap().0);
    Duplex {
        forward: LinkParams {
            rate,
            delay: l.delay.unwrap().0,
            discipline: discipline(l.queue.as_ref().unwrap(), rate, wire, seed, stream),
            loss: l.loss.unwrap(),
        },
        reverse: LinkParams {
            rate: reverse_rate,
            delay: l.reverse_delay.unwrap().0,
            discipline: discipline(
                l.reverse_queue.as_ref().unwrap(),
                reverse_rate,
                wire,
                seed,
                stream,
            ),
            loss: l.reverse_loss.unwrap(),
        },
    }
}

fn build_network(t: &Topology, seed: u64) -> Result<Network, ScenarioError> {
    // RED's idle-time correction uses the transmission time of a typical (1000-byte) packet.
    let wire = 1000;
    let mut stream = 0;
    Ok(match t.kind {
        TopologyKind::Dumbbell | TopologyKind::Parallel => {
            let pairs = t.pair.as_ref().expect("resolved");
            let spec = DumbbellSpec {
                bottleneck: duplex(&t.bottleneck, wire, seed, &mut stream),
                sender_access: pairs
                    .iter()
                    .map(|p| duplex(p.sender_access.as_ref().unwrap(), wire, seed, &mut stream))
                    .collect(),
                receiver_access: pairs
                    .iter()
                    .map(|p| duplex(p.receiver_access.as_ref().unwrap(), wire, seed, &mut stream))
                    .collect(),
            };
            if t.kind == TopologyKind::Dumbbell {
                topology::dumbbell(&spec, seed)
            } else {
                topology::parallel(&spec, seed)
            }
        }
        TopologyKind::ParkingLot => {
            let spec = ParkingLotSpec {
                hops: t
                    .hop
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|h| duplex(h, wire, seed, &mut stream))
                    .collect(),
                long_pairs: t.long_pairs.unwrap() as usize,
                cross_pairs: t.cross_pairs.unwrap() as usize,
                access: duplex(t.access.as_ref().unwrap(), wire, seed, &mut stream),
            };
            topology::parking_lot(&spec, seed)
        }
    })
}

/// The engine's TCP settings for a flow of a filled-in document; `default_recovery` is the
/// controller's recovery for `recovery = "auto"` without SACK.
pub fn tcp_config(t: &TcpSpec, default_recovery: &str) -> TcpConfig {
    let mss = t.mss.unwrap().0 as u32;
    let sack = t.sack.unwrap();
    let ns2 = |recovery| crate::tcp::Stack::Ns2 { recovery };
    let stack = match t.recovery.unwrap() {
        RecoveryText::Reno => ns2(Recovery::Reno),
        RecoveryText::Newreno => ns2(Recovery::NewReno),
        RecoveryText::Sack => ns2(Recovery::Sack),
        RecoveryText::Prr => crate::tcp::Stack::Linux,
        RecoveryText::Auto if sack => ns2(Recovery::Sack),
        RecoveryText::Auto => match default_recovery {
            "reno" => ns2(Recovery::Reno),
            _ => ns2(Recovery::NewReno),
        },
    };
    TcpConfig {
        mss_bytes: mss,
        header_bytes: t.header.unwrap().0 as u32,
        ack_bytes: t.ack_size.unwrap().0 as u32,
        initial_window: t.initial_window.unwrap().segments(mss),
        initial_ssthresh: match t.initial_ssthresh.unwrap() {
            Limitable::Unlimited => f64::INFINITY,
            Limitable::Is(Window::Bytes(b)) => b as f64 / mss as f64,
            Limitable::Is(w) => w.segments(mss) as f64,
        },
        receive_window: match t.receive_window.unwrap() {
            Limitable::Unlimited => u32::MAX,
            Limitable::Is(Window::Bytes(b)) => {
                (b / mss as u64).clamp(1, u32::MAX as u64 - 1) as u32
            }
            Limitable::Is(w) => w.segments(mss),
        },
        delayed_ack: t.delayed_ack.unwrap(),
        delayed_ack_timeout: t.delayed_ack_timeout.unwrap().0,
        sack,
        stack,
        dupack_threshold: t.dupack_threshold.unwrap(),
        min_rto: t.min_rto.unwrap().0,
        max_rto: t.max_rto.unwrap().0,
        initial_rto: t.initial_rto.unwrap().0,
        clock_granularity: t.clock_granularity.unwrap().0,
        handshake: t.handshake.unwrap(),
        undo: t.undo.unwrap(),
        dsack: t.dsack.unwrap(),
        frto: t.frto.unwrap(),
        pacing: match t.pacing.unwrap() {
            PacingText::None => Pacing::ByController,
            PacingText::Window => Pacing::Window,
            PacingText::Linux => Pacing::Linux {
                ss_ratio: t.pacing_ss_ratio.unwrap(),
                ca_ratio: t.pacing_ca_ratio.unwrap(),
            },
            PacingText::InitialSpreading => Pacing::InitialSpreading,
        },
        ack_policy: match t.ack_policy.unwrap() {
            AckPolicyText::Rfc5681 => AckPolicy::Rfc5681,
            AckPolicyText::Linux => AckPolicy::Linux(LinuxAckConfig {
                hz: t.hz.unwrap(),
                window_clamp_bytes: match t.receive_window.unwrap() {
                    Limitable::Unlimited => None,
                    Limitable::Is(Window::Bytes(b)) => Some(b),
                    Limitable::Is(w) => Some(w.segments(mss) as u64 * mss as u64),
                },
                ..LinuxAckConfig::default()
            }),
        },
        loss_detection: match t.loss_detection.unwrap() {
            LossDetectionText::Dupthresh => LossDetection::DupThresh,
            LossDetectionText::Rack => LossDetection::Rack { tlp: false },
            LossDetectionText::RackTlp => LossDetection::Rack { tlp: true },
        },
        rto_algorithm: match t.rto.unwrap() {
            RtoText::Rfc6298 => RtoAlgorithm::Rfc6298,
            RtoText::Linux => RtoAlgorithm::Linux,
        },
    }
}

fn size_distribution(d: &SizeDistributionSpec) -> SizeDistribution {
    match d.distribution {
        SizeDistributionKind::Fixed => SizeDistribution::Fixed {
            bytes: d.value.unwrap().0,
        },
        SizeDistributionKind::Exponential => SizeDistribution::Exponential {
            mean_bytes: d.mean.unwrap().0 as f64,
        },
        SizeDistributionKind::Pareto => SizeDistribution::Pareto {
            mean_bytes: d.mean.unwrap().0 as f64,
            shape: d.shape.unwrap(),
        },
        SizeDistributionKind::LognormalPareto => SizeDistribution::LognormalPareto {
            mu: d.mu.unwrap(),
            sigma: d.sigma.unwrap(),
            tail_fraction: d.tail_fraction.unwrap(),
            tail_shape: d.tail_shape.unwrap(),
            tail_min_bytes: d.tail_min.unwrap().0 as f64,
        },
    }
}

/// Refuses, before anything is allocated, a run whose arrivals, UDP packets or recorded series
/// would not fit in memory or in a reasonable time; the message gives the estimate.
fn check_run_size(s: &Scenario, m: &MeasureSpec, net: &Network) -> Result<(), ScenarioError> {
    let duration = s.duration.0.as_secs_f64();
    let mut connections = 0.0;
    for (i, f) in s.flows.iter().enumerate() {
        match f.kind {
            FlowKind::Tcp => connections += f.count.unwrap() as f64,
            FlowKind::TcpArrivals => {
                let span = f.stop.unwrap().0.as_secs_f64() - f.start.unwrap().0.as_secs_f64();
                let expected = span / f.mean_interarrival.unwrap().0.as_secs_f64();
                if expected > MAX_ARRIVALS {
                    return Err(err(
                        format!("flows[{i}].mean_interarrival"),
                        format!("{} over {span} s is about {expected:.3e} connections; at most {MAX_ARRIVALS:.0e} are allowed", f.mean_interarrival.unwrap().0),
                    ));
                }
                connections += expected;
            }
            FlowKind::Cbr | FlowKind::OnOff => {
                let packets = udp_packets(f);
                if packets > MAX_UDP_PACKETS {
                    let (rate, bytes) = (f.rate.unwrap().0, f.packet_size.unwrap().0);
                    let span = f.stop.unwrap().0.saturating_sub(f.start.unwrap().0);
                    let sources = match f.count.unwrap() {
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
                format!("{interval} over {} would record about", s.duration.0),
                "sample less often or fewer links",
            ),
            None => (
                format!("\"event\" over {} could record up to about", s.duration.0),
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

/// The packets UDP entry `f` sends, all its sources together: one every transmission time of a
/// packet at `rate` (an on-off source only while on), from its start to its stop.
fn udp_packets(f: &FlowSpec) -> f64 {
    let every = f.rate.unwrap().0.transmit_time(f.packet_size.unwrap().0);
    let span = f.stop.unwrap().0.saturating_sub(f.start.unwrap().0);
    f.count.unwrap() as f64 * span.as_nanos() as f64 / every.as_nanos() as f64
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
fn event_rows(s: &Scenario, m: &MeasureSpec, net: &Network) -> (f64, f64) {
    let rate = |l: LinkId| net.links[l as usize].params.rate;
    // Packets of a size the link can carry over the run.
    let carried = |(l, bytes): (LinkId, u64)| packets_carried(rate(l), s.duration.0, bytes);
    let node = |name: &Option<String>| {
        net.find_node(name.as_deref().unwrap())
            .expect("resolved host")
    };
    let mut streams = Vec::new();
    // Per TCP entry, its data and ACK streams (indices into `streams`) and its connections.
    let mut tcp = Vec::new();
    for f in &s.flows {
        let (src, dst) = (node(&f.src), node(&f.dst));
        let path = |a, b| net.path(a, b).expect("resolved route");
        match f.kind {
            FlowKind::Tcp | FlowKind::TcpArrivals => {
                let connections = match f.kind {
                    FlowKind::Tcp => f.count.unwrap() as f64,
                    _ => {
                        let span = f.stop.unwrap().0.saturating_sub(f.start.unwrap().0);
                        span.as_secs_f64() / f.mean_interarrival.unwrap().0.as_secs_f64()
                    }
                };
                let t = flow_tcp(f.tcp.as_ref(), &s.tcp);
                let segment = t.mss.unwrap().0 + t.header.unwrap().0;
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
                    bytes: t.ack_size.unwrap().0,
                    sent: Some(received),
                    small: 0.0,
                });
            }
            FlowKind::Cbr | FlowKind::OnOff => streams.push(Stream {
                path: path(src, dst),
                bytes: f.packet_size.unwrap().0,
                // A first packet at the start of each source.
                sent: Some(udp_packets(f) + f.count.unwrap() as f64),
                small: 0.0,
            }),
        }
    }

    // Flow rows: each entry's ACKs are bounded by the link of its paths that carries the fewest
    // of its packets; entries bounded by the same link share it.
    let mut tightest = BTreeMap::new();
    let mut flow_rows = 0.0;
    for &(data, ack, connections) in &tcp {
        let (link, bytes) = [&streams[data], &streams[ack]]
            .iter()
            .flat_map(|st| st.path.iter().map(move |&l| (l, st.bytes)))
            .min_by(|&a, &b| carried(a).total_cmp(&carried(b)))
            .expect("a path has a link");
        let smallest = tightest.entry(link).or_insert(bytes);
        *smallest = bytes.min(*smallest);
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

/// What the recorder measures, with link names turned into ids.
fn measure_spec(m: &MeasureSpecText, net: &Network) -> MeasureSpec {
    let link = |name: &str| net.find_link(name).expect("resolved link name");
    MeasureSpec {
        interval: match m.interval.expect("resolved") {
            Interval::Every(d) => Some(d),
            Interval::Event => None,
        },
        flow_series: m.flow_series.unwrap(),
        queue_series: m.queue_series.unwrap(),
        links: m.links.as_ref().unwrap().iter().map(|n| link(n)).collect(),
        windows: m
            .window
            .iter()
            .map(|w| (link(&w.link), Time::ZERO + w.from.0, Time::ZERO + w.to.0))
            .collect(),
    }
}

/// Flow entry `entry` of a filled-in document, as the worlds run it.
fn plan_flow(
    entry: usize,
    f: &FlowSpec,
    controller: Option<ControllerFactory>,
    tcp: &TcpSpec,
    net: &Network,
) -> FlowPlan {
    let node = |name: &Option<String>| {
        net.find_node(name.as_deref().unwrap())
            .expect("resolved host")
    };
    let (src, dst) = (node(&f.src), node(&f.dst));
    let start = f.start.unwrap().0;
    let traffic = match f.kind {
        FlowKind::Tcp | FlowKind::TcpArrivals => {
            let controller = controller.expect("a TCP entry has a controller");
            let merged = flow_tcp(f.tcp.as_ref(), tcp);
            let cfg = tcp_config(&merged, controller.default_recovery());
            let label = f.label.clone().unwrap_or_else(|| {
                if controller.startup() == registry::DEFAULT_STARTUP {
                    controller.cc().to_string()
                } else {
                    format!("{}+{}", controller.cc(), controller.startup())
                }
            });
            match f.size.as_ref().unwrap() {
                FlowSizeSpec::Fixed(size) => {
                    let size = match size {
                        Limitable::Unlimited => FlowSize::UNLIMITED,
                        Limitable::Is(w) => {
                            let bytes = match *w {
                                Window::Bytes(b) => b,
                                w => w.segments(cfg.mss_bytes) as u64 * cfg.mss_bytes as u64,
                            };
                            FlowSize::from_bytes(bytes, cfg.mss_bytes)
                        }
                    };
                    let (count, stagger) = (f.count.unwrap(), f.stagger.unwrap().0);
                    let connections = (0..count)
                        .map(|k| Connection {
                            label: copy_label(&label, k, count),
                            start: Time::ZERO + start + stagger * k as u64,
                            stop: f.stop.map(|d| Time::ZERO + d.0),
                            size,
                        })
                        .collect();
                    Traffic::Tcp {
                        connections,
                        tcp: cfg,
                        controller,
                    }
                }
                FlowSizeSpec::Distribution(d) => Traffic::Arrivals {
                    label,
                    tcp: cfg,
                    controller,
                    mean_interarrival: f.mean_interarrival.unwrap().0,
                    start: Time::ZERO + start,
                    stop: Time::ZERO + f.stop.unwrap().0,
                    sizes: size_distribution(d),
                },
            }
        }
        FlowKind::Cbr | FlowKind::OnOff => {
            let pattern = match f.kind {
                FlowKind::Cbr => UdpPattern::Cbr,
                _ => UdpPattern::OnOff {
                    mean_on: f.on_time.unwrap().0,
                    mean_off: f.off_time.unwrap().0,
                    distribution: match f.distribution.unwrap() {
                        OnOffDistributionText::Constant => OnOffDistribution::Constant,
                        OnOffDistributionText::Exponential => OnOffDistribution::Exponential,
                        OnOffDistributionText::Pareto => OnOffDistribution::Pareto {
                            shape: f.shape.unwrap(),
                        },
                    },
                },
            };
            // Labelled like TCP flows: the entry's label or its kind, `#k` on each copy.
            let label = f.label.clone().unwrap_or_else(|| f.kind.name().to_string());
            let (count, stagger) = (f.count.unwrap(), f.stagger.unwrap().0);
            let sources = (0..count)
                .map(|k| UdpPlan {
                    label: copy_label(&label, k, count),
                    start: Time::ZERO + start + stagger * k as u64,
                    stop: Time::ZERO + f.stop.unwrap().0,
                })
                .collect();
            Traffic::Udp {
                sources,
                rate: f.rate.unwrap().0,
                packet_bytes: f.packet_size.unwrap().0 as u32,
                pattern,
            }
        }
    };
    FlowPlan {
        entry,
        src,
        dst,
        traffic,
    }
}

/// The simulation of a resolved scenario.
pub fn build(s: ResolvedScenario) -> Simulation {
    Simulation::from_resolved(s)
}
