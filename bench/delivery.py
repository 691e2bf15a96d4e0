"""What delivery adds to a job (issue 33's Measure): the wall time of `tireless work --once`
running an implement job's COMMAND alone against the same with `--deliver` (the workspace from the
host's cache, the change committed and pushed by the runner), and the mirror's round after each
(the one that opens the pull request), in one run against the stand-in forge on 127.0.0.1.

    python bench/delivery.py [--jobs 15] [--files 200] [--commits 300]

A private PostgreSQL with fsync and synchronous_commit on (as bench/run.py); a gitea-flavoured
stand-in forge serving git through git's http-backend, with two repositories of the same tree
(`--files` files, `--commits` commits of history): the COMMAND-only jobs' issues in one (lane
`plain`), the delivered jobs' in the other (lane `cc`), so each variant claims only its own job
and each repository's mirror round writes only its own job's outcome. Each variant's job is one
`python -m tireless work --once ... -- sh -c 'echo x >> f.txt'` process, timed from start to exit,
`--deliver --state-dir DIR` added for the delivered one; then that repository's poll round (the
mirror: the job's state label and outcome comment, and for a delivered job its pull request). The
variants take turns job by job, the first of each turn alternating, so the machine's noise (it is
shared) falls on both alike; one untimed pair first warms the cache (its cold job is reported).
Figures are medians (min, max) over the --jobs pairs, in milliseconds; no figure is a pass or a
fail.

Then what one job costs the store in a worker that goes on (issue 45's Measure): one `tireless work`
process of each variant (no --once: it finishes each job and claims its next) runs --chain more
jobs of its repository and drains itself on the last; its transactions (the database's
xact_commit and xact_rollback, nothing else running) and round trips (ReadyForQuery messages,
counted by a relay in front of the server, bench/roundtrips.py) per job, and their ratio to the
COMMAND-only worker's. --chain-only runs that alone. Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import psycopg
from roundtrips import RoundTrips, round_trips

from dev.embedded import SUPERUSER, embedded_postgres
from dev.standin import StandinForge
from tireless.forge import token_variable
from tireless.forge.poll import client_factory, poll_round
from tireless.migrate import migrate
from tireless.store import JobStore

FORGE = "gitea"
OWNER = "acme"
TOKEN = "tok-bench-delivery-5c1f"
PLAIN, DELIVERED = "plain", "delivered"  # the repositories
LANES = {PLAIN: "plain", DELIVERED: "cc"}
COMMAND = ["sh", "-c", "echo x >> f.txt"]
READ_TRANSACTIONS = 3
"""What a read of the database's transactions adds to the next one (Bench.transactions)."""
HOUR = timedelta(hours=1)  # the next poll of a repository: only poll_soon makes one due


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def tree(files: int) -> dict[str, str]:
    """A small project: `files` Python modules of 20 to 80 lines in ten packages, and a README."""
    modules = {
        f"src/pkg{n % 10}/module{n}.py": "".join(
            f"def function_{n}_{line}(value: int) -> int:\n    return value + {line}\n\n"
            for line in range(10 + n % 31)
        )
        for n in range(files - 1)
    }
    return {"README.md": "# widgets\n\nA project to deliver changes to.\n"} | modules


def seed(forge: StandinForge, repo: str, files: dict[str, str], commits: int) -> None:
    """The tree in one commit, then `commits - 1` more, each appending a line to one of ten of its
    files in turn (runs of commits on one file), then packed, as a forge serves it."""
    forge.seed_git(OWNER, repo, files)
    touched = sorted(files)[:: max(len(files) // 10, 1)][:10]
    left = commits - 1
    for n, name in enumerate(touched):
        run = left // (len(touched) - n)
        if run > 0:
            forge.seed_git(OWNER, repo, {name: files[name]}, commits=run, message=f"work on {name}")
        left -= run
    subprocess.run(
        ["git", f"--git-dir={forge.git.path(OWNER, repo)}", "gc", "--quiet"],
        capture_output=True,
        check=True,
    )


class Bench:
    """The database, the forge and the two repositories, with what runs one job and one round."""

    def __init__(self, conninfo: str, forge: StandinForge, root: Path) -> None:
        self.conninfo, self.forge, self.root = conninfo, forge, root
        self.conn = psycopg.connect(conninfo, autocommit=True)
        self.store = JobStore(self.conn)
        self.clients = client_factory(timeout=10.0)
        self.environment = os.environ | {
            "DATABASE_URL": conninfo,
            token_variable(FORGE): TOKEN,
        }
        self.plain_dir = root / "plain-cwd"  # where COMMAND alone writes its f.txt
        self.plain_dir.mkdir()
        self.state_dir = root / "state"  # the runner's cache of repositories and workspaces
        self.requests: dict[str, list[int]] = {PLAIN: [], DELIVERED: []}  # the forge's, a round

    def ask(self, repo: str, count: int) -> list[int]:
        """`count` implement issues in `repo`, routed to its lane; their numbers."""
        labels = ["tireless", "tireless/implement", f"tireless/agent:{LANES[repo]}"]
        return [self.forge.create_issue(OWNER, repo, f"Change {n}", labels) for n in range(count)]

    def round(self, repo: str, *, mirrors_all: bool = True) -> float:
        """One poll round of `repo` alone (the others not due): its mirror, then its read;
        seconds. `mirrors_all`: nothing is left to write after it (the read made no job)."""
        self.store.poll_soon(FORGE, OWNER, repo)
        asked = len(self.forge.requests)
        started = time.perf_counter()
        reports = poll_round(self.store, "bench-poller", clients=self.clients, next_poll_in=HOUR)
        seconds = time.perf_counter() - started
        self.requests[repo].append(len(self.forge.requests) - asked)
        names = [(r.repo, r.error, r.mirror_error) for r in reports]
        if names != [(repo, None, None)]:
            raise RuntimeError(f"the round of {repo}: {names}")
        if mirrors_all and (backlog := self.backlog(repo)) != 0:
            raise RuntimeError(f"{repo}: {backlog} writes left after its round")
        return seconds

    def backlog(self, repo: str) -> int:
        return sum(s.mirror_backlog for s in self.store.repo_status() if s.repo == repo)

    def work(self, repo: str, number: int) -> float:
        """One `tireless work --once` process claiming `repo`'s next job (issue `number`), with
        delivery for DELIVERED; its seconds from start to exit."""
        deliver = ["--deliver", "--state-dir", str(self.state_dir)] if repo == DELIVERED else []
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tireless", "work", "--once", "--worker", "w",
             "--lane", LANES[repo], *deliver, "--", *COMMAND],
            cwd=self.plain_dir, env=self.environment, capture_output=True, text=True,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        state = self.conn.execute(
            "SELECT state::text, note FROM tireless.job WHERE repo = %s AND number = %s",
            [repo, number],
        ).fetchone()
        if done.returncode != 0 or state != ("delivered", None):
            raise RuntimeError(f"{repo}#{number}: exit {done.returncode}, {state}: {done.stderr}")
        if (
            repo == DELIVERED
            and self.forge.file_at(OWNER, repo, f"tireless/{number}", "f.txt") != "x\n"
        ):
            raise RuntimeError(f"{repo}#{number}: its change was not pushed")  # fmt: skip
        return seconds

    def pulls(self, repo: str) -> int:
        return len(self.forge.pulls_of(OWNER, repo))

    def transactions(self) -> int:
        """The database's transactions so far, once no connection but the bench's is open (a
        backend's counts are in when it has exited). The bench's own are flushed before the read
        and after it (pg_stat_force_next_flush), so that each read adds exactly three: its
        transaction and the two flushes', one before the next read and two after."""
        self.conn.execute("SELECT pg_stat_force_next_flush()")
        with self.conn.transaction():
            while True:
                self.conn.execute("SELECT pg_stat_clear_snapshot()")
                others = self.conn.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchone()
                if others == (0,):
                    break
                time.sleep(0.05)
            row = self.conn.execute(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database"
                " WHERE datname = current_database()"
            ).fetchone()
        self.conn.execute("SELECT pg_stat_force_next_flush()")
        assert row is not None
        return int(row[0])

    def chain(self, repo: str, numbers: list[int], relay: RoundTrips) -> tuple[int, int]:
        """One `tireless work` (no --once) running `repo`'s jobs `numbers`, through the relay, until
        it drains itself on the last; its transactions and round trips."""
        ids: dict[int, int] = dict(
            self.conn.execute(
                "SELECT number, id FROM tireless.job WHERE repo = %s AND state = 'pending'", [repo]
            ).fetchall()
        )
        if sorted(ids) != sorted(numbers):
            raise RuntimeError(f"{repo}: pending {sorted(ids)}, expected {numbers}")
        last = ids[numbers[-1]]
        deliver = ["--deliver", "--state-dir", str(self.state_dir)] if repo == DELIVERED else []
        script = f'{COMMAND[2]}; [ "$TIRELESS_JOB_ID" = {last} ] && kill -USR1 $PPID; true'
        dbname = self.conn.info.dbname
        environment = self.environment | {"DATABASE_URL": relay.conninfo(dbname, SUPERUSER)}
        before, sent = self.transactions(), relay.count
        done = subprocess.run(
            [sys.executable, "-m", "tireless", "work", "--worker", f"chain-{repo}",
             "--lane", LANES[repo], "--drain-on", "SIGUSR1", "--sandbox", "none", *deliver,
             "--", "sh", "-c", script],
            cwd=self.plain_dir, env=environment, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        trips = relay.count - sent
        transactions = self.transactions() - before - READ_TRANSACTIONS
        states = self.conn.execute(
            "SELECT DISTINCT state::text FROM tireless.job WHERE repo = %s AND number = ANY(%s)",
            [repo, numbers],
        ).fetchall()
        if done.returncode != 0 or states != [("delivered",)]:
            raise RuntimeError(f"{repo}: exit {done.returncode}, {states}: {done.stderr}")
        return transactions, trips


def stats(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def row(name: str, values: list[float], unit: str = "ms") -> str:
    median, low, high = stats(values)
    if unit == "x":
        return f"| {name} | {median:.2f}x | {low:.2f}x | {high:.2f}x |"
    return f"| {name} | {median * 1000:.0f} | {low * 1000:.0f} | {high * 1000:.0f} |"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=15, help="timed jobs of each variant")
    parser.add_argument("--files", type=int, default=200, help="files in the repository's tree")
    parser.add_argument("--commits", type=int, default=300, help="commits in its history")
    parser.add_argument("--chain", type=int, default=20, help="jobs of each worker that goes on")
    parser.add_argument("--chain-only", action="store_true", help="only the worker that goes on")
    options = parser.parse_args()
    began = time.perf_counter()
    with (
        tempfile.TemporaryDirectory() as scratch,
        embedded_postgres(fsync=True) as server,
        StandinForge("gitea", token=TOKEN) as forge,
    ):
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE bench")
        conninfo = server.conninfo("bench")
        migrate(conninfo)
        os.environ[token_variable(FORGE)] = TOKEN  # the poller's, as `tireless poll` reads it
        bench = Bench(conninfo, forge, Path(scratch))
        with bench.conn, round_trips(server.port) as relay:
            report = measure(bench, options, relay)
    report.append(f"\nThe whole run took {time.perf_counter() - began:.0f} s.")
    print("\n".join(report))


def measure(bench: Bench, options: argparse.Namespace, relay: RoundTrips) -> list[str]:
    store, forge = bench.store, bench.forge
    store.add_forge(FORGE, "gitea", forge.url)
    files = tree(options.files)
    started = time.perf_counter()
    for repo in (PLAIN, DELIVERED):
        seed(forge, repo, files, options.commits)
    log(f"seeded two repositories in {time.perf_counter() - started:.1f} s")
    for repo in (PLAIN, DELIVERED):
        store.track_repo(FORGE, OWNER, repo)
        bench.round(repo, mirrors_all=False)  # its first read, of no issue yet
    if options.chain_only:
        return chained(bench, options, relay)
    report = timed(bench, options)
    return [*report, "", *chained(bench, options, relay)]


def pending(bench: Bench, expected: int) -> None:
    made = bench.conn.execute("SELECT count(*) FROM tireless.job WHERE state = 'pending'")
    if (count := made.fetchone()) != (expected,):
        raise RuntimeError(f"expected {expected} pending jobs, found {count}")


def chained(bench: Bench, options: argparse.Namespace, relay: RoundTrips) -> list[str]:
    """Transactions and round trips per job of a worker that goes on, of each variant."""
    numbers = {repo: bench.ask(repo, options.chain) for repo in (PLAIN, DELIVERED)}
    for repo in (PLAIN, DELIVERED):
        bench.round(repo, mirrors_all=False)  # the read: the jobs
    pending(bench, 2 * options.chain)
    counts = {repo: bench.chain(repo, numbers[repo], relay) for repo in (PLAIN, DELIVERED)}
    per_job = {repo: (t / options.chain, r / options.chain) for repo, (t, r) in counts.items()}
    log(f"a worker that goes on, per job: {per_job}")
    (plain_t, plain_r), (delivered_t, delivered_r) = per_job[PLAIN], per_job[DELIVERED]
    return [
        f"# What one job costs the store in a worker that goes on: {options.chain} jobs of each\n",
        "One `tireless work` process of each variant (no `--once`: each finish also claims the"
        " next job) ran its repository's jobs and drained itself on the last (`--sandbox none`);"
        " (b) with `--deliver`. Transactions: the database's `xact_commit + xact_rollback` over"
        " the run, nothing else running; round trips: ReadyForQuery messages the server sent the"
        " worker (bench/roundtrips.py). Per job, the worker's start and end included.\n",
        "| per job | transactions | round trips |",
        "|---|---:|---:|",
        f"| (a) worker, COMMAND only | {plain_t:.2f} | {plain_r:.2f} |",
        f"| (b) worker with `--deliver` | {delivered_t:.2f} | {delivered_r:.2f} |",
        f"| ratio b / a | {delivered_t / plain_t:.2f}x | {delivered_r / plain_r:.2f}x |",
    ]


def timed(bench: Bench, options: argparse.Namespace) -> list[str]:
    numbers = {repo: bench.ask(repo, options.jobs + 1) for repo in (PLAIN, DELIVERED)}
    for repo in (PLAIN, DELIVERED):
        bench.round(repo, mirrors_all=False)  # the read: the jobs
        bench.round(repo)  # the mirror: their `pending` labels, so a later round has one job's
    pending(bench, 2 * (options.jobs + 1))

    # The warm-up pair, untimed in the figures: the cache's first mirror of the repository.
    cold = bench.work(DELIVERED, numbers[DELIVERED][0])
    bench.round(DELIVERED)
    bench.work(PLAIN, numbers[PLAIN][0])
    bench.round(PLAIN)
    log(f"warm-up: the first delivered job (cold cache) took {cold * 1000:.0f} ms")

    jobs: dict[str, list[float]] = {PLAIN: [], DELIVERED: []}
    rounds: dict[str, list[float]] = {PLAIN: [], DELIVERED: []}
    for repo in (PLAIN, DELIVERED):
        bench.requests[repo].clear()
    for n in range(1, options.jobs + 1):
        for repo in (PLAIN, DELIVERED) if n % 2 else (DELIVERED, PLAIN):
            jobs[repo].append(bench.work(repo, numbers[repo][n]))
            rounds[repo].append(bench.round(repo))
        log(
            f"job {n}: COMMAND only {jobs[PLAIN][-1] * 1000:.0f} ms, with delivery"
            f" {jobs[DELIVERED][-1] * 1000:.0f} ms"
        )
    pulls = bench.pulls(DELIVERED)
    if pulls != options.jobs + 1 or bench.pulls(PLAIN) != 0:
        raise RuntimeError(f"expected {options.jobs + 1} pull requests, found {pulls}")

    plain, delivered = jobs[PLAIN], jobs[DELIVERED]
    plain_rounds, pr_rounds = rounds[PLAIN], rounds[DELIVERED]
    added = [b - a for a, b in zip(plain, delivered, strict=True)]
    ratio = [b / a for a, b in zip(plain, delivered, strict=True)]
    mirror_added = [b - a for a, b in zip(plain_rounds, pr_rounds, strict=True)]
    all_told = [
        (b + mb) - (a + ma)
        for a, b, ma, mb in zip(plain, delivered, plain_rounds, pr_rounds, strict=True)
    ]
    all_ratio = [
        (b + mb) / (a + ma)
        for a, b, ma, mb in zip(plain, delivered, plain_rounds, pr_rounds, strict=True)
    ]
    return [
        f"# What delivery adds to a job: {options.jobs} jobs of each,"
        f" {options.files} files, {options.commits} commits\n",
        f"Each job: `tireless work --once -- {' '.join(COMMAND[:2])} '{COMMAND[2]}'` as a whole"
        " process, start to exit: (a) COMMAND alone, (b) with `--deliver` (the workspace from the"
        " warm cache, the change committed and pushed). Then the mirror's round of that job's"
        " repository (its state label and outcome comment; for (b) its pull request too). The"
        " variants take turns job by job; a difference or a ratio is taken within each turn,"
        " then its median.",
        f"PostgreSQL with fsync on; a stand-in gitea forge on 127.0.0.1; {os.cpu_count()} cores,"
        f" shared. Not counted: the first delivered job, with the cache cold, {cold * 1000:.0f} ms."
        f" A mirror round asked the forge {statistics.median(bench.requests[PLAIN]):.0f} requests"
        f" for (a)'s job, {statistics.median(bench.requests[DELIVERED]):.0f} for (b)'s (medians).\n",
        "| per job | median ms | min ms | max ms |",
        "|---|---:|---:|---:|",
        row("(a) job, COMMAND only", plain),
        row("(b) job with delivery", delivered),
        row("added by delivery in the job (b - a)", added),
        row("ratio b / a", ratio, "x"),
        row("mirror round, COMMAND-only job (label, comment)", plain_rounds),
        row("mirror round, delivered job (label, comment, pull request)", pr_rounds),
        row("added by the pull request in the mirror", mirror_added),
        row("added all told (job and mirror)", all_told),
        row("ratio all told, (b + its round) / (a + its round)", all_ratio, "x"),
    ]


if __name__ == "__main__":
    main()
