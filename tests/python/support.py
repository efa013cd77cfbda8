"""Helpers shared by the tests: paths and small scenario documents."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def dumbbell(
    *,
    rate: str = "10Mbps",
    delay: str = "10ms",
    limit: Any = 50,
    flows: int = 1,
    duration: str = "2s",
    **top: Any,
) -> dict[str, Any]:
    """A small dumbbell scenario document, one bulk TCP flow per pair."""
    document: dict[str, Any] = {
        "name": "test-dumbbell",
        "duration": duration,
        "topology": {
            "kind": "dumbbell",
            "pairs": flows,
            "bottleneck": {
                "rate": rate,
                "delay": delay,
                "queue": {"kind": "droptail", "limit": limit},
            },
        },
        "flows": [{"pair": i} for i in range(flows)],
    }
    document.update(copy.deepcopy(top))
    return document


def field_pattern(*parts: str | int) -> str:
    """A regex for a field path in an error message: ``flows.0.cc`` or ``flows[0].cc``."""
    pattern = ""
    for part in parts:
        if isinstance(part, int):
            pattern += rf"(\.{part}|\[{part}\])"
        else:
            pattern += (r"\." if pattern else "") + part
    return pattern
