//! The catalogue of algorithms: names, parameters with their defaults, sources, and construction
//! from a scenario's `cc` / `startup` fields.

use super::hystart_pp::{HystartPp, HystartPpConfig};
use super::lss::{LimitedSlowStart, LssConfig};
pub use super::params::Params;
use super::params::{above, closed, param, parse, AlgorithmConfig, Allowed, Param, ParamError};
use super::reno::{Reno, RenoConfig};
use super::search::{Search, SearchConfig};
use super::slow_start::{Standard, StandardConfig};
use super::{CongestionControl, SlowStart, WithStartup};
use std::sync::Arc;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Congestion control (avoidance and loss response, with its own slow start).
    Cc,
    /// A slow-start algorithm that can replace a controller's own.
    Startup,
    /// A sender-side pacing mode (`tcp.pacing`), usable with any controller.
    Pacing,
    /// The initial window (`tcp.initial_window`).
    InitialWindow,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Cc => "cc",
            Role::Startup => "startup",
            Role::Pacing => "pacing",
            Role::InitialWindow => "initial-window",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: String,
    pub description: &'static str,
    /// `"segments"`, `"ms"`, … or `""`.
    pub unit: &'static str,
    /// The allowed values in words (`0 < beta < 1`), or `""` when the type says it all.
    pub allowed: String,
    /// The declared range.
    pub range: Allowed,
}

#[derive(Clone, Debug)]
pub struct AlgorithmInfo {
    pub name: &'static str,
    pub role: Role,
    pub summary: &'static str,
    pub source: &'static str,
    pub params: Vec<ParamInfo>,
}

/// The parameter table of a configuration type, with defaults read from its `Default`.
pub fn param_info<C: AlgorithmConfig>() -> Vec<ParamInfo> {
    let defaults = serde_json::to_value(C::default()).expect("config serializes");
    C::PARAMS
        .iter()
        .map(|p| ParamInfo {
            name: p.name,
            default: defaults
                .get(p.name)
                .map(|v| v.to_string())
                .unwrap_or_default(),
            description: p.description,
            unit: p.unit,
            allowed: p.allowed_text(),
            range: p.allowed,
        })
        .collect()
}

pub type ResolveParams = fn(&Params) -> Result<serde_json::Value, ParamError>;

/// Every parameter of a configuration type with its value, as the algorithm will use it (the
/// given ones, the defaults for the rest, after presets such as CUBIC's `constants`).
pub fn resolve<C: AlgorithmConfig>(params: &Params) -> Result<serde_json::Value, ParamError> {
    Ok(serde_json::to_value(parse::<C>(params)?).expect("config serializes"))
}

/// One new controller per call, all alike: a checked configuration's controller, as constructed.
pub type MakeCc = Arc<dyn Fn() -> Box<dyn CongestionControl> + Send + Sync>;
/// One new start-up algorithm per call, all alike.
pub type MakeStartup = Arc<dyn Fn() -> Box<dyn SlowStart> + Send + Sync>;
/// Checks the parameters of an algorithm and makes its configuration ready to build.
pub type PrepareCc = fn(&Params) -> Result<MakeCc, ParamError>;
pub type PrepareStartup = fn(&Params) -> Result<MakeStartup, ParamError>;

/// The controller `c`, constructed once from its configuration, for every connection.
fn cc_maker<C: CongestionControl + Clone + Send + Sync + 'static>(c: C) -> MakeCc {
    Arc::new(move || Box::new(c.clone()))
}

/// The start-up algorithm `s`, constructed once from its configuration, for every connection.
fn startup_maker<S: SlowStart + Clone + Send + Sync + 'static>(s: S) -> MakeStartup {
    Arc::new(move || Box::new(s.clone()))
}

pub struct CcEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub source: &'static str,
    /// Loss recovery used when the scenario says `recovery = "auto"` and SACK is off.
    pub recovery: &'static str,
    pub params: fn() -> Vec<ParamInfo>,
    /// Every parameter's value (the scenario's or the default), by name.
    pub resolve: ResolveParams,
    pub prepare: PrepareCc,
}

pub struct StartupEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub source: &'static str,
    pub params: fn() -> Vec<ParamInfo>,
    /// Every parameter's value (the scenario's or the default), by name.
    pub resolve: ResolveParams,
    pub prepare: PrepareStartup,
}

fn prepare_reno(p: &Params) -> Result<MakeCc, ParamError> {
    Ok(cc_maker(Reno::new(parse(p)?)))
}

const CCS: &[CcEntry] = &[
    CcEntry {
        name: "reno",
        summary: "AIMD with standard slow start; Reno fast recovery (leaves recovery on the first new ACK)",
        source: "RFC 5681 §3",
        recovery: "reno",
        params: param_info::<RenoConfig>,
        resolve: resolve::<RenoConfig>,
        prepare: prepare_reno,
    },
    CcEntry {
        name: "newreno",
        summary: "AIMD with standard slow start; NewReno fast recovery (partial ACKs retransmit the next hole)",
        source: "RFC 5681 §3, RFC 6582",
        recovery: "newreno",
        params: param_info::<RenoConfig>,
        resolve: resolve::<RenoConfig>,
        prepare: prepare_reno,
    },
    // Wang et al. 2004 (Wang et al.): Westwood+
    CcEntry {
        name: "westwood",
        summary: "NewReno growth; after a loss ssthresh = ERE x RTTmin (eligible rate estimate: adaptive interval T_k, Tustin filter)",
        source: "Wang et al. 2004 §II.B (Wang et al., TCP Westwood ERE)",
        recovery: "newreno",
        params: param_info::<super::westwood::WestwoodConfig>,
        resolve: resolve::<super::westwood::WestwoodConfig>,
        prepare: |p| Ok(cc_maker(super::westwood::Westwood::new(parse(p)?))),
    },
    // Wang et al. 2004 / Ho et al.: Vegas
    CcEntry {
        name: "vegas",
        summary: "Vegas: backlog Δ = W (RTT - BaseRTT) / RTT; +-1 segment per RTT outside [alpha, beta]; slow start doubling every other RTT until Δ > gamma",
        source: "Ho et al. §2, Wang et al. 2004 §III.D (Brakmo and Peterson)",
        recovery: "newreno",
        params: param_info::<super::vegas::VegasConfig>,
        resolve: resolve::<super::vegas::VegasConfig>,
        prepare: |p| Ok(cc_maker(super::vegas::Vegas::new(parse(p)?))),
    },
    // Cardwell et al. 2016; Linux net/ipv4/tcp_bbr.c
    CcEntry {
        name: "bbr",
        summary: "BBR v1: pacing and cwnd from a model of the path (max delivery rate over 10 rounds, min RTT over 10 s); Startup at 2/ln 2 until the rate grows < 25 % for 3 rounds, Drain, ProbeBW's 8-phase gain cycle, ProbeRTT; policer detection",
        source: "Cardwell et al., ACM Queue 14(5) 2016; Linux net/ipv4/tcp_bbr.c (6.18)",
        recovery: "newreno",
        params: param_info::<super::bbr::BbrConfig>,
        resolve: resolve::<super::bbr::BbrConfig>,
        prepare: |p| Ok(cc_maker(super::bbr::Bbr::new(parse(p)?))),
    },
    // Google's BBR v3 (github.com/google/bbr, v3 branch); draft-ietf-ccwg-bbr
    CcEntry {
        name: "bbr3",
        summary: "BBR v3: BBR's model with upper (bw_hi, inflight_hi) and lower (bw_lo, inflight_lo) bounds; Startup at 2.77 until the rate grows < 25 % for 3 rounds or loss > 2 %, Drain, ProbeBW Down/Cruise/Refill/Up with inflight_hi probing, ProbeRTT every 5 s at half the BDP",
        source: "Google's v3 tcp_bbr.c (github.com/google/bbr, v3); draft-ietf-ccwg-bbr",
        recovery: "newreno",
        params: param_info::<super::bbr3::Bbr3Config>,
        resolve: resolve::<super::bbr3::Bbr3Config>,
        prepare: |p| Ok(cc_maker(super::bbr3::Bbr3::new(parse(p)?))),
    },
    // RFC 8257; Linux net/ipv4/tcp_dctcp.c
    CcEntry {
        name: "dctcp",
        summary: "DCTCP: Reno's growth; once per window alpha += g (F - alpha) with F the fraction of segments echoed CE; on an echo ssthresh = cwnd (1 - alpha/2), on a loss cwnd/2; needs ECN (set whatever tcp.ecn says)",
        source: "RFC 8257 §3; Linux net/ipv4/tcp_dctcp.c (6.18)",
        recovery: "newreno",
        params: param_info::<super::dctcp::DctcpConfig>,
        resolve: resolve::<super::dctcp::DctcpConfig>,
        prepare: |p| Ok(cc_maker(super::dctcp::Dctcp::new(parse(p)?))),
    },
    // Ha 2009 (Ha): CUBIC, BIC-TCP, BLAST
    CcEntry {
        name: "cubic",
        summary: "CUBIC: W(t) = C (t - K)^3 + W_max in real time since the last reduction, TCP-friendly region, fast convergence; standard slow start",
        source: "Ha 2009 ch. 5 (Ha), Eqs. 5.1-5.4, Figs. 5.2-5.3; Linux net/ipv4/tcp_cubic.c",
        recovery: "newreno",
        params: param_info::<super::cubic::CubicConfig>,
        resolve: resolve::<super::cubic::CubicConfig>,
        prepare: |p| Ok(cc_maker(super::cubic::Cubic::new(parse(p)?)?)),
    },
    CcEntry {
        name: "bic",
        summary: "BIC-TCP: binary search towards W_max (steps at most S_max), max probing past it, standard TCP below low_window",
        source: "Ha 2009 §5.1.1 (Ha); Xu, Harfoush, Rhee 2004",
        recovery: "newreno",
        params: param_info::<super::bic::BicConfig>,
        resolve: resolve::<super::bic::BicConfig>,
        prepare: |p| Ok(cc_maker(super::bic::Bic::new(parse(p)?)?)),
    },
    // RFC 3649: HighSpeed TCP, which Ha 2009 Figs. 5.10-5.12 compare with CUBIC and BIC-TCP
    CcEntry {
        name: "hstcp",
        summary: "HighSpeed TCP: above low_window, cwnd += a(w)/cwnd per acknowledged segment and a loss cuts b(w) of the window, a(w) and b(w) from the HighSpeed response function; standard TCP at or below low_window",
        source: "RFC 3649; Linux net/ipv4/tcp_highspeed.c",
        recovery: "newreno",
        params: param_info::<super::hstcp::HstcpConfig>,
        resolve: resolve::<super::hstcp::HstcpConfig>,
        prepare: |p| Ok(cc_maker(super::hstcp::Hstcp::new(parse(p)?)?)),
    },
    CcEntry {
        name: "blast",
        summary: "BLAST: BIC-TCP that keeps its window on losses the round's mean queueing delay marks as non-congestion, and grows in fast recovery",
        source: "Ha 2009 ch. 7 (Ha), Eqs. 7.1-7.10, Figs. 7.7-7.9",
        recovery: "newreno",
        params: param_info::<super::blast::BlastConfig>,
        resolve: resolve::<super::blast::BlastConfig>,
        prepare: |p| Ok(cc_maker(super::blast::Blast::new(parse(p)?)?)),
    },
    // Ho et al. (Ho et al.): Gallop-Vegas
    CcEntry {
        name: "gallop-vegas",
        summary: "Vegas with stable-growth slow start: per-RTT increment incr grows by 1, halved when gamma <= Δ < beta, cut when Δ >= beta; one extra segment per two ACKs",
        source: "Ho et al. §3.2-3.3 (Ho, Chan, Chen)",
        recovery: "newreno",
        params: param_info::<super::gallop_vegas::GallopVegasConfig>,
        resolve: resolve::<super::gallop_vegas::GallopVegasConfig>,
        prepare: |p| Ok(cc_maker(super::gallop_vegas::GallopVegas::new(parse(p)?))),
    },
];

const STARTUPS: &[StartupEntry] = &[
    StartupEntry {
        name: "slow-start",
        summary:
            "standard slow start: cwnd += 1 segment per ACK, or min(acked, L) with byte counting",
        source: "RFC 5681 §3.1, RFC 3465",
        params: param_info::<StandardConfig>,
        resolve: resolve::<StandardConfig>,
        prepare: |p| Ok(startup_maker(Standard::new(parse(p)?))),
    },
    // Wang et al. 2004 (Wang et al.): Astart, Hoe's packet-pair ssthresh
    StartupEntry {
        name: "astart",
        summary: "Adaptive Start: ssthresh raised to ERE x RTTmin on every ACK until the first fast retransmit (again after timeouts)",
        source: "Wang et al. 2004 §IV (Wang et al.)",
        params: param_info::<super::astart::AstartConfig>,
        resolve: resolve::<super::astart::AstartConfig>,
        prepare: |p| Ok(startup_maker(super::astart::Astart::new(parse(p)?))),
    },
    StartupEntry {
        name: "hoe",
        summary: "standard slow start with ssthresh = least-squares bandwidth of three closely spaced ACKs x first RTT",
        source: "Wang et al. 2004 §III.C (Hoe, SIGCOMM 1996)",
        params: param_info::<super::hoe::HoeConfig>,
        resolve: resolve::<super::hoe::HoeConfig>,
        prepare: |p| Ok(startup_maker(super::hoe::Hoe::new(parse(p)?))),
    },
    // Wang et al. 2004 / Ho et al.: Vegas slow start
    StartupEntry {
        name: "vegas-ss",
        summary: "Vegas slow start: doubles every other RTT; leaves when Δ > gamma with cwnd cut by 1/8",
        source: "Ho et al. §2, Wang et al. 2004 §III.D",
        params: param_info::<super::vegas::VegasSsConfig>,
        resolve: resolve::<super::vegas::VegasSsConfig>,
        prepare: |p| Ok(startup_maker(super::vegas::VegasSlowStart::new(parse(p)?))),
    },
    // Deng et al. (Deng et al.): P-Start
    StartupEntry {
        name: "pstart",
        summary: "P-Start: x(gamma+1) per RTT below ssthresh/2, then closes gamma/(gamma+1) of the gap per RTT until it is below delta",
        source: "Deng et al. §2.2-2.3, eq. 3-4 (Deng, Chen, Zhang)",
        params: param_info::<super::pstart::PStartConfig>,
        resolve: resolve::<super::pstart::PStartConfig>,
        prepare: |p| Ok(startup_maker(super::pstart::PStart::new(parse(p)?))),
    },
    // Ha 2009 (Ha): HyStart
    StartupEntry {
        name: "hystart",
        summary: "HyStart: slow start left (ssthresh = cwnd) when the ACK train reaches min RTT / 2 or a round's early RTTs rise",
        source: "Ha 2009 §6.3, Fig. 6.7 (Ha); Linux net/ipv4/tcp_cubic.c (variant = \"linux\")",
        params: param_info::<super::hystart::HyStartConfig>,
        resolve: resolve::<super::hystart::HyStartConfig>,
        prepare: |p| Ok(startup_maker(super::hystart::HyStart::new(parse(p)?)?)),
    },
    // beyond the papers: Limited Slow Start (RFC 3742), HyStart++ (RFC 9406), SEARCH
    StartupEntry {
        name: "careful-resume",
        summary: "Careful Resume: after slow start confirms the path, cwnd jumps to half the window an earlier connection between the same hosts saved, paced over the RTT, and retreats on congestion",
        source: "draft-ietf-tsvwg-careful-resume-24 (RFC 9959)",
        params: param_info::<super::careful_resume::CarefulResumeConfig>,
        resolve: resolve::<super::careful_resume::CarefulResumeConfig>,
        prepare: |p| {
            Ok(startup_maker(super::careful_resume::CarefulResume::new(
                parse(p)?,
            )))
        },
    },
    StartupEntry {
        name: "lss",
        summary: "Limited Slow Start: above max_ssthresh, at most max_ssthresh/2 segments of growth per RTT",
        source: "RFC 3742 §2 (Ha 2009 §3.2.3)",
        params: param_info::<LssConfig>,
        resolve: resolve::<LssConfig>,
        prepare: |p| Ok(startup_maker(LimitedSlowStart::new(parse(p)?))),
    },
    StartupEntry {
        name: "hystart++",
        summary: "slow start until a round's minimum RTT rises, then Conservative Slow Start for css_rounds rounds",
        source: "RFC 9406",
        params: param_info::<HystartPpConfig>,
        resolve: resolve::<HystartPpConfig>,
        prepare: |p| Ok(startup_maker(HystartPp::new(parse(p)?))),
    },
    StartupEntry {
        name: "search",
        summary: "leaves slow start when delivered bytes stop doubling per RTT (binned over 3.5 RTTs)",
        source: "draft-chung-ccwg-search (SEARCH 3.0)",
        params: param_info::<SearchConfig>,
        resolve: resolve::<SearchConfig>,
        prepare: |p| Ok(startup_maker(Search::new(parse(p)?))),
    },
    // Arghavani et al., SIGCOMM 2024; the authors' Linux (SUSSdeveloper/SUSS)
    StartupEntry {
        name: "suss",
        summary: "SUSS on CUBIC with Linux's HyStart: while a round's ACK train is short against minRTT and predicted to stay so, the window grows x4 per round instead of x2, the extra segments paced over the part of the RTT the ACK-clocked ones leave; its own ACK-train exit replaces HyStart's, HyStart's delay exit stays",
        source: "Arghavani et al., SIGCOMM 2024; SUSSdeveloper/SUSS sourceCode/linux-6.8/suss (tcp_cubic.c suss_measurements, suss_speedup, suss_cap; tcp_output.c; tcp_input.c)",
        params: param_info::<super::suss::SussConfig>,
        resolve: resolve::<super::suss::SussConfig>,
        prepare: |p| Ok(startup_maker(super::suss::Suss::new(parse(p)?))),
    },
];

/// A mechanism of the sender that is not a controller: pacing modes and the initial window,
/// set under `[tcp]` (or a flow's `tcp`), with their fields as parameters.
struct SenderEntry {
    name: &'static str,
    role: Role,
    summary: &'static str,
    source: &'static str,
    params: &'static [(Param, &'static str)],
}

const PACING_RATIOS: &[(Param, &str)] = &[
    (
        param("tcp.pacing_ss_ratio", "", above(0.0, 100.0), "rate = ratio x cwnd / srtt while cwnd < ssthresh / 2 (Linux sysctl tcp_pacing_ss_ratio, 200 %)"),
        "2.0",
    ),
    (
        param("tcp.pacing_ca_ratio", "", above(0.0, 100.0), "rate = ratio x cwnd / srtt otherwise (tcp_pacing_ca_ratio, 120 %)"),
        "1.2",
    ),
];

const SENDER: &[SenderEntry] = &[
    SenderEntry {
        name: "none",
        role: Role::Pacing,
        summary: "tcp.pacing = \"none\": segments leave as the window opens, unless the controller sets a pacing rate",
        source: "RFC 5681",
        params: &[],
    },
    SenderEntry {
        name: "window",
        role: Role::Pacing,
        summary: "tcp.pacing = \"window\": the whole window spread over the smoothed RTT, rate = cwnd / srtt, on every ACK",
        source: "Aggarwal, Savage, Anderson 2000; Sallantin et al. 2013 §II.B (Pacing)",
        params: &[],
    },
    SenderEntry {
        name: "linux",
        role: Role::Pacing,
        summary: "tcp.pacing = \"linux\": Linux's internal pacing, rate = ratio x max(cwnd, packets out) / srtt",
        source: "Linux net/ipv4/tcp_input.c tcp_update_pacing_rate",
        params: PACING_RATIOS,
    },
    SenderEntry {
        name: "initial-spreading",
        role: Role::Pacing,
        summary: "tcp.pacing = \"initial-spreading\": Initial Spreading, the initial window spaced evenly over the RTT measured on the handshake (one segment every RTT / IW), then ACK clocking; needs tcp.handshake = true",
        source: "Sallantin et al. 2013 §III (Initial Spreading)",
        params: &[],
    },
    SenderEntry {
        name: "initial-window",
        role: Role::InitialWindow,
        summary: "tcp.initial_window: the window before the first ACK, in segments (10: IW10) or bytes (\"4380B\": RFC 3390); a large initial window (LIW) for satellite paths",
        source: "RFC 3390, RFC 6928; Wang et al. 2004 §V (LIW); Sallantin et al. 2013 (IW10)",
        params: &[(
            param("tcp.initial_window", "segments", closed(1.0, 1e6), "segments, or bytes with a unit (\"4380B\")"),
            "1",
        )],
    },
];

/// Every algorithm, controllers first, then start-up algorithms, then the sender's pacing modes
/// and initial window.
pub fn algorithms() -> Vec<AlgorithmInfo> {
    let ccs = CCS.iter().map(|e| AlgorithmInfo {
        name: e.name,
        role: Role::Cc,
        summary: e.summary,
        source: e.source,
        params: (e.params)(),
    });
    let startups = STARTUPS.iter().map(|e| AlgorithmInfo {
        name: e.name,
        role: Role::Startup,
        summary: e.summary,
        source: e.source,
        params: (e.params)(),
    });
    let sender = SENDER.iter().map(|e| AlgorithmInfo {
        name: e.name,
        role: e.role,
        summary: e.summary,
        source: e.source,
        params: e
            .params
            .iter()
            .map(|(p, default)| ParamInfo {
                name: p.name,
                default: default.to_string(),
                description: p.description,
                unit: p.unit,
                allowed: p.allowed_text(),
                range: p.allowed,
            })
            .collect(),
    });
    ccs.chain(startups).chain(sender).collect()
}

/// Controllers whose start-up is part of their model (they set cwnd in `cong_control`): no
/// slow start can replace theirs.
const OWN_STARTUP: &[&str] = &["bbr", "bbr3"];

/// Whether a `startup` may replace controller `cc`'s slow start (not BBR's Startup).
pub fn startup_replaceable(cc: &str) -> bool {
    !OWN_STARTUP.contains(&cc)
}

/// The name `startup` takes to mean "the controller's own slow start".
pub const DEFAULT_STARTUP: &str = "default";

/// Start-up algorithms that are part of one controller's code in their source, with the
/// controllers they run on and why: SUSS is a change to Linux's `tcp_cubic.c` (its HyStart, its
/// loss response), so it runs on CUBIC only.
pub const STARTUP_CONTROLLERS: &[(&str, &[&str], &str)] = &[(
    "suss",
    &["cubic"],
    "SUSS is part of the authors' tcp_cubic.c: it replaces CUBIC's HyStart ACK-train exit, keeps its delay exit and changes CUBIC's loss response",
)];

/// The controllers start-up algorithm `startup` may run on, `None` for any whose slow start
/// can be replaced.
pub fn startup_controllers(startup: &str) -> Option<&'static [&'static str]> {
    STARTUP_CONTROLLERS
        .iter()
        .find(|(s, _, _)| *s == startup)
        .map(|(_, ccs, _)| *ccs)
}

/// A controller start-up algorithm `startup` runs on: NewReno for those that run on any, the
/// first of theirs for the others (what the tests that run every algorithm pair it with).
pub fn host_controller(startup: &str) -> &'static str {
    startup_controllers(startup).map_or("newreno", |ccs| ccs[0])
}

/// Start-up algorithms that pace their own segments as the authors' kernel does, which needs
/// a sender that does not pace by itself (`tcp.pacing = "none"`): the authors' SUSS turns
/// itself off on a socket that is already paced (`cubictcp_init`).
pub const UNPACED_SENDER_ONLY: &[&str] = &["suss"];

/// Start-up algorithms that keep what a connection saw for the next one between the same
/// hosts, saved when the connection closes: Careful Resume (its port in `release`). The kernel
/// world closes their connections with FINs, as an application does: an abortive close
/// (`SO_LINGER` 0) runs `tcp_disconnect`, which resets cwnd and ssthresh before `release`.
pub const SAVES_PATH_STATE: &[&str] = &["careful-resume"];

/// The algorithms without an eBPF port yet, and why: the kernel world refuses them by name.
pub const WITHOUT_PORT: &[(&str, &str)] = &[];

/// Which part of a flow's algorithm specification is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    /// `"cc"`, `"startup"`, `"cc_params"`, `"cc_params.NAME"`, `"startup_params"` or
    /// `"startup_params.NAME"`.
    pub field: String,
    pub message: String,
}

/// The field of a parameter error under `cc_params` or `startup_params`.
fn param_field(group: &str, e: ParamError) -> BuildError {
    BuildError {
        field: match e.name {
            Some(name) => format!("{group}.{name}"),
            None => group.to_string(),
        },
        message: e.message,
    }
}

fn names<T>(entries: &[T], name: fn(&T) -> &'static str) -> String {
    entries
        .iter()
        .map(|e| format!("\"{}\"", name(e)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A Rust model checked and ready to run: the controller `cc` with its parameters, its slow
/// start replaced by `startup` unless that is `"default"`. Each [`Model::build`] makes one
/// connection's controller from the configuration checked here, with no look-up and no parsing.
#[derive(Clone)]
pub struct Model {
    cc: &'static CcEntry,
    /// `None`: the controller's own slow start.
    startup: Option<&'static StartupEntry>,
    cc_params: Params,
    startup_params: Params,
    make_cc: MakeCc,
    make_startup: Option<MakeStartup>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Model({}, {})", self.cc.name, self.startup_name())
    }
}

impl Model {
    /// Checks `cc` and `startup` with their parameters.
    pub fn new(
        cc: &str,
        cc_params: &Params,
        startup: &str,
        startup_params: &Params,
    ) -> Result<Model, BuildError> {
        let entry = CCS
            .iter()
            .find(|e| e.name == cc)
            .ok_or_else(|| BuildError {
                field: "cc".into(),
                message: format!(
                    "unknown congestion control \"{cc}\"; available: {}",
                    names(CCS, |e| e.name)
                ),
            })?;
        let make_cc = (entry.prepare)(cc_params).map_err(|e| param_field("cc_params", e))?;
        if startup != DEFAULT_STARTUP && !startup_replaceable(entry.name) {
            return Err(BuildError {
                field: "startup".into(),
                message: format!(
                    "\"{}\" sets cwnd and pacing from its model on every ACK (cong_control), its Startup included, so no slow start can replace it: startup must be \"default\", not \"{startup}\"",
                    entry.name
                ),
            });
        }
        if let Some((_, ccs, why)) = STARTUP_CONTROLLERS
            .iter()
            .find(|(s, ccs, _)| *s == startup && !ccs.contains(&entry.name))
        {
            return Err(BuildError {
                field: "startup".into(),
                message: format!(
                    "\"{startup}\" runs on {} only, not on \"{}\" ({why})",
                    ccs.iter()
                        .map(|c| format!("\"{c}\""))
                        .collect::<Vec<_>>()
                        .join(", "),
                    entry.name
                ),
            });
        }
        let (startup_entry, make_startup) = if startup == DEFAULT_STARTUP {
            if !startup_params.is_empty() {
                return Err(BuildError {
                    field: "startup_params".into(),
                    message: "parameters given for the default slow start; set them in cc_params or name a startup".into(),
                });
            }
            (None, None)
        } else {
            let s = STARTUPS
                .iter()
                .find(|e| e.name == startup)
                .ok_or_else(|| BuildError {
                    field: "startup".into(),
                    message: format!(
                        "unknown startup algorithm \"{startup}\"; available: \"default\", {}",
                        names(STARTUPS, |e| e.name)
                    ),
                })?;
            let make = (s.prepare)(startup_params).map_err(|e| param_field("startup_params", e))?;
            (Some(s), Some(make))
        };
        Ok(Model {
            cc: entry,
            startup: startup_entry,
            cc_params: cc_params.clone(),
            startup_params: startup_params.clone(),
            make_cc,
            make_startup,
        })
    }

    /// A new controller for one connection.
    pub fn build(&self) -> Box<dyn CongestionControl> {
        let controller = (self.make_cc)();
        match &self.make_startup {
            None => controller,
            Some(make) => Box::new(WithStartup {
                cc: controller,
                startup: make(),
            }),
        }
    }

    pub fn cc_name(&self) -> &'static str {
        self.cc.name
    }

    /// The start-up algorithm's name, `"default"` for the controller's own.
    pub fn startup_name(&self) -> &'static str {
        self.startup.map_or(DEFAULT_STARTUP, |s| s.name)
    }

    /// Every parameter of the controller and of the start-up algorithm (`None` for the
    /// controller's own), with the values they run with, by name.
    pub fn resolved_params(
        &self,
    ) -> Result<(serde_json::Value, Option<serde_json::Value>), BuildError> {
        let c = (self.cc.resolve)(&self.cc_params).map_err(|e| param_field("cc_params", e))?;
        let s = match self.startup {
            Some(e) => Some(
                (e.resolve)(&self.startup_params).map_err(|e| param_field("startup_params", e))?,
            ),
            None => None,
        };
        Ok((c, s))
    }

    /// The loss recovery the controller uses by default (`recovery = "auto"` without SACK).
    pub fn default_recovery(&self) -> &'static str {
        self.cc.recovery
    }
}

/// Builds the controller of a flow: `cc` with its parameters, its slow start replaced by
/// `startup` unless that is `"default"`.
pub fn build(
    cc: &str,
    cc_params: &Params,
    startup: &str,
    startup_params: &Params,
) -> Result<Box<dyn CongestionControl>, BuildError> {
    Ok(Model::new(cc, cc_params, startup, startup_params)?.build())
}

/// The loss recovery a controller uses by default (`recovery = "auto"` without SACK).
pub fn default_recovery(cc: &str) -> &'static str {
    CCS.iter()
        .find(|e| e.name == cc)
        .map(|e| e.recovery)
        .unwrap_or("newreno")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SAVES_PATH_STATE` (which the kernel world reads to close connections gracefully) names
    /// exactly the start-up algorithms whose model resumes from saved path state, so that a
    /// second such algorithm cannot be added to one and forgotten in the other.
    #[test]
    fn the_algorithms_that_save_path_state_are_those_whose_model_resumes() {
        let mut resuming = Vec::new();
        for s in STARTUPS {
            let cc = host_controller(s.name);
            let model = Model::new(cc, &Params::new(), s.name, &Params::new())
                .unwrap_or_else(|e| panic!("{} on {cc}: {e:?}", s.name));
            if model.build().resumes() {
                resuming.push(s.name);
            }
        }
        assert_eq!(resuming, SAVES_PATH_STATE);
    }

    #[test]
    fn every_listed_parameter_exists_with_a_default() {
        for a in algorithms() {
            for p in &a.params {
                assert!(
                    !p.default.is_empty(),
                    "{} {} has no default",
                    a.name,
                    p.name
                );
            }
        }
    }

    #[test]
    fn unknown_names_are_reported_with_the_alternatives() {
        let e = build("cubicc", &Params::new(), "default", &Params::new()).unwrap_err();
        assert_eq!(e.field, "cc");
        assert!(
            e.message.contains("\"cubicc\"") && e.message.contains("\"newreno\""),
            "{}",
            e.message
        );
        let mut bad = Params::new();
        bad.insert("betta".into(), serde_json::json!(0.5));
        let e = build("reno", &bad, "default", &Params::new()).unwrap_err();
        assert_eq!(e.field, "cc_params");
        assert!(e.message.contains("betta"), "{}", e.message);
    }
}
