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
    "run",
    "run_sweep",
    "sweep",
]

__version__: str = _core.version()


def algorithms() -> list[_core.AlgorithmInfo]:
    """Every congestion-control (``role == "cc"``) and slow-start (``role == "startup"``)
    algorithm, with its summary, its source and its parameters."""
    return _core.algorithms()
