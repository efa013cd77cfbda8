"""Throughput of the sweep machinery: the same runs simulated in one process without it, on 1
and 2 local worker processes, and on a local Dask cluster of 2 worker processes.

    .venv/bin/python bench/sweep_bench.py [--runs N] [--duration T] [--repeat R] [--skip-dask]

Every configuration starts from an empty run cache, so each simulates every run, and is timed
from the call to the last run written (worker start-up included; the Dask cluster is started
once, before, and timed apart). The configurations take turns, ``--repeat`` rounds, and each
keeps its best time, which is the least disturbed by other work on the machine. Prints the
times, runs per second, CPU time per run (this process, its workers; with Dask, the client,
scheduler and workers) and the ratios, measured in the same command: the speed-up of 2
workers over 1, the CPU the machinery costs per run, and the Dask path against the local pool.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from startlab.sweep import SweepPlan, execute, run_point


def plan(runs: int, duration: str) -> SweepPlan:
    """``runs`` short scenarios: one bulk NewReno flow over 100 to 800 Mbit/s, 0.01 % random
    loss, one seed per run."""
    rates = ["100Mbps", "200Mbps", "400Mbps", "800Mbps"]
    seeds = -(-runs // len(rates))
    document = {
        "name": "sweep-bench",
        "base": {
            "duration": duration,
            "topology": {
                "kind": "dumbbell",
                "bottleneck": {
                    "rate": "100Mbps",
                    "delay": "10ms",
                    "queue": {"kind": "droptail", "limit": "1BDP"},
                    "loss": 1e-4,
                },
                "access": {"rate": "10Gbps", "delay": "1ms"},
            },
            "tcp": {"initial_window": 10},
            "flows": [{"cc": "newreno"}],
        },
        "axes": {"bandwidth": rates, "seed": {"count": seeds}},
    }
    return SweepPlan.from_dict(document)


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system) of this process, its reaped children, and the live processes
    ``pids`` (Linux: from /proc; elsewhere they are not counted)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def measure(run: Callable[[], object], pids: list[int]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of ``run()``."""
    cpu, started = cpu_seconds(pids), time.perf_counter()
    run()
    return time.perf_counter() - started, cpu_seconds(pids) - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--duration", default="20s", help="simulated time of each run")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; the best time is kept")
    parser.add_argument("--skip-dask", action="store_true")
    args = parser.parse_args()

    sweep = plan(args.runs, args.duration)
    points = sweep.points()[: args.runs]
    metrics = [m.to_json() for m in sweep.metrics]
    count = len(points)
    print(
        f"{count} runs of {args.duration} simulated, best of {args.repeat} rounds; Python "
        f"{platform.python_version()}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.2f} before",
        flush=True,
    )

    def inline() -> None:
        for point in points:
            run_point(point.key, point.scenario, metrics)

    stats = [run_point(p.key, p.scenario, metrics)["stats"] for p in points[:: max(1, count // 20)]]
    simulation = statistics.median(s["wall_time_s"] for s in stats)
    task = statistics.median(s["task_time_s"] for s in stats)
    labels = {
        "serial": "one process, no machinery",
        "local1": "local pool, 1 worker",
        "local2": "local pool, 2 workers",
        "dask": "Dask cluster, 2 workers",
    }
    best: dict[str, float] = {}
    cpu: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sweep-bench-")))
        client = None
        dask_pids: list[int] = []
        if not args.skip_dask:
            from distributed import Client, LocalCluster

            started = time.perf_counter()
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=2,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=40,
                )
            )
            client = stack.enter_context(Client(cluster))
            client.run(lambda: __import__("startlab.sweep"))  # import on the workers
            dask_pids = list(client.run(os.getpid).values())
            print(f"  (Dask cluster start-up: {time.perf_counter() - started:.2f} s)", flush=True)
        runs: dict[str, tuple[Callable[[], object], list[int]]] = {"serial": (inline, [])}
        for jobs in (1, 2):
            runs[f"local{jobs}"] = (
                lambda jobs=jobs: execute(
                    points, fresh(scratch), metrics=sweep.metrics, jobs=jobs, progress=False
                ),
                [],
            )
        if client is not None:
            runs["dask"] = (
                lambda: execute(
                    points, fresh(scratch), metrics=sweep.metrics, cluster=client, progress=False
                ),
                dask_pids,
            )
        for round_ in range(args.repeat):
            for name, (run, pids) in runs.items():
                elapsed, used = measure(run, pids)
                if elapsed < best.get(name, float("inf")):
                    best[name], cpu[name] = elapsed, used
                print(
                    f"  round {round_ + 1}: {labels[name]:<27} {elapsed:7.2f} s "
                    f"{count / elapsed:7.1f} runs/s  {used / count * 1e3:6.1f} ms CPU/run",
                    flush=True,
                )
    print("\nbest times:")
    for name, elapsed in best.items():
        print(
            f"  {labels[name]:<36} {elapsed:7.2f} s {count / elapsed:7.1f} runs/s "
            f"{cpu[name] / count * 1e3:6.1f} ms CPU/run"
        )
    print(
        f"\nper run (median, one process): {simulation * 1e3:.1f} ms simulating, "
        f"{task * 1e3:.1f} ms with the results and metrics"
    )
    print(f"speed-up, 2 local workers over 1:              {best['local1'] / best['local2']:.2f}x")
    print(f"speed-up, 2 local workers over one process:    {best['serial'] / best['local2']:.2f}x")
    print(f"1 local worker against one process:           {best['local1'] / best['serial']:.2f}x")
    for name in ("local1", "local2", "dask"):
        if name in cpu:
            extra = (cpu[name] - cpu["serial"]) / count
            print(f"CPU per run over one process, {labels[name]:<24} {extra * 1e3:+6.1f} ms")
    if "dask" in best:
        ratio = best["dask"] / best["local2"]
        print(f"Dask (2 workers) against the local pool (2):   {ratio:.2f}x wall-clock")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


_fresh_count = 0


def fresh(scratch: Path) -> Path:
    """A new, empty run cache."""
    global _fresh_count
    _fresh_count += 1
    return scratch / f"cache{_fresh_count}"


if __name__ == "__main__":
    sys.exit(main())
