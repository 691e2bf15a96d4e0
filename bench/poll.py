"""What a poll costs the database when nothing changed, next to the first poll; a round over
many tracked repositories where nothing changed (requests per repository, the round's time next
to a round over 10); and `enqueue` of a batch in which 1 % of the issues changed, next to the
unconditional enqueue of 0006 (before the work rule).

    python bench/poll.py [--issues 1000] [--repos 1000] [--batch 10000] [--repeats 3]

Each figure is a median of --repeats; rows written are the tireless tables' inserted, updated and
deleted row versions (pg_stat_user_tables), WAL the bytes the server wrote meanwhile. Prints a
Markdown report (`make bench` runs it; docs/work-rule.md quotes a run).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from statements import migrate_until

from dev.embedded import embedded_postgres
from dev.standin import StandinForge
from tireless.forge import client_for
from tireless.forge.poll import Report, poll_round
from tireless.models import RepoToPoll
from tireless.store import JobStore

WORK = ["tireless", "tireless/implement"]
REROUTED = [*WORK, "tireless/agent:oc"]
WRITTEN = (
    "SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables"
    " WHERE schemaname = 'tireless'"
)


class Meter:
    """Rows written (by table) and WAL bytes on one connection, around one piece of work."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.tables: dict[str, int] = {}

    def _now(self) -> tuple[dict[str, int], str]:
        self.conn.execute("SELECT pg_stat_force_next_flush()")  # flushed when it goes idle
        self.conn.execute("SELECT pg_stat_clear_snapshot()")
        rows = {name: int(count) for name, count in self.conn.execute(WRITTEN).fetchall()}
        (lsn,) = self.conn.execute("SELECT pg_current_wal_lsn()::text").fetchone() or ("0/0",)
        return rows, lsn

    def measure(self, work: Callable[[], object]) -> tuple[float, int, int]:
        """Seconds, rows written, WAL bytes; `tables` keeps the rows written by table."""
        rows_before, lsn_before = self._now()
        began = time.perf_counter()
        work()
        seconds = time.perf_counter() - began
        rows_after, lsn_after = self._now()
        (wal,) = self.conn.execute(
            "SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint", (lsn_after, lsn_before)
        ).fetchone() or (0,)
        self.tables = {
            name: count - rows_before.get(name, 0)
            for name, count in sorted(rows_after.items())
            if count != rows_before.get(name, 0)
        }
        return seconds, sum(self.tables.values()), int(wal)


def median_row(name: str, samples: list[tuple[float, int, int]], base: float) -> str:
    seconds = statistics.median(s for s, _, _ in samples)
    rows = statistics.median(r for _, r, _ in samples)
    wal = statistics.median(w for _, _, w in samples)
    return f"| {name} | {seconds * 1000:.1f} | {seconds / base:.2f} | {rows:.0f} | {wal:.0f} |"


def polls(conninfo: str, issues: int, repeats: int) -> list[str]:
    """First poll of a repository of `issues` open issues asking for work; the polls after it, in
    which the mirror puts a state label on every issue (a round writes a bounded number); then
    two polls in which nothing changed (the overlap reads every issue again). Over HTTP from the
    stand-in Gitea, a fresh repository per repeat."""
    token = secrets.token_hex(8)
    first: list[tuple[float, int, int]] = []
    mirrored: list[tuple[float, int, int]] = []
    again: list[tuple[float, int, int]] = []
    with (
        psycopg.connect(conninfo, autocommit=True) as conn,
        StandinForge("gitea", token=token) as forge,
    ):
        store = JobStore(conn)
        meter = Meter(conn)
        store.add_forge("gitea", "gitea", forge.url)

        def clients(target: RepoToPoll) -> Any:
            return client_for(target.kind, target.base_url, token)

        def poll(repo: str) -> Report:
            store.poll_soon("gitea", "acme", repo)
            (report,) = poll_round(store, "bench", clients=clients)
            assert report.error is None, report.error
            return report

        for repeat in range(repeats):
            repo = f"widgets{repeat}"
            for n in range(issues):
                forge.create_issue("acme", repo, f"issue {n}", WORK)
            store.track_repo("gitea", "acme", repo)
            first.append(meter.measure(partial(poll, repo)))
            reports: list[Report] = []
            mirrored.append(meter.measure(partial(mirror_all, partial(poll, repo), reports)))
            assert sum(report.mirrored for report in reports) == issues
            for _ in range(2):
                again.append(meter.measure(partial(poll, repo)))
            written = meter.tables
            store.untrack_repo("gitea", "acme", repo)
    base = statistics.median(s for s, _, _ in first)
    by_table = ", ".join(f"{name} {count}" for name, count in written.items()) or "none"
    return [
        f"### A poll where nothing changed ({issues} open issues, stand-in Gitea over HTTP)\n",
        "| poll | ms | ratio to the first poll | rows written | WAL bytes |",
        "|---|---:|---:|---:|---:|",
        median_row("first poll (every issue new)", first, base),
        median_row("the polls until the mirror labelled every issue", mirrored, base),
        median_row("a poll where nothing changed", again, base),
        f"\nThe rows a poll where nothing changed wrote, by table: {by_table}.",
    ]


def rounds(conninfo: str, many: int, repeats: int) -> list[str]:
    """Rounds where nothing changed over `many` and over 10 tracked repositories of a stand-in
    GitHub, each with one issue that does not ask for work: requests sent per repository (the
    listing's ETag makes it one conditional request, answered 304) and the round's time."""
    lines = [
        f"\n### A round where nothing changed (stand-in GitHub over HTTP, medians of {repeats})\n",
        "| tracked repositories | requests per repository | round ms | ms per repository |"
        " ratio to 10 |",
        "|---:|---:|---:|---:|---:|",
    ]
    base = 0.0
    for count in (10, many):
        measured = quiet_rounds(conninfo, count, repeats)
        seconds = statistics.median(s for s, _ in measured)
        requests = statistics.median(r for _, r in measured) / count
        base = base or seconds
        lines.append(
            f"| {count} | {requests:.2f} | {seconds * 1000:.0f} | {seconds * 1000 / count:.1f}"
            f" | {seconds / base:.1f} |"
        )
    return lines


def quiet_rounds(conninfo: str, count: int, repeats: int) -> list[tuple[float, int]]:
    """Seconds and requests of `repeats` rounds over `count` repositories where nothing changed.
    The first two rounds (the full listing, then the read that takes the ETag) are not measured;
    the tenth read lists in full again, so `repeats` (up to 7) rounds from the third are."""
    token = secrets.token_hex(8)
    with (
        psycopg.connect(conninfo, autocommit=True) as conn,
        StandinForge("github", token=token) as forge,
    ):
        store = JobStore(conn)
        name = f"gh{count}"
        store.add_forge(name, "github", forge.url)
        for n in range(count):
            forge.create_issue("acme", f"repo{n}", "nothing to do", ["bug"])
            store.track_repo(name, "acme", f"repo{n}")

        def clients(target: RepoToPoll) -> Any:
            return client_for(target.kind, target.base_url, token)

        measured = []
        for round_number in range(2 + repeats):
            conn.execute("UPDATE tireless.repo_poll SET next_poll_at = now()")
            sent = len(forge.requests)
            began = time.perf_counter()
            reports = poll_round(store, "bench", clients=clients, max_repos=count)
            seconds = time.perf_counter() - began
            assert len(reports) == count
            assert not any(r.error for r in reports)
            if round_number >= 2:
                measured.append((seconds, len(forge.requests) - sent))
        for n in range(count):
            store.untrack_repo(name, "acme", f"repo{n}")
    return measured


def mirror_all(poll: Callable[[], Report], reports: list[Report]) -> None:
    """Poll until a round mirrors nothing more."""
    while not reports or reports[-1].mirrored:
        reports.append(poll())


def batch(size: int, changed: int, at: datetime, old_format: bool) -> Jsonb:
    """`size` issues of acme/gadgets asking for work; the first `changed` re-routed to lane oc."""
    items = []
    for n in range(1, size + 1):
        item: dict[str, Any] = {"forge": "gitea", "owner": "acme", "repo": "gadgets", "number": n}
        item |= {"state": "open", "labels": REROUTED if n <= changed else WORK}
        if not old_format:
            item["updated_at"] = (at + timedelta(seconds=1 if n <= changed else 0)).isoformat()
        items.append(item)
    return Jsonb(items)


def enqueues(server_conninfo: Callable[[str], str], size: int, repeats: int) -> list[str]:
    """Enqueue `size` issues, then the same batch with 1 % of them changed: with the work rule,
    and with 0006's unconditional enqueue, each in a fresh database per repeat."""
    changed = size // 100
    results: dict[str, list[tuple[float, int, int]]] = {"0006": [], "now": []}
    for repeat in range(repeats):
        for schema in ("0006", "now"):
            name = f"enqueue_{schema}_{repeat}"
            with psycopg.connect(server_conninfo("postgres"), autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name}")
            conninfo = server_conninfo(name)
            migrate_until(conninfo, "0006_views" if schema == "0006" else None)
            old = schema == "0006"
            at = datetime.now(UTC)
            with psycopg.connect(conninfo, autocommit=True) as conn:
                if not old:  # track_repo needs a registered forge since 0030's release
                    conn.execute(
                        "SELECT tireless.add_forge('gitea', 'gitea', 'https://gitea.invalid')"
                    )
                conn.execute("SELECT tireless.track_repo('gitea', 'acme', 'gadgets')")
                conn.execute("SELECT tireless.enqueue(%s)", (batch(size, 0, at, old),))
                second = batch(size, changed, at, old)
                results[schema].append(
                    Meter(conn).measure(
                        partial(conn.execute, "SELECT tireless.enqueue(%s)", (second,))
                    )
                )
    base = statistics.median(s for s, _, _ in results["0006"])
    return [
        f"\n### `enqueue` of {size} known issues, {changed} of them changed\n",
        "| enqueue | ms | ratio to 0006 | rows written | WAL bytes |",
        "|---|---:|---:|---:|---:|",
        median_row("0006, unconditional", results["0006"], base),
        median_row("with the work rule", results["now"], base),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--issues", type=int, default=1000)
    parser.add_argument("--repos", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with embedded_postgres(fsync=True) as server:
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE polls")
        migrate_until(server.conninfo("polls"), None)
        report = [f"## Polls and enqueue (medians of {args.repeats})\n"]
        report += polls(server.conninfo("polls"), args.issues, args.repeats)
        report += rounds(server.conninfo("polls"), args.repos, min(max(args.repeats, 3), 7))
        report += enqueues(server.conninfo, args.batch, args.repeats)
    print("\n".join(report))


if __name__ == "__main__":
    main()
