"""How fast a job's workspace is ready from the per-host cache (tireless.runner.workspace) against
a fresh `git clone` of the same repository, and what keeping the cache fresh costs.

    python bench/workspace.py [--commits 20000] [--files 400] [--repeats 9]

The repository is generated with `git fast-import` (each commit changes one of `--files` files)
and served as `file://` (git's transport, as over the network: upload-pack packs what the clone
asks for). Figures are medians of `--repeats` runs, in milliseconds:
- fresh clone: `git clone file://...` with its checkout, what a runner without a cache does;
- workspace, warm cache: `prepare_workspace`, its refresh (a fetch that finds nothing new)
  included, then a checkout;
- workspace, no refresh: the same without the fetch;
- history alone / the tree's checkout alone: the two parts of either, apart (a fresh clone
  moves the whole history, the cache none of it; both write every file of the tree);
- refresh, nothing new / one new commit: the cache's `fetch --prune` alone.
Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tireless.runner.workspace import RepoCache, prepare_workspace, remove_tree

ENV = {
    "PATH": os.environ.get("PATH", os.defpath),
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "HOME": "/nonexistent",
    "LC_ALL": "C",
}


def sh(*args: str, stdin: bytes | None = None) -> None:
    subprocess.run(["git", *args], env=ENV, input=stdin, capture_output=True, check=True)


def generate(repository: Path, commits: int, files: int) -> None:
    """A bare repository of `commits` commits on main, made by one fast-import stream."""
    sh("init", "--quiet", "--bare", "-b", "main", str(repository))
    parts: list[bytes] = []
    for n in range(commits):
        message = f"change {n}\n".encode()
        content = f"line {n}\n".encode() * (1 + n % 7)
        path = f"src/module{n % 20}/file{n % files}.py"
        parts += [
            b"commit refs/heads/main\n",
            b"committer Bench <bench@example.com> %d +0000\n" % (1_600_000_000 + n),
            b"data %d\n%s" % (len(message), message),
            b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(content), content),
        ]
    sh(f"--git-dir={repository}", "fast-import", "--quiet", stdin=b"".join(parts))
    sh(f"--git-dir={repository}", "gc", "--quiet")  # served packed, as a forge serves it


def medians_ms(repeats: int, runs: dict[str, Callable[[int], None]]) -> dict[str, float]:
    """The median of each run, in milliseconds; the runs take turns, round by round, so a change
    in the machine's load (other work on the host) falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for n in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            run(n)
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=9)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        source = root / "source.git"
        started = time.perf_counter()
        generate(source, options.commits, options.files)
        generated = time.perf_counter() - started
        url = f"file://{source}"
        jobs = root / "jobs"
        jobs.mkdir()
        cache = RepoCache(root / "cache", allow_file_urls=True)
        started = time.perf_counter()
        mirror = cache.refresh(url, None)
        cold = (time.perf_counter() - started) * 1000
        head = (
            subprocess.run(
                ["git", f"--git-dir={mirror}", "rev-parse", "HEAD"], env=ENV, capture_output=True
            )
            .stdout.decode()
            .strip()
        )

        def workspace(refresh: bool) -> Callable[[int], None]:
            def run(n: int) -> None:
                prepare_workspace(
                    cache, url, None, jobs / f"ws{refresh}{n}", refresh=refresh
                ).remove()

            return run

        def new_commit_then_refresh(n: int) -> None:
            stream = (
                f"commit refs/heads/main\ncommitter Bench <b@example.com> {1_700_000_000 + n} +0000\n"
                f"data 4\nnew\nfrom refs/heads/main^0\nM 100644 inline new{n}.txt\ndata 2\n{n}\n\n"
            )
            sh(f"--git-dir={source}", "fast-import", "--quiet", stdin=stream.encode())
            cache.refresh(url, None)

        def refresh_only(n: int) -> None:
            cache.refresh(url, None)

        def shared_then_checkout(n: int) -> None:
            sh("clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(jobs / f"sh{n}"))

        runs: dict[str, Callable[[int], None]] = {
            "fresh `git clone file://` (with checkout)": lambda n: sh(
                "clone", "--quiet", url, str(jobs / f"clone{n}")
            ),
            "workspace, warm cache (refresh included)": workspace(True),
            "workspace, warm cache, no refresh": workspace(False),
            "history alone: fresh `git clone --no-checkout file://`": lambda n: sh(
                "clone", "--quiet", "--no-checkout", url, str(jobs / f"history{n}")
            ),
            "history alone: `clone --shared --no-checkout` of the mirror": shared_then_checkout,
            "the tree's checkout alone (both pay it)": lambda n: sh(
                "-C", str(jobs / f"sh{n}"), "checkout", "--quiet", "-B", "main", head
            ),
            "cache refresh, nothing new": refresh_only,
            "cache refresh, one new commit": new_commit_then_refresh,
        }
        medians = medians_ms(options.repeats, runs)
        size = sum(cache.sizes().values())
        for leftover in jobs.iterdir():
            remove_tree(leftover)

    fresh = medians["fresh `git clone file://` (with checkout)"]
    print(f"# Workspace from the cache: {options.commits} commits, {options.files} files\n")
    print(f"Repository generated in {generated:.1f} s; the cache's first mirror took {cold:.0f} ms")
    print(f"({size / 1e6:.1f} MB). Medians of {options.repeats} rounds (each run once a round):\n")
    print("| what | median ms | vs fresh clone |")
    print("|---|---:|---:|")
    for name, value in medians.items():
        print(f"| {name} | {value:.0f} | {fresh / value:.1f}x |")


if __name__ == "__main__":
    main()
