"""The ``startlab`` command: run, validate and plot scenarios, run sweeps, list algorithms.

Exit status: 0 on success, 2 on bad input (the scenario, a sweep plan, an override, the command
line, an output directory that is in the way), 1 when writing the results fails or a cluster is
unreachable or lost, 3 when a sweep finished with failed runs, 130 when interrupted. Errors are
one line on stderr: ``startlab: error: <message>``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, Protocol

import polars as pl

from startlab import __version__, _core
from startlab.result import Result, run
from startlab.scenario import Scenario, ScenarioError

__all__ = ["main"]

MAX_TABLE_FLOWS = 30
"""``startlab run`` lists at most this many flows (all are in flows.parquet)."""


class UsageError(Exception):
    """Bad input that is not a scenario field: command line, paths."""


class KernelRunFailed(Exception):
    """The kernel world started and failed (an object Linux refused, a connection that broke):
    said in one line, exit status 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError(
                "no command given: use run, validate, plot, sweep, reproduce, algorithms, schema, "
                "paths, kernel or compare (see --help)"
            )
        status: int = args.handler(args)
        return status
    except (ScenarioError, UsageError) as e:
        _error(str(e))
        return 2
    except KernelRunFailed as e:
        _error(str(e))
        return 1
    except BrokenPipeError:  # e.g. `startlab algorithms | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as e:
        _error(_os_error(e))
        return 1
    except KeyboardInterrupt:
        _error("interrupted")
        return 130


def _error(message: str) -> None:
    line = " ".join(message.split("\n")).strip()
    print(f"startlab: error: {line}", file=sys.stderr)


def _os_error(e: OSError) -> str:
    if e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)


def _parser() -> _Parser:
    parser = _Parser(
        prog="startlab",
        description="Deterministic packet-level TCP simulation of slow start and congestion "
        "control. Scenario files are described in docs/scenario.md.",
    )
    parser.add_argument("--version", action="version", version=f"startlab {__version__}")
    parser.set_defaults(command=None)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)

    def strict(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--strict",
            action="store_true",
            help="treat warnings (a scenario that probably does not mean what it says) as errors",
        )

    def overrides(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--set",
            dest="overrides",
            action="append",
            default=[],
            metavar="PATH=VALUE",
            help="override a field before checking, e.g. --set topology.bottleneck.rate=100Mbps "
            "or --set flows.0.cc=reno (repeatable; VALUE is read as TOML when it is valid TOML)",
        )

    def run_arguments(p: argparse.ArgumentParser, after: str) -> None:
        """SCENARIO, -o DIR, --set, --force, --no-plots and --strict, as every command that
        runs a scenario and writes a run directory takes them."""
        p.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file (docs/scenario.md)")
        p.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
        overrides(p)
        p.add_argument(
            "--force", action="store_true", help=f"replace DIR if it exists (after {after})"
        )
        p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
        strict(p)

    p = commands.add_parser(
        "run",
        help="simulate a scenario and write its results",
        description="Simulate SCENARIO and write into DIR: scenario.toml (resolved), one Parquet "
        "file per table, summary.json and PNG plots. DIR appears only once complete.",
    )
    run_arguments(p, "the run succeeded")
    p.set_defaults(command="run", handler=_run)

    p = commands.add_parser(
        "validate",
        help="check a scenario and summarize it",
        description="Check SCENARIO, print 'ok' and a summary of the resolved scenario.",
    )
    p.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file (docs/scenario.md)")
    overrides(p)
    strict(p)
    p.set_defaults(command="validate", handler=_validate)

    p = commands.add_parser(
        "plot",
        help="redraw the plots of a run directory",
        description="Redraw the PNG plots of a run directory from its Parquet files.",
    )
    p.add_argument("directory", metavar="DIR")
    p.set_defaults(command="plot", handler=_plot)

    p = commands.add_parser(
        "sweep",
        help="run a scenario over a grid of parameters (a sweep plan)",
        description="Run every point of a sweep plan (docs/sweeps.md) on the local cores or a "
        "Dask cluster, and write into DIR: results.parquet (one row per point), summary.json, "
        "plan.toml, plots/*.png and runs/ (one file per finished run). Runs already in runs/ "
        "are not simulated again: an interrupted sweep resumes where it stopped.",
    )
    p.add_argument("plan", metavar="PLAN.toml", help="sweep plan (docs/sweeps.md)")
    p.add_argument("-o", "--output", metavar="DIR", help="sweep directory (new, empty or resumed)")
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="local worker processes (default: every core; 0: run in this process)",
    )
    p.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="run on the Dask cluster whose scheduler is at ADDRESS, e.g. tcp://host:8786",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="override a field of the plan before checking, e.g. --set base.duration=5s or "
        "--set 'axes.seed={count=2}' (repeatable; VALUE is read as TOML when it is valid TOML)",
    )
    p.add_argument(
        "--cache",
        metavar="RUNS",
        help="keep the run files in RUNS instead of DIR/runs (sweeps can share one)",
    )
    p.add_argument(
        "--retry-failed", action="store_true", help="simulate the runs recorded as failed again"
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="check the plan and list its axes and how many runs are left; run nothing",
    )
    bar = p.add_mutually_exclusive_group()
    bar.add_argument(
        "--progress",
        dest="progress",
        action="store_const",
        const=True,
        default=None,
        help="always draw the progress bar (default: on a terminal only)",
    )
    bar.add_argument(
        "--no-progress", dest="progress", action="store_const", const=False, help="no progress"
    )
    p.set_defaults(command="sweep", handler=_sweep)

    p = commands.add_parser(
        "reproduce",
        help="re-run the experiments of the source papers and write the report",
        description="Run the experiments of the source papers (docs/reproduce.md) on the local "
        "cores or a Dask cluster and write DIR/report/ (index.html, README.md, figures, data). "
        "Runs are kept in DIR/cache: a second reproduction simulates nothing and an "
        "interrupted one resumes.",
    )
    p.add_argument(
        "experiments",
        nargs="*",
        metavar="PAPER|PAPER/EXPERIMENT",
        help="what to run (default: everything), e.g. wang2004 or ha2009/hystart-fig6-9",
    )
    p.add_argument("--quick", action="store_true", help="the reduced version of each experiment")
    p.add_argument(
        "-o", "--output", metavar="DIR", default="out/reproduce", help="default: out/reproduce"
    )
    p.add_argument(
        "-j", "--jobs", type=int, metavar="N", help="local worker processes (default: every core)"
    )
    p.add_argument("--cluster", metavar="ADDRESS", help="a Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--list", action="store_true", help="list the experiments and run nothing")
    p.add_argument(
        "--experiments-dir",
        metavar="DIR",
        help="where the experiment files are (default: reproduce/ of the current directory or "
        "of the source tree)",
    )
    p.add_argument(
        "--no-progress", dest="progress", action="store_const", const=False, default=None
    )
    p.set_defaults(command="reproduce", handler=_reproduce)

    p = commands.add_parser(
        "algorithms",
        help="list congestion-control, slow-start and pacing algorithms",
        description="List every congestion-control (flows.cc), slow-start (flows.startup) and "
        "pacing (tcp.pacing) algorithm and the initial window, with their parameters, units and "
        "allowed values.",
    )
    p.set_defaults(command="algorithms", handler=_algorithms)

    p = commands.add_parser(
        "schema",
        help="print the tables every run writes, with their columns",
        description="Print, as Markdown, every table a run writes with each column's type, unit, "
        "whether it can be null and its meaning (docs/tables.md is this text).",
    )
    p.set_defaults(command="schema", handler=_schema)

    p = commands.add_parser(
        "paths",
        help="list the bundled paths' traces, or write them",
        description="List the Mahimahi traces the bundled paths of examples/paths/ use "
        "(docs/variable-links.md), generated from seeded processes; with --write DIR, write them "
        "into DIR.",
    )
    p.add_argument("--write", metavar="DIR", help="write every bundled trace into DIR")
    p.set_defaults(command="paths", handler=_paths)

    def kernel_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--no-realtime",
            action="store_true",
            help="run the link emulator's threads under the normal scheduler instead of "
            "SCHED_FIFO (packets then leave later: see docs/kernel.md)",
        )

    p = commands.add_parser(
        "kernel",
        help="run scenarios on Linux's own TCP over an emulated bottleneck (root)",
        description="The kernel world (docs/kernel.md): the scenario's hosts as network "
        "namespaces joined by a link emulator, Linux's TCP between them.",
    )
    kernel_commands = p.add_subparsers(
        title="commands", metavar="COMMAND", parser_class=_Parser, required=True
    )
    k = kernel_commands.add_parser(
        "run",
        help="run a scenario on the kernel and write its results",
        description="Run SCENARIO on Linux's TCP between network namespaces over the link "
        "emulator, in real time, and write into DIR the same files as 'startlab run' "
        "(summary.json also has the kernel's facts: release, emulator lateness, TCP_INFO). "
        "Needs root; fields the kernel cannot honour are refused before anything is created.",
    )
    run_arguments(k, "the run succeeded")
    kernel_options(k)
    k.set_defaults(command="kernel run", handler=_kernel_run)
    k = kernel_commands.add_parser(
        "check",
        help="check that the kernel can run a scenario as written",
        description="Check SCENARIO against what the kernel world can honour, without running "
        "it, and list what Linux does whatever the scenario says.",
    )
    k.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file (docs/scenario.md)")
    overrides(k)
    k.set_defaults(command="kernel check", handler=_kernel_check)
    k = kernel_commands.add_parser(
        "clean",
        help="remove what killed kernel runs left behind",
        description="Remove the namespaces and trace instances of kernel runs whose process is "
        "gone, and restore module parameters they changed. Every run does this when it starts.",
    )
    k.set_defaults(command="kernel clean", handler=_kernel_clean)
    k = kernel_commands.add_parser(
        "accuracy",
        help="measure the link emulator on this machine",
        description="For each rate: ping round trips on the idle path against the configured "
        "RTT, the rate UDP at 1.1 x the link rate arrives at, the emulator's lateness and the "
        "hypervisor's steal; then REPEATS runs of one CUBIC flow with Linux's HyStart and the "
        "spread of their slow-start exits. Prints a table (docs/kernel.md has this machine's).",
    )
    k.add_argument(
        "--rates",
        default="10Mbps,50Mbps,100Mbps,200Mbps,400Mbps",
        metavar="LIST",
        help="bottleneck rates, comma-separated (default: %(default)s)",
    )
    k.add_argument("--rtt", default="40ms", help="propagation RTT (default: %(default)s)")
    k.add_argument("--pings", type=int, default=200, help="echo requests per rate (default: 200)")
    k.add_argument(
        "--udp-seconds", type=float, default=4.0, help="seconds of UDP per rate (default: 4)"
    )
    k.add_argument(
        "--repeats", type=int, default=3, help="CUBIC runs per rate (default: 3; 0: none)"
    )
    k.add_argument(
        "--trace",
        metavar="FILE",
        help="instead: drive the bottleneck from this Mahimahi trace and compare the bytes "
        "received in each 100 ms with what the trace offers there",
    )
    k.add_argument(
        "--trace-seconds", type=float, default=10.0, help="seconds of the trace check (default: 10)"
    )
    k.add_argument("-o", "--output", metavar="FILE", help="also write every figure as JSON")
    kernel_options(k)
    k.set_defaults(command="kernel accuracy", handler=_kernel_accuracy)

    p = commands.add_parser(
        "compare",
        help="run a scenario in the simulator and on the kernel, side by side (root)",
        description="Run SCENARIO in both worlds and write into DIR: simulator/ and kernel/ "
        "(run directories), differences.md and differences.parquet (slow-start exit, "
        "goodput, retransmissions, timeouts, utilization, drops), and cwnd.png and queue.png "
        "with both worlds overlaid.",
    )
    run_arguments(p, "both runs succeeded")
    kernel_options(p)
    p.set_defaults(command="compare", handler=_compare)
    return parser


def _paths(args: argparse.Namespace) -> int:
    from startlab import paths

    if args.write:
        for written in paths.write_all(args.write):
            print(written)
        return 0
    for t in paths.TRACES:
        print(f"{t.name:<22} {t.duration_ms / 1000:g} s  {t.description}")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from startlab.result import schema_markdown

    print(schema_markdown(), end="")
    return 0


def _warn(warnings: Sequence[str], *, strict: bool) -> None:
    """Print a scenario's warnings to stderr, or refuse it with them under --strict."""
    if strict and warnings:
        raise ScenarioError("; ".join(warnings) + " (--strict: warnings are errors)")
    for w in warnings:
        print(f"startlab: warning: {w}", file=sys.stderr)


# -- run -----------------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    scenario = Scenario.load(args.scenario, overrides=args.overrides)
    _warn(scenario.describe()["warnings"], strict=args.strict)
    out = Path(args.output)
    _check_output(out, force=args.force)
    with _terminate_as_exit():
        result = run(scenario)
        _write_atomically(result, out, force=args.force, plots=not args.no_plots)
    print(_flow_table(result, out))
    print(_stats_line(result))
    print(f"wrote {out}/: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


def _check_output(out: Path, *, force: bool) -> None:
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise UsageError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UsageError(f"{out}: directory exists and is not empty (use --force to replace it)")


class _Writable(Protocol):
    def write(self, directory: str | os.PathLike[str], *, plots: bool = True) -> list[Path]: ...


def _write_atomically(result: _Writable, out: Path, *, force: bool, plots: bool) -> None:
    """Write into a temporary sibling of ``out`` and rename it into place at the end, so that
    ``out`` is either absent, the old directory or the complete new one."""
    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
    umask = os.umask(0o022)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp makes it private; DIR gets the usual mode
    retired: Path | None = None
    try:
        result.write(staging, plots=plots)
        if out.exists():
            _check_output(out, force=force)  # it may have appeared while we ran
            retired = staging.with_suffix(".old")
            out.rename(retired)
        try:
            staging.rename(out)
        except BaseException:
            if retired is not None:
                retired.rename(out)
                retired = None
            raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        if retired is not None:
            shutil.rmtree(retired, ignore_errors=True)


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """Turn SIGTERM into SystemExit for the duration, so cleanup code runs as on Ctrl-C."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _flow_table(result: Result, out: Path) -> str:
    header = [
        "flow",
        "label",
        "cc",
        "startup",
        "delivered MB",
        "goodput Mbit/s",
        "retx",
        "timeouts",
        "ss exit s",
        "ss exit cwnd",
        "ss exit reason",
        "done s",
    ]
    numeric = {0, 4, 5, 6, 7, 8, 9, 11}
    rows = []
    for flow in result.flows.head(MAX_TABLE_FLOWS).iter_rows(named=True):
        tcp = flow["kind"] == "tcp"
        rows.append(
            [
                str(flow["flow"]),
                flow["label"] or "-",
                flow["cc"] if tcp else flow["kind"],
                flow["startup"] if tcp else "-",
                f"{flow['delivered_bytes'] / 1e6:.2f}",
                f"{flow['goodput_bps'] / 1e6:.2f}",
                str(flow["retransmissions"]) if tcp else "-",
                str(flow["timeouts"]) if tcp else "-",
                _optional(flow.get("ss_exit_s"), "{:.3f}"),
                _optional(flow["ss_exit_cwnd"], "{:.1f}"),
                flow["ss_exit_reason"] or "-",
                _optional(flow.get("completion_s"), "{:.3f}"),
            ]
        )
    table = _format_table(header, rows, numeric)
    more = result.flows.height - MAX_TABLE_FLOWS
    if more > 0:
        table += f"\n... and {more} more flows (see {out}/flows.parquet)"
    return table


def _optional(value: Any, form: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return form.format(value)


def _format_table(header: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(w) if i in numeric else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(header), *(line(row) for row in rows)])


def _stats_line(result: Result) -> str:
    stats = result.stats
    sim_s = stats.get("sim_time_ns", 0) / 1e9
    wall_s = stats.get("wall_time_s", 0.0)
    speed = f" ({sim_s / wall_s:,.1f}x real time)" if wall_s > 0 else ""
    jain = stats.get("jain_index", math.nan)
    fairness = f", Jain index {jain:.4f}" if isinstance(jain, float) and math.isfinite(jain) else ""
    return (
        f"{stats.get('events', 0):,} events, {stats.get('packets_forwarded', 0):,} packets "
        f"forwarded, {sim_s:g} s simulated in {wall_s:.2f} s{speed}{fairness}"
    )


# -- the kernel world ----------------------------------------------------------------------------


def _kernel_call(call: Any) -> Any:
    """Run a kernel-world call; a machine that cannot run it is bad input (exit status 2)."""
    from startlab import kernel

    try:
        return call()
    except kernel.KernelUnavailable as e:
        raise UsageError(f"the kernel world is unavailable: {e}") from None
    except RuntimeError as e:
        raise KernelRunFailed(f"the kernel run failed: {e}") from None


def _kernel_scenario(args: argparse.Namespace) -> tuple[Scenario, Path, int | None]:
    """The scenario of `kernel run` or `compare`, checked against the kernel and with its
    warnings said, the output directory checked, and the forwarding threads' priority; all
    before anything runs."""
    from startlab import kernel

    scenario = Scenario.load(args.scenario, overrides=args.overrides)
    _warn(scenario.describe()["warnings"], strict=args.strict)
    kernel.check(scenario)
    out = Path(args.output)
    _check_output(out, force=args.force)
    return scenario, out, None if args.no_realtime else 50


def _kernel_run(args: argparse.Namespace) -> int:
    from startlab import kernel

    scenario, out, priority = _kernel_scenario(args)
    with _terminate_as_exit():
        result = _kernel_call(lambda: kernel.run(scenario, realtime_priority=priority))
        _write_atomically(result, out, force=args.force, plots=not args.no_plots)
    print(_flow_table(result, out))
    print(_kernel_line(result))
    print(f"wrote {out}/: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


def _kernel_line(result: Result) -> str:
    facts = result.kernel
    emu = facts.get("emulator", {})
    steal = emu.get("steal_ns")
    return (
        f"Linux {facts.get('kernel_release', '?')}: {emu.get('packets', 0):,} packets emulated, "
        f"late by p50 {emu.get('lateness_p50_ns', 0) / 1e3:.0f} µs, "
        f"p99 {emu.get('lateness_p99_ns', 0) / 1e3:.0f} µs, "
        f"max {emu.get('lateness_max_ns', 0) / 1e3:.0f} µs; "
        f"{emu.get('late_1ms_packets', 0):,} packets 1 ms late or more; hypervisor steal "
        + ("unknown" if steal is None else f"{steal / 1e6:.0f} ms")
        + f"; {result.stats.get('wall_time_s', 0.0):.1f} s"
    )


def _kernel_check(args: argparse.Namespace) -> int:
    from startlab import kernel

    scenario = Scenario.load(args.scenario, overrides=args.overrides)
    differences = _kernel_call(lambda: kernel.check(scenario))
    missing = kernel.preflight()
    print(f"ok: the kernel world can run {args.scenario}")
    if missing:
        print(f"but not on this machine now: {missing}")
    print("Controllers:")
    for line in _kernel_call(lambda: kernel.controls(scenario)):
        print(f"  - {line}")
    print("What Linux does whatever the scenario says:")
    for d in differences:
        print(f"  - {d}")
    return 0


def _kernel_clean(args: argparse.Namespace) -> int:
    from startlab import kernel

    removed = _kernel_call(kernel.clean)
    for r in removed:
        print(f"removed {r}")
    print(f"{len(removed)} left-overs of killed runs removed" if removed else "nothing to remove")
    return 0


def _quantity(text: str, family: str, what: str) -> float:
    from startlab.sweep.model import parse_quantity

    q = parse_quantity(text.strip())
    if q is None or q.family != family or not q.si > 0:
        raise UsageError(f"{what}: {text!r} is not a positive {family} (e.g. 100Mbps, 40ms)")
    return q.si


def _kernel_accuracy(args: argparse.Namespace) -> int:
    import json

    from startlab import kernel

    if args.trace:
        return _kernel_trace_accuracy(args)
    rates = [_quantity(r, "rate", "--rates") for r in args.rates.split(",")]
    rtt = _quantity(args.rtt, "duration", "--rtt")
    if args.pings < 1 or args.repeats < 0 or not args.udp_seconds > 0:
        raise UsageError("--pings must be at least 1, --repeats at least 0, --udp-seconds > 0")
    priority = None if args.no_realtime else 50
    header = [
        "rate",
        "ping - RTT median",
        "p99",
        "UDP rate error",
        "late p50",
        "p99",
        "max",
        ">=1ms",
        "steal",
        "exit cwnd spread",
        "exit time spread",
        "exits",
    ]
    rows, figures = [], []
    for rate in rates:
        link = _kernel_call(
            lambda r=rate: kernel.link_accuracy(
                r, rtt, pings=args.pings, udp_seconds=args.udp_seconds, realtime_priority=priority
            )
        )
        exits = (
            _kernel_call(
                lambda r=rate: kernel.exit_spread(
                    r, rtt, repeats=args.repeats, realtime_priority=priority
                )
            )
            if args.repeats
            else None
        )
        figures.append({"link": link, "exits": exits})
        emu = link["emulator"]

        def ms(ns: float | None, expected: float = link["ping_expected_ns"]) -> str:
            return "-" if ns is None else f"{(ns - expected) / 1e6:+.3f} ms"

        def pct(x: float | None) -> str:
            return "-" if x is None else f"{100 * x:.2f} %"

        rows.append(
            [
                f"{rate / 1e6:g} Mbit/s",
                ms(link["ping_median_ns"]),
                ms(link["ping_p99_ns"]),
                "-" if link["udp_rate_error"] is None else f"{100 * link['udp_rate_error']:+.3f} %",
                f"{emu['lateness_p50_ns'] / 1e3:.0f} µs",
                f"{emu['lateness_p99_ns'] / 1e3:.0f} µs",
                f"{emu['lateness_max_ns'] / 1e3:.0f} µs",
                str(emu["late_1ms_packets"]),
                "-" if emu["steal_ns"] is None else f"{emu['steal_ns'] / 1e6:.0f} ms",
                pct(exits["cwnd_spread"]) if exits else "-",
                pct(exits["time_spread"]) if exits else "-",
                ", ".join(exits["reasons"]) if exits else "-",
            ]
        )
        print(_format_table(header, rows[-1:], set(range(1, 11))), flush=True)
    print()
    print(
        f"RTT {args.rtt}, buffer 1 BDP, {args.pings} pings, {args.udp_seconds:g} s of UDP, "
        f"{args.repeats} CUBIC runs per rate:"
    )
    print(_format_table(header, rows, set(range(1, 11))))
    if args.output:
        Path(args.output).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.output}")
    return 0


def _kernel_trace_accuracy(args: argparse.Namespace) -> int:
    import json

    from startlab import kernel

    trace = Path(args.trace)
    if not trace.is_file():
        raise UsageError(f"--trace {args.trace}: no such file")
    if not 1.0 <= args.trace_seconds <= 600.0:
        raise UsageError("--trace-seconds must be 1 to 600")
    priority = None if args.no_realtime else 50
    check = _kernel_call(
        lambda: kernel.trace_accuracy(trace, seconds=args.trace_seconds, realtime_priority=priority)
    )
    emu = check["emulator"]
    print(
        f"{trace.name}: {check['bins']} bins of 100 ms, trace mean {check['mean_bps'] / 1e6:.2f} "
        f"Mbit/s, peak {check['peak_bps'] / 1e6:.2f} Mbit/s; received/offered "
        f"{check['received_over_offered']:.4f}; |received - offered| per bin over the mean bin: "
        f"median {100 * check['error_median']:.2f} %, p99 {100 * check['error_p99']:.2f} %, "
        f"max {100 * check['error_max']:.2f} %; emulator late p99 "
        f"{emu['lateness_p99_ns'] / 1e3:.0f} µs, {emu['late_1ms_packets']} packets >= 1 ms late"
    )
    if args.output:
        Path(args.output).write_text(json.dumps(check, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.output}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from startlab import compare as comparing

    scenario, out, priority = _kernel_scenario(args)
    with _terminate_as_exit():
        comparison = _kernel_call(lambda: comparing.compare(scenario, realtime_priority=priority))
        _write_atomically(comparison, out, force=args.force, plots=not args.no_plots)
    print(comparing.markdown(comparison.differences), end="")
    print(_kernel_line(comparison.kernel))
    print(f"wrote {out}/: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


# -- validate ------------------------------------------------------------------------------------


def _validate(args: argparse.Namespace) -> int:
    scenario = Scenario.load(args.scenario, overrides=args.overrides)
    _warn(scenario.describe()["warnings"], strict=args.strict)
    print("ok")
    print(describe(scenario.resolved()))
    return 0


def describe(resolved: dict[str, Any]) -> str:
    """One paragraph describing a resolved scenario."""
    topology = resolved.get("topology", {})
    bottleneck = topology.get("bottleneck", {})
    if topology.get("kind") == "parking-lot":
        hops = topology.get("hops", "?")
        shape = (
            f"a parking lot of {_count(hops, 'hop')} "
            f"({_count(topology.get('long_pairs', '?'), 'long pair')}, "
            f"{_count(topology.get('cross_pairs', '?'), 'cross pair')} per hop)"
        )
        links = "every hop"
    else:
        shape = f"a dumbbell with {_count(topology.get('pairs', '?'), 'pair')}"
        links = "bottleneck"
    queue = bottleneck.get("queue", {})
    buffer = f"{queue.get('kind', 'droptail')} queue of {_limit(queue.get('limit'))}"
    loss = bottleneck.get("loss")
    lossy = f", random loss {loss}" if loss else ""
    tcp = resolved.get("tcp", {})
    tcp_text = (
        f"TCP segments of {_text(tcp.get('mss'))} + {_text(tcp.get('header'))}, initial window "
        f"{_text(tcp.get('initial_window'))}, initial ssthresh "
        f"{_text(tcp.get('initial_ssthresh'))}, {_text(tcp.get('recovery'))} recovery"
        + (", SACK" if tcp.get("sack") else "")
        + (", delayed ACKs" if tcp.get("delayed_ack") else "")
    )
    flows = resolved.get("flows", [])
    flows_text = "; ".join(_describe_flow(i, flow) for i, flow in enumerate(flows))
    measure = resolved.get("measure", {})
    sampled = ", ".join(str(link) for link in measure.get("links", [])) or "no links"
    windows = measure.get("window", [])
    window_text = f", {_count(len(windows), 'utilization window')}" if windows else ""
    return (
        f"{resolved.get('name', 'scenario')!r} (seed {resolved.get('seed', '?')}): "
        f"{_text(resolved.get('duration'))} on {shape}, reference RTT "
        f"{_text(topology.get('bdp_rtt'))}; {links} {_text(bottleneck.get('rate'))}, "
        f"{_text(bottleneck.get('delay'))} one way, {buffer}{lossy}. {tcp_text}. "
        f"{_count(len(flows), 'flow entry', 'flow entries')}: {flows_text}. "
        f"Sampled every {_text(measure.get('interval'))}: {sampled}{window_text}."
    )


def _describe_flow(index: int, flow: dict[str, Any]) -> str:
    kind = flow.get("kind", "tcp")
    words = [f"#{index}"]
    if flow.get("label"):
        words.append(repr(flow["label"]))
    count = flow.get("count", 1)
    if isinstance(count, int) and count > 1:
        words.append(f"{count} x")
    if kind in ("tcp", "tcp-arrivals"):
        algorithm = str(flow.get("cc", "newreno"))
        startup = flow.get("startup", "default")
        if startup and startup != "default":
            algorithm += f" with {startup} slow start"
        words.append(f"{kind} {algorithm}")
    else:
        words.append(f"{kind} at {_text(flow.get('rate'))}")
    words.append(f"{flow.get('src', '?')}->{flow.get('dst', '?')}")
    if kind == "tcp-arrivals":
        words.append(
            f"arriving every {_text(flow.get('mean_interarrival'))} on average from "
            f"{_text(flow.get('start'))} to {_text(flow.get('stop', 'the end'))}"
        )
    else:
        words.append(f"from {_text(flow.get('start', '0s'))}")
    size = flow.get("size")
    if isinstance(size, dict):
        words[-1] += f", {size.get('distribution', '?')} sizes"
    elif size is not None:
        words[-1] += ", bulk" if size == "unlimited" else f", {_text(size)}"
    return " ".join(words)


def _limit(limit: Any) -> str:
    if isinstance(limit, int) and not isinstance(limit, bool):
        return _count(limit, "packet")
    return _text(limit)


def _text(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def _count(n: Any, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


# -- plot ----------------------------------------------------------------------------------------


def _plot(args: argparse.Namespace) -> int:
    from startlab import plots

    directory = Path(args.directory)
    try:
        result = Result.load(directory)
    except FileNotFoundError as e:
        raise UsageError(str(e)) from None
    except pl.exceptions.PolarsError as e:
        raise UsageError(f"{directory}: cannot read the run: {e}") from None
    for path in plots.write_all(result, directory):
        print(path)
    return 0


# -- sweep ---------------------------------------------------------------------------------------


def _sweep(args: argparse.Namespace) -> int:
    from startlab.sweep import (
        ClusterError,
        RunCache,
        SweepOutputError,
        SweepPlan,
        check_output,
        run_sweep,
    )

    if args.jobs is not None and args.jobs < 0:
        raise UsageError(f"--jobs: must be 0 or more, not {args.jobs}")
    if args.jobs is not None and args.cluster:
        raise UsageError("--jobs and --cluster: choose one (the cluster has its own workers)")
    if args.cluster is not None and not args.cluster.strip():
        raise UsageError("--cluster: empty address; e.g. tcp://host:8786")
    plan = SweepPlan.load(args.plan, overrides=args.overrides)
    points = plan.points()
    out = Path(args.output) if args.output else None
    cache_dir = Path(args.cache) if args.cache else (out / "runs" if out else None)
    if args.dry_run:
        print(_describe_plan(plan, points, cache_dir, args.retry_failed))
        return 0
    if out is None:
        raise UsageError("-o/--output DIR is required (except with --dry-run)")
    try:
        check_output(out)
    except SweepOutputError as e:
        raise UsageError(str(e)) from None
    keys = {point.key for point in points}

    def kept() -> str:
        done = len(RunCache(cache_dir).keys() & keys) if cache_dir else 0
        return (
            f"{done} of {len(keys)} runs are done and kept in {cache_dir}/; run the same "
            "command again to resume"
        )

    with _terminate_as_exit():
        try:
            outcome = run_sweep(
                plan,
                out,
                args.jobs,
                args.cluster,
                cache=args.cache,
                progress=args.progress,
                retry_failed=args.retry_failed,
                plots=not args.no_plots,
            )
        except SweepOutputError as e:
            raise UsageError(str(e)) from None
        except ClusterError as e:
            _error(f"{e}; {kept()}")
            return 1
        except KeyboardInterrupt:
            _error(f"interrupted: {kept()}")
            return 130
        except SystemExit:  # SIGTERM (see _terminate_as_exit)
            _error(f"terminated: {kept()}")
            raise
    print(outcome.text())
    return 3 if outcome.execution.failed else 0


def _describe_plan(plan: Any, points: Sequence[Any], cache_dir: Path | None, retry: bool) -> str:
    from startlab.sweep import RunCache, usable_record

    keys = list(dict.fromkeys(point.key for point in points))
    lines = [f"ok: sweep {plan.name!r}, {len(points)} points, {len(keys)} distinct runs"]
    for axis in plan.axes:
        values = ", ".join(_plain(v) for v in axis.values[:8])
        more = f", ... ({len(axis.values)} values)" if len(axis.values) > 8 else ""
        group = f" [zip {axis.group}]" if axis.group else ""
        scale = " (log)" if axis.log else ""
        lines.append(f"  axis {axis.name}{group}{scale}: {values}{more}")
    lines.append("  metrics: " + ", ".join(f"{m.name} = {m.id}" for m in plan.metrics))
    for spec in plan.plots:
        parts = [f"{spec.y} vs {spec.x}"]
        if spec.series:
            parts.append(f"series {spec.series}")
        if spec.facet:
            parts.append(f"facet {spec.facet}")
        lines.append(f"  plot {spec.name}: {', '.join(parts)}")
    if cache_dir is not None:
        cache = RunCache(cache_dir)
        metric_ids = [m.id for m in plan.metrics]
        done = sum(usable_record(cache.get(k), metric_ids, retry_failed=retry) for k in keys)
        lines.append(f"  {done} runs in {cache_dir}/, {len(keys) - done} to simulate")
    return "\n".join(lines)


def _plain(value: Any) -> str:
    from startlab.sweep.model import toml_value

    return toml_value(value)


# -- algorithms ----------------------------------------------------------------------------------


def _algorithms(args: argparse.Namespace) -> int:
    print(format_algorithms(_core.algorithms()))
    return 0


def format_algorithms(algorithms: Sequence[_core.AlgorithmInfo]) -> str:
    """The text of ``startlab algorithms``."""
    sections = []
    for role, title in (
        ("cc", "Congestion control (flows.cc = NAME, flows.cc_params = {...})"),
        ("startup", "Slow start (flows.startup = NAME, flows.startup_params = {...})"),
        ("pacing", "Pacing, for any controller (tcp.pacing = NAME)"),
        ("initial-window", "Initial window (tcp.initial_window)"),
    ):
        chosen = [a for a in algorithms if a["role"] == role]
        if not chosen:
            continue
        lines = [title, "=" * len(title)]
        for algorithm in chosen:
            lines += ["", f"{algorithm['name']} [{role}]", f"  {algorithm['summary']}"]
            if algorithm["source"]:
                lines.append(f"  source: {algorithm['source']}")
            params = algorithm["params"]
            if params:
                table = _format_table(
                    ["param", "default", "unit", "allowed", "description"],
                    [
                        [p["name"], p["default"], p["unit"], p["allowed"], p["description"]]
                        for p in params
                    ],
                    numeric=set(),
                )
                lines += ["", *(f"    {row}" for row in table.splitlines())]
            else:
                lines.append("  no parameters")
        sections.append("\n".join(lines))
    others = sorted({a["role"] for a in algorithms} - {"cc", "startup", "pacing", "initial-window"})
    for role in others:  # pragma: no cover - a role this version doesn't know
        names = ", ".join(a["name"] for a in algorithms if a["role"] == role)
        sections.append(f"{role}: {names}")
    return "\n\n".join(sections)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


def _reproduce(args: argparse.Namespace) -> int:
    from startlab.reproduce import default_root, find_experiments, reproduce
    from startlab.sweep import ClusterError

    if args.jobs is not None and args.jobs < 0:
        raise UsageError(f"--jobs: must be 0 or more, not {args.jobs}")
    root = Path(args.experiments_dir) if args.experiments_dir else default_root()
    experiments = find_experiments(root, args.experiments)
    if args.list:
        for e in experiments:
            print(f"{e.id:<34} {e.source:<24} {e.title}")
        return 0
    out = Path(args.output)
    command = " ".join(["startlab reproduce", *(sys.argv[2:] if len(sys.argv) > 2 else [])])
    with _terminate_as_exit():
        try:
            results = reproduce(
                args.experiments,
                quick=args.quick,
                out=out,
                jobs=args.jobs,
                cluster=args.cluster,
                progress=args.progress,
                root=root,
                command=command,
            )
        except ClusterError as e:
            _error(f"{e}; finished runs are kept in {out}/cache: run the same command to resume")
            return 1
        except KeyboardInterrupt:
            _error(
                f"interrupted: finished runs are kept in {out}/cache; "
                "run the same command to resume"
            )
            return 130
    supported = sum(c.supported is True for r in results for c in r.claims)
    total = sum(len(r.claims) for r in results)
    unexpected = [
        (r.experiment.id, c.claim.text) for r in results for c in r.claims if not c.as_expected
    ]
    print(
        f"{len(results)} experiments, {sum(r.runs for r in results)} runs "
        f"({sum(r.simulated for r in results)} simulated now); {supported} of {total} claims "
        f"supported; report: {out / 'report' / 'index.html'}"
    )
    for exp_id, text in unexpected:
        print(f"  unexpected: {exp_id}: {text}")
    return 0
