"""The validation table of a sweep run in both worlds: each path's simulator and kernel results
side by side, and whether they meet the targets of docs/kernel.md ("The Linux stack beside
Linux"):

* slow-start exit: time and cwnd within 10 %, and the same reason;
* link utilization over the run within 2 points;
* retransmissions within 25 %;
* the same number of retransmission timeouts.

With ``--targets bbr`` ("BBR beside Linux's bbr"), the targets are BBR's:

* end of Startup within 10 % in time and in bandwidth estimate (``exit_bw``), the same reason;
* utilization within 2 points, retransmissions within 25 %;
* the bottleneck's mean and largest queue (``mean_queue``, ``max_queue``) within 15 %;
* the smallest flow share (``share``) within 5 points.

With ``--targets aqm`` ("AQM bottlenecks in both worlds"), the Linux stack's targets less the
timeouts, and the bottleneck's:

* its drops (``queue_drops``) and CE marks (``marks``) within 25 %;
* the mean sojourn of the packets it sent (``mean_sojourn``) within 15 %.

    python -m startlab.validation out/kernel-linux            # Markdown table on stdout
    python -m startlab.validation out/kernel-linux --describe examples/sweeps/kernel-linux.toml
    python -m startlab.validation out/kernel-bbr --targets bbr
    python -m startlab.validation out/kernel-aqm --targets aqm

The sweep's results (``results.parquet``) must hold the metrics ``ss_exit_time``,
``ss_exit_cwnd``, ``ss_exit_reason``, ``utilization``, ``retransmissions`` and ``timeouts``, an
axis ``world`` with both worlds, and a ``name`` per path.

A path run several times in a world (a ``seed`` axis: the kernel is not deterministic, and
random loss draws from the seed) is summarised by its median, and its most frequent exit reason;
the targets compare the two worlds' summaries, and each cell shows the range of the runs after
the median (``1620 (1617–3381)``) and how many runs had the reason when they did not all agree
(``hystart-train (2/3)``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

EXIT_TOLERANCE = 0.10
UTILIZATION_POINTS = 2.0
RETRANSMISSION_TOLERANCE = 0.25
QUEUE_TOLERANCE = 0.15
SHARE_POINTS = 5.0
COUNT_TOLERANCE = 0.25


@dataclass
class Check:
    """One target on one path: whether it is met, and the two values."""

    met: bool
    sim: str
    kernel: str

    def cell(self) -> str:
        mark = "" if self.met else " ✗"
        return f"{self.sim} / {self.kernel}{mark}"


def _relative_ok(a: float | None, b: float | None, tolerance: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if b == 0:
        return a == 0
    # A value exactly at the limit meets it (whatever the binary rounding of the inputs).
    return abs(a - b) <= tolerance * abs(b) * (1 + 1e-9)


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


NUMERIC = ("ss_exit_time", "ss_exit_cwnd", "utilization", "retransmissions", "timeouts")
OPTIONAL_BBR = ("exit_bw", "mean_queue", "max_queue", "share")
"""Metrics of BBR's targets."""
OPTIONAL_AQM = ("queue_drops", "marks", "mean_sojourn")
"""Metrics of the AQMs' targets."""
OPTIONAL = OPTIONAL_BBR + OPTIONAL_AQM
"""Summarised when the results have them."""


@dataclass
class Summary:
    """One world's runs of one path: the median of each metric (the most frequent exit reason)
    and, for the cells, the values of every run."""

    values: dict[str, Any]
    runs: dict[str, list[Any]]


def summarise(rows: list[dict[str, Any]]) -> Summary:
    """The runs of one path in one world. A metric that some runs lack (a slow start that never
    ended) is the median of the runs that have it, and missing only if all lack it."""
    values: dict[str, Any] = {}
    runs: dict[str, list[Any]] = {}
    for key in NUMERIC + tuple(k for k in OPTIONAL if rows and k in rows[0]):
        xs = [r[key] for r in rows]
        runs[key] = xs
        present = [x for x in xs if x is not None]
        values[key] = statistics.median(present) if present else None
    reasons = [r["ss_exit_reason"] for r in rows]
    runs["ss_exit_reason"] = reasons
    # The most frequent; a tie goes to the reason that sorts first (runs are unordered).
    counts = Counter(reasons)
    values["ss_exit_reason"] = min(counts, key=lambda x: (-counts[x], str(x)))
    return Summary(values, runs)


def _cell(s: Summary, key: str, digits: int = 3, scale: float = 1.0) -> str:
    """The median and, when the runs differ, their range."""
    median = s.values[key]
    text = _fmt(None if median is None else median * scale, digits)
    xs = [x * scale for x in s.runs[key] if x is not None]
    if len(s.runs[key]) > 1 and xs and (min(xs) != max(xs) or len(xs) < len(s.runs[key])):
        text += f" ({_fmt(min(xs), digits)}–{_fmt(max(xs), digits)})"
    return text


def _reason_cell(s: Summary) -> str:
    reason = s.values["ss_exit_reason"]
    reasons = s.runs["ss_exit_reason"]
    text = _fmt(reason)
    if len(set(reasons)) > 1:
        text += f" ({reasons.count(reason)}/{len(reasons)})"
    return text


def checks(sim: dict[str, Any] | Summary, kernel: dict[str, Any] | Summary) -> dict[str, Check]:
    """The targets for one path: each world is one row of the results, or the summary of its
    runs (the targets compare medians)."""
    s = sim if isinstance(sim, Summary) else summarise([sim])
    k = kernel if isinstance(kernel, Summary) else summarise([kernel])
    a, b = s.values, k.values
    out: dict[str, Check] = {}
    out["exit_time"] = Check(
        _relative_ok(a["ss_exit_time"], b["ss_exit_time"], EXIT_TOLERANCE),
        _cell(s, "ss_exit_time"),
        _cell(k, "ss_exit_time"),
    )
    out["exit_cwnd"] = Check(
        _relative_ok(a["ss_exit_cwnd"], b["ss_exit_cwnd"], EXIT_TOLERANCE),
        _cell(s, "ss_exit_cwnd", 0),
        _cell(k, "ss_exit_cwnd", 0),
    )
    out["exit_reason"] = Check(
        a["ss_exit_reason"] == b["ss_exit_reason"], _reason_cell(s), _reason_cell(k)
    )
    us, uk = a["utilization"], b["utilization"]
    out["utilization"] = Check(
        us is not None and uk is not None and abs(us - uk) * 100 <= UTILIZATION_POINTS + 1e-9,
        _cell(s, "utilization", 1, 100.0),
        _cell(k, "utilization", 1, 100.0),
    )
    out["retransmissions"] = Check(
        _relative_ok(a["retransmissions"], b["retransmissions"], RETRANSMISSION_TOLERANCE),
        _cell(s, "retransmissions", 0),
        _cell(k, "retransmissions", 0),
    )
    out["timeouts"] = Check(
        a["timeouts"] == b["timeouts"], _cell(s, "timeouts", 0), _cell(k, "timeouts", 0)
    )
    # An estimate one world does not report (an eBPF port's model in the kernel: only Linux's
    # own bbr reports one, through sock_diag) is not a target there.
    if a.get("exit_bw") is not None and b.get("exit_bw") is not None:
        out["exit_bw"] = Check(
            _relative_ok(a["exit_bw"], b["exit_bw"], EXIT_TOLERANCE),
            _cell(s, "exit_bw", 1, 1e-6),
            _cell(k, "exit_bw", 1, 1e-6),
        )
    for key in ("mean_queue", "max_queue"):
        if key in a and key in b:
            out[key] = Check(
                _relative_ok(a[key], b[key], QUEUE_TOLERANCE),
                _cell(s, key, 0),
                _cell(k, key, 0),
            )
    for key in ("queue_drops", "marks"):
        if key in a and key in b:
            out[key] = Check(
                _relative_ok(a[key], b[key], COUNT_TOLERANCE),
                _cell(s, key, 0),
                _cell(k, key, 0),
            )
    if "mean_sojourn" in a and "mean_sojourn" in b:
        out["mean_sojourn"] = Check(
            _relative_ok(a["mean_sojourn"], b["mean_sojourn"], QUEUE_TOLERANCE),
            _cell(s, "mean_sojourn", 2, 1e3),
            _cell(k, "mean_sojourn", 2, 1e3),
        )
    if "share" in a and "share" in b:
        ss, sk = a["share"], b["share"]
        out["share"] = Check(
            ss is not None and sk is not None and abs(ss - sk) * 100 <= SHARE_POINTS + 1e-9,
            _cell(s, "share", 1, 100.0),
            _cell(k, "share", 1, 100.0),
        )
    return out


COLUMNS_BBR = [
    ("exit_time", "Startup end s"),
    ("exit_bw", "bw estimate Mbit/s"),
    ("exit_reason", "exit reason"),
    ("utilization", "utilization %"),
    ("retransmissions", "retransmissions"),
    ("mean_queue", "mean queue"),
    ("max_queue", "largest queue"),
    ("share", "smallest share %"),
]

COLUMNS_AQM = [
    ("exit_time", "exit time s"),
    ("exit_cwnd", "exit cwnd"),
    ("exit_reason", "exit reason"),
    ("utilization", "utilization %"),
    ("retransmissions", "retransmissions"),
    ("queue_drops", "queue drops"),
    ("marks", "CE marks"),
    ("mean_sojourn", "mean sojourn ms"),
]

COLUMNS = [
    ("exit_time", "exit time s"),
    ("exit_cwnd", "exit cwnd"),
    ("exit_reason", "exit reason"),
    ("utilization", "utilization %"),
    ("retransmissions", "retransmissions"),
    ("timeouts", "timeouts"),
]


def table(
    results: pl.DataFrame,
    describe: dict[str, str] | None = None,
    columns: list[tuple[str, str]] | None = None,
) -> tuple[str, dict[str, int]]:
    """The Markdown table (simulator / kernel in each cell, ✗ where a target is missed) and,
    per target, on how many paths it is met; `columns` are the targets (:data:`COLUMNS`, the
    Linux stack's, by default; :data:`COLUMNS_BBR`)."""
    cols = columns or COLUMNS
    ok = results.filter(pl.col("status") == "ok")
    names = sorted(set(ok["name"].to_list()), key=lambda n: (len(n), n))
    header = "| # | path | " + " | ".join(title for _, title in cols) + " |"
    rule = "| ---: | --- | " + " | ".join("---:" for _ in cols) + " |"
    lines = [header, rule]
    met = {key: 0 for key, _ in cols}
    met["all"] = 0
    met["paths"] = 0
    # On how many paths each target applies (an estimate one world does not report does not).
    applies = {key: 0 for key, _ in cols}
    for name in names:
        rows: dict[str, list[dict[str, Any]]] = {}
        for r in ok.filter(pl.col("name") == name).to_dicts():
            rows.setdefault(r["world"], []).append(r)
        if "simulator" not in rows or "kernel" not in rows:
            continue
        c = checks(summarise(rows["simulator"]), summarise(rows["kernel"]))
        met["paths"] += 1
        for key, _ in cols:
            if key in c:
                met[key] += int(c[key].met)
                applies[key] += 1
        met["all"] += int(all(c[key].met for key, _ in cols if key in c))
        path = (describe or {}).get(name, "")
        cells = (c[key].cell() if key in c else "n/a" for key, _ in cols)
        lines.append(f"| {name} | {path} | " + " | ".join(cells) + " |")
    # A target that did not apply on every path says on how many it did.
    for key, _ in cols:
        if applies[key] != met["paths"]:
            met[f"{key}/paths"] = applies[key]
    return "\n".join(lines), met


def describe_plan(plan: Path) -> dict[str, str]:
    """A short description of each path of a sweep plan with a `[zip.path]` group."""
    import tomllib

    doc = tomllib.loads(plan.read_text())
    z = doc.get("zip", {}).get("path", {})
    out: dict[str, str] = {}
    for i, name in enumerate(z.get("name", [])):
        parts = []
        for key in ("bandwidth", "rtt", "buffer"):
            if key in z:
                parts.append(str(z[key][i]).replace("Mbps", " Mbit/s").replace("BDP", " BDP"))
        loss = z.get("loss", [0.0] * (i + 1))[i]
        if loss:
            parts.append(f"loss {loss * 100:g} %")
        flows = z.get("flows", [[]] * (i + 1))[i]
        algos = []
        for f in flows:
            a = f.get("cc", "")
            if f.get("startup", "default") != "default":
                a += "+" + f["startup"]
            algos.append(a)
        if algos:
            if len(algos) > 1:
                starts = ", ".join(str(f.get("start", "0s")) for f in flows)
                if len(set(algos)) == 1:
                    parts.append(f"{len(algos)} × {algos[0]} (starts {starts})")
                else:
                    parts.append(f"{' + '.join(algos)} (starts {starts})")
            else:
                parts.append(algos[0])
        pacing = z.get("tcp.pacing", ["none"] * (i + 1))[i]
        if pacing != "none":
            parts.append("paced")
        out[str(name)] = ", ".join(parts)
    return out


def export_trace(run: Path) -> str:
    """A run's flow 0 as the CSV of a recorded trace (tests of the Linux stack against the
    kernel, crates/startlab-core/tests/kernel_golden): a header of `# key = value` lines with
    the flow's totals and slow-start exit, then `time_ms,cwnd,in_flight` every 10 ms (the last
    sample at or before each instant: the kernel world samples on every ACK)."""
    flows = pl.read_parquet(run / "flows.parquet").filter(pl.col("flow") == 0).to_dicts()[0]
    series = pl.read_parquet(run / "flow_series.parquet").filter(pl.col("flow") == 0)
    import datetime
    import json

    summary = (
        json.loads((run / "summary.json").read_text()) if (run / "summary.json").exists() else {}
    )
    release = (summary.get("kernel") or {}).get("kernel_release", "the simulator")
    lines = [f"# recorded on {release}, {datetime.date.today().isoformat()}"]
    for key in (
        "ss_exit_ns",
        "ss_exit_cwnd",
        "ss_exit_reason",
        "retransmissions",
        "timeouts",
        "delivered_bytes",
    ):
        lines.append(f"# {key} = {flows[key]}")
    lines.append("time_ms,cwnd,in_flight")
    series = series.select(["time_ns", "cwnd", "in_flight"]).sort("time_ns")
    if series.height:
        step = 10_000_000
        first = -(-int(series["time_ns"][0]) // step) * step
        grid = pl.DataFrame(
            {"time_ns": pl.int_range(first, int(series["time_ns"][-1]) + 1, step, eager=True)}
        )
        sampled = grid.join_asof(series, on="time_ns", strategy="backward")
        for r in sampled.to_dicts():
            lines.append(f"{r['time_ns'] // 1_000_000},{r['cwnd']:g},{r['in_flight']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m startlab.validation", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "sweep",
        type=Path,
        help="a sweep's output directory (results.parquet), or a run directory with --export-trace",
    )
    ap.add_argument("--describe", type=Path, help="the sweep plan, to describe each path")
    ap.add_argument(
        "--targets",
        choices=("linux", "bbr", "aqm"),
        default="linux",
        help="the targets: the Linux stack's (default), BBR's or the AQMs' "
        "(docs/kernel.md, docs/aqm.md)",
    )
    ap.add_argument(
        "--export-trace",
        action="store_true",
        help="print flow 0 of the run directory SWEEP as a recorded trace (CSV)",
    )
    args = ap.parse_args(argv)
    if args.export_trace:
        if not (args.sweep / "flow_series.parquet").exists():
            print(f"{args.sweep}: not a run directory (no flow_series.parquet)", file=sys.stderr)
            return 2
        sys.stdout.write(export_trace(args.sweep))
        return 0
    path = args.sweep / "results.parquet"
    if not path.exists():
        print(f"{path}: no such file (run the sweep first)", file=sys.stderr)
        return 2
    results = pl.read_parquet(path)
    missing = [
        c
        for c in (
            "world",
            "name",
            "ss_exit_time",
            "ss_exit_cwnd",
            "ss_exit_reason",
            "utilization",
            "retransmissions",
            "timeouts",
            *(OPTIONAL_BBR if args.targets == "bbr" else ()),
            *(OPTIONAL_AQM if args.targets == "aqm" else ()),
        )
        if c not in results.columns
    ]
    if missing:
        print(f"{path}: missing columns {', '.join(missing)}", file=sys.stderr)
        return 2
    describe = describe_plan(args.describe) if args.describe else None
    columns = {"bbr": COLUMNS_BBR, "aqm": COLUMNS_AQM}.get(args.targets, COLUMNS)
    text, met = table(results, describe, columns)
    print(text)
    n = met["paths"]
    print()
    each = ", ".join(
        f"{title} {met[key]}/{met.get(f'{key}/paths', n)}"
        for key, title in columns
        if met.get(f"{key}/paths", n)
    )
    print(f"Targets met on {met['all']} of {n} paths: {each}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
