"""Loading scenario files, command-line overrides and validation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from startlab import Scenario, ScenarioError
from startlab.scenario import parse_override
from support import EXAMPLES, dumbbell, field_pattern

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.toml"))


def test_there_are_examples():
    assert len(EXAMPLE_FILES) >= 5


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_every_example_is_valid(path: Path):
    scenario = Scenario.load(path)
    assert scenario.source == str(path)
    assert scenario.name == path.stem
    assert scenario.resolved()["flows"]


def test_demo_buffer_of_one_bdp_is_500_packets():
    resolved = Scenario.load(EXAMPLES / "dumbbell-newreno.toml").resolved()
    # 40 Mbit/s x 100 ms = 500 kB = 500 packets of 960 + 40 bytes
    assert resolved["topology"]["bottleneck"]["queue"]["limit"] in (500, "500p")


def test_from_toml_and_from_dict_agree():
    text = (EXAMPLES / "dumbbell-newreno.toml").read_text()
    from_text = Scenario.from_toml(text)
    assert Scenario.from_dict(from_text.to_dict()) == from_text


def test_override_sets_a_nested_value():
    scenario = Scenario.from_dict(dumbbell()).with_overrides(["topology.bottleneck.rate=100Mbps"])
    assert scenario.to_dict()["topology"]["bottleneck"]["rate"] == "100Mbps"


def test_override_indexes_lists():
    scenario = Scenario.from_dict(dumbbell(flows=2)).with_overrides(["flows.1.cc=reno"])
    flows = scenario.to_dict()["flows"]
    assert flows[1]["cc"] == "reno"
    assert "cc" not in flows[0]
    assert scenario.resolved()["flows"][1]["cc"] == "reno"


def test_override_list_index_in_brackets():
    scenario = Scenario.from_dict(dumbbell(flows=2)).with_overrides(["flows[1].cc=reno"])
    assert scenario.to_dict()["flows"][1]["cc"] == "reno"


def test_override_does_not_change_the_original():
    original = Scenario.from_dict(dumbbell())
    original.with_overrides(["seed=9"])
    assert "seed" not in original.to_dict()


def test_override_values_are_read_as_toml_when_they_can_be():
    scenario = Scenario.from_dict(dumbbell()).with_overrides(
        [
            "seed=7",
            "tcp.sack=true",
            "tcp.initial_window=10",
            'name="two words"',
            'topology.bottleneck.queue={ kind = "red", limit = 100 }',
            "topology.bottleneck.delay=25ms",
        ]
    )
    document = scenario.to_dict()
    assert document["seed"] == 7
    assert document["tcp"] == {"sack": True, "initial_window": 10}  # the table was created
    assert document["name"] == "two words"
    assert document["topology"]["bottleneck"]["queue"] == {"kind": "red", "limit": 100}
    assert document["topology"]["bottleneck"]["delay"] == "25ms"


@pytest.mark.parametrize(
    ("assignment", "value"),
    [
        ("a=1", 1),
        ("a=1.5", 1.5),
        ("a=abc", "abc"),
        ("a=", ""),
        ("a = x y ", "x y"),
        ("a=[1, 2]", [1, 2]),
    ],
)
def test_parse_override(assignment: str, value: object):
    assert parse_override(assignment) == (["a"], value)


@pytest.mark.parametrize(
    ("assignment", "named"),
    [
        ("flows.3.cc=reno", "flows[3]: no such entry, flows has 1 entry"),
        ("flows[3].cc=reno", "flows[3]"),
        ("flows.first.cc=reno", "flows.first: flows is a list"),
        ("duration.unit=s", 'duration.unit: duration is a string ("2s")'),
        ("no-equals-sign", "no-equals-sign"),
        ("=5", "=5"),
        ("topology..rate=1Mbps", "topology..rate"),
    ],
)
def test_bad_override_paths_are_named(assignment: str, named: str):
    with pytest.raises(ScenarioError, match=re.escape(named)):
        Scenario.from_dict(dumbbell()).with_overrides([assignment])


def test_overrides_are_applied_before_checking(tmp_path: Path):
    path = tmp_path / "broken.toml"
    path.write_text(
        Scenario.from_dict(dumbbell()).to_toml().replace('rate = "10Mbps"', 'rate = "-1Mbps"')
    )
    with pytest.raises(ScenarioError):
        Scenario.load(path)
    fixed = Scenario.load(path, overrides=["topology.bottleneck.rate=10Mbps"])
    assert fixed.to_dict()["topology"]["bottleneck"]["rate"] == "10Mbps"


def test_malformed_toml_names_file_line_and_column(tmp_path: Path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\nduration = "2s"\n[topology\nkind = "dumbbell"\n')
    with pytest.raises(ScenarioError) as error:
        Scenario.load(path)
    message = str(error.value)
    assert message.startswith(f"{path}, line 3, column ")
    assert "malformed TOML" in message
    assert "\n" not in message


def test_missing_file_is_a_scenario_error(tmp_path: Path):
    with pytest.raises(ScenarioError, match="no such file"):
        Scenario.load(tmp_path / "nope.toml")


def test_invalid_field_fails_at_construction():
    document = dumbbell()
    document["topology"]["bottleneck"]["rate"] = "-5Mbps"
    with pytest.raises(ScenarioError) as error:
        Scenario.from_dict(document)
    message = str(error.value)
    assert re.search(field_pattern("topology", "bottleneck", "rate"), message)
    assert "-5Mbps" in message


def test_unknown_field_is_named():
    document = dumbbell()
    document["flows"][0]["colour"] = "blue"
    with pytest.raises(ScenarioError, match=field_pattern("flows", 0, "colour")):
        Scenario.from_dict(document)


def test_non_finite_numbers_are_refused():
    with pytest.raises(ScenarioError, match=r"tcp\.initial_ssthresh: inf"):
        Scenario.from_dict(dumbbell(tcp={"initial_ssthresh": float("inf")}))


def test_scenario_errors_are_value_errors():
    assert issubclass(ScenarioError, ValueError)


def test_to_toml_round_trips_the_document():
    scenario = Scenario.load(EXAMPLES / "dumbbell-two-flows.toml")
    assert Scenario.from_toml(scenario.to_toml()) == scenario


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_resolved_scenario_round_trips(path: Path, tmp_path: Path):
    resolved = Scenario.load(path).resolved()
    again = tmp_path / "resolved.toml"
    again.write_text(Scenario.from_dict(resolved).to_toml())
    assert Scenario.load(again).resolved() == resolved


def test_resolving_is_idempotent():
    resolved = Scenario.load(EXAMPLES / "parking-lot.toml").resolved()
    assert Scenario.from_dict(resolved).resolved() == resolved


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False))
def test_floats_as_python_writes_them_are_quantities(x: float) -> None:
    # What code that generates scenarios writes: f"{x:g}", repr(x), f"{x:e}", f"{x:E}".
    for text in (f"{x:g}", repr(x), f"{x:e}", f"{x:E}"):
        d = Scenario.from_dict(dumbbell(rate=f"{text}Mbps", delay=f"{text}ms")).describe()
        (bottleneck,) = [link for link in d["links"] if link["alias"] == "bottleneck"]
        value = float(text)
        assert bottleneck["rate_bps"] == pytest.approx(round(value * 1e6), abs=1), text
        assert bottleneck["delay_ns"] == pytest.approx(round(value * 1e6), abs=1), text
