//! Defaults: what a field left out of a document means.
//!
//! The TCP defaults come whole, per stack ([`stack_defaults`]), so that a merged `[tcp]` is a
//! [`FilledTcp`]; link and queue defaults are merged onto what a document writes before each
//! direction is filled in ([`fill_directions`]).

use super::filled::FilledTcp;
use super::model::*;
use super::units::{DurationText, Limitable, QueueLimit, RateText, Window};
use crate::cc::params::Params;
use crate::tcp::TcpConfig;
use crate::time::Duration;
use crate::units::Rate;

pub const DEFAULT_NAME: &str = "scenario";
pub const DEFAULT_SEED: u64 = 1;
/// The controller of a TCP entry that names none.
pub const DEFAULT_CC: &str = "newreno";
/// The packets of a UDP entry that gives no `packet_size`.
pub const DEFAULT_PACKET_BYTES: u64 = 1000;
/// An on-off source's and a size distribution's Pareto shape.
pub const DEFAULT_PARETO_SHAPE: f64 = 1.5;
/// How often series are sampled.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);

/// The ns-2-era TCP of the papers.
fn ns2_tcp() -> FilledTcp {
    let c = TcpConfig::default();
    FilledTcp {
        stack: StackText::Ns2,
        loss_detection: LossDetectionText::Dupthresh,
        ack_policy: AckPolicyText::Rfc5681,
        rto: RtoText::Rfc6298,
        hz: 250,
        mss: c.mss_bytes as u64,
        header: c.header_bytes as u64,
        ack_size: c.ack_bytes as u64,
        initial_window: Window::Segments(c.initial_window),
        initial_ssthresh: Limitable::Unlimited,
        receive_window: Limitable::Unlimited,
        delayed_ack: c.delayed_ack,
        delayed_ack_timeout: c.delayed_ack_timeout,
        sack: c.sack,
        recovery: RecoveryText::Auto,
        dupack_threshold: c.dupack_threshold,
        min_rto: c.min_rto,
        max_rto: c.max_rto,
        initial_rto: c.initial_rto,
        clock_granularity: c.clock_granularity,
        handshake: c.handshake,
        undo: c.undo,
        dsack: c.dsack,
        ecn: c.ecn,
        frto: c.frto,
        restart_after_idle: c.restart_after_idle,
        metrics: false,
        metrics_ssthresh: false,
        tso_defer: false,
        pacing: PacingText::None,
        pacing_ss_ratio: 2.0,
        pacing_ca_ratio: 1.2,
    }
}

/// One jiffy of a kernel built with `CONFIG_HZ = hz`, the clock of its RTO (`tcp_set_rto`).
fn jiffy(hz: u32) -> Duration {
    Duration::from_nanos(1_000_000_000 / hz.max(1) as u64)
}

/// The defaults of `stack = "linux"`: Linux 6.18 as Debian builds it (HZ = 250, or the
/// document's `hz`) on a 1500-byte MTU with timestamps (1448 bytes of payload, 52 of headers;
/// ACKs 52 bytes).
fn linux_tcp(hz: Option<u32>) -> FilledTcp {
    let hz = hz.unwrap_or(250);
    FilledTcp {
        stack: StackText::Linux,
        mss: 1448,
        header: 52,
        ack_size: 52,
        // TCP_INIT_CWND; ssthresh starts at TCP_INFINITE_SSTHRESH.
        initial_window: Window::Segments(10),
        initial_ssthresh: Limitable::Unlimited,
        receive_window: Limitable::Unlimited,
        delayed_ack: true,
        delayed_ack_timeout: Duration::from_millis(40),
        sack: true,
        recovery: RecoveryText::Prr,
        // net.ipv4.tcp_reordering
        dupack_threshold: 3,
        // TCP_RTO_MIN, TCP_RTO_MAX, TCP_TIMEOUT_INIT; in jiffies (4 ms at HZ 250).
        min_rto: Duration::from_millis(200),
        max_rto: Duration::from_secs(120),
        initial_rto: Duration::from_secs(1),
        clock_granularity: jiffy(hz),
        handshake: true,
        undo: true,
        // net.ipv4.tcp_dsack = 1, net.ipv4.tcp_frto = 2
        dsack: true,
        // net.ipv4.tcp_ecn = 2: a Linux host accepts ECN but does not ask for it.
        ecn: false,
        frto: true,
        // net.ipv4.tcp_slow_start_after_idle = 1
        restart_after_idle: true,
        // Off, unlike Linux's tcp_no_metrics_save = 0: each connection starts from the
        // scenario's settings unless the scenario asks for the cache.
        metrics: false,
        // net.ipv4.tcp_no_ssthresh_metrics_save = 1
        metrics_ssthresh: false,
        tso_defer: false,
        // Unpaced unless the controller asks (a host without fq).
        pacing: PacingText::None,
        // net.ipv4.tcp_pacing_ss_ratio / tcp_pacing_ca_ratio
        pacing_ss_ratio: 2.0,
        pacing_ca_ratio: 1.2,
        // net.ipv4.tcp_recovery = RACK, tcp_early_retrans = 3 (TLP)
        loss_detection: LossDetectionText::RackTlp,
        ack_policy: AckPolicyText::Linux,
        rto: RtoText::Linux,
        hz,
    }
}

/// The defaults of a document's `[tcp]`: its stack's.
fn stack_defaults(t: &TcpSpec) -> FilledTcp {
    match t.stack {
        Some(StackText::Linux) => linux_tcp(t.hz),
        _ => ns2_tcp(),
    }
}

/// A document's `[tcp]` over its stack's defaults.
pub fn document_tcp(t: &TcpSpec) -> FilledTcp {
    stack_defaults(t).under(t)
}

/// A flow's `tcp` over the document's filled one. Under the Linux stack, a flow that sets its
/// own `hz` without a `clock_granularity` gets that kernel's jiffy as its clock too.
pub fn flow_tcp(flow: Option<&TcpSpec>, doc: &FilledTcp) -> FilledTcp {
    let Some(flow) = flow else {
        return doc.clone();
    };
    let mut merged = doc.under(flow);
    if let (StackText::Linux, Some(hz), None) = (doc.stack, flow.hz, flow.clock_granularity) {
        merged.clock_granularity = jiffy(hz);
    }
    merged
}

/// Under `stack = "linux"`, the controllers Linux has count as Linux counts, unless the flow
/// says otherwise: `reno`/`newreno` as `tcp_reno_cong_avoid`, CUBIC and HyStart as
/// `tcp_cubic.c` (CUBIC in jiffies of `tcp.hz`).
pub fn linux_controller_defaults(
    cc: &str,
    cc_params: &mut Params,
    startup: &str,
    startup_params: &mut Params,
    hz: u32,
) {
    let linux = || serde_json::Value::String("linux".into());
    if matches!(cc, "reno" | "newreno") {
        cc_params.entry("counting").or_insert_with(linux);
    }
    // tcp_cubic.c counts time in the kernel's jiffies, and tcp_bbr.c (v1 and v3) its min-RTT
    // filters and ProbeRTT (their other defaults already are Linux's).
    if matches!(cc, "cubic" | "bbr" | "bpf:bbr" | "bbr3" | "bpf:bbr3") {
        cc_params.entry("hz").or_insert_with(|| hz.into());
    }
    // A user's object gets the kernel's clock too: its bpf_jiffies64 and its CONFIG_HZ.
    if let Some(target) = cc.strip_prefix("bpf:") {
        if crate::cc::bpf::is_user_object(target) {
            cc_params.entry("hz").or_insert_with(|| hz.into());
        }
    }
    if startup == "hystart" {
        startup_params.entry("variant").or_insert_with(linux);
    }
}

/// `over`'s fields where set, else `base`'s.
pub fn merge_link(over: &LinkSpec, base: &LinkSpec) -> LinkSpec {
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
        reverse_loss,
        jitter,
        reverse_jitter,
        reorder,
        reverse_reorder
    )
}

/// An access link: 1 Gbit/s, 1 ms, 1000 packets of drop-tail.
pub fn default_access() -> LinkSpec {
    LinkSpec {
        rate: Some(RateText(Rate::from_bps(1_000_000_000)).into()),
        delay: Some(DurationText(Duration::from_millis(1)).into()),
        queue: Some(droptail(QueueLimit::Packets(1000))),
        ..LinkSpec::default()
    }
}

/// The bottleneck's (and a parking lot's hops') defaults: one BDP of drop-tail.
pub fn bottleneck_defaults() -> LinkSpec {
    LinkSpec {
        queue: Some(droptail(QueueLimit::Bdp(1.0))),
        ..LinkSpec::default()
    }
}

fn droptail(limit: QueueLimit) -> QueueSpec {
    QueueSpec {
        limit: Some(limit),
        ..QueueSpec::of(QueueKind::Droptail)
    }
}

/// Reverse direction defaults to the forward one; RED parameters get their defaults.
pub fn fill_directions(mut l: LinkSpec) -> LinkSpec {
    l.reverse_rate = l.reverse_rate.or(l.rate.clone());
    l.reverse_delay = l.reverse_delay.or(l.delay.clone());
    l.queue = l.queue.map(fill_queue);
    l.reverse_queue = l.reverse_queue.map(fill_queue).or(l.queue.clone());
    l.loss = Some(l.loss.unwrap_or(0.0.into()));
    l.reverse_loss = Some(l.reverse_loss.unwrap_or(0.0.into()));
    l
}

/// A queue's limit (one BDP) and, for RED, its thresholds.
pub fn fill_queue(mut q: QueueSpec) -> QueueSpec {
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
        // Linux 6.18's defaults (sch_codel.c, sch_fq_codel.c, pie.h); the MTU is an Ethernet
        // payload's, which a TUN device also has.
        QueueKind::Codel | QueueKind::FqCodel => {
            let fq = q.kind == QueueKind::FqCodel;
            q.limit = q
                .limit
                .or(Some(QueueLimit::Packets(if fq { 10_240 } else { 1000 })));
            q.target = q.target.or(Some(DurationText(Duration::from_millis(5))));
            q.interval = q
                .interval
                .or(Some(DurationText(Duration::from_millis(100))));
            q.ecn = q.ecn.or(Some(fq));
            q.mtu = q.mtu.or(Some(1500));
            if fq {
                q.flows = q.flows.or(Some(1024));
                q.quantum = q.quantum.or(Some(1514));
                q.memory_limit = q.memory_limit.or(Some(32 << 20));
                q.drop_batch = q.drop_batch.or(Some(64));
            }
        }
        QueueKind::Pie => {
            q.limit = q.limit.or(Some(QueueLimit::Packets(1000)));
            q.target = q.target.or(Some(DurationText(Duration::from_millis(15))));
            q.tupdate = q.tupdate.or(Some(DurationText(Duration::from_millis(15))));
            q.alpha = q.alpha.or(Some(2));
            q.beta = q.beta.or(Some(20));
            q.ecn = q.ecn.or(Some(false));
            q.bytemode = q.bytemode.or(Some(false));
            q.dq_rate_estimator = q.dq_rate_estimator.or(Some(false));
            q.mtu = q.mtu.or(Some(1500));
        }
    }
    q
}
