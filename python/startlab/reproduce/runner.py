"""Running the experiments through the sweep machinery (local pool or Dask, one run cache shared
by every experiment, so nothing is simulated twice and an interrupted reproduction resumes).
A ``sweep`` experiment is a sweep plan; a ``runs`` experiment is a sweep over a ``label`` axis,
one point per run, whose whole results are kept in the run cache for the figure."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from startlab.reproduce.claims import ClaimCheckError, evaluate
from startlab.reproduce.experiment import Claim, Experiment, ExperimentError
from startlab.result import Result
from startlab.scenario import Scenario, ScenarioError
from startlab.sweep import run_sweep
from startlab.sweep.cache import RunCache, run_key
from startlab.sweep.execute import execute
from startlab.sweep.metrics import parse_metrics
from startlab.sweep.model import Point, canonical_json, numeric_column
from startlab.sweep.plan import SweepPlan
from startlab.sweep.table import aggregate

__all__ = ["ClaimResult", "ExperimentResult", "run_experiment"]


@dataclass
class ClaimResult:
    claim: Claim
    supported: bool | None
    """``None`` when the check could not be evaluated (``detail`` says why)."""
    detail: str
    quick: bool = False
    """Whether the quick version was run (``Claim.expect_quick`` may then apply)."""

    @property
    def expected(self) -> str:
        return self.claim.expected(self.quick)

    @property
    def as_expected(self) -> bool:
        if self.supported is None:
            return False
        return self.supported == (self.expected == "supported")


@dataclass
class ExperimentResult:
    experiment: Experiment
    quick: bool
    keys: list[str]
    """The columns that identify a row of ``data``: the axes other than the seed, or ``label``."""
    data: pl.DataFrame
    """One row per point (mean over seeds; ``<metric>_ci95`` half-widths and ``n``) or run."""
    comparison: pl.DataFrame
    """The paper's numbers next to ours: ``where``, ``metric``, ``paper``, ``ours``, ``ci95``,
    ``difference``, ``relative``."""
    claims: list[ClaimResult]
    runs: int = 0
    simulated: int = 0
    results: dict[str, Result] = field(default_factory=dict)
    """For ``runs`` experiments: label -> result (for the figure)."""
    x_column: str | None = None
    """The numeric column of the figure's x axis."""
    seeds: int = 1


def _numeric_metrics(table: pl.DataFrame, names: Sequence[str]) -> list[str]:
    return [n for n in names if n in table.columns and table[n].dtype.is_numeric()]


def _sweep(
    exp: Experiment, quick: bool, cache: Path, jobs: int | None, cluster: Any, progress: bool | None
) -> ExperimentResult:
    try:
        plan = SweepPlan.from_dict(exp.plan_document(quick), overrides=exp.overrides(quick))
    except ScenarioError as e:
        raise ExperimentError(f"{exp.path}: plan: {e}") from None
    outcome = run_sweep(plan, None, jobs, cluster, cache=cache, progress=progress, plots=False)
    table = outcome.table
    # The rows are identified by the axes other than the seed; of a [zip] group only the first
    # axis is needed (the others follow it), so the rest are kept as columns but not as keys.
    keys: list[str] = []
    companions: list[str] = []
    groups: set[str] = set()
    for a in plan.axes:
        if a.name == "seed":
            continue
        if a.group is not None and a.group in groups:
            companions.append(a.name)
            continue
        if a.group is not None:
            groups.add(a.group)
        keys.append(a.name)
    numeric = {a.name: numeric_column(a) for a in plan.axes}
    extra = [c for c in (numeric.get(k) for k in keys + companions) if c]
    names = [m.name for m in plan.metrics]
    data: pl.DataFrame | None = None
    by = keys + companions + extra
    for name in _numeric_metrics(table, names):
        agg = aggregate(table, name, by).rename({"mean": name, "ci95": f"{name}_ci95"})
        agg = agg.select([*by, "n", name, f"{name}_ci95"])
        if data is None:
            data = agg
        elif by:
            data = data.join(agg.drop("n"), on=by, how="left")
        else:  # only seeds vary: one row
            data = data.join(agg.drop("n"), how="cross")
    for name in [n for n in names if n not in _numeric_metrics(table, names)]:
        # Text metrics (a slow-start exit reason): the most frequent value over the seeds.
        mode = (
            table.filter(pl.col("status") == "ok")
            .group_by(keys, maintain_order=True)
            .agg(pl.col(name).mode().first())
        )
        data = mode if data is None else data.join(mode, on=keys, how="left")
    assert data is not None, f"{exp.id}: no metrics"
    seeds = int(table["seed"].n_unique()) if "seed" in table.columns else 1
    x = exp.figure.get("x")
    return ExperimentResult(
        exp,
        quick,
        keys,
        data,
        pl.DataFrame(),
        [],
        runs=outcome.execution.runs,
        simulated=outcome.execution.simulated,
        x_column=numeric.get(x) or x if x else None,
        seeds=seeds,
    )


def _runs(
    exp: Experiment, quick: bool, cache: Path, jobs: int | None, progress: bool | None
) -> ExperimentResult:
    metrics = parse_metrics(exp.metrics) if exp.metrics else []
    points: list[Point] = []
    for i, spec in enumerate(exp.runs):
        source = spec["scenario"]
        overrides = list(spec.get("set") or []) + exp.overrides(quick)
        try:
            if isinstance(source, str):
                scenario = Scenario.load(exp.path.parent / source, overrides=overrides)
            else:
                scenario = Scenario.from_dict(copy.deepcopy(source), overrides=overrides)
        except ScenarioError as e:
            raise ExperimentError(f"{exp.path}: runs[{i}] ({spec['label']}): {e}") from None
        text = canonical_json(scenario.resolved())
        points.append(Point(i, {"label": spec["label"]}, text, run_key(text)))
    # On local processes even with a cluster: the whole results are kept in the cache folder,
    # which the workers of a cluster may not see (and these are a few runs).
    execution = execute(
        points,
        cache,
        metrics=metrics,
        jobs=jobs,
        progress=progress,
        label=exp.id,
        series=True,
    )
    runs = RunCache(cache)
    rows: list[dict[str, Any]] = []
    results: dict[str, Result] = {}
    for point in points:
        label = point.values["label"]
        record = execution.records[point.key]
        result = runs.get_series(point.key)
        if record.get("stage") not in (None, "metrics") or result is None:
            raise ExperimentError(f"{exp.path}: run {label!r}: {record.get('error')}")
        results[label] = result
        values = record.get("metrics") or {}
        rows.append({"label": label, **{m.name: values.get(m.id) for m in metrics}})
    return ExperimentResult(
        exp,
        quick,
        ["label"],
        pl.DataFrame(rows),
        pl.DataFrame(),
        [],
        runs=len(rows),
        simulated=execution.simulated,
        results=results,
    )


def _matches(data: pl.DataFrame, where: Mapping[str, Any]) -> pl.DataFrame:
    out = data
    for column, value in where.items():
        if column not in out.columns:
            return out.head(0)
        out = out.filter(pl.col(column) == value)
    return out


def _compare(result: ExperimentResult) -> pl.DataFrame:
    rows = []
    for row in result.experiment.paper_rows:
        # A number written under an axis's name locates the row (`loss = 0.005`), as
        # `where = { loss = 0.005 }` does; the rest are the paper's values.
        where = dict(row.where)
        values = dict(row.values)
        for key in [k for k in values if k in result.keys]:
            where[key] = values.pop(key)
        ours = _matches(result.data, where)
        # Our number only where the row is located without ambiguity.
        if len(ours) != 1:
            ours = ours.head(0)
        for metric, paper in values.items():
            value = ours[metric][0] if len(ours) and metric in ours.columns else None
            ci_col = f"{metric}_ci95"
            ci = ours[ci_col][0] if len(ours) and ci_col in ours.columns else None
            diff = value - paper if value is not None else None
            rows.append(
                {
                    "where": ", ".join(f"{k}={v}" for k, v in where.items()),
                    "metric": metric,
                    "paper": paper,
                    "ours": value,
                    "ci95": ci,
                    "difference": diff,
                    "relative": diff / paper if diff is not None and paper else None,
                }
            )
    schema = {
        "where": pl.String,
        "metric": pl.String,
        "paper": pl.Float64,
        "ours": pl.Float64,
        "ci95": pl.Float64,
        "difference": pl.Float64,
        "relative": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


def run_experiment(
    exp: Experiment,
    cache: str | Path,
    *,
    quick: bool = False,
    jobs: int | None = None,
    cluster: Any = None,
    progress: bool | None = None,
) -> ExperimentResult:
    """Runs (or takes from ``cache``) every simulation of ``exp``, then compares with the paper
    and checks its claims."""
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    if exp.kind == "sweep":
        result = _sweep(exp, quick, cache, jobs, cluster, progress)
    else:
        result = _runs(exp, quick, cache, jobs, progress)
    for name, expression in exp.derived.items():
        try:
            column = pl.sql_expr(expression).cast(pl.Float64).alias(name)
            result.data = result.data.with_columns(column)
        except Exception as e:  # polars raises several kinds for a bad expression or column
            raise ExperimentError(f"{exp.path}: derived.{name}: {expression!r}: {e}") from None
    result.comparison = _compare(result)
    for claim in exp.claims:
        try:
            supported, detail = evaluate(claim.check, result.data, claim.params, result.keys)
            result.claims.append(ClaimResult(claim, supported, detail, result.quick))
        except ClaimCheckError as e:
            result.claims.append(ClaimResult(claim, None, f"cannot be checked: {e}", result.quick))
    return result
