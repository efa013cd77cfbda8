//! The scenario's hosts as network namespaces, each joined to the link emulator by a TUN device.
//!
//! Every namespace is named `startlab-<pid>-<host>`; each holds one TUN device, `emu0`, created
//! by the emulator's process (so it disappears with that process), an address in
//! 198.18.0.0/15, and one /32 route per peer carrying the per-route TCP settings Linux offers
//! (`initcwnd`, `initrwnd`, `rto_min`, `window`, `quickack`). Namespace sysctls are written
//! inside the namespace (`ip netns exec … sysctl`); nothing of the root namespace is touched.
//! The namespaces are deleted when the [`Testbed`] is dropped, and [`remove_stale`] deletes
//! those of runs whose process is gone (a run killed with SIGKILL).

use crate::plan::{HostTcp, KernelPlan};
use crate::traffic::Host;
use startlab_core::net::{Network, NodeId, NodeKind};
use startlab_core::scenario::ScenarioError;
use std::collections::BTreeMap;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The prefix of every namespace a run creates.
pub const NAMESPACE_PREFIX: &str = "startlab-";
/// The TUN device inside every host's namespace.
pub const DEVICE: &str = "emu0";
const NETNS_DIR: &str = "/var/run/netns";

/// Hosts a kernel run builds at most (each is a network namespace).
pub const MAX_HOSTS: usize = 1000;

/// The address of the `i`-th host of a run in address block `block` (0 to 127): 1024
/// addresses from 198.18.0.0 + 1024 × `block`, the host part of each octet from 1 to 250
/// (198.18.0.0/15 is reserved for benchmarking, RFC 2544 §C.2.2; nothing else on the machine
/// uses it). Runs take turns through the blocks, so that a socket a killed run left behind
/// never has the address of a later run's sender.
pub fn host_addr(block: u32, i: usize) -> Ipv4Addr {
    // Block 0 is the simulator's numbering of a socket's addresses (`Tcb::ipv4_of`).
    Ipv4Addr::from(startlab_core::cc::Tcb::ipv4_of(i as u32) + (block % 128) * 1024)
}

/// The address block of the next run of this process.
fn next_block() -> u32 {
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::process::id().wrapping_mul(37).wrapping_add(run) % 128
}

/// Runs `ip ARGS`, with the error text if it fails.
pub fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("ip: {e} (iproute2 is needed for the kernel world)"),
        )
    })?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// A host of the testbed.
#[derive(Debug)]
pub struct TestbedHost {
    pub node: NodeId,
    pub host: Host,
    /// 0 for the dumbbell's sending side (`s*`), 1 for the receiving side (`r*`).
    pub side: usize,
    pub namespace: String,
}

/// The namespaces of a run; deleted when dropped.
#[derive(Debug)]
pub struct Testbed {
    pub hosts: Vec<TestbedHost>,
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for h in &self.hosts {
            let _ = ip(&["netns", "del", &h.namespace]);
        }
    }
}

/// The per-route settings of one route (`ip route add ADDR/32 dev emu0 …`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RouteOptions {
    initcwnd: Option<u32>,
    initrwnd: Option<u32>,
    rto_min_ms: Option<u64>,
    window: Option<u64>,
    quickack: bool,
}

impl RouteOptions {
    fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        let mut put = |k: &str, v: String| {
            a.push(k.to_string());
            a.push(v);
        };
        if let Some(w) = self.initcwnd {
            put("initcwnd", w.to_string());
        }
        if let Some(w) = self.initrwnd {
            put("initrwnd", w.to_string());
        }
        if let Some(ms) = self.rto_min_ms {
            put("rto_min", format!("{ms}ms"));
        }
        if let Some(w) = self.window {
            put("window", w.to_string());
        }
        if self.quickack {
            put("quickack", "1".into());
        }
        a
    }
}

/// The namespace sysctls of a host, from the TCP settings of the entries it takes part in.
fn sysctls(t: &HostTcp) -> Vec<(String, String)> {
    let (ss, ca) = t.pacing_ratios;
    [
        // Only IPv4 crosses the emulator.
        ("net.ipv6.conf.all.disable_ipv6", "1".to_string()),
        ("net.ipv6.conf.default.disable_ipv6", "1".to_string()),
        ("net.ipv4.tcp_sack", u8::from(t.sack).to_string()),
        (
            "net.ipv4.tcp_timestamps",
            u8::from(t.timestamps).to_string(),
        ),
        ("net.ipv4.tcp_reordering", t.dupack_threshold.to_string()),
        ("net.ipv4.tcp_pacing_ss_ratio", ss.to_string()),
        ("net.ipv4.tcp_pacing_ca_ratio", ca.to_string()),
        // Buffers large enough that no flow is limited by its socket buffers (checked from
        // TCP_INFO after the run); the receive window still autotunes up to them.
        ("net.ipv4.tcp_rmem", "4096 131072 268435456".to_string()),
        ("net.ipv4.tcp_wmem", "4096 16384 268435456".to_string()),
        // Each connection starts from the scenario's settings, not from what an earlier
        // connection to the same peer left in the route cache, unless tcp.metrics asks for it.
        (
            "net.ipv4.tcp_no_metrics_save",
            u8::from(!t.metrics).to_string(),
        ),
        (
            "net.ipv4.tcp_no_ssthresh_metrics_save",
            u8::from(!t.metrics_ssthresh).to_string(),
        ),
        // tcp.ecn: ask for ECN (RFC 3168) on connect, or Linux's default of only accepting it.
        (
            "net.ipv4.tcp_ecn",
            if t.ecn { "1" } else { "2" }.to_string(),
        ),
        // tcp.restart_after_idle
        (
            "net.ipv4.tcp_slow_start_after_idle",
            u8::from(t.slow_start_after_idle).to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn conflict(entry: usize, what: &str) -> ScenarioError {
    ScenarioError {
        path: format!("flows[{entry}].tcp"),
        message: format!(
            "its {what} differs from another entry's on the same host; the kernel sets it per host"
        ),
    }
}

/// What the testbed needs from the plan, checked: each host's sysctls and each route's options.
pub struct Layout {
    /// Per host node that takes part in a connection: its side and sysctls.
    hosts: BTreeMap<NodeId, (usize, Vec<(String, String)>)>,
    /// Per (host, peer): the route's options.
    routes: BTreeMap<(NodeId, NodeId), RouteOptions>,
}

impl Layout {
    /// The (host, peer) pairs that send to each other: one per route.
    pub fn pairs(&self) -> Vec<(NodeId, NodeId)> {
        self.routes.keys().copied().collect()
    }
}

/// The side of a host: the sending side (0) for `s0`, `ls0`, `cs1_0` (the dumbbell's and
/// parallel paths' senders, the parking lot's long and cross senders), the receiving side (1)
/// for `r0`, `lr0`, `cr1_0`. The letter before the index decides.
fn side(net: &Network, node: NodeId) -> usize {
    let name = net.nodes[node as usize]
        .name
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '_');
    usize::from(!name.ends_with('s'))
}

/// Per host: its side of the topology, its sysctls as (name, value), and the flow entry that
/// set them.
type HostSettings = (usize, Vec<(String, String)>, usize);

/// Lays the plan's connections out on hosts and routes, refusing by field what one host
/// cannot hold (two entries asking for different sysctls on it).
pub fn layout(net: &Network, plan: &KernelPlan) -> Result<Layout, ScenarioError> {
    let mut hosts: BTreeMap<NodeId, HostSettings> = BTreeMap::new();
    let mut routes: BTreeMap<(NodeId, NodeId), RouteOptions> = BTreeMap::new();
    for c in &plan.connections {
        let t = plan.tcp[c.entry]
            .as_ref()
            .expect("a connection comes from a TCP entry");
        let node = |name: &str| {
            net.find_node(name)
                .filter(|&n| net.nodes[n as usize].kind == NodeKind::Host)
                .ok_or_else(|| ScenarioError {
                    path: format!("flows[{}]", c.entry),
                    message: format!("\"{name}\" is not a host of the topology"),
                })
        };
        let (src, dst) = (node(&c.src)?, node(&c.dst)?);
        if side(net, src) == side(net, dst) {
            return Err(ScenarioError {
                path: format!("flows[{}].dst", c.entry),
                message: format!(
                    "{} and {} are on the same side; the kernel testbed runs flows between a sending host (s*, ls*, cs*) and a receiving host (r*, lr*, cr*)",
                    c.src, c.dst
                ),
            });
        }
        let want = sysctls(t);
        for n in [src, dst] {
            match hosts.get(&n) {
                Some((_, have, _)) if *have != want => return Err(conflict(c.entry, "sysctl set")),
                Some(_) => {}
                None => {
                    hosts.insert(n, (side(net, n), want.clone(), c.entry));
                }
            }
        }
        let min_rto_ms = (t.min_rto.as_nanos() / 1_000_000).max(1);
        let sender = RouteOptions {
            // startlab's ports set the initial window per connection, in their init.
            initcwnd: (!c.reports).then_some(t.initial_window),
            rto_min_ms: Some(min_rto_ms),
            ..RouteOptions::default()
        };
        let receiver = RouteOptions {
            // The receiver's first advertised window must not hold back the initial window.
            initrwnd: Some(t.initial_window.max(10)),
            rto_min_ms: Some(min_rto_ms),
            window: t.receive_window_bytes,
            quickack: t.quickack,
            ..RouteOptions::default()
        };
        for (key, opts) in [((src, dst), sender), ((dst, src), receiver)] {
            let merged = match routes.get(&key) {
                None => opts,
                Some(have) => {
                    let pick = |a: Option<u64>,
                                b: Option<u64>|
                     -> Result<Option<u64>, ScenarioError> {
                        match (a, b) {
                            (Some(x), Some(y)) if x != y => Err(conflict(c.entry, "route setting")),
                            (x, y) => Ok(x.or(y)),
                        }
                    };
                    RouteOptions {
                        initcwnd: pick(have.initcwnd.map(u64::from), opts.initcwnd.map(u64::from))?
                            .map(|x| x as u32),
                        initrwnd: pick(have.initrwnd.map(u64::from), opts.initrwnd.map(u64::from))?
                            .map(|x| x as u32),
                        rto_min_ms: pick(have.rto_min_ms, opts.rto_min_ms)?,
                        window: pick(have.window, opts.window)?,
                        quickack: have.quickack || opts.quickack,
                    }
                }
            };
            routes.insert(key, merged);
        }
    }
    if hosts.len() > MAX_HOSTS {
        return Err(ScenarioError {
            path: "topology".into(),
            message: format!(
                "{} hosts take part: the kernel testbed builds at most {MAX_HOSTS} (each is a network namespace)",
                hosts.len()
            ),
        });
    }
    // UDP sources: their hosts keep the settings of a TCP entry on them, or Linux's defaults;
    // their routes carry no options.
    for d in &plan.datagrams {
        let node = |name: &str| net.find_node(name).expect("a datagram's hosts exist");
        let (src, dst) = (node(&d.src), node(&d.dst));
        if side(net, src) == side(net, dst) {
            return Err(ScenarioError {
                path: format!("flows[{}].dst", d.entry),
                message: format!(
                    "{} and {} are on the same side; the kernel testbed runs flows between a sending host (s*, ls*, cs*) and a receiving host (r*, lr*, cr*)",
                    d.src, d.dst
                ),
            });
        }
        for n in [src, dst] {
            hosts
                .entry(n)
                .or_insert_with(|| (side(net, n), sysctls(&HostTcp::LINUX), d.entry));
        }
        routes.entry((src, dst)).or_default();
        routes.entry((dst, src)).or_default();
    }
    // The emulator forwards each side's packets in a thread of its own, so no link may be on
    // routes of both sides; refuse here, before anything is created.
    let sides: Vec<(NodeId, usize)> = hosts.iter().map(|(&n, (s, _, _))| (n, *s)).collect();
    let pairs: Vec<(NodeId, NodeId)> = routes.keys().copied().collect();
    startlab_emu::emulator::check_sides(net, &sides, &pairs).map_err(|message| ScenarioError {
        path: "topology".into(),
        message,
    })?;
    Ok(Layout {
        hosts: hosts
            .into_iter()
            .map(|(n, (s, v, _))| (n, (s, v)))
            .collect(),
        routes,
    })
}

fn netns_path(name: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(name)
}

/// Builds the namespaces and devices of `layout`. Returns the testbed (deleted when dropped)
/// and each host's TUN descriptor, in the order of `Testbed::hosts`.
pub fn build(net: &Network, layout: &Layout) -> io::Result<(Testbed, Vec<OwnedFd>)> {
    let pid = std::process::id();
    let block = next_block();
    let mut testbed = Testbed { hosts: Vec::new() };
    let mut fds = Vec::new();
    for (i, (&node, (side, _))) in layout.hosts.iter().enumerate() {
        let name = &net.nodes[node as usize].name;
        let namespace = format!("{NAMESPACE_PREFIX}{pid}-{name}");
        ip(&["netns", "add", &namespace])?;
        testbed.hosts.push(TestbedHost {
            node,
            host: Host {
                name: name.clone(),
                netns: netns_path(&namespace),
                addr: host_addr(block, i),
            },
            side: *side,
            namespace,
        });
    }
    for (h, (_, sysctl)) in testbed.hosts.iter().zip(layout.hosts.values()) {
        let ns = h.namespace.as_str();
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        fds.push(startlab_emu::tun::create(&h.host.netns, DEVICE)?);
        let addr = format!("{}/32", h.host.addr);
        ip(&["-n", ns, "addr", "add", &addr, "dev", DEVICE])?;
        // A transmit queue long enough that the host's own device never drops (TCP Small
        // Queues keeps it short anyway); the emulator's queues are the bottleneck's.
        ip(&[
            "-n",
            ns,
            "link",
            "set",
            DEVICE,
            "mtu",
            "1500",
            "txqueuelen",
            "10000",
            "up",
        ])?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns, "sysctl", "-q", "-w"]);
        for (k, v) in sysctl {
            cmd.arg(format!("{k}={v}"));
        }
        let out = cmd.output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "sysctl in {ns}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    let addr_of = |n: NodeId| {
        testbed
            .hosts
            .iter()
            .find(|h| h.node == n)
            .map(|h| (h.namespace.clone(), h.host.addr))
    };
    for ((from, to), opts) in &layout.routes {
        let (Some((ns, _)), Some((_, peer))) = (addr_of(*from), addr_of(*to)) else {
            continue;
        };
        let dest = format!("{peer}/32");
        let mut args: Vec<String> = ["-n", &ns, "route", "add", &dest, "dev", DEVICE]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(opts.args());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ip(&args)?;
    }
    Ok((testbed, fds))
}

/// The namespaces under `/var/run/netns` left by runs whose process is gone; deletes them and
/// returns their names.
pub fn remove_stale() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return removed;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(NAMESPACE_PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if ip(&["netns", "del", &name]).is_ok() {
            removed.push(name);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_addresses_stay_in_the_benchmarking_range() {
        assert_eq!(host_addr(0, 0), Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(host_addr(0, 249), Ipv4Addr::new(198, 18, 0, 250));
        assert_eq!(host_addr(0, 250), Ipv4Addr::new(198, 18, 1, 1));
        assert_eq!(host_addr(1, 0), Ipv4Addr::new(198, 18, 4, 1));
        assert_eq!(
            host_addr(127, MAX_HOSTS - 1),
            Ipv4Addr::new(198, 19, 255, 250)
        );
        let mut seen = std::collections::HashSet::new();
        for block in 0..128 {
            for i in 0..MAX_HOSTS {
                let a = host_addr(block, i);
                assert_eq!(
                    u32::from(a) >> 17,
                    u32::from(Ipv4Addr::new(198, 18, 0, 0)) >> 17
                );
                assert!(seen.insert(a), "{a} twice");
            }
        }
    }

    #[test]
    fn route_options_are_written_as_ip_route_takes_them() {
        let o = RouteOptions {
            initcwnd: Some(10),
            initrwnd: Some(10),
            rto_min_ms: Some(200),
            window: Some(65535),
            quickack: true,
        };
        assert_eq!(
            o.args().join(" "),
            "initcwnd 10 initrwnd 10 rto_min 200ms window 65535 quickack 1"
        );
    }
}
