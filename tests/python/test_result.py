"""Results of a run: tables, utilization, fairness, goodput, determinism."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import startlab
from startlab import Result, Scenario, figures
from startlab.result import TABLES, jain_index
from support import EXAMPLES, dumbbell

DURATION_S = 3.0


@pytest.fixture(scope="module")
def result() -> Result:
    """Two flows, the second joining at 1 s, 10 ms sampling, two exact windows."""
    document = dumbbell(
        rate="20Mbps",
        delay="15ms",
        limit="1BDP",
        flows=2,
        duration=f"{DURATION_S}s",
        measure={
            "interval": "10ms",
            "links": ["bottleneck", "bottleneck.reverse"],
            "window": [
                {"link": "bottleneck", "from": "0s", "to": f"{DURATION_S}s"},
                {"link": "bottleneck", "from": "0.5s", "to": "1.25s"},
            ],
        },
    )
    document["flows"][1]["start"] = "1s"
    return startlab.run(document)


def test_tables_have_the_documented_columns(result: Result):
    assert result.flow_series.columns[:3] == ["time_ns", "time_s", "flow"]
    assert result.flow_series.schema["phase"] == pl.Enum(list(startlab._core.phase_names()))
    assert result.queue_series.columns[:4] == ["time_ns", "time_s", "link", "link_name"]
    assert set(result.queue_series["link_name"]) == {"left->right", "right->left"}
    assert result.flows.height == 2
    assert result.flows["kind"].to_list() == ["tcp", "tcp"]
    assert result.flows["start_s"].to_list() == [0.0, 1.0]
    assert {"bottleneck", "bottleneck.reverse"} <= set(result.links["alias"])
    assert result.windows.height == 2


def test_time_columns_agree(result: Result):
    series = result.flow_series
    assert (series["time_s"] * 1e9 - series["time_ns"].cast(pl.Float64)).abs().max() < 1e-3


def test_scenario_is_the_resolved_document(result: Result):
    assert result.scenario["name"] == "test-dumbbell"
    assert result.scenario == Scenario.from_dict(result.scenario).resolved()


def test_stats(result: Result):
    stats = result.stats
    assert stats["sim_time_ns"] == int(DURATION_S * 1e9)
    assert stats["events"] > 0
    assert stats["packets_forwarded"] > 0
    assert stats["wall_time_s"] >= 0
    assert stats["jain_index"] == pytest.approx(result.jain(), abs=1e-12)


def test_utilization_over_the_run_matches_the_links_table(result: Result):
    bottleneck = result.link("bottleneck")
    assert result.utilization("bottleneck", 0, DURATION_S) == pytest.approx(
        bottleneck["utilization"], abs=1e-9
    )
    assert result.utilization("left->right", 0, DURATION_S) == pytest.approx(
        bottleneck["utilization"], abs=1e-9
    )
    assert 0.5 < bottleneck["utilization"] <= 1.0


def test_utilization_on_sample_times_matches_the_exact_windows(result: Result):
    for window in result.windows.iter_rows(named=True):
        measured = result.utilization(window["link"], window["from_s"], window["to_s"])
        assert measured == pytest.approx(window["utilization"], abs=1e-9)


def test_utilization_is_between_0_and_1(result: Result):
    for start in (0.0, 0.25, 1.0, 2.0):
        assert 0.0 <= result.utilization("bottleneck", start, start + 0.75) <= 1.0 + 1e-12


def test_utilization_of_an_unknown_link(result: Result):
    with pytest.raises(ValueError, match=r"unknown link 'hop7'.*left->right \(bottleneck\)"):
        result.utilization("hop7", 0, 1)


def test_utilization_of_a_link_that_was_not_sampled():
    only_bottleneck = startlab.run(dumbbell(duration="0.5s"))
    with pytest.raises(ValueError, match=r"'s0->left' was not sampled.*measure\.links"):
        only_bottleneck.utilization("s0->left", 0, 0.5)


def test_utilization_outside_the_samples(result: Result):
    with pytest.raises(ValueError, match="outside the samples"):
        result.utilization("bottleneck", 0, DURATION_S + 1)
    with pytest.raises(ValueError, match="end must be after start"):
        result.utilization("bottleneck", 1, 1)


@pytest.mark.parametrize(
    ("values", "expected"),
    [([5.0, 5.0, 5.0], 1.0), ([1.0, 0.0], 0.5), ([1.0, 0.0, 0.0, 0.0], 0.25), ([3.0], 1.0)],
)
def test_jain_index(values: list[float], expected: float):
    assert jain_index(values) == pytest.approx(expected)


def test_jain_index_of_nothing_is_nan():
    assert math.isnan(jain_index([]))
    assert math.isnan(jain_index([0.0, 0.0]))


def test_jain_of_a_result(result: Result):
    goodput = result.flows["goodput_bps"].to_list()
    assert result.jain() == pytest.approx(jain_index(goodput))
    assert result.jain("delivered_bytes", kind=None) == pytest.approx(
        jain_index(result.flows["delivered_bytes"].to_list())
    )


def test_throughput_adds_up_to_the_delivered_bytes(result: Result):
    rates = result.throughput(0.1)
    assert rates.columns == ["flow", "start_s", "end_s", "goodput_bps"]
    assert rates.height == 2 * round(DURATION_S / 0.1)
    for flow in (0, 1):
        part = rates.filter(pl.col("flow") == flow)
        delivered = result.flow_series.filter(pl.col("flow") == flow)["delivered_bytes"].max()
        bits = (part["goodput_bps"] * (part["end_s"] - part["start_s"])).sum()
        assert bits == pytest.approx(8 * delivered, rel=1e-9)
    late = rates.filter((pl.col("flow") == 1) & (pl.col("end_s") <= 1.0))
    assert late["goodput_bps"].sum() == 0


def test_throughput_needs_a_positive_interval(result: Result):
    with pytest.raises(ValueError, match="positive"):
        result.throughput(0)


def test_write_and_load(result: Result, tmp_path: Path):
    written = result.write(tmp_path / "run", plots=False)
    assert {p.name for p in written} == {
        "scenario.toml",
        "summary.json",
        *(f"{t}.parquet" for t in TABLES),
    }
    loaded = Result.load(tmp_path / "run")
    for table in TABLES:
        assert getattr(loaded, table).equals(getattr(result, table)), table
    assert loaded.scenario == result.scenario
    assert loaded.stats == result.stats


def test_same_scenario_same_tables():
    document = dumbbell(rate="5Mbps", flows=2, duration="2s")
    first, second = startlab.run(document), startlab.run(document)
    for table in TABLES:
        assert getattr(first, table).equals(getattr(second, table)), table
    assert {k: v for k, v in first.stats.items() if k != "wall_time_s"} == {
        k: v for k, v in second.stats.items() if k != "wall_time_s"
    }


def test_seed_changes_random_loss():
    document = dumbbell(rate="5Mbps", duration="2s")
    document["topology"]["bottleneck"]["loss"] = 0.01
    first = startlab.run(document)
    second = startlab.run(document, overrides=["seed=2"])
    assert first.link("bottleneck")["losses"] > 0
    assert not first.flow_series.equals(second.flow_series)


def test_run_accepts_a_path_a_scenario_and_overrides():
    path = EXAMPLES / "dumbbell-newreno.toml"
    shorter = ["duration=1s", "measure.window=[]"]
    from_path = startlab.run(path, overrides=shorter)
    from_str = startlab.run(str(path), overrides=shorter)
    from_scenario = startlab.run(Scenario.load(path, overrides=shorter))
    assert from_path.flows.equals(from_str.flows)
    assert from_path.flows.equals(from_scenario.flows)


def test_run_of_an_invalid_scenario_raises_scenario_error():
    with pytest.raises(startlab.ScenarioError):
        startlab.run(dumbbell(rate="0Mbps"))


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.stem)
def test_every_example_runs(path: Path, tmp_path: Path):
    result = startlab.run(path)
    assert result.flows.height >= 1
    assert result.queue_series["time_ns"].max() == result.stats["sim_time_ns"]
    written = result.write(tmp_path)
    assert all(p.stat().st_size > 0 for p in written)


def test_plots_are_written_without_pyplot(result: Result, tmp_path: Path):
    result.write(tmp_path, plots=False)
    check = (
        "import sys; from startlab import Result, plots; "
        f"plots.write_all(Result.load({str(tmp_path)!r}), {str(tmp_path)!r}); "
        "print(sorted(m for m in sys.modules if m.startswith('matplotlib.pyplot')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.strip() == "[]"
    for name in ("cwnd.png", "queue.png", "throughput.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")


# -- the declared schema and "none" ------------------------------------------------------------


def test_every_table_has_exactly_the_columns_the_core_declares(result: Result) -> None:
    derived = {
        "time_s",
        "start_s",
        "ss_exit_s",
        "completion_s",
        "from_s",
        "to_s",
        "idle_s",
        "link_name",
    }
    for table in startlab.schema():
        frame = getattr(result, table["name"])
        declared = [c["name"] for c in table["columns"]]
        assert [c for c in frame.columns if c not in derived] == declared, table["name"]
        for column in table["columns"]:
            assert column["doc"], f"{table['name']}.{column['name']} has no description"
            if column["name"].endswith("_ns"):
                assert column["unit"] == "ns", column


def test_none_is_null_in_every_table_never_a_sentinel() -> None:
    # 100 KB on a 10 Mbps / 20 ms path over 0.05 s: neither finished nor out of slow start.
    document = dumbbell(duration="0.05s", measure={"interval": "1ms"})
    document["flows"][0]["size"] = "100KB"
    document["flows"].append({"kind": "cbr", "rate": "1Mbps", "pair": 0})
    r = startlab.run(document)
    tcp, udp = r.flows.row(0, named=True), r.flows.row(1, named=True)
    assert tcp["size_bytes"] == 100_000
    assert tcp["completion_ns"] is None
    assert tcp["completion_s"] is None
    assert tcp["ss_exit_ns"] is None
    assert tcp["ss_exit_cwnd"] is None
    assert tcp["ss_exit_reason"] is None
    assert tcp["congestion_losses"] is None  # NewReno does not classify losses
    assert udp["cc"] is None
    assert udp["size_bytes"] is None
    # ssthresh starts unlimited, the RTT is unknown until the first ACK, nothing is paced.
    first = r.flow_series.row(0, named=True)
    assert first["ssthresh"] is None
    assert first["srtt_ns"] is None
    assert r.flow_series["pacing_rate_bps"].null_count() == r.flow_series.height
    assert r.flow_series["srtt_ns"].drop_nulls().min() > 0  # type: ignore[operator]
    assert r.links.filter(pl.col("alias") == "bottleneck")["limit_bytes"].to_list() == [None]
    # No NaN or infinity anywhere.
    for name in TABLES:
        frame = getattr(r, name)
        for column, dtype in frame.schema.items():
            if dtype == pl.Float64:
                assert frame[column].drop_nulls().is_finite().all(), f"{name}.{column}"
    # The sweep metric counts the unfinished flow.
    from startlab.sweep.metrics import compute_metrics, parse_metrics

    (metric,) = parse_metrics({"unfinished": "unfinished"})
    values, errors = compute_metrics(r, [metric])
    assert errors == []
    assert values[metric.id] == 1


def test_describe_gives_links_hosts_and_rtts_without_running() -> None:
    # Access links 1 ms each way by default: RTT = 2 x (1 + 10 + 1) ms = 24 ms. BDP in packets
    # of 1040 B (1000 + 40): 10 Mbps x 24 ms = 30 000 B = 28.85 packets.
    document = dumbbell(flows=2)
    document["topology"]["pair"] = [{}, {"sender_access": {"delay": "5ms"}}]
    d = startlab.describe(document)
    assert d["hosts"] == ["s0", "s1", "r0", "r1"]
    assert [f["rtt_ns"] for f in d["flows"]] == [24_000_000, 32_000_000]
    assert d["bdp_rtt_ns"] == 24_000_000
    assert d["bdp_packets"] == pytest.approx(30_000 / 1040)
    bottleneck = [link for link in d["links"] if link["alias"] == "bottleneck"]
    assert len(bottleneck) == 1
    assert bottleneck[0]["rate_bps"] == 10e6
    assert d["sampled_links"] == [bottleneck[0]["link"]]


def test_the_tables_reference_is_generated_from_the_schema() -> None:
    from startlab.result import schema_markdown

    committed = (Path(__file__).parents[2] / "docs" / "tables.md").read_text("utf-8")
    assert committed == schema_markdown(), "docs/tables.md is stale: run startlab schema"


def test_warnings_reach_the_result_and_summary_json(tmp_path: Path) -> None:
    # A 1 Gbps bottleneck behind the default 1 Gbps access links.
    r = startlab.run(dumbbell(rate="1Gbps", duration="0.5s"))
    assert len(r.warnings) == 1
    assert "is not faster than the bottleneck" in r.warnings[0]
    r.write(tmp_path, plots=False)
    assert Result.load(tmp_path).warnings == r.warnings
    assert startlab.run(dumbbell(duration="1s")).warnings == ()


def test_a_bbr3_flow_names_its_probe_bw_phases_and_its_startup_exit() -> None:
    """BBRv3 at 100 Mbit/s, 40 ms: a buffer of 0.1 BDP ends Startup by its loss rule, one of 4
    BDP by the full-bandwidth rule; ProbeBW's phases are named, in the order Down, Cruise,
    Refill, Up, and Up's gains are 5/4 and 2 + 1/4."""
    tcp = {"stack": "linux"}
    reasons = {}
    for limit in ("0.1BDP", "4BDP"):
        document = dumbbell(rate="100Mbps", delay="20ms", limit=limit, duration="8s", tcp=tcp)
        document["flows"][0]["cc"] = "bbr3"
        result = startlab.run(document)
        reasons[limit] = result.flows["ss_exit_reason"][0]
    assert reasons == {"0.1BDP": "bbr-loss", "4BDP": "bbr-full-bw"}
    series = result.flow_series
    states = series["model_state"].drop_nulls().unique(maintain_order=True).to_list()
    assert states[:2] == ["startup", "drain"]
    probe_bw = [s for s in states if s.startswith("probe-bw")]
    assert probe_bw[:4] == ["probe-bw-down", "probe-bw-cruise", "probe-bw-refill", "probe-bw-up"]
    up = series.filter(pl.col("model_state") == "probe-bw-up")
    assert set(up["pacing_gain"].to_list()) == {1.25}
    assert set(up["cwnd_gain"].to_list()) == {2.25}


def _png_height(path: Path) -> int:
    # The IHDR chunk: width and height as big-endian 32-bit integers after the signature.
    return int.from_bytes(path.read_bytes()[20:24], "big")


def test_a_bbr_flow_records_its_model_and_its_delivery_rate(tmp_path: Path) -> None:
    """20 Mbit/s of 1040-byte packets carry 20e6 x 1000/1040 = 19.23 Mbit/s of payload: BBR's
    bandwidth estimate and the delivery rate settle there, its min RTT is the smallest RTT sample
    (in whole microseconds), and its state goes through Startup, Drain and ProbeBW."""
    tcp = {"stack": "linux", "mss": "1000B", "header": "40B"}
    document = dumbbell(rate="20Mbps", delay="10ms", limit="1BDP", duration="6s", tcp=tcp)
    document["flows"][0]["cc"] = "bbr"
    series = startlab.run(document).flow_series
    late = series.filter(pl.col("time_ns") > 3_000_000_000)
    payload = 20e6 * 1000 / 1040
    assert late["model_bw_bps"].min() == pytest.approx(payload, rel=0.01)
    assert late["delivery_rate_bps"].median() == pytest.approx(payload, rel=0.05)
    assert late["delivery_rate_bps"].max() <= payload * 1.01
    smallest = series["rtt_ns"].drop_nulls().min()
    assert late["model_min_rtt_ns"].min() == pytest.approx(smallest, abs=1000)
    states = series["model_state"].drop_nulls().unique(maintain_order=True).to_list()
    assert states[:3] == ["startup", "drain", "probe-bw"]
    assert set(late["cwnd_gain"].to_list()) == {2.0}
    # The cwnd plot gains a panel with the bandwidth estimate: a taller figure.
    figures.cwnd(startlab.run(document), tmp_path / "bbr.png")
    figures.cwnd(startlab.run(dumbbell(duration="1s")), tmp_path / "plain.png")
    assert _png_height(tmp_path / "bbr.png") > 1.5 * _png_height(tmp_path / "plain.png")
    # A controller without a model leaves the model's columns null.
    plain = startlab.run(dumbbell(duration="1s")).flow_series
    for column in ("model_bw_bps", "model_min_rtt_ns", "pacing_gain", "cwnd_gain", "model_state"):
        assert plain[column].null_count() == plain.height, column


def test_minmax_error_bars_of_equal_values_are_never_negative():
    # Three runs of 0.1 average to 0.10000000000000002: above their maximum by a rounding
    # error, which matplotlib refuses as a negative error bar.
    from startlab.figures import _error

    values = [0.1, 0.1, 0.1]
    row = {"mean": sum(values) / 3, "min": min(values), "max": max(values)}
    assert row["mean"] > row["max"]
    low, high = _error(row, "minmax", 1.0)
    assert low >= 0.0
    assert high == 0.0
