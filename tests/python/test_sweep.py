"""Parameter sweeps: plans, metrics, the run cache, the local pool, a Dask cluster, resuming,
and the ``startlab sweep`` command."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import tomli_w

import startlab
from startlab import Scenario
from startlab.sweep import (
    RunCache,
    SweepPlan,
    SweepPlanError,
    compute_metrics,
    execute,
    parse_metric,
    run_key,
    run_sweep,
    t_quantile,
)
from startlab.sweep import sweep as sweep_function
from startlab.sweep.model import Description, describe
from startlab.sweep.plan import canonical_json, expand_range
from support import EXAMPLES, ROOT, dumbbell

SWEEP_EXAMPLES = sorted((EXAMPLES / "sweeps").glob("*.toml"))


def lossy(duration: str = "1s", rate: str = "10Mbps", loss: float = 0.01, **kw: Any) -> dict:
    """A small dumbbell whose random loss makes every seed different."""
    document = dumbbell(rate=rate, duration=duration, limit="1BDP", **kw)
    document["topology"]["bottleneck"]["loss"] = loss
    return document


def slow_base() -> dict:
    """Runs of about 0.3-0.5 s each (two flows, 200 Mbit/s, 40 s simulated)."""
    document = lossy(duration="40s", rate="200Mbps", loss=1e-5, flows=2)
    document["topology"]["access"] = {"rate": "10Gbps"}
    return document


METRICS = {
    "util": "utilization(bottleneck)",
    "early": "utilization(bottleneck, from=0s, to=0.5s)",
    "goodput": "goodput(mean)",
    "goodput_min": "goodput(min)",
    "exit": "ss_exit_time(0)",
    "cwnd": "ss_exit_cwnd(0)",
    "reason": "ss_exit_reason(0)",
    "retx": "retransmissions",
    "drops": "drops",
}
METRIC_COLUMNS = list(METRICS)


def small_plan(**extra: Any) -> dict:
    """8 points of 1 s simulated: 2 bandwidths x 2 algorithms x 2 seeds."""
    plan: dict[str, Any] = {
        "name": "small",
        "base": lossy(),
        "axes": {
            "bandwidth": ["10Mbps", "20Mbps"],
            "algorithm": ["newreno", "newreno+lss"],
            "seed": {"count": 2},
        },
        "metrics": dict(METRICS),
    }
    plan.update(extra)
    return plan


def read_trace(path: Path) -> list[str]:
    """Run keys of the simulations listed in a STARTLAB_SWEEP_TRACE file."""
    if not path.exists():
        return []
    return [line.split()[0] for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every simulation (in this process or a local worker) appends its key to this file."""
    path = tmp_path / "trace.txt"
    monkeypatch.setenv("STARTLAB_SWEEP_TRACE", str(path))
    return path


# -- plans ---------------------------------------------------------------------------------------


def test_axes_make_a_cross_product_the_first_varying_slowest():
    plan = SweepPlan.from_dict(small_plan())
    points = plan.points()
    assert plan.size == len(points) == 8
    assert [p.index for p in points] == list(range(8))
    assert [tuple(p.values.values()) for p in points[:3]] == [
        ("10Mbps", "newreno", 1),
        ("10Mbps", "newreno", 2),
        ("10Mbps", "newreno+lss", 1),
    ]
    assert points[-1].values == {"bandwidth": "20Mbps", "algorithm": "newreno+lss", "seed": 2}
    assert len({p.key for p in points}) == 8


@pytest.mark.parametrize(
    ("spec", "expected", "log"),
    [
        (
            {"from": "20ms", "to": "200ms", "steps": 10},
            [f"{v}ms" for v in range(20, 201, 20)],
            False,
        ),
        (
            {"from": "10ms", "to": "1s", "steps": 3, "scale": "log"},
            ["10ms", "100ms", "1000ms"],
            True,
        ),
        ({"from": 1, "to": 1000, "steps": 4, "scale": "log"}, [1, 10, 100, 1000], True),
        ({"from": 0.0, "to": 0.01, "steps": 3}, [0.0, 0.005, 0.01], False),
        ({"from": 10, "to": 40, "step": 10}, [10, 20, 30, 40], False),
        (
            {"from": "1Mbps", "to": "2.5Mbps", "step": "500kbps"},
            ["1Mbps", "1.5Mbps", "2Mbps", "2.5Mbps"],
            False,
        ),
        ({"from": "5ms", "to": "5ms", "steps": 1}, ["5ms"], False),
        ({"count": 3}, [1, 2, 3], False),
        ({"count": 3, "from": 100, "step": 10}, [100, 110, 120], False),
        (["a", 1, {"kind": "red"}], ["a", 1, {"kind": "red"}], False),
    ],
)
def test_ranges(spec: Any, expected: list[Any], log: bool):
    assert expand_range(spec, "axes.x") == (expected, log)


def test_a_log_range_of_durations_is_geometric():
    values, log = expand_range({"from": "20ms", "to": "200ms", "steps": 5, "scale": "log"}, "x")
    assert log
    numbers = [float(v.removesuffix("ms")) for v in values]
    ratios = [b / a for a, b in itertools.pairwise(numbers)]
    assert (numbers[0], numbers[-1]) == (20, 200)
    assert all(r == pytest.approx(10**0.25, rel=1e-5) for r in ratios)


def test_seed_count_sets_the_scenario_seed():
    plan = SweepPlan.from_dict({"base": lossy(), "axes": {"seed": {"count": 4, "from": 7}}})
    assert [json.loads(p.scenario)["seed"] for p in plan.points()] == [7, 8, 9, 10]


def test_zipped_axes_vary_together():
    plan = SweepPlan.from_dict(
        {
            "base": lossy(),
            "axes": {"seed": [1, 2]},
            "zip": {
                "path": {
                    "bandwidth": ["10Mbps", "100Mbps", "1Gbps"],
                    "topology.bottleneck.queue.limit": [10, 100, 1000],
                }
            },
        }
    )
    points = plan.points()
    assert len(points) == 6
    pairs = {(p.values["bandwidth"], p.values["topology.bottleneck.queue.limit"]) for p in points}
    assert pairs == {("10Mbps", 10), ("100Mbps", 100), ("1Gbps", 1000)}
    resolved = json.loads(points[-1].scenario)["topology"]["bottleneck"]
    assert (resolved["rate"], resolved["queue"]["limit"]) == ("1Gbps", 1000)
    assert plan.axis("bandwidth").group == "path"


def test_aliases_set_the_scenario():
    base = lossy(flows=2)
    base["topology"]["access"] = {"delay": "2ms"}
    plan = SweepPlan.from_dict(
        {
            "base": base,
            "axes": {
                "algorithm": ["newreno+hystart++"],
                "rtt": ["100ms"],
                "bandwidth": ["40Mbps"],
                "buffer": ["0.5BDP"],
                "loss": [0.01],
            },
        }
    )
    resolved = json.loads(plan.points()[0].scenario)
    assert [(f["cc"], f["startup"]) for f in resolved["flows"]] == [("newreno", "hystart++")] * 2
    bottleneck = resolved["topology"]["bottleneck"]
    # RTT 100 ms = 2 x (2 ms + delay + 2 ms): the bottleneck gets 46 ms each way
    assert bottleneck["delay"] == "46ms"
    assert resolved["topology"]["bdp_rtt"] == "100ms"
    assert bottleneck["rate"] == "40Mbps"
    assert bottleneck["queue"]["limit"] == 240  # half of 40 Mbit/s x 100 ms / 1040 B
    assert bottleneck["loss"] == 0.01


def test_cc_and_startup_aliases_cross():
    plan = SweepPlan.from_dict(
        {"base": lossy(), "axes": {"cc": ["reno", "newreno"], "startup": ["lss", "search"]}}
    )
    flows = [json.loads(p.scenario)["flows"][0] for p in plan.points()]
    assert [(f["cc"], f["startup"]) for f in flows] == [
        ("reno", "lss"),
        ("reno", "search"),
        ("newreno", "lss"),
        ("newreno", "search"),
    ]


def test_base_is_a_file_relative_to_the_plan(tmp_path: Path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "base.toml").write_text(tomli_w.dumps(lossy()))
    (tmp_path / "plan.toml").write_text(
        'base = "scenarios/base.toml"\n[axes]\nseed = { count = 2 }\n'
    )
    plan = SweepPlan.load(tmp_path / "plan.toml")
    assert plan.base_file == str(tmp_path / "scenarios" / "base.toml")
    assert plan.name == "plan"
    assert len(plan.points()) == 2
    assert 'duration = "1s"' in plan.to_toml()  # plan.toml of a sweep carries the base inline


def test_overrides_apply_to_the_plan_and_the_base():
    plan = SweepPlan.from_dict(
        small_plan(),
        overrides=[
            "base.duration=3s",
            "axes.seed={count=3}",
            'axes."topology.bottleneck.queue.limit"=[5, 50]',
            "metrics.util=utilization(bottleneck, to=2s)",
        ],
    )
    assert plan.size == 2 * 2 * 3 * 2
    assert json.loads(plan.points()[0].scenario)["duration"] == "3s"
    assert plan.axis("topology.bottleneck.queue.limit").values == (5, 50)
    assert next(m for m in plan.metrics if m.name == "util").id == (
        "utilization(link=bottleneck,to=2s)"
    )


def resolve_error(plan: dict, **kw: Any) -> str:
    with pytest.raises(SweepPlanError) as info:
        SweepPlan.from_dict(plan, **kw).points()
    return str(info.value)


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (
            {"axes": {"bandwith": ["1Mbps"]}},
            r"^axes\.bandwith: unknown axis.*alias \(algorithm, bandwidth",
        ),
        ({"axes": {"seed": []}}, r"^axes\.seed: empty list"),
        ({"axes": {"seed": 5}}, r"^axes\.seed: .*\{ count = 5 \}"),
        (
            {"axes": {"rtt": {"from": "1ms", "to": "9ms", "steps": 0}}},
            r"^axes\.rtt\.steps: .*at least 1.* not 0",
        ),
        (
            {"axes": {"rtt": {"from": "0ms", "to": "9ms", "steps": 3, "scale": "log"}}},
            r"^axes\.rtt: scale = \"log\" needs from and to above zero",
        ),
        (
            {"axes": {"rtt": {"from": "1ms", "to": "9ms", "steps": 3, "scale": "cubic"}}},
            r"^axes\.rtt\.scale: \"cubic\": allowed: \"linear\", \"log\"",
        ),
        (
            {"axes": {"rtt": {"from": "1ms", "to": "9Mbps", "steps": 3}}},
            r"^axes\.rtt: from \(\"1ms\"\) and to \(\"9Mbps\"\) must be numbers of the same kind",
        ),
        (
            {"axes": {"rtt": {"form": "1ms"}}},
            r"^axes\.rtt\.form: unknown range field; allowed: from, to",
        ),
        ({"axes": {"rtt": ["fast"]}}, r"^axes\.rtt: \"fast\" is not a duration"),
        (
            {"axes": {"algorithm": ["newreno+warp"]}},
            r'^axes\.algorithm: unknown slow start "warp" in "newreno\+warp"; available: .*"lss"',
        ),
        (
            {"axes": {"algorithm": ["turbo"]}},
            r'^axes\.algorithm: unknown congestion control "turbo"',
        ),
        (
            {"axes": {"bandwidth": ["1Mbps"], "topology.bottleneck.rate": ["2Mbps"]}},
            r"both set topology\.bottleneck\.rate",
        ),
        (
            {"axes": {"algorithm": ["reno"], "flows.0.cc": ["reno"]}},
            r"algorithm and \"flows\.0\.cc\" both set",
        ),
        (
            {"zip": {"p": {"bandwidth": ["1Mbps", "2Mbps"], "rtt": ["10ms"]}}},
            r"^zip\.p: zipped axes need the same number of values \(bandwidth has 2, rtt has 1\)",
        ),
        (
            {"axes": {"topology.bottleneck.rate": ["-5Mbps"]}},
            r"^point 0 of 1 \(\"topology\.bottleneck\.rate\"=\"-5Mbps\"\): "
            r"topology\.bottleneck\.rate: invalid rate",
        ),
        ({"axes": {"flows.3.cc": ["reno"]}}, r"^point 0 of 1 .*flows\[3\]: no such entry"),
        (
            {"axes": {"rtt": ["1ms"]}},
            r"^point 0 of 1 \(rtt=\"1ms\"\): "
            r"rtt: 1ms is shorter than the round trip of the access links \(4ms\)",
        ),
        ({"colour": "red"}, r"^colour: unknown plan field; allowed: name, description, base"),
        (
            {"metrics": {"u": "utilisation"}},
            r'^metrics\.u: unknown metric "utilisation"; available: utilization, goodput',
        ),
        (
            {"metrics": {"u": "utilization(bottleneck, form=1s)"}},
            r"^metrics\.u\.form: utilization has no such argument; allowed: link, from, to",
        ),
        (
            {"metrics": {"g": "goodput(best)"}},
            r"^metrics\.g: goodput takes a flow number or a statistic",
        ),
        (
            {"metrics": {"g": {"metric": "goodput", "stat": "mode"}}},
            r"^metrics\.g\.stat: 'mode': allowed: mean, median",
        ),
        ({"metrics": {"seed": "jain"}}, r"^metrics\.seed: 'seed' is already a column"),
        (
            {"metrics": {"u": "utilization(hop3)"}},
            r"^metrics\.u\.link: no link 'hop3' in point 0 .*links: left->right \(bottleneck\)",
        ),
        (
            {"metrics": {"u": "utilization(s0->left, from=0s, to=1s)"}},
            r"^metrics\.u\.link: 's0->left' is not sampled .*measure\.links",
        ),
        (
            {"metrics": {"u": "utilization(bottleneck, to=5s)"}},
            r"^metrics\.u\.to: 5s is after the end of the run \(1s\) in point 0",
        ),
        (
            {"metrics": {"x": "ss_exit_time(flow=2)"}},
            r"^metrics\.x\.flow: no flow 2 in point 0 .*which has 1 flow \(numbered from 0\)",
        ),
        (
            {"plots": [{"x": "rate", "y": "jain"}]},
            r"^plots\[0\]\.x: \"rate\" is not an axis of this plan \(axes: seed\)",
        ),
        (
            {"plots": [{"x": "seed", "y": "ss_exit_reason"}]},
            r"^plots\[0\]\.y: 'ss_exit_reason' is text",
        ),
        (
            {"plots": [{"x": "seed", "y": "jain", "kind": "bar"}]},
            r"^plots\[0\]\.kind: unknown plot field",
        ),
        ({"base": "missing.toml"}, r"^base: .*missing\.toml: no such file"),
    ],
)
def test_plan_errors_name_the_field(change: dict, pattern: str):
    plan = {"base": lossy(), "axes": {"seed": [1]}}
    plan.update(change)
    message = resolve_error(plan)
    assert re.search(pattern, message), message
    assert "\n" not in message


def test_a_plan_needs_a_base():
    assert re.match(r"^base: missing", resolve_error({"axes": {"seed": [1]}}))


def test_bad_overrides_name_the_override():
    message = resolve_error(small_plan(), overrides=["duration=5s"])
    assert message.startswith("override 'duration=5s': 'duration' is not a plan field")
    assert "base.duration=5s" in message


def test_equal_scenarios_share_a_key():
    plan = SweepPlan.from_dict(
        {"base": lossy(), "axes": {"topology.bottleneck.delay": ["0.01s", "10ms", "11ms"]}}
    )
    a, b, c = plan.points()
    assert a.key == b.key != c.key  # "0.01s" and "10ms" resolve to the same scenario
    assert a.scenario == b.scenario


def test_run_key_is_the_hash_of_the_canonical_resolved_scenario():
    resolved = Scenario.from_dict(lossy()).resolved()
    text = canonical_json(resolved)
    assert text == canonical_json(json.loads(text))
    assert Scenario.from_dict(resolved).resolved() == resolved  # resolving is idempotent
    assert re.fullmatch(r"[0-9a-f]{32}", run_key(text))
    assert run_key(text) == run_key(canonical_json(Scenario.from_dict(lossy()).resolved()))
    assert run_key(text) != run_key(canonical_json({**resolved, "seed": 2}))


# -- metrics -------------------------------------------------------------------------------------


def test_metric_forms_agree():
    assert (
        parse_metric("a", "goodput(min)").id
        == parse_metric("b", {"metric": "goodput", "stat": "min"}).id
    )
    assert parse_metric("a", "utilization(bottleneck, from=0s, to=2000ms)").id == (
        "utilization(from=0s,link=bottleneck,to=2s)"
    )
    assert parse_metric("a", "goodput").id == "goodput(stat=mean)"
    assert parse_metric("a", "ss_exit_time").id == "ss_exit_time(flow=0)"
    assert parse_metric("a", "retransmissions(flow=1)").dtype == "int"
    assert parse_metric("a", "retransmissions(mean)").dtype == "float"


def test_metrics_agree_with_the_result():
    document = lossy(duration="3s", flows=2, rate="20Mbps")
    document["flows"][1]["start"] = "0.5s"
    result = startlab.run(document)
    names = {
        **METRICS,
        "early": "utilization(bottleneck, from=0.5s, to=1.25s)",
        "jain": "jain",
        "late_goodput": "goodput(flow=1, from=1s, to=3s)",
        "delivered": "delivered",
        "max_queue": "max_queue",
        "events": "events",
    }
    metrics = [parse_metric(n, s) for n, s in names.items()]
    values, errors = compute_metrics(result, metrics)
    assert errors == []
    got = {m.name: values[m.id] for m in metrics}
    flows = result.flows
    assert got["util"] == result.link("bottleneck")["utilization"]
    assert got["early"] == pytest.approx(result.utilization("bottleneck", 0.5, 1.25), abs=1e-12)
    assert got["goodput"] == pytest.approx(flows["goodput_bps"].mean())
    assert got["goodput_min"] == pytest.approx(flows["goodput_bps"].min())
    assert got["jain"] == pytest.approx(result.jain())
    assert got["exit"] == flows["ss_exit_s"][0]
    assert got["cwnd"] == flows["ss_exit_cwnd"][0]
    assert got["reason"] == flows["ss_exit_reason"][0] != ""
    assert got["retx"] == flows["retransmissions"].sum()
    assert got["drops"] == result.link("bottleneck")["drops"]
    assert got["delivered"] == flows["delivered_bytes"].sum()
    assert got["max_queue"] == result.link("bottleneck")["max_queue_packets"]
    assert got["events"] == result.stats["events"]
    series = result.flow_series.filter(pl.col("flow") == 1)
    at = dict(zip(series["time_s"].round(6), series["delivered_bytes"], strict=True))
    assert got["late_goodput"] == pytest.approx((at[3.0] - at[1.0]) * 8 / 2.0)


def test_sojourn_metrics_read_the_links_percentiles():
    document = dumbbell(rate="20Mbps", duration="3s", flows=2)
    document["topology"]["bottleneck"]["queue"] = {"kind": "codel"}
    result = startlab.run(document)
    link = result.link("bottleneck")
    metrics = [parse_metric(k, f"{k}_sojourn") for k in ("mean", "p50", "p99", "max")]
    values, errors = compute_metrics(result, metrics)
    assert errors == []
    got = {m.name: values[m.id] for m in metrics}
    for name in got:
        assert got[name] == link[f"{name}_sojourn_ns"] / 1e9
    # Two flows through CoDel keep a standing queue: the percentiles are ordered and positive.
    assert 0 < got["p50"] <= got["p99"] <= got["max"]
    assert link["p50_sojourn_ns"] <= link["p90_sojourn_ns"] <= link["p99_sojourn_ns"]


def test_time_to_utilization_is_the_first_busy_window():
    # A CBR source at the bottleneck's rate from 1 s, 1 ms of access delay: the bottleneck is
    # busy from 1.001 s (plus one access transmission). Sampled every 10 ms, the 100 ms window
    # ending at 1.09 s holds 89 ms of it and the one ending at 1.10 s 99 ms: 0.9 is first
    # reached at 1.10 s; 0.5 (50 ms) at 1.06 s; a wholly busy window, [1.01, 1.11], at 1.11 s.
    document = dumbbell(rate="10Mbps", duration="2s", measure={"interval": "10ms"})
    document["topology"]["access"] = {"rate": "1Gbps", "delay": "1ms"}
    document["flows"] = [
        {"kind": "cbr", "pair": 0, "rate": "10Mbps", "packet_size": "1000B", "start": "1s"}
    ]
    result = startlab.run(document)
    metrics = [
        parse_metric("t90", "time_to_utilization"),
        parse_metric("t50", "time_to_utilization(bottleneck, fraction=0.5, window=100ms)"),
        parse_metric("t100", "time_to_utilization(fraction=1)"),
    ]
    values, errors = compute_metrics(result, metrics)
    assert errors == []
    got = {m.name: values[m.id] for m in metrics}
    assert got["t90"] == pytest.approx(1.10)
    assert got["t50"] == pytest.approx(1.06)
    assert got["t100"] == pytest.approx(1.11)
    assert metrics[0].id == "time_to_utilization(fraction=0.9,link=bottleneck,window=100ms)"


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ("time_to_utilization(fraction=1.5)", r"fraction: expected a fraction in \(0, 1\]"),
        ("time_to_utilization(window=0s)", r"window: expected a time above 0"),
    ],
)
def test_time_to_utilization_refuses_bad_arguments(spec: str, pattern: str):
    with pytest.raises(SweepPlanError, match=pattern):
        parse_metric("t", spec)


def test_exit_bw_and_share_agree_with_the_tables():
    document = lossy(duration="4s", flows=2, rate="20Mbps", loss=0.0)
    for f in document["flows"]:
        f["cc"] = "bbr"
    document["flows"][1]["start"] = "1s"
    document["tcp"] = {"stack": "linux"}
    result = startlab.run(document)
    metrics = [
        parse_metric("bw", "exit_bw(flow=0)"),
        parse_metric("bw1", "exit_bw(flow=1)"),
        parse_metric("share", "share"),
        parse_metric("share0", "share(flow=0)"),
        parse_metric("late", "share(flow=1, from=2s, to=4s)"),
    ]
    values, errors = compute_metrics(result, metrics)
    assert errors == []
    got = {m.name: values[m.id] for m in metrics}
    flows = result.flows
    exit_ns = flows["start_ns"][0] + round(flows["ss_exit_s"][0] * 1e9)
    series = result.flow_series.filter((pl.col("flow") == 0) & (pl.col("time_ns") >= exit_ns))
    assert got["bw"] == series["model_bw_bps"][0] > 0
    assert got["bw1"] is not None
    assert got["bw1"] > 0
    delivered = flows["delivered_bytes"].to_list()
    assert got["share0"] == pytest.approx(delivered[0] / sum(delivered))
    assert got["share"] == pytest.approx(min(delivered) / sum(delivered))
    assert 0 < got["late"] < 1
    # A controller without a model has no bandwidth estimate.
    plain = startlab.run(lossy(duration="1s"))
    values, errors = compute_metrics(plain, metrics[:1])
    assert errors == []
    assert values[metrics[0].id] is None


def test_label_selects_the_copies_of_a_count_entry():
    document = lossy(duration="2s", rate="20Mbps")
    document["flows"] = [
        {"cc": "newreno", "label": "bulk", "count": 3, "stagger": "0.2s"},
        {"cc": "newreno", "label": "bulky"},
    ]
    result = startlab.run(document)
    assert result.flows["label"].to_list() == ["bulk#0", "bulk#1", "bulk#2", "bulky"]
    metrics = [
        parse_metric("n", "retransmissions(sum, label=bulk)"),
        parse_metric("g", "goodput(sum, label=bulk)"),
        parse_metric("j", "jain(label=bulk)"),
    ]
    values, errors = compute_metrics(result, metrics)
    assert errors == []
    copies = result.flows.head(3)
    assert values[metrics[0].id] == copies["retransmissions"].sum()
    assert values[metrics[1].id] == pytest.approx(copies["goodput_bps"].sum())
    g = copies["goodput_bps"].to_numpy()
    assert values[metrics[2].id] == pytest.approx(g.sum() ** 2 / (3 * (g**2).sum()))


def test_t_quantiles():
    assert t_quantile(1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile(9) == pytest.approx(2.262, abs=1e-3)
    assert t_quantile(40) == pytest.approx(2.0211, abs=1e-3)
    assert t_quantile(10_000) == pytest.approx(1.9602, abs=1e-3)
    assert math.isnan(t_quantile(0))


# -- running: the local pool ---------------------------------------------------------------------


def alone(plan: SweepPlan) -> pl.DataFrame:
    """The metrics of every point computed the long way: startlab.run on the point's scenario
    (as written, not resolved) in this process, and the Result's own methods."""
    from startlab.sweep.plan import apply_values

    rows = []
    for point in plan.points():
        result = startlab.run(apply_values(plan.base, point.values))
        flows = result.flows
        rows.append(
            {
                "util": result.link("bottleneck")["utilization"],
                "early": result.utilization("bottleneck", 0.0, 0.5),
                "goodput": flows["goodput_bps"].mean(),
                "goodput_min": flows["goodput_bps"].min(),
                "exit": flows["ss_exit_s"][0],
                "cwnd": flows["ss_exit_cwnd"][0],
                "reason": flows["ss_exit_reason"][0] or None,
                "retx": flows["retransmissions"].sum(),
                "drops": result.link("bottleneck")["drops"],
            }
        )
    return pl.DataFrame(rows)


def assert_same_metrics(table: pl.DataFrame, expected: pl.DataFrame, exact: bool = True) -> None:
    assert table.height == expected.height
    for column in expected.columns:
        got, want = table[column].to_list(), expected[column].to_list()
        if exact or table[column].dtype == pl.String:
            assert got == want, column
        else:
            assert got == pytest.approx(want, rel=1e-12, abs=1e-12), column


def test_the_local_pool_gives_the_results_of_runs_alone(tmp_path: Path, trace: Path):
    plan = SweepPlan.from_dict(small_plan())
    outcome = run_sweep(plan, tmp_path / "out", jobs=2, progress=False)
    table = outcome.table
    assert outcome.execution.simulated == 8
    assert outcome.execution.where == "2 local processes"
    assert table["status"].to_list() == ["ok"] * 8
    assert table["point"].to_list() == list(range(8))
    assert table.columns[:8] == [
        "point",
        "key",
        "status",
        "error",
        "bandwidth",
        "bandwidth_bps",
        "algorithm",
        "seed",
    ]
    assert table["bandwidth_bps"].to_list() == [10e6] * 4 + [20e6] * 4
    assert table["util"].n_unique() == 8  # every seed and parameter gives another run
    # the workers' pids are not ours: the runs crossed processes
    pids = {int(line.split()[2]) for line in trace.read_text().splitlines()}
    assert os.getpid() not in pids
    assert_same_metrics(table.select(METRIC_COLUMNS), alone(plan), exact=False)
    assert_same_metrics(table.select(METRIC_COLUMNS), alone(plan).select(METRIC_COLUMNS))


def test_a_rerun_simulates_nothing_and_a_new_metric_only_what_lacks_it(tmp_path: Path, trace: Path):
    plan = small_plan(axes={"seed": {"count": 3}})
    first = startlab.sweep(plan, tmp_path / "out", jobs=0, progress=False)
    assert len(read_trace(trace)) == 3
    again = run_sweep(plan, tmp_path / "out", jobs=0, progress=False)
    assert (again.execution.simulated, again.execution.cached) == (0, 3)
    assert len(read_trace(trace)) == 3
    assert again.table.equals(first)
    # renaming a metric or adding a plot computes nothing
    renamed = small_plan(axes={"seed": {"count": 3}}, plots=[{"x": "seed", "y": "u"}])
    renamed["metrics"] = {"u": METRICS["util"]}
    assert run_sweep(renamed, tmp_path / "out", jobs=0, progress=False).execution.simulated == 0
    # a new metric: the runs are simulated again, and keep the metrics they had
    more = small_plan(axes={"seed": {"count": 3}})
    more["metrics"]["q"] = "mean_queue"
    outcome = run_sweep(more, tmp_path / "out", jobs=0, progress=False)
    assert outcome.execution.simulated == 3
    assert outcome.table.select(METRIC_COLUMNS).equals(first.select(METRIC_COLUMNS))
    record = json.loads((tmp_path / "out" / "runs" / f"{first['key'][0]}.json").read_text())
    assert {"mean_queue(link=bottleneck)", "goodput(stat=min)"} <= set(record["metrics"])
    assert record["scenario"]["seed"] == 1


def slow_plan() -> SweepPlan:
    return SweepPlan.from_dict(
        {"name": "slow", "base": slow_base(), "axes": {"seed": {"count": 8}}}
    )


@pytest.fixture(scope="module")
def slow_reference() -> pl.DataFrame:
    """The results of :func:`slow_plan`, run in this process."""
    return run_sweep(slow_plan(), None, jobs=0, progress=False).table


def local_workers() -> list[int]:
    """The pids of this process's sweep workers (they run ``startlab.sweep.worker``)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rpartition(")")[2].split()[1])
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and any(b"startlab.sweep.worker" in arg for arg in command):
            pids.append(int(stat.parent.name))
    return pids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the workers in /proc")
def test_a_killed_local_worker_loses_nothing(tmp_path: Path, slow_reference: pl.DataFrame):
    plan = slow_plan()
    killed: list[int] = []

    def kill_the_other_worker(record: dict[str, Any]) -> None:
        if killed:
            return
        others = [pid for pid in local_workers() if pid != record["worker"]["pid"]]
        assert len(others) == 1, others
        os.kill(others[0], signal.SIGKILL)  # busy with a run of its own
        killed.append(others[0])

    outcome = run_sweep(
        plan, tmp_path / "out", jobs=2, progress=False, on_record=kill_the_other_worker
    )
    assert killed
    assert local_workers() == []  # all stopped
    table = outcome.table
    assert table["status"].to_list() == ["ok"] * 8
    assert table["key"].n_unique() == 8 == outcome.execution.simulated
    assert len(list((tmp_path / "out" / "runs").glob("*.json"))) == 8
    assert table.drop("wall_time_s").equals(slow_reference.drop("wall_time_s"))


def failing_plan() -> dict:
    """Points whose metric fails at run time: flow 3 of random arrivals that mostly don't come."""
    base = lossy()
    base["topology"]["pairs"] = 2
    base["flows"].append(
        {
            "kind": "tcp-arrivals",
            "pair": 1,
            "mean_interarrival": "0.4s",
            "size": {"distribution": "fixed", "value": "10KB"},
        }
    )
    return {
        "name": "failing",
        "base": base,
        "axes": {"seed": {"count": 4}},
        "metrics": {"util": "utilization", "third": "goodput(flow=3)"},
    }


def test_failed_runs_are_recorded_and_not_retried_unless_asked(tmp_path: Path, trace: Path):
    outcome = run_sweep(failing_plan(), tmp_path / "out", jobs=0, progress=False)
    table = outcome.table
    failed = table.filter(pl.col("status") == "error")
    assert 0 < failed.height < 4, table  # some seeds bring 4 flows, some don't
    assert failed["error"].str.starts_with("metric third: no flow 3").all()
    assert failed["util"].null_count() == 0  # the other metrics are kept
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["failed"] == failed.height
    assert [f["point"] for f in summary["failures"]] == failed["point"].to_list()
    for key in failed["key"]:
        assert Scenario.load(tmp_path / "out" / "failed" / f"{key}.toml").resolved()["seed"] >= 1
    assert "failed:" in outcome.text()
    again = run_sweep(failing_plan(), tmp_path / "out", jobs=0, progress=False)
    assert again.execution.simulated == 0
    retried = run_sweep(failing_plan(), tmp_path / "out", jobs=0, progress=False, retry_failed=True)
    assert retried.execution.simulated == failed.height
    assert len(read_trace(trace)) == 4 + failed.height


def test_sweeps_can_share_a_run_cache(tmp_path: Path, trace: Path):
    cache = tmp_path / "runs"
    first = small_plan(axes={"seed": [1, 2]})
    run_sweep(first, tmp_path / "a", jobs=0, progress=False, cache=cache)
    assert not (tmp_path / "a" / "runs").exists()
    second = small_plan(axes={"seed": [2, 3]})  # another plan, one point in common
    outcome = run_sweep(second, tmp_path / "b", jobs=0, progress=False, cache=cache)
    assert (outcome.execution.cached, outcome.execution.simulated) == (1, 1)
    assert len(read_trace(trace)) == 3
    assert len(list(cache.glob("*.json"))) == 3


def test_startlab_sweep_is_the_function():
    assert startlab.sweep is sweep_function
    assert startlab.run_sweep is run_sweep
    table = startlab.sweep({"base": lossy(), "axes": {"seed": [1, 2]}}, jobs=0, progress=False)
    assert table.height == 2
    assert {"utilization", "goodput_mean", "ss_exit_reason", "drops"} <= set(table.columns)


def test_execute_keeps_whole_results_when_asked(tmp_path: Path, trace: Path):
    plan = SweepPlan.from_dict({"base": lossy(), "axes": {"seed": [1]}})
    points = plan.points()
    first, second = plan.metrics[:1], plan.metrics[1:2]
    execute(points, tmp_path, metrics=first, jobs=0, progress=False)  # a record, no series
    done = execute(points, tmp_path, metrics=second, jobs=0, progress=False, series=True)
    assert done.simulated == 1  # for the series
    cache = RunCache(tmp_path)
    key = points[0].key
    result = cache.get_series(key)
    assert result is not None
    assert result.flows.height == 1
    record = cache.get(key)
    assert record is not None
    assert {m.id for m in first + second} <= set(record["metrics"])  # the older metric kept
    again = execute(points, tmp_path, metrics=first + second, jobs=0, progress=False, series=True)
    assert (again.cached, again.simulated) == (1, 0)
    assert len(read_trace(trace)) == 2


def test_describe_gives_the_network_without_a_run():
    network = describe(Scenario.from_dict(lossy()).resolved())
    bottleneck = network.find_links("bottleneck")
    assert len(bottleneck) == 1
    assert bottleneck[0].rate_bps == 10e6
    assert [f.kind for f in network.flows] == ["tcp"]
    assert network.flows[0].rtt_ns > 0
    assert {"s0", "r0"} <= set(network.hosts)


def test_describe_reads_the_cores_description():
    # Access links 1 ms each way: RTT = 2 x (1 + 10 + 1) ms; 10 Mbps x 24 ms / 1040 B packets.
    network = describe(Scenario.from_dict(dumbbell(rate="10Mbps", delay="10ms")).resolved())
    assert isinstance(network, Description)
    (bottleneck,) = network.find_links("bottleneck")
    assert (bottleneck.name, bottleneck.delay_ns) == ("left->right", 10_000_000)
    assert network.flows[0].rtt_ns == 24_000_000
    assert network.bdp_rtt_ns == 24_000_000
    assert network.bdp_packets == pytest.approx(30_000 / 1040)
    assert network.sampled_links == {bottleneck.link}


def test_execute_runs_equal_scenarios_once(tmp_path: Path, trace: Path):
    plan = SweepPlan.from_dict({"base": lossy(), "axes": {"seed": [1, 1, 2]}})
    points = plan.points()
    done = execute(points, tmp_path / "cache", metrics=plan.metrics, jobs=0, progress=False)
    assert (done.runs, done.simulated) == (2, 2)
    assert sorted(read_trace(trace)) == sorted({p.key for p in points})


# -- running: a Dask cluster ---------------------------------------------------------------------


class DaskCluster:
    """``dask scheduler`` and ``dask worker`` processes on loopback, each in its own process
    group, on ports the system picks."""

    def __init__(self, directory: Path, workers: int) -> None:
        self.directory = directory
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        dask = Path(sys.executable).with_name("dask")
        self.dask = str(dask) if dask.exists() else "dask"
        scheduler_file = directory / "scheduler.json"
        self._start(
            "scheduler",
            ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(scheduler_file)],
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                self.address = json.loads(scheduler_file.read_text())["address"]
                break
            except (OSError, ValueError, KeyError):
                assert time.monotonic() < deadline, (directory / "scheduler.log").read_text()
                assert self.processes["scheduler"].poll() is None, "the scheduler exited"
                time.sleep(0.05)
        for i in range(workers):
            self.start_worker(f"w{i}")
        self.wait_for_workers(workers)

    def _start(self, name: str, args: list[str]) -> None:
        with (self.directory / f"{name}.log").open("wb") as log:
            self.processes[name] = subprocess.Popen(
                [self.dask, *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def start_worker(self, name: str) -> None:
        self._start(
            name,
            ["worker", self.address, "--name", name, "--nthreads", "1", "--no-nanny",
             "--host", "127.0.0.1", "--no-dashboard", "--memory-limit", "0"],
        )  # fmt: skip

    def wait_for_workers(self, count: int) -> None:
        from distributed import Client

        with Client(self.address, timeout="30s", set_as_default=False) as client:
            client.wait_for_workers(count, timeout=60)

    def kill(self, pid: int) -> None:
        """Kill the process group of the worker process ``pid``: a machine that dies."""
        os.killpg(pid, signal.SIGKILL)

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    pytest.importorskip("distributed")
    cluster = DaskCluster(tmp_path_factory.mktemp("dask"), workers=2)
    try:
        yield cluster
    finally:
        cluster.close()


def test_a_dask_cluster_gives_the_local_results(dask_cluster: DaskCluster, tmp_path: Path):
    plan = SweepPlan.from_dict(small_plan())
    outcome = run_sweep(plan, tmp_path / "out", cluster=dask_cluster.address, progress=False)
    assert outcome.execution.where == f"Dask cluster {dask_cluster.address}"
    assert outcome.execution.simulated == 8
    local = run_sweep(plan, None, jobs=0, progress=False).table
    assert outcome.table.drop("wall_time_s").equals(local.drop("wall_time_s"))
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "runs").glob("*.json")]
    assert {r["worker"]["pid"] for r in records} <= {
        p.pid for n, p in dask_cluster.processes.items() if n != "scheduler"
    }


def test_a_dask_worker_killed_midway_loses_nothing(
    dask_cluster: DaskCluster, tmp_path: Path, slow_reference: pl.DataFrame
):
    plan = slow_plan()
    workers = {p.pid for n, p in dask_cluster.processes.items() if n != "scheduler"}
    assert len(workers) == 2
    seen: list[dict[str, Any]] = []
    killed: list[tuple[int, float]] = []

    def kill_the_other_worker(record: dict[str, Any]) -> None:
        seen.append(record)
        if not killed:
            (other,) = workers - {record["worker"]["pid"]}
            dask_cluster.kill(other)  # it is running a run of its own
            killed.append((other, time.time()))

    outcome = run_sweep(
        plan, tmp_path / "out", cluster=dask_cluster.address, progress=False,
        on_record=kill_the_other_worker,
    )  # fmt: skip
    ((victim, when),) = killed
    assert len(seen) == 8
    before = [r for r in seen if r["worker"]["finished"] < when]
    assert len(before) < 4  # midway
    # the killed worker finished nothing after its death: its run in progress was redone
    assert all(r["worker"]["finished"] < when for r in seen if r["worker"]["pid"] == victim)
    assert {r["worker"]["pid"] for r in seen if r["worker"]["finished"] > when} == workers - {
        victim
    }
    table = outcome.table
    assert table["status"].to_list() == ["ok"] * 8
    assert table["key"].n_unique() == 8
    assert len(list((tmp_path / "out" / "runs").glob("*.json"))) == 8
    assert table.drop("wall_time_s").equals(slow_reference.drop("wall_time_s"))


def test_a_lost_scheduler_stops_the_sweep_and_it_resumes(tmp_path: Path, trace: Path):
    from startlab.sweep import ClusterError

    pytest.importorskip("distributed")
    (tmp_path / "dask").mkdir()
    cluster = DaskCluster(tmp_path / "dask", workers=1)
    plan = SweepPlan.from_dict(
        {"name": "lost", "base": slow_base(), "axes": {"seed": {"count": 6}}}
    )
    out = tmp_path / "out"
    scheduler = cluster.processes["scheduler"]

    def kill_the_scheduler(record: dict[str, Any]) -> None:
        if scheduler.poll() is None:  # once: more records may come in the same batch
            cluster.kill(scheduler.pid)
            scheduler.wait()

    try:
        with pytest.raises(ClusterError, match="lost the Dask scheduler"):
            run_sweep(
                plan, out, cluster=cluster.address, progress=False, on_record=kill_the_scheduler
            )
    finally:
        cluster.close()
    done = {p.stem for p in (out / "runs").glob("*.json")}
    assert 1 <= len(done) < 6
    assert all(p.suffix == ".json" for p in (out / "runs").iterdir())
    trace.unlink(missing_ok=True)
    resumed = run_sweep(plan, out, jobs=0, progress=False)  # on another executor, even
    assert resumed.execution.simulated == 6 - len(done)
    assert not set(read_trace(trace)) & done
    assert resumed.table["status"].to_list() == ["ok"] * 6


# -- resuming and the command line ---------------------------------------------------------------


def write_plan(path: Path, plan: dict) -> Path:
    path.write_text(tomli_w.dumps(plan))
    return path


def sweep_command(*args: Any, trace: Path | None = None, **kw: Any) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.pop("STARTLAB_SWEEP_TRACE", None)
    if trace is not None:
        env["STARTLAB_SWEEP_TRACE"] = str(trace)
    return subprocess.Popen(
        [sys.executable, "-m", "startlab", "sweep", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
        **kw,
    )


def test_an_interrupted_sweep_resumes_without_recomputing(tmp_path: Path):
    plan = write_plan(
        tmp_path / "plan.toml",
        {"name": "resume", "base": slow_base(), "axes": {"seed": {"count": 10}}},
    )
    out, runs = tmp_path / "out", tmp_path / "out" / "runs"
    first_trace, second_trace = tmp_path / "first.txt", tmp_path / "second.txt"
    # Ctrl-C in a terminal signals the whole process group: the workers as well
    process = sweep_command(
        plan, "-o", out, "--jobs", "2", trace=first_trace, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while len(list(runs.glob("*.json"))) < 3:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert re.search(r"^startlab: error: interrupted: \d+ of 10 runs are done", stderr, re.M)
    assert not (out / "results.parquet").exists()
    # only whole run files are left, and no worker
    assert all(p.suffix == ".json" for p in runs.iterdir())
    done = {p.stem: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert 3 <= len(done) < 10
    for key in done:
        assert json.loads((runs / f"{key}.json").read_text())["status"] == "ok"

    process = sweep_command(plan, "-o", out, "--jobs", "2", trace=second_trace)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    recomputed = read_trace(second_trace)
    assert len(recomputed) == 10 - len(done)
    assert not set(recomputed) & set(done)
    assert {p.stem: p.stat().st_mtime_ns for p in runs.glob("*.json") if p.stem in done} == done
    assert f"{len(done)} from the cache, {10 - len(done)} simulated" in stdout
    table = pl.read_parquet(out / "results.parquet")
    assert table["status"].to_list() == ["ok"] * 10
    assert sorted(table["key"]) == sorted(p.stem for p in runs.glob("*.json"))


def test_cli_sweep_writes_the_dataset_plots_and_summary(tmp_path: Path, cli):
    plan = small_plan(
        plots=[
            {"x": "bandwidth", "y": "util", "series": "algorithm"},
            {"name": "exit", "x": "algorithm", "y": "exit"},
        ]
    )
    path = write_plan(tmp_path / "plan.toml", plan)
    out = tmp_path / "out"
    trace = tmp_path / "trace.txt"
    process = sweep_command(path, "-o", out, "--jobs", "2", trace=trace)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert (
        "8 points, 8 runs: 0 from the cache, 8 simulated on 2 local processes, 0 failed" in stdout
    )
    assert {p.name for p in out.iterdir()} >= {
        "plan.toml",
        "results.parquet",
        "summary.json",
        "plots",
        "runs",
    }
    table = pl.read_parquet(out / "results.parquet")
    assert table.height == 8
    assert set(METRIC_COLUMNS) <= set(table.columns)
    assert len(list((out / "runs").glob("*.json"))) == 8
    pngs = sorted(p.name for p in (out / "plots").iterdir())
    assert pngs == [
        "exit--bandwidth=10Mbps.png",
        "exit--bandwidth=20Mbps.png",
        "util-vs-bandwidth-by-algorithm.png",
    ]
    for png in pngs:
        assert (out / "plots" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["points"], summary["simulated"], summary["failed"]) == (8, 8, 0)
    assert summary["metrics"]["util"] == "utilization(link=bottleneck)"
    assert summary["startlab"]["core"] == startlab.__version__
    # the plan.toml of the directory is a complete plan: it resumes the same sweep
    process = sweep_command(out / "plan.toml", "-o", out, trace=trace)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert "8 from the cache, 0 simulated" in stdout
    assert len(read_trace(trace)) == 8
    assert pl.read_parquet(out / "results.parquet").equals(table)


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"axes": {"bandwith": ["1Mbps"]}}, r"axes\.bandwith: unknown axis"),
        (
            {"axes": {"topology.bottleneck.rate": ["1Mbps", "fast"]}},
            r"point 1 of 2 .*topology\.bottleneck\.rate: invalid rate \"fast\"",
        ),
        ({"metrics": {"u": "utilisation"}}, r"metrics\.u: unknown metric"),
        ({"plots": [{"x": "rtt", "y": "util"}]}, r"plots\[0\]\.x: \"rtt\" is not an axis"),
    ],
)
def test_cli_bad_plan_exits_2_with_one_line_and_no_output(
    tmp_path: Path, cli, change: dict, pattern: str
):
    plan = small_plan(axes={"seed": [1]})
    plan.update(change)
    out = tmp_path / "out"
    proc = cli("sweep", write_plan(tmp_path / "plan.toml", plan), "-o", out)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("startlab: error: ")
    assert re.search(pattern, lines[0]), lines[0]
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["--jobs", "-1"], r"--jobs: must be 0 or more"),
        (["--jobs", "2", "--cluster", "tcp://127.0.0.1:1"], r"--jobs and --cluster: choose one"),
        (["--set", "duration=1s"], r"'duration' is not a plan field.*base\.duration"),
        ([], r"-o/--output DIR is required"),
    ],
)
def test_cli_usage_errors(tmp_path: Path, cli, args: list[str], pattern: str):
    proc = cli("sweep", write_plan(tmp_path / "plan.toml", small_plan()), *args)
    assert proc.returncode == 2
    assert re.search(pattern, proc.stderr), proc.stderr


def test_cli_refuses_a_directory_that_is_not_a_sweep(tmp_path: Path, cli):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    proc = cli("sweep", write_plan(tmp_path / "plan.toml", small_plan()), "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert "is not a sweep directory" in proc.stderr
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"notes.txt"}


def test_cli_failed_runs_exit_3_and_are_listed(tmp_path: Path, cli):
    out = tmp_path / "out"
    proc = cli(
        "sweep", write_plan(tmp_path / "plan.toml", failing_plan()), "-o", out, "--jobs", "0"
    )
    assert proc.returncode == 3, proc.stderr
    assert re.search(r"^  point \d \(seed=\d\): metric third: no flow 3", proc.stdout, re.M)
    assert list((out / "failed").glob("*.toml"))


def test_cli_dry_run_runs_nothing(tmp_path: Path, cli):
    path = write_plan(tmp_path / "plan.toml", small_plan())
    proc = cli("sweep", path, "--dry-run", "--set", "axes.seed={count=3}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok: sweep 'small', 12 points, 12 distinct runs")
    assert "axis seed: 1, 2, 3" in proc.stdout


@pytest.mark.parametrize("path", SWEEP_EXAMPLES, ids=lambda p: p.stem)
def test_every_example_plan_resolves(path: Path):
    plan = SweepPlan.load(path)
    assert len(plan.points()) == plan.size > 1
    assert plan.plots


def test_the_startup_example_compares_the_four_startups():
    plan = SweepPlan.load(EXAMPLES / "sweeps" / "startup-comparison.toml")
    assert plan.axis("algorithm").values == (
        "newreno+slow-start", "newreno+lss", "newreno+hystart++", "newreno+search",
    )  # fmt: skip
    assert len(plan.axis("seed").values) == 3
    assert plan.base["topology"]["bottleneck"]["loss"] > 0
    (utilization,) = [p for p in plan.plots if p.name == "utilization-vs-rtt"]
    assert (utilization.x, utilization.y, utilization.facet) == ("rtt", "utilization", "algorithm")
