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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from startlab import _core
from startlab.scenario import (
    Scenario,
    ScenarioError,
    _parse_toml,
    _parse_value,
    _resolve,
    _set_path,
    dumps_toml,
    read_text,
)
from startlab.sweep.cache import run_key
from startlab.sweep.quantity import Quantity, format_number, parse_quantity

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
]


class SweepPlanError(ScenarioError):
    """A sweep plan is invalid: its structure, an axis, a metric, a plot, or the scenario of one
    of its points. The message starts with where (``axes.rtt.steps``, ``metrics.util``,
    ``point 12 (rtt="20ms", seed=3): flows[0].cc``) and says what is wrong and what is allowed.
    """


PLAN_FIELDS = ("name", "description", "base", "axes", "zip", "metrics", "plots")
SCENARIO_FIELDS = ("name", "seed", "duration", "topology", "tcp", "flows", "measure")

ALIASES: dict[str, str] = {
    "algorithm": 'congestion control and slow start of every TCP flow: "newreno" sets cc = '
    '"newreno" and startup = "default", "newreno+lss" sets cc = "newreno" and startup = "lss"',
    "cc": "flows.N.cc of every TCP flow",
    "startup": "flows.N.startup of every TCP flow",
    "bandwidth": "topology.bottleneck.rate",
    "rtt": "round-trip propagation delay of the first pair of a dumbbell, set through "
    "topology.bottleneck.delay (the access links keep their delays)",
    "buffer": "topology.bottleneck.queue.limit",
    "loss": "topology.bottleneck.loss",
}
"""Axis names that are not scenario paths, and what they set."""

_ALIAS_TARGETS: dict[str, list[tuple[str, ...]]] = {
    "algorithm": [("flows", "*", "cc"), ("flows", "*", "startup")],
    "cc": [("flows", "*", "cc")],
    "startup": [("flows", "*", "startup")],
    "bandwidth": [("topology", "bottleneck", "rate")],
    "rtt": [("topology", "bottleneck", "delay")],
    "buffer": [("topology", "bottleneck", "queue", "limit")],
    "loss": [("topology", "bottleneck", "loss")],
}
_TCP_KINDS = ("tcp", "tcp-arrivals")
_RANGE_KEYS = ("from", "to", "steps", "step", "count", "scale")


# -- the parts of a plan -------------------------------------------------------------------------


@dataclass(frozen=True)
class Axis:
    """One varied parameter: a dotted scenario path or an alias (:data:`ALIASES`)."""

    name: str
    """As written in the plan: ``"rtt"``, ``"topology.bottleneck.rate"``, ``"seed"``."""
    values: tuple[Any, ...]
    """The values, in order."""
    log: bool = False
    """Generated on a logarithmic scale (plots use a logarithmic x axis)."""
    group: str | None = None
    """The ``[zip.NAME]`` group it varies with, if any."""


@dataclass(frozen=True)
class Point:
    """One run of a sweep: where it is in the grid and the scenario it runs."""

    index: int
    """Position in the plan's order (the first axis varies slowest)."""
    values: Mapping[str, Any]
    """Axis name -> value, as written in the plan."""
    scenario: str
    """The resolved scenario as canonical JSON (:func:`canonical_json`): what is simulated."""
    key: str
    """Content hash of ``scenario`` and the simulator build (:func:`startlab.sweep.run_key`)."""

    def label(self) -> str:
        """``point 12 (rtt="20ms", seed=3)``."""
        return f"point {self.index} ({describe_values(self.values)})"


def describe_values(values: Mapping[str, Any]) -> str:
    """``rtt="20ms", seed=3``: axis values as in error messages and the summary."""
    return ", ".join(f"{_key(name)}={_toml_value(value)}" for name, value in values.items())


def canonical_json(resolved: Mapping[str, Any]) -> str:
    """The canonical JSON text of a resolved scenario: sorted keys, no spaces, UTF-8. Equal
    scenarios give equal text, so its hash identifies a run."""
    return json.dumps(
        resolved, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


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
        from startlab.sweep.metrics import default_metrics, parse_metrics
        from startlab.sweep.report import parse_plots

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
                f"{_key(unknown[0])}: unknown plan field; allowed: {', '.join(PLAN_FIELDS)}"
            )
        self._base_file: str | None = None
        self._read_base(document, base_dir)
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
                _set_path(document, path_parts, value)
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
            raise SweepPlanError(f"name: expected a non-empty string, not {_describe(name)}")
        self.name: str = name
        description = document.get("description", "")
        if not isinstance(description, str):
            raise SweepPlanError(f"description: expected a string, not {_describe(description)}")
        self.description: str = description

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
                f"base: expected a table or the path of a scenario file, not {_describe(base)}"
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
        return cls(_parse_toml(text, source), base_dir=base_dir, source=source, overrides=overrides)

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
        from startlab.sweep.report import FIXED_COLUMNS

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
            from startlab.sweep.metrics import check_metrics

            check_metrics(self.metrics, self._points)
        return list(self._points)

    def __repr__(self) -> str:
        axes = ", ".join(f"{a.name}[{len(a.values)}]" for a in self.axes)
        return f"<SweepPlan {self.name!r}: {self.size} points over {axes or 'no axes'}>"


# -- axes ----------------------------------------------------------------------------------------


def _parse_axes(axes: Any, zips: Any) -> list[list[Axis]]:
    if not isinstance(axes, Mapping):
        raise SweepPlanError(f"axes: expected a table of axis = values, not {_describe(axes)}")
    if not isinstance(zips, Mapping):
        raise SweepPlanError(
            f"zip: expected tables [zip.NAME] of axis = values, not {_describe(zips)}"
        )
    dimensions: list[list[Axis]] = []
    for name, spec in axes.items():
        where = f"axes.{_key(name)}"
        _check_axis_name(name, where)
        values, log = expand_range(spec, where, seed=name == "seed")
        _check_alias_values(name, values, where)
        dimensions.append([Axis(name, tuple(values), log)])
    for group, members in zips.items():
        where = f"zip.{_key(group)}"
        if not isinstance(members, Mapping) or not members:
            raise SweepPlanError(
                f"{where}: expected a table of two or more axes that vary together, "
                f"not {_describe(members)}"
            )
        dimension = []
        for name, spec in members.items():
            member_where = f"{where}.{_key(name)}"
            _check_axis_name(name, member_where)
            values, log = expand_range(spec, member_where, seed=name == "seed")
            _check_alias_values(name, values, member_where)
            dimension.append(Axis(name, tuple(values), log, group=str(group)))
        lengths = {axis.name: len(axis.values) for axis in dimension}
        if len(set(lengths.values())) > 1:
            counts = ", ".join(f"{_key(n)} has {c}" for n, c in lengths.items())
            raise SweepPlanError(f"{where}: zipped axes need the same number of values ({counts})")
        dimensions.append(dimension)
    names = [axis.name for dimension in dimensions for axis in dimension]
    for name in names:
        if names.count(name) > 1:
            raise SweepPlanError(
                f"axes: {_key(name)} is varied twice (in [axes] and a [zip] group?)"
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
    family = {"rtt": "duration", "bandwidth": "rate"}.get(name)
    if family:
        for value in values:
            quantity = parse_quantity(value)
            if quantity is None or quantity.family != family:
                example = '"100ms"' if family == "duration" else '"40Mbps"'
                raise SweepPlanError(
                    f"{where}: {_toml_value(value)} is not a {family}; e.g. {example}"
                )


def _check_axis_name(name: str, where: str) -> None:
    if name in ALIASES or "." in name or "[" in name:
        if name not in ALIASES:
            try:
                _split_path(name)
            except SweepPlanError as e:
                raise SweepPlanError(f"{where}: {e}") from None
        return
    if name not in SCENARIO_FIELDS:
        raise SweepPlanError(
            f"{where}: unknown axis; an axis is a dotted scenario path such as "
            f'"topology.bottleneck.rate", a top-level field ({", ".join(SCENARIO_FIELDS)}), '
            f"or an alias ({', '.join(sorted(ALIASES))})"
        )


def expand_range(spec: Any, where: str, *, seed: bool = False) -> tuple[list[Any], bool]:
    """The values of an axis: a list as written, or a range table
    (``{ from, to, steps [, scale = "log"] }``, ``{ from, to, step }`` or
    ``{ count [, from] [, step] }``). Returns ``(values, logarithmic)``."""
    if isinstance(spec, list):
        if not spec:
            raise SweepPlanError(f"{where}: empty list: an axis needs at least one value")
        return list(spec), False
    if not isinstance(spec, Mapping):
        if seed and isinstance(spec, int) and not isinstance(spec, bool):
            raise SweepPlanError(
                f"{where}: expected a list of seeds or {{ count = N }}, not the number {spec} "
                f"(write [{spec}] for one seed or {{ count = {spec} }} for {spec} seeds)"
            )
        raise SweepPlanError(
            f"{where}: expected a list of values or a range table "
            f"({{ from, to, steps }}, {{ from, to, step }} or {{ count }}), not {_describe(spec)}"
        )
    unknown = [k for k in spec if k not in _RANGE_KEYS]
    if unknown:
        raise SweepPlanError(
            f"{where}.{_key(unknown[0])}: unknown range field; allowed: {', '.join(_RANGE_KEYS)}"
        )
    scale = spec.get("scale", "linear")
    if scale not in ("linear", "log"):
        raise SweepPlanError(f'{where}.scale: {_toml_value(scale)}: allowed: "linear", "log"')
    log = scale == "log"
    if "count" in spec:
        return _count_range(spec, where, log), False
    if "from" not in spec or "to" not in spec:
        missing = "from" if "from" not in spec else "to"
        raise SweepPlanError(
            f"{where}.{missing}: missing; a range is {{ from, to, steps }}, {{ from, to, step }} "
            "or { count [, from] }"
        )
    if ("steps" in spec) == ("step" in spec):
        raise SweepPlanError(
            f"{where}: give either steps (the number of values, ends included) or step "
            "(the increment)"
        )
    start, start_unit = _range_end(spec["from"], f"{where}.from")
    stop, stop_unit = _range_end(spec["to"], f"{where}.to")
    if (start_unit is None) != (stop_unit is None) or (
        start_unit is not None and stop_unit is not None and start_unit.family != stop_unit.family
    ):
        raise SweepPlanError(
            f"{where}: from ({_toml_value(spec['from'])}) and to ({_toml_value(spec['to'])}) "
            "must be numbers of the same kind (both plain, or both durations, rates, sizes...)"
        )
    if start_unit is not None and stop_unit is not None:
        stop = Quantity(stop, stop_unit.unit).to(start_unit.unit).number
    integers = start_unit is None and all(
        isinstance(spec[k], int) and not isinstance(spec[k], bool) for k in ("from", "to")
    )
    if "steps" in spec:
        steps = spec["steps"]
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise SweepPlanError(
                f"{where}.steps: must be a whole number of at least 1 (the number of values, "
                f"ends included), not {_toml_value(steps)}"
            )
        if log and (start <= 0 or stop <= 0):
            raise SweepPlanError(
                f'{where}: scale = "log" needs from and to above zero '
                f"(from = {_toml_value(spec['from'])}, to = {_toml_value(spec['to'])})"
            )
        if steps == 1:
            numbers = [start]
        elif log:
            ratio = math.log(stop / start) / (steps - 1)
            numbers = [start * math.exp(ratio * i) for i in range(steps)]
            numbers[-1] = stop
        else:
            numbers = [start + (stop - start) * i / (steps - 1) for i in range(steps)]
            numbers[-1] = stop
    else:
        if log:
            raise SweepPlanError(f'{where}.step: a step is linear; with scale = "log" give steps')
        step, step_unit = _range_end(spec["step"], f"{where}.step")
        if (step_unit is None) != (start_unit is None) or (
            step_unit is not None
            and start_unit is not None
            and step_unit.family != start_unit.family
        ):
            raise SweepPlanError(f"{where}.step: must be of the same kind as from and to")
        if step_unit is not None and start_unit is not None:
            step = Quantity(step, step_unit.unit).to(start_unit.unit).number
        if not step > 0:
            raise SweepPlanError(
                f"{where}.step: must be above zero, not {_toml_value(spec['step'])}"
            )
        if stop < start:
            raise SweepPlanError(f"{where}: to must not be below from when a step is given")
        count = math.floor((stop - start) / step * (1 + 1e-12) + 1e-9) + 1
        if count > 1_000_000:
            raise SweepPlanError(f"{where}: {count} values is too many")
        numbers = [start + step * i for i in range(count)]
        integers = integers and isinstance(spec["step"], int)
    if integers:
        values: list[Any] = [round(x) for x in numbers]
        if len(set(values)) != len(values):
            raise SweepPlanError(
                f"{where}: the range gives repeated whole numbers ({', '.join(map(str, values))}); "
                "use fewer steps or non-integer ends"
            )
        return values, log
    if start_unit is None:
        return [float(format_number(x, 12)) for x in numbers], log
    texts = [f"{format_number(x)}{start_unit.unit}" for x in numbers]
    if len(set(texts)) != len(texts):
        raise SweepPlanError(f"{where}: the range gives repeated values ({', '.join(texts)})")
    return texts, log


def _count_range(spec: Mapping[str, Any], where: str, log: bool) -> list[Any]:
    extra = [k for k in ("to", "steps") if k in spec]
    if extra or log:
        raise SweepPlanError(
            f"{where}: {{ count }} gives count whole numbers from `from` (default 1) by `step` "
            f"(default 1); it takes no {', '.join(extra) or 'scale'}"
        )
    count = spec["count"]
    start = spec.get("from", 1)
    step = spec.get("step", 1)
    for name, value, low in (("count", count, 1), ("from", start, None), ("step", step, 1)):
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or (low is not None and value < low)
        ):
            need = f"a whole number of at least {low}" if low is not None else "a whole number"
            raise SweepPlanError(f"{where}.{name}: must be {need}, not {_toml_value(value)}")
    if count > 1_000_000:
        raise SweepPlanError(f"{where}.count: {count} values is too many")
    return [start + step * i for i in range(count)]


def _range_end(value: Any, where: str) -> tuple[float, Quantity | None]:
    if isinstance(value, bool):
        raise SweepPlanError(
            f'{where}: expected a number or a quantity such as "20ms", not {value}'
        )
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise SweepPlanError(f"{where}: must be finite, not {value}")
        return float(value), None
    quantity = parse_quantity(value)
    if quantity is None:
        raise SweepPlanError(
            f'{where}: expected a number or a quantity with a unit such as "20ms", "10Mbps", '
            f'"64KB", "0.5BDP", not {_toml_value(value)}'
        )
    return quantity.number, quantity


def _targets(name: str) -> list[tuple[str, ...]]:
    if name in _ALIAS_TARGETS:
        return _ALIAS_TARGETS[name]
    return [tuple(_split_path(name))]


def _check_conflicts(axes: Sequence[Axis]) -> None:
    for a, b in itertools.combinations(axes, 2):
        for ta in _targets(a.name):
            for tb in _targets(b.name):
                n = min(len(ta), len(tb))
                if all(x == y or "*" in (x, y) for x, y in zip(ta[:n], tb[:n], strict=True)):
                    shown = ".".join(ta if len(ta) >= len(tb) else tb)
                    raise SweepPlanError(
                        f"axes: {_key(a.name)} and {_key(b.name)} both set {shown}; vary it once"
                    )


def numeric_column(axis: Axis) -> str | None:
    """The name of the numeric copy of an axis written with units (``rtt`` -> ``rtt_s``,
    ``bandwidth`` -> ``bandwidth_bps``), or ``None`` when the axis has plain values or mixed
    units."""
    from startlab.sweep.quantity import FAMILIES

    families = set()
    for value in axis.values:
        quantity = parse_quantity(value)
        if quantity is None:
            return None
        families.add(quantity.family)
    if len(families) != 1:
        return None
    return f"{axis.name}_{FAMILIES[families.pop()][0]}"


# -- points --------------------------------------------------------------------------------------


def _build_points(plan: SweepPlan) -> list[Point]:
    choices = [range(len(dimension[0].values)) for dimension in plan.dimensions]
    total = plan.size
    points: list[Point] = []
    cache: dict[str, str] = {}
    algorithms = _known_algorithms()
    for index, combination in enumerate(itertools.product(*choices)):
        values: dict[str, Any] = {}
        for dimension, choice in zip(plan.dimensions, combination, strict=True):
            for axis in dimension:
                values[axis.name] = axis.values[choice]
        document = _copy(plan._base)
        try:
            document = apply_values(document, values, algorithms=algorithms)
            resolved = _resolve(document)  # what Scenario(document).resolved() gives
        except ScenarioError as e:
            prefix = f"point {index} of {total}"
            if values:
                prefix += f" ({describe_values(values)})"
            raise SweepPlanError(f"{prefix}: {e}") from None
        text = canonical_json(resolved)
        key = cache.get(text)
        if key is None:
            key = cache[text] = run_key(text)
        points.append(Point(index, values, text, key))
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
        if name == "rtt":
            later.append(value)
        elif name in ("algorithm", "cc", "startup"):
            _set_algorithm(document, name, value, algorithms)
        elif name in _ALIAS_TARGETS:
            _set_path(document, list(_ALIAS_TARGETS[name][0]), _copy(value))
        else:
            _set_path(document, _split_path(name), _copy(value))
    for value in later:
        _set_rtt(document, value)
    return document


def _set_algorithm(
    document: dict[str, Any], name: str, value: Any, algorithms: Mapping[str, set[str]]
) -> None:
    cc, startup = _split_algorithm(name, value, algorithms)
    flows = document.get("flows")
    tcp = (
        [f for f in flows if isinstance(f, dict) and f.get("kind", "tcp") in _TCP_KINDS]
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
            f'{name}: expected an algorithm name such as "newreno+lss", not {_describe(value)}'
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
        raise ScenarioError(f'rtt: expected a duration such as "100ms", not {_describe(value)}')
    topology = document.get("topology")
    if not isinstance(topology, dict) or topology.get("kind", "dumbbell") != "dumbbell":
        raise ScenarioError(
            "rtt: only for a dumbbell topology; vary topology.bottleneck.delay instead"
        )
    bottleneck = topology.setdefault("bottleneck", {})
    if not isinstance(bottleneck, dict):
        raise ScenarioError(f"topology.bottleneck: expected a table, not {_describe(bottleneck)}")
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
    bottleneck["delay"] = _duration_text(round(one_way))


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
    delay if the document sets one, as the core resolves them. They depend on the topology's
    other fields only, so they are computed once per distinct topology."""
    topology = dict(document["topology"])
    bottleneck = dict(topology.pop("bottleneck"))
    bottleneck.pop("delay", None)
    key = json.dumps([topology, bottleneck], sort_keys=True, default=str)
    if key not in _FIXED_DELAYS:
        probe = copy.deepcopy(document)
        probe["topology"]["bottleneck"]["delay"] = "0s"
        resolved = Scenario(probe).resolved()
        pair = resolved["topology"]["pair"][0]
        access_ns = sum(
            _ns(pair[side][direction])
            for side in ("sender_access", "receiver_access")
            for direction in ("delay", "reverse_delay")
        )
        reverse = resolved["topology"]["bottleneck"]["reverse_delay"]
        if len(_FIXED_DELAYS) > 4096:
            _FIXED_DELAYS.clear()
        _FIXED_DELAYS[key] = (access_ns, _ns(reverse) if "reverse_delay" in bottleneck else None)
    return _FIXED_DELAYS[key]


def _ns(text: Any) -> int:
    quantity = parse_quantity(text)
    if quantity is None or quantity.family != "duration":  # pragma: no cover - resolved by the core
        raise ScenarioError(f"expected a duration, not {text!r}")
    return round(quantity.si * 1e9)


def _duration_text(ns: int) -> str:
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns % scale == 0:
            return f"{ns // scale}{unit}"
    return f"{ns}ns"


def _known_algorithms() -> dict[str, set[str]]:
    known: dict[str, set[str]] = {"cc": set(), "startup": set()}
    for info in _core.algorithms():
        known.setdefault(info["role"], set()).add(info["name"])
    return known


# -- paths, overrides, TOML ----------------------------------------------------------------------


_PART = r'(?:"[^"]*"|[^."\[\]]+)'
_PATH = re.compile(rf"{_PART}(?:\.{_PART}|\[\s*[0-9]+\s*\])*")
_TOKEN = re.compile(r'"(?P<quoted>[^"]*)"|\[\s*(?P<index>[0-9]+)\s*\]|(?P<bare>[^."\[\]]+)')


def _split_path(text: str) -> list[str]:
    """``a.b[0].c`` -> ``["a", "b", "0", "c"]``; ``"quoted.keys"`` stay whole."""
    stripped = text.strip()
    parts = []
    if _PATH.fullmatch(stripped):
        for match in _TOKEN.finditer(stripped):
            part = match.group("quoted")
            if part is None:
                part = (match.group("index") or match.group("bare") or "").strip()
            parts.append(part)
    if not parts or not all(parts):
        raise SweepPlanError(
            f"{text!r} is not a dotted path such as topology.bottleneck.rate or flows[0].cc"
        )
    return parts


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
        path = _split_path(match.group(1))
    except SweepPlanError as e:
        raise SweepPlanError(f"override {assignment!r}: {e}") from None
    return path, _parse_value(match.group(2).strip())


def _read_toml(path: Path) -> dict[str, Any]:
    text = read_text(path, "a TOML file", SweepPlanError)
    try:
        return _parse_toml(text, str(path))
    except ScenarioError as e:
        raise SweepPlanError(str(e)) from None


def _key(name: Any) -> str:
    """A table key as written in TOML: bare if it can be, quoted otherwise."""
    text = str(name)
    return text if re.fullmatch(r"[A-Za-z0-9_-]+", text) else json.dumps(text, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    """A value as written in TOML (inline), for messages: ``"20ms"``, ``3``, ``[1, 2]``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return str(value)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({json.dumps(value, ensure_ascii=False)})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a table"
    return f"a {type(value).__name__}"
