"""Links that change (docs/variable-links.md): schedules, traces, bursty loss and reordering,
end to end through the scenario, the tables and the command line."""

from __future__ import annotations

import filecmp
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import startlab
from startlab import paths
from support import ROOT

PATHS = ROOT / "examples" / "paths"


def _cbr_over(bottleneck: dict[str, Any], *, rate: str, duration: str = "2s") -> dict[str, Any]:
    """A CBR source of ``rate`` in 1504-byte packets (a Mahimahi opportunity each) over
    ``bottleneck``, whose queue is deep enough never to drop."""
    return {
        "name": "cbr",
        "duration": duration,
        "topology": {
            "kind": "dumbbell",
            "access": {"rate": "10Gbps", "delay": "0s"},
            "bottleneck": {"delay": "1ms", "queue": {"kind": "droptail", "limit": 100000}}
            | bottleneck,
        },
        "flows": [{"kind": "cbr", "rate": rate, "packet_size": "1504B"}],
        "measure": {"interval": "100ms", "links": ["bottleneck"]},
    }


def _bottleneck(result: startlab.Result) -> dict[str, Any]:
    return result.links.filter(pl.col("alias") == "bottleneck").row(0, named=True)


def _series(result: startlab.Result) -> pl.DataFrame:
    link = _bottleneck(result)["link"]
    return result.queue_series.filter(pl.col("link") == link).sort("time_ns")


def test_the_bundled_traces_are_what_the_generator_writes(tmp_path: Path) -> None:
    written = paths.write_all(tmp_path)
    assert [p.name for p in written] == [t.name for t in paths.TRACES]
    for p in written:
        assert filecmp.cmp(p, PATHS / "traces" / p.name, shallow=False), p.name


def test_opportunities_carry_the_rate_they_are_made_from() -> None:
    # 12.032 Mbit/s is one 1504-byte opportunity per millisecond, stamped at each
    # millisecond's end; 3.008 Mbit/s is one every 4 ms.
    assert list(paths.opportunities(lambda k: 12.032e6, 5)) == [1, 2, 3, 4, 5]
    assert list(paths.opportunities(lambda k: 3.008e6, 12)) == [4, 8, 12]
    # The last line is the period even when the credit has not reached a whole opportunity.
    assert list(paths.opportunities(lambda k: 3.008e6, 10)) == [4, 8, 10]


def test_a_trace_link_sends_one_packet_per_opportunity(tmp_path: Path) -> None:
    # Opportunities at 1, 1, 1, 2, 2, 2 and 5 ms, repeating every 5 ms: 1400 per second,
    # 16.8448 Mbit/s on average. A source at 40 Mbit/s (a packet every 0.3 ms) has a packet
    # waiting for every one of them, so each carries exactly one 1504-byte packet.
    trace = tmp_path / "bursty.trace"
    trace.write_text("1\n1\n1\n2\n2\n2\n5\n")
    doc = _cbr_over({"rate": {"trace": str(trace)}, "reverse_rate": "1Gbps"}, rate="40Mbps")
    result = startlab.run(doc)
    link = _bottleneck(result)
    # 7 opportunities per 5 ms, 1400 per second; 2 s carry 2800 (the first at 1 ms).
    assert link["forwarded_packets"] == 2800
    assert link["mean_rate_bps"] == pytest.approx(1400 * 1504 * 8)
    assert link["utilization"] == pytest.approx(1.0)
    series = _series(result)
    sent = series["sent_bytes"].diff().drop_nulls().to_list()
    assert sent == [140 * 1504] * 20
    offered = series["offered_bytes"].diff().drop_nulls().to_list()
    assert offered == [140.0 * 1504] * 20


def test_a_rate_schedule_is_served_as_written() -> None:
    # 8 Mbit/s for 0.5 s, then 16 Mbit/s, repeating every second: 12 Mbit/s on average. A
    # source at 20 Mbit/s saturates it; the queue_series shows the rate in force.
    doc = _cbr_over(
        {"rate": {"steps": [["0s", "8Mbps"], ["0.5s", "16Mbps"]], "period": "1s"}},
        rate="20Mbps",
    )
    result = startlab.run(doc)
    link = _bottleneck(result)
    assert link["mean_rate_bps"] == pytest.approx(12e6)
    assert link["rate_bps"] == 8e6
    series = _series(result)
    rates = dict(zip(series["time_ns"], series["rate_bps"], strict=True))
    assert rates[200_000_000] == 8e6
    assert rates[700_000_000] == 16e6
    assert rates[1_200_000_000] == 8e6
    # Bytes sent per 100 ms: 8 Mbit/s is 100,000 B, 16 Mbit/s 200,000 B (to within a packet).
    sent = series["sent_bytes"].diff().drop_nulls().to_numpy()
    expected = [100_000 if (i % 10) < 5 else 200_000 for i in range(20)]
    assert all(abs(s - e) <= 1504 for s, e in zip(sent, expected, strict=True)), sent
    assert result.utilization("bottleneck", 0.2, 1.8) == pytest.approx(1.0, abs=0.01)


def test_traces_and_csv_files_are_found_next_to_the_scenario(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link.trace").write_text("1\n")
    (tmp_path / "sub" / "delay.csv").write_text("# time,delay\n0s,5ms\n1s,20ms\n")
    scenario = tmp_path / "sub" / "s.toml"
    scenario.write_text(
        'duration = "2s"\n[topology]\nkind = "dumbbell"\n'
        'bottleneck = { rate = { trace = "link.trace" }, delay = { csv = "delay.csv" }, '
        'reverse_rate = "100Mbps" }\n[[flows]]\ncc = "cubic"\n'
    )
    out = tmp_path / "out"
    proc = cli("run", scenario, "-o", out, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    written = (out / "scenario.toml").read_text()
    assert str((tmp_path / "sub" / "link.trace").resolve()) in written
    assert str((tmp_path / "sub" / "delay.csv").resolve()) in written


BAD = [
    ('rate = { trace = "bad.trace" }', "topology.bottleneck.rate.trace", "line 3"),
    ('rate = { csv = "bad.csv" }', "topology.bottleneck.rate.csv", "line 2"),
    (
        'rate = "10Mbps", reverse_delay = { csv = "long.csv" }',
        "topology.bottleneck.reverse_delay.csv",
        "long.csv line 3: value: invalid delay",
    ),
    ('rate = { trace = "missing.trace" }', "topology.bottleneck.rate.trace", "cannot read"),
    ('rate = { steps = [["1s", "10Mbps"]] }', "topology.bottleneck.rate.steps[0]", '"0s"'),
    (
        'rate = { steps = [["0s", "10Mbps"], ["1s", "-1Mbps"]] }',
        "topology.bottleneck.rate.steps[1]",
        "-1Mbps",
    ),
    ('rate = { steps = [["0s", "0bps"]], period = "1s" }', "rate.steps", "never send"),
    ("rate = { stepz = [] }", "topology.bottleneck.rate.stepz", "unknown field"),
    (
        'rate = "10Mbps", reverse_delay = { walk = { start = "1ms", min = "2ms", max = "3ms", '
        'step = "1ms", every = "1s" } }',
        "topology.bottleneck.reverse_delay.walk",
        "min <= start <= max",
    ),
    (
        'rate = "10Mbps", loss = { gilbert = { p = 1.5, r = 0.1 } }',
        "topology.bottleneck.loss.gilbert.p",
        "1.5",
    ),
    (
        'rate = "10Mbps", reorder = { probability = 0.1, extra = "0s" }',
        "topology.bottleneck.reorder.extra",
        "more than 0s",
    ),
    ('rate = "10Mbps", reverse_jitter = "2min"', "topology.bottleneck.reverse_jitter", "60s"),
    (
        'rate = { steps = [["0s", "0bps"], ["1s", "10Mbps"]] }',
        "topology.bottleneck.rate",
        "no size",
    ),
]


@pytest.mark.parametrize(("link", "field", "says"), BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_a_bad_schedule_or_trace_is_refused_naming_file_line_and_field(
    link: str, field: str, says: str, tmp_path: Path, cli: Any
) -> None:
    (tmp_path / "bad.trace").write_text("1\n2\nx\n")
    (tmp_path / "bad.csv").write_text("0s,10Mbps\n1s\n")
    (tmp_path / "long.csv").write_text("0s,10ms\n1s,60min\n2s,61min\n")
    scenario = tmp_path / "bad.toml"
    scenario.write_text(
        f'duration = "1s"\n[topology]\nkind = "dumbbell"\n'
        f'bottleneck = {{ delay = "10ms", {link} }}\n[[flows]]\ncc = "cubic"\n'
    )
    out = tmp_path / "out"
    proc = cli("run", scenario, "-o", out)
    assert proc.returncode == 2, proc.stderr
    assert field in proc.stderr, proc.stderr
    assert says in proc.stderr, proc.stderr
    assert not out.exists()


def test_variable_paths_are_deterministic_and_seeded() -> None:
    base = startlab.Scenario.load(PATHS / "cellular.toml", overrides=["duration=5s"]).to_dict()
    base["topology"]["bottleneck"] |= {
        "loss": {"gilbert": {"p": 0.001, "r": 0.3}},
        "reorder": {"probability": 0.01, "extra": "3ms"},
        "jitter": "1ms",
    }
    a = startlab.run(base)
    b = startlab.run(base)
    assert a.flows.equals(b.flows)
    assert a.queue_series.equals(b.queue_series)
    other = base | {"seed": 2}
    c = startlab.run(other)
    assert not c.queue_series.equals(a.queue_series)
    assert _bottleneck(a)["losses"] > 0


def test_reordering_alone_loses_nothing_and_is_recovered_from() -> None:
    result = startlab.run(
        PATHS / "reordering.toml", overrides=["duration=5s", "measure.interval=100ms"]
    )
    link = _bottleneck(result)
    assert link["losses"] == 0
    flow = result.flows.row(0, named=True)
    assert flow["goodput_bps"] > 0.7 * 100e6


@pytest.mark.parametrize("cc", ["bbr", "bbr3"])
def test_a_probe_rtt_forced_during_a_long_startup_does_not_end_it(cc: str) -> None:
    # On the GEO path (600 ms), BBR's Startup outlasts the 10 s min_rtt window: PROBE_RTT
    # comes at 10.6 s, in Startup, and Startup resumes after it (bbr_reset_mode). Its end is
    # when the pipe is full, after that, as the kernel world reads Linux's bbr. startlab's
    # eBPF port ends it at the same moment.
    def exit_of(cc: str) -> tuple[startlab.Result, dict[str, Any]]:
        result = startlab.run(
            PATHS / "geo.toml",
            overrides=[f"flows.0.cc={cc}", "duration=25s", "topology.bottleneck.rate=75Mbps"],
        )
        return result, result.flows.row(0, named=True)

    result, flow = exit_of(cc)
    states = result.flow_series.filter(pl.col("model_state") == "probe-rtt")
    assert states.height > 0
    assert float(states["time_s"].min()) < flow["ss_exit_s"]
    assert flow["ss_exit_reason"] in ("bbr-full-bw", "bbr-loss")
    if cc == "bbr":
        _, port = exit_of("bpf:bbr")
        assert (port["ss_exit_s"], port["ss_exit_reason"]) == (
            flow["ss_exit_s"],
            flow["ss_exit_reason"],
        )
