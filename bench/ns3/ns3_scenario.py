"""Run one startlab scenario file in ns-3 and print one line of JSON.

    bench/ns3/.venv/bin/python bench/ns3/ns3_scenario.py SCENARIO.toml [--trace-flow0 CSV]

    bench/ns3/.venv/bin/python bench/ns3/ns3_scenario.py SCENARIO.toml [--run N] \
        [--trace-queue CSV]     # with a CoDel, FQ-CoDel or PIE bottleneck

The scenario is read from the same TOML file that startlab runs (docs/scenario.md), so the two
simulators cannot drift apart: the dumbbell, the rates, delays and queue limits, the TCP settings
and the flows all come from it. Only the subset that the comparison uses is supported (a dumbbell
with drop-tail, CoDel, FQ-CoDel or PIE bottleneck queues, bulk TCP flows, the `[tcp]` fields of the
table below); anything else is refused with a message rather than silently approximated.

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
| `tcp.ecn = true`                 | `TcpSocketBase::UseEcn` = On (classic RFC 3168 ECN)           |
| `tcp.handshake`                  | must be true (ns-3 always opens with SYN / SYN-ACK)           |
| recovery newreno / sack          | `TcpClassicRecovery` (not PRR), limited transmit off          |
| `cc = "newreno"`                 | `TcpLinuxReno` (+1 segment per window of ACKs; cwnd/2) |
| `cc = "cubic"`                   | `TcpCubic`, HyStart off, `Beta` from `cc_params.beta`         |
| `cc = "bbr"`                     | `TcpBbr` (ns-3's BBR v1) with `TcpSocketState::EnablePacing`  |
| drop-tail queue of N packets     | no queue disc; the device's `DropTailQueue` holds N packets   |
| codel / fq_codel / pie queue     | `CoDelQueueDisc`, `FqCoDelQueueDisc`, `PieQueueDisc`: the     |
|                                  | device's root queue disc; its `DropTailQueue` 1 packet        |
| `reverse_queue`                  | the same on the reverse direction (default: `queue`)          |

An AQM's fields are carried over as `aqm_replay.py` maps them (its docstring has the table and
the places where ns-3 3.44 departs from Linux), with one change of unit: startlab's queue holds
packets of their wire size (`mss + header`, the 2-byte PPP header included), ns-3's queue disc
holds IP packets (the device adds PPP after the dequeue), so CoDel's mtu rule ("no drop while
the backlog left is at most `mtu` bytes", `MinBytes` in ns-3: no drop below it) becomes
`MinBytes = mtu + 1 - 2`: for full-size packets both then spare exactly an empty backlog. A
`limit` in BDPs is converted to packets as for drop-tail.

The device's own queue. ns-3's point-to-point device takes the next packet from the queue disc
when its previous one starts transmission (`NetDeviceQueue::PacketDequeued` schedules `Wake()`,
which runs the queue disc while the device queue is not stopped; the queue is stopped once it
cannot fit another packet). One packet is the smallest device queue that works: a queue that is
stopped even when empty would never wake the queue disc again. So under load one packet waits in
the device, outside the queue disc, while the previous one is serialized; the queue disc hands
each packet over (and the AQM sees its sojourn, and decides) one transmission time before it
starts transmission, where startlab's link dequeues at the instant transmission starts. Every
other packet of the backlog is in the queue disc.

Per-packet sojourn times are recorded in C++ from the root queue disc's `SojournTime` trace
(enqueue to dequeue from the queue disc); a packet the discipline drops after dequeuing it (CoDel's
control law, FQ-CoDel's overflow from the fattest flow) is left out, as startlab counts the packets
it sent. The JSON gives their p50 / p90 / p99 (nearest rank, exact), mean and max, and the same of
the wait to the start of transmission (`wire_wait`: queue disc enqueue to the device's
`PhyTxBegin`, which adds the wait in the device queue). Drops are the queue disc's before enqueue
and after dequeue (by reason), marks its `Mark`s; per flow, the delivered bytes, recoveries,
timeouts and ECN window reductions (entries into `CA_CWR`). `--trace-queue CSV` writes every
drop and mark (time, kind, flow) and, beside it (`CSV` without its suffix + `-wait.csv`), the
packets sent and their mean and longest wait to the wire per 100 ms. `--run N` sets ns-3's run
number (PIE's random draws; by default the scenario's `seed`, itself 1 by default); it applies
only with an AQM, so drop-tail runs are exactly those of before.

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aqm_replay  # the AQM fields' mapping; imports no ns-3

HEADER_BYTES = 42  # IPv4 20 + TCP 20 (no options) + PPP 2: what ns-3 puts on a point-to-point wire
PPP_HEADER = 2  # on startlab's wire size but not in ns-3's queue disc (the device adds it)
ACCESS_QUEUE_PACKETS = 1000  # startlab's default access-link queue
AQM_KINDS = ("codel", "fq_codel", "pie")
AQM_DEVICE_QUEUE_PACKETS = 1  # the device's own queue under an AQM (module docstring)

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
class QueueSpec:
    """One direction's bottleneck queue: drop-tail of `packets`, or an AQM (`aqm` set)."""

    kind: str
    packets: int
    aqm: aqm_replay.Queue | None = None


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
    ecn: bool = False
    seed: int = 1
    forward: QueueSpec | None = None
    reverse: QueueSpec | None = None

    @property
    def aqm(self) -> bool:
        """An AQM on either direction of the bottleneck (the runner's AQM mode)."""
        return any(q is not None and q.aqm is not None for q in (self.forward, self.reverse))

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
    _refuse(bn, {"rate", "delay", "queue", "reverse_queue"}, "topology.bottleneck")
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
            "ecn",
        },
        "tcp",
    )
    if not isinstance(tcp.get("ecn", False), bool):
        raise SystemExit("tcp.ecn must be true or false")
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
        ecn=bool(tcp.get("ecn", False)),
        seed=int(s.get("seed", 1)),
    )

    queue = bn.get("queue", {"kind": "droptail", "limit": "1BDP"})
    setup.forward = _queue_spec(queue, setup, "topology.bottleneck.queue")
    # docs/scenario.md: the reverse direction's queue is the forward one's unless given.
    reverse = bn.get("reverse_queue", queue)
    setup.reverse = _queue_spec(reverse, setup, "topology.bottleneck.reverse_queue")
    setup.queue_packets = setup.forward.packets
    for spec in (setup.forward, setup.reverse):
        if spec.aqm is not None:
            ns3_queue_config(spec.aqm, setup)  # refuses what ns-3 cannot map, before the import

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


def _limit_packets(limit: object, setup: Setup, where: str) -> int:
    if isinstance(limit, int) and not isinstance(limit, bool):
        return limit
    if isinstance(limit, str) and limit.endswith("BDP"):
        # docs/scenario.md: rate × reference RTT in packets of mss + header, rounded, at least 1.
        bdp = setup.bottleneck_bps * setup.rtt_s / 8 / setup.wire_bytes
        return max(1, round(float(limit[:-3] or 1) * bdp))
    if isinstance(limit, str) and limit.endswith("p"):
        return int(limit[:-1])
    raise SystemExit(f"{where}.limit = {limit!r}: give packets or BDPs")


def _toml_inline(table: dict) -> str:
    """An inline TOML table of strings, integers and booleans (what a queue table holds)."""
    items = []
    for key, value in table.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(value)
        elif isinstance(value, str):
            text = json.dumps(value)
        else:
            raise SystemExit(f"queue field {key} = {value!r}: not a string, integer or boolean")
        items.append(f"{key} = {text}")
    return "{ " + ", ".join(items) + " }"


def _queue_spec(queue: dict, setup: Setup, where: str) -> QueueSpec:
    if not isinstance(queue, dict):
        raise SystemExit(f"{where}: expected a table")
    kind = queue.get("kind")
    if kind == "droptail":
        _refuse(queue, {"kind", "limit"}, where)
        return QueueSpec("droptail", _limit_packets(queue.get("limit", "1BDP"), setup, where))
    if kind not in AQM_KINDS:
        raise SystemExit(f"{where}: the ns-3 runner knows droptail, {', '.join(AQM_KINDS)}")
    fields = dict(queue)
    if "limit" in fields:
        fields["limit"] = _limit_packets(fields["limit"], setup, where)
    try:
        q = aqm_replay.parse_queue(_toml_inline(fields))
    except SystemExit as e:  # its messages name --queue; name the scenario's table instead
        raise SystemExit(f"{where}: {str(e).removeprefix('--queue: ')}") from None
    return QueueSpec(kind, int(q["limit"]), q)


def ns3_queue_config(q: aqm_replay.Queue, setup: Setup) -> aqm_replay.Ns3Config:
    """aqm_replay's mapping, with CoDel's mtu rule moved from wire bytes to IP bytes."""
    try:
        config = aqm_replay.ns3_config(q, setup.wire_bytes)
    except SystemExit as e:
        raise SystemExit(f"topology.bottleneck: {str(e).removeprefix('--queue: ')}") from None
    if q.kind in ("codel", "fq_codel"):
        min_bytes = int(q["mtu"]) + 1 - PPP_HEADER
        config.attributes = [
            (k, str(min_bytes) if k == "MinBytes" else v) for k, v in config.attributes
        ]
        config.codel_min_bytes = min_bytes
    return config


# --------------------------------------------------------------------------------------------
# ns-3

PROBE_CPP = (
    r"""
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>
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
    uint64_t cwrs = 0; // ECN window reductions (entries into CA_CWR)
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
        else if (value == TcpSocketState::CA_CWR)
        {
            ++cwrs;
            Exit("ecn");
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

// ---- AQM bottlenecks

// A point-to-point device's own queue, resized (an AQM keeps it at one packet).
void
SetDeviceQueuePackets(Ptr<NetDevice> device, uint32_t packets)
{
    DynamicCast<PointToPointNetDevice>(device)->GetQueue()->SetMaxSize(
        QueueSize(QueueSizeUnit::PACKETS, packets));
}

"""
    + aqm_replay.QUEUE_DISC_CPP
    + r"""
// The root queue disc of a device (whose default one was uninstalled), from its type and
// attributes given as strings.
Ptr<QueueDisc>
InstallQueueDisc(Ptr<NetDevice> device,
                 const std::string& type,
                 const std::vector<std::string>& names,
                 const std::vector<std::string>& values)
{
    Ptr<QueueDisc> qd = MakeQueueDisc(type, names, values);
    device->GetNode()->GetObject<TrafficControlLayer>()->SetRootQueueDiscOnDevice(device, qd);
    return qd;
}

// FQ-CoDel's children take the parent's MaxSize at Initialize(): initialize with limit + 1,
// then set the limit, so that only the parent's overflow rule acts (as aqm_replay.py does).
void
SetUpFqCoDel(Ptr<QueueDisc> qd, uint32_t quantum, uint32_t limit)
{
    DynamicCast<FqCoDelQueueDisc>(qd)->SetQuantum(quantum);
    qd->Initialize();
    qd->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, limit));
}

uint32_t
QueueDiscClasses(Ptr<QueueDisc> qd)
{
    return static_cast<uint32_t>(qd->GetNQueueDiscClasses());
}

struct SojournSummary
{
    uint64_t n = 0;
    double mean = 0.0;
    int64_t p50 = -1;
    int64_t p90 = -1;
    int64_t p99 = -1;
    int64_t max = -1;
};

// Nearest rank: the smallest value with at least q of the values at or below it.
SojournSummary
Summarize(std::vector<int64_t> v)
{
    SojournSummary s;
    s.n = v.size();
    if (v.empty())
    {
        return s;
    }
    std::sort(v.begin(), v.end());
    long double sum = 0;
    for (int64_t x : v)
    {
        sum += x;
    }
    s.mean = static_cast<double>(sum / v.size());
    auto rank = [&](double q) {
        size_t k = static_cast<size_t>(std::ceil(q * v.size()));
        k = std::min(std::max<size_t>(k, 1), v.size());
        return v[k - 1];
    };
    s.p50 = rank(0.50);
    s.p90 = rank(0.90);
    s.p99 = rank(0.99);
    s.max = v.back();
    return s;
}

// Follows one queue disc: every dequeued packet's sojourn (its SojournTime trace), which of
// them were then dropped, the wait from enqueue to the start of transmission on the device,
// and optionally every drop and mark.
struct QueueRecorder
{
    std::vector<int64_t> sojourn; // ns, one per packet dequeued from the queue disc
    std::vector<uint8_t> sent;    // 0 for a packet the discipline dropped after dequeuing it
    const QueueDiscItem* last = nullptr;
    std::unordered_map<uint64_t, int64_t> enqueuedAt; // packet uid -> enqueue time, ns
    std::vector<int64_t> wire;                        // ns, enqueue to PhyTxBegin
    uint64_t droppedAfterDequeue = 0;
    uint64_t orphanDrops = 0; // a drop after dequeue that was not the last dequeued packet
    bool keepEvents = false;
    std::map<uint32_t, int32_t> flowOfSource; // sender IPv4 address -> flow index
    std::vector<double> eventTime;
    std::vector<int32_t> eventKind; // 0 drop before enqueue, 1 drop after dequeue, 2 mark
    std::vector<int32_t> eventFlow;
    std::vector<int64_t> eventSojourn; // ns, for drops after dequeue and marks; -1 otherwise

    int32_t FlowOf(Ptr<const QueueDiscItem> item) const
    {
        Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
        if (!ip)
        {
            return -1;
        }
        auto it = flowOfSource.find(ip->GetHeader().GetSource().Get());
        return it == flowOfSource.end() ? -1 : it->second;
    }

    void Event(int32_t kind, Ptr<const QueueDiscItem> item, int64_t sojournNs)
    {
        if (keepEvents)
        {
            eventTime.push_back(Simulator::Now().GetSeconds());
            eventKind.push_back(kind);
            eventFlow.push_back(FlowOf(item));
            eventSojourn.push_back(sojournNs);
        }
    }

    void OnSojourn(Time t)
    {
        sojourn.push_back(t.GetNanoSeconds());
        sent.push_back(1);
        last = nullptr;
    }

    void OnDequeue(Ptr<const QueueDiscItem> item)
    {
        last = PeekPointer(item);
        enqueuedAt[item->GetPacket()->GetUid()] = item->GetTimeStamp().GetNanoSeconds();
    }

    void OnDropAfterDequeue(Ptr<const QueueDiscItem> item, const char*)
    {
        ++droppedAfterDequeue;
        int64_t waited = Simulator::Now().GetNanoSeconds() - item->GetTimeStamp().GetNanoSeconds();
        if (PeekPointer(item) == last && !sent.empty())
        {
            sent.back() = 0;
            last = nullptr;
        }
        else
        {
            ++orphanDrops;
        }
        enqueuedAt.erase(item->GetPacket()->GetUid());
        Event(1, item, waited);
    }

    void OnDropBeforeEnqueue(Ptr<const QueueDiscItem> item, const char*)
    {
        Event(0, item, -1);
    }

    void OnMark(Ptr<const QueueDiscItem> item, const char*)
    {
        Event(2, item, Simulator::Now().GetNanoSeconds() - item->GetTimeStamp().GetNanoSeconds());
    }

    // With keepEvents, the wait to the wire per 100 ms of transmission starts (count, sum, max).
    std::vector<uint64_t> binCount;
    std::vector<int64_t> binSum;
    std::vector<int64_t> binMax;

    void OnTxBegin(Ptr<const Packet> packet)
    {
        auto it = enqueuedAt.find(packet->GetUid());
        if (it != enqueuedAt.end())
        {
            int64_t now = Simulator::Now().GetNanoSeconds();
            int64_t w = now - it->second;
            wire.push_back(w);
            enqueuedAt.erase(it);
            if (keepEvents)
            {
                size_t b = static_cast<size_t>(now / 100000000);
                if (binCount.size() <= b)
                {
                    binCount.resize(b + 1, 0);
                    binSum.resize(b + 1, 0);
                    binMax.resize(b + 1, 0);
                }
                ++binCount[b];
                binSum[b] += w;
                binMax[b] = std::max(binMax[b], w);
            }
        }
    }

    bool WriteBins(const std::string& path) const
    {
        FILE* f = std::fopen(path.c_str(), "w");
        if (!f)
        {
            return false;
        }
        std::fprintf(f, "time_s,packets,mean_wait_ms,max_wait_ms\n");
        for (size_t b = 0; b < binCount.size(); ++b)
        {
            std::fprintf(f,
                         "%.1f,%llu,%.6f,%.6f\n",
                         b * 0.1,
                         static_cast<unsigned long long>(binCount[b]),
                         binCount[b] ? binSum[b] / 1e6 / binCount[b] : 0.0,
                         binMax[b] / 1e6);
        }
        std::fclose(f);
        return true;
    }

    bool Attach(Ptr<QueueDisc> qd, Ptr<NetDevice> device)
    {
        return qd->TraceConnectWithoutContext("SojournTime",
                                              MakeCallback(&QueueRecorder::OnSojourn, this)) &&
               qd->TraceConnectWithoutContext("Dequeue",
                                              MakeCallback(&QueueRecorder::OnDequeue, this)) &&
               qd->TraceConnectWithoutContext(
                   "DropAfterDequeue",
                   MakeCallback(&QueueRecorder::OnDropAfterDequeue, this)) &&
               qd->TraceConnectWithoutContext(
                   "DropBeforeEnqueue",
                   MakeCallback(&QueueRecorder::OnDropBeforeEnqueue, this)) &&
               qd->TraceConnectWithoutContext("Mark", MakeCallback(&QueueRecorder::OnMark, this)) &&
               device->TraceConnectWithoutContext("PhyTxBegin",
                                                  MakeCallback(&QueueRecorder::OnTxBegin, this));
    }

    SojournSummary Sent() const
    {
        std::vector<int64_t> v;
        v.reserve(sojourn.size());
        for (size_t i = 0; i < sojourn.size(); ++i)
        {
            if (sent[i])
            {
                v.push_back(sojourn[i]);
            }
        }
        return Summarize(v);
    }

    SojournSummary All() const
    {
        return Summarize(sojourn);
    }

    SojournSummary Wire() const
    {
        return Summarize(wire);
    }

    bool WriteEvents(const std::string& path) const
    {
        FILE* f = std::fopen(path.c_str(), "w");
        if (!f)
        {
            return false;
        }
        static const char* kinds[] = {"drop-enqueue", "drop-dequeue", "mark"};
        std::fprintf(f, "time_s,event,flow,sojourn_ms\n");
        for (size_t i = 0; i < eventTime.size(); ++i)
        {
            if (eventSojourn[i] < 0)
            {
                std::fprintf(f, "%.9f,%s,%d,\n", eventTime[i], kinds[eventKind[i]], eventFlow[i]);
            }
            else
            {
                std::fprintf(f,
                             "%.9f,%s,%d,%.6f\n",
                             eventTime[i],
                             kinds[eventKind[i]],
                             eventFlow[i],
                             eventSojourn[i] / 1e6);
            }
        }
        std::fclose(f);
        return true;
    }
};

// A queue disc's totals, with the drops and marks by reason as "reason=count;..." text.
struct QueueTotals
{
    uint64_t received = 0;
    uint64_t sent = 0;
    uint64_t dropsBeforeEnqueue = 0;
    uint64_t dropsAfterDequeue = 0;
    uint64_t marks = 0;
    uint64_t requeued = 0;
    std::string dropReasons;
    std::string markReasons;
};

template <typename M>
std::string
Reasons(const M& m, const char* prefix)
{
    std::string out;
    for (const auto& kv : m)
    {
        out += std::string(prefix) + kv.first + "=" + std::to_string(kv.second) + ";";
    }
    return out;
}

QueueTotals
Totals(Ptr<QueueDisc> qd)
{
    const QueueDisc::Stats& st = qd->GetStats();
    QueueTotals t;
    t.received = st.nTotalReceivedPackets;
    t.sent = st.nTotalSentPackets;
    t.dropsBeforeEnqueue = st.nTotalDroppedPacketsBeforeEnqueue;
    t.dropsAfterDequeue = st.nTotalDroppedPacketsAfterDequeue;
    t.marks = st.nTotalMarkedPackets;
    t.requeued = st.nTotalRequeuedPackets;
    t.dropReasons = Reasons(st.nDroppedPacketsBeforeEnqueue, "enqueue:") +
                    Reasons(st.nDroppedPacketsAfterDequeue, "dequeue:");
    t.markReasons = Reasons(st.nMarkedPackets, "");
    return t;
}

uint32_t
Ipv4Of(Ptr<Node> node, uint32_t interface)
{
    return node->GetObject<Ipv4>()->GetAddress(interface, 0).GetLocal().Get();
}
} // namespace startlab_bench
"""
)


def _rss_kib(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


def _summary(s) -> dict:  # noqa: ANN001 (a cppyy SojournSummary)
    if int(s.n) == 0:
        return {
            "n": 0,
            "mean_ns": None,
            "p50_ns": None,
            "p90_ns": None,
            "p99_ns": None,
            "max_ns": None,
        }
    return {
        "n": int(s.n),
        "mean_ns": float(s.mean),
        "p50_ns": int(s.p50),
        "p90_ns": int(s.p90),
        "p99_ns": int(s.p99),
        "max_ns": int(s.max),
    }


def _reasons(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in str(text).split(";"):
        if item:
            reason, _, count = item.rpartition("=")
            out[reason] = int(count)
    return out


def run(
    setup: Setup,
    trace_path: str | None,
    run_number: int | None = None,
    queue_trace_path: str | None = None,
) -> dict:
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
    if setup.ecn:
        ns.Config.SetDefault("ns3::TcpSocketBase::UseEcn", ns.StringValue("On"))
    configs: dict[str, aqm_replay.Ns3Config] = {}
    if setup.aqm:
        # Only with an AQM, so that drop-tail runs are the very runs of before.
        ns.RngSeedManager.SetSeed(1)
        ns.RngSeedManager.SetRun(setup.seed if run_number is None else run_number)
        for direction, spec in (("forward", setup.forward), ("reverse", setup.reverse)):
            if spec is not None and spec.aqm is not None:
                configs[direction] = ns3_queue_config(spec.aqm, setup)
        min_bytes = {
            c.codel_min_bytes for c in configs.values() if c.type_id.endswith("FqCoDelQueueDisc")
        }
        if len(min_bytes) > 1:
            raise SystemExit("both directions' FQ-CoDel must have the same mtu")
        if min_bytes:
            # FQ-CoDel's CoDel children take MinBytes from the attribute's default.
            ns.Config.SetDefault("ns3::CoDelQueueDisc::MinBytes", ns.UintegerValue(min_bytes.pop()))
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
    # AQM bottleneck: the discipline as the device's root queue disc, the device's own queue
    # one packet (module docstring); a drop-tail direction keeps its device queue of N packets.
    qdiscs: dict[str, object] = {}
    for j, (direction, spec) in enumerate((("forward", setup.forward), ("reverse", setup.reverse))):
        assert spec is not None
        device = bottleneck.Get(j)
        if spec.aqm is None:
            if spec.packets != setup.queue_packets:
                sb.SetDeviceQueuePackets(device, spec.packets)
            continue
        config = configs[direction]
        names = cppyy.gbl.std.vector[cppyy.gbl.std.string]()
        values = cppyy.gbl.std.vector[cppyy.gbl.std.string]()
        for k, v in config.attributes:
            names.push_back(k)
            values.push_back(v)
        sb.SetDeviceQueuePackets(device, AQM_DEVICE_QUEUE_PACKETS)
        qd = sb.InstallQueueDisc(device, config.type_id, names, values)
        if config.type_id == "ns3::FqCoDelQueueDisc":
            sb.SetUpFqCoDel(qd, config.quantum, config.limit)
        qdiscs[direction] = qd
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
    recorders = {}
    for j, direction in enumerate(("forward", "reverse")):
        if direction in qdiscs:
            rec = sb.QueueRecorder()
            rec.keepEvents = direction == "forward" and queue_trace_path is not None
            if not rec.Attach(qdiscs[direction], bottleneck.Get(j)):
                raise SystemExit(f"cannot trace the {direction} queue disc")
            recorders[direction] = rec
    if "forward" in recorders:
        for k, flow in enumerate(setup.flows):
            # Interface 1 of a sender is its access link (0 is the loopback).
            recorders["forward"].flowOfSource[sb.Ipv4Of(senders.Get(flow.pair), 1)] = k

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
        # Flow 0 always; with an AQM every flow (drop-tail runs keep their events as before).
        if k == 0 or setup.aqm:
            probe = sb.Probe()
            probe.segment = mss
            probe.cwnd = setup.initial_window * mss
            probe.ssthresh = ssthresh_bytes
            probe.keepTrace = k == 0 and trace_path is not None
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
    if setup.aqm:
        result.update(_aqm_results(setup, sb, bottleneck, qdiscs, recorders, probes, sinks))
        result["drops"] += result["queue_disc_drops"]
        result["run"] = setup.seed if run_number is None else run_number
        if queue_trace_path is not None:
            if "forward" not in recorders:
                raise SystemExit("--trace-queue: the forward direction has no AQM")
            if not recorders["forward"].WriteEvents(queue_trace_path):
                raise SystemExit(f"cannot write {queue_trace_path}")
            bins = str(Path(queue_trace_path).with_suffix("")) + "-wait.csv"
            if not recorders["forward"].WriteBins(bins):
                raise SystemExit(f"cannot write {bins}")
    ns.Simulator.Destroy()
    return result


def _aqm_results(setup, sb, bottleneck, qdiscs, recorders, probes, sinks) -> dict:  # noqa: ANN001
    """The AQM mode's additions to the result (forward = the bottleneck's data direction)."""
    out: dict = {"ecn": setup.ecn, "device_queue_packets": AQM_DEVICE_QUEUE_PACKETS}
    for j, direction in enumerate(("forward", "reverse")):
        spec = setup.forward if direction == "forward" else setup.reverse
        d: dict = {"kind": spec.kind, "limit": spec.packets}
        if direction in qdiscs:
            t = sb.Totals(qdiscs[direction])
            rec = recorders[direction]
            d.update(
                {
                    "queue": spec.aqm.text,
                    "received": int(t.received),
                    "sent": int(t.sent),
                    "drops_before_enqueue": int(t.dropsBeforeEnqueue),
                    "drops_after_dequeue": int(t.dropsAfterDequeue),
                    "drops": int(t.dropsBeforeEnqueue + t.dropsAfterDequeue),
                    "marks": int(t.marks),
                    "requeued": int(t.requeued),
                    "drop_reasons": _reasons(t.dropReasons),
                    "mark_reasons": _reasons(t.markReasons),
                    "sojourn": _summary(rec.Sent()),
                    "sojourn_all_dequeued": _summary(rec.All()),
                    "wire_wait": _summary(rec.Wire()),
                    "unmatched_drops_after_dequeue": int(rec.orphanDrops),
                }
            )
            if spec.kind == "fq_codel":
                d["flow_queues"] = int(sb.QueueDiscClasses(qdiscs[direction]))
        device = sb.Counts(bottleneck.Get(j))
        d["device_queue_drops"] = int(device.drops)
        out[direction] = d
    fwd = out["forward"]
    out["queue_disc_drops"] = int(fwd.get("drops", 0))
    out["marks"] = int(fwd.get("marks", 0))
    if "sojourn" in fwd:
        out["sojourn"] = fwd["sojourn"]
    out["flows"] = [
        {
            "pair": flow.pair,
            "cc": flow.cc,
            "start_s": flow.start_s,
            "delivered_bytes": int(sb.SinkBytes(sink)),
            "recoveries": int(probe.recoveries),
            "timeouts": int(probe.timeouts),
            "ecn_reductions": int(probe.cwrs),
            "ss_exit_s": float(probe.exitTime),
            "ss_exit_cwnd": float(probe.exitCwnd),
            "ss_exit_reason": str(probe.exitReason),
        }
        for flow, sink, probe in zip(setup.flows, sinks, probes, strict=True)
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", type=Path, help="a startlab scenario file")
    parser.add_argument("--trace-flow0", metavar="CSV", help="write flow 0's cwnd changes here")
    parser.add_argument(
        "--trace-queue",
        metavar="CSV",
        help="with an AQM: write every drop and mark of the forward queue disc here",
    )
    parser.add_argument(
        "--run",
        type=int,
        help="with an AQM: ns-3's run number (PIE's draws; default the scenario's seed)",
    )
    args = parser.parse_args()
    setup = load(args.scenario)
    if (args.run is not None or args.trace_queue) and not setup.aqm:
        raise SystemExit("--run and --trace-queue need a codel, fq_codel or pie bottleneck")
    result = run(setup, args.trace_flow0, args.run, args.trace_queue)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
