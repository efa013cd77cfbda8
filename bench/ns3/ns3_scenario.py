"""Run one startlab scenario file in ns-3 and print one line of JSON.

    bench/ns3/.venv/bin/python bench/ns3/ns3_scenario.py SCENARIO.toml [--trace-flow0 CSV]

The scenario is read from the same TOML file that startlab runs (docs/scenario.md), so the two
simulators cannot drift apart: the dumbbell, the rates, delays and queue limits, the TCP settings
and the flows all come from it. Only the subset that the comparison uses is supported (a dumbbell
with drop-tail queues, bulk TCP flows, the `[tcp]` fields of the table below); anything else is
refused with a message rather than silently approximated.

How each setting is carried over to ns-3 (docs/performance.md explains why):

| startlab                         | ns-3                                                         |
| -------------------------------- | ------------------------------------------------------------ |
| `tcp.mss`                        | `TcpSocket::SegmentSize`                                      |
| `tcp.header`, `tcp.ack_size`     | must be 42 B: IPv4 20 + TCP 20 (no timestamps) + PPP 2        |
| `tcp.initial_window`             | `TcpSocket::InitialCwnd`                                      |
| `tcp.initial_ssthresh`           | `TcpSocket::InitialSlowStartThreshold` (× mss)                |
| `tcp.delayed_ack`                | `TcpSocket::DelAckCount` 2 (else 1), `DelAckTimeout`          |
| `tcp.sack`                       | `TcpSocketBase::Sack`                                         |
| `tcp.min_rto`, `initial_rto`     | `TcpSocketBase::MinRto`, `TcpSocket::ConnTimeout`             |
| `tcp.clock_granularity`          | `TcpSocketBase::ClockGranularity`                             |
| `tcp.dupack_threshold`           | `TcpSocketBase::ReTxThreshold`                                |
| `tcp.handshake`                  | must be true (ns-3 always opens with SYN / SYN-ACK)           |
| recovery newreno / sack          | `TcpClassicRecovery` (not PRR), limited transmit off          |
| `cc = "newreno"`                 | `TcpLinuxReno` (+1 segment per window of ACKs; cwnd/2) |
| `cc = "cubic"`                   | `TcpCubic`, HyStart off, `Beta` from `cc_params.beta`         |
| `cc = "bbr"`                     | `TcpBbr` (ns-3's BBR v1) with `TcpSocketState::EnablePacing`  |
| drop-tail queue of N packets     | no queue disc; the device's `DropTailQueue` holds N packets   |

Wall time is that of `Simulator::Run()` alone (building the topology and importing the bindings,
~15 s of cppyy start-up, are reported apart). Slow-start exit, cwnd and loss-state changes are
recorded by a small C++ probe compiled through cppyy, so no Python runs during the simulation.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]
from dataclasses import dataclass, field
from pathlib import Path

HEADER_BYTES = 42  # IPv4 20 + TCP 20 (no options) + PPP 2: what ns-3 puts on a point-to-point wire
ACCESS_QUEUE_PACKETS = 1000  # startlab's default access-link queue

# --------------------------------------------------------------------------------------------
# The scenario file (only what the comparison needs; the rest is refused)

_RATE = {"bps": 1.0, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "min": 60.0}
_SIZE = {
    "B": 1,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}


def _quantity(text: str, units: dict[str, float], what: str) -> float:
    m = re.fullmatch(r"\s*([0-9.]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]+)\s*", str(text))
    if not m or m.group(2) not in units:
        raise SystemExit(f"{what}: cannot read {text!r} (units: {', '.join(units)})")
    return float(m.group(1)) * units[m.group(2)]


def rate_bps(text: str, what: str) -> float:
    return _quantity(text, _RATE, what)


def seconds(text: str, what: str) -> float:
    return _quantity(text, _TIME, what)


def size_bytes(text: str | int, what: str) -> int:
    return int(_quantity(text, _SIZE, what)) if isinstance(text, str) else int(text)


@dataclass
class Flow:
    pair: int
    cc: str
    cc_params: dict
    start_s: float


@dataclass
class Setup:
    name: str
    duration_s: float
    pairs: int
    bottleneck_bps: float
    bottleneck_delay_s: float
    access_bps: float
    access_delay_s: float
    queue_packets: int
    mss: int
    initial_window: int
    initial_ssthresh: int | None  # segments; None = unlimited
    sack: bool
    delayed_ack: bool
    delayed_ack_timeout_s: float
    min_rto_s: float
    initial_rto_s: float
    clock_granularity_s: float
    dupack_threshold: int
    flows: list[Flow] = field(default_factory=list)

    @property
    def wire_bytes(self) -> int:
        return self.mss + HEADER_BYTES

    @property
    def rtt_s(self) -> float:
        return 2 * (self.access_delay_s + self.bottleneck_delay_s + self.access_delay_s)


def _refuse(table: dict, allowed: set[str], where: str) -> None:
    extra = set(table) - allowed
    if extra:
        raise SystemExit(f"{where}: the ns-3 runner does not support {sorted(extra)}")


def load(path: Path) -> Setup:
    s = tomllib.loads(path.read_text())
    _refuse(s, {"name", "seed", "duration", "topology", "tcp", "flows", "measure"}, "scenario")
    topo = s["topology"]
    _refuse(topo, {"kind", "pairs", "bottleneck", "access"}, "topology")
    if topo["kind"] != "dumbbell":
        raise SystemExit('topology.kind: only "dumbbell" is supported')
    bn = topo["bottleneck"]
    _refuse(bn, {"rate", "delay", "queue"}, "topology.bottleneck")
    access = topo.get("access", {})
    _refuse(access, {"rate", "delay"}, "topology.access")
    tcp = s.get("tcp", {})
    _refuse(
        tcp,
        {
            "mss",
            "header",
            "ack_size",
            "handshake",
            "initial_window",
            "initial_ssthresh",
            "sack",
            "delayed_ack",
            "delayed_ack_timeout",
            "min_rto",
            "initial_rto",
            "clock_granularity",
            "dupack_threshold",
            "recovery",
        },
        "tcp",
    )
    for key in ("header", "ack_size"):
        if size_bytes(tcp.get(key, "40B"), f"tcp.{key}") != HEADER_BYTES:
            raise SystemExit(
                f'tcp.{key} must be "{HEADER_BYTES}B" (IPv4 + TCP + PPP on ns-3\'s wire)'
            )
    if not tcp.get("handshake", False):
        raise SystemExit("tcp.handshake must be true: ns-3 always opens with SYN / SYN-ACK")
    sack = bool(tcp.get("sack", False))
    recovery = tcp.get("recovery", "auto")
    if recovery not in ("auto", "sack" if sack else "newreno"):
        raise SystemExit(f"tcp.recovery = {recovery!r}: ns-3's classic recovery is newreno / sack")
    ssthresh = tcp.get("initial_ssthresh", "unlimited")
    mss = size_bytes(tcp.get("mss", "1000B"), "tcp.mss")
    if ssthresh == "unlimited":
        ssthresh_segments = None
    elif isinstance(ssthresh, int):
        ssthresh_segments = ssthresh
    else:
        ssthresh_segments = math.ceil(size_bytes(ssthresh, "tcp.initial_ssthresh") / mss)
    window = tcp.get("initial_window", 1)
    if not isinstance(window, int):
        window = math.ceil(size_bytes(window, "tcp.initial_window") / mss)

    setup = Setup(
        name=s.get("name", path.stem),
        duration_s=seconds(s["duration"], "duration"),
        pairs=int(topo.get("pairs", 1)),
        bottleneck_bps=rate_bps(bn["rate"], "topology.bottleneck.rate"),
        bottleneck_delay_s=seconds(bn["delay"], "topology.bottleneck.delay"),
        access_bps=rate_bps(access.get("rate", "1Gbps"), "topology.access.rate"),
        access_delay_s=seconds(access.get("delay", "1ms"), "topology.access.delay"),
        queue_packets=0,
        mss=mss,
        initial_window=window,
        initial_ssthresh=ssthresh_segments,
        sack=sack,
        delayed_ack=bool(tcp.get("delayed_ack", False)),
        delayed_ack_timeout_s=seconds(
            tcp.get("delayed_ack_timeout", "100ms"), "tcp.delayed_ack_timeout"
        ),
        min_rto_s=seconds(tcp.get("min_rto", "200ms"), "tcp.min_rto"),
        initial_rto_s=seconds(tcp.get("initial_rto", "1s"), "tcp.initial_rto"),
        clock_granularity_s=seconds(tcp.get("clock_granularity", "1ms"), "tcp.clock_granularity"),
        dupack_threshold=int(tcp.get("dupack_threshold", 3)),
    )

    queue = bn.get("queue", {"kind": "droptail", "limit": "1BDP"})
    _refuse(queue, {"kind", "limit"}, "topology.bottleneck.queue")
    if queue.get("kind") != "droptail":
        raise SystemExit("topology.bottleneck.queue: only droptail is supported")
    limit = queue.get("limit", "1BDP")
    if isinstance(limit, int):
        setup.queue_packets = limit
    elif isinstance(limit, str) and limit.endswith("BDP"):
        # docs/scenario.md: rate × reference RTT in packets of mss + header, rounded, at least 1.
        bdp = setup.bottleneck_bps * setup.rtt_s / 8 / setup.wire_bytes
        setup.queue_packets = max(1, round(float(limit[:-3] or 1) * bdp))
    elif isinstance(limit, str) and limit.endswith("p"):
        setup.queue_packets = int(limit[:-1])
    else:
        raise SystemExit(f"topology.bottleneck.queue.limit = {limit!r}: give packets or BDPs")

    for i, f in enumerate(s["flows"]):
        where = f"flows[{i}]"
        _refuse(f, {"kind", "cc", "cc_params", "pair", "src", "dst", "start", "label"}, where)
        if f.get("kind", "tcp") != "tcp":
            raise SystemExit(f"{where}: only bulk tcp flows are supported")
        if "pair" in f:
            pair = int(f["pair"])
        else:
            src, dst = f.get("src", "s0"), f.get("dst", "r0")
            if src[1:] != dst[1:] or not src.startswith("s") or not dst.startswith("r"):
                raise SystemExit(f"{where}: a flow must go from s<i> to r<i>")
            pair = int(src[1:])
        cc = f.get("cc", "newreno")
        if cc not in ("newreno", "cubic", "bbr"):
            raise SystemExit(f"{where}.cc = {cc!r}: the ns-3 runner knows newreno, cubic and bbr")
        params = dict(f.get("cc_params", {}))
        _refuse(params, {"beta"} if cc == "cubic" else set(), f"{where}.cc_params")
        setup.flows.append(Flow(pair, cc, params, seconds(f.get("start", "0s"), f"{where}.start")))
    return setup


# --------------------------------------------------------------------------------------------
# ns-3

PROBE_CPP = r"""
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include <cstdio>
#include <string>
#include <vector>

namespace startlab_bench
{
using namespace ns3;

// Follows one TCP sender: the end of its first slow start (same rule as startlab's sender: cwnd
// reaching ssthresh in the Open state, or the first recovery / timeout), counts of recoveries and
// timeouts, and optionally every cwnd change.
struct Probe
{
    uint32_t segment = 1;
    uint32_t cwnd = 0;
    uint32_t ssthresh = 0xffffffff;
    int state = TcpSocketState::CA_OPEN;
    double exitTime = -1.0;
    double exitCwnd = -1.0;
    std::string exitReason;
    uint64_t recoveries = 0;
    uint64_t timeouts = 0;
    bool keepTrace = false;
    std::vector<double> traceTime;
    std::vector<uint32_t> traceCwnd;
    std::vector<uint32_t> traceSsthresh;
    std::vector<int> traceState;

    void Exit(const char* reason)
    {
        if (exitTime < 0)
        {
            exitTime = Simulator::Now().GetSeconds();
            exitCwnd = double(cwnd) / segment;
            exitReason = reason;
        }
    }

    void Record()
    {
        if (keepTrace)
        {
            traceTime.push_back(Simulator::Now().GetSeconds());
            traceCwnd.push_back(cwnd);
            traceSsthresh.push_back(ssthresh);
            traceState.push_back(state);
        }
    }

    void OnCwnd(uint32_t, uint32_t value)
    {
        cwnd = value;
        if (state == TcpSocketState::CA_OPEN && cwnd >= ssthresh)
        {
            Exit("threshold");
        }
        Record();
    }

    void OnSsthresh(uint32_t, uint32_t value)
    {
        ssthresh = value;
    }

    void OnState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t value)
    {
        state = value;
        if (value == TcpSocketState::CA_RECOVERY)
        {
            ++recoveries;
            Exit("loss");
        }
        else if (value == TcpSocketState::CA_LOSS)
        {
            ++timeouts;
            Exit("timeout");
        }
        Record();
    }

    bool WriteTrace(const std::string& path) const
    {
        FILE* f = std::fopen(path.c_str(), "w");
        if (!f)
        {
            return false;
        }
        std::fprintf(f, "time_s,cwnd,ssthresh,state\n");
        for (size_t i = 0; i < traceTime.size(); ++i)
        {
            std::fprintf(f,
                         "%.9f,%.3f,%.3f,%d\n",
                         traceTime[i],
                         double(traceCwnd[i]) / segment,
                         traceSsthresh[i] == 0xffffffff ? -1.0 : double(traceSsthresh[i]) / segment,
                         traceState[i]);
        }
        std::fclose(f);
        return true;
    }
};

// The socket of a BulkSendApplication exists once the application has started.
void
Connect(Ptr<Application> app, Probe* probe)
{
    Ptr<Socket> socket = DynamicCast<BulkSendApplication>(app)->GetSocket();
    socket->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&Probe::OnCwnd, probe));
    socket->TraceConnectWithoutContext("SlowStartThreshold",
                                       MakeCallback(&Probe::OnSsthresh, probe));
    socket->TraceConnectWithoutContext("CongState", MakeCallback(&Probe::OnState, probe));
}

void
Attach(Ptr<Application> app, Probe* probe, double at)
{
    Simulator::Schedule(Seconds(at), &Connect, app, probe);
}

void
SetSocketType(Ptr<Node> node, const std::string& type)
{
    node->GetObject<TcpL4Protocol>()->SetAttribute("SocketType",
                                                   TypeIdValue(TypeId::LookupByName(type)));
}

// Packets admitted by a point-to-point device's queue and its drops (every packet a device sends
// passes through its queue, even on an idle link).
struct QueueCounts
{
    uint64_t packets = 0;
    uint64_t drops = 0;
};

QueueCounts
Counts(Ptr<NetDevice> device)
{
    Ptr<Queue<Packet>> q = DynamicCast<PointToPointNetDevice>(device)->GetQueue();
    QueueCounts c;
    c.packets = q->GetTotalReceivedPackets();
    c.drops = q->GetTotalDroppedPackets();
    return c;
}

// Packets the traffic-control layer of a node discards: with no queue disc installed, a packet
// that finds its device's queue stopped (full) is dropped here, before the device queue sees it.
struct DropCounter
{
    uint64_t packets = 0;

    void OnDrop(Ptr<const Packet>)
    {
        ++packets;
    }
};

bool
CountDrops(Ptr<Node> node, DropCounter* counter)
{
    return node->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext(
        "TcDrop",
        MakeCallback(&DropCounter::OnDrop, counter));
}

// Bytes whose transmission a device started, in 64 bits (QueueBase's byte counters are 32-bit
// and wrap after 4.3 GB, which (b) passes).
struct ByteCounter
{
    uint64_t bytes = 0;

    void OnTx(Ptr<const Packet> packet)
    {
        bytes += packet->GetSize();
    }
};

bool
CountSentBytes(Ptr<NetDevice> device, ByteCounter* counter)
{
    return device->TraceConnectWithoutContext("PhyTxBegin",
                                              MakeCallback(&ByteCounter::OnTx, counter));
}

uint64_t
SinkBytes(Ptr<Application> app)
{
    return DynamicCast<PacketSink>(app)->GetTotalRx();
}
} // namespace startlab_bench
"""


def _rss_kib(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


def run(setup: Setup, trace_path: str | None) -> dict:
    t_import = time.perf_counter()
    import cppyy
    from ns import ns

    cppyy.cppdef(PROBE_CPP)
    sb = cppyy.gbl.startlab_bench
    import_s = time.perf_counter() - t_import
    baseline_kib = _rss_kib("VmRSS")

    t_build = time.perf_counter()
    mss = setup.mss
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(mss))
    ns.Config.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(setup.initial_window))
    ssthresh_bytes = 0xFFFFFFFF if setup.initial_ssthresh is None else setup.initial_ssthresh * mss
    ns.Config.SetDefault(
        "ns3::TcpSocket::InitialSlowStartThreshold", ns.UintegerValue(ssthresh_bytes)
    )
    ns.Config.SetDefault(
        "ns3::TcpSocket::DelAckCount", ns.UintegerValue(2 if setup.delayed_ack else 1)
    )
    ns.Config.SetDefault(
        "ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.Seconds(setup.delayed_ack_timeout_s))
    )
    ns.Config.SetDefault(
        "ns3::TcpSocket::ConnTimeout", ns.TimeValue(ns.Seconds(setup.initial_rto_s))
    )
    # Buffers never limit: four times what the bottleneck link and its queue can hold, per flow.
    capacity = setup.bottleneck_bps * setup.rtt_s / 8 + setup.queue_packets * setup.wire_bytes
    buffer_bytes = int(min(4 * capacity, 2**30 - 1))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(buffer_bytes))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(buffer_bytes))
    ns.Config.SetDefault("ns3::TcpSocketBase::Sack", ns.BooleanValue(setup.sack))
    ns.Config.SetDefault("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))
    ns.Config.SetDefault("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    ns.Config.SetDefault("ns3::TcpSocketBase::LimitedTransmit", ns.BooleanValue(False))
    ns.Config.SetDefault("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(setup.min_rto_s)))
    ns.Config.SetDefault(
        "ns3::TcpSocketBase::ClockGranularity", ns.TimeValue(ns.Seconds(setup.clock_granularity_s))
    )
    ns.Config.SetDefault(
        "ns3::TcpSocketBase::ReTxThreshold", ns.UintegerValue(setup.dupack_threshold)
    )
    ns.Config.SetDefault(
        "ns3::TcpL4Protocol::RecoveryType",
        ns.TypeIdValue(ns.TypeId.LookupByName("ns3::TcpClassicRecovery")),
    )
    ns.Config.SetDefault("ns3::TcpCubic::HyStart", ns.BooleanValue(False))
    if any(f.cc == "bbr" for f in setup.flows):
        # ns-3's TcpBbr sets the pacing rate; the socket paces only with pacing enabled.
        ns.Config.SetDefault("ns3::TcpSocketState::EnablePacing", ns.BooleanValue(True))
    betas = {f.cc_params.get("beta") for f in setup.flows if f.cc == "cubic"}
    if len(betas) > 1:
        raise SystemExit("all CUBIC flows must have the same beta")
    if betas:
        beta = betas.pop()
        ns.Config.SetDefault(
            "ns3::TcpCubic::Beta", ns.DoubleValue(717 / 1024 if beta is None else beta)
        )

    # Dumbbell: s_i -- left ==bottleneck== right -- r_i
    routers = ns.NodeContainer()
    routers.Create(2)
    senders = ns.NodeContainer()
    senders.Create(setup.pairs)
    receivers = ns.NodeContainer()
    receivers.Create(setup.pairs)
    stack = ns.InternetStackHelper()
    stack.Install(routers)
    stack.Install(senders)
    stack.Install(receivers)

    def link(rate: float, delay: float, queue: int) -> ns.PointToPointHelper:
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(rate))))
        p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(delay)))
        p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{queue}p")))
        return p2p

    address = ns.Ipv4AddressHelper()
    address.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    no_qdisc = ns.TrafficControlHelper()

    def connect(helper: ns.PointToPointHelper, a: ns.Node, b: ns.Node) -> tuple:
        devices = helper.Install(a, b)
        interfaces = address.Assign(devices)
        address.NewNetwork()
        # Assign installs an FqCoDel queue disc on every device: remove it, so that the
        # device's drop-tail queue is the only queue (as in startlab).
        no_qdisc.Uninstall(devices)
        return devices, interfaces

    bottleneck, _ = connect(
        link(setup.bottleneck_bps, setup.bottleneck_delay_s, setup.queue_packets),
        routers.Get(0),
        routers.Get(1),
    )
    access = link(setup.access_bps, setup.access_delay_s, ACCESS_QUEUE_PACKETS)
    all_devices = [bottleneck]
    receiver_ip = []
    for i in range(setup.pairs):
        d, _ = connect(access, senders.Get(i), routers.Get(0))
        all_devices.append(d)
        d, ifaces = connect(access, routers.Get(1), receivers.Get(i))
        all_devices.append(d)
        receiver_ip.append(ifaces.GetAddress(1))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    # Drops at the left router: the bottleneck's (its access links towards the senders carry only
    # ACKs at ten times the bottleneck rate and never fill).
    left_drops = sb.DropCounter()
    sent = sb.ByteCounter()
    if not sb.CountSentBytes(bottleneck.Get(0), sent):
        raise SystemExit("cannot trace the bottleneck's transmissions")
    if not sb.CountDrops(routers.Get(0), left_drops):
        raise SystemExit("cannot trace the traffic-control layer's drops")

    socket_type = {"newreno": "ns3::TcpLinuxReno", "cubic": "ns3::TcpCubic", "bbr": "ns3::TcpBbr"}
    sinks, probes, keep = [], [], []
    for k, flow in enumerate(setup.flows):
        port = 5000 + k
        sb.SetSocketType(senders.Get(flow.pair), socket_type[flow.cc])
        sink_helper = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo(),
        )
        sink = sink_helper.Install(receivers.Get(flow.pair))
        sink.Start(ns.Seconds(0.0))
        sinks.append(sink.Get(0))
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(receiver_ip[flow.pair], port).ConvertTo(),
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(64 * 1024))
        app = bulk.Install(senders.Get(flow.pair))
        app.Start(ns.Seconds(flow.start_s))
        keep += [sink_helper, bulk, app, sink]
        if k == 0:
            probe = sb.Probe()
            probe.segment = mss
            probe.cwnd = setup.initial_window * mss
            probe.ssthresh = ssthresh_bytes
            probe.keepTrace = trace_path is not None
            sb.Attach(app.Get(0), probe, flow.start_s + 1e-9)
            probes.append(probe)
    ns.Simulator.Stop(ns.Seconds(setup.duration_s))
    build_s = time.perf_counter() - t_build

    t_run, cpu_run = time.perf_counter(), time.process_time()
    ns.Simulator.Run()
    wall_s = time.perf_counter() - t_run
    cpu_s = time.process_time() - cpu_run

    events = int(ns.Simulator.GetEventCount())
    packets = 0
    for devices in all_devices:
        for j in range(devices.GetN()):
            packets += sb.Counts(devices.Get(j)).packets
    forward = sb.Counts(bottleneck.Get(0))
    # Busy time / duration; the last packet's transmission may end after the run (< 1 packet).
    utilization = int(sent.bytes) * 8 / setup.bottleneck_bps / setup.duration_s
    delivered = sum(int(sb.SinkBytes(s)) for s in sinks)
    probe = probes[0]
    if trace_path is not None and not probe.WriteTrace(trace_path):
        raise SystemExit(f"cannot write {trace_path}")
    result = {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "events": events,
        "packets": packets,
        "peak_kib": _rss_kib("VmHWM"),
        "baseline_kib": baseline_kib,
        "utilization": utilization,
        "delivered_bytes": delivered,
        "drops": int(forward.drops + left_drops.packets),
        "ss_exit_s": probe.exitTime,
        "ss_exit_cwnd": probe.exitCwnd,
        "ss_exit_reason": str(probe.exitReason),
        "queue_limit": setup.queue_packets,
        "timeouts_flow0": int(probe.timeouts),
        "recoveries_flow0": int(probe.recoveries),
        "import_s": import_s,
        "build_s": build_s,
    }
    ns.Simulator.Destroy()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", type=Path, help="a startlab scenario file")
    parser.add_argument("--trace-flow0", metavar="CSV", help="write flow 0's cwnd changes here")
    args = parser.parse_args()
    setup = load(args.scenario)
    result = run(setup, args.trace_flow0)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
