"""startlab: a deterministic packet-level TCP simulator for studying slow start.

The simulator core is written in Rust (:mod:`startlab._core`); this package reads scenarios,
runs them and turns the results into polars DataFrames and plots::

    import startlab

    scenario = startlab.Scenario.load("examples/dumbbell-newreno.toml")
    result = startlab.run(scenario.with_overrides(["flows.0.cc=reno"]))
    print(result.flows)
    print(result.utilization("bottleneck", 0.0, 20.0))

    table = startlab.sweep("examples/sweeps/startup-comparison.toml", "out/sweep")
"""

from __future__ import annotations

from startlab import _core
from startlab.result import Result, run
from startlab.scenario import Scenario, ScenarioError

# ``startlab.sweep`` is the function :func:`startlab.sweep.sweep`; its package is imported
# by name (``from startlab.sweep import SweepPlan``, ``import startlab.sweep.plan``).
from startlab.sweep import run_sweep, sweep

__all__ = [
    "Result",
    "Scenario",
    "ScenarioError",
    "__version__",
    "algorithms",
    "describe",
    "run",
    "run_sweep",
    "schema",
    "sweep",
]

__version__: str = _core.version()


def algorithms() -> list[_core.AlgorithmInfo]:
    """Every mechanism of the papers: congestion controls (``role == "cc"``), slow-start
    algorithms (``"startup"``), pacing modes (``"pacing"``, Initial Spreading among them) and the
    initial window (``"initial-window"``), each with its summary, its source and its parameters
    (default, unit, allowed values)."""
    return _core.algorithms()


def schema() -> list[_core.TableInfo]:
    """The tables every run writes, each column with its type, whether it can be null, its
    unit and what it means. Declared once, in the core."""
    return _core.schema()


def describe(scenario: Scenario | dict[str, object] | str) -> _core.Description:
    """Links, hosts, flows with their RTTs, and the BDP of a scenario (a :class:`Scenario`, a
    document dict or the path of a TOML file), without running it."""
    if isinstance(scenario, Scenario):
        return scenario.describe()
    if isinstance(scenario, dict):
        return Scenario.from_dict(scenario).describe()
    return Scenario.load(scenario).describe()
