"""Users' controllers in both worlds on eight paths: the slow-start exit and the window after
it, simulator against kernel. `cubic` is examples/bpf/cubic.bpf.c (tcp_cubic.c as a struct_ops
program), `paced_reno` examples/bpf/paced_reno.bpf.c (cong_control, its own pacing rate),
`dctcp` examples/bpf/dctcp.bpf.c (tcp_dctcp.c, behind queues that mark with ECN).

    .venv/bin/python bench/user_controllers.py cubic|paced_reno|dctcp [--reps 3] [--tso-defer]

`--tso-defer` runs the simulator with Linux's GSO deferral (`tcp.tso_defer`, docs/kernel.md);
the kernel does it whatever the setting.

Needs root and a quiet machine (the kernel world, docs/kernel.md). Prints a table of docs/bpf.md
("Users' controllers in both worlds"); each kernel cell is the median of the runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import tomli_w

import startlab
import startlab.kernel

ROOT = Path(__file__).resolve().parent.parent
# (rate, one-way bottleneck delay, buffer, HyStart on (cubic only), seconds)
PATHS = [
    ("100Mbps", "20ms", "1BDP", True, 5),
    ("100Mbps", "50ms", "1BDP", True, 6),
    ("50Mbps", "40ms", "0.5BDP", True, 5),
    ("200Mbps", "20ms", "2BDP", True, 5),
    ("20Mbps", "100ms", "1BDP", True, 8),
    ("100Mbps", "40ms", "0.25BDP", True, 5),
    ("100Mbps", "20ms", "1BDP", False, 5),
    ("50Mbps", "60ms", "1BDP", False, 8),
]

# DCTCP's paths: (rate, one-way bottleneck delay, a queue that marks with ECN, seconds); the
# queue's other parameters are Linux's defaults.
ECN_PATHS = [
    ("100Mbps", "20ms", {"kind": "codel", "ecn": True}, 5),
    ("100Mbps", "50ms", {"kind": "codel", "ecn": True}, 6),
    ("50Mbps", "40ms", {"kind": "fq_codel", "ecn": True}, 5),
    ("200Mbps", "20ms", {"kind": "codel", "ecn": True}, 5),
    ("20Mbps", "100ms", {"kind": "pie", "ecn": True}, 8),
    ("100Mbps", "40ms", {"kind": "pie", "ecn": True}, 5),
    ("300Mbps", "10ms", {"kind": "fq_codel", "ecn": True, "ce_threshold": "1ms"}, 5),
    ("10Mbps", "30ms", {"kind": "codel", "ecn": True}, 8),
]


def document(
    obj: Path, program: str, rate: str, delay: str, buffer: str, hystart: bool, seconds: int
) -> dict:
    params = {"hystart": int(hystart)} if program == "cubic" else {}
    queue: dict[str, Any] = {"kind": "droptail", "limit": buffer}
    return {
        "name": "user-cubic",
        "duration": f"{seconds}s",
        "topology": {
            "kind": "dumbbell",
            "bottleneck": {
                "rate": rate,
                "delay": delay,
                "queue": queue,
            },
            "access": {"rate": "1Gbps", "delay": "0.1ms"},
        },
        "tcp": {"stack": "linux"},
        "flows": [{"cc": {"bpf": str(obj)}, "cc_params": params}],
    }


def measure(result: startlab.Result) -> tuple[float, float, str, float]:
    """Exit time and cwnd, its reason, and the mean cwnd over the 2 s after the exit (samples
    at a fixed interval, so a time average: it moves smoothly when a reduction comes earlier
    or later)."""
    row = result.flows.row(0, named=True)
    exit_s = row["ss_exit_s"]
    series = result.flow_series.filter(
        (pl.col("time_s") > exit_s) & (pl.col("time_s") <= exit_s + 2.0)
    )
    after = float(series["cwnd"].drop_nulls().mean())
    return exit_s, row["ss_exit_cwnd"], row["ss_exit_reason"], after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("program", choices=("cubic", "paced_reno", "dctcp"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tso-defer", action="store_true", help="tcp.tso_defer = true")
    args = parser.parse_args()
    source = ROOT / "examples" / "bpf" / f"{args.program}.bpf.c"
    clang = shutil.which("clang")
    assert clang, "clang is needed (make setup installs it)"
    work = Path(tempfile.mkdtemp(prefix="startlab-user-cubic-"))
    obj = work / f"{args.program}.bpf.o"
    flags = ["-g", "-O2", "-target", "bpf", "-D__TARGET_ARCH_x86", "-I/usr/include/bpf"]
    subprocess.run([clang, *flags, "-c", str(source), "-o", str(obj)], check=True)
    print(
        "| path | exit s (sim / kernel) | exit cwnd | reason | cwnd over the 2 s after "
        "| exit Δ | cwnd-after Δ |"
    )
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    paths: list[tuple[str, str, Any, bool, int]] = (
        PATHS if args.program == "cubic" else [p for p in PATHS if p[3]]
    )
    if args.program == "paced_reno":
        # No HyStart to turn off: two more paths instead.
        paths += [("300Mbps", "10ms", "1BDP", True, 5), ("10Mbps", "30ms", "2BDP", True, 8)]
    if args.program == "dctcp":
        paths = [(rate, delay, queue, True, seconds) for rate, delay, queue, seconds in ECN_PATHS]
    for i, (rate, delay, buffer, hystart, seconds) in enumerate(paths, 1):
        path = work / f"path{i}.toml"
        doc: dict[str, Any] = document(
            obj,
            args.program,
            rate,
            delay,
            "1BDP" if isinstance(buffer, dict) else buffer,
            hystart,
            seconds,
        )
        if isinstance(buffer, dict):
            doc["topology"]["bottleneck"]["queue"] = buffer
            buffer = " ".join(
                [buffer["kind"]]
                + [f"{k}={v}" for k, v in buffer.items() if k not in ("kind", "ecn")]
                + ["ECN"]
            )
        if args.tso_defer:
            doc["tcp"]["tso_defer"] = True
        path.write_text(tomli_w.dumps(doc), encoding="utf-8")
        sim = measure(startlab.run(path))
        runs = [measure(startlab.kernel.run(path)) for _ in range(args.reps)]
        kernel = (
            statistics.median(r[0] for r in runs),
            statistics.median(r[1] for r in runs),
            "/".join(sorted({r[2] for r in runs})),
            statistics.median(r[3] for r in runs),
        )
        name = f"{i}: {rate}, {delay}, {buffer}{'' if hystart else ', no HyStart'}"
        name = name.replace("Mbps", " Mbit/s").replace("BDP", " BDP")
        exit_d = (kernel[0] - sim[0]) / sim[0] * 100
        after_d = (kernel[3] - sim[3]) / sim[3] * 100
        print(
            f"| {name} | {sim[0]:.3f} / {kernel[0]:.3f} | {sim[1]:.0f} / {kernel[1]:.0f} "
            f"| {sim[2]} / {kernel[2]} | {sim[3]:.0f} / {kernel[3]:.0f} "
            f"| {exit_d:+.1f} % | {after_d:+.1f} % |",
            flush=True,
        )


if __name__ == "__main__":
    main()
