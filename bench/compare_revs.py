"""The simulator's speed against another commit, side by side: `make bench-compare BASE=REV`.

Builds `startlab-bench` at BASE in a temporary git worktree, then runs every reference scenario
with both binaries in turn (A B A B …, each run its own process) and prints, per scenario, the
median CPU time of the simulation in each and the median of the pairwise ratios
(this tree / BASE). Because the runs alternate, a machine that speeds up or slows down affects
both sides alike; quote the ratio, not the times.

A scenario the base commit does not have (the BBR scenario `e` before BBR existed) is run
on this tree alone and reported as new.

It also compares what the runs computed (events, delivered bytes, drops, slow-start exit,
retransmissions): a scenario whose results differ between the two commits is reported, since a
change that should not alter behaviour must leave them bit-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("a", "b", "c", "d", "e")
# What a run computed: equal on both sides unless behaviour changed.
OUTCOME = (
    "events",
    "packets",
    "delivered_bytes",
    "drops",
    "ss_exit_s",
    "ss_exit_cwnd",
    "ss_exit_reason",
    "timeouts",
    "recoveries",
    "retransmissions",
)


def build(tree: Path, target: Path) -> Path:
    env = dict(os.environ, CARGO_TARGET_DIR=str(target))
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "startlab-bench"],
        cwd=tree,
        env=env,
        check=True,
    )
    return target / "release" / "startlab-bench"


def run_once(binary: Path, name: str) -> dict[str, object]:
    out = subprocess.run([str(binary), "--one", name], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def has_scenario(binary: Path, name: str) -> bool:
    return subprocess.run([str(binary), "--one", name], capture_output=True).returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1", help="the commit to compare with")
    parser.add_argument("--reps", type=int, default=5, help="runs of each side per scenario")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args()
    names = [s for s in args.scenarios.split(",") if s]

    here = build(ROOT, Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")))
    with tempfile.TemporaryDirectory(prefix="startlab-bench-base-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(tree), args.base],
            cwd=ROOT,
            check=True,
        )
        try:
            base = build(tree, Path(tmp) / "target")
            print(f"this tree vs {args.base}: {args.reps} alternating runs per scenario")
            header = f"{'scenario':<9} {'cpu here (s)':>12} {'cpu base (s)':>12} {'ratio':>7}"
            print(f"{header}  results")
            worst = 0.0
            for name in names:
                if not has_scenario(base, name):
                    cpu = statistics.median(
                        float(run_once(here, name)["cpu_s"])  # type: ignore[arg-type]
                        for _ in range(args.reps)
                    )
                    print(f"{name:<9} {cpu:>12.3f} {'-':>12} {'-':>7}  new (not in {args.base})")
                    continue
                ratios, here_cpu, base_cpu = [], [], []
                same = True
                for _ in range(args.reps):
                    a = run_once(here, name)
                    b = run_once(base, name)
                    here_cpu.append(float(a["cpu_s"]))  # type: ignore[arg-type]
                    base_cpu.append(float(b["cpu_s"]))  # type: ignore[arg-type]
                    ratios.append(here_cpu[-1] / base_cpu[-1])
                    same = same and all(a[k] == b[k] for k in OUTCOME)
                ratio = statistics.median(ratios)
                worst = max(worst, ratio)
                print(
                    f"{name:<9} {statistics.median(here_cpu):>12.3f} "
                    f"{statistics.median(base_cpu):>12.3f} {ratio:>7.3f}  "
                    f"{'identical' if same else 'DIFFERENT'}"
                )
            print(f"largest median ratio: {worst:.3f}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
