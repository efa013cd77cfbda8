"""Reproducing the experiments of the source papers (``startlab reproduce``).

The experiments are files under ``reproduce/<paper>/`` (:mod:`startlab.reproduce.experiment`
describes them); :func:`reproduce` runs them (all local cores, or a Dask cluster), keeping every
run in a cache so that an interrupted reproduction resumes and a finished one is redrawn
without simulating, and writes the report (HTML and Markdown, with figures).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from startlab.reproduce.experiment import (
    Experiment,
    ExperimentError,
    find_experiments,
    load_experiment,
)
from startlab.reproduce.report import write_report
from startlab.reproduce.runner import ClaimResult, ExperimentResult, run_experiment

__all__ = [
    "ClaimResult",
    "Experiment",
    "ExperimentError",
    "ExperimentResult",
    "default_root",
    "find_experiments",
    "load_experiment",
    "reproduce",
]


def default_root() -> Path:
    """``reproduce/`` of the current directory if it has one, else of the source tree."""
    here = Path.cwd() / "reproduce"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[3] / "reproduce"


def reproduce(
    selection: Sequence[str] = (),
    *,
    quick: bool = False,
    out: str | os.PathLike[str] = "out/reproduce",
    jobs: int | None = None,
    cluster: Any = None,
    progress: bool | None = None,
    root: str | os.PathLike[str] | None = None,
    report: bool = True,
    command: str = "startlab reproduce",
) -> list[ExperimentResult]:
    """Runs the selected experiments (papers such as ``"wang2004"`` or ids such as
    ``"wang2004/table1"``; all by default) and writes the report into ``out/report``.

    ``quick`` runs the reduced version of each experiment. Runs are cached in ``out/cache``
    (shared by the quick and full versions where their scenarios coincide).
    """
    experiments = find_experiments(Path(root) if root is not None else default_root(), selection)
    out = Path(out)
    cache = out / "cache"
    started = time.perf_counter()
    results = []
    for exp in experiments:
        results.append(
            run_experiment(exp, cache, quick=quick, jobs=jobs, cluster=cluster, progress=progress)
        )
    if report:
        staging = out / ".report.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        write_report(
            results, staging, quick=quick, elapsed_s=time.perf_counter() - started, command=command
        )
        for r in results:
            data_dir = staging / "data"
            data_dir.mkdir(parents=True, exist_ok=True)
            r.data.write_parquet(data_dir / f"{r.experiment.paper}-{r.experiment.name}.parquet")
        final = out / "report"
        if final.exists():
            shutil.rmtree(final)
        staging.replace(final)
    return results
