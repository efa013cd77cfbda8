//! The scenario file format (docs/scenario.md is its reference).
//!
//! Every struct denies unknown fields. Fields that have defaults are `Option`s here; the stages
//! of [`super::resolve`] fill them into a [`super::filled::FilledScenario`], whose document
//! serializes with every field present.
//! Sections whose fields depend on a `kind` (topology, flows, queues) are flat structs checked per
//! kind during resolution, so that errors keep their full path (`flows[2].rate`).

use super::schedule::{DelayValue, LossValue, RateValue, ReorderSpec};
use super::units::{DurationText, Interval, Limitable, QueueLimit, RateText, SizeText, Window};
use crate::cc::registry::Params;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub duration: DurationText,
    pub topology: Topology,
    #[serde(default)]
    pub tcp: TcpSpec,
    pub flows: Vec<FlowSpec>,
    #[serde(default)]
    pub measure: MeasureSpecText,
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    Dumbbell,
    /// Independent copies of the dumbbell path, one per pair.
    Parallel,
    ParkingLot,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub kind: TopologyKind,
    /// RTT that defines "BDP"; default: round-trip propagation delay of the first path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bdp_rtt: Option<DurationText>,
    pub bottleneck: LinkSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<LinkSpec>,
    // dumbbell
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<Vec<PairSpec>>,
    // parking lot
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_pairs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_pairs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop: Option<Vec<LinkSpec>>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PairSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_access: Option<LinkSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_access: Option<LinkSpec>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// A rate, or a schedule of rates, or a trace (docs/variable-links.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateValue>,
    /// A delay, or a schedule of delays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<DelayValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_rate: Option<RateValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_delay: Option<DelayValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_queue: Option<QueueSpec>,
    /// A probability, a schedule of probabilities, or a Gilbert–Elliott model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_loss: Option<LossValue>,
    /// Extra delay per packet, uniform in [0, jitter], without reordering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_jitter: Option<DurationText>,
    /// Packets held back and overtaken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<ReorderSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_reorder: Option<ReorderSpec>,
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    Droptail,
    Red,
    Codel,
    #[serde(rename = "fq_codel", alias = "fq-codel")]
    FqCodel,
    Pie,
}

impl QueueKind {
    pub fn name(self) -> &'static str {
        match self {
            QueueKind::Droptail => "droptail",
            QueueKind::Red => "red",
            QueueKind::Codel => "codel",
            QueueKind::FqCodel => "fq_codel",
            QueueKind::Pie => "pie",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    pub kind: QueueKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<QueueLimit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_th: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_th: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w_q: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gentle: Option<bool>,
    /// CoDel, FQ-CoDel, PIE: the target queueing delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<DurationText>,
    /// CoDel, FQ-CoDel: the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<DurationText>,
    /// CoDel, FQ-CoDel: mark ECT packets whose sojourn exceeds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ce_threshold: Option<DurationText>,
    /// CoDel, FQ-CoDel, PIE: mark ECT packets instead of dropping them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    /// CoDel, FQ-CoDel, PIE: the device's MTU as the qdisc sees it (bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// FQ-CoDel: buckets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<u32>,
    /// FQ-CoDel: bytes per round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
    /// FQ-CoDel: bytes of queued packets before it drops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
    /// FQ-CoDel: packets dropped at most per overflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_batch: Option<u32>,
    /// PIE: the probability update interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tupdate: Option<DurationText>,
    /// PIE: alpha and beta in sixteenths (Linux's `tc` units).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<u32>,
    /// PIE: scale the probability by packet size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytemode: Option<bool>,
    /// PIE: the delay from a departure-rate estimate instead of timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dq_rate_estimator: Option<bool>,
}

impl QueueSpec {
    /// A queue of `kind` with every field unset.
    pub fn of(kind: QueueKind) -> Self {
        QueueSpec {
            kind,
            limit: None,
            min_th: None,
            max_th: None,
            max_p: None,
            w_q: None,
            gentle: None,
            target: None,
            interval: None,
            ce_threshold: None,
            ecn: None,
            mtu: None,
            flows: None,
            quantum: None,
            memory_limit: None,
            drop_batch: None,
            tupdate: None,
            alpha: None,
            beta: None,
            bytemode: None,
            dq_rate_estimator: None,
        }
    }
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RecoveryText {
    Auto,
    Reno,
    Newreno,
    Sack,
    Prr,
}

/// `tcp.stack`: whose TCP the flows run, and so every default of `[tcp]`.
#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum StackText {
    /// The ns-2-era TCP of the papers (the default; the reproduction depends on it).
    Ns2,
    /// The TCP of Linux 6.18 (RACK-TLP, PRR, Linux's receiver, RTO and defaults).
    Linux,
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LossDetectionText {
    Dupthresh,
    Rack,
    RackTlp,
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum AckPolicyText {
    Rfc5681,
    Linux,
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RtoText {
    Rfc6298,
    Linux,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<StackText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<SizeText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<SizeText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_size: Option<SizeText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_window: Option<Window>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_ssthresh: Option<Limitable>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_window: Option<Limitable>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed_ack: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed_ack_timeout: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sack: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dupack_threshold: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rto: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rto: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_rto: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_granularity: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<bool>,
    /// D-SACK (RFC 2883): the receiver reports duplicates; the Linux recovery undoes from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsack: Option<bool>,
    /// ECN (RFC 3168): data is ECT(0), the receiver echoes CE, the sender reduces once a window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    /// F-RTO (RFC 5682) after a timeout; the Linux recovery only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frto: Option<bool>,
    /// Restart the window after idle (Linux `tcp_slow_start_after_idle`; RFC 5681 §4.1 on the
    /// ns-2 stack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_after_idle: Option<bool>,
    /// Linux's TCP metrics between connections to the same host (the Linux stack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<bool>,
    /// With `metrics`: ssthresh saved and restored too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_ssthresh: Option<bool>,
    /// Linux's GSO sizing and deferral of new data (the Linux stack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tso_defer: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<PacingText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_ss_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_ca_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_detection: Option<LossDetectionText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_policy: Option<AckPolicyText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto: Option<RtoText>,
    /// Linux receiver: the kernel's timer frequency (`CONFIG_HZ`), for delayed ACKs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hz: Option<u32>,
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PacingText {
    None,
    Window,
    Linux,
    InitialSpreading,
}

#[derive(Copy, Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    #[default]
    Tcp,
    Cbr,
    OnOff,
    TcpArrivals,
}

impl FlowKind {
    pub fn name(self) -> &'static str {
        match self {
            FlowKind::Tcp => "tcp",
            FlowKind::Cbr => "cbr",
            FlowKind::OnOff => "on-off",
            FlowKind::TcpArrivals => "tcp-arrivals",
        }
    }
}

/// A TCP flow's size: `"unlimited"` or bytes; for `tcp-arrivals`, a distribution.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FlowSizeSpec {
    Fixed(Limitable),
    Distribution(SizeDistributionSpec),
}

impl<'de> Deserialize<'de> for FlowSizeSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, value::MapAccessDeserializer, IntoDeserializer, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FlowSizeSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"unlimited\", a size such as \"100KB\", or a size distribution table")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FlowSizeSpec, E> {
                let d: de::value::StrDeserializer<E> = v.into_deserializer();
                Limitable::deserialize(d).map(FlowSizeSpec::Fixed)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<FlowSizeSpec, E> {
                Err(E::custom(format!(
                    "invalid size {v}: write it with a unit, such as \"{v}B\""
                )))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<FlowSizeSpec, E> {
                Err(E::custom(format!(
                    "invalid size {v}: expected a positive size with a unit, such as \"100KB\""
                )))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<FlowSizeSpec, A::Error> {
                SizeDistributionSpec::deserialize(MapAccessDeserializer::new(map))
                    .map(FlowSizeSpec::Distribution)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SizeDistributionKind {
    Fixed,
    Exponential,
    Pareto,
    LognormalPareto,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SizeDistributionSpec {
    pub distribution: SizeDistributionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<SizeText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<SizeText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_shape: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_min: Option<SizeText>,
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum OnOffDistributionText {
    Exponential,
    Pareto,
    Constant,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    #[serde(default)]
    pub kind: FlowKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stagger: Option<DurationText>,
    // TCP
    /// A controller's name, `"bpf:NAME"` (startlab's eBPF port run by the simulator's VM), or
    /// a table `{ bpf = "FILE.o" }` (a user's eBPF object), kept as `"bpf:FILE.o"`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "cc_text"
    )]
    pub cc: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_params: Option<Params>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_params: Option<Params>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<FlowSizeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpSpec>,
    /// An application that writes responses one at a time, idle in between (`kind = "tcp"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<RequestsSpec>,
    // UDP
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<SizeText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_time: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_time: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<OnOffDistributionText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
    // arrivals
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_interarrival: Option<DurationText>,
}

/// `requests = { count, size, think, think_distribution, think_shape }`: `count` responses
/// (by default until the flow stops or the run ends) of `size` bytes (a size or a size
/// distribution), each written `think` after the previous one was acknowledged.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RequestsSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    pub size: FlowSizeSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<DurationText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_distribution: Option<OnOffDistributionText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_shape: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpecText {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_series: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_series: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub window: Vec<WindowSpec>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    pub link: String,
    pub from: DurationText,
    pub to: DurationText,
}

/// `cc` as a string, or as `{ bpf = "FILE.o" }` or `{ bpf = "FILE.o", ops = "NAME" }` (the
/// object's struct_ops variable NAME, for an object with several), written back as
/// `"bpf:FILE.o"` or `"bpf:FILE.o#NAME"`.
fn cc_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Object {
        bpf: String,
        ops: Option<String>,
    }
    let v = serde_json::Value::deserialize(d)?;
    if let serde_json::Value::Object(_) = &v {
        let o: Object = serde_json::from_value(v).map_err(|e| {
            serde::de::Error::custom(format!(
                "a table for cc names an eBPF object: {{ bpf = \"FILE.o\" }}, and for an object with several struct_ops the one to run: {{ bpf = \"FILE.o\", ops = \"NAME\" }} ({e})"
            ))
        })?;
        return Ok(Some(match o.ops {
            Some(ops) => format!("bpf:{}#{ops}", o.bpf),
            None => format!("bpf:{}", o.bpf),
        }));
    }
    serde_json::from_value::<String>(v)
        .map(Some)
        .map_err(serde::de::Error::custom)
}
