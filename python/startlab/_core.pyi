"""The compiled simulator core (Rust, via PyO3).

This module is private: use :mod:`startlab` instead. Scenarios cross this boundary as JSON
text (the JSON form of the TOML document described in ``docs/scenario.md``) and results come
back as raw columns, which :mod:`startlab.result` turns into polars DataFrames.
"""

from typing import Any, Literal, NotRequired, TypedDict

Dtype = Literal["f64", "i64", "u64", "u32", "u8"]
"""Element type of a numeric column; the data is little-endian."""

Column = tuple[Dtype, bytes, bytes | None] | list[str | None]
"""A numeric column ``(dtype, little-endian bytes, validity)`` — validity is one byte per row,
1 where a value is present, or ``None`` for a column that cannot hold nulls — or a column of
strings (``None`` is null)."""

Table = dict[str, Column]
"""Column name -> column, every column of the same length."""

class Stats(TypedDict):
    events: int
    """Events processed by the simulation."""
    packets_forwarded: int
    """Packets sent on any link."""
    sim_time_ns: int
    """Simulated time (ns)."""
    wall_time_s: float
    """Wall-clock time of the simulation (s)."""
    jain_index: float | None
    """Jain's fairness index over the goodput of the TCP flows; ``None`` without TCP flows."""
    packets_created: int
    packets_delivered: int
    packets_dropped: int
    packets_in_network: int
    """created = delivered + dropped + in_network."""

class RunOutput(TypedDict):
    resolved: str
    """The resolved scenario as JSON text."""
    tables: dict[str, Table]
    """``flow_series``, ``queue_series``, ``flows``, ``links`` and ``windows``."""
    stats: Stats
    warnings: list[str]
    """What the scenario probably does not mean: ``"<dotted.path>: <why>"``."""
    kernel: NotRequired[dict[str, Any]]
    """Only from :func:`kernel_run`: what only the kernel world has."""

class ColumnInfo(TypedDict):
    name: str
    dtype: Literal["f64", "i64", "u64", "u32", "u8", "str"]
    nullable: bool
    unit: str
    """``"ns"``, ``"segments"``, ``"bytes"``, ``"bit/s"``, ``"ratio"``, … or ``""``."""
    doc: str

class TableInfo(TypedDict):
    name: str
    doc: str
    columns: list[ColumnInfo]

class LinkInfo(TypedDict):
    link: int
    name: str
    alias: str | None
    src: str
    dst: str
    rate_bps: float
    delay_ns: int

class FlowInfo(TypedDict):
    entry: int
    """Index of the ``[[flows]]`` entry."""
    label: str
    kind: str
    src: str
    dst: str
    rtt_ns: int
    """Propagation round-trip time along the flow's routes."""

class Description(TypedDict):
    links: list[LinkInfo]
    hosts: list[str]
    flows: list[FlowInfo]
    """One per flow: each copy of a ``count`` entry, one per arrival process."""
    bdp_rtt_ns: int
    bdp_packets: float
    sampled_links: list[int]
    warnings: list[str]
    """What the scenario probably does not mean: ``"<dotted.path>: <why>"``."""

class ParamInfo(TypedDict):
    name: str
    default: str
    description: str
    unit: str
    """``"segments"``, ``"ms"``, … or ``""``."""
    allowed: str
    """The allowed values in words (``0 < beta < 1``), or ``""`` when the type says it all."""

class AlgorithmInfo(TypedDict):
    name: str
    role: Literal["cc", "startup", "pacing", "initial-window"]
    """``"cc"``: a congestion control (``flows.cc``); ``"startup"``: a slow-start algorithm
    (``flows.startup``); ``"pacing"``: a pacing mode (``tcp.pacing``); ``"initial-window"``:
    the initial window (``tcp.initial_window``)."""
    summary: str
    source: str
    """The paper, RFC or implementation the model follows."""
    params: list[ParamInfo]

def version() -> str:
    """The version of the simulator core."""

def resolve(scenario_json: str) -> str:
    """Validate a scenario and return it resolved (every default filled in, every ``BDP`` limit
    turned into packets) as JSON text.

    Raises ``ValueError("<dotted.path>: <what is wrong>")`` on the first invalid field.
    """

def run(scenario_json: str) -> RunOutput:
    """Validate and simulate a scenario; raises ``ValueError`` like :func:`resolve`."""

def schema() -> list[TableInfo]:
    """The declared tables and their columns, in the order they are written."""

def describe(scenario_json: str) -> Description:
    """What a scenario resolves to without running it: links, hosts, flows with their RTTs,
    the BDP and the sampled links. Raises ``ValueError`` like :func:`resolve`."""

def phase_names() -> list[str]:
    """Names of the ``phase`` codes of ``flow_series`` (the code is the index)."""

def algorithms() -> list[AlgorithmInfo]:
    """Every congestion-control and slow-start algorithm the core implements."""

class KernelUnavailable(Exception):
    """The machine cannot run the kernel world now."""

HAS_KERNEL_WORLD: bool
"""Whether this build has the kernel world (the ``kernel`` feature)."""

def kernel_run(
    scenario_json: str,
    realtime_priority: int | None = 50,
    spin_us: int = 30,
    ping: tuple[str, str, int, int, int] | None = None,
) -> RunOutput:
    """Run a scenario on the kernel's TCP over the link emulator (root only); ``ping`` is
    (source host, destination host, count, first request ns, pause ns) for an echo probe."""

def kernel_plan(scenario_json: str) -> list[str]:
    """Check a scenario against the kernel; returns Linux's intrinsic differences."""

def kernel_controls(scenario_json: str) -> list[str]:
    """What runs each flow entry in the kernel, one line per entry."""

def kernel_preflight() -> str | None:
    """What the machine lacks for the kernel world, or ``None``."""

def kernel_clean() -> list[str]:
    """Remove what killed kernel runs left; returns what was removed."""
