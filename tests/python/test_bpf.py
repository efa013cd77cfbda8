"""eBPF controllers in the simulator from Python and the command line: startlab's ports by name
(``cc = "bpf:NAME"``) and a user's object (``cc = { bpf = "FILE.o" }``), docs/bpf.md."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import tomli_w

import startlab
from support import ROOT

Cli = Callable[..., subprocess.CompletedProcess[str]]


def document(flow: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "bpf",
        "duration": "3s",
        "topology": {
            "kind": "dumbbell",
            "pairs": 1,
            "bottleneck": {
                "rate": "20Mbps",
                "delay": "20ms",
                "queue": {"kind": "droptail", "limit": "1BDP"},
            },
            "access": {"rate": "1Gbps", "delay": "0.5ms"},
        },
        "tcp": {"mss": "1448B", "sack": True, "recovery": "sack", "handshake": True},
        "flows": [flow],
    }


@pytest.mark.parametrize(
    ("cc", "startup"),
    [("newreno", "default"), ("cubic", "default"), ("newreno", "hystart"), ("bbr", "default")],
)
def test_a_port_runs_in_the_simulator_and_leaves_slow_start_as_its_model(
    cc: str, startup: str
) -> None:
    model = startlab.run(document({"cc": cc, "startup": startup})).flows
    port = startlab.run(document({"cc": f"bpf:{cc}", "startup": startup})).flows
    assert port["cc"][0] == f"bpf:{cc}"
    assert port["ss_exit_reason"][0] == model["ss_exit_reason"][0]
    assert port["ss_exit_ns"][0] == model["ss_exit_ns"][0]
    assert abs(port["ss_exit_cwnd"][0] - model["ss_exit_cwnd"][0]) <= 1.0


def test_suss_port_runs_as_its_model_with_what_a_congestion_ops_can_do() -> None:
    """SUSS's port has the model's `hooks = "struct-ops"` only (docs/algorithms/suss.md): it
    takes them by default and leaves slow start as the model so configured."""
    model = startlab.run(
        document({"cc": "cubic", "startup": "suss", "startup_params": {"hooks": "struct-ops"}})
    ).flows
    port = startlab.run(document({"cc": "bpf:cubic", "startup": "suss"})).flows
    assert port["ss_exit_reason"][0] == model["ss_exit_reason"][0]
    assert port["ss_exit_ns"][0] == model["ss_exit_ns"][0]
    assert abs(port["ss_exit_cwnd"][0] - model["ss_exit_cwnd"][0]) <= 1.0
    with pytest.raises(startlab.ScenarioError, match=r"startup_params\.hooks"):
        startlab.run(
            document({"cc": "bpf:cubic", "startup": "suss", "startup_params": {"hooks": "kernel"}})
        )


def test_a_users_controller_runs_from_the_command_line(cli: Cli, tmp_path: Path) -> None:
    clang = shutil.which("clang")
    assert clang, "clang is installed by make setup"
    obj = tmp_path / "aimd.bpf.o"
    subprocess.run(
        [
            clang,
            "-g",
            "-O2",
            "-target",
            "bpf",
            "-D__TARGET_ARCH_x86",
            "-I/usr/include/bpf",
            "-c",
            str(ROOT / "examples" / "bpf" / "aimd.bpf.c"),
            "-o",
            str(obj),
        ],
        check=True,
    )
    path = tmp_path / "aimd.toml"
    flow = {"cc": {"bpf": str(obj)}, "cc_params": {"decrease_percent": 70}}
    path.write_text(tomli_w.dumps(document(flow)), encoding="utf-8")
    proc = cli("run", path, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    flows = startlab.Result.load(tmp_path / "out").flows
    assert flows["cc"][0] == f"bpf:{obj}"
    assert flows["ss_exit_reason"][0] == "loss"


BPF_FLAGS = ("-g", "-O2", "-target", "bpf", "-D__TARGET_ARCH_x86", "-I/usr/include/bpf")
"""How a user compiles a controller (docs/bpf.md)."""


def compile_object(source: Path, obj: Path, *defines: str) -> Path:
    """``source`` compiled with clang into ``obj`` (``defines``: ``-DNAME`` flags)."""
    clang = shutil.which("clang")
    assert clang, "clang is installed by make setup"
    subprocess.run([clang, *BPF_FLAGS, *defines, "-c", str(source), "-o", str(obj)], check=True)
    return obj


def test_a_kconfig_extern_reads_the_flows_kernel_clock(tmp_path: Path) -> None:
    """`extern const unsigned int CONFIG_HZ __kconfig` is the flow's jiffies rate: tcp.hz on the
    Linux stack, cc_params.hz given, 1000 otherwise. The controller's ssthresh is CONFIG_HZ / 10."""
    source = ROOT / "tests" / "python" / "bpf" / "kfunc_reno.bpf.c"
    obj = compile_object(source, tmp_path / "kconfig.o", "-DKCONFIG_SSTHRESH")
    lossy = document({})
    lossy["duration"] = "3s"
    lossy["topology"]["bottleneck"]["queue"] = {"kind": "droptail", "limit": "0.25BDP"}

    def ssthresholds(tcp: dict[str, Any], **flow: Any) -> set[float]:
        doc = {**lossy, "tcp": tcp or lossy["tcp"]}
        doc["flows"] = [{**lossy["flows"][0], "cc": {"bpf": str(obj)}, **flow}]
        series = startlab.run(doc).flow_series
        return set(series["ssthresh"].drop_nulls().to_list())

    assert ssthresholds({"stack": "linux", "hz": 250}) == {25.0}
    assert ssthresholds({}) == {100.0}
    assert ssthresholds({}, cc_params={"hz": 100}) == {10.0}
    unknown = compile_object(source, tmp_path / "unknown.o", "-DKCONFIG_UNKNOWN")
    doc = {**lossy, "flows": [{**lossy["flows"][0], "cc": {"bpf": str(unknown)}}]}
    with pytest.raises(startlab.ScenarioError, match="CONFIG_NO_SUCH_OPTION"):
        startlab.run(doc)


def test_a_struct_ops_that_needs_ecn_gets_it_and_unknown_flags_are_refused(tmp_path: Path) -> None:
    """`.flags = TCP_CONG_NEEDS_ECN` (0x2): the flow uses ECN though tcp.ecn is off, so CoDel
    marks instead of dropping and the flow reduces for the echoes; a flag Linux does not know
    (0x8) is refused as bpf_tcp_ca_init_member refuses it."""
    source = ROOT / "tests" / "python" / "bpf" / "kfunc_reno.bpf.c"
    doc = document({})
    doc["duration"] = "3s"
    doc["topology"]["bottleneck"]["queue"] = {"kind": "codel", "ecn": True}

    def run(obj: Path) -> startlab.Result:
        return startlab.run({**doc, "flows": [{**doc["flows"][0], "cc": {"bpf": str(obj)}}]})

    needs = run(compile_object(source, tmp_path / "ecn.o", "-DFLAGS=0x2"))
    plain = run(compile_object(source, tmp_path / "plain.o"))
    assert needs.link("bottleneck")["marks"] > 0
    assert needs.link("bottleneck")["drops"] == 0
    assert needs.flows["ecn_reductions"][0] > 0
    assert plain.link("bottleneck")["marks"] == 0
    assert plain.link("bottleneck")["drops"] > 0
    with pytest.raises(startlab.ScenarioError, match=r"flags 0x8; Linux accepts only"):
        run(compile_object(source, tmp_path / "bad.o", "-DFLAGS=0x8"))


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ('""', "has an empty name"),
        ('"sixteen_chars_16"', "16 bytes without a NUL: at most 15 characters"),
        ('"my-reno"', "with '-': letters, digits, '_' and '.' only"),
    ],
)
def test_a_name_linux_would_not_register_is_refused(name: str, says: str, tmp_path: Path) -> None:
    """bpf_tcp_ca_init_member copies the name with bpf_obj_name_cpy, which refuses it (EINVAL)
    empty, without a NUL in its 16 bytes, or with characters other than letters, digits, '_'
    and '.'; a 15-character name with '.' and '_' registers."""
    source = ROOT / "tests" / "python" / "bpf" / "kfunc_reno.bpf.c"
    doc = document({})
    doc["duration"] = "1s"

    def run(obj: Path) -> startlab.Result:
        return startlab.run({**doc, "flows": [{**doc["flows"][0], "cc": {"bpf": str(obj)}}]})

    with pytest.raises(startlab.ScenarioError, match=re.escape(says)):
        run(compile_object(source, tmp_path / "bad.o", f"-DNAME={name}"))
    fine = run(compile_object(source, tmp_path / "fine.o", '-DNAME="reno_v1.2_15chr"'))
    assert fine.flows["delivered_bytes"][0] > 0


def test_an_object_with_two_controllers_runs_the_one_it_names(tmp_path: Path) -> None:
    source = ROOT / "tests" / "python" / "bpf" / "kfunc_reno.bpf.c"
    obj = compile_object(source, tmp_path / "two.o", "-DTWO_OPS")
    base = document({})
    base["duration"] = "2s"

    def run(cc: object) -> startlab.Result:
        return startlab.run({**base, "flows": [{**base["flows"][0], "cc": cc}]})

    with pytest.raises(startlab.ScenarioError, match=r'several struct_ops \("kreno", "kfrozen"\)'):
        run({"bpf": str(obj)})
    frozen = run({"bpf": str(obj), "ops": "kfrozen"})
    assert frozen.flows["cc"][0] == f"bpf:{obj}#kfrozen"
    assert frozen.flow_series["cwnd"].max() == frozen.flow_series["cwnd"][0]
    reno = run({"bpf": str(obj), "ops": "kreno"})
    assert reno.flow_series["cwnd"].max() > 2 * reno.flow_series["cwnd"][0]
    with pytest.raises(startlab.ScenarioError, match='no struct_ops "other"'):
        run({"bpf": str(obj), "ops": "other"})


def test_a_controller_of_kernel_functions_alone_runs_as_the_reno_it_calls(tmp_path: Path) -> None:
    """An object that reads no socket field has no CO-RE record (an empty subsection of
    .BTF.ext). Made of tcp_reno_ssthresh, tcp_reno_cong_avoid and tcp_reno_undo_cwnd, it must
    behave exactly as the Rust Reno with Linux's counting, losses included."""
    obj = compile_object(ROOT / "tests" / "python" / "bpf" / "kfunc_reno.bpf.c", tmp_path / "k.o")
    lossy = document({})
    lossy["duration"] = "5s"
    lossy["topology"]["bottleneck"]["queue"] = {"kind": "droptail", "limit": "0.25BDP"}
    lossy["tcp"]["initial_ssthresh"] = "unlimited"
    runs = {}
    for name, flow in [
        ("object", {"cc": {"bpf": str(obj)}}),
        ("model", {"cc": "reno", "cc_params": {"counting": "linux"}}),
    ]:
        runs[name] = startlab.run({**lossy, "flows": [{**lossy["flows"][0], **flow}]})
    port, model = runs["object"], runs["model"]
    assert model.flows["retransmissions"][0] > 0, "the path must lose packets"
    for column in ("delivered_bytes", "retransmissions", "ss_exit_ns", "ss_exit_cwnd"):
        assert port.flows[column][0] == model.flows[column][0], column
    assert port.flow_series["cwnd"].equals(model.flow_series["cwnd"])


@pytest.mark.parametrize(
    ("flow", "message"),
    [
        ({"cc": "bpf:pstart"}, 'flows[0].cc: "pstart" is a start-up algorithm'),
        ({"cc": "bpf:nosuch"}, 'flows[0].cc: "bpf:nosuch": unknown congestion control "nosuch"'),
        ({"cc": {"bpf": "/nonexistent/cc.bpf.o"}}, "flows[0].cc: bpf:/nonexistent/cc.bpf.o"),
        ({"cc": {"bpf": "x.o", "hz": 1}}, "flows[0].cc"),
        (
            {"cc": "bpf:newreno", "cc_params": {"gain": 1}},
            "flows[0].cc_params: unknown field `gain`",
        ),
    ],
)
def test_a_bad_ebpf_controller_is_refused_by_field(
    cli: Cli, tmp_path: Path, flow: dict[str, Any], message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(document(flow)), encoding="utf-8")
    proc = cli("run", path, "-o", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_connections_of_one_object_share_its_globals_and_maps(tmp_path: Path) -> None:
    """As in the kernel, the connections running one object share its `.bss` and its array and
    hash maps (tests/bpf/shared.bpf.c numbers each connection from a global counter, counts it
    in an array map and records it in a four-entry hash map, checking each helper's answer;
    its initial window, which nothing grows, is cc_params.base + its number, + 20 when the
    hash map was full, + 500 for any wrong answer). Flow entries with the same object and
    parameters share one state, as the kernel world registers them once; other parameters make
    another registration; each run starts afresh."""
    source = ROOT / "crates" / "startlab-core" / "tests" / "bpf" / "shared.bpf.c"
    obj = compile_object(source, tmp_path / "shared.o")
    doc = document({})
    doc["duration"] = "0.5s"
    flow = {"cc": {"bpf": str(obj)}}
    doc["flows"] = [
        {**flow, "count": 4},
        {**flow, "cc_params": {"base": 40}},
        {**flow, "start": "0.1s"},
    ]

    def windows() -> list[float]:
        series = startlab.run(doc).flow_series
        return series.group_by("flow").agg(pl.col("cwnd").max()).sort("flow")["cwnd"].to_list()

    # The fifth connection of base 10 found the four-entry hash map full.
    first = windows()
    assert sorted(first[:4]) == [10.0, 11.0, 12.0, 13.0]
    assert first[4:] == [40.0, 34.0]
    assert windows() == first


@pytest.mark.parametrize(
    ("defines", "fifth"),
    [
        # Per-CPU maps on the simulator's one CPU: the same answers as the plain ones.
        (("-DARRAY_TYPE=6", "-DHASH_TYPE=5"), 34.0),
        # An LRU hash map: the fifth connection's insert evicts connection 0's key, the one
        # used least recently (each connection looks up the one before it), and succeeds; its
        # predecessor's key is still there.
        (("-DHASH_TYPE=9",), 14.0),
    ],
)
def test_per_cpu_and_lru_maps_answer_as_on_one_cpu(
    defines: tuple[str, ...], fifth: float, tmp_path: Path
) -> None:
    """tests/bpf/shared.bpf.c with per-CPU or LRU maps (docs/bpf.md, "Maps")."""
    source = ROOT / "crates" / "startlab-core" / "tests" / "bpf" / "shared.bpf.c"
    obj = compile_object(source, tmp_path / "maps.o", *defines)
    doc = document({})
    doc["duration"] = "0.5s"
    flow = {"cc": {"bpf": str(obj)}}
    doc["flows"] = [{**flow, "count": 4}, {**flow, "start": "0.1s"}]
    series = startlab.run(doc).flow_series
    windows = series.group_by("flow").agg(pl.col("cwnd").max()).sort("flow")["cwnd"].to_list()
    assert sorted(windows[:4]) == [10.0, 11.0, 12.0, 13.0]
    assert windows[4] == fifth


@pytest.mark.parametrize(
    ("define", "says"),
    [
        ("-DARRAY_KEY=__u64", 'array map "counts" has keys of 8 bytes'),
        ("-DHASH_TYPE=13", 'map "numbers" is of type 13, which the simulator does not provide'),
        ("-DHASH_ENTRIES=0", 'map "numbers" has max_entries 0'),
        ("-DHASH_ENTRIES=2000000", 'map "numbers" needs 24000000 bytes'),
    ],
)
def test_a_map_the_kernel_or_the_simulator_would_not_create_is_refused(
    define: str, says: str, tmp_path: Path
) -> None:
    source = ROOT / "crates" / "startlab-core" / "tests" / "bpf" / "shared.bpf.c"
    obj = compile_object(source, tmp_path / "bad.o", define)
    doc = document({"cc": {"bpf": str(obj)}})
    with pytest.raises(startlab.ScenarioError, match=re.escape(says)):
        startlab.run(doc)


def release_document(obj: Path) -> dict[str, Any]:
    """Two connections one after the other on one path, a third on another path."""
    doc = document({})
    doc["duration"] = "3s"
    doc["topology"]["pairs"] = 2
    flow = {"cc": {"bpf": str(obj)}}
    doc["flows"] = [
        {**flow, "size": "200KB", "count": 2, "stagger": "1s"},
        {**flow, "pair": 1, "start": "1.5s"},
    ]
    return doc


def release_windows(result: startlab.Result) -> list[float]:
    series = result.flow_series
    return series.group_by("flow").agg(pl.col("cwnd").max()).sort("flow")["cwnd"].to_list()


def test_release_runs_when_a_connection_closes_and_sockets_have_addresses(tmp_path: Path) -> None:
    """tests/bpf/release.bpf.c counts in `release`, per (local, remote) address, the connections
    that closed, and starts each connection at 10 + 10 x that count (+ 500 for a socket whose
    addresses are not in 198.18.0.0/15 or whose ports are not the kernel world's, 5001 + flow
    and 20000 + flow): the second connection on a path starts at 20, one on another at 10."""
    source = ROOT / "crates" / "startlab-core" / "tests" / "bpf" / "release.bpf.c"
    obj = compile_object(source, tmp_path / "release.o")
    assert release_windows(startlab.run(release_document(obj))) == [10.0, 20.0, 10.0]


def linux_path(queue: dict[str, Any]) -> dict[str, Any]:
    """3 s on the Linux stack over 100 Mbit/s and 20 ms, behind `queue` (no flows yet)."""
    doc = document({})
    doc["duration"] = "3s"
    doc["tcp"] = {"stack": "linux"}
    doc["topology"]["bottleneck"] = {"rate": "100Mbps", "delay": "20ms", "queue": queue}
    return doc


def test_a_users_cubic_written_as_tcp_cubic_decides_as_the_model(tmp_path: Path) -> None:
    """examples/bpf/cubic.bpf.c, tcp_cubic.c as a kernel developer writes a struct_ops program
    (HyStart reading sk_pacing_rate and sk_gso_max_size for its cushion), decides on the Linux
    stack exactly as the model of Linux's CUBIC with HyStart: the same exit, the same losses."""
    obj = compile_object(ROOT / "examples" / "bpf" / "cubic.bpf.c", tmp_path / "cubic.o")
    doc = linux_path({"kind": "droptail", "limit": "1BDP"})

    def run(flow: dict[str, Any]) -> tuple[dict[str, Any], str]:
        row = startlab.run({**doc, "flows": [flow]}).flows.row(0, named=True)
        keys = ("ss_exit_s", "ss_exit_cwnd", "retransmissions", "delivered_bytes")
        return {k: row[k] for k in keys}, row["ss_exit_reason"]

    user, reason = run({"cc": {"bpf": str(obj)}})
    model, model_reason = run({"cc": "cubic", "startup": "hystart"})
    assert user == model
    assert (reason, model_reason) == ("user_cubic", "hystart-train")
    no_hystart, reason = run({"cc": {"bpf": str(obj)}, "cc_params": {"hystart": 0}})
    assert (no_hystart, reason) == (run({"cc": "cubic"})[0], "loss")


def test_a_users_dctcp_written_as_tcp_dctcp_decides_as_the_model(tmp_path: Path) -> None:
    """examples/bpf/dctcp.bpf.c, tcp_dctcp.c as a kernel developer writes it (alpha from
    tp->delivered_ce, its receiver half with bpf_tcp_send_ack, TCP_CONG_NEEDS_ECN), decides
    on the Linux stack behind CoDel marking with ECN exactly as the model of tcp_dctcp.c: the
    same window at every sample, the same echo that ends slow start, the same reductions."""
    obj = compile_object(ROOT / "examples" / "bpf" / "dctcp.bpf.c", tmp_path / "dctcp.o")
    doc = linux_path({"kind": "codel", "ecn": True})

    def run(cc: Any) -> tuple[dict[str, Any], list[float]]:
        r = startlab.run({**doc, "flows": [{"cc": cc}]})
        row = r.flows.row(0, named=True)
        keys = ("ss_exit_s", "ss_exit_cwnd", "ss_exit_reason", "ecn_reductions", "ce_marks")
        return {k: row[k] for k in keys}, r.flow_series["cwnd"].to_list()

    user, user_cwnd = run({"bpf": str(obj)})
    model, model_cwnd = run("dctcp")
    assert user == model
    assert user["ss_exit_reason"] == "ecn"
    assert user["ecn_reductions"] >= 2
    assert user_cwnd == model_cwnd
