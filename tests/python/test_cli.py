"""The ``startlab`` command line, run as a subprocess (``python -m startlab``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import tomli_w

from startlab import Scenario
from startlab.cli import _write_atomically
from startlab.result import TABLES, Result
from support import EXAMPLES, dumbbell, field_pattern

DEMO = EXAMPLES / "dumbbell-newreno.toml"
PLOTS = ("cwnd.png", "queue.png", "throughput.png")
RUN_FILES = {"scenario.toml", "summary.json", *(f"{t}.parquet" for t in TABLES), *PLOTS}


def write_scenario(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(tomli_w.dumps(document))
    return path


def assert_one_error_line(proc, *patterns: str) -> str:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("startlab: error: ")
    for pattern in patterns:
        assert re.search(pattern, line), f"{pattern!r} not in {line!r}"
    return line


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The demo scenario, run once for the tests that read its output."""
    import sys
    from subprocess import run as subprocess_run

    out = tmp_path_factory.mktemp("demo") / "run"
    proc = subprocess_run(
        [
            sys.executable,
            "-m",
            "startlab",
            "run",
            str(DEMO),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return out, proc.stdout


def test_run_writes_every_output(demo_run: tuple[Path, str]):
    out, _ = demo_run
    assert {p.name for p in out.iterdir()} == RUN_FILES
    for name in PLOTS:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["name"] == "dumbbell-newreno"
    assert summary["stats"]["sim_time_ns"] == 20_000_000_000
    assert [f["label"] for f in summary["flows"]] == ["bulk"]
    assert pl.read_parquet(out / "flows.parquet").height == 1


def test_run_leaves_no_temporary_directory(demo_run: tuple[Path, str]):
    out, _ = demo_run
    assert [p.name for p in out.parent.iterdir()] == ["run"]


def test_run_prints_a_flow_table_and_the_stats(demo_run: tuple[Path, str]):
    _, stdout = demo_run
    lines = stdout.splitlines()
    header = lines[0].split()
    for word in ("flow", "label", "cc", "goodput", "retx", "timeouts", "reason"):
        assert word in header
    row = lines[1].split()
    assert row[:3] == ["0", "bulk", "newreno"]
    assert re.search(r"[\d,]+ events, [\d,]+ packets forwarded, 20 s simulated", stdout)
    assert "Jain index 1.0000" in stdout


def test_resolved_scenario_reproduces_the_run(demo_run: tuple[Path, str], cli, tmp_path: Path):
    out, _ = demo_run
    proc = cli("run", out / "scenario.toml", "-o", tmp_path / "again", "--no-plots")
    assert proc.returncode == 0, proc.stderr
    for table in TABLES:
        before = pl.read_parquet(out / f"{table}.parquet")
        after = pl.read_parquet(tmp_path / "again" / f"{table}.parquet")
        assert before.equals(after), table
    assert not any((tmp_path / "again").glob("*.png"))


def test_result_load_reads_a_run_directory(demo_run: tuple[Path, str]):
    out, _ = demo_run
    result = Result.load(out)
    assert result.name == "dumbbell-newreno"
    assert result.flows["label"].to_list() == ["bulk"]
    assert result.flow_series.schema["phase"] == pl.Enum(list(result.phase_names))
    assert Scenario.from_dict(result.scenario).name == "dumbbell-newreno"


def test_plot_redraws_the_plots(demo_run: tuple[Path, str], cli):
    out, _ = demo_run
    for name in PLOTS:
        (out / name).unlink()
    proc = cli("plot", out)
    assert proc.returncode == 0, proc.stderr
    assert sorted(Path(line).name for line in proc.stdout.split()) == sorted(PLOTS)
    assert {p.name for p in out.iterdir()} == RUN_FILES


def test_plot_of_a_directory_that_is_not_a_run(cli, tmp_path: Path):
    assert_one_error_line(cli("plot", tmp_path), "not a run directory", "flow_series.parquet")


def test_validate_prints_ok_and_a_summary(cli):
    proc = cli("validate", EXAMPLES / "dumbbell-two-flows.toml", "--set", "seed=3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "ok"
    assert len(lines) == 2
    assert "dumbbell-two-flows" in lines[1]
    assert "seed 3" in lines[1]
    assert "rtt-150ms" in lines[1]


def test_algorithms_lists_each_algorithm(cli):
    proc = cli("algorithms")
    assert proc.returncode == 0, proc.stderr
    import startlab

    for algorithm in startlab.algorithms():
        assert re.search(
            rf"^{re.escape(algorithm['name'])} \[{algorithm['role']}\]$", proc.stdout, re.M
        )
        assert algorithm["summary"] in proc.stdout
    assert "newreno [cc]" in proc.stdout
    # The sender's mechanisms are there too, with the parameters' units and ranges.
    assert "initial-spreading [pacing]" in proc.stdout
    assert "Initial Spreading" in proc.stdout
    assert "initial-window [initial-window]" in proc.stdout
    assert re.search(r"beta +0\.5 +0 < beta < 1 ", proc.stdout)


def test_no_command_is_a_usage_error(cli):
    assert_one_error_line(cli(), "no command")


def test_missing_output_option_is_a_usage_error(cli):
    assert_one_error_line(cli("run", DEMO), "-o")


def _broken(change) -> dict[str, Any]:
    document = dumbbell()
    change(document)
    return document


BAD_SCENARIOS = {
    "unknown-field": (
        _broken(lambda d: d["flows"][0].update(colour="blue")),
        [field_pattern("flows", 0, "colour")],
    ),
    "negative-rate": (
        _broken(lambda d: d["topology"]["bottleneck"].update(rate="-5Mbps")),
        [field_pattern("topology", "bottleneck", "rate"), "-5Mbps"],
    ),
    "negative-buffer": (
        _broken(lambda d: d["topology"]["bottleneck"]["queue"].update(limit="-1BDP")),
        [field_pattern("topology", "bottleneck", "queue", "limit"), "-1BDP"],
    ),
    "unknown-algorithm": (
        _broken(lambda d: d["flows"][0].update(cc="warp-speed")),
        [field_pattern("flows", 0, "cc"), "warp-speed"],
    ),
    "unknown-startup": (
        _broken(lambda d: d["flows"][0].update(startup="teleport")),
        [field_pattern("flows", 0, "startup"), "teleport"],
    ),
    "aqm-field-of-another-kind": (
        _broken(
            lambda d: d["topology"]["bottleneck"].update(queue={"kind": "codel", "tupdate": "15ms"})
        ),
        [field_pattern("topology", "bottleneck", "queue", "tupdate"), "codel"],
    ),
    "aqm-limit-in-bytes": (
        _broken(
            lambda d: d["topology"]["bottleneck"].update(queue={"kind": "pie", "limit": "150KB"})
        ),
        [field_pattern("topology", "bottleneck", "queue", "limit"), "packets"],
    ),
    "fq-codel-quantum-too-small": (
        _broken(
            lambda d: d["topology"]["bottleneck"].update(queue={"kind": "fq_codel", "quantum": 100})
        ),
        [field_pattern("topology", "bottleneck", "queue", "quantum"), "100", "256"],
    ),
    "pie-alpha-out-of-range": (
        _broken(lambda d: d["topology"]["bottleneck"].update(queue={"kind": "pie", "alpha": 40})),
        [field_pattern("topology", "bottleneck", "queue", "alpha"), "40", "32"],
    ),
}


@pytest.mark.parametrize("case", BAD_SCENARIOS, ids=str)
def test_bad_scenario_is_one_error_line_and_no_output(case: str, cli, tmp_path: Path):
    document, patterns = BAD_SCENARIOS[case]
    scenario = write_scenario(tmp_path / "bad.toml", document)
    out = tmp_path / "results" / "run"
    assert_one_error_line(cli("run", scenario, "-o", out), *patterns)
    assert [p.name for p in tmp_path.iterdir()] == ["bad.toml"]
    assert_one_error_line(cli("validate", scenario), *patterns)


def test_malformed_toml(cli, tmp_path: Path):
    scenario = tmp_path / "bad.toml"
    scenario.write_text('duration = "2s"\n\n[topology\n')
    line = assert_one_error_line(cli("run", scenario, "-o", tmp_path / "out"), "bad.toml", "line 3")
    assert "malformed TOML" in line
    assert [p.name for p in tmp_path.iterdir()] == ["bad.toml"]


def test_missing_scenario_file(cli, tmp_path: Path):
    assert_one_error_line(cli("run", tmp_path / "nope.toml", "-o", tmp_path / "out"), "nope.toml")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("assignment", "patterns"),
    [
        ("flows.5.cc=reno", [r"flows\[5\]", "1 entry"]),
        ("duration.x=1", [r"duration\.x"]),
        ("rate", ["rate", "PATH=VALUE"]),
        (
            "topology.bottleneck.rate=fast",
            [field_pattern("topology", "bottleneck", "rate"), "fast"],
        ),
    ],
)
def test_bad_set_option(assignment: str, patterns: list[str], cli, tmp_path: Path):
    scenario = write_scenario(tmp_path / "ok.toml", dumbbell())
    assert_one_error_line(
        cli("run", scenario, "-o", tmp_path / "out", "--set", assignment), *patterns
    )
    assert [p.name for p in tmp_path.iterdir()] == ["ok.toml"]


def test_existing_output_directory_needs_force(cli, tmp_path: Path):
    scenario = write_scenario(tmp_path / "ok.toml", dumbbell(duration="0.5s"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    assert_one_error_line(cli("run", scenario, "-o", out), "out", "--force")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.toml", "out"]

    proc = cli("run", scenario, "-o", out, "--force", "--no-plots")
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == RUN_FILES - set(PLOTS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.toml", "out"]


def test_force_keeps_the_old_directory_when_the_run_fails(cli, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    bad = write_scenario(tmp_path / "bad.toml", _broken(lambda d: d.update(duration="-1s")))
    assert_one_error_line(cli("run", bad, "-o", out, "--force"), "duration")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_an_empty_output_directory_is_used(cli, tmp_path: Path):
    scenario = write_scenario(tmp_path / "ok.toml", dumbbell(duration="0.5s"))
    (tmp_path / "out").mkdir()
    proc = cli("run", scenario, "-o", tmp_path / "out", "--no-plots")
    assert proc.returncode == 0, proc.stderr


class Interrupted(KeyboardInterrupt):
    pass


class InterruptedWriter:
    """Stands for a Result whose writing is interrupted (Ctrl-C) half-way."""

    def write(self, directory: Path, *, plots: bool = True) -> list[Path]:
        (Path(directory) / "scenario.toml").write_text("partial")
        raise Interrupted


@pytest.mark.parametrize("existing", [False, True])
def test_interrupted_write_leaves_nothing_behind(existing: bool, tmp_path: Path):
    out = tmp_path / "out"
    if existing:
        out.mkdir()
        (out / "keep.txt").write_text("precious")
    with pytest.raises(Interrupted):
        _write_atomically(InterruptedWriter(), out, force=True, plots=True)  # type: ignore[arg-type]
    assert [p.name for p in tmp_path.iterdir()] == (["out"] if existing else [])
    if existing:
        assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_warnings_go_to_stderr_and_strict_makes_them_errors(cli, tmp_path: Path):
    # A 1 Gbps bottleneck behind the default 1 Gbps access links.
    path = write_scenario(tmp_path / "fast.toml", dumbbell(rate="1Gbps", duration="1s"))
    proc = cli("validate", path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok\n")
    (line,) = proc.stderr.splitlines()
    assert line.startswith("startlab: warning: flows[0]: the access link s0->left")
    out = tmp_path / "run"
    proc = cli("run", path, "-o", out, "--no-plots")
    assert proc.returncode == 0
    assert "is not faster than the bottleneck" in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["warnings"] == [line.removeprefix("startlab: warning: ")]
    strict = tmp_path / "strict"
    assert_one_error_line(cli("run", path, "-o", strict, "--strict"), r"--strict", "access link")
    assert not strict.exists()
    assert_one_error_line(cli("validate", path, "--strict"), r"--strict")


def test_ecn_on_a_controller_that_ignores_it_is_a_warning_strict_refuses(cli, tmp_path: Path):
    document = dumbbell(rate="20Mbps", duration="2s", tcp={"ecn": True})
    document["flows"][0]["cc"] = "bbr"
    document["topology"]["bottleneck"]["queue"] = {"kind": "codel", "ecn": True}
    path = write_scenario(tmp_path / "bbr-ecn.toml", document)
    proc = cli("validate", path)
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith('startlab: warning: flows[0].tcp.ecn: cc = "bbr" does not reduce')
    assert_one_error_line(cli("validate", path, "--strict"), r"--strict", "ECN echo")
    # A controller that reduces for an echo is not warned about.
    document["flows"][0]["cc"] = "cubic"
    proc = cli("validate", write_scenario(tmp_path / "cubic-ecn.toml", document))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_schema_prints_the_tables_reference(cli):
    proc = cli("schema")
    assert proc.returncode == 0, proc.stderr
    committed = (Path(__file__).parents[2] / "docs" / "tables.md").read_text("utf-8")
    assert proc.stdout == committed
