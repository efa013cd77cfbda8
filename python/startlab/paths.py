"""Bundled paths: the traces the named paths of ``examples/paths/`` use, generated here from
documented, seeded processes (no third-party data), in Mahimahi's format.

A Mahimahi trace has one line per delivery opportunity of 1504 bytes, the millisecond it
comes at; it repeats with its last timestamp as period. :func:`opportunities` turns any rate
function into such a trace by carrying a byte credit from millisecond to millisecond, so the
trace's mean rate over any whole number of milliseconds is the rate function's to within one
opportunity. ``startlab paths --write DIR`` writes every bundled trace; docs/variable-links.md
describes each path.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OPPORTUNITY_BYTES", "TRACES", "BundledTrace", "opportunities", "write", "write_all"]

OPPORTUNITY_BYTES = 1504
"""Bytes of one delivery opportunity (Mahimahi's ``LinkQueue::PACKET_SIZE``)."""


def opportunities(rate_bps: Callable[[int], float], duration_ms: int) -> Iterator[int]:
    """The opportunities (milliseconds) of a link whose rate during millisecond ``k`` (from
    ``k`` to ``k + 1``) is ``rate_bps(k)``, for ``duration_ms`` milliseconds. An opportunity is
    stamped with the end of the millisecond that completed it; the last line is always
    ``duration_ms`` (the trace's period), adding one opportunity if the credit left needs it."""
    credit = 0.0
    last = 0
    for k in range(duration_ms):
        credit += rate_bps(k) * 1e-3 / (8 * OPPORTUNITY_BYTES)
        while credit >= 1.0:
            credit -= 1.0
            last = k + 1
            yield last
    if last != duration_ms:
        yield duration_ms


def _steps(levels_mbps: list[tuple[int, float]]) -> Callable[[int], float]:
    """A rate of steps: (from millisecond, Mbit/s), the first from 0."""

    def rate(k: int) -> float:
        current = levels_mbps[0][1]
        for start, mbps in levels_mbps:
            if k >= start:
                current = mbps
        return current * 1e6

    return rate


def _cellular(seed: int) -> Callable[[int], float]:
    """A cellular-like rate: every 20 ms the log of the rate moves as an AR(1) process
    (mean 25 Mbit/s, reversion 0.05, noise 0.15), kept within 1–120 Mbit/s; outages of 100 to
    300 ms start at a rate of 0.1 per second."""
    rng = random.Random(seed)
    mean = math.log(25e6)
    level = mean
    per_slot: list[float] = []
    outage_left = 0

    def slot(n: int) -> float:
        nonlocal level, outage_left
        while len(per_slot) <= n:
            level += 0.05 * (mean - level) + 0.15 * rng.gauss(0.0, 1.0)
            level = min(max(level, math.log(1e6)), math.log(120e6))
            if outage_left == 0 and rng.random() < 0.1 * 0.020:
                outage_left = rng.randint(5, 15)  # 5–15 slots of 20 ms
            if outage_left > 0:
                outage_left -= 1
                per_slot.append(0.0)
            else:
                per_slot.append(math.exp(level))
        return per_slot[n]

    return lambda k: slot(k // 20)


@dataclass(frozen=True)
class BundledTrace:
    """A trace the bundled paths use: its file name, what it models, its rate and length."""

    name: str
    description: str
    rate_bps: Callable[[int], float]
    duration_ms: int


TRACES = (
    BundledTrace(
        "steps-300mbps.trace",
        "300, 100 and 200 Mbit/s for one second each, repeating every 3 s",
        _steps([(0, 300.0), (1000, 100.0), (2000, 200.0)]),
        3000,
    ),
    BundledTrace(
        "cellular.trace",
        "a cellular-like rate (log-AR(1) every 20 ms, 1-120 Mbit/s around 25, outages), "
        "30 s, seed 1",
        _cellular(1),
        30_000,
    ),
)


def write(trace: BundledTrace, path: str | os.PathLike[str]) -> Path:
    """Write one trace in Mahimahi's format."""
    path = Path(path)
    with path.open("w", encoding="ascii") as f:
        for ms in opportunities(trace.rate_bps, trace.duration_ms):
            f.write(f"{ms}\n")
    return path


def write_all(directory: str | os.PathLike[str]) -> list[Path]:
    """Write every bundled trace into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return [write(t, directory / t.name) for t in TRACES]
