"""The cost of links that change (docs/performance.md, "Links that change").

One NewReno flow, 100 Mbit/s, 100 ms, one BDP of buffer, 60 s (the reference scenario (a)),
with its bottleneck given five ways, each timed in its own process by ``startlab-bench --file``,
alternating, ``--reps`` times:

* ``constant``: ``rate = "100Mbps"`` (the baseline);
* ``steps``: the same 100 Mbit/s as a schedule that changes every 0.5 s (to the same value),
  which runs the fluid server;
* ``trace-1s``: a Mahimahi trace of 100 Mbit/s one second long, repeating;
* ``trace-600s``: the same rate as a trace ten minutes long (about 5 million lines, 30 MB),
  to show that memory does not grow with a trace's length;
* ``delay-steps``: a constant rate and a delay schedule.

Prints, per variant, the median wall time, how many times faster than real time, the peak
memory, and the ratio of wall times to ``constant``.

    .venv/bin/python bench/variable_links.py --bench target/release/startlab-bench --reps 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from startlab.paths import opportunities

SCENARIO = """name = "bench-{name}"
duration = "60s"
[topology]
kind = "dumbbell"
bottleneck = {{ {link}, queue = {{ kind = "droptail", limit = "1BDP" }} }}
access = {{ rate = "1Gbps", delay = "1ms" }}
[tcp]
mss = "1460B"
header = "40B"
[[flows]]
cc = "newreno"
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default="target/release/startlab-bench")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, seconds in (("1s", 1), ("600s", 600)):
            with (root / f"{name}.trace").open("w") as f:
                for ms in opportunities(lambda k: 100e6, seconds * 1000):
                    f.write(f"{ms}\n")
        links = {
            "constant": 'rate = "100Mbps", delay = "48ms"',
            "steps": 'rate = { steps = [["0s", "100Mbps"], ["0.5s", "100Mbps"]], '
            'period = "1s" }, delay = "48ms"',
            "trace-1s": f'rate = {{ trace = "{root / "1s.trace"}" }}, delay = "48ms"',
            "trace-600s": f'rate = {{ trace = "{root / "600s.trace"}" }}, delay = "48ms"',
            "delay-steps": 'rate = "100Mbps", '
            'delay = { steps = [["0s", "48ms"], ["0.5s", "48ms"]], period = "1s" }',
        }
        files = {}
        for name, link in links.items():
            files[name] = root / f"{name}.toml"
            files[name].write_text(SCENARIO.format(name=name, link=link))
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in links}
        for _ in range(args.reps):
            for name, path in files.items():
                out = subprocess.run(
                    [args.bench, "--file", str(path)], capture_output=True, text=True, check=True
                )
                runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
        base = statistics.median(r["wall_s"] for r in runs["constant"])
        print(
            f"{'variant':<12} {'wall s':>8} {'x real time':>12} {'peak MiB':>9} {'/constant':>10}"
            f" {'packets':>9} {'util':>6}"
        )
        for name, rs in runs.items():
            wall = statistics.median(r["wall_s"] for r in rs)
            peak = max(r["peak_kib"] for r in rs) / 1024
            print(
                f"{name:<12} {wall:8.3f} {60 / wall:12.0f} {peak:9.1f} {wall / base:10.3f}"
                f" {int(rs[0]['packets']):9d} {rs[0]['utilization']:6.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
