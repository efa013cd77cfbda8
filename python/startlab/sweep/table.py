"""The results table of a sweep (one row per point) and statistics over its runs (mean and
95 % confidence interval over the seeds)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from startlab.sweep.model import (
    FIXED_COLUMNS,
    Axis,
    PlanShape,
    Point,
    numeric_column,
    parse_quantity,
    toml_value,
)

__all__ = [
    "FIXED_COLUMNS",
    "aggregate",
    "axis_cell",
    "axis_dtype",
    "results_table",
    "t_quantile",
]


def results_table(
    plan: PlanShape, points: Sequence[Point], records: Mapping[str, Mapping[str, Any]]
) -> pl.DataFrame:
    """One row per point, in order: ``point``, ``key``, ``status``, ``error``, the axis values
    (with a numeric copy of axes written with units: ``rtt`` and ``rtt_s``), ``seed``, the
    metrics, ``events`` and ``wall_time_s`` (of the simulation). A point without a record
    (not run yet) has status ``missing``."""
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
        dtype = axis_dtype(axis)
        if dtype == pl.String and not all(isinstance(v, str) for v in axis.values):
            values = [v if isinstance(v, str) else toml_value(v) for v in values]
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
    seed = json.loads(point.scenario).get("seed")
    return seed if isinstance(seed, int) else None


def axis_dtype(axis: Axis) -> pl.DataType:
    """The column type of an axis in the results table."""
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


def axis_cell(axis: Axis, value: Any) -> Any:
    """An axis value as it appears in the results table."""
    if axis_dtype(axis) == pl.String and not isinstance(value, str):
        return toml_value(value)
    return value


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
