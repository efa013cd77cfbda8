"""PNG plots of a run: congestion window, queue length and goodput over time.

They are drawn by :mod:`startlab.figures`, which draws every figure of startlab (runs, sweeps,
the reproduction); this module names the run plots.
"""

from __future__ import annotations

from startlab.figures import MAX_LEGEND_FLOWS, cwnd, queue, throughput, write_all

__all__ = ["MAX_LEGEND_FLOWS", "cwnd", "queue", "throughput", "write_all"]
