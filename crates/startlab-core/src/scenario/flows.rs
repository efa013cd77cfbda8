//! Flow entries: each filled in and checked against the network, one function per kind of
//! traffic, then planned as the worlds run them ([`FlowPlan`]).

use super::check::{self, not_for};
use super::defaults::{
    flow_tcp, linux_controller_defaults, DEFAULT_CC, DEFAULT_PACKET_BYTES, DEFAULT_PARETO_SHAPE,
};
use super::filled::*;
use super::model::*;
use super::resolved::{Connection, FlowPlan, RequestPlan, Traffic, UdpPlan};
use super::units::{DurationText, Limitable, Window};
use super::{err, ScenarioError};
use crate::cc::{controller, registry};
use crate::net::{Network, NodeKind, NO_ROUTE};
use crate::tcp::linux_acks::LinuxAckConfig;
use crate::tcp::{
    AckPolicy, FlowSize, LossDetection, Pacing, PacingRatios, Recovery, RtoAlgorithm, Stack,
    TcpConfig,
};
use crate::time::{Duration, Time};
use crate::traffic::{OnOffDistribution, RequestSpec, SizeDistribution, UdpPattern};

/// What every entry has, whatever its kind, checked.
struct Common {
    src: Host,
    dst: Host,
    start: Duration,
}

/// Checks flow entry `i` against the network and fills in its defaults. `tcp` is the
/// document's filled `[tcp]`, `topology` and `duration` the document's.
pub fn fill(
    f: &FlowSpec,
    i: usize,
    topology: &FilledTopology,
    tcp: &FilledTcp,
    duration: Duration,
    net: &Network,
) -> Result<FilledFlow, ScenarioError> {
    let at = |field: &str| format!("flows[{i}].{field}");
    let (src, dst) = endpoints(f, &at, topology, net)?;
    let start = f.start.map_or(Duration::ZERO, |d| d.0);
    if start >= duration {
        return Err(err(
            at("start"),
            format!("{start} is not before the end of the run ({duration})"),
        ));
    }
    only_its_fields(f, &at)?;
    let common = Common { src, dst, start };
    let traffic = match f.kind {
        FlowKind::Tcp => tcp_entry(f, &at, &common, tcp)?,
        FlowKind::TcpArrivals => arrivals(f, &at, &common, tcp, duration)?,
        FlowKind::Cbr => cbr(f, &at, &common, duration)?,
        FlowKind::OnOff => on_off(f, &at, &common, duration)?,
    };
    Ok(FilledFlow {
        label: f.label.clone(),
        src: common.src,
        dst: common.dst,
        start: common.start,
        traffic,
    })
}

/// The entry's hosts: `pair`, `src` and `dst`, or `s0` and `r0`; hosts of the network with a
/// route both ways.
fn endpoints(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    topology: &FilledTopology,
    net: &Network,
) -> Result<(Host, Host), ScenarioError> {
    let parking_lot = matches!(topology.shape, Shape::ParkingLot { .. });
    let (src, dst) = match (f.pair, &f.src, &f.dst) {
        (Some(p), None, None) => {
            let pairs = match &topology.shape {
                Shape::Dumbbell { pairs } | Shape::Parallel { pairs } => pairs.len() as u32,
                Shape::ParkingLot { .. } => {
                    return Err(err(
                        at("pair"),
                        "not on a parking lot; name the hosts with src and dst",
                    ))
                }
            };
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
        (None, None, None) if !parking_lot => ("s0".into(), "r0".into()),
        (None, None, _) => return Err(err(at("src"), "required (the sending host)")),
        (None, _, None) => return Err(err(at("dst"), "required (the receiving host)")),
    };
    let host = |field: &str, name: String| match net.find_node(&name) {
        Some(node) if net.nodes[node as usize].kind == NodeKind::Host => Ok(Host { name, node }),
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
            Err(err(
                at(field),
                format!("unknown host \"{name}\"; hosts are {shown}"),
            ))
        }
    };
    let (src, dst) = (host("src", src)?, host("dst", dst)?);
    if src.name == dst.name {
        return Err(err(
            at("dst"),
            format!("\"{}\" is also the source", dst.name),
        ));
    }
    if net.route(src.node, dst.node) == NO_ROUTE || net.route(dst.node, src.node) == NO_ROUTE {
        return Err(err(
            at("dst"),
            format!("no path from \"{}\" to \"{}\" (on kind = \"parallel\", each pair has its own path: s<k> reaches only r<k>)", src.name, dst.name),
        ));
    }
    Ok((src, dst))
}

/// Refuses the fields of other kinds.
fn only_its_fields(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> Result<(), ScenarioError> {
    let kind = f.kind.name();
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
    not_for(
        &at("requests"),
        f.requests.is_some() && f.kind != FlowKind::Tcp,
        kind,
    )?;
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
    )
}

/// `count` (1 to 100000) and `stagger`.
fn copies(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> Result<Copies, ScenarioError> {
    let count = f.count.unwrap_or(1);
    if count == 0 || count > 100_000 {
        return Err(err(
            at("count"),
            format!("invalid value {count}: expected 1 to 100000"),
        ));
    }
    Ok(Copies {
        count,
        stagger: f.stagger.map_or(Duration::ZERO, |d| d.0),
    })
}

/// `stop`, after the start; `default` where the entry has none.
fn stop(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    start: Duration,
    default: Option<Duration>,
) -> Result<Option<Duration>, ScenarioError> {
    let stop = f.stop.map(|d| d.0).or(default);
    if let Some(stop) = stop {
        if stop <= start {
            return Err(err(
                at("stop"),
                format!("{stop} is not after the start ({start})"),
            ));
        }
    }
    Ok(stop)
}

/// `stop`, by default the end of the run.
fn stop_or_end(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    start: Duration,
    duration: Duration,
) -> Result<Duration, ScenarioError> {
    Ok(stop(f, at, start, Some(duration))?.unwrap_or(duration))
}

/// `kind = "tcp"`: `count` connections, each until it completes or the run ends unless it has a
/// `stop`.
fn tcp_entry(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    common: &Common,
    document: &FilledTcp,
) -> Result<FilledTraffic, ScenarioError> {
    let copies = copies(f, at)?;
    let stop = stop(f, at, common.start, None)?;
    let tcp = tcp_flow(f, at, document)?;
    let size = match &f.size {
        None => Limitable::Unlimited,
        Some(_) if f.requests.is_some() => {
            return Err(err(
                at("size"),
                "give either size (one bulk transfer) or requests (responses written one at a time), not both",
            ))
        }
        Some(FlowSizeSpec::Fixed(size)) => *size,
        Some(FlowSizeSpec::Distribution(_)) => {
            return Err(err(
                at("size"),
                "a size distribution is only allowed with kind = \"tcp-arrivals\" or in requests",
            ))
        }
    };
    let requests = match &f.requests {
        Some(r) => Some(requests(r, &at("requests"))?),
        None => None,
    };
    Ok(FilledTraffic::Tcp {
        copies,
        stop,
        size,
        requests,
        tcp,
    })
}

/// The longest think time: an hour.
const MAX_THINK: Duration = Duration::from_secs(3600);

/// `requests`, checked and filled (`path` names it in errors).
fn requests(r: &RequestsSpec, path: &str) -> Result<FilledRequests, ScenarioError> {
    let at = |f: &str| format!("{path}.{f}");
    if let Some(n) = r.count {
        if n == 0 || n > 1_000_000 {
            return Err(err(
                at("count"),
                format!("invalid value {n}: expected 1 to 1000000 responses"),
            ));
        }
    }
    let mut written = r.clone();
    let sizes = match &r.size {
        FlowSizeSpec::Fixed(Limitable::Is(Window::Bytes(b))) if *b > 0 => {
            SizeDistribution::Fixed { bytes: *b }
        }
        FlowSizeSpec::Fixed(Limitable::Is(Window::Bytes(_))) => {
            return Err(err(
                at("size"),
                "invalid size 0B: a response has at least one byte",
            ))
        }
        FlowSizeSpec::Fixed(_) => {
            return Err(err(
                at("size"),
                "expected bytes such as \"100KB\", or a size distribution table",
            ))
        }
        FlowSizeSpec::Distribution(d) => {
            let filled = check::size_distribution(d, &at("size"))?;
            written.size = FlowSizeSpec::Distribution(filled.written);
            filled.sizes
        }
    };
    let think = r.think.map_or(Duration::ZERO, |d| d.0);
    if think > MAX_THINK {
        return Err(err(
            at("think"),
            format!("{think} is too long: expected at most 1h"),
        ));
    }
    written.think = Some(DurationText(think));
    let distribution = r
        .think_distribution
        .unwrap_or(OnOffDistributionText::Constant);
    written.think_distribution = Some(distribution);
    let think_distribution = match distribution {
        OnOffDistributionText::Constant => OnOffDistribution::Constant,
        OnOffDistributionText::Exponential => OnOffDistribution::Exponential,
        OnOffDistributionText::Pareto => {
            let shape = r.think_shape.unwrap_or(DEFAULT_PARETO_SHAPE);
            if !(shape > 1.0 && shape.is_finite()) {
                return Err(err(
                    at("think_shape"),
                    format!("invalid value {shape}: expected a Pareto shape above 1"),
                ));
            }
            written.think_shape = Some(shape);
            OnOffDistribution::Pareto { shape }
        }
    };
    if distribution != OnOffDistributionText::Pareto {
        not_for(
            &at("think_shape"),
            r.think_shape.is_some(),
            "requests without think_distribution = \"pareto\"",
        )?;
    }
    Ok(FilledRequests {
        written,
        spec: RequestSpec {
            count: r.count,
            sizes,
            think,
            think_distribution,
        },
    })
}

/// `kind = "tcp-arrivals"`: Poisson arrivals of connections with sizes drawn from a
/// distribution, until `stop` (by default the end of the run).
fn arrivals(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    common: &Common,
    document: &FilledTcp,
    duration: Duration,
) -> Result<FilledTraffic, ScenarioError> {
    let stop = stop_or_end(f, at, common.start, duration)?;
    let tcp = tcp_flow(f, at, document)?;
    let sizes = match &f.size {
        Some(FlowSizeSpec::Distribution(d)) => check::size_distribution(d, &at("size"))?,
        _ => {
            return Err(err(
                at("size"),
                "required for tcp-arrivals: a table such as { distribution = \"exponential\", mean = \"100KB\" }",
            ))
        }
    };
    let mean_interarrival = match f.mean_interarrival {
        Some(d) if !d.0.is_zero() => d.0,
        _ => {
            return Err(err(
                at("mean_interarrival"),
                "required: a positive duration such as \"500ms\"",
            ))
        }
    };
    Ok(FilledTraffic::Arrivals {
        stop,
        mean_interarrival,
        sizes,
        tcp,
    })
}

/// `kind = "cbr"`: `count` sources at a constant rate until `stop` (by default the end of the
/// run).
fn cbr(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    common: &Common,
    duration: Duration,
) -> Result<FilledTraffic, ScenarioError> {
    let copies = copies(f, at)?;
    let stop = stop_or_end(f, at, common.start, duration)?;
    let udp = udp_flow(f, at)?;
    Ok(FilledTraffic::Cbr { copies, stop, udp })
}

/// `kind = "on-off"`: `count` sources at a constant rate while on, on and off periods drawn
/// from a distribution.
fn on_off(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    common: &Common,
    duration: Duration,
) -> Result<FilledTraffic, ScenarioError> {
    let copies = copies(f, at)?;
    let stop = stop_or_end(f, at, common.start, duration)?;
    let udp = udp_flow(f, at)?;
    let positive = |field: &str, v: Option<super::units::DurationText>| match v {
        Some(d) if !d.0.is_zero() => Ok(d.0),
        _ => Err(err(
            at(field),
            "required: a positive duration such as \"500ms\"",
        )),
    };
    let on_time = positive("on_time", f.on_time)?;
    let off_time = positive("off_time", f.off_time)?;
    let distribution = match f.distribution.unwrap_or(OnOffDistributionText::Exponential) {
        OnOffDistributionText::Pareto => {
            let shape = f.shape.unwrap_or(DEFAULT_PARETO_SHAPE);
            if shape <= 1.0 {
                return Err(err(
                    at("shape"),
                    format!("invalid value {shape}: expected a Pareto shape above 1"),
                ));
            }
            OnOffDistribution::Pareto { shape }
        }
        other => {
            not_for(
                &at("shape"),
                f.shape.is_some(),
                "on-off without distribution = \"pareto\"",
            )?;
            match other {
                OnOffDistributionText::Constant => OnOffDistribution::Constant,
                _ => OnOffDistribution::Exponential,
            }
        }
    };
    Ok(FilledTraffic::OnOff {
        copies,
        stop,
        udp,
        on_time,
        off_time,
        distribution,
    })
}

/// What the TCP kinds share: the controller (checked, its factory made) and the entry's `tcp`
/// over the document's, checked.
fn tcp_flow(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    document: &FilledTcp,
) -> Result<TcpFlow, ScenarioError> {
    let cc = f.cc.clone().unwrap_or_else(|| DEFAULT_CC.into());
    let startup = f
        .startup
        .clone()
        .unwrap_or_else(|| registry::DEFAULT_STARTUP.into());
    let mut cc_params = f.cc_params.clone().unwrap_or_default();
    let mut startup_params = f.startup_params.clone().unwrap_or_default();
    let merged = flow_tcp(f.tcp.as_ref(), document);
    if document.stack == StackText::Linux {
        linux_controller_defaults(
            &cc,
            &mut cc_params,
            &startup,
            &mut startup_params,
            merged.hz,
        );
    }
    let controller = controller::factory(&cc, &cc_params, &startup, &startup_params)
        .map_err(|e| err(at(&e.field), e.message))?;
    check::flow_tcp(&merged, f.tcp.as_ref(), document, &at("tcp"))?;
    if merged.pacing != PacingText::None
        && registry::UNPACED_SENDER_ONLY.contains(&controller.startup())
    {
        return Err(err(
            at("tcp.pacing"),
            format!(
                "startup = \"{}\" paces its own segments and needs a sender that does not pace by itself: tcp.pacing must be \"none\" (the authors' kernel turns it off on a socket that is already paced)",
                controller.startup()
            ),
        ));
    }
    Ok(TcpFlow {
        given: f.tcp.clone(),
        tcp: merged,
        controller,
    })
}

/// What the UDP kinds share: a rate and a packet size.
fn udp_flow(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> Result<UdpFlow, ScenarioError> {
    let rate = f
        .rate
        .ok_or_else(|| err(at("rate"), "required (e.g. rate = \"20Mbps\")"))?;
    let packet_size = f.packet_size.map_or(DEFAULT_PACKET_BYTES, |s| s.0);
    if packet_size > 65_535 {
        return Err(err(at("packet_size"), "must be at most 65535B"));
    }
    Ok(UdpFlow {
        rate: rate.0,
        packet_size,
    })
}

// ----- planning ----------------------------------------------------------------------------------

/// Flow entry `entry`, filled, as the worlds run it.
pub fn plan(entry: usize, f: &FilledFlow) -> FlowPlan {
    let start = Time::ZERO + f.start;
    let traffic = match &f.traffic {
        FilledTraffic::Tcp {
            copies,
            stop,
            size,
            requests,
            tcp,
        } => {
            let (label, cfg) = tcp_settings(f, tcp);
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
            let connections = (0..copies.count)
                .map(|k| Connection {
                    label: copy_label(&label, k, copies.count),
                    start: start + copies.stagger * k as u64,
                    stop: stop.map(|d| Time::ZERO + d),
                    size,
                    requests: requests.as_ref().map(|r| RequestPlan {
                        spec: r.spec.clone(),
                        entry: entry as u32,
                        copy: k,
                    }),
                })
                .collect();
            Traffic::Tcp {
                connections,
                tcp: cfg,
                controller: tcp.controller.clone(),
            }
        }
        FilledTraffic::Arrivals {
            stop,
            mean_interarrival,
            sizes,
            tcp,
        } => {
            let (label, cfg) = tcp_settings(f, tcp);
            Traffic::Arrivals {
                label,
                tcp: cfg,
                controller: tcp.controller.clone(),
                mean_interarrival: *mean_interarrival,
                start,
                stop: Time::ZERO + *stop,
                sizes: sizes.sizes.clone(),
            }
        }
        FilledTraffic::Cbr { copies, stop, udp } => {
            udp_traffic(f, copies, *stop, udp, UdpPattern::Cbr)
        }
        FilledTraffic::OnOff {
            copies,
            stop,
            udp,
            on_time,
            off_time,
            distribution,
        } => udp_traffic(
            f,
            copies,
            *stop,
            udp,
            UdpPattern::OnOff {
                mean_on: *on_time,
                mean_off: *off_time,
                distribution: *distribution,
            },
        ),
    };
    FlowPlan {
        entry,
        src: f.src.node,
        dst: f.dst.node,
        traffic,
    }
}

/// A TCP entry's label (its own, or its algorithms') and its engine settings.
fn tcp_settings(f: &FilledFlow, tcp: &TcpFlow) -> (String, TcpConfig) {
    let controller = &tcp.controller;
    let cfg = tcp_config(&tcp.tcp, controller.default_recovery());
    let label = f.label.clone().unwrap_or_else(|| {
        if controller.startup() == registry::DEFAULT_STARTUP {
            controller.cc().to_string()
        } else {
            format!("{}+{}", controller.cc(), controller.startup())
        }
    });
    (label, cfg)
}

/// A UDP entry's sources, labelled like TCP flows: the entry's label or its kind, `#k` on each
/// copy.
fn udp_traffic(
    f: &FilledFlow,
    copies: &Copies,
    stop: Duration,
    udp: &UdpFlow,
    pattern: UdpPattern,
) -> Traffic {
    let label = f
        .label
        .clone()
        .unwrap_or_else(|| f.kind().name().to_string());
    let sources = (0..copies.count)
        .map(|k| UdpPlan {
            label: copy_label(&label, k, copies.count),
            start: Time::ZERO + f.start + copies.stagger * k as u64,
            stop: Time::ZERO + stop,
        })
        .collect();
    Traffic::Udp {
        sources,
        rate: udp.rate,
        packet_bytes: udp.packet_size as u32,
        pattern,
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

/// The engine's TCP settings for a flow's filled TCP; `default_recovery` is the controller's
/// recovery for `recovery = "auto"` without SACK.
///
/// The stack is the recovery machinery the sender runs: `recovery = "prr"` (the default of
/// `stack = "linux"`) is Linux's (`tcp::Stack::Linux`), the others the ns-2 stack's RFC
/// recoveries. `tcp.stack` itself chooses the defaults of every other field.
/// A ratio of the scenario (`pacing_ss_ratio`) as the sysctl's whole percent.
fn percent(ratio: f64) -> u32 {
    (ratio * 100.0).round() as u32
}

pub fn tcp_config(t: &FilledTcp, default_recovery: &str) -> TcpConfig {
    let mss = t.mss as u32;
    let sack = t.sack;
    let ns2 = |recovery| Stack::Ns2 { recovery };
    let stack = match t.recovery {
        RecoveryText::Reno => ns2(Recovery::Reno),
        RecoveryText::Newreno => ns2(Recovery::NewReno),
        RecoveryText::Sack => ns2(Recovery::Sack),
        RecoveryText::Prr => Stack::Linux,
        RecoveryText::Auto if sack => ns2(Recovery::Sack),
        RecoveryText::Auto => match default_recovery {
            "reno" => ns2(Recovery::Reno),
            _ => ns2(Recovery::NewReno),
        },
    };
    TcpConfig {
        mss_bytes: mss,
        header_bytes: t.header as u32,
        ack_bytes: t.ack_size as u32,
        initial_window: t.initial_window.segments(mss),
        initial_ssthresh: match t.initial_ssthresh {
            Limitable::Unlimited => f64::INFINITY,
            Limitable::Is(Window::Bytes(b)) => b as f64 / mss as f64,
            Limitable::Is(w) => w.segments(mss) as f64,
        },
        receive_window: match t.receive_window {
            Limitable::Unlimited => u32::MAX,
            Limitable::Is(Window::Bytes(b)) => {
                (b / mss as u64).clamp(1, u32::MAX as u64 - 1) as u32
            }
            Limitable::Is(w) => w.segments(mss),
        },
        delayed_ack: t.delayed_ack,
        delayed_ack_timeout: t.delayed_ack_timeout,
        sack,
        stack,
        dupack_threshold: t.dupack_threshold,
        min_rto: t.min_rto,
        max_rto: t.max_rto,
        initial_rto: t.initial_rto,
        clock_granularity: t.clock_granularity,
        handshake: t.handshake,
        undo: t.undo,
        dsack: t.dsack,
        ecn: t.ecn,
        ecn_ca: false,
        frto: t.frto,
        restart_after_idle: t.restart_after_idle,
        metrics: t.metrics,
        metrics_ssthresh: t.metrics_ssthresh,
        tso_defer: t.tso_defer,
        pacing: match t.pacing {
            PacingText::None => Pacing::ByController,
            PacingText::Window => Pacing::Window,
            PacingText::Linux => Pacing::Linux,
            PacingText::InitialSpreading => Pacing::InitialSpreading,
        },
        // The sysctls apply to every socket (its sk_pacing_rate); the ratios are the
        // scenario's when Linux's pacing is asked for, the window over srtt in the window
        // mode, and Linux's defaults otherwise.
        pacing_ratios: match t.pacing {
            PacingText::Linux => PacingRatios {
                slow_start_percent: percent(t.pacing_ss_ratio),
                avoidance_percent: percent(t.pacing_ca_ratio),
            },
            PacingText::Window => PacingRatios::WINDOW,
            PacingText::None | PacingText::InitialSpreading => PacingRatios::LINUX,
        },
        ack_policy: match t.ack_policy {
            AckPolicyText::Rfc5681 => AckPolicy::Rfc5681,
            AckPolicyText::Linux => AckPolicy::Linux(LinuxAckConfig {
                hz: t.hz,
                window_clamp_bytes: match t.receive_window {
                    Limitable::Unlimited => None,
                    Limitable::Is(Window::Bytes(b)) => Some(b),
                    Limitable::Is(w) => Some(w.segments(mss) as u64 * mss as u64),
                },
                ..LinuxAckConfig::default()
            }),
        },
        loss_detection: match t.loss_detection {
            LossDetectionText::Dupthresh => LossDetection::DupThresh,
            LossDetectionText::Rack => LossDetection::Rack { tlp: false },
            LossDetectionText::RackTlp => LossDetection::Rack { tlp: true },
        },
        rto_algorithm: match t.rto {
            RtoText::Rfc6298 => RtoAlgorithm::Rfc6298,
            RtoText::Linux => RtoAlgorithm::Linux,
        },
    }
}
