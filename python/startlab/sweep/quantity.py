"""Quantities written as text with a unit, as in scenario files: ``"40Mbps"``, ``"100ms"``,
``"64KB"``, ``"0.5BDP"``, ``"100p"``.

The sweep machinery reads them to generate ranges (``{ from = "20ms", to = "200ms", steps =
10 }``), to add a numeric column next to an axis written with units, and to lay out plot axes.
The units are those of ``docs/scenario.md``; the core remains the judge of what a field accepts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["FAMILIES", "Quantity", "format_number", "parse_quantity", "si_value"]

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
