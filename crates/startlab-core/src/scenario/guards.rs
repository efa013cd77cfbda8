//! Guard rails: scenarios that are valid but probably do not mean what they say.
//!
//! Each check yields a warning (the field it concerns and why), never an error; `--strict`
//! turns them into errors. They look at the resolved network and flows, so they see what the
//! run will actually do: the access links a flow crosses, the bottleneck of its path, its RTT.

use super::resolved::{ResolvedScenario, Traffic};
use super::ScenarioError;
use crate::net::{Limit, LinkId};
use crate::units::Rate;

/// Fewer packets of buffer than this at a bottleneck is probably a mistake.
const MIN_BUFFER_PACKETS: u32 = 4;
/// A run shorter than this many RTTs of its longest path shows little more than start-up.
const MIN_RTTS: f64 = 4.0;
/// Controllers that do not reduce for an ECN echo: BBR v1 (tcp_bbr.c's `bbr_ssthresh` keeps
/// ssthresh, and its `cong_control` sets cwnd whatever the CWR state).
const IGNORE_ECN: &[&str] = &["bbr"];

fn warning(path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        path: path.into(),
        message: message.into(),
    }
}

fn mbps(r: Rate) -> String {
    format!("{} Mbit/s", r.bps_f64() / 1e6)
}

/// The warnings of a resolved scenario, in a fixed order.
pub fn warnings(s: &ResolvedScenario) -> Vec<ScenarioError> {
    let net = &s.network;
    let mut out = Vec::new();
    let aliased = |l: LinkId| !net.link_aliases[l as usize].is_empty();
    let mut longest_rtt = 0.0f64;
    let mut buffers_checked = vec![false; net.links.len()];
    for plan in &s.flows {
        let Traffic::Tcp {
            connections,
            tcp,
            controller,
        } = &plan.traffic
        else {
            continue;
        };
        let at = format!("flows[{}]", plan.entry);
        if tcp.ecn && IGNORE_ECN.contains(&controller.cc()) {
            out.push(warning(
                format!("{at}.tcp.ecn"),
                format!(
                    "cc = \"{}\" does not reduce for an ECN echo (Linux's BBR v1 keeps its window through CWR): marks slow nothing down and the queue fills to its drops",
                    controller.cc()
                ),
            ));
        }
        let Some(path) = net.path(plan.src, plan.dst) else {
            continue;
        };
        let rtt = s.path_rtt(plan.src, plan.dst).as_secs_f64();
        longest_rtt = longest_rtt.max(rtt);
        // The bottleneck of the path: its slowest named link (bottleneck, hopN), else its
        // slowest link.
        let named: Vec<LinkId> = path.iter().copied().filter(|&l| aliased(l)).collect();
        let candidates = if named.is_empty() { &path } else { &named };
        let Some(&bottleneck) = candidates
            .iter()
            .min_by_key(|&&l| net.links[l as usize].params.rate)
        else {
            continue;
        };
        let rate = net.links[bottleneck as usize].params.rate;
        let name = |l: LinkId| net.link_names[l as usize].as_str();
        // An access link that does not feed the bottleneck faster than it drains.
        let first = path[0];
        if first != bottleneck && !aliased(first) && net.links[first as usize].params.rate <= rate {
            out.push(warning(
                &at,
                format!(
                    "the access link {} ({}) is not faster than the bottleneck {} ({}): packets queue and drop at the access link, and the bottleneck's buffer never fills",
                    name(first),
                    mbps(net.links[first as usize].params.rate),
                    name(bottleneck),
                    mbps(rate)
                ),
            ));
        }
        // A bottleneck buffer of a few packets.
        if !buffers_checked[bottleneck as usize] {
            buffers_checked[bottleneck as usize] = true;
            let wire = (tcp.mss_bytes + tcp.header_bytes) as u64;
            let packets = match net.links[bottleneck as usize].limit() {
                Limit::Packets(p) => p as u64,
                Limit::Bytes(b) => b / wire,
            };
            if packets < MIN_BUFFER_PACKETS as u64 {
                out.push(warning(
                    "topology",
                    format!(
                        "the buffer of {} holds {packets} packet(s) of {wire} B: below {MIN_BUFFER_PACKETS}, every burst of slow start is cut",
                        name(bottleneck)
                    ),
                ));
            }
        }
        // The path's BDP in packets.
        let bdp = rate.bps_f64() * rtt / 8.0 / (tcp.mss_bytes + tcp.header_bytes) as f64;
        if (tcp.receive_window as f64) < bdp {
            out.push(warning(
                format!("{at}.tcp.receive_window"),
                format!(
                    "{} segments is below the path's bandwidth-delay product ({bdp:.0} packets): the receiver, not the network, limits the flow",
                    tcp.receive_window
                ),
            ));
        }
        // Slow start from the initial window doubles per RTT at best: log2(BDP / IW) + 1 RTTs
        // before it can fill the path.
        let unlimited: Vec<_> = connections
            .iter()
            .filter(|c| c.size.is_unlimited() && c.stop.is_none())
            .collect();
        if let Some(c) = unlimited.first() {
            if tcp.initial_ssthresh.is_infinite() && bdp > tcp.initial_window as f64 {
                let rounds = (bdp / tcp.initial_window.max(1) as f64).log2() + 1.0;
                let needed = c.start.as_secs_f64() + rounds * rtt;
                if needed > s.duration.as_secs_f64() {
                    out.push(warning(
                        &at,
                        format!(
                            "slow start needs about {needed:.3} s to fill the path ({rounds:.1} RTTs of {:.1} ms from {} s); the run ends at {} s",
                            rtt * 1e3,
                            c.start.as_secs_f64(),
                            s.duration.as_secs_f64()
                        ),
                    ));
                }
            }
        }
    }
    if longest_rtt > 0.0 && s.duration.as_secs_f64() < MIN_RTTS * longest_rtt {
        out.push(warning(
            "duration",
            format!(
                "{} is shorter than {MIN_RTTS} RTTs of the longest path ({:.1} ms)",
                s.duration,
                longest_rtt * 1e3
            ),
        ));
    }
    out
}
