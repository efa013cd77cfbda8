"""Writes dynamic-load.toml and dynamic-load-short.toml, the scenarios of Wang et al. 2004 §V.F
(Fig. 14-15): 100 connections whose start times are uniformly distributed over 20 minutes, each
living 30 s. Run it from this folder: ``python dynamic_load.py``."""

from __future__ import annotations

import random
from pathlib import Path

LIFETIME = 30.0
RUN = 1200.0
SHORT_RUN = 300.0

HEAD = """# Wang et al. 2004 §V.F (Fig. 14-15): Astart under dynamic load. {what}
# Each connection lives 30 s (the application closes it: `stop`). The start times are draws, sorted,
# from a uniform distribution on [0 s, 1170 s] (random.Random(2004).uniform, rounded to the ms, so
# that every connection lives its 30 s inside the 20 minutes); written by dynamic_load.py.
# Bottleneck of 100 Mbps with a one-way propagation delay of 34 ms (RTT 70 ms), buffer of one BDP,
# 1000-byte packets, initial ssthresh 32, an ACK for every packet, FTP; the experiments vary the
# bandwidth, the RTT and the algorithm.
name = "{name}"
duration = "{duration:g}s"

[topology]
kind = "dumbbell"
bottleneck = {{ rate = "100Mbps", delay = "34ms", queue = {{ kind = "droptail", limit = "1BDP" }} }}
access = {{ rate = "10Gbps", delay = "0.5ms" }}

[tcp]
mss = "960B"             # + 40 B of TCP/IP headers: the paper's 1000-byte packets
initial_ssthresh = 32

[measure]
flow_series = false
queue_series = false
"""


def write(path: str, name: str, what: str, duration: float, starts: list[float]) -> None:
    flows = "".join(
        f'\n[[flows]]\ncc = "newreno"\nstart = "{s:g}s"\nstop = "{s + LIFETIME:g}s"\n'
        for s in starts
    )
    Path(path).write_text(
        HEAD.format(name=name, what=what, duration=duration) + flows, encoding="utf-8"
    )


def main() -> None:
    rng = random.Random(2004)
    starts = sorted(round(rng.uniform(0.0, RUN - LIFETIME), 3) for _ in range(100))
    write(
        "dynamic-load.toml",
        "wang2004-dynamic-load",
        "In 20 minutes of simulated time\n"
        "# 100 connections start at times uniformly distributed over the run.",
        RUN,
        starts,
    )
    short = [s for s in starts if s + LIFETIME <= SHORT_RUN]
    write(
        "dynamic-load-short.toml",
        "wang2004-dynamic-load-short",
        "The shortened version (--quick):\n"
        f"# the first 5 minutes of dynamic-load.toml, the {len(short)} "
        "connections that start and end in them.",
        SHORT_RUN,
        short,
    )


if __name__ == "__main__":
    main()
