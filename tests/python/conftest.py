"""Fixtures: the command-line runner; hypothesis profiles."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from support import ROOT

# Simulations take milliseconds but vary: no deadline. Derandomized so that a test run is
# reproducible; the slow tests search further.
settings.register_profile("startlab", deadline=None, derandomize=True)
settings.load_profile("startlab")


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m startlab ARGS...`` and capture its output."""

    def run(*args: str | os.PathLike[str], cwd: Path | None = None, timeout: float = 120):
        return subprocess.run(
            [sys.executable, "-m", "startlab", *map(str, args)],
            capture_output=True,
            text=True,
            cwd=cwd or ROOT,
            timeout=timeout,
            check=False,
        )

    return run
