"""Checks of the papers' claims over our results.

Every check gets the experiment's data (one row per point or run, averaged over seeds: the axis
columns, or ``label`` for runs, and one column per metric) and the claim's parameters, and
returns whether our results support the claim and a one-line account of the numbers it looked
at. ``where`` selects rows by column values (``where = { algorithm = "newreno" }``).

- ``increasing`` / ``decreasing``: ``y`` grows / falls along ``along`` (for every combination of
  the other key columns), allowing ``tolerance`` (relative, default 0).
- ``greater`` / ``less``: ``y`` of the rows ``a`` (a ``where`` table) exceeds / stays below
  ``factor`` × ``y`` of the rows ``b``, matched on the remaining key columns; ``at = "all"``
  (default) or ``"any"`` of them.
- ``between``: every selected ``y`` lies in [``min``, ``max``].
- ``ratio``: max(y) / min(y) over the selected rows is at least ``min`` and at most ``max``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

__all__ = ["CHECKS", "ClaimCheckError", "evaluate"]


class ClaimCheckError(ValueError):
    """A claim's check is misconfigured (unknown check, missing column)."""


def _select(data: pl.DataFrame, where: Mapping[str, Any] | None) -> pl.DataFrame:
    out = data
    for column, value in (where or {}).items():
        if column not in out.columns:
            raise ClaimCheckError(
                f"where: no column {column!r}; columns: {', '.join(data.columns)}"
            )
        values = value if isinstance(value, list) else [value]
        out = out.filter(pl.col(column).is_in(values))
    return out


def _need(data: pl.DataFrame, *columns: str) -> None:
    for c in columns:
        if c not in data.columns:
            raise ClaimCheckError(f"no column {c!r}; columns: {', '.join(data.columns)}")


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _monotone(
    data: pl.DataFrame, p: Mapping[str, Any], keys: Sequence[str], sign: int
) -> tuple[bool, str]:
    y, along = p["y"], p["along"]
    tolerance = float(p.get("tolerance", 0.0))
    rows = _select(data, p.get("where"))
    # An axis written with units is ordered by its numeric copy (rtt -> rtt_s).
    order = next(
        (c for c in rows.columns if c.startswith(f"{along}_") and rows[c].dtype.is_numeric()), along
    )
    _need(rows, y, order)
    fixed = set(p.get("where") or {})
    others = [c for c in keys if c != along and c not in fixed and c in rows.columns]
    ok = True
    details = []
    groups = rows.partition_by(others, maintain_order=True) if others else [rows]
    for g in groups:
        g = g.sort(order)
        ys = g[y].to_list()
        xs = g[along].to_list()
        for a, b in itertools.pairwise(ys):
            if a is None or b is None or (sign * (b - a) < -tolerance * max(abs(a), abs(b))):
                ok = False
        head = ", ".join(f"{_fmt(x)}: {_fmt(v)}" for x, v in zip(xs, ys, strict=False))
        prefix = ", ".join(f"{c}={g[c][0]}" for c in others)
        details.append(f"{prefix + ' ' if prefix else ''}{y} along {along}: {head}")
    return ok, "; ".join(details)


def _compare(
    data: pl.DataFrame, p: Mapping[str, Any], keys: Sequence[str], sign: int
) -> tuple[bool, str]:
    y = p["y"]
    factor = float(p.get("factor", 1.0))
    at = p.get("at", "all")
    data = _select(data, p.get("where"))
    a = _select(data, p["a"])
    b = _select(data, p["b"])
    _need(a, y)
    chosen = set(p["a"]) | set(p["b"]) | set(p.get("where") or {})
    keys = [c for c in keys if c not in chosen and c in data.columns]
    if keys:
        joined = a.join(b, on=keys, suffix="_b")
        pairs = list(
            zip(
                joined[y].to_list(),
                joined[f"{y}_b"].to_list(),
                joined.select(keys).rows(),
                strict=True,
            )
        )
    else:
        if len(a) != 1 or len(b) != 1:
            raise ClaimCheckError(f"a and b select {len(a)} and {len(b)} rows, not one each")
        pairs = [(a[y][0], b[y][0], ())]
    results = []
    for va, vb, _key in pairs:
        good = va is not None and vb is not None and (sign * (va - factor * vb) > 0)
        results.append(good)
    ok = bool(results) and (all(results) if at == "all" else any(results))
    word = ">" if sign > 0 else "<"
    shown = "; ".join(
        ("/".join(map(str, key)) + ": " if key else "")
        + f"{_fmt(va)} {word} {_fmt(factor)} x {_fmt(vb)}"
        for va, vb, key in pairs
    )
    return ok, f"{y}: {shown}"


def _between(data: pl.DataFrame, p: Mapping[str, Any], keys: Sequence[str]) -> tuple[bool, str]:
    y = p["y"]
    rows = _select(data, p.get("where"))
    _need(rows, y)
    lo, hi = float(p.get("min", -math.inf)), float(p.get("max", math.inf))
    values = rows[y].to_list()
    ok = bool(values) and all(v is not None and lo <= v <= hi for v in values)
    return ok, f"{y} = {', '.join(_fmt(v) for v in values)} (allowed {_fmt(lo)} to {_fmt(hi)})"


def _ratio(data: pl.DataFrame, p: Mapping[str, Any], keys: Sequence[str]) -> tuple[bool, str]:
    y = p["y"]
    rows = _select(data, p.get("where"))
    _need(rows, y)
    values = [v for v in rows[y].to_list() if v is not None]
    if not values or min(values) <= 0:
        return False, f"{y}: no positive values"
    r = max(values) / min(values)
    lo, hi = float(p.get("min", 0.0)), float(p.get("max", math.inf))
    return lo <= r <= hi, f"max/min of {y} = {_fmt(r)} (allowed {_fmt(lo)} to {_fmt(hi)})"


Check = Callable[[pl.DataFrame, Mapping[str, Any], Sequence[str]], tuple[bool, str]]

CHECKS: dict[str, Check] = {
    "increasing": lambda d, p, k: _monotone(d, p, k, +1),
    "decreasing": lambda d, p, k: _monotone(d, p, k, -1),
    "greater": lambda d, p, k: _compare(d, p, k, +1),
    "less": lambda d, p, k: _compare(d, p, k, -1),
    "between": _between,
    "ratio": _ratio,
}


def evaluate(
    check: str, data: pl.DataFrame, params: Mapping[str, Any], keys: Sequence[str]
) -> tuple[bool, str]:
    """Runs one check over ``data``, whose rows are identified by the columns ``keys`` (the
    axes, or ``label``). A misconfigured check raises :class:`ClaimCheckError`."""
    if check not in CHECKS:
        raise ClaimCheckError(f"unknown check {check!r}; available: {', '.join(CHECKS)}")
    try:
        return CHECKS[check](data, params, keys)
    except KeyError as e:
        raise ClaimCheckError(f"check {check!r} needs the parameter {e.args[0]!r}") from None


def columns_of(params: Mapping[str, Any]) -> Sequence[str]:
    """The data columns a claim reads (for the report)."""
    return [params[k] for k in ("y", "along") if k in params]
