"""Issue 34's goals for the conversation, end to end: how long from a person's act on the forge to
the agent starting (an issue labelled; a review requesting changes on tireless's pull request) or
stopping (`tireless cancel`; the issue closed), and how many requests a poll round asks the forge
for when nothing changed, with tireless's pull requests open.

    python bench/conversation.py [--samples 10] [--repos 100] [--pulls 10]

A private PostgreSQL (fsync on, as bench/run.py); a stand-in Gitea on 127.0.0.1 serving git; real
processes: `tireless web` (its webhook endpoint, each delivery signed as Gitea signs it), `tireless
poll --every 300s` (only a webhook's NOTIFY makes it read sooner than five minutes) and an idle
`tireless work` per measure (`--deliver` for the label and the review; the default 10-minute
lease). An agent's first act writes its job's id to a FIFO, which the bench reads with a
timestamp; a running agent is a `sleep 600`, whose end the bench waits for on a pidfd. Each measure
takes turns with its baseline, the same path without the forge: a job made in the database
(`tireless.rerun`) for the same runner; `JobStore.request_cancel` from the bench's own process.
After each sample an untimed round lets the mirror write what the job left. The requests are
counted by a stand-in Gitea and a stand-in GitHub in one `poll_round` over --repos tracked
repositories, --pulls of them with tireless's pull request open (delivered through the store API,
opened by the mirror), after the rounds that settle them.

Times run from the person's act (the bench's clock against the database's timestamps, one
machine); figures are medians (min, max) in milliseconds, ratios the median of the per-turn
ratios to the baseline. No figure is a pass or a fail: the goals are printed beside them. Prints a
Markdown report.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

import psycopg

from dev.embedded import embedded_postgres
from dev.standin import Flavour, StandinForge
from tireless.credentials import secret_variable
from tireless.forge import token_variable
from tireless.forge.poll import Report, client_factory, poll_round
from tireless.migrate import migrate
from tireless.store import JobStore

FORGE = "gitea"
OWNER = "acme"
TOKEN = "tok-bench-conversation-7e2a"
SECRET = "whsec-bench-conversation-41d9"
REVIEWER = "carol"  # a collaborator with write access
HOUR = timedelta(hours=1)
ASK = ["tireless", "tireless/implement"]
WAIT = 60.0  # seconds any one step may take before the bench gives up
GOALS = {"label": 1.0, "review": 2.0, "cancel": 2.0, "close": 2.0}
SLEEP = ["sleep", "600"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def wait_until(check: Callable[[], bool], what: str, every: float = 0.02) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up waiting for {what}")
        time.sleep(every)


class Starts:
    """The agents' starts: each agent's first act writes `JOB_ID NUMBER` to a FIFO (writing to one
    works under bwrap's read-only view of /); a thread notes when each line arrives."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "started"
        os.mkfifo(self.path)
        os.chmod(self.path, 0o666)
        self._fd = os.open(self.path, os.O_RDWR)  # never at EOF; a writer never waits for a reader
        self._seen: list[tuple[int, int, float]] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, name="agent-starts", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        pending = b""
        while True:
            chunk = os.read(self._fd, 4096)
            now = time.time()
            pending += chunk
            *lines, pending = pending.split(b"\n")
            with self._changed:
                for line in lines:
                    if line == b"end":
                        return
                    job, number = line.split()
                    self._seen.append((int(job), int(number), now))
                self._changed.notify_all()

    def mark(self) -> int:
        with self._changed:
            return len(self._seen)

    def wait(self, number: int, since: int) -> tuple[int, float]:
        """(job id, time) of the first start of a job of issue `number` after mark `since`."""

        def found() -> tuple[int, float] | None:
            for job, of, at in self._seen[since:]:
                if of == number:
                    return job, at
            return None

        with self._changed:
            if not self._changed.wait_for(lambda: found() is not None, WAIT):
                raise RuntimeError(
                    f"no agent started for issue #{number} within {WAIT:.0f} s (does a webhook"
                    " wake `poll --every`? tireless.poll_soon's NOTIFY tireless_poll)"
                )
            started = found()
        assert started is not None
        return started

    def close(self) -> None:
        os.write(self._fd, b"end\n")
        self._thread.join(5)
        os.close(self._fd)


def agent_process(job_id: int, marker: str) -> int:
    """The host pid of job_id's `sleep 600` (found by its command line and environment)."""
    wanted = [f"TIRELESS_JOB_ID={job_id}".encode(), f"CONVERSATION_BENCH={marker}".encode()]
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[:-1] != [
                    part.encode() for part in SLEEP
                ]:
                    continue
                environment = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if all(variable in environment for variable in wanted):
                return int(entry)
        time.sleep(0.01)
    raise RuntimeError(f"job {job_id}'s agent process was not found")


@dataclass
class Timed:
    """One measure: per sample, seconds from the person's act to each step (a step's name to its
    list; the last step is the one the goal is about), and the same run's baseline, the last step
    of the same path without the forge (taken in turns with the samples)."""

    name: str
    steps: dict[str, list[float]] = field(default_factory=dict)
    baseline: list[float] = field(default_factory=list)

    def add(self, offsets: dict[str, float]) -> None:
        for step, seconds in offsets.items():
            self.steps.setdefault(step, []).append(seconds)

    @property
    def last(self) -> list[float]:
        return list(self.steps.values())[-1]

    @property
    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.last, self.baseline, strict=True)]


class Bench:
    """The database, the forge and the processes; what makes a job, acts as a person and waits."""

    def __init__(self, conninfo: str, forge: StandinForge, root: Path, starts_dir: Path) -> None:
        self.conninfo, self.forge, self.root = conninfo, forge, root
        self.conn = psycopg.connect(conninfo, autocommit=True)
        self.store = JobStore(self.conn)
        self.marker = uuid.uuid4().hex
        self.environment = os.environ | {
            "DATABASE_URL": conninfo,
            token_variable(FORGE): TOKEN,
            secret_variable(FORGE): SECRET,
            "CONVERSATION_BENCH": self.marker,  # reaches the agent: how its process is found
        }
        self.starts = Starts(starts_dir)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.web_url = ""

    # Processes
    def start(self, name: str, *argv: str, cwd: Path | None = None) -> subprocess.Popen[bytes]:
        output = (self.root / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "tireless", *argv],
            cwd=cwd or self.root, env=self.environment, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
        output.close()
        self.processes.append(process)
        return process

    def start_web(self) -> None:
        """`tireless web` on a free port; its address from the line it prints first, the rest of
        its output drained to web.log."""
        output = (self.root / "web.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "tireless", "web", "--bind", "127.0.0.1:0"],
            cwd=self.root, env=self.environment, stdout=subprocess.PIPE, stderr=output,
        )  # fmt: skip
        self.processes.append(process)
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        if "dashboard at " not in line:
            output.close()
            raise RuntimeError(f"tireless web did not start: {line!r}")
        self.web_url = line.split("dashboard at ", 1)[1].split()[0].rstrip("/")

        def drain(source: IO[bytes]) -> None:
            with output:
                for chunk in source:
                    output.write(chunk)

        threading.Thread(target=drain, args=(process.stdout,), daemon=True).start()

    def worker(self, lane: str, script: str, *, deliver: bool) -> subprocess.Popen[bytes]:
        """An idle `tireless work` serving `lane`; its agent runs `script` after announcing itself."""
        announce = f'echo "$TIRELESS_JOB_ID $TIRELESS_NUMBER" > {self.starts.path}; '
        options = ["--deliver", "--state-dir", str(self.root / "state")] if deliver else []
        cwd = self.root / f"cwd-{lane}"
        cwd.mkdir(exist_ok=True)
        return self.start(
            f"work-{lane}", "work", "--worker", f"bench-{lane}", "--lane", lane, *options,
            "--", "sh", "-c", announce + script, cwd=cwd,
        )  # fmt: skip

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.remove(process)

    def show_logs(self) -> None:
        for path in sorted(self.root.glob("*.log")):
            log(f"--- the end of {path.name}:")
            log("\n".join(path.read_text(errors="replace").splitlines()[-15:]))

    def stop_all(self) -> None:
        for process in list(self.processes):
            self.stop(process)
        self.starts.close()

    # The person, and the forge's webhook
    def webhook(self, repo: str, event: str, action: str) -> float:
        """A signed Gitea delivery for `repo` to `tireless web`; the time it was answered (202)."""
        delivery = str(uuid.uuid4())
        body = json.dumps(
            {
                "action": action,
                "delivery": delivery,  # every body differs: the same body twice is a replay (409)
                "repository": {"name": repo, "owner": {"login": OWNER, "username": OWNER}},
                "sender": {"login": "alice"},
            }
        ).encode()
        signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        request = urllib.request.Request(
            f"{self.web_url}/hooks/gitea",
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "X-Gitea-Event": event,
                "X-Gitea-Delivery": delivery,
                "X-Gitea-Signature": signature,
            },
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            if answer.status != 202 or not json.load(answer)["poll_soon"]:
                raise RuntimeError(f"the webhook for {repo} was answered {answer.status}")
        return time.time()

    # The store, read directly (the bench's connection is the cluster's superuser)
    def one(self, query: str, *params: object) -> Any:
        row = self.conn.execute(query, params).fetchone()
        assert row is not None, query
        return row[0]

    def job_state(self, job_id: int) -> str:
        return str(self.one("SELECT state::text FROM tireless.job WHERE id = %s", job_id))

    def epoch(self, query: str, *params: object) -> float:
        return float(self.one(f"SELECT extract(epoch FROM ({query}))", *params))

    def created(self, job_id: int) -> float:
        return self.epoch("SELECT created_at FROM tireless.job WHERE id = %s", job_id)

    def claimed(self, job_id: int) -> float:
        return self.epoch(
            "SELECT max(at) FROM tireless.job_event WHERE job_id = %s AND to_state = 'claimed'",
            job_id,
        )

    def polled_at(self, repo: str) -> datetime | None:
        found = self.conn.execute(
            "SELECT last_poll_at FROM tireless.repo_poll WHERE (forge, owner, repo) = (%s, %s, %s)"
            " AND poll_lease_until IS NULL",
            (FORGE, OWNER, repo),
        ).fetchone()
        return None if found is None else found[0]

    def backlog(self, repo: str) -> int:
        return sum(s.mirror_backlog for s in self.store.repo_status() if s.repo == repo)

    def settle(self, repo: str) -> None:
        """Untimed rounds of the running poller (poll_soon, as a webhook does) until the mirror has
        written what the last job left: the next sample's round reads only the sample's change."""
        for _ in range(5):
            before = self.polled_at(repo)
            self.store.poll_soon(FORGE, OWNER, repo)

            def polled(before: datetime | None = before) -> bool:
                after = self.polled_at(repo)
                return after is not None and (before is None or after > before)

            wait_until(polled, f"a round of {repo}")
            if self.backlog(repo) == 0:
                return
        raise RuntimeError(f"{repo}: the mirror did not catch up")

    def ended(self, job_id: int, state: str) -> None:
        wait_until(lambda: self.job_state(job_id) == state, f"job {job_id} {state}", every=0.05)


def start_sample(
    bench: Bench, repo: str, number: int, act: Callable[[], float | None]
) -> dict[str, float]:
    """One start timed from `act` (it returns when its webhook was answered, or None): the steps
    to the agent of issue `number` starting; then the job's end and a settling round, untimed."""
    mark = bench.starts.mark()
    began = time.time()
    answered = act()
    job, started = bench.starts.wait(number, mark)
    bench.ended(job, "delivered")
    steps = {} if answered is None else {"webhook_answered": answered - began}
    steps |= {
        "job_made": bench.created(job) - began,
        "job_claimed": bench.claimed(job) - began,
        "agent_started": started - began,
    }
    bench.settle(repo)
    return steps


def with_baseline(
    timed: Timed,
    samples: int,
    measured: Callable[[int], dict[str, float]],
    baseline: Callable[[int], dict[str, float]],
) -> None:
    """`samples` of the measure and of its baseline, in turns, the first of each turn alternating."""
    for n in range(1, samples + 1):
        for is_baseline in (False, True) if n % 2 else (True, False):
            if is_baseline:
                timed.baseline.append(list(baseline(n).values())[-1])
            else:
                timed.add(measured(n))
        log(f"{timed.name} {n}: {timed.last[-1]:.2f} s, baseline {timed.baseline[-1]:.2f} s")


def label_to_start(bench: Bench, samples: int) -> Timed:
    """1. An unlabelled issue labelled to implement and its webhook, to the agent's start under an
    idle `work --deliver`; the baseline: a job made in the database (rerun) for the same runner."""
    repo, lane = "labels", "fast"
    forge, store = bench.forge, bench.store
    forge.seed_git(OWNER, repo, {"README.md": "# labels\n"})
    numbers = [forge.create_issue(OWNER, repo, f"Change {n}") for n in range(samples + 1)]
    store.track_repo(FORGE, OWNER, repo)
    bench.settle(repo)
    worker = bench.worker(lane, "true", deliver=True)

    def label(n: int) -> dict[str, float]:
        def act() -> float:
            forge.set_labels(OWNER, repo, numbers[n], [*ASK, f"tireless/agent:{lane}"])
            return bench.webhook(repo, "issues", "label_updated")

        return start_sample(bench, repo, numbers[n], act)

    def rerun(n: int) -> dict[str, float]:
        return start_sample(
            bench, repo, numbers[0], lambda: (store.rerun(FORGE, OWNER, repo, numbers[0]), None)[1]
        )

    warm = label(0)  # untimed: the runner's first clone of the repository
    log(f"label: warm-up (the runner's first clone) {warm['agent_started']:.2f} s")
    timed = Timed("label")
    with_baseline(timed, samples, label, rerun)
    bench.stop(worker)
    return timed


def review_to_start(bench: Bench, samples: int) -> Timed:
    """2. A review requesting changes on the pull request of an issue delivered once, and its
    webhook, to the revision's agent starting; the baseline: a rerun of the issue."""
    repo, lane = "reviews", "rev"
    forge, store = bench.forge, bench.store
    forge.seed_git(OWNER, repo, {"README.md": "# reviews\n"})
    number = forge.create_issue(OWNER, repo, "Rename the flag", [*ASK, f"tireless/agent:{lane}"])
    forge.set_permission(OWNER, repo, REVIEWER, "write")
    store.track_repo(FORGE, OWNER, repo)
    store.set_repo_revisions(FORGE, OWNER, repo, max_revisions=100)
    bench.settle(repo)  # the job
    first = subprocess.run(
        [sys.executable, "-m", "tireless", "work", "--once", "--worker", "bench-first",
         "--lane", lane, "--deliver", "--state-dir", str(bench.root / "state"),
         "--", "sh", "-c", "echo first > change.txt"],
        cwd=bench.root, env=bench.environment, capture_output=True, text=True,
    )  # fmt: skip
    if first.returncode != 0:
        raise RuntimeError(f"the first job: exit {first.returncode}: {first.stderr}")
    bench.settle(repo)  # the mirror opens the pull request
    (pull,) = forge.pulls_of(OWNER, repo)
    worker = bench.worker(lane, 'echo "$TIRELESS_JOB_ID" >> change.txt', deliver=True)

    def review(n: int) -> dict[str, float]:
        def act() -> float:
            body = f"Not yet ({n})"
            forge.submit_review(OWNER, repo, pull.number, REVIEWER, "changes_requested", body)
            return bench.webhook(repo, "pull_request_review_rejected", "reviewed")

        return start_sample(bench, repo, number, act)

    def rerun(n: int) -> dict[str, float]:
        return start_sample(
            bench, repo, number, lambda: (store.rerun(FORGE, OWNER, repo, number), None)[1]
        )

    warm = review(0)
    log(f"review: warm-up {warm['agent_started']:.2f} s")
    timed = Timed("review")
    with_baseline(timed, samples, review, rerun)
    revisions = bench.one(
        "SELECT count(*) FROM tireless.ask WHERE repo = %s AND source = 'review' AND job_id IS NOT NULL",
        repo,
    )
    if revisions != samples + 1 or len(forge.pulls_of(OWNER, repo)) != 1:
        raise RuntimeError(f"{revisions} reviews made a job, or another pull request was opened")
    bench.stop(worker)
    return timed


def stop_to_gone(bench: Bench, samples: int) -> tuple[Timed, Timed]:
    """3. A running agent (`sleep 600`, the default lease) stopped by `tireless cancel JOB`, or by
    its issue closed on the forge and the webhook; the baseline: store.request_cancel from the
    bench's own process. The three take turns."""
    repo, lane = "stops", "stop"
    forge, store = bench.forge, bench.store
    forge.create_repo(OWNER, repo)
    store.track_repo(FORGE, OWNER, repo)
    bench.settle(repo)
    worker = bench.worker(lane, f"exec {' '.join(SLEEP)}", deliver=False)
    cancel, close = Timed("cancel"), Timed("close")
    baseline: list[float] = []

    def stop(how: str) -> dict[str, float]:
        mark = bench.starts.mark()
        number = forge.create_issue(OWNER, repo, f"Stop {how}", [*ASK, f"tireless/agent:{lane}"])
        store.poll_soon(FORGE, OWNER, repo)
        job, _ = bench.starts.wait(number, mark)
        pidfd = os.pidfd_open(agent_process(job, bench.marker))
        try:
            acted: list[float] = []
            failed: list[BaseException] = []

            def act() -> None:  # in a thread: the agent may be gone before the act returns
                try:
                    if how == "cancel":
                        subprocess.run(
                            [sys.executable, "-m", "tireless", "cancel", str(job)],
                            env=bench.environment, capture_output=True, check=True,
                        )  # fmt: skip
                    elif how == "close":
                        forge.close_issue(OWNER, repo, number)
                        bench.webhook(repo, "issues", "closed")
                    else:
                        store.request_cancel(job)
                    acted.append(time.time())
                except BaseException as error:
                    failed.append(error)

            actor = threading.Thread(target=act, name=f"stop-{how}")
            began = time.time()
            actor.start()
            stopped = select.select([pidfd], [], [], WAIT)[0]
            gone = time.time()
            actor.join(WAIT)
            if failed:
                raise failed[0]
            if not stopped or not acted:
                raise RuntimeError(
                    f"job {job}'s agent was not stopped within {WAIT:.0f} s (does a stop reach"
                    " its holder at once? NOTIFY tireless_stop)"
                )
        finally:
            os.close(pidfd)
        bench.ended(job, "cancelled")
        requested = bench.epoch("SELECT cancel_requested_at FROM tireless.job WHERE id = %s", job)
        bench.settle(repo)
        ended = {"cancel": "command_ended", "close": "webhook_answered"}.get(how, "asked")
        return {
            ended: acted[0] - began,
            "stop_requested": requested - began,
            "agent_gone": gone - began,
        }

    ways = ["cancel", "close", "direct"]
    for n in range(samples):
        for how in ways[n % 3 :] + ways[: n % 3]:
            steps = stop(how)
            if how == "direct":
                baseline.append(steps["agent_gone"])
            else:
                (cancel if how == "cancel" else close).add(steps)
        log(
            f"stop {n + 1}: cancel {cancel.last[-1]:.2f} s, close {close.last[-1]:.2f} s,"
            f" baseline {baseline[-1]:.2f} s"
        )
    cancel.baseline = close.baseline = baseline
    bench.stop(worker)
    return cancel, close


@dataclass(frozen=True)
class Requests:
    flavour: str
    repos: int
    pulls: int
    counts: Counter[str]
    listings_not_modified: int
    full_listings: int

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def kind_of(method: str, path: str) -> str:
    """A request's kind, for the breakdown."""
    parts = path.strip("/").split("/")
    if parts[:2] == ["api", "v1"]:
        parts = parts[2:]
    shape = "/".join("#" if part.isdigit() else part for part in parts[3:])
    if method == "GET" and parts[0] == "repos":
        named = {
            "issues": "issue listings",
            "issues/comments": "comment listings",
            "pulls/#/reviews": "review listings",
        }
        if shape in named:
            return named[shape]
    return f"other: {method} {'/'.join(parts[:1])}{'/…/' + shape if shape else ''}"


def requests_per_round(conninfo: str, flavour: Flavour, repos: int, pulls: int) -> Requests:
    """4. One round of `repos` tracked repositories, `pulls` of them with tireless's pull request
    open, when nothing changed: the requests the stand-in receives."""
    with (
        psycopg.connect(conninfo, autocommit=True) as conn,
        StandinForge(flavour, token=TOKEN) as forge,
    ):
        store = JobStore(conn)
        store.add_forge(flavour, flavour, forge.url)
        os.environ[token_variable(flavour)] = TOKEN
        clients = client_factory(timeout=10.0)
        names = [f"repo{n:03d}" for n in range(repos)]
        with_pull = names[:: max(repos // pulls, 1)][:pulls]
        for name in names:
            forge.create_repo(OWNER, name)
            store.track_repo(flavour, OWNER, name)
        for name in with_pull:
            forge.seed_git(OWNER, name, {"README.md": f"# {name}\n"})
            forge.create_issue(OWNER, name, "Fix the thing", ASK)

        def one_round() -> list[Report]:
            for name in names:
                store.poll_soon(flavour, OWNER, name)
            reports = poll_round(
                store, "bench-poller", clients=clients, next_poll_in=HOUR, max_repos=repos
            )
            failed = [
                (r.repo, r.error, r.mirror_error) for r in reports if r.error or r.mirror_error
            ]
            if failed or len(reports) != repos:
                raise RuntimeError(f"{flavour}: a round read {len(reports)} repositories: {failed}")
            return reports

        one_round()  # the first (full) listing: a job per issue
        for _ in with_pull:
            job = store.claim_next("bench-worker", ["cc"])
            assert job is not None
            assert job.claim_token is not None
            branch = store.job_brief(job.id).branch
            assert branch is not None
            base = forge.branch_head(OWNER, job.repo, "main")
            head = forge.seed_git(OWNER, job.repo, {"fix.txt": "fixed\n"}, branch=branch)
            store.deliver(job.id, "bench-worker", branch, head, "main", base, token=job.claim_token)
        for _ in range(3):  # the mirror opens the pull requests; the rounds after read its writes
            one_round()
        opened = sum(len(forge.pulls_of(OWNER, name)) for name in with_pull)
        if opened != len(with_pull) or any(s.mirror_backlog for s in store.repo_status()):
            raise RuntimeError(f"{flavour}: {opened} pull requests opened, or the mirror lags")
        asked = len(forge.requests)
        reports = one_round()
        counts = Counter(kind_of(r.method, r.path) for r in forge.requests[asked:])
        full = conn.execute(
            "SELECT count(*) FROM tireless.repo_poll WHERE forge = %s AND reads_since_full = 0",
            [flavour],
        ).fetchone()
        return Requests(
            flavour,
            repos,
            len(with_pull),
            counts,
            sum(r.not_modified for r in reports),
            int(full[0]) if full else 0,
        )


def figure(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"


def report(timed: list[Timed], requests: list[Requests], samples: int, took: float) -> list[str]:
    lines = [
        f"# The conversation's latency and requests (issue 34), {samples} samples each\n",
        f"{datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; {os.cpu_count()} cores, shared;"
        " PostgreSQL with fsync on; stand-in Gitea on 127.0.0.1; `tireless web`,"
        " `tireless poll --every 300s` and an idle `tireless work` as processes. Milliseconds from"
        " the person's act, median (min-max).\n",
        "| from the person's act | to | median (min-max) ms | baseline, median ms | ratio | goal |",
        "|---|---|---:|---:|---:|---:|",
    ]
    acts = {
        "label": "issue labelled + webhook",
        "review": "review requesting changes + webhook",
        "cancel": "`tireless cancel JOB`",
        "close": "issue closed + webhook",
    }
    for measure in timed:
        goal = GOALS[measure.name]
        met = "met" if statistics.median(measure.last) <= goal else "**missed**"
        to = list(measure.steps)[-1].replace("_", " ")
        lines.append(
            f"| {acts[measure.name]} | {to} | {figure(measure.last)}"
            f" | {statistics.median(measure.baseline) * 1000:.0f}"
            f" | {statistics.median(measure.ratios):.3g}x | ≤ {goal:g} s, {met} |"
        )
    lines += [
        "",
        "Baselines, in turns with the samples: for a start, a job made in the database"
        " (`tireless.rerun`) for the same idle runner, to its agent's start (no forge, no webhook,"
        " no poll); for a stop, `JobStore.request_cancel` from the bench's own process, to the"
        " agent gone (no command to start, no forge). Ratio: the median of the per-turn ratios.",
    ]
    lines += ["", "Steps (median (min-max) ms from the act):", ""]
    for measure in timed:
        steps = "; ".join(
            f"{step.replace('_', ' ')} {figure(values)}" for step, values in measure.steps.items()
        )
        lines.append(f"- {acts[measure.name]}: {steps}")
    lines += [
        "",
        "Requests of one poll round when nothing changed (after the rounds that settled the"
        " mirror's writes; no full listing in it):",
        "",
        "| forge | repositories | open pull requests | total | issue listings (304) |"
        " comment listings | review listings | other | beyond the listings, per pull request |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for counted in requests:
        c = counted.counts
        other = {kind: n for kind, n in c.items() if kind.startswith("other")}
        beyond = counted.total - c["issue listings"]
        lines.append(
            f"| {counted.flavour} | {counted.repos} | {counted.pulls} | {counted.total}"
            f" | {c['issue listings']} ({counted.listings_not_modified}) | {c['comment listings']}"
            f" | {c['review listings']} | {sum(other.values())}"
            f"{' (' + ', '.join(f'{k[7:]}: {n}' for k, n in other.items()) + ')' if other else ''}"
            f" | {beyond / max(counted.pulls, 1):.1f} (goal ≤ 1) |"
        )
        if counted.full_listings:
            lines.append(f"\n({counted.full_listings} repositories listed in full in that round.)")
    lines.append(f"\nThe whole run took {took:.0f} s.")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=10, help="timed samples of each measure")
    parser.add_argument("--repos", type=int, default=100, help="tracked repositories (requests)")
    parser.add_argument("--pulls", type=int, default=10, help="open pull requests among them")
    options = parser.parse_args()
    began = time.perf_counter()
    # The FIFO lives outside /tmp: the agent's sandbox (bwrap) gets a /tmp of its own.
    starts_home = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path.home()
    with (
        tempfile.TemporaryDirectory(prefix="conversation-") as scratch,
        tempfile.TemporaryDirectory(prefix="conversation-starts-", dir=starts_home) as starts,
        embedded_postgres(fsync=True) as server,
    ):
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE bench")
            admin.execute("CREATE DATABASE requests")
        for name in ("bench", "requests"):
            migrate(server.conninfo(name))
        timed: list[Timed] = []
        with StandinForge("gitea", token=TOKEN) as forge:
            bench = Bench(server.conninfo("bench"), forge, Path(scratch), Path(starts))
            try:
                bench.store.add_forge(FORGE, "gitea", forge.url)
                bench.start_web()
                bench.start("poll", "poll", "--every", "300s", "--poller", "bench-poller")
                timed.append(label_to_start(bench, options.samples))
                timed.append(review_to_start(bench, options.samples))
                timed.extend(stop_to_gone(bench, options.samples))
            except BaseException:
                bench.show_logs()
                raise
            finally:
                bench.stop_all()
                bench.conn.close()
        flavours: tuple[Flavour, ...] = ("gitea", "github")
        requests = [
            requests_per_round(server.conninfo("requests"), flavour, options.repos, options.pulls)
            for flavour in flavours
        ]
    print("\n".join(report(timed, requests, options.samples, time.perf_counter() - began)))


if __name__ == "__main__":
    main()
