//! `startlab kernel run`: a resolved scenario on Linux's own TCP, end to end.
//!
//! The steps, in order: check the machine ([`preflight`]); plan the scenario for the kernel
//! ([`crate::plan`]) and lay it out on hosts and routes ([`crate::testbed::layout`]), refusing
//! by field what the kernel cannot honour, before anything is created; take the machine's run
//! lock and remove what killed runs left; set the global `tcp_cubic` parameters the plan needs
//! (restored afterwards); build the namespaces and TUN devices; start the trace and the link
//! emulator; run the connections at their times; and turn the trace, the connections'
//! `TCP_INFO` and the emulator's links into the simulator's tables. Everything created is
//! removed when this function returns, whether it succeeds, fails or is interrupted.

use crate::bpf::{ObjectImage, Registered, ECN_ECHO_NAME};
use crate::counters::{hystart_between, netstat, sample_hystart};
use crate::diag::{self, DiagReading};
use crate::guard::{RunLock, LOCK_FILE};
use crate::plan::{bpf_name, plan, Connection, HostTcp, KernelPlan};
use crate::sampler::Sampler;
use crate::series::{CounterReading, HystartEvidence};
use crate::tables::{tables, RunFacts};
use crate::testbed;
use crate::trace::{self, Tracefs, Tracer};
use crate::traffic::{
    aborted, monotonic_ns, ping, run_tcp, run_udp, sleep_until, PingJob, TcpJob, TcpOutcome,
    UdpJob, UdpOutcome, TIMESTAMP_OPTION_BYTES,
};
use startlab_core::measure::recorder::link_summaries;
use startlab_core::measure::{Recorder, Report, RequestRow, Requests, RunStats};
use startlab_core::scenario::{ResolvedScenario, ScenarioError};
use startlab_core::traffic::{requests_stream, RequestDraws};
use startlab_emu::{Attachment, Emulator, EmulatorConfig, EmulatorReport};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// Why a kernel run did not happen or did not finish.
#[derive(Debug)]
pub enum KernelError {
    /// A field of the scenario the kernel cannot honour (exit status 2).
    Refused(ScenarioError),
    /// The machine cannot run the kernel world, or another run holds it (exit status 2).
    Unavailable(String),
    /// The run was interrupted (Ctrl-C, SIGTERM); everything it created is removed.
    Interrupted,
    /// Something failed while running.
    Failed(String),
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::Refused(e) => write!(f, "{e}"),
            KernelError::Unavailable(m) | KernelError::Failed(m) => f.write_str(m),
            KernelError::Interrupted => f.write_str("the kernel run was interrupted"),
        }
    }
}

impl std::error::Error for KernelError {}

fn failed(what: &str) -> impl FnOnce(std::io::Error) -> KernelError + '_ {
    move |e| KernelError::Failed(format!("{what}: {e}"))
}

/// What this machine must have for the kernel world, or what it lacks.
pub fn preflight() -> Result<(), KernelError> {
    let missing = |m: String| Err(KernelError::Unavailable(m));
    // SAFETY: no arguments, no side effects.
    if unsafe { libc::geteuid() } != 0 {
        return missing("the kernel world needs root (network namespaces, TUN devices, tracefs, module parameters)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return missing(
            "/dev/net/tun is missing: this kernel has no TUN devices (CONFIG_TUN)".into(),
        );
    }
    if std::process::Command::new("ip").arg("-V").output().is_err() {
        return missing("the `ip` command (iproute2) is not installed".into());
    }
    if available_controls().is_empty() {
        return missing(
            "/proc/sys/net/ipv4/tcp_available_congestion_control is not readable".into(),
        );
    }
    Ok(())
}

/// The congestion controls this kernel has now (built in, loaded, or registered `struct_ops`).
pub fn available_controls() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// `uname -r`.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// What only the kernel world has, written beside the tables.
#[derive(Clone, Debug, Default)]
pub struct KernelFacts {
    pub kernel_release: String,
    /// What Linux does whatever the scenario says ([`KernelPlan::differences`]).
    pub differences: Vec<String>,
    /// Per connection, in flow order.
    pub connections: Vec<ConnectionFacts>,
    pub emulator: EmulatorFacts,
    /// Trace events lost to full buffers (0 in a good run).
    pub trace_overruns: u64,
    /// The global settings changed for the run and restored after it: (setting, value used).
    pub global_settings: Vec<(String, String)>,
    /// What killed runs had left and this run removed or restored.
    pub cleaned: Vec<String>,
    pub udp: Vec<UdpFacts>,
    /// Round-trip times of the ping probe (ns; `None`: no reply), if it was asked for.
    pub pings: Vec<Option<u64>>,
    /// startlab's eBPF controllers registered for the run.
    pub bpf_controllers: Vec<BpfFacts>,
}

/// One eBPF controller of a run.
#[derive(Clone, Debug, Default)]
pub struct BpfFacts {
    /// The name it was registered under (the connections' `cc`).
    pub name: String,
    /// The scenario's names.
    pub cc: String,
    pub startup: String,
    pub pacing: String,
    /// Events the run's controllers reported (phases and exits), and those this one lost to a
    /// full ring buffer (0 in a good run).
    pub events: u64,
    pub lost_events: u64,
}

#[derive(Clone, Debug, Default)]
pub struct ConnectionFacts {
    pub flow: u32,
    /// The kernel's congestion control.
    pub cc: String,
    /// Linux's internal pacing was on, as `TCP_INFO` says (a maximum pacing rate was set).
    pub paced: bool,
    /// `TCP_INFO` at the end: the time the connection was limited by the receiver's window and
    /// by its send buffer (ns), its last cwnd and ssthresh (segments).
    pub rwnd_limited_ns: u64,
    pub sndbuf_limited_ns: u64,
    pub final_cwnd: u32,
    pub final_ssthresh: u32,
    pub pacing_rate_bps: f64,
    /// The MSS the connection sent with (`TCP_INFO` snd_mss), bytes.
    pub mss: u32,
}

/// The emulator's own accuracy over the run.
#[derive(Clone, Debug, Default)]
pub struct EmulatorFacts {
    pub packets: u64,
    pub lateness_mean_ns: f64,
    pub lateness_p50_ns: u64,
    pub lateness_p99_ns: u64,
    pub lateness_p999_ns: u64,
    pub lateness_max_ns: u64,
    /// Packets that left 1 ms or more after their schedule.
    pub late_1ms_packets: u64,
    /// Hypervisor steal over the run, summed over CPUs.
    pub steal_ns: Option<u64>,
    pub wake_latency_held: bool,
    /// Packets that were not IPv4 between the two sides (dropped), and failed writes.
    pub foreign_packets: u64,
    pub write_errors: u64,
}

impl EmulatorFacts {
    pub fn of(report: &EmulatorReport) -> EmulatorFacts {
        let l = report.lateness();
        EmulatorFacts {
            packets: l.count(),
            lateness_mean_ns: l.mean_ns(),
            lateness_p50_ns: l.quantile_ns(0.5),
            lateness_p99_ns: l.quantile_ns(0.99),
            lateness_p999_ns: l.quantile_ns(0.999),
            lateness_max_ns: l.max_ns(),
            late_1ms_packets: l.at_least(1_000_000),
            steal_ns: report.steal_ns,
            wake_latency_held: report.wake_latency_held,
            foreign_packets: report.sides.iter().map(|s| s.foreign_packets).sum(),
            write_errors: report.sides.iter().map(|s| s.write_errors).sum(),
        }
    }
}

/// How to run: the emulator's settings, and optional probes.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub emulator: EmulatorConfig,
    /// ICMP echo requests between two hosts of the scenario while it runs.
    pub ping: Option<PingSpec>,
}

#[derive(Clone, Debug)]
pub struct PingSpec {
    /// Host names of the scenario (`s0`, `r0`).
    pub src: String,
    pub dst: String,
    pub count: u32,
    /// The first request's time (from the run's start), and the pause between a reply and the
    /// next request.
    pub start: startlab_core::time::Duration,
    pub interval: startlab_core::time::Duration,
    /// ICMP payload bytes (56 as ping sends).
    pub payload: usize,
}

/// What a UDP source's receiver saw.
#[derive(Clone, Debug, Default)]
pub struct UdpFacts {
    pub flow: u32,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    /// From the first packet received to the last, ns from the run's start.
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    /// The rate packets arrived at from a quarter into the source's active time (when a
    /// saturated link's queue has built) to the last packet, bit/s of whole IP packets.
    pub received_rate_bps: Option<f64>,
    /// Sends the sending host refused (socket or device queue full).
    pub send_errors: u64,
    /// Packets delivered to the receiving host that its socket dropped, its buffer full.
    pub socket_drops: u64,
    /// Bytes of whole IP packets received in each 100 ms from the run's start.
    pub received_bytes_per_100ms: Vec<u64>,
}

/// A finished kernel run: the simulator's tables and what only the kernel world has.
pub struct KernelRun {
    pub report: Report,
    pub facts: KernelFacts,
}

/// The `tcp_cubic` module parameters of a plan, as (file, value).
fn cubic_settings(p: &KernelPlan) -> Vec<(String, String)> {
    let Some(m) = &p.cubic else {
        return Vec::new();
    };
    [
        ("hystart", m.hystart),
        ("hystart_detect", m.hystart_detect),
        ("hystart_low_window", m.hystart_low_window),
        ("hystart_ack_delta_us", m.hystart_ack_delta_us),
        ("fast_convergence", m.fast_convergence),
        ("tcp_friendliness", m.tcp_friendliness),
        ("beta", m.beta),
    ]
    .into_iter()
    .map(|(k, v)| {
        (
            format!("/sys/module/tcp_cubic/parameters/{k}"),
            v.to_string(),
        )
    })
    .collect()
}

/// Takes the machine's run lock and removes what killed runs left: the global settings they
/// changed, their namespaces (and with them their devices) and their trace instances.
fn take_machine() -> Result<(RunLock, Tracefs, Vec<String>), KernelError> {
    let (lock, restored) = RunLock::acquire(Path::new(LOCK_FILE))
        .map_err(|e| KernelError::Unavailable(e.to_string()))?;
    let mut cleaned: Vec<String> = restored
        .into_iter()
        .map(|(p, v)| format!("restored {} = {v}", p.display()))
        .collect();
    cleaned.extend(
        testbed::remove_stale()
            .into_iter()
            .map(|n| format!("namespace {n}")),
    );
    let tracefs = Tracefs::ensure().map_err(failed("tracefs"))?;
    cleaned.extend(
        trace::remove_stale(&tracefs.root)
            .unwrap_or_default()
            .into_iter()
            .map(|n| format!("trace instance {n}")),
    );
    Ok((lock, tracefs, cleaned))
}

/// `startlab kernel clean`: removes what killed runs left; returns what it removed.
pub fn clean() -> Result<Vec<String>, KernelError> {
    take_machine().map(|(_, _, cleaned)| cleaned)
}

/// How long before the run's time 0 the testbed is built and the trace started.
const LEAD_NS: u64 = 300_000_000;

/// Runs `s` on the kernel. Refusals come before anything is created.
pub fn run(s: &ResolvedScenario, options: &RunOptions) -> Result<KernelRun, KernelError> {
    let config = options.emulator.clone();
    preflight()?;
    let available = available_controls();
    let plan = plan(s, &available).map_err(KernelError::Refused)?;
    let layout = testbed::layout(&s.network, &plan).map_err(KernelError::Refused)?;
    let (mut lock, tracefs, cleaned) = take_machine()?;
    let mut facts = KernelFacts {
        kernel_release: kernel_release(),
        differences: plan.differences.clone(),
        cleaned,
        ..KernelFacts::default()
    };
    for (path, value) in cubic_settings(&plan) {
        lock.set_global(Path::new(&path), &value)
            .map_err(failed("tcp_cubic parameters"))?;
        facts.global_settings.push((path, value));
    }
    // startlab's eBPF controllers, registered for this run only (dropped at its end, and by the
    // kernel if the process dies).
    let registered = register_controllers(&plan)?;
    let (bed, fds) = testbed::build(&s.network, &layout).map_err(failed("testbed"))?;
    let host = |name: &str| {
        bed.hosts
            .iter()
            .find(|h| h.host.name == name)
            .expect("every connection's host is in the testbed")
    };
    // Ports: the hosts are the run's own, so fixed numbers cannot clash with anything; the
    // trace (global to the machine) is filtered on the senders' ports and the run lock keeps
    // other runs away.
    let src_port = startlab_core::cc::Tcb::local_port;
    let ports: Vec<u16> = plan.connections.iter().map(|c| src_port(c.flow)).collect();
    let mut tracer =
        Tracer::start(&tracefs.root, "run", &ports, 16_384).map_err(failed("trace"))?;
    let attachments: Vec<Attachment> = bed
        .hosts
        .iter()
        .zip(fds)
        .map(|(h, fd)| Attachment {
            node: h.node,
            addr: h.host.addr,
            fd,
            side: h.side,
        })
        .collect();
    // HyStart's detections are counted per namespace: read each sender's once, before and
    // after, for the connections alone in theirs.
    let alone: Vec<&str> = plan
        .connections
        .iter()
        .map(|c| c.src.as_str())
        .filter(|src| plan.connections.iter().filter(|o| o.src == *src).count() == 1)
        .collect();
    let counters_before: BTreeMap<&str, _> = alone
        .iter()
        .filter_map(|&src| netstat(&host(src).host).ok().map(|c| (src, c)))
        .collect();
    // A namespace several flows of the kernel's cubic share is read every 5 ms through the run,
    // so that each flow's HyStart exit is matched with the counts around it.
    // One sampler per namespace, however its connections are ordered in the plan.
    let shared: std::collections::BTreeSet<&str> = plan
        .connections
        .iter()
        .filter(|c| c.cc == "cubic" && !alone.contains(&c.src.as_str()))
        .map(|c| c.src.as_str())
        .collect();
    let samplers: Vec<(&str, Sampler<CounterReading>)> = shared
        .iter()
        .map(|&src| (src, sample_hystart(&host(src).host, 5_000_000)))
        .collect();
    // BBR reports its model (bandwidth, min RTT, gains) to sock_diag only, and a controller
    // with cong_control (BBR, an eBPF port of a model-based one) sets the pacing rate that
    // tcp_info reports: each namespace with such a flow is dumped every 10 ms, keeping the
    // sockets with a pacing rate (those of the other flows are not matched to a connection).
    let model_hosts: std::collections::BTreeSet<&str> = plan
        .connections
        .iter()
        .filter(|c| {
            c.cc == "bbr"
                || c.bpf.is_some_and(|i| {
                    plan.controllers[i].image.struct_ops.as_deref() == Some("startlab_model")
                })
        })
        .map(|c| c.src.as_str())
        .collect();
    let diag_samplers: Vec<Sampler<DiagReading>> = model_hosts
        .iter()
        .map(|&src| {
            diag::sample(&host(src).host, 10_000_000, |r| {
                r.bbr.is_some() || r.pacing_rate > 0
            })
        })
        .collect();
    let t0 = monotonic_ns() + LEAD_NS;
    let recorder = Recorder::new(s.measure.clone(), s.network.links.len(), s.end());
    let emulator = Emulator::start(
        s.network.clone(),
        recorder,
        attachments,
        &layout.pairs(),
        config,
        t0,
        s.end(),
    )
    .map_err(failed("link emulator"))?;
    let jobs: Vec<TcpJob> = plan
        .connections
        .iter()
        .map(|c| TcpJob {
            flow: c.flow,
            src: host(&c.src).host.clone(),
            dst: host(&c.dst).host.clone(),
            src_port: src_port(c.flow),
            dst_port: startlab_core::cc::Tcb::peer_port(c.flow),
            cc: c.cc.clone(),
            receiver_cc: c.receiver_cc.clone(),
            start_ns: t0 + c.start.as_nanos(),
            stop_ns: t0 + c.stop.as_nanos(),
            bytes: c.bytes,
            // The simulator's draws: the same stream of the same seed.
            requests: c.requests.as_ref().map(|r| {
                RequestDraws::new(r.spec.clone(), requests_stream(s.seed, r.entry, r.copy))
            }),
            slow_start_after_idle: plan.tcp[c.entry]
                .as_ref()
                .is_none_or(|t| t.slow_start_after_idle),
            graceful_close: plan.tcp[c.entry].as_ref().is_some_and(|t| t.metrics)
                || startlab_core::cc::registry::SAVES_PATH_STATE.contains(&c.startup.as_str()),
            paced: c.paced,
            spread: c.spread,
            maxseg: plan.tcp[c.entry].as_ref().map_or(
                HostTcp::LINUX.mss_bytes + TIMESTAMP_OPTION_BYTES,
                |t| {
                    t.mss_bytes
                        + if t.timestamps {
                            TIMESTAMP_OPTION_BYTES
                        } else {
                            0
                        }
                },
            ),
        })
        .collect();
    let udp_jobs: Vec<UdpJob> = plan
        .datagrams
        .iter()
        .map(|d| UdpJob {
            flow: d.flow,
            src: host(&d.src).host.clone(),
            dst: host(&d.dst).host.clone(),
            src_port: src_port(d.flow),
            dst_port: startlab_core::cc::Tcb::peer_port(d.flow),
            source: d.source.clone(),
            t0_ns: t0,
        })
        .collect();
    let udp = std::thread::spawn(move || run_udp(&udp_jobs));
    let pinger = options.ping.as_ref().map(|p| {
        let job = PingJob {
            src: host(&p.src).host.clone(),
            dst: host(&p.dst).host.addr,
            count: p.count,
            start_ns: t0 + p.start.as_nanos(),
            interval_ns: p.interval.as_nanos(),
            payload: p.payload,
        };
        std::thread::spawn(move || ping(&job))
    });
    let outcomes = run_tcp(&jobs);
    if let Some(p) = pinger {
        facts.pings = p
            .join()
            .map_err(|_| KernelError::Failed("the ping probe panicked".into()))?
            .map_err(failed("ping"))?;
    }
    let udp = udp
        .join()
        .map_err(|_| KernelError::Failed("the UDP traffic panicked".into()))?;
    let senders: Vec<(std::net::Ipv4Addr, u16)> =
        jobs.iter().map(|j| (j.src.addr, j.src_port)).collect();
    sleep_until(t0 + s.duration.as_nanos());
    let readings: BTreeMap<&str, Vec<CounterReading>> = samplers
        .into_iter()
        .filter_map(|(src, sampler)| sampler.finish().ok().map(|r| (src, r)))
        .collect();
    let mut diag: Vec<DiagReading> = Vec::new();
    for sampler in diag_samplers {
        diag.extend(sampler.finish().map_err(failed("sock_diag"))?);
    }
    diag.sort_by_key(|r| r.time_ns);
    let emulated = emulator.finish().map_err(failed("link emulator"))?;
    let records = tracer.records().map_err(failed("trace"))?;
    let bpf_events: Vec<startlab_bpf::events::Event> =
        registered.iter().flat_map(|r| r.events()).collect();
    facts.bpf_controllers = registered
        .iter()
        .zip(&plan.controllers)
        .map(|(r, c)| BpfFacts {
            name: r.name.clone(),
            cc: c.spec.cc.clone(),
            startup: c.spec.startup.clone(),
            pacing: c.spec.pacing.clone(),
            events: bpf_events.len() as u64,
            lost_events: r.lost_events(),
        })
        .collect();
    // A user's global that names its program's exit, as the run left it.
    let program_exits: Vec<Option<String>> = registered
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let program = plan
                .connections
                .iter()
                .find(|c| c.bpf == Some(k))
                .and_then(|c| c.program.as_deref())?;
            r.exit_reason(program)
        })
        .collect();
    drop(registered);
    facts.trace_overruns = tracer.overruns().unwrap_or(0);
    drop(tracer);
    if aborted() {
        return Err(KernelError::Interrupted);
    }
    if let Some(e) = outcomes
        .iter()
        .map(|o| &o.error)
        .chain(udp.iter().map(|o| &o.error))
        .find_map(|e| e.clone())
    {
        return Err(KernelError::Failed(format!("a connection failed: {e}")));
    }
    if let Some(e) = emulated.sides.iter().find_map(|s| s.error.clone()) {
        return Err(KernelError::Failed(format!(
            "the link emulator stopped: {e}"
        )));
    }
    let hystart: Vec<HystartEvidence> = plan
        .connections
        .iter()
        .map(|c| {
            if let Some(r) = readings.get(c.src.as_str()) {
                return HystartEvidence::Readings(r);
            }
            let run = counters_before.get(c.src.as_str()).and_then(|before| {
                let after = netstat(&host(&c.src).host).ok()?;
                Some(hystart_between(before, &after))
            });
            run.map_or(HystartEvidence::None, HystartEvidence::Run)
        })
        .collect();
    drop(bed);
    let report = assemble(
        s,
        &plan,
        &outcomes,
        &udp,
        &senders,
        t0,
        &hystart,
        &records,
        &bpf_events,
        &program_exits,
        &diag,
        emulated,
        &mut facts,
    );
    Ok(KernelRun { report, facts })
}

/// Registers every eBPF controller of the plan under its name.
fn register_controllers(plan: &KernelPlan) -> Result<Vec<Registered>, KernelError> {
    if plan.controllers.is_empty() {
        return Ok(Vec::new());
    }
    let mut registered = plan
        .controllers
        .iter()
        .enumerate()
        .map(|(k, c)| Registered::new(&c.image, &bpf_name(k)).map_err(KernelError::Failed))
        .collect::<Result<Vec<_>, _>>()?;
    // DCTCP's receiving half, for the receivers of the flows whose controller needs ECN.
    if plan
        .connections
        .iter()
        .any(|c| c.receiver_cc.as_deref() == Some(ECN_ECHO_NAME))
    {
        let image = ObjectImage::ecn_echo().map_err(KernelError::Failed)?;
        registered.push(Registered::new(&image, ECN_ECHO_NAME).map_err(KernelError::Failed)?);
    }
    Ok(registered)
}

/// The simulator's tables of a kernel run.
#[allow(clippy::too_many_arguments)]
fn assemble(
    s: &ResolvedScenario,
    plan: &KernelPlan,
    outcomes: &[TcpOutcome],
    udp: &[UdpOutcome],
    senders: &[(std::net::Ipv4Addr, u16)],
    t0: u64,
    hystart: &[HystartEvidence],
    records: &trace::Records,
    bpf_events: &[startlab_bpf::events::Event],
    program_exits: &[Option<String>],
    diag: &[DiagReading],
    emulated: EmulatorReport,
    facts: &mut KernelFacts,
) -> Report {
    let end_ns = t0 + s.duration.as_nanos();
    let (flow_series, flows) = tables(
        &RunFacts {
            connections: &plan.connections,
            outcomes,
            senders,
            start_ns: t0,
            end_ns,
            hystart,
            bpf_events,
            program_exits,
            diag,
            datagrams: &plan.datagrams,
            udp,
            network: &s.network,
        },
        records,
    );
    facts.emulator = EmulatorFacts::of(&emulated);
    facts.udp = udp
        .iter()
        .map(|o| {
            let since = |t: u64| t.saturating_sub(t0);
            // From a quarter into the source's active time (the queue of a saturated link has
            // built) to the last packet.
            let rate = match (o.settled, o.last_ns) {
                (Some((at, before)), Some(last)) if last > at => {
                    Some((o.source.delivered_bytes - before) as f64 * 8e9 / (last - at) as f64)
                }
                _ => None,
            };
            UdpFacts {
                flow: o.flow,
                delivered_packets: o.source.delivered_packets,
                delivered_bytes: o.source.delivered_bytes,
                first_ns: o.first_ns.map(since),
                last_ns: o.last_ns.map(since),
                received_rate_bps: rate,
                send_errors: o.send_errors,
                socket_drops: o.socket_drops,
                received_bytes_per_100ms: o.bins.clone(),
            }
        })
        .collect();
    facts.connections = plan
        .connections
        .iter()
        .zip(outcomes)
        .map(|(c, o)| ConnectionFacts {
            flow: c.flow,
            cc: c.cc.clone(),
            paced: o.info.max_pacing_rate != u64::MAX,
            rwnd_limited_ns: o.info.rwnd_limited,
            sndbuf_limited_ns: o.info.sndbuf_limited,
            final_cwnd: o.info.snd_cwnd,
            final_ssthresh: o.info.snd_ssthresh,
            pacing_rate_bps: o.info.pacing_rate as f64 * 8.0,
            mss: o.info.snd_mss,
        })
        .collect();
    let read: u64 = emulated.sides.iter().map(|x| x.read_packets).sum();
    let delivered: u64 = emulated.sides.iter().map(|x| x.delivered_packets).sum();
    let dropped: u64 = emulated
        .sides
        .iter()
        .map(|x| x.dropped_packets + x.lost_packets + x.foreign_packets)
        .sum();
    let EmulatorReport {
        mut network,
        recorder,
        ..
    } = emulated;
    let (_, queue_series, windows) = recorder.finish(&network);
    let links = link_summaries(&mut network, s.end());
    let stats = RunStats {
        events: read,
        packets_forwarded: links.forwarded_packets.iter().sum(),
        sim_time_ns: s.duration.as_nanos(),
        packets_created: read,
        packets_delivered: delivered,
        packets_dropped: dropped,
        packets_in_network: read.saturating_sub(delivered + dropped),
        jain_index: flows.tcp_jain_index(),
    };
    Report {
        flow_series,
        queue_series,
        flows,
        links,
        windows,
        requests: request_rows(&plan.connections, outcomes, t0),
        stats,
        errors: Vec::new(),
    }
}

/// The `requests` table of the connections whose application writes responses one at a time.
fn request_rows(connections: &[Connection], outcomes: &[TcpOutcome], t0: u64) -> Requests {
    let mut rows = Requests::default();
    for (c, o) in connections.iter().zip(outcomes) {
        for (k, r) in o.requests.iter().enumerate() {
            rows.push(RequestRow {
                flow: c.flow,
                label: c.label.clone(),
                request: k as u32,
                bytes: r.bytes,
                start_ns: r.written_ns.saturating_sub(t0) as i64,
                completion_ns: r
                    .completed_ns
                    .map(|t| t.saturating_sub(r.written_ns) as i64),
                start_cwnd: r.cwnd as f64,
                // TCP_INFINITE_SSTHRESH while it is unlimited.
                start_ssthresh: (r.ssthresh < 0x7fff_ffff).then_some(r.ssthresh as f64),
                idle_ns: if k == 0 {
                    0
                } else {
                    r.idle_ms as i64 * 1_000_000
                },
                restarted: r.restarted as u8,
            });
        }
    }
    rows
}
