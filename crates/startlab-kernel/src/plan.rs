//! What the kernel world will run for a resolved scenario, or why it cannot.
//!
//! Every field the kernel can honour is mapped to what Linux lets a user set per namespace,
//! route or socket; a field it cannot honour is refused with the usual error naming the field,
//! never approximated. What Linux does whatever the scenario says (it always opens with a
//! handshake, keeps undo, computes its own delayed-ACK timer) is listed in
//! [`KernelPlan::differences`], written with every kernel run and in docs/kernel.md.

use crate::bpf::ObjectImage;
use serde_json::Value;
use startlab_bpf::{ControllerSpec, Controllers};
use startlab_core::cc::bpf::BpfFactory;
use startlab_core::cc::controller::{Algorithm, ControllerFactory};
use startlab_core::scenario::resolved::RequestPlan;
use startlab_core::scenario::{ResolvedScenario, ScenarioError, Traffic};
use startlab_core::tcp::{
    AckPolicy, FlowSize, LossDetection, Pacing, Recovery, RtoAlgorithm, Stack, TcpConfig,
};
use startlab_core::time::Duration;
use startlab_core::traffic::{arrivals_stream, source_stream, ArrivalDraws, UdpSource};
use std::sync::Arc;

/// One TCP connection of the kernel run.
#[derive(Clone, Debug, PartialEq)]
pub struct Connection {
    /// The flow id of the tables (the simulator numbers connections in the same order).
    pub flow: u32,
    pub entry: usize,
    pub label: String,
    pub src: String,
    pub dst: String,
    /// The kernel's congestion control.
    pub cc: String,
    /// The scenario's `cc` and `startup`, for the tables.
    pub scenario_cc: String,
    pub startup: String,
    pub start: Duration,
    pub stop: Duration,
    /// `None`: as much as it can until `stop`.
    pub bytes: Option<u64>,
    /// An application that writes responses one at a time (drawn from the simulator's stream
    /// of the same seed).
    pub requests: Option<RequestPlan>,
    /// Linux's internal pacing, switched on with `SO_MAX_PACING_RATE` (`tcp.pacing = "linux"`).
    pub paced: bool,
    /// The eBPF controller it runs (an index into [`KernelPlan::controllers`]), if not a
    /// built-in one; `cc` is then the name it is registered under.
    pub bpf: Option<usize>,
    /// `tcp.pacing = "initial-spreading"`: the initial window (segments) and the MSS (bytes),
    /// spread over the first RTT (`traffic::spread_initial_window`).
    pub spread: Option<(u32, u32)>,
    /// The controller reports its phases and slow-start exit as startlab's ports do (a user's
    /// object and Linux's own controllers are read from the trace instead).
    pub reports: bool,
    /// A user's object: its struct_ops `name`, the exit reason of a slow start it ends itself
    /// (ssthresh lowered to cwnd without a loss), as the simulator names it.
    pub program: Option<String>,
    /// The user's program has `cong_control`: it owns cwnd, and a loss does not end its
    /// start-up (Linux `tcp_cong_control`).
    pub owns_cwnd: bool,
    /// The connection uses ECN (`tcp.ecn`, or a controller that needs it): a CWR episode then
    /// comes from an ECN echo.
    pub ecn: bool,
    /// The receiver's congestion control, set on its listening socket (which the accepted
    /// connection inherits): DCTCP's receiving half ([`crate::bpf::ECN_ECHO_NAME`]) for a
    /// controller that needs ECN; `None`: the namespace's default.
    pub receiver_cc: Option<String>,
}

/// One UDP source of the kernel run: the simulator's own source (its schedule and on-off
/// draws, from the same random stream), sent from a UDP socket.
#[derive(Clone, Debug)]
pub struct Datagrams {
    pub flow: u32,
    pub entry: usize,
    pub label: String,
    pub src: String,
    pub dst: String,
    /// The schedule: `on_tick` says when each packet leaves; its `packet_bytes` is the whole IP
    /// packet (20 bytes of IP and 8 of UDP header, the rest payload).
    pub source: UdpSource,
}

/// IP and UDP headers, bytes.
pub const UDP_HEADERS: u32 = 28;

/// Connections a kernel run opens at most (each is two threads and a port).
pub const MAX_CONNECTIONS: usize = 4000;

/// Settings of a sending or receiving host (per namespace, per route).
#[derive(Clone, Debug, PartialEq)]
pub struct HostTcp {
    pub mss_bytes: u32,
    /// Segments (`ip route … initcwnd`).
    pub initial_window: u32,
    pub sack: bool,
    /// Timestamps (`net.ipv4.tcp_timestamps`); they add 12 bytes to every segment's header.
    pub timestamps: bool,
    /// `ip route … rto_min`.
    pub min_rto: Duration,
    /// `net.ipv4.tcp_reordering`: the duplicate-ACK threshold.
    pub dupack_threshold: u32,
    /// Bytes the receiver advertises at most (`ip route … window`); `None`: unlimited.
    pub receive_window_bytes: Option<u64>,
    /// `ip route … quickack 1` at the receiver: an ACK for every segment.
    pub quickack: bool,
    /// `net.ipv4.tcp_pacing_ss_ratio` and `_ca_ratio`, percent.
    pub pacing_ratios: (u32, u32),
    /// `net.ipv4.tcp_ecn` = 1 (ask for ECN and accept it); otherwise Linux's 2 (accept it
    /// only when asked), which, the other end not asking, leaves the connection without ECN.
    pub ecn: bool,
    /// `net.ipv4.tcp_slow_start_after_idle` (`tcp.restart_after_idle`).
    pub slow_start_after_idle: bool,
    /// `net.ipv4.tcp_no_metrics_save` = 0 and `tcp_no_ssthresh_metrics_save` = 0
    /// (`tcp.metrics`, `tcp.metrics_ssthresh`).
    pub metrics: bool,
    pub metrics_ssthresh: bool,
}

impl HostTcp {
    /// Linux's own defaults (a host that only runs UDP).
    pub const LINUX: HostTcp = HostTcp {
        mss_bytes: 1448,
        initial_window: 10,
        sack: true,
        timestamps: true,
        min_rto: Duration::from_millis(200),
        dupack_threshold: 3,
        receive_window_bytes: None,
        quickack: false,
        pacing_ratios: (200, 120),
        ecn: false,
        slow_start_after_idle: true,
        metrics: false,
        metrics_ssthresh: false,
    };
}

/// The global `tcp_cubic` module parameters a run needs (`/sys/module/tcp_cubic/parameters`),
/// restored afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CubicModule {
    /// `hystart`: 0 or 1.
    pub hystart: u32,
    /// `hystart_detect`: 1 train, 2 delay, 3 both.
    pub hystart_detect: u32,
    pub hystart_low_window: u32,
    pub hystart_ack_delta_us: u32,
    pub fast_convergence: u32,
    pub tcp_friendliness: u32,
    /// beta × 1024.
    pub beta: u32,
}

/// The kernel run of a scenario.
#[derive(Clone, Debug)]
pub struct KernelPlan {
    /// In flow order: the entries' connections, then the arrivals' in arrival order (the
    /// simulator numbers them the same way).
    pub connections: Vec<Connection>,
    pub datagrams: Vec<Datagrams>,
    /// Per flow entry (indexed like `flows`): its hosts' TCP settings; `None` for UDP.
    pub tcp: Vec<Option<HostTcp>>,
    pub cubic: Option<CubicModule>,
    /// The eBPF controllers to register, each under [`bpf_name`] of its index.
    pub controllers: Vec<KernelController>,
    /// What Linux does differently from the scenario's TCP, whatever it says.
    pub differences: Vec<String>,
}

fn refuse(path: String, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        path,
        message: message.into(),
    }
}

/// The kernel's congestion controls that need no eBPF program.
pub const BUILT_IN: [&str; 3] = ["reno", "cubic", "bbr"];

/// Parameters given in a scenario, as written (what resolution filled in is not there).
fn given(v: &Option<startlab_core::cc::registry::Params>) -> Vec<(String, Value)> {
    v.iter()
        .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect()
}

/// The running kernel's timer frequency (`CONFIG_HZ`, from `/proc/config.gz` or
/// `/boot/config-<release>`); none if neither can be read.
fn kernel_hz() -> Option<u64> {
    static HZ: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *HZ.get_or_init(|| {
        use std::io::Read;
        let mut text = String::new();
        let from_proc = std::fs::File::open("/proc/config.gz").ok().and_then(|f| {
            flate2::read::GzDecoder::new(f)
                .read_to_string(&mut text)
                .ok()
        });
        if from_proc.is_none() {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
            text = std::fs::read_to_string(format!("/boot/config-{}", release.trim())).ok()?;
        }
        text.lines()
            .find_map(|l| l.strip_prefix("CONFIG_HZ="))
            .and_then(|v| v.trim().parse().ok())
    })
}

fn cubic_module(
    at: &str,
    cc_params: &[(String, Value)],
    startup: &str,
    startup_params: &[(String, Value)],
) -> Result<CubicModule, ScenarioError> {
    // Linux's defaults (tcp_cubic.c module parameters).
    let mut m = CubicModule {
        hystart: u32::from(startup == "hystart"),
        hystart_detect: 3,
        hystart_low_window: 16,
        hystart_ack_delta_us: 2000,
        fast_convergence: 1,
        tcp_friendliness: 1,
        beta: 717,
    };
    for (k, v) in cc_params {
        let path = format!("{at}.cc_params.{k}");
        match (k.as_str(), v) {
            ("constants", Value::String(s)) if s == "linux" => {}
            // tcp_cubic.c's clock is the kernel's jiffies; another HZ runs the eBPF port.
            ("hz", Value::Number(n)) if n.as_u64().is_some() && n.as_u64() == kernel_hz() => {}
            ("fast_convergence", Value::Bool(b)) => m.fast_convergence = u32::from(*b),
            ("tcp_friendliness", Value::Bool(b)) => m.tcp_friendliness = u32::from(*b),
            ("beta", Value::Number(n)) => {
                m.beta = (n.as_f64().unwrap_or(0.7) * 1024.0).round() as u32
            }
            _ => {
                return Err(refuse(
                    path,
                    format!("{v} cannot be set on the kernel's cubic, which runs Linux's constants; it takes beta, fast_convergence, tcp_friendliness and hz (the kernel's CONFIG_HZ)"),
                ))
            }
        }
    }
    for (k, v) in startup_params {
        let path = format!("{at}.startup_params.{k}");
        match (k.as_str(), v) {
            ("variant", Value::String(s)) if s == "linux" => {}
            ("detect", Value::String(s)) => {
                m.hystart_detect = match s.as_str() {
                    "train" => 1,
                    "delay" => 2,
                    _ => 3,
                }
            }
            ("low_window", Value::Number(n)) => {
                m.hystart_low_window = n.as_f64().unwrap_or(16.0).round() as u32
            }
            ("ack_delta_ms", Value::Number(n)) => {
                m.hystart_ack_delta_us = (n.as_f64().unwrap_or(2.0) * 1000.0).round() as u32
            }
            _ => {
                return Err(refuse(
                    path,
                    format!("{v} cannot be set on Linux's HyStart; it takes detect, low_window and ack_delta_ms"),
                ))
            }
        }
    }
    if startup == "hystart"
        && !startup_params
            .iter()
            .any(|(k, v)| k == "variant" && v == "linux")
    {
        return Err(refuse(
            format!("{at}.startup_params.variant"),
            "the kernel runs Linux's HyStart: write variant = \"linux\" (the dissertation's variant exists only in the simulator until it is ported to eBPF)",
        ));
    }
    Ok(m)
}

/// The name the `k`th eBPF controller of a run is registered under (at most 15 bytes).
pub fn bpf_name(k: usize) -> String {
    format!("startlab_{k}")
}

/// An eBPF controller of a run: what it is in the scenario's words, and the object to load.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelController {
    /// startlab's own object: the algorithms and parameters; a user's: `cc` is `bpf:FILE`.
    pub spec: ControllerSpec,
    pub image: ObjectImage,
}

/// What runs a flow entry's connections in the kernel.
#[derive(Clone, Debug, PartialEq)]
enum Control {
    /// A congestion control built into the kernel, with the cubic module's settings for cubic.
    BuiltIn(&'static str, Option<CubicModule>),
    /// startlab's eBPF port of the scenario's controller, or a user's object.
    Bpf(KernelController),
}

/// Linux's own controller where it is the scenario's (reno or cubic, with Linux's HyStart, no
/// parameter beyond the cubic module's, Linux's ssthresh and pacing), the eBPF port otherwise.
fn kernel_control(
    at: &str,
    controller: &ControllerFactory,
    cfg: &TcpConfig,
    cc_params: &[(String, Value)],
    startup_params: &[(String, Value)],
    available: &[String],
    own_initial_window: bool,
) -> Result<Control, ScenarioError> {
    let startup = controller.startup();
    for (name, field) in [(controller.cc(), "cc"), (startup, "startup")] {
        if let Some((_, why)) = startlab_core::cc::registry::WITHOUT_PORT
            .iter()
            .find(|(n, _)| *n == name)
        {
            return Err(refuse(
                format!("{at}.{field}"),
                format!("\"{name}\" runs in the simulator only: it has no eBPF port yet ({why})"),
            ));
        }
    }
    // `bpf:NAME` asks for startlab's port even where Linux has the algorithm; `bpf:FILE.o` is
    // a user's object.
    let (model, forced) = match controller.algorithm() {
        Algorithm::UserObject { path, object } => {
            return user_object(at, path, object, cc_params, cfg)
        }
        Algorithm::Port { model, .. } => (model, true),
        Algorithm::Model(model) => (model, false),
    };
    let cc = model.cc_name();
    let linux_sender = !forced
        && !own_initial_window
        && !cfg.initial_ssthresh.is_finite()
        && matches!(cfg.pacing, Pacing::ByController | Pacing::Linux);
    let has = |name: &str| available.iter().any(|a| a == name);
    if linux_sender {
        match (cc, startup) {
            // Linux's reno is counting = "linux" with beta 0.5; without parameters the model
            // counts as RFC 5681 and the kernel's reno runs anyway (docs/kernel.md, Validation).
            ("reno" | "newreno", "default")
                if has("reno")
                    && cc_params.iter().all(|(k, v)| {
                        (k == "counting" && v == "linux")
                            || (k == "beta" && v.as_f64() == Some(0.5))
                    }) =>
            {
                return Ok(Control::BuiltIn("reno", None))
            }
            ("cubic", "default" | "hystart") if has("cubic") => {
                if let Ok(m) = cubic_module(at, cc_params, startup, startup_params) {
                    return Ok(Control::BuiltIn("cubic", Some(m)));
                }
            }
            ("bbr", "default") if has("bbr") && bbr_as_linux(cc_params) => {
                return Ok(Control::BuiltIn("bbr", None));
            }
            _ => {}
        }
    }
    let (mut resolved_cc, mut resolved_startup) = controller.resolved_params();
    // BBRv3's port sees what a struct_ops program sees on mainline Linux (cc::bbr3::Signals):
    // not Google's v3 kernel's per-segment tx_in_flight, tx.lost and skb_marked_lost.
    if cc == "bbr3" {
        if let Some((_, v)) = cc_params.iter().find(|(k, _)| k == "signals") {
            if v != "mainline" {
                return Err(refuse(
                    format!("{at}.cc_params.signals"),
                    format!("{v}: the kernel world runs BBRv3 as its eBPF port on Linux 6.18, which has no per-segment tx_in_flight, tx.lost or skb_marked_lost; allowed here: \"mainline\""),
                ));
            }
        }
        if let Some(params) = resolved_cc.as_object_mut() {
            params.insert("signals".into(), "mainline".into());
        }
    }
    // SUSS's port has what a tcp_congestion_ops can do (cc::suss::Hooks): not the authors'
    // per-segment cwnd increase and delayed pacing start, which are kernel changes.
    if startup == "suss" {
        if let Some((_, v)) = startup_params.iter().find(|(k, _)| k == "hooks") {
            if v != "struct-ops" {
                return Err(refuse(
                    format!("{at}.startup_params.hooks"),
                    format!("{v}: the kernel world runs SUSS as its eBPF port, a tcp_congestion_ops, which has no per-segment hook and cannot write tcp_wstamp_ns; allowed here: \"struct-ops\""),
                ));
            }
        }
        if let Some(params) = resolved_startup.as_mut().and_then(|p| p.as_object_mut()) {
            params.insert("hooks".into(), "struct-ops".into());
        }
    }
    let spec = ControllerSpec {
        cc: cc.to_string(),
        cc_params: resolved_cc,
        startup: startup.to_string(),
        startup_params: resolved_startup,
        pacing: match cfg.pacing {
            Pacing::ByController => "none",
            Pacing::Linux => "linux",
            Pacing::Window => "window",
            Pacing::InitialSpreading => "initial-spreading",
        }
        .to_string(),
        initial_ssthresh: cfg
            .initial_ssthresh
            .is_finite()
            .then(|| cfg.initial_ssthresh.round().clamp(2.0, 0x7fff_fffe as f64) as u32),
        initial_window: cfg.initial_window,
    };
    let controllers = Controllers::built().map_err(|e| {
        refuse(
            format!("{at}.cc"),
            format!("\"{cc}\" (startup \"{startup}\") needs startlab's eBPF controllers: {e}"),
        )
    })?;
    let rodata = startlab_core::cc::bpf::configure(&spec).map_err(|e| {
        refuse(
            if e.field.is_empty() {
                format!("{at}.cc")
            } else {
                format!("{at}.{}", e.field)
            },
            e.message,
        )
    })?;
    Ok(Control::Bpf(KernelController {
        spec,
        image: ObjectImage {
            elf: Arc::new(controllers.elf.to_vec()),
            sections: vec![(".rodata".into(), rodata)],
            struct_ops: Some(startlab_core::cc::bpf::own_struct_ops(model).to_string()),
            needs_ecn: model.build().needs_ecn(),
            exit_record: None,
        },
    }))
}

/// Whether a scenario's BBR is Linux's: tcp_bbr.c's constants are compiled in, so every given
/// parameter must be its value (else startlab's port runs). `hz` is the kernel's own clock (a
/// different `tcp.hz` is listed by `startlab kernel check`).
fn bbr_as_linux(cc_params: &[(String, Value)]) -> bool {
    let linux = serde_json::to_value(startlab_core::cc::bbr::BbrConfig::default())
        .expect("BBR's configuration serializes");
    cc_params.iter().all(|(name, value)| {
        let kernel = &linux[name.as_str()];
        name == "hz"
            || match (value.as_f64(), kernel.as_f64()) {
                (Some(a), Some(b)) => a == b,
                _ => value == kernel,
            }
    })
}

/// A user's object (`cc = "bpf:FILE.o"`): its data sections with each `cc_params` entry written
/// into the variable of its name, as the simulator loaded it when the scenario was resolved.
/// Linux's pacing is the user's controller's business; an initial ssthresh cannot be given to
/// it.
fn user_object(
    at: &str,
    path: &str,
    object: &BpfFactory,
    cc_params: &[(String, Value)],
    cfg: &TcpConfig,
) -> Result<Control, ScenarioError> {
    if cfg.initial_ssthresh.is_finite() {
        return Err(refuse(format!("{at}.tcp.initial_ssthresh"), "a user's eBPF controller sets its own ssthresh; Linux has no other per-socket initial ssthresh"));
    }
    let image = object.user_image().ok_or_else(|| {
        refuse(
            format!("{at}.cc"),
            format!("bpf:{path}: not a user's object"),
        )
    })?;
    Ok(Control::Bpf(KernelController {
        spec: ControllerSpec {
            cc: format!("bpf:{path}"),
            cc_params: Value::Object(cc_params.iter().cloned().collect()),
            startup: "default".into(),
            startup_params: None,
            pacing: "none".into(),
            initial_ssthresh: None,
            initial_window: cfg.initial_window,
        },
        image: ObjectImage {
            elf: image.elf,
            sections: image.sections,
            struct_ops: image.struct_ops,
            // A user's object registers with the flags it was compiled with.
            needs_ecn: false,
            exit_record: object.exit_record().cloned().map(Box::new),
        },
    }))
}

/// The kernel run of `s`, or the first field the kernel cannot honour. `available` lists the
/// congestion controls the kernel has (`tcp_available_congestion_control`, plus registered
/// eBPF programs).
pub fn plan(s: &ResolvedScenario, available: &[String]) -> Result<KernelPlan, ScenarioError> {
    let doc = &s.document;
    let mut connections = Vec::new();
    let mut datagrams = Vec::new();
    let mut tcp = Vec::new();
    let mut cubic: Option<(String, CubicModule)> = None;
    let mut controllers: Vec<KernelController> = Vec::new();
    // Which of Linux's pieces every TCP flow already models (tcp.stack = "linux" has them
    // all): the differences listed are the others.
    let mut models = LinuxPieces::ALL;
    // The initial window of the first TCP entry from each sending host.
    let mut first_window: Vec<(startlab_core::net::NodeId, u32)> = Vec::new();
    let mut flow = 0u32;
    // Arrival processes: (entry, controller, draws), numbered after every other flow.
    let mut arrivals = Vec::new();
    let node = |n: startlab_core::net::NodeId| s.network.nodes[n as usize].name.clone();
    for plan in &s.flows {
        let at = format!("flows[{}]", plan.entry);
        let entry = &doc.flows[plan.entry];
        let (cfg, controller) = match &plan.traffic {
            Traffic::Tcp {
                tcp: cfg,
                controller,
                ..
            }
            | Traffic::Arrivals {
                tcp: cfg,
                controller,
                ..
            } => (cfg, controller),
            Traffic::Udp {
                sources,
                rate,
                packet_bytes,
                pattern,
            } => {
                if *packet_bytes <= UDP_HEADERS || *packet_bytes > 1500 {
                    return Err(refuse(
                        format!("{at}.packet_size"),
                        format!("{packet_bytes} B: a kernel UDP packet is one IP packet of 29 to 1500 bytes (the TUN device's MTU), headers included"),
                    ));
                }
                tcp.push(None);
                for u in sources {
                    datagrams.push(Datagrams {
                        flow,
                        entry: plan.entry,
                        label: u.label.clone(),
                        src: node(plan.src),
                        dst: node(plan.dst),
                        source: UdpSource::new(
                            flow,
                            plan.src,
                            plan.dst,
                            *rate,
                            *packet_bytes,
                            u.start,
                            u.stop,
                            pattern.clone(),
                            source_stream(s.seed, flow),
                        ),
                    });
                    flow += 1;
                }
                continue;
            }
        };
        let cc_params = given(&entry.cc_params);
        let startup_params = given(&entry.startup_params);
        // Linux sets the initial window per route: an entry whose window differs from the first
        // entry's on the same sending host runs startlab's port, which sets it per connection.
        let own_initial_window = first_window
            .iter()
            .any(|&(src, w)| src == plan.src && w != cfg.initial_window);
        if !first_window.iter().any(|&(src, _)| src == plan.src) {
            first_window.push((plan.src, cfg.initial_window));
        }
        let control = kernel_control(
            &at,
            controller,
            cfg,
            &cc_params,
            &startup_params,
            available,
            own_initial_window,
        )?;
        // A controller that needs ECN (TCP_CONG_NEEDS_ECN, DCTCP) negotiates it whatever
        // net.ipv4.tcp_ecn says; its receiver runs the receiving half.
        let needs_ecn = controller.build().needs_ecn();
        // startlab's object reports its phases; a user's object, the Linux controllers do not.
        let reports = match &control {
            Control::Bpf(_) => !matches!(controller.algorithm(), Algorithm::UserObject { .. }),
            Control::BuiltIn(..) => false,
        };
        let (kernel_cc, bpf) = match &control {
            Control::BuiltIn(name, _) => (name.to_string(), None),
            Control::Bpf(kc) => {
                let k = match controllers.iter().position(|c| *c == *kc) {
                    Some(k) => k,
                    None => {
                        controllers.push(kc.clone());
                        controllers.len() - 1
                    }
                };
                (bpf_name(k), Some(k))
            }
        };
        if let Control::BuiltIn(_, Some(module)) = control {
            match &cubic {
                Some((first, m)) if *m != module => {
                    return Err(refuse(
                        at,
                        format!("its cubic settings differ from {first}'s; the kernel's cubic parameters are global to the machine"),
                    ))
                }
                Some(_) => {}
                None => cubic = Some((at.clone(), module)),
            }
        }
        models.narrow(cfg);
        tcp.push(Some(host_tcp(&at, cfg)?));
        let template = Connection {
            flow: 0,
            entry: plan.entry,
            label: String::new(),
            src: node(plan.src),
            dst: node(plan.dst),
            cc: kernel_cc,
            reports,
            bpf,
            spread: (cfg.pacing == Pacing::InitialSpreading)
                .then_some((cfg.initial_window, cfg.mss_bytes)),
            scenario_cc: controller.cc().to_string(),
            startup: controller.startup().to_string(),
            start: Duration::ZERO,
            stop: s.duration,
            bytes: None,
            requests: None,
            paced: matches!(cfg.pacing, Pacing::Linux),
            program: match controller.algorithm() {
                Algorithm::UserObject { object, .. } => Some(object.name().to_string()),
                _ => None,
            },
            owns_cwnd: match controller.algorithm() {
                Algorithm::UserObject { object, .. } => object.has_cong_control(),
                _ => false,
            },
            ecn: cfg.ecn || needs_ecn,
            receiver_cc: needs_ecn.then(|| crate::bpf::ECN_ECHO_NAME.to_string()),
        };
        match &plan.traffic {
            Traffic::Tcp {
                connections: conns, ..
            } => {
                for c in conns {
                    connections.push(Connection {
                        flow,
                        label: c.label.clone(),
                        start: c.start - startlab_core::Time::ZERO,
                        stop: c.stop.map_or(s.duration, |t| t - startlab_core::Time::ZERO),
                        bytes: c.size.total_bytes(cfg.mss_bytes),
                        requests: c.requests.clone(),
                        ..template.clone()
                    });
                    flow += 1;
                }
            }
            Traffic::Arrivals {
                label,
                mean_interarrival,
                start,
                stop,
                sizes,
                ..
            } => {
                let draws = ArrivalDraws::new(
                    arrivals_stream(s.seed, arrivals.len() as u32),
                    *mean_interarrival,
                    sizes.clone(),
                    *start,
                    *stop,
                );
                arrivals.push((label.clone(), template, cfg.mss_bytes, draws));
            }
            Traffic::Udp { .. } => unreachable!("handled above"),
        }
    }
    // The arrivals, merged in time order as the simulator spawns them (ties: the earlier
    // entry first).
    loop {
        let next = arrivals
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.3.peek().map(|t| (t, i)))
            .min();
        let Some((_, i)) = next else { break };
        if connections.len() >= MAX_CONNECTIONS {
            return Err(refuse(
                format!("flows[{}].mean_interarrival", arrivals[i].1.entry),
                format!("more than {MAX_CONNECTIONS} connections in one kernel run (each is two threads and a port); arrive less often or run for less time"),
            ));
        }
        let (label, template, mss, draws) = &mut arrivals[i];
        let (t, bytes) = draws.next().expect("peeked");
        connections.push(Connection {
            flow,
            label: label.clone(),
            start: t - startlab_core::Time::ZERO,
            bytes: FlowSize::from_bytes(bytes, *mss).total_bytes(*mss),
            ..template.clone()
        });
        flow += 1;
    }
    if connections.len() > MAX_CONNECTIONS {
        return Err(refuse(
            "flows".into(),
            format!(
                "{} connections: a kernel run opens at most {MAX_CONNECTIONS}",
                connections.len()
            ),
        ));
    }
    let mut differences = Vec::new();
    let mut differ = |modelled: bool, text: &str| {
        if !modelled {
            differences.push(text.to_string());
        }
    };
    differ(models.handshake, "Linux always opens a connection with a SYN/SYN-ACK handshake, which gives the first RTT sample; a flow's start is when connect() is called");
    differ(models.undo, "Linux undoes a reduction that proves unnecessary from timestamps and D-SACKs, and runs F-RTO after a timeout, whatever tcp.undo, tcp.dsack and tcp.frto say");
    differ(models.receiver, "Linux's receiver ACKs every segment in quick-ACK mode while its window grows and computes its own delayed-ACK timer (tcp.delayed_ack_timeout is not used); tcp.ack_policy = \"linux\" models it");
    differ(models.rto, "Linux's RTO is computed in jiffies by tcp_rtt_estimator and starts at 1 s (tcp.initial_rto, tcp.max_rto and tcp.clock_granularity are not used); tcp.rto = \"linux\" models it");
    differ(models.header, "With timestamps (on unless tcp.mss is above 1448 bytes), every segment carries 12 more header bytes than tcp.header");
    differ(
        models.recovery,
        "Linux recovers with RACK-TLP and PRR; tcp.stack = \"linux\" models them",
    );
    if let Some(hz) = kernel_hz() {
        differ(models.clock, &format!("This kernel counts its delayed-ACK timer and its RTO in jiffies of {} ms (CONFIG_HZ = {hz}), whatever tcp.hz and tcp.clock_granularity say", 1000.0 / hz as f64));
    }
    differences.push("Linux's receiver also acknowledges when the application's read follows a segment sent with PSH, which depends on how the sending application writes; the simulator does not model it".to_string());
    Ok(KernelPlan {
        connections,
        datagrams,
        tcp,
        cubic: cubic.map(|(_, m)| m),
        controllers,
        differences,
    })
}

/// The pieces of Linux's TCP that every flow's simulator settings model.
#[derive(Copy, Clone, Debug)]
struct LinuxPieces {
    handshake: bool,
    undo: bool,
    receiver: bool,
    rto: bool,
    header: bool,
    recovery: bool,
    /// The flows' jiffies are this kernel's (`tcp.hz`, and `clock_granularity` under
    /// `rto = "linux"`).
    clock: bool,
}

impl LinuxPieces {
    const ALL: LinuxPieces = LinuxPieces {
        handshake: true,
        undo: true,
        receiver: true,
        rto: true,
        header: true,
        recovery: true,
        clock: true,
    };

    fn narrow(&mut self, cfg: &TcpConfig) {
        self.handshake &= cfg.handshake;
        self.undo &= cfg.undo && cfg.dsack && cfg.frto;
        self.receiver &= matches!(cfg.ack_policy, AckPolicy::Linux(_));
        self.rto &= cfg.rto_algorithm == RtoAlgorithm::Linux;
        self.header &= cfg.mss_bytes > 1448 || cfg.header_bytes >= 52;
        self.recovery &=
            cfg.stack == Stack::Linux && cfg.loss_detection == LossDetection::Rack { tlp: true };
        if let Some(hz) = kernel_hz() {
            let jiffy = Duration::from_nanos(1_000_000_000 / hz);
            self.clock &= (cfg.rto_algorithm != RtoAlgorithm::Linux
                || cfg.clock_granularity == jiffy)
                && match &cfg.ack_policy {
                    AckPolicy::Linux(c) => c.hz as u64 == hz,
                    _ => true,
                };
        }
    }
}

fn host_tcp(at: &str, cfg: &TcpConfig) -> Result<HostTcp, ScenarioError> {
    // A 1500-byte MTU less 20 bytes of IP and 20 of TCP leaves 1460 bytes, 1448 with the 12 of
    // timestamps (Linux's default, kept up to 1448); Linux's smallest MSS is 88 bytes
    // (TCP_MIN_MSS) with the options.
    if !(76..=1460).contains(&cfg.mss_bytes) {
        return Err(refuse(
            format!("{at}.tcp.mss"),
            format!("{} B: a kernel segment carries 76 to 1460 bytes of payload (the TUN device's 1500-byte MTU, less IP and TCP headers; 1448 with timestamps)", cfg.mss_bytes),
        ));
    }
    if matches!(
        cfg.stack,
        Stack::Ns2 {
            recovery: Recovery::Reno
        }
    ) {
        return Err(refuse(
            format!("{at}.tcp.recovery"),
            "Reno's fast recovery (cc = \"reno\" without SACK, or recovery = \"reno\") is not Linux's: it recovers as NewReno without SACK (RFC 6582) and by SACK with it; use cc = \"newreno\", recovery = \"newreno\" or sack = true",
        ));
    }
    // Linux paces at ratio x max(cwnd, packets_out) / srtt (tcp_update_pacing_rate): the
    // window mode is both ratios at 100 %, switched on by the eBPF controller.
    let ratios = cfg.pacing_ratios;
    Ok(HostTcp {
        mss_bytes: cfg.mss_bytes,
        initial_window: cfg.initial_window,
        sack: cfg.sack,
        // Linux's timestamps, unless the segments are too large to carry them.
        timestamps: cfg.mss_bytes <= 1448,
        min_rto: cfg.min_rto,
        dupack_threshold: cfg.dupack_threshold,
        receive_window_bytes: (cfg.receive_window != u32::MAX)
            .then(|| cfg.receive_window as u64 * cfg.mss_bytes as u64),
        quickack: !cfg.delayed_ack,
        pacing_ratios: (ratios.slow_start_percent, ratios.avoidance_percent),
        ecn: cfg.ecn,
        slow_start_after_idle: cfg.restart_after_idle,
        metrics: cfg.metrics,
        metrics_ssthresh: cfg.metrics_ssthresh,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use startlab_core::scenario;

    fn resolved(flows: &str) -> ResolvedScenario {
        let text = format!(
            "duration = \"10s\"\n[topology]\nkind = \"dumbbell\"\npairs = 2\nbottleneck = {{ rate = \"40Mbps\", delay = \"20ms\" }}\n{flows}"
        );
        scenario::resolve(&scenario::from_toml(&text).unwrap()).unwrap()
    }

    fn kernel() -> Vec<String> {
        vec!["reno".into(), "cubic".into(), "bbr".into()]
    }

    fn refusal(flows: &str) -> String {
        plan(&resolved(flows), &kernel()).unwrap_err().to_string()
    }

    #[test]
    fn reno_and_cubic_with_hystart_map_to_the_kernel() {
        let p = plan(
            &resolved("[[flows]]\npair = 0\ncc = \"newreno\"\nsize = \"1MB\"\n[[flows]]\npair = 1\ncc = \"cubic\"\nstartup = \"hystart\"\nstartup_params = { variant = \"linux\", detect = \"train\" }\nstart = \"1s\"\ncount = 2\nstagger = \"1s\"\n"),
            &kernel(),
        )
        .unwrap();
        let c = &p.connections;
        assert_eq!(c.len(), 3);
        assert_eq!(
            (c[0].cc.as_str(), c[0].bytes, c[0].src.as_str()),
            ("reno", Some(1_000_000), "s0")
        );
        assert_eq!(
            (c[2].cc.as_str(), c[2].label.as_str(), c[2].start),
            ("cubic", "cubic+hystart#1", Duration::from_secs(2))
        );
        assert_eq!(c[2].stop, Duration::from_secs(10));
        let m = p.cubic.unwrap();
        assert_eq!((m.hystart, m.hystart_detect, m.beta), (1, 1, 717));
        assert!(!p.differences.is_empty());
    }

    /// CUBIC in jiffies (`cc_params.hz`, which `tcp.stack = "linux"` sets) runs the kernel's own
    /// cubic when the rate is the running kernel's CONFIG_HZ, and the port (which computes in
    /// any HZ) otherwise.
    #[test]
    fn cubic_in_the_kernels_jiffies_is_the_kernels_cubic_and_another_hz_is_the_port() {
        let own = kernel_hz();
        let other = if own == Some(1000) { 100 } else { 1000 };
        let cc = |hz: u64| {
            let p = plan(
                &resolved(&format!(
                    "[tcp]\nstack = \"linux\"\n[[flows]]\npair = 0\ncc = \"cubic\"\ncc_params = {{ hz = {hz} }}\n"
                )),
                &kernel(),
            )
            .unwrap();
            p.connections[0].cc.clone()
        };
        assert_eq!(cc(other), "startlab_0");
        match own {
            Some(hz) => {
                assert_eq!(cc(hz), "cubic");
                // The stack's default is tcp.hz.
                let p = plan(
                    &resolved(&format!("[tcp]\nstack = \"linux\"\nhz = {hz}\n[[flows]]\npair = 0\ncc = \"cubic\"\n")),
                    &kernel(),
                )
                .unwrap();
                assert_eq!(p.connections[0].cc, "cubic");
                let clock = |p: &KernelPlan| p.differences.iter().any(|d| d.contains("CONFIG_HZ"));
                assert!(!clock(&p), "{:?}", p.differences);
                // Another tcp.hz: the kernel's receiver and RTO keep their own jiffies.
                let p = plan(
                    &resolved(&format!("[tcp]\nstack = \"linux\"\nhz = {other}\n[[flows]]\npair = 0\ncc = \"cubic\"\n")),
                    &kernel(),
                )
                .unwrap();
                assert!(clock(&p), "{:?}", p.differences);
            }
            None => eprintln!("this kernel's CONFIG_HZ is not readable: only the port is checked"),
        }
    }

    #[test]
    fn what_linux_cannot_express_runs_startlabs_ebpf_port() {
        let p = plan(
            &resolved("[[flows]]\npair = 0\ncc = \"newreno\"\ncc_params = { beta = 0.7 }\ncount = 2\n[[flows]]\npair = 1\ncc = \"newreno\"\ntcp = { initial_ssthresh = 32, pacing = \"window\" }\n[[flows]]\npair = 1\ncc = \"newreno\"\nstartup = \"slow-start\"\nstartup_params = { abc_limit = 2 }\n"),
            &kernel(),
        )
        .unwrap();
        let c = &p.connections;
        // The two connections of the first entry share one registered controller.
        assert_eq!(
            c.iter().map(|c| (c.cc.as_str(), c.bpf)).collect::<Vec<_>>(),
            [
                ("startlab_0", Some(0)),
                ("startlab_0", Some(0)),
                ("startlab_1", Some(1)),
                ("startlab_2", Some(2))
            ]
        );
        assert_eq!(p.controllers.len(), 3);
        let first = &p.controllers[0].spec;
        assert_eq!(
            (
                first.cc.as_str(),
                first.startup.as_str(),
                first.pacing.as_str()
            ),
            ("newreno", "default", "none")
        );
        assert_eq!(
            first.cc_params,
            serde_json::json!({"abc_limit": 0, "beta": 0.7, "counting": "rfc5681"})
        );
        assert_eq!(first.initial_ssthresh, None);
        let second = &p.controllers[1].spec;
        assert_eq!(
            (second.initial_ssthresh, second.pacing.as_str()),
            (Some(32), "window")
        );
        // Window pacing is Linux's internal pacing at 100 % in both phases.
        assert_eq!(p.tcp[1].as_ref().unwrap().pacing_ratios, (100, 100));
        let third = &p.controllers[2].spec;
        assert_eq!(
            third.startup_params,
            Some(serde_json::json!({"abc_limit": 2}))
        );
        // Plain NewReno is still the kernel's own.
        let p = plan(&resolved("[[flows]]\ncc = \"newreno\"\n"), &kernel()).unwrap();
        assert_eq!(
            (p.connections[0].cc.as_str(), p.connections[0].bpf),
            ("reno", None)
        );
        assert!(p.controllers.is_empty());
    }

    /// BBR with tcp_bbr.c's constants is Linux's bbr; with other values, startlab's port,
    /// registered from the struct_ops that has cong_control.
    #[test]
    fn bbr_is_linuxs_with_the_kernels_constants_and_the_port_otherwise() {
        let p = plan(
            &resolved("[[flows]]\npair = 0\ncc = \"bbr\"\n[[flows]]\npair = 1\ncc = \"bbr\"\ncc_params = { high_gain = 2.885 }\n[[flows]]\npair = 1\ncc = \"bbr\"\ncc_params = { cwnd_gain = 2.0, hz = 250 }\n"),
            &kernel(),
        )
        .unwrap();
        let c = &p.connections;
        assert_eq!(
            c.iter().map(|c| (c.cc.as_str(), c.bpf)).collect::<Vec<_>>(),
            [("bbr", None), ("startlab_0", Some(0)), ("bbr", None)]
        );
        let port = &p.controllers[0];
        assert_eq!(port.spec.cc, "bbr");
        assert_eq!(port.image.struct_ops.as_deref(), Some("startlab_model"));
        // Without bbr in the kernel, the port runs it.
        let p = plan(
            &resolved("[[flows]]\ncc = \"bbr\"\n"),
            &["reno".to_string(), "cubic".to_string()],
        )
        .unwrap();
        assert_eq!(p.connections[0].cc, "startlab_0");
        // A window-based port is registered from the other struct_ops.
        let p = plan(&resolved("[[flows]]\ncc = \"westwood\"\n"), &kernel()).unwrap();
        assert_eq!(
            p.controllers[0].image.struct_ops.as_deref(),
            Some("startlab")
        );
    }

    /// BBRv3 runs as its port, on mainline Linux's signals whatever the simulator's default;
    /// asking for v3's is refused by field.
    #[test]
    fn bbr3_runs_as_its_port_on_mainline_signals() {
        let p = plan(&resolved("[[flows]]\ncc = \"bbr3\"\n"), &kernel()).unwrap();
        let port = &p.controllers[0];
        assert_eq!(port.spec.cc, "bbr3");
        assert_eq!(port.spec.cc_params["signals"], "mainline");
        assert_eq!(port.image.struct_ops.as_deref(), Some("startlab_model"));
        let e = refusal("[[flows]]\ncc = \"bbr3\"\ncc_params = { signals = \"v3\" }\n");
        assert!(
            e.starts_with("flows[0].cc_params.signals: \"v3\": the kernel world"),
            "{e}"
        );
    }

    /// SUSS runs as its port with `hooks = "struct-ops"` whatever the simulator's default; the
    /// authors' per-segment release is refused by name.
    #[test]
    fn suss_runs_as_its_port_with_what_a_congestion_ops_can_do() {
        let p = plan(
            &resolved("[[flows]]\ncc = \"cubic\"\nstartup = \"suss\"\n"),
            &kernel(),
        )
        .unwrap();
        let port = &p.controllers[0];
        assert_eq!(
            (port.spec.cc.as_str(), port.spec.startup.as_str()),
            ("cubic", "suss")
        );
        assert_eq!(
            port.spec.startup_params.as_ref().unwrap()["hooks"],
            "struct-ops"
        );
        let e = refusal(
            "[[flows]]\ncc = \"cubic\"\nstartup = \"suss\"\nstartup_params = { hooks = \"kernel\" }\n",
        );
        assert!(
            e.starts_with("flows[0].startup_params.hooks: \"kernel\": the kernel world"),
            "{e}"
        );
    }

    #[test]
    fn what_the_kernel_cannot_honour_is_refused_by_field() {
        assert!(refusal("[[flows]]\ncc = \"reno\"\n")
            .starts_with("flows[0].tcp.recovery: Reno's fast recovery"));
        assert!(
            refusal("[[flows]]\nkind = \"cbr\"\nrate = \"1Mbps\"\npacket_size = \"9000B\"\n")
                .starts_with("flows[0].packet_size: 9000 B")
        );
        // Two flows asking for different global cubic settings.
        let e = refusal("[[flows]]\npair = 0\ncc = \"cubic\"\n[[flows]]\npair = 1\ncc = \"cubic\"\ncc_params = { beta = 0.8 }\n");
        assert!(
            e.starts_with("flows[1]: its cubic settings differ from flows[0]'s"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod examples {
    use super::*;
    use startlab_core::scenario;

    /// Which shipped examples the kernel can express, and why not the others (printed with
    /// `--nocapture`); every example is either planned or refused with a field.
    #[test]
    fn every_example_is_planned_or_refused_by_field() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut paths: Vec<_> = [root.clone(), root.join("papers")]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        let kernel = vec!["reno".to_string(), "cubic".to_string()];
        for path in paths {
            let s = scenario::from_toml(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let r = scenario::resolve(&s).unwrap();
            match plan(&r, &kernel).and_then(|p| {
                crate::testbed::layout(&r.network, &p)?;
                Ok(p)
            }) {
                Ok(p) => println!("{}: {} connections", path.display(), p.connections.len()),
                Err(e) => {
                    assert!(!e.path.is_empty(), "{}: {e}", path.display());
                    println!("{}: refused: {e}", path.display());
                }
            }
        }
    }
}
