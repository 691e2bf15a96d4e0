"""The mirror's writes per second against one stand-in forge that enforces a write rate limit
(GitHub's secondary limit on content creation: 403 with retry-after past it), the limit obeyed:
the forge is left alone until its retry time, as `tireless poll --every` does.

    python bench/mirror.py [--issues 60] [--limit 20] [--repeats 3]

`--issues` finished jobs each need their state label and their outcome comment; `--limit` is the
forge's writes per second. Each figure is a median of --repeats; the ratio is the writes per
second achieved to the forge's limit (1.0: every write the forge allowed was used). Prints a
Markdown report (`make bench` runs it).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import time
from datetime import UTC, datetime
from typing import Any

import psycopg

from dev.embedded import embedded_postgres
from dev.standin import StandinForge
from tireless.forge import client_for
from tireless.forge.poll import poll_round
from tireless.migrate import migrate
from tireless.models import RepoToPoll
from tireless.store import JobStore

WORK = ["tireless", "tireless/implement"]


def drain(conninfo: str, issues: int, limit: int, repeat: int) -> tuple[float, int, int, int]:
    """Seconds to mirror `issues` delivered jobs, writes accepted, writes refused by the limit,
    rounds."""
    token = secrets.token_hex(8)
    repo = f"widgets{repeat}"
    with (
        psycopg.connect(conninfo, autocommit=True) as conn,
        StandinForge("github", token=token, write_limit=(limit, 1.0)) as forge,
    ):
        store = JobStore(conn)
        store.add_forge("gh", "github", forge.url)

        def clients(target: RepoToPoll) -> Any:
            return client_for(target.kind, target.base_url, token)

        for n in range(issues):
            forge.create_issue("acme", repo, f"issue {n}", WORK)
        store.track_repo("gh", "acme", repo)
        poll_round(store, "bench", clients=clients)  # the jobs
        while (job := store.claim_next("bench-worker", ["cc"])) is not None:
            store.transition(job.id, "delivered", "bench-worker", "done", token=job.claim_token)
        writes_before = len(forge.writes())
        refused_before = forge.limited_writes
        began = time.perf_counter()
        rounds = 0
        while backlog(store, repo):
            store.poll_soon("gh", "acme", repo)
            rounds += 1
            poll_round(store, "bench", clients=clients)
            wait_for_forge(store)
        seconds = time.perf_counter() - began
        refused = forge.limited_writes - refused_before
        accepted = len(forge.writes()) - writes_before - refused
        store.untrack_repo("gh", "acme", repo)
        store.record_forge_trouble("gh", None, None)
    return seconds, accepted, refused, rounds


def backlog(store: JobStore, repo: str) -> int:
    return sum(s.mirror_backlog for s in store.repo_status() if s.repo == repo)


def wait_for_forge(store: JobStore) -> None:
    """Sleep until the forge's rate limit resets, when the round stopped it."""
    until = next((s.forge_limited_until for s in store.repo_status() if s.forge == "gh"), None)
    if until is not None:
        time.sleep(max((until - datetime.now(UTC)).total_seconds(), 0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--issues", type=int, default=60)
    parser.add_argument("--limit", type=int, default=20, help="the forge's writes per second")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with embedded_postgres(fsync=False) as server:
        with psycopg.connect(server.conninfo(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        conninfo = server.conninfo("bench")
        migrate(conninfo)
        runs = [drain(conninfo, args.issues, args.limit, n) for n in range(args.repeats)]
    seconds = statistics.median(r[0] for r in runs)
    accepted = statistics.median(r[1] for r in runs)
    refused = statistics.median(r[2] for r in runs)
    rounds = statistics.median(r[3] for r in runs)
    rate = accepted / seconds
    print(f"### The mirror's writes per second, the forge's limit obeyed ({args.repeats} runs)\n")
    print("| finished jobs | forge limit (writes/s) | writes | refused by the limit | rounds "
          "| seconds | writes/s | ratio to the limit |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {args.issues} | {args.limit} | {accepted:.0f} | {refused:.0f} | {rounds:.0f}"
        f" | {seconds:.2f} | {rate:.1f} | {rate / args.limit:.2f} |"
    )


if __name__ == "__main__":
    main()
