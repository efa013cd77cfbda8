"""Replay arrivals into ns-3's CoDel, FQ-CoDel and PIE queue discs, and compare with startlab.

    PY=bench/ns3/.venv/bin/python
    $PY bench/ns3/aqm_replay.py ns3 --queue '{ kind = "codel" }' --rate 20000000 \\
        --in arrivals.csv --out decisions.csv [--seed 1]
    $PY bench/ns3/aqm_replay.py generate --pattern overload --seed 1 --out arrivals.csv
    $PY bench/ns3/aqm_replay.py compare --startlab target/release/startlab-bench \\
        [--json OUT] [--only codel,incast] [--workdir DIR] [--seed 1]
    $PY bench/ns3/aqm_replay.py selftest

## The replay

One output queue drained by a transmitter of fixed rate R (bits/s). The arrivals
(`id,time_ns,bytes,flow,ecn`, ids 0..n-1 in time order) are offered to the queue at their
instants. When the transmitter is idle and the queue holds packets, the discipline's dequeue
runs; the packet it returns occupies the transmitter for ceil(bytes × 8 × 10⁹ / R) ns, and the
next dequeue runs the instant it frees. An arrival finding the transmitter idle and the queue
empty is enqueued and dequeued at once. A dequeue and an arrival at the same nanosecond: the
dequeue first. The replay starts at simulator time zero (CoDel's clock is ns >> 10, so the
origin counts).

The decisions (`id,outcome,time_ns`, one row per packet, by id): `sent` at its dequeue,
`sent-marked` if the discipline set CE on it (a packet that arrived CE is `sent`),
`dropped-enqueue` at its arrival (limit, PIE's early drop), `dropped-dequeue` at the drop
(CoDel's control law, FQ-CoDel's overflow drop from the fattest flow).

`compare` generates each pattern of its plan (bench/ns3/aqm_patterns.py), replays it on both
sides and prints a Markdown table; PIE, whose drops are random, is compared by distribution.

## The ns-3 side

A small C++ driver compiled through cppyy runs the whole replay as ns-3 events, so that ns-3's
disciplines read `Simulator::Now()` and PIE's own timer (`PieQueueDisc::CalculateP`) fires as
ns-3 schedules it. One event is pending at a time: the driver's next step, at the earlier of the
next arrival and the transmitter's release, which puts the dequeue before an arrival of the same
nanosecond. Each packet is an `Ipv4QueueDiscItem` whose 20-byte header is part of the packet's
size; the header carries the ECN codepoint (`Mark()` writes CE into it) and the flow number, as
the source address 10.0.0.0 + flow. Outcomes come from the queue disc's `DropBeforeEnqueue` and
`DropAfterDequeue` traces (a child CoDel's drops reach FQ-CoDel's traces) and from the ECN
field of each dequeued item.

How the queue's TOML table (startlab's scenario syntax, Linux's defaults) is carried over:

| field                 | ns-3                                                             |
| --------------------- | ---------------------------------------------------------------- |
| codel `limit`         | `CoDelQueueDisc::MaxSize` in packets                             |
| `target`, `interval`  | `Target`, `Interval` (exact nanoseconds)                         |
| `ecn`                 | `UseEcn`                                                         |
| `ce_threshold`        | `CeThreshold`; ns-3 applies it only with `UseEcn`: needs `ecn`    |
| `mtu`                 | `MinBytes` = mtu + 1 (ns-3 spares backlog < MinBytes, Linux <= mtu) |
| fq_codel `limit`      | `FqCoDelQueueDisc::MaxSize`, set after `Initialize()` (below)    |
| `flows`, `drop_batch` | `Flows`, `DropBatchSize`                                         |
| `quantum`             | `FqCoDelQueueDisc::SetQuantum` (at least 256, as Linux)          |
| classification        | a `PacketFilter` answering the flow number (ns-3 takes it % Flows) |
| `memory_limit`        | none in ns-3: accepted only where it cannot bind in the replay   |
| pie `limit`           | `PieQueueDisc::MaxSize` in packets                               |
| `target`, `tupdate`   | `QueueDelayReference`, `Tupdate`                                 |
| `alpha`, `beta`       | `A` = alpha / 16, `B` = beta / 16                                |
| `ecn`                 | `UseEcn`, `MarkEcnThreshold` 0.1                                 |
| `dq_rate_estimator`   | `UseDequeueRateEstimator`, `DequeueThreshold` 16384 (Linux's)    |
| `max_burst`           | `MaxBurstAllowance`                                              |
| (Linux always)        | `UseDerandomization`, `UseCapDropAdjustment`                     |
| `bytemode`, pie `mtu` | refused: ns-3 scales by size only with a byte limit, counts packets |

FQ-CoDel's flows are `CoDelQueueDisc` children whose `MaxSize` is the parent's at
`Initialize()`: a single flow holding `limit` packets would refuse the next arrival itself,
where Linux drops from the head of the fattest flow. The parent is therefore initialized with
`limit + 1` and set to `limit` afterwards, so that only the parent's overflow rule acts. The
children's `MinBytes` is set through `Config::SetDefault`.

## Where ns-3 3.44 differs from Linux 6.18

CoDel (`codel-queue-disc.cc` against `include/net/codel_impl.h`, `net/sched/sch_codel.c`):
- `DoDequeue`, a mark in the dropping state: ns-3 sets `dropNext = ControlLaw(now, ...)`,
  `codel_dequeue` `drop_next = codel_control_law(drop_next, ...)`: ns-3's marks fall later.
- `OkToDrop`: the sojourn is `(now_ns - enqueue_ns) >> 10`; `codel_should_drop` subtracts two
  times already shifted (`codel_get_time()`), which can be one unit (1024 ns) larger.
- `DoDequeue`, re-entering the dropping state: `CoDelTimeBefore(now - dropNext, 16 * interval)`
  widens the uint32 difference to int64, so a `now` before `dropNext` restarts `count` at 1
  where Linux's signed 32-bit test keeps `count - lastcount` (the entry rule keeps `now` after
  `dropNext`, so this stays latent).
- `ce_threshold` marks only with `UseEcn`; Linux marks at the threshold whatever `ecn` says.
FQ-CoDel (`fq-codel-queue-disc.cc` against `net/sched/sch_fq_codel.c`):
- `FqCoDelDrop` does not add the dropped packets to the flow's CoDel count
  (`fq_codel_drop`: `flow->cvars.count += i`).
- `FqCoDelDrop` scans the classes in creation order, `fq_codel_drop` the buckets by index: of
  equally fat flows they pick different ones unless the buckets were first used in index order.
- `DoDequeue`: a new flow found empty always goes to the old list; `fq_codel_dequeue` moves it
  there only if the old list is not empty, and otherwise takes it off (`list_del_init`).
- Each flow's CoDel applies the mtu rule to the flow's backlog; Linux to the whole qdisc's
  (`codel_dequeue(sch, &sch->qstats.backlog, ...)`).
- No memory limit (Linux counts each skb's `truesize` against `memory_limit`).
PIE (`pie-queue-disc.cc` against `net/sched/sch_pie.c`, `include/net/pie.h`):
- The timer first fires at t = 0 (the constructor schedules it before attributes set
  `Supdate`), then every `Tupdate`; `pie_init` arms it at HZ/2 = 0.5 s, in jiffies.
- Burst allowance: ns-3 arms it at the first early-drop check, spends `Tupdate` of it per
  update, and re-arms it after 1.5 s of calm (NO_BURST/IN_BURST states); while any remains,
  `CalculateP` holds the probability at 0. Linux spends the time between dequeues
  (`pie_process_dequeue`), re-arms it in `pie_vars_init` at every calm update, and keeps
  updating the probability during the burst.
- `DropEarly`: the low-delay safeguard reads the delay of the last update (`m_qDelayOld`),
  `pie_drop_early` the current one; ns-3 needs more than 2 packets queued, Linux 2 × mtu bytes.
- Derandomization is an option (set here); after a random success that ends in a mark, ns-3
  keeps the accumulated probability, `pie_drop_early` clears it.
- `CalculateP`: no +2 % step above 250 ms of delay; the decay is × 0.98 (Linux − p/64) and also
  runs with packets queued. The alpha/beta scaling by decade and the 2 % cap above 10 % agree.
- With the estimator the average rate is ½ old + ½ new (Linux ⅞ old + ⅛ new); by default both
  measure the delay by timestamps (the sojourn of the last dequeued packet, 0 once empty).
- ECN marks while p < 10 % (Linux p <= 10 %).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aqm_patterns

IPV4_HEADER = 20
OUTCOMES = ("sent", "sent-marked", "dropped-enqueue", "dropped-dequeue")

# --------------------------------------------------------------------------------------------
# The queue table

_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}

DEFAULTS: dict[str, dict[str, Any]] = {
    "codel": {
        "limit": 1000,
        "target": "5ms",
        "interval": "100ms",
        "ecn": False,
        "ce_threshold": None,
        "mtu": 1500,
    },
    "fq_codel": {
        "limit": 10240,
        "flows": 1024,
        "quantum": 1514,
        "target": "5ms",
        "interval": "100ms",
        "ecn": True,
        "ce_threshold": None,
        "memory_limit": 33554432,
        "drop_batch": 64,
        "mtu": 1500,
    },
    "pie": {
        "limit": 1000,
        "target": "15ms",
        "tupdate": "15ms",
        "alpha": 2,
        "beta": 20,
        "ecn": False,
        "bytemode": False,
        "dq_rate_estimator": False,
        "max_burst": "150ms",
        "mtu": 1500,
    },
}


def duration_ns(text: object, what: str) -> int:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(ns|us|ms|s)\s*", str(text))
    if not isinstance(text, str) or not m:
        raise SystemExit(f"{what}: cannot read {text!r} (a string with unit ns, us, ms or s)")
    whole, _, frac = m.group(1).partition(".")
    scale = _NS[m.group(2)]
    value = int(whole) * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
    if frac and int(frac) * scale % 10 ** len(frac):
        raise SystemExit(f"{what}: {text!r} is not a whole number of nanoseconds")
    return value


@dataclass
class Queue:
    kind: str
    fields: dict[str, Any]
    text: str

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]


def parse_queue(text: str) -> Queue:
    try:
        table = tomllib.loads(f"queue = {text}")["queue"]
    except tomllib.TOMLDecodeError as e:
        raise SystemExit(f"--queue: not a TOML inline table: {e}") from None
    if not isinstance(table, dict) or "kind" not in table:
        raise SystemExit('--queue: expected an inline table with a kind, e.g. { kind = "codel" }')
    kind = table.pop("kind")
    if kind not in DEFAULTS:
        raise SystemExit(f"--queue: kind {kind!r}: the ns-3 replay knows {', '.join(DEFAULTS)}")
    extra = set(table) - set(DEFAULTS[kind])
    if extra:
        raise SystemExit(f"--queue: {kind} has no field(s) {sorted(extra)} in the ns-3 replay")
    fields = dict(DEFAULTS[kind])
    fields.update(table)
    for key in ("target", "interval", "tupdate", "max_burst", "ce_threshold"):
        if key in fields and fields[key] is not None:
            fields[key] = duration_ns(fields[key], f"{kind}.{key}")
    for key in ("limit", "flows", "quantum", "memory_limit", "drop_batch", "mtu", "alpha", "beta"):
        if key in fields and (not isinstance(fields[key], int) or isinstance(fields[key], bool)):
            raise SystemExit(f"--queue: {kind}.{key} must be an integer, not {fields[key]!r}")
    for key in ("ecn", "bytemode", "dq_rate_estimator"):
        if key in fields and not isinstance(fields[key], bool):
            raise SystemExit(f"--queue: {kind}.{key} must be true or false")
    if int(fields["limit"]) < 1:
        raise SystemExit(f"--queue: {kind}.limit must be at least 1 packet")
    return Queue(kind, fields, text)


@dataclass
class Ns3Config:
    type_id: str
    attributes: list[tuple[str, str]]
    codel_min_bytes: int = 1501  # default MinBytes of FQ-CoDel's CoDel children
    quantum: int = 0
    limit: int = 0


def ns3_config(q: Queue, max_bytes: int) -> Ns3Config:
    """The ns-3 queue disc for `q`; `max_bytes` is the largest packet the replay offers."""
    f = q.fields

    def ns(key: str) -> str:
        return f"{f[key]}ns"

    if q.kind in ("codel", "fq_codel"):
        if f["ce_threshold"] is not None and not f["ecn"]:
            raise SystemExit(
                f"--queue: {q.kind}.ce_threshold without ecn: ns-3's CoDel marks at the "
                "threshold only with UseEcn (Linux marks regardless), so this cannot be mapped"
            )
        if not 68 <= int(f["mtu"]) <= 65535:
            raise SystemExit(f"--queue: {q.kind}.mtu must be 68 to 65535 bytes")
        common = [
            ("Target", ns("target")),
            ("Interval", ns("interval")),
            ("UseEcn", "true" if f["ecn"] else "false"),
        ]
        if f["ce_threshold"] is not None:
            common.append(("CeThreshold", ns("ce_threshold")))
        min_bytes = int(f["mtu"]) + 1
        if q.kind == "codel":
            return Ns3Config(
                "ns3::CoDelQueueDisc",
                [("MaxSize", f"{f['limit']}p"), ("MinBytes", str(min_bytes)), *common],
            )
        limit = int(f["limit"])
        if int(f["memory_limit"]) < limit * max_bytes:
            raise SystemExit(
                f"--queue: fq_codel.memory_limit = {f['memory_limit']} could bind in this replay "
                f"({limit} packets of up to {max_bytes} bytes) and ns-3 has no memory limit"
            )
        if not 1 <= int(f["flows"]) <= 65536:
            raise SystemExit("--queue: fq_codel.flows must be 1 to 65536")
        if int(f["drop_batch"]) < 1:
            raise SystemExit("--queue: fq_codel.drop_batch must be at least 1")
        return Ns3Config(
            "ns3::FqCoDelQueueDisc",
            [
                # The children take the parent's size at Initialize(): one more than the
                # limit, so that only the parent's overflow rule acts (set back afterwards).
                ("MaxSize", f"{limit + 1}p"),
                ("Flows", str(f["flows"])),
                ("DropBatchSize", str(f["drop_batch"])),
                *common,
            ],
            codel_min_bytes=min_bytes,
            quantum=max(256, int(f["quantum"])),
            limit=limit,
        )
    # PIE
    if f["bytemode"]:
        raise SystemExit(
            "--queue: pie.bytemode: ns-3 scales by packet size only with a limit in bytes "
            "(p × size / MeanPktSize), Linux by size / mtu with a limit in packets: not mapped"
        )
    if f["mtu"] != 1500:
        raise SystemExit(
            "--queue: pie.mtu: ns-3's PIE has no mtu (it skips early drops with at most 2 "
            "packets queued, Linux below 2 × mtu bytes): only the default 1500 is accepted"
        )
    for key in ("alpha", "beta"):
        if not 0 <= int(f[key]) <= 32:
            raise SystemExit(f"--queue: pie.{key} must be 0 to 32 (sixteenths)")
    return Ns3Config(
        "ns3::PieQueueDisc",
        [
            ("MaxSize", f"{f['limit']}p"),
            ("QueueDelayReference", ns("target")),
            ("Tupdate", ns("tupdate")),
            ("A", repr(int(f["alpha"]) / 16)),
            ("B", repr(int(f["beta"]) / 16)),
            ("UseEcn", "true" if f["ecn"] else "false"),
            ("MarkEcnThreshold", "0.1"),
            ("UseDerandomization", "true"),
            ("UseCapDropAdjustment", "true"),
            ("UseDequeueRateEstimator", "true" if f["dq_rate_estimator"] else "false"),
            ("DequeueThreshold", "16384"),
            ("MaxBurstAllowance", ns("max_burst")),
        ],
    )


# --------------------------------------------------------------------------------------------
# Arrivals and decisions


@dataclass
class Arrivals:
    time_ns: list[int] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)
    flow: list[int] = field(default_factory=list)
    ecn: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.time_ns)


def read_arrivals(path: Path) -> Arrivals:
    a = Arrivals()
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != ["id", "time_ns", "bytes", "flow", "ecn"]:
            raise SystemExit(f"{path}: expected the header id,time_ns,bytes,flow,ecn")
        last = 0
        for line, row in enumerate(reader, start=2):
            try:
                i, t, b, fl, e = (int(x) for x in row)
            except ValueError:
                raise SystemExit(f"{path}:{line}: expected five integers") from None
            if i != len(a):
                raise SystemExit(f"{path}:{line}: id {i}, expected {len(a)}")
            if t < last:
                raise SystemExit(f"{path}:{line}: time {t} goes back (previous {last})")
            if not IPV4_HEADER <= b <= 65535:
                raise SystemExit(f"{path}:{line}: {b} bytes: a packet is 20 to 65535 bytes")
            if not 0 <= fl < 2**24 or not 0 <= e <= 3:
                raise SystemExit(f"{path}:{line}: flow 0..2^24-1 and ecn 0..3 expected")
            last = t
            a.time_ns.append(t)
            a.bytes.append(b)
            a.flow.append(fl)
            a.ecn.append(e)
    return a


@dataclass(frozen=True)
class Decision:
    outcome: str
    time_ns: int


def write_decisions(path: Path, decisions: list[Decision]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "outcome", "time_ns"])
        for i, d in enumerate(decisions):
            w.writerow([i, d.outcome, d.time_ns])


def read_decisions(path: Path, n: int) -> list[Decision]:
    out: list[Decision] = []
    with path.open(newline="") as f:
        reader = csv.reader(f)
        if next(reader, None) != ["id", "outcome", "time_ns"]:
            raise ValueError(f"{path}: expected the header id,outcome,time_ns")
        for row in reader:
            i, outcome, t = int(row[0]), row[1], int(row[2])
            if i != len(out) or outcome not in OUTCOMES:
                raise ValueError(f"{path}: bad row {row}")
            out.append(Decision(outcome, t))
    if len(out) != n:
        raise ValueError(f"{path}: {len(out)} rows for {n} packets")
    return out


# --------------------------------------------------------------------------------------------
# ns-3

# A queue disc from its ns-3 type and attributes given as strings (also ns3_scenario.py's, inside
# its own namespace).
QUEUE_DISC_CPP = r"""
Ptr<QueueDisc>
MakeQueueDisc(const std::string& type,
              const std::vector<std::string>& names,
              const std::vector<std::string>& values)
{
    ObjectFactory factory;
    factory.SetTypeId(type);
    for (size_t i = 0; i < names.size(); ++i)
    {
        factory.Set(names[i], StringValue(values[i]));
    }
    return factory.Create<QueueDisc>();
}
"""

DRIVER_CPP = (
    r"""
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/traffic-control-module.h"
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace aqm_replay
{
using namespace ns3;

const uint32_t FLOW_BASE = 0x0A000000; // a packet of flow f comes from 10.0.0.0 + f

// FQ-CoDel's classifier for the replay: the flow number, which FqCoDelQueueDisc takes modulo
// its Flows (DoEnqueue: h = flowHash % m_flows when a filter answers).
class FlowNumberFilter : public PacketFilter
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("aqm_replay::FlowNumberFilter")
                                .SetParent<PacketFilter>()
                                .SetGroupName("TrafficControl")
                                .AddConstructor<FlowNumberFilter>();
        return tid;
    }

    mutable uint64_t classified = 0;

  private:
    bool CheckProtocol(Ptr<QueueDiscItem> item) const override
    {
        return DynamicCast<Ipv4QueueDiscItem>(item) != nullptr;
    }

    int32_t DoClassify(Ptr<QueueDiscItem> item) const override
    {
        ++classified;
        uint32_t src = DynamicCast<Ipv4QueueDiscItem>(item)->GetHeader().GetSource().Get();
        return static_cast<int32_t>(src - FLOW_BASE);
    }
};

"""
    + QUEUE_DISC_CPP
    + r"""
Ptr<FlowNumberFilter>
SetUpFqCoDel(Ptr<QueueDisc> qd, uint32_t quantum, uint32_t limit)
{
    Ptr<FlowNumberFilter> filter = CreateObject<FlowNumberFilter>();
    DynamicCast<FqCoDelQueueDisc>(qd)->SetQuantum(quantum);
    qd->AddPacketFilter(filter);
    qd->Initialize();
    qd->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, limit));
    return filter;
}

void
SetUp(Ptr<QueueDisc> qd, int64_t stream)
{
    Ptr<PieQueueDisc> pie = DynamicCast<PieQueueDisc>(qd);
    if (pie)
    {
        pie->AssignStreams(stream);
    }
    qd->Initialize();
}

// The FQ-CoDel buckets that hold a flow queue, by the class's own index (for the check that
// packets went where their flow number says).
std::vector<uint32_t>
FqCoDelBuckets(Ptr<QueueDisc> qd)
{
    std::vector<uint32_t> out;
    for (size_t i = 0; i < qd->GetNQueueDiscClasses(); ++i)
    {
        out.push_back(DynamicCast<FqCoDelFlow>(qd->GetQueueDiscClass(i))->GetIndex());
    }
    return out;
}

// 0 sent, 1 sent-marked, 2 dropped-enqueue, 3 dropped-dequeue, -1 undecided.
struct Replay
{
    Ptr<QueueDisc> qd;
    uint64_t rateBps = 0;
    std::vector<int64_t> time;
    std::vector<uint32_t> bytes;
    std::vector<uint32_t> flow;
    std::vector<uint8_t> ecn;
    std::vector<int32_t> outcome;
    std::vector<int64_t> at;
    std::unordered_map<uint64_t, uint32_t> byUid;
    size_t next = 0;
    bool busy = false;
    int64_t freeAt = 0;
    uint64_t nullDequeues = 0; // a dequeue that returned nothing from a non-empty queue
    uint64_t redecided = 0;    // a packet given two outcomes
    uint64_t unknown = 0;      // a traced packet that is not the replay's

    void Add(int64_t t, uint32_t b, uint32_t f, uint8_t e)
    {
        time.push_back(t);
        bytes.push_back(b);
        flow.push_back(f);
        ecn.push_back(e);
        outcome.push_back(-1);
        at.push_back(-1);
    }

    int64_t Now() const
    {
        return Simulator::Now().GetNanoSeconds();
    }

    int64_t TxNs(uint32_t b) const
    {
        unsigned __int128 bits = static_cast<unsigned __int128>(b) * 8u * 1000000000u;
        return static_cast<int64_t>((bits + rateBps - 1) / rateBps);
    }

    int64_t Id(Ptr<const QueueDiscItem> item)
    {
        auto it = byUid.find(item->GetPacket()->GetUid());
        if (it == byUid.end())
        {
            ++unknown;
            return -1;
        }
        return it->second;
    }

    void Decide(int64_t id, int32_t o)
    {
        if (id < 0)
        {
            return;
        }
        if (outcome[id] != -1)
        {
            ++redecided;
        }
        outcome[id] = o;
        at[id] = Now();
    }

    void OnDropBeforeEnqueue(Ptr<const QueueDiscItem> item, const char*)
    {
        Decide(Id(item), 2);
    }

    void OnDropAfterDequeue(Ptr<const QueueDiscItem> item, const char*)
    {
        Decide(Id(item), 3);
    }

    bool Attach()
    {
        return qd->TraceConnectWithoutContext(
                   "DropBeforeEnqueue",
                   MakeCallback(&Replay::OnDropBeforeEnqueue, this)) &&
               qd->TraceConnectWithoutContext("DropAfterDequeue",
                                              MakeCallback(&Replay::OnDropAfterDequeue, this));
    }

    void Arrive(size_t i)
    {
        Ptr<Packet> p = Create<Packet>(bytes[i] - 20);
        Ipv4Header h;
        h.SetSource(Ipv4Address(FLOW_BASE + flow[i]));
        h.SetDestination(Ipv4Address("192.168.0.1"));
        h.SetProtocol(17);
        h.SetTtl(64);
        h.SetPayloadSize(bytes[i] - 20);
        h.SetEcn(static_cast<Ipv4Header::EcnType>(ecn[i]));
        byUid[p->GetUid()] = static_cast<uint32_t>(i);
        qd->Enqueue(Create<Ipv4QueueDiscItem>(p, Address(), 0x0800, h));
    }

    void Transmit()
    {
        Ptr<QueueDiscItem> item = qd->Dequeue();
        if (!item)
        {
            ++nullDequeues;
            return;
        }
        int64_t id = Id(item);
        if (id < 0)
        {
            return;
        }
        Ptr<Ipv4QueueDiscItem> ip = DynamicCast<Ipv4QueueDiscItem>(item);
        bool ce = ip->GetHeader().GetEcn() == Ipv4Header::ECN_CE;
        Decide(id, ce && ecn[id] != 3 ? 1 : 0);
        busy = true;
        freeAt = Now() + TxNs(bytes[id]);
    }

    void Step()
    {
        int64_t now = Now();
        if (busy && freeAt <= now)
        {
            busy = false;
        }
        // The dequeue of this instant first, then the arrivals of this instant in id order.
        if (!busy && qd->GetNPackets() > 0)
        {
            Transmit();
        }
        while (next < time.size() && time[next] <= now)
        {
            Arrive(next++);
            if (!busy && qd->GetNPackets() > 0)
            {
                Transmit();
            }
        }
        int64_t t = std::numeric_limits<int64_t>::max();
        if (busy)
        {
            t = freeAt;
        }
        if (next < time.size() && time[next] < t)
        {
            t = time[next];
        }
        if (t == std::numeric_limits<int64_t>::max())
        {
            Simulator::Stop(); // PIE's timer would run forever
            return;
        }
        Simulator::Schedule(NanoSeconds(t - now), &Replay::Step, this);
    }

    void Start()
    {
        if (!time.empty())
        {
            Simulator::Schedule(NanoSeconds(time[0]), &Replay::Step, this);
        }
    }
};
} // namespace aqm_replay
"""
)


class Ns3:
    """ns-3 with the replay driver compiled (importing the bindings takes ~15 s, once)."""

    def __init__(self) -> None:
        t0 = time.perf_counter()
        import cppyy
        from ns import ns

        cppyy.cppdef(DRIVER_CPP)
        self.ns = ns
        self.cpp = cppyy.gbl.aqm_replay
        self.std = cppyy.gbl.std
        self.import_s = time.perf_counter() - t0

    def replay(
        self, queue: Queue, rate_bps: int, arrivals: Arrivals, seed: int = 1
    ) -> tuple[list[Decision], dict[str, Any]]:
        ns, cpp = self.ns, self.cpp
        config = ns3_config(queue, max(arrivals.bytes, default=IPV4_HEADER))
        ns.RngSeedManager.SetSeed(1)
        ns.RngSeedManager.SetRun(seed)
        ns.Config.SetDefault(
            "ns3::CoDelQueueDisc::MinBytes", ns.UintegerValue(config.codel_min_bytes)
        )
        names = self.std.vector[self.std.string]()
        values = self.std.vector[self.std.string]()
        for k, v in config.attributes:
            names.push_back(k)
            values.push_back(v)
        qd = cpp.MakeQueueDisc(config.type_id, names, values)
        fq_filter = None
        if config.type_id == "ns3::FqCoDelQueueDisc":
            fq_filter = cpp.SetUpFqCoDel(qd, config.quantum, config.limit)
        else:
            cpp.SetUp(qd, 0)
        r = cpp.Replay()
        r.qd = qd
        r.rateBps = rate_bps
        for t, b, f, e in zip(
            arrivals.time_ns, arrivals.bytes, arrivals.flow, arrivals.ecn, strict=True
        ):
            r.Add(t, b, f, e)
        if not r.Attach():
            raise SystemExit("cannot connect to the queue disc's drop traces")
        r.Start()
        t0 = time.perf_counter()
        ns.Simulator.Run()
        wall = time.perf_counter() - t0
        info: dict[str, Any] = {
            "wall_s": wall,
            "events": int(ns.Simulator.GetEventCount()),
            "null_dequeues": int(r.nullDequeues),
            "redecided": int(r.redecided),
            "unknown": int(r.unknown),
            "attributes": dict(config.attributes),
        }
        if fq_filter is not None:
            flows = int(queue["flows"])
            buckets = sorted(int(b) for b in cpp.FqCoDelBuckets(qd))
            info["fq_buckets"] = len(buckets)
            info["fq_classified"] = int(fq_filter.classified)
            expected = sorted({f % flows for f in arrivals.flow})
            if buckets != expected or int(fq_filter.classified) != len(arrivals):
                raise SystemExit(
                    f"FQ-CoDel classification: buckets {buckets[:10]}... for flows mod {flows} "
                    f"{expected[:10]}..., {int(fq_filter.classified)} of {len(arrivals)} classified"
                )
        outcome = list(r.outcome)
        at = list(r.at)
        qd.Dispose()
        ns.Simulator.Destroy()
        if -1 in outcome or info["redecided"] or info["unknown"]:
            raise SystemExit(
                f"ns-3 replay incomplete: {outcome.count(-1)} undecided, "
                f"{info['redecided']} decided twice, {info['unknown']} unknown packets"
            )
        return [Decision(OUTCOMES[o], t) for o, t in zip(outcome, at, strict=True)], info


# --------------------------------------------------------------------------------------------
# Comparison


@dataclass
class Case:
    name: str
    queue: str
    pattern: str
    statistical: bool = False


PLAN: list[Case] = [
    Case("codel", '{ kind = "codel" }', "overload"),
    Case("codel", '{ kind = "codel" }', "onoff"),
    Case("codel", '{ kind = "codel" }', "tcp-like"),
    Case("codel ecn", '{ kind = "codel", ecn = true }', "overload"),
    Case("codel ecn", '{ kind = "codel", ecn = true }', "multiflow"),
    Case(
        "codel ecn ce_threshold=1ms",
        '{ kind = "codel", ecn = true, ce_threshold = "1ms" }',
        "overload",
    ),
    Case(
        "codel ecn ce_threshold=1ms",
        '{ kind = "codel", ecn = true, ce_threshold = "1ms" }',
        "multiflow",
    ),
    Case("fq_codel", '{ kind = "fq_codel" }', "multiflow"),
    Case("fq_codel", '{ kind = "fq_codel" }', "incast"),
    Case("fq_codel", '{ kind = "fq_codel" }', "tcp-like"),
    Case("fq_codel limit=256", '{ kind = "fq_codel", limit = 256 }', "incast"),
    Case("fq_codel limit=256", '{ kind = "fq_codel", limit = 256 }', "multiflow"),
    Case("pie", '{ kind = "pie" }', "overload", statistical=True),
    Case("pie", '{ kind = "pie" }', "tcp-like", statistical=True),
    Case("pie ecn", '{ kind = "pie", ecn = true }', "overload", statistical=True),
    Case("pie ecn", '{ kind = "pie", ecn = true }', "multiflow", statistical=True),
]


def _quantile(sorted_values: list[int], q: float) -> float:
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return float(sorted_values[k])


def _side_stats(arrivals: Arrivals, d: list[Decision]) -> dict[str, Any]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for x in d:
        counts[x.outcome] += 1
    sojourn = sorted(
        x.time_ns - t
        for x, t in zip(d, arrivals.time_ns, strict=True)
        if x.outcome.startswith("sent")
    )
    return {
        **counts,
        "drops": counts["dropped-enqueue"] + counts["dropped-dequeue"],
        "marks": counts["sent-marked"],
        "sojourn_median_ms": _quantile(sojourn, 0.5) / 1e6,
        "sojourn_p95_ms": _quantile(sojourn, 0.95) / 1e6,
        "sojourn_p99_ms": _quantile(sojourn, 0.99) / 1e6,
    }


def _drop_fraction_bins(arrivals: Arrivals, d: list[Decision], bin_ns: int) -> dict[int, float]:
    total: dict[int, int] = {}
    drops: dict[int, int] = {}
    for t, x in zip(arrivals.time_ns, d, strict=True):
        k = t // bin_ns
        total[k] = total.get(k, 0) + 1
        if x.outcome.startswith("dropped"):
            drops[k] = drops.get(k, 0) + 1
    return {k: drops.get(k, 0) / n for k, n in total.items()}


def compare_decisions(arrivals: Arrivals, a: list[Decision], b: list[Decision]) -> dict[str, Any]:
    """`a` is ns-3's, `b` startlab's."""
    outcome_diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x.outcome != y.outcome]
    row_diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    both_sent = [
        abs(x.time_ns - y.time_ns)
        for x, y in zip(a, b, strict=True)
        if x.outcome.startswith("sent") and y.outcome.startswith("sent")
    ]
    fa = _drop_fraction_bins(arrivals, a, 100_000_000)
    fb = _drop_fraction_bins(arrivals, b, 100_000_000)
    gaps = [abs(fa[k] - fb[k]) for k in fa]
    first = row_diff[0] if row_diff else None
    # The earliest divergence in time (the lowest id need not be the first event that differs).
    earliest = min(row_diff, key=lambda i: min(a[i].time_ns, b[i].time_ns), default=None)
    return {
        "ns3": _side_stats(arrivals, a),
        "startlab": _side_stats(arrivals, b),
        "outcomes_differ": len(outcome_diff),
        "rows_differ": len(row_diff),
        "max_abs_dt_sent_ns": max(both_sent, default=0),
        "first_difference": None
        if first is None
        else {
            "id": first,
            "arrival": [
                arrivals.time_ns[first],
                arrivals.bytes[first],
                arrivals.flow[first],
                arrivals.ecn[first],
            ],
            "ns3": [a[first].outcome, a[first].time_ns],
            "startlab": [b[first].outcome, b[first].time_ns],
        },
        "first_outcome_difference": outcome_diff[0] if outcome_diff else None,
        "earliest_difference": None
        if earliest is None
        else {
            "id": earliest,
            "ns3": [a[earliest].outcome, a[earliest].time_ns],
            "startlab": [b[earliest].outcome, b[earliest].time_ns],
        },
        "drop_fraction_100ms_mean_abs_diff": statistics.fmean(gaps) if gaps else 0.0,
        "drop_fraction_100ms_max_abs_diff": max(gaps, default=0.0),
    }


def run_startlab(
    binary: Path, queue: str, rate: int, arrivals_csv: Path, out: Path
) -> tuple[float, str | None]:
    cmd = [
        str(binary),
        "--aqm-replay",
        "--queue",
        queue,
        "--rate",
        str(rate),
        "--in",
        str(arrivals_csv),
        "--out",
        str(out),
    ]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        return wall, (p.stderr.strip() or p.stdout.strip() or f"exit {p.returncode}")[-300:]
    return wall, None


def _fmt_row(o: str, t: int) -> str:
    return f"{o} @ {t}"


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| config | pattern | packets | drops ns-3 / startlab | marks ns-3 / startlab "
        "| outcomes differ | rows differ | max abs Δt sent (ns) | first differing packet |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        head = f"| {r['config']} | {r['pattern']} | {r['packets']} |"
        if r.get("error"):
            lines.append(f"{head} — | — | — | — | — | {r['error']} |")
            continue
        c = r["comparison"]
        drops = f"{c['ns3']['drops']} / {c['startlab']['drops']}"
        marks = f"{c['ns3']['marks']} / {c['startlab']['marks']}"
        if r["statistical"]:
            lines.append(
                f"{head} {drops} | {marks} | random: not compared | — | — "
                "| statistical comparison (table below) |"
            )
            continue
        fd = c["first_difference"]
        if fd is None:
            first = "none"
        else:
            first = (
                f"#{fd['id']} (arrival {fd['arrival'][0]} ns, {fd['arrival'][1]} B, "
                f"flow {fd['arrival'][2]}, ecn {fd['arrival'][3]}): ns-3 "
                f"{_fmt_row(*fd['ns3'])}; startlab {_fmt_row(*fd['startlab'])}"
            )
        lines.append(
            f"{head} {drops} | {marks} | {c['outcomes_differ']} | {c['rows_differ']} "
            f"| {c['max_abs_dt_sent_ns']} | {first} |"
        )
    stat = [r for r in results if r["statistical"] and not r.get("error")]
    if stat:
        lines += [
            "",
            "PIE drops at random (ns-3's generator vs the kernel's `get_random_bytes` model), so "
            "its rows are compared by distribution: drop fraction per 100 ms of arrivals "
            "(mean and max absolute difference over the bins) and the sojourn time of sent "
            "packets (ms).",
            "",
            "| config | pattern | drops ns-3 / startlab | marks ns-3 / startlab "
            "| drop fraction/100 ms: mean, max abs diff | sojourn median | sojourn p95 "
            "| sojourn p99 |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in stat:
            c = r["comparison"]
            a, b = c["ns3"], c["startlab"]

            def q(k: str, a: dict[str, Any] = a, b: dict[str, Any] = b) -> str:
                return f"{a[k]:.2f} / {b[k]:.2f}"

            lines.append(
                f"| {r['config']} | {r['pattern']} | {a['drops']} / {b['drops']} "
                f"| {a['marks']} / {b['marks']} "
                f"| {c['drop_fraction_100ms_mean_abs_diff']:.3f}, "
                f"{c['drop_fraction_100ms_max_abs_diff']:.3f} "
                f"| {q('sojourn_median_ms')} | {q('sojourn_p95_ms')} | {q('sojourn_p99_ms')} |"
            )
    return "\n".join(lines)


def cmd_compare(args: argparse.Namespace) -> None:
    binary = Path(args.startlab)
    if not binary.exists():
        raise SystemExit(f"{binary}: no such startlab-bench")
    only = [s.strip() for s in args.only.split(",")] if args.only else []
    plan = [
        c for c in PLAN if not only or any(s == c.pattern or c.name.startswith(s) for s in only)
    ]
    ns3 = Ns3()
    print(f"ns-3 bindings loaded in {ns3.import_s:.1f} s", file=sys.stderr)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="aqm-replay-"))
    work.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    for case in plan:
        arrivals_list, rate = aqm_patterns.generate(case.pattern, args.seed)
        slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{case.name}-{case.pattern}").strip("-")
        arrivals_csv = work / f"{case.pattern}-{args.seed}.csv"
        aqm_patterns.write_arrivals(arrivals_csv, arrivals_list)
        arrivals = read_arrivals(arrivals_csv)
        queue = parse_queue(case.queue)
        ns3_decisions, info = ns3.replay(queue, rate, arrivals, args.seed)
        write_decisions(work / f"{slug}.ns3.csv", ns3_decisions)
        result: dict[str, Any] = {
            "config": case.name,
            "queue": case.queue,
            "pattern": case.pattern,
            "rate_bps": rate,
            "seed": args.seed,
            "packets": len(arrivals),
            "statistical": case.statistical,
            "ns3_wall_s": info["wall_s"],
        }
        out = work / f"{slug}.startlab.csv"
        wall, error = run_startlab(binary, case.queue, rate, arrivals_csv, out)
        result["startlab_wall_s"] = wall
        if error is None:
            try:
                startlab_decisions = read_decisions(out, len(arrivals))
                result["comparison"] = compare_decisions(
                    arrivals, ns3_decisions, startlab_decisions
                )
            except ValueError as e:
                error = str(e)
        if error is not None:
            result["error"] = "startlab: " + error.replace("|", "/").replace("\n", " ")
        results.append(result)
        print(
            f"{case.name:28} {case.pattern:10} {len(arrivals):6} packets  ns-3 "
            f"{info['wall_s']:.2f} s  startlab {wall:.2f} s"
            + (f"  ERROR {result['error']}" if error else ""),
            file=sys.stderr,
        )
    print(f"arrivals and decisions in {work}", file=sys.stderr)
    print(markdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


# --------------------------------------------------------------------------------------------
# Self-test of the ns-3 side


def _arrivals(rows: list[tuple[int, int, int, int]]) -> Arrivals:
    a = Arrivals()
    for t, b, f, e in rows:
        a.time_ns.append(t)
        a.bytes.append(b)
        a.flow.append(f)
        a.ecn.append(e)
    return a


def _fifo(a: Arrivals, rate: int) -> list[int]:
    free, out = 0, []
    for t, b in zip(a.time_ns, a.bytes, strict=True):
        start = max(t, free)
        out.append(start)
        free = start + math.ceil(b * 8 * 1_000_000_000 / rate)
    return out


def cmd_selftest(args: argparse.Namespace) -> None:
    ns3 = Ns3()
    failures: list[str] = []

    def check(ok: bool, what: str) -> None:
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    # 1. Below capacity with room to spare: a FIFO. Every packet is sent when a FIFO sends it.
    arrivals_list, _ = aqm_patterns.generate("multiflow", 7)
    a = _arrivals([(x.time_ns, x.bytes, x.flow, x.ecn) for x in arrivals_list])
    rate = 100_000_000  # 1.3 × 50 Mbit/s offered
    fifo = _fifo(a, rate)
    for text in (
        '{ kind = "codel", limit = 100000, target = "1000s", interval = "1000s" }',
        '{ kind = "pie", limit = 100000, target = "1000s" }',
        '{ kind = "fq_codel", flows = 1, target = "1000s", interval = "1000s" }',
    ):
        d, _ = ns3.replay(parse_queue(text), rate, a)
        check(
            all(x.outcome == "sent" for x in d) and [x.time_ns for x in d] == fifo,
            f"{text}: under capacity, all {len(d)} packets sent at the FIFO's instants",
        )

    # 2. Serialization: back-to-back dequeues one transmission time apart (ceil ns).
    rate = 7_000_000  # 1500 B -> 1714285.71 ns -> 1714286
    burst = _arrivals([(0, 1500, 0, 0)] * 50)
    d, _ = ns3.replay(parse_queue('{ kind = "codel", limit = 100 }'), rate, burst)
    check(
        [x.time_ns for x in d] == [i * 1714286 for i in range(50)],
        "dequeues of a burst are spaced by ceil(1500 × 8e9 / 7e6) = 1714286 ns",
    )

    # 3. Ties: a dequeue due at the instant of an arrival happens first (the arrival then waits
    # behind nothing: it is dequeued at once when the queue was empty).
    rate = 8_000_000  # 1000 B = 1 ms
    tie = _arrivals([(0, 1000, 0, 0), (500_000, 1000, 0, 0), (1_000_000, 1000, 0, 0)])
    d, _ = ns3.replay(parse_queue('{ kind = "codel", limit = 1 }'), rate, tie)
    check(
        [(x.outcome, x.time_ns) for x in d]
        == [("sent", 0), ("sent", 1_000_000), ("sent", 2_000_000)],
        "limit 1: the dequeue at 1 ms makes room for the arrival of the same nanosecond",
    )
    d, _ = ns3.replay(
        parse_queue('{ kind = "codel", limit = 1 }'),
        rate,
        _arrivals([(0, 1000, 0, 0), (1, 1000, 0, 0), (2, 1000, 0, 0)]),
    )
    check(
        [x.outcome for x in d] == ["sent", "sent", "dropped-enqueue"],
        "limit 1: the third of three arrivals within 1 ms is refused",
    )

    # 4. CoDel on a standing queue: twice the rate; nothing dropped in the first interval after
    # the sojourn passes the target, then drops at the control law's growing rate.
    rate = 8_000_000
    over = _arrivals([(i * 500_000, 1000, 0, 0) for i in range(4000)])
    d, _ = ns3.replay(parse_queue('{ kind = "codel" }'), rate, over)
    drops = [x.time_ns for x in d if x.outcome == "dropped-dequeue"]
    # The sojourn exceeds 5 ms from about 10 ms (arrival at t waits t); the first drop is due
    # one interval after the first dequeue above target, at about 5 + 5 + 100 ms.
    check(
        bool(drops) and 100e6 <= drops[0] <= 125e6,
        f"CoDel: first drop at {drops[0] / 1e6 if drops else float('nan'):.3f} ms "
        "(one interval after the sojourn passed 5 ms)",
    )
    gaps = [b - a_ for a_, b in itertools.pairwise(drops[:8])]
    # interval × rec_inv_sqrt, the reciprocal square root refined by one Newton step per drop
    # (codel_Newton_step): 100, 50, 56.25, 48.8, ... ms; the drops fall on 1 ms dequeues.
    rec, expected = 0xFFFF, []
    for count in range(1, 8):
        if count > 1:
            inv = rec << 16
            val = ((3 << 32) - count * ((inv * inv) >> 32)) >> 2
            rec = ((val * inv) >> 31) >> 16
        expected.append((((100_000_000 >> 10) * (rec << 16)) >> 32) << 10)
    check(
        all(abs(g - e) <= 1_100_000 for g, e in zip(gaps, expected, strict=False)),
        f"CoDel: gaps between drops {[round(g / 1e6, 2) for g in gaps]} ms follow the control "
        f"law with Newton steps {[round(e / 1e6, 2) for e in expected]} ms",
    )
    d2, _ = ns3.replay(
        parse_queue('{ kind = "codel", ecn = true }'),
        rate,
        _arrivals(
            [(t, b, f, 2) for t, b, f in zip(over.time_ns, over.bytes, over.flow, strict=True)]
        ),
    )
    check(
        sum(x.outcome == "sent-marked" for x in d2) > 0
        and all(x.outcome != "dropped-dequeue" for x in d2),
        f"CoDel ECN: ECT(0) packets are marked, not dropped "
        f"({sum(x.outcome == 'sent-marked' for x in d2)} marks)",
    )

    # 5. FQ-CoDel classifies by flow number modulo flows: flows 1 and 1 + flows share a queue
    # (FIFO between them), flow 2 has its own and is served in turn.
    rate = 8_000_000
    rows = [(0, 1000, 1, 0), (0, 1000, 5, 0), (0, 1000, 1, 0), (0, 1000, 2, 0), (0, 1000, 2, 0)]
    d, info = ns3.replay(
        parse_queue('{ kind = "fq_codel", flows = 4, quantum = 1000 }'), rate, _arrivals(rows)
    )
    order = [i for i, _ in sorted(enumerate(d), key=lambda p: p[1].time_ns)]
    check(
        order == [0, 3, 1, 4, 2] and info["fq_buckets"] == 2,
        f"FQ-CoDel: flows 1 and 5 share bucket 1 of 4, flow 2 alternates with it: order {order}",
    )

    # 6. FQ-CoDel's overflow: over the limit, the fattest flow loses half its backlog from the
    # head (at most drop_batch packets), at the arrival's instant.
    rows = [(0, 1000, 0, 0)] * 21 + [(0, 1000, 1, 0)] * 3
    d, _ = ns3.replay(
        parse_queue('{ kind = "fq_codel", limit = 20, drop_batch = 64 }'), rate, _arrivals(rows)
    )
    dropped = [i for i, x in enumerate(d) if x.outcome == "dropped-dequeue"]
    check(
        dropped == list(range(1, 11)) and all(d[i].time_ns == 0 for i in dropped),
        f"FQ-CoDel overflow: flow 0 (20 queued) loses its 10 oldest waiting packets: {dropped}",
    )
    d, _ = ns3.replay(
        parse_queue('{ kind = "fq_codel", limit = 5 }'), rate, _arrivals([(0, 1000, 0, 0)] * 8)
    )
    check(
        [x.outcome for x in d]
        == [
            "sent",
            "dropped-dequeue",
            "dropped-dequeue",
            "dropped-dequeue",
            "sent",
            "sent",
            "sent",
            "sent",
        ],
        "FQ-CoDel, one flow at its limit: head drops from the flow, not a refusal "
        f"({[x.outcome[:4] for x in d]})",
    )

    # 7. PIE: a queue standing above target builds a drop probability; determinism by seed.
    rate = 20_000_000
    arrivals_list, _ = aqm_patterns.generate("overload", 1)
    a = _arrivals([(x.time_ns, x.bytes, x.flow, x.ecn) for x in arrivals_list])
    d1, _ = ns3.replay(parse_queue('{ kind = "pie" }'), rate, a, seed=1)
    d2, _ = ns3.replay(parse_queue('{ kind = "pie" }'), rate, a, seed=1)
    early = sum(x.outcome == "dropped-enqueue" for x in d1)
    check(d1 == d2 and early > 50, f"PIE: {early} early drops, same decisions twice with seed 1")
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


# --------------------------------------------------------------------------------------------


def cmd_ns3(args: argparse.Namespace) -> None:
    queue = parse_queue(args.queue)
    arrivals = read_arrivals(Path(args.input))
    if args.rate <= 0:
        raise SystemExit("--rate must be positive (bits/s)")
    ns3_config(queue, max(arrivals.bytes, default=IPV4_HEADER))  # refuse before the import
    ns3 = Ns3()
    decisions, info = ns3.replay(queue, args.rate, arrivals, args.seed)
    write_decisions(Path(args.out), decisions)
    counts = {o: sum(d.outcome == o for d in decisions) for o in OUTCOMES}
    print(
        json.dumps({"packets": len(arrivals), **counts, "wall_s": round(info["wall_s"], 3)}),
        file=sys.stderr,
    )


def cmd_generate(args: argparse.Namespace) -> None:
    arrivals, rate = aqm_patterns.generate(args.pattern, args.seed, args.rate)
    aqm_patterns.write_arrivals(Path(args.out), arrivals)
    print(f"{len(arrivals)} arrivals for a link of {rate} bit/s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ns3", help="replay an arrivals CSV into ns-3's queue disc")
    p.add_argument("--queue", required=True, help="the queue as a TOML inline table")
    p.add_argument("--rate", required=True, type=int, help="transmitter rate, bits/s")
    p.add_argument("--in", dest="input", required=True, help="arrivals CSV")
    p.add_argument("--out", required=True, help="decisions CSV")
    p.add_argument("--seed", type=int, default=1, help="ns-3 run number (PIE's draws)")
    p.set_defaults(func=cmd_ns3)
    p = sub.add_parser("generate", help="write a seeded arrival pattern")
    p.add_argument("--pattern", required=True, choices=sorted(aqm_patterns.PATTERNS))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rate", type=int, help="the link rate the pattern is scaled to (bits/s)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_generate)
    p = sub.add_parser("compare", help="replay the plan in ns-3 and startlab, print a table")
    p.add_argument("--startlab", required=True, help="path to startlab-bench")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--only", help="comma-separated config prefixes or pattern names")
    p.add_argument("--workdir", help="keep arrivals and decisions here (default: a temp dir)")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("selftest", help="sanity checks of the ns-3 side alone")
    p.set_defaults(func=cmd_selftest)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
