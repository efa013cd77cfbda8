"""Connections that pause and resume (a flow's ``requests``): responses written one at a time,
the restart after idle, and the ``requests`` table, end to end (docs/scenario.md)."""

from __future__ import annotations

import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import tomli_w

import startlab


def document(requests: dict[str, Any], *, tcp: dict[str, Any] | None = None) -> dict[str, Any]:
    """One Linux-stack flow over 100 Mbit/s with an RTT of 100 ms and a buffer that never
    drops, whose application writes ``requests``."""
    return {
        "name": "requests",
        "duration": "8s",
        "topology": {
            "kind": "dumbbell",
            "access": {"rate": "10Gbps", "delay": "0s"},
            "bottleneck": {
                "rate": "100Mbps",
                "delay": "50ms",
                "queue": {"kind": "droptail", "limit": 100000},
            },
        },
        "tcp": {"stack": "linux"} | (tcp or {}),
        "flows": [{"cc": "cubic", "requests": requests}],
    }


def run(requests: dict[str, Any], **kw: Any) -> startlab.Result:
    return startlab.run(startlab.Scenario.from_dict(document(requests, **kw)))


# One response is one initial window: 10 segments of 1448 bytes.
IW_BYTES = "14480B"


def test_each_response_takes_the_rounds_its_window_needs() -> None:
    r = run({"count": 3, "size": IW_BYTES, "think": "2s"}).requests.sort("request")
    assert r["request"].to_list() == [0, 1, 2]
    assert r["bytes"].to_list() == [14480] * 3
    # The first is written once the connection is open, after the handshake's RTT (two 52-byte
    # segments take 8.3 us on the wire); the initial window takes one RTT, its 10 x 1500 B
    # 1.2 ms on the wire.
    first, second, third = r.rows(named=True)
    assert 0.1 < first["start_s"] < 0.10001, first
    assert 0.1012 <= first["completion_s"] < 0.1025, first
    assert (first["start_cwnd"], first["idle_ns"], first["restarted"]) == (10.0, 0, 0)
    # The next is written 2 s after the first was acknowledged; the connection has sent nothing
    # for 2 s plus the last segment's RTT, more than its RTO: the window restarts at the initial
    # window (tcp_cwnd_restart), which carries the response in one RTT.
    assert second["start_ns"] == first["start_ns"] + first["completion_ns"] + 2_000_000_000
    assert second["restarted"] == 1
    assert second["start_cwnd"] == 10.0
    assert 2.0 < second["idle_s"] < 2.11, second
    assert 0.1012 <= second["completion_s"] < 0.1025, second
    assert third["restarted"] == 1
    # The connection completes with its last response.
    flow = startlab.run(startlab.Scenario.from_dict(document({"count": 1, "size": IW_BYTES})))
    only = flow.requests.row(0, named=True)
    assert flow.flows["completion_ns"][0] == only["start_ns"] + only["completion_ns"]
    assert flow.flows["size_bytes"][0] == 14480


def test_without_restart_after_idle_the_window_is_kept() -> None:
    r = run({"count": 2, "size": IW_BYTES, "think": "2s"}, tcp={"restart_after_idle": False})
    second = r.requests.sort("request").row(1, named=True)
    # Slow start grew the window by the 10 segments acknowledged (tcp_is_cwnd_limited held
    # for the round that filled it): 20, all of it usable at once.
    assert (second["restarted"], second["start_cwnd"]) == (0, 20.0)
    assert 0.1012 <= second["completion_s"] < 0.1025, second


def test_a_response_written_within_the_rto_keeps_its_window() -> None:
    r = run({"count": 2, "size": IW_BYTES}).requests.sort("request")
    second = r.row(1, named=True)
    # Written at once: idle for the last ACK's half RTT only, less than the RTO (>= 200 ms).
    assert (second["restarted"], second["start_cwnd"]) == (0, 20.0)
    assert second["idle_ns"] < 200_000_000


def test_sizes_and_think_times_are_drawn_from_the_connections_own_stream() -> None:
    drawn = {
        "size": {"distribution": "exponential", "mean": "50KB"},
        "think": "300ms",
        "think_distribution": "exponential",
    }
    a = run(drawn).requests
    b = run(drawn).requests
    assert a.equals(b)
    assert a.height > 5
    assert a["bytes"].n_unique() == a.height
    doc = document(drawn)
    doc["seed"] = 2
    c = startlab.run(startlab.Scenario.from_dict(doc)).requests
    assert c["bytes"].to_list()[:3] != a["bytes"].to_list()[:3]
    # Each start follows the previous completion by a drawn think time.
    rows = a.sort("request").rows(named=True)
    gaps = [n["start_ns"] - (p["start_ns"] + p["completion_ns"]) for p, n in pairwise(rows)]
    assert len(set(gaps)) == len(gaps)
    assert min(gaps) >= 0


def test_a_flow_without_requests_has_none(tmp_path: Path) -> None:
    doc = document({"count": 1, "size": "1KB"})
    del doc["flows"][0]["requests"]
    doc["flows"][0]["size"] = "100KB"
    result = startlab.run(startlab.Scenario.from_dict(doc))
    assert result.requests.height == 0
    # An older run directory without requests.parquet reads as an empty table.
    result.write(tmp_path / "run", plots=False)
    (tmp_path / "run" / "requests.parquet").unlink()
    assert startlab.Result.load(tmp_path / "run").requests.height == 0


@pytest.mark.parametrize(
    ("flow", "field", "message"),
    [
        ({"size": "1MB", "requests": {"size": "1KB"}}, "flows[0].size", "not both"),
        ({"requests": {"size": "1KB", "count": 0}}, "flows[0].requests.count", "1 to 1000000"),
        ({"requests": {"size": "unlimited"}}, "flows[0].requests.size", "expected bytes"),
        ({"requests": {"size": "1KB", "think": "61min"}}, "flows[0].requests.think", "at most 1h"),
        (
            {"requests": {"size": "1KB", "think_shape": 2.0}},
            "flows[0].requests.think_shape",
            "pareto",
        ),
        (
            {"requests": {"size": "1KB", "think_distribution": "pareto", "think_shape": 1.0}},
            "flows[0].requests.think_shape",
            "above 1",
        ),
        ({"kind": "cbr", "rate": "1Mbps", "requests": {"size": "1KB"}}, "flows[0].requests", "cbr"),
        ({"requests": {"size": "1KB", "sizes": "2KB"}}, "flows[0].requests", "sizes"),
    ],
)
def test_bad_requests_are_refused_by_field(
    tmp_path: Path, flow: dict[str, Any], field: str, message: str
) -> None:
    doc = document({"size": "1KB"})
    doc["flows"] = [flow]
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "startlab", "run", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert field in proc.stderr, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_resolved_scenario_writes_requests_back() -> None:
    s = startlab.Scenario.from_dict(
        document({"count": 4, "size": {"distribution": "pareto", "mean": "10KB"}})
    )
    flow = s.resolved()["flows"][0]
    assert flow["requests"] == {
        "count": 4,
        "size": {"distribution": "pareto", "mean": "10000B", "shape": 1.5},
        "think": "0s",
        "think_distribution": "constant",
    }
    assert "size" not in flow
    assert startlab.Scenario.from_dict(s.resolved()).resolved() == s.resolved()


def test_requests_reach_the_tables_on_both_stacks() -> None:
    for tcp in ({"stack": "linux"}, {"stack": "ns2", "recovery": "sack", "sack": True}):
        doc = document({"count": 3, "size": "40KB", "think": "1s"})
        doc["tcp"] = tcp
        r = startlab.run(startlab.Scenario.from_dict(doc))
        assert r.requests.height == 3, tcp
        assert r.requests["completion_ns"].null_count() == 0, tcp
        assert r.requests["restarted"].to_list() == [0, 1, 1], tcp
        assert pl.Series(r.requests["start_ns"]).is_sorted()


# -- the path cache: Linux's TCP metrics -----------------------------------------------------------


def metrics_document(tcp: dict[str, Any]) -> dict[str, Any]:
    """Two 4 MB CUBIC connections one after the other over 50 Mbit/s, 40 ms, a buffer of half a
    BDP: the first ends its slow start by a loss."""
    return {
        "name": "metrics",
        "duration": "8s",
        "topology": {
            "kind": "dumbbell",
            "access": {"rate": "1Gbps", "delay": "0s"},
            "bottleneck": {
                "rate": "50Mbps",
                "delay": "20ms",
                "queue": {"kind": "droptail", "limit": "0.5BDP"},
            },
        },
        "tcp": {"stack": "linux"} | tcp,
        "flows": [
            {
                "cc": "cubic",
                "startup": "slow-start",
                "size": "4MB",
                "count": 2,
                "stagger": "3s",
            }
        ],
    }


def test_a_saved_ssthresh_ends_the_next_connections_slow_start() -> None:
    def exits(tcp: dict[str, Any]) -> list[tuple[str, float]]:
        r = startlab.run(startlab.Scenario.from_dict(metrics_document(tcp))).flows.sort("flow")
        assert r["completion_ns"].null_count() == 0
        return list(zip(r["ss_exit_reason"], r["ss_exit_cwnd"], strict=True))

    plain = exits({})
    assert [reason for reason, _ in plain] == ["loss", "loss"]
    # The RTT alone is saved by default (tcp_no_ssthresh_metrics_save = 1): nothing changes.
    assert exits({"metrics": True}) == plain
    # With ssthresh saved, the second connection's slow start ends at the first's ssthresh
    # (tcp_init_metrics), below where its loss came, without a loss.
    (first, _), (reason, cwnd) = exits({"metrics": True, "metrics_ssthresh": True})
    assert (first, reason) == ("loss", "threshold")
    assert 10 < cwnd < plain[1][1]


def test_metrics_need_the_linux_stack() -> None:
    doc = metrics_document({"stack": "ns2", "metrics": True})
    with pytest.raises(startlab.ScenarioError, match=r"tcp\.metrics.*prr"):
        startlab.Scenario.from_dict(doc)
    doc = metrics_document({"metrics_ssthresh": True})
    with pytest.raises(startlab.ScenarioError, match=r"tcp\.metrics_ssthresh.*metrics = true"):
        startlab.Scenario.from_dict(doc)
