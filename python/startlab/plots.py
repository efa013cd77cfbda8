"""PNG plots of a run: congestion window, queue length and goodput over time.

Figures are drawn on their own :class:`matplotlib.figure.Figure` with the Agg renderer, without
pyplot, so plotting changes no global matplotlib state (backend, open figures, rcParams).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from startlab.result import Result

__all__ = ["cwnd", "queue", "throughput", "write_all"]

MAX_LEGEND_FLOWS = 10
"""Up to this many flows are drawn and named one by one; beyond, flows with the same label (such
as the arrivals of one ``tcp-arrivals`` entry) share a color and a legend entry, and their
goodput is summed."""

_FIGSIZE = (10.0, 5.0)
_DPI = 110


def cwnd(result: Result, path: str | os.PathLike[str]) -> Path:
    """Congestion window (solid) and slow-start threshold (dashed, where finite) of every TCP
    flow over time, in segments."""
    fig, ax = _figure()
    series = result.flow_series.sort("flow", "time_ns")
    groups = _groups(result)
    many = sum(len(flows) for _, flows in groups) > MAX_LEGEND_FLOWS
    by_flow = {int(key[0]): part for key, part in series.group_by("flow", maintain_order=True)}
    for color, (name, flows) in zip(_colors(len(groups)), groups, strict=True):
        for i, flow in enumerate(flows):
            samples = by_flow[flow]
            t = samples["time_s"].to_numpy()
            label = name if i == 0 else None
            ax.plot(
                t,
                samples["cwnd"].to_numpy(),
                color=color,
                lw=0.8 if many else 1.2,
                label=label,
                zorder=2 if len(flows) > 1 else 3,
            )
            ssthresh = samples["ssthresh"].to_numpy().astype(np.float64)
            ssthresh[~np.isfinite(ssthresh)] = np.nan
            if not many and np.isfinite(ssthresh).any():
                ax.plot(t, ssthresh, color=color, lw=0.9, ls="--", alpha=0.8)
    ax.set_ylim(bottom=0)
    if not groups:
        note = "no flow series recorded"
    elif many:
        note = "cwnd of every flow"
    else:
        note = "solid: cwnd, dashed: ssthresh"
    _finish(
        fig,
        ax,
        title=f"Congestion window — {result.name}",
        ylabel="segments",
        legend=len(groups) <= MAX_LEGEND_FLOWS,
        note=note,
    )
    return _save(fig, path)


def queue(result: Result, path: str | os.PathLike[str]) -> Path:
    """Queue length (packets waiting) of every sampled link over time, one panel per link,
    with the queue limit as a dotted line."""
    series = result.queue_series
    links = series["link"].unique(maintain_order=True).sort().to_list() if series.height else []
    fig = Figure(
        figsize=(_FIGSIZE[0], max(_FIGSIZE[1], 2.2 * len(links) + 1)),
        dpi=_DPI,
        layout="constrained",
    )
    FigureCanvasAgg(fig)
    axes: list[Axes] = list(fig.subplots(max(1, len(links)), 1, sharex=True, squeeze=False)[:, 0])
    info = {row["link"]: row for row in result.links.iter_rows(named=True)}
    for ax, link in zip(axes, links, strict=False):
        row = info.get(link, {})
        samples = series.filter(pl.col("link") == link).sort("time_ns")
        ax.plot(
            samples["time_s"].to_numpy(),
            samples["queue_packets"].to_numpy(),
            drawstyle="steps-post",
            lw=1.0,
            color="tab:blue",
        )
        limit = row.get("limit_packets")
        if limit is not None:
            ax.axhline(limit, color="tab:red", ls=":", lw=1.0, label=f"limit ({limit} packets)")
            ax.legend(loc="upper right", fontsize="small")
        ax.set_ylabel("packets")
        ax.set_ylim(bottom=0)
        ax.set_title(_link_title(row) if row else f"link {link}", fontsize="medium")
        ax.grid(True, alpha=0.3)
    if not links:
        axes[0].text(0.5, 0.5, "no queue series recorded", ha="center", transform=axes[0].transAxes)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(f"Queue length — {result.name}")
    return _save(fig, path)


def throughput(
    result: Result, path: str | os.PathLike[str], *, interval_s: float | None = None
) -> Path:
    """Goodput (in-order bytes delivered) of every TCP flow over time, in Mbit/s, averaged over
    ``interval_s`` (by default about 1/100 of the run), with the bottleneck rate dotted."""
    fig, ax = _figure()
    series = result.flow_series
    groups = _groups(result)
    if groups:
        end = float(series["time_s"].max())  # type: ignore[arg-type]
        step = interval_s or _nice_interval(end / 100)
        rates = result.throughput(step)
        first_start = result.flows.group_by("flow").agg(pl.col("start_s").min())
        starts = dict(zip(first_start["flow"], first_start["start_s"], strict=True))
        for color, (name, flows) in zip(_colors(len(groups)), groups, strict=True):
            start = min(starts.get(flow) or 0.0 for flow in flows)
            part = (
                rates.filter(pl.col("flow").is_in(flows), pl.col("end_s") > start)
                .group_by("start_s", "end_s")
                .agg(pl.col("goodput_bps").sum())
                .sort("start_s")
            )
            _steps(ax, part, color=color, label=name, lw=1.2)
        if len(groups) > 1:
            total = (
                rates.group_by("start_s", "end_s").agg(pl.col("goodput_bps").sum()).sort("start_s")
            )
            _steps(ax, total, color="black", label="all flows", lw=1.0, alpha=0.6)
        capacity = _capacity_bps(result)
        if capacity:
            ax.axhline(capacity / 1e6, color="gray", ls=":", lw=1.0, label="bottleneck rate")
            ax.set_ylim(top=max(ax.get_ylim()[1], capacity / 1e6 * 1.08))
        note = f"averaged over {step:g} s"
    else:
        note = "no flow series recorded"
    ax.set_ylim(bottom=0)
    _finish(
        fig,
        ax,
        title=f"Goodput — {result.name}",
        ylabel="goodput (Mbit/s)",
        legend=len(groups) <= MAX_LEGEND_FLOWS,
        note=note,
    )
    return _save(fig, path)


def write_all(result: Result, directory: str | os.PathLike[str]) -> list[Path]:
    """Write ``cwnd.png``, ``queue.png`` and ``throughput.png`` into ``directory``."""
    directory = Path(directory)
    return [
        cwnd(result, directory / "cwnd.png"),
        queue(result, directory / "queue.png"),
        throughput(result, directory / "throughput.png"),
    ]


# -- helpers -----------------------------------------------------------------------------------


def _figure() -> tuple[Figure, Axes]:
    fig = Figure(figsize=_FIGSIZE, dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def _finish(fig: Figure, ax: Axes, *, title: str, ylabel: str, legend: bool, note: str) -> None:
    ax.set_title(title)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small")
    if note:
        ax.text(
            0.995, 1.005, note, transform=ax.transAxes, ha="right", va="bottom", fontsize="x-small"
        )


def _save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    fig.savefig(path, format="png")
    return path


def _groups(result: Result) -> list[tuple[str, list[int]]]:
    """The flows of ``flow_series`` in legend groups: one per flow, or per label when there are
    more than MAX_LEGEND_FLOWS flows (then all in one group if the labels are still too many)."""
    series = result.flow_series
    if series.height == 0:
        return []
    flows = [int(f) for f in series["flow"].unique().sort().to_list()]
    info = {int(row["flow"]): row for row in result.flows.iter_rows(named=True)}
    if len(flows) <= MAX_LEGEND_FLOWS:
        return [(_flow_label(info.get(flow, {"flow": flow})), [flow]) for flow in flows]
    by_label: dict[str, list[int]] = {}
    for flow in flows:
        row = info.get(flow, {})
        key = row.get("label") or f"{row.get('kind', 'tcp')} {row.get('cc', '')}".strip()
        by_label.setdefault(key, []).append(flow)
    if len(by_label) > MAX_LEGEND_FLOWS:
        return [(f"all {len(flows)} flows", flows)]
    return [(_group_label(key, members), members) for key, members in by_label.items()]


def _flow_label(row: dict[str, Any]) -> str:
    name = f"flow {row['flow']}"
    if row.get("label"):
        name += f" {row['label']}"
    algorithm = row.get("cc") or row.get("kind") or ""
    startup = row.get("startup") or ""
    if startup and startup not in ("default", algorithm):
        algorithm += f" + {startup}"
    return f"{name} ({algorithm})" if algorithm else name


def _group_label(key: str, members: list[int]) -> str:
    return f"{key} ({len(members)} flows)" if len(members) > 1 else f"{key} (flow {members[0]})"


def _colors(n: int) -> list[Any]:
    if n <= 10:
        return [f"C{i}" for i in range(n)]
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(i / max(1, n - 1)) for i in range(n)]


def _steps(ax: Axes, rates: pl.DataFrame, **style: Any) -> None:
    if rates.height == 0:
        return
    edges = np.append(rates["start_s"].to_numpy(), rates["end_s"].to_numpy()[-1])
    values = rates["goodput_bps"].to_numpy() / 1e6
    ax.stairs(values, edges, baseline=None, **style)


def _nice_interval(target: float) -> float:
    """The smallest of 1, 2 or 5 × 10^k seconds at least ``target`` (and at least 1 ms)."""
    target = max(target, 1e-3)
    exponent = math.floor(math.log10(target))
    for mantissa in (1, 2, 5, 10):
        value = mantissa * 10.0**exponent
        if value >= target * (1 - 1e-9):
            return float(f"{value:.12g}")
    return 10.0 ** (exponent + 1)  # pragma: no cover


def _capacity_bps(result: Result) -> float | None:
    rows = result.links.filter(
        (pl.col("alias") == "bottleneck") | pl.col("alias").str.contains(r"^hop[0-9]+$")
    )
    if rows.height == 0:
        return None
    return float(rows["rate_bps"].min())  # type: ignore[arg-type]


def _link_title(row: dict[str, Any]) -> str:
    title = str(row.get("name", ""))
    if row.get("alias"):
        title += f" ({row['alias']})"
    details = []
    if row.get("rate_bps"):
        details.append(_rate(float(row["rate_bps"])))
    if row.get("queue"):
        details.append(str(row["queue"]))
    return f"{title}: {', '.join(details)}" if details else title


def _rate(bps: float) -> str:
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g} {unit}"
    return f"{bps:g} bit/s"
