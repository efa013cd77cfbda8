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
from pathlib import Path
from typing import Any

from startlab import _core
from startlab.result import Result
from startlab.scenario import Scenario, core_error

__all__ = ["AVAILABLE", "KernelUnavailable", "check", "clean", "preflight", "run"]

KernelUnavailable = _core.KernelUnavailable
"""Raised when this machine cannot run the kernel world now: not root, no TUN devices, no
``ip`` command, another kernel run holds the machine, or this build of startlab has no kernel
world (built without the ``kernel`` feature; see :data:`AVAILABLE`)."""

AVAILABLE: bool = _core.HAS_KERNEL_WORLD
"""Whether this build of startlab has the kernel world (Linux, built with the ``kernel``
feature); without it every kernel call raises :class:`KernelUnavailable`."""


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


def controls(
    scenario: Scenario | Mapping[str, Any] | str | os.PathLike[str],
    *,
    overrides: Iterable[str] = (),
) -> list[str]:
    """What runs each flow entry in the kernel, one line per entry: Linux's built-in ``reno`` or
    ``cubic``, or startlab's eBPF port of the scenario's ``cc`` and ``startup`` (docs/kernel.md,
    "startlab's eBPF controllers"). Raises :class:`ScenarioError` as :func:`check` does."""
    checked = Scenario.of(scenario, overrides=overrides)
    try:
        return list(_core.kernel_controls(checked.to_json()))
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
    return Result.from_core(output)


def clean() -> list[str]:
    """Remove what kernel runs killed with SIGKILL left behind (namespaces, trace instances,
    changed module parameters); returns what was removed. A run does this itself when it
    starts."""
    return _core.kernel_clean()


# -- the link emulator's accuracy -----------------------------------------------------------------

ACCESS_RATE_BPS = 10e9
"""The access links of the accuracy paths: fast enough that the bottleneck is the only queue."""

PING_IP_BYTES = 84
"""An ICMP echo request or reply of 56 payload bytes, as IP packets."""


def _path(rate_bps: float, rtt_s: float, duration_s: float, buffer: str = "1BDP") -> dict[str, Any]:
    """A one-pair dumbbell whose propagation RTT is ``rtt_s`` (the access links add no delay)."""
    return {
        "name": f"accuracy-{rate_bps / 1e6:g}Mbps-{rtt_s * 1e3:g}ms",
        "seed": 1,
        "duration": f"{duration_s:.6f}s",
        "topology": {
            "kind": "dumbbell",
            "bottleneck": {
                "rate": f"{rate_bps:.0f}bps",
                "delay": f"{rtt_s / 2 * 1e9:.0f}ns",
                "queue": {"kind": "droptail", "limit": buffer},
            },
            "access": {"rate": f"{ACCESS_RATE_BPS:.0f}bps", "delay": "0s"},
        },
        "tcp": {"mss": "1448B", "header": "52B", "sack": True, "recovery": "sack"},
        "measure": {"interval": "10ms"},
    }


def link_accuracy(
    rate_bps: float,
    rtt_s: float,
    *,
    pings: int = 200,
    udp_seconds: float = 4.0,
    realtime_priority: int | None = 50,
) -> dict[str, Any]:
    """Measure the emulated path ``rate_bps`` / ``rtt_s`` on this machine: ``pings`` ICMP echo
    round trips on the idle path (against the configured RTT plus the echo's serialization),
    then UDP at 1.1 × the rate into a 4-BDP buffer for ``udp_seconds`` (the rate the receiver
    saw once the queue has built, against the configured one), with the emulator's lateness
    and the hypervisor's steal over the run."""
    interval_s = 0.01
    ping_start = 0.1
    # One echo at a time: each takes a round trip and a pause.
    udp_start = ping_start + pings * (rtt_s + interval_s) + 0.5
    duration = udp_start + udp_seconds + 0.3
    # A buffer of 4 BDPs keeps the link busy through a pause of the sending thread of up to
    # 4 RTTs (the sender is an ordinary thread on a machine whose CPUs the emulator shares).
    doc = _path(rate_bps, rtt_s, duration, buffer="4BDP")
    doc["flows"] = [
        {
            "kind": "cbr",
            "rate": f"{1.1 * rate_bps:.0f}bps",
            "packet_size": "1500B",
            "start": f"{udp_start:.6f}s",
            "stop": f"{udp_start + udp_seconds:.6f}s",
        }
    ]
    scenario = Scenario.from_dict(doc)
    output = _core.kernel_run(
        scenario.to_json(),
        realtime_priority,
        30,
        ("s0", "r0", pings, round(ping_start * 1e9), round(interval_s * 1e9)),
    )
    facts = output["kernel"]
    rtts = [r for r in facts["pings_ns"] if r is not None]
    # Serialization of the echo and its reply on the bottleneck and both access links.
    expected_ns = rtt_s * 1e9 + 2 * PING_IP_BYTES * 8 * (1 / rate_bps + 2 / ACCESS_RATE_BPS) * 1e9
    udp = facts["udp"][0]
    received = udp["received_rate_bps"]
    ordered = sorted(rtts)

    def quantile(q: float) -> float | None:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else None

    return {
        "rate_bps": rate_bps,
        "rtt_s": rtt_s,
        "pings": pings,
        "ping_replies": len(rtts),
        "ping_expected_ns": expected_ns,
        "ping_min_ns": ordered[0] if ordered else None,
        "ping_median_ns": quantile(0.5),
        "ping_p99_ns": quantile(0.99),
        "udp_received_rate_bps": received,
        "udp_rate_error": None if received is None else received / rate_bps - 1,
        "udp_send_errors": udp["send_errors"],
        "udp_socket_drops": udp["socket_drops"],
        "emulator": facts["emulator"],
        "kernel_release": facts["kernel_release"],
    }


#: Bytes of one Mahimahi delivery opportunity.
OPPORTUNITY_BYTES = 1504
#: The bins of the trace check.
BIN_NS = 100_000_000


def trace_bins(path: str | os.PathLike[str], seconds: float) -> list[int]:
    """The bytes a Mahimahi trace offers in each 100 ms of its first ``seconds`` (repeating as
    mm-link repeats it: shifted by its last timestamp): 1504 bytes per opportunity, an
    opportunity at ``T`` ms counted in the bin that holds ``T``."""
    stamps: list[int] = []
    with Path(path).open(encoding="ascii") as f:
        for line in f:
            stamps.append(int(line))
    period = stamps[-1]
    bins = [0] * int(seconds * 1e9 / BIN_NS)
    offset = 0
    while offset * 1_000_000 < len(bins) * BIN_NS:
        for ms in stamps:
            k = (offset + ms) * 1_000_000 // BIN_NS
            if k < len(bins):
                bins[k] += OPPORTUNITY_BYTES
        offset += period
    return bins


def trace_accuracy(
    trace: str | os.PathLike[str],
    *,
    seconds: float = 10.0,
    realtime_priority: int | None = 50,
) -> dict[str, Any]:
    """Drive a bottleneck without propagation delay from the Mahimahi ``trace`` and send UDP
    into it at 1.1 × the trace's highest rate over 100 ms, into a deep buffer, for ``seconds``:
    the bytes the receiver got in each 100 ms (by the kernel's stamps) against the bytes the
    trace's opportunities offer there. The error of a bin is (received − offered) over the
    trace's mean bytes per bin; the first 200 ms (the queue building) are left out."""
    trace = str(Path(trace).resolve())
    offered = trace_bins(trace, seconds)
    peak_bps = max(offered) * 8 * 1e9 / BIN_NS
    doc: dict[str, Any] = {
        "name": "accuracy-trace",
        "seed": 1,
        "duration": f"{seconds + 0.5:.6f}s",
        "topology": {
            "kind": "dumbbell",
            "bottleneck": {
                "rate": {"trace": trace},
                "reverse_rate": "100Mbps",
                "delay": "0s",
                "queue": {"kind": "droptail", "limit": 4000},
            },
            "access": {"rate": f"{ACCESS_RATE_BPS:.0f}bps", "delay": "0s"},
        },
        "flows": [
            {
                "kind": "cbr",
                "rate": f"{1.1 * peak_bps:.0f}bps",
                "packet_size": "1500B",
                "start": "0s",
                "stop": f"{seconds:.6f}s",
            }
        ],
    }
    output = _core.kernel_run(Scenario.from_dict(doc).to_json(), realtime_priority, 30, None)
    facts = output["kernel"]
    received = facts["udp"][0]["received_bytes_per_100ms"]
    first = 2
    pairs = list(zip(received[first : len(offered)], offered[first:], strict=False))
    mean = sum(o for _, o in pairs) / len(pairs)
    errors = sorted(abs(r - o) / mean for r, o in pairs)
    total = sum(r for r, _ in pairs) / sum(o for _, o in pairs)
    return {
        "trace": trace,
        "seconds": seconds,
        "peak_bps": peak_bps,
        "mean_bps": mean * 8 * 1e9 / BIN_NS,
        "bins": len(pairs),
        "received": [r for r, _ in pairs],
        "offered": [o for _, o in pairs],
        "error_median": errors[len(errors) // 2],
        "error_p99": errors[min(len(errors) - 1, int(0.99 * len(errors)))],
        "error_max": errors[-1],
        "received_over_offered": total,
        "udp_send_errors": facts["udp"][0]["send_errors"],
        "udp_socket_drops": facts["udp"][0]["socket_drops"],
        "emulator": facts["emulator"],
    }


def exit_spread(
    rate_bps: float,
    rtt_s: float,
    *,
    repeats: int = 3,
    duration_s: float = 3.0,
    realtime_priority: int | None = 50,
) -> dict[str, Any]:
    """Run one CUBIC flow with Linux's HyStart on the path ``repeats`` times and report how far
    its slow-start exits spread: (max − min) / median of the exit cwnd and of the exit time."""
    doc = _path(rate_bps, rtt_s, duration_s)
    doc["flows"] = [{"cc": "cubic", "startup": "hystart", "startup_params": {"variant": "linux"}}]
    scenario = Scenario.from_dict(doc)
    exits = []
    for _ in range(repeats):
        result = run(scenario, realtime_priority=realtime_priority)
        row = result.flows.row(0, named=True)
        exits.append(
            {
                "time_s": row["ss_exit_s"],
                "cwnd": row["ss_exit_cwnd"],
                "reason": row["ss_exit_reason"],
                "lateness_p99_ns": result.kernel["emulator"]["lateness_p99_ns"],
                "steal_ns": result.kernel["emulator"]["steal_ns"],
            }
        )

    def spread(key: str) -> float | None:
        values = sorted(e[key] for e in exits if e[key] is not None)
        if len(values) < len(exits) or not values:
            return None
        median = values[len(values) // 2]
        return (values[-1] - values[0]) / median if median else None

    return {
        "rate_bps": rate_bps,
        "rtt_s": rtt_s,
        "exits": exits,
        "cwnd_spread": spread("cwnd"),
        "time_spread": spread("time_s"),
        "reasons": sorted({str(e["reason"]) for e in exits}),
    }
