"""How startlab's cost and memory grow: the scaling figures of docs/performance.md.

    python3 bench/ns3/scaling.py --startlab PATH/startlab-bench [--reps 3] [--only speed|memory|aqm]

Generates dumbbell scenarios, runs each in its own process (`startlab-bench --file`) and prints:

* speed: the CPU cost of one simulated second as the bottleneck rate grows 10x (10 -> 100 -> 1000
  Mbps, one flow), as the number of flows grows 10x (1 -> 10 -> 100 flows at 1 Gbps), and for
  100 flows at 1 Gbps behind each queue discipline (drop-tail, CoDel, FQ-CoDel, PIE), with
  the cost per packet; every figure is also given as a ratio to the first run of its series,
  measured in the same command (round robin, best of --reps by the CPU time of the simulation
  loop, which waiting for a busy CPU does not inflate), since the machine is shared and noisy;
* memory: peak RSS against the packets in flight (one flow whose window is capped by the
  receiver's window, no loss), against the number of flows (all on one pair of hosts, one
  segment each) and against the number of host pairs of the dumbbell, each with a least-squares
  line: the slope is the memory per packet, per flow, per pair.

Only the engine is measured: no time series are recorded (`[measure] flow_series = false`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

MSS, HEADER = 1460, 40
ACCESS_40G = '{ rate = "40Gbps", delay = "1ms", queue = { kind = "droptail", limit = "2BDP" } }'
WIRE = MSS + HEADER


def dumbbell(
    *,
    name: str,
    duration: str,
    rate: str,
    delay: str,
    pairs: int = 1,
    flows: list[str],
    queue: str = '"1BDP"',
    access: str = '{ rate = "10Gbps", delay = "1ms" }',
    tcp: str = "sack = true",
    discipline: str | None = None,
) -> str:
    discipline = discipline or f'{{ kind = "droptail", limit = {queue} }}'
    head = f'''name = "{name}"
duration = "{duration}"
[topology]
kind = "dumbbell"
pairs = {pairs}
bottleneck = {{ rate = "{rate}", delay = "{delay}", queue = {discipline} }}
access = {access}
[tcp]
mss = "{MSS}B"
header = "{HEADER}B"
{tcp}
[measure]
flow_series = false
queue_series = false
'''
    return head + "".join(f"\n[[flows]]\n{f}\n" for f in flows)


def run_once(binary: Path, path: str) -> dict:
    """One run in a child process. `cpu_s` is the simulation loop's own CPU time as the child
    reports it; `process_cpu_s` the whole child's (parsing and building included, from wait4)."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen([str(binary), "--file", path], stdout=out, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"startlab-bench --file {path} failed")
        out.seek(0)
        result = json.loads(out.read().strip().splitlines()[-1])
    result["process_cpu_s"] = usage.ru_utime + usage.ru_stime
    return result


def run_all(binary: Path, texts: list[str], reps: int) -> list[dict]:
    """Runs every scenario `reps` times, round robin (so that a change of load hits all of them
    alike), and keeps each one's fastest run by CPU time (results are identical across runs)."""
    paths = []
    for text in texts:
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write(text)
            paths.append(f.name)
    try:
        runs: list[list[dict]] = [[] for _ in texts]
        for _ in range(reps):
            for i, path in enumerate(paths):
                runs[i].append(run_once(binary, path))
    finally:
        for path in paths:
            Path(path).unlink()
    best = []
    for rs in runs:
        b = dict(min(rs, key=lambda r: r["cpu_s"]))
        b["wall_s"] = min(r["wall_s"] for r in rs)
        b["wall_median_s"] = statistics.median(r["wall_s"] for r in rs)
        best.append(b)
    return best


def run(binary: Path, text: str, reps: int) -> dict:
    return run_all(binary, [text], reps)[0]


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line y = a + b x; returns (a, b)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - b * mx, b


# The AQM series: 100 NewReno flows at 1 Gbps behind each discipline (Linux's defaults).
DISCIPLINES = {
    "droptail": '{ kind = "droptail", limit = "1BDP" }',
    "codel": '{ kind = "codel" }',
    "fq_codel": '{ kind = "fq_codel" }',
    "pie": '{ kind = "pie" }',
}


def aqm_series() -> dict:
    return {
        "queue discipline (100 flows, 1 Gbps, 100 ms, 30 s)": [
            (
                label,
                dumbbell(
                    name=f"aqm-{label}",
                    duration="30s",
                    rate="1Gbps",
                    delay="48ms",
                    pairs=100,
                    discipline=discipline,
                    flows=[f'cc = "newreno"\npair = {i}' for i in range(100)],
                ),
            )
            for label, discipline in DISCIPLINES.items()
        ]
    }


def speed(binary: Path, reps: int, only_aqm: bool = False) -> dict:
    if only_aqm:
        return run_series(binary, reps, aqm_series())
    series = {
        "bandwidth (1 flow, 100 ms, buffer BDP, 60 s)": [
            (
                f"{r} Mbps",
                dumbbell(
                    name=f"rate-{r}",
                    duration="60s",
                    rate=f"{r}Mbps",
                    delay="48ms",
                    flows=['cc = "newreno"\npair = 0'],
                ),
            )
            for r in (10, 100, 1000)
        ],
        "flows (1 Gbps, 100 ms, buffer BDP, 30 s)": [
            (
                f"{n} flow{'s' if n > 1 else ''}",
                dumbbell(
                    name=f"flows-{n}",
                    duration="30s",
                    rate="1Gbps",
                    delay="48ms",
                    pairs=n,
                    flows=[f'cc = "newreno"\npair = {i}' for i in range(n)],
                ),
            )
            for n in (1, 10, 100)
        ],
        **aqm_series(),
    }
    return run_series(binary, reps, series)


def run_series(binary: Path, reps: int, series: dict) -> dict:
    results: dict = {}
    for title, runs in series.items():
        print(f"\nspeed: {title}  (best of {reps}, round robin; x = ratio to the first row)")
        print(
            f"  {'':<10} {'sim s':>6} {'packets':>11} {'wall s':>8} {'cpu s':>7}"
            f" {'cpu ms/sim s':>13} {'x':>6} "
            f"{'ns/packet':>10} {'x':>5} {'events/cpu-s':>12} {'util':>6}"
        )
        measured = run_all(binary, [text for _, text in runs], reps)
        rows = []
        first = None
        for (label, text), r in zip(runs, measured, strict=True):
            sim_s = float(text.split('duration = "')[1].split("s")[0])
            per_sim_s = r["cpu_s"] / sim_s * 1e3
            per_packet = r["cpu_s"] / r["packets"] * 1e9
            first = first or (per_sim_s, per_packet)
            print(
                f"  {label:<10} {sim_s:>6.0f} {r['packets']:>11,} {r['wall_s']:>8.3f}"
                f" {r['cpu_s']:>7.3f} {per_sim_s:>13.2f} {per_sim_s / first[0]:>6.1f}"
                f" {per_packet:>10.1f} {per_packet / first[1]:>5.2f} "
                f"{r['events'] / r['cpu_s'] / 1e6:>10.2f} M {r['utilization']:>6.3f}",
                flush=True,
            )
            rows.append({"label": label, **r, "sim_s": sim_s})
        results[title] = rows
    return results


def memory(binary: Path, reps: int) -> dict:
    results: dict = {}
    # 1. Packets in flight: one flow, window capped by the receiver at W segments, a path long and
    # fast enough (10 Gbps x 400 ms = 333,333 packets) and a queue large enough that nothing is
    # lost; the run lasts until the window is full for a few RTTs.
    windows = [1000, 4000, 16000, 64000, 256000]
    rows = []
    for w in windows:
        text = dumbbell(
            name=f"window-{w}",
            duration="10s",
            rate="10Gbps",
            delay="198ms",
            queue='"2BDP"',
            access=ACCESS_40G,
            tcp=f'receive_window = "{w * MSS}B"',
            flows=['cc = "newreno"\npair = 0'],
        )
        r = run(binary, text, 1)
        rows.append({"x": w, **r})
    results["per packet in flight"] = rows
    # 2. Flows: N flows between one pair of hosts, one segment in flight each.
    rows = []
    for n in (1000, 4000, 16000, 64000):
        text = dumbbell(
            name=f"many-flows-{n}",
            duration="1s",
            rate="10Gbps",
            delay="48ms",
            queue='"2BDP"',
            tcp=f'receive_window = "{MSS}B"',
            flows=[f'cc = "newreno"\npair = 0\ncount = {n}'],
        )
        r = run(binary, text, 1)
        rows.append({"x": n, **r})
    results["per flow (1 segment in flight each)"] = rows
    # 3. Host pairs of the dumbbell (one flow each, one segment in flight).
    rows = []
    for n in (250, 500, 1000, 2000):
        text = dumbbell(
            name=f"pairs-{n}",
            duration="1s",
            rate="10Gbps",
            delay="48ms",
            queue='"2BDP"',
            pairs=n,
            tcp=f'receive_window = "{MSS}B"',
            flows=[f'cc = "newreno"\npair = {i}' for i in range(n)],
        )
        r = run(binary, text, 1)
        rows.append({"x": n, **r})
    results["per dumbbell pair"] = rows

    for title, rows in results.items():
        xs = [float(r["x"]) for r in rows]
        ys = [r["peak_kib"] * 1024.0 for r in rows]
        a, b = fit(xs, ys)
        print(f"\nmemory {title}: peak RSS = {a / 2**20:.1f} MiB + {b:.0f} B x n")
        for r, y in zip(rows, ys, strict=True):
            line = a + b * r["x"]
            print(
                f"  n = {r['x']:>7,}  peak {y / 2**20:8.1f} MiB   line {line / 2**20:8.1f} MiB   "
                f"({y / r['x']:.0f} B per unit)  wall {r['wall_s']:.2f} s"
            )
    # The dumbbell's next-hop table is dense (nodes x nodes), so memory per pair is not constant:
    # fit a + c n^2 as well.
    rows = results["per dumbbell pair"]
    xs = [float(r["x"]) ** 2 for r in rows]
    a, c = fit(xs, [r["peak_kib"] * 1024.0 for r in rows])
    print(f"  quadratic fit: peak RSS = {a / 2**20:.1f} MiB + {c:.1f} B x pairs^2")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--startlab", required=True, type=Path, help="the startlab-bench binary")
    parser.add_argument(
        "--reps", type=int, default=3, help="repetitions of each speed run (default 3)"
    )
    parser.add_argument(
        "--only",
        choices=("speed", "memory", "aqm"),
        help="one half only, or the speed of the queue disciplines alone",
    )
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    print(
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        f" ({os.cpu_count()} CPUs)"
    )
    out = {}
    if args.only in (None, "speed", "aqm"):
        out["speed"] = speed(args.startlab, args.reps, only_aqm=args.only == "aqm")
    if args.only in (None, "memory"):
        out["memory"] = memory(args.startlab, args.reps)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
