"""Invariants that hold for every small dumbbell, checked on random scenarios (hypothesis)."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import startlab
from support import dumbbell

MSS = 1000  # default tcp.mss
PACKET = 1040  # default tcp.mss + tcp.header


@st.composite
def dumbbells(
    draw: st.DrawFn,
    *,
    max_rate_mbps: int = 50,
    max_flows: int = 3,
    duration_s: float = 2.0,
    lossy: bool = False,
) -> dict[str, Any]:
    """Random dumbbells: rate, delay, buffer (packets), flows with random starts."""
    flows = draw(st.integers(1, max_flows))
    document = dumbbell(
        rate=f"{draw(st.integers(1, max_rate_mbps))}Mbps",
        delay=f"{draw(st.integers(1, 50))}ms",
        limit=draw(st.integers(2, 100)),
        flows=flows,
        duration=f"{duration_s}s",
        seed=draw(st.integers(1, 1000)),
    )
    if lossy:
        document["topology"]["bottleneck"]["loss"] = draw(st.sampled_from([0.0, 0.001, 0.01]))
    for flow in document["flows"]:
        flow["start"] = f"{draw(st.integers(0, 500))}ms"
        flow["cc"] = draw(st.sampled_from(["newreno", "reno"]))
    return document


def check_invariants(document: dict[str, Any]) -> None:
    result = startlab.run(document)
    duration_s = result.stats["sim_time_ns"] / 1e9
    bottleneck = result.link("bottleneck")
    limit = document["topology"]["bottleneck"]["queue"]["limit"]

    # The link can't send faster than its rate (a packet may be on the wire at the end).
    assert bottleneck["forwarded_bytes"] * 8 <= bottleneck["rate_bps"] * duration_s + PACKET * 8

    # The queue never holds more packets than its limit.
    assert bottleneck["limit_packets"] == limit
    assert bottleneck["max_queue_packets"] <= limit
    queue = result.queue_series.filter(pl.col("link") == bottleneck["link"])
    assert queue.height > 0
    assert queue["queue_packets"].max() <= limit

    # Receivers get no more than was sent, and no more than any sample said.
    for flow in result.flows.iter_rows(named=True):
        assert flow["delivered_bytes"] <= flow["sent_packets"] * MSS
        assert flow["retransmissions"] <= flow["sent_packets"]
    delivered = result.flow_series.group_by("flow").agg(pl.col("delivered_bytes").max())
    final = dict(zip(result.flows["flow"], result.flows["delivered_bytes"], strict=True))
    for flow, most in delivered.iter_rows():
        assert most <= final[flow]

    # Cumulative counters never decrease.
    for _, samples in result.queue_series.sort("time_ns").group_by("link"):
        for column in ("drops", "losses", "busy_ns"):
            assert samples[column].diff().drop_nulls().min() >= 0  # type: ignore[operator]
    assert 0.0 <= bottleneck["utilization"] <= 1.0 + 1e-12


@settings(max_examples=40)
@given(dumbbells())
def test_small_dumbbells_keep_the_invariants(document: dict[str, Any]):
    check_invariants(document)


@pytest.mark.slow
@settings(max_examples=300)
@given(dumbbells(max_rate_mbps=200, max_flows=8, duration_s=10.0, lossy=True))
def test_larger_dumbbells_keep_the_invariants(document: dict[str, Any]):
    check_invariants(document)


@st.composite
def varying_dumbbells(draw: st.DrawFn) -> dict[str, Any]:
    """Small dumbbells whose bottleneck changes: random rate steps (outages included), delay
    steps, bursty loss, jitter and reordering."""
    document = draw(dumbbells(max_flows=2))
    link = document["topology"]["bottleneck"]
    times = sorted(draw(st.sets(st.integers(1, 1900), max_size=6)))
    rates = [f"{draw(st.sampled_from([0, 1, 5, 20, 50]))}Mbps" for _ in times]
    link["rate"] = {
        "steps": [["0s", link["rate"]]] + [[f"{t}ms", r] for t, r in zip(times, rates, strict=True)]
    }
    if draw(st.booleans()):
        link["rate"]["period"] = "2s"
    if draw(st.booleans()):
        link["delay"] = {
            "steps": [["0s", link["delay"]], ["700ms", f"{draw(st.integers(0, 80))}ms"]]
        }
    if draw(st.booleans()):
        link["loss"] = {"gilbert": {"p": draw(st.sampled_from([0.001, 0.01])), "r": 0.3}}
    if draw(st.booleans()):
        link["jitter"] = f"{draw(st.integers(0, 5))}ms"
    if draw(st.booleans()):
        link["reorder"] = {"probability": draw(st.sampled_from([0.01, 0.2])), "extra": "3ms"}
    return document


@settings(max_examples=40)
@given(varying_dumbbells())
def test_links_that_change_keep_the_invariants(document: dict[str, Any]):
    result = startlab.run(document)
    duration_s = result.stats["sim_time_ns"] / 1e9
    bottleneck = result.link("bottleneck")
    limit = document["topology"]["bottleneck"]["queue"]["limit"]
    # Never more than the capacity offered (one packet may be on the wire at the end).
    offered = bottleneck["mean_rate_bps"] * duration_s / 8
    assert bottleneck["forwarded_bytes"] <= offered + PACKET
    assert 0.0 <= bottleneck["utilization"] <= 1.0
    assert bottleneck["max_queue_packets"] <= limit
    queue = result.queue_series.filter(pl.col("link") == bottleneck["link"]).sort("time_ns")
    for column in ("sent_bytes", "offered_bytes", "drops", "losses"):
        assert queue[column].diff().drop_nulls().min() >= 0  # type: ignore[operator]
    # The rate the table shows is one the schedule has.
    allowed = {1e6 * int(r[:-4]) for _, r in document["topology"]["bottleneck"]["rate"]["steps"]}
    assert set(queue["rate_bps"].unique().to_list()) <= allowed
    for flow in result.flows.iter_rows(named=True):
        assert flow["delivered_bytes"] <= flow["sent_packets"] * MSS
