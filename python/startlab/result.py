"""Running a scenario and reading its results as polars DataFrames."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from startlab import _core
from startlab.scenario import Scenario, core_error, dumps_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["TABLES", "Result", "jain_index", "run", "schema_markdown"]

TABLES = ("flow_series", "queue_series", "flows", "links", "windows", "requests")
"""The tables of a run, in the order they are written."""

_OPTIONAL_TABLES = ("requests",)
"""Tables a run directory written before they existed lacks: read as empty."""

NS_PER_S = 1_000_000_000

_NUMPY_DTYPES: dict[str, np.dtype[Any]] = {
    "f64": np.dtype("<f8"),
    "i64": np.dtype("<i8"),
    "u64": np.dtype("<u8"),
    "u32": np.dtype("<u4"),
    "u8": np.dtype("u1"),
}

_POLARS_DTYPES: dict[str, pl.DataType] = {
    "f64": pl.Float64(),
    "i64": pl.Int64(),
    "u64": pl.UInt64(),
    "u32": pl.UInt32(),
    "u8": pl.UInt8(),
    "str": pl.String(),
}


def _core_schemas() -> dict[str, dict[str, pl.DataType]]:
    """The columns of every table, as the core declares them (``_core.schema()``)."""
    return {
        table["name"]: {c["name"]: _POLARS_DTYPES[c["dtype"]] for c in table["columns"]}
        for table in _core.schema()
    }


_CORE_SCHEMAS = _core_schemas()
"""Table -> column -> polars type; used as is when a table is empty (e.g. a series that
``measure`` switched off), so that every Result has the same columns."""


def schema_markdown() -> str:
    """The reference of every table, as Markdown, from the core's declarations
    (``docs/tables.md`` is this text)."""
    lines = [
        "# Tables",
        "",
        "Every run writes these tables (`startlab run`: one Parquet file each; Python: the",
        "DataFrames of `startlab.Result`). They are declared once, in the simulator core",
        "(`crates/startlab-core/src/measure/mod.rs`); this page is generated from that declaration",
        "by `startlab schema > docs/tables.md`, and a test fails when it is out of date.",
        "",
        "A nullable column is null where the value does not exist (a slow start that never ended,",
        "an unlimited ssthresh, a flow without a size); no table uses `-1`, NaN or infinity for",
        "that. Every `*_ns` column that is a time (`time_ns`, `start_ns`, `ss_exit_ns`,",
        "`completion_ns`, `from_ns`, `to_ns`) has a float copy in seconds next to it (`*_s`) in",
        "`Result`; `queue_series` also has `link_name`, and `flow_series.phase` is an enum of the",
        "phase names.",
    ]
    for table in _core.schema():
        lines += ["", f"## `{table['name']}`", "", table["doc"], ""]
        lines += ["| column | type | unit | null | meaning |", "| --- | --- | --- | --- | --- |"]
        for c in table["columns"]:
            null = "yes" if c["nullable"] else ""
            lines.append(f"| `{c['name']}` | {c['dtype']} | {c['unit']} | {null} | {c['doc']} |")
    return "\n".join(lines) + "\n"


def run(
    scenario: Scenario | Mapping[str, Any] | str | os.PathLike[str],
    *,
    overrides: Iterable[str] = (),
) -> Result:
    """Simulate a scenario and return its results.

    ``scenario`` is a :class:`Scenario`, a document dict, or the path of a TOML file (a ``str``
    is always taken as a path). ``overrides`` are ``"dotted.path=value"`` assignments, as for
    :meth:`Scenario.with_overrides`. Raises :class:`ScenarioError` if the scenario is invalid.
    """
    checked = Scenario.of(scenario, overrides=overrides)
    try:
        output = _core.run(checked.to_json())
    except ValueError as e:
        raise core_error(e) from None
    return Result.from_core(output)


def jain_index(values: Iterable[float] | npt.ArrayLike) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all values are equal, 1/n when one value
    has everything. NaN for no values or all zeros."""
    x = np.asarray(values, dtype=np.float64).ravel()
    squares = float(np.sum(x * x))
    if x.size == 0 or squares == 0.0:
        return math.nan
    return float(np.sum(x)) ** 2 / (x.size * squares)


@dataclass(frozen=True, eq=False)
class Result:
    """The outputs of one run.

    Times are kept in integer nanoseconds (``*_ns`` columns) with a float seconds copy next to
    them (``*_s``) for plotting. "None" (a slow start that never ended, an unlimited ssthresh,
    a flow without a size) is ``null`` in every table; the columns are declared once in the
    core (``startlab.schema()``).
    """

    scenario: dict[str, Any]
    """The resolved scenario: every default filled in; ``scenario.toml`` of a run directory."""
    stats: dict[str, Any]
    """``events``, ``packets_forwarded``, ``sim_time_ns``, ``wall_time_s``, ``jain_index``."""
    flow_series: pl.DataFrame
    """Per-flow samples: cwnd, ssthresh (segments), RTTs, in-flight, delivered bytes, phase."""
    queue_series: pl.DataFrame
    """Per-link samples of the sampled links: queue length, drops, cumulative busy time."""
    flows: pl.DataFrame
    """One row per flow: totals, goodput, slow-start exit, completion time."""
    links: pl.DataFrame
    """One row per link direction: configuration, totals, utilization over the whole run."""
    windows: pl.DataFrame
    """The exact utilization windows requested by ``[[measure.window]]``."""
    requests: pl.DataFrame
    """One row per response of a connection whose application writes them one at a time
    (a flow's ``requests``): size, start, completion, the window it started with."""
    phase_names: tuple[str, ...] = field(default=())
    """The categories of ``flow_series["phase"]``."""
    world: str = "simulator"
    """Where the run happened: ``"simulator"``, or ``"kernel"`` (Linux's TCP over the link
    emulator, :mod:`startlab.kernel`)."""
    kernel: dict[str, Any] = field(default_factory=dict)
    """What only a kernel run has: the kernel release, the emulator's timing error (lateness
    percentiles, hypervisor steal), each connection's final ``TCP_INFO`` figures, the global
    settings used and restored, and what Linux does whatever the scenario says. Empty for a
    simulation."""
    warnings: tuple[str, ...] = field(default=())
    """What the scenario probably does not mean (``"<dotted.path>: <why>"``): an access link
    no faster than the bottleneck, a buffer of a few packets, a run of a few RTTs, a slow
    start that cannot end before the run does, a receive window below the BDP."""

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_core(cls, output: _core.RunOutput) -> Result:
        """A Result from what the core returns for a run (``_core.run``, ``_core.kernel_run``)."""
        names = tuple(_core.phase_names())
        tables = {name: _table(name, output["tables"].get(name, {})) for name in TABLES}
        links = tables["links"]
        return cls(
            scenario=json.loads(output["resolved"]),
            stats=dict(output["stats"]),
            flow_series=_with_phase_names(_with_seconds(tables["flow_series"], "time"), names),
            queue_series=_with_link_names(_with_seconds(tables["queue_series"], "time"), links),
            flows=_with_seconds(tables["flows"], "start", "ss_exit", "completion"),
            links=links,
            windows=_with_seconds(tables["windows"], "from", "to"),
            requests=_with_seconds(tables["requests"], "start", "completion", "idle"),
            phase_names=names,
            warnings=tuple(output["warnings"]),
            world="kernel" if "kernel" in output else "simulator",
            kernel=dict(output.get("kernel", {})),
        )

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Result:
        """Read a run directory written by :meth:`write` (or ``startlab run``)."""
        directory = Path(directory)
        if not directory.is_dir():
            raise FileNotFoundError(f"{directory}: no such run directory")
        missing = [
            f"{name}.parquet"
            for name in TABLES
            if name not in _OPTIONAL_TABLES and not (directory / f"{name}.parquet").is_file()
        ]
        if missing:
            raise FileNotFoundError(
                f"{directory}: not a run directory (missing {', '.join(missing)})"
            )
        frames = {
            name: pl.read_parquet(directory / f"{name}.parquet")
            if (directory / f"{name}.parquet").is_file()
            else _with_seconds(_table(name, {}), "start", "completion", "idle")
            for name in TABLES
        }
        scenario: dict[str, Any] = {}
        if (directory / "scenario.toml").is_file():
            scenario = tomllib.loads((directory / "scenario.toml").read_text("utf-8"))
        summary: dict[str, Any] = {}
        if (directory / "summary.json").is_file():
            summary = json.loads((directory / "summary.json").read_text("utf-8"))
        stats = dict(summary.get("stats", {}))
        warnings = tuple(summary.get("warnings", ()))
        phase = frames["flow_series"].schema.get("phase")
        names = tuple(phase.categories) if isinstance(phase, pl.Enum) else ()
        return cls(
            scenario=scenario,
            stats=stats,
            phase_names=names,
            warnings=warnings,
            world=str(summary.get("world", "simulator")),
            kernel=dict(summary.get("kernel", {})),
            **frames,
        )

    # -- analysis -----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The scenario's name."""
        return str(self.scenario.get("name", "scenario"))

    def link(self, link: str) -> dict[str, Any]:
        """The ``links`` row of a link given by name (``"left->right"``) or alias
        (``"bottleneck"``)."""
        rows = self.links.filter((pl.col("name") == link) | (pl.col("alias") == link))
        if rows.height == 0:
            known = ", ".join(_link_labels(self.links)) or "none"
            raise ValueError(f"unknown link {link!r} (links: {known})")
        return rows.row(0, named=True)

    def utilization(self, link: str, start: float, end: float) -> float:
        """Fraction of ``[start, end]`` (seconds) the link spent transmitting; on a link whose
        capacity varies, the fraction of the bytes its capacity offered that it sent.

        Computed from the cumulative ``busy_ns`` (``sent_bytes`` and ``offered_bytes``) of
        ``queue_series``, linearly interpolated between samples: exact when both ends fall on
        sample times. The link must be one of ``measure.links``.
        """
        row = self.link(link)
        samples = self.queue_series.filter(pl.col("link") == row["link"]).sort("time_ns")
        if samples.height == 0:
            sampled = self.queue_series["link"].unique().to_list()
            names = self.links.filter(pl.col("link").is_in(sampled))
            listed = ", ".join(_link_labels(names)) or "none"
            raise ValueError(
                f"link {row['name']!r} was not sampled: add it to measure.links (sampled: {listed})"
            )
        start_ns, end_ns = round(start * NS_PER_S), round(end * NS_PER_S)
        if not end_ns > start_ns:
            raise ValueError(f"empty interval [{start}, {end}] s: end must be after start")
        times = samples["time_ns"].to_numpy()
        if start_ns < times[0] or end_ns > times[-1]:
            raise ValueError(
                f"[{start}, {end}] s is outside the samples of {row['name']!r} "
                f"([{times[0] / NS_PER_S}, {times[-1] / NS_PER_S}] s)"
            )
        ends = np.array([start_ns, end_ns], dtype=np.float64)
        at = times.astype(np.float64)
        if "offered_bytes" in samples.columns and samples["offered_bytes"].null_count() == 0:
            # A capacity that varies: bytes sent over bytes offered (0 if it offered none).
            sent = np.interp(ends, at, samples["sent_bytes"].to_numpy().astype(np.float64))
            offered = np.interp(ends, at, samples["offered_bytes"].to_numpy().astype(np.float64))
            span = float(offered[1] - offered[0])
            return min(1.0, float(sent[1] - sent[0]) / span) if span > 0 else 0.0
        busy = np.interp(ends, at, samples["busy_ns"].to_numpy().astype(np.float64))
        return float(busy[1] - busy[0]) / (end_ns - start_ns)

    def jain(self, column: str = "goodput_bps", kind: str | None = "tcp") -> float:
        """Jain's fairness index of a ``flows`` column over the flows of a kind (``None``: all)."""
        flows = self.flows if kind is None else self.flows.filter(pl.col("kind") == kind)
        return jain_index(flows[column].to_numpy())

    def throughput(self, interval_s: float) -> pl.DataFrame:
        """Per-flow goodput over consecutive intervals of ``interval_s`` seconds.

        Taken from ``flow_series.delivered_bytes`` (in-order bytes at the receiver), held
        constant between samples; returns ``flow``, ``start_s``, ``end_s``, ``goodput_bps``.
        The last interval ends at the last sample.
        """
        if not interval_s > 0:
            raise ValueError(f"interval_s must be positive, not {interval_s}")
        schema = {
            "flow": pl.UInt32(),
            "start_s": pl.Float64(),
            "end_s": pl.Float64(),
            "goodput_bps": pl.Float64(),
        }
        series = self.flow_series
        if series.height == 0:
            return pl.DataFrame(schema=schema)
        step = max(1, round(interval_s * NS_PER_S))
        last = int(series["time_ns"].max())  # type: ignore[arg-type]
        edges = np.arange(0, last + step, step, dtype=np.int64)
        edges = edges[edges <= last] if last % step == 0 else np.append(edges[edges < last], last)
        if edges.size < 2:
            return pl.DataFrame(schema=schema)
        parts = []
        for (flow,), samples in series.sort("flow", "time_ns").group_by(
            "flow", maintain_order=True
        ):
            times = samples["time_ns"].to_numpy()
            delivered = samples["delivered_bytes"].to_numpy().astype(np.float64)
            index = np.searchsorted(times, edges, side="right") - 1
            at_edges = np.where(index >= 0, delivered[np.clip(index, 0, None)], 0.0)
            seconds = np.diff(edges) / NS_PER_S
            parts.append(
                pl.DataFrame(
                    {
                        "flow": pl.Series(np.full(seconds.size, flow), dtype=pl.UInt32),
                        "start_s": edges[:-1] / NS_PER_S,
                        "end_s": edges[1:] / NS_PER_S,
                        "goodput_bps": np.diff(at_edges) * 8 / seconds,
                    },
                    schema=schema,
                )
            )
        return pl.concat(parts)

    # -- output -------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Stats and per-flow, per-link and window summaries, as written to ``summary.json``."""
        summary: dict[str, Any] = _json_safe(
            {
                "name": self.name,
                "seed": self.scenario.get("seed"),
                "startlab_version": _core.version(),
                "world": self.world,
                "stats": self.stats,
                "warnings": list(self.warnings),
                "flows": self.flows.to_dicts(),
                "links": self.links.to_dicts(),
                "windows": self.windows.to_dicts(),
                **({"kernel": self.kernel} if self.kernel else {}),
            }
        )
        return summary

    def write(self, directory: str | os.PathLike[str], *, plots: bool = True) -> list[Path]:
        """Write ``scenario.toml`` (resolved), one Parquet file per table, ``summary.json`` and,
        unless ``plots=False``, the PNG plots into ``directory`` (created if needed). Returns
        the files written."""
        from startlab import plots as plotting

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written = [directory / "scenario.toml"]
        written[0].write_text(
            f"# Resolved by startlab {_core.version()}: every default filled in.\n"
            f"# Re-run with: startlab run {written[0].name} -o DIR\n\n" + dumps_toml(self.scenario),
            encoding="utf-8",
        )
        for name in TABLES:
            path = directory / f"{name}.parquet"
            getattr(self, name).write_parquet(path)
            written.append(path)
        summary = directory / "summary.json"
        summary.write_text(json.dumps(self.summary(), indent=2) + "\n", encoding="utf-8")
        written.append(summary)
        if plots:
            written += plotting.write_all(self, directory)
        return written

    def __repr__(self) -> str:
        return (
            f"<Result {self.name!r}: {self.flows.height} flows, {self.links.height} links, "
            f"{self.flow_series.height} flow samples, {self.queue_series.height} queue samples>"
        )


# -- conversion --------------------------------------------------------------------------------


def _table(name: str, columns: Mapping[str, _core.Column]) -> pl.DataFrame:
    schema = _CORE_SCHEMAS[name]
    if not columns:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame([_series(f"{name}.{col}", col, data) for col, data in columns.items()])


def _series(where: str, name: str, column: _core.Column) -> pl.Series:
    if isinstance(column, tuple):
        dtype, data, validity = column
        try:
            np_dtype = _NUMPY_DTYPES[dtype]
        except KeyError:
            raise TypeError(f"{where}: unknown column type {dtype!r}") from None
        array = np.frombuffer(data, dtype=np_dtype).astype(np_dtype.newbyteorder("="), copy=False)
        series = pl.Series(name, array)
        if validity is not None:
            present = pl.Series(np.frombuffer(validity, dtype=np.uint8).astype(bool))
            series = pl.select(pl.when(present).then(series)).to_series().alias(name)
        return series
    return pl.Series(name, column, dtype=pl.String)


def _place_after(frame: pl.DataFrame, anchor: str, new: pl.Expr, new_name: str) -> pl.DataFrame:
    columns = [c for c in frame.columns if c != new_name]
    at = columns.index(anchor) + 1
    return frame.with_columns(new).select([*columns[:at], new_name, *columns[at:]])


def _with_seconds(frame: pl.DataFrame, *stems: str) -> pl.DataFrame:
    """Add ``<stem>_s`` (float seconds, null where the ``_ns`` value is) after every
    ``<stem>_ns`` column."""
    for stem in stems:
        ns, s = f"{stem}_ns", f"{stem}_s"
        if ns not in frame.columns:
            continue
        seconds = (pl.col(ns).cast(pl.Float64) / NS_PER_S).alias(s)
        frame = _place_after(frame, ns, seconds, s)
    return frame


def _with_phase_names(frame: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    if "phase" not in frame.columns or not names:
        return frame
    codes = frame["phase"]
    if codes.len() and int(codes.max()) >= len(names):  # type: ignore[arg-type]
        top = int(codes.max())  # type: ignore[arg-type]
        raise RuntimeError(f"flow_series.phase has code {top}, the core names only {names}")
    named = pl.Series("phase", list(names), dtype=pl.String).gather(codes.cast(pl.UInt32))
    return frame.with_columns(named.alias("phase").cast(pl.Enum(list(names))))


def _with_link_names(frame: pl.DataFrame, links: pl.DataFrame) -> pl.DataFrame:
    if "link" not in frame.columns or "name" not in links.columns:
        return frame
    names = links.select(
        pl.col("link").cast(frame.schema["link"]), pl.col("name").alias("link_name")
    )
    joined = frame.join(names, on="link", how="left", maintain_order="left")
    columns = list(frame.columns)
    at = columns.index("link") + 1
    return joined.select([*columns[:at], "link_name", *columns[at:]])


def _link_labels(links: pl.DataFrame) -> list[str]:
    return [
        f"{name} ({alias})" if alias else name
        for name, alias in zip(links["name"].to_list(), links["alias"].to_list(), strict=True)
    ]


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value
