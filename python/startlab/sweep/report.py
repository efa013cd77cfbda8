"""The outputs of a sweep: the results table, statistics over seeds, the plots and the
summary.

Plots follow the plan's ``[[plots]]``: a metric (``y``) against an axis (``x``), one line per
value of ``series``, one panel per value of ``facet``, the mean over the ``over`` axes (the
seeds) with its 95 % confidence interval (Student's t) as error bars. Axes that are none of
these give one file per combination of their values.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from startlab.sweep.quantity import FAMILIES, format_number, parse_quantity

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from startlab.sweep.metrics import Metric
    from startlab.sweep.plan import Axis, Point, SweepPlan

__all__ = [
    "FIXED_COLUMNS",
    "PlotSpec",
    "aggregate",
    "draw_plots",
    "parse_plots",
    "results_table",
    "t_quantile",
]

FIXED_COLUMNS = ("point", "key", "status", "error", "events", "wall_time_s")
"""Columns of every results table besides the axes, ``seed`` and the metrics."""

_PLOT_FIELDS = (
    "name",
    "x",
    "y",
    "series",
    "facet",
    "over",
    "where",
    "title",
    "xscale",
    "yscale",
    "ylim",
    "errorbars",
)
_ERRORBARS = ("ci95", "std", "minmax", "none")


# -- the table -----------------------------------------------------------------------------------


def results_table(
    plan: SweepPlan, points: Sequence[Point], records: Mapping[str, Mapping[str, Any]]
) -> pl.DataFrame:
    """One row per point, in order: ``point``, ``key``, ``status``, ``error``, the axis values
    (with a numeric copy of axes written with units: ``rtt`` and ``rtt_s``), ``seed``, the
    metrics, ``events`` and ``wall_time_s`` (of the simulation). A point without a record
    (not run yet) has status ``missing``."""
    from startlab.sweep.plan import _toml_value, numeric_column

    columns: dict[str, pl.Series] = {}
    columns["point"] = pl.Series("point", [p.index for p in points], dtype=pl.Int64)
    columns["key"] = pl.Series("key", [p.key for p in points], dtype=pl.String)
    found = [records.get(p.key) for p in points]
    columns["status"] = pl.Series(
        "status", [r["status"] if r else "missing" for r in found], dtype=pl.String
    )
    columns["error"] = pl.Series(
        "error", [r.get("error") if r else None for r in found], dtype=pl.String
    )
    for axis in plan.axes:
        values = [p.values[axis.name] for p in points]
        dtype = _axis_dtype(axis)
        if dtype == pl.String and not all(isinstance(v, str) for v in axis.values):
            values = [v if isinstance(v, str) else _toml_value(v) for v in values]
        columns[axis.name] = pl.Series(axis.name, values, dtype=dtype)
        numeric = numeric_column(axis)
        if numeric:
            si = [parse_quantity(v).si for v in values]  # type: ignore[union-attr]
            columns[numeric] = pl.Series(numeric, si, dtype=pl.Float64)
    if "seed" not in columns:
        seeds = [_seed(p) for p in points]
        columns["seed"] = pl.Series("seed", seeds, dtype=pl.Int64)
    for metric in plan.metrics:
        dtype = {"int": pl.Int64(), "float": pl.Float64(), "str": pl.String()}[metric.dtype]
        values = [(r.get("metrics") or {}).get(metric.id) if r else None for r in found]
        columns[metric.name] = pl.Series(metric.name, values, dtype=dtype, strict=False)
    stats = [(r.get("stats") or {}) if r else {} for r in found]
    columns["events"] = pl.Series("events", [s.get("events") for s in stats], dtype=pl.Int64)
    columns["wall_time_s"] = pl.Series(
        "wall_time_s", [s.get("wall_time_s") for s in stats], dtype=pl.Float64
    )
    return pl.DataFrame(list(columns.values()))


def _seed(point: Point) -> int | None:
    import json

    seed = json.loads(point.scenario).get("seed")
    return seed if isinstance(seed, int) else None


def _axis_dtype(axis: Axis) -> pl.DataType:
    values = axis.values
    if all(isinstance(v, str) for v in values):
        return pl.String()
    if all(isinstance(v, bool) for v in values):
        return pl.Boolean()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pl.Int64()
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return pl.Float64()
    return pl.String()


# -- statistics ----------------------------------------------------------------------------------

# Two-sided 95 % quantiles of Student's t distribution, by degrees of freedom.
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip


def t_quantile(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (the half-width of a
    95 % confidence interval is this × standard deviation / √n); NaN for ``df < 1``."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    # Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5): < 1e-4 off beyond 30 df.
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def aggregate(table: pl.DataFrame, y: str, by: Sequence[str]) -> pl.DataFrame:
    """Statistics of column ``y`` over the successful runs, grouped by the columns ``by``:
    ``n``, ``mean``, ``std`` (sample), ``ci95`` (half-width of the 95 % confidence interval of
    the mean, Student's t; null for n < 2), ``min``, ``max``. Nulls and NaNs are left out."""
    value = pl.col(y).cast(pl.Float64)
    ok = table.filter((pl.col("status") == "ok") & value.is_not_null() & value.is_finite())
    keys = list(by)
    stats = [
        pl.len().alias("n"),
        value.mean().alias("mean"),
        value.std(ddof=1).alias("std"),
        value.min().alias("min"),
        value.max().alias("max"),
    ]
    grouped = ok.group_by(keys, maintain_order=True).agg(stats) if keys else ok.select(stats)
    t = pl.col("n").map_elements(lambda n: t_quantile(int(n) - 1), return_dtype=pl.Float64)
    return grouped.with_columns(
        pl.when(pl.col("n") >= 2)
        .then(t * pl.col("std") / pl.col("n").cast(pl.Float64).sqrt())
        .otherwise(None)
        .alias("ci95")
    ).select([*keys, "n", "mean", "std", "ci95", "min", "max"])


# -- plot specifications -------------------------------------------------------------------------


@dataclass(frozen=True)
class PlotSpec:
    """One ``[[plots]]`` entry."""

    name: str
    x: str
    y: str
    series: str | None = None
    facet: str | None = None
    over: tuple[str, ...] = ("seed",)
    where: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    title: str | None = None
    xscale: str | None = None
    yscale: str = "linear"
    ylim: tuple[float | None, float | None] | None = None
    errorbars: str = "ci95"


def parse_plots(entries: Any, plan: SweepPlan) -> list[PlotSpec]:
    """The ``[[plots]]`` of a plan, checked against its axes and metrics."""
    from startlab.sweep.plan import SweepPlanError, _key, _toml_value

    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise SweepPlanError("plots: expected [[plots]] tables")
    axes = [axis.name for axis in plan.axes]
    metrics = {m.name: m for m in plan.metrics}
    numeric_y = [m.name for m in plan.metrics if m.dtype != "str"] + ["wall_time_s", "events"]
    specs: list[PlotSpec] = []
    names: set[str] = set()
    for i, entry in enumerate(entries):
        where = f"plots[{i}]"
        unknown = [k for k in entry if k not in _PLOT_FIELDS]
        if unknown:
            allowed = ", ".join(_PLOT_FIELDS)
            raise SweepPlanError(
                f"{where}.{_key(unknown[0])}: unknown plot field; allowed: {allowed}"
            )
        for required in ("x", "y"):
            if required not in entry:
                raise SweepPlanError(f"{where}.{required}: missing")

        def axis_name(field: str, value: Any, where: str = where) -> str:
            if value not in axes:
                listed = ", ".join(axes) or "none"
                raise SweepPlanError(
                    f"{where}.{field}: {_toml_value(value)} is not an axis of this plan "
                    f"(axes: {listed})"
                )
            return str(value)

        x = axis_name("x", entry["x"])
        y = entry["y"]
        if y not in numeric_y:
            if y in metrics:
                raise SweepPlanError(f"{where}.y: {y!r} is text; a plot needs a numeric metric")
            raise SweepPlanError(
                f"{where}.y: {_toml_value(y)} is not a numeric metric of this plan "
                f"(metrics: {', '.join(numeric_y)})"
            )
        series = axis_name("series", entry["series"]) if entry.get("series") is not None else None
        facet = axis_name("facet", entry["facet"]) if entry.get("facet") is not None else None
        seed_used = "seed" in (x, entry.get("series"), entry.get("facet")) or "seed" in entry.get(
            "where", {}
        )
        over_value = entry.get("over", ["seed"] if "seed" in axes and not seed_used else [])
        if isinstance(over_value, str):
            over_value = [over_value]
        if not isinstance(over_value, list):
            raise SweepPlanError(f"{where}.over: expected a list of axes")
        over = tuple(axis_name("over", a) for a in over_value)
        filters: list[tuple[str, tuple[Any, ...]]] = []
        where_table = entry.get("where", {})
        if not isinstance(where_table, Mapping):
            raise SweepPlanError(f"{where}.where: expected a table axis = value(s)")
        for name, wanted in where_table.items():
            axis = plan.axis(axis_name(f"where.{_key(name)}", name))
            chosen = tuple(wanted) if isinstance(wanted, list) else (wanted,)
            for value in chosen:
                if value not in axis.values:
                    raise SweepPlanError(
                        f"{where}.where.{_key(name)}: {_toml_value(value)} is not a value of the "
                        f"axis; values: {', '.join(_toml_value(v) for v in axis.values)}"
                    )
            filters.append((str(name), chosen))
        used = [x, series, facet, *over, *(n for n, _ in filters)]
        used = [u for u in used if u is not None]
        if len(set(used)) != len(used):
            raise SweepPlanError(
                f"{where}: x, series, facet, over and where must name different axes"
            )
        xscale = entry.get("xscale")
        if xscale not in (None, "linear", "log"):
            raise SweepPlanError(f'{where}.xscale: {_toml_value(xscale)}: allowed: "linear", "log"')
        yscale = entry.get("yscale", "linear")
        if yscale not in ("linear", "log"):
            raise SweepPlanError(f'{where}.yscale: {_toml_value(yscale)}: allowed: "linear", "log"')
        ylim = entry.get("ylim")
        if ylim is not None:
            if not (
                isinstance(ylim, list)
                and len(ylim) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in ylim)
            ):
                raise SweepPlanError(f"{where}.ylim: expected [low, high], e.g. [0, 1]")
            ylim = (float(ylim[0]), float(ylim[1]))
        errorbars = entry.get("errorbars", "ci95")
        if errorbars not in _ERRORBARS:
            raise SweepPlanError(
                f"{where}.errorbars: {_toml_value(errorbars)}: allowed: {', '.join(_ERRORBARS)}"
            )
        name = entry.get("name") or f"{y}-vs-{x}" + (f"-by-{series}" if series else "")
        if not isinstance(name, str):
            raise SweepPlanError(f"{where}.name: expected a string")
        name = _file_name(name)
        if name in names:
            raise SweepPlanError(f"{where}.name: {name!r} is used by another plot")
        names.add(name)
        title = entry.get("title")
        if title is not None and not isinstance(title, str):
            raise SweepPlanError(f"{where}.title: expected a string")
        specs.append(
            PlotSpec(
                name=name,
                x=x,
                y=str(y),
                series=series,
                facet=facet,
                over=over,
                where=tuple(filters),
                title=title,
                xscale=xscale,
                yscale=yscale,
                ylim=ylim,
                errorbars=errorbars,
            )
        )
    return specs


def _file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", text).strip("_") or "plot"


# -- drawing -------------------------------------------------------------------------------------


def draw_plots(plan: SweepPlan, table: pl.DataFrame, directory: str | Path) -> list[Path]:
    """Draw every plot of the plan from its results table into ``directory``; returns the
    files written."""
    directory = Path(directory)
    written: list[Path] = []
    for spec in plan.plots:
        written += draw_plot(plan, spec, table, directory)
    return written


def draw_plot(plan: SweepPlan, spec: PlotSpec, table: pl.DataFrame, directory: Path) -> list[Path]:
    """Draw one plot (one file per combination of the axes it leaves free)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from startlab.sweep.plan import _toml_value

    data = table
    for name, chosen in spec.where:
        data = data.filter(pl.col(name).is_in([_cell(plan.axis(name), v) for v in chosen]))
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
            part = part.filter(pl.col(axis.name) == _cell(axis, value))
        facets = plan.axis(spec.facet).values if spec.facet else (None,)
        ncols = min(3, len(facets))
        nrows = math.ceil(len(facets) / ncols)
        fig = Figure(figsize=(5.0 * ncols + 0.6, 3.8 * nrows + 0.8), dpi=110, layout="constrained")
        FigureCanvasAgg(fig)
        grid = fig.subplots(nrows, ncols, squeeze=False, sharey=True, sharex=True)
        for index, facet_value in enumerate(facets):
            ax = grid[index // ncols][index % ncols]
            panel = part
            if spec.facet:
                panel = panel.filter(
                    pl.col(spec.facet) == _cell(plan.axis(spec.facet), facet_value)
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
        suffix = ",".join(f"{a.name}={_toml_value(v).strip(chr(34))}" for a, v in combination)
        path = directory / f"{spec.name}{'--' + _file_name(suffix) if suffix else ''}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png")
        written.append(path)
    return written


def _combinations(dimensions: Sequence[Sequence[Axis]]) -> list[list[tuple[Axis, Any]]]:
    """Every combination of the dimensions' values, as (axis, value) pairs."""
    import itertools

    choices = [range(len(dimension[0].values)) for dimension in dimensions]
    return [
        [
            (axis, axis.values[i])
            for dimension, i in zip(dimensions, chosen, strict=True)
            for axis in dimension
        ]
        for chosen in itertools.product(*choices)
    ]


def _cell(axis: Axis, value: Any) -> Any:
    """An axis value as it appears in the results table."""
    from startlab.sweep.plan import _toml_value

    if _axis_dtype(axis) == pl.String and not isinstance(value, str):
        return _toml_value(value)
    return value


def _draw_panel(
    ax: Axes, plan: SweepPlan, spec: PlotSpec, panel: pl.DataFrame, scale: float
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
            rows = rows.filter(pl.col(spec.series) == _cell(plan.axis(spec.series), series_value))
        if rows is None or rows.height == 0:
            continue
        by_x = {_hashable(r[spec.x]): r for r in rows.iter_rows(named=True)}
        xs, ys, lows, highs = [], [], [], []
        for value, position in zip(x_axis.values, positions, strict=True):
            row = by_x.get(_hashable(_cell(x_axis, value)))
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
        return (row["mean"] - row["min"]) * scale, (row["max"] - row["mean"]) * scale
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


def _y_unit(y: str, metric: Metric | None, data: pl.DataFrame) -> tuple[float, str]:
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
