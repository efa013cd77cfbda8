"""Careful Resume (docs/algorithms/careful-resume.md): the saved state of a path, its lifetime
and exclusive use, the jump, and what the Linux receiver's window makes of it."""

from __future__ import annotations

from typing import Any

import polars as pl

import startlab


def document(**flow: Any) -> dict[str, Any]:
    """Connections of 20 MB, 5 s apart, over 100 Mbit/s with an RTT of 100 ms and a buffer of
    one BDP, on the ns-2 stack with SACK and an initial window of 10 (its receiver advertises
    no window limit)."""
    return {
        "name": "careful-resume",
        "duration": "10s",
        "topology": {
            "kind": "dumbbell",
            "access": {"rate": "1Gbps", "delay": "0s"},
            "bottleneck": {
                "rate": "100Mbps",
                "delay": "50ms",
                "queue": {"kind": "droptail", "limit": "1BDP"},
            },
        },
        "tcp": {"sack": True, "recovery": "sack", "initial_window": 10},
        "measure": {"interval": "10ms"},
        "flows": [
            {
                "cc": "cubic",
                "startup": "careful-resume",
                "size": "20MB",
                "count": 2,
                "stagger": "5s",
            }
            | flow
        ],
    }


def run(doc: dict[str, Any]) -> startlab.Result:
    return startlab.run(startlab.Scenario.from_dict(doc))


def cwnd_at(r: startlab.Result, flow: int, t: float) -> float:
    s = r.flow_series.filter((pl.col("flow") == flow) & (pl.col("time_s") <= t))
    return float(s["cwnd"][-1])


def test_a_warm_path_jumps_to_half_the_saved_window_and_a_cold_one_does_not() -> None:
    r = run(document())
    f = r.flows.sort("flow")
    # The first connection finds nothing saved: slow start, 10, 20, 40 a round.
    assert cwnd_at(r, 0, 0.25) <= 40
    # The second finds what the first saved when it closed (its cwnd in congestion
    # avoidance, half of it in a slow start: after its timeouts the first closed in one) and,
    # once its initial window is acknowledged, jumps to half of that.
    last = r.flow_series.filter(pl.col("flow") == 0).row(-1, named=True)
    saved = last["cwnd"] / 2 if last["cwnd"] < last["ssthresh"] else last["cwnd"]
    assert cwnd_at(r, 1, 5.15) == saved // 2, (last, cwnd_at(r, 1, 5.15))
    # It completes sooner: the rounds from 10 to the jump are skipped.
    first, second = f["completion_s"].to_list()
    assert second < first - 0.3, (first, second)


def test_saved_state_expires_with_its_lifetime() -> None:
    r = run(document(startup_params={"lifetime": 1.0}))
    # Saved at about 3.3 s, expired at 4.3 s: the second connection starts cold.
    assert cwnd_at(r, 1, 5.15) <= 20


def test_one_connection_at_a_time_uses_the_saved_state() -> None:
    doc = document()
    doc["flows"][0] |= {"count": 1}
    doc["flows"].append(
        {"cc": "cubic", "startup": "careful-resume", "size": "20MB", "count": 2, "start": "5s"}
    )
    r = run(doc)
    # Two connections open together at 5 s after the first closed: one resumes, one does not.
    at = sorted([cwnd_at(r, 1, 5.15), cwnd_at(r, 2, 5.15)])
    assert at[0] <= 20 < at[1], at


def test_the_linux_receivers_window_holds_the_jump_back() -> None:
    doc = document()
    doc["tcp"] = {"stack": "linux"}
    r = run(doc)
    # The window jumps, but the Linux receiver's autotuned window (tcp_rcv_space_adjust) grows
    # about as slow start would: what is in flight stays far below it for the jump's RTT.
    s = r.flow_series.filter(
        (pl.col("flow") == 1) & (pl.col("time_s") > 5.25) & (pl.col("time_s") < 5.3)
    )
    assert s["cwnd"].min() > 400
    assert s["in_flight"].max() < 100
