"""Seeded arrival sequences for the packet-by-packet AQM replay (bench/ns3/aqm_replay.py).

Each pattern is a function of a `random.Random` and the link rate R it is meant for; it returns
the arrivals, which `write_arrivals` numbers in time order and writes as the replay's CSV:

    id,time_ns,bytes,flow,ecn

with integer nanoseconds (non-decreasing), the size the queue and the transmitter count, a small
flow number and the IP ECN codepoint (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE). Arrivals at the same
nanosecond are allowed; they are numbered by flow number, then in the order they were drawn.

| pattern     | R          | what it offers                                                 |
| ----------- | ---------- | -------------------------------------------------------------- |
| `overload`  | 20 Mbit/s  | one Poisson flow, 1.5 R for 2 s then 0.5 R for 1 s, 1500 B     |
| `onoff`     | 10 Mbit/s  | 100 × 1500 B at 10 R every 200 ms, over small Not-ECT packets  |
| `multiflow` | 50 Mbit/s  | 4 to 8 Poisson flows, sizes 64..1500 B, 1.3 R in all           |
| `incast`    | 100 Mbit/s | a 0.6 R flow; every 250 ms 40 flows send 25 packets at once    |
| `tcp-like`  | 20 Mbit/s  | slow start's ACK clock (40 ms RTT) to a window of 256, halved  |

Every pattern mixes a few codepoints on purpose (Not-ECT packets among ECT ones, a few arriving
already CE), so that a discipline's ECN handling is exercised on every path.
"""

from __future__ import annotations

import csv
import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3


@dataclass(frozen=True, order=True)
class Arrival:
    time_ns: int
    flow: int
    seq: int  # order of generation, to number ties deterministically
    bytes: int
    ecn: int


@dataclass(frozen=True)
class Pattern:
    rate_bps: int
    description: str
    make: Callable[[random.Random, int], list[Arrival]]


def _ser_ns(size: int, rate_bps: int) -> int:
    return math.ceil(size * 8 * 1_000_000_000 / rate_bps)


class _Builder:
    """Collects arrivals, numbering them in the order they are drawn."""

    def __init__(self) -> None:
        self.out: list[Arrival] = []

    def add(self, t_ns: float, size: int, flow: int, ecn: int) -> None:
        self.out.append(Arrival(max(0, round(t_ns)), flow, len(self.out), size, ecn))


def _mixed_ecn(rng: random.Random, ect_share: float = 0.9, ce_share: float = 0.02) -> int:
    u = rng.random()
    if u < ce_share:
        return CE
    if u < ce_share + ect_share:
        return ECT0
    return NOT_ECT


def _poisson(
    b: _Builder,
    rng: random.Random,
    start_s: float,
    end_s: float,
    rate_bps: float,
    size: Callable[[], int],
    flow: int,
    ecn: Callable[[], int],
    mean_size: float,
) -> None:
    pps = rate_bps / (8 * mean_size)
    t = start_s + rng.expovariate(pps)
    while t < end_s:
        b.add(t * 1e9, size(), flow, ecn())
        t += rng.expovariate(pps)


def overload(rng: random.Random, rate: int) -> list[Arrival]:
    b = _Builder()
    ecn = lambda: _mixed_ecn(rng)  # noqa: E731
    _poisson(b, rng, 0.0, 2.0, 1.5 * rate, lambda: 1500, 0, ecn, 1500)
    _poisson(b, rng, 2.0, 3.0, 0.5 * rate, lambda: 1500, 0, ecn, 1500)
    return b.out


def onoff(rng: random.Random, rate: int) -> list[Arrival]:
    b = _Builder()
    spacing = _ser_ns(1500, 10 * rate)
    for k in range(15):
        t0 = k * 200e6 + rng.uniform(0, 2e6)
        for j in range(100):
            b.add(t0 + j * spacing + rng.uniform(0, spacing / 4), 1500, 0, _mixed_ecn(rng))
    sizes = lambda: rng.randint(64, 200)  # noqa: E731
    _poisson(b, rng, 0.0, 3.0, 0.05 * rate, sizes, 1, lambda: NOT_ECT, 132)
    return b.out


def multiflow(rng: random.Random, rate: int) -> list[Arrival]:
    b = _Builder()
    n = rng.randint(4, 8)
    weights = [rng.uniform(0.2, 1.0) for _ in range(n)]
    total = sum(weights)
    for f in range(n):
        share = 1.3 * rate * weights[f] / total
        kind = f % 4
        if kind == 0:
            size, mean = (lambda: 1500), 1500.0
        elif kind == 1:
            size, mean = (lambda: 576), 576.0
        elif kind == 2:
            size, mean = (lambda: rng.randint(64, 1500)), 782.0
        else:
            size, mean = (lambda: rng.choice((64, 1500))), 782.0
        codepoint = (ECT0, NOT_ECT, ECT0, ECT1)[f % 4] if f < 4 else rng.choice((ECT0, NOT_ECT))

        def ecn(c: int = codepoint) -> int:
            return CE if c != NOT_ECT and rng.random() < 0.01 else c

        start = rng.uniform(0.0, 0.5)
        end = rng.uniform(2.5, 3.0)
        _poisson(b, rng, start, end, share, size, f, ecn, mean)
    return b.out


def incast(rng: random.Random, rate: int) -> list[Arrival]:
    b = _Builder()
    ecn0 = lambda: _mixed_ecn(rng, 0.5, 0.0)  # noqa: E731
    _poisson(b, rng, 0.0, 2.0, 0.6 * rate, lambda: 1500, 0, ecn0, 1500)
    spacing = _ser_ns(1500, 1_000_000_000)
    for k in range(8):
        # All 40 flows start their burst at the same nanosecond: ties, numbered by flow.
        t0 = int(0.1e9 + k * 0.25e9 + rng.uniform(0, 1e6))
        for f in range(1, 41):
            codepoint = ECT0 if f % 2 else NOT_ECT
            for j in range(25):
                b.add(t0 + j * spacing, 1500, f, codepoint)
    return b.out


def tcp_like(rng: random.Random, rate: int) -> list[Arrival]:
    """One sender's slow start, open loop: each ACK comes back one RTT after its segment left
    a drop-free FIFO at the link's rate, and releases two segments (slow start: cwnd + 1 per
    ACK) or one (then cwnd + 1/cwnd). At cwnd 256 the window halves: the next 128 ACKs send
    nothing, which leaves a standing queue of 128 segments less the path's 67 (BDP)."""
    b = _Builder()
    rtt = 40e6
    ser = _ser_ns(1500, rate)
    access = _ser_ns(1500, 1_000_000_000)
    acks: list[float] = []
    link_free = 0.0

    def send(t: float) -> None:
        nonlocal link_free
        b.add(t, 1500, 0, ECT0 if rng.random() > 0.02 else CE)
        link_free = max(t, link_free) + ser
        heapq.heappush(acks, link_free + rtt + rng.uniform(0, 50e3))

    for j in range(10):
        send(j * access)
    cwnd, slow_start, skip = 10.0, True, 0
    while acks:
        t = heapq.heappop(acks)
        if t > 3e9:
            break
        if slow_start:
            cwnd += 1
            send(t)
            send(t + access)
            if cwnd >= 256:
                cwnd /= 2
                slow_start, skip = False, int(cwnd)
        elif skip > 0:
            skip -= 1
        else:
            before = int(cwnd)
            cwnd += 1 / cwnd
            send(t)
            if int(cwnd) > before:
                send(t + access)
    return b.out


PATTERNS: dict[str, Pattern] = {
    "overload": Pattern(
        20_000_000, "one flow at 1.5x the rate for 2 s, then 0.5x for 1 s", overload
    ),
    "onoff": Pattern(10_000_000, "bursts of 100 packets every 200 ms over small packets", onoff),
    "multiflow": Pattern(50_000_000, "4-8 flows, sizes 64..1500, ECT(0)/ECT(1)/Not-ECT", multiflow),
    "incast": Pattern(100_000_000, "40 flows bursting at once every 250 ms, background", incast),
    "tcp-like": Pattern(
        20_000_000, "slow start (ACK-clocked, 40 ms) to 256, halved, +1 per RTT", tcp_like
    ),
}


def generate(name: str, seed: int, rate_bps: int | None = None) -> tuple[list[Arrival], int]:
    """The arrivals of pattern `name` drawn with `seed`, in time order, and the rate used."""
    if name not in PATTERNS:
        raise SystemExit(f"unknown pattern {name!r}: {', '.join(PATTERNS)}")
    pattern = PATTERNS[name]
    rate = rate_bps or pattern.rate_bps
    arrivals = pattern.make(random.Random(f"{name}:{seed}"), rate)
    arrivals.sort(key=lambda a: (a.time_ns, a.flow, a.seq))
    return arrivals, rate


def write_arrivals(path: Path, arrivals: list[Arrival]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "time_ns", "bytes", "flow", "ecn"])
        for i, a in enumerate(arrivals):
            w.writerow([i, a.time_ns, a.bytes, a.flow, a.ecn])
