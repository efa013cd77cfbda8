"""The model of a sweep, at the bottom of the sweep and reproduction layers: quantities with
units, the parts of a plan (axes, points, plot specifications), canonical JSON, the way values
are written in messages, axis ranges, and what the core says about a scenario's network
(:func:`describe`).

Nothing here imports the rest of :mod:`startlab.sweep` or :mod:`startlab.reproduce`; every other
module of both imports downward from here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from startlab import _core
from startlab.scenario import ScenarioError, core_error, describe_type

__all__ = [
    "ALIASES",
    "ALIAS_TARGETS",
    "FAMILIES",
    "FIXED_COLUMNS",
    "NS_PER_S",
    "PLAN_FIELDS",
    "SCENARIO_FIELDS",
    "TCP_KINDS",
    "WORLDS",
    "Axis",
    "Description",
    "FlowInfo",
    "LinkInfo",
    "PlotSpec",
    "Point",
    "Quantity",
    "SweepPlanError",
    "canonical_json",
    "describe",
    "describe_type",
    "describe_values",
    "duration_text",
    "expand_range",
    "file_name",
    "format_number",
    "numeric_column",
    "parse_quantity",
    "si_value",
    "split_path",
    "toml_key",
    "toml_value",
]

NS_PER_S = 1_000_000_000


class SweepPlanError(ScenarioError):
    """A sweep plan is invalid: its structure, an axis, a metric, a plot, or the scenario of one
    of its points. The message starts with where (``axes.rtt.steps``, ``metrics.util``,
    ``point 12 (rtt="20ms", seed=3): flows[0].cc``) and says what is wrong and what is allowed.
    """


# -- quantities ----------------------------------------------------------------------------------
# Quantities written as text with a unit, as in scenario files: "40Mbps", "100ms", "64KB",
# "0.5BDP", "100p". Sweeps read them to generate ranges, to add a numeric column next to an axis
# written with units, and to lay out plot axes. The units are those of docs/scenario.md; the
# core remains the judge of what a field accepts.

# family -> (SI unit name used in column suffixes, {unit: factor to that SI unit})
FAMILIES: dict[str, tuple[str, dict[str, float]]] = {
    "duration": ("s", {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0}),
    "rate": ("bps", {"bps": 1.0, "kbps": 1e3, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9}),
    "size": (
        "bytes",
        {
            "B": 1.0,
            "KB": 1e3,
            "kB": 1e3,
            "MB": 1e6,
            "GB": 1e9,
            "KiB": 1024.0,
            "MiB": 1024.0**2,
            "GiB": 1024.0**3,
        },
    ),
    "bdp": ("bdp", {"BDP": 1.0}),
    "packets": ("packets", {"p": 1.0}),
}
_UNITS = {
    unit: (family, factor)
    for family, (_, units) in FAMILIES.items()
    for unit, factor in units.items()
}
_QUANTITY = re.compile(
    r"^\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([A-Za-zµ]+)\s*$"
)


@dataclass(frozen=True)
class Quantity:
    """A number with a unit: ``Quantity(20.0, "ms")`` is ``"20ms"``."""

    number: float
    unit: str

    @property
    def family(self) -> str:
        """``duration``, ``rate``, ``size``, ``bdp`` or ``packets``."""
        return _UNITS[self.unit][0]

    @property
    def si(self) -> float:
        """The value in the family's base unit: seconds, bit/s, bytes, BDPs, packets."""
        return self.number * _UNITS[self.unit][1]

    def to(self, unit: str) -> Quantity:
        """The same quantity in another unit of its family."""
        family, factor = _UNITS[unit]
        if family != self.family:
            raise ValueError(f"cannot express {self} in {unit}")
        return Quantity(self.si / factor, unit)

    def __str__(self) -> str:
        return f"{format_number(self.number)}{self.unit}"


def parse_quantity(value: Any) -> Quantity | None:
    """``"20ms"`` -> ``Quantity(20.0, "ms")``; ``None`` for anything that isn't a number
    followed by a known unit."""
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value)
    if not match or match.group(2) not in _UNITS:
        return None
    number = float(match.group(1))
    return Quantity(number, match.group(2)) if math.isfinite(number) else None


def si_value(value: Any) -> tuple[float, str] | None:
    """``"20ms"`` -> ``(0.02, "duration")``; ``None`` if ``value`` is not a quantity."""
    quantity = parse_quantity(value)
    return None if quantity is None else (quantity.si, quantity.family)


def format_number(x: float, digits: int = 6) -> str:
    """A number as short decimal text without an exponent, rounded to ``digits`` significant
    digits: ``35.56558820077846`` -> ``"35.5656"``, ``1e-05`` -> ``"0.00001"``."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    rounded = round(x, digits - 1 - math.floor(math.log10(abs(x))))
    if rounded == int(rounded) and abs(rounded) < 1e15:
        return str(int(rounded))
    text = f"{rounded:.{max(0, digits - 1 - math.floor(math.log10(abs(rounded))))}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def duration_text(ns: int) -> str:
    """A whole number of nanoseconds in the largest unit that keeps it whole: ``"20ms"``."""
    for unit, scale in (("s", NS_PER_S), ("ms", 10**6), ("us", 10**3)):
        if ns % scale == 0:
            return f"{ns // scale}{unit}"
    return f"{ns}ns"


# -- values in messages --------------------------------------------------------------------------


def toml_key(name: Any) -> str:
    """A table key as written in TOML: bare if it can be, quoted otherwise."""
    text = str(name)
    return text if re.fullmatch(r"[A-Za-z0-9_-]+", text) else json.dumps(text, ensure_ascii=False)


def toml_value(value: Any) -> str:
    """A value as written in TOML (inline), for messages: ``"20ms"``, ``3``, ``[1, 2]``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    return str(value)


def describe_values(values: Mapping[str, Any]) -> str:
    """``rtt="20ms", seed=3``: axis values as in error messages and the summary."""
    return ", ".join(f"{toml_key(name)}={toml_value(value)}" for name, value in values.items())


def file_name(text: str) -> str:
    """``text`` made safe as a file name: runs of other characters than letters, digits and
    ``._=+-`` become ``_``."""
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", text).strip("_") or "plot"


def canonical_json(resolved: Mapping[str, Any]) -> str:
    """The canonical JSON text of a resolved scenario: sorted keys, no spaces, UTF-8. Equal
    scenarios give equal text, so its hash identifies a run."""
    return json.dumps(
        resolved, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


# -- the parts of a plan -------------------------------------------------------------------------

PLAN_FIELDS = ("name", "description", "base", "world", "axes", "zip", "metrics", "plots")
SCENARIO_FIELDS = ("name", "seed", "duration", "topology", "tcp", "flows", "measure")
FIXED_COLUMNS = ("point", "key", "status", "error", "events", "wall_time_s")
"""Columns of every results table besides the axes, ``seed`` and the metrics."""

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
    "world": 'where each run happens: "simulator", or "kernel" (Linux\'s TCP over the link '
    "emulator, docs/kernel.md: root, one run at a time)",
}
"""Axis names that are not scenario paths, and what they set."""

WORLDS = ("simulator", "kernel")
"""Where a run can happen (the ``world`` axis or plan field)."""

ALIAS_TARGETS: dict[str, list[tuple[str, ...]]] = {
    "algorithm": [("flows", "*", "cc"), ("flows", "*", "startup")],
    "cc": [("flows", "*", "cc")],
    "startup": [("flows", "*", "startup")],
    "bandwidth": [("topology", "bottleneck", "rate")],
    "rtt": [("topology", "bottleneck", "delay")],
    "buffer": [("topology", "bottleneck", "queue", "limit")],
    "loss": [("topology", "bottleneck", "loss")],
    "world": [],
}
"""The scenario paths each alias sets (``*``: every entry of a list)."""

TCP_KINDS = ("tcp", "tcp-arrivals")
"""Flow kinds that run TCP (what ``algorithm``, ``cc`` and ``startup`` set)."""

_RANGE_KEYS = ("from", "to", "steps", "step", "count", "scale")


class MetricColumn(Protocol):
    """What the results table and the sweep plots need of a metric: a column
    (:class:`startlab.sweep.metrics.Metric` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def unit(self) -> str: ...


class PlanShape(Protocol):
    """What the results table and the sweep plots need of a plan: its name, axes, metrics and
    plots (:class:`startlab.sweep.plan.SweepPlan` is one). Declared here, below the plan, so
    that the modules that only read a plan do not import the module that builds it."""

    @property
    def name(self) -> str: ...
    @property
    def axes(self) -> Sequence[Axis]: ...
    @property
    def dimensions(self) -> Sequence[Sequence[Axis]]: ...
    @property
    def metrics(self) -> Sequence[MetricColumn]: ...
    @property
    def plots(self) -> Sequence[PlotSpec]: ...
    def axis(self, name: str) -> Axis: ...


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
    """Content hash of ``scenario``, the world and the simulator build
    (:func:`startlab.sweep.run_key`)."""
    world: str = "simulator"
    """Where it runs: ``"simulator"`` or ``"kernel"``."""

    def label(self) -> str:
        """``point 12 (rtt="20ms", seed=3)``."""
        return f"point {self.index} ({describe_values(self.values)})"


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


_PART = r'(?:"[^"]*"|[^."\[\]]+)'
_PATH = re.compile(rf"{_PART}(?:\.{_PART}|\[\s*[0-9]+\s*\])*")
_TOKEN = re.compile(r'"(?P<quoted>[^"]*)"|\[\s*(?P<index>[0-9]+)\s*\]|(?P<bare>[^."\[\]]+)')


def split_path(text: str) -> list[str]:
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


# -- axis values ---------------------------------------------------------------------------------


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
            f"({{ from, to, steps }}, {{ from, to, step }} or {{ count }}), "
            f"not {describe_type(spec)}"
        )
    unknown = [k for k in spec if k not in _RANGE_KEYS]
    if unknown:
        raise SweepPlanError(
            f"{where}.{toml_key(unknown[0])}: unknown range field; "
            f"allowed: {', '.join(_RANGE_KEYS)}"
        )
    scale = spec.get("scale", "linear")
    if scale not in ("linear", "log"):
        raise SweepPlanError(f'{where}.scale: {toml_value(scale)}: allowed: "linear", "log"')
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
            f"{where}: from ({toml_value(spec['from'])}) and to ({toml_value(spec['to'])}) "
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
                f"ends included), not {toml_value(steps)}"
            )
        if log and (start <= 0 or stop <= 0):
            raise SweepPlanError(
                f'{where}: scale = "log" needs from and to above zero '
                f"(from = {toml_value(spec['from'])}, to = {toml_value(spec['to'])})"
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
                f"{where}.step: must be above zero, not {toml_value(spec['step'])}"
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
            raise SweepPlanError(f"{where}.{name}: must be {need}, not {toml_value(value)}")
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
            f'"64KB", "0.5BDP", not {toml_value(value)}'
        )
    return quantity.number, quantity


def numeric_column(axis: Axis) -> str | None:
    """The name of the numeric copy of an axis written with units (``rtt`` -> ``rtt_s``,
    ``bandwidth`` -> ``bandwidth_bps``), or ``None`` when the axis has plain values or mixed
    units."""
    families = set()
    for value in axis.values:
        quantity = parse_quantity(value)
        if quantity is None:
            return None
        families.add(quantity.family)
    if len(families) != 1:
        return None
    return f"{axis.name}_{FAMILIES[families.pop()][0]}"


# -- what the core says about a scenario's network -----------------------------------------------


@dataclass(frozen=True)
class LinkInfo:
    """One direction of a link, as :func:`describe` gives it."""

    link: int
    name: str
    """``"left->right"``."""
    alias: str
    """``"bottleneck"``, ``"hop0"`` or ``""``."""
    src: str
    dst: str
    rate_bps: float
    delay_ns: int


@dataclass(frozen=True)
class FlowInfo:
    """One flow (one copy of a ``count = N`` entry), as :func:`describe` gives it."""

    entry: int
    """Its entry in ``flows``."""
    label: str
    kind: str
    src: str
    dst: str
    rtt_ns: int
    """Round-trip propagation delay of its path."""


@dataclass(frozen=True)
class Description:
    """The network of a scenario and its flows, known without simulating it."""

    links: tuple[LinkInfo, ...]
    hosts: tuple[str, ...]
    flows: tuple[FlowInfo, ...]
    bdp_rtt_ns: int
    """The round trip that defines ``BDP``."""
    bdp_packets: float
    """One bandwidth-delay product, in packets."""
    sampled_links: frozenset[int]
    """Ids of the links of ``measure.links``."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Description:
        """From the dict form (``startlab._core.describe``)."""
        return cls(
            links=tuple(
                LinkInfo(
                    int(x["link"]),
                    str(x["name"]),
                    str(x.get("alias") or ""),
                    str(x["src"]),
                    str(x["dst"]),
                    float(x["rate_bps"]),
                    int(x["delay_ns"]),
                )
                for x in data["links"]
            ),
            hosts=tuple(str(h) for h in data["hosts"]),
            flows=tuple(
                FlowInfo(
                    int(f["entry"]),
                    str(f["label"]),
                    str(f["kind"]),
                    str(f["src"]),
                    str(f["dst"]),
                    int(f["rtt_ns"]),
                )
                for f in data["flows"]
            ),
            bdp_rtt_ns=int(data["bdp_rtt_ns"]),
            bdp_packets=float(data["bdp_packets"]),
            sampled_links=frozenset(int(i) for i in data["sampled_links"]),
        )

    def find_links(self, name: str) -> list[LinkInfo]:
        """The links called ``name`` or aliased ``name``, in id order."""
        return [link for link in self.links if name in (link.name, link.alias)]

    def link_labels(self) -> list[str]:
        """``name (alias)`` of every link, for messages."""
        return [f"{x.name} ({x.alias})" if x.alias else x.name for x in self.links]


def describe(scenario: Mapping[str, Any] | str) -> Description:
    """The links, hosts and flows of a scenario (a document or its JSON text), from the core,
    without simulating it. Raises :class:`~startlab.ScenarioError` if the scenario is
    invalid."""
    try:
        # TOML dates and times go as text, for the core to name the field that has one.
        text = (
            scenario
            if isinstance(scenario, str)
            else json.dumps(scenario, default=str, allow_nan=False)
        )
    except ValueError as e:
        raise ScenarioError(f"not a scenario the core can read: {e}") from None
    try:
        data = _core.describe(text)
    except ValueError as e:
        raise core_error(e) from None
    return Description.from_json(data)
