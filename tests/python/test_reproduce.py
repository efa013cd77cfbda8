"""The quick reproduction of every experiment: each paper's claims turn out as the report says
(supported, or not supported with an explanation), and the machinery itself works."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from startlab.reproduce import ExperimentError, default_root, find_experiments, reproduce
from startlab.reproduce.claims import evaluate

ROOT = default_root()
EXPERIMENTS = find_experiments(ROOT)


def test_every_experiment_file_is_valid_and_has_claims() -> None:
    assert EXPERIMENTS, f"no experiments under {ROOT}"
    for e in EXPERIMENTS:
        assert e.claims, f"{e.id} states no claim to check"


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("reproduce")
    results = reproduce(quick=True, out=out, progress=False)
    return {"results": {r.experiment.id: r for r in results}, "out": out}


@pytest.mark.parametrize("exp_id", [e.id for e in EXPERIMENTS])
def test_claims_turn_out_as_the_report_says(quick: dict[str, object], exp_id: str) -> None:
    result = quick["results"][exp_id]  # type: ignore[index]
    for c in result.claims:
        assert c.supported is not None, f"{exp_id}: {c.claim.text}: {c.detail}"
        assert c.as_expected, (
            f"{exp_id}: the paper says {c.claim.text!r}; expected {c.expected}, "
            f"our runs: {c.detail}"
        )


def test_the_report_is_written(quick: dict[str, object]) -> None:
    report = Path(quick["out"]) / "report"  # type: ignore[arg-type]
    assert (report / "index.html").is_file()
    assert (report / "README.md").is_file()
    text = (report / "README.md").read_text()
    for e in EXPERIMENTS:
        assert e.id in text
    assert list((report / "figures").glob("*.png"))


def test_a_second_reproduction_simulates_nothing(quick: dict[str, object]) -> None:
    results = reproduce(quick=True, out=quick["out"], progress=False, report=False)  # type: ignore[arg-type]
    assert sum(r.simulated for r in results) == 0


def test_checks_by_hand() -> None:
    data = pl.DataFrame(
        {"rtt": ["20ms", "100ms", "50ms"], "rtt_s": [0.02, 0.1, 0.05], "u": [0.9, 0.2, 0.6]}
    )
    assert evaluate("decreasing", data, {"y": "u", "along": "rtt"}, ["rtt"])[0]
    assert not evaluate("increasing", data, {"y": "u", "along": "rtt"}, ["rtt"])[0]
    two = pl.DataFrame({"alg": ["a", "b"], "u": [0.9, 0.4]})
    assert evaluate(
        "greater", two, {"y": "u", "a": {"alg": "a"}, "b": {"alg": "b"}, "factor": 2}, ["alg"]
    )[0]
    assert not evaluate(
        "greater", two, {"y": "u", "a": {"alg": "a"}, "b": {"alg": "b"}, "factor": 3}, ["alg"]
    )[0]
    assert evaluate("ratio", two, {"y": "u", "min": 2, "max": 3}, ["alg"])[0]
    assert not evaluate("between", two, {"y": "u", "max": 0.5}, ["alg"])[0]


def test_paper_numbers_are_located_by_their_axis_values() -> None:
    from startlab.reproduce.experiment import PaperRow
    from startlab.reproduce.runner import ExperimentResult, _compare

    exp = find_experiments(ROOT, ["ha2009/blast-fig7-4-seeds"])[0]
    # `loss = 0.005` under the axis's name locates the row; the values are compared there.
    exp.paper_rows = [
        PaperRow({}, {"loss": 0.005, "utilization": 0.94}),
        PaperRow({}, {"utilization": 0.5}),  # ambiguous: two rows match, so no number of ours
    ]
    data = pl.DataFrame({"loss": [0.0, 0.005], "utilization": [0.99, 0.72]})
    result = ExperimentResult(exp, False, ["loss"], data, pl.DataFrame(), [])
    rows = _compare(result).to_dicts()
    assert [(r["where"], r["paper"], r["ours"]) for r in rows] == [
        ("loss=0.005", 0.94, 0.72),
        ("", 0.5, None),
    ]


def test_unknown_selection_is_refused() -> None:
    with pytest.raises(ExperimentError, match="unknown experiment"):
        find_experiments(ROOT, ["nosuchpaper"])


def test_a_claim_can_expect_another_verdict_from_the_quick_version(tmp_path: Path) -> None:
    from startlab.reproduce.experiment import load_experiment
    from startlab.reproduce.runner import ClaimResult

    text = (ROOT / "ha2009" / "blast-linux-stack.toml").read_text(encoding="utf-8")
    exp = load_experiment(ROOT / "ha2009" / "blast-linux-stack.toml")
    bound = exp.claims[0]
    assert (bound.expected(quick=False), bound.expected(quick=True)) == (
        "supported",
        "not supported",
    )
    # The same result is as expected in one version and not in the other.
    assert ClaimResult(bound, True, "", quick=False).as_expected
    assert not ClaimResult(bound, True, "", quick=True).as_expected
    assert ClaimResult(bound, False, "", quick=True).as_expected
    # Without expect_quick both versions expect the same.
    other = exp.claims[1]
    assert other.expected(quick=True) == other.expected(quick=False) == "supported"
    # A value other than the two verdicts is refused by name.
    bad = tmp_path / "bad.toml"
    bad.write_text(
        text.replace('expect_quick = "not supported"', 'expect_quick = "maybe"'),
        encoding="utf-8",
    )
    with pytest.raises(ExperimentError, match=r"claims\[0\]\.expect_quick: 'maybe'"):
        load_experiment(bad)


def test_a_folder_without_experiments_is_refused_with_where_they_come_from(tmp_path: Path) -> None:
    (tmp_path / "paper").mkdir()
    with pytest.raises(ExperimentError, match=r"no experiments in .*--experiments-dir"):
        find_experiments(tmp_path)
