"""The validation table's targets (startlab.validation), on hand-made results."""

from __future__ import annotations

import polars as pl

from startlab import validation


def row(world: str, name: str, **kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "status": "ok",
        "world": world,
        "name": name,
        "ss_exit_time": 1.0,
        "ss_exit_cwnd": 100.0,
        "ss_exit_reason": "loss",
        "utilization": 0.90,
        "retransmissions": 100,
        "timeouts": 0,
    }
    base.update(kw)
    return base


def test_targets_are_met_at_their_limits_and_missed_beyond() -> None:
    # Path 1 sits exactly on every limit: time 1.1 vs 1.0 (10 %), cwnd 90 vs 100 (10 %),
    # utilization 92 vs 90 % (2 points), retransmissions 125 vs 100 (25 %).
    # Path 2 is just beyond each: 1.11 s, 89, 92.1 %, 126, and one timeout more.
    results = pl.DataFrame(
        [
            row(
                "simulator",
                "1",
                ss_exit_time=1.1,
                ss_exit_cwnd=90.0,
                utilization=0.92,
                retransmissions=125,
            ),
            row("kernel", "1"),
            row(
                "simulator",
                "2",
                ss_exit_time=1.11,
                ss_exit_cwnd=89.0,
                utilization=0.921,
                retransmissions=126,
                timeouts=1,
            ),
            row("kernel", "2"),
        ]
    )
    text, met = validation.table(results)
    assert met == {
        "exit_time": 1,
        "exit_cwnd": 1,
        "exit_reason": 2,
        "utilization": 1,
        "retransmissions": 1,
        "timeouts": 1,
        "all": 1,
        "paths": 2,
    }
    lines = text.splitlines()
    assert "✗" not in lines[2]
    assert lines[3].count("✗") == 5


def test_a_slow_start_that_never_ends_agrees_only_with_one_that_never_ends() -> None:
    results = pl.DataFrame(
        [
            row("simulator", "1", ss_exit_time=None, ss_exit_cwnd=None, ss_exit_reason=None),
            row("kernel", "1", ss_exit_time=None, ss_exit_cwnd=None, ss_exit_reason=None),
            row("simulator", "2", ss_exit_time=None, ss_exit_cwnd=None, ss_exit_reason=None),
            row("kernel", "2"),
        ]
    )
    _, met = validation.table(results)
    assert (met["exit_time"], met["exit_cwnd"], met["exit_reason"]) == (1, 1, 1)


def test_missing_results_are_a_clear_error(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert validation.main([str(tmp_path)]) == 2
    assert "results.parquet: no such file" in capsys.readouterr().err


def test_repeated_runs_are_compared_by_their_medians_with_the_kernels_range_shown() -> None:
    # Three kernel runs of path 1: retransmissions 100, 130 and 400 (median 130, within 25 % of
    # the simulator's 110 although one run is far off); exit reasons train, train, delay.
    results = pl.DataFrame(
        [
            row("simulator", "1", retransmissions=110, ss_exit_reason="hystart-train"),
            row("kernel", "1", retransmissions=100, ss_exit_reason="hystart-train"),
            row(
                "kernel",
                "1",
                retransmissions=130,
                ss_exit_reason="hystart-train",
                ss_exit_cwnd=104.0,
            ),
            row(
                "kernel",
                "1",
                retransmissions=400,
                ss_exit_reason="hystart-delay",
                ss_exit_cwnd=300.0,
            ),
        ]
    )
    text, met = validation.table(results)
    assert met["all"] == 1
    line = text.splitlines()[2]
    assert "110 / 130 (100–400)" in line
    assert "hystart-train / hystart-train (2/3)" in line
    assert "100 / 104 (100–300)" in line
    # Runs that agree show no range.
    assert "1.000 / 1.000 |" in line
    # The median decides: two of three runs far off miss the target.
    results = pl.DataFrame(
        [
            row("simulator", "1"),
            row("kernel", "1", retransmissions=100),
            row("kernel", "1", retransmissions=200),
            row("kernel", "1", retransmissions=300),
        ]
    )
    _, met = validation.table(results)
    assert met["retransmissions"] == 0


def test_the_summary_of_runs_takes_the_median_and_the_most_frequent_reason() -> None:
    s = validation.summarise(
        [
            row("kernel", "1", ss_exit_time=None, ss_exit_reason=None, retransmissions=1),
            row("kernel", "1", ss_exit_time=2.0, ss_exit_reason="loss", retransmissions=2),
            row("kernel", "1", ss_exit_time=4.0, ss_exit_reason="loss", retransmissions=4),
            row("kernel", "1", ss_exit_time=None, ss_exit_reason="timeout", retransmissions=9),
        ]
    )
    # The exit time of the runs that have one; an even count's median is the mean of the two.
    assert s.values["ss_exit_time"] == 3.0
    assert s.values["retransmissions"] == 3.0
    assert s.values["ss_exit_reason"] == "loss"
    # A tie goes to the reason that sorts first.
    t = validation.summarise([row("kernel", "1", ss_exit_reason=r) for r in ("timeout", "loss")])
    assert t.values["ss_exit_reason"] == "loss"


def test_bbr_targets_compare_bandwidth_queues_and_shares() -> None:
    # Path 1 sits on every BBR limit: bandwidth 110 vs 100 Mbit/s (10 %), mean queue 115 vs 100
    # and largest 85 vs 100 (15 %), smallest share 45 vs 50 % (5 points). Path 2 is beyond each.
    def bbr(world: str, name: str, **kw: object) -> dict[str, object]:
        base = row(world, name, ss_exit_reason="bbr-full-bw")
        base.update(exit_bw=100e6, mean_queue=100.0, max_queue=100, share=0.5)
        base.update(kw)
        return base

    results = pl.DataFrame(
        [
            bbr("simulator", "1", exit_bw=110e6, mean_queue=115.0, max_queue=85, share=0.45),
            bbr("kernel", "1"),
            bbr("simulator", "2", exit_bw=111e6, mean_queue=116.0, max_queue=84, share=0.449),
            bbr("kernel", "2"),
        ]
    )
    text, met = validation.table(results, columns=validation.COLUMNS_BBR)
    assert {k: met[k] for k in ("exit_bw", "mean_queue", "max_queue", "share")} == {
        "exit_bw": 1,
        "mean_queue": 1,
        "max_queue": 1,
        "share": 1,
    }
    assert met["all"] == 1
    assert met["paths"] == 2
    assert "110.0 / 100.0" in text
    assert "111.0 / 100.0 ✗" in text
    assert "45.0 / 50.0" in text
    assert "44.9 / 50.0 ✗" in text
    # A kernel that reports no estimate (an eBPF port's): the target does not apply there,
    # the cell says so, and the path can still meet every target that does.
    results = pl.DataFrame([bbr("simulator", "1"), bbr("kernel", "1", exit_bw=None)])
    text, met = validation.table(results, columns=validation.COLUMNS_BBR)
    assert (met["exit_bw"], met["exit_bw/paths"], met["all"]) == (0, 0, 1)
    assert "| n/a |" in text


def test_the_ns3_aqm_scenario_comparisons_logic_without_ns3():
    # bench/ns3/aqm_scenarios.py's selftest: its plan files parse, and its tolerances and table
    # decide as its docstring says, on numbers made up for it (ns-3 is not needed).
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, str(root / "bench" / "ns3" / "aqm_scenarios.py"), "selftest"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("0 failure(s)")
