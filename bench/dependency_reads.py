"""make bench: the requests a poll round spends reading the forges' own dependency relations
(issue 35), on a stand-in Gitea and a stand-in GitHub. Prints a markdown table.

    python bench/dependency_reads.py           100 repositories
    python bench/dependency_reads.py --quick   20 repositories

Each tracked repository holds two issues that ask for work and a third that does not; one of the
two is blocked by the third on the forge (Gitea's dependency, GitHub's blocked-by), so its job
waits. After the first (full) read and the rounds that let the mirror's label writes settle, one
`poll_round` over every repository is counted three times: nothing changed (incremental reads),
one issue changed in each repository (its title edited), and a full listing with nothing changed
(which reads the relations of each waiting job's issue again). Only the relation requests
(`.../dependencies`, `.../dependencies/blocked_by`, `.../sub_issues`) are counted; the listings
are what they were before.
"""

from __future__ import annotations

import argparse
import os
from datetime import timedelta

import psycopg

from dev.embedded import embedded_postgres
from dev.standin import Flavour, StandinForge
from tireless.forge import token_variable
from tireless.forge.poll import client_factory, poll_round
from tireless.migrate import migrate
from tireless.store import JobStore

TOKEN = "tok-bench-dependencies"
OWNER = "bench"
ASK = ["tireless", "tireless/implement"]
HOUR = timedelta(hours=1)
RELATIONS = ("dependencies", "blocked_by", "sub_issues")


def measure(conninfo: str, flavour: Flavour, repos: int) -> dict[str, int]:
    """The relation requests of each counted round, by name."""
    with (
        psycopg.connect(conninfo, autocommit=True) as conn,
        StandinForge(flavour, token=TOKEN) as forge,
    ):
        store = JobStore(conn)
        store.add_forge(flavour, flavour, forge.url)
        os.environ[token_variable(flavour)] = TOKEN
        clients = client_factory(timeout=10.0)
        names = [f"repo{n:03d}" for n in range(repos)]
        for name in names:
            forge.create_repo(OWNER, name)
            store.track_repo(flavour, OWNER, name)
            free = forge.create_issue(OWNER, name, "Free to start", ASK)
            blocked = forge.create_issue(OWNER, name, "Blocked", ASK)
            blocker = forge.create_issue(OWNER, name, "The blocker", ["bug"])
            forge.add_dependency(OWNER, name, blocked, blocker)
            assert free == 1

        def counted_round() -> int:
            for name in names:
                store.poll_soon(flavour, OWNER, name)
            asked = len(forge.requests)
            reports = poll_round(
                store, "bench-poller", clients=clients, next_poll_in=HOUR, max_repos=repos
            )
            failed = [(r.repo, r.error) for r in reports if r.error or r.warning]
            if failed or len(reports) != repos:
                raise RuntimeError(f"{flavour}: a round read {len(reports)} repositories: {failed}")
            return sum(
                1
                for r in forge.requests[asked:]
                if r.method == "GET" and r.path.rsplit("/", 1)[-1] in RELATIONS
            )

        figures = {"first (full) read": counted_round()}
        for _ in range(3):  # the mirror shows pending and waiting; the next rounds read its writes
            counted_round()
        waiting = conn.execute(
            "SELECT count(*) FROM tireless.job WHERE waiting_on IS NOT NULL"
        ).fetchone()
        if waiting is None or waiting[0] != repos:
            raise RuntimeError(f"{flavour}: {waiting} waiting jobs, not {repos}")
        figures["nothing changed"] = counted_round()
        for name in names:
            forge.edit(OWNER, name, 1, lambda issue: {"title": issue.title + "!"})
        figures["one issue changed per repository"] = counted_round()
        conn.execute("UPDATE tireless.repo_poll SET reads_since_full = 9")
        figures["a full listing, nothing changed"] = counted_round()
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="20 repositories")
    parser.add_argument("--repos", type=int, default=None, help="tracked repositories (100)")
    args = parser.parse_args()
    repos = args.repos or (20 if args.quick else 100)
    results: dict[str, dict[str, int]] = {}
    with embedded_postgres(fsync=True) as server:
        flavours: tuple[Flavour, ...] = ("gitea", "github")
        for flavour in flavours:
            with psycopg.connect(server.conninfo(), autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE deps_{flavour}")
            migrate(server.conninfo(f"deps_{flavour}"))
            results[flavour] = measure(server.conninfo(f"deps_{flavour}"), flavour, repos)
    print(
        f"Dependency relation reads per poll round, {repos} repositories (one waiting job each).\n"
    )
    print("| round | Gitea | GitHub |")
    print("|---|---:|---:|")
    for name in results["gitea"]:
        print(f"| {name} | {results['gitea'][name]} | {results['github'][name]} |")


if __name__ == "__main__":
    main()
