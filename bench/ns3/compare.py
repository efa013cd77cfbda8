"""Run the same scenarios in startlab and in ns-3, alternating, and print them side by side.

    python bench/ns3/compare.py --startlab PATH/startlab-bench [--reps 3] [--scenarios a,b,c,d]

`make bench-ns3` builds startlab-bench, installs ns-3 into bench/ns3/.venv and runs this. Every
simulation runs in a child process of its own: startlab as `startlab-bench --one ns3-X`, ns-3 as
`ns3_scenario.py` on the very same scenario file. The two alternate (startlab, ns-3, startlab,
ns-3, ...) so that a change of machine load hits both alike, and the speed ratio is taken within
this one command. Each child reports its own peak resident memory (VmHWM in /proc/self/status).

Printed per scenario: wall and CPU time of the simulation loop (median over the repetitions,
with the range; CPU time is what a busy machine does not inflate), the ratios ns-3 / startlab,
events and packets per CPU second (packets counted once per link they cross), peak memory, and
the results that must agree: bottleneck utilization, payload bytes delivered to the receivers,
bottleneck drops, and the time and window at which flow 0 left slow start. Both simulators are
deterministic, so results are identical across repetitions (checked).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCENARIO_DIR = ROOT / "crates" / "startlab-bench" / "scenarios"

# name -> (startlab-bench name, scenario file, description)
SCENARIOS = {
    "a": (
        "ns3-a",
        "ns3-a-newreno-100mbps.toml",
        "1 NewReno flow, 100 Mbps, 100 ms RTT, buffer BDP, 60 s",
    ),
    "b": (
        "ns3-b",
        "ns3-b-10-cubic-1gbps.toml",
        "10 CUBIC flows, 1 Gbps, 100 ms RTT, buffer BDP, 60 s",
    ),
    "c": (
        "ns3-c",
        "ns3-c-100-newreno-1gbps.toml",
        "100 NewReno flows, 1 Gbps, 50 ms RTT, buffer BDP, 30 s",
    ),
    "d": (
        "ns3-d",
        "ns3-d-seed000-table1.toml",
        "Wang et al. 2004 Table 1: NewReno, 40 Mbps, 100 ms, ssthresh 32, 20 s",
    ),
    "e": (
        "ns3-e",
        "ns3-e-bbr-100mbps.toml",
        "1 BBR flow, 100 Mbps, 100 ms RTT, buffer BDP, 60 s",
    ),
}

RESULT_KEYS = (
    "utilization",
    "delivered_bytes",
    "drops",
    "ss_exit_s",
    "ss_exit_cwnd",
    "ss_exit_reason",
)


@dataclass
class Runs:
    """Repetitions of one simulator on one scenario."""

    results: list[dict] = field(default_factory=list)

    def median(self, key: str) -> float:
        return statistics.median(r[key] for r in self.results)

    def spread(self, key: str) -> tuple[float, float]:
        values = [r[key] for r in self.results]
        return min(values), max(values)

    def peak_mib(self) -> float:
        return max(r["peak_kib"] for r in self.results) / 1024

    def deterministic(self) -> bool:
        first = {k: self.results[0][k] for k in RESULT_KEYS}
        return all({k: r[k] for k in RESULT_KEYS} == first for r in self.results)


def run_child(argv: list[str]) -> dict:
    """Runs one simulation; returns its JSON line plus the child's peak RSS and outer wall time."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        # wait4 reaps this child alone. Its ru_maxrss is kept for reference only: Linux carries
        # the high-water mark of the forked copy of this (Python) process across execve, so for
        # small children it reports this process's size. The peak used is the child's own VmHWM
        # (/proc/self/status, reset by execve), which each simulator prints as peak_kib.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        outer = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        sys.stderr.write(stderr)
        raise SystemExit(f"{' '.join(argv)} failed with exit code {proc.returncode}")
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        sys.stderr.write(stdout + stderr)
        raise SystemExit(f"{' '.join(argv)} printed no result")
    result = json.loads(lines[-1])
    result["outer_wall_s"] = outer
    result["child_maxrss_kib"] = usage.ru_maxrss
    return result


def fmt_time(seconds: float) -> str:
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:.1f}"


def fmt_rate(per_s: float) -> str:
    if per_s >= 1e6:
        return f"{per_s / 1e6:.2f} M"
    return f"{per_s / 1e3:.0f} k"


def report(name: str, desc: str, sl: Runs, ns3: Runs) -> list[str]:
    out = [f"({name}) {desc}"]
    row = "  {:<26} {:>22} {:>22}"
    out.append(row.format("", "startlab", "ns-3"))

    def timing(r: Runs, key: str) -> str:
        lo, hi = r.spread(key)
        return f"{fmt_time(r.median(key))} ({fmt_time(lo)}-{fmt_time(hi)})"

    for key, label in (("wall_s", "wall s, median (range)"), ("cpu_s", "CPU s, median (range)")):
        out.append(row.format(label, timing(sl, key), timing(ns3, key)))
    for key, label in (("wall_s", "ns-3 / startlab, wall"), ("cpu_s", "ns-3 / startlab, CPU")):
        ratios = [n[key] / s[key] for s, n in zip(sl.results, ns3.results, strict=True)]
        out.append(
            f"  {label:<26} {ns3.median(key) / sl.median(key):>21.0f}x"
            f"   (per repetition {min(ratios):.0f}x-{max(ratios):.0f}x)"
        )
    # When the results disagree the two did different amounts of work: compare per packet too.
    per_packet = [
        (n["cpu_s"] / n["packets"]) / (s["cpu_s"] / s["packets"])
        for s, n in zip(sl.results, ns3.results, strict=True)
    ]
    out.append(
        f"  {'ns-3 / startlab, CPU/packet':<26} {statistics.median(per_packet):>21.0f}x"
        f"   (per repetition {min(per_packet):.0f}x-{max(per_packet):.0f}x)"
    )
    for key, label in (("events", "events per CPU s"), ("packets", "packets per CPU s")):
        out.append(
            row.format(
                label,
                fmt_rate(sl.median(key) / sl.median("cpu_s")),
                fmt_rate(ns3.median(key) / ns3.median("cpu_s")),
            )
        )
    out.append(
        row.format(
            "events, packets",
            f"{sl.median('events') / 1e6:.2f} M, {sl.median('packets') / 1e6:.2f} M",
            f"{ns3.median('events') / 1e6:.2f} M, {ns3.median('packets') / 1e6:.2f} M",
        )
    )
    base = max(r["baseline_kib"] for r in ns3.results) / 1024
    out.append(
        row.format(
            "peak memory MiB",
            f"{sl.peak_mib():.1f}",
            f"{ns3.peak_mib():.0f} ({ns3.peak_mib() - base:.1f} sim)",
        )
    )
    s, n = sl.results[0], ns3.results[0]
    out.append(
        row.format("bottleneck utilization", f"{s['utilization']:.4f}", f"{n['utilization']:.4f}")
    )
    out.append(
        row.format("delivered bytes", f"{s['delivered_bytes']:,}", f"{n['delivered_bytes']:,}")
    )
    out.append(row.format("bottleneck drops", f"{s['drops']:,}", f"{n['drops']:,}"))
    out.append(
        row.format("flow 0 slow-start exit s", f"{s['ss_exit_s']:.6f}", f"{n['ss_exit_s']:.6f}")
    )
    out.append(
        row.format(
            "  at cwnd (segments), why",
            f"{s['ss_exit_cwnd']:.1f} {s['ss_exit_reason']}",
            f"{n['ss_exit_cwnd']:.1f} {n['ss_exit_reason']}",
        )
    )
    out.append(row.format("queue limit (packets)", str(s["queue_limit"]), str(n["queue_limit"])))
    for label, r in (("startlab", sl), ("ns-3", ns3)):
        if not r.deterministic():
            out.append(f"  WARNING: {label} results differ between repetitions")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--startlab", required=True, type=Path, help="the startlab-bench binary")
    parser.add_argument(
        "--ns3-python",
        type=Path,
        default=HERE / ".venv" / "bin" / "python",
        help="a Python with the ns3 package (default: bench/ns3/.venv)",
    )
    parser.add_argument(
        "--reps", type=int, default=3, help="repetitions of each simulator (default 3)"
    )
    parser.add_argument("--scenarios", default="a,b,c,d", help="comma-separated subset of a,b,c,d")
    parser.add_argument("--json", type=Path, help="also write every run's numbers here")
    args = parser.parse_args()
    chosen = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    for name in chosen:
        if name not in SCENARIOS:
            raise SystemExit(f"unknown scenario {name!r}: choose from {', '.join(SCENARIOS)}")

    started = time.time()
    print(
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        f" ({os.cpu_count()} CPUs); {args.reps} repetition(s), alternating startlab / ns-3",
        flush=True,
    )
    everything: dict[str, dict] = {}
    lines: list[str] = []
    for name in chosen:
        bench_name, file_name, desc = SCENARIOS[name]
        scenario = SCENARIO_DIR / file_name
        sl, ns3 = Runs(), Runs()
        for rep in range(args.reps):
            sl.results.append(run_child([str(args.startlab), "--one", bench_name]))
            ns3.results.append(
                run_child([str(args.ns3_python), str(HERE / "ns3_scenario.py"), str(scenario)])
            )
            print(
                f"  ({name}) repetition {rep + 1}/{args.reps}:"
                f" startlab {sl.results[-1]['wall_s']:.3f} s,"
                f" ns-3 {ns3.results[-1]['wall_s']:.1f} s (wall); load"
                f" {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        block = report(name, desc, sl, ns3)
        print("\n".join(block) + "\n", flush=True)
        lines += [*block, ""]
        everything[name] = {"startlab": sl.results, "ns3": ns3.results}
    minutes = (time.time() - started) / 60
    tail = (
        f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())};"
        f" the comparison took {minutes:.1f} min"
    )
    print(tail)
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1) + "\n")


if __name__ == "__main__":
    main()
