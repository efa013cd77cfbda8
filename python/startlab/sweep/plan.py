"""Sweep plans: a base scenario, the axes to vary, the metrics to keep and the plots to draw.

A plan is a TOML document (``docs/sweeps.md``). :class:`SweepPlan` checks its structure when it
is created; :meth:`SweepPlan.points` builds and resolves the scenario of every point of the grid,
so a plan whose points are all valid scenarios is known before anything runs.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from startlab import _core, kernel
from startlab.scenario import (
    ScenarioError,
    dumps_toml,
    files_relative_to,
    parse_toml,
    parse_value,
    read_text,
    resolve_document,
    set_path,
)
from startlab.sweep.cache import run_key
from startlab.sweep.metrics import check_metrics, default_metrics, parse_metrics
from startlab.sweep.model import (
    ALIAS_TARGETS,
    ALIASES,
    FIXED_COLUMNS,
    PLAN_FIELDS,
    SCENARIO_FIELDS,
    TCP_KINDS,
    WORLDS,
    Axis,
    PlotSpec,
    Point,
    SweepPlanError,
    canonical_json,
    describe,
    describe_type,
    describe_values,
    duration_text,
    expand_range,
    file_name,
    format_number,
    numeric_column,
    parse_quantity,
    split_path,
    toml_key,
    toml_value,
)

__all__ = [
    "ALIASES",
    "Axis",
    "Point",
    "SweepPlan",
    "SweepPlanError",
    "apply_values",
    "canonical_json",
    "describe_values",
    "expand_range",
    "numeric_column",
    "parse_plan_override",
    "parse_plots",
]


# -- the plan ------------------------------------------------------------------------------------


class SweepPlan:
    """A sweep plan, checked when it is created (structure, axes, metrics, plots).

    Build one with :meth:`load`, :meth:`from_toml` or :meth:`from_dict`; ``overrides`` are
    ``"dotted.path=value"`` assignments on the plan document (``base.duration=5s``,
    ``axes.seed={count=2}``, ``axes."topology.bottleneck.rate"=["10Mbps"]``), applied after a
    ``base`` file has been read in. :meth:`points` resolves every point's scenario.
    """

    def __init__(
        self,
        plan_document: Mapping[str, Any],
        *,
        base_dir: str | os.PathLike[str] | None = None,
        source: str | None = None,
        overrides: Iterable[str] = (),
    ) -> None:
        if not isinstance(plan_document, Mapping):
            raise SweepPlanError(
                f"a sweep plan must be a table, not {type(plan_document).__name__}"
            )
        document: dict[str, Any] = copy.deepcopy(dict(plan_document))
        self._source = source
        base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
        unknown = [k for k in document if k not in PLAN_FIELDS]
        if unknown:
            raise SweepPlanError(
                f"{toml_key(unknown[0])}: unknown plan field; allowed: {', '.join(PLAN_FIELDS)}"
            )
        self._base_file: str | None = None
        self._read_base(document, base_dir)
        # Trace and CSV files of the points' links are looked up from here.
        self._files_dir = Path(self._base_file).parent if self._base_file else base_dir
        if isinstance(overrides, str):
            overrides = [overrides]
        for assignment in overrides:
            path_parts, value = parse_plan_override(assignment)
            if path_parts[0] not in PLAN_FIELDS:
                raise SweepPlanError(
                    f"override {assignment!r}: {path_parts[0]!r} is not a plan field "
                    f"({', '.join(PLAN_FIELDS)}); scenario fields are under base, e.g. "
                    "base.duration=5s"
                )
            try:
                set_path(document, path_parts, value)
            except ScenarioError as e:
                raise SweepPlanError(f"override {assignment!r}: {e}") from None
            if path_parts == ["base"]:  # another base file
                self._read_base(document, Path.cwd())
        self._document = document
        self._base: dict[str, Any] = dict(document["base"])

        name = document.get("name")
        if name is None:
            name = Path(source).stem if source and source != "<string>" else "sweep"
        if not isinstance(name, str) or not name.strip():
            raise SweepPlanError(f"name: expected a non-empty string, not {describe_type(name)}")
        self.name: str = name
        description = document.get("description", "")
        if not isinstance(description, str):
            raise SweepPlanError(
                f"description: expected a string, not {describe_type(description)}"
            )
        self.description: str = description
        world = document.get("world", "simulator")
        if world not in WORLDS:
            raise SweepPlanError(
                f"world: {toml_value(world)} is not a world; allowed: "
                + ", ".join(f'"{w}"' for w in WORLDS)
            )
        self.world: str = world
        """Where the runs happen unless a ``world`` axis says otherwise."""

        self.dimensions: list[list[Axis]] = _parse_axes(
            document.get("axes", {}), document.get("zip", {})
        )
        self.axes: list[Axis] = [axis for dimension in self.dimensions for axis in dimension]
        _check_conflicts(self.axes)
        if "metrics" in document:
            self.metrics = parse_metrics(document["metrics"], reserved=self.columns_reserved())
        else:
            self.metrics = default_metrics(self._base)
        self.plots = parse_plots(document.get("plots", []), self)
        self._points: list[Point] | None = None

    def _read_base(self, document: dict[str, Any], base_dir: Path) -> None:
        """Replace a ``base`` path by the scenario document it names."""
        base = document.get("base")
        if base is None:
            raise SweepPlanError(
                "base: missing: give the base scenario as a table ([base]) or as the path of a "
                'scenario file relative to the plan (base = "scenario.toml")'
            )
        if isinstance(base, (str, os.PathLike)):
            path = Path(base)
            if not path.is_absolute():
                path = base_dir / path
            self._base_file = str(path)
            try:
                document["base"] = _read_toml(path)
            except SweepPlanError as e:
                raise SweepPlanError(f"base: {e}") from None
        elif not isinstance(base, Mapping):
            raise SweepPlanError(
                f"base: expected a table or the path of a scenario file, not {describe_type(base)}"
            )

    # -- construction -----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, overrides: Iterable[str] = ()) -> SweepPlan:
        """Read a plan file; a ``base`` path in it is relative to the plan's folder."""
        path = Path(path)
        document = _read_toml(path)
        return cls(document, base_dir=path.parent, source=str(path), overrides=overrides)

    @classmethod
    def from_toml(
        cls,
        text: str,
        *,
        source: str = "<string>",
        base_dir: str | os.PathLike[str] | None = None,
        overrides: Iterable[str] = (),
    ) -> SweepPlan:
        """Parse a plan from TOML text; ``base_dir`` is where a ``base`` path is looked up
        (default: the current directory)."""
        return cls(parse_toml(text, source), base_dir=base_dir, source=source, overrides=overrides)

    @classmethod
    def from_dict(
        cls,
        document: Mapping[str, Any],
        *,
        base_dir: str | os.PathLike[str] | None = None,
        overrides: Iterable[str] = (),
    ) -> SweepPlan:
        """Use a plan document already in memory (the dict form of the TOML file)."""
        return cls(document, base_dir=base_dir, overrides=overrides)

    # -- access -----------------------------------------------------------------------------------

    @property
    def source(self) -> str | None:
        """The plan file, if it was read from one."""
        return self._source

    @property
    def base_file(self) -> str | None:
        """The scenario file ``base`` named, if it was a path."""
        return self._base_file

    @property
    def base(self) -> dict[str, Any]:
        """A copy of the base scenario document (not resolved: it may be incomplete, the axes
        fill it in)."""
        return copy.deepcopy(self._base)

    def axis(self, name: str) -> Axis:
        """The axis called ``name``."""
        for axis in self.axes:
            if axis.name == name:
                return axis
        raise KeyError(name)

    @property
    def size(self) -> int:
        """The number of points: the product of the dimensions' lengths."""
        return math.prod(len(dimension[0].values) for dimension in self.dimensions)

    def columns_reserved(self) -> set[str]:
        """Column names of the results table that metrics can't take."""
        names = set(FIXED_COLUMNS) | {"seed"}
        for axis in self.axes:
            names.add(axis.name)
            names.add(numeric_column(axis) or axis.name)
        return names

    def to_dict(self) -> dict[str, Any]:
        """The plan document with the base scenario inline and the overrides applied."""
        return copy.deepcopy(self._document)

    def to_toml(self) -> str:
        """The plan as TOML, with the base scenario inline: ``plan.toml`` of a sweep directory."""
        return dumps_toml(self._document)

    def points(self) -> list[Point]:
        """Every point of the grid with its resolved scenario, in order (the first axis varies
        slowest). Raises :class:`SweepPlanError` naming the first point whose scenario is
        invalid. The result is computed once and kept."""
        if self._points is None:
            self._points = _build_points(self)
            check_metrics(self.metrics, self._points)
        return list(self._points)

    def __repr__(self) -> str:
        axes = ", ".join(f"{a.name}[{len(a.values)}]" for a in self.axes)
        return f"<SweepPlan {self.name!r}: {self.size} points over {axes or 'no axes'}>"


# -- plots ---------------------------------------------------------------------------------------

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


def parse_plots(entries: Any, plan: SweepPlan) -> list[PlotSpec]:
    """The ``[[plots]]`` of a plan, checked against its axes and metrics."""
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
                f"{where}.{toml_key(unknown[0])}: unknown plot field; allowed: {allowed}"
            )
        for required in ("x", "y"):
            if required not in entry:
                raise SweepPlanError(f"{where}.{required}: missing")

        def axis_name(field: str, value: Any, where: str = where) -> str:
            if value not in axes:
                listed = ", ".join(axes) or "none"
                raise SweepPlanError(
                    f"{where}.{field}: {toml_value(value)} is not an axis of this plan "
                    f"(axes: {listed})"
                )
            return str(value)

        x = axis_name("x", entry["x"])
        y = entry["y"]
        if y not in numeric_y:
            if y in metrics:
                raise SweepPlanError(f"{where}.y: {y!r} is text; a plot needs a numeric metric")
            raise SweepPlanError(
                f"{where}.y: {toml_value(y)} is not a numeric metric of this plan "
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
            axis = plan.axis(axis_name(f"where.{toml_key(name)}", name))
            chosen = tuple(wanted) if isinstance(wanted, list) else (wanted,)
            for value in chosen:
                if value not in axis.values:
                    raise SweepPlanError(
                        f"{where}.where.{toml_key(name)}: {toml_value(value)} is not a value "
                        f"of the axis; values: {', '.join(toml_value(v) for v in axis.values)}"
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
            raise SweepPlanError(f'{where}.xscale: {toml_value(xscale)}: allowed: "linear", "log"')
        yscale = entry.get("yscale", "linear")
        if yscale not in ("linear", "log"):
            raise SweepPlanError(f'{where}.yscale: {toml_value(yscale)}: allowed: "linear", "log"')
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
                f"{where}.errorbars: {toml_value(errorbars)}: allowed: {', '.join(_ERRORBARS)}"
            )
        name = entry.get("name") or f"{y}-vs-{x}" + (f"-by-{series}" if series else "")
        if not isinstance(name, str):
            raise SweepPlanError(f"{where}.name: expected a string")
        name = file_name(name)
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


# -- axes ----------------------------------------------------------------------------------------


def _parse_axes(axes: Any, zips: Any) -> list[list[Axis]]:
    if not isinstance(axes, Mapping):
        raise SweepPlanError(f"axes: expected a table of axis = values, not {describe_type(axes)}")
    if not isinstance(zips, Mapping):
        raise SweepPlanError(
            f"zip: expected tables [zip.NAME] of axis = values, not {describe_type(zips)}"
        )
    dimensions: list[list[Axis]] = []
    for name, spec in axes.items():
        where = f"axes.{toml_key(name)}"
        _check_axis_name(name, where)
        values, log = expand_range(spec, where, seed=name == "seed")
        _check_alias_values(name, values, where)
        dimensions.append([Axis(name, tuple(values), log)])
    for group, members in zips.items():
        where = f"zip.{toml_key(group)}"
        if not isinstance(members, Mapping) or not members:
            raise SweepPlanError(
                f"{where}: expected a table of two or more axes that vary together, "
                f"not {describe_type(members)}"
            )
        dimension = []
        for name, spec in members.items():
            member_where = f"{where}.{toml_key(name)}"
            _check_axis_name(name, member_where)
            values, log = expand_range(spec, member_where, seed=name == "seed")
            _check_alias_values(name, values, member_where)
            dimension.append(Axis(name, tuple(values), log, group=str(group)))
        lengths = {axis.name: len(axis.values) for axis in dimension}
        if len(set(lengths.values())) > 1:
            counts = ", ".join(f"{toml_key(n)} has {c}" for n, c in lengths.items())
            raise SweepPlanError(f"{where}: zipped axes need the same number of values ({counts})")
        dimensions.append(dimension)
    names = [axis.name for dimension in dimensions for axis in dimension]
    for name in names:
        if names.count(name) > 1:
            raise SweepPlanError(
                f"axes: {toml_key(name)} is varied twice (in [axes] and a [zip] group?)"
            )
    return dimensions


def _check_alias_values(name: str, values: Sequence[Any], where: str) -> None:
    """Check what the aliases take before any point is built: algorithm names, durations for
    ``rtt``, rates for ``bandwidth``."""
    if name in ("algorithm", "cc", "startup"):
        algorithms = _known_algorithms()
        for value in values:
            try:
                _split_algorithm(name, value, algorithms)
            except ScenarioError as e:
                raise SweepPlanError(f"{where}: {str(e).partition(': ')[2]}") from None
    if name == "world":
        for value in values:
            if value not in WORLDS:
                raise SweepPlanError(
                    f"{where}: {toml_value(value)} is not a world; allowed: "
                    + ", ".join(f'"{w}"' for w in WORLDS)
                )
    family = {"rtt": "duration", "bandwidth": "rate"}.get(name)
    if family:
        for value in values:
            quantity = parse_quantity(value)
            if quantity is None or quantity.family != family:
                example = '"100ms"' if family == "duration" else '"40Mbps"'
                raise SweepPlanError(
                    f"{where}: {toml_value(value)} is not a {family}; e.g. {example}"
                )


def _check_axis_name(name: str, where: str) -> None:
    if name in ALIASES or "." in name or "[" in name:
        if name not in ALIASES:
            try:
                split_path(name)
            except SweepPlanError as e:
                raise SweepPlanError(f"{where}: {e}") from None
        return
    if name not in SCENARIO_FIELDS:
        raise SweepPlanError(
            f"{where}: unknown axis; an axis is a dotted scenario path such as "
            f'"topology.bottleneck.rate", a top-level field ({", ".join(SCENARIO_FIELDS)}), '
            f"or an alias ({', '.join(sorted(ALIASES))})"
        )


def _targets(name: str) -> list[tuple[str, ...]]:
    if name in ALIAS_TARGETS:
        return ALIAS_TARGETS[name]
    return [tuple(split_path(name))]


def _check_conflicts(axes: Sequence[Axis]) -> None:
    for a, b in itertools.combinations(axes, 2):
        for ta in _targets(a.name):
            for tb in _targets(b.name):
                n = min(len(ta), len(tb))
                if all(x == y or "*" in (x, y) for x, y in zip(ta[:n], tb[:n], strict=True)):
                    shown = ".".join(ta if len(ta) >= len(tb) else tb)
                    raise SweepPlanError(
                        f"axes: {toml_key(a.name)} and {toml_key(b.name)} both set {shown}; "
                        "vary it once"
                    )


# -- points --------------------------------------------------------------------------------------


def _build_points(plan: SweepPlan) -> list[Point]:
    choices = [range(len(dimension[0].values)) for dimension in plan.dimensions]
    total = plan.size
    points: list[Point] = []
    cache: dict[tuple[str, str], str] = {}
    algorithms = _known_algorithms()
    for index, combination in enumerate(itertools.product(*choices)):
        values: dict[str, Any] = {}
        for dimension, choice in zip(plan.dimensions, combination, strict=True):
            for axis in dimension:
                values[axis.name] = axis.values[choice]
        document = _copy(plan._base)
        try:
            document = apply_values(document, values, algorithms=algorithms)
            document = files_relative_to(document, plan._files_dir)
            resolved = resolve_document(document)  # what Scenario(document).resolved() gives
        except ScenarioError as e:
            prefix = f"point {index} of {total}"
            if values:
                prefix += f" ({describe_values(values)})"
            raise SweepPlanError(f"{prefix}: {e}") from None
        world = values.get("world", plan.world)
        if world == "kernel":
            try:
                kernel.check(document)
            except ScenarioError as e:
                prefix = f"point {index} of {total} ({describe_values(values)}), world kernel"
                raise SweepPlanError(f"{prefix}: {e}") from None
        text = canonical_json(resolved)
        key = cache.get((text, world))
        if key is None:
            key = cache[(text, world)] = run_key(text, world)
        points.append(Point(index, values, text, key, world))
    return points


def apply_values(
    document: dict[str, Any],
    values: Mapping[str, Any],
    *,
    algorithms: Mapping[str, set[str]] | None = None,
) -> dict[str, Any]:
    """Set the axis values of one point in a scenario document (changed in place and
    returned). Aliases are expanded; ``rtt`` is applied last, from the access delays the rest
    of the point gives."""
    algorithms = algorithms if algorithms is not None else _known_algorithms()
    later = []
    for name, value in values.items():
        if name == "world":
            continue  # where the run happens, not a scenario field
        if name == "rtt":
            later.append(value)
        elif name in ("algorithm", "cc", "startup"):
            _set_algorithm(document, name, value, algorithms)
        elif name in ALIAS_TARGETS:
            set_path(document, list(ALIAS_TARGETS[name][0]), _copy(value))
        else:
            set_path(document, split_path(name), _copy(value))
    for value in later:
        _set_rtt(document, value)
    return document


def _set_algorithm(
    document: dict[str, Any], name: str, value: Any, algorithms: Mapping[str, set[str]]
) -> None:
    cc, startup = _split_algorithm(name, value, algorithms)
    flows = document.get("flows")
    tcp = (
        [f for f in flows if isinstance(f, dict) and f.get("kind", "tcp") in TCP_KINDS]
        if isinstance(flows, list)
        else []
    )
    if not tcp:
        raise ScenarioError(f"{name}: the base scenario has no TCP flow to set")
    for flow in tcp:
        if cc is not None:
            flow["cc"] = cc
        if startup is not None:
            flow["startup"] = startup


def _split_algorithm(
    name: str, value: Any, algorithms: Mapping[str, set[str]]
) -> tuple[str | None, str | None]:
    """``"newreno+lss"`` -> ``("newreno", "lss")`` for ``algorithm``; ``cc`` and ``startup``
    set one of the two."""
    if not isinstance(value, str) or not value:
        raise ScenarioError(
            f'{name}: expected an algorithm name such as "newreno+lss", not {describe_type(value)}'
        )
    cc: str | None
    startup: str | None
    if name == "algorithm":
        cc, _, startup = value.partition("+")
        startup = startup or "default"
    elif name == "cc":
        cc, startup = value, None
    else:
        cc, startup = None, value
    if cc is not None and algorithms.get("cc") and cc not in algorithms["cc"]:
        known = ", ".join(f'"{n}"' for n in sorted(algorithms["cc"]))
        raise ScenarioError(
            f'{name}: unknown congestion control "{cc}" in "{value}"; available: {known}'
        )
    if (
        startup is not None
        and startup != "default"
        and algorithms.get("startup")
        and startup not in algorithms["startup"]
    ):
        known = ", ".join(f'"{n}"' for n in sorted(algorithms["startup"]))
        raise ScenarioError(
            f'{name}: unknown slow start "{startup}" in "{value}"; available: "default", {known}'
        )
    return cc, startup


def _set_rtt(document: dict[str, Any], value: Any) -> None:
    rtt = parse_quantity(value)
    if rtt is None or rtt.family != "duration":
        raise ScenarioError(f'rtt: expected a duration such as "100ms", not {describe_type(value)}')
    topology = document.get("topology")
    if not isinstance(topology, dict) or topology.get("kind", "dumbbell") != "dumbbell":
        raise ScenarioError(
            "rtt: only for a dumbbell topology; vary topology.bottleneck.delay instead"
        )
    bottleneck = topology.setdefault("bottleneck", {})
    if not isinstance(bottleneck, dict):
        raise ScenarioError(
            f"topology.bottleneck: expected a table, not {describe_type(bottleneck)}"
        )
    access_ns, reverse_ns = _fixed_delays(document)
    total_ns = round(rtt.si * 1e9)
    one_way: float
    if reverse_ns is not None:
        one_way = total_ns - access_ns - reverse_ns
    else:
        one_way = (total_ns - access_ns) / 2
    if one_way < 0:
        raise ScenarioError(
            f"rtt: {value} is shorter than the round trip of the access links "
            f"({format_number(access_ns / 1e6)}ms)"
        )
    bottleneck["delay"] = duration_text(round(one_way))


_FIXED_DELAYS: dict[str, tuple[int, int | None]] = {}


def _copy(value: Any) -> Any:
    """A deep copy of a document made of dicts, lists and immutable values (much faster than
    ``copy.deepcopy``, which matters with thousands of points)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _fixed_delays(document: dict[str, Any]) -> tuple[int, int | None]:
    """The round trip (ns) of the first pair's access links, and the bottleneck's reverse
    delay if the document sets one, as the core describes the network. They depend on the
    topology's other fields only, so they are asked for once per distinct topology."""
    topology = dict(document["topology"])
    bottleneck = dict(topology.pop("bottleneck"))
    bottleneck.pop("delay", None)
    key = json.dumps([topology, bottleneck], sort_keys=True, default=str)
    if key not in _FIXED_DELAYS:
        described = _copy(document)
        # The access links do not depend on the bottleneck's delay, which the core needs.
        described["topology"]["bottleneck"].setdefault("delay", "0s")
        network = describe(described)
        first_pair = {"s0", "r0"}
        access_ns = sum(
            link.delay_ns
            for link in network.links
            if link.src in first_pair or link.dst in first_pair
        )
        forward = network.find_links("bottleneck")[0]
        reverse = next(
            link.delay_ns
            for link in network.links
            if (link.src, link.dst) == (forward.dst, forward.src)
        )
        if len(_FIXED_DELAYS) > 4096:
            _FIXED_DELAYS.clear()
        _FIXED_DELAYS[key] = (access_ns, reverse if "reverse_delay" in bottleneck else None)
    return _FIXED_DELAYS[key]


def _known_algorithms() -> dict[str, set[str]]:
    known: dict[str, set[str]] = {"cc": set(), "startup": set()}
    for info in _core.algorithms():
        known.setdefault(info["role"], set()).add(info["name"])
    return known


# -- paths, overrides, TOML ----------------------------------------------------------------------


def parse_plan_override(assignment: str) -> tuple[list[str], Any]:
    """Split ``'axes."topology.bottleneck.rate"=["10Mbps"]'`` into its path and its value (TOML
    if it parses, else text)."""
    match = re.fullmatch(r'\s*((?:"[^"]*"|[^=])+?)\s*=(.*)', assignment, flags=re.S)
    if not match:
        raise SweepPlanError(
            f"override {assignment!r}: expected PATH=VALUE, e.g. base.duration=5s or "
            "axes.seed={count=2}"
        )
    try:
        path = split_path(match.group(1))
    except SweepPlanError as e:
        raise SweepPlanError(f"override {assignment!r}: {e}") from None
    return path, parse_value(match.group(2).strip())


def _read_toml(path: Path) -> dict[str, Any]:
    text = read_text(path, "a TOML file", SweepPlanError)
    try:
        return parse_toml(text, str(path))
    except ScenarioError as e:
        raise SweepPlanError(str(e)) from None
