"""Experiments of the source papers, as described by the files under ``reproduce/``.

An experiment file (TOML) says what the paper ran, how startlab runs it, what the paper found
and how to check it:

``title``, ``source`` (where in the paper), ``setup`` (one paragraph), ``claim`` (the paper's
finding in one line), ``explanation`` (why our numbers differ, if they do), ``kind``:

- ``"sweep"``: ``[plan]`` is a sweep plan (``docs/sweeps.md``; its ``base`` is relative to the
  experiment file); the results are averaged over seeds with 95 % confidence intervals.
- ``"runs"``: ``[[runs]]`` are single runs (``label``, ``scenario`` path or inline table, ``set``
  overrides) whose time series are drawn like the paper's figure; ``[metrics]`` are computed on
  each run.

``[derived]``: columns computed from the others once the data is in (after the mean over
seeds), each a SQL expression over the data's columns (``ratio = "ss_exit_cwnd / (bandwidth_bps
* rtt_s / 8000)"``, see ``polars.sql_expr``); they are compared, checked and drawn like metrics.

``[quick]``: the reduced version run by ``--quick`` and the tests: ``axes`` replacing some of the
plan's axes, ``base`` replacing the plan's base scenario (a path relative to the experiment
file: a shortened version of a long run), ``set`` overrides of the plan (``base.duration=10s``)
or of every run (``duration=10s``). ``[figure]``: how to draw ours like the paper's.
``[[paper]]``: the paper's
numbers, one table per row: keys naming an axis (or ``label`` for runs) locate the row, the
others are metric values. ``[[claims]]``: the paper's statements as checks (``claims.py``).
"""

from __future__ import annotations

import copy
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from startlab.scenario import ScenarioError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "Claim",
    "Experiment",
    "ExperimentError",
    "PaperRow",
    "find_experiments",
    "load_experiment",
]

FIELDS = (
    "title",
    "source",
    "setup",
    "claim",
    "explanation",
    "kind",
    "plan",
    "runs",
    "metrics",
    "derived",
    "quick",
    "figure",
    "paper",
    "claims",
    "notes",
)


class ExperimentError(ScenarioError):
    """An experiment file is invalid; the message names the file and the field."""


@dataclass(frozen=True)
class PaperRow:
    """One of the paper's numbers: where it is (axis values, or a run label) and the values."""

    where: Mapping[str, Any]
    values: Mapping[str, float]


@dataclass(frozen=True)
class Claim:
    """One of the paper's statements, and the check that tests it on our results."""

    text: str
    check: str
    params: Mapping[str, Any]
    expect: str = "supported"
    """``"supported"``, or ``"not supported"`` when our model disagrees and ``explanation`` says
    why: the tests then check that it still disagrees, so a change in either direction shows."""
    expect_quick: str | None = None
    """What the quick version gives where it differs from the full one (its shorter runs or fewer
    points reach another verdict, and ``explanation`` says why); ``None``: the same as
    ``expect``."""

    def expected(self, quick: bool) -> str:
        """The verdict the full or the quick version is expected to reach."""
        return self.expect_quick if quick and self.expect_quick else self.expect


@dataclass
class Experiment:
    paper: str
    """The folder under ``reproduce/``: ``wang2004``."""
    name: str
    """The file stem: ``table1``."""
    path: Path
    title: str
    source: str
    setup: str
    claim: str
    explanation: str
    kind: str
    plan: dict[str, Any] | None
    runs: list[dict[str, Any]]
    metrics: dict[str, Any]
    quick: dict[str, Any]
    figure: dict[str, Any]
    paper_rows: list[PaperRow]
    claims: list[Claim]
    notes: str = ""
    derived: dict[str, str] = field(default_factory=dict)
    """Column name -> SQL expression over the data's columns."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.paper}/{self.name}"

    def plan_document(self, quick: bool) -> dict[str, Any]:
        """The sweep plan to run, with ``base`` made absolute and the quick changes applied."""
        assert self.plan is not None
        plan = copy.deepcopy(self.plan)
        if quick and isinstance(self.quick.get("base"), str):
            plan["base"] = self.quick["base"]
        base = plan.get("base")
        if isinstance(base, str):
            plan["base"] = str((self.path.parent / base).resolve())
        if quick:
            axes = plan.setdefault("axes", {})
            for name, values in (self.quick.get("axes") or {}).items():
                axes[name] = values
        return plan

    def overrides(self, quick: bool) -> list[str]:
        return list(self.quick.get("set") or []) if quick else []


def _where(path: Path, field_name: str) -> str:
    return f"{path}: {field_name}"


def _text(doc: Mapping[str, Any], name: str, path: Path, required: bool = True) -> str:
    value = doc.get(name, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise ExperimentError(f"{_where(path, name)}: required text")
    return " ".join(value.split())


def load_experiment(path: str | Path) -> Experiment:
    """Read and check an experiment file."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ExperimentError(f"{path}: {e}") from None
    unknown = sorted(set(doc) - set(FIELDS))
    if unknown:
        raise ExperimentError(
            f"{_where(path, unknown[0])}: unknown field; allowed: {', '.join(FIELDS)}"
        )
    kind = doc.get("kind", "sweep")
    if kind not in ("sweep", "runs"):
        raise ExperimentError(f'{_where(path, "kind")}: {kind!r} is not "sweep" or "runs"')
    plan = doc.get("plan")
    runs = doc.get("runs") or []
    if kind == "sweep" and not isinstance(plan, dict):
        raise ExperimentError(f"{_where(path, 'plan')}: a sweep experiment needs a [plan] table")
    if kind == "runs" and (
        not runs or not all(isinstance(r, dict) and "label" in r and "scenario" in r for r in runs)
    ):
        raise ExperimentError(
            f"{_where(path, 'runs')}: [[runs]] entries need a label and a scenario"
        )
    rows = []
    for i, row in enumerate(doc.get("paper") or []):
        if not isinstance(row, dict):
            raise ExperimentError(f"{_where(path, f'paper[{i}]')}: expected a table")
        where = {
            k: v for k, v in row.items() if not isinstance(v, (int, float)) or isinstance(v, bool)
        }
        values = {k: float(v) for k, v in row.items() if k not in where}
        # Numeric axis values (seed counts, packet numbers) are written in `where = {...}`.
        if isinstance(row.get("where"), dict):
            where = dict(row["where"])
            values = {k: float(v) for k, v in row.items() if k != "where"}
        rows.append(PaperRow(where, values))
    claims = []
    for i, c in enumerate(doc.get("claims") or []):
        if not isinstance(c, dict) or "text" not in c or "check" not in c:
            raise ExperimentError(f"{_where(path, f'claims[{i}]')}: needs text and check")
        params = {
            k: v for k, v in c.items() if k not in ("text", "check", "expect", "expect_quick")
        }
        expect = c.get("expect", "supported")
        expect_quick = c.get("expect_quick")
        for key, value in (("expect", expect), ("expect_quick", expect_quick)):
            if value is not None and value not in ("supported", "not supported"):
                raise ExperimentError(
                    f"{_where(path, f'claims[{i}].{key}')}: {value!r} is not "
                    '"supported" or "not supported"'
                )
        claims.append(Claim(" ".join(c["text"].split()), c["check"], params, expect, expect_quick))
    derived = doc.get("derived") or {}
    if not isinstance(derived, dict) or not all(isinstance(v, str) for v in derived.values()):
        raise ExperimentError(
            f'{_where(path, "derived")}: expected a table of name = "SQL expression"'
        )
    return Experiment(
        paper=path.parent.name,
        name=path.stem,
        path=path,
        title=_text(doc, "title", path),
        source=_text(doc, "source", path),
        setup=_text(doc, "setup", path),
        claim=_text(doc, "claim", path),
        explanation=_text(doc, "explanation", path, required=False),
        kind=kind,
        plan=plan,
        runs=list(runs),
        metrics=dict(doc.get("metrics") or {}),
        quick=dict(doc.get("quick") or {}),
        figure=dict(doc.get("figure") or {}),
        paper_rows=rows,
        claims=claims,
        notes=_text(doc, "notes", path, required=False),
        derived=dict(derived),
    )


def _natural(path: Path) -> tuple[Any, ...]:
    """Paper folder, then file stem with its numbers compared as numbers (fig2 before fig10)."""
    parts = re.split(r"(\d+)", path.stem)
    return (path.parent.name, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts))


def find_experiments(root: str | Path, selection: Sequence[str] = ()) -> list[Experiment]:
    """The experiments under ``root`` (``reproduce/``), in paper and file order, filtered by
    ``selection``: paper folders (``wang2004``) or experiment ids (``wang2004/table1``)."""
    root = Path(root)
    files = sorted(
        (p for p in root.glob("*/*.toml") if not p.parent.name.startswith(("_", "."))),
        key=_natural,
    )
    if not files:
        raise ExperimentError(
            f"no experiments in {root}: expected PAPER/EXPERIMENT.toml files; they come with "
            "startlab's source tree (reproduce/): run from a checkout or give --experiments-dir"
        )
    experiments = [load_experiment(p) for p in files]
    if not selection:
        return experiments
    known = {e.id for e in experiments} | {e.paper for e in experiments}
    for s in selection:
        if s not in known:
            papers = sorted({e.paper for e in experiments})
            raise ExperimentError(
                f"unknown experiment {s!r}; papers: {', '.join(papers)} (or PAPER/EXPERIMENT, see "
                "startlab reproduce --list)"
            )
    return [e for e in experiments if e.paper in selection or e.id in selection]
