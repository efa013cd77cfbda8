"""One scenario in both worlds: the simulator and Linux's TCP over the link emulator, side by
side (``startlab compare``).

The kernel world is not deterministic: a comparison is one kernel run against the simulation,
and the differences table says how far apart they are, not whether they are equal. Repeat the
comparison (or sweep with ``world = "kernel"``) to see the kernel's spread.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from startlab import figures, kernel
from startlab.result import NS_PER_S, Result
from startlab.result import run as simulate
from startlab.scenario import Scenario

__all__ = ["Comparison", "compare", "differences"]

DIFFERENCE_SCHEMA = {
    "quantity": pl.String(),
    "subject": pl.String(),
    "unit": pl.String(),
    "simulator": pl.String(),
    "kernel": pl.String(),
    "simulator_value": pl.Float64(),
    "kernel_value": pl.Float64(),
    "difference": pl.Float64(),
    "relative": pl.Float64(),
}
"""One row per compared quantity: its display in each world, the values (null where a world
has none, such as a slow start that never ended), kernel − simulator, and that difference
relative to the simulator's value."""

_FLOW_QUANTITIES = [
    # (column of flows, name, unit, scale for display, display format)
    ("ss_exit_s", "slow-start exit time", "s", 1.0, "{:.3f}"),
    ("ss_exit_cwnd", "slow-start exit cwnd", "segments", 1.0, "{:.0f}"),
    ("goodput_bps", "goodput", "Mbit/s", 1e-6, "{:.2f}"),
    ("retransmissions", "retransmissions", "packets", 1.0, "{:.0f}"),
    ("timeouts", "timeouts", "", 1.0, "{:.0f}"),
    ("completion_s", "completion time", "s", 1.0, "{:.3f}"),
]


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, str):
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def _row(
    quantity: str, subject: str, unit: str, sim: Any, ker: Any, scale: float, form: str
) -> dict[str, Any]:
    a, b = _number(sim), _number(ker)
    a = None if a is None else a * scale
    b = None if b is None else b * scale

    def shown(raw: Any, x: float | None) -> str:
        if isinstance(raw, str):
            return raw
        return "-" if x is None else form.format(x)

    diff = None if a is None or b is None else b - a
    rel = None if diff is None or not a else diff / a
    return {
        "quantity": quantity,
        "subject": subject,
        "unit": unit,
        "simulator": shown(sim, a),
        "kernel": shown(ker, b),
        "simulator_value": a,
        "kernel_value": b,
        "difference": diff,
        "relative": rel,
    }


def differences(sim: Result, ker: Result) -> pl.DataFrame:
    """The differences table of two results of one scenario: per flow the slow-start exit
    (time, cwnd, reason), goodput, retransmissions, timeouts and completion time; the
    utilization of every ``[[measure.window]]``; and the drops of every link where either world
    dropped."""
    rows: list[dict[str, Any]] = []
    sim_flows = {f["flow"]: f for f in sim.flows.iter_rows(named=True)}
    for f in ker.flows.iter_rows(named=True):
        s = sim_flows.get(f["flow"])
        if s is None:
            continue
        subject = f"flow {f['flow']} ({f['label']})"
        for column, name, unit, scale, form in _FLOW_QUANTITIES:
            rows.append(_row(name, subject, unit, s.get(column), f.get(column), scale, form))
        rows.append(
            _row(
                "slow-start exit reason",
                subject,
                "",
                s["ss_exit_reason"] or "-",
                f["ss_exit_reason"] or "-",
                1.0,
                "{}",
            )
        )
    for s, k in zip(
        sim.windows.iter_rows(named=True), ker.windows.iter_rows(named=True), strict=False
    ):
        subject = f"{s['link']} [{s['from_ns'] / NS_PER_S:g}, {s['to_ns'] / NS_PER_S:g}] s"
        rows.append(
            _row("utilization", subject, "%", s["utilization"], k["utilization"], 100.0, "{:.1f}")
        )
    for s, k in zip(sim.links.iter_rows(named=True), ker.links.iter_rows(named=True), strict=False):
        if s["drops"] or k["drops"]:
            name = f"{s['name']} ({s['alias']})" if s["alias"] else s["name"]
            rows.append(_row("drops", name, "packets", s["drops"], k["drops"], 1.0, "{:.0f}"))
    return pl.DataFrame(rows, schema=DIFFERENCE_SCHEMA)


def markdown(table: pl.DataFrame) -> str:
    """The differences table as Markdown."""
    lines = [
        "| quantity | subject | unit | simulator | kernel | kernel − simulator |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in table.iter_rows(named=True):
        delta = "" if r["difference"] is None else f"{r['difference']:+.4g}"
        if r["relative"] is not None:
            delta += f" ({100 * r['relative']:+.1f} %)"
        lines.append(
            f"| {r['quantity']} | {r['subject']} | {r['unit']} | {r['simulator']} "
            f"| {r['kernel']} | {delta} |"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, eq=False)
class Comparison:
    """A scenario's simulation and kernel run, and how they differ."""

    simulator: Result
    kernel: Result
    differences: pl.DataFrame
    """:data:`DIFFERENCE_SCHEMA`: one row per compared quantity."""

    def write(self, directory: str | os.PathLike[str], *, plots: bool = True) -> list[Path]:
        """Write ``simulator/`` and ``kernel/`` (each a run directory), ``differences.parquet``
        and ``differences.md``, and, unless ``plots=False``, ``cwnd.png`` and ``queue.png`` with
        both worlds overlaid."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written = self.simulator.write(directory / "simulator", plots=plots)
        written += self.kernel.write(directory / "kernel", plots=plots)
        table = directory / "differences.parquet"
        self.differences.write_parquet(table)
        text = directory / "differences.md"
        text.write_text(
            f"# {self.simulator.name}: simulator and kernel\n\n"
            f"Kernel {self.kernel.kernel.get('kernel_release', '?')}; one kernel run (its "
            "spread over repetitions is not in this table).\n\n" + markdown(self.differences),
            encoding="utf-8",
        )
        written += [table, text]
        if plots:
            worlds = {"simulator": self.simulator, "kernel": self.kernel}
            written.append(
                figures.series_figure(
                    worlds,
                    [{"y": "cwnd"}, {"y": "ssthresh"}],
                    directory / "cwnd.png",
                    title=f"{self.simulator.name}: cwnd and ssthresh in both worlds",
                )
            )
            if self.simulator.queue_series.height and self.kernel.queue_series.height:
                links = self.simulator.queue_series["link_name"].unique(maintain_order=True)
                written.append(
                    figures.series_figure(
                        worlds,
                        [{"y": "queue", "link": name} for name in links.to_list()],
                        directory / "queue.png",
                        title=f"{self.simulator.name}: queue length in both worlds",
                    )
                )
        return written


def _same_algorithm_in_both_worlds(scenario: Scenario) -> Scenario:
    """BBRv3 runs in the kernel as its eBPF port, with the signals mainline Linux gives a
    struct_ops program; a BBRv3 flow that does not choose its signals runs with those in the
    simulator too, so that both worlds run one algorithm (docs/algorithms/bbr3.md)."""
    overrides = [
        f'flows.{i}.cc_params.signals="mainline"'
        for i, flow in enumerate(scenario.to_dict().get("flows", []))
        if flow.get("cc") == "bbr3" and "signals" not in (flow.get("cc_params") or {})
    ]
    return scenario.with_overrides(overrides) if overrides else scenario


def compare(
    scenario: Scenario | Mapping[str, Any] | str | os.PathLike[str],
    *,
    overrides: Iterable[str] = (),
    realtime_priority: int | None = 50,
    spin_us: int = 30,
) -> Comparison:
    """Run ``scenario`` in the simulator and on the kernel. The kernel's refusals (a field it
    cannot honour) come before either world runs. A BBRv3 flow that does not choose its
    ``signals`` runs with mainline Linux's in both worlds (the kernel's port has no other)."""
    checked = _same_algorithm_in_both_worlds(Scenario.of(scenario, overrides=overrides))
    kernel.check(checked)
    sim = simulate(checked)
    ker = kernel.run(checked, realtime_priority=realtime_priority, spin_us=spin_us)
    return Comparison(sim, ker, differences(sim, ker))
