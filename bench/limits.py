"""Issue 47's measure: the time that applying a lane's limits adds to an agent's start.

    python bench/limits.py [--samples 20] [--quick]

Each sample starts the same agent (`sh -c 'echo started; exec sleep 5'`) under the real bwrap
sandbox (tireless.runner.sandbox.Bubblewrap) twice, in turns: once with no limits and no control
group, once in a control group of its own with memory, processes, CPU and a sized /tmp
(tireless.runner.limits: the group made and its limits written, COMMAND's first process joining it
before it executes bwrap). The time runs from the call that makes the group (or starts the
sandbox, without one) to the agent's first line read from its output, and stops before the
attempt's end (the group's removal, which follows). Needs root, bubblewrap and writable control
groups. Prints the medians (min, max) in milliseconds and the median of the per-turn differences,
as Markdown.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import time
from pathlib import Path

from tireless.models import LaneLimits
from tireless.runner.limits import Cgroups, Unenforceable
from tireless.runner.sandbox import Bubblewrap

AGENT = ["sh", "-c", "echo started; exec sleep 5"]
LIMITS = LaneLimits(memory=512 << 20, cpus=1.0, pids=256, disk=1 << 30)


def one(sandbox: Bubblewrap, cgroups: Cgroups | None, name: str) -> float:
    """Seconds from the start (with a control group when `cgroups`) to the agent's first line."""
    began = time.perf_counter()
    group = None if cgroups is None else cgroups.attempt(name, LIMITS)
    try:
        contained = sandbox.start(
            AGENT, cwd=Path("/"), writable=[], env={"PATH": "/usr/bin:/bin"}, agent=None,
            enter=() if group is None else group.enter(),
            tmp_size=None if group is None else LIMITS.disk,
        )  # fmt: skip
        process = contained.process
        assert process.stdout is not None
        assert process.stdin is not None
        process.stdin.close()
        line = process.stdout.readline()
        took = time.perf_counter() - began
        assert line == b"started\n", line
        contained.signal(signal.SIGKILL)
        contained.end()
        process.stdout.close()
    finally:
        if group is not None:
            group.remove()
    return took


def milliseconds(values: list[float]) -> str:
    return (
        f"{statistics.median(values) * 1000:.1f} ms"
        f" ({min(values) * 1000:.1f}, {max(values) * 1000:.1f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="5 samples")
    args = parser.parse_args()
    samples = 5 if args.quick else args.samples
    try:
        cgroups = Cgroups.find()
    except Unenforceable as lacking:
        print(f"bench/limits.py: skipped: this host cannot bound an attempt: {lacking}")
        return 0
    sandbox = Bubblewrap()
    plain: list[float] = []
    limited: list[float] = []
    try:
        for i in range(samples + 1):  # the first turn warms the caches, and is not counted
            without = one(sandbox, None, f"bench{i}")
            with_limits = one(sandbox, cgroups, f"bench{i}")
            if i:
                plain.append(without)
                limited.append(with_limits)
    finally:
        cgroups.close()
    added = [b - a for a, b in zip(plain, limited, strict=True)]
    print(f"## Limits: the time they add to an agent's start (cgroup v{cgroups.version})\n")
    print(f"{samples} samples, in turns; medians (min, max).\n")
    print("| start | to the agent's first line |")
    print("|---|---|")
    print(f"| bwrap, no limits | {milliseconds(plain)} |")
    print(f"| bwrap in its control group, limits written | {milliseconds(limited)} |")
    print(
        f"| added (median of the per-turn differences) | {statistics.median(added) * 1000:.1f} ms |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
