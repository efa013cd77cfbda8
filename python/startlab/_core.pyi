"""The compiled simulator core (Rust, via PyO3).

This module is private: use :mod:`startlab` instead. Scenarios cross this boundary as JSON
text (the JSON form of the TOML document described in ``docs/scenario.md``) and results come
back as raw columns, which :mod:`startlab.result` turns into polars DataFrames.
"""

from typing import Literal, TypedDict

Dtype = Literal["f64", "i64", "u64", "u32", "u8"]
"""Element type of a numeric column; the data is little-endian."""

Column = tuple[Dtype, bytes] | list[str]
"""A numeric column ``(dtype, little-endian bytes)`` or a column of strings."""

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
    jain_index: float
    """Jain's fairness index over the goodput of the TCP flows; NaN without TCP flows."""

class RunOutput(TypedDict):
    resolved: str
    """The resolved scenario as JSON text."""
    tables: dict[str, Table]
    """``flow_series``, ``queue_series``, ``flows``, ``links`` and ``windows``."""
    stats: Stats

class ParamInfo(TypedDict):
    name: str
    default: str
    description: str

class AlgorithmInfo(TypedDict):
    name: str
    role: Literal["cc", "startup"]
    """``"cc"``: a congestion control (``flows.cc``); ``"startup"``: a slow-start algorithm
    (``flows.startup``)."""
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

def phase_names() -> list[str]:
    """Names of the ``phase`` codes of ``flow_series`` (the code is the index)."""

def algorithms() -> list[AlgorithmInfo]:
    """Every congestion-control and slow-start algorithm the core implements."""
