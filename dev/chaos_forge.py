"""The forge fault run (`make chaos-forge`): a scripted person opens, labels, unlabels, relabels,
closes and reopens a few hundred issues on a stand-in forge that injects faults (5xx, rate
limits, malformed JSON, HTML, writes stored whose answer is lost by a reset or a timeout), while
real `tireless poll`, `tireless work` and `tireless sweep` processes run against an embedded
PostgreSQL; pollers (the mirror) and workers are killed at random (and restarted), PostgreSQL is
restarted once. Each plan job's agent hands back two steps, which the mirror opens as issues. Then
every fault stops, the processes finish the work, and the checker verifies the promises: each
request exactly one job, none for an issue that never asked, each finished job exactly one
outcome comment, each delivered plan's step exactly one issue (its own, by its marker) with
one job, the labels match the final states, no label twice, the mirror's backlog at 0.

    python -m dev.chaos_forge [--issues 300] [--seconds 60] [--seed N]

The person acts at a person's pace: an issue is edited at most every few seconds, and a request
is withdrawn only after it has its job and that job is a second old, so that each request the
person makes is one the store could see (docs/decisions-mirror.md: the forges stamp events in
whole seconds).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from dev.embedded import EmbeddedPostgres
from dev.standin import (
    MIRROR_LOGIN,
    Flavour,
    StandinForge,
    StoredIssue,
    issues_of,
)
from tireless.forge import token_variable
from tireless.migrate import migrate

OWNER = "acme"
FORGE = "chaos"
TOKEN = "tok-chaos-5e1f"
OPT_IN = "tireless"
MODES = ("tireless/plan", "tireless/implement")
STATE = "tireless/state/"
QUIET = "bug"
"""The label of the issues that never ask for work (none of them may ever get a job)."""
MARKER = re.compile(r"<!-- tireless:job:(\d+) -->$")
AGENT = (
    "import json, os, random, sys, time; time.sleep(random.random() * 0.4);"
    # A plan job hands back two steps: the mirror opens an issue for each once it is delivered.
    " os.environ['TIRELESS_KIND'] == 'plan' and open(os.environ['TIRELESS_PLAN_FILE'], 'w').write("
    "json.dumps([{'title': f'step {i} of #' + os.environ['TIRELESS_NUMBER'], 'body': 'a step'}"
    " for i in range(2)]));"
    " print('@alice done <b>x</b> \\x1b[31m\\u202e'); sys.exit(random.random() < 0.25)"
)
TASK_MARKER = re.compile(r"<!-- tireless:task:(\d+):(\d+) -->$")
FAULTS = ("500", "429-seconds", "invalid-json", "html", "applied-then-reset", "applied-then-slow")
POLL_TIMEOUT = 2.0


@dataclass(frozen=True, slots=True)
class Plan:
    """The size of a run."""

    issues: int = 300
    seconds: float = 60.0
    repos: tuple[str, ...] = ("alpha", "beta", "gamma")
    flavour: Flavour = "gitea"
    pollers: int = 2
    workers: int = 3
    seed: int = 21
    kill_every: float = 3.0
    fault_every: float = 0.3
    restart_database: bool = True


@dataclass
class Ledger:
    """What the person did: how many requests each issue made (a change of the issue from not
    asking for work to asking, made by the person)."""

    requests: Counter[tuple[str, int]] = field(default_factory=Counter)
    issues: list[tuple[str, int]] = field(default_factory=list)
    actions: int = 0


def asks(issue: StoredIssue) -> bool:
    """Open, opted in, and a mode label: the issue asks for work (DESIGN.md)."""
    return (
        issue.state == "open" and OPT_IN in issue.labels and any(m in issue.labels for m in MODES)
    )


class Person:
    """The scripted person: edits issues on the forge, one at a time, at a person's pace."""

    def __init__(
        self, forge: StandinForge, conninfo: str, rng: random.Random, ledger: Ledger
    ) -> None:
        self.forge, self.conninfo, self.rng, self.ledger = forge, conninfo, rng, ledger
        self.quiet: set[tuple[str, int]] = set()
        self.touched: dict[tuple[str, int], float] = {}
        self.pace = 2.5  # seconds between two edits of one issue
        self._conn: psycopg.Connection[Any] | None = None

    def open_issues(self, count: int, repos: tuple[str, ...]) -> None:
        for n in range(count):
            repo = self.rng.choice(repos)
            if n % 10 == 0:
                labels = [QUIET]
            elif self.rng.random() < 0.6:
                labels = [OPT_IN, self.rng.choice(MODES)]
            else:
                labels = [OPT_IN]
            number = self.forge.create_issue(OWNER, repo, f"chaos {n}", labels)
            key = (repo, number)
            self.ledger.issues.append(key)
            if labels == [QUIET]:
                self.quiet.add(key)
            if len(labels) == 2:
                self.ledger.requests[key] += 1
            self.touched[key] = time.monotonic()

    def act(self) -> None:
        """One edit of a random issue not edited lately."""
        now = time.monotonic()
        ready = [k for k in self.ledger.issues if now - self.touched[k] >= self.pace]
        if not ready:
            return
        key = self.rng.choice(ready)
        may_withdraw = self._answered(key)
        change = self._quiet_change if key in self.quiet else self._change

        def edit(issue: StoredIssue) -> dict[str, Any]:
            changes = change(issue)
            if not changes or not asks(issue):
                return changes
            after = _changed(issue, changes)
            return changes if asks(after) or may_withdraw else {}

        before, after = self.forge.edit(OWNER, key[0], key[1], edit)
        self.touched[key] = time.monotonic()
        if before is not after:
            self.ledger.actions += 1
        if not asks(before) and asks(after):
            self.ledger.requests[key] += 1

    def _change(self, issue: StoredIssue) -> dict[str, Any]:
        labels = list(issue.labels)
        modes = [m for m in MODES if m in labels]
        action = self.rng.choice(
            ["ask", "ask", "ask", "unask", "opt-out", "opt-in", "close", "reopen", "swap"]
        )
        if action == "ask" and not modes:
            return {"labels": [*labels, *([] if OPT_IN in labels else [OPT_IN]), MODES[0]]}
        if action == "unask" and modes:
            return {"labels": [n for n in labels if n not in MODES]}
        if action == "opt-out" and OPT_IN in labels:
            return {"labels": [n for n in labels if n != OPT_IN]}
        if action == "opt-in" and OPT_IN not in labels:
            return {"labels": [*labels, OPT_IN]}
        if action == "close" and issue.state == "open":
            return {"state": "closed"}
        if action == "reopen" and issue.state == "closed":
            return {"state": "open"}
        if action == "swap" and len(modes) == 1:  # re-routing: not a new request
            other = MODES[1 - MODES.index(modes[0])]
            return {"labels": [other if n == modes[0] else n for n in labels]}
        return {}

    def _quiet_change(self, issue: StoredIssue) -> dict[str, Any]:
        if self.rng.random() < 0.5:
            return {"state": "closed" if issue.state == "open" else "open"}
        labels = [QUIET] if OPT_IN in issue.labels else [QUIET, OPT_IN]  # never a mode label
        return {"labels": labels}

    def _answered(self, key: tuple[str, int]) -> bool:
        """The issue's current request has its job, made more than a second ago: a person
        withdraws only a request the store has seen (else it was never a request to answer)."""
        try:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5)
            row = self._conn.execute(
                "SELECT count(*), coalesce(extract(epoch FROM now() - max(created_at)), 0)"
                " FROM tireless.job WHERE forge = %s AND repo = %s AND number = %s",
                (FORGE, key[0], key[1]),
            ).fetchone()
        except psycopg.Error:
            self._conn = None
            return False
        assert row is not None
        return bool(row[0] >= self.ledger.requests[key] and row[1] > 1.5)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _changed(issue: StoredIssue, changes: dict[str, Any]) -> StoredIssue:
    return StoredIssue(
        issue.number,
        issue.title,
        list(changes.get("labels", issue.labels)),
        changes.get("state", issue.state),
    )


class Crew:
    """The real processes: pollers, workers, a sweeper. Any that exits (killed, or cut off by
    the database restart) is started again until `stop`."""

    def __init__(self, database_url: str, plan: Plan, logs: Path) -> None:
        self.database_url, self.plan, self.logs = database_url, plan, logs
        self.running: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping = False
        self.kills = 0
        self.restarts = 0

    def commands(self) -> dict[str, list[str]]:
        tireless = [sys.executable, "-m", "tireless"]
        found = {
            f"poller-{n}": [
                *tireless,
                "poll",
                "--every",
                "500ms",
                "--timeout",
                f"{POLL_TIMEOUT}s",
                "--poller",
                f"chaos-poller-{n}",
                "--lease",  # a killed poller's repositories are read by another within it
                "3s",
            ]
            for n in range(self.plan.pollers)
        }
        for n in range(self.plan.workers):
            found[f"worker-{n}"] = [
                *tireless, "work", "--worker", f"chaos-worker-{n}", "--lane", "cc",
                "--lease", "3s", "--poll", "300ms", "--grace", "1s",
                "--", sys.executable, "-c", AGENT,
            ]  # fmt: skip
        found["sweeper"] = [*tireless, "sweep", "--every", "500ms"]
        return found

    def keep_running(self) -> None:
        environment = os.environ | {
            "DATABASE_URL": self.database_url,
            token_variable(FORGE): TOKEN,
        }
        for name, command in self.commands().items():
            process = self.running.get(name)
            if self.stopping or (process is not None and process.poll() is None):
                continue
            if process is not None:
                self.restarts += 1
            with (self.logs / f"{name}.log").open("ab") as log:
                self.running[name] = subprocess.Popen(
                    command, env=environment, stdout=log, stderr=subprocess.STDOUT
                )

    def kill_one(self, rng: random.Random) -> str | None:
        """SIGKILL a random poller or worker; a killed poller's repositories go on when its
        short poll lease (`--lease 3s`) lapses."""
        names = [n for n in self.running if n != "sweeper" and self.running[n].poll() is None]
        if not names:
            return None
        name = rng.choice(names)
        self.running[name].send_signal(signal.SIGKILL)
        self.running[name].wait()
        self.kills += 1
        return name

    def stop(self) -> None:
        self.stopping = True
        for process in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.running.values():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def set_up(conninfo: str, forge: StandinForge, plan: Plan) -> None:
    """The store: migrated, the forge registered, its repositories tracked, no retry backoff
    and no circuit breaker (failures are the agents' own here, not a broken lane)."""
    migrate(conninfo)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SELECT tireless.add_forge(%s, %s, %s)", (FORGE, plan.flavour, forge.url))
        for repo in plan.repos:
            forge.create_repo(OWNER, repo)
            conn.execute("SELECT tireless.track_repo(%s, %s, %s)", (FORGE, OWNER, repo))
        conn.execute(
            "SELECT 1 FROM tireless.set_policy(backoff_base => '0', backoff_cap => '0',"
            " breaker_threshold => 1000000)"
        )


@dataclass
class Outcome:
    problems: list[str]
    ledger: Ledger
    jobs: int
    comments: int
    steps: int  # issues the mirror opened for delivered plans' steps
    kills: int
    restarts: int
    faults: int
    database_restarts: int
    seconds: float

    def summary(self) -> str:
        made = sum(self.ledger.requests.values())
        verdict = "every promise held" if not self.problems else f"{len(self.problems)} problem(s)"
        return (
            f"chaos-forge: {len(self.ledger.issues)} issues, {self.ledger.actions} edits,"
            f" {made} requests, {self.jobs} jobs, {self.comments} outcome comments,"
            f" {self.steps} plan steps opened as issues;"
            f" {self.faults} faults injected, {self.kills} processes killed"
            f" ({self.restarts} restarts), {self.database_restarts} database restart(s);"
            f" {self.seconds:.0f} s: {verdict}"
        )


def run(
    conninfo: str, database_url: str, restart_database: Callable[[], None], plan: Plan
) -> Outcome:
    """One fault run against an empty database; returns what the checker found."""
    rng = random.Random(plan.seed)
    ledger = Ledger()
    started = time.monotonic()
    faults = database_restarts = 0
    with StandinForge(plan.flavour, token=TOKEN) as forge, _logs() as logs:
        set_up(conninfo, forge, plan)
        person = Person(forge, conninfo, rng, ledger)
        person.open_issues(plan.issues, plan.repos)
        crew = Crew(database_url, plan, logs)
        try:
            crew.keep_running()
            settle(conninfo, crew, None, timeout=120.0)  # every process up, each repository read
            end = time.monotonic() + plan.seconds
            restart_at = time.monotonic() + plan.seconds * 0.4
            next_kill = time.monotonic() + plan.kill_every
            next_fault = time.monotonic()
            while time.monotonic() < end:
                person.act()
                now = time.monotonic()
                if now >= next_fault:
                    faults += inject_fault(forge, rng)
                    next_fault = now + plan.fault_every
                if now >= next_kill:
                    crew.kill_one(rng)
                    next_kill = now + plan.kill_every
                if plan.restart_database and restart_at and now >= restart_at:
                    restart_database()
                    restart_at = 0.0
                    database_restarts += 1
                crew.keep_running()
                time.sleep(0.02)
            forge.clear_faults()
            since = _retrying(database_now, conninfo)
            _retrying(retry_now, conninfo)
            settle(conninfo, crew, since)
        finally:
            crew.stop()
            person.close()
        problems = check(conninfo, forge, ledger, plan.repos, explain=True)
        jobs, comments, steps = _totals(conninfo, forge, plan.repos)
    return Outcome(
        problems, ledger, jobs, comments, steps, crew.kills, crew.restarts, faults, database_restarts,
        time.monotonic() - started,
    )  # fmt: skip


def inject_fault(forge: StandinForge, rng: random.Random) -> int:
    name = rng.choice(FAULTS)
    seconds = {"429-seconds": 1.0, "applied-then-slow": POLL_TIMEOUT + 0.5}.get(name, 0.0)
    forge.fault(name, times=rng.randint(1, 3), seconds=seconds, writes_only=rng.random() < 0.5)
    return 1


def polled_since(conninfo: str, since: datetime | None) -> bool:
    """Whether every repository has been read cleanly (after `since`) and no job is live and
    the mirror's backlog is 0; False while the database cannot be reached."""
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT bool_and(last_success_at > coalesce(%s, '-infinity'::timestamptz)),"
                " sum(pending + claimed), sum(mirror_backlog) FROM tireless.repo_status",
                (since,),
            ).fetchone()
    except psycopg.Error:
        return False
    return row is not None and row[0] is True and (since is None or row[1:] == (0, 0))


def retry_now(conninfo: str) -> datetime:
    """The faults are over: what backs off after them (a repository's read, a mirror write or
    comment, 15 s doubling up to an hour) is tried now, as an operator would in psql; the run
    need not wait out an hour's backoff to see the backlog drain."""
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
        conn.execute("UPDATE tireless.repo_poll SET backoff_until = NULL, next_poll_at = now()")
        conn.execute("UPDATE tireless.mirror_issue SET next_try_at = now()")
        conn.execute("UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'comment'")
        conn.execute("UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'task'")
    return database_now(conninfo)


def database_now(conninfo: str) -> datetime:
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def settle(conninfo: str, crew: Crew, since: datetime | None, timeout: float = 240.0) -> None:
    """Wait (keeping the crew running) until every repository was read after `since`, and then
    (with a `since`) no job is live and the mirror's backlog is 0, three checks in a row."""
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 3 and time.monotonic() < deadline:
        crew.keep_running()
        time.sleep(0.5)
        quiet = quiet + 1 if polled_since(conninfo, since) else 0


def check(
    conninfo: str,
    forge: StandinForge,
    ledger: Ledger,
    repos: tuple[str, ...],
    *,
    explain: bool = False,
) -> list[str]:
    """Every promise of the poll-and-mirror loop, checked on the forge and in the store; a line
    per broken one (`explain`: followed by the issue's jobs and its forge events)."""
    problems: list[str] = []
    jobs: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)
    stories: dict[tuple[str, int], list[str]] = defaultdict(list)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for repo, number, job_id, state, story in conn.execute(
            "SELECT repo, number, id, state::text,"
            " format('job %%s made %%s, %%s: %%s', id, created_at, state, note)"
            " FROM tireless.job WHERE forge = %s ORDER BY id",
            (FORGE,),
        ):
            jobs[(repo, number)].append((job_id, state))
            stories[(repo, number)].append(story)
        (backlog,) = conn.execute(
            "SELECT coalesce(sum(mirror_backlog), 0) FROM tireless.repo_status WHERE forge = %s",
            (FORGE,),
        ).fetchone() or (0,)
        # The steps of each delivered plan (its delivering attempt's), and the issue recorded for each.
        steps = {
            (job_id, task): (repo, child)
            for job_id, task, repo, child in conn.execute(
                "SELECT t.job_id, t.task, t.repo, t.child_number FROM tireless.plan_task t"
                " JOIN tireless.job j ON j.id = t.job_id"
                " WHERE j.state = 'delivered' AND t.attempt = j.attempts AND t.forge = %s",
                (FORGE,),
            )
        }
    if backlog:
        problems.append(f"the mirror's backlog is {backlog}, not 0")
    requests = Counter(ledger.requests)
    problems += _step_problems(forge, repos, steps, requests)
    for repo in repos:
        twice = sorted(n for n, c in Counter(forge.label_names(OWNER, repo)).items() if c > 1)
        if twice:
            problems.append(f"{repo}: labels made more than once: {', '.join(twice)}")
        for issue in issues_of(forge, OWNER, repo):
            made = requests[(repo, issue.number)]
            found = _issue_problems(forge, repo, issue, made, jobs[(repo, issue.number)])
            if found and explain:
                found += [f"    {line}" for line in stories[(repo, issue.number)]]
                found += [
                    f"    {e.at:%H:%M:%S} {e.actor} {e.kind} {e.label.name if e.label else ''}"
                    for e in forge.events_of(OWNER, repo, issue.number)
                ]
            problems += found
    return problems


def _step_problems(
    forge: StandinForge,
    repos: tuple[str, ...],
    steps: dict[tuple[int, int], tuple[str, int | None]],
    requests: Counter[tuple[str, int]],
) -> list[str]:
    """Each delivered plan's step is exactly one issue of the mirror's account, found by its
    marker, the one the store recorded; each such issue is a request (it carries the opt-in and
    a mode), counted in `requests`."""
    problems: list[str] = []
    opened: dict[tuple[int, int], list[tuple[str, int]]] = defaultdict(list)
    for repo in repos:
        for issue in issues_of(forge, OWNER, repo):
            found = TASK_MARKER.search(issue.body.rstrip())
            if issue.author == MIRROR_LOGIN and found:
                opened[(int(found.group(1)), int(found.group(2)))].append((repo, issue.number))
                requests[(repo, issue.number)] += 1
    for (job_id, task), (repo, child) in sorted(steps.items()):
        issues = opened.pop((job_id, task), [])
        if len(issues) != 1:
            problems.append(f"job {job_id}'s step {task}: {len(issues)} issue(s) {issues}, not 1")
        elif issues != [(repo, child)]:
            problems.append(f"job {job_id}'s step {task}: opened as {issues}, recorded #{child}")
    for (job_id, task), issues in sorted(opened.items()):
        problems.append(f"issues {issues} for job {job_id}'s step {task}, which no plan delivered")
    return problems


def _issue_problems(
    forge: StandinForge,
    repo: str,
    issue: StoredIssue,
    made: int,
    its_jobs: list[tuple[int, str]],
) -> list[str]:
    name = f"{repo}#{issue.number}"
    problems = []
    if made == 0 and its_jobs:
        problems.append(f"{name}: never asked for work, yet has {len(its_jobs)} job(s)")
    elif len(its_jobs) != made:
        problems.append(f"{name}: {made} request(s) made, {len(its_jobs)} job(s)")
    live = [job_id for job_id, state in its_jobs if state in ("pending", "claimed")]
    if live:
        problems.append(f"{name}: job(s) {live} still live after the run settled")
    ours = Counter(
        int(found.group(1))
        for author, body in forge.comments_with_authors(OWNER, repo, issue.number)
        if author == MIRROR_LOGIN and (found := MARKER.search(body.rstrip()))
    )
    for job_id, state in its_jobs:
        if state not in ("pending", "claimed") and ours[job_id] != 1:
            problems.append(f"{name}: job {job_id} has {ours[job_id]} outcome comment(s), not 1")
    strangers = sorted(set(ours) - {job_id for job_id, _ in its_jobs})
    if strangers:
        problems.append(f"{name}: outcome comments for jobs not its own: {strangers}")
    shown = [label for label in issue.labels if label.startswith(STATE)]
    wanted = [f"{STATE}{its_jobs[-1][1]}"] if its_jobs else []
    if shown != wanted:
        problems.append(f"{name}: shows {shown}, its newest job wants {wanted}")
    if its_jobs and not live and asks(issue):
        problems.append(f"{name}: asks for work, and no job answers it (a lost request)")
    return problems


def _totals(conninfo: str, forge: StandinForge, repos: tuple[str, ...]) -> tuple[int, int, int]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM tireless.job),"
            " (SELECT count(child_number) FROM tireless.plan_task)"
        ).fetchone()
    comments = sum(
        len(forge.comments_of(OWNER, repo, issue.number))
        for repo in repos
        for issue in issues_of(forge, OWNER, repo)
    )
    jobs, steps = row if row else (0, 0)
    return jobs, comments, steps


def _retrying(read: Callable[[str], datetime], conninfo: str) -> datetime:
    for _ in range(60):
        with suppress(psycopg.Error):
            return read(conninfo)
        time.sleep(1.0)
    return read(conninfo)


@contextmanager
def _logs() -> Iterator[Path]:
    """The processes' output: kept in TIRELESS_CHAOS_LOGS when set, else thrown away."""
    kept = os.environ.get("TIRELESS_CHAOS_LOGS")
    if kept:
        Path(kept).mkdir(parents=True, exist_ok=True)
        yield Path(kept)
        return
    with tempfile.TemporaryDirectory(prefix="tireless-chaos-") as directory:
        yield Path(directory)


DEFAULTS = Plan()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chaos_forge", description=__doc__.split("\n\n")[0])
    parser.add_argument("--issues", type=int, default=DEFAULTS.issues)
    parser.add_argument("--seconds", type=float, default=DEFAULTS.seconds)
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed)
    parser.add_argument("--flavour", choices=["gitea", "github"], default=DEFAULTS.flavour)
    args = parser.parse_args(argv)
    plan = Plan(issues=args.issues, seconds=args.seconds, seed=args.seed, flavour=args.flavour)
    server = EmbeddedPostgres(fsync=False)
    server.start()
    try:
        with psycopg.connect(server.conninfo(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE chaos")
        outcome = run(server.conninfo("chaos"), server.url("chaos"), server.restart, plan)
    finally:
        server.destroy()
    print(outcome.summary())
    for problem in outcome.problems:
        print(f"  {problem}")
    return 1 if outcome.problems else 0


if __name__ == "__main__":
    sys.exit(main())
