"""Parameter sweeps: run a scenario over a grid of parameters, on every local core or on a Dask
cluster, and keep one row of metrics per run.

``startlab.sweep(plan, out)`` is :func:`sweep` (see :mod:`startlab`). The parts are reusable on
their own::

    from startlab.sweep import SweepPlan, execute, results_table

    plan = SweepPlan.load("examples/sweeps/startup-comparison.toml")
    points = plan.points()                      # every scenario resolved, or SweepPlanError
    done = execute(points, "out/cache", metrics=plan.metrics, jobs=2)
    table = results_table(plan, points, done.records)

The plan format, the metrics and the outputs are described in ``docs/sweeps.md``.

The modules, from the bottom up (each imports only the ones before it): :mod:`.model` (plan
parts, points, quantities, canonical JSON, :func:`~.model.describe`), :mod:`.table` (results
table, statistics), :mod:`.cache` (run files), :mod:`.metrics`, :mod:`.plan` (reading plans,
building points), :mod:`.execute` (running them), then this package (whole sweeps into a
directory). The figures are drawn by :mod:`startlab.figures`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from startlab.figures import draw_plots
from startlab.scenario import dumps_toml
from startlab.sweep.cache import DirectoryLock, RunCache, build_info, run_key
from startlab.sweep.execute import (
    TRACE_ENV,
    ClusterError,
    Execution,
    Task,
    execute,
    run_point,
    usable_record,
)
from startlab.sweep.metrics import (
    KINDS,
    STATS,
    Metric,
    MetricError,
    compute_metrics,
    default_metrics,
    parse_metric,
)
from startlab.sweep.model import (
    ALIASES,
    Axis,
    PlotSpec,
    Point,
    SweepPlanError,
    canonical_json,
    parse_quantity,
)
from startlab.sweep.plan import SweepPlan
from startlab.sweep.table import aggregate, results_table, t_quantile

__all__ = [
    "ALIASES",
    "KINDS",
    "STATS",
    "TRACE_ENV",
    "Axis",
    "ClusterError",
    "Execution",
    "Metric",
    "MetricError",
    "PlotSpec",
    "Point",
    "RunCache",
    "SweepOutcome",
    "SweepOutputError",
    "SweepPlan",
    "SweepPlanError",
    "Task",
    "aggregate",
    "build_info",
    "canonical_json",
    "check_output",
    "compute_metrics",
    "default_metrics",
    "draw_plots",
    "execute",
    "parse_metric",
    "parse_quantity",
    "results_table",
    "run_key",
    "run_point",
    "run_sweep",
    "sweep",
    "t_quantile",
    "usable_record",
]

MAX_LISTED_FAILURES = 20


class SweepOutputError(ValueError):
    """The output directory is in the way: a file, or a folder that is not a sweep's."""


@dataclass
class SweepOutcome:
    """Everything a sweep produced."""

    plan: SweepPlan
    points: list[Point]
    table: pl.DataFrame
    """The results: one row per point (:func:`results_table`)."""
    execution: Execution
    out: Path | None = None
    files: list[Path] = field(default_factory=list)
    """Files written into ``out`` (not the run files)."""

    @property
    def failures(self) -> pl.DataFrame:
        """The rows of the runs that failed."""
        return self.table.filter(pl.col("status") != "ok")

    def summary(self) -> dict[str, Any]:
        """The contents of ``summary.json``."""
        execution = self.execution
        failures = []
        for row in self.failures.iter_rows(named=True):
            point = self.points[row["point"]]
            entry: dict[str, Any] = {
                "point": point.index,
                "values": dict(point.values),
                "key": point.key,
                "error": row["error"],
            }
            if self.out is not None:
                entry["scenario"] = f"failed/{point.key}.toml"
            failures.append(entry)
        summary: dict[str, Any] = _json_safe(
            {
                "plan": self.plan.name,
                "description": self.plan.description,
                "points": len(self.points),
                "runs": execution.runs,
                "cached": execution.cached,
                "simulated": execution.simulated,
                "failed": execution.failed,
                "wall_time_s": execution.wall_time_s,
                "executor": execution.where,
                "startlab": build_info(),
                "axes": {axis.name: list(axis.values) for axis in self.plan.axes},
                "metrics": {m.name: m.id for m in self.plan.metrics},
                "failures": failures,
                "files": sorted(str(p.relative_to(self.out)) for p in self.files)
                if self.out is not None
                else [],
            }
        )
        return summary

    def text(self) -> str:
        """The report printed by ``startlab sweep``."""
        e = self.execution
        rate = (
            f", {e.simulated / e.wall_time_s:.1f} runs/s" if e.simulated and e.wall_time_s else ""
        )
        where = f" on {e.where}" if e.simulated else ""
        lines = [
            f"sweep {self.plan.name!r}: {len(self.points)} points, {e.runs} runs: "
            f"{e.cached} from the cache, {e.simulated} simulated{where}, {e.failed} failed, "
            f"in {e.wall_time_s:.1f} s{rate}"
        ]
        failures = self.failures
        if failures.height:
            lines.append(f"{failures.height} point{'s' if failures.height > 1 else ''} failed:")
            for row in failures.head(MAX_LISTED_FAILURES).iter_rows(named=True):
                point = self.points[row["point"]]
                where_file = f" [{self.out}/failed/{point.key}.toml]" if self.out else ""
                error = " ".join(str(row["error"]).split())
                lines.append(f"  {point.label()}: {error}{where_file}")
            if failures.height > MAX_LISTED_FAILURES:
                lines.append(
                    f"  ... and {failures.height - MAX_LISTED_FAILURES} more (summary.json)"
                )
        if self.out is not None:
            lines.append(f"wrote {self.out}/: {', '.join(_shown_files(self.out, self.files))}")
        return "\n".join(lines)


def _shown_files(out: Path, files: Iterable[Path]) -> list[str]:
    """Files relative to ``out``; a folder of more than 6 as ``folder/ (N files)``."""
    by_folder: dict[str, list[str]] = {}
    for path in files:
        relative = path.relative_to(out)
        folder = relative.parts[0] if len(relative.parts) > 1 else ""
        by_folder.setdefault(folder, []).append(str(relative))
    shown = []
    for folder, names in by_folder.items():
        if folder and len(names) > 6:
            shown.append(f"{folder}/ ({len(names)} files)")
        else:
            shown += names
    return sorted(shown)


def check_output(out: str | os.PathLike[str]) -> Path:
    """Check that ``out`` can take a sweep's results: absent, empty, or a sweep directory
    (which is resumed). Raises :class:`SweepOutputError`."""
    out = Path(out)
    if out.is_symlink() and not out.exists():
        raise SweepOutputError(f"{out}: a broken symbolic link")
    if out.exists() and not out.is_dir():
        raise SweepOutputError(f"{out}: exists and is not a directory")
    ours = (out / "plan.toml").is_file() or (out / "runs").is_dir()
    if out.is_dir() and not ours and any(out.iterdir()):
        raise SweepOutputError(
            f"{out}: directory exists and is not a sweep directory (no plan.toml or runs/); "
            "choose a new or empty directory"
        )
    return out


def _load(
    plan: SweepPlan | Mapping[str, Any] | str | os.PathLike[str], overrides: Iterable[str]
) -> SweepPlan:
    if isinstance(plan, SweepPlan):
        if list(overrides):
            raise SweepPlanError(
                "overrides: give them when the plan is made: SweepPlan.load(path, overrides=...)"
            )
        return plan
    if isinstance(plan, Mapping):
        return SweepPlan.from_dict(plan, overrides=overrides)
    return SweepPlan.load(plan, overrides=overrides)


def run_sweep(
    plan: SweepPlan | Mapping[str, Any] | str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    cluster: Any = None,
    *,
    overrides: Iterable[str] = (),
    cache: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    retry_failed: bool = False,
    plots: bool = True,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> SweepOutcome:
    """:func:`sweep`, returning the whole :class:`SweepOutcome` (table, counts, files)."""
    plan = _load(plan, overrides)
    points = plan.points()
    if jobs is not None and jobs < 0:
        raise ValueError(f"jobs must be 0 or more, not {jobs}")
    if out is None:
        with contextlib.ExitStack() as stack:
            cache_dir = cache or stack.enter_context(
                tempfile.TemporaryDirectory(prefix="startlab-sweep-")
            )
            execution = execute(
                points,
                cache_dir,
                metrics=plan.metrics,
                jobs=jobs,
                cluster=cluster,
                progress=progress,
                retry_failed=retry_failed,
                on_record=on_record,
                label=plan.name,
            )
        table = results_table(plan, points, execution.records)
        return SweepOutcome(plan, points, table, execution)

    out = check_output(out)
    out.mkdir(parents=True, exist_ok=True)
    lock = DirectoryLock(out)
    try:
        with lock.held():
            return _sweep_into(
                plan, points, out, jobs, cluster, cache, progress, retry_failed, plots, on_record
            )
    except BlockingIOError as e:
        raise SweepOutputError(str(e)) from None


def _sweep_into(
    plan: SweepPlan,
    points: list[Point],
    out: Path,
    jobs: int | None,
    cluster: Any,
    cache: str | os.PathLike[str] | None,
    progress: bool | None,
    retry_failed: bool,
    plots: bool,
    on_record: Callable[[dict[str, Any]], None] | None,
) -> SweepOutcome:
    files: list[Path] = []
    header = (
        f"# The plan of this sweep directory, with the base scenario inline and the overrides\n"
        f"# applied. Resume or extend it with: startlab sweep {out}/plan.toml -o {out}\n\n"
    )
    files.append(_write_text(out / "plan.toml", header + plan.to_toml()))
    cache_dir = Path(cache) if cache is not None else out / "runs"
    execution = execute(
        points,
        cache_dir,
        metrics=plan.metrics,
        jobs=jobs,
        cluster=cluster,
        progress=progress,
        retry_failed=retry_failed,
        on_record=on_record,
        label=plan.name,
    )
    table = results_table(plan, points, execution.records)
    staging = out / ".results.parquet.tmp"
    table.write_parquet(staging)
    staging.replace(out / "results.parquet")
    files.append(out / "results.parquet")

    failed_dir = out / "failed"
    if failed_dir.is_dir():
        shutil.rmtree(failed_dir)
    failed_keys = sorted(set(table.filter(pl.col("status") != "ok")["key"].to_list()))
    for key in failed_keys:
        record = execution.records[key]
        text = (
            f"# A failed run of sweep {plan.name!r}: {record.get('error')}\n"
            f"# Run it alone with: startlab run {failed_dir}/{key}.toml -o DIR\n\n"
        )
        files.append(_write_text(failed_dir / f"{key}.toml", text + dumps_toml(record["scenario"])))

    plots_dir = out / "plots"
    if plots_dir.is_dir():
        for old in plots_dir.glob("*.png"):
            old.unlink()
    if plots and plan.plots:
        files += draw_plots(plan, table, plots_dir)
    outcome = SweepOutcome(plan, points, table, execution, out, files)
    summary_path = out / "summary.json"
    outcome.files.append(summary_path)
    _write_text(summary_path, json.dumps(outcome.summary(), indent=2, ensure_ascii=False) + "\n")
    return outcome


def sweep(
    plan: SweepPlan | Mapping[str, Any] | str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    cluster: Any = None,
    *,
    overrides: Iterable[str] = (),
    cache: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    retry_failed: bool = False,
    plots: bool = True,
) -> pl.DataFrame:
    """Run a sweep plan and return its results table, one row per point.

    ``plan`` is a :class:`SweepPlan`, a plan document (dict; a ``base`` path in it is relative
    to the current directory) or the path of a plan file; ``overrides`` are
    ``"dotted.path=value"`` assignments on the plan (``base.duration=5s``). Every point is
    resolved before anything runs (:class:`SweepPlanError` otherwise).

    ``out``: the sweep directory (``results.parquet``, ``summary.json``, ``plan.toml``,
    ``plots/``, ``runs/``); with ``None`` nothing is kept. Runs already in its cache (or in
    ``cache``, a run folder that sweeps can share) are not simulated again. ``jobs``: local
    worker processes (default: every core; ``0``: in this process). ``cluster``: a Dask
    scheduler address or ``distributed.Client``. ``progress``: see :func:`execute`.
    ``retry_failed``: simulate the failed runs again.
    """
    return run_sweep(
        plan,
        out,
        jobs,
        cluster,
        overrides=overrides,
        cache=cache,
        progress=progress,
        retry_failed=retry_failed,
        plots=plots,
    ).table


def _write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    staging.replace(path)
    return path


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value
