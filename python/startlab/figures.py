"""Every figure startlab draws: the plots of a run (congestion window, queue length, goodput
over time), the plots of a sweep (a metric against an axis, mean and confidence interval over
the seeds) and the figures of the reproduction (our numbers or time series next to the paper's).

Figures are drawn on their own :class:`matplotlib.figure.Figure` with the Agg renderer, without
pyplot, so plotting changes no global matplotlib state (backend, open figures, rcParams).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from startlab.sweep.model import (
    FAMILIES,
    NS_PER_S,
    Axis,
    MetricColumn,
    PlanShape,
    file_name,
    format_number,
    parse_quantity,
    toml_value,
)
from startlab.sweep.table import aggregate, axis_cell

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from startlab.sweep.model import PlotSpec

__all__ = [
    "comparison_figure",
    "cwnd",
    "draw_plot",
    "draw_plots",
    "queue",
    "series_figure",
    "throughput",
    "write_all",
]


class RunTables(Protocol):
    """What the figures of a run read of it (:class:`startlab.result.Result` is one): its name,
    its tables and its goodput per interval. Declared here so that drawing a run does not
    import the module that holds runs."""

    @property
    def name(self) -> str: ...
    @property
    def flows(self) -> pl.DataFrame: ...
    @property
    def flow_series(self) -> pl.DataFrame: ...
    @property
    def queue_series(self) -> pl.DataFrame: ...
    @property
    def links(self) -> pl.DataFrame: ...
    def throughput(self, interval_s: float) -> pl.DataFrame: ...


# == the plots of a run ===========================================================================

MAX_LEGEND_FLOWS = 10
"""Up to this many flows are drawn and named one by one; beyond, flows with the same label (such
as the arrivals of one ``tcp-arrivals`` entry) share a color and a legend entry, and their
goodput is summed."""

_FIGSIZE = (10.0, 5.0)
_DPI = 110


def cwnd(result: RunTables, path: str | os.PathLike[str]) -> Path:
    """Congestion window (solid) and slow-start threshold (dashed, where finite) of every TCP
    flow over time, in segments; beneath, for flows of a model-based controller (BBR), the
    bandwidth estimate in Mbit/s with the bottleneck rate dotted."""
    series = result.flow_series.sort("flow", "time_ns")
    with_model = series.filter(pl.col("model_bw_bps").is_not_null()) if series.height else series
    if with_model.height:
        fig = _canvas((_FIGSIZE[0], _FIGSIZE[1] * 1.6), layout="constrained")
        ax, bw_ax = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    else:
        fig, ax = _figure()
        bw_ax = None
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
            # Null (unlimited) ssthresh is NaN here: not drawn.
            ssthresh = samples["ssthresh"].to_numpy().astype(np.float64)
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
    if bw_ax is not None:
        ax.set_xlabel("")
        _bandwidth_estimates(result, bw_ax, with_model, groups, many)
    return _save(fig, path)


def _bandwidth_estimates(
    result: RunTables,
    ax: Axes,
    series: pl.DataFrame,
    groups: list[tuple[str, list[int]]],
    many: bool,
) -> None:
    """The bandwidth estimate (payload, Mbit/s) of each flow that has one, in its cwnd color."""
    by_flow = {int(key[0]): part for key, part in series.group_by("flow", maintain_order=True)}
    for color, (_, flows) in zip(_colors(len(groups)), groups, strict=True):
        for flow in flows:
            samples = by_flow.get(flow)
            if samples is None:
                continue
            ax.plot(
                samples["time_s"].to_numpy(),
                samples["model_bw_bps"].to_numpy() / 1e6,
                color=color,
                lw=0.8 if many else 1.2,
                drawstyle="steps-post",
            )
    capacity = _capacity_bps(result)
    if capacity:
        ax.axhline(capacity / 1e6, color="gray", ls=":", lw=1.0, label="bottleneck rate")
        ax.legend(loc="lower right", fontsize="small")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Mbit/s")
    ax.set_title("Bandwidth estimate (model-based controllers)", fontsize="medium")
    ax.grid(True, alpha=0.3)


def queue(result: RunTables, path: str | os.PathLike[str]) -> Path:
    """Queue length (packets waiting) of every sampled link over time, one panel per link,
    with the queue limit as a dotted line."""
    series = result.queue_series
    links = series["link"].unique(maintain_order=True).sort().to_list() if series.height else []
    fig = _canvas((_FIGSIZE[0], max(_FIGSIZE[1], 2.2 * len(links) + 1)), layout="constrained")
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
        limit = row.get("limit_packets")  # null when the queue is limited in bytes
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
    result: RunTables, path: str | os.PathLike[str], *, interval_s: float | None = None
) -> Path:
    """Goodput (in-order bytes delivered) of every TCP flow over time, in Mbit/s, averaged over
    ``interval_s`` (by default about 1/100 of the run), with the bottleneck rate dotted, or, when
    it changes over time, its capacity shaded underneath."""
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
        varying = _capacity_series(result)
        capacity = _capacity_bps(result)
        if varying is not None:
            ax.fill_between(
                varying["time_s"].to_numpy(),
                varying["rate_bps"].to_numpy() / 1e6,
                step="post",
                color="gray",
                alpha=0.18,
                lw=0,
                label="bottleneck capacity",
            )
            top = float(varying["rate_bps"].max()) / 1e6  # type: ignore[arg-type]
            ax.set_ylim(top=max(ax.get_ylim()[1], top * 1.08))
        elif capacity:
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


def write_all(result: RunTables, directory: str | os.PathLike[str]) -> list[Path]:
    """Write ``cwnd.png``, ``queue.png`` and ``throughput.png`` into ``directory``."""
    directory = Path(directory)
    return [
        cwnd(result, directory / "cwnd.png"),
        queue(result, directory / "queue.png"),
        throughput(result, directory / "throughput.png"),
    ]


# -- helpers -----------------------------------------------------------------------------------


def _figure() -> tuple[Figure, Axes]:
    fig = _canvas(_FIGSIZE, layout="constrained")
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


def _groups(result: RunTables) -> list[tuple[str, list[int]]]:
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


def _capacity_series(result: RunTables) -> pl.DataFrame | None:
    """The bottleneck's scheduled rate over time, if it was sampled and it changes."""
    rows = result.links.filter(pl.col("alias") == "bottleneck")
    if rows.height == 0 or "rate_bps" not in result.queue_series.columns:
        return None
    samples = (
        result.queue_series.filter(pl.col("link") == rows["link"][0])
        .select("time_s", "rate_bps")
        .sort("time_s")
    )
    if samples.height < 2 or samples["rate_bps"].n_unique() < 2:
        return None
    return samples


def _capacity_bps(result: RunTables) -> float | None:
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


# == the plots of a sweep =========================================================================


def draw_plots(plan: PlanShape, table: pl.DataFrame, directory: str | Path) -> list[Path]:
    """Draw every plot of the plan from its results table into ``directory``; returns the
    files written."""
    directory = Path(directory)
    written: list[Path] = []
    for spec in plan.plots:
        written += draw_plot(plan, spec, table, directory)
    return written


def draw_plot(plan: PlanShape, spec: PlotSpec, table: pl.DataFrame, directory: Path) -> list[Path]:
    """Draw one plot (one file per combination of the axes it leaves free)."""
    data = table
    for name, chosen in spec.where:
        data = data.filter(pl.col(name).is_in([axis_cell(plan.axis(name), v) for v in chosen]))
    fixed = {spec.x, spec.series, spec.facet, *spec.over, *(n for n, _ in spec.where)}
    # A dimension of the grid (an axis, or a [zip] group whose axes vary together) that the
    # plot doesn't use gives one file per value; one used through any of its axes is bound.
    free = [
        dimension
        for dimension in plan.dimensions
        if len(dimension[0].values) > 1 and not any(a.name in fixed for a in dimension)
    ]
    metric = next((m for m in plan.metrics if m.name == spec.y), None)
    scale, ylabel = _y_unit(spec.y, metric, data)
    written = []
    for combination in _combinations(free):
        part = data
        for axis, value in combination:
            part = part.filter(pl.col(axis.name) == axis_cell(axis, value))
        facets = plan.axis(spec.facet).values if spec.facet else (None,)
        ncols = min(3, len(facets))
        nrows = math.ceil(len(facets) / ncols)
        fig = _canvas((5.0 * ncols + 0.6, 3.8 * nrows + 0.8), layout="constrained")
        grid = fig.subplots(nrows, ncols, squeeze=False, sharey=True, sharex=True)
        for index, facet_value in enumerate(facets):
            ax = grid[index // ncols][index % ncols]
            panel = part
            if spec.facet:
                panel = panel.filter(
                    pl.col(spec.facet) == axis_cell(plan.axis(spec.facet), facet_value)
                )
                ax.set_title(f"{spec.facet} = {_label(facet_value)}", fontsize="medium")
            _draw_panel(ax, plan, spec, panel, scale)
            ax.set_ylabel(ylabel if index % ncols == 0 else "")
            ax.set_xlabel(_x_label(plan.axis(spec.x)) if index // ncols == nrows - 1 else "")
        for index in range(len(facets), nrows * ncols):
            grid[index // ncols][index % ncols].set_visible(False)
        first = grid[0][0]  # the y axis is shared: set its limits once every panel is drawn
        if spec.ylim:
            first.set_ylim(spec.ylim)
        elif spec.yscale == "linear" and first.get_ylim()[0] > 0:
            first.set_ylim(bottom=0)
        handles, labels = grid[0][0].get_legend_handles_labels()
        if spec.series and handles:
            fig.legend(
                handles,
                labels,
                title=spec.series,
                loc="outside right upper",
                fontsize="small",
            )
        title = spec.title or f"{spec.y} vs {spec.x}"
        if combination:
            title += " — " + ", ".join(f"{a.name} = {_label(v)}" for a, v in combination)
        bars = {
            "ci95": "95 % CI",
            "std": "± 1 standard deviation",
            "minmax": "min to max",
            "none": "",
        }[spec.errorbars]
        over = f"mean over {', '.join(spec.over)}" if spec.over else "one run per point"
        note = f"{plan.name}: {over}" + (f", bars: {bars}" if bars and spec.over else "")
        fig.suptitle(f"{title}\n{note}", fontsize="medium")
        suffix = ",".join(f"{a.name}={toml_value(v).strip(chr(34))}" for a, v in combination)
        name = f"{spec.name}{'--' + file_name(suffix) if suffix else ''}.png"
        written.append(_save(fig, directory / name))
    return written


def _combinations(dimensions: Sequence[Sequence[Axis]]) -> list[list[tuple[Axis, Any]]]:
    """Every combination of the dimensions' values, as (axis, value) pairs."""
    choices = [range(len(dimension[0].values)) for dimension in dimensions]
    return [
        [
            (axis, axis.values[i])
            for dimension, i in zip(dimensions, chosen, strict=True)
            for axis in dimension
        ]
        for chosen in itertools.product(*choices)
    ]


def _draw_panel(
    ax: Axes, plan: PlanShape, spec: PlotSpec, panel: pl.DataFrame, scale: float
) -> None:
    x_axis = plan.axis(spec.x)
    positions, numeric = _x_positions(x_axis)
    series_values = plan.axis(spec.series).values if spec.series else (None,)
    by = [spec.x] + ([spec.series] if spec.series else [])
    stats = aggregate(panel, spec.y, by) if panel.height else None
    count = len(series_values)
    log_x = numeric and (spec.xscale or ("log" if x_axis.log else "linear")) == "log"
    for i, series_value in enumerate(series_values):
        rows = stats
        if rows is not None and spec.series:
            rows = rows.filter(
                pl.col(spec.series) == axis_cell(plan.axis(spec.series), series_value)
            )
        if rows is None or rows.height == 0:
            continue
        by_x = {_hashable(r[spec.x]): r for r in rows.iter_rows(named=True)}
        xs, ys, lows, highs = [], [], [], []
        for value, position in zip(x_axis.values, positions, strict=True):
            row = by_x.get(_hashable(axis_cell(x_axis, value)))
            if row is None or row["mean"] is None:
                continue
            shift = (i - (count - 1) / 2) / count  # side by side, so error bars don't overlap
            mean = row["mean"] * scale
            low, high = _error(row, spec.errorbars, scale)
            xs.append(_dodge(position, shift, positions, numeric, log_x))
            ys.append(mean)
            lows.append(low)
            highs.append(high)
        label = _label(series_value) if spec.series else None
        color = f"C{i % 10}"
        ax.errorbar(
            xs,
            ys,
            yerr=[lows, highs] if spec.errorbars != "none" else None,
            fmt="o-" if numeric else "o",
            color=color,
            label=label,
            capsize=3,
            markersize=4,
            lw=1.3,
        )
    if numeric:
        xscale = spec.xscale or ("log" if x_axis.log else "linear")
        ax.set_xscale(xscale)
        if len(positions) <= 12:  # label the values of the axis themselves
            from matplotlib.ticker import NullLocator

            ax.set_xticks(positions, [format_number(p, 4) for p in positions])
            ax.xaxis.set_minor_locator(NullLocator())
    else:
        ax.set_xticks(positions, [_label(v) for v in x_axis.values])
        if spec.xscale == "log":
            ax.set_xscale("log")
    ax.set_yscale(spec.yscale)
    ax.grid(True, alpha=0.3)


def _dodge(
    position: float, shift: float, positions: Sequence[float], numeric: bool, log: bool
) -> float:
    """Move a point by ``shift`` (-0.5 to 0.5) of a fraction of the axis' smallest gap."""
    if not numeric:
        return position + shift * 0.7
    if log and all(p > 0 for p in positions):
        logs = sorted(math.log(p) for p in positions)
        gap = min((b - a for a, b in itertools.pairwise(logs)), default=1.0) or 1.0
        return position * math.exp(shift * gap * 0.12)
    ordered = sorted(positions)
    gap = min((b - a for a, b in itertools.pairwise(ordered)), default=1.0) or 1.0
    return position + shift * gap * 0.12


def _hashable(value: Any) -> Any:
    return value if not isinstance(value, float) else round(value, 12)


def _error(row: Mapping[str, Any], errorbars: str, scale: float) -> tuple[float, float]:
    if errorbars == "ci95":
        half = row["ci95"] or 0.0
        return half * scale, half * scale
    if errorbars == "std":
        half = row["std"] or 0.0
        return half * scale, half * scale
    if errorbars == "minmax":
        # Equal values average to a mean a rounding error outside [min, max]: never below 0.
        low, high = row["mean"] - row["min"], row["max"] - row["mean"]
        return max(low, 0.0) * scale, max(high, 0.0) * scale
    return 0.0, 0.0


def _x_positions(axis: Axis) -> tuple[list[float], bool]:
    values = axis.values
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values], True
    quantities = [parse_quantity(v) for v in values]
    if all(q is not None for q in quantities) and len({q.family for q in quantities if q}) == 1:
        factor, _ = _display_unit(quantities[0].family, [q.si for q in quantities if q])  # type: ignore[union-attr]
        return [q.si * factor for q in quantities if q], True
    return [float(i) for i in range(len(values))], False


def _x_label(axis: Axis) -> str:
    quantities = [parse_quantity(v) for v in axis.values]
    if all(q is not None for q in quantities) and len({q.family for q in quantities if q}) == 1:
        _, unit = _display_unit(quantities[0].family, [q.si for q in quantities if q])  # type: ignore[union-attr]
        return f"{axis.name} ({unit})"
    return axis.name


def _display_unit(family: str, values: Sequence[float]) -> tuple[float, str]:
    top = max((abs(v) for v in values), default=0.0)
    steps = {
        "duration": [(1.0, 1.0, "s"), (1e-3, 1e3, "ms"), (0.0, 1e6, "µs")],
        "rate": [
            (1e9, 1e-9, "Gbit/s"),
            (1e6, 1e-6, "Mbit/s"),
            (1e3, 1e-3, "kbit/s"),
            (0.0, 1.0, "bit/s"),
        ],
        "size": [(1e9, 1e-9, "GB"), (1e6, 1e-6, "MB"), (1e3, 1e-3, "KB"), (0.0, 1.0, "B")],
    }.get(family)
    if steps is None:
        return 1.0, FAMILIES[family][0] if family in FAMILIES else ""
    for threshold, factor, unit in steps:
        if top >= threshold:
            return factor, unit
    return steps[-1][1], steps[-1][2]


def _y_unit(y: str, metric: MetricColumn | None, data: pl.DataFrame) -> tuple[float, str]:
    if metric is None:
        return 1.0, {"wall_time_s": "simulation wall time (s)", "events": "events"}.get(y, y)
    unit = metric.unit
    family = {"bit/s": "rate", "bytes": "size", "s": "duration"}.get(unit)
    if family is None:
        suffix = "" if unit in ("fraction", "index", "count") else f" ({unit})"
        return 1.0, f"{y}{suffix}"
    values = data[y].cast(pl.Float64).drop_nulls().to_numpy() if y in data.columns else np.zeros(0)
    factor, shown = _display_unit(family, [float(v) for v in values if np.isfinite(v)])
    return factor, f"{y} ({shown})"


def _label(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


# == the figures of the reproduction ==============================================================


def comparison_figure(
    data: pl.DataFrame,
    spec: Mapping[str, Any],
    paper: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    path: str | os.PathLike[str],
    *,
    title: str,
    x_column: str | None = None,
    seeds: int = 1,
) -> Path | None:
    """Our numbers against an axis next to the paper's: ``data`` has one row per point (a
    ``<y>_ci95`` column gives error bars), ``spec`` is the experiment's ``[figure]`` (``x``,
    ``y`` one column or a list, ``series``, ``scale``, ``x_scale``, ``xlabel``, ``ylabel``,
    ``xlog``, ``ylog``, ``ylim``), ``paper`` the paper's ``(where, values)`` rows, ``x_column``
    the numeric copy of the x axis. ``None`` when there is nothing to draw."""
    x = spec.get("x")
    # `y` is one column, or several drawn as one line each (``y = ["ncl_blast", "ncl_queue"]``).
    wanted = spec.get("y")
    listed: list[Any] = wanted if isinstance(wanted, list) else [wanted]
    columns: list[str] = [str(c) for c in listed if c and c in data.columns]
    if not x or not columns:
        return None
    xcol = x_column if x_column and x_column in data.columns else x
    scale = float(spec.get("scale", 1.0))
    xscale = float(spec.get("x_scale", 1.0))
    series = spec.get("series")
    fig = _canvas((9.5, 3.6), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    categories: list[Any] = []
    position: dict[Any, float] = {}
    if xcol in data.columns and not data[xcol].dtype.is_numeric():
        # A categorical x (algorithms, modes): one position per value, in the data's order.
        categories = list(dict.fromkeys(data[xcol].to_list()))
        position = {c: float(i) for i, c in enumerate(categories)}
        data = data.with_columns(
            pl.col(xcol).replace_strict(position, return_dtype=pl.Float64).alias("__x")
        )
        xcol, xscale = "__x", 1.0
    groups = data.partition_by(series, maintain_order=True) if series else [data]
    for g, y in [(g, y) for g in groups for y in columns]:
        g = g.sort(xcol)
        # A line is named by its series value and, when several columns are drawn, the column.
        parts = ([str(g[series][0])] if series else []) + ([y] if len(columns) > 1 else [])
        label = " ".join(parts) or "startlab"
        xs = [v * xscale for v in g[xcol].to_list()]
        ys: list[Any] = [v * scale if v is not None else None for v in g[y].to_list()]
        ci_col = f"{y}_ci95"
        errs = [(e or 0.0) * scale for e in g[ci_col].to_list()] if ci_col in g.columns else None
        name = f"startlab: {label}" if parts else "startlab"
        line = ax.errorbar(xs, ys, yerr=errs, marker="o", ms=4, capsize=3, label=name)
        color = line[0].get_color()
        rows = [(where, values) for where, values in paper if y in values]
        if series:
            rows = [(w, v) for w, v in rows if str(w.get(series)) == str(g[series][0])]
        if rows:
            # The paper's points at their own x (the axis value they name), all of them, also
            # where the quick version did not run that point.
            pts = []
            for where, values in rows:
                xv = position.get(where.get(x)) if categories else _number(where.get(x))
                if xv is not None:
                    pts.append((xv * xscale, values[y] * scale))
            pts.sort()
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                linestyle="--",
                marker="s",
                mfc="none",
                color=color,
                label=f"paper: {label}" if series else "paper",
            )
    if categories:
        ax.set_xticks(range(len(categories)), [str(c) for c in categories], fontsize=8)
    ax.set_xlabel(spec.get("xlabel", x))
    ax.set_ylabel(spec.get("ylabel", ", ".join(columns)))
    if spec.get("xlog"):
        ax.set_xscale("log")
    if spec.get("ylog"):
        ax.set_yscale("log")
    if "ylim" in spec:
        ax.set_ylim(*spec["ylim"])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    note = f"; mean of {seeds} seeds, bars: 95 % CI" if seeds > 1 else ""
    ax.set_title(f"{title}{note}", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


SERIES = {
    "cwnd": ("flow_series", "cwnd", "cwnd (segments)"),
    "ssthresh": ("flow_series", "ssthresh", "ssthresh (segments)"),
    "queue": ("queue_series", "queue_packets", "queue (packets)"),
    "rtt": ("flow_series", "srtt_ns", "smoothed RTT (ms)"),
}
"""What a panel of :func:`series_figure` can show besides ``goodput``: table, column, label."""


def series_figure(
    results: Mapping[str, RunTables],
    panels: Sequence[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    title: str,
) -> Path:
    """Time series of several runs (label -> result), one panel per entry of ``panels``:
    ``y`` is ``cwnd``, ``ssthresh``, ``queue``, ``rtt`` (:data:`SERIES`) or ``goodput``
    (averaged over ``interval`` seconds); ``flows`` or ``link`` choose what is drawn;
    ``xlim``, ``ylim``, ``ylabel`` as in matplotlib."""
    panels = list(panels) or [{"y": "cwnd"}]
    fig = _canvas((9.5, 3.6 * len(panels)), dpi=100)
    axes = [fig.add_subplot(len(panels), 1, i + 1) for i in range(len(panels))]
    for ax, panel in zip(axes, panels, strict=False):
        what = panel.get("y", "cwnd")
        for label, result in results.items():
            names = _flow_names(result)
            if what == "goodput":
                rates = result.throughput(float(panel.get("interval", 0.5)))
                flows = panel.get("flows")
                if flows is not None:
                    rates = rates.filter(pl.col("flow").is_in(flows))
                parts = rates.partition_by("flow", maintain_order=True)
                for g in parts:
                    suffix = f" {names.get(g['flow'][0], '')}" if len(parts) > 1 else ""
                    ax.step(
                        g["start_s"], g["goodput_bps"] / 1e6, where="post", label=f"{label}{suffix}"
                    )
                ax.set_ylabel("goodput (Mbit/s)")
                continue
            table, column, ylabel = SERIES[what]
            df = getattr(result, table)
            if what == "queue":
                link = panel.get("link")
                if link is not None:
                    ids = result.links.filter((pl.col("name") == link) | (pl.col("alias") == link))
                    df = df.filter(pl.col("link").is_in(ids["link"].to_list()))
                groups = df.partition_by("link", maintain_order=True)
            else:
                flows = panel.get("flows")
                if flows is not None:
                    df = df.filter(pl.col("flow").is_in(flows))
                groups = df.partition_by("flow", maintain_order=True)
            for g in groups:
                ys = g[column].cast(pl.Float64)
                if what == "rtt":
                    ys = ys / 1e6
                suffix = ""
                if what != "queue" and len(groups) > 1:
                    suffix = f" {names.get(g['flow'][0], 'flow ' + str(g['flow'][0]))}"
                elif what == "queue" and len(groups) > 1:
                    suffix = f" {g['link_name'][0]}"
                ax.plot(
                    g["time_ns"].to_numpy() / NS_PER_S,
                    ys.to_numpy(),
                    label=f"{label}{suffix}",
                    lw=1.2,
                )
            ax.set_ylabel(panel.get("ylabel", ylabel))
        if "xlim" in panel:
            ax.set_xlim(*panel["xlim"])
        if "ylim" in panel:
            ax.set_ylim(*panel["ylim"])
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_title(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def _flow_names(result: RunTables) -> dict[int, str]:
    flows = result.flows
    return dict(zip(flows["flow"].to_list(), flows["label"].to_list(), strict=True))


# == shared =======================================================================================


def _canvas(
    size: tuple[float, float], *, dpi: int = _DPI, layout: Literal["constrained"] | None = None
) -> Figure:
    """A figure of its own, drawn by Agg (no pyplot state)."""
    fig = Figure(figsize=size, dpi=dpi, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _number(value: Any) -> float | None:
    """A value as a number: SI units for quantities (``"20ms"`` -> 0.02); ``None`` if it is
    neither."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    quantity = parse_quantity(value)
    return quantity.si if quantity is not None else None
