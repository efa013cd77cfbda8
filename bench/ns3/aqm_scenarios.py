"""Whole TCP scenarios through CoDel, FQ-CoDel and PIE bottlenecks, in startlab and in ns-3 3.44.

    PY=bench/ns3/.venv/bin/python
    $PY bench/ns3/aqm_scenarios.py compare [--startlab .venv/bin/startlab] [--json OUT]
        [--only NAME,...] [--workdir DIR]
    $PY bench/ns3/aqm_scenarios.py table --from OUT      # the table again, from a --json file
    python bench/ns3/aqm_scenarios.py selftest           # no ns-3 needed; about a second

`aqm_replay.py` checks the disciplines packet by packet on replayed arrivals. This checks them
in closed loop: TCP senders react to the drops and marks, and the disciplines to the traffic the
senders make. Each scenario file under `bench/ns3/aqm-scenarios/` is run by startlab (`startlab
run FILE`, whose `summary.json` carries the `links` and `flows` tables) and by ns-3
(`ns3_scenario.py FILE`: `CoDelQueueDisc`, `FqCoDelQueueDisc`, `PieQueueDisc` on the bottleneck
device, `TcpLinuxReno` / `TcpCubic`, `UseEcn` On), one simulation at a time.

## The plan

| scenario | queue | ECN | cc | flows | rate | RTT | duration |
| --- | --- | --- | --- | --- | --- | --- | --- |
| codel-reno-1 | codel | off | newreno | 1 | 50 Mbit/s | 40 ms | 15 s |
| codel-ecn-reno-1 | codel | on | newreno | 1 | 50 Mbit/s | 40 ms | 15 s |
| codel-cubic-4 | codel | off | cubic | 4, 2 s apart | 100 Mbit/s | 20 ms | 15 s |
| codel-ecn-cubic-4 | codel | on | cubic | 4, 2 s apart | 100 Mbit/s | 20 ms | 15 s |
| fq_codel-reno-4 | fq_codel | off | newreno | 4, 2 s apart | 20 Mbit/s | 80 ms | 20 s |
| fq_codel-ecn-reno-4 | fq_codel | on | newreno | 4, 2 s apart | 20 Mbit/s | 80 ms | 20 s |
| fq_codel-cubic-1 | fq_codel | off | cubic | 1 | 100 Mbit/s | 60 ms | 15 s |
| fq_codel-ecn-cubic-1 | fq_codel | on | cubic | 1 | 100 Mbit/s | 60 ms | 15 s |
| pie-reno-1 | pie | off | newreno | 1 | 20 Mbit/s | 100 ms | 20 s |
| pie-ecn-reno-1 | pie | on | newreno | 1 | 20 Mbit/s | 100 ms | 20 s |
| pie-cubic-4 | pie | off | cubic | 4, 2 s apart | 50 Mbit/s | 60 ms | 15 s |
| pie-ecn-cubic-4 | pie | on | cubic | 4, 2 s apart | 50 Mbit/s | 60 ms | 15 s |

Every queue has Linux's defaults (codel and pie 1000 packets, fq_codel 10240; 5 ms / 100 ms;
PIE 15 ms), `ecn` given explicitly; "ECN on" is `ecn = true` on the queue and in `[tcp]`. The TCP
settings are the drop-tail comparison's (docs/performance.md, "Settings"), with SACK on: CUBIC
with beta 0.7 and no HyStart on either side. pie-cubic-4 keeps a drop-tail reverse queue (the
ACK direction), the others the scenario default, the forward queue's kind.

## What is compared, and the tolerances

Chosen before any of the plan was run, from what is known to differ; a miss is explained, never
tuned away. T is one full-size packet's transmission time at the bottleneck rate (1502 B:
0.12 ms at 100 Mbit/s, 0.60 ms at 20 Mbit/s).

- **utilization**: startlab's `links.utilization` of the bottleneck; ns-3's bytes whose
  transmission started × 8 / rate / duration. Passes with an absolute difference of at most
  3 points.
- **delivered bytes**: Σ `flows.delivered_bytes`; Σ `PacketSink::GetTotalRx`. Within 5 %.
- **drops**: `links.drops`; the queue disc's drops before enqueue and after dequeue (plus the
  device's and the traffic-control layer's, always 0 here). Absolute difference at most
  max(5, 30 % of the larger), and for PIE at least 2√(a+b).
- **marks**: `links.marks`; the queue disc's `Mark`s. As drops.
- **sojourn p50, p90, mean**: `links.p50_sojourn_ns`, ...; in ns-3 the wait from the enqueue
  into the queue disc to `PhyTxBegin`. Absolute difference at most 25 % of the larger + T.
- **sojourn p99**: at most 35 % of the larger + T. **sojourn max**: at most 50 % + T.

Why these:
- **Two different TCPs.** The disciplines are the same algorithms (aqm_replay.py finds plain
  CoDel identical to the nanosecond), but the senders are not: ns-3's `TcpLinuxReno` adds whole
  segments per window of ACKs where startlab's NewReno adds 1/cwnd per ACK; `TcpCubic` keeps an
  integer window, startlab's a floating-point one; on an ECN echo ns-3 enters CWR, sets cwnd to
  ssthresh and does not grow it until the window sent before is acknowledged
  (`TcpSocketBase::EnterCwr`, `TcpClassicRecovery`), where startlab's ns-2 stack skips growth
  on that one ACK; after a timeout the two differ as docs/performance.md describes. The number
  of congestion signals (drops or marks) is about one per sawtooth per flow, so these change it
  directly: 30 %, at least 5 (a handful of events, each counted whole).
- **The known ns-3 departures** (aqm_replay.py's docstring): CoDel schedules the mark after a
  mark from now (fewer marks); FQ-CoDel applies the mtu rule per flow and an overflow does not
  add to the flow's count; PIE starts its timer at 0 s (Linux 0.5 s), spends its burst
  allowance per update and decays by x 0.98. They fall inside the 30 % unless a scenario makes
  one of them dominate, which is then a miss to explain.
- **PIE draws at random** with different generators: 2 standard deviations of the difference
  of two independent Poisson counts, 2√(a+b), as a floor of the allowance.
- **Utilization and bytes**: the drop-tail comparison agrees within 1.3 % wherever no timeout
  policy differs; an AQM keeps the queue short, so a sender's lag in its sawtooth costs link
  time when the queue empties. 3 points of utilization (the kernel comparison of docs/aqm.md
  allows 2 between the same discipline code) and 5 % of bytes (utilization plus retransmissions).
- **Sojourn.** Both AQMs hold the delay near their targets, so the levels must agree; the
  sawtooth phase moves them, 25 %. ns-3's device keeps one packet outside the queue disc (see
  ns3_scenario.py): its AQM sees each packet one T early, and a packet that finds the link busy
  waits up to T for it; the absolute T covers that. startlab's percentiles come from a
  histogram with 1/32 resolution, inside the 25 %. The tail (p99: the top 1 % is 0.15 to 0.2 s
  worth of packets; max: one packet) is set by one or two events, the first slow start's
  overshoot before the AQM reacts and the joins, which the one-event differences above move:
  35 % and 50 %.
- **ns-3's sojourn** is measured from the enqueue into the queue disc to the start of
  transmission (`PhyTxBegin`), which is startlab's definition ("queued until transmission
  starts"). The queue disc's own `SojournTime` trace ends at the hand-over to the device (one T
  earlier under load); it is in the JSON (`ns3.qdisc_*`) and the second table, not checked.

Also reported, not checked: per-flow delivered bytes (Jain's index), timeouts, fast
recoveries, ECN reductions, flow 0's slow-start exit, and FQ-CoDel's flow queues in ns-3 (a
hash collision of two flows would share a queue; startlab's buckets are not visible, its
Jain index is the hint).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCENARIO_DIR = HERE / "aqm-scenarios"
sys.path.insert(0, str(HERE))
import ns3_scenario  # noqa: E402  (imports no ns-3 until it runs one)


@dataclass(frozen=True)
class Plan:
    name: str
    kind: str
    ecn: bool
    cc: str
    flows: int
    rate_mbps: int
    rtt_ms: int
    duration_s: int

    @property
    def path(self) -> Path:
        return SCENARIO_DIR / f"{self.name}.toml"


PLAN: list[Plan] = [
    Plan("codel-reno-1", "codel", False, "newreno", 1, 50, 40, 15),
    Plan("codel-ecn-reno-1", "codel", True, "newreno", 1, 50, 40, 15),
    Plan("codel-cubic-4", "codel", False, "cubic", 4, 100, 20, 15),
    Plan("codel-ecn-cubic-4", "codel", True, "cubic", 4, 100, 20, 15),
    Plan("fq_codel-reno-4", "fq_codel", False, "newreno", 4, 20, 80, 20),
    Plan("fq_codel-ecn-reno-4", "fq_codel", True, "newreno", 4, 20, 80, 20),
    Plan("fq_codel-cubic-1", "fq_codel", False, "cubic", 1, 100, 60, 15),
    Plan("fq_codel-ecn-cubic-1", "fq_codel", True, "cubic", 1, 100, 60, 15),
    Plan("pie-reno-1", "pie", False, "newreno", 1, 20, 100, 20),
    Plan("pie-ecn-reno-1", "pie", True, "newreno", 1, 20, 100, 20),
    Plan("pie-cubic-4", "pie", False, "cubic", 4, 50, 60, 15),
    Plan("pie-ecn-cubic-4", "pie", True, "cubic", 4, 50, 60, 15),
]

# --------------------------------------------------------------------------------------------
# Tolerances (module docstring)

UTILIZATION_POINTS = 0.03
DELIVERED_REL = 0.05
COUNT_REL = 0.30
COUNT_FLOOR = 5
PIE_SIGMAS = 2.0
SOJOURN_REL = {"p50": 0.25, "p90": 0.25, "mean": 0.25, "p99": 0.35, "max": 0.50}
SOJOURNS = ("p50", "p90", "p99", "mean", "max")
METRICS = ("utilization", "delivered_bytes", "drops", "marks", *SOJOURNS)


@dataclass(frozen=True)
class Check:
    ok: bool
    startlab: float | None
    ns3: float | None
    allowed: float | None  # the largest absolute difference that passes
    note: str = ""


def packet_time_ns(setup: ns3_scenario.Setup) -> float:
    """T: one full-size packet's transmission at the bottleneck rate."""
    return setup.wire_bytes * 8 / setup.bottleneck_bps * 1e9


def allowed_difference(metric: str, a: float, b: float, *, pie: bool, t_ns: float) -> float:
    """The largest |a - b| that passes for `metric` (a startlab's value, b ns-3's)."""
    big = max(abs(a), abs(b))
    if metric == "utilization":
        return UTILIZATION_POINTS
    if metric == "delivered_bytes":
        return DELIVERED_REL * abs(a)
    if metric in ("drops", "marks"):
        allowed = max(COUNT_FLOOR, COUNT_REL * big)
        if pie:
            allowed = max(allowed, PIE_SIGMAS * math.sqrt(a + b))
        return allowed
    if metric in SOJOURN_REL:
        return SOJOURN_REL[metric] * big + t_ns
    raise KeyError(metric)


def check(metric: str, a: float | None, b: float | None, *, pie: bool, t_ns: float) -> Check:
    if a is None and b is None:
        return Check(True, None, None, None, "neither has a value")
    if a is None or b is None:
        return Check(False, a, b, None, "one side has no value")
    allowed = allowed_difference(metric, a, b, pie=pie, t_ns=t_ns)
    return Check(abs(a - b) <= allowed + 1e-9 * max(1.0, abs(a)), a, b, allowed)


# --------------------------------------------------------------------------------------------
# The two sides' numbers


def startlab_metrics(summary: dict[str, Any]) -> dict[str, Any]:
    """Metrics of a startlab summary.json (sojourns in ns)."""
    links = [x for x in summary["links"] if x.get("alias") == "bottleneck"]
    if len(links) != 1:
        raise ValueError("summary.json: no single link aliased 'bottleneck'")
    link = links[0]
    tcp = [f for f in summary["flows"] if f.get("kind") == "tcp"]
    out: dict[str, Any] = {
        "utilization": float(link["utilization"]),
        "delivered_bytes": sum(int(f["delivered_bytes"]) for f in tcp),
        "drops": int(link["drops"]),
        "marks": int(link["marks"]),
        "mean": link.get("mean_sojourn_ns"),
        "max": link.get("max_sojourn_ns"),
    }
    for q in ("p50", "p90", "p99"):
        out[q] = link.get(f"{q}_sojourn_ns")  # None on a startlab without the percentiles
    out["flow_delivered"] = [int(f["delivered_bytes"]) for f in tcp]
    out["timeouts"] = sum(int(f["timeouts"]) for f in tcp)
    out["recoveries"] = sum(int(f["fast_recoveries"]) for f in tcp)
    out["ecn_reductions"] = sum(int(f.get("ecn_reductions") or 0) for f in tcp)
    out["retransmissions"] = sum(int(f["retransmissions"]) for f in tcp)
    f0 = tcp[0]
    out["ss_exit_s"] = None if f0.get("ss_exit_ns") is None else f0["ss_exit_ns"] / 1e9
    out["ss_exit_cwnd"] = f0.get("ss_exit_cwnd")
    out["ss_exit_reason"] = f0.get("ss_exit_reason")
    out["jain"] = jain(out["flow_delivered"])
    return out


def ns3_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """Metrics of ns3_scenario.py's JSON with an AQM (sojourns in ns, to the wire)."""
    fwd = result["forward"]
    wire = fwd["wire_wait"]
    qdisc = fwd["sojourn"]
    out: dict[str, Any] = {
        "utilization": float(result["utilization"]),
        "delivered_bytes": int(result["delivered_bytes"]),
        "drops": int(result["drops"]),
        "marks": int(result["marks"]),
        "mean": wire["mean_ns"],
        "max": wire["max_ns"],
        "p50": wire["p50_ns"],
        "p90": wire["p90_ns"],
        "p99": wire["p99_ns"],
    }
    for q in SOJOURNS:
        out[f"qdisc_{q}"] = qdisc[f"{q}_ns"]
    flows = result["flows"]
    out["flow_delivered"] = [int(f["delivered_bytes"]) for f in flows]
    out["timeouts"] = sum(int(f["timeouts"]) for f in flows)
    out["recoveries"] = sum(int(f["recoveries"]) for f in flows)
    out["ecn_reductions"] = sum(int(f["ecn_reductions"]) for f in flows)
    f0 = flows[0]
    out["ss_exit_s"] = f0["ss_exit_s"] if f0["ss_exit_s"] >= 0 else None
    out["ss_exit_cwnd"] = f0["ss_exit_cwnd"] if f0["ss_exit_s"] >= 0 else None
    out["ss_exit_reason"] = f0["ss_exit_reason"] or None
    out["jain"] = jain(out["flow_delivered"])
    out["flow_queues"] = fwd.get("flow_queues")
    out["drop_reasons"] = fwd.get("drop_reasons", {})
    out["mark_reasons"] = fwd.get("mark_reasons", {})
    return out


def jain(values: list[int]) -> float | None:
    if not values or not any(values):
        return None
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def compare_metrics(
    sl: dict[str, Any], n3: dict[str, Any], *, pie: bool, t_ns: float
) -> dict[str, Check]:
    return {m: check(m, sl.get(m), n3.get(m), pie=pie, t_ns=t_ns) for m in METRICS}


# --------------------------------------------------------------------------------------------
# Markdown


def _ms(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e6:.2f}"


def _cell(metric: str, c: Check) -> str:
    mark = "✓" if c.ok else "✗"
    a, b = c.startlab, c.ns3
    if a is None or b is None:
        return (
            f"{_ms(a) if metric in SOJOURN_REL else a} / "
            f"{_ms(b) if metric in SOJOURN_REL else b} {mark}"
        )
    if metric == "utilization":
        return f"{100 * a:.1f} / {100 * b:.1f} ({100 * (b - a):+.1f}) {mark}"
    if metric == "delivered_bytes":
        return f"{a / 1e6:.1f} / {b / 1e6:.1f} (×{b / a:.3f}) {mark}"
    ratio = "" if a == 0 else f" (×{b / a:.2f})"
    if metric in ("drops", "marks"):
        return f"{int(a)} / {int(b)}{ratio} {mark}"
    return f"{_ms(a)} / {_ms(b)}{ratio} {mark}"


def markdown(results: list[dict[str, Any]]) -> str:
    head = (
        "| scenario | utilization % | delivered MB | drops | marks | sojourn p50 ms "
        "| p90 ms | p99 ms | mean ms | max ms |"
    )
    lines = [
        "Each cell: startlab / ns-3 (ns-3 ÷ startlab, or the difference in points), ✓ within "
        "the tolerance, ✗ outside it.",
        "",
        head,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    passed = total = clean = 0
    per_metric = dict.fromkeys(METRICS, 0)
    for r in results:
        if r.get("error"):
            lines.append(f"| {r['name']} | {r['error']} |" + " |" * 8)
            continue
        checks = {m: Check(**c) for m, c in r["checks"].items()}
        lines.append(f"| {r['name']} | " + " | ".join(_cell(m, checks[m]) for m in METRICS) + " |")
        ok = [checks[m].ok for m in METRICS]
        passed += sum(ok)
        total += len(ok)
        clean += all(ok)
        for m in METRICS:
            per_metric[m] += checks[m].ok
    n = sum(1 for r in results if not r.get("error"))
    lines += [
        "",
        f"{passed} of {total} checks pass; {clean} of {n} scenarios pass every check. By metric: "
        + ", ".join(f"{m} {per_metric[m]}/{n}" for m in METRICS)
        + ".",
        "",
        "Not checked (startlab / ns-3): TCP events, flow 0's slow-start exit, fairness, and ns-3's "
        "queue-disc sojourn (enqueue to hand-over to the device, ms).",
        "",
        "| scenario | timeouts | fast recoveries | ECN reductions | flow 0 exit s, cwnd, why "
        "| Jain index | ns-3 FQ flow queues | ns-3 queue-disc p50 / p99 / mean ms |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in results:
        if r.get("error"):
            continue
        a, b = r["startlab"], r["ns3"]

        def exit_(x: dict[str, Any]) -> str:
            if x["ss_exit_s"] is None:
                return "—"
            return f"{x['ss_exit_s']:.3f}, {x['ss_exit_cwnd']:.0f}, {x['ss_exit_reason']}"

        def j(x: float | None) -> str:
            return "—" if x is None else f"{x:.3f}"

        lines.append(
            f"| {r['name']} | {a['timeouts']} / {b['timeouts']} "
            f"| {a['recoveries']} / {b['recoveries']} "
            f"| {a['ecn_reductions']} / {b['ecn_reductions']} "
            f"| {exit_(a)} / {exit_(b)} | {j(a['jain'])} / {j(b['jain'])} "
            f"| {b.get('flow_queues') if b.get('flow_queues') is not None else '—'} "
            f"| {_ms(b['qdisc_p50'])} / {_ms(b['qdisc_p99'])} / {_ms(b['qdisc_mean'])} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Running


def run_startlab(startlab: Path, scenario: Path, out: Path) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    p = subprocess.run(
        [str(startlab), "run", str(scenario), "-o", str(out), "--force", "--no-plots"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError((p.stderr.strip() or p.stdout.strip())[-400:])
    return json.loads((out / "summary.json").read_text()), wall


def run_ns3(python: Path, scenario: Path, extra: list[str]) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    p = subprocess.run(
        [str(python), str(HERE / "ns3_scenario.py"), str(scenario), *extra],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.perf_counter() - t0
    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
    if p.returncode != 0 or not lines:
        raise RuntimeError((p.stderr.strip() or p.stdout.strip())[-400:])
    return json.loads(lines[-1]), wall


def compare_one(
    plan: Plan, startlab: Path, ns3_python: Path, work: Path, trace: bool
) -> dict[str, Any]:
    setup = ns3_scenario.load(plan.path)
    t_ns = packet_time_ns(setup)
    result: dict[str, Any] = {
        "name": plan.name,
        "file": str(plan.path.relative_to(ROOT)),
        "plan": plan.__dict__,
        "packet_time_ns": t_ns,
    }
    try:
        summary, sl_wall = run_startlab(startlab, plan.path, work / plan.name / "startlab")
        extra = []
        if trace:
            extra = [
                "--trace-flow0",
                str(work / plan.name / "ns3-flow0.csv"),
                "--trace-queue",
                str(work / plan.name / "ns3-queue.csv"),
            ]
        raw, ns3_wall = run_ns3(ns3_python, plan.path, extra)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        result["error"] = str(e).replace("|", "/").replace("\n", " ")
        return result
    (work / plan.name / "ns3.json").write_text(json.dumps(raw, indent=1) + "\n")
    sl, n3 = startlab_metrics(summary), ns3_metrics(raw)
    checks = compare_metrics(sl, n3, pie=plan.kind == "pie", t_ns=t_ns)
    result.update(
        {
            "startlab": sl,
            "ns3": n3,
            "checks": {m: c.__dict__ for m, c in checks.items()},
            "startlab_wall_s": sl_wall,
            "ns3_wall_s": ns3_wall,
            "ns3_sim_wall_s": raw.get("wall_s"),
            "ns3_raw": raw,
        }
    )
    return result


def cmd_compare(args: argparse.Namespace) -> None:
    startlab = Path(args.startlab)
    if not startlab.exists():
        raise SystemExit(f"{startlab}: no startlab (the CLI of the project's venv, `make setup`)")
    only = {s.strip() for s in args.only.split(",")} if args.only else set()
    unknown = only - {p.name for p in PLAN}
    if unknown:
        raise SystemExit(f"unknown scenario(s) {sorted(unknown)}")
    plan = [p for p in PLAN if not only or p.name in only]
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="aqm-scen-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.time()
    print(
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        f" ({os.cpu_count()} CPUs); {len(plan)} scenario(s), one simulation at a time",
        file=sys.stderr,
        flush=True,
    )
    results = []
    for p in plan:
        (work / p.name).mkdir(parents=True, exist_ok=True)
        r = compare_one(p, startlab, Path(args.ns3_python), work, args.trace)
        results.append(r)
        status = r.get("error") or (
            f"startlab {r['startlab_wall_s']:.1f} s, ns-3 {r['ns3_wall_s']:.1f} s "
            f"({r['ns3_sim_wall_s']:.1f} s simulating); "
            f"{sum(c['ok'] for c in r['checks'].values())}/{len(METRICS)} checks pass"
        )
        print(f"  {p.name:22} {status}", file=sys.stderr, flush=True)
    print(
        f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{(time.time() - started) / 60:.1f} min; outputs in {work}",
        file=sys.stderr,
    )
    print(markdown(results))
    if args.json:
        doc = {"tolerances": tolerances(), "scenarios": results}
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")


def cmd_table(args: argparse.Namespace) -> None:
    doc = json.loads(Path(args.source).read_text())
    print(markdown(doc["scenarios"]))


def tolerances() -> dict[str, Any]:
    return {
        "utilization_points": UTILIZATION_POINTS,
        "delivered_relative": DELIVERED_REL,
        "count_relative_of_larger": COUNT_REL,
        "count_floor": COUNT_FLOOR,
        "pie_sigmas_sqrt_sum": PIE_SIGMAS,
        "sojourn_relative_of_larger_plus_packet_time": SOJOURN_REL,
    }


# --------------------------------------------------------------------------------------------
# Self-test (no ns-3, no simulation)


def cmd_selftest(args: argparse.Namespace) -> None:
    failures: list[str] = []

    def ok(cond: bool, what: str) -> None:
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    # 1. The plan files: present, parsed by the ns-3 runner, and what the plan says they are.
    files = sorted(p.name for p in SCENARIO_DIR.glob("*.toml"))
    ok(files == sorted(p.path.name for p in PLAN), f"{len(files)} files, one per plan entry")
    for p in PLAN:
        try:
            s = ns3_scenario.load(p.path)
        except SystemExit as e:
            ok(False, f"{p.name}: {e}")
            continue
        assert s.forward is not None
        assert s.forward.aqm is not None
        rtt_ms = round(s.rtt_s * 1000, 6)
        facts = (
            s.forward.kind == p.kind,
            s.ecn == p.ecn,
            bool(s.forward.aqm["ecn"]) == p.ecn,
            {f.cc for f in s.flows} == {p.cc},
            len(s.flows) == p.flows == s.pairs,
            s.bottleneck_bps == p.rate_mbps * 1e6,
            rtt_ms == p.rtt_ms,
            s.duration_s == p.duration_s,
            s.sack,
            [f.start_s for f in s.flows] == [2.0 * i for i in range(p.flows)],
            s.name == p.name,
        )
        ok(all(facts), f"{p.name}: file matches the plan {[int(x) for x in facts]}")
        config = ns3_scenario.ns3_queue_config(s.forward.aqm, s)
        if p.kind == "codel":
            good = dict(config.attributes)["MinBytes"] == "1499"
        elif p.kind == "fq_codel":
            good = config.codel_min_bytes == 1499 and config.limit == 10240
        else:
            good = dict(config.attributes)["UseEcn"] == ("true" if p.ecn else "false")
        ok(good, f"{p.name}: ns-3 mapping ({config.type_id})")
    # The plan covers what it must.
    combos = {(p.kind, p.ecn) for p in PLAN}
    ok(
        combos == {(k, e) for k in ("codel", "fq_codel", "pie") for e in (False, True)},
        "every discipline with ECN off and on",
    )
    ok({p.cc for p in PLAN} == {"newreno", "cubic"}, "NewReno and CUBIC")
    ok({p.flows for p in PLAN} == {1, 4}, "one flow and four")
    ok(
        all(
            20 <= p.rate_mbps <= 100 and 20 <= p.rtt_ms <= 100 and 10 <= p.duration_s <= 20
            for p in PLAN
        ),
        "rates 20-100 Mbit/s, RTTs 20-100 ms, 10-20 s",
    )
    ok(8 <= len(PLAN) <= 12, f"{len(PLAN)} scenarios")
    rev = ns3_scenario.load(SCENARIO_DIR / "pie-cubic-4.toml").reverse
    ok(
        rev is not None and rev.kind == "droptail" and rev.packets == 1000,
        "pie-cubic-4: drop-tail reverse queue of 1000",
    )

    # 2. The tolerance rules on synthetic numbers.
    t = 120_000.0
    ok(check("utilization", 0.95, 0.92, pie=False, t_ns=t).ok, "utilization: 3 points pass")
    ok(not check("utilization", 0.95, 0.919, pie=False, t_ns=t).ok, "3.1 points miss")
    ok(check("delivered_bytes", 1e9, 1.05e9, pie=False, t_ns=t).ok, "bytes: 5 % passes")
    ok(not check("delivered_bytes", 1e9, 1.051e9, pie=False, t_ns=t).ok, "5.1 % misses")
    ok(check("drops", 100, 70, pie=False, t_ns=t).ok, "drops 100 / 70 pass (30 % of 100)")
    ok(not check("drops", 100, 69, pie=False, t_ns=t).ok, "drops 100 / 69 miss")
    ok(check("drops", 70, 100, pie=False, t_ns=t).ok, "symmetric: 70 / 100 pass")
    ok(check("marks", 0, 5, pie=False, t_ns=t).ok, "marks 0 / 5 pass (floor 5)")
    ok(not check("marks", 0, 6, pie=False, t_ns=t).ok, "marks 0 / 6 miss")
    # PIE: 2 sqrt(a + b) = 2 sqrt(100) = 20 > max(5, 0.3 * 60 = 18).
    ok(check("drops", 40, 60, pie=True, t_ns=t).ok, "PIE drops 40 / 60 pass (2 sqrt 100)")
    ok(not check("drops", 40, 60, pie=False, t_ns=t).ok, "not for CoDel")
    a = 4_000_000.0
    b = 0.75 * a - t  # |a - b| = 0.25 a + T exactly, with a the larger
    ok(check("p50", a, b + 1, pie=False, t_ns=t).ok, "p50: 25 % of the larger + T passes")
    ok(not check("p50", a, b - 1000, pie=False, t_ns=t).ok, "just beyond misses")
    ok(check("max", 100e6, 50e6 + 1, pie=False, t_ns=0).ok, "max: 50 % passes")
    ok(check("p99", 100e6, 65e6, pie=False, t_ns=0).ok, "p99: 35 % passes")
    ok(not check("p99", 100e6, 64e6, pie=False, t_ns=0).ok, "p99: 36 % misses")
    ok(check("p90", None, None, pie=False, t_ns=t).ok, "no value on either side: not a miss")
    ok(not check("p90", 5e6, None, pie=False, t_ns=t).ok, "a value on one side only: a miss")
    ok(abs(packet_time_ns(ns3_scenario.load(PLAN[0].path)) - 240_320) < 1, "T at 50 Mbit/s")

    # 3. Both sides' numbers, and the table, on synthetic outputs.
    summary = {
        "links": [
            {
                "alias": "bottleneck",
                "utilization": 0.9,
                "drops": 10,
                "marks": 0,
                "mean_sojourn_ns": 2_000_000,
                "p50_sojourn_ns": 1_000_000,
                "p90_sojourn_ns": 4_000_000,
                "p99_sojourn_ns": 9_000_000,
                "max_sojourn_ns": 50_000_000,
            },
            {"alias": "bottleneck.reverse", "utilization": 0.02, "drops": 0, "marks": 0},
        ],
        "flows": [
            {
                "kind": "tcp",
                "delivered_bytes": 600,
                "timeouts": 0,
                "fast_recoveries": 3,
                "ecn_reductions": 0,
                "retransmissions": 10,
                "ss_exit_ns": 500_000_000,
                "ss_exit_cwnd": 300.0,
                "ss_exit_reason": "loss",
            },
            {
                "kind": "tcp",
                "delivered_bytes": 400,
                "timeouts": 1,
                "fast_recoveries": 2,
                "ecn_reductions": 0,
                "retransmissions": 5,
            },
        ],
    }
    sl = startlab_metrics(summary)
    ok(
        sl["delivered_bytes"] == 1000 and sl["p90"] == 4_000_000 and sl["timeouts"] == 1,
        "startlab metrics from summary.json",
    )
    ok(abs(sl["jain"] - 1000**2 / (2 * (600**2 + 400**2))) < 1e-12, "Jain's index")
    old = json.loads(json.dumps(summary))
    for q in ("p50", "p90", "p99"):
        del old["links"][0][f"{q}_sojourn_ns"]
    ok(startlab_metrics(old)["p50"] is None, "a startlab without percentiles gives None")
    summ = {
        "n": 9,
        "mean_ns": 2.1e6,
        "p50_ns": 1.1e6,
        "p90_ns": 4.1e6,
        "p99_ns": 9.5e6,
        "max_ns": 49e6,
    }
    raw = {
        "utilization": 0.91,
        "delivered_bytes": 1010,
        "drops": 12,
        "marks": 0,
        "forward": {"wire_wait": summ, "sojourn": {**summ, "p50_ns": 0.9e6}, "flow_queues": 2},
        "flows": [
            {
                "delivered_bytes": 500,
                "timeouts": 0,
                "recoveries": 4,
                "ecn_reductions": 0,
                "ss_exit_s": 0.5,
                "ss_exit_cwnd": 301.0,
                "ss_exit_reason": "loss",
            },
            {
                "delivered_bytes": 510,
                "timeouts": 0,
                "recoveries": 2,
                "ecn_reductions": 0,
                "ss_exit_s": -1.0,
                "ss_exit_cwnd": -1.0,
                "ss_exit_reason": "",
            },
        ],
    }
    n3 = ns3_metrics(raw)
    ok(n3["p50"] == 1.1e6 and n3["qdisc_p50"] == 0.9e6, "ns-3: wire wait checked, qdisc kept")
    checks = compare_metrics(sl, n3, pie=False, t_ns=t)
    ok(all(c.ok for c in checks.values()), "close synthetic numbers pass every check")
    raw["forward"]["wire_wait"] = {**summ, "p99_ns": 20e6}
    checks2 = compare_metrics(sl, ns3_metrics(raw), pie=False, t_ns=t)
    ok(not checks2["p99"].ok and checks2["p50"].ok, "a p99 twice as long misses alone")
    rows = [
        {
            "name": "synthetic",
            "startlab": sl,
            "ns3": n3,
            "checks": {m: c.__dict__ for m, c in checks2.items()},
        },
        {"name": "broken", "error": "startlab: boom"},
    ]
    table = markdown(rows)
    ok(
        "| synthetic |" in table
        and "✗" in table
        and "boom" in table
        and f"{len(METRICS) - 1} of {len(METRICS)} checks pass" in table,
        "the Markdown table",
    )
    json.dumps({"tolerances": tolerances(), "scenarios": rows})
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("compare", help="run the plan in startlab and ns-3, print the table")
    p.add_argument(
        "--startlab",
        default=str(ROOT / ".venv" / "bin" / "startlab"),
        help="the startlab CLI (default: the project's .venv)",
    )
    p.add_argument(
        "--ns3-python",
        default=str(HERE / ".venv" / "bin" / "python"),
        help="a Python with the ns3 package (default: bench/ns3/.venv)",
    )
    p.add_argument("--json", help="write every number here")
    p.add_argument("--only", help="comma-separated scenario names")
    p.add_argument("--workdir", help="keep the runs' outputs here (default: a temp dir)")
    p.add_argument(
        "--trace", action="store_true", help="also write ns-3's flow-0 cwnd and queue events"
    )
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("table", help="print the table of a --json file again")
    p.add_argument("--from", dest="source", required=True)
    p.set_defaults(func=cmd_table)
    p = sub.add_parser("selftest", help="plan files and comparison logic, without ns-3")
    p.set_defaults(func=cmd_selftest)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
