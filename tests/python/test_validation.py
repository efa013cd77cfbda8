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
