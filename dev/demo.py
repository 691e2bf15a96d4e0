"""`make run`: tireless at work on a forge in about a minute, with its dashboard; `make stop`
(`--stop`) stops the dashboard and the database.

With no DATABASE_URL it starts (or attaches to) the embedded PostgreSQL in PGDATA (a directory
of the system's temporary folder named after the project, so that its unix socket path stays
short and, when we are root, the postgres user can reach it wherever the project lives) and
recreates the database tireless_demo in it; with DATABASE_URL it runs there. It migrates, sets a
short backoff, starts `tireless web` on 127.0.0.1:8080 (or a free port when that one is taken)
in the background, starts the stand-in forge (a Gitea on 127.0.0.1,
dev.standin), registers it (`add_forge`), tracks gitea/example/widgets, seeds
its git with a README, a source file and a changelog, opens there the issues of
examples/issues.json and three of its own, and runs `tireless poll --every 1s`, two
`tireless work --deliver` processes on examples/agent.sh (their workspaces and cache of
repositories in .tireless/state; the forge's token in the poller's and the workers' environments
only, never the agent's) and a `tireless sweep --every 1s`, showing `tireless status` until every
job is settled and every scene played; then it prints each job's outcome and what each scene
showed. The scenes, midway:
- it crashes a runner: once a worker holds issue 6's job and runs its agent, it SIGKILLs both and
  starts worker-c in its place; the sweeper returns the job when its lease runs out;
- it closes an issue whose job is pending (lane gm, which no runner here serves): cancelled;
- it closes an issue whose agent is running (a long job): the worker learns it from `heartbeat`,
  stops the agent and ends the job cancelled (nothing pushed);
- once issue 1 is delivered the mirror takes its mode label off (the request is withdrawn); three
  polls pass (no new job), then a human puts the label back: the new request gets a new job;
- once issue 4's pull request is open, carol (who may write to the repository) requests changes
  with one inline comment: the poller reads the review and makes one revision job, whose agent
  answers it from the pull request's head, and whose push is the same pull request's second commit;
- a plan job delivers a plan of three steps: the mirror opens an issue for each, the second saying
  `Depends on` the first, whose job waits (`tireless/state/waiting`) until the demo closes the
  first once it is delivered (as merging its pull request would); then it runs;
- where Claude Code or OpenCode is installed or installable (dev.demo_agent), lane real runs it
  on one more issue of its own against the model stand-in: the start line names the CLI, its
  version and the issue, and its story the pull request that CLI made.
At the end it polls until the mirror has written every state and opened every pull request (or
says how many writes are left), then prints a few issues as the forge shows them (one
`tireless/state/<state>` label each and one comment per finished job) and each delivered implement
job's pull request: the branch tireless pushed, the pull request that closes the issue with the
agent's report, or `no change`.

TIRELESS_DEMO_SIZE=small opens only the first 10 example issues; TIRELESS_DEMO_TIMEOUT (seconds,
default 240) bounds the wait. Exit 0 when every job settled and every change delivered is a pull
request on the forge, 1 when the time ran out or one is not, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from dev.demo_agent import LANE as REAL_LANE
from dev.demo_agent import WORKER as CLI_WORKER
from dev.demo_agent import RealAgent
from dev.embedded import EmbeddedPostgres
from dev.standin import StandinForge, issues_of
from tireless.cli.render import job_table, render_status
from tireless.forge import client_for, token_variable
from tireless.forge.client import ForgeClient
from tireless.forge.poll import poll_round
from tireless.migrate import migrate
from tireless.models import Job, JobKind, JobState, RepoToPoll
from tireless.store import JobStore, calls, reads
from tireless.store.reads import fetch, status_rows
from tireless.web.launch import start_dashboard

HOME = Path(".tireless")
PROJECT_DIGEST = hashlib.sha1(str(Path.cwd().resolve()).encode()).hexdigest()[:10]
PGDATA = Path(tempfile.gettempdir()) / f"tireless-demo-{PROJECT_DIGEST}"
LOGS = HOME / "logs"
# The workers' cache of repositories and the jobs' workspaces (`tireless work --state-dir`).
STATE = HOME / "state"
DASHBOARD_PID = HOME / "dashboard.pid"
# `tireless web` on 127.0.0.1:8080 (TIRELESS_DEMO_BIND overrides), or on a free port when taken.
DASHBOARD_BIND = "127.0.0.1:8080"
EXAMPLES = Path(__file__).resolve().parent / "examples"
AGENT = EXAMPLES / "agent.sh"
DEMO_DATABASE = "tireless_demo"
FORGE, OWNER, REPO = "gitea", "example", "widgets"
# The stand-in repository's git, on its default branch main, before any job: what the workspaces
# start from.
SEED_FILES = {
    "README.md": "# widgets\n\nSmall parts for big machines.\n",
    "widgets.py": 'def widget(name: str) -> str:\n    return f"a {name} widget"\n',
    "CHANGELOG.md": "# Changes\n\n",
}
WORKERS = ("worker-a", "worker-b")
SWEEPER = "sweeper"
POLLER = "poller"
SMALL = 10
# examples/agent.sh works 5 s on issue 6's first attempt: time enough to kill its worker mid-job.
CRASH_ISSUE = 6
REPLACEMENT = "worker-c"
# The issue delivered (the mirror withdraws it), polled again (nothing happens), relabelled (a new job).
RELABELLED_ISSUE = 1
POLLS_AFTER_DELIVERY = 3
# An implement issue shown as the forge shows it: its comment names its pull request (examples/
# agent.sh fails its first attempt, changes two files on the second).
IMPLEMENTED_ISSUE = 3
# The issue whose pull request gets a review round: a person with write access requests changes
# with one inline comment (on the note examples/agent.sh wrote); one revision job answers it.
REVIEWED_ISSUE = 4
REVIEWER = "carol"
REVIEW = "Almost: the note should say how this is tested."
REVIEW_COMMENT = ("notes/4.md", 3, "Which test covers the webhook?")
# The demo's own issues, opened after the examples: one for a lane no runner here serves (its job
# waits until the issue is closed), one whose agent works 20 s (its issue is closed meanwhile).
UNSERVED = (
    "Try the gm agent on the parser",
    ["tireless", "tireless/implement", "tireless/agent:gm"],
)
LONG_JOB = ("Move the CI to new runners (a long job)", ["tireless", "tireless/implement"])
# A plan of three steps (examples/agent.sh writes it): the mirror opens an issue for each, the second
# depending on the first; the demo closes the first once it is delivered, as merging its pull
# request would, and the second's job, waiting until then, runs.
PLANNED = ("Plan the search feature", ["tireless", "tireless/plan"])
PLAN_STEPS = 3
TASKS = "SELECT child_number FROM tireless.job_tasks(%(job_id)s) ORDER BY task"
HOLDER = "SELECT claimed_by FROM tireless.active_claims WHERE id = %(job_id)s"
REPORTS = (
    "SELECT j.id, a.report FROM tireless.job j JOIN tireless.job_attempt a"
    " ON (a.job_id, a.attempt) = (j.id, j.attempts) WHERE j.id = ANY (%(job_ids)s)"
)
PULL_OF_JOB = "SELECT pull_number FROM tireless.deliveries WHERE job_id = %(job_id)s"
LAST_POLL = (
    "SELECT last_success_at FROM tireless.repo_status"
    " WHERE (forge, owner, repo) = (%(forge)s, %(owner)s, %(repo)s)"
)


def say(text: str) -> None:
    print(text, flush=True)


def now() -> str:
    return time.strftime("%H:%M:%S ")


def database() -> tuple[str, str | None]:
    """The demo's database URL, and the psql command for it when the demo started the server."""
    if url := os.environ.get("DATABASE_URL"):
        return url, None
    server = EmbeddedPostgres(PGDATA.resolve())
    server.start()
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        name = sql.Identifier(DEMO_DATABASE)
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(name))
    url = server.url(DEMO_DATABASE)
    say(f"embedded PostgreSQL in {PGDATA} on port {server.port}, database {DEMO_DATABASE}")
    return url, f'psql "{url}"'


def start_web(url: str) -> str | None:
    """Start `tireless web` on the demo's database, detached, so that it outlives the demo until
    `make stop`; its address, or None when it did not start (see its log)."""
    for bind in (os.environ.get("TIRELESS_DEMO_BIND", DASHBOARD_BIND), "127.0.0.1:0"):
        try:
            dashboard = start_dashboard(url, LOGS / "web.log", bind=bind)
        except RuntimeError:  # the address is taken, or the web extra is not installed
            continue
        DASHBOARD_PID.write_text(f"{dashboard.pid}\n")
        return dashboard.url
    return None


def stop_web() -> bool:
    """SIGTERM the dashboard a demo started here, if it still runs (and is still `tireless web`:
    a pid can be reused); whether there was one."""
    try:
        pid = int(DASHBOARD_PID.read_text())
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ValueError):
        return False
    finally:
        DASHBOARD_PID.unlink(missing_ok=True)
    if command_line[1:4] != [b"-m", b"tireless", b"web"]:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):  # it closes its pool first: the database can then be dropped
            os.kill(pid, 0)
            time.sleep(0.1)
    return True


def open_issues(forge: StandinForge, small: bool) -> tuple[int, int, int, int]:
    """Open the example issues on the stand-in forge (same numbers, labels and states as
    examples/issues.json), then the demo's three; the example count and the three numbers."""
    examples = json.loads((EXAMPLES / "issues.json").read_text())[: SMALL if small else None]
    for example in examples:
        number = forge.create_issue(OWNER, REPO, example["title"], example["labels"])
        assert number == example["number"], "examples/issues.json numbers its issues 1, 2, ..."
        if example["state"] == "closed":
            forge.close_issue(OWNER, REPO, number)
    unserved = forge.create_issue(OWNER, REPO, *UNSERVED)
    long_job = forge.create_issue(OWNER, REPO, *LONG_JOB)
    planned = forge.create_issue(OWNER, REPO, *PLANNED)
    return len(examples), unserved, long_job, planned


def command(name: str) -> list[str]:
    """The poller's command, the sweeper's, or a worker's: `tireless work --deliver` on
    examples/agent.sh, its workspaces and cache of repositories in the demo's STATE."""
    tireless = [sys.executable, "-m", "tireless"]
    if name == POLLER:
        return [*tireless, "poll", "--every", "1s", "--poller", POLLER]
    if name == SWEEPER:
        return [*tireless, "sweep", "--every", "1s"]
    lanes = ["--lane", "cc", "--lane", "oc"]
    timing = ["--lease", "2s", "--poll", "1s", "--grace", "2s"]
    deliver = ["--deliver", "--state-dir", str(STATE.resolve())]
    agent = ["sh", str(AGENT)]
    return [*tireless, "work", "--worker", name, *lanes, *timing, *deliver, "--", *agent]


class Crew:
    """The poller, the workers and the sweeper, each logging to .tireless/logs/NAME.log; leaving
    the `with` block stops (SIGTERM) those still running. The poller and the workers get the
    forge's token (the workers fetch and push with it; their agent never sees it), the sweeper
    not."""

    def __init__(self, url: str, token: str) -> None:
        plain = {k: v for k, v in os.environ.items() if not k.startswith("TIRELESS_TOKEN_")}
        self.env = plain | {"DATABASE_URL": url}
        self.token = {token_variable(FORGE): token}
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        LOGS.mkdir(parents=True, exist_ok=True)
        env = self.env | (self.token if name != SWEEPER else {})
        with (LOGS / f"{name}.log").open("wb") as log:
            self.running[name] = subprocess.Popen(
                command(name), env=env, stdout=log, stderr=subprocess.STDOUT
            )

    def agent_of(self, name: str) -> int | None:
        """The pid of the agent the worker runs now, if any (Linux: /proc lists its children, and
        their command lines tell the agent, in its sandbox, from the git that makes a workspace or
        pushes). `tireless work` starts each agent in a process group of its own, with that pid
        as id."""
        pid = self.running[name].pid
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                if str(AGENT).encode() in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
                    return int(child)
        return None

    def kill(self, name: str, agent: int) -> None:
        """SIGKILL the worker and its agent's process group, as a crash would: nothing finishes
        or releases the job the worker held."""
        worker = self.running.pop(name)
        worker.kill()
        worker.wait()
        with contextlib.suppress(ProcessLookupError):  # the agent ended meanwhile
            os.killpg(agent, signal.SIGKILL)

    def ended(self) -> bool:
        return any(process.poll() is not None for process in self.running.values())

    def __enter__(self) -> Crew:
        for name in (POLLER, *WORKERS, SWEEPER):
            self.start(name)
        say(f"started {', '.join(self.running)} (logs in {LOGS}/)")
        return self

    def __exit__(self, kind: object, error: BaseException | None, tb: TracebackType | None) -> None:
        for process in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.running.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        say("stopped the poller, the workers and the sweeper")


def jobs_of(conn: psycopg.Connection[Any], number: int) -> list[dict[str, Any]]:
    """The jobs of one issue of the demo repository, oldest first."""
    issue = reads.JobFilter(forge=FORGE, owner=OWNER, repo=REPO, number=number)
    return reads.read(conn, reads.listed_jobs(issue, reads.Page(at_most=1000)))


class Scene:
    """One thing the demo does midway: `act` (called every tick) does it when its moment has come
    and says what it did; `done` once its outcome is settled; `story` tells that outcome."""

    number: int

    def act(self, conn: psycopg.Connection[Any], crew: Crew, forge: StandinForge) -> str | None:
        raise NotImplementedError

    def done(self, conn: psycopg.Connection[Any]) -> bool:
        jobs = jobs_of(conn, self.number)
        return bool(jobs) and jobs[-1]["state"] in ("delivered", "failed", "cancelled")

    def story(self, conn: psycopg.Connection[Any]) -> str:
        raise NotImplementedError


class Crash(Scene):
    """The runner crash: the worker holding issue 6's job dies mid-job."""

    def __init__(self) -> None:
        self.number = CRASH_ISSUE
        self.victim: str | None = None
        self.job_id: int | None = None

    def act(self, conn: psycopg.Connection[Any], crew: Crew, forge: StandinForge) -> str | None:
        """Once a worker holds the job and runs its agent (tireless.active_claims and the
        worker's children say so): kill both, start a replacement, and say so."""
        jobs = jobs_of(conn, self.number)
        if self.victim is not None or not jobs:
            return None
        self.job_id = jobs[0]["id"]
        held = conn.execute(HOLDER, {"job_id": self.job_id}).fetchone()
        if held is None or held[0] not in crew.running:
            return None
        agent = crew.agent_of(held[0])
        if agent is None:  # claimed a moment ago: the agent is not running yet
            return None
        crew.kill(held[0], agent)
        crew.start(REPLACEMENT)
        self.victim = held[0]
        return (
            f"killed {self.victim} and its agent with SIGKILL while it held job {self.job_id}"
            f" ({FORGE}/{OWNER}/{REPO}#{self.number}); started {REPLACEMENT} in its place"
        )

    def story(self, conn: psycopg.Connection[Any]) -> str:
        """What became of the job, from its history (tireless.job_history)."""
        assert self.job_id is not None, "the scene acted before its story"
        events = reads.read(conn, reads.job_events(self.job_id))
        expired = [e for e in events if (e["note"] or "").startswith(f"lease of {self.victim} ")]
        last = events[-1]
        told = f"job {self.job_id}: its runner {self.victim} was killed"
        if expired and last["to_state"] == "delivered":
            return (
                f"{told}; the sweeper returned it when the lease ran out,"
                f" and attempt {last['attempt']} ({last['worker']}) delivered it"
            )
        return f"{told}; it is {last['to_state']} after {last['attempt']} attempt(s)"


class CloseIssue(Scene):
    """Close an issue on the forge once its job is at the scene's moment (`when` says what the
    moment looks like, or None while it has not come), and tell what became of the job."""

    moment: str

    def __init__(self, number: int) -> None:
        self.number = number
        self.closed = False

    def when(self, conn: psycopg.Connection[Any], crew: Crew, job: dict[str, Any]) -> str | None:
        raise NotImplementedError

    def act(self, conn: psycopg.Connection[Any], crew: Crew, forge: StandinForge) -> str | None:
        jobs = jobs_of(conn, self.number)
        if self.closed or not jobs or (now_is := self.when(conn, crew, jobs[0])) is None:
            return None
        forge.close_issue(OWNER, REPO, self.number)
        self.closed = True
        return f"closed #{self.number} on the forge while {now_is}"

    def story(self, conn: psycopg.Connection[Any]) -> str:
        (job,) = jobs_of(conn, self.number)
        return (
            f"#{self.number}, closed while {self.moment}:"
            f" job {job['id']} {job['state']} ({job['note']})"
        )


class CloseWhilePending(CloseIssue):
    """Close the issue whose job waits in lane gm (no runner here serves it)."""

    moment = "pending"

    def when(self, conn: psycopg.Connection[Any], crew: Crew, job: dict[str, Any]) -> str | None:
        return f"its job {job['id']} was pending" if job["state"] == "pending" else None


class CloseWhileRunning(CloseIssue):
    """Close the issue whose agent works 20 s, once the agent runs."""

    moment = "its agent ran"

    def when(self, conn: psycopg.Connection[Any], crew: Crew, job: dict[str, Any]) -> str | None:
        held = conn.execute(HOLDER, {"job_id": job["id"]}).fetchone()
        if held is None or held[0] not in crew.running or crew.agent_of(held[0]) is None:
            return None
        return f"{held[0]} ran its agent (job {job['id']})"


class Relabel(Scene):
    """Issue 1: delivered, its mode label taken off by the mirror, polled again (no new job), the
    label put back by a human (a new job)."""

    def __init__(self, forge: StandinForge) -> None:
        self.number = RELABELLED_ISSUE
        self.labels = forge.labels_of(OWNER, REPO, self.number)
        self.polls_seen: list[datetime] = []
        self.step = "wait for delivery"

    def act(self, conn: psycopg.Connection[Any], crew: Crew, forge: StandinForge) -> str | None:
        key = {"forge": FORGE, "owner": OWNER, "repo": REPO, "number": self.number}
        jobs = jobs_of(conn, self.number)
        if self.step == "wait for delivery":
            if jobs and jobs[0]["state"] == "delivered":
                self.step = "count polls"
            return None
        if self.step == "count polls":
            (last,) = conn.execute(LAST_POLL, key).fetchone() or (None,)
            if last is not None and last not in self.polls_seen:
                self.polls_seen.append(last)
            mode = [label for label in self.labels if label != "tireless"]
            shown = forge.labels_of(OWNER, REPO, self.number)
            if len(self.polls_seen) <= POLLS_AFTER_DELIVERY or set(mode) & set(shown):
                return None  # the first poll may predate the delivery; the mirror withdraws
            self.step = "wait for the new job"
            forge.set_labels(OWNER, REPO, self.number, [*shown, *mode])
            return (
                f"#{self.number}: {POLLS_AFTER_DELIVERY} polls since its job {jobs[0]['id']} was"
                f" delivered, still {len(jobs)} job, and the mirror took {', '.join(mode)} off;"
                " put it back"
            )
        return None

    def done(self, conn: psycopg.Connection[Any]) -> bool:
        return (
            self.step == "wait for the new job"
            and len(jobs_of(conn, self.number)) == 2
            and super().done(conn)
        )

    def story(self, conn: psycopg.Connection[Any]) -> str:
        first, second = jobs_of(conn, self.number)
        return (
            f"#{self.number}: job {first['id']} {first['state']}; the mirror took its mode label off,"
            f" no poll re-ran it; putting the label back made job {second['id']}, {second['state']}"
        )


class Plan(Scene):
    """The plan of three steps: once its job is delivered the mirror opens an issue per step, the
    second saying `Depends on` the first, so its job waits; once the first is delivered the demo
    closes it (as merging its pull request would) and the second's job is released and runs."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.children: list[int] = []
        self.waited: str | None = None  # the second step's note when the first was closed

    def act(self, conn: psycopg.Connection[Any], crew: Crew, forge: StandinForge) -> str | None:
        jobs = jobs_of(conn, self.number)
        if not jobs or jobs[0]["state"] != "delivered":
            return None
        if not self.children:
            opened = [row[0] for row in conn.execute(TASKS, {"job_id": jobs[0]["id"]})]
            if len(opened) < PLAN_STEPS or None in opened:
                return None
            self.children = opened
            first, second, third = opened
            return (
                f"#{self.number}: plan job {jobs[0]['id']} delivered; the mirror opened its steps"
                f" #{first}, #{second} (depends on #{first}) and #{third}"
            )
        first, second, _ = self.children
        steps, waiting = jobs_of(conn, first), jobs_of(conn, second)
        if self.waited is not None or not steps or steps[0]["state"] != "delivered":
            return None
        if not waiting or waiting[0]["state"] != "pending":
            return None
        forge.close_issue(OWNER, REPO, first)
        self.waited = waiting[0]["note"]
        return (
            f"#{first} delivered; #{second}'s job {waiting[0]['id']} is pending ({self.waited});"
            f" closed #{first} on the forge, as merging its pull request would"
        )

    def done(self, conn: psycopg.Connection[Any]) -> bool:
        if self.waited is None or not super().done(conn):
            return False
        settled = ("delivered", "failed", "cancelled")
        return all(
            (jobs := jobs_of(conn, child)) and jobs[-1]["state"] in settled
            for child in self.children
        )

    def story(self, conn: psycopg.Connection[Any]) -> str:
        first, second, third = self.children
        (job,) = jobs_of(conn, second)
        return (
            f"#{self.number}: its plan became #{first}, #{second} and #{third}; #{second}'s job"
            f" {job['id']} was {self.waited!r} until #{first} closed, then {job['state']}"
        )


class ReviewRound(Scene):
    """Issue 4: once its pull request is open, a reviewer with write access requests changes with
    one inline comment; the poller reads the review and makes one revision job, which a worker
    runs from the pull request's head and pushes to the same branch."""

    def __init__(self, forge: StandinForge) -> None:
        self.number = REVIEWED_ISSUE
        self.forge = forge
        self.pull: int | None = None
        self.review: int | None = None
        self.revision: int | None = None
        forge.set_permission(OWNER, REPO, REVIEWER, "write")

    def act(self, conn: psycopg.Connection[Any], crew: Crew, forge: StandinForge) -> str | None:
        jobs = jobs_of(conn, self.number)
        if self.review is None:
            if not jobs or jobs[0]["state"] != "delivered":
                return None
            (pull,) = conn.execute(PULL_OF_JOB, {"job_id": jobs[0]["id"]}).fetchone() or (None,)
            shown = {p.number for p in forge.pulls_of(OWNER, REPO) if p.state == "open"}
            if pull not in shown:  # the mirror has not opened it yet
                return None
            path, line, text = REVIEW_COMMENT
            self.pull = pull
            self.review = forge.submit_review(
                OWNER, REPO, pull, REVIEWER, "changes_requested", REVIEW, comments=[REVIEW_COMMENT]
            )
            return (
                f"#{self.number}: {REVIEWER} (write access) requested changes on PR #{pull}"
                f" in review {self.review}, with a comment on {path} line {line}: {text!r}"
            )
        if self.revision is None and len(jobs) > 1:
            self.revision = jobs[1]["id"]
            (made, *_) = reads.read(conn, reads.job_events(self.revision))
            return (
                f"#{self.number}: the poller read the review: job {self.revision}, {made['note']}"
            )
        return None

    def done(self, conn: psycopg.Connection[Any]) -> bool:
        return self.revision is not None and super().done(conn)

    def story(self, conn: psycopg.Connection[Any]) -> str:
        """What the revision left on the forge: the commits of its branch past main, its head, the
        pull request it delivered to, and whether the commented file answers the comment."""
        told = f"#{self.number}: review {self.review} by {REVIEWER} asked for a change"
        jobs = jobs_of(conn, self.number)
        if len(jobs) != 2:
            return f"{told}; {len(jobs)} jobs were made for #{self.number}, not 2"
        revision = jobs[1]
        ids = {"job_ids": [revision["id"]]}
        (delivery,) = fetch(conn, reads.JOB_DELIVERIES, ids, dict_row) or (None,)
        if delivery is None or not delivery["changed"]:
            return f"{told}; revision job {revision['id']} {revision['state']}, nothing pushed"
        branch = delivery["branch"]
        main = {commit.sha for commit in self.forge.commits_of(OWNER, REPO, "main")}
        ahead = [c for c in self.forge.commits_of(OWNER, REPO, branch) if c.sha not in main]
        nth = {1: "a first", 2: "a second", 3: "a third"}.get(len(ahead), f"commit {len(ahead)}")
        pull = delivery["pull_number"]
        where = f"PR #{pull}" if pull == self.pull else f"PR #{pull}, not #{self.pull}"
        head = self.forge.branch_head(OWNER, REPO, branch) or "nothing"
        at = f"{branch} at {head[:7]}" + ("" if head == delivery["head"] else ", not its push")
        path, _, text = REVIEW_COMMENT
        answered = text in (self.forge.file_at(OWNER, REPO, branch, path) or "")
        said = f"{path} answers the comment" if answered else f"{path} does not answer the comment"
        return (
            f"{told}; revision job {revision['id']} pushed {nth} commit to {where} ({at}: {said})"
        )


class RealAgentScene(Scene):
    """A real agent CLI runs one lane's job against the model stand-in (dev.demo_agent)."""

    def __init__(self, agent: RealAgent) -> None:
        self.agent, self.number, self.started = agent, agent.number, False

    def act(self, conn: psycopg.Connection[Any], crew: Crew, forge: StandinForge) -> str | None:
        if self.started:
            return None
        self.started = True
        return self.agent.start(crew.env | crew.token, STATE, LOGS / f"{CLI_WORKER}.log")

    def story(self, conn: psycopg.Connection[Any]) -> str:
        return self.agent.story(conn, OWNER, REPO)


def watch(
    conn: psycopg.Connection[Any],
    deadline: float,
    crew: Crew,
    forge: StandinForge,
    scenes: Sequence[Scene],
) -> list[Job]:
    """Show the status until every job is settled and every scene played, the deadline passes
    or a process the demo started ends unbidden; the jobs as they are then."""
    interactive = sys.stdout.isatty()
    listed = reads.jobs(reads.JobFilter(owner=OWNER, repo=REPO), reads.Page(after=0, at_most=1000))
    shown_at = 0.0
    told: list[str] = []  # shown under the status on a terminal, which redraws it every second
    while True:
        for scene in scenes:
            if notice := scene.act(conn, crew, forge):
                told.append(now() + notice)
                if not interactive:
                    say("\n" + told[-1])
        jobs = reads.read(conn, listed)
        settled = (
            bool(jobs)
            and all(job.state.is_terminal for job in jobs)
            and all(scene.done(conn) for scene in scenes)
        )
        if settled or interactive or time.monotonic() - shown_at >= 5:
            table = render_status(status_rows(conn))
            if interactive:
                say("\033[H\033[J" + time.strftime("%H:%M:%S\n") + "\n".join([table, *told]))
            else:
                say("\n" + time.strftime("%H:%M:%S\n") + table)
            shown_at = time.monotonic()
        if settled or time.monotonic() > deadline:
            return jobs
        if crew.ended():
            say(f"the poller, a worker or the sweeper ended early: see {LOGS}/")
            return jobs
        time.sleep(0.5)


def mirror_once_more(store: JobStore, token: str) -> int:
    """The poller has stopped: rounds here until the mirror has written every job's last state
    and opened every delivery's pull request (its backlog is empty), 20 at most; returns how many
    writes it still has to make."""

    def clients(target: RepoToPoll) -> ForgeClient:
        return client_for(target.kind, target.base_url, token)

    for _ in range(20):
        poll_round(store, "demo", clients=clients)
        backlog = sum(repo.mirror_backlog for repo in store.repo_status())
        if backlog == 0:
            return 0
        time.sleep(0.5)  # the repository is due again a second after the poller's last round
    return backlog


def forge_view(forge: StandinForge, numbers: Sequence[int]) -> str:
    """Issues as the stand-in forge shows them: title, labels, and each comment's outcome line
    with the holder and note it quotes (the line inside its code block), or the first line of the
    agent's report that follows it, and a plan's checklist of its children."""
    lines = []
    for number in numbers:
        (issue,) = [i for i in issues_of(forge, OWNER, REPO) if i.number == number]
        lines.append(f"#{number} {issue.title!r} ({issue.state}): {', '.join(issue.labels)}")
        for body in forge.comments_of(OWNER, REPO, number):
            outcome, *rest = body.splitlines()
            if len(rest) > 3 and rest[1].startswith("```"):
                lines.append(f"    {outcome}: {rest[2]}")
            elif len(rest) > 1 and not rest[1].startswith("<!--"):
                lines.append(f"    {outcome}; report: {rest[1]}")
            else:
                lines.append(f"    {outcome}")
            # A plan's comment lists its children, kept current by the mirror.
            lines += [f"      {line}" for line in rest if line.startswith(("- [x] ", "- [ ] "))]
    return "\n".join(lines)


def pull_requests(
    conn: psycopg.Connection[Any], forge: StandinForge, jobs: Sequence[Job], seeded: set[str]
) -> tuple[list[str], list[str]]:
    """What each delivered implement job left on the forge (its pull request, or no change), as
    tireless.deliveries records it and the stand-in shows it, and what is amiss: a change with no
    pull request of its branch that closes its issue, or a branch no delivery pushed (a plan or
    discover job pushes nothing, nor does a failed or cancelled one). A branch delivered again (a
    revision) must be at its newest delivery's head, which carries the older ones."""
    implement = sorted(
        (j for j in jobs if j.kind is JobKind.IMPLEMENT and j.state is JobState.DELIVERED),
        key=lambda job: (job.number, job.id),
    )
    ids = {"job_ids": [job.id for job in implement]}
    recorded = {row["job_id"]: row for row in fetch(conn, reads.JOB_DELIVERIES, ids, dict_row)}
    reports = dict(conn.execute(REPORTS, ids).fetchall())
    pulls = {pull.head: pull for pull in forge.pulls_of(OWNER, REPO)}
    branches = forge.branches(OWNER, REPO)
    newest = {row["branch"]: job_id for job_id, row in sorted(recorded.items()) if row["changed"]}
    shown: list[str] = []
    amiss: list[str] = []
    for job in implement:
        told = f"#{job.number}: job {job.id} delivered"
        delivery = recorded.get(job.id)
        if delivery is None:
            amiss.append(f"{told} with no delivery recorded")
            continue
        if not delivery["changed"]:
            shown.append(f"{told} with no change: no branch, no pull request")
            continue
        branch = delivery["branch"]
        pull = pulls.get(branch)
        report = (reports.get(job.id) or "").strip()
        if pull is None or pull.state != "open" or f"Closes #{job.number}" not in pull.body:
            amiss.append(f"{told} to {branch}, but no open pull request of it closes #{job.number}")
        elif (later := newest[branch]) != job.id:
            carried = {commit.sha for commit in forge.commits_of(OWNER, REPO, branch)}
            if delivery["head"] not in carried:
                amiss.append(f"{told} {branch} at {delivery['head']}, gone from the forge's")
            elif delivery["pull_number"] != pull.number:
                amiss.append(
                    f"{told} as PR #{pull.number}, the store says #{delivery['pull_number']}"
                )
            else:
                shown.append(
                    f"{told} as PR #{pull.number} (branch {branch}); job {later} revised it"
                )
        elif report not in pull.body:
            amiss.append(f"{told} as PR #{pull.number}, whose body lacks the agent's report")
        elif branches.get(branch) != delivery["head"]:
            amiss.append(
                f"{told} {branch} at {delivery['head']}, the forge has {branches.get(branch)}"
            )
        elif delivery["pull_number"] != pull.number:
            amiss.append(f"{told} as PR #{pull.number}, the store says #{delivery['pull_number']}")
        else:
            draft = "draft " if pull.draft else ""
            shown.append(f"{told} as {draft}PR #{pull.number} (branch {branch})")
    pushed = {row["branch"] for row in recorded.values() if row["changed"]}
    if stray := sorted(set(branches) - seeded - pushed):
        amiss.append(f"branches no delivered change explains: {', '.join(stray)}")
    return shown, amiss


def interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run() -> int:
    small = os.environ.get("TIRELESS_DEMO_SIZE", "") == "small"
    deadline = time.monotonic() + float(os.environ.get("TIRELESS_DEMO_TIMEOUT", "240"))
    stop_web()  # a previous run's: it holds connections to the database about to be recreated
    shutil.rmtree(STATE, ignore_errors=True)  # a previous run's cache: of a forge gone since
    url, psql = database()
    migrate(url)
    if dashboard := start_web(url):
        say(f"dashboard at {dashboard} (it stays up until `make stop`)")
    else:
        say(f"the dashboard did not start (it needs tireless-store[web]): see {LOGS}/web.log")
    token = secrets.token_hex(16)  # the stand-in forge's; only the poller's environment holds it
    with (
        psycopg.connect(url, autocommit=True) as conn,
        StandinForge("gitea", token=token) as forge,
    ):
        # Retries after 1 s, then 2 s; a tripped lane (5 failures in a row) closes after 2 s.
        second = timedelta(seconds=1)
        policy = {
            "label_prefix": None,
            "backoff_base": second,
            "backoff_cap": 2 * second,
            "breaker_threshold": None,
            "breaker_cooldown": 2 * second,
        }
        conn.execute(calls.SET_POLICY, policy)
        store = JobStore(conn)
        store.add_forge(FORGE, "gitea", forge.url)
        store.track_repo(FORGE, OWNER, REPO)
        forge.seed_git(OWNER, REPO, SEED_FILES)
        seeded = set(forge.branches(OWNER, REPO))
        count, unserved, long_job, planned = open_issues(forge, small)
        say(
            f"stand-in Gitea at {forge.url}: registered as {FORGE}, tracking {OWNER}/{REPO}"
            f" (its git: {', '.join(SEED_FILES)}), {count + 3} issues opened there;"
            " `tireless poll --every 1s` turns them into jobs"
        )
        scenes: list[Scene] = [
            Crash(),
            CloseWhilePending(unserved),
            CloseWhileRunning(long_job),
            Relabel(forge),
            ReviewRound(forge),
            Plan(planned),
        ]
        real = RealAgent.open(store, forge, OWNER, REPO, STATE)
        if isinstance(real, str):
            say(real)
        else:
            say(
                f"lane {REAL_LANE} runs {real.profile} {real.version} on #{real.number}"
                " against the model stand-in"
            )
            scenes.append(RealAgentScene(real))
        with Crew(url, token) as crew:
            try:
                final = watch(conn, deadline, crew, forge, scenes)
            finally:
                if not isinstance(real, str):
                    real.finish()
        say("\n" + job_table(final))
        if left := mirror_once_more(store, token):
            say(f"\nthe mirror still has {left} write(s) to make: the forge may show older states")
        else:
            say("\nthe mirror has written every job's state and pull request")
        say("as the forge shows them (the mirror's labels and comments):")
        say(
            forge_view(
                forge,
                sorted(
                    {RELABELLED_ISSUE, IMPLEMENTED_ISSUE, REVIEWED_ISSUE, 5, CRASH_ISSUE}
                    | {unserved, long_job, planned}
                ),
            )
        )
        shown, amiss = pull_requests(conn, forge, final, seeded)
        say(
            "the implement jobs' pull requests (tireless pushed each branch, the mirror opened them):"
        )
        say("\n".join([*shown, *amiss]))
        played = [scene.done(conn) for scene in scenes]
        for scene, done in zip(scenes, played, strict=True):
            if done:
                say(scene.story(conn))
            else:
                say(f"#{scene.number}: its scene did not finish ({type(scene).__name__})")
    outcomes = {
        state: sum(job.state == state for job in final)
        for state in ("delivered", "failed", "cancelled", "pending", "claimed")
    }
    say(", ".join(f"{n} {state}" for state, n in outcomes.items() if n))
    if psql is not None:
        say(f"\nthe database is still running: {psql}")
    if dashboard:
        say(f"the dashboard is still at {dashboard}")
    if psql is not None or dashboard:
        say("`make stop` stops them")
    unsettled = outcomes["pending"] + outcomes["claimed"]
    if unsettled or not all(played):
        say(f"{unsettled} job(s) not settled")
        return 1
    if amiss:
        say(f"{len(amiss)} delivery problem(s) on the forge (see above)")
        return 1
    return 0


def stop() -> int:
    if stop_web():
        say("stopped the dashboard")
    server = EmbeddedPostgres(PGDATA.resolve())
    if server.running_port() is None:
        say(f"no demo database is running in {PGDATA}")
        return 0
    server.stop()
    say(f"stopped the demo database in {PGDATA}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dev.demo", description=__doc__)
    parser.add_argument("--stop", action="store_true", help="stop the embedded demo database")
    args = parser.parse_args(argv)
    if args.stop:
        return stop()
    signal.signal(signal.SIGTERM, interrupt)
    try:
        return run()
    except KeyboardInterrupt:
        say("\ninterrupted: every process the demo started is stopped; jobs they held are pending")
        return 130


if __name__ == "__main__":
    sys.exit(main())
