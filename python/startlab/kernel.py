"""The kernel world: a scenario run on Linux's own TCP between network namespaces, over the
link emulator, written in the same tables as a simulation (docs/kernel.md).

    import startlab.kernel

    result = startlab.kernel.run("examples/dumbbell-two-flows.toml")   # as root
    result.flows            # the simulator's columns, from the kernel's own state
    result.kernel           # kernel release, emulator lateness, TCP_INFO at the end, ...

A kernel run needs root, TUN devices and network namespaces; it takes the scenario's duration
in real time, and only one runs on a machine at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from startlab import _core
from startlab.result import Result
from startlab.scenario import Scenario, core_error

__all__ = ["KernelUnavailable", "check", "clean", "preflight", "run"]

KernelUnavailable = _core.KernelUnavailable
"""Raised when this machine cannot run the kernel world now: not root, no TUN devices, no
``ip`` command, or another kernel run holds the machine."""


def preflight() -> str | None:
    """What this machine lacks for the kernel world, or ``None`` if it has everything."""
    return _core.kernel_preflight()


def check(
    scenario: Scenario | Mapping[str, Any] | str | os.PathLike[str],
    *,
    overrides: Iterable[str] = (),
) -> list[str]:
    """Check that the kernel can run ``scenario`` as written, without running it. Returns what
    Linux does whatever the scenario says (it always opens with a handshake, keeps undo, ...);
    raises :class:`ScenarioError` naming the first field it cannot honour (a controller the
    kernel lacks, an initial ssthresh, a topology the emulator does not build)."""
    checked = Scenario.of(scenario, overrides=overrides)
    try:
        return _core.kernel_plan(checked.to_json())
    except ValueError as e:
        raise core_error(e) from None


def run(
    scenario: Scenario | Mapping[str, Any] | str | os.PathLike[str],
    *,
    overrides: Iterable[str] = (),
    realtime_priority: int | None = 50,
    spin_us: int = 30,
) -> Result:
    """Run ``scenario`` on the kernel and return its :class:`Result` (``world == "kernel"``).

    ``realtime_priority`` runs the emulator's forwarding threads under ``SCHED_FIFO`` (``None``:
    the normal scheduler, which makes packets leave later); ``spin_us`` is how long before a
    departure the emulator stops sleeping and polls. Raises :class:`ScenarioError` for a field
    the kernel cannot honour, :class:`KernelUnavailable` when the machine cannot run it,
    ``KeyboardInterrupt`` when interrupted (everything the run created is removed first).
    """
    checked = Scenario.of(scenario, overrides=overrides)
    try:
        output = _core.kernel_run(checked.to_json(), realtime_priority, spin_us)
    except ValueError as e:
        raise core_error(e) from None
    return Result._from_core(output)


def clean() -> list[str]:
    """Remove what kernel runs killed with SIGKILL left behind (namespaces, trace instances,
    changed module parameters); returns what was removed. A run does this itself when it
    starts."""
    return _core.kernel_clean()
