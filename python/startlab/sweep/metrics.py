"""The metrics a sweep keeps from each run: a small vocabulary of named expressions over a
:class:`~startlab.Result`.

A metric is written ``kind`` or ``kind(args)`` in a plan (``"utilization(bottleneck, from=0s,
to=5s)"``, ``"goodput(min)"``, ``"ss_exit_time(flow=0)"``) or as a table (``{ metric =
"goodput", stat = "min" }``). Each has a canonical text (:attr:`Metric.id`) under which its value
is kept in a run file, so renaming a metric or adding a plot recomputes nothing, and adding a
metric re-simulates only the runs that lack it. The vocabulary is documented in
``docs/sweeps.md`` and listed by :data:`KINDS`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from startlab.result import jain_index
from startlab.sweep.model import (
    NS_PER_S,
    Description,
    Point,
    SweepPlanError,
    describe,
    duration_text,
    parse_quantity,
    toml_key,
)

if TYPE_CHECKING:
    from startlab.result import Result

__all__ = [
    "KINDS",
    "STATS",
    "Metric",
    "MetricError",
    "MetricKind",
    "check_metrics",
    "compute_metrics",
    "default_metrics",
    "parse_metric",
    "parse_metrics",
]

STATS = ("mean", "median", "min", "max", "sum", "std")
"""How a per-flow quantity is summarized over the TCP flows (``stat = ...``)."""


class MetricError(ValueError):
    """A metric can't be computed from a run (e.g. its flow does not exist)."""


@dataclass(frozen=True)
class MetricKind:
    """One entry of the vocabulary."""

    name: str
    scope: str
    """``flow`` (a per-flow quantity: ``flow = N`` or ``stat = ...``), ``link`` (``link =
    NAME``) or ``run``."""
    summary: str
    unit: str
    """Unit of the value: ``fraction``, ``bit/s``, ``bytes``, ``s``, ``segments``, ``packets``,
    ``count``, ``index`` or ``text``."""
    params: tuple[str, ...]
    default_stat: str | None = None
    """For flow metrics: the summary when neither ``flow`` nor ``stat`` is given (``None``:
    flow 0)."""
    counter: bool = False
    """An integer count (kept as an integer unless averaged)."""
    column: str = ""
    """The ``flows`` or ``links`` column it reads."""


_FLOW_PARAMS = ("flow", "stat", "label")
_WINDOW = ("from", "to")

KINDS: dict[str, MetricKind] = {
    kind.name: kind
    for kind in (
        MetricKind(
            "utilization",
            "link",
            "fraction of the time the link was transmitting, over the whole run or [from, to]",
            "fraction",
            ("link", *_WINDOW),
            column="utilization",
        ),
        MetricKind(
            "goodput",
            "flow",
            "bits delivered in order per second: over the flow's lifetime, or over [from, to]",
            "bit/s",
            (*_FLOW_PARAMS, *_WINDOW),
            default_stat="mean",
            column="goodput_bps",
        ),
        MetricKind(
            "delivered",
            "flow",
            "bytes delivered in order, over the run or over [from, to]",
            "bytes",
            (*_FLOW_PARAMS, *_WINDOW),
            default_stat="sum",
            counter=True,
            column="delivered_bytes",
        ),
        MetricKind(
            "jain",
            "run",
            "Jain's fairness index of the TCP flows' goodput (over [from, to] if given)",
            "index",
            ("label", *_WINDOW),
        ),
        MetricKind(
            "ss_exit_time",
            "flow",
            "when slow start first ended, after the flow's start (null: never)",
            "s",
            _FLOW_PARAMS,
            column="ss_exit_s",
        ),
        MetricKind(
            "ss_exit_cwnd",
            "flow",
            "cwnd when slow start first ended (null: never)",
            "segments",
            _FLOW_PARAMS,
            column="ss_exit_cwnd",
        ),
        MetricKind(
            "ss_exit_reason",
            "flow",
            'why slow start ended: "loss", "timeout", "threshold", a detector\'s name ("": never)',
            "text",
            ("flow",),
            column="ss_exit_reason",
        ),
        MetricKind(
            "exit_bw",
            "flow",
            "a model-based controller's (BBR's) bandwidth estimate when its start-up ended "
            "(the first sample at or after the exit; null: never, or not model-based)",
            "bit/s",
            _FLOW_PARAMS,
        ),
        MetricKind(
            "share",
            "flow",
            "the flow's fraction of the TCP flows' goodput, over the run or [from, to]",
            "fraction",
            (*_FLOW_PARAMS, *_WINDOW),
            default_stat="min",
        ),
        MetricKind(
            "completion_time",
            "flow",
            "time from start to the last byte of a finite flow (statistics over the flows "
            "that completed; null if none did)",
            "s",
            _FLOW_PARAMS,
            default_stat="mean",
            column="completion_s",
        ),
        MetricKind(
            "unfinished",
            "run",
            "finite TCP flows that did not complete",
            "count",
            ("label",),
            counter=True,
        ),
        MetricKind(
            "retransmissions",
            "flow",
            "segments retransmitted",
            "count",
            _FLOW_PARAMS,
            default_stat="sum",
            counter=True,
            column="retransmissions",
        ),
        MetricKind(
            "timeouts",
            "flow",
            "retransmission timeouts",
            "count",
            _FLOW_PARAMS,
            default_stat="sum",
            counter=True,
            column="timeouts",
        ),
        MetricKind(
            "fast_recoveries",
            "flow",
            "fast retransmits (recovery episodes)",
            "count",
            _FLOW_PARAMS,
            default_stat="sum",
            counter=True,
            column="fast_recoveries",
        ),
        MetricKind(
            "congestion_losses",
            "flow",
            "loss events the controller judged congestion (BLAST; null for controllers that "
            "do not classify losses)",
            "count",
            _FLOW_PARAMS,
            default_stat="sum",
            counter=True,
            column="congestion_losses",
        ),
        MetricKind(
            "noncongestion_losses",
            "flow",
            "loss events the controller judged not congestion (BLAST; null for controllers "
            "that do not classify losses)",
            "count",
            _FLOW_PARAMS,
            default_stat="sum",
            counter=True,
            column="noncongestion_losses",
        ),
        MetricKind(
            "sent_packets",
            "flow",
            "data packets sent, retransmissions included",
            "count",
            _FLOW_PARAMS,
            default_stat="sum",
            counter=True,
            column="sent_packets",
        ),
        MetricKind(
            "drops",
            "link",
            "packets dropped by the link's queue (overflow, RED, an AQM)",
            "count",
            ("link",),
            counter=True,
            column="drops",
        ),
        MetricKind(
            "marks",
            "link",
            "packets the link's queue marked CE (an AQM with ECN)",
            "count",
            ("link",),
            counter=True,
            column="marks",
        ),
        MetricKind(
            "mean_sojourn",
            "link",
            "mean time a packet sent on the link waited in its queue",
            "s",
            ("link",),
            column="mean_sojourn_ns",
        ),
        MetricKind(
            "p50_sojourn",
            "link",
            "median time a packet sent on the link waited in its queue",
            "s",
            ("link",),
            column="p50_sojourn_ns",
        ),
        MetricKind(
            "p99_sojourn",
            "link",
            "99th percentile of the time a packet sent on the link waited in its queue",
            "s",
            ("link",),
            column="p99_sojourn_ns",
        ),
        MetricKind(
            "max_sojourn",
            "link",
            "longest time a packet sent on the link waited in its queue",
            "s",
            ("link",),
            column="max_sojourn_ns",
        ),
        MetricKind(
            "losses",
            "link",
            "packets lost at random on the link (its loss probability)",
            "count",
            ("link",),
            counter=True,
            column="losses",
        ),
        MetricKind(
            "max_queue",
            "link",
            "longest queue seen on the link, in packets",
            "packets",
            ("link",),
            counter=True,
            column="max_queue_packets",
        ),
        MetricKind(
            "time_to_utilization",
            "link",
            "the first time the link's utilization over the last `window` (default 100 ms) "
            "reached `fraction` (default 0.9), from the sampled queue series; null if never",
            "s",
            ("link", "fraction", "window"),
        ),
        MetricKind(
            "mean_queue",
            "link",
            "mean of the sampled queue length (packets) over the run or [from, to]",
            "packets",
            ("link", *_WINDOW),
        ),
        MetricKind(
            "events", "run", "events processed by the simulation", "count", (), counter=True
        ),
    )
}
"""The metric vocabulary: name -> :class:`MetricKind`."""


@dataclass(frozen=True)
class Metric:
    """A named metric of a plan: a column of the results table."""

    name: str
    """The column name."""
    kind: str
    """An entry of :data:`KINDS`."""
    params: tuple[tuple[str, Any], ...] = ()
    """Normalized parameters (sorted; times in integer nanoseconds)."""

    @property
    def spec(self) -> MetricKind:
        return KINDS[self.kind]

    def param(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)

    @property
    def id(self) -> str:
        """Canonical text, e.g. ``utilization(from=0s,link=bottleneck,to=5s)``: the key of the
        value in a run file."""
        args = ",".join(f"{k}={_show(k, v)}" for k, v in self.params)
        return f"{self.kind}({args})"

    @property
    def dtype(self) -> str:
        """``int``, ``float`` or ``str``: the column type in the results table."""
        spec = self.spec
        if spec.unit == "text":
            return "str"
        if spec.counter and (
            self.param("flow") is not None or self.param("stat") in ("sum", "min", "max", None)
        ):
            return "int"
        return "float"

    @property
    def unit(self) -> str:
        return self.spec.unit

    def to_json(self) -> dict[str, Any]:
        """The form sent to workers: ``{"name", "kind", "params"}``."""
        return {"name": self.name, "kind": self.kind, "params": dict(self.params)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Metric:
        return cls(
            str(data["name"]), str(data["kind"]), tuple(sorted(dict(data["params"]).items()))
        )

    def __str__(self) -> str:
        return f"{self.name} = {self.id}"


def _show(name: str, value: Any) -> str:
    if name in _WINDOW or name == "window":
        return duration_text(int(value))
    return str(value)


# -- parsing -------------------------------------------------------------------------------------

_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*", re.S)


def parse_metric(name: str, spec: Any, where: str | None = None) -> Metric:
    """A metric from its plan form: ``"kind"``, ``"kind(args)"`` or ``{ metric = "kind", ... }``.
    Raises :class:`~startlab.sweep.model.SweepPlanError` naming ``where`` (default
    ``metrics.NAME``)."""
    where = where or f"metrics.{toml_key(name)}"
    positional: list[Any] = []
    named: dict[str, Any] = {}
    if isinstance(spec, str):
        match = _CALL.fullmatch(spec)
        if not match:
            raise SweepPlanError(
                f'{where}: {json.dumps(spec)} is not a metric; write "kind" or "kind(args)", '
                'e.g. "utilization(bottleneck, from=0s, to=5s)" or "goodput(min)"'
            )
        kind = match.group(1)
        if match.group(2) and match.group(2).strip():
            for arg in match.group(2).split(","):
                key, sep, value = arg.partition("=")
                if sep:
                    if not key.strip() or not value.strip():
                        raise SweepPlanError(f"{where}: empty argument in {json.dumps(spec)}")
                    named[key.strip()] = _arg_value(value)
                elif named:
                    raise SweepPlanError(
                        f"{where}: positional argument {arg.strip()!r} after named ones in "
                        f"{json.dumps(spec)}"
                    )
                elif arg.strip():
                    positional.append(_arg_value(arg))
                else:
                    raise SweepPlanError(f"{where}: empty argument in {json.dumps(spec)}")
    elif isinstance(spec, Mapping):
        if "metric" not in spec:
            raise SweepPlanError(
                f'{where}.metric: missing; e.g. {{ metric = "goodput", stat = "min" }}'
            )
        kind = spec["metric"]
        if not isinstance(kind, str):
            raise SweepPlanError(f"{where}.metric: expected a metric name, not {kind!r}")
        named = {k: v for k, v in spec.items() if k != "metric"}
    else:
        raise SweepPlanError(
            f'{where}: expected "kind(args)" or a table {{ metric = "kind", ... }}, not {spec!r}'
        )
    if kind not in KINDS:
        raise SweepPlanError(
            f"{where}: unknown metric {json.dumps(kind)}; available: {', '.join(KINDS)}"
        )
    info = KINDS[kind]
    for value in positional:
        if info.scope == "link" and "link" not in named and len(positional) == 1:
            named["link"] = value
        elif (
            info.scope == "flow"
            and isinstance(value, int)
            and "flow" not in named
            and len(positional) == 1
        ):
            named["flow"] = value
        elif (
            info.scope == "flow"
            and value in STATS
            and "stat" in info.params
            and len(positional) == 1
        ):
            named["stat"] = value
        else:
            expects = {
                "link": "a link name",
                "flow": "a flow number or a statistic (" + ", ".join(STATS) + ")",
            }.get(info.scope, "no positional argument")
            raise SweepPlanError(
                f"{where}: {kind} takes {expects} as its one positional argument, not {value!r}"
            )
    return Metric(name, kind, _normalize(kind, named, where))


def _arg_value(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if re.fullmatch(r"[0-9]+", text):
        return int(text)
    return text


def _normalize(kind: str, named: Mapping[str, Any], where: str) -> tuple[tuple[str, Any], ...]:
    info = KINDS[kind]
    unknown = [k for k in named if k not in info.params]
    if unknown:
        allowed = ", ".join(info.params) if info.params else "none"
        raise SweepPlanError(
            f"{where}.{toml_key(unknown[0])}: {kind} has no such argument; allowed: {allowed}"
        )
    params: dict[str, Any] = {}
    for key, value in named.items():
        at = f"{where}.{key}"
        if key == "link":
            if not isinstance(value, str) or not value:
                raise SweepPlanError(
                    f'{at}: expected a link name such as "bottleneck", not {value!r}'
                )
            params[key] = value
        elif key == "label":
            if not isinstance(value, str):
                raise SweepPlanError(f"{at}: expected a flow label, not {value!r}")
            params[key] = value
        elif key == "flow":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SweepPlanError(f"{at}: expected a flow number (0, 1, ...), not {value!r}")
            params[key] = value
        elif key == "stat":
            if value not in STATS:
                raise SweepPlanError(f"{at}: {value!r}: allowed: {', '.join(STATS)}")
            params[key] = value
        elif key in _WINDOW:
            quantity = parse_quantity(value)
            if quantity is None or quantity.family != "duration" or quantity.si < 0:
                raise SweepPlanError(
                    f'{at}: expected a time such as "2s" or "500ms", not {value!r}'
                )
            params[key] = round(quantity.si * NS_PER_S)
        elif key == "window":
            quantity = parse_quantity(value)
            if quantity is None or quantity.family != "duration" or quantity.si <= 0:
                raise SweepPlanError(
                    f'{at}: expected a time above 0 such as "100ms", not {value!r}'
                )
            params[key] = round(quantity.si * NS_PER_S)
        elif key == "fraction":
            try:
                fraction = float(value)
            except (TypeError, ValueError):
                fraction = float("nan")
            if isinstance(value, bool) or not 0 < fraction <= 1:
                raise SweepPlanError(
                    f"{at}: expected a fraction in (0, 1] such as 0.9, not {value!r}"
                )
            params[key] = fraction
    if info.scope == "flow":
        if "flow" in params and ("stat" in params or "label" in params):
            raise SweepPlanError(f"{where}: give either flow (one flow) or stat/label (over flows)")
        if "flow" not in params and "stat" not in params:
            if info.default_stat is None or "stat" not in info.params:
                params["flow"] = 0
            else:
                params["stat"] = info.default_stat
    if info.scope == "link":
        params.setdefault("link", "bottleneck")
    if kind == "time_to_utilization":
        params.setdefault("fraction", 0.9)
        params.setdefault("window", 100 * NS_PER_S // 1000)
    if "from" in params and "to" in params and not params["to"] > params["from"]:
        raise SweepPlanError(f"{where}: to must be after from")
    return tuple(sorted(params.items()))


def parse_metrics(table: Any, *, reserved: Iterable[str] = ()) -> list[Metric]:
    """The ``[metrics]`` table of a plan: column name -> metric."""
    if not isinstance(table, Mapping):
        raise SweepPlanError(f"metrics: expected a table of name = metric, not {table!r}")
    if not table:
        raise SweepPlanError("metrics: empty; leave [metrics] out to keep the default metrics")
    reserved = set(reserved)
    metrics = []
    for name, spec in table.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
            raise SweepPlanError(
                f"metrics.{toml_key(name)}: a metric name is letters, digits, _ . - (a column name)"
            )
        if name in reserved:
            raise SweepPlanError(
                f"metrics.{toml_key(name)}: {name!r} is already a column of the results (an "
                "axis or one of point, key, status, error, seed, events, wall_time_s); choose "
                "another name"
            )
        metrics.append(parse_metric(name, spec))
    return metrics


def default_metrics(base: Mapping[str, Any]) -> list[Metric]:
    """The metrics kept when a plan has no ``[metrics]``: utilization of the bottleneck (the
    first hop of a parking lot), goodput mean and min, Jain's index, slow-start exit of flow
    0, retransmissions, timeouts and drops."""
    topology = base.get("topology")
    parking = isinstance(topology, Mapping) and topology.get("kind") == "parking-lot"
    link = "hop0" if parking else "bottleneck"
    specs = {
        "utilization": f"utilization({link})",
        "goodput_mean": "goodput(mean)",
        "goodput_min": "goodput(min)",
        "jain": "jain",
        "ss_exit_time": "ss_exit_time(0)",
        "ss_exit_cwnd": "ss_exit_cwnd(0)",
        "ss_exit_reason": "ss_exit_reason(0)",
        "retransmissions": "retransmissions(sum)",
        "timeouts": "timeouts(sum)",
        "drops": f"drops({link})",
    }
    return [parse_metric(name, spec) for name, spec in specs.items()]


# -- checking against the points -----------------------------------------------------------------


def check_metrics(metrics: Sequence[Metric], points: Sequence[Point]) -> None:
    """Check what can be known before running: windows inside every point's run, links that
    exist (and are sampled, for windowed link metrics), flow numbers that exist. Raises
    :class:`~startlab.sweep.model.SweepPlanError`."""
    networks: dict[str, tuple[Description | None, dict[str, Any], Point]] = {}
    for point in points:
        resolved = json.loads(point.scenario)
        duration = parse_quantity(resolved.get("duration"))
        duration_ns = round(duration.si * NS_PER_S) if duration else None
        measure = resolved.get("measure", {})
        for metric in metrics:
            where = f"metrics.{toml_key(metric.name)}"
            end = metric.param("to")
            start = metric.param("from")
            if duration_ns is not None:
                for name, at in (("from", start), ("to", end)):
                    if at is not None and at > duration_ns:
                        raise SweepPlanError(
                            f"{where}.{name}: {duration_text(at)} is after the end of the run "
                            f"({resolved.get('duration')}) in {point.label()}"
                        )
            windowed = start is not None or end is not None
            needs_flows = windowed and (metric.spec.scope == "flow" or metric.kind == "jain")
            if needs_flows and not measure.get("flow_series", True):
                raise SweepPlanError(
                    f"{where}: a window (from, to) needs the flow series; "
                    f"measure.flow_series is false in {point.label()}"
                )
            needs_queues = metric.kind == "mean_queue" or (
                metric.kind == "utilization" and windowed
            )
            if needs_queues and not measure.get("queue_series", True):
                raise SweepPlanError(
                    f"{where}: needs the queue series; measure.queue_series is false in "
                    f"{point.label()}"
                )
        # The names of the links and the number of flows depend on the shape of the network
        # only, not on its rates or delays: one description per shape.
        topology = resolved.get("topology", {})
        shape = json.dumps(
            [
                [topology.get(k) for k in ("kind", "pairs", "hops", "long_pairs", "cross_pairs")],
                measure.get("links"),
                [
                    (f.get("kind"), f.get("count"), f.get("label"))
                    for f in resolved.get("flows", [])
                ],
            ],
            sort_keys=True,
        )
        if shape not in networks:
            networks[shape] = _describe_or_none(point.scenario), resolved, point
    for network, resolved, point in networks.values():
        if network is None:
            continue
        # With random arrivals the number of flows is not known before the run.
        arrivals = any(f.get("kind") == "tcp-arrivals" for f in resolved.get("flows", []))
        flows = None if arrivals else len(network.flows)
        for metric in metrics:
            where = f"metrics.{toml_key(metric.name)}"
            link = metric.param("link")
            if link is not None:
                found = network.find_links(link)
                if not found:
                    known = ", ".join(network.link_labels())
                    raise SweepPlanError(
                        f"{where}.link: no link {link!r} in {point.label()}; links: {known}"
                    )
                windowed = metric.param("from") is not None or metric.param("to") is not None
                needs_samples = metric.kind == "mean_queue" or (
                    metric.kind == "utilization" and windowed
                )
                if needs_samples and found[0].link not in network.sampled_links:
                    raise SweepPlanError(
                        f"{where}.link: {link!r} is not sampled in {point.label()}: add it to "
                        f"measure.links (a window needs its samples)"
                    )
            flow = metric.param("flow")
            if flow is not None and flows is not None and flow >= flows:
                raise SweepPlanError(
                    f"{where}.flow: no flow {flow} in {point.label()}, which has "
                    f"{flows} flow{'s' if flows != 1 else ''} (numbered from 0)"
                )


def _describe_or_none(scenario: str) -> Description | None:
    """The network of a point's scenario; ``None`` if the core can't describe it (the run will
    say why)."""
    try:
        return describe(scenario)
    except Exception:
        return None


# -- computing -----------------------------------------------------------------------------------


def compute_metrics(result: Result, metrics: Sequence[Metric]) -> tuple[dict[str, Any], list[str]]:
    """The value of every metric for one run: ``({metric.id: value}, errors)``. A metric that
    can't be computed has the value ``None`` and an error ``"metric NAME: why"``."""
    context = _Context(result)
    values: dict[str, Any] = {}
    errors: list[str] = []
    for metric in metrics:
        try:
            value = _COMPUTE[metric.spec.scope if metric.kind not in _SPECIAL else metric.kind](
                context, metric
            )
        except MetricError as e:
            errors.append(f"metric {metric.name}: {e}")
            value = None
        values[metric.id] = _clean(value, metric)
    return values, errors


def _clean(value: Any, metric: Metric) -> Any:
    if value is None:
        return None
    if metric.dtype == "str":
        return str(value)
    number = float(value)
    if not math.isfinite(number):
        return None
    return round(number) if metric.dtype == "int" else number


class _Context:
    def __init__(self, result: Result) -> None:
        self.result = result
        self.end_ns = int(result.stats.get("sim_time_ns") or 0)
        self._series: dict[int, tuple[np.ndarray, np.ndarray]] | None = None

    def tcp_flows(self, label: str | None) -> pl.DataFrame:
        flows = self.result.flows.filter(pl.col("kind") == "tcp")
        if label is not None:
            # The copies of a `count = N` entry are labelled "label#0", "label#1", ...
            copies = pl.col("label").str.starts_with(f"{label}#")
            flows = flows.filter((pl.col("label") == label) | copies)
        return flows

    def flow_row(self, flow: int) -> dict[str, Any]:
        rows = self.result.flows.filter(pl.col("flow") == flow)
        if rows.height == 0:
            raise MetricError(f"no flow {flow} (the run has {self.result.flows.height} flows)")
        return rows.row(0, named=True)

    def link_id(self, link: str) -> int:
        try:
            return int(self.result.link(link)["link"])
        except ValueError as e:
            raise MetricError(str(e)) from None

    def delivered_between(self, flows: Sequence[int], start: int, end: int) -> np.ndarray:
        """Bytes each flow delivered in [start, end] (ns), from the samples (held between)."""
        if self._series is None:
            self._series = {}
            series = self.result.flow_series.select("flow", "time_ns", "delivered_bytes").sort(
                "flow", "time_ns"
            )
            for (flow,), part in series.group_by("flow", maintain_order=True):
                self._series[int(flow)] = (
                    part["time_ns"].to_numpy(),
                    part["delivered_bytes"].to_numpy().astype(np.float64),
                )
        out = np.zeros(len(flows))
        for i, flow in enumerate(flows):
            times, delivered = self._series.get(int(flow), (np.zeros(0, np.int64), np.zeros(0)))
            if times.size and end > times[-1]:
                raise MetricError(
                    f"the window ends at {end / NS_PER_S:g} s, after the last sample "
                    f"({times[-1] / NS_PER_S:g} s)"
                )
            at = np.searchsorted(times, np.array([start, end]), side="right") - 1
            values = (
                np.where(at >= 0, delivered[np.clip(at, 0, None)], 0.0)
                if times.size
                else np.zeros(2)
            )
            out[i] = values[1] - values[0]
        return out

    def window(self, metric: Metric) -> tuple[int, int]:
        return int(metric.param("from", 0)), int(metric.param("to", self.end_ns))


def _statistic(values: np.ndarray, stat: str) -> float | None:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    if stat == "mean":
        return float(np.mean(values))
    if stat == "median":
        return float(np.median(values))
    if stat == "min":
        return float(np.min(values))
    if stat == "max":
        return float(np.max(values))
    if stat == "sum":
        return float(np.sum(values))
    return float(np.std(values, ddof=1)) if values.size > 1 else None


def _exit_bw(context: _Context, flow: int, exit_s: float | None) -> float:
    """The model's bandwidth estimate at the first sample at or after the start-up's end."""
    if exit_s is None:
        return float("nan")
    start = int(context.flow_row(flow)["start_ns"])
    at = start + round(exit_s * NS_PER_S)
    rows = (
        context.result.flow_series.filter(
            (pl.col("flow") == flow)
            & (pl.col("time_ns") >= at)
            & pl.col("model_bw_bps").is_not_null()
        )
        .sort("time_ns")
        .head(1)
    )
    return float(rows["model_bw_bps"][0]) if rows.height else float("nan")


def _per_flow(context: _Context, metric: Metric, flows: pl.DataFrame) -> np.ndarray:
    if metric.kind == "exit_bw":
        return np.array(
            [
                _exit_bw(context, int(f), None if e is None else float(e))
                for f, e in zip(flows["flow"].to_list(), flows["ss_exit_s"].to_list(), strict=True)
            ],
            dtype=np.float64,
        )
    if metric.kind == "share":
        everyone = context.tcp_flows(None)
        start, end = context.window(metric)
        windowed = metric.param("from") is not None or metric.param("to") is not None
        if windowed:
            delivered = context.delivered_between(everyone["flow"].to_list(), start, end)
        else:
            delivered = everyone["delivered_bytes"].cast(pl.Float64).to_numpy()
        total = float(np.sum(delivered))
        by_flow = dict(zip(everyone["flow"].to_list(), delivered, strict=True))
        return np.array(
            [
                by_flow.get(f, float("nan")) / total if total > 0 else float("nan")
                for f in flows["flow"].to_list()
            ],
            dtype=np.float64,
        )
    windowed = metric.param("from") is not None or metric.param("to") is not None
    if windowed and metric.kind in ("goodput", "delivered"):
        start, end = context.window(metric)
        delivered = context.delivered_between(flows["flow"].to_list(), start, end)
        if metric.kind == "delivered":
            return delivered
        return delivered * 8 * NS_PER_S / (end - start)
    column = flows[metric.spec.column]
    # null (a slow start that never ended, a flow that did not finish, a controller that does
    # not classify losses) is NaN here, which the aggregation leaves out.
    return column.cast(pl.Float64).fill_null(float("nan")).to_numpy()


def _flow_metric(context: _Context, metric: Metric) -> Any:
    flow = metric.param("flow")
    if flow is not None:
        row = context.flow_row(flow)
        frame = context.result.flows.filter(pl.col("flow") == flow)
        if metric.kind == "ss_exit_reason":
            return row["ss_exit_reason"]  # null in the flows table: never
        if row["kind"] != "tcp" and metric.kind not in ("goodput", "delivered"):
            return None
        value = _per_flow(context, metric, frame)[0]
        return None if not math.isfinite(value) else value
    flows = context.tcp_flows(metric.param("label"))
    if flows.height == 0:
        return None
    return _statistic(_per_flow(context, metric, flows), metric.param("stat"))


def _link_metric(context: _Context, metric: Metric) -> Any:
    link = context.link_id(metric.param("link"))
    row = context.result.links.filter(pl.col("link") == link).row(0, named=True)
    windowed = metric.param("from") is not None or metric.param("to") is not None
    if metric.kind == "utilization" and not windowed:
        return row["utilization"]
    if metric.kind.endswith("_sojourn"):
        ns = row[metric.spec.column]
        return None if ns is None else ns / NS_PER_S
    if metric.kind == "time_to_utilization":
        return _time_to_utilization(context, link, metric)
    if metric.kind not in ("utilization", "mean_queue"):
        return row[metric.spec.column]
    start, end = context.window(metric)
    samples = context.result.queue_series.filter(pl.col("link") == link).sort("time_ns")
    if samples.height == 0:
        raise MetricError(f"link {metric.param('link')!r} was not sampled (measure.links)")
    times = samples["time_ns"].to_numpy()
    if end > times[-1]:
        raise MetricError(
            f"the window ends at {end / NS_PER_S:g} s, after the last sample of "
            f"{metric.param('link')!r} ({times[-1] / NS_PER_S:g} s)"
        )
    if metric.kind == "mean_queue":
        inside = (times >= start) & (times <= end)
        queue = samples["queue_packets"].to_numpy()[inside]
        return float(np.mean(queue)) if queue.size else None
    exact = _exact_window(context, link, start, end)
    if exact is not None:
        return exact
    try:
        return context.result.utilization(metric.param("link"), start / NS_PER_S, end / NS_PER_S)
    except ValueError as e:
        raise MetricError(str(e)) from None


def _time_to_utilization(context: _Context, link: int, metric: Metric) -> float | None:
    """The first sample time t (s) at which busy time over [t - window, t] / window (on a link
    whose capacity varies: bytes sent over bytes its capacity offered) reached the fraction;
    the window starts at the latest sample at or before t - window."""
    samples = context.result.queue_series.filter(pl.col("link") == link).sort("time_ns")
    if samples.height == 0:
        raise MetricError(f"link {metric.param('link')!r} was not sampled (measure.links)")
    times = samples["time_ns"].to_numpy().astype(np.int64)
    window = int(metric.param("window"))
    fraction = float(metric.param("fraction"))
    starts = np.searchsorted(times, times - window, side="right") - 1
    valid = starts >= 0
    before = np.maximum(starts, 0)
    if "offered_bytes" in samples.columns and samples["offered_bytes"].null_count() == 0:
        # A capacity that varies: bytes sent over bytes offered in the window.
        sent = samples["sent_bytes"].to_numpy().astype(np.float64)
        offered = samples["offered_bytes"].to_numpy().astype(np.float64)
        offered_in = np.where(valid, offered - offered[before], 0.0)
        sent_in = np.where(valid, sent - sent[before], 0.0)
        reached = valid & (offered_in > 0) & (sent_in >= fraction * offered_in)
    else:
        busy = samples["busy_ns"].to_numpy().astype(np.int64)
        spans = np.where(valid, times - times[before], 0)
        busy_in = np.where(valid, busy - busy[before], 0)
        reached = valid & (spans > 0) & (busy_in >= fraction * spans)
    hits = np.flatnonzero(reached)
    return None if hits.size == 0 else float(times[hits[0]]) / NS_PER_S


def _exact_window(context: _Context, link: int, start: int, end: int) -> float | None:
    windows = context.result.windows
    for row in windows.iter_rows(named=True):
        if row["from_ns"] == start and row["to_ns"] == end:
            try:
                if context.link_id(row["link"]) == link:
                    return float(row["utilization"])
            except MetricError:
                continue
    return None


def _jain(context: _Context, metric: Metric) -> Any:
    flows = context.tcp_flows(metric.param("label"))
    if flows.height == 0:
        return None
    if metric.param("from") is not None or metric.param("to") is not None:
        start, end = context.window(metric)
        goodput = context.delivered_between(flows["flow"].to_list(), start, end)
    else:
        goodput = flows["goodput_bps"].to_numpy()
    return jain_index(goodput)


def _unfinished(context: _Context, metric: Metric) -> Any:
    flows = context.tcp_flows(metric.param("label")).filter(pl.col("size_bytes").is_not_null())
    return flows.filter(pl.col("completion_ns").is_null()).height


def _events(context: _Context, metric: Metric) -> Any:
    return context.result.stats.get("events")


_SPECIAL = ("jain", "unfinished", "events")
_COMPUTE: dict[str, Callable[[_Context, Metric], Any]] = {
    "flow": _flow_metric,
    "link": _link_metric,
    "jain": _jain,
    "unfinished": _unfinished,
    "events": _events,
}
